//! `fractaldb server` as an operator runs it: the built binary on a fresh
//! data folder (created on first start), a client over TCP and over the
//! socket, a clean exit (status 0) on SIGTERM with the log saying so, data
//! kept across restarts, and a refused non-loopback address.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");

/// Starts the server on a free port; returns it and the port it logged.
fn start(datadir: &std::path::Path) -> (Child, u16) {
    let mut child = Command::new(BIN)
        .args(["server", "--port", "0", "--cache-mb", "16", "--datadir"])
        .arg(datadir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting fractaldb server");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        assert!(Instant::now() < deadline, "no 'listening on' line");
        let line = lines.next().expect("the server exited").unwrap();
        if let Some(addr) = line.split("listening on 127.0.0.1:").nth(1) {
            break addr.trim().parse::<u16>().unwrap();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, port)
}

/// A minimal client: greeting, login as root, one COM_QUERY; returns the
/// first byte of the reply (0x00 OK, 0xff ERR, else a column count).
fn query(port: u16, sql: &str) -> u8 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let read = |s: &mut TcpStream| {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let mut p = vec![0u8; h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16];
        s.read_exact(&mut p).unwrap();
        p
    };
    let write = |s: &mut TcpStream, seq: u8, p: &[u8]| {
        let mut b = (p.len() as u32).to_le_bytes()[..3].to_vec();
        b.push(seq);
        b.extend_from_slice(p);
        s.write_all(&b).unwrap();
    };
    assert_eq!(read(&mut s)[0], 10, "protocol 10 greeting");
    let caps: u32 = 0x200 | 0x8000 | 0x1_0000 | 0x2_0000 | 0x8_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"root\0\0mysql_native_password\0");
    write(&mut s, 1, &p);
    assert_eq!(read(&mut s)[0], 0, "login");
    let mut q = vec![3u8];
    q.extend_from_slice(sql.as_bytes());
    write(&mut s, 0, &q);
    read(&mut s)[0]
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "exit status after SIGTERM: {st}");
            return;
        }
        assert!(Instant::now() < deadline, "no exit within 60 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn server_starts_serves_and_stops_on_sigterm() {
    let tmp = tempfile::Builder::new().prefix("fdbcli").tempdir_in("/tmp").unwrap();
    let datadir = tmp.path().join("new-folder");
    let (child, port) = start(&datadir);
    assert!(datadir.join("fractaldb.sock").exists(), "the socket is in the data folder");
    assert_eq!(query(port, "CREATE DATABASE kept"), 0);
    assert_eq!(query(port, "CREATE TABLE kept.t (id INT PRIMARY KEY)"), 0);
    assert_eq!(query(port, "INSERT INTO kept.t VALUES (1)"), 0);
    assert_eq!(query(port, "SELECT * FROM nope.t"), 0xff);
    stop(child);
    let log = std::fs::read_to_string(datadir.join("fractaldb.log")).unwrap();
    assert!(log.contains("listening on 127.0.0.1:"), "{log}");
    assert!(log.contains("shutdown complete"), "{log}");
    assert!(!datadir.join("fractaldb.sock").exists(), "the socket is removed at shutdown");

    // Again on the same folder: the data is there.
    let (child, port) = start(&datadir);
    assert_eq!(query(port, "SELECT id FROM kept.t"), 1, "one column");
    stop(child);
}

#[test]
fn server_refuses_a_non_loopback_address() {
    let tmp = tempfile::Builder::new().prefix("fdbcli").tempdir_in("/tmp").unwrap();
    let out = Command::new(BIN)
        .args(["server", "--port", "0", "--bind", "0.0.0.0", "--datadir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0"), "{err}");
}

#[test]
fn fractaldb_backup_copies_a_running_and_a_stopped_server_into_folders_a_server_starts_on() {
    let dir = tempfile::Builder::new().prefix("fdbbk").tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    let (child, port) = start(&data);
    for sql in
        ["CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2), (3)"]
    {
        assert_eq!(query(port, sql), 0, "{sql}");
    }
    let backup = |args: &[&str], dest: &std::path::Path| {
        Command::new(BIN).arg("backup").args(args).arg(dest).output().expect("running fractaldb backup")
    };
    // A running server on this machine, over the protocol: the folder is
    // made here, and a relative path is this process's, not the server's.
    let online = dir.path().join("online");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["backup", "--host", "127.0.0.1", "--port", &port.to_string(), "--user", "root", "online"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Into the same folder again: refused, saying why.
    let out = backup(&["--port", &port.to_string()], &online);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stop(child);
    // A stopped one, from its data folder.
    let offline = dir.path().join("offline");
    let out = backup(&["--datadir", data.to_str().unwrap()], &offline);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for copy in [&online, &offline] {
        assert!(copy.join("server-cert.pem").is_file());
        let (child, port) = start(copy);
        assert_eq!(query(port, "INSERT INTO d.t VALUES (3)"), 0xff, "row 3 is in {}", copy.display());
        assert_eq!(query(port, "INSERT INTO d.t VALUES (4)"), 0, "{}", copy.display());
        stop(child);
    }
}
