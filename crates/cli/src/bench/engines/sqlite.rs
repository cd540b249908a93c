//! SQLite under the benchmark: one file, one clustered table per keyspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{
    folder_usage, Batch, Counter, Engine, EngineConfig, Keyspace, KeyspaceKind, OpKind, ScanVisitor, Session,
};
use crate::bench::sys::DiskUsage;
use crate::error::{Context, Error, Result};

/// How long a connection waits for another's write lock before it fails
/// with "database is locked": long enough that the `mixed` workload's
/// writers queue up rather than fail.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The SQL of one keyspace's table.
struct TableSql {
    kind: KeyspaceKind,
    /// Rows: insert or replace (k, v). Counters: the upsert
    /// `INSERT ... ON CONFLICT(k) DO UPDATE SET n = n + excluded.n, ...`.
    write: String,
    /// Rows: v. Counters: n, total.
    get: String,
    /// Rows: k, v. Counters: k, n, total. From `k >= ?1`, at most `?2` rows.
    scan_from: String,
}

/// SQLite as the benchmark drives it: one database file whose tables are
/// `WITHOUT ROWID` tables keyed by `k BLOB PRIMARY KEY` (so the table is the
/// key's B-tree, as a key/value store would be), `v BLOB` for rows and
/// `n INTEGER, total INTEGER` for counters (so a roll-up upsert is
/// `INSERT ... ON CONFLICT DO UPDATE`, SQL arithmetic, no blob decoding); WAL
/// journal with `synchronous=FULL` (every commit fsynced, as fractaldb's
/// `commit_sync`), the page cache set to the run's cache size, one
/// immediate transaction per batch and prepared statements throughout.
///
/// A connection is not shareable between threads, so each session opens its
/// own; the page cache is per connection, so sessions split the run's cache.
/// The engine's own connection only sets up the file, flushes and closes.
pub struct SqliteEngine {
    dir: PathBuf,
    path: PathBuf,
    cache_size_bytes: u64,
    conn: Mutex<Connection>,
    tables: HashMap<&'static str, TableSql>,
    settings: String,
}

/// Opens a connection to `path` with the pragmas every connection needs
/// (they are per connection, except journal_mode and page_size, which the
/// file keeps).
fn connect(path: &Path, cache_size_bytes: u64) -> Result<Connection> {
    let opening = || format!("opening sqlite {}", path.display());
    let conn = Connection::open(path).context(opening)?;
    let cache_kib = (cache_size_bytes / 1024).max(1);
    conn.execute_batch(&format!("PRAGMA synchronous = FULL; PRAGMA cache_size = -{cache_kib};"))
        .context(opening)?;
    conn.busy_timeout(BUSY_TIMEOUT).context(opening)?;
    Ok(conn)
}

impl SqliteEngine {
    /// Opens (or creates) `dir/db.sqlite` with the benchmark's pragmas and tables.
    pub fn open(dir: &Path, config: &EngineConfig, keyspaces: &[Keyspace]) -> Result<Self> {
        let path = dir.join("db.sqlite");
        let opening = || format!("opening sqlite {}", path.display());
        let conn = connect(&path, config.cache_size_bytes)?;
        // page_size must come before the first table is written.
        conn.execute_batch("PRAGMA page_size = 4096;").context(opening)?;
        let journal: String =
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).context(opening)?;
        if !journal.eq_ignore_ascii_case("wal") {
            crate::bail!("sqlite {} refused journal_mode=WAL (got {journal})", path.display());
        }
        let mut tables = HashMap::new();
        for keyspace in keyspaces {
            let name = keyspace.name;
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                crate::bail!("sqlite: keyspace name {name:?} is not [a-z0-9_]+");
            }
            let table = format!("kv_{name}");
            let (columns, sql) = match keyspace.kind {
                KeyspaceKind::Rows => (
                    "v BLOB",
                    TableSql {
                        kind: keyspace.kind,
                        write: format!("INSERT OR REPLACE INTO {table} (k, v) VALUES (?1, ?2)"),
                        get: format!("SELECT v FROM {table} WHERE k = ?1"),
                        scan_from: format!("SELECT k, v FROM {table} WHERE k >= ?1 ORDER BY k LIMIT ?2"),
                    },
                ),
                KeyspaceKind::Counters => (
                    "n INTEGER NOT NULL, total INTEGER NOT NULL",
                    TableSql {
                        kind: keyspace.kind,
                        write: format!(
                            "INSERT INTO {table} (k, n, total) VALUES (?1, ?2, ?3) \
                             ON CONFLICT(k) DO UPDATE SET n = n + excluded.n, total = total + excluded.total"
                        ),
                        get: format!("SELECT n, total FROM {table} WHERE k = ?1"),
                        scan_from: format!(
                            "SELECT k, n, total FROM {table} WHERE k >= ?1 ORDER BY k LIMIT ?2"
                        ),
                    },
                ),
            };
            conn.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (k BLOB PRIMARY KEY, {columns}) WITHOUT ROWID"
            ))
            .context(|| format!("creating table {table} in {}", path.display()))?;
            tables.insert(name, sql);
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
             WITHOUT ROWID, counters as (k BLOB PRIMARY KEY, n INTEGER, total INTEGER) WITHOUT ROWID \
             upserted by INSERT ... ON CONFLICT(k) DO UPDATE; page_size={} journal_mode={} synchronous={} \
             (2=FULL) cache_size={} (KiB when negative; split between the connections of a multi-threaded \
             workload, one per thread) wal_autocheckpoint={} (pages) busy_timeout={} ms; one immediate \
             transaction per batch, prepared statements; no compression (codec-none only); no direct I/O \
             (SQLite reads and writes through the OS page cache whatever --direct-io says)",
            rusqlite::version(),
            pragma("page_size")?,
            pragma("journal_mode")?,
            pragma("synchronous")?,
            pragma("cache_size")?,
            pragma("wal_autocheckpoint")?,
            BUSY_TIMEOUT.as_millis(),
        );
        Ok(SqliteEngine {
            dir: dir.to_path_buf(),
            path,
            cache_size_bytes: config.cache_size_bytes,
            conn: Mutex::new(conn),
            tables,
            settings,
        })
    }

    fn table(&self, keyspace: &str) -> Result<&TableSql> {
        self.tables.get(keyspace).ok_or_else(|| Error::new(format!("sqlite: no keyspace {keyspace}")))
    }
}

impl Engine for SqliteEngine {
    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn sessions(&self, count: usize) -> Result<Vec<Box<dyn Session + Send + '_>>> {
        let share = self.cache_size_bytes / count.max(1) as u64;
        (0..count)
            .map(|_| {
                let conn = connect(&self.path, share)?;
                Ok(Box::new(SqliteSession { engine: self, conn }) as Box<_>)
            })
            .collect()
    }

    fn flush(&self) -> Result<()> {
        // Move the WAL into the database file and empty it, so bytes on disk
        // count the data once.
        let conn = self.conn.lock().map_err(|_| Error::new("sqlite: a session panicked"))?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// A B-tree has nothing left to merge: the WAL moved into the file.
    fn settle(&self) -> Result<()> {
        self.flush()
    }

    fn disk_usage(&self) -> Result<DiskUsage> {
        folder_usage(&self.dir)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.flush()?;
        let conn = self.conn.into_inner().map_err(|_| Error::new("sqlite: a session panicked"))?;
        conn.close().map_err(|(_, e)| Error::from(e))
    }
}

/// One thread's session: a connection of its own.
struct SqliteSession<'a> {
    engine: &'a SqliteEngine,
    conn: Connection,
}

impl Session for SqliteSession<'_> {
    fn write(&mut self, batch: &Batch) -> Result<()> {
        // Immediate: take the write lock at BEGIN, so concurrent writers
        // wait in the busy handler instead of failing on a lock upgrade.
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (keyspace, ops) in batch.parts() {
            if ops.is_empty() {
                continue;
            }
            let table = self.engine.table(keyspace)?;
            let mut write = tx.prepare_cached(&table.write)?;
            for (kind, key, value) in ops.iter() {
                match (kind, table.kind) {
                    (OpKind::Put, KeyspaceKind::Rows) => write.execute(params![key, value])?,
                    (OpKind::Add, KeyspaceKind::Counters) => {
                        let delta = Counter::decode(value).ok_or_else(|| {
                            Error::new(format!("sqlite: a malformed counter for {keyspace}"))
                        })?;
                        write.execute(params![key, delta.count, delta.sum])?
                    }
                    (kind, table_kind) => {
                        crate::bail!("sqlite: a {kind:?} on {keyspace}, a keyspace of {table_kind:?}")
                    }
                };
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let table = self.engine.table(keyspace)?;
        let mut select = self.conn.prepare_cached(&table.get)?;
        let value = match table.kind {
            KeyspaceKind::Rows => select.query_row(params![key], |r| r.get::<_, Vec<u8>>(0)).optional()?,
            KeyspaceKind::Counters => select
                .query_row(params![key], |r| Ok(Counter { count: r.get(0)?, sum: r.get(1)? }))
                .optional()?
                .map(|c| c.encode().to_vec()),
        };
        Ok(value)
    }

    fn scan_from(
        &mut self,
        keyspace: &str,
        start: &[u8],
        limit: u64,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()> {
        let table = self.engine.table(keyspace)?;
        let mut scan = self.conn.prepare_cached(&table.scan_from)?;
        // LIMIT -1: no limit.
        let limit = i64::try_from(limit).unwrap_or(-1);
        let mut rows = scan.query(params![start, limit])?;
        while let Some(row) = rows.next()? {
            let key = row.get_ref(0)?.as_blob().context(|| format!("sqlite: key in {keyspace}"))?;
            match table.kind {
                KeyspaceKind::Rows => {
                    let value =
                        row.get_ref(1)?.as_blob().context(|| format!("sqlite: value in {keyspace}"))?;
                    visit(key, value)?;
                }
                KeyspaceKind::Counters => {
                    let counter = Counter { count: row.get(1)?, sum: row.get(2)? };
                    visit(key, &counter.encode())?;
                }
            }
        }
        Ok(())
    }
}
