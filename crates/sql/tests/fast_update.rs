//! Updates without reads (`tokudb_enable_fast_upsert`,
//! `tokudb_enable_fast_update`): the same table contents as the
//! read-modify-write path, under concurrent transactions, across crashes
//! and restarts, with exact row counts.

use fractaldb_sql::{Database, Outcome, Session};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

mod support;
use support::crash::{last_number, CrashChild};
use support::embedded::{affected, one, rows, test_opts as opts};

fn run(s: &mut Session, sql: &str) -> Result<Outcome, u16> {
    s.execute(sql.as_bytes()).map_err(|e| e.code)
}

fn fast_count(s: &mut Session) -> u64 {
    one(s, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'FRACTALDB_FAST_UPDATES'")
        .parse()
        .unwrap()
}

fn fast(s: &mut Session, on: bool) {
    let v = if on { "ON" } else { "OFF" };
    affected(s, &format!("SET SESSION tokudb_enable_fast_upsert = {v}, tokudb_enable_fast_update = {v}"));
}

const TABLE: &str = "(id INT PRIMARY KEY, a BIGINT NOT NULL DEFAULT 0, u INT UNSIGNED, s VARCHAR(8), n INT)";

/// One random statement on table `{t}` touching key `k`.
fn statement(rng: &mut SmallRng, k: u32) -> String {
    let (a, u, n) = (rng.gen_range(-50..50), rng.gen_range(0..9), rng.gen_range(0..5));
    let s = ["x", "yy", "zzz", "é"][rng.gen_range(0..4)];
    match rng.gen_range(0..10) {
        0..=3 => format!(
            "INSERT INTO {{t}} VALUES ({k}, {a}, {u}, '{s}', NULL) ON DUPLICATE KEY UPDATE a = a + VALUES(a), s = VALUES(s), u = u + 1"
        ),
        4 => format!(
            "INSERT INTO {{t}} (id, a, n) VALUES ({k}, {a}, {n}), ({}, 1, 1) ON DUPLICATE KEY UPDATE n = {n}, a = a - 2",
            k + 1
        ),
        5..=6 => format!("UPDATE {{t}} SET a = a + {a}, s = '{s}', u = 3 + u WHERE id = {k}"),
        7 => format!("UPDATE {{t}} SET n = NULL, a = a - 1 WHERE id = {k}"),
        8 => format!("DELETE FROM {{t}} WHERE id = {k}"),
        _ => format!("INSERT IGNORE INTO {{t}} VALUES ({k}, 7, 7, 'i', 7)"),
    }
}

fn contents(s: &mut Session, t: &str) -> Vec<Vec<String>> {
    rows(s, &format!("SELECT * FROM {t} ORDER BY id"))
}

/// The count kept by the table (COUNT(*) alone) and the rows counted.
fn counts(s: &mut Session, t: &str) -> (String, String) {
    (
        one(s, &format!("SELECT COUNT(*) FROM {t}")),
        one(s, &format!("SELECT COUNT(*) FROM {t} WHERE id IS NOT NULL")),
    )
}

#[test]
fn fast_and_ordinary_paths_leave_the_same_rows_and_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    affected(&mut s, &format!("CREATE TABLE f {TABLE}"));
    affected(&mut s, &format!("CREATE TABLE o {TABLE}"));
    // One session, alternating: table f through the fast path, o through
    // the ordinary one.
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..300 {
        let k = rng.gen_range(0..40);
        let st = statement(&mut rng, k);
        fast(&mut s, true);
        let rf = run(&mut s, &st.replace("{t}", "f")).err();
        fast(&mut s, false);
        let ro = run(&mut s, &st.replace("{t}", "o")).err();
        assert_eq!(rf, ro, "{st}");
    }
    assert!(fast_count(&mut s) > 100, "the fast path ran");
    assert_eq!(contents(&mut s, "f"), contents(&mut s, "o"));
    let (kept, counted) = counts(&mut s, "f");
    assert_eq!(kept, counted);
    assert_eq!(counts(&mut s, "o"), (kept.clone(), counted));

    // Several sessions at once, each transaction on one key of both
    // tables (f, then o: no lock cycle), committed or rolled back; a
    // failed statement rolls the whole transaction back so both tables
    // stay alike.
    // What each session did, in order, printed if the tables differ.
    let history = std::sync::Mutex::new(Vec::<String>::new());
    std::thread::scope(|sc| {
        for th in 0..4u64 {
            let db = &db;
            let history = &history;
            sc.spawn(move || {
                let log = |line: String| history.lock().unwrap().push(format!("s{th}: {line}"));
                let mut s = db.session();
                affected(&mut s, "USE d");
                // An update message acts on the newest committed row, as
                // InnoDB's UPDATE does; this engine's ordinary UPDATE picks
                // its rows from the REPEATABLE READ snapshot (see
                // ARCHITECTURE.md), so the two are compared where both
                // read the newest committed rows.
                affected(&mut s, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
                let mut rng = SmallRng::seed_from_u64(100 + th);
                for _ in 0..60 {
                    let k = rng.gen_range(0..12);
                    affected(&mut s, "BEGIN");
                    log(format!("BEGIN k={k}"));
                    // Stop at the first failure: a deadlock victim (1213)
                    // loses its whole transaction, as in InnoDB, and the
                    // statements after it would run in autocommit on one
                    // table and not the other.
                    let mut failed = false;
                    for _ in 0..3 {
                        let st = statement(&mut rng, k);
                        fast(&mut s, true);
                        let rf = run(&mut s, &st.replace("{t}", "f"));
                        log(format!("f {st} -> {rf:?}"));
                        if rf.is_err() {
                            failed = true;
                            break;
                        }
                        fast(&mut s, false);
                        let ro = run(&mut s, &st.replace("{t}", "o"));
                        log(format!("o {st} -> {ro:?}"));
                        if ro.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    if failed || rng.gen_bool(0.2) {
                        affected(&mut s, "ROLLBACK");
                        log("ROLLBACK".into());
                    } else {
                        affected(&mut s, "COMMIT");
                        log("COMMIT".into());
                    }
                }
            });
        }
    });
    let (cf, co) = (contents(&mut s, "f"), contents(&mut s, "o"));
    if cf != co {
        for line in history.lock().unwrap().iter() {
            eprintln!("{line}");
        }
    }
    assert_eq!(cf, co);
    let (kept, counted) = counts(&mut s, "f");
    assert_eq!(kept, counted);
    assert_eq!(counts(&mut s, "o").0, kept);
    // Blind upserts left uncounted, then a restart: still exact.
    fast(&mut s, true);
    affected(&mut s, "INSERT INTO f VALUES (500, 1, 1, 'r', 1) ON DUPLICATE KEY UPDATE a = a + 1");
    affected(&mut s, "INSERT INTO f VALUES (0, 1, 1, 'r', 1) ON DUPLICATE KEY UPDATE a = a + 1");
    let want = contents(&mut s, "f");
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "USE d");
    assert_eq!(contents(&mut s, "f"), want);
    let (kept, counted) = counts(&mut s, "f");
    assert_eq!(kept, counted);
    assert_eq!(kept, want.len().to_string());
    // Settled by that count: a later one reads the kept deltas, exact.
    affected(&mut s, "DELETE FROM f WHERE id = 500");
    assert_eq!(counts(&mut s, "f").0, (want.len() - 1).to_string());
}

#[test]
fn what_the_fast_path_takes_and_what_it_tells() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    assert_eq!(one(&mut s, "SELECT @@tokudb_enable_fast_upsert"), "0");
    assert_eq!(one(&mut s, "SELECT @@GLOBAL.tokudb_enable_fast_update"), "0");
    affected(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, c TINYINT, v VARCHAR(3), w INT, KEY (w))");
    affected(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, c INT, v INT, UNIQUE KEY (v))");
    let up = "INSERT INTO t (id, c, v) VALUES (1, 120, 'a') ON DUPLICATE KEY UPDATE c = c + 100";
    // Off: MySQL's affected rows.
    assert_eq!(affected(&mut s, up), 1);
    assert_eq!(fast_count(&mut s), 0);
    fast(&mut s, true);
    // A table with a secondary index takes no blind upsert (the row it may
    // insert needs its entries): the ordinary path, its error.
    assert_eq!(run(&mut s, up).err(), Some(1264));
    assert_eq!(fast_count(&mut s), 0);
    // UPDATE by the whole primary key, of a column in no index: no read,
    // 0 rows affected (nothing is known of the row); a sum beyond the
    // column's range is clamped (TokuDB's rule).
    assert_eq!(affected(&mut s, "UPDATE t SET c = c + 100, v = 'b' WHERE id = 1"), 0);
    assert_eq!(fast_count(&mut s), 1);
    assert_eq!(rows(&mut s, "SELECT c, v FROM t"), [["127", "b"]]);
    // Constants are still converted and checked when the statement runs.
    assert_eq!(run(&mut s, "UPDATE t SET v = 'long' WHERE id = 1").err(), Some(1406));
    // Not eligible: an indexed column, a WHERE that is not the key, a row
    // read in SET: the ordinary path and MySQL's counts.
    assert_eq!(affected(&mut s, "UPDATE t SET w = 5 WHERE id = 1"), 1);
    assert_eq!(affected(&mut s, "UPDATE t SET c = 0 WHERE id > 0"), 1);
    assert_eq!(affected(&mut s, "UPDATE t SET c = w WHERE id = 1"), 1);
    assert_eq!(fast_count(&mut s), 1);
    // An UPDATE of a missing row stays a missing row.
    assert_eq!(affected(&mut s, "UPDATE t SET c = 1 WHERE id = 2"), 0);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "1");
    // Upserts into a table whose only other key is not unique... u has a
    // unique key: the ordinary path.
    assert_eq!(affected(&mut s, "INSERT INTO u VALUES (1, 1, 1) ON DUPLICATE KEY UPDATE c = c + 1"), 1);
    assert_eq!(fast_count(&mut s), 2);
    affected(&mut s, "CREATE TABLE p (id INT PRIMARY KEY, c BIGINT UNSIGNED NOT NULL)");
    let upsert = "INSERT INTO p VALUES (1, 5), (1, 7) ON DUPLICATE KEY UPDATE c = c - VALUES(c)";
    assert_eq!(affected(&mut s, upsert), 0);
    assert_eq!(fast_count(&mut s), 4);
    assert_eq!(rows(&mut s, "SELECT * FROM p"), [["1", "0"]]);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM p"), "1");
    // A string key is found by its collation's key: 'a' is the row 'A'
    // (utf8mb4_general_ci), but a binary comparison takes the ordinary
    // path and matches no row.
    affected(&mut s, "CREATE TABLE k (k VARCHAR(5) PRIMARY KEY, n INT)");
    affected(&mut s, "INSERT INTO k VALUES ('A', 1)");
    assert_eq!(affected(&mut s, "UPDATE k SET n = n + 1 WHERE k = 'a'"), 0);
    assert_eq!(fast_count(&mut s), 5);
    assert_eq!(affected(&mut s, "UPDATE k SET n = n + 1 WHERE k = BINARY 'a'"), 0);
    assert_eq!(fast_count(&mut s), 5);
    assert_eq!(rows(&mut s, "SELECT * FROM k"), [["A", "2"]]);
    // A NULL for a NOT NULL column leaves the fast path: 1048 as usual.
    assert_eq!(run(&mut s, "INSERT INTO p VALUES (1, 1) ON DUPLICATE KEY UPDATE c = NULL").err(), Some(1048));
}

/// A child process runs transactions that change both tables alike (f
/// through blind upserts and updates, o through the ordinary path) and is
/// killed;
/// after reopening both are alike, hold every acknowledged transaction,
/// and count exactly.
#[test]
fn a_killed_process_keeps_acknowledged_blind_upserts_and_updates() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_FAST_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut s = db.session();
        affected(&mut s, "USE d");
        let mut rng = SmallRng::seed_from_u64(std::process::id() as u64);
        for i in 0u64.. {
            affected(&mut s, "BEGIN");
            for _ in 0..4 {
                let k = rng.gen_range(1..200);
                let v = rng.gen_range(1..1000);
                for (t, on) in [("f", 1), ("o", 0)] {
                    affected(&mut s, &format!("SET tokudb_enable_fast_upsert = {on}"));
                    affected(
                        &mut s,
                        &format!(
                            "INSERT INTO {t} VALUES ({k}, {v}) ON DUPLICATE KEY UPDATE c = c + VALUES(c)"
                        ),
                    );
                    affected(
                        &mut s,
                        &format!("INSERT INTO {t} VALUES (0, 1) ON DUPLICATE KEY UPDATE c = c + 1"),
                    );
                }
                let (k, v) = (rng.gen_range(1..200), rng.gen_range(-500..500));
                for (t, on) in [("f", 1), ("o", 0)] {
                    affected(&mut s, &format!("SET tokudb_enable_fast_update = {on}"));
                    affected(&mut s, &format!("UPDATE {t} SET c = c + {v} WHERE id = {k}"));
                }
            }
            affected(&mut s, "COMMIT");
            if i == 0 {
                // f's 8 upserts and 4 updates went the fast way.
                assert_eq!(fast_count(&mut s), 12);
            }
            println!("committed {}", i + 1);
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        affected(&mut s, "CREATE DATABASE d");
        affected(&mut s, "USE d");
        affected(&mut s, "CREATE TABLE f (id INT PRIMARY KEY, c BIGINT NOT NULL)");
        affected(&mut s, "CREATE TABLE o (id INT PRIMARY KEY, c BIGINT NOT NULL)");
        drop(s);
        db.close().unwrap();
    }
    let mut acked_total = 0u64;
    for round in 0..2u64 {
        let mut child = CrashChild::spawn(
            "a_killed_process_keeps_acknowledged_blind_upserts_and_updates",
            "FRACTALDB_SQL_FAST_CHILD",
            dir.path(),
        );
        // Killed once it has acknowledged some transactions (or has died).
        let target = format!("committed {}", 20 + 30 * round);
        child.wait_for(std::time::Duration::from_secs(60), |l| l == target);
        let acked = last_number(&child.kill(), "committed ").unwrap_or(0);
        assert!(acked > 0, "the child committed nothing");
        acked_total += acked;
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        affected(&mut s, "USE d");
        let f = contents(&mut s, "f");
        assert_eq!(f, contents(&mut s, "o"));
        // Row 0 counts the transactions: every acknowledged one is there
        // (the one in flight may be too).
        let committed: u64 = f[0][1].parse::<u64>().unwrap() / 4;
        assert!(committed >= acked_total && committed <= acked_total + 1, "{committed} vs {acked_total}");
        acked_total = committed;
        let (kept, counted) = counts(&mut s, "f");
        assert_eq!(kept, counted);
        assert_eq!(kept, f.len().to_string());
        assert_eq!(counts(&mut s, "o").0, kept);
        drop(s);
        db.close().unwrap();
    }
}
