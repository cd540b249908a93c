//! The roll-up loads (DESIGN.md, Benchmarks, "insert-roll"): per row, one
//! insert into `rollup_rows` plus three upserts of counters that roll the
//! rows up by minute, hour and day, the statements TokuDB ran as `INSERT`
//! plus three `INSERT ... ON DUPLICATE KEY UPDATE`. An upsert adds to its
//! counter without reading it, so the load is as blind as a plain insert;
//! an engine that had to read each counter first would show it here.
//!
//! Row `i` happened at a simulated time that advances by
//! [`ROW_INTERVAL_MS`] per row, in one of [`DIMENSIONS`] dimensions (think
//! of a site or a customer), with an amount from 1 to 1000. A counter's key
//! is its time bucket and dimension, 8 bytes big-endian:
//! `bucket << 8 | dimension`; its value a [`Counter`] of rows and amounts.

use std::collections::BTreeMap;

use rand::Rng;

use super::{
    counters, hex, load_in_batches, rows, Meter, RowGen, WorkloadParams, ROLLUP_STREAM, VALUE_BYTES,
};
use crate::bench::engines::{Counter, Keyspace, Session};
use crate::error::{Error, Result};

/// The rows, then the counters by minute, hour and day.
pub const KEYSPACES: [Keyspace; 4] =
    [rows("rollup_rows"), counters("rollup_minute"), counters("rollup_hour"), counters("rollup_day")];
/// Each counter level's bucket length, in [`KEYSPACES`] order after the rows.
const BUCKET_MS: [u64; 3] = [60_000, 3_600_000, 86_400_000];
const LEVEL_NAMES: [&str; 3] = ["minute", "hour", "day"];
/// Simulated time between two rows: 1M rows span about two hours, so
/// every level has several buckets per dimension before long.
const ROW_INTERVAL_MS: u64 = 7;
/// The simulated clock's start (2023-11-14 22:13:20 UTC).
const START_MS: u64 = 1_700_000_000_000;
/// Distinct dimensions; fits the counter key's low byte.
const DIMENSIONS: u64 = 100;
const MAX_AMOUNT: u64 = 1000;
/// Rows read back by [`verify`] to check the row keyspace.
const SAMPLE_ROWS: u64 = 100;

/// How a roll-up load keys its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// Increasing row numbers, as an auto-increment column.
    Sequential,
    /// Scattered keys ([`RowGen::insert_key`]), so row inserts land all over the keyspace.
    Random,
}

/// One row of the roll-up load.
struct Row {
    key: [u8; 8],
    time_ms: u64,
    dimension: u64,
    amount: u64,
}

impl Row {
    fn new(gen: &RowGen, key: Key, i: u64) -> Row {
        let scattered = gen.scatter(ROLLUP_STREAM, i);
        Row {
            key: match key {
                Key::Sequential => i.to_be_bytes(),
                Key::Random => gen.insert_key(i),
            },
            time_ms: START_MS + i * ROW_INTERVAL_MS,
            dimension: (scattered >> 32) % DIMENSIONS,
            amount: 1 + (scattered & 0xFFFF_FFFF) % MAX_AMOUNT,
        }
    }

    /// The stored row: time, dimension and amount (each u64 little-endian),
    /// then the rest of a 100-byte generated value.
    fn value(&self, gen: &RowGen, i: u64) -> [u8; VALUE_BYTES] {
        let mut value = [0u8; VALUE_BYTES];
        gen.value(ROLLUP_STREAM, i, &mut value);
        value[..8].copy_from_slice(&self.time_ms.to_le_bytes());
        value[8..16].copy_from_slice(&self.dimension.to_le_bytes());
        value[16..24].copy_from_slice(&self.amount.to_le_bytes());
        value
    }

    /// The key of the row's counter at `level` (0 minute, 1 hour, 2 day).
    fn counter_key(&self, level: usize) -> [u8; 8] {
        ((self.time_ms / BUCKET_MS[level]) << 8 | self.dimension).to_be_bytes()
    }

    fn delta(&self) -> Counter {
        Counter { count: 1, sum: self.amount as i64 }
    }
}

/// Writes `rows` rows, each with its three counter upserts, one batch of
/// `batch_rows` rows per transaction. Returns the raw bytes written.
pub fn load(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    key: Key,
    meter: &mut Meter,
) -> Result<u64> {
    load_in_batches(session, &KEYSPACES, params, meter, &mut |batch, start, end| {
        for i in start..end {
            let row = Row::new(gen, key, i);
            batch.part(0).put(&row.key, &row.value(gen, i));
            for level in 0..BUCKET_MS.len() {
                batch.part(1 + level).add(&row.counter_key(level), row.delta());
            }
        }
    })
}

/// Reads every counter back and compares it with what the rows add up to
/// (computed again from the generator): first the totals, so a lost or
/// doubled upsert reads as "the per-day counters count N rows, the load
/// wrote M", then each counter. Then reads back a sample of the rows.
pub fn verify(session: &mut dyn Session, params: &WorkloadParams, gen: &RowGen, key: Key) -> Result<()> {
    let name = match key {
        Key::Sequential => "rollup-seq",
        Key::Random => "rollup-random",
    };
    let mut expected: [BTreeMap<[u8; 8], Counter>; 3] = Default::default();
    let mut total = Counter::default();
    for i in 0..params.rows {
        let row = Row::new(gen, key, i);
        total = total.plus(row.delta());
        for (level, counters) in expected.iter_mut().enumerate() {
            let counter = counters.entry(row.counter_key(level)).or_default();
            *counter = counter.plus(row.delta());
        }
    }
    // Day first: the check the run is asked for.
    for level in (0..BUCKET_MS.len()).rev() {
        let keyspace = KEYSPACES[1 + level].name;
        let mut found: Vec<([u8; 8], Counter)> = Vec::with_capacity(expected[level].len());
        let mut malformed = None;
        session.scan_from(keyspace, &[], u64::MAX, &mut |k, v| {
            match (<[u8; 8]>::try_from(k), Counter::decode(v)) {
                (Ok(k), Some(c)) => found.push((k, c)),
                _ => {
                    malformed.get_or_insert_with(|| format!("key {} value {}", hex(k), hex(v)));
                }
            }
            Ok(())
        })?;
        let level_name = LEVEL_NAMES[level];
        if let Some(what) = malformed {
            return Err(Error::new(format!("{name}: a per-{level_name} counter is malformed: {what}")));
        }
        let sum = found.iter().fold(Counter::default(), |a, (_, c)| a.plus(*c));
        if sum != total {
            return Err(Error::new(format!(
                "{name}: the per-{level_name} counters count {} rows summing to {}; the load wrote {} rows \
                 summing to {}",
                sum.count, sum.sum, total.count, total.sum
            )));
        }
        let wanted: Vec<([u8; 8], Counter)> = expected[level].iter().map(|(k, c)| (*k, *c)).collect();
        if found != wanted {
            let first_difference = found
                .iter()
                .zip(&wanted)
                .find(|(f, w)| f != w)
                .map(|(f, w)| {
                    format!("key {} holds {:?}, expected key {} with {:?}", hex(&f.0), f.1, hex(&w.0), w.1)
                })
                .unwrap_or_else(|| format!("{} counters, expected {}", found.len(), wanted.len()));
            return Err(Error::new(format!(
                "{name}: the per-{level_name} counters add up but differ from the rows: {first_difference}"
            )));
        }
    }
    let mut rng = gen.rng(ROLLUP_STREAM);
    for _ in 0..SAMPLE_ROWS.min(params.rows) {
        let i = rng.gen_range(0..params.rows);
        let row = Row::new(gen, key, i);
        if session.get(KEYSPACES[0].name, &row.key)?.as_deref() != Some(&row.value(gen, i)[..]) {
            return Err(Error::new(format!("{name}: row {i} (key {}) is missing or wrong", hex(&row.key))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_keys_order_by_bucket_then_dimension() {
        let gen = RowGen::new(3);
        let a = Row::new(&gen, Key::Sequential, 0);
        let b = Row::new(&gen, Key::Sequential, 60_000 / ROW_INTERVAL_MS + 1);
        assert!(a.counter_key(0) < b.counter_key(0), "a later minute sorts after");
        assert_eq!(a.counter_key(2)[..7], b.counter_key(2)[..7], "the same day");
        assert!(a.dimension < DIMENSIONS && (1..=MAX_AMOUNT).contains(&a.amount));
        assert_eq!(Row::new(&gen, Key::Random, 5).key, gen.insert_key(5));
    }
}
