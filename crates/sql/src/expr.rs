//! Expressions bound to a row layout, with a static type each, and their
//! evaluation with MySQL's conversions and comparison rules.
//!
//! Binding (`Binder::bind`) resolves column names to positions in the row
//! the expression will see, and fixes how each comparison compares (as
//! integers, decimals, doubles, strings of a collation, or temporals) from
//! the operands' types, as MySQL does at prepare time.

use std::cmp::Ordering;

use bigdecimal::BigDecimal;
use sqlparser::ast;

use crate::collation;
use crate::error::{SqlError, SqlResult, Warning};
use crate::types::{Collation, SqlType, StrKind};
use crate::value::{compare_numeric, Temporal, TemporalKind, Value};

/// What kind of value an expression yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Null,
    Int,
    UInt,
    /// A decimal with this many digits after the point.
    Decimal(u8),
    Double,
    Str(Collation),
    Temporal(TemporalKind),
}

impl Ty {
    pub fn of(t: &SqlType) -> Ty {
        match t {
            SqlType::Int { unsigned: false, .. } => Ty::Int,
            SqlType::Int { unsigned: true, .. } | SqlType::Bit { .. } | SqlType::Year => Ty::UInt,
            SqlType::Decimal { scale, .. } => Ty::Decimal(*scale),
            SqlType::Float { .. } | SqlType::Double { .. } => Ty::Double,
            SqlType::Str { coll, .. } | SqlType::Enum { coll, .. } | SqlType::Set { coll, .. } => {
                Ty::Str(*coll)
            }
            SqlType::Json => Ty::Str(Collation::Utf8mb4Bin),
            SqlType::Date => Ty::Temporal(TemporalKind::Date),
            SqlType::Time { .. } => Ty::Temporal(TemporalKind::Time),
            SqlType::DateTime { .. } | SqlType::Timestamp { .. } => Ty::Temporal(TemporalKind::DateTime),
        }
    }

    /// A column type to describe a result column of this kind.
    pub fn sql_type(self) -> SqlType {
        match self {
            Ty::Null => SqlType::Str { kind: StrKind::Var, len: 0, coll: Collation::Binary },
            Ty::Int => SqlType::Int { bytes: 8, unsigned: false },
            Ty::UInt => SqlType::Int { bytes: 8, unsigned: true },
            Ty::Decimal(s) => SqlType::Decimal { precision: 65, scale: s, unsigned: false },
            Ty::Double => SqlType::Double { unsigned: false },
            Ty::Str(coll) => SqlType::Str { kind: StrKind::Var, len: 255, coll },
            Ty::Temporal(TemporalKind::Date) => SqlType::Date,
            Ty::Temporal(TemporalKind::Time) => SqlType::Time { fsp: 0 },
            Ty::Temporal(TemporalKind::DateTime) => SqlType::DateTime { fsp: 0 },
        }
    }
}

/// How a comparison compares, fixed at bind time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpKind {
    Numeric,
    Str(Collation),
    Temporal(TemporalKind),
}

/// The comparison kind MySQL picks for operands of types `a` and `b`.
pub fn cmp_kind(a: Ty, b: Ty) -> CmpKind {
    match (a, b) {
        (Ty::Str(x), Ty::Str(y)) => CmpKind::Str(coerce_collation(x, y)),
        (Ty::Str(c), Ty::Null) | (Ty::Null, Ty::Str(c)) => CmpKind::Str(c),
        // Two temporals of different kinds compare as DATETIME (a DATE
        // against a DATETIME is midnight, not a truncated day).
        (Ty::Temporal(x), Ty::Temporal(y)) if x != y => CmpKind::Temporal(TemporalKind::DateTime),
        // A temporal against a string or a number compares as the
        // temporal: the other side converts (a number as YYYYMMDD[hhmmss]),
        // and one that is no date or time is the zero value, with 1292.
        (
            Ty::Temporal(k),
            Ty::Str(_) | Ty::Temporal(_) | Ty::Null | Ty::Int | Ty::UInt | Ty::Decimal(_) | Ty::Double,
        )
        | (Ty::Str(_) | Ty::Null | Ty::Int | Ty::UInt | Ty::Decimal(_) | Ty::Double, Ty::Temporal(k)) => {
            CmpKind::Temporal(k)
        }
        _ => CmpKind::Numeric,
    }
}

/// Of two collations meeting in a comparison, the one that wins: binary
/// beats text (MySQL compares a binary string with a text one as bytes),
/// otherwise the first (our columns and literals have equal coercibility
/// only when they share a character set).
pub fn coerce_collation(a: Collation, b: Collation) -> Collation {
    if a == Collation::Binary || b == Collation::Binary {
        Collation::Binary
    } else if a.is_ci() || !b.is_ci() {
        a
    } else {
        // A `_bin` column against a `_ci` literal: the column's binary order wins.
        a
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `<=>`: NULL-safe equality.
    NullSafeEq,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFn {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    GroupConcat,
}

/// The collation keys of an IN list's items, all string constants
/// compared under one collation: equal keys are exactly the items
/// `compare` finds equal, so membership is one hash lookup (a DELETE or
/// SELECT with 1,000 codes in its IN list compared each row 1,000 times).
#[derive(Debug)]
pub struct InSet {
    coll: Collation,
    keys: std::collections::HashSet<Vec<u8>>,
}

impl InSet {
    /// The set for these items, if they qualify (see the type); None
    /// otherwise, and for lists too short to gain from it.
    pub fn of(list: &[(Expr, CmpKind)]) -> Option<std::sync::Arc<InSet>> {
        let Some((_, CmpKind::Str(coll))) = list.first() else { return None };
        if list.len() < 8 {
            return None;
        }
        let mut keys = std::collections::HashSet::with_capacity(list.len());
        for (item, kind) in list {
            match (item, kind) {
                (Expr::Const(Value::Str(b)), CmpKind::Str(c)) if c == coll => {
                    let mut k = Vec::new();
                    crate::collation::sort_key(*coll, b, &mut k);
                    keys.insert(k);
                }
                _ => return None,
            }
        }
        Some(std::sync::Arc::new(InSet { coll: *coll, keys }))
    }

    /// Whether string `v` equals an item.
    fn contains(&self, v: &[u8]) -> bool {
        let mut k = Vec::new();
        crate::collation::sort_key(self.coll, v, &mut k);
        self.keys.contains(&k)
    }
}

/// A bound expression.
#[derive(Clone, Debug)]
pub enum Expr {
    Const(Value),
    /// The value at this position of the row.
    Col(usize),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Bit(BitOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, CmpKind, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// IS [NOT] TRUE / FALSE: (expr, wanted truth, negated).
    IsBool(Box<Expr>, bool, bool),
    /// (value, the items' common kind, items with their own kinds, NOT,
    /// the items' keys when they are all non-NULL string constants of one
    /// collation: a string value is then one lookup, not a comparison per
    /// item; `InSet::of`).
    In(Box<Expr>, CmpKind, Vec<(Expr, CmpKind)>, bool, Option<std::sync::Arc<InSet>>),
    Between(Box<Expr>, CmpKind, Box<Expr>, Box<Expr>, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: u8,
        coll: Collation,
        negated: bool,
    },
    Case {
        operand: Option<(Box<Expr>, CmpKind)>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Func(String, Vec<Expr>, Vec<Option<Collation>>),
    /// A user variable `@name`.
    UserVar(String),
    /// A system variable, already read at bind time.
    SysVar(Value),
    /// `VALUES(col)` in ON DUPLICATE KEY UPDATE: the would-be-inserted row's column.
    InsertValue(usize),
    /// A value computed by a subquery before execution (uncorrelated).
    Subquery(Box<Value>),
    /// Column i of the enclosing query's current row (`EvalCtx::outer`).
    OuterCol(usize),
    /// A subquery that reads the enclosing query's row: run per row
    /// through `EvalCtx::sub`.
    Correlated(Box<Correlated>),
    Cast(Box<Expr>, Cast),
}

/// A correlated subquery and what its rows become.
#[derive(Clone, Debug)]
pub struct Correlated {
    pub query: Box<ast::Query>,
    pub kind: CorrKind,
}

#[derive(Clone, Debug)]
pub enum CorrKind {
    /// `(SELECT ...)`: its one value, NULL for no row.
    Scalar,
    /// `[NOT] EXISTS (SELECT ...)`.
    Exists(bool),
    /// `x [NOT] IN (SELECT ...)`.
    In(Box<Expr>, bool),
}

/// Runs a correlated subquery with the enclosing query's current row.
pub type SubRunner<'a> = dyn FnMut(&ast::Query, &[Value]) -> SqlResult<Vec<Vec<Value>>> + 'a;

/// CAST targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cast {
    Signed,
    Unsigned,
    Decimal(u8, u8),
    Double,
    Char(Collation),
    Date,
    DateTime(u8),
    Time(u8),
}

/// What evaluation needs besides the row.
pub struct EvalCtx<'a> {
    pub now_micros: i64,
    pub time_zone: &'a str,
    pub warnings: &'a mut Vec<Warning>,
    pub database: Option<&'a str>,
    pub last_insert_id: u64,
    pub connection_id: u64,
    pub user_vars: &'a std::collections::HashMap<String, Value>,
    /// The would-be-inserted row, for VALUES(col).
    pub insert_row: Option<&'a [Value]>,
    /// Strict mode inside INSERT/UPDATE: division by zero is an error.
    pub strict_dml: bool,
    /// The enclosing queries' current row, for `Expr::OuterCol`.
    pub outer: &'a [Value],
    /// Runs correlated subqueries; `None` where none can run.
    pub sub: Option<&'a mut SubRunner<'a>>,
}

impl Expr {
    pub fn eval(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Col(i) => row.get(*i).cloned().ok_or_else(|| SqlError::internal("column out of row"))?,
            Expr::Neg(e) => match e.eval(row, cx)? {
                Value::Null => Value::Null,
                Value::Int(i) => match i.checked_neg() {
                    Some(v) => Value::Int(v),
                    None => return Err(SqlError::value_out_of_range("BIGINT", &format!("-{i}"))),
                },
                Value::UInt(u) => {
                    if u <= i64::MAX as u64 + 1 {
                        Value::Int((u as i128).wrapping_neg() as i64)
                    } else {
                        return Err(SqlError::value_out_of_range("BIGINT", &format!("-{u}")));
                    }
                }
                Value::Decimal(d) => Value::Decimal(-d),
                Value::Double(d) => Value::Double(-d),
                v => Value::Double(-v.to_f64().unwrap_or(0.0)),
            },
            Expr::Not(e) => match e.eval(row, cx)?.truth() {
                None => Value::Null,
                Some(b) => Value::Int(!b as i64),
            },
            Expr::BitNot(e) => match e.eval(row, cx)? {
                Value::Null => Value::Null,
                v => Value::UInt(!to_u64_bits(&v)),
            },
            Expr::Arith(op, a, b) => {
                let a = a.eval(row, cx)?;
                let b = b.eval(row, cx)?;
                arith(*op, a, b, cx)?
            }
            Expr::Bit(op, a, b) => {
                let (a, b) = (a.eval(row, cx)?, b.eval(row, cx)?);
                if a.is_null() || b.is_null() {
                    return Ok(Value::Null);
                }
                let (x, y) = (to_u64_bits(&a), to_u64_bits(&b));
                Value::UInt(match op {
                    BitOp::And => x & y,
                    BitOp::Or => x | y,
                    BitOp::Xor => x ^ y,
                    BitOp::Shl => x.checked_shl(y.min(64) as u32).unwrap_or(0),
                    BitOp::Shr => x.checked_shr(y.min(64) as u32).unwrap_or(0),
                })
            }
            Expr::Cmp(op, kind, ae, be) => {
                let (ae, be) = (&**ae, &**be);
                let (a, b) = (ae.eval(row, cx)?, be.eval(row, cx)?);
                if *kind == CmpKind::Numeric {
                    // MariaDB reads the right operand only when the left
                    // is not NULL: a NULL row never converts the other side.
                    numeric_operand(&a, &b, (ae, be), cx)?;
                    if !a.is_null() {
                        numeric_operand(&b, &a, (be, ae), cx)?;
                    }
                }
                // A string that is no date compares as the zero date (with
                // a warning), as MySQL converts it.
                let (mut a, mut b) = (a, b);
                if let CmpKind::Temporal(k) = kind {
                    let zero = Value::Temporal(Temporal { kind: *k, ..Temporal::date(0, 0, 0) });
                    let before = cx.warnings.len();
                    if !temporal_operand(&a, *k, cx)? {
                        a = zero.clone();
                    }
                    once_if_constant(cx, before, ae);
                    let before = cx.warnings.len();
                    if !temporal_operand(&b, *k, cx)? {
                        b = zero;
                    }
                    once_if_constant(cx, before, be);
                }
                if *op == CmpOp::NullSafeEq {
                    return Ok(Value::Int(match (a.is_null(), b.is_null()) {
                        (true, true) => 1,
                        (true, false) | (false, true) => 0,
                        _ => (compare(&a, &b, *kind) == Some(Ordering::Equal)) as i64,
                    }));
                }
                match compare(&a, &b, *kind) {
                    None => Value::Null,
                    Some(o) => Value::Int(match op {
                        CmpOp::Eq => o == Ordering::Equal,
                        CmpOp::Ne => o != Ordering::Equal,
                        CmpOp::Lt => o == Ordering::Less,
                        CmpOp::Le => o != Ordering::Greater,
                        CmpOp::Gt => o == Ordering::Greater,
                        CmpOp::Ge => o != Ordering::Less,
                        CmpOp::NullSafeEq => unreachable!("handled above"),
                    } as i64),
                }
            }
            Expr::And(a, b) => {
                let x = a.eval(row, cx)?.truth();
                if x == Some(false) {
                    return Ok(Value::Int(0));
                }
                let y = b.eval(row, cx)?.truth();
                match (x, y) {
                    (_, Some(false)) => Value::Int(0),
                    (Some(true), Some(true)) => Value::Int(1),
                    _ => Value::Null,
                }
            }
            Expr::Or(a, b) => {
                let x = a.eval(row, cx)?.truth();
                if x == Some(true) {
                    return Ok(Value::Int(1));
                }
                let y = b.eval(row, cx)?.truth();
                match (x, y) {
                    (_, Some(true)) => Value::Int(1),
                    (Some(false), Some(false)) => Value::Int(0),
                    _ => Value::Null,
                }
            }
            Expr::Xor(a, b) => match (a.eval(row, cx)?.truth(), b.eval(row, cx)?.truth()) {
                (Some(x), Some(y)) => Value::Int((x ^ y) as i64),
                _ => Value::Null,
            },
            Expr::IsNull(e, neg) => Value::Int((e.eval(row, cx)?.is_null() != *neg) as i64),
            Expr::IsBool(e, want, neg) => {
                let t = e.eval(row, cx)?.truth();
                Value::Int(((t == Some(*want)) != *neg) as i64)
            }
            Expr::In(e, kind, list, neg, set) => {
                let v = e.eval(row, cx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                // No item is NULL (`InSet::of`), so no match is false.
                if let (Some(set), Value::Str(b)) = (set, &v) {
                    return Ok(Value::Int((set.contains(b) != *neg) as i64));
                }
                let mut saw_null = false;
                let _ = kind;
                for (item, k) in list {
                    let mut x = item.eval(row, cx)?;
                    if *k == CmpKind::Numeric {
                        numeric_operand(&v, &x, (&**e, item), cx)?;
                        numeric_operand(&x, &v, (item, &**e), cx)?;
                    }
                    // As in a comparison: an item that is no date is the zero date.
                    if let CmpKind::Temporal(tk) = k {
                        let before = cx.warnings.len();
                        if !temporal_operand(&x, *tk, cx)? {
                            x = Value::Temporal(Temporal { kind: *tk, ..Temporal::date(0, 0, 0) });
                        }
                        once_if_constant(cx, before, item);
                    }
                    let v = if let CmpKind::Temporal(tk) = k {
                        if temporal_operand(&v, *tk, cx)? {
                            v.clone()
                        } else {
                            Value::Temporal(Temporal { kind: *tk, ..Temporal::date(0, 0, 0) })
                        }
                    } else {
                        v.clone()
                    };
                    match compare(&v, &x, *k) {
                        Some(Ordering::Equal) => return Ok(Value::Int(!*neg as i64)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Int(*neg as i64)
                }
            }
            Expr::Between(e, kind, lo, hi, neg) => {
                let v = e.eval(row, cx)?;
                let (l, h) = (lo.eval(row, cx)?, hi.eval(row, cx)?);
                if *kind == CmpKind::Numeric {
                    numeric_operand(&v, &l, (&**e, &**lo), cx)?;
                    numeric_operand(&l, &v, (&**lo, &**e), cx)?;
                    numeric_operand(&h, &v, (&**hi, &**e), cx)?;
                }
                // As in a comparison: a string that is no date is the zero
                // date, with a warning (once for a constant).
                let (mut v, mut l, mut h) = (v, l, h);
                if let CmpKind::Temporal(k) = kind {
                    for (x, ex) in [(&mut v, &**e), (&mut l, &**lo), (&mut h, &**hi)] {
                        let before = cx.warnings.len();
                        if !temporal_operand(x, *k, cx)? {
                            *x = Value::Temporal(Temporal { kind: *k, ..Temporal::date(0, 0, 0) });
                        }
                        once_if_constant(cx, before, ex);
                    }
                }
                let ge = compare(&v, &l, *kind).map(|o| o != Ordering::Less);
                let le = compare(&v, &h, *kind).map(|o| o != Ordering::Greater);
                let r = match (ge, le) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                match r {
                    None => Value::Null,
                    Some(b) => Value::Int((b != *neg) as i64),
                }
            }
            Expr::Like { expr, pattern, escape, coll, negated } => {
                let (s, p) = (expr.eval(row, cx)?, pattern.eval(row, cx)?);
                match (s.to_bytes(), p.to_bytes()) {
                    (Some(s), Some(p)) => {
                        Value::Int((collation::like(*coll, &s, &p, *escape) != *negated) as i64)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Case { operand, whens, otherwise } => {
                let base = match operand {
                    Some((e, k)) => Some((e.eval(row, cx)?, *k)),
                    None => None,
                };
                for (cond, res) in whens {
                    let c = cond.eval(row, cx)?;
                    let hit = match &base {
                        Some((b, k)) => compare(b, &c, *k) == Some(Ordering::Equal),
                        None => c.truth() == Some(true),
                    };
                    if hit {
                        return res.eval(row, cx);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, cx)?,
                    None => Value::Null,
                }
            }
            Expr::Func(name, args, colls) => {
                let mut vals = Vec::with_capacity(args.len());
                for (a, c) in args.iter().zip(colls) {
                    vals.push(crate::func::Arg { value: a.eval(row, cx)?, coll: *c });
                }
                let mut fcx = crate::func::FnCtx {
                    now_micros: cx.now_micros,
                    time_zone: cx.time_zone,
                    warnings: cx.warnings,
                    database: cx.database,
                    last_insert_id: cx.last_insert_id,
                    connection_id: cx.connection_id,
                };
                crate::func::call(name, vals, &mut fcx)?
            }
            Expr::UserVar(name) => cx.user_vars.get(name).cloned().unwrap_or(Value::Null),
            Expr::SysVar(v) => v.clone(),
            Expr::InsertValue(i) => match cx.insert_row {
                Some(r) => r.get(*i).cloned().unwrap_or(Value::Null),
                None => Value::Null,
            },
            Expr::Subquery(v) => (**v).clone(),
            Expr::OuterCol(i) => {
                cx.outer.get(*i).cloned().ok_or_else(|| SqlError::internal("outer column out of row"))?
            }
            Expr::Correlated(c) => eval_correlated(c, row, cx)?,
            Expr::Cast(e, c) => cast(e.eval(row, cx)?, *c, cx)?,
        })
    }

    /// True when the expression reads no column (a constant for the statement).
    pub fn is_constant(&self) -> bool {
        let mut c = true;
        self.walk(&mut |e| {
            if matches!(e, Expr::Col(_) | Expr::InsertValue(_) | Expr::Correlated(_)) {
                c = false;
            }
            if let Expr::Func(n, _, _) = e {
                if matches!(n.as_str(), "RAND" | "UUID" | "SLEEP") {
                    c = false;
                }
            }
        });
        c
    }

    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Neg(e) | Expr::Not(e) | Expr::BitNot(e) | Expr::IsNull(e, _) | Expr::IsBool(e, _, _) => {
                e.walk(f)
            }
            Expr::Cast(e, _) => e.walk(f),
            Expr::Arith(_, a, b)
            | Expr::Bit(_, a, b)
            | Expr::Cmp(_, _, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Xor(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::In(e, _, l, _, _) => {
                e.walk(f);
                l.iter().for_each(|x| x.0.walk(f));
            }
            Expr::Between(e, _, a, b, _) => {
                e.walk(f);
                a.walk(f);
                b.walk(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.walk(f);
                pattern.walk(f);
            }
            Expr::Case { operand, whens, otherwise } => {
                if let Some((e, _)) = operand {
                    e.walk(f);
                }
                for (a, b) in whens {
                    a.walk(f);
                    b.walk(f);
                }
                if let Some(e) = otherwise {
                    e.walk(f);
                }
            }
            Expr::Func(_, args, _) => args.iter().for_each(|x| x.walk(f)),
            Expr::Correlated(c) => {
                if let CorrKind::In(x, _) = &c.kind {
                    x.walk(f);
                }
            }
            _ => {}
        }
    }
}

/// A correlated subquery's value on `row`.
fn eval_correlated(c: &Correlated, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    let lhs = match &c.kind {
        CorrKind::In(x, _) => Some(x.eval(row, cx)?),
        _ => None,
    };
    let Some(run) = cx.sub.as_mut() else {
        return Err(SqlError::unsupported("a correlated subquery in this statement"));
    };
    let rows = match c.kind {
        CorrKind::Exists(_) if c.query.limit_clause.is_none() => {
            // One row answers EXISTS (LIMIT applies after any grouping).
            let mut q = (*c.query).clone();
            q.limit_clause = Some(ast::LimitClause::LimitOffset {
                limit: Some(ast::Expr::value(ast::Value::Number("1".into(), false))),
                offset: None,
                limit_by: Vec::new(),
            });
            run(&q, row)?
        }
        _ => run(&c.query, row)?,
    };
    Ok(match &c.kind {
        CorrKind::Exists(negated) => Value::Int((rows.is_empty() == *negated) as i64),
        CorrKind::Scalar => {
            if rows.len() > 1 {
                return Err(SqlError::subquery_rows());
            }
            match rows.into_iter().next() {
                None => Value::Null,
                Some(r) if r.len() == 1 => r.into_iter().next().expect("one"),
                Some(_) => return Err(SqlError::operand_columns(1)),
            }
        }
        CorrKind::In(_, negated) => {
            let lhs = lhs.expect("IN has its value");
            let lt = crate::bind::value_ty(&lhs);
            let mut items = Vec::with_capacity(rows.len());
            for r in rows {
                if r.len() != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                let v = r.into_iter().next().expect("one column");
                let k = cmp_kind(lt, crate::bind::value_ty(&v));
                items.push((Expr::Const(v), k));
            }
            Expr::In(Box::new(Expr::Const(lhs)), CmpKind::Numeric, items, *negated, None).eval(&[], cx)?
        }
    })
}

/// A string compared as a number must be wholly one: otherwise warning
/// 1292 ("Truncated incorrect DECIMAL value" against an exact number,
/// DOUBLE against a double, as MariaDB words it), which strict mode makes
/// an error where the DML statement asked for it (`EvalCtx::strict_dml`:
/// INSERT, and UPDATE's WHERE) unless both operands are constants (MariaDB
/// folds those with a warning). `exprs`: the expressions giving `v` and
/// its partner; a constant `v` warns once per statement (MariaDB converts
/// it once), a row's value once per row.
fn numeric_operand(v: &Value, partner: &Value, exprs: (&Expr, &Expr), cx: &mut EvalCtx) -> SqlResult<()> {
    if let Value::Str(s) = v {
        if !crate::value::is_whole_number(s) {
            let word = match partner {
                Value::Double(_) => "DOUBLE",
                _ => "DECIMAL",
            };
            let e = SqlError::truncated_wrong_value(word, &String::from_utf8_lossy(s));
            let constant = exprs.0.is_constant();
            if cx.strict_dml && !(constant && exprs.1.is_constant()) {
                return Err(e);
            }
            let w = Warning::from_error(&e);
            if !(constant && cx.warnings.iter().any(|x| x.code == w.code && x.message == w.message)) {
                cx.warnings.push(w);
            }
        }
    }
    Ok(())
}

/// A value compared as a date or time must convert to one: otherwise
/// warning 1292 ("Truncated incorrect datetime value"; an error in strict
/// UPDATE and INSERT) and the comparison is NULL. Returns whether it did.
fn temporal_operand(v: &Value, k: TemporalKind, cx: &mut EvalCtx) -> SqlResult<bool> {
    if v.is_null() || matches!(v, Value::Temporal(_)) || to_temporal(v, k).is_some() {
        return Ok(true);
    }
    let kind = match k {
        TemporalKind::Date => "date",
        TemporalKind::Time => "time",
        TemporalKind::DateTime => "datetime",
    };
    let e = SqlError::truncated_wrong_value(kind, &v.render());
    if cx.strict_dml {
        return Err(e);
    }
    cx.warnings.push(Warning::from_error(&e));
    Ok(false)
}

/// A constant operand's conversion warning counts once per statement
/// (MariaDB converts a constant once): drops the warning just pushed
/// (from `before` on) when an equal one is already there.
fn once_if_constant(cx: &mut EvalCtx, before: usize, e: &Expr) {
    if cx.warnings.len() == before + 1 && e.is_constant() {
        let w = &cx.warnings[before];
        if cx.warnings[..before].iter().any(|x| x.code == w.code && x.message == w.message) {
            cx.warnings.pop();
        }
    }
}

fn to_u64_bits(v: &Value) -> u64 {
    match v {
        Value::UInt(u) => *u,
        Value::Int(i) => *i as u64,
        other => {
            let d = other.to_f64().unwrap_or(0.0);
            if d < 0.0 {
                other.to_i64().unwrap_or(0) as u64
            } else if d >= 1.8446744073709552e19 {
                u64::MAX
            } else {
                d.round() as u64
            }
        }
    }
}

/// Compares two values the way `kind` says; `None` when either is NULL.
pub fn compare(a: &Value, b: &Value, kind: CmpKind) -> Option<Ordering> {
    if a.is_null() || b.is_null() {
        return None;
    }
    match kind {
        CmpKind::Numeric => compare_numeric(a, b),
        CmpKind::Str(coll) => {
            let (x, y) = (a.to_bytes()?, b.to_bytes()?);
            Some(collation::compare(coll, &x, &y))
        }
        CmpKind::Temporal(k) => match (to_temporal(a, k), to_temporal(b, k)) {
            (Some(x), Some(y)) => Some(x.ordinal().cmp(&y.ordinal())),
            // A string that is no date compares as a string, as MySQL
            // falls back when the conversion fails.
            _ => Some(collation::compare(Collation::Binary, &a.to_bytes()?, &b.to_bytes()?)),
        },
    }
}

/// Reads a value as a temporal of `kind` (strings parsed, numbers as
/// YYYYMMDD[hhmmss]); dates widen to datetimes at midnight.
pub fn to_temporal(v: &Value, kind: TemporalKind) -> Option<Temporal> {
    let mut t = match v {
        Value::Temporal(t) => *t,
        Value::Str(s) => crate::temporal::parse(s, kind).or_else(|| loose_date(s, kind))?,
        Value::Null => return None,
        other => crate::temporal::parse(other.render().as_bytes(), kind)?,
    };
    if kind == TemporalKind::DateTime && t.kind == TemporalKind::Date {
        t.kind = TemporalKind::DateTime;
    }
    if kind == TemporalKind::Date && t.kind == TemporalKind::DateTime {
        t = Temporal::date(t.year, t.month, t.day);
    }
    Some(t)
}

/// A date written in the usual shape whose day does not exist in its
/// month ('2023-02-30'): MySQL compares it by its fields, as a date that
/// sorts between its neighbours, rather than as no date at all.
fn loose_date(s: &[u8], kind: TemporalKind) -> Option<Temporal> {
    if kind == TemporalKind::Time {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?.trim();
    let groups: Vec<&str> = text.split(|c: char| !c.is_ascii_digit()).collect();
    if groups.len() != 3 || groups[0].len() != 4 || groups.iter().any(|g| g.is_empty() || g.len() > 4) {
        return None;
    }
    let n: Vec<u32> = groups.iter().map(|g| g.parse().ok()).collect::<Option<_>>()?;
    if n[1] > 12 || n[2] > 31 {
        return None;
    }
    let mut t = Temporal::date(n[0] as u16, n[1] as u8, n[2] as u8);
    if kind == TemporalKind::DateTime {
        t.kind = TemporalKind::DateTime;
    }
    Some(t)
}

/// MySQL's arithmetic: exact on integers (an overflow is error 1690),
/// decimals where either side is decimal, doubles where either is a
/// double or a string.
pub fn arith(op: Arith, a: Value, b: Value, cx: &mut EvalCtx) -> SqlResult<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let is_float = |v: &Value| matches!(v, Value::Double(_) | Value::Str(_));
    let is_dec = |v: &Value| matches!(v, Value::Decimal(_) | Value::Temporal(_));
    let opname = match op {
        Arith::Add => "+",
        Arith::Sub => "-",
        Arith::Mul => "*",
        Arith::Div => "/",
        Arith::IntDiv => "DIV",
        Arith::Mod => "%",
    };
    let range_err =
        |ty: &str| SqlError::value_out_of_range(ty, &format!("{} {opname} {}", a.render(), b.render()));
    let div_zero = |cx: &mut EvalCtx| -> SqlResult<Value> {
        if cx.strict_dml {
            return Err(SqlError::division_by_zero());
        }
        cx.warnings.push(Warning::warn(1365, "Division by 0"));
        Ok(Value::Null)
    };
    if op == Arith::IntDiv {
        // Integer division of the operands as decimals, truncated.
        let (x, y) = (a.to_decimal().unwrap_or_default(), b.to_decimal().unwrap_or_default());
        if y.sign() == bigdecimal::num_bigint::Sign::NoSign {
            return div_zero(cx);
        }
        let q = (x / y).with_scale_round(0, bigdecimal::RoundingMode::Down);
        let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
        return match q.to_string().parse::<i128>() {
            Ok(v) if unsigned && v >= 0 && v <= u64::MAX as i128 => Ok(Value::UInt(v as u64)),
            Ok(v) if !unsigned && v >= i64::MIN as i128 && v <= i64::MAX as i128 => Ok(Value::Int(v as i64)),
            _ => Err(range_err(if unsigned { "BIGINT UNSIGNED" } else { "BIGINT" })),
        };
    }
    if is_float(&a) || is_float(&b) {
        let (x, y) = (a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(0.0));
        let r = match op {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div | Arith::Mod if y == 0.0 => return div_zero(cx),
            Arith::Div => x / y,
            Arith::Mod => x % y,
            Arith::IntDiv => unreachable!("handled above"),
        };
        if !r.is_finite() {
            return Err(range_err("DOUBLE"));
        }
        return Ok(Value::Double(r));
    }
    if is_dec(&a) || is_dec(&b) || op == Arith::Div {
        let (x, y) = (a.to_decimal().unwrap_or_default(), b.to_decimal().unwrap_or_default());
        let zero = BigDecimal::from(0);
        // MySQL's result scale: the larger of the two for + and -, their
        // sum for * (bigdecimal may drop trailing zeros, MySQL keeps them).
        let (sx, sy) = (x.fractional_digit_count().max(0), y.fractional_digit_count().max(0));
        let r = match op {
            Arith::Add => (x + y).with_scale(sx.max(sy)),
            Arith::Sub => (x - y).with_scale(sx.max(sy)),
            Arith::Mul => (x * y).with_scale((sx + sy).min(30)),
            Arith::Div | Arith::Mod if y == zero => return div_zero(cx),
            Arith::Div => {
                // MySQL: the quotient's scale is the dividend's plus
                // div_precision_increment (4).
                let scale = x.fractional_digit_count().max(0) + 4;
                (x / y).with_scale_round(scale, bigdecimal::RoundingMode::HalfUp)
            }
            Arith::Mod => {
                let q = (&x / &y).with_scale_round(0, bigdecimal::RoundingMode::Down);
                x - q * y
            }
            Arith::IntDiv => unreachable!("handled above"),
        };
        return Ok(Value::Decimal(r));
    }
    // Both integers.
    let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
    let (x, y) = (int128(&a), int128(&b));
    let r = match op {
        Arith::Add => x + y,
        Arith::Sub => x - y,
        Arith::Mul => x.checked_mul(y).ok_or_else(|| range_err("BIGINT"))?,
        Arith::Mod => {
            if y == 0 {
                return div_zero(cx);
            }
            x % y
        }
        Arith::Div | Arith::IntDiv => unreachable!("handled above"),
    };
    if unsigned {
        if r < 0 || r > u64::MAX as i128 {
            return Err(range_err("BIGINT UNSIGNED"));
        }
        Ok(Value::UInt(r as u64))
    } else {
        if r < i64::MIN as i128 || r > i64::MAX as i128 {
            return Err(range_err("BIGINT"));
        }
        Ok(Value::Int(r as i64))
    }
}

fn int128(v: &Value) -> i128 {
    match v {
        Value::Int(i) => *i as i128,
        Value::UInt(u) => *u as i128,
        other => other.to_i64().unwrap_or(0) as i128,
    }
}

/// CAST(v AS target).
pub fn cast(v: Value, c: Cast, cx: &mut EvalCtx) -> SqlResult<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let _ = cx;
    Ok(match c {
        Cast::Signed => match v {
            Value::UInt(u) => Value::Int(u as i64),
            v => Value::Int(v.to_i64().unwrap_or(0)),
        },
        Cast::Unsigned => match v {
            Value::Int(i) => Value::UInt(i as u64),
            Value::UInt(u) => Value::UInt(u),
            v => Value::UInt(to_u64_bits(&v)),
        },
        Cast::Decimal(p, s) => {
            let d = v
                .to_decimal()
                .unwrap_or_default()
                .with_scale_round(s as i64, bigdecimal::RoundingMode::HalfUp);
            let max = BigDecimal::from(10u64).powi(p as i64 - s as i64);
            if d.abs() >= max {
                let nines = format!(
                    "{}{}{}",
                    "9".repeat((p - s) as usize),
                    if s > 0 { "." } else { "" },
                    "9".repeat(s as usize)
                );
                let m: BigDecimal = nines.parse().unwrap_or_default();
                Value::Decimal(if d.sign() == bigdecimal::num_bigint::Sign::Minus { -m } else { m })
            } else {
                Value::Decimal(d)
            }
        }
        Cast::Double => Value::Double(v.to_f64().unwrap_or(0.0)),
        Cast::Char(_) => Value::Str(v.to_bytes().unwrap_or_default()),
        Cast::Date => to_temporal(&v, TemporalKind::Date).map(Value::Temporal).unwrap_or(Value::Null),
        Cast::DateTime(fsp) => to_temporal(&v, TemporalKind::DateTime)
            .map(|mut t| {
                t.kind = TemporalKind::DateTime;
                t.fsp = fsp;
                Value::Temporal(t)
            })
            .unwrap_or(Value::Null),
        Cast::Time(fsp) => to_temporal(&v, TemporalKind::Time)
            .map(|mut t| {
                if t.kind != TemporalKind::Time {
                    t = Temporal { kind: TemporalKind::Time, year: 0, month: 0, day: 0, ..t };
                }
                t.fsp = fsp;
                Value::Temporal(t)
            })
            .unwrap_or(Value::Null),
    })
}

/// Names the binder needs to turn into positions.
#[derive(Clone, Debug)]
pub struct ScopeCol {
    /// The table's alias (or name) the column is reached by.
    pub table: String,
    pub name: String,
    pub db: String,
    pub org_table: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// An unqualified name does not reach it: the second copy of a
    /// USING/NATURAL join's common column (`t.col` still does).
    pub hidden: bool,
    /// A table column's key and default flags ([`ColumnMeta::flags`]);
    /// 0 for anything else.
    pub flags: u16,
    /// A table column's DEFAULT (what `DEFAULT(col)` reads); `None` for
    /// anything else.
    pub default: Option<crate::catalog::DefaultSpec>,
}

/// A table's columns as a scope, reached by `alias` (the table's name
/// when it has none).
pub fn table_scope(def: &crate::catalog::TableDef, alias: &str) -> Vec<ScopeCol> {
    def.columns
        .iter()
        .enumerate()
        .map(|(i, c)| ScopeCol {
            table: alias.to_string(),
            name: c.name.clone(),
            db: def.db.clone(),
            org_table: def.name.clone(),
            ty: c.ty.clone(),
            nullable: c.nullable,
            hidden: false,
            flags: def.column_flags(i),
            default: Some(c.default.clone()),
        })
        .collect()
}

/// Helpers on sqlparser's AST shared by the statement modules.
pub fn ident_name(o: &ast::ObjectName) -> Vec<String> {
    o.0.iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            ast::ObjectNamePart::Function(f) => f.name.value.clone(),
        })
        .collect()
}
