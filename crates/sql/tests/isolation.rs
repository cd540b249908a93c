//! Isolation as InnoDB gives it, after Hermitage's tests and its published
//! MySQL/InnoDB results (github.com/ept/hermitage, mysql.md): plain
//! SELECTs read the snapshot (repeatable read) or the newest commit (read
//! committed); UPDATE and DELETE act on the newest committed row under its
//! write lock, waiting for a writer that holds it, never failing with a
//! write conflict.

use std::sync::mpsc;
use std::time::Duration;

mod support;
use support::embedded::{ok, rows};

use fractaldb_sql::{Database, DbOptions, Session};

fn opts() -> DbOptions {
    DbOptions { cache_size_bytes: 32 << 20, commit_sync: false, ..DbOptions::default() }
}

fn vals(s: &mut Session) -> Vec<Vec<String>> {
    rows(s, "SELECT id, value FROM test ORDER BY id")
}

/// Hermitage's set-up: `test (id, value)` holding (1, 10) and (2, 20).
fn setup(dir: &std::path::Path) -> Database {
    let db = Database::open(dir, opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE h");
    ok(&mut s, "USE h");
    ok(&mut s, "CREATE TABLE test (id INT PRIMARY KEY, value INT)");
    ok(&mut s, "INSERT INTO test VALUES (1, 10), (2, 20)");
    db
}

fn session(db: &Database, level: &str) -> Session {
    let mut s = db.session();
    ok(&mut s, "USE h");
    ok(&mut s, &format!("SET SESSION TRANSACTION ISOLATION LEVEL {level}"));
    ok(&mut s, "BEGIN");
    s
}

/// Runs `sql` on `s` in another thread: the statement must block (still
/// running after 300 ms); `release` then unblocks it, and the result comes
/// back with the session.
fn blocked(mut s: Session, sql: &'static str, release: impl FnOnce()) -> Session {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = s.execute(sql.as_bytes()).map(|_| ());
        tx.send(()).unwrap();
        (s, r)
    });
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "{sql} did not wait for the lock");
    release();
    rx.recv_timeout(Duration::from_secs(10)).expect("unblocked");
    let (s, r) = h.join().unwrap();
    r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    s
}

const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

/// G0, write cycles: prevented at every level (the second writer waits).
#[test]
fn g0_write_cycles_are_prevented() {
    for level in LEVELS {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let t2 = session(&db, level);
        ok(&mut t1, "UPDATE test SET value = 11 WHERE id = 1");
        let mut t2 = blocked(t2, "UPDATE test SET value = 12 WHERE id = 1", || {
            ok(&mut t1, "UPDATE test SET value = 21 WHERE id = 2");
            ok(&mut t1, "COMMIT");
        });
        ok(&mut t2, "UPDATE test SET value = 22 WHERE id = 2");
        ok(&mut t2, "COMMIT");
        let mut s = session(&db, level);
        assert_eq!(vals(&mut s), [["1", "12"], ["2", "22"]], "{level}");
    }
}

/// G1a and G1b, aborted and intermediate reads: prevented at read
/// committed and above.
#[test]
fn g1_dirty_reads_are_prevented() {
    for level in LEVELS.iter().take(2) {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let mut t2 = session(&db, level);
        ok(&mut t1, "UPDATE test SET value = 101 WHERE id = 1");
        assert_eq!(vals(&mut t2), [["1", "10"], ["2", "20"]]);
        ok(&mut t1, "ROLLBACK");
        assert_eq!(vals(&mut t2), [["1", "10"], ["2", "20"]]);
        let mut t1 = session(&db, level);
        ok(&mut t1, "UPDATE test SET value = 101 WHERE id = 1");
        ok(&mut t1, "UPDATE test SET value = 11 WHERE id = 1");
        ok(&mut t1, "COMMIT");
        // Read committed sees the commit; repeatable read its snapshot.
        let want = if *level == "READ COMMITTED" { "11" } else { "10" };
        assert_eq!(vals(&mut t2)[0][1], want, "{level}");
    }
}

/// PMP, predicate-many-preceders: read committed sees the new row;
/// repeatable read does not.
#[test]
fn pmp_new_rows_at_each_level() {
    for (level, want) in [("READ COMMITTED", 1), ("REPEATABLE READ", 0)] {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let mut t2 = session(&db, level);
        assert!(rows(&mut t1, "SELECT * FROM test WHERE value = 30").is_empty());
        ok(&mut t2, "INSERT INTO test VALUES (3, 30)");
        ok(&mut t2, "COMMIT");
        assert_eq!(rows(&mut t1, "SELECT * FROM test WHERE value % 3 = 0").len(), want, "{level}");
        ok(&mut t1, "COMMIT");
    }
}

/// P4, lost update, and a counter: at repeatable read InnoDB's UPDATE
/// waits for the other writer, then acts on its committed row: no error,
/// and an increment is never lost. (Hermitage marks P4 "allowed" for
/// InnoDB because T2 writes a value it computed from its snapshot; an
/// increment in SQL is not lost.)
#[test]
fn p4_updates_wait_and_act_on_the_newest_row() {
    for level in LEVELS.iter().take(2) {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let mut t2 = session(&db, level);
        assert_eq!(vals(&mut t1)[0][1], "10");
        assert_eq!(vals(&mut t2)[0][1], "10");
        ok(&mut t1, "UPDATE test SET value = value + 1 WHERE id = 1");
        let mut t2 = blocked(t2, "UPDATE test SET value = value + 1 WHERE id = 1", || ok(&mut t1, "COMMIT"));
        // Its own write is on the newest row, and visible to it.
        assert_eq!(vals(&mut t2)[0][1], "12", "{level}");
        ok(&mut t2, "COMMIT");
        // A writer that committed after this snapshot does not fail a later UPDATE.
        let mut t3 = session(&db, level);
        assert_eq!(vals(&mut t3)[0][1], "12");
        let mut t4 = session(&db, level);
        ok(&mut t4, "UPDATE test SET value = value + 1 WHERE id = 1");
        ok(&mut t4, "COMMIT");
        ok(&mut t3, "UPDATE test SET value = value + 1 WHERE id = 1");
        ok(&mut t3, "COMMIT");
        let mut s = session(&db, level);
        assert_eq!(vals(&mut s)[0][1], "14", "{level}");
    }
}

/// UPDATE and DELETE by the whole primary key read the key with a locking
/// read, as InnoDB's unique search does: a row another transaction is
/// inserting makes them wait, and once it commits they act on it (at the
/// snapshot they would have missed it). And a row whose newest committed
/// version no longer matches WHERE is left alone.
#[test]
fn writes_by_primary_key_wait_for_an_insert_and_recheck_where() {
    for level in LEVELS.iter().take(2) {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let t2 = session(&db, level);
        ok(&mut t1, "INSERT INTO test VALUES (3, 30)");
        let mut t2 = blocked(t2, "UPDATE test SET value = value + 1 WHERE id = 3", || ok(&mut t1, "COMMIT"));
        ok(&mut t2, "COMMIT");
        let mut t1 = session(&db, level);
        let t2 = session(&db, level);
        ok(&mut t1, "INSERT INTO test VALUES (4, 40)");
        let mut t2 = blocked(t2, "DELETE FROM test WHERE id = 4", || ok(&mut t1, "COMMIT"));
        ok(&mut t2, "COMMIT");
        let mut s = session(&db, level);
        assert_eq!(vals(&mut s), [["1", "10"], ["2", "20"], ["3", "31"]], "{level}");
        ok(&mut s, "COMMIT");
        // Found by a scan at the snapshot (value 10 < 15), changed by t1
        // before t2 gets its lock: t2 re-reads 100 and leaves the row.
        let mut t1 = session(&db, level);
        let t2 = session(&db, level);
        ok(&mut t1, "UPDATE test SET value = 100 WHERE id = 1");
        let mut t2 =
            blocked(t2, "UPDATE test SET value = value + 1 WHERE value < 15", || ok(&mut t1, "COMMIT"));
        ok(&mut t2, "COMMIT");
        let mut s = session(&db, level);
        assert_eq!(vals(&mut s), [["1", "100"], ["2", "20"], ["3", "31"]], "{level}");
    }
}

/// A multi-table UPDATE finds its rows through the join at its snapshot,
/// then waits for each target row's lock and acts on the newest commit (an
/// increment through a join is not lost); a multi-table DELETE skips a row
/// another transaction deleted since its snapshot.
#[test]
fn multi_table_writes_wait_and_act_on_the_newest_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path());
    let mut s = db.session();
    ok(&mut s, "USE h");
    ok(&mut s, "CREATE TABLE k (id INT PRIMARY KEY)");
    ok(&mut s, "INSERT INTO k VALUES (1), (2)");
    let mut t1 = session(&db, "REPEATABLE READ");
    let mut t2 = session(&db, "REPEATABLE READ");
    assert_eq!(vals(&mut t2)[0][1], "10");
    ok(&mut t1, "UPDATE test SET value = value + 1 WHERE id = 1");
    let mut t2 = blocked(t2, "UPDATE test JOIN k ON k.id = test.id SET test.value = test.value + 1", || {
        ok(&mut t1, "DELETE FROM test WHERE id = 2");
        ok(&mut t1, "COMMIT");
    });
    // Row 2, deleted since the snapshot, was skipped (the snapshot still shows it).
    assert_eq!(vals(&mut t2), [["1", "12"], ["2", "20"]]);
    ok(&mut t2, "COMMIT");
    let mut t3 = session(&db, "REPEATABLE READ");
    let mut t4 = session(&db, "REPEATABLE READ");
    assert_eq!(rows(&mut t3, "SELECT COUNT(*) FROM test"), [["1"]]);
    ok(&mut t4, "DELETE FROM test");
    ok(&mut t4, "COMMIT");
    match t3.execute(b"DELETE test, k FROM test JOIN k USING (id)").unwrap() {
        fractaldb_sql::Outcome::Done { affected, .. } => {
            assert_eq!(affected, 1, "only k's row was still there")
        }
        other => panic!("{other:?}"),
    }
    ok(&mut t3, "COMMIT");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM test"), [["0"]]);
    assert_eq!(rows(&mut s, "SELECT id FROM k"), [["2"]]);
}

/// G-single, read skew: prevented at repeatable read (the snapshot), seen
/// at read committed.
#[test]
fn g_single_read_skew() {
    for (level, want_y) in [("READ COMMITTED", "18"), ("REPEATABLE READ", "20")] {
        let dir = tempfile::tempdir().unwrap();
        let db = setup(dir.path());
        let mut t1 = session(&db, level);
        let mut t2 = session(&db, level);
        assert_eq!(rows(&mut t1, "SELECT value FROM test WHERE id = 1"), [["10"]]);
        ok(&mut t2, "UPDATE test SET value = 12 WHERE id = 1");
        ok(&mut t2, "UPDATE test SET value = 18 WHERE id = 2");
        ok(&mut t2, "COMMIT");
        assert_eq!(rows(&mut t1, "SELECT value FROM test WHERE id = 2"), [[want_y]], "{level}");
        ok(&mut t1, "COMMIT");
    }
}

/// G2-item, write skew: allowed at repeatable read (as in InnoDB),
/// prevented at serializable (a deadlock or lock wait ends one side).
#[test]
fn g2_item_write_skew() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path());
    let mut t1 = session(&db, "REPEATABLE READ");
    let mut t2 = session(&db, "REPEATABLE READ");
    rows(&mut t1, "SELECT * FROM test WHERE id IN (1, 2)");
    rows(&mut t2, "SELECT * FROM test WHERE id IN (1, 2)");
    ok(&mut t1, "UPDATE test SET value = 11 WHERE id = 1");
    ok(&mut t2, "UPDATE test SET value = 21 WHERE id = 2");
    ok(&mut t1, "COMMIT");
    ok(&mut t2, "COMMIT");
    let mut s = session(&db, "REPEATABLE READ");
    assert_eq!(vals(&mut s), [["1", "11"], ["2", "21"]]);
}

/// An AUTO_INCREMENT key allocated by an uncommitted insert is locked,
/// not read: another session inserting that key explicitly waits for the
/// first and then gets 1062; it never overwrites the first row.
#[test]
fn an_allocated_auto_increment_key_blocks_an_explicit_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path());
    let mut s = session(&db, "REPEATABLE READ");
    ok(&mut s, "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, who VARCHAR(5))");
    let mut t1 = session(&db, "REPEATABLE READ");
    ok(&mut t1, "INSERT INTO a (who) VALUES ('t1')");
    let mut t2 = db.session();
    ok(&mut t2, "USE h");
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = t2.execute(b"INSERT INTO a VALUES (1, 't2')").map(|_| ());
        tx.send(()).unwrap();
        r
    });
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "the explicit insert did not wait");
    ok(&mut t1, "COMMIT");
    rx.recv_timeout(Duration::from_secs(10)).expect("unblocked");
    let e = h.join().unwrap().unwrap_err();
    assert_eq!(e.code, 1062, "{e}");
    let mut s = session(&db, "REPEATABLE READ");
    assert_eq!(rows(&mut s, "SELECT id, who FROM a"), [["1", "t1"]]);
    // A value written by UPDATE moves the counter past it (as MySQL 8
    // does), so a later allocated key is never a stored row's.
    ok(&mut s, "UPDATE a SET id = 50 WHERE id = 1");
    ok(&mut s, "INSERT INTO a (who) VALUES ('next')");
    assert_eq!(rows(&mut s, "SELECT id, who FROM a ORDER BY id"), [["50", "t1"], ["51", "next"]]);
}

/// A multi-row INSERT reserves its AUTO_INCREMENT block and locks the
/// block's key range once: an explicit insert into the block waits, one
/// past it does not.
#[test]
fn a_reserved_auto_increment_block_is_locked_as_a_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path());
    let mut s = session(&db, "REPEATABLE READ");
    ok(&mut s, "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, who VARCHAR(5))");
    let mut t1 = session(&db, "REPEATABLE READ");
    ok(&mut t1, "INSERT INTO a (who) VALUES ('a'), ('b'), ('c')");
    let mut t2 = db.session();
    ok(&mut t2, "USE h");
    ok(&mut t2, "INSERT INTO a VALUES (4, 'past')");
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = t2.execute(b"INSERT INTO a VALUES (3, 'in')").map(|_| ());
        tx.send(()).unwrap();
        r
    });
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "an insert into the block did not wait");
    ok(&mut t1, "COMMIT");
    rx.recv_timeout(Duration::from_secs(10)).expect("unblocked");
    assert_eq!(h.join().unwrap().unwrap_err().code, 1062);
    let mut s = session(&db, "REPEATABLE READ");
    ok(&mut s, "INSERT INTO a (who) VALUES ('d')");
    assert_eq!(
        rows(&mut s, "SELECT id, who FROM a ORDER BY id"),
        [["1", "a"], ["2", "b"], ["3", "c"], ["4", "past"], ["5", "d"]]
    );
}

/// An XA transaction prepared in one session outlives it and a restart:
/// its rows stay invisible and locked, XA RECOVER lists it, and any
/// session ends it with XA COMMIT or XA ROLLBACK; the row count follows.
#[test]
fn a_prepared_xa_transaction_survives_its_session_and_a_restart() {
    use support::embedded::{err, one};
    let dir = tempfile::tempdir().unwrap();
    let db = setup(dir.path());
    let mut s1 = db.session();
    ok(&mut s1, "USE h");
    for sql in ["XA START 'x'", "INSERT INTO test VALUES (3, 30)", "UPDATE test SET value = 11 WHERE id = 1"]
    {
        ok(&mut s1, sql);
    }
    ok(&mut s1, "XA END 'x'");
    ok(&mut s1, "XA PREPARE 'x'");
    let mut s2 = db.session();
    ok(&mut s2, "USE h");
    ok(&mut s2, "SET tokudb_lock_timeout = 0");
    assert_eq!(rows(&mut s2, "XA RECOVER"), vec![vec!["1", "1", "0", "x"]]);
    // Still its session's: no one else ends it.
    assert_eq!(err(&mut s2, "XA COMMIT 'x'"), 1397);
    assert_eq!(err(&mut s2, "XA START 'x'"), 1440);
    assert_eq!(err(&mut s2, "UPDATE test SET value = 12 WHERE id = 1"), 1205);
    drop(s1);
    assert_eq!(rows(&mut s2, "XA RECOVER FORMAT='SQL'"), vec![vec!["1", "1", "0", "'x'"]]);
    assert_eq!(err(&mut s2, "UPDATE test SET value = 12 WHERE id = 1"), 1205);
    // A second one, from a session that then closes with the database.
    let mut s3 = db.session();
    ok(&mut s3, "USE h");
    for sql in [
        "XA START 'y', 'b', 2",
        "DELETE FROM test WHERE id = 2",
        "XA END 'y', 'b', 2",
        "XA PREPARE 'y', 'b', 2",
    ] {
        ok(&mut s3, sql);
    }
    drop((s2, s3));
    db.close().unwrap();

    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE h");
    ok(&mut s, "SET tokudb_lock_timeout = 0");
    assert_eq!(rows(&mut s, "XA RECOVER"), vec![vec!["1", "1", "0", "x"], vec!["2", "1", "1", "yb"]]);
    assert_eq!(vals(&mut s), vec![vec!["1", "10"], vec!["2", "20"]]);
    assert_eq!(err(&mut s, "UPDATE test SET value = 12 WHERE id = 1"), 1205);
    assert_eq!(err(&mut s, "DELETE FROM test WHERE id = 2"), 1205);
    // Other rows of the same table take writes: the prepared transactions'
    // row counts are engine counter deltas, which take no lock.
    ok(&mut s, "INSERT INTO test VALUES (4, 40)");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM test"), "3");
    ok(&mut s, "XA COMMIT 'x'");
    ok(&mut s, "XA ROLLBACK 'y', 'b', 2");
    assert_eq!(err(&mut s, "XA COMMIT 'x'"), 1397);
    assert_eq!(vals(&mut s), vec![vec!["1", "11"], vec!["2", "20"], vec!["3", "30"], vec!["4", "40"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM test"), "4");
    ok(&mut s, "UPDATE test SET value = 21 WHERE id = 2");
    drop(s);
    db.close().unwrap();

    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE h");
    assert!(rows(&mut s, "XA RECOVER").is_empty());
    assert_eq!(vals(&mut s), vec![vec!["1", "11"], vec!["2", "21"], vec!["3", "30"], vec!["4", "40"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM test"), "4");
}
