//! Instant column changes (`instant.rs`): ADD / DROP / RENAME / move /
//! widen a column without rewriting a row, read the same as the copy
//! path over rows of many versions, under concurrent writers, across a
//! SIGKILL, after OPTIMIZE and a restart. (ALGORITHM= and LOCK=, checked
//! against MariaDB: golden/instant_alter.sql.)

use fractaldb_sql::{Database, Outcome, Session};

mod support;
use support::crash::{last_number, CrashChild};
use support::embedded::{ok, rows, run, test_opts as opts};

fn files(s: &mut Session, table: &str) -> Vec<Vec<String>> {
    rows(
        s,
        &format!(
            "SELECT dictionary_name, internal_file_name FROM information_schema.TOKUDB_FILE_MAP \
             WHERE table_schema = 'd' AND table_name = '{table}' ORDER BY 1"
        ),
    )
}

/// The instant ALTER's answer: 0 rows, MariaDB's info line.
fn instant(s: &mut Session, sql: &str) {
    match run(s, sql) {
        Outcome::Done { affected, info, .. } => {
            assert_eq!(affected, 0, "{sql}");
            assert_eq!(info.as_deref(), Some("Records: 0  Duplicates: 0  Warnings: 0"), "{sql}");
        }
        other => panic!("{sql}: {other:?}"),
    }
}

/// What must read the same on `a` (instant changes) and `b` (copies).
fn compare(s: &mut Session, when: &str) {
    for q in [
        "SELECT * FROM {} ORDER BY id",
        "SELECT * FROM {} FORCE INDEX (kw) ORDER BY w, id",
        "SELECT COUNT(*), SUM(id) FROM {}",
        "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, COLUMN_TYPE FROM \
         information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = '{}' ORDER BY ORDINAL_POSITION",
    ] {
        let a = rows(s, &q.replace("{}", "a"));
        let b = rows(s, &q.replace("{}", "b"));
        assert_eq!(a, b, "{when}: {q}");
    }
    let show =
        |s: &mut Session, t: &str| rows(s, &format!("SHOW CREATE TABLE {t}"))[0][1].replacen(t, "T", 1);
    assert_eq!(show(s, "a"), show(s, "b"), "{when}");
}

/// The same changes, mixed with writes, on `a` (instant: its dictionaries
/// are never replaced) and `b` (ALGORITHM=COPY): the rows, the clustering
/// index's rows, SHOW CREATE TABLE and INFORMATION_SCHEMA.COLUMNS agree
/// at every step, after OPTIMIZE and after a restart.
#[test]
fn instant_changes_read_like_copies_over_rows_of_many_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "SET timestamp = 1700000000");
    for t in ["a", "b"] {
        ok(
            &mut s,
            &format!(
                "CREATE TABLE {t} (id INT PRIMARY KEY, v INT, w VARCHAR(10), z VARCHAR(10), n INT UNSIGNED, \
                 e ENUM('x','y'), CLUSTERING KEY kw (w))"
            ),
        );
        let values: Vec<String> = (1..=30)
            .map(|i| {
                let z = if i % 4 == 0 { "NULL".to_string() } else { format!("'z{i}'") };
                format!(
                    "({i}, {}, 'w{}', {z}, {}, '{}')",
                    i * 10,
                    i % 7,
                    4_000_000_000u64 - i,
                    ["x", "y"][i as usize % 2]
                )
            })
            .collect();
        ok(&mut s, &format!("INSERT INTO {t} VALUES {}", values.join(",")));
    }
    let a_files = files(&mut s, "a");
    let steps: &[(&str, &[&str])] = &[
        ("ADD COLUMN c INT NOT NULL DEFAULT 7", &["INSERT INTO {} (id, v, w, c) VALUES (100, 1, 'new', 8)", "UPDATE {} SET v = v + 1 WHERE id % 3 = 0"]),
        ("ADD COLUMN t VARCHAR(5) DEFAULT 'dd' FIRST", &["DELETE FROM {} WHERE id % 5 = 0", "INSERT INTO {} (id, w) VALUES (101, 'w1')"]),
        ("DROP COLUMN v", &["UPDATE {} SET c = c * 2 WHERE id < 10"]),
        ("RENAME COLUMN c TO c2", &["INSERT INTO {} (id, c2, z) VALUES (102, 5, 'zz')"]),
        ("MODIFY n BIGINT", &["UPDATE {} SET n = -n WHERE id = 2"]),
        ("MODIFY z VARCHAR(30) AFTER t, MODIFY e ENUM('x','y','q')", &["INSERT INTO {} (id, z, e) VALUES (103, REPEAT('z', 25), 'q')"]),
        ("ADD COLUMN ts DATETIME DEFAULT '2020-01-02 03:04:05' AFTER id, ADD COLUMN dd DECIMAL(6,2) DEFAULT 1.5", &["UPDATE {} SET dd = dd + id WHERE id > 20"]),
        ("MODIFY dd DECIMAL(9,2), DROP COLUMN t", &["DELETE FROM {} WHERE id = 101"]),
        ("ADD COLUMN k INT DEFAULT 3, ADD KEY kk (k)", &["UPDATE {} SET k = id WHERE id < 5"]),
        // Existing rows get the ALTER's time (as in MariaDB); both ALTERs run at one.
        ("ADD COLUMN at TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP", &["INSERT INTO {} (id) VALUES (104)"]),
    ];
    for (change, writes) in steps {
        instant(&mut s, &format!("ALTER TABLE a {change}"));
        ok(&mut s, &format!("ALTER TABLE b {change}, ALGORITHM=COPY"));
        compare(&mut s, change);
        for w in *writes {
            ok(&mut s, &w.replace("{}", "a"));
            ok(&mut s, &w.replace("{}", "b"));
        }
        compare(&mut s, change);
    }
    // Not one dictionary of `a` was replaced (only `kk` added); every copy replaced `b`'s.
    let mut now = files(&mut s, "a");
    now.retain(|r| !r[0].contains("key-kk"));
    assert_eq!(now, a_files);
    // The index added with a column was built from rows of older versions.
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*) FROM a FORCE INDEX (kk) WHERE k = 3"),
        rows(&mut s, "SELECT COUNT(*) FROM b IGNORE INDEX (kk) WHERE k = 3")
    );
    ok(&mut s, "OPTIMIZE TABLE a");
    compare(&mut s, "after OPTIMIZE");
    assert_eq!(rows(&mut s, "CHECK TABLE a")[0][3], "OK");
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    compare(&mut s, "after a restart");
    // A copy forgets the old layouts and rewrites every row.
    ok(&mut s, "ALTER TABLE a ADD COLUMN late INT DEFAULT 1, ALGORITHM=COPY");
    ok(&mut s, "ALTER TABLE b ADD COLUMN late INT DEFAULT 1");
    compare(&mut s, "after a copy");
}

fn retryable(code: u16) -> bool {
    // 1412: the statement opened the table before an ALTER committed.
    matches!(code, 1412 | 1213 | 1205)
}

/// Three sessions insert, update and delete (each its own rows) while a
/// fourth adds and drops columns instantly: afterwards every row is what
/// its writer last wrote, the added column holds its default everywhere,
/// and CHECK TABLE finds the indexes right.
#[test]
fn instant_changes_while_three_sessions_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT, KEY kv (v))");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3i64)
        .map(|w| {
            let mut s = db.session();
            let stop = stop.clone();
            std::thread::spawn(move || {
                ok(&mut s, "USE d");
                let mut want = std::collections::BTreeMap::new();
                let mut i = 0i64;
                while !stop.load(Ordering::SeqCst) || i < 60 {
                    let id = w * 100_000 + i % 50;
                    let sql = match i % 3 {
                        0 if !want.contains_key(&id) => format!("INSERT INTO t (id, v) VALUES ({id}, {i})"),
                        0 | 1 if want.contains_key(&id) => format!("UPDATE t SET v = {i} WHERE id = {id}"),
                        _ => format!("DELETE FROM t WHERE id = {id}"),
                    };
                    match s.execute(sql.as_bytes()) {
                        Ok(_) => {
                            if sql.starts_with("DELETE") {
                                want.remove(&id);
                            } else {
                                want.insert(id, i);
                            }
                            i += 1;
                        }
                        Err(e) if retryable(e.code) => {}
                        Err(e) => panic!("{sql}: {e}"),
                    }
                }
                want
            })
        })
        .collect();
    for round in 0..6 {
        instant(&mut s, &format!("ALTER TABLE t ADD COLUMN c{round} INT DEFAULT 7"));
        if round > 0 {
            instant(&mut s, &format!("ALTER TABLE t DROP COLUMN c{}", round - 1));
        }
    }
    stop.store(true, Ordering::SeqCst);
    let mut want: Vec<Vec<String>> = Vec::new();
    for w in workers {
        for (id, v) in w.join().unwrap() {
            want.push(vec![id.to_string(), v.to_string(), "7".into()]);
        }
    }
    want.sort_by_key(|r| r[0].parse::<i64>().unwrap());
    assert_eq!(rows(&mut s, "SELECT id, v, c5 FROM t ORDER BY id"), want);
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*) FROM t FORCE INDEX (kv) WHERE v >= 0")[0][0],
        want.len().to_string()
    );
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
}

/// A child process adds and drops columns while another of its sessions
/// inserts, and is killed with SIGKILL: after reopening the table has the
/// definition of some ALTER the child ran (every column's default in every
/// row), every acknowledged row is there and CHECK TABLE is OK.
#[test]
fn a_crash_between_instant_changes_keeps_a_whole_definition() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_INSTANT_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut w = db.session();
        ok(&mut w, "USE d");
        std::thread::spawn(move || {
            for i in 0.. {
                let sql = format!("INSERT INTO t (id, v) VALUES ({}, {i})", 1000 + i);
                match w.execute(sql.as_bytes()) {
                    Ok(_) => println!("wrote {}", i + 1),
                    Err(e) if retryable(e.code) => {}
                    Err(e) => panic!("{sql}: {e}"),
                }
            }
        });
        let mut s = db.session();
        ok(&mut s, "USE d");
        for i in 0.. {
            ok(&mut s, &format!("ALTER TABLE t ADD COLUMN a{i} INT DEFAULT {i}"));
            ok(&mut s, &format!("ALTER TABLE t DROP COLUMN a{i}, ADD COLUMN b{i} VARCHAR(5) DEFAULT 'b'"));
            ok(&mut s, &format!("ALTER TABLE t DROP COLUMN b{i}"));
            println!("altered {i}");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT, KEY kv (v))");
        let values: Vec<String> = (0..500).map(|i| format!("({i}, {i})")).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
        drop(s);
        db.close().unwrap();
    }
    let mut child = CrashChild::spawn(
        "a_crash_between_instant_changes_keeps_a_whole_definition",
        "FRACTALDB_SQL_INSTANT_CHILD",
        dir.path(),
    );
    let altered = child.wait_for(std::time::Duration::from_secs(600), |l| l == "altered 2");
    assert!(altered, "the child altered nothing");
    let wrote = last_number(&child.kill(), "wrote ").unwrap_or(0);
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    let cols = rows(&mut s, "SHOW COLUMNS FROM t");
    let names: Vec<&str> = cols.iter().map(|r| r[0].as_str()).collect();
    assert!(names.len() <= 3 && names[..2] == ["id", "v"], "{names:?}");
    if let Some(extra) = names.get(2) {
        // Every row holds the added column's default.
        let want = extra.strip_prefix('a').map_or("b".to_string(), str::to_string);
        assert_eq!(rows(&mut s, &format!("SELECT DISTINCT {extra} FROM t")), [[want]]);
    }
    let n: u64 = rows(&mut s, "SELECT COUNT(*) FROM t WHERE id >= 1000")[0][0].parse().unwrap();
    assert!(n >= wrote, "{n} rows, {wrote} acknowledged");
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM t WHERE id < 1000 AND v = id")[0][0], "500");
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
}

/// ALTER ADD COLUMN on a table of `FRACTALDB_INSTANT_BENCH_ROWS` rows (1M
/// by default), instant and then ALGORITHM=COPY, timed (docs/benchmarks-sql.md):
/// `cargo test -p fractaldb-sql --test instant_alter -- --ignored --nocapture bench`
#[test]
#[ignore]
fn bench_add_column_instant_vs_copy() {
    let n: usize =
        std::env::var("FRACTALDB_INSTANT_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), fractaldb_sql::DbOptions { commit_sync: false, ..opts() }).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT, w VARCHAR(20), KEY kv (v))");
    for lo in (0..n).step_by(5000) {
        let values: Vec<String> =
            (lo..(lo + 5000).min(n)).map(|i| format!("({i}, {}, 'row{i}')", i % 1000)).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    }
    let t = std::time::Instant::now();
    instant(&mut s, "ALTER TABLE t ADD COLUMN c1 INT DEFAULT 1");
    let fast = t.elapsed();
    let t = std::time::Instant::now();
    ok(&mut s, "ALTER TABLE t ADD COLUMN c2 INT DEFAULT 2, ALGORITHM=COPY");
    let copy = t.elapsed();
    println!(
        "rows {n}: instant {fast:?}, copy {copy:?}, ratio {:.0}",
        copy.as_secs_f64() / fast.as_secs_f64()
    );
}
