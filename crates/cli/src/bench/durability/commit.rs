//! `bench-durability commit`: group-commit throughput. N threads each put
//! single rows (an 8-byte random key, a 100-byte value) as fast as they can
//! for a fixed time, every put durable when it returns: fractaldb with
//! `commit_sync` on, RocksDB with `WriteOptions::set_sync(true)`. Each engine
//! and thread count runs in a fresh folder in a process of its own.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{
    drive, fractal, millis, parse_seconds, quantile, say, secs, send, sys, wipe, CommonArgs,
    DurabilityChildArgs, Flow, Folders, Job, Line, RunFacts,
};
use crate::bail;
use crate::bench::engines::EngineKind;
use crate::bench::report::{group_digits, human_bytes};
use crate::bench::workloads::{RowGen, VALUE_BYTES};
use crate::error::{Context, Error, Result};

const DEFAULT_SECONDS: f64 = 20.0;
const SMOKE_SECONDS: f64 = 0.3;
const DEFAULT_THREADS: [u64; 3] = [1, 4, 16];
const MAX_THREADS: u64 = 1024;
/// The generator stream of the values (any constant apart from the workloads').
const VALUE_STREAM: u64 = 11;

/// Options of `bench-durability commit`.
#[derive(Args, Debug)]
pub struct CommitArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Engines, comma-separated [default: fractaldb, and rocksdb if this build has it].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ENGINE,...")]
    pub engines: Vec<EngineKind>,

    /// Writer thread counts, comma-separated; each is a run of its own [default: 1,4,16].
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub threads: Vec<u64>,

    /// Seconds of writing per engine and thread count [default: 20; 0.3 with --smoke].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS")]
    pub seconds: Option<f64>,
}

/// The figures of one engine at one thread count.
#[derive(Clone, Debug, Default)]
struct CommitRow {
    engine: String,
    threads: u64,
    elapsed_us: u64,
    commits: u64,
    /// fsyncs of the log (fractaldb) or WAL syncs (RocksDB statistics), if known.
    fsyncs: Option<u64>,
    /// Log records (fractaldb) or writes that went to the WAL (RocksDB), if known.
    log_records: Option<u64>,
    p50_us: u64,
    p99_us: u64,
    p999_us: u64,
    max_us: u64,
    cpu_us: u64,
    write_bytes: u64,
    settings: String,
    failure: Option<String>,
}

impl CommitRow {
    fn commits_per_s(&self) -> f64 {
        if self.elapsed_us == 0 {
            0.0
        } else {
            self.commits as f64 * 1e6 / self.elapsed_us as f64
        }
    }

    fn fsyncs_per_commit(&self) -> Option<f64> {
        self.fsyncs.filter(|_| self.commits > 0).map(|f| f as f64 / self.commits as f64)
    }

    /// fsyncs over the log records written, as fractaldb's counters give it.
    fn fsyncs_per_record(&self) -> Option<f64> {
        match (self.fsyncs, self.log_records) {
            (Some(f), Some(r)) if r > 0 => Some(f as f64 / r as f64),
            _ => None,
        }
    }

    fn from_line(engine: EngineKind, threads: u64, line: &Line, settings: String) -> Result<CommitRow> {
        Ok(CommitRow {
            engine: engine.name().to_string(),
            threads,
            elapsed_us: line.u64("elapsed_us")?,
            commits: line.u64("commits")?,
            fsyncs: line.opt_u64("fsyncs"),
            log_records: line.opt_u64("log_records"),
            p50_us: line.u64("p50_us")?,
            p99_us: line.u64("p99_us")?,
            p999_us: line.u64("p999_us")?,
            max_us: line.u64("max_us")?,
            cpu_us: line.u64("cpu_us")?,
            write_bytes: line.u64("write_bytes")?,
            settings,
            failure: None,
        })
    }
}

/// `bench-durability commit`.
pub fn run(args: CommitArgs) -> Result<()> {
    let common = &args.common;
    let mut engines = if args.engines.is_empty() {
        vec![EngineKind::Fractaldb, EngineKind::Rocksdb].into_iter().filter(|e| e.is_built()).collect()
    } else {
        args.engines.clone()
    };
    engines.sort();
    engines.dedup();
    if let Some(other) = engines.iter().find(|e| !matches!(e, EngineKind::Fractaldb | EngineKind::Rocksdb)) {
        bail!("commit compares fractaldb and rocksdb; {other} is not measured here");
    }
    if let Some(missing) = engines.iter().find(|e| !e.is_built()) {
        bail!("this build has no {missing}: rebuild with `--features rocksdb` or leave it out of --engines");
    }
    let mut threads = if args.threads.is_empty() { DEFAULT_THREADS.to_vec() } else { args.threads.clone() };
    threads.sort();
    threads.dedup();
    if let Some(bad) = threads.iter().find(|&&n| n == 0 || n > MAX_THREADS) {
        bail!("--threads {bad}: each thread count must be between 1 and {MAX_THREADS}");
    }
    let seconds = args.seconds.unwrap_or(if common.smoke { SMOKE_SECONDS } else { DEFAULT_SECONDS });
    let folders = Folders::prepare(common, "commit")?;
    let mut facts = RunFacts::start(&folders.data);
    say(&format!(
        "fractaldb bench-durability commit: {} with {} writer thread(s), {seconds} s each, cache {}, \
         direct I/O {}, data in {}; load average {}",
        engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(" and "),
        threads.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        human_bytes(common.cache as f64),
        common.direct_io,
        folders.data.display(),
        facts.load_average_start,
    ));

    let mut rows = Vec::new();
    // Thread counts outside, engines inside: engines compared at one thread
    // count run minutes apart at most, whatever else the machine does.
    for &n in &threads {
        for &engine in &engines {
            let label = format!("{engine} x{n}");
            let dir = folders.data.join(format!("{engine}-{n}threads"));
            let mut child = DurabilityChildArgs::new(Job::Commit, engine, dir.clone(), common);
            child.threads = n;
            child.duration_ms = millis(seconds);
            let mut settings = String::new();
            let mut result: Option<Line> = None;
            let outcome = wipe(&dir).and_then(|()| {
                drive(&folders.exe, &child, &label, &mut |line| {
                    match line.kind.as_str() {
                        "settings" => settings = line.text("text").to_string(),
                        "result" => result = Some(line.clone()),
                        _ => {}
                    }
                    Ok(Flow::Continue)
                })
            });
            let row = match (outcome, result) {
                (Ok(_), Some(line)) => CommitRow::from_line(engine, n, &line, settings),
                (Ok(_), None) => Err(Error::new("the process ended without a result")),
                (Err(e), _) => Err(e),
            };
            let row = row.unwrap_or_else(|e| CommitRow {
                engine: engine.name().to_string(),
                threads: n,
                failure: Some(e.to_string()),
                ..CommitRow::default()
            });
            match &row.failure {
                Some(f) => say(&format!("[{label}] FAILED: {f}")),
                None => say(&format!(
                    "[{label}] {} commits in {:.1} s = {} commits/s; fsyncs/commit {}; latency p50 {} us, \
                     p99 {} us, max {} us",
                    group_digits(row.commits),
                    secs(row.elapsed_us),
                    group_digits(row.commits_per_s().round() as u64),
                    row.fsyncs_per_commit().map_or("unknown".to_string(), |f| format!("{f:.3}")),
                    group_digits(row.p50_us),
                    group_digits(row.p99_us),
                    group_digits(row.max_us),
                )),
            }
            // The data is a few MB per run; keep the disk clean between runs.
            let _ = wipe(&dir);
            rows.push(row);
        }
    }
    facts.finish();

    let csv = folders.write("commit.csv", &commit_csv(&rows))?;
    let md_text = commit_md(&facts, &rows, seconds, common);
    let md = folders.write("commit.md", &md_text)?;
    say("");
    say(&md_text);
    say(&format!("Wrote {} and {}", csv.display(), md.display()));
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|r| r.failure.as_ref().map(|f| format!("{} x{}: {f}", r.engine, r.threads)))
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} run(s) failed ({}); the results so far are in {}",
            failed.len(),
            failed.join("; "),
            csv.display()
        );
    }
    Ok(())
}

const CSV_HEADER: &str = "engine,threads,seconds,commits,commits_per_s,fsyncs,log_records,fsyncs_per_commit,\
    p50_us,p99_us,p999_us,max_us,cpu_s,write_bytes,write_bytes_per_commit,failure";

fn commit_csv(rows: &[CommitRow]) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for r in rows {
        let per_commit = (r.commits > 0).then(|| format!("{:.1}", r.write_bytes as f64 / r.commits as f64));
        let _ = writeln!(
            out,
            "{},{},{:.3},{},{:.1},{},{},{},{},{},{},{},{:.3},{},{},{}",
            r.engine,
            r.threads,
            secs(r.elapsed_us),
            r.commits,
            r.commits_per_s(),
            opt(r.fsyncs),
            opt(r.log_records),
            r.fsyncs_per_commit().map_or(String::new(), |f| format!("{f:.4}")),
            r.p50_us,
            r.p99_us,
            r.p999_us,
            r.max_us,
            secs(r.cpu_us),
            r.write_bytes,
            per_commit.unwrap_or_default(),
            r.failure.as_deref().unwrap_or("").replace([',', '\n'], ";"),
        );
    }
    out
}

fn commit_md(facts: &RunFacts, rows: &[CommitRow], seconds: f64, common: &CommonArgs) -> String {
    let mut out = facts.markdown_head(
        "fractaldb bench-durability commit",
        &[
            ("what", "single-row puts, 8-byte random key, 100-byte value, each durable on return".into()),
            ("seconds per run", format!("{seconds}")),
            ("cache", human_bytes(common.cache as f64)),
            ("direct I/O", common.direct_io.to_string()),
            ("seed", common.seed.to_string()),
        ],
    );
    out.push_str("\n## Settings\n\n");
    let mut seen = Vec::new();
    for r in rows.iter().filter(|r| !r.settings.is_empty()) {
        if !seen.contains(&r.engine) {
            let _ = writeln!(out, "- **{}**: {}", r.engine, r.settings);
            seen.push(r.engine.clone());
        }
    }
    out.push_str(
        "\n## Results\n\n| engine | threads | commits/s | fsyncs/commit | commits/fsync | p50 µs | p99 µs | \
         p99.9 µs | max µs | CPU s | bytes written/commit |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        if let Some(f) = &r.failure {
            let _ = writeln!(
                out,
                "| {} | {} | FAILED: {} | | | | | | | | |",
                r.engine,
                r.threads,
                f.replace('|', "/")
            );
            continue;
        }
        let fpc = r.fsyncs_per_commit();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |",
            r.engine,
            r.threads,
            group_digits(r.commits_per_s().round() as u64),
            fpc.map_or("unknown".into(), |f| format!("{f:.3}")),
            fpc.filter(|&f| f > 0.0).map_or("-".into(), |f| format!("{:.1}", 1.0 / f)),
            group_digits(r.p50_us),
            group_digits(r.p99_us),
            group_digits(r.p999_us),
            group_digits(r.max_us),
            secs(r.cpu_us),
            if r.commits > 0 {
                format!("{:.0}", r.write_bytes as f64 / r.commits as f64)
            } else {
                "-".into()
            },
        );
    }
    let threads: Vec<u64> = {
        let mut t: Vec<u64> = rows.iter().map(|r| r.threads).collect();
        t.dedup();
        t
    };
    let rate = |engine: &str, n: u64| {
        rows.iter()
            .find(|r| r.engine == engine && r.threads == n && r.failure.is_none())
            .map(CommitRow::commits_per_s)
    };
    if rows.iter().any(|r| r.engine == "rocksdb") {
        out.push_str("\n| threads | fractaldb/rocksdb commits/s |\n|---:|---:|\n");
        for n in threads {
            let ratio = match (rate("fractaldb", n), rate("rocksdb", n)) {
                (Some(f), Some(r)) if r > 0.0 => format!("{:.2}", f / r),
                _ => "-".into(),
            };
            let _ = writeln!(out, "| {n} | {ratio} |");
        }
    }
    let fractal_records: Vec<String> = rows
        .iter()
        .filter(|r| r.engine == "fractaldb")
        .filter_map(|r| r.fsyncs_per_record().map(|f| format!("x{}: {f:.3}", r.threads)))
        .collect();
    let _ = writeln!(
        out,
        "\nNotes: commits/s counts puts that returned Ok over the run's wall time. fractaldb's fsyncs and log \
         records are `env.stats().log` deltas over the run (fsyncs per log record: {}). RocksDB's are its \
         statistics tickers `rocksdb.wal.synced` and `rocksdb.write.wal` (statistics are enabled for this, which \
         costs RocksDB a little). Latency is each put's wall time. CPU seconds and bytes written are the whole \
         process's (getrusage, /proc/self/io write_bytes), background threads included.",
        if fractal_records.is_empty() { "-".to_string() } else { fractal_records.join(", ") }
    );
    out
}

// ---------------------------------------------------------------------------
// The child.

/// A put of one row, callable from every writer thread.
type PutFn<'a> = dyn Fn(&[u8], &[u8]) -> Result<()> + Sync + 'a;

/// What the writer threads did.
struct Hammered {
    commits: u64,
    elapsed: Duration,
    /// Every put's latency in microseconds, sorted.
    latencies_us: Vec<u32>,
}

/// Runs `threads` threads that each call `put` with fresh random rows until
/// `duration` has passed (or one fails), started together.
fn hammer(threads: usize, duration: Duration, seed: u64, put: &PutFn<'_>) -> Result<Hammered> {
    let start_line = Barrier::new(threads + 1);
    let deadline: OnceLock<Instant> = OnceLock::new();
    let failed = AtomicBool::new(false);
    let gen = RowGen::new(seed);
    let (results, start) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (start_line, deadline, failed) = (&start_line, &deadline, &failed);
                s.spawn(move || -> Result<Vec<u32>> {
                    let mut rng =
                        SmallRng::seed_from_u64(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let mut value = [0u8; VALUE_BYTES];
                    let mut latencies = Vec::with_capacity(1 << 16);
                    start_line.wait();
                    let deadline = *deadline.get().expect("set before the start");
                    let mut i = (t as u64) << 40;
                    loop {
                        let now = Instant::now();
                        if now >= deadline || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let key: [u8; 8] = rng.gen::<u64>().to_be_bytes();
                        gen.value(VALUE_STREAM, i, &mut value);
                        i += 1;
                        if let Err(e) = put(&key, &value) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                        latencies.push(u32::try_from(now.elapsed().as_micros()).unwrap_or(u32::MAX));
                    }
                    Ok(latencies)
                })
            })
            .collect();
        let start = Instant::now();
        let _ = deadline.set(start + duration);
        start_line.wait();
        let results: Vec<Result<Vec<u32>>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::new("a writer thread panicked"))))
            .collect();
        (results, start)
    });
    let elapsed = start.elapsed();
    let mut latencies_us = Vec::new();
    for r in results {
        latencies_us.extend(r?);
    }
    latencies_us.sort_unstable();
    Ok(Hammered { commits: latencies_us.len() as u64, elapsed, latencies_us })
}

/// The fields every engine's result line has.
fn common_fields(h: &Hammered, counted: &sys::ProcessCounters) -> Vec<(&'static str, String)> {
    let l = &h.latencies_us;
    vec![
        ("commits", h.commits.to_string()),
        ("elapsed_us", (h.elapsed.as_micros() as u64).to_string()),
        ("p50_us", quantile(l, 0.5).to_string()),
        ("p99_us", quantile(l, 0.99).to_string()),
        ("p999_us", quantile(l, 0.999).to_string()),
        ("max_us", l.last().copied().unwrap_or(0).to_string()),
        ("cpu_us", counted.cpu_us.to_string()),
        ("write_bytes", counted.write_bytes.to_string()),
    ]
}

/// `bench-durability-child --job commit`.
pub fn child(args: &DurabilityChildArgs) -> Result<()> {
    let threads = usize::try_from(args.threads)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| Error::new(format!("--threads {} is not a thread count", args.threads)))?;
    let duration = Duration::from_millis(args.duration_ms);
    match args.engine {
        EngineKind::Fractaldb => {
            let mut child = args.clone();
            child.commit_sync = true;
            // The default period: with runs under a minute, no checkpoint runs.
            child.checkpoint_period_ms = 60_000;
            let (env, settings) = child.open_fractal()?;
            send("settings", &[("text", settings)]);
            let dict = env
                .create_dictionary("commit", fractal::dict_options())
                .context(|| format!("creating a dictionary in {}", args.dir.display()))?;
            let log_before = env.stats().log;
            let before = sys::ProcessCounters::now()?;
            let h = hammer(threads, duration, args.seed, &|k, v| Ok(dict.put(k, v)?))?;
            let counted = sys::ProcessCounters::now()?.since(&before);
            let log_after = env.stats().log;
            let mut fields = common_fields(&h, &counted);
            fields.push(("fsyncs", (log_after.fsyncs - log_before.fsyncs).to_string()));
            fields.push(("log_records", (log_after.records - log_before.records).to_string()));
            fields.push(("log_bytes", (log_after.bytes - log_before.bytes).to_string()));
            send("result", &fields);
            drop(dict);
            env.close()?;
            Ok(())
        }
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => rocks_child(args, threads, duration),
        other => Err(Error::new(format!("commit cannot run {other} in this build"))),
    }
}

#[cfg(feature = "rocksdb")]
fn rocks_child(args: &DurabilityChildArgs, threads: usize, duration: Duration) -> Result<()> {
    use crate::bench::engines::rocks;

    /// Reads the tickers this measurement needs from RocksDB's statistics dump
    /// (lines like `rocksdb.wal.synced COUNT : 123`).
    fn tickers(options: &rocksdb::Options) -> Option<(u64, u64)> {
        let dump = options.get_statistics()?;
        let ticker = |name: &str| -> Option<u64> {
            dump.lines().find_map(|l| {
                let rest = l.strip_prefix(name)?.trim_start().strip_prefix("COUNT")?;
                rest.trim_start().strip_prefix(':')?.trim().parse().ok()
            })
        };
        Some((ticker("rocksdb.wal.synced")?, ticker("rocksdb.write.wal")?))
    }

    std::fs::create_dir_all(&args.dir).context(|| format!("creating {}", args.dir.display()))?;
    let (mut db_options, _) = rocks::options(&args.config())?;
    db_options.enable_statistics();
    let db = rocksdb::DB::open(&db_options, &args.dir)
        .context(|| format!("opening rocksdb in {}", args.dir.display()))?;
    let mut write_options = rocksdb::WriteOptions::default();
    write_options.set_sync(true);
    send(
        "settings",
        &[(
            "text",
            format!(
                "rocksdb {} (crate 0.20.1 over the system's librocksdb): WAL on, every put synced \
                 (WriteOptions::set_sync(true)), one column family, LRU block cache {} bytes, zstd, \
                 use_direct_reads={d} use_direct_io_for_flush_and_compaction={d}, statistics enabled (for \
                 the WAL sync count); everything else default",
                rocks::library_version(&args.dir),
                args.cache_size_bytes,
                d = args.direct_io
            ),
        )],
    );
    let tickers_before = tickers(&db_options);
    let before = sys::ProcessCounters::now()?;
    let h = hammer(threads, duration, args.seed, &|k, v| Ok(db.put_opt(k, v, &write_options)?))?;
    let counted = sys::ProcessCounters::now()?.since(&before);
    let mut fields = common_fields(&h, &counted);
    if let (Some((synced0, wal0)), Some((synced1, wal1))) = (tickers_before, tickers(&db_options)) {
        fields.push(("fsyncs", synced1.saturating_sub(synced0).to_string()));
        fields.push(("log_records", wal1.saturating_sub(wal0).to_string()));
    }
    send("result", &fields);
    drop(db);
    Ok(())
}
