//! fractaldb's embedded SQL layer under the benchmark: the same engine
//! behind [`fractaldb_sql::Database`], loaded as a user would load it, one
//! multi-row INSERT statement per batch. Set against the `fractaldb`
//! engine in the same run, it shows what the SQL layer costs (issue 19:
//! it should keep at least half of the engine's rate).

use std::io::Write;
use std::path::{Path, PathBuf};

use fractaldb_sql::{Database, DbOptions, Outcome, Value};

use super::{folder_usage, Batch, Engine, EngineConfig, Keyspace, OpKind, ScanVisitor, Session};
use crate::bench::sys::DiskUsage;
use crate::bench::workloads::{Dataset, VALUE_BYTES};
use crate::error::{Error, Result};

/// The database every table of the benchmark is in.
const DATABASE: &str = "bench";

/// The table of the `insert` dataset: its keyspace's 8-byte key and 100-byte value.
const INSERT_TABLE: &str = "CREATE TABLE bench.insert_rows (k BINARY(8) NOT NULL PRIMARY KEY, \
     v VARBINARY(100) NOT NULL)";

/// The table of the `iibench` dataset: the primary keyspace's row plus the
/// three secondary keyspaces' random values as indexed columns, so each
/// INSERTed row writes the same four entries the engine's batch puts.
/// As in iiBench itself the primary key is AUTO_INCREMENT and the INSERTs
/// leave it out, so the server numbers the rows (row `i` of the batch
/// stream gets `i + 1`) and its uniqueness check reads nothing.
const IIBENCH_TABLE: &str =
    "CREATE TABLE bench.iibench (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
     k1 BIGINT UNSIGNED NOT NULL, k2 BIGINT UNSIGNED NOT NULL, k3 BIGINT UNSIGNED NOT NULL, \
     v VARBINARY(100) NOT NULL, KEY (k1), KEY (k2), KEY (k3))";

/// Which of the two tables a dataset is stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Insert,
    Iibench,
}

impl Shape {
    /// The shape of a dataset with these keyspaces; only `insert` and `iibench` have one.
    fn of(keyspaces: &[Keyspace]) -> Result<Shape> {
        if keyspaces == Dataset::Insert.keyspaces() {
            Ok(Shape::Insert)
        } else if keyspaces == Dataset::Iibench.keyspaces() {
            Ok(Shape::Iibench)
        } else {
            let names: Vec<&str> = keyspaces.iter().map(|k| k.name).collect();
            Err(Error::new(format!(
                "fractaldb-sql stores only the insert and iibench datasets, not keyspaces {}",
                names.join(", ")
            )))
        }
    }

    /// The table's name in [`DATABASE`].
    fn table(self) -> &'static str {
        match self {
            Shape::Insert => "insert_rows",
            Shape::Iibench => "iibench",
        }
    }

    fn create(self) -> &'static str {
        match self {
            Shape::Insert => INSERT_TABLE,
            Shape::Iibench => IIBENCH_TABLE,
        }
    }

    /// The keyspace whose keys are the table's primary keys.
    fn primary_keyspace(self) -> &'static str {
        match self {
            Shape::Insert => Dataset::Insert.keyspaces()[0].name,
            Shape::Iibench => Dataset::Iibench.keyspaces()[0].name,
        }
    }
}

/// The SQL layer as the benchmark drives it: a [`Database`] in the
/// dataset's folder with the run's cache and direct I/O, commits synced and
/// checkpoints every 60 s (`DbOptions`' defaults, as `fractaldb sql` and the
/// server open it); database `bench` with one table for the dataset.
pub struct SqlEngine {
    dir: PathBuf,
    db: Database,
    shape: Shape,
    settings: String,
    /// The iibench id the next batch must start with: the table numbers
    /// rows by AUTO_INCREMENT, so batches must come in id order from 0,
    /// whichever session sends them. Held while a batch is built and
    /// written, so the order of statements is the order of ids.
    next_id: std::sync::Mutex<u64>,
}

impl SqlEngine {
    /// Opens (creating if missing) the database in `dir` and the dataset's table.
    pub fn open(dir: &Path, config: &EngineConfig, keyspaces: &[Keyspace]) -> Result<Self> {
        let shape = Shape::of(keyspaces)?;
        let cache_size_bytes = usize::try_from(config.cache_size_bytes)
            .map_err(|_| Error::new("cache size does not fit this machine's address space"))?;
        let options = DbOptions { cache_size_bytes, direct_io: config.direct_io, ..DbOptions::default() };
        let settings = format!(
            "fractaldb-sql {}: fractaldb's embedded SQL layer (fractaldb_sql::Database) over the same engine; \
             cache_size_bytes={} direct_io={} commit_sync={} checkpoint_period_secs={} (the rest DbOptions' \
             defaults); insert: `{INSERT_TABLE}`; iibench: `{IIBENCH_TABLE}`; every dictionary zstd at the \
             default node sizes (the SQL layer's defaults); each batch is one autocommit INSERT statement \
             of the batch's rows (--batch-rows), values as literals (BINARY and VARBINARY as X'..' hex) so \
             it takes the literal multi-row fast path, at the session's default isolation (repeatable \
             read); insert's primary keys are checked unique by a locked point read, iibench's are AUTO_INCREMENT \
             values the statement reserves and locks (iiBench's table; nothing read)",
            env!("CARGO_PKG_VERSION"),
            options.cache_size_bytes,
            options.direct_io,
            options.commit_sync,
            options.checkpoint_period_secs,
        );
        let db = Database::open(dir, options)
            .map_err(|e| Error::new(format!("opening fractaldb-sql in {}: {e}", dir.display())))?;
        let next_id = std::sync::Mutex::new(0);
        let engine = SqlEngine { dir: dir.to_path_buf(), db, shape, settings, next_id };
        let mut session = engine.db.session();
        execute(&mut session, format!("CREATE DATABASE IF NOT EXISTS {DATABASE}").as_bytes())?;
        let create = shape.create().replacen("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1);
        execute(&mut session, create.as_bytes())?;
        drop(session);
        Ok(engine)
    }
}

/// Runs one statement, naming it (cut short: a load's is long) in an error.
fn execute(session: &mut fractaldb_sql::Session, statement: &[u8]) -> Result<Outcome> {
    session.execute(statement).map_err(|e| {
        let text = String::from_utf8_lossy(&statement[..statement.len().min(80)]);
        let more = if statement.len() > 80 { "..." } else { "" };
        Error::new(format!("fractaldb-sql: {text}{more}: {e}"))
    })
}

/// Runs a query of one row and one integer column (a `COUNT(*)`).
fn count(session: &mut fractaldb_sql::Session, query: &[u8]) -> Result<u64> {
    let what = || String::from_utf8_lossy(query).into_owned();
    match execute(session, query)? {
        Outcome::Rows(rows) => match rows.rows.first().and_then(|r| r.first()) {
            Some(Value::Int(n)) if *n >= 0 => Ok(*n as u64),
            Some(Value::UInt(n)) => Ok(*n),
            other => Err(Error::new(format!("fractaldb-sql: {} gave {other:?}", what()))),
        },
        Outcome::Done { .. } => Err(Error::new(format!("fractaldb-sql: {} returned no rows", what()))),
    }
}

impl Engine for SqlEngine {
    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn sessions(&self, count: usize) -> Result<Vec<Box<dyn Session + Send + '_>>> {
        Ok((0..count)
            .map(|_| {
                Box::new(SqlSession { engine: self, session: self.db.session(), statement: Vec::new() })
                    as Box<_>
            })
            .collect())
    }

    /// A checkpoint.
    fn flush(&self) -> Result<()> {
        self.db.checkpoint().map_err(|e| Error::new(format!("fractaldb-sql: checkpoint: {e}")))
    }

    /// OPTIMIZE TABLE (every buffered message flushed to the leaves, as the
    /// fractaldb engine's settle does), then a checkpoint.
    fn settle(&self) -> Result<()> {
        let mut session = self.db.session();
        execute(&mut session, format!("OPTIMIZE TABLE {DATABASE}.{}", self.shape.table()).as_bytes())?;
        drop(session);
        self.flush()
    }

    fn disk_usage(&self) -> Result<DiskUsage> {
        folder_usage(&self.dir)
    }

    fn exact_rows(&self, keyspace: &str) -> Result<Option<u64>> {
        if keyspace != self.shape.primary_keyspace() {
            return Ok(None);
        }
        let mut session = self.db.session();
        let query = format!("SELECT COUNT(*) FROM {DATABASE}.{}", self.shape.table());
        count(&mut session, query.as_bytes()).map(Some)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close().map_err(|e| Error::new(format!("fractaldb-sql: closing {}: {e}", self.dir.display())))
    }
}

/// One thread's session: an SQL session of its own, and the buffer each
/// batch's statement is written into (kept, so a batch allocates nothing).
struct SqlSession<'a> {
    engine: &'a SqlEngine,
    session: fractaldb_sql::Session,
    statement: Vec<u8>,
}

impl Session for SqlSession<'_> {
    /// One INSERT statement in autocommit: a statement is atomic and its
    /// commit synced on its own, so BEGIN and COMMIT around it would add
    /// two statements and a savepoint and change nothing else.
    fn write(&mut self, batch: &Batch) -> Result<()> {
        // A failed statement leaves no row, so the ids go back.
        let mut next_id = self.engine.next_id.lock().unwrap_or_else(|e| e.into_inner());
        let first_id = *next_id;
        let built = match self.engine.shape {
            Shape::Insert => insert_statement(batch, &mut self.statement),
            Shape::Iibench => iibench_statement(batch, &mut self.statement, &mut next_id),
        };
        let rows = built.inspect_err(|_| *next_id = first_id)?;
        if rows == 0 {
            return Ok(());
        }
        let done = execute(&mut self.session, &self.statement).inspect_err(|_| *next_id = first_id)?;
        match done {
            Outcome::Done { affected, .. } if affected == rows as u64 => Ok(()),
            other => Err(Error::new(format!(
                "fractaldb-sql: an INSERT of {rows} rows into {DATABASE}.{} ended with {other:?}",
                self.engine.shape.table()
            ))),
        }
    }

    /// A point SELECT by primary key, on the keyspace that holds the rows
    /// (`insert`, `iibench_pk`); the secondary keyspaces are not readable here.
    fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let shape = self.engine.shape;
        if keyspace != shape.primary_keyspace() {
            return Err(Error::new(format!(
                "fractaldb-sql reads only {}, not {keyspace}",
                shape.primary_keyspace()
            )));
        }
        let query = &mut self.statement;
        query.clear();
        query.extend_from_slice(format!("SELECT v FROM {DATABASE}.{} WHERE ", shape.table()).as_bytes());
        match shape {
            Shape::Insert => {
                query.extend_from_slice(b"k = ");
                push_hex(query, key);
            }
            Shape::Iibench => {
                // AUTO_INCREMENT numbered batch row `i` as `i + 1`.
                query.extend_from_slice(b"id = ");
                // Writing into a Vec cannot fail.
                let _ = write!(query, "{}", be_u64(key, keyspace)?.saturating_add(1));
            }
        }
        match execute(&mut self.session, query)? {
            Outcome::Rows(rows) => match rows.rows.as_slice() {
                [] => Ok(None),
                [row] => match row.first() {
                    Some(Value::Str(bytes)) => Ok(Some(bytes.clone())),
                    other => Err(Error::new(format!("fractaldb-sql: a value of {keyspace} is {other:?}"))),
                },
                _ => Err(Error::new(format!("fractaldb-sql: a key of {keyspace} has several rows"))),
            },
            Outcome::Done { .. } => Err(Error::new("fractaldb-sql: a SELECT returned no rows")),
        }
    }

    fn scan_from(
        &mut self,
        keyspace: &str,
        _start: &[u8],
        _limit: u64,
        _visit: &mut ScanVisitor<'_>,
    ) -> Result<()> {
        Err(Error::new(format!(
            "fractaldb-sql does not scan ({keyspace}): it runs only the insert and iibench loads"
        )))
    }
}

/// The u64 an 8-byte big-endian key holds.
fn be_u64(key: &[u8], what: &str) -> Result<u64> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| Error::new(format!("fractaldb-sql: a key of {what} is {} bytes, not 8", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Appends `bytes` as a hex literal, `X'00FF..'`: any bytes, quotes and
/// backslashes included, read back exactly, with no escaping to get wrong.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(bytes.len() * 2 + 3);
    out.extend_from_slice(b"X'");
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0F)]);
    }
    out.push(b'\'');
}

/// Checks a value fits the tables' `v VARBINARY(100)`.
fn check_value(value: &[u8], what: &str) -> Result<()> {
    if value.len() > VALUE_BYTES {
        return Err(Error::new(format!(
            "fractaldb-sql: a value of {what} is {} bytes, more than v's {VALUE_BYTES}",
            value.len()
        )));
    }
    Ok(())
}

/// Writes into `out` the INSERT of an `insert` batch, `INSERT INTO
/// bench.insert_rows VALUES (X'key',X'value'),...`; returns its rows (0:
/// an empty batch, nothing to send).
fn insert_statement(batch: &Batch, out: &mut Vec<u8>) -> Result<usize> {
    out.clear();
    let mut parts = batch.parts();
    let (Some((keyspace, ops)), None) = (parts.next(), parts.next()) else {
        return Err(Error::new("fractaldb-sql: an insert batch has one keyspace"));
    };
    out.extend_from_slice(b"INSERT INTO bench.insert_rows VALUES ");
    let mut rows = 0;
    for (kind, key, value) in ops.iter() {
        if kind != OpKind::Put || key.len() != 8 {
            return Err(Error::new(format!(
                "fractaldb-sql: {keyspace} takes puts of 8-byte keys, not a {kind:?} of a {}-byte key",
                key.len()
            )));
        }
        check_value(value, keyspace)?;
        if rows > 0 {
            out.push(b',');
        }
        out.push(b'(');
        push_hex(out, key);
        out.push(b',');
        push_hex(out, value);
        out.push(b')');
        rows += 1;
    }
    Ok(rows)
}

/// Writes into `out` the INSERT of an `iibench` batch, `INSERT INTO
/// bench.iibench (k1,k2,k3,v) VALUES (k1,k2,k3,X'value'),...`; returns its
/// rows (0: an empty batch). The batch must have iibench's shape: the i-th
/// put of each secondary keyspace is (random u64 ++ id) of the i-th row of
/// the primary one, with an empty value; and its ids must run on from
/// `next_id` (advanced past them), since AUTO_INCREMENT numbers the rows.
fn iibench_statement(batch: &Batch, out: &mut Vec<u8>, next_id: &mut u64) -> Result<usize> {
    out.clear();
    let shape_error = |why: String| Error::new(format!("fractaldb-sql: not an iibench batch: {why}"));
    let parts: Vec<_> = batch.parts().collect();
    let expected: Vec<&str> = Dataset::Iibench.keyspaces().iter().map(|k| k.name).collect();
    let names: Vec<&str> = parts.iter().map(|(name, _)| *name).collect();
    if names != expected {
        return Err(shape_error(format!("keyspaces {names:?}, expected {expected:?}")));
    }
    let mut secondaries = [parts[1].1.iter(), parts[2].1.iter(), parts[3].1.iter()];
    out.extend_from_slice(b"INSERT INTO bench.iibench (k1,k2,k3,v) VALUES ");
    let mut rows = 0;
    for (kind, key, value) in parts[0].1.iter() {
        if kind != OpKind::Put {
            return Err(shape_error(format!("a {kind:?} in {}", expected[0])));
        }
        let id = be_u64(key, expected[0])?;
        if id != *next_id {
            return Err(shape_error(format!(
                "row {rows} has id {id} where {} comes next (AUTO_INCREMENT numbers the rows, so \
                 they must come in id order from 0)",
                *next_id
            )));
        }
        *next_id += 1;
        check_value(value, expected[0])?;
        if rows > 0 {
            out.push(b',');
        }
        out.push(b'(');
        for (index, ops) in secondaries.iter_mut().enumerate() {
            let name = expected[index + 1];
            let Some((kind, key, value)) = ops.next() else {
                return Err(shape_error(format!("{name} has fewer puts than {}", expected[0])));
            };
            if kind != OpKind::Put || key.len() != 16 || !value.is_empty() {
                return Err(shape_error(format!(
                    "{name} holds a {kind:?} of a {}-byte key and a {}-byte value, not a put of \
                     (8 bytes ++ id) and nothing",
                    key.len(),
                    value.len()
                )));
            }
            let (random, key_id) = key.split_at(8);
            if be_u64(key_id, name)? != id {
                return Err(shape_error(format!(
                    "row {rows} has id {id} in {} but {} in {name}",
                    expected[0],
                    be_u64(key_id, name)?
                )));
            }
            let _ = write!(out, "{}", be_u64(random, name)?);
            out.push(b',');
        }
        push_hex(out, value);
        out.push(b')');
        rows += 1;
    }
    for (index, ops) in secondaries.iter_mut().enumerate() {
        if ops.next().is_some() {
            return Err(shape_error(format!("{} has more puts than {}", expected[index + 1], expected[0])));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, dataset: Dataset) -> SqlEngine {
        let config = EngineConfig { cache_size_bytes: 16 << 20, direct_io: false };
        SqlEngine::open(dir, &config, dataset.keyspaces()).unwrap()
    }

    /// The iibench batch of rows (id, k1, k2, k3, v).
    fn iibench_batch(rows: &[(u64, u64, u64, u64, &[u8])]) -> Batch {
        let mut batch = Batch::new(Dataset::Iibench.keyspaces());
        for &(id, k1, k2, k3, v) in rows {
            batch.part(0).put(&id.to_be_bytes(), v);
            for (index, k) in [(1, k1), (2, k2), (3, k3)] {
                let mut key = k.to_be_bytes().to_vec();
                key.extend_from_slice(&id.to_be_bytes());
                batch.part(index).put(&key, &[]);
            }
        }
        batch
    }

    /// The rows a query returns, each value as text.
    fn select(engine: &SqlEngine, query: &str) -> Vec<Vec<String>> {
        let mut session = engine.db.session();
        match execute(&mut session, query.as_bytes()).unwrap() {
            Outcome::Rows(rows) => rows
                .rows
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|v| match v {
                            Value::Str(b) => String::from_utf8_lossy(b).into_owned(),
                            Value::Int(n) => n.to_string(),
                            Value::UInt(n) => n.to_string(),
                            other => format!("{other:?}"),
                        })
                        .collect()
                })
                .collect(),
            other => panic!("{query}: {other:?}"),
        }
    }

    #[test]
    fn an_iibench_batch_is_one_insert_whose_bytes_round_trip() {
        let awkward: &[u8] = b"\x00\xFF'\"\\`;--\x00";
        let batch = iibench_batch(&[
            (0, 1, u64::MAX, 42, awkward),
            (1, 7, 8, 9, b"it's"),
            (2, 0, 0, u64::MAX - 1, &[0xFF; 100]),
        ]);
        let mut statement = Vec::new();
        let mut next_id = 0;
        assert_eq!(iibench_statement(&batch, &mut statement, &mut next_id).unwrap(), 3);
        assert_eq!(next_id, 3);
        let text = String::from_utf8(statement.clone()).unwrap();
        let expected = format!(
            "INSERT INTO bench.iibench (k1,k2,k3,v) VALUES (1,18446744073709551615,42,X'00FF27225C603B2D2D00'),\
             (7,8,9,X'69742773'),(0,0,18446744073709551614,X'{}')",
            "FF".repeat(100)
        );
        assert_eq!(text, expected);
        let fast = fractaldb_sql::fastinsert::parse(&statement).expect("the literal multi-row fast path");
        assert_eq!(fast.rows.len(), 3);

        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path(), Dataset::Iibench);
        engine.session().unwrap().write(&batch).unwrap();
        let rows = select(&engine, "SELECT id, k1, k2, k3, HEX(v) FROM bench.iibench ORDER BY id");
        let expected: Vec<Vec<String>> = [
            // AUTO_INCREMENT numbers batch row i as i + 1.
            ["1", "1", "18446744073709551615", "42", "00FF27225C603B2D2D00"],
            ["2", "7", "8", "9", "69742773"],
            ["3", "0", "0", "18446744073709551614", &"FF".repeat(100)],
        ]
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
        assert_eq!(rows, expected);
        // Each secondary index holds an entry per row.
        for index in ["k1", "k2", "k3"] {
            assert_eq!(engine.db.index_entries("bench", "iibench", index).unwrap().len(), 3, "{index}");
        }
        let by_k2 = select(&engine, "SELECT id FROM bench.iibench WHERE k2 = 0");
        assert_eq!(by_k2, [["3".to_string()]]);
        assert_eq!(engine.exact_rows("iibench_pk").unwrap(), Some(3));
        assert_eq!(engine.exact_rows("iibench_k1").unwrap(), None);
        let mut session = engine.session().unwrap();
        assert_eq!(session.get("iibench_pk", &0u64.to_be_bytes()).unwrap(), Some(awkward.to_vec()));
        assert_eq!(session.get("iibench_pk", &2u64.to_be_bytes()).unwrap(), Some(vec![0xFF; 100]));
        assert_eq!(session.get("iibench_pk", &3u64.to_be_bytes()).unwrap(), None);
        assert!(session.get("iibench_k1", &[0; 16]).is_err());
        // The next batch must go on from id 3: row ids are AUTO_INCREMENT's.
        let error = session.write(&iibench_batch(&[(5, 1, 1, 1, b"x")])).unwrap_err().to_string();
        assert!(error.contains("id 5 where 3 comes next"), "{error}");
        session.write(&iibench_batch(&[(3, 1, 1, 1, b"x")])).unwrap();
        drop(session);
        assert_eq!(engine.exact_rows("iibench_pk").unwrap(), Some(4));
        engine.settle().unwrap();
        Box::new(engine).close().unwrap();
    }

    #[test]
    fn an_insert_batch_is_one_insert_of_binary_keys() {
        let mut batch = Batch::new(Dataset::Insert.keyspaces());
        batch.part(0).put(b"\x00\x00\x00\x00\x00\x00\x00\x01", b"'");
        batch.part(0).put(b"\xFF\xFE'\"\\\x00\x00\x00", &[0u8; 100]);
        let mut statement = Vec::new();
        assert_eq!(insert_statement(&batch, &mut statement).unwrap(), 2);
        assert_eq!(
            String::from_utf8(statement.clone()).unwrap(),
            format!(
                "INSERT INTO bench.insert_rows VALUES (X'0000000000000001',X'27'),(X'FFFE27225C000000',X'{}')",
                "00".repeat(100)
            )
        );
        assert!(fractaldb_sql::fastinsert::parse(&statement).is_some());

        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path(), Dataset::Insert);
        engine.session().unwrap().write(&batch).unwrap();
        let rows = select(&engine, "SELECT HEX(k), LENGTH(v) FROM bench.insert_rows ORDER BY k");
        assert_eq!(rows, [["0000000000000001", "1"], ["FFFE27225C000000", "100"]]);
        let mut session = engine.session().unwrap();
        assert_eq!(session.get("insert", b"\xFF\xFE'\"\\\x00\x00\x00").unwrap(), Some(vec![0u8; 100]));
        assert_eq!(session.get("insert", b"\x00\x00\x00\x00\x00\x00\x00\x02").unwrap(), None);
        drop(session);
        assert_eq!(engine.exact_rows("insert").unwrap(), Some(2));
        Box::new(engine).close().unwrap();
        // Reopened, the table is there and keeps its rows.
        let engine = open(dir.path(), Dataset::Insert);
        assert_eq!(engine.exact_rows("insert").unwrap(), Some(2));
        Box::new(engine).close().unwrap();
    }

    #[test]
    fn a_batch_of_another_shape_is_refused() {
        let mut statement = Vec::new();
        // k1's second entry names another row.
        let mut batch = iibench_batch(&[(0, 1, 2, 3, b"a")]);
        batch.part(0).put(&1u64.to_be_bytes(), b"b");
        batch.part(1).put(&[0; 16], &[]);
        let error = iibench_statement(&batch, &mut statement, &mut 0).unwrap_err().to_string();
        assert!(error.contains("iibench_k1") && error.contains("id 1 in iibench_pk but 0"), "{error}");
        let mut batch = iibench_batch(&[(0, 1, 2, 3, b"a")]);
        batch.part(2).put(&[0; 16], &[]);
        let error = iibench_statement(&batch, &mut statement, &mut 0).unwrap_err().to_string();
        assert!(error.contains("iibench_k2 has more puts"), "{error}");
        let batch = iibench_batch(&[(0, 1, 2, 3, &[7; 101])]);
        assert!(iibench_statement(&batch, &mut statement, &mut 0).is_err());
        let mut batch = Batch::new(Dataset::Insert.keyspaces());
        batch.part(0).put(b"short", b"v");
        assert!(insert_statement(&batch, &mut statement).is_err());
        assert!(Shape::of(Dataset::RollupSeq.keyspaces()).is_err());
        let empty = Batch::new(Dataset::Iibench.keyspaces());
        assert_eq!(iibench_statement(&empty, &mut statement, &mut 0).unwrap(), 0);
    }
}
