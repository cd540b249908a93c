//! Positional file I/O, optionally with O_DIRECT.

use std::alloc::{self, Layout};
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// The unit of alignment: O_DIRECT wants offsets, lengths and buffer addresses
/// aligned to the device's logical block size, and 4096 covers every common device.
pub(crate) const PAGE: u64 = 4096;

/// Rounds `n` up to a whole number of pages.
pub(crate) fn page_round(n: u64) -> u64 {
    n.div_ceil(PAGE) * PAGE
}

/// A zeroed heap buffer whose address and length are multiples of [`PAGE`]: the
/// only kind of buffer the kernel accepts for O_DIRECT transfers.
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` is rounded up to whole pages, at least one.
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let len = page_round(len.max(1) as u64) as usize;
        let layout = Layout::from_size_align(len, PAGE as usize).expect("buffer size overflows");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    fn layout(&self) -> Layout {
        Layout::from_size_align(self.len, PAGE as usize).expect("checked at allocation")
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points to len initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in zeroed() with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout()) }
    }
}

/// One open data file: the single place every file-system call of the file layer
/// goes through, so alignment for O_DIRECT (and, later, fault injection) lives in
/// one spot. All I/O is positional, so any number of threads can share it.
pub(crate) struct DataFile {
    file: File,
    path: PathBuf,
    direct: bool,
}

impl DataFile {
    /// Opens `path` read-write; with `create` the file must not exist yet. With
    /// `direct` it is then reopened with O_DIRECT, keeping the buffered handle if the
    /// file system refuses (EINVAL). The buffered open comes first because a refused
    /// O_DIRECT create can leave the file behind, which would make a retry fail.
    pub(crate) fn open(path: &Path, create: bool, direct: bool) -> Result<DataFile> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create_new(create);
        let file = opts.open(path).map_err(|e| Error::io(path, if create { "create" } else { "open" }, e))?;
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

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn direct_io(&self) -> bool {
        self.direct
    }

    /// Fills `buf` from offset `off` (any offset and length). If the file ends first
    /// the error satisfies [`is_truncation`], so callers can report it as damage to
    /// whatever they were reading.
    pub(crate) fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        if !self.direct {
            return self.pread(off, buf, buf.len());
        }
        let start = off - off % PAGE;
        let skip = (off - start) as usize;
        let mut tmp = AlignedBuf::zeroed(skip + buf.len());
        self.pread(start, &mut tmp, skip + buf.len())?;
        buf.copy_from_slice(&tmp[skip..skip + buf.len()]);
        Ok(())
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

    /// Writes `data` at the page-aligned `off` and zero-fills the rest of its last
    /// page: files always hold whole pages, which O_DIRECT requires and which the
    /// allocator has reserved for the caller anyway.
    pub(crate) fn write_at(&self, off: u64, data: &[u8]) -> Result<()> {
        assert_eq!(off % PAGE, 0, "unaligned write at {off}");
        let aligned = (data.len() as u64).is_multiple_of(PAGE) && (data.as_ptr() as u64).is_multiple_of(PAGE);
        let res = if aligned && !data.is_empty() {
            self.file.write_all_at(data, off)
        } else {
            let mut buf = AlignedBuf::zeroed(data.len());
            buf[..data.len()].copy_from_slice(data);
            self.file.write_all_at(&buf, off)
        };
        res.map_err(|e| Error::io(&self.path, "write", e))
    }

    /// fdatasync: makes every completed write durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, "fdatasync", e))
    }

    /// Makes the file's directory entry durable (needed once, after creating it).
    pub(crate) fn sync_dir(&self) -> Result<()> {
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, "fsync directory", e))
    }

    pub(crate) fn len(&self) -> Result<u64> {
        Ok(self.file.metadata().map_err(|e| Error::io(&self.path, "stat", e))?.len())
    }
}

/// True if `e` is a read that ran past the end of the file.
pub(crate) fn is_truncation(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof)
}

fn open_direct(path: &Path) -> io::Result<File> {
    #[cfg(test)]
    if tests::REFUSE_O_DIRECT.with(|r| r.get()) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Makes this thread's O_DIRECT opens fail as on a file system without it.
        pub(crate) static REFUSE_O_DIRECT: Cell<bool> = const { Cell::new(false) };
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// Writes three pages of a pattern, then reads awkward ranges back.
    fn check_unaligned_reads(f: &DataFile) {
        let data = pattern(3 * PAGE as usize - 100);
        f.write_at(0, &data).unwrap();
        assert_eq!(f.len().unwrap(), 3 * PAGE, "last page zero-filled");
        for (off, len) in [(0, 1), (1, 4095), (4095, 2), (5000, 7000), (0, data.len()), (12000, 188)] {
            let mut buf = vec![0xAA; len];
            f.read_at(off as u64, &mut buf).unwrap();
            let want: Vec<u8> = (off..off + len).map(|i| data.get(i).copied().unwrap_or(0)).collect();
            assert_eq!(buf, want, "range {off}+{len}");
        }
        let mut buf = vec![0; 10];
        assert!(is_truncation(&f.read_at(3 * PAGE - 5, &mut buf).unwrap_err()), "read across EOF");
        assert!(is_truncation(&f.read_at(10 * PAGE, &mut buf).unwrap_err()), "read past EOF");
    }

    #[test]
    fn aligned_buf_is_page_aligned_zeroed_and_whole_pages() {
        for n in [0, 1, 4096, 4097] {
            let b = AlignedBuf::zeroed(n);
            assert_eq!(b.as_ptr() as u64 % PAGE, 0);
            assert_eq!(b.len() as u64, page_round(n.max(1) as u64));
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn reads_any_range_with_and_without_o_direct_on_disk_and_tmpfs() {
        // /tmp is on ext4 here; tmpfs accepts O_DIRECT since Linux 6.6 and refuses it before: all must work.
        for (dir, direct) in [("/tmp", true), ("/tmp", false), ("/dev/shm", true)] {
            let Ok(d) = tempfile::tempdir_in(dir) else { continue };
            let f = DataFile::open(&d.path().join("f"), true, direct).unwrap();
            assert!(direct || !f.direct_io());
            check_unaligned_reads(&f);
        }
    }

    #[test]
    fn a_file_system_refusing_o_direct_falls_back_to_buffered_io() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        REFUSE_O_DIRECT.with(|r| r.set(true));
        let f = DataFile::open(&dir.path().join("f"), true, true).unwrap();
        REFUSE_O_DIRECT.with(|r| r.set(false));
        assert!(!f.direct_io());
        check_unaligned_reads(&f);
    }

    #[test]
    fn a_file_cut_mid_page_reads_as_truncated_up_to_its_end() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let path = dir.path().join("f");
        let f = DataFile::open(&path, true, true).unwrap();
        f.write_at(0, &pattern(2 * PAGE as usize)).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(PAGE + 100).unwrap();
        let mut buf = vec![0; 100];
        f.read_at(PAGE, &mut buf).unwrap();
        assert_eq!(buf, pattern(2 * PAGE as usize)[PAGE as usize..][..100]);
        assert!(is_truncation(&f.read_at(PAGE + 50, &mut buf).unwrap_err()));
    }
}
