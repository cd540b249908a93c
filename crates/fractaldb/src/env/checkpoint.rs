//! Checkpoints across the dictionaries of an environment: when one is
//! due, the one-at-a-time lock, and the pacing of periodic ones.

use super::*;
use crate::tree::TreeCheckpoint;

/// The phases of one checkpoint (see `docs/ARCHITECTURE.md`, Checkpoints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointTiming {
    /// From the start to the end.
    pub total: Duration,
    /// Waiting for the exclusive checkpoint lock (for writers and cleaners
    /// in a node-changing step to finish); writers arriving meanwhile wait.
    pub lock_wait: Duration,
    /// Holding it: the begin record and marking dirty nodes. Writers wait.
    pub exclusive: Duration,
    /// The fsync of the log through the begin record.
    pub log_sync: Duration,
    /// Writing the nodes, tables and headers (writers go on).
    pub write: Duration,
    /// Of `write`, sleeping to pace the writes (periodic checkpoints).
    pub paced: Duration,
}

/// A checkpoint's trees, each with its checkpoint begun (`Tree::begin_checkpoint`).
type Begun = Vec<(Arc<Tree>, TreeCheckpoint)>;

impl Env {
    /// Writes every dirty node of every open dictionary and a new header for
    /// each: after it returns, a reopen finds everything written before.
    pub fn checkpoint(&self) -> Result<()> {
        self.check_open()?;
        self.inner.checkpoint()
    }

    /// How long each checkpoint taken since the environment opened took.
    pub fn checkpoint_durations(&self) -> Vec<Duration> {
        self.inner.checkpoint_log.lock().iter().map(|t| t.total).collect()
    }

    /// Where the time of each checkpoint taken since the environment opened
    /// went, oldest first.
    pub fn checkpoint_timings(&self) -> Vec<CheckpointTiming> {
        self.inner.checkpoint_log.lock().clone()
    }
}

impl Inner {
    /// Whether the log has grown `checkpoint_log_bytes` since the last
    /// checkpoint began (the periodic thread then runs one early).
    pub(super) fn log_grown(&self) -> bool {
        let Some(log) = self.ctx.log.get() else { return false };
        self.checkpoint_log_bytes > 0
            && log.stats().bytes.saturating_sub(self.log_bytes_at_checkpoint.load(Ordering::Relaxed))
                >= self.checkpoint_log_bytes
    }

    /// A checkpoint of every open dictionary, then the log is trimmed.
    ///
    /// Order, and why: (1) under the exclusive checkpoint lock, briefly:
    /// append the begin record (every record before it is applied to its
    /// tree, none after) and mark each tree's dirty nodes; no I/O. Writers
    /// then go on; a node they change before the checkpoint wrote it is
    /// copied first. (2) fsync the log through the begin record, so no LSN at
    /// or below it can be handed out again after a crash (a header naming an
    /// LSN the log forgot would make recovery skip new records). (3) write
    /// the marked nodes (or their copies), then each tree's table and header
    /// with `ckpt_lsn` = begin. (4) append the end record, then delete log
    /// files wholly before begin.
    ///
    /// Before (1), the log starts a new file (`Log::roll`, which syncs the
    /// old one; no lock of ours held, so writers only wait for that group
    /// commit): every record of the older files is then before begin, and
    /// (4) deletes them all. Rolled after (4) instead, the records this
    /// checkpoint made unnecessary would stay on disk until the next one.
    pub(super) fn checkpoint(&self) -> Result<()> {
        let one = self.checkpointing_now();
        self.checkpoint_held(one, false)
    }

    /// Takes `checkpointing` for a caller that waits for it: a paced
    /// checkpoint running meanwhile stops sleeping and writes at full
    /// speed, so the caller waits for its writes, not for its schedule.
    pub(crate) fn checkpointing_now(&self) -> parking_lot::MutexGuard<'_, ()> {
        if let Some(one) = self.checkpointing.try_lock() {
            return one;
        }
        self.hurry.store(true, Ordering::SeqCst);
        let one = self.checkpointing.lock();
        self.hurry.store(false, Ordering::SeqCst);
        one
    }

    /// The periodic thread's checkpoint (by time, by log bytes, after a
    /// cleaner's drain, or the one after a recovery), paced (`Pacer`) if `paced`, unless one is
    /// running or a backup holds checkpoints off (the next period tries
    /// again).
    pub(super) fn checkpoint_periodic_unless_busy(&self, paced: bool) -> Result<()> {
        match self.checkpointing.try_lock() {
            Some(one) => self.checkpoint_held(one, paced),
            None => Ok(()),
        }
    }

    /// The checkpoint, with `checkpointing` held; `paced`: its node writes
    /// are spread out (`Pacer`).
    fn checkpoint_held(&self, _one: parking_lot::MutexGuard<'_, ()>, paced: bool) -> Result<()> {
        let start = Instant::now();
        self.checkpoint_due.store(false, Ordering::SeqCst);
        self.checkpoint_after_drain.store(false, Ordering::SeqCst);
        let log = self.ctx.log.get();
        if let Some(log) = log {
            // Before the roll, which writes what is buffered: a checkpoint
            // taken because the log grew counts from what it had seen.
            self.log_bytes_at_checkpoint.store(log.stats().bytes, Ordering::Relaxed);
            log.roll(LOG_ROLL_AT_CHECKPOINT_BYTES)?;
        }
        let mut keep_log = false;
        let mut timing = CheckpointTiming::default();
        let (begin, keep_from, ckpts) = self.begin_exclusive(log, start, &mut timing, &mut keep_log)?;
        let t = Instant::now();
        let mut first_err = log.map_or(Ok(()), |log| log.sync_to(begin)).err();
        timing.log_sync = t.elapsed();
        let t0 = Instant::now();
        timing.paced = self.write_marked(ckpts, log, paced, t0, &mut first_err);
        if let Some(e) = first_err {
            return Err(e);
        }
        if let Some(log) = log {
            let lsn = log.append(&Record::CheckpointEnd { begin_lsn: begin }.encode())?;
            log.sync_to(lsn)?;
            if !keep_log {
                log.trim(keep_from)?;
            }
        }
        timing.write = t0.elapsed();
        timing.total = start.elapsed();
        self.checkpoint_log.lock().push(timing);
        Ok(())
    }

    /// Step (1) under the exclusive checkpoint lock: the begin record, then each sound tree's nodes marked.
    fn begin_exclusive(
        &self,
        log: Option<&Arc<Log>>,
        start: Instant,
        timing: &mut CheckpointTiming,
        keep_log: &mut bool,
    ) -> Result<(u64, u64, Begun)> {
        let _exclusive = self.ctx.checkpoint_lock.write();
        timing.lock_wait = start.elapsed();
        // Never before recovery has set up the log: a header with
        // `ckpt_lsn` 0 would have the next recovery replay the whole
        // log into a tree that holds some of it already.
        let Some(begin) = log.map(|log| log.append(&Record::CheckpointBegin.encode())).transpose()? else {
            debug_assert!(false, "a checkpoint before recovery set up the log");
            return Err(Error::invalid("no checkpoint before recovery has finished"));
        };
        // The log is kept from the first record of every transaction
        // unfinished now: their clean-up messages are not in this
        // checkpoint, so recovery must re-send them to every key they
        // wrote, and it learns the keys from the log. (Taken here, not
        // at the trim: one that finishes meanwhile still needs it.)
        let keep_from = begin.min(self.txns.keep_log_from());
        // A failed tree's file is in doubt: it gets no new header, and
        // the log keeps everything since its last one.
        let (trees, failed): (Vec<_>, Vec<_>) = self.trees().into_iter().partition(|t| !t.is_failed());
        *keep_log |= !failed.is_empty();
        let ckpts: Vec<_> = trees.iter().map(|t| t.begin_checkpoint(begin)).collect();
        timing.exclusive = start.elapsed() - timing.lock_wait;
        Ok((begin, keep_from, trees.into_iter().zip(ckpts).collect::<Vec<_>>()))
    }

    /// Step (3): finishes each tree's checkpoint, or abandons it once one failed; returns the time slept.
    fn write_marked(
        &self,
        ckpts: Begun,
        log: Option<&Arc<Log>>,
        paced: bool,
        t0: Instant,
        first_err: &mut Option<Error>,
    ) -> Duration {
        let mut pacer = Pacer {
            inner: self,
            on: paced,
            start: t0,
            nodes: ckpts.iter().map(|(_, c)| c.nodes()).sum(),
            done: 0,
            log_at_begin: log.map_or(0, |l| l.stats().bytes),
            slept: Duration::ZERO,
            msn: self.ctx.msn.load(Ordering::Relaxed),
            write_seen: None,
        };
        for (tree, c) in ckpts {
            let r = match first_err {
                None => tree.finish_checkpoint(c, &mut |n| pacer.pace(n)),
                Some(_) => {
                    tree.abandon_checkpoint(&c);
                    Ok(())
                }
            };
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        pacer.slept
    }
}

/// By default a checkpoint runs early once the log has grown this many
/// times the cache since the last one (`EnvOptions::checkpoint_log_bytes`).
pub(super) const CHECKPOINT_LOG_CACHE_MULTIPLE: u64 = 16;

/// ... and at most this many. Recovery replays up to 1.5 times this (what
/// is written while the next, paced, checkpoint runs comes on top): 192
/// MiB at the 47-75 MiB/s of replay measured on a quiet machine
/// (docs/benchmarks-durability.md sections 5 and 7) is 2.5-4 s, within
/// the 10 s a restart may take. Lower, checkpoints run back to back under
/// a fast load, each rewriting the dirty nodes of its moment (section 7).
pub(super) const CHECKPOINT_LOG_MAX_BYTES: u64 = 128 << 20;

/// A checkpoint starts a new log file before its begin record when the
/// current one holds more than this (`Log::roll`), so the records it makes
/// unnecessary are in older files and its trim deletes them, instead of
/// waiting in the current file until it fills.
const LOG_ROLL_AT_CHECKPOINT_BYTES: u64 = 1 << 20;

/// A paced checkpoint aims to have written its nodes by this fraction of
/// the interval to the next one, whichever of its two measures (time, log
/// bytes) runs out first. The log grows while a checkpoint runs and only
/// its end trims it, so a crash just before the end replays up to
/// `(1 + CHECKPOINT_PACE_TARGET) * checkpoint_log_bytes`.
const CHECKPOINT_PACE_TARGET: f64 = 0.5;

/// Spreads a periodic checkpoint's node writes over part of the interval
/// to the next checkpoint, instead of one burst: the writes share the disk
/// with the log's fdatasyncs, and a burst of a few hundred MiB makes every
/// commit's fsync wait for the device to take it
/// (docs/benchmarks-durability.md, section 2). After each node it visits,
/// the checkpoint sleeps while it is ahead of schedule: the share of its
/// nodes visited above the share of the interval gone by, in time
/// (`checkpoint_period`) or in log bytes (`checkpoint_log_bytes`), each
/// scaled by `CHECKPOINT_PACE_TARGET` (as PostgreSQL's
/// checkpoint_completion_target). Behind schedule it writes at full speed,
/// and so it does while no write comes in (`WRITERS_GONE_AFTER`): pacing
/// spares writers, and with none it only keeps the superseded blocks
/// allocated longer (the checkpoint a cleaner asks for after draining an
/// idle environment runs at full speed until writes start again).
/// Not paced: close, `Env::checkpoint`, the one
/// after a recovery (`checkpoint_due`); a paced
/// one stops sleeping when one of those waits for it (`Inner::hurry`) or
/// the environment shuts down. Sleeping holds no lock: writers go on, and
/// a node they change is copied (`Tree::cow`) and the copy written soon.
struct Pacer<'a> {
    inner: &'a Inner,
    on: bool,
    start: Instant,
    /// Marked nodes of every tree, and how many were visited.
    nodes: usize,
    done: usize,
    log_at_begin: u64,
    slept: Duration,
    /// The MSN when last looked at (every write advances it), and when it
    /// was last seen to move since the checkpoint began.
    msn: u64,
    write_seen: Option<Instant>,
}

/// A paced checkpoint stops sleeping once no write has come in for this
/// long (and sleeps again when one does).
const WRITERS_GONE_AFTER: Duration = Duration::from_millis(200);

impl Pacer<'_> {
    fn pace(&mut self, visited: usize) {
        self.done += visited;
        debug_assert!(self.done <= self.nodes);
        if !self.on || self.nodes == 0 {
            return;
        }
        let inner = self.inner;
        loop {
            if inner.hurry.load(Ordering::Relaxed) || inner.shutdown.load(Ordering::Relaxed) {
                return;
            }
            let msn = inner.ctx.msn.load(Ordering::Relaxed);
            if msn != self.msn {
                (self.msn, self.write_seen) = (msn, Some(Instant::now()));
            }
            if self.write_seen.is_none_or(|t| t.elapsed() >= WRITERS_GONE_AFTER) {
                return;
            }
            let progress = self.done as f64 / self.nodes as f64;
            let by_time = inner.checkpoint_period.map_or(1.0, |p| {
                self.start.elapsed().as_secs_f64() / (p.as_secs_f64() * CHECKPOINT_PACE_TARGET)
            });
            let by_log = match (inner.ctx.log.get(), inner.checkpoint_log_bytes) {
                (Some(log), budget) if budget > 0 => {
                    log.stats().bytes.saturating_sub(self.log_at_begin) as f64
                        / (budget as f64 * CHECKPOINT_PACE_TARGET)
                }
                _ => 0.0,
            };
            if progress <= by_time.max(by_log) {
                return;
            }
            let step = Duration::from_millis(10);
            std::thread::sleep(step);
            self.slept += step;
        }
    }
}
