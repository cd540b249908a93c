//! What the operating system can tell about this process and this machine:
//! CPU time, disk I/O, peak memory, bytes on disk, cores, load, free space,
//! and the disk that holds the data.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Context, Result};

/// The process's cumulative counters at one moment; two snapshots give a
/// workload's share by subtraction.
///
/// CPU time comes from `getrusage(RUSAGE_SELF)` and so includes every thread
/// of the process (an engine's background flushers and compactors too);
/// bytes come from `/proc/self/io` (`read_bytes`, `write_bytes`: what reached
/// the block layer, not what the page cache absorbed), and so does the count
/// of read system calls (`syscr`: read, pread, readv and their kin, whether
/// or not the page cache served them; with direct I/O each is a disk read).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessCounters {
    pub cpu_us: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_calls: u64,
}

impl ProcessCounters {
    /// Reads the counters now.
    pub fn now() -> Result<Self> {
        let cpu_us = cpu_time_us();
        let io = fs::read_to_string("/proc/self/io").context(|| "reading /proc/self/io".to_string())?;
        let field = |name: &str| -> u64 {
            io.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        Ok(ProcessCounters {
            cpu_us,
            read_bytes: field("read_bytes"),
            write_bytes: field("write_bytes"),
            read_calls: field("syscr"),
        })
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &ProcessCounters) -> ProcessCounters {
        ProcessCounters {
            cpu_us: self.cpu_us.saturating_sub(earlier.cpu_us),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            read_calls: self.read_calls.saturating_sub(earlier.read_calls),
        }
    }
}

/// User plus system CPU time of the whole process, in microseconds.
fn cpu_time_us() -> u64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// The process's memory at this moment, sampled beside an engine's own
/// counters at the end of every interval: resident now (`VmRSS`) and its
/// peak since the workload began (`VmHWM`, reset by [`reset_peak_rss`]),
/// and jemalloc's view (the program's allocator, `alloc.rs`): bytes the
/// program holds (`stats.allocated`) and pages the allocator has resident
/// (`stats.resident`), pages in its active extents (`stats.active`) and its
/// own metadata (`stats.metadata`), and the freed pages it has given back
/// to the kernel so far. Resident above the allocator's is code,
/// stacks and the page tables; active above the held bytes is room inside
/// pages in use (fragmentation); the allocator's resident above active and
/// metadata is freed pages waiting for its decay timer.
pub fn memory_counters() -> Vec<(&'static str, u64)> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut out = Vec::with_capacity(7);
    if let Some(v) = status_bytes(&status, "VmRSS:") {
        out.push(("process_rss_bytes", v));
    }
    if let Some(v) = status_bytes(&status, "VmHWM:") {
        out.push(("process_rss_peak_bytes", v));
    }
    // jemalloc's statistics are cached until the epoch advances.
    if tikv_jemalloc_ctl::epoch::advance().is_ok() {
        if let Ok(v) = tikv_jemalloc_ctl::stats::allocated::read() {
            out.push(("heap_allocated_bytes", v as u64));
        }
        if let Ok(v) = tikv_jemalloc_ctl::stats::resident::read() {
            out.push(("heap_resident_bytes", v as u64));
        }
        // Pages in active extents (live bytes plus the unused room in
        // them: fragmentation); resident beyond active and metadata is
        // freed pages waiting for the decay timer.
        if let Ok(v) = tikv_jemalloc_ctl::stats::active::read() {
            out.push(("heap_active_bytes", v as u64));
        }
        if let Ok(v) = tikv_jemalloc_ctl::stats::metadata::read() {
            out.push(("heap_metadata_bytes", v as u64));
        }
        // Freed pages given back to the kernel so far, over all arenas
        // (4096 is jemalloc's `MALLCTL_ARENAS_ALL`): the churn that reuse
        // did not absorb. Its growth per interval is a steadier measure of
        // churn than the pages awaiting purge at one moment.
        // SAFETY: jemalloc documents `stats.arenas.<i>.dirty_purged` as a
        // uint64_t and `arenas.page` as a size_t: the types read here.
        let purged = unsafe { tikv_jemalloc_ctl::raw::read::<u64>(b"stats.arenas.4096.dirty_purged\0") };
        let page = unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"arenas.page\0") };
        if let (Ok(pages), Ok(page)) = (purged, page) {
            out.push(("heap_purged_bytes", pages * page as u64));
        }
    }
    out
}

/// A `kB` field of `/proc/self/status` (`name` with its colon), in bytes.
fn status_bytes(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Resets the kernel's peak-resident-memory mark (`VmHWM`) so the next
/// [`peak_rss_bytes`] tells the peak of one workload, not of the process.
/// Returns false where the kernel refuses; the peak then covers the process
/// so far.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Peak resident memory since the last [`reset_peak_rss`] (or process start).
pub fn peak_rss_bytes() -> u64 {
    let from_status = fs::read_to_string("/proc/self/status").ok().and_then(|s| status_bytes(&s, "VmHWM:"));
    match from_status {
        Some(bytes) => bytes,
        None => {
            // SAFETY: as in cpu_time_us.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
            usage.ru_maxrss as u64 * 1024
        }
    }
}

/// How much a folder takes: blocks the file system allocated and the sum of
/// file lengths (they differ for sparse or preallocated files).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskUsage {
    pub allocated_bytes: u64,
    pub file_bytes: u64,
    /// The bytes the engine says its data needs (its files minus the free
    /// space inside them), where it can tell.
    pub live_bytes: Option<u64>,
}

/// Walks `dir` (not following symbolic links) and adds up its files.
pub fn dir_usage(dir: &Path) -> Result<DiskUsage> {
    let mut usage = DiskUsage::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).context(|| format!("listing {}", d.display()))?;
        for entry in entries {
            let entry = entry.context(|| format!("listing {}", d.display()))?;
            let meta =
                entry.path().symlink_metadata().context(|| format!("stat {}", entry.path().display()))?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                usage.allocated_bytes += meta.blocks() * 512;
                usage.file_bytes += meta.len();
            }
        }
    }
    Ok(usage)
}

/// Free bytes for an unprivileged user on the file system holding `path`,
/// and that file system's type name.
pub fn disk_free(path: &Path) -> Option<(u64, String)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs/statfs write only into the zeroed structs we pass.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut vfs) } != 0 {
        return None;
    }
    let mut fsinfo: libc::statfs = unsafe { std::mem::zeroed() };
    let fs_type = if unsafe { libc::statfs(c_path.as_ptr(), &mut fsinfo) } == 0 {
        fs_type_name(fsinfo.f_type as u64)
    } else {
        "unknown".to_string()
    };
    Some((vfs.f_bavail as u64 * vfs.f_frsize as u64, fs_type))
}

fn fs_type_name(magic: u64) -> String {
    match magic {
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x0102_1994 => "tmpfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0x6969 => "nfs".into(),
        other => format!("0x{other:x}"),
    }
}

/// The load average (1, 5 and 15 minutes) as `/proc/loadavg` gives it.
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Facts about the machine that a reader of a benchmark needs to weigh it.
#[derive(Clone, Debug, Default)]
pub struct MachineFacts {
    pub cores: usize,
    pub cpu_model: String,
    pub memory_bytes: u64,
    pub kernel: String,
    /// The distribution, from `/etc/os-release` (`PRETTY_NAME`); "unknown" without one.
    pub os: String,
}

impl MachineFacts {
    /// Reads the facts now.
    pub fn read() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim()))
            .unwrap_or("unknown")
            .to_string();
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
        let os = fs::read_to_string("/etc/os-release")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map_or_else(|| "unknown".to_string(), |v| v.trim().trim_matches('"').to_string());
        MachineFacts { cores, cpu_model, memory_bytes, kernel, os }
    }
}

/// The disk under a folder, as far as Linux tells it cheaply: the mount
/// (from `/proc/self/mountinfo`) and the block device behind the folder's
/// file system (from `/sys/dev/block`). A benchmark of storage engines means
/// little without knowing whether it ran on a spinning disk, an SSD, a
/// virtual disk or memory.
///
/// Every field is best effort: inside a container the folder may sit on an
/// overlay or tmpfs with no block device, and virtual disks have no model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskFacts {
    /// Where the file system holding the folder is mounted.
    pub mount_point: Option<String>,
    /// What is mounted there: a device path, or a name such as `overlay`.
    pub mount_source: Option<String>,
    pub mount_options: Option<String>,
    /// The whole disk's kernel name (`sda`, `nvme0n1`, `vda`), not the partition's.
    pub device: Option<String>,
    /// The disk's model, where the driver reports one (SCSI, SATA, NVMe; not virtio).
    pub model: Option<String>,
    /// The kernel's rotational flag. Virtual disks often claim to rotate.
    pub rotational: Option<bool>,
    pub size_bytes: Option<u64>,
    /// The I/O scheduler in use (the bracketed one of `queue/scheduler`).
    pub scheduler: Option<String>,
}

impl DiskFacts {
    /// The facts for the file system holding `path`.
    pub fn of(path: &Path) -> Self {
        let mut facts = DiskFacts::default();
        if let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") {
            if let Some(mount) = mount_of(&mountinfo, path) {
                facts.mount_point = Some(mount.point);
                facts.mount_source = Some(mount.source);
                facts.mount_options = Some(mount.options);
            }
        }
        let Ok(meta) = fs::metadata(path) else { return facts };
        let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
        // /sys/dev/block/MAJ:MIN links to the device's folder; a partition's
        // folder lies inside its disk's, and only the disk has a queue.
        let Ok(mut dir) = fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) else { return facts };
        if dir.join("partition").exists() {
            if let Some(parent) = dir.parent() {
                dir = parent.to_path_buf();
            }
        }
        let read = |name: &str| {
            fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
        };
        facts.device = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        facts.model = read("device/model");
        facts.rotational = read("queue/rotational").map(|r| r == "1");
        // `size` counts 512-byte sectors whatever the device's block size.
        facts.size_bytes = read("size").and_then(|s| s.parse::<u64>().ok()).map(|sectors| sectors * 512);
        facts.scheduler = read("queue/scheduler").map(|s| selected_scheduler(&s));
        facts
    }
}

/// One line of `/proc/self/mountinfo`, the fields we report.
#[derive(Debug, PartialEq)]
struct Mount {
    point: String,
    source: String,
    options: String,
}

/// The mount holding `path`: the one with the longest mount point that is a
/// prefix of it (the last such line wins, as later mounts hide earlier ones).
///
/// A line reads `id parent maj:min root point options [optional...] - type
/// source super-options`; spaces in paths are written `\040`.
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<(usize, Mount)> = None;
    for line in mountinfo.lines() {
        let Some((before, after)) = line.split_once(" - ") else { continue };
        let fields: Vec<&str> = before.split(' ').collect();
        let after: Vec<&str> = after.split(' ').collect();
        let (Some(point), Some(options), Some(source)) = (fields.get(4), fields.get(5), after.get(1)) else {
            continue;
        };
        // The file system's own options (`discard` among them, which makes
        // every hole punched a synchronous discard) follow the mount's.
        let options = match after.get(2) {
            Some(sb) if !sb.is_empty() => format!("{options}; file system: {sb}"),
            _ => options.to_string(),
        };
        let point = point.replace("\\040", " ");
        if !path.starts_with(&point) {
            continue;
        }
        let depth = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            let mount = Mount { point, source: source.replace("\\040", " "), options };
            best = Some((depth, mount));
        }
    }
    best.map(|(_, m)| m)
}

/// `mq-deadline` from `none [mq-deadline] kyber`; the whole text if nothing is bracketed.
fn selected_scheduler(text: &str) -> String {
    text.split_whitespace()
        .find_map(|s| s.strip_prefix('[').and_then(|s| s.strip_suffix(']')))
        .unwrap_or(text)
        .to_string()
}

/// Makes this process die with its parent. A `bench-child` left running
/// after `fractaldb bench` is killed (Ctrl-C, a timeout) went on loading for
/// minutes and skewed whatever ran next on the machine. Returns false if
/// the parent is already gone.
pub fn die_with_parent() -> bool {
    let parent = std::os::unix::process::parent_id();
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and changes
    // only this process's own attributes.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    // The parent may have died before the call: then we were re-parented.
    std::os::unix::process::parent_id() == parent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_mount_point_holds_a_path() {
        let mountinfo = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 0:40 / /work/data rw,noatime shared:5 - xfs /dev/nvme0n1p2 rw,attr2
41 27 0:41 / /work/data\\040x rw - tmpfs tmpfs rw
";
        let data = mount_of(mountinfo, Path::new("/work/data/bench")).unwrap();
        assert_eq!(
            data,
            Mount {
                point: "/work/data".into(),
                source: "/dev/nvme0n1p2".into(),
                options: "rw,noatime; file system: rw,attr2".into()
            }
        );
        assert_eq!(mount_of(mountinfo, Path::new("/work/database")).unwrap().point, "/");
        assert_eq!(mount_of(mountinfo, Path::new("/work/data x/y")).unwrap().source, "tmpfs");
        let root = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict\n";
        assert_eq!(
            mount_of(root, Path::new("/x")).unwrap().options,
            "rw,relatime; file system: rw,discard,resv_strict"
        );
    }

    #[test]
    fn the_bracketed_scheduler_is_the_one_in_use() {
        assert_eq!(selected_scheduler("none [mq-deadline] kyber"), "mq-deadline");
        assert_eq!(selected_scheduler("none"), "none");
    }

    #[test]
    fn facts_of_this_machine_can_be_read() {
        let facts = MachineFacts::read();
        assert!(facts.cores >= 1);
        assert!(!facts.os.is_empty());
        // Whatever the file system, the root folder is on some mount.
        assert_eq!(DiskFacts::of(Path::new("/")).mount_point.as_deref(), Some("/"));
    }
}
