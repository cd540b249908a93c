//! [`SimVfs`]: an in-memory, seeded, fault-injecting [`Vfs`] for crash tests
//! and the simulator.
//!
//! # What it models
//!
//! Every file (an *inode*) has two copies of its bytes:
//! - its **current** contents: what reads see, changed at once by every
//!   `write_at` and `set_len`;
//! - its **durable** contents: what a disk would still hold after a power
//!   failure. `VfsFile::sync` makes every completed write durable.
//!
//! Between two syncs the file remembers its *unsynced* operations (writes and
//! `set_len`s, in order). Names work the same way one level up: `open` with
//! create, `rename` and `remove` change the **current namespace** at once, and
//! `Vfs::sync_dir(folder)` copies the current names of that folder into the
//! **durable namespace**. An open file stays usable after its name is removed
//! or renamed, as on Unix.
//!
//! [`SimVfs::crash`] is a power failure: the namespace reverts to the durable
//! namespace, and each surviving file reverts to its durable contents with
//! its unsynced operations replayed in order, each one independently
//! surviving whole, being lost, or (a write of 2 bytes or more) being *torn*:
//! only a random non-empty proper prefix of it reaches the disk. A `set_len`
//! survives or is lost. [`SimVfs::crash_clean`] loses every unsynced operation.
//! After either, every file handle and lock guard taken before it is dead:
//! each call on an old handle returns an `Error::Io` of kind
//! `ErrorKind::Other` ("file handle from before a crash").
//!
//! A failed `sync` (see [`SimVfs::fail_next_syncs`]) leaves the file's
//! durable state unknown, as Linux does: the unsynced operations are settled
//! at once, each surviving, lost or torn as at a crash, and then forgotten, so
//! a later successful `sync` does not write them again (reads still see them:
//! they stay in the current contents). The engine must not trust such a file.
//!
//! Folders are simpler: [`Vfs::create_dir_all`] makes a folder exist at once
//! and for good (a crash does not remove it). The folders `""` and `"/"`
//! always exist. Paths are compared as [`Path`]s, without normalising `..`.
//!
//! # Faults
//!
//! Set at any time, from any thread, through methods on [`SimVfs`]:
//! failing writes ([`SimVfs::fail_next_writes`], [`SimVfs::fail_writes_randomly`])
//! and syncs ([`SimVfs::fail_next_syncs`], [`SimVfs::fail_syncs_randomly`]) with
//! EIO, a failing write leaving a prefix of its data ([`SimVfs::set_torn_writes`]),
//! a full disk ([`SimVfs::set_capacity`], ENOSPC), bit flips on read
//! ([`SimVfs::flip_bits_randomly`]) and direct damage to stored bytes
//! ([`SimVfs::corrupt`]). [`SimVfs::clear_faults`] removes them all.
//!
//! # Determinism
//!
//! Every random choice comes from one generator seeded by [`SimVfs::new`]:
//! the same seed and the same sequence of calls give the same files, faults
//! and crash outcomes. (Threads calling in a different order are a different
//! sequence of calls.) The generator is a SplitMix64 kept in this file,
//! because `rand` is only a dev-dependency of the crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::io::PAGE;
use super::vfs::{OpenMode, Vfs, VfsFile};
use crate::error::{Error, Result};

/// An in-memory file system that can crash and fail on purpose.
///
/// Create one with [`SimVfs::new`]; it is shared as `Arc<SimVfs>`, and the
/// same `Arc` coerces to the `Arc<dyn Vfs>` the engine takes
/// (`let vfs: Arc<dyn Vfs> = sim.clone();`), so a test keeps the `Arc<SimVfs>`
/// to crash it and inject faults while the engine runs on it. The module
/// documentation describes the durability model.
pub struct SimVfs {
    state: Arc<Mutex<State>>,
    /// None for the handle [`SimVfs::new`] returns, which always works;
    /// `Some(generation)` for one from [`SimVfs::boot`], which stops working
    /// at the next crash.
    boot: Option<u64>,
}

/// Counters of the operations done through a [`SimVfs`], as returned by
/// [`SimVfs::stats`] (all paths) and [`SimVfs::stats_matching`] (some paths).
///
/// File operations are counted under the path the file was opened with (a
/// later rename does not move them); `dir_syncs` under the folder's path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// `write_at` calls that succeeded.
    pub writes: u64,
    /// Bytes written by the `write_at` calls that succeeded.
    pub bytes_written: u64,
    /// Bytes given back by `punch_hole` (zeroed, as this file system models it).
    pub bytes_punched: u64,
    /// `write_at` calls that returned an error (injected EIO, ENOSPC,
    /// misaligned direct I/O).
    pub failed_writes: u64,
    /// `read_at` and `read_file` calls that succeeded.
    pub reads: u64,
    /// Bytes returned by the reads that succeeded.
    pub bytes_read: u64,
    /// `VfsFile::sync` calls that succeeded.
    pub syncs: u64,
    /// `VfsFile::sync` calls that returned an injected error.
    pub failed_syncs: u64,
    /// `Vfs::sync_dir` calls that succeeded.
    pub dir_syncs: u64,
}

/// One file name of a [`SimVfs`], as listed by [`SimVfs::files`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimFileInfo {
    /// The file's name.
    pub path: PathBuf,
    /// The length of the file this name refers to now, or None if the name
    /// exists only in the durable namespace (it was removed or renamed away
    /// and its folder not synced since).
    pub len: Option<u64>,
    /// The length of the durable contents of the file this name refers to in
    /// the durable namespace: the length a [`SimVfs::crash_clean`] would
    /// leave under this name. None if the name is not durable (a crash
    /// would remove it).
    pub durable_len: Option<u64>,
    /// Writes and `set_len`s made to the file this name refers to now since
    /// its last sync (0 if the name exists only in the durable namespace).
    pub unsynced_ops: usize,
}

impl SimVfs {
    /// An empty file system (no files, no folders but `""` and `"/"`, no
    /// faults, unlimited capacity) whose random choices all come from `seed`.
    pub fn new(seed: u64) -> Arc<SimVfs> {
        Arc::new(SimVfs {
            state: Arc::new(Mutex::new(State {
                seed,
                rng: Rng::new(seed),
                generation: 0,
                crashes: 0,
                dirs: BTreeSet::new(),
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                inodes: BTreeMap::new(),
                next_inode: 1,
                locks: BTreeSet::new(),
                faults: Faults::default(),
                stats: BTreeMap::new(),
                crash_in: None,
                crash_sites: Vec::new(),
            })),
            boot: None,
        })
    }

    /// A handle on the same file system for one "boot" of an engine: it
    /// works like this one until the next crash, after which every call on
    /// it fails ("power is off") the way old file handles do. Give the
    /// engine `sim.boot()` rather than `sim` itself, so an engine left running
    /// across a simulated crash cannot create or rename files afterwards and
    /// disturb what the next boot finds.
    pub fn boot(&self) -> Arc<SimVfs> {
        let generation = self.state.lock().generation;
        Arc::new(SimVfs { state: self.state.clone(), boot: Some(generation) })
    }

    /// Locks the state, or fails if this handle is from an earlier boot.
    fn live(&self, path: &Path, op: &'static str) -> Result<parking_lot::MutexGuard<'_, State>> {
        let mut st = self.state.lock();
        st.tick(op, path);
        if self.boot.is_some_and(|g| g != st.generation) {
            let e = io::Error::other("power is off: a file system handle from before a crash");
            return Err(Error::io(path, op, e));
        }
        Ok(st)
    }

    /// The seed this file system was created with.
    pub fn seed(&self) -> u64 {
        self.state.lock().seed
    }

    /// Simulates a power failure: names revert to the durable namespace,
    /// files to their durable contents plus a random part of their unsynced
    /// writes (each write independently survives whole, is lost, or is torn
    /// to a random prefix; each `set_len` survives or is lost). Every file
    /// handle and lock guard taken before the call stops working. Faults,
    /// capacity and counters are kept.
    pub fn crash(&self) {
        self.state.lock().crash(true);
    }

    /// Like [`SimVfs::crash`], but with no luck involved: every unsynced write,
    /// `set_len` and name change is lost, and nothing is torn.
    pub fn crash_clean(&self) {
        self.state.lock().crash(false);
    }

    /// Arms a crash (as [`SimVfs::crash`]) that happens just before the
    /// `n`-th next operation on the file system (any `Vfs` or `VfsFile` call
    /// through any handle; `n = 0`: the very next one), which then fails as
    /// every later one on an old handle does. This is how a test crashes the
    /// engine in the middle of whatever it is doing: a flush, a checkpoint,
    /// a log roll. `None` disarms it.
    pub fn crash_after(&self, n: Option<u64>) {
        self.state.lock().crash_in = n;
    }

    /// Where each crash armed by [`SimVfs::crash_after`] struck: the
    /// operation it came before ("write", "fdatasync", "fsync folder", ...)
    /// and that operation's path, oldest first.
    pub fn crash_sites(&self) -> Vec<(&'static str, PathBuf)> {
        self.state.lock().crash_sites.clone()
    }

    /// How many crashes ([`SimVfs::crash`] or [`SimVfs::crash_clean`]) happened.
    pub fn crash_count(&self) -> u64 {
        self.state.lock().crashes
    }

    /// Makes the next `n` `write_at` calls on files whose path contains
    /// `path_contains` (every file if None) fail with EIO. A failing write
    /// writes nothing, unless torn writes are on ([`SimVfs::set_torn_writes`]).
    /// Replaces any earlier write-failure setting; `n = 0` clears it.
    pub fn fail_next_writes(&self, n: u64, path_contains: Option<&str>) {
        self.state.lock().faults.write = FaultRule::next(n, path_contains);
    }

    /// Makes each `write_at` call on files whose path contains `path_contains`
    /// (every file if None) fail with EIO with probability `p` (0.0 to 1.0).
    /// Replaces any earlier write-failure setting.
    pub fn fail_writes_randomly(&self, p: f64, path_contains: Option<&str>) {
        self.state.lock().faults.write = FaultRule::random(p, path_contains);
    }

    /// Makes the next `n` `VfsFile::sync` calls on files whose path contains
    /// `path_contains` (every file if None) fail with EIO. Such a sync makes
    /// the file's unsynced writes durable only in part, at random, and they
    /// are then forgotten (see the module documentation). Replaces any
    /// earlier sync-failure setting; `n = 0` clears it.
    pub fn fail_next_syncs(&self, n: u64, path_contains: Option<&str>) {
        self.state.lock().faults.sync = FaultRule::next(n, path_contains);
    }

    /// Makes each `VfsFile::sync` call on files whose path contains
    /// `path_contains` (every file if None) fail with EIO with probability `p`,
    /// as [`SimVfs::fail_next_syncs`] describes. Replaces any earlier
    /// sync-failure setting.
    pub fn fail_syncs_randomly(&self, p: f64, path_contains: Option<&str>) {
        self.state.lock().faults.sync = FaultRule::random(p, path_contains);
    }

    /// With `on`, a write that fails with an injected EIO first puts a random
    /// non-empty proper prefix of its data into the file (unsynced, like any
    /// write), as a disk that failed mid-way would. Off by default. ENOSPC
    /// failures always write nothing.
    pub fn set_torn_writes(&self, on: bool) {
        self.state.lock().faults.torn_writes = on;
    }

    /// Limits the sum of the current lengths of all files (named, or open
    /// after being removed) to `bytes`; None removes the limit. A `write_at`
    /// or `set_len` that would grow the total past it fails with ENOSPC and
    /// changes nothing. Lowering the limit below what is used is allowed:
    /// only growth is refused.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.state.lock().faults.capacity = bytes;
    }

    /// The sum of the current lengths of all files that count against the
    /// capacity (see [`SimVfs::set_capacity`]).
    pub fn used_bytes(&self) -> u64 {
        self.state.lock().used_bytes()
    }

    /// Makes each read (`read_at` or `read_file`) of a non-empty range on files
    /// whose path contains `path_contains` (every file if None), with
    /// probability `p`, return its data with exactly one random bit flipped.
    /// The stored bytes are not changed. Replaces any earlier bit-flip setting.
    pub fn flip_bits_randomly(&self, p: f64, path_contains: Option<&str>) {
        self.state.lock().faults.bit_flip = FaultRule::random(p, path_contains);
    }

    /// Removes every fault: write and sync failures, torn writes, capacity
    /// and bit flips.
    pub fn clear_faults(&self) {
        self.state.lock().faults = Faults::default();
    }

    /// Counters summed over all paths.
    pub fn stats(&self) -> SimStats {
        let st = self.state.lock();
        st.stats.values().fold(SimStats::default(), |a, b| a.add(b))
    }

    /// Counters summed over the paths containing `path_contains` (for
    /// example `".fdl"` for the log files).
    pub fn stats_matching(&self, path_contains: &str) -> SimStats {
        let st = self.state.lock();
        st.stats
            .iter()
            .filter(|(p, _)| path_matches(p, Some(path_contains)))
            .fold(SimStats::default(), |a, (_, b)| a.add(b))
    }

    /// Sets every counter back to zero.
    pub fn reset_stats(&self) {
        self.state.lock().stats.clear();
    }

    /// Every file name in the current or the durable namespace, sorted by path,
    /// with the current and durable lengths of what it refers to.
    pub fn files(&self) -> Vec<SimFileInfo> {
        let st = self.state.lock();
        let paths: BTreeSet<&PathBuf> = st.names.keys().chain(st.durable_names.keys()).collect();
        paths
            .into_iter()
            .map(|p| {
                let cur = st.names.get(p).map(|id| &st.inodes[id]);
                SimFileInfo {
                    path: p.clone(),
                    len: cur.map(|f| f.current.len() as u64),
                    durable_len: st.durable_names.get(p).map(|id| st.inodes[id].durable.len() as u64),
                    unsynced_ops: cur.map_or(0, |f| f.pending.len()),
                }
            })
            .collect()
    }

    /// The bytes a [`SimVfs::crash_clean`] now would leave at `path`: the
    /// durable contents of the file its durable name refers to, or None if
    /// the name is not durable.
    pub fn read_durable(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.state.lock();
        st.durable_names.get(path).map(|id| st.inodes[id].durable.clone())
    }

    /// Damages stored bytes, as bit rot would: XORs `xor` into the byte at
    /// `offset` of the file named `path` (in the current namespace, else the
    /// durable one), in both its current and its durable contents where they
    /// are that long. Reads and crashes then see the damage.
    ///
    /// # Panics
    /// If there is no such file or neither copy has a byte at `offset`: a
    /// mistake in the test.
    pub fn corrupt(&self, path: &Path, offset: u64, xor: u8) {
        let mut st = self.state.lock();
        let id = *st
            .names
            .get(path)
            .or_else(|| st.durable_names.get(path))
            .unwrap_or_else(|| panic!("corrupt: no file {}", path.display()));
        let f = st.inodes.get_mut(&id).expect("named inode exists");
        let mut hit = false;
        for bytes in [&mut f.current, &mut f.durable] {
            if let Some(b) = usize::try_from(offset).ok().and_then(|o| bytes.get_mut(o)) {
                *b ^= xor;
                hit = true;
            }
        }
        assert!(hit, "corrupt: {} has no byte at {offset}", path.display());
    }
}

impl fmt::Debug for SimVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("SimVfs")
            .field("seed", &st.seed)
            .field("files", &st.names.len())
            .field("crashes", &st.crashes)
            .finish_non_exhaustive()
    }
}

impl Vfs for SimVfs {
    fn open(&self, path: &Path, mode: OpenMode, direct: bool) -> Result<Arc<dyn VfsFile>> {
        let mut st = self.live(path, "open")?;
        let id = match (st.names.get(path).copied(), mode) {
            (Some(_), OpenMode::CreateNew) => {
                return Err(Error::io(path, "create", io::ErrorKind::AlreadyExists.into()))
            }
            (Some(id), _) => id,
            (None, OpenMode::Existing) => {
                return Err(Error::io(path, "open", io::ErrorKind::NotFound.into()))
            }
            (None, _) => st.create(path, "create")?,
        };
        st.inodes.get_mut(&id).expect("named inode exists").open += 1;
        let generation = st.generation;
        drop(st);
        Ok(Arc::new(SimFile {
            state: self.state.clone(),
            path: path.to_path_buf(),
            inode: id,
            generation,
            direct,
        }))
    }

    fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        let mut st = self.live(path, "read")?;
        let Some(&id) = st.names.get(path) else {
            if st.is_dir(path) {
                return Err(Error::io(path, "read", io::Error::from_raw_os_error(libc::EISDIR)));
            }
            return Ok(None);
        };
        let mut data = st.inodes[&id].current.clone();
        st.maybe_flip_bit(path, &mut data);
        let s = st.stats_mut(path);
        s.reads += 1;
        s.bytes_read += data.len() as u64;
        Ok(Some(data))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.live(from, "rename")?;
        let Some(&id) = st.names.get(from) else {
            return Err(Error::io(from, "rename", io::ErrorKind::NotFound.into()));
        };
        st.check_parent(to, "rename")?;
        if st.is_dir(to) {
            return Err(Error::io(to, "rename", io::Error::from_raw_os_error(libc::EISDIR)));
        }
        st.names.remove(from);
        st.names.insert(to.to_path_buf(), id);
        st.collect_garbage();
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.live(path, "remove")?;
        if st.names.remove(path).is_none() {
            return Err(Error::io(path, "remove", io::ErrorKind::NotFound.into()));
        }
        st.collect_garbage();
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.live(dir, "list folder")?;
        if !st.is_dir(dir) {
            return Err(Error::io(dir, "list folder", io::ErrorKind::NotFound.into()));
        }
        // Subfolders are listed too, as `read_dir` lists them.
        let names = st.names.keys().chain(st.dirs.iter());
        Ok(names
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect())
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.live(dir, "create folder")?;
        if let Some(file) = dir.ancestors().find(|a| st.names.contains_key(*a)) {
            return Err(Error::io(file, "create folder", io::Error::from_raw_os_error(libc::ENOTDIR)));
        }
        for a in dir.ancestors().filter(|a| !is_root(a)) {
            st.dirs.insert(a.to_path_buf());
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.live(dir, "fsync folder")?;
        if !st.is_dir(dir) {
            return Err(Error::io(dir, "fsync folder", io::ErrorKind::NotFound.into()));
        }
        st.durable_names.retain(|p, _| p.parent() != Some(dir));
        let now: Vec<(PathBuf, u64)> = st
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        st.durable_names.extend(now);
        st.collect_garbage();
        st.stats_mut(dir).dir_syncs += 1;
        Ok(())
    }

    fn free_bytes(&self, dir: &Path) -> Option<u64> {
        let Ok(st) = self.live(dir, "statvfs") else { return Some(0) };
        st.faults.capacity.map(|c| c.saturating_sub(st.used_bytes()))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn Send + Sync>> {
        let mut st = self.live(path, "lock")?;
        if st.locks.contains(path) {
            return Err(Error::Locked(path.parent().unwrap_or(path).to_path_buf()));
        }
        if !st.names.contains_key(path) {
            st.create(path, "open")?;
        }
        st.locks.insert(path.to_path_buf());
        Ok(Box::new(SimLockGuard {
            state: Arc::downgrade(&self.state),
            path: path.to_path_buf(),
            generation: st.generation,
        }))
    }
}

/// The guard [`SimVfs`]'s `lock` returns: releases the lock when dropped,
/// unless a crash released it first.
struct SimLockGuard {
    state: Weak<Mutex<State>>,
    path: PathBuf,
    generation: u64,
}

impl Drop for SimLockGuard {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            let mut st = state.lock();
            if st.generation == self.generation {
                st.locks.remove(&self.path);
            }
        }
    }
}

/// An open file of a [`SimVfs`]: a reference to an inode, valid until the
/// next crash.
struct SimFile {
    state: Arc<Mutex<State>>,
    /// The path it was opened with (the file may since have been renamed).
    path: PathBuf,
    inode: u64,
    /// The value of `State::generation` when it was opened.
    generation: u64,
    direct: bool,
}

impl SimFile {
    /// Locks the state, or fails if a crash happened since the file was opened.
    fn state(&self, op: &'static str) -> Result<parking_lot::MutexGuard<'_, State>> {
        let mut st = self.state.lock();
        st.tick(op, &self.path);
        if st.generation != self.generation {
            let e = io::Error::other("file handle from before a crash");
            return Err(Error::io(&self.path, op, e));
        }
        Ok(st)
    }
}

impl VfsFile for SimFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn direct_io(&self) -> bool {
        self.direct
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        let mut st = self.state("read")?;
        let data = &st.inodes[&self.inode].current;
        let end = off.checked_add(buf.len() as u64);
        match end {
            Some(end) if end <= data.len() as u64 => {
                buf.copy_from_slice(&data[off as usize..end as usize]);
            }
            _ => {
                let msg = format!("file ends before byte {}", off.saturating_add(buf.len() as u64));
                let e = io::Error::new(io::ErrorKind::UnexpectedEof, msg);
                return Err(Error::io(&self.path, "read", e));
            }
        }
        st.maybe_flip_bit(&self.path, buf);
        let s = st.stats_mut(&self.path);
        s.reads += 1;
        s.bytes_read += buf.len() as u64;
        Ok(())
    }

    fn write_at(&self, off: u64, data: &[u8]) -> Result<()> {
        let mut st = self.state("write")?;
        let st = &mut *st;
        if self.direct
            && !data.is_empty()
            && (!off.is_multiple_of(PAGE) || !(data.len() as u64).is_multiple_of(PAGE))
        {
            st.stats_mut(&self.path).failed_writes += 1;
            return Err(Error::invalid(format!(
                "O_DIRECT write of {} bytes at {off} to {} is not whole pages",
                data.len(),
                self.path.display()
            )));
        }
        let Some(end) = off.checked_add(data.len() as u64).filter(|&e| e <= usize::MAX as u64) else {
            st.stats_mut(&self.path).failed_writes += 1;
            return Err(Error::io(&self.path, "write", io::Error::from_raw_os_error(libc::EFBIG)));
        };
        let len = st.inodes[&self.inode].current.len() as u64;
        if let Err(e) = st.check_growth(&self.path, "write", end.saturating_sub(len)) {
            st.stats_mut(&self.path).failed_writes += 1;
            return Err(e);
        }
        if st.faults.write.fires(&self.path, &mut st.rng) {
            if st.faults.torn_writes && data.len() > 1 {
                let keep = 1 + st.rng.below(data.len() as u64 - 1) as usize;
                st.inodes.get_mut(&self.inode).expect("open inode exists").write(off, &data[..keep]);
            }
            st.stats_mut(&self.path).failed_writes += 1;
            return Err(Error::io(&self.path, "write", io::Error::from_raw_os_error(libc::EIO)));
        }
        st.inodes.get_mut(&self.inode).expect("open inode exists").write(off, data);
        let s = st.stats_mut(&self.path);
        s.writes += 1;
        s.bytes_written += data.len() as u64;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut st = self.state("fdatasync")?;
        let st = &mut *st;
        if st.faults.sync.fires(&self.path, &mut st.rng) {
            let f = st.inodes.get_mut(&self.inode).expect("open inode exists");
            f.settle(Some(&mut st.rng));
            st.stats_mut(&self.path).failed_syncs += 1;
            return Err(Error::io(&self.path, "fdatasync", io::Error::from_raw_os_error(libc::EIO)));
        }
        let f = st.inodes.get_mut(&self.inode).expect("open inode exists");
        for op in std::mem::take(&mut f.pending) {
            op.apply(&mut f.durable);
        }
        st.stats_mut(&self.path).syncs += 1;
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        let st = self.state("stat")?;
        Ok(st.inodes[&self.inode].current.len() as u64)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        let mut st = self.state("truncate")?;
        if len > usize::MAX as u64 {
            return Err(Error::io(&self.path, "truncate", io::Error::from_raw_os_error(libc::EFBIG)));
        }
        let cur = st.inodes[&self.inode].current.len() as u64;
        st.check_growth(&self.path, "truncate", len.saturating_sub(cur))?;
        let f = st.inodes.get_mut(&self.inode).expect("open inode exists");
        let op = Op::SetLen(len);
        op.apply(&mut f.current);
        f.pending.push(op);
        Ok(())
    }

    /// Modelled as a write of zeros (unsynced like any write), so a range
    /// punched while something still referred to it reads back as garbage
    /// in the tests instead of passing unnoticed.
    fn punch_hole(&self, off: u64, len: u64) -> Result<()> {
        let mut st = self.state("punch hole")?;
        let f = st.inodes.get_mut(&self.inode).expect("open inode exists");
        let end = off.saturating_add(len).min(f.current.len() as u64);
        if off < end {
            f.write(off, &vec![0; (end - off) as usize]);
        }
        st.stats_mut(&self.path).bytes_punched += end.saturating_sub(off);
        Ok(())
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        if st.generation == self.generation {
            if let Some(f) = st.inodes.get_mut(&self.inode) {
                f.open -= 1;
            }
            st.collect_garbage();
        }
    }
}

/// Everything a [`SimVfs`] knows, behind its one mutex.
struct State {
    seed: u64,
    rng: Rng,
    /// Incremented by every crash; file handles and lock guards of an older
    /// generation are dead.
    generation: u64,
    crashes: u64,
    /// Folders made by `create_dir_all` (besides `""` and `"/"`).
    dirs: BTreeSet<PathBuf>,
    /// The current namespace: file path -> inode.
    names: BTreeMap<PathBuf, u64>,
    /// The durable namespace: file path -> inode.
    durable_names: BTreeMap<PathBuf, u64>,
    /// Every inode that a name (current or durable) or an open handle refers to.
    inodes: BTreeMap<u64, Inode>,
    next_inode: u64,
    /// The paths locked by `Vfs::lock`.
    locks: BTreeSet<PathBuf>,
    faults: Faults,
    /// Counters per path.
    stats: BTreeMap<PathBuf, SimStats>,
    /// A crash comes (with luck) just before this many more operations
    /// have been done through the file system (see `SimVfs::crash_after`).
    crash_in: Option<u64>,
    /// The operation and path each armed crash struck before.
    crash_sites: Vec<(&'static str, PathBuf)>,
}

impl State {
    fn is_dir(&self, p: &Path) -> bool {
        is_root(p) || self.dirs.contains(p)
    }

    /// Fails unless `path` can name a file: its folder exists.
    fn check_parent(&self, path: &Path, op: &'static str) -> Result<()> {
        match path.parent() {
            Some(dir) if self.is_dir(dir) => Ok(()),
            _ => Err(Error::io(path, op, io::ErrorKind::NotFound.into())),
        }
    }

    /// Creates an empty file named `path` in the current namespace.
    fn create(&mut self, path: &Path, op: &'static str) -> Result<u64> {
        self.check_parent(path, op)?;
        if self.is_dir(path) {
            return Err(Error::io(path, op, io::Error::from_raw_os_error(libc::EISDIR)));
        }
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, Inode::default());
        self.names.insert(path.to_path_buf(), id);
        Ok(id)
    }

    /// The inodes that count against the capacity: named now or open.
    fn used_bytes(&self) -> u64 {
        let named: BTreeSet<u64> = self.names.values().copied().collect();
        self.inodes
            .iter()
            .filter(|(id, f)| f.open > 0 || named.contains(id))
            .map(|(_, f)| f.current.len() as u64)
            .sum()
    }

    /// Fails with ENOSPC if the files may not grow by `extra` bytes.
    fn check_growth(&self, path: &Path, op: &'static str, extra: u64) -> Result<()> {
        match self.faults.capacity {
            Some(cap) if extra > 0 && self.used_bytes().saturating_add(extra) > cap => {
                Err(Error::io(path, op, io::Error::from_raw_os_error(libc::ENOSPC)))
            }
            _ => Ok(()),
        }
    }

    fn maybe_flip_bit(&mut self, path: &Path, buf: &mut [u8]) {
        if !buf.is_empty() && self.faults.bit_flip.fires(path, &mut self.rng) {
            let bit = self.rng.below(buf.len() as u64 * 8);
            buf[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
    }

    fn stats_mut(&mut self, path: &Path) -> &mut SimStats {
        self.stats.entry(path.to_path_buf()).or_default()
    }

    /// Drops the inodes nothing refers to any more.
    fn collect_garbage(&mut self) {
        let named: BTreeSet<u64> = self.names.values().chain(self.durable_names.values()).copied().collect();
        self.inodes.retain(|id, f| f.open > 0 || named.contains(id));
    }

    /// A power failure; `luck` replays unsynced operations at random, else
    /// all are lost.
    /// Counts one operation towards a crash set by `SimVfs::crash_after`.
    fn tick(&mut self, op: &'static str, path: &Path) {
        match self.crash_in {
            Some(0) => {
                self.crash_in = None;
                self.crash_sites.push((op, path.to_path_buf()));
                self.crash(true);
            }
            Some(n) => self.crash_in = Some(n - 1),
            None => {}
        }
    }

    fn crash(&mut self, luck: bool) {
        self.generation += 1;
        self.crashes += 1;
        self.locks.clear();
        self.names = self.durable_names.clone();
        for f in self.inodes.values_mut() {
            f.open = 0;
        }
        self.collect_garbage();
        for f in self.inodes.values_mut() {
            f.settle(if luck { Some(&mut self.rng) } else { None });
            f.current = f.durable.clone();
        }
    }
}

/// One file's bytes.
#[derive(Default)]
struct Inode {
    /// What reads see.
    current: Vec<u8>,
    /// What survives a crash.
    durable: Vec<u8>,
    /// The writes and `set_len`s since the last sync, oldest first: applied
    /// to `current`, not to `durable`.
    pending: Vec<Op>,
    /// Open handles of the current generation.
    open: usize,
}

impl Inode {
    fn write(&mut self, off: u64, data: &[u8]) {
        let op = Op::Write { off, data: data.to_vec() };
        op.apply(&mut self.current);
        self.pending.push(op);
    }

    /// Settles the unsynced operations into the durable contents and forgets
    /// them: with `rng`, each write survives, is lost or is torn, with equal
    /// odds (a 1-byte write or a `set_len` survives or is lost, even odds);
    /// without, all are lost.
    fn settle(&mut self, rng: Option<&mut Rng>) {
        let ops = std::mem::take(&mut self.pending);
        let Some(rng) = rng else { return };
        for op in ops {
            match op {
                Op::Write { off, data } => match rng.below(if data.len() > 1 { 3 } else { 2 }) {
                    0 => Op::Write { off, data }.apply(&mut self.durable),
                    1 => {}
                    _ => {
                        let keep = 1 + rng.below(data.len() as u64 - 1) as usize;
                        Op::Write { off, data: data[..keep].to_vec() }.apply(&mut self.durable);
                    }
                },
                Op::SetLen(_) => {
                    if rng.below(2) == 0 {
                        op.apply(&mut self.durable);
                    }
                }
            }
        }
    }
}

/// An operation on a file's bytes, remembered until the next sync.
enum Op {
    Write { off: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Op {
    /// Applies it to `bytes`, zero-filling any gap before a write.
    fn apply(&self, bytes: &mut Vec<u8>) {
        match self {
            Op::Write { off, data } => {
                let off = *off as usize;
                if bytes.len() < off + data.len() {
                    bytes.resize(off + data.len(), 0);
                }
                bytes[off..off + data.len()].copy_from_slice(data);
            }
            Op::SetLen(len) => bytes.resize(*len as usize, 0),
        }
    }
}

/// The faults in force.
#[derive(Default)]
struct Faults {
    write: FaultRule,
    sync: FaultRule,
    bit_flip: FaultRule,
    torn_writes: bool,
    capacity: Option<u64>,
}

/// When a fault fires: on the next `next` matching calls, then on each
/// matching call with probability `probability`.
#[derive(Default)]
struct FaultRule {
    next: u64,
    probability: f64,
    path_contains: Option<String>,
}

impl FaultRule {
    fn next(n: u64, path_contains: Option<&str>) -> FaultRule {
        FaultRule { next: n, probability: 0.0, path_contains: path_contains.map(str::to_string) }
    }

    fn random(p: f64, path_contains: Option<&str>) -> FaultRule {
        assert!((0.0..=1.0).contains(&p), "fault probability {p} is not between 0 and 1");
        FaultRule { next: 0, probability: p, path_contains: path_contains.map(str::to_string) }
    }

    /// Whether the fault fires for this call on `path` (counting it down).
    fn fires(&mut self, path: &Path, rng: &mut Rng) -> bool {
        if !path_matches(path, self.path_contains.as_deref()) {
            return false;
        }
        if self.next > 0 {
            self.next -= 1;
            return true;
        }
        self.probability > 0.0 && rng.chance(self.probability)
    }
}

impl SimStats {
    fn add(self, o: &SimStats) -> SimStats {
        SimStats {
            writes: self.writes + o.writes,
            bytes_written: self.bytes_written + o.bytes_written,
            bytes_punched: self.bytes_punched + o.bytes_punched,
            failed_writes: self.failed_writes + o.failed_writes,
            reads: self.reads + o.reads,
            bytes_read: self.bytes_read + o.bytes_read,
            syncs: self.syncs + o.syncs,
            failed_syncs: self.failed_syncs + o.failed_syncs,
            dir_syncs: self.dir_syncs + o.dir_syncs,
        }
    }
}

fn path_matches(path: &Path, contains: Option<&str>) -> bool {
    contains.is_none_or(|s| path.to_string_lossy().contains(s))
}

/// `""` and `"/"`: folders that always exist.
fn is_root(p: &Path) -> bool {
    p.parent().is_none()
}

/// SplitMix64: small, fast, and good enough for choosing faults.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; `n` must not be 0.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::io::is_truncation;

    fn dir() -> &'static Path {
        Path::new("/db")
    }

    fn setup(seed: u64) -> (Arc<SimVfs>, Arc<dyn Vfs>) {
        let sim = SimVfs::new(seed);
        let vfs: Arc<dyn Vfs> = sim.clone();
        vfs.create_dir_all(dir()).unwrap();
        (sim, vfs)
    }

    /// Creates `name` in /db with `data`, synced, name durable.
    fn durable_file(vfs: &dyn Vfs, name: &str, data: &[u8]) -> Arc<dyn VfsFile> {
        let f = vfs.open(&dir().join(name), OpenMode::CreateNew, false).unwrap();
        f.write_at(0, data).unwrap();
        f.sync().unwrap();
        vfs.sync_dir(dir()).unwrap();
        f
    }

    fn io_errno(e: &Error) -> Option<i32> {
        match e {
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    #[test]
    fn unsynced_data_is_lost_by_a_clean_crash_and_synced_data_kept() {
        let (sim, vfs) = setup(1);
        let p = dir().join("a");
        let f = durable_file(&*vfs, "a", b"hello");
        f.write_at(5, b" world").unwrap();
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), b"hello world");
        assert_eq!(sim.read_durable(&p).unwrap(), b"hello");
        sim.crash_clean();
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), b"hello");

        let f = vfs.open(&p, OpenMode::Existing, false).unwrap();
        f.write_at(0, b"HELLO world").unwrap();
        f.set_len(20).unwrap();
        f.sync().unwrap();
        sim.crash_clean();
        let mut want = b"HELLO world".to_vec();
        want.resize(20, 0);
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), want);
    }

    #[test]
    fn old_handles_and_locks_die_with_a_crash() {
        let (sim, vfs) = setup(2);
        let f = durable_file(&*vfs, "a", b"abc");
        let guard = vfs.lock(&dir().join("LOCK")).unwrap();
        sim.crash();
        let mut buf = [0u8; 3];
        for e in [
            f.read_at(0, &mut buf).unwrap_err(),
            f.write_at(0, b"x").unwrap_err(),
            f.sync().unwrap_err(),
            f.len().unwrap_err(),
            f.set_len(0).unwrap_err(),
        ] {
            assert!(matches!(&e, Error::Io { source, .. } if source.kind() == io::ErrorKind::Other), "{e}");
        }
        // The crash released the lock; the old guard's drop must not release the new one.
        let again = vfs.lock(&dir().join("LOCK")).unwrap();
        drop(guard);
        assert!(matches!(vfs.lock(&dir().join("LOCK")), Err(Error::Locked(d)) if d == dir()));
        drop(again);
        vfs.lock(&dir().join("LOCK")).unwrap();
        assert_eq!(sim.read_durable(&dir().join("a")).unwrap(), b"abc");
    }

    #[test]
    fn names_are_durable_only_after_sync_dir() {
        let (sim, vfs) = setup(3);
        durable_file(&*vfs, "old", b"1");
        let new = vfs.open(&dir().join("new"), OpenMode::CreateNew, false).unwrap();
        new.write_at(0, b"2").unwrap();
        new.sync().unwrap(); // the data is durable, the name is not
        vfs.rename(&dir().join("old"), &dir().join("moved")).unwrap();
        let mut names = vfs.list(dir()).unwrap();
        names.sort();
        assert_eq!(names, ["moved", "new"]);
        let info = sim.files();
        assert_eq!(info.len(), 3);
        assert_eq!(
            info[0],
            SimFileInfo { path: dir().join("moved"), len: Some(1), durable_len: None, unsynced_ops: 0 }
        );
        assert_eq!(
            info[2],
            SimFileInfo { path: dir().join("old"), len: None, durable_len: Some(1), unsynced_ops: 0 }
        );
        sim.crash();
        assert_eq!(vfs.list(dir()).unwrap(), ["old"]);
        assert_eq!(vfs.read_file(&dir().join("old")).unwrap().unwrap(), b"1");
        assert!(vfs.read_file(&dir().join("new")).unwrap().is_none());

        // Synced, both changes survive; a removal likewise needs the folder synced.
        vfs.rename(&dir().join("old"), &dir().join("moved")).unwrap();
        vfs.sync_dir(dir()).unwrap();
        vfs.remove(&dir().join("moved")).unwrap();
        assert!(vfs.list(dir()).unwrap().is_empty());
        sim.crash_clean();
        assert_eq!(vfs.list(dir()).unwrap(), ["moved"]);
        vfs.remove(&dir().join("moved")).unwrap();
        vfs.sync_dir(dir()).unwrap();
        sim.crash_clean();
        assert!(vfs.list(dir()).unwrap().is_empty());
        assert!(sim.files().is_empty());
    }

    #[test]
    fn namespace_errors_match_the_os() {
        let (_sim, vfs) = setup(4);
        let p = dir().join("a");
        assert!(vfs.open(&p, OpenMode::Existing, false).is_err());
        assert!(vfs.open(Path::new("/nofolder/a"), OpenMode::CreateOrOpen, false).is_err());
        vfs.open(&p, OpenMode::CreateNew, false).unwrap();
        assert!(vfs.open(&p, OpenMode::CreateNew, false).is_err());
        vfs.open(&p, OpenMode::CreateOrOpen, false).unwrap();
        assert!(vfs.remove(&dir().join("b")).is_err());
        assert!(vfs.rename(&dir().join("b"), &p).is_err());
        assert!(vfs.list(Path::new("/nofolder")).is_err());
        assert!(vfs.create_dir_all(&p.join("sub")).is_err());
        vfs.create_dir_all(&dir().join("sub/deeper")).unwrap();
        let mut names = vfs.list(dir()).unwrap();
        names.sort();
        assert_eq!(names, ["a", "sub"]);
        assert_eq!(vfs.list(Path::new("/")).unwrap(), ["db"]);
        // Relative paths work too: their top folder is "".
        vfs.open(Path::new("rel"), OpenMode::CreateNew, false).unwrap();
        vfs.sync_dir(Path::new("")).unwrap();
        assert_eq!(vfs.list(Path::new("")).unwrap(), ["rel"]);
    }

    #[test]
    fn open_files_survive_removal_until_closed() {
        let (sim, vfs) = setup(5);
        let f = durable_file(&*vfs, "a", b"data");
        vfs.remove(&dir().join("a")).unwrap();
        vfs.sync_dir(dir()).unwrap();
        f.write_at(4, b"more").unwrap();
        let mut buf = [0u8; 8];
        f.read_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"datamore");
        assert_eq!(sim.used_bytes(), 8);
        drop(f);
        assert_eq!(sim.used_bytes(), 0);
    }

    #[test]
    fn reads_past_the_end_are_truncation_errors() {
        let (_sim, vfs) = setup(6);
        let f = durable_file(&*vfs, "a", b"0123456789");
        let mut buf = [0u8; 4];
        f.read_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"6789");
        assert!(is_truncation(&f.read_at(7, &mut buf).unwrap_err()));
        assert!(is_truncation(&f.read_at(100, &mut buf).unwrap_err()));
        assert!(is_truncation(&f.read_at(u64::MAX, &mut buf).unwrap_err()));
        f.read_at(10, &mut []).unwrap();
    }

    #[test]
    fn a_crash_keeps_drops_or_tears_each_unsynced_write() {
        let mut seen = [false; 3]; // kept, lost, torn
        for seed in 0..40 {
            let (sim, vfs) = setup(seed);
            let p = dir().join("a");
            let f = durable_file(&*vfs, "a", &[0u8; 100]);
            for i in 0..10u8 {
                f.write_at(u64::from(i) * 10, &[i + 1; 10]).unwrap();
            }
            sim.crash();
            let got = vfs.read_file(&p).unwrap().unwrap();
            assert_eq!(got.len(), 100);
            for (i, chunk) in got.chunks(10).enumerate() {
                let n = chunk.iter().take_while(|&&b| b == i as u8 + 1).count();
                assert!(chunk[n..].iter().all(|&b| b == 0), "not a prefix: {chunk:?}");
                seen[match n {
                    10 => 0,
                    0 => 1,
                    _ => 2,
                }] = true;
            }
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn a_crash_can_tear_an_extending_write() {
        for seed in 0..20 {
            let (sim, vfs) = setup(seed);
            let p = dir().join("a");
            let f = durable_file(&*vfs, "a", b"");
            let data: Vec<u8> = (1..=200).collect();
            f.write_at(0, &data).unwrap();
            sim.crash();
            let got = vfs.read_file(&p).unwrap().unwrap();
            assert_eq!(got, data[..got.len()], "seed {seed}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_crash() {
        let run = |seed: u64| {
            let (sim, vfs) = setup(seed);
            sim.fail_writes_randomly(0.1, Some("/b"));
            sim.set_torn_writes(true);
            sim.flip_bits_randomly(0.2, None);
            let a = durable_file(&*vfs, "a", &[7; 4096]);
            let b = durable_file(&*vfs, "b", &[7; 4096]);
            let mut reads = Vec::new();
            for i in 0..50u64 {
                let data: Vec<u8> = (0..64).map(|j| (i * 64 + j) as u8).collect();
                a.write_at(i * 61 % 4000, &data).unwrap();
                let _ = b.write_at(i * 67 % 4000, &data);
                let mut buf = [0u8; 32];
                a.read_at(i * 13, &mut buf).unwrap();
                reads.push(buf);
            }
            sim.crash();
            let files = sim.files();
            let read = |n| vfs.read_file(&dir().join(n)).unwrap().unwrap();
            (read("a"), read("b"), reads, files, sim.stats())
        };
        let x = run(42);
        assert_eq!(x, run(42));
        assert_ne!(x.0, run(43).0);
    }

    #[test]
    fn torn_writes_leave_a_prefix_of_a_failed_write() {
        let (sim, vfs) = setup(7);
        let p = dir().join("a");
        let f = durable_file(&*vfs, "a", &[0; 100]);
        sim.set_torn_writes(true);
        sim.fail_next_writes(1, None);
        let e = f.write_at(0, &[9; 100]).unwrap_err();
        assert_eq!(io_errno(&e), Some(libc::EIO));
        let got = vfs.read_file(&p).unwrap().unwrap();
        let n = got.iter().take_while(|&&b| b == 9).count();
        assert!(n > 0 && n < 100 && got[n..].iter().all(|&b| b == 0), "{got:?}");
        // Not durable: a clean crash takes it back.
        sim.crash_clean();
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), [0; 100]);
    }

    #[test]
    fn injected_write_errors_write_nothing_and_count_down() {
        let (sim, vfs) = setup(8);
        let log = durable_file(&*vfs, "log-1.fdl", b"");
        let data = durable_file(&*vfs, "d1.fdb", b"");
        sim.reset_stats();
        sim.fail_next_writes(2, Some(".fdl"));
        data.write_at(0, b"fine").unwrap();
        assert_eq!(io_errno(&log.write_at(0, b"x").unwrap_err()), Some(libc::EIO));
        assert_eq!(io_errno(&log.write_at(0, b"y").unwrap_err()), Some(libc::EIO));
        assert_eq!(log.len().unwrap(), 0);
        log.write_at(0, b"z").unwrap();
        let s = sim.stats_matching(".fdl");
        assert_eq!((s.writes, s.failed_writes, s.bytes_written), (1, 2, 1));
        assert_eq!(sim.stats().writes, 2);

        sim.fail_writes_randomly(1.0, None);
        assert!(data.write_at(0, b"no").is_err());
        sim.fail_writes_randomly(0.5, None);
        let failed = (0..1000).filter(|_| data.write_at(0, b"?").is_err()).count();
        assert!((400..600).contains(&failed), "{failed}");
        sim.clear_faults();
        data.write_at(0, b"ok").unwrap();
    }

    #[test]
    fn a_failed_sync_settles_the_unsynced_writes_for_good() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..30 {
            let (sim, vfs) = setup(seed);
            let p = dir().join("d1.fdb");
            let f = durable_file(&*vfs, "d1.fdb", &[0; 10]);
            f.write_at(0, &[5; 10]).unwrap();
            sim.fail_next_syncs(1, Some("d1"));
            assert_eq!(io_errno(&f.sync().unwrap_err()), Some(libc::EIO));
            assert_eq!(sim.stats().failed_syncs, 1);
            // Reads still see the write; what is durable is a prefix of it.
            assert_eq!(vfs.read_file(&p).unwrap().unwrap(), [5; 10]);
            let durable = sim.read_durable(&p).unwrap();
            let n = durable.iter().take_while(|&&b| b == 5).count();
            assert!(durable[n..].iter().all(|&b| b == 0));
            outcomes.insert(n);
            // A later sync succeeds without writing it again, as Linux does.
            f.sync().unwrap();
            assert_eq!(sim.read_durable(&p).unwrap(), durable);
            sim.crash_clean();
            assert_eq!(vfs.read_file(&p).unwrap().unwrap(), durable);
        }
        assert!(outcomes.contains(&0) && outcomes.contains(&10) && outcomes.len() > 2, "{outcomes:?}");
    }

    #[test]
    fn enospc_writes_nothing_and_free_bytes_is_right() {
        let (sim, vfs) = setup(9);
        assert_eq!(vfs.free_bytes(dir()), None);
        let f = durable_file(&*vfs, "a", &[1; 600]);
        sim.set_capacity(Some(1000));
        assert_eq!(vfs.free_bytes(dir()), Some(400));
        let g = vfs.open(&dir().join("b"), OpenMode::CreateNew, false).unwrap();
        g.write_at(0, &[2; 300]).unwrap();
        assert_eq!(vfs.free_bytes(dir()), Some(100));
        let e = g.write_at(250, &[3; 151]).unwrap_err();
        assert_eq!(io_errno(&e), Some(libc::ENOSPC));
        assert_eq!(vfs.read_file(&dir().join("b")).unwrap().unwrap(), [2; 300]);
        assert_eq!(io_errno(&f.set_len(701).unwrap_err()), Some(libc::ENOSPC));
        // Overwrites and shrinking need no space; exactly filling the disk is allowed.
        f.write_at(0, &[4; 600]).unwrap();
        g.write_at(250, &[3; 150]).unwrap();
        assert_eq!(vfs.free_bytes(dir()), Some(0));
        f.set_len(100).unwrap();
        assert_eq!(vfs.free_bytes(dir()), Some(500));
        vfs.remove(&dir().join("b")).unwrap();
        assert_eq!(vfs.free_bytes(dir()), Some(500), "b is still open");
        drop(g);
        assert_eq!(vfs.free_bytes(dir()), Some(900));
        sim.set_capacity(None);
        assert_eq!(vfs.free_bytes(dir()), None);
    }

    #[test]
    fn bit_flips_change_exactly_one_bit_of_what_is_read() {
        let (sim, vfs) = setup(10);
        let data: Vec<u8> = (0..=255).collect();
        let f = durable_file(&*vfs, "a", &data);
        durable_file(&*vfs, "other", &data);
        sim.flip_bits_randomly(1.0, Some("/a"));
        let mut positions = BTreeSet::new();
        for _ in 0..20 {
            let mut buf = [0u8; 100];
            f.read_at(50, &mut buf).unwrap();
            let diff: u32 = buf.iter().zip(&data[50..150]).map(|(a, b)| (a ^ b).count_ones()).sum();
            assert_eq!(diff, 1);
            positions.insert(buf.iter().zip(&data[50..150]).position(|(a, b)| a != b));
            let whole = vfs.read_file(&dir().join("a")).unwrap().unwrap();
            assert_eq!(whole.iter().zip(&data).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>(), 1);
        }
        assert!(positions.len() > 5);
        assert_eq!(vfs.read_file(&dir().join("other")).unwrap().unwrap(), data);
        sim.clear_faults();
        assert_eq!(vfs.read_file(&dir().join("a")).unwrap().unwrap(), data, "stored bytes unchanged");
    }

    #[test]
    fn corrupt_damages_stored_bytes() {
        let (sim, vfs) = setup(11);
        let p = dir().join("a");
        durable_file(&*vfs, "a", &[0; 8]);
        sim.corrupt(&p, 3, 0x10);
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), [0, 0, 0, 0x10, 0, 0, 0, 0]);
        sim.crash_clean();
        assert_eq!(vfs.read_file(&p).unwrap().unwrap(), [0, 0, 0, 0x10, 0, 0, 0, 0]);
    }

    #[test]
    fn direct_io_writes_must_be_whole_aligned_pages() {
        let (sim, vfs) = setup(12);
        let f = vfs.open(&dir().join("a"), OpenMode::CreateNew, true).unwrap();
        assert!(f.direct_io());
        let page = vec![1u8; PAGE as usize];
        f.write_at(PAGE, &page).unwrap();
        f.write_at(0, &[]).unwrap();
        assert!(matches!(f.write_at(1, &page), Err(Error::InvalidArgument(_))));
        assert!(matches!(f.write_at(0, &page[1..]), Err(Error::InvalidArgument(_))));
        assert_eq!(f.len().unwrap(), 2 * PAGE);
        let mut buf = [0u8; 7];
        f.read_at(PAGE - 3, &mut buf).unwrap();
        assert_eq!(buf, [0, 0, 0, 1, 1, 1, 1]);
        assert!(!vfs.open(&dir().join("b"), OpenMode::CreateNew, false).unwrap().direct_io());
        assert_eq!(sim.stats().failed_writes, 2);
    }

    #[test]
    fn locks_are_exclusive_per_path_until_dropped() {
        let (sim, vfs) = setup(13);
        let a = vfs.lock(&dir().join("LOCK")).unwrap();
        assert!(matches!(vfs.lock(&dir().join("LOCK")), Err(Error::Locked(d)) if d == dir()));
        // Another clone of the Arc shares the lock table.
        let other: Arc<dyn Vfs> = sim.clone();
        assert!(other.lock(&dir().join("LOCK")).is_err());
        let b = other.lock(&dir().join("LOCK2")).unwrap();
        assert!(vfs.list(dir()).unwrap().contains(&"LOCK".to_string()), "lock creates the file");
        drop(a);
        let _a = vfs.lock(&dir().join("LOCK")).unwrap();
        drop(b);
        drop(sim);
        drop(other);
        drop(vfs); // a guard may outlive the file system
    }
}
