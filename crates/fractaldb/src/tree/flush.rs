//! The cleaner's work: flushing buffers down, splitting and merging nodes.
//!
//! One step (`Tree::clean_step`) write-locks the root; splits it in place if
//! it has too many children (or is an oversized leaf); and, if its buffers
//! are over budget, flushes its fullest buffer into that child, then keeps
//! going down while the child it just filled is itself over budget. Each
//! flush holds the parent and the child, so the child can be split (the
//! parent gains pivots) or merged with a sibling (the parent loses one)
//! right there; a parent left with too many children is split the next time
//! its own parent flushes into it. A step that needs a node from disk
//! returns, reads it without holding any lock, and starts again with the
//! node pinned.
//!
//! The root's block number never changes: a root split moves the root's
//! contents to new nodes below it.
//!
//! Spills. A flush into a child that is not in memory would read the whole
//! child and write it back for one buffer's worth of messages: with data
//! many times the cache, a leaf of about 500 KB compressed was read and
//! rewritten for some 800 rows, and that I/O bounded every load. Instead
//! the cleaner writes the buffer as it is to a block of its own (a spill,
//! a few tens of KB; compressed and written by the spill writer thread,
//! `pending.rs`) and records it in the parent, next to the child's
//! pointer; the child is not touched. Once the child's spills hold
//! `SPILL_NODES` node sizes of messages (or the child is in memory anyway,
//! or the drain comes by), the next flush reads the child and the spills
//! and moves them all down in one rewrite. Reads look in the spills on their path like in a
//! buffer (one read per spill). Spills are immutable: written once, freed
//! by the flush that empties them, under the parent's write lock.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;

use parking_lot::{ArcRwLockWriteGuard, RawRwLock};

use super::basement::Basement;
use super::buffer::{Merger, MsgBuffer};
use super::message::MsgBody;
use super::node::{Body, Child, Node};
use super::Tree;
use crate::cache::Entry;
use crate::error::Result;
use crate::file::BlockNum;

type WriteGuard = ArcRwLockWriteGuard<RawRwLock, Node>;

/// The most spills one child may have. A point read passing by tests each
/// one's Bloom filter (in the parent, in memory) and reads only those that
/// may hold its key; a cursor reads them all.
pub(super) const MAX_SPILLS: usize = 64;

/// How many node sizes of raw messages a child's spills may hold before the
/// next flush reads the child and merges them in. Merging rewrites the whole
/// leaf (read, decompress, apply, compress, write) however many messages
/// wait, so the more wait, the less each pays (the measurement behind 4:
/// docs/benchmarks.md, "Engine constants").
pub(super) const SPILL_NODES: usize = 4;

/// How many node sizes of a tree's spills may wait for the spill writer
/// before the cleaner writes them itself (`Tree::spill`). They are memory
/// the evictor cannot free; with 4, the live heap in `tests/memory.rs`
/// now and then went past its bound.
pub(super) const SPILL_WAIT_NODES: usize = 2;

/// Writers write into the root and the cleaner flushes it, and they should
/// overlap rather than take turns. So the cleaner flushes the root once
/// its buffers hold more than a node size / `ROOT_FLUSH_DIVISOR` (writers
/// wake it then), while a writer does the cleaner's work itself only past
/// `WRITER_HELPS_AT_NODES` node sizes. With marks closer together the
/// cleaner and the writer take turns, each waiting for the other (the
/// measurement behind 2 and 4: docs/benchmarks.md, "Engine constants").
pub(super) const ROOT_FLUSH_DIVISOR: usize = 2;
/// Once woken, the cleaner flushes the root down to a quarter of that mark
/// (`root_flush_target`), not just under it: under steady small writes a
/// root left just under the mark is crossed again by the next write, and
/// each crossing wakes the cleaner (two context switches per write, about
/// 8 per sysbench read_write transaction). With the gap, writers cross it
/// once per about three quarters of the mark's bytes.
pub(super) const ROOT_FLUSH_TARGET_DIVISOR: usize = 4;
pub(super) const WRITER_HELPS_AT_NODES: usize = 4;

/// A buffer of at least a node size / this goes to a spill before the
/// evictor writes its node back (`Tree::spill_for_write_back`). Insert at
/// 40x the cache, one run each: the parents of leaves' write-backs wrote
/// 796 MB without this, 359 MB spilling buffers from a node size / 16 up,
/// 196 MB from / 64 up and 214 MB spilling every non-empty buffer, while
/// spills stayed at 1.7-1.8 GB.
pub(super) const WRITE_BACK_SPILL_DIVISOR: usize = 64;

/// What one drain step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drain {
    /// Flushed a buffer one level down.
    Flushed,
    /// Found the path to the hand empty and moved the hand to the next leaf.
    Moved,
    /// Ended a pass over the whole key space that flushed nothing: the
    /// tree holds no buffered messages (until the next write).
    Clean,
}

/// What one optimize step did (`Tree::optimize_step`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Optimize {
    /// Flushed a buffer one level down (or must be called again).
    Flushed,
    /// The path to the hand was empty: the next leaf's range starts at
    /// `next`, and about `done` (0..=1) of the key space lies before it.
    Moved { next: Box<[u8]>, done: f64 },
    /// The path to the last leaf was empty: the pass is over.
    Done,
}

/// What one attempt at a cleaner step came to.
enum Step {
    /// Finished; true if it changed anything.
    Done(bool),
    /// Needs this node in memory (all partitions) first.
    Need(BlockNum),
}

/// A point message to apply: key, MSN and body (value owned or borrowed).
pub(crate) type PointMsg<'a, V> = (&'a [u8], u64, &'a MsgBody<V>);

/// Applies messages to a leaf whose basements are all in memory. `msgs` is
/// (key, MSN, body) in any order; wide messages (broadcasts, range deletes)
/// have empty keys. Point messages on different keys commute, so they are
/// applied per basement in key order; a wide message is a barrier between
/// the messages older and newer than it (so a put newer than a range delete
/// that covers its key is applied after it, and stays).
///
/// All or nothing: on an error (an update function's, or a basement that
/// would pass 4 GiB, `basement.rs`) the leaf is as it was, so the caller
/// can keep the messages where they were and readers still see them.
pub(crate) fn apply_to_leaf<V: AsRef<[u8]>>(
    tree: &Tree,
    leaf: &mut Node,
    msgs: &mut [PointMsg<V>],
) -> Result<(), super::message::ApplyError> {
    assert!(leaf.all_loaded(), "applying messages to a leaf with evicted basements");
    if msgs.is_empty() {
        return Ok(());
    }
    let cmp = tree.cmp;
    let horizon = tree.ctx.horizon.load(std::sync::atomic::Ordering::Acquire);
    let max_msn = msgs.iter().map(|m| m.1).max().unwrap_or(0);
    debug_assert!(msgs.iter().all(|m| m.1 > leaf.max_msn), "a message reached a leaf twice");
    let mut broadcasts: Vec<(u64, &MsgBody<V>)> =
        msgs.iter().filter(|m| m.2.is_wide()).map(|m| (m.1, m.2)).collect();
    broadcasts.sort_by_key(|b| b.0);
    let mut points: Vec<PointMsg<V>> = msgs.iter().filter(|m| !m.2.is_wide()).copied().collect();
    // In (key, MSN) order. A root write's messages come in MSN order and a
    // flush's in runs: compare the keys' first 8 bytes as an integer first
    // (bytewise dictionaries), which settles most comparisons without the
    // comparator (sorting was half of applying a write to a root leaf).
    let by_key_msn = |a: &PointMsg<V>, b: &PointMsg<V>| cmp(a.0, b.0).then(a.1.cmp(&b.1));
    if !points.is_sorted_by(|a, b| by_key_msn(a, b).is_le()) {
        let order = tree.order;
        let mut keyed: Vec<(u64, PointMsg<V>)> =
            points.iter().map(|m| (super::buffer::prefix(m.0, order), *m)).collect();
        // (key, MSN) is a total order (MSNs are distinct): unstable is fine.
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| by_key_msn(&a.1, &b.1)));
        points = keyed.into_iter().map(|(_, m)| m).collect();
    }
    // Without broadcasts (nearly always) there is one segment, which
    // `apply_points` applies all or nothing; with them, segments and
    // broadcasts take turns, and the basements are copied first to be put
    // back on an error.
    let backup = (!broadcasts.is_empty()).then(|| leaf.basements().to_vec());
    let mut lower_msn = 0;
    for barrier in broadcasts.iter().map(|b| Some(*b)).chain(std::iter::once(None)) {
        let upper_msn = barrier.map_or(u64::MAX, |b| b.0);
        let seg: Vec<(&[u8], &MsgBody<V>)> =
            points.iter().filter(|m| m.1 >= lower_msn && m.1 < upper_msn).map(|m| (m.0, m.2)).collect();
        let mut applied = apply_points(tree, leaf, &seg, horizon);
        if let (Ok(()), Some((msn, body))) = (&applied, barrier) {
            for b in leaf.basements_mut().iter_mut().flatten() {
                applied = b.apply_wide(body, cmp, &tree.ctx.fns, horizon);
                if applied.is_err() {
                    break;
                }
            }
            lower_msn = msn;
        }
        if let Err(e) = applied {
            if let Some(b) = backup {
                *leaf.basements_mut() = b;
            }
            return Err(e);
        }
    }
    leaf.max_msn = leaf.max_msn.max(max_msn);
    leaf.dirty = true;
    rebalance_basements(leaf, tree.settings.basement_size_bytes);
    Ok(())
}

/// Applies key-sorted point messages, each to the basement whose range
/// holds it: all or nothing (every touched basement is staged first, and
/// the staged ones are made current only once all succeeded).
fn apply_points<V: AsRef<[u8]>>(
    tree: &Tree,
    leaf: &mut Node,
    seg: &[(&[u8], &MsgBody<V>)],
    horizon: u64,
) -> Result<(), super::message::ApplyError> {
    let cmp = tree.cmp;
    let n = leaf.n_parts();
    let mut start = 0;
    let mut staged = Vec::new();
    for (i, b) in leaf.basements().iter().enumerate() {
        let end = if i + 1 < n {
            start + seg[start..].partition_point(|(k, _)| cmp(k, &leaf.pivots[i]) == Ordering::Less)
        } else {
            seg.len()
        };
        if end > start {
            let b = b.as_ref().expect("all loaded");
            staged.push((i, b.stage_sorted(&seg[start..end], cmp, &tree.ctx.fns, horizon)?));
        }
        start = end;
    }
    let basements = leaf.basements_mut();
    for (i, s) in staged {
        basements[i].as_mut().expect("all loaded").commit(s);
    }
    Ok(())
}

/// Keeps basements near their target size: splits large ones, drops empty
/// ones and joins small neighbours.
fn rebalance_basements(leaf: &mut Node, basement_size_bytes: usize) {
    // Nearly always nothing is to split, drop or join: then the rebuild
    // below would give back the same basements and pivots, at the cost of
    // a pivot copy and an allocation per basement, on every write into a
    // root leaf (a tenth of a small table's insert, measured at 64
    // sysbench threads).
    let sizes = leaf.basements().iter().map(|b| b.as_ref().expect("all loaded").packed_bytes());
    let unchanged = leaf.n_parts() == 1
        || leaf.basements().iter().flatten().all(|b| !b.is_empty())
            && sizes.clone().zip(sizes.skip(1)).all(|(a, b)| a + b > basement_size_bytes / 2);
    let unchanged = unchanged
        && leaf.basements().iter().flatten().all(|b| b.packed_bytes() <= basement_size_bytes || b.len() < 2);
    if unchanged {
        leaf.basements_mut().iter_mut().flatten().for_each(Basement::compact);
        #[cfg(debug_assertions)]
        {
            // The rebuild would have given the same leaf.
            let mut rebuilt = Node {
                pivots: leaf.pivots.clone(),
                body: Body::Leaf(leaf.basements().to_vec()),
                disk: None,
                disk_parts: Vec::new(),
                ckpt_pending: std::sync::atomic::AtomicBool::new(false),
                ..*leaf
            };
            rebuild_basements(&mut rebuilt, basement_size_bytes);
            debug_assert!(rebuilt.pivots == leaf.pivots, "rebalancing would change the pivots");
            let packed =
                |n: &Node| n.basements().iter().flatten().map(|b| b.packed().to_vec()).collect::<Vec<_>>();
            debug_assert!(packed(&rebuilt) == packed(leaf), "rebalancing would change the basements");
        }
        return;
    }
    rebuild_basements(leaf, basement_size_bytes);
}

/// `rebalance_basements`' rebuild: every basement split to size, empty
/// ones dropped, small neighbours joined, the pivots made anew.
fn rebuild_basements(leaf: &mut Node, basement_size_bytes: usize) {
    let old_pivots = std::mem::take(&mut leaf.pivots);
    let old = std::mem::take(leaf.basements_mut());
    let mut pivots: Vec<Box<[u8]>> = Vec::new();
    let mut bs: Vec<Basement> = Vec::new();
    for (i, b) in old.into_iter().enumerate() {
        let b = b.expect("all loaded");
        let lower = if i == 0 { None } else { Some(old_pivots[i - 1].clone()) };
        for (j, mut piece) in split_basement(b, basement_size_bytes).into_iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            piece.compact();
            match bs.last_mut() {
                Some(last) if last.packed_bytes() + piece.packed_bytes() <= basement_size_bytes / 2 => {
                    last.append(piece)
                }
                Some(_) => {
                    let p = if j == 0 {
                        lower.clone().expect("a later basement has a pivot")
                    } else {
                        piece.key(0).into()
                    };
                    pivots.push(p);
                    bs.push(piece);
                }
                None => bs.push(piece),
            }
        }
    }
    if bs.is_empty() {
        bs.push(Basement::new());
    }
    debug_assert_eq!(pivots.len() + 1, bs.len());
    leaf.pivots = pivots;
    *leaf.basements_mut() = bs.into_iter().map(Some).collect();
}

fn split_basement(mut b: Basement, basement_size_bytes: usize) -> Vec<Basement> {
    let total = b.packed_bytes();
    if total <= basement_size_bytes || b.len() < 2 {
        return vec![b];
    }
    let k = total.div_ceil(basement_size_bytes);
    let mut cuts: Vec<usize> =
        (1..k).map(|j| b.index_at_bytes(j * total / k)).filter(|&c| c > 0 && c < b.len()).collect();
    cuts.dedup();
    if cuts.is_empty() {
        cuts.push(b.len() / 2);
    }
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    for &c in cuts.iter().rev() {
        pieces.push(b.split_off(c));
    }
    pieces.push(b);
    pieces.reverse();
    pieces
}

/// Splits an oversized leaf into pieces of about 3/4 of the node size.
/// Returns the new right-hand pieces with the pivot before each.
fn split_leaf(tree: &Tree, leaf: &mut Node) -> Vec<(Box<[u8]>, Node)> {
    let node_size = tree.settings.node_size_bytes;
    if leaf.n_parts() < 2 {
        // One large basement: cut it into smaller basements first.
        rebalance_basements(leaf, (node_size / 4).max(64));
    }
    let n = leaf.n_parts();
    let total = leaf.leaf_bytes();
    let k = total.div_ceil(node_size * 3 / 4).max(2).min(n);
    if k < 2 {
        return Vec::new();
    }
    let sizes: Vec<usize> =
        leaf.basements().iter().map(|b| b.as_ref().expect("all loaded").packed_bytes()).collect();
    let mut cuts = Vec::new();
    let mut acc = 0;
    for (i, s) in sizes.iter().enumerate() {
        if i > 0 && acc >= (cuts.len() + 1) * total / k && cuts.len() < k - 1 {
            cuts.push(i);
        }
        acc += s;
    }
    if cuts.is_empty() {
        cuts.push(n / 2);
    }
    let mut out = Vec::new();
    for &c in cuts.iter().rev() {
        let bs = leaf.basements_mut().split_off(c);
        let mut ps = leaf.pivots.split_off(c - 1);
        let sep = ps.remove(0);
        out.push((
            sep,
            Node {
                height: 0,
                pivots: ps,
                body: Body::Leaf(bs),
                max_msn: leaf.max_msn,
                dirty: true,
                disk: None,
                disk_parts: Vec::new(),
                ckpt_pending: std::sync::atomic::AtomicBool::new(false),
                ckpt_writing: false,
            },
        ));
    }
    out.reverse();
    out
}

/// Splits an internal node with too many children into pieces of at most
/// `fanout` children. Returns the new right-hand pieces with their pivots.
fn split_internal(tree: &Tree, node: &mut Node) -> Vec<(Box<[u8]>, Node)> {
    let n = node.n_parts();
    let k = n.div_ceil(tree.settings.fanout).max(2);
    if n < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for j in (1..k).rev() {
        let c = j * n / k;
        let children = node.children_mut().split_off(c);
        let mut ps = node.pivots.split_off(c - 1);
        let sep = ps.remove(0);
        out.push((
            sep,
            Node {
                height: node.height,
                pivots: ps,
                body: Body::Internal(children),
                max_msn: 0,
                dirty: true,
                disk: None,
                disk_parts: Vec::new(),
                ckpt_pending: std::sync::atomic::AtomicBool::new(false),
                ckpt_writing: false,
            },
        ));
    }
    out.reverse();
    out
}

fn needs_split(tree: &Tree, node: &Node) -> bool {
    if node.is_leaf() {
        node.leaf_bytes() > tree.settings.node_size_bytes
            && (node.n_parts() > 1 || node.basements()[0].as_ref().is_some_and(|b| b.len() > 1))
    } else {
        node.n_parts() > tree.settings.fanout
    }
}

fn underfull(tree: &Tree, node: &Node) -> bool {
    if node.is_leaf() {
        node.leaf_bytes() < tree.settings.node_size_bytes / 4
    } else {
        node.n_parts() < (tree.settings.fanout / 4).max(2)
    }
}

/// Moves every message buffered for child `c` of `parent` into `child`.
/// Spills first (oldest first), then the buffer: a flush always moves
/// everything waiting for the child, so the child's messages stay older
/// than every message above it. The spills' blocks are freed once their
/// messages are in the child.
fn flush_buffer(
    tree: &Tree,
    parent: &mut Node,
    c: usize,
    child: &mut Node,
    child_bn: BlockNum,
) -> Result<()> {
    // The parent and the child change in place from here: a panic (an
    // update function applied to the leaf, the comparator routing the
    // messages) marks the tree poisoned before the callers' locks go.
    let _changing = tree.changing();
    let spills = std::mem::take(&mut parent.children_mut()[c].spills);
    // Up to `SPILL_NODES` node sizes of decoded messages, in no node until
    // they are applied: charged to the cache meanwhile.
    let mut held = tree.ctx.cache.hold(0);
    let taken = if spills.is_empty() {
        parent.children_mut()[c].buf.take_all()
    } else {
        // Each spill is copied into the merger's arena and dropped at once
        // (one still waiting to be written is shared with its entry in
        // `pending.rs`, and is not decoded); the indexes merge at the end.
        let buf = &parent.children()[c].buf;
        let raw: usize = spills.iter().map(|s| s.raw_len as usize).sum();
        let mut merger = Merger::with_capacity(raw + buf.mem_bytes());
        for sp in &spills {
            match tree.read_spill_taken(sp) {
                Ok(b) => {
                    held.add(b.mem_bytes());
                    merger.add(&b);
                }
                Err(e) => {
                    parent.children_mut()[c].spills = spills;
                    return Err(e);
                }
            }
        }
        merger.add(&parent.children_mut()[c].buf.take_all());
        merger.finish(tree.order)
    };
    parent.dirty = true;
    child.dirty = true;
    for sp in spills {
        tree.free_spill(&sp);
    }
    if taken.len() == 0 {
        return Ok(());
    }
    if child.is_leaf() {
        // Applied straight from the buffer's bytes (no copy per message).
        let decoded = taken.messages();
        let broadcasts: Vec<(u64, MsgBody<&[u8]>)> =
            taken.broadcasts().iter().map(|(m, b)| (*m, b.borrowed())).collect();
        let mut v: Vec<PointMsg<&[u8]>> = decoded.iter().map(|(k, m, b)| (*k, *m, b)).collect();
        v.extend(broadcasts.iter().map(|(m, b)| (&[][..], *m, b)));
        if let Err(reason) = apply_to_leaf(tree, child, &mut v) {
            // The leaf is as it was (`apply_to_leaf` is all or nothing):
            // the messages go back above it, so readers still see them,
            // and the tree takes no more writes.
            drop(v);
            drop(broadcasts);
            drop(decoded);
            parent.children_mut()[c].buf = taken;
            let err = tree.apply_error(reason, Some(child_bn));
            tree.fail(format!("applying messages to a leaf failed: {err}"));
            return Err(err);
        }
    } else {
        route(tree, taken, child);
    }
    Ok(())
}

/// Distributes a taken buffer's messages into an internal node's buffers
/// by its pivots.
fn route(tree: &Tree, taken: MsgBuffer, node: &mut Node) {
    let pieces = taken.split(&node.pivots, tree.order);
    debug_assert_eq!(pieces.len(), node.n_parts());
    for (c, piece) in node.children_mut().iter_mut().zip(pieces) {
        c.buf.append(piece, tree.order);
    }
}

impl Tree {
    /// One unit of background work on this tree. Returns whether it did
    /// anything. Call with no node locks held.
    ///
    /// A panic (an update function or the comparator, met by a flush)
    /// poisons the tree and returns `Error::CallbackPanicked`; a poisoned
    /// tree has no more steps.
    pub(crate) fn clean_step(&self) -> Result<bool> {
        if self.dropped.load(AtomicOrdering::Relaxed) || self.is_poisoned() {
            return Ok(false);
        }
        // A `check` is walking this tree: nothing to do here until it ends.
        let Some(_walk) = self.check_lock.try_read() else { return Ok(false) };
        self.guarded_change(|| self.clean_step_unguarded())
    }

    fn clean_step_unguarded(&self) -> Result<bool> {
        let step = self.reading_as_needed(|| {
            Ok(match self.try_clean_step()? {
                Step::Done(did) => Ok(did),
                Step::Need(bn) => Err(bn),
            })
        })?;
        Ok(step.unwrap_or(true))
    }

    /// Runs `attempt` (under the checkpoint lock, shared) until it finishes,
    /// reading in between each node it says it needs (`Err(block)`) and
    /// keeping it pinned; `None` if it still needed a node after 32 tries
    /// (nodes kept leaving the cache: the caller comes back later).
    ///
    /// The checkpoint lock covers only the attempts, which change nodes,
    /// never the waits and reads between them: a checkpoint's begin waits
    /// for every holder, and writers queue behind it.
    fn reading_as_needed<T>(
        &self,
        mut attempt: impl FnMut() -> Result<std::result::Result<T, BlockNum>>,
    ) -> Result<Option<T>> {
        let mut held: Vec<Arc<Entry>> = Vec::new();
        for _ in 0..32 {
            let step = {
                let _ckpt = self.ctx.checkpoint_lock.read();
                attempt()?
            };
            match step {
                Ok(done) => return Ok(Some(done)),
                Err(bn) => {
                    // Reading a node adds memory: wait for room like a writer.
                    self.ctx.cache.throttle();
                    // Another cleaner (a helping writer) may have merged the
                    // node away meanwhile; then there is nothing to read.
                    if let Some(e) = self.try_pin(bn)? {
                        self.fetch_all(&e)?;
                        held.push(e);
                    }
                }
            }
        }
        Ok(None)
    }

    fn try_clean_step(&self) -> Result<Step> {
        let root_bn = self.root_bn();
        let root = self.pin(root_bn)?;
        let mut g = root.node.write_arc();
        // In every frame holding a node's write lock, declared after it:
        // a panic marks the tree before the lock is released (`changing`).
        let _changing = self.changing();
        if !g.all_loaded() {
            return Ok(Step::Need(root_bn));
        }
        if needs_split(self, &g) {
            self.split_root(&root, &mut g);
            return Ok(Step::Done(true));
        }
        if g.is_leaf() {
            return Ok(Step::Done(false));
        }
        if g.n_parts() == 1 {
            return self.collapse_root(&root, &mut g);
        }
        let queued = self.flush_queue.lock().last().copied();
        if queued.is_none() && g.buffer_bytes() > self.root_flush_bytes() {
            return self.flush_cascade(root, g);
        }
        drop(g);
        // Nodes a flush or split left over budget go first, before the root
        // pushes more into them: so no node grows past about twice its
        // budget. A node stays queued until its flush completes, so a flush
        // that first needs a node from disk is not forgotten.
        let Some(bn) = queued else { return self.merge_step() };
        let Some(e) = self.try_pin(bn)? else {
            self.flush_queue.lock().retain(|&b| b != bn);
            return Ok(Step::Done(true));
        };
        let g = e.node.write_arc();
        let _changing_queued = self.changing();
        if !g.all_loaded() {
            return Ok(Step::Need(bn));
        }
        let step = if !g.is_leaf() && g.buffer_bytes() > self.settings.node_size_bytes {
            self.flush_cascade(e, g)?
        } else {
            Step::Done(true)
        };
        if let Step::Done(_) = step {
            self.flush_queue.lock().retain(|&b| b != bn);
        }
        Ok(step)
    }

    /// Root buffer bytes past which the cleaner flushes the root.
    pub(super) fn root_flush_bytes(&self) -> usize {
        self.settings.node_size_bytes / ROOT_FLUSH_DIVISOR
    }

    /// Root buffer bytes the cleaner flushes the root down to (well below
    /// `root_flush_bytes`, see `ROOT_FLUSH_TARGET_DIVISOR`).
    pub(super) fn root_flush_target(&self) -> usize {
        self.root_flush_bytes() / ROOT_FLUSH_TARGET_DIVISOR
    }

    fn set_root_pressure(&self, root: &Node) {
        let p = if root.is_leaf() { root.leaf_bytes() } else { root.buffer_bytes() };
        self.root_pressure_bytes.store(p, AtomicOrdering::Relaxed);
    }

    /// Flushes `parent`'s fullest buffers until it is within budget. A child
    /// that a flush leaves over budget is queued for its own turn, so every
    /// over-budget node is visited without holding the root meanwhile.
    fn flush_cascade(&self, parent_e: Arc<Entry>, mut parent: WriteGuard) -> Result<Step> {
        let _changing = self.changing();
        let is_root = parent_e.bn == self.root_bn();
        let result = loop {
            let budget = if is_root { self.root_flush_target() } else { self.settings.node_size_bytes };
            if parent.is_leaf() || parent.buffer_bytes() <= budget {
                break Ok(Step::Done(true));
            }
            let c = (0..parent.n_parts())
                .max_by_key(|&i| parent.children()[i].buf.mem_bytes())
                .expect("children");
            match self.flush_into(&parent_e, &mut parent, c, true) {
                Ok(None) => {}
                Ok(Some(bn)) => break Ok(Step::Need(bn)),
                Err(e) => break Err(e),
            }
        };
        self.ctx.cache.recharge(&parent_e, parent.mem_bytes());
        if is_root {
            self.set_root_pressure(&parent);
        }
        result
    }

    /// Moves child `c`'s buffer of `parent` into the child, then splits or
    /// merges the child if that left it too big or too small. Returns the
    /// node to read first if the child (or, for a merge, its sibling) is not
    /// all in memory; then nothing changed. The caller recharges `parent`.
    ///
    /// With `may_spill`, a child not in memory is not read: the buffer is
    /// written to a spill block instead, while the child's spills stay
    /// within `spill_room` (see Spills, at the top).
    fn flush_into(
        &self,
        parent_e: &Entry,
        parent: &mut Node,
        c: usize,
        may_spill: bool,
    ) -> Result<Option<BlockNum>> {
        let child_bn = parent.children()[c].bn;
        let child_e = self.ctx.cache.get(self.dict, child_bn);
        let ready = child_e.as_ref().map(|e| e.node.write_arc()).filter(|g| g.all_loaded());
        let (Some(child_e), Some(mut child)) = (child_e, ready) else {
            if may_spill && self.spill_room(&parent.children()[c]) {
                self.spill(parent_e.bn, parent, c)?;
                return Ok(None);
            }
            return Ok(Some(child_bn));
        };
        let _changing = self.changing();
        self.cow(parent_e.bn, parent);
        self.cow(child_bn, &mut child);
        flush_buffer(self, parent, c, &mut child, child_bn)?;
        let mut child_alive = true;
        if needs_split(self, &child) {
            self.split_child(parent, c, &mut child);
        } else if underfull(self, &child) && parent.n_parts() > 1 {
            match self.merge_child(parent, c, &mut child, child_bn)? {
                Some(alive) => child_alive = alive,
                None => {
                    // The sibling is not in memory: read it, then come back.
                    let s = if c + 1 < parent.n_parts() { c + 1 } else { c - 1 };
                    self.ctx.cache.recharge(&child_e, child.mem_bytes());
                    return Ok(Some(parent.children()[s].bn));
                }
            }
        }
        if child_alive {
            self.ctx.cache.recharge(&child_e, child.mem_bytes());
            if !child.is_leaf() && child.buffer_bytes() > self.settings.node_size_bytes {
                self.queue_flush(child_bn);
            }
        }
        Ok(None)
    }

    /// Flushes down one child whose spills a read had to read, or whose
    /// buffer a cursor batch merged many messages from (the merge queue),
    /// with its spills. The pair stays queued until done, so a flush that
    /// first needs the child from disk is not forgotten; a pair whose parent
    /// or child is gone, or that has no spills left, is just dropped.
    fn merge_step(&self) -> Result<Step> {
        let Some((parent_bn, child_bn)) = self.merge_queue.lock().last().copied() else {
            return Ok(Step::Done(false));
        };
        let forget = || self.merge_queue.lock().retain(|&p| p != (parent_bn, child_bn));
        let Some(e) = self.try_pin(parent_bn)? else {
            forget();
            return Ok(Step::Done(true));
        };
        let mut g = e.node.write_arc();
        let _changing = self.changing();
        let c = if g.is_leaf() { None } else { g.children().iter().position(|c| c.bn == child_bn) };
        // Queued for its spills (a read read them) or for its buffer (a
        // cursor batch merged many of its messages): either way, still
        // something to take down.
        let Some(c) = c.filter(|&c| !g.children()[c].spills.is_empty() || g.children()[c].buf.len() > 0)
        else {
            forget();
            return Ok(Step::Done(true));
        };
        if !g.all_loaded() {
            return Ok(Step::Need(parent_bn));
        }
        Ok(match self.flush_whole(&e, &mut g, c)? {
            None => {
                forget();
                Step::Done(true)
            }
            Some(bn) => Step::Need(bn),
        })
    }

    /// Flushes child `c` of `parent` down with its spills, never spilling
    /// (the drain and the merge queue want the child emptied), and
    /// recharges the parent. Returns the node to read first, as `flush_into`.
    fn flush_whole(&self, parent_e: &Entry, parent: &mut Node, c: usize) -> Result<Option<BlockNum>> {
        let need = self.flush_into(parent_e, parent, c, false)?;
        self.ctx.cache.recharge(parent_e, parent.mem_bytes());
        if parent_e.bn == self.root_bn() {
            self.set_root_pressure(parent);
        }
        Ok(need)
    }

    /// Whether child `c`'s buffer may go to a spill: it holds messages, and
    /// the child's spills stay within `SPILL_NODES` node sizes and
    /// `MAX_SPILLS`.
    fn spill_room(&self, child: &Child) -> bool {
        let buf = child.buf.mem_bytes();
        child.loaded
            && child.buf.len() > 0
            && child.spills.len() < MAX_SPILLS
            && child.spilled_bytes() + buf <= SPILL_NODES * self.settings.node_size_bytes
    }

    /// Before the evictor writes back dirty internal node `node` (not the
    /// root): moves each buffer of at least a node size /
    /// `WRITE_BACK_SPILL_DIVISOR` into a spill, where its child has room.
    ///
    /// A buffer written with its node is read back when the node is needed
    /// again, takes in more, and is written again at the next eviction: at
    /// 40x the cache the parents of leaves do not all fit, and their
    /// write-backs wrote as many bytes as the leaves. A spill is written
    /// once, and it is where those messages go next anyway.
    pub(super) fn spill_for_write_back(&self, bn: BlockNum, node: &mut Node) -> Result<()> {
        debug_assert!(!node.is_leaf() && bn != self.root_bn());
        let min = self.settings.node_size_bytes / WRITE_BACK_SPILL_DIVISOR;
        for c in 0..node.n_parts() {
            let child = &node.children()[c];
            if child.buf.mem_bytes() >= min && self.spill_room(child) {
                self.spill(bn, node, c)?;
                self.ctx.write_back_spills.fetch_add(1, AtomicOrdering::Relaxed);
            }
        }
        Ok(())
    }

    /// Moves child `c`'s buffer into a new spill. Its block is written by
    /// the spill writer thread (`pending.rs`), unless more than
    /// `SPILL_WAIT_NODES` node sizes of this tree's spills already wait:
    /// then this thread writes the oldest ones first, under the parent's
    /// write lock as before the spill writer existed, so a writer that
    /// falls behind slows the cleaner rather than filling the cache.
    fn spill(&self, parent_bn: BlockNum, parent: &mut Node, c: usize) -> Result<()> {
        self.cow(parent_bn, parent);
        let buf = std::mem::take(&mut parent.children_mut()[c].buf);
        let sp = self.new_spill(buf);
        parent.children_mut()[c].spills.push(sp);
        parent.dirty = true;
        while self.pending.bytes() > SPILL_WAIT_NODES * self.settings.node_size_bytes {
            if self.write_spills(1)? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// One step of draining buffers while nobody writes (see
    /// `docs/ARCHITECTURE.md`, Draining): descends the path to the drain
    /// hand's key and flushes the first non-empty buffer on it; when the
    /// whole path is empty, moves the hand to the next leaf's range.
    ///
    /// Buffers that stay put once writes stop cost every later read: a
    /// point get of data larger than the cache read a buffer partition
    /// beside its basement, and a scan merged buffered messages into every
    /// batch. Drained, the internal nodes are pivots only and stay cached.
    ///
    /// A panic poisons the tree, as in `clean_step`.
    pub(crate) fn drain_step(&self) -> Result<Drain> {
        if self.dropped.load(AtomicOrdering::Relaxed) || self.is_poisoned() {
            return Ok(Drain::Clean);
        }
        // A `check` is walking this tree: counted clean until the next write.
        let Some(_walk) = self.check_lock.try_read() else { return Ok(Drain::Clean) };
        self.guarded_change(|| self.drain_step_unguarded())
    }

    fn drain_step_unguarded(&self) -> Result<Drain> {
        // Nodes that keep leaving the cache before the step can use them:
        // let the caller come back.
        Ok(self.reading_as_needed(|| self.try_drain_step())?.unwrap_or(Drain::Moved))
    }

    /// One attempt: what it did, or the node to read first.
    fn try_drain_step(&self) -> Result<std::result::Result<Drain, BlockNum>> {
        let hand = self.drain_hand.lock().clone();
        let flushed = || {
            self.drain_flushed.store(true, AtomicOrdering::Relaxed);
            Drain::Flushed
        };
        self.flush_first_on_path(hand.as_deref(), flushed, |upper, _done| {
            let wrapped = upper.is_none();
            *self.drain_hand.lock() = upper;
            // A pass ends at the wrap; it found the tree clean if it
            // flushed nothing on the way.
            let clean = wrapped && !self.drain_flushed.swap(false, AtomicOrdering::Relaxed);
            if clean {
                Drain::Clean
            } else {
                Drain::Moved
            }
        })
    }

    /// The descent drain and optimize steps share: walks the path to
    /// `hand` from the root, write-locking hand over hand (the child is
    /// locked before the parent is let go), and flushes the first buffer
    /// on it that holds messages, whole and never spilling (`flushed()` is
    /// the answer then). When every buffer on the path is empty, calls
    /// `at_leaf` with the leaf still locked: where the leaf's range ends
    /// (the least pivot above `hand` seen on the way; `None` for the last
    /// leaf) and about how much of the key space (counted in children per
    /// level) lies before that end. `Err(bn)`: node `bn` must be read first.
    fn flush_first_on_path<T>(
        &self,
        hand: Option<&[u8]>,
        flushed: impl FnOnce() -> T,
        at_leaf: impl FnOnce(Option<Box<[u8]>>, f64) -> T,
    ) -> Result<std::result::Result<T, BlockNum>> {
        let root_bn = self.root_bn();
        let mut entry = self.pin(root_bn)?;
        let mut g = entry.node.write_arc();
        let _changing = self.changing();
        let mut upper: Option<Box<[u8]>> = None;
        // The share of the key space before the current node, and the
        // current node's share.
        let (mut before, mut width) = (0.0f64, 1.0f64);
        loop {
            if !g.all_loaded() {
                return Ok(Err(entry.bn));
            }
            if g.is_leaf() {
                return Ok(Ok(at_leaf(upper, before + width)));
            }
            let c = hand.map_or(0, |k| g.part_for(k, self.cmp));
            if c + 1 < g.n_parts() {
                upper = Some(g.pivots[c].clone());
            }
            width /= g.n_parts() as f64;
            before += c as f64 * width;
            if g.children()[c].has_messages() {
                return Ok(match self.flush_whole(&entry, &mut g, c)? {
                    None => Ok(flushed()),
                    Some(bn) => Err(bn),
                });
            }
            let child_bn = g.children()[c].bn;
            let Some(child_e) = self.ctx.cache.get(self.dict, child_bn) else {
                return Ok(Err(child_bn));
            };
            let child = child_e.node.write_arc();
            g = child;
            entry = child_e;
        }
    }

    /// One step of `Env::optimize` on this tree: descends the path to
    /// `hand` (the optimizer's own, not the drain's) and flushes the first
    /// buffer on it that holds messages, spills included, never spilling;
    /// when the whole path is empty, says where the next leaf's range
    /// starts and how much of the key space lies before it.
    ///
    /// Each step takes the locks of one root-to-leaf path, hand over hand,
    /// as a drain step does, and gives them back: writers go on between
    /// steps. A pass from the empty hand to the last leaf leaves every
    /// buffer empty that no write reached meanwhile, since a buffer is
    /// flushed whole at the first leaf of its range and the hand only moves
    /// right. Flushes merge underfull children as the cleaner's do.
    pub(crate) fn optimize_step(&self, hand: Option<&[u8]>) -> Result<Optimize> {
        self.check_writable()?;
        if self.dropped.load(AtomicOrdering::Relaxed) {
            return Ok(Optimize::Done);
        }
        // A `check` walks with the check lock held exclusively; wait for it.
        let _walk = self.check_lock.read();
        self.guarded_change(|| {
            Ok(self.reading_as_needed(|| self.try_optimize_step(hand))?.unwrap_or(Optimize::Flushed))
        })
    }

    fn try_optimize_step(&self, hand: Option<&[u8]>) -> Result<std::result::Result<Optimize, BlockNum>> {
        self.flush_first_on_path(
            hand,
            || Optimize::Flushed,
            |upper, done| match upper {
                None => Optimize::Done,
                Some(next) => Optimize::Moved { next, done },
            },
        )
    }

    pub(crate) fn queue_flush(&self, bn: BlockNum) {
        let mut q = self.flush_queue.lock();
        if !q.contains(&bn) {
            q.push(bn);
        }
    }

    /// Splits child `c` (locked as `child`) into pieces; `parent` gains a
    /// pivot and an empty buffer for each new piece.
    fn split_child(&self, parent: &mut Node, c: usize, child: &mut Node) {
        let pieces = if child.is_leaf() { split_leaf(self, child) } else { split_internal(self, child) };
        for (j, (sep, node)) in pieces.into_iter().enumerate() {
            let over = !node.is_leaf() && node.buffer_bytes() > self.settings.node_size_bytes;
            let e = self.new_node(node);
            parent.pivots.insert(c + j, sep);
            parent.children_mut().insert(c + 1 + j, Child::new(e.bn));
            if over {
                self.queue_flush(e.bn);
            }
        }
    }

    /// Moves the root's contents into new nodes below it, split in pieces.
    fn split_root(&self, root: &Entry, g: &mut Node) {
        self.cow(root.bn, g);
        let height = g.height;
        let mut left = Node {
            height,
            pivots: std::mem::take(&mut g.pivots),
            body: std::mem::replace(&mut g.body, Body::Internal(Vec::new())),
            max_msn: g.max_msn,
            dirty: true,
            disk: None,
            disk_parts: Vec::new(),
            ckpt_pending: std::sync::atomic::AtomicBool::new(false),
            ckpt_writing: false,
        };
        let pieces =
            if left.is_leaf() { split_leaf(self, &mut left) } else { split_internal(self, &mut left) };
        let left_over = !left.is_leaf() && left.buffer_bytes() > self.settings.node_size_bytes;
        let left_e = self.new_node(left);
        let mut children = vec![Child::new(left_e.bn)];
        for (sep, node) in pieces {
            let over = !node.is_leaf() && node.buffer_bytes() > self.settings.node_size_bytes;
            let e = self.new_node(node);
            g.pivots.push(sep);
            children.push(Child::new(e.bn));
            if over {
                self.queue_flush(e.bn);
            }
        }
        if left_over {
            self.queue_flush(left_e.bn);
        }
        g.height = height + 1;
        g.body = Body::Internal(children);
        g.max_msn = 0;
        g.dirty = true;
        g.disk = None;
        g.disk_parts = Vec::new();
        self.ctx.cache.recharge(root, g.mem_bytes());
        self.set_root_pressure(g);
    }

    /// A root with one child takes over that child's contents.
    fn collapse_root(&self, root: &Entry, g: &mut Node) -> Result<Step> {
        let child_bn = g.children()[0].bn;
        let Some(child_e) = self.ctx.cache.get(self.dict, child_bn) else { return Ok(Step::Need(child_bn)) };
        let mut child = child_e.node.write_arc();
        let _changing = self.changing();
        if !child.all_loaded() {
            return Ok(Step::Need(child_bn));
        }
        self.cow(root.bn, g);
        self.cow(child_bn, &mut child);
        flush_buffer(self, g, 0, &mut child, child_bn)?;
        g.height = child.height;
        g.pivots = std::mem::take(&mut child.pivots);
        g.body = child.retire();
        g.max_msn = child.max_msn;
        g.dirty = true;
        g.disk = None;
        g.disk_parts = Vec::new();
        child.dirty = false;
        drop(child);
        self.free_node(child_bn);
        self.ctx.cache.recharge(root, g.mem_bytes());
        self.set_root_pressure(g);
        Ok(Step::Done(true))
    }

    /// Merges underfull child `c` with a neighbour. Returns `None` if the
    /// neighbour is not in memory, else whether `child` still exists.
    fn merge_child(
        &self,
        parent: &mut Node,
        c: usize,
        child: &mut Node,
        child_bn: BlockNum,
    ) -> Result<Option<bool>> {
        let s = if c + 1 < parent.n_parts() { c + 1 } else { c - 1 };
        let sib_bn = parent.children()[s].bn;
        let Some(sib_e) = self.ctx.cache.get(self.dict, sib_bn) else { return Ok(None) };
        let mut sib = sib_e.node.write_arc();
        let _changing = self.changing();
        if !sib.all_loaded() {
            return Ok(None);
        }
        let fits = if child.is_leaf() {
            child.leaf_bytes() + sib.leaf_bytes() <= self.settings.node_size_bytes * 3 / 4
        } else {
            child.n_parts() + sib.n_parts() <= self.settings.fanout * 3 / 4
        };
        if !fits {
            return Ok(Some(true));
        }
        // Empty the sibling's buffer so the merged child's buffer holds only
        // messages newer than everything below it.
        self.cow(sib_bn, &mut sib);
        flush_buffer(self, parent, s, &mut sib, sib_bn)?;
        let (l, _r) = if s > c { (c, s) } else { (s, c) };
        let sep = parent.pivots.remove(l);
        let right_bn = parent.children_mut().remove(l + 1).bn;
        let (left, right): (&mut Node, &mut Node) = if s > c { (child, &mut sib) } else { (&mut sib, child) };
        left.pivots.push(sep);
        left.pivots.append(&mut right.pivots);
        match (&mut left.body, right.retire()) {
            (Body::Leaf(lb), Body::Leaf(rb)) => lb.extend(rb),
            (Body::Internal(lc), Body::Internal(rc)) => lc.extend(rc),
            _ => panic!("merging nodes of different heights"),
        }
        left.max_msn = left.max_msn.max(right.max_msn);
        left.dirty = true;
        right.dirty = false;
        if left.is_leaf() {
            rebalance_basements(left, self.settings.basement_size_bytes);
        }
        let child_survives = s > c;
        let left_bytes = left.mem_bytes();
        drop(sib);
        if child_survives {
            self.ctx.cache.recharge(&sib_e, 0);
        } else {
            self.ctx.cache.recharge(&sib_e, left_bytes);
        }
        drop(sib_e);
        self.free_node(right_bn);
        debug_assert!(right_bn == child_bn || right_bn == sib_bn);
        Ok(Some(child_survives))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::message::MsgKind;
    use crate::{DictOptions, Env, EnvOptions, SimVfs};

    /// A flush's messages meet an error in one basement of a leaf (here an
    /// update function the environment lacks; in practice a basement that
    /// would pass 4 GiB, `basement.rs`): every basement is left as it was,
    /// including those before it, which the messages must not half reach.
    /// Likewise when a broadcast in between fails after the first segment.
    #[test]
    fn a_failed_apply_leaves_the_leaf_as_it_was() {
        let sim = SimVfs::new(1);
        let opts =
            EnvOptions { vfs: sim.boot(), direct_io: false, background_threads: false, ..Default::default() };
        let env = Env::open("/flush", opts).unwrap();
        let d = env.create_dictionary("d", DictOptions::default()).unwrap();
        let tree = d.tree.clone();
        let old = MsgBody::plain(MsgKind::Insert, 0, b"old");
        let new = MsgBody::plain(MsgKind::Insert, 0, b"new");
        let bad_update = MsgBody::plain(MsgKind::Update, 99, b"x");
        let bad_broadcast = MsgBody::plain(MsgKind::Broadcast, 99, b"x");
        let cases: [Vec<PointMsg<Box<[u8]>>>; 2] = [
            vec![(&b"a"[..], 1, &new), (&b"m"[..], 2, &bad_update)],
            vec![(&b"a"[..], 1, &new), (&b""[..], 2, &bad_broadcast), (&b"m"[..], 3, &new)],
        ];
        for mut msgs in cases {
            let mut leaf = Node::new_leaf();
            let mut basements = Vec::new();
            for key in [&b"a"[..], b"m"] {
                let mut b = Basement::new();
                b.apply_sorted(&[(key, &old)], tree.cmp, &tree.ctx.fns, 1).unwrap();
                basements.push(Some(b));
            }
            *leaf.basements_mut() = basements;
            leaf.pivots = vec![b"m".to_vec().into()];
            let packed = |leaf: &Node| -> Vec<Vec<u8>> {
                leaf.basements().iter().map(|b| b.as_ref().unwrap().packed().to_vec()).collect()
            };
            let before = packed(&leaf);
            assert!(apply_to_leaf(&tree, &mut leaf, &mut msgs).is_err());
            assert_eq!(packed(&leaf), before, "{:?}", msgs.iter().map(|m| m.0).collect::<Vec<_>>());
            assert_eq!(leaf.max_msn, 0);
        }
        drop(d);
        env.close().unwrap();
    }

    fn small_env(sim: &SimVfs) -> (Env, crate::Dictionary) {
        let opts =
            EnvOptions { vfs: sim.boot(), direct_io: false, background_threads: false, ..Default::default() };
        let env = Env::open("/opt", opts).unwrap();
        let d = match env.open_dictionary("d") {
            Ok(d) => d,
            Err(_) => {
                let dopts = DictOptions {
                    node_size_bytes: 4096,
                    basement_size_bytes: 1024,
                    fanout: 4,
                    ..Default::default()
                };
                env.create_dictionary("d", dopts).unwrap()
            }
        };
        (env, d)
    }

    fn key(i: u32) -> [u8; 4] {
        i.to_be_bytes()
    }

    /// Loads 3000 keys, then deletes every other one and overwrites the
    /// multiples of 3, leaving messages buffered at every level.
    fn load(d: &crate::Dictionary) {
        for i in 0..3000 {
            d.put(&key(i), format!("v{i}").as_bytes()).unwrap();
        }
        for i in (0..3000).step_by(2) {
            d.delete(&key(i)).unwrap();
        }
        for i in (0..3000).step_by(3) {
            d.put(&key(i), b"three").unwrap();
        }
    }

    fn expected(i: u32) -> Option<Vec<u8>> {
        if i.is_multiple_of(3) {
            Some(b"three".to_vec())
        } else if i.is_multiple_of(2) {
            None
        } else {
            Some(format!("v{i}").into_bytes())
        }
    }

    fn verify(d: &crate::Dictionary) {
        let got: Vec<(Vec<u8>, Vec<u8>)> = d.range(None, None, false).map(|kv| kv.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            (0..3000).filter_map(|i| expected(i).map(|v| (key(i).to_vec(), v))).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "rows differ");
    }

    /// Small writes push the root's buffers over `root_flush_bytes` (the
    /// writers wake the cleaner then); the cleaner's flush leaves them at
    /// most `root_flush_target`, well below the mark, so the next writes
    /// do not cross it again at once.
    #[test]
    fn the_cleaner_flushes_the_root_well_below_its_mark() {
        let sim = SimVfs::new(11);
        let (env, d) = small_env(&sim);
        load(&d);
        let t = d.tree.clone();
        let pressure = || t.root_pressure_bytes.load(AtomicOrdering::Relaxed);
        for round in 0..3 {
            let mut i = 0u32;
            // Keys spread over the whole range, so every child's buffer
            // fills: flushing the fullest one alone leaves the root over
            // its target.
            while pressure() <= t.root_flush_bytes() {
                d.put(&key((i * 7919 + round) % 3000), b"x").unwrap();
                i += 1;
                assert!(i < 100_000, "the root never went over its mark");
            }
            let mut steps = 0;
            while pressure() > t.root_flush_bytes() {
                t.clean_step().unwrap();
                steps += 1;
                assert!(steps < 1000, "the cleaner never flushed the root");
            }
            assert!(
                pressure() <= t.root_flush_target(),
                "round {round}: the root holds {} buffered bytes after its flush, over {}",
                pressure(),
                t.root_flush_target()
            );
        }
        drop(d);
        env.close().unwrap();
    }

    /// After `optimize`, no node buffers a message (nor spills one), every
    /// key reads as before, and progress only grew, up to 1. Stopped by its
    /// callback it returns false and loses nothing.
    #[test]
    fn optimize_pushes_every_message_to_the_leaves() {
        let sim = SimVfs::new(7);
        let (env, d) = small_env(&sim);
        load(&d);
        let before = d.check().unwrap();
        assert!(before.height >= 2 && before.buffered_messages > 0, "{before:?}");
        let mut calls = 0;
        assert!(!env
            .optimize(&d, &mut |_| {
                calls += 1;
                calls < 3
            })
            .unwrap());
        verify(&d);
        let mut seen = Vec::new();
        assert!(env
            .optimize(&d, &mut |p| {
                seen.push(p);
                true
            })
            .unwrap());
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&1.0));
        assert!(seen.len() > 3);
        let after = d.check().unwrap();
        assert_eq!((after.buffered_messages, after.spills), (0, 0), "{after:?}");
        verify(&d);
        // Deleting most keys leaves leaves underfull: the flushes that take
        // the deletes down merge them.
        for i in 0..2700 {
            d.delete(&key(i)).unwrap();
        }
        assert!(env.optimize(&d, &mut |_| true).unwrap());
        let last = d.check().unwrap();
        assert_eq!((last.buffered_messages, last.leafentries), (0, 200), "{last:?}");
        assert!(last.leaves < after.leaves, "underfull leaves merged: {after:?} -> {last:?}");
        drop(d);
        env.close().unwrap();
    }

    /// A crash at any point of an optimize (here after a checkpoint of the
    /// half-optimized tree at step `k`) loses nothing: it only moves
    /// messages down.
    #[test]
    fn a_crash_in_the_middle_of_optimize_loses_nothing() {
        for k in [1usize, 4, 15, 60] {
            let sim = SimVfs::new(k as u64);
            let (env, d) = small_env(&sim);
            load(&d);
            env.checkpoint().unwrap();
            let mut calls = 0;
            let _ = env.optimize(&d, &mut |_| {
                calls += 1;
                if calls == k {
                    env.checkpoint().unwrap();
                    sim.crash_after(Some(3));
                }
                true
            });
            sim.crash_after(None);
            sim.crash();
            drop(d);
            drop(env);
            let (env, d) = small_env(&sim);
            d.check().unwrap();
            verify(&d);
            drop(d);
            env.close().unwrap();
        }
    }

    /// Dropping a dictionary gives its space back at once, even while a
    /// handle still holds its file open.
    #[test]
    fn a_dropped_dictionary_frees_its_space_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::open(dir.path(), EnvOptions { direct_io: false, ..Default::default() }).unwrap();
        let d = env.create_dictionary("x", DictOptions::default()).unwrap();
        let mut batch = crate::WriteBatch::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..2000u32 {
            let v: Vec<u8> = (0..100)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            batch.put(&i.to_be_bytes(), &v);
        }
        d.write(&batch).unwrap();
        env.checkpoint().unwrap();
        let path = d.file_path().to_path_buf();
        assert!(std::fs::metadata(&path).unwrap().len() > 150_000);
        let file = std::fs::File::open(&path).unwrap();
        env.drop_dictionary("x").unwrap();
        assert!(!path.exists());
        // `d` and `file` still hold it open: it has no bytes left.
        assert_eq!(file.metadata().unwrap().len(), 0);
        drop(d);
        env.close().unwrap();
    }
}
