//! The bulk path of loads (`bulkload.rs`): `ALTER TABLE ... DISABLE KEYS`
//! / `ENABLE KEYS` around a dump's INSERTs and LOAD DATA into an empty
//! table defer the non-unique indexes and build them by the bulk loader.
//! The table it leaves is the ordinary path's; errors, ROLLBACK and a
//! crash leave no half load.

use fractaldb_sql::{Database, Session};

mod support;
use support::crash::CrashChild;
use support::embedded::{affected, err, err_msg, one, rows, test_opts as opts};

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
            affected(&mut s, "TRUNCATE p");
            println!("loading {i}");
            // The rows by the loader: new main and index dictionaries.
            affected(&mut s, &format!("LOAD DATA INFILE '{f}' INTO TABLE p"));
            affected(&mut s, "TRUNCATE t");
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
        affected(&mut s, &format!("CREATE TABLE p {PLAIN}"));
        drop(s);
        db.close().unwrap();
    }
    let mut child =
        CrashChild::spawn("a_killed_bulk_load_leaves_no_half_load", "FRACTALDB_SQL_BULK_CHILD", dir.path());
    // Killed in its second loads (or wherever it is by then): in p's bulk
    // load, t's, or a TRUNCATE, depending on the run.
    child.wait_for(std::time::Duration::from_secs(120), |l| l == "loading 2");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    std::thread::sleep(std::time::Duration::from_millis(u64::from(nanos % 400)));
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
    // p, loaded by the loader: empty or whole, its exact count too, its
    // indexes agreeing, and no dictionary of a half load left.
    let n = one(&mut s, "SELECT COUNT(*) FROM p");
    assert!(n == "0" || n == N.to_string(), "p: {n} rows");
    assert_eq!(rows(&mut s, "SHOW TABLE STATUS LIKE 'p'")[0][4], n);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM p WHERE id > 0"), n);
    assert_eq!(rows(&mut s, "CHECK TABLE p")[0][3], "OK");
    let by_index: u64 = (0..40)
        .map(|k| one(&mut s, &format!("SELECT COUNT(*) FROM p WHERE a = {k}")).parse::<u64>().unwrap())
        .sum();
    assert_eq!(by_index.to_string(), n);
    let named = db.table_dictionaries("d", "p").unwrap();
    let stray: Vec<String> =
        db.dictionaries().into_iter().filter(|d| d.starts_with("d/p/") && !named.contains(d)).collect();
    assert!(stray.is_empty(), "dictionaries no record names: {stray:?}");
    eprintln!("after the kill: t and p hold {} / {n} rows", one(&mut s, "SELECT COUNT(*) FROM t"));
    let before = bulk_loads(&mut s);
    affected(&mut s, "TRUNCATE p");
    let f = dir.path().join("rows.txt");
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{}' INTO TABLE p", f.display())), u64::from(N));
    assert_eq!(bulk_loads(&mut s) - before, 3);
}

// ---- LOAD DATA building the primary dictionary by the loader ----

/// No unique secondary key and no foreign key: LOAD DATA into it while it
/// is empty builds every dictionary by the bulk loader.
const PLAIN: &str = "(id INT AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL, b VARCHAR(12), u INT, \
                     KEY ka (a), KEY kb (b, a), CHECK (a >= 0))";

/// Rows 1..=300 with rows repeating a key among and after them: an
/// identical row (10), a changed one (77, three rows), 300 changed.
fn dup_lines() -> Vec<String> {
    let mut v: Vec<String> = (1..=150).map(line).collect();
    v.push(line(10));
    v.push("77\t3\tzz\t1\n".into());
    v.extend((151..=300).map(line));
    v.push("77\t4\tyy\t2\n".into());
    v.push("300\t5\txx\t3\n".into());
    v.push(line(10));
    v
}

/// Conversion warnings of every kind (outside strict mode) mixed with
/// duplicate keys and a row the CHECK refuses.
fn warning_lines() -> Vec<String> {
    let mut v: Vec<String> = (1..=40).map(line).collect();
    v.push("41\tabc\tb41\t1\n".into()); // 1366
    v.push("5\t1\tdup5\t2\n".into()); // a duplicate
    v.push("42\t3\tthis-is-far-too-long\t3\n".into()); // 1265
    v.push("43\t4\n".into()); // 1261
    v.push("44\t5\tx\t4\textra\n".into()); // 1262
    v.push("45\t\\N\tnul\t5\n".into()); // 1263 (NULL into NOT NULL)
    v.push("41\t2\tdup41\t6\n".into()); // a duplicate of a row with a warning
    v.push("46\t-1\tneg\t7\n".into()); // CHECK: 4025
    v.extend((47..=60).map(line));
    v
}

/// The lines without the one the CHECK refuses.
fn no_check(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().filter(|l| !l.contains("\t-1\t")).collect()
}

/// What a load left: its result, its warnings, the table read through
/// its rows and both indexes, its counts and AUTO_INCREMENT.
#[derive(Debug, PartialEq)]
struct Seen {
    result: support::RunResult,
    warnings: Vec<Vec<String>>,
    table: Results,
    status: Vec<String>,
}

fn seen(s: &mut Session, t: &str, result: support::RunResult) -> Seen {
    // Messages name the table: the two compared tables' names differ.
    let result = result.map_err(|(c, m)| (c, m.replace(t, "t")));
    let mut warnings = rows(s, "SHOW WARNINGS");
    warnings.iter_mut().for_each(|w| w[2] = w[2].replace(t, "t"));
    let n = one(s, &format!("SELECT COUNT(*) FROM {t}"));
    let table = if n == "0" {
        vec![rows(s, &format!("SELECT * FROM {t}")), rows(s, &format!("SELECT id FROM {t} WHERE a = 3"))]
    } else {
        contents(s, t)
    };
    let st = rows(s, &format!("SHOW TABLE STATUS LIKE '{t}'"));
    // Rows, Auto_increment.
    let status = vec![st[0][4].clone(), st[0][10].clone(), n];
    Seen { result, warnings, table, status }
}

/// One load into a new table `t`, bulk on or off: what it left, the bulk
/// loads it counted and the bytes it logged.
fn load_once(db: &Database, s: &mut Session, t: &str, sql: &str, bulk: bool) -> (Seen, u64, u64) {
    affected(s, &format!("SET SESSION fractaldb_bulk_load = {}", if bulk { "ON" } else { "OFF" }));
    affected(s, &format!("CREATE TABLE {t} {PLAIN}"));
    let (b0, log0) = (bulk_loads(s), db.engine_stats().log.bytes);
    let r = support::run_fractal(s, &sql.replace("{t}", t));
    let (b1, log1) = (bulk_loads(s), db.engine_stats().log.bytes);
    (seen(s, t, r), b1 - b0, log1 - log0)
}

/// The cases compared: (name, file lines, sql_mode, statement).
fn cases() -> Vec<(&'static str, Vec<String>, &'static str, &'static str)> {
    let strict = "STRICT_TRANS_TABLES";
    let plain: Vec<String> = (1..=3000).map(line).collect();
    let dup_conv_after: Vec<String> =
        (1..=20).map(line).chain(["5\t1\td\t1\n".into(), "21\tabc\tx\t1\n".into()]).collect();
    let conv_before_dup: Vec<String> =
        (1..=20).map(line).chain(["21\tabc\tx\t1\n".into(), "5\t1\td\t1\n".into()]).collect();
    // No id: generated, after the rows that give one.
    let auto: Vec<String> = (1..=50).map(|i| format!("{}\tv{i}\t{i}\n", i % 40)).collect();
    let mixed: Vec<String> = (1..=60)
        .map(|i| {
            let id = match i {
                20 => "1000".to_string(),
                30 => "3".to_string(),
                _ if i % 3 == 0 => "\\N".to_string(),
                _ => "0".to_string(),
            };
            format!("{id}\t{}\tm{}\t{i}\n", i % 40, i % 9)
        })
        .collect();
    vec![
        ("plain", plain, strict, "LOAD DATA INFILE '{f}' INTO TABLE {t}"),
        ("dup_error", dup_lines(), strict, "LOAD DATA INFILE '{f}' INTO TABLE {t}"),
        ("dup_ignore", dup_lines(), strict, "LOAD DATA INFILE '{f}' IGNORE INTO TABLE {t}"),
        ("dup_replace", dup_lines(), strict, "LOAD DATA INFILE '{f}' REPLACE INTO TABLE {t}"),
        ("dup_local", dup_lines(), strict, "LOAD DATA LOCAL INFILE '{f}' INTO TABLE {t}"),
        ("warn_ignore", warning_lines(), "", "LOAD DATA INFILE '{f}' IGNORE INTO TABLE {t}"),
        ("warn_ignore_nc", no_check(warning_lines()), "", "LOAD DATA INFILE '{f}' IGNORE INTO TABLE {t}"),
        ("warn_replace", no_check(warning_lines()), "", "LOAD DATA INFILE '{f}' REPLACE INTO TABLE {t}"),
        ("check_replace", warning_lines(), "", "LOAD DATA INFILE '{f}' REPLACE INTO TABLE {t}"),
        ("warn_error", warning_lines(), "", "LOAD DATA INFILE '{f}' INTO TABLE {t}"),
        ("dup_then_bad", dup_conv_after, strict, "LOAD DATA INFILE '{f}' INTO TABLE {t}"),
        ("bad_then_dup", conv_before_dup, strict, "LOAD DATA INFILE '{f}' INTO TABLE {t}"),
        (
            "auto_cols",
            auto,
            strict,
            "LOAD DATA INFILE '{f}' INTO TABLE {t} (a, @b, u) SET b = CONCAT('s', @b)",
        ),
        ("auto_mixed", mixed, strict, "LOAD DATA INFILE '{f}' IGNORE INTO TABLE {t} (id, a, b, u)"),
    ]
}

/// LOAD DATA into an empty table with no unique secondary key builds the
/// main dictionary and both indexes by the loader (three bulk loads, a
/// few log records) and leaves what the ordinary path leaves: the rows,
/// the indexes' entries, the result message, the warnings in order, the
/// errors, the counts and AUTO_INCREMENT; read again after a restart.
#[test]
fn a_load_into_an_empty_table_builds_the_primary_dictionary_by_the_loader() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    let mut kept = Vec::new();
    for (name, lines, mode, sql) in cases() {
        let f = write_file(dir.path(), &format!("{name}.txt"), lines.into_iter());
        let sql = sql.replace("{f}", &f);
        affected(&mut s, &format!("SET SESSION sql_mode = '{mode}'"));
        let (off, off_loads, off_log) = load_once(&db, &mut s, &format!("{name}_0"), &sql, false);
        let (on, on_loads, on_log) = load_once(&db, &mut s, &format!("{name}_1"), &sql, true);
        assert_eq!(on, off, "{name}");
        assert_eq!(off_loads, 0, "{name}");
        let loaded = on.result.is_ok();
        assert_eq!(on_loads, if loaded { 3 } else { 0 }, "{name}: main, ka and kb by the loader");
        if loaded {
            assert!(on_log < 40_000, "{name}: the bulk load logged {on_log} bytes");
        }
        if name == "plain" {
            // 3000 rows through the tree log far more.
            assert!(off_log > 4 * on_log, "{name}: {off_log} vs {on_log} bytes logged");
        }
        eprintln!("{name}: {:?}, logged {off_log} / {on_log}", on.result);
        kept.push((format!("{name}_1"), on));
    }
    // Into a table no longer empty: the ordinary path.
    let f = write_file(dir.path(), "more.txt", (3001..=3100).map(line));
    let before = bulk_loads(&mut s);
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{f}' INTO TABLE plain_1")), 100);
    assert_eq!(bulk_loads(&mut s), before);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM plain_1 WHERE id > 3000"), "100");
    affected(&mut s, "DELETE FROM plain_1 WHERE id > 3000");
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "USE d");
    for (t, was) in kept {
        let again = seen(&mut s, &t, was.result.clone());
        assert_eq!(again.table, was.table, "{t} after a restart");
        assert_eq!(again.status[0], was.status[0], "{t}: Rows after a restart");
    }
}

/// The duplicate-key cases on the bulk path answer as MariaDB 10.11 on
/// InnoDB does: the error, rows affected and the Records / Deleted /
/// Skipped / Warnings message (REPLACE's counts), the warnings, the rows.
#[test]
fn duplicates_in_a_bulk_load_answer_as_mariadb() {
    use support::mariadb::{self, MariaDb};
    if !mariadb::available("duplicates_in_a_bulk_load_answer_as_mariadb") {
        return;
    }
    let server = MariaDb::shared().expect("available");
    let (mut conn, mdb) = server.fresh_db("bulk_dups");
    let dir = tempfile::Builder::new().prefix("fractaldb-bulk-dups-").tempdir().unwrap();
    // MariaDB reads the file itself.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    let mut compared = 0;
    for (name, lines, mode, sql) in cases() {
        // LOCAL needs the client's file. The conversion warnings differ
        // from MariaDB's on the ordinary path as well (codes, order; a row
        // the CHECK refuses counted in Records): those cases compare with
        // the ordinary path only (the test above).
        if !["dup_error", "dup_ignore", "dup_replace"].contains(&name) {
            continue;
        }
        let f = write_file(dir.path(), &format!("{name}.txt"), lines.into_iter());
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let sql = sql.replace("{f}", &f).replace("{t}", name);
        let stmts = [
            format!("SET SESSION sql_mode = '{mode}'"),
            format!("CREATE TABLE {name} {PLAIN}"),
            sql,
            "SHOW WARNINGS".to_string(),
            format!("SELECT * FROM {name} ORDER BY id"),
            format!("SELECT COUNT(*) FROM {name}"),
        ];
        let before = bulk_loads(&mut s);
        let mut failed = false;
        for q in &stmts {
            if failed && q == "SHOW WARNINGS" {
                // An embedded session keeps no error in its warnings.
                continue;
            }
            let ours = support::run_fractal(&mut s, q).map_err(|(c, m)| (c, m.replace("`d`", "`D`")));
            let theirs =
                mariadb::run(&mut conn, q).map_err(|(c, m)| (c, m.replace(&format!("`{mdb}`"), "`D`")));
            let theirs = theirs.map(|mut r| {
                r.rows.iter_mut().flatten().flatten().for_each(|v| {
                    *v = String::from_utf8_lossy(v).replace(&format!("`{mdb}`"), "`d`").into_bytes()
                });
                r
            });
            // A result set's warning count is the previous statement's here.
            let plain = |r: support::RunResult| {
                r.map(|mut r| {
                    if r.is_result_set() {
                        r.warnings = 0;
                    }
                    r
                })
            };
            let (ours, theirs) = (plain(ours), plain(theirs));
            assert_eq!(ours, theirs, "{name}: {q}");
            failed = ours.is_err();
        }
        let loaded = one(&mut s, &format!("SELECT COUNT(*) FROM {name}")) != "0";
        assert_eq!(bulk_loads(&mut s) - before, if loaded { 3 } else { 0 }, "{name}: the bulk path");
        compared += 1;
    }
    assert_eq!(compared, 3);
}

/// A bulk load that fails (a conversion error, a duplicate key at the
/// last row) or is KILLed (while reading, sorting or loading) leaves the
/// table empty, its dictionaries the same ones, no new dictionary behind,
/// and the table takes the next load.
#[test]
fn a_failed_or_killed_bulk_load_leaves_the_empty_table() {
    const N: u32 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    affected(&mut s, &format!("CREATE TABLE t {PLAIN}"));
    let mut dicts = db.dictionaries();
    let bad = write_file(dir.path(), "bad.txt", (1..=N).map(line).chain(["0\tabc\tx\t1\n".into()]));
    let dup = write_file(dir.path(), "dup.txt", (1..=N).map(line).chain([line(5)]));
    let good = write_file(dir.path(), "good.txt", (1..=N).map(line));
    let empty = |s: &mut Session| {
        assert_eq!(one(s, "SELECT COUNT(*) FROM t"), "0");
        assert_eq!(rows(s, "SHOW TABLE STATUS LIKE 't'")[0][4], "0");
        assert_eq!(rows(s, "SELECT id FROM t WHERE a = 3"), Vec::<Vec<String>>::new());
    };
    let e = err_msg(&mut s, &format!("LOAD DATA INFILE '{bad}' INTO TABLE t"));
    assert_eq!(e, (1366, format!("Incorrect integer value: 'abc' for column `d`.`t`.`a` at row {}", N + 1)));
    empty(&mut s);
    assert_eq!(db.dictionaries(), dicts);
    let e = err_msg(&mut s, &format!("LOAD DATA INFILE '{dup}' INTO TABLE t"));
    assert_eq!(e, (1062, "Duplicate entry '5' for key 'PRIMARY'".to_string()));
    empty(&mut s);
    assert_eq!(db.dictionaries(), dicts);
    // KILLs landing at different moments of the statement.
    let mut killed = 0;
    for attempt in 0..40u64 {
        let kill = s.kill_handle();
        let q = format!("LOAD DATA INFILE '{good}' INTO TABLE t");
        let runner = std::thread::spawn(move || {
            let r = s.execute(q.as_bytes()).map(|_| ()).map_err(|e| e.code);
            (s, r)
        });
        std::thread::sleep(std::time::Duration::from_millis(attempt * 3 % 90));
        kill.kill();
        let (back, r) = runner.join().unwrap();
        s = back;
        match r {
            Err(1317) => {
                killed += 1;
                empty(&mut s);
                assert_eq!(db.dictionaries(), dicts, "attempt {attempt}: a new dictionary left behind");
            }
            Ok(()) => {
                assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE a >= 0"), N.to_string());
                affected(&mut s, "TRUNCATE t");
                dicts = db.dictionaries();
            }
            Err(e) => panic!("attempt {attempt}: error {e}"),
        }
    }
    assert!(killed > 0, "no KILL landed inside a load");
    // The table takes the next load, on the bulk path.
    let before = bulk_loads(&mut s);
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{good}' INTO TABLE t")), N as u64);
    assert_eq!(bulk_loads(&mut s) - before, 3);
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM t WHERE a = 3"),
        one(&mut s, "SELECT COUNT(*) FROM t WHERE a + 0 = 3")
    );
    assert_eq!(rows(&mut s, "CHECK TABLE t")[0][3], "OK");
}

/// A transaction begun before a bulk load (its snapshot has the table
/// empty) gets 1412 from any read of the table rather than a wrong
/// answer, through the rows or an index; after it ends it reads the load.
#[test]
fn an_older_snapshot_gets_1412_after_a_bulk_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    affected(&mut s, &format!("CREATE TABLE t {PLAIN}"));
    let f = write_file(dir.path(), "rows.txt", (1..=500).map(line));
    let mut old = db.session();
    affected(&mut old, "USE d");
    affected(&mut old, "BEGIN");
    assert_eq!(one(&mut old, "SELECT COUNT(*) FROM t"), "0");
    let before = bulk_loads(&mut s);
    assert_eq!(affected(&mut s, &format!("LOAD DATA INFILE '{f}' INTO TABLE t")), 500);
    assert_eq!(bulk_loads(&mut s) - before, 3);
    for q in [
        "SELECT * FROM t",
        "SELECT id FROM t WHERE a = 3",
        "SELECT a FROM t WHERE b = 'b3'",
        "SELECT COUNT(*) FROM t",
    ] {
        assert_eq!(err(&mut old, q), 1412, "{q}");
    }
    affected(&mut old, "COMMIT");
    assert_eq!(one(&mut old, "SELECT COUNT(*) FROM t"), "500");
    assert_eq!(
        one(&mut old, "SELECT COUNT(*) FROM t WHERE a = 3"),
        one(&mut s, "SELECT COUNT(*) FROM t WHERE a + 0 = 3")
    );
    assert_eq!(rows(&mut old, "EXPLAIN SELECT id FROM t WHERE a = 3")[0][5], "ka");
}

/// With a loader budget too small for the rows, the sorts spill to runs
/// on disk and are merged; duplicates met across runs resolve as in
/// memory (the ordinary path's table, warnings and counts).
#[test]
fn a_bulk_load_past_the_loader_budget_merges_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db"), opts()).unwrap();
    let mut s = db.session();
    affected(&mut s, "CREATE DATABASE d");
    affected(&mut s, "USE d");
    affected(&mut s, "SET SESSION tokudb_loader_memory_size = 1");
    let merges = |s: &mut Session| -> u64 {
        rows(s, "SHOW SESSION STATUS LIKE 'Sort_merge_passes'")[0][1].parse().unwrap()
    };
    let mut lines = dup_lines();
    lines.extend((301..=3000).map(line));
    lines.extend((1..=3000).step_by(97).map(line));
    let f = write_file(dir.path(), "spill.txt", lines.into_iter());
    for how in ["IGNORE", "REPLACE"] {
        let sql = format!("LOAD DATA INFILE '{f}' {how} INTO TABLE {{t}}");
        let (off, _, _) = load_once(&db, &mut s, &format!("s{how}_0"), &sql, false);
        let m0 = merges(&mut s);
        let (on, loads, _) = load_once(&db, &mut s, &format!("s{how}_1"), &sql, true);
        assert!(merges(&mut s) > m0, "{how}: the sorts did not spill");
        assert_eq!(loads, 3, "{how}");
        assert_eq!(on, off, "{how}");
    }
}
