//! Turns what the engines' processes measured into the run's files:
//! `intervals.csv`, `summary.csv`, `summary.md` and a throughput chart per
//! workload (`<workload>.png`, `<workload>.svg`).
//!
//! Nothing here knows the workloads by name: every
//! table, ratio and chart is made for whatever workloads and engines the run
//! had, so a new workload shows up in the report by being run.

use std::fmt::Write as _;
use std::path::Path;

use super::chart::{self, Chart, Line};
use super::engines::EngineKind;
use super::protocol::Measured;
use super::sys::{DiskFacts, MachineFacts};
use super::timeline::{Parts, Timeline, Windows, PART_OF_ROWS, WINDOW_US};
use super::workloads::{Interval, WorkloadKind};
use crate::error::{Context, Result};

/// An engine's own counters at one moment: (name, cumulative value).
pub type Counters = Vec<(String, u64)>;

/// Everything one engine's process reported, or how it failed.
#[derive(Clone, Debug)]
pub struct EngineRun {
    pub engine: EngineKind,
    /// The settings string the engine sent when it opened.
    pub settings: Option<String>,
    pub results: Vec<(WorkloadKind, Measured)>,
    pub intervals: Vec<(WorkloadKind, Interval)>,
    /// The engine's own counters at the end of each interval: workload,
    /// the interval's `end_us`, (name, cumulative value).
    pub counters: Vec<(WorkloadKind, u64, Counters)>,
    /// Why the process did not finish every workload, if it did not.
    pub failure: Option<String>,
}

impl EngineRun {
    /// A run with nothing reported yet.
    pub fn new(engine: EngineKind) -> Self {
        EngineRun {
            engine,
            settings: None,
            results: Vec::new(),
            intervals: Vec::new(),
            counters: Vec::new(),
            failure: None,
        }
    }

    /// The intervals of one workload, in the order reported.
    fn intervals_of(&self, workload: WorkloadKind) -> Vec<Interval> {
        self.intervals.iter().filter(|(w, _)| *w == workload).map(|(_, i)| *i).collect()
    }
}

/// The circumstances of a run, printed at the top of the summary so a
/// reader can tell what was compared and on what.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub started_utc: String,
    pub command_line: String,
    pub workloads: Vec<WorkloadKind>,
    pub engines: Vec<EngineKind>,
    pub rows: u64,
    pub gets: u64,
    pub batch_rows: u64,
    /// Rows each range of `range-scan` reads.
    pub range_rows: u64,
    /// Client threads of `mixed`, and how long it runs.
    pub threads: usize,
    pub mixed_seconds: f64,
    pub cache_size_bytes: u64,
    pub direct_io: bool,
    pub interval_ms: u64,
    pub seed: u64,
    pub data_dir: String,
    pub machine: MachineFacts,
    /// The mount and the disk holding the data folder.
    pub disk: DiskFacts,
    pub load_average_start: String,
    pub load_average_end: String,
    pub disk_free_start_bytes: Option<u64>,
    pub disk_free_end_bytes: Option<u64>,
    pub file_system: String,
}

/// The key and value bytes a load handed the engine, over all its
/// keyspaces, as the child counted them while writing: what write
/// amplification divides the bytes written by. None for workloads that
/// write nothing.
fn raw_bytes(measured: &Measured) -> Option<u64> {
    (measured.raw_bytes > 0).then_some(measured.raw_bytes)
}

/// The figures of one engine on one workload, derived from its measurements.
#[derive(Clone, Debug)]
struct Summary {
    measured: Measured,
    first_interval_rows_per_s: Option<f64>,
    last_interval_rows_per_s: Option<f64>,
    windows: Option<Windows>,
    parts: Option<Parts>,
    raw_bytes: Option<u64>,
}

impl Summary {
    fn new(measured: &Measured, intervals: &[Interval], interval_ms: u64) -> Self {
        // The last interval is usually shorter than the others; if it is
        // under half an interval, the one before it tells the end rate better.
        let mut last = intervals.last();
        if intervals.len() >= 2 {
            let n = intervals.len();
            let last_us = intervals[n - 1].end_us - intervals[n - 2].end_us;
            if last_us < interval_ms * 1000 / 2 {
                last = Some(&intervals[n - 2]);
            }
        }
        let timeline = Timeline::new(intervals);
        Summary {
            measured: measured.clone(),
            first_interval_rows_per_s: intervals.first().map(|i| i.rows_per_s),
            last_interval_rows_per_s: last.map(|i| i.rows_per_s),
            windows: timeline.windows(WINDOW_US),
            parts: timeline.parts(PART_OF_ROWS),
            raw_bytes: raw_bytes(measured),
        }
    }
}

/// How a figure is written in the markdown summary.
#[derive(Clone, Copy, Debug)]
enum Unit {
    Count,
    Rate,
    Seconds,
    Bytes,
    /// Bytes per row: often a fraction of a byte for reads served from memory.
    BytesPerRow,
    Ratio,
}

/// One column of the summary: a name, how to show it, how to compute it.
struct Figure {
    column: &'static str,
    label: &'static str,
    unit: Unit,
    value: fn(&Summary) -> Option<f64>,
}

fn per_s(count: u64, us: u64) -> Option<f64> {
    (us > 0).then(|| count as f64 * 1e6 / us as f64)
}

fn per_row(bytes: u64, rows: u64) -> Option<f64> {
    (rows > 0).then(|| bytes as f64 / rows as f64)
}

/// Every figure, in column order. New columns go at the end, so that
/// scripts reading `summary.csv` by position keep working.
const FIGURES: &[Figure] = &[
    Figure { column: "rows", label: "rows", unit: Unit::Count, value: |s| Some(s.measured.rows as f64) },
    Figure {
        column: "seconds",
        label: "seconds (incl. final flush)",
        unit: Unit::Seconds,
        value: |s| Some(s.measured.elapsed_us as f64 / 1e6),
    },
    Figure {
        column: "rows_per_s",
        label: "rows/s overall",
        unit: Unit::Rate,
        value: |s| per_s(s.measured.rows, s.measured.elapsed_us),
    },
    Figure {
        column: "first_interval_rows_per_s",
        label: "rows/s, first interval",
        unit: Unit::Rate,
        value: |s| s.first_interval_rows_per_s,
    },
    Figure {
        column: "last_interval_rows_per_s",
        label: "rows/s, last interval",
        unit: Unit::Rate,
        value: |s| s.last_interval_rows_per_s,
    },
    Figure {
        column: "last_first_ratio",
        label: "last/first interval",
        unit: Unit::Ratio,
        value: |s| match (s.first_interval_rows_per_s, s.last_interval_rows_per_s) {
            (Some(f), Some(l)) if f > 0.0 => Some(l / f),
            _ => None,
        },
    },
    Figure {
        column: "rows_per_cpu_s",
        label: "rows per CPU-second",
        unit: Unit::Rate,
        value: |s| per_s(s.measured.rows, s.measured.cpu_us),
    },
    Figure {
        column: "cpu_s",
        label: "CPU seconds",
        unit: Unit::Seconds,
        value: |s| Some(s.measured.cpu_us as f64 / 1e6),
    },
    Figure {
        column: "flush_s",
        label: "final flush seconds",
        unit: Unit::Seconds,
        value: |s| Some(s.measured.flush_us as f64 / 1e6),
    },
    Figure {
        column: "disk_bytes",
        label: "bytes on disk (allocated)",
        unit: Unit::Bytes,
        value: |s| Some(s.measured.disk_bytes as f64),
    },
    Figure {
        column: "file_bytes",
        label: "file bytes (lengths)",
        unit: Unit::Bytes,
        value: |s| Some(s.measured.file_bytes as f64),
    },
    Figure {
        column: "peak_rss_bytes",
        label: "peak resident memory",
        unit: Unit::Bytes,
        value: |s| Some(s.measured.peak_rss_bytes as f64),
    },
    Figure {
        column: "read_bytes",
        label: "bytes read from disk",
        unit: Unit::Bytes,
        value: |s| Some(s.measured.read_bytes as f64),
    },
    Figure {
        column: "write_bytes",
        label: "bytes written to disk",
        unit: Unit::Bytes,
        value: |s| Some(s.measured.write_bytes as f64),
    },
    Figure {
        column: "min_10s_window_rows_per_s",
        label: "rows/s, lowest 10 s window",
        unit: Unit::Rate,
        value: |s| s.windows.map(|w| w.lowest_rows_per_s),
    },
    Figure {
        column: "median_10s_window_rows_per_s",
        label: "rows/s, median 10 s window",
        unit: Unit::Rate,
        value: |s| s.windows.map(|w| w.median_rows_per_s),
    },
    Figure {
        column: "min_median_10s_window_ratio",
        label: "**lowest / median 10 s window**",
        unit: Unit::Ratio,
        value: |s| s.windows.and_then(|w| w.ratio()),
    },
    Figure {
        column: "first_10pct_rows_per_s",
        label: "rows/s, first 10% of rows",
        unit: Unit::Rate,
        value: |s| s.parts.map(|p| p.first_rows_per_s),
    },
    Figure {
        column: "last_10pct_rows_per_s",
        label: "rows/s, last 10% of rows",
        unit: Unit::Rate,
        value: |s| s.parts.map(|p| p.last_rows_per_s),
    },
    Figure {
        column: "last_first_10pct_ratio",
        label: "**last 10% / first 10% of rows**",
        unit: Unit::Ratio,
        value: |s| s.parts.and_then(|p| p.ratio()),
    },
    Figure {
        column: "read_bytes_per_row",
        label: "bytes read per row",
        unit: Unit::BytesPerRow,
        value: |s| per_row(s.measured.read_bytes, s.measured.rows),
    },
    Figure {
        column: "write_bytes_per_row",
        label: "bytes written per row",
        unit: Unit::BytesPerRow,
        value: |s| per_row(s.measured.write_bytes, s.measured.rows),
    },
    Figure {
        column: "raw_bytes",
        label: "raw key+value bytes loaded",
        unit: Unit::Bytes,
        value: |s| s.raw_bytes.map(|b| b as f64),
    },
    Figure {
        column: "write_amplification",
        label: "write amplification (written / raw)",
        unit: Unit::Ratio,
        value: |s| match s.raw_bytes {
            Some(raw) if raw > 0 => Some(s.measured.write_bytes as f64 / raw as f64),
            _ => None,
        },
    },
    Figure {
        column: "raw_disk_ratio",
        label: "raw bytes / bytes on disk",
        unit: Unit::Ratio,
        value: |s| match s.raw_bytes {
            Some(raw) if s.measured.disk_bytes > 0 => Some(raw as f64 / s.measured.disk_bytes as f64),
            _ => None,
        },
    },
    Figure {
        column: "live_bytes",
        label: "live bytes (the engine's own count)",
        unit: Unit::Bytes,
        value: |s| (s.measured.live_bytes > 0).then_some(s.measured.live_bytes as f64),
    },
    Figure {
        column: "disk_live_ratio",
        label: "bytes on disk / live bytes",
        unit: Unit::Ratio,
        value: |s| {
            (s.measured.live_bytes > 0).then(|| s.measured.disk_bytes as f64 / s.measured.live_bytes as f64)
        },
    },
    Figure {
        // With direct I/O, disk reads per row: for point-get, reads per get.
        column: "read_calls_per_row",
        label: "read system calls per row",
        unit: Unit::Ratio,
        value: |s| per_row(s.measured.read_calls, s.measured.rows),
    },
];

/// The header of `intervals.csv`.
pub const INTERVALS_HEADER: &str = "engine,workload,interval_end_s,rows,rows_per_s";

/// The header of `summary.csv`.
pub fn summary_header() -> String {
    let mut header = String::from("engine,workload");
    for f in FIGURES {
        header.push(',');
        header.push_str(f.column);
    }
    header
}

/// What became of one workload's chart: the files' stem, or why none was drawn.
#[derive(Clone, Debug)]
struct ChartOutcome {
    workload: WorkloadKind,
    drawn: std::result::Result<String, String>,
}

/// The whole run's results, ready to be written.
pub struct Report<'a> {
    info: &'a RunInfo,
    runs: &'a [EngineRun],
    /// Filled by [`Report::write`], so that `summary.md` links the charts it drew.
    charts: Vec<ChartOutcome>,
}

impl<'a> Report<'a> {
    pub fn new(info: &'a RunInfo, runs: &'a [EngineRun]) -> Self {
        Report { info, runs, charts: Vec::new() }
    }

    fn summary(&self, engine: EngineKind, workload: WorkloadKind) -> Option<Summary> {
        let run = self.runs.iter().find(|r| r.engine == engine)?;
        let (_, measured) = run.results.iter().find(|(w, _)| *w == workload)?;
        Some(Summary::new(measured, &run.intervals_of(workload), self.info.interval_ms))
    }

    /// fractaldb's figure over another engine's, when both exist.
    fn ratio(&self, figure: &Figure, workload: WorkloadKind, other: EngineKind) -> Option<f64> {
        let ours = (figure.value)(&self.summary(EngineKind::Fractaldb, workload)?)?;
        let theirs = (figure.value)(&self.summary(other, workload)?)?;
        (theirs != 0.0).then(|| ours / theirs)
    }

    /// For a load both fractaldb and fractaldb-sql ran, the share of the
    /// engine's rows/s that the SQL layer keeps, in a sentence (issue 19
    /// asks for at least half).
    fn sql_share(&self, workload: WorkloadKind) -> Option<String> {
        if !workload.is_load() {
            return None;
        }
        let rate = |engine| {
            let measured = self.summary(engine, workload)?.measured;
            per_s(measured.rows, measured.elapsed_us)
        };
        let engine = rate(EngineKind::Fractaldb)?;
        let sql = rate(EngineKind::FractaldbSql)?;
        if engine <= 0.0 || sql <= 0.0 {
            return None;
        }
        Some(format!(
            "**fractaldb-sql keeps {:.0}% of fractaldb's rate** ({} vs {} rows/s overall: fractaldb / \
             fractaldb-sql = {}x). Issue 19 asks the SQL layer to keep at least 50%.",
            sql / engine * 100.0,
            human_number(sql, Unit::Rate),
            human_number(engine, Unit::Rate),
            human_ratio(engine / sql),
        ))
    }

    /// The engines compared with fractaldb in this run: every other engine
    /// the run had, in the run's order (none if fractaldb did not run).
    fn compared(&self) -> Vec<EngineKind> {
        if !self.info.engines.contains(&EngineKind::Fractaldb) {
            return Vec::new();
        }
        self.info.engines.iter().copied().filter(|&e| e != EngineKind::Fractaldb).collect()
    }

    /// The chart of one workload: a line per engine that reported intervals
    /// of it, through the same points as `intervals.csv`; none if no engine did.
    fn chart(&self, workload: WorkloadKind) -> Option<Chart> {
        let lines: Vec<Line> = self
            .runs
            .iter()
            .map(|run| Line {
                label: run.engine.name().to_string(),
                colour: EngineKind::ALL.iter().position(|&e| e == run.engine).unwrap_or(0),
                points: run
                    .intervals_of(workload)
                    .iter()
                    .map(|i| (i.end_us as f64 / 1e6, i.rows_per_s))
                    .collect(),
            })
            .filter(|line| !line.points.is_empty())
            .collect();
        if lines.is_empty() {
            return None;
        }
        let rows = self
            .runs
            .iter()
            .flat_map(|r| r.results.iter().filter(|(w, _)| *w == workload).map(|(_, m)| m.rows))
            .max()
            .unwrap_or(0);
        Some(Chart {
            title: format!(
                "{workload}: rows/s per {} s interval; {} rows, cache {}",
                self.info.interval_ms as f64 / 1000.0,
                group_digits(rows),
                human_bytes(self.info.cache_size_bytes as f64)
            ),
            x_label: "seconds since the workload started".into(),
            y_label: "rows/s in the interval".into(),
            lines,
        })
    }

    /// `intervals.csv`: every interval of every engine and workload; `rows`
    /// counts from the start of the workload.
    pub fn intervals_csv(&self) -> String {
        let mut out = String::from(INTERVALS_HEADER);
        out.push('\n');
        for run in self.runs {
            for (workload, i) in &run.intervals {
                let _ = writeln!(
                    out,
                    "{},{},{:.3},{},{:.1}",
                    run.engine,
                    workload,
                    i.end_us as f64 / 1e6,
                    i.rows,
                    i.rows_per_s
                );
            }
        }
        out
    }

    /// `engine-counters.csv`: each engine's own counters (cumulative since
    /// it opened) at the end of every interval, one line per counter, in
    /// long form since every engine keeps different ones; `None` when no
    /// engine sent any.
    pub fn engine_counters_csv(&self) -> Option<String> {
        if self.runs.iter().all(|r| r.counters.is_empty()) {
            return None;
        }
        let mut out = String::from("engine,workload,interval_end_s,counter,value\n");
        for run in self.runs {
            for (workload, end_us, pairs) in &run.counters {
                for (name, value) in pairs {
                    let _ = writeln!(
                        out,
                        "{},{},{:.3},{},{}",
                        run.engine,
                        workload,
                        *end_us as f64 / 1e6,
                        name,
                        value
                    );
                }
            }
        }
        Some(out)
    }

    /// `summary.csv`: one line per engine and workload, then one line per
    /// other engine and workload both ran (engine `fractaldb/rocksdb`,
    /// `fractaldb/sqlite`) with fractaldb's figure over that engine's; an
    /// empty cell where a figure or ratio does not exist.
    pub fn summary_csv(&self) -> String {
        let mut out = summary_header();
        out.push('\n');
        for &engine in &self.info.engines {
            for &workload in &self.info.workloads {
                let Some(summary) = self.summary(engine, workload) else { continue };
                let _ = write!(out, "{engine},{workload}");
                for f in FIGURES {
                    out.push(',');
                    if let Some(v) = (f.value)(&summary) {
                        out.push_str(&csv_number(v, f.unit));
                    }
                }
                out.push('\n');
            }
        }
        for other in self.compared() {
            for &workload in &self.info.workloads {
                // A workload one of the two did not run has no ratios (not
                // a line of empty cells).
                if self.summary(EngineKind::Fractaldb, workload).is_none()
                    || self.summary(other, workload).is_none()
                {
                    continue;
                }
                let _ = write!(out, "fractaldb/{other},{workload}");
                for f in FIGURES {
                    out.push(',');
                    if let Some(r) = self.ratio(f, workload, other) {
                        let _ = write!(out, "{r:.4}");
                    }
                }
                out.push('\n');
            }
        }
        out
    }

    /// The machine and disk facts, as rows of the summary's Machine table.
    fn machine_facts(&self) -> Vec<(&'static str, String)> {
        let info = self.info;
        let m = &info.machine;
        let d = &info.disk;
        let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_string());
        let free = |b: Option<u64>| b.map_or("unknown".to_string(), |b| human_bytes(b as f64));
        let device = match (&d.device, &d.model) {
            (Some(device), Some(model)) => format!("{device} ({model})"),
            (Some(device), None) => format!("{device} (no model reported)"),
            (None, _) => "none found (not a block device: overlay, tmpfs or network)".to_string(),
        };
        let rotational = match d.rotational {
            Some(true) => "yes (a spinning disk, or a virtual disk that says so)",
            Some(false) => "no (SSD, NVMe or memory)",
            None => "unknown",
        };
        vec![
            ("cores", m.cores.to_string()),
            ("cpu", m.cpu_model.clone()),
            ("memory", human_bytes(m.memory_bytes as f64)),
            ("kernel", m.kernel.clone()),
            ("os", m.os.clone()),
            ("load average at start (1, 5, 15 min)", info.load_average_start.clone()),
            ("load average at end", info.load_average_end.clone()),
            ("data file system", info.file_system.clone()),
            ("data mount", format!("`{}` from `{}`", known(&d.mount_point), known(&d.mount_source))),
            ("mount options", known(&d.mount_options)),
            ("data disk", device),
            ("disk size", d.size_bytes.map_or("unknown".to_string(), |b| human_bytes(b as f64))),
            ("rotational", rotational.to_string()),
            ("I/O scheduler", known(&d.scheduler)),
            ("disk free at start", free(info.disk_free_start_bytes)),
            ("disk free at end", free(info.disk_free_end_bytes)),
        ]
    }

    /// `summary.md`: the run's circumstances, the machine, each engine's
    /// settings, and per workload a table with every engine's figures and
    /// the ratios, and the throughput chart.
    pub fn summary_md(&self) -> String {
        let info = self.info;
        let mut out = String::new();
        let _ = writeln!(out, "# fractaldb bench\n");
        let _ = writeln!(out, "Started {} UTC: `{}`\n", info.started_utc, info.command_line);
        let _ = writeln!(out, "| run | |\n|---|---|");
        let rows = [
            ("workloads", info.workloads.iter().map(|w| w.name()).collect::<Vec<_>>().join(", ")),
            ("engines", info.engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")),
            ("rows per load", group_digits(info.rows)),
            ("point gets", group_digits(info.gets)),
            ("rows per write batch", group_digits(info.batch_rows)),
            ("rows per range (range-scan)", group_digits(info.range_rows)),
            ("threads, seconds (mixed)", format!("{}, {} s", info.threads, info.mixed_seconds)),
            (
                "cache",
                format!("{} ({} bytes)", human_bytes(info.cache_size_bytes as f64), info.cache_size_bytes),
            ),
            ("direct I/O", info.direct_io.to_string()),
            ("interval", format!("{} s", info.interval_ms as f64 / 1000.0)),
            ("seed", info.seed.to_string()),
            ("data folder", format!("`{}` ({})", info.data_dir, info.file_system)),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "| {k} | {v} |");
        }
        let _ = writeln!(out, "\n## Machine\n\n| fact | value |\n|---|---|");
        for (k, v) in self.machine_facts() {
            let _ = writeln!(out, "| {k} | {v} |");
        }
        let _ = writeln!(out, "\n## Settings\n");
        for run in self.runs {
            let settings = run.settings.as_deref().unwrap_or("(the engine did not open)");
            let _ = writeln!(out, "- **{}**: {settings}", run.engine);
        }
        let compared = self.compared();
        for &workload in &info.workloads {
            let _ = writeln!(out, "\n## {workload}\n");
            let mut header = String::from("| figure |");
            let mut rule = String::from("|---|");
            for engine in &info.engines {
                let _ = write!(header, " {engine} |");
                rule.push_str("---:|");
            }
            for other in &compared {
                let _ = write!(header, " fractaldb/{other} |");
                rule.push_str("---:|");
            }
            let _ = writeln!(out, "{header}\n{rule}");
            for f in FIGURES {
                let _ = write!(out, "| {} |", f.label);
                for &engine in &info.engines {
                    let cell = self
                        .summary(engine, workload)
                        .and_then(|s| (f.value)(&s))
                        .map_or_else(|| "-".to_string(), |v| human_number(v, f.unit));
                    let _ = write!(out, " {cell} |");
                }
                for &other in &compared {
                    let cell = self.ratio(f, workload, other).map_or_else(|| "-".to_string(), human_ratio);
                    let _ = write!(out, " {cell} |");
                }
                out.push('\n');
            }
            if let Some(line) = self.sql_share(workload) {
                let _ = writeln!(out, "\n{line}");
            }
            match self.charts.iter().find(|c| c.workload == workload).map(|c| &c.drawn) {
                Some(Ok(stem)) => {
                    let _ = writeln!(
                        out,
                        "\n![{workload}: rows/s per interval, one line per engine]({stem}.png)\n\n\
                         Chart: [{stem}.png]({stem}.png), [{stem}.svg]({stem}.svg)"
                    );
                }
                Some(Err(why)) => {
                    let _ = writeln!(out, "\nNo chart: {why}");
                }
                None => {}
            }
        }
        let whole_process: Vec<&str> = self
            .runs
            .iter()
            .filter(|r| r.results.iter().any(|(_, m)| m.peak_rss_whole_process))
            .map(|r| r.engine.name())
            .collect();
        let _ = writeln!(
            out,
            "\nNotes: intervals are {} s; the last interval shown is the last one at least half that long. \
             Loads end with a flush that makes them durable, counted in their seconds. CPU seconds and disk \
             bytes are the whole engine process's (background threads included), from getrusage and \
             /proc/self/io; bytes on disk are the dataset's folder after the workload. Ratios are \
             fractaldb's figure over the other engine's. Where an engine has counters of its own \
             (fractaldb: checkpoints, cache waits, write-backs, spill reads, log bytes), their values at the \
             end of every interval are in engine-counters.csv, beside the process's memory then (resident, \
             its peak so far, the allocator's live, active, metadata and resident bytes, and the bytes it has \
             given back to the kernel so far).",
            info.interval_ms as f64 / 1000.0
        );
        let _ = writeln!(
            out,
            "\nSteadiness: between two interval reports the rate is taken as constant. Windows are {} s long \
             and start at every interval boundary (a run shorter than one window has none); the lowest is \
             compared with the median. The first and last {}% of rows are timed from when the row count \
             crossed {}%, {}% and 100% (shown only when those fall in different intervals). Both leave out a \
             load's final flush. Raw bytes are the key and value bytes a load handed the engine, over all \
             its keyspaces (iibench: the row and its three secondary index entries); write amplification \
             is bytes written to disk over raw bytes.",
            WINDOW_US / 1_000_000,
            PART_OF_ROWS * 100.0,
            PART_OF_ROWS * 100.0,
            100.0 - PART_OF_ROWS * 100.0
        );
        if !whole_process.is_empty() {
            let _ = writeln!(
                out,
                "\nPeak memory of {} covers the whole process so far: the kernel refused to reset the mark.",
                whole_process.join(", ")
            );
        }
        let failures: Vec<&EngineRun> = self.runs.iter().filter(|r| r.failure.is_some()).collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\n## Failures\n");
            for run in failures {
                let _ = writeln!(out, "- **{}**: {}", run.engine, run.failure.as_deref().unwrap_or_default());
            }
        }
        out
    }

    /// Draws each workload's chart into `out_dir` as `<workload>.png` and
    /// `<workload>.svg`, then writes the CSV files and `summary.md` (which
    /// links the charts drawn). A chart that cannot be drawn is noted in
    /// the summary and on standard error, not fatal: the figures matter more.
    pub fn write(&mut self, out_dir: &Path) -> Result<()> {
        self.charts.clear();
        for &workload in &self.info.workloads {
            let Some(chart) = self.chart(workload) else { continue };
            let stem = workload.name().to_string();
            let drawn = chart::draw(
                &chart,
                &out_dir.join(format!("{stem}.png")),
                &out_dir.join(format!("{stem}.svg")),
            )
            .map(|()| stem)
            .map_err(|e| e.to_string());
            if let Err(why) = &drawn {
                eprintln!("fractaldb bench: no chart for {workload}: {why}");
            }
            self.charts.push(ChartOutcome { workload, drawn });
        }
        let counters = self.engine_counters_csv().map(|t| ("engine-counters.csv", t));
        for (name, text) in [
            ("intervals.csv", self.intervals_csv()),
            ("summary.csv", self.summary_csv()),
            ("summary.md", self.summary_md()),
        ]
        .into_iter()
        .chain(counters)
        {
            let path = out_dir.join(name);
            std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// The chart files [`write`](Self::write) drew, by name.
    pub fn chart_files(&self) -> Vec<String> {
        self.charts
            .iter()
            .filter_map(|c| c.drawn.as_ref().ok())
            .flat_map(|stem| [format!("{stem}.png"), format!("{stem}.svg")])
            .collect()
    }
}

fn csv_number(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count | Unit::Bytes => format!("{}", v.round() as u64),
        Unit::Rate => format!("{v:.1}"),
        Unit::Seconds => format!("{v:.3}"),
        Unit::BytesPerRow => format!("{v:.2}"),
        Unit::Ratio => format!("{v:.4}"),
    }
}

fn human_number(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => group_digits(v.round() as u64),
        Unit::Rate if v >= 100.0 => group_digits(v.round() as u64),
        Unit::Rate => format!("{v:.2}"),
        Unit::Seconds => format!("{v:.2}"),
        Unit::Bytes => human_bytes(v),
        Unit::BytesPerRow if v >= 1024.0 => human_bytes(v),
        Unit::BytesPerRow => format!("{v:.1} B"),
        Unit::Ratio => format!("{v:.2}"),
    }
}

/// A ratio with enough digits to tell small ones apart: "12.3", "1.23", "2.04e-3".
fn human_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.1}")
    } else if r >= 0.1 || r == 0.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.2e}")
    }
}

/// 1234567 -> "1,234,567".
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units: "64.0 MiB".
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{} B", v as u64)
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(rows: u64, elapsed_us: u64, disk_bytes: u64) -> Measured {
        let raw_bytes = rows * super::super::INSERT_ROW_BYTES;
        Measured { rows, elapsed_us, cpu_us: elapsed_us, disk_bytes, raw_bytes, ..Default::default() }
    }

    #[test]
    fn summary_has_ratio_lines_of_the_same_width() {
        let info = RunInfo {
            workloads: vec![WorkloadKind::Insert],
            engines: vec![EngineKind::Fractaldb, EngineKind::Sqlite],
            interval_ms: 1000,
            ..Default::default()
        };
        let mut ours = EngineRun::new(EngineKind::Fractaldb);
        ours.results.push((WorkloadKind::Insert, measured(1000, 1_000_000, 50)));
        ours.intervals
            .push((WorkloadKind::Insert, Interval { end_us: 1_000_000, rows: 1000, rows_per_s: 1000.0 }));
        let mut theirs = EngineRun::new(EngineKind::Sqlite);
        theirs.results.push((WorkloadKind::Insert, measured(1000, 4_000_000, 100)));
        let runs = [ours, theirs];
        let report = Report::new(&info, &runs);
        let csv = report.summary_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        let width = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == width));
        let ratio: Vec<&str> = lines[3].split(',').collect();
        assert_eq!(ratio[0], "fractaldb/sqlite");
        assert_eq!(ratio[4], "4.0000"); // rows/s: 1000 vs 250
        assert!(report.summary_md().contains("| fractaldb/sqlite |"));
    }

    /// A run of `insert` on fractaldb and RocksDB: 20 one-second intervals
    /// each, fractaldb steady at 1000 rows/s, RocksDB at 2000 rows/s but
    /// stalled for the whole of its 16th second.
    fn steady_and_stalled() -> (RunInfo, Vec<EngineRun>) {
        let info = RunInfo {
            workloads: vec![WorkloadKind::Insert],
            engines: vec![EngineKind::Fractaldb, EngineKind::Rocksdb],
            interval_ms: 1000,
            cache_size_bytes: 1 << 20,
            ..Default::default()
        };
        let mut runs = Vec::new();
        for (engine, rate, stall) in
            [(EngineKind::Fractaldb, 1000, None), (EngineKind::Rocksdb, 2000, Some(15))]
        {
            let mut run = EngineRun::new(engine);
            let mut rows = 0;
            for second in 0..20u64 {
                let rate = if Some(second) == stall { 0 } else { rate };
                rows += rate;
                let end_us = (second + 1) * 1_000_000;
                run.intervals
                    .push((WorkloadKind::Insert, Interval { end_us, rows, rows_per_s: rate as f64 }));
            }
            let mut m = measured(rows, 20_000_000, 1 << 20);
            m.write_bytes = rows * 2 * super::super::INSERT_ROW_BYTES;
            run.results.push((WorkloadKind::Insert, m));
            runs.push(run);
        }
        (info, runs)
    }

    /// The cell of `summary.csv` in `column` on the line of `engine`.
    fn cell(csv: &str, engine: &str, column: &str) -> String {
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = header.iter().position(|c| *c == column).unwrap_or_else(|| panic!("no {column}"));
        let line = lines.find(|l| l.starts_with(&format!("{engine},"))).unwrap();
        line.split(',').nth(at).unwrap().to_string()
    }

    #[test]
    fn steadiness_and_write_amplification_come_from_the_intervals() {
        let (info, runs) = steady_and_stalled();
        let csv = Report::new(&info, &runs).summary_csv();
        assert_eq!(cell(&csv, "fractaldb", "min_median_10s_window_ratio"), "1.0000");
        // RocksDB's windows holding the stalled second made 9 s of rows in 10 s.
        assert_eq!(cell(&csv, "rocksdb", "min_10s_window_rows_per_s"), "1800.0");
        assert_eq!(cell(&csv, "rocksdb", "min_median_10s_window_ratio"), "0.9000");
        assert_eq!(cell(&csv, "fractaldb", "last_first_10pct_ratio"), "1.0000");
        assert_eq!(
            cell(&csv, "fractaldb", "raw_bytes"),
            (20_000 * super::super::INSERT_ROW_BYTES).to_string()
        );
        assert_eq!(cell(&csv, "fractaldb", "write_amplification"), "2.0000");
        assert_eq!(cell(&csv, "fractaldb", "write_bytes_per_row"), "216.00");
        // The ratio line covers the new figures too: fractaldb is steadier.
        assert_eq!(
            cell(&csv, "fractaldb/rocksdb", "min_median_10s_window_ratio"),
            format!("{:.4}", 1.0 / 0.9)
        );
    }

    #[test]
    fn every_other_engine_is_compared_and_charts_are_linked() {
        let (info, runs) = steady_and_stalled();
        let dir = std::env::temp_dir().join(format!("fractaldb-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut report = Report::new(&info, &runs);
        assert_eq!(report.compared(), vec![EngineKind::Rocksdb]);
        report.write(&dir).unwrap();
        assert_eq!(report.chart_files(), ["insert.png", "insert.svg"]);
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(md.contains("](insert.png)") && md.contains("](insert.svg)"), "{md}");
        assert!(md.contains("| fractaldb/rocksdb |"), "{md}");
        assert!(dir.join("insert.png").exists() && dir.join("insert.svg").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_sql_layer_share_of_the_engine_rate_is_said_for_loads() {
        let info = RunInfo {
            workloads: vec![WorkloadKind::Iibench, WorkloadKind::Settle],
            engines: vec![EngineKind::Fractaldb, EngineKind::FractaldbSql],
            interval_ms: 1000,
            ..Default::default()
        };
        let mut engine = EngineRun::new(EngineKind::Fractaldb);
        engine.results.push((WorkloadKind::Iibench, measured(1000, 1_000_000, 50)));
        engine.results.push((WorkloadKind::Settle, measured(1000, 1_000_000, 50)));
        let mut sql = EngineRun::new(EngineKind::FractaldbSql);
        sql.results.push((WorkloadKind::Iibench, measured(1000, 2_050_000, 60)));
        let runs = [engine, sql];
        let report = Report::new(&info, &runs);
        let md = report.summary_md();
        assert!(
            md.contains(
                "**fractaldb-sql keeps 49% of fractaldb's rate** (488 vs 1,000 rows/s overall: \
                 fractaldb / fractaldb-sql = 2.05x)"
            ),
            "{md}"
        );
        assert_eq!(md.matches("keeps").count(), 1, "only for the load both ran:\n{md}");
        assert!(md.contains("| fractaldb/fractaldb-sql |"), "{md}");
        assert_eq!(cell(&report.summary_csv(), "fractaldb/fractaldb-sql", "rows_per_s"), "2.0500");
        // Settle ran on fractaldb alone: no line of empty ratios for it.
        let csv = report.summary_csv();
        assert!(csv.contains("fractaldb/fractaldb-sql,iibench,"), "{csv}");
        assert!(!csv.contains("fractaldb/fractaldb-sql,settle"), "{csv}");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(group_digits(1_234_567), "1,234,567");
        assert_eq!(group_digits(12), "12");
        assert_eq!(human_bytes(64.0 * 1024.0 * 1024.0), "64.0 MiB");
        assert_eq!(human_bytes(10.0), "10 B");
        assert_eq!(human_ratio(62.789), "62.8");
        assert_eq!(human_ratio(0.5), "0.50");
        assert_eq!(human_ratio(0.00204), "2.04e-3");
    }
}
