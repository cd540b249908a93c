//! The workloads: what rows they write or read, generated the same way for
//! every engine, and the meter that cuts their progress into intervals.
//!
//! The roll-up loads are in [`rollup`], the log-like codec loads in
//! [`logs`], the multi-threaded mixed reads and writes in [`mixed`].

mod logs;
mod mixed;
mod rollup;

use std::fmt;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::engines::{Batch, Codec, Engine, Keyspace, KeyspaceKind, Session};
use crate::error::{Error, Result};

/// Bytes per value: half random, half a repeated pattern, so values compress about 2x.
pub const VALUE_BYTES: usize = 100;
/// Bytes of the random half of a value.
const RANDOM_VALUE_BYTES: usize = VALUE_BYTES / 2;
/// The repeated half of every value.
const VALUE_PATTERN: &[u8] = b"fractaldb-bench-";

/// One benchmark workload, in the order a run performs them. Loads write a
/// dataset; reads need one loaded earlier in the same run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum WorkloadKind {
    /// Random inserts: 8-byte random keys, 100-byte values, in batches.
    Insert,
    /// iibench: a primary keyed by an increasing id plus three secondary
    /// indexes keyed by (random value, id), four puts per row.
    Iibench,
    /// Roll-up with a sequential primary key: per row one insert plus three
    /// counter upserts (per minute, hour and day), no reads.
    RollupSeq,
    /// Roll-up as `rollup-seq`, with a random primary key.
    RollupRandom,
    /// Log-like rows loaded uncompressed.
    CodecNone,
    /// Log-like rows loaded with zstd.
    CodecZstd,
    /// Log-like rows loaded with lz4.
    CodecLz4,
    /// Log-like rows loaded with snappy.
    CodecSnappy,
    /// Log-like rows loaded with zlib.
    CodecZlib,
    /// Log-like rows loaded with lzma.
    CodecLzma,
    /// Settles what `insert` wrote before the reads: fractaldb flushes every
    /// buffered message to the leaves (as OPTIMIZE TABLE does), RocksDB
    /// compacts the whole key range; the reads after it then measure a
    /// steady tree, and its bytes on disk are the settled size.
    Settle,
    /// Point gets of random keys that `insert` wrote.
    PointGet,
    /// Short ordered range reads from random keys that `insert` wrote.
    RangeScan,
    /// One full ordered scan of what `insert` wrote.
    Scan,
    /// Several threads mixing point gets and one-row writes on what `insert` wrote, for a set time.
    Mixed,
}

impl WorkloadKind {
    /// Every workload, in the order a run performs them.
    pub const ALL: [WorkloadKind; 15] = [
        WorkloadKind::Insert,
        WorkloadKind::Iibench,
        WorkloadKind::RollupSeq,
        WorkloadKind::RollupRandom,
        WorkloadKind::CodecNone,
        WorkloadKind::CodecZstd,
        WorkloadKind::CodecLz4,
        WorkloadKind::CodecSnappy,
        WorkloadKind::CodecZlib,
        WorkloadKind::CodecLzma,
        WorkloadKind::Settle,
        WorkloadKind::PointGet,
        WorkloadKind::RangeScan,
        WorkloadKind::Scan,
        WorkloadKind::Mixed,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Insert => "insert",
            WorkloadKind::Iibench => "iibench",
            WorkloadKind::RollupSeq => "rollup-seq",
            WorkloadKind::RollupRandom => "rollup-random",
            WorkloadKind::CodecNone => "codec-none",
            WorkloadKind::CodecZstd => "codec-zstd",
            WorkloadKind::CodecLz4 => "codec-lz4",
            WorkloadKind::CodecSnappy => "codec-snappy",
            WorkloadKind::CodecZlib => "codec-zlib",
            WorkloadKind::CodecLzma => "codec-lzma",
            WorkloadKind::Settle => "settle",
            WorkloadKind::PointGet => "point-get",
            WorkloadKind::RangeScan => "range-scan",
            WorkloadKind::Scan => "scan",
            WorkloadKind::Mixed => "mixed",
        }
    }

    /// Looks a workload up by its [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The `codec-*` workload of each codec, in [`ALL_CODECS`](super::engines::ALL_CODECS) order.
    pub fn codec_loads() -> impl Iterator<Item = WorkloadKind> {
        WorkloadKind::ALL.into_iter().filter(|w| w.codec().is_some())
    }

    /// The codec a `codec-*` workload loads with.
    pub fn codec(self) -> Option<Codec> {
        match self {
            WorkloadKind::CodecNone => Some(Codec::None),
            WorkloadKind::CodecZstd => Some(Codec::Zstd),
            WorkloadKind::CodecLz4 => Some(Codec::Lz4),
            WorkloadKind::CodecSnappy => Some(Codec::Snappy),
            WorkloadKind::CodecZlib => Some(Codec::Zlib),
            WorkloadKind::CodecLzma => Some(Codec::Lzma),
            _ => None,
        }
    }

    /// The dataset the workload writes or reads.
    pub fn dataset(self) -> Dataset {
        match self {
            WorkloadKind::Insert
            | WorkloadKind::Settle
            | WorkloadKind::PointGet
            | WorkloadKind::RangeScan
            | WorkloadKind::Scan
            | WorkloadKind::Mixed => Dataset::Insert,
            WorkloadKind::Iibench => Dataset::Iibench,
            WorkloadKind::RollupSeq => Dataset::RollupSeq,
            WorkloadKind::RollupRandom => Dataset::RollupRandom,
            WorkloadKind::CodecNone
            | WorkloadKind::CodecZstd
            | WorkloadKind::CodecLz4
            | WorkloadKind::CodecSnappy
            | WorkloadKind::CodecZlib
            | WorkloadKind::CodecLzma => Dataset::Logs(self.codec().expect("a codec workload has a codec")),
        }
    }

    /// True if the workload writes its dataset from empty.
    pub fn is_load(self) -> bool {
        !matches!(
            self,
            WorkloadKind::Settle
                | WorkloadKind::PointGet
                | WorkloadKind::RangeScan
                | WorkloadKind::Scan
                | WorkloadKind::Mixed
        )
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const fn rows(name: &'static str) -> Keyspace {
    Keyspace { name, kind: KeyspaceKind::Rows }
}

const fn counters(name: &'static str) -> Keyspace {
    Keyspace { name, kind: KeyspaceKind::Counters }
}

/// A set of keyspaces that one load writes and later workloads read. Each
/// lives in its own database folder, so its bytes on disk are its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    Insert,
    Iibench,
    RollupSeq,
    RollupRandom,
    /// The log-like rows, compressed with this codec.
    Logs(Codec),
}

impl Dataset {
    /// The folder name under the engine's folder.
    pub fn dir_name(self) -> &'static str {
        match self {
            Dataset::Insert => "insert",
            Dataset::Iibench => "iibench",
            Dataset::RollupSeq => "rollup-seq",
            Dataset::RollupRandom => "rollup-random",
            Dataset::Logs(Codec::None) => "codec-none",
            Dataset::Logs(Codec::Zstd) => "codec-zstd",
            Dataset::Logs(Codec::Lz4) => "codec-lz4",
            Dataset::Logs(Codec::Snappy) => "codec-snappy",
            Dataset::Logs(Codec::Zlib) => "codec-zlib",
            Dataset::Logs(Codec::Lzma) => "codec-lzma",
        }
    }

    /// The keyspaces of the dataset.
    pub fn keyspaces(self) -> &'static [Keyspace] {
        const INSERT: [Keyspace; 1] = [rows("insert")];
        const IIBENCH: [Keyspace; 4] =
            [rows("iibench_pk"), rows("iibench_k1"), rows("iibench_k2"), rows("iibench_k3")];
        match self {
            Dataset::Insert => &INSERT,
            Dataset::Iibench => &IIBENCH,
            Dataset::RollupSeq | Dataset::RollupRandom => &rollup::KEYSPACES,
            Dataset::Logs(_) => &logs::KEYSPACES,
        }
    }

    /// The codec the dataset is stored with, if the workload chooses one
    /// (otherwise the engine's default).
    pub fn codec(self) -> Option<Codec> {
        match self {
            Dataset::Logs(codec) => Some(codec),
            _ => None,
        }
    }
}

/// How big a workload is and how it is measured; identical for every engine of a run.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadParams {
    /// Rows each load writes.
    pub rows: u64,
    /// Point gets the `point-get` workload performs; also about the rows
    /// `range-scan` reads in all.
    pub gets: u64,
    /// Rows per write batch.
    pub batch_rows: u64,
    /// Rows each `range-scan` range reads.
    pub range_rows: u64,
    /// Threads of the `mixed` workload.
    pub threads: usize,
    /// How long the `mixed` workload runs.
    pub mixed_duration: Duration,
    /// Length of one progress interval.
    pub interval: Duration,
    /// Seeds every generator, so every engine sees the same keys and values.
    pub seed: u64,
}

/// Streams of the row generator, so the datasets' values and the
/// workloads' random choices differ from each other.
const INSERT_STREAM: u64 = 1;
const IIBENCH_STREAM: u64 = 2;
const POINT_GET_STREAM: u64 = 3;
const RANGE_SCAN_STREAM: u64 = 4;
const ROLLUP_STREAM: u64 = 5;
const LOGS_STREAM: u64 = 6;
/// The values `mixed` writes, and (plus the thread number) its threads' choices.
const MIXED_STREAM: u64 = 7;

/// The multipliers of [`mix64`] and of [`RowGen::insert_key`].
const MIX_M1: u64 = 0xBF58_476D_1CE4_E5B9;
const MIX_M2: u64 = 0x94D0_49BB_1331_11EB;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finalizer: a bijection on u64 that scatters its input.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(MIX_M1);
    z = (z ^ (z >> 27)).wrapping_mul(MIX_M2);
    z ^ (z >> 31)
}

/// The inverse of [`mix64`], so a reader can tell which row a key belongs to.
fn unmix64(mut z: u64) -> u64 {
    z ^= (z >> 31) ^ (z >> 62);
    z = z.wrapping_mul(inverse_odd(MIX_M2));
    z ^= (z >> 27) ^ (z >> 54);
    z = z.wrapping_mul(inverse_odd(MIX_M1));
    z ^ (z >> 30) ^ (z >> 60)
}

/// The inverse of an odd number modulo 2^64, by Newton's iteration: each
/// step doubles the correct low bits, from 3 (an odd `a` is its own inverse
/// modulo 8), so five steps give all 64.
const fn inverse_odd(a: u64) -> u64 {
    let mut x = a;
    let mut step = 0;
    while step < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        step += 1;
    }
    x
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
        mix64(i.wrapping_mul(GOLDEN) ^ self.seed).to_be_bytes()
    }

    /// The row number `i` whose [`insert_key`](Self::insert_key) is `key`
    /// (any 8 bytes name some row; whether it is one of the rows written is
    /// for the caller to check), or `None` if the key is not 8 bytes.
    pub fn insert_row(&self, key: &[u8]) -> Option<u64> {
        let key: [u8; 8] = key.try_into().ok()?;
        Some((unmix64(u64::from_be_bytes(key)) ^ self.seed).wrapping_mul(inverse_odd(GOLDEN)))
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

    /// A number that looks random, fixed by the stream and `i`, for
    /// generators that must give row `i` without generating the rows before it.
    fn scatter(&self, stream: u64, i: u64) -> u64 {
        mix64(mix64(self.seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)) ^ i.wrapping_mul(GOLDEN))
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
    /// Rows written, rows read by point gets, range reads or the scan, or
    /// operations of `mixed`.
    pub rows: u64,
    /// From the first row to the end, including the final flush of a load.
    pub elapsed_us: u64,
    /// The final flush that makes a load durable (zero for reads).
    pub flush_us: u64,
    /// Bytes of the keys and values (or counter deltas) a load handed to
    /// the engine, before any compression (zero for reads).
    pub raw_bytes: u64,
}

/// Runs `kind` on an engine whose open dataset is `kind.dataset()`.
pub fn run(
    kind: WorkloadKind,
    engine: &dyn Engine,
    params: &WorkloadParams,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<Outcome> {
    let gen = RowGen::new(params.seed);
    let mut sessions = engine.sessions(if kind == WorkloadKind::Mixed { params.threads } else { 1 })?;
    let mut meter = Meter::start(params.interval, on_interval);
    let raw_bytes = match kind {
        WorkloadKind::Mixed => {
            mixed::run(sessions, params, &gen, &mut meter)?;
            0
        }
        _ => {
            let session = sessions[0].as_mut();
            match kind {
                WorkloadKind::Insert => insert(session, params, &gen, &mut meter)?,
                WorkloadKind::Iibench => iibench(session, params, &gen, &mut meter)?,
                WorkloadKind::RollupSeq => {
                    rollup::load(session, params, &gen, rollup::Key::Sequential, &mut meter)?
                }
                WorkloadKind::RollupRandom => {
                    rollup::load(session, params, &gen, rollup::Key::Random, &mut meter)?
                }
                WorkloadKind::CodecNone
                | WorkloadKind::CodecZstd
                | WorkloadKind::CodecLz4
                | WorkloadKind::CodecSnappy
                | WorkloadKind::CodecZlib
                | WorkloadKind::CodecLzma => logs::load(session, params, &gen, &mut meter)?,
                WorkloadKind::Settle => {
                    engine.settle()?;
                    // Counted as the rows it settled, so its rate compares engines.
                    meter.add(params.rows);
                    0
                }
                WorkloadKind::PointGet => point_get(session, params, &gen, &mut meter).map(|()| 0)?,
                WorkloadKind::RangeScan => range_scan(session, params, &gen, &mut meter).map(|()| 0)?,
                WorkloadKind::Scan => scan(session, params, &gen, &mut meter).map(|()| 0)?,
                WorkloadKind::Mixed => unreachable!("mixed runs above"),
            }
        }
    };
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
        raw_bytes,
    })
}

/// Checks what a load wrote by reading it back, after it was measured (so
/// the check's reads count in no figure). Reads check as they read.
/// `insert` and `iibench` are checked only where the engine counts rows
/// exactly and cheaply ([`Engine::exact_rows`]): the count must be `rows`.
pub fn verify(kind: WorkloadKind, engine: &dyn Engine, params: &WorkloadParams) -> Result<()> {
    let gen = RowGen::new(params.seed);
    let mut session = engine.session()?;
    match kind {
        WorkloadKind::RollupSeq => rollup::verify(session.as_mut(), params, &gen, rollup::Key::Sequential),
        WorkloadKind::RollupRandom => rollup::verify(session.as_mut(), params, &gen, rollup::Key::Random),
        kind if kind.codec().is_some() => logs::verify(session.as_mut(), params, &gen),
        WorkloadKind::Insert | WorkloadKind::Iibench => {
            drop(session);
            let keyspace = kind.dataset().keyspaces()[0].name;
            match engine.exact_rows(keyspace)? {
                Some(rows) if rows != params.rows => Err(Error::new(format!(
                    "{kind}: {keyspace} holds {rows} rows, the load wrote {}",
                    params.rows
                ))),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Loads `rows` rows in batches of `batch_rows`, `fill` putting rows
/// `start..end` into the batch; returns the raw bytes written.
fn load_in_batches(
    session: &mut dyn Session,
    keyspaces: &[Keyspace],
    params: &WorkloadParams,
    meter: &mut Meter,
    fill: &mut dyn FnMut(&mut Batch, u64, u64),
) -> Result<u64> {
    let mut batch = Batch::new(keyspaces);
    let mut raw_bytes = 0;
    let mut row = 0;
    while row < params.rows {
        let end = (row + params.batch_rows).min(params.rows);
        batch.clear();
        fill(&mut batch, row, end);
        session.write(&batch)?;
        raw_bytes += batch.raw_bytes();
        meter.add(end - row);
        row = end;
    }
    Ok(raw_bytes)
}

fn insert(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<u64> {
    let mut value = [0u8; VALUE_BYTES];
    load_in_batches(session, Dataset::Insert.keyspaces(), params, meter, &mut |batch, start, end| {
        let puts = batch.part(0);
        for i in start..end {
            gen.value(INSERT_STREAM, i, &mut value);
            puts.put(&gen.insert_key(i), &value);
        }
    })
}

fn iibench(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<u64> {
    let mut rng = gen.rng(IIBENCH_STREAM);
    let mut value = [0u8; VALUE_BYTES];
    let mut secondary_key = [0u8; 16];
    load_in_batches(session, Dataset::Iibench.keyspaces(), params, meter, &mut |batch, start, end| {
        for id in start..end {
            let id_bytes = id.to_be_bytes();
            gen.value(IIBENCH_STREAM, id, &mut value);
            batch.part(0).put(&id_bytes, &value);
            for index in 1..=3 {
                secondary_key[..8].copy_from_slice(&rng.gen::<u64>().to_be_bytes());
                secondary_key[8..].copy_from_slice(&id_bytes);
                batch.part(index).put(&secondary_key, &[]);
            }
        }
    })
}

/// The row of the `insert` dataset that `key` names, if `insert` wrote one:
/// lets a reader check any row it meets without a list of the keys.
fn insert_row_of(gen: &RowGen, params: &WorkloadParams, key: &[u8]) -> Option<u64> {
    gen.insert_row(key).filter(|&i| i < params.rows)
}

/// Checks that `value` is what `insert` (or `mixed`, which may have
/// rewritten the row) wrote under row `i`'s key.
fn check_insert_value(gen: &RowGen, i: u64, value: &[u8], what: &str) -> Result<()> {
    let mut expected = [0u8; VALUE_BYTES];
    gen.value(INSERT_STREAM, i, &mut expected);
    if value == expected {
        return Ok(());
    }
    gen.value(MIXED_STREAM, i, &mut expected);
    if value == expected {
        return Ok(());
    }
    Err(Error::new(format!("{what}: row {i} (key {}) has a wrong value", hex(&gen.insert_key(i)))))
}

fn point_get(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<()> {
    let keyspace = Dataset::Insert.keyspaces()[0].name;
    let mut rng = gen.rng(POINT_GET_STREAM);
    for _ in 0..params.gets {
        let i = rng.gen_range(0..params.rows);
        let key = gen.insert_key(i);
        match session.get(keyspace, &key)? {
            Some(value) => check_insert_value(gen, i, &value, "point-get")?,
            None => {
                return Err(Error::new(format!("point-get: row {i} (key {}) is missing", hex(&key))));
            }
        }
        meter.add(1);
    }
    Ok(())
}

/// Ranges `range-scan` reads: about `gets` rows in all, at least one range.
pub fn range_count(params: &WorkloadParams) -> u64 {
    (params.gets / params.range_rows.max(1)).max(1)
}

/// Reads [`range_count`] ranges of `range_rows` rows, each from a random
/// key that `insert` wrote. Each range must start at that key, be in
/// ascending order, hold only rows `insert` wrote with their values, and be
/// `range_rows` long unless it ends at the last key.
fn range_scan(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<()> {
    let keyspace = Dataset::Insert.keyspaces()[0].name;
    // The largest key, the only place a range may end short; found from the
    // generator (a pass over the row numbers) the first time a range does.
    let mut last_key: Option<[u8; 8]> = None;
    let mut rng = gen.rng(RANGE_SCAN_STREAM);
    let mut previous = Vec::with_capacity(8);
    for _ in 0..range_count(params) {
        let start = gen.insert_key(rng.gen_range(0..params.rows));
        let mut read = 0u64;
        previous.clear();
        session.scan_from(keyspace, &start, params.range_rows, &mut |key, value| {
            let in_order = if read == 0 { key == start } else { key > previous.as_slice() };
            if !in_order {
                return Err(Error::new(format!(
                    "range-scan from {}: key {} after {} is out of order",
                    hex(&start),
                    hex(key),
                    if read == 0 { "the start".to_string() } else { hex(&previous) }
                )));
            }
            let i = insert_row_of(gen, params, key).ok_or_else(|| {
                Error::new(format!("range-scan from {}: key {} was never written", hex(&start), hex(key)))
            })?;
            check_insert_value(gen, i, value, "range-scan")?;
            previous.clear();
            previous.extend_from_slice(key);
            read += 1;
            Ok(())
        })?;
        let mut ends_at_last_key = || {
            let last = *last_key.get_or_insert_with(|| {
                (0..params.rows).map(|i| gen.insert_key(i)).max().expect("a load writes at least one row")
            });
            previous.as_slice() == last
        };
        if read > params.range_rows || (read < params.range_rows && !ends_at_last_key()) {
            return Err(Error::new(format!(
                "range-scan from {}: read {read} rows, expected {}{}",
                hex(&start),
                params.range_rows,
                if read < params.range_rows { " (the range ended before the last key)" } else { "" }
            )));
        }
        meter.add(read);
    }
    Ok(())
}

/// Rows the scan counts before telling the meter, so the clock is not read per row.
const SCAN_METER_ROWS: u64 = 1024;

fn scan(session: &mut dyn Session, params: &WorkloadParams, gen: &RowGen, meter: &mut Meter) -> Result<()> {
    let keyspace = Dataset::Insert.keyspaces()[0].name;
    let mut previous: Option<Vec<u8>> = None;
    let mut rows = 0u64;
    let mut pending = 0u64;
    session.scan_from(keyspace, &[], u64::MAX, &mut |key, value| {
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
        if value.len() != VALUE_BYTES || insert_row_of(gen, params, key).is_none() {
            return Err(Error::new(format!(
                "scan: key {} ({}-byte value) is not a row insert wrote",
                hex(key),
                value.len()
            )));
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
    fn a_key_names_its_row() {
        let gen = RowGen::new(11);
        for i in [0, 1, 2, 999, 1 << 40, u64::MAX] {
            assert_eq!(gen.insert_row(&gen.insert_key(i)), Some(i));
        }
        for z in [0, 1, 0xDEAD_BEEF, u64::MAX] {
            assert_eq!(unmix64(mix64(z)), z);
        }
        assert_eq!(GOLDEN.wrapping_mul(inverse_odd(GOLDEN)), 1);
        assert_eq!(gen.insert_row(b"short"), None);
    }

    #[test]
    fn names_datasets_and_codecs_agree() {
        for w in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::from_name(w.name()), Some(w));
            assert_eq!(w.to_possible_value().map(|v| v.get_name().to_string()), Some(w.name().to_string()));
            if let Some(codec) = w.codec() {
                assert_eq!(w.name(), format!("codec-{}", codec.name()));
                assert_eq!(w.dataset().dir_name(), w.name());
                assert_eq!(w.dataset().codec(), Some(codec));
                assert!(w.is_load());
            }
        }
        let codecs: Vec<Codec> = WorkloadKind::codec_loads().filter_map(WorkloadKind::codec).collect();
        assert_eq!(codecs, super::super::engines::ALL_CODECS);
        let mut sorted = WorkloadKind::ALL;
        sorted.sort();
        assert_eq!(sorted, WorkloadKind::ALL, "ALL is in run order");
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
