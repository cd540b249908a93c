//! The bulk path of loads (`bulkload.rs`): `ALTER TABLE ... DISABLE KEYS`
//! / `ENABLE KEYS` around a dump's INSERTs and LOAD DATA into an empty
//! table defer the non-unique indexes and build them by the bulk loader.
//! The table it leaves is the ordinary path's; errors, ROLLBACK and a
//! crash leave no half load.

use fractaldb_sql::{Database, Session};

mod support;
use support::crash::CrashChild;
use support::embedded::{affected, err, one, rows, test_opts as opts};

const TABLE: &str = "(id INT AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL, b VARCHAR(12), u INT, \
                     UNIQUE KEY ku (u), KEY ka (a), KEY kb (b, a), CHECK (a >= 0))";

fn bulk_loads(s: &mut Session) -> u64 {
    one(s, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'FRACTALDB_BULK_LOADS'")
        .parse()
        .unwrap()
}

/// Row `i` of the loads, as LOAD DATA's tab-separated line.
fn line(i: u32) -> String {
    let b = if i.is_multiple_of(7) { "\\N".to_string() } else { format!("b{}", (i * 31) % 50) };
    let u = if i.is_multiple_of(5) { "\\N".to_string() } else { (i * 3).to_string() };
    format!("{i}\t{}\t{b}\t{u}\n", (i * 17) % 40)
}

fn write_file(dir: &std::path::Path, name: &str, lines: impl Iterator<Item = String>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, lines.collect::<String>()).unwrap();
    p.to_str().unwrap().to_string()
}

/// Result sets, one per query.
type Results = Vec<Vec<Vec<String>>>;

/// What a table holds, read through its rows, its indexes and its counts.
fn contents(s: &mut Session, t: &str) -> Results {
    // These read index ka and kb (EXPLAIN says so): their entries, not the rows.
    assert_eq!(rows(s, &format!("EXPLAIN SELECT id FROM {t} WHERE a = 3"))[0][5], "ka");
    assert_eq!(rows(s, &format!("EXPLAIN SELECT a, id FROM {t} WHERE b = 'b3'"))[0][5], "kb");
    assert_eq!(rows(s, &format!("CHECK TABLE {t}"))[0][3], "OK");
    let mut out = vec![rows(s, &format!("SELECT * FROM {t} ORDER BY id"))];
    for k in 0..40 {
        out.push(rows(s, &format!("SELECT id FROM {t} WHERE a = {k} ORDER BY id")));
    }
    for k in 0..50 {
        out.push(rows(s, &format!("SELECT a, id FROM {t} WHERE b = 'b{k}' ORDER BY a, id")));
    }
    out.push(rows(s, &format!("SELECT COUNT(*), (SELECT COUNT(*) FROM {t} WHERE id > 0) FROM {t}")));
    out.push(rows(
        s,
        &format!("SELECT AUTO_INCREMENT, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_NAME = '{t}'"),
    ));
    out
}

/// One load of each kind, with `fractaldb_bulk_load` on or off: a dump's
/// statements (LOCK TABLES, DISABLE KEYS, multi-row INSERTs with
/// generated AUTO_INCREMENT values, changes while the keys are disabled,
/// ENABLE KEYS) and LOAD DATA into an empty table.
fn load_both(s: &mut Session, dir: &std::path::Path, bulk: bool) -> (Results, Results) {
    affected(s, &format!("SET SESSION fractaldb_bulk_load = {}", if bulk { "ON" } else { "OFF" }));
    let (d, l) = if bulk { ("d1", "l1") } else { ("d0", "l0") };
    affected(s, &format!("CREATE TABLE {d} {TABLE}"));
    affected(s, &format!("CREATE TABLE {l} {TABLE}"));
    let before = bulk_loads(s);
    affected(s, &format!("LOCK TABLES {d} WRITE"));
    affected(s, &format!("ALTER TABLE {d} DISABLE KEYS"));
    let comments: Vec<String> =
        rows(s, &format!("SHOW INDEX FROM {d}")).into_iter().map(|r| r[11].clone()).collect();
    let off = if bulk { "disabled" } else { "" };
    assert_eq!(comments, ["", "", off, off, off], "PRIMARY, ku, ka, kb (two parts)");
    if bulk {
        // Not read while disabled.
        assert_eq!(rows(s, &format!("EXPLAIN SELECT id FROM {d} WHERE a = 3"))[0][5], "NULL");
    }
    for chunk in 0..3u32 {
        let values: Vec<String> = (chunk * 100 + 1..=chunk * 100 + 100)
            .map(|i| {
                let b =
                    if i.is_multiple_of(7) { "NULL".to_string() } else { format!("'b{}'", (i * 31) % 50) };
                let u = if i.is_multiple_of(5) { "NULL".to_string() } else { (i * 3).to_string() };
                format!("({i},{},{b},{u})", (i * 17) % 40)
            })
            .collect();
        assert_eq!(affected(s, &format!("INSERT INTO {d} VALUES {}", values.join(","))), 100);
    }
    // Generated AUTO_INCREMENT values go on after the rows given.
    assert_eq!(
        affected(s, &format!("INSERT INTO {d} (a, b, u) VALUES (1, 'b1', 100000), (2, 'b2', NULL)")),
        2
    );
    // The unique key is still checked while the others are deferred.
    assert_eq!(err(s, &format!("INSERT INTO {d} VALUES (1000, 1, 'x', 3), (1001, 1, 'y', 6)")), 1062);
    assert_eq!(err(s, &format!("INSERT INTO {d} VALUES (1002, -1, 'x', NULL)")), 4025);
    // Rows changed and removed while disabled leave no stale entry.
    affected(s, &format!("UPDATE {d} SET a = a + 1, b = 'b3' WHERE id % 11 = 0"));
    affected(s, &format!("DELETE FROM {d} WHERE id % 13 = 0"));
    assert_eq!(
        one(s, &format!("SELECT COUNT(*) FROM {d} WHERE a = 5")),
        one(s, &format!("SELECT COUNT(*) FROM {d} WHERE a + 0 = 5"))
    );
    affected(s, &format!("ALTER TABLE {d} ENABLE KEYS"));
    affected(s, "UNLOCK TABLES");
    assert_eq!(bulk_loads(s) - before, if bulk { 2 } else { 0 }, "ka and kb built by the loader");
    assert_eq!(affected(s, &format!("INSERT INTO {d} (a, b) VALUES (7, 'b7')")), 1);

    let f = write_file(dir, "rows.txt", (1..=300).map(line));
    let before = bulk_loads(s);
    assert_eq!(affected(s, &format!("LOAD DATA INFILE '{f}' INTO TABLE {l}")), 300);
    assert_eq!(bulk_loads(s) - before, if bulk { 2 } else { 0 });
    affected(s, &format!("UPDATE {l} SET a = a + 1, b = 'b3' WHERE id % 11 = 0"));
    affected(s, &format!("DELETE FROM {l} WHERE id % 13 = 0"));
    // Into a table that is no longer empty: the ordinary path.
    let f2 = write_file(dir, "more.txt", (301..=320).map(line));
    let before = bulk_loads(s);
    assert_eq!(affected(s, &format!("LOAD DATA INFILE '{f2}' INTO TABLE {l}")), 20);
    assert_eq!(bulk_loads(s), before);
    (contents(s, d), contents(s, l))
}

#[test]
fn the_bulk_path_leaves_the_ordinary_paths_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    let ordinary = load_both(&mut s, dir.path(), false);
    let bulk = load_both(&mut s, dir.path(), true);
    assert_eq!(bulk, ordinary);
    // The dump's table and LOAD DATA's differ only by what each did after.
    assert_eq!(bulk.0[0].len(), 300 + 2 - 300 / 13 + 1);
    drop(s);
    db.close().unwrap();
    // The rebuilt indexes after a restart.
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "USE d");
    assert_eq!(contents(&mut s, "d1"), bulk.0);
    assert_eq!(contents(&mut s, "l1"), bulk.1);
}

#[test]
fn a_failed_or_rolled_back_load_leaves_the_table_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    affected(&mut s, &format!("CREATE TABLE t {TABLE}"));
    let dup = write_file(
        dir.path(),
        "dup.txt",
        (1..=200).map(line).chain(std::iter::once("500\t1\tx\t9\n".into())),
    );
    let empty = |s: &mut Session| {
        assert_eq!(one(s, "SELECT COUNT(*) FROM t"), "0");
        assert_eq!(rows(s, "SELECT * FROM t WHERE a = 3"), Vec::<Vec<String>>::new());
        // The deferred indexes are back.
        assert!(rows(s, "SHOW INDEX FROM t").iter().all(|r| r[11].is_empty()));
    };
    // The duplicate (u = 9, row 3's) fails the load: 1062, nothing kept.
    assert_eq!(err(&mut s, &format!("LOAD DATA INFILE '{dup}' INTO TABLE t")), 1062);
    empty(&mut s);
    // IGNORE keeps the first row of each key, with a warning per duplicate.
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{dup}' IGNORE INTO TABLE t")), 200);
    assert_eq!(rows(&mut s, "SHOW WARNINGS"), [["Warning", "1062", "Duplicate entry '9' for key 'ku'"]]);
    assert_eq!(one(&mut s, "SELECT id FROM t WHERE u = 9"), "3");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE a = 1 AND b = 'x'"), "0");
    affected(&mut s, "DELETE FROM t");
    // REPLACE keeps the last.
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{dup}' REPLACE INTO TABLE t")), 202);
    assert_eq!(one(&mut s, "SELECT id FROM t WHERE u = 9"), "500");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE a = 1 AND b = 'x'"), "1");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "200");
    affected(&mut s, "TRUNCATE t");
    // Inside a transaction: ROLLBACK takes the load back.
    let ok = write_file(dir.path(), "ok.txt", (1..=200).map(line));
    affected(&mut s, "BEGIN");
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{ok}' INTO TABLE t")), 200);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE a = 3"), "5");
    affected(&mut s, "ROLLBACK");
    empty(&mut s);
    // A dump's INSERT with keys disabled is one statement too.
    affected(&mut s, "ALTER TABLE t DISABLE KEYS");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1, 1, 'x', 1), (2, 2, 'y', 1)"), 1062);
    affected(&mut s, "ALTER TABLE t ENABLE KEYS");
    empty(&mut s);
    // The next load takes the bulk path. A transaction begun before it
    // sees the table empty, through any index, until it ends.
    let mut old = db.session();
    affected(&mut old, "USE d");
    affected(&mut old, "BEGIN");
    assert_eq!(one(&mut old, "SELECT COUNT(*) FROM t"), "0");
    let before = bulk_loads(&mut s);
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{ok}' INTO TABLE t")), 200);
    assert_eq!(bulk_loads(&mut s) - before, 2);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE a = 3"), "5");
    let none = Vec::<Vec<String>>::new();
    assert_eq!(rows(&mut old, "SELECT id FROM t WHERE a = 3"), none);
    assert_eq!(rows(&mut old, "SELECT a, id FROM t WHERE a BETWEEN 3 AND 4"), none);
    assert_eq!(rows(&mut old, "SELECT b FROM t WHERE b = 'b3'"), none);
    assert_eq!(one(&mut old, "SELECT COUNT(*) FROM t"), "0");
    affected(&mut old, "COMMIT");
    assert_eq!(one(&mut old, "SELECT COUNT(*) FROM t WHERE a = 3"), "5");
    assert_eq!(rows(&mut old, "EXPLAIN SELECT id FROM t WHERE a = 3")[0][5], "ka");
}

/// A process loading a table again and again (TRUNCATE, LOAD DATA on the
/// bulk path) is killed; after reopening the table holds no row or all of
/// the load's, its indexes agree with its rows, and it takes writes.
#[test]
fn a_killed_bulk_load_leaves_no_half_load() {
    const N: u32 = 20_000;
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_BULK_CHILD") {
        let dir = std::path::PathBuf::from(dir);
        let db = Database::open(dir.join("db"), opts()).unwrap();
        let mut s = db.session();
        affected(&mut s, "USE d");
        let f = write_file(&dir, "rows.txt", (1..=N).map(line));
        for i in 1u64.. {
            affected(&mut s, "TRUNCATE t");
            println!("loading {i}");
            affected(&mut s, &format!("LOAD DATA INFILE '{f}' INTO TABLE t"));
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path().join("db"), opts()).unwrap();
        let mut s = db.session();
        affected(&mut s, "CREATE DATABASE d");
        affected(&mut s, "USE d");
        affected(&mut s, &format!("CREATE TABLE t {TABLE}"));
        drop(s);
        db.close().unwrap();
    }
    let mut child =
        CrashChild::spawn("a_killed_bulk_load_leaves_no_half_load", "FRACTALDB_SQL_BULK_CHILD", dir.path());
    // Killed in its second load (or wherever it is by then).
    child.wait_for(std::time::Duration::from_secs(120), |l| l == "loading 2");
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "USE d");
    let n = one(&mut s, "SELECT COUNT(*) FROM t");
    assert!(n == "0" || n == N.to_string(), "{n} rows");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id > 0"), n);
    // Indexes a crash left disabled are rebuilt by ENABLE KEYS.
    affected(&mut s, "ALTER TABLE t ENABLE KEYS");
    assert_eq!(rows(&mut s, "EXPLAIN SELECT id FROM t WHERE a = 3")[0][5], "ka");
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
    let by_index: u64 = (0..40)
        .map(|k| one(&mut s, &format!("SELECT COUNT(*) FROM t WHERE a = {k}")).parse::<u64>().unwrap())
        .sum();
    assert_eq!(by_index.to_string(), n);
    assert_eq!(affected(&mut s, "INSERT INTO t (a, b, u) VALUES (1, 'z', -1)"), 1);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE b = 'z'"), "1");
}
