//! mariadb-dump round trip: tests/dump_fill.sql fills a database on a
//! fractaldb server (through the `mariadb` client), `mariadb-dump` dumps it
//! over TCP, with --single-transaction --routines --events and with its
//! default options, and each dump is loaded (again through `mariadb`) into
//! a fresh fractaldb server and into a private MariaDB 10.11. Every table's
//! rows, read through the binary protocol in primary key order, must equal
//! the source's; the view, the AUTO_INCREMENT counter and the foreign key
//! must have come across too. Skipped without the MariaDB programs, except
//! under CI=true.

mod support;

// fractaldb-sql's test support: its private MariaDB harness.
#[path = "../../sql/tests/support/mod.rs"]
mod sqlsupport;

use std::path::Path;
use std::process::{Command, Stdio};

use mysql::prelude::Queryable;
use sqlsupport::mariadb::{self, MariaDb};
use support::{need_program, tests_dir, TestServer};

/// The tables of dump_fill.sql and the key that orders their rows.
const TABLES: &[(&str, &str)] = &[
    ("parent", "id"),
    ("alltypes", "id"),
    ("big", "id"),
    ("`we``ird name`", "`col ``x`` 1`"),
    ("empty_t", "a"),
    ("extras", "id"),
    ("v_parent", "id"),
    ("zoned", "id"),
];

/// The instants of table `zoned` (written under time_zone '+05:00'), as
/// Unix seconds: the same wherever the dump is loaded, whatever the
/// reading session's zone.
fn instants(c: &mut mysql::Conn) -> Vec<Option<String>> {
    c.query_drop("SET time_zone = '-03:00'").unwrap();
    let r = c.query("SELECT UNIX_TIMESTAMP(ts) FROM dumpsrc.zoned ORDER BY id").unwrap();
    c.query_drop("SET time_zone = DEFAULT").unwrap();
    r
}

const INSTANTS: [Option<&str>; 4] = [Some("1704067200.250"), Some("1.000"), Some("2147483647.000"), None];

/// Runs the `mariadb` client on `script` against 127.0.0.1:`port`.
fn mariadb_cli(bin: &Path, port: u16, db: Option<&str>, script: &[u8]) {
    let mut cmd = Command::new(bin);
    cmd.args(["--no-defaults", "--default-character-set=utf8mb4", "-h127.0.0.1", "-uroot"])
        .arg(format!("-P{port}"))
        .args(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("running mariadb");
    let mut stdin = child.stdin.take().unwrap();
    let script = script.to_vec();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&script);
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "mariadb on port {port} failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn dump(bin: &Path, port: u16, extra: &[&str]) -> Vec<u8> {
    let o = Command::new(bin)
        .args(["--no-defaults", "-h127.0.0.1", "-uroot"])
        .arg(format!("-P{port}"))
        .args(extra)
        .args(["--databases", "dumpsrc"])
        .output()
        .expect("running mariadb-dump");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "mariadb-dump {extra:?} failed ({}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("-- Dump completed"), "dump {extra:?} not complete:\n{text}");
    o.stdout
}

type Table = Vec<Vec<mysql::Value>>;

/// Every table's rows, through the binary protocol (so a FLOAT is compared
/// as the float it is, not as its decimal text).
fn contents(c: &mut mysql::Conn) -> Vec<(String, Table)> {
    TABLES
        .iter()
        .map(|(t, key)| {
            let rows: Vec<mysql::Row> =
                c.exec(format!("SELECT * FROM dumpsrc.{t} ORDER BY {key}"), ()).unwrap();
            (t.to_string(), rows.into_iter().map(|r| r.unwrap()).collect())
        })
        .collect()
}

/// What must have come across besides the rows: the next AUTO_INCREMENT
/// value (an insert's id), and the foreign key (1452 for a missing parent).
fn behaviour(c: &mut mysql::Conn) -> (u64, String) {
    c.query_drop("INSERT INTO dumpsrc.parent (name) VALUES ('after the load')").unwrap();
    let id = c.last_insert_id();
    let fk = match c.query_drop("INSERT INTO dumpsrc.alltypes (parent_id) VALUES (999)") {
        Err(mysql::Error::MySqlError(e)) => format!("{} {}", e.code, e.state),
        other => format!("{other:?}"),
    };
    c.query_drop("DELETE FROM dumpsrc.parent WHERE name = 'after the load'").unwrap();
    (id, fk)
}

fn compare(what: &str, want: &[(String, Table)], got: &[(String, Table)]) {
    for ((t, w), (_, g)) in want.iter().zip(got) {
        assert_eq!(w.len(), g.len(), "{what}: table {t}: row count");
        for (i, (wr, gr)) in w.iter().zip(g).enumerate() {
            assert_eq!(wr, gr, "{what}: table {t}: row {i}");
        }
    }
}

#[test]
fn dump_roundtrip() {
    let Some(cli) = need_program("dump_roundtrip", "mariadb", "apt-get install mariadb-client") else {
        return;
    };
    let Some(dumper) = need_program("dump_roundtrip", "mariadb-dump", "apt-get install mariadb-client")
    else {
        return;
    };
    if !mariadb::available("dump_roundtrip") {
        return;
    }
    let src = TestServer::start();
    src.conn().query_drop("CREATE DATABASE dumpsrc DEFAULT CHARACTER SET utf8mb4").unwrap();
    let fill = std::fs::read(tests_dir().join("dump_fill.sql")).unwrap();
    mariadb_cli(&cli, src.port, Some("dumpsrc"), &fill);
    let mut c = src.conn();
    let want = contents(&mut c);
    assert_eq!(instants(&mut c), INSTANTS.map(|s| s.map(String::from)), "the source's TIMESTAMP instants");
    assert_eq!(want[2].1.len(), 2048, "the fill script filled table big");
    let want_create: Vec<(String, String)> = TABLES[..6]
        .iter()
        .map(|(t, _)| c.query_first(format!("SHOW CREATE TABLE dumpsrc.{t}")).unwrap().unwrap())
        .collect();

    let dumps: Vec<(&str, Vec<u8>)> = [
        // The usual backup command (routines and events: none, but it asks).
        ("--single-transaction --routines --events", &["--single-transaction", "--routines", "--events"][..]),
        ("default options", &[][..]),
    ]
    .into_iter()
    .map(|(name, opts)| (name, dump(&dumper, src.port, opts)))
    .collect();
    // After the dumps (the insert moves the counter past what they hold).
    let want_behaviour = behaviour(&mut c);
    assert_eq!(want_behaviour.1, "1452 23000", "the source enforces its foreign key");

    let maria = MariaDb::shared().expect("MariaDB is available");
    for (name, text) in dumps {
        // Into a fresh fractaldb: the same rows, and the same tables.
        let dst = TestServer::start();
        mariadb_cli(&cli, dst.port, None, &text);
        let mut d = dst.conn();
        compare(&format!("fractaldb loaded from the dump ({name})"), &want, &contents(&mut d));
        for ((t, _), want) in TABLES.iter().zip(&want_create) {
            let got: (String, String) =
                d.query_first(format!("SHOW CREATE TABLE dumpsrc.{t}")).unwrap().unwrap();
            assert_eq!(&got, want, "SHOW CREATE TABLE {t} after the round trip ({name})");
        }
        assert_eq!(behaviour(&mut d), want_behaviour, "fractaldb loaded from the dump ({name})");
        assert_eq!(instants(&mut d), INSTANTS.map(|s| s.map(String::from)), "fractaldb's instants ({name})");
        drop(d);
        dst.stop();

        // Into MariaDB: the same rows.
        maria.conn().query_drop("DROP DATABASE IF EXISTS dumpsrc").unwrap();
        mariadb_cli(&cli, maria.port(), None, &text);
        let mut m = maria.conn();
        compare(&format!("MariaDB loaded from the dump ({name})"), &want, &contents(&mut m));
        assert_eq!(behaviour(&mut m), want_behaviour, "MariaDB loaded from the dump ({name})");
        assert_eq!(instants(&mut m), INSTANTS.map(|s| s.map(String::from)), "MariaDB's instants ({name})");
        m.query_drop("DROP DATABASE dumpsrc").unwrap();
    }
}
