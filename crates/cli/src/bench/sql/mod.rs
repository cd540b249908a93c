//! `fractaldb bench-sql`: the benchmark posts' workloads over SQL, against
//! fractaldb's server and MariaDB 10.11 with InnoDB and with MyRocks, each
//! started here on a fresh private data folder with the same cache and the
//! same durability (see [`servers`]), or against servers the user names.
//!
//! Servers run one after another, never at once, so each has the machine
//! to itself; every workload starts on an empty database. The report is
//! `intervals.csv` (rate and latency per interval), `summary.csv` and
//! `summary.md` (per server and workload: rate, last 10%, the lowest 10 s
//! window against the median, p99, the server's CPU seconds, bytes read and
//! written, bytes on disk, peak memory; ratios of fractaldb to each other
//! server), each server's settings, the machine's facts, and a throughput
//! chart per workload (PNG and SVG, a 10-interval moving average).

pub mod client;
pub mod servers;
pub mod workloads;

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use clap::Args;

use super::chart;
use super::sys::{load_average, MachineFacts};
use crate::bail;
use crate::error::{Context, Result};
use servers::{Endpoint, ProcCounters, Server, ServerKind};
use workloads::{Params, Run, SqlWorkload};

/// `--smoke`: sizes small enough that every workload runs on every server in seconds.
const SMOKE_ROWS: u64 = 2000;
const SMOKE_SECS: u64 = 1;
const SMOKE_TABLE_SIZE: u64 = 1000;

/// Options of `fractaldb bench-sql`.
#[derive(Args, Debug)]
pub struct SqlBenchArgs {
    /// Workloads, in this order [default: all].
    #[arg(value_enum, value_name = "WORKLOAD")]
    pub workloads: Vec<SqlWorkload>,

    /// Servers to start and compare, comma-separated [default: every one this machine has].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SERVER,...")]
    pub servers: Vec<ServerKind>,

    /// A running server to measure as well, as NAME=HOST:PORT (user root, no password
    /// unless --connect-user/--connect-password say otherwise). Repeatable.
    #[arg(long, value_name = "NAME=HOST:PORT")]
    pub connect: Vec<String>,
    #[arg(long, default_value = "root")]
    pub connect_user: String,
    #[arg(long)]
    pub connect_password: Option<String>,

    /// Cache of every server, MiB (tokudb_cache_size = innodb_buffer_pool_size = rocksdb_block_cache_size).
    #[arg(long, default_value_t = 64)]
    pub cache_mb: u64,

    /// Rows each load inserts at most [default: 1M].
    #[arg(long, value_parser = super::parse_count)]
    pub rows: Option<u64>,

    /// A load stops after this many seconds even if rows remain.
    #[arg(long, default_value_t = 300.0)]
    pub max_secs: f64,

    /// Client threads of the loads.
    #[arg(long, default_value_t = 8)]
    pub threads: usize,

    /// sysbench thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    pub sysbench_threads: Vec<usize>,

    /// Seconds of each sysbench run.
    #[arg(long, default_value_t = 30)]
    pub sysbench_secs: u64,

    /// Rows of sysbench's table (10,000 keeps it in memory).
    #[arg(long, default_value_t = 10_000)]
    pub sysbench_table_size: u64,

    /// Seconds per reported interval.
    #[arg(long, default_value_t = 1.0)]
    pub interval_secs: f64,

    /// Where the servers' data folders go (wiped per server).
    #[arg(long, default_value = "bench-sql-data")]
    pub dir: PathBuf,

    /// Where the report goes.
    #[arg(long, default_value = "bench-sql-out")]
    pub out: PathBuf,

    /// Seed of the generated rows.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Every workload briefly, to check the tool end to end (no timing meaning).
    #[arg(long)]
    pub smoke: bool,
}

/// A workload's runs on one server, the server's counters over it, and
/// bytes on disk after it.
type WorkloadResult = (SqlWorkload, Vec<Run>, Option<ProcCounters>, Option<u64>);

/// One server's results.
struct ServerRuns {
    label: String,
    settings: Vec<String>,
    version: String,
    results: Vec<WorkloadResult>,
}

pub fn run(args: SqlBenchArgs) -> Result<()> {
    let workloads =
        if args.workloads.is_empty() { SqlWorkload::ALL.to_vec() } else { args.workloads.clone() };
    let kinds: Vec<ServerKind> = if args.servers.is_empty() {
        // fractaldb-fast changes what clients are told: only when named.
        ServerKind::ALL.iter().copied().filter(|k| k.available() && *k != ServerKind::FractaldbFast).collect()
    } else {
        for k in &args.servers {
            if !k.available() {
                bail!(
                    "{} is not installed on this machine (Debian: mariadb-server, mariadb-plugin-rocksdb)",
                    k.name()
                );
            }
        }
        args.servers.clone()
    };
    let mut p = Params {
        rows: args.rows.unwrap_or(1_000_000),
        max_secs: args.max_secs,
        threads: args.threads.max(1),
        interval_secs: args.interval_secs,
        sysbench_threads: args.sysbench_threads.clone(),
        sysbench_secs: args.sysbench_secs.max(1),
        sysbench_table_size: args.sysbench_table_size.max(1),
        seed: args.seed,
    };
    if args.smoke {
        p.rows = args.rows.unwrap_or(SMOKE_ROWS);
        p.sysbench_secs = SMOKE_SECS;
        p.sysbench_table_size = SMOKE_TABLE_SIZE;
        p.threads = p.threads.min(4);
        p.sysbench_threads = vec![2];
    }
    if workloads.iter().any(|w| w.sysbench_script().is_some()) && !sysbench_installed() {
        bail!("the sysbench workloads need the sysbench binary (Debian: sysbench)");
    }
    fs::create_dir_all(&args.out).context(|| format!("creating {}", args.out.display()))?;
    let mut all = Vec::new();
    let mut targets: Vec<(String, Option<ServerKind>, Option<Endpoint>)> =
        kinds.iter().map(|k| (k.name().to_string(), Some(*k), None)).collect();
    for c in &args.connect {
        let Some((name, addr)) = c.split_once('=') else { bail!("--connect wants NAME=HOST:PORT, got {c}") };
        let Some((host, port)) = addr.rsplit_once(':') else {
            bail!("--connect wants NAME=HOST:PORT, got {c}")
        };
        let port: u16 = port.parse().context(|| format!("the port in {c}"))?;
        targets.push((
            name.to_string(),
            None,
            Some(Endpoint {
                host: host.to_string(),
                port,
                user: args.connect_user.clone(),
                password: args.connect_password.clone(),
            }),
        ));
    }
    for (label, kind, ep) in targets {
        let mut runs = ServerRuns {
            label: label.clone(),
            settings: Vec::new(),
            version: String::new(),
            results: Vec::new(),
        };
        // A fresh server per workload: every workload starts on an empty
        // server with a cold cache, and bytes on disk are the workload's own.
        // The smoke run keeps one server per kind (it checks the tool, not
        // the figures, and starting MariaDB costs seconds).
        let mut kept: Option<Server> = None;
        for &w in &workloads {
            let server = match (kept.take(), kind, &ep) {
                (Some(s), _, _) => s,
                (None, Some(k), _) => Server::start(k, &args.dir.join(k.name()), args.cache_mb)?,
                (None, None, Some(ep)) => Server::external(&label, ep.clone()),
                _ => unreachable!("every target is a kind or an endpoint"),
            };
            if runs.settings.is_empty() {
                runs.settings = server.settings.clone();
                let mut c = client::connect(&server.endpoint, None)?;
                runs.version = client::scalar(&mut c, "SELECT VERSION()")?.unwrap_or_default();
            }
            eprintln!("{label}: {} ...", w.name());
            let before = server.counters();
            let tag = format!("{label} {}", w.name());
            let result = workloads::run(w, &server.endpoint, &p, &|line| eprintln!("  {tag}: {line}"));
            let after = server.counters();
            let disk = server.disk_bytes();
            let counters = match (before, after) {
                (Some(b), Some(a)) => Some(a.since(&b)),
                _ => None,
            };
            let result = if args.smoke && result.is_ok() {
                kept = Some(server);
                result?
            } else {
                let stopped = server.stop();
                let result = result?;
                stopped?;
                result
            };
            for r in &result {
                eprintln!(
                    "  {tag}: {} threads: {:.0} {}/s, p99 {:.2} ms",
                    r.threads,
                    r.rate(),
                    w.unit(),
                    r.p99_ms
                );
            }
            runs.results.push((w, result, counters, disk));
        }
        if let Some(s) = kept {
            s.stop()?;
        }
        all.push(runs);
    }
    write_report(&args, &p, &workloads, &all)
}

fn sysbench_installed() -> bool {
    std::process::Command::new("sysbench")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The lowest 10-interval moving average against the median interval.
fn steadiness(r: &Run) -> Option<f64> {
    let rates: Vec<f64> = r.intervals.iter().map(|i| i.rate).collect();
    if rates.len() < 20 {
        return None;
    }
    let windows: Vec<f64> = rates.windows(10).map(|w| w.iter().sum::<f64>() / 10.0).collect();
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let low = windows.iter().copied().fold(f64::INFINITY, f64::min);
    (median > 0.0).then(|| low / median)
}

/// The rate over the last 10% of the intervals.
fn last_tenth(r: &Run) -> Option<f64> {
    let n = r.intervals.len();
    if n < 10 {
        return None;
    }
    let tail = &r.intervals[n - n / 10..];
    Some(tail.iter().map(|i| i.rate).sum::<f64>() / tail.len() as f64)
}

fn mb(b: u64) -> String {
    format!("{:.1}", b as f64 / (1 << 20) as f64)
}

fn write_report(
    args: &SqlBenchArgs,
    p: &Params,
    workloads: &[SqlWorkload],
    all: &[ServerRuns],
) -> Result<()> {
    let out = &args.out;
    let mut csv = String::from("server,workload,threads,end_s,rate,p50_ms,p95_ms,p99_ms,max_ms\n");
    let mut sum = String::from(
        "server,workload,threads,unit,units,secs,rate,last10_rate,lowest_window_to_median,p99_ms,max_ms,retries,cpu_s,read_mb,written_mb,disk_mb,peak_rss_mb\n",
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for s in all {
        for (w, runs, c, disk) in &s.results {
            for r in runs {
                for i in &r.intervals {
                    let _ = writeln!(
                        csv,
                        "{},{},{},{:.3},{:.1},{},{},{:.3},{}",
                        s.label,
                        w.name(),
                        r.threads,
                        i.end_s,
                        i.rate,
                        opt(i.p50_ms),
                        opt(i.p95_ms),
                        i.p99_ms,
                        opt(i.max_ms)
                    );
                }
                let _ = writeln!(
                    sum,
                    "{},{},{},{},{},{:.2},{:.1},{},{},{:.3},{:.3},{},{},{},{},{},{}",
                    s.label,
                    w.name(),
                    r.threads,
                    w.unit(),
                    r.units,
                    r.secs,
                    r.rate(),
                    opt(last_tenth(r)),
                    opt(steadiness(r)),
                    r.p99_ms,
                    r.max_ms,
                    r.retries,
                    c.map(|c| format!("{:.1}", c.cpu_us as f64 / 1e6)).unwrap_or_default(),
                    c.map(|c| mb(c.read_bytes)).unwrap_or_default(),
                    c.map(|c| mb(c.write_bytes)).unwrap_or_default(),
                    disk.map(mb).unwrap_or_default(),
                    c.map(|c| mb(c.peak_rss)).unwrap_or_default(),
                );
            }
        }
    }
    fs::write(out.join("intervals.csv"), csv).context(|| "writing intervals.csv".to_string())?;
    fs::write(out.join("summary.csv"), &sum).context(|| "writing summary.csv".to_string())?;

    let facts = MachineFacts::read();
    let mut md = String::new();
    let _ = writeln!(md, "# fractaldb bench-sql\n");
    let _ = writeln!(
        md,
        "Machine: {} cores, {} MiB memory, load average {} at the end. Cache {} MiB per server; \
         loads: at most {} rows or {:.0} s, {} client threads; sysbench: table of {} rows, {} s per run.\n",
        facts.cores,
        facts.memory_bytes >> 20,
        load_average(),
        args.cache_mb,
        p.rows,
        p.max_secs,
        p.threads,
        p.sysbench_table_size,
        p.sysbench_secs
    );
    for s in all {
        let _ = writeln!(md, "- **{}** ({}): `{}`", s.label, s.version, s.settings.join(" "));
    }
    let _ = writeln!(md);
    for &w in workloads {
        let _ = writeln!(md, "## {}\n", w.name());
        let _ = writeln!(
            md,
            "| server | threads | {}/s | last 10% | lowest 10 s / median | p99 ms | retries | CPU s | written MB | on disk MB | peak RSS MB | fractaldb / this |",
            w.unit()
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|");
        let fdb: Vec<&Run> = all
            .iter()
            .filter(|s| s.label == "fractaldb")
            .flat_map(|s| s.results.iter().filter(|r| r.0 == w).flat_map(|r| r.1.iter()))
            .collect();
        for s in all {
            for (_, runs, c, disk) in s.results.iter().filter(|r| r.0 == w) {
                for r in runs {
                    let ratio = fdb
                        .iter()
                        .find(|f| f.threads == r.threads)
                        .filter(|_| s.label != "fractaldb")
                        .map(|f| format!("{:.2}", f.rate() / r.rate().max(1e-9)))
                        .unwrap_or_default();
                    let _ = writeln!(
                        md,
                        "| {} | {} | {:.0} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
                        s.label,
                        r.threads,
                        r.rate(),
                        last_tenth(r).map(|v| format!("{v:.0}")).unwrap_or_default(),
                        steadiness(r).map(|v| format!("{v:.2}")).unwrap_or_default(),
                        r.p99_ms,
                        r.retries,
                        c.map(|c| format!("{:.1}", c.cpu_us as f64 / 1e6)).unwrap_or_default(),
                        c.map(|c| mb(c.write_bytes)).unwrap_or_default(),
                        disk.map(mb).unwrap_or_default(),
                        c.map(|c| mb(c.peak_rss)).unwrap_or_default(),
                        ratio
                    );
                }
            }
        }
        let _ = writeln!(md);
        // One chart per workload and thread count.
        let thread_counts: Vec<usize> = {
            let mut t: Vec<usize> = all
                .iter()
                .flat_map(|s| {
                    s.results.iter().filter(|r| r.0 == w).flat_map(|r| r.1.iter().map(|r| r.threads))
                })
                .collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        for t in thread_counts {
            let mut lines = Vec::new();
            for (n, s) in all.iter().enumerate() {
                for r in
                    s.results.iter().filter(|r| r.0 == w).flat_map(|r| r.1.iter()).filter(|r| r.threads == t)
                {
                    let rates: Vec<f64> = r.intervals.iter().map(|i| i.rate).collect();
                    let points = r
                        .intervals
                        .iter()
                        .enumerate()
                        .map(|(k, i)| {
                            let from = k.saturating_sub(9);
                            let avg = rates[from..=k].iter().sum::<f64>() / (k - from + 1) as f64;
                            (i.end_s, avg)
                        })
                        .collect();
                    lines.push(chart::Line { label: s.label.clone(), colour: n, points });
                }
            }
            let name = format!("{}-{t}t", w.name());
            let c = chart::Chart {
                title: format!("{} ({t} threads), 10-interval moving average", w.name()),
                x_label: "seconds".into(),
                y_label: format!("{}/s", w.unit()),
                lines,
            };
            chart::draw(&c, &out.join(format!("{name}.png")), &out.join(format!("{name}.svg")))?;
            let _ = writeln!(md, "![{name}]({name}.png)\n");
        }
    }
    fs::write(out.join("summary.md"), &md).context(|| "writing summary.md".to_string())?;
    println!("{md}");
    eprintln!("report in {}", out.display());
    Ok(())
}
