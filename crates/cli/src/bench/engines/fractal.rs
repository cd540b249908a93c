//! fractaldb under the benchmark: one environment, one dictionary per keyspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, Isolation, UpdateFn, WriteBatch};

use super::{folder_usage, Batch, Counter, Engine, EngineConfig, Keyspace, OpKind, ScanVisitor, Session};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// The id under which the counter upsert ([`Counter::merge`]) is registered
/// in `EnvOptions::update_fns`.
const COUNTER_ADD_FN: u8 = 1;

/// fractaldb as the benchmark drives it: an [`Env`] whose cache is the run's
/// cache size, with one [`Dictionary`] per keyspace at default node sizes and
/// zstd (or the codec a `codec-*` workload names), the way a user who changes
/// nothing would run it.
///
/// A batch over several keyspaces is one read-committed transaction, so it
/// is atomic like RocksDB's WriteBatch and SQLite's transaction. Read
/// committed, not repeatable read: at repeatable read every put reads its
/// key's newest version for the write-conflict check, which would make a
/// blind load read-bound. A batch over one keyspace is one dictionary
/// WriteBatch, atomic on its own and cheaper: it is one log record and one
/// tree write, where a transaction logs and locks each key and sends each a
/// commit message.
pub struct FractalEngine {
    dir: PathBuf,
    env: Env,
    dictionaries: HashMap<&'static str, Dictionary>,
    settings: String,
}

impl FractalEngine {
    /// Opens the environment in `dir`, creating the dictionaries that are
    /// missing with `codec` (`None`: zstd).
    pub fn open(
        dir: &Path,
        config: &EngineConfig,
        keyspaces: &[Keyspace],
        codec: Option<Codec>,
    ) -> Result<Self> {
        let mut env_options = env_options(config)?;
        env_options.update_fns.push(counter_add_fn());
        let cache_size_bytes = env_options.cache_size_bytes;
        let cleaner_threads = env_options.cleaner_threads;
        let checkpoint_log_bytes = env_options.resolved_checkpoint_log_bytes();
        let env =
            Env::open(dir, env_options).context(|| format!("opening fractaldb in {}", dir.display()))?;
        let existing = env.list_dictionaries();
        let mut dictionaries = HashMap::new();
        let defaults = DictOptions::default();
        let settings = format!(
            "fractaldb {}: cache_size_bytes={} direct_io={} cleaner_threads={}; one dictionary per keyspace, \
             codec=zstd (codec-* workloads: the codec they name), node_size_bytes={} basement_size_bytes={} \
             fanout={} (the defaults); commit_sync on (every batch durable in the log when it returns), \
             checkpoints every 60 s and whenever the log has grown {} bytes (the defaults: the smaller of 16 \
             times the cache and 128 MiB); a batch over one keyspace is one WriteBatch, over several one \
             read-committed transaction (repeatable read would read every key it writes); roll-up \
             upserts are update messages (no read)",
            env!("CARGO_PKG_VERSION"),
            cache_size_bytes,
            config.direct_io,
            cleaner_threads,
            defaults.node_size_bytes,
            defaults.basement_size_bytes,
            defaults.fanout,
            checkpoint_log_bytes,
        );
        let options = DictOptions { codec: codec.unwrap_or(Codec::Zstd), ..dict_options() };
        for keyspace in keyspaces {
            let name = keyspace.name;
            let dictionary = if existing.iter().any(|d| d == name) {
                env.open_dictionary(name)
            } else {
                env.create_dictionary(name, options.clone())
            }
            .context(|| format!("opening dictionary {name} in {}", dir.display()))?;
            dictionaries.insert(name, dictionary);
        }
        Ok(FractalEngine { dir: dir.to_path_buf(), env, dictionaries, settings })
    }

    fn dictionary(&self, keyspace: &str) -> Result<&Dictionary> {
        self.dictionaries
            .get(keyspace)
            .ok_or_else(|| Error::new(format!("fractaldb: no keyspace {keyspace}")))
    }
}

/// The counter upsert ([`Counter::merge`]) under its id: an environment
/// that holds the roll-up counters needs it to replay or apply them.
pub fn counter_add_fn() -> (u8, UpdateFn) {
    let add: UpdateFn = Arc::new(|_key: &[u8], old: Option<&[u8]>, delta: &[u8]| {
        // A malformed value is kept as it is (an update function cannot
        // fail); the roll-up check then reports it.
        Counter::merge(old, [delta]).or_else(|| old.map(<[u8]>::to_vec))
    });
    (COUNTER_ADD_FN, add)
}

/// The environment options every fractaldb benchmark starts from: the run's
/// cache size and direct I/O, everything else at the defaults.
pub fn env_options(config: &EngineConfig) -> Result<EnvOptions> {
    let cache_size_bytes = usize::try_from(config.cache_size_bytes)
        .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
    Ok(EnvOptions { cache_size_bytes, direct_io: config.direct_io, ..EnvOptions::default() })
}

/// The options of every dictionary a benchmark creates: the defaults, zstd.
pub fn dict_options() -> DictOptions {
    DictOptions { codec: Codec::Zstd, ..DictOptions::default() }
}

impl Engine for FractalEngine {
    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn sessions(&self, count: usize) -> Result<Vec<Box<dyn Session + Send + '_>>> {
        // The environment and its dictionaries are shared between threads as they are.
        Ok((0..count)
            .map(|_| Box::new(FractalSession { engine: self, write_batch: WriteBatch::new() }) as Box<_>)
            .collect())
    }

    fn flush(&self) -> Result<()> {
        Ok(self.env.checkpoint()?)
    }

    /// OPTIMIZE TABLE's pass over every dictionary (it ends with a checkpoint).
    fn settle(&self) -> Result<()> {
        for dictionary in self.dictionaries.values() {
            self.env.optimize(dictionary, &mut |_| true)?;
        }
        self.flush()
    }

    /// The folder as the file system sees it, plus the live bytes: every
    /// dictionary's current blocks, headers and table (`Dictionary::space`)
    /// and the whole of every other file (the log, the catalog).
    fn disk_usage(&self) -> Result<DiskUsage> {
        let mut usage = folder_usage(&self.dir)?;
        let mut live = 0;
        for dictionary in self.dictionaries.values() {
            live += dictionary.space()?.live_bytes;
        }
        let listing = std::fs::read_dir(&self.dir).context(|| format!("listing {}", self.dir.display()))?;
        for entry in listing {
            let path = entry.context(|| format!("listing {}", self.dir.display()))?.path();
            if path.extension().is_some_and(|e| e == "fdb") {
                continue;
            }
            live += path.symlink_metadata().context(|| format!("stat {}", path.display()))?.len();
        }
        usage.live_bytes = Some(live);
        Ok(usage)
    }

    /// What the environment reports of itself (`Env::stats`) and the
    /// checkpoints it has finished: beside each interval's rate, whether a
    /// dip came with a checkpoint, the cache making writers wait, the
    /// evictor writing back, or spills read.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.env.stats();
        vec![
            ("checkpoints", self.env.checkpoint_timings().len() as u64),
            ("checkpoint_copy_bytes", s.checkpoint_copy_bytes),
            ("cache_used_bytes", s.cache.used_bytes as u64),
            ("cache_client_waits", s.cache.client_waits),
            ("cache_misses", s.cache.misses),
            ("cache_evictions", s.cache.evictions),
            ("cache_write_backs", s.cache.write_backs),
            ("write_back_spills", s.write_back_spills),
            ("spill_reads", s.spill_reads),
            ("log_bytes", s.log.bytes),
            ("log_fsyncs", s.log.fsyncs),
        ]
    }

    fn close(self: Box<Self>) -> Result<()> {
        let FractalEngine { env, dictionaries, .. } = *self;
        drop(dictionaries);
        Ok(env.close()?)
    }
}

/// One thread's session: the shared environment, and a WriteBatch reused
/// for every single-keyspace batch so a batch costs no new allocation.
struct FractalSession<'a> {
    engine: &'a FractalEngine,
    write_batch: WriteBatch,
}

impl Session for FractalSession<'_> {
    fn write(&mut self, batch: &Batch) -> Result<()> {
        if batch.touched() <= 1 {
            for (keyspace, ops) in batch.parts().filter(|(_, ops)| !ops.is_empty()) {
                self.write_batch.clear();
                for (kind, key, value) in ops.iter() {
                    match kind {
                        OpKind::Put => self.write_batch.put(key, value),
                        OpKind::Add => self.write_batch.update(key, COUNTER_ADD_FN, value),
                    }
                }
                self.engine.dictionary(keyspace)?.write(&self.write_batch)?;
            }
            return Ok(());
        }
        let txn = self.engine.env.begin(Isolation::ReadCommitted)?;
        for (keyspace, ops) in batch.parts() {
            if ops.is_empty() {
                continue;
            }
            self.write_batch.clear();
            for (kind, key, value) in ops.iter() {
                match kind {
                    OpKind::Put => self.write_batch.put(key, value),
                    OpKind::Add => self.write_batch.update(key, COUNTER_ADD_FN, value),
                }
            }
            txn.write_batch(self.engine.dictionary(keyspace)?, &self.write_batch)?;
        }
        // Dropped unfinished on an error above, the transaction aborts.
        Ok(txn.commit()?)
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.engine.dictionary(keyspace)?.get(key)?)
    }

    fn scan_from(
        &mut self,
        keyspace: &str,
        start: &[u8],
        limit: u64,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()> {
        let mut cursor = self.engine.dictionary(keyspace)?.cursor();
        if start.is_empty() {
            cursor.first()?;
        } else {
            cursor.seek_ge(start)?;
        }
        let mut seen = 0;
        while seen < limit {
            // None once the cursor has moved past the end.
            let (Some(key), Some(value)) = (cursor.key(), cursor.value()) else { break };
            visit(key, value)?;
            seen += 1;
            if seen < limit {
                cursor.next()?;
            }
        }
        Ok(())
    }
}
