//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`.
//!
//! Binding: a window function is kept as an aggregate slot of the query
//! (an `AggSpec` whose `window` is set), so it has a column position in
//! the post-aggregation row like any aggregate, and may appear wherever
//! aggregates may (the select list and ORDER BY). Its arguments, PARTITION
//! BY and ORDER BY are bound over the post-aggregation row, so
//! `SUM(SUM(x)) OVER ()` and `RANK() OVER (ORDER BY COUNT(*))` work.
//!
//! Evaluation ([`apply`]) runs after GROUP BY and HAVING, before DISTINCT,
//! the query's ORDER BY and LIMIT: per window function, the rows are
//! ordered by (partition, window order) through the external sort
//! (`sort.rs`, which may spill) and each partition is walked once.
//! Frames: ROWS with constant offsets, RANGE with CURRENT ROW / UNBOUNDED
//! bounds and numeric offsets on a single numeric ORDER BY key; the
//! default frame is MySQL's (the whole partition without ORDER BY, else
//! RANGE UNBOUNDED PRECEDING to CURRENT ROW, peers included). Aggregates
//! whose frame starts at the partition's start accumulate as the frame's
//! end moves; other frames are recomputed per row.

use std::cmp::Ordering;

use sqlparser::ast;

use crate::bind::{AggSpec, Binder};
use crate::error::{SqlError, SqlResult};
use crate::expr::{AggFn, CmpKind, EvalCtx, Expr, Ty};
use crate::query::{cmp_sort_keys, group_key, sort_kind, AggState};
use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinKind {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Agg(AggFn),
}

/// A frame bound; the offset is a constant expression when bound, its
/// value once evaluated.
#[derive(Clone, Debug)]
enum Bound<T> {
    UnboundedPreceding,
    Preceding(T),
    CurrentRow,
    Following(T),
    UnboundedFollowing,
}

#[derive(Clone, Debug)]
struct Frame<T> {
    rows: bool,
    start: Bound<T>,
    end: Bound<T>,
}

impl Bound<Expr> {
    fn eval(&self, cx: &mut EvalCtx) -> SqlResult<Bound<Value>> {
        let off = |e: &Expr, cx: &mut EvalCtx| -> SqlResult<Value> {
            let v = e.eval(&[], cx)?;
            if v.is_null() || v.to_f64().is_none_or(|f| f < 0.0) {
                return Err(SqlError::new(4011, "HY000", "Frame bound must be a non-negative number"));
            }
            Ok(v)
        };
        Ok(match self {
            Bound::UnboundedPreceding => Bound::UnboundedPreceding,
            Bound::Preceding(e) => Bound::Preceding(off(e, cx)?),
            Bound::CurrentRow => Bound::CurrentRow,
            Bound::Following(e) => Bound::Following(off(e, cx)?),
            Bound::UnboundedFollowing => Bound::UnboundedFollowing,
        })
    }
}

/// A bound window function.
#[derive(Clone, Debug)]
pub struct WinDef {
    kind: WinKind,
    args: Vec<Expr>,
    partition: Vec<(Expr, Ty)>,
    order: Vec<(Expr, Ty, bool)>,
    frame: Option<Frame<Expr>>,
}

fn err_place() -> SqlError {
    SqlError::new(4015, "HY000", "Window function is allowed only in SELECT list and ORDER BY clause")
}

fn not_defined(n: &ast::Ident) -> SqlError {
    SqlError::new(4009, "HY000", format!("Window specification with name '{}' is not defined", n.value))
}

/// The specification of window `n` of `defs` (the query's WINDOW clause;
/// names compare case-insensitively, as MariaDB's), its references resolved.
fn named(defs: &[ast::NamedWindowDefinition], n: &ast::Ident) -> SqlResult<ast::WindowSpec> {
    let i =
        defs.iter().position(|d| d.0.value.eq_ignore_ascii_case(&n.value)).ok_or_else(|| not_defined(n))?;
    match &defs[i].1 {
        // A definition may refer only to the ones before it (MariaDB's
        // 4009 otherwise), so resolution always ends.
        ast::NamedWindowExpr::WindowSpec(s) => resolve(&defs[..i], s),
        ast::NamedWindowExpr::NamedWindow(other) => Err(SqlError::syntax(format!("'{other}'"))),
    }
}

/// `(w PARTITION BY ... ORDER BY ... frame)`: w's partitioning and order
/// with this one's additions. As in MySQL the reference gives the
/// partitioning (this one may not add any), may give the order only when
/// this one has none, and may not have a frame.
fn resolve(defs: &[ast::NamedWindowDefinition], spec: &ast::WindowSpec) -> SqlResult<ast::WindowSpec> {
    let Some(n) = &spec.window_name else {
        return Ok(spec.clone());
    };
    let base = named(defs, n)?;
    let refusal = |code: u16, what: &str| SqlError::new(code, "HY000", what.replace("{}", &n.value));
    if !spec.partition_by.is_empty() {
        return Err(refusal(
            4011,
            "Window specification referencing another one '{}' cannot contain partition list",
        ));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(refusal(4012, "Referenced window specification '{}' already contains order list"));
    }
    if base.window_frame.is_some() {
        return Err(refusal(4013, "Referenced window specification '{}' cannot contain window frame"));
    }
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: base.partition_by,
        order_by: if spec.order_by.is_empty() { base.order_by } else { spec.order_by.clone() },
        window_frame: spec.window_frame.clone(),
    })
}

/// Checks a query's WINDOW clause as MariaDB does whether or not a window
/// function uses it: no name twice (4010), every reference to an earlier
/// definition and allowed (4009, 4011-4013).
pub fn check_named(defs: &[ast::NamedWindowDefinition]) -> SqlResult<()> {
    for (i, d) in defs.iter().enumerate() {
        if defs[..i].iter().any(|e| e.0.value.eq_ignore_ascii_case(&d.0.value)) {
            return Err(SqlError::new(
                4010,
                "HY000",
                format!("Multiple window specifications with the same name '{}'", d.0.value),
            ));
        }
        named(&defs[..=i], &d.0)?;
    }
    Ok(())
}

/// Binds `name(args) OVER (...)`, registering it as an aggregate slot.
pub fn bind(
    b: &mut Binder,
    name: &str,
    f: &ast::Function,
    list: &[ast::FunctionArg],
) -> SqlResult<(Expr, Ty)> {
    if b.aggs.is_none() {
        return Err(err_place());
    }
    let spec = match f.over.as_ref().expect("a window function has OVER") {
        // `OVER w`: w's specification as it is, frame included.
        ast::WindowType::NamedWindow(n) => named(b.windows, n)?,
        ast::WindowType::WindowSpec(s) => resolve(b.windows, s)?,
    };
    let spec = &spec;
    let star =
        list.len() == 1 && matches!(list[0], ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard));
    if let ast::FunctionArguments::List(l) = &f.args {
        if matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
            return Err(SqlError::unsupported("DISTINCT in a window function"));
        }
    }
    let kind = match name {
        "ROW_NUMBER" => WinKind::RowNumber,
        "RANK" => WinKind::Rank,
        "DENSE_RANK" => WinKind::DenseRank,
        "PERCENT_RANK" => WinKind::PercentRank,
        "CUME_DIST" => WinKind::CumeDist,
        "NTILE" => WinKind::Ntile,
        "LAG" => WinKind::Lag,
        "LEAD" => WinKind::Lead,
        "FIRST_VALUE" => WinKind::FirstValue,
        "LAST_VALUE" => WinKind::LastValue,
        "NTH_VALUE" => WinKind::NthValue,
        "COUNT" if star => WinKind::Agg(AggFn::CountStar),
        "COUNT" => WinKind::Agg(AggFn::Count),
        "SUM" => WinKind::Agg(AggFn::Sum),
        "AVG" => WinKind::Agg(AggFn::Avg),
        "MIN" => WinKind::Agg(AggFn::Min),
        "MAX" => WinKind::Agg(AggFn::Max),
        "BIT_AND" => WinKind::Agg(AggFn::BitAnd),
        "BIT_OR" => WinKind::Agg(AggFn::BitOr),
        "BIT_XOR" => WinKind::Agg(AggFn::BitXor),
        _ => return Err(SqlError::unsupported(format!("{name} as a window function"))),
    };
    let mut args = Vec::new();
    let mut tys = Vec::new();
    if !star {
        for a in list {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::syntax("'*'"));
            };
            let (x, t) = b.bind(e)?;
            args.push(x);
            tys.push(t);
        }
    }
    let (min, max) = match kind {
        WinKind::RowNumber
        | WinKind::Rank
        | WinKind::DenseRank
        | WinKind::PercentRank
        | WinKind::CumeDist => (0, 0),
        WinKind::Agg(AggFn::CountStar) => (0, 0),
        WinKind::Ntile | WinKind::FirstValue | WinKind::LastValue | WinKind::Agg(_) => (1, 1),
        WinKind::Lag | WinKind::Lead => (1, 3),
        WinKind::NthValue => (2, 2),
    };
    if args.len() < min || args.len() > max {
        return Err(SqlError::wrong_arg_count(name));
    }
    let mut partition = Vec::new();
    for e in &spec.partition_by {
        partition.push(b.bind(e)?);
    }
    let mut order = Vec::new();
    for o in &spec.order_by {
        let (e, t) = b.bind(&o.expr)?;
        order.push((e, t, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
    }
    let frame = match &spec.window_frame {
        None => None,
        Some(fr) => {
            let rows = match fr.units {
                ast::WindowFrameUnits::Rows => true,
                ast::WindowFrameUnits::Range => false,
                ast::WindowFrameUnits::Groups => return Err(SqlError::unsupported("GROUPS frames")),
            };
            let start = bound(b, &fr.start_bound)?;
            let end = match &fr.end_bound {
                Some(e) => bound(b, e)?,
                None => Bound::CurrentRow,
            };
            if matches!(start, Bound::UnboundedFollowing) || matches!(end, Bound::UnboundedPreceding) {
                return Err(SqlError::new(
                    4009,
                    "HY000",
                    "Unacceptable combination of window frame bound specifications",
                ));
            }
            if !rows
                && (matches!(start, Bound::Preceding(_) | Bound::Following(_))
                    || matches!(end, Bound::Preceding(_) | Bound::Following(_)))
            {
                if order.len() != 1 {
                    return Err(SqlError::new(
                        4019,
                        "HY000",
                        "RANGE-type frame requires ORDER BY clause with single sort key",
                    ));
                }
                if !matches!(order[0].1, Ty::Int | Ty::UInt | Ty::Decimal(_) | Ty::Double) {
                    return Err(SqlError::new(
                        4020,
                        "HY000",
                        "Numeric datatype is required for RANGE-type frame",
                    ));
                }
            }
            Some(Frame { rows, start, end })
        }
    };
    let arg_ty = tys.first().copied().unwrap_or(Ty::Int);
    let ty = match kind {
        WinKind::RowNumber | WinKind::Rank | WinKind::DenseRank | WinKind::Ntile => Ty::Int,
        WinKind::PercentRank | WinKind::CumeDist => Ty::Decimal(10),
        WinKind::Lag | WinKind::Lead => match tys.get(2) {
            Some(t) => crate::bind::merge_ty(arg_ty, *t),
            None => arg_ty,
        },
        WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue => arg_ty,
        WinKind::Agg(AggFn::CountStar | AggFn::Count) => Ty::Int,
        WinKind::Agg(AggFn::Sum) => match arg_ty {
            Ty::Int | Ty::UInt => Ty::Decimal(0),
            Ty::Decimal(s) => Ty::Decimal(s),
            _ => Ty::Double,
        },
        WinKind::Agg(AggFn::Avg) => match arg_ty {
            Ty::Int | Ty::UInt => Ty::Decimal(4),
            Ty::Decimal(s) => Ty::Decimal(s + 4),
            _ => Ty::Double,
        },
        WinKind::Agg(AggFn::BitAnd | AggFn::BitOr | AggFn::BitXor) => Ty::UInt,
        WinKind::Agg(_) => arg_ty,
    };
    let func = match kind {
        WinKind::Agg(f) => f,
        _ => AggFn::Count,
    };
    let base = b.agg_base;
    let aggs = b.aggs.as_deref_mut().ok_or_else(err_place)?;
    aggs.push(AggSpec {
        func,
        arg: None,
        arg_ty,
        distinct: false,
        sep: b",".to_vec(),
        window: Some(Box::new(WinDef { kind, args, partition, order, frame })),
    });
    Ok((Expr::Col(base + aggs.len() - 1), ty))
}

fn bound(b: &mut Binder, x: &ast::WindowFrameBound) -> SqlResult<Bound<Expr>> {
    let mut off = |e: &ast::Expr| -> SqlResult<Expr> {
        let (v, _) = b.bind(e)?;
        if !v.is_constant() {
            return Err(SqlError::new(4013, "HY000", "Frame bound must be a constant"));
        }
        Ok(v)
    };
    Ok(match x {
        ast::WindowFrameBound::CurrentRow => Bound::CurrentRow,
        ast::WindowFrameBound::Preceding(None) => Bound::UnboundedPreceding,
        ast::WindowFrameBound::Following(None) => Bound::UnboundedFollowing,
        ast::WindowFrameBound::Preceding(Some(e)) => Bound::Preceding(off(e)?),
        ast::WindowFrameBound::Following(Some(e)) => Bound::Following(off(e)?),
    })
}

/// Fills every window function's slot (`n + i` for aggregate slot i) of
/// every row.
pub(crate) fn apply(
    rows: &mut [Vec<Value>],
    aggs: &[AggSpec],
    n: usize,
    cx: &mut EvalCtx,
    cfg: &crate::sort::SortCfg,
) -> SqlResult<()> {
    for (i, spec) in aggs.iter().enumerate() {
        let Some(w) = &spec.window else { continue };
        let slot = n + i;
        let frame = match &w.frame {
            Some(f) => Some(Frame { rows: f.rows, start: f.start.eval(cx)?, end: f.end.eval(cx)? }),
            None => None,
        };
        // Each row's partition key and order values, sorted by the
        // external sort on (partition key, order key); the sort key's
        // partition part is escaped so no partition key is a prefix of
        // another's part, and each partition is one stretch of the output.
        let dirs: Vec<(CmpKind, bool)> = w.order.iter().map(|(_, t, d)| (sort_kind(*t), *d)).collect();
        let mut sorter = crate::sort::Sorter::new(cfg.clone(), None);
        for (ri, r) in rows.iter().enumerate() {
            let mut pk = Vec::new();
            for (e, t) in &w.partition {
                group_key(&e.eval(r, cx)?, *t, &mut pk);
            }
            let mut key = Vec::new();
            crate::collation::sort_key(crate::types::Collation::Binary, &pk, &mut key);
            let mut payload = Vec::with_capacity(w.order.len() + 2);
            for ((e, _, _), (kind, desc)) in w.order.iter().zip(&dirs) {
                let v = e.eval(r, cx)?;
                crate::sort::put_key(&v, *kind, *desc, &mut key);
                payload.push(v);
            }
            payload.push(Value::UInt(ri as u64));
            payload.push(Value::Str(pk));
            sorter.add(key, payload)?;
        }
        let mut sorted = sorter.finish()?;
        let mut part: Vec<(Vec<u8>, Vec<Value>, usize)> = Vec::new();
        loop {
            let next = sorted.next()?;
            let entry = match next {
                Some((_, mut payload)) => {
                    let (Some(Value::Str(pk)), Some(Value::UInt(ri))) = (payload.pop(), payload.pop()) else {
                        return Err(SqlError::internal("a window's sort lost its row"));
                    };
                    Some((pk, payload, ri as usize))
                }
                None => None,
            };
            // A partition ends where the partition key changes.
            if !part.is_empty() && entry.as_ref().is_none_or(|e| e.0 != part[0].0) {
                let vals = partition(rows, &part, spec, w, frame.as_ref(), &dirs, cx)?;
                for ((_, _, ri), v) in part.iter().zip(vals) {
                    rows[*ri][slot] = v;
                }
                part.clear();
            }
            match entry {
                Some(e) => part.push(e),
                None => break,
            }
        }
    }
    Ok(())
}

/// The function's value for each row of one partition (in window order).
fn partition(
    rows: &[Vec<Value>],
    part: &[(Vec<u8>, Vec<Value>, usize)],
    spec: &AggSpec,
    w: &WinDef,
    fr: Option<&Frame<Value>>,
    dirs: &[(CmpKind, bool)],
    cx: &mut EvalCtx,
) -> SqlResult<Vec<Value>> {
    let m = part.len();
    // Peer groups: rows equal on the window's ORDER BY.
    let mut peer_start = vec![0; m];
    let mut peer_end = vec![m; m];
    let mut g = 0;
    for j in 1..m {
        if cmp_sort_keys(&part[j].1, &part[j - 1].1, dirs) != Ordering::Equal {
            peer_end[g..j].fill(j);
            g = j;
        }
        peer_start[j] = g;
    }
    let arg =
        |k: usize, j: usize, cx: &mut EvalCtx| -> SqlResult<Value> { w.args[k].eval(&rows[part[j].2], cx) };
    let int_arg = |k: usize, j: usize, cx: &mut EvalCtx| -> SqlResult<Option<i64>> {
        let v = arg(k, j, cx)?;
        Ok(if v.is_null() { None } else { v.to_i64() })
    };
    let mut out = Vec::with_capacity(m);
    match w.kind {
        WinKind::RowNumber => out.extend((1..=m).map(|j| Value::Int(j as i64))),
        WinKind::Rank => out.extend((0..m).map(|j| Value::Int(peer_start[j] as i64 + 1))),
        WinKind::DenseRank => {
            let mut rank = 0;
            for (j, &ps) in peer_start.iter().enumerate() {
                if ps == j {
                    rank += 1;
                }
                out.push(Value::Int(rank));
            }
        }
        WinKind::PercentRank => out.extend(
            (0..m).map(|j| ten_places(if m > 1 { peer_start[j] as f64 / (m - 1) as f64 } else { 0.0 })),
        ),
        WinKind::CumeDist => out.extend((0..m).map(|j| ten_places(peer_end[j] as f64 / m as f64))),
        WinKind::Ntile => {
            for j in 0..m {
                let Some(buckets) = int_arg(0, j, cx)?.filter(|b| *b > 0) else {
                    return Err(SqlError::new(1210, "HY000", "Incorrect arguments to NTILE"));
                };
                let b = buckets as usize;
                let (size, extra) = (m / b, m % b);
                // The first `extra` buckets hold one row more.
                let big = extra * (size + 1);
                let t = if j < big { j / (size + 1) } else { extra + (j - big) / size.max(1) };
                out.push(Value::Int(t as i64 + 1));
            }
        }
        WinKind::Lag | WinKind::Lead => {
            for j in 0..m {
                let off = if w.args.len() > 1 { int_arg(1, j, cx)?.unwrap_or(0) } else { 1 };
                let target = if w.kind == WinKind::Lag { j as i64 - off } else { j as i64 + off };
                if target >= 0 && (target as usize) < m {
                    out.push(arg(0, target as usize, cx)?);
                } else if w.args.len() > 2 {
                    out.push(arg(2, j, cx)?);
                } else {
                    out.push(Value::Null);
                }
            }
        }
        WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue => {
            for j in 0..m {
                let (s, e) = frame(w, fr, part, j, &peer_start, &peer_end);
                let v = match w.kind {
                    WinKind::FirstValue if s < e => arg(0, s, cx)?,
                    WinKind::LastValue if s < e => arg(0, e - 1, cx)?,
                    WinKind::NthValue => match int_arg(1, j, cx)? {
                        Some(k) if k >= 1 && s + (k as usize) <= e => arg(0, s + k as usize - 1, cx)?,
                        Some(k) if k < 1 => {
                            return Err(SqlError::new(1210, "HY000", "Incorrect arguments to NTH_VALUE"))
                        }
                        _ => Value::Null,
                    },
                    _ => Value::Null,
                };
                out.push(v);
            }
        }
        WinKind::Agg(func) => {
            let agg = AggSpec {
                func,
                arg: None,
                arg_ty: spec.arg_ty,
                distinct: false,
                sep: spec.sep.clone(),
                window: None,
            };
            let input = |j: usize, cx: &mut EvalCtx| -> SqlResult<Option<Value>> {
                Ok(if func == AggFn::CountStar { None } else { Some(arg(0, j, cx)?) })
            };
            // Running: the frame starts at the partition's start and its
            // end only grows, so rows are added once.
            let mut state = AggState::new(&agg);
            let mut added = 0;
            let mut cached: Option<(usize, usize, Value)> = None;
            for j in 0..m {
                let (s, e) = frame(w, fr, part, j, &peer_start, &peer_end);
                if let Some((cs, ce, v)) = &cached {
                    if *cs == s && *ce == e {
                        out.push(v.clone());
                        continue;
                    }
                }
                let v = if s == 0 && e >= added {
                    while added < e {
                        let x = input(added, cx)?;
                        state.add(&agg, x)?;
                        added += 1;
                    }
                    state.clone().finish(&agg)
                } else {
                    let mut st = AggState::new(&agg);
                    for k in s..e {
                        let x = input(k, cx)?;
                        st.add(&agg, x)?;
                    }
                    st.finish(&agg)
                };
                cached = Some((s, e, v.clone()));
                out.push(v);
            }
        }
    }
    Ok(out)
}

/// PERCENT_RANK and CUME_DIST: MariaDB's results are doubles shown with
/// 10 decimals; we give the same digits as a DECIMAL(.., 10) (the
/// protocol type differs: NEWDECIMAL, not DOUBLE).
fn ten_places(x: f64) -> Value {
    let d = bigdecimal::BigDecimal::try_from(x).unwrap_or_default();
    Value::Decimal(d.with_scale_round(10, bigdecimal::RoundingMode::HalfUp))
}

/// Row `j`'s frame in its partition: the half-open range [s, e).
fn frame(
    w: &WinDef,
    fr: Option<&Frame<Value>>,
    part: &[(Vec<u8>, Vec<Value>, usize)],
    j: usize,
    peer_start: &[usize],
    peer_end: &[usize],
) -> (usize, usize) {
    let m = part.len();
    let Some(f) = fr else {
        return if w.order.is_empty() { (0, m) } else { (0, peer_end[j]) };
    };
    let count = |v: &Value| v.to_i64().unwrap_or(i64::MAX).max(0) as usize;
    let s = match &f.start {
        Bound::UnboundedPreceding => 0,
        Bound::CurrentRow if f.rows => j,
        Bound::CurrentRow => peer_start[j],
        Bound::Preceding(v) if f.rows => j.saturating_sub(count(v)),
        Bound::Following(v) if f.rows => j.saturating_add(count(v)).min(m),
        Bound::Preceding(v) => range_edge(w, part, j, v, true, true),
        Bound::Following(v) => range_edge(w, part, j, v, false, true),
        Bound::UnboundedFollowing => m,
    };
    let e = match &f.end {
        Bound::UnboundedFollowing => m,
        Bound::CurrentRow if f.rows => j + 1,
        Bound::CurrentRow => peer_end[j],
        Bound::Following(v) if f.rows => j.saturating_add(count(v)).saturating_add(1).min(m),
        Bound::Preceding(v) if f.rows => (j + 1).saturating_sub(count(v)),
        Bound::Preceding(v) => range_edge(w, part, j, v, true, false),
        Bound::Following(v) => range_edge(w, part, j, v, false, false),
        Bound::UnboundedPreceding => 0,
    };
    (s, e.max(s))
}

/// A RANGE frame edge at `offset` before (`preceding`) or after row j's
/// ORDER BY value: the first row at or past the edge when `start`, else
/// the first row past it. NULL order values are peers of each other only.
fn range_edge(
    w: &WinDef,
    part: &[(Vec<u8>, Vec<Value>, usize)],
    j: usize,
    offset: &Value,
    preceding: bool,
    start: bool,
) -> usize {
    let desc = w.order[0].2;
    let key = |k: usize| part[k].1[0].to_f64();
    let Some(x) = key(j) else {
        // A NULL key's range is its NULL peers.
        let first = part.iter().position(|p| p.1[0].is_null()).unwrap_or(j);
        let last = part.iter().rposition(|p| p.1[0].is_null()).map_or(j + 1, |p| p + 1);
        return if start { first } else { last };
    };
    let d = offset.to_f64().unwrap_or(0.0);
    // In window order, "preceding" values are smaller (ASC) or larger (DESC).
    let edge = if preceding != desc { x - d } else { x + d };
    // Position in window order of the first row whose value is past the
    // edge (start: not before it).
    part.partition_point(|p| match p.1[0].to_f64() {
        // NULLs sort first ascending, last descending.
        None => !desc,
        Some(v) => {
            let before = if desc { v > edge } else { v < edge };
            let at = v == edge;
            if start {
                before
            } else {
                before || at
            }
        }
    })
}
