//! GROUP BY: rows are folded into their groups as they are read (a scan
//! never holds the table), within a memory budget; past it, the groups so
//! far go to disk as a sorted run of partial aggregates, and the runs are
//! merged by group key at the end (partial states combine: counts and
//! sums add, MIN/MAX compare, DISTINCT sets unite). So a GROUP BY over a
//! table larger than memory finishes, with memory bounded by the budget
//! plus one entry per run while merging.
//!
//! Groups are keyed by (level, the group expressions' keys); the level is
//! how many group expressions a group is by (WITH ROLLUP adds the levels
//! below the full one). The budget is `tmp_memory_table_size` (MariaDB's
//! name; 16 MiB by default); runs are files in the database folder's
//! `sql-tmp/`, deleted when the grouping ends (and at open after a crash).

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::bind::AggSpec;
use crate::error::{SqlError, SqlResult};
use crate::expr::{AggFn, EvalCtx, Expr, Ty};
use crate::query::{group_key, AggState};
use crate::value::{Temporal, TemporalKind, Value};

type Entry = (Vec<Value>, Vec<AggState>);

pub(crate) struct Grouper<'g> {
    groups: &'g [(Expr, Ty)],
    aggs: &'g [AggSpec],
    levels: Vec<usize>,
    map: BTreeMap<Vec<u8>, Entry>,
    mem: usize,
    budget: usize,
    dir: PathBuf,
    runs: Vec<Run>,
}

/// A spilled run: a file of entries in key order, deleted when dropped.
struct Run {
    path: PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io_err(e: std::io::Error) -> SqlError {
    SqlError::new(1030, "HY000", format!("Got error {e} from storage engine (GROUP BY's temporary file)"))
}

impl<'g> Grouper<'g> {
    pub fn new(
        groups: &'g [(Expr, Ty)],
        aggs: &'g [AggSpec],
        rollup: bool,
        budget: usize,
        dir: &Path,
    ) -> Self {
        let k = groups.len();
        let levels: Vec<usize> = if rollup { (0..=k).rev().collect() } else { vec![k] };
        Grouper {
            groups,
            aggs,
            levels,
            map: BTreeMap::new(),
            mem: 0,
            budget,
            dir: dir.to_path_buf(),
            runs: Vec::new(),
        }
    }

    /// Folds one input row into its groups.
    pub fn add(&mut self, r: &[Value], cx: &mut EvalCtx) -> SqlResult<()> {
        let mut parts = Vec::with_capacity(self.groups.len());
        for (g, t) in self.groups {
            let v = g.eval(r, cx)?;
            let mut key = Vec::new();
            group_key(&v, *t, &mut key);
            parts.push(key);
        }
        let mut args = Vec::with_capacity(self.aggs.len());
        for spec in self.aggs {
            args.push(match &spec.arg {
                Some(a) => Some(a.eval(r, cx)?),
                None => None,
            });
        }
        for li in 0..self.levels.len() {
            let level = self.levels[li];
            let mut key = vec![level as u8];
            for p in &parts[..level] {
                key.extend_from_slice(p);
            }
            if !self.map.contains_key(&key) {
                let mut first = r.to_vec();
                // A super-aggregate row shows NULL for the columns it rolls up.
                for (g, _) in &self.groups[level..] {
                    if let Expr::Col(c) = g {
                        first[*c] = Value::Null;
                    }
                }
                self.mem +=
                    key.len() + 64 + first.iter().map(value_size).sum::<usize>() + 48 * self.aggs.len();
                self.map.insert(key.clone(), (first, self.aggs.iter().map(AggState::new).collect()));
            }
            let entry = self.map.get_mut(&key).expect("inserted above");
            for ((st, spec), v) in entry.1.iter_mut().zip(self.aggs).zip(&args) {
                if let (AggState::Distinct(..) | AggState::Concat(_), Some(v)) = (&*st, v) {
                    self.mem += value_size(v);
                }
                st.add(spec, v.clone())?;
            }
        }
        if self.mem > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the groups so far to a new run, in key order.
    fn spill(&mut self) -> SqlResult<()> {
        std::fs::create_dir_all(&self.dir).map_err(io_err)?;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = self.dir.join(format!("group-{}-{n}.run", std::process::id()));
        let run = Run { path };
        let f = std::fs::File::create(&run.path).map_err(io_err)?;
        let mut w = BufWriter::new(f);
        let mut buf = Vec::new();
        for (key, (first, states)) in std::mem::take(&mut self.map) {
            buf.clear();
            put_bytes(&mut buf, &key);
            put_u64(&mut buf, first.len() as u64);
            for v in &first {
                encode_value(v, &mut buf);
            }
            for st in &states {
                encode_state(st, &mut buf);
            }
            w.write_all(&(buf.len() as u64).to_le_bytes()).map_err(io_err)?;
            w.write_all(&buf).map_err(io_err)?;
        }
        w.flush().map_err(io_err)?;
        self.runs.push(run);
        self.mem = 0;
        Ok(())
    }

    /// Every group in key order, its partial states combined.
    pub fn finish(mut self) -> SqlResult<Vec<(Vec<u8>, Entry)>> {
        if self.runs.is_empty() {
            return Ok(std::mem::take(&mut self.map).into_iter().collect());
        }
        if !self.map.is_empty() {
            self.spill()?;
        }
        let mut readers = Vec::new();
        for r in &self.runs {
            readers.push(BufReader::new(std::fs::File::open(&r.path).map_err(io_err)?));
        }
        let nstates = self.aggs.len();
        // A min-heap of the runs' head keys; the heads' entries wait beside it.
        let mut heads: Vec<Option<Entry>> = Vec::with_capacity(readers.len());
        let mut heap = std::collections::BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            match read_entry(r, nstates)? {
                Some((k, e)) => {
                    heap.push(std::cmp::Reverse((k, i)));
                    heads.push(Some(e));
                }
                None => heads.push(None),
            }
        }
        let mut out: Vec<(Vec<u8>, Entry)> = Vec::new();
        while let Some(std::cmp::Reverse((key, i))) = heap.pop() {
            let e = heads[i].take().expect("a run in the heap has its head");
            if let Some((k, next)) = read_entry(&mut readers[i], nstates)? {
                heap.push(std::cmp::Reverse((k, i)));
                heads[i] = Some(next);
            }
            match out.last_mut() {
                // The same group from another run: combine.
                Some((k, (_, states))) if *k == key => {
                    for ((st, other), spec) in states.iter_mut().zip(e.1).zip(self.aggs) {
                        st.merge(other, spec)?;
                    }
                }
                _ => out.push((key, e)),
            }
        }
        Ok(out)
    }
}

fn value_size(v: &Value) -> usize {
    16 + match v {
        Value::Str(s) => s.len(),
        Value::Decimal(_) => 32,
        _ => 0,
    }
}

impl AggState {
    /// Combines another partial state of the same aggregate into this one.
    pub(crate) fn merge(&mut self, other: AggState, spec: &AggSpec) -> SqlResult<()> {
        match (self, other) {
            (AggState::Count(a), AggState::Count(b)) => *a += b,
            (AggState::Sum { sum, n }, AggState::Sum { sum: s2, n: n2 }) => {
                *n += n2;
                *sum = match (sum.take(), s2) {
                    (None, x) | (x, None) => x,
                    (Some(Value::Double(a)), Some(b)) | (Some(b), Some(Value::Double(a))) => {
                        Some(Value::Double(a + b.to_f64().unwrap_or(0.0)))
                    }
                    (Some(a), Some(b)) => Some(Value::Decimal(
                        a.to_decimal().unwrap_or_default() + b.to_decimal().unwrap_or_default(),
                    )),
                };
            }
            (st @ AggState::MinMax(_), AggState::MinMax(Some(v))) => st.add(spec, Some(v))?,
            (AggState::MinMax(_), AggState::MinMax(None)) => {}
            (AggState::Bits(a), AggState::Bits(b)) => match spec.func {
                AggFn::BitAnd => *a &= b,
                AggFn::BitOr => *a |= b,
                _ => *a ^= b,
            },
            (AggState::Concat(a), AggState::Concat(b)) => match (a.as_mut(), b) {
                (_, None) => {}
                (None, b) => *a = b,
                (Some(x), Some(y)) => {
                    x.extend_from_slice(&spec.sep);
                    x.extend_from_slice(&y);
                }
            },
            (st @ AggState::Distinct(..), AggState::Distinct(_, vals)) => {
                for v in vals {
                    st.add(spec, Some(v))?;
                }
            }
            _ => return Err(SqlError::internal("GROUP BY merged two different aggregate states")),
        }
        Ok(())
    }
}

// The run format: per entry, u64 length, then key bytes, the first row's
// values and each aggregate's state. Values: a tag byte, then the payload.

fn put_u64(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::UInt(u) => {
            out.push(2);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Value::Double(d) => {
            out.push(3);
            out.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        Value::Decimal(d) => {
            out.push(4);
            put_bytes(out, d.to_string().as_bytes());
        }
        Value::Str(s) => {
            out.push(5);
            put_bytes(out, s);
        }
        Value::Temporal(t) => {
            out.push(6);
            out.push(match t.kind {
                TemporalKind::Date => 0,
                TemporalKind::Time => 1,
                TemporalKind::DateTime => 2,
            });
            out.push(t.neg as u8);
            out.extend_from_slice(&t.year.to_le_bytes());
            out.extend_from_slice(&[t.month, t.day]);
            out.extend_from_slice(&t.hour.to_le_bytes());
            out.extend_from_slice(&[t.minute, t.second]);
            out.extend_from_slice(&t.micro.to_le_bytes());
            out.push(t.fsp);
        }
    }
}

fn encode_opt(v: &Option<Value>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            encode_value(v, out);
        }
    }
}

fn encode_state(st: &AggState, out: &mut Vec<u8>) {
    match st {
        AggState::Count(n) => {
            out.push(0);
            out.extend_from_slice(&n.to_le_bytes());
        }
        AggState::Sum { sum, n } => {
            out.push(1);
            encode_opt(sum, out);
            out.extend_from_slice(&n.to_le_bytes());
        }
        AggState::MinMax(v) => {
            out.push(2);
            encode_opt(v, out);
        }
        AggState::Bits(b) => {
            out.push(3);
            out.extend_from_slice(&b.to_le_bytes());
        }
        AggState::Concat(c) => {
            out.push(4);
            match c {
                None => out.push(0),
                Some(b) => {
                    out.push(1);
                    put_bytes(out, b);
                }
            }
        }
        AggState::Distinct(_, vals) => {
            // The seen-set is rebuilt from the values when merged.
            out.push(5);
            put_u64(out, vals.len() as u64);
            for v in vals {
                encode_value(v, out);
            }
        }
    }
}

/// Reads entries back; a short or malformed record is an error, never a panic.
struct Cursor<'b> {
    b: &'b [u8],
}

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize) -> SqlResult<&'b [u8]> {
        if self.b.len() < n {
            return Err(SqlError::internal("GROUP BY's temporary file is damaged"));
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(a)
    }
    fn u8(&mut self) -> SqlResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> SqlResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> SqlResult<Vec<u8>> {
        let n = self.u64()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn value(&mut self) -> SqlResult<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Int(self.u64()? as i64),
            2 => Value::UInt(self.u64()?),
            3 => Value::Double(f64::from_bits(self.u64()?)),
            4 => {
                let s = self.bytes()?;
                Value::Decimal(
                    std::str::from_utf8(&s)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| SqlError::internal("GROUP BY's temporary file is damaged"))?,
                )
            }
            5 => Value::Str(self.bytes()?),
            6 => {
                let kind = match self.u8()? {
                    0 => TemporalKind::Date,
                    1 => TemporalKind::Time,
                    _ => TemporalKind::DateTime,
                };
                let neg = self.u8()? != 0;
                let year = u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"));
                let (month, day) = (self.u8()?, self.u8()?);
                let hour = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                let (minute, second) = (self.u8()?, self.u8()?);
                let micro = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                let fsp = self.u8()?;
                Value::Temporal(Temporal { kind, neg, year, month, day, hour, minute, second, micro, fsp })
            }
            _ => return Err(SqlError::internal("GROUP BY's temporary file is damaged")),
        })
    }
    fn opt(&mut self) -> SqlResult<Option<Value>> {
        Ok(if self.u8()? == 0 { None } else { Some(self.value()?) })
    }
    fn state(&mut self) -> SqlResult<AggState> {
        Ok(match self.u8()? {
            0 => AggState::Count(self.u64()? as i64),
            1 => {
                let sum = self.opt()?;
                AggState::Sum { sum, n: self.u64()? as i64 }
            }
            2 => AggState::MinMax(self.opt()?),
            3 => AggState::Bits(self.u64()?),
            4 => AggState::Concat(if self.u8()? == 0 { None } else { Some(self.bytes()?) }),
            5 => {
                let n = self.u64()? as usize;
                let mut vals = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    vals.push(self.value()?);
                }
                AggState::Distinct(Default::default(), vals)
            }
            _ => return Err(SqlError::internal("GROUP BY's temporary file is damaged")),
        })
    }
}

fn read_entry(r: &mut impl Read, nstates: usize) -> SqlResult<Option<(Vec<u8>, Entry)>> {
    let mut len = [0u8; 8];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(io_err(e)),
    }
    let mut buf = vec![0u8; u64::from_le_bytes(len) as usize];
    r.read_exact(&mut buf).map_err(io_err)?;
    let mut c = Cursor { b: &buf };
    let key = c.bytes()?;
    let n = c.u64()? as usize;
    let mut first = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        first.push(c.value()?);
    }
    let mut states = Vec::with_capacity(nstates);
    for _ in 0..nstates {
        states.push(c.state()?);
    }
    Ok(Some((key, (first, states))))
}
