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
//! server), each server's settings, the machine's facts, and charts (PNG
//! and SVG): throughput over time (a 10-interval moving average) and p99
//! per interval, for loads throughput against rows inserted, for the insert
//! grid a line per table count over thread counts. Step workloads (the
//! maintenance sequence, the log table's codecs) report each step's time
//! and bytes on disk against InnoDB's and MyRocks'.

pub mod analytic;
pub mod client;
pub mod grid;
pub mod logtable;
pub mod maintenance;
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
const SMOKE_MAINTENANCE_ROWS: u64 = 5000;
const SMOKE_LOG_ROWS: u64 = 2000;
const SMOKE_ANALYTIC_ROWS: u64 = 5000;

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

    /// Table counts of the sysbench insert grid, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,12,16")]
    pub grid_tables: Vec<usize>,

    /// Thread counts of the sysbench insert grid, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,24,32,48,64,80")]
    pub grid_threads: Vec<usize>,

    /// Rows of the maintenance sequence's mysqldump file (doubled twice).
    #[arg(long, value_parser = super::parse_count, default_value = "1000000")]
    pub maintenance_rows: u64,

    /// Rows of the log-table compression comparison.
    #[arg(long, value_parser = super::parse_count, default_value = "200000")]
    pub log_rows: u64,

    /// Rows of the analytic reads' large table [default: 10x the cache in row bytes].
    #[arg(long, value_parser = super::parse_count)]
    pub analytic_rows: Option<u64>,

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
        ServerKind::ALL.iter().copied().filter(|k| k.available() && !k.only_when_named()).collect()
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
        grid_tables: args.grid_tables.iter().map(|&t| t.max(1)).collect(),
        grid_threads: args.grid_threads.iter().map(|&t| t.max(1)).collect(),
        maintenance_rows: args.maintenance_rows,
        log_rows: args.log_rows,
        analytic_rows: args
            .analytic_rows
            .unwrap_or(args.cache_mb.max(1) * 10 * (1 << 20) / analytic::ROW_BYTES),
        scratch: args.dir.join("inputs"),
    };
    if args.smoke {
        p.rows = args.rows.unwrap_or(SMOKE_ROWS);
        p.sysbench_secs = SMOKE_SECS;
        p.sysbench_table_size = SMOKE_TABLE_SIZE;
        p.threads = p.threads.min(4);
        p.sysbench_threads = vec![2];
        p.grid_tables = vec![1, 2];
        p.grid_threads = vec![2];
        p.maintenance_rows = SMOKE_MAINTENANCE_ROWS;
        p.log_rows = SMOKE_LOG_ROWS;
        p.analytic_rows = SMOKE_ANALYTIC_ROWS;
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
            if w.starts_servers() {
                // Fresh servers of its own, in a folder of its own (the smoke
                // run's kept server stays up beside them).
                let dir = args.dir.join(format!("{label}-{}", w.name()));
                // The report names the first server's settings and version
                // (later ones add the workload's own settings, e.g. sync off).
                let first = std::cell::RefCell::new(None::<(Vec<String>, String)>);
                let fresh = |extra: &[String]| -> Result<Server> {
                    let server = match (kind, &ep) {
                        (Some(k), _) => Server::start_with(k, &dir, args.cache_mb, extra)?,
                        (None, Some(ep)) => Server::external(&label, ep.clone()),
                        _ => unreachable!("every target is a kind or an endpoint"),
                    };
                    if first.borrow().is_none() {
                        let mut c = client::connect(&server.endpoint, None)?;
                        let version = client::scalar(&mut c, "SELECT VERSION()")?.unwrap_or_default();
                        *first.borrow_mut() = Some((server.settings.clone(), version));
                    }
                    Ok(server)
                };
                eprintln!("{label}: {} ...", w.name());
                let tag = format!("{label} {}", w.name());
                let result = workloads::run_own(w, kind, &fresh, &p, &|line| eprintln!("  {tag}: {line}"))?;
                if let (true, Some((settings, version))) = (runs.settings.is_empty(), first.into_inner()) {
                    (runs.settings, runs.version) = (settings, version);
                }
                runs.results.push((w, result, None, None));
                continue;
            }
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
            let result = workloads::run(w, &server, &p, &|line| eprintln!("  {tag}: {line}"));
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
            for r in result.iter().filter(|_| !w.is_steps()) {
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

/// Where interval `k` of `r` starts (the previous one's end).
fn interval_start(r: &Run, k: usize) -> f64 {
    if k == 0 {
        0.0
    } else {
        r.intervals[k - 1].end_s
    }
}

/// The rate over intervals `from..to` of `r`, weighted by their lengths.
fn rate_over(r: &Run, from: usize, to: usize) -> f64 {
    workloads::span_rate(&r.intervals[from..to], interval_start(r, from))
}

/// The lowest 10-interval moving average against the median interval.
fn steadiness(r: &Run) -> Option<f64> {
    let n = r.intervals.len();
    if n < 20 {
        return None;
    }
    let mut sorted: Vec<f64> = r.intervals.iter().map(|i| i.rate).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[n / 2];
    let low = (0..=n - 10).map(|k| rate_over(r, k, k + 10)).fold(f64::INFINITY, f64::min);
    (median > 0.0).then(|| low / median)
}

/// The rate over the last 10% of the intervals.
fn last_tenth(r: &Run) -> Option<f64> {
    let n = r.intervals.len();
    if n < 10 {
        return None;
    }
    Some(rate_over(r, n - n / 10, n))
}

/// A 10-interval moving average at each interval's end (the charts' line).
fn moving_average(r: &Run) -> Vec<(f64, f64)> {
    (0..r.intervals.len()).map(|k| (r.intervals[k].end_s, rate_over(r, k.saturating_sub(9), k + 1))).collect()
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
    let mut csv =
        String::from("server,workload,variant,threads,end_s,rows_done,rate,p50_ms,p95_ms,p99_ms,max_ms\n");
    let mut sum = String::from(
        "server,workload,variant,threads,unit,units,secs,rate,last10_rate,lowest_window_to_median,p50_ms,p95_ms,p99_ms,max_ms,retries,cpu_s,read_mb,written_mb,disk_mb,peak_rss_mb\n",
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for s in all {
        for (w, runs, c, disk) in &s.results {
            for r in runs {
                // A run on a server of its own carries its own counters and bytes.
                let c = r.counters.or(*c);
                let disk = r.disk_bytes.or(*disk);
                for (i, done) in r.intervals.iter().zip(units_done(r)) {
                    let _ = writeln!(
                        csv,
                        "{},{},{},{},{:.3},{:.0},{:.1},{},{},{:.3},{}",
                        s.label,
                        w.name(),
                        r.variant,
                        r.threads,
                        i.end_s,
                        done,
                        i.rate,
                        opt(i.p50_ms),
                        opt(i.p95_ms),
                        i.p99_ms,
                        opt(i.max_ms)
                    );
                }
                // Fields go in unquoted: names carry no comma.
                debug_assert!(!r.variant.contains(','), "variant {:?} in summary.csv", r.variant);
                let _ = writeln!(
                    sum,
                    "{},{},{},{},{},{},{:.3},{:.1},{},{},{},{},{:.3},{:.3},{},{},{},{},{},{}",
                    s.label,
                    w.name(),
                    r.variant,
                    r.threads,
                    w.unit(),
                    r.units,
                    r.secs,
                    r.rate(),
                    opt(last_tenth(r)),
                    opt(steadiness(r)),
                    opt(r.p50_ms),
                    opt(r.p95_ms),
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
         loads: at most {} rows or {:.0} s, {} client threads; sysbench: table of {} rows, {} s per run; \
         maintenance: {} rows; log table: {} rows; analytic reads: {} rows.\n",
        facts.cores,
        facts.memory_bytes >> 20,
        load_average(),
        args.cache_mb,
        p.rows,
        p.max_secs,
        p.threads,
        p.sysbench_table_size,
        p.sysbench_secs,
        p.maintenance_rows,
        p.log_rows,
        p.analytic_rows
    );
    for s in all {
        let _ = writeln!(md, "- **{}** ({}): `{}`", s.label, s.version, s.settings.join(" "));
    }
    let _ = writeln!(md);
    for &w in workloads {
        let _ = writeln!(md, "## {}\n", w.name());
        if w.is_steps() {
            steps_table(&mut md, w, all);
        } else if w == SqlWorkload::SysbenchInsertGrid {
            grid_report(&mut md, out, w, all)?;
        } else {
            rates_report(&mut md, out, w, all)?;
        }
    }
    fs::write(out.join("summary.md"), &md).context(|| "writing summary.md".to_string())?;
    println!("{md}");
    eprintln!("report in {}", out.display());
    Ok(())
}

/// Units done by the end of each interval of `r` (rows inserted, for loads).
fn units_done(r: &Run) -> Vec<f64> {
    let mut done = 0.0;
    (0..r.intervals.len())
        .map(|k| {
            done += r.intervals[k].rate * (r.intervals[k].end_s - interval_start(r, k));
            done
        })
        .collect()
}

/// Every run of workload `w` on server `s`.
fn runs_of(
    s: &ServerRuns,
    w: SqlWorkload,
) -> impl Iterator<Item = (&Run, Option<ProcCounters>, Option<u64>)> {
    s.results
        .iter()
        .filter(move |r| r.0 == w)
        .flat_map(|(_, runs, c, d)| runs.iter().map(move |r| (r, r.counters.or(*c), r.disk_bytes.or(*d))))
}

/// A steps workload (maintenance, log table): one row per step and server,
/// with its time and bytes against InnoDB's and MyRocks' (their run of the
/// same step, or for the codecs their first, default one).
fn steps_table(md: &mut String, w: SqlWorkload, all: &[ServerRuns]) {
    let reference = |label: &str, variant: &str| -> Option<&Run> {
        let s = all.iter().find(|s| s.label == label)?;
        let mut runs = runs_of(s, w).map(|r| r.0);
        let first = runs_of(s, w).map(|r| r.0).next();
        runs.find(|r| r.variant == variant).or(first)
    };
    let _ = writeln!(
        md,
        "Time is the statement's wall time at the client; bytes are the allocated blocks {}. \
         \"InnoDB's time / this\" above 1 means this server was faster; \"bytes / InnoDB's\" below 1 means smaller.\n",
        if w == SqlWorkload::LogTable {
            "of the files holding tables (fractaldb's *.fdb, InnoDB's bench/log.ibd, MyRocks' *.sst after a \
             flush and compaction) after a clean stop, minus the same files' when the server had just started"
        } else {
            "of every file in the data folder right after the step (logs included, nothing flushed first)"
        }
    );
    let _ = writeln!(
        md,
        "| {} | server | seconds | rows | on disk MB | CPU s | written MB | InnoDB's time / this | MyRocks' time / this | bytes / InnoDB's | bytes / MyRocks' |",
        if w == SqlWorkload::LogTable { "codec" } else { "step" }
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let variants: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for s in all {
            for (r, _, _) in runs_of(s, w) {
                if !v.contains(&r.variant) {
                    v.push(r.variant.clone());
                }
            }
        }
        v
    };
    let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.2}", a / b) } else { String::new() };
    for v in &variants {
        for s in all {
            for (r, c, disk) in runs_of(s, w).filter(|r| &r.0.variant == v) {
                let cell = |label: &str, time: bool| -> String {
                    if s.label == label {
                        return String::new();
                    }
                    match reference(label, v) {
                        Some(x) if time => ratio(x.secs, r.secs),
                        Some(x) => match (disk, x.disk_bytes) {
                            (Some(d), Some(xd)) => ratio(d as f64, xd as f64),
                            _ => String::new(),
                        },
                        None => String::new(),
                    }
                };
                let _ = writeln!(
                    md,
                    "| {v} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    s.label,
                    r.secs,
                    r.units,
                    disk.map(mb).unwrap_or_default(),
                    c.map(|c| format!("{:.1}", c.cpu_us as f64 / 1e6)).unwrap_or_default(),
                    c.map(|c| mb(c.write_bytes)).unwrap_or_default(),
                    cell("innodb", true),
                    cell("myrocks", true),
                    cell("innodb", false),
                    cell("myrocks", false),
                );
            }
        }
    }
    let _ = writeln!(md);
}

/// The sysbench insert grid: per server and sync mode a table (rows: table
/// counts, columns: thread counts, cells: insert transactions per second),
/// its best cell and the 80-thread cell against it, and a chart with a
/// line per table count over the thread counts.
fn grid_report(md: &mut String, out: &std::path::Path, w: SqlWorkload, all: &[ServerRuns]) -> Result<()> {
    for s in all {
        let runs: Vec<&Run> = runs_of(s, w).map(|r| r.0).collect();
        let mut syncs: Vec<&str> = Vec::new();
        for r in &runs {
            let sync = r.variant.rsplit("sync=").next().unwrap_or_default();
            if !syncs.contains(&sync) {
                syncs.push(sync);
            }
        }
        for sync in syncs {
            let mine: Vec<&Run> =
                runs.iter().copied().filter(|r| r.variant.ends_with(&format!("sync={sync}"))).collect();
            let mut tables: Vec<usize> = mine
                .iter()
                .filter_map(|r| r.variant.strip_prefix("tables=")?.split(' ').next()?.parse().ok())
                .collect();
            tables.dedup();
            let mut threads: Vec<usize> = mine.iter().map(|r| r.threads).collect();
            threads.sort_unstable();
            threads.dedup();
            let _ = writeln!(md, "**{}**, commit sync {sync}: insert transactions per second\n", s.label);
            let _ = writeln!(
                md,
                "| tables \\ threads | {} |",
                threads.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" | ")
            );
            let _ = writeln!(md, "|---|{}", "---|".repeat(threads.len()));
            let mut lines = Vec::new();
            for (n, &t) in tables.iter().enumerate() {
                let v = grid::variant(t, sync);
                let row: Vec<Option<&Run>> = threads
                    .iter()
                    .map(|&th| mine.iter().copied().find(|r| r.variant == v && r.threads == th))
                    .collect();
                let _ = writeln!(
                    md,
                    "| {t} | {} |",
                    row.iter()
                        .map(|r| r.map(|r| format!("{:.0}", r.rate())).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                lines.push(chart::Line {
                    label: format!("{t} tables"),
                    colour: n,
                    points: row.iter().flatten().map(|r| (r.threads as f64, r.rate())).collect(),
                });
            }
            if let Some(best) = mine.iter().max_by(|a, b| a.rate().total_cmp(&b.rate())) {
                let at_most = threads.last().copied().unwrap_or(0);
                let top = mine.iter().filter(|r| r.threads == at_most).map(|r| r.rate()).fold(0.0, f64::max);
                let _ = writeln!(
                    md,
                    "\nBest cell {:.0} at {} and {} threads; the best at {at_most} threads is {:.2} of it.\n",
                    best.rate(),
                    best.variant,
                    best.threads,
                    top / best.rate().max(1e-9)
                );
            }
            let name = format!("{}-{}-sync-{sync}", w.name(), s.label);
            let c = chart::Chart {
                title: format!("sysbench oltp_insert, {}, commit sync {sync}", s.label),
                x_label: "client threads".into(),
                y_label: "transactions/s".into(),
                lines,
            };
            chart::draw(&c, &out.join(format!("{name}.png")), &out.join(format!("{name}.svg")))?;
            let _ = writeln!(md, "![{name}]({name}.png)\n");
        }
    }
    Ok(())
}

/// A workload with a rate over time: the table of rates with ratios, and
/// per thread count charts of the rate over time (10-interval moving
/// average), of p99 latency over time, and for loads of the rate against
/// rows inserted (iiBench's x axis: servers compare at equal data size).
fn rates_report(md: &mut String, out: &std::path::Path, w: SqlWorkload, all: &[ServerRuns]) -> Result<()> {
    let _ = writeln!(
        md,
        "| server | threads | {}/s | last 10% | lowest 10 s / median | p50 / p95 / p99 / max ms | retries | CPU s | read MB | written MB | on disk MB | peak RSS MB | fractaldb / this |",
        w.unit()
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let fdb: Vec<&Run> =
        all.iter().filter(|s| s.label == "fractaldb").flat_map(|s| runs_of(s, w).map(|r| r.0)).collect();
    for s in all {
        for (r, c, disk) in runs_of(s, w) {
            let ratio = fdb
                .iter()
                .find(|f| f.threads == r.threads)
                .filter(|_| s.label != "fractaldb")
                .map(|f| format!("{:.2}", f.rate() / r.rate().max(1e-9)))
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {} | {} | {} / {} / {:.2} / {:.2} | {} | {} | {} | {} | {} | {} | {} |",
                s.label,
                r.threads,
                r.rate(),
                last_tenth(r).map(|v| format!("{v:.0}")).unwrap_or_default(),
                steadiness(r).map(|v| format!("{v:.2}")).unwrap_or_default(),
                r.p50_ms.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into()),
                r.p95_ms.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into()),
                r.p99_ms,
                r.max_ms,
                r.retries,
                c.map(|c| format!("{:.1}", c.cpu_us as f64 / 1e6)).unwrap_or_default(),
                c.map(|c| mb(c.read_bytes)).unwrap_or_default(),
                c.map(|c| mb(c.write_bytes)).unwrap_or_default(),
                disk.map(mb).unwrap_or_default(),
                c.map(|c| mb(c.peak_rss)).unwrap_or_default(),
                ratio
            );
        }
    }
    let _ = writeln!(md);
    let mut thread_counts: Vec<usize> = all.iter().flat_map(|s| runs_of(s, w).map(|r| r.0.threads)).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    for t in thread_counts {
        let (mut rate, mut by_rows, mut latency) = (Vec::new(), Vec::new(), Vec::new());
        for (n, s) in all.iter().enumerate() {
            for (r, _, _) in runs_of(s, w).filter(|r| r.0.threads == t) {
                let avg = moving_average(r);
                by_rows.push(chart::Line {
                    label: s.label.clone(),
                    colour: n,
                    points: units_done(r).into_iter().zip(&avg).map(|(d, a)| (d, a.1)).collect(),
                });
                rate.push(chart::Line { label: s.label.clone(), colour: n, points: avg });
                latency.push(chart::Line {
                    label: s.label.clone(),
                    colour: n,
                    points: r
                        .intervals
                        .iter()
                        .filter(|i| i.rate > 0.0)
                        .map(|i| (i.end_s, i.p99_ms))
                        .collect(),
                });
            }
        }
        let name = format!("{}-{t}t", w.name());
        let mut charts = vec![(
            name.clone(),
            chart::Chart {
                title: format!("{} ({t} threads), 10-interval moving average", w.name()),
                x_label: "seconds".into(),
                y_label: format!("{}/s", w.unit()),
                lines: rate,
            },
        )];
        if w.is_load() {
            charts.push((
                format!("{name}-by-rows"),
                chart::Chart {
                    title: format!(
                        "{} ({t} threads) against rows inserted, 10-interval moving average",
                        w.name()
                    ),
                    x_label: "rows inserted".into(),
                    y_label: format!("{}/s", w.unit()),
                    lines: by_rows,
                },
            ));
        }
        charts.push((
            format!("{name}-p99"),
            chart::Chart {
                title: format!("{} ({t} threads), p99 latency per interval", w.name()),
                x_label: "seconds".into(),
                y_label: "p99 latency, ms".into(),
                lines: latency,
            },
        ));
        for (name, c) in charts {
            chart::draw(&c, &out.join(format!("{name}.png")), &out.join(format!("{name}.svg")))?;
            let _ = writeln!(md, "![{name}]({name}.png)\n");
        }
    }
    Ok(())
}
