//! The fractal tree (Bε-tree) of one dictionary.
//!
//! Writes put a message into the root's buffer and return; the cleaner
//! (`flush.rs`) moves buffered messages down one level at a time and splits
//! and merges nodes. Reads descend with hand-over-hand read locks, collect
//! the messages for their key from every buffer on the way, and apply them
//! in MSN order to a copy of what the leaf holds.
//!
//! Reads never change the leaf (a deliberate departure from PerconaFT, which
//! applies ancestor messages to the cached leaf and tracks the highest MSN
//! applied per basement): here a message reaches a leaf exactly once, by a
//! flush that removes it from its buffer in the same locked step, so no
//! per-basement MSN bookkeeping can go wrong across basement splits and
//! merges, readers need only shared locks, and reading a clean leaf leaves
//! it clean. The price, re-applying buffered messages on every read of a
//! hot range, is small because buffers are indexed by key.
//!
//! Locks are taken top-down only: parent before child, left sibling before
//! right, and never while waiting for I/O. A thread that misses the cache
//! drops its locks, reads the node (keeping it pinned) and starts over.

pub(crate) mod basement;
pub(crate) mod bloom;
pub(crate) mod buffer;
pub(crate) mod check;
mod checkpoint;
pub(crate) use checkpoint::TreeCheckpoint;
pub(crate) mod cursor;
pub(crate) mod estimate;
mod fetch;
pub(crate) mod flush;
mod gate;
pub(crate) mod leafentry;
pub(crate) mod load;
pub(crate) mod message;
pub(crate) mod meta;
pub(crate) mod node;
pub(crate) mod pending;
mod poison;
mod read;
pub(crate) mod serialize;
mod spill;
pub(crate) use spill::SpillMemo;
mod write;

use std::cmp::Ordering;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::cache::{Cache, DictId, Entry, NodeOwner};
use crate::error::{Error, Result};
use crate::file::{BlockFile, BlockNum, Extent, Vfs};
use crate::log::record::{encode_write, Msgs};
use crate::log::Log;
use leafentry::{Entry as LeEntry, ReadView, Seen, TxnStates};
use message::{KeyedMsg, MsgBody, MsgKind, MsgRef, Stamp, UpdateFns};

/// How a write is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Logging {
    /// One record; with `commit_sync`, return once it is durable.
    Commit,
    /// One record; never wait (the caller syncs, after releasing its locks).
    NoWait,
    /// No record: transaction clean-up messages, which recovery derives
    /// from the commit and abort records.
    None,
}

/// The reason a poisoned tree gives before the panicking thread recorded its own.
const POISONED: &str = "a panic interrupted a change to the dictionary in memory";
/// The most a root's buffers may hold before a write into them is refused
/// (`write_msgs`): far below the 4 GiB a buffer's u32 offsets reach, even
/// after a flush adds the whole of it to a child's buffer and spills of up
/// to `SPILL_NODES` node sizes (`MAX_NODE_BYTES` at most); far above the
/// `WRITER_HELPS_AT_NODES` node sizes back-pressure keeps it to.
const MAX_ROOT_BUFFER_BYTES: usize = 1 << 30;

/// The most cleaner steps a writer runs before its write when the root is
/// over `flush::WRITER_HELPS_AT_NODES` node sizes (back-pressure).
const WRITER_HELP_STEPS: usize = 64;

/// Log bytes buffered in memory past which a writer syncs the log even
/// when it need not wait for its record.
const LOG_BUFFER_BYTES: usize = 4 << 20;

/// How often a read starts over after meeting a provisional version of a
/// transaction the manager has just forgotten (its clean-up messages
/// arrived meanwhile) before it calls the entry damaged.
const RETRIES: usize = 10_000;
use crate::txn::counts::{Counts, COUNTERS};
use buffer::EMPTY_BUFFER_RAW_LEN;
pub(crate) use gate::Gate;
use meta::{Meta, Settings, NO_ROOT};
use node::{Body, Node, PartInfo};
pub(crate) use poison::panic_message;
use serialize::{decode_basement, decode_buffer, parse_header, HeaderError};

/// A log that failed to append or sync: the environment refuses writes.
pub(crate) fn log_failed(e: Error) -> Error {
    match e {
        // A refused record is not a failed log: nothing was appended.
        e @ (Error::ReadOnly(_) | Error::NoSpace { .. } | Error::TooLarge { .. }) => e,
        e => Error::ReadOnly(format!("the log failed: {e}")),
    }
}

/// A total order on keys. The default is bytewise (`<[u8]>::cmp`).
pub type Comparator = fn(&[u8], &[u8]) -> Ordering;

pub(crate) fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// A key's first 8 bytes as a big-endian integer, zero-padded: ordered as
/// the bytewise order of the keys, ties aside (then compare the keys).
#[inline]
pub(crate) fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// A dictionary's key order as the message buffers use it: the comparator,
/// and whether it is the bytewise order. Only then may a buffer order keys
/// by their first 8 bytes before looking at the rest (`buffer.rs`).
#[derive(Clone, Copy)]
pub(crate) struct KeyOrder {
    pub cmp: Comparator,
    pub bytewise: bool,
}

/// State the trees of one environment share.
pub(crate) struct Context {
    /// The last MSN handed out. MSNs are taken while the root is locked.
    pub msn: AtomicU64,
    pub fns: UpdateFns,
    /// Held shared by anything that changes nodes, exclusively by a checkpoint.
    pub checkpoint_lock: RwLock<()>,
    pub cache: Arc<Cache>,
    /// Wakes the cleaner thread; the flag says "work to do".
    pub cleaner_wake: (Mutex<bool>, Condvar),
    /// Whether a spill writer thread runs (`pending.rs`); without one,
    /// spills wait until the cleaner or `Env::run_cleaner` writes them.
    pub spill_writer: bool,
    /// Wakes the spill writer thread; the flag says "spills to write".
    pub spill_wake: (Mutex<bool>, Condvar),
    /// Set when the environment closes; every later call fails.
    pub closed: AtomicBool,
    /// Every file operation goes through it.
    pub vfs: Arc<dyn Vfs>,
    /// The write-ahead log, set once recovery has replayed it: writes made
    /// before (the replay itself) are not logged again.
    pub log: OnceLock<Arc<Log>>,
    /// Whether a write waits for its log record to be durable.
    pub commit_sync: bool,
    /// Writes are refused while the disk has less free space than this.
    pub reserve_free_bytes: u64,
    /// When free space was last looked at (ms since `epoch`), and whether it was short.
    pub space_checked_ms: AtomicU64,
    /// Nodes copied because a writer changed them during a checkpoint.
    pub checkpoint_copies: AtomicU64,
    /// Bytes of those copies not yet written (charged to the cache), and
    /// the most there have been at once since the open.
    pub checkpoint_copy_bytes: AtomicU64,
    pub checkpoint_copy_bytes_peak: AtomicU64,
    /// Buffers moved to spills before their node's write-back (`flush.rs`).
    pub write_back_spills: AtomicU64,
    /// Spills a reader read from their blocks (`Tree::read_spill`; not
    /// those still in memory, waiting for the spill writer), and their
    /// bytes on disk.
    pub spill_reads: AtomicU64,
    /// Spills readers decoded lately (`spill.rs`).
    pub spill_memo: SpillMemo,
    pub spill_read_bytes: AtomicU64,
    /// Bytes of records written since free space was last looked at.
    pub space_written: AtomicU64,
    pub space_short: AtomicBool,
    pub epoch: std::time::Instant,
    pub dir: std::path::PathBuf,
    /// Every committed version with a txid below this is visible to every
    /// live and future snapshot (`leafentry.rs`, garbage collection). Set by
    /// the transaction manager; it only grows, so a stale read is safe.
    pub horizon: AtomicU64,
    /// The next transaction id to hand out (the transaction manager takes
    /// ids from it; checkpoints record it in each header).
    pub next_txid: AtomicU64,
    /// Bounds how many client threads run tree code at once.
    pub gate: Gate,
    /// Set once something left the whole environment unable to take
    /// writes safely (a transaction's clean-up that could not finish, a
    /// background thread that died): every later write fails with
    /// `Error::ReadOnly` naming this reason. Reopening recovers.
    pub env_failure: Mutex<Option<String>>,
}

impl Context {
    /// Turns the environment read-only with `reason` (the first reason wins).
    pub(crate) fn fail_env(&self, reason: String) {
        let mut f = self.env_failure.lock();
        if f.is_none() {
            eprintln!("fractaldb: {} is read-only from now on: {reason}", self.dir.display());
            *f = Some(reason);
        }
    }

    /// `Err(ReadOnly)` once `fail_env` was called.
    pub(crate) fn check_env_writable(&self) -> Result<()> {
        match &*self.env_failure.lock() {
            Some(reason) => Err(Error::ReadOnly(reason.clone())),
            None => Ok(()),
        }
    }
}

impl Context {
    /// Refuses writes while the disk is nearly full (looked at every 50 ms at
    /// most): a full disk must stop writes cleanly, before a checkpoint or
    /// the log runs out of room mid-write.
    /// Also looked at once `reserve / 16` bytes of records were written since
    /// the last look, so a fast writer cannot eat the reserve between looks.
    pub(crate) fn check_space(&self, record_bytes: usize) -> Result<()> {
        if self.reserve_free_bytes == 0 {
            return Ok(());
        }
        let written = self.space_written.fetch_add(record_bytes as u64, AtomicOrdering::Relaxed);
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.space_checked_ms.load(AtomicOrdering::Relaxed);
        if (now >= last + 50 || written >= self.reserve_free_bytes / 16)
            && self
                .space_checked_ms
                .compare_exchange(last, now, AtomicOrdering::Relaxed, AtomicOrdering::Relaxed)
                .is_ok()
        {
            self.space_written.store(0, AtomicOrdering::Relaxed);
            let short = self.vfs.free_bytes(&self.dir).is_some_and(|f| f < self.reserve_free_bytes);
            self.space_short.store(short, AtomicOrdering::Relaxed);
        }
        if self.space_short.load(AtomicOrdering::Relaxed) {
            let free = self.vfs.free_bytes(&self.dir).unwrap_or(0);
            if free < self.reserve_free_bytes {
                return Err(Error::NoSpace { free, reserve: self.reserve_free_bytes });
            }
            self.space_short.store(false, AtomicOrdering::Relaxed);
        }
        Ok(())
    }

    pub(crate) fn wake_cleaner(&self) {
        wake(&self.cleaner_wake);
    }

    pub(crate) fn wake_spill_writer(&self) {
        wake(&self.spill_wake);
    }
}

/// Sets a background thread's "work to do" flag and wakes it.
fn wake((flag, cv): &(Mutex<bool>, Condvar)) {
    let mut w = flag.lock();
    if !*w {
        *w = true;
        cv.notify_one();
    }
}

/// Sleeps until the flag is set or `timeout` passes, then clears it: how a
/// background thread with nothing to do waits for `wake`.
pub(crate) fn wait_woken((flag, cv): &(Mutex<bool>, Condvar), timeout: std::time::Duration) {
    let mut w = flag.lock();
    if !*w {
        cv.wait_for(&mut w, timeout);
    }
    *w = false;
}

/// One dictionary's tree and file.
pub(crate) struct Tree {
    pub dict: DictId,
    /// The catalog's id of this dictionary (its file is `d<file_id>.fdb`);
    /// log records name dictionaries by it.
    pub file_id: u64,
    /// The `ckpt_lsn` of the checkpoint the tree was opened from: recovery
    /// replays only log records at or after it.
    pub opened_ckpt_lsn: u64,
    pub(crate) file: BlockFile,
    pub(crate) settings: Settings,
    pub(crate) cmp: Comparator,
    /// `cmp`, and whether it is bytewise (fixed at creation: `settings.comparator` is `None`).
    pub(crate) order: KeyOrder,
    /// The root's block number never changes: a root split moves the root's
    /// contents into new children and keeps the root block.
    root: Mutex<BlockNum>,
    pub(crate) ctx: Arc<Context>,
    me: Weak<Tree>,
    /// Buffered bytes at the root (or leaf bytes of a root leaf), for
    /// deciding without a lock whether to wake the cleaner or help it.
    pub(crate) root_pressure_bytes: AtomicUsize,
    /// Set by a failed background write: the tree refuses writes after it.
    failure: Mutex<Option<String>>,
    /// Set when a panic interrupted a change to a node in memory (see
    /// `changing`): the tree may be half-changed, so it refuses reads as
    /// well as writes, is never checkpointed again, and its cached nodes
    /// are dropped rather than written back, until the environment is
    /// reopened (recovery replays the log from its last good header).
    /// Always set together with `failure` (the reason), the flag first:
    /// it is set while the panicking thread still holds its node locks.
    poisoned: AtomicBool,
    /// What panicked and its message, for the errors of refused reads.
    poison_cause: Mutex<Option<(String, String)>>,
    pub(crate) dropped: AtomicBool,
    /// Internal nodes the cleaner should visit (left over-budget by a split).
    pub(crate) flush_queue: Mutex<Vec<BlockNum>>,
    /// Children whose spills a read had to read, or whose buffer gave a
    /// cursor batch `cursor::READ_FLUSH_MSGS` messages or more, as (parent,
    /// child): the cleaner flushes them down when it has nothing more
    /// pressing (`flush.rs`, Spills), so later reads find one basement
    /// again.
    pub(crate) merge_queue: Mutex<Vec<(BlockNum, BlockNum)>>,
    /// Where the next drain step descends (`flush.rs`, `drain_step`);
    /// `None`: the first key.
    pub(crate) drain_hand: Mutex<Option<Box<[u8]>>>,
    /// Whether the current drain pass has flushed anything.
    pub(crate) drain_flushed: AtomicBool,
    /// Begin-time copies of nodes changed during a checkpoint before it
    /// wrote them (see `cow`); the checkpoint writes and drops them. Each
    /// is charged to the cache while it lives (`CheckpointCopy`).
    ckpt_clones: Mutex<Vec<checkpoint::CheckpointCopy>>,
    /// Spills whose blocks are not written yet (`pending.rs`).
    pub(crate) pending: pending::Pending,
    /// Held exclusively by `check` for its whole walk; shared by whatever
    /// changes which nodes and spills this tree has or what they hold:
    /// writers (`write_msgs`, before the gate and the checkpoint lock, so a
    /// writer waiting here holds nothing other trees need), cleaner and
    /// drain steps and write-back spills (which try it and skip the tree
    /// while a check holds it). See `check.rs` for why.
    pub(crate) check_lock: RwLock<()>,
    /// The dictionary's counters (`txn/counts.rs`): changed only by
    /// commits (under the manager's lock) and recovery, read by
    /// transactions and by a checkpoint's begin.
    pub(crate) counts: Mutex<Counts>,
}

impl Tree {
    /// Creates a new dictionary file holding an empty tree.
    pub(crate) fn create(
        path: &Path,
        dict: DictId,
        file_id: u64,
        settings: Settings,
        cmp: Comparator,
        direct_io: bool,
        ctx: Arc<Context>,
    ) -> Result<Arc<Tree>> {
        // `Env::create_dictionary` checked them; `Meta::decode` checks them
        // again at every open.
        crate::limits::check_settings(
            settings.node_size_bytes,
            settings.basement_size_bytes,
            settings.fanout,
        )
        .map_err(Error::invalid)?;
        let meta =
            Meta { root: NO_ROOT, max_msn: 0, ckpt_lsn: 0, next_txid: 0, settings, counts: [0; COUNTERS] };
        let file = BlockFile::create(&*ctx.vfs, path, direct_io, &meta.encode())?;
        let tree = Tree::new(dict, file_id, file, meta, cmp, ctx);
        tree.make_root()?;
        Ok(tree)
    }

    /// Opens a dictionary file at its newest valid checkpoint.
    pub(crate) fn open(
        path: &Path,
        dict: DictId,
        file_id: u64,
        direct_io: bool,
        comparators: &dyn Fn(&str) -> Option<Comparator>,
        ctx: Arc<Context>,
    ) -> Result<Arc<Tree>> {
        let (file, meta) = BlockFile::open(&*ctx.vfs, path, direct_io)?;
        let meta = Meta::decode(&meta).map_err(|r| Error::corrupt(path, None, r))?;
        let cmp = match &meta.settings.comparator {
            None => bytewise as Comparator,
            Some(name) => comparators(name).ok_or_else(|| {
                Error::invalid(format!(
                    "dictionary {} needs comparator {name:?}; register it in EnvOptions",
                    path.display()
                ))
            })?,
        };
        ctx.msn.fetch_max(meta.max_msn, AtomicOrdering::SeqCst);
        let root = meta.root;
        let tree = Tree::new(dict, file_id, file, meta, cmp, ctx);
        if root == NO_ROOT {
            tree.make_root()?;
        } else {
            *tree.root.lock() = root;
        }
        Ok(tree)
    }

    /// The tree of `file`, whose header holds `meta` (its root is set by
    /// the caller).
    fn new(
        dict: DictId,
        file_id: u64,
        file: BlockFile,
        meta: Meta,
        cmp: Comparator,
        ctx: Arc<Context>,
    ) -> Arc<Tree> {
        Arc::new_cyclic(|me| Tree {
            dict,
            file_id,
            opened_ckpt_lsn: meta.ckpt_lsn,
            file,
            order: KeyOrder { cmp, bytewise: meta.settings.comparator.is_none() },
            settings: meta.settings,
            cmp,
            root: Mutex::new(NO_ROOT),
            pending: pending::Pending::new(ctx.cache.clone()),
            ctx,
            me: me.clone(),
            root_pressure_bytes: AtomicUsize::new(0),
            failure: Mutex::new(None),
            poisoned: AtomicBool::new(false),
            poison_cause: Mutex::new(None),
            dropped: AtomicBool::new(false),
            flush_queue: Mutex::new(Vec::new()),
            merge_queue: Mutex::new(Vec::new()),
            drain_hand: Mutex::new(None),
            drain_flushed: AtomicBool::new(false),
            ckpt_clones: Mutex::new(Vec::new()),
            check_lock: RwLock::new(()),
            counts: Mutex::new(Counts::new(meta.counts)),
        })
    }

    fn make_root(&self) -> Result<()> {
        let bn = self.file.allocate_blocknum();
        self.ctx.cache.insert_new(self.dict, bn, Node::new_leaf(), self.owner());
        *self.root.lock() = bn;
        Ok(())
    }

    pub(crate) fn root_bn(&self) -> BlockNum {
        *self.root.lock()
    }

    pub(crate) fn owner(&self) -> Arc<dyn NodeOwner> {
        self.me.upgrade().expect("tree is alive while its nodes are")
    }

    pub(crate) fn path(&self) -> &Path {
        self.file.path()
    }

    pub(crate) fn corrupt(&self, bn: BlockNum, reason: impl Into<String>) -> Error {
        Error::corrupt(self.file.path(), Some(bn), reason)
    }

    /// The error for messages that could not be applied (`ApplyError`): a
    /// missing update function is the caller's (`InvalidArgument`), anything
    /// else corruption, of block `bn` if known (a read merges messages from
    /// every buffer on its path, so it names only the file).
    pub(crate) fn apply_error(&self, e: message::ApplyError, bn: Option<BlockNum>) -> Error {
        e.into_error(|r| Error::corrupt(self.file.path(), bn, r))
    }

    /// Fails once the environment is closed or the dictionary dropped.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.ctx.closed.load(AtomicOrdering::Relaxed) {
            return Err(Error::invalid("the environment is closed"));
        }
        if self.dropped.load(AtomicOrdering::Relaxed) {
            return Err(Error::invalid("the dictionary was dropped"));
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.dropped.load(AtomicOrdering::Relaxed) {
            return Err(Error::invalid("the dictionary was dropped"));
        }
        self.ctx.check_env_writable()?;
        match &*self.failure.lock() {
            Some(reason) => Err(Error::ReadOnly(reason.clone())),
            // Poisoned by a thread that has not recorded why yet.
            None if self.is_poisoned() => Err(Error::ReadOnly(POISONED.into())),
            None => Ok(()),
        }
    }

    /// True once `fail` was called (or the tree poisoned): the tree takes
    /// no more writes and no more checkpoints (its file's state, or its
    /// nodes in memory, are in doubt).
    pub(crate) fn is_failed(&self) -> bool {
        self.is_poisoned() || self.failure.lock().is_some()
    }

    /// Records a failure of a background write; the tree turns read-only.
    pub(crate) fn fail(&self, reason: String) {
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(reason);
        }
    }

    /// Frees a node's block and forgets it in the cache.
    pub(crate) fn free_node(&self, bn: BlockNum) {
        debug_assert!(self.check_lock.is_locked(), "a node freed outside the check lock (check.rs)");
        self.flush_queue.lock().retain(|&b| b != bn);
        self.ctx.cache.remove(self.dict, bn);
        self.file.free_blocknum(bn);
    }

    /// Allocates a block number for a new node and caches the node.
    pub(crate) fn new_node(&self, node: Node) -> Arc<Entry> {
        debug_assert!(self.check_lock.is_locked(), "a node made outside the check lock (check.rs)");
        let bn = self.file.allocate_blocknum();
        self.ctx.cache.insert_new(self.dict, bn, node, self.owner())
    }
}

impl NodeOwner for Tree {
    fn write_back(&self, e: &Entry) -> Result<bool> {
        // A write-back must not interleave with a checkpoint's writes; the
        // checkpoint lock comes before the node lock, as everywhere.
        let Some(_ckpt) = self.ctx.checkpoint_lock.try_read() else { return Ok(false) };
        if self.dropped.load(AtomicOrdering::Relaxed) {
            return Ok(false);
        }
        let Some(g) = e.node.try_upgradable_read() else { return Ok(false) };
        // A poisoned tree's nodes are never written (the evictor drops
        // them); checked under the node's lock, see `poisoned`.
        if !g.dirty || self.is_poisoned() {
            return Ok(false);
        }
        // An internal node's larger buffers go to spills first (see
        // `spill_for_write_back`); if a reader is in the node, it is written
        // as it is rather than waited for.
        // Not while `check` walks the tree: a spill made now would be one
        // its walk did not see (the node is written as it is instead).
        let walk = self.check_lock.try_read();
        let g = if !g.is_leaf() && e.bn != self.root_bn() && g.all_loaded() && walk.is_some() {
            match parking_lot::RwLockUpgradableReadGuard::try_upgrade(g) {
                Ok(mut w) => {
                    let _changing = self.changing();
                    self.spill_for_write_back(e.bn, &mut w)?;
                    parking_lot::RwLockWriteGuard::downgrade_to_upgradable(w)
                }
                Err(g) => g,
            }
        } else {
            g
        };
        self.write_clean(e, g)?;
        Ok(true)
    }

    fn background_error(&self, err: Error) {
        self.fail(format!("background write failed: {err}"));
    }

    fn poisoned(&self) -> bool {
        self.is_poisoned()
    }

    fn background_panic(&self, what: &str, payload: Box<dyn std::any::Any + Send>) {
        let message = panic_message(&*payload);
        match self.panic_cause(&*payload) {
            Some((callback, message)) => self.poison(&callback, &message),
            None => self.poison(&format!("{what} (fractaldb itself, a bug)"), &message),
        }
    }
}
