//! `fractaldb server`: the MySQL-protocol server on a data folder, until
//! SIGTERM, SIGINT or a SHUTDOWN statement (then a checkpoint, and exit 0).
//!
//! Options come from a my.cnf (`--defaults-file`, then
//! `--defaults-extra-file`; sections `[mysqld]`, `[server]`, `[mariadb]`,
//! `[fractaldb]`) and from the command line, which wins; every option has
//! the same name in both (`--tokudb-cache-size=1G` / `tokudb_cache_size =
//! 1G`). See `fractaldb_server::config`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use fractaldb_server::config;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Read options from this my.cnf first (sections [mysqld], [server],
    /// [mariadb], [fractaldb]); no file is read without it.
    #[arg(long, value_name = "FILE")]
    pub defaults_file: Option<PathBuf>,
    /// Then read this one (its options override the first file's).
    #[arg(long, value_name = "FILE")]
    pub defaults_extra_file: Option<PathBuf>,
    /// The data folder (created on first start): the database in `db/`,
    /// the log `fractaldb.log`, the default socket [default: data/server].
    #[arg(long)]
    pub datadir: Option<PathBuf>,
    /// TCP port (0 picks a free one; the log says which) [default: 3306].
    #[arg(long)]
    pub port: Option<u16>,
    /// Address to listen on. A non-loopback address is refused while any
    /// account has no password (root@localhost has none on first start)
    /// [default: 127.0.0.1].
    #[arg(long, alias = "bind-address")]
    pub bind: Option<String>,
    /// Unix socket path [default: <datadir>/fractaldb.sock].
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// The largest packet a client may send (K/M/G suffixes) [default: 64M].
    #[arg(long)]
    pub max_allowed_packet: Option<String>,
    /// Connections at once (error 1040 past it) [default: 151].
    #[arg(long)]
    pub max_connections: Option<String>,
    /// The engine's node cache, in MiB (or --tokudb-cache-size=SIZE).
    #[arg(long)]
    pub cache_mb: Option<String>,
    /// Any other server option or system variable, as in my.cnf:
    /// --tokudb-cache-size=1G, --tokudb-commit-sync=OFF,
    /// --slow-query-log --long-query-time=0.5, --wait-timeout=600,
    /// --sql-mode=..., --log-error=FILE, --ssl-cert=F --ssl-key=F (default:
    /// generated in the data folder), --skip-ssl, --require-secure-transport,
    /// --secure-file-priv=DIR|NULL (default: <datadir>/load),
    /// --skip-local-infile, --loose-NAME=... (unknown: skipped).
    #[arg(value_name = "--NAME=VALUE", trailing_var_arg = true, allow_hyphen_values = true)]
    pub options: Vec<String>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// The settings in order: files, then the command line.
fn settings(args: &ServerArgs) -> Result<(Vec<config::Setting>, Vec<PathBuf>), String> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    for f in [&args.defaults_file, &args.defaults_extra_file].into_iter().flatten() {
        out.extend(config::read_file(f)?);
        files.push(f.clone());
    }
    let cl = |name: &str, v: String| config::Setting {
        name: name.into(),
        value: Some(v),
        loose: false,
        origin: "command line".into(),
    };
    // The named flags first, then the free ones: all command-line
    // settings come after the files'.
    if let Some(v) = &args.datadir {
        out.push(cl("datadir", v.display().to_string()));
    }
    if let Some(v) = args.port {
        out.push(cl("port", v.to_string()));
    }
    if let Some(v) = &args.bind {
        out.push(cl("bind_address", v.clone()));
    }
    if let Some(v) = &args.socket {
        out.push(cl("socket", v.display().to_string()));
    }
    if let Some(v) = &args.max_allowed_packet {
        out.push(cl("max_allowed_packet", v.clone()));
    }
    if let Some(v) = &args.max_connections {
        out.push(cl("max_connections", v.clone()));
    }
    if let Some(v) = &args.cache_mb {
        out.push(cl("cache_mb", v.clone()));
    }
    out.extend(config::parse_args(&args.options)?);
    Ok((out, files))
}

pub fn run(args: ServerArgs) -> ExitCode {
    let mut opts = fractaldb_server::ServerOptions::new("data/server");
    let applied = match settings(&args).and_then(|(s, files)| {
        opts.config_files = files;
        config::apply(&mut opts, &s)
    }) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for w in &applied.warnings {
        eprintln!("fractaldb: warning: {w}");
    }
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
    if let Some(p) = &applied.pid_file {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            eprintln!("fractaldb: warning: cannot write the pid file {}: {e}", p.display());
        }
    }
    while !STOP.load(Ordering::SeqCst) && !server.shutdown_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = server.shutdown();
    if let Some(p) = &applied.pid_file {
        let _ = std::fs::remove_file(p);
    }
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            ExitCode::FAILURE
        }
    }
}
