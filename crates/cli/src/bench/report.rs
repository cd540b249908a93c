//! Turns what the engines' processes measured into the run's files:
//! `intervals.csv`, `summary.csv` and `summary.md`.

use std::fmt::Write as _;
use std::path::Path;

use super::engines::EngineKind;
use super::protocol::Measured;
use super::sys::MachineFacts;
use super::workloads::{Interval, WorkloadKind};
use crate::error::{Context, Result};

/// Everything one engine's process reported, or how it failed.
#[derive(Clone, Debug)]
pub struct EngineRun {
    pub engine: EngineKind,
    /// The settings string the engine sent when it opened.
    pub settings: Option<String>,
    pub results: Vec<(WorkloadKind, Measured)>,
    pub intervals: Vec<(WorkloadKind, Interval)>,
    /// Why the process did not finish every workload, if it did not.
    pub failure: Option<String>,
}

impl EngineRun {
    /// A run with nothing reported yet.
    pub fn new(engine: EngineKind) -> Self {
        EngineRun { engine, settings: None, results: Vec::new(), intervals: Vec::new(), failure: None }
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
    pub cache_size_bytes: u64,
    pub direct_io: bool,
    pub interval_ms: u64,
    pub seed: u64,
    pub data_dir: String,
    pub machine: MachineFacts,
    pub load_average_start: String,
    pub load_average_end: String,
    pub disk_free_start_bytes: Option<u64>,
    pub disk_free_end_bytes: Option<u64>,
    pub file_system: String,
}

/// The figures of one engine on one workload, derived from its measurements.
#[derive(Clone, Debug)]
struct Summary {
    measured: Measured,
    first_interval_rows_per_s: Option<f64>,
    last_interval_rows_per_s: Option<f64>,
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
        Summary {
            measured: measured.clone(),
            first_interval_rows_per_s: intervals.first().map(|i| i.rows_per_s),
            last_interval_rows_per_s: last.map(|i| i.rows_per_s),
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
        column: "raw_bytes",
        label: "raw bytes loaded (keys + values)",
        unit: Unit::Bytes,
        value: |s| (s.measured.raw_bytes > 0).then_some(s.measured.raw_bytes as f64),
    },
    Figure {
        column: "raw_disk_ratio",
        label: "raw bytes / bytes on disk",
        unit: Unit::Ratio,
        value: |s| {
            (s.measured.raw_bytes > 0 && s.measured.disk_bytes > 0)
                .then(|| s.measured.raw_bytes as f64 / s.measured.disk_bytes as f64)
        },
    },
];

/// The engines fractaldb is compared with, in ratio-column order.
const OTHERS: [EngineKind; 2] = [EngineKind::Rocksdb, EngineKind::Sqlite];

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

/// The whole run's results, ready to be written.
pub struct Report<'a> {
    info: &'a RunInfo,
    runs: &'a [EngineRun],
}

impl<'a> Report<'a> {
    pub fn new(info: &'a RunInfo, runs: &'a [EngineRun]) -> Self {
        Report { info, runs }
    }

    fn summary(&self, engine: EngineKind, workload: WorkloadKind) -> Option<Summary> {
        let run = self.runs.iter().find(|r| r.engine == engine)?;
        let (_, measured) = run.results.iter().find(|(w, _)| *w == workload)?;
        let intervals: Vec<Interval> =
            run.intervals.iter().filter(|(w, _)| *w == workload).map(|(_, i)| *i).collect();
        Some(Summary::new(measured, &intervals, self.info.interval_ms))
    }

    /// fractaldb's figure over another engine's, when both exist.
    fn ratio(&self, figure: &Figure, workload: WorkloadKind, other: EngineKind) -> Option<f64> {
        let ours = (figure.value)(&self.summary(EngineKind::Fractaldb, workload)?)?;
        let theirs = (figure.value)(&self.summary(other, workload)?)?;
        (theirs != 0.0).then(|| ours / theirs)
    }

    /// The engines compared with fractaldb in this run.
    fn compared(&self) -> Vec<EngineKind> {
        if !self.info.engines.contains(&EngineKind::Fractaldb) {
            return Vec::new();
        }
        OTHERS.into_iter().filter(|e| self.info.engines.contains(e)).collect()
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

    /// `summary.csv`: one line per engine and workload, then one line per
    /// ratio (engine `fractaldb/rocksdb`, `fractaldb/sqlite`) with each
    /// figure's ratio; an empty cell where a figure or ratio does not exist.
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

    /// `summary.md`: the run's circumstances, each engine's settings, and a
    /// table per workload with every engine's figures and the ratios.
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
        let m = &info.machine;
        let _ = writeln!(out, "\n## Machine\n\n| fact | value |\n|---|---|");
        let free = |b: Option<u64>| b.map_or("unknown".to_string(), |b| human_bytes(b as f64));
        let facts = [
            ("cores", m.cores.to_string()),
            ("cpu", m.cpu_model.clone()),
            ("memory", human_bytes(m.memory_bytes as f64)),
            ("kernel", m.kernel.clone()),
            ("load average at start (1, 5, 15 min)", info.load_average_start.clone()),
            ("load average at end", info.load_average_end.clone()),
            ("disk free at start", free(info.disk_free_start_bytes)),
            ("disk free at end", free(info.disk_free_end_bytes)),
        ];
        for (k, v) in facts {
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
             fractaldb's figure over the other engine's.",
            info.interval_ms as f64 / 1000.0
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

    /// Writes the three files into `out_dir`.
    pub fn write(&self, out_dir: &Path) -> Result<()> {
        for (name, text) in [
            ("intervals.csv", self.intervals_csv()),
            ("summary.csv", self.summary_csv()),
            ("summary.md", self.summary_md()),
        ] {
            let path = out_dir.join(name);
            std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

fn csv_number(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count | Unit::Bytes => format!("{}", v.round() as u64),
        Unit::Rate => format!("{v:.1}"),
        Unit::Seconds => format!("{v:.3}"),
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
        Measured { rows, elapsed_us, cpu_us: elapsed_us, disk_bytes, ..Default::default() }
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
