//! `fractaldb bench-durability`: what the write-ahead log, the checkpoints
//! and recovery cost, one command per measurement (see docs/ARCHITECTURE.md,
//! section Durability):
//!
//! - `commit`: group-commit throughput of single-row synced puts from 1, 4
//!   and 16 threads, fractaldb against RocksDB with a synced WAL;
//! - `checkpoint`: a long random-insert run cut into 1-second buckets, to see
//!   whether writers slow down while a checkpoint runs;
//! - `recovery`: load, keep writing for a checkpoint period, SIGKILL the
//!   writer, then time `Env::open` (which replays the log) in a new process.
//!
//! As with `fractaldb bench`, the parent process resolves the options and
//! runs each measurement in a child process of its own (the hidden
//! `bench-durability-child` subcommand), which reports on its standard output
//! with tagged, tab-separated `key=value` lines (see [`Line`]).

mod checkpoint;
mod commit;
mod recovery;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, Subcommand, ValueEnum};
use fractaldb::{Dictionary, Env, EnvOptions, WriteBatch};

use super::engines::{fractal, EngineConfig, EngineKind};
use super::report::human_bytes;
use super::workloads::{RowGen, VALUE_BYTES};
use super::{parse_count, parse_seconds, parse_size, say, sys, this_program, utc_now, wipe};
use crate::bail;
use crate::error::{Context, Error, Result};

/// Options of `fractaldb bench-durability`.
#[derive(Args, Debug)]
pub struct DurabilityArgs {
    #[command(subcommand)]
    pub measurement: Measurement,
}

/// The three measurements.
#[derive(Subcommand, Debug)]
pub enum Measurement {
    /// Group commit: N threads doing single-row synced puts, fractaldb vs RocksDB.
    Commit(commit::CommitArgs),
    /// Writer throughput per second across periodic checkpoints (fractaldb).
    Checkpoint(checkpoint::CheckpointArgs),
    /// Load, SIGKILL the writer a checkpoint period later, time the reopen (fractaldb).
    Recovery(recovery::RecoveryArgs),
}

/// Options every measurement takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Data folder; the measurement's subfolder in it is wiped first.
    #[arg(long, default_value = "data/bench-durability", value_name = "DATA_DIR")]
    pub dir: PathBuf,

    /// Where the measurement's CSV and markdown files go.
    #[arg(long, default_value = "bench-out/durability", value_name = "OUT_DIR")]
    pub out: PathBuf,

    /// Cache size of the engine, e.g. 64MiB, 1GiB.
    #[arg(long, value_parser = parse_size, default_value = "256MiB", value_name = "SIZE")]
    pub cache: u64,

    /// Bypass the OS page cache for data files where the engine can.
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub direct_io: bool,

    /// Seed of every generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Tiny sizes and durations: the whole measurement in a few seconds (for tests).
    #[arg(long)]
    pub smoke: bool,

    /// Log bytes since the last checkpoint that start the next one early
    /// (EnvOptions::checkpoint_log_bytes), e.g. 128MiB [default: the engine's].
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub checkpoint_log: Option<u64>,
}

/// Which part of a measurement a child process performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Job {
    Commit,
    Checkpoint,
    RecoveryLoad,
    RecoveryOpen,
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Commit => "commit",
            Job::Checkpoint => "checkpoint",
            Job::RecoveryLoad => "recovery-load",
            Job::RecoveryOpen => "recovery-open",
        }
    }
}

/// Options of the hidden `bench-durability-child` subcommand, fully resolved
/// by the parent (each job reads the ones it needs).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct DurabilityChildArgs {
    #[arg(long, value_enum)]
    pub job: Job,
    #[arg(long, value_enum)]
    pub engine: EngineKind,
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub cache_size_bytes: u64,
    #[arg(long, action = ArgAction::Set)]
    pub direct_io: bool,
    #[arg(long)]
    pub seed: u64,
    /// Writer threads (commit).
    #[arg(long)]
    pub threads: u64,
    /// How long to write (commit, checkpoint).
    #[arg(long)]
    pub duration_ms: u64,
    /// Rows per WriteBatch (checkpoint, recovery-load).
    #[arg(long)]
    pub batch_rows: u64,
    #[arg(long, action = ArgAction::Set)]
    pub commit_sync: bool,
    #[arg(long)]
    pub checkpoint_period_ms: u64,
    /// EnvOptions::checkpoint_log_bytes; 0: the engine's default.
    #[arg(long, default_value_t = 0)]
    pub checkpoint_log_bytes: u64,
    /// Raw row bytes to load before the tail (recovery-load).
    #[arg(long)]
    pub load_bytes: u64,
    /// Rows the killed writer had made durable, to check after the reopen (recovery-open).
    #[arg(long)]
    pub verify_rows: u64,
}

impl DurabilityChildArgs {
    /// Arguments for `job` with every job-specific number at zero.
    fn new(job: Job, engine: EngineKind, dir: PathBuf, common: &CommonArgs) -> Self {
        DurabilityChildArgs {
            job,
            engine,
            dir,
            cache_size_bytes: common.cache,
            direct_io: common.direct_io,
            seed: common.seed,
            threads: 0,
            duration_ms: 0,
            batch_rows: 0,
            commit_sync: true,
            checkpoint_period_ms: 0,
            checkpoint_log_bytes: common.checkpoint_log.unwrap_or(0),
            load_bytes: 0,
            verify_rows: 0,
        }
    }

    /// The command-line arguments (after the subcommand) that parse back into `self`.
    fn to_args(&self) -> Vec<String> {
        vec![
            format!("--job={}", self.job.name()),
            format!("--engine={}", self.engine.name()),
            format!("--dir={}", self.dir.display()),
            format!("--cache-size-bytes={}", self.cache_size_bytes),
            format!("--direct-io={}", self.direct_io),
            format!("--seed={}", self.seed),
            format!("--threads={}", self.threads),
            format!("--duration-ms={}", self.duration_ms),
            format!("--batch-rows={}", self.batch_rows),
            format!("--commit-sync={}", self.commit_sync),
            format!("--checkpoint-period-ms={}", self.checkpoint_period_ms),
            format!("--checkpoint-log-bytes={}", self.checkpoint_log_bytes),
            format!("--load-bytes={}", self.load_bytes),
            format!("--verify-rows={}", self.verify_rows),
        ]
    }

    fn config(&self) -> EngineConfig {
        EngineConfig { cache_size_bytes: self.cache_size_bytes, direct_io: self.direct_io }
    }

    /// The environment options of a fractaldb child: the benchmark's
    /// defaults (see `engines::fractal`) with this run's durability settings.
    fn fractal_options(&self) -> Result<EnvOptions> {
        let mut options = fractal::env_options(&self.config())?;
        options.commit_sync = self.commit_sync;
        options.checkpoint_period =
            (self.checkpoint_period_ms > 0).then(|| Duration::from_millis(self.checkpoint_period_ms));
        if self.checkpoint_log_bytes > 0 {
            options.checkpoint_log_bytes = Some(self.checkpoint_log_bytes);
        }
        Ok(options)
    }

    /// Opens fractaldb in `dir` with [`fractal_options`](Self::fractal_options)
    /// and describes the settings.
    fn open_fractal(&self) -> Result<(Env, String)> {
        let options = self.fractal_options()?;
        let dict = fractal::dict_options();
        let settings = format!(
            "fractaldb {}: cache_size_bytes={} direct_io={} cleaner_threads={} commit_sync={} \
             fsync_log_period_ms={} checkpoint_period={} checkpoint_log_bytes={} log_file_size_bytes={}; one \
             dictionary, codec=zstd, node_size_bytes={} basement_size_bytes={} fanout={}",
            env!("CARGO_PKG_VERSION"),
            options.cache_size_bytes,
            options.direct_io,
            options.cleaner_threads,
            options.commit_sync,
            options.fsync_log_period_ms,
            options.checkpoint_period.map_or("none".to_string(), |p| format!("{} s", p.as_secs_f64())),
            match options.resolved_checkpoint_log_bytes() {
                0 => "off".to_string(),
                b => b.to_string(),
            },
            options.log_file_size_bytes,
            dict.node_size_bytes,
            dict.basement_size_bytes,
            dict.fanout,
        );
        std::fs::create_dir_all(&self.dir).context(|| format!("creating {}", self.dir.display()))?;
        let env = Env::open(&self.dir, options)
            .context(|| format!("opening fractaldb in {}", self.dir.display()))?;
        Ok((env, settings))
    }
}

/// `fractaldb bench-durability`.
pub fn run(args: DurabilityArgs) -> Result<()> {
    match args.measurement {
        Measurement::Commit(a) => commit::run(a),
        Measurement::Checkpoint(a) => checkpoint::run(a),
        Measurement::Recovery(a) => recovery::run(a),
    }
}

/// `fractaldb bench-durability-child`: one job, reported on standard output.
pub fn run_child(args: DurabilityChildArgs) -> Result<()> {
    let result = match args.job {
        Job::Commit => commit::child(&args),
        Job::Checkpoint => checkpoint::child(&args),
        Job::RecoveryLoad => recovery::load_child(&args),
        Job::RecoveryOpen => recovery::open_child(&args),
    };
    if let Err(e) = &result {
        send("error", &[("text", e.to_string())]);
    }
    result
}

// ---------------------------------------------------------------------------
// The child's report lines.

/// Marks a line as a report of a durability child.
const TAG: &str = "@fractaldb-durability";

/// Sends one report line: `TAG \t kind \t key=value ...`. A closed pipe is
/// ignored (the parent is gone, or killed us on purpose).
fn send(kind: &str, fields: &[(&str, String)]) {
    let mut line = format!("{TAG}\t{kind}");
    for (key, value) in fields {
        line.push('\t');
        line.push_str(key);
        line.push('=');
        line.push_str(&value.replace(['\t', '\n', '\r'], " "));
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Sends a progress text for the parent to print.
fn note(text: String) {
    send("note", &[("text", text)]);
}

/// One report line of a child, decoded.
#[derive(Clone, Debug, PartialEq)]
struct Line {
    kind: String,
    fields: BTreeMap<String, String>,
    raw: String,
}

impl Line {
    /// The report on `line`: `Ok(None)` if the line is not one (anything a
    /// library printed), an error if it is one but malformed.
    fn decode(line: &str) -> Result<Option<Line>> {
        let mut parts = line.split('\t');
        if parts.next() != Some(TAG) {
            return Ok(None);
        }
        let bad = || Error::new(format!("malformed report from a benchmark process: {line:?}"));
        let kind = parts.next().filter(|k| !k.is_empty()).ok_or_else(bad)?;
        let mut fields = BTreeMap::new();
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            fields.insert(key.to_string(), value.to_string());
        }
        Ok(Some(Line { kind: kind.to_string(), fields, raw: line.to_string() }))
    }

    fn text(&self, key: &str) -> &str {
        self.fields.get(key).map_or("", String::as_str)
    }

    fn u64(&self, key: &str) -> Result<u64> {
        self.fields.get(key).and_then(|v| v.parse().ok()).ok_or_else(|| self.missing(key))
    }

    /// A number that an engine may not have (RocksDB's fsyncs without statistics).
    fn opt_u64(&self, key: &str) -> Option<u64> {
        self.fields.get(key).and_then(|v| v.parse().ok())
    }

    fn missing(&self, key: &str) -> Error {
        Error::new(format!("report from a benchmark process lacks a number {key}: {:?}", self.raw))
    }
}

/// What the parent wants after a report line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// SIGKILL the child now.
    Kill,
}

/// How a child process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Exited,
    Killed,
}

/// Runs a child job, printing its notes and passing its other report lines
/// to `on_line`, until it exits (an error unless it exited cleanly) or
/// `on_line` asks for it to be killed.
fn drive(
    exe: &Path,
    child: &DurabilityChildArgs,
    label: &str,
    on_line: &mut dyn FnMut(&Line) -> Result<Flow>,
) -> Result<Ended> {
    let mut process = Command::new(exe)
        .arg("bench-durability-child")
        .args(child.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context(|| format!("starting {}", exe.display()))?;
    let mut failure: Option<String> = None;
    let mut kill = false;
    if let Some(stdout) = process.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = match line {
                Ok(line) => line,
                Err(e) => {
                    failure.get_or_insert(format!("reading the {label} process's output: {e}"));
                    break;
                }
            };
            let flow = match Line::decode(&line) {
                Ok(None) => {
                    say(&format!("[{label}] {line}"));
                    Ok(Flow::Continue)
                }
                Ok(Some(l)) if l.kind == "note" => {
                    say(&format!("[{label}] {}", l.text("text")));
                    Ok(Flow::Continue)
                }
                Ok(Some(l)) if l.kind == "error" => {
                    failure.get_or_insert(l.text("text").to_string());
                    Ok(Flow::Continue)
                }
                Ok(Some(l)) => on_line(&l),
                Err(e) => Err(e),
            };
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Kill) => {
                    kill = true;
                    break;
                }
                Err(e) => {
                    // The parent cannot go on: do not leave the child running.
                    failure.get_or_insert(e.to_string());
                    kill = true;
                    break;
                }
            }
        }
    }
    if kill {
        // Child::kill sends SIGKILL.
        process.kill().context(|| format!("killing the {label} process"))?;
        let _ = process.wait();
        return match failure {
            Some(f) => Err(Error::new(f)),
            None => Ok(Ended::Killed),
        };
    }
    let status = process.wait().context(|| format!("waiting for the {label} process"))?;
    match failure {
        Some(f) => Err(Error::new(f)),
        None if !status.success() => Err(Error::new(format!("the {label} process ended with {status}"))),
        None => Ok(Ended::Exited),
    }
}

// ---------------------------------------------------------------------------
// Shared by the measurements.

/// The folders of a measurement, checked and created.
struct Folders {
    /// The measurement's data folder (`<dir>/<measurement>`), wiped piece by piece.
    data: PathBuf,
    out: PathBuf,
    exe: PathBuf,
}

impl Folders {
    fn prepare(common: &CommonArgs, measurement: &str) -> Result<Folders> {
        let (data, out) = resolve_folders(&common.dir, &common.out, measurement)?;
        Ok(Folders { data, out, exe: this_program()? })
    }

    fn write(&self, name: &str, text: &str) -> Result<PathBuf> {
        write_file(&self.out, name, text)
    }
}

/// Creates and resolves a measurement's folders: its data goes in
/// `<dir>/<measurement>` (wiped by the caller), which must not hold `out`.
pub(crate) fn resolve_folders(dir: &Path, out: &Path, measurement: &str) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).context(|| format!("creating data folder {}", dir.display()))?;
    std::fs::create_dir_all(out).context(|| format!("creating output folder {}", out.display()))?;
    let data = dir.canonicalize().context(|| format!("resolving {}", dir.display()))?.join(measurement);
    let out = out.canonicalize().context(|| format!("resolving {}", out.display()))?;
    if out.starts_with(&data) {
        bail!(
            "the output folder {} lies in the data folder {}, which is wiped",
            out.display(),
            data.display()
        );
    }
    Ok((data, out))
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write_file(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The circumstances of a run, for the top of its markdown file.
pub(crate) struct RunFacts {
    started_utc: String,
    command_line: String,
    pub(crate) machine: sys::MachineFacts,
    pub(crate) load_average_start: String,
    load_average_end: String,
    file_system: String,
    disk_free_start: Option<u64>,
    disk_free_end: Option<u64>,
    data_dir: PathBuf,
}

impl RunFacts {
    pub(crate) fn start(data_dir: &Path) -> RunFacts {
        let probe = data_dir.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
        let (free, fs) = match sys::disk_free(probe) {
            Some((free, fs)) => (Some(free), fs),
            None => (None, "unknown".to_string()),
        };
        RunFacts {
            started_utc: utc_now(),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            machine: sys::MachineFacts::read(),
            load_average_start: sys::load_average(),
            load_average_end: String::new(),
            file_system: fs,
            disk_free_start: free,
            disk_free_end: None,
            data_dir: data_dir.to_path_buf(),
        }
    }

    pub(crate) fn finish(&mut self) {
        self.load_average_end = sys::load_average();
        let probe = self.data_dir.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
        self.disk_free_end = sys::disk_free(probe).map(|(free, _)| free);
    }

    /// The title, the command, and a table of the run's parameters and the machine.
    pub(crate) fn markdown_head(&self, title: &str, parameters: &[(&str, String)]) -> String {
        let mut out = format!("# {title}\n\nStarted {} UTC: `{}`\n\n", self.started_utc, self.command_line);
        out.push_str("| parameter | value |\n|---|---|\n");
        for (k, v) in parameters {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        let m = &self.machine;
        let free = |b: Option<u64>| b.map_or("unknown".to_string(), |b| human_bytes(b as f64));
        out.push_str("\n## Machine\n\n| fact | value |\n|---|---|\n");
        for (k, v) in [
            ("cores", m.cores.to_string()),
            ("cpu", m.cpu_model.clone()),
            ("memory", human_bytes(m.memory_bytes as f64)),
            ("kernel", m.kernel.clone()),
            ("data folder", format!("`{}` ({})", self.data_dir.display(), self.file_system)),
            ("load average at start (1, 5, 15 min)", self.load_average_start.clone()),
            ("load average at end", self.load_average_end.clone()),
            ("disk free at start", free(self.disk_free_start)),
            ("disk free at end", free(self.disk_free_end)),
        ] {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        out
    }
}

/// Bytes of one inserted row before compression: an 8-byte key, a 100-byte value.
const ROW_BYTES: u64 = 8 + VALUE_BYTES as u64;
/// The generator stream of the inserted values (any constant apart from the workloads').
const INSERT_STREAM: u64 = 12;

/// Writes rows 0, 1, 2, ... of `bench`'s insert generator (random 8-byte
/// keys, 100-byte values) in WriteBatches of a fixed size, so that a later
/// process can name every row written by its number.
struct Inserter {
    gen: RowGen,
    batch: WriteBatch,
    batch_rows: u64,
    value: [u8; VALUE_BYTES],
    /// Rows written so far: rows `0..next_row` were acknowledged.
    next_row: u64,
}

impl Inserter {
    fn new(seed: u64, batch_rows: u64) -> Inserter {
        Inserter {
            gen: RowGen::new(seed),
            batch: WriteBatch::new(),
            batch_rows: batch_rows.max(1),
            value: [0; VALUE_BYTES],
            next_row: 0,
        }
    }

    /// Row `i`: its key and value.
    fn row(gen: &RowGen, i: u64, value: &mut [u8; VALUE_BYTES]) -> [u8; 8] {
        gen.value(INSERT_STREAM, i, value);
        gen.insert_key(i)
    }

    /// Writes the next batch as one WriteBatch; returns how long the write call took.
    fn write(&mut self, dict: &Dictionary) -> Result<Duration> {
        self.batch.clear();
        let end = self.next_row + self.batch_rows;
        for i in self.next_row..end {
            let key = Inserter::row(&self.gen, i, &mut self.value);
            self.batch.put(&key, &self.value);
        }
        let start = Instant::now();
        dict.write(&self.batch).context(|| format!("writing rows {}..{end}", self.next_row))?;
        let took = start.elapsed();
        self.next_row = end;
        Ok(took)
    }
}

/// The value at quantile `q` (0..=1) of sorted values, by nearest rank.
fn quantile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of values (mean of the middle two for an even count); 0 if none.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A duration given in seconds on the command line, as whole milliseconds (at least 1).
fn millis(seconds: f64) -> u64 {
    ((seconds * 1000.0).round() as u64).max(1)
}

/// Seconds as a short figure: "20.0", "0.35".
fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_args_round_trip() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            child: DurabilityChildArgs,
        }
        let common = CommonArgs {
            dir: PathBuf::from("x"),
            out: PathBuf::from("y"),
            cache: 1 << 20,
            direct_io: false,
            seed: 3,
            smoke: false,
            checkpoint_log: Some(10 << 20),
        };
        let mut child =
            DurabilityChildArgs::new(Job::RecoveryOpen, EngineKind::Fractaldb, "/a b".into(), &common);
        child.threads = 4;
        child.duration_ms = 5;
        child.batch_rows = 6;
        child.commit_sync = false;
        child.checkpoint_period_ms = 7;
        child.load_bytes = 8;
        child.verify_rows = 9;
        let parsed =
            Wrapper::try_parse_from(std::iter::once("x".to_string()).chain(child.to_args())).unwrap().child;
        assert_eq!(parsed, child);
    }

    #[test]
    fn lines_round_trip_and_reject_garbage() {
        let encoded = format!("{TAG}\tresult\ta=1\tb=x y\tc=2.5");
        let line = Line::decode(&encoded).unwrap().unwrap();
        assert_eq!(line.kind, "result");
        assert_eq!(line.u64("a").unwrap(), 1);
        assert_eq!(line.text("b"), "x y");
        assert_eq!(line.text("c"), "2.5");
        assert!(line.u64("b").is_err());
        assert_eq!(line.opt_u64("zz"), None);
        assert_eq!(Line::decode("hello").unwrap(), None);
        assert!(Line::decode(&format!("{TAG}\tresult\tnoequals")).is_err());
        assert!(Line::decode(TAG).is_err());
    }

    #[test]
    fn quantiles_and_medians() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&v, 1.0), 100);
        assert_eq!(quantile::<u32>(&[], 0.5), 0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(millis(0.0001), 1);
    }
}
