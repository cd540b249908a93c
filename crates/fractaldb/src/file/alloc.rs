//! Free-space management inside one data file.

use std::collections::BTreeMap;

use super::io::PAGE;

/// The free space of a file: page-aligned holes kept coalesced in a map by
/// offset, plus the end of the file. Allocation is first-fit (the lowest hole
/// that fits), which packs data towards the front of the file so it stays small;
/// only when no hole fits does the file grow.
///
/// Free space is also given back to the file system (`take_punchable`, then
/// `VfsFile::punch_hole`), so the disk space a file takes follows its live
/// bytes rather than its length: `unpunched` is the part of the free space
/// that may still hold disk blocks. Invariant (`check`): every unpunched
/// range lies inside a free range, except while `take_punchable` has taken
/// it out to punch.
#[derive(Debug)]
pub(crate) struct Allocator {
    /// offset -> length of each free range; no two ranges touch.
    free: BTreeMap<u64, u64>,
    /// offset -> length of the free ranges not yet punched; no two touch.
    unpunched: BTreeMap<u64, u64>,
    /// The end of the file: everything at or past it is unused.
    end: u64,
}

/// Adds `[off, off+len)`, which overlaps no range of `map`, merging it with
/// the ranges it touches.
fn insert_merged(map: &mut BTreeMap<u64, u64>, off: u64, len: u64) {
    let (mut start, mut size) = (off, len);
    if let Some((&p, &pl)) = map.range(..off).next_back() {
        debug_assert!(p + pl <= off, "double free of {off}");
        if p + pl == off {
            map.remove(&p);
            (start, size) = (p, size + pl);
        }
    }
    if let Some((&n, &nl)) = map.range(off..).next() {
        debug_assert!(off + len <= n, "double free of {off}");
        if n == off + len {
            map.remove(&n);
            size += nl;
        }
    }
    map.insert(start, size);
}

/// Removes `[off, off+len)` from `map`, cutting the ranges that overlap it.
fn remove_span(map: &mut BTreeMap<u64, u64>, off: u64, len: u64) {
    let end = off + len;
    let hit: Vec<(u64, u64)> =
        map.range(..end).rev().take_while(|(&o, &l)| o + l > off).map(|(&o, &l)| (o, l)).collect();
    for (o, l) in hit {
        map.remove(&o);
        if o < off {
            map.insert(o, off - o);
        }
        if o + l > end {
            map.insert(end, o + l - end);
        }
    }
}

impl Allocator {
    /// An allocator for a file whose first `end` bytes are all in use; callers
    /// [`free`](Self::free) the holes.
    pub(crate) fn new(end: u64) -> Allocator {
        debug_assert_eq!(end % PAGE, 0);
        Allocator { free: BTreeMap::new(), unpunched: BTreeMap::new(), end }
    }

    /// Hands out `len` bytes (a positive multiple of the page size).
    pub(crate) fn alloc(&mut self, len: u64) -> u64 {
        debug_assert!(len > 0 && len.is_multiple_of(PAGE), "bad extent length {len}");
        if let Some((&off, &flen)) = self.free.iter().find(|(_, &l)| l >= len) {
            self.free.remove(&off);
            if flen > len {
                self.free.insert(off + len, flen - len);
            }
            remove_span(&mut self.unpunched, off, len);
            return off;
        }
        // Nothing fits: grow the file, starting inside a free tail if there is one.
        let off = match self.free.last_key_value() {
            Some((&o, &l)) if o + l == self.end => {
                self.free.remove(&o);
                remove_span(&mut self.unpunched, o, l);
                o
            }
            _ => self.end,
        };
        self.end = off + len;
        off
    }

    /// Returns `[off, off+len)` to the free space, merging it with free
    /// neighbours; its disk blocks are still the file's until punched.
    pub(crate) fn free(&mut self, off: u64, len: u64) {
        debug_assert!(
            off.is_multiple_of(PAGE) && len.is_multiple_of(PAGE) && len > 0 && off + len <= self.end
        );
        insert_merged(&mut self.free, off, len);
        insert_merged(&mut self.unpunched, off, len);
    }

    /// Takes the unpunched free runs of at least `min_len` bytes out of the
    /// free space, so nothing is allocated in them while the caller punches
    /// them; the caller gives each back with `give_back_punched`. Smaller
    /// runs are left: a hole of a few pages is soon reused.
    pub(crate) fn take_punchable(&mut self, min_len: u64) -> Vec<(u64, u64)> {
        let runs: Vec<(u64, u64)> =
            self.unpunched.iter().filter(|(_, &l)| l >= min_len).map(|(&o, &l)| (o, l)).collect();
        for &(off, len) in &runs {
            self.unpunched.remove(&off);
            remove_span(&mut self.free, off, len);
        }
        runs
    }

    /// Returns a run `take_punchable` took to the free space. `punched`:
    /// whether its disk blocks were given back (if not, it is punched later).
    pub(crate) fn give_back_punched(&mut self, off: u64, len: u64, punched: bool) {
        insert_merged(&mut self.free, off, len);
        if !punched {
            insert_merged(&mut self.unpunched, off, len);
        }
    }

    /// Free bytes whose disk blocks have been given back.
    pub(crate) fn punched_bytes(&self) -> u64 {
        self.free.values().sum::<u64>() - self.unpunched.values().sum::<u64>()
    }

    /// Checks the invariant between the free and the unpunched ranges.
    #[cfg(test)]
    fn check(&self) {
        for (&o, &l) in &self.unpunched {
            let inside = self.free.range(..=o).next_back().is_some_and(|(&f, &fl)| f + fl >= o + l);
            assert!(inside, "unpunched [{o}, +{l}) is not free: {:?}", self.free);
        }
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
    fn punchable_runs_are_taken_out_of_the_free_space_until_given_back() {
        let mut a = Allocator::new(40 * P);
        a.free(2 * P, P); // too small to punch
        a.free(10 * P, 8 * P);
        a.free(30 * P, 4 * P);
        a.check();
        let runs = a.take_punchable(4 * P);
        assert_eq!(runs, vec![(10 * P, 8 * P), (30 * P, 4 * P)]);
        // Meanwhile nothing is allocated inside them.
        assert_eq!(a.alloc(2 * P), 40 * P);
        assert_eq!(a.alloc(P), 2 * P);
        a.give_back_punched(10 * P, 8 * P, true);
        a.give_back_punched(30 * P, 4 * P, false);
        a.check();
        assert_eq!(a.punched_bytes(), 8 * P);
        assert_eq!(a.take_punchable(4 * P), vec![(30 * P, 4 * P)], "the failed punch is tried again");
        a.give_back_punched(30 * P, 4 * P, true);
        assert!(a.take_punchable(P).is_empty(), "nothing is punched twice");
        // Reusing part of a punched run makes that part the file's again;
        // freeing it makes it unpunched again.
        assert_eq!(a.alloc(3 * P), 10 * P);
        a.free(10 * P, 3 * P);
        a.check();
        assert_eq!(a.take_punchable(P), vec![(10 * P, 3 * P)]);
    }

    #[test]
    fn random_allocations_keep_unpunched_inside_free() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut a = Allocator::new(0);
        let mut used: Vec<(u64, u64)> = Vec::new();
        for _ in 0..5000 {
            match rng.gen_range(0..10) {
                0..=4 => {
                    let len = rng.gen_range(1..8) * P;
                    used.push((a.alloc(len), len));
                }
                5..=8 if !used.is_empty() => {
                    let (o, l) = used.swap_remove(rng.gen_range(0..used.len()));
                    a.free(o, l);
                }
                _ => {
                    for (o, l) in a.take_punchable(rng.gen_range(1..6) * P) {
                        a.give_back_punched(o, l, rng.gen_bool(0.8));
                    }
                }
            }
            a.check();
            for &(o, l) in &used {
                assert!(
                    !a.overlaps_free(o, l)
                        && a.unpunched.range(..o + l).next_back().is_none_or(|(&u, &ul)| u + ul <= o)
                );
            }
        }
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
