//! Access paths: which index a table is read through, and which key range.
//!
//! From a table's WHERE conjuncts of the form `col <op> constant` (and
//! `col BETWEEN c1 AND c2`, `col IN (c)`), each index gets the longest
//! prefix of its parts pinned by equalities plus an optional range on the
//! next part, or, for `col IN (c1, c2, ...)` on the next part, one range
//! per value (`Access::ranges`). The key range is built with the
//! key codec itself: a part's encoding is self-delimiting and its byte
//! order is the SQL order of the column's values, so "part = v" is the
//! key prefix `enc(v)`, "part > v" starts at `succ(enc(v))`, and so on.
//!
//! A constant becomes a bound only if storing it into the column is exact
//! (no warning, and it compares equal to the original): `int_col < 2.5`
//! gives no bound rather than a wrong one. The WHERE clause is still
//! applied to every row read, so a bound only has to contain the answer.
//!
//! The choice is by cost, from the engine's estimate of the keys in each
//! candidate's range (see `choose`); an index whose entries hold every
//! column the statement reads is read alone (`covers`).

use crate::catalog::{IndexDef, IndexKind};
use crate::coerce::{self, StoreCtx};
use crate::expr::{compare, CmpKind, CmpOp, EvalCtx, Expr, Ty};
use crate::table::{key_form, Table};
use crate::types::SqlType;
use crate::value::Value;

/// How to read one table.
#[derive(Clone, Debug)]
pub struct Access {
    /// Index into `TableDef::indexes`, or `None` for a full scan of the
    /// main dictionary.
    pub index: Option<usize>,
    pub lo: Option<Vec<u8>>,
    pub hi: Option<Vec<u8>>,
    /// Parts pinned by equality (for EXPLAIN's `ref`).
    pub eq_parts: usize,
    pub has_range: bool,
    /// Read the range backwards (ORDER BY ... DESC served by the index).
    pub reverse: bool,
    /// A secondary index whose entries hold every column the statement
    /// reads from the table (`covers`): rows are decoded from the entries
    /// alone, with no primary-key lookup; the other columns are NULL.
    pub covering: bool,
    /// The engine's estimate of the rows in the key range (`choose`);
    /// `None` where none was made (a full scan, an index read whole).
    pub rows: Option<u64>,
    /// What `choose` estimated reading this path costs (`None`: not
    /// estimated), and the fewest rows any usable key range held (an
    /// upper bound on the rows passing WHERE), for `ordered`.
    pub cost: Option<f64>,
    pub matching: Option<u64>,
    /// Disjoint key ranges in key order, read one after another (an IN
    /// list on the part after the pinned equalities: one range per
    /// value); `lo` and `hi` then span them all. Empty: the one range
    /// `lo..hi`.
    pub ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// A point read of the whole primary key reads the newest committed
    /// row under a write lock (`get_for_update`), not the snapshot's: an
    /// UPDATE or DELETE by primary key then waits for a writer of that
    /// row, as InnoDB's current read does, instead of missing a row another
    /// transaction is inserting.
    pub lock_points: bool,
    /// The table's columns the reader uses (`None`: all): rows read from
    /// the main dictionary (or a clustering index) decode only these, the
    /// others NULL, as a covering read leaves them. Set by a SELECT's
    /// single-table scan (`query::scan`), never by a statement that writes
    /// rows back.
    pub needed: Option<Vec<bool>>,
}

impl Access {
    pub fn full() -> Access {
        Access {
            index: None,
            lo: None,
            hi: None,
            eq_parts: 0,
            has_range: false,
            reverse: false,
            covering: false,
            needed: None,
            rows: None,
            cost: None,
            matching: None,
            ranges: Vec::new(),
            lock_points: false,
        }
    }
}

/// A table reference's index hints (`USE INDEX`, `FORCE INDEX`,
/// `IGNORE INDEX`, as MySQL reads them, for every purpose: the `FOR JOIN
/// | ORDER BY | GROUP BY` scope is not told apart). The default allows
/// every index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hints {
    /// Which of `TableDef::indexes` the planner may read (`None`: all).
    pub allowed: Option<Vec<bool>>,
    /// FORCE INDEX: a scan of the table costs more than reading any
    /// allowed index that can serve the statement.
    pub force: bool,
}

impl Hints {
    /// Whether index `i` may be read.
    pub fn allows(&self, i: usize) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.get(i).copied().unwrap_or(false))
    }
}

/// The hints of a table reference (`t` read as `alias`) from the
/// parser's: USE and FORCE lists are joined (an empty USE list allows no
/// index), IGNORE lists taken away, FORCE makes the scan the last resort.
/// A name the table has no index by is MySQL's 1176.
pub fn hints_of(
    t: &Table,
    alias: &str,
    given: &[sqlparser::ast::TableIndexDirective],
) -> crate::SqlResult<Hints> {
    use sqlparser::ast::TableIndexHintType as H;
    let mut hints = Hints::default();
    if given.is_empty() {
        return Ok(hints);
    }
    let n = t.def.indexes.len();
    let mut used: Option<Vec<bool>> = None;
    let mut ignored = vec![false; n];
    for h in given {
        // (SQLite's INDEXED BY and NOT INDEXED are not MySQL's syntax.)
        let sqlparser::ast::TableIndexDirective::MySql(h) = h else { continue };
        let mut named = vec![false; n];
        for name in &h.index_names {
            let i = t.def.index_by_name(&name.value).ok_or_else(|| {
                crate::error::SqlError::new(
                    1176,
                    "42000",
                    format!("Key '{}' doesn't exist in table '{alias}'", name.value),
                )
            })?;
            named[i] = true;
        }
        match h.hint_type {
            H::Ignore => ignored.iter_mut().zip(&named).for_each(|(a, b)| *a |= b),
            H::Use | H::Force => {
                hints.force |= h.hint_type == H::Force;
                let u = used.get_or_insert_with(|| vec![false; n]);
                u.iter_mut().zip(&named).for_each(|(a, b)| *a |= b);
            }
        }
    }
    let allowed: Vec<bool> = (0..n).map(|i| used.as_ref().is_none_or(|u| u[i]) && !ignored[i]).collect();
    hints.allowed = Some(allowed);
    Ok(hints)
}

/// The smallest byte string greater than every string starting with `p`
/// (`None`: there is none, p is all 0xFF).
pub fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut v = p.to_vec();
    while let Some(last) = v.last_mut() {
        if *last < 0xff {
            *last += 1;
            return Some(v);
        }
        v.pop();
    }
    None
}

/// One usable condition on a column: (column, op, constant).
struct Cond {
    col: usize,
    op: CmpOp,
    value: Value,
}

/// A usable `col IN (c1, c2, ...)` of two or more constants, each
/// converted exactly as a `Cond`'s.
struct InList {
    col: usize,
    values: Vec<Value>,
}

fn natural_kind(ty: &SqlType) -> CmpKind {
    match Ty::of(ty) {
        Ty::Str(c) => CmpKind::Str(c),
        Ty::Temporal(k) => CmpKind::Temporal(k),
        _ => CmpKind::Numeric,
    }
}

/// The operator with its operands swapped (`a < b` is `b > a`).
pub(crate) fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        o => o,
    }
}

/// The conditions of `conj` on the columns of the table whose columns
/// start at `offset` in the row, with constants converted exactly.
fn conditions(t: &Table, conj: &[&Expr], offset: usize, cx: &mut EvalCtx) -> (Vec<Cond>, Vec<InList>) {
    let ncols = t.def.columns.len();
    let mine = |e: &Expr| match e {
        Expr::Col(i) if *i >= offset && *i < offset + ncols => Some(*i - offset),
        _ => None,
    };
    let mut out = Vec::new();
    let mut ins = Vec::new();
    let mut nulls = Vec::new();
    // The constant `e` stored into column `col` if that is exact.
    let exact = |col: usize, kind: CmpKind, e: &Expr, cx: &mut EvalCtx| -> Option<Value> {
        let cty = &t.def.columns[col].ty;
        if kind != natural_kind(cty) || !e.is_constant() {
            return None;
        }
        let v = e.eval(&[], cx).ok()?;
        if v.is_null() {
            return None;
        }
        let mut w = Vec::new();
        let mut scx = StoreCtx { strict: true, row: 1, warnings: &mut w };
        let stored = coerce::store(v.clone(), &t.def.columns[col], &mut scx).ok()?;
        if !w.is_empty() || compare(&v, &stored, kind) != Some(std::cmp::Ordering::Equal) {
            return None;
        }
        Some(stored)
    };
    let mut push = |col: usize, op: CmpOp, kind: CmpKind, e: &Expr, cx: &mut EvalCtx| {
        if let Some(value) = exact(col, kind, e, cx) {
            out.push(Cond { col, op, value });
        }
    };
    for c in conj {
        match c {
            Expr::Cmp(op, kind, a, b) if *op != CmpOp::Ne => {
                let op = if *op == CmpOp::NullSafeEq { CmpOp::Eq } else { *op };
                if let Some(col) = mine(a) {
                    push(col, op, *kind, b, cx);
                } else if let Some(col) = mine(b) {
                    push(col, flip(op), *kind, a, cx);
                }
            }
            // `col IS NULL` pins the part to its NULL marker; `col IS NOT
            // NULL` is the range past it (`col > NULL` in key order: the
            // NULL marker sorts below every value's, see `keycodec`). Only
            // on a nullable column: on a NOT NULL one the first is always
            // false and the second always true, nothing to narrow by.
            Expr::IsNull(e, neg) => {
                if let Some(col) = mine(e).filter(|&c| t.def.columns[c].nullable) {
                    let op = if *neg { CmpOp::Gt } else { CmpOp::Eq };
                    nulls.push(Cond { col, op, value: Value::Null });
                }
            }
            Expr::Between(e, kind, lo, hi, false) => {
                if let Some(col) = mine(e) {
                    push(col, CmpOp::Ge, *kind, lo, cx);
                    push(col, CmpOp::Le, *kind, hi, cx);
                }
            }
            Expr::In(e, kind, list, false, _) if list.len() == 1 => {
                if let Some(col) = mine(e) {
                    push(col, CmpOp::Eq, *kind, &list[0].0, cx);
                }
            }
            // Each item by its own comparison kind; all must convert
            // exactly (a NULL item matches nothing and is left out).
            Expr::In(e, _, list, false, _) => {
                if let Some(col) = mine(e) {
                    let mut values = Vec::new();
                    for (item, kind) in list.iter() {
                        if matches!(item, Expr::Const(Value::Null)) {
                            continue;
                        }
                        match exact(col, *kind, item, cx) {
                            Some(v) => values.push(v),
                            None => {
                                values.clear();
                                break;
                            }
                        }
                    }
                    if !values.is_empty() {
                        ins.push(InList { col, values });
                    }
                }
            }
            _ => {}
        }
    }
    out.append(&mut nulls);
    (out, ins)
}

/// Costs, in units of a point read of the main dictionary (a descent
/// and a basement search). Calibrated on MariaDB 10.11's choices over
/// small InnoDB tables: a full scan of 2 rows loses to a 1-row ref, of 40
/// rows it loses to a 4-row ref and wins over a 10-row one.
/// Reading one row or entry in key order (a cursor step and the WHERE).
const ROW_COST: f64 = 0.2;
/// Starting a read of a key range: one descent.
const RANGE_START_COST: f64 = 1.0;
/// Starting a full scan: the descent and the first basements whole.
const SCAN_START_COST: f64 = 2.0;
/// Fetching a row from the main dictionary for a secondary entry that
/// does not cover the statement.
const LOOKUP_COST: f64 = 1.0;

/// The access path for table `t` (columns at `offset` of the row) under
/// the conjuncts `conj`, by cost: each index the conjuncts narrow gives a
/// key range, the engine estimates the keys in it
/// (`Txn::estimate_range`), and reading them costs `RANGE_START_COST`
/// plus `ROW_COST` a row, plus `LOOKUP_COST` a row through a secondary
/// index that does not cover `needed` (the columns read; `None`: all). A
/// full scan costs `SCAN_START_COST` plus `ROW_COST` for each of the
/// table's estimated rows. The cheapest wins; an index wins a tie with
/// the scan, and among indexes the one pinning more parts, then the
/// primary key. A unique index pinned whole is a point read: one row,
/// not estimated.
pub fn choose(
    txn: &fractaldb::Txn,
    t: &Table,
    hints: &Hints,
    conj: &[&Expr],
    offset: usize,
    cx: &mut EvalCtx,
    needed: Option<&[bool]>,
) -> Access {
    let (conds, ins) = conditions(t, conj, offset, cx);
    let secondary = t.secondary_usable(txn);
    // FORCE INDEX with nothing to narrow by: an allowed index whose entries
    // hold every column read is read whole (EXPLAIN's `index`), as MySQL
    // does; otherwise the scan.
    let forced_whole = || whole_covering(txn, t, hints, needed?, |_| true);
    if conds.is_empty() && ins.is_empty() {
        return if hints.force { forced_whole().unwrap_or_else(Access::full) } else { Access::full() };
    }
    let candidates: Vec<Access> = t
        .def
        .indexes
        .iter()
        .enumerate()
        .filter(|(i, ix)| (secondary || ix.kind == IndexKind::Primary) && hints.allows(*i))
        .filter_map(|(i, ix)| for_index(t, i, ix, &conds, &ins))
        .collect();
    if hints.force && candidates.is_empty() {
        return forced_whole().unwrap_or_else(Access::full);
    }
    // A point read (a unique index pinned whole) reads one row: nothing
    // is cheaper, so nothing is estimated (the primary key's first, as it
    // needs no second read).
    let point = |a: &Access| {
        let ix = &t.def.indexes[a.index.expect("an index's access")];
        a.eq_parts == ix.parts.len()
            && !a.has_range
            && ix.kind != IndexKind::Plain
            && ix.parts.iter().all(|p| p.prefix.is_none())
    };
    let primary = |a: &Access| a.index == t.def.primary;
    if let Some(a) = candidates.iter().filter(|a| point(a)).min_by_key(|a| !primary(a)) {
        let mut a = a.clone();
        a.rows = Some(1);
        a.matching = Some(1);
        set_covering(t, &mut a, needed);
        return a;
    }
    // One key range of the primary key and no other candidate: it reads
    // some of the rows a scan would, one key each, so it costs at most
    // `RANGE_START_COST` plus the scan's `ROW_COST`s, below
    // `SCAN_START_COST` plus them. Nothing to choose, so nothing is
    // estimated (two descents of the tree a statement: under many
    // threads, root-lock waits; EXPLAIN estimates the rows itself,
    // `estimate_rows`). `rows`, `cost` and `matching` stay `None`, which
    // `ordered` reads only for a full scan.
    if let [a] = candidates.as_slice() {
        if primary(a) && a.ranges.is_empty() {
            let mut a = a.clone();
            set_covering(t, &mut a, needed);
            return a;
        }
    }
    let estimate = |a: &Access| estimate_rows(txn, t, a);
    let Some(scan_rows) = estimate(&Access::full()) else { return Access::full() };
    // FORCE INDEX: the scan is taken only when no allowed index can be.
    let scan_cost = if hints.force { f64::INFINITY } else { SCAN_START_COST + scan_rows as f64 * ROW_COST };
    let mut best: Option<(f64, usize, Access)> = None;
    let mut matching = scan_rows;
    for mut a in candidates {
        let ix = &t.def.indexes[a.index.expect("an index's access")];
        let rows = estimate(&a).unwrap_or(scan_rows);
        matching = matching.min(rows);
        a.rows = Some(rows);
        set_covering(t, &mut a, needed);
        let per_row = if ix.kind == IndexKind::Primary || ix.clustering || a.covering {
            ROW_COST
        } else {
            ROW_COST + LOOKUP_COST
        };
        let starts = a.ranges.len().max(1) as f64;
        let cost = RANGE_START_COST * starts + rows as f64 * per_row;
        a.cost = Some(cost);
        let rank = a.eq_parts * 2 + usize::from(ix.kind == IndexKind::Primary);
        let better = best.as_ref().is_none_or(|(c, r, _)| cost < *c || (cost == *c && rank > *r));
        if cost <= scan_cost && better {
            best = Some((cost, rank, a));
        }
    }
    let mut a = best.map_or_else(
        || Access { cost: Some(SCAN_START_COST + scan_rows as f64 * ROW_COST), ..Access::full() },
        |(_, _, a)| a,
    );
    a.matching = Some(matching);
    a
}

/// The engine's estimate of the keys `a` reads (`Txn::estimate_range`
/// over each of its ranges); `None` if the engine gives none.
pub fn estimate_rows(txn: &fractaldb::Txn, t: &Table, a: &Access) -> Option<u64> {
    let d = match a.index {
        Some(i) if t.def.indexes[i].kind != IndexKind::Primary => t.sec[i].as_ref()?,
        _ => &t.main,
    };
    ESTIMATES.with(|c| c.set(c.get() + a.ranges.len().max(1) as u64));
    if a.ranges.is_empty() {
        return txn.estimate_range(d, a.lo.as_deref(), a.hi.as_deref()).ok();
    }
    let mut n = 0u64;
    for (lo, hi) in &a.ranges {
        n = n.saturating_add(txn.estimate_range(d, Some(lo), hi.as_deref()).ok()?);
    }
    Some(n)
}

fn enc(t: &Table, ix: &IndexDef, part: usize, v: &Value, out: &mut Vec<u8>) -> bool {
    let p = &ix.parts[part];
    let ty = &t.def.columns[p.col].ty;
    crate::keycodec::encode_part(out, &key_form(v, ty), ty, p.desc, p.prefix).is_ok()
}

fn for_index(t: &Table, i: usize, ix: &IndexDef, conds: &[Cond], ins: &[InList]) -> Option<Access> {
    // A disabled index is stale (`IndexDef::disabled`): never read.
    if ix.disabled {
        return None;
    }
    let mut prefix = Vec::new();
    let mut eq = 0;
    // A part pinned to NULL (`IS NULL`): a unique index holds any number
    // of NULLs, so it is no point read (`has_range` below).
    let mut null_pinned = false;
    for (pi, p) in ix.parts.iter().enumerate() {
        // A prefix part pins only the prefix: usable as equality on the
        // prefix, but the rest of the key can't follow.
        let Some(c) = conds.iter().find(|c| c.col == p.col && c.op == CmpOp::Eq) else { break };
        if !enc(t, ix, pi, &c.value, &mut prefix) {
            return None;
        }
        null_pinned |= c.value.is_null();
        eq += 1;
        if p.prefix.is_some() {
            break;
        }
    }
    // An IN list on the next part (and nothing else on it): one key range
    // per value after the pinned prefix. Key encodings are prefix-free,
    // so the ranges are disjoint; sorted, they read in index order.
    if eq < ix.parts.len() && (eq == 0 || ix.parts[eq - 1].prefix.is_none()) {
        let p = &ix.parts[eq];
        let other = conds.iter().any(|c| c.col == p.col);
        if let (None, false, Some(l)) = (p.prefix, other, ins.iter().find(|l| l.col == p.col)) {
            let mut ranges = Vec::with_capacity(l.values.len());
            for v in &l.values {
                let mut k = prefix.clone();
                if !enc(t, ix, eq, v, &mut k) {
                    return None;
                }
                let hi = successor(&k);
                ranges.push((k, hi));
            }
            ranges.sort();
            ranges.dedup();
            debug_assert!(ranges.windows(2).all(|w| w[0].1.as_ref().is_some_and(|h| *h <= w[1].0)));
            let lo = Some(ranges[0].0.clone());
            let hi = ranges.last().and_then(|r| r.1.clone());
            return Some(Access {
                index: Some(i),
                lo,
                hi,
                eq_parts: eq,
                has_range: true,
                ranges,
                ..Access::full()
            });
        }
    }
    let mut lo = if eq > 0 { Some(prefix.clone()) } else { None };
    let mut hi = if eq > 0 { successor(&prefix).map(Some).unwrap_or(None) } else { None };
    let mut has_range = false;
    if eq < ix.parts.len() && (eq == 0 || ix.parts[eq - 1].prefix.is_none()) {
        let p = &ix.parts[eq];
        if p.prefix.is_none() {
            for c in conds.iter().filter(|c| c.col == p.col && c.op != CmpOp::Eq) {
                let mut k = prefix.clone();
                if !enc(t, ix, eq, &c.value, &mut k) {
                    return None;
                }
                // A DESC part reverses which side each bound is on.
                let op = if p.desc { flip(c.op) } else { c.op };
                let (new_lo, new_hi) = match op {
                    CmpOp::Gt => (successor(&k), None),
                    CmpOp::Ge => (Some(k), None),
                    CmpOp::Lt => (None, Some(k)),
                    CmpOp::Le => (None, successor(&k)),
                    _ => (None, None),
                };
                if let Some(l) = new_lo {
                    if lo.as_ref().is_none_or(|cur| l > *cur) {
                        lo = Some(l);
                    }
                    has_range = true;
                }
                if let Some(h) = new_hi {
                    if hi.as_ref().is_none_or(|cur| h < *cur) {
                        hi = Some(h);
                    }
                    has_range = true;
                }
            }
            // A range on a nullable column excludes NULLs, which sort first.
            if has_range && lo.is_none() {
                let mut k = prefix.clone();
                k.push(if p.desc { 0xfe } else { 0x01 });
                if !p.desc {
                    lo = Some(k);
                }
            }
        }
    }
    if eq == 0 && !has_range {
        return None;
    }
    if null_pinned && ix.kind != IndexKind::Plain {
        has_range = true;
    }
    Some(Access { index: Some(i), lo, hi, eq_parts: eq, has_range, ..Access::full() })
}

/// An access path that returns rows in the order `order` asks (columns
/// of `t` with DESC flags), if one is worth it: the chosen index when the
/// order is its parts after the pinned equality prefix (or from its
/// first part), all one way (read backwards for the other way); or, for
/// a full scan and only when a LIMIT of `limit` rows stops the read
/// early, a whole index whose leading parts are the order (the primary
/// key first) if reading it in order until the limit costs less than the
/// scan plus sorting what it matches. The rows read in order until
/// `limit` pass WHERE are estimated as `limit * table rows / matching
/// rows` (the matching rows spread evenly; `matching` from `choose`).
/// `None`: the rows must be sorted.
pub fn ordered(
    txn: &fractaldb::Txn,
    t: &Table,
    hints: &Hints,
    a: &Access,
    order: &[(usize, bool)],
    limit: Option<u64>,
    needed: Option<&[bool]>,
) -> Option<Access> {
    let serves = |i: usize, skip: usize| -> Option<bool> {
        let parts = &t.def.indexes[i].parts;
        let mut dir = None;
        for (k, (col, desc)) in order.iter().enumerate() {
            let p = parts.get(skip + k)?;
            if p.col != *col || p.prefix.is_some() {
                return None;
            }
            let rev = *desc != p.desc;
            if *dir.get_or_insert(rev) != rev {
                return None;
            }
        }
        dir
    };
    if let Some(i) = a.index {
        // A key range chosen for WHERE is kept and its rows sorted: how
        // the rows it matches spread over another index's order is not
        // known, and reading in that order may read the whole table.
        let rev = serves(i, a.eq_parts).or_else(|| serves(i, 0))?;
        return Some(Access { reverse: rev, ..a.clone() });
    }
    let limit = limit?;
    let n = t.row_estimate(txn).ok()?;
    let m = a.matching.unwrap_or(n).clamp(1, n.max(1));
    let read = n.min(limit.saturating_mul(n).div_ceil(m));
    let current = a.cost.unwrap_or(SCAN_START_COST + n as f64 * ROW_COST) + m as f64 * ROW_COST;
    let candidates =
        t.def
            .primary
            .into_iter()
            .chain((0..t.def.indexes.len()).filter(|i| {
                Some(*i) != t.def.primary && !t.def.indexes[*i].disabled && t.secondary_usable(txn)
            }))
            .filter(|i| hints.allows(*i));
    let mut best: Option<(f64, Access)> = None;
    for i in candidates {
        let Some(rev) = serves(i, 0) else { continue };
        let mut b = Access { index: Some(i), reverse: rev, rows: Some(read), ..Access::full() };
        set_covering(t, &mut b, needed);
        let ix = &t.def.indexes[i];
        let per_row = if ix.kind == IndexKind::Primary || ix.clustering || b.covering {
            ROW_COST
        } else {
            ROW_COST + LOOKUP_COST
        };
        let cost = RANGE_START_COST + read as f64 * per_row;
        if cost < current && best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, b));
        }
    }
    best.map(|(_, b)| b)
}

/// Whether reading through `a` hands out the rows group by group for a
/// GROUP BY on the columns `group_cols`: the leading parts of its index
/// (the primary key's for a scan of the main dictionary), after the parts
/// pinned by equalities when it reads one range, are those columns in any
/// order, whole, and of types whose key equality is GROUP BY's (not
/// FLOAT/DOUBLE, where -0 and +0 share a key). The grouper rests on it
/// (`group::Grouper::contiguous`): a group's rows come one after
/// another, so a group is final once a row of another comes, and is
/// handed out then (debug builds check that no group opens twice).
pub fn serves_groups(t: &Table, a: &Access, group_cols: &[usize]) -> bool {
    group_key_parts(t, a, group_cols).is_some()
}

/// When `a` serves the groups (`serves_groups`): how many leading parts
/// of its index's keys decide an entry's group (the pinned ones and the
/// group columns'). Entries whose first that many key parts are equal
/// byte for byte are in one group: every part is whole (no prefix) and
/// of a type whose key equality is GROUP BY's equality (a text
/// collation's key holds its weights, as GROUP BY compares).
pub fn group_key_parts(t: &Table, a: &Access, group_cols: &[usize]) -> Option<usize> {
    let i = a.index.or(t.def.primary)?;
    if group_cols.is_empty() {
        return None;
    }
    let parts = &t.def.indexes[i].parts;
    let skip = if a.ranges.is_empty() { a.eq_parts } else { 0 };
    let lead = parts.get(skip..skip + group_cols.len())?;
    // Every other type's group keys (`query::group_key`) are in its index
    // order; JSON has no index order of its own.
    let serves = lead.iter().all(|p| {
        p.prefix.is_none() && group_cols.contains(&p.col) && !matches!(t.def.columns[p.col].ty, SqlType::Json)
    }) && group_cols.iter().all(|c| lead.iter().any(|p| p.col == *c));
    serves.then_some(skip + group_cols.len())
}

/// For a GROUP BY read of one table by a full scan (`a`): a secondary
/// index that covers `needed` and whose order hands out the groups
/// (`serves_groups`), read whole instead, so the grouper needs no table of
/// groups to look rows up in; of several, the one with the fewest parts.
/// `None`: keep the scan. (An index that only covers is not taken: with
/// the values it carries after its weights, an entry may be wider than
/// the row.)
pub fn grouped_scan(
    txn: &fractaldb::Txn,
    t: &Table,
    hints: &Hints,
    a: &Access,
    needed: Option<&[bool]>,
    group_cols: &[usize],
) -> Option<Access> {
    let needed = needed?;
    if a.index.is_some() || !a.ranges.is_empty() || a.lo.is_some() || a.hi.is_some() {
        return None;
    }
    if group_cols.is_empty() {
        return None;
    }
    whole_covering(txn, t, hints, needed, |b| serves_groups(t, b, group_cols))
}

/// A read of a whole secondary index that covers `needed` and that
/// `hints` allow, among those `fits` accepts: the one with the fewest
/// parts (`None`: there is none, or this snapshot may not read the
/// secondary indexes).
fn whole_covering(
    txn: &fractaldb::Txn,
    t: &Table,
    hints: &Hints,
    needed: &[bool],
    fits: impl Fn(&Access) -> bool,
) -> Option<Access> {
    if !t.secondary_usable(txn) {
        return None;
    }
    t.def
        .secondary()
        .filter(|(i, ix)| !ix.disabled && hints.allows(*i) && covers(t, *i, needed))
        .map(|(i, ix)| (Access { index: Some(i), covering: true, ..Access::full() }, ix.parts.len()))
        .filter(|(b, _)| fits(b))
        .min_by_key(|(_, n)| *n)
        .map(|(b, _)| b)
}

/// Marks in `needed` the columns of the table at `offset` that `e` reads;
/// false if it holds a correlated subquery (which reads the whole row).
pub fn mark_columns(e: &Expr, offset: usize, needed: &mut [bool]) -> bool {
    let mut ok = true;
    e.walk(&mut |x| match x {
        Expr::Col(i) if *i >= offset && *i - offset < needed.len() => needed[*i - offset] = true,
        Expr::Correlated(_) => ok = false,
        _ => {}
    });
    ok
}

/// True if an entry of secondary index `i` holds every column `needed`
/// marks: its whole, decodable key parts and the primary key's it carries.
/// A clustering index holds the row anyway; the primary key is the row.
pub fn covers(t: &Table, i: usize, needed: &[bool]) -> bool {
    let ix = &t.def.indexes[i];
    if ix.kind == IndexKind::Primary || ix.clustering {
        return false;
    }
    let mut have = vec![false; t.def.columns.len()];
    let pk_parts = t.def.primary.map_or(&[][..], |p| &t.def.indexes[p].parts[..]);
    for p in ix.parts.iter().chain(pk_parts) {
        if crate::keycodec::gives_value(&t.def.columns[p.col].ty, p.prefix) {
            have[p.col] = true;
        }
    }
    for p in &ix.parts {
        if ix.carries(p, &t.def.columns[p.col].ty) {
            have[p.col] = true;
        }
    }
    needed.iter().zip(&have).all(|(n, h)| !n || *h)
}

/// Marks `a` covering when its index covers `needed` (`None`: every
/// column is read).
pub fn set_covering(t: &Table, a: &mut Access, needed: Option<&[bool]>) {
    a.covering = match (a.index, needed) {
        (Some(i), Some(n)) => covers(t, i, n),
        _ => false,
    };
}

/// A row with the columns an index entry holds (`covers`), the others
/// NULL: the key parts from `key`, the primary key's from `pk`, the
/// carried values from the end of `key` (`IndexDef::carry`).
fn row_from_entry(t: &Table, ix: &IndexDef, key: &[u8], pk: &[u8]) -> crate::SqlResult<Vec<Value>> {
    let mut row = vec![Value::Null; t.def.columns.len()];
    let carries = ix.parts.iter().any(|p| ix.carries(p, &t.def.columns[p.col].ty));
    let mut parts = key;
    let mut vals: &[u8] = &[];
    if carries {
        // A plain index's key: the parts, the primary key, the carried
        // values, their length: read from the end.
        let (front, v) = crate::keycodec::carried(key)?;
        parts = front.strip_suffix(pk).ok_or_else(crate::table::damaged)?;
        vals = v;
    }
    // `own`: the index's parts (the primary key's carry nothing).
    let read = |row: &mut [Value],
                parts: &[crate::catalog::IndexPart],
                own: bool,
                buf: &mut &[u8],
                vals: &mut &[u8]| {
        for p in parts {
            let ty = &t.def.columns[p.col].ty;
            let before = *buf;
            if crate::keycodec::gives_value(ty, p.prefix) {
                let v = crate::keycodec::decode_part(buf, ty, p.desc)?.ok_or_else(crate::table::damaged)?;
                row[p.col] = value_form(v, ty);
            } else {
                crate::keycodec::skip_part(buf, ty, p.desc)?;
                if own && carries && ix.carries(p, ty) {
                    // A compact carried value is rebuilt from its part.
                    let part = &before[..before.len() - buf.len()];
                    row[p.col] = crate::keycodec::take_carried(vals, part, ty, p.desc)?;
                }
            }
        }
        crate::SqlResult::Ok(())
    };
    // The parts are stepped over only when one of them gives or carries
    // its value.
    if carries || ix.parts.iter().any(|p| crate::keycodec::gives_value(&t.def.columns[p.col].ty, p.prefix)) {
        read(&mut row, &ix.parts, true, &mut parts, &mut vals)?;
    }
    if !vals.is_empty() {
        return Err(crate::table::damaged());
    }
    if let Some(p) = t.def.primary {
        read(&mut row, &t.def.indexes[p].parts, false, &mut &pk[..], &mut &[][..])?;
    }
    Ok(row)
}

/// The inverse of `table::key_form`: ENUM and SET as their strings.
fn value_form(v: Value, ty: &SqlType) -> Value {
    match (ty, &v) {
        (SqlType::Enum { values, .. }, Value::UInt(i)) => match *i as usize {
            0 => Value::Str(Vec::new()),
            i => values.get(i - 1).map_or(Value::Null, |s| Value::Str(s.as_bytes().to_vec())),
        },
        (SqlType::Set { values, .. }, Value::UInt(m)) => {
            let names: Vec<&str> = values
                .iter()
                .enumerate()
                .filter(|(i, _)| m & (1 << i) != 0)
                .map(|(_, v)| v.as_str())
                .collect();
            Value::Str(names.join(",").into_bytes())
        }
        _ => v,
    }
}

thread_local! {
    /// Primary-key lookups made for rows read through a secondary index on
    /// this thread (one add per row): tests observe covering reads by it.
    static PK_LOOKUPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Entries `for_each_key_run` counted into a run without building
    /// their rows (all but a run's first, and all of a run HAVING
    /// rejected by its count), on this thread: tests observe the
    /// shortcut by it.
    static RUN_ROWS_SKIPPED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Key ranges the planner asked the engine to estimate on this thread
    /// (`estimate_rows`): tests observe plans made without estimates.
    static ESTIMATES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The key ranges the planner had the engine estimate on this thread so far.
pub fn range_estimates() -> u64 {
    ESTIMATES.with(|c| c.get())
}

/// The primary-key lookups `for_each_row` made on this thread so far.
pub fn pk_lookups() -> u64 {
    PK_LOOKUPS.with(|c| c.get())
}

/// The index entries GROUP BY counted without building their rows
/// (`for_each_key_run`) on this thread so far.
pub fn run_rows_skipped() -> u64 {
    RUN_ROWS_SKIPPED.with(|c| c.get())
}

/// Calls `f(pk, row)` for each row the access path reads, in its index's
/// order, until `f` returns `Ok(false)`. Rows of a secondary index are
/// fetched from the main dictionary by their primary key (or decoded from
/// the entry for a clustering index).
pub fn for_each_row(
    txn: &fractaldb::Txn,
    t: &Table,
    a: &Access,
    mut f: impl FnMut(&[u8], Vec<Value>) -> crate::SqlResult<bool>,
) -> crate::SqlResult<()> {
    t.check_snapshot(txn)?;
    if a.ranges.is_empty() {
        read_range(txn, t, a, a.lo.as_deref(), a.hi.as_deref(), &mut f)?;
        return Ok(());
    }
    let n = a.ranges.len();
    for i in 0..n {
        let (lo, hi) = &a.ranges[if a.reverse { n - 1 - i } else { i }];
        if !read_range(txn, t, a, Some(lo), hi.as_deref(), &mut f)? {
            break;
        }
    }
    Ok(())
}

/// What `for_each_row` calls per row: the primary key (borrowed) and the row.
type RowFn<'a> = dyn FnMut(&[u8], Vec<Value>) -> crate::SqlResult<bool> + 'a;

/// `for_each_row` over one key range `lo..hi` of `a`'s index; false if
/// `f` asked to stop.
fn read_range(
    txn: &fractaldb::Txn,
    t: &Table,
    a: &Access,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    f: &mut RowFn<'_>,
) -> crate::SqlResult<bool> {
    let needed = a.needed.as_deref();
    // The whole primary key pinned (by equalities, or by them and one
    // value of an IN list): one point read, not a cursor (which loads and
    // merges a batch of keys around it).
    if let (Some(i), Some(key)) = (a.index, lo) {
        let ix = &t.def.indexes[i];
        let whole = ix.parts.iter().all(|p| p.prefix.is_none());
        let pinned = if a.ranges.is_empty() {
            a.eq_parts == ix.parts.len() && !a.has_range
        } else {
            a.eq_parts + 1 == ix.parts.len()
        };
        if ix.kind == IndexKind::Primary && whole && pinned {
            // `lo` is then exactly the row's key (`for_index`).
            let v = if a.lock_points { txn.get_for_update(&t.main, key)? } else { txn.get(&t.main, key)? };
            if let Some(v) = v {
                crate::progress::examined();
                return f(key, t.decode_row_some(key, &v, needed)?);
            }
            return Ok(true);
        }
    }
    match a.index.filter(|i| t.def.indexes[*i].kind != IndexKind::Primary) {
        None => {
            // Pairs borrowed from the cursor: each row is decoded, so the
            // engine's copy of it would be garbage at once.
            let mut r = txn.range(&t.main, lo, hi, a.reverse);
            while let Some(kv) = r.next_ref() {
                let (k, v) = kv?;
                crate::progress::examined();
                if !f(k, t.decode_row_some(k, v, needed)?)? {
                    return Ok(false);
                }
            }
        }
        Some(i) => {
            let d = t.sec[i].as_ref().expect("secondary dictionary");
            let mut r = txn.range(d, lo, hi, a.reverse);
            while let Some(kv) = r.next_ref() {
                let (k, v) = kv?;
                crate::progress::examined();
                let (pk, row) = secondary_row(txn, t, a, i, k, v)?;
                if !f(&pk, row)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// The primary key and the row of entry `k`, `v` of secondary index `i`
/// read through `a`: from the entry alone when `a` covers, from the whole
/// row a clustering index holds, else by a lookup in the main dictionary.
fn secondary_row<'e>(
    txn: &fractaldb::Txn,
    t: &Table,
    a: &Access,
    i: usize,
    k: &'e [u8],
    v: &'e [u8],
) -> crate::SqlResult<(std::borrow::Cow<'e, [u8]>, Vec<Value>)> {
    let ix = &t.def.indexes[i];
    let needed = a.needed.as_deref();
    if a.covering {
        let pk = t.entry_pk(ix, k, v)?;
        return Ok((pk.into(), row_from_entry(t, ix, k, pk)?));
    }
    if ix.clustering {
        // The primary key from the whole row, then the columns the
        // reader uses.
        let row = t.decode_full_row(v, None)?;
        let pk = t.pk(&row, None)?;
        let row = match needed {
            Some(_) => t.decode_full_row(v, needed)?,
            None => row,
        };
        return Ok((pk.into(), row));
    }
    PK_LOOKUPS.with(|c| c.set(c.get() + 1));
    let pk = t.entry_pk(ix, k, v)?;
    match txn.get(&t.main, pk)? {
        Some(r) => Ok((pk.into(), t.decode_row_some(pk, &r, needed)?)),
        None => Err(crate::table::damaged()),
    }
}

/// How many bytes of `k` the key parts `parts` take.
fn prefix_len(t: &Table, parts: &[crate::catalog::IndexPart], k: &[u8]) -> crate::SqlResult<usize> {
    let mut rest = k;
    for p in parts {
        crate::keycodec::skip_part(&mut rest, &t.def.columns[p.col].ty, p.desc)?;
    }
    Ok(k.len() - rest.len())
}

/// GROUP BY's reading when every aggregate only counts rows
/// (`group::Grouper::counts_rows_only`) and `a` hands out the groups in
/// its order over the first `parts` parts of its keys
/// (`group_key_parts`): entries whose first `parts` key parts are equal
/// byte for byte are one run, and a run is one whole group (byte-equal
/// parts are one group, and a group's entries are all byte-equal there:
/// `group_key_parts`). `f` gets each run's length and a way to decode its
/// first entry's row, which it need not call (a group HAVING rejects by
/// its count alone is never decoded), and says whether it took the row. No other row is built, which is most
/// of a grouped scan's work. One key range (`a.ranges` empty). Stops with
/// 1317 when `killed` is set.
pub fn for_each_key_run(
    txn: &fractaldb::Txn,
    t: &Table,
    a: &Access,
    parts: usize,
    killed: &std::sync::atomic::AtomicBool,
    mut f: impl FnMut(u64, &mut dyn FnMut() -> crate::SqlResult<Vec<Value>>) -> crate::SqlResult<bool>,
) -> crate::SqlResult<()> {
    debug_assert!(a.ranges.is_empty(), "one key range");
    t.check_snapshot(txn)?;
    let index = a.index.or(t.def.primary).ok_or_else(crate::table::damaged)?;
    let key_parts = &t.def.indexes[index].parts;
    let key_parts = key_parts.get(..parts).ok_or_else(crate::table::damaged)?;
    let secondary = a.index.filter(|i| t.def.indexes[*i].kind != IndexKind::Primary);
    let dict = match secondary {
        Some(i) => t.sec[i].as_ref().expect("secondary dictionary"),
        None => &t.main,
    };
    // The run being read: its first entry's key and value (the buffers
    // are reused from run to run), the length of its key prefix, and how
    // many entries it has had (0: no run yet).
    let (mut first_k, mut first_v) = (Vec::new(), Vec::new());
    let (mut prefix, mut n) = (0usize, 0u64);
    let decode = |k: &[u8], v: &[u8]| match secondary {
        Some(i) => secondary_row(txn, t, a, i, k, v).map(|r| r.1),
        None => t.decode_row_some(k, v, a.needed.as_deref()),
    };
    // Runs whose row `f` built (one row a run at most): the rest of the
    // entries were skipped.
    let mut built = 0u64;
    let mut poll = crate::progress::KillPoll::new(killed);
    let mut entries = 0u64;
    let mut r = txn.range(dict, a.lo.as_deref(), a.hi.as_deref(), a.reverse);
    while let Some(kv) = r.next_ref() {
        let (k, v) = kv?;
        crate::progress::examined();
        poll.row()?;
        // The run's parts begin this key only if they are its first
        // parts: every part is self-delimiting and no part's code is a
        // prefix of another's (`keycodec`), so a key starting with whole
        // parts holds exactly those parts there. Only a new run's key is
        // parsed.
        entries += 1;
        if n > 0 && k.starts_with(&first_k[..prefix]) {
            debug_assert_eq!(prefix_len(t, key_parts, k).ok(), Some(prefix));
            n += 1;
            continue;
        }
        let new_prefix = prefix_len(t, key_parts, k)?;
        if n > 0 {
            built += u64::from(f(n, &mut || decode(&first_k, &first_v))?);
        }
        first_k.clear();
        first_k.extend_from_slice(k);
        first_v.clear();
        first_v.extend_from_slice(v);
        prefix = new_prefix;
        n = 1;
    }
    if n > 0 {
        built += u64::from(f(n, &mut || decode(&first_k, &first_v))?);
    }
    RUN_ROWS_SKIPPED.with(|c| c.set(c.get() + entries - built));
    Ok(())
}
