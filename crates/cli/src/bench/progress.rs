//! What the parent shows while an engine runs: on a terminal, one live line
//! per workload (elapsed time, rows done of how many, the last interval's
//! rate and the average); anywhere else, a plain line per interval.
//!
//! Plain lines are the default whenever a person is not watching (standard
//! output is a pipe or a file, `CI` is set, or the terminal is `dumb`):
//! logs and the smoke test read them, and a bar redrawn with carriage returns
//! would be noise there. Either way, a workload ends with the same `done:`
//! line, and the live line is erased before anything else is printed, so
//! what stays on standard output is the same lines in both modes (less the
//! per-interval ones on a terminal).

use std::borrow::Cow;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::engines::EngineKind;
use super::report::group_digits;
use super::say;
use super::workloads::{Interval, WorkloadKind};

/// How often the live line is redrawn, so its clock moves between intervals.
const TICK: Duration = Duration::from_millis(200);
/// The live line when the workload's row count is known. The bar takes
/// what the terminal's width leaves, so the figures fit on one line where
/// they can.
const BAR_TEMPLATE: &str = "{prefix} {elapsed_precise} [{wide_bar}] {human_pos}/{human_len} rows  {msg}";
/// The live line when it is not: a spinner instead of a bar.
const SPINNER_TEMPLATE: &str = "{prefix} {elapsed_precise} {spinner} {human_pos} rows  {msg}";

/// True if progress should be a live line: standard output is a terminal,
/// `CI` is unset (or "false" or "0"), and `TERM` is not `dumb`.
pub fn live_wanted() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"));
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    std::io::stdout().is_terminal() && !ci && !dumb
}

/// The rows a workload will do, where the plan tells: a load writes `rows`,
/// `point-get` reads `gets`, `scan` visits what `insert` wrote. None for a
/// workload whose count is not known beforehand; its live line then shows a
/// spinner instead of a bar.
pub fn expected_rows(workload: WorkloadKind, rows: u64, gets: u64) -> Option<u64> {
    if workload == WorkloadKind::PointGet {
        Some(gets)
    } else if workload.is_load() || matches!(workload, WorkloadKind::Scan | WorkloadKind::Settle) {
        Some(rows)
    } else {
        None
    }
}

/// The plain line for one interval, as printed when progress is not live.
pub fn interval_line(engine: EngineKind, workload: WorkloadKind, i: &Interval) -> String {
    format!(
        "[{engine}] {workload:<9} {:>9.1} s {:>14} rows {:>12} rows/s",
        i.end_us as f64 / 1e6,
        group_digits(i.rows),
        group_digits(i.rows_per_s.round() as u64)
    )
}

/// One engine's progress display.
pub struct Progress {
    engine: EngineKind,
    live: bool,
    /// The live line of the workload under way, if progress is live.
    bar: Option<(WorkloadKind, ProgressBar)>,
}

impl Progress {
    /// A display for `engine`: live lines if `live`, else plain lines.
    pub fn new(engine: EngineKind, live: bool) -> Self {
        Progress { engine, live, bar: None }
    }

    /// Shows that `workload` has begun (it may already have: then nothing changes).
    /// `expected_rows` sets the bar's length.
    pub fn begin(&mut self, workload: WorkloadKind, expected_rows: Option<u64>) {
        if !self.live || self.bar.as_ref().is_some_and(|(w, _)| *w == workload) {
            return;
        }
        self.clear();
        let template = if expected_rows.is_some() { BAR_TEMPLATE } else { SPINNER_TEMPLATE };
        // The templates are constants: one that does not parse is a bug here.
        let style = ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> ");
        let bar =
            ProgressBar::with_draw_target(expected_rows, ProgressDrawTarget::stdout()).with_style(style);
        bar.set_prefix(format!("[{}] {workload}", self.engine));
        bar.set_message("waiting for the first interval");
        bar.enable_steady_tick(TICK);
        self.bar = Some((workload, bar));
    }

    /// Shows an interval of `workload`: a plain line, or the live line updated.
    pub fn interval(&mut self, workload: WorkloadKind, i: &Interval, expected_rows: Option<u64>) {
        if !self.live {
            say(&interval_line(self.engine, workload, i));
            return;
        }
        self.begin(workload, expected_rows);
        if let Some((_, bar)) = &self.bar {
            bar.set_position(i.rows);
            bar.set_message(rates(i));
        }
    }

    /// Ends the live line of the workload under way and prints `line` (the workload's `done:` line).
    pub fn done(&mut self, line: &str) {
        self.clear();
        say(line);
    }

    /// Prints a line above the live one (or just prints it).
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some((_, bar)) => bar.suspend(|| say(line)),
            None => say(line),
        }
    }

    /// Erases the live line, if there is one.
    fn clear(&mut self) {
        if let Some((_, bar)) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A run that fails mid-workload leaves no half-drawn line behind.
    fn drop(&mut self) {
        self.clear();
    }
}

/// "now 12,345/s, avg 11,000/s" (rows per second: the last interval's and
/// the average since the workload began) for the live line.
fn rates(i: &Interval) -> Cow<'static, str> {
    let average = if i.end_us > 0 { i.rows as f64 * 1e6 / i.end_us as f64 } else { 0.0 };
    Cow::Owned(format!(
        "now {}/s, avg {}/s",
        group_digits(i.rows_per_s.round() as u64),
        group_digits(average.round() as u64)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_and_rates_read_well() {
        let i = Interval { end_us: 2_000_000, rows: 30_000, rows_per_s: 12_345.4 };
        assert_eq!(
            interval_line(EngineKind::Fractaldb, WorkloadKind::Insert, &i),
            "[fractaldb] insert       2.0 s         30,000 rows       12,345 rows/s"
        );
        assert_eq!(rates(&i), "now 12,345/s, avg 15,000/s");
    }

    #[test]
    fn loads_and_reads_know_their_rows() {
        assert_eq!(expected_rows(WorkloadKind::Insert, 100, 7), Some(100));
        assert_eq!(expected_rows(WorkloadKind::Scan, 100, 7), Some(100));
        assert_eq!(expected_rows(WorkloadKind::PointGet, 100, 7), Some(7));
    }

    #[test]
    fn templates_parse() {
        for template in [BAR_TEMPLATE, SPINNER_TEMPLATE] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
        }
    }
}
