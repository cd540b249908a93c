//! Issue 23's driver-level protocol features: packets over 16 MiB,
//! COM_STMT_SEND_LONG_DATA and MariaDB's bulk execute through mysql_async;
//! SET GLOBAL max_allowed_packet for new connections; session state
//! tracking and bulk execute's refusals in raw packets; and
//! caching_sha2_password's full authentication (RSA over plain TCP, in
//! clear over TLS) through the mysql crate and PyMySQL.
//!
//! The raw-packet expectations are what MariaDB 10.11 answers: with
//! FRACTALDB_RAW_PORT=<port of a MariaDB whose root has no password> the
//! raw tests run against that server instead of ours.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mysql_async::prelude::*;
use support::TestServer;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

fn async_opts(port: u16) -> mysql_async::OptsBuilder {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false)
}

fn async_code(e: mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(e) => e.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// A value over 16 MiB goes in as SEND_LONG_DATA (mysql_async sends a
/// parameter that large in chunks of 16 MiB) and comes back in a result
/// row over 16 MiB, text and binary; this needs the limit SET GLOBAL
/// raised for the new connection (the server started at 4 MiB, and the
/// connection made before keeps 4 MiB). Then exec_batch as MariaDB bulk
/// execute: one COM_STMT_BULK_EXECUTE for many rows.
#[test]
fn large_values_long_data_and_bulk_execute() {
    let s = TestServer::start_with(|o| o.max_allowed_packet = 4 << 20);
    runtime().block_on(async {
        let mut a = mysql_async::Conn::new(async_opts(s.port)).await.unwrap();
        a.query_drop("CREATE DATABASE app").await.unwrap();
        a.query_drop("CREATE TABLE app.big (id INT PRIMARY KEY, b LONGBLOB)").await.unwrap();
        a.query_drop("SET GLOBAL max_allowed_packet = 64 * 1024 * 1024").await.unwrap();
        let old: Option<u64> = a.query_first("SELECT @@max_allowed_packet").await.unwrap();
        assert_eq!(old, Some(4 << 20), "a connection keeps the limit it started with");
        let e = a.query_drop("SET SESSION max_allowed_packet = 65536").await.unwrap_err();
        assert_eq!(async_code(e), 1621, "read-only in the session, as in MariaDB");

        let mut b = mysql_async::Conn::new(async_opts(s.port).db_name(Some("app"))).await.unwrap();
        let new: Option<u64> = b.query_first("SELECT @@max_allowed_packet").await.unwrap();
        assert_eq!(new, Some(64 << 20));
        let big: Vec<u8> = (0..(17usize << 20) + 3).map(|i| (i % 251) as u8).collect();
        b.exec_drop("INSERT INTO big VALUES (?, ?)", (1, big.clone())).await.unwrap();
        let text: Option<Vec<u8>> = b.query_first("SELECT b FROM big WHERE id = 1").await.unwrap();
        assert!(text.as_ref() == Some(&big), "the text row over 16 MiB comes back whole");
        let bin: Option<Vec<u8>> = b.exec_first("SELECT b FROM big WHERE id = ?", (1,)).await.unwrap();
        assert!(bin.as_ref() == Some(&big), "the binary row over 16 MiB comes back whole");
        let len: Option<u64> = b.query_first("SELECT LENGTH(b) FROM big").await.unwrap();
        assert_eq!(len, Some(big.len() as u64));
        b.query_drop("DELETE FROM big").await.unwrap();
        drop(big);

        // exec_batch: bulk execute (one command: Com_stmt_execute moves once).
        b.query_drop("CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20), n BIGINT)")
            .await
            .unwrap();
        let q = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS \
                 WHERE VARIABLE_NAME = 'COM_STMT_EXECUTE'";
        let before: u64 = b.query_first(q).await.unwrap().unwrap();
        let rows: Vec<(Option<&str>, i64)> = vec![(Some("a"), 1), (None, -5), (Some("c"), i64::MAX)];
        b.exec_batch("INSERT INTO t (name, n) VALUES (?, ?)", rows).await.unwrap();
        assert_eq!(b.affected_rows(), 3);
        assert_eq!(b.last_insert_id(), Some(1), "the first generated id");
        let after: u64 = b.query_first(q).await.unwrap().unwrap();
        assert_eq!(after, before + 1, "one COM_STMT_BULK_EXECUTE");
        b.exec_batch("UPDATE t SET n = n + ? WHERE id = ?", vec![(1, 1), (1, 2), (1, 99)]).await.unwrap();
        assert_eq!(b.affected_rows(), 2);
        let got: Vec<(i32, Option<String>, i64)> =
            b.query("SELECT id, name, n FROM t ORDER BY id").await.unwrap();
        assert_eq!(got, vec![(1, Some("a".into()), 2), (2, None, -4), (3, Some("c".into()), i64::MAX)]);
        // An error fails the batch; an INSERT's rows are all undone, as
        // MariaDB's one statement.
        let rows = vec![(10, "x"), (1, "dup"), (11, "y")];
        let e = b.exec_batch("INSERT INTO t (id, name) VALUES (?, ?)", rows).await.unwrap_err();
        assert_eq!(async_code(e), 1062);
        let ids: Vec<i32> = b.query("SELECT id FROM t ORDER BY id").await.unwrap();
        assert_eq!(ids, vec![1, 2, 3]);
        // Inside a transaction, the same, and the transaction goes on.
        b.query_drop("BEGIN").await.unwrap();
        b.exec_batch("INSERT INTO t (id) VALUES (?)", vec![(20,)]).await.unwrap();
        let e = b.exec_batch("INSERT INTO t (id) VALUES (?)", vec![(21,), (20,)]).await.unwrap_err();
        assert_eq!(async_code(e), 1062);
        b.query_drop("COMMIT").await.unwrap();
        let ids: Vec<i32> = b.query("SELECT id FROM t ORDER BY id").await.unwrap();
        assert_eq!(ids, vec![1, 2, 3, 20]);
        // A statement with a result is not for bulk execute (as MariaDB: 1295).
        let e = b.exec_batch("SELECT ? FROM t", vec![(1,), (2,)]).await.unwrap_err();
        assert_eq!(async_code(e), 1295);
        b.disconnect().await.unwrap();
        a.disconnect().await.unwrap();
    });
}

// ---------------------------------------------------------------------
// Raw packets
// ---------------------------------------------------------------------

const PROTOCOL_41: u32 = 1 << 9;
const TRANSACTIONS: u32 = 1 << 13;
const SECURE_CONNECTION: u32 = 1 << 15;
const MULTI_RESULTS: u32 = 1 << 17;
const PLUGIN_AUTH: u32 = 1 << 19;
const CONNECT_WITH_DB: u32 = 1 << 3;
const SESSION_TRACK: u32 = 1 << 23;
const DEPRECATE_EOF: u32 = 1 << 24;
const BULK_OPERATIONS: u32 = 1 << 2;

/// A client that speaks the protocol by hand (root, no password).
struct Raw {
    s: TcpStream,
    seq: u8,
}

impl Raw {
    fn connect(port: u16, caps: u32, ext_caps: u32, db: Option<&str>) -> (Raw, Vec<u8>) {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut r = Raw { s, seq: 0 };
        let greeting = r.read();
        assert_eq!(greeting[0], 10, "a v10 greeting");
        let caps = caps
            | PROTOCOL_41
            | TRANSACTIONS
            | SECURE_CONNECTION
            | PLUGIN_AUTH
            | MULTI_RESULTS
            | DEPRECATE_EOF
            | if db.is_some() { CONNECT_WITH_DB } else { 0 };
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&(1u32 << 24).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 19]);
        p.extend_from_slice(&ext_caps.to_le_bytes());
        p.extend_from_slice(b"root\0");
        p.push(0);
        if let Some(db) = db {
            p.extend_from_slice(db.as_bytes());
            p.push(0);
        }
        p.extend_from_slice(b"mysql_native_password\0");
        r.write(&p);
        let ok = r.read();
        assert_eq!(ok[0], 0, "logged in: {ok:?}");
        (r, ok)
    }

    fn write(&mut self, payload: &[u8]) {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(self.seq);
        self.seq = self.seq.wrapping_add(1);
        p.extend_from_slice(payload);
        self.s.write_all(&p).unwrap();
    }

    fn read(&mut self) -> Vec<u8> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).unwrap();
        self.seq = h[3].wrapping_add(1);
        let mut p = vec![0u8; h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16];
        self.s.read_exact(&mut p).unwrap();
        p
    }

    /// Sends a command; returns the first reply packet.
    fn command(&mut self, cmd: u8, body: &[u8]) -> Vec<u8> {
        self.seq = 0;
        let mut p = vec![cmd];
        p.extend_from_slice(body);
        self.write(&p);
        self.read()
    }

    fn query(&mut self, sql: &str) -> Vec<u8> {
        self.command(3, sql.as_bytes())
    }

    /// A text result's rows (with DEPRECATE_EOF: no EOF after the columns,
    /// an OK with the 0xfe header after the rows).
    fn rows(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        let n = self.query(sql);
        assert!(n.len() == 1 && n[0] > 0 && n[0] < 0xfb, "a result set: {n:?}");
        for _ in 0..n[0] {
            self.read();
        }
        let mut rows = Vec::new();
        loop {
            let p = self.read();
            if p[0] == 0xfe && p.len() < 0xff_ffff {
                return rows;
            }
            let mut row = Vec::new();
            let mut at = 0;
            for _ in 0..n[0] {
                if p[at] == 0xfb {
                    row.push(None);
                    at += 1;
                } else {
                    // Short values only: a one-byte length.
                    let len = p[at] as usize;
                    row.push(Some(String::from_utf8_lossy(&p[at + 1..at + 1 + len]).into_owned()));
                    at += 1 + len;
                }
            }
            rows.push(row);
        }
    }

    /// COM_STMT_PREPARE; the statement id (parameter and column
    /// definitions read past, with DEPRECATE_EOF).
    fn prepare(&mut self, sql: &str) -> u32 {
        let p = self.command(22, sql.as_bytes());
        assert_eq!(p[0], 0, "prepared: {p:?}");
        let id = u32::from_le_bytes(p[1..5].try_into().unwrap());
        let cols = u16::from_le_bytes([p[5], p[6]]);
        let params = u16::from_le_bytes([p[7], p[8]]);
        for _ in 0..cols + params {
            self.read();
        }
        id
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The error code of an ERR packet.
fn err_code(p: &[u8]) -> u16 {
    assert_eq!(p[0], 0xff, "an error: {p:?}");
    u16::from_le_bytes([p[1], p[2]])
}

/// A server for the raw tests: ours, or the MariaDB FRACTALDB_RAW_PORT
/// names (to check the expectations against it).
fn raw_server() -> (Option<TestServer>, u16) {
    match std::env::var("FRACTALDB_RAW_PORT").ok().and_then(|p| p.parse().ok()) {
        Some(port) => (None, port),
        None => {
            let s = TestServer::start();
            let port = s.port;
            (Some(s), port)
        }
    }
}

/// OK packets with session state (CLIENT_SESSION_TRACK), byte for byte as
/// MariaDB 10.11 sends them.
#[test]
fn session_state_tracking_in_ok_packets() {
    let (_s, port) = raw_server();
    let (mut setup, _) = Raw::connect(port, 0, 0, None);
    setup.query("DROP DATABASE IF EXISTS trk1");
    setup.query("DROP DATABASE IF EXISTS trk2");
    assert_eq!(setup.query("CREATE DATABASE trk1")[0], 0);
    assert_eq!(setup.query("CREATE DATABASE trk2")[0], 0);
    // Connect-with-db: the greeting's OK names the database.
    let (mut c, ok) = Raw::connect(port, SESSION_TRACK, 0, Some("trk1"));
    assert_eq!(hex(&ok), "00000002400000000701050474726b31");
    let steps: &[(&str, &str)] = &[
        ("USE trk2", "00000002400000000701050474726b32"),
        ("SET time_zone = '+01:00'", "00000002400000001300110974696d655f7a6f6e65062b30313a3030"),
        ("SET autocommit = 0", "000000004000000011000f0a6175746f636f6d6d6974034f4646"),
        // Nothing changed: nothing to report (the tracker's fast path).
        ("DO 1", "00000000000000"),
        // Not tracked by default.
        ("SET sql_mode = ''", "00000000000000"),
        ("DO 2", "00000000000000"),
        (
            "SET character_set_results = latin1",
            "00000000400000001f001d156368617261637465725f7365745f726573756c7473066c6174696e31",
        ),
        ("SET session_track_state_change = 1", "000000004000000003020131"),
        ("SET sql_mode = 'STRICT_ALL_TABLES'", "000000004000000003020131"),
        ("SET session_track_system_variables = 'sql_mode'", "000000004000000003020131"),
        ("SET sql_mode = ''", "00000000400000000f000a0873716c5f6d6f646500020131"),
        ("COMMIT", "00000000000000"),
    ];
    for (sql, want) in steps {
        assert_eq!(&hex(&c.query(sql)), want, "{sql}");
    }
    // COM_INIT_DB reports the database too.
    let (mut d, _) = Raw::connect(port, SESSION_TRACK, 0, None);
    assert_eq!(hex(&d.command(2, b"trk1")), "00000002400000000701050474726b31");
    // A client that did not ask gets plain OK packets.
    let (mut e, ok) = Raw::connect(port, 0, 0, Some("trk1"));
    assert_eq!(hex(&ok), "00000002000000");
    assert_eq!(hex(&e.query("USE trk2")), "00000002000000");
    assert_eq!(hex(&e.query("SET time_zone = '+02:00'")), "00000002000000");
    setup.query("DROP DATABASE trk1");
    setup.query("DROP DATABASE trk2");
}

/// SET NAMES reported by session tracking, and the status flags of
/// sql_mode's NO_BACKSLASH_ESCAPES (0x0200) and ANSI_QUOTES (0x8000) on
/// every OK packet while they are on, as MariaDB 10.11 (run against it
/// with FRACTALDB_RAW_PORT; its order of the tracked variables varies with
/// its configuration, so they are compared as a set).
#[test]
fn set_names_tracking_and_sql_mode_status_flags() {
    /// An OK packet's status flags and tracked (name, value) pairs.
    fn ok_state(p: &[u8]) -> (u16, Vec<(String, String)>) {
        assert_eq!(p[0], 0, "an OK packet: {p:?}");
        let mut i = 1;
        let lenenc = |i: &mut usize| -> usize {
            let b = p[*i];
            *i += 1;
            assert!(b < 0xfb, "short length expected: {p:?}");
            b as usize
        };
        lenenc(&mut i);
        lenenc(&mut i);
        let status = u16::from_le_bytes([p[i], p[i + 1]]);
        i += 4;
        let mut vars = Vec::new();
        if status & 0x4000 != 0 {
            let info = lenenc(&mut i);
            i += info;
            let end = lenenc(&mut i) + i;
            while i < end {
                let kind = p[i];
                i += 1;
                let len = lenenc(&mut i);
                if kind == 0 {
                    let mut j = i;
                    let n = lenenc(&mut j);
                    let name = String::from_utf8_lossy(&p[j..j + n]).into_owned();
                    j += n;
                    let n = lenenc(&mut j);
                    vars.push((name, String::from_utf8_lossy(&p[j..j + n]).into_owned()));
                }
                i += len;
            }
        }
        vars.sort();
        (status, vars)
    }
    let names = |cs: &str| {
        ["character_set_client", "character_set_connection", "character_set_results"]
            .map(|n| (n.to_string(), cs.to_string()))
            .to_vec()
    };
    let (_s, port) = raw_server();
    let (mut c, _) = Raw::connect(port, SESSION_TRACK, 0, None);
    type Vars = Vec<(String, String)>;
    let steps: Vec<(&str, u16, Vars)> = vec![
        ("SET NAMES latin1", 0x4002, names("latin1")),
        ("SET NAMES utf8mb4 COLLATE utf8mb4_bin", 0x4002, names("utf8mb4")),
        ("SET NAMES binary", 0x4002, names("binary")),
        ("SET CHARACTER SET DEFAULT", 0x4002, names("utf8mb4")),
        ("SET sql_mode = 'NO_BACKSLASH_ESCAPES'", 0x0202, vec![]),
        ("DO 1", 0x0202, vec![]),
        ("SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'", 0x8202, vec![]),
        ("SET sql_mode = 'ANSI'", 0x8002, vec![]),
        ("SET sql_mode = ''", 0x0002, vec![]),
    ];
    for (sql, status, vars) in steps {
        assert_eq!(ok_state(&c.query(sql)), (status, vars), "{sql}");
    }
}

/// COM_STMT_BULK_EXECUTE in raw packets: the rows, NULL indicators, the
/// types sent once and kept; and what MariaDB 10.11 refuses.
#[test]
fn bulk_execute_raw() {
    let (_s, port) = raw_server();
    let (mut c, _) = Raw::connect(port, 0, BULK_OPERATIONS, None);
    c.query("DROP DATABASE IF EXISTS bulk1");
    assert_eq!(c.query("CREATE DATABASE bulk1")[0], 0);
    assert_eq!(c.query("CREATE TABLE bulk1.t (a INT, b VARCHAR(10))")[0], 0);
    let ins = c.prepare("INSERT INTO bulk1.t VALUES (?, ?)");
    let bulk = |id: u32, flags: u16, rest: &[u8]| {
        let mut p = id.to_le_bytes().to_vec();
        p.extend_from_slice(&flags.to_le_bytes());
        p.extend_from_slice(rest);
        p
    };
    // Types: LONG, VAR_STRING. Rows: (1, 'x'), (NULL, 'yz'), (3, NULL).
    let mut rows = vec![3, 0, 253, 0];
    rows.extend_from_slice(&[0, 1, 0, 0, 0, 0, 1, b'x']);
    rows.extend_from_slice(&[1, 0, 2, b'y', b'z']);
    rows.extend_from_slice(&[0, 3, 0, 0, 0, 1]);
    let ok = c.command(250, &bulk(ins, 128, &rows));
    assert_eq!(ok[..2], [0, 3], "OK, 3 rows: {ok:?}");
    // Without the types flag, the types sent last hold.
    let ok = c.command(250, &bulk(ins, 0, &[0, 4, 0, 0, 0, 1]));
    assert_eq!(ok[..2], [0, 1], "{ok:?}");
    let got = c.rows("SELECT COUNT(*), SUM(a), GROUP_CONCAT(b ORDER BY b) FROM bulk1.t");
    assert_eq!(got, vec![vec![Some("4".to_string()), Some("8".into()), Some("x,yz".into())]]);
    // A failing row: an INSERT is one statement, all its rows or none; an
    // UPDATE runs row by row, the rows before the error stay done.
    assert_eq!(c.query("CREATE TABLE bulk1.k (id INT PRIMARY KEY, v INT)")[0], 0);
    let ink = c.prepare("INSERT INTO bulk1.k VALUES (?, ?)");
    let long = |v: i32| [&[0u8][..], &v.to_le_bytes()].concat();
    let pairs = |rows: &[(i32, i32)]| {
        let mut p = vec![3, 0, 3, 0];
        for (a, b) in rows {
            p.extend_from_slice(&long(*a));
            p.extend_from_slice(&long(*b));
        }
        p
    };
    assert_eq!(c.command(250, &bulk(ink, 128, &pairs(&[(1, 1), (2, 2)])))[0], 0);
    assert_eq!(err_code(&c.command(250, &bulk(ink, 128, &pairs(&[(3, 3), (1, 9), (4, 4)])))), 1062);
    let upk = c.prepare("UPDATE bulk1.k SET id = ? WHERE v = ?");
    assert_eq!(err_code(&c.command(250, &bulk(upk, 128, &pairs(&[(10, 1), (10, 2), (30, 3)])))), 1062);
    // A row cut short: 1210, and the INSERT's rows before it are undone.
    let mut cut = pairs(&[(5, 5)]);
    cut.extend_from_slice(&[0, 6, 0]);
    assert_eq!(err_code(&c.command(250, &bulk(ink, 128, &cut))), 1210);
    let got = c.rows("SELECT GROUP_CONCAT(id ORDER BY id) FROM bulk1.k");
    assert_eq!(got, vec![vec![Some("2,10".to_string())]]);
    // Refusals.
    assert_eq!(err_code(&c.command(250, &[1, 0, 0])), 1835, "shorter than id and flags");
    assert_eq!(err_code(&c.command(250, &bulk(ins, 64, &rows))), 1295, "an unknown flag");
    assert_eq!(err_code(&c.command(250, &bulk(9999, 128, &rows))), 1243);
    let sel = c.prepare("SELECT ?, ?");
    assert_eq!(err_code(&c.command(250, &bulk(sel, 128, &rows))), 1295, "not INSERT/UPDATE/DELETE");
    let none = c.prepare("DELETE FROM bulk1.t WHERE 1 = 0");
    assert_eq!(err_code(&c.command(250, &bulk(none, 0, &[]))), 1295, "no parameters");
    // A client that did not announce bulk operations.
    let (mut plain, _) = Raw::connect(port, 0, 0, None);
    let ins2 = plain.prepare("INSERT INTO bulk1.t VALUES (?, ?)");
    assert_eq!(err_code(&plain.command(250, &bulk(ins2, 128, &rows))), 1295);
    // The connection goes on.
    assert_eq!(c.query("DROP DATABASE bulk1")[0], 0);
}

// ---------------------------------------------------------------------
// caching_sha2_password
// ---------------------------------------------------------------------

/// A server with a caching_sha2_password account, and its RSA key pair
/// put in the data folder beforehand (the server would make one at the
/// first key request; making a key in a debug build is slow).
fn sha2_server() -> TestServer {
    let s = TestServer::start();
    let key = std::fs::read(support::tests_dir().join("caching_sha2_test_key.pem")).unwrap();
    std::fs::write(s.dir.path().join("private_key.pem"), key).unwrap();
    let mut root = s.conn();
    mysql::prelude::Queryable::query_drop(
        &mut root,
        "CREATE USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'pw2'",
    )
    .unwrap();
    s
}

fn sha_opts(s: &TestServer, pass: &str) -> mysql::OptsBuilder {
    s.opts().user(Some("sha")).pass(Some(pass))
}

fn current_user(c: &mut mysql::Conn) -> String {
    mysql::prelude::Queryable::query_first(c, "SELECT CURRENT_USER()").unwrap().unwrap()
}

fn login_error(r: Result<mysql::Conn, mysql::Error>) -> u16 {
    match r {
        Err(mysql::Error::MySqlError(e)) => e.code,
        Err(other) => panic!("expected a server error, got {other:?}"),
        Ok(_) => panic!("expected the login to fail"),
    }
}

/// As MySQL 8: the cache starts empty, so the first login of the account
/// is full authentication: over plain TCP the client asks for the public
/// key and sends the password RSA-encrypted; then the fast path serves it.
/// A wrong password fails either way (1045).
#[test]
fn caching_sha2_full_authentication_over_tcp() {
    let s = sha2_server();
    assert_eq!(login_error(mysql::Conn::new(sha_opts(&s, "nope"))), 1045);
    assert!(s.log().contains("caching_sha2_password RSA key"), "the key was asked for");
    let mut c = mysql::Conn::new(sha_opts(&s, "pw2")).expect("full authentication with RSA");
    assert_eq!(current_user(&mut c), "sha@%");
    let mut c = mysql::Conn::new(sha_opts(&s, "pw2")).expect("the fast path");
    assert_eq!(current_user(&mut c), "sha@%");
    assert_eq!(login_error(mysql::Conn::new(sha_opts(&s, "pw3"))), 1045);
    // A changed password is a cache miss: full authentication again.
    let mut root = s.conn();
    mysql::prelude::Queryable::query_drop(&mut root, "ALTER USER sha@'%' IDENTIFIED BY 'pw4'").unwrap();
    assert_eq!(login_error(mysql::Conn::new(sha_opts(&s, "pw2"))), 1045);
    let mut c = mysql::Conn::new(sha_opts(&s, "pw4")).unwrap();
    assert_eq!(current_user(&mut c), "sha@%");

    // PyMySQL (its RSA step needs the cryptography package).
    let Some(py) = support::need_pymysql("caching_sha2_full_authentication_over_tcp") else { return };
    let script = format!(
        "import pymysql\n\
         try:\n    import cryptography\nexcept ImportError:\n    print('SKIP')\n    raise SystemExit(0)\n\
         c = pymysql.connect(host='127.0.0.1', port={}, user='py', password='pw5')\n\
         cur = c.cursor()\ncur.execute('SELECT CURRENT_USER()')\nprint(cur.fetchone()[0])\n",
        s.port
    );
    mysql::prelude::Queryable::query_drop(
        &mut root,
        "CREATE USER py@'%' IDENTIFIED WITH caching_sha2_password BY 'pw5'",
    )
    .unwrap();
    let out = std::process::Command::new(py).args(["-c", &script]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "PyMySQL: {text} {}", String::from_utf8_lossy(&out.stderr));
    if text.trim() == "SKIP" {
        eprintln!("PyMySQL's caching_sha2_password: SKIPPED (no cryptography package)");
    } else {
        assert_eq!(text.trim(), "py@%");
    }
}

/// Over TLS the full authentication's password comes in clear: the RSA
/// key is never needed.
#[test]
fn caching_sha2_full_authentication_over_tls() {
    let s = sha2_server();
    let ca = s.dir.path().join("ca.pem");
    let tls = |pass: &str| {
        sha_opts(&s, pass).ssl_opts(Some(mysql::SslOpts::default().with_root_cert_path(Some(ca.clone()))))
    };
    assert_eq!(login_error(mysql::Conn::new(tls("nope"))), 1045);
    let mut c = mysql::Conn::new(tls("pw2")).expect("full authentication over TLS");
    assert_eq!(current_user(&mut c), "sha@%");
    let mut c = mysql::Conn::new(tls("pw2")).expect("the fast path");
    assert_eq!(current_user(&mut c), "sha@%");
    assert!(!s.log().contains("caching_sha2_password RSA key"), "no key needed over TLS");
}
