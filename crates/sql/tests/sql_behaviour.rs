//! The SQL layer's promises beyond single statements: transactions and
//! statement atomicity, exact row counts across restarts and crashes,
//! crash-safe DDL, and MySQL errors (never a panic) for bad input.

use fractaldb_sql::{Database, Outcome, Session};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

mod support;
use support::crash::{last_number, CrashChild};
use support::embedded::{affected, err, err_msg, kill_while_running, ok, one, rows, test_opts as opts};

#[test]
fn a_failing_statement_in_a_transaction_undoes_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, u INT, UNIQUE KEY (u))");
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20)");
    // The third row collides: the whole statement is undone, rows 3 included.
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (3, 30), (4, 10)"), 1062);
    assert_eq!(rows(&mut s, "SELECT id FROM t ORDER BY id"), [["1"], ["2"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "2");
    ok(&mut s, "COMMIT");
    ok(&mut s, "BEGIN");
    ok(&mut s, "DELETE FROM t WHERE id = 1");
    ok(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "2");
    // Savepoints.
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO t VALUES (5, 50)");
    ok(&mut s, "SAVEPOINT a");
    ok(&mut s, "INSERT INTO t VALUES (6, 60)");
    ok(&mut s, "ROLLBACK TO SAVEPOINT a");
    ok(&mut s, "COMMIT");
    assert_eq!(rows(&mut s, "SELECT id FROM t ORDER BY id"), [["1"], ["2"], ["5"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "3");
}

#[test]
fn a_snapshot_reads_its_own_count_and_rows_and_a_unique_key_blocks_a_concurrent_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut a = db.session();
    let mut b = db.session();
    ok(&mut a, "CREATE DATABASE d");
    ok(&mut a, "USE d");
    ok(&mut b, "USE d");
    ok(&mut a, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), UNIQUE KEY uv (v))");
    ok(&mut a, "INSERT INTO t VALUES (1, 'x')");
    ok(&mut a, "BEGIN");
    assert_eq!(one(&mut a, "SELECT COUNT(*) FROM t"), "1");
    ok(&mut b, "INSERT INTO t VALUES (2, 'y')");
    // Repeatable read: a's snapshot sees neither b's row nor b's count.
    assert_eq!(one(&mut a, "SELECT COUNT(*) FROM t"), "1");
    assert_eq!(rows(&mut a, "SELECT id FROM t"), [["1"]]);
    ok(&mut a, "COMMIT");
    assert_eq!(one(&mut a, "SELECT COUNT(*) FROM t"), "2");
    // A unique value held by an open transaction: the other waits for
    // its lock and times out (1205), never inserts a duplicate.
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO t VALUES (3, 'Z')");
    ok(&mut b, "SET SESSION innodb_lock_wait_timeout = 1");
    assert_eq!(err(&mut b, "INSERT INTO t VALUES (4, 'z')"), 1205);
    ok(&mut a, "COMMIT");
    // utf8mb4_general_ci: 'z' equals 'Z'.
    assert_eq!(err(&mut b, "INSERT INTO t VALUES (4, 'z')"), 1062);
}

#[test]
fn row_counts_stay_exact_across_a_restart_and_after_every_kind_of_change() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (a INT, b VARCHAR(5), KEY (b))");
        for i in 0..50 {
            ok(&mut s, &format!("INSERT INTO t VALUES ({i}, 'k{}')", i % 7));
        }
        ok(&mut s, "DELETE FROM t WHERE b = 'k3'");
        ok(&mut s, "INSERT IGNORE INTO t VALUES (100, 'k1')");
        drop(s);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    let counted = one(&mut s, "SELECT COUNT(*) FROM t");
    let scanned = rows(&mut s, "SELECT a FROM t").len().to_string();
    assert_eq!(counted, scanned);
    assert_eq!(counted, "44");
    // Secondary index reads agree with the scan.
    assert_eq!(rows(&mut s, "SELECT a FROM t WHERE b = 'k1' ORDER BY a").len(), 8);
    ok(&mut s, "TRUNCATE TABLE t");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "0");
    ok(&mut s, "INSERT INTO t VALUES (1, 'a')");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "1");
}

/// A child process inserts in autocommit transactions and is killed with
/// SIGKILL; after reopening, every acknowledged row is there and the row
/// count equals the rows in the table.
#[test]
fn a_killed_process_loses_no_acknowledged_row_and_counts_stay_exact() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_CRASH_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "USE d");
        for i in 0.. {
            ok(&mut s, &format!("INSERT INTO t VALUES ({i}, {i} * 2)"));
            // Acknowledged: the parent may count on it.
            println!("acked {i}");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, KEY (v))");
        drop(s);
        db.close().unwrap();
    }
    let mut child = CrashChild::spawn(
        "a_killed_process_loses_no_acknowledged_row_and_counts_stay_exact",
        "FRACTALDB_SQL_CRASH_CHILD",
        dir.path(),
    );
    // Killed a while after its first acknowledged row (a loaded machine
    // may take long to start it).
    assert!(child.wait_for(std::time::Duration::from_secs(120), |l| l.starts_with("acked ")));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let last = last_number(&child.kill(), "acked ").expect("the child acknowledged some rows") as i64;
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    let n: i64 = one(&mut s, "SELECT COUNT(*) FROM t").parse().unwrap();
    let scanned = rows(&mut s, "SELECT id FROM t").len() as i64;
    assert_eq!(n, scanned, "the row count matches the rows");
    assert!(n > last, "acknowledged rows 0..={last} survive, found {n}");
    assert_eq!(one(&mut s, &format!("SELECT v FROM t WHERE id = {last}")), (last * 2).to_string());
    assert_eq!(rows(&mut s, &format!("SELECT id FROM t WHERE v = {}", last * 2)), [[last.to_string()]]);
}

/// Dictionaries left by a DDL statement a crash cut short (created but not
/// yet in the catalog) are dropped at the next open; the catalog's tables
/// are untouched.
#[test]
fn dictionaries_no_catalog_record_names_are_dropped_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "CREATE TABLE d.t (a INT PRIMARY KEY)");
        ok(&mut s, "INSERT INTO d.t VALUES (1)");
        drop(s);
        db.close().unwrap();
    }
    {
        // What a crash between creating the dictionaries of `d.u` and
        // committing its catalog record leaves.
        let env = engine_of(dir.path());
        env.create_dictionary("d/u/main", fractaldb::DictOptions::default()).unwrap();
        env.create_dictionary("d/u/status", fractaldb::DictOptions::default()).unwrap();
        env.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    assert_eq!(rows(&mut s, "SELECT a FROM d.t"), [["1"]]);
    assert_eq!(err(&mut s, "SELECT * FROM d.u"), 1146);
    // The names are free again: the table can be created under them.
    ok(&mut s, "CREATE TABLE d.u (x INT)");
    ok(&mut s, "INSERT INTO d.u VALUES (7)");
    assert_eq!(rows(&mut s, "SELECT x FROM d.u"), [["7"]]);
}

#[test]
fn mysql_errors_for_bad_statements() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    assert_eq!(err(&mut s, "SELEC 1"), 1064);
    assert_eq!(err(&mut s, "SELECT * FROM t"), 1046);
    assert_eq!(err(&mut s, "USE nope"), 1049);
    ok(&mut s, "CREATE DATABASE d");
    assert_eq!(err(&mut s, "CREATE DATABASE d"), 1007);
    ok(&mut s, "USE d");
    assert_eq!(err(&mut s, "SELECT * FROM nope"), 1146);
    ok(&mut s, "CREATE TABLE t (a TINYINT NOT NULL, b VARCHAR(3))");
    assert_eq!(err(&mut s, "CREATE TABLE t (a INT)"), 1050);
    assert_eq!(err(&mut s, "SELECT c FROM t"), 1054);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1000, 'x')"), 1264);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1, 'toolong')"), 1406);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (NULL, 'x')"), 1048);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1)"), 1136);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES ('abc', 'x')"), 1366);
    assert_eq!(err(&mut s, "INSERT INTO t (b) VALUES ('x')"), 1364);
    assert_eq!(err(&mut s, "SELECT NOSUCHFN(1)"), 1305);
    assert_eq!(err(&mut s, "SELECT 9223372036854775807 + 1"), 1690);
    assert_eq!(err(&mut s, "CREATE TABLE p (a INT) PARTITION BY HASH(a) PARTITIONS 2"), 1235);
    assert_eq!(err(&mut s, "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET @x = 1"), 1235);
    assert_eq!(err(&mut s, "XA START 'x' JOIN"), 1398);
    assert_eq!(err(&mut s, "CREATE TABLE w (a DECIMAL(70, 2))"), 1426);
    let long = format!("CREATE TABLE {} (a INT)", "x".repeat(65));
    assert_eq!(err(&mut s, &long), 1059);
    // Invalid UTF-8 in a text column.
    assert_eq!(s.execute(b"INSERT INTO t VALUES (1, '\xff\xfe')").unwrap_err().code, 1366);
    // Non-strict mode: the same values are stored with warnings.
    ok(&mut s, "SET sql_mode = ''");
    ok(&mut s, "INSERT INTO t VALUES (1000, 'toolong')");
    assert!(s.warnings().len() >= 2, "{:?}", s.warnings());
    assert_eq!(rows(&mut s, "SELECT a, b FROM t"), [["127", "too"]]);
}

/// Random bytes, truncations and splices of valid statements: every one
/// gets an answer or a MySQL error, never a panic, and the session stays usable.
#[test]
fn random_and_mangled_sql_never_panics() {
    let seed: u64 = std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("random_and_mangled_sql_never_panics: FRACTALDB_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), d DATE, x DECIMAL(8,2), KEY (v))");
    let valid = [
        "INSERT INTO t VALUES (1, 'a', '2024-01-31', 1.5), (2, 'b', NULL, -3)",
        "SELECT id, CONCAT(v, '-', id), d + 1, x * 2 FROM t WHERE v LIKE 'a%' OR id IN (1, 2) ORDER BY id DESC LIMIT 5",
        "UPDATE t SET x = x + 1, v = UPPER(v) WHERE id BETWEEN 1 AND 3",
        "SELECT v, COUNT(*), SUM(x), MAX(d) FROM t GROUP BY v HAVING COUNT(*) > 0",
        "DELETE FROM t WHERE d IS NULL OR x < 0",
        "SELECT CASE WHEN id > 1 THEN 'big' ELSE 'small' END, IFNULL(d, 'none') FROM t",
        "SELECT DATE_FORMAT(d, '%Y %M'), ROUND(x, 1), HEX(v), -id DIV 2, id % 3 FROM t",
        "INSERT INTO t (id, v) SELECT id + 10, v FROM t ON DUPLICATE KEY UPDATE v = VALUES(v)",
    ];
    for _ in 0..3000 {
        let base = valid[rng.gen_range(0..valid.len())].as_bytes();
        let stmt: Vec<u8> = match rng.gen_range(0..4) {
            0 => (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect(),
            1 => base[..rng.gen_range(0..=base.len())].to_vec(),
            2 => {
                let mut v = base.to_vec();
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..v.len());
                    v[i] = b"'\"`()*,;+-/%\\ 0aZ\xff\x00"[rng.gen_range(0..19)];
                }
                v
            }
            _ => {
                let other = valid[rng.gen_range(0..valid.len())].as_bytes();
                let (i, j) = (rng.gen_range(0..=base.len()), rng.gen_range(0..=other.len()));
                [&base[..i], &other[j..]].concat()
            }
        };
        let _ = s.execute(&stmt);
    }
    // Still usable, and the table still consistent.
    let n: usize = one(&mut s, "SELECT COUNT(*) FROM t").parse().unwrap();
    assert_eq!(n, rows(&mut s, "SELECT id FROM t").len());
    let long = vec![b'('; 100_000];
    let mut stmt = b"SELECT ".to_vec();
    stmt.extend_from_slice(&long);
    assert!(s.execute(&stmt).is_err());
}

/// Rows of one INSERT go to the engine in batches: duplicates among them
/// are still found, by every unique index, and ON DUPLICATE KEY UPDATE and
/// REPLACE see the statement's earlier rows.
#[test]
fn duplicates_within_one_insert_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, u VARCHAR(5), v INT, UNIQUE KEY (u))");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (1, 'c', 0)"), 1062);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1, 'a', 0), (2, 'A', 0)"), 1062);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "0");
    ok(&mut s, "INSERT IGNORE INTO t VALUES (1, 'a', 0), (1, 'b', 0), (2, 'a', 0), (3, 'c', 0)");
    assert_eq!(rows(&mut s, "SELECT id, u FROM t ORDER BY id"), [["1", "a"], ["3", "c"]]);
    match s
        .execute(b"INSERT INTO t VALUES (5, 'e', 1), (5, 'e', 2) ON DUPLICATE KEY UPDATE v = v + VALUES(v)")
        .unwrap()
    {
        Outcome::Done { affected, .. } => assert_eq!(affected, 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(one(&mut s, "SELECT v FROM t WHERE id = 5"), "3");
    ok(&mut s, "REPLACE INTO t VALUES (6, 'f', 1), (6, 'g', 2)");
    assert_eq!(rows(&mut s, "SELECT u, v FROM t WHERE id = 6"), [["g", "2"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "4");
    assert_eq!(rows(&mut s, "SELECT id FROM t WHERE u = 'G'"), [["6"]]);
    assert!(rows(&mut s, "SELECT id FROM t WHERE u = 'f'").is_empty());
}

/// CREATE INDEX builds from the rows already there (and a unique one
/// refuses duplicates); DROP INDEX and RENAME TABLE change the catalog;
/// all of it survives a restart.
#[test]
fn indexes_added_and_dropped_and_tables_renamed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(10))");
        ok(&mut s, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 10, 'c')");
        ok(&mut s, "CREATE INDEX k_1 ON t (k)");
        assert_eq!(rows(&mut s, "SELECT id FROM t WHERE k = 10 ORDER BY id"), [["1"], ["3"]]);
        assert_eq!(err(&mut s, "CREATE UNIQUE INDEX uk ON t (k)"), 1062);
        assert_eq!(err(&mut s, "CREATE INDEX k_1 ON t (c)"), 1061);
        assert_eq!(err(&mut s, "CREATE INDEX x ON t (nope)"), 1072);
        ok(&mut s, "ALTER TABLE t ADD UNIQUE KEY uc (c)");
        assert_eq!(err(&mut s, "INSERT INTO t VALUES (4, 40, 'A')"), 1062);
        ok(&mut s, "INSERT INTO t VALUES (4, 10, 'd')");
        ok(&mut s, "DROP INDEX uc ON t");
        ok(&mut s, "INSERT INTO t VALUES (5, 50, 'a')");
        assert_eq!(err(&mut s, "ALTER TABLE t DROP INDEX nope"), 1091);
        ok(&mut s, "RENAME TABLE t TO t2");
        assert_eq!(err(&mut s, "SELECT * FROM t"), 1146);
        drop(s);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    assert_eq!(rows(&mut s, "SELECT id FROM t2 WHERE k = 10 ORDER BY id"), [["1"], ["3"], ["4"]]);
    assert_eq!(rows(&mut s, "SELECT id FROM t2 WHERE c = 'a' ORDER BY id"), [["1"], ["5"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t2"), "5");
    // The old name is free again.
    ok(&mut s, "CREATE TABLE t (x INT)");
}

/// Tables `j.a` and `j.b` (b.aid refers to a.id; 9 matches nothing).
fn two_tables(s: &mut Session) {
    ok(s, "CREATE DATABASE j");
    ok(s, "USE j");
    ok(s, "CREATE TABLE a (id INT PRIMARY KEY, x INT)");
    ok(s, "CREATE TABLE b (id INT PRIMARY KEY, aid INT, y VARCHAR(5))");
    ok(s, "INSERT INTO a VALUES (1,10),(2,20),(3,30)");
    ok(s, "INSERT INTO b VALUES (1,1,'p'),(2,1,'q'),(3,3,'r'),(4,9,'s')");
}

/// Inner and LEFT joins (expected rows as MariaDB 10.11 returns them).
#[test]
fn inner_and_left_joins() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    two_tables(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT a.id, b.y FROM a LEFT JOIN b ON b.aid = a.id ORDER BY a.id, b.y"),
        [["1", "p"], ["1", "q"], ["2", "NULL"], ["3", "r"]]
    );
    assert_eq!(rows(&mut s, "SELECT a.id FROM a LEFT JOIN b ON b.aid = a.id WHERE b.id IS NULL"), [["2"]]);
    assert_eq!(
        rows(&mut s, "SELECT a.id, COUNT(b.id) FROM a LEFT JOIN b ON b.aid = a.id AND b.y <> 'q' GROUP BY a.id ORDER BY a.id"),
        [["1", "1"], ["2", "0"], ["3", "1"]]
    );
    assert_eq!(rows(&mut s, "SELECT a.x, b.y FROM a JOIN b ON b.aid = a.id WHERE a.x > 10"), [["30", "r"]]);
    assert_eq!(
        rows(&mut s, "SELECT a.x, b.id FROM a RIGHT JOIN b ON b.aid = a.id ORDER BY b.id"),
        [["10", "1"], ["10", "2"], ["30", "3"], ["NULL", "4"]]
    );
}

/// ORDER BY the primary key (either way) with LIMIT reads in key order and
/// stops early; the answer is the sorted one.
#[test]
fn order_by_primary_key_with_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (a, b))");
    let values: Vec<String> = (0..200).map(|i| format!("({}, {}, {})", i % 10, i / 10, i)).collect();
    ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    assert_eq!(
        rows(&mut s, "SELECT a, b FROM t ORDER BY a DESC, b DESC LIMIT 2"),
        [["9", "19"], ["9", "18"]]
    );
    assert_eq!(rows(&mut s, "SELECT a, b FROM t ORDER BY a, b LIMIT 1, 2"), [["0", "1"], ["0", "2"]]);
    assert_eq!(rows(&mut s, "SELECT c FROM t WHERE a = 3 ORDER BY a DESC LIMIT 2"), [["193"], ["183"]]);
    assert_eq!(rows(&mut s, "SELECT c FROM t WHERE c > 195 ORDER BY a LIMIT 2"), [["196"], ["197"]]);
    // Mixed directions are sorted, not served by the key.
    assert_eq!(rows(&mut s, "SELECT a, b FROM t ORDER BY a, b DESC LIMIT 2"), [["0", "19"], ["0", "18"]]);
}

/// UNION [ALL] with ORDER BY and LIMIT (expected rows as MariaDB 10.11 returns them).
#[test]
fn unions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    two_tables(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT id, x FROM a UNION SELECT aid, id FROM b ORDER BY 1 DESC, 2 LIMIT 4"),
        [["9", "4"], ["3", "3"], ["3", "30"], ["2", "20"]]
    );
    assert_eq!(rows(&mut s, "SELECT 1 UNION ALL SELECT 1 UNION SELECT 2"), [["1"], ["2"]]);
    assert_eq!(
        rows(&mut s, "SELECT x AS v FROM a UNION ALL SELECT y FROM b ORDER BY v"),
        [["10"], ["20"], ["30"], ["p"], ["q"], ["r"], ["s"]]
    );
    assert_eq!(err(&mut s, "SELECT 1, 2 UNION SELECT 3"), 1222);
    // Derived tables.
    assert_eq!(
        rows(&mut s, "SELECT d.aid, d.n FROM (SELECT aid, COUNT(*) AS n FROM b GROUP BY aid) AS d WHERE d.n > 0 ORDER BY d.aid"),
        [["1", "2"], ["3", "1"], ["9", "1"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT a.x, d.m FROM a JOIN (SELECT aid, MAX(y) AS m FROM b GROUP BY aid) d ON d.aid = a.id ORDER BY a.x"),
        [["10", "q"], ["30", "r"]]
    );
    assert_eq!(err(&mut s, "SELECT * FROM (SELECT 1)"), 1248);
}

/// A view is a catalog record: it survives a restart, and reading it runs
/// its SELECT in the view's database whatever the session's current one.
#[test]
fn views_survive_restart_and_read_their_own_database() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
        ok(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20)");
        ok(&mut s, "CREATE VIEW big AS SELECT id FROM t WHERE v > 15");
        drop(s);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE other");
    ok(&mut s, "USE other");
    assert_eq!(rows(&mut s, "SELECT * FROM d.big"), [["2"]]);
    // A view sees the transaction's own writes.
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO d.t VALUES (3, 30)");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM d.big"), [["2"]]);
    ok(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM d.big"), [["1"]]);
}

/// EXPLAIN shows the access paths the executor takes: a point read, an
/// index range, an index nested loop into a unique key, a hash join, and
/// COUNT(*) from the exact row count.
#[test]
fn explain_shows_the_chosen_access_paths() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE e (id INT PRIMARY KEY, k INT, s VARCHAR(10), KEY (k))");
    ok(&mut s, "CREATE TABLE f (id INT PRIMARY KEY, eid INT NOT NULL, tag VARCHAR(5), UNIQUE KEY u (eid))");
    ok(&mut s, "INSERT INTO e VALUES (1,1,'a'),(2,2,'b')");
    ok(&mut s, "INSERT INTO f VALUES (1,2,'x'),(2,1,'y'),(3,3,'z')");
    let plan = |s: &mut Session, q: &str| -> Vec<String> {
        rows(s, &format!("EXPLAIN {q}")).into_iter().map(|r| r[2..].join(" ")).collect()
    };
    // `rows` is the engine's estimate of the range (exact here), as MariaDB's.
    assert_eq!(plan(&mut s, "SELECT * FROM e WHERE k = 2"), ["e ref k k 5 const 1 "]);
    assert_eq!(plan(&mut s, "SELECT * FROM e WHERE k > 1 AND s = 'b'"), ["e range k k 5 NULL 1 Using where"]);
    assert_eq!(
        plan(&mut s, "SELECT * FROM e JOIN f ON f.eid = e.id"),
        ["e ALL PRIMARY NULL NULL NULL 2 ", "f eq_ref u u 4 d.e.id 1 "]
    );
    assert_eq!(
        plan(&mut s, "SELECT * FROM e JOIN f ON f.tag = e.s"),
        [
            "e ALL NULL NULL NULL NULL 2 ",
            "f hash_ALL NULL NULL NULL NULL 3 Using where; Using join buffer (flat, BNLH join)"
        ]
    );
    assert_eq!(
        plan(&mut s, "SELECT COUNT(*) FROM e"),
        ["NULL NULL NULL NULL NULL NULL NULL Select tables optimized away"]
    );
    // ORDER BY ... LIMIT reads an index in order only while that costs less
    // than the scan and a sort: 2 rows through `k` (a lookup each) do, 30 of
    // 36 do not.
    ok(&mut s, "CREATE TABLE o (id INT PRIMARY KEY, k INT, s VARCHAR(10), KEY (k))");
    let values: Vec<String> = (1..=36).map(|i| format!("({i}, {}, 'x')", i % 10)).collect();
    ok(&mut s, &format!("INSERT INTO o VALUES {}", values.join(",")));
    assert_eq!(plan(&mut s, "SELECT * FROM o ORDER BY k LIMIT 2"), ["o index NULL k 5 NULL 2 "]);
    assert_eq!(plan(&mut s, "SELECT * FROM o ORDER BY k LIMIT 30"), ["o ALL NULL NULL NULL NULL 36 "]);
    assert_eq!(
        plan(&mut s, "SELECT * FROM o WHERE k > 2 ORDER BY id LIMIT 2"),
        ["o index k PRIMARY 4 NULL 3 Using where"]
    );
    // The plan was not run: nothing changed, and the query still answers.
    assert_eq!(rows(&mut s, "SELECT f.id FROM e JOIN f ON f.eid = e.id ORDER BY f.id"), [["1"], ["2"]]);
}

/// `col IN (c1, c2, ...)` reads one key range per value through an index
/// on col (or after an index's pinned equalities), in index order, and a
/// primary key IN list is point reads: rows as a scan finds them, and
/// UPDATE / DELETE take the same path.
#[test]
fn in_lists_read_one_range_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, h VARCHAR(8), v INT, KEY kh (h), KEY khv (h, v))");
    let values: Vec<String> = (0..2000).map(|i| format!("({i}, 'h{}', {})", i % 200, i % 7)).collect();
    ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    let plan = |s: &mut Session, q: &str| -> Vec<String> {
        rows(s, &format!("EXPLAIN {q}")).into_iter().map(|r| r[3..8].join(" ")).collect()
    };
    // khv holds every column (h carried after its weights, v, the primary
    // key): read alone, it costs less than kh and a lookup per row.
    assert_eq!(plan(&mut s, "SELECT * FROM t WHERE h IN ('h3', 'h1', 'h150')"), ["range kh,khv khv 35 NULL"]);
    assert_eq!(
        plan(&mut s, "SELECT id, h FROM t WHERE h IN ('h3', 'h1', 'h150')"),
        ["range kh,khv kh 35 NULL"]
    );
    assert_eq!(plan(&mut s, "SELECT * FROM t WHERE id IN (5, 70, 1999)"), ["range PRIMARY PRIMARY 4 NULL"]);
    let ids =
        |s: &mut Session, q: &str| -> Vec<String> { rows(s, q).into_iter().map(|r| r[0].clone()).collect() };
    let by_scan = |s: &mut Session, w: &str, order: &str| {
        ids(s, &format!("SELECT id FROM t IGNORE INDEX (PRIMARY, kh, khv) WHERE {w} ORDER BY {order}"))
    };
    for w in [
        "h IN ('h3', 'h1', 'h150', 'h3', NULL, 'zz')",
        "id IN (1999, 5, 70, 5, -1)",
        "h = 'h4' AND v IN (6, 4, 9)",
    ] {
        let expected = by_scan(&mut s, w, "id");
        assert!(!expected.is_empty(), "{w}");
        let mut got = ids(&mut s, &format!("SELECT id FROM t WHERE {w}"));
        got.sort_by_key(|x| x.parse::<i64>().unwrap());
        assert_eq!(got, expected, "{w}");
    }
    // In index order, both ways, with no sort needed.
    let asc = ids(&mut s, "SELECT id FROM t FORCE INDEX (khv) WHERE h = 'h4' AND v IN (6, 4) ORDER BY v, id");
    assert_eq!(asc, by_scan(&mut s, "h = 'h4' AND v IN (6, 4)", "v, id"));
    let desc = ids(&mut s, "SELECT id FROM t WHERE id IN (70, 5, 1999) ORDER BY id DESC");
    assert_eq!(desc, ["1999", "70", "5"]);
    assert_eq!(affected(&mut s, "UPDATE t SET v = v + 100 WHERE h IN ('h7', 'h9')"), 20);
    assert_eq!(affected(&mut s, "DELETE FROM t WHERE h IN ('h7', 'h8') AND v >= 100"), 10);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM t WHERE h IN ('h7', 'h8', 'h9')"), [["20"]]);
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
}

/// GROUP BY past its memory budget spills sorted runs of partial
/// aggregates and merges them: the same answer as in memory, and no run
/// file left behind.
#[test]
fn group_by_spills_past_its_budget_with_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT, v DECIMAL(10,2), name VARCHAR(20))");
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let id = chunk * 1000 + i;
                format!("({id}, {}, {}.25, 'n{}')", (id * 7919) % 5000, id % 100, id % 37)
            })
            .collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    }
    let q = "SELECT g, COUNT(*), SUM(v), MIN(name), MAX(v), COUNT(DISTINCT name), AVG(v) FROM t GROUP BY g HAVING COUNT(*) > 3 ORDER BY g";
    let in_memory = rows(&mut s, q);
    let rollup_q = "SELECT g % 10 AS m, COUNT(*), SUM(v) FROM t GROUP BY m WITH ROLLUP";
    let rollup_mem = rows(&mut s, rollup_q);
    ok(&mut s, "SET SESSION tmp_memory_table_size = 65536");
    assert_eq!(rows(&mut s, "SELECT @@tmp_memory_table_size"), [["65536"]]);
    let spilled = rows(&mut s, q);
    assert_eq!(spilled.len(), 5000);
    assert_eq!(spilled, in_memory);
    assert_eq!(rows(&mut s, rollup_q), rollup_mem);
    // The run folder exists only once something spilled.
    let left: Vec<_> =
        std::fs::read_dir(dir.path().join("sql-tmp")).expect("GROUP BY spilled").flatten().collect();
    assert!(left.is_empty(), "run files left: {left:?}");
}

/// A running statement's progress is readable from another thread, as
/// PROCESSLIST shows it ("Queried about N rows"), and idle afterwards.
#[test]
fn progress_of_a_running_statement_is_visible_from_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    for c in 0..10 {
        let values: Vec<String> = (0..1000).map(|i| format!("({}, {i})", c * 1000 + i)).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    }
    let h = s.progress_handle();
    assert_eq!(h.state(), None);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (h2, stop2) = (h.clone(), stop.clone());
    let watcher = std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(st) = h2.state() {
                seen.push(st);
            }
            std::thread::yield_now();
        }
        seen
    });
    // A slow query: a cross join counted row by row.
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM t a JOIN t b ON a.v + b.v = 5 WHERE a.id < 300"), [["60"]]);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let seen = watcher.join().unwrap();
    assert!(seen.iter().any(|s| s.starts_with("Queried about ")), "{seen:?}");
    assert_eq!(h.state(), None);
    let (examined, _) = h.counts();
    assert!(examined >= 10_000, "{examined}");
}

/// A prepared statement is parsed once and run with parameters: `?` in
/// text order, not inside strings or comments; a parameter is a value,
/// never SQL text; too few parameters is 1210.
#[test]
fn prepared_statements_take_parameters_as_values() {
    use fractaldb_sql::Value;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), k INT, KEY (k))");
    let ins = s.prepare(b"INSERT INTO t VALUES (?, ?, ? + 1) /* ? */").unwrap();
    assert_eq!(ins.param_count(), 3);
    for (id, name, k) in [(1, "a'b", 10), (2, "?", 20), (3, "x); DROP TABLE t; --", 30)] {
        s.execute_prepared(&ins, &[Value::Int(id), Value::str(name), Value::Int(k)]).unwrap();
    }
    s.execute_prepared(&ins, &[Value::Int(4), Value::Null, Value::Null]).unwrap();
    let sel = s.prepare(b"SELECT name, k FROM t WHERE id = ? OR name = '?' ORDER BY id LIMIT ?").unwrap();
    assert_eq!(sel.param_count(), 2);
    let get = |s: &mut Session, params: &[Value]| -> Vec<Vec<String>> {
        match s.execute_prepared(&sel, params).unwrap() {
            fractaldb_sql::Outcome::Rows(rs) => {
                rs.rows.iter().map(|r| r.iter().map(|v| v.render()).collect()).collect()
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(get(&mut s, &[Value::Int(1), Value::Int(5)]), [["a'b", "11"], ["?", "21"]]);
    assert_eq!(get(&mut s, &[Value::Int(3), Value::Int(1)]), [["?", "21"]]);
    assert_eq!(get(&mut s, &[Value::str("4"), Value::Int(9)]), [["?", "21"], ["NULL", "NULL"]]);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM t"), [["4"]]);
    let e = s.execute_prepared(&sel, &[Value::Int(1)]).unwrap_err();
    assert_eq!(e.code, 1210);
    // A parameter narrows the access path like a literal.
    let by_k = s.prepare(b"SELECT id FROM t WHERE k = ?").unwrap();
    match s.execute_prepared(&by_k, &[Value::Int(31)]).unwrap() {
        fractaldb_sql::Outcome::Rows(rs) => assert_eq!(rs.rows.len(), 1),
        other => panic!("{other:?}"),
    }
}

/// INSERT of literal rows takes the fast path (no sqlparser AST); the same
/// statement with a comment takes the general one. Both must store the
/// same rows and give the same counts, warnings and errors.
#[test]
fn the_insert_fast_path_matches_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    let cases = [
        "INSERT INTO {t} VALUES (1, -5, 1.50, 'a''b\\\\c', X'00ff', NULL, 1e3, '2024-01-31')",
        "INSERT INTO {t} VALUES (2, +7, .5, \"dq\", 'é', DEFAULT, -2.5E-3, 20240131), (3, 18446744073709551615, -0.0, '\\%', '', TRUE, FALSE, NULL)",
        "INSERT INTO {t} (id, i) VALUES (4, -9223372036854775808)",
        "INSERT INTO {t} (i, id) VALUE (9, 5)",
        "INSERT IGNORE INTO {t} VALUES (5, 1, 1, 'dup', '', 1, 1, NULL), (6, 'x7', 99999999.999, 'toolongvalue', '', 1, 1, 'nope')",
        "INSERT INTO {t} VALUES (7, 'x7', 1, 'a', '', 1, 1, NULL)",
        "INSERT INTO {t} VALUES (8, 1, 1)",
        "INSERT INTO {t} (id, nope) VALUES (9, 1)",
        "INSERT INTO {t} (id, id) VALUES (9, 1)",
        "INSERT INTO {t} VALUES (1, 1, 1, 'a', '', 1, 1, NULL)",
        "INSERT INTO {t} () VALUES ()",
        "INSERT INTO {t} VALUES ()",
        "INSERT INTO d.{t} (id) VALUES (10), (11), (12)",
    ];
    let mut outcomes = Vec::new();
    for (t, suffix) in [("fast", ""), ("slow", " /* general path */")] {
        ok(
            &mut s,
            &format!(
                "CREATE TABLE {t} (id INT PRIMARY KEY, i BIGINT UNSIGNED, d DECIMAL(6,2), s VARCHAR(5), b VARBINARY(4), \
                 n INT DEFAULT 42, f DOUBLE, dt DATE)"
            ),
        );
        let mut got = Vec::new();
        for c in cases {
            let sql = c.replace("{t}", t) + suffix;
            let r = match s.execute(sql.as_bytes()) {
                Ok(fractaldb_sql::Outcome::Done { affected, info, .. }) => format!("ok {affected} {info:?}"),
                Ok(other) => format!("{other:?}"),
                Err(e) => format!("error {} {}", e.code, e.message.replace(t, "T")),
            };
            let warnings: Vec<String> =
                s.warnings().iter().map(|w| format!("{} {}", w.code, w.message.replace(t, "T"))).collect();
            got.push((c, r, warnings));
        }
        got.push((
            "rows",
            format!("{:?}", rows(&mut s, &format!("SELECT * FROM {t} ORDER BY id"))),
            Vec::new(),
        ));
        outcomes.push(got);
    }
    for (f, g) in outcomes[0].iter().zip(&outcomes[1]) {
        assert_eq!(f, g, "fast path differs");
    }
    // The fast path really was taken for the plain statements.
    assert!(matches!(
        fractaldb_sql::lex::parse(b"INSERT INTO t VALUES (1, 'a'), (2, NULL)").unwrap(),
        fractaldb_sql::lex::Parsed::Special(fractaldb_sql::lex::Special::FastInsert(_))
    ));
    assert!(matches!(
        fractaldb_sql::lex::parse(b"INSERT INTO t VALUES (1, 'a') /* x */").unwrap(),
        fractaldb_sql::lex::Parsed::Std(..)
    ));
    assert!(matches!(
        fractaldb_sql::lex::parse(b"INSERT INTO t VALUES (1 + 1)").unwrap(),
        fractaldb_sql::lex::Parsed::Std(..)
    ));
}

/// After a restart, AUTO_INCREMENT continues past the largest value, read
/// from the far end of the index the column leads (ASC or DESC), not from
/// a scan.
#[test]
fn auto_increment_continues_after_restart_from_the_index_end() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)");
        ok(&mut s, "CREATE TABLE b (id BIGINT AUTO_INCREMENT, v INT, PRIMARY KEY (id DESC))");
        ok(&mut s, "CREATE TABLE c (k INT PRIMARY KEY, id INT AUTO_INCREMENT, KEY (id))");
        for t in ["a", "b"] {
            ok(&mut s, &format!("INSERT INTO {t} (v) VALUES (1), (2), (3)"));
            ok(&mut s, &format!("INSERT INTO {t} VALUES (1000, 4)"));
            ok(&mut s, &format!("INSERT INTO {t} VALUES (7, 5)"));
        }
        ok(&mut s, "INSERT INTO c (k) VALUES (1), (2)");
        ok(&mut s, "INSERT INTO c VALUES (3, 500), (4, 9)");
        drop(s);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    for t in ["a", "b"] {
        ok(&mut s, &format!("INSERT INTO {t} (v) VALUES (6)"));
        assert_eq!(rows(&mut s, &format!("SELECT MAX(id) FROM {t}")), [["1001"]], "{t}");
    }
    ok(&mut s, "INSERT INTO c (k) VALUES (5)");
    assert_eq!(rows(&mut s, "SELECT id FROM c WHERE k = 5"), [["501"]]);
}

/// Sorts past `sort_buffer_size` (and GROUP BY past `tmp_memory_table_size`)
/// spill runs to `sql-tmp/` and merge them in passes: the results are
/// exactly the in-memory ones (ties included: the sort is stable), no file
/// is left, and an unwritable spill folder is a clear error.
#[test]
fn sorts_past_their_budget_spill_and_give_the_in_memory_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, g VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, \
         c VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, l VARCHAR(10) CHARACTER SET latin1, \
         n INT, x DOUBLE, m DECIMAL(10,3), dt DATE)",
    );
    let mut rng = SmallRng::seed_from_u64(19);
    for batch in 0..6 {
        let mut vals = Vec::new();
        for i in batch * 500..(batch + 1) * 500 {
            let word = |rng: &mut SmallRng| {
                let w = ["a", "A", "b", "B ", "é", "E", "ab", "a "][rng.gen_range(0..8)];
                if rng.gen_range(0..10) == 0 {
                    "NULL".to_string()
                } else {
                    format!("'{w}{}'", rng.gen_range(0..3))
                }
            };
            let (g, c, l) = (word(&mut rng), word(&mut rng), word(&mut rng));
            let n = if rng.gen_range(0..8) == 0 {
                "NULL".to_string()
            } else {
                rng.gen_range(-20..20).to_string()
            };
            let x = rng.gen_range(-40..40) as f64 / 8.0;
            let m = if rng.gen_range(0..6) == 0 {
                "NULL".into()
            } else {
                format!("{}.{}", rng.gen_range(-9..9), rng.gen_range(0..3))
            };
            let dt = if rng.gen_range(0..9) == 0 {
                "NULL".into()
            } else {
                format!("'2024-0{}-1{}'", rng.gen_range(1..4), rng.gen_range(0..3))
            };
            vals.push(format!("({i}, {g}, {c}, {l}, {n}, {x}, {m}, {dt})"));
        }
        ok(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(",")));
    }
    let queries = [
        "SELECT id, g, n FROM t ORDER BY g DESC, n",
        "SELECT id, c, l FROM t ORDER BY c, l DESC, x",
        "SELECT id, m, dt FROM t WHERE id % 3 <> 1 ORDER BY m DESC, dt",
        "SELECT id FROM t ORDER BY n + x, g",
        "SELECT id, g FROM t ORDER BY g LIMIT 1000, 50",
        "SELECT DISTINCT g, n FROM t ORDER BY n DESC",
        "SELECT DISTINCT l FROM t",
        "SELECT id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY m, dt DESC) FROM t",
        "SELECT g FROM t UNION SELECT c FROM t ORDER BY 1 DESC",
        "SELECT id % 997 AS k, COUNT(*), SUM(x), MAX(g), MIN(m), m FROM t GROUP BY k",
    ];
    let passes = |s: &mut Session| -> u64 {
        rows(s, "SHOW SESSION STATUS LIKE 'Sort_merge_passes'")[0][1].parse().unwrap()
    };
    let in_memory: Vec<_> = queries.iter().map(|q| rows(&mut s, q)).collect();
    assert_eq!(passes(&mut s), 0, "2 MiB holds these sorts");
    ok(&mut s, "SET sort_buffer_size = 1024, tmp_memory_table_size = 1024");
    for (q, want) in queries.iter().zip(&in_memory) {
        let before = passes(&mut s);
        let got = rows(&mut s, q);
        if got != *want {
            let i = got.iter().zip(want.iter()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{q}: the spilled result differs at row {i}: {:?} vs {:?}",
                &got[i.saturating_sub(2)..(i + 3).min(got.len())],
                &want[i.saturating_sub(2)..(i + 3).min(want.len())]
            );
        }
        // More than one merge: runs were merged in passes.
        assert!(passes(&mut s) > before + 1, "{q} did not merge in passes");
    }
    let tmp = dir.path().join("sql-tmp");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "run files left behind");
    // The spill folder cannot be made: 1004, and the session goes on.
    std::fs::remove_dir(&tmp).unwrap();
    std::fs::write(&tmp, b"").unwrap();
    assert_eq!(err(&mut s, queries[0]), 1004);
    ok(&mut s, "SET sort_buffer_size = DEFAULT");
    assert!(rows(&mut s, queries[0]) == in_memory[0]);
}

/// TIMESTAMPs under a named zone with DST, as MariaDB 10.11 with its time
/// zone tables loaded gives them (checked by hand: the golden scripts'
/// MariaDB has no named zones): a time in the spring-forward gap is 1292
/// in strict mode, else the instant after the gap with warning 1299; a
/// fall-back hour is its first instant; the stored instant reads back in
/// any zone and is found through the index from any zone.
#[test]
fn timestamps_in_a_zone_with_daylight_saving_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "SET time_zone = 'europe/berlin'");
    assert_eq!(one(&mut s, "SELECT @@time_zone"), "Europe/Berlin");
    ok(&mut s, "CREATE TABLE g (id INT PRIMARY KEY, t TIMESTAMP NULL, KEY (t))");
    assert_eq!(err(&mut s, "INSERT INTO g VALUES (1, '2024-03-31 02:30:00')"), 1292);
    ok(&mut s, "SET sql_mode = ''");
    ok(
        &mut s,
        "INSERT INTO g VALUES (1, '2024-03-31 02:30:00'), (2, '2024-10-27 02:30:00'), (3, '2024-03-31 01:59:59')",
    );
    assert_eq!(
        rows(&mut s, "SHOW WARNINGS"),
        [["Warning", "1299", "Invalid TIMESTAMP value in column 't' at row 1"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT id, t, UNIX_TIMESTAMP(t) FROM g ORDER BY id"),
        [
            ["1", "2024-03-31 03:00:00", "1711846800"],
            ["2", "2024-10-27 02:30:00", "1729989000"],
            ["3", "2024-03-31 01:59:59", "1711846799"]
        ]
    );
    ok(&mut s, "SET time_zone = '+00:00'");
    assert_eq!(
        rows(&mut s, "SELECT t FROM g ORDER BY id"),
        [["2024-03-31 01:00:00"], ["2024-10-27 00:30:00"], ["2024-03-31 00:59:59"]]
    );
    ok(&mut s, "SET time_zone = 'America/New_York'");
    assert_eq!(rows(&mut s, "SELECT id FROM g WHERE t = '2024-03-30 21:00:00'"), [["1"]]);
    assert_eq!(rows(&mut s, "SELECT id FROM g WHERE t < '2024-03-30 21:00:00'"), [["3"]]);
    assert_eq!(
        one(&mut s, "SELECT CONVERT_TZ('2024-03-31 02:30:00', 'Europe/Berlin', 'UTC')"),
        "2024-03-31 01:00:00"
    );
    assert_eq!(err(&mut s, "SET time_zone = 'Europe/Nowhere'"), 1298);
    // SET timestamp fixes NOW() (in the session's zone), not SYSDATE().
    ok(&mut s, "SET time_zone = '+01:00'");
    ok(&mut s, "SET timestamp = 1700000000");
    assert_eq!(
        rows(&mut s, "SELECT NOW(), UNIX_TIMESTAMP(), @@timestamp, SYSDATE() > NOW()"),
        [["2023-11-14 23:13:20", "1700000000", "1700000000.000000", "1"]]
    );
    ok(&mut s, "SET timestamp = DEFAULT");
    assert_eq!(one(&mut s, "SELECT @@timestamp > 1700000000"), "1");
}

/// A lone key range of the primary key needs no estimate: nothing can
/// cost less than it (its rows are some of the scan's, one key each), so
/// the planner reads it without asking the engine for the two estimates
/// (the range's and the table's) it would compare; those are descents of
/// the tree, each waiting on the root's lock under many writers.
/// `range_estimates` counts the estimates on this thread. A second
/// candidate (a secondary index the WHERE narrows too) is still weighed
/// by estimates, and EXPLAIN still shows the range's estimated rows.
#[test]
fn a_lone_primary_key_range_is_read_without_estimates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE r (id INT PRIMARY KEY, k INT, c CHAR(10), KEY kk (k))");
    let values: Vec<String> = (1..=500).map(|i| format!("({i}, {}, 'c{i}')", i % 50)).collect();
    ok(&mut s, &format!("INSERT INTO r VALUES {}", values.join(",")));
    let estimates = |s: &mut Session, q: &str| -> (Vec<Vec<String>>, u64) {
        let before = fractaldb_sql::range_estimates();
        let r = rows(s, q);
        (r, fractaldb_sql::range_estimates() - before)
    };
    let (r, n) = estimates(&mut s, "SELECT id, c FROM r WHERE id BETWEEN 100 AND 109 ORDER BY c");
    assert_eq!(n, 0);
    assert_eq!(r.len(), 10);
    assert_eq!(r[0], vec!["100".to_string(), "c100".to_string()]);
    let (r, n) = estimates(&mut s, "SELECT SUM(k) FROM r WHERE id > 490");
    assert_eq!((r[0][0].as_str(), n), ("405", 0));
    // The same range with a second candidate: both weighed.
    let (r, n) = estimates(&mut s, "SELECT id FROM r WHERE id BETWEEN 100 AND 300 AND k = 7 ORDER BY id");
    assert!(n >= 2, "{n}");
    assert_eq!(r.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["107", "157", "207", "257"]);
    // Written through the same path: an UPDATE over a primary-key range.
    let before = fractaldb_sql::range_estimates();
    assert_eq!(affected(&mut s, "UPDATE r SET c = 'u' WHERE id >= 495"), 6);
    assert_eq!(fractaldb_sql::range_estimates() - before, 0);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM r WHERE c = 'u'"), "6");
    // EXPLAIN asks for the estimate itself.
    let (plan, n) = estimates(&mut s, "EXPLAIN SELECT c FROM r WHERE id BETWEEN 100 AND 109");
    assert!(n >= 1, "{n}");
    assert_eq!((plan[0][3].as_str(), plan[0][5].as_str()), ("range", "PRIMARY"), "{plan:?}");
    let est: u64 = plan[0][8].parse().unwrap();
    assert!((1..=500).contains(&est), "{plan:?}");
}

/// An index whose entries hold every column a statement reads is read
/// alone: no primary-key lookup per row (`pk_lookups` counts them on this
/// thread), and the values decoded from the entries are the stored ones.
/// A case-insensitive string's key holds weights, but a plain index
/// carries the value after them (`IndexDef::carry`), so it covers too; a
/// prefix part, or a unique index's string, sends the read to the rows.
#[test]
fn covering_index_reads_make_no_primary_key_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(
        &mut s,
        "CREATE TABLE w (id INT PRIMARY KEY, n INT, s VARCHAR(10), b VARBINARY(10), \
         st SET('p','q','r'), KEY kn (n DESC, st), KEY ks (s), KEY kb (b(2)))",
    );
    let values: Vec<String> = (1..=30)
        .map(|i| {
            format!(
                "({i}, {}, 'Ab{i} ', '{i}x', '{}')",
                if i == 3 { 7 } else { i % 3 },
                ["p", "q,r", ""][i % 3]
            )
        })
        .collect();
    ok(&mut s, &format!("INSERT INTO w VALUES {}", values.join(",")));
    let lookups = |s: &mut Session, q: &str| -> (Vec<Vec<String>>, u64) {
        let before = fractaldb_sql::pk_lookups();
        let r = rows(s, q);
        (r, fractaldb_sql::pk_lookups() - before)
    };
    let (r, n) = lookups(&mut s, "SELECT id, n, st FROM w WHERE n = 2 ORDER BY id");
    assert_eq!(n, 0);
    assert_eq!(r.len(), 10);
    assert_eq!(r[0], ["2", "2", ""]);
    let (r, n) = lookups(&mut s, "SELECT id, st FROM w WHERE n = 1 ORDER BY id LIMIT 2");
    assert_eq!((r, n), (vec![vec!["1".to_string(), "q,r".to_string()], vec!["4".into(), "q,r".into()]], 0));
    let plan = rows(&mut s, "EXPLAIN SELECT id, st FROM w WHERE n = 1");
    assert_eq!(plan[0][9], "Using index");
    // Reading a column the index lacks goes to the rows.
    let (r, n) = lookups(&mut s, "SELECT id, b FROM w WHERE n = 7");
    assert_eq!((r, n), (vec![vec!["3".to_string(), "3x".to_string()]], 1));
    // A case-insensitive key holds weights; the entry carries the value,
    // its case and trailing space included.
    let (r, n) = lookups(&mut s, "SELECT s FROM w WHERE s = 'AB5'");
    assert_eq!((r, n), (vec![vec!["Ab5 ".to_string()]], 0));
    assert_eq!(rows(&mut s, "EXPLAIN SELECT id, s FROM w WHERE s = 'ab5'")[0][9], "Using index");
    // A change of case alone keeps the key's weights but not the value.
    ok(&mut s, "UPDATE w SET s = 'aB5' WHERE id = 5");
    let (r, n) = lookups(&mut s, "SELECT id, s FROM w WHERE s = 'AB5'");
    assert_eq!((r, n), (vec![vec!["5".to_string(), "aB5".to_string()]], 0));
    ok(&mut s, "UPDATE w SET s = 'Ab5 ' WHERE id = 5");
    // A unique index's key has no room for the value (it ends with the
    // parts): its reads go to the rows.
    ok(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, s VARCHAR(10), UNIQUE KEY us (s))");
    ok(&mut s, "INSERT INTO u VALUES (1, 'Xy'), (2, 'xZ')");
    let (r, n) = lookups(&mut s, "SELECT s FROM u WHERE s = 'XZ'");
    assert_eq!((r, n), (vec![vec!["xZ".to_string()]], 1));
    // A prefix part does not hold the value.
    let (r, n) = lookups(&mut s, "SELECT b FROM w WHERE b = '7x'");
    assert_eq!((r, n), (vec![vec!["7x".to_string()]], 1));
    // A join's per-row probe reads a covering index alone too.
    let (r, n) = lookups(&mut s, "SELECT v.id, v.st FROM w JOIN w AS v ON v.n = w.n WHERE w.id = 3");
    assert_eq!((r, n), (vec![vec!["3".to_string(), "p".to_string()]], 0));
    let (r, n) = lookups(&mut s, "SELECT v.id, v.b FROM w JOIN w AS v ON v.n = w.n WHERE w.id = 3");
    assert_eq!((r, n), (vec![vec!["3".to_string(), "3x".to_string()]], 1));
    // UPDATE and DELETE pick their rows through the covering index.
    let before = fractaldb_sql::pk_lookups();
    ok(&mut s, "UPDATE w SET s = 'z' WHERE n = 2");
    ok(&mut s, "DELETE FROM w WHERE n = 1");
    assert_eq!(fractaldb_sql::pk_lookups() - before, 0);
    assert_eq!(rows(&mut s, "SELECT COUNT(*), SUM(s = 'z') FROM w"), [["20", "10"]]);
    // Values decoded from keys are the stored ones, for every decodable
    // type and a DESC part: the same as read from the rows (`k + 0`
    // narrows no index).
    ok(
        &mut s,
        "CREATE TABLE z (id INT PRIMARY KEY, k INT, t TIME, dt DATETIME(6), dn DECIMAL(8,3),          i BIGINT, y YEAR, bt BIT(5), en ENUM('a','b'), KEY kz (k, t DESC, dt, dn, i, y, bt, en))",
    );
    ok(
        &mut s,
        "INSERT INTO z VALUES (1, 1, '-838:59:59', '2024-02-29 23:59:59.000001', -12345.678,          -9223372036854775808, 1901, b'10101', 'b'), (2, 1, '100:00:00.5', '1000-01-01', 0.001, 42, 0, 0, 'a'),          (3, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (4, 2, '00:00:01', '2000-01-01', 1, 1, 2155, 31, 'a')",
    );
    let cols = "SELECT id, t, dt, dn, i, y, bt + 0, en FROM z WHERE";
    let (from_keys, n) = lookups(&mut s, &format!("{cols} k = 1 ORDER BY id"));
    assert_eq!(n, 0);
    assert_eq!(from_keys, rows(&mut s, &format!("{cols} k + 0 = 1 ORDER BY id")));
    assert_eq!(
        from_keys[0][1..],
        ["-838:59:59", "2024-02-29 23:59:59.000001", "-12345.678", "-9223372036854775808", "1901", "21", "b"]
    );
}

/// The planner picks a clustering index for a range on its column by
/// itself, over the primary key's scan and over a plain index on the same
/// column, and reads whole rows from it with no primary-key lookup: what
/// TokuDB users declared them for.
#[test]
fn the_planner_reads_ranges_from_clustering_indexes_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(
        &mut s,
        "CREATE TABLE c (id INT PRIMARY KEY, a INT, b INT, pad VARCHAR(100), \
         CLUSTERING KEY ka (a), KEY kb (b), CLUSTERING KEY kbc (b))",
    );
    for chunk in (0..4000).collect::<Vec<i32>>().chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| format!("({i}, {}, {}, '{}')", (i * 37) % 4000, i % 400, "p".repeat(60)))
            .collect();
        ok(&mut s, &format!("INSERT INTO c VALUES {}", values.join(",")));
    }
    for (q, key, want) in [
        ("SELECT * FROM c WHERE a BETWEEN 100 AND 139 ORDER BY id", "ka", 40),
        ("SELECT id, a, pad FROM c WHERE b = 7 ORDER BY id", "kbc", 10),
        ("SELECT SUM(a), MAX(pad) FROM c WHERE b IN (1, 2, 3)", "kbc", 1),
    ] {
        let plan = rows(&mut s, &format!("EXPLAIN {q}"));
        assert_eq!(plan[0][5], key, "{q}: {plan:?}");
        assert!(!plan[0][9].contains("Using index condition"), "{q}: {plan:?}");
        let before = fractaldb_sql::pk_lookups();
        let got = rows(&mut s, q);
        assert_eq!(fractaldb_sql::pk_lookups() - before, 0, "{q}");
        assert_eq!(got.len(), want, "{q}");
        let by_scan = rows(&mut s, &q.replace("FROM c", "FROM c IGNORE INDEX (ka, kb, kbc)"));
        assert_eq!(got, by_scan, "{q}");
    }
    // Whole rows come out of the clustering entries as stored.
    assert_eq!(rows(&mut s, "SELECT id, a, b, LENGTH(pad) FROM c WHERE a = 37"), [["1", "37", "1", "60"]]);
}

/// Writes through a view need the privilege on the view, not on its base
/// table (MariaDB: UPDATE/INSERT on `v` suffice, DELETE without it is
/// 1142 naming the view); SHOW CREATE VIEW keeps the CHECK OPTION.
#[test]
fn view_writes_use_the_views_privileges_and_keep_check_option() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, a INT)");
    ok(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20)");
    ok(&mut s, "CREATE VIEW v AS SELECT id, a FROM t WHERE a < 50 WITH LOCAL CHECK OPTION");
    let create = rows(&mut s, "SHOW CREATE VIEW v")[0][1].clone();
    assert!(create.ends_with(" WITH LOCAL CHECK OPTION"), "{create}");
    ok(&mut s, "CREATE USER u@localhost");
    ok(&mut s, "GRANT UPDATE, INSERT ON d.v TO u@localhost");
    let mut u = db.session();
    u.login("u", "localhost", "u", "localhost");
    ok(&mut u, "USE d");
    ok(&mut u, "UPDATE v SET a = 11 WHERE id = 1");
    ok(&mut u, "INSERT INTO v VALUES (3, 30)");
    assert_eq!(err(&mut u, "INSERT INTO v VALUES (4, 60)"), 1369);
    assert_eq!(err(&mut u, "DELETE FROM v WHERE id = 3"), 1142);
    assert_eq!(err(&mut u, "UPDATE t SET a = 0"), 1142);
    assert_eq!(rows(&mut s, "SELECT * FROM t ORDER BY id"), [["1", "11"], ["2", "20"], ["3", "30"]]);
}

/// Under NO_BACKSLASH_ESCAPES a string may end in `\` (a dumped Windows
/// path): scripts split, statements parse and prepared statements read it
/// so, while another session on the same thread keeps the escapes.
#[test]
fn no_backslash_escapes_reaches_scripts_prepared_statements_and_only_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    let mut other = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (p VARCHAR(20))");
    ok(&mut s, "SET sql_mode = 'NO_BACKSLASH_ESCAPES'");
    let out =
        s.execute_script(b"INSERT INTO t VALUES ('C:\\dir\\'); INSERT INTO t VALUES ('x\\''y')").unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(one(&mut other, "SELECT LENGTH('a\\'b')"), "3");
    let p = s.prepare(b"SELECT COUNT(*) FROM d.t WHERE p = 'C:\\dir\\' OR p = ?").unwrap();
    match s.execute_prepared(&p, &[fractaldb_sql::Value::str("x\\'y")]).unwrap() {
        Outcome::Rows(rs) => assert_eq!(rs.rows[0][0].render(), "2"),
        o => panic!("{o:?}"),
    }
    assert_eq!(rows(&mut s, "SELECT p FROM t ORDER BY p"), [["C:\\dir\\"], ["x\\'y"]]);
    ok(&mut s, "SET sql_mode = DEFAULT");
    assert_eq!(one(&mut s, "SELECT 'x\\'y'"), "x'y");
}

#[test]
fn set_tokudb_backup_dir_takes_a_hot_backup_that_opens_with_the_same_rows_and_users() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))");
    ok(&mut s, "INSERT INTO d.t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    ok(&mut s, "CREATE USER u@localhost IDENTIFIED BY 'pw'");
    // A file the server keeps in the data folder travels with the copy.
    std::fs::write(dir.path().join("server-key.pem"), b"key").unwrap();
    // An open transaction's rows are not in the copy.
    let mut other = db.session();
    ok(&mut other, "BEGIN");
    ok(&mut other, "INSERT INTO d.t VALUES (4, 'open')");

    let dest = out.path().join("b1");
    std::fs::create_dir(&dest).unwrap();
    let set = |p: &std::path::Path| format!("SET tokudb_backup_dir = '{}'", p.display());
    ok(&mut s, &set(&dest));
    assert_eq!(one(&mut s, "SELECT @@tokudb_backup_last_error"), "0");
    assert_eq!(one(&mut s, "SELECT @@tokudb_backup_dir"), dest.display().to_string());
    // Failures: the statement fails with 1231, the variables say why (errno).
    for (folder, errno) in
        [(dest.clone(), "39"), (out.path().join("missing"), "2"), (dir.path().join("sql-tmp"), "22")]
    {
        std::fs::create_dir_all(dir.path().join("sql-tmp")).unwrap();
        assert_eq!(err(&mut s, &set(&folder)), 1231, "{}", folder.display());
        assert_eq!(one(&mut s, "SELECT @@tokudb_backup_last_error"), errno, "{}", folder.display());
        assert_ne!(one(&mut s, "SELECT @@tokudb_backup_last_error_string"), "");
    }
    assert_eq!(err(&mut s, "SET GLOBAL tokudb_backup_dir = '/tmp'"), 1228);
    // SUPER is needed.
    let mut plain = db.session();
    plain.login("u", "localhost", "u", "localhost");
    assert_eq!(err(&mut plain, &set(&out.path().join("b2"))), 1227);
    ok(&mut other, "ROLLBACK");
    drop((s, other, plain));
    db.close().unwrap();

    assert_eq!(std::fs::read(dest.join("server-key.pem")).unwrap(), b"key");
    let copy = Database::open(&dest, opts()).unwrap();
    let mut s = copy.session();
    assert_eq!(rows(&mut s, "SELECT id, v FROM d.t ORDER BY id"), [["1", "a"], ["2", "b"], ["3", "c"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM d.t"), "3");
    assert!(one(&mut s, "SHOW GRANTS FOR u@localhost").contains("`u`@`localhost`"));
    assert_eq!(err(&mut s, "SHOW GRANTS FOR nobody@localhost"), 1141);
}

/// GROUP BY a case-insensitive string with an index on it reads the index
/// alone (its entries carry the values) in the order that hands out the
/// groups one after another; the groups, their first rows' values and the
/// aggregates are those of a read of the rows grouped by a hash table
/// (`GROUP BY CONCAT(h)` is no plain column), with and without spilling.
#[test]
fn group_by_an_indexed_string_reads_the_index_in_group_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE g (id INT PRIMARY KEY, h VARCHAR(32), amount INT, KEY h (h))");
    let values: Vec<String> = (1..=3000)
        .map(|i| {
            let h = match i % 7 {
                0 => "NULL".to_string(),
                1 => format!("'AbC{}'", i % 50),
                2 => format!("'abc{} '", i % 50),
                _ => format!("'x{}'", (i * 7919) % 400),
            };
            format!("({i}, {h}, {})", i % 13)
        })
        .collect();
    ok(&mut s, &format!("INSERT INTO g VALUES {}", values.join(",")));
    let q = "SELECT COUNT(*), h, MAX(id), MIN(id) FROM g GROUP BY h HAVING COUNT(*) > 1";
    let plan = rows(&mut s, &format!("EXPLAIN {q}"));
    assert_eq!(
        (&plan[0][3][..], &plan[0][5][..], &plan[0][9][..]),
        ("index", "h", "Using index"),
        "{plan:?}"
    );
    let before = fractaldb_sql::pk_lookups();
    let by_index = rows(&mut s, q);
    assert_eq!(fractaldb_sql::pk_lookups() - before, 0);
    let by_hash = rows(&mut s, &q.replace("GROUP BY h", "GROUP BY CONCAT(h)"));
    assert_eq!(by_index, by_hash);
    // 'AbC1' and 'abc1 ' are one group under the collation, shown by its
    // first row (id 1).
    assert!(by_index.contains(&vec!["18".into(), "AbC1".into(), "2851".into(), "1".into()]), "{by_index:?}");
    assert_eq!(by_index.len(), 451);
    // Counting rows only, the index is read as runs of equal keys: one
    // row built per group, the others counted (`plan::for_each_key_run`);
    // the answer is the hash grouping's, case and trailing spaces folded
    // by the collation as there, NULLs one group.
    let counts = "SELECT COUNT(*), h FROM g GROUP BY h HAVING COUNT(*) > 1";
    let skipped = fractaldb_sql::run_rows_skipped();
    let by_runs = rows(&mut s, counts);
    assert_eq!(fractaldb_sql::run_rows_skipped() - skipped, 3000 - 451);
    assert_eq!(by_runs, rows(&mut s, &counts.replace("GROUP BY h", "GROUP BY CONCAT(h)")));
    assert_eq!(by_runs, by_index.iter().map(|r| r[..2].to_vec()).collect::<Vec<_>>());
    // HAVING that reads only the count is checked before a run's row is
    // built: a rejected group's entries are all skipped. HAVING that reads
    // a column needs every group's row. Window functions see the same
    // groups.
    let few = "SELECT COUNT(*), h FROM g GROUP BY h HAVING COUNT(*) > 8";
    let skipped = fractaldb_sql::run_rows_skipped();
    let by_runs_few = rows(&mut s, few);
    assert!(!by_runs_few.is_empty() && by_runs_few.len() < 451, "{}", by_runs_few.len());
    assert_eq!(fractaldb_sql::run_rows_skipped() - skipped, 3000 - by_runs_few.len() as u64);
    assert_eq!(by_runs_few, rows(&mut s, &few.replace("GROUP BY h", "GROUP BY CONCAT(h)")));
    let by_col = few.replace("> 8", "> 8 AND h < 'abc3'");
    let skipped = fractaldb_sql::run_rows_skipped();
    let by_runs_col = rows(&mut s, &by_col);
    assert_eq!(fractaldb_sql::run_rows_skipped() - skipped, 3000 - 451);
    assert!(!by_runs_col.is_empty() && by_runs_col.len() < by_runs_few.len());
    assert_eq!(by_runs_col, rows(&mut s, &by_col.replace("GROUP BY h", "GROUP BY CONCAT(h)")));
    let windowed = "SELECT h, COUNT(*), ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, h) FROM g GROUP BY h HAVING COUNT(*) > 8";
    assert_eq!(rows(&mut s, windowed), rows(&mut s, &windowed.replace("GROUP BY h", "GROUP BY CONCAT(h)")));
    let rollup = "SELECT h, COUNT(*) FROM g GROUP BY h WITH ROLLUP";
    let with_rollup = rows(&mut s, rollup);
    assert_eq!(with_rollup.last().unwrap(), &vec!["NULL".to_string(), "3000".to_string()]);
    assert_eq!(with_rollup.len(), 452);
    // Rows deleted and inserted in an open transaction: the runs are read
    // at its snapshot, as rows are.
    ok(&mut s, "BEGIN");
    ok(&mut s, "DELETE FROM g WHERE id % 7 = 1");
    ok(&mut s, "INSERT INTO g VALUES (5001, 'ABC1', 0), (5002, 'zz', 0), (5003, 'zz ', 0)");
    let in_txn = rows(&mut s, counts);
    assert_eq!(in_txn, rows(&mut s, &counts.replace("GROUP BY h", "GROUP BY CONCAT(h)")));
    assert!(in_txn.contains(&vec!["2".to_string(), "zz".to_string()]), "{in_txn:?}");
    ok(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s, counts), by_runs);
    // A spilling grouper gives the same, DISTINCT aggregates too (their
    // partial states from two runs once counted a value twice).
    let distinct = "SELECT CONCAT(h), COUNT(DISTINCT id % 11), COUNT(*) FROM g GROUP BY CONCAT(h)";
    let in_memory = rows(&mut s, distinct);
    ok(&mut s, "SET SESSION tmp_memory_table_size = 65536");
    assert_eq!(rows(&mut s, q), by_index);
    assert_eq!(rows(&mut s, &q.replace("GROUP BY h", "GROUP BY CONCAT(h)")), by_index);
    assert_eq!(rows(&mut s, distinct), in_memory);
    assert_eq!(rows(&mut s, counts), by_runs);
}

/// A GROUP BY without ORDER BY gives its groups sorted by the GROUP BY
/// columns, as MariaDB's implicit sort does: numbers by value (not as
/// text: 10 after 9), NULL first, for INT, DECIMAL and DOUBLE columns. The
/// expected rows are MariaDB 10.11's for the same statements. An index on
/// an INT column hands the grouper its groups in that order too (no table
/// of groups), with the hash grouping's answer.
#[test]
fn group_by_returns_groups_in_the_order_of_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (a INT, b INT, c DECIMAL(10,2), e DOUBLE)");
    ok(
        &mut s,
        "INSERT INTO t VALUES (10,1,1.5,2.5),(9,1,10,10),(2,1,2,-1),(-5,1,-3.25,1e10),(100,2,100,0.5),(1,3,NULL,NULL)",
    );
    let col =
        |s: &mut Session, q: &str| -> Vec<String> { rows(s, q).into_iter().map(|r| r[0].clone()).collect() };
    assert_eq!(col(&mut s, "SELECT a, COUNT(*) FROM t GROUP BY a"), ["-5", "1", "2", "9", "10", "100"]);
    assert_eq!(
        col(&mut s, "SELECT c, COUNT(*) FROM t GROUP BY c"),
        ["NULL", "-3.25", "1.50", "2.00", "10.00", "100.00"]
    );
    assert_eq!(
        col(&mut s, "SELECT e, COUNT(*) FROM t GROUP BY e"),
        ["NULL", "-1", "0.5", "2.5", "10", "10000000000"]
    );

    ok(&mut s, "CREATE TABLE n (id INT PRIMARY KEY, k INT, v INT, KEY k (k))");
    let values: Vec<String> = (1..=2000)
        .map(|i| {
            let k = if i % 11 == 0 { "NULL".to_string() } else { ((i * 7919) % 301 - 150).to_string() };
            format!("({i}, {k}, {})", i % 13)
        })
        .collect();
    ok(&mut s, &format!("INSERT INTO n VALUES {}", values.join(",")));
    let q = "SELECT k, COUNT(*), MIN(id) FROM n GROUP BY k";
    let plan = rows(&mut s, &format!("EXPLAIN {q}"));
    assert_eq!((&plan[0][3][..], &plan[0][5][..]), ("index", "k"), "{plan:?}");
    let by_index = rows(&mut s, q);
    assert_eq!(by_index, rows(&mut s, "SELECT k, COUNT(*), MIN(id) FROM n GROUP BY k + 0"));
    assert_eq!(by_index.len(), 302);
    assert_eq!(by_index[0][0], "NULL");
    let keys: Vec<i64> = by_index[1..].iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");

    // A range on a DOUBLE index hands out its groups in order too (its
    // key order is its group keys' order; -0 and 0 are one group). Such an
    // index does not cover (its key keeps no -0), so only a range chosen
    // for WHERE reads it.
    ok(&mut s, "CREATE TABLE f (id INT PRIMARY KEY, x DOUBLE, KEY x (x))");
    ok(&mut s, "INSERT INTO f SELECT id, IF(k IS NULL, NULL, k / 8) FROM n");
    ok(&mut s, "INSERT INTO f VALUES (5001, -0e0), (5002, 0e0), (5003, 1e300), (5004, -1e-300)");
    let q = "SELECT x, COUNT(*), MAX(id) FROM f WHERE x BETWEEN -1 AND 1 GROUP BY x";
    let plan = rows(&mut s, &format!("EXPLAIN {q}"));
    assert_eq!((&plan[0][3][..], &plan[0][5][..]), ("range", "x"), "{plan:?}");
    let by_index = rows(&mut s, q);
    assert_eq!(by_index, rows(&mut s, &q.replace("GROUP BY x", "GROUP BY x + 0")));
    let xs: Vec<f64> = by_index.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    assert_eq!(xs.iter().filter(|x| **x == 0.0).count(), 1, "-0 and 0 are one group");

    // Counting rows only: runs of equal keys of the INT index, and of the
    // leading part of a two-part primary key (a full scan of the table,
    // its rows decoded from the main dictionary), match the hash grouping.
    let skipped = fractaldb_sql::run_rows_skipped();
    let q = "SELECT k, COUNT(*) FROM n GROUP BY k";
    assert_eq!(rows(&mut s, q), rows(&mut s, "SELECT k, COUNT(*) FROM n GROUP BY k + 0"));
    assert_eq!(fractaldb_sql::run_rows_skipped() - skipped, 2000 - 302);
    ok(&mut s, "CREATE TABLE p (a INT, b INT, c VARCHAR(10), PRIMARY KEY (a, b))");
    ok(&mut s, "INSERT INTO p SELECT k, id, 'x' FROM n WHERE k IS NOT NULL");
    let skipped = fractaldb_sql::run_rows_skipped();
    let q = "SELECT a, COUNT(*) AS n FROM p GROUP BY a";
    let by_runs = rows(&mut s, q);
    assert_eq!(by_runs, rows(&mut s, "SELECT a, COUNT(*) AS n FROM p GROUP BY a + 0"));
    assert_eq!(fractaldb_sql::run_rows_skipped() - skipped, (2000 - 2000 / 11) - 301);
    let total: u64 = by_runs.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(total, 2000 - 2000 / 11);

    // An index on TIME hands out its groups in the values' order, negative
    // ones too (their text, '-10:00:00' before '-01:00:00', is not in that
    // order), as MariaDB sorts them; each group once.
    ok(&mut s, "CREATE TABLE tm (id INT PRIMARY KEY, t TIME, KEY t (t))");
    ok(
        &mut s,
        "INSERT INTO tm VALUES (1,'-01:00:00'),(2,'-10:00:00'),(3,'00:00:00'),(4,'-10:00:00'),\
         (5,'02:00:00'),(6,'-01:00:00'),(7,'-100:00:00'),(8,NULL),(9,'02:00:00')",
    );
    let q = "SELECT t, COUNT(*) FROM tm GROUP BY t";
    let plan = rows(&mut s, &format!("EXPLAIN {q}"));
    assert_eq!((&plan[0][3][..], &plan[0][5][..]), ("index", "t"), "{plan:?}");
    let want = [
        ["NULL", "1"],
        ["-100:00:00", "1"],
        ["-10:00:00", "2"],
        ["-01:00:00", "2"],
        ["00:00:00", "1"],
        ["02:00:00", "2"],
    ];
    assert_eq!(rows(&mut s, q), want);
    assert_eq!(rows(&mut s, "SELECT t, COUNT(*), MAX(id) FROM tm GROUP BY t HAVING MAX(id) > 3").len(), 5);
    // Grouped in a table of groups (no index), likewise.
    assert_eq!(rows(&mut s, "SELECT t, COUNT(*) FROM tm IGNORE INDEX (t) GROUP BY t"), want);
}

/// KILL QUERY stops a grouped scan, whether it counts runs of equal keys
/// (`plan::for_each_key_run`) or builds each row (`scan_each`): 1317, and
/// the session goes on. A statement can end before the kill lands, so
/// each is tried until one is interrupted.
#[test]
fn kill_stops_a_grouped_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, k INT, KEY k (k))");
    let values: Vec<String> = (0..1000).map(|i| format!("({i}, {})", i % 97)).collect();
    ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    for shift in 0..7 {
        ok(&mut s, &format!("INSERT INTO t SELECT id + {}, k FROM t", 1000 << shift));
    }
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "128000");
    for (q, by_runs) in
        [("SELECT k, COUNT(*) FROM t GROUP BY k", true), ("SELECT k, COUNT(*) FROM t GROUP BY k + 0", false)]
    {
        let skipped = fractaldb_sql::run_rows_skipped();
        let whole = rows(&mut s, q);
        assert_eq!(whole.len(), 97);
        assert_eq!(fractaldb_sql::run_rows_skipped() > skipped, by_runs, "{q}");
        let (back, interrupted) =
            kill_while_running(s, q, |st| st.starts_with("Queried about") && st != "Queried about 0 rows");
        s = back;
        assert!(interrupted, "no {q} was interrupted by KILL");
        assert_eq!(rows(&mut s, "SELECT COUNT(DISTINCT k) FROM t"), [["97"]]);
    }
}

/// An IN list of eight or more string constants is one lookup of the
/// value's collation key (`expr::InSet`): under every collation it finds
/// exactly the rows the same items compared one by one find, IN and NOT
/// IN, with case, accents, trailing spaces and NULLs.
#[test]
fn long_string_in_lists_match_item_by_item_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    let values = ["a", "A", "a ", "á", "Á", "ß", "ss", "B", "", " ", "x\t", "aa", "z", "Z  ", "é", "e"];
    let items = "'A', 'ss', 'b ', 'É', 'q', 'r', 't', 'u', ' ', 'Zz'";
    let ors: Vec<String> = items.split(", ").map(|i| format!("c = {i}")).collect();
    for coll in fractaldb_sql::types::ALL_COLLATIONS {
        let charset = if *coll == fractaldb_sql::types::Collation::Binary {
            "binary".to_string()
        } else {
            coll.name().split('_').next().unwrap().to_string()
        };
        ok(&mut s, "DROP TABLE IF EXISTS t");
        ok(
            &mut s,
            &format!(
                "CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(20) CHARACTER SET {charset} COLLATE {})",
                coll.name()
            ),
        );
        let rows_sql: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("({i}, '{v}')"))
            .chain(["(99, NULL)".into()])
            .collect();
        ok(&mut s, &format!("INSERT IGNORE INTO t VALUES {}", rows_sql.join(",")));
        let by_set =
            rows(&mut s, &format!("SELECT id, c IN ({items}), c NOT IN ({items}) FROM t ORDER BY id"));
        let by_items = rows(
            &mut s,
            &format!("SELECT id, {}, NOT ({}) FROM t ORDER BY id", ors.join(" OR "), ors.join(" OR ")),
        );
        assert_eq!(by_set, by_items, "{}", coll.name());
    }
}

/// The engine environment of a closed database folder, to read or write
/// its dictionaries as the engine holds them.
fn engine_of(dir: &std::path::Path) -> fractaldb::Env {
    fractaldb::Env::open(dir, fractaldb::EnvOptions { direct_io: false, ..fractaldb::EnvOptions::default() })
        .unwrap()
}

/// Rewrites, in `txn`, the catalog record (JSON) of the one table named
/// `name` through `f`: what an older build would have written.
fn edit_table_record(
    env: &fractaldb::Env,
    txn: &fractaldb::Txn,
    name: &str,
    f: impl FnOnce(&mut serde_json::Value),
) {
    let cat = env.open_dictionary(fractaldb_sql::catalog::CATALOG_DICT).unwrap();
    let recs: Vec<_> = txn.range(&cat, None, None, false).collect::<Result<_, _>>().unwrap();
    // (Not every record is JSON: the next table id is a number.)
    let mut tables = recs
        .into_iter()
        .filter_map(|(k, v)| Some((k, serde_json::from_slice::<serde_json::Value>(&v).ok()?)))
        .filter(|(_, def)| {
            def.get("name").and_then(|n| n.as_str()) == Some(name) && def.get("columns").is_some()
        });
    let (k, mut def) = tables.next().expect("the table's record");
    assert!(tables.next().is_none(), "one table named {name}");
    f(&mut def);
    txn.put(&cat, &k, serde_json::to_string(&def).unwrap().as_bytes()).unwrap();
}

/// A plain index entry's value is empty: its primary key is read from its
/// key (`Table::entry_pk`); a unique entry without NULLs keeps the primary
/// key as its value. Entries written before, with the primary key as their
/// value, still read beside new ones, in covering reads and in reads that
/// look the row up, and leave with their rows.
#[test]
fn index_entries_read_their_primary_key_from_the_key_and_older_entries_still_read() {
    use std::collections::BTreeMap;
    /// id -> (a, b, u).
    type Row = (i64, String, Option<i64>);
    type Model = BTreeMap<i64, Row>;
    let dir = tempfile::tempdir().unwrap();
    let mut model: Model = BTreeMap::new();
    let row = |i: i64| {
        (
            i % 7,
            if i % 2 == 0 { format!("b{}", i % 5) } else { format!("B{}", i % 5) },
            (i % 10 != 0).then_some(i),
        )
    };
    let insert = |s: &mut Session, model: &mut Model, ids: std::ops::Range<i64>| {
        let vals: Vec<String> = ids
            .map(|i| {
                let (a, b, u) = row(i);
                model.insert(i, (a, b.clone(), u));
                format!("({i}, {a}, '{b}', {})", u.map_or("NULL".to_string(), |u| u.to_string()))
            })
            .collect();
        ok(s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
    };
    // Every read through each index gives what the model says.
    let check = |s: &mut Session, model: &Model, when: &str| {
        let ids = |f: &dyn Fn(&Row) -> bool| -> Vec<Vec<String>> {
            model.iter().filter(|(_, r)| f(r)).map(|(id, _)| vec![id.to_string()]).collect()
        };
        assert_eq!(
            rows(s, "SELECT id FROM t FORCE INDEX (ka) WHERE a = 3 ORDER BY id"),
            ids(&|r| r.0 == 3),
            "{when}"
        );
        let full: Vec<Vec<String>> = model
            .iter()
            .filter(|(_, r)| r.0 == 4)
            .map(|(id, (_, b, u))| {
                vec![id.to_string(), b.clone(), u.map_or("NULL".into(), |u| u.to_string())]
            })
            .collect();
        assert_eq!(
            rows(s, "SELECT id, b, u FROM t FORCE INDEX (ka) WHERE a = 4 ORDER BY id"),
            full,
            "{when}"
        );
        let carried: Vec<Vec<String>> = model
            .iter()
            .filter(|(_, r)| r.1.eq_ignore_ascii_case("b2"))
            .map(|(id, (_, b, _))| vec![b.clone(), id.to_string()])
            .collect();
        assert_eq!(
            rows(s, "SELECT b, id FROM t FORCE INDEX (kb) WHERE b = 'b2' ORDER BY id"),
            carried,
            "{when}"
        );
        assert_eq!(
            rows(s, "SELECT id FROM t FORCE INDEX (ku) WHERE u IS NULL ORDER BY id"),
            ids(&|r| r.2.is_none()),
            "{when}"
        );
        assert_eq!(
            rows(s, "SELECT id FROM t FORCE INDEX (ku) WHERE u = 41"),
            ids(&|r| r.2 == Some(41)),
            "{when}"
        );
        let n = model.values().filter(|r| r.0 > 2).count();
        assert_eq!(one(s, "SELECT COUNT(*) FROM t FORCE INDEX (kad) WHERE a > 2"), n.to_string(), "{when}");
        assert_eq!(rows(s, "CHECK TABLE t")[0][3], "OK", "{when}");
    };
    let names = {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20), u INT, KEY ka (a), KEY kb (b), UNIQUE KEY ku (u), KEY kad (a DESC, id))");
        insert(&mut s, &mut model, 0..300);
        check(&mut s, &model, "new entries");
        for ix in ["ka", "kb", "kad"] {
            assert!(db.index_entries("d", "t", ix).unwrap().iter().all(|(_, v)| v.is_empty()), "{ix}");
        }
        // A unique entry with a NULL part holds the primary key in its key.
        let ku = db.index_entries("d", "t", "ku").unwrap();
        assert_eq!(ku.iter().filter(|(_, v)| v.is_empty()).count(), 30);
        // One without: its key is its part alone (an INT: marker and 4
        // bytes), its value the primary key.
        assert!(ku.iter().filter(|(_, v)| !v.is_empty()).all(|(k, v)| k.len() == 5 && v.len() == 5));
        drop(s);
        let names = db.table_dictionaries("d", "t").unwrap();
        db.close().unwrap();
        names
    };
    // Rewrite every entry as it was written before: the primary key (an
    // INT: marker and 4 bytes) as its value.
    {
        let env = engine_of(dir.path());
        // main, status, then ka, kb, ku, kad.
        assert_eq!(names.len(), 6, "{names:?}");
        for (n, name) in names[2..].iter().enumerate() {
            let d = env.open_dictionary(name).unwrap();
            let txn = env.begin(fractaldb::Isolation::RepeatableRead).unwrap();
            let entries: Vec<_> = txn.range(&d, None, None, false).collect::<Result<_, _>>().unwrap();
            for (k, _) in entries.into_iter().filter(|(_, v)| v.is_empty()) {
                let front = if n == 1 { fractaldb_sql::keycodec::carried(&k).unwrap().0 } else { &k[..] };
                let pk = front[front.len() - 5..].to_vec();
                txn.put(&d, &k, &pk).unwrap();
            }
            txn.commit().unwrap();
        }
        env.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert!(db.index_entries("d", "t", "ka").unwrap().iter().all(|(k, v)| v.len() == 5 && k.ends_with(v)));
    let mut s = db.session();
    ok(&mut s, "USE d");
    check(&mut s, &model, "older entries");
    // New entries beside old ones; old ones removed and rewritten by key.
    insert(&mut s, &mut model, 300..400);
    ok(&mut s, "UPDATE t SET a = a + 1 WHERE id < 120");
    model.range_mut(..120).for_each(|(_, r)| r.0 += 1);
    ok(&mut s, "DELETE FROM t WHERE id % 3 = 0");
    model.retain(|id, _| id % 3 != 0);
    check(&mut s, &model, "older and newer entries");
}

/// A plain index carries an ASCII string of a `*_general_ci` or `*_bin`
/// collation as its letters' case and trailing spaces, rebuilt from the
/// key's weights on a covering read (`keycodec::put_carried_as`); other
/// strings whole. Reads give back every value exactly, ascending and
/// descending parts alike. An index whose dictionary was written with
/// whole values (`carry_form` 0) keeps writing them, so its rows' entries
/// are still found by their keys on update and delete.
#[test]
fn carried_strings_are_rebuilt_from_their_keys_and_older_dictionaries_keep_their_form() {
    use fractaldb_sql::keycodec::{carried, end_carried, put_carried};
    use fractaldb_sql::Value;
    use std::collections::BTreeMap;
    /// id -> (g general_ci, b utf8mb4_bin, l latin1_swedish_ci).
    type Row = (Option<String>, Option<String>, Option<String>);
    let dir = tempfile::tempdir().unwrap();
    let mut r = SmallRng::seed_from_u64(24);
    let words = [
        "0123456789abcdef0123456789abcdef",
        "0123456789ABCDEF",
        "John.Smith@Example.com",
        "mIxEd",
        "trail  ",
        "  lead",
        "",
        " ",
        "tab\t",
        "café",
        "naïve  ",
        "Ünïcödé",
        "😀x",
        "z",
    ];
    let pick = |r: &mut SmallRng| -> Option<String> {
        match r.gen_range(0..10) {
            0 => None,
            1..=5 => Some(words[r.gen_range(0..words.len())].to_string()),
            _ => Some((0..r.gen_range(1..12)).map(|_| b"aAbBqQ09 -"[r.gen_range(0..10)] as char).collect()),
        }
    };
    let mut model: BTreeMap<i64, Row> = BTreeMap::new();
    let lit = |v: &Option<String>| v.as_ref().map_or("NULL".to_string(), |v| format!("'{v}'"));
    let insert =
        |s: &mut Session, model: &mut BTreeMap<i64, Row>, r: &mut SmallRng, ids: std::ops::Range<i64>| {
            let vals: Vec<String> = ids
                .map(|i| {
                    // latin1 holds no emoji (error 1366, as in MariaDB).
                    let row = (pick(r), pick(r), pick(r).map(|v| v.replace('😀', ":)")));
                    let sql = format!("({i}, {}, {}, {})", lit(&row.0), lit(&row.1), lit(&row.2));
                    model.insert(i, row);
                    sql
                })
                .collect();
            ok(s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
        };
    let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
    // Every index read alone gives each row's values exactly (kgb's b and
    // kgd's g are descending parts).
    let check = |s: &mut Session, model: &BTreeMap<i64, Row>, when: &str| {
        for (ix, col, f) in [
            ("kg", "g", (|r: &Row| r.0.clone()) as fn(&Row) -> Option<String>),
            ("kgd", "g", |r: &Row| r.0.clone()),
            ("kb", "b", |r: &Row| r.1.clone()),
            ("kl", "l", |r: &Row| r.2.clone()),
        ] {
            let want: Vec<Vec<String>> =
                model.iter().filter_map(|(id, r)| Some(vec![id.to_string(), f(r)?])).collect();
            let q = format!("SELECT id, {col} FROM t FORCE INDEX ({ix}) WHERE {col} >= '' ORDER BY id");
            let plan = rows(s, &format!("EXPLAIN {q}"));
            assert_eq!((plan[0][5].as_str(), plan[0][9].contains("Using index")), (ix, true), "{plan:?}");
            let before = fractaldb_sql::pk_lookups();
            let got = rows(s, &q);
            assert_eq!(fractaldb_sql::pk_lookups() - before, 0, "{when} {ix}: read alone");
            assert_eq!(got, want, "{when} {ix}");
        }
        let want: Vec<Vec<String>> = model
            .iter()
            .filter(|(_, r)| r.0.is_some())
            .map(|(id, r)| vec![id.to_string(), cell(&r.0), cell(&r.1)])
            .collect();
        let q = "SELECT id, g, b FROM t FORCE INDEX (kgb) WHERE g >= '' ORDER BY id";
        assert_eq!(rows(s, &format!("EXPLAIN {q}"))[0][5], "kgb");
        assert_eq!(rows(s, q), want, "{when} kgb");
        assert_eq!(rows(s, "CHECK TABLE t")[0][3], "OK", "{when}");
    };
    // The carried values' tags, in entry order, of index `ix`.
    let tags = |db: &Database, ix: &str| -> Vec<u8> {
        db.index_entries("d", "t", ix)
            .unwrap()
            .iter()
            .flat_map(|(k, _)| {
                let vals = carried(k).unwrap().1;
                // Each entry of these one-string indexes carries one value.
                vec![vals[0]]
            })
            .collect()
    };
    let names = {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(
            &mut s,
            "CREATE TABLE t (id INT PRIMARY KEY, g VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, \
             b VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, l VARCHAR(40) CHARACTER SET latin1, \
             KEY kg (g), KEY kgd (g DESC, id), KEY kb (b), KEY kl (l), KEY kgb (g, b DESC))",
        );
        insert(&mut s, &mut model, &mut r, 0..400);
        check(&mut s, &model, "new entries");
        // ASCII strings of general_ci and bin are compact, others whole;
        // latin1_swedish_ci's weights do not spell the text: whole.
        let ascii = |f: fn(&Row) -> &Option<String>| {
            model.values().filter_map(|r| f(r).as_ref()).filter(|v| v.is_ascii()).count()
        };
        let count = |t: &[u8], tag: u8| t.iter().filter(|&&x| x == tag).count();
        assert_eq!(count(&tags(&db, "kg"), 2), ascii(|r| &r.0));
        assert_eq!(count(&tags(&db, "kgd"), 2), ascii(|r| &r.0));
        assert_eq!(count(&tags(&db, "kb"), 2), ascii(|r| &r.1));
        assert_eq!(count(&tags(&db, "kl"), 2), 0);
        drop(s);
        let names = db.table_dictionaries("d", "t").unwrap();
        db.close().unwrap();
        names
    };
    // Rewrite kg's and kb's entries with whole values, and their catalog
    // record without `carry_form`: a dictionary written before the
    // compact form existed.
    {
        let env = engine_of(dir.path());
        // main, status, then kg, kgd, kb, kl, kgb.
        assert_eq!(names.len(), 7, "{names:?}");
        let txn = env.begin(fractaldb::Isolation::RepeatableRead).unwrap();
        for (name, col) in [(&names[2], 0), (&names[4], 1)] {
            let d = env.open_dictionary(name).unwrap();
            let entries: Vec<_> = txn.range(&d, None, None, false).collect::<Result<_, _>>().unwrap();
            for (k, _) in entries {
                let front = carried(&k).unwrap().0;
                // An INT primary key: marker, then 4 bytes, sign bit flipped.
                let id =
                    i64::from(i32::from_be_bytes(front[front.len() - 4..].try_into().unwrap()) ^ i32::MIN);
                let row = &model[&id];
                let v = if col == 0 { &row.0 } else { &row.1 };
                let mut old = front.to_vec();
                put_carried(&mut old, &v.as_ref().map_or(Value::Null, Value::str)).unwrap();
                end_carried(&mut old, front.len()).unwrap();
                txn.delete(&d, &k).unwrap();
                txn.put(&d, &old, &[]).unwrap();
            }
        }
        let mut edited = 0;
        edit_table_record(&env, &txn, "t", |def| {
            for ix in def["indexes"].as_array_mut().unwrap() {
                if ix["name"] == "kg" || ix["name"] == "kb" {
                    ix.as_object_mut().unwrap().remove("carry_form").unwrap();
                    edited += 1;
                }
            }
        });
        assert_eq!(edited, 2);
        txn.commit().unwrap();
        env.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert!(tags(&db, "kg").iter().all(|&t| t != 2));
    let mut s = db.session();
    ok(&mut s, "USE d");
    check(&mut s, &model, "older entries");
    // New rows, changed rows (case alone, trailing spaces alone, whole
    // values) and deleted rows: the older dictionaries keep whole values,
    // the newer ones compact ones, and every entry is found by its key.
    insert(&mut s, &mut model, &mut r, 400..500);
    ok(&mut s, "UPDATE t SET g = UPPER(g), b = CONCAT(b, ' ') WHERE id % 4 = 0");
    for (_, row) in model.iter_mut().filter(|(id, _)| *id % 4 == 0) {
        row.0 = row.0.as_ref().map(|g| g.to_uppercase());
        row.1 = row.1.as_ref().map(|b| format!("{b} "));
    }
    ok(&mut s, "UPDATE t SET g = 'Fresh', l = 'x' WHERE id % 7 = 1");
    for (_, row) in model.iter_mut().filter(|(id, _)| *id % 7 == 1) {
        row.0 = Some("Fresh".into());
        row.2 = Some("x".into());
    }
    ok(&mut s, "DELETE FROM t WHERE id % 5 = 2");
    model.retain(|id, _| id % 5 != 2);
    check(&mut s, &model, "older and newer entries");
    assert!(tags(&db, "kg").iter().all(|&t| t != 2));
    assert!(tags(&db, "kgd").contains(&2));
    // A rebuilt index gets a new dictionary, written compact.
    ok(&mut s, "ALTER TABLE t DROP INDEX kg, ADD INDEX kg (g)");
    assert!(tags(&db, "kg").contains(&2));
    check(&mut s, &model, "rebuilt");
}

/// A table's rows leave out its primary key's integer columns, which the
/// key holds (`Table::key_held`, `TableDef::row_form`): their NULL bits
/// are set in the stored row and every read takes them from the key
/// (point reads, scans, lookups through a secondary index, covering and
/// clustering reads, fast updates and upserts, instant column changes,
/// a rebuild). A table whose rows were written whole (`row_form` 0)
/// keeps writing them whole and reads as before.
#[test]
fn rows_leave_out_their_integer_primary_key_columns_and_whole_rows_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let all = "SELECT a, b, s, c, d FROM t ORDER BY a, b, s";
    // The NULL bits of the stored rows (one bitmap byte after a one-byte
    // version: at most 8 columns here), keyed by primary key.
    let bitmaps = |db: &Database| -> Vec<u8> {
        db.index_entries("d", "t", "PRIMARY").unwrap().iter().map(|(_, v)| v[1]).collect()
    };
    let expected: Vec<Vec<String>> = {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(
            &mut s,
            "CREATE TABLE t (a INT NOT NULL, b BIGINT UNSIGNED NOT NULL, s VARCHAR(10) NOT NULL, c INT, d DATE, \
             PRIMARY KEY (b DESC, a, s), UNIQUE KEY uc (c), CLUSTERING KEY kd (d), UNIQUE CLUSTERING KEY ucd (c, d))",
        );
        ok(
            &mut s,
            "INSERT INTO t VALUES (-2147483648, 18446744073709551615, 'Max', 1, '2020-01-01'), \
             (0, 0, '', 2, NULL), (7, 5, 'x', NULL, '1999-12-31'), (2147483647, 5, 'y', 4, '2020-01-01'), \
             (-1, 1, 'é', 5, '2001-02-03')",
        );
        // a (column 0) and b (column 1) are left out; s, a string, is not.
        for m in bitmaps(&db) {
            assert_eq!(m & 0b111, 0b011, "{m:#b}");
        }
        let want = [
            ["-2147483648", "18446744073709551615", "Max", "1", "2020-01-01"],
            ["-1", "1", "é", "5", "2001-02-03"],
            ["0", "0", "", "2", "NULL"],
            ["7", "5", "x", "NULL", "1999-12-31"],
            ["2147483647", "5", "y", "4", "2020-01-01"],
        ];
        assert_eq!(rows(&mut s, all), want);
        // Point reads, ranges, lookups, covering and clustering reads.
        assert_eq!(
            rows(&mut s, "SELECT * FROM t WHERE b = 5 AND a = 7 AND s = 'x'"),
            [["7", "5", "x", "NULL", "1999-12-31"]]
        );
        assert_eq!(
            rows(&mut s, "SELECT a, b FROM t WHERE b BETWEEN 1 AND 5 ORDER BY b, a"),
            [["-1", "1"], ["7", "5"], ["2147483647", "5"]]
        );
        assert_eq!(rows(&mut s, "SELECT a, b, s FROM t WHERE c = 4"), [["2147483647", "5", "y"]]);
        assert_eq!(
            rows(&mut s, "SELECT a, b, c FROM t FORCE INDEX (kd) WHERE d = '2020-01-01' ORDER BY a"),
            [["-2147483648", "18446744073709551615", "1"], ["2147483647", "5", "4"]]
        );
        assert_eq!(rows(&mut s, "SELECT a, b FROM t WHERE c = 5 AND d = '2001-02-03'"), [["-1", "1"]]);
        assert_eq!(
            rows(&mut s, "SELECT SUM(a), SUM(b) FROM t WHERE a < 8"),
            [["-2147483642", "18446744073709551621"]]
        );
        // Updates and deletes find their rows and entries.
        ok(&mut s, "UPDATE t SET c = c + 10 WHERE a = 0");
        ok(&mut s, "UPDATE t SET a = 8 WHERE a = 7");
        ok(&mut s, "DELETE FROM t WHERE b = 1");
        // Fast updates and upserts edit the stored row in place.
        affected(&mut s, "SET SESSION tokudb_enable_fast_upsert = ON, tokudb_enable_fast_update = ON");
        ok(&mut s, "CREATE TABLE f (id INT PRIMARY KEY, n INT NOT NULL)");
        ok(&mut s, "INSERT INTO f VALUES (1, 1) ON DUPLICATE KEY UPDATE n = n + 1");
        ok(&mut s, "INSERT INTO f VALUES (1, 1) ON DUPLICATE KEY UPDATE n = n + 1");
        ok(&mut s, "UPDATE f SET n = n + 5 WHERE id = 1");
        ok(&mut s, "INSERT INTO f VALUES (-3, 9) ON DUPLICATE KEY UPDATE n = n + 1");
        assert_eq!(rows(&mut s, "SELECT * FROM f ORDER BY id"), [["-3", "9"], ["1", "7"]]);
        affected(&mut s, "SET SESSION tokudb_enable_fast_upsert = OFF, tokudb_enable_fast_update = OFF");
        // Instant column changes: a column added first moves every
        // column, the key's too; rows of both versions read.
        ok(&mut s, "ALTER TABLE t ADD COLUMN e INT DEFAULT 3 FIRST");
        ok(&mut s, "INSERT INTO t (a, b, s, c, e) VALUES (9, 9, 'z', 99, 4)");
        ok(&mut s, "ALTER TABLE t MODIFY a INT NOT NULL AFTER d");
        assert_eq!(rows(&mut s, "SELECT e, a, b FROM t WHERE b = 9"), [["4", "9", "9"]]);
        assert_eq!(rows(&mut s, "SELECT e, a, b FROM t WHERE b = 0"), [["3", "0", "0"]]);
        // A rebuild writes every row again, without the key's columns.
        ok(&mut s, "ALTER TABLE t DROP COLUMN e, MODIFY a INT NOT NULL FIRST, ROW_FORMAT=TOKUDB_LZ4");
        let want = rows(&mut s, all);
        assert_eq!(
            want,
            [
                ["-2147483648", "18446744073709551615", "Max", "1", "2020-01-01"],
                ["0", "0", "", "12", "NULL"],
                ["8", "5", "x", "NULL", "1999-12-31"],
                ["9", "9", "z", "99", "NULL"],
                ["2147483647", "5", "y", "4", "2020-01-01"],
            ]
        );
        assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
        drop(s);
        db.close().unwrap();
        want
    };
    // The same table read after a restart, then rewritten as a table of
    // an older build: rows whole, `row_form` absent from its record.
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "USE d");
        assert_eq!(rows(&mut s, all), expected);
        ok(&mut s, "CREATE TABLE old (id INT PRIMARY KEY, n INT)");
        drop(s);
        db.close().unwrap();
        let env = engine_of(dir.path());
        let txn = env.begin(fractaldb::Isolation::RepeatableRead).unwrap();
        edit_table_record(&env, &txn, "old", |def| {
            def.as_object_mut().unwrap().remove("row_form").unwrap();
        });
        txn.commit().unwrap();
        env.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    ok(&mut s, "INSERT INTO old VALUES (1, 10), (2, 20), (3, NULL)");
    ok(&mut s, "UPDATE old SET n = n + 1 WHERE id = 2");
    // Written whole: the key's column keeps its field.
    let whole = db.index_entries("d", "old", "PRIMARY").unwrap();
    assert!(whole.iter().all(|(_, v)| v[1] & 1 == 0));
    assert_eq!(rows(&mut s, "SELECT * FROM old ORDER BY id"), [["1", "10"], ["2", "21"], ["3", "NULL"]]);
    // A rebuild gives it a new main dictionary, rows without the key's
    // column.
    ok(&mut s, "ALTER TABLE old ADD COLUMN m INT NOT NULL DEFAULT 0 AFTER id, ALGORITHM=COPY");
    assert!(db.index_entries("d", "old", "PRIMARY").unwrap().iter().all(|(_, v)| v[1] & 1 == 1));
    assert_eq!(rows(&mut s, "SELECT id, n FROM old ORDER BY id"), [["1", "10"], ["2", "21"], ["3", "NULL"]]);
    assert_eq!(rows(&mut s, all), expected);
}

/// USE, FORCE and IGNORE INDEX steer the planner as in MySQL: USE
/// limits it to the named indexes (an empty list to none), IGNORE takes
/// them away, FORCE also makes the table scan the last resort (an index
/// holding every column read is read whole). The rows are the same
/// whichever way they are read; an index the table lacks is 1176.
/// EXPLAIN's type and key for the first table of query `q`.
fn plan(s: &mut Session, q: &str) -> (String, String) {
    let p = rows(s, &format!("EXPLAIN {q}"));
    (p[0][3].clone(), p[0][5].clone())
}

#[test]
fn is_null_and_is_not_null_read_a_key_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(
        &mut s,
        "CREATE TABLE n (id INT PRIMARY KEY, a INT NULL, b INT NULL, c INT NOT NULL, u INT NULL, \
         KEY ka (a, c), KEY kb (b DESC), KEY kc (c), UNIQUE KEY ku (u))",
    );
    // a: NULL in 20 rows; b: NULL in all but 20; u: NULL in 10, unique otherwise.
    let vals: Vec<String> = (0..400)
        .map(|i| {
            let a = if i % 20 == 0 { "NULL".to_string() } else { (i % 7).to_string() };
            let b = if i % 20 == 0 { (i % 9).to_string() } else { "NULL".to_string() };
            let u = if i % 40 == 0 { "NULL".to_string() } else { i.to_string() };
            format!("({i}, {a}, {b}, {}, {u})", i % 5)
        })
        .collect();
    ok(&mut s, &format!("INSERT INTO n VALUES {}", vals.join(",")));
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    // Each query's rows through the index are the scan's (IGNORE INDEX).
    for (cond, count, expect) in [
        ("a IS NULL", 20, pair("ref", "ka")),
        ("a IS NULL AND c = 0", 20, pair("ref", "ka")),
        ("a IS NULL AND c = 1", 0, pair("ref", "ka")),
        ("b IS NOT NULL", 20, pair("range", "kb")),
        ("b IS NOT NULL AND b < 4", 10, pair("range", "kb")),
        ("NOT (b IS NULL)", 20, pair("ALL", "NULL")),
        // Most rows: the scan is cheaper.
        ("a IS NOT NULL", 380, pair("ALL", "NULL")),
        ("b IS NULL", 380, pair("ALL", "NULL")),
        // A unique index holds many NULLs: read as a range, every one of
        // them (MariaDB says `ref` here; the rows are the same).
        ("u IS NULL", 10, pair("range", "ku")),
        // A NOT NULL column is never NULL: nothing to narrow by.
        ("c IS NULL", 0, pair("ALL", "NULL")),
        ("c IS NOT NULL AND a IS NULL", 20, pair("ref", "ka")),
    ] {
        let q = |hint: &str| format!("SELECT id, a, b, c, u FROM n {hint} WHERE {cond} ORDER BY id");
        let want = rows(&mut s, &q("IGNORE INDEX (ka, kb, kc, ku)"));
        assert_eq!(want.len(), count, "{cond}");
        assert_eq!(plan(&mut s, &q("")), expect, "{cond}");
        assert_eq!(rows(&mut s, &q("")), want, "{cond}");
    }
    // Forced, a range of most of the index reads the same rows.
    let q = "SELECT id FROM n FORCE INDEX (kb) WHERE b IS NULL ORDER BY id";
    assert_eq!(plan(&mut s, q), pair("ref", "kb"));
    assert_eq!(rows(&mut s, q).len(), 380);
    // Writes through the new ranges find their rows.
    ok(&mut s, "UPDATE n SET b = 100 WHERE a IS NULL AND c = 0");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM n WHERE b = 100"), [["20"]]);
    ok(&mut s, "DELETE FROM n WHERE u IS NULL");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM n IGNORE INDEX (ku) WHERE u IS NULL"), [["0"]]);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM n"), [["390"]]);
    assert_eq!(rows(&mut s, "CHECK TABLE n")[0][3], "OK");
}

#[test]
fn index_hints_limit_and_force_the_indexes_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE h (id INT PRIMARY KEY, a INT, b INT, c INT, KEY ka (a), KEY kb (b))");
    let vals: Vec<String> = (0..400).map(|i| format!("({i}, {}, {}, {})", i % 40, i % 20, i % 7)).collect();
    ok(&mut s, &format!("INSERT INTO h VALUES {}", vals.join(",")));
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let q = |hint: &str| format!("SELECT id FROM h {hint} WHERE a = 5 AND b = 5 ORDER BY id");
    let want = rows(&mut s, &q(""));
    assert_eq!(want.len(), 10);
    assert_eq!(plan(&mut s, &q("")), pair("ref", "ka"));
    for (hint, expect) in [
        ("IGNORE INDEX (ka)", pair("ref", "kb")),
        ("USE INDEX (kb)", pair("ref", "kb")),
        ("USE KEY (kb, ka)", pair("ref", "ka")),
        ("FORCE INDEX (kb)", pair("ref", "kb")),
        ("USE INDEX ()", pair("ALL", "NULL")),
        ("IGNORE KEY (ka, kb)", pair("ALL", "NULL")),
        ("USE INDEX (ka) IGNORE INDEX (ka)", pair("ALL", "NULL")),
        ("FORCE INDEX (ka) FORCE INDEX (kb)", pair("ref", "ka")),
    ] {
        assert_eq!(plan(&mut s, &q(hint)), expect, "{hint}");
        assert_eq!(rows(&mut s, &q(hint)), want, "{hint}");
    }
    // A condition matching most rows: the scan is cheaper, unless forced.
    let wide = |hint: &str| format!("SELECT COUNT(*) FROM h {hint} WHERE b >= 1 AND c >= 0");
    assert_eq!(plan(&mut s, &wide("")), pair("ALL", "NULL"));
    assert_eq!(plan(&mut s, &wide("FORCE INDEX (kb)")), pair("range", "kb"));
    assert_eq!(plan(&mut s, &wide("USE INDEX (kb)")), pair("ALL", "NULL"));
    assert_eq!(rows(&mut s, &wide("FORCE INDEX (kb)")), [["380"]]);
    // Nothing to narrow by: a forced index holding every column read is
    // read whole; one that does not leaves the scan.
    let all = |hint: &str, cols: &str| format!("SELECT {cols} FROM h {hint}");
    assert_eq!(plan(&mut s, &all("FORCE INDEX (ka)", "id, a")), pair("index", "ka"));
    assert_eq!(rows(&mut s, &format!("{} ORDER BY id", all("FORCE INDEX (ka)", "id, a"))).len(), 400);
    assert_eq!(plan(&mut s, &all("FORCE INDEX (ka)", "id, c")), pair("ALL", "NULL"));
    assert_eq!(one(&mut s, &all("FORCE INDEX (ka)", "SUM(a)")), one(&mut s, "SELECT SUM(a) FROM h"));
    // PRIMARY names the primary key; joins take each reference's hints.
    // (MariaDB reads ka whole here, which holds id and a; we scan.)
    assert_ne!(plan(&mut s, "SELECT a FROM h IGNORE INDEX (PRIMARY) WHERE id = 7").1, "PRIMARY");
    assert_eq!(rows(&mut s, "SELECT a FROM h IGNORE INDEX (PRIMARY) WHERE id = 7"), [["7"]]);
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*) FROM h AS x USE INDEX () JOIN h AS y FORCE INDEX (ka) ON y.a = x.a WHERE x.id < 3"),
        [["30"]]
    );
    assert_eq!(
        err_msg(&mut s, "SELECT * FROM h USE INDEX (nope) WHERE a = 1"),
        (1176, "Key 'nope' doesn't exist in table 'h'".to_string())
    );
    assert_eq!(
        err_msg(&mut s, "SELECT * FROM h AS x IGNORE INDEX (ka, nope)"),
        (1176, "Key 'nope' doesn't exist in table 'x'".to_string())
    );
}

/// A recording `RowSink` (and a `LocalInfile` that hands it out, as a
/// server does): the columns once, then each row; `fail_at` makes the
/// n-th row's send fail, as a client gone away would.
struct Recorder {
    columns: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    fail_at: Option<usize>,
}

impl fractaldb_sql::loaddata::LocalInfile for Recorder {
    fn open(&mut self, _name: &[u8]) -> fractaldb_sql::SqlResult<Box<dyn std::io::Read + '_>> {
        Err(fractaldb_sql::SqlError::new(4166, "HY000", "no files here"))
    }

    fn rows(&mut self) -> Option<&mut dyn fractaldb_sql::RowSink> {
        Some(self)
    }
}

impl fractaldb_sql::RowSink for Recorder {
    fn columns(&mut self, cols: &[fractaldb_sql::ColumnMeta]) -> fractaldb_sql::SqlResult<()> {
        assert!(self.columns.is_none(), "columns once");
        self.columns = Some(cols.iter().map(|c| c.name.clone()).collect());
        Ok(())
    }

    fn row(&mut self, row: &[fractaldb_sql::Value]) -> fractaldb_sql::SqlResult<()> {
        assert!(self.columns.is_some(), "columns before rows");
        if self.fail_at == Some(self.rows.len()) {
            return Err(fractaldb_sql::SqlError::new(1158, "08S01", "the client went away"));
        }
        self.rows.push(row.iter().map(|v| v.render()).collect());
        Ok(())
    }
}

/// A plain SELECT's rows stream to the caller's sink as they are made (the
/// server sends them to the client so), in the order and number the
/// collected result has: ORDER BY (sorted past its budget, spilled),
/// LIMIT/OFFSET, DISTINCT, GROUP BY/HAVING, BIT columns, no rows; a UNION
/// or WITH query is returned whole. A sink that fails ends the statement
/// with its error, and the session goes on.
#[test]
fn plain_selects_stream_their_rows_to_the_callers_sink() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT, b BIT(12), v VARCHAR(40), KEY kg (g))");
    let vals: Vec<String> = (0..3000)
        .map(|i| format!("({i}, {}, b'{:b}', 'value {}')", i % 13, i % 4096, (i * 7919) % 3001))
        .collect();
    ok(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(",")));
    ok(&mut s, "SET SESSION sort_buffer_size = 32768");
    for q in [
        "SELECT * FROM t",
        "SELECT id, v FROM t WHERE g = 5",
        "SELECT id, b, v FROM t ORDER BY v DESC, id",
        "SELECT id FROM t ORDER BY v LIMIT 7 OFFSET 100",
        "SELECT id FROM t LIMIT 5 OFFSET 2990",
        "SELECT DISTINCT g FROM t",
        "SELECT DISTINCT g, id % 2 FROM t ORDER BY 2, 1 LIMIT 9",
        "SELECT g, COUNT(*), MAX(v) FROM t GROUP BY g HAVING COUNT(*) > 230",
        "SELECT COUNT(*) FROM t",
        "SELECT id FROM t WHERE id < 0",
        "SELECT 1 + 1, 'x'",
        "(SELECT id FROM t WHERE id < 3)",
    ] {
        let want = rows(&mut s, q);
        let mut r = Recorder { columns: None, rows: Vec::new(), fail_at: None };
        let Outcome::Rows(rs) = s.execute_local(q.as_bytes(), &mut r).unwrap() else { panic!("{q}: rows") };
        assert!(rs.rows.is_empty(), "{q}: streamed, not returned");
        assert_eq!(r.columns, Some(rs.columns.iter().map(|c| c.name.clone()).collect()), "{q}");
        assert_eq!(r.rows, want, "{q}");
    }
    // Not plain SELECTs: returned whole, nothing sent.
    for q in ["SELECT id FROM t WHERE id < 3 UNION SELECT 5", "WITH c AS (SELECT 1 AS x) SELECT x FROM c"] {
        let mut r = Recorder { columns: None, rows: Vec::new(), fail_at: None };
        let Outcome::Rows(rs) = s.execute_local(q.as_bytes(), &mut r).unwrap() else { panic!("{q}: rows") };
        assert!(r.columns.is_none() && r.rows.is_empty(), "{q}");
        assert!(!rs.rows.is_empty(), "{q}");
    }
    // The sink fails at the 100th row: the statement ends with its error.
    let mut r = Recorder { columns: None, rows: Vec::new(), fail_at: Some(100) };
    let e = s.execute_local(b"SELECT id FROM t ORDER BY id", &mut r).unwrap_err();
    assert_eq!(e.code, 1158);
    assert_eq!(r.rows.len(), 100);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM t"), [["3000"]]);
}

/// INSERT ... SELECT reads its whole source before writing (so a table
/// copied into itself is read once), holding past tmp_memory_table_size
/// in the sort's run files (Sort_merge_passes counts their merge): the
/// rows arrive in the source's order with their values, AUTO_INCREMENT
/// numbers them in that order, IGNORE counts the duplicates, and a UNION
/// source (returned whole) still works.
#[test]
fn insert_select_holds_a_large_source_in_run_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE c (id INT PRIMARY KEY AUTO_INCREMENT, k INT, pad VARCHAR(300), KEY kk (k))");
    let vals: Vec<String> =
        (1..=5000).map(|i| format!("({i}, {}, REPEAT('{}', {}))", i % 97, i % 10, 200 + i % 50)).collect();
    ok(&mut s, &format!("INSERT INTO c VALUES {}", vals.join(",")));
    let passes = |s: &mut Session| -> u64 {
        rows(s, "SHOW SESSION STATUS LIKE 'Sort_merge_passes'")[0][1].parse().unwrap()
    };
    ok(&mut s, "SET SESSION tmp_memory_table_size = 65536");
    let before = passes(&mut s);
    assert_eq!(affected(&mut s, "INSERT INTO c (k, pad) SELECT k, pad FROM c"), 5000);
    assert!(passes(&mut s) > before, "the source went through run files");
    assert_eq!(rows(&mut s, "SELECT COUNT(*), MIN(id), MAX(id) FROM c"), [["10000", "1", "10000"]]);
    // Row 5000 + i is a copy of row i: read in key order, numbered so.
    assert_eq!(
        rows(
            &mut s,
            "SELECT COUNT(*) FROM c a JOIN c b ON b.id = a.id + 5000 WHERE a.k = b.k AND a.pad = b.pad"
        ),
        [["5000"]]
    );
    // Duplicates under IGNORE: each refused with a warning, counted.
    ok(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, pad VARCHAR(300))");
    ok(&mut s, "INSERT INTO u SELECT id, pad FROM c WHERE id <= 3000");
    let before = passes(&mut s);
    assert_eq!(affected(&mut s, "INSERT IGNORE INTO u SELECT id, pad FROM c WHERE id <= 6000"), 3000);
    assert_eq!(rows(&mut s, "SHOW WARNINGS LIMIT 1")[0][1], "1062");
    assert!(passes(&mut s) > before);
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*), SUM(LENGTH(pad)) FROM u"),
        rows(&mut s, "SELECT COUNT(*), SUM(LENGTH(pad)) FROM c WHERE id <= 6000")
    );
    // A UNION source comes back whole and is inserted the same way.
    ok(&mut s, "CREATE TABLE v (id INT PRIMARY KEY, pad VARCHAR(300))");
    assert_eq!(
        affected(
            &mut s,
            "INSERT INTO v SELECT id, pad FROM c WHERE id < 10 UNION SELECT id, pad FROM c WHERE id > 9990"
        ),
        19
    );
    assert_eq!(rows(&mut s, "CHECK TABLE c")[0][3], "OK");
    assert_eq!(rows(&mut s, "CHECK TABLE u")[0][3], "OK");
}
