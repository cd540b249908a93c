//! GROUP BY: rows are folded into their groups as they are read (a scan
//! never holds the table), within a memory budget; past it, the groups so
//! far go to disk as a sorted run of partial aggregates, and the runs are
//! merged by group key at the end (partial states combine: counts and
//! sums add, MIN/MAX compare, DISTINCT sets unite). So a GROUP BY over a
//! table larger than memory finishes, with memory bounded by the budget
//! plus one entry per run a merge reads (at most `sort::FANIN`).
//!
//! Groups are keyed by (level, the group expressions' keys); the level is
//! how many group expressions a group is by (WITH ROLLUP adds the levels
//! below the full one). The budget is `tmp_memory_table_size` (MariaDB's
//! name; 16 MiB by default); runs are the external sort's run files
//! (`sort.rs`: in `sql-tmp/`, deleted when dropped, merged in passes when
//! there are many), each record a group key and its entry.

use std::collections::HashMap;

use crate::bind::AggSpec;
use crate::error::{SqlError, SqlResult};
use crate::expr::{AggFn, EvalCtx, Expr, Ty};
use crate::query::{group_key, AggState};
use crate::sort::{put_bytes, put_u64, put_value, value_size, Cursor, Run, RunWriter, SortCfg};
use crate::value::Value;

type Entry = (Vec<Value>, Vec<AggState>);

/// The groups in memory, by key. A hash map, not an ordered one: a row
/// costs one lookup of its key (two for a new group), and the order is
/// made once, by sorting, when the groups are spilled or handed out. The
/// hasher is std's randomly keyed one: group keys come from table data,
/// which a hostile client can choose, and a fixed hash would let it make
/// every key collide.
type Groups = HashMap<Vec<u8>, Entry>;

/// Bytes a group costs beyond its key and first row: the map's slot, the
/// key's and the entry's vectors, and the allocator's headers (an
/// estimate; the budget is MariaDB's tmp_memory_table_size, itself an
/// estimate of rows).
const GROUP_OVERHEAD_BYTES: usize = 64;
/// Bytes an aggregate's state costs, likewise.
const STATE_BYTES: usize = 48;

pub(crate) struct Grouper<'g> {
    groups: &'g [(Expr, Ty)],
    aggs: &'g [AggSpec],
    levels: Vec<usize>,
    map: Groups,
    mem: usize,
    /// `cfg.budget` is GROUP BY's (tmp_memory_table_size).
    cfg: SortCfg,
    runs: Vec<Run>,
    /// Reused for every row: the level byte, then each group expression's
    /// key; `ends[i]` is where the key of the first `i` expressions ends.
    key: Vec<u8>,
    ends: Vec<usize>,
    args: Vec<Option<Value>>,
}

impl<'g> Grouper<'g> {
    pub fn new(groups: &'g [(Expr, Ty)], aggs: &'g [AggSpec], rollup: bool, cfg: SortCfg) -> Self {
        let k = groups.len();
        let levels: Vec<usize> = if rollup { (0..=k).rev().collect() } else { vec![k] };
        Grouper {
            groups,
            aggs,
            levels,
            map: Groups::default(),
            mem: 0,
            cfg,
            runs: Vec::new(),
            key: Vec::new(),
            ends: Vec::with_capacity(k + 1),
            args: Vec::with_capacity(aggs.len()),
        }
    }

    /// Folds one input row into its groups.
    pub fn add(&mut self, r: &[Value], cx: &mut EvalCtx) -> SqlResult<()> {
        self.key.clear();
        self.key.push(0);
        self.ends.clear();
        self.ends.push(self.key.len());
        for (g, t) in self.groups {
            match g {
                // A column's key is made from the row's value in place.
                Expr::Col(c) if *c < r.len() => group_key(&r[*c], *t, &mut self.key),
                _ => group_key(&g.eval(r, cx)?, *t, &mut self.key),
            }
            self.ends.push(self.key.len());
        }
        self.args.clear();
        for spec in self.aggs {
            self.args.push(match &spec.arg {
                Some(a) => Some(a.eval(r, cx)?),
                None => None,
            });
        }
        for li in 0..self.levels.len() {
            let level = self.levels[li];
            // The key of a level: its number, then the first `level` parts.
            self.key[0] = level as u8;
            let key = &self.key[..self.ends[level]];
            let entry = match self.map.get_mut(key) {
                Some(entry) => entry,
                None => {
                    let mut first = r.to_vec();
                    // A super-aggregate row shows NULL for the columns it rolls up.
                    for (g, _) in &self.groups[level..] {
                        if let Expr::Col(c) = g {
                            first[*c] = Value::Null;
                        }
                    }
                    self.mem += key.len()
                        + GROUP_OVERHEAD_BYTES
                        + first.iter().map(value_size).sum::<usize>()
                        + STATE_BYTES * self.aggs.len();
                    let states = self.aggs.iter().map(AggState::new).collect();
                    self.map.entry(key.to_vec()).or_insert((first, states))
                }
            };
            for ((st, spec), v) in entry.1.iter_mut().zip(self.aggs).zip(&self.args) {
                if let (AggState::Distinct(..) | AggState::Concat(_), Some(v)) = (&*st, v) {
                    self.mem += value_size(v);
                }
                st.add(spec, v.clone())?;
            }
        }
        if self.mem > self.cfg.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// The groups in memory in key order, leaving the map empty.
    fn take_sorted(&mut self) -> Vec<(Vec<u8>, Entry)> {
        let mut groups: Vec<(Vec<u8>, Entry)> = self.map.drain().collect();
        // Keys are distinct (they were a map's), so an unstable sort is exact.
        groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.mem = 0;
        groups
    }

    /// Writes the groups so far to a new run, in key order.
    fn spill(&mut self) -> SqlResult<()> {
        let mut w = RunWriter::new(&self.cfg)?;
        let mut buf = Vec::new();
        for (key, (first, states)) in self.take_sorted() {
            buf.clear();
            put_u64(&mut buf, first.len() as u64);
            for v in &first {
                put_value(v, &mut buf);
            }
            for st in &states {
                encode_state(st, &mut buf);
            }
            w.put(&key, &buf)?;
        }
        self.runs.push(w.finish()?);
        Ok(())
    }

    /// Every group in key order, its partial states combined.
    pub fn finish(mut self) -> SqlResult<Vec<(Vec<u8>, Entry)>> {
        if self.runs.is_empty() {
            return Ok(self.take_sorted());
        }
        if !self.map.is_empty() {
            self.spill()?;
        }
        let nstates = self.aggs.len();
        let mut merge = crate::sort::merge_runs(std::mem::take(&mut self.runs), &self.cfg)?;
        let mut out: Vec<(Vec<u8>, Entry)> = Vec::new();
        while let Some((key, payload)) = merge.next()? {
            let e = decode_entry(&payload, nstates)?;
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

// A run's record: the group key, then as payload the first row's values
// and each aggregate's state (`sort.rs`'s run files and value codec).

fn encode_opt(v: &Option<Value>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_value(v, out);
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
                put_value(v, out);
            }
        }
    }
}

fn decode_opt(c: &mut Cursor) -> SqlResult<Option<Value>> {
    Ok(if c.u8()? == 0 { None } else { Some(c.value()?) })
}

fn decode_state(c: &mut Cursor) -> SqlResult<AggState> {
    Ok(match c.u8()? {
        0 => AggState::Count(c.u64()? as i64),
        1 => {
            let sum = decode_opt(c)?;
            AggState::Sum { sum, n: c.u64()? as i64 }
        }
        2 => AggState::MinMax(decode_opt(c)?),
        3 => AggState::Bits(c.u64()?),
        4 => AggState::Concat(if c.u8()? == 0 { None } else { Some(c.bytes()?) }),
        5 => {
            let n = c.u64()? as usize;
            let mut vals = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                vals.push(c.value()?);
            }
            AggState::Distinct(Default::default(), vals)
        }
        _ => return Err(SqlError::internal("GROUP BY's temporary file is damaged")),
    })
}

fn decode_entry(payload: &[u8], nstates: usize) -> SqlResult<Entry> {
    let mut c = Cursor { b: payload };
    let first = c.row()?;
    let mut states = Vec::with_capacity(nstates);
    for _ in 0..nstates {
        states.push(decode_state(&mut c)?);
    }
    Ok((first, states))
}
