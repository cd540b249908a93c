//! Online schema change: metadata locks between DML and ALTER, and index
//! builds (ADD INDEX, CREATE INDEX, UNIQUE, CLUSTERING) while other
//! sessions write (`mdl.rs`, `online.rs`).
//!
//! The build is held at a point by a hook (`set_build_hook`) so the tests
//! order what happens during it by events, not by time.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Once};

use fractaldb_sql::{Database, Session};

mod support;
use support::crash::CrashChild;
use support::embedded::{err, err_msg, ok, one, rows, test_opts as opts};

type Pause = (Sender<()>, Mutex<Receiver<()>>);

/// Builds held at their first chunk, by table name: the build says it got
/// there on the first channel and waits for the second.
fn pauses() -> &'static Mutex<HashMap<String, Arc<Pause>>> {
    static P: std::sync::OnceLock<Mutex<HashMap<String, Arc<Pause>>>> = std::sync::OnceLock::new();
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        fractaldb_sql::set_build_hook(Some(Arc::new(|table: &str, point: &str| {
            if point != "chunk" {
                return;
            }
            // Each pause is used once: the first chunk of its table's build.
            let p = pauses().lock().unwrap().remove(table);
            if let Some(p) = p {
                p.0.send(()).unwrap();
                p.1.lock().unwrap().recv().unwrap();
            }
        })));
    });
    P.get_or_init(Default::default)
}

/// Holds the next build of `table` after its first chunk: returns (the
/// build got there, let it go on).
fn hold(table: &str) -> (Receiver<()>, Sender<()>) {
    let (at_tx, at_rx) = channel();
    let (go_tx, go_rx) = channel();
    pauses().lock().unwrap().insert(table.to_string(), Arc::new((at_tx, Mutex::new(go_rx))));
    (at_rx, go_tx)
}

fn session(db: &Database) -> Session {
    let mut s = db.session();
    ok(&mut s, "USE d");
    s
}

/// `n` rows: id, a = id % 97, b = 'b<id % 13>'.
fn fill(s: &mut Session, table: &str, n: u32) {
    for lo in (0..n).step_by(1000) {
        let v: Vec<String> =
            (lo..n.min(lo + 1000)).map(|i| format!("({i}, {}, 'b{}')", i % 97, i % 13)).collect();
        ok(s, &format!("INSERT INTO {table} VALUES {}", v.join(",")));
    }
}

/// The processlist row of connection `id`: State, and
/// I_S.PROCESSLIST's STAGE, MAX_STAGE and PROGRESS.
fn proc_of(s: &mut Session, id: u64) -> Vec<String> {
    rows(
        s,
        &format!(
            "SELECT STATE, STAGE, MAX_STAGE, PROGRESS FROM information_schema.PROCESSLIST WHERE ID = {id}"
        ),
    )
    .pop()
    .unwrap_or_default()
}

/// The `key` column of EXPLAIN for `sql`.
fn explain_key(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}"))[0][5].clone()
}

/// ADD INDEX (a plain and a CLUSTERING one in one statement) while three
/// sessions insert, update and delete: writers are not blocked while the
/// build is held after its first chunk, the processlist shows the build's
/// progress, and afterwards each index holds exactly the entries that the
/// ordinary write path gives the same rows in a fresh table.
#[test]
fn add_index_while_three_sessions_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20))");
    fill(&mut s, "t", 3000);
    let (at, go) = hold("t");
    let mut alter = session(&db);
    let alter_id = alter.connection_id();
    let builder = std::thread::spawn(move || {
        ok(&mut alter, "ALTER TABLE t ADD INDEX ka (a, b), ADD CLUSTERING INDEX kb (b)");
    });
    at.recv().unwrap();
    // Held after its first chunk: the writers of rows it passed and of
    // rows it has not reached finish their statements.
    let mut w = session(&db);
    ok(&mut w, "UPDATE t SET a = 1000 WHERE id = 10");
    ok(&mut w, "UPDATE t SET b = 'moved' WHERE id = 2500");
    ok(&mut w, "DELETE FROM t WHERE id IN (11, 2501)");
    ok(&mut w, "INSERT INTO t VALUES (5000, 7, 'new'), (5001, 8, 'new')");
    ok(&mut w, "BEGIN");
    ok(&mut w, "UPDATE t SET a = a + 1 WHERE id BETWEEN 20 AND 2800 AND id % 100 = 0");
    ok(&mut w, "COMMIT");
    // Not usable yet; the processlist shows how far it got.
    assert_eq!(explain_key(&mut s, "SELECT * FROM t WHERE a = 5"), "NULL");
    let p = proc_of(&mut s, alter_id);
    assert_eq!(p[..3], ["altering table", "1", "1"]);
    let progress: f64 = p[3].parse().unwrap();
    assert!(progress > 0.0 && progress < 100.0, "{p:?}");
    let show = rows(&mut s, "SHOW PROCESSLIST");
    let row = show.iter().find(|r| r[0] == alter_id.to_string()).unwrap();
    assert_eq!(row[6], "altering table");
    assert_eq!(row[8], p[3]);
    // Three writers run on while the build goes on.
    let writers: Vec<_> = (0..3u32)
        .map(|k| {
            let mut w = session(&db);
            std::thread::spawn(move || {
                for i in 0..60u32 {
                    let id = (i * 47 + k * 1000) % 3000;
                    ok(&mut w, &format!("INSERT INTO t VALUES ({}, {i}, 'w{k}')", 10_000 + k * 100 + i));
                    ok(&mut w, &format!("UPDATE t SET a = a + {k} + 1, b = 'u{i}' WHERE id = {id}"));
                    ok(&mut w, &format!("DELETE FROM t WHERE id = {}", (id + 7 + k) % 3000));
                    if i % 20 == 0 {
                        ok(&mut w, "BEGIN");
                        ok(&mut w, &format!("UPDATE t SET a = NULL WHERE id = {}", (id + 500) % 3000));
                        ok(&mut w, &format!("DELETE FROM t WHERE id = {}", 10_000 + k * 100 + i));
                        ok(&mut w, "COMMIT");
                    }
                }
            })
        })
        .collect();
    go.send(()).unwrap();
    for w in writers {
        w.join().unwrap();
    }
    builder.join().unwrap();
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
    assert_eq!(explain_key(&mut s, "SELECT * FROM t WHERE a = 5"), "ka");
    // The same rows written by INSERT into a table that has the indexes.
    ok(
        &mut s,
        "CREATE TABLE f (id INT PRIMARY KEY, a INT, b VARCHAR(20), KEY ka (a, b), CLUSTERING KEY kb (b))",
    );
    ok(&mut s, "INSERT INTO f SELECT * FROM t");
    for ix in ["ka", "kb"] {
        let built = db.index_entries("d", "t", ix).unwrap();
        let fresh = db.index_entries("d", "f", ix).unwrap();
        assert_eq!(built.len(), fresh.len(), "{ix}");
        assert!(built == fresh, "index {ix} differs from a fresh build");
    }
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM t FORCE INDEX (ka) WHERE a >= 0"),
        one(&mut s, "SELECT COUNT(*) FROM t WHERE a >= 0")
    );
}

/// An ALTER that copies the rows waits for a writer's open transaction
/// (its processlist State says why), fails with 1205 after
/// `lock_wait_timeout`, and when it does run, after the commit, keeps
/// every row the writer wrote. ADD INDEX waits the same way for its
/// registration.
#[test]
fn a_copying_alter_waits_for_an_open_writer_and_loses_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, a INT)");
    ok(&mut s, "INSERT INTO c VALUES (1, 1), (2, 2)");
    let mut w = session(&db);
    ok(&mut w, "BEGIN");
    ok(&mut w, "INSERT INTO c VALUES (3, 3)");
    let mut a = session(&db);
    ok(&mut a, "SET lock_wait_timeout = 0");
    assert_eq!(
        err_msg(&mut a, "ALTER TABLE c ADD COLUMN z INT"),
        (1205, "Lock wait timeout exceeded; try restarting transaction".into())
    );
    assert_eq!(err(&mut a, "ALTER TABLE c ADD INDEX ka (a)"), 1205);
    assert_eq!(err(&mut a, "CREATE INDEX ka ON c (a)"), 1205);
    assert_eq!(err(&mut a, "TRUNCATE TABLE c"), 1205);
    // A plain read is not held up.
    assert_eq!(one(&mut a, "SELECT COUNT(*) FROM c"), "2");
    ok(&mut a, "SET lock_wait_timeout = 86400");
    let a_id = a.connection_id();
    let alter = std::thread::spawn(move || {
        ok(&mut a, "ALTER TABLE c ADD COLUMN z INT DEFAULT 7");
        a
    });
    while proc_of(&mut s, a_id).first().map(String::as_str) != Some("Waiting for table metadata lock") {
        std::thread::yield_now();
    }
    assert_eq!(proc_of(&mut s, a_id)[1..], ["0", "0", "0.000"]);
    // The writer's transaction goes on with the table it locked.
    ok(&mut w, "INSERT INTO c VALUES (4, 4)");
    ok(&mut w, "COMMIT");
    let mut a = alter.join().unwrap();
    assert_eq!(
        rows(&mut a, "SELECT id, a, z FROM c ORDER BY id"),
        [["1", "1", "7"], ["2", "2", "7"], ["3", "3", "7"], ["4", "4", "7"]]
    );
    // Its locks went with the commit: DDL runs at once.
    ok(&mut a, "SET lock_wait_timeout = 0");
    ok(&mut a, "ALTER TABLE c DROP COLUMN z");
    // An autocommit writer holds no lock after its statement.
    ok(&mut w, "INSERT INTO c VALUES (5, 5)");
    ok(&mut a, "RENAME TABLE c TO c2");
}

/// A UNIQUE build fails with 1062 on a duplicate already there, and on one
/// a concurrent writer makes (whose own statement succeeds, as in InnoDB);
/// either way the half-built index goes with all its dictionaries.
#[test]
fn a_unique_build_fails_on_a_duplicate_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, a INT, b VARCHAR(20))");
    ok(&mut s, "INSERT INTO u VALUES (1, 5, 'x'), (2, 6, 'y'), (3, 5, 'z')");
    let before = db.dictionaries();
    assert_eq!(
        err_msg(&mut s, "ALTER TABLE u ADD UNIQUE INDEX ua (a)"),
        (1062, "Duplicate entry '5' for key 'ua'".into())
    );
    assert_eq!(db.dictionaries(), before);
    ok(&mut s, "CREATE UNIQUE INDEX ua ON u (a, b)");
    ok(&mut s, "ALTER TABLE u DROP INDEX ua");
    let before = db.dictionaries();
    // A duplicate of a row the build passed, made while it is held.
    ok(&mut s, "DELETE FROM u");
    fill(&mut s, "u", 2000);
    ok(&mut s, "UPDATE u SET a = id");
    let (at, go) = hold("u");
    let mut a = session(&db);
    let alter = std::thread::spawn(move || err_msg(&mut a, "ALTER TABLE u ADD UNIQUE INDEX ua (a)"));
    at.recv().unwrap();
    let mut w = session(&db);
    ok(&mut w, "INSERT INTO u VALUES (9000, 10, 'dup')");
    go.send(()).unwrap();
    assert_eq!(alter.join().unwrap(), (1062, "Duplicate entry '10' for key 'ua'".into()));
    assert_eq!(db.dictionaries(), before);
    assert!(!rows(&mut s, "SHOW CREATE TABLE u")[0][1].contains("ua"));
    // Without the duplicate it builds, and then guards the key.
    ok(&mut s, "DELETE FROM u WHERE id = 9000");
    ok(&mut s, "ALTER TABLE u ADD UNIQUE INDEX ua (a)");
    assert_eq!(err(&mut s, "INSERT INTO u VALUES (9001, 10, 'dup')"), 1062);
}

/// A process killed with SIGKILL in the middle of an index build leaves
/// the table as it was after reopening: no index, no dictionary the
/// catalog does not name, every row; the index builds again.
#[test]
fn a_crash_in_the_middle_of_a_build_leaves_no_half_index() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_ONLINE_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut s = session(&db);
        fractaldb_sql::set_build_hook(Some(Arc::new(|_: &str, point: &str| {
            if point == "chunk" {
                println!("building");
                loop {
                    std::thread::park();
                }
            }
        })));
        ok(&mut s, "ALTER TABLE k ADD INDEX ka (a)");
        unreachable!("the build is held until the process is killed");
    }
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE k (id INT PRIMARY KEY, a INT, b VARCHAR(20))");
        fill(&mut s, "k", 2000);
        let d = db.dictionaries();
        drop(s);
        db.close().unwrap();
        d
    };
    let mut child = CrashChild::spawn(
        "a_crash_in_the_middle_of_a_build_leaves_no_half_index",
        "FRACTALDB_SQL_ONLINE_CHILD",
        dir.path(),
    );
    let building = child.wait_for(std::time::Duration::from_secs(600), |l| l == "building");
    assert!(building, "the child never got into the build");
    child.kill();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = session(&db);
    assert_eq!(db.dictionaries(), before);
    assert!(!rows(&mut s, "SHOW CREATE TABLE k")[0][1].contains("ka"));
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM k"), "2000");
    assert_eq!(rows(&mut s, "CHECK TABLE k")[0][3], "OK");
    ok(&mut s, "ALTER TABLE k ADD INDEX ka (a)");
    assert_eq!(explain_key(&mut s, "SELECT * FROM k WHERE a = 5"), "ka");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM k WHERE a = 5"), "21");
}

/// A transaction whose snapshot is older than an index build (online
/// CREATE INDEX, and a plain ADD INDEX) reads its rows as its snapshot has
/// them, not through the new index, whose entries it cannot see; after a
/// copying ALTER (every row rewritten) its reads fail with 1412, as
/// InnoDB's do (checked on MariaDB 10.11). A new transaction uses the
/// index.
#[test]
fn an_older_snapshot_does_not_read_through_a_newer_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut a = db.session();
    ok(&mut a, "CREATE DATABASE d");
    ok(&mut a, "USE d");
    ok(&mut a, "CREATE TABLE s (id INT PRIMARY KEY, v INT, w INT)");
    ok(&mut a, "INSERT INTO s VALUES (1, 10, 100), (2, 20, 200), (3, 30, 300)");
    let snapshot = |db: &Database| {
        let mut r = session(db);
        ok(&mut r, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        ok(&mut r, "START TRANSACTION WITH CONSISTENT SNAPSHOT");
        r
    };
    for (n, build) in [(4, "CREATE INDEX iv ON s (v)"), (5, "ALTER TABLE s ADD INDEX iw (w)")] {
        let mut r = snapshot(&db);
        ok(&mut a, &format!("INSERT INTO s VALUES ({n}, {n}0, {n}00)"));
        ok(&mut a, build);
        assert_eq!(rows(&mut r, "SELECT id FROM s WHERE v = 10 AND w = 100"), [["1"]], "{build}");
        assert_eq!(
            rows(&mut r, &format!("SELECT id FROM s WHERE v = {n}0 OR w = {n}00")),
            Vec::<Vec<String>>::new()
        );
        assert_eq!(one(&mut r, "SELECT COUNT(*) FROM s WHERE v >= 10 AND w >= 100"), (n - 1).to_string());
        ok(&mut r, "COMMIT");
        assert_eq!(
            rows(&mut r, &format!("SELECT id FROM s WHERE v = {n}0 AND w = {n}00")),
            [[n.to_string()]]
        );
    }
    assert_eq!(explain_key(&mut a, "SELECT id FROM s WHERE v = 10"), "iv");
    let mut r = snapshot(&db);
    ok(&mut a, "ALTER TABLE s MODIFY w BIGINT");
    assert_eq!(
        err_msg(&mut r, "SELECT * FROM s"),
        (1412, "Table definition has changed, please retry transaction".into())
    );
    assert_eq!(err(&mut r, "SELECT COUNT(*) FROM s"), 1412);
    assert_eq!(err(&mut r, "SELECT id FROM s WHERE v = 10"), 1412);
    ok(&mut r, "ROLLBACK");
    assert_eq!(one(&mut r, "SELECT COUNT(*) FROM s"), "5");
}
