//! `fractaldb server` configured by a my.cnf and flags, as an operator runs
//! it: the settings reach @@variables (flags over the file), the start log
//! names the file, the data folder and the recovery; SHUTDOWN from the
//! `mariadb` client checkpoints and the process exits 0; an unknown option
//! stops the start naming it with file and line. Skipped (with a note)
//! without the `mariadb` client, except under CI=true.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");

fn mariadb() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join("mariadb")).find(|p| p.is_file());
    if found.is_none() {
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "mariadb client missing under CI=true");
        eprintln!("SKIPPED: the mariadb client is not installed");
    }
    found
}

/// Starts the server; returns it, its port and the stderr lines so far.
fn start(args: &[&str]) -> (Child, u16, Vec<String>) {
    let mut child = Command::new(BIN)
        .arg("server")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting fractaldb server");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        assert!(Instant::now() < deadline, "no 'listening on' line: {seen:?}");
        let line = lines.next().expect("the server exited").unwrap();
        seen.push(line.clone());
        if let Some(addr) = line.split("listening on 127.0.0.1:").nth(1) {
            break addr.trim().parse::<u16>().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, port, seen)
}

fn sql(client: &Path, port: u16, q: &str) -> String {
    let out = Command::new(client)
        .args(["--no-defaults", "-h127.0.0.1", "-uroot", "-N", "-B"])
        .arg(format!("-P{port}"))
        .args(["-e", q])
        .output()
        .unwrap();
    assert!(out.status.success(), "{q}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn my_cnf_flags_shutdown_and_exit_code() {
    let Some(client) = mariadb() else { return };
    let dir = tempfile::Builder::new().prefix("fdbops").tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    let cnf = dir.path().join("my.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[client]\nport=1\n[mysqld]\ndatadir={}\nport=0\nmax-connections=40\n\
             tokudb_cache_size=16M\nloose-innodb-buffer-pool-size=1G\n[fractaldb]\n\
             tokudb_commit_sync=OFF\nwait_timeout=900\nsql_mode=\"STRICT_ALL_TABLES\"\n",
            data.display()
        ),
    )
    .unwrap();
    let (mut child, port, _) = start(&[
        "--defaults-file",
        cnf.to_str().unwrap(),
        "--max-connections",
        "41",
        "--lock-wait-timeout=77",
    ]);
    let got = sql(
        &client,
        port,
        "SELECT @@max_connections, @@tokudb_cache_size, @@tokudb_commit_sync, @@wait_timeout, @@sql_mode, @@lock_wait_timeout, @@port",
    );
    assert_eq!(
        got.trim(),
        format!("41\t16777216\t0\t900\tSTRICT_ALL_TABLES\t77\t{port}"),
        "the flag wins over the file"
    );
    sql(
        &client,
        port,
        "CREATE DATABASE k; CREATE TABLE k.t (id INT PRIMARY KEY); INSERT INTO k.t VALUES (1), (2)",
    );
    sql(&client, port, "SHUTDOWN");
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    let log = std::fs::read_to_string(data.join("fractaldb.log")).unwrap();
    for want in [
        "fractaldb 10.11.99-fractaldb starting on",
        &format!("configuration file {}", cnf.display()),
        "recovery: ",
        "shutdown requested by connection",
        "database closed (checkpoint)",
    ] {
        assert!(log.contains(want), "{want:?} not in the log:\n{log}");
    }
    // The data is there after a restart from the same file.
    let (mut child, port, _) = start(&["--defaults-file", cnf.to_str().unwrap()]);
    assert_eq!(sql(&client, port, "SELECT COUNT(*) FROM k.t").trim(), "2");
    assert_eq!(sql(&client, port, "SELECT @@max_connections").trim(), "40");
    sql(&client, port, "SHUTDOWN");
    assert!(child.wait().unwrap().success());
}

#[test]
fn unknown_option_is_an_error_naming_file_and_line() {
    let dir = tempfile::Builder::new().prefix("fdbops").tempdir_in("/tmp").unwrap();
    let cnf = dir.path().join("my.cnf");
    std::fs::write(&cnf, "[mysqld]\nport=0\nfrobnicate=1\n").unwrap();
    let out = Command::new(BIN)
        .args(["server", "--datadir"])
        .arg(dir.path().join("data"))
        .arg("--defaults-file")
        .arg(&cnf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:3: unknown variable 'frobnicate=1'", cnf.display())), "{err}");
    let out = Command::new(BIN)
        .args(["server", "--port=0", "--datadir"])
        .arg(dir.path().join("data"))
        .arg("--no-such-thing=2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("command line: unknown variable 'no_such_thing=2'"), "{err}");
}

#[test]
fn recovery_after_a_crash_is_logged_with_what_it_replayed() {
    let Some(client) = mariadb() else { return };
    let dir = tempfile::Builder::new().prefix("fdbops").tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let (mut child, port, _) = start(&["--port=0", "--datadir", d, "--tokudb-checkpointing-period=0"]);
    sql(
        &client,
        port,
        "CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY); INSERT INTO r.t VALUES (1), (2), (3)",
    );
    // A crash: no checkpoint, the acknowledged writes only in the log.
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, port, lines) = start(&["--port=0", "--datadir", d]);
    // The server's summary line (the engine's progress notes say
    // "recovery:" too).
    let rec = lines
        .iter()
        .find(|l| l.contains("recovery: ") && l.contains(" replayed, in "))
        .expect("a recovery line");
    let read: u64 = rec.split("recovery: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let replayed: u64 = rec.split(" read, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(read > 0 && replayed > 0, "{rec}");
    assert_eq!(sql(&client, port, "SELECT COUNT(*) FROM r.t").trim(), "3");
    sql(&client, port, "SHUTDOWN");
    assert!(child.wait().unwrap().success());
}

/// COM_SHUTDOWN (what old `mysqladmin shutdown` sends) over a raw socket.
fn com_shutdown(port: u16) -> u8 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let read = |s: &mut std::net::TcpStream| {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let mut p = vec![0u8; h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16];
        s.read_exact(&mut p).unwrap();
        p
    };
    let write = |s: &mut std::net::TcpStream, seq: u8, p: &[u8]| {
        let mut b = (p.len() as u32).to_le_bytes()[..3].to_vec();
        b.push(seq);
        b.extend_from_slice(p);
        s.write_all(&b).unwrap();
    };
    assert_eq!(read(&mut s)[0], 10, "protocol 10 greeting");
    let caps: u32 = 0x200 | 0x8000 | 0x8_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"root\0\0mysql_native_password\0");
    write(&mut s, 1, &p);
    assert_eq!(read(&mut s)[0], 0, "login");
    write(&mut s, 0, &[8, 0]);
    read(&mut s)[0]
}

#[test]
fn com_shutdown_stops_the_process_with_exit_0() {
    let dir = tempfile::Builder::new().prefix("fdbops").tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    let (mut child, port, _) = start(&["--port=0", "--datadir", data.to_str().unwrap()]);
    assert_eq!(com_shutdown(port), 0, "OK");
    assert!(child.wait().unwrap().success());
    let log = std::fs::read_to_string(data.join("fractaldb.log")).unwrap();
    assert!(log.contains("shutdown requested by connection") && log.contains("shutdown complete"), "{log}");
}
