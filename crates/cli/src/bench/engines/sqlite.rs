//! SQLite under the benchmark: one file, one clustered table per keyspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use super::{folder_usage, Batch, Engine, EngineConfig, ScanVisitor};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// SQLite as the benchmark drives it: one database file whose tables are
/// `(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` (so the table is the key's
/// B-tree, as a key/value store would be), WAL journal with
/// `synchronous=FULL` (every commit fsynced, as fractaldb's `commit_sync`),
/// the page cache set to the run's cache size, one transaction per batch and
/// prepared statements throughout.
pub struct SqliteEngine {
    dir: PathBuf,
    conn: Connection,
    /// SQL per keyspace: (insert, point select, ordered scan).
    statements: HashMap<String, [String; 3]>,
    settings: String,
}

impl SqliteEngine {
    /// Opens (or creates) `dir/db.sqlite` with the benchmark's pragmas and tables.
    pub fn open(dir: &Path, config: &EngineConfig, keyspaces: &[&str]) -> Result<Self> {
        let path = dir.join("db.sqlite");
        let opening = || format!("opening sqlite {}", path.display());
        let conn = Connection::open(&path).context(opening)?;
        let cache_kib = (config.cache_size_bytes / 1024).max(1);
        // page_size must come before the first table is written.
        conn.execute_batch(&format!(
            "PRAGMA page_size = 4096; PRAGMA synchronous = FULL; PRAGMA cache_size = -{cache_kib};"
        ))
        .context(opening)?;
        let journal: String =
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).context(opening)?;
        if !journal.eq_ignore_ascii_case("wal") {
            crate::bail!("sqlite {} refused journal_mode=WAL (got {journal})", path.display());
        }
        let mut statements = HashMap::new();
        for &name in keyspaces {
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                crate::bail!("sqlite: keyspace name {name:?} is not [a-z0-9_]+");
            }
            let table = format!("kv_{name}");
            conn.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"
            ))
            .context(|| format!("creating table {table} in {}", path.display()))?;
            statements.insert(
                name.to_string(),
                [
                    format!("INSERT OR REPLACE INTO {table} (k, v) VALUES (?1, ?2)"),
                    format!("SELECT v FROM {table} WHERE k = ?1"),
                    format!("SELECT k, v FROM {table} ORDER BY k"),
                ],
            );
        }
        let pragma = |name: &str| -> Result<String> {
            Ok(conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, rusqlite::types::Value>(0)).map(
                |v| match v {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                },
            )?)
        };
        let settings = format!(
            "sqlite {} (rusqlite, bundled): one table per keyspace (k BLOB PRIMARY KEY, v BLOB) \
             WITHOUT ROWID; page_size={} journal_mode={} synchronous={} (2=FULL) cache_size={} \
             (KiB when negative) wal_autocheckpoint={} (pages); one transaction per batch, prepared \
             statements; no direct I/O (SQLite reads and writes through the OS page cache whatever \
             --direct-io says)",
            rusqlite::version(),
            pragma("page_size")?,
            pragma("journal_mode")?,
            pragma("synchronous")?,
            pragma("cache_size")?,
            pragma("wal_autocheckpoint")?,
        );
        Ok(SqliteEngine { dir: dir.to_path_buf(), conn, statements, settings })
    }

    fn sql(&self, keyspace: &str, which: usize) -> Result<&str> {
        self.statements
            .get(keyspace)
            .map(|s| s[which].as_str())
            .ok_or_else(|| Error::new(format!("sqlite: no keyspace {keyspace}")))
    }
}

impl Engine for SqliteEngine {
    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn write(&mut self, batch: &Batch) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (keyspace, puts) in batch.parts() {
            if puts.len() == 0 {
                continue;
            }
            let sql = self
                .statements
                .get(keyspace)
                .map(|s| s[0].as_str())
                .ok_or_else(|| Error::new(format!("sqlite: no keyspace {keyspace}")))?;
            let mut insert = tx.prepare_cached(sql)?;
            for (key, value) in puts.iter() {
                insert.execute(params![key, value])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut select = self.conn.prepare_cached(self.sql(keyspace, 1)?)?;
        Ok(select.query_row(params![key], |r| r.get::<_, Vec<u8>>(0)).optional()?)
    }

    fn scan(&mut self, keyspace: &str, visit: &mut ScanVisitor<'_>) -> Result<()> {
        let mut scan = self.conn.prepare_cached(self.sql(keyspace, 2)?)?;
        let mut rows = scan.query([])?;
        while let Some(row) = rows.next()? {
            let key = row.get_ref(0)?.as_blob().context(|| format!("sqlite: key in {keyspace}"))?;
            let value = row.get_ref(1)?.as_blob().context(|| format!("sqlite: value in {keyspace}"))?;
            visit(key, value)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // Move the WAL into the database file and empty it, so bytes on disk
        // count the data once.
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    fn disk_usage(&self) -> Result<DiskUsage> {
        folder_usage(&self.dir)
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.flush()?;
        let SqliteEngine { conn, .. } = *self;
        conn.close().map_err(|(_, e)| Error::from(e))
    }
}
