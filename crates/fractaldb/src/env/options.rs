//! The settings of an environment and of a dictionary, and the bounds
//! `Env::open` holds them to.

use super::checkpoint::{CHECKPOINT_LOG_CACHE_MULTIPLE, CHECKPOINT_LOG_MAX_BYTES};
use super::*;

/// Settings of an environment.
#[derive(Clone)]
pub struct EnvOptions {
    /// The node cache's budget, shared by all dictionaries.
    pub cache_size_bytes: usize,
    /// Open data files and log files with O_DIRECT where the file system allows it.
    pub direct_io: bool,
    /// Background threads flushing buffers.
    pub cleaner_threads: usize,
    /// On (the default): an evictor thread, `cleaner_threads` cleaners and
    /// the periodic checkpointer and log fsyncer run in the background. Off:
    /// none of them; a writer over the cache budget evicts on its own
    /// thread, buffers are flushed by writers' back-pressure and by
    /// [`Env::run_cleaner`], and checkpoints happen only on
    /// [`Env::checkpoint`] and at close. Every step then happens on the
    /// caller's thread, in the caller's order: the deterministic simulation
    /// tests run this way.
    pub background_threads: bool,
    /// Upsert callbacks, by the id `update` and `broadcast_update` name.
    ///
    /// A function runs when its message reaches a leaf or a reader, not
    /// when `update` is called. If it panics, the engine catches the panic
    /// and returns `Error::CallbackPanicked`: from a read (applied to a
    /// copy), that read fails and nothing else; from a flush or a write
    /// into a root leaf (applied in place), the dictionary refuses reads
    /// and writes from then on (`ReadOnly` for writes), is never
    /// checkpointed again, and is recovered by reopening the environment
    /// with the function fixed, which replays every acknowledged write. A
    /// panic during recovery fails `Env::open` the same way.
    pub update_fns: Vec<(u8, UpdateFn)>,
    /// Custom key orders, by the name `DictOptions::comparator` gives.
    ///
    /// A comparator that panics is caught like an update function: a read,
    /// cursor move or range step fails with `Error::CallbackPanicked`; a
    /// write (which places the key in the tree in place) or a
    /// transaction's lock request fails the same way and leaves the
    /// dictionary refusing reads and writes until the environment is
    /// reopened (with the comparator fixed; it must order keys as before).
    pub comparators: Vec<(String, Comparator)>,
    /// The file system every file operation goes through: the operating
    /// system's, or a fault-injecting one in tests.
    pub vfs: Arc<dyn Vfs>,
    /// On (the default): a write returns once its log record is durable
    /// (concurrent writers share fsyncs). Off: the log is fsynced every
    /// `fsync_log_period_ms`, and a crash may lose the writes of that last
    /// stretch, never more, and never part of a batch.
    pub commit_sync: bool,
    pub fsync_log_period_ms: u64,
    /// How often a checkpoint runs (also at close). `None`: only at close
    /// and when `Env::checkpoint` is called.
    pub checkpoint_period: Option<Duration>,
    /// A checkpoint also runs once this many log bytes have been written
    /// since the last one began, so a fast load does not pile up a
    /// period's worth of log on disk (a load writing 150 MB/s of records
    /// would keep about 9 GB between 60 s checkpoints) nor leave that much
    /// for recovery to replay (a restart replays at most about 1.5 times
    /// this). Each such checkpoint writes the dirty part of the cache, at
    /// most `cache_size_bytes`. `None` (the default): 16 times the cache,
    /// at most 128 MiB (`resolved_checkpoint_log_bytes`). `Some(0)`: by
    /// time alone. Needs `checkpoint_period` (the same thread runs both).
    pub checkpoint_log_bytes: Option<u64>,
    /// A log file is closed and a new one started once it passes this size.
    pub log_file_size_bytes: u64,
    /// Writes are refused (`Error::NoSpace`) while the disk has less free
    /// space than this, so a full disk never stops a checkpoint or log write
    /// halfway. 0 turns the check off.
    pub reserve_free_bytes: u64,
    /// How long a transaction's lock request waits for a conflicting lock
    /// before it fails with `Error::LockTimeout`.
    pub lock_timeout: Duration,
    /// The lock tree's memory limit; past it (after merging each
    /// transaction's adjacent locks) lock requests fail with
    /// `Error::LockMemoryFull`.
    pub lock_memory_bytes: usize,
    /// At most this many client threads run tree code at once; the rest
    /// wait in line (admission control, see `tree::Gate`). 0: twice the
    /// number of cores; [`EnvOptions::NO_ACTIVE_THREAD_LIMIT`], the
    /// largest accepted: no limit in practice (the SQL layer's choice,
    /// whose threads spend most of their time outside tree code).
    pub max_active_threads: usize,
    /// Where the engine's progress notes go: recovery says what it has to
    /// replay, how far it is every few seconds, and what it did. `None`:
    /// standard error, each line prefixed `fractaldb: `.
    pub notes: Option<Notes>,
}

impl EnvOptions {
    /// The largest `max_active_threads`: more client threads than any
    /// process runs at once inside tree code, so the gate holds no one back.
    pub const NO_ACTIVE_THREAD_LIMIT: usize = MAX_ACTIVE_THREADS;

    /// The log bytes after which a checkpoint runs early:
    /// `checkpoint_log_bytes`, or by default the smaller of 16 times the
    /// cache and `CHECKPOINT_LOG_MAX_BYTES`. 0: by time alone.
    pub fn resolved_checkpoint_log_bytes(&self) -> u64 {
        self.checkpoint_log_bytes.unwrap_or_else(|| {
            CHECKPOINT_LOG_CACHE_MULTIPLE
                .saturating_mul(self.cache_size_bytes as u64)
                .min(CHECKPOINT_LOG_MAX_BYTES)
        })
    }
}

/// A receiver of the engine's progress notes (`EnvOptions::notes`), one
/// line per call, without a newline.
#[derive(Clone)]
pub struct Notes(pub Arc<dyn Fn(&str) + Send + Sync>);

impl Notes {
    pub(super) fn note(this: Option<&Notes>, line: &str) {
        match this {
            Some(n) => (n.0)(line),
            None => eprintln!("fractaldb: {line}"),
        }
    }
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notes(..)")
    }
}

impl Default for EnvOptions {
    fn default() -> Self {
        EnvOptions {
            cache_size_bytes: 64 << 20,
            direct_io: true,
            cleaner_threads: 1,
            background_threads: true,
            update_fns: Vec::new(),
            comparators: Vec::new(),
            vfs: OsVfs::shared(),
            commit_sync: true,
            fsync_log_period_ms: 1000,
            checkpoint_period: Some(Duration::from_secs(60)),
            checkpoint_log_bytes: None,
            log_file_size_bytes: 64 << 20,
            reserve_free_bytes: 64 << 20,
            lock_timeout: Duration::from_secs(4),
            lock_memory_bytes: 64 << 20,
            max_active_threads: 0,
            notes: None,
        }
    }
}

/// Settings of one dictionary, fixed when it is created. Each has bounds
/// (`Env::create_dictionary` refuses others with `Error::InvalidArgument`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DictOptions {
    /// Target size of a node: a leaf splits past it, and an internal node
    /// flushes once its buffers hold this much. From
    /// [`MIN_NODE_BYTES`](crate::MIN_NODE_BYTES) to
    /// [`MAX_NODE_BYTES`](crate::MAX_NODE_BYTES).
    pub node_size_bytes: usize,
    /// Target size of a basement, the unit a point read fetches. From
    /// [`MIN_BASEMENT_BYTES`](crate::MIN_BASEMENT_BYTES) to the node size.
    /// The default, 8 KiB before compression, bounds what a point read of
    /// an evicted basement reads (one extent of at most its compressed
    /// size, about 3.5 KiB with zstd on the benchmark's rows, so one or two
    /// pages with direct I/O) to about what a B-tree's page read costs.
    /// Larger basements compress a little better and cost every
    /// out-of-cache get more (decompression, checksum and parsing scale
    /// with the basement); smaller ones cost leaf-header memory and bytes
    /// on disk for little gain. Measured in docs/benchmarks.md ("basement
    /// size"): 16 KiB to 8 KiB gave 16% more gets/s for 2.8% more bytes;
    /// 4 KiB added under 1% more gets/s for another 5%.
    pub basement_size_bytes: usize,
    /// Children per internal node before it splits. From
    /// [`MIN_FANOUT`](crate::MIN_FANOUT) to [`MAX_FANOUT`](crate::MAX_FANOUT).
    pub fanout: usize,
    pub codec: Codec,
    /// Name of a comparator registered in `EnvOptions::comparators`; `None`
    /// orders keys bytewise.
    pub comparator: Option<String>,
}

impl Default for DictOptions {
    fn default() -> Self {
        DictOptions {
            node_size_bytes: 1 << 20,
            basement_size_bytes: 8 << 10,
            fanout: 16,
            codec: Codec::Zstd,
            comparator: None,
        }
    }
}

/// The bounds `Env::open` holds `EnvOptions` to (see `validate_env_options`).
const MIN_CACHE_BYTES: usize = 256 << 10;

/// The cache's arithmetic (budget plus slack, 16 times the budget for the
/// log trigger) stays far from overflow, and no machine this runs on has
/// more memory.
const MAX_CACHE_BYTES: usize = 1 << 40;

/// A log file holds at least one page of records before it rolls; smaller,
/// an empty file would roll into a new one of the same name (named by
/// its first LSN).
const MIN_LOG_FILE_BYTES: u64 = 4 << 10;

/// Log files are read whole at recovery (`Log::recover`).
const MAX_LOG_FILE_BYTES: u64 = 1 << 30;

/// More cleaner threads than this is a mistake, not a setting.
const MAX_CLEANER_THREADS: usize = 64;

/// Admission control's limit (`tree::Gate`); 0 means twice the cores.
const MAX_ACTIVE_THREADS: usize = 1 << 16;

/// Periods and timeouts are added to `Instant::now()`.
const MAX_PERIOD: Duration = Duration::from_secs(365 * 24 * 3600);

/// Refuses settings the engine cannot run with, each with the bound it
/// broke, before anything is opened: so no setting can overflow the
/// cache's or a thread's arithmetic later.
pub(super) fn validate_env_options(opts: &EnvOptions) -> Result<()> {
    let bad = |what: &str, v: String, lo: String, hi: String| {
        Err(Error::invalid(format!("EnvOptions::{what} is {v}; it must be from {lo} to {hi}")))
    };
    if !(MIN_CACHE_BYTES..=MAX_CACHE_BYTES).contains(&opts.cache_size_bytes) {
        let (v, lo, hi) = (opts.cache_size_bytes, MIN_CACHE_BYTES, MAX_CACHE_BYTES);
        return bad("cache_size_bytes", v.to_string(), lo.to_string(), hi.to_string());
    }
    if !(MIN_LOG_FILE_BYTES..=MAX_LOG_FILE_BYTES).contains(&opts.log_file_size_bytes) {
        let (v, lo, hi) = (opts.log_file_size_bytes, MIN_LOG_FILE_BYTES, MAX_LOG_FILE_BYTES);
        return bad("log_file_size_bytes", v.to_string(), lo.to_string(), hi.to_string());
    }
    if opts.cleaner_threads > MAX_CLEANER_THREADS {
        return bad(
            "cleaner_threads",
            opts.cleaner_threads.to_string(),
            "0".into(),
            MAX_CLEANER_THREADS.to_string(),
        );
    }
    if opts.max_active_threads > MAX_ACTIVE_THREADS {
        let v = opts.max_active_threads.to_string();
        return bad("max_active_threads", v, "0".into(), MAX_ACTIVE_THREADS.to_string());
    }
    let periods = [
        ("checkpoint_period", opts.checkpoint_period.unwrap_or_default()),
        ("lock_timeout", opts.lock_timeout),
        ("fsync_log_period_ms", Duration::from_millis(opts.fsync_log_period_ms)),
    ];
    for (what, p) in periods {
        if p > MAX_PERIOD {
            return bad(what, format!("{p:?}"), "0".into(), format!("{MAX_PERIOD:?}"));
        }
    }
    Ok(())
}
