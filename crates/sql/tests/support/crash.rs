//! A crash child: this test binary run again as a child process for one
//! test, which sees `var` set to the data folder and does the work there
//! (printing a line per acknowledged step), until the parent SIGKILLs it
//! and checks what a reopened database holds.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct CrashChild {
    child: Child,
    /// Lines the child printed, as they come.
    lines: Receiver<String>,
    /// Every line taken from `lines` so far.
    seen: Vec<String>,
    reader: JoinHandle<()>,
}

impl CrashChild {
    /// Runs test `test` of this binary as a child with `var=dir`.
    pub fn spawn(test: &str, var: &str, dir: &Path) -> CrashChild {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture"])
            .env(var, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        let reader = std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        CrashChild { child, lines, seen: Vec::new(), reader }
    }

    /// Waits until the child prints a line `stop` accepts (true), or ends
    /// or `timeout` passes (false).
    pub fn wait_for(&mut self, timeout: Duration, mut stop: impl FnMut(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) => {
                    let hit = stop(&l);
                    self.seen.push(l);
                    if hit {
                        return true;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// SIGKILLs the child and returns every line it printed.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.reader.join().unwrap();
        self.seen.extend(self.lines.try_iter());
        self.seen
    }
}

/// The last `<prefix>n` line's n.
pub fn last_number(lines: &[String], prefix: &str) -> Option<u64> {
    lines.iter().rev().find_map(|l| l.strip_prefix(prefix)).map(|n| n.parse().unwrap())
}
