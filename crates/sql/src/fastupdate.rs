//! Updates without reads: `INSERT ... ON DUPLICATE KEY UPDATE` and
//! single-row `UPDATE ... WHERE <whole primary key> = constants` sent to
//! the engine as one update message (`Txn::update` with [`FAST_UPDATE`])
//! on the row's primary key, instead of reading the row, computing the
//! new one and writing it back. The message is applied when it reaches
//! the row's leaf (or when a reader meets it), to whatever row is there.
//!
//! Switched by TokuDB's `tokudb_enable_fast_upsert` (INSERT) and
//! `tokudb_enable_fast_update` (UPDATE), both OFF by default: the client
//! is told 0 affected rows (TokuDB's "NOAR", no affected rows), since
//! nobody knows whether the row was there.
//!
//! Argument of the update function (all integers little-endian):
//!
//! ```text
//! arg    := 0x01  ncols:varint  kind*ncols  insert  nops:varint  op*
//! kind   := 0 fixed 8 bytes | 1 varint length + bytes | 2 fixed 2 | 3 fixed 15
//!           (the field layout of each column in rowcodec's format)
//! insert := 0x00 (no row: an UPDATE) | 0x01 len:varint row (the row to
//!           store when the key holds none: an upsert)
//! op     := col:varint 0x00                        set the column to NULL
//!         | col:varint 0x01 len:varint field       set it to this field
//!         | col:varint 0x02 bytes:u8 unsigned:u8 delta:i128
//!                                                  add delta to an integer,
//!                                                  clamped to the column's range
//! ```
//!
//! **Invariant:** the function is deterministic and total: it is re-applied
//! by recovery and wherever the message meets the row, so it reads nothing
//! but its inputs, and never panics; a damaged argument or stored row
//! leaves the row as it was. An integer sum outside the column's range is
//! clamped to the range's end (TokuDB's rule; MySQL would give 1264 or
//! 1690), and NULL plus anything stays NULL.

use std::sync::Arc;

use crate::catalog::IndexKind;
use crate::coerce::{self, StoreCtx};
use crate::error::{SqlResult, Warning};
use crate::expr::{Arith, CmpKind, CmpOp, Expr};
use crate::rowcodec::{get_varint, put_varint};
use crate::session::Session;
use crate::table::Table;
use crate::types::SqlType;
use crate::value::Value;

/// The engine update function id of [`apply`] (`table::ADD_I64` is 1).
pub const FAST_UPDATE: u8 = 2;

const FORMAT: u8 = 1;
const K_FIXED8: u8 = 0;
const K_VAR: u8 = 1;
const K_FIXED2: u8 = 2;
const K_FIXED15: u8 = 3;

const OP_NULL: u8 = 0;
const OP_SET: u8 = 1;
const OP_ADD: u8 = 2;

fn kind_of(ty: &SqlType) -> u8 {
    match ty {
        SqlType::Decimal { .. } | SqlType::Str { .. } | SqlType::Json => K_VAR,
        SqlType::Enum { .. } => K_FIXED2,
        SqlType::Date | SqlType::Time { .. } | SqlType::DateTime { .. } => K_FIXED15,
        _ => K_FIXED8,
    }
}

/// One operation of the program, in the order the statement assigns.
#[derive(Clone, Debug, PartialEq)]
enum Op {
    Null(usize),
    Set(usize, Vec<u8>),
    Add { col: usize, bytes: u8, unsigned: bool, delta: i128 },
}

fn encode_arg(kinds: &[u8], insert: Option<&[u8]>, ops: &[Op]) -> Vec<u8> {
    let mut out = vec![FORMAT];
    put_varint(&mut out, kinds.len() as u64);
    out.extend_from_slice(kinds);
    match insert {
        None => out.push(0),
        Some(r) => {
            out.push(1);
            put_varint(&mut out, r.len() as u64);
            out.extend_from_slice(r);
        }
    }
    put_varint(&mut out, ops.len() as u64);
    for op in ops {
        match op {
            Op::Null(c) => {
                put_varint(&mut out, *c as u64);
                out.push(OP_NULL);
            }
            Op::Set(c, f) => {
                put_varint(&mut out, *c as u64);
                out.push(OP_SET);
                put_varint(&mut out, f.len() as u64);
                out.extend_from_slice(f);
            }
            Op::Add { col, bytes, unsigned, delta } => {
                put_varint(&mut out, *col as u64);
                out.push(OP_ADD);
                out.push(*bytes);
                out.push(*unsigned as u8);
                out.extend_from_slice(&delta.to_le_bytes());
            }
        }
    }
    out
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if buf.len() < n {
        return None;
    }
    let (a, b) = buf.split_at(n);
    *buf = b;
    Some(a)
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    get_varint(buf).ok()
}

struct Arg<'a> {
    kinds: &'a [u8],
    insert: Option<&'a [u8]>,
    ops: Vec<Op>,
}

fn decode_arg(mut buf: &[u8]) -> Option<Arg<'_>> {
    let b = &mut buf;
    if take(b, 1)? != [FORMAT] {
        return None;
    }
    let n = usize::try_from(varint(b)?).ok()?;
    let kinds = take(b, n)?;
    if kinds.iter().any(|k| *k > K_FIXED15) {
        return None;
    }
    let insert = match take(b, 1)?[0] {
        0 => None,
        1 => {
            let len = usize::try_from(varint(b)?).ok()?;
            Some(take(b, len)?)
        }
        _ => return None,
    };
    let nops = varint(b)?;
    let mut ops = Vec::new();
    for _ in 0..nops {
        let col = usize::try_from(varint(b)?).ok()?;
        if col >= n {
            return None;
        }
        ops.push(match take(b, 1)?[0] {
            OP_NULL => Op::Null(col),
            OP_SET => {
                let len = usize::try_from(varint(b)?).ok()?;
                Op::Set(col, take(b, len)?.to_vec())
            }
            OP_ADD => {
                let h = take(b, 2)?;
                if kinds[col] != K_FIXED8 || ![1, 2, 3, 4, 8].contains(&h[0]) || h[1] > 1 {
                    return None;
                }
                let delta = i128::from_le_bytes(take(b, 16)?.try_into().ok()?);
                Op::Add { col, bytes: h[0], unsigned: h[1] == 1, delta }
            }
            _ => return None,
        });
    }
    b.is_empty().then_some(Arg { kinds, insert, ops })
}

/// The range of an integer column of `bytes` bytes.
fn int_range(bytes: u8, unsigned: bool) -> (i128, i128) {
    let bits = 8 * u32::from(bytes);
    if unsigned {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    }
}

/// A stored row's fields (`None`: NULL).
type Fields<'a> = Vec<Option<&'a [u8]>>;

/// Splits a stored row into its version bytes and fields.
fn split_row<'a>(kinds: &[u8], mut buf: &'a [u8]) -> Option<(&'a [u8], Fields<'a>)> {
    let whole = buf;
    let b = &mut buf;
    varint(b)?;
    let version = &whole[..whole.len() - b.len()];
    let bitmap = take(b, kinds.len().div_ceil(8))?;
    let nulls: Vec<bool> = (0..kinds.len()).map(|i| bitmap[i / 8] & (1 << (i % 8)) != 0).collect();
    let mut fields = Vec::with_capacity(kinds.len());
    for (i, k) in kinds.iter().enumerate() {
        if nulls[i] {
            fields.push(None);
            continue;
        }
        let f = match *k {
            K_FIXED8 => take(b, 8)?,
            K_FIXED2 => take(b, 2)?,
            K_FIXED15 => take(b, 15)?,
            _ => {
                let start = *b;
                let len = usize::try_from(varint(b)?).ok()?;
                take(b, len)?;
                &start[..start.len() - b.len()]
            }
        };
        fields.push(Some(f));
    }
    b.is_empty().then_some((version, fields))
}

/// The update function: see the module's documentation for `arg`.
pub fn apply(_key: &[u8], old: Option<&[u8]>, arg: &[u8]) -> Option<Vec<u8>> {
    let Some(a) = decode_arg(arg) else {
        return old.map(<[u8]>::to_vec);
    };
    let Some(old) = old else {
        return a.insert.map(<[u8]>::to_vec);
    };
    run(&a, old).or_else(|| Some(old.to_vec()))
}

fn run(a: &Arg, old: &[u8]) -> Option<Vec<u8>> {
    let (version, fields) = split_row(a.kinds, old)?;
    let mut fields: Vec<Option<Vec<u8>>> = fields.into_iter().map(|f| f.map(<[u8]>::to_vec)).collect();
    for op in &a.ops {
        match op {
            Op::Null(c) => fields[*c] = None,
            Op::Set(c, f) => {
                // The field must fit its column's layout, or the row would be unreadable.
                let mut chk: &[u8] = f;
                let ok = match a.kinds[*c] {
                    K_FIXED8 => f.len() == 8,
                    K_FIXED2 => f.len() == 2,
                    K_FIXED15 => f.len() == 15,
                    _ => varint(&mut chk).is_some_and(|n| n == chk.len() as u64),
                };
                if !ok {
                    return None;
                }
                fields[*c] = Some(f.clone());
            }
            Op::Add { col, bytes, unsigned, delta } => {
                let Some(f) = &fields[*col] else { continue };
                let raw = u64::from_le_bytes(f.as_slice().try_into().ok()?);
                let v: i128 = if *unsigned { i128::from(raw) } else { i128::from(raw as i64) };
                let (lo, hi) = int_range(*bytes, *unsigned);
                let sum = v.saturating_add(*delta).clamp(lo, hi);
                let out = if *unsigned { (sum as u64).to_le_bytes() } else { (sum as i64).to_le_bytes() };
                fields[*col] = Some(out.to_vec());
            }
        }
    }
    let mut out = version.to_vec();
    let start = out.len();
    out.resize(start + a.kinds.len().div_ceil(8), 0);
    for (i, f) in fields.iter().enumerate() {
        if f.is_none() {
            out[start + i / 8] |= 1 << (i % 8);
        }
    }
    for f in fields.iter().flatten() {
        out.extend_from_slice(f);
    }
    Some(out)
}

/// How one assignment changes its column, decided when the statement is
/// planned; the values are computed per row (`VALUES(c)` is the row's).
#[derive(Clone, Debug)]
pub(crate) enum Assign {
    /// `c = e`, `e` reading no column of the stored row.
    Set(usize, Expr),
    /// `c = c + e` / `e + c` / `c - e` (`neg`) on an integer column.
    Add(usize, Expr, bool),
}

/// Whether `t` can take update messages for writes to `targets`: a
/// primary key, no clustering index, no secondary index on a target (an
/// upsert: no secondary index at all, as the row it may insert would need
/// its entries), no CHECK, no foreign key either way, no ON UPDATE
/// CURRENT_TIMESTAMP column (whether it changes depends on whether the
/// row changed), and no target in the primary key.
fn table_ok(s: &Session, t: &Table, targets: &[usize], upsert: bool) -> bool {
    let def = &t.def;
    let Some(p) = def.primary else { return false };
    // An index being built online must see every change as a row
    // (`online.rs`); the statement's metadata lock keeps the list fixed.
    if !t.building.read().is_empty() {
        return false;
    }
    if targets.iter().any(|c| def.indexes[p].parts.iter().any(|part| part.col == *c)) {
        return false;
    }
    for (_, ix) in def.secondary() {
        if upsert || ix.clustering || ix.parts.iter().any(|part| targets.contains(&part.col)) {
            return false;
        }
    }
    // Rows of older versions (`instant.rs`) are not in the layout `kinds` describe.
    def.layouts.is_empty()
        && def.checks.is_empty()
        && def.foreign_keys.is_empty()
        && !crate::dml::has_children(s, def)
        && !def.columns.iter().any(|c| c.on_update_now)
}

/// The assignments as fast operations, or `None` when one is of another form.
pub(crate) fn classify(t: &Table, assigns: &[(usize, Expr)]) -> Option<Vec<Assign>> {
    let reads_row = |e: &Expr| {
        let mut r = false;
        e.walk(&mut |x| r |= matches!(x, Expr::Col(_) | Expr::Correlated(_) | Expr::OuterCol(_)));
        r
    };
    let volatile = |e: &Expr| {
        let mut r = false;
        e.walk(&mut |x| {
            r |= matches!(x, Expr::Func(n, _, _) if matches!(n.as_str(), "RAND" | "UUID" | "SLEEP"))
        });
        r
    };
    let mut out = Vec::new();
    for (c, e) in assigns {
        let c = *c;
        if volatile(e) {
            return None;
        }
        if !reads_row(e) {
            out.push(Assign::Set(c, e.clone()));
            continue;
        }
        if !matches!(t.def.columns[c].ty, SqlType::Int { .. }) {
            return None;
        }
        match e {
            Expr::Arith(Arith::Add, a, b) => match (&**a, &**b) {
                (Expr::Col(x), k) | (k, Expr::Col(x)) if *x == c && !reads_row(k) => {
                    out.push(Assign::Add(c, k.clone(), false))
                }
                _ => return None,
            },
            Expr::Arith(Arith::Sub, a, k) if matches!(**a, Expr::Col(x) if x == c) && !reads_row(k) => {
                out.push(Assign::Add(c, (**k).clone(), true))
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A statement's fast plan: the table and its assignments.
pub(crate) struct Plan {
    t: Arc<Table>,
    assigns: Vec<Assign>,
    kinds: Vec<u8>,
}

/// The plan of an `INSERT ... ON DUPLICATE KEY UPDATE` into `t`, when
/// `tokudb_enable_fast_upsert` is on and the statement qualifies (the
/// caller checked: no IGNORE, no REPLACE, VALUES rows).
pub(crate) fn plan_upsert(s: &Session, t: &Arc<Table>, upd: &[(usize, Expr)]) -> Option<Plan> {
    if !enabled(s, "tokudb_enable_fast_upsert") || upd.is_empty() {
        return None;
    }
    plan(s, t, upd, true)
}

fn enabled(s: &Session, var: &'static str) -> bool {
    s.session_var(var).and_then(|v| v.truth()).unwrap_or(false)
}

fn plan(s: &Session, t: &Arc<Table>, upd: &[(usize, Expr)], upsert: bool) -> Option<Plan> {
    let targets: Vec<usize> = upd.iter().map(|(c, _)| *c).collect();
    if !table_ok(s, t, &targets, upsert) {
        return None;
    }
    let assigns = classify(t, upd)?;
    Some(Plan { t: t.clone(), assigns, kinds: t.def.columns.iter().map(|c| kind_of(&c.ty)).collect() })
}

impl Plan {
    /// The message argument for one row: `insert` is the full row an
    /// upsert stores when the key holds none (its `VALUES()`). `None`: this
    /// row takes the ordinary path (a sum that is not an integer, a NULL
    /// for a NOT NULL column). Constants are converted to their columns
    /// here, so a bad one is an error (strict) or a warning as usual.
    pub(crate) fn arg(
        &self,
        s: &Session,
        insert: Option<&[Value]>,
        strict: bool,
        rownum: usize,
        warnings: &mut Vec<Warning>,
    ) -> SqlResult<Option<Vec<u8>>> {
        let def = &self.t.def;
        let mut ops = Vec::with_capacity(self.assigns.len());
        for a in &self.assigns {
            let (c, e) = match a {
                Assign::Set(c, e) | Assign::Add(c, e, _) => (*c, e),
            };
            let v = {
                let mut cx = s.eval_ctx(warnings);
                cx.insert_row = insert;
                cx.strict_dml = strict;
                e.eval(&[], &mut cx)?
            };
            let col = &def.columns[c];
            match a {
                Assign::Set(..) => {
                    let mut scx = StoreCtx { strict, row: rownum, warnings };
                    let v = coerce::store(v, col, &mut scx)?;
                    if v.is_null() {
                        if !col.nullable {
                            return Ok(None);
                        }
                        ops.push(Op::Null(c));
                    } else {
                        let mut f = Vec::new();
                        crate::rowcodec::encode_field(&col.ty, &v, &mut f)?;
                        ops.push(Op::Set(c, f));
                    }
                }
                Assign::Add(_, _, neg) => {
                    let SqlType::Int { bytes, unsigned } = col.ty else { return Ok(None) };
                    let d = match v {
                        Value::Int(i) => i128::from(i),
                        Value::UInt(u) => i128::from(u),
                        // NULL + x is NULL.
                        Value::Null if col.nullable => {
                            ops.push(Op::Null(c));
                            continue;
                        }
                        _ => return Ok(None),
                    };
                    ops.push(Op::Add { col: c, bytes, unsigned, delta: if *neg { -d } else { d } });
                }
            }
        }
        let row = match insert {
            Some(r) => Some(self.t.encode_row(r)?),
            None => None,
        };
        Ok(Some(encode_arg(&self.kinds, row.as_deref(), &ops)))
    }
}

/// The plan and primary key of an `UPDATE t SET ... WHERE` whose WHERE
/// names every primary key column once with `=` to a constant (nothing
/// else), when `tokudb_enable_fast_update` is on. The constants must be
/// integers for integer columns and strings for string columns, stored
/// without a conversion warning: then the row WHERE matches is the one
/// stored under that key (string keys are collation sort keys).
pub(crate) fn plan_update(
    s: &Session,
    t: &Arc<Table>,
    sets: &[(usize, Expr)],
    filter: Option<&Expr>,
) -> SqlResult<Option<(Plan, Vec<u8>)>> {
    if !enabled(s, "tokudb_enable_fast_update") {
        return Ok(None);
    }
    let (Some(filter), Some(p)) = (filter, t.def.primary) else { return Ok(None) };
    let Some(plan) = plan(s, t, sets, false) else { return Ok(None) };
    let mut conj = Vec::new();
    crate::query::conjuncts(filter, &mut conj);
    let parts = &t.def.indexes[p].parts;
    if conj.len() != parts.len() || parts.iter().any(|p| p.prefix.is_some()) {
        return Ok(None);
    }
    let mut row = vec![Value::Null; t.def.columns.len()];
    let mut seen = vec![false; t.def.columns.len()];
    for c in conj {
        let Expr::Cmp(CmpOp::Eq, kind, a, b) = c else { return Ok(None) };
        let (col, k) = match (&**a, &**b) {
            (Expr::Col(x), k) | (k, Expr::Col(x)) if k.is_constant() => (*x, k),
            _ => return Ok(None),
        };
        if !parts.iter().any(|p| p.col == col) || std::mem::replace(&mut seen[col], true) {
            return Ok(None);
        }
        let mut w = Vec::new();
        let v = k.eval(&[], &mut s.eval_ctx(&mut w))?;
        let column = &t.def.columns[col];
        // The comparison must be the one the key encodes: numbers, or the
        // column's own collation (a COLLATE elsewhere would match other rows).
        let fits = match (&column.ty, &v, kind) {
            (SqlType::Int { .. }, Value::Int(_) | Value::UInt(_), CmpKind::Numeric) => true,
            (SqlType::Str { coll, .. }, Value::Str(_), CmpKind::Str(k)) => k == coll,
            _ => false,
        };
        if !fits || !w.is_empty() {
            return Ok(None);
        }
        let mut scx = StoreCtx { strict: true, row: 1, warnings: &mut w };
        match coerce::store(v.clone(), column, &mut scx) {
            Ok(stored) if w.is_empty() && crate::dml::same_value(&stored, &v) => row[col] = stored,
            _ => return Ok(None),
        }
    }
    debug_assert!(t.def.indexes[p].kind == IndexKind::Primary);
    let pk = t.pk(&row, None)?;
    Ok(Some((plan, pk)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kinds: &[u8], fields: &[Option<&[u8]>]) -> Vec<u8> {
        let mut out = vec![3];
        let start = out.len();
        out.resize(start + kinds.len().div_ceil(8), 0);
        for (i, f) in fields.iter().enumerate() {
            if f.is_none() {
                out[start + i / 8] |= 1 << (i % 8);
            }
        }
        for f in fields.iter().flatten() {
            out.extend_from_slice(f);
        }
        out
    }

    #[test]
    fn adds_clamp_to_the_column_range_and_sets_replace_fields() {
        let kinds = [K_FIXED8, K_FIXED8, K_VAR, K_FIXED8];
        let old =
            row(&kinds, &[Some(&1i64.to_le_bytes()), Some(&120i64.to_le_bytes()), Some(b"\x02ab"), None]);
        let ops = [
            Op::Add { col: 1, bytes: 1, unsigned: false, delta: 100 },
            Op::Set(2, b"\x03xyz".to_vec()),
            Op::Add { col: 3, bytes: 8, unsigned: false, delta: 1 },
            Op::Add { col: 0, bytes: 8, unsigned: true, delta: -5 },
        ];
        let arg = encode_arg(&kinds, None, &ops);
        let new = apply(b"k", Some(&old), &arg).unwrap();
        let want =
            row(&kinds, &[Some(&0u64.to_le_bytes()), Some(&127i64.to_le_bytes()), Some(b"\x03xyz"), None]);
        assert_eq!(new, want);
        // No row: an UPDATE leaves none, an upsert stores its row.
        assert_eq!(apply(b"k", None, &arg), None);
        let up = encode_arg(&kinds, Some(&old), &ops);
        assert_eq!(apply(b"k", None, &up), Some(old.clone()));
    }

    #[test]
    fn damage_leaves_the_row_as_it_was() {
        let kinds = [K_FIXED8, K_VAR];
        let old = row(&kinds, &[Some(&7i64.to_le_bytes()), Some(b"\x01a")]);
        let arg = encode_arg(&kinds, Some(&old), &[Op::Add { col: 0, bytes: 4, unsigned: false, delta: 1 }]);
        for cut in 0..arg.len() {
            assert_eq!(apply(b"k", Some(&old), &arg[..cut]), Some(old.clone()), "cut {cut}");
        }
        let mut long = arg.clone();
        long.push(0);
        assert_eq!(apply(b"k", Some(&old), &long), Some(old.clone()));
        for cut in 0..old.len() {
            assert_eq!(apply(b"k", Some(&old[..cut]), &arg), Some(old[..cut].to_vec()));
        }
        let set_bad = encode_arg(&kinds, None, &[Op::Set(0, vec![1, 2])]);
        assert_eq!(apply(b"k", Some(&old), &set_bad), Some(old.clone()));
    }
}
