//! Runs `fractaldb bench-sql --smoke` against fractaldb's server and the
//! MariaDB servers this machine has (InnoDB; MyRocks when Debian's
//! `mariadb-plugin-rocksdb` is installed, as `.ci/run` installs it) and
//! checks that the report is complete: every server ran every workload at
//! every thread count, with intervals, counters, and a chart per workload.
//! No timing is asserted: timing goals live in benchmarks, not in tests.
//! Without mariadbd or sysbench it skips, except under CI=true.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");
const WORKLOADS: [&str; 7] = [
    "insert-roll-seq",
    "insert-roll-random",
    "iibench",
    "sysbench-point-select",
    "sysbench-read-write",
    "sysbench-read-only",
    "sysbench-update-index",
];

fn installed(cmd: &str) -> bool {
    Command::new(cmd).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
        || Path::new("/usr/sbin").join(cmd).exists()
}

#[test]
fn smoke_run_reports_every_server_and_workload() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !installed("mariadbd") || !installed("sysbench") {
        assert!(!ci, "mariadbd and sysbench must be installed under CI=true");
        eprintln!("skipped: mariadbd or sysbench missing");
        return;
    }
    let mut servers = vec!["fractaldb", "innodb"];
    if Path::new("/usr/lib/mysql/plugin/ha_rocksdb.so").exists() {
        servers.push("myrocks");
    } else {
        assert!(!ci, "mariadb-plugin-rocksdb must be installed under CI=true");
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = Command::new(BIN)
        .args(["bench-sql", "--smoke", "--servers", &servers.join(",")])
        .arg("--dir")
        .arg(tmp.path().join("data"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "bench-sql failed:\n{stderr}");

    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col =
        |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for s in &servers {
        for w in WORKLOADS {
            let mine: Vec<&Vec<&str>> =
                rows.iter().filter(|r| r[col("server")] == *s && r[col("workload")] == w).collect();
            assert!(!mine.is_empty(), "{s} {w} missing from summary.csv:\n{summary}");
            for r in mine {
                let units: u64 = r[col("units")].parse().unwrap();
                assert!(units > 0, "{s} {w}: nothing done: {r:?}");
                let rate: f64 = r[col("rate")].parse().unwrap();
                assert!(rate > 0.0, "{s} {w}: {r:?}");
                // Our own servers are watched through /proc: CPU time (a
                // short run may round to 0.0 s) and peak memory.
                let cpu: f64 = r[col("cpu_s")].parse().unwrap();
                let rss: f64 = r[col("peak_rss_mb")].parse().unwrap();
                assert!(cpu >= 0.0 && rss > 0.0, "{s} {w}: process counters missing: {r:?}");
                assert!(r[col("disk_mb")].parse::<f64>().unwrap() > 0.0, "{s} {w}: {r:?}");
            }
            // A chart per workload and thread count.
            let charts = std::fs::read_dir(&out)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{w}-")))
                .count();
            assert!(charts >= 2, "{w}: no PNG and SVG chart");
        }
    }
    // The loads' rows: every row the smoke asked for was inserted (2000).
    for s in &servers {
        for w in ["insert-roll-seq", "insert-roll-random", "iibench"] {
            let r = rows.iter().find(|r| r[col("server")] == *s && r[col("workload")] == w).unwrap();
            assert_eq!(r[col("units")], "2000", "{s} {w}");
        }
    }
    let intervals = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    for s in &servers {
        assert!(intervals.lines().any(|l| l.starts_with(&format!("{s},"))), "{s} has no intervals");
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("innodb-buffer-pool-size=64M"), "settings missing from summary.md");
    assert!(md.contains("fractaldb / this"));
}
