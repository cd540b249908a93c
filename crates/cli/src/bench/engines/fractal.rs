//! fractaldb under the benchmark: one environment, one dictionary per keyspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, WriteBatch};

use super::{folder_usage, Batch, Engine, EngineConfig, ScanVisitor};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// fractaldb as the benchmark drives it: an [`Env`] whose cache is the run's
/// cache size, with one [`Dictionary`] per keyspace at default node sizes and
/// zstd, the way a user who changes nothing would run it.
pub struct FractalEngine {
    dir: PathBuf,
    env: Env,
    dictionaries: HashMap<String, Dictionary>,
    /// Reused for every batch so a batch costs no new allocation.
    write_batch: WriteBatch,
    settings: String,
}

impl FractalEngine {
    /// Opens the environment in `dir`, creating the dictionaries that are missing.
    pub fn open(dir: &Path, config: &EngineConfig, keyspaces: &[&str]) -> Result<Self> {
        let env_options = env_options(config)?;
        let cache_size_bytes = env_options.cache_size_bytes;
        let cleaner_threads = env_options.cleaner_threads;
        let env =
            Env::open(dir, env_options).context(|| format!("opening fractaldb in {}", dir.display()))?;
        let existing = env.list_dictionaries();
        let mut dictionaries = HashMap::new();
        let defaults = DictOptions::default();
        let settings = format!(
            "fractaldb {}: cache_size_bytes={} direct_io={} cleaner_threads={}; one dictionary per keyspace, \
             codec=zstd, node_size_bytes={} basement_size_bytes={} fanout={} (the defaults); commit_sync on \
             (every batch durable in the log when it returns), checkpoints every 60 s",
            env!("CARGO_PKG_VERSION"),
            cache_size_bytes,
            config.direct_io,
            cleaner_threads,
            defaults.node_size_bytes,
            defaults.basement_size_bytes,
            defaults.fanout,
        );
        for &name in keyspaces {
            let dictionary = if existing.iter().any(|d| d == name) {
                env.open_dictionary(name)
            } else {
                env.create_dictionary(name, dict_options())
            }
            .context(|| format!("opening dictionary {name} in {}", dir.display()))?;
            dictionaries.insert(name.to_string(), dictionary);
        }
        Ok(FractalEngine {
            dir: dir.to_path_buf(),
            env,
            dictionaries,
            write_batch: WriteBatch::new(),
            settings,
        })
    }

    fn dictionary(&self, keyspace: &str) -> Result<&Dictionary> {
        self.dictionaries
            .get(keyspace)
            .ok_or_else(|| Error::new(format!("fractaldb: no keyspace {keyspace}")))
    }
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

    fn write(&mut self, batch: &Batch) -> Result<()> {
        for (keyspace, puts) in batch.parts() {
            if puts.len() == 0 {
                continue;
            }
            let dictionary = self
                .dictionaries
                .get(keyspace)
                .ok_or_else(|| Error::new(format!("fractaldb: no keyspace {keyspace}")))?;
            self.write_batch.clear();
            for (key, value) in puts.iter() {
                self.write_batch.put(key, value);
            }
            dictionary.write(&self.write_batch)?;
        }
        Ok(())
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.dictionary(keyspace)?.get(key)?)
    }

    fn scan(&mut self, keyspace: &str, visit: &mut ScanVisitor<'_>) -> Result<()> {
        let mut cursor = self.dictionary(keyspace)?.cursor();
        let mut more = cursor.first()?;
        while more {
            visit(cursor.key(), cursor.value())?;
            more = cursor.next()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(self.env.checkpoint()?)
    }

    fn disk_usage(&self) -> Result<DiskUsage> {
        folder_usage(&self.dir)
    }

    fn close(self: Box<Self>) -> Result<()> {
        let FractalEngine { env, dictionaries, .. } = *self;
        drop(dictionaries);
        Ok(env.close()?)
    }
}
