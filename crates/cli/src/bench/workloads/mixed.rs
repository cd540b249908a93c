//! The `mixed` workload: several threads, each with a session of its own,
//! doing point gets and one-row writes on the `insert` dataset for a set
//! time. It shows how an engine serves reads and durable writes at once
//! and whether more threads bring more operations per second.
//!
//! A read is a get of a random row that `insert` wrote, checked against the
//! row's value; a write rewrites a random row with its `mixed` value (see
//! [`RowGen::value`] with the mixed stream), as one durable batch. Both
//! values pass the check, so reads stay checkable while writes go on, and
//! the dataset keeps exactly the rows `insert` wrote.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;

use super::{check_insert_value, hex, Dataset, Meter, RowGen, WorkloadParams, MIXED_STREAM, VALUE_BYTES};
use crate::bench::engines::{Batch, Session};
use crate::error::{Error, Result};

/// Out of 100 operations, this many are reads; the rest are writes.
pub const READ_PERCENT: u32 = 80;

/// Runs one thread per session until the run's time is up or a thread
/// fails, counting operations into the meter as they complete.
pub fn run(
    sessions: Vec<Box<dyn Session + Send + '_>>,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<()> {
    let done_ops = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // The meter is read often enough that an interval ends close to its boundary.
    let tick = (params.interval / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let start = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(thread, mut session)| {
                let (done_ops, stop) = (&done_ops, &stop);
                scope.spawn(move || {
                    let result = worker(session.as_mut(), thread as u64, params, gen, done_ops, stop);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        let mut counted = 0;
        while !stop.load(Ordering::Relaxed) && start.elapsed() < params.mixed_duration {
            std::thread::sleep(tick.min(params.mixed_duration.saturating_sub(start.elapsed())));
            let now = done_ops.load(Ordering::Relaxed);
            meter.add(now - counted);
            counted = now;
        }
        stop.store(true, Ordering::Relaxed);
        let mut first_error = None;
        for thread in threads {
            let result = thread.join().unwrap_or_else(|_| Err(Error::new("mixed: a thread panicked")));
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        meter.add(done_ops.load(Ordering::Relaxed) - counted);
        first_error.map_or(Ok(()), Err)
    })
}

/// One thread's loop: an operation at a time until told to stop.
fn worker(
    session: &mut dyn Session,
    thread: u64,
    params: &WorkloadParams,
    gen: &RowGen,
    done_ops: &AtomicU64,
    stop: &AtomicBool,
) -> Result<()> {
    let keyspaces = Dataset::Insert.keyspaces();
    let keyspace = keyspaces[0].name;
    let mut rng = gen.rng(MIXED_STREAM + 1 + thread);
    let mut batch = Batch::new(keyspaces);
    let mut value = [0u8; VALUE_BYTES];
    while !stop.load(Ordering::Relaxed) {
        let i = rng.gen_range(0..params.rows);
        let key = gen.insert_key(i);
        if rng.gen_range(0..100) < READ_PERCENT {
            match session.get(keyspace, &key)? {
                Some(found) => check_insert_value(gen, i, &found, "mixed")?,
                None => return Err(Error::new(format!("mixed: row {i} (key {}) is missing", hex(&key)))),
            }
        } else {
            gen.value(MIXED_STREAM, i, &mut value);
            batch.clear();
            batch.part(0).put(&key, &value);
            session.write(&batch)?;
        }
        done_ops.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
