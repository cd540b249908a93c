//! Free-space management inside one data file.

use std::collections::BTreeMap;

use super::io::PAGE;

/// The free space of a file: page-aligned holes kept coalesced in a map by
/// offset, plus the end of the file. Allocation is first-fit (the lowest hole
/// that fits), which packs data towards the front of the file so it stays small;
/// only when no hole fits does the file grow.
#[derive(Debug)]
pub(crate) struct Allocator {
    /// offset -> length of each free range; no two ranges touch.
    free: BTreeMap<u64, u64>,
    /// The end of the file: everything at or past it is unused.
    end: u64,
}

impl Allocator {
    /// An allocator for a file whose first `end` bytes are all in use; callers
    /// [`free`](Self::free) the holes.
    pub(crate) fn new(end: u64) -> Allocator {
        debug_assert_eq!(end % PAGE, 0);
        Allocator { free: BTreeMap::new(), end }
    }

    /// Hands out `len` bytes (a positive multiple of the page size).
    pub(crate) fn alloc(&mut self, len: u64) -> u64 {
        debug_assert!(len > 0 && len.is_multiple_of(PAGE), "bad extent length {len}");
        if let Some((&off, &flen)) = self.free.iter().find(|(_, &l)| l >= len) {
            self.free.remove(&off);
            if flen > len {
                self.free.insert(off + len, flen - len);
            }
            return off;
        }
        // Nothing fits: grow the file, starting inside a free tail if there is one.
        let off = match self.free.last_key_value() {
            Some((&o, &l)) if o + l == self.end => {
                self.free.remove(&o);
                o
            }
            _ => self.end,
        };
        self.end = off + len;
        off
    }

    /// Returns `[off, off+len)` to the free space, merging it with free neighbours.
    pub(crate) fn free(&mut self, off: u64, len: u64) {
        debug_assert!(
            off.is_multiple_of(PAGE) && len.is_multiple_of(PAGE) && len > 0 && off + len <= self.end
        );
        let (mut start, mut size) = (off, len);
        if let Some((&p, &pl)) = self.free.range(..off).next_back() {
            debug_assert!(p + pl <= off, "double free of {off}");
            if p + pl == off {
                self.free.remove(&p);
                (start, size) = (p, size + pl);
            }
        }
        if let Some((&n, &nl)) = self.free.range(off..).next() {
            debug_assert!(off + len <= n, "double free of {off}");
            if n == off + len {
                self.free.remove(&n);
                size += nl;
            }
        }
        self.free.insert(start, size);
    }

    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// True if any byte of `[off, off+len)` is free.
    #[cfg(test)]
    fn overlaps_free(&self, off: u64, len: u64) -> bool {
        self.free.range(..off + len).next_back().is_some_and(|(&o, &l)| o + l > off)
    }

    #[cfg(test)]
    fn holes(&self) -> Vec<(u64, u64)> {
        self.free.iter().map(|(&o, &l)| (o, l)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const P: u64 = PAGE;

    #[test]
    fn grows_the_file_when_no_hole_fits() {
        let mut a = Allocator::new(2 * P);
        assert_eq!(a.alloc(P), 2 * P);
        assert_eq!(a.alloc(3 * P), 3 * P);
        assert_eq!(a.end(), 6 * P);
    }

    #[test]
    fn first_fit_takes_the_lowest_hole_that_fits_and_keeps_the_rest() {
        let mut a = Allocator::new(20 * P);
        a.free(2 * P, P); // too small
        a.free(5 * P, 4 * P); // first that fits 2 pages
        a.free(12 * P, 2 * P); // would fit exactly, but comes later
        assert_eq!(a.alloc(2 * P), 5 * P);
        assert_eq!(a.holes(), vec![(2 * P, P), (7 * P, 2 * P), (12 * P, 2 * P)]);
        assert_eq!(a.alloc(P), 2 * P);
        assert_eq!(a.alloc(5 * P), 20 * P, "no hole of five pages: grow");
    }

    #[test]
    fn freeing_coalesces_with_both_neighbours() {
        let mut a = Allocator::new(10 * P);
        a.free(2 * P, P);
        a.free(4 * P, P);
        a.free(3 * P, P);
        assert_eq!(a.holes(), vec![(2 * P, 3 * P)]);
        a.free(P, P);
        a.free(5 * P, 2 * P);
        assert_eq!(a.holes(), vec![(P, 6 * P)]);
        assert!(a.overlaps_free(6 * P, 2 * P) && !a.overlaps_free(7 * P, 3 * P) && !a.overlaps_free(0, P));
        assert_eq!(a.alloc(6 * P), P, "the merged hole serves one large extent");
    }

    #[test]
    fn a_free_tail_is_extended_instead_of_leaving_a_hole() {
        let mut a = Allocator::new(10 * P);
        a.free(8 * P, 2 * P);
        assert_eq!(a.alloc(3 * P), 8 * P);
        assert_eq!(a.end(), 11 * P);
        assert!(a.holes().is_empty());
    }
}
