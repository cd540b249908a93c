//! Runs the built `fractaldb bench --smoke` on every engine this build has
//! and checks that every output file is complete and well formed. No timing
//! is asserted: timing goals live in benchmarks, not in tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");
const WORKLOADS: [&str; 4] = ["insert", "iibench", "point-get", "scan"];
const SUMMARY_COLUMNS: &str = "engine,workload,rows,seconds,rows_per_s,first_interval_rows_per_s,\
    last_interval_rows_per_s,last_first_ratio,rows_per_cpu_s,cpu_s,flush_s,disk_bytes,file_bytes,\
    peak_rss_bytes,read_bytes,write_bytes";

/// The engines this build of the binary has (the test is built with the same features).
fn engines() -> Vec<&'static str> {
    let mut engines = vec!["fractaldb"];
    if cfg!(feature = "rocksdb") {
        engines.push("rocksdb");
    }
    engines.push("sqlite");
    engines
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
    let engines = engines();
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
    for engine in &engines {
        for workload in WORKLOADS {
            assert!(
                stdout.contains(&format!("[{engine}] {workload} done:")),
                "no {engine} {workload} in\n{stdout}"
            );
        }
    }

    // intervals.csv: every engine and workload has intervals; rows grow; the
    // last interval of a load counts every row.
    let intervals = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    let mut lines = intervals.lines();
    assert_eq!(lines.next(), Some("engine,workload,interval_end_s,rows,rows_per_s"));
    let mut last_rows = std::collections::BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 5, "intervals.csv line {line:?}");
        assert!(engines.contains(&cells[0]), "{line}");
        assert!(WORKLOADS.contains(&cells[1]), "{line}");
        number(cells[2], line);
        number(cells[4], line);
        let rows: u64 = cells[3].parse().unwrap();
        let previous = last_rows.insert((cells[0].to_string(), cells[1].to_string()), rows);
        assert!(previous.is_none_or(|p| p <= rows), "rows went down at {line}");
    }
    assert_eq!(last_rows.len(), engines.len() * WORKLOADS.len(), "{intervals}");

    // summary.csv: one line per engine and workload, one per ratio and
    // workload, all as wide as the header, every cell a number or empty.
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    assert_eq!(lines.next(), Some(SUMMARY_COLUMNS));
    let width = SUMMARY_COLUMNS.split(',').count();
    let mut seen = BTreeSet::new();
    let mut insert_rows = None;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), width, "summary.csv line {line:?}");
        assert!(WORKLOADS.contains(&cells[1]), "{line}");
        let is_ratio = cells[0].starts_with("fractaldb/");
        if !is_ratio {
            assert!(engines.contains(&cells[0]), "{line}");
            // rows, seconds and bytes on disk always exist; a rate may be
            // missing where its divisor was zero.
            for i in [2, 3, 11] {
                assert!(!cells[i].is_empty(), "column {i} empty in {line}");
            }
            let rows = number(cells[2], line) as u64;
            assert!(rows > 0, "{line}");
            if cells[1] == "insert" {
                insert_rows = Some(rows);
                assert_eq!(last_rows[&(cells[0].to_string(), "insert".to_string())], rows);
            }
            if cells[1] == "scan" {
                assert_eq!(Some(rows), insert_rows, "scan rows differ from insert rows: {line}");
            }
        }
        for cell in cells[2..].iter().filter(|c| !c.is_empty()) {
            number(cell, line);
        }
        assert!(seen.insert((cells[0].to_string(), cells[1].to_string())), "duplicate line {line}");
    }
    let ratios = engines.len() - 1;
    assert_eq!(seen.len(), (engines.len() + ratios) * WORKLOADS.len(), "{summary}");
    for other in engines.iter().filter(|e| **e != "fractaldb") {
        for workload in WORKLOADS {
            assert!(seen.contains(&(format!("fractaldb/{other}"), workload.to_string())), "{summary}");
        }
    }

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
    for workload in WORKLOADS {
        let section =
            md.split(&format!("\n## {workload}\n")).nth(1).unwrap_or_else(|| panic!("no {workload}"));
        let table: Vec<&str> =
            section.lines().skip_while(|l| l.is_empty()).take_while(|l| l.starts_with('|')).collect();
        let columns = 1 + engines.len() + ratios;
        assert_eq!(table[0].matches('|').count(), columns + 1, "{}", table[0]);
        assert_eq!(table.len(), 2 + width - 2, "{workload} table:\n{}", table.join("\n"));
        for row in &table {
            assert_eq!(row.matches('|').count(), columns + 1, "{row}");
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
        (vec!["--direct-io", "maybe"], "maybe"),
        (vec!["--engines", "mysql"], "mysql"),
        (vec!["bogus-workload"], "bogus-workload"),
        (vec!["scan", "--smoke"], "add insert to the workloads"),
        (vec!["--smoke", "--rows", "0"], "--rows must be at least 1"),
        (vec!["--smoke", "--cache", "1KiB"], "--cache must be at least 1MiB"),
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
