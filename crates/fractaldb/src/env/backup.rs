//! Hot backup: a copy of a running environment, consistent at one moment,
//! taken while writers go on (`Env::backup`).
//!
//! What the copy is: every dictionary file as of the last durable checkpoint
//! C (its header, its translation table and the blocks that table names),
//! the catalog, `log.trim`, and the log from its oldest file up to a moment
//! M: the last record durable when the backup cut the log. Opening the copy
//! is an ordinary recovery: each dictionary replays the log from C's begin
//! up to M, and transactions with no commit by M are rolled back. So the
//! copy holds exactly the transactions committed in the log by M, which
//! includes every commit acknowledged before M (a commit is acknowledged
//! only once its record is durable).
//!
//! Why the files can be copied while they change:
//! - No checkpoint runs during a backup (it holds `Inner::checkpointing`;
//!   the background checkpointer and the cleaners skip their checkpoints
//!   meanwhile, `Env::checkpoint` and close wait). An extent the last durable
//!   checkpoint names is reused only after the next checkpoint's header is
//!   durable (`file/blockfile.rs`), so C's blocks, table and header slot are
//!   not written while they are copied; whatever else is written into a file
//!   meanwhile (evictions, spills) goes to other extents, which C's table
//!   does not name, so the copy's torn or stale bytes there are never read.
//!   The other header slot holds an older checkpoint, and opening takes the
//!   newest valid one: C.
//! - No log file is deleted (trims happen only in checkpoints and close),
//!   and log files are only appended to; the newest one is copied up to the
//!   byte length `Log::backup_point` gives, a record boundary with every
//!   record before it durable.
//! - Catalog changes (create, drop, rename) wait for the backup
//!   (`Inner::ddl`): the copied catalog names exactly the dictionaries whose
//!   files are copied, and the log up to M has no write to a dictionary it
//!   does not name.
//!
//! Writers never wait for the backup: it takes no lock they take.
//!
//! An unfinished copy is told by its marker: `BACKUP-INCOMPLETE` is made
//! durable in the destination before anything else is copied and removed
//! only after every copied file and the folder are fsynced, and `Env::open`
//! refuses a folder that holds it. A crash or error during a backup leaves
//! the source untouched (the backup only reads it) and the destination
//! marked, or, if the crash came before the marker was durable, empty.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Env;
use crate::catalog::{dict_file, parse_dict_file};
use crate::error::{Error, Result};
use crate::file::{OpenMode, Vfs, VfsFile};
use crate::log::{file_name, parse_file_name, TRIM_FILE};

/// The file that marks a folder as a backup still being written (or one
/// that failed): `Env::open` refuses such a folder.
pub const BACKUP_INCOMPLETE_FILE: &str = "BACKUP-INCOMPLETE";

/// Bytes copied per read and write.
const CHUNK: usize = 1 << 20;

/// How far a backup has come, given to its progress callback after every
/// chunk it copies.
#[derive(Debug, Clone, Copy)]
pub struct BackupProgress<'a> {
    /// The file being copied (its name in the environment's folder).
    pub file: &'a str,
    /// Bytes copied so far, all files.
    pub bytes_done: u64,
    /// Bytes the backup expects to copy (the log's part is added once the
    /// log is cut, after the dictionary files).
    pub bytes_total: u64,
}

/// What a finished backup copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    /// The moment: the last log record in the copy. The copy holds every
    /// transaction committed at or before it and nothing after.
    pub lsn: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Files written in the destination.
    pub files: usize,
    /// Dictionaries in the copy.
    pub dictionaries: usize,
}

/// Whether `name` is one of the engine's own files in an environment's
/// folder (see ARCHITECTURE.md, "Folder of an environment"): what a backup
/// copies itself, or never copies (the lock, scratch and temporary files).
/// Anything else in the folder belongs to the layers above.
pub fn is_env_file(name: &str) -> bool {
    matches!(name, "LOCK" | "catalog" | "catalog.tmp" | BACKUP_INCOMPLETE_FILE)
        || name.strip_prefix(TRIM_FILE).is_some_and(|rest| rest.is_empty() || rest == ".tmp")
        || parse_dict_file(name).is_some()
        || parse_file_name(name.strip_suffix(".tmp").unwrap_or(name)).is_some()
        || name
            .strip_prefix("txn-")
            .and_then(|r| r.strip_suffix(".undo"))
            .is_some_and(|id| id.parse::<u64>().is_ok())
}

/// Refuses a folder that holds an unfinished backup (`Env::open`).
pub(crate) fn refuse_incomplete(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    if vfs.read_file(&dir.join(BACKUP_INCOMPLETE_FILE))?.is_some() {
        return Err(Error::corrupt(
            dir,
            None,
            format!(
                "the folder holds an unfinished backup ({BACKUP_INCOMPLETE_FILE} is present): the backup \
                 failed or was interrupted; take a new one"
            ),
        ));
    }
    Ok(())
}

struct Copier<'a> {
    vfs: &'a dyn Vfs,
    dest: &'a Path,
    progress: &'a mut dyn FnMut(&BackupProgress) -> Result<()>,
    done: u64,
    total: u64,
    files: usize,
}

impl Copier<'_> {
    /// Copies the first `len` bytes of `src` (all of it if None) to the
    /// destination folder under the same name, and fsyncs the copy.
    fn copy(&mut self, src: &Path, len: Option<u64>) -> Result<()> {
        let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let to = self.dest.join(name);
        self.copy_to(src, &to, len)
    }

    /// Copies the first `len` bytes of `src` (all of it if None) to `to`,
    /// and fsyncs the copy.
    fn copy_to(&mut self, src: &Path, to: &Path, len: Option<u64>) -> Result<()> {
        let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
        let from: Arc<dyn VfsFile> = self.vfs.open(src, OpenMode::Existing, false)?;
        let len = match len {
            Some(l) => l,
            None => from.len()?,
        };
        // A dictionary file written back to since the total was measured
        // is longer now: the total grows with it, so `bytes_done` never
        // passes `bytes_total`.
        self.total = self.total.max(self.done + len);
        let to = self.vfs.open(to, OpenMode::CreateNew, false)?;
        let mut buf = vec![0u8; CHUNK.min(len as usize)];
        let mut off = 0u64;
        while off < len {
            let n = (len - off).min(CHUNK as u64) as usize;
            from.read_at(off, &mut buf[..n])?;
            to.write_at(off, &buf[..n])?;
            off += n as u64;
            self.done += n as u64;
            debug_assert!(self.done <= self.total, "{} bytes copied of {}", self.done, self.total);
            (self.progress)(&BackupProgress { file: &name, bytes_done: self.done, bytes_total: self.total })?;
        }
        to.sync()?;
        self.files += 1;
        Ok(())
    }

    /// Copies the log files up to the moment `Log::backup_point` gives, which it returns.
    fn copy_log(&mut self, log: &crate::log::Log, src_dir: &Path) -> Result<crate::log::BackupPoint> {
        let point = log.backup_point()?;
        let last = point.first_lsns.len().saturating_sub(1);
        let mut lens = Vec::with_capacity(point.first_lsns.len());
        for (i, &first) in point.first_lsns.iter().enumerate() {
            let len = match i == last {
                true => point.current_len,
                false => self.vfs.open(&src_dir.join(file_name(first)), OpenMode::Existing, false)?.len()?,
            };
            lens.push(len);
        }
        self.total += lens.iter().sum::<u64>();
        for (&first, &len) in point.first_lsns.iter().zip(&lens) {
            self.copy(&src_dir.join(file_name(first)), Some(len))?;
        }
        Ok(point)
    }

    /// Copies the `extra` (source, destination) files, then fsyncs their folders but the backup's own.
    fn copy_extra(&mut self, extra: &[(PathBuf, PathBuf)]) -> Result<()> {
        let (vfs, dest) = (self.vfs, self.dest);
        for (from, to) in extra {
            if to.parent() == Some(dest) && to.file_name().and_then(|n| n.to_str()).is_none_or(is_env_file) {
                return Err(Error::invalid(format!("{} is not a file a backup may add", to.display())));
            }
            self.total += vfs.open(from, OpenMode::Existing, false)?.len()?;
            self.copy_to(from, to, None)?;
        }
        let mut folders: Vec<&Path> = extra.iter().filter_map(|(_, to)| to.parent()).collect();
        folders.sort();
        folders.dedup();
        for f in folders.into_iter().filter(|&f| f != dest) {
            vfs.sync_dir(f)?;
        }
        Ok(())
    }

    /// Writes a small file whole and fsyncs it.
    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let f = self.vfs.open(&self.dest.join(name), OpenMode::CreateNew, false)?;
        f.write_at(0, bytes)?;
        f.sync()?;
        self.done += bytes.len() as u64;
        self.files += 1;
        Ok(())
    }
}

/// Creates the backup folder `dest` if missing, checks it is empty and makes the marker durable in it.
fn start_backup_folder(vfs: &dyn Vfs, dest: &Path) -> Result<()> {
    vfs.create_dir_all(dest)?;
    let mut present = vfs.list(dest)?;
    present.retain(|n| n != "." && n != "..");
    if !present.is_empty() {
        return Err(Error::invalid(format!(
            "the backup folder {} is not empty (it holds {})",
            dest.display(),
            present.len()
        )));
    }
    // The marker first, durably: from here on the folder cannot be
    // taken for a finished backup until it is removed.
    {
        let m = vfs.open(&dest.join(BACKUP_INCOMPLETE_FILE), OpenMode::CreateNew, false)?;
        m.write_at(0, b"a backup is being written to this folder, or failed\n")?;
        m.sync()?;
        vfs.sync_dir(dest)?;
    }
    Ok(())
}

impl Env {
    /// Copies the environment, while it runs, to the folder `dest` (created
    /// if missing; it must be empty), consistent at one moment: the copy
    /// opens as an ordinary environment holding exactly the transactions
    /// committed in the log at the returned `lsn`, so every one acknowledged
    /// before the backup returned. Writers go on meanwhile; checkpoints and
    /// catalog changes (create, drop, rename) wait for it. `progress` is
    /// called after every MiB copied; an error it returns stops the backup
    /// (the destination stays marked incomplete, see
    /// [`BACKUP_INCOMPLETE_FILE`]). `extra` lists files of the layers above
    /// (keys, settings) as (source, destination) paths, copied whole after
    /// the environment's files and before the copy is marked finished: a
    /// copy that lacks one of them is never taken for a finished backup.
    pub fn backup(
        &self,
        dest: &Path,
        extra: &[(PathBuf, PathBuf)],
        progress: &mut dyn FnMut(&BackupProgress) -> Result<()>,
    ) -> Result<BackupReport> {
        self.check_open()?;
        let inner = &self.inner;
        let vfs = &*inner.ctx.vfs;
        let Some(log) = inner.ctx.log.get() else {
            return Err(Error::invalid("no backup before recovery has finished"));
        };
        start_backup_folder(vfs, dest)?;
        // Order: ddl, then checkpointing (a checkpoint takes `open` but never
        // `ddl`; a catalog change never waits for a checkpoint).
        let _ddl = inner.ddl.lock();
        let _no_checkpoint = inner.checkpointing_now();
        let dicts: Vec<u64> = inner.open.lock().catalog.dicts.values().copied().collect();
        let catalog = vfs
            .read_file(&inner.path.join("catalog"))?
            .ok_or_else(|| Error::corrupt(&inner.path, None, "the catalog file is missing"))?;
        let mut total = catalog.len() as u64;
        for &id in &dicts {
            total += vfs.open(&dict_file(&inner.path, id), OpenMode::Existing, false)?.len()?;
        }
        let mut c = Copier { vfs, dest, progress, done: 0, total, files: 0 };
        c.write("catalog", &catalog)?;
        for &id in &dicts {
            c.copy(&dict_file(&inner.path, id), None)?;
        }
        if let Some(trim) = vfs.read_file(&inner.path.join(TRIM_FILE))? {
            c.write(TRIM_FILE, &trim)?;
        }
        // The moment: everything durable in the log now is in the copy.
        let point = c.copy_log(log, &inner.path)?;
        drop((_ddl, _no_checkpoint));
        c.copy_extra(extra)?;
        vfs.sync_dir(dest)?;
        vfs.remove(&dest.join(BACKUP_INCOMPLETE_FILE))?;
        vfs.sync_dir(dest)?;
        Ok(BackupReport { lsn: point.lsn, bytes: c.done, files: c.files, dictionaries: dicts.len() })
    }
}
