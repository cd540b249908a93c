//! RocksDB under the benchmark (only with `--features rocksdb`): one column
//! family per keyspace.

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, FlushOptions, Options, WriteOptions,
    DB,
};

use super::{folder_usage, Batch, Engine, EngineConfig, ScanVisitor};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// RocksDB as the benchmark drives it: an LRU block cache of the run's cache
/// size shared by every column family, zstd on every level, the WAL on and
/// synced at every batch (as fractaldb's `commit_sync`), and direct reads plus
/// direct flush/compaction I/O when the run asks for direct I/O. Everything
/// else is RocksDB's default, as a user who changes nothing would have it.
pub struct RocksEngine {
    dir: PathBuf,
    db: DB,
    keyspaces: Vec<String>,
    write_options: WriteOptions,
    settings: String,
}

impl RocksEngine {
    /// Opens (or creates) the database in `dir` with one column family per keyspace.
    pub fn open(dir: &Path, config: &EngineConfig, keyspaces: &[&str]) -> Result<Self> {
        let cache_size_bytes = usize::try_from(config.cache_size_bytes)
            .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
        let (db_options, cf_options) = options(config)?;
        let descriptors = keyspaces.iter().map(|&k| ColumnFamilyDescriptor::new(k, cf_options.clone()));
        let db = DB::open_cf_descriptors(&db_options, dir, descriptors)
            .context(|| format!("opening rocksdb in {}", dir.display()))?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(true);
        let settings = format!(
            "rocksdb {version} (crate 0.20.1 over the system's librocksdb): WAL on, fsynced at every batch \
             (WriteOptions::set_sync(true)); LRU block cache {cache_size_bytes} bytes shared by all column \
             families; compression zstd on every level; one column family per keyspace; \
             use_direct_reads={direct_io} use_direct_io_for_flush_and_compaction={direct_io}; one WriteBatch \
             per batch; everything else default (write_buffer_size 64 MiB and max_write_buffer_number 2 per \
             column family, outside the block cache; block_size 4 KiB; max_background_jobs 2; leveled \
             compaction)",
            version = library_version(dir),
            direct_io = config.direct_io,
        );
        let keyspaces = keyspaces.iter().map(|k| k.to_string()).collect();
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

    fn write(&mut self, batch: &Batch) -> Result<()> {
        let mut write_batch = rocksdb::WriteBatch::default();
        for (keyspace, puts) in batch.parts() {
            if puts.len() == 0 {
                continue;
            }
            let cf = self.column_family(keyspace)?;
            for (key, value) in puts.iter() {
                write_batch.put_cf(cf, key, value);
            }
        }
        Ok(self.db.write_opt(write_batch, &self.write_options)?)
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.column_family(keyspace)?;
        Ok(self.db.get_pinned_cf(cf, key)?.map(|v| v.to_vec()))
    }

    fn scan(&mut self, keyspace: &str, visit: &mut ScanVisitor<'_>) -> Result<()> {
        let cf = self.column_family(keyspace)?;
        let mut iter = self.db.raw_iterator_cf(cf);
        iter.seek_to_first();
        while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
            visit(key, value)?;
            iter.next();
        }
        Ok(iter.status()?)
    }

    fn flush(&mut self) -> Result<()> {
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

    fn close(mut self: Box<Self>) -> Result<()> {
        self.flush()?;
        Ok(())
    }
}
