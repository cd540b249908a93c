//! The lock manager: per-dictionary range locks owned by transactions.
//!
//! A lock covers an inclusive key range `[lo, hi]` of one dictionary (ends may
//! be `Min` or `Max`), in `Read` (shared) or `Write` (exclusive) mode, and is
//! owned by a transaction id. Locks are held until `release_all` (commit or
//! abort). The model is TokuDB's lock tree: every transaction locks each key it
//! writes (point locks) and, when serializable, the ranges it scans.
//!
//! **Structure.** One mutex guards the whole state (`State`). Per dictionary,
//! `DictLocks` keeps point locks (`lo == hi`, a key) in a `BTreeMap` ordered by
//! the dictionary's comparator, each key with its small list of
//! `(owner, mode)`, and true range locks (from range scans and escalation) in a
//! `Vec` scanned linearly, as they are few. A point request is one map lookup
//! plus the range scan: O(log n + ranges). A range request walks the map's
//! points inside it plus the range scan. Per owner, `held` lists the point keys
//! and counts the ranges it holds in each dictionary, so `release_all` costs
//! what the owner holds (plus a scan of the range `Vec` where it holds ranges).
//!
//! **Invariants** (`check_invariants` checks all of them in tests): two locks
//! of different owners that overlap are both `Read`; an owner appears at most
//! once per point key; every range has `lo <= hi` and is not a single key;
//! `held` lists exactly the locks the dictionaries hold; `locks`/`bytes` equal
//! a recount; `bytes <= limit`.
//!
//! **Waiting and deadlocks.** A request that conflicts sleeps on its
//! dictionary's condition variable (never holding the mutex while asleep) and
//! retries on every wake-up; `release_all` and `forget_dict` wake all sleepers
//! of the dictionaries they touch. The wait-for graph is `waiting`: each
//! sleeping owner's pending request and the owners blocking it. Before sleeping
//! and after every wake-up, a requester follows the edges from its blockers;
//! each waiter's edges are recomputed from its pending request as they are
//! followed, so the graph is exact even where a blocker has since released or
//! another owner has since been granted an overlapping lock. A path back to the
//! requester fails it with `Deadlock` (the requester, the one closing the cycle,
//! is the victim). An owner makes one request at a time.
//!
//! **Memory and escalation.** Each lock is charged `LOCK_OVERHEAD` plus its key
//! bytes (a point shared by two readers is charged twice). When a grant would
//! pass the limit, every dictionary is escalated: all locks of the dictionary
//! are sorted by `(lo, hi)`; each maximal run of consecutive locks of one owner
//! (two or more) whose span `[first lo, largest hi]` overlaps no other owner's
//! lock becomes one range lock over that span, `Write` if any lock of the run
//! is `Write`. So an escalated lock covers only keys between the owner's own
//! locks, never another owner's, and a transaction writing many consecutive
//! keys ends up holding one range. If the grant still does not fit, the request
//! fails with `MemoryFull` and is not granted. Escalation only widens locks, so
//! it can only add conflicts: its wider ranges can block later requests (of
//! keys between an owner's locks) that would have been granted before.
//!
//! **Differences from TokuDB.** TokuDB keeps all locks, points included, as
//! ranges in one concurrent interval tree per dictionary with its own mutex,
//! queues pending requests and retries them in order on release, and escalates
//! in the background at a threshold below the limit. Here points (the common
//! case) and ranges are kept apart, one mutex serves all dictionaries (the
//! deadlock graph and the memory limit are global anyway), there is no queue
//! (all waiters of a dictionary are woken and retry, so a writer can be
//! overtaken by later readers until its timeout), and escalation runs in the
//! requesting thread only when a grant would pass the limit.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::tree::Comparator;

/// Bytes charged for each lock on top of its key bytes.
const LOCK_OVERHEAD: usize = 64;

/// A fixed hasher, so runs are repeatable (as in the cache).
type Map<K, V> = HashMap<K, V, BuildHasherDefault<DefaultHasher>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockMode {
    Read,
    Write,
}

impl LockMode {
    /// Whether holding `self` gives what a request for `wanted` asks.
    fn covers(self, wanted: LockMode) -> bool {
        self == LockMode::Write || wanted == LockMode::Read
    }
}

/// One end of a locked range; ranges are inclusive at both ends.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LockKey<'a> {
    Min,
    Key(&'a [u8]),
    Max,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LockError {
    /// Waited `timeout` and the conflicting lock was still held; `holder` is one owner in the way.
    Timeout { holder: u64 },
    /// Waiting would close a cycle in the wait-for graph; the requester is the victim.
    /// `cycle` starts with the requester; each owner waits for the next, the last for the first.
    Deadlock { cycle: Vec<u64> },
    /// Lock memory is at its limit even after escalation.
    MemoryFull { used: usize, limit: usize },
}

/// Counters of the transaction lock manager.
#[derive(Clone, Copy, Debug, Default)]
pub struct LockStats {
    /// Locks held now (a key locked by two readers counts twice).
    pub locks: usize,
    /// Bytes charged for the locks held now (key bytes plus a fixed overhead per lock).
    pub bytes: usize,
    /// Lock requests that had to wait at least once.
    pub waits: u64,
    /// Lock requests that failed because their timeout passed.
    pub timeouts: u64,
    /// Lock requests that failed because waiting would have closed a deadlock cycle.
    pub deadlocks: u64,
    /// Times the locks were escalated (merged into ranges) to stay under the memory limit.
    pub escalations: u64,
}

/// An owned range end.
#[derive(Clone, Debug)]
enum End {
    Min,
    Key(Arc<[u8]>),
    Max,
}

impl End {
    fn new(k: LockKey<'_>) -> End {
        match k {
            LockKey::Min => End::Min,
            LockKey::Key(k) => End::Key(Arc::from(k)),
            LockKey::Max => End::Max,
        }
    }

    fn key(&self) -> LockKey<'_> {
        match self {
            End::Min => LockKey::Min,
            End::Key(k) => LockKey::Key(k),
            End::Max => LockKey::Max,
        }
    }

    fn len(&self) -> usize {
        if let End::Key(k) = self {
            k.len()
        } else {
            0
        }
    }
}

fn cmp_key(order: Comparator, a: LockKey<'_>, b: LockKey<'_>) -> Ordering {
    use LockKey::*;
    match (a, b) {
        (Min, Min) | (Max, Max) => Ordering::Equal,
        (Min, _) | (_, Max) => Ordering::Less,
        (_, Min) | (Max, _) => Ordering::Greater,
        (Key(a), Key(b)) => order(a, b),
    }
}

/// Whether `[alo, ahi]` and `[blo, bhi]` share a key.
fn overlaps(order: Comparator, alo: LockKey, ahi: LockKey, blo: LockKey, bhi: LockKey) -> bool {
    cmp_key(order, alo, bhi) != Ordering::Greater && cmp_key(order, blo, ahi) != Ordering::Greater
}

/// Whether `[olo, ohi]` contains `[lo, hi]`.
fn contains(order: Comparator, olo: LockKey, ohi: LockKey, lo: LockKey, hi: LockKey) -> bool {
    cmp_key(order, olo, lo) != Ordering::Greater && cmp_key(order, hi, ohi) != Ordering::Greater
}

/// The key of `[lo, hi]` if it is a single key: a point lock.
fn point_key<'a>(order: Comparator, lo: LockKey<'a>, hi: LockKey<'_>) -> Option<&'a [u8]> {
    match (lo, hi) {
        (LockKey::Key(a), LockKey::Key(b)) if order(a, b) == Ordering::Equal => Some(a),
        _ => None,
    }
}

/// A key with its comparator, so the point map is ordered by the dictionary's
/// order and can be searched with a borrowed key (`KeyRef`) through `dyn KeyView`.
trait KeyView {
    fn view(&self) -> (&[u8], Comparator);
}

struct PointKey {
    key: Arc<[u8]>,
    order: Comparator,
}

struct KeyRef<'a> {
    key: &'a [u8],
    order: Comparator,
}

impl KeyView for PointKey {
    fn view(&self) -> (&[u8], Comparator) {
        (&self.key, self.order)
    }
}

impl KeyView for KeyRef<'_> {
    fn view(&self) -> (&[u8], Comparator) {
        (self.key, self.order)
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, order) = self.view();
        order(a, other.view().0)
    }
}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for dyn KeyView + '_ {}

impl<'a> Borrow<dyn KeyView + 'a> for PointKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl Ord for PointKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self as &dyn KeyView).cmp(other as &dyn KeyView)
    }
}

impl PartialOrd for PointKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PointKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PointKey {}

/// The owners holding one key, each once.
type Holders = Vec<(u64, LockMode)>;

struct RangeLock {
    lo: End,
    hi: End,
    owner: u64,
    mode: LockMode,
}

impl RangeLock {
    fn bytes(&self) -> usize {
        LOCK_OVERHEAD + self.lo.len() + self.hi.len()
    }
}

/// The locks of one dictionary.
struct DictLocks {
    order: Comparator,
    points: BTreeMap<PointKey, Holders>,
    ranges: Vec<RangeLock>,
    /// Threads waiting for a lock of this dictionary sleep here.
    wake: Arc<Condvar>,
    /// How many are asleep: the entry is kept while any is.
    sleepers: usize,
}

impl DictLocks {
    fn new(order: Comparator) -> DictLocks {
        DictLocks {
            order,
            points: BTreeMap::new(),
            ranges: Vec::new(),
            wake: Arc::new(Condvar::new()),
            sleepers: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.points.is_empty() && self.ranges.is_empty()
    }

    fn get_point(&self, key: &[u8]) -> Option<&Holders> {
        self.points.get(&KeyRef { key, order: self.order } as &dyn KeyView)
    }

    fn get_point_mut(&mut self, key: &[u8]) -> Option<&mut Holders> {
        self.points.get_mut(&KeyRef { key, order: self.order } as &dyn KeyView)
    }

    /// The point locks inside `[lo, hi]`.
    fn points_in(&self, lo: LockKey, hi: LockKey) -> impl Iterator<Item = (&PointKey, &Holders)> + '_ {
        fn probe(k: LockKey<'_>, order: Comparator) -> Option<KeyRef<'_>> {
            if let LockKey::Key(key) = k {
                Some(KeyRef { key, order })
            } else {
                None
            }
        }
        fn bound<'r>(r: &'r Option<KeyRef>) -> Bound<&'r (dyn KeyView + 'r)> {
            r.as_ref().map_or(Bound::Unbounded, |r| Bound::Included(r as &dyn KeyView))
        }
        let (lo_ref, hi_ref) = (probe(lo, self.order), probe(hi, self.order));
        let empty = matches!(lo, LockKey::Max) || matches!(hi, LockKey::Min);
        let range = (!empty).then(|| self.points.range::<dyn KeyView, _>((bound(&lo_ref), bound(&hi_ref))));
        range.into_iter().flatten()
    }

    /// Whether `owner` already holds a lock covering `[lo, hi]` in `mode`.
    fn covered(&self, owner: u64, lo: LockKey, hi: LockKey, mode: LockMode) -> bool {
        if let Some(key) = point_key(self.order, lo, hi) {
            let holders = self.get_point(key).map_or(&[][..], |h| &h[..]);
            if holders.iter().any(|&(o, m)| o == owner && m.covers(mode)) {
                return true;
            }
        }
        self.ranges.iter().any(|r| {
            r.owner == owner && r.mode.covers(mode) && contains(self.order, r.lo.key(), r.hi.key(), lo, hi)
        })
    }

    /// The other owners whose locks conflict with `[lo, hi]` in `mode`.
    fn blockers(&self, owner: u64, lo: LockKey, hi: LockKey, mode: LockMode) -> Vec<u64> {
        let mut out = Vec::new();
        let mut add = |o: u64, m: LockMode| {
            let conflict = o != owner && (m == LockMode::Write || mode == LockMode::Write);
            if conflict && !out.contains(&o) {
                out.push(o);
            }
        };
        for (_, holders) in self.points_in(lo, hi) {
            holders.iter().for_each(|&(o, m)| add(o, m));
        }
        for r in &self.ranges {
            if overlaps(self.order, r.lo.key(), r.hi.key(), lo, hi) {
                add(r.owner, r.mode);
            }
        }
        out
    }

    /// Merges runs of one owner's consecutive locks into ranges (see the
    /// module comment). Returns whether anything merged.
    fn escalate(&mut self) -> bool {
        struct Item {
            lo: End,
            hi: End,
            owner: u64,
            mode: LockMode,
            range: Option<usize>,
        }
        let order = self.order;
        let mut items = Vec::new();
        for (pk, holders) in &self.points {
            for &(owner, mode) in holders {
                let end = End::Key(pk.key.clone());
                items.push(Item { lo: end.clone(), hi: end, owner, mode, range: None });
            }
        }
        for (i, r) in self.ranges.iter().enumerate() {
            let (lo, hi) = (r.lo.clone(), r.hi.clone());
            items.push(Item { lo, hi, owner: r.owner, mode: r.mode, range: Some(i) });
        }
        items.sort_by(|a, b| {
            cmp_key(order, a.lo.key(), b.lo.key()).then_with(|| cmp_key(order, a.hi.key(), b.hi.key()))
        });
        // Runs to merge: items [i, j), the span's hi, the mode.
        let mut runs: Vec<(usize, usize, End, LockMode)> = Vec::new();
        let mut max_hi: Option<End> = None; // the largest hi of the items before `i`
        let mut i = 0;
        while i < items.len() {
            let (mut j, mut hi, mut mode) = (i + 1, items[i].hi.clone(), items[i].mode);
            while j < items.len() && items[j].owner == items[i].owner {
                if cmp_key(order, items[j].hi.key(), hi.key()) == Ordering::Greater {
                    hi = items[j].hi.clone();
                }
                if items[j].mode == LockMode::Write {
                    mode = LockMode::Write;
                }
                j += 1;
            }
            let clear_before =
                max_hi.as_ref().is_none_or(|m| cmp_key(order, m.key(), items[i].lo.key()) == Ordering::Less);
            let clear_after =
                j == items.len() || cmp_key(order, items[j].lo.key(), hi.key()) == Ordering::Greater;
            let next_max = match max_hi {
                Some(m) if cmp_key(order, m.key(), hi.key()) == Ordering::Greater => m,
                _ => hi.clone(),
            };
            if j - i >= 2 && clear_before && clear_after {
                runs.push((i, j, hi, mode));
            }
            max_hi = Some(next_max);
            i = j;
        }
        if runs.is_empty() {
            return false;
        }
        let mut drop_range = vec![false; self.ranges.len()];
        let mut merged = Vec::with_capacity(runs.len());
        for (i, j, hi, mode) in runs {
            let owner = items[i].owner;
            for item in &items[i..j] {
                match (item.range, &item.lo) {
                    (Some(r), _) => drop_range[r] = true,
                    (None, End::Key(key)) => {
                        let holders = self.get_point_mut(key).expect("escalated point is held");
                        holders.retain(|h| h.0 != owner);
                        if holders.is_empty() {
                            self.points.remove(&KeyRef { key, order } as &dyn KeyView);
                        }
                    }
                    (None, _) => unreachable!("a point lock has a key"),
                }
            }
            merged.push(RangeLock { lo: items[i].lo.clone(), hi, owner, mode });
        }
        let mut index = 0;
        self.ranges.retain(|_| {
            index += 1;
            !drop_range[index - 1]
        });
        self.ranges.extend(merged);
        true
    }
}

/// What an owner holds in one dictionary.
#[derive(Default)]
struct Held {
    /// The point keys (the point map's own key bytes).
    points: Vec<Arc<[u8]>>,
    /// How many range locks.
    ranges: usize,
}

/// A sleeping owner: its pending request and the owners last seen blocking it.
struct Waiter {
    dict: u64,
    lo: End,
    hi: End,
    mode: LockMode,
    blockers: Vec<u64>,
}

struct Request<'a> {
    dict: u64,
    owner: u64,
    lo: LockKey<'a>,
    hi: LockKey<'a>,
    mode: LockMode,
}

enum Attempt {
    Granted,
    Blocked(Vec<u64>),
    Full,
}

#[derive(Default)]
struct State {
    dicts: Map<u64, DictLocks>,
    /// owner -> dictionary -> what it holds there.
    held: Map<u64, Map<u64, Held>>,
    /// The wait-for graph.
    waiting: Map<u64, Waiter>,
    stats: LockStats,
}

impl State {
    fn try_grant(&mut self, limit: usize, order: Comparator, r: &Request) -> Attempt {
        for round in 0..2 {
            let d = self.dicts.entry(r.dict).or_insert_with(|| DictLocks::new(order));
            if d.covered(r.owner, r.lo, r.hi, r.mode) {
                return Attempt::Granted;
            }
            let blockers = d.blockers(r.owner, r.lo, r.hi, r.mode);
            if !blockers.is_empty() {
                return Attempt::Blocked(blockers);
            }
            let need = Self::cost(d, r);
            if self.stats.bytes + need <= limit {
                self.insert(r);
                return Attempt::Granted;
            }
            if round == 0 {
                self.escalate();
            }
        }
        Attempt::Full
    }

    /// Bytes granting `r` adds: nothing for an upgrade in place, less the
    /// owner's ranges the new range absorbs.
    fn cost(d: &DictLocks, r: &Request) -> usize {
        if let Some(key) = point_key(d.order, r.lo, r.hi) {
            let holders = d.get_point(key).map_or(&[][..], |h| &h[..]);
            return if holders.iter().any(|h| h.0 == r.owner) { 0 } else { LOCK_OVERHEAD + key.len() };
        }
        let new = LOCK_OVERHEAD + End::new(r.lo).len() + End::new(r.hi).len();
        let absorbed: usize =
            d.ranges.iter().filter(|x| Self::absorbs(d.order, r, x)).map(RangeLock::bytes).sum();
        new.saturating_sub(absorbed)
    }

    fn absorbs(order: Comparator, r: &Request, x: &RangeLock) -> bool {
        x.owner == r.owner && r.mode.covers(x.mode) && contains(order, r.lo, r.hi, x.lo.key(), x.hi.key())
    }

    fn insert(&mut self, r: &Request) {
        let d = self.dicts.get_mut(&r.dict).expect("the request's dictionary");
        let held = self.held.entry(r.owner).or_default().entry(r.dict).or_default();
        let stats = &mut self.stats;
        let order = d.order;
        if let Some(key) = point_key(order, r.lo, r.hi) {
            let probe = KeyRef { key, order };
            let bounds = (Bound::Included(&probe as &dyn KeyView), Bound::Included(&probe as &dyn KeyView));
            if let Some((pk, holders)) = d.points.range_mut::<dyn KeyView, _>(bounds).next() {
                if let Some(h) = holders.iter_mut().find(|h| h.0 == r.owner) {
                    h.1 = r.mode; // an upgrade
                    return;
                }
                debug_assert!(holders.iter().all(|h| h.1 == LockMode::Read) && r.mode == LockMode::Read);
                holders.push((r.owner, r.mode));
                held.points.push(pk.key.clone());
                stats.bytes += LOCK_OVERHEAD + pk.key.len(); // the map's key: it may differ in bytes
            } else {
                let key: Arc<[u8]> = Arc::from(key);
                stats.bytes += LOCK_OVERHEAD + key.len();
                held.points.push(key.clone());
                d.points.insert(PointKey { key, order }, vec![(r.owner, r.mode)]);
            }
        } else {
            d.ranges.retain(|x| {
                let absorb = Self::absorbs(order, r, x);
                if absorb {
                    stats.bytes -= x.bytes();
                    stats.locks -= 1;
                    held.ranges -= 1;
                }
                !absorb
            });
            let lock = RangeLock { lo: End::new(r.lo), hi: End::new(r.hi), owner: r.owner, mode: r.mode };
            stats.bytes += lock.bytes();
            d.ranges.push(lock);
            held.ranges += 1;
        }
        stats.locks += 1;
    }

    fn escalate(&mut self) {
        self.stats.escalations += 1;
        for (&id, d) in self.dicts.iter_mut() {
            if !d.escalate() {
                continue;
            }
            // Rebuild what each owner holds in this dictionary.
            for per_dict in self.held.values_mut() {
                per_dict.remove(&id);
            }
            for (pk, holders) in &d.points {
                for &(owner, _) in holders {
                    let h = self.held.entry(owner).or_default().entry(id).or_default();
                    h.points.push(pk.key.clone());
                }
            }
            for r in &d.ranges {
                self.held.entry(r.owner).or_default().entry(id).or_default().ranges += 1;
            }
        }
        self.held.retain(|_, per_dict| !per_dict.is_empty());
        (self.stats.locks, self.stats.bytes) = self.recount();
    }

    /// The number of locks and their bytes, counted afresh.
    fn recount(&self) -> (usize, usize) {
        let (mut locks, mut bytes) = (0, 0);
        for d in self.dicts.values() {
            for (pk, holders) in &d.points {
                locks += holders.len();
                bytes += holders.len() * (LOCK_OVERHEAD + pk.key.len());
            }
            locks += d.ranges.len();
            bytes += d.ranges.iter().map(RangeLock::bytes).sum::<usize>();
        }
        (locks, bytes)
    }

    /// A cycle of the wait-for graph through `me`, blocked by `blockers`:
    /// `[me, ..., w]` where each waits for the next and `w` for `me`.
    fn find_cycle(&mut self, me: u64, blockers: &[u64]) -> Option<Vec<u64>> {
        let mut parent: Map<u64, u64> = Map::default();
        let mut stack = Vec::new();
        for &b in blockers {
            parent.insert(b, me);
            stack.push(b);
        }
        while let Some(w) = stack.pop() {
            let Some(waiter) = self.waiting.get_mut(&w) else { continue };
            let Some(d) = self.dicts.get(&waiter.dict) else { continue };
            waiter.blockers = d.blockers(w, waiter.lo.key(), waiter.hi.key(), waiter.mode);
            for &b in &waiter.blockers {
                if b == me {
                    let mut cycle = vec![w];
                    while let Some(&p) = parent.get(cycle.last().unwrap()).filter(|&&p| p != me) {
                        cycle.push(p);
                    }
                    cycle.push(me);
                    cycle.reverse();
                    return Some(cycle);
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(b) {
                    e.insert(w);
                    stack.push(b);
                }
            }
        }
        None
    }

    /// `owner` stopped waiting (or never did): drop its edges and an empty dictionary entry.
    fn done(&mut self, owner: u64, dict: u64) {
        self.waiting.remove(&owner);
        self.tidy(dict);
    }

    fn tidy(&mut self, dict: u64) {
        if self.dicts.get(&dict).is_some_and(|d| d.is_empty() && d.sleepers == 0) {
            self.dicts.remove(&dict);
        }
    }
}

/// The lock manager of one environment.
pub(crate) struct LockManager {
    limit: usize,
    state: Mutex<State>,
}

impl LockManager {
    pub(crate) fn new(limit_bytes: usize) -> LockManager {
        LockManager { limit: limit_bytes, state: Mutex::new(State::default()) }
    }

    /// Locks [lo, hi] of dictionary `dict` (compared with `cmp`; lo <= hi) for `owner` in `mode`.
    /// Granted at once unless another owner holds an overlapping lock and at least one of the two is Write.
    /// Re-requesting what the owner already covers is a cheap no-op. A Write request by an owner holding
    /// Read on the range is an upgrade (granted when no other owner overlaps).
    /// Otherwise it waits (blocking the calling thread) until granted or `timeout` passes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn acquire(
        &self,
        dict: u64,
        cmp: Comparator,
        owner: u64,
        lo: LockKey,
        hi: LockKey,
        mode: LockMode,
        timeout: Duration,
    ) -> Result<(), LockError> {
        assert!(owner != 0, "lock owner 0");
        assert!(cmp_key(cmp, lo, hi) != Ordering::Greater, "lock range with lo > hi");
        let deadline = Instant::now().checked_add(timeout);
        let req = Request { dict, owner, lo, hi, mode };
        let mut st = self.state.lock();
        let mut slept = false;
        loop {
            let blockers = match st.try_grant(self.limit, cmp, &req) {
                Attempt::Granted => {
                    st.done(owner, dict);
                    return Ok(());
                }
                Attempt::Full => {
                    st.done(owner, dict);
                    return Err(LockError::MemoryFull { used: st.stats.bytes, limit: self.limit });
                }
                Attempt::Blocked(blockers) => blockers,
            };
            if let Some(cycle) = st.find_cycle(owner, &blockers) {
                st.stats.deadlocks += 1;
                st.done(owner, dict);
                return Err(LockError::Deadlock { cycle });
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                st.stats.timeouts += 1;
                st.done(owner, dict);
                return Err(LockError::Timeout { holder: blockers[0] });
            }
            if !slept {
                debug_assert!(!st.waiting.contains_key(&owner), "owner {owner} makes two requests at once");
                st.stats.waits += 1;
                slept = true;
            }
            let waiter = st.waiting.entry(owner).or_insert_with(|| Waiter {
                dict,
                lo: End::new(lo),
                hi: End::new(hi),
                mode,
                blockers: Vec::new(),
            });
            waiter.blockers = blockers;
            let d = st.dicts.get_mut(&dict).expect("the request's dictionary");
            d.sleepers += 1;
            let wake = d.wake.clone();
            match deadline {
                Some(deadline) => drop(wake.wait_until(&mut st, deadline)),
                None => wake.wait(&mut st),
            }
            st.dicts.get_mut(&dict).expect("kept while asleep").sleepers -= 1;
        }
    }

    /// Releases every lock `owner` holds, in every dictionary, and wakes waiters. Idempotent.
    pub(crate) fn release_all(&self, owner: u64) {
        let mut st = self.state.lock();
        let Some(per_dict) = st.held.remove(&owner) else { return };
        for (id, held) in per_dict {
            let st = &mut *st;
            let d = st.dicts.get_mut(&id).expect("a held lock's dictionary");
            for key in held.points {
                let holders = d.get_point_mut(&key).expect("a held point");
                holders.retain(|h| h.0 != owner);
                if holders.is_empty() {
                    d.points.remove(&KeyRef { key: &key, order: d.order } as &dyn KeyView);
                }
                st.stats.locks -= 1;
                st.stats.bytes -= LOCK_OVERHEAD + key.len();
            }
            if held.ranges > 0 {
                d.ranges.retain(|r| {
                    if r.owner == owner {
                        st.stats.locks -= 1;
                        st.stats.bytes -= r.bytes();
                    }
                    r.owner != owner
                });
            }
            d.wake.notify_all();
            st.tidy(id);
        }
    }

    /// Drops every lock of dictionary `dict` (dictionary dropped); no-op if none.
    pub(crate) fn forget_dict(&self, dict: u64) {
        let mut st = self.state.lock();
        let st = &mut *st;
        let Some(d) = st.dicts.get_mut(&dict) else { return };
        let points = std::mem::take(&mut d.points);
        let ranges = std::mem::take(&mut d.ranges);
        d.wake.notify_all();
        let owners = points.values().flatten().map(|h| h.0).chain(ranges.iter().map(|r| r.owner));
        for owner in owners {
            if let Some(per_dict) = st.held.get_mut(&owner) {
                per_dict.remove(&dict);
                if per_dict.is_empty() {
                    st.held.remove(&owner);
                }
            }
        }
        (st.stats.locks, st.stats.bytes) = st.recount();
        st.tidy(dict);
    }

    pub(crate) fn stats(&self) -> LockStats {
        self.state.lock().stats
    }

    /// Panics unless every invariant of the module comment holds.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let st = self.state.lock();
        let mut from_dicts: Vec<(u64, u64, Vec<u8>)> = Vec::new(); // (owner, dict, key) of points
        for (&id, d) in &st.dicts {
            let o = d.order;
            assert!(!d.is_empty() || d.sleepers > 0, "empty dictionary entry {id} kept");
            for (pk, holders) in &d.points {
                assert!(!holders.is_empty());
                for (i, &(owner, mode)) in holders.iter().enumerate() {
                    assert!(holders[..i].iter().all(|h| h.0 != owner), "owner {owner} twice on a key");
                    assert!(holders.len() == 1 || mode == LockMode::Read, "write lock shared");
                    from_dicts.push((owner, id, pk.key.to_vec()));
                }
            }
            for (i, r) in d.ranges.iter().enumerate() {
                assert!(cmp_key(o, r.lo.key(), r.hi.key()) != Ordering::Greater, "range with lo > hi");
                assert!(point_key(o, r.lo.key(), r.hi.key()).is_none(), "a point kept as a range");
                let conflict = |owner: u64, mode: LockMode| {
                    owner != r.owner && (mode == LockMode::Write || r.mode == LockMode::Write)
                };
                for (_, holders) in d.points_in(r.lo.key(), r.hi.key()) {
                    assert!(!holders.iter().any(|h| conflict(h.0, h.1)), "range conflicts with a point");
                }
                for x in &d.ranges[..i] {
                    let overlap = overlaps(o, r.lo.key(), r.hi.key(), x.lo.key(), x.hi.key());
                    assert!(!(overlap && conflict(x.owner, x.mode)), "two ranges conflict");
                }
            }
        }
        let mut from_held: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        for (&owner, per_dict) in &st.held {
            assert!(!per_dict.is_empty());
            for (&id, h) in per_dict {
                assert!(!h.points.is_empty() || h.ranges > 0, "empty held entry");
                from_held.extend(h.points.iter().map(|k| (owner, id, k.to_vec())));
                let ranges =
                    st.dicts.get(&id).map_or(0, |d| d.ranges.iter().filter(|r| r.owner == owner).count());
                assert_eq!(ranges, h.ranges, "owner {owner}'s ranges in dictionary {id}");
            }
        }
        from_dicts.sort();
        from_held.sort();
        assert!(from_dicts == from_held, "held points differ from the dictionaries'");
        assert_eq!((st.stats.locks, st.stats.bytes), st.recount());
        assert!(st.stats.bytes <= self.limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;
    use LockKey::{Key, Max, Min};
    use LockMode::{Read, Write};

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    const NOW: Duration = Duration::ZERO;
    const LONG: Duration = Duration::from_secs(2);

    fn k(s: &str) -> LockKey<'_> {
        Key(s.as_bytes())
    }

    fn lock(m: &LockManager, owner: u64, lo: LockKey, hi: LockKey, mode: LockMode) -> Result<(), LockError> {
        let r = m.acquire(1, bytewise, owner, lo, hi, mode, NOW);
        m.check_invariants();
        r
    }

    fn timed_out(r: Result<(), LockError>) -> bool {
        matches!(r, Err(LockError::Timeout { .. }))
    }

    /// Waits until `n` requests have gone to sleep.
    fn until_waits(m: &LockManager, n: u64) {
        let start = Instant::now();
        while m.stats().waits < n {
            assert!(start.elapsed() < LONG, "nobody went to sleep");
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(20));
    }

    #[test]
    fn conflicts_on_points_and_ranges() {
        let m = LockManager::new(1 << 20);
        assert_eq!(lock(&m, 1, k("b"), k("b"), Read), Ok(()));
        assert_eq!(lock(&m, 2, k("b"), k("b"), Read), Ok(()));
        assert!(timed_out(lock(&m, 3, k("b"), k("b"), Write)));
        assert_eq!(lock(&m, 3, k("x"), k("x"), Write), Ok(()));
        assert_eq!(lock(&m, 1, k("x"), k("x"), Read), Err(LockError::Timeout { holder: 3 }));
        assert_eq!(lock(&m, 1, k("x"), k("x"), Write), Err(LockError::Timeout { holder: 3 }));
        assert_eq!(lock(&m, 1, k("a"), k("c"), Read), Ok(()), "read range over read points");
        assert_eq!(lock(&m, 2, k("a"), k("c"), Write), Err(LockError::Timeout { holder: 1 }));
        // Ranges: inclusive ends, Min and Max.
        assert_eq!(lock(&m, 4, k("d"), k("f"), Write), Ok(()));
        assert_eq!(lock(&m, 5, k("e"), k("e"), Read), Err(LockError::Timeout { holder: 4 }));
        assert_eq!(lock(&m, 5, k("f"), k("g"), Read), Err(LockError::Timeout { holder: 4 }));
        assert_eq!(lock(&m, 5, k("c1"), k("d"), Write), Err(LockError::Timeout { holder: 4 }));
        assert_eq!(lock(&m, 5, k("c1"), k("c9"), Write), Ok(()), "between ranges");
        assert_eq!(lock(&m, 5, k("f0"), k("g"), Write), Ok(()), "after a range's end");
        assert_eq!(lock(&m, 6, k("y"), Max, Write), Ok(()));
        assert_eq!(lock(&m, 7, Max, Max, Read), Err(LockError::Timeout { holder: 6 }));
        assert_eq!(lock(&m, 7, k("zzz"), k("zzz"), Read), Err(LockError::Timeout { holder: 6 }));
        assert_eq!(lock(&m, 7, k("x0"), k("x9"), Write), Ok(()), "just below [y, Max]");
        assert!(timed_out(lock(&m, 7, Min, Max, Read)));
        assert_eq!(lock(&m, 8, Min, Min, Write), Ok(()));
        assert_eq!(lock(&m, 9, Min, k("a"), Read), Err(LockError::Timeout { holder: 8 }));
        assert_eq!(m.acquire(2, bytewise, 9, Min, Max, Write, NOW), Ok(()), "another dictionary");
        assert_eq!(m.stats().timeouts, 11);
        let locks = m.stats().locks;
        assert_eq!(lock(&m, 4, k("e"), k("e"), Read), Ok(()), "covered: a no-op");
        assert_eq!(lock(&m, 1, k("a"), k("b"), Read), Ok(()), "covered: a no-op");
        assert_eq!(m.stats().locks, locks);
        m.forget_dict(1);
        m.check_invariants();
        assert_eq!(lock(&m, 5, Min, Max, Write), Ok(()), "dictionary forgotten");
        assert!(timed_out(m.acquire(2, bytewise, 5, k("a"), k("a"), Read, NOW)));
        for owner in 1..=9 {
            m.release_all(owner);
            m.release_all(owner);
            m.check_invariants();
        }
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
        assert!(m.state.lock().dicts.is_empty());
    }

    #[test]
    fn waiter_is_granted_when_the_holder_releases() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("k"), k("k"), Write).unwrap();
        lock(&m, 2, k("m"), k("m"), Read).unwrap();
        let waiter = |owner: u64, lo: &'static str, hi: &'static str| {
            let m = m.clone();
            thread::spawn(move || {
                let start = Instant::now();
                let r = m.acquire(1, bytewise, owner, k(lo), k(hi), Write, LONG);
                (r, start.elapsed())
            })
        };
        let point = waiter(3, "k", "k");
        let range = waiter(4, "a", "z");
        until_waits(&m, 2);
        assert_eq!(m.state.lock().waiting[&4].blockers.len(), 2);
        m.release_all(1);
        let (r, took) = point.join().unwrap();
        assert_eq!(r, Ok(()));
        assert!(took < Duration::from_secs(1), "took {took:?}");
        m.release_all(2);
        m.release_all(3);
        let (r, took) = range.join().unwrap();
        assert_eq!(r, Ok(()));
        assert!(took < Duration::from_secs(1), "took {took:?}");
        m.check_invariants();
        assert!(m.state.lock().waiting.is_empty());
        assert_eq!(m.stats().waits, 2);
    }

    #[test]
    fn timeout_after_about_the_timeout() {
        let m = LockManager::new(1 << 20);
        lock(&m, 1, k("k"), k("k"), Write).unwrap();
        let start = Instant::now();
        let r = m.acquire(1, bytewise, 2, k("a"), k("z"), Read, Duration::from_millis(100));
        let took = start.elapsed();
        assert_eq!(r, Err(LockError::Timeout { holder: 1 }));
        assert!(took >= Duration::from_millis(100) && took < Duration::from_secs(1), "took {took:?}");
        let s = m.stats();
        assert_eq!((s.waits, s.timeouts, s.locks), (1, 1, 1));
        assert!(m.state.lock().waiting.is_empty());
        m.check_invariants();
    }

    #[test]
    fn deadlock_of_two_owners() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("x"), k("x"), Write).unwrap();
        lock(&m, 2, k("y"), k("y"), Write).unwrap();
        let a = {
            let m = m.clone();
            thread::spawn(move || m.acquire(1, bytewise, 1, k("y"), k("y"), Write, LONG))
        };
        until_waits(&m, 1);
        let start = Instant::now();
        let r = m.acquire(1, bytewise, 2, k("x"), k("x"), Read, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![2, 1] }));
        assert!(start.elapsed() < Duration::from_millis(500));
        assert!(!m.state.lock().waiting.contains_key(&2));
        m.release_all(2);
        assert_eq!(a.join().unwrap(), Ok(()));
        assert_eq!(m.stats().deadlocks, 1);
        m.check_invariants();
    }

    #[test]
    fn deadlock_of_three_owners() {
        let m = Arc::new(LockManager::new(1 << 20));
        for (owner, key) in [(1, "x"), (2, "y"), (3, "z")] {
            lock(&m, owner, k(key), k(key), Write).unwrap();
        }
        let wait = |owner: u64, key: &'static str| {
            let m = m.clone();
            thread::spawn(move || m.acquire(1, bytewise, owner, k(key), k(key), Write, LONG))
        };
        let a = wait(1, "y");
        until_waits(&m, 1);
        let b = wait(2, "z");
        until_waits(&m, 2);
        let r = m.acquire(1, bytewise, 3, k("w"), k("x"), Write, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![3, 1, 2] }));
        m.release_all(3);
        assert_eq!(b.join().unwrap(), Ok(()));
        m.release_all(2);
        assert_eq!(a.join().unwrap(), Ok(()));
        m.check_invariants();
        assert_eq!(m.stats().deadlocks, 1);
    }

    #[test]
    fn upgrades() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("k"), k("k"), Read).unwrap();
        let before = m.stats();
        assert_eq!(lock(&m, 1, k("k"), k("k"), Write), Ok(()), "sole reader upgrades");
        assert_eq!(lock(&m, 2, k("k"), k("k"), Read), Err(LockError::Timeout { holder: 1 }));
        assert_eq!((m.stats().locks, m.stats().bytes), (before.locks, before.bytes));
        lock(&m, 1, k("a"), k("c"), Read).unwrap();
        assert_eq!(lock(&m, 1, k("a"), k("c"), Write), Ok(()), "range upgrade replaces the read range");
        assert_eq!(m.state.lock().dicts[&1].ranges.len(), 1);
        // Two readers: an upgrade waits for the other; both upgrading is a deadlock.
        lock(&m, 1, k("m"), k("m"), Read).unwrap();
        lock(&m, 2, k("m"), k("m"), Read).unwrap();
        assert_eq!(lock(&m, 1, k("m"), k("m"), Write), Err(LockError::Timeout { holder: 2 }));
        let a = {
            let m = m.clone();
            thread::spawn(move || m.acquire(1, bytewise, 1, k("m"), k("m"), Write, LONG))
        };
        until_waits(&m, 1);
        let r = m.acquire(1, bytewise, 2, k("m"), k("m"), Write, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![2, 1] }));
        m.release_all(2);
        assert_eq!(a.join().unwrap(), Ok(()));
        assert_eq!(lock(&m, 2, k("m"), k("m"), Read), Err(LockError::Timeout { holder: 1 }));
        m.check_invariants();
    }

    fn key(i: u32) -> [u8; 8] {
        let mut b = [b'0'; 8];
        b[4..].copy_from_slice(&i.to_be_bytes());
        b
    }

    #[test]
    fn escalation_keeps_memory_bounded() {
        let limit = 50 * (LOCK_OVERHEAD + 8);
        let m = LockManager::new(limit);
        for i in (0..1000).step_by(2) {
            let kb = key(i);
            assert_eq!(lock(&m, 1, Key(&kb), Key(&kb), if i % 10 == 0 { Write } else { Read }), Ok(()));
        }
        let s = m.stats();
        assert!(s.escalations >= 1 && s.bytes <= limit && s.locks < 50, "{s:?}");
        let (k1, k999, k2000) = (key(1), key(999), key(2000));
        assert_eq!(lock(&m, 2, Key(&k1), Key(&k1), Read), Err(LockError::Timeout { holder: 1 }));
        assert_eq!(lock(&m, 2, Key(&k999), Key(&k999), Read), Ok(()), "after the owner's last key");
        assert_eq!(lock(&m, 2, Key(&k2000), Key(&k2000), Write), Ok(()));
        m.release_all(1);
        m.release_all(2);
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
        m.check_invariants();
    }

    #[test]
    fn memory_full_when_nothing_merges() {
        let limit = 10 * (LOCK_OVERHEAD + 8);
        let m = LockManager::new(limit);
        for i in 0..10 {
            let kb = key(i);
            assert_eq!(lock(&m, 1 + u64::from(i % 2), Key(&kb), Key(&kb), Write), Ok(()));
        }
        let kb = key(10);
        let full = Err(LockError::MemoryFull { used: limit, limit });
        assert_eq!(lock(&m, 1, Key(&kb), Key(&kb), Write), full);
        assert_eq!(lock(&m, 3, Key(&kb), Key(&kb), Read), full, "the failed request holds nothing");
        assert_eq!(m.stats().locks, 10);
        assert_eq!(m.stats().escalations, 2);
        // Room again once owner 2 is gone.
        m.release_all(2);
        assert_eq!(lock(&m, 1, Key(&kb), Key(&kb), Write), Ok(()));
        m.release_all(1);
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
        m.check_invariants();
    }

    /// xorshift64*: tests need no random-number crate.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % n
        }
    }

    #[test]
    fn randomized_stress() {
        let m = Arc::new(LockManager::new(40 * (LOCK_OVERHEAD + 2)));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let m = m.clone();
                thread::spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1) * 0x1234_5678);
                    let owners = [t * 10 + 1, t * 10 + 2, t * 10 + 3];
                    for _ in 0..2000 {
                        let owner = owners[rng.below(3) as usize];
                        let dict = 1 + rng.below(2);
                        let (a, b) =
                            ((rng.below(60) as u16).to_be_bytes(), (rng.below(60) as u16).to_be_bytes());
                        let (a, b) = if a <= b { (a, b) } else { (b, a) };
                        let (lo, hi) = match rng.below(10) {
                            0..=6 => (Key(&a[..]), Key(&a[..])),
                            7 => (Key(&a[..]), Key(&b[..])),
                            8 => (Min, Key(&a[..])),
                            _ => (Key(&b[..]), Max),
                        };
                        let mode = if rng.below(2) == 0 { Read } else { Write };
                        match rng.below(20) {
                            0..=2 => m.release_all(owner),
                            3 if t == 0 => m.forget_dict(2),
                            _ => {
                                let timeout = Duration::from_millis(rng.below(4));
                                match m.acquire(dict, bytewise, owner, lo, hi, mode, timeout) {
                                    Ok(()) if dict == 1 => {
                                        let st = m.state.lock();
                                        assert!(
                                            st.dicts[&1].covered(owner, lo, hi, mode),
                                            "granted, not held"
                                        );
                                    }
                                    Err(LockError::Deadlock { cycle }) => {
                                        assert_eq!(cycle[0], owner);
                                        m.release_all(owner); // the victim aborts
                                    }
                                    _ => {}
                                }
                            }
                        }
                        m.check_invariants();
                    }
                    owners.iter().for_each(|&o| m.release_all(o));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        m.check_invariants();
        let s = m.stats();
        assert_eq!((s.locks, s.bytes), (0, 0));
        assert!(s.waits > 0 && s.escalations > 0, "{s:?}");
        let st = m.state.lock();
        assert!(st.dicts.is_empty() && st.held.is_empty() && st.waiting.is_empty());
    }

    #[test]
    fn send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LockManager>();
    }
}
