//! A private MariaDB server for tests, the oracle fractaldb is compared with.
//!
//! Tests never use a system service: each server here gets its own data
//! folder (made by `mariadb-install-db`), a free TCP port on 127.0.0.1 and a
//! socket inside its folder, and runs with `--no-defaults` so no
//! `/etc/mysql` setting changes what it answers.
//!
//! Lifetime. A test binary shares one server ([`MariaDb::shared`], a fresh
//! database per test, see [`MariaDb::fresh_db`]); tests of the harness start
//! their own ([`MariaDb::start`]), stopped in `Drop`. Statics are never
//! dropped, so the shared server is ended another way: every server is
//! spawned by a keeper thread that lives until the server is asked to stop
//! (never, for the shared one), and the server gets `PR_SET_PDEATHSIG`
//! SIGTERM, which the kernel sends when the thread that spawned it ends — at
//! the latest when the test process exits, however it exits (even SIGKILL).
//! The shared server's folder, named after the test process's pid, is
//! removed by the next run that finds its owner gone.
//!
//! Without `mariadbd` the tests that need it skip with a message, except
//! under CI (`CI=true`), where that is a failure: CI installs MariaDB.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

use super::{Rows, RunResult};

/// How long a new server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopping server may take before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Prefix of the shared servers' folders in the temp dir (then the pid).
const SHARED_PREFIX: &str = "fractaldb-mariadb-";

/// A running private MariaDB server.
pub struct MariaDb {
    port: u16,
    dir: PathBuf,
    pid: u32,
    /// The keeper thread's stop request; `None` once stopped.
    stop: Mutex<Option<Stopper>>,
    /// Set by the keeper thread when the server exits.
    exited: Arc<Mutex<Option<ExitStatus>>>,
    /// Whether `Drop` removes `dir` (a private server's folder).
    remove_dir: bool,
}

struct Stopper {
    request: mpsc::Sender<()>,
    done: mpsc::Receiver<()>,
}

/// Whether a missing MariaDB fails (CI) or skips the test.
fn required() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Finds a program on PATH, or in the sbin folders Debian puts mariadbd in
/// (not on a non-root user's PATH).
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// True when MariaDB is installed. When it is not: under CI this panics
/// (CI must have it), elsewhere it prints why the test is skipped.
pub fn available(test: &str) -> bool {
    if find_program("mariadbd").is_some() && find_program("mariadb-install-db").is_some() {
        return true;
    }
    if required() {
        panic!("{test}: mariadbd/mariadb-install-db not found, and CI=true requires MariaDB (apt-get install mariadb-server)");
    }
    eprintln!("{test}: SKIPPED: mariadbd not found (install mariadb-server; under CI=true this fails)");
    false
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A port that was free a moment ago (the server may still lose a race for
/// it; [`MariaDb::start_in`] then retries with another).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

fn read_log(dir: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(dir.join("error.log")) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) == 0 }
}

/// Removes the folders of shared servers whose test process is gone,
/// killing their server if it still runs.
fn remove_leftovers() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name.strip_prefix(SHARED_PREFIX).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid_alive(owner) {
            continue;
        }
        let dir = e.path();
        if let Ok(pid) = std::fs::read_to_string(dir.join("mariadbd.pid")) {
            let pid: i32 = pid.trim().parse().unwrap_or(0);
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if pid_alive(pid) && String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy()) {
                // SAFETY: plain kill(2) of a server this harness started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

impl MariaDb {
    /// The server shared by the tests of this binary, started on first use;
    /// `None` (after a message) when MariaDB is not installed and not required.
    pub fn shared() -> Option<&'static MariaDb> {
        static SHARED: OnceLock<Option<MariaDb>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                if !available("MariaDb::shared") {
                    return None;
                }
                remove_leftovers();
                let dir = std::env::temp_dir().join(format!("{SHARED_PREFIX}{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                Some(MariaDb::start_in(dir, false))
            })
            .as_ref()
    }

    /// A server of its own, in a new temp folder removed when it is dropped.
    /// Panics when MariaDB is missing; check [`available`] first.
    pub fn start() -> MariaDb {
        let dir = tempfile::Builder::new().prefix("fractaldb-mariadb-own-").tempdir().expect("tempdir");
        MariaDb::start_in(dir.keep(), true)
    }

    fn start_in(dir: PathBuf, remove_dir: bool) -> MariaDb {
        std::fs::create_dir_all(&dir).expect("creating the server's folder");
        let data = dir.join("data");
        // A temporary folder of the server's own: two servers bootstrapping
        // at once (the shared one and a test's own) shared /tmp, and one
        // bootstrap failed on a temporary table the other side removed.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).expect("creating the server's temporary folder");
        let mut install = Command::new(find_program("mariadb-install-db").expect("mariadb-install-db"));
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .arg(format!("--tmpdir={}", tmp.display()))
            .stdin(Stdio::null());
        if is_root() {
            install.arg("--user=root");
        }
        let out = install.output().expect("running mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut last_err = String::new();
        for _attempt in 0..5 {
            match MariaDb::launch(&dir, &data, remove_dir) {
                Ok(server) => return server,
                Err(e) => last_err = e,
            }
        }
        panic!("MariaDB did not start in {}:\n{last_err}", dir.display());
    }

    /// Starts mariadbd on a free port and waits until it accepts a
    /// connection. Err carries the reason and the error log.
    fn launch(dir: &Path, data: &Path, remove_dir: bool) -> Result<MariaDb, String> {
        let port = free_port();
        let _ = std::fs::remove_file(dir.join("error.log"));
        let mut cmd = Command::new(find_program("mariadbd").expect("mariadbd"));
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--tmpdir={}", dir.join("tmp").display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            // Answers must not depend on the machine: the charset fractaldb
            // defaults to, and nothing read from /etc.
            .arg("--character-set-server=utf8mb4")
            .arg("--collation-server=utf8mb4_general_ci")
            .arg("--default-storage-engine=InnoDB")
            // Speed, not durability: the data is thrown away.
            .arg("--skip-name-resolve")
            .arg("--performance-schema=OFF")
            .arg("--innodb-buffer-pool-size=64M")
            .arg("--innodb-flush-log-at-trx-commit=0")
            .arg("--innodb-doublewrite=0")
            .arg("--skip-log-bin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if is_root() {
            cmd.arg("--user=root");
        }
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let exited: Arc<Mutex<Option<ExitStatus>>> = Arc::new(Mutex::new(None));
        let (pid_tx, pid_rx) = mpsc::channel::<std::io::Result<u32>>();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let exited2 = exited.clone();
        std::thread::Builder::new()
            .name(format!("mariadbd-{port}"))
            .spawn(move || keeper(cmd, pid_tx, stop_rx, done_tx, exited2))
            .expect("spawning the keeper thread");
        let pid = pid_rx
            .recv()
            .map_err(|_| "keeper thread died".to_string())?
            .map_err(|e| format!("spawning mariadbd: {e}"))?;
        let server = MariaDb {
            port,
            dir: dir.to_path_buf(),
            pid,
            stop: Mutex::new(Some(Stopper { request: stop_tx, done: done_rx })),
            exited,
            remove_dir: false,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = *server.exited.lock().unwrap() {
                return Err(format!("mariadbd exited ({status}) on port {port}:\n{}", read_log(dir)));
            }
            if server.try_conn().is_ok() {
                let mut server = server;
                server.remove_dir = remove_dir;
                return Ok(server);
            }
            if Instant::now() > deadline {
                server.stop_now();
                return Err(format!(
                    "mariadbd did not accept connections on port {port} within {START_TIMEOUT:?}:\n{}",
                    read_log(dir)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The TCP port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's error log so far.
    pub fn log(&self) -> String {
        read_log(&self.dir)
    }

    fn opts(&self, db: Option<&str>) -> OptsBuilder {
        OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.port)
            .user(Some("root"))
            .pass(None::<String>)
            .db_name(db)
            .prefer_socket(false)
            .tcp_connect_timeout(Some(Duration::from_secs(5)))
    }

    fn try_conn(&self) -> mysql::Result<Conn> {
        Conn::new(self.opts(None))
    }

    /// A new connection as root, no database selected.
    pub fn conn(&self) -> Conn {
        self.try_conn().unwrap_or_else(|e| panic!("connecting to MariaDB: {e}\n{}", self.log()))
    }

    /// A new connection with `db` selected.
    pub fn conn_db(&self, db: &str) -> Conn {
        Conn::new(self.opts(Some(db)))
            .unwrap_or_else(|e| panic!("connecting to MariaDB: {e}\n{}", self.log()))
    }

    /// A connection to a new empty database named after `name` (made
    /// unique in this server); returns the database's name too. Earlier
    /// databases of that name are dropped.
    pub fn fresh_db(&self, name: &str) -> (Conn, String) {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let db: String = format!("{name}_{n}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
            .collect();
        let mut c = self.conn();
        run(&mut c, &format!("DROP DATABASE IF EXISTS `{db}`")).expect("drop database");
        run(&mut c, &format!("CREATE DATABASE `{db}`")).expect("create database");
        run(&mut c, &format!("USE `{db}`")).expect("use");
        (c, db)
    }

    /// Stops the server: SIGTERM, then SIGKILL if it is still running after
    /// [`STOP_TIMEOUT`]. Returns once the process is gone.
    fn stop_now(&self) {
        if let Some(s) = self.stop.lock().unwrap().take() {
            let _ = s.request.send(());
            let _ = s.done.recv();
        }
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop_now();
        if self.remove_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Owns the server process: spawns it (so `PR_SET_PDEATHSIG` is tied to
/// this thread, which outlives the tests), reports its exit, and stops it
/// on request.
fn keeper(
    mut cmd: Command,
    pid_tx: mpsc::Sender<std::io::Result<u32>>,
    stop_rx: mpsc::Receiver<()>,
    done_tx: mpsc::Sender<()>,
    exited: Arc<Mutex<Option<ExitStatus>>>,
) {
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = pid_tx.send(Err(e));
            return;
        }
    };
    let _ = pid_tx.send(Ok(child.id()));
    // Until a stop request, or the MariaDb value is gone without one.
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(Duration::from_millis(200)) {
        if let Ok(Some(status)) = child.try_wait() {
            *exited.lock().unwrap() = Some(status);
            // Still wait for a stop request, to answer it.
            let _ = stop_rx.recv();
            let _ = done_tx.send(());
            return;
        }
    }
    // SAFETY: plain kill(2) of our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                break child.wait().ok();
            }
            Err(_) => break None,
        }
    };
    *exited.lock().unwrap() = status;
    let _ = done_tx.send(());
}

/// Runs one statement over the text protocol: its result set (values as
/// the server sent them, NULL as `None`) or its OK packet; or the server's
/// error number and message. Only the first result set is kept.
pub fn run(conn: &mut Conn, sql: &str) -> RunResult {
    let mut result = conn.query_iter(sql).map_err(to_failure)?;
    let mut out = Rows::default();
    let columns: Vec<String> = result.columns().as_ref().iter().map(|c| c.name_str().into_owned()).collect();
    if columns.is_empty() {
        out.affected = result.affected_rows();
        out.info = result.info_str().into_owned();
        out.warnings = result.warnings() as u64;
        return Ok(out);
    }
    out.columns = columns;
    if let Some(mut set) = result.iter() {
        for row in set.by_ref() {
            let row = row.map_err(to_failure)?;
            out.rows.push(
                row.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        mysql::Value::NULL => None,
                        mysql::Value::Bytes(b) => Some(b),
                        other => Some(other.as_sql(true).into_bytes()),
                    })
                    .collect(),
            );
        }
        out.warnings = set.warnings() as u64;
    }
    Ok(out)
}

fn to_failure(e: mysql::Error) -> (u16, String) {
    match e {
        mysql::Error::MySqlError(e) => (e.code, e.message),
        other => (u16::MAX, format!("client error: {other}")),
    }
}
