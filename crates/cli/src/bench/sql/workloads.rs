//! The workloads of the benchmark posts, as SQL any MySQL server runs.
//!
//! - `insert-roll-seq` / `insert-roll-random`: per transaction one row into
//!   `sbtest (id, k, c, pad)` with `KEY (k)` and an upsert
//!   `INSERT ... ON DUPLICATE KEY UPDATE k = VALUES(k) + k` into each of
//!   `sbtest_r10`, `sbtest_r100`, `sbtest_r1000`, keyed by `id DIV 10`,
//!   `id DIV 100`, `id DIV 1000`; `k` Pareto-distributed over 0..10000 (as
//!   sysbench draws it, h = 0.2). The random variant's primary key is
//!   `(hid, mid, id)`, hid and mid uniform over 0..10000, so row inserts land
//!   all over the table.
//! - `iibench`: `purchases_index` with an auto-increment key and iiBench's
//!   three secondary indexes, 1000-row INSERT statements (one transaction each).
//! - `sysbench-*`: the `sysbench` binary's own OLTP scripts (prepare, then
//!   run at each thread count), its per-second report parsed.
//!
//! Loads record each transaction's end time and latency on the worker
//! (no shared lock); intervals and percentiles are computed afterwards.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client;
use super::servers::{Endpoint, Server, ServerKind};
use crate::bail;
use crate::error::{Error, Result};

/// A workload of `fractaldb bench-sql`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SqlWorkload {
    InsertRollSeq,
    InsertRollRandom,
    Iibench,
    SysbenchPointSelect,
    SysbenchReadWrite,
    SysbenchReadOnly,
    SysbenchUpdateIndex,
    /// sysbench's `oltp_insert` over a grid of table and thread counts, commit sync on and off.
    SysbenchInsertGrid,
    /// The maintenance sequence: a mysqldump load, two doublings, GROUP BY, DELETE, OPTIMIZE, TRUNCATE.
    Maintenance,
    /// The 11-column log table loaded under each row format (codec).
    LogTable,
    /// Range scans over secondary indexes joining back to a table larger than the cache.
    AnalyticReads,
}

impl SqlWorkload {
    pub const ALL: [SqlWorkload; 11] = [
        SqlWorkload::InsertRollSeq,
        SqlWorkload::InsertRollRandom,
        SqlWorkload::Iibench,
        SqlWorkload::SysbenchPointSelect,
        SqlWorkload::SysbenchReadWrite,
        SqlWorkload::SysbenchReadOnly,
        SqlWorkload::SysbenchUpdateIndex,
        SqlWorkload::SysbenchInsertGrid,
        SqlWorkload::Maintenance,
        SqlWorkload::LogTable,
        SqlWorkload::AnalyticReads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SqlWorkload::InsertRollSeq => "insert-roll-seq",
            SqlWorkload::InsertRollRandom => "insert-roll-random",
            SqlWorkload::Iibench => "iibench",
            SqlWorkload::SysbenchPointSelect => "sysbench-point-select",
            SqlWorkload::SysbenchReadWrite => "sysbench-read-write",
            SqlWorkload::SysbenchReadOnly => "sysbench-read-only",
            SqlWorkload::SysbenchUpdateIndex => "sysbench-update-index",
            SqlWorkload::SysbenchInsertGrid => "sysbench-insert-grid",
            SqlWorkload::Maintenance => "maintenance",
            SqlWorkload::LogTable => "log-table",
            SqlWorkload::AnalyticReads => "analytic-reads",
        }
    }

    /// The sysbench script, for the sysbench workloads.
    pub fn sysbench_script(self) -> Option<&'static str> {
        match self {
            SqlWorkload::SysbenchPointSelect => Some("oltp_point_select"),
            SqlWorkload::SysbenchReadWrite => Some("oltp_read_write"),
            SqlWorkload::SysbenchReadOnly => Some("oltp_read_only"),
            SqlWorkload::SysbenchUpdateIndex => Some("oltp_update_index"),
            SqlWorkload::SysbenchInsertGrid => Some("oltp_insert"),
            _ => None,
        }
    }

    /// What one unit of the rate is.
    pub fn unit(self) -> &'static str {
        if self.sysbench_script().is_some() {
            "transactions"
        } else if self == SqlWorkload::AnalyticReads {
            "queries"
        } else {
            "rows"
        }
    }

    /// Whether the workload is a sequence of timed steps (one run per step,
    /// each with its bytes on disk after it) rather than a rate over time.
    pub fn is_steps(self) -> bool {
        matches!(self, SqlWorkload::Maintenance | SqlWorkload::LogTable)
    }

    /// Whether the workload inserts rows over time (charted against rows inserted too).
    pub fn is_load(self) -> bool {
        matches!(self, SqlWorkload::InsertRollSeq | SqlWorkload::InsertRollRandom | SqlWorkload::Iibench)
    }

    /// Whether the workload starts its own servers (fresh ones per variant,
    /// with settings of their own) rather than running on the one given.
    pub fn starts_servers(self) -> bool {
        matches!(self, SqlWorkload::SysbenchInsertGrid | SqlWorkload::LogTable)
    }
}

/// How big and how long.
#[derive(Clone, Debug)]
pub struct Params {
    /// Rows a load inserts at most.
    pub rows: u64,
    /// A load stops after this long even if rows remain.
    pub max_secs: f64,
    pub threads: usize,
    pub interval_secs: f64,
    pub sysbench_threads: Vec<usize>,
    pub sysbench_secs: u64,
    pub sysbench_table_size: u64,
    pub seed: u64,
    /// The sysbench insert grid's table and thread counts.
    pub grid_tables: Vec<usize>,
    pub grid_threads: Vec<usize>,
    /// Rows of the maintenance sequence's dump and of the log table.
    pub maintenance_rows: u64,
    pub log_rows: u64,
    /// Rows of the analytic reads' large table, and seconds of queries.
    pub analytic_rows: u64,
    /// Where generated input files (the dumps) go.
    pub scratch: std::path::PathBuf,
}

/// One interval of a run.
#[derive(Clone, Debug, Default)]
pub struct Interval {
    /// Seconds since the run started, at the interval's end.
    pub end_s: f64,
    /// Rows (loads) or transactions (sysbench) per second in it.
    pub rate: f64,
    /// Latency percentiles in milliseconds (sysbench reports only p99).
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: f64,
    pub max_ms: Option<f64>,
}

/// One run: a workload at one thread count against one server.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// What distinguishes runs of one workload besides the thread count:
    /// a step (`load`, `optimize`), a codec, a grid cell (`tables=4 sync=on`).
    pub variant: String,
    pub threads: usize,
    pub intervals: Vec<Interval>,
    /// Rows or transactions done.
    pub units: u64,
    pub secs: f64,
    /// Transactions retried after a deadlock or lock wait timeout, or
    /// errors sysbench ignored.
    pub retries: u64,
    /// Latency percentiles over the whole run, milliseconds (p50 and p95
    /// for sysbench from its histogram; absent where nothing gave them).
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Bytes on disk right after this run, for runs that measure it themselves (steps).
    pub disk_bytes: Option<u64>,
    /// The server's counters over this run, for runs on a server of their own.
    pub counters: Option<super::servers::ProcCounters>,
}

impl Run {
    pub fn rate(&self) -> f64 {
        if self.secs > 0.0 {
            self.units as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Runs `w` against `server`, which has an empty database `bench`.
/// Returns one run per thread count (loads: one) or per step.
pub fn run(w: SqlWorkload, server: &Server, p: &Params, progress: &dyn Fn(&str)) -> Result<Vec<Run>> {
    let ep = &server.endpoint;
    match w {
        SqlWorkload::InsertRollSeq => Ok(vec![load(ep, p, Load::RollSeq, progress)?]),
        SqlWorkload::InsertRollRandom => Ok(vec![load(ep, p, Load::RollRandom, progress)?]),
        SqlWorkload::Iibench => Ok(vec![load(ep, p, Load::Iibench, progress)?]),
        SqlWorkload::Maintenance => super::maintenance::run(server, p, progress),
        SqlWorkload::AnalyticReads => super::analytic::run(ep, p, progress),
        SqlWorkload::SysbenchInsertGrid | SqlWorkload::LogTable => {
            unreachable!("{} starts its own servers: run_own", w.name())
        }
        _ => sysbench(w, ep, p, progress),
    }
}

/// Starts a fresh server of the target's kind with extra settings (a
/// server the user runs is returned as it is, the settings unapplied).
pub type Fresh<'a> = dyn Fn(&[String]) -> Result<Server> + 'a;

/// Runs a workload that starts its own servers (see [`SqlWorkload::starts_servers`]).
/// `kind` is None for a server the user runs.
pub fn run_own(
    w: SqlWorkload,
    kind: Option<ServerKind>,
    fresh: &Fresh,
    p: &Params,
    progress: &dyn Fn(&str),
) -> Result<Vec<Run>> {
    match w {
        SqlWorkload::SysbenchInsertGrid => super::grid::run(kind, fresh, p, progress),
        SqlWorkload::LogTable => super::logtable::run(kind, fresh, p, progress),
        _ => unreachable!("{} runs on the server given: run", w.name()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Load {
    RollSeq,
    RollRandom,
    Iibench,
}

/// Rows one iiBench statement inserts.
const IIBENCH_ROWS: u64 = 1000;
/// Roll-up levels: a counter row per `id DIV level`.
const ROLL_LEVELS: [u64; 3] = [10, 100, 1000];

fn schema(load: Load) -> Vec<String> {
    let mut s = vec!["DROP DATABASE IF EXISTS bench".to_string(), "CREATE DATABASE bench".to_string()];
    match load {
        Load::RollSeq | Load::RollRandom => {
            s.push(if load == Load::RollSeq {
                "CREATE TABLE bench.sbtest (id BIGINT NOT NULL, k INT NOT NULL, c CHAR(120) NOT NULL, \
                 pad CHAR(60) NOT NULL, PRIMARY KEY (id), KEY k (k))"
                    .to_string()
            } else {
                "CREATE TABLE bench.sbtest (hid INT NOT NULL, mid INT NOT NULL, id BIGINT NOT NULL, \
                 k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, PRIMARY KEY (hid, mid, id), \
                 KEY k (k))"
                    .to_string()
            });
            for l in ROLL_LEVELS {
                s.push(format!(
                    "CREATE TABLE bench.sbtest_r{l} (id BIGINT NOT NULL PRIMARY KEY, k BIGINT NOT NULL)"
                ));
            }
        }
        Load::Iibench => s.push(
            "CREATE TABLE bench.purchases_index (transactionid BIGINT NOT NULL AUTO_INCREMENT, \
             dateandtime DATETIME NOT NULL, cashregisterid INT NOT NULL, customerid INT NOT NULL, \
             productid INT NOT NULL, price FLOAT NOT NULL, PRIMARY KEY (transactionid), \
             KEY marketsegment (price, customerid), KEY registersegment (cashregisterid, price, customerid), \
             KEY pdc (price, dateandtime, customerid))"
                .to_string(),
        ),
    }
    s
}

/// sysbench's Pareto draw over 0..n with h = 0.2.
fn pareto(rng: &mut SmallRng, n: u64) -> u64 {
    let h: f64 = 0.2;
    let power = h.ln() / (1.0 - h).ln();
    let u: f64 = rng.gen();
    ((n as f64 * u.powf(power)) as u64).min(n - 1)
}

/// sysbench's `c`/`pad` text: groups of 11 digits joined by '-'.
fn digits(rng: &mut SmallRng, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + rng.gen_range(0..10u8)));
        }
    }
    s
}

/// What a worker saw: per transaction, its end (µs since start) and latency (µs).
#[derive(Default)]
struct Seen {
    events: Vec<(u64, u32)>,
    retries: u64,
}

fn is_retryable(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::MySqlError(m) if m.code == 1213 || m.code == 1205 || m.code == 1020)
}

fn load(ep: &Endpoint, p: &Params, load: Load, progress: &dyn Fn(&str)) -> Result<Run> {
    {
        let mut c = client::connect(ep, None)?;
        client::exec_all(&mut c, &schema(load))?;
    }
    let per_txn = if load == Load::Iibench { IIBENCH_ROWS } else { 1 };
    let txns = p.rows.div_ceil(per_txn);
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..p.threads.max(1) {
        let (ep, next, done, stop) = (ep.clone(), next.clone(), done.clone(), stop.clone());
        let seed = p.seed.wrapping_add(t as u64 * 0x9E37_79B9);
        handles.push(std::thread::spawn(move || -> Result<Seen> {
            let mut conn = client::connect(&ep, Some("bench"))?;
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut seen = Seen::default();
            let stmts = match load {
                Load::Iibench => Vec::new(),
                _ => {
                    let ins = if load == Load::RollSeq {
                        "INSERT INTO sbtest (id, k, c, pad) VALUES (?, ?, ?, ?)"
                    } else {
                        "INSERT INTO sbtest (hid, mid, id, k, c, pad) VALUES (?, ?, ?, ?, ?, ?)"
                    };
                    let mut v = vec![conn.prep(ins).map_err(|e| Error::new(format!("prepare: {e}")))?];
                    for l in ROLL_LEVELS {
                        v.push(
                            conn.prep(format!(
                                "INSERT INTO sbtest_r{l} (id, k) VALUES (?, ?) ON DUPLICATE KEY UPDATE k = VALUES(k) + k"
                            ))
                            .map_err(|e| Error::new(format!("prepare: {e}")))?,
                        );
                    }
                    v
                }
            };
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= txns {
                    break;
                }
                let began = Instant::now();
                // One transaction, retried whole on a deadlock or lock wait timeout.
                loop {
                    let r = match load {
                        Load::Iibench => {
                            let mut sql = String::with_capacity(64 * IIBENCH_ROWS as usize);
                            sql.push_str(
                                "INSERT INTO purchases_index (dateandtime, cashregisterid, customerid, productid, price) VALUES ",
                            );
                            for r in 0..IIBENCH_ROWS {
                                if r > 0 {
                                    sql.push(',');
                                }
                                let secs = 1_700_000_000 + i * IIBENCH_ROWS + r;
                                sql.push_str(&format!(
                                    "(FROM_UNIXTIME({secs}),{},{},{},{:.2})",
                                    rng.gen_range(0..1000),
                                    rng.gen_range(0..100_000),
                                    rng.gen_range(0..10_000),
                                    rng.gen_range(0.0..500.0f64)
                                ));
                            }
                            conn.query_drop(sql)
                        }
                        _ => {
                            let id = i;
                            let k = pareto(&mut rng, 10_000);
                            let c = digits(&mut rng, 10);
                            let pad = digits(&mut rng, 5);
                            (|| -> std::result::Result<(), mysql::Error> {
                                conn.query_drop("BEGIN")?;
                                if load == Load::RollSeq {
                                    conn.exec_drop(&stmts[0], (id, k, &c, &pad))?;
                                } else {
                                    let (hid, mid) = (rng.gen_range(0..10_000u32), rng.gen_range(0..10_000u32));
                                    conn.exec_drop(&stmts[0], (hid, mid, id, k, &c, &pad))?;
                                }
                                for (n, l) in ROLL_LEVELS.iter().enumerate() {
                                    conn.exec_drop(&stmts[n + 1], (id / l, k))?;
                                }
                                conn.query_drop("COMMIT")
                            })()
                        }
                    };
                    match r {
                        Ok(()) => break,
                        Err(e) if is_retryable(&e) => {
                            let _ = conn.query_drop("ROLLBACK");
                            seen.retries += 1;
                        }
                        Err(e) => return Err(Error::new(format!("transaction {i}: {e}"))),
                    }
                }
                let now = Instant::now();
                let end_us = now.duration_since(start).as_micros() as u64;
                let lat = now.duration_since(began).as_micros().min(u32::MAX as u128) as u32;
                seen.events.push((end_us, lat));
                done.fetch_add(per_txn, Ordering::Relaxed);
            }
            Ok(seen)
        }));
    }
    // Progress once per interval; stop at the time limit.
    let interval = Duration::from_secs_f64(p.interval_secs.max(0.01));
    let mut last = 0;
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(interval.min(Duration::from_millis(500)));
        let el = start.elapsed().as_secs_f64();
        if el >= p.max_secs {
            stop.store(true, Ordering::Relaxed);
        }
        let d = done.load(Ordering::Relaxed);
        if d != last {
            progress(&format!("{:.0} s: {} rows", el, d));
            last = d;
        }
    }
    let mut events = Vec::new();
    let mut retries = 0;
    for h in handles {
        let seen = h.join().map_err(|_| Error::new("a worker thread panicked".to_string()))??;
        events.extend(seen.events);
        retries += seen.retries;
    }
    // The run's length is its last transaction's end, not when this loop
    // noticed the workers had finished (up to half a second later).
    Ok(summarize(events, per_txn, p.interval_secs, p.threads, retries))
}

/// The rate over consecutive intervals starting at `start_s`: units over
/// seconds, so a short interval (the last one) weighs by its length.
pub fn span_rate(intervals: &[Interval], start_s: f64) -> f64 {
    let Some(last) = intervals.last() else { return 0.0 };
    let mut prev = start_s;
    let mut units = 0.0;
    for i in intervals {
        units += i.rate * (i.end_s - prev);
        prev = i.end_s;
    }
    let secs = last.end_s - start_s;
    if secs > 0.0 {
        units / secs
    } else {
        0.0
    }
}

/// Per-interval rates and latency percentiles from the workers' events
/// (`(end µs since the start, latency µs)`).
///
/// Interval k covers (k·step, (k+1)·step]; the run ends at its last event,
/// so the last interval is usually shorter than a step and its rate divides
/// by its own length, not a whole step. Intervals in which no transaction
/// ended are kept with rate 0 (a stall is part of the run; leaving it out
/// would lift the lowest window and the last 10%); their latency fields are
/// empty, p99 0. `secs` is the run's length: the last event's end.
pub(super) fn summarize(
    mut events: Vec<(u64, u32)>,
    per_txn: u64,
    interval_secs: f64,
    threads: usize,
    retries: u64,
) -> Run {
    events.sort_unstable();
    let step_us = (interval_secs * 1e6).max(1.0) as u64;
    let end_us = events.last().map_or(0, |e| e.0);
    let bucket_of = |t: u64| t.saturating_sub(1) / step_us;
    let mut intervals = Vec::new();
    let mut i = 0;
    let mut all: Vec<u32> = events.iter().map(|e| e.1).collect();
    if !events.is_empty() {
        for bucket in 0..=bucket_of(end_us) {
            let mut lats = Vec::new();
            while i < events.len() && bucket_of(events[i].0) == bucket {
                lats.push(events[i].1);
                i += 1;
            }
            let from = bucket * step_us;
            let to = ((bucket + 1) * step_us).min(end_us);
            debug_assert!(to > from, "every interval up to the last event has a length");
            let secs = (to - from).max(1) as f64 / 1e6;
            lats.sort_unstable();
            let pct = |q: f64| {
                (!lats.is_empty()).then(|| f64::from(lats[((lats.len() - 1) as f64 * q) as usize]) / 1000.0)
            };
            intervals.push(Interval {
                end_s: to as f64 / 1e6,
                rate: (lats.len() as u64 * per_txn) as f64 / secs,
                p50_ms: pct(0.5),
                p95_ms: pct(0.95),
                p99_ms: pct(0.99).unwrap_or(0.0),
                max_ms: pct(1.0),
            });
        }
    }
    debug_assert_eq!(i, events.len(), "every event falls in an interval");
    all.sort_unstable();
    let pct = |q: f64| {
        if all.is_empty() {
            0.0
        } else {
            f64::from(all[((all.len() - 1) as f64 * q) as usize]) / 1000.0
        }
    };
    Run {
        threads,
        intervals,
        units: events.len() as u64 * per_txn,
        secs: end_us as f64 / 1e6,
        retries,
        p50_ms: (!all.is_empty()).then(|| pct(0.5)),
        p95_ms: (!all.is_empty()).then(|| pct(0.95)),
        p99_ms: pct(0.99),
        max_ms: pct(1.0),
        ..Run::default()
    }
}

pub(super) fn sysbench_base(script: &str, ep: &Endpoint, p: &Params, tables: usize) -> Command {
    let mut cmd = Command::new("sysbench");
    cmd.arg(script)
        .arg(format!("--mysql-host={}", ep.host))
        .arg(format!("--mysql-port={}", ep.port))
        .arg(format!("--mysql-user={}", ep.user))
        .arg("--mysql-db=bench")
        .arg(format!("--tables={tables}"))
        .arg(format!("--table-size={}", p.sysbench_table_size));
    if let Some(pw) = &ep.password {
        cmd.arg(format!("--mysql-password={pw}"));
    }
    cmd
}

pub(super) fn sysbench(
    w: SqlWorkload,
    ep: &Endpoint,
    p: &Params,
    progress: &dyn Fn(&str),
) -> Result<Vec<Run>> {
    let script = w.sysbench_script().expect("a sysbench workload");
    {
        let mut c = client::connect(ep, None)?;
        client::exec_all(&mut c, &["DROP DATABASE IF EXISTS bench".into(), "CREATE DATABASE bench".into()])?;
    }
    let out = sysbench_base(script, ep, p, 1)
        .arg("prepare")
        .output()
        .map_err(|e| Error::new(format!("running sysbench (is it installed?): {e}")))?;
    if !out.status.success() {
        bail!(
            "sysbench {script} prepare failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut runs = Vec::new();
    for &threads in &p.sysbench_threads {
        progress(&format!("{threads} threads, {} s", p.sysbench_secs));
        let out = sysbench_base(script, ep, p, 1)
            .arg(format!("--threads={threads}"))
            .arg(format!("--time={}", p.sysbench_secs))
            .arg(format!("--report-interval={}", (p.interval_secs.round() as u64).max(1)))
            .arg("--percentile=99")
            .arg("--histogram=on")
            .arg("run")
            .output()
            .map_err(|e| Error::new(format!("running sysbench: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if !out.status.success() {
            bail!("sysbench {script} run failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        }
        runs.push(parse_sysbench(&text, threads)?);
    }
    Ok(runs)
}

/// Reads sysbench 1.0's report: its per-interval lines
/// (`[ 1s ] thds: 16 tps: 3071.86 qps: ... lat (ms,99%): 12.08 err/s: 0.00 ...`)
/// and its totals (`transactions: N (R per sec.)`, `ignored errors: N`,
/// `total time: Ss`, `99th percentile: L`, `max: L`), and with
/// `--histogram=on` its latency histogram (`value |***  count` lines, one
/// per bucket that has any), from which the run's p50 and p95 are read.
pub fn parse_sysbench(text: &str, threads: usize) -> Result<Run> {
    let num_after = |line: &str, key: &str| -> Option<f64> {
        let at = line.find(key)? + key.len();
        line[at..].split_whitespace().next()?.trim_end_matches(['s', ',']).parse().ok()
    };
    let mut run = Run { threads, ..Run::default() };
    let mut histogram: Vec<(f64, u64)> = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(bucket) = histogram_bucket(l) {
            histogram.push(bucket);
        } else if l.starts_with('[') {
            let (Some(end), Some(tps), Some(p99)) =
                (num_after(l, "["), num_after(l, "tps:"), num_after(l, "%):"))
            else {
                continue;
            };
            run.intervals.push(Interval { end_s: end, rate: tps, p99_ms: p99, ..Interval::default() });
        } else if let Some(rest) = l.strip_prefix("transactions:") {
            run.units = rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
        } else if let Some(rest) = l.strip_prefix("ignored errors:") {
            run.retries = rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
        } else if let Some(rest) = l.strip_prefix("total time:") {
            run.secs = rest.trim().trim_end_matches('s').parse().unwrap_or(0.0);
        } else if let Some(rest) = l.strip_prefix("99th percentile:") {
            run.p99_ms = rest.trim().parse().unwrap_or(0.0);
        } else if let Some(rest) = l.strip_prefix("max:") {
            run.max_ms = rest.trim().parse().unwrap_or(0.0);
        }
    }
    if run.secs <= 0.0 {
        bail!("could not read sysbench's report:\n{text}");
    }
    run.p50_ms = histogram_percentile(&histogram, 0.5);
    run.p95_ms = histogram_percentile(&histogram, 0.95);
    Ok(run)
}

/// One line of sysbench's latency histogram: `0.403 |****   12` as (ms, count).
fn histogram_bucket(l: &str) -> Option<(f64, u64)> {
    let (value, rest) = l.split_once('|')?;
    let value: f64 = value.trim().parse().ok()?;
    let count: u64 = rest.trim_start_matches(['*', ' ']).trim().parse().ok()?;
    Some((value, count))
}

/// The bucket value under which fraction `q` of the histogram's events
/// fall (buckets in the ascending order sysbench prints them).
fn histogram_percentile(buckets: &[(f64, u64)], q: f64) -> Option<f64> {
    debug_assert!(buckets.windows(2).all(|w| w[0].0 <= w[1].0), "buckets ascend");
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    buckets
        .iter()
        .find(|b| {
            seen += b.1;
            seen >= rank
        })
        .map(|b| b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysbench_report_is_read() {
        let text = "[ 1s ] thds: 16 tps: 3071.86 qps: 61457.01 (r/w/o: 43030.59/12282.48/6143.94) lat (ms,99%): 12.08 err/s: 0.00 reconn/s: 0.00\n\
[ 2s ] thds: 16 tps: 3100.00 qps: 62000.00 (r/w/o: 1/2/3) lat (ms,99%): 11.00 err/s: 0.00 reconn/s: 0.00\n\
SQL statistics:\n    transactions:                        6171   (3085.20 per sec.)\n    ignored errors:                      3      (0.00 per sec.)\n\
General statistics:\n    total time:                          2.0002s\n\
Latency (ms):\n         min:                                    0.50\n         avg:                                    5.10\n         max:                                   40.25\n         99th percentile:                       12.08\n";
        let run = parse_sysbench(text, 16).unwrap();
        assert_eq!(run.intervals.len(), 2);
        assert_eq!(run.intervals[1].end_s, 2.0);
        assert_eq!(run.intervals[0].rate, 3071.86);
        assert_eq!(run.intervals[0].p99_ms, 12.08);
        assert_eq!(run.units, 6171);
        assert_eq!(run.retries, 3);
        assert!((run.secs - 2.0002).abs() < 1e-9);
        assert_eq!(run.max_ms, 40.25);
        assert_eq!((run.p50_ms, run.p95_ms), (None, None));
        assert!(parse_sysbench("garbage", 1).is_err());
        // --histogram=on: 20 events at or under 1.01 ms, 70 at 2.00, 10 at 30.0.
        let with = format!(
            "{text}Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n\
             1.010 |****                                     20\n       2.000 |****************************************   70\n\
             30.000 |*****                                    10\n"
        );
        let run = parse_sysbench(&with, 16).unwrap();
        assert_eq!((run.p50_ms, run.p95_ms, run.p99_ms), (Some(2.0), Some(30.0), 12.08));
        assert_eq!(histogram_percentile(&[(1.0, 20), (2.0, 70), (30.0, 10)], 0.2), Some(1.0));
        assert_eq!(histogram_percentile(&[(1.0, 20), (2.0, 70), (30.0, 10)], 0.9), Some(2.0));
        assert_eq!(histogram_percentile(&[], 0.5), None);
    }

    #[test]
    fn intervals_bucket_events_and_take_percentiles() {
        // 100 transactions in the first second (1..100 ms), 10 in the third.
        let mut ev: Vec<(u64, u32)> = (1..=100).map(|i| (i * 1000, i as u32 * 1000)).collect();
        ev.extend((0..10).map(|i| (2_050_000 + i * 50_000, 5000)));
        let run = summarize(ev, 1, 1.0, 4, 0);
        assert_eq!(run.units, 110);
        assert_eq!(run.intervals.len(), 3);
        assert_eq!(run.intervals[0].rate, 100.0);
        assert_eq!(run.intervals[0].p50_ms, Some(50.0));
        assert_eq!(run.intervals[0].max_ms, Some(100.0));
        // The second second saw nothing end: a stall, rate 0, no latencies.
        assert_eq!(run.intervals[1].rate, 0.0);
        assert_eq!(run.intervals[1].p50_ms, None);
        // The last interval ends with the last event, half way into the
        // third second: its 10 transactions are divided by 0.5 s, not 1 s.
        assert_eq!(run.intervals[2].end_s, 2.5);
        assert!((run.intervals[2].rate - 20.0).abs() < 1e-9, "{}", run.intervals[2].rate);
        assert_eq!(run.secs, 2.5);
        assert_eq!(span_rate(&run.intervals[1..], 1.0), 10.0 / 1.5);
        // A run of exactly two full seconds has two whole intervals.
        let ev: Vec<(u64, u32)> = vec![(500_000, 1), (1_000_000, 1), (2_000_000, 1)];
        let run = summarize(ev, 1000, 1.0, 1, 0);
        assert_eq!(run.intervals.len(), 2);
        assert_eq!(run.intervals[0].rate, 2000.0);
        assert_eq!(run.intervals[1].rate, 1000.0);
        assert_eq!(run.rate(), 1500.0);
    }

    #[test]
    fn pareto_stays_in_range_and_skews_low() {
        let mut rng = SmallRng::seed_from_u64(1);
        let draws: Vec<u64> = (0..10_000).map(|_| pareto(&mut rng, 10_000)).collect();
        assert!(draws.iter().all(|&k| k < 10_000));
        let low = draws.iter().filter(|&&k| k < 2000).count();
        assert!(low > 7000, "{low} of 10000 draws below 2000");
    }
}
