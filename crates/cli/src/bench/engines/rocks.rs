//! RocksDB under the benchmark (only with `--features rocksdb`): one column
//! family per keyspace.

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, FlushOptions,
    MergeOperands, Options, WriteOptions, DB,
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
        tuned: bool,
    ) -> Result<Self> {
        let cache_size_bytes = usize::try_from(config.cache_size_bytes)
            .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
        let (db_options, mut cf_options) = if tuned { options_tuned(config)? } else { options(config)? };
        if let Some(codec) = codec {
            let codec = compression(codec)?;
            cf_options.set_compression_type(codec);
            if tuned {
                cf_options.set_bottommost_compression_type(codec);
            }
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
        let profile = if tuned { TUNED_SETTINGS } else { DEFAULT_SETTINGS };
        let settings = format!(
            "rocksdb {version} (crate 0.20.1: the system's librocksdb when built with ROCKSDB_LIB_DIR, else the crate's bundled copy): WAL on, fsynced at every batch \
             (WriteOptions::set_sync(true)); LRU block cache {cache_size_bytes} bytes shared by all column \
             families; one column family per keyspace, counters through an associative merge operator that \
             adds; use_direct_reads={direct_io} use_direct_io_for_flush_and_compaction={direct_io}; one \
             WriteBatch per batch; {profile}",
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
    let table = cached_table(config)?;
    let mut cf_options = Options::default();
    cf_options.set_block_based_table_factory(&table);
    cf_options.set_compression_type(DBCompressionType::Zstd);
    Ok((db_options(&cf_options, config), cf_options))
}

/// Table options with an LRU block cache of the run's cache size.
fn cached_table(config: &EngineConfig) -> Result<BlockBasedOptions> {
    let cache_size_bytes = usize::try_from(config.cache_size_bytes)
        .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
    let cache = Cache::new_lru_cache(cache_size_bytes)?;
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    Ok(table)
}

/// The database options over `cf_options`: creates what is missing, and
/// direct reads plus direct flush/compaction I/O when the run asks for it.
fn db_options(cf_options: &Options, config: &EngineConfig) -> Options {
    let mut db_options = cf_options.clone();
    db_options.create_if_missing(true);
    db_options.create_missing_column_families(true);
    db_options.set_use_direct_reads(config.direct_io);
    db_options.set_use_direct_io_for_flush_and_compaction(config.direct_io);
    db_options
}

/// What [`options`] sets beyond the shared part, as the report prints it.
const DEFAULT_SETTINGS: &str = "profile default: compression zstd on every level (codec-* workloads: the codec \
     they name); everything else default (write_buffer_size 64 MiB and max_write_buffer_number 2 per column \
     family, outside the block cache; block_size 4 KiB; no Bloom filters; index and filter blocks outside the \
     block cache; max_background_jobs 2; leveled compaction)";

/// What [`options_tuned`] sets, as the report prints it.
const TUNED_SETTINGS: &str = "profile tuned (MyRocks' recommended column family options): lz4 on the upper \
     levels and zstd at the bottom (codec-* workloads: the codec they name on every level); Bloom filters of \
     10 bits per key (whole keys) except on the last level (optimize_filters_for_hits); index and filter \
     blocks in the block cache, partitioned (kTwoLevelIndexSearch, partition_filters, metadata_block_size \
     4 KiB, the top level and level 0's pinned); level_compaction_dynamic_level_bytes; \
     max_background_jobs 4; bytes_per_sync 1 MiB; block_size 4 KiB; \
     write_buffer_size 64 MiB and max_write_buffer_number 2 per column family, outside the block cache";

/// The tuned profile: [`options`] plus what MyRocks' recommended
/// configuration sets for its column families (its `rocksdb_default_cf_options`
/// and `rocksdb_max_background_jobs`), so the comparison is held against a
/// RocksDB somebody configured, not only RocksDB as shipped. The memtables
/// keep the default size, so both profiles have the same memory outside the
/// block cache.
pub fn options_tuned(config: &EngineConfig) -> Result<(Options, Options)> {
    let mut table = cached_table(config)?;
    table.set_bloom_filter(10.0, false);
    table.set_whole_key_filtering(true);
    // Index and filter blocks in the block cache, as MyRocks has them, so
    // the cache bounds RocksDB's memory as it bounds fractaldb's; partitioned
    // (two-level, 4 KiB partitions, top level pinned), so a get at 20x the
    // cache reads one small partition, not a whole file's filter: with
    // whole-file filters and indexes in a 64 MiB cache, each get read
    // about 800 KB of them.
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_partition_filters(true);
    table.set_metadata_block_size(4096);
    table.set_pin_top_level_index_and_filter(true);
    let mut cf_options = Options::default();
    cf_options.set_block_based_table_factory(&table);
    cf_options.set_compression_type(DBCompressionType::Lz4);
    cf_options.set_bottommost_compression_type(DBCompressionType::Zstd);
    cf_options.set_level_compaction_dynamic_level_bytes(true);
    cf_options.set_optimize_filters_for_hits(true);
    let mut db_options = db_options(&cf_options, config);
    db_options.set_max_background_jobs(4);
    db_options.set_bytes_per_sync(1 << 20);
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

    /// The memtables flushed, then a manual compaction of every column
    /// family's whole key range (it waits for the compaction).
    fn settle(&self) -> Result<()> {
        self.flush()?;
        for keyspace in &self.keyspaces {
            self.db.compact_range_cf(self.column_family(keyspace)?, None::<&[u8]>, None::<&[u8]>);
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
