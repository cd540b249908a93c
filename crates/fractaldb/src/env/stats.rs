//! What an environment reports of itself: live and prepared transactions,
//! locks and lock waits, and its counters.

use super::*;

/// A transaction begun and not yet finished ([`Env::live_transactions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTxn {
    pub id: u64,
    /// Its `TxnOptions::client_id`.
    pub client_id: u64,
    pub started: std::time::SystemTime,
}

/// A transaction prepared for two-phase commit ([`Env::prepared`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTxn {
    /// The id it was prepared under ([`Txn::prepare`]).
    pub xid: Vec<u8>,
    pub id: u64,
    /// Still owned by the `Txn` that prepared it (only that owner can end
    /// it); else [`Env::commit_prepared`] / [`Env::rollback_prepared`] can.
    pub attached: bool,
}

/// A key range lock held by a transaction ([`Env::locks`]). Both ends are
/// included; a point lock has `left == right`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    pub txn_id: u64,
    pub dictionary: String,
    pub left: LockEnd,
    pub right: LockEnd,
    /// Exclusive (a write lock), else shared.
    pub write: bool,
}

/// A lock request waiting for another transaction's lock ([`Env::lock_waits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockWait {
    pub requesting_txn_id: u64,
    pub blocking_txn_id: u64,
    pub dictionary: String,
    pub left: LockEnd,
    pub right: LockEnd,
    pub started: std::time::SystemTime,
}

/// Counters of an environment.
#[derive(Debug, Clone, Copy)]
pub struct EnvStats {
    pub cache: CacheStats,
    /// Counters of the write-ahead log (records, fsyncs, files).
    pub log: LogStats,
    /// Nodes a writer changed while a checkpoint still had to write them,
    /// so they were copied first (the price of never making writers wait).
    pub checkpoint_copies: u64,
    /// Bytes of such copies waiting for the checkpoint to write them
    /// (charged to the cache meanwhile), and the most there were at once
    /// since the open.
    pub checkpoint_copy_bytes: u64,
    pub checkpoint_copy_bytes_peak: u64,
    /// Buffers the evictor moved to spills before writing their internal
    /// node back, rather than writing them with it (`flush.rs`).
    pub write_back_spills: u64,
    /// Spills read from disk by readers (point reads, cursors, checks,
    /// merges), and their bytes: each is a whole spill block read and
    /// decoded for the messages it holds.
    pub spill_reads: u64,
    pub spill_read_bytes: u64,
    /// The lock tree: locks held, bytes, waits, timeouts, deadlocks.
    pub locks: LockStats,
    /// Transactions begun and not yet finished.
    pub open_transactions: usize,
    /// What recovery did when the environment opened.
    pub recovery: RecoveryStats,
}

impl Env {
    /// The transactions begun and not yet committed or aborted, by id
    /// (autocommit writes included while they run). A copy, for
    /// introspection (INFORMATION_SCHEMA.TOKUDB_TRX).
    pub fn live_transactions(&self) -> Vec<LiveTxn> {
        self.inner.txns.live()
    }

    /// The transactions prepared for two-phase commit and not yet ended,
    /// by xid: those prepared since the open, and those a restart
    /// restored prepared (see [`Txn::prepare`]).
    pub fn prepared(&self) -> Vec<PreparedTxn> {
        self.inner.txns.prepared()
    }

    /// The dictionary names by file id (locks name dictionaries by file id).
    fn dict_names(&self) -> HashMap<u64, String> {
        self.inner.open.lock().catalog.dicts.iter().map(|(n, &id)| (id, n.clone())).collect()
    }

    /// Every key range lock held now, by dictionary then transaction. A
    /// copy, for introspection (INFORMATION_SCHEMA.TOKUDB_LOCKS).
    pub fn locks(&self) -> Vec<LockInfo> {
        let names = self.dict_names();
        self.inner
            .txns
            .locks
            .held_locks()
            .into_iter()
            .filter_map(|l| {
                Some(LockInfo {
                    txn_id: l.owner,
                    dictionary: names.get(&l.dict)?.clone(),
                    left: l.lo,
                    right: l.hi,
                    write: l.mode == LockMode::Write,
                })
            })
            .collect()
    }

    /// Every lock request waiting now, once per transaction in its way,
    /// by requester. A copy, for introspection
    /// (INFORMATION_SCHEMA.TOKUDB_LOCK_WAITS).
    pub fn lock_waits(&self) -> Vec<LockWait> {
        let names = self.dict_names();
        self.inner
            .txns
            .locks
            .waits()
            .into_iter()
            .filter_map(|(l, blocker, started)| {
                Some(LockWait {
                    requesting_txn_id: l.owner,
                    blocking_txn_id: blocker,
                    dictionary: names.get(&l.dict)?.clone(),
                    left: l.lo,
                    right: l.hi,
                    started,
                })
            })
            .collect()
    }

    /// Counters of the cache.
    pub fn stats(&self) -> EnvStats {
        let log = self.inner.ctx.log.get().map(|l| l.stats()).unwrap_or_default();
        let checkpoint_copies = self.inner.ctx.checkpoint_copies.load(Ordering::Relaxed);
        EnvStats {
            cache: self.inner.ctx.cache.stats(),
            log,
            checkpoint_copies,
            checkpoint_copy_bytes: self.inner.ctx.checkpoint_copy_bytes.load(Ordering::Relaxed),
            checkpoint_copy_bytes_peak: self.inner.ctx.checkpoint_copy_bytes_peak.load(Ordering::Relaxed),
            write_back_spills: self.inner.ctx.write_back_spills.load(Ordering::Relaxed),
            spill_reads: self.inner.ctx.spill_reads.load(Ordering::Relaxed),
            spill_read_bytes: self.inner.ctx.spill_read_bytes.load(Ordering::Relaxed),
            locks: self.inner.txns.locks.stats(),
            open_transactions: self.inner.txns.unfinished(),
            recovery: *self.inner.recovery.lock(),
        }
    }
}
