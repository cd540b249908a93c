//! Cursors from a raw socket (no client at hand opens them: the Rust and
//! Python drivers never send CURSOR_TYPE_READ_ONLY): EXECUTE with the flag
//! answers the columns and an EOF with SERVER_STATUS_CURSOR_EXISTS and no
//! rows; FETCH sends batches, ending with LAST_ROW_SENT; the rows fetched
//! in batches equal the plain EXECUTE's; EXECUTE, RESET and CLOSE close
//! the cursor; FETCH without one is 1421, with an unknown id 1243. Both
//! with and without CLIENT_DEPRECATE_EOF.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mysql::prelude::Queryable;
use support::TestServer;

/// A real client's cursors: libmariadb through python3's ctypes (see the
/// script). Skipped without python3 or libmariadb.so.3, except under CI.
#[test]
fn libmariadb_cursor_fetches() {
    let Some(py) = support::need_program("libmariadb_cursor_fetches", "python3", "apt-get install python3")
    else {
        return;
    };
    let has_lib = std::process::Command::new(&py)
        .args(["-c", "import ctypes; ctypes.CDLL('libmariadb.so.3')"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_lib {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "libmariadb.so.3 missing (apt-get install libmariadb3)"
        );
        eprintln!(
            "libmariadb_cursor_fetches: SKIPPED: libmariadb.so.3 not found (apt-get install libmariadb3)"
        );
        return;
    }
    let srv = TestServer::start();
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE cur").unwrap();
    c.query_drop("CREATE TABLE cur.t (id INT PRIMARY KEY, name VARCHAR(20))").unwrap();
    for i in 1..=23 {
        c.query_drop(format!("INSERT INTO cur.t VALUES ({i}, 'n{i}')")).unwrap();
    }
    let o = std::process::Command::new(py)
        .arg(support::tests_dir().join("libmariadb_cursor.py"))
        .arg(srv.port.to_string())
        .arg("SELECT id, name FROM cur.t ORDER BY id")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{out}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "0 2 23\n1 2 23\n");
}

const CURSOR_EXISTS: u16 = 64;
const LAST_ROW_SENT: u16 = 128;

struct Raw {
    s: TcpStream,
    deprecate_eof: bool,
}

impl Raw {
    fn read(&mut self) -> Vec<u8> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).expect("a packet (the server hung or closed)");
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        let mut p = vec![0u8; len];
        self.s.read_exact(&mut p).unwrap();
        p
    }

    fn write(&mut self, seq: u8, payload: &[u8]) {
        let mut b = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        b.push(seq);
        b.extend_from_slice(payload);
        self.s.write_all(&b).unwrap();
    }

    fn login(port: u16, deprecate_eof: bool) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut r = Raw { s, deprecate_eof };
        let g = r.read();
        assert_eq!(g[0], 10);
        let mut caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0008;
        if deprecate_eof {
            caps |= 1 << 24;
        }
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"root\0\0cur\0mysql_native_password\0");
        r.write(1, &p);
        let ok = r.read();
        assert_eq!(ok[0], 0, "login: {ok:?}");
        r
    }

    /// Sends a command; returns its first reply packet.
    fn command(&mut self, payload: &[u8]) -> Vec<u8> {
        self.write(0, payload);
        self.read()
    }

    fn is_eof(&self, p: &[u8]) -> bool {
        p.first() == Some(&0xfe) && p.len() < 0xffffff && (p.len() == 5 || self.deprecate_eof)
    }

    /// The status of an EOF, or of the OK that stands for it.
    fn eof_status(&self, p: &[u8]) -> u16 {
        assert!(self.is_eof(p), "not an EOF: {p:?}");
        if self.deprecate_eof {
            // 0xfe, affected (lenenc 0), last id (lenenc 0), status.
            assert_eq!(&p[1..3], &[0, 0], "{p:?}");
            u16::from_le_bytes([p[3], p[4]])
        } else {
            u16::from_le_bytes([p[3], p[4]])
        }
    }

    fn prepare(&mut self, sql: &str) -> (u32, usize) {
        let mut p = vec![0x16];
        p.extend_from_slice(sql.as_bytes());
        let r = self.command(&p);
        assert_eq!(r[0], 0, "prepare: {}", String::from_utf8_lossy(&r));
        let id = u32::from_le_bytes(r[1..5].try_into().unwrap());
        let cols = u16::from_le_bytes([r[5], r[6]]) as usize;
        let params = u16::from_le_bytes([r[7], r[8]]) as usize;
        assert_eq!(params, 0);
        if cols > 0 {
            for _ in 0..cols {
                self.read();
            }
            if !self.deprecate_eof {
                self.read();
            }
        }
        (id, cols)
    }

    /// EXECUTE (no parameters) with the given flags. Returns the status of
    /// the packet ending the column definitions and the rows sent with them.
    fn execute(&mut self, id: u32, flags: u8) -> (u16, Vec<Vec<u8>>) {
        let mut p = vec![0x17];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(flags);
        p.extend_from_slice(&1u32.to_le_bytes());
        let n = self.command(&p);
        assert!(n[0] != 0xff && n[0] != 0, "execute: {}", String::from_utf8_lossy(&n));
        let ncols = n[0] as usize;
        for _ in 0..ncols {
            let d = self.read();
            assert_eq!(&d[..4], b"\x03def");
        }
        let mut status = None;
        if !self.deprecate_eof {
            let e = self.read();
            let st = self.eof_status(&e);
            if st & CURSOR_EXISTS != 0 {
                // A cursor: nothing follows the columns' EOF.
                return (st, Vec::new());
            }
            status = Some(st);
        }
        let mut rows = Vec::new();
        loop {
            let p = self.read();
            if self.is_eof(&p) {
                let st = self.eof_status(&p);
                if self.deprecate_eof && st & CURSOR_EXISTS != 0 && rows.is_empty() && status.is_none() {
                    // With DEPRECATE_EOF the OK after the columns is the
                    // cursor's answer: no rows follow.
                    return (st, rows);
                }
                return (status.unwrap_or(st), rows);
            }
            assert_eq!(p[0], 0, "a binary row: {p:?}");
            rows.push(p);
        }
    }

    /// FETCH: the rows and the final status; or the error code.
    fn fetch(&mut self, id: u32, n: u32) -> Result<(Vec<Vec<u8>>, u16), u16> {
        let mut p = vec![0x1c];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&n.to_le_bytes());
        let mut first = self.command(&p);
        if first[0] == 0xff {
            return Err(u16::from_le_bytes([first[1], first[2]]));
        }
        let mut rows = Vec::new();
        loop {
            if self.is_eof(&first) {
                return Ok((rows, self.eof_status(&first)));
            }
            assert_eq!(first[0], 0, "a binary row: {first:?}");
            rows.push(first);
            first = self.read();
        }
    }
}

fn check(port: u16, deprecate_eof: bool) {
    let mut r = Raw::login(port, deprecate_eof);
    let (id, cols) = r.prepare("SELECT id, name, score, born FROM t ORDER BY id");
    assert_eq!(cols, 4);
    // The whole result, plain.
    let (_, plain) = r.execute(id, 0);
    assert_eq!(plain.len(), 23);
    // With a cursor: no rows yet.
    let (st, none) = r.execute(id, 1);
    assert!(none.is_empty());
    assert_ne!(st & CURSOR_EXISTS, 0, "status {st:#x}");
    let mut fetched = Vec::new();
    for _ in 0..4 {
        let (rows, st) = r.fetch(id, 5).unwrap();
        assert_eq!(rows.len(), 5);
        assert_ne!(st & CURSOR_EXISTS, 0);
        assert_eq!(st & LAST_ROW_SENT, 0);
        fetched.extend(rows);
    }
    let (rows, st) = r.fetch(id, 5).unwrap();
    assert_eq!(rows.len(), 3);
    assert_ne!(st & LAST_ROW_SENT, 0, "status {st:#x}");
    assert_eq!(st & CURSOR_EXISTS, 0);
    fetched.extend(rows);
    assert_eq!(fetched, plain, "rows fetched in batches differ from the plain execute's");
    // The cursor is closed after its last row.
    assert_eq!(r.fetch(id, 5), Err(1421));
    // A new EXECUTE closes the cursor (and opens a new one from the start).
    r.execute(id, 1);
    let (rows, _) = r.fetch(id, 2).unwrap();
    assert_eq!(rows, plain[..2]);
    r.execute(id, 1);
    let (rows, _) = r.fetch(id, 100).unwrap();
    assert_eq!(rows, plain, "a re-execute starts over");
    // RESET closes it.
    r.execute(id, 1);
    let mut p = vec![0x1a];
    p.extend_from_slice(&id.to_le_bytes());
    assert_eq!(r.command(&p)[0], 0);
    assert_eq!(r.fetch(id, 1), Err(1421));
    // A plain EXECUTE leaves no cursor.
    r.execute(id, 0);
    assert_eq!(r.fetch(id, 1), Err(1421));
    // Two statements' cursors are independent.
    let (id2, _) = r.prepare("SELECT id FROM t WHERE id > 20 ORDER BY id");
    r.execute(id, 1);
    r.execute(id2, 1);
    let (a, _) = r.fetch(id2, 10).unwrap();
    assert_eq!(a.len(), 3);
    let (b, _) = r.fetch(id, 1).unwrap();
    assert_eq!(b, plain[..1]);
    // An empty result: a cursor whose first FETCH is the last.
    let (id3, _) = r.prepare("SELECT id FROM t WHERE id < 0");
    let (st, _) = r.execute(id3, 1);
    assert_ne!(st & CURSOR_EXISTS, 0);
    let (rows, st) = r.fetch(id3, 10).unwrap();
    assert!(rows.is_empty());
    assert_ne!(st & LAST_ROW_SENT, 0);
    // CLOSE closes it (no reply); the id is then unknown.
    r.execute(id, 1);
    let mut p = vec![0x19];
    p.extend_from_slice(&id.to_le_bytes());
    r.write(0, &p);
    assert_eq!(r.fetch(id, 1), Err(1243));
    assert_eq!(r.fetch(999, 1), Err(1243));
    // A statement without a result ignores the cursor flag: an OK.
    let (id4, _) = r.prepare("DO 1");
    let mut p = vec![0x17];
    p.extend_from_slice(&id4.to_le_bytes());
    p.push(1);
    p.extend_from_slice(&1u32.to_le_bytes());
    assert_eq!(r.command(&p)[0], 0);
    assert_eq!(r.fetch(id4, 1), Err(1421));
    // A malformed FETCH.
    assert_eq!(r.command(&[0x1c, 1, 0])[0], 0xff);
    // The connection still works.
    let (_, rows) = r.execute(id2, 0);
    assert_eq!(rows.len(), 3);
}

#[test]
fn cursors_fetch_in_batches() {
    let srv = TestServer::start();
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE cur").unwrap();
    c.query_drop("CREATE TABLE cur.t (id INT PRIMARY KEY, name VARCHAR(20), score DOUBLE, born DATE)")
        .unwrap();
    for i in 1..=23 {
        let name = if i % 5 == 0 { "NULL".to_string() } else { format!("'n{i}'") };
        c.query_drop(format!("INSERT INTO cur.t VALUES ({i}, {name}, {i}.5, '2000-01-{:02}')", i)).unwrap();
    }
    check(srv.port, false);
    check(srv.port, true);
}
