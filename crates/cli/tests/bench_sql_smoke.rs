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
/// The workloads with a rate over time (one chart or more each).
const WORKLOADS: [&str; 8] = [
    "insert-roll-seq",
    "insert-roll-random",
    "iibench",
    "sysbench-point-select",
    "sysbench-read-write",
    "sysbench-read-only",
    "sysbench-update-index",
    "analytic-reads",
];
/// The maintenance sequence's steps, in order.
const STEPS: [&str; 8] =
    ["load", "double-1", "double-2", "group-by", "delete", "optimize", "truncate", "optimize-2"];

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
    // The loads' rows: every row the smoke asked for was inserted (2000),
    // and each load has its chart against rows inserted and of p99 latency.
    for s in &servers {
        for w in ["insert-roll-seq", "insert-roll-random", "iibench"] {
            let r = rows.iter().find(|r| r[col("server")] == *s && r[col("workload")] == w).unwrap();
            assert_eq!(r[col("units")], "2000", "{s} {w}");
            for chart in [format!("{w}-4t-by-rows.svg"), format!("{w}-4t-p99.svg")] {
                assert!(out.join(&chart).exists(), "{chart} missing");
            }
        }
    }
    let of = |s: &str, w: &str| -> Vec<&Vec<&str>> {
        rows.iter().filter(|r| r[col("server")] == s && r[col("workload")] == w).collect()
    };
    let num = |r: &Vec<&str>, c: &str| -> f64 {
        r[col(c)].parse().unwrap_or_else(|_| panic!("{c} is not a number in {r:?}"))
    };
    // The maintenance sequence: every step in order on every server, the
    // dump's 5000 rows loaded and doubled twice, bytes on disk after each
    // step, and the same GROUP BY and DELETE results on every server.
    let mut groups = Vec::new();
    for s in &servers {
        let steps = of(s, "maintenance");
        let names: Vec<&str> = steps.iter().map(|r| r[col("variant")]).collect();
        assert_eq!(names, STEPS, "{s}: maintenance steps");
        for r in &steps {
            assert!(num(r, "disk_mb") > 0.0 && num(r, "peak_rss_mb") > 0.0, "{s}: {r:?}");
        }
        assert_eq!(
            [steps[0][col("units")], steps[1][col("units")], steps[2][col("units")]],
            ["5000", "5000", "10000"]
        );
        assert!(num(steps[3], "units") > 0.0 && num(steps[4], "units") > 0.0, "{s}: {steps:?}");
        groups.push((steps[3][col("units")], steps[4][col("units")]));
    }
    assert!(
        groups.windows(2).all(|g| g[0] == g[1]),
        "servers disagree on GROUP BY / DELETE rows: {groups:?}"
    );
    // The log table: every codec of each server (fractaldb's six and its
    // zstd with 64 KiB basements) loaded all 2000 rows and its table's
    // files have bytes.
    for s in &servers {
        let codecs = of(s, "log-table");
        let want = match *s {
            "fractaldb" => 7,
            "innodb" => 2,
            _ => 1,
        };
        assert_eq!(codecs.len(), want, "{s}: log-table codecs: {codecs:?}");
        for r in codecs {
            assert_eq!(r[col("units")], "2000", "{s}: {r:?}");
            assert!(num(r, "disk_mb") > 0.0 && num(r, "secs") > 0.0, "{s}: {r:?}");
        }
    }
    // The insert grid: each cell of the smoke's grid (1 and 2 tables, 2
    // threads, sync on and off) ran, with a chart per server and sync mode.
    for s in &servers {
        let cells = of(s, "sysbench-insert-grid");
        let mut names: Vec<String> =
            cells.iter().map(|r| format!("{} {}", r[col("variant")], r[col("threads")])).collect();
        names.sort();
        assert_eq!(
            names,
            ["tables=1 sync=off 2", "tables=1 sync=on 2", "tables=2 sync=off 2", "tables=2 sync=on 2"],
            "{s}"
        );
        assert!(cells.iter().all(|r| num(r, "units") > 0.0), "{s}: {cells:?}");
        for sync in ["on", "off"] {
            assert!(out.join(format!("sysbench-insert-grid-{s}-sync-{sync}.png")).exists(), "{s} {sync}");
        }
    }
    let intervals = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    for s in &servers {
        assert!(intervals.lines().any(|l| l.starts_with(&format!("{s},"))), "{s} has no intervals");
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("innodb-buffer-pool-size=64M"), "settings missing from summary.md");
    assert!(md.contains("fractaldb / this"));
    assert!(md.contains("| delete | fractaldb |") && md.contains("| TOKUDB_ZSTD | fractaldb |"), "{md}");
}
