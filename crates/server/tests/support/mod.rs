//! What the server tests share: a server started in the test process on a
//! free port, with its own data folder and socket, and the rule for tests
//! that drive an outside client (mariadb, python3 + PyMySQL, sysbench):
//! skipped with a note when it is missing, except under CI=true, where a
//! missing client fails the test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use fractaldb_server::{Server, ServerOptions};

/// A server for one test; shut down (and checked to shut down cleanly)
/// when dropped.
pub struct TestServer {
    server: Option<Server>,
    pub port: u16,
    pub socket: PathBuf,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(|_| {})
    }

    pub fn start_with(tweak: impl FnOnce(&mut ServerOptions)) -> TestServer {
        // Unix socket paths are limited to 108 bytes: a short temp folder.
        let dir = tempfile::Builder::new().prefix("fdbsrv").tempdir_in("/tmp").expect("temp dir");
        let (server, port, socket) = Self::run(dir.path(), tweak);
        TestServer { server: Some(server), port, socket, dir }
    }

    /// Shuts the server down (as `stop`) and starts it again on the same
    /// data folder, on a new port.
    pub fn restart(&mut self) {
        self.server.take().expect("running").shutdown().expect("clean shutdown");
        (self.server, self.port, self.socket) = {
            let (s, p, so) = Self::run(self.dir.path(), |_| {});
            (Some(s), p, so)
        };
    }

    fn run(dir: &Path, tweak: impl FnOnce(&mut ServerOptions)) -> (Server, u16, PathBuf) {
        let mut opts = ServerOptions::new(dir);
        opts.port = 0;
        opts.log_stderr = false;
        opts.db.cache_size_bytes = 32 << 20;
        // The tests' data is thrown away: no fsync per commit.
        opts.db.commit_sync = false;
        // FRACTALDB_THREAD_HANDLING=pool-of-threads runs the suite on the
        // thread pool (a pool of 2, as on a 2-core machine).
        if let Ok(t) = std::env::var("FRACTALDB_THREAD_HANDLING") {
            opts.thread_handling = fractaldb_server::ThreadHandling::parse(&t)
                .expect("FRACTALDB_THREAD_HANDLING: a thread_handling");
            opts.thread_pool_size = 2;
        }
        tweak(&mut opts);
        let server = Server::start(opts).expect("starting the server");
        let port = server.tcp_addr().port();
        let socket = server.socket_path().expect("a socket").to_path_buf();
        (server, port, socket)
    }

    pub fn opts(&self) -> mysql::OptsBuilder {
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.port)
            .user(Some("root"))
            .pass(None::<String>)
            .prefer_socket(false)
            .tcp_connect_timeout(Some(Duration::from_secs(5)))
    }

    pub fn conn(&self) -> mysql::Conn {
        mysql::Conn::new(self.opts()).expect("connecting")
    }

    pub fn conn_db(&self, db: &str) -> mysql::Conn {
        mysql::Conn::new(self.opts().db_name(Some(db))).expect("connecting")
    }

    /// The server's log file.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("fractaldb.log")).unwrap_or_default()
    }

    /// Shuts down and checks the shutdown went through (database closed).
    pub fn stop(mut self) {
        let s = self.server.take().expect("running");
        s.shutdown().expect("clean shutdown");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let r = s.shutdown();
            if !std::thread::panicking() {
                r.expect("clean shutdown");
            }
        }
    }
}

fn required() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Finds a program on PATH.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The program, or `None` with a note (the test then returns early);
/// under CI=true a missing program fails the test.
pub fn need_program(test: &str, name: &str, install: &str) -> Option<PathBuf> {
    if let Some(p) = find_program(name) {
        return Some(p);
    }
    if required() {
        panic!("{test}: {name} not found, and CI=true requires it ({install})");
    }
    eprintln!("{test}: SKIPPED: {name} not found ({install}; under CI=true this fails)");
    None
}

/// python3 with PyMySQL importable, or `None` as [`need_program`].
pub fn need_pymysql(test: &str) -> Option<PathBuf> {
    let py = need_program(test, "python3", "apt-get install python3")?;
    let ok = std::process::Command::new(&py)
        .args(["-c", "import pymysql"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(py);
    }
    if required() {
        panic!("{test}: PyMySQL not importable, and CI=true requires it (pip install PyMySQL)");
    }
    eprintln!("{test}: SKIPPED: PyMySQL not installed (pip install PyMySQL; under CI=true this fails)");
    None
}

/// The test's own folder (for scripts kept next to the tests).
pub fn tests_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"))
}
