//! Access paths: which index a table is read through, and which key range.
//!
//! From a table's WHERE conjuncts of the form `col <op> constant` (and
//! `col BETWEEN c1 AND c2`, `col IN (c, ...)` with one constant), each
//! index gets the longest prefix of its parts pinned by equalities plus
//! an optional range on the next part. The key range is built with the
//! key codec itself: a part's encoding is self-delimiting and its byte
//! order is the SQL order of the column's values, so "part = v" is the
//! key prefix `enc(v)`, "part > v" starts at `succ(enc(v))`, and so on.
//!
//! A constant becomes a bound only if storing it into the column is exact
//! (no warning, and it compares equal to the original): `int_col < 2.5`
//! gives no bound rather than a wrong one. The WHERE clause is still
//! applied to every row read, so a bound only has to contain the answer.
//!
//! The choice: the index with the most pinned parts wins (a unique index
//! pinned whole is a point read), a range counts half a part, and the
//! primary key wins ties (its rows need no second read).

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
}

impl Access {
    pub fn full() -> Access {
        Access { index: None, lo: None, hi: None, eq_parts: 0, has_range: false, reverse: false }
    }
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
fn conditions(t: &Table, conj: &[&Expr], offset: usize, cx: &mut EvalCtx) -> Vec<Cond> {
    let ncols = t.def.columns.len();
    let mine = |e: &Expr| match e {
        Expr::Col(i) if *i >= offset && *i < offset + ncols => Some(*i - offset),
        _ => None,
    };
    let mut out = Vec::new();
    let mut push = |col: usize, op: CmpOp, kind: CmpKind, e: &Expr, cx: &mut EvalCtx| {
        let cty = &t.def.columns[col].ty;
        if kind != natural_kind(cty) || !e.is_constant() {
            return;
        }
        let Ok(v) = e.eval(&[], cx) else { return };
        if v.is_null() {
            return;
        }
        let mut w = Vec::new();
        let mut scx = StoreCtx { strict: true, row: 1, warnings: &mut w };
        let Ok(stored) = coerce::store(v.clone(), &t.def.columns[col], &mut scx) else { return };
        if !w.is_empty() || compare(&v, &stored, kind) != Some(std::cmp::Ordering::Equal) {
            return;
        }
        out.push(Cond { col, op, value: stored });
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
            Expr::Between(e, kind, lo, hi, false) => {
                if let Some(col) = mine(e) {
                    push(col, CmpOp::Ge, *kind, lo, cx);
                    push(col, CmpOp::Le, *kind, hi, cx);
                }
            }
            Expr::In(e, kind, list, false) if list.len() == 1 => {
                if let Some(col) = mine(e) {
                    push(col, CmpOp::Eq, *kind, &list[0].0, cx);
                }
            }
            _ => {}
        }
    }
    out
}

/// The access path for table `t` (columns at `offset` of the row) under
/// the conjuncts `conj`.
pub fn choose(t: &Table, conj: &[&Expr], offset: usize, cx: &mut EvalCtx) -> Access {
    let conds = conditions(t, conj, offset, cx);
    if conds.is_empty() {
        return Access::full();
    }
    let mut best: Option<(u32, Access)> = None;
    for (i, ix) in t.def.indexes.iter().enumerate() {
        let Some(a) = for_index(t, i, ix, &conds) else { continue };
        let mut score = a.eq_parts as u32 * 4 + if a.has_range { 2 } else { 0 };
        if a.eq_parts == ix.parts.len() && ix.kind != IndexKind::Plain {
            score += 100;
        }
        if ix.kind == IndexKind::Primary {
            score += 1;
        }
        if score > 1 && best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, a));
        }
    }
    best.map_or_else(Access::full, |(_, a)| a)
}

fn enc(t: &Table, ix: &IndexDef, part: usize, v: &Value, out: &mut Vec<u8>) -> bool {
    let p = &ix.parts[part];
    let ty = &t.def.columns[p.col].ty;
    crate::keycodec::encode_part(out, &key_form(v, ty), ty, p.desc, p.prefix).is_ok()
}

fn for_index(t: &Table, i: usize, ix: &IndexDef, conds: &[Cond]) -> Option<Access> {
    let mut prefix = Vec::new();
    let mut eq = 0;
    for (pi, p) in ix.parts.iter().enumerate() {
        // A prefix part pins only the prefix: usable as equality on the
        // prefix, but the rest of the key can't follow.
        let Some(c) = conds.iter().find(|c| c.col == p.col && c.op == CmpOp::Eq) else { break };
        if !enc(t, ix, pi, &c.value, &mut prefix) {
            return None;
        }
        eq += 1;
        if p.prefix.is_some() {
            break;
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
    Some(Access { index: Some(i), lo, hi, eq_parts: eq, has_range, reverse: false })
}

/// An access path that returns rows in the order `order` asks (columns
/// of `t` with DESC flags), if one is at hand: the chosen index when the
/// order is its parts after the pinned equality prefix (or from its
/// first part), all one way (read backwards for the other way); or, for
/// a full scan and only when `switch` (a LIMIT will stop the read early),
/// a whole index whose leading parts are the order, the primary key
/// first. `None`: the rows must be sorted.
pub fn ordered(t: &Table, a: &Access, order: &[(usize, bool)], switch: bool) -> Option<Access> {
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
    match a.index {
        Some(i) => {
            let rev = serves(i, a.eq_parts).or_else(|| serves(i, 0))?;
            Some(Access { reverse: rev, ..a.clone() })
        }
        None if switch => {
            let candidates = t
                .def
                .primary
                .into_iter()
                .chain((0..t.def.indexes.len()).filter(|i| Some(*i) != t.def.primary));
            for i in candidates {
                if let Some(rev) = serves(i, 0) {
                    return Some(Access {
                        index: Some(i),
                        lo: None,
                        hi: None,
                        eq_parts: 0,
                        has_range: false,
                        reverse: rev,
                    });
                }
            }
            None
        }
        None => None,
    }
}

/// Calls `f(pk, row)` for each row the access path reads, in its index's
/// order, until `f` returns `Ok(false)`. Rows of a secondary index are
/// fetched from the main dictionary by their primary key (or decoded from
/// the entry for a clustering index).
pub fn for_each_row(
    txn: &fractaldb::Txn,
    t: &Table,
    a: &Access,
    mut f: impl FnMut(Vec<u8>, Vec<Value>) -> crate::SqlResult<bool>,
) -> crate::SqlResult<()> {
    // The whole primary key pinned: one point read, not a cursor (which
    // loads and merges a batch of keys around it).
    if let (Some(i), Some(key)) = (a.index, a.lo.as_deref()) {
        let ix = &t.def.indexes[i];
        let whole = ix.parts.iter().all(|p| p.prefix.is_none());
        if ix.kind == IndexKind::Primary && whole && a.eq_parts == ix.parts.len() && !a.has_range {
            // `lo` is then exactly the row's key (`for_index`).
            if let Some(v) = txn.get(&t.main, key)? {
                crate::progress::examined();
                f(key.to_vec(), t.decode_row(&v)?)?;
            }
            return Ok(());
        }
    }
    match a.index.filter(|i| t.def.indexes[*i].kind != IndexKind::Primary) {
        None => {
            for kv in txn.range(&t.main, a.lo.as_deref(), a.hi.as_deref(), a.reverse) {
                let (k, v) = kv?;
                crate::progress::examined();
                if !f(k, t.decode_row(&v)?)? {
                    break;
                }
            }
        }
        Some(i) => {
            let ix = &t.def.indexes[i];
            let d = t.sec[i].as_ref().expect("secondary dictionary");
            for kv in txn.range(d, a.lo.as_deref(), a.hi.as_deref(), a.reverse) {
                let (_, v) = kv?;
                crate::progress::examined();
                let (pk, row) = if ix.clustering {
                    let row = t.decode_row(&v)?;
                    (t.pk(&row, None)?, row)
                } else {
                    match txn.get(&t.main, &v)? {
                        Some(r) => (v, t.decode_row(&r)?),
                        None => return Err(crate::table::damaged()),
                    }
                };
                if !f(pk, row)? {
                    break;
                }
            }
        }
    }
    Ok(())
}
