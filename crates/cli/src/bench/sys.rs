//! What the operating system can tell about this process and this machine:
//! CPU time, disk I/O, peak memory, bytes on disk, cores, load, free space.

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
/// the block layer, not what the page cache absorbed).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessCounters {
    pub cpu_us: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
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
        Ok(ProcessCounters { cpu_us, read_bytes: field("read_bytes"), write_bytes: field("write_bytes") })
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &ProcessCounters) -> ProcessCounters {
        ProcessCounters {
            cpu_us: self.cpu_us.saturating_sub(earlier.cpu_us),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
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

/// Resets the kernel's peak-resident-memory mark (`VmHWM`) so the next
/// [`peak_rss_bytes`] tells the peak of one workload, not of the process.
/// Returns false where the kernel refuses; the peak then covers the process
/// so far.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Peak resident memory since the last [`reset_peak_rss`] (or process start).
pub fn peak_rss_bytes() -> u64 {
    let from_status = fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    match from_status {
        Some(kib) => kib * 1024,
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
        MachineFacts { cores, cpu_model, memory_bytes, kernel }
    }
}
