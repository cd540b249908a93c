//! Protocol fuzzing from a raw socket: malformed, truncated, oversized and
//! out-of-order packets, before and after authentication. The server must
//! answer with an error packet or close the connection, within a timeout,
//! and keep serving other connections.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mysql::prelude::Queryable;
use rand::{Rng, SeedableRng};
use support::TestServer;

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s
}

/// Reads one packet: (sequence id, payload); `None` on close.
fn read_packet(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 4];
    match s.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            panic!("the server hung: no answer and no close within the timeout")
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

/// A handshake response for root with an empty password (protocol 41,
/// plugin auth, deprecate EOF off).
fn login(port: u16) -> TcpStream {
    let mut s = connect(port);
    let (_, greeting) = read_packet(&mut s).expect("greeting");
    assert_eq!(greeting[0], 10);
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0001_0000 | 0x0002_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"root\0");
    p.push(0); // empty auth response
    p.extend_from_slice(b"mysql_native_password\0");
    write_packet(&mut s, 1, &p);
    let (_, ok) = read_packet(&mut s).expect("auth reply");
    assert_eq!(ok[0], 0, "login failed: {ok:?}");
    s
}

/// Reads answers until the server closes or is quiet for a while; returns
/// the first byte of each.
fn answers(s: &mut TcpStream) -> Vec<u8> {
    answers_within(s, Duration::from_millis(300))
}

fn answers_within(s: &mut TcpStream, quiet: Duration) -> Vec<u8> {
    let mut firsts = Vec::new();
    s.set_read_timeout(Some(quiet)).unwrap();
    loop {
        let mut h = [0u8; 4];
        match s.read_exact(&mut h) {
            Ok(()) => {
                let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
                let mut p = vec![0u8; len];
                if s.read_exact(&mut p).is_err() {
                    break;
                }
                firsts.push(p.first().copied().unwrap_or(0));
            }
            Err(_) => break,
        }
    }
    firsts
}

fn still_serving(srv: &TestServer) {
    let mut c = srv.conn();
    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn malformed_packets_get_errors_or_a_close() {
    let srv = TestServer::start();
    let port = srv.port;

    // Before authentication: garbage, a truncated response, a header that
    // promises more than it sends, a wrong sequence id, a huge length.
    for bad in [
        vec![1, 0, 0, 1, 0xff],
        vec![4, 0, 0, 1, 1, 2, 3],
        vec![100, 0, 0, 1, 1, 2, 3],
        vec![0, 0, 0, 7],
        vec![0xff, 0xff, 0xff, 1, 0, 0],
        b"GET / HTTP/1.0\r\n\r\n".to_vec(),
    ] {
        let mut s = connect(port);
        read_packet(&mut s).expect("greeting");
        let _ = s.write_all(&bad);
        let _ = s.shutdown(std::net::Shutdown::Write);
        while read_packet(&mut s).is_some() {}
    }
    still_serving(&srv);

    // After authentication: each command with a bad body gets an ERR (0xff).
    let mut s = login(port);
    for payload in [
        vec![],                                // no command byte
        vec![0x63],                            // unknown command
        vec![0x00],                            // COM_SLEEP
        vec![0x17, 1],                         // COM_STMT_EXECUTE, truncated
        vec![0x17, 9, 9, 9, 9, 0, 1, 0, 0, 0], // EXECUTE of an unknown statement
        vec![0x1a, 1],                         // COM_STMT_RESET, truncated
        vec![0x1c, 5, 0, 0, 0, 1, 0, 0, 0],    // COM_STMT_FETCH without a cursor
        vec![0x0c],                            // COM_PROCESS_KILL without an id
        vec![0x1b, 9, 9],                      // COM_SET_OPTION, unknown option
        vec![0x03, 0xff, 0xfe, b';'],          // COM_QUERY, not UTF-8
        vec![0x02, b'n', b'o'],                // COM_INIT_DB of a missing database
    ] {
        write_packet(&mut s, 0, &payload);
        let a = answers(&mut s);
        assert_eq!(a, vec![0xff], "payload {payload:?}: answers {a:?}");
    }
    // A prepared statement whose parameters are malformed.
    let mut q = vec![0x16];
    q.extend_from_slice(b"SELECT ?");
    write_packet(&mut s, 0, &q);
    let (_, ok) = read_packet(&mut s).unwrap();
    assert_eq!(ok[0], 0);
    let id = u32::from_le_bytes(ok[1..5].try_into().unwrap());
    let _ = answers(&mut s); // the parameter and column definitions
    let mut ex = vec![0x17];
    ex.extend_from_slice(&id.to_le_bytes());
    ex.extend_from_slice(&[0, 1, 0, 0, 0]);
    ex.extend_from_slice(&[0, 1, 253, 0, 0xfc]); // a string length cut short
    write_packet(&mut s, 0, &ex);
    assert_eq!(answers(&mut s), vec![0xff]);
    let mut ex2 = vec![0x17];
    ex2.extend_from_slice(&id.to_le_bytes());
    ex2.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0]); // no types ever bound
    write_packet(&mut s, 0, &ex2);
    assert_eq!(answers(&mut s), vec![0xff]);
    // The connection still works.
    let mut q = vec![0x03];
    q.extend_from_slice(b"SELECT 1");
    write_packet(&mut s, 0, &q);
    let a = answers(&mut s);
    assert_eq!(a.first(), Some(&1), "a result set (1 column): {a:?}");

    // Out of order: a command with sequence id 5 gets 1156 and a close.
    write_packet(&mut s, 5, &[0x0e]);
    let (_, e) = read_packet(&mut s).expect("an error before the close");
    assert_eq!(e[0], 0xff);
    assert_eq!(u16::from_le_bytes([e[1], e[2]]), 1156);
    assert!(read_packet(&mut s).is_none(), "closed after 1156");

    // Oversized: more than max_allowed_packet (64 MiB) announced in chunks.
    let mut s = login(port);
    let chunk = vec![0u8; 0xff_ffff];
    let mut seq = 0u8;
    let mut saw_error = false;
    for _ in 0..5 {
        let mut b = vec![0xff, 0xff, 0xff, seq];
        b.extend_from_slice(&chunk);
        seq = seq.wrapping_add(1);
        if s.write_all(&b).is_err() {
            break;
        }
    }
    if let Some((_, e)) = read_packet(&mut s) {
        assert_eq!(e[0], 0xff);
        assert_eq!(u16::from_le_bytes([e[1], e[2]]), 1153);
        saw_error = true;
    }
    assert!(saw_error || read_packet(&mut s).is_none());
    still_serving(&srv);

    // Random bytes after login, many times: never a hang or a crash.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(23);
    for _ in 0..60 {
        let mut s = login(port);
        let n = rng.gen_range(0..64);
        let mut payload: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        if !payload.is_empty() && rng.gen_bool(0.5) {
            // Mostly valid command bytes, to reach the command handlers.
            payload[0] = rng.gen_range(0..32);
        }
        if payload.first() == Some(&0x08) || payload.first() == Some(&0x1f) {
            continue;
        }
        write_packet(&mut s, 0, &payload);
        let _ = answers_within(&mut s, Duration::from_millis(50));
    }
    still_serving(&srv);
    assert!(!srv.log().contains("panicked"), "{}", srv.log());
}

/// Sends one command and collects every packet of the reply until the
/// server is quiet.
fn command(s: &mut TcpStream, payload: &[u8]) -> Vec<Vec<u8>> {
    write_packet(s, 0, payload);
    let mut out = Vec::new();
    s.set_read_timeout(Some(Duration::from_millis(400))).unwrap();
    loop {
        let mut h = [0u8; 4];
        if s.read_exact(&mut h).is_err() {
            break;
        }
        let mut p = vec![0u8; h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16];
        if s.read_exact(&mut p).is_err() {
            break;
        }
        out.push(p);
    }
    out
}

/// The commands the mariadb client uses besides COM_QUERY, answered in
/// MySQL's forms (classic EOF packets: this client does not ask for
/// DEPRECATE_EOF).
#[test]
fn raw_commands_answer_in_mysql_forms() {
    let srv = TestServer::start();
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, name VARCHAR(10), note TEXT)").unwrap();
    let mut s = login(srv.port);

    let r = command(&mut s, b"\x02d"); // COM_INIT_DB
    assert_eq!(r.len(), 1);
    assert_eq!(r[0][0], 0);

    // COM_FIELD_LIST: one definition per column (with a default value
    // field at the end), then EOF; a wildcard filters.
    let r = command(&mut s, b"\x04t\x00");
    assert_eq!(r.len(), 4, "{r:?}");
    for def in &r[..3] {
        assert!(def.starts_with(b"\x03def\x01d\x01t\x01t"), "{def:?}");
        assert_eq!(*def.last().unwrap(), 0xfb, "default NULL");
    }
    assert!(r[1].windows(4).any(|w| w == b"name"));
    assert_eq!(r[3][0], 0xfe);
    let r = command(&mut s, b"\x04t\x00n%");
    assert_eq!(r.len(), 3, "name and note");
    let r = command(&mut s, b"\x04nope\x00");
    assert_eq!(r.len(), 1);
    assert_eq!(u16::from_le_bytes([r[0][1], r[0][2]]), 1146);

    // COM_STATISTICS: one plain text packet.
    let r = command(&mut s, b"\x09");
    assert_eq!(r.len(), 1);
    let line = String::from_utf8_lossy(&r[0]).into_owned();
    assert!(
        line.starts_with("Uptime: ") && line.contains("  Threads: ") && line.contains("  Questions: "),
        "{line}"
    );

    // COM_SET_OPTION: multi-statements off, then on (EOF each time).
    let r = command(&mut s, b"\x1b\x01\x00");
    assert_eq!(r, vec![vec![0xfe, 0, 0, 2, 0]]);
    let r = command(&mut s, b"\x03SELECT 1; SELECT 2");
    assert_eq!(r.len(), 1);
    assert_eq!(u16::from_le_bytes([r[0][1], r[0][2]]), 1064);
    let r = command(&mut s, b"\x1b\x00\x00");
    assert_eq!(r[0][0], 0xfe);
    let r = command(&mut s, b"\x03SELECT 1; SELECT 2");
    // Two result sets: count, def, EOF, row, EOF each; the first EOF after
    // rows says more results exist (status bit 8).
    assert_eq!(r.len(), 10, "{r:?}");
    assert_eq!(r[4][0], 0xfe);
    assert_eq!(u16::from_le_bytes([r[4][3], r[4][4]]) & 8, 8);
    assert_eq!(u16::from_le_bytes([r[9][3], r[9][4]]) & 8, 0);

    // Pipelined: two commands in one write, two replies in order.
    let mut both = Vec::new();
    for q in [&b"\x03SELECT 7"[..], b"\x03SELECT * FROM nope"] {
        both.extend_from_slice(&(q.len() as u32).to_le_bytes()[..3]);
        both.push(0);
        both.extend_from_slice(q);
    }
    s.write_all(&both).unwrap();
    let r = command(&mut s, b"\x0e"); // and a third, a ping
    assert_eq!(r.len(), 5 + 1 + 1, "a result set, an ERR, an OK: {r:?}");
    assert_eq!(r[3], b"\x017");
    assert_eq!(r[5][0], 0xff);
    assert_eq!(r[6][0], 0);

    // COM_PING, COM_PROCESS_INFO, COM_RESET_CONNECTION.
    assert_eq!(command(&mut s, b"\x0e")[0][0], 0);
    let r = command(&mut s, b"\x0a");
    assert_eq!(r[0][0], 9, "SHOW PROCESSLIST's 9 columns (MariaDB's, with Progress): {r:?}");
    assert_eq!(command(&mut s, b"\x1f")[0][0], 0);
    // COM_QUIT: the server closes without a reply.
    write_packet(&mut s, 0, b"\x01");
    assert!(read_packet(&mut s).is_none());
}

/// A handshake response for root naming `plugin`, with `auth` as its data.
fn hello(port: u16, plugin: &str, auth: &[u8]) -> TcpStream {
    let mut s = connect(port);
    read_packet(&mut s).expect("greeting");
    let caps: u32 = 0x200 | 0x8000 | 0x8_0000 | 0x20_0000; // 4.1, secure, plugin auth, lenenc data
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"root\0");
    p.push(auth.len() as u8);
    p.extend_from_slice(auth);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    write_packet(&mut s, 1, &p);
    s
}

#[test]
fn auth_plugins_and_switch() {
    let srv = TestServer::start();
    // caching_sha2_password (MySQL 8 clients' default), empty password.
    let mut s = hello(srv.port, "caching_sha2_password", b"");
    assert_eq!(read_packet(&mut s).unwrap().1[0], 0, "OK");
    // A plugin this server lacks: switched to mysql_native_password.
    let mut s = hello(srv.port, "client_ed25519", b"xx");
    let (seq, sw) = read_packet(&mut s).unwrap();
    assert_eq!(sw[0], 0xfe, "AuthSwitchRequest");
    assert!(sw[1..].starts_with(b"mysql_native_password\0"));
    assert_eq!(sw.len(), 1 + 22 + 20 + 1, "plugin, 20-byte scramble, NUL");
    write_packet(&mut s, seq + 1, b"");
    assert_eq!(read_packet(&mut s).unwrap().1[0], 0, "OK after the switch");
    // A password for root (which has none): 1045.
    let mut s = hello(srv.port, "mysql_native_password", &[7; 20]);
    let (_, e) = read_packet(&mut s).unwrap();
    assert_eq!(u16::from_le_bytes([e[1], e[2]]), 1045);
    assert!(String::from_utf8_lossy(&e[9..]).ends_with("(using password: YES)"));
    assert!(read_packet(&mut s).is_none(), "closed after 1045");
}

/// An SSLRequest followed by bytes that are no TLS ClientHello (or by a
/// truncated one, or by nothing before the client closes): the server
/// closes that connection, with no hang and no panic, and serves others.
#[test]
fn garbage_after_ssl_request_closes() {
    let srv = TestServer::start();
    let port = srv.port;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(23);
    let ssl_request = || {
        let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0800;
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p
    };
    // A real ClientHello's first bytes (handshake record, TLS 1.0 record
    // version), cut short.
    let truncated_hello: Vec<u8> = vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];
    let mut cases: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.0\r\n\r\n".to_vec(),
        vec![0; 64],
        // A MySQL packet instead of TLS.
        {
            let mut b = vec![5, 0, 0, 2];
            b.extend_from_slice(b"\x03abcd");
            b
        },
    ];
    for _ in 0..5 {
        let n = rng.gen_range(1..2000);
        cases.push((0..n).map(|_| rng.gen()).collect());
    }
    for (i, garbage) in cases.iter().enumerate() {
        let mut s = connect(port);
        let (_, greeting) = read_packet(&mut s).expect("greeting");
        assert_eq!(greeting[0], 10);
        write_packet(&mut s, 1, &ssl_request());
        let _ = s.write_all(garbage);
        // Whatever comes back (maybe a TLS alert), the server must close.
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    panic!("case {i}: the server hung after garbage instead of a ClientHello")
                }
                Err(_) => break,
            }
        }
    }
    // A truncated ClientHello, then the client closes its side.
    let mut s = connect(port);
    read_packet(&mut s).expect("greeting");
    write_packet(&mut s, 1, &ssl_request());
    let _ = s.write_all(&truncated_hello);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    still_serving(&srv);
    assert!(!srv.log().contains("panicked"), "{}", srv.log());
}
