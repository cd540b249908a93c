//! The engines a benchmark compares, behind one small trait so a workload is
//! written once and runs on each of them the same way.

pub mod fractal;
#[cfg(feature = "rocksdb")]
pub mod rocks;
mod sqlite;

use std::fmt;
use std::path::Path;

use clap::ValueEnum;

use super::sys::{self, DiskUsage};
use crate::error::{Context, Result};

/// Which engine: fractaldb itself or one that users would otherwise pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum EngineKind {
    Fractaldb,
    Rocksdb,
    Sqlite,
}

impl EngineKind {
    /// Every engine, in report order.
    pub const ALL: [EngineKind; 3] = [EngineKind::Fractaldb, EngineKind::Rocksdb, EngineKind::Sqlite];

    /// The name used on the command line, in folders and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Fractaldb => "fractaldb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Sqlite => "sqlite",
        }
    }

    /// Whether this build can run the engine (RocksDB needs `--features rocksdb`).
    pub fn is_built(self) -> bool {
        self != EngineKind::Rocksdb || cfg!(feature = "rocksdb")
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What every engine in a run is given alike: the same memory for caching and
/// the same durability, so the comparison is of engines, not of settings.
#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// Bytes of cache (fractaldb's cache, RocksDB's block cache, SQLite's page cache).
    pub cache_size_bytes: u64,
    /// Bypass the OS page cache where the engine can (SQLite cannot).
    pub direct_io: bool,
}

/// Puts for one keyspace, kept back to back in one buffer so that a batch of
/// a thousand rows costs the generator a couple of allocations, not thousands.
#[derive(Debug, Default)]
pub struct PutBatch {
    bytes: Vec<u8>,
    /// (start in `bytes`, key length, value length) per put.
    spans: Vec<(usize, usize, usize)>,
}

impl PutBatch {
    /// Adds a put of `value` under `key`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.spans.push((self.bytes.len(), key.len(), value.len()));
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    /// The puts in the order they were added, as (key, value).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans
            .iter()
            .map(move |&(start, k, v)| (&self.bytes[start..start + k], &self.bytes[start + k..start + k + v]))
    }

    /// Number of puts.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Removes every put, keeping the memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }
}

/// One unit of writes over one or more keyspaces (an iibench batch touches
/// four). An engine applies it atomically where it can (one RocksDB
/// WriteBatch, one SQLite transaction); fractaldb, until it has transactions,
/// writes one WriteBatch per dictionary.
#[derive(Debug)]
pub struct Batch {
    parts: Vec<(String, PutBatch)>,
}

impl Batch {
    /// An empty batch over these keyspaces; [`part`](Self::part) indexes them in this order.
    pub fn new(keyspaces: &[&str]) -> Self {
        Batch { parts: keyspaces.iter().map(|k| (k.to_string(), PutBatch::default())).collect() }
    }

    /// The puts for the `index`-th keyspace given to [`new`](Self::new).
    pub fn part(&mut self, index: usize) -> &mut PutBatch {
        &mut self.parts[index].1
    }

    /// Each keyspace with its puts (possibly none).
    pub fn parts(&self) -> impl Iterator<Item = (&str, &PutBatch)> + '_ {
        self.parts.iter().map(|(k, p)| (k.as_str(), p))
    }

    /// Empties every part.
    pub fn clear(&mut self) {
        for (_, p) in &mut self.parts {
            p.clear();
        }
    }
}

/// Called once per row of an ordered scan with (key, value); an error stops the scan.
pub type ScanVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// An open database of one engine in one folder, holding named keyspaces
/// (a fractaldb dictionary, a RocksDB column family, an SQLite table).
pub trait Engine {
    /// Everything a reader needs to judge the comparison: version, cache,
    /// durability, compression, direct I/O, and what was left at defaults.
    fn settings(&self) -> String;

    /// Writes every put of `batch`.
    fn write(&mut self, batch: &Batch) -> Result<()>;

    /// The value under `key` in `keyspace`, if any.
    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Visits every row of `keyspace` in ascending key order.
    fn scan(&mut self, keyspace: &str, visit: &mut ScanVisitor<'_>) -> Result<()>;

    /// Makes everything written so far durable (there is no log yet, so this
    /// is what ends a load: a checkpoint, a memtable flush, a WAL checkpoint).
    fn flush(&mut self) -> Result<()>;

    /// Bytes the engine's folder takes on disk.
    fn disk_usage(&self) -> Result<DiskUsage>;

    /// Flushes and closes.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Opens (creating if missing) an engine's database in `dir` with these keyspaces.
pub fn open(
    kind: EngineKind,
    dir: &Path,
    config: &EngineConfig,
    keyspaces: &[&str],
) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    let engine: Box<dyn Engine> = match kind {
        EngineKind::Fractaldb => Box::new(fractal::FractalEngine::open(dir, config, keyspaces)?),
        EngineKind::Sqlite => Box::new(sqlite::SqliteEngine::open(dir, config, keyspaces)?),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Box::new(rocks::RocksEngine::open(dir, config, keyspaces)?),
        #[cfg(not(feature = "rocksdb"))]
        EngineKind::Rocksdb => crate::bail!("this build has no RocksDB: rebuild with `--features rocksdb`"),
    };
    Ok(engine)
}

/// Bytes an engine folder takes, for [`Engine::disk_usage`].
fn folder_usage(dir: &Path) -> Result<DiskUsage> {
    sys::dir_usage(dir)
}
