//! LOAD DATA [LOCAL] INFILE through real clients: the `mariadb` CLI and
//! PyMySQL send the client's file (LOCAL), the Rust client streams a 50 MB
//! one, server-side files obey secure_file_priv. The expected rows,
//! warnings and info lines are what MariaDB 10.11 gives for the same files
//! and statements (run by hand against a private mariadbd).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use mysql::prelude::Queryable;
use support::TestServer;

/// Tab-separated: \N, a short line, a long line, an empty number, quotes
/// that are not enclosures (no ENCLOSED BY).
const F1: &[u8] = b"1\tx\n\\N\t\\N\n3\n4\ty\textra\n\t\n\"5\"\t\"q\"\n";
/// CSV with optional enclosures, CRLF lines, doubled quotes, \N and NULL.
const F2: &[u8] = b"\"a,b\",1,\"c\"\"d\"\r\n\\N,2,\"\\N\"\r\nNULL,3,plain\r\n\"x\ny\",4,z\r\n";
/// A header line, a user variable, SET.
const F3: &[u8] = b"id,score,name\n1,10,ann\n2,\\N,bob\n3,7.5,\"cy, d\"\n";
/// LINES STARTING BY: text before the prefix and lines without it skipped.
const F4: &[u8] = b"xx>>1|a\nskip me\n>>2|b\nyy>>3|c";

fn rows(c: &mut mysql::Conn, q: &str) -> Vec<Vec<Option<String>>> {
    let r: Vec<mysql::Row> = c.query(q).unwrap();
    r.into_iter()
        .map(|row| {
            row.unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    other => Some(other.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn code(e: mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("{other}"),
    }
}

#[test]
fn mariadb_cli_local_infile() {
    let Some(mariadb) =
        support::need_program("mariadb_cli_local_infile", "mariadb", "apt-get install mariadb-client")
    else {
        return;
    };
    let srv = TestServer::start();
    let f1 = srv.dir.path().join("f1.txt");
    std::fs::write(&f1, F1).unwrap();
    let run = |local: &str, sql: &str| {
        Command::new(&mariadb)
            .args(["--no-defaults", "-h127.0.0.1", "-uroot", "--batch", "--skip-ssl"])
            .arg(format!("-P{}", srv.port))
            .arg(format!("--local-infile={local}"))
            .args(["-e", sql])
            .output()
            .expect("running mariadb")
    };
    let sql = format!(
        "CREATE DATABASE l; USE l; CREATE TABLE t (a INT, b VARCHAR(10)); SET sql_mode='';
         LOAD DATA LOCAL INFILE '{}' INTO TABLE t; SHOW WARNINGS; SELECT * FROM t; SELECT a IS NULL, b IS NULL FROM t",
        f1.display()
    );
    let o = run("1", &sql);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{out}", String::from_utf8_lossy(&o.stderr));
    // MariaDB 10.11's output for the same file.
    let want = "Level\tCode\tMessage
Warning\t1261\tRow 3 doesn't contain data for all columns
Warning\t1262\tRow 4 was truncated; it contained more data than there were input columns
Warning\t1366\tIncorrect integer value: '' for column `l`.`t`.`a` at row 5
Warning\t1366\tIncorrect integer value: '\"5\"' for column `l`.`t`.`a` at row 6
a\tb
1\tx
NULL\tNULL
3\tNULL
4\ty
0\t
0\t\"q\"
a IS NULL\tb IS NULL
0\t0
1\t1
0\t1
0\t0
0\t0
0\t0
";
    assert_eq!(out, want);
    // The client without local infile: MariaDB's 4166.
    let o = run("0", &format!("LOAD DATA LOCAL INFILE '{}' INTO TABLE l.t", f1.display()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("ERROR 4166 (HY000)"), "{err}");
    // A file the client cannot read: its own error; the server goes on.
    let o = run("1", "LOAD DATA LOCAL INFILE '/nonexistent/x.txt' INTO TABLE l.t");
    assert!(!o.status.success());
    let mut c = srv.conn();
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM l.t").unwrap();
    assert_eq!(n, Some(6));
}

#[test]
fn pymysql_local_infile() {
    let Some(py) = support::need_pymysql("pymysql_local_infile") else { return };
    let srv = TestServer::start();
    let dir = srv.dir.path();
    std::fs::write(dir.join("f2.txt"), F2).unwrap();
    std::fs::write(dir.join("f3.txt"), F3).unwrap();
    std::fs::write(dir.join("f4.txt"), F4).unwrap();
    let script = r#"
import sys, pymysql
port, d = int(sys.argv[1]), sys.argv[2]
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", local_infile=True, autocommit=True)
cur = c.cursor()
cur.execute("CREATE DATABASE l")
cur.execute("USE l")
cur.execute("CREATE TABLE t2 (s VARCHAR(10), n INT, u VARCHAR(10))")
n = cur.execute("LOAD DATA LOCAL INFILE '%s/f2.txt' INTO TABLE t2 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n'" % d)
# PyMySQL keeps the info string's length byte (with MariaDB too): skip it.
print(n, cur._result.message[1:].decode())
cur.execute("SELECT s, n, u, s IS NULL, u IS NULL, HEX(s) FROM t2")
for r in cur.fetchall(): print(repr(r))
cur.execute("CREATE TABLE t3 (id INT PRIMARY KEY, score DOUBLE, name VARCHAR(20), note VARCHAR(10) DEFAULT 'dflt')")
n = cur.execute("LOAD DATA LOCAL INFILE '%s/f3.txt' INTO TABLE t3 CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES (id, @x, name) SET score = @x * 2, name = UPPER(name)" % d)
print(n, cur._result.message[1:].decode())
cur.execute("SELECT * FROM t3 ORDER BY id")
for r in cur.fetchall(): print(repr(r))
cur.execute("CREATE TABLE t4 (a INT, b CHAR(3))")
cur.execute("LOAD DATA LOCAL INFILE '%s/f4.txt' INTO TABLE t4 FIELDS TERMINATED BY '|' LINES STARTING BY '>>'" % d)
cur.execute("SELECT * FROM t4")
for r in cur.fetchall(): print(repr(r))
"#;
    let o = Command::new(py)
        .args(["-c", script, &srv.port.to_string(), &dir.display().to_string()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{out}", String::from_utf8_lossy(&o.stderr));
    // MariaDB 10.11's results for the same files and statements.
    let want = "4 Records: 4  Deleted: 0  Skipped: 0  Warnings: 0
('a,b', 1, 'c\"d', 0, 0, '612C62')
(None, 2, None, 1, 1, None)
(None, 3, 'plain', 1, 0, None)
('x\\ny', 4, 'z', 0, 0, '780A79')
3 Records: 3  Deleted: 0  Skipped: 0  Warnings: 0
(1, 20.0, 'ANN', 'dflt')
(2, None, 'BOB', 'dflt')
(3, 15.0, 'CY, D', 'dflt')
(1, 'a')
(2, 'b')
(3, 'c')
";
    assert_eq!(out, want);
}

#[test]
fn server_side_files_and_secure_file_priv() {
    let srv = TestServer::start();
    let load = srv.dir.path().join("load");
    std::fs::write(load.join("f1.txt"), F1).unwrap();
    std::fs::write(load.join("dup.txt"), b"1\tx\n1\ty\n2\tz\n").unwrap();
    std::fs::write(srv.dir.path().join("outside.txt"), F1).unwrap();
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE l").unwrap();
    c.query_drop("USE l").unwrap();
    c.query_drop("CREATE TABLE t (a INT, b VARCHAR(10))").unwrap();
    let priv_dir: Option<String> = c.query_first("SELECT @@secure_file_priv").unwrap();
    assert_eq!(priv_dir.unwrap(), format!("{}/", load.canonicalize().unwrap().display()));
    // Strict mode (the default): a short line is an error, nothing loads.
    let e = c.query_drop("LOAD DATA INFILE 'f1.txt' INTO TABLE t").unwrap_err();
    assert_eq!(code(e), 1261);
    assert_eq!(rows(&mut c, "SELECT COUNT(*) FROM t"), vec![vec![s("0")]]);
    // Non-strict: loads with warnings (relative names are under secure_file_priv).
    c.query_drop("SET sql_mode = ''").unwrap();
    c.query_drop("LOAD DATA INFILE 'f1.txt' INTO TABLE t").unwrap();
    assert_eq!(c.affected_rows(), 6);
    assert_eq!(c.info_str(), "Records: 6  Deleted: 0  Skipped: 0  Warnings: 4");
    assert_eq!(c.warnings(), 4);
    c.query_drop(format!("LOAD DATA INFILE '{}' INTO TABLE t", load.join("f1.txt").display())).unwrap();
    assert_eq!(c.affected_rows(), 6);
    // Outside the folder, or through `..`: 1290. Missing: 13.
    let outside = srv.dir.path().join("outside.txt");
    let e = c.query_drop(format!("LOAD DATA INFILE '{}' INTO TABLE t", outside.display())).unwrap_err();
    assert_eq!(code(e), 1290);
    let e = c.query_drop("LOAD DATA INFILE '../outside.txt' INTO TABLE t").unwrap_err();
    assert_eq!(code(e), 1290);
    let e = c.query_drop("LOAD DATA INFILE 'nope.txt' INTO TABLE t").unwrap_err();
    assert_eq!(code(e), 13);
    // Duplicates: an error, or IGNORE / REPLACE as MariaDB counts them.
    c.query_drop("SET sql_mode = DEFAULT").unwrap();
    c.query_drop("CREATE TABLE k (a INT PRIMARY KEY, b VARCHAR(5))").unwrap();
    let e = c.query_drop("LOAD DATA INFILE 'dup.txt' INTO TABLE k").unwrap_err();
    assert_eq!(code(e), 1062);
    c.query_drop("LOAD DATA INFILE 'dup.txt' IGNORE INTO TABLE k").unwrap();
    assert_eq!(c.info_str(), "Records: 3  Deleted: 0  Skipped: 1  Warnings: 1");
    assert_eq!(rows(&mut c, "SELECT * FROM k"), vec![vec![s("1"), s("x")], vec![s("2"), s("z")]]);
    c.query_drop("LOAD DATA INFILE 'dup.txt' REPLACE INTO TABLE k").unwrap();
    assert_eq!(rows(&mut c, "SELECT * FROM k"), vec![vec![s("1"), s("y")], vec![s("2"), s("z")]]);
    // Syntax and unknown tables and columns.
    assert_eq!(code(c.query_drop("LOAD DATA INFILE 'f1.txt' INTO TABLE nope").unwrap_err()), 1146);
    assert_eq!(code(c.query_drop("LOAD DATA INFILE 'f1.txt' INTO TABLE t (a, zz)").unwrap_err()), 1054);
    assert_eq!(code(c.query_drop("LOAD DATA INFILE 'f1.txt' TABLE t").unwrap_err()), 1064);
    assert_eq!(
        code(c.query_drop("LOAD DATA INFILE 'f1.txt' INTO TABLE t FIELDS ENCLOSED BY 'ab'").unwrap_err()),
        1083
    );
    drop(c);
    // secure_file_priv NULL refuses every file.
    let srv2 = TestServer::start_with(|o| o.secure_file_priv = None);
    let mut c = srv2.conn();
    c.query_drop("CREATE DATABASE l").unwrap();
    c.query_drop("CREATE TABLE l.t (a INT)").unwrap();
    let e = c
        .query_drop(format!("LOAD DATA INFILE '{}' INTO TABLE l.t", load.join("f1.txt").display()))
        .unwrap_err();
    assert_eq!(code(e), 1290);
    let v: Option<mysql::Value> = c.query_first("SELECT @@secure_file_priv").unwrap();
    assert_eq!(v, Some(mysql::Value::NULL));
}

#[test]
fn rust_client_streams_50_mb() {
    let srv = TestServer::start();
    let mut opts = srv.opts();
    // Rows generated as they are sent: the file is never whole in memory.
    const ROWS: u64 = 210_000;
    let pad = "p".repeat(240);
    let handler = mysql::LocalInfileHandler::new(move |_name, w| {
        let mut line = Vec::with_capacity(300);
        for i in 0..ROWS {
            line.clear();
            writeln!(line, "{i}\t{pad}\t{}", i % 1000).unwrap();
            w.write_all(&line)?;
        }
        Ok(())
    });
    opts = opts.local_infile_handler(Some(handler));
    let mut c = mysql::Conn::new(opts).unwrap();
    c.query_drop("CREATE DATABASE big").unwrap();
    c.query_drop("CREATE TABLE big.t (id BIGINT PRIMARY KEY, pad VARCHAR(255), m INT)").unwrap();
    c.query_drop("LOAD DATA LOCAL INFILE 'generated' INTO TABLE big.t").unwrap();
    assert_eq!(c.affected_rows(), ROWS);
    assert_eq!(c.info_str(), format!("Records: {ROWS}  Deleted: 0  Skipped: 0  Warnings: 0"));
    let r: Option<(i64, String, String)> =
        c.query_first("SELECT COUNT(*), SUM(m), SUM(LENGTH(pad)) FROM big.t").unwrap();
    let (n, sum_m, sum_len) = r.unwrap();
    assert_eq!(n as u64, ROWS);
    assert_eq!(sum_m, ((0..ROWS).map(|i| i % 1000).sum::<u64>()).to_string());
    assert_eq!(sum_len, (ROWS * 240).to_string());
    let bytes: Option<String> =
        c.query_first("SELECT SUM(LENGTH(id) + LENGTH(pad) + LENGTH(m) + 3) FROM big.t").unwrap();
    assert!(bytes.unwrap().parse::<u64>().unwrap() > 50_000_000);
}

fn raw_login(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    read_packet(&mut s).expect("greeting");
    // protocol 41, secure connection, plugin auth, LOCAL_FILES.
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0080;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"root\0\0mysql_native_password\0");
    write_packet(&mut s, 1, &p);
    let (_, ok) = read_packet(&mut s).expect("auth reply");
    assert_eq!(ok[0], 0);
    s
}

fn read_packet(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 4];
    match s.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            panic!("the server hung")
        }
        Err(_) => return None,
    }
    let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).ok()?;
    Some((h[3], p))
}

fn write_packet(s: &mut TcpStream, seq: u8, payload: &[u8]) {
    let mut b = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    b.push(seq);
    b.extend_from_slice(payload);
    let _ = s.write_all(&b);
}

fn query(s: &mut TcpStream, sql: &str) -> Vec<u8> {
    let mut p = vec![3u8];
    p.extend_from_slice(sql.as_bytes());
    write_packet(s, 0, &p);
    read_packet(s).expect("a reply").1
}

#[test]
fn raw_clients_refusing_or_sending_garbage() {
    let srv = TestServer::start();
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE g").unwrap();
    c.query_drop("CREATE TABLE g.t (a INT, b VARCHAR(10))").unwrap();
    let load = "LOAD DATA LOCAL INFILE 'f.txt' INTO TABLE g.t";

    // A client that refuses the file: an empty packet at once. Nothing loads.
    let mut s = raw_login(srv.port);
    let req = query(&mut s, load);
    assert_eq!(req, b"\xfbf.txt");
    write_packet(&mut s, 2, b"");
    let (seq, ok) = read_packet(&mut s).unwrap();
    assert_eq!((seq, ok[0]), (3, 0), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok).contains("Records: 0"), "{ok:?}");

    // The file in several packets, then the connection goes on.
    let req = query(&mut s, load);
    assert_eq!(req[0], 0xfb);
    write_packet(&mut s, 2, b"1\tone\n2\t");
    write_packet(&mut s, 3, b"two\n3\tthree");
    write_packet(&mut s, 4, b"");
    let (_, ok) = read_packet(&mut s).unwrap();
    assert_eq!(ok[0], 0, "{ok:?}");
    let r = query(&mut s, "SELECT 1");
    assert_eq!(r, [1]);
    drop(s);
    assert_eq!(rows(&mut c, "SELECT COUNT(*) FROM g.t"), vec![vec![Some("3".to_string())]]);

    // A statement that fails midway still reads the rest of the file
    // before its error (strict mode, a bad number on the first row).
    c.query_drop("CREATE TABLE g.k (a INT PRIMARY KEY)").unwrap();
    let mut s = raw_login(srv.port);
    let req = query(&mut s, "LOAD DATA LOCAL INFILE 'f' REPLACE INTO TABLE g.k");
    assert_eq!(req[0], 0xfb);
    write_packet(&mut s, 2, b"abc\n");
    write_packet(&mut s, 3, b"2\n");
    write_packet(&mut s, 4, b"");
    let (seq, e) = read_packet(&mut s).unwrap();
    assert_eq!((seq, e[0]), (5, 0xff), "{e:?}");
    assert_eq!(u16::from_le_bytes([e[1], e[2]]), 1366);
    assert_eq!(query(&mut s, "DO 1")[0], 0);
    // Without REPLACE, LOCAL acts as IGNORE: the bad number and the
    // duplicate are warnings (MariaDB: "Records: 2  Deleted: 0  Skipped: 0
    // Warnings: 1" for the first alone).
    let req = query(&mut s, "LOAD DATA LOCAL INFILE 'f' INTO TABLE g.k");
    assert_eq!(req[0], 0xfb);
    write_packet(
        &mut s,
        2,
        b"abc
2
2
",
    );
    write_packet(&mut s, 3, b"");
    let (_, ok) = read_packet(&mut s).unwrap();
    assert_eq!(ok[0], 0, "{ok:?}");
    assert!(
        String::from_utf8_lossy(&ok).contains("Records: 3  Deleted: 0  Skipped: 1  Warnings: 2"),
        "{ok:?}"
    );
    drop(s);

    // Garbage instead of packets: a wrong sequence id, or bytes that are
    // no packet; an error or a close, never a hang, and the server goes on.
    for garbage in [&b"\x05\x00\x00\x09hello"[..], &b"GET / HTTP/1.1\r\n\r\n"[..], &[0xff; 64][..]] {
        let mut s = raw_login(srv.port);
        let req = query(&mut s, load);
        assert_eq!(req[0], 0xfb);
        s.write_all(garbage).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Write);
        if let Some((_, e)) = read_packet(&mut s) {
            assert_eq!(e[0], 0xff, "{e:?}");
        }
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    }
    // The data sent in clear before the garbage rolled back.
    assert_eq!(rows(&mut c, "SELECT COUNT(*) FROM g.t"), vec![vec![Some("3".to_string())]]);
    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
    assert!(!srv.log().contains("panicked"), "{}", srv.log());
}
