//! `check`: walks a whole tree and verifies every invariant.
//!
//! - pivots ascend strictly and lie inside the node's key range;
//! - every child is one level below its parent;
//! - every buffered message lies inside its child's range, and is newer
//!   than every message below it on its path and than what its leaf has
//!   applied (so a flush never reorders a key's messages);
//! - every leaf's basements hold strictly ascending keys inside their range,
//!   and every leafentry decodes;
//! - every spill lies inside its child's range and is older than what is
//!   above it (buffer, later spills, ancestors), and newer than below;
//! - every clean node's block on disk passes its checksums and decodes;
//! - every block in the table is a node or spill of the tree (no leaks);
//! - no child has more than `MAX_SPILLS` spills or `SPILL_NODES` node sizes of
//!   spilled raw bytes.
//!
//! Locking: the walk holds this tree's `check_lock` exclusively, and no
//! lock of the environment. The invariants it checks span nodes (MSNs along
//! a path, spills against what is above and below them, every block in the
//! table reachable), so the tree must not change under the walk: every
//! writer of this tree waits for it (they take `check_lock` shared before
//! the gate and the checkpoint lock, so a writer waiting here holds nothing
//! another dictionary needs), and the cleaner, the drain and write-back
//! spills skip this tree while it is held. Writers and cleaners of other
//! dictionaries, checkpoints, evictions and the spill writer go on: the
//! walk may read the whole tree from disk, and holding the environment's
//! checkpoint lock for that long (as `check` once did) stalled every write
//! of every dictionary. What may still change under the walk, and why the
//! walk stays right:
//! - a checkpoint or eviction writes a dirty node and makes it clean: under
//!   the node's write lock, so the walk (holding the node's read lock) sees
//!   it dirty (nothing on disk to check) or clean at its current extent;
//! - the spill writer or a checkpoint writes a pending spill: `read_spill`
//!   finds it in memory or in its block (the block is set first);
//! - the block table gains no block number and loses none the tree uses,
//!   with one exception: a spill a merge took while it was being written
//!   gets its block and loses its number again just after (`pending.rs`);
//!   so a block the walk did not reach counts as leaked only if it stays in
//!   the table (`LEAK_RECHECKS`).
//!
//! Tests call it after every phase.

use std::cmp::Ordering;

use super::basement::Basement;
use super::leafentry;
use super::node::{Body, Child, Node};
use super::serialize::{decode_basement, decode_buffer};
use super::Tree;
use crate::error::{Error, Result};
use crate::file::BlockNum;

/// What a successful check counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CheckReport {
    pub height: u32,
    pub internal_nodes: u64,
    pub leaves: u64,
    pub leafentries: u64,
    /// Buffered messages, spilled ones included.
    pub buffered_messages: u64,
    /// Spill blocks (see `flush.rs`).
    pub spills: u64,
    /// Buffered writes with their transaction's commit folded in
    /// (`MsgBuffer::fold_commits`), spilled ones included.
    pub folded_commits: u64,
    /// Bytes of leaf blocks in the file, and their basements' bytes before
    /// compression. Only clean nodes have blocks: checkpoint first to
    /// count every node.
    pub leaf_bytes: u64,
    pub leaf_raw_bytes: u64,
    /// Bytes of internal nodes' blocks in the file, and their buffers'
    /// bytes before compression.
    pub internal_bytes: u64,
    pub internal_raw_bytes: u64,
    /// Bytes of spill blocks in the file, and before compression.
    pub spill_bytes: u64,
    pub spill_raw_bytes: u64,
    /// Basements of leaves with blocks, and their compressed bytes.
    pub basements: u64,
    pub basement_bytes: u64,
    /// Over the same basements, the sum of each one's raw bytes times the
    /// bytes a direct-I/O read of it takes (whole 4 KiB pages around it):
    /// see [`CheckReport::point_read_bytes`].
    pub basement_read_weighted: u64,
}

impl CheckReport {
    /// Adds `other`'s counts to these (the height becomes the larger):
    /// totals over several dictionaries.
    pub fn add(&mut self, other: &CheckReport) {
        self.height = self.height.max(other.height);
        self.internal_nodes += other.internal_nodes;
        self.leaves += other.leaves;
        self.leafentries += other.leafentries;
        self.buffered_messages += other.buffered_messages;
        self.spills += other.spills;
        self.folded_commits += other.folded_commits;
        self.leaf_bytes += other.leaf_bytes;
        self.leaf_raw_bytes += other.leaf_raw_bytes;
        self.internal_bytes += other.internal_bytes;
        self.internal_raw_bytes += other.internal_raw_bytes;
        self.spill_bytes += other.spill_bytes;
        self.spill_raw_bytes += other.spill_raw_bytes;
        self.basements += other.basements;
        self.basement_bytes += other.basement_bytes;
        self.basement_read_weighted += other.basement_read_weighted;
    }

    /// What a point read of an entry drawn at random (uniformly by bytes,
    /// which for rows of one size is by entry) reads from disk when its
    /// basement is not cached: its basement's compressed bytes widened to
    /// the 4 KiB pages a direct read takes. A get lands in a basement in
    /// proportion to its size, so this is the size-weighted mean, not
    /// `basement_bytes / basements`. None with no leaf blocks.
    pub fn point_read_bytes(&self) -> Option<f64> {
        (self.leaf_raw_bytes > 0).then(|| self.basement_read_weighted as f64 / self.leaf_raw_bytes as f64)
    }
}

/// How many times `check` looks again at a block it did not reach before
/// it calls it leaked (half yielding, half sleeping a millisecond: about
/// two seconds at most, spent only on a tree that does leak).
const LEAK_RECHECKS: u32 = 4000;

/// What a check walk has seen so far.
#[derive(Default)]
struct Walk {
    report: CheckReport,
    /// Every node and spill block reached from the root.
    blocks: Vec<BlockNum>,
}

impl Tree {
    pub(crate) fn check(&self) -> Result<CheckReport> {
        // This tree's lock only: see the module's comment.
        let _walk = self.check_lock.write();
        let r = self.check_walk();
        // A drop (or the environment's close) does not wait for the walk;
        // whatever the walk met after it, the answer is that.
        self.check_open()?;
        r
    }

    fn check_walk(&self) -> Result<CheckReport> {
        let mut walk = Walk::default();
        let root = self.root_bn();
        let height = self.check_node(root, None, None, None, u64::MAX, &mut walk)?;
        let Walk { mut report, blocks: mut reachable } = walk;
        report.height = height;
        // Every block in the table belongs to the tree: a node or a spill
        // that nothing refers to would stay allocated forever.
        reachable.sort_unstable();
        for bn in self.file.written_blocknums() {
            if reachable.binary_search(&bn).is_err() && self.stays_in_table(bn) {
                return Err(self.bad(bn, "block is in the table but not in the tree (leaked)".into()));
            }
        }
        // And every spill waiting to be written (`pending.rs`) that no merge
        // has taken is in the tree: else it would wait, and be charged to
        // the cache, forever. (No spill is made while the walk runs: only
        // flushes and write-back spills make them, and they wait for it.)
        for bn in self.pending.live() {
            if reachable.binary_search(&bn).is_err() {
                return Err(self.bad(bn, "spill waits to be written but is not in the tree (leaked)".into()));
            }
        }
        Ok(report)
    }

    /// Whether block `bn`, which the walk did not reach, stays in the block
    /// table. The one block that may be there only for a moment is a spill
    /// a merge took (before the walk) while a thread was writing it: that
    /// thread puts the block in the table, then frees the number
    /// (`Tree::write_claimed`), with no lock of ours held between. So look
    /// again a few times, yielding in between; a leaked block stays.
    fn stays_in_table(&self, bn: BlockNum) -> bool {
        for i in 0..LEAK_RECHECKS {
            if self.file.extent(bn).is_none() {
                return false;
            }
            if i < LEAK_RECHECKS / 2 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        true
    }

    fn bad(&self, bn: BlockNum, what: String) -> Error {
        Error::corrupt(self.path(), Some(bn), format!("check failed: {what}"))
    }

    /// Checks the subtree at `bn`, whose keys must lie in [lo, hi) and whose
    /// messages must all be older than `newer_than`. Returns its height.
    fn check_node(
        &self,
        bn: BlockNum,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        height: Option<u32>,
        newer_than: u64,
        walk: &mut Walk,
    ) -> Result<u32> {
        walk.blocks.push(bn);
        let e = self.pin(bn)?;
        let g = loop {
            self.fetch_all(&e)?;
            let g = e.node.read();
            if g.all_loaded() {
                break g;
            }
        };
        self.check_shape(bn, &g, lo, hi, height)?;
        if !g.dirty {
            self.check_on_disk(bn, &g, &mut walk.report)?;
        }
        match &g.body {
            Body::Leaf(basements) => {
                self.check_leaf(bn, &g, basements, (lo, hi), newer_than, &mut walk.report)?;
                Ok(0)
            }
            Body::Internal(children) => {
                walk.report.internal_nodes += 1;
                if g.height == 0 {
                    return Err(self.bad(bn, "internal node at height 0".into()));
                }
                let mut work = Vec::new();
                for (i, c) in children.iter().enumerate() {
                    let (clo, chi) = g.part_bounds(i, lo, hi);
                    let min_msn = self.check_child(bn, i, c, (clo, chi), newer_than, walk)?;
                    work.push((
                        c.bn,
                        clo.map(|x| x.to_vec()),
                        chi.map(|x| x.to_vec()),
                        newer_than.min(min_msn),
                    ));
                }
                let child_height = g.height - 1;
                let my_height = g.height;
                drop(g);
                drop(e);
                for (cbn, clo, chi, newer) in work {
                    self.check_node(cbn, clo.as_deref(), chi.as_deref(), Some(child_height), newer, walk)?;
                }
                Ok(my_height)
            }
        }
    }

    /// The node's height is the one its parent expects, and its pivots are
    /// one fewer than its parts, inside [lo, hi) (not equal to `lo`) and in
    /// order.
    fn check_shape(
        &self,
        bn: BlockNum,
        g: &Node,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        height: Option<u32>,
    ) -> Result<()> {
        let cmp = self.cmp;
        let in_range = |k: &[u8]| {
            lo.is_none_or(|l| cmp(l, k) != Ordering::Greater)
                && hi.is_none_or(|h| cmp(k, h) == Ordering::Less)
        };
        if let Some(h) = height {
            if g.height != h {
                return Err(self.bad(bn, format!("height {} under a parent expecting {h}", g.height)));
            }
        }
        if g.pivots.len() + 1 != g.n_parts() {
            return Err(self.bad(bn, format!("{} pivots for {} parts", g.pivots.len(), g.n_parts())));
        }
        for (i, p) in g.pivots.iter().enumerate() {
            if !in_range(p) || lo.is_some_and(|l| cmp(l, p) == Ordering::Equal) {
                return Err(self.bad(bn, format!("pivot {i} outside the node's range")));
            }
            if i > 0 && cmp(&g.pivots[i - 1], p) != Ordering::Less {
                return Err(self.bad(bn, format!("pivots {} and {i} out of order", i - 1)));
            }
        }
        Ok(())
    }

    /// A leaf: older than every message above it, each basement's entries
    /// inside its bounds, in order, and each leafentry well formed.
    fn check_leaf(
        &self,
        bn: BlockNum,
        g: &Node,
        basements: &[Option<Basement>],
        (lo, hi): (Option<&[u8]>, Option<&[u8]>),
        newer_than: u64,
        report: &mut CheckReport,
    ) -> Result<()> {
        let cmp = self.cmp;
        report.leaves += 1;
        if g.max_msn >= newer_than {
            return Err(self.bad(
                bn,
                format!("leaf applied MSN {} but an ancestor still holds MSN {newer_than}", g.max_msn),
            ));
        }
        for (i, b) in basements.iter().enumerate() {
            let b = b.as_ref().expect("all loaded");
            let (blo, bhi) = g.part_bounds(i, lo, hi);
            for j in 0..b.len() {
                let k = b.key(j);
                let inside = blo.is_none_or(|l| cmp(l, k) != Ordering::Greater)
                    && bhi.is_none_or(|h| cmp(k, h) == Ordering::Less);
                if !inside {
                    return Err(self.bad(bn, format!("basement {i} entry {j} outside its range")));
                }
                if j > 0 && cmp(b.key(j - 1), k) != Ordering::Less {
                    return Err(self.bad(bn, format!("basement {i} entries {} and {j} out of order", j - 1)));
                }
                leafentry::committed_value(b.leafentry(j)).map_err(|r| self.bad(bn, r))?;
            }
            report.leafentries += b.len() as u64;
        }
        Ok(())
    }

    /// Child `i` of internal node `bn`, bounds [clo, chi): its buffer's
    /// messages belong to it and are older than `newer_than`, and its spills
    /// stay within bounds (`check_spills`). Returns the oldest MSN of its
    /// buffer and spills (`u64::MAX` if none): what the child's own
    /// messages must be older than.
    fn check_child(
        &self,
        bn: BlockNum,
        i: usize,
        c: &Child,
        (clo, chi): (Option<&[u8]>, Option<&[u8]>),
        newer_than: u64,
        walk: &mut Walk,
    ) -> Result<u64> {
        let cmp = self.cmp;
        let report = &mut walk.report;
        for (k, msn) in c.buf.keys() {
            let inside = clo.is_none_or(|l| cmp(l, k) != Ordering::Greater)
                && chi.is_none_or(|h| cmp(k, h) == Ordering::Less);
            if !inside {
                return Err(self.bad(bn, format!("message MSN {msn} buffered for the wrong child {i}")));
            }
        }
        self.check_wide(bn, i, &c.buf, (clo, chi))?;
        let min_msn = c.buf.msn_range().map_or(u64::MAX, |(l, _)| l);
        if let Some((_, max)) = c.buf.msn_range() {
            if max >= newer_than {
                return Err(self.bad(
                    bn,
                    format!("buffer {i} holds MSN {max}, not older than its ancestors' {newer_than}"),
                ));
            }
        }
        report.buffered_messages += c.buf.len() as u64;
        report.folded_commits += c.buf.folded() as u64;
        // A flush spills only while the child's spills stay
        // within bounds (`Tree::spill_room`).
        if c.spills.len() > super::flush::MAX_SPILLS
            || c.spilled_bytes() > super::flush::SPILL_NODES * self.settings.node_size_bytes
        {
            return Err(self.bad(
                bn,
                format!(
                    "child {i} has {} spills of {} raw bytes, over the bounds",
                    c.spills.len(),
                    c.spilled_bytes()
                ),
            ));
        }
        self.check_spills(bn, i, c, (clo, chi), (newer_than, min_msn), walk)
    }

    /// The spills of child `i`, newest first: each holds the messages its
    /// entry counts, for the child, its filter (if any) lets every key of
    /// them through, and each is older than everything after it (`newer`:
    /// the ancestors' bound and the oldest MSN of the child's buffer).
    /// Returns the oldest MSN of the buffer and spills.
    fn check_spills(
        &self,
        bn: BlockNum,
        i: usize,
        c: &Child,
        (clo, chi): (Option<&[u8]>, Option<&[u8]>),
        (newer_than, mut min_msn): (u64, u64),
        walk: &mut Walk,
    ) -> Result<u64> {
        let cmp = self.cmp;
        let report = &mut walk.report;
        for (j, sp) in c.spills.iter().enumerate().rev() {
            walk.blocks.push(sp.bn);
            let buf = self.read_spill(sp.bn)?;
            if buf.len() != sp.count as usize {
                return Err(self.bad(
                    bn,
                    format!("spill {j} of child {i} holds {} messages, not {}", buf.len(), sp.count),
                ));
            }
            for (k, msn) in buf.keys() {
                let inside = clo.is_none_or(|l| cmp(l, k) != Ordering::Greater)
                    && chi.is_none_or(|h| cmp(k, h) == Ordering::Less);
                if !inside {
                    return Err(self.bad(bn, format!("message MSN {msn} spilled for the wrong child {i}")));
                }
                if !sp.may_contain(k) {
                    return Err(self.bad(bn, format!("spill {j}'s filter misses MSN {msn}'s key")));
                }
            }
            self.check_wide(bn, i, &buf, (clo, chi))?;
            if !sp.bloom.is_empty() && (!buf.broadcasts().is_empty() || !self.order.bytewise) {
                return Err(self.bad(bn, format!("spill {j} has a filter it may not have")));
            }
            if let Some((lo_msn, hi_msn)) = buf.msn_range() {
                if hi_msn >= newer_than.min(min_msn) {
                    return Err(self.bad(
                        bn,
                        format!("spill {j} of child {i} holds MSN {hi_msn}, not older than what is above it"),
                    ));
                }
                min_msn = lo_msn;
            }
            report.spills += 1;
            report.spill_raw_bytes += u64::from(sp.raw_len);
            report.spill_bytes += self.file.extent(sp.bn).map_or(0, |x| u64::from(x.len));
            report.buffered_messages += buf.len() as u64;
            report.folded_commits += buf.folded() as u64;
        }
        Ok(min_msn)
    }

    /// Every wide message buffered for child `i` (bounds [clo, chi)) can
    /// apply to one of its keys: a flush copies a range delete only into
    /// the children its range meets, and a child's range only grows while
    /// its buffer holds messages (a merge; a split empties it first).
    fn check_wide(
        &self,
        bn: BlockNum,
        i: usize,
        buf: &super::buffer::MsgBuffer,
        (clo, chi): (Option<&[u8]>, Option<&[u8]>),
    ) -> Result<()> {
        for (msn, b) in buf.broadcasts() {
            if !b.is_wide() {
                return Err(self.bad(bn, format!("message MSN {msn} kept as a wide message for child {i}")));
            }
            if !b.meets(clo, chi, self.cmp) {
                return Err(
                    self.bad(bn, format!("range delete MSN {msn} buffered for child {i}, which it misses"))
                );
            }
        }
        Ok(())
    }

    /// Re-reads a clean node's block and verifies every checksum.
    fn check_on_disk(&self, bn: BlockNum, node: &super::node::Node, report: &mut CheckReport) -> Result<()> {
        let Some(ext) = node.disk else { return Err(self.bad(bn, "clean node with no block".into())) };
        if self.file.extent(bn) != Some(ext) {
            return Err(self.bad(bn, "clean node's block is not the one in the block table".into()));
        }
        let bytes = self.file.read_range(bn, ext, 0, ext.len)?;
        let header = self.parse_header_for_check(bn, &bytes[..ext.header_len as usize], ext.len)?;
        let raw: u64 = header.parts.iter().map(|p| u64::from(p.raw_len)).sum();
        if header.height == 0 {
            report.leaf_bytes += u64::from(ext.len);
            report.leaf_raw_bytes += raw;
            for info in &header.parts {
                let (_, read) = crate::file::direct_read_span(
                    ext.offset + u64::from(info.offset),
                    u64::from(info.disk_len),
                );
                report.basements += 1;
                report.basement_bytes += u64::from(info.disk_len);
                report.basement_read_weighted += u64::from(info.raw_len) * read;
            }
        } else {
            report.internal_bytes += u64::from(ext.len);
            report.internal_raw_bytes += raw;
        }
        for info in &header.parts {
            let s = info.offset as usize;
            let part = &bytes[s..s + info.disk_len as usize];
            if header.height == 0 {
                decode_basement(info, part, self.cmp).map_err(|r| self.bad(bn, r))?;
            } else {
                decode_buffer(info, part, self.order).map_err(|r| self.bad(bn, r))?;
            }
        }
        Ok(())
    }
}
