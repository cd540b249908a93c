//! The servers `fractaldb bench-sql` compares: each started by us on a fresh
//! private data folder and a free port, with the same cache and the same
//! durability, or a server the user names (`--connect`).
//!
//! - fractaldb: this binary's `server` subcommand, `--cache-mb` the cache,
//!   commits synced (its default), O_DIRECT (its default).
//! - InnoDB: Debian's `mariadbd` (MariaDB 10.11), `innodb_buffer_pool_size`
//!   the cache, `innodb_flush_log_at_trx_commit=1`, `innodb_flush_method=O_DIRECT`.
//! - MyRocks: the same `mariadbd` with `ha_rocksdb` (Debian's
//!   `mariadb-plugin-rocksdb`) as the default engine, `rocksdb_block_cache_size`
//!   the cache, `rocksdb_flush_log_at_trx_commit=1`, direct reads.
//!
//! Each server's process is watched through `/proc/<pid>` (CPU time, bytes
//! that reached the disk, peak resident memory), so the figures are the
//! server's own, not the client's.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::bail;
use crate::error::{Context, Error, Result};

/// Which server a run is against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServerKind {
    Fractaldb,
    /// fractaldb with TokuDB's updates without reads switched on
    /// (`tokudb_enable_fast_upsert`, `tokudb_enable_fast_update`), which
    /// change what clients are told; run only when named.
    FractaldbFast,
    /// fractaldb with `thread_handling=pool-of-threads` (MariaDB's thread
    /// pool); run only when named.
    FractaldbPool,
    Innodb,
    Myrocks,
}

impl ServerKind {
    pub const ALL: [ServerKind; 5] = [
        ServerKind::Fractaldb,
        ServerKind::FractaldbFast,
        ServerKind::FractaldbPool,
        ServerKind::Innodb,
        ServerKind::Myrocks,
    ];

    /// Run only when named: variants that change what clients are told, or
    /// compare a setting rather than an engine.
    pub fn only_when_named(self) -> bool {
        matches!(self, ServerKind::FractaldbFast | ServerKind::FractaldbPool)
    }

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Fractaldb => "fractaldb",
            ServerKind::FractaldbFast => "fractaldb-fast",
            ServerKind::FractaldbPool => "fractaldb-pool",
            ServerKind::Innodb => "innodb",
            ServerKind::Myrocks => "myrocks",
        }
    }

    /// Whether this machine can start the server: `mariadbd` on the PATH (or
    /// in /usr/sbin), and for MyRocks the plugin's library.
    pub fn available(self) -> bool {
        match self {
            ServerKind::Fractaldb | ServerKind::FractaldbFast | ServerKind::FractaldbPool => true,
            ServerKind::Innodb => mariadbd().is_some(),
            ServerKind::Myrocks => mariadbd().is_some() && rocksdb_plugin().is_some(),
        }
    }
}

fn mariadbd() -> Option<PathBuf> {
    which("mariadbd").or_else(|| Some(PathBuf::from("/usr/sbin/mariadbd")).filter(|p| p.exists()))
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

fn rocksdb_plugin() -> Option<PathBuf> {
    ["/usr/lib/mysql/plugin/ha_rocksdb.so", "/usr/lib/x86_64-linux-gnu/mariadb19/plugin/ha_rocksdb.so"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Where a client reaches a server.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
}

/// A running server.
pub struct Server {
    pub label: String,
    pub endpoint: Endpoint,
    /// Its data folder, when we made it (bytes on disk are measured there).
    pub datadir: Option<PathBuf>,
    child: Option<Child>,
    /// The settings that make the comparison fair, as given to the server.
    pub settings: Vec<String>,
}

/// A free TCP port on the loopback (the listener is closed again at once;
/// the server binds it a moment later).
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context(|| "finding a free port".to_string())?;
    Ok(l.local_addr().context(|| "finding a free port".to_string())?.port())
}

impl Server {
    /// Starts `kind` on a fresh data folder `dir` (wiped first) with a cache of `cache_mb` MiB.
    pub fn start(kind: ServerKind, dir: &Path, cache_mb: u64) -> Result<Server> {
        Server::start_with(kind, dir, cache_mb, &[])
    }

    /// [`Server::start`] with `extra` settings after ours (later settings
    /// win on both servers' command lines).
    pub fn start_with(kind: ServerKind, dir: &Path, cache_mb: u64, extra: &[String]) -> Result<Server> {
        if dir.exists() {
            fs::remove_dir_all(dir).context(|| format!("removing {}", dir.display()))?;
        }
        fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
        // Absolute, because mariadb-install-db resolves a relative datadir
        // against its own base directory (/usr), not the working directory.
        let dir = &fs::canonicalize(dir).context(|| format!("resolving {}", dir.display()))?;
        let port = free_port()?;
        let data = dir.join("data");
        let log =
            fs::File::create(dir.join("server.err")).context(|| "creating the server's log".to_string())?;
        let log2 = log.try_clone().context(|| "creating the server's log".to_string())?;
        let (mut cmd, settings) = match kind {
            ServerKind::Fractaldb | ServerKind::FractaldbFast | ServerKind::FractaldbPool => {
                let exe = std::env::current_exe().context(|| "finding this program".to_string())?;
                let mut cmd = Command::new(exe);
                let mut settings = vec![
                    format!("--cache-mb {cache_mb}"),
                    "tokudb_commit_sync=ON (default)".to_string(),
                    "tokudb_directio=ON (default)".to_string(),
                    "--max-connections 2000".to_string(),
                ];
                if kind == ServerKind::FractaldbFast {
                    settings
                        .push("SET GLOBAL tokudb_enable_fast_upsert=ON, tokudb_enable_fast_update=ON".into());
                }
                let pool = ["--thread-handling=pool-of-threads".to_string()];
                let pool: &[String] = if kind == ServerKind::FractaldbPool { &pool } else { &[] };
                settings.extend(pool.iter().cloned());
                cmd.arg("server")
                    .arg("--datadir")
                    .arg(&data)
                    .arg("--port")
                    .arg(port.to_string())
                    .arg("--socket")
                    .arg(dir.join("sock"))
                    .arg("--cache-mb")
                    .arg(cache_mb.to_string())
                    .arg("--max-connections")
                    .arg("2000")
                    .args(pool)
                    .args(extra);
                settings.extend(extra.iter().cloned());
                (cmd, settings)
            }
            ServerKind::Innodb | ServerKind::Myrocks => {
                let mariadbd =
                    mariadbd().ok_or_else(|| Error::new("mariadbd is not installed".to_string()))?;
                let install = Command::new("mariadb-install-db")
                    .arg("--no-defaults")
                    .arg(format!("--datadir={}", data.display()))
                    .arg("--auth-root-authentication-method=normal")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .context(|| "running mariadb-install-db".to_string())?;
                if !install.success() {
                    bail!("mariadb-install-db failed for {}", data.display());
                }
                let mut settings = vec![
                    "--max-connections=2000".to_string(),
                    "--skip-log-bin".to_string(),
                    "--performance-schema=OFF".to_string(),
                ];
                if kind == ServerKind::Innodb {
                    settings.extend([
                        format!("--innodb-buffer-pool-size={cache_mb}M"),
                        "--innodb-flush-log-at-trx-commit=1".to_string(),
                        "--innodb-flush-method=O_DIRECT".to_string(),
                        "--default-storage-engine=InnoDB".to_string(),
                    ]);
                } else {
                    settings.extend([
                        "--plugin-load-add=ha_rocksdb.so".to_string(),
                        "--default-storage-engine=ROCKSDB".to_string(),
                        format!("--rocksdb-block-cache-size={}", cache_mb << 20),
                        "--rocksdb-flush-log-at-trx-commit=1".to_string(),
                        "--rocksdb-use-direct-reads=ON".to_string(),
                        // A statement may change any number of rows, as on
                        // the other engines (the maintenance sequence's
                        // INSERT ... SELECT doubles a table of millions);
                        // the default stops a transaction at 1M row locks.
                        "--rocksdb-max-row-locks=1073741824".to_string(),
                        // InnoDB still holds MariaDB's own tables; keep its
                        // pool small so the memory goes to RocksDB's cache.
                        "--innodb-buffer-pool-size=8M".to_string(),
                    ]);
                }
                settings.extend(extra.iter().cloned());
                let mut cmd = Command::new(mariadbd);
                cmd.arg("--no-defaults")
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!("--port={port}"))
                    .arg("--bind-address=127.0.0.1")
                    .arg(format!("--socket={}", dir.join("sock").display()))
                    .arg("--user=root")
                    .args(&settings);
                (cmd, settings)
            }
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .context(|| format!("starting {}", kind.name()))?;
        let mut server = Server {
            label: kind.name().to_string(),
            endpoint: Endpoint { host: "127.0.0.1".into(), port, user: "root".into(), password: None },
            datadir: Some(data),
            child: Some(child),
            settings,
        };
        server.wait_ready(dir)?;
        if kind == ServerKind::FractaldbFast {
            let mut c = super::client::connect(&server.endpoint, None)?;
            super::client::exec_all(
                &mut c,
                &["SET GLOBAL tokudb_enable_fast_upsert = ON, GLOBAL tokudb_enable_fast_update = ON"
                    .to_string()],
            )?;
        }
        Ok(server)
    }

    /// A server someone else runs, named `label`, at `host:port`.
    pub fn external(label: &str, endpoint: Endpoint) -> Server {
        Server {
            label: label.to_string(),
            endpoint,
            datadir: None,
            child: None,
            settings: vec!["(started by the user)".to_string()],
        }
    }

    fn wait_ready(&mut self, dir: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let log = fs::read_to_string(dir.join("server.err")).unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(15).collect();
                    let tail: Vec<&str> = tail.into_iter().rev().collect();
                    bail!("{} exited at start ({status}); its log ends:\n{}", self.label, tail.join("\n"));
                }
            }
            if super::client::connect(&self.endpoint, None).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{} did not accept connections within 120 s", self.label);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The server process's counters now (None for an external server).
    pub fn counters(&self) -> Option<ProcCounters> {
        self.pid().and_then(ProcCounters::of)
    }

    /// Bytes the data folder takes on disk: every file under it, allocated
    /// blocks. A running server may remove a file while the walk lists it
    /// (MyRocks' compactions do): the walk is then tried again.
    pub fn disk_bytes(&self) -> Option<u64> {
        let d = self.datadir.as_ref()?;
        (0..5).find_map(|_| crate::bench::sys::dir_usage(d).ok()).map(|u| u.allocated_bytes)
    }

    /// Stops the server: SIGTERM, then SIGKILL after 60 s.
    pub fn stop(mut self) -> Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        // SAFETY: kill() sends a signal to the process we started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if child.try_wait().context(|| format!("waiting for {}", self.label))?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{} did not stop within 60 s of SIGTERM; killed", self.label);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process's cumulative counters, read from `/proc/<pid>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcCounters {
    pub cpu_us: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Peak resident memory (VmHWM) so far.
    pub peak_rss: u64,
}

impl ProcCounters {
    pub fn of(pid: u32) -> Option<ProcCounters> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name (which may hold spaces) start after ") ".
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        let field = |text: &str, name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
                .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
                .unwrap_or(0)
        };
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        Some(ProcCounters {
            cpu_us: ticks * 1_000_000 / hz,
            read_bytes: field(&io, "read_bytes"),
            write_bytes: field(&io, "write_bytes"),
            peak_rss: field(&status, "VmHWM") * 1024,
        })
    }

    pub fn since(&self, earlier: &ProcCounters) -> ProcCounters {
        ProcCounters {
            cpu_us: self.cpu_us.saturating_sub(earlier.cpu_us),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            peak_rss: self.peak_rss,
        }
    }
}
