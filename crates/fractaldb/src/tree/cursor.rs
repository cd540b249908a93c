//! Cursors: ordered iteration in both directions.
//!
//! A cursor works one basement at a time. To load a batch it descends to the
//! basement whose range holds its target, holding read locks on the whole
//! path, and merges the basement's entries with every buffered message for
//! that basement's key range (point messages and broadcasts, in MSN order per
//! key). It then drops the locks and serves `next`/`prev` from the batch.
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
use crate::error::{Error, Result};

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
}

impl Batch {
    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.lo = None;
        self.hi = None;
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
    /// first); if its basement must be read, reads as `ahead` says.
    pub(crate) fn load_batch(
        &self,
        target: Target,
        view: &ReadView,
        out: &mut Batch,
        ahead: ReadAhead,
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
                let part_loaded = if guard.is_leaf() {
                    guard.basements()[i].is_some()
                } else {
                    let c = &guard.children()[i];
                    c.loaded
                };
                if !part_loaded {
                    let parts = match ahead {
                        ReadAhead::Forward if guard.is_leaf() => i..guard.n_parts(),
                        ReadAhead::Backward if guard.is_leaf() => 0..i + 1,
                        _ => i..i + 1,
                    };
                    drop(path);
                    drop(guard);
                    gate.outside(&mut pass, || self.fetch_parts(&entry, parts))?;
                    held.push(entry);
                    continue 'restart;
                }
                if guard.is_leaf() {
                    out.clear();
                    if self.merge_batch(
                        &path,
                        &guard,
                        i,
                        lo.as_deref(),
                        hi.as_deref(),
                        entry.bn,
                        view,
                        out,
                    )? {
                        out.lo = lo;
                        out.hi = hi;
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

    /// Merges basement `i` of `leaf` with the messages for [lo, hi) in the
    /// buffers along `path` into `out`; false if a key must be read again
    /// (`Seen::Retry`).
    #[allow(clippy::too_many_arguments)]
    fn merge_batch(
        &self,
        path: &[(ArcRwLockReadGuard<RawRwLock, Node>, usize)],
        leaf: &Node,
        i: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        leaf_bn: u64,
        view: &ReadView,
        out: &mut Batch,
    ) -> Result<bool> {
        let cmp = self.cmp;
        let basement = leaf.basements()[i].as_ref().expect("checked by caller");
        // The spills on the path, read under the path's shared locks (they
        // are freed only under their parent's write lock).
        let mut spills = Vec::new();
        for (i, (g, c)) in path.iter().enumerate() {
            let child = &g.children()[*c];
            for sp in &child.spills {
                spills.push(self.read_spill(sp.bn)?);
            }
            if !child.spills.is_empty() {
                // Guards do not carry block numbers: the node at depth `i`
                // is the root, or the child its parent on the path took.
                let parent_bn =
                    if i == 0 { self.root_bn() } else { path[i - 1].0.children()[path[i - 1].1].bn };
                self.queue_merge(parent_bn, child.bn);
            }
        }
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
        let owned: Vec<Vec<(&[u8], u64, MsgBody)>> =
            bufs.iter().map(|b| b.range(lo, hi, self.order)).collect();
        // A buffer that gave this batch many messages gives them to every
        // later batch of this basement too, until a flush takes them down:
        // under steady writes to a small hot tree no buffer fills up, so
        // without this each range read re-merges them all. The reader asks
        // the cleaner to flush the child (the merge queue, as for spills);
        // the messages then reach the leaf once, by that flush.
        for (d, own) in owned.iter().take(path.len()).enumerate() {
            if own.len() >= READ_FLUSH_MSGS {
                let parent_bn =
                    if d == 0 { self.root_bn() } else { path[d - 1].0.children()[path[d - 1].1].bn };
                self.queue_merge(parent_bn, path[d].0.children()[path[d].1].bn);
            }
        }
        let mut msgs: Vec<(&[u8], u64, &MsgBody)> = Vec::new();
        let mut broadcasts: Vec<(u64, &MsgBody)> = Vec::new();
        for (buf, own) in bufs.iter().zip(&owned) {
            msgs.extend(own.iter().map(|(k, m, b)| (*k, *m, b)));
            broadcasts.extend(buf.broadcasts().iter().map(|(m, b)| (*m, b)));
        }
        msgs.sort_by(|a, b| cmp(a.0, b.0).then(a.1.cmp(&b.1)));
        broadcasts.sort_by_key(|b| b.0);
        let fns = &self.ctx.fns;
        out.data.reserve(basement.packed_bytes());
        out.ends.reserve(basement.len() + msgs.len());
        let (mut b, mut m) = (0, 0);
        while b < basement.len() || m < msgs.len() {
            let key: &[u8] = match (b < basement.len(), m < msgs.len()) {
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
            };
            let le = if b < basement.len() && cmp(basement.key(b), key) == Ordering::Equal {
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
                continue;
            }
            let mut e = match le {
                Some(le) => LeEntry::decode(le).map_err(|r| self.corrupt(leaf_bn, r))?,
                None => LeEntry::default(),
            };
            let mut point = msgs[first..m].iter().map(|x| (x.1, x.2)).peekable();
            let mut bc = broadcasts.iter().copied().peekable();
            loop {
                let next = match (point.peek(), bc.peek()) {
                    (Some(p), Some(q)) if p.0 < q.0 => point.next(),
                    (Some(_), Some(_)) => bc.next(),
                    (Some(_), None) => point.next(),
                    (None, Some(_)) => bc.next(),
                    (None, None) => break,
                };
                let (_, body) = next.expect("peeked");
                e.apply(key, body, fns).map_err(Error::InvalidArgument)?;
            }
            match e.read(view) {
                Seen::Value(Some(v)) => out.push(key, v),
                Seen::Value(None) => {}
                Seen::Retry(_) => return Ok(false),
            }
        }
        Ok(true)
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
}

impl Cursor {
    pub(crate) fn new(tree: Arc<Tree>, view: CursorView) -> Cursor {
        Cursor { tree, view, batch: Batch::default(), pos: None, moves: 0 }
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
    ///
    /// A transaction ending while the batch loads may have let the cleaner
    /// collect versions its snapshot needed: so the check that it has not
    /// ended comes again after the load, and a batch loaded across its end
    /// is not served.
    fn load(&mut self, target: Target, step: i32) -> Result<()> {
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
        self.tree.load_batch(target, &self.view.view(), &mut self.batch, ahead)?;
        let Some(lock) = &self.view.lock_range else { return self.check_live() };
        loop {
            let locked = (self.batch.lo.clone(), self.batch.hi.clone());
            lock(locked.0.as_deref(), locked.1.as_deref())?;
            self.tree.load_batch(target, &self.view.view(), &mut self.batch, ahead)?;
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
            c.load(Target::First, 0)?;
            c.settle_forward(0)
        })
    }

    /// Moves to the last key. Returns whether there is one.
    pub fn last(&mut self) -> Result<bool> {
        self.moving(|c| {
            c.load(Target::Last, 0)?;
            c.settle_backward(c.batch.len() as isize - 1)
        })
    }

    /// Moves to the first key `>= key`.
    pub fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        self.moving(|c| {
            crate::limits::check_key(key)?;
            c.load(Target::At(key), 0)?;
            let cmp = c.tree.cmp;
            let i = c.batch.partition_point(|k| cmp(k, key) == Ordering::Less);
            c.settle_forward(i)
        })
    }

    /// Moves to the last key `<= key`.
    pub fn seek_le(&mut self, key: &[u8]) -> Result<bool> {
        self.moving(|c| {
            crate::limits::check_key(key)?;
            c.load(Target::At(key), 0)?;
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
            self.load(Target::At(&hi), 1)?;
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
            self.load(Target::Below(&lo), -1)?;
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
