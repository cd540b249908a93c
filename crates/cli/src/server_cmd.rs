//! `fractaldb server`: the MySQL-protocol server on a data folder, until
//! SIGTERM or SIGINT.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// The data folder (created on first start): the database in `db/`,
    /// the log `fractaldb.log`, the default socket.
    #[arg(long, default_value = "data/server")]
    pub datadir: PathBuf,
    /// TCP port (0 picks a free one; the log says which).
    #[arg(long, default_value_t = 3306)]
    pub port: u16,
    /// Address to listen on. A non-loopback address is refused while any
    /// account has no password (root@localhost has none on first start).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Unix socket path [default: <datadir>/fractaldb.sock].
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// The largest packet a client may send, in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub max_allowed_packet: usize,
    /// Connections at once (error 1040 past it).
    #[arg(long, default_value_t = 151)]
    pub max_connections: usize,
    /// The engine's node cache, in MiB.
    #[arg(long, default_value_t = 64)]
    pub cache_mb: usize,
    /// The TLS certificate (PEM) [default: <datadir>/server-cert.pem,
    /// generated at the first start].
    #[arg(long)]
    pub ssl_cert: Option<PathBuf>,
    /// The TLS private key (PEM), with --ssl-cert.
    #[arg(long)]
    pub ssl_key: Option<PathBuf>,
    /// Do not offer TLS.
    #[arg(long)]
    pub skip_ssl: bool,
    /// Refuse TCP connections without TLS (the Unix socket is allowed).
    #[arg(long)]
    pub require_secure_transport: bool,
    /// Where LOAD DATA INFILE may read files: a folder, "" for anywhere,
    /// NULL for nowhere [default: <datadir>/load].
    #[arg(long)]
    pub secure_file_priv: Option<PathBuf>,
    /// Refuse LOAD DATA LOCAL (do not offer CLIENT_LOCAL_FILES).
    #[arg(long)]
    pub skip_local_infile: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

pub fn run(args: ServerArgs) -> ExitCode {
    let mut opts = fractaldb_server::ServerOptions::new(&args.datadir);
    opts.port = args.port;
    opts.bind = args.bind;
    if let Some(s) = args.socket {
        opts.socket = Some(s);
    }
    opts.max_allowed_packet = args.max_allowed_packet;
    opts.max_connections = args.max_connections;
    opts.db.cache_size_bytes = args.cache_mb << 20;
    opts.ssl = !args.skip_ssl;
    opts.ssl_cert = args.ssl_cert;
    opts.ssl_key = args.ssl_key;
    opts.require_secure_transport = args.require_secure_transport;
    if let Some(p) = args.secure_file_priv {
        opts.secure_file_priv = if p.as_os_str() == "NULL" { None } else { Some(p) };
    }
    opts.local_infile = !args.skip_local_infile;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        // A client that goes away mid-write must not kill the server.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let server = match fractaldb_server::Server::start(opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    match server.shutdown() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            ExitCode::FAILURE
        }
    }
}
