//! Binding: sqlparser's expressions to [`Expr`]s over a row layout.

use std::str::FromStr;

use bigdecimal::BigDecimal;
use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::expr::{
    cmp_kind, AggFn, Arith, BitOp, Cast, CmpKind, CmpOp, CorrKind, Correlated, Expr, ScopeCol, Ty,
};
use crate::types::Collation;
use crate::value::{TemporalKind, Value};

/// One aggregate call of a grouped query.
#[derive(Clone, Debug)]
pub struct AggSpec {
    pub func: AggFn,
    /// The argument, bound over the input rows (None for COUNT(*)).
    pub arg: Option<Expr>,
    pub arg_ty: Ty,
    pub distinct: bool,
    /// GROUP_CONCAT's separator.
    pub sep: Vec<u8>,
    /// Set for a window function: this slot is filled by `window::apply`
    /// after grouping, not by the group's rows.
    pub window: Option<Box<crate::window::WinDef>>,
}

impl AggSpec {
    pub fn is_window(&self) -> bool {
        self.window.is_some()
    }
}

/// Binds expressions over `scope`.
pub struct Binder<'a> {
    pub scope: &'a [ScopeCol],
    /// The enclosing queries' columns (a correlated subquery's): a name not
    /// in `scope` binds to `Expr::OuterCol(i)`, read from the outer row.
    pub outer: &'a [ScopeCol],
    /// Where aggregates go; `None` where they are not allowed (WHERE).
    pub aggs: Option<&'a mut Vec<AggSpec>>,
    /// In a grouped query, post-aggregation rows are the group's first row
    /// followed by the aggregate results: aggregate i is `Col(agg_base + i)`.
    pub agg_base: usize,
    /// Reads `@@name`.
    pub sysvar: &'a dyn Fn(&str) -> SqlResult<Value>,
    /// Runs an uncorrelated subquery, returning its rows.
    pub subquery: &'a mut dyn FnMut(&ast::Query) -> SqlResult<Vec<Vec<Value>>>,
    /// SELECT-list aliases (ORDER BY / HAVING may name them).
    pub aliases: &'a [(String, Expr, Ty)],
    /// Column names that VALUES(col) may name: (name, position in the inserted row).
    pub insert_cols: &'a [(String, usize)],
    /// The place named in "Unknown column ... in '<place>'".
    pub place: &'static str,
    /// The query's WINDOW clause (named windows `OVER w` may name).
    pub windows: &'a [ast::NamedWindowDefinition],
    /// Columns only `DEFAULT(col)` reaches: an INSERT's table, whose
    /// columns VALUES may not read.
    pub defaults: &'a [ScopeCol],
    /// Binding WHERE's AND/OR tree (not inside another expression): where
    /// MariaDB's zero-date `IS NULL` special applies.
    pub where_top: bool,
}

pub fn default_coll() -> Collation {
    Collation::Utf8mb4GeneralCi
}

impl<'a> Binder<'a> {
    /// A binder for expressions over `scope` with no aggregates, aliases
    /// or VALUES(): WHERE clauses, SET assignments, CHECK constraints.
    pub fn plain(
        scope: &'a [ScopeCol],
        sysvar: &'a dyn Fn(&str) -> SqlResult<Value>,
        subquery: &'a mut dyn FnMut(&ast::Query) -> SqlResult<Vec<Vec<Value>>>,
        place: &'static str,
    ) -> Binder<'a> {
        Binder {
            scope,
            aggs: None,
            agg_base: 0,
            sysvar,
            subquery,
            aliases: &[],
            insert_cols: &[],
            place,
            outer: &[],
            windows: &[],
            defaults: &[],
            where_top: place == "where clause",
        }
    }

    /// The same binder, reaching `outer` (an enclosing query's columns) for
    /// names its own scope lacks: a correlated subquery's outer references.
    pub fn with_outer(mut self, outer: &'a [ScopeCol]) -> Binder<'a> {
        self.outer = outer;
        self
    }

    pub fn bind(&mut self, e: &ast::Expr) -> SqlResult<(Expr, Ty)> {
        // Only AND, OR and parentheses keep WHERE's top level.
        let top = self.where_top;
        self.where_top = top
            && matches!(
                e,
                ast::Expr::Nested(_)
                    | ast::Expr::BinaryOp { op: ast::BinaryOperator::And | ast::BinaryOperator::Or, .. }
            );
        let r = self.bind_at(e, top);
        self.where_top = top;
        r
    }

    fn bind_at(&mut self, e: &ast::Expr, top: bool) -> SqlResult<(Expr, Ty)> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(id) => self.column(None, &id.value)?,
            E::CompoundIdentifier(parts) => {
                let n = parts.len();
                if n == 0 {
                    return Err(SqlError::syntax("''"));
                }
                // `@@global.x`, `@@session.x`: one system variable name.
                if parts[0].value.starts_with("@@") {
                    let name: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                    return self.column(None, &name.join("."));
                }
                let table = if n >= 2 { Some(parts[n - 2].value.as_str()) } else { None };
                self.column(table, &parts[n - 1].value)?
            }
            E::Value(v) => literal(&v.value)?,
            E::Nested(e) => self.bind(e)?,
            E::UnaryOp { op, expr } => {
                let (x, t) = self.bind(expr)?;
                match op {
                    ast::UnaryOperator::Minus => {
                        // Fold a literal so -9223372036854775808 fits.
                        if let Expr::Const(Value::UInt(u)) = &x {
                            if *u == i64::MAX as u64 + 1 {
                                return Ok((Expr::Const(Value::Int(i64::MIN)), Ty::Int));
                            }
                        }
                        let t = match t {
                            Ty::UInt => Ty::Int,
                            Ty::Str(_) => Ty::Double,
                            t => t,
                        };
                        (Expr::Neg(Box::new(x)), t)
                    }
                    ast::UnaryOperator::Plus => (x, t),
                    ast::UnaryOperator::Not | ast::UnaryOperator::BangNot => {
                        (Expr::Not(Box::new(x)), Ty::Int)
                    }
                    ast::UnaryOperator::BitwiseNot => (Expr::BitNot(Box::new(x)), Ty::UInt),
                    other => return Err(SqlError::syntax(format!("'{other}'"))),
                }
            }
            E::BinaryOp { left, op, right } => self.binary(left, op, right)?,
            E::IsNull(e) => {
                let (x, t) = self.bind(e)?;
                // MySQL: a NOT NULL DATE/DATETIME column's zero date IS NULL,
                // in WHERE's AND/OR tree only (elsewhere, `IS NULL` is 0).
                let zero_date = top
                    && match &x {
                        Expr::Col(i) => self.scope.get(*i).is_some_and(|c| {
                            !c.nullable
                                && matches!(
                                    c.ty,
                                    crate::types::SqlType::Date | crate::types::SqlType::DateTime { .. }
                                )
                        }),
                        _ => false,
                    };
                if zero_date {
                    let Ty::Temporal(k) = t else { unreachable!("a date column") };
                    let zero = Expr::Const(Value::str("0000-00-00"));
                    let eq = Expr::Cmp(CmpOp::Eq, CmpKind::Temporal(k), Box::new(x.clone()), Box::new(zero));
                    (Expr::Or(Box::new(Expr::IsNull(Box::new(x), false)), Box::new(eq)), Ty::Int)
                } else {
                    (Expr::IsNull(Box::new(x), false), Ty::Int)
                }
            }
            E::IsNotNull(e) => (Expr::IsNull(Box::new(self.bind(e)?.0), true), Ty::Int),
            E::IsTrue(e) => (Expr::IsBool(Box::new(self.bind(e)?.0), true, false), Ty::Int),
            E::IsNotTrue(e) => (Expr::IsBool(Box::new(self.bind(e)?.0), true, true), Ty::Int),
            E::IsFalse(e) => (Expr::IsBool(Box::new(self.bind(e)?.0), false, false), Ty::Int),
            E::IsNotFalse(e) => (Expr::IsBool(Box::new(self.bind(e)?.0), false, true), Ty::Int),
            E::IsUnknown(e) => (Expr::IsNull(Box::new(self.bind(e)?.0), false), Ty::Int),
            E::IsNotUnknown(e) => (Expr::IsNull(Box::new(self.bind(e)?.0), true), Ty::Int),
            E::In { expr, target, negated, .. } if self.is_row_in(expr, target) => {
                let n = row_width(expr).unwrap_or(1);
                let lhs = self.row_operand(expr, n)?;
                let mut rows: Vec<Vec<(Expr, Ty)>> = Vec::new();
                match target {
                    ast::InTarget::List(list) => {
                        for item in list {
                            rows.push(self.row_operand(item, n)?);
                        }
                    }
                    ast::InTarget::Subquery(q) => {
                        let Some(found) = self.run_subquery(q)? else {
                            return Err(SqlError::unsupported("correlated row subqueries"));
                        };
                        for r in found {
                            rows.push(
                                r.into_iter().map(|v| (Expr::Const(v.clone()), value_ty(&v))).collect(),
                            );
                        }
                    }
                    _ => return Err(SqlError::unsupported("this IN form")),
                }
                // `row IN (r1, r2 ..)` is `row = r1 OR row = r2 ..`, which
                // gives SQL's NULL for a row that matches none where a
                // NULL made a comparison unknown, as MariaDB's.
                let mut any: Option<Expr> = None;
                for r in rows {
                    if let Some(e) = row_and_scalar(&lhs, &r, "in") {
                        return Err(e);
                    }
                    let eq = row_cmp(CmpOp::Eq, &lhs, &r)?;
                    any = Some(match any {
                        None => eq,
                        Some(a) => Expr::Or(Box::new(a), Box::new(eq)),
                    });
                }
                let any = any.unwrap_or(Expr::Const(Value::Int(0)));
                (if *negated { Expr::Not(Box::new(any)) } else { any }, Ty::Int)
            }
            E::In { expr, target, negated, .. } => {
                let (x, t) = self.bind(expr)?;
                let items: Vec<(Expr, Ty)> = match target {
                    ast::InTarget::List(list) => {
                        list.iter().map(|i| self.bind(i)).collect::<SqlResult<_>>()?
                    }
                    ast::InTarget::Subquery(q) => {
                        let rows = match self.run_subquery(q)? {
                            Some(rows) => rows,
                            None => {
                                let c = Correlated {
                                    query: q.clone(),
                                    kind: CorrKind::In(Box::new(x), *negated),
                                };
                                return Ok((Expr::Correlated(Box::new(c)), Ty::Int));
                            }
                        };
                        let mut out = Vec::new();
                        for r in rows {
                            if r.len() != 1 {
                                return Err(SqlError::operand_columns(1));
                            }
                            let v = r.into_iter().next().expect("one column");
                            let ty = value_ty(&v);
                            out.push((Expr::Const(v), ty));
                        }
                        out
                    }
                    _ => return Err(SqlError::unsupported("this IN form")),
                };
                // Each item compares with the value by the pair's own
                // types, as MySQL's IN does when the items' types differ;
                // `kind` is the common kind (for access paths) when they agree.
                let list_exprs = match target {
                    ast::InTarget::List(l) => Some(l),
                    _ => None,
                };
                let kinds: Vec<CmpKind> = match list_exprs {
                    Some(es) => items
                        .iter()
                        .zip(es)
                        .map(|((_, it), e)| cmp_kind_of(expr, t, e, *it, "in"))
                        .collect::<SqlResult<_>>()?,
                    None => items.iter().map(|(_, it)| cmp_kind(t, *it)).collect(),
                };
                let kind = kinds
                    .first()
                    .copied()
                    .filter(|k| kinds.iter().all(|x| x == k))
                    .unwrap_or(CmpKind::Numeric);
                let list: Vec<(Expr, CmpKind)> =
                    items.into_iter().zip(kinds).map(|((e, _), k)| (e, k)).collect();
                let set = crate::expr::InSet::of(&list);
                (Expr::In(Box::new(x), kind, list, *negated, set), Ty::Int)
            }
            E::Between { expr, negated, low, high } => {
                let (x, t) = self.bind(expr)?;
                let (l, lt) = self.bind(low)?;
                let (h, ht) = self.bind(high)?;
                let kind = merge_kind(
                    cmp_kind_of(expr, t, low, lt, "between")?,
                    cmp_kind_of(expr, t, high, ht, "between")?,
                );
                // An explicit COLLATE on any of the three decides.
                let kind = match [expr, low, high].into_iter().find_map(|e| explicit_collation(e)) {
                    Some(c) if matches!(kind, CmpKind::Str(_)) => CmpKind::Str(c),
                    _ => kind,
                };
                (Expr::Between(Box::new(x), kind, Box::new(l), Box::new(h), *negated), Ty::Int)
            }
            E::Like { negated, expr, pattern, escape_char, .. } => {
                let (x, t) = self.bind(expr)?;
                let (p, pt) = self.bind(pattern)?;
                let coll = match cmp_kind_of(expr, t, pattern, pt, "like")? {
                    CmpKind::Str(c) => c,
                    _ => match t {
                        Ty::Str(c) => c,
                        _ => default_coll(),
                    },
                };
                let escape = match escape_char.as_deref() {
                    None => b'\\',
                    Some(e) => match self.bind(e)?.0 {
                        Expr::Const(Value::Str(s)) if s.len() == 1 => s[0],
                        Expr::Const(Value::Str(s)) if s.is_empty() => b'\\',
                        _ => return Err(SqlError::new(1210, "HY000", "Incorrect arguments to ESCAPE")),
                    },
                };
                (
                    Expr::Like { expr: Box::new(x), pattern: Box::new(p), escape, coll, negated: *negated },
                    Ty::Int,
                )
            }
            E::Case { operand, conditions, else_result, .. } => {
                let op = match operand {
                    Some(o) => Some(self.bind(o)?),
                    None => None,
                };
                let mut whens = Vec::new();
                let mut kind: Option<CmpKind> = None;
                let mut rty: Option<Ty> = None;
                for w in conditions {
                    let (c, ct) = self.bind(&w.condition)?;
                    if let Some((_, ot)) = &op {
                        let k = cmp_kind(*ot, ct);
                        kind = Some(kind.map_or(k, |old| merge_kind(old, k)));
                    }
                    let (r, t) = self.bind(&w.result)?;
                    rty = Some(rty.map_or(t, |o| merge_ty(o, t)));
                    whens.push((c, r));
                }
                let otherwise = match else_result {
                    Some(e) => {
                        let (x, t) = self.bind(e)?;
                        rty = Some(rty.map_or(t, |o| merge_ty(o, t)));
                        Some(Box::new(x))
                    }
                    None => None,
                };
                let operand = op.map(|(x, _)| (Box::new(x), kind.unwrap_or(CmpKind::Numeric)));
                (Expr::Case { operand, whens, otherwise }, rty.unwrap_or(Ty::Null))
            }
            E::Function(f) => self.function(f)?,
            E::Cast { expr, data_type, .. } | E::Convert { expr, data_type: Some(data_type), .. } => {
                let (x, _) = self.bind(expr)?;
                let (c, t) = cast_target(data_type)?;
                (Expr::Cast(Box::new(x), c), t)
            }
            E::Convert { expr, charset: Some(cs), .. } => {
                let (x, _) = self.bind(expr)?;
                let name = crate::expr::ident_name(cs).join(".");
                let coll = crate::types::Charset::by_name(&name).map(|c| c.default_collation()).ok_or_else(
                    || SqlError::new(1115, "42000", format!("Unknown character set: '{name}'")),
                )?;
                (Expr::Cast(Box::new(x), Cast::Char(coll)), Ty::Str(coll))
            }
            E::Collate { expr, collation } => {
                let (x, _) = self.bind(expr)?;
                let name = crate::expr::ident_name(collation).join(".");
                let coll = Collation::by_name(&name)
                    .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{name}'")))?;
                (Expr::Cast(Box::new(x), Cast::Char(coll)), Ty::Str(coll))
            }
            E::Subquery(q) => {
                let Some(rows) = self.run_subquery(q)? else {
                    // Its type is known only when it runs: comparisons take
                    // the other operand's kind.
                    let c = Correlated { query: q.clone(), kind: CorrKind::Scalar };
                    return Ok((Expr::Correlated(Box::new(c)), Ty::Null));
                };
                if rows.len() > 1 {
                    return Err(SqlError::subquery_rows());
                }
                let v = match rows.into_iter().next() {
                    None => Value::Null,
                    Some(r) if r.len() == 1 => r.into_iter().next().expect("one"),
                    Some(_) => return Err(SqlError::operand_columns(1)),
                };
                let t = value_ty(&v);
                (Expr::Subquery(Box::new(v)), t)
            }
            E::Exists { subquery, negated } => {
                let Some(rows) = self.run_subquery(subquery)? else {
                    let c = Correlated { query: subquery.clone(), kind: CorrKind::Exists(*negated) };
                    return Ok((Expr::Correlated(Box::new(c)), Ty::Int));
                };
                (Expr::Const(Value::Int((rows.is_empty() == *negated) as i64)), Ty::Int)
            }
            E::Trim { expr, trim_where, trim_what, .. } => {
                let mut args = vec![self.bind(expr)?];
                if let Some(w) = trim_what {
                    args.push(self.bind(w)?);
                }
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "TRIM_LEADING",
                    Some(ast::TrimWhereField::Trailing) => "TRIM_TRAILING",
                    _ => "TRIM",
                };
                call(name, args)
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind(expr)?];
                if let Some(f) = substring_from {
                    args.push(self.bind(f)?);
                }
                if let Some(f) = substring_for {
                    args.push(self.bind(f)?);
                }
                call("SUBSTRING", args)
            }
            E::Position { expr, r#in } => {
                let args = vec![self.bind(expr)?, self.bind(r#in)?];
                call("LOCATE", args)
            }
            E::Ceil { expr, .. } => call("CEIL", vec![self.bind(expr)?]),
            E::Floor { expr, .. } => call("FLOOR", vec![self.bind(expr)?]),
            E::Extract { field, expr, .. } => {
                let unit =
                    (Expr::Const(Value::str(field.to_string().to_uppercase())), Ty::Str(default_coll()));
                call("EXTRACT", vec![unit, self.bind(expr)?])
            }
            // A row outside a comparison or IN (those are `row_cmp`'s).
            E::Tuple(_) => return Err(SqlError::operand_columns(1)),
            E::TypedString(ts) => {
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let kind = match &ts.data_type {
                    ast::DataType::Date => Some(TemporalKind::Date),
                    ast::DataType::Timestamp(..) => Some(TemporalKind::DateTime),
                    ast::DataType::Time(..) => Some(TemporalKind::Time),
                    _ => None,
                };
                match kind {
                    Some(k) => (Expr::Const(Value::Temporal(typed_literal(&text, k)?)), Ty::Temporal(k)),
                    None => {
                        let (c, t) = cast_target(&ts.data_type)?;
                        (Expr::Cast(Box::new(Expr::Const(Value::str(text))), c), t)
                    }
                }
            }
            E::Prefixed { value, .. } => self.bind(value)?,
            // INTERVAL outside DATE_ADD/DATE_SUB's argument and `+`/`-`.
            E::Interval(iv) => return Err(SqlError::syntax(format!("'{}'", iv.value))),
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    /// Runs an uncorrelated subquery now; `None` when it names a column
    /// only an enclosing query has (1054 on its own while this query has
    /// columns): it is then correlated, and runs per row
    /// (`Expr::Correlated`). A name that is nowhere fails when it runs.
    fn run_subquery(&mut self, q: &ast::Query) -> SqlResult<Option<Vec<Vec<Value>>>> {
        match (self.subquery)(q) {
            Ok(rows) => Ok(Some(rows)),
            Err(e) if e.code == 1054 && !(self.scope.is_empty() && self.outer.is_empty()) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn column(&mut self, table: Option<&str>, name: &str) -> SqlResult<(Expr, Ty)> {
        if let Some(n) = name.strip_prefix("@@") {
            let v = (self.sysvar)(n)?;
            let t = value_ty(&v);
            return Ok((Expr::SysVar(v), t));
        }
        if let Some(n) = name.strip_prefix('@') {
            return Ok((Expr::UserVar(n.to_ascii_lowercase()), Ty::Str(default_coll())));
        }
        let mut found = None;
        for (i, c) in self.scope.iter().enumerate() {
            let reach = match table {
                Some(t) => c.table == t,
                None => !c.hidden,
            };
            if reach && c.name.eq_ignore_ascii_case(name) {
                if found.is_some() {
                    return Err(SqlError::ambiguous_column(name, self.place_name()));
                }
                found = Some(i);
            }
        }
        if let Some(i) = found {
            return Ok((Expr::Col(i), Ty::of(&self.scope[i].ty)));
        }
        if table.is_none() {
            if let Some((_, e, t)) = self.aliases.iter().find(|(a, _, _)| a.eq_ignore_ascii_case(name)) {
                return Ok((e.clone(), *t));
            }
        }
        // An enclosing query's column (the nearest one that has it).
        for (i, c) in self.outer.iter().enumerate() {
            let reach = match table {
                Some(t) => c.table == t,
                None => !c.hidden,
            };
            if reach && c.name.eq_ignore_ascii_case(name) {
                return Ok((Expr::OuterCol(i), Ty::of(&c.ty)));
            }
        }
        let full = match table {
            Some(t) => format!("{t}.{name}"),
            None => name.to_string(),
        };
        Err(SqlError::unknown_column(&full, self.place))
    }

    fn place_name(&self) -> &'static str {
        match self.place {
            "where clause" => "where clause",
            "field list" => "field list",
            p => p,
        }
    }

    /// An INTERVAL's amount (any expression, evaluated per row as MySQL
    /// does) and its unit as a constant string: DATE_ADD's second and third
    /// arguments.
    fn interval(&mut self, iv: &ast::Interval) -> SqlResult<((Expr, Ty), (Expr, Ty))> {
        use ast::DateTimeField as F;
        let amount = self.bind(&iv.value)?;
        // MySQL's compound units arrive as `leading TO last` (see
        // lex::rewrite_interval_units).
        let unit = match (&iv.leading_field, &iv.last_field) {
            (Some(F::Microsecond), Some(F::Second)) => "SECOND_MICROSECOND".to_string(),
            (Some(a), Some(b)) => format!("{a}_{b}").to_uppercase(),
            (Some(a), None) => a.to_string().to_uppercase(),
            (None, _) => return Err(SqlError::syntax(format!("'{}'", iv.value))),
        };
        if crate::temporal::IntervalUnit::by_name(&unit).is_none() {
            return Err(SqlError::syntax(format!("'{unit}'")));
        }
        Ok((amount, (Expr::Const(Value::str(unit)), Ty::Str(default_coll()))))
    }

    /// Whether an IN compares rows: `(a, b) IN ((1, 2), ..)` or
    /// `(a, b) IN (SELECT x, y ..)`.
    fn is_row_in(&self, e: &ast::Expr, target: &ast::InTarget) -> bool {
        row_width(e).is_some()
            || matches!(target, ast::InTarget::List(l) if l.iter().any(|i| row_width(i).is_some()))
    }

    /// One side of a row comparison as its `n` values: a row constructor's
    /// items, or a row subquery's one row (all NULL when it has none, as
    /// MariaDB's; 1242 for more than one).
    fn row_operand(&mut self, e: &ast::Expr, n: usize) -> SqlResult<Vec<(Expr, Ty)>> {
        match e {
            ast::Expr::Tuple(items) => items.iter().map(|i| self.bind(i)).collect(),
            ast::Expr::Nested(inner) => self.row_operand(inner, n),
            ast::Expr::Subquery(q) => {
                let Some(rows) = self.run_subquery(q)? else {
                    return Err(SqlError::unsupported("correlated row subqueries"));
                };
                if rows.len() > 1 {
                    return Err(SqlError::subquery_rows());
                }
                Ok(match rows.into_iter().next() {
                    Some(r) => r
                        .into_iter()
                        .map(|v| {
                            let t = value_ty(&v);
                            (Expr::Subquery(Box::new(v)), t)
                        })
                        .collect(),
                    None => vec![(Expr::Subquery(Box::new(Value::Null)), Ty::Null); n],
                })
            }
            other => Ok(vec![self.bind(other)?]),
        }
    }

    fn binary(&mut self, l: &ast::Expr, op: &ast::BinaryOperator, r: &ast::Expr) -> SqlResult<(Expr, Ty)> {
        use ast::BinaryOperator as B;
        if let Some(n) = row_width(l).or(row_width(r)) {
            let name = op.to_string();
            let op = match op {
                B::Eq => CmpOp::Eq,
                B::NotEq => CmpOp::Ne,
                B::Lt => CmpOp::Lt,
                B::LtEq => CmpOp::Le,
                B::Gt => CmpOp::Gt,
                B::GtEq => CmpOp::Ge,
                B::Spaceship => CmpOp::NullSafeEq,
                _ => {
                    let (a, b) = (self.row_operand(l, n)?, self.row_operand(r, n)?);
                    return Err(row_and_scalar(&a, &b, &name).unwrap_or(SqlError::operand_columns(1)));
                }
            };
            let a = self.row_operand(l, n)?;
            let b = self.row_operand(r, n)?;
            if let Some(e) = row_and_scalar(&a, &b, &name) {
                return Err(e);
            }
            return Ok((row_cmp(op, &a, &b)?, Ty::Int));
        }
        // `d + INTERVAL n unit`, `INTERVAL n unit + d` and `d - INTERVAL n
        // unit` are DATE_ADD / DATE_SUB (`INTERVAL n unit - d` is not
        // MySQL: it falls through to the error for a bare INTERVAL).
        let date_arith = match (op, l, r) {
            (B::Plus, d, ast::Expr::Interval(iv)) | (B::Plus, ast::Expr::Interval(iv), d) => {
                Some(("DATE_ADD", d, iv))
            }
            (B::Minus, d, ast::Expr::Interval(iv)) => Some(("DATE_SUB", d, iv)),
            _ => None,
        };
        if let Some((name, d, iv)) = date_arith {
            let date = self.bind(d)?;
            let (amount, unit) = self.interval(iv)?;
            return Ok(call(name, vec![date, amount, unit]));
        }
        let (a, at) = self.bind(l)?;
        let (b, bt) = self.bind(r)?;
        let bx = |x: Expr| Box::new(x);
        let arith = |op: Arith| -> (Expr, Ty) {
            let t = arith_ty(op, at, bt);
            (Expr::Arith(op, Box::new(a.clone()), Box::new(b.clone())), t)
        };
        let sym = match op {
            B::Eq => Some("="),
            B::NotEq => Some("<>"),
            B::Lt => Some("<"),
            B::LtEq => Some("<="),
            B::Gt => Some(">"),
            B::GtEq => Some(">="),
            B::Spaceship => Some("<=>"),
            _ => None,
        };
        let kind = match sym {
            Some(sym) => cmp_kind_of(l, at, r, bt, sym)?,
            None => cmp_kind(at, bt),
        };
        let cmp = |op: CmpOp| (Expr::Cmp(op, kind, Box::new(a.clone()), Box::new(b.clone())), Ty::Int);
        Ok(match op {
            B::Plus => arith(Arith::Add),
            B::Minus => arith(Arith::Sub),
            B::Multiply => arith(Arith::Mul),
            B::Divide => arith(Arith::Div),
            B::Modulo => arith(Arith::Mod),
            B::MyIntegerDivide | B::DuckIntegerDivide => arith(Arith::IntDiv),
            B::Eq => cmp(CmpOp::Eq),
            B::NotEq => cmp(CmpOp::Ne),
            B::Lt => cmp(CmpOp::Lt),
            B::LtEq => cmp(CmpOp::Le),
            B::Gt => cmp(CmpOp::Gt),
            B::GtEq => cmp(CmpOp::Ge),
            B::Spaceship => cmp(CmpOp::NullSafeEq),
            B::And => (Expr::And(bx(a), bx(b)), Ty::Int),
            B::Or => (Expr::Or(bx(a), bx(b)), Ty::Int),
            B::Xor => (Expr::Xor(bx(a), bx(b)), Ty::Int),
            B::BitwiseAnd => (Expr::Bit(BitOp::And, bx(a), bx(b)), Ty::UInt),
            B::BitwiseOr => (Expr::Bit(BitOp::Or, bx(a), bx(b)), Ty::UInt),
            B::BitwiseXor => (Expr::Bit(BitOp::Xor, bx(a), bx(b)), Ty::UInt),
            B::PGBitwiseShiftLeft => (Expr::Bit(BitOp::Shl, bx(a), bx(b)), Ty::UInt),
            B::PGBitwiseShiftRight => (Expr::Bit(BitOp::Shr, bx(a), bx(b)), Ty::UInt),
            B::StringConcat => (Expr::Or(bx(a), bx(b)), Ty::Int),
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        })
    }

    fn function(&mut self, f: &ast::Function) -> SqlResult<(Expr, Ty)> {
        let name = crate::expr::ident_name(&f.name).join(".").to_ascii_uppercase();
        let (list, distinct, clauses) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, Vec::new()),
            ast::FunctionArguments::List(l) => (
                l.args.clone(),
                matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)),
                l.clauses.clone(),
            ),
            ast::FunctionArguments::Subquery(_) => return Err(SqlError::unsupported("subquery arguments")),
        };
        if f.over.is_some() {
            return crate::window::bind(self, &name, f, &list);
        }
        if name == "DEFAULT" {
            // DEFAULT(col): only a column name is allowed (MariaDB's
            // grammar), and its DEFAULT is known when the statement binds.
            let col = match list.as_slice() {
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] => match e {
                    ast::Expr::Identifier(id) => Some((None, id.value.clone())),
                    ast::Expr::CompoundIdentifier(p) if p.len() >= 2 => {
                        Some((Some(p[p.len() - 2].value.clone()), p[p.len() - 1].value.clone()))
                    }
                    _ => None,
                },
                _ => None,
            };
            let Some((table, col)) = col else {
                return Err(SqlError::syntax(format!("'{}'", ast::Expr::Function(f.clone()))));
            };
            let c = match self.column(table.as_deref(), &col) {
                Ok((Expr::Col(i), _)) => self.scope[i].clone(),
                Ok(_) => return Err(SqlError::no_default(&col)),
                Err(e) => self
                    .defaults
                    .iter()
                    .find(|c| {
                        c.name.eq_ignore_ascii_case(&col) && table.as_ref().is_none_or(|t| *t == c.table)
                    })
                    .cloned()
                    .ok_or(e)?,
            };
            return default_of(&c);
        }
        let agg = match name.as_str() {
            "COUNT" => Some(AggFn::Count),
            "SUM" => Some(AggFn::Sum),
            "AVG" => Some(AggFn::Avg),
            "MIN" => Some(AggFn::Min),
            "MAX" => Some(AggFn::Max),
            "BIT_AND" => Some(AggFn::BitAnd),
            "BIT_OR" => Some(AggFn::BitOr),
            "BIT_XOR" => Some(AggFn::BitXor),
            "GROUP_CONCAT" => Some(AggFn::GroupConcat),
            _ => None,
        };
        if let Some(mut func) = agg {
            let star = list.len() == 1
                && matches!(list[0], ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard));
            let (arg, arg_ty) = if star {
                if func != AggFn::Count {
                    return Err(SqlError::syntax("'*)'"));
                }
                func = AggFn::CountStar;
                (None, Ty::Int)
            } else {
                let exprs = self.arg_exprs(&list)?;
                // Aggregate arguments are bound over the input rows, where
                // aggregates may not nest.
                let saved = self.aggs.take();
                let mut bound = Vec::new();
                for e in &exprs {
                    bound.push(self.bind(e));
                }
                self.aggs = saved;
                let mut bound = bound.into_iter().collect::<SqlResult<Vec<_>>>()?;
                if bound.is_empty() || (bound.len() > 1 && func != AggFn::GroupConcat) {
                    return Err(SqlError::wrong_arg_count(&name));
                }
                if bound.len() > 1 {
                    // GROUP_CONCAT(a, b): the concatenation of its arguments.
                    let args: Vec<(Expr, Ty)> = std::mem::take(&mut bound);
                    let c = call("CONCAT", args);
                    bound.push(c);
                }
                let (e, t) = bound.pop().expect("one argument");
                (Some(e), t)
            };
            let mut sep = b",".to_vec();
            for c in &clauses {
                if let ast::FunctionArgumentClause::Separator(v) = c {
                    if let ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) = &v.value {
                        sep = s.as_bytes().to_vec();
                    }
                }
            }
            let ty = match func {
                AggFn::CountStar | AggFn::Count => Ty::Int,
                AggFn::Sum => match arg_ty {
                    Ty::Int | Ty::UInt => Ty::Decimal(0),
                    Ty::Decimal(s) => Ty::Decimal(s),
                    _ => Ty::Double,
                },
                AggFn::Avg => match arg_ty {
                    Ty::Int | Ty::UInt => Ty::Decimal(4),
                    Ty::Decimal(s) => Ty::Decimal(s + 4),
                    _ => Ty::Double,
                },
                AggFn::Min | AggFn::Max => arg_ty,
                AggFn::BitAnd | AggFn::BitOr | AggFn::BitXor => Ty::UInt,
                AggFn::GroupConcat => Ty::Str(match arg_ty {
                    Ty::Str(c) => c,
                    _ => default_coll(),
                }),
            };
            let base = self.agg_base;
            let Some(aggs) = self.aggs.as_deref_mut() else {
                return Err(SqlError::invalid_group_use());
            };
            aggs.push(AggSpec { func, arg, arg_ty, distinct, sep, window: None });
            return Ok((Expr::Col(base + aggs.len() - 1), ty));
        }
        let exprs = self.arg_exprs(&list)?;
        if name == "VALUES" || name == "VALUE" {
            if let [ast::Expr::Identifier(id)] = &exprs[..] {
                if let Some((_, i)) = self.insert_cols.iter().find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
                {
                    let t = self.scope.get(*i).map(|c| Ty::of(&c.ty)).unwrap_or(Ty::Null);
                    return Ok((Expr::InsertValue(*i), t));
                }
            }
            return Ok((Expr::Const(Value::Null), Ty::Null));
        }
        let mut args = Vec::new();
        for e in &exprs {
            match e {
                // DATE_ADD(d, INTERVAL n unit): arguments d, n and the unit.
                ast::Expr::Interval(iv)
                    if args.len() == 1
                        && exprs.len() == 2
                        && matches!(name.as_str(), "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE") =>
                {
                    let (amount, unit) = self.interval(iv)?;
                    args.push(amount);
                    args.push(unit);
                }
                e => args.push(self.bind(e)?),
            }
        }
        if !crate::func::exists(&name) {
            return Err(SqlError::no_such_function(&name));
        }
        // UNIX_TIMESTAMP of a string read from rows: MariaDB cannot know
        // its fraction digits before reading it and shows 6 (a constant
        // string's are its own).
        if name == "UNIX_TIMESTAMP"
            && args.len() == 1
            && matches!(args[0].1, Ty::Str(_))
            && !args[0].0.is_constant()
        {
            return Ok(call(crate::func::UNIX_TIMESTAMP_OF_ROWS, args));
        }
        Ok(call(&name, args))
    }

    fn arg_exprs(&mut self, list: &[ast::FunctionArg]) -> SqlResult<Vec<ast::Expr>> {
        list.iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                _ => Err(SqlError::syntax("'*'")),
            })
            .collect()
    }
}

fn call(name: &str, args: Vec<(Expr, Ty)>) -> (Expr, Ty) {
    let colls: Vec<Option<Collation>> = args
        .iter()
        .map(|(_, t)| match t {
            Ty::Str(c) => Some(*c),
            _ => None,
        })
        .collect();
    let ty = func_ty(name, &args);
    (Expr::Func(name.to_string(), args.into_iter().map(|a| a.0).collect(), colls), ty)
}

/// The result kind of scalar function `name`, for result metadata and
/// for how its result compares.
fn func_ty(name: &str, args: &[(Expr, Ty)]) -> Ty {
    let first_str = args.iter().find_map(|(_, t)| if let Ty::Str(c) = t { Some(*c) } else { None });
    match name {
        "IFNULL" | "COALESCE" | "GREATEST" | "LEAST" | "NULLIF" => {
            args.iter().map(|a| a.1).reduce(merge_ty).unwrap_or(Ty::Null)
        }
        "IF" => args.iter().skip(1).map(|a| a.1).reduce(merge_ty).unwrap_or(Ty::Null),
        "LENGTH"
        | "OCTET_LENGTH"
        | "CHAR_LENGTH"
        | "CHARACTER_LENGTH"
        | "LOCATE"
        | "INSTR"
        | "ASCII"
        | "ORD"
        | "YEAR"
        | "MONTH"
        | "DAY"
        | "DAYOFMONTH"
        | "HOUR"
        | "MINUTE"
        | "SECOND"
        | "DAYOFWEEK"
        | "WEEKDAY"
        | "DAYOFYEAR"
        | "WEEK"
        | "QUARTER"
        | "DATEDIFF"
        | "TO_DAYS"
        | "STRCMP"
        | "FIELD"
        | "FIND_IN_SET"
        | "ISNULL"
        | "SIGN"
        | "CRC32"
        | "UNIX_TIMESTAMP"
        | crate::func::UNIX_TIMESTAMP_OF_ROWS
        | "TIMESTAMPDIFF"
        | "LAST_INSERT_ID"
        | "CONNECTION_ID"
        | "INTERVAL"
        | "EXTRACT"
        | "MICROSECOND"
        | "YEARWEEK"
        | "TIME_TO_SEC" => Ty::Int,
        // A decimal's CEIL and FLOOR have no fraction digits (MariaDB
        // types them LONG or DECIMAL(p,0)).
        "CEIL" | "CEILING" | "FLOOR" => match args.first().map(|a| a.1) {
            Some(Ty::Decimal(_)) => Ty::Decimal(0),
            Some(Ty::Str(_)) => Ty::Double,
            Some(t) => t,
            None => Ty::Int,
        },
        "ABS" | "ROUND" | "TRUNCATE" | "MOD" => {
            args.first().map(|a| if let Ty::Str(_) = a.1 { Ty::Double } else { a.1 }).unwrap_or(Ty::Int)
        }
        "RAND" | "PI" | "SQRT" | "POW" | "POWER" | "EXP" | "LN" | "LOG" | "LOG2" | "LOG10" | "SIN"
        | "COS" | "TAN" | "ASIN" | "ACOS" | "ATAN" | "ATAN2" | "COT" | "DEGREES" | "RADIANS" => Ty::Double,
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" | "SYSDATE" | "UTC_TIMESTAMP"
        | "FROM_UNIXTIME" | "TIMESTAMP" | "STR_TO_DATE" => Ty::Temporal(TemporalKind::DateTime),
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" | "DATE" | "LAST_DAY" | "FROM_DAYS" | "MAKEDATE" => {
            Ty::Temporal(TemporalKind::Date)
        }
        "CURTIME" | "CURRENT_TIME" | "UTC_TIME" | "TIME" | "TIMEDIFF" | "SEC_TO_TIME" | "MAKETIME" => {
            Ty::Temporal(TemporalKind::Time)
        }
        "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" => match args.first().map(|a| a.1) {
            Some(Ty::Temporal(k)) => Ty::Temporal(k),
            _ => Ty::Str(default_coll()),
        },
        "HEX" | "MD5" | "SHA1" | "SHA" | "SHA2" | "UUID" | "VERSION" | "DATABASE" | "SCHEMA" | "USER"
        | "CURRENT_USER" | "DAYNAME" | "MONTHNAME" | "DATE_FORMAT" | "TIME_FORMAT" | "FORMAT" | "BIN"
        | "OCT" | "CONV" | "CHARSET" | "COLLATION" | "TO_BASE64" | "SESSION_USER" | "SYSTEM_USER" => {
            Ty::Str(default_coll())
        }
        "UNHEX" | "CHAR" | "FROM_BASE64" => Ty::Str(Collation::Binary),
        _ => Ty::Str(first_str.unwrap_or(default_coll())),
    }
}

/// The kind of a value produced at run time (subquery results).
pub fn value_ty(v: &Value) -> Ty {
    match v {
        Value::Null => Ty::Null,
        Value::Int(_) => Ty::Int,
        Value::UInt(_) => Ty::UInt,
        Value::Double(_) => Ty::Double,
        Value::Decimal(d) => Ty::Decimal(d.fractional_digit_count().clamp(0, 38) as u8),
        Value::Str(_) => Ty::Str(default_coll()),
        Value::Temporal(t) => Ty::Temporal(t.kind),
    }
}

fn arith_ty(op: Arith, a: Ty, b: Ty) -> Ty {
    let float = |t: Ty| matches!(t, Ty::Double | Ty::Str(_));
    if op == Arith::IntDiv {
        return if a == Ty::UInt || b == Ty::UInt { Ty::UInt } else { Ty::Int };
    }
    if float(a) || float(b) {
        return Ty::Double;
    }
    let scale = |t: Ty| if let Ty::Decimal(s) = t { s } else { 0 };
    match op {
        Arith::Div => Ty::Decimal(scale(a) + 4),
        _ if matches!(a, Ty::Decimal(_) | Ty::Temporal(_))
            || matches!(b, Ty::Decimal(_) | Ty::Temporal(_)) =>
        {
            Ty::Decimal(if op == Arith::Mul { scale(a) + scale(b) } else { scale(a).max(scale(b)) })
        }
        _ if a == Ty::UInt || b == Ty::UInt => Ty::UInt,
        _ => Ty::Int,
    }
}

/// The type of a result that can come from either branch (CASE, IF, COALESCE).
pub fn merge_ty(a: Ty, b: Ty) -> Ty {
    match (a, b) {
        (Ty::Null, t) | (t, Ty::Null) => t,
        (x, y) if x == y => x,
        (Ty::Str(c), _) | (_, Ty::Str(c)) => Ty::Str(c),
        (Ty::Temporal(_), _) | (_, Ty::Temporal(_)) => Ty::Str(default_coll()),
        (Ty::Double, _) | (_, Ty::Double) => Ty::Double,
        (Ty::Decimal(x), Ty::Decimal(y)) => Ty::Decimal(x.max(y)),
        (Ty::Decimal(x), _) | (_, Ty::Decimal(x)) => Ty::Decimal(x),
        (Ty::Int, Ty::UInt) | (Ty::UInt, Ty::Int) => Ty::Decimal(0),
        (x, _) => x,
    }
}

/// The collation a COLLATE clause gives `e` (through parentheses): MySQL's
/// EXPLICIT derivation, which wins over a column's, a literal's and a
/// binary string's in a comparison.
fn explicit_collation(e: &ast::Expr) -> Option<Collation> {
    match e {
        ast::Expr::Nested(x) => explicit_collation(x),
        ast::Expr::Collate { collation, .. } => {
            Collation::by_name(&crate::expr::ident_name(collation).join("."))
        }
        _ => None,
    }
}

/// `cmp_kind` for operands `l` and `r` as written: a string comparison
/// takes an explicit COLLATE's collation; two different explicit ones are
/// 1267, as in MariaDB.
fn cmp_kind_of(l: &ast::Expr, lt: Ty, r: &ast::Expr, rt: Ty, op: &str) -> SqlResult<CmpKind> {
    let k = cmp_kind(lt, rt);
    if !matches!(k, CmpKind::Str(_)) {
        return Ok(k);
    }
    Ok(match (explicit_collation(l), explicit_collation(r)) {
        (Some(a), Some(b)) if a != b => {
            return Err(SqlError::new(
                1267,
                "HY000",
                format!(
                    "Illegal mix of collations ({},EXPLICIT) and ({},EXPLICIT) for operation '{op}'",
                    a.name(),
                    b.name()
                ),
            ))
        }
        (Some(c), _) | (None, Some(c)) => CmpKind::Str(c),
        (None, None) => k,
    })
}

fn merge_kind(a: CmpKind, b: CmpKind) -> CmpKind {
    if a == b {
        a
    } else {
        match (a, b) {
            (CmpKind::Str(_), CmpKind::Str(c)) => CmpKind::Str(c),
            _ => CmpKind::Numeric,
        }
    }
}

/// A literal's value and kind: integers as BIGINT (UNSIGNED past i64),
/// with a point as DECIMAL, with an exponent as DOUBLE.
pub fn literal(v: &ast::Value) -> SqlResult<(Expr, Ty)> {
    Ok(match v {
        ast::Value::Placeholder(p) => return crate::prepared::param(p),
        ast::Value::Number(s, _) => {
            let s = s.to_string();
            if s.contains(['e', 'E']) {
                (
                    Expr::Const(Value::Double(s.parse().map_err(|_| SqlError::syntax(format!("'{s}'")))?)),
                    Ty::Double,
                )
            } else if s.contains('.') {
                let d = BigDecimal::from_str(&s).map_err(|_| SqlError::syntax(format!("'{s}'")))?;
                let scale = s.split('.').nth(1).map_or(0, |f| f.len()).min(38) as u8;
                (Expr::Const(Value::Decimal(d)), Ty::Decimal(scale))
            } else if let Ok(i) = s.parse::<i64>() {
                (Expr::Const(Value::Int(i)), Ty::Int)
            } else if let Ok(u) = s.parse::<u64>() {
                (Expr::Const(Value::UInt(u)), Ty::UInt)
            } else {
                let d = BigDecimal::from_str(&s).map_err(|_| SqlError::syntax(format!("'{s}'")))?;
                (Expr::Const(Value::Decimal(d)), Ty::Decimal(0))
            }
        }
        ast::Value::SingleQuotedString(s)
        | ast::Value::DoubleQuotedString(s)
        | ast::Value::NationalStringLiteral(s) => (Expr::Const(Value::str(s)), Ty::Str(default_coll())),
        ast::Value::HexStringLiteral(h) => {
            let bytes = hex_decode(h).ok_or_else(|| SqlError::syntax(format!("'X'{h}''")))?;
            (Expr::Const(Value::Str(bytes)), Ty::Str(Collation::Binary))
        }
        ast::Value::SingleQuotedByteStringLiteral(b) => {
            let mut n: u64 = 0;
            for c in b.chars() {
                n = n.checked_mul(2).ok_or_else(|| SqlError::syntax("b''"))? + (c == '1') as u64;
            }
            (Expr::Const(Value::UInt(n)), Ty::UInt)
        }
        ast::Value::Boolean(b) => (Expr::Const(Value::Int(*b as i64)), Ty::Int),
        ast::Value::Null => (Expr::Const(Value::Null), Ty::Null),
        other => return Err(SqlError::syntax(format!("'{other}'"))),
    })
}

pub fn hex_decode(h: &str) -> Option<Vec<u8>> {
    let h = if h.len() % 2 == 1 { format!("0{h}") } else { h.to_string() };
    (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok()).collect()
}

/// CAST targets from sqlparser's data types.
/// The number of values of a row constructor `(a, b, ..)`; `None` for a
/// scalar.
fn row_width(e: &ast::Expr) -> Option<usize> {
    match e {
        ast::Expr::Tuple(items) => Some(items.len()),
        ast::Expr::Nested(inner) => row_width(inner),
        _ => None,
    }
}

/// 4078 when one operand is a row and the other a scalar (MariaDB's type
/// check, before the widths are compared).
fn row_and_scalar(a: &[(Expr, Ty)], b: &[(Expr, Ty)], op: &str) -> Option<SqlError> {
    let name = |v: &[(Expr, Ty)]| match v {
        [(_, t)] => match t {
            Ty::Null => "null",
            Ty::Int => "int",
            Ty::UInt => "bigint unsigned",
            Ty::Decimal(_) => "decimal",
            Ty::Double => "double",
            Ty::Str(_) => "varchar",
            Ty::Temporal(TemporalKind::Date) => "date",
            Ty::Temporal(TemporalKind::DateTime) => "datetime",
            Ty::Temporal(TemporalKind::Time) => "time",
        },
        _ => "row",
    };
    let (x, y) = (name(a), name(b));
    ((x == "row") != (y == "row")).then(|| {
        SqlError::new(4078, "HY000", format!("Illegal parameter data types {x} and {y} for operation '{op}'"))
    })
}

/// A comparison of two rows of equal width (1241 otherwise), as MariaDB's
/// `compare_row`: `=` holds when every pair is equal (false as soon as
/// one pair differs, else NULL if a pair is unknown), `<>` is its
/// negation, `<=>` pairs with `<=>`, and `<`, `<=`, `>`, `>=` compare the
/// first pair that is not equal.
fn row_cmp(op: CmpOp, a: &[(Expr, Ty)], b: &[(Expr, Ty)]) -> SqlResult<Expr> {
    if a.len() != b.len() || a.is_empty() {
        return Err(SqlError::operand_columns(a.len().max(1)));
    }
    let pair = |op: CmpOp, i: usize| {
        let ((x, xt), (y, yt)) = (&a[i], &b[i]);
        Expr::Cmp(op, cmp_kind(*xt, *yt), Box::new(x.clone()), Box::new(y.clone()))
    };
    let all =
        |op: CmpOp| (1..a.len()).fold(pair(op, 0), |acc, i| Expr::And(Box::new(acc), Box::new(pair(op, i))));
    Ok(match op {
        CmpOp::Eq | CmpOp::NullSafeEq => all(op),
        CmpOp::Ne => Expr::Not(Box::new(all(CmpOp::Eq))),
        _ => {
            let strict = match op {
                CmpOp::Lt | CmpOp::Le => CmpOp::Lt,
                _ => CmpOp::Gt,
            };
            let last = a.len() - 1;
            (0..last).rev().fold(pair(op, last), |acc, i| {
                let tie = Expr::And(Box::new(pair(CmpOp::Eq, i)), Box::new(acc));
                Expr::Or(Box::new(pair(strict, i)), Box::new(tie))
            })
        }
    })
}

/// `DATE '...'`, `TIMESTAMP '...'`, `TIME '...'`: the text must be exactly
/// a value of that kind (a DATE without a time, a TIMESTAMP with one, a
/// real calendar date, no trailing characters, a TIME in range), else
/// 1525 as MariaDB says when it parses the statement. The fraction keeps
/// the digits written (up to 6).
fn typed_literal(text: &str, kind: TemporalKind) -> SqlResult<crate::value::Temporal> {
    use crate::temporal as tm;
    let p = match kind {
        TemporalKind::Time => tm::parse_ext(text.as_bytes(), kind),
        _ => tm::parse_datetime(text.as_bytes()),
    };
    match p {
        Some(p) if p.t.kind == kind && (!p.truncated || p.frac_only) => Ok(p.t),
        _ => {
            let name = match kind {
                TemporalKind::Date => "DATE",
                TemporalKind::DateTime => "DATETIME",
                TemporalKind::Time => "TIME",
            };
            Err(SqlError::incorrect_datetime_value(name, text))
        }
    }
}

/// The value `DEFAULT(col)` and `SET col = DEFAULT` give: the column's
/// DEFAULT converted to its type, 0 for AUTO_INCREMENT, NOW for
/// CURRENT_TIMESTAMP; 1364 when the column has none (MariaDB says so
/// when the statement is prepared, in any sql_mode, rows or not).
pub fn default_of(c: &ScopeCol) -> SqlResult<(Expr, Ty)> {
    use crate::catalog::{column_flags, DefaultSpec};
    if c.flags & column_flags::AUTO_INCREMENT != 0 {
        return Ok((Expr::Const(Value::Int(0)), Ty::Int));
    }
    let spec = match &c.default {
        None | Some(DefaultSpec::None) => return Err(SqlError::no_default(&c.name)),
        Some(d) => d.clone(),
    };
    let ty = Ty::of(&c.ty);
    if spec == DefaultSpec::CurrentTimestamp {
        let fsp = match c.ty {
            crate::types::SqlType::Timestamp { fsp } | crate::types::SqlType::DateTime { fsp } => fsp,
            _ => 0,
        };
        let (now, _) = call("NOW", vec![(Expr::Const(Value::Int(fsp as i64)), Ty::Int)]);
        return Ok((now, ty));
    }
    let col = crate::catalog::Column {
        name: c.name.clone(),
        ty: c.ty.clone(),
        nullable: c.nullable,
        default: spec,
        auto_increment: false,
        on_update_now: false,
        comment: String::new(),
    };
    let v = crate::coerce::default_value(&col, None)?.unwrap_or(Value::Null);
    Ok((Expr::Const(v), ty))
}

pub fn cast_target(t: &ast::DataType) -> SqlResult<(Cast, Ty)> {
    use ast::DataType as D;
    let s = t.to_string().to_ascii_uppercase();
    Ok(match t {
        D::Signed | D::SignedInteger => (Cast::Signed, Ty::Int),
        D::Unsigned | D::UnsignedInteger => (Cast::Unsigned, Ty::UInt),
        D::Date => (Cast::Date, Ty::Temporal(TemporalKind::Date)),
        D::Datetime(p) => (Cast::DateTime(p.unwrap_or(0).min(6) as u8), Ty::Temporal(TemporalKind::DateTime)),
        D::Time(p, _) => (Cast::Time(p.unwrap_or(0).min(6) as u8), Ty::Temporal(TemporalKind::Time)),
        D::Double(_) | D::DoublePrecision | D::Float(_) | D::Real => (Cast::Double, Ty::Double),
        D::Binary(_) => (Cast::Char(Collation::Binary), Ty::Str(Collation::Binary)),
        D::Char(_) | D::Character(_) | D::Varchar(_) | D::Nvarchar(_) | D::Text => {
            (Cast::Char(default_coll()), Ty::Str(default_coll()))
        }
        D::Decimal(info) | D::Numeric(info) | D::Dec(info) => {
            let (p, sc) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p as u8, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p as u8, *s as u8),
            };
            (Cast::Decimal(p.clamp(1, 65), sc.min(30)), Ty::Decimal(sc))
        }
        D::Int(_) | D::Integer(_) | D::BigInt(_) => (Cast::Signed, Ty::Int),
        _ if s.starts_with("SIGNED") => (Cast::Signed, Ty::Int),
        _ if s.starts_with("UNSIGNED") => (Cast::Unsigned, Ty::UInt),
        _ => return Err(SqlError::syntax(format!("'{s})'"))),
    })
}
