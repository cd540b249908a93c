//! The sysbench insert grid of the 2017 report: sysbench's own
//! `oltp_insert` (one auto-increment row per transaction into one of the
//! tables, picked at random) over table counts x thread counts, with commit
//! sync on and off, insert transactions per second per cell.
//!
//! Commit sync is a start-up setting on every server here (fractaldb's
//! `tokudb_commit_sync` is not settable at run time, and sysbench cannot set
//! session variables), so each sync mode runs on a fresh server: off is
//! `--tokudb-commit-sync=OFF`, `--innodb-flush-log-at-trx-commit=2`,
//! `--rocksdb-flush-log-at-trx-commit=2` (each writes the log at commit and
//! syncs it in the background about once a second). Each table count starts
//! on a fresh database; its thread counts then run one after another on it.

use super::client;
use super::servers::ServerKind;
use super::workloads::{parse_sysbench, sysbench_base, Fresh, Params, Run};
use crate::bail;
use crate::error::{Error, Result};

/// The sync modes and each kind's setting for "off".
fn sync_modes(kind: Option<ServerKind>) -> Vec<(&'static str, Vec<String>)> {
    let off = match kind {
        Some(ServerKind::Fractaldb | ServerKind::FractaldbFast | ServerKind::FractaldbPool) => {
            "--tokudb-commit-sync=OFF"
        }
        Some(ServerKind::Innodb) => "--innodb-flush-log-at-trx-commit=2",
        Some(ServerKind::Myrocks) => "--rocksdb-flush-log-at-trx-commit=2",
        // A server the user runs keeps its own settings: one mode.
        None => return vec![("as-is", Vec::new())],
    };
    vec![("on", Vec::new()), ("off", vec![off.to_string()])]
}

/// The variant name of a cell's row: `tables=4 sync=on`.
pub fn variant(tables: usize, sync: &str) -> String {
    format!("tables={tables} sync={sync}")
}

pub fn run(kind: Option<ServerKind>, fresh: &Fresh, p: &Params, progress: &dyn Fn(&str)) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (sync, extra) in sync_modes(kind) {
        let server = fresh(&extra)?;
        let ep = &server.endpoint;
        for &tables in &p.grid_tables {
            {
                let mut c = client::connect(ep, None)?;
                client::exec_all(
                    &mut c,
                    &["DROP DATABASE IF EXISTS bench".into(), "CREATE DATABASE bench".into()],
                )?;
            }
            let out = sysbench_base("oltp_insert", ep, p, tables)
                .arg("prepare")
                .output()
                .map_err(|e| Error::new(format!("running sysbench (is it installed?): {e}")))?;
            if !out.status.success() {
                bail!(
                    "sysbench oltp_insert prepare ({tables} tables) failed: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            for &threads in &p.grid_threads {
                progress(&format!("sync {sync}, {tables} tables, {threads} threads, {} s", p.sysbench_secs));
                let before = server.counters();
                let out = sysbench_base("oltp_insert", ep, p, tables)
                    .arg(format!("--threads={threads}"))
                    .arg(format!("--time={}", p.sysbench_secs))
                    .arg(format!("--report-interval={}", (p.interval_secs.round() as u64).max(1)))
                    .arg("--percentile=99")
                    .arg("run")
                    .output()
                    .map_err(|e| Error::new(format!("running sysbench: {e}")))?;
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                if !out.status.success() {
                    bail!("sysbench oltp_insert run failed: {text}{}", String::from_utf8_lossy(&out.stderr));
                }
                let mut run = parse_sysbench(&text, threads)?;
                run.variant = variant(tables, sync);
                run.counters = match (before, server.counters()) {
                    (Some(b), Some(a)) => Some(a.since(&b)),
                    _ => None,
                };
                run.disk_bytes = server.disk_bytes();
                runs.push(run);
            }
        }
        server.stop()?;
    }
    Ok(runs)
}
