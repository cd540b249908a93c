//! The I/O layer: every file-system call the engine makes goes through a
//! [`Vfs`], so tests can put a fault-injecting one underneath (see
//! `file/sim.rs`) and the real one ([`OsVfs`]) stays the only code that talks to
//! the operating system.
//!
//! The contract every implementation keeps, and the engine relies on:
//! - `VfsFile::write_at` may be torn by a crash at any byte; nothing is durable
//!   until `sync` returns Ok. A failed `sync` leaves the file's durable state
//!   unknown: the engine stops writing to it (it turns read-only).
//! - A created, renamed or removed name is durable only after `sync_dir` of its
//!   folder returns Ok.
//! - Reads return exactly the bytes asked for, or an error for which
//!   `io::is_truncation` holds when the file ends first.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::io::{direct_read_span, AlignedBuf, PAGE};
use crate::error::{Error, Result};

/// How long `lock` retries a folder lock held elsewhere before it reports
/// `Error::Locked` (see `OsVfs::lock`).
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_secs(3);

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create it; an error if it exists.
    CreateNew,
    /// Open it; an error if it does not exist.
    Existing,
    /// Open it, creating it empty if it does not exist.
    CreateOrOpen,
}

/// One open file. All I/O is positional, so threads share a file freely.
pub trait VfsFile: Send + Sync {
    fn path(&self) -> &Path;
    /// True if reads and writes bypass the page cache (O_DIRECT). Writes to
    /// such a file must start at a multiple of [`PAGE`] and be whole pages.
    fn direct_io(&self) -> bool;
    /// Fills `buf` from `off`. If the file ends first the error satisfies
    /// `io::is_truncation`.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()>;
    /// Writes all of `data` at `off`.
    fn write_at(&self, off: u64, data: &[u8]) -> Result<()>;
    /// fdatasync: every completed write to this file is durable once it returns Ok.
    fn sync(&self) -> Result<()>;
    fn len(&self) -> Result<u64>;
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Cuts or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> Result<()>;
    /// Gives the disk space of `[off, off+len)` back to the file system; the
    /// range then reads as zeros and the file keeps its length. Only for
    /// ranges nothing refers to: it is a hint about free space, and a file
    /// system that cannot do it (EOPNOTSUPP) is not an error.
    fn punch_hole(&self, off: u64, len: u64) -> Result<()>;
}

/// A file system: opening files and the operations on names.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Opens `path` read-write. With `direct`, bypasses the page cache if the
    /// file system allows it (see [`VfsFile::direct_io`]).
    fn open(&self, path: &Path, mode: OpenMode, direct: bool) -> Result<Arc<dyn VfsFile>>;
    /// The whole contents of a small file, or None if it does not exist.
    fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>>;
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    fn remove(&self, path: &Path) -> Result<()>;
    /// The names of the files in `dir`, in no particular order.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the names created, renamed and removed in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Bytes still free on the file system holding `dir` (for refusing writes
    /// before the disk is full); None if unknown.
    fn free_bytes(&self, dir: &Path) -> Option<u64>;
    /// Takes an exclusive lock on `path` (creating the file), held until the
    /// returned guard is dropped. `Error::Locked` if someone else holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn Send + Sync>>;
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsVfs;

impl OsVfs {
    /// The operating system's file system, as the engine holds it.
    pub fn shared() -> Arc<dyn Vfs> {
        Arc::new(OsVfs)
    }
}

impl Vfs for OsVfs {
    fn open(&self, path: &Path, mode: OpenMode, direct: bool) -> Result<Arc<dyn VfsFile>> {
        Ok(Arc::new(DataFile::open(path, mode, direct)?))
    }

    fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        match fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, "read", e)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io(from, "rename", e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(path, "remove", e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, "list folder", e))? {
            let entry = entry.map_err(|e| Error::io(dir, "list folder", e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create folder", e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, "fsync folder", e))
    }

    fn free_bytes(&self, dir: &Path) -> Option<u64> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs writes only into the struct we pass; c is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn Send + Sync>> {
        use std::os::unix::io::AsRawFd;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        // A lock held by this process's own descriptor can outlive its
        // close for a moment: a thread that forks (to run any child
        // process) copies every descriptor, and the copy, sharing the lock,
        // lives until the child's exec closes it (all ours are
        // close-on-exec). So a refusal is retried for a while before it is
        // reported, as InnoDB retries the lock on its system tablespace; a
        // folder really in use stays refused.
        let deadline = std::time::Instant::now() + LOCK_RETRY;
        loop {
            // SAFETY: flock on a file descriptor we own; no memory is involved.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return Err(Error::Locked(path.parent().unwrap_or(path).to_path_buf()));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // The lock lives as long as the descriptor.
        Ok(Box::new(file))
    }
}

/// An open file of the operating system, optionally with O_DIRECT.
pub(crate) struct DataFile {
    file: File,
    path: PathBuf,
    direct: bool,
}

impl DataFile {
    /// Opens `path` read-write. With `direct` it is then reopened with
    /// O_DIRECT, keeping the buffered handle if the file system refuses
    /// (EINVAL). The buffered open comes first because a refused O_DIRECT
    /// create can leave the file behind, which would make a retry fail.
    pub(crate) fn open(path: &Path, mode: OpenMode, direct: bool) -> Result<DataFile> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        let op = match mode {
            OpenMode::CreateNew => {
                opts.create_new(true);
                "create"
            }
            OpenMode::Existing => "open",
            OpenMode::CreateOrOpen => {
                opts.create(true);
                "open"
            }
        };
        let file = opts.open(path).map_err(|e| Error::io(path, op, e))?;
        let mut df = DataFile { file, path: path.to_path_buf(), direct: false };
        if direct {
            match open_direct(path) {
                Ok(f) => (df.file, df.direct) = (f, true),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
                Err(e) => return Err(Error::io(path, "open with O_DIRECT", e)),
            }
        }
        Ok(df)
    }

    /// Reads into `buf` until at least its first `need` bytes are filled.
    fn pread(&self, off: u64, buf: &mut [u8], need: usize) -> Result<()> {
        let mut done = 0;
        while done < need {
            match self.file.read_at(&mut buf[done..], off + done as u64) {
                // A short O_DIRECT read that is not page-sized can only stop at the end of file;
                // asking again at an unaligned offset would fail with EINVAL instead.
                Ok(n) if n == 0 || (self.direct && !(n as u64).is_multiple_of(PAGE) && done + n < need) => {
                    let msg = format!("file ends before byte {}", off + need as u64);
                    return Err(Error::io(
                        &self.path,
                        "read",
                        io::Error::new(io::ErrorKind::UnexpectedEof, msg),
                    ));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, "read", e)),
            }
        }
        Ok(())
    }
}

impl VfsFile for DataFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn direct_io(&self) -> bool {
        self.direct
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        if !self.direct {
            return self.pread(off, buf, buf.len());
        }
        let (start, span) = direct_read_span(off, buf.len() as u64);
        let skip = (off - start) as usize;
        let mut tmp = AlignedBuf::zeroed(span as usize);
        self.pread(start, &mut tmp, skip + buf.len())?;
        buf.copy_from_slice(&tmp[skip..skip + buf.len()]);
        Ok(())
    }

    fn write_at(&self, off: u64, data: &[u8]) -> Result<()> {
        let res = if !self.direct || data.is_empty() {
            self.file.write_all_at(data, off)
        } else {
            assert!(
                off.is_multiple_of(PAGE) && (data.len() as u64).is_multiple_of(PAGE),
                "O_DIRECT write of {} bytes at {off} is not whole pages",
                data.len()
            );
            if (data.as_ptr() as u64).is_multiple_of(PAGE) {
                self.file.write_all_at(data, off)
            } else {
                let mut buf = AlignedBuf::zeroed(data.len());
                buf.copy_from_slice(data);
                self.file.write_all_at(&buf, off)
            }
        };
        res.map_err(|e| Error::io(&self.path, "write", e))
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, "fdatasync", e))
    }

    fn len(&self) -> Result<u64> {
        Ok(self.file.metadata().map_err(|e| Error::io(&self.path, "stat", e))?.len())
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| Error::io(&self.path, "truncate", e))
    }

    fn punch_hole(&self, off: u64, len: u64) -> Result<()> {
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(off), libc::off_t::try_from(len)) else {
            return Err(Error::invalid(format!(
                "hole [{off}, +{len}) is past what the file system addresses"
            )));
        };
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: fallocate reads no memory of ours; the descriptor is open for writing.
        let r = unsafe { libc::fallocate(self.file.as_raw_fd(), mode, off, len) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => Ok(()),
            _ => Err(Error::io(&self.path, "punch hole (fallocate)", e)),
        }
    }
}

fn open_direct(path: &Path) -> io::Result<File> {
    #[cfg(test)]
    if super::io::tests::REFUSE_O_DIRECT.with(|r| r.get()) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path)
}
