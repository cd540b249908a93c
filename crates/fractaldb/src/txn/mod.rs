//! Transactions: ids, snapshots, the undo list, commit and abort.
//!
//! A transaction writes provisional messages (tagged with its txid and the
//! savepoint it is under) through the normal write path, each logged as it
//! happens, after taking a write lock on the key in the lock tree
//! (`locktree.rs`). It keeps an undo list of the (dictionary, key) pairs it
//! wrote, in memory up to `UNDO_MEM_BYTES` and in a scratch file
//! `txn-<id>.undo` beyond that, so a transaction of millions of rows does
//! not hold them in memory.
//!
//! **Commit** appends a commit record, marks the transaction committed in
//! the manager (readers that meet its provisional versions now treat them
//! as committed), sends a `Commit` message for every key on its undo list
//! (unlogged: recovery derives them from the record), forgets the
//! transaction, releases its locks, and last waits for the commit record to
//! be durable (with `commit_sync`). Nothing already in the leaves is
//! rewritten: the messages travel down with the next flushes.
//! **Abort** is the same with an abort record and `Abort` messages;
//! **rollback to a savepoint** sends `Abort` messages for the savepoint ids
//! opened since, to the keys written since, and gives the savepoint a fresh
//! id (so a replayed rollback never touches later writes).
//!
//! Locks are released only after the clean-up messages are in the trees:
//! that is what makes a later writer's messages newer (higher MSN) than the
//! clean-up, the invariant `leafentry.rs` relies on. A dictionary the
//! clean-up cannot reach is failed instead (it takes no writes until a
//! restart, which re-sends the clean-up from the log), so a commit or
//! abort always ends its transaction and releases its locks; see
//! `Txn::send_cleanup` and `Txn::finish_locked`.
//!
//! **Isolation.** Read uncommitted reads the newest version; read committed
//! the newest committed one; repeatable read a snapshot taken at begin, and
//! a put or delete of a key someone committed after the snapshot fails with
//! `Error::WriteConflict` (first committer wins; upserts never conflict,
//! they read nothing); serializable takes read locks on what it reads
//! (points and cursor ranges) and reads the newest committed versions:
//! strict two-phase locking.
//!
//! Autocommit writes (`Dictionary::put` and friends) are transactions of one
//! step: a txid, write locks on their keys, one committed (non-provisional)
//! message per key, locks released, then the fsync. Into a dictionary where
//! no one holds or waits for a lock they take none: an intention lock on the
//! whole dictionary instead, which key lock requests wait out
//! (`LockManager::try_enter_bulk`).

pub(crate) mod counts;
pub(crate) mod locktree;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::encoding::{put_bytes, put_varint, Reader};
use crate::error::{Error, Result};
use crate::file::{OpenMode, VfsFile};
use crate::log::record::Record;
use crate::tree::cursor::{Cursor, CursorView};
use crate::tree::leafentry::{ReadView, Snapshot, TxnState, TxnStates, ViewMode};
use crate::tree::message::{KeyedMsg, MsgBody, MsgKind, Stamp};
use crate::tree::{log_failed, Context, Logging, Tree};
use counts::{Deltas, COUNTERS};
use locktree::{LockError, LockKey, LockManager, LockMode};

/// How much of a transaction's reads are protected from other transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Reads see other transactions' uncommitted writes.
    ReadUncommitted,
    /// Each read sees the newest committed version.
    ReadCommitted,
    /// Every read sees the snapshot taken when the transaction began; a put
    /// or delete of a key changed since fails with `Error::WriteConflict`.
    #[default]
    RepeatableRead,
    /// Reads lock what they read (keys and cursor ranges) until the end.
    Serializable,
}

/// Options of one transaction.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxnOptions {
    pub isolation: Isolation,
    /// How long a lock request waits; `None`: `EnvOptions::lock_timeout`.
    pub lock_timeout: Option<Duration>,
    /// At repeatable read, as InnoDB does: writes and `get_for_update` act
    /// on the newest committed version, under their write lock, instead of
    /// failing with `WriteConflict` when someone committed the key after
    /// the snapshot (plain reads still read the snapshot). The SQL layer's
    /// UPDATE re-reads each row with `get_for_update` before writing it,
    /// so no update is lost.
    pub writes_see_latest: bool,
    /// Who runs the transaction (the SQL layer's connection id; 0: nobody
    /// in particular), as TokuDB's client id: listed by
    /// [`Env::live_transactions`](crate::Env::live_transactions).
    pub client_id: u64,
}

/// A savepoint inside a transaction (see [`Txn::savepoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint {
    /// The `Txn` object that made it (`Shared::instance`): serials restart
    /// in every transaction, so without it another transaction's savepoint
    /// at the same depth would name one of this transaction's. Not the
    /// txid: a txid is unique only within one environment's life (one that
    /// left nothing in the log is handed out again after a crash, and two
    /// environments count independently).
    owner: u64,
    /// The making transaction's id, for the error message.
    txid: u64,
    /// Index in the transaction's savepoint stack.
    depth: usize,
    serial: u64,
}

/// Undo entries kept in memory before they go to the scratch file.
const UNDO_MEM_BYTES: usize = 4 << 20;
/// Clean-up messages sent per tree write.
const CLEANUP_BATCH: usize = 1024;

/// A batch of at least this many keys locks its key span with one range
/// lock rather than a lock per key (see `Txn::write_ops`).
const RANGE_LOCK_MIN_KEYS: usize = 64;

struct Info {
    state: TxnState,
    /// A lower bound on the LSN of the transaction's first logged write
    /// (`None`: nothing logged yet). The log is kept from here on.
    first_lsn: Option<u64>,
    /// The oldest txid its snapshot cannot see (repeatable read), else MAX.
    xmin: u64,
    /// `TxnOptions::client_id`, and when it began (for introspection only).
    client: u64,
    started: std::time::SystemTime,
}

#[derive(Default)]
struct MgrState {
    txns: HashMap<u64, Info>,
    /// Prepared transactions (`Txn::prepare`) by xid: `None` while the
    /// `Txn` that prepared it still owns it, else the transaction itself,
    /// left here when its owner dropped it or restored by recovery, for
    /// `Env::commit_prepared` / `Env::rollback_prepared`.
    prepared: BTreeMap<Vec<u8>, (u64, Option<Txn>)>,
    /// Txids in state `Active`: a new snapshot's live list.
    active: BTreeSet<u64>,
    /// The `xmin`s of live snapshots, with counts.
    xmins: BTreeMap<u64, usize>,
    /// The txids of the transactions with a live snapshot (`counts.rs`).
    snaps: BTreeSet<u64>,
}

/// Transaction ids, states, snapshots and locks of one environment.
pub(crate) struct TxnManager {
    state: Mutex<MgrState>,
    pub locks: LockManager,
    pub ctx: Arc<Context>,
    pub lock_timeout: Duration,
}

impl TxnStates for TxnManager {
    fn state(&self, txid: u64) -> Option<TxnState> {
        self.state.lock().txns.get(&txid).map(|i| i.state)
    }
}

fn lock_error(e: LockError) -> Error {
    match e {
        LockError::Timeout { holder } => Error::LockTimeout { holder },
        LockError::Deadlock { cycle } => Error::Deadlock { cycle },
        LockError::MemoryFull { used, limit } => Error::LockMemoryFull { used, limit },
    }
}

impl TxnManager {
    pub(crate) fn new(ctx: Arc<Context>, lock_memory_bytes: usize, lock_timeout: Duration) -> TxnManager {
        TxnManager {
            state: Mutex::new(MgrState::default()),
            locks: LockManager::new(lock_memory_bytes),
            ctx,
            lock_timeout,
        }
    }

    /// Raises the horizon to what the live transactions allow.
    fn update_horizon(&self, s: &MgrState) {
        let next = self.ctx.next_txid.load(Ordering::SeqCst);
        let h = [s.active.first().copied(), s.xmins.keys().next().copied(), Some(next)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(next);
        self.ctx.horizon.fetch_max(h, Ordering::SeqCst);
    }

    /// Starts a transaction: its id, and with `snapshot` its snapshot.
    fn begin(&self, snapshot: bool, client: u64) -> (u64, Option<Arc<Snapshot>>) {
        let started = std::time::SystemTime::now();
        let mut s = self.state.lock();
        let txid = self.ctx.next_txid.fetch_add(1, Ordering::SeqCst);
        let snap = snapshot.then(|| {
            let live: Vec<u64> = s.active.iter().copied().collect();
            Arc::new(Snapshot { txid, live })
        });
        let xmin = snap.as_ref().map_or(u64::MAX, |sn| sn.live.first().copied().unwrap_or(txid).min(txid));
        if xmin != u64::MAX {
            *s.xmins.entry(xmin).or_default() += 1;
            s.snaps.insert(txid);
        }
        s.active.insert(txid);
        s.txns.insert(txid, Info { state: TxnState::Active, first_lsn: None, xmin, client, started });
        (txid, snap)
    }

    /// Notes that `txid` is about to log its first write.
    fn note_first_write(&self, txid: u64) {
        let bound = self.ctx.log.get().map_or(0, |l| l.last_lsn() + 1);
        let mut s = self.state.lock();
        if let Some(i) = s.txns.get_mut(&txid) {
            i.first_lsn.get_or_insert(bound);
        }
    }

    /// Moves `txid` out of the active set (committed or aborted; its
    /// clean-up follows) and drops its snapshot; if committed, adds its
    /// counter deltas `counts` to their dictionaries, under the same lock,
    /// so a snapshot sees them exactly when it sees the transaction
    /// (`counts.rs`).
    fn decide(&self, txid: u64, state: TxnState, counts: &[(Arc<Tree>, Deltas)]) {
        let mut s = self.state.lock();
        Self::leave_active(&mut s, txid, Some(state));
        if state == TxnState::Committed && !counts.is_empty() {
            // Every snapshot begun from here on has a txid at least `f`.
            let f = self.ctx.next_txid.load(Ordering::SeqCst);
            let snaps = s.snaps.first().copied().zip(s.snaps.last().copied());
            for (tree, d) in counts {
                tree.counts.lock().commit(f, d, snaps);
            }
        }
        self.update_horizon(&s);
    }

    /// Out of the active set, its snapshot dropped, and (with a state)
    /// marked committed or aborted.
    fn leave_active(s: &mut MgrState, txid: u64, state: Option<TxnState>) {
        s.active.remove(&txid);
        let Some(i) = s.txns.get_mut(&txid) else { return };
        if let Some(state) = state {
            i.state = state;
        }
        let xmin = std::mem::replace(&mut i.xmin, u64::MAX);
        if xmin != u64::MAX {
            s.snaps.remove(&txid);
        }
        if let Some(c) = s.xmins.get_mut(&xmin) {
            *c -= 1;
            if *c == 0 {
                s.xmins.remove(&xmin);
            }
        }
    }

    /// Ends `txid` once its clean-up messages (if any) are all in the
    /// trees: out of the active set if still there, and forgotten.
    fn end(&self, txid: u64) {
        let mut s = self.state.lock();
        Self::leave_active(&mut s, txid, None);
        s.txns.remove(&txid);
        self.update_horizon(&s);
    }

    /// Ends `txid` whose clean-up messages did not reach every dictionary
    /// (the ones missed were failed: `Txn::send_cleanup`). The manager
    /// keeps its decided state, because its provisional versions stay in
    /// those dictionaries until a restart and readers resolve them by it
    /// (forgotten, they would read as a clean-up in flight and start over
    /// forever); but it leaves the active set and no longer holds the log
    /// back, which a failed dictionary does itself (checkpoints keep the
    /// whole log while one is open).
    fn strand(&self, txid: u64) {
        let mut s = self.state.lock();
        Self::leave_active(&mut s, txid, None);
        if let Some(i) = s.txns.get_mut(&txid) {
            debug_assert!(i.state != TxnState::Active, "stranded before its outcome was decided");
            i.first_lsn = None;
        }
        self.update_horizon(&s);
    }

    /// The log must be kept from this LSN on for the transactions whose
    /// clean-up has not finished (`u64::MAX`: none).
    pub(crate) fn keep_log_from(&self) -> u64 {
        self.state.lock().txns.values().filter_map(|i| i.first_lsn).min().unwrap_or(u64::MAX)
    }

    /// Transactions begun and not finished.
    /// The transactions begun and not yet finished, by id.
    pub(crate) fn live(&self) -> Vec<crate::env::LiveTxn> {
        let s = self.state.lock();
        let mut v: Vec<_> = s
            .txns
            .iter()
            .filter(|(_, i)| i.state == TxnState::Active)
            .map(|(&id, i)| crate::env::LiveTxn { id, client_id: i.client, started: i.started })
            .collect();
        v.sort_by_key(|t| t.id);
        v
    }

    /// The prepared transactions: (xid, txid, still owned by its `Txn`).
    pub(crate) fn prepared(&self) -> Vec<crate::env::PreparedTxn> {
        let s = self.state.lock();
        s.prepared
            .iter()
            .map(|(xid, (txid, t))| crate::env::PreparedTxn {
                xid: xid.clone(),
                id: *txid,
                attached: t.is_none(),
            })
            .collect()
    }

    /// Takes the prepared transaction `xid` no `Txn` owns any more, to
    /// end it; `None` if there is none (unknown, or still owned).
    pub(crate) fn take_prepared(&self, xid: &[u8]) -> Option<Txn> {
        let mut s = self.state.lock();
        match s.prepared.get_mut(xid) {
            Some((_, t @ Some(_))) => {
                let t = t.take();
                s.prepared.remove(xid);
                t
            }
            _ => None,
        }
    }

    /// At close: the prepared transactions no one owns are let go without
    /// ending them (dropping a detached `Txn` does nothing); the log keeps
    /// them (they are unfinished) and the next open restores them. This
    /// also breaks the cycle manager -> `Txn` -> manager.
    pub(crate) fn let_go_prepared(&self) {
        let held: Vec<Txn> = {
            let mut s = self.state.lock();
            s.prepared.values_mut().filter_map(|(_, t)| t.take()).collect()
        };
        drop(held);
    }

    /// Recovery: restores transaction `txid`, prepared under `xid`, whose
    /// writes are `keys` (in `trees`): active again, its keys write-locked,
    /// the log kept from `first_lsn`, and listed for `Env::commit_prepared`.
    pub(crate) fn restore_prepared(
        self: &Arc<Self>,
        txid: u64,
        xid: Vec<u8>,
        first_lsn: u64,
        keys: Vec<UndoKey>,
        trees: HashMap<u64, Arc<Tree>>,
        counts: Vec<(Arc<Tree>, Deltas)>,
    ) -> Result<()> {
        {
            let mut s = self.state.lock();
            s.active.insert(txid);
            s.txns.insert(
                txid,
                Info {
                    state: TxnState::Active,
                    first_lsn: Some(first_lsn),
                    xmin: u64::MAX,
                    client: 0,
                    started: std::time::SystemTime::now(),
                },
            );
        }
        let shared = Arc::new(Shared {
            mgr: self.clone(),
            txid,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            opts: TxnOptions::default(),
            snapshot: None,
            end: AtomicU8::new(LIVE),
        });
        let mut work = Work::new();
        work.prepared = true;
        work.detached = true;
        for (tree, d) in counts {
            for (idx, v) in d.into_iter().enumerate() {
                work.counts.push((tree.clone(), idx, v));
            }
        }
        for (entry_id, key) in keys {
            let file_id = entry_id & !UNDO_RANGE;
            // A dictionary dropped since has no tree here: nothing to lock
            // or clean up there.
            let Some(tree) = trees.get(&file_id) else { continue };
            // No one else holds locks yet: these are granted at once (a
            // large transaction's locks merge into ranges past the lock
            // memory budget, as they did before the restart).
            let (lo, hi) = match entry_id & UNDO_RANGE {
                0 => (&key[..], &key[..]),
                _ => crate::tree::message::split_range_val(&key),
            };
            if (tree.cmp)(lo, hi) != std::cmp::Ordering::Greater {
                self.lock(tree, txid, LockKey::Key(lo), LockKey::Key(hi), LockMode::Write, Duration::ZERO)?;
            }
            work.undo.push(&self.ctx, txid, entry_id, &key)?;
            work.trees.entry(file_id).or_insert_with(|| tree.clone());
        }
        let t = Txn { shared, st: Mutex::new(work) };
        self.state.lock().prepared.insert(xid, (txid, Some(t)));
        Ok(())
    }

    pub(crate) fn unfinished(&self) -> usize {
        self.state.lock().txns.len()
    }

    /// After recovery: every txid below `next` is taken.
    pub(crate) fn set_next_txid(&self, next: u64) {
        self.ctx.next_txid.fetch_max(next, Ordering::SeqCst);
        let s = self.state.lock();
        self.update_horizon(&s);
    }

    fn lock(
        &self,
        tree: &Tree,
        owner: u64,
        lo: LockKey,
        hi: LockKey,
        mode: LockMode,
        timeout: Duration,
    ) -> Result<()> {
        // The lock tree compares keys with the dictionary's comparator: a
        // panic there leaves the dictionary's locks in doubt, so it poisons
        // the tree (no one reads or writes it before a reopen).
        tree.guarded_change(|| {
            self.locks.acquire(tree.file_id, tree.cmp, owner, lo, hi, mode, timeout).map_err(lock_error)
        })
    }

    /// One autocommit write: `msgs` (all committed messages) under write
    /// locks, as one transaction.
    pub(crate) fn autocommit<M: KeyedMsg>(&self, tree: &Tree, msgs: &[M]) -> Result<()> {
        let (txid, _) = self.begin(false, 0);
        let broadcast = msgs.iter().any(|m| m.kind() == MsgKind::Broadcast);
        // No key locks where no one else holds or wants any (`try_enter_bulk`).
        let bulk = !broadcast && self.locks.try_enter_bulk(tree.file_id);
        // Guarded: the keys are sorted with the dictionary's comparator,
        // and a panic must still end the transaction and leave the lock
        // tree below.
        let result = tree.guarded(|| {
            if bulk {
                // Under the dictionary's intention lock: no key locks needed.
            } else if broadcast {
                self.lock(tree, txid, LockKey::Min, LockKey::Max, LockMode::Write, self.lock_timeout)?;
            } else if msgs.iter().any(|m| m.kind() == MsgKind::RangeDelete) {
                // One write lock over the span of every key and range of the
                // write (more than is written is safe: two-phase locking),
                // so a writer of a key in a range waits as it would for a
                // delete of that key. The span is closed, so it also holds
                // the range's upper bound, which is not deleted.
                let (lo, hi) = Self::write_span(tree, msgs);
                self.lock(
                    tree,
                    txid,
                    LockKey::Key(lo),
                    LockKey::Key(hi),
                    LockMode::Write,
                    self.lock_timeout,
                )?;
            } else {
                // In key order, so two batches never deadlock on each other.
                let mut keys: Vec<&[u8]> = msgs.iter().map(M::key).collect();
                keys.sort_by(|a, b| (tree.cmp)(a, b));
                keys.dedup_by(|a, b| (tree.cmp)(a, b).is_eq());
                for k in keys {
                    self.lock(
                        tree,
                        txid,
                        LockKey::Key(k),
                        LockKey::Key(k),
                        LockMode::Write,
                        self.lock_timeout,
                    )?;
                }
            }
            tree.write_msgs(msgs, Some(Stamp { txid, provisional: false, sp: 0 }), Logging::NoWait)
        });
        self.end(txid);
        if bulk {
            self.locks.leave_bulk(tree.file_id);
        } else {
            self.locks.release_all(txid);
        }
        let lsn = result?;
        if let (Some(log), Some(lsn), true) = (self.ctx.log.get(), lsn, self.ctx.commit_sync) {
            log.sync_to(lsn).map_err(log_failed)?;
        }
        Ok(())
    }

    /// The least and greatest key a write names: its point messages' keys
    /// and its range deletes' bounds (`msgs` holds a range delete, so its
    /// keys are not all the empty key).
    fn write_span<'m, M: KeyedMsg>(tree: &Tree, msgs: &'m [M]) -> (&'m [u8], &'m [u8]) {
        let cmp = tree.cmp;
        let mut bounds: Vec<&[u8]> = Vec::new();
        for m in msgs {
            if m.kind() == MsgKind::RangeDelete {
                let val = m.val();
                let (lo, hi) = crate::tree::message::split_range_val(val);
                if cmp(lo, hi) == std::cmp::Ordering::Less {
                    bounds.extend([lo, hi]);
                }
            } else {
                bounds.push(m.key());
            }
        }
        let lo = bounds.iter().copied().min_by(|a, b| cmp(a, b)).unwrap_or(&[]);
        let hi = bounds.iter().copied().max_by(|a, b| cmp(a, b)).unwrap_or(&[]);
        (lo, hi)
    }

    /// A view for an autocommit read or cursor: the newest committed versions.
    pub(crate) fn latest_view(self: &Arc<Self>) -> CursorView {
        CursorView {
            own: 0,
            uncommitted: false,
            snapshot: None,
            states: self.clone(),
            lock_range: None,
            live: None,
        }
    }

    pub(crate) fn read_latest(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        tree.get(key, &ReadView { own: 0, mode: ViewMode::Latest, states: self })
    }
}

/// One undo entry: a dictionary's file id and a key written in it; or,
/// with `UNDO_RANGE` set in the id, the range (`message::range_val`) of a
/// range delete written in it, whose clean-up is one wide message
/// (`MsgBody::over_range`).
pub(crate) type UndoKey = (u64, Box<[u8]>);

/// The flag on an undo entry's file id marking a range (file ids are
/// counted from 1 and never reach it).
pub(crate) const UNDO_RANGE: u64 = 1 << 63;

/// The clean-up messages `body` (a `Commit` or `Abort`) for a run of undo
/// entries of one dictionary, all points or all ranges: (key, body) pairs.
pub(crate) fn cleanup_msgs<'a>(
    run: &'a [UndoKey],
    body: &'a MsgBody,
) -> Vec<(&'a [u8], std::borrow::Cow<'a, MsgBody>)> {
    run.iter()
        .map(|(id, k)| match id & UNDO_RANGE {
            0 => (&k[..], std::borrow::Cow::Borrowed(body)),
            _ => (&[][..], std::borrow::Cow::Owned(body.over_range(k))),
        })
        .collect()
}

/// The (dictionary, key) pairs a transaction wrote, oldest first.
struct Undo {
    mem: Vec<UndoKey>,
    mem_bytes: usize,
    /// Entries moved to the scratch file, and its length.
    spilled: u64,
    file: Option<(Arc<dyn VfsFile>, PathBuf, u64)>,
}

impl Undo {
    fn len(&self) -> u64 {
        self.spilled + self.mem.len() as u64
    }

    fn push(&mut self, ctx: &Context, txid: u64, file_id: u64, key: &[u8]) -> Result<()> {
        self.mem_bytes += key.len() + 32;
        self.mem.push((file_id, key.into()));
        if self.mem_bytes > UNDO_MEM_BYTES {
            if self.file.is_none() {
                let path = ctx.dir.join(format!("txn-{txid}.undo"));
                let f = ctx.vfs.open(&path, OpenMode::CreateOrOpen, false)?;
                self.file = Some((f, path, 0));
            }
            let (f, _, len) = self.file.as_mut().expect("just set");
            let mut buf = Vec::with_capacity(self.mem_bytes);
            for (id, k) in &self.mem {
                put_varint(&mut buf, *id);
                put_bytes(&mut buf, k);
            }
            f.write_at(*len, &buf)?;
            *len += buf.len() as u64;
            self.spilled += self.mem.len() as u64;
            self.mem.clear();
            self.mem_bytes = 0;
        }
        Ok(())
    }

    /// Calls `f` on every entry from index `from` on, in chunks, then
    /// truncates the list to `from` entries.
    fn drain_from(&mut self, from: u64, f: &mut dyn FnMut(&[UndoKey]) -> Result<()>) -> Result<()> {
        if let Some((file, _, len)) = &self.file {
            if from < self.spilled {
                // Read the file in pieces; keep the byte offset of entry `from`.
                let (mut off, mut idx, mut cut) = (0u64, 0u64, None);
                let mut chunk: Vec<UndoKey> = Vec::new();
                let mut carry: Vec<u8> = Vec::new();
                while off < *len || !carry.is_empty() {
                    let n = (*len - off).min(1 << 20) as usize;
                    let mut buf = vec![0; n];
                    file.read_at(off, &mut buf)?;
                    let base = off - carry.len() as u64;
                    off += n as u64;
                    carry.extend_from_slice(&buf);
                    let mut r = Reader::new(&carry);
                    let mut used = 0;
                    while let (Ok(id), Ok(k)) = (r.varint(), r.bytes()) {
                        if idx == from {
                            cut = Some(base + used as u64);
                        }
                        if idx >= from {
                            chunk.push((id, k.into()));
                        }
                        idx += 1;
                        used = r.pos();
                        if chunk.len() >= CLEANUP_BATCH {
                            f(&chunk)?;
                            chunk.clear();
                        }
                    }
                    carry.drain(..used);
                    if n == 0 {
                        break;
                    }
                }
                f(&chunk)?;
                let cut = cut.unwrap_or(*len);
                file.set_len(cut)?;
                self.file.as_mut().expect("present").2 = cut;
                self.spilled = from;
            }
        }
        let start = from.saturating_sub(self.spilled) as usize;
        for c in self.mem[start.min(self.mem.len())..].chunks(CLEANUP_BATCH) {
            f(c)?;
        }
        self.mem.truncate(start.min(self.mem.len()));
        self.mem_bytes = self.mem.iter().map(|(_, k)| k.len() + 32).sum();
        Ok(())
    }

    fn remove_file(&mut self, ctx: &Context) {
        if let Some((_, path, _)) = self.file.take() {
            let _ = ctx.vfs.remove(&path);
        }
    }
}

/// Merges the entries of `counts` from `from` on that name the same tree
/// and counter (keeping the first one's place); entries before `from` are
/// left as they are (a savepoint's roll-back truncates to its mark).
fn fold_counts(counts: &mut Vec<(Arc<Tree>, usize, i64)>, from: usize) {
    let mut k = from;
    for j in from..counts.len() {
        match (from..k).find(|&p| Arc::ptr_eq(&counts[p].0, &counts[j].0) && counts[p].1 == counts[j].1) {
            Some(p) => counts[p].2 = counts[p].2.wrapping_add(counts[j].2),
            None => {
                counts.swap(k, j);
                k += 1;
            }
        }
    }
    counts.truncate(k);
}

/// A transaction's own state, behind its mutex.
struct Work {
    undo: Undo,
    /// Open savepoints: (id, undo length when opened, serial, `counts`
    /// length when opened).
    savepoints: Vec<(u32, u64, u64, usize)>,
    /// Counter deltas added (`Txn::add_count`): (tree, counter, delta),
    /// in order, so a roll-back to a savepoint truncates them.
    counts: Vec<(Arc<Tree>, usize, i64)>,
    next_sp: u32,
    next_serial: u64,
    /// Trees written, by file id.
    trees: HashMap<u64, Arc<Tree>>,
    /// Trees a clean-up message (of a commit, abort or savepoint
    /// roll-back) could not be written to: failed, and skipped from then
    /// on. If any, the transaction ends stranded (`TxnManager::strand`).
    missed: HashSet<u64>,
    done: bool,
    /// `Txn::prepare` succeeded: no more writes; it ends only by a
    /// commit or abort, never by being dropped.
    prepared: bool,
    /// This `Txn` is the one the manager keeps for a prepared transaction
    /// (`MgrState::prepared`): dropping it does nothing.
    detached: bool,
}

impl Work {
    fn new() -> Work {
        Work {
            undo: Undo { mem: Vec::new(), mem_bytes: 0, spilled: 0, file: None },
            savepoints: Vec::new(),
            counts: Vec::new(),
            next_sp: 1,
            next_serial: 1,
            trees: HashMap::new(),
            missed: HashSet::new(),
            done: false,
            prepared: false,
            detached: false,
        }
    }
}

/// `Shared::end`: the transaction runs.
const LIVE: u8 = 0;
/// `Shared::end`: its commit or abort has begun; it may still hold locks.
const ENDED: u8 = 1;
/// `Shared::end`: its locks are released.
const RELEASED: u8 = 2;

/// What a transaction's cursors share with it.
struct Shared {
    mgr: Arc<TxnManager>,
    txid: u64,
    /// Unique among every `Txn` this process makes (`NEXT_INSTANCE`): names
    /// the owner of a [`Savepoint`].
    instance: u64,
    opts: TxnOptions,
    snapshot: Option<Arc<Snapshot>>,
    /// `LIVE`, then `ENDED` when the commit or abort begins, then
    /// `RELEASED` once the locks are released. Cursors live apart from
    /// their transaction (and may be on another thread): they read only
    /// while it is `LIVE`, and a range lock a cursor was granted after
    /// `RELEASED` it releases itself (see `Txn::cursor`).
    end: AtomicU8,
}

/// The next `Shared::instance`.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

impl Shared {
    fn check_live(&self) -> Result<()> {
        if self.end.load(Ordering::SeqCst) != LIVE {
            return Err(ended());
        }
        Ok(())
    }
}

fn ended() -> Error {
    Error::invalid("the transaction has already ended")
}

/// A transaction over any number of dictionaries of one environment. Ends
/// with [`Txn::commit`] or [`Txn::abort`]; dropped unfinished, it aborts.
/// One thread uses it at a time (the methods lock it internally).
pub struct Txn {
    shared: Arc<Shared>,
    st: Mutex<Work>,
}

impl Txn {
    pub(crate) fn begin(mgr: Arc<TxnManager>, opts: TxnOptions) -> Txn {
        let (txid, snapshot) = mgr.begin(opts.isolation == Isolation::RepeatableRead, opts.client_id);
        Txn {
            shared: Arc::new(Shared {
                mgr,
                txid,
                instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
                opts,
                snapshot,
                end: AtomicU8::new(LIVE),
            }),
            st: Mutex::new(Work::new()),
        }
    }

    /// The transaction's id.
    pub fn id(&self) -> u64 {
        self.shared.txid
    }

    pub fn isolation(&self) -> Isolation {
        self.shared.opts.isolation
    }

    fn timeout(&self) -> Duration {
        self.shared.opts.lock_timeout.unwrap_or(self.shared.mgr.lock_timeout)
    }

    fn view_mode(&self) -> ViewMode<'_> {
        match (self.shared.opts.isolation, &self.shared.snapshot) {
            (Isolation::ReadUncommitted, _) => ViewMode::Uncommitted,
            (_, Some(s)) => ViewMode::Snapshot(s),
            _ => ViewMode::Latest,
        }
    }

    fn check_live(st: &Work) -> Result<()> {
        if st.done {
            return Err(ended());
        }
        Ok(())
    }

    /// Live and not prepared: a prepared transaction's work is fixed.
    fn check_writable(st: &Work) -> Result<()> {
        Self::check_live(st)?;
        if st.prepared {
            return Err(Error::invalid(
                "the transaction is prepared: it can only be committed or rolled back",
            ));
        }
        Ok(())
    }

    /// The first phase of a two-phase commit: makes the transaction's
    /// writes durable as provisional (a prepare record, fsynced whatever
    /// `commit_sync` says) and records that it awaits a decision under
    /// `xid`, a global id unique among the prepared transactions. From
    /// then on it takes no more writes; it keeps its locks, and ends only
    /// by [`Txn::commit`] or [`Txn::abort`], or, once this `Txn` is
    /// dropped (its owner went away), by [`crate::Env::commit_prepared`]
    /// or [`crate::Env::rollback_prepared`] from anyone. A crash keeps it
    /// prepared: the next open restores it, its keys write-locked, and
    /// lists it in [`crate::Env::prepared`].
    ///
    /// Errors: `xid` empty, longer than [`crate::MAX_XID_BYTES`] or already
    /// prepared (`InvalidArgument`; nothing changes), the transaction
    /// ended or prepared, or the log failing (the transaction then stays
    /// unprepared, and may be aborted).
    pub fn prepare(&self, xid: &[u8]) -> Result<()> {
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        if xid.is_empty() || xid.len() > crate::log::record::MAX_XID_BYTES {
            return Err(Error::invalid(format!(
                "a prepared transaction's id takes 1 to {} bytes, not {}",
                crate::log::record::MAX_XID_BYTES,
                xid.len()
            )));
        }
        let m = &self.shared.mgr;
        {
            let mut s = m.state.lock();
            if s.prepared.contains_key(xid) {
                return Err(Error::invalid("a transaction is already prepared under that id"));
            }
            // Reserved before the record: two prepares of one xid cannot
            // both log theirs.
            s.prepared.insert(xid.to_vec(), (self.id(), None));
        }
        // The log is kept from here on even if the transaction wrote
        // nothing: the prepare record itself must survive checkpoints.
        m.note_first_write(self.id());
        let first_lsn = m.state.lock().txns.get(&self.id()).and_then(|i| i.first_lsn).unwrap_or(0);
        let counts = Self::counts_by_dict(&st).into_iter().map(|(t, d)| (t.file_id, d)).collect();
        let logged = match m.ctx.log.get() {
            Some(log) => log
                .append(
                    &Record::TxnPrepare { txid: self.id(), first_lsn, xid: xid.to_vec(), counts }.encode(),
                )
                .and_then(|lsn| log.sync_to(lsn))
                .map_err(log_failed),
            None => Ok(()),
        };
        if let Err(e) = logged {
            m.state.lock().prepared.remove(xid);
            return Err(e);
        }
        st.prepared = true;
        Ok(())
    }

    /// True once [`Txn::prepare`] succeeded.
    pub fn is_prepared(&self) -> bool {
        self.st.lock().prepared
    }

    /// Reads `key` as the isolation level says.
    pub fn get(&self, d: &crate::Dictionary, key: &[u8]) -> Result<Option<Vec<u8>>> {
        crate::limits::check_key(key)?;
        Self::check_live(&self.st.lock())?;
        let m = &self.shared.mgr;
        if self.shared.opts.isolation == Isolation::Serializable {
            m.lock(&d.tree, self.id(), LockKey::Key(key), LockKey::Key(key), LockMode::Read, self.timeout())?;
        }
        d.tree.get(key, &ReadView { own: self.id(), mode: self.view_mode(), states: &**m })
    }

    /// About how many keys `d` holds in `[lo, hi)`, for a planner: read
    /// from a few nodes, whatever the range's size, and not as this
    /// transaction sees it (see [`crate::Dictionary::estimate_range`]).
    /// Takes no lock.
    pub fn estimate_range(&self, d: &crate::Dictionary, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
        Self::check_live(&self.st.lock())?;
        d.tree.estimate_range(lo, hi)
    }

    /// Reads `key` under a write lock, newest committed version (for
    /// read-modify-write at any level; at repeatable read, a key changed
    /// since the snapshot is a `WriteConflict`).
    pub fn get_for_update(&self, d: &crate::Dictionary, key: &[u8]) -> Result<Option<Vec<u8>>> {
        crate::limits::check_key(key)?;
        Self::check_live(&self.st.lock())?;
        let m = &self.shared.mgr;
        m.lock(&d.tree, self.id(), LockKey::Key(key), LockKey::Key(key), LockMode::Write, self.timeout())?;
        self.check_conflict(d, key)?;
        d.tree.get(key, &ReadView { own: self.id(), mode: ViewMode::Latest, states: &**m })
    }

    /// Takes the write lock on `key` as `get_for_update` does, without
    /// reading it: for a caller that knows the key holds no row (a value
    /// just allocated from a counter above every key) and only needs
    /// concurrent writers of that key to wait for this transaction.
    pub fn lock_for_update(&self, d: &crate::Dictionary, key: &[u8]) -> Result<()> {
        crate::limits::check_key(key)?;
        Self::check_live(&self.st.lock())?;
        let m = &self.shared.mgr;
        m.lock(&d.tree, self.id(), LockKey::Key(key), LockKey::Key(key), LockMode::Write, self.timeout())?;
        self.check_conflict(d, key)
    }

    /// Write-locks every key in `[lo, hi]` with one range lock, without
    /// reading: for a block of keys the caller knows hold no version (a
    /// block of counter values above every key), so writers of any of them
    /// wait for this transaction. No write-conflict check: there is nothing
    /// to conflict with.
    pub fn lock_range_for_update(&self, d: &crate::Dictionary, lo: &[u8], hi: &[u8]) -> Result<()> {
        crate::limits::check_key(lo)?;
        crate::limits::check_key(hi)?;
        Self::check_live(&self.st.lock())?;
        let m = &self.shared.mgr;
        m.lock(&d.tree, self.id(), LockKey::Key(lo), LockKey::Key(hi), LockMode::Write, self.timeout())
    }

    /// A cursor reading as the isolation level says, while the transaction
    /// runs: once it has ended (commit, abort, drop), every move of the
    /// cursor returns an error.
    pub fn cursor(&self, d: &crate::Dictionary) -> Cursor {
        let sh = &self.shared;
        let lock_range = (sh.opts.isolation == Isolation::Serializable).then(|| {
            let (sh, tree, timeout) = (sh.clone(), d.tree.clone(), self.timeout());
            Box::new(move |lo: Option<&[u8]>, hi: Option<&[u8]>| {
                // No lock for a transaction that has ended: nothing would
                // release it (it blocked every later writer of the range).
                sh.check_live()?;
                let lo = lo.map_or(LockKey::Min, LockKey::Key);
                let hi = hi.map_or(LockKey::Max, LockKey::Key);
                sh.mgr.lock(&tree, sh.txid, lo, hi, LockMode::Read, timeout)?;
                // The transaction may have ended on another thread while
                // this waited. Before `RELEASED`, its own `release_all`
                // is still to come and frees this lock with the others;
                // after, nobody else will. (Not before: its write locks
                // must stay until its clean-up messages are in the trees.)
                if sh.end.load(Ordering::SeqCst) == RELEASED {
                    sh.mgr.locks.release_all(sh.txid);
                    return Err(ended());
                }
                Ok(())
            }) as crate::tree::cursor::RangeLocker
        });
        let live = {
            let sh = sh.clone();
            Box::new(move || sh.check_live()) as crate::tree::cursor::LiveCheck
        };
        let view = CursorView {
            own: sh.txid,
            uncommitted: sh.opts.isolation == Isolation::ReadUncommitted,
            snapshot: sh.snapshot.clone(),
            states: sh.mgr.clone(),
            lock_range,
            live: Some(live),
        };
        Cursor::new(d.tree.clone(), view)
    }

    /// Iterates over the keys in `[lo, hi)` (`None`: unbounded) as this
    /// transaction sees them, in order or in reverse. Used after the
    /// transaction ended, it yields one error and ends.
    pub fn range(
        &self,
        d: &crate::Dictionary,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        reverse: bool,
    ) -> crate::Range {
        crate::Range::new(self.cursor(d), d.tree.cmp, lo, hi, reverse)
    }

    /// At repeatable read: fails if someone committed `key` after the
    /// snapshot (unless `TxnOptions::writes_see_latest`).
    fn check_conflict(&self, d: &crate::Dictionary, key: &[u8]) -> Result<()> {
        if self.shared.opts.writes_see_latest {
            return Ok(());
        }
        let Some(snap) = &self.shared.snapshot else { return Ok(()) };
        match d.tree.newest_committed_txid(key, &*self.shared.mgr)? {
            Some(t) if t != 0 && t != self.id() && !snap.sees(t) => {
                Err(Error::WriteConflict { key: key.to_vec(), dictionary: d.name().to_string(), writer: t })
            }
            _ => Ok(()),
        }
    }

    fn write(&self, d: &crate::Dictionary, key: &[u8], kind: MsgKind, fn_id: u8, val: &[u8]) -> Result<()> {
        crate::limits::check_change(kind, key, val)?;
        self.write_ops(d, &[(key, &MsgBody::plain(kind, fn_id, val))])
    }

    /// Writes `ops` (plain messages: puts, deletes, upserts) as this
    /// transaction's provisional versions: every key is locked and checked
    /// for a write conflict first, then all of them go to the tree as one
    /// write (one log record, one descent), so a batch costs the tree no
    /// more than an autocommit batch of the same size.
    ///
    /// Guarded (`Tree::guarded`): the comparator orders the batch here.
    fn write_ops<M: KeyedMsg>(&self, d: &crate::Dictionary, ops: &[M]) -> Result<()> {
        d.tree.guarded(|| self.write_ops_unguarded(d, ops))
    }

    /// `write_ops` inside the tree's guard; holds the transaction's state lock from its checks to its write.
    fn write_ops_unguarded<M: KeyedMsg>(&self, d: &crate::Dictionary, ops: &[M]) -> Result<()> {
        // A range delete's bounds, checked before anything is locked (the
        // lock tree takes ranges with lo <= hi).
        let ranges = Self::checked_ranges(d.tree.cmp, ops)?;
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        if let Some(m) =
            ops.iter().find(|m| m.kind() == MsgKind::Update && !d.tree.ctx.fns.contains_key(&m.fn_id()))
        {
            return Err(Error::invalid(crate::tree::message::missing_fn(m.fn_id())));
        }
        // A failure here leaves the locks taken so far with the transaction
        // (released at its end) and writes nothing.
        self.lock_range_deletes(d, &ranges)?;
        self.lock_points(d, ops)?;
        let sp = st.savepoints.last().map_or(0, |s| s.0);
        if st.undo.len() == 0 && !ops.is_empty() {
            self.shared.mgr.note_first_write(self.id());
        }
        // On the undo list before the write: if the write fails after its
        // record reached the log, an abort still cleans the keys up.
        let sorted = self.push_undo(&mut st, d, ops)?;
        let stamp = Some(Stamp { txid: self.id(), provisional: true, sp });
        Self::write_sorted(d, ops, &sorted, stamp)
    }

    /// The bounds of the range deletes in `ops`; an error if one's lower bound is above its upper.
    fn checked_ranges<M: KeyedMsg>(cmp: crate::tree::Comparator, ops: &[M]) -> Result<Vec<(&[u8], &[u8])>> {
        let ranges: Vec<(&[u8], &[u8])> = ops
            .iter()
            .filter(|m| m.kind() == MsgKind::RangeDelete)
            .map(|m| crate::tree::message::split_range_val(m.val()))
            .collect();
        if ranges.iter().any(|(lo, hi)| cmp(lo, hi) == std::cmp::Ordering::Greater) {
            return Err(Error::invalid("a range delete whose lower bound is above its upper bound"));
        }
        Ok(ranges)
    }

    /// Write-locks the closed span of each range delete of a batch.
    fn lock_range_deletes(&self, d: &crate::Dictionary, ranges: &[(&[u8], &[u8])]) -> Result<()> {
        let cmp = d.tree.cmp;
        let m = &self.shared.mgr;
        // Each range delete write-locks its closed span [lo, hi], so writers
        // of its keys wait as for deletes of them. Its keys are not known,
        // so unlike a delete it is not checked for write conflicts (a key
        // committed after a repeatable-read snapshot is deleted, not a
        // `WriteConflict`).
        for &(lo, hi) in ranges {
            if cmp(lo, hi) == std::cmp::Ordering::Less {
                m.lock(
                    &d.tree,
                    self.id(),
                    LockKey::Key(lo),
                    LockKey::Key(hi),
                    LockMode::Write,
                    self.timeout(),
                )?;
            }
        }
        Ok(())
    }

    /// Write-locks a batch's point keys (one span lock if large) and checks all but updates for conflicts.
    fn lock_points<M: KeyedMsg>(&self, d: &crate::Dictionary, ops: &[M]) -> Result<()> {
        let cmp = d.tree.cmp;
        let m = &self.shared.mgr;
        let points = || ops.iter().filter(|m| m.kind() != MsgKind::RangeDelete);
        let per_key = ops.len() < RANGE_LOCK_MIN_KEYS;
        if !per_key && points().next().is_some() {
            // One write lock over the batch's key span instead of one per
            // key: locking more than is written is always safe under
            // two-phase locking; a batch of adjacent keys (an increasing
            // id) then costs one lock, and a batch of scattered keys makes
            // concurrent batches into the dictionary take turns. Per-key
            // locks were a fifth of a bulk load's client CPU.
            let lo = points().map(M::key).min_by(|a, b| cmp(a, b)).expect("not empty");
            let hi = points().map(M::key).max_by(|a, b| cmp(a, b)).expect("not empty");
            m.lock(&d.tree, self.id(), LockKey::Key(lo), LockKey::Key(hi), LockMode::Write, self.timeout())?;
        }
        for (key, kind) in points().map(|m| (m.key(), m.kind())) {
            if per_key {
                let k = LockKey::Key(key);
                m.lock(&d.tree, self.id(), k, k, LockMode::Write, self.timeout())?;
            }
            if kind != MsgKind::Update {
                self.check_conflict(d, key)?;
            }
        }
        Ok(())
    }

    /// Puts each key of `ops` (once) and each range delete on the undo list; returns the keys sorted.
    fn push_undo<'a, M: KeyedMsg>(
        &self,
        st: &mut Work,
        d: &crate::Dictionary,
        ops: &'a [M],
    ) -> Result<Vec<(u64, &'a [u8], u32)>> {
        let m = &self.shared.mgr;
        // Each key once: clean-up messages act on a key's provisional
        // versions whatever wrote them, so one per key is enough (a roll-up
        // batch upserts a few counters a thousand times each, and sent a
        // commit message per upsert).
        // One sort of the batch: on the first 8 bytes as an integer, then
        // the whole key, then the position in the batch (so a key's
        // messages keep their order). It finds the duplicate keys, and for
        // a bytewise dictionary it is the tree's order: the batch then
        // goes to the tree in it, and the root buffer's and a root leaf's
        // sorts find it sorted (one pass) instead of sorting it again.
        let mut sorted: Vec<(u64, &[u8], u32)> = ops
            .iter()
            .enumerate()
            .filter(|(_, m)| m.kind() != MsgKind::RangeDelete)
            .map(|(i, m)| (crate::tree::key_prefix(m.key()), m.key(), i as u32))
            .collect();
        sorted.sort_unstable();
        for (i, &(p, key, _)) in sorted.iter().enumerate() {
            if i == 0 || (p, key) != (sorted[i - 1].0, sorted[i - 1].1) {
                st.undo.push(&m.ctx, self.id(), d.tree.file_id, key)?;
            }
        }
        // A range delete's entry holds its range (`UNDO_RANGE`): the keys
        // it covered get their clean-up from one wide message.
        for r in ops.iter().filter(|m| m.kind() == MsgKind::RangeDelete) {
            st.undo.push(&m.ctx, self.id(), d.tree.file_id | UNDO_RANGE, r.val())?;
        }
        st.trees.entry(d.tree.file_id).or_insert_with(|| d.tree.clone());
        Ok(sorted)
    }

    /// Writes `ops` to the tree as one write, in `sorted`'s order when that is allowed and differs.
    fn write_sorted<M: KeyedMsg>(
        d: &crate::Dictionary,
        ops: &[M],
        sorted: &[(u64, &[u8], u32)],
        stamp: Option<Stamp>,
    ) -> Result<()> {
        // Messages on different keys commute; a broadcast does not, so a
        // batch holding one keeps its order.
        let reorder = d.tree.order.bytewise
            && sorted.iter().enumerate().any(|(i, s)| s.2 as usize != i)
            && !ops.iter().any(|m| matches!(m.kind(), MsgKind::Broadcast | MsgKind::RangeDelete));
        if reorder {
            let in_key_order: Vec<&M> = sorted.iter().map(|s| &ops[s.2 as usize]).collect();
            d.tree.write_msgs(&in_key_order, stamp, Logging::NoWait)?;
        } else {
            d.tree.write_msgs(ops, stamp, Logging::NoWait)?;
        }
        Ok(())
    }

    /// Writes every put, delete and upsert of `batch` into `d` as part of
    /// this transaction, in one tree write (see [`Txn::put`] for what each
    /// one means). The keys are locked one by one, so on an error (a lock
    /// timeout, a deadlock, a write conflict) none of the batch is written.
    pub fn write_batch(&self, d: &crate::Dictionary, batch: &crate::WriteBatch) -> Result<()> {
        batch.check()?;
        self.write_ops(d, &batch.msgs())
    }

    /// Deletes every key `k` with `lo <= k < hi` as part of this
    /// transaction, as one message (see [`crate::Dictionary::delete_range`]):
    /// its own reads see them gone, other transactions and older snapshots
    /// see them until it commits, an abort (or a roll-back past it) brings
    /// them back. It write-locks `[lo, hi]`. Unlike [`Txn::delete`] it
    /// reads none of the keys, so it does not fail with `WriteConflict` for
    /// a key committed after a repeatable-read snapshot: it deletes it.
    pub fn delete_range(&self, d: &crate::Dictionary, lo: &[u8], hi: &[u8]) -> Result<()> {
        crate::limits::check_key(lo)?;
        crate::limits::check_key(hi)?;
        self.write_ops(d, &[(&[][..], &MsgBody::range_delete(lo, hi))])
    }

    /// Sets `key` to `value`.
    pub fn put(&self, d: &crate::Dictionary, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(d, key, MsgKind::Insert, 0, value)
    }

    /// Removes `key`.
    pub fn delete(&self, d: &crate::Dictionary, key: &[u8]) -> Result<()> {
        self.write(d, key, MsgKind::Delete, 0, &[])
    }

    /// Upserts `key` through update function `fn_id` (never a write conflict:
    /// it applies to whatever value the key has when it lands).
    pub fn update(&self, d: &crate::Dictionary, key: &[u8], fn_id: u8, arg: &[u8]) -> Result<()> {
        self.write(d, key, MsgKind::Update, fn_id, arg)
    }

    /// Adds `delta` to counter `counter` (below [`crate::COUNTERS`]) of
    /// `d`, as part of this transaction: other transactions see it once
    /// it commits (snapshots as they see its writes), a roll-back to a
    /// savepoint opened before drops it, and it is durable with the commit.
    /// No tree is written and no lock taken: counters commute, so
    /// concurrent transactions never conflict on them. See `counts.rs`.
    pub fn add_count(&self, d: &crate::Dictionary, counter: usize, delta: i64) -> Result<()> {
        if counter >= COUNTERS {
            return Err(Error::invalid(format!("counter {counter}: a dictionary has {COUNTERS}")));
        }
        if !Arc::ptr_eq(&d.tree.ctx, &self.shared.mgr.ctx) {
            return Err(Error::invalid("the dictionary belongs to another environment"));
        }
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        d.tree.check_writable()?;
        if delta == 0 {
            return Ok(());
        }
        // Folded into the newest entry for the same counter unless a
        // savepoint lies between them (a roll-back must find its mark).
        let mark = st.savepoints.last().map_or(0, |s| s.3);
        let len = st.counts.len();
        match st.counts.last_mut() {
            Some((t, c, v)) if len > mark && Arc::ptr_eq(t, &d.tree) && *c == counter => {
                *v = v.wrapping_add(delta);
            }
            _ => st.counts.push((d.tree.clone(), counter, delta)),
        }
        Ok(())
    }

    /// Counter `counter` of `d` as this transaction sees it: what its
    /// snapshot sees committed (repeatable read; other levels: everything
    /// committed) plus its own deltas.
    pub fn count(&self, d: &crate::Dictionary, counter: usize) -> Result<i64> {
        if counter >= COUNTERS {
            return Err(Error::invalid(format!("counter {counter}: a dictionary has {COUNTERS}")));
        }
        let st = self.st.lock();
        Self::check_live(&st)?;
        d.tree.check_readable()?;
        let own = st
            .counts
            .iter()
            .filter(|(t, c, _)| Arc::ptr_eq(t, &d.tree) && *c == counter)
            .fold(0i64, |a, (_, _, v)| a.wrapping_add(*v));
        let snap = match self.view_mode() {
            ViewMode::Snapshot(s) => Some(s.txid),
            ViewMode::Latest | ViewMode::Uncommitted => None,
        };
        Ok(d.tree.counts.lock().seen_by(snap)[counter].wrapping_add(own))
    }

    /// The transaction's counter deltas summed per dictionary (none all
    /// zero), by file id: what its commit or prepare record carries.
    fn counts_by_dict(st: &Work) -> Vec<(Arc<Tree>, Deltas)> {
        let mut out: Vec<(Arc<Tree>, Deltas)> = Vec::new();
        for (t, c, v) in &st.counts {
            match out.iter_mut().find(|(o, _)| Arc::ptr_eq(o, t)) {
                Some((_, d)) => d[*c] = d[*c].wrapping_add(*v),
                None => {
                    let mut d = [0; COUNTERS];
                    d[*c] = *v;
                    out.push((t.clone(), d));
                }
            }
        }
        out.retain(|(_, d)| d.iter().any(|&v| v != 0));
        out.sort_by_key(|(t, _)| t.file_id);
        out
    }

    /// Opens a savepoint: [`Txn::rollback_to`] undoes what was written after it.
    pub fn savepoint(&self) -> Result<Savepoint> {
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        let id = st.next_sp;
        st.next_sp = st.next_sp.checked_add(1).ok_or_else(|| Error::invalid("too many savepoints"))?;
        let serial = st.next_serial;
        st.next_serial += 1;
        let pos = st.undo.len();
        let counted = st.counts.len();
        st.savepoints.push((id, pos, serial, counted));
        Ok(Savepoint { owner: self.shared.instance, txid: self.id(), depth: st.savepoints.len() - 1, serial })
    }

    fn find(&self, st: &Work, sp: Savepoint) -> Result<usize> {
        if sp.owner != self.shared.instance {
            return Err(Error::invalid(format!(
                "that savepoint belongs to transaction {} (another transaction object), not to transaction {}",
                sp.txid,
                self.id()
            )));
        }
        match st.savepoints.get(sp.depth) {
            Some(s) if s.2 == sp.serial => Ok(sp.depth),
            _ => Err(Error::invalid("that savepoint was released or rolled back past")),
        }
    }

    /// Keeps what was written since `sp` as part of the enclosing level and
    /// closes `sp` and every savepoint opened after it.
    pub fn release(&self, sp: Savepoint) -> Result<()> {
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        let i = self.find(&st, sp)?;
        st.savepoints.truncate(i);
        // What the released levels counted joins the enclosing level: the
        // entries after its mark fold together, so a transaction of many
        // statements (the SQL layer opens a savepoint for each) keeps one
        // entry per counter instead of one per statement.
        let mark = st.savepoints.last().map_or(0, |s| s.3);
        fold_counts(&mut st.counts, mark);
        Ok(())
    }

    /// Undoes everything written since `sp`; `sp` stays open (as in SQL).
    ///
    /// If the roll-back cannot reach every dictionary (one failed), the
    /// whole transaction is aborted and the error returned: committing it
    /// would make what the roll-back missed count as committed.
    pub fn rollback_to(&self, sp: Savepoint) -> Result<()> {
        let mut st = self.st.lock();
        Self::check_writable(&st)?;
        let i = self.find(&st, sp)?;
        let (lo, pos, serial, counted) = st.savepoints[i];
        let hi = st.next_sp;
        if st.undo.len() > pos {
            // A failed log refuses the record: nothing has changed then.
            self.log_end(&Record::TxnAbort { txid: self.id(), lo, hi })?;
            let body = MsgBody::plain_txn(MsgKind::Abort, self.id(), MsgBody::abort_val(lo, hi));
            if let Err(e) = self.send_cleanup(&mut st, &body, pos) {
                let _ = self.finish_locked(&mut st, false);
                return Err(Error::ReadOnly(format!(
                    "rolling back to a savepoint could not finish, so transaction {} was aborted: {e}",
                    self.id()
                )));
            }
        }
        st.savepoints.truncate(i);
        // Counts live only in this `Txn` until the commit record: no record.
        st.counts.truncate(counted);
        // A fresh id: a replay of this rollback must not touch later writes.
        let id = st.next_sp;
        st.next_sp += 1;
        st.savepoints.push((id, pos, serial, counted));
        Ok(())
    }

    /// Appends a commit or abort record to the log (if it is set up yet);
    /// its LSN.
    fn log_end(&self, rec: &Record) -> Result<Option<u64>> {
        match self.shared.mgr.ctx.log.get() {
            Some(log) => Ok(Some(log.append(&rec.encode()).map_err(log_failed)?)),
            None => Ok(None),
        }
    }

    /// Sends the clean-up message `body` to every key written from undo
    /// entry `from` on, unlogged (recovery derives them from the record).
    ///
    /// A dictionary that does not take its messages (it failed, a node
    /// could not be read, ...) is failed (`Tree::fail`) and skipped, and the
    /// others still get theirs; the first error is returned. Why fail it
    /// rather than retry or leave the transaction holding its locks: the
    /// keys it missed keep this transaction's provisional versions, and the
    /// invariant that at most one transaction has provisional versions on a
    /// key needs that no one writes them before the clean-up lands. A
    /// failed dictionary takes no writes, no checkpoint writes its file and
    /// the log is kept whole, so a restart replays it from its last good
    /// checkpoint and re-sends the clean-up from the log; meanwhile its
    /// readers resolve the versions by the state the manager keeps
    /// (`TxnManager::strand`). A retry could not know when the cause (a
    /// failed file, a damaged node) goes away, and the transaction's locks
    /// would block every other transaction on those keys until it did.
    fn send_cleanup(&self, st: &mut Work, body: &MsgBody, from: u64) -> Result<()> {
        let txid = self.id();
        let Work { undo, trees, missed, .. } = st;
        let mut first_err: Option<Error> = None;
        let fail = |t: &Tree, e: &Error| {
            t.fail(format!("the clean-up of transaction {txid} could not be written: {e}"));
        };
        let drained = undo.drain_from(from, &mut |chunk| {
            // One tree write per run of keys of the same dictionary.
            let mut i = 0;
            while i < chunk.len() {
                let (id, start) = (chunk[i].0, i);
                while i < chunk.len() && chunk[i].0 == id {
                    i += 1;
                }
                let msgs = cleanup_msgs(&chunk[start..i], body);
                let id = id & !UNDO_RANGE;
                let Some(t) = trees.get(&id) else { continue };
                if t.dropped.load(Ordering::Relaxed) || missed.contains(&id) {
                    continue;
                }
                if let Err(e) = t.write_msgs(&msgs, None, Logging::None) {
                    fail(t, &e);
                    missed.insert(id);
                    first_err.get_or_insert(e);
                }
            }
            Ok(())
        });
        if let Err(e) = drained {
            // The undo list could not be read back: which keys missed their
            // messages is unknown, so every dictionary written may have.
            for (id, t) in trees.iter().filter(|(_, t)| !t.dropped.load(Ordering::Relaxed)) {
                fail(t, &e);
                missed.insert(*id);
            }
            first_err.get_or_insert(e);
        }
        match first_err {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Ends the transaction, making its writes visible and (with
    /// `commit_sync`) durable.
    ///
    /// Once the commit record is appended the transaction is committed:
    /// if its clean-up then cannot reach a dictionary (which fails, see
    /// `send_cleanup`), readers still see it committed, a restart finishes
    /// it, and `commit` waits for the record and returns `Ok`. If the record
    /// cannot be appended (the log failed), the transaction is rolled back
    /// and the log's error returned.
    pub fn commit(self) -> Result<()> {
        self.finish(true)
    }

    /// Ends the transaction, undoing its writes.
    pub fn abort(self) -> Result<()> {
        self.finish(false)
    }

    fn finish(&self, commit: bool) -> Result<()> {
        let mut st = self.st.lock();
        Self::check_live(&st)?;
        self.finish_locked(&mut st, commit)
    }

    /// Commits or aborts. Whatever fails on the way, the transaction ends
    /// here: its locks are released and the manager forgets it (or, if its
    /// clean-up missed a failed dictionary, keeps only its outcome for that
    /// dictionary's readers). Nothing is left waiting for a restart.
    fn finish_locked(&self, st: &mut Work, commit: bool) -> Result<()> {
        st.done = true;
        let sh = &self.shared;
        sh.end.store(ENDED, Ordering::SeqCst);
        let m = sh.mgr.clone();
        let txid = self.id();
        let mut outcome = Ok(());
        let (mut state, mut lsn) = (TxnState::Aborted, None);
        let counts = if commit { Self::counts_by_dict(st) } else { Vec::new() };
        // A prepared transaction logs its end even if it wrote nothing:
        // else recovery would restore it prepared from its prepare record.
        if st.undo.len() > 0 || st.prepared || !counts.is_empty() {
            // With counts: the record's append and their addition (in
            // `decide`) on one side of any checkpoint's begin, which
            // records the totals with the begin's LSN (`counts.rs`).
            // Released before the clean-up, whose tree writes take it again.
            let ckpt = (!counts.is_empty()).then(|| m.ctx.checkpoint_lock.read());
            let rec = if commit {
                Record::TxnCommit { txid, counts: counts.iter().map(|(t, d)| (t.file_id, *d)).collect() }
            } else {
                Record::TxnAbort { txid, lo: 0, hi: u32::MAX }
            };
            if m.ctx.closed.load(Ordering::SeqCst) {
                // The environment is closed: log and trees take nothing
                // more. Its close kept the log (this transaction was
                // unfinished), and the next open rolls the transaction back
                // (or, if prepared, restores it prepared).
                if commit || st.prepared {
                    outcome = Err(Error::invalid("the environment is closed"));
                }
            } else {
                match self.log_end(&rec) {
                    Ok(l) => {
                        lsn = l;
                        if commit {
                            state = TxnState::Committed;
                        }
                    }
                    // Nothing was appended (a failed log appends nothing
                    // more): not committed; the next open rolls it back
                    // (no end record), and here it is rolled back now. A
                    // prepared transaction's next open restores it
                    // prepared instead, so its roll-back is not done
                    // either: the error is returned.
                    Err(e) if commit || st.prepared => outcome = Err(e),
                    Err(_) => {}
                }
                m.decide(txid, state, &counts);
                drop(ckpt);
                let body = match state {
                    TxnState::Committed => MsgBody::plain_txn(MsgKind::Commit, txid, Box::new([])),
                    _ => MsgBody::plain_txn(MsgKind::Abort, txid, MsgBody::abort_val(0, u32::MAX)),
                };
                // (An error is in `st.missed`: the dictionaries it failed.)
                let _ = self.send_cleanup(st, &body, 0);
            }
        }
        st.undo.remove_file(&m.ctx);
        let was_prepared = st.prepared;
        if st.prepared {
            m.state.lock().prepared.retain(|_, (t, _)| *t != txid);
        }
        // Missed earlier too: a failed savepoint roll-back's keys are no
        // longer on the undo list.
        if st.missed.is_empty() {
            m.end(txid);
        } else {
            m.strand(txid);
        }
        // Only now: the write locks kept anyone from writing these keys
        // before the clean-up messages were in the trees (or their
        // dictionaries failed and take no writes).
        m.locks.release_all(txid);
        sh.end.store(RELEASED, Ordering::SeqCst);
        // A commit is durable when it returns (with `commit_sync`), and so
        // is the roll-back of a prepared transaction: without its abort
        // record on disk, the next open would restore it prepared after
        // its owner (XA ROLLBACK) was told it was gone.
        let durable = state == TxnState::Committed || was_prepared;
        if let (Some(log), Some(lsn), true, true) = (m.ctx.log.get(), lsn, durable, m.ctx.commit_sync) {
            log.sync_to(lsn).map_err(log_failed)?;
        }
        outcome
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        let mut st = self.st.lock();
        if st.detached {
            return;
        }
        if st.prepared && !st.done && self.shared.mgr.ctx.closed.load(Ordering::SeqCst) {
            // The environment is closed: nothing can end it before the
            // next open, which restores it from the log (kept: it was
            // unfinished at the close).
            st.done = true;
            return;
        }
        if st.prepared && !st.done {
            // A prepared transaction outlives its owner: the manager keeps
            // it, with its locks, for `Env::commit_prepared` or
            // `Env::rollback_prepared` (MySQL's XA COMMIT from another
            // connection after the preparing one went away).
            let mut work = std::mem::replace(&mut *st, Work::new());
            st.done = true;
            drop(st);
            work.detached = true;
            let m = self.shared.mgr.clone();
            let t = Txn { shared: self.shared.clone(), st: Mutex::new(work) };
            let mut s = m.state.lock();
            match s.prepared.values_mut().find(|(id, _)| *id == self.shared.txid) {
                Some(slot) => slot.1 = Some(t),
                None => {
                    drop(s);
                    debug_assert!(false, "a prepared transaction missing from the manager's list");
                    drop(t);
                }
            }
            return;
        }
        let done = st.done;
        drop(st);
        if !done {
            if let Err(e) = self.finish(false) {
                eprintln!("fractaldb: aborting dropped transaction {} failed: {e}", self.id());
            }
        }
    }
}
