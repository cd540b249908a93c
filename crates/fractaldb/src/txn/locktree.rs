//! The lock manager: per-dictionary range locks owned by transactions.
//!
//! A lock covers an inclusive key range `[lo, hi]` of one dictionary (an end
//! may be `Min` or `Max`) in `Read` (shared) or `Write` (exclusive) mode and is
//! owned by a transaction until `release_all` (commit or abort). The model is
//! TokuDB's lock tree: a transaction locks each key it writes (point locks)
//! and, when serializable, the ranges it reads.
//!
//! **Structure.** One mutex guards all state. Per dictionary, `DictLocks` keeps
//! point locks (one key: the overwhelming case) in a `BTreeMap` ordered by the
//! dictionary's comparator, each key with its owners, and true range locks
//! (range scans, escalation) in a `Vec` scanned linearly, as they are few. A
//! point request is one map lookup plus the range scan; a range request walks
//! the points inside it plus the range scan. Per owner, `held` lists its point
//! keys and counts its ranges in each dictionary, so `release_all` costs what
//! the owner holds.
//!
//! **Invariants** (`check_invariants`): overlapping locks of different owners
//! are both `Read`; an owner appears once per point key; a range has `lo <= hi`
//! and is not a single key; `held`, `locks` and `bytes` agree with a recount;
//! `bytes <= limit`.
//!
//! **Waiting and deadlocks.** A conflicting request sleeps on a condition
//! variable of its own (without the mutex) and retries on every wake-up.
//! Waiters stand in line (`Waiter::seq`, the order they first slept):
//! `release_all`, in each dictionary it touches, goes through the waiters
//! the releasing owner blocked in that order, grants each what it waits for
//! if nothing else blocks it, and wakes only those (`State::hand_over`), so
//! many threads queued on a few hot keys do not all wake at every release
//! and none is overtaken by a later request; `forget_dict` wakes every
//! waiter of the dictionary. The
//! wait-for graph, `waiting`, holds each sleeping owner's request and blockers.
//! Before sleeping and after every wake-up the requester follows the edges from
//! its blockers, recomputing each waiter's edges from its request on the way, so
//! no stale edge (a blocker released since) makes a false cycle and no missing
//! one (a lock granted since over a waiter's range) hides a true one. Reaching
//! the requester fails it with `Deadlock`: the owner closing a cycle is the
//! victim. An owner makes one request at a time.
//!
//! **Memory and escalation.** A lock is charged `LOCK_OVERHEAD` plus its key
//! bytes (a key two readers lock is charged twice). When a grant would pass the
//! limit, every dictionary is escalated: its locks are sorted by `(lo, hi)` and
//! each run of two or more consecutive locks of one owner whose span `[first
//! lo, largest hi]` overlaps no other owner's lock becomes one range over that
//! span, `Write` if any lock of the run is. So an escalated lock covers only
//! keys between the owner's own locks, and a transaction writing many
//! neighbouring keys ends up with one range, as in TokuDB. If the grant still
//! does not fit it fails with `MemoryFull`, changing nothing. Escalation only
//! widens locks: the price of bounded memory is that requests for keys in the
//! gaps now wait.
//!
//! **Differences from TokuDB.** TokuDB keeps every lock, points included, as a
//! range in one concurrent interval tree per dictionary, each tree with its own
//! mutex, and keeps a list of pending requests that a release retries in order.
//! Here points and ranges are kept apart (points are cheap), one mutex serves
//! all dictionaries (the wait-for graph and the memory limit are global anyway),
//! and the line is kept only among waiters: a new read request compatible
//! with the holders is granted even while a writer waits, so a writer can
//! be overtaken by later readers until its timeout. Escalation runs in the
//! requesting thread, only when a grant would pass the limit.

use std::cmp::Ordering;
use std::collections::btree_map::{BTreeMap, Entry as BEntry};
use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::tree::Comparator;

/// Bytes charged for each lock on top of its key bytes: what a point lock
/// really costs (its share of a B-tree node, the key's `Arc` header, the
/// holder list, the owner's list entry); see docs/benchmarks.md, "Engine
/// constants", for the measurement.
const LOCK_OVERHEAD: usize = 160;

/// The maps of owners and dictionaries, keyed by the engine's own ids
/// (transaction ids, file ids): a fixed hasher, so runs are repeatable,
/// and a cheap one (`IdHasher`).
type Map<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Hashes a u64 id with one multiplication by 2^64 / phi (Fibonacci
/// hashing): every bit of the id reaches the high bits the table's
/// control bytes use, and consecutive ids spread over the low bits its
/// buckets use. SipHash (the default) cost several times more on every
/// lock and release, and guards against chosen keys, which engine ids are
/// not. Anything but a u64 is folded in bytewise.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

const PHI64: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(PHI64);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(PHI64);
    }
}

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

    /// Whether two owners' locks in these modes conflict where they overlap.
    fn conflicts(self, other: LockMode) -> bool {
        self == LockMode::Write || other == LockMode::Write
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
    /// Autocommit writes that took no key locks (their dictionary had no
    /// locks and no one wanting one: `LockManager::try_enter_bulk`).
    pub bulk_writes: u64,
}

/// An owned range end.
#[derive(Clone, Debug)]
enum End {
    Min,
    Key(Arc<[u8]>),
    Max,
}

/// One end of a lock as introspection shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockEnd {
    /// Below every key.
    Min,
    Key(Vec<u8>),
    /// Above every key.
    Max,
}

/// A lock held or requested, copied out of the lock manager.
#[derive(Clone, Debug)]
pub(crate) struct LockView {
    pub dict: u64,
    pub owner: u64,
    pub lo: LockEnd,
    pub hi: LockEnd,
    pub mode: LockMode,
}

impl End {
    fn view(&self) -> LockEnd {
        match self {
            End::Min => LockEnd::Min,
            End::Key(k) => LockEnd::Key(k.to_vec()),
            End::Max => LockEnd::Max,
        }
    }

    fn new(k: LockKey) -> End {
        match k {
            LockKey::Min => End::Min,
            LockKey::Key(k) => End::Key(Arc::from(k)),
            LockKey::Max => End::Max,
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

fn cmp_end(order: Comparator, a: &End, b: &End) -> Ordering {
    match (a, b) {
        (End::Min, End::Min) | (End::Max, End::Max) => Ordering::Equal,
        (End::Min, _) | (_, End::Max) => Ordering::Less,
        (_, End::Min) | (End::Max, _) => Ordering::Greater,
        (End::Key(a), End::Key(b)) => order(a, b),
    }
}

/// A lock: held by `owner`, or requested by it.
#[derive(Clone, Debug)]
struct Lock {
    lo: End,
    hi: End,
    owner: u64,
    mode: LockMode,
}

impl Lock {
    fn bytes(&self) -> usize {
        LOCK_OVERHEAD + self.lo.len() + self.hi.len()
    }

    /// The key, if this is a point lock.
    fn point(&self, order: Comparator) -> Option<&Arc<[u8]>> {
        match (&self.lo, &self.hi) {
            (End::Key(a), End::Key(b)) if order(a, b).is_eq() => Some(a),
            _ => None,
        }
    }

    fn overlaps(&self, order: Comparator, lo: &End, hi: &End) -> bool {
        cmp_end(order, &self.lo, hi).is_le() && cmp_end(order, lo, &self.hi).is_le()
    }

    /// Whether `self` gives `want` (an owner's lock, the same owner's request).
    fn covers(&self, order: Comparator, want: &Lock) -> bool {
        self.owner == want.owner
            && self.mode.covers(want.mode)
            && cmp_end(order, &self.lo, &want.lo).is_le()
            && cmp_end(order, &want.hi, &self.hi).is_le()
    }
}

/// A point map key, ordered by its dictionary's comparator.
struct PointKey {
    key: Arc<[u8]>,
    order: Comparator,
}

impl Ord for PointKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.order)(&self.key, &other.key)
    }
}

impl PartialOrd for PointKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PointKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for PointKey {}

/// The owners locking one key, each once.
type Holders = Vec<(u64, LockMode)>;

/// The locks of one dictionary.
struct DictLocks {
    order: Comparator,
    points: BTreeMap<PointKey, Holders>,
    ranges: Vec<Lock>,
    /// Threads waiting for a lock of this dictionary sleep here.
    /// How many are asleep: the entry is kept while any is.
    sleepers: usize,
}

impl DictLocks {
    fn new(order: Comparator) -> DictLocks {
        DictLocks { order, points: BTreeMap::new(), ranges: Vec::new(), sleepers: 0 }
    }

    fn is_empty(&self) -> bool {
        self.points.is_empty() && self.ranges.is_empty()
    }

    fn pk(&self, key: &Arc<[u8]>) -> PointKey {
        PointKey { key: key.clone(), order: self.order }
    }

    fn holders(&self, key: &Arc<[u8]>) -> &[(u64, LockMode)] {
        self.points.get(&self.pk(key)).map_or(&[], |h| h)
    }

    /// The point locks inside `[lo, hi]`.
    fn points_in(&self, lo: &End, hi: &End) -> impl Iterator<Item = (&PointKey, &Holders)> + '_ {
        let bound = |e: &End| match e {
            End::Key(k) => Bound::Included(self.pk(k)),
            _ => Bound::Unbounded,
        };
        let empty = matches!(lo, End::Max) || matches!(hi, End::Min);
        (!empty).then(|| self.points.range((bound(lo), bound(hi)))).into_iter().flatten()
    }

    /// Whether the requester already holds a lock giving `want`.
    fn covered(&self, want: &Lock) -> bool {
        let point = want.point(self.order).map_or(&[][..], |key| self.holders(key));
        point.iter().any(|&(o, m)| o == want.owner && m.covers(want.mode))
            || self.ranges.iter().any(|r| r.covers(self.order, want))
    }

    /// The other owners whose locks conflict with `want`.
    fn blockers(&self, want: &Lock) -> Vec<u64> {
        let mut out = Vec::new();
        let mut add = |o: u64, m: LockMode| {
            if o != want.owner && m.conflicts(want.mode) && !out.contains(&o) {
                out.push(o);
            }
        };
        for (_, holders) in self.points_in(&want.lo, &want.hi) {
            holders.iter().for_each(|&(o, m)| add(o, m));
        }
        for r in self.ranges.iter().filter(|r| r.overlaps(self.order, &want.lo, &want.hi)) {
            add(r.owner, r.mode);
        }
        out
    }

    /// Merges runs of one owner's consecutive locks into ranges (see the
    /// module comment). Returns whether anything merged.
    fn escalate(&mut self) -> bool {
        let order = self.order;
        let less = |a: &End, b: &End| cmp_end(order, a, b).is_lt();
        let mut all = self.ranges.clone();
        for (pk, holders) in &self.points {
            for &(owner, mode) in holders {
                all.push(Lock { lo: End::Key(pk.key.clone()), hi: End::Key(pk.key.clone()), owner, mode });
            }
        }
        all.sort_by(|a, b| cmp_end(order, &a.lo, &b.lo).then(cmp_end(order, &a.hi, &b.hi)));
        let (mut out, mut merged) = (Vec::with_capacity(all.len()), false);
        let mut max_hi: Option<End> = None; // the largest hi before `all[i]`
        let mut i = 0;
        while i < all.len() {
            let (mut j, mut run) = (i + 1, all[i].clone());
            while j < all.len() && all[j].owner == run.owner {
                if less(&run.hi, &all[j].hi) {
                    run.hi = all[j].hi.clone();
                }
                if all[j].mode == LockMode::Write {
                    run.mode = LockMode::Write;
                }
                j += 1;
            }
            let clear_before = max_hi.as_ref().is_none_or(|m| less(m, &run.lo));
            let clear_after = j == all.len() || less(&run.hi, &all[j].lo);
            if max_hi.as_ref().is_none_or(|m| less(m, &run.hi)) {
                max_hi = Some(run.hi.clone());
            }
            if j - i >= 2 && clear_before && clear_after {
                out.push(run);
                merged = true;
            } else {
                out.extend_from_slice(&all[i..j]);
            }
            i = j;
        }
        if merged {
            (self.points, self.ranges) = Default::default();
            for lock in out {
                match lock.point(order) {
                    Some(key) => self.points.entry(self.pk(key)).or_default().push((lock.owner, lock.mode)),
                    None => self.ranges.push(lock),
                }
            }
        }
        merged
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

/// owner -> dictionary -> what it holds there.
type HeldMap = Map<u64, Map<u64, Held>>;

/// A sleeping owner: its request and the owners last seen blocking it.
struct Waiter {
    dict: u64,
    want: Lock,
    blockers: Vec<u64>,
    /// What the sleeping requester waits on.
    wake: Arc<Condvar>,
    /// When it first slept (for introspection only).
    since: std::time::SystemTime,
    /// Its place in line: a release hands locks to waiters in this order.
    seq: u64,
}

enum Attempt {
    Granted,
    Blocked(Vec<u64>),
    Full,
}

#[derive(Default)]
struct State {
    dicts: Map<u64, DictLocks>,
    held: HeldMap,
    /// The wait-for graph.
    waiting: Map<u64, Waiter>,
    stats: LockStats,
    /// Per dictionary: (autocommit writers inside without key locks, lock
    /// requests waiting for them to leave).
    bulk: Map<u64, (usize, usize)>,
    /// The next waiter's `seq`.
    next_seq: u64,
}

impl State {
    fn try_grant(&mut self, limit: usize, order: Comparator, dict: u64, want: &Lock) -> Attempt {
        for round in 0..2 {
            let d = self.dicts.entry(dict).or_insert_with(|| DictLocks::new(order));
            if d.covered(want) {
                return Attempt::Granted;
            }
            let blockers = d.blockers(want);
            if !blockers.is_empty() {
                return Attempt::Blocked(blockers);
            }
            // What the grant adds: nothing for a point upgrade, less the owner's ranges a range absorbs.
            let need = match want.point(d.order) {
                Some(key) if d.holders(key).iter().any(|h| h.0 == want.owner) => 0,
                Some(key) => LOCK_OVERHEAD + key.len(),
                None => want.bytes().saturating_sub(
                    d.ranges.iter().filter(|x| want.covers(d.order, x)).map(Lock::bytes).sum(),
                ),
            };
            if self.stats.bytes + need <= limit {
                self.insert(dict, want);
                return Attempt::Granted;
            }
            if round == 0 {
                self.escalate();
            }
        }
        Attempt::Full
    }

    fn insert(&mut self, dict: u64, want: &Lock) {
        let d = self.dicts.get_mut(&dict).expect("the request's dictionary");
        let held = self.held.entry(want.owner).or_default().entry(dict).or_default();
        let stats = &mut self.stats;
        if let Some(key) = want.point(d.order) {
            match d.points.entry(PointKey { key: key.clone(), order: d.order }) {
                BEntry::Occupied(mut e) => {
                    let key = e.key().key.clone(); // the map's: its bytes may differ
                    let holders = e.get_mut();
                    if let Some(h) = holders.iter_mut().find(|h| h.0 == want.owner) {
                        h.1 = want.mode; // an upgrade
                        return;
                    }
                    debug_assert!(
                        holders.iter().all(|h| h.1 == LockMode::Read) && want.mode == LockMode::Read
                    );
                    holders.push((want.owner, want.mode));
                    stats.bytes += LOCK_OVERHEAD + key.len();
                    held.points.push(key);
                }
                BEntry::Vacant(e) => {
                    e.insert(vec![(want.owner, want.mode)]);
                    stats.bytes += LOCK_OVERHEAD + key.len();
                    held.points.push(key.clone());
                }
            }
        } else {
            let order = d.order;
            d.ranges.retain(|x| {
                let absorb = want.covers(order, x);
                if absorb {
                    (stats.bytes, stats.locks, held.ranges) =
                        (stats.bytes - x.bytes(), stats.locks - 1, held.ranges - 1);
                }
                !absorb
            });
            stats.bytes += want.bytes();
            d.ranges.push(want.clone());
            held.ranges += 1;
        }
        stats.locks += 1;
    }

    fn escalate(&mut self) {
        self.stats.escalations += 1;
        if self.dicts.values_mut().fold(false, |merged, d| d.escalate() | merged) {
            (self.held, self.stats.locks, self.stats.bytes) = self.tally();
        }
    }

    /// What each owner holds, and the number and bytes of all locks, counted afresh.
    fn tally(&self) -> (HeldMap, usize, usize) {
        let (mut held, mut locks, mut bytes) = (HeldMap::default(), 0, 0);
        for (&id, d) in &self.dicts {
            for (pk, holders) in &d.points {
                for &(owner, _) in holders {
                    held.entry(owner).or_default().entry(id).or_default().points.push(pk.key.clone());
                    (locks, bytes) = (locks + 1, bytes + LOCK_OVERHEAD + pk.key.len());
                }
            }
            for r in &d.ranges {
                held.entry(r.owner).or_default().entry(id).or_default().ranges += 1;
                (locks, bytes) = (locks + 1, bytes + r.bytes());
            }
        }
        (held, locks, bytes)
    }

    /// A cycle of the wait-for graph through `me`, blocked by `blockers`:
    /// `[me, ..., w]` where each waits for the next and `w` for `me`.
    fn find_cycle(&mut self, me: u64, blockers: &[u64]) -> Option<Vec<u64>> {
        let mut parent: Map<u64, u64> = blockers.iter().map(|&b| (b, me)).collect();
        let mut stack = blockers.to_vec();
        while let Some(w) = stack.pop() {
            let Some(waiter) = self.waiting.get_mut(&w) else { continue };
            let Some(d) = self.dicts.get(&waiter.dict) else { continue };
            waiter.blockers = d.blockers(&waiter.want);
            for &b in &waiter.blockers {
                if b == me {
                    let mut cycle = vec![w];
                    while let Some(&p) = parent.get(&cycle[cycle.len() - 1]).filter(|&&p| p != me) {
                        cycle.push(p);
                    }
                    cycle.push(me);
                    cycle.reverse();
                    return Some(cycle);
                }
                if let Entry::Vacant(e) = parent.entry(b) {
                    e.insert(w);
                    stack.push(b);
                }
            }
        }
        None
    }

    /// After `owner` released its locks in `dict`: the waiters it blocked
    /// (or whose blockers are unknown), oldest first, are granted what
    /// they wait for where nothing else blocks it, and woken. A waiter still
    /// blocked keeps sleeping with its new blockers (a holder, or an older
    /// waiter just granted), so a request arriving meanwhile cannot take
    /// the lock from under a woken waiter that has not run yet: it waits
    /// behind it. (Letting every woken waiter race for the lock let a
    /// newcomer take it first; on a loaded machine the woken one then found
    /// the newcomer in its way, and a newcomer that went on to want a lock
    /// the waiter held closed a cycle: a deadlock a queue does not make.)
    /// A grant here adds no edge into a cycle: the new edges point at the
    /// owner just granted, which waits for nothing.
    fn hand_over(&mut self, limit: usize, order: Comparator, dict: u64, owner: u64) {
        let mut line: Vec<(u64, u64)> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.dict == dict && (w.blockers.is_empty() || w.blockers.contains(&owner)))
            .map(|(&o, w)| (w.seq, o))
            .collect();
        line.sort_unstable();
        for (_, o) in line {
            let want = self.waiting[&o].want.clone();
            match self.try_grant(limit, order, dict, &want) {
                Attempt::Blocked(blockers) => self.waiting.get_mut(&o).expect("in line").blockers = blockers,
                Attempt::Granted | Attempt::Full => {
                    // Granted: its retry finds the lock held (`covered`) and
                    // returns; Full: its retry fails with `MemoryFull`.
                    let w = self.waiting.get_mut(&o).expect("in line");
                    w.blockers.clear();
                    w.wake.notify_one();
                }
            }
        }
    }

    fn tidy_bulk(&mut self, dict: u64) {
        if self.bulk.get(&dict) == Some(&(0, 0)) {
            self.bulk.remove(&dict);
        }
    }

    /// Drops the entry of `dict` if it has no locks and no sleepers.
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
    /// Signalled when the last lock-free autocommit writer leaves a dictionary.
    bulk_left: Condvar,
}

/// When a sleeping requester must next wake: its deadline, or sooner on a
/// thread with an interrupt flag (`wait::set_thread_interrupt`), which it
/// looks at on every wake-up (a KILL ends the wait as a timeout).
fn wake_by(deadline: Option<Instant>) -> Option<Instant> {
    if !crate::wait::interruptible() {
        return deadline;
    }
    let poll = Instant::now() + crate::wait::INTERRUPT_POLL;
    Some(deadline.map_or(poll, |d| d.min(poll)))
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The lock `owner` requests: [lo, hi] in `mode` (a point holds one copy of its key).
fn requested(cmp: Comparator, owner: u64, lo: LockKey, hi: LockKey, mode: LockMode) -> Lock {
    let lo = End::new(lo);
    let hi = match (&lo, hi) {
        (End::Key(a), LockKey::Key(b)) if cmp(a, b).is_eq() => lo.clone(), // a point: one copy of the key
        _ => End::new(hi),
    };
    assert!(owner != 0, "lock owner 0");
    assert!(cmp_end(cmp, &lo, &hi).is_le(), "lock range with lo > hi");
    Lock { lo, hi, owner, mode }
}

impl LockManager {
    pub(crate) fn new(limit_bytes: usize) -> LockManager {
        LockManager { limit: limit_bytes, state: Mutex::new(State::default()), bulk_left: Condvar::new() }
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
        let want = requested(cmp, owner, lo, hi, mode);
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.state.lock();
        let mut slept = false;
        // Made only if the request sleeps: most are granted at once.
        let mut wake: Option<Arc<Condvar>> = None;
        // Autocommit writers without key locks are in this dictionary: none
        // may enter once this request is pending; wait for those inside.
        if st.bulk.get(&dict).is_some_and(|b| b.0 > 0) {
            slept = true;
            self.wait_out_bulk(&mut st, dict, deadline)?;
        }
        loop {
            let result = match st.try_grant(self.limit, cmp, dict, &want) {
                Attempt::Granted => Ok(()),
                Attempt::Full => Err(LockError::MemoryFull { used: st.stats.bytes, limit: self.limit }),
                Attempt::Blocked(blockers) => match st.find_cycle(owner, &blockers) {
                    Some(cycle) => {
                        st.stats.deadlocks += 1;
                        Err(LockError::Deadlock { cycle })
                    }
                    None if past(deadline) || crate::wait::interrupt_requested() => {
                        st.stats.timeouts += 1;
                        Err(LockError::Timeout { holder: blockers[0] })
                    }
                    None => {
                        if !slept {
                            debug_assert!(
                                !st.waiting.contains_key(&owner),
                                "owner {owner} requests twice at once"
                            );
                            st.stats.waits += 1;
                            slept = true;
                        }
                        self.sleep_in_line(&mut st, dict, &want, blockers, deadline, &mut wake);
                        continue;
                    }
                },
            };
            st.waiting.remove(&owner);
            st.tidy(dict);
            return result;
        }
    }

    /// Waits (`st` released while asleep) for the lock-free autocommit writers in `dict` to leave.
    fn wait_out_bulk(
        &self,
        st: &mut MutexGuard<'_, State>,
        dict: u64,
        deadline: Option<Instant>,
    ) -> Result<(), LockError> {
        st.bulk.entry(dict).or_default().1 += 1;
        st.stats.waits += 1;
        let _blocked = crate::wait::blocking();
        while st.bulk.get(&dict).is_some_and(|b| b.0 > 0) {
            let timed_out = match wake_by(deadline) {
                Some(d) => self.bulk_left.wait_until(st, d).timed_out() && past(deadline),
                None => {
                    self.bulk_left.wait(st);
                    false
                }
            };
            if (timed_out || crate::wait::interrupt_requested())
                && st.bulk.get(&dict).is_some_and(|b| b.0 > 0)
            {
                st.bulk.get_mut(&dict).expect("pending").1 -= 1;
                st.tidy_bulk(dict);
                st.stats.timeouts += 1;
                return Err(LockError::Timeout { holder: 0 });
            }
        }
        st.bulk.get_mut(&dict).expect("pending").1 -= 1;
        st.tidy_bulk(dict);
        Ok(())
    }

    /// Puts the requester in line behind `blockers` (keeping its place) and sleeps once, `st` released.
    fn sleep_in_line(
        &self,
        st: &mut MutexGuard<'_, State>,
        dict: u64,
        want: &Lock,
        blockers: Vec<u64>,
        deadline: Option<Instant>,
        wake: &mut Option<Arc<Condvar>>,
    ) {
        // A waiter woken and blocked again keeps its place in line.
        let seq = st.next_seq;
        let wake = wake.get_or_insert_with(|| Arc::new(Condvar::new())).clone();
        let waiter = st.waiting.entry(want.owner).or_insert_with(|| Waiter {
            dict,
            want: want.clone(),
            blockers: Vec::new(),
            wake: wake.clone(),
            since: std::time::SystemTime::now(),
            seq,
        });
        waiter.blockers = blockers;
        if waiter.seq == seq {
            st.next_seq += 1;
        }
        let d = st.dicts.get_mut(&dict).expect("the request's dictionary");
        d.sleepers += 1;
        // A server's thread pool runs another connection meanwhile.
        let _blocked = crate::wait::blocking();
        match wake_by(deadline) {
            Some(d) => drop(wake.wait_until(st, d)),
            None => wake.wait(st),
        }
        st.dicts.get_mut(&dict).expect("kept while asleep").sleepers -= 1;
    }

    /// Lets an autocommit write into `dict` without key locks, if no one
    /// holds, waits for or is about to request a lock there: true means
    /// entered, and `leave_bulk` must follow. Multi-granularity locking: the
    /// writer holds an intention lock on the whole dictionary that every
    /// key lock request waits out (`acquire`), and no key lock can be held
    /// while it is inside, so it cannot write over a transaction's key or
    /// under a serializable reader's range.
    pub(crate) fn try_enter_bulk(&self, dict: u64) -> bool {
        let mut st = self.state.lock();
        if st.dicts.contains_key(&dict) || st.bulk.get(&dict).is_some_and(|b| b.1 > 0) {
            return false;
        }
        st.bulk.entry(dict).or_default().0 += 1;
        st.stats.bulk_writes += 1;
        true
    }

    /// Ends what `try_enter_bulk` began.
    pub(crate) fn leave_bulk(&self, dict: u64) {
        let mut st = self.state.lock();
        let b = st.bulk.get_mut(&dict).expect("entered");
        b.0 -= 1;
        if b.0 == 0 && b.1 > 0 {
            self.bulk_left.notify_all();
        }
        st.tidy_bulk(dict);
    }

    /// Releases every lock `owner` holds, in every dictionary, and wakes waiters. Idempotent.
    pub(crate) fn release_all(&self, owner: u64) {
        self.release_in(&mut self.state.lock(), owner);
    }

    /// [`LockManager::release_all`] under the caller's hold of the mutex.
    fn release_in(&self, st: &mut State, owner: u64) {
        let Some(per_dict) = st.held.remove(&owner) else { return };
        let mut touched = Vec::with_capacity(per_dict.len());
        for (id, held) in per_dict {
            let d = st.dicts.get_mut(&id).expect("a held lock's dictionary");
            for key in held.points {
                (st.stats.locks, st.stats.bytes) =
                    (st.stats.locks - 1, st.stats.bytes - LOCK_OVERHEAD - key.len());
                let pk = PointKey { key, order: d.order };
                let holders = d.points.get_mut(&pk).expect("a held point");
                holders.retain(|h| h.0 != owner);
                if holders.is_empty() {
                    d.points.remove(&pk);
                }
            }
            if held.ranges > 0 {
                d.ranges.retain(|r| {
                    if r.owner == owner {
                        (st.stats.locks, st.stats.bytes) = (st.stats.locks - 1, st.stats.bytes - r.bytes());
                    }
                    r.owner != owner
                });
            }
            touched.push((id, d.order));
        }
        // Only once every lock of the owner is gone: a grant may escalate,
        // which must not meet locks `held` no longer lists.
        for (id, order) in touched {
            st.hand_over(self.limit, order, id, owner);
            st.tidy(id);
        }
    }

    /// Drops every lock of dictionary `dict` (dictionary dropped); no-op if none.
    pub(crate) fn forget_dict(&self, dict: u64) {
        let mut st = self.state.lock();
        if let Some(d) = st.dicts.get_mut(&dict) {
            (d.points, d.ranges) = Default::default();
            for w in st.waiting.values().filter(|w| w.dict == dict) {
                w.wake.notify_one();
            }
            (st.held, st.stats.locks, st.stats.bytes) = st.tally();
            st.tidy(dict);
        }
    }

    /// Every lock held now: (dictionary, owner, lo, hi, mode), by
    /// dictionary then owner. A copy taken under the mutex, for
    /// introspection (TokuDB's `TokuDB_locks`).
    pub(crate) fn held_locks(&self) -> Vec<LockView> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for (&dict, d) in &st.dicts {
            for (pk, holders) in &d.points {
                for &(owner, mode) in holders {
                    let k = LockEnd::Key(pk.key.to_vec());
                    out.push(LockView { dict, owner, lo: k.clone(), hi: k, mode });
                }
            }
            for r in &d.ranges {
                out.push(LockView { dict, owner: r.owner, lo: r.lo.view(), hi: r.hi.view(), mode: r.mode });
            }
        }
        out.sort_by_key(|a| (a.dict, a.owner));
        out
    }

    /// Every request waiting now, once per owner blocking it: (the
    /// request, the blocker, when the wait began), by requester.
    pub(crate) fn waits(&self) -> Vec<(LockView, u64, std::time::SystemTime)> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for (&owner, w) in &st.waiting {
            let view = LockView {
                dict: w.dict,
                owner,
                lo: w.want.lo.view(),
                hi: w.want.hi.view(),
                mode: w.want.mode,
            };
            for &b in &w.blockers {
                out.push((view.clone(), b, w.since));
            }
        }
        out.sort_by_key(|(v, b, _)| (v.owner, *b));
        out
    }

    pub(crate) fn stats(&self) -> LockStats {
        self.state.lock().stats
    }

    /// Panics unless every invariant of the module comment holds.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let st = self.state.lock();
        for d in st.dicts.values() {
            assert!(!d.is_empty() || d.sleepers > 0, "an empty dictionary entry kept");
            for holders in d.points.values() {
                for (i, &(owner, mode)) in holders.iter().enumerate() {
                    assert!(holders[..i].iter().all(|h| h.0 != owner), "owner {owner} twice on a key");
                    assert!(holders.len() == 1 || mode == LockMode::Read, "a write lock shared");
                }
            }
            for (i, r) in d.ranges.iter().enumerate() {
                assert!(cmp_end(d.order, &r.lo, &r.hi).is_le(), "a range with lo > hi");
                assert!(r.point(d.order).is_none(), "a point kept as a range");
                let conflict = |owner: u64, mode: LockMode| owner != r.owner && mode.conflicts(r.mode);
                for (_, holders) in d.points_in(&r.lo, &r.hi) {
                    assert!(!holders.iter().any(|h| conflict(h.0, h.1)), "a range conflicts with a point");
                }
                for x in d.ranges[..i].iter().filter(|x| x.overlaps(d.order, &r.lo, &r.hi)) {
                    assert!(!conflict(x.owner, x.mode), "two ranges conflict");
                }
            }
        }
        let (held, locks, bytes) = st.tally();
        let flat = |held: &HeldMap| {
            let mut all = Vec::new();
            for (&owner, per_dict) in held {
                for (&id, h) in per_dict {
                    let mut points = h.points.clone();
                    points.sort();
                    all.push((owner, id, h.ranges, points));
                }
            }
            all.sort();
            all
        };
        assert!(flat(&st.held) == flat(&held), "held differs from the dictionaries");
        assert_eq!((st.stats.locks, st.stats.bytes), (locks, bytes));
        assert!(bytes <= self.limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::{sleep, spawn, JoinHandle};
    use LockKey::{Key, Max, Min};
    use LockMode::{Read, Write};

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    const NOW: Duration = Duration::ZERO;
    const LONG: Duration = Duration::from_secs(2);
    const QUICK: Duration = Duration::from_millis(500);

    fn k(s: &str) -> LockKey<'_> {
        Key(s.as_bytes())
    }

    /// Tries at once, in dictionary 1, and checks the invariants.
    fn lock(m: &LockManager, owner: u64, lo: LockKey, hi: LockKey, mode: LockMode) -> Result<(), LockError> {
        let r = m.acquire(1, bytewise, owner, lo, hi, mode, NOW);
        m.check_invariants();
        r
    }

    fn timeout(holder: u64) -> Result<(), LockError> {
        Err(LockError::Timeout { holder })
    }

    /// A thread that waits up to 2 s for `[lo, hi]`, returning the result and how long it took.
    type Waiting = JoinHandle<(Result<(), LockError>, Duration)>;
    fn waiter(m: &Arc<LockManager>, owner: u64, [lo, hi]: [&'static str; 2], mode: LockMode) -> Waiting {
        let (m2, start, waits) = (m.clone(), Instant::now(), m.stats().waits);
        let t = spawn(move || (m2.acquire(1, bytewise, owner, k(lo), k(hi), mode, LONG), start.elapsed()));
        while m.stats().waits == waits {
            assert!(start.elapsed() < LONG, "the waiter never slept");
            sleep(Duration::from_millis(1));
        }
        sleep(Duration::from_millis(20));
        t
    }

    fn granted_soon(t: Waiting) {
        let (r, took) = t.join().unwrap();
        assert_eq!(r, Ok(()));
        assert!(took < QUICK, "took {took:?}");
    }

    #[test]
    fn conflicts_on_points_and_ranges() {
        let m = LockManager::new(1 << 20);
        assert_eq!(lock(&m, 1, k("b"), k("b"), Read), Ok(()));
        assert_eq!(lock(&m, 2, k("b"), k("b"), Read), Ok(()));
        assert!(matches!(lock(&m, 3, k("b"), k("b"), Write), Err(LockError::Timeout { .. })));
        assert_eq!(lock(&m, 3, k("x"), k("x"), Write), Ok(()));
        assert_eq!(lock(&m, 1, k("x"), k("x"), Read), timeout(3));
        assert_eq!(lock(&m, 1, k("x"), k("x"), Write), timeout(3));
        assert_eq!(lock(&m, 1, k("a"), k("c"), Read), Ok(()), "read range over read points");
        assert_eq!(lock(&m, 2, k("a"), k("c"), Write), timeout(1));
        assert_eq!(lock(&m, 4, k("d"), k("f"), Write), Ok(()));
        assert_eq!(lock(&m, 5, k("e"), k("e"), Read), timeout(4));
        assert_eq!(lock(&m, 5, k("f"), k("g"), Read), timeout(4), "ends are inclusive");
        assert_eq!(lock(&m, 5, k("c1"), k("d"), Write), timeout(4));
        assert_eq!(lock(&m, 5, k("c1"), k("c9"), Write), Ok(()), "between ranges");
        assert_eq!(lock(&m, 5, k("f0"), k("g"), Write), Ok(()), "after a range");
        assert_eq!(lock(&m, 6, k("y"), Max, Write), Ok(()));
        assert_eq!(lock(&m, 7, Max, Max, Read), timeout(6));
        assert_eq!(lock(&m, 7, k("zzz"), k("zzz"), Read), timeout(6));
        assert_eq!(lock(&m, 7, k("x0"), k("x9"), Write), Ok(()), "just below [y, Max]");
        assert!(matches!(lock(&m, 7, Min, Max, Read), Err(LockError::Timeout { .. })));
        assert_eq!(lock(&m, 8, Min, Min, Write), Ok(()));
        assert_eq!(lock(&m, 9, Min, k("a"), Read), timeout(8));
        assert_eq!(m.acquire(2, bytewise, 9, Min, Max, Write, NOW), Ok(()), "another dictionary");
        assert_eq!(m.stats().timeouts, 11);
        let locks = m.stats().locks;
        assert_eq!(lock(&m, 4, k("e"), k("e"), Read), Ok(()), "covered: a no-op");
        assert_eq!(lock(&m, 1, k("a"), k("b"), Read), Ok(()), "covered: a no-op");
        assert_eq!(m.stats().locks, locks);
        m.forget_dict(1);
        m.check_invariants();
        assert_eq!(lock(&m, 5, Min, Max, Write), Ok(()), "dictionary 1 forgotten");
        assert_eq!(m.acquire(2, bytewise, 5, k("a"), k("a"), Read, NOW), timeout(9));
        for owner in (1..=9).chain(1..=9) {
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
        let point = waiter(&m, 3, ["k", "k"], Write);
        let range = waiter(&m, 4, ["a", "z"], Write);
        assert_eq!(m.state.lock().waiting[&4].blockers.len(), 2);
        m.release_all(1);
        granted_soon(point);
        m.release_all(2);
        m.release_all(3);
        granted_soon(range);
        m.check_invariants();
        assert!(m.state.lock().waiting.is_empty());
        assert_eq!(m.stats().waits, 2);
    }

    #[test]
    fn a_release_hands_the_lock_to_the_oldest_waiter() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("k"), k("k"), Write).unwrap();
        let first = waiter(&m, 2, ["k", "k"], Write);
        let second = waiter(&m, 3, ["k", "k"], Write);
        {
            // Under the mutex, so no woken waiter can run yet: the lock is
            // the oldest waiter's already, and the younger one waits for it.
            let mut st = m.state.lock();
            m.release_in(&mut st, 1);
            let holders: Vec<_> = st.dicts[&1].points.values().flatten().copied().collect();
            assert_eq!(holders, vec![(2, Write)]);
            assert_eq!(st.waiting[&3].blockers, vec![2]);
        }
        // So a request made now waits behind it instead of taking it.
        assert_eq!(lock(&m, 4, k("k"), k("k"), Write), timeout(2));
        granted_soon(first);
        m.release_all(2);
        granted_soon(second);
        m.release_all(3);
        m.check_invariants();
        assert!(m.state.lock().waiting.is_empty());
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
    }

    #[test]
    fn timeout_after_about_the_timeout() {
        let m = LockManager::new(1 << 20);
        lock(&m, 1, k("k"), k("k"), Write).unwrap();
        let start = Instant::now();
        let r = m.acquire(1, bytewise, 2, k("a"), k("z"), Read, Duration::from_millis(100));
        let took = start.elapsed();
        assert_eq!(r, timeout(1));
        assert!(took >= Duration::from_millis(100) && took < QUICK, "took {took:?}");
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
        let a = waiter(&m, 1, ["y", "y"], Write);
        let start = Instant::now();
        let r = m.acquire(1, bytewise, 2, k("x"), k("x"), Read, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![2, 1] }));
        assert!(start.elapsed() < QUICK);
        assert!(!m.state.lock().waiting.contains_key(&2));
        m.release_all(2);
        granted_soon(a);
        assert_eq!(m.stats().deadlocks, 1);
        m.check_invariants();
    }

    #[test]
    fn deadlock_of_three_owners() {
        let m = Arc::new(LockManager::new(1 << 20));
        for (owner, key) in [(1, "x"), (2, "y"), (3, "z")] {
            lock(&m, owner, k(key), k(key), Write).unwrap();
        }
        let a = waiter(&m, 1, ["y", "y"], Write);
        let b = waiter(&m, 2, ["z", "z"], Read);
        let r = m.acquire(1, bytewise, 3, k("w"), k("x"), Write, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![3, 1, 2] }));
        m.release_all(3);
        granted_soon(b);
        m.release_all(2);
        granted_soon(a);
        assert_eq!(m.stats().deadlocks, 1);
        m.check_invariants();
    }

    #[test]
    fn deadlock_through_a_lock_granted_after_the_waiter_slept() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("zz"), k("zz"), Write).unwrap();
        lock(&m, 2, k("m"), k("m"), Read).unwrap();
        let w = waiter(&m, 1, ["a", "z"], Write);
        // Owner 3's read is compatible with every lock held, so it is granted; owner 1 now waits for it too.
        assert_eq!(m.acquire(1, bytewise, 3, k("n"), k("n"), Read, NOW), Ok(()));
        let r = m.acquire(1, bytewise, 3, k("zz"), k("zz"), Write, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![3, 1] }));
        m.release_all(3);
        m.release_all(2);
        granted_soon(w);
    }

    #[test]
    fn lock_free_autocommit_writers_and_key_locks_exclude_each_other() {
        let m = Arc::new(LockManager::new(1 << 20));
        assert!(m.try_enter_bulk(1), "no locks in dictionary 1: enter without key locks");
        assert!(m.try_enter_bulk(1), "bulk writers share");
        // A key request waits for the writers inside, and bars new ones meanwhile.
        let w = waiter(&m, 7, ["k", "k"], Read);
        std::thread::sleep(Duration::from_millis(30));
        assert!(!m.try_enter_bulk(1), "a pending request bars new bulk writers");
        assert!(m.try_enter_bulk(2), "other dictionaries are not affected");
        m.leave_bulk(2);
        m.leave_bulk(1);
        std::thread::sleep(Duration::from_millis(30));
        assert!(!w.is_finished(), "one writer is still inside");
        m.leave_bulk(1);
        granted_soon(w);
        assert!(!m.try_enter_bulk(1), "a lock is held in the dictionary");
        m.release_all(7);
        assert!(m.try_enter_bulk(1));
        assert_eq!(lock(&m, 8, k("k"), k("k"), Write), Err(LockError::Timeout { holder: 0 }));
        m.leave_bulk(1);
        assert_eq!(lock(&m, 8, k("k"), k("k"), Write), Ok(()));
        m.release_all(8);
        assert!(m.state.lock().bulk.is_empty(), "bulk entries tidied");
        assert_eq!(m.stats().bulk_writes, 4);
        m.check_invariants();
    }

    #[test]
    fn upgrades() {
        let m = Arc::new(LockManager::new(1 << 20));
        lock(&m, 1, k("k"), k("k"), Read).unwrap();
        let before = m.stats();
        assert_eq!(lock(&m, 1, k("k"), k("k"), Write), Ok(()), "the sole reader upgrades");
        assert_eq!(lock(&m, 2, k("k"), k("k"), Read), timeout(1));
        assert_eq!((m.stats().locks, m.stats().bytes), (before.locks, before.bytes));
        lock(&m, 1, k("a"), k("c"), Read).unwrap();
        assert_eq!(lock(&m, 1, k("a"), k("c"), Write), Ok(()), "a range upgrade replaces the read range");
        assert_eq!(m.state.lock().dicts[&1].ranges.len(), 1);
        lock(&m, 1, k("m"), k("m"), Read).unwrap();
        lock(&m, 2, k("m"), k("m"), Read).unwrap();
        assert_eq!(lock(&m, 1, k("m"), k("m"), Write), timeout(2), "another reader");
        let a = waiter(&m, 1, ["m", "m"], Write);
        let r = m.acquire(1, bytewise, 2, k("m"), k("m"), Write, LONG);
        assert_eq!(r, Err(LockError::Deadlock { cycle: vec![2, 1] }), "both upgrade");
        m.release_all(2);
        granted_soon(a);
        assert_eq!(lock(&m, 2, k("m"), k("m"), Read), timeout(1));
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
            let mode = if i % 10 == 4 { Write } else { Read }; // a run is Write if any lock of it is
            assert_eq!(lock(&m, 1, Key(&key(i)), Key(&key(i)), mode), Ok(()));
        }
        let s = m.stats();
        assert!(s.escalations >= 1 && s.bytes <= limit && s.locks < 50, "{s:?}");
        assert_eq!(lock(&m, 2, Key(&key(1)), Key(&key(1)), Read), timeout(1), "in a gap: escalated");
        assert_eq!(lock(&m, 2, Key(&key(999)), Key(&key(999)), Read), Ok(()), "past the owner's last key");
        m.release_all(1);
        m.release_all(2);
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
        m.check_invariants();
    }

    #[test]
    fn escalation_never_covers_another_owners_lock() {
        let m = LockManager::new(7 * (LOCK_OVERHEAD + 8));
        // Dictionary 1: owner 2's range starts before owner 1's run and reaches into its gap.
        // Dictionary 2: owner 1's run ends with a range reaching past owner 4's key.
        // Merging either run (into a write range) would conflict with the other owner's read.
        let setup = [(1, 2, 0, 5, Read), (1, 1, 2, 2, Read), (1, 1, 8, 8, Write)];
        for (dict, owner, lo, hi, mode) in
            setup.into_iter().chain([(2, 1, 10, 10, Write), (2, 1, 11, 20, Read)])
        {
            assert_eq!(m.acquire(dict, bytewise, owner, Key(&key(lo)), Key(&key(hi)), mode, NOW), Ok(()));
        }
        assert_eq!(m.acquire(2, bytewise, 4, Key(&key(15)), Key(&key(15)), Read, NOW), Ok(()));
        let used = m.stats().bytes;
        let r = m.acquire(1, bytewise, 5, Key(&key(30)), Key(&key(30)), Write, NOW);
        assert_eq!(r, Err(LockError::MemoryFull { used, limit: 7 * (LOCK_OVERHEAD + 8) }));
        assert_eq!(m.stats().escalations, 1);
        m.check_invariants();
    }

    #[test]
    fn memory_full_when_nothing_merges() {
        let limit = 10 * (LOCK_OVERHEAD + 8);
        let m = LockManager::new(limit);
        for i in 0..10 {
            assert_eq!(lock(&m, 1 + u64::from(i % 2), Key(&key(i)), Key(&key(i)), Write), Ok(()));
        }
        let full = Err(LockError::MemoryFull { used: limit, limit });
        assert_eq!(lock(&m, 1, Key(&key(10)), Key(&key(10)), Write), full);
        assert_eq!(lock(&m, 3, Key(&key(10)), Key(&key(10)), Read), full, "the failed request holds nothing");
        let s = m.stats();
        assert_eq!((s.locks, s.escalations), (10, 2));
        m.release_all(2);
        assert_eq!(lock(&m, 1, Key(&key(10)), Key(&key(10)), Write), Ok(()), "room again");
        m.release_all(1);
        assert_eq!((m.stats().locks, m.stats().bytes), (0, 0));
        m.check_invariants();
    }

    /// One thread of `randomized_stress`: owners `10t + 1..=10t + 3`, random requests and releases.
    fn stress(m: &LockManager, t: u64) {
        let mut x = 0x9e37_79b9_7f4a_7c15 ^ ((t + 1) << 32);
        let mut below = |n: u64| {
            x ^= x << 13; // xorshift64
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let owners = [t * 10 + 1, t * 10 + 2, t * 10 + 3];
        for _ in 0..2000 {
            let (owner, dict, mode) =
                (owners[below(3) as usize], 1 + below(2), [Read, Write][below(2) as usize]);
            let (a, b) = ((below(60) as u16).to_be_bytes(), (below(60) as u16).to_be_bytes());
            let (a, b) = (a.min(b), a.max(b));
            // Mostly points; a few ranges, some to Min or Max.
            let ends = [(Key(&a[..]), Key(&a[..])), (Key(&a), Key(&b)), (Min, Key(&a)), (Key(&b), Max)];
            let (lo, hi) = ends[below(10).saturating_sub(6) as usize];
            let timeout = Duration::from_millis(below(4));
            match below(20) {
                0..=2 => m.release_all(owner),
                3 if t == 0 => m.forget_dict(2),
                _ => match m.acquire(dict, bytewise, owner, lo, hi, mode, timeout) {
                    Ok(()) if dict == 1 => {
                        let want = Lock { lo: End::new(lo), hi: End::new(hi), owner, mode };
                        assert!(m.state.lock().dicts[&1].covered(&want), "granted, not held");
                    }
                    Err(LockError::Deadlock { cycle }) => {
                        assert_eq!(cycle[0], owner);
                        m.release_all(owner); // the victim aborts
                    }
                    _ => {}
                },
            }
            m.check_invariants();
        }
        owners.iter().for_each(|&o| m.release_all(o));
    }

    #[test]
    fn randomized_stress() {
        let m = Arc::new(LockManager::new(40 * (LOCK_OVERHEAD + 2)));
        let threads: Vec<_> =
            (0..4).map(|t| (m.clone(), t)).map(|(m, t)| spawn(move || stress(&m, t))).collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        m.check_invariants();
        let s = m.stats();
        assert_eq!((s.locks, s.bytes), (0, 0));
        assert!(s.waits > 0 && s.escalations > 0 && s.deadlocks > 0, "{s:?}");
        let st = m.state.lock();
        assert!(st.dicts.is_empty() && st.held.is_empty() && st.waiting.is_empty());
    }

    /// The id hasher spreads consecutive ids over the low bits (a table's
    /// buckets) and the top seven (its control bytes).
    #[test]
    fn id_hasher_spreads_consecutive_ids() {
        let hash = |id: u64| {
            let mut h = IdHasher::default();
            h.write_u64(id);
            h.finish()
        };
        for base in [1u64, 1 << 32, u64::MAX - 4096] {
            let low: std::collections::HashSet<u64> = (0..1024).map(|i| hash(base + i) & 1023).collect();
            assert_eq!(low.len(), 1024, "low bits from {base}");
            let top: std::collections::HashSet<u64> = (0..1024).map(|i| hash(base + i) >> 57).collect();
            assert!(top.len() >= 100, "top bits from {base}: {}", top.len());
        }
    }

    #[test]
    fn send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LockManager>();
    }
}
