//! The engines a benchmark compares, behind one small trait so a workload is
//! written once and runs on each of them the same way.

pub mod fractal;
#[cfg(feature = "rocksdb")]
pub mod rocks;
mod sql;
mod sqlite;

use std::fmt;
use std::path::Path;

use clap::ValueEnum;
pub use fractaldb::Codec;

use super::sys::{self, DiskUsage};
use crate::error::{Context, Result};

/// Which engine: fractaldb itself, one that users would otherwise pick, or
/// fractaldb's own SQL layer over the same engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum EngineKind {
    Fractaldb,
    Rocksdb,
    /// RocksDB tuned as MyRocks recommends (see `rocks::options_tuned`).
    RocksdbTuned,
    Sqlite,
    /// fractaldb's embedded SQL layer (fractaldb_sql::Database) over the
    /// same engine: each batch one multi-row INSERT statement (see `sql.rs`).
    /// Runs the insert and iibench loads only, and only when named.
    FractaldbSql,
}

impl EngineKind {
    /// Every engine, in report order (also the order of the charts' colours).
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Fractaldb,
        EngineKind::Rocksdb,
        EngineKind::RocksdbTuned,
        EngineKind::Sqlite,
        EngineKind::FractaldbSql,
    ];

    /// The name used on the command line, in folders and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Fractaldb => "fractaldb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::RocksdbTuned => "rocksdb-tuned",
            EngineKind::Sqlite => "sqlite",
            EngineKind::FractaldbSql => "fractaldb-sql",
        }
    }

    /// Whether a run without `--engines` includes the engine: every engine
    /// but fractaldb-sql, which measures our SQL layer against our engine
    /// (issue 19) rather than against other engines, and would lengthen the
    /// main benchmark by two more loads.
    pub fn in_default_run(self) -> bool {
        self != EngineKind::FractaldbSql
    }

    /// Whether this build can run the engine (RocksDB needs `--features rocksdb`).
    pub fn is_built(self) -> bool {
        !self.is_rocksdb() || cfg!(feature = "rocksdb")
    }

    /// RocksDB in either profile.
    pub fn is_rocksdb(self) -> bool {
        matches!(self, EngineKind::Rocksdb | EngineKind::RocksdbTuned)
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

/// What a keyspace holds, which decides how an engine stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyspaceKind {
    /// Byte-string values, written by [`KeyspaceBatch::put`].
    Rows,
    /// [`Counter`] values, changed only by [`KeyspaceBatch::add`], an upsert
    /// that never reads (SQLite keeps these as two integer columns).
    Counters,
}

/// A named keyspace of a dataset: a fractaldb dictionary, a RocksDB column
/// family, an SQLite table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keyspace {
    pub name: &'static str,
    pub kind: KeyspaceKind,
}

/// The value of a roll-up counter: how many rows fell into its bucket and
/// the sum of their amounts. Stored as 16 bytes, `count` then `sum`, each an
/// i64 little-endian; an upsert's argument has the same form and is added
/// field by field, so upserts commute and need no read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub count: i64,
    pub sum: i64,
}

impl Counter {
    /// Bytes of an encoded counter.
    pub const BYTES: usize = 16;

    pub fn encode(self) -> [u8; Counter::BYTES] {
        let mut out = [0u8; Counter::BYTES];
        out[..8].copy_from_slice(&self.count.to_le_bytes());
        out[8..].copy_from_slice(&self.sum.to_le_bytes());
        out
    }

    /// The counter in `bytes`, or `None` if they are not 16 bytes long.
    pub fn decode(bytes: &[u8]) -> Option<Counter> {
        let bytes: &[u8; Counter::BYTES] = bytes.try_into().ok()?;
        let (count, sum) = bytes.split_at(8);
        Some(Counter {
            count: i64::from_le_bytes(count.try_into().ok()?),
            sum: i64::from_le_bytes(sum.try_into().ok()?),
        })
    }

    /// Field-by-field sum (wrapping, as an engine's merge must not panic).
    pub fn plus(self, other: Counter) -> Counter {
        Counter { count: self.count.wrapping_add(other.count), sum: self.sum.wrapping_add(other.sum) }
    }

    /// The engines' upsert: `old` (absent: zero) plus each encoded delta.
    /// `None` if any operand is not a counter, so a wrong encoding fails
    /// loudly instead of being counted as zero.
    pub fn merge<'a>(old: Option<&[u8]>, deltas: impl IntoIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
        let mut total = match old {
            Some(bytes) => Counter::decode(bytes)?,
            None => Counter::default(),
        };
        for delta in deltas {
            total = total.plus(Counter::decode(delta)?);
        }
        Some(total.encode().to_vec())
    }
}

/// What one operation of a batch does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Set the key's value.
    Put,
    /// Add an encoded [`Counter`] to the key's counter (absent: zero), without reading it.
    Add,
}

/// Operations on one keyspace, kept back to back in one buffer so that a
/// batch of a thousand rows costs the generator a couple of allocations,
/// not thousands.
#[derive(Debug, Default)]
pub struct KeyspaceBatch {
    bytes: Vec<u8>,
    /// (kind, start in `bytes`, key length, value length) per operation.
    spans: Vec<(OpKind, usize, usize, usize)>,
}

impl KeyspaceBatch {
    /// Adds a put of `value` under `key`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(OpKind::Put, key, value);
    }

    /// Adds an upsert that adds `delta` to the counter under `key`.
    pub fn add(&mut self, key: &[u8], delta: Counter) {
        self.push(OpKind::Add, key, &delta.encode());
    }

    fn push(&mut self, kind: OpKind, key: &[u8], value: &[u8]) {
        self.spans.push((kind, self.bytes.len(), key.len(), value.len()));
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    /// The operations in the order they were added, as (kind, key, value or encoded delta).
    pub fn iter(&self) -> impl Iterator<Item = (OpKind, &[u8], &[u8])> + '_ {
        self.spans.iter().map(move |&(kind, start, k, v)| {
            (kind, &self.bytes[start..start + k], &self.bytes[start + k..start + k + v])
        })
    }

    /// True if there is no operation.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Bytes of keys and values (or deltas), as the workload handed them over.
    pub fn raw_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Removes every operation, keeping the memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }
}

/// One unit of writes over one or more keyspaces (an iibench batch touches
/// four, a roll-up batch four). Every engine applies it atomically: one
/// RocksDB WriteBatch, one SQLite transaction, one fractaldb transaction
/// (or, for a single keyspace, one fractaldb WriteBatch, which is atomic too).
#[derive(Debug)]
pub struct Batch {
    parts: Vec<(&'static str, KeyspaceBatch)>,
}

impl Batch {
    /// An empty batch over these keyspaces; [`part`](Self::part) indexes them in this order.
    pub fn new(keyspaces: &[Keyspace]) -> Self {
        Batch { parts: keyspaces.iter().map(|k| (k.name, KeyspaceBatch::default())).collect() }
    }

    /// The operations for the `index`-th keyspace given to [`new`](Self::new).
    pub fn part(&mut self, index: usize) -> &mut KeyspaceBatch {
        &mut self.parts[index].1
    }

    /// Each keyspace with its operations (possibly none).
    pub fn parts(&self) -> impl Iterator<Item = (&'static str, &KeyspaceBatch)> + '_ {
        self.parts.iter().map(|(k, p)| (*k, p))
    }

    /// The keyspaces that have at least one operation.
    pub fn touched(&self) -> usize {
        self.parts.iter().filter(|(_, p)| !p.is_empty()).count()
    }

    /// Bytes of every key and value (or delta) in the batch.
    pub fn raw_bytes(&self) -> u64 {
        self.parts.iter().map(|(_, p)| p.raw_bytes()).sum()
    }

    /// Empties every part.
    pub fn clear(&mut self) {
        for (_, p) in &mut self.parts {
            p.clear();
        }
    }
}

/// Called once per row of an ordered scan with (key, value); an error stops
/// the scan. Counter keyspaces hand over the 16-byte [`Counter`] encoding.
pub type ScanVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// An open database of one engine in one folder, holding named keyspaces.
///
/// The engine itself only opens, measures and closes; reads and writes go
/// through [`Session`]s, one per thread, so the same workload code drives
/// one thread or many. fractaldb and RocksDB share one handle between
/// threads; SQLite gives each session a connection of its own.
pub trait Engine: Sync {
    /// Everything a reader needs to judge the comparison: version, cache,
    /// durability, compression, direct I/O, and what was left at defaults.
    fn settings(&self) -> String;

    /// `count` sessions for `count` threads. An engine whose cache belongs
    /// to a session (SQLite's page cache is per connection) splits the
    /// run's cache between them, so every engine keeps the same memory.
    fn sessions(&self, count: usize) -> Result<Vec<Box<dyn Session + Send + '_>>>;

    /// One session, for a single-threaded workload.
    fn session(&self) -> Result<Box<dyn Session + Send + '_>> {
        let mut sessions = self.sessions(1)?;
        Ok(sessions.pop().expect("sessions(1) returns one session"))
    }

    /// Makes everything written so far part of the data files, so bytes on
    /// disk count the data once (a checkpoint, a memtable flush, a WAL
    /// checkpoint). Every session must be gone.
    fn flush(&self) -> Result<()>;

    /// Brings the stored data to its steady form after a load: nothing left
    /// for background work to merge (fractaldb: every buffer flushed to the
    /// leaves; RocksDB: the whole key range compacted), then [`flush`](Self::flush).
    fn settle(&self) -> Result<()>;

    /// Bytes the engine's folder takes on disk.
    fn disk_usage(&self) -> Result<DiskUsage>;

    /// The rows `keyspace` holds, where the engine counts them exactly and
    /// cheaply (fractaldb-sql: `SELECT COUNT(*)`, answered from the table's
    /// row count); `None` where it would take a scan. A load's check
    /// compares it with the rows written.
    fn exact_rows(&self, _keyspace: &str) -> Result<Option<u64>> {
        Ok(None)
    }

    /// The engine's own counters, cumulative since it opened (names
    /// without tabs, `=` or newlines), sampled at the end of every progress
    /// interval: what the engine was doing when the rate moved. Empty
    /// for engines that keep none the bench reads.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Flushes and closes.
    fn close(self: Box<Self>) -> Result<()>;
}

/// One thread's way into an open [`Engine`].
pub trait Session {
    /// Applies every operation of `batch` as one atomic, durable unit.
    fn write(&mut self, batch: &Batch) -> Result<()>;

    /// The value under `key` in `keyspace`, if any.
    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Visits the rows of `keyspace` in ascending key order, from the first
    /// key at or after `start`, at most `limit` of them (`start` empty and
    /// `limit` `u64::MAX`: the whole keyspace).
    fn scan_from(
        &mut self,
        keyspace: &str,
        start: &[u8],
        limit: u64,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()>;
}

/// The codecs an engine can load the `codec-*` workloads with: fractaldb
/// has all of [`fractaldb::Codec`]; RocksDB those its crate is built with
/// (zstd, lz4, snappy) and none; SQLite stores pages as they are;
/// fractaldb-sql runs no codec load (its tables are zstd, the SQL layer's
/// default).
pub fn codecs(kind: EngineKind) -> &'static [Codec] {
    match kind {
        EngineKind::Fractaldb => &ALL_CODECS,
        EngineKind::Rocksdb | EngineKind::RocksdbTuned => {
            &[Codec::None, Codec::Zstd, Codec::Lz4, Codec::Snappy]
        }
        EngineKind::Sqlite => &[Codec::None],
        EngineKind::FractaldbSql => &[],
    }
}

/// Every codec fractaldb has, in the order the report lists them.
pub const ALL_CODECS: [Codec; 6] =
    [Codec::None, Codec::Zstd, Codec::Lz4, Codec::Snappy, Codec::Zlib, Codec::Lzma];

/// Opens (creating if missing) an engine's database in `dir` with these
/// keyspaces, compressed with `codec` (`None`: the engine's default, zstd
/// for fractaldb and RocksDB).
pub fn open(
    kind: EngineKind,
    dir: &Path,
    config: &EngineConfig,
    keyspaces: &[Keyspace],
    codec: Option<Codec>,
) -> Result<Box<dyn Engine>> {
    if let Some(codec) = codec {
        if !codecs(kind).contains(&codec) {
            crate::bail!("{kind} has no {} codec", codec.name());
        }
    }
    std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    let engine: Box<dyn Engine> = match kind {
        EngineKind::Fractaldb => Box::new(fractal::FractalEngine::open(dir, config, keyspaces, codec)?),
        EngineKind::Sqlite => Box::new(sqlite::SqliteEngine::open(dir, config, keyspaces)?),
        EngineKind::FractaldbSql => Box::new(sql::SqlEngine::open(dir, config, keyspaces)?),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Box::new(rocks::RocksEngine::open(dir, config, keyspaces, codec, false)?),
        #[cfg(feature = "rocksdb")]
        EngineKind::RocksdbTuned => Box::new(rocks::RocksEngine::open(dir, config, keyspaces, codec, true)?),
        #[cfg(not(feature = "rocksdb"))]
        EngineKind::Rocksdb | EngineKind::RocksdbTuned => {
            crate::bail!("this build has no RocksDB: rebuild with `--features rocksdb`")
        }
    };
    Ok(engine)
}

/// Bytes an engine folder takes, for [`Engine::disk_usage`].
fn folder_usage(dir: &Path) -> Result<DiskUsage> {
    sys::dir_usage(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_without_reading_and_refuse_garbage() {
        let one = Counter { count: 1, sum: 250 };
        assert_eq!(Counter::decode(&one.encode()), Some(one));
        assert_eq!(Counter::decode(b"short"), None);
        let deltas = [one.encode(), Counter { count: 2, sum: -50 }.encode()];
        let merged = Counter::merge(None, deltas.iter().map(|d| &d[..])).unwrap();
        assert_eq!(Counter::decode(&merged), Some(Counter { count: 3, sum: 200 }));
        let again = Counter::merge(Some(&merged), [&one.encode()[..]]).unwrap();
        assert_eq!(Counter::decode(&again), Some(Counter { count: 4, sum: 450 }));
        assert_eq!(Counter::merge(Some(b"bad"), [&one.encode()[..]]), None);
        assert_eq!(Counter::merge(None, [&b"bad"[..]]), None);
    }

    #[test]
    fn a_batch_counts_its_bytes_and_keyspaces() {
        let keyspaces = [
            Keyspace { name: "rows", kind: KeyspaceKind::Rows },
            Keyspace { name: "counts", kind: KeyspaceKind::Counters },
        ];
        let mut batch = Batch::new(&keyspaces);
        assert_eq!(batch.touched(), 0);
        batch.part(0).put(b"key", b"value");
        assert_eq!(batch.touched(), 1);
        batch.part(1).add(b"bucket", Counter { count: 1, sum: 2 });
        assert_eq!(batch.touched(), 2);
        assert_eq!(batch.raw_bytes(), 3 + 5 + 6 + 16);
        let ops: Vec<_> =
            batch.parts().flat_map(|(_, ops)| ops.iter().map(|(kind, k, _)| (kind, k.to_vec()))).collect();
        assert_eq!(ops, [(OpKind::Put, b"key".to_vec()), (OpKind::Add, b"bucket".to_vec())]);
        batch.clear();
        assert_eq!((batch.touched(), batch.raw_bytes()), (0, 0));
    }
}
