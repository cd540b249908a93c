//! What an engine's child process tells the parent, one tagged,
//! tab-separated line per message on its standard output. Lines without the
//! tag (anything an engine library might print) are passed through untouched.

use std::collections::BTreeMap;

use super::workloads::{Interval, WorkloadKind};
use crate::error::{Error, Result};

/// Marks a line as a message of this protocol.
const TAG: &str = "@fractaldb-bench";

/// A workload's measurements, as the child took them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    pub rows: u64,
    /// Including the final flush of a load.
    pub elapsed_us: u64,
    pub flush_us: u64,
    /// User plus system CPU time of the whole child process during the workload.
    pub cpu_us: u64,
    /// From `/proc/self/io`, during the workload.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Read system calls (`syscr`), during the workload.
    pub read_calls: u64,
    /// Peak resident memory during the workload (or since the process began,
    /// where the kernel would not reset the mark: see `peak_rss_whole_process`).
    pub peak_rss_bytes: u64,
    pub peak_rss_whole_process: bool,
    /// The dataset's folder after the workload: allocated blocks and file lengths.
    pub disk_bytes: u64,
    pub file_bytes: u64,
    /// What the engine counts as live in those files (0: it cannot tell).
    pub live_bytes: u64,
    /// Bytes of the keys and values a load handed to the engine, before
    /// compression (zero for reads): with `disk_bytes`, the compression a
    /// load got.
    pub raw_bytes: u64,
}

/// One message from a child.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// The engine's settings string, sent when it opens.
    Settings(String),
    /// A workload's progress interval ended.
    Interval(WorkloadKind, Interval),
    /// The engine's own counters (cumulative since it opened) when that
    /// interval ended (its `end_us`), for engines that keep any.
    Counters(WorkloadKind, u64, Vec<(String, u64)>),
    /// A workload finished.
    Result(WorkloadKind, Measured),
    /// The child failed and is about to exit.
    Error(String),
}

/// Makes a free text fit on one tab-separated line.
fn one_line(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

impl Message {
    /// The line (without newline) that carries the message.
    pub fn encode(&self) -> String {
        match self {
            Message::Settings(text) => format!("{TAG}\tsettings\t{}", one_line(text)),
            Message::Interval(w, i) => {
                format!("{TAG}\tinterval\t{w}\t{}\t{}\t{}", i.end_us, i.rows, i.rows_per_s)
            }
            Message::Counters(w, end_us, pairs) => {
                let mut line = format!("{TAG}\tcounters\t{w}\t{end_us}");
                for (name, value) in pairs {
                    debug_assert!(!name.contains(['\t', '=', '\n']), "a counter name on one field: {name}");
                    line.push_str(&format!("\t{name}={value}"));
                }
                line
            }
            Message::Result(w, m) => format!(
                "{TAG}\tresult\t{w}\trows={}\telapsed_us={}\tflush_us={}\tcpu_us={}\tread_bytes={}\t\
                 write_bytes={}\tpeak_rss_bytes={}\tpeak_rss_whole_process={}\tdisk_bytes={}\tfile_bytes={}\t\
                 live_bytes={}\traw_bytes={}\tread_calls={}",
                m.rows,
                m.elapsed_us,
                m.flush_us,
                m.cpu_us,
                m.read_bytes,
                m.write_bytes,
                m.peak_rss_bytes,
                m.peak_rss_whole_process,
                m.disk_bytes,
                m.file_bytes,
                m.live_bytes,
                m.raw_bytes,
                m.read_calls
            ),
            Message::Error(text) => format!("{TAG}\terror\t{}", one_line(text)),
        }
    }

    /// The message on `line`: `Ok(None)` if the line is not a protocol
    /// line, an error if it is one but malformed.
    pub fn decode(line: &str) -> Result<Option<Message>> {
        let mut fields = line.split('\t');
        if fields.next() != Some(TAG) {
            return Ok(None);
        }
        let bad = || Error::new(format!("malformed message from an engine process: {line:?}"));
        let kind = fields.next().ok_or_else(bad)?;
        let rest: Vec<&str> = fields.collect();
        let workload = |s: &str| WorkloadKind::from_name(s).ok_or_else(bad);
        let message = match (kind, rest.as_slice()) {
            ("settings", [text]) => Message::Settings(text.to_string()),
            ("error", [text]) => Message::Error(text.to_string()),
            ("interval", [w, end_us, rows, rate]) => Message::Interval(
                workload(w)?,
                Interval {
                    end_us: end_us.parse().map_err(|_| bad())?,
                    rows: rows.parse().map_err(|_| bad())?,
                    rows_per_s: rate.parse().map_err(|_| bad())?,
                },
            ),
            ("counters", [w, end_us, pairs @ ..]) => {
                let mut counters = Vec::with_capacity(pairs.len());
                for p in pairs {
                    let (name, value) = p.split_once('=').ok_or_else(bad)?;
                    counters.push((name.to_string(), value.parse().map_err(|_| bad())?));
                }
                Message::Counters(workload(w)?, end_us.parse().map_err(|_| bad())?, counters)
            }
            ("result", [w, pairs @ ..]) => {
                let map: BTreeMap<&str, &str> = pairs.iter().filter_map(|p| p.split_once('=')).collect();
                let num = |name: &str| -> Result<u64> {
                    map.get(name).and_then(|v| v.parse().ok()).ok_or_else(bad)
                };
                Message::Result(
                    workload(w)?,
                    Measured {
                        rows: num("rows")?,
                        elapsed_us: num("elapsed_us")?,
                        flush_us: num("flush_us")?,
                        cpu_us: num("cpu_us")?,
                        read_bytes: num("read_bytes")?,
                        write_bytes: num("write_bytes")?,
                        peak_rss_bytes: num("peak_rss_bytes")?,
                        peak_rss_whole_process: map.get("peak_rss_whole_process") == Some(&"true"),
                        disk_bytes: num("disk_bytes")?,
                        file_bytes: num("file_bytes")?,
                        live_bytes: num("live_bytes")?,
                        raw_bytes: num("raw_bytes")?,
                        read_calls: num("read_calls")?,
                    },
                )
            }
            _ => return Err(bad()),
        };
        Ok(Some(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_a_round_trip() {
        let messages = [
            Message::Settings("a\tb\nc".into()),
            Message::Interval(WorkloadKind::PointGet, Interval { end_us: 10, rows: 20, rows_per_s: 1.5 }),
            Message::Result(
                WorkloadKind::Iibench,
                Measured {
                    rows: 1,
                    elapsed_us: 2,
                    disk_bytes: 9,
                    raw_bytes: 27,
                    read_calls: 31,
                    peak_rss_whole_process: true,
                    ..Default::default()
                },
            ),
            Message::Error("boom".into()),
            Message::Counters(
                WorkloadKind::Insert,
                1_000_000,
                vec![("log_bytes".into(), 7), ("checkpoints".into(), 0)],
            ),
            Message::Counters(WorkloadKind::Insert, 5, Vec::new()),
        ];
        for m in messages {
            let decoded = Message::decode(&m.encode()).unwrap().unwrap();
            match (&m, &decoded) {
                (Message::Settings(_), Message::Settings(text)) => assert_eq!(text, "a b c"),
                _ => assert_eq!(m, decoded),
            }
        }
        assert_eq!(Message::decode("hello").unwrap(), None);
        assert!(Message::decode("@fractaldb-bench\tinterval\tinsert\tx").is_err());
        assert!(Message::decode("@fractaldb-bench\tcounters\tinsert\t5\tlog_bytes").is_err());
        assert!(Message::decode("@fractaldb-bench\tcounters\tinsert\t5\tlog_bytes=x").is_err());
    }
}
