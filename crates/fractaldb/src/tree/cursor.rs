//! Cursors: ordered iteration in both directions.
//!
//! A cursor works one basement at a time. To load a batch it descends to the
//! basement whose range holds its target, holding read locks on the whole
//! path, and merges the basement's entries with every buffered message for
//! that basement's key range (point messages and broadcasts, in MSN order per
//! key). It then drops the locks and serves `next`/`prev` from the batch.
//! A batch may hold only part of its basement (`Window`): forward batches
//! start at their target key and, once the cursor knows where it stops
//! (a `Range`'s upper bound), end just past it.
//! Moving past either end of a batch loads the neighbouring basement by key
//! (the batch's bounds are pivots, so neighbours meet exactly), which stays
//! correct however the tree was split or merged in between.
//!
//! What a cursor sees of each key is chosen by its `CursorView` (a
//! transaction's snapshot, the newest committed versions, or uncommitted
//! ones; see `leafentry.rs`). A cursor of a serializable transaction
//! read-locks each batch's key range before serving it: it loads the batch,
//! locks the batch's range, and loads it again under the lock.
//!
//! A cursor outlives nothing it reads for: every move first asks whether
//! it may still read (the environment open, the dictionary not dropped,
//! and for a transaction's cursor the transaction not ended: `CursorView::
//! live`), and a move that fails for any reason leaves the cursor on no
//! key. `key()` and `value()` are `None` when the cursor is on no key.

use std::cmp::Ordering;
use std::sync::Arc;

use parking_lot::{ArcRwLockReadGuard, RawRwLock};

use super::leafentry::{Entry as LeEntry, ReadView, Seen, Snapshot, TxnStates, ViewMode};
use super::message::MsgBody;
use super::node::Node;
use super::{Tree, RETRIES};
use crate::cache::Entry;
use crate::error::Result;

/// Where to position a batch load.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    First,
    Last,
    /// The basement holding this key (for `>=` and `<=` seeks).
    At(&'a [u8]),
    /// The basement holding the keys just below this key.
    Below(&'a [u8]),
}

/// A range bound; `None` is unbounded.
type KeyBound = Option<Box<[u8]>>;

/// The part of its basement a batch load merges and copies: the keys from
/// `from` on (`None`: from the basement's first), up to and including the
/// first visible key at or past `stop` (`None`: to the basement's end).
/// The batch's bounds become `[from, the next key not merged)`, so a
/// cursor that moves past either end loads exactly what this one left out.
/// A range read of 100 rows then copies about 100 rows, not the whole
/// basement (64 KiB by default), and holds the path's read locks, which
/// writers of the root wait behind, for that long only.
#[derive(Clone, Copy, Default)]
pub(crate) struct Window<'a> {
    pub from: Option<&'a [u8]>,
    pub stop: Option<&'a [u8]>,
}

/// Which basements of a leaf a batch load reads from disk when its own is
/// not in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadAhead {
    /// Just the one (seeks, short ranges).
    None,
    /// It and the rest of the leaf after it, in one read (a forward scan).
    Forward,
    /// It and the rest of the leaf before it (a backward scan).
    Backward,
}

/// Batch loads in one direction after which a cursor is taken to be
/// scanning and reads the rest of each leaf at once. Two, so that a short
/// range that just crosses one basement boundary reads no more than it needs.
const SCAN_AFTER_MOVES: u32 = 2;

/// A cursor batch that took at least this many messages from one buffer on
/// its path queues that buffer's child for a flush (`merge_batch`).
pub(crate) const READ_FLUSH_MSGS: usize = 256;

/// One basement's worth of visible key/value pairs and its key range [lo, hi).
///
/// The pairs are copied back to back into one byte buffer, with the end of
/// each key and of each value in `ends`: a scan makes no allocation per row
/// (boxing each key and value was a quarter of a full scan's CPU), and a
/// cursor reuses its batch's buffers from one basement to the next.
#[derive(Default)]
pub(crate) struct Batch {
    data: Vec<u8>,
    /// Per pair: where its key ends and where its value ends in `data`; the
    /// key starts where the previous value ended.
    ends: Vec<(u32, u32)>,
    pub lo: KeyBound,
    pub hi: KeyBound,
    /// The spills the last batch merged, decoded, kept for the next.
    spills: SpillCache,
}

/// The decoded spills on the path of a cursor's last batch, by their
/// entries' ids (`node::Spill::id`). Every batch merges every spill on its
/// path, and a scan's batches, one basement each, share their path for a
/// whole leaf: without this each batch read and decoded them all again
/// (up to `SPILL_NODES` node sizes a child; docs/benchmarks-sql.md has a
/// scan right after a large `INSERT ... SELECT` measured with and
/// without). Spills are immutable and an id names one spill's
/// messages, so a kept one is what a read would give. It holds only the
/// last path's spills: at most `SPILL_NODES` node sizes of messages per
/// level, dropped when the next batch's path has others or the cursor goes.
#[derive(Default)]
struct SpillCache(Vec<(u64, Arc<super::buffer::MsgBuffer>)>);

impl Batch {
    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.lo = None;
        self.hi = None;
    }

    /// Sets a loaded batch's bounds: [the window's `from` or else `lo`, `next` or else `hi`).
    fn set_bounds(&mut self, from: Option<&[u8]>, lo: KeyBound, hi: KeyBound, next: KeyBound) {
        self.lo = match from {
            Some(f) => Some(f.into()),
            None => lo,
        };
        self.hi = match next {
            Some(n) => Some(n),
            None => hi,
        };
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.data.extend_from_slice(key);
        let key_end = self.data.len() as u32;
        self.data.extend_from_slice(value);
        debug_assert!(self.data.len() <= u32::MAX as usize, "a batch is one basement");
        self.ends.push((key_end, self.data.len() as u32));
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1].1 as usize
        }
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        &self.data[self.start(i)..self.ends[i].0 as usize]
    }

    pub(crate) fn value(&self, i: usize) -> &[u8] {
        &self.data[self.ends[i].0 as usize..self.ends[i].1 as usize]
    }

    /// The number of pairs whose key `pred` holds for (a prefix of the batch).
    fn partition_point(&self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Tree {
    fn choose(&self, node: &Node, target: Target) -> usize {
        match target {
            Target::First => 0,
            Target::Last => node.n_parts() - 1,
            Target::At(k) => node.part_for(k, self.cmp),
            Target::Below(k) => node.pivots.partition_point(|p| (self.cmp)(p, k) == Ordering::Less),
        }
    }

    /// Loads the batch for `target` as `view` sees it into `out` (cleared
    /// first), the part of its basement `window` says (`from` must lie in
    /// the basement `target` chooses: it is `target`'s key); if its
    /// basement must be read, reads as `ahead` says.
    pub(crate) fn load_batch(
        &self,
        target: Target,
        view: &ReadView,
        out: &mut Batch,
        ahead: ReadAhead,
        window: Window,
    ) -> Result<()> {
        self.check_open()?;
        let gate = &self.ctx.gate;
        let mut pass = Some(gate.enter());
        let mut held: Vec<Arc<Entry>> = Vec::new();
        let mut retries = 0;
        'restart: loop {
            let root = self.pin(self.root_bn())?;
            // The path: every ancestor's guard and the child index taken.
            let mut path: Vec<(ArcRwLockReadGuard<RawRwLock, Node>, usize)> = Vec::new();
            let mut guard = root.node.read_arc();
            let mut entry = root;
            let (mut lo, mut hi): (KeyBound, KeyBound) = (None, None);
            loop {
                let i = self.choose(&guard, target);
                let (l, h) = guard.part_bounds(i, lo.as_deref(), hi.as_deref());
                let (l, h) = (l.map(Box::from), h.map(Box::from));
                lo = l;
                hi = h;
                if let Some(parts) = parts_to_read(&guard, i, ahead) {
                    drop(path);
                    drop(guard);
                    gate.outside(&mut pass, || self.fetch_parts(&entry, parts))?;
                    held.push(entry);
                    continue 'restart;
                }
                if guard.is_leaf() {
                    let bounds = (lo.as_deref(), hi.as_deref());
                    if let Some(next) =
                        self.leaf_batch(&path, &guard, i, entry.bn, bounds, window, view, out)?
                    {
                        out.set_bounds(window.from, lo, hi, next);
                        return Ok(());
                    }
                    if retries == RETRIES {
                        return Err(self.unknown_txn(lo.as_deref().unwrap_or_default()));
                    }
                    retries += 1;
                    drop(path);
                    drop(guard);
                    std::thread::yield_now();
                    continue 'restart;
                }
                let child_bn = guard.children()[i].bn;
                let Some(next) = self.ctx.cache.get(self.dict, child_bn) else {
                    drop(path);
                    drop(guard);
                    held.extend(gate.outside(&mut pass, || self.try_pin(child_bn))?);
                    continue 'restart;
                };
                let next_guard = next.node.read_arc();
                path.push((std::mem::replace(&mut guard, next_guard), i));
                entry = next;
            }
        }
    }

    /// Clears `out` and merges into it the part `window` says of basement `i` of `leaf` (`merge_batch`).
    #[allow(clippy::too_many_arguments)]
    fn leaf_batch(
        &self,
        path: &[(ArcRwLockReadGuard<RawRwLock, Node>, usize)],
        leaf: &Node,
        i: usize,
        leaf_bn: u64,
        (lo, hi): (Option<&[u8]>, Option<&[u8]>),
        window: Window,
        view: &ReadView,
        out: &mut Batch,
    ) -> Result<Option<KeyBound>> {
        out.clear();
        // The window starts inside the basement: `from` is the
        // key `target` chose it by.
        debug_assert!(window.from.is_none_or(|f| {
            let cmp = self.cmp;
            lo.is_none_or(|l| cmp(l, f) != Ordering::Greater)
                && hi.is_none_or(|h| cmp(f, h) == Ordering::Less)
        }));
        let from = window.from.or(lo);
        self.merge_batch(path, leaf, i, from, hi, window.stop, leaf_bn, view, out)
    }

    /// Merges basement `i` of `leaf` from `lo` on (up to its bound `hi`)
    /// with the messages for [lo, hi) in the buffers along `path` into
    /// `out`, stopping after the first visible key at or past `stop`.
    /// `None` if a key must be read again (`Seen::Retry`); else
    /// `Some(next)`: the first key left out when it stopped early (the
    /// batch's new upper bound), `Some(None)` when it reached `hi`.
    #[allow(clippy::too_many_arguments)]
    fn merge_batch(
        &self,
        path: &[(ArcRwLockReadGuard<RawRwLock, Node>, usize)],
        leaf: &Node,
        i: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        stop: Option<&[u8]>,
        leaf_bn: u64,
        view: &ReadView,
        out: &mut Batch,
    ) -> Result<Option<KeyBound>> {
        let cmp = self.cmp;
        let basement = leaf.basements()[i].as_ref().expect("checked by caller");
        let spills = self.path_spills(path, &mut out.spills)?;
        // Each buffer on the path decodes its messages in this batch's range
        // (keys stay borrowed from the buffers).
        let bufs: Vec<&super::buffer::MsgBuffer> = path
            .iter()
            .map(|(g, c)| {
                debug_assert!(g.children()[*c].loaded, "checked on the way down");
                &g.children()[*c].buf
            })
            .chain(spills.iter().map(|b| &**b))
            .collect();
        let (start, end) = batch_stretch(basement, lo, stop, cmp);
        let msg_hi = if end < basement.len() { Some(basement.key(end)) } else { hi };
        let owned: Vec<Vec<super::buffer::BorrowedMsg>> =
            bufs.iter().map(|b| b.range(lo, msg_hi, self.order)).collect();
        self.queue_hot_buffers(path, &owned, (end - start).max(1), basement.len().max(1));
        let (msgs, broadcasts) = stretch_msgs(&bufs, &owned, (lo, msg_hi), cmp);
        if stop.is_none() {
            out.data.reserve(basement.packed_bytes());
            out.ends.reserve(basement.len() - start + msgs.len());
        }
        self.merge_stretch(basement, (start, end), &msgs, &broadcasts, stop, leaf_bn, view, out)
    }

    /// Merges entries [start, end) with `msgs` and `broadcasts` into `out` as `view` sees them, to `stop`.
    #[allow(clippy::too_many_arguments)]
    fn merge_stretch<'a>(
        &self,
        basement: &'a super::basement::Basement,
        (start, end): (usize, usize),
        msgs: &[super::flush::PointMsg<'a, &'a [u8]>],
        broadcasts: &[(u64, &MsgBody)],
        stop: Option<&[u8]>,
        leaf_bn: u64,
        view: &ReadView,
        out: &mut Batch,
    ) -> Result<Option<KeyBound>> {
        let cmp = self.cmp;
        let (mut b, mut m) = (start, 0);
        // Set once a served key reached `stop`.
        let mut stopped = false;
        while b < end || m < msgs.len() {
            let key = next_key(basement, (b, end), msgs, m, cmp);
            if stopped {
                return Ok(Some(Some(key.into())));
            }
            let le = if b < end && cmp(basement.key(b), key) == Ordering::Equal {
                b += 1;
                Some(basement.leafentry(b - 1))
            } else {
                None
            };
            let first = m;
            while m < msgs.len() && cmp(msgs[m].0, key) == Ordering::Equal {
                m += 1;
            }
            // The common case: one value, nothing buffered.
            if let (Some([super::leafentry::LE_VALUE, v @ ..]), true, true) =
                (le, first == m, broadcasts.is_empty())
            {
                out.push(key, v);
                stopped = stop.is_some_and(|s| cmp(key, s) != Ordering::Less);
                continue;
            }
            let e = self.merged_key(key, le, &msgs[first..m], broadcasts, leaf_bn)?;
            match e.read(view) {
                Seen::Value(Some(v)) => {
                    out.push(key, v);
                    stopped = stop.is_some_and(|s| cmp(key, s) != Ordering::Less);
                }
                Seen::Value(None) => {}
                Seen::Retry(_) => return Ok(None),
            }
        }
        // Every message is below `msg_hi` (`merge_batch`), the basement's key at `end`.
        Ok(Some((end < basement.len()).then(|| basement.key(end).into())))
    }

    /// The spills on the path, read under the path's shared locks (they
    /// are freed only under their parent's write lock). A child with
    /// spills is queued for a merge.
    fn path_spills(
        &self,
        path: &[(ArcRwLockReadGuard<RawRwLock, Node>, usize)],
        cache: &mut SpillCache,
    ) -> Result<Vec<Arc<super::buffer::MsgBuffer>>> {
        let mut spills = Vec::new();
        let mut kept = Vec::new();
        for (i, (g, c)) in path.iter().enumerate() {
            let child = &g.children()[*c];
            for sp in &child.spills {
                let buf = match cache.0.iter().find(|(id, _)| *id == sp.id) {
                    Some((_, buf)) => Arc::clone(buf),
                    None => self.read_spill_kept(sp)?,
                };
                kept.push((sp.id, Arc::clone(&buf)));
                spills.push(buf);
            }
            if !child.spills.is_empty() {
                // Guards do not carry block numbers: the node at depth `i`
                // is the root, or the child its parent on the path took.
                let parent_bn =
                    if i == 0 { self.root_bn() } else { path[i - 1].0.children()[path[i - 1].1].bn };
                self.queue_merge(parent_bn, child.bn);
            }
        }
        cache.0 = kept;
        Ok(spills)
    }

    /// A buffer that gave this batch many messages gives them to every
    /// later batch of this basement too, until a flush takes them down:
    /// under steady writes to a small hot tree no buffer fills up, so
    /// without this each range read re-merges them all. The reader asks
    /// the cleaner to flush the child (the merge queue, as for spills);
    /// the messages then reach the leaf once, by that flush. A batch of
    /// `part` of the basement's `whole` entries counts its messages as if
    /// it had read the whole basement at their density.
    fn queue_hot_buffers(
        &self,
        path: &[(ArcRwLockReadGuard<RawRwLock, Node>, usize)],
        owned: &[Vec<super::buffer::BorrowedMsg>],
        part: usize,
        whole: usize,
    ) {
        for (d, own) in owned.iter().take(path.len()).enumerate() {
            if own.len() >= READ_FLUSH_MSGS || own.len() * whole >= READ_FLUSH_MSGS * part {
                let parent_bn =
                    if d == 0 { self.root_bn() } else { path[d - 1].0.children()[path[d - 1].1].bn };
                self.queue_merge(parent_bn, path[d].0.children()[path[d].1].bn);
            }
        }
    }

    /// The leafentry `le` (None: the key is not in the leaf) of `key` with
    /// its point messages (values borrowed from their buffers) and the
    /// broadcasts (kept owned) applied in one MSN order.
    fn merged_key(
        &self,
        key: &[u8],
        le: Option<&[u8]>,
        point: &[super::flush::PointMsg<'_, &[u8]>],
        broadcasts: &[(u64, &MsgBody)],
        leaf_bn: u64,
    ) -> Result<LeEntry> {
        let fns = &self.ctx.fns;
        let mut e = match le {
            Some(le) => LeEntry::decode(le).map_err(|r| self.corrupt(leaf_bn, r))?,
            None => LeEntry::default(),
        };
        let mut point = point.iter().map(|x| (x.1, x.2)).peekable();
        let mut bc = broadcasts.iter().copied().peekable();
        loop {
            let point_first = match (point.peek(), bc.peek()) {
                (Some(p), Some(q)) => p.0 < q.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let applied = if point_first {
                e.apply(key, point.next().expect("peeked").1, fns)
            } else {
                match bc.next().expect("peeked").1 {
                    b if b.covers(key, self.cmp) => e.apply(key, b, fns),
                    _ => Ok(()),
                }
            };
            applied.map_err(|e| self.apply_error(e, None))?;
        }
        Ok(e)
    }
}

/// The parts of `node` to read before its part `i` can be used (`None`: in memory), as `ahead` says.
fn parts_to_read(node: &Node, i: usize, ahead: ReadAhead) -> Option<std::ops::Range<usize>> {
    let part_loaded = if node.is_leaf() {
        node.basements()[i].is_some()
    } else {
        let c = &node.children()[i];
        c.loaded
    };
    if part_loaded {
        return None;
    }
    Some(match ahead {
        ReadAhead::Forward if node.is_leaf() => i..node.n_parts(),
        ReadAhead::Backward if node.is_leaf() => 0..i + 1,
        _ => i..i + 1,
    })
}

/// A stretch's point messages and broadcasts (`stretch_msgs`).
type StretchMsgs<'a> = (Vec<super::flush::PointMsg<'a, &'a [u8]>>, Vec<(u64, &'a MsgBody)>);

/// The messages of `owned` sorted by key and MSN, and the broadcasts of `bufs` meeting [lo, hi) by MSN.
fn stretch_msgs<'a>(
    bufs: &[&'a super::buffer::MsgBuffer],
    owned: &'a [Vec<super::buffer::BorrowedMsg<'a>>],
    (lo, hi): (Option<&[u8]>, Option<&[u8]>),
    cmp: super::Comparator,
) -> StretchMsgs<'a> {
    let mut msgs = Vec::new();
    let mut broadcasts: Vec<(u64, &MsgBody)> = Vec::new();
    for (buf, own) in bufs.iter().zip(owned) {
        msgs.extend(own.iter().map(|(k, m, b)| (*k, *m, b)));
        // Only those that can cover a key of this stretch: a range
        // delete elsewhere leaves the common case (`merge_stretch`) alone.
        let wide = buf.broadcasts().iter().filter(|(_, b)| b.meets(lo, hi, cmp));
        broadcasts.extend(wide.map(|(m, b)| (*m, b)));
    }
    msgs.sort_by(|a, b| cmp(a.0, b.0).then(a.1.cmp(&b.1)));
    broadcasts.sort_by_key(|b| b.0);
    (msgs, broadcasts)
}

/// The basement's entries from `lo` on, and with a stop only up to the
/// first one past it (at least one, so the batch moves on): the batch ends
/// there at the latest, and the buffers' messages are decoded for that
/// stretch only. Returns [start, end) in entries.
fn batch_stretch(
    basement: &super::basement::Basement,
    lo: Option<&[u8]>,
    stop: Option<&[u8]>,
    cmp: super::Comparator,
) -> (usize, usize) {
    let start = lo.map_or(0, |lo| match basement.search(lo, cmp) {
        Ok(x) | Err(x) => x,
    });
    let end = match stop {
        Some(s) => match basement.search(s, cmp) {
            Ok(x) => x + 1,
            Err(x) => x,
        }
        .max(start + 1)
        .min(basement.len()),
        None => basement.len(),
    };
    (start, end)
}

/// The smaller of the basement's key at `b` (if `b < end`) and message
/// `m`'s key (if any is left): the next key a batch merges.
fn next_key<'a>(
    basement: &'a super::basement::Basement,
    (b, end): (usize, usize),
    msgs: &[super::flush::PointMsg<'a, &'a [u8]>],
    m: usize,
    cmp: super::Comparator,
) -> &'a [u8] {
    match (b < end, m < msgs.len()) {
        (true, true) => {
            let (bk, mk) = (basement.key(b), msgs[m].0);
            if cmp(bk, mk) == Ordering::Greater {
                mk
            } else {
                bk
            }
        }
        (true, false) => basement.key(b),
        _ => msgs[m].0,
    }
}

/// Locks a batch's key range `[lo, hi]` (`None`: unbounded) before a
/// serializable cursor serves it.
pub(crate) type RangeLocker = Box<dyn Fn(Option<&[u8]>, Option<&[u8]>) -> Result<()> + Send>;

/// Fails once the transaction a cursor reads for has ended.
pub(crate) type LiveCheck = Box<dyn Fn() -> Result<()> + Send>;

/// What a cursor reads with: an owned `ReadView`, for serializable
/// transactions the range locker, and for any transaction's cursor the
/// check that the transaction has not ended.
pub(crate) struct CursorView {
    pub own: u64,
    pub uncommitted: bool,
    pub snapshot: Option<Arc<Snapshot>>,
    pub states: Arc<dyn TxnStates + Send>,
    pub lock_range: Option<RangeLocker>,
    /// `None`: an autocommit cursor, bound to no transaction.
    pub live: Option<LiveCheck>,
}

impl CursorView {
    fn view(&self) -> ReadView<'_> {
        let mode = match (&self.snapshot, self.uncommitted) {
            (_, true) => ViewMode::Uncommitted,
            (Some(s), false) => ViewMode::Snapshot(s),
            (None, false) => ViewMode::Latest,
        };
        ReadView { own: self.own, mode, states: &*self.states }
    }
}

/// A position in a dictionary, moving in key order both ways.
///
/// A cursor of a transaction ([`crate::Txn::cursor`]) reads as long as the
/// transaction runs: once it has committed, aborted or been dropped, every
/// move returns an error (it takes no lock and reads no version for it);
/// so does every move of any cursor once its dictionary was dropped or its
/// environment closed. A move that returns an error leaves the cursor on no
/// key.
pub struct Cursor {
    tree: Arc<Tree>,
    view: CursorView,
    batch: Batch,
    /// The pair the cursor is on. Invariant: `Some(i)` only with
    /// `i < batch.len()` (a failed move sets `None`: its load may have
    /// cleared or half filled the batch).
    pos: Option<usize>,
    /// Batch loads in a row that moved on to a neighbour (positive: forward,
    /// negative: backward); a seek resets it. Decides the read-ahead.
    moves: i32,
    /// Where a forward reader stops (a `Range`'s upper bound): forward
    /// batches end after the first key at or past it (`Window::stop`).
    stop: Option<Box<[u8]>>,
}

impl Cursor {
    pub(crate) fn new(tree: Arc<Tree>, view: CursorView) -> Cursor {
        Cursor { tree, view, batch: Batch::default(), pos: None, moves: 0, stop: None }
    }

    /// Tells the cursor that its forward moves stop at the first key at or
    /// past `stop`: each forward batch then copies the keys up to there
    /// instead of the rest of its basement. Moves past it stay correct
    /// (they load the keys after it), only less cheap.
    pub(crate) fn set_stop(&mut self, stop: Option<&[u8]>) {
        self.stop = stop.map(Box::from);
    }

    /// Fails unless the cursor may still read: its environment open, its
    /// dictionary not dropped, its transaction (if any) not ended.
    fn check_live(&self) -> Result<()> {
        self.tree.check_open()?;
        match &self.view.live {
            Some(live) => live(),
            None => Ok(()),
        }
    }

    /// Runs one move: only while the cursor may read, and a move that
    /// fails leaves the cursor on no key.
    fn moving(&mut self, f: impl FnOnce(&mut Self) -> Result<bool>) -> Result<bool> {
        let r = self.check_live().and_then(|()| self.guarded(f));
        if r.is_err() {
            self.pos = None;
        }
        debug_assert!(self.pos.is_none_or(|p| p < self.batch.len()), "a position outside the batch");
        r
    }

    /// Loads the batch for `target` into the cursor's batch. `step`: +1 if
    /// this moves forward to the neighbouring batch, -1 backward, 0 a seek.
    /// `forward`: the batch is served from `target`'s key up (a forward
    /// move, `first` or `seek_ge`), so it starts there and ends at the
    /// cursor's stop; else (`last`, `seek_le`, backward moves) it holds the
    /// basement up to `target`.
    ///
    /// A transaction ending while the batch loads may have let the cleaner
    /// collect versions its snapshot needed: so the check that it has not
    /// ended comes again after the load, and a batch loaded across its end
    /// is not served.
    fn load(&mut self, target: Target, step: i32, forward: bool) -> Result<()> {
        self.moves = match step {
            0 => 0,
            _ if self.moves.signum() == step => self.moves.saturating_add(step),
            _ => step,
        };
        let ahead = match self.moves {
            m if m >= SCAN_AFTER_MOVES as i32 => ReadAhead::Forward,
            m if m <= -(SCAN_AFTER_MOVES as i32) => ReadAhead::Backward,
            _ => ReadAhead::None,
        };
        let window = match (forward, target) {
            (true, Target::At(k)) => Window { from: Some(k), stop: self.stop.as_deref() },
            (true, _) => Window { from: None, stop: self.stop.as_deref() },
            (false, Target::At(k)) => Window { from: None, stop: Some(k) },
            (false, _) => Window::default(),
        };
        self.tree.load_batch(target, &self.view.view(), &mut self.batch, ahead, window)?;
        let Some(lock) = &self.view.lock_range else { return self.check_live() };
        loop {
            let locked = (self.batch.lo.clone(), self.batch.hi.clone());
            lock(locked.0.as_deref(), locked.1.as_deref())?;
            self.tree.load_batch(target, &self.view.view(), &mut self.batch, ahead, window)?;
            // Served only if its range is the one locked (a split or merge
            // in between changes it: then lock the new range too).
            if self.batch.lo == locked.0 && self.batch.hi == locked.1 {
                return self.check_live();
            }
        }
    }

    /// Runs one move. The dictionary's comparator and update functions run
    /// inside it: a panic of theirs is an error (`Tree::caught`), as is a
    /// dictionary poisoned by an earlier panic (checked before and after,
    /// see `Tree::guarded_read`). After an error the cursor is on no key.
    fn guarded(&mut self, f: impl FnOnce(&mut Cursor) -> Result<bool>) -> Result<bool> {
        self.tree.check_readable()?;
        let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self))) {
            Ok(r) => r.and_then(|on| self.tree.check_readable().map(|()| on)),
            Err(p) => Err(self.tree.caught(p, false)),
        };
        if r.is_err() {
            self.pos = None;
        }
        r
    }

    /// Moves to the first key. Returns whether there is one.
    pub fn first(&mut self) -> Result<bool> {
        self.moving(|c| {
            c.load(Target::First, 0, true)?;
            c.settle_forward(0)
        })
    }

    /// Moves to the last key. Returns whether there is one.
    pub fn last(&mut self) -> Result<bool> {
        self.moving(|c| {
            c.load(Target::Last, 0, false)?;
            c.settle_backward(c.batch.len() as isize - 1)
        })
    }

    /// Moves to the first key `>= key`.
    pub fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        self.moving(|c| {
            crate::limits::check_key(key)?;
            c.load(Target::At(key), 0, true)?;
            let cmp = c.tree.cmp;
            let i = c.batch.partition_point(|k| cmp(k, key) == Ordering::Less);
            c.settle_forward(i)
        })
    }

    /// Moves to the last key `<= key`.
    pub fn seek_le(&mut self, key: &[u8]) -> Result<bool> {
        self.moving(|c| {
            crate::limits::check_key(key)?;
            c.load(Target::At(key), 0, false)?;
            let cmp = c.tree.cmp;
            let i = c.batch.partition_point(|k| cmp(k, key) != Ordering::Greater);
            c.settle_backward(i as isize - 1)
        })
    }

    /// Moves to the next key. Returns whether there is one.
    #[allow(clippy::should_implement_trait)] // fallible, so not an Iterator
    pub fn next(&mut self) -> Result<bool> {
        self.moving(|c| match c.pos {
            Some(p) => c.settle_forward(p + 1),
            None => Ok(false),
        })
    }

    /// The pairs after the one the cursor is on that its batch holds
    /// already (0 when it is on none).
    pub(crate) fn ahead_in_batch(&self) -> usize {
        self.pos.map_or(0, |p| self.batch.len() - p - 1)
    }

    /// `next` when the next pair is in the batch already
    /// (`ahead_in_batch` > 0): the same checks (the cursor may still
    /// read, the dictionary is not poisoned), no load, and no code of the
    /// dictionary's runs, so nothing to guard. A scan makes one `next`
    /// per basement and this per pair.
    pub(crate) fn next_in_batch(&mut self) -> Result<()> {
        debug_assert!(self.ahead_in_batch() > 0);
        let r = self.check_live().and_then(|()| self.tree.check_readable());
        self.pos = match r {
            Ok(()) => self.pos.map(|p| p + 1),
            Err(_) => None,
        };
        r
    }

    /// Moves to the previous key. Returns whether there is one.
    pub fn prev(&mut self) -> Result<bool> {
        self.moving(|c| match c.pos {
            Some(p) => c.settle_backward(p as isize - 1),
            None => Ok(false),
        })
    }

    /// The dictionary's tree (for `Range`, which compares its bounds).
    pub(crate) fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    fn settle_forward(&mut self, mut i: usize) -> Result<bool> {
        while i >= self.batch.len() {
            let Some(hi) = self.batch.hi.take() else {
                self.pos = None;
                return Ok(false);
            };
            self.load(Target::At(&hi), 1, true)?;
            let cmp = self.tree.cmp;
            i = self.batch.partition_point(|k| cmp(k, &hi) == Ordering::Less);
        }
        self.pos = Some(i);
        Ok(true)
    }

    fn settle_backward(&mut self, mut i: isize) -> Result<bool> {
        while i < 0 {
            let Some(lo) = self.batch.lo.take() else {
                self.pos = None;
                return Ok(false);
            };
            self.load(Target::Below(&lo), -1, false)?;
            let cmp = self.tree.cmp;
            i = self.batch.partition_point(|k| cmp(k, &lo) == Ordering::Less) as isize - 1;
        }
        self.pos = Some(i as usize);
        Ok(true)
    }

    /// True when the cursor is on a key.
    pub fn valid(&self) -> bool {
        self.pos.is_some()
    }

    /// The key the cursor is on; `None` if it is on none (not positioned
    /// yet, moved past either end, or its last move failed). It is what the
    /// last move read (a copy): it stays readable after the transaction ends.
    pub fn key(&self) -> Option<&[u8]> {
        self.pos.map(|p| self.batch.key(p))
    }

    /// The value of the key the cursor is on; `None` as for [`Cursor::key`].
    pub fn value(&self) -> Option<&[u8]> {
        self.pos.map(|p| self.batch.value(p))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{DictOptions, Env, EnvOptions, SimVfs};

    fn key(i: u32) -> [u8; 4] {
        i.to_be_bytes()
    }

    /// A cursor told where it stops copies the keys from its seek to the
    /// first key at or past the stop, not the rest of the basement; the
    /// keys around that window (buffered inserts and deletes among them)
    /// are still found by moving on in either direction, and `Range`s
    /// return what a model holds.
    #[test]
    fn a_stopped_window_copies_only_its_keys_and_moves_on_correctly() {
        let sim = SimVfs::new(7);
        let opts =
            EnvOptions { vfs: sim.boot(), direct_io: false, background_threads: false, ..Default::default() };
        let env = Env::open("/window", opts).unwrap();
        let dopts =
            DictOptions { node_size_bytes: 64 << 10, basement_size_bytes: 16 << 10, ..Default::default() };
        let d = env.create_dictionary("d", dopts).unwrap();
        let mut model = BTreeMap::new();
        for i in (0..3000).step_by(2) {
            let v = vec![i as u8; 40];
            d.put(&key(i), &v).unwrap();
            model.insert(key(i).to_vec(), v);
        }
        env.run_cleaner(usize::MAX).unwrap();
        // Left in the buffers: deletes of a run of keys, inserts between.
        for i in (1000..1400).step_by(2) {
            d.delete(&key(i)).unwrap();
            model.remove(&key(i)[..]);
        }
        for i in (1001..1100).step_by(4) {
            d.put(&key(i), b"new").unwrap();
            model.insert(key(i).to_vec(), b"new".to_vec());
        }
        let root = d.tree.pin(d.tree.root_bn()).unwrap();
        let buffered = { !root.node.read().is_leaf() && root.node.read().buffer_bytes() > 0 };
        assert!(buffered, "the test needs messages above the leaves");
        for (lo, hi) in [(100, 140), (990, 1010), (1002, 1398), (1396, 1420), (2990, 3100), (0, 1)] {
            let got: Vec<_> = d.range(Some(&key(lo)), Some(&key(hi)), false).map(|kv| kv.unwrap()).collect();
            let want: Vec<_> = model
                .range(key(lo).to_vec()..key(hi).to_vec())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "range [{lo}, {hi})");
            // The cursor as a Range drives it: its first batch holds the
            // keys in the range and one more.
            let mut c = d.cursor();
            c.set_stop(Some(&key(hi)));
            let on = c.seek_ge(&key(lo)).unwrap();
            assert!(c.batch.len() <= want.len() + 1, "[{lo}, {hi}): a batch of {}", c.batch.len());
            // Forward past the stop, then back past the seek: the model's order.
            let mut fwd: Vec<Vec<u8>> = Vec::new();
            let mut ok = on;
            while ok && fwd.len() < want.len() + 30 {
                fwd.push(c.key().unwrap().to_vec());
                ok = c.next().unwrap();
            }
            let expect: Vec<Vec<u8>> =
                model.range(key(lo).to_vec()..).take(fwd.len()).map(|(k, _)| k.clone()).collect();
            assert_eq!(fwd, expect, "forward from {lo}");
            let mut c = d.cursor();
            c.set_stop(Some(&key(hi)));
            let mut back = Vec::new();
            let mut ok = c.seek_ge(&key(lo)).unwrap() && c.prev().unwrap();
            while ok && back.len() < 30 {
                back.push(c.key().unwrap().to_vec());
                ok = c.prev().unwrap();
            }
            let expect: Vec<Vec<u8>> =
                model.range(..key(lo).to_vec()).rev().take(back.len()).map(|(k, _)| k.clone()).collect();
            assert_eq!(back, expect, "backward from {lo}");
            assert_eq!(back.len(), expect.len().min(30));
            // seek_le stops at its key too and moves on forward from there.
            let mut c = d.cursor();
            let mut ok = c.seek_le(&key(hi)).unwrap();
            let mut seen = Vec::new();
            while ok && seen.len() < 20 {
                seen.push(c.key().unwrap().to_vec());
                ok = c.next().unwrap();
            }
            let first = model.range(..=key(hi).to_vec()).next_back().map(|(k, _)| k.clone());
            let expect: Vec<Vec<u8>> = match first {
                Some(f) => model.range(f..).take(20).map(|(k, _)| k.clone()).collect(),
                None => model.keys().take(20).cloned().collect(),
            };
            assert_eq!(seen, expect, "forward from seek_le {hi}");
        }
    }
}
