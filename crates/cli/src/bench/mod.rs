//! `fractaldb bench`: runs the same workloads on fractaldb and on the
//! engines users would otherwise pick, each in a process of its own, and
//! writes the figures side by side (see DESIGN.md, section Benchmarks).
//!
//! The parent process resolves the options, then for each engine wipes the
//! engine's folder and re-invokes this binary as `bench-child`, which opens
//! the engine, runs every workload and reports over its standard output
//! (see [`protocol`]). One process per engine keeps memory, threads, CPU time
//! and `/proc/self/io` counters apart. The parent prints progress, gathers
//! the reports and writes `intervals.csv`, `summary.csv`, `summary.md` and a
//! throughput chart per workload (PNG and SVG).

mod chart;
pub mod durability;
mod engines;
pub mod inspect;
pub mod loader;
mod progress;
mod protocol;
mod report;
pub mod sql;
mod sys;
mod timeline;
pub mod txn;
mod workloads;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{ArgAction, Args};

use crate::bail;
use crate::error::{Context, Result};
use engines::{EngineConfig, EngineKind};
use protocol::{Measured, Message};
use report::{EngineRun, Report, RunInfo};
use workloads::{Dataset, WorkloadKind, WorkloadParams};

/// Bytes of one `insert` row before compression: an 8-byte key and a 100-byte value.
const INSERT_ROW_BYTES: u64 = 8 + workloads::VALUE_BYTES as u64;
/// By default a load writes this many times the cache in raw bytes, so the
/// data far outgrows memory (issue 2 asks for at least 20x).
const DEFAULT_DATA_TO_CACHE: u64 = 20;
/// Default point gets, at most (fewer if the load has fewer rows).
const DEFAULT_MAX_GETS: u64 = 1_000_000;
/// One second: the first and last 10% of a load are timed from interval
/// reports, and a load that ends in about 10 s (fractaldb's insert does)
/// would have both inside one 10-second interval, or spread over it.
const DEFAULT_INTERVAL_SECS: f64 = 1.0;
/// `--smoke`: rows, gets and interval small enough that every engine runs every workload in seconds.
const SMOKE_ROWS: u64 = 10_000;
const SMOKE_INTERVAL_SECS: f64 = 0.01;
/// Threads of `mixed`: a few per core on a small machine, enough to show
/// whether concurrent readers and writers help or get in each other's way.
const DEFAULT_THREADS: usize = 8;
/// More threads than this is a typo, not a benchmark.
const MAX_THREADS: usize = 1024;
const DEFAULT_MIXED_SECS: f64 = 60.0;
const SMOKE_MIXED_SECS: f64 = 1.0;

/// Options of `fractaldb bench`, as the user gives them.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Workloads, run in the order listed below [default: all]. `codec` stands for every codec-*
    /// workload. point-get, range-scan, scan and mixed read what insert wrote, so they need
    /// insert in the same run.
    #[arg(value_name = "WORKLOAD", value_parser = workload_parser())]
    pub workloads: Vec<WorkloadSelection>,

    /// Engines to compare, comma-separated [default: every engine this build has but
    /// fractaldb-sql]. fractaldb-sql (fractaldb's embedded SQL layer over the same engine, each
    /// batch one INSERT statement) runs only insert and iibench: name it with fractaldb to see
    /// what the SQL layer keeps of the engine's rate.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ENGINE,...")]
    pub engines: Vec<EngineKind>,

    /// Rows each load writes, e.g. 13M [default: enough that raw data is 20x the cache].
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub rows: Option<u64>,

    /// Point gets of random existing keys; range-scan reads about as many rows [default: rows, at most 1M].
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub gets: Option<u64>,

    /// Rows per write batch (one transaction or WriteBatch each).
    #[arg(long, value_parser = parse_count, default_value = "1000", value_name = "N")]
    pub batch_rows: u64,

    /// Rows each range of range-scan reads.
    #[arg(long, value_parser = parse_count, default_value = "100", value_name = "N")]
    pub range_rows: u64,

    /// Threads of the mixed workload, each with a session (an SQLite connection) of its own.
    #[arg(long, default_value_t = DEFAULT_THREADS, value_name = "N")]
    pub threads: usize,

    /// How long the mixed workload runs [default: 60; 1 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub seconds: Option<f64>,

    /// Cache size every engine gets, e.g. 64MiB, 1GiB, 500M.
    #[arg(long, value_parser = parse_size, default_value = "64MiB", value_name = "SIZE")]
    pub cache: u64,

    /// Data folder; each engine's subfolder in it is wiped first.
    #[arg(long, default_value = "data/bench", value_name = "DATA_DIR")]
    pub dir: PathBuf,

    /// Where intervals.csv, summary.csv and summary.md go.
    #[arg(long, default_value = "bench-out", value_name = "OUT_DIR")]
    pub out: PathBuf,

    /// Length of one progress interval in seconds [default: 1; 0.01 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub interval_secs: Option<f64>,

    /// Bypass the OS page cache where the engine can (fractaldb, RocksDB; SQLite cannot).
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub direct_io: bool,

    /// Seed of every generator: the same seed gives every engine the same rows.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Tiny row counts and short intervals: every workload on every engine in seconds.
    #[arg(long)]
    pub smoke: bool,
}

/// One workload name on the command line: a workload, or `codec` for every `codec-*` one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadSelection(Vec<WorkloadKind>);

/// Parses a workload name; `--help` lists each with its doc comment.
fn workload_parser() -> impl clap::builder::TypedValueParser<Value = WorkloadSelection> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use clap::ValueEnum;
    let names = WorkloadKind::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
        .chain([PossibleValue::new("codec").help("Every codec-* workload the engine has")]);
    PossibleValuesParser::new(names).map(|name: String| match WorkloadKind::from_name(&name) {
        Some(workload) => WorkloadSelection(vec![workload]),
        None => WorkloadSelection(WorkloadKind::codec_loads().collect()),
    })
}

/// Options of the hidden `bench-child` subcommand: one engine's share of a
/// run, fully resolved by the parent (no defaults here, so parent and child
/// cannot disagree).
#[derive(Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long, value_enum)]
    pub engine: EngineKind,
    /// The engine's own folder (datasets go in subfolders).
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long, value_enum, value_delimiter = ',', required = true)]
    pub workloads: Vec<WorkloadKind>,
    #[arg(long)]
    pub rows: u64,
    #[arg(long)]
    pub gets: u64,
    #[arg(long)]
    pub batch_rows: u64,
    #[arg(long)]
    pub range_rows: u64,
    #[arg(long)]
    pub threads: usize,
    #[arg(long)]
    pub mixed_us: u64,
    #[arg(long)]
    pub cache_size_bytes: u64,
    #[arg(long)]
    pub interval_us: u64,
    #[arg(long, action = ArgAction::Set)]
    pub direct_io: bool,
    #[arg(long)]
    pub seed: u64,
}

impl ChildArgs {
    /// The command-line arguments (after the subcommand) that parse back into `self`.
    fn to_args(&self) -> Vec<String> {
        let workloads: Vec<&str> = self.workloads.iter().map(|w| w.name()).collect();
        vec![
            format!("--engine={}", self.engine.name()),
            format!("--dir={}", self.dir.display()),
            format!("--workloads={}", workloads.join(",")),
            format!("--rows={}", self.rows),
            format!("--gets={}", self.gets),
            format!("--batch-rows={}", self.batch_rows),
            format!("--range-rows={}", self.range_rows),
            format!("--threads={}", self.threads),
            format!("--mixed-us={}", self.mixed_us),
            format!("--cache-size-bytes={}", self.cache_size_bytes),
            format!("--interval-us={}", self.interval_us),
            format!("--direct-io={}", self.direct_io),
            format!("--seed={}", self.seed),
        ]
    }

    fn params(&self) -> WorkloadParams {
        WorkloadParams {
            rows: self.rows,
            gets: self.gets,
            batch_rows: self.batch_rows,
            range_rows: self.range_rows,
            threads: self.threads,
            mixed_duration: Duration::from_micros(self.mixed_us),
            interval: Duration::from_micros(self.interval_us),
            seed: self.seed,
        }
    }
}

/// A count with an optional decimal suffix: `1000`, `1_000_000`, `500k`, `13M`, `2G`.
pub(crate) fn parse_count(text: &str) -> std::result::Result<u64, String> {
    let cleaned: String = text.trim().chars().filter(|&c| c != '_' && c != ',').collect();
    let (digits, multiplier) = match cleaned.char_indices().last() {
        Some((i, 'k' | 'K')) => (&cleaned[..i], 1_000),
        Some((i, 'm' | 'M')) => (&cleaned[..i], 1_000_000),
        Some((i, 'g' | 'G')) => (&cleaned[..i], 1_000_000_000),
        _ => (cleaned.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("{text:?} is not a count (examples: 1000, 500k, 13M)"))
}

/// A size in bytes: `65536`, `512KiB`, `64MiB`, `1GiB` (binary), `64M` (also
/// binary, as in my.cnf), `64MB` (decimal).
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(format!("{text:?}: unknown size unit {unit:?} (use B, KiB, MiB, GiB, KB, MB, GB)")),
    };
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a size (examples: 64MiB, 1GiB)"))?;
    let bytes = value * multiplier as f64;
    if !(0.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(bytes as u64)
}

/// A positive number of seconds, at least a millisecond: `10`, `0.5`.
fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if (0.001..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("{text:?} is not a number of seconds between 0.001 and 86400")),
    }
}

/// The run the user asked for, with defaults filled in and checked.
struct Plan {
    workloads: Vec<WorkloadKind>,
    engines: Vec<EngineKind>,
    rows: u64,
    gets: u64,
    batch_rows: u64,
    range_rows: u64,
    threads: usize,
    mixed_us: u64,
    cache_size_bytes: u64,
    interval_us: u64,
    direct_io: bool,
    seed: u64,
}

impl Plan {
    fn resolve(args: &BenchArgs) -> Result<Plan> {
        let mut workloads: Vec<WorkloadKind> = if args.workloads.is_empty() {
            WorkloadKind::ALL.to_vec()
        } else {
            args.workloads.iter().flat_map(|s| s.0.iter().copied()).collect()
        };
        workloads.sort();
        workloads.dedup();
        let readers: Vec<&str> = workloads
            .iter()
            .filter(|w| !w.is_load() && w.dataset() == Dataset::Insert)
            .map(|w| w.name())
            .collect();
        if let Some((last, others)) = readers.split_last() {
            if !workloads.contains(&WorkloadKind::Insert) {
                let (who, verb) = match others {
                    [] => (last.to_string(), "reads"),
                    _ => (format!("{} and {last}", others.join(", ")), "read"),
                };
                bail!("{who} {verb} the rows that insert writes: add insert to the workloads");
            }
        }
        let explicit_engines = !args.engines.is_empty();
        let mut engines: Vec<EngineKind> = if explicit_engines {
            args.engines.clone()
        } else {
            EngineKind::ALL.into_iter().filter(|e| e.is_built() && e.in_default_run()).collect()
        };
        engines.sort();
        engines.dedup();
        if let Some(missing) = engines.iter().find(|e| !e.is_built()) {
            bail!(
                "this build has no {missing}: rebuild with `--features rocksdb` \
                 or leave it out of --engines"
            );
        }
        // An engine without a codec skips that codec's load, fractaldb-sql
        // every workload but its two loads; one left with nothing to do is
        // an error if the user named it, else left out.
        let mut idle = Vec::new();
        engines.retain(|&e| {
            let has_work = workloads.iter().any(|&w| runs_on(w, e));
            if !has_work {
                idle.push(e);
            }
            has_work
        });
        if let Some(&engine) = idle.first() {
            if explicit_engines || engines.is_empty() {
                bail!(
                    "{engine} has none of the workloads asked for ({}); leave it out of --engines",
                    what_runs_on(engine)
                );
            }
            say(&format!(
                "Leaving out {}: none of the workloads asked for run on it (codecs it lacks)",
                idle.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
            ));
        }
        if args.cache < 1 << 20 {
            bail!("--cache must be at least 1MiB");
        }
        if args.batch_rows == 0 {
            bail!("--batch-rows must be at least 1");
        }
        if args.range_rows == 0 {
            bail!("--range-rows must be at least 1");
        }
        if !(1..=MAX_THREADS).contains(&args.threads) {
            bail!("--threads must be between 1 and {MAX_THREADS}");
        }
        let rows = match (args.rows, args.smoke) {
            (Some(rows), _) => rows,
            (None, true) => SMOKE_ROWS,
            (None, false) => {
                let rows = (DEFAULT_DATA_TO_CACHE * args.cache).div_ceil(INSERT_ROW_BYTES);
                rows.div_ceil(100_000) * 100_000
            }
        };
        if rows == 0 {
            bail!("--rows must be at least 1");
        }
        if rows > u64::from(u32::MAX) && workloads.iter().any(|w| w.codec().is_some()) {
            // The log table's keys carry the row number in 4 bytes.
            bail!("--rows must be at most {} for the codec-* workloads", u32::MAX);
        }
        let gets = args.gets.unwrap_or(if args.smoke { rows } else { rows.min(DEFAULT_MAX_GETS) });
        if gets == 0
            && workloads.iter().any(|w| matches!(w, WorkloadKind::PointGet | WorkloadKind::RangeScan))
        {
            bail!("--gets must be at least 1 when point-get or range-scan runs");
        }
        let interval_secs = args.interval_secs.unwrap_or(if args.smoke {
            SMOKE_INTERVAL_SECS
        } else {
            DEFAULT_INTERVAL_SECS
        });
        let mixed_secs =
            args.seconds.unwrap_or(if args.smoke { SMOKE_MIXED_SECS } else { DEFAULT_MIXED_SECS });
        Ok(Plan {
            workloads,
            engines,
            rows,
            gets,
            batch_rows: args.batch_rows,
            range_rows: args.range_rows,
            threads: args.threads,
            mixed_us: (mixed_secs * 1e6).round() as u64,
            cache_size_bytes: args.cache,
            interval_us: (interval_secs * 1e6).round() as u64,
            direct_io: args.direct_io,
            seed: args.seed,
        })
    }

    /// The share of the run that `engine`'s process performs: every
    /// workload that [`runs_on`] it (not the codec loads it has no codec
    /// for; on fractaldb-sql, its two loads).
    fn child_args(&self, engine: EngineKind, dir: PathBuf) -> ChildArgs {
        ChildArgs {
            engine,
            dir,
            workloads: self.workloads.iter().copied().filter(|&w| runs_on(w, engine)).collect(),
            rows: self.rows,
            gets: self.gets,
            batch_rows: self.batch_rows,
            range_rows: self.range_rows,
            threads: self.threads,
            mixed_us: self.mixed_us,
            cache_size_bytes: self.cache_size_bytes,
            interval_us: self.interval_us,
            direct_io: self.direct_io,
            seed: self.seed,
        }
    }
}

/// The only workloads fractaldb-sql runs: the loads issue 19 compares
/// with the engine's. The reads would measure SELECT, not the SQL INSERT
/// path, and `settle` reads nothing the loads do not already show.
const SQL_WORKLOADS: [WorkloadKind; 2] = [WorkloadKind::Insert, WorkloadKind::Iibench];

/// Whether `workload` runs on `engine`: a `codec-*` load only where the
/// engine has the codec; on fractaldb-sql only [`SQL_WORKLOADS`].
fn runs_on(workload: WorkloadKind, engine: EngineKind) -> bool {
    if engine == EngineKind::FractaldbSql {
        return SQL_WORKLOADS.contains(&workload);
    }
    workload.codec().is_none_or(|codec| engines::codecs(engine).contains(&codec))
}

/// What `engine` runs, for the message that it has nothing to do.
fn what_runs_on(engine: EngineKind) -> String {
    if engine == EngineKind::FractaldbSql {
        let names: Vec<&str> = SQL_WORKLOADS.iter().map(|w| w.name()).collect();
        return format!("it runs only {}", names.join(" and "));
    }
    let codecs: Vec<&str> = engines::codecs(engine).iter().map(|c| c.name()).collect();
    format!("its codecs: {}", codecs.join(", "))
}

/// Prints a line to standard output, ignoring a closed pipe (the run goes on
/// and its files are still written).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// `fractaldb bench`: runs every engine in turn and writes the report.
pub fn run(args: BenchArgs) -> Result<()> {
    let plan = Plan::resolve(&args)?;
    std::fs::create_dir_all(&args.dir).context(|| format!("creating data folder {}", args.dir.display()))?;
    std::fs::create_dir_all(&args.out)
        .context(|| format!("creating output folder {}", args.out.display()))?;
    let data_dir = args.dir.canonicalize().context(|| format!("resolving {}", args.dir.display()))?;
    let out_dir = args.out.canonicalize().context(|| format!("resolving {}", args.out.display()))?;
    for engine in &plan.engines {
        if out_dir.starts_with(data_dir.join(engine.name())) {
            bail!("the output folder {} lies in {engine}'s data folder, which is wiped", out_dir.display());
        }
    }
    let exe = this_program()?;
    let (disk_free_start_bytes, file_system) = match sys::disk_free(&data_dir) {
        Some((free, fs)) => (Some(free), fs),
        None => (None, "unknown".to_string()),
    };
    let mut info = RunInfo {
        started_utc: utc_now(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        workloads: plan.workloads.clone(),
        engines: plan.engines.clone(),
        rows: plan.rows,
        gets: plan.gets,
        batch_rows: plan.batch_rows,
        range_rows: plan.range_rows,
        threads: plan.threads,
        mixed_seconds: plan.mixed_us as f64 / 1e6,
        cache_size_bytes: plan.cache_size_bytes,
        direct_io: plan.direct_io,
        interval_ms: plan.interval_us / 1000,
        seed: plan.seed,
        data_dir: data_dir.display().to_string(),
        machine: sys::MachineFacts::read(),
        disk: sys::DiskFacts::of(&data_dir),
        load_average_start: sys::load_average(),
        disk_free_start_bytes,
        file_system,
        ..RunInfo::default()
    };
    say(&format!(
        "fractaldb bench: {} on {}; {} rows per load, {} gets, cache {}, direct I/O {}, data in {}",
        plan.workloads.iter().map(|w| w.name()).collect::<Vec<_>>().join(", "),
        plan.engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
        report::group_digits(plan.rows),
        report::group_digits(plan.gets),
        report::human_bytes(plan.cache_size_bytes as f64),
        plan.direct_io,
        data_dir.display()
    ));

    let live = progress::live_wanted();
    let mut runs = Vec::new();
    for &engine in &plan.engines {
        let engine_dir = data_dir.join(engine.name());
        let run = match wipe(&engine_dir) {
            Ok(()) => run_engine(&exe, &plan.child_args(engine, engine_dir), live),
            Err(e) => EngineRun { failure: Some(e.to_string()), ..EngineRun::new(engine) },
        };
        if let Some(failure) = &run.failure {
            say(&format!("[{engine}] FAILED: {failure}"));
        }
        runs.push(run);
    }

    info.load_average_end = sys::load_average();
    info.disk_free_end_bytes = sys::disk_free(&data_dir).map(|(free, _)| free);
    let mut report = Report::new(&info, &runs);
    report.write(&out_dir)?;
    say("");
    say(&report.summary_md());
    let mut files = vec!["intervals.csv".to_string(), "summary.csv".into(), "summary.md".into()];
    if runs.iter().any(|r| !r.counters.is_empty()) {
        files.push("engine-counters.csv".into());
    }
    files.extend(report.chart_files());
    say(&format!("Wrote {} in {}", files.join(", "), out_dir.display()));
    let failed: Vec<String> =
        runs.iter().filter_map(|r| r.failure.as_ref().map(|f| format!("{}: {f}", r.engine))).collect();
    if !failed.is_empty() {
        bail!(
            "{} engine(s) failed ({}); the results so far are in {}",
            failed.len(),
            failed.join("; "),
            out_dir.display()
        );
    }
    Ok(())
}

/// The path that starts this program again for each engine: `/proc/self/exe`
/// where there is one, so that a rebuild during a long run (which replaces the
/// file) cannot make the later engines run another build.
fn this_program() -> Result<PathBuf> {
    let proc_exe = PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe);
    }
    std::env::current_exe().context(|| "finding this program's path".to_string())
}

/// Removes an engine's folder from an earlier run.
fn wipe(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).context(|| format!("wiping {}", dir.display())),
    }
}

/// Runs one engine's process to its end, showing its progress (as a live
/// line if `live`, see [`progress`]), and returns what it reported.
fn run_engine(exe: &Path, child: &ChildArgs, live: bool) -> EngineRun {
    let engine = child.engine;
    let mut run = EngineRun::new(engine);
    let mut progress = progress::Progress::new(engine, live);
    say(&format!("[{engine}] starting in {}", child.dir.display()));
    let spawned = Command::new(exe)
        .arg("bench-child")
        .args(child.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut process = match spawned {
        Ok(p) => p,
        Err(e) => {
            run.failure = Some(format!("cannot start {}: {e}", exe.display()));
            return run;
        }
    };
    if let Some(stdout) = process.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = match line {
                Ok(line) => line,
                Err(e) => {
                    run.failure.get_or_insert(format!("reading the engine process's output: {e}"));
                    break;
                }
            };
            match Message::decode(&line) {
                Ok(Some(message)) => handle_message(&mut run, message, &mut progress, child),
                Ok(None) => progress.say(&format!("[{engine}] {line}")),
                Err(e) => {
                    run.failure.get_or_insert(e.to_string());
                }
            }
        }
    }
    match process.wait() {
        Ok(status) if !status.success() => {
            run.failure.get_or_insert(format!("the engine process ended with {status}"));
        }
        Ok(_) if run.failure.is_none() && run.results.len() != child.workloads.len() => {
            run.failure = Some("the engine process ended without reporting every workload".into());
        }
        Ok(_) => {}
        Err(e) => {
            run.failure.get_or_insert(format!("waiting for the engine process: {e}"));
        }
    }
    run
}

/// Records a message of an engine's process and shows it. The child runs
/// the workloads in the order given, so the one under way is the first
/// without a result: its live line starts when the engine has opened (the
/// settings message) or the workload before it has ended.
fn handle_message(
    run: &mut EngineRun,
    message: Message,
    progress: &mut progress::Progress,
    child: &ChildArgs,
) {
    let engine = run.engine;
    let expected = |w| progress::expected_rows(w, child.rows, child.gets);
    match message {
        Message::Settings(text) => {
            progress.say(&format!("[{engine}] settings: {text}"));
            run.settings.get_or_insert(text);
            if let Some(&next) = child.workloads.get(run.results.len()) {
                progress.begin(next, expected(next));
            }
        }
        Message::Interval(workload, i) => {
            progress.interval(workload, &i, expected(workload));
            run.intervals.push((workload, i));
        }
        Message::Counters(workload, end_us, pairs) => {
            run.counters.push((workload, end_us, pairs));
        }
        Message::Result(workload, m) => {
            let rate = if m.elapsed_us > 0 { m.rows as f64 * 1e6 / m.elapsed_us as f64 } else { 0.0 };
            progress.done(&format!(
                "[{engine}] {workload} done: {} rows in {:.2} s = {} rows/s; {:.2} CPU-s; {} on disk; \
                 peak RSS {}; read {}, wrote {}",
                report::group_digits(m.rows),
                m.elapsed_us as f64 / 1e6,
                report::group_digits(rate.round() as u64),
                m.cpu_us as f64 / 1e6,
                report::human_bytes(m.disk_bytes as f64),
                report::human_bytes(m.peak_rss_bytes as f64),
                report::human_bytes(m.read_bytes as f64),
                report::human_bytes(m.write_bytes as f64),
            ));
            run.results.push((workload, m));
            if let Some(&next) = child.workloads.get(run.results.len()) {
                progress.begin(next, expected(next));
            }
        }
        Message::Error(text) => {
            run.failure.get_or_insert(text);
        }
    }
}

/// Sends a message to the parent; a closed pipe is ignored (the parent is gone
/// and the child will finish or fail on its own).
fn send(message: &Message) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", message.encode());
    let _ = out.flush();
}

/// `fractaldb bench-child`: one engine, every workload, reported on standard output.
pub fn run_child(args: ChildArgs) -> Result<()> {
    if !sys::die_with_parent() {
        bail!("the fractaldb bench process that started this one is gone");
    }
    let result = child_main(&args);
    if let Err(e) = &result {
        send(&Message::Error(e.to_string()));
    }
    result
}

fn child_main(args: &ChildArgs) -> Result<()> {
    let config = EngineConfig { cache_size_bytes: args.cache_size_bytes, direct_io: args.direct_io };
    let params = args.params();
    let mut loaded: Vec<Dataset> = Vec::new();
    let mut open: Option<(Dataset, Box<dyn engines::Engine>)> = None;
    let mut settings_sent = false;
    for &workload in &args.workloads {
        let dataset = workload.dataset();
        if workload.is_load() && loaded.contains(&dataset) {
            bail!("{workload} is listed twice");
        }
        if !workload.is_load() && !loaded.contains(&dataset) {
            bail!(
                "{workload} reads the {} data, which no earlier workload of this run wrote",
                dataset.dir_name()
            );
        }
        let engine = match open.take() {
            Some((d, engine)) if d == dataset => engine,
            other => {
                if let Some((_, engine)) = other {
                    engine.close()?;
                }
                let dir = args.dir.join(dataset.dir_name());
                let engine = engines::open(args.engine, &dir, &config, dataset.keyspaces(), dataset.codec())?;
                if !settings_sent {
                    send(&Message::Settings(engine.settings()));
                    settings_sent = true;
                }
                engine
            }
        };
        let engine = &open.insert((dataset, engine)).1;

        let peak_rss_whole_process = !sys::reset_peak_rss();
        let before = sys::ProcessCounters::now()?;
        let outcome = workloads::run(workload, engine.as_ref(), &params, &mut |i| {
            send(&Message::Interval(workload, *i));
            let mut counters = engine.counters();
            counters.extend(sys::memory_counters());
            if !counters.is_empty() {
                let pairs = counters.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
                send(&Message::Counters(workload, i.end_us, pairs));
            }
        })
        .context(|| format!("{} {workload}", args.engine))?;
        let counted = sys::ProcessCounters::now()?.since(&before);
        let peak_rss_bytes = sys::peak_rss_bytes();
        let disk = engine.disk_usage()?;
        // After the measurements, so the check's reads count in none of them.
        workloads::verify(workload, engine.as_ref(), &params)
            .context(|| format!("{} {workload}: checking what it wrote", args.engine))?;
        if workload.is_load() {
            loaded.push(dataset);
        }
        send(&Message::Result(
            workload,
            Measured {
                rows: outcome.rows,
                elapsed_us: outcome.elapsed_us,
                flush_us: outcome.flush_us,
                cpu_us: counted.cpu_us,
                read_bytes: counted.read_bytes,
                write_bytes: counted.write_bytes,
                read_calls: counted.read_calls,
                peak_rss_bytes,
                peak_rss_whole_process,
                disk_bytes: disk.allocated_bytes,
                file_bytes: disk.file_bytes,
                live_bytes: disk.live_bytes.unwrap_or(0),
                raw_bytes: outcome.raw_bytes,
            },
        ));
    }
    if let Some((_, engine)) = open {
        engine.close()?;
    }
    Ok(())
}

/// The current time in UTC as `YYYY-MM-DD HH:MM:SS`.
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's civil-from-days algorithm).
pub fn civil_date(days: u64) -> (i64, i64, i64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("64 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
        assert_eq!(parse_count("13M"), Ok(13_000_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("-3").is_err());
        assert!(parse_count("99999999999G").is_err());
        assert!(parse_seconds("0").is_err());
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
    }

    #[test]
    fn child_args_round_trip() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            child: ChildArgs,
        }
        let child = ChildArgs {
            engine: EngineKind::Sqlite,
            dir: PathBuf::from("/tmp/x y"),
            workloads: vec![WorkloadKind::Insert, WorkloadKind::PointGet],
            rows: 10,
            gets: 5,
            batch_rows: 3,
            range_rows: 7,
            threads: 4,
            mixed_us: 2_000_000,
            cache_size_bytes: 1 << 20,
            interval_us: 1000,
            direct_io: false,
            seed: 9,
        };
        let parsed =
            Wrapper::try_parse_from(std::iter::once("x".to_string()).chain(child.to_args())).unwrap().child;
        assert_eq!(parsed.to_args(), child.to_args());
    }

    /// The plan `fractaldb bench ARGS` resolves to.
    fn parse(args: &[&str]) -> Result<Plan> {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            bench: BenchArgs,
        }
        Plan::resolve(&Wrapper::try_parse_from(["x"].iter().chain(args)).unwrap().bench)
    }

    #[test]
    fn codec_stands_for_every_codec_and_each_engine_gets_only_its_own() {
        let plan =
            parse(&["codec", "insert", "codec-zstd", "--smoke", "--engines", "sqlite,fractaldb"]).unwrap();
        let mut expected = vec![WorkloadKind::Insert];
        expected.extend(WorkloadKind::codec_loads());
        assert_eq!(plan.workloads, expected);
        assert_eq!(plan.child_args(EngineKind::Fractaldb, PathBuf::new()).workloads, expected);
        assert_eq!(
            plan.child_args(EngineKind::Sqlite, PathBuf::new()).workloads,
            [WorkloadKind::Insert, WorkloadKind::CodecNone]
        );
        // Named, an engine with nothing to run is an error; by default it is left out.
        assert!(parse(&["codec-lzma", "--smoke", "--engines", "sqlite"]).is_err());
        let plan = parse(&["codec-lzma", "--smoke"]).unwrap();
        assert_eq!(plan.engines, [EngineKind::Fractaldb]);
        assert!(parse(&["mixed", "--smoke"]).is_err(), "mixed reads what insert writes");
    }

    #[test]
    fn fractaldb_sql_runs_only_its_loads_and_only_when_named() {
        assert!(!parse(&["--smoke"]).unwrap().engines.contains(&EngineKind::FractaldbSql));
        let plan = parse(&["--smoke", "--engines", "fractaldb,fractaldb-sql"]).unwrap();
        assert_eq!(plan.engines, [EngineKind::Fractaldb, EngineKind::FractaldbSql]);
        assert_eq!(plan.child_args(EngineKind::Fractaldb, PathBuf::new()).workloads, WorkloadKind::ALL);
        assert_eq!(
            plan.child_args(EngineKind::FractaldbSql, PathBuf::new()).workloads,
            [WorkloadKind::Insert, WorkloadKind::Iibench]
        );
        let error = parse(&["rollup-seq", "codec-zstd", "--smoke", "--engines", "fractaldb-sql"])
            .err()
            .expect("nothing to run")
            .to_string();
        assert!(error
            .contains("fractaldb-sql has none of the workloads asked for (it runs only insert and iibench)"));
        let plan = parse(&["insert", "point-get", "--smoke", "--engines", "fractaldb-sql"]).unwrap();
        assert_eq!(
            plan.child_args(EngineKind::FractaldbSql, PathBuf::new()).workloads,
            [WorkloadKind::Insert]
        );
    }

    #[test]
    fn default_rows_are_twenty_times_the_cache() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let args = Wrapper::try_parse_from(["x"]).unwrap().bench;
        let plan = Plan::resolve(&args).unwrap();
        assert!(plan.rows * INSERT_ROW_BYTES >= 20 * (64 << 20));
        assert_eq!(plan.workloads, WorkloadKind::ALL.to_vec());
        assert!(Plan::resolve(&Wrapper::try_parse_from(["x", "scan"]).unwrap().bench).is_err());
        assert!(utc_now().starts_with("20"));
    }
}
