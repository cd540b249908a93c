//! `fractaldb bench-txn`: what transactions cost and how they scale, in
//! three measurements (`all` runs them in this order):
//!
//! - `scaling`: sysbench-like small read-write transactions (repeatable
//!   read; 4 point gets and 2 puts of random existing rows, then commit)
//!   from 1, 2, 8, 32 and 64 threads: commits/s, aborts by kind, and each
//!   thread count's share of the best (the goal: 64 threads at least 0.9x
//!   the peak);
//! - `counters`: hot-key counters, each transaction one upsert of one of 4
//!   keys, explicit transactions and autocommit, from 1 to 64 threads; at
//!   the end the counters must add up to the commits exactly;
//! - `cost`: random single-row puts as autocommit writes, as a repeatable
//!   read transaction per row, and in transactions of 100 rows (repeatable
//!   read and read committed), from 1 and 8 threads: rows/s against
//!   autocommit.
//!
//! Every measurement point runs in this process on a fresh environment
//! holding one table preloaded with `--rows` rows; `scaling.csv`,
//! `counters.csv`, `cost.csv` and `summary.md` go to `--out`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, ValueEnum};
use fractaldb::{Dictionary, Env, Isolation, LockStats, Txn, UpdateFn, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::durability::{resolve_folders, write_file, RunFacts};
use super::engines::{fractal, EngineConfig};
use super::report::{group_digits, human_bytes};
use super::workloads::{RowGen, VALUE_BYTES};
use super::{parse_count, parse_seconds, parse_size, say, sys, wipe};
use crate::bail;
use crate::error::{Context, Error, Result};

const DEFAULT_SECONDS: f64 = 10.0;
const SMOKE_SECONDS: f64 = 0.3;
const DEFAULT_ROWS: u64 = 100_000;
const SMOKE_ROWS: u64 = 2_000;
const SCALING_THREADS: [u64; 5] = [1, 2, 8, 32, 64];
const COUNTER_THREADS: [u64; 4] = [1, 8, 32, 64];
const COST_THREADS: [u64; 2] = [1, 8];
/// `--smoke`: the thread counts of `scaling` and `counters`.
const SMOKE_THREADS: [u64; 3] = [1, 2, 8];
const MAX_THREADS: u64 = 1024;
/// Rows per WriteBatch of the preload.
const PRELOAD_BATCH_ROWS: u64 = 1000;
/// Point gets and puts of one `scaling` transaction.
const SCALING_GETS: usize = 4;
const SCALING_PUTS: usize = 2;
/// The hot keys of `counters`.
const HOT_KEYS: usize = 4;
/// Rows of one batched `cost` transaction.
const COST_BATCH_ROWS: usize = 100;
/// The id of the counter update function.
const ADD_FN: u8 = 1;
/// The `scaling` goal: the largest thread count keeps this share of the peak.
const SCALING_GOAL: f64 = 0.9;
/// Generator streams (any constants apart from the other benchmarks').
const PRELOAD_STREAM: u64 = 21;
const PUT_STREAM: u64 = 22;

/// Which measurement to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Small read-write transactions from 1 to 64 threads.
    Scaling,
    /// Hot-key upsert counters, explicit transactions and autocommit; the sum is checked.
    Counters,
    /// Autocommit puts against one transaction per row and 100-row transactions.
    Cost,
    /// scaling, counters and cost, in that order.
    All,
}

/// Options of `fractaldb bench-txn`.
#[derive(Args, Debug)]
pub struct TxnArgs {
    /// The measurement.
    #[arg(value_enum, value_name = "WHICH")]
    pub which: Which,

    /// Seconds per measurement point [default: 10; 0.3 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub seconds: Option<f64>,

    /// Rows preloaded into the table of every point [default: 100000; 2000 with --smoke].
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub rows: Option<u64>,

    /// Thread counts of `scaling`, comma-separated [default: 1,2,8,32,64; 1,2,8 with --smoke].
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub threads: Vec<u64>,

    /// Cache size of the engine, e.g. 64MiB, 1GiB.
    #[arg(long, value_parser = parse_size, default_value = "256MiB", value_name = "SIZE")]
    pub cache: u64,

    /// Every commit durable when it returns (concurrent commits share fsyncs).
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub commit_sync: bool,

    /// Bypass the OS page cache for data files where the file system allows it.
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub direct_io: bool,

    /// Seed of every generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Data folder; its `txn` subfolder is wiped first.
    #[arg(long, default_value = "data/bench-txn", value_name = "DATA_DIR")]
    pub dir: PathBuf,

    /// Where scaling.csv, counters.csv, cost.csv and summary.md go.
    #[arg(long, default_value = "bench-out/txn", value_name = "OUT_DIR")]
    pub out: PathBuf,

    /// Tiny sizes and durations: 0.3 s per point, 2000 rows, 1, 2 and 8 threads.
    #[arg(long)]
    pub smoke: bool,
}

/// The run the user asked for, with defaults filled in and checked.
#[derive(Clone, Debug)]
struct Plan {
    scaling: bool,
    counters: bool,
    cost: bool,
    duration: Duration,
    rows: u64,
    scaling_threads: Vec<u64>,
    counter_threads: Vec<u64>,
    cost_threads: Vec<u64>,
    cache_size_bytes: u64,
    commit_sync: bool,
    direct_io: bool,
    seed: u64,
}

impl Plan {
    fn resolve(args: &TxnArgs) -> Result<Plan> {
        let seconds = args.seconds.unwrap_or(if args.smoke { SMOKE_SECONDS } else { DEFAULT_SECONDS });
        let rows = args.rows.unwrap_or(if args.smoke { SMOKE_ROWS } else { DEFAULT_ROWS });
        if rows == 0 {
            bail!("--rows must be at least 1");
        }
        if args.cache < 1 << 20 {
            bail!("--cache must be at least 1MiB");
        }
        let listed = |default: &[u64]| -> Vec<u64> {
            let mut t = if args.smoke { SMOKE_THREADS.to_vec() } else { default.to_vec() };
            t.sort_unstable();
            t.dedup();
            t
        };
        let mut scaling_threads =
            if args.threads.is_empty() { listed(&SCALING_THREADS) } else { args.threads.clone() };
        scaling_threads.sort_unstable();
        scaling_threads.dedup();
        if let Some(bad) = scaling_threads.iter().find(|&&n| n == 0 || n > MAX_THREADS) {
            bail!("--threads {bad}: each thread count must be between 1 and {MAX_THREADS}");
        }
        let which = args.which;
        Ok(Plan {
            scaling: matches!(which, Which::Scaling | Which::All),
            counters: matches!(which, Which::Counters | Which::All),
            cost: matches!(which, Which::Cost | Which::All),
            duration: Duration::from_secs_f64(seconds),
            rows,
            scaling_threads,
            counter_threads: listed(&COUNTER_THREADS),
            cost_threads: COST_THREADS.to_vec(),
            cache_size_bytes: args.cache,
            commit_sync: args.commit_sync,
            direct_io: args.direct_io,
            seed: args.seed,
        })
    }

    fn seconds(&self) -> f64 {
        self.duration.as_secs_f64()
    }
}

// ---------------------------------------------------------------------------
// The run.

/// `fractaldb bench-txn`.
pub fn run(args: TxnArgs) -> Result<()> {
    let plan = Plan::resolve(&args)?;
    let (data, out) = resolve_folders(&args.dir, &args.out, "txn")?;
    wipe(&data)?;
    let mut facts = RunFacts::start(&data);
    say(&format!(
        "fractaldb bench-txn {}: {} s per point, {} rows preloaded, cache {}, commit_sync {}, direct I/O {}, \
         data in {}; {} cores, load average {}",
        args.which.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string()),
        plan.seconds(),
        group_digits(plan.rows),
        human_bytes(plan.cache_size_bytes as f64),
        plan.commit_sync,
        plan.direct_io,
        data.display(),
        facts.machine.cores,
        facts.load_average_start,
    ));
    let bench = Bench { plan: plan.clone(), data: data.clone() };

    let mut scaling = Vec::new();
    if plan.scaling {
        say("\n== scaling: repeatable read, 4 point gets + 2 puts of random rows, commit");
        for &n in &plan.scaling_threads {
            scaling.push(bench.point(&format!("scaling x{n}"), n, &|s| bench.scaling(s)));
        }
    }
    let mut counters = Vec::new();
    if plan.counters {
        say(&format!("\n== counters: one upsert (+1) of one of {HOT_KEYS} hot keys per transaction"));
        for mode in [CounterMode::Txn, CounterMode::Autocommit] {
            for &n in &plan.counter_threads {
                let label = format!("counters {} x{n}", mode.name());
                counters
                    .push(CounterPoint { mode, point: bench.point(&label, n, &|s| bench.counters(s, mode)) });
            }
        }
    }
    let mut cost = Vec::new();
    if plan.cost {
        say("\n== cost: random puts of 100-byte values into the table");
        for &n in &plan.cost_threads {
            for variant in CostVariant::ALL {
                let label = format!("cost {} x{n}", variant.name());
                cost.push(CostPoint { variant, point: bench.point(&label, n, &|s| bench.cost(s, variant)) });
            }
        }
    }
    facts.finish();

    let mut written = Vec::new();
    if plan.scaling {
        written.push(write_file(&out, "scaling.csv", &scaling_csv(&scaling))?);
    }
    if plan.counters {
        written.push(write_file(&out, "counters.csv", &counters_csv(&counters))?);
    }
    if plan.cost {
        written.push(write_file(&out, "cost.csv", &cost_csv(&cost))?);
    }
    let md = summary_md(&facts, &plan, &scaling, &counters, &cost);
    written.push(write_file(&out, "summary.md", &md)?);
    say("");
    say(&md);
    say(&format!(
        "Wrote {} in {}",
        written
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy())
            .collect::<Vec<_>>()
            .join(", "),
        out.display()
    ));
    let _ = wipe(&data);

    let mut failed: Vec<String> = Vec::new();
    let points = scaling.iter().chain(counters.iter().map(|c| &c.point)).chain(cost.iter().map(|c| &c.point));
    for p in points {
        if let Some(f) = &p.failure {
            failed.push(format!("{}: {f}", p.label));
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} point(s) failed ({}); the results are in {}",
            failed.len(),
            failed.join("; "),
            out.display()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// One measurement point.

/// Why a transaction's attempt failed in a way the benchmark retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retry {
    WriteConflict,
    Deadlock,
    LockTimeout,
}

/// How an attempt failed: retry it, or stop the run.
enum Fail {
    Retry(Retry),
    Fatal(Error),
}

impl From<fractaldb::Error> for Fail {
    fn from(e: fractaldb::Error) -> Self {
        match e {
            fractaldb::Error::WriteConflict { .. } => Fail::Retry(Retry::WriteConflict),
            fractaldb::Error::Deadlock { .. } => Fail::Retry(Retry::Deadlock),
            fractaldb::Error::LockTimeout { .. } => Fail::Retry(Retry::LockTimeout),
            other => Fail::Fatal(other.into()),
        }
    }
}

/// What the threads of one point did, added up.
#[derive(Debug, Default)]
struct Tally {
    /// Transactions (or autocommit writes) that committed.
    commits: u64,
    /// Rows written by the committed ones.
    rows: u64,
    write_conflicts: u64,
    deadlocks: u64,
    lock_timeouts: u64,
    /// Each committed transaction's time from its first begin to its commit
    /// (retries included), in microseconds; sorted after the merge.
    latencies_us: Vec<u32>,
}

impl Tally {
    fn committed(&mut self, rows: u64, started: Instant) {
        self.commits += 1;
        self.rows += rows;
        self.latencies_us.push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX));
    }

    fn aborted(&mut self, why: Retry) {
        match why {
            Retry::WriteConflict => self.write_conflicts += 1,
            Retry::Deadlock => self.deadlocks += 1,
            Retry::LockTimeout => self.lock_timeouts += 1,
        }
    }

    fn aborts(&self) -> u64 {
        self.write_conflicts + self.deadlocks + self.lock_timeouts
    }

    fn merge(&mut self, other: Tally) {
        self.commits += other.commits;
        self.rows += other.rows;
        self.write_conflicts += other.write_conflicts;
        self.deadlocks += other.deadlocks;
        self.lock_timeouts += other.lock_timeouts;
        self.latencies_us.extend(other.latencies_us);
    }

    fn quantile_us(&self, q: f64) -> u32 {
        let l = &self.latencies_us;
        if l.is_empty() {
            return 0;
        }
        let rank = (q * l.len() as f64).ceil() as usize;
        l[rank.clamp(1, l.len()) - 1]
    }
}

/// The figures of one point.
#[derive(Debug, Default)]
struct Point {
    label: String,
    threads: u64,
    elapsed: Duration,
    tally: Tally,
    /// `env.stats().locks` deltas over the run.
    lock_waits: u64,
    lock_escalations: u64,
    cpu_us: u64,
    /// `counters`: the counters' sum read back at the end.
    counter_sum: Option<u64>,
    failure: Option<String>,
}

impl Point {
    fn per_s(&self, n: u64) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            n as f64 / s
        } else {
            0.0
        }
    }

    fn commits_per_s(&self) -> f64 {
        self.per_s(self.tally.commits)
    }

    fn rows_per_s(&self) -> f64 {
        self.per_s(self.tally.rows)
    }

    fn ok(&self) -> bool {
        self.failure.is_none()
    }
}

/// What a point's workload gets: the environment, its preloaded table, and
/// the point's parameters.
struct Setup<'a> {
    env: &'a Env,
    table: &'a Dictionary,
    threads: usize,
    duration: Duration,
    seed: u64,
    gen: RowGen,
    rows: u64,
}

/// A point's workload: runs the threads, returns their tally and (for
/// `counters`) the checked sum.
type Workload<'a> = dyn Fn(&Setup<'_>) -> Result<(Tally, Duration, Option<u64>)> + 'a;

struct Bench {
    plan: Plan,
    data: PathBuf,
}

/// Old value (absent: 0) plus the argument, both u64 little-endian.
fn add_fn() -> UpdateFn {
    fn le(bytes: &[u8]) -> u64 {
        bytes.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes)
    }
    Arc::new(|_key: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        Some(old.map_or(0, le).wrapping_add(le(arg)).to_le_bytes().to_vec())
    })
}

impl Bench {
    /// Runs one point on a fresh environment and prints its line; a failure
    /// is recorded in the point, not returned.
    fn point(&self, label: &str, threads: u64, workload: &Workload<'_>) -> Point {
        let mut point = Point { label: label.to_string(), threads, ..Point::default() };
        let dir = self.data.join(label.replace(' ', "-"));
        if let Err(e) = self.measure(&dir, &mut point, workload) {
            point.failure = Some(e.to_string());
        }
        let _ = wipe(&dir);
        let p = &point;
        match &p.failure {
            Some(f) => say(&format!("[{label}] FAILED: {f}")),
            None => say(&format!(
                "[{label}] {} commits in {:.1} s = {} commits/s, {} rows/s; aborts: {} write conflicts, {} \
                 deadlocks, {} lock timeouts; {} lock waits; latency p50 {} us, p99 {} us{}",
                group_digits(p.tally.commits),
                p.elapsed.as_secs_f64(),
                group_digits(p.commits_per_s().round() as u64),
                group_digits(p.rows_per_s().round() as u64),
                p.tally.write_conflicts,
                p.tally.deadlocks,
                p.tally.lock_timeouts,
                group_digits(p.lock_waits),
                group_digits(u64::from(p.tally.quantile_us(0.5))),
                group_digits(u64::from(p.tally.quantile_us(0.99))),
                p.counter_sum.map_or(String::new(), |s| format!("; counters add up to {}", group_digits(s))),
            )),
        }
        point
    }

    fn measure(&self, dir: &Path, point: &mut Point, workload: &Workload<'_>) -> Result<()> {
        let plan = &self.plan;
        wipe(dir)?;
        std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
        let config = EngineConfig { cache_size_bytes: plan.cache_size_bytes, direct_io: plan.direct_io };
        let mut options = fractal::env_options(&config)?;
        options.commit_sync = plan.commit_sync;
        options.update_fns = vec![(ADD_FN, add_fn())];
        let env = Env::open(dir, options).context(|| format!("opening fractaldb in {}", dir.display()))?;
        let table = env.create_dictionary("t", fractal::dict_options())?;
        let gen = RowGen::new(plan.seed);
        preload(&table, &gen, plan.rows)?;
        let setup = Setup {
            env: &env,
            table: &table,
            threads: usize::try_from(point.threads).unwrap_or(usize::MAX),
            duration: plan.duration,
            seed: plan.seed ^ point.threads.wrapping_mul(0x2545_F491_4F6C_DD1D),
            gen,
            rows: plan.rows,
        };
        let locks_before = env.stats().locks;
        let before = sys::ProcessCounters::now()?;
        let outcome = workload(&setup);
        let counted = sys::ProcessCounters::now()?.since(&before);
        let locks_after: LockStats = env.stats().locks;
        point.cpu_us = counted.cpu_us;
        point.lock_waits = locks_after.waits.saturating_sub(locks_before.waits);
        point.lock_escalations = locks_after.escalations.saturating_sub(locks_before.escalations);
        let (tally, elapsed, counter_sum) = outcome?;
        point.tally = tally;
        point.elapsed = elapsed;
        point.counter_sum = counter_sum;
        drop(table);
        env.close()?;
        if let Some(sum) = counter_sum {
            if sum != point.tally.commits {
                bail!(
                    "COUNTER CHECK FAILED: the {HOT_KEYS} counters add up to {sum}, but {} increments \
                     committed (a difference of {})",
                    point.tally.commits,
                    sum as i128 - point.tally.commits as i128
                );
            }
        }
        Ok(())
    }

    /// `scaling`: begin (repeatable read), 4 gets and 2 puts of random
    /// preloaded rows, commit.
    fn scaling(&self, s: &Setup<'_>) -> Result<(Tally, Duration, Option<u64>)> {
        let (tally, elapsed) = run_threads(s.threads, s.duration, &|t, deadline, stop| {
            let mut rng = thread_rng(s.seed, t);
            let mut tally = Tally::default();
            let mut value = [0u8; VALUE_BYTES];
            let mut i = (t as u64) << 40;
            while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                let gets: [[u8; 8]; SCALING_GETS] =
                    std::array::from_fn(|_| s.gen.insert_key(rng.gen_range(0..s.rows)));
                let puts: [[u8; 8]; SCALING_PUTS] =
                    std::array::from_fn(|_| s.gen.insert_key(rng.gen_range(0..s.rows)));
                s.gen.value(PUT_STREAM, i, &mut value);
                i += 1;
                let started = Instant::now();
                let committed = until_committed(&mut tally, deadline, &mut || {
                    attempt(s.env, Isolation::RepeatableRead, &mut |txn| {
                        for key in &gets {
                            if txn.get(s.table, key)?.is_none() {
                                return Err(Fail::Fatal(Error::new(format!(
                                    "a preloaded row is missing: key {}",
                                    hex(key)
                                ))));
                            }
                        }
                        for key in &puts {
                            txn.put(s.table, key, &value)?;
                        }
                        Ok(())
                    })
                })?;
                if committed {
                    tally.committed(SCALING_PUTS as u64, started);
                }
            }
            Ok(tally)
        })?;
        Ok((tally, elapsed, None))
    }

    /// `counters`: +1 on one of the hot keys per transaction (or autocommit
    /// write); then the counters are read back and added up.
    fn counters(&self, s: &Setup<'_>, mode: CounterMode) -> Result<(Tally, Duration, Option<u64>)> {
        let keys: Vec<Vec<u8>> = (0..HOT_KEYS).map(|k| format!("hot-counter-{k}").into_bytes()).collect();
        let one = 1u64.to_le_bytes();
        let (tally, elapsed) = run_threads(s.threads, s.duration, &|t, deadline, stop| {
            let mut rng = thread_rng(s.seed, t);
            let mut tally = Tally::default();
            while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                let key = &keys[rng.gen_range(0..HOT_KEYS)];
                let started = Instant::now();
                let committed = until_committed(&mut tally, deadline, &mut || match mode {
                    CounterMode::Txn => attempt(s.env, Isolation::RepeatableRead, &mut |txn| {
                        txn.update(s.table, key, ADD_FN, &one)?;
                        Ok(())
                    }),
                    CounterMode::Autocommit => autocommit(|| s.table.update(key, ADD_FN, &one)),
                })?;
                if committed {
                    tally.committed(1, started);
                }
            }
            Ok(tally)
        })?;
        let mut sum = 0u64;
        for key in &keys {
            let value = s.table.get(key)?;
            let n = match value.as_deref() {
                None => 0,
                Some(v) => u64::from_le_bytes(v.try_into().map_err(|_| {
                    Error::new(format!(
                        "counter {:?} holds {} bytes, not 8",
                        String::from_utf8_lossy(key),
                        v.len()
                    ))
                })?),
            };
            sum += n;
        }
        Ok((tally, elapsed, Some(sum)))
    }

    /// `cost`: random puts of 100-byte values (random 8-byte keys, so
    /// writers do not collide), committed as `variant` says.
    fn cost(&self, s: &Setup<'_>, variant: CostVariant) -> Result<(Tally, Duration, Option<u64>)> {
        let (tally, elapsed) = run_threads(s.threads, s.duration, &|t, deadline, stop| {
            let mut rng = thread_rng(s.seed, t);
            let mut tally = Tally::default();
            let mut i = (t as u64) << 40;
            let mut keys: Vec<[u8; 8]> = Vec::with_capacity(COST_BATCH_ROWS);
            let mut values: Vec<[u8; VALUE_BYTES]> = vec![[0; VALUE_BYTES]; variant.rows_per_txn()];
            while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                keys.clear();
                for value in values.iter_mut() {
                    keys.push(rng.gen::<u64>().to_be_bytes());
                    s.gen.value(PUT_STREAM, i, value);
                    i += 1;
                }
                let started = Instant::now();
                let committed = until_committed(&mut tally, deadline, &mut || match variant.isolation() {
                    None => autocommit(|| s.table.put(&keys[0], &values[0])),
                    Some(isolation) => attempt(s.env, isolation, &mut |txn| {
                        for (key, value) in keys.iter().zip(&values) {
                            txn.put(s.table, key, value)?;
                        }
                        Ok(())
                    }),
                })?;
                if committed {
                    tally.committed(keys.len() as u64, started);
                }
            }
            Ok(tally)
        })?;
        Ok((tally, elapsed, None))
    }
}

/// Writes rows `0..rows` of the generator in WriteBatches of 1000 rows.
fn preload(table: &Dictionary, gen: &RowGen, rows: u64) -> Result<()> {
    let mut batch = WriteBatch::new();
    let mut value = [0u8; VALUE_BYTES];
    let mut start = 0;
    while start < rows {
        let end = (start + PRELOAD_BATCH_ROWS).min(rows);
        batch.clear();
        for i in start..end {
            gen.value(PRELOAD_STREAM, i, &mut value);
            batch.put(&gen.insert_key(i), &value);
        }
        table.write(&batch).context(|| format!("preloading rows {start}..{end}"))?;
        start = end;
    }
    Ok(())
}

/// One attempt of a transaction: begin at `isolation`, run `body`, commit.
/// `Some(why)` if it failed in a way to retry (it was aborted).
fn attempt(
    env: &Env,
    isolation: Isolation,
    body: &mut dyn FnMut(&Txn) -> std::result::Result<(), Fail>,
) -> Result<Option<Retry>> {
    let txn = env.begin(isolation)?;
    match body(&txn) {
        Ok(()) => match txn.commit().map_err(Fail::from) {
            Ok(()) => Ok(None),
            Err(Fail::Retry(why)) => Ok(Some(why)),
            Err(Fail::Fatal(e)) => Err(e),
        },
        Err(Fail::Retry(why)) => {
            txn.abort().context(|| format!("aborting after a {why:?}"))?;
            Ok(Some(why))
        }
        Err(Fail::Fatal(e)) => {
            let _ = txn.abort();
            Err(e)
        }
    }
}

/// One autocommit write; `Some(why)` if it failed in a way to retry.
fn autocommit(write: impl FnOnce() -> fractaldb::Result<()>) -> Result<Option<Retry>> {
    match write().map_err(Fail::from) {
        Ok(()) => Ok(None),
        Err(Fail::Retry(why)) => Ok(Some(why)),
        Err(Fail::Fatal(e)) => Err(e),
    }
}

/// Repeats `attempt` until it commits (true) or the deadline passes while
/// retrying (false), counting the aborts.
fn until_committed(
    tally: &mut Tally,
    deadline: Instant,
    attempt: &mut dyn FnMut() -> Result<Option<Retry>>,
) -> Result<bool> {
    loop {
        match attempt()? {
            None => return Ok(true),
            Some(why) => {
                tally.aborted(why);
                if Instant::now() >= deadline {
                    return Ok(false);
                }
            }
        }
    }
}

/// A per-thread generator of random choices.
fn thread_rng(seed: u64, thread: usize) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A thread's work: `(thread index, deadline, stop flag)` to its tally.
type ThreadWork<'a> = dyn Fn(usize, Instant, &AtomicBool) -> Result<Tally> + Sync + 'a;

/// Runs `threads` threads of `work`, started together, until the deadline
/// `duration` after the start; one failing stops the others. Returns the
/// merged tally (latencies sorted) and the wall time to the last thread's end.
fn run_threads(threads: usize, duration: Duration, work: &ThreadWork<'_>) -> Result<(Tally, Duration)> {
    let start_line = Barrier::new(threads + 1);
    let deadline: OnceLock<Instant> = OnceLock::new();
    let stop = AtomicBool::new(false);
    let (results, start) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (start_line, deadline, stop) = (&start_line, &deadline, &stop);
                s.spawn(move || -> Result<Tally> {
                    start_line.wait();
                    let deadline = *deadline.get().expect("set before the start");
                    let result = work(t, deadline, stop);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        let start = Instant::now();
        let _ = deadline.set(start + duration);
        start_line.wait();
        let results: Vec<Result<Tally>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::new("a worker thread panicked"))))
            .collect();
        (results, start)
    });
    let elapsed = start.elapsed();
    let mut tally = Tally::default();
    for r in results {
        tally.merge(r?);
    }
    tally.latencies_us.sort_unstable();
    Ok((tally, elapsed))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Measurements' variants.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CounterMode {
    /// `begin; t.update; commit`.
    Txn,
    /// `d.update`.
    Autocommit,
}

impl CounterMode {
    fn name(self) -> &'static str {
        match self {
            CounterMode::Txn => "txn",
            CounterMode::Autocommit => "autocommit",
        }
    }
}

struct CounterPoint {
    mode: CounterMode,
    point: Point,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CostVariant {
    /// (a) `d.put`, one row per call.
    Autocommit,
    /// (b) one repeatable read transaction per row.
    RrTxnPerRow,
    /// (c) repeatable read transactions of 100 rows.
    RrTxn100,
    /// (d) read committed transactions of 100 rows.
    RcTxn100,
}

impl CostVariant {
    const ALL: [CostVariant; 4] =
        [CostVariant::Autocommit, CostVariant::RrTxnPerRow, CostVariant::RrTxn100, CostVariant::RcTxn100];

    fn name(self) -> &'static str {
        match self {
            CostVariant::Autocommit => "autocommit",
            CostVariant::RrTxnPerRow => "rr-txn-1-row",
            CostVariant::RrTxn100 => "rr-txn-100-rows",
            CostVariant::RcTxn100 => "rc-txn-100-rows",
        }
    }

    /// The isolation of the explicit transactions; `None`: autocommit.
    fn isolation(self) -> Option<Isolation> {
        match self {
            CostVariant::Autocommit => None,
            CostVariant::RrTxnPerRow | CostVariant::RrTxn100 => Some(Isolation::RepeatableRead),
            CostVariant::RcTxn100 => Some(Isolation::ReadCommitted),
        }
    }

    fn isolation_name(self) -> &'static str {
        match self.isolation() {
            None => "autocommit",
            Some(Isolation::RepeatableRead) => "repeatable-read",
            Some(Isolation::ReadCommitted) => "read-committed",
            Some(_) => "other",
        }
    }

    fn rows_per_txn(self) -> usize {
        match self {
            CostVariant::Autocommit | CostVariant::RrTxnPerRow => 1,
            CostVariant::RrTxn100 | CostVariant::RcTxn100 => COST_BATCH_ROWS,
        }
    }
}

struct CostPoint {
    variant: CostVariant,
    point: Point,
}

// ---------------------------------------------------------------------------
// Output.

/// A failure text fit for one CSV cell.
fn csv_text(text: Option<&str>) -> String {
    text.unwrap_or("").replace([',', '\n', '\r'], ";")
}

/// A ratio with two decimals, or empty if there is none.
fn ratio_cell(r: Option<f64>) -> String {
    r.map_or(String::new(), |r| format!("{r:.3}"))
}

fn ratio_md(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{r:.2}"))
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// The best commits/s of the points that did not fail.
fn best_commits_per_s(points: &[Point]) -> f64 {
    points.iter().filter(|p| p.ok()).map(Point::commits_per_s).fold(0.0, f64::max)
}

const SCALING_HEADER: &str = "threads,seconds,commits,commits_per_s,ratio_to_best,aborts_write_conflict,\
    aborts_deadlock,aborts_lock_timeout,lock_waits,lock_escalations,p50_us,p99_us,max_us,cpu_s,failure";

fn scaling_csv(points: &[Point]) -> String {
    let best = best_commits_per_s(points);
    let mut out = format!("{SCALING_HEADER}\n");
    for p in points {
        let t = &p.tally;
        let _ = writeln!(
            out,
            "{},{:.3},{},{:.1},{},{},{},{},{},{},{},{},{},{:.3},{}",
            p.threads,
            p.elapsed.as_secs_f64(),
            t.commits,
            p.commits_per_s(),
            ratio_cell(p.ok().then(|| ratio(p.commits_per_s(), best)).flatten()),
            t.write_conflicts,
            t.deadlocks,
            t.lock_timeouts,
            p.lock_waits,
            p.lock_escalations,
            t.quantile_us(0.5),
            t.quantile_us(0.99),
            t.latencies_us.last().copied().unwrap_or(0),
            p.cpu_us as f64 / 1e6,
            csv_text(p.failure.as_deref()),
        );
    }
    out
}

const COUNTERS_HEADER: &str = "mode,threads,seconds,commits,ops_per_s,aborts_write_conflict,aborts_deadlock,\
    aborts_lock_timeout,lock_waits,p50_us,p99_us,max_us,cpu_s,counter_sum,check,failure";

fn counters_csv(points: &[CounterPoint]) -> String {
    let mut out = format!("{COUNTERS_HEADER}\n");
    for c in points {
        let (p, t) = (&c.point, &c.point.tally);
        let _ = writeln!(
            out,
            "{},{},{:.3},{},{:.1},{},{},{},{},{},{},{},{:.3},{},{},{}",
            c.mode.name(),
            p.threads,
            p.elapsed.as_secs_f64(),
            t.commits,
            p.commits_per_s(),
            t.write_conflicts,
            t.deadlocks,
            t.lock_timeouts,
            p.lock_waits,
            t.quantile_us(0.5),
            t.quantile_us(0.99),
            t.latencies_us.last().copied().unwrap_or(0),
            p.cpu_us as f64 / 1e6,
            p.counter_sum.map_or(String::new(), |s| s.to_string()),
            counter_check(p),
            csv_text(p.failure.as_deref()),
        );
    }
    out
}

/// `ok` if the counters added up to the commits, `MISMATCH` if not, `-` if
/// the point failed before the check.
fn counter_check(p: &Point) -> &'static str {
    match p.counter_sum {
        Some(sum) if sum == p.tally.commits => "ok",
        Some(_) => "MISMATCH",
        None => "-",
    }
}

const COST_HEADER: &str =
    "variant,isolation,rows_per_txn,threads,seconds,rows,rows_per_s,ratio_to_autocommit,\
    txns,txns_per_s,aborts,lock_waits,p50_us,p99_us,cpu_s,failure";

/// The autocommit rows/s at `threads`, if that point ran and did not fail.
fn autocommit_rate(points: &[CostPoint], threads: u64) -> Option<f64> {
    points
        .iter()
        .find(|c| c.variant == CostVariant::Autocommit && c.point.threads == threads && c.point.ok())
        .map(|c| c.point.rows_per_s())
}

fn cost_csv(points: &[CostPoint]) -> String {
    let mut out = format!("{COST_HEADER}\n");
    for c in points {
        let (p, t) = (&c.point, &c.point.tally);
        let r = autocommit_rate(points, p.threads).and_then(|a| ratio(p.rows_per_s(), a)).filter(|_| p.ok());
        let _ = writeln!(
            out,
            "{},{},{},{},{:.3},{},{:.1},{},{},{:.1},{},{},{},{},{:.3},{}",
            c.variant.name(),
            c.variant.isolation_name(),
            c.variant.rows_per_txn(),
            p.threads,
            p.elapsed.as_secs_f64(),
            t.rows,
            p.rows_per_s(),
            ratio_cell(r),
            t.commits,
            p.commits_per_s(),
            t.aborts(),
            p.lock_waits,
            t.quantile_us(0.5),
            t.quantile_us(0.99),
            p.cpu_us as f64 / 1e6,
            csv_text(p.failure.as_deref()),
        );
    }
    out
}

fn rate(x: f64) -> String {
    group_digits(x.round() as u64)
}

fn failed_cell(p: &Point) -> String {
    format!("FAILED: {}", p.failure.as_deref().unwrap_or("").replace('|', "/"))
}

fn summary_md(
    facts: &RunFacts,
    plan: &Plan,
    scaling: &[Point],
    counters: &[CounterPoint],
    cost: &[CostPoint],
) -> String {
    let params = [
        ("seconds per point", format!("{}", plan.seconds())),
        ("rows preloaded per point", group_digits(plan.rows)),
        ("cache", human_bytes(plan.cache_size_bytes as f64)),
        ("commit_sync", plan.commit_sync.to_string()),
        ("direct I/O", plan.direct_io.to_string()),
        ("seed", plan.seed.to_string()),
        (
            "engine",
            format!(
                "fractaldb {}, defaults otherwise (lock timeout {} s)",
                env!("CARGO_PKG_VERSION"),
                fractaldb::EnvOptions::default().lock_timeout.as_secs_f64()
            ),
        ),
    ];
    let mut out = facts.markdown_head("fractaldb bench-txn", &params);

    if !scaling.is_empty() {
        scaling_md(&mut out, scaling);
    }
    if !counters.is_empty() {
        counters_md(&mut out, counters);
    }
    if !cost.is_empty() {
        cost_md(&mut out, cost);
    }
    out
}

fn scaling_md(out: &mut String, points: &[Point]) {
    out.push_str(
        "\n## Scaling\n\nRepeatable read; each transaction 4 point gets and 2 puts (100-byte values) of random \
         preloaded rows, then commit; a transaction aborted by a write conflict, deadlock or lock timeout is \
         retried with the same keys.\n\n| threads | commits/s | vs best | write conflicts | deadlocks | lock \
         timeouts | lock waits | p50 µs | p99 µs | CPU s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let best = best_commits_per_s(points);
    for p in points {
        if !p.ok() {
            let _ = writeln!(out, "| {} | {} | | | | | | | | |", p.threads, failed_cell(p));
            continue;
        }
        let t = &p.tally;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            p.threads,
            rate(p.commits_per_s()),
            ratio_md(ratio(p.commits_per_s(), best)),
            group_digits(t.write_conflicts),
            group_digits(t.deadlocks),
            group_digits(t.lock_timeouts),
            group_digits(p.lock_waits),
            group_digits(u64::from(t.quantile_us(0.5))),
            group_digits(u64::from(t.quantile_us(0.99))),
            p.cpu_us as f64 / 1e6,
        );
    }
    let peak =
        points.iter().filter(|p| p.ok()).max_by(|a, b| a.commits_per_s().total_cmp(&b.commits_per_s()));
    if let (Some(peak), Some(last)) = (peak, points.last().filter(|p| p.ok())) {
        if let Some(r) = ratio(last.commits_per_s(), peak.commits_per_s()) {
            let _ = writeln!(
                out,
                "\n**{} threads / peak ({} threads): {r:.2}** (goal ≥ {SCALING_GOAL}: {})",
                last.threads,
                peak.threads,
                if r >= SCALING_GOAL { "met" } else { "NOT met" }
            );
        }
    }
}

fn counters_md(out: &mut String, points: &[CounterPoint]) {
    let _ = write!(
        out,
        "\n## Counters\n\n{HOT_KEYS} hot keys; each transaction one upsert (+1, u64 little-endian) of a random \
         one: `txn` is begin (repeatable read), `t.update`, commit; `autocommit` is `d.update`. At the end \
         the counters are read back: their sum must equal the commits.\n\n| mode | threads | ops/s | aborts \
         | lock waits | p50 µs | p99 µs | CPU s | commits | counter sum | check |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for c in points {
        let (p, t) = (&c.point, &c.point.tally);
        if p.counter_sum.is_none() {
            let _ =
                writeln!(out, "| {} | {} | {} | | | | | | | | |", c.mode.name(), p.threads, failed_cell(p));
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} |",
            c.mode.name(),
            p.threads,
            rate(p.commits_per_s()),
            group_digits(t.aborts()),
            group_digits(p.lock_waits),
            group_digits(u64::from(t.quantile_us(0.5))),
            group_digits(u64::from(t.quantile_us(0.99))),
            p.cpu_us as f64 / 1e6,
            group_digits(t.commits),
            group_digits(p.counter_sum.unwrap_or(0)),
            counter_check(p),
        );
    }
    let threads: Vec<u64> =
        points.iter().filter(|c| c.mode == CounterMode::Txn).map(|c| c.point.threads).collect();
    out.push_str("\n| threads | txn / autocommit ops/s |\n|---:|---:|\n");
    for n in threads {
        let r = |mode: CounterMode| {
            points
                .iter()
                .find(|c| c.mode == mode && c.point.threads == n && c.point.ok())
                .map(|c| c.point.commits_per_s())
        };
        let x = match (r(CounterMode::Txn), r(CounterMode::Autocommit)) {
            (Some(a), Some(b)) => ratio(a, b),
            _ => None,
        };
        let _ = writeln!(out, "| {n} | {} |", ratio_md(x));
    }
    let all_ok = points.iter().all(|c| counter_check(&c.point) == "ok");
    let _ = writeln!(
        out,
        "\nCounter check: {}",
        if all_ok { "passed (every run's counters add up to its commits)" } else { "**FAILED**" }
    );
}

fn cost_md(out: &mut String, points: &[CostPoint]) {
    out.push_str(
        "\n## Cost\n\nRandom puts of 100-byte values under random 8-byte keys into the preloaded table: (a) \
         autocommit `d.put`, one row per call; (b) one repeatable read transaction per row; (c) repeatable \
         read transactions of 100 rows; (d) read committed transactions of 100 rows.\n\n| threads | variant | \
         rows/txn | rows/s | vs autocommit | txns/s | aborts | lock waits | p50 µs/txn | p99 µs/txn | CPU s \
         |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in points {
        let (p, t) = (&c.point, &c.point.tally);
        if !p.ok() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | | | | | | | |",
                p.threads,
                c.variant.name(),
                c.variant.rows_per_txn(),
                failed_cell(p)
            );
            continue;
        }
        let r = autocommit_rate(points, p.threads).and_then(|a| ratio(p.rows_per_s(), a));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            p.threads,
            c.variant.name(),
            c.variant.rows_per_txn(),
            rate(p.rows_per_s()),
            ratio_md(r),
            rate(p.commits_per_s()),
            group_digits(t.aborts()),
            group_digits(p.lock_waits),
            group_digits(u64::from(t.quantile_us(0.5))),
            group_digits(u64::from(t.quantile_us(0.99))),
            p.cpu_us as f64 / 1e6,
        );
    }
    out.push_str(
        "\nNotes: rates count committed work over each point's wall time. Lock waits are `env.stats().locks` \
         deltas. CPU seconds are the whole process's (getrusage), background threads included. With \
         commit_sync every commit (and every autocommit write) waits for its log record's fsync; concurrent \
         commits share fsyncs.\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> TxnArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            txn: TxnArgs,
        }
        Wrapper::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap().txn
    }

    #[test]
    fn plans_resolve() {
        let plan = Plan::resolve(&parse(&["all"])).unwrap();
        assert!(plan.scaling && plan.counters && plan.cost);
        assert_eq!(plan.scaling_threads, SCALING_THREADS);
        assert_eq!(plan.counter_threads, COUNTER_THREADS);
        assert_eq!(plan.rows, DEFAULT_ROWS);
        assert_eq!(plan.duration, Duration::from_secs(10));
        let smoke = Plan::resolve(&parse(&["cost", "--smoke"])).unwrap();
        assert!(!smoke.scaling && !smoke.counters && smoke.cost);
        assert_eq!((smoke.rows, smoke.scaling_threads.as_slice()), (SMOKE_ROWS, &SMOKE_THREADS[..]));
        let custom = Plan::resolve(&parse(&["scaling", "--threads", "64,4,4"])).unwrap();
        assert_eq!(custom.scaling_threads, [4, 64]);
        assert!(Plan::resolve(&parse(&["scaling", "--threads", "0"])).is_err());
        assert!(Plan::resolve(&parse(&["scaling", "--rows", "0"])).is_err());
    }

    #[test]
    fn add_fn_adds_little_endian() {
        let f = add_fn();
        assert_eq!(f(b"k", None, &5u64.to_le_bytes()), Some(5u64.to_le_bytes().to_vec()));
        assert_eq!(
            f(b"k", Some(&7u64.to_le_bytes()), &5u64.to_le_bytes()),
            Some(12u64.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn retryable_errors_are_told_apart() {
        let kind = |e: fractaldb::Error| match Fail::from(e) {
            Fail::Retry(r) => Some(r),
            Fail::Fatal(_) => None,
        };
        assert_eq!(kind(fractaldb::Error::Deadlock { cycle: vec![1, 2] }), Some(Retry::Deadlock));
        assert_eq!(kind(fractaldb::Error::LockTimeout { holder: 3 }), Some(Retry::LockTimeout));
        assert_eq!(
            kind(fractaldb::Error::WriteConflict { dictionary: "t".into(), key: vec![1], writer: 2 }),
            Some(Retry::WriteConflict)
        );
        assert_eq!(kind(fractaldb::Error::InvalidArgument("x".into())), None);
    }
}
