//! A running statement's progress, readable from other threads (SHOW
//! PROCESSLIST's State, as TokuDB showed it: "Queried about 4000 rows",
//! "Inserted about 1000 rows", ...).
//!
//! Each session owns one [`Progress`]; while a statement runs, its thread
//! holds it in a thread-local, so the layers that touch rows (the access
//! paths, INSERT/UPDATE/DELETE) count without carrying the session. The
//! counters are relaxed atomics: a reader sees a recent, not an exact,
//! count, which is all "about" promises.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// What a statement is doing to the rows it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    Idle = 0,
    Queried = 1,
    Inserted = 2,
    Updated = 3,
    Deleted = 4,
    /// OPTIMIZE TABLE: which index, of how many, and how far into it.
    Optimizing = 5,
    /// A hot backup (`backup.rs`): `examined` counts the bytes copied,
    /// `changed` the bytes to copy.
    Backup = 6,
    /// ALTER TABLE copying the rows ("copy to tmp table", stage 1 of 2).
    AlterCopy = 7,
    /// An online index build (`online.rs`): "altering table", stage 1 of 1.
    AlterIndex = 8,
}

#[derive(Default)]
pub struct Progress {
    stage: AtomicU8,
    /// Rows read by the statement's access paths.
    examined: AtomicU64,
    /// Rows the statement changed (inserted, updated or deleted).
    changed: AtomicU64,
    /// OPTIMIZE TABLE: (index, of how many) packed as `index << 32 | of`,
    /// and the percent done of that index.
    optimizing: AtomicU64,
    percent: AtomicU64,
    /// Waiting for a metadata lock (`mdl.rs`).
    mdl_wait: std::sync::atomic::AtomicBool,
}

/// Reads a session's progress from another thread.
#[derive(Clone)]
pub struct ProgressHandle(pub(crate) Arc<Progress>);

impl ProgressHandle {
    /// The processlist State: `None` when no statement runs.
    pub fn state(&self) -> Option<String> {
        let p = &self.0;
        if p.mdl_wait.load(Ordering::Relaxed) {
            return Some("Waiting for table metadata lock".into());
        }
        let stage = p.stage.load(Ordering::Relaxed);
        let (examined, changed) = (p.examined.load(Ordering::Relaxed), p.changed.load(Ordering::Relaxed));
        Some(match stage {
            x if x == Stage::Inserted as u8 => format!("Inserted about {changed} rows"),
            x if x == Stage::Updated as u8 => {
                format!("Updated about {changed} rows, queried about {examined} rows")
            }
            x if x == Stage::Deleted as u8 => {
                format!("Deleted about {changed} rows, queried about {examined} rows")
            }
            x if x == Stage::Queried as u8 => format!("Queried about {examined} rows"),
            x if x == Stage::Optimizing as u8 => {
                let which = p.optimizing.load(Ordering::Relaxed);
                let percent = p.percent.load(Ordering::Relaxed);
                format!(
                    "Optimization of index {} of {} about {percent}% done",
                    which >> 32,
                    which & 0xffff_ffff
                )
            }
            x if x == Stage::Backup as u8 => {
                let pct = (examined as f64 * 100.0 / changed.max(1) as f64).min(100.0);
                format!("tokudb backup about {pct:.0}% done: {examined} of {changed} bytes copied")
            }
            x if x == Stage::AlterCopy as u8 => "copy to tmp table".into(),
            x if x == Stage::AlterIndex as u8 => "altering table".into(),
            _ => return None,
        })
    }

    /// MariaDB's progress report of a running ALTER TABLE: (STAGE,
    /// MAX_STAGE, PROGRESS of the stage in percent), as
    /// INFORMATION_SCHEMA.PROCESSLIST shows them; `(0, 0, 0.0)` for other
    /// statements. SHOW PROCESSLIST's Progress is [`overall`].
    pub fn stage(&self) -> (u8, u8, f64) {
        let p = &self.0;
        if p.mdl_wait.load(Ordering::Relaxed) {
            return (0, 0, 0.0);
        }
        let max = match p.stage.load(Ordering::Relaxed) {
            x if x == Stage::AlterCopy as u8 => 2,
            x if x == Stage::AlterIndex as u8 => 1,
            _ => return (0, 0, 0.0),
        };
        let (done, total) = (p.examined.load(Ordering::Relaxed), p.changed.load(Ordering::Relaxed));
        let pct = if total == 0 { 0.0 } else { (done as f64 * 100.0 / total as f64).min(100.0) };
        (1, max, (pct * 1000.0).round() / 1000.0)
    }

    /// Rows read and rows changed by the running (or last) statement.
    pub fn counts(&self) -> (u64, u64) {
        (self.0.examined.load(Ordering::Relaxed), self.0.changed.load(Ordering::Relaxed))
    }
}

/// The whole statement's progress from [`ProgressHandle::stage`] (SHOW
/// PROCESSLIST's Progress column): the stages before it done, this one
/// `progress` percent done.
pub fn overall((stage, max, progress): (u8, u8, f64)) -> f64 {
    if max == 0 {
        return 0.0;
    }
    let v = ((stage.saturating_sub(1)) as f64 * 100.0 + progress) / max as f64;
    (v * 1000.0).round() / 1000.0
}

impl Progress {
    /// An ALTER (`stage`: [`Stage::AlterCopy`] or [`Stage::AlterIndex`])
    /// has done `done` of about `total` rows.
    pub(crate) fn alter(&self, stage: Stage, done: u64, total: u64) {
        self.stage.store(stage as u8, Ordering::Relaxed);
        self.examined.store(done, Ordering::Relaxed);
        self.changed.store(total.max(done), Ordering::Relaxed);
    }

    /// A backup has copied `done` of `total` bytes.
    pub(crate) fn backup(&self, done: u64, total: u64) {
        self.stage.store(Stage::Backup as u8, Ordering::Relaxed);
        self.examined.store(done, Ordering::Relaxed);
        self.changed.store(total, Ordering::Relaxed);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Progress>>> = const { RefCell::new(None) };
}

/// Installs `p` as this thread's running statement until the guard drops.
pub(crate) fn begin(p: &Arc<Progress>) -> Guard {
    p.stage.store(Stage::Queried as u8, Ordering::Relaxed);
    p.examined.store(0, Ordering::Relaxed);
    p.changed.store(0, Ordering::Relaxed);
    let prev = CURRENT.with(|c| c.replace(Some(p.clone())));
    Guard { prev, p: p.clone() }
}

pub(crate) struct Guard {
    prev: Option<Arc<Progress>>,
    p: Arc<Progress>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A nested statement (a view's or a subquery's session) hands the
        // thread back to the outer one.
        if self.prev.is_none() {
            self.p.stage.store(Stage::Idle as u8, Ordering::Relaxed);
        }
        CURRENT.with(|c| *c.borrow_mut() = self.prev.take());
    }
}

fn with(f: impl FnOnce(&Progress)) {
    CURRENT.with(|c| {
        if let Some(p) = c.borrow().as_ref() {
            f(p)
        }
    })
}

/// The running statement waits for a metadata lock (`on`), or no longer.
pub(crate) fn waiting_mdl(on: bool) {
    with(|p| p.mdl_wait.store(on, Ordering::Relaxed))
}

/// The running ALTER's progress (see [`Progress::alter`]).
pub(crate) fn alter(stage: Stage, done: u64, total: u64) {
    with(|p| p.alter(stage, done, total))
}

/// One more row read by an access path.
pub(crate) fn examined() {
    with(|p| {
        p.examined.fetch_add(1, Ordering::Relaxed);
    })
}

/// OPTIMIZE TABLE is at `share` (0..=1) of index `index` (from 1) of `of`.
pub(crate) fn optimizing(index: usize, of: usize, share: f64) {
    with(|p| {
        p.stage.store(Stage::Optimizing as u8, Ordering::Relaxed);
        p.optimizing.store(((index as u64) << 32) | (of as u64 & 0xffff_ffff), Ordering::Relaxed);
        p.percent.store((share.clamp(0.0, 1.0) * 100.0).round() as u64, Ordering::Relaxed);
    })
}

/// `n` more rows changed; `stage` says how.
pub(crate) fn changed(stage: Stage, n: u64) {
    with(|p| {
        p.stage.store(stage as u8, Ordering::Relaxed);
        p.changed.fetch_add(n, Ordering::Relaxed);
    })
}

/// A row loop's look at its statement's kill flag (KILL QUERY): every
/// 1,024 rows, so the atomic swap stays off the per-row path; then the
/// loop fails with 1317 and the flag is cleared for the session's next
/// statement.
pub(crate) struct KillPoll<'a> {
    killed: &'a std::sync::atomic::AtomicBool,
    rows: u64,
}

impl<'a> KillPoll<'a> {
    pub(crate) fn new(killed: &'a std::sync::atomic::AtomicBool) -> KillPoll<'a> {
        KillPoll { killed, rows: 0 }
    }

    /// One more row; 1317 if the statement was killed.
    pub(crate) fn row(&mut self) -> crate::SqlResult<()> {
        self.rows += 1;
        if self.rows.is_multiple_of(1024) && self.killed.swap(false, Ordering::SeqCst) {
            return Err(crate::SqlError::interrupted());
        }
        Ok(())
    }
}
