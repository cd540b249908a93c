//! Page alignment for O_DIRECT: aligned buffers and whole-page writes.

use std::alloc::{self, Layout};
use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::vfs::VfsFile;
use crate::error::{Error, Result};

/// The unit of alignment: O_DIRECT wants offsets, lengths and buffer addresses
/// aligned to the device's logical block size, and 4096 covers every common device.
pub(crate) const PAGE: u64 = 4096;

/// Rounds `n` up to a whole number of pages.
pub(crate) fn page_round(n: u64) -> u64 {
    n.div_ceil(PAGE) * PAGE
}

/// What an O_DIRECT read of `len` bytes at `off` transfers: whole pages,
/// from the page holding `off` to the one holding its last byte. Returns
/// the aligned start and the byte count (`OsVfs::read_at` reads this;
/// `fractaldb check` reports it per basement).
pub(crate) fn direct_read_span(off: u64, len: u64) -> (u64, u64) {
    let start = off - off % PAGE;
    (start, page_round(off - start + len))
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

/// Writes `data` at the page-aligned `off` and zero-fills the rest of its last
/// page: block files always hold whole pages, which O_DIRECT requires and which
/// the allocator has reserved for the caller anyway.
pub(crate) fn write_pages(file: &dyn VfsFile, off: u64, data: &[u8]) -> Result<()> {
    assert_eq!(off % PAGE, 0, "unaligned write at {off}");
    let aligned = (data.len() as u64).is_multiple_of(PAGE) && (data.as_ptr() as u64).is_multiple_of(PAGE);
    if aligned && !data.is_empty() {
        return file.write_at(off, data);
    }
    let mut buf = AlignedBuf::zeroed(data.len());
    buf[..data.len()].copy_from_slice(data);
    file.write_at(off, &buf)
}

/// True if `e` is a read that ran past the end of the file.
pub(crate) fn is_truncation(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::file::vfs::{DataFile, OpenMode};
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
        write_pages(f, 0, &data).unwrap();
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
    fn a_direct_read_spans_whole_pages_from_the_first_byte_to_the_last() {
        assert_eq!(direct_read_span(0, 1), (0, PAGE));
        assert_eq!(direct_read_span(0, PAGE), (0, PAGE));
        assert_eq!(direct_read_span(1, PAGE), (0, 2 * PAGE));
        assert_eq!(direct_read_span(PAGE - 1, 2), (0, 2 * PAGE));
        assert_eq!(direct_read_span(3 * PAGE + 10, 100), (3 * PAGE, PAGE));
        assert_eq!(direct_read_span(5 * PAGE, 0), (5 * PAGE, 0));
    }

    #[test]
    fn reads_any_range_with_and_without_o_direct_on_disk_and_tmpfs() {
        // /tmp is on ext4 here; tmpfs accepts O_DIRECT since Linux 6.6 and refuses it before: all must work.
        for (dir, direct) in [("/tmp", true), ("/tmp", false), ("/dev/shm", true)] {
            let Ok(d) = tempfile::tempdir_in(dir) else { continue };
            let f = DataFile::open(&d.path().join("f"), OpenMode::CreateNew, direct).unwrap();
            assert!(direct || !f.direct_io());
            check_unaligned_reads(&f);
        }
    }

    #[test]
    fn a_file_system_refusing_o_direct_falls_back_to_buffered_io() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        REFUSE_O_DIRECT.with(|r| r.set(true));
        let f = DataFile::open(&dir.path().join("f"), OpenMode::CreateNew, true).unwrap();
        REFUSE_O_DIRECT.with(|r| r.set(false));
        assert!(!f.direct_io());
        check_unaligned_reads(&f);
    }

    #[test]
    fn a_file_cut_mid_page_reads_as_truncated_up_to_its_end() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let path = dir.path().join("f");
        let f = DataFile::open(&path, OpenMode::CreateNew, true).unwrap();
        write_pages(&f, 0, &pattern(2 * PAGE as usize)).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(PAGE + 100).unwrap();
        let mut buf = vec![0; 100];
        f.read_at(PAGE, &mut buf).unwrap();
        assert_eq!(buf, pattern(2 * PAGE as usize)[PAGE as usize..][..100]);
        assert!(is_truncation(&f.read_at(PAGE + 50, &mut buf).unwrap_err()));
    }
}
