//! RocksDB under the benchmark (only with `--features rocksdb`): one column
//! family per keyspace.

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, FlushOptions, MergeOperands,
    Options, WriteOptions, DB,
};

use super::{
    folder_usage, Batch, Codec, Counter, Engine, EngineConfig, Keyspace, KeyspaceKind, OpKind, ScanVisitor,
    Session,
};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// RocksDB as the benchmark drives it: an LRU block cache of the run's cache
/// size shared by every column family, zstd on every level (or the codec a
/// `codec-*` workload names), the WAL on and synced at every batch (as
/// fractaldb's `commit_sync`), and direct reads plus direct flush/compaction
/// I/O when the run asks for direct I/O. Counter keyspaces get an
/// associative merge operator that adds, so a roll-up upsert is a merge
/// (no read). Everything else is RocksDB's default, as a user who changes
/// nothing would have it. The database handle is shared by every thread.
pub struct RocksEngine {
    dir: PathBuf,
    db: DB,
    keyspaces: Vec<&'static str>,
    write_options: WriteOptions,
    settings: String,
}

impl RocksEngine {
    /// Opens (or creates) the database in `dir` with one column family per keyspace.
    pub fn open(
        dir: &Path,
        config: &EngineConfig,
        keyspaces: &[Keyspace],
        codec: Option<Codec>,
    ) -> Result<Self> {
        let cache_size_bytes = usize::try_from(config.cache_size_bytes)
            .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
        let (db_options, mut cf_options) = options(config)?;
        if let Some(codec) = codec {
            cf_options.set_compression_type(compression(codec)?);
        }
        let descriptors = keyspaces.iter().map(|k| {
            let mut options = cf_options.clone();
            if k.kind == KeyspaceKind::Counters {
                options.set_merge_operator_associative(
                    "fractaldb-bench-counter-add",
                    |_key: &[u8], old: Option<&[u8]>, operands: &MergeOperands| {
                        // None (a malformed operand) makes RocksDB fail the read or compaction loudly.
                        Counter::merge(old, operands)
                    },
                );
            }
            ColumnFamilyDescriptor::new(k.name, options)
        });
        let db = DB::open_cf_descriptors(&db_options, dir, descriptors)
            .context(|| format!("opening rocksdb in {}", dir.display()))?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(true);
        let settings = format!(
            "rocksdb {version} (crate 0.20.1: the system's librocksdb when built with ROCKSDB_LIB_DIR, else the crate's bundled copy): WAL on, fsynced at every batch \
             (WriteOptions::set_sync(true)); LRU block cache {cache_size_bytes} bytes shared by all column \
             families; compression zstd on every level (codec-* workloads: the codec they name); one column family per \
             keyspace, counters through an associative merge operator that adds; \
             use_direct_reads={direct_io} use_direct_io_for_flush_and_compaction={direct_io}; one WriteBatch \
             per batch; everything else default (write_buffer_size 64 MiB and max_write_buffer_number 2 per \
             column family, outside the block cache; block_size 4 KiB; max_background_jobs 2; leveled \
             compaction)",
            version = library_version(dir),
            direct_io = config.direct_io,
        );
        let keyspaces = keyspaces.iter().map(|k| k.name).collect();
        Ok(RocksEngine { dir: dir.to_path_buf(), db, keyspaces, write_options, settings })
    }

    fn column_family(&self, keyspace: &str) -> Result<&rocksdb::ColumnFamily> {
        self.db.cf_handle(keyspace).ok_or_else(|| Error::new(format!("rocksdb: no column family {keyspace}")))
    }
}

/// The options every RocksDB benchmark opens with, as (database, column
/// family): an LRU block cache of the run's cache size, zstd, and direct
/// reads plus direct flush/compaction I/O when the run asks for direct I/O.
pub fn options(config: &EngineConfig) -> Result<(Options, Options)> {
    let cache_size_bytes = usize::try_from(config.cache_size_bytes)
        .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
    let cache = Cache::new_lru_cache(cache_size_bytes)?;
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    let mut cf_options = Options::default();
    cf_options.set_block_based_table_factory(&table);
    cf_options.set_compression_type(DBCompressionType::Zstd);
    let mut db_options = cf_options.clone();
    db_options.create_if_missing(true);
    db_options.create_missing_column_families(true);
    db_options.set_use_direct_reads(config.direct_io);
    db_options.set_use_direct_io_for_flush_and_compaction(config.direct_io);
    Ok((db_options, cf_options))
}

/// RocksDB's name for a codec, for those this build supports (see [`super::codecs`]).
fn compression(codec: Codec) -> Result<DBCompressionType> {
    Ok(match codec {
        Codec::None => DBCompressionType::None,
        Codec::Zstd => DBCompressionType::Zstd,
        Codec::Lz4 => DBCompressionType::Lz4,
        Codec::Snappy => DBCompressionType::Snappy,
        Codec::Zlib | Codec::Lzma => crate::bail!("rocksdb: this build has no {} codec", codec.name()),
    })
}

/// The library's version as it writes it at the top of its info log (the
/// crate has no call for it, and the linked library is the system's).
pub fn library_version(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("LOG"))
        .ok()
        .and_then(|log| {
            log.lines().find_map(|l| l.split_once("RocksDB version: ").map(|(_, v)| v.trim().to_string()))
        })
        .unwrap_or_else(|| "(version unknown)".to_string())
}

impl Engine for RocksEngine {
    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn sessions(&self, count: usize) -> Result<Vec<Box<dyn Session + Send + '_>>> {
        Ok((0..count).map(|_| Box::new(RocksSession { engine: self }) as Box<_>).collect())
    }

    fn flush(&self) -> Result<()> {
        let mut options = FlushOptions::default();
        options.set_wait(true);
        for keyspace in &self.keyspaces {
            self.db.flush_cf_opt(self.column_family(keyspace)?, &options)?;
        }
        Ok(())
    }

    fn disk_usage(&self) -> Result<DiskUsage> {
        folder_usage(&self.dir)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.flush()
    }
}

/// One thread's session: the shared database handle.
struct RocksSession<'a> {
    engine: &'a RocksEngine,
}

impl Session for RocksSession<'_> {
    fn write(&mut self, batch: &Batch) -> Result<()> {
        let engine = self.engine;
        let mut write_batch = rocksdb::WriteBatch::default();
        for (keyspace, ops) in batch.parts() {
            if ops.is_empty() {
                continue;
            }
            let cf = engine.column_family(keyspace)?;
            for (kind, key, value) in ops.iter() {
                match kind {
                    OpKind::Put => write_batch.put_cf(cf, key, value),
                    OpKind::Add => write_batch.merge_cf(cf, key, value),
                }
            }
        }
        Ok(engine.db.write_opt(write_batch, &engine.write_options)?)
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.engine.column_family(keyspace)?;
        Ok(self.engine.db.get_pinned_cf(cf, key)?.map(|v| v.to_vec()))
    }

    fn scan_from(
        &mut self,
        keyspace: &str,
        start: &[u8],
        limit: u64,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()> {
        let cf = self.engine.column_family(keyspace)?;
        let mut iter = self.engine.db.raw_iterator_cf(cf);
        iter.seek(start);
        let mut seen = 0;
        while seen < limit {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else { break };
            visit(key, value)?;
            seen += 1;
            iter.next();
        }
        Ok(iter.status()?)
    }
}
