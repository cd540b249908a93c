//! fractaldb-server: MySQL's client/server protocol in front of
//! `fractaldb_sql` sessions, so the `mariadb` client, drivers and sysbench
//! work unchanged (see `docs/ARCHITECTURE.md`, "Server").
//!
//! - `packet`: framing (length, sequence id, 16 MiB chunks), the sockets;
//! - `proto`: constants, OK/ERR/EOF, column definitions, text and binary rows;
//! - `auth`: the scramble, mysql_native_password, caching_sha2_password;
//! - `prepared`: COM_STMT_* statements (placeholders, parameters);
//! - `tls`: the certificate (configured, or generated in the data folder)
//!   and the rustls configuration;
//! - `track`: session state tracking (CLIENT_SESSION_TRACK);
//! - `conn`: one connection: handshake, then the command loop.
//!
//! - `pool`: the thread pool (`thread_handling=pool-of-threads`).
//!
//! Each connection has its own `Session` on the shared `Database`; its
//! commands run on a thread of its own (one-thread-per-connection) or on
//! the pool's few workers. A registry of live connections serves KILL and
//! shutdown.
//!
//! ```no_run
//! let opts = fractaldb_server::ServerOptions::new("/tmp/fdb");
//! let server = fractaldb_server::Server::start(opts)?;
//! println!("listening on {}", server.tcp_addr());
//! server.shutdown()?;
//! # Ok::<(), String>(())
//! ```

mod auth;
pub mod config;

/// The database's folder inside a server's data folder.
pub const DB_SUBDIR: &str = "db";

/// The key files a server generates in its data folder (RSA key pair, TLS
/// CA and certificate): a hot backup copies them, so a server restored from
/// it presents the same keys.
pub fn key_files(datadir: &std::path::Path) -> Vec<std::path::PathBuf> {
    [auth::PRIVATE_KEY, auth::PUBLIC_KEY, tls::CA_CERT, tls::CA_KEY, tls::SERVER_CERT, tls::SERVER_KEY]
        .iter()
        .map(|k| datadir.join(k))
        .collect()
}
mod conn;
mod packet;
mod pool;
mod prepared;
mod proto;
mod slowlog;
mod tls;
mod track;

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use fractaldb_sql::{Database, DbOptions, KillHandle};
use parking_lot::Mutex;

use crate::packet::Stream;

/// How a server is started.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The data folder: the database, the log file, the default socket.
    pub datadir: PathBuf,
    pub bind: IpAddr,
    /// 0 picks a free port ([`Server::tcp_addr`] tells which).
    pub port: u16,
    /// The Unix socket; `None` listens on TCP only.
    pub socket: Option<PathBuf>,
    /// The largest packet a client may send (error 1153 past it).
    pub max_allowed_packet: usize,
    /// Connections at once; one more gets error 1040 instead of a greeting.
    pub max_connections: usize,
    pub db: DbOptions,
    /// Log lines go to stderr as well as to the log file.
    pub log_stderr: bool,
    /// Offer TLS (CLIENT_SSL). On by default, as MySQL's `--ssl`.
    pub ssl: bool,
    /// The server's certificate and private key (PEM; MySQL's `ssl_cert`
    /// and `ssl_key`). Neither: `server-cert.pem` and `server-key.pem` in
    /// the data folder, generated at the first start.
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    /// TCP connections without TLS are refused (error 3159); the Unix
    /// socket counts as secure, as in MySQL.
    pub require_secure_transport: bool,
    /// Where LOAD DATA INFILE may read server-side files: `None` (NULL)
    /// refuses them all, an empty path admits any, a folder the files under
    /// it. Default `<datadir>/load/`, created at start.
    pub secure_file_priv: Option<PathBuf>,
    /// Offer CLIENT_LOCAL_FILES: LOAD DATA LOCAL reads the client's file.
    pub local_infile: bool,
    /// The log file (`log_error`); default `<datadir>/fractaldb.log`.
    pub log_error: Option<PathBuf>,
    /// The my.cnf files the options came from (the start log names them).
    pub config_files: Vec<PathBuf>,
    /// Who runs the connections' commands (MariaDB's `thread_handling`).
    pub thread_handling: ThreadHandling,
    /// The pool's active workers (MariaDB's `thread_pool_size`); default
    /// the number of cores.
    pub thread_pool_size: usize,
    /// How long, in ms, the pool's queue may stand still before one more
    /// worker may run (MariaDB's `thread_pool_stall_limit`, 500).
    pub thread_pool_stall_limit_ms: u64,
}

/// MariaDB's `thread_handling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadHandling {
    /// A thread per connection, from login to close.
    OneThreadPerConnection,
    /// A few workers run the commands of all connections (`pool.rs`).
    PoolOfThreads,
}

impl ThreadHandling {
    pub fn name(self) -> &'static str {
        match self {
            ThreadHandling::OneThreadPerConnection => "one-thread-per-connection",
            ThreadHandling::PoolOfThreads => "pool-of-threads",
        }
    }

    pub fn parse(s: &str) -> Option<ThreadHandling> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "one-thread-per-connection" => Some(ThreadHandling::OneThreadPerConnection),
            "pool-of-threads" => Some(ThreadHandling::PoolOfThreads),
            _ => None,
        }
    }
}

/// The number of cores: `thread_pool_size`'s default.
pub fn default_thread_pool_size() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl ServerOptions {
    /// Defaults: 127.0.0.1:3306, the socket `<datadir>/fractaldb.sock`,
    /// max_allowed_packet 64 MiB (MySQL 8's default), 151 connections
    /// (MySQL's max_connections).
    pub fn new(datadir: impl Into<PathBuf>) -> ServerOptions {
        let datadir = datadir.into();
        ServerOptions {
            socket: Some(datadir.join("fractaldb.sock")),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 3306,
            max_allowed_packet: 64 << 20,
            max_connections: 151,
            db: DbOptions::default(),
            log_stderr: true,
            ssl: true,
            ssl_cert: None,
            ssl_key: None,
            require_secure_transport: false,
            secure_file_priv: Some(datadir.join("load")),
            local_infile: true,
            datadir,
            log_error: None,
            config_files: Vec::new(),
            thread_handling: ThreadHandling::OneThreadPerConnection,
            thread_pool_size: default_thread_pool_size(),
            thread_pool_stall_limit_ms: 500,
        }
    }
}

/// The log: `<datadir>/fractaldb.log`, and stderr.
pub(crate) struct Logger {
    file: Mutex<Option<std::fs::File>>,
    stderr: bool,
}

impl Logger {
    pub(crate) fn log(&self, level: &str, msg: &str) {
        let line = format!("{} [{level}] {msg}\n", chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ"));
        if self.stderr {
            eprint!("{line}");
        }
        if let Some(f) = self.file.lock().as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// A live connection, as KILL and shutdown reach it.
pub(crate) struct ConnEntry {
    pub kill: KillHandle,
    /// A clone of the connection's socket, to end it from another thread.
    pub stream: Stream,
    pub killed: Arc<AtomicBool>,
    /// True while the connection runs a statement: KILL QUERY of an idle
    /// connection does nothing (as in MySQL) instead of failing its next
    /// statement.
    pub busy: Arc<AtomicBool>,
}

/// What every connection shares.
pub(crate) struct Shared {
    pub db: Database,
    pub conns: Mutex<HashMap<u64, ConnEntry>>,
    pub started: Instant,
    /// Statements run (COM_STATISTICS' Questions).
    pub questions: AtomicU64,
    pub log: Logger,
    pub shutting_down: AtomicBool,
    /// `None` when TLS is off (`ServerOptions::ssl`).
    pub tls: Option<tls::Tls>,
    pub require_secure_transport: bool,
    /// As `ServerOptions::secure_file_priv`, shown with a trailing `/`.
    pub secure_file_priv: Option<String>,
    pub local_infile: bool,
    /// Set by SHUTDOWN / COM_SHUTDOWN: whoever runs the server (the
    /// `fractaldb server` loop) sees it and calls `Server::shutdown`.
    pub shutdown_requested: AtomicBool,
    pub slow_log: slowlog::SlowLog,
    pub datadir: PathBuf,
    /// caching_sha2_password's RSA key pair, read (or generated) from the
    /// data folder when a client first asks for the public key.
    pub rsa_keys: Mutex<Option<Arc<auth::RsaKeys>>>,
    /// caching_sha2_password's cache: the accounts (user, host, password
    /// hash) that passed full authentication since the server started.
    /// Only these take the fast path (as in MySQL 8, the cache starts
    /// empty): keyed by the hash, a changed password is a miss.
    pub sha2_cache: Mutex<std::collections::HashSet<(String, String, [u8; 32])>>,
}

impl Shared {
    /// `max_connections` now (SET GLOBAL changes it).
    pub(crate) fn max_connections(&self) -> usize {
        self.db.global_u64("max_connections") as usize
    }

    /// The RSA key pair, loaded or generated at the first call.
    pub(crate) fn rsa_keys(&self) -> Result<Arc<auth::RsaKeys>, String> {
        let mut k = self.rsa_keys.lock();
        if let Some(k) = k.as_ref() {
            return Ok(k.clone());
        }
        let keys = Arc::new(auth::RsaKeys::load_or_generate(&self.datadir)?);
        self.log.log("note", &format!("caching_sha2_password RSA key {}", keys.private_path.display()));
        *k = Some(keys.clone());
        Ok(keys)
    }

    /// `max_allowed_packet` now (the configured one until SET GLOBAL
    /// changes it): what a new connection takes as its packet limit.
    pub(crate) fn max_allowed_packet(&self) -> usize {
        (self.db.global_u64("max_allowed_packet") as usize).max(1024)
    }
}

impl Shared {
    /// KILL [CONNECTION] / KILL QUERY: false when no connection has the id.
    pub(crate) fn kill(&self, id: u64, connection: bool) -> bool {
        let conns = self.conns.lock();
        let Some(c) = conns.get(&id) else { return false };
        if connection || c.busy.load(Ordering::SeqCst) {
            c.kill.kill();
        }
        if connection {
            c.killed.store(true, Ordering::SeqCst);
            c.stream.shutdown();
        }
        true
    }
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    tcp_addr: SocketAddr,
    socket: Option<PathBuf>,
    acceptors: Vec<JoinHandle<()>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    pool: Option<Arc<pool::Pool>>,
}

impl Server {
    /// Opens (creating) the data folder and starts listening.
    pub fn start(opts: ServerOptions) -> Result<Server, String> {
        std::fs::create_dir_all(&opts.datadir)
            .map_err(|e| format!("cannot create {}: {e}", opts.datadir.display()))?;
        let log_path = opts.log_error.clone().unwrap_or_else(|| opts.datadir.join("fractaldb.log"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        let log = Logger { file: Mutex::new(Some(file)), stderr: opts.log_stderr };
        log.log(
            "note",
            &format!("fractaldb {} starting on {}", fractaldb_sql::SERVER_VERSION, opts.datadir.display()),
        );
        let tls = if opts.ssl {
            let t = tls::setup(&opts.datadir, opts.ssl_cert.as_deref(), opts.ssl_key.as_deref())?;
            log.log("note", &format!("TLS with the certificate {}", t.cert.display()));
            Some(t)
        } else {
            if opts.require_secure_transport {
                return Err("require_secure_transport needs TLS (ssl is off)".into());
            }
            None
        };
        let secure_file_priv = match &opts.secure_file_priv {
            None => None,
            Some(p) if p.as_os_str().is_empty() => Some(String::new()),
            Some(p) => {
                std::fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
                let p = p.canonicalize().map_err(|e| format!("{}: {e}", p.display()))?;
                Some(format!("{}/", p.display()))
            }
        };
        if opts.config_files.is_empty() {
            log.log("note", "no configuration file (options from the command line and defaults)");
        }
        for f in &opts.config_files {
            log.log("note", &format!("configuration file {}", f.display()));
        }
        let mut dbo = opts.db.clone();
        // What the server knows of itself, as @@variables (after the
        // config's, so these win: they are what the server really uses).
        let sock = opts.socket.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let slow_default = opts.datadir.join(format!("{}-slow.log", hostname()));
        if !dbo.variables.iter().any(|(n, _)| n == "slow_query_log_file") {
            dbo.variables.push(("slow_query_log_file".into(), slow_default.display().to_string()));
        }
        for (n, v) in [
            ("datadir", format!("{}/", opts.datadir.display())),
            ("socket", sock),
            ("bind_address", opts.bind.to_string()),
            ("max_connections", opts.max_connections.to_string()),
            ("max_allowed_packet", opts.max_allowed_packet.to_string()),
            ("log_error", log_path.display().to_string()),
            ("hostname", hostname()),
            ("tokudb_cache_size", opts.db.cache_size_bytes.to_string()),
            ("tokudb_commit_sync", (opts.db.commit_sync as u8).to_string()),
            ("tokudb_directio", (opts.db.direct_io as u8).to_string()),
            ("tokudb_fsync_log_period", opts.db.fsync_log_period_ms.to_string()),
            ("tokudb_checkpointing_period", opts.db.checkpoint_period_secs.to_string()),
            ("thread_handling", opts.thread_handling.name().to_string()),
            ("thread_pool_size", opts.thread_pool_size.to_string()),
            ("thread_pool_stall_limit", opts.thread_pool_stall_limit_ms.to_string()),
        ] {
            dbo.variables.push((n.to_string(), v));
        }
        // The engine's notes (recovery's progress) go to this log too.
        let notes = Logger {
            file: Mutex::new(log.file.lock().as_ref().and_then(|f| f.try_clone().ok())),
            stderr: opts.log_stderr,
        };
        dbo.engine_notes =
            Some(fractaldb_sql::EngineNotes(Arc::new(move |line: &str| notes.log("note", line))));
        let t0 = Instant::now();
        let db = Database::open(opts.datadir.join(DB_SUBDIR), dbo)
            .map_err(|e| format!("cannot open the database in {}: {e}", opts.datadir.display()))?;
        // A hot backup (SET tokudb_backup_dir) is a data folder like this
        // one: the database in db/, and the keys generated here (same TLS
        // certificate and RSA key pair after a restore).
        db.set_backup_layout(opts.datadir.clone(), DB_SUBDIR, key_files(&opts.datadir));
        let rec = db.engine_stats().recovery;
        log.log(
            "note",
            &format!(
                "recovery: {} log records ({} bytes) read, {} replayed, in {} ms",
                rec.records_read,
                rec.bytes_read,
                rec.replayed,
                rec.duration.as_millis()
            ),
        );
        log.log("note", &format!("database open in {} ms", t0.elapsed().as_millis()));
        // Loopback rule: an account without a password is open to anyone
        // who can reach the port, so the server listens beyond this machine
        // only once every account has one (root@localhost has none on
        // first start).
        if !opts.bind.is_loopback() {
            let open = db.accounts_without_password();
            if !open.is_empty() {
                let msg = format!(
                    "refusing to listen on {}: {} {} no password; set one (SET PASSWORD FOR ... = PASSWORD('...')) \
                     or listen on a loopback address such as 127.0.0.1",
                    opts.bind,
                    open.join(", "),
                    if open.len() == 1 { "has" } else { "have" }
                );
                log.log("error", &msg);
                let _ = db.close();
                return Err(msg);
            }
        }

        let tcp = TcpListener::bind((opts.bind, opts.port))
            .map_err(|e| format!("cannot listen on {}:{}: {e}", opts.bind, opts.port))?;
        let tcp_addr = tcp.local_addr().map_err(|e| e.to_string())?;
        // The real port (0 asked for any).
        let _ = db.set_global("port", &tcp_addr.port().to_string());
        let unix = match &opts.socket {
            None => None,
            Some(p) => Some(bind_unix(p)?),
        };
        let shared = Arc::new(Shared {
            db,
            conns: Mutex::new(HashMap::new()),
            started: Instant::now(),
            questions: AtomicU64::new(0),
            log,
            shutting_down: AtomicBool::new(false),
            tls,
            require_secure_transport: opts.require_secure_transport,
            secure_file_priv,
            local_infile: opts.local_infile,
            shutdown_requested: AtomicBool::new(false),
            slow_log: slowlog::SlowLog::new(tcp_addr.port(), opts.socket.clone()),
            datadir: opts.datadir.clone(),
            rsa_keys: Mutex::new(None),
            sha2_cache: Mutex::new(std::collections::HashSet::new()),
        });
        shared.log.log("note", &format!("listening on {tcp_addr}"));
        if let Some(p) = &opts.socket {
            shared.log.log("note", &format!("listening on socket {}", p.display()));
        }
        let workers = Arc::new(Mutex::new(Vec::new()));
        let pool = match opts.thread_handling {
            ThreadHandling::OneThreadPerConnection => None,
            ThreadHandling::PoolOfThreads => Some(pool::Pool::start(
                shared.clone(),
                opts.thread_pool_size,
                std::time::Duration::from_millis(opts.thread_pool_stall_limit_ms),
            )?),
        };
        if pool.is_some() {
            shared.log.log("note", &format!("thread pool of {} threads", opts.thread_pool_size));
        }
        let mut acceptors = Vec::new();
        {
            let (shared, workers, pool) = (shared.clone(), workers.clone(), pool.clone());
            acceptors.push(
                std::thread::Builder::new()
                    .name("accept-tcp".into())
                    .spawn(move || {
                        for s in tcp.incoming() {
                            if shared.shutting_down.load(Ordering::SeqCst) {
                                break;
                            }
                            match s {
                                Ok(s) => {
                                    let _ = s.set_nodelay(true);
                                    let peer = s
                                        .peer_addr()
                                        .map(|a| a.ip().to_string())
                                        .unwrap_or_else(|_| "?".into());
                                    spawn_conn(&shared, &workers, pool.as_deref(), Stream::Tcp(s), peer);
                                }
                                Err(e) => {
                                    shared.log.log("warning", &format!("accept failed: {e}"));
                                    std::thread::sleep(std::time::Duration::from_millis(10));
                                }
                            }
                        }
                    })
                    .map_err(|e| e.to_string())?,
            );
        }
        if let Some(unix) = unix {
            let (shared, workers, pool) = (shared.clone(), workers.clone(), pool.clone());
            acceptors.push(
                std::thread::Builder::new()
                    .name("accept-unix".into())
                    .spawn(move || {
                        for s in unix.incoming() {
                            if shared.shutting_down.load(Ordering::SeqCst) {
                                break;
                            }
                            match s {
                                Ok(s) => spawn_conn(
                                    &shared,
                                    &workers,
                                    pool.as_deref(),
                                    Stream::Unix(s),
                                    "localhost".into(),
                                ),
                                Err(e) => {
                                    shared.log.log("warning", &format!("accept failed: {e}"));
                                    std::thread::sleep(std::time::Duration::from_millis(10));
                                }
                            }
                        }
                    })
                    .map_err(|e| e.to_string())?,
            );
        }
        Ok(Server { shared, tcp_addr, socket: opts.socket, acceptors, workers, pool })
    }

    pub fn tcp_addr(&self) -> SocketAddr {
        self.tcp_addr
    }

    pub fn socket_path(&self) -> Option<&Path> {
        self.socket.as_deref()
    }

    /// True once a client ran SHUTDOWN (or sent COM_SHUTDOWN): the owner
    /// should call [`Server::shutdown`].
    pub fn shutdown_requested(&self) -> bool {
        self.shared.shutdown_requested.load(Ordering::SeqCst)
    }

    /// Stops accepting, ends every connection (open transactions roll
    /// back), and closes the database with a checkpoint.
    pub fn shutdown(self) -> Result<(), String> {
        let Server { shared, tcp_addr, socket, acceptors, workers, pool } = self;
        shared.log.log("note", "shutting down");
        shared.shutting_down.store(true, Ordering::SeqCst);
        // Wake the accept loops with a connection each; they see the flag.
        let _ = TcpStream::connect(tcp_addr);
        if let Some(p) = &socket {
            let _ = UnixStream::connect(p);
        }
        for a in acceptors {
            let _ = a.join();
        }
        if let Some(p) = &socket {
            let _ = std::fs::remove_file(p);
        }
        for c in shared.conns.lock().values() {
            c.kill.kill();
            c.stream.shutdown();
        }
        let handles: Vec<_> = std::mem::take(&mut *workers.lock());
        for h in handles {
            let _ = h.join();
        }
        if let Some(p) = pool {
            p.stop();
        }
        let shared = Arc::try_unwrap(shared).map_err(|_| "a connection outlived shutdown".to_string())?;
        let Shared { db, log, .. } = shared;
        let t0 = Instant::now();
        db.close().map_err(|e| format!("closing the database: {e}"))?;
        log.log(
            "note",
            &format!("database closed (checkpoint) in {} ms; shutdown complete", t0.elapsed().as_millis()),
        );
        Ok(())
    }
}

/// This machine's name (MariaDB names the slow log `<hostname>-slow.log`).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Binds the Unix socket, replacing a stale file but never a live server's.
fn bind_unix(p: &Path) -> Result<UnixListener, String> {
    if p.exists() {
        if UnixStream::connect(p).is_ok() {
            return Err(format!("another server is listening on {}", p.display()));
        }
        let _ = std::fs::remove_file(p);
    }
    UnixListener::bind(p).map_err(|e| format!("cannot listen on socket {}: {e}", p.display()))
}

fn spawn_conn(
    shared: &Arc<Shared>,
    workers: &Arc<Mutex<Vec<JoinHandle<()>>>>,
    pool: Option<&pool::Pool>,
    stream: Stream,
    peer: String,
) {
    if let Some(p) = pool {
        p.submit(stream, peer);
        return;
    }
    let sh = shared.clone();
    let spawned = std::thread::Builder::new().name("conn".into()).spawn(move || conn::run(sh, stream, peer));
    match spawned {
        Ok(h) => {
            let mut w = workers.lock();
            // Finished threads are joined as new ones come.
            let (done, live): (Vec<_>, Vec<_>) =
                std::mem::take(&mut *w).into_iter().partition(|h| h.is_finished());
            *w = live;
            w.push(h);
            drop(w);
            for h in done {
                let _ = h.join();
            }
        }
        Err(e) => shared.log.log("error", &format!("cannot start a connection thread: {e}")),
    }
}
