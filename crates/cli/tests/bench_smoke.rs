//! Runs the built `fractaldb bench --smoke` on every engine this build has
//! and checks that every output file is complete and well formed. No timing
//! is asserted: timing goals live in benchmarks, not in tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");
/// Every workload, in run order.
const WORKLOADS: [&str; 15] = [
    "insert",
    "iibench",
    "rollup-seq",
    "rollup-random",
    "codec-none",
    "codec-zstd",
    "codec-lz4",
    "codec-snappy",
    "codec-zlib",
    "codec-lzma",
    "settle",
    "point-get",
    "range-scan",
    "scan",
    "mixed",
];
const SUMMARY_COLUMNS: &str = "engine,workload,rows,seconds,rows_per_s,first_interval_rows_per_s,\
    last_interval_rows_per_s,last_first_ratio,rows_per_cpu_s,cpu_s,flush_s,disk_bytes,file_bytes,\
    peak_rss_bytes,read_bytes,write_bytes,min_10s_window_rows_per_s,median_10s_window_rows_per_s,\
    min_median_10s_window_ratio,first_10pct_rows_per_s,last_10pct_rows_per_s,last_first_10pct_ratio,\
    read_bytes_per_row,write_bytes_per_row,raw_bytes,write_amplification,raw_disk_ratio,live_bytes,\
    disk_live_ratio,read_calls_per_row";
/// Columns of summary.csv by position (checked against the header above).
const ROWS: usize = 2;
const SECONDS: usize = 3;
const DISK_BYTES: usize = 11;
const RAW_BYTES: usize = 24;
const RAW_DISK_RATIO: usize = 26;
/// `--smoke` rows per load, gets, and rows per range of range-scan.
const SMOKE_ROWS: u64 = 10_000;
const RANGE_ROWS: u64 = 100;

/// The engines this build of the binary has (the test is built with the same features).
fn engines() -> Vec<&'static str> {
    let mut engines = vec!["fractaldb"];
    if cfg!(feature = "rocksdb") {
        engines.push("rocksdb");
        engines.push("rocksdb-tuned");
    }
    engines.push("sqlite");
    engines
}

/// The engines of the smoke run: every engine this build has, and
/// fractaldb-sql, which runs only when named.
fn bench_engines() -> Vec<&'static str> {
    let mut engines = engines();
    engines.push("fractaldb-sql");
    engines
}

/// The workloads `engine` runs: all but the codecs it lacks; fractaldb-sql only its two loads.
fn workloads_of(engine: &str) -> Vec<&'static str> {
    if engine == "fractaldb-sql" {
        return vec!["insert", "iibench"];
    }
    let lacks: &[&str] = match engine {
        "fractaldb" => &[],
        "rocksdb" | "rocksdb-tuned" => &["codec-zlib", "codec-lzma"],
        _ => &["codec-zstd", "codec-lz4", "codec-snappy", "codec-zlib", "codec-lzma"],
    };
    WORKLOADS.into_iter().filter(|w| !lacks.contains(w)).collect()
}

/// Raw bytes a load of `SMOKE_ROWS` rows hands over, where they are fixed
/// (the log lines vary in length).
fn raw_bytes_of(workload: &str) -> Option<u64> {
    let per_row = match workload {
        "insert" => 8 + 100,
        "iibench" => 8 + 100 + 3 * 16,
        "rollup-seq" | "rollup-random" => 8 + 100 + 3 * (8 + 16),
        _ => return None,
    };
    Some(SMOKE_ROWS * per_row)
}

/// A fresh folder for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bench(args: &[&str]) -> Output {
    Command::new(BIN).arg("bench").args(args).output().expect("running the fractaldb binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn number(cell: &str, what: &str) -> f64 {
    let v: f64 = cell.parse().unwrap_or_else(|_| panic!("{what}: {cell:?} is not a number"));
    assert!(v.is_finite() && v >= 0.0, "{what}: {v}");
    v
}

#[test]
fn smoke_run_writes_complete_well_formed_files() {
    let scratch = Scratch::new("bench-smoke");
    let data = scratch.0.join("data");
    let out = scratch.0.join("out");
    let engines = bench_engines();
    let output = bench(&[
        "--smoke",
        "--engines",
        &engines.join(","),
        "--dir",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "bench failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let mut expected = BTreeSet::new();
    for engine in &engines {
        for workload in workloads_of(engine) {
            assert!(
                stdout.contains(&format!("[{engine}] {workload} done:")),
                "no {engine} {workload} in\n{stdout}"
            );
            expected.insert((engine.to_string(), workload.to_string()));
        }
    }

    // `fractaldb check` walks what the loads left and shows where the bytes are.
    let rollup = data.join("fractaldb").join("rollup-random");
    let output = Command::new(BIN).arg("check").arg(&rollup).output().expect("running fractaldb check");
    let (checked, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "check failed: {checked}\n{stderr}");
    for dictionary in ["rollup_rows", "rollup_minute", "rollup_hour", "rollup_day", "(all)"] {
        assert!(checked.contains(&format!("| {dictionary} |")), "no {dictionary} in\n{checked}");
    }
    let output = Command::new(BIN).arg("check").arg(scratch.0.join("nowhere")).output().unwrap();
    assert!(!output.status.success() && !text(&output.stderr).contains("panicked"));

    // intervals.csv: every engine and workload it runs has intervals; rows
    // grow; the last interval of a load counts every row.
    let intervals = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    let mut lines = intervals.lines();
    assert_eq!(lines.next(), Some("engine,workload,interval_end_s,rows,rows_per_s"));
    let mut last_rows = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 5, "intervals.csv line {line:?}");
        assert!(workloads_of(cells[0]).contains(&cells[1]), "{line}");
        number(cells[2], line);
        number(cells[4], line);
        let rows: u64 = cells[3].parse().unwrap();
        let previous = last_rows.insert((cells[0].to_string(), cells[1].to_string()), rows);
        assert!(previous.is_none_or(|p| p <= rows), "rows went down at {line}");
    }
    assert_eq!(last_rows.keys().cloned().collect::<BTreeSet<_>>(), expected, "{intervals}");

    // engine-counters.csv: fractaldb's own counters at the end of every
    // interval of every workload it ran, never falling for the cumulative
    // ones (a load writes its log), and every engine's process memory
    // beside them: resident, its peak since the workload began, and the
    // allocator's live, active, metadata and resident bytes and what it has
    // given back to the kernel.
    let counters = std::fs::read_to_string(out.join("engine-counters.csv")).unwrap();
    let mut lines = counters.lines();
    assert_eq!(lines.next(), Some("engine,workload,interval_end_s,counter,value"));
    let gauge = |name: &str| {
        name.ends_with("_used_bytes")
            || name == "checkpoint_copy_bytes"
            || name == "process_rss_bytes"
            // VmHWM is the larger of the kernel's high-water mark, which
            // it updates lazily, and resident memory now: it can read a
            // little lower than it did a moment before.
            || name == "process_rss_peak_bytes"
            || (name.starts_with("heap_") && name != "heap_purged_bytes")
    };
    let mut last: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 5, "engine-counters.csv line {line:?}");
        number(cells[2], line);
        let value: u64 = cells[4].parse().unwrap();
        let memory = cells[3].starts_with("process_") || cells[3].starts_with("heap_");
        assert!(memory || cells[0] == "fractaldb", "only fractaldb has counters of its own: {line}");
        let previous = last.insert((cells[0].to_string(), cells[1].to_string(), cells[3].to_string()), value);
        if !gauge(cells[3]) {
            assert!(previous.is_none_or(|p| p <= value), "{} fell at {line}", cells[3]);
        }
    }
    let with = |counter: &str| -> BTreeSet<(String, String)> {
        last.iter()
            .filter(|((_, _, c), v)| c == counter && **v > 0)
            .map(|((e, w, _), _)| (e.clone(), w.clone()))
            .collect()
    };
    for counter in [
        "process_rss_bytes",
        "process_rss_peak_bytes",
        "heap_allocated_bytes",
        "heap_resident_bytes",
        "heap_active_bytes",
        "heap_metadata_bytes",
    ] {
        assert_eq!(with(counter), expected, "{counter} for every engine and workload: {counters}");
    }
    // Pages given back to the kernel: a count that only grows, and may
    // still be 0 in a run this short.
    let purged: BTreeSet<(String, String)> = last
        .keys()
        .filter(|(_, _, c)| c == "heap_purged_bytes")
        .map(|(e, w, _)| (e.clone(), w.clone()))
        .collect();
    assert_eq!(purged, expected, "heap_purged_bytes for every engine and workload: {counters}");
    let fractal: BTreeSet<(String, String)> =
        expected.iter().filter(|(e, _)| e == "fractaldb").cloned().collect();
    let sent_own: BTreeSet<(String, String)> =
        last.keys().filter(|(_, _, c)| c == "spill_reads").map(|(e, w, _)| (e.clone(), w.clone())).collect();
    assert_eq!(sent_own, fractal, "fractaldb's own counters for each of its workloads: {counters}");
    assert!(
        last.get(&("fractaldb".to_string(), "insert".to_string(), "log_bytes".to_string()))
            .is_some_and(|b| *b > 0),
        "{counters}"
    );

    // summary.csv: one line per engine and workload it ran, one per ratio
    // and workload both ran, all as wide as the header, every cell a
    // number or empty.
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    assert_eq!(lines.next(), Some(SUMMARY_COLUMNS));
    let width = SUMMARY_COLUMNS.split(',').count();
    let mut seen = BTreeSet::new();
    let mut codec_raw_bytes = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), width, "summary.csv line {line:?}");
        let (engine, workload) = (cells[0], cells[1]);
        assert!(WORKLOADS.contains(&workload), "{line}");
        for cell in cells[2..].iter().filter(|c| !c.is_empty()) {
            number(cell, line);
        }
        assert!(seen.insert((engine.to_string(), workload.to_string())), "duplicate line {line}");
        if engine.starts_with("fractaldb/") {
            continue;
        }
        assert!(expected.contains(&(engine.to_string(), workload.to_string())), "{line}");
        // rows, seconds and bytes on disk always exist; a rate may be
        // missing where its divisor was zero.
        for i in [ROWS, SECONDS, DISK_BYTES] {
            assert!(!cells[i].is_empty(), "column {i} empty in {line}");
        }
        let rows = number(cells[ROWS], line) as u64;
        assert!(rows > 0, "{line}");
        let is_load = !["settle", "point-get", "range-scan", "scan", "mixed"].contains(&workload);
        if is_load {
            // A load counts every row, and shows what it handed over and how it compressed.
            assert_eq!(rows, SMOKE_ROWS, "{line}");
            assert_eq!(last_rows[&(engine.to_string(), workload.to_string())], rows, "{line}");
            let raw = number(cells[RAW_BYTES], line) as u64;
            if let Some(expected_raw) = raw_bytes_of(workload) {
                assert_eq!(raw, expected_raw, "{line}");
            }
            if workload.starts_with("codec-") {
                // 150 to 250 bytes per log line, the same lines for every engine and codec.
                assert!((SMOKE_ROWS * 150..=SMOKE_ROWS * 270).contains(&raw), "{line}");
                assert_eq!(*codec_raw_bytes.entry("codec").or_insert(raw), raw, "{line}");
            }
            assert!(number(cells[RAW_DISK_RATIO], line) > 0.0, "{line}");
        } else {
            assert!(cells[RAW_BYTES].is_empty() && cells[RAW_DISK_RATIO].is_empty(), "{line}");
        }
        match workload {
            "settle" | "point-get" | "scan" => assert_eq!(rows, SMOKE_ROWS, "{line}"),
            // 100 ranges of 100 rows; one may end short at the last key.
            "range-scan" => assert!(rows > SMOKE_ROWS - RANGE_ROWS && rows <= SMOKE_ROWS, "{line}"),
            _ => {}
        }
    }
    let ratios: Vec<&str> = engines.iter().copied().filter(|e| *e != "fractaldb").collect();
    let mut all_lines = expected.clone();
    for other in &ratios {
        // A ratio line for each workload both engines ran.
        for workload in workloads_of(other).iter().filter(|w| workloads_of("fractaldb").contains(w)) {
            all_lines.insert((format!("fractaldb/{other}"), workload.to_string()));
        }
    }
    assert_eq!(seen, all_lines, "{summary}");

    // summary.md: machine facts, every engine's settings, a full table per workload, no failures.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for heading in ["# fractaldb bench", "## Machine", "## Settings"] {
        assert!(md.contains(heading), "no {heading:?} in\n{md}");
    }
    for fact in ["| cores |", "| load average at start", "| load average at end |", "| disk free at start |"]
    {
        assert!(md.contains(fact), "no {fact:?} in\n{md}");
    }
    for engine in &engines {
        let settings =
            md.lines().find(|l| l.starts_with(&format!("- **{engine}**: "))).unwrap_or_else(|| {
                panic!("no settings for {engine} in\n{md}");
            });
        assert!(!settings.contains("did not open"), "{settings}");
    }
    assert!(!md.contains("## Failures"), "{md}");
    // The SQL layer's share of the engine's rate, said for its two loads only.
    for workload in ["insert", "iibench"] {
        let section = md.split(&format!("\n## {workload}\n")).nth(1).unwrap().split("\n## ").next().unwrap();
        assert!(
            section.contains("**fractaldb-sql keeps "),
            "no share of fractaldb's rate in {workload}:\n{section}"
        );
    }
    assert_eq!(md.matches("**fractaldb-sql keeps ").count(), 2, "{md}");
    for workload in WORKLOADS {
        let section =
            md.split(&format!("\n## {workload}\n")).nth(1).unwrap_or_else(|| panic!("no {workload}"));
        let table: Vec<&str> =
            section.lines().skip_while(|l| l.is_empty()).take_while(|l| l.starts_with('|')).collect();
        let columns = 1 + engines.len() + ratios.len();
        assert_eq!(table[0].matches('|').count(), columns + 1, "{}", table[0]);
        assert_eq!(table.len(), 2 + width - 2, "{workload} table:\n{}", table.join("\n"));
        for row in &table {
            assert_eq!(row.matches('|').count(), columns + 1, "{row}");
        }
    }

    // Charts: a PNG and an SVG per workload, well formed, linked from
    // summary.md, with a legend entry per engine that ran the workload; and
    // (standard output being a pipe here) a plain line per interval rather
    // than a live bar.
    assert!(!stdout.contains('\r'), "a live progress line went to a pipe:\n{stdout}");
    for workload in WORKLOADS {
        let png = std::fs::read(out.join(format!("{workload}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{workload}.png has no PNG signature");
        // The first chunk is the header; the last is an empty IEND, then its CRC.
        assert!(png.len() > 40, "{workload}.png is {} bytes", png.len());
        assert_eq!(&png[12..16], b"IHDR", "{workload}.png");
        assert_eq!(&png[png.len() - 12..png.len() - 4], b"\0\0\0\0IEND", "{workload}.png is cut short");
        let svg = std::fs::read_to_string(out.join(format!("{workload}.svg"))).unwrap();
        let head: String = svg.chars().take(40).collect();
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{workload}.svg begins {head:?}");
        assert!(svg.trim_end().ends_with("</svg>"), "{workload}.svg is cut short");
        for engine in engines.iter().filter(|e| workloads_of(e).contains(&workload)) {
            assert!(svg.contains(engine), "no legend entry {engine} in {workload}.svg");
            let line = format!("[{engine}] {workload:<9} ");
            assert!(
                stdout.lines().any(|l| l.starts_with(&line) && l.ends_with(" rows/s")),
                "no interval line of {engine} {workload} in\n{stdout}"
            );
        }
        for link in [format!("]({workload}.png)"), format!("]({workload}.svg)")] {
            assert!(md.contains(&link), "summary.md does not link {link}");
        }
    }
}

#[test]
fn bad_flags_give_a_message_not_a_panic() {
    let scratch = Scratch::new("bench-bad-flags");
    let dir = scratch.0.to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--cache", "12parsecs"], "unknown size unit"),
        (vec!["--rows", "lots"], "is not a count"),
        (vec!["--interval-secs", "0"], "seconds"),
        (vec!["--seconds", "0"], "seconds"),
        (vec!["--direct-io", "maybe"], "maybe"),
        (vec!["--engines", "mysql"], "mysql"),
        (vec!["bogus-workload"], "bogus-workload"),
        (vec!["scan", "--smoke"], "add insert to the workloads"),
        (vec!["range-scan", "mixed", "--smoke"], "range-scan and mixed read the rows that insert writes"),
        (vec!["--smoke", "--rows", "0"], "--rows must be at least 1"),
        (vec!["--smoke", "--cache", "1KiB"], "--cache must be at least 1MiB"),
        (vec!["--smoke", "--threads", "0"], "--threads must be between 1"),
        (vec!["--smoke", "--range-rows", "0"], "--range-rows must be at least 1"),
        (vec!["codec-lzma", "--smoke", "--engines", "sqlite"], "sqlite has none of the workloads"),
        (
            vec!["rollup-seq", "--smoke", "--engines", "fractaldb,fractaldb-sql"],
            "fractaldb-sql has none of the workloads asked for (it runs only insert and iibench)",
        ),
    ];
    for (args, expected) in cases {
        let mut all = args.clone();
        all.extend(["--dir", &dir, "--out", &dir]);
        let output = bench(&all);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
    if !cfg!(feature = "rocksdb") {
        let output = bench(&["--smoke", "--engines", "rocksdb", "--dir", &dir, "--out", &dir]);
        assert!(text(&output.stderr).contains("--features rocksdb"), "{}", text(&output.stderr));
    }
}

fn bench_durability(args: &[&str]) -> Output {
    Command::new(BIN).arg("bench-durability").args(args).output().expect("running the fractaldb binary")
}

/// Runs `bench-durability <measurement> --smoke` in a scratch folder and
/// returns the output folder (with the scratch that owns it).
fn durability_smoke(measurement: &str, extra: &[&str]) -> (Scratch, PathBuf, String) {
    let scratch = Scratch::new(&format!("durability-{measurement}"));
    let data = scratch.0.join("data");
    let out = scratch.0.join("out");
    let mut args =
        vec![measurement, "--smoke", "--dir", data.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend(extra);
    let output = bench_durability(&args);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "{measurement} failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    (scratch, out, stdout)
}

/// The lines of a CSV file after checking its header; each line split into cells as wide as the header.
fn csv_rows(path: &Path, header: &str) -> Vec<Vec<String>> {
    let csv = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(header), "{}", path.display());
    let width = header.split(',').count();
    lines
        .map(|l| {
            let cells: Vec<String> = l.split(',').map(str::to_string).collect();
            assert_eq!(cells.len(), width, "{}: {l:?}", path.display());
            cells
        })
        .collect()
}

#[test]
fn durability_commit_smoke() {
    let engines: Vec<&str> = engines().into_iter().filter(|e| *e != "sqlite").collect();
    let joined = engines.join(",");
    let (_scratch, out, stdout) = durability_smoke("commit", &["--engines", &joined, "--threads", "1,4"]);
    let rows = csv_rows(
        &out.join("commit.csv"),
        "engine,threads,seconds,commits,commits_per_s,fsyncs,log_records,fsyncs_per_commit,p50_us,p99_us,\
         p999_us,max_us,cpu_s,write_bytes,write_bytes_per_commit,failure",
    );
    assert_eq!(rows.len(), engines.len() * 2, "{rows:?}");
    for row in &rows {
        assert!(engines.contains(&row[0].as_str()), "{row:?}");
        assert!(row[15].is_empty(), "failed: {row:?}");
        assert!(number(&row[3], "commits") > 0.0, "{row:?}");
        assert!(number(&row[4], "commits_per_s") > 0.0, "{row:?}");
        if row[0] == "fractaldb" {
            // Every commit was synced: at least one fsync, at most one per commit (and a few spare).
            let fsyncs = number(&row[5], "fsyncs");
            let records = number(&row[6], "log_records");
            assert!(fsyncs >= 1.0 && fsyncs <= records + 2.0, "{row:?}");
            assert!(records >= number(&row[3], "commits"), "{row:?}");
        }
    }
    let md = std::fs::read_to_string(out.join("commit.md")).unwrap();
    for needle in ["# fractaldb bench-durability commit", "## Machine", "## Settings", "| fractaldb | 4 |"] {
        assert!(md.contains(needle), "no {needle:?} in\n{md}");
    }
    assert!(stdout.contains("[fractaldb x1]"), "{stdout}");
}

#[test]
fn durability_checkpoint_smoke() {
    let (_scratch, out, _) = durability_smoke("checkpoint", &[]);
    let seconds = csv_rows(
        &out.join("checkpoint-seconds.csv"),
        "second,end_s,rows,rows_per_s,max_write_ms,in_checkpoint",
    );
    assert_eq!(seconds.len(), 3, "{seconds:?}");
    for (i, row) in seconds.iter().enumerate() {
        assert_eq!(row[0], (i + 1).to_string());
        for cell in &row[1..] {
            number(cell, "checkpoint-seconds.csv");
        }
        assert!(row[5] == "0" || row[5] == "1", "{row:?}");
    }
    assert!(seconds.iter().map(|r| number(&r[2], "rows")).sum::<f64>() > 0.0);
    for row in csv_rows(&out.join("checkpoint-durations.csv"), "checkpoint,start_s,end_s,duration_s") {
        for cell in &row {
            number(cell, "checkpoint-durations.csv");
        }
    }
    let md = std::fs::read_to_string(out.join("checkpoint.md")).unwrap();
    for needle in ["# fractaldb bench-durability checkpoint", "**slowest / median window**", "## Checkpoints"]
    {
        assert!(md.contains(needle), "no {needle:?} in\n{md}");
    }
}

#[test]
fn durability_recovery_smoke() {
    let (_scratch, out, stdout) = durability_smoke("recovery", &[]);
    assert!(stdout.contains("killed the writer (SIGKILL)"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("recovery.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let values: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), values.len(), "{csv}");
    assert_eq!(lines.next(), None, "{csv}");
    let get = |name: &str| -> f64 {
        let i = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name} in {csv}"));
        number(values[i], name)
    };
    assert!(get("durable_rows") > 0.0, "{csv}");
    assert!(get("rows_acked_at_ready") >= get("durable_rows"), "{csv}");
    assert!(get("log_files") >= 1.0 && get("log_bytes") > 0.0, "{csv}");
    assert!(get("open_s") > 0.0, "{csv}");
    // The last durable row and a sample were found, and so was any row written after them.
    assert!(get("rows_checked") >= 2.0, "{csv}");
    let md = std::fs::read_to_string(out.join("recovery.md")).unwrap();
    assert!(md.contains("**Env::open seconds**"), "{md}");
    assert!(!md.contains("## Failure"), "{md}");
}

#[test]
fn durability_bad_flags_give_a_message_not_a_panic() {
    let scratch = Scratch::new("durability-bad-flags");
    let dir = scratch.0.to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["commit", "--threads", "0"], "thread count"),
        (vec!["commit", "--threads", "many"], "many"),
        (vec!["commit", "--engines", "sqlite"], "sqlite is not measured"),
        (vec!["commit", "--seconds", "0"], "seconds"),
        (vec!["checkpoint", "--smoke", "--window-secs", "0"], "--window-secs"),
        (vec!["checkpoint", "--smoke", "--batch-rows", "0"], "--batch-rows"),
        (vec!["recovery", "--smoke", "--size", "1"], "--size"),
        (vec!["recovery", "--cache", "12parsecs"], "unknown size unit"),
        (vec!["recovery", "--checkpoint-period", "-1"], "-1"),
        (vec!["explode"], "explode"),
    ];
    for (args, expected) in cases {
        let mut all = args.clone();
        all.extend(["--dir", &dir, "--out", &dir]);
        let output = bench_durability(&all);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
    if !cfg!(feature = "rocksdb") {
        let output =
            bench_durability(&["commit", "--smoke", "--engines", "rocksdb", "--dir", &dir, "--out", &dir]);
        assert!(text(&output.stderr).contains("--features rocksdb"), "{}", text(&output.stderr));
    }
}

#[test]
fn txn_all_smoke() {
    let scratch = Scratch::new("txn-smoke");
    let data = scratch.0.join("data");
    let out = scratch.0.join("out");
    let output = Command::new(BIN)
        .args([
            "bench-txn",
            "all",
            "--smoke",
            "--dir",
            data.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .expect("running the fractaldb binary");
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "bench-txn failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Every cell but the text columns is a number; failure cells are empty.
    let check = |rows: &[Vec<String>], text_columns: &[usize], what: &str| {
        for row in rows {
            assert!(row.last().unwrap().is_empty(), "{what} failed: {row:?}");
            for (i, cell) in row[..row.len() - 1].iter().enumerate() {
                if !text_columns.contains(&i) {
                    number(cell, what);
                }
            }
        }
    };

    let scaling = csv_rows(
        &out.join("scaling.csv"),
        "threads,seconds,commits,commits_per_s,ratio_to_best,aborts_write_conflict,aborts_deadlock,\
         aborts_lock_timeout,lock_waits,lock_escalations,p50_us,p99_us,max_us,cpu_s,failure",
    );
    check(&scaling, &[], "scaling.csv");
    let threads: Vec<&str> = scaling.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(threads, ["1", "2", "8"], "{scaling:?}");
    for row in &scaling {
        assert!(number(&row[2], "commits") > 0.0, "{row:?}");
        let ratio = number(&row[4], "ratio_to_best");
        assert!(ratio > 0.0 && ratio <= 1.0, "{row:?}");
    }
    assert!(scaling.iter().any(|r| number(&r[4], "ratio_to_best") == 1.0), "{scaling:?}");

    let counters = csv_rows(
        &out.join("counters.csv"),
        "mode,threads,seconds,commits,ops_per_s,aborts_write_conflict,aborts_deadlock,aborts_lock_timeout,\
         lock_waits,p50_us,p99_us,max_us,cpu_s,counter_sum,check,failure",
    );
    check(&counters, &[0, 14], "counters.csv");
    assert_eq!(counters.len(), 6, "{counters:?}");
    for mode in ["txn", "autocommit"] {
        assert_eq!(counters.iter().filter(|r| r[0] == mode).count(), 3, "{counters:?}");
    }
    for row in &counters {
        // The counters add up to the committed increments, exactly.
        assert_eq!(row[14], "ok", "{row:?}");
        assert!(number(&row[3], "commits") > 0.0, "{row:?}");
        assert_eq!(row[13], row[3], "counter sum differs from commits: {row:?}");
    }

    let cost = csv_rows(
        &out.join("cost.csv"),
        "variant,isolation,rows_per_txn,threads,seconds,rows,rows_per_s,ratio_to_autocommit,txns,txns_per_s,\
         aborts,lock_waits,p50_us,p99_us,cpu_s,failure",
    );
    check(&cost, &[0, 1], "cost.csv");
    let variants = ["autocommit", "rr-txn-1-row", "rr-txn-100-rows", "rc-txn-100-rows"];
    assert_eq!(cost.len(), variants.len() * 2, "{cost:?}");
    for row in &cost {
        assert!(variants.contains(&row[0].as_str()), "{row:?}");
        assert!(row[3] == "1" || row[3] == "8", "{row:?}");
        let (rows, txns) = (number(&row[5], "rows"), number(&row[8], "txns"));
        assert!(rows > 0.0, "{row:?}");
        assert_eq!(rows, txns * number(&row[2], "rows_per_txn"), "{row:?}");
        if row[0] == "autocommit" {
            assert_eq!(number(&row[7], "ratio_to_autocommit"), 1.0, "{row:?}");
        }
    }

    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for needle in [
        "# fractaldb bench-txn",
        "## Machine",
        "| cores |",
        "| load average at start",
        "| load average at end |",
        "## Scaling",
        "## Counters",
        "## Cost",
        "Counter check: passed",
    ] {
        assert!(md.contains(needle), "no {needle:?} in\n{md}");
    }
    assert!(!md.contains("FAILED"), "{md}");
    assert!(stdout.contains("# fractaldb bench-txn"), "the summary was not printed:\n{stdout}");
}
