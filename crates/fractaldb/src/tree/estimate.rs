//! Estimating how many keys lie in a range without reading the range.
//!
//! Two descents, one to the key range's low bound and one to its high
//! bound, read one node per level each (a leaf's header and the one
//! basement holding the bound), as a point read does. Where the two paths
//! take the same child the keys are in that child; at the first node where
//! they part, the children strictly between them are counted whole, and
//! below it each path counts the children on the range's side of its
//! bound. A whole basement counts its entries when it is in memory, else
//! the average of the basements read; a whole subtree of height `h`
//! counts `W(h)`: the average leaf's keys times the average number of
//! children of the nodes read at each level above the leaves.
//!
//! So a range within one basement is counted exactly, a range within one
//! leaf in memory too, and a wide range is off by how much the subtrees
//! it covers differ from the ones on its edges. What is counted is what
//! the leaves hold: messages still in buffers are not (the cleaner's
//! drain brings them down once writes pause), and an entry counts once
//! whatever versions it keeps, deleted or not yet committed ones included.
//! The two descents are not one atomic step: a split or merge between
//! them shows as paths that disagree about a node both read, and the
//! descents are tried again.
//!
//! Bytes ([`RangeEstimate::bytes`]) are the keys times the average packed
//! entry (key, leaf entry and their two length prefixes, uncompressed) of
//! the basements in memory on the two leaves: what reading the range
//! decodes, before the codec's compression.

use std::cmp::Ordering;
use std::sync::Arc;

use super::node::Node;
use super::Tree;
use crate::cache::Entry;
use crate::error::Result;
use crate::file::BlockNum;

/// Descents to try again when a split or merge moved the nodes between
/// the two (the paths then disagree about a node both read).
const RETRIES: usize = 4;

/// About how much of a dictionary lies in a key range (see the module
/// comment): `rows` entries taking `bytes` bytes in the leaves, uncompressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeEstimate {
    pub rows: u64,
    pub bytes: u64,
}

/// What one descent saw at one level.
struct Level {
    bn: BlockNum,
    height: u32,
    /// The child (or basement) the bound falls in.
    idx: usize,
    n_parts: usize,
    /// Leaves: each basement's entry count, `None` when not in memory.
    lens: Vec<Option<usize>>,
    /// Leaves: entries of basement `idx` below the bound.
    at: usize,
    /// Leaves: packed bytes of the basements in memory, and their entries.
    bytes: (usize, usize),
}

#[derive(Clone, Copy)]
enum Bound<'k> {
    /// The first key `>= k` (`None`: the first key).
    Lo(Option<&'k [u8]>),
    /// The last key `< k` (`None`: the last key).
    Hi(Option<&'k [u8]>),
}

impl Tree {
    /// About how many keys lie in `[lo, hi)` (`None`: unbounded); see the
    /// module comment for what is exact and what is averaged.
    pub(crate) fn estimate_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
        Ok(self.estimate_range_size(lo, hi)?.rows)
    }

    /// About how many keys, and how many bytes of entries, lie in `[lo, hi)`.
    pub(crate) fn estimate_range_size(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<RangeEstimate> {
        if let (Some(l), Some(h)) = (lo, hi) {
            if (self.cmp)(l, h) != Ordering::Less {
                return Ok(RangeEstimate::default());
            }
        }
        self.guarded_read(|| {
            for _ in 0..RETRIES {
                let p = self.descend_to(Bound::Lo(lo))?;
                let q = self.descend_to(Bound::Hi(hi))?;
                if let Some(rows) = combine(&p, &q) {
                    return Ok(RangeEstimate {
                        rows,
                        bytes: (rows as f64 * entry_bytes(&p, &q)).round() as u64,
                    });
                }
            }
            Ok(RangeEstimate::default())
        })
    }

    fn pick(&self, node: &Node, b: Bound) -> usize {
        match b {
            Bound::Lo(None) => 0,
            Bound::Lo(Some(k)) => node.part_for(k, self.cmp),
            Bound::Hi(None) => node.n_parts() - 1,
            Bound::Hi(Some(k)) => node.pivots.partition_point(|p| (self.cmp)(p, k) == Ordering::Less),
        }
    }

    /// The path from the root to the basement holding bound `b`, read
    /// hand over hand under shared locks.
    fn descend_to(&self, b: Bound) -> Result<Vec<Level>> {
        self.check_open()?;
        let gate = &self.ctx.gate;
        let mut pass = Some(gate.enter());
        let mut held: Vec<Arc<Entry>> = Vec::new();
        'restart: loop {
            let mut path = Vec::new();
            let mut entry = self.pin(self.root_bn())?;
            let mut guard = entry.node.read_arc();
            loop {
                let idx = self.pick(&guard, b);
                let mut level = Level {
                    bn: entry.bn,
                    height: guard.height,
                    idx,
                    n_parts: guard.n_parts(),
                    lens: Vec::new(),
                    at: 0,
                    bytes: (0, 0),
                };
                if guard.is_leaf() {
                    let Some(base) = &guard.basements()[idx] else {
                        drop(guard);
                        gate.outside(&mut pass, || self.fetch_part(&entry, idx))?;
                        held.push(entry);
                        continue 'restart;
                    };
                    level.at = match b {
                        Bound::Lo(None) => 0,
                        Bound::Hi(None) => base.len(),
                        Bound::Lo(Some(k)) | Bound::Hi(Some(k)) => {
                            base.search(k, self.cmp).unwrap_or_else(|i| i)
                        }
                    };
                    level.lens = guard.basements().iter().map(|b| b.as_ref().map(|b| b.len())).collect();
                    level.bytes = guard
                        .basements()
                        .iter()
                        .flatten()
                        .fold((0, 0), |(b, n), base| (b + base.packed_bytes(), n + base.len()));
                    path.push(level);
                    return Ok(path);
                }
                path.push(level);
                let child_bn = guard.children()[idx].bn;
                let Some(next) = self.ctx.cache.get(self.dict, child_bn) else {
                    drop(guard);
                    held.extend(gate.outside(&mut pass, || self.try_pin(child_bn))?);
                    continue 'restart;
                };
                let next_guard = next.node.read_arc();
                guard = next_guard;
                entry = next;
            }
        }
    }
}

/// The average packed entry of the basements in memory on the two leaves
/// (0 when they hold none).
fn entry_bytes(p: &[Level], q: &[Level]) -> f64 {
    let (bytes, n) =
        p.last().into_iter().chain(q.last()).fold((0, 0), |(b, n), l| (b + l.bytes.0, n + l.bytes.1));
    if n == 0 {
        0.0
    } else {
        bytes as f64 / n as f64
    }
}

/// The estimate from the low bound's path `p` and the high bound's `q`.
fn combine(p: &[Level], q: &[Level]) -> Option<u64> {
    let (Some(pl), Some(ql)) = (p.last(), q.last()) else { return Some(0) };
    // The average basement among those in memory on the two leaves.
    let known: Vec<usize> = pl.lens.iter().chain(&ql.lens).flatten().copied().collect();
    let basement =
        if known.is_empty() { 0.0 } else { known.iter().sum::<usize>() as f64 / known.len() as f64 };
    let leaf_keys = |l: &Level| -> f64 { l.lens.iter().map(|n| n.map_or(basement, |n| n as f64)).sum() };
    let basements = |l: &Level, r: std::ops::Range<usize>| -> f64 {
        l.lens.get(r).unwrap_or(&[]).iter().map(|n| n.map_or(basement, |n| n as f64)).sum()
    };
    // W(h): keys under a subtree of height h.
    let top = p.first().map_or(0, |l| l.height) as usize;
    let mut w = vec![(leaf_keys(pl) + leaf_keys(ql)) / 2.0; top + 1];
    for h in 1..=top {
        let fan: Vec<f64> =
            p.iter().chain(q).filter(|l| l.height as usize == h).map(|l| l.n_parts as f64).collect();
        let avg = if fan.is_empty() { 1.0 } else { fan.iter().sum::<f64>() / fan.len() as f64 };
        w[h] = w[h - 1] * avg;
    }
    let whole = |height: u32| -> f64 { w.get(height as usize - 1).copied().unwrap_or(0.0) };
    // The first level where the paths part (the same node, different children).
    let Some(d) = p.iter().zip(q).position(|(a, b)| a.bn != b.bn || a.idx != b.idx) else {
        // The same basement: exact.
        return Some(ql.at.saturating_sub(pl.at) as u64);
    };
    let (a, b) = (&p[d], &q[d]);
    if a.bn != b.bn || a.height != b.height {
        return None;
    }
    if b.idx < a.idx {
        // The range holds no key (`hi` below the basement `lo` is in).
        return Some(0);
    }
    let rest = |l: &Level| l.lens.get(l.idx).copied().flatten().unwrap_or(0).saturating_sub(l.at) as f64;
    if a.height == 0 {
        return Some((basements(a, a.idx + 1..b.idx) + rest(a) + b.at as f64).round() as u64);
    }
    let mut n = (b.idx - a.idx - 1) as f64 * whole(a.height);
    for l in &p[d + 1..] {
        n += if l.height == 0 {
            basements(l, l.idx + 1..l.n_parts) + rest(l)
        } else {
            (l.n_parts - l.idx - 1) as f64 * whole(l.height)
        };
    }
    for l in &q[d + 1..] {
        n +=
            if l.height == 0 { basements(l, 0..l.idx) + l.at as f64 } else { l.idx as f64 * whole(l.height) };
    }
    Some(n.round() as u64)
}
