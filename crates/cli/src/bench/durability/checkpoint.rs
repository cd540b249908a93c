//! `bench-durability checkpoint`: does a writer slow down while a checkpoint
//! runs? One thread inserts random rows in WriteBatches into fractaldb for a
//! long time (default 10 minutes) with periodic checkpoints and a cache much
//! smaller than the data; a sampler thread counts the rows acknowledged in
//! each 1-second bucket and notes when each checkpoint ended and how long it
//! took. The figure of merit is the slowest 10-second window over the median
//! one (the goal is at least 0.9).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args};
use fractaldb::{Dictionary, Env};

use super::{
    drive, fractal, median, millis, parse_count, parse_seconds, quantile, say, secs, send, sys, wipe,
    CommonArgs, DurabilityChildArgs, Flow, Folders, Inserter, Job, Line, RunFacts, ROW_BYTES,
};
use crate::bail;
use crate::bench::engines::EngineKind;
use crate::bench::report::{group_digits, human_bytes};
use crate::error::{Context, Result};

const DEFAULT_SECONDS: f64 = 600.0;
const SMOKE_SECONDS: f64 = 3.0;
const DEFAULT_PERIOD_SECS: f64 = 60.0;
const SMOKE_PERIOD_SECS: f64 = 1.0;
const DEFAULT_WINDOW_SECS: u64 = 10;
const SMOKE_WINDOW_SECS: u64 = 1;
/// The "local" ratio compares a window with the median of the windows
/// starting within this many seconds of it, so that the slow, steady decline
/// of a growing tree does not count as a stall.
const LOCAL_SPAN_SECS: usize = 60;
/// The goal the figure of merit is held to.
const GOAL: f64 = 0.9;

/// Options of `bench-durability checkpoint`.
#[derive(Args, Debug)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Seconds of inserting, in whole 1-second buckets [default: 600; 3 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub seconds: Option<f64>,

    /// Seconds between checkpoints (EnvOptions::checkpoint_period) [default: 60; 1 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub checkpoint_period: Option<f64>,

    /// Rows per WriteBatch.
    #[arg(long, value_parser = parse_count, default_value = "1000", value_name = "N")]
    pub batch_rows: u64,

    /// Every batch durable when it returns (EnvOptions::commit_sync); false: the log is fsynced every second.
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub commit_sync: bool,

    /// Length of the windows compared, in seconds [default: 10; 1 with --smoke].
    #[arg(long, value_name = "SECONDS")]
    pub window_secs: Option<u64>,
}

/// One 1-second bucket as the child measured it.
#[derive(Clone, Copy, Debug)]
struct Second {
    /// When the bucket was read, from the start of the run.
    at_us: u64,
    rows: u64,
    /// The longest write call that ended in the bucket (0 if none ended).
    max_write_us: u64,
}

/// One checkpoint, as the child saw it end.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    end_us: u64,
    duration_us: u64,
}

impl Checkpoint {
    fn start_us(&self) -> u64 {
        self.end_us.saturating_sub(self.duration_us)
    }
}

/// The figures derived from the buckets.
#[derive(Debug, Default)]
struct Analysis {
    /// Rows per second of each bucket.
    rates: Vec<f64>,
    /// Whether a checkpoint ran during each bucket.
    in_checkpoint: Vec<bool>,
    /// Rows per second of each sliding window (one per starting bucket).
    windows: Vec<f64>,
    min_window: f64,
    /// First second of the slowest window (0-based bucket index).
    min_window_at: usize,
    median_window: f64,
    /// Slowest window over the median window: the figure of merit.
    ratio: f64,
    /// The smallest ratio of a window to the median of its neighbours.
    local_ratio: f64,
    local_ratio_at: usize,
    min_second: f64,
    median_second: f64,
    mean_in_checkpoint: Option<f64>,
    mean_outside: Option<f64>,
    max_write_in_checkpoint_us: u64,
    max_write_outside_us: u64,
    /// Slowest over median window among the windows starting after the warm-up.
    ratio_after_warmup: Option<f64>,
    /// How much each checkpoint slowed the writer, in the order of the checkpoints.
    dips: Vec<Dip>,
}

/// The writer's pace around one checkpoint, against its neighbourhood.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Dip {
    /// Mean rate of the buckets the checkpoint overlaps, over the median rate
    /// of the buckets within `LOCAL_SPAN_SECS / 2` that overlap no checkpoint.
    second_ratio: Option<f64>,
    /// The slowest window holding any of those buckets, over the median of
    /// the windows within `LOCAL_SPAN_SECS` that overlap no checkpoint.
    window_ratio: Option<f64>,
    /// The longest write call that ended during the checkpoint or in the bucket after.
    longest_write_us: u64,
}

/// Each checkpoint's [`Dip`].
fn dips(
    a: &Analysis,
    seconds: &[Second],
    starts: &[u64],
    checkpoints: &[Checkpoint],
    window: usize,
) -> Vec<Dip> {
    let n = seconds.len();
    let overlaps = |c: &Checkpoint, i: usize| c.start_us() < seconds[i].at_us && c.end_us > starts[i];
    // Windows that overlap no checkpoint, by starting bucket.
    let clean_window: Vec<bool> =
        (0..a.windows.len()).map(|i| !a.in_checkpoint[i..i + window].iter().any(|&c| c)).collect();
    checkpoints
        .iter()
        .map(|c| {
            let buckets: Vec<usize> = (0..n).filter(|&i| overlaps(c, i)).collect();
            let (Some(&first), Some(&last)) = (buckets.first(), buckets.last()) else {
                return Dip::default();
            };
            let half = LOCAL_SPAN_SECS / 2;
            let around: Vec<f64> = (first.saturating_sub(half)..(last + half + 1).min(n))
                .filter(|&i| !a.in_checkpoint[i])
                .map(|i| a.rates[i])
                .collect();
            let inside = buckets.iter().map(|&i| a.rates[i]).sum::<f64>() / buckets.len() as f64;
            let base = median(&around);
            let second_ratio = (!around.is_empty() && base > 0.0).then(|| inside / base);
            let holding = (first + 1).saturating_sub(window)..(last + 1).min(a.windows.len());
            let slowest = a.windows.get(holding.clone()).and_then(|w| w.iter().copied().reduce(f64::min));
            let neighbours: Vec<f64> = (first.saturating_sub(LOCAL_SPAN_SECS)
                ..(last + LOCAL_SPAN_SECS + 1).min(a.windows.len()))
                .filter(|&i| clean_window[i])
                .map(|i| a.windows[i])
                .collect();
            let base = median(&neighbours);
            let window_ratio = match slowest {
                Some(w) if !neighbours.is_empty() && base > 0.0 => Some(w / base),
                _ => None,
            };
            let longest_write_us =
                (first..(last + 2).min(n)).map(|i| seconds[i].max_write_us).max().unwrap_or(0);
            Dip { second_ratio, window_ratio, longest_write_us }
        })
        .collect()
}

fn analyse(seconds: &[Second], checkpoints: &[Checkpoint], window: usize, warmup_secs: usize) -> Analysis {
    let mut a = Analysis::default();
    let mut previous_us = 0;
    let mut starts = Vec::with_capacity(seconds.len());
    for s in seconds {
        let span = s.at_us.saturating_sub(previous_us).max(1);
        a.rates.push(s.rows as f64 * 1e6 / span as f64);
        starts.push(previous_us);
        previous_us = s.at_us;
    }
    a.in_checkpoint = seconds
        .iter()
        .zip(&starts)
        .map(|(s, &start)| checkpoints.iter().any(|c| c.start_us() < s.at_us && c.end_us > start))
        .collect();
    if seconds.len() >= window && window > 0 {
        for i in 0..=seconds.len() - window {
            let rows: u64 = seconds[i..i + window].iter().map(|s| s.rows).sum();
            let span = seconds[i + window - 1].at_us.saturating_sub(starts[i]).max(1);
            a.windows.push(rows as f64 * 1e6 / span as f64);
        }
    }
    if let Some((at, &min)) = a.windows.iter().enumerate().min_by(|x, y| x.1.total_cmp(y.1)) {
        a.min_window = min;
        a.min_window_at = at;
        a.median_window = median(&a.windows);
        a.ratio = if a.median_window > 0.0 { min / a.median_window } else { 0.0 };
        a.local_ratio = f64::INFINITY;
        for i in 0..a.windows.len() {
            let lo = i.saturating_sub(LOCAL_SPAN_SECS);
            let hi = (i + LOCAL_SPAN_SECS + 1).min(a.windows.len());
            let local = median(&a.windows[lo..hi]);
            let r = if local > 0.0 { a.windows[i] / local } else { 0.0 };
            if r < a.local_ratio {
                a.local_ratio = r;
                a.local_ratio_at = i;
            }
        }
    }
    a.min_second = a.rates.iter().copied().fold(f64::INFINITY, f64::min);
    if a.rates.is_empty() {
        a.min_second = 0.0;
    }
    a.median_second = median(&a.rates);
    let mean = |inside: bool| {
        let v: Vec<f64> =
            a.rates.iter().zip(&a.in_checkpoint).filter(|(_, &c)| c == inside).map(|(&r, _)| r).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    a.mean_in_checkpoint = mean(true);
    a.mean_outside = mean(false);
    for (s, &c) in seconds.iter().zip(&a.in_checkpoint) {
        let slot = if c { &mut a.max_write_in_checkpoint_us } else { &mut a.max_write_outside_us };
        *slot = (*slot).max(s.max_write_us);
    }
    if let Some(after) = a.windows.get(warmup_secs..).filter(|w| !w.is_empty()) {
        let m = median(after);
        let min = after.iter().copied().fold(f64::INFINITY, f64::min);
        a.ratio_after_warmup = (m > 0.0).then(|| min / m);
    }
    if !a.windows.is_empty() {
        a.dips = dips(&a, seconds, &starts, checkpoints, window);
    }
    a
}

/// `bench-durability checkpoint`.
pub fn run(args: CheckpointArgs) -> Result<()> {
    let common = &args.common;
    let seconds =
        args.seconds.unwrap_or(if common.smoke { SMOKE_SECONDS } else { DEFAULT_SECONDS }).ceil() as u64;
    let period =
        args.checkpoint_period.unwrap_or(if common.smoke { SMOKE_PERIOD_SECS } else { DEFAULT_PERIOD_SECS });
    let window =
        args.window_secs.unwrap_or(if common.smoke { SMOKE_WINDOW_SECS } else { DEFAULT_WINDOW_SECS });
    if window == 0 || window > seconds {
        bail!("--window-secs must be between 1 and the run's --seconds ({seconds})");
    }
    if args.batch_rows == 0 || args.batch_rows > 1_000_000 {
        bail!("--batch-rows must be between 1 and 1M");
    }
    let folders = Folders::prepare(common, "checkpoint")?;
    let mut facts = RunFacts::start(&folders.data);
    say(&format!(
        "fractaldb bench-durability checkpoint: {seconds} s of random inserts in batches of {} rows, commit_sync \
         {}, checkpoint every {period} s, cache {}, direct I/O {}, data in {}; load average {}",
        args.batch_rows,
        args.commit_sync,
        human_bytes(common.cache as f64),
        common.direct_io,
        folders.data.display(),
        facts.load_average_start,
    ));
    wipe(&folders.data)?;
    let mut child =
        DurabilityChildArgs::new(Job::Checkpoint, EngineKind::Fractaldb, folders.data.clone(), common);
    child.duration_ms = seconds * 1000;
    child.batch_rows = args.batch_rows;
    child.commit_sync = args.commit_sync;
    child.checkpoint_period_ms = millis(period);

    let mut series: Vec<Second> = Vec::new();
    let mut checkpoints: Vec<Checkpoint> = Vec::new();
    let mut settings = String::new();
    let mut result: Option<Line> = None;
    let outcome = drive(&folders.exe, &child, "checkpoint", &mut |line| {
        match line.kind.as_str() {
            "settings" => settings = line.text("text").to_string(),
            "second" => {
                series.push(Second {
                    at_us: line.u64("at_us")?,
                    rows: line.u64("rows")?,
                    max_write_us: line.u64("max_write_us")?,
                });
                let n = series.len();
                if n.is_multiple_of(10) {
                    let last = &series[n - 10..];
                    let rows: u64 = last.iter().map(|s| s.rows).sum();
                    let span = last[9].at_us - if n > 10 { series[n - 11].at_us } else { 0 };
                    say(&format!(
                        "[checkpoint] {:>5} s: {:>10} rows/s over the last 10 s, longest write {:.1} ms",
                        n,
                        group_digits((rows as f64 * 1e6 / span.max(1) as f64).round() as u64),
                        last.iter().map(|s| s.max_write_us).max().unwrap_or(0) as f64 / 1000.0
                    ));
                }
            }
            "checkpoint" => {
                let c = Checkpoint { end_us: line.u64("end_us")?, duration_us: line.u64("duration_us")? };
                say(&format!(
                    "[checkpoint] checkpoint {} ran from {:.1} s to {:.1} s ({:.2} s)",
                    checkpoints.len() + 1,
                    secs(c.start_us()),
                    secs(c.end_us),
                    secs(c.duration_us)
                ));
                checkpoints.push(c);
            }
            "result" => result = Some(line.clone()),
            _ => {}
        }
        Ok(Flow::Continue)
    });
    facts.finish();
    let failure = match (&outcome, &result) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), None) => Some("the process ended without a result".to_string()),
        _ => None,
    };
    // The first checkpoint period is the warm-up: the tree still fits in the cache.
    let analysis = analyse(&series, &checkpoints, window as usize, period.ceil() as usize);
    let seconds_csv = folders.write("checkpoint-seconds.csv", &seconds_csv(&series, &analysis))?;
    let durations_csv = folders.write("checkpoint-durations.csv", &durations_csv(&checkpoints))?;
    let md_text = checkpoint_md(&Report {
        facts: &facts,
        args: &args,
        seconds,
        period,
        window,
        settings: &settings,
        series: &series,
        checkpoints: &checkpoints,
        analysis: &analysis,
        result: result.as_ref(),
        failure: failure.as_deref(),
    });
    let md = folders.write("checkpoint.md", &md_text)?;
    say("");
    say(&md_text);
    say(&format!("Wrote {}, {} and {}", seconds_csv.display(), durations_csv.display(), md.display()));
    if let Some(f) = failure {
        bail!("the checkpoint run failed: {f}; what it measured is in {}", folders.out.display());
    }
    Ok(())
}

fn seconds_csv(series: &[Second], a: &Analysis) -> String {
    let mut out = String::from("second,end_s,rows,rows_per_s,max_write_ms,in_checkpoint\n");
    for (i, s) in series.iter().enumerate() {
        let _ = writeln!(
            out,
            "{},{:.3},{},{:.1},{:.3},{}",
            i + 1,
            secs(s.at_us),
            s.rows,
            a.rates[i],
            s.max_write_us as f64 / 1000.0,
            u8::from(a.in_checkpoint[i])
        );
    }
    out
}

fn durations_csv(checkpoints: &[Checkpoint]) -> String {
    let mut out = String::from("checkpoint,start_s,end_s,duration_s\n");
    for (i, c) in checkpoints.iter().enumerate() {
        let _ = writeln!(
            out,
            "{},{:.3},{:.3},{:.3}",
            i + 1,
            secs(c.start_us()),
            secs(c.end_us),
            secs(c.duration_us)
        );
    }
    out
}

struct Report<'a> {
    facts: &'a RunFacts,
    args: &'a CheckpointArgs,
    seconds: u64,
    period: f64,
    window: u64,
    settings: &'a str,
    series: &'a [Second],
    checkpoints: &'a [Checkpoint],
    analysis: &'a Analysis,
    result: Option<&'a Line>,
    failure: Option<&'a str>,
}

fn checkpoint_md(r: &Report<'_>) -> String {
    let a = r.analysis;
    let common = &r.args.common;
    let mut out = r.facts.markdown_head(
        "fractaldb bench-durability checkpoint",
        &[
            ("what", "one thread inserting random rows (8-byte key, 100-byte value) in WriteBatches".into()),
            ("seconds", r.seconds.to_string()),
            ("rows per batch", group_digits(r.args.batch_rows)),
            ("commit_sync", r.args.commit_sync.to_string()),
            ("checkpoint period", format!("{} s", r.period)),
            ("window", format!("{} s, sliding by 1 s", r.window)),
            ("cache", human_bytes(common.cache as f64)),
            ("direct I/O", common.direct_io.to_string()),
            ("seed", common.seed.to_string()),
        ],
    );
    let _ = writeln!(
        out,
        "\n## Settings\n\n- **fractaldb**: {}",
        if r.settings.is_empty() { "-" } else { r.settings }
    );
    let rows: u64 = r.series.iter().map(|s| s.rows).sum();
    let rate = |v: f64| group_digits(v.round() as u64);
    let opt_rate = |v: Option<f64>| v.map_or("-".to_string(), rate);
    let verdict = if a.windows.is_empty() {
        "-".to_string()
    } else if a.ratio >= GOAL {
        format!("{:.3} (goal >= {GOAL}: met)", a.ratio)
    } else {
        format!("{:.3} (goal >= {GOAL}: NOT met)", a.ratio)
    };
    let _ = writeln!(out, "\n## Results\n\n| figure | value |\n|---|---:|");
    let mut figures: Vec<(String, String)> = vec![
        ("rows in the buckets".into(), group_digits(rows)),
        ("raw bytes in the buckets".into(), human_bytes((rows * ROW_BYTES) as f64)),
        (
            "mean rows/s".into(),
            rate(rows as f64 * 1e6 / r.series.last().map_or(1, |s| s.at_us.max(1)) as f64),
        ),
        (format!("slowest {} s window, rows/s", r.window), rate(a.min_window)),
        ("... starting at second".to_string(), a.min_window_at.to_string()),
        (format!("median {} s window, rows/s", r.window), rate(a.median_window)),
        ("**slowest / median window**".into(), format!("**{verdict}**")),
        (
            format!("slowest window / median of windows within {LOCAL_SPAN_SECS} s"),
            format!("{:.3}", a.local_ratio),
        ),
        ("... at second".into(), a.local_ratio_at.to_string()),
        (
            format!("slowest / median window, windows starting after the first {} s (warm-up)", r.period),
            a.ratio_after_warmup.map_or("-".into(), |v| format!("{v:.3}")),
        ),
        (
            "**worst checkpoint: slowest window holding it / median of checkpoint-free windows within 60 s**"
                .into(),
            a.dips
                .iter()
                .filter_map(|d| d.window_ratio)
                .reduce(f64::min)
                .map_or("-".into(), |v| format!("**{v:.3}**")),
        ),
        (
            "worst checkpoint: its seconds' rate / median of checkpoint-free seconds within 30 s".into(),
            a.dips
                .iter()
                .filter_map(|d| d.second_ratio)
                .reduce(f64::min)
                .map_or("-".into(), |v| format!("{v:.3}")),
        ),
        ("slowest 1 s bucket, rows/s".into(), rate(a.min_second)),
        ("median 1 s bucket, rows/s".into(), rate(a.median_second)),
        ("mean rows/s of seconds with a checkpoint running".into(), opt_rate(a.mean_in_checkpoint)),
        ("mean rows/s of seconds without".into(), opt_rate(a.mean_outside)),
        (
            "longest write call while a checkpoint ran".into(),
            format!("{:.1} ms", a.max_write_in_checkpoint_us as f64 / 1000.0),
        ),
        ("longest write call otherwise".into(), format!("{:.1} ms", a.max_write_outside_us as f64 / 1000.0)),
        (
            "**longest write call while a checkpoint ran / otherwise** (goal <= 2)".into(),
            match a.max_write_outside_us {
                0 => "-".into(),
                o => format!("**{:.2}**", a.max_write_in_checkpoint_us as f64 / o as f64),
            },
        ),
        ("checkpoints seen ending during the run".into(), r.checkpoints.len().to_string()),
    ];
    if let Some(l) = r.result {
        let us = |k: &str| l.u64(k).map_or("-".to_string(), |v| format!("{:.1} ms", v as f64 / 1000.0));
        let n = |k: &str| l.u64(k).map_or("-".to_string(), group_digits);
        let b = |k: &str| l.u64(k).map_or("-".to_string(), |v| human_bytes(v as f64));
        figures.extend([
            ("write call latency p50".to_string(), us("p50_write_us")),
            ("write call latency p99".to_string(), us("p99_write_us")),
            ("write call latency max".to_string(), us("max_write_us")),
            ("log fsyncs".to_string(), n("log_fsyncs")),
            ("log bytes written".to_string(), b("log_bytes")),
            ("cache misses".to_string(), n("cache_misses")),
            ("cache evictions".to_string(), n("cache_evictions")),
            ("cache write-backs".to_string(), n("cache_write_backs")),
            ("cache client waits".to_string(), n("cache_client_waits")),
            (
                "close (final checkpoint) seconds".to_string(),
                l.u64("close_us").map_or("-".into(), |v| format!("{:.2}", secs(v))),
            ),
            ("bytes on disk after close".to_string(), b("disk_bytes")),
            (
                "CPU seconds (whole process)".to_string(),
                l.u64("cpu_us").map_or("-".into(), |v| format!("{:.1}", secs(v))),
            ),
            (
                "bytes read / written (/proc/self/io)".to_string(),
                format!("{} / {}", b("read_bytes"), b("write_bytes")),
            ),
        ]);
    }
    for (k, v) in figures {
        let _ = writeln!(out, "| {k} | {v} |");
    }
    let _ = writeln!(
        out,
        "\n## Checkpoints\n\n| # | start s | end s | seconds | its seconds' rate / neighbours' | slowest \
         window holding it / neighbours' | longest write call then |\n|---:|---:|---:|---:|---:|---:|---:|"
    );
    let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for (i, c) in r.checkpoints.iter().enumerate() {
        let dip = a.dips.get(i).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.2} | {} | {} | {:.0} ms |",
            i + 1,
            secs(c.start_us()),
            secs(c.end_us),
            secs(c.duration_us),
            ratio(dip.second_ratio),
            ratio(dip.window_ratio),
            dip.longest_write_us as f64 / 1000.0,
        );
    }
    if let Some(l) = r.result {
        let _ = writeln!(
            out,
            "\nEvery checkpoint's length as `env.checkpoint_durations()` gives it at the end: {}",
            l.text("durations_s")
        );
    }
    let _ = writeln!(
        out,
        "\n## {w} s windows (non-overlapping)\n\n| from s | rows/s | / median | checkpoint running |\n|---:|---:|---:|---|",
        w = r.window
    );
    let w = r.window as usize;
    for start in (0..a.windows.len()).step_by(w.max(1)) {
        let ckpt = a.in_checkpoint[start..start + w].iter().filter(|&&c| c).count();
        let _ = writeln!(
            out,
            "| {start} | {} | {:.2} | {} |",
            rate(a.windows[start]),
            if a.median_window > 0.0 { a.windows[start] / a.median_window } else { 0.0 },
            if ckpt == 0 { String::new() } else { format!("{ckpt} of {w} s") }
        );
    }
    let _ = writeln!(
        out,
        "\nNotes: a bucket is the rows whose write call returned within that second, divided by the bucket's \
         measured length; windows are {w} consecutive buckets. A bucket counts as \"with a checkpoint running\" \
         if it overlaps [end - duration, end] of a checkpoint; the end is when the sampler (polling every 50 ms) \
         saw the duration appear in `env.checkpoint_durations()`. The first windows are faster than the rest while \
         the tree still fits in the cache, and the rate keeps falling slowly as the tree grows; the local ratio, \
         the ratio after the warm-up and the per-checkpoint ratios (against checkpoint-free neighbours only) \
         separate dips from that trend. The final checkpoint at close is timed separately and is not in the \
         series."
    );
    if let Some(f) = r.failure {
        let _ = writeln!(out, "\n## Failure\n\n{f}");
    }
    out
}

// ---------------------------------------------------------------------------
// The child.

/// Reads the row counter at each whole second from `start` and reports it,
/// and reports each checkpoint as it ends; sets `stop` after the last second.
fn sample(
    env: &Env,
    start: Instant,
    total_seconds: u64,
    rows: &AtomicU64,
    max_write_us: &AtomicU64,
    stop: &AtomicBool,
) {
    let mut next = 1u64;
    let mut last_rows = 0;
    let mut seen = env.checkpoint_durations().len();
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let due = start + Duration::from_secs(next);
        let now = Instant::now();
        if now < due {
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
        let durations = env.checkpoint_durations();
        for d in durations.iter().skip(seen) {
            send(
                "checkpoint",
                &[
                    ("end_us", (start.elapsed().as_micros() as u64).to_string()),
                    ("duration_us", (d.as_micros() as u64).to_string()),
                ],
            );
        }
        seen = seen.max(durations.len());
        let now = Instant::now();
        if now >= due {
            let r = rows.load(Ordering::Relaxed);
            let m = max_write_us.swap(0, Ordering::Relaxed);
            send(
                "second",
                &[
                    ("at_us", (now.duration_since(start).as_micros() as u64).to_string()),
                    ("rows", (r - last_rows).to_string()),
                    ("max_write_us", m.to_string()),
                ],
            );
            last_rows = r;
            if next >= total_seconds {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            next += 1;
        }
    }
}

/// Inserts until `stop`; returns every write call's latency in microseconds.
fn write_until_stopped(
    dict: &Dictionary,
    inserter: &mut Inserter,
    rows: &AtomicU64,
    max_write_us: &AtomicU64,
    stop: &AtomicBool,
) -> Result<Vec<u32>> {
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let took = inserter.write(dict)?;
        let us = took.as_micros() as u64;
        max_write_us.fetch_max(us, Ordering::Relaxed);
        rows.fetch_add(inserter.batch_rows, Ordering::Relaxed);
        latencies.push(u32::try_from(us).unwrap_or(u32::MAX));
    }
    Ok(latencies)
}

/// `bench-durability-child --job checkpoint`.
pub fn child(args: &DurabilityChildArgs) -> Result<()> {
    let total_seconds = args.duration_ms.div_ceil(1000).max(1);
    let (env, settings) = args.open_fractal()?;
    send("settings", &[("text", settings)]);
    let dict = env
        .create_dictionary("insert", fractal::dict_options())
        .context(|| format!("creating a dictionary in {}", args.dir.display()))?;
    let mut inserter = Inserter::new(args.seed, args.batch_rows);
    let (rows, max_write_us, stop) = (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
    let log_before = env.stats().log;
    let before = sys::ProcessCounters::now()?;
    let start = Instant::now();
    let written = std::thread::scope(|s| {
        let sampler = s.spawn(|| sample(&env, start, total_seconds, &rows, &max_write_us, &stop));
        let written = write_until_stopped(&dict, &mut inserter, &rows, &max_write_us, &stop);
        // If the writer failed, the sampler stops too.
        stop.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        written
    });
    let elapsed = start.elapsed();
    let mut latencies = written?;
    latencies.sort_unstable();
    let durations: Vec<String> =
        env.checkpoint_durations().iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect();
    let stats = env.stats();
    // Where each checkpoint's time went (to the console: writers wait only
    // during lock_wait and exclusive).
    for (i, t) in env.checkpoint_timings().iter().enumerate() {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "[checkpoint] #{}: total {:.1} ms = lock wait {:.1} + exclusive {:.1} + log fsync {:.1} + writes {:.1} \
             (of which paced sleeping {:.1})",
            i + 1,
            ms(t.total),
            ms(t.lock_wait),
            ms(t.exclusive),
            ms(t.log_sync),
            ms(t.write),
            ms(t.paced)
        );
    }
    let close_start = Instant::now();
    drop(dict);
    env.close()?;
    let close_us = close_start.elapsed().as_micros() as u64;
    let counted = sys::ProcessCounters::now()?.since(&before);
    let disk = sys::dir_usage(&args.dir)?;
    send(
        "result",
        &[
            ("rows", inserter.next_row.to_string()),
            ("elapsed_us", (elapsed.as_micros() as u64).to_string()),
            ("p50_write_us", quantile(&latencies, 0.5).to_string()),
            ("p99_write_us", quantile(&latencies, 0.99).to_string()),
            ("max_write_us", latencies.last().copied().unwrap_or(0).to_string()),
            ("log_fsyncs", (stats.log.fsyncs - log_before.fsyncs).to_string()),
            ("log_bytes", (stats.log.bytes - log_before.bytes).to_string()),
            ("cache_misses", stats.cache.misses.to_string()),
            ("cache_evictions", stats.cache.evictions.to_string()),
            ("cache_write_backs", stats.cache.write_backs.to_string()),
            ("cache_client_waits", stats.cache.client_waits.to_string()),
            ("durations_s", if durations.is_empty() { "none".into() } else { durations.join(", ") }),
            ("close_us", close_us.to_string()),
            ("disk_bytes", disk.allocated_bytes.to_string()),
            ("cpu_us", counted.cpu_us.to_string()),
            ("read_bytes", counted.read_bytes.to_string()),
            ("write_bytes", counted.write_bytes.to_string()),
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_finds_the_dip_and_the_checkpoint_seconds() {
        // 30 seconds at 1000 rows/s, with seconds 20..=22 at 100 rows/s during a checkpoint.
        let series: Vec<Second> = (1..=30u64)
            .map(|t| Second {
                at_us: t * 1_000_000,
                rows: if (20..=22).contains(&t) { 100 } else { 1000 },
                max_write_us: t,
            })
            .collect();
        let checkpoints = [Checkpoint { end_us: 22_000_000, duration_us: 2_500_000 }];
        let a = analyse(&series, &checkpoints, 10, 0);
        assert_eq!(a.windows.len(), 21);
        // 8 windows hold all three slow seconds, 2 hold two, 1 holds one, 10 hold none.
        assert!((a.median_window - 910.0).abs() < 1e-9, "{}", a.median_window);
        assert!((a.min_window - (7000.0 + 300.0) / 10.0).abs() < 1e-9);
        assert!(a.ratio < 1.0 && a.ratio > 0.5, "{}", a.ratio);
        assert_eq!(a.in_checkpoint.iter().filter(|&&c| c).count(), 3);
        assert!(a.in_checkpoint[19] && a.in_checkpoint[21] && !a.in_checkpoint[18] && !a.in_checkpoint[22]);
        assert_eq!(a.mean_in_checkpoint, Some(100.0));
        assert_eq!(a.mean_outside, Some(1000.0));
        assert_eq!(a.max_write_in_checkpoint_us, 22);
        assert_eq!(a.min_second, 100.0);
        // The dip: its 3 seconds at 100 against 1000 around; its slowest window (730) against the
        // checkpoint-free windows (1000).
        assert_eq!(a.dips.len(), 1);
        assert!((a.dips[0].second_ratio.unwrap() - 0.1).abs() < 1e-9, "{:?}", a.dips);
        assert!((a.dips[0].window_ratio.unwrap() - 0.73).abs() < 1e-9, "{:?}", a.dips);
        assert_eq!(a.dips[0].longest_write_us, 23);
        assert!((a.ratio_after_warmup.unwrap() - a.ratio).abs() < 1e-9);
        // Windows from second 19 on: 730 and 820.
        let after = analyse(&series, &checkpoints, 10, 19);
        assert!((after.ratio_after_warmup.unwrap() - 730.0 / 775.0).abs() < 1e-9, "{after:?}");
        let none = analyse(&series[..5], &[], 10, 0);
        assert!(none.windows.is_empty() && none.ratio == 0.0 && none.dips.is_empty());
    }
}
