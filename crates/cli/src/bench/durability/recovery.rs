//! `bench-durability recovery`: how long `Env::open` takes after a crash.
//!
//! A child process loads random rows (default 4 GiB of raw row data) with
//! periodic checkpoints, waits for the next checkpoint to end, keeps writing
//! for one more checkpoint period (less a small margin, so the next
//! checkpoint has not begun: the log then holds a full period of writes),
//! says it is ready, and goes on writing until the parent SIGKILLs it. The
//! parent measures the log files left behind, then a new process times
//! `Env::open` (which replays the log and takes a checkpoint) and checks that
//! every row the killed writer had made durable is there, with its value.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::{ArgAction, Args};
use fractaldb::Env;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{
    drive, fractal, millis, note, parse_count, parse_seconds, parse_size, say, secs, send, sys, wipe,
    CommonArgs, DurabilityChildArgs, Ended, Flow, Folders, Inserter, Job, Line, RunFacts, ROW_BYTES,
};
use crate::bail;
use crate::bench::engines::EngineKind;
use crate::bench::report::{group_digits, human_bytes};
use crate::bench::workloads::{RowGen, VALUE_BYTES};
use crate::error::{Context, Error, Result};

const DEFAULT_SIZE: u64 = 4 << 30;
const SMOKE_SIZE: u64 = 4 << 20;
const DEFAULT_PERIOD_SECS: f64 = 60.0;
const SMOKE_PERIOD_SECS: f64 = 1.0;
/// The writer says it is ready this long before the next checkpoint is due
/// (at most; a tenth of the period if that is less).
const MAX_MARGIN: Duration = Duration::from_secs(2);
/// A writer not killed this long after saying it is ready gives up.
const KILL_TIMEOUT: Duration = Duration::from_secs(120);
/// Random durable rows checked after the reopen, besides the last one.
const SAMPLE_ROWS: u64 = 1000;
/// At most this many rows past the durable ones are probed.
const MAX_PROBE_ROWS: u64 = 1_000_000;
/// The dictionary's name.
const DICT: &str = "insert";

/// Options of `bench-durability recovery`.
#[derive(Args, Debug)]
pub struct RecoveryArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Raw row data to load before the final checkpoint period, e.g. 2GiB [default: 4GiB; 4MiB with --smoke].
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub size: Option<u64>,

    /// Seconds between checkpoints (EnvOptions::checkpoint_period) [default: 60; 1 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub checkpoint_period: Option<f64>,

    /// Rows per WriteBatch.
    #[arg(long, value_parser = parse_count, default_value = "1000", value_name = "N")]
    pub batch_rows: u64,

    /// Every batch durable when it returns (EnvOptions::commit_sync); false: the log is fsynced every second.
    #[arg(long, action = ArgAction::Set, default_value_t = true, value_name = "true|false")]
    pub commit_sync: bool,

    /// Empty the OS page cache (needs root) before the reopen, as after a power loss rather than a process kill.
    #[arg(long)]
    pub drop_caches: bool,
}

/// The files the killed writer left.
#[derive(Clone, Copy, Debug, Default)]
struct Leftovers {
    log_files: u64,
    log_bytes: u64,
    /// Everything else in the folder (dictionary files, catalog), by length.
    other_file_bytes: u64,
    /// The whole folder, by allocated blocks.
    allocated_bytes: u64,
}

fn leftovers(dir: &Path) -> Result<Leftovers> {
    let mut l = Leftovers::default();
    for entry in std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))? {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        let meta = entry.metadata().context(|| format!("stat {}", entry.path().display()))?;
        if !meta.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("log-") && name.ends_with(".fdl") {
            l.log_files += 1;
            l.log_bytes += meta.len();
        } else {
            l.other_file_bytes += meta.len();
        }
    }
    l.allocated_bytes = sys::dir_usage(dir)?.allocated_bytes;
    Ok(l)
}

/// Writes dirty pages and empties the OS page cache.
fn drop_page_cache() -> Result<()> {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .context(|| "--drop-caches: writing 3 to /proc/sys/vm/drop_caches (needs root)".to_string())
}

/// `bench-durability recovery`.
pub fn run(args: RecoveryArgs) -> Result<()> {
    let common = &args.common;
    let size = args.size.unwrap_or(if common.smoke { SMOKE_SIZE } else { DEFAULT_SIZE });
    if size < ROW_BYTES {
        bail!("--size must be at least {ROW_BYTES} bytes (one row)");
    }
    let period =
        args.checkpoint_period.unwrap_or(if common.smoke { SMOKE_PERIOD_SECS } else { DEFAULT_PERIOD_SECS });
    if args.batch_rows == 0 || args.batch_rows > 1_000_000 {
        bail!("--batch-rows must be between 1 and 1M");
    }
    let folders = Folders::prepare(common, "recovery")?;
    let mut facts = RunFacts::start(&folders.data);
    say(&format!(
        "fractaldb bench-durability recovery: load {} of raw rows in batches of {} rows (commit_sync {}), \
         checkpoint every {period} s, keep writing one more period, SIGKILL, reopen; cache {}, direct I/O {}, \
         data in {}; load average {}",
        human_bytes(size as f64),
        args.batch_rows,
        args.commit_sync,
        human_bytes(common.cache as f64),
        common.direct_io,
        folders.data.display(),
        facts.load_average_start,
    ));
    if let Some((free, _)) = sys::disk_free(folders.data.parent().unwrap_or(&folders.data)) {
        // Compressed data is about half the raw size, plus log and slack.
        if free < size + (1 << 30) {
            say(&format!("warning: only {} free on the data folder's disk", human_bytes(free as f64)));
        }
    }
    wipe(&folders.data)?;

    // 1. Load and kill.
    let mut child =
        DurabilityChildArgs::new(Job::RecoveryLoad, EngineKind::Fractaldb, folders.data.clone(), common);
    child.batch_rows = args.batch_rows;
    child.commit_sync = args.commit_sync;
    child.checkpoint_period_ms = millis(period);
    child.load_bytes = size;
    let mut settings = String::new();
    let mut ready: Option<Line> = None;
    let ended = drive(&folders.exe, &child, "recovery load", &mut |line| {
        Ok(match line.kind.as_str() {
            "settings" => {
                settings = line.text("text").to_string();
                Flow::Continue
            }
            "ready" => {
                ready = Some(line.clone());
                Flow::Kill
            }
            _ => Flow::Continue,
        })
    })
    .context(|| "the loading process".to_string())?;
    let killed_at = Instant::now();
    let ready = match (ended, ready) {
        (Ended::Killed, Some(r)) => r,
        _ => bail!("the loading process ended on its own instead of waiting to be killed"),
    };
    let durable_rows = ready.u64("durable_rows")?;
    let left = leftovers(&folders.data)?;
    say(&format!(
        "[recovery] killed the writer (SIGKILL) with {} rows acknowledged ({} durable); left {} log file(s) \
         holding {}, other files {}, {} allocated in all",
        group_digits(ready.u64("rows_acked")?),
        group_digits(durable_rows),
        left.log_files,
        human_bytes(left.log_bytes as f64),
        human_bytes(left.other_file_bytes as f64),
        human_bytes(left.allocated_bytes as f64),
    ));
    if args.drop_caches {
        drop_page_cache()?;
        say("[recovery] dropped the OS page cache");
    }
    let load_average_before_open = sys::load_average();

    // 2. Reopen.
    let mut open_child = child.clone();
    open_child.job = Job::RecoveryOpen;
    open_child.verify_rows = durable_rows;
    let mut opened: Option<Line> = None;
    let reopen = drive(&folders.exe, &open_child, "recovery open", &mut |line| {
        if line.kind == "result" {
            opened = Some(line.clone());
        }
        Ok(Flow::Continue)
    });
    let since_kill = killed_at.elapsed();
    facts.finish();
    let failure = match (&reopen, &opened) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), None) => Some("the reopening process ended without a result".to_string()),
        _ => None,
    };
    let report = Report {
        facts: &facts,
        args: &args,
        size,
        period,
        settings: &settings,
        ready: &ready,
        left,
        load_average_before_open: &load_average_before_open,
        opened: opened.as_ref(),
        failure: failure.as_deref(),
    };
    let csv = folders.write("recovery.csv", &recovery_csv(&report))?;
    let md_text = recovery_md(&report);
    let md = folders.write("recovery.md", &md_text)?;
    say("");
    say(&md_text);
    say(&format!(
        "Wrote {} and {} ({:.1} s from the kill to the end)",
        csv.display(),
        md.display(),
        since_kill.as_secs_f64()
    ));
    if let Some(f) = failure {
        bail!("the reopen failed: {f}");
    }
    Ok(())
}

struct Report<'a> {
    facts: &'a RunFacts,
    args: &'a RecoveryArgs,
    size: u64,
    period: f64,
    settings: &'a str,
    ready: &'a Line,
    left: Leftovers,
    load_average_before_open: &'a str,
    opened: Option<&'a Line>,
    failure: Option<&'a str>,
}

/// (column, value) pairs of the run, in the order of recovery.csv.
fn figures(r: &Report<'_>) -> Vec<(&'static str, String)> {
    let ready = |k: &str| r.ready.fields.get(k).cloned().unwrap_or_default();
    let opened = |k: &str| r.opened.and_then(|l| l.fields.get(k).cloned()).unwrap_or_default();
    let seconds = |v: String| v.parse::<u64>().map_or(String::new(), |us| format!("{:.3}", secs(us)));
    let open_us = r.opened.and_then(|l| l.opt_u64("open_us"));
    let ckpt_us = r.opened.and_then(|l| l.opt_u64("recovery_checkpoint_us"));
    let replay_s = match (open_us, ckpt_us) {
        (Some(o), Some(c)) => format!("{:.3}", secs(o.saturating_sub(c))),
        _ => String::new(),
    };
    vec![
        ("load_bytes", r.size.to_string()),
        ("loaded_rows", ready("loaded_rows")),
        ("load_s", seconds(ready("load_us"))),
        ("rows_acked_at_ready", ready("rows_acked")),
        ("durable_rows", ready("durable_rows")),
        ("tail_s", seconds(ready("tail_us"))),
        ("checkpoints_before_kill", ready("checkpoints")),
        ("log_files", r.left.log_files.to_string()),
        ("log_bytes", r.left.log_bytes.to_string()),
        ("data_file_bytes", r.left.other_file_bytes.to_string()),
        ("folder_allocated_bytes", r.left.allocated_bytes.to_string()),
        ("open_s", seconds(opened("open_us"))),
        ("recovery_checkpoint_s", seconds(opened("recovery_checkpoint_us"))),
        ("replay_s", replay_s),
        ("rows_checked", opened("rows_checked")),
        ("rows_past_durable", opened("rows_past_durable")),
        ("verify_s", seconds(opened("verify_us"))),
        ("close_s", seconds(opened("close_us"))),
        ("disk_bytes_after", opened("disk_bytes")),
        ("dropped_page_cache", r.args.drop_caches.to_string()),
    ]
}

fn recovery_csv(r: &Report<'_>) -> String {
    let f = figures(r);
    let header: Vec<&str> = f.iter().map(|(k, _)| *k).collect();
    let values: Vec<&str> = f.iter().map(|(_, v)| v.as_str()).collect();
    format!("{}\n{}\n", header.join(","), values.join(","))
}

fn recovery_md(r: &Report<'_>) -> String {
    let common = &r.args.common;
    let mut out = r.facts.markdown_head(
        "fractaldb bench-durability recovery",
        &[
            (
                "load",
                format!("{} of raw rows (8-byte random key, 100-byte value)", human_bytes(r.size as f64)),
            ),
            ("rows per batch", group_digits(r.args.batch_rows)),
            ("commit_sync", r.args.commit_sync.to_string()),
            ("checkpoint period", format!("{} s", r.period)),
            ("cache", human_bytes(common.cache as f64)),
            ("direct I/O", common.direct_io.to_string()),
            ("page cache dropped before the reopen", r.args.drop_caches.to_string()),
            ("load average just before the reopen", r.load_average_before_open.to_string()),
            ("seed", common.seed.to_string()),
        ],
    );
    let _ = writeln!(
        out,
        "\n## Settings\n\n- **fractaldb**: {}",
        if r.settings.is_empty() { "-" } else { r.settings }
    );
    let f: std::collections::BTreeMap<&str, String> = figures(r).into_iter().collect();
    let get = |k: &str| f.get(k).cloned().filter(|v| !v.is_empty()).unwrap_or_else(|| "-".into());
    let num = |k: &str| f.get(k).and_then(|v| v.parse::<u64>().ok()).map_or("-".into(), group_digits);
    let bytes =
        |k: &str| f.get(k).and_then(|v| v.parse::<u64>().ok()).map_or("-".into(), |b| human_bytes(b as f64));
    let load_s: Option<f64> = f.get("load_s").and_then(|v| v.parse().ok());
    let loaded: Option<u64> = f.get("loaded_rows").and_then(|v| v.parse().ok());
    let log_mb_per_s = match (f.get("replay_s").and_then(|v| v.parse::<f64>().ok()), r.left.log_bytes) {
        (Some(s), b) if s > 0.0 => format!("{:.1} MiB/s", b as f64 / s / (1 << 20) as f64),
        _ => "-".into(),
    };
    let rows: Vec<(&str, String)> = vec![
        ("rows loaded", num("loaded_rows")),
        ("load seconds", get("load_s")),
        (
            "load rows/s",
            match (load_s, loaded) {
                (Some(s), Some(n)) if s > 0.0 => group_digits((n as f64 / s).round() as u64),
                _ => "-".into(),
            },
        ),
        ("seconds written after the last checkpoint ended (tail)", get("tail_s")),
        ("rows acknowledged when the writer said ready", num("rows_acked_at_ready")),
        ("rows known durable at the kill (checked after the reopen)", num("durable_rows")),
        ("checkpoints before the kill", get("checkpoints_before_kill")),
        ("checkpoint lengths before the kill, s", r.ready.text("durations_s").to_string()),
        ("log files at the kill", get("log_files")),
        ("**log bytes replayed** (log-*.fdl at the kill)", format!("**{}**", bytes("log_bytes"))),
        ("other files (dictionary, catalog), by length", bytes("data_file_bytes")),
        ("folder on disk, allocated", bytes("folder_allocated_bytes")),
        ("**Env::open seconds**", format!("**{}**", get("open_s"))),
        ("... of which the checkpoint at the end of recovery", get("recovery_checkpoint_s")),
        ("... so replay took about", get("replay_s")),
        ("log replay rate", log_mb_per_s),
        ("rows checked after the reopen (the last durable one, a sample, then onwards)", num("rows_checked")),
        ("rows found past the durable ones (written between ready and the kill)", num("rows_past_durable")),
        ("verify seconds", get("verify_s")),
        ("close seconds after the reopen", get("close_s")),
        ("folder on disk after close", bytes("disk_bytes_after")),
    ];
    let _ = writeln!(out, "\n## Results\n\n| figure | value |\n|---|---:|");
    for (k, v) in rows {
        let _ = writeln!(out, "| {k} | {v} |");
    }
    let _ = writeln!(
        out,
        "\nNotes: the writer reports \"ready\" one checkpoint period less a margin of min(2 s, period/10) \
         after the checkpoint that ended last, i.e. shortly before the next one is due, and keeps writing; the \
         parent kills it with SIGKILL on reading that line. A process kill leaves the OS page cache warm{}. \
         `Env::open` is timed in a fresh process; with anything replayed it ends with a checkpoint, whose \
         length `env.checkpoint_durations()` gives.",
        if r.args.drop_caches {
            "; this run dropped it before the reopen"
        } else {
            " (this run did not drop it)"
        },
    );
    if let Some(f) = r.failure {
        let _ = writeln!(out, "\n## Failure\n\n{f}");
    }
    out
}

// ---------------------------------------------------------------------------
// The children.

/// `bench-durability-child --job recovery-load`: load, wait for a checkpoint,
/// write one more period, say "ready", write until killed.
pub fn load_child(args: &DurabilityChildArgs) -> Result<()> {
    if args.checkpoint_period_ms == 0 {
        bail!("recovery needs a checkpoint period");
    }
    let period = Duration::from_millis(args.checkpoint_period_ms);
    let margin = MAX_MARGIN.min(period / 10);
    let fsync_period = Duration::from_millis(args.fractal_options()?.fsync_log_period_ms);
    let (env, settings) = args.open_fractal()?;
    send("settings", &[("text", settings)]);
    let dict = env
        .create_dictionary(DICT, fractal::dict_options())
        .context(|| format!("creating a dictionary in {}", args.dir.display()))?;
    let target_rows = args.load_bytes.div_ceil(ROW_BYTES);
    let mut w = Inserter::new(args.seed, args.batch_rows);
    // (when, rows acknowledged by then), every 100 ms over the last minute:
    // without commit_sync, rows acknowledged an fsync period (plus slack)
    // before the kill are durable.
    let mut history: VecDeque<(Instant, u64)> = VecDeque::new();
    let remember = |w: &Inserter, history: &mut VecDeque<(Instant, u64)>| {
        let now = Instant::now();
        if history.back().is_none_or(|&(t, _)| now - t >= Duration::from_millis(100)) {
            history.push_back((now, w.next_row));
            while history.front().is_some_and(|&(t, _)| now - t > Duration::from_secs(60)) {
                history.pop_front();
            }
        }
    };

    let start = Instant::now();
    let mut last_note = start;
    while w.next_row < target_rows {
        w.write(&dict)?;
        remember(&w, &mut history);
        if last_note.elapsed() >= Duration::from_secs(10) {
            last_note = Instant::now();
            let s = start.elapsed().as_secs_f64();
            note(format!(
                "{:>6.0} s: {} rows ({} raw, {:.0}%), {} rows/s on average, {} checkpoint(s) so far",
                s,
                group_digits(w.next_row),
                human_bytes((w.next_row * ROW_BYTES) as f64),
                100.0 * w.next_row as f64 / target_rows as f64,
                group_digits((w.next_row as f64 / s).round() as u64),
                env.checkpoint_durations().len()
            ));
        }
    }
    let loaded_rows = w.next_row;
    let load = start.elapsed();
    let checkpoints_at_load = env.checkpoint_durations().len();
    note(format!(
        "loaded {} rows ({} raw) in {:.1} s; writing on until the next checkpoint ends",
        group_digits(loaded_rows),
        human_bytes((loaded_rows * ROW_BYTES) as f64),
        load.as_secs_f64()
    ));
    while env.checkpoint_durations().len() == checkpoints_at_load {
        w.write(&dict)?;
        remember(&w, &mut history);
    }
    let checkpoint_end = Instant::now();
    let checkpoints = env.checkpoint_durations().len();
    note(format!(
        "checkpoint {checkpoints} ended; writing for {:.1} s more (one period less {:.1} s), then ready to be killed",
        (period - margin).as_secs_f64(),
        margin.as_secs_f64()
    ));
    // A checkpoint also begins once the log has grown its byte limit since
    // the last one began; the log on disk then holds about that limit
    // (the last checkpoint trimmed what came before its begin). So the
    // writer stops short of either trigger.
    let log_limit = args.fractal_options()?.resolved_checkpoint_log_bytes();
    let log_margin = (log_limit / 32).max(2 << 20);
    let mut last_look = Instant::now();
    while checkpoint_end.elapsed() < period - margin {
        w.write(&dict)?;
        remember(&w, &mut history);
        if log_limit > 0 && last_look.elapsed() >= Duration::from_millis(100) {
            last_look = Instant::now();
            if leftovers(&args.dir)?.log_bytes + log_margin >= log_limit {
                note(format!(
                    "the log is {} short of the checkpoint's log limit of {}: stopping there",
                    human_bytes(log_margin as f64),
                    human_bytes(log_limit as f64)
                ));
                break;
            }
        }
    }
    let durations = env.checkpoint_durations();
    if durations.len() != checkpoints {
        note(format!(
            "warning: {} more checkpoint(s) ended during the last period, so the log holds less than a period",
            durations.len() - checkpoints
        ));
    }
    let durable_rows = if args.commit_sync {
        w.next_row
    } else {
        let cutoff = fsync_period + Duration::from_secs(1);
        history.iter().rev().find(|&&(t, _)| t.elapsed() >= cutoff).map_or(0, |&(_, rows)| rows)
    };
    let log = env.stats().log;
    send(
        "ready",
        &[
            ("loaded_rows", loaded_rows.to_string()),
            ("load_us", (load.as_micros() as u64).to_string()),
            ("rows_acked", w.next_row.to_string()),
            ("durable_rows", durable_rows.to_string()),
            ("tail_us", (checkpoint_end.elapsed().as_micros() as u64).to_string()),
            ("checkpoints", durations.len().to_string()),
            (
                "durations_s",
                durations.iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect::<Vec<_>>().join(", "),
            ),
            ("log_bytes_written", log.bytes.to_string()),
            ("log_files_created", log.files_created.to_string()),
            ("log_files_deleted", log.files_deleted.to_string()),
        ],
    );
    // Write on until the parent kills this process.
    let ready_at = Instant::now();
    while ready_at.elapsed() < KILL_TIMEOUT {
        w.write(&dict)?;
    }
    Err(Error::new(format!(
        "the writer was not killed within {} s of saying it was ready",
        KILL_TIMEOUT.as_secs()
    )))
}

/// `bench-durability-child --job recovery-open`: time `Env::open`, check the rows, close.
pub fn open_child(args: &DurabilityChildArgs) -> Result<()> {
    let options = args.fractal_options()?;
    let start = Instant::now();
    let env =
        Env::open(&args.dir, options).context(|| format!("reopening fractaldb in {}", args.dir.display()))?;
    let open = start.elapsed();
    let recovery_checkpoint: Duration = env.checkpoint_durations().iter().sum();
    note(format!(
        "Env::open took {:.2} s (of which {:.2} s for the checkpoint that ends recovery)",
        open.as_secs_f64(),
        recovery_checkpoint.as_secs_f64()
    ));
    let dict = env.open_dictionary(DICT).context(|| format!("opening dictionary {DICT}"))?;
    let verify_start = Instant::now();
    let gen = RowGen::new(args.seed);
    let mut value = [0u8; VALUE_BYTES];
    let check = |i: u64, value: &mut [u8; VALUE_BYTES]| -> Result<bool> {
        let key = Inserter::row(&gen, i, value);
        match dict.get(&key)? {
            None => Ok(false),
            Some(v) if v == value[..] => Ok(true),
            Some(_) => Err(Error::new(format!("row {i} came back with a wrong value after recovery"))),
        }
    };
    let mut checked = 0u64;
    if args.verify_rows > 0 {
        let mut rng = SmallRng::seed_from_u64(args.seed ^ 0x5EED);
        let last = args.verify_rows - 1;
        for i in std::iter::once(last).chain((0..SAMPLE_ROWS.min(last)).map(|_| rng.gen_range(0..last))) {
            if !check(i, &mut value)? {
                bail!(
                    "row {i} is missing after recovery, though the killed writer had made rows 0..{} durable",
                    args.verify_rows
                );
            }
            checked += 1;
        }
    }
    let mut past = 0u64;
    while past < MAX_PROBE_ROWS && check(args.verify_rows + past, &mut value)? {
        past += 1;
    }
    checked += past + 1;
    let verify = verify_start.elapsed();
    let stats = env.stats();
    let close_start = Instant::now();
    drop(dict);
    env.close()?;
    let close = close_start.elapsed();
    let disk = sys::dir_usage(&args.dir)?;
    send(
        "result",
        &[
            ("open_us", (open.as_micros() as u64).to_string()),
            ("recovery_checkpoint_us", (recovery_checkpoint.as_micros() as u64).to_string()),
            ("rows_checked", checked.to_string()),
            ("rows_past_durable", past.to_string()),
            ("verify_us", (verify.as_micros() as u64).to_string()),
            ("close_us", (close.as_micros() as u64).to_string()),
            ("disk_bytes", disk.allocated_bytes.to_string()),
            ("cache_misses", stats.cache.misses.to_string()),
        ],
    );
    Ok(())
}
