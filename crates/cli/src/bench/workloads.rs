//! The workloads: what rows they write or read, generated the same way for
//! every engine, and the meter that cuts their progress into intervals.

use std::fmt;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::engines::{Batch, Engine};
use crate::error::{Error, Result};

/// Bytes per value: half random, half a repeated pattern, so values compress about 2x.
pub const VALUE_BYTES: usize = 100;
/// Bytes of the random half of a value.
const RANDOM_VALUE_BYTES: usize = VALUE_BYTES / 2;
/// The repeated half of every value.
const VALUE_PATTERN: &[u8] = b"fractaldb-bench-";

/// One benchmark workload. Loads write a dataset; reads need one loaded
/// earlier in the same run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum WorkloadKind {
    /// Random inserts: 8-byte random keys, 100-byte values, in batches.
    Insert,
    /// iibench: a primary keyed by an increasing id plus three secondary
    /// indexes keyed by (random value, id), four puts per row.
    Iibench,
    /// Point gets of random keys that `insert` wrote.
    PointGet,
    /// One full ordered scan of what `insert` wrote.
    Scan,
}

impl WorkloadKind {
    /// Every workload, in the order a run performs them.
    pub const ALL: [WorkloadKind; 4] =
        [WorkloadKind::Insert, WorkloadKind::Iibench, WorkloadKind::PointGet, WorkloadKind::Scan];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Insert => "insert",
            WorkloadKind::Iibench => "iibench",
            WorkloadKind::PointGet => "point-get",
            WorkloadKind::Scan => "scan",
        }
    }

    /// Looks a workload up by its [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The dataset the workload writes or reads.
    pub fn dataset(self) -> Dataset {
        match self {
            WorkloadKind::Iibench => Dataset::Iibench,
            _ => Dataset::Insert,
        }
    }

    /// True if the workload writes its dataset from empty.
    pub fn is_load(self) -> bool {
        matches!(self, WorkloadKind::Insert | WorkloadKind::Iibench)
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of keyspaces that one load writes and later workloads read. Each
/// lives in its own database folder, so its bytes on disk are its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    Insert,
    Iibench,
}

impl Dataset {
    /// The folder name under the engine's folder.
    pub fn dir_name(self) -> &'static str {
        match self {
            Dataset::Insert => "insert",
            Dataset::Iibench => "iibench",
        }
    }

    /// The keyspaces of the dataset.
    pub fn keyspaces(self) -> &'static [&'static str] {
        match self {
            Dataset::Insert => &["insert"],
            Dataset::Iibench => &["iibench_pk", "iibench_k1", "iibench_k2", "iibench_k3"],
        }
    }
}

/// How big a workload is and how it is measured; identical for every engine of a run.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadParams {
    /// Rows each load writes.
    pub rows: u64,
    /// Point gets the `point-get` workload performs.
    pub gets: u64,
    /// Rows per write batch.
    pub batch_rows: u64,
    /// Length of one progress interval.
    pub interval: Duration,
    /// Seeds every generator, so every engine sees the same keys and values.
    pub seed: u64,
}

/// Streams of the row generator, so the datasets' values differ from each other.
const INSERT_STREAM: u64 = 1;
const IIBENCH_STREAM: u64 = 2;
const POINT_GET_STREAM: u64 = 3;

/// SplitMix64's finalizer: a bijection on u64 that scatters its input.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Makes the rows of a run from its seed, by row number, so a later workload
/// can name a row that a load wrote without keeping a list of keys, and
/// every engine gets exactly the same bytes.
#[derive(Clone, Copy, Debug)]
pub struct RowGen {
    seed: u64,
}

impl RowGen {
    /// A generator for this seed.
    pub fn new(seed: u64) -> Self {
        RowGen { seed: mix64(seed ^ 0x6A09_E667_F3BC_C908) }
    }

    /// The key of `insert`'s row `i`: 8 random-looking bytes, distinct for
    /// distinct `i` (a bijection of `i`), so `rows` rows give `rows` keys.
    pub fn insert_key(&self, i: u64) -> [u8; 8] {
        mix64(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.seed).to_be_bytes()
    }

    /// The value of row `i` of a stream: 50 random bytes then a repeated pattern.
    pub fn value(&self, stream: u64, i: u64, out: &mut [u8; VALUE_BYTES]) {
        let mut state = mix64(self.seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)) ^ i;
        for chunk in out[..RANDOM_VALUE_BYTES].chunks_mut(8) {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let bytes = mix64(state).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        for (j, b) in out[RANDOM_VALUE_BYTES..].iter_mut().enumerate() {
            *b = VALUE_PATTERN[j % VALUE_PATTERN.len()];
        }
    }

    /// A seeded generator for a workload's random choices.
    fn rng(&self, stream: u64) -> SmallRng {
        SmallRng::seed_from_u64(mix64(self.seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F)))
    }
}

/// One progress interval of a workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// When the interval ended, from the start of the workload.
    pub end_us: u64,
    /// Rows done from the start of the workload to the end of the interval.
    pub rows: u64,
    /// Rows per second within the interval.
    pub rows_per_s: f64,
}

/// Counts rows as a workload runs and cuts them into intervals of the run's
/// length, so a slowdown shows when it happens rather than averaged away.
///
/// An interval ends at the first count after its boundary; a stall that spans
/// several boundaries shows as one long slow interval. The rows after the
/// last boundary form a final, shorter interval.
pub struct Meter<'a> {
    start: Instant,
    interval: Duration,
    next_boundary: Duration,
    rows: u64,
    last_end: Duration,
    last_rows: u64,
    intervals: Vec<Interval>,
    on_interval: &'a mut dyn FnMut(&Interval),
}

impl<'a> Meter<'a> {
    /// Starts the clock; `on_interval` hears of each interval as it ends.
    pub fn start(interval: Duration, on_interval: &'a mut dyn FnMut(&Interval)) -> Self {
        Meter {
            start: Instant::now(),
            interval,
            next_boundary: interval,
            rows: 0,
            last_end: Duration::ZERO,
            last_rows: 0,
            intervals: Vec::new(),
            on_interval,
        }
    }

    /// Counts `rows` more rows done.
    pub fn add(&mut self, rows: u64) {
        self.rows += rows;
        let elapsed = self.start.elapsed();
        if elapsed >= self.next_boundary {
            self.cut(elapsed);
            while self.next_boundary <= elapsed {
                self.next_boundary += self.interval;
            }
        }
    }

    fn cut(&mut self, elapsed: Duration) {
        let seconds = (elapsed - self.last_end).as_secs_f64();
        let rows_in_interval = self.rows - self.last_rows;
        let interval = Interval {
            end_us: elapsed.as_micros() as u64,
            rows: self.rows,
            rows_per_s: if seconds > 0.0 { rows_in_interval as f64 / seconds } else { 0.0 },
        };
        (self.on_interval)(&interval);
        self.intervals.push(interval);
        self.last_end = elapsed;
        self.last_rows = self.rows;
    }

    /// Stops the clock: closes the last, partial interval and returns the
    /// rows, the elapsed time and every interval.
    pub fn finish(mut self) -> (u64, Duration, Vec<Interval>) {
        let elapsed = self.start.elapsed();
        if self.rows > self.last_rows || self.intervals.is_empty() {
            self.cut(elapsed);
        }
        (self.rows, elapsed, self.intervals)
    }
}

/// What a workload did, timed (its intervals went to the meter's listener as they ended).
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Rows written, rows read by point gets, or rows visited by the scan.
    pub rows: u64,
    /// From the first row to the end, including the final flush of a load.
    pub elapsed_us: u64,
    /// The final flush that makes a load durable (zero for reads).
    pub flush_us: u64,
}

/// Runs `kind` on an engine whose open dataset is `kind.dataset()`.
pub fn run(
    kind: WorkloadKind,
    engine: &mut dyn Engine,
    params: &WorkloadParams,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<Outcome> {
    let gen = RowGen::new(params.seed);
    let mut meter = Meter::start(params.interval, on_interval);
    match kind {
        WorkloadKind::Insert => insert(engine, params, &gen, &mut meter)?,
        WorkloadKind::Iibench => iibench(engine, params, &gen, &mut meter)?,
        WorkloadKind::PointGet => point_get(engine, params, &gen, &mut meter)?,
        WorkloadKind::Scan => scan(engine, params, &mut meter)?,
    }
    let (rows, before_flush, _intervals) = meter.finish();
    let flush_start = Instant::now();
    if kind.is_load() {
        engine.flush()?;
    }
    let flush = flush_start.elapsed();
    Ok(Outcome {
        rows,
        elapsed_us: (before_flush + flush).as_micros() as u64,
        flush_us: if kind.is_load() { flush.as_micros() as u64 } else { 0 },
    })
}

fn insert(engine: &mut dyn Engine, params: &WorkloadParams, gen: &RowGen, meter: &mut Meter) -> Result<()> {
    let keyspaces = Dataset::Insert.keyspaces();
    let mut batch = Batch::new(keyspaces);
    let mut value = [0u8; VALUE_BYTES];
    let mut row = 0;
    while row < params.rows {
        let end = (row + params.batch_rows).min(params.rows);
        batch.clear();
        let puts = batch.part(0);
        for i in row..end {
            gen.value(INSERT_STREAM, i, &mut value);
            puts.put(&gen.insert_key(i), &value);
        }
        engine.write(&batch)?;
        meter.add(end - row);
        row = end;
    }
    Ok(())
}

fn iibench(engine: &mut dyn Engine, params: &WorkloadParams, gen: &RowGen, meter: &mut Meter) -> Result<()> {
    let keyspaces = Dataset::Iibench.keyspaces();
    let mut batch = Batch::new(keyspaces);
    let mut rng = gen.rng(IIBENCH_STREAM);
    let mut value = [0u8; VALUE_BYTES];
    let mut secondary_key = [0u8; 16];
    let mut row = 0;
    while row < params.rows {
        let end = (row + params.batch_rows).min(params.rows);
        batch.clear();
        for id in row..end {
            let id_bytes = id.to_be_bytes();
            gen.value(IIBENCH_STREAM, id, &mut value);
            batch.part(0).put(&id_bytes, &value);
            for index in 1..=3 {
                secondary_key[..8].copy_from_slice(&rng.gen::<u64>().to_be_bytes());
                secondary_key[8..].copy_from_slice(&id_bytes);
                batch.part(index).put(&secondary_key, &[]);
            }
        }
        engine.write(&batch)?;
        meter.add(end - row);
        row = end;
    }
    Ok(())
}

fn point_get(
    engine: &mut dyn Engine,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<()> {
    let keyspace = Dataset::Insert.keyspaces()[0];
    let mut rng = gen.rng(POINT_GET_STREAM);
    let mut expected = [0u8; VALUE_BYTES];
    for _ in 0..params.gets {
        let i = rng.gen_range(0..params.rows);
        let key = gen.insert_key(i);
        match engine.get(keyspace, &key)? {
            Some(value) => {
                gen.value(INSERT_STREAM, i, &mut expected);
                if value != expected {
                    return Err(Error::new(format!(
                        "point-get: row {i} (key {}) has a wrong value",
                        hex(&key)
                    )));
                }
            }
            None => {
                return Err(Error::new(format!("point-get: row {i} (key {}) is missing", hex(&key))));
            }
        }
        meter.add(1);
    }
    Ok(())
}

/// Rows the scan counts before telling the meter, so the clock is not read per row.
const SCAN_METER_ROWS: u64 = 1024;

fn scan(engine: &mut dyn Engine, params: &WorkloadParams, meter: &mut Meter) -> Result<()> {
    let keyspace = Dataset::Insert.keyspaces()[0];
    let mut previous: Option<Vec<u8>> = None;
    let mut rows = 0u64;
    let mut pending = 0u64;
    engine.scan(keyspace, &mut |key, value| {
        if let Some(prev) = &mut previous {
            if key <= prev.as_slice() {
                return Err(Error::new(format!(
                    "scan: key {} after key {}: not in ascending order",
                    hex(key),
                    hex(prev)
                )));
            }
            prev.clear();
            prev.extend_from_slice(key);
        } else {
            previous = Some(key.to_vec());
        }
        if value.len() != VALUE_BYTES {
            return Err(Error::new(format!("scan: key {} has a {}-byte value", hex(key), value.len())));
        }
        rows += 1;
        pending += 1;
        if pending == SCAN_METER_ROWS {
            meter.add(pending);
            pending = 0;
        }
        Ok(())
    })?;
    meter.add(pending);
    if rows != params.rows {
        return Err(Error::new(format!("scan: found {rows} rows, insert wrote {}", params.rows)));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keys_are_distinct_and_values_repeatable() {
        let gen = RowGen::new(7);
        let keys: std::collections::HashSet<_> = (0..100_000).map(|i| gen.insert_key(i)).collect();
        assert_eq!(keys.len(), 100_000);
        let (mut a, mut b) = ([0u8; VALUE_BYTES], [0u8; VALUE_BYTES]);
        gen.value(INSERT_STREAM, 5, &mut a);
        RowGen::new(7).value(INSERT_STREAM, 5, &mut b);
        assert_eq!(a, b);
        gen.value(INSERT_STREAM, 6, &mut b);
        assert_ne!(a, b);
        assert_eq!(&a[RANDOM_VALUE_BYTES..RANDOM_VALUE_BYTES + 16], VALUE_PATTERN);
    }

    #[test]
    fn meter_cuts_a_final_interval() {
        let mut seen = 0;
        let mut on_interval = |_: &Interval| seen += 1;
        let mut meter = Meter::start(Duration::from_secs(3600), &mut on_interval);
        meter.add(10);
        let (rows, _, intervals) = meter.finish();
        assert_eq!(rows, 10);
        assert_eq!(intervals.len(), 1);
        assert_eq!(intervals[0].rows, 10);
        assert_eq!(seen, 1);
    }
}
