//! Environments and dictionaries: the engine's public face.
//!
//! An [`Env`] is a folder: a catalog of named dictionaries, one file per
//! dictionary, a write-ahead log, one node cache shared by all dictionaries,
//! a cleaner thread that flushes buffers, an evictor thread that keeps the
//! cache in budget, and a checkpointer. Every write is logged; opening the
//! folder replays the log from each dictionary's last checkpoint, so a crash
//! loses nothing acknowledged (see docs/ARCHITECTURE.md, Durability).

use std::collections::{HashMap, HashSet};
type FixedState = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::cache::NodeOwner;
use crate::cache::{spawn_evictor, Cache, CacheStats};
use crate::catalog::{dict_file, Catalog};
use crate::error::{Error, Result};
use crate::file::BlockFile;
use crate::file::{Codec, OsVfs, SpaceStats, Vfs};
use crate::limits;
use crate::log::record::Record;
use crate::log::{Log, LogOptions, LogStats};
use crate::tree::check::CheckReport;
use crate::tree::cursor::Cursor;
use crate::tree::flush::{Drain, Optimize};
use crate::tree::message::{MsgBody, MsgKind, PlainMsg, UpdateFn};
use crate::tree::meta::Meta;
use crate::tree::meta::Settings;
use crate::tree::{Comparator, Context, Logging, Tree};
use crate::txn::locktree::{LockEnd, LockMode, LockStats};
use crate::txn::{Isolation, Txn, TxnManager, TxnOptions, UndoKey, UNDO_RANGE};

mod backup;
mod batch;
mod checkpoint;
mod dictionary;
mod loader;
mod options;
mod range;
mod recover;
mod stats;
mod threads;
pub use backup::{is_env_file, BackupProgress, BackupReport, BACKUP_INCOMPLETE_FILE};
pub use batch::WriteBatch;
pub use checkpoint::CheckpointTiming;
pub use dictionary::Dictionary;
pub use loader::{LoadStats, Loader};
use options::validate_env_options;
pub use options::{DictOptions, EnvOptions, Notes};
pub use range::Range;
use recover::remove_orphans;
pub use recover::RecoveryStats;
pub use stats::{EnvStats, LiveTxn, LockInfo, LockWait, PreparedTxn};

struct Open {
    catalog: Catalog,
    /// Open trees by name; a fixed hasher so their order (in checkpoints,
    /// the cleaner) is the same in every run.
    trees: HashMap<String, Arc<Tree>, FixedState>,
}

struct Inner {
    path: PathBuf,
    direct_io: bool,
    ctx: Arc<Context>,
    txns: Arc<TxnManager>,
    comparators: HashMap<String, Comparator>,
    /// Held only for in-memory reads and swaps of the catalog and the
    /// open trees, never across I/O that waits for the disk: a checkpoint
    /// takes it under the exclusive checkpoint lock (`Inner::trees`), so
    /// every writer would wait for whoever holds it.
    open: Mutex<Open>,
    /// Serialises catalog changes (create, drop, rename) across their
    /// catalog writes and fsyncs, so `open` can be let go meanwhile: the
    /// catalog changes only under this lock, and a change reads it and
    /// swaps in the new one under the same hold.
    ddl: Mutex<()>,
    next_dict: AtomicU32,
    shutdown: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    closed: AtomicBool,
    /// Set once `Env::open` has succeeded. Until then `close` writes
    /// nothing: a failed open leaves the files as it found them.
    opened: AtomicBool,
    /// Serialises checkpoints (the periodic thread, `Env::checkpoint`, close).
    /// A backup holds it for its whole copy (`env/backup.rs`): no checkpoint
    /// may reuse the extents the copied checkpoint names or trim the log
    /// meanwhile. The periodic thread's checkpoints skip while it is held
    /// (`checkpoint_periodic_unless_busy`); the next period tries again.
    checkpointing: Mutex<()>,
    /// Lengths of the checkpoints taken, for benchmarks.
    checkpoint_log: Mutex<Vec<CheckpointTiming>>,
    /// `EnvOptions::checkpoint_log_bytes`, resolved (0: off).
    checkpoint_log_bytes: u64,
    /// The log's byte count (`LogStats::bytes`) when the last checkpoint
    /// began: the periodic thread checkpoints early once the log has grown
    /// `checkpoint_log_bytes` past it.
    log_bytes_at_checkpoint: AtomicU64,
    /// `EnvOptions::checkpoint_period` (None or zero: none), for pacing.
    checkpoint_period: Option<Duration>,
    /// Set by a recovery that replayed something: the periodic thread
    /// checkpoints at once (the open did not wait for it).
    checkpoint_due: AtomicBool,
    /// Set by a cleaner whose drain flushed something and left every
    /// dictionary clean: the periodic thread checkpoints soon (paced), so
    /// the blocks the drain superseded are freed without waiting a period.
    /// Any checkpoint clears it.
    checkpoint_after_drain: AtomicBool,
    /// Someone waits for a checkpoint (`Inner::checkpoint`: close,
    /// `Env::checkpoint`, a backup): a paced one running stops sleeping.
    hurry: AtomicBool,
    /// Set once by `recover`.
    recovery: Mutex<RecoveryStats>,
    _lock: Box<dyn Send + Sync>,
}

/// An open environment. Dropping it closes it (see [`Env::close`]).
pub struct Env {
    inner: Arc<Inner>,
}

impl Env {
    /// Opens the environment in `path`, creating the folder if needed.
    ///
    /// A folder with no catalog is a new environment only if it holds no
    /// dictionary file and no log file; a folder that does, or whose
    /// catalog cannot be read, is refused (`Error::Corrupt` naming the
    /// catalog). If the open fails, it has written no header, appended
    /// nothing to the log and removed no file, so a later open (say with
    /// the update function or comparator that was missing) recovers as if
    /// this one had not happened.
    pub fn open(path: impl AsRef<Path>, opts: EnvOptions) -> Result<Env> {
        let path = path.as_ref().to_path_buf();
        let vfs = opts.vfs.clone();
        vfs.create_dir_all(&path)?;
        let lock = vfs.lock(&path.join("LOCK")).map_err(|e| match e {
            Error::Locked(_) => Error::Locked(path.clone()),
            e => e,
        })?;
        validate_env_options(&opts)?;
        backup::refuse_incomplete(&*vfs, &path)?;
        let catalog = Catalog::open(&*vfs, &path)?;
        let cache = Cache::new(opts.cache_size_bytes, !opts.background_threads);
        let ctx = new_context(&opts, &path, cache.clone(), vfs);
        let txns = Arc::new(TxnManager::new(ctx.clone(), opts.lock_memory_bytes, opts.lock_timeout));
        let inner = Arc::new(Inner {
            path,
            direct_io: opts.direct_io,
            ctx,
            txns,
            comparators: opts.comparators.iter().cloned().collect(),
            open: Mutex::new(Open { catalog, trees: HashMap::default() }),
            ddl: Mutex::new(()),
            next_dict: AtomicU32::new(1),
            shutdown: Arc::new(AtomicBool::new(false)),
            threads: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            opened: AtomicBool::new(false),
            checkpointing: Mutex::new(()),
            checkpoint_log: Mutex::new(Vec::new()),
            checkpoint_log_bytes: opts.resolved_checkpoint_log_bytes(),
            log_bytes_at_checkpoint: AtomicU64::new(0),
            checkpoint_period: opts.checkpoint_period.filter(|p| !p.is_zero()),
            checkpoint_due: AtomicBool::new(false),
            checkpoint_after_drain: AtomicBool::new(false),
            hurry: AtomicBool::new(false),
            recovery: Mutex::new(RecoveryStats::default()),
            _lock: lock,
        });
        // Until recovery has succeeded, nothing may write a header, append
        // to the log or remove a file: if it fails, the next open must find
        // the files as they were (a header written over a half-replayed
        // tree would make the next recovery apply records twice). Only the
        // evictor runs meanwhile, so the replay keeps to the cache budget:
        // its write-backs go to blocks no durable header names. The
        // cleaners, the spill writer and the periodic checkpointer start
        // after recovery, and `Inner::close` checkpoints only once `opened`
        // is set, at the end of a successful open.
        if opts.background_threads {
            inner.threads.lock().push(spawn_evictor(cache));
        }
        let env = Env { inner };
        env.recover(&opts)?;
        // Files no dictionary needs: swept only now, so a failed recovery
        // removes nothing, and before anything can create a file.
        remove_orphans(&*env.inner.ctx.vfs, &env.inner.path, &mut env.inner.open.lock().catalog)?;
        env.spawn_background_threads(&opts)?;
        env.spawn_durability_threads(&opts)?;
        env.inner.opened.store(true, Ordering::SeqCst);
        Ok(env)
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Relaxed) {
            return Err(Error::invalid("the environment is closed"));
        }
        Ok(())
    }

    /// What creating dictionary `name` with `opts` checks first (the
    /// environment open, a valid name, settings within the bounds
    /// `Meta::decode` checks at open, so whatever is created can be
    /// reopened; a registered comparator), returning its comparator.
    fn check_new_dict(&self, name: &str, opts: &DictOptions) -> Result<Comparator> {
        self.check_open()?;
        validate_name(name)?;
        limits::check_settings(opts.node_size_bytes, opts.basement_size_bytes, opts.fanout)
            .map_err(Error::invalid)?;
        Ok(match &opts.comparator {
            None => crate::tree::bytewise as Comparator,
            Some(c) => {
                *self.inner.comparators.get(c).ok_or_else(|| {
                    Error::invalid(format!("comparator {c:?} is not registered in EnvOptions"))
                })?
            }
        })
    }

    /// Creates a dictionary. Its name must be new, and its settings within
    /// the bounds `DictOptions` documents (else `Error::InvalidArgument`, and
    /// nothing is created).
    pub fn create_dictionary(&self, name: &str, opts: DictOptions) -> Result<Dictionary> {
        let cmp = self.check_new_dict(name, &opts)?;
        let _ddl = self.inner.ddl.lock();
        let mut catalog = self.inner.open.lock().catalog.clone();
        if catalog.dicts.contains_key(name) {
            return Err(Error::DictionaryExists(name.to_string()));
        }
        let file_id = catalog.next_file_id;
        let settings = Settings::from(&opts);
        let dict = self.inner.next_dict.fetch_add(1, Ordering::Relaxed);
        let file = dict_file(&self.inner.path, file_id);
        let tree =
            Tree::create(&file, dict, file_id, settings, cmp, self.inner.direct_io, self.inner.ctx.clone())?;
        catalog.dicts.insert(name.to_string(), file_id);
        catalog.next_file_id = file_id + 1;
        if let Err(e) = catalog.store(&*self.inner.ctx.vfs, &self.inner.path) {
            tree.dropped.store(true, Ordering::Relaxed);
            self.inner.ctx.cache.remove_dict(dict);
            let _ = self.inner.ctx.vfs.remove(&file);
            return Err(e);
        }
        // Nothing was written to the tree yet (no handle exists), so no
        // checkpoint missed it while it was not among the open trees.
        let mut open = self.inner.open.lock();
        open.catalog = catalog;
        open.trees.insert(name.to_string(), tree.clone());
        drop(open);
        self.log_ddl(Record::CreateDict { file_id, name: name.to_string() })?;
        drop(_ddl);
        Ok(Dictionary { tree, name: name.to_string(), txns: self.inner.txns.clone() })
    }

    /// Opens an existing dictionary (or returns another handle to it).
    pub fn open_dictionary(&self, name: &str) -> Result<Dictionary> {
        self.check_open()?;
        Ok(Dictionary { tree: self.open_tree(name)?, name: name.to_string(), txns: self.inner.txns.clone() })
    }

    /// Begins a transaction at `isolation`.
    pub fn begin(&self, isolation: Isolation) -> Result<Txn> {
        self.begin_with(TxnOptions { isolation, lock_timeout: None, writes_see_latest: false, client_id: 0 })
    }

    /// Begins a transaction with `opts`.
    pub fn begin_with(&self, opts: TxnOptions) -> Result<Txn> {
        self.check_open()?;
        Ok(Txn::begin(self.inner.txns.clone(), opts))
    }

    fn open_tree(&self, name: &str) -> Result<Arc<Tree>> {
        let mut open = self.inner.open.lock();
        if let Some(t) = open.trees.get(name) {
            return Ok(t.clone());
        }
        let file_id =
            *open.catalog.dicts.get(name).ok_or_else(|| Error::NoSuchDictionary(name.to_string()))?;
        let dict = self.inner.next_dict.fetch_add(1, Ordering::Relaxed);
        let comparators = &self.inner.comparators;
        let tree = Tree::open(
            &dict_file(&self.inner.path, file_id),
            dict,
            file_id,
            self.inner.direct_io,
            &|n| comparators.get(n).copied(),
            self.inner.ctx.clone(),
        )?;
        open.trees.insert(name.to_string(), tree.clone());
        Ok(tree)
    }

    /// Appends a record describing a catalog change to the log (the catalog
    /// itself is already durable) and makes it durable.
    fn log_ddl(&self, rec: Record) -> Result<()> {
        if let Some(log) = self.inner.ctx.log.get() {
            let lsn = log.append(&rec.encode())?;
            log.sync_to(lsn)?;
        }
        Ok(())
    }

    /// Drops a dictionary and deletes its file. Handles to it fail afterwards.
    ///
    /// Order, and why (a crash at any point leaves either the dictionary or
    /// no dictionary, and no file the sweep at open cannot account for):
    /// 1. Write the catalog without the name and with the id in its dropped
    ///    list (durable: fsyncs), and take the tree out of the open set.
    ///    Under the `open` mutex, which serialises catalog writes, not
    ///    under the checkpoint lock: writers of other dictionaries go on.
    ///    Before it is durable the dictionary is whole; after, the sweep
    ///    deletes its file (a dropped id).
    /// 2. Detach the tree under the exclusive checkpoint lock, for an
    ///    instant with no I/O: no writer or cleaner step is inside it, and
    ///    afterwards each sees `dropped` and stops; its nodes leave the
    ///    cache, and its file is truncated to nothing: the space is free at
    ///    once, even while a handle or a background thread's list of trees
    ///    still holds the file open. (A checkpoint already past its begin may still write to
    ///    the file: harmless, the catalog no longer names it.)
    /// 3. Remove the file and sync the folder (no lock held), then forget
    ///    the id from the dropped list in memory: its removal is durable,
    ///    so the next catalog write need not carry it.
    /// 4. Log the drop (the catalog already made it durable).
    pub fn drop_dictionary(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let inner = &self.inner;
        let _ddl = inner.ddl.lock();
        let (file_id, tree) = {
            let mut catalog = inner.open.lock().catalog.clone();
            let file_id =
                *catalog.dicts.get(name).ok_or_else(|| Error::NoSuchDictionary(name.to_string()))?;
            catalog.dicts.remove(name);
            catalog.dropped.insert(file_id);
            catalog.store(&*inner.ctx.vfs, &inner.path)?;
            let mut open = inner.open.lock();
            open.catalog = catalog;
            (file_id, open.trees.remove(name))
        };
        if let Some(tree) = tree {
            let _exclusive = inner.ctx.checkpoint_lock.write();
            tree.dropped.store(true, Ordering::Relaxed);
            inner.ctx.cache.remove_dict(tree.dict);
            inner.ctx.spill_memo.forget_dict(tree.dict, &inner.ctx.cache);
            // The space goes back now, not when the last handle of the
            // file closes (a background thread may hold the tree a while).
            let _ = tree.file.discard();
        }
        inner.txns.locks.forget_dict(file_id);
        inner.ctx.vfs.remove(&dict_file(&inner.path, file_id))?;
        inner.ctx.vfs.sync_dir(&inner.path)?;
        inner.open.lock().catalog.dropped.remove(&file_id);
        self.log_ddl(Record::DropDict { file_id, name: name.to_string() })
    }

    /// Renames a dictionary. `to` must be new.
    pub fn rename_dictionary(&self, from: &str, to: &str) -> Result<()> {
        self.check_open()?;
        validate_name(to)?;
        let _ddl = self.inner.ddl.lock();
        let mut catalog = self.inner.open.lock().catalog.clone();
        if catalog.dicts.contains_key(to) {
            return Err(Error::DictionaryExists(to.to_string()));
        }
        let id = catalog.dicts.remove(from).ok_or_else(|| Error::NoSuchDictionary(from.to_string()))?;
        catalog.dicts.insert(to.to_string(), id);
        catalog.store(&*self.inner.ctx.vfs, &self.inner.path)?;
        let mut open = self.inner.open.lock();
        open.catalog = catalog;
        if let Some(t) = open.trees.remove(from) {
            open.trees.insert(to.to_string(), t);
        }
        drop(open);
        self.log_ddl(Record::RenameDict { file_id: id, from: from.to_string(), to: to.to_string() })
    }

    /// The names of all dictionaries, in order.
    pub fn list_dictionaries(&self) -> Vec<String> {
        self.inner.open.lock().catalog.dicts.keys().cloned().collect()
    }

    /// Does up to `max_steps` steps of the cleaners' work on the calling
    /// thread (flushing the fullest buffer of a dictionary, splitting and
    /// merging as needed; then, as the cleaner thread does once writes stop,
    /// draining buffers toward the leaves) and returns how many found work. For environments
    /// opened without background threads; harmless with them.
    pub fn run_cleaner(&self, max_steps: usize) -> Result<usize> {
        self.check_open()?;
        let mut done = 0;
        let trees = self.inner.trees();
        for t in &trees {
            while done < max_steps && t.clean_step()? {
                done += 1;
            }
        }
        // The spill writer's work, when no thread does it (a flush leaves
        // spills for it: `tree/pending.rs`).
        if !self.inner.ctx.spill_writer {
            for t in &trees {
                t.write_spills(usize::MAX)?;
            }
        }
        // Then what the cleaner thread does once writes stop: drain buffers
        // (one pass over the key space past the last flush; steps that only
        // move along do not count as work).
        for t in &trees {
            for _ in 0..max_steps.saturating_mul(64) {
                match t.drain_step()? {
                    Drain::Flushed if done < max_steps => done += 1,
                    Drain::Flushed | Drain::Clean => break,
                    Drain::Moved => {}
                }
            }
        }
        Ok(done)
    }

    /// Optimizes dictionary `d` (OPTIMIZE TABLE): one pass over its key
    /// space flushes every buffered message down to the leaves (merging
    /// underfull nodes on the way, as the cleaner does), then a checkpoint
    /// makes the freed blocks free in the file and gives long free runs
    /// back to the file system. Afterwards no internal node buffers a
    /// message, unless writes came in meanwhile.
    ///
    /// It takes the tree's locks one path at a time, so other sessions
    /// read and write throughout; it only moves messages down, so a crash
    /// at any point loses nothing. `progress` is called before each step
    /// with the share of the key space done (0..=1); returning false stops
    /// the pass there (what was flushed stays flushed) and `optimize`
    /// returns `Ok(false)`.
    pub fn optimize(&self, d: &Dictionary, progress: &mut dyn FnMut(f64) -> bool) -> Result<bool> {
        self.check_open()?;
        let (mut hand, mut done): (Option<Box<[u8]>>, f64) = (None, 0.0);
        loop {
            if !progress(done) {
                return Ok(false);
            }
            match d.tree.optimize_step(hand.as_deref())? {
                Optimize::Flushed => {}
                Optimize::Moved { next, done: d } => {
                    hand = Some(next);
                    done = d.min(1.0);
                }
                Optimize::Done => break,
            }
        }
        if !progress(1.0) {
            return Ok(false);
        }
        self.checkpoint()?;
        Ok(true)
    }

    /// Commits the prepared transaction `xid` that no `Txn` owns any more
    /// (its owner dropped it, or a restart restored it). `Ok(false)`: there
    /// is none (never prepared, already ended, or still owned).
    pub fn commit_prepared(&self, xid: &[u8]) -> Result<bool> {
        self.end_prepared(xid, true)
    }

    /// Rolls back the prepared transaction `xid` (see [`Env::commit_prepared`]).
    pub fn rollback_prepared(&self, xid: &[u8]) -> Result<bool> {
        self.end_prepared(xid, false)
    }

    fn end_prepared(&self, xid: &[u8], commit: bool) -> Result<bool> {
        self.check_open()?;
        let Some(t) = self.inner.txns.take_prepared(xid) else { return Ok(false) };
        if commit {
            t.commit()?;
        } else {
            t.abort()?;
        }
        Ok(true)
    }

    /// Stops the background threads and writes a checkpoint.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// What the trees of the environment in `path` share, as `opts` set it.
fn new_context(opts: &EnvOptions, path: &Path, cache: Arc<Cache>, vfs: Arc<dyn Vfs>) -> Arc<Context> {
    Arc::new(Context {
        log: OnceLock::new(),
        commit_sync: opts.commit_sync,
        reserve_free_bytes: opts.reserve_free_bytes,
        space_checked_ms: AtomicU64::new(0),
        space_written: AtomicU64::new(0),
        checkpoint_copies: AtomicU64::new(0),
        checkpoint_copy_bytes: AtomicU64::new(0),
        checkpoint_copy_bytes_peak: AtomicU64::new(0),
        write_back_spills: AtomicU64::new(0),
        spill_reads: AtomicU64::new(0),
        spill_memo: crate::tree::SpillMemo::new(cache.stats().budget_bytes),
        spill_read_bytes: AtomicU64::new(0),
        space_short: AtomicBool::new(false),
        epoch: Instant::now(),
        dir: path.to_path_buf(),
        horizon: AtomicU64::new(1),
        next_txid: AtomicU64::new(1),
        gate: crate::tree::Gate::new(match opts.max_active_threads {
            0 => 2 * std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        }),
        msn: AtomicU64::new(0),
        fns: opts.update_fns.iter().cloned().collect(),
        checkpoint_lock: RwLock::new(()),
        cache,
        cleaner_wake: (Mutex::new(false), Condvar::new()),
        spill_writer: opts.background_threads,
        spill_wake: (Mutex::new(false), Condvar::new()),
        closed: AtomicBool::new(false),
        env_failure: Mutex::new(None),
        vfs,
    })
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Err(e) = self.inner.close() {
            eprintln!("fractaldb: closing {} failed: {e}", self.inner.path.display());
        }
    }
}

impl Inner {
    fn trees(&self) -> Vec<Arc<Tree>> {
        self.open.lock().trees.values().cloned().collect()
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.shutdown.store(true, Ordering::SeqCst);
        self.ctx.wake_cleaner();
        self.ctx.cache.shutdown();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        // An environment whose open failed gets no checkpoint and no log
        // change: its trees may be half-replayed, and a header over them
        // (with whatever LSN) would make the next recovery skip or repeat
        // records. The files stay as the failed open found them.
        let opened = self.opened.load(Ordering::SeqCst);
        let mut result = if opened { self.checkpoint() } else { Ok(()) };
        if let Some(log) = self.ctx.log.get().filter(|_| opened) {
            // After a clean close the log holds no writes: the next open
            // replays nothing and reads no dictionary it does not use.
            // (Not if a dictionary failed: the log holds its writes.)
            // Nor if a transaction is unfinished: recovery rolls it back.
            if result.is_ok() && !self.trees().iter().any(|t| t.is_failed()) && self.txns.unfinished() == 0 {
                result = log.start_empty_file();
            }
            let _ = log.sync_all();
        }
        self.ctx.closed.store(true, Ordering::SeqCst);
        self.txns.let_go_prepared();
        // Cached nodes hold their trees; forgetting them breaks the cycle.
        for t in self.trees() {
            self.ctx.cache.remove_dict(t.dict);
        }
        self.ctx.spill_memo.clear(&self.ctx.cache);
        self.open.lock().trees.clear();
        result
    }
}

fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 255 || name.contains('\0') {
        return Err(Error::invalid("dictionary names are 1 to 255 bytes with no NUL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::threads::spawn_periodic;
    use super::*;

    /// A background thread whose step panics outside any one dictionary
    /// turns the environment read-only with the reason, and ends; reads go
    /// on, and a reopen recovers everything.
    #[test]
    fn a_panicking_background_step_turns_the_environment_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let opts = || EnvOptions {
            cache_size_bytes: 1 << 20,
            background_threads: false,
            checkpoint_period: None,
            reserve_free_bytes: 0,
            ..Default::default()
        };
        let env = Env::open(dir.path(), opts()).unwrap();
        let d = env.create_dictionary("d", DictOptions::default()).unwrap();
        d.put(b"k", b"v").unwrap();
        let thread = spawn_periodic(
            "fractaldb-test-step",
            Duration::from_millis(1),
            Arc::downgrade(&env.inner),
            |_| false,
            |_| panic!("a step that panics"),
        )
        .unwrap();
        thread.join().expect("the thread reports the panic and ends");
        match d.put(b"k", b"w") {
            Err(Error::ReadOnly(reason)) => {
                assert!(reason.contains("fractaldb-test-step"), "{reason}");
                assert!(reason.contains("a step that panics"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(d.get(b"k").unwrap(), Some(b"v".to_vec()));
        drop(d);
        let _ = env.close();

        let env = Env::open(dir.path(), opts()).unwrap();
        let d = env.open_dictionary("d").unwrap();
        assert_eq!(d.get(b"k").unwrap(), Some(b"v".to_vec()));
        d.put(b"k", b"w").unwrap();
        env.close().unwrap();
    }
}
