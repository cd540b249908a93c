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

/// Whether an aggregate only counts its group's rows: COUNT(*), without
/// DISTINCT, not a window function. Its state is a count, whatever the rows hold.
fn counts_rows(spec: &AggSpec) -> bool {
    spec.func == AggFn::CountStar && !spec.distinct && !spec.is_window()
}

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
    /// The rows come group by group: a group's rows one after another,
    /// in the index's order (`plan::serves_groups`; never with ROLLUP).
    /// The group being read is `cur`: a row of it costs a comparison of
    /// its group columns with the group's first row's (or of keys), and a
    /// row with another key closes it into `done`: no later row can join
    /// it, so it is final, neither looked up nor spilled, and the caller
    /// takes it from there as the scan goes (`drain_done`) or `finish`
    /// hands it out first. Closed groups do not count against the budget.
    /// The order is the index's, which is the values' (a TIME's key
    /// orders -10:00:00 before -01:00:00, its group key's text does not).
    contiguous: bool,
    cur: Option<(Vec<u8>, Entry)>,
    done: Vec<(Vec<u8>, Entry)>,
    /// `mem` when `cur` was opened: what the groups before it count.
    mem_done: usize,
    /// Debug builds check the planner's claim behind the contiguous mode:
    /// no group opens twice.
    #[cfg(debug_assertions)]
    opened: std::collections::HashSet<Vec<u8>>,
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
            contiguous: false,
            cur: None,
            done: Vec::new(),
            mem_done: 0,
            #[cfg(debug_assertions)]
            opened: Default::default(),
        }
    }

    /// Tells the grouper whether the rows will come group by group (see
    /// `contiguous`); ignored with ROLLUP. Before the first row.
    pub fn set_contiguous(&mut self, on: bool) {
        debug_assert!(
            self.map.is_empty() && self.cur.is_none() && self.done.is_empty() && self.runs.is_empty()
        );
        self.contiguous = on && self.levels.len() == 1;
    }

    /// A new group's entry for row `r` at `level`, counted in `mem`.
    fn new_entry(
        groups: &[(Expr, Ty)],
        aggs: &[AggSpec],
        mem: &mut usize,
        r: &[Value],
        level: usize,
        key_len: usize,
    ) -> Entry {
        let mut first = r.to_vec();
        // A super-aggregate row shows NULL for the columns it rolls up.
        for (g, _) in &groups[level..] {
            if let Expr::Col(c) = g {
                first[*c] = Value::Null;
            }
        }
        *mem += key_len
            + GROUP_OVERHEAD_BYTES
            + first.iter().map(value_size).sum::<usize>()
            + STATE_BYTES * aggs.len();
        (first, aggs.iter().map(AggState::new).collect())
    }

    /// Folds the row's aggregate arguments (`args`) into `states`.
    fn fold(
        states: &mut [AggState],
        aggs: &[AggSpec],
        args: &[Option<Value>],
        mem: &mut usize,
    ) -> SqlResult<()> {
        for ((st, spec), v) in states.iter_mut().zip(aggs).zip(args) {
            if let (AggState::Distinct(..) | AggState::Concat(_), Some(v)) = (&*st, v) {
                *mem += value_size(v);
            }
            st.add(spec, v.clone())?;
        }
        Ok(())
    }

    /// Whether every aggregate only counts rows (COUNT(*), no DISTINCT,
    /// no window): then a group's rows need not be read, only counted
    /// (`plan::for_each_key_run`).
    pub fn counts_rows_only(&self) -> bool {
        self.aggs.iter().all(counts_rows)
    }

    /// Folds one input row into its groups.
    pub fn add(&mut self, r: &[Value], cx: &mut EvalCtx) -> SqlResult<()> {
        self.args.clear();
        for spec in self.aggs {
            self.args.push(match &spec.arg {
                Some(a) => Some(a.eval(r, cx)?),
                None => None,
            });
        }
        // The group being read, when this row's columns are its first
        // row's: equal values make equal keys, so none is made.
        if let Some((_, entry)) = self.cur.as_mut() {
            let same = self.groups.iter().all(|(g, _)| match g {
                Expr::Col(c) => r.get(*c).is_some_and(|v| identical(v, &entry.0[*c])),
                _ => false,
            });
            if same {
                Self::fold(&mut entry.1, self.aggs, &self.args, &mut self.mem)?;
                return self.check_cur();
            }
        }
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
        if self.contiguous {
            let level = self.levels[0];
            self.key[0] = level as u8;
            let end = self.ends[level];
            if self.cur.as_ref().is_none_or(|(k, _)| self.key[..end] != k[..]) {
                // The group read so far is final: it leaves the budget.
                if let Some(closed) = self.cur.take() {
                    self.mem = self.mem_done;
                    self.done.push(closed);
                }
                self.mem_done = self.mem;
                #[cfg(debug_assertions)]
                assert!(
                    self.opened.insert(self.key[..end].to_vec()),
                    "a group's rows came apart in the contiguous mode (plan::serves_groups)"
                );
                let e = Self::new_entry(self.groups, self.aggs, &mut self.mem, r, level, end);
                self.cur = Some((self.key[..end].to_vec(), e));
            }
        }
        if let Some((_, entry)) = self.cur.as_mut() {
            Self::fold(&mut entry.1, self.aggs, &self.args, &mut self.mem)?;
            return self.check_cur();
        }
        for li in 0..self.levels.len() {
            let level = self.levels[li];
            // The key of a level: its number, then the first `level` parts.
            self.key[0] = level as u8;
            let key = &self.key[..self.ends[level]];
            let entry = match self.map.get_mut(key) {
                Some(entry) => entry,
                None => {
                    let e = Self::new_entry(self.groups, self.aggs, &mut self.mem, r, level, key.len());
                    self.map.entry(key.to_vec()).or_insert(e)
                }
            };
            Self::fold(&mut entry.1, self.aggs, &self.args, &mut self.mem)?;
        }
        if self.mem > self.cfg.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// In the contiguous mode, the group being read alone past the budget
    /// (DISTINCT sets, GROUP_CONCAT) ends the mode, so that the map spills
    /// it as it spills any group.
    /// The closed groups stay in `done`: every later row is of this group
    /// or of one after it.
    fn check_cur(&mut self) -> SqlResult<()> {
        if self.mem - self.mem_done > self.cfg.budget {
            self.contiguous = false;
            self.map.extend(self.cur.take());
            self.spill()?;
        }
        Ok(())
    }

    /// Takes the groups the contiguous mode has closed so far, in order:
    /// they are final (see `contiguous`). Those not taken, `finish` hands
    /// out before the rest.
    pub fn drain_done(&mut self) -> std::vec::Drain<'_, (Vec<u8>, Entry)> {
        self.done.drain(..)
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

    /// Every group not yet taken (`drain_done`) in order, its partial
    /// states combined: the contiguous mode's closed groups first, then
    /// the map's and the runs' in key order (all of them after the
    /// closed ones: the mode ends only inside a group).
    pub fn finish(mut self) -> SqlResult<Vec<(Vec<u8>, Entry)>> {
        let mut out = std::mem::take(&mut self.done);
        if self.contiguous {
            // Nothing was spilled or mapped in this mode.
            debug_assert!(self.map.is_empty() && self.runs.is_empty());
            out.extend(self.cur.take());
            return Ok(out);
        }
        if self.runs.is_empty() {
            out.extend(self.take_sorted());
            return Ok(out);
        }
        if !self.map.is_empty() {
            self.spill()?;
        }
        let nstates = self.aggs.len();
        let mut merge = crate::sort::merge_runs(std::mem::take(&mut self.runs), &self.cfg)?;
        let closed = out.len();
        while let Some((key, payload)) = merge.next()? {
            let e = decode_entry(&payload, nstates)?;
            match out[closed..].last_mut() {
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
            (AggState::Distinct(seen, mine), AggState::Distinct(_, vals)) => {
                // A state read back from a run holds its values but not
                // their seen-set (`decode_state`): made here before any
                // value is checked against it.
                if seen.len() != mine.len() {
                    seen.clear();
                    for v in mine.iter() {
                        let mut k = Vec::new();
                        group_key(v, spec.arg_ty, &mut k);
                        seen.insert(k);
                    }
                }
                for v in vals.into_iter().filter(|v| !v.is_null()) {
                    let mut k = Vec::new();
                    group_key(&v, spec.arg_ty, &mut k);
                    if seen.insert(k) {
                        mine.push(v);
                    }
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

/// True when `a` and `b` are the same value in the same form, so any
/// group key made of them is the same (false where that is not cheap to
/// tell: the caller then compares keys).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::UInt(x), Value::UInt(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::sort::SortCfg;

    /// Groups `rows` (key, value) by column 0 with COUNT(*), SUM(col 1)
    /// and COUNT(DISTINCT col 1), in the grouper's contiguous mode or not,
    /// with a budget that spills or not; the keys as strings (`text`) or
    /// as numbers (both kinds of key are in their values' order, as an
    /// index hands them out); the groups as (key, aggregates) in key order.
    fn group(rows: &[(i64, i64)], contiguous: bool, budget: usize, text: bool) -> Vec<Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        let cfg = SortCfg {
            budget,
            dir: dir.path().to_path_buf(),
            killed: Arc::new(AtomicBool::new(false)),
            fanin: 4,
            proc: None,
        };
        let kty = if text { Ty::Str(crate::types::Collation::Utf8mb4GeneralCi) } else { Ty::Int };
        let groups = vec![(Expr::Col(0), kty)];
        let spec = |func, arg, distinct| AggSpec {
            func,
            arg,
            arg_ty: Ty::Int,
            distinct,
            sep: Vec::new(),
            window: None,
        };
        let aggs = vec![
            spec(AggFn::CountStar, None, false),
            spec(AggFn::Sum, Some(Expr::Col(1)), false),
            spec(AggFn::Count, Some(Expr::Col(1)), true),
        ];
        let mut g = Grouper::new(&groups, &aggs, false, cfg);
        g.set_contiguous(contiguous);
        let mut warnings = Vec::new();
        let vars = std::collections::HashMap::new();
        let mut cx = EvalCtx {
            now_micros: 0,
            time_zone: "+00:00",
            warnings: &mut warnings,
            database: None,
            last_insert_id: 0,
            connection_id: 0,
            user_vars: &vars,
            insert_row: None,
            strict_dml: false,
            outer: &[],
            sub: None,
        };
        for (k, v) in rows {
            let k = if text { Value::Str(format!("k{k:06}").into_bytes()) } else { Value::Int(*k) };
            g.add(&[k, Value::Int(*v)], &mut cx).unwrap();
        }
        g.finish()
            .unwrap()
            .into_iter()
            .map(|(_, (first, states))| {
                let shown = states.into_iter().zip(&aggs).map(|(st, spec)| format!("{:?}", st.finish(spec)));
                std::iter::once(format!("{:?}", first[0])).chain(shown).collect()
            })
            .collect()
    }

    /// The contiguous mode is a shortcut, never a different answer: rows
    /// that come group by group (the groups in key order, descending, or
    /// in any order, a group's rows together), with and without spilling,
    /// and groups alone past the budget (the mode ends), give the hash
    /// map's groups; in key order when they came so.
    #[test]
    fn contiguous_mode_gives_the_hash_maps_groups() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let sorted_rows = |mut g: Vec<Vec<String>>| {
            g.sort();
            g
        };
        for (groups, values) in [(700, 9), (3, 100_000)] {
            // Negative keys too: their keys' order is the numbers' as well.
            let rows: Vec<(i64, i64)> = (0..6000)
                .map(|_| (rng.gen_range(0..groups) - groups / 2, rng.gen_range(-values..values)))
                .collect();
            for text in [true, false] {
                let reference = group(&rows, false, 16 << 20, text);
                assert_eq!(reference.len() as i64, groups);
                assert_eq!(group(&rows, false, 4096, text), reference, "random order, spilled, {text}");
                // The keys' order: the text's when the keys are text.
                let mut sorted = rows.clone();
                if text {
                    sorted.sort_by_cached_key(|r| format!("k{:06}", r.0));
                } else {
                    sorted.sort_by_key(|r| r.0);
                }
                for budget in [16 << 20, 4096] {
                    assert_eq!(group(&sorted, true, budget, text), reference, "key order, {budget}, {text}");
                }
                // Descending, and the groups shuffled: each group's rows
                // still together.
                sorted.sort_by_key(|r| std::cmp::Reverse(r.0));
                let shuffle: Vec<u64> = (0..groups).map(|_| rng.gen()).collect();
                let mut shuffled = rows.clone();
                shuffled.sort_by_key(|r| shuffle[(r.0 + groups / 2) as usize]);
                for (order, name) in [(&sorted, "descending"), (&shuffled, "shuffled")] {
                    for budget in [16 << 20, 4096] {
                        assert_eq!(
                            sorted_rows(group(order, true, budget, text)),
                            sorted_rows(reference.clone()),
                            "{name}, {budget}, {text}"
                        );
                    }
                }
            }
        }
    }

    /// Debug builds check the planner's claim the contiguous mode rests
    /// on: a group that opens again panics.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "a group's rows came apart")]
    fn contiguous_mode_checks_that_each_group_comes_together() {
        group(&[(1, 0), (2, 0), (1, 0)], true, 16 << 20, false);
    }
}
