//! SELECT: access paths, filtering, grouping, ordering, projection.
//!
//! The first slice runs every query the same way: each table in FROM is
//! read through one access path (a point read or a range of its primary
//! key when WHERE pins the key's leading columns, else a full scan), the
//! tables are joined by nested loops, then WHERE filters, GROUP BY
//! aggregates (in memory), HAVING, DISTINCT, ORDER BY (in memory) and
//! LIMIT apply.

use std::cmp::Ordering;
use std::sync::Arc;

use fractaldb::Txn;
use sqlparser::ast;

use crate::bind::{AggSpec, Binder};
use crate::error::{SqlError, SqlResult, Warning};
use crate::expr::{AggFn, CmpKind, Expr, ScopeCol, Ty};
use crate::session::{ColumnMeta, ResultSet, Session};
use crate::table::Table;
use crate::value::Value;

/// A table in FROM, with the alias its columns are reached by.
pub struct Source {
    pub table: Arc<Table>,
    pub alias: String,
    /// Its USE / FORCE / IGNORE INDEX hints (`plan::hints_of`).
    pub hints: crate::plan::Hints,
}

/// What a FROM item reads: an engine table, or rows given whole (an
/// INFORMATION_SCHEMA view, built when the query starts).
pub(crate) enum Rel {
    Table(Source),
    Rows { alias: String, view: crate::infoschema::Virtual },
}

impl Rel {
    pub(crate) fn alias(&self) -> &str {
        match self {
            Rel::Table(s) => &s.alias,
            Rel::Rows { alias, .. } => alias,
        }
    }

    pub(crate) fn width(&self) -> usize {
        match self {
            Rel::Table(s) => s.table.def.columns.len(),
            Rel::Rows { view, .. } => view.cols.len(),
        }
    }

    /// Column `i`'s name and type.
    pub(crate) fn col(&self, i: usize) -> crate::infoschema::VCol {
        match self {
            Rel::Table(s) => {
                let c = &s.table.def.columns[i];
                crate::infoschema::VCol { name: c.name.clone(), ty: c.ty.clone(), nullable: c.nullable }
            }
            Rel::Rows { view, .. } => view.cols[i].clone(),
        }
    }
}

/// The database and table a name means (the current database when it
/// names none).
fn split_name(s: &Session, name: &ast::ObjectName) -> SqlResult<(String, String)> {
    let parts = crate::expr::ident_name(name);
    match parts.as_slice() {
        [t] => Ok((s.db.clone().ok_or_else(SqlError::no_db)?, t.clone())),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::syntax(format!("'{name}'"))),
    }
}

pub fn resolve_table(s: &Session, name: &ast::ObjectName) -> SqlResult<Arc<Table>> {
    let (db, t) = split_name(s, name)?;
    if crate::infoschema::is_schema(&db) {
        // Its views are read-only: only SELECT reads them (see `add_source`).
        return Err(SqlError::new(
            1044,
            "42000",
            format!("Access denied for user 'root'@'localhost' to database '{}'", crate::infoschema::SCHEMA),
        ));
    }
    // A Sequence table is found by FROM (`add_source`); anything else
    // would change it.
    crate::seqengine::writable(s.inner.table(&db, &t), &db, &t)
}

pub(crate) fn rel_scope(rels: &[Rel]) -> Vec<ScopeCol> {
    let mut v = Vec::new();
    for r in rels {
        match r {
            Rel::Table(s) => v.extend(scope_of(std::slice::from_ref(s))),
            Rel::Rows { alias, view } => v.extend(view.cols.iter().map(|c| ScopeCol {
                table: alias.clone(),
                name: c.name.clone(),
                db: crate::infoschema::SCHEMA.to_string(),
                org_table: view.name.clone(),
                ty: c.ty.clone(),
                nullable: c.nullable,
                hidden: false,
                flags: 0,
                default: None,
            })),
        }
    }
    v
}

pub fn scope_of(sources: &[Source]) -> Vec<ScopeCol> {
    let mut v = Vec::new();
    for s in sources {
        v.extend(crate::expr::table_scope(&s.table.def, &s.alias));
    }
    v
}

/// Runs a query and returns its rows.
pub fn select(s: &mut Session, txn: &Txn, q: &ast::Query, locking: bool) -> SqlResult<ResultSet> {
    select_to(s, txn, q, locking, None)
}

/// Runs a query; a plain SELECT's rows go to `sink` as they are made when
/// one is given (the returned set then has the columns and no rows), any
/// other query's are returned (see `RowSink`).
pub fn select_to(
    s: &mut Session,
    txn: &Txn,
    q: &ast::Query,
    locking: bool,
    sink: Option<&mut dyn crate::session::RowSink>,
) -> SqlResult<ResultSet> {
    let _ = locking;
    if q.with.is_some() {
        return crate::cte::select_with(s, txn, q, locking);
    }
    let sel = match q.body.as_ref() {
        ast::SetExpr::Select(sel) => sel,
        ast::SetExpr::Query(inner) => return select_to(s, txn, inner, locking, sink),
        ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
            return union(s, txn, q, left, *op, *set_quantifier, right);
        }
        _ => return Err(SqlError::unsupported("this query form")),
    };
    crate::window::check_named(&sel.named_window)?;
    let mut from = {
        let mut add = |f: &ast::TableFactor, out: &mut Vec<Rel>| add_source(s, txn, f, out);
        crate::join::From::build(&sel.from, &mut add)?
    };
    let mut scope = rel_scope(&from.rels);
    from.apply_hidden(&mut scope);
    let scope = scope;
    // LIMIT's values first: the closures below borrow the session.
    let (limit, offset) = limits(s, &q.limit_clause)?;
    let sysvar = |n: &str| s.sysvar(n);
    let outer_scope = s.outer_scope.clone();
    // Subqueries run in child sessions of this one (same transaction,
    // connection, variables, CTEs and kill flag).
    // Made only when a subquery runs: most queries have none, and a child
    // copies the session's variables.
    let proto: std::cell::OnceCell<Session> = std::cell::OnceCell::new();
    let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
        // Uncorrelated subqueries run once, while the query binds.
        let mut sub = proto.get_or_init(|| s.child()).child();
        select(&mut sub, txn, q, false).map(|rs| rs.rows)
    };
    from.bind_on(&mut |e| {
        Ok(Binder::plain(&scope, &sysvar, &mut subq, "on clause").with_outer(&outer_scope).bind(e)?.0)
    })?;
    // WHERE.
    let filter = match &sel.selection {
        Some(w) => Some(
            Binder::plain(&scope, &sysvar, &mut subq, "where clause").with_outer(&outer_scope).bind(w)?.0,
        ),
        None => None,
    };
    // Correlated subqueries run per row in a session that sees this
    // query's columns, then the enclosing queries'.
    let corr_scope: Vec<ScopeCol> = scope.iter().chain(outer_scope.iter()).cloned().collect();
    let outer_row = s.outer_row.clone();
    let width = scope.len();
    let proto2: std::cell::OnceCell<Session> = std::cell::OnceCell::new();
    let mut runner = |q: &ast::Query, row: &[Value]| -> SqlResult<Vec<Vec<Value>>> {
        let mut sub = proto2.get_or_init(|| s.child()).child();
        sub.outer_scope = corr_scope.clone();
        sub.outer_row = row.iter().take(width).cloned().collect();
        sub.outer_row.resize(width, Value::Null);
        sub.outer_row.extend(outer_row.iter().cloned());
        select(&mut sub, txn, q, false).map(|rs| rs.rows)
    };
    let sources = &from.rels;
    // The select list, GROUP BY, HAVING, ORDER BY, with aggregates.
    let n = scope.len();
    let mut aggs: Vec<AggSpec> = Vec::new();
    let mut items: Vec<(Expr, Ty, ColumnMeta)> = Vec::new();
    for item in &sel.projection {
        match item {
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                let only = match item {
                    ast::SelectItem::QualifiedWildcard(
                        ast::SelectItemQualifiedWildcardKind::ObjectName(o),
                        _,
                    ) => crate::expr::ident_name(o).last().cloned(),
                    _ => None,
                };
                if sources.is_empty() {
                    return Err(SqlError::new(1096, "HY000", "No tables used"));
                }
                let cols: Vec<usize> = match &only {
                    // `t.*`: all of t's columns, a USING join's copy too.
                    Some(t) => {
                        let v: Vec<usize> = (0..scope.len()).filter(|&i| scope[i].table == *t).collect();
                        if v.is_empty() {
                            return Err(SqlError::unknown_table(s.db.as_deref().unwrap_or(""), t));
                        }
                        v
                    }
                    None => from.star.clone(),
                };
                for i in cols {
                    let c = &scope[i];
                    items.push((Expr::Col(i), Ty::of(&c.ty), col_meta(c, &c.name)));
                }
            }
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                let mut b = Binder {
                    scope: &scope,
                    aggs: Some(&mut aggs),
                    agg_base: n,
                    sysvar: &sysvar,
                    subquery: &mut subq,
                    aliases: &[],
                    insert_cols: &[],
                    place: "field list",
                    outer: &outer_scope,
                    windows: &sel.named_window,
                    defaults: &[],
                    where_top: false,
                };
                let (x, t) = b.bind(e)?;
                let name = match item {
                    ast::SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                    _ => expr_name(e),
                };
                let meta = match &x {
                    Expr::Col(i) if *i < n => {
                        let mut m = col_meta(&scope[*i], &name);
                        m.name = name;
                        m
                    }
                    _ => ColumnMeta::expr(name, t.sql_type()),
                };
                items.push((x, t, meta));
            }
            ast::SelectItem::ExprWithAliases { .. } => return Err(SqlError::syntax("'AS ('")),
        }
    }
    let aliases: Vec<(String, Expr, Ty)> =
        items.iter().map(|(e, t, m)| (m.name.clone(), e.clone(), *t)).collect();
    let mut rollup = false;
    let group_exprs: Vec<ast::Expr> = match &sel.group_by {
        ast::GroupByExpr::Expressions(v, mods) => {
            for m in mods {
                match m {
                    ast::GroupByWithModifier::Rollup => rollup = true,
                    other => return Err(SqlError::unsupported(format!("GROUP BY {other}"))),
                }
            }
            v.clone()
        }
        ast::GroupByExpr::All(_) => return Err(SqlError::syntax("'ALL'")),
    };
    let mut groups = Vec::new();
    for g in &group_exprs {
        groups.push(bind_item_ref(
            g,
            &items,
            &scope,
            &aliases,
            &sysvar,
            &mut subq,
            &mut None,
            n,
            "group statement",
            &outer_scope,
            &sel.named_window,
        )?);
    }
    let having = match &sel.having {
        Some(h) => {
            let mut b = Binder {
                scope: &scope,
                aggs: Some(&mut aggs),
                agg_base: n,
                sysvar: &sysvar,
                subquery: &mut subq,
                aliases: &aliases,
                insert_cols: &[],
                place: "having clause",
                outer: &outer_scope,
                windows: &sel.named_window,
                defaults: &[],
                where_top: false,
            };
            let (h, _) = b.bind(h)?;
            // HAVING sees the select list, the GROUP BY columns and
            // aggregates (bound above as columns past `n`); any other
            // column of the tables is unknown there, as in MariaDB.
            let mut stray = None;
            h.walk(&mut |x| {
                if let Expr::Col(i) = x {
                    let seen = |e: &Expr| matches!(e, Expr::Col(j) if j == i);
                    if *i < n
                        && stray.is_none()
                        && !items.iter().any(|it| seen(&it.0))
                        && !groups.iter().any(|g| seen(&g.0))
                    {
                        stray = Some(*i);
                    }
                }
            });
            if let Some(i) = stray {
                return Err(SqlError::unknown_column(&scope[i].name, "having clause"));
            }
            Some(h)
        }
        None => None,
    };
    let mut order: Vec<(Expr, Ty, bool)> = Vec::new();
    if let Some(ob) = &q.order_by {
        if let ast::OrderByKind::Expressions(list) = &ob.kind {
            for o in list {
                let mut ag = Some(&mut aggs);
                let (e, t) = bind_item_ref(
                    &o.expr,
                    &items,
                    &scope,
                    &aliases,
                    &sysvar,
                    &mut subq,
                    &mut ag,
                    n,
                    "order clause",
                    &outer_scope,
                    &sel.named_window,
                )
                .map(|e| (e.0, e.1))?;
                order.push((e, t, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
            }
        }
    }
    let windows = aggs.iter().any(AggSpec::is_window);
    let grouped = aggs.iter().any(|a| !a.is_window()) || !groups.is_empty();
    // GROUP BY plain columns (of the one table, whose columns come first):
    // an index on them may hand out the rows group by group.
    let group_cols: Vec<usize> = groups
        .iter()
        .map(|(e, _)| match e {
            Expr::Col(c) => Some(*c),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()
        .unwrap_or_default();
    // ORDER BY a prefix of the primary key, all one way: the primary key's
    // order serves it (read backwards when it is the other way round), so
    // with LIMIT the read stops early instead of reading and sorting all.
    // ORDER BY plain columns of the one table: an index's order may serve
    // it (see `plan::ordered`), so with LIMIT the read stops early instead
    // of reading and sorting all.
    let order_cols: Option<Vec<(usize, bool)>> = match &sources[..] {
        [Rel::Table(_)]
            if !order.is_empty() && !grouped && !windows && having.is_none() && sel.distinct.is_none() =>
        {
            order
                .iter()
                .map(|(e, _, desc)| match e {
                    Expr::Col(c) => Some((*c, *desc)),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    };
    // LIMIT without ORDER BY (or with one an index may serve), grouping
    // or DISTINCT: stop reading early.
    let stop_after = match limit {
        Some(l)
            if from.single()
                && !grouped
                && !windows
                && (order.is_empty() || order_cols.is_some())
                && having.is_none()
                && sel.distinct.is_none() =>
        {
            Some(l.saturating_add(offset))
        }
        _ => None,
    };

    // Read the rows. SELECT COUNT(*) FROM t alone reads the exact count
    // the table keeps, not the rows.
    let mut warnings: Vec<Warning> = Vec::new();
    let count_only = from.single()
        && matches!(sources[0], Rel::Table(_))
        && sel.selection.is_none()
        && groups.is_empty()
        && !aggs.is_empty()
        && aggs.iter().all(|a| a.func == AggFn::CountStar && !a.distinct && !a.is_window());
    let count = match &sources[..] {
        [Rel::Table(t)] if count_only => Some(t.table.row_count_settled(txn, &s.inner.env)?),
        _ => None,
    };
    // The columns of each table the query reads (`None`: all of them, a
    // correlated subquery or a window reading the row): an index whose
    // entries hold them all is read alone (`plan::covers`).
    let needed: Vec<Option<Vec<bool>>> = {
        let mut out: Vec<Option<Vec<bool>>> = Vec::new();
        let mut ok = !windows;
        let on = from.on_conds();
        let exprs: Vec<&Expr> = filter
            .iter()
            .chain(on.iter().copied())
            .chain(items.iter().map(|i| &i.0))
            .chain(groups.iter().map(|g| &g.0))
            .chain(having.iter())
            .chain(order.iter().map(|o| &o.0))
            .chain(aggs.iter().filter_map(|a| a.arg.as_ref()))
            .collect();
        let mut off = 0;
        for r in sources {
            out.push(match r {
                Rel::Table(t) => {
                    let mut needed = vec![false; t.table.def.columns.len()];
                    for e in &exprs {
                        ok &= crate::plan::mark_columns(e, off, &mut needed);
                    }
                    Some(needed)
                }
                _ => None,
            });
            off += r.width();
        }
        if ok {
            out
        } else {
            vec![None; sources.len()]
        }
    };
    let needed_one = needed.first().cloned().flatten();
    if s.describing {
        return Ok(ResultSet { columns: items.iter().map(|i| i.2.clone()).collect(), rows: Vec::new() });
    }
    if s.explaining {
        return explain_plan(
            s,
            txn,
            &from,
            filter.as_ref(),
            ReadOrder {
                stop_after,
                order_cols: order_cols.as_deref(),
                needed: needed_one.as_deref(),
                group_cols: grouped.then_some(&group_cols[..]),
            },
            count_only,
            &needed,
        );
    }
    // GROUP BY folds rows in as they are read, spilling past its budget.
    let sort_cfg = crate::sort::SortCfg::of(s);
    let mut grouper = if grouped {
        Some(crate::group::Grouper::new(&groups, &aggs, rollup, crate::sort::SortCfg::of_tmp_table(s)))
    } else {
        None
    };
    // DISTINCT, ORDER BY and LIMIT take the projected rows one at a time
    // (`sort::Output`, spilling past sort_buffer_size). Without grouping,
    // window functions or HAVING, a single table's rows go there as they
    // are read, so the query never holds the table.
    let distinct = matches!(sel.distinct, Some(ast::Distinct::Distinct));
    // Streaming: each row to `sink`, the columns first (once, before the
    // first row or at the end).
    let mut sink = sink;
    let stream_cols: Vec<ColumnMeta> =
        if sink.is_some() { items.iter().map(|i| i.2.clone()).collect() } else { Vec::new() };
    let bits = bit_widths(&stream_cols);
    let streaming = sink.is_some();
    let mut begun = false;
    let mut send_row = |mut r: Vec<Value>| -> SqlResult<()> {
        let sink = sink.as_deref_mut().expect("sending only with a sink");
        if !begun {
            sink.columns(&stream_cols)?;
            begun = true;
        }
        bits_as_bytes(&mut r, &bits);
        sink.row(&r)
    };
    let mut output = crate::sort::Output::new(sort_cfg.clone(), !order.is_empty(), distinct, offset, limit);
    if streaming {
        output = output.sending(&mut send_row);
    }
    let order_kinds: Vec<(CmpKind, bool)> = order.iter().map(|(_, t, d)| (sort_kind(*t), *d)).collect();
    let mut emit = |r: &[Value], cx: &mut crate::expr::EvalCtx| -> SqlResult<()> {
        // DISTINCT adds two values to the row (`sort::Output::add`).
        let mut o = Vec::with_capacity(items.len() + if distinct { 2 } else { 0 });
        let mut dkey = Vec::new();
        for (e, t, _) in &items {
            let v = e.eval(r, cx)?;
            // An integer where the expression's type is DECIMAL(.., s)
            // (IFNULL(dec_col, -1)) prints with its s decimals, as MySQL's
            // result type makes it.
            let v = match (v, t) {
                (Value::Int(i), Ty::Decimal(sc)) => {
                    Value::Decimal(bigdecimal::BigDecimal::from(i).with_scale(*sc as i64))
                }
                (Value::UInt(u), Ty::Decimal(sc)) => {
                    Value::Decimal(bigdecimal::BigDecimal::from(u).with_scale(*sc as i64))
                }
                (v, _) => v,
            };
            if distinct {
                group_key(&v, *t, &mut dkey);
            }
            o.push(v);
        }
        let mut okey = Vec::new();
        for ((e, _, _), (kind, desc)) in order.iter().zip(&order_kinds) {
            // A plain column's key is made from the row's value in place,
            // not a copy of it (ORDER BY c on a long string, per row).
            match e {
                Expr::Col(i) if *i < r.len() => crate::sort::put_key(&r[*i], *kind, *desc, &mut okey),
                _ => crate::sort::put_key(&e.eval(r, cx)?, *kind, *desc, &mut okey),
            }
        }
        output.add(o, okey, dkey)
    };
    let stream = !grouped && !windows && having.is_none() && count.is_none();
    // Groups a single table's grouped read hands out as it goes (the
    // contiguous mode's closed groups, `group::Grouper::drain_done`),
    // already through HAVING, kept here only for window functions, which
    // need every row; without them they go straight to the output.
    let mut early: Vec<Vec<Value>> = Vec::new();
    let rows = if count.is_some() {
        Vec::new()
    } else {
        let mut cx = s.eval_ctx(&mut warnings);
        cx.sub = Some(&mut runner);
        match (&from.tree, &sources[..]) {
            (None, _) => {
                let keep = match &filter {
                    Some(f) => f.eval(&[], &mut cx)?.truth() == Some(true),
                    None => true,
                };
                if keep {
                    vec![Vec::new()]
                } else {
                    Vec::new()
                }
            }
            (Some(_), [Rel::Table(t)]) if from.single() && grouper.is_some() => {
                let g = grouper.as_mut().expect("checked");
                let killed = &s.killed;
                let access =
                    group_access(txn, t, filter.as_ref(), needed_one.as_deref(), &group_cols, &mut cx);
                let key_parts = crate::plan::group_key_parts(&t.table, &access, &group_cols);
                g.set_contiguous(key_parts.is_some());
                // A final group's row: through HAVING (unless `checked`
                // already), then out.
                let mut out_group =
                    |r: Vec<Value>, checked: bool, cx: &mut crate::expr::EvalCtx| -> SqlResult<()> {
                        if let Some(h) = having.as_ref().filter(|_| !checked) {
                            if h.eval(&r, cx)?.truth() != Some(true) {
                                return Ok(());
                            }
                        }
                        if windows {
                            early.push(r);
                            Ok(())
                        } else {
                            emit(&r, cx)
                        }
                    };
                match key_parts {
                    // Groups in key order and only rows counted: read runs
                    // of equal group key parts, not rows; each run is a
                    // whole group (`plan::for_each_key_run`; WITH ROLLUP's
                    // sums of groups go through the grouper).
                    Some(parts)
                        if filter.is_none()
                            && access.ranges.is_empty()
                            && !rollup
                            && g.counts_rows_only() =>
                    {
                        // HAVING that reads no column (HAVING COUNT(*) >
                        // 12) is checked on the count alone, before the
                        // group's row is decoded.
                        let having_first = having.as_ref().is_some_and(|h| {
                            let mut cols = vec![false; n];
                            crate::plan::mark_columns(h, 0, &mut cols) && !cols.contains(&true)
                        });
                        #[cfg(debug_assertions)]
                        let mut seen = std::collections::HashSet::new();
                        crate::plan::for_each_key_run(txn, &t.table, &access, parts, killed, |count, row| {
                            let count = i64::try_from(count).unwrap_or(i64::MAX);
                            let states = || aggs.iter().map(|_| AggState::Count(count)).collect::<Vec<_>>();
                            #[cfg(debug_assertions)]
                            {
                                // The planner's claim: no two runs are one group.
                                let r = row()?;
                                let mut key = Vec::new();
                                for (e, ty) in &groups {
                                    group_key(&e.eval(&r, &mut cx)?, *ty, &mut key);
                                }
                                assert!(seen.insert(key), "two key runs of one group");
                            }
                            if having_first {
                                let probe = group_row(vec![Value::Null; n], states(), &aggs, n);
                                let h = having.as_ref().expect("checked");
                                if h.eval(&probe, &mut cx)?.truth() != Some(true) {
                                    return Ok(false);
                                }
                            }
                            out_group(group_row(row()?, states(), &aggs, n), having_first, &mut cx)?;
                            Ok(true)
                        })?
                    }
                    _ => scan_each(txn, &t.table, &access, filter.as_ref(), &mut cx, killed, |row, cx| {
                        g.add(&row, cx)?;
                        for (_, (first, states)) in g.drain_done() {
                            out_group(group_row(first, states, &aggs, n), false, cx)?;
                        }
                        Ok(())
                    })?,
                }
                Vec::new()
            }
            (Some(_), [Rel::Table(t)]) if from.single() && stream => {
                let order = ReadOrder {
                    stop_after,
                    order_cols: order_cols.as_deref(),
                    needed: needed_one.as_deref(),
                    group_cols: None,
                };
                scan(txn, t, filter.as_ref(), 0, true, &mut cx, order, &mut |row, cx| emit(&row, cx))?;
                Vec::new()
            }
            (Some(_), [Rel::Table(t)]) if from.single() => {
                let order = ReadOrder {
                    stop_after,
                    order_cols: order_cols.as_deref(),
                    needed: needed_one.as_deref(),
                    group_cols: None,
                };
                let mut out = Vec::new();
                scan(txn, t, filter.as_ref(), 0, true, &mut cx, order, &mut |row, _| {
                    out.push(row);
                    Ok(())
                })?;
                out
            }
            (Some(_), [Rel::Rows { view, .. }]) if from.single() => {
                let mut out = Vec::new();
                for r in &view.rows {
                    if stop_after.is_some_and(|n| out.len() as u64 >= n) {
                        break;
                    }
                    if let Some(f) = filter.as_ref() {
                        if f.eval(r, &mut cx)?.truth() != Some(true) {
                            continue;
                        }
                    }
                    out.push(r.clone());
                }
                out
            }
            (Some(tree), _) => {
                let mut exec = crate::join::Exec::new(sources, txn, &mut cx, filter.as_ref(), &s.killed);
                exec.needed = needed;
                exec.run(tree)?
            }
        }
    };
    let mut cx = s.eval_ctx(&mut warnings);
    cx.sub = Some(&mut runner);
    // Group.
    let mut rows = if grouped {
        // Keyed by (level, the first `level` group keys): `level` is the
        // number of group expressions a row is grouped by; WITH ROLLUP adds
        // the super-aggregate levels below the full one.
        let k = groups.len();
        let mut g = grouper.take().expect("a grouped query has its grouper");
        for r in &rows {
            g.add(r, &mut cx)?;
        }
        let mut map = g.finish()?;
        if map.is_empty() && groups.is_empty() {
            let blank: Vec<Value> = vec![Value::Null; n];
            let mut states: Vec<AggState> = aggs.iter().map(AggState::new).collect();
            if let Some(c) = count {
                states = aggs.iter().map(|_| AggState::Count(c as i64)).collect();
            }
            map.push((Vec::new(), (blank, states)));
        }
        let mut out = Vec::new();
        let mut sort_keys = Vec::new();
        for (key, (first, states)) in map {
            if rollup {
                // Groups in order, each level's super-aggregate after the
                // groups it sums up.
                let level = key.first().copied().unwrap_or(0) as usize;
                let mut sk = Vec::with_capacity(k);
                for (i, (g, _)) in groups.iter().enumerate() {
                    sk.push(if i < level { Some(g.eval(&first, &mut cx)?) } else { None });
                }
                sort_keys.push(sk);
            }
            out.push(group_row(first, states, &aggs, n));
        }
        if rollup {
            let kinds: Vec<CmpKind> = groups.iter().map(|(_, t)| sort_kind(*t)).collect();
            let mut idx: Vec<usize> = (0..out.len()).collect();
            idx.sort_by(|&a, &b| {
                for (i, kind) in kinds.iter().enumerate() {
                    let o = match (&sort_keys[a][i], &sort_keys[b][i]) {
                        (Some(x), Some(y)) => sort_cmp(x, y, *kind),
                        (Some(_), None) => Ordering::Less,
                        (None, Some(_)) => Ordering::Greater,
                        (None, None) => Ordering::Equal,
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
            let mut slots: Vec<Option<Vec<Value>>> = out.into_iter().map(Some).collect();
            out = idx.into_iter().map(|i| slots[i].take().expect("each row once")).collect();
        }
        out
    } else {
        rows
    };
    if let Some(h) = &having {
        let mut kept = Vec::new();
        for r in rows {
            if h.eval(&r, &mut cx)?.truth() == Some(true) {
                kept.push(r);
            }
        }
        rows = kept;
    }
    if !early.is_empty() {
        // Handed out first: they come before the grouper's others.
        early.extend(rows);
        rows = early;
    }
    if windows {
        if !grouped {
            for r in rows.iter_mut() {
                r.resize(n + aggs.len(), Value::Null);
            }
        }
        crate::window::apply(&mut rows, &aggs, n, &mut cx, &sort_cfg)?;
    }
    for r in rows {
        emit(&r, &mut cx)?;
    }
    let mut rows = if streaming {
        output.finish_sent()?;
        Vec::new()
    } else {
        output.finish()?
    };
    s.warnings.extend(warnings);
    let columns: Vec<ColumnMeta> = items.into_iter().map(|i| i.2).collect();
    if let Some(sink) = sink.filter(|_| !begun) {
        sink.columns(&columns)?;
    }
    let bits = bit_widths(&columns);
    for r in rows.iter_mut() {
        bits_as_bytes(r, &bits);
    }
    Ok(ResultSet { columns, rows })
}

/// A finished group's output row: its first row's columns (the FROM
/// row's `n`; those a super-aggregate rolls up are NULL already), then
/// each aggregate's value.
fn group_row(mut first: Vec<Value>, states: Vec<AggState>, aggs: &[AggSpec], n: usize) -> Vec<Value> {
    first.truncate(n);
    first.resize(n, Value::Null);
    for (st, spec) in states.into_iter().zip(aggs) {
        first.push(st.finish(spec));
    }
    first
}

/// The BIT columns of a result and their widths in bytes.
fn bit_widths(columns: &[ColumnMeta]) -> Vec<(usize, usize)> {
    let width = |c: &ColumnMeta| match c.ty {
        crate::types::SqlType::Bit { bits } => Some((bits as usize).div_ceil(8)),
        _ => None,
    };
    columns.iter().enumerate().filter_map(|(i, c)| width(c).map(|w| (i, w))).collect()
}

/// A BIT column goes to the client as its bytes, big-endian, as MySQL
/// sends it.
fn bits_as_bytes(r: &mut [Value], bits: &[(usize, usize)]) {
    for &(i, width) in bits {
        if let Some(Value::UInt(u)) = r.get(i) {
            r[i] = Value::Str(u.to_be_bytes()[8 - width..].to_vec());
        }
    }
}

/// EXPLAIN's rows for a bound query (see `explain.rs`).
pub(crate) fn explain_plan(
    s: &Session,
    txn: &Txn,
    from: &crate::join::From,
    filter: Option<&Expr>,
    order: ReadOrder,
    count_only: bool,
    needed: &[Option<Vec<bool>>],
) -> SqlResult<ResultSet> {
    let ReadOrder { stop_after, order_cols, group_cols, .. } = order;
    let Some(tree) = &from.tree else {
        return Ok(crate::explain::no_tables("No tables used"));
    };
    let mut w = Vec::new();
    let mut cx = s.eval_ctx(&mut w);
    let mut conj = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut conj);
    }
    let steps = match &from.rels[..] {
        [Rel::Table(t)] if from.single() => {
            let needed = needed.first().and_then(|n| n.as_deref());
            let mut access = crate::plan::choose(txn, &t.table, &t.hints, &conj, 0, &mut cx, needed);
            if let Some(a) = order_cols
                .and_then(|o| crate::plan::ordered(txn, &t.table, &t.hints, &access, o, stop_after, needed))
            {
                access = a;
            }
            if let Some(a) = group_cols
                .and_then(|g| crate::plan::grouped_scan(txn, &t.table, &t.hints, &access, needed, g))
            {
                access = a;
            }
            crate::plan::set_covering(&t.table, &mut access, needed);
            let used = access.eq_parts + usize::from(access.has_range);
            vec![crate::join::Step {
                rel: 0,
                filtered: conj.len() > used,
                access: Some(access),
                probe: None,
                hashed: false,
                joined: false,
            }]
        }
        _ => {
            let killed = std::sync::atomic::AtomicBool::new(false);
            let mut exec = crate::join::Exec::new(&from.rels, txn, &mut cx, filter, &killed);
            exec.needed = needed.to_vec();
            exec.explain(tree)
        }
    };
    let mut all = conj.clone();
    all.extend(from.on_conds());
    crate::explain::plan(txn, &from.rels, &steps, &all, count_only, needed)
}

/// `left UNION|INTERSECT|EXCEPT [ALL|DISTINCT] right`, then the query's ORDER BY (by
/// position or by the first SELECT's column names) and LIMIT.
fn union(
    s: &mut Session,
    txn: &Txn,
    q: &ast::Query,
    left: &ast::SetExpr,
    op: ast::SetOperator,
    quantifier: ast::SetQuantifier,
    right: &ast::SetExpr,
) -> SqlResult<ResultSet> {
    if !matches!(op, ast::SetOperator::Union | ast::SetOperator::Intersect | ast::SetOperator::Except) {
        return Err(SqlError::unsupported(format!("{op}")));
    }
    let side = |body: &ast::SetExpr| {
        let mut sub = q.clone();
        sub.body = Box::new(body.clone());
        sub.order_by = None;
        sub.limit_clause = None;
        sub.with = None;
        sub
    };
    let a = select(s, txn, &side(left), false)?;
    let b = select(s, txn, &side(right), false)?;
    if a.columns.len() != b.columns.len() {
        return Err(SqlError::union_columns());
    }
    // Each column's kind covers both sides (a number and a string make a string).
    let tys: Vec<Ty> = a
        .columns
        .iter()
        .zip(&b.columns)
        .map(|(x, y)| crate::bind::merge_ty(Ty::of(&x.ty), Ty::of(&y.ty)))
        .collect();
    let all = matches!(quantifier, ast::SetQuantifier::All);
    let key = |r: &[Value]| {
        let mut k = Vec::new();
        for (v, t) in r.iter().zip(&tys) {
            group_key(v, *t, &mut k);
        }
        k
    };
    let rows = match op {
        ast::SetOperator::Union => {
            let mut rows = a.rows;
            rows.extend(b.rows);
            rows
        }
        _ => {
            // How many times each right row occurs; INTERSECT keeps a left
            // row while the right still has a copy (ALL) or once if any
            // (DISTINCT); EXCEPT keeps it while the right has none left.
            let mut right: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
            for r in &b.rows {
                *right.entry(key(r)).or_default() += 1;
            }
            let intersect = op == ast::SetOperator::Intersect;
            let mut rows = Vec::new();
            for r in a.rows {
                let k = key(&r);
                let left = right.get_mut(&k);
                let present = left.as_ref().is_some_and(|c| **c > 0);
                if all {
                    if let Some(c) = left {
                        if *c > 0 {
                            *c -= 1;
                        }
                    }
                }
                if present == intersect {
                    rows.push(r);
                }
            }
            rows
        }
    };
    // The result's columns are the scope ORDER BY binds over.
    let scope: Vec<ScopeCol> = a
        .columns
        .iter()
        .zip(&tys)
        .map(|(c, t)| ScopeCol {
            table: String::new(),
            name: c.name.clone(),
            db: String::new(),
            org_table: String::new(),
            ty: if Ty::of(&c.ty) == *t { c.ty.clone() } else { t.sql_type() },
            nullable: true,
            hidden: false,
            flags: 0,
            default: None,
        })
        .collect();
    let mut keys = Vec::new();
    if let Some(ob) = &q.order_by {
        if let ast::OrderByKind::Expressions(list) = &ob.kind {
            let sysvar = |n: &str| s.sysvar(n);
            let mut no_sub = |_q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
                Err(SqlError::unsupported("subqueries in a UNION's ORDER BY"))
            };
            for o in list {
                let e = match &o.expr {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => {
                            let pos: usize = n.to_string().parse().unwrap_or(0);
                            if pos < 1 || pos > scope.len() {
                                return Err(SqlError::unknown_position(pos as i64, "order clause"));
                            }
                            (Expr::Col(pos - 1), tys[pos - 1])
                        }
                        _ => Binder::plain(&scope, &sysvar, &mut no_sub, "order clause").bind(&o.expr)?,
                    },
                    other => Binder::plain(&scope, &sysvar, &mut no_sub, "order clause").bind(other)?,
                };
                keys.push((e.0, (sort_kind(e.1), matches!(o.options.sort, Some(ast::OrderBySort::Desc)))));
            }
        }
    }
    // DISTINCT (the first of equal rows stays), ORDER BY, LIMIT: the
    // external sort, as a SELECT's.
    let (limit, offset) = limits(s, &q.limit_clause)?;
    let mut output =
        crate::sort::Output::new(crate::sort::SortCfg::of(s), !keys.is_empty(), !all, offset, limit);
    let mut w = Vec::new();
    {
        let mut cx = s.eval_ctx(&mut w);
        for r in rows {
            let mut okey = Vec::new();
            for (e, (kind, desc)) in &keys {
                crate::sort::put_key(&e.eval(&r, &mut cx)?, *kind, *desc, &mut okey);
            }
            let dkey = if all { Vec::new() } else { key(&r) };
            output.add(r, okey, dkey)?;
        }
    }
    Ok(ResultSet { columns: a.columns, rows: output.finish()? })
}

#[allow(clippy::too_many_arguments)]
fn bind_item_ref(
    e: &ast::Expr,
    items: &[(Expr, Ty, ColumnMeta)],
    scope: &[ScopeCol],
    aliases: &[(String, Expr, Ty)],
    sysvar: &dyn Fn(&str) -> SqlResult<Value>,
    subq: &mut dyn FnMut(&ast::Query) -> SqlResult<Vec<Vec<Value>>>,
    aggs: &mut Option<&mut Vec<AggSpec>>,
    n: usize,
    place: &'static str,
    outer: &[ScopeCol],
    windows: &[ast::NamedWindowDefinition],
) -> SqlResult<(Expr, Ty)> {
    // ORDER BY 2 / GROUP BY 1: a position in the select list.
    if let ast::Expr::Value(v) = e {
        if let ast::Value::Number(num, _) = &v.value {
            let pos: i64 = num.to_string().parse().unwrap_or(0);
            if pos < 1 || pos as usize > items.len() {
                return Err(SqlError::unknown_position(pos, place));
            }
            let (x, t, _) = &items[pos as usize - 1];
            return Ok((x.clone(), *t));
        }
    }
    // A bare name that is a select-list alias and not a column.
    if let ast::Expr::Identifier(id) = e {
        let is_col = scope.iter().any(|c| c.name.eq_ignore_ascii_case(&id.value));
        if !is_col {
            if let Some((_, x, t)) = aliases.iter().find(|(a, _, _)| a.eq_ignore_ascii_case(&id.value)) {
                return Ok((x.clone(), *t));
            }
        }
    }
    let mut b = Binder {
        scope,
        aggs: aggs.as_deref_mut(),
        agg_base: n,
        sysvar,
        subquery: subq,
        aliases,
        insert_cols: &[],
        place,
        outer,
        windows,
        defaults: &[],
        where_top: false,
    };
    b.bind(e)
}

fn add_source(s: &Session, txn: &Txn, f: &ast::TableFactor, out: &mut Vec<Rel>) -> SqlResult<()> {
    add_source_as(s, txn, f, out, true)
}

/// `add_source`; `check_select`: SELECT on a named table or view is
/// checked here (multi-table UPDATE/DELETE check their targets for UPDATE
/// or DELETE instead, and SELECT on the others).
pub(crate) fn add_source_as(
    s: &Session,
    txn: &Txn,
    f: &ast::TableFactor,
    out: &mut Vec<Rel>,
    check_select: bool,
) -> SqlResult<()> {
    match f {
        ast::TableFactor::Table { name, alias, index_directives, .. } => {
            let parts = crate::expr::ident_name(name);
            if parts.len() == 1 && parts[0].eq_ignore_ascii_case("dual") {
                return Ok(());
            }
            if let (Some(view), [n]) =
                (parts.first().and_then(|n| crate::cte::lookup(s, n)), parts.as_slice())
            {
                let alias = alias.as_ref().map_or(n.clone(), |a| a.name.value.clone());
                if out.iter().any(|o| o.alias() == alias) {
                    return Err(SqlError::nonunique_table(&alias));
                }
                out.push(Rel::Rows { alias, view: (*view).clone() });
                return Ok(());
            }
            let (db, t) = split_name(s, name)?;
            // A subquery of a multi-table DELETE reading one of its targets
            // (MariaDB's 1093; derived tables are materialized first and
            // may: see the Derived arm).
            if let Some((.., alias)) = s.delete_targets.iter().find(|(d, n, _)| *d == db && *n == t) {
                return Err(SqlError::new(
                    1093,
                    "HY000",
                    format!(
                        "Table '{alias}' is specified twice, both as a target for 'DELETE' and as a separate source for data"
                    ),
                ));
            }
            // The one place FROM names a table or view: SELECT is checked
            // here (a view's own tables are not: it reads them as its
            // definer). A superuser's check is one comparison.
            if s.login.is_some() && check_select {
                s.check_table("SELECT", &db, &t)?;
            }
            let rel = if crate::infoschema::is_schema(&db) {
                let view = crate::infoschema::rows(s, txn, &t)?;
                let alias = alias.as_ref().map_or(t, |a| a.name.value.clone());
                Rel::Rows { alias, view }
            } else if let Some(view) = match crate::seqengine::parse(&t) {
                // A Sequence table, when no table or view has its name.
                Some(_)
                    if s.inner.table(&db, &t).is_err()
                        && crate::views::lookup(s, txn, &db, &t)?.is_none() =>
                {
                    crate::seqengine::rows(&t)?
                }
                _ => None,
            } {
                let alias = alias.as_ref().map_or(t, |a| a.name.value.clone());
                Rel::Rows { alias, view }
            } else if let Some(def) = match resolve_table(s, name) {
                Err(e) if e.code == 1146 || e.code == 1031 => {
                    Some(crate::views::lookup(s, txn, &db, &t)?.ok_or(e)?)
                }
                Err(e) => return Err(e),
                Ok(_) => None,
            } {
                // A view: its rows, read as a derived table.
                let view = crate::views::materialize(s, txn, &def)?;
                let alias = alias.as_ref().map_or(t, |a| a.name.value.clone());
                Rel::Rows { alias, view }
            } else {
                let table = resolve_table(s, name)?;
                let alias =
                    alias.as_ref().map(|a| a.name.value.clone()).unwrap_or_else(|| table.def.name.clone());
                let hints = crate::plan::hints_of(&table, &alias, index_directives)?;
                Rel::Table(Source { table, alias, hints })
            };
            if out.iter().any(|o| o.alias() == rel.alias()) {
                return Err(SqlError::nonunique_table(rel.alias()));
            }
            out.push(rel);
            Ok(())
        }
        ast::TableFactor::Derived { subquery, alias, lateral: false, .. } => {
            let alias = alias
                .as_ref()
                .map(|a| a.name.value.clone())
                .ok_or_else(|| SqlError::new(1248, "42000", "Every derived table must have its own alias"))?;
            // Materialized first, in the same transaction (not correlated).
            let mut sub = s.child();
            sub.delete_targets.clear();
            let rs = select(&mut sub, txn, subquery, false)?;
            let cols = rs
                .columns
                .iter()
                .map(|c| crate::infoschema::VCol { name: c.name.clone(), ty: c.ty.clone(), nullable: true })
                .collect();
            if out.iter().any(|o| o.alias() == alias) {
                return Err(SqlError::nonunique_table(&alias));
            }
            let view = crate::infoschema::Virtual { name: alias.clone(), cols, rows: rs.rows };
            out.push(Rel::Rows { alias, view });
            Ok(())
        }
        _ => Err(SqlError::unsupported("this table expression")),
    }
}

fn col_meta(c: &ScopeCol, name: &str) -> ColumnMeta {
    ColumnMeta {
        name: name.to_string(),
        org_name: c.name.clone(),
        table: c.table.clone(),
        org_table: c.org_table.clone(),
        db: c.db.clone(),
        ty: c.ty.clone(),
        nullable: c.nullable,
        flags: c.flags,
    }
}

/// The name of an unaliased select item that `lex` did not name from the
/// client's text: a column's name, else the item printed from the AST.
pub fn expr_name(e: &ast::Expr) -> String {
    match e {
        // `(a)` and `+a` are named `a`, as in MariaDB.
        ast::Expr::Nested(x) | ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr: x }
            if matches!(peel(x), ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)) =>
        {
            expr_name(peel(x))
        }
        ast::Expr::Identifier(i) => i.value.clone(),
        // `@@global.x` is named as written, as MariaDB does.
        ast::Expr::CompoundIdentifier(p) if p.first().is_some_and(|i| i.value.starts_with("@@")) => {
            p.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
        }
        ast::Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                s.trim_start().to_string()
            }
            ast::Value::Null => "NULL".into(),
            other => other.to_string(),
        },
        other => {
            let mut name = other.to_string();
            // Compound INTERVAL units are named as written (see
            // lex::rewrite_interval_units for how sqlparser reads them).
            if name.contains("INTERVAL") && name.contains(" TO ") {
                for (from, to) in [
                    ("MICROSECOND TO SECOND", "SECOND_MICROSECOND"),
                    ("YEAR TO MONTH", "YEAR_MONTH"),
                    ("DAY TO HOUR", "DAY_HOUR"),
                    ("DAY TO MINUTE", "DAY_MINUTE"),
                    ("DAY TO SECOND", "DAY_SECOND"),
                    ("DAY TO MICROSECOND", "DAY_MICROSECOND"),
                    ("HOUR TO MINUTE", "HOUR_MINUTE"),
                    ("HOUR TO SECOND", "HOUR_SECOND"),
                    ("HOUR TO MICROSECOND", "HOUR_MICROSECOND"),
                    ("MINUTE TO SECOND", "MINUTE_SECOND"),
                    ("MINUTE TO MICROSECOND", "MINUTE_MICROSECOND"),
                ] {
                    name = name.replace(from, to);
                }
            }
            name
        }
    }
}

/// The expression inside any parentheses and unary pluses.
fn peel(mut e: &ast::Expr) -> &ast::Expr {
    loop {
        match e {
            ast::Expr::Nested(x) | ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr: x } => e = x,
            _ => return e,
        }
    }
}

pub fn limits(s: &mut Session, l: &Option<ast::LimitClause>) -> SqlResult<(Option<u64>, u64)> {
    let mut num = |e: &ast::Expr| -> SqlResult<u64> {
        match s.eval_const(e)? {
            Value::Int(i) if i >= 0 => Ok(i as u64),
            Value::UInt(u) => Ok(u),
            _ => Err(SqlError::syntax(format!("'{e}'"))),
        }
    };
    Ok(match l {
        None => (None, 0),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
            let lim = match limit {
                Some(e) => Some(num(e)?),
                None => None,
            };
            let off = match offset {
                Some(o) => num(&o.value)?,
                None => 0,
            };
            (lim, off)
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(num(limit)?), num(offset)?),
    })
}

/// Reads table `t` through `access` (`group_access`), calling `f`
/// with each row that passes `filter`, without holding the rows (GROUP BY's
/// streaming input). Stops with 1317 when the statement is killed.
fn scan_each(
    txn: &Txn,
    t: &Table,
    access: &crate::plan::Access,
    filter: Option<&Expr>,
    cx: &mut crate::expr::EvalCtx,
    killed: &std::sync::atomic::AtomicBool,
    mut f: impl FnMut(Vec<Value>, &mut crate::expr::EvalCtx) -> SqlResult<()>,
) -> SqlResult<()> {
    let mut poll = crate::progress::KillPoll::new(killed);
    crate::plan::for_each_row(txn, t, access, |_, row| {
        poll.row()?;
        if let Some(p) = filter {
            if p.eval(&row, cx)?.truth() != Some(true) {
                return Ok(true);
            }
        }
        f(row, cx)?;
        Ok(true)
    })
}

/// The access path of a GROUP BY over one table: the cheapest for WHERE
/// (`plan::choose`), or for a full scan a covering index read whole
/// (`plan::grouped_scan`), preferring one whose order hands out the groups.
fn group_access(
    txn: &Txn,
    src: &Source,
    filter: Option<&Expr>,
    needed: Option<&[bool]>,
    group_cols: &[usize],
    cx: &mut crate::expr::EvalCtx,
) -> crate::plan::Access {
    let mut conj = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut conj);
    }
    let t = &src.table;
    let access = crate::plan::choose(txn, t, &src.hints, &conj, 0, cx, needed);
    let mut access =
        crate::plan::grouped_scan(txn, t, &src.hints, &access, needed, group_cols).unwrap_or(access);
    access.needed = needed.map(<[bool]>::to_vec);
    access
}

/// How a scan may end early: after `stop_after` rows passing the filter,
/// when an index's order serves the query's ORDER BY on these columns
/// (`order_cols`, with DESC flags), or there is none.
#[derive(Clone, Copy, Default)]
pub(crate) struct ReadOrder<'o> {
    stop_after: Option<u64>,
    order_cols: Option<&'o [(usize, bool)]>,
    /// The table's columns the query reads (`None`: all).
    needed: Option<&'o [bool]>,
    /// A GROUP BY's plain columns (`None`: not grouped), for EXPLAIN.
    group_cols: Option<&'o [usize]>,
}

/// Reads the rows of `t` through the access path its WHERE conjuncts
/// allow and hands each that passes the filter to `sink`, stopping after
/// `stop_after` of them (when the caller knows no later step needs more).
#[allow(clippy::too_many_arguments)]
fn scan(
    txn: &Txn,
    src: &Source,
    filter: Option<&Expr>,
    offset: usize,
    single: bool,
    cx: &mut crate::expr::EvalCtx,
    order: ReadOrder,
    sink: &mut dyn FnMut(Vec<Value>, &mut crate::expr::EvalCtx) -> SqlResult<()>,
) -> SqlResult<()> {
    let ReadOrder { stop_after, order_cols, needed, .. } = order;
    let mut conj = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut conj);
    }
    let t = &src.table;
    let mut access = crate::plan::choose(txn, t, &src.hints, &conj, offset, cx, needed);
    let mut stop_after = stop_after;
    if let Some(cols) = order_cols {
        match crate::plan::ordered(txn, t, &src.hints, &access, cols, stop_after, needed) {
            Some(a) => access = a,
            // No index gives this order: read all, then sort.
            None => stop_after = None,
        }
    }
    crate::plan::set_covering(t, &mut access, needed);
    access.needed = needed.map(<[bool]>::to_vec);
    let mut n = 0u64;
    // Only a single-table query can filter while it reads.
    let own_filter = if single { filter } else { None };
    crate::plan::for_each_row(txn, t, &access, |_, row| {
        if let Some(f) = own_filter {
            if f.eval(&row, cx)?.truth() != Some(true) {
                return Ok(true);
            }
        }
        sink(row, cx)?;
        n += 1;
        Ok(stop_after.is_none_or(|s| n < s))
    })
}

pub fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    if let Expr::And(a, b) = e {
        conjuncts(a, out);
        conjuncts(b, out);
    } else {
        out.push(e);
    }
}

/// Appends a byte string that is equal for values GROUP BY / DISTINCT
/// treat as equal. For strings (by their collation's sort keys) and numbers
/// the bytes are also in the values' order, NULL first: the grouper hands
/// groups out in key order, which is the order of MariaDB's implicit sort
/// of a GROUP BY's result, and an index's order is the keys' order (the
/// grouper's contiguous mode, `plan::serves_groups`).
pub fn group_key(v: &Value, t: Ty, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        _ => {
            out.push(1);
            match t {
                Ty::Str(c) => match v {
                    // A string's own bytes, not a copy (DISTINCT c, per row).
                    Value::Str(b) => crate::collation::sort_key(c, b, out),
                    _ => crate::collation::sort_key(c, &v.to_bytes().unwrap_or_default(), out),
                },
                Ty::Int | Ty::UInt | Ty::Decimal(_) => match v {
                    Value::Int(i) => put_exact_int(out, *i < 0, i.unsigned_abs()),
                    Value::UInt(u) => put_exact_int(out, false, *u),
                    other => {
                        let d = other.to_decimal().unwrap_or_default();
                        let (unscaled, scale) = d.as_bigint_and_exponent();
                        let negative = unscaled.sign() == bigdecimal::num_bigint::Sign::Minus;
                        let digits = unscaled.magnitude().to_string();
                        let exp = digits.len() as i64 - scale;
                        put_exact(out, negative, digits.as_bytes(), exp);
                    }
                },
                // A TIME by its signed microseconds: its text does not sort
                // negative times by value ('-10:00:00' is the smaller).
                Ty::Temporal(crate::value::TemporalKind::Time) if matches!(v, Value::Temporal(_)) => {
                    let Value::Temporal(t) = v else { unreachable!("matched") };
                    let us = crate::temporal::time_to_micros(t);
                    put_exact_int(out, us < 0, us.unsigned_abs());
                }
                // By the double's value, as MariaDB groups a DOUBLE column
                // (0.1 + 0.2 and 0.3 are two groups that print alike).
                Ty::Double => {
                    let d = v.to_f64().unwrap_or_default();
                    out.extend_from_slice(&crate::keycodec::f64_key(d).to_be_bytes());
                }
                _ => {
                    out.extend_from_slice(&v.to_bytes().unwrap_or_default());
                    out.push(0);
                }
            }
        }
    }
}

/// [`put_exact`] for an integer of magnitude `m`, without a decimal.
fn put_exact_int(out: &mut Vec<u8>, negative: bool, m: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = m;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = &buf[i..];
    put_exact(out, negative, digits, digits.len() as i64);
}

/// An exact number's group key, in the numbers' order and equal for equal
/// values whatever their form (2, 2.00 and an unsigned 2 are one key): the
/// value is ±0.d1d2...dn × 10^exp with d1 and dn not 0 (`digits` may carry
/// zeros at either end; they are dropped, moving `exp` for leading ones).
/// Written as a sign byte (1 negative, 2 zero, 3 positive), then for a
/// non-zero value `exp` as a big-endian i32 with its sign bit flipped, the
/// digits in ASCII and a 0; for a negative value those bytes complemented,
/// so a larger magnitude sorts first and the 0 becomes a 255 that sorts a
/// shorter digit string (a smaller magnitude) after a longer one.
fn put_exact(out: &mut Vec<u8>, negative: bool, digits: &[u8], exp: i64) {
    let lead = digits.iter().take_while(|&&d| d == b'0').count();
    let digits = &digits[lead..];
    let digits = &digits[..digits.len() - digits.iter().rev().take_while(|&&d| d == b'0').count()];
    if digits.is_empty() {
        out.push(2);
        return;
    }
    // SQL's numbers stay far inside i32's exponents (DECIMAL has 65 digits,
    // a double's decimal form about 330); clamping keeps the order anyway.
    let exp = (exp - lead as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    let flip = if negative { 0xFF } else { 0 };
    out.push(if negative { 1 } else { 3 });
    out.extend(((exp as u32) ^ 0x8000_0000).to_be_bytes().iter().map(|b| b ^ flip));
    out.extend(digits.iter().map(|d| d ^ flip));
    out.push(flip);
}

/// ORDER BY's comparison of two rows' sort keys: each key by its kind,
/// NULLs first, reversed where the key is DESC.
pub(crate) fn cmp_sort_keys(a: &[Value], b: &[Value], dirs: &[(CmpKind, bool)]) -> Ordering {
    for (i, (kind, desc)) in dirs.iter().enumerate() {
        let o = sort_cmp(&a[i], &b[i], *kind);
        if o != Ordering::Equal {
            return if *desc { o.reverse() } else { o };
        }
    }
    Ordering::Equal
}

pub(crate) fn sort_kind(t: Ty) -> CmpKind {
    match t {
        Ty::Str(c) => CmpKind::Str(c),
        Ty::Temporal(k) => CmpKind::Temporal(k),
        _ => CmpKind::Numeric,
    }
}

/// ORDER BY's order: NULLs first, then by the kind's comparison.
fn sort_cmp(a: &Value, b: &Value, k: CmpKind) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => crate::expr::compare(a, b, k).unwrap_or(Ordering::Equal),
    }
}

/// One aggregate's running state.
#[derive(Clone)]
pub(crate) enum AggState {
    Count(i64),
    Sum { sum: Option<Value>, n: i64 },
    MinMax(Option<Value>),
    Bits(u64),
    Concat(Option<Vec<u8>>),
    Distinct(std::collections::BTreeSet<Vec<u8>>, Vec<Value>),
}

impl AggState {
    pub(crate) fn new(spec: &AggSpec) -> AggState {
        if spec.distinct {
            return AggState::Distinct(Default::default(), Vec::new());
        }
        match spec.func {
            AggFn::CountStar | AggFn::Count => AggState::Count(0),
            AggFn::Sum | AggFn::Avg => AggState::Sum { sum: None, n: 0 },
            AggFn::Min | AggFn::Max => AggState::MinMax(None),
            AggFn::BitAnd => AggState::Bits(u64::MAX),
            AggFn::BitOr | AggFn::BitXor => AggState::Bits(0),
            AggFn::GroupConcat => AggState::Concat(None),
        }
    }

    pub(crate) fn add(&mut self, spec: &AggSpec, v: Option<Value>) -> SqlResult<()> {
        match self {
            AggState::Distinct(seen, vals) => {
                if let Some(v) = v {
                    if !v.is_null() {
                        let mut k = Vec::new();
                        group_key(&v, spec.arg_ty, &mut k);
                        if seen.insert(k) {
                            vals.push(v);
                        }
                    }
                }
            }
            AggState::Count(n) => {
                if spec.func == AggFn::CountStar || v.is_some_and(|v| !v.is_null()) {
                    *n += 1;
                }
            }
            AggState::Sum { sum, n } => {
                let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(()) };
                let v = match (&v, spec.arg_ty) {
                    (_, Ty::Double | Ty::Str(_)) => Value::Double(v.to_f64().unwrap_or(0.0)),
                    _ => Value::Decimal(v.to_decimal().unwrap_or_default()),
                };
                *n += 1;
                *sum = Some(match sum.take() {
                    None => v,
                    Some(Value::Double(a)) => Value::Double(a + v.to_f64().unwrap_or(0.0)),
                    Some(a) => Value::Decimal(
                        a.to_decimal().unwrap_or_default() + v.to_decimal().unwrap_or_default(),
                    ),
                });
            }
            AggState::MinMax(cur) => {
                let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(()) };
                let k = sort_kind(spec.arg_ty);
                let replace = match cur {
                    None => true,
                    Some(c) => {
                        let o = sort_cmp(&v, c, k);
                        if spec.func == AggFn::Min {
                            o == Ordering::Less
                        } else {
                            o == Ordering::Greater
                        }
                    }
                };
                if replace {
                    *cur = Some(v);
                }
            }
            AggState::Bits(b) => {
                let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(()) };
                let x = match v {
                    Value::Int(i) => i as u64,
                    Value::UInt(u) => u,
                    o => o.to_i64().unwrap_or(0) as u64,
                };
                match spec.func {
                    AggFn::BitAnd => *b &= x,
                    AggFn::BitOr => *b |= x,
                    _ => *b ^= x,
                }
            }
            AggState::Concat(acc) => {
                let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(()) };
                let bytes = v.to_bytes().unwrap_or_default();
                match acc {
                    None => *acc = Some(bytes),
                    Some(a) => {
                        a.extend_from_slice(&spec.sep);
                        a.extend_from_slice(&bytes);
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self, spec: &AggSpec) -> Value {
        match self {
            AggState::Distinct(_, vals) => {
                let mut st = AggState::new(&AggSpec { distinct: false, ..spec.clone() });
                for v in vals {
                    let _ = st.add(spec, Some(v));
                }
                st.finish(spec)
            }
            AggState::Count(n) => Value::Int(n),
            AggState::Sum { sum, n } => match (spec.func, sum) {
                (_, None) => Value::Null,
                (AggFn::Avg, Some(Value::Double(d))) => Value::Double(d / n as f64),
                (AggFn::Avg, Some(v)) => {
                    let d = v.to_decimal().unwrap_or_default();
                    let scale = match spec.arg_ty {
                        Ty::Decimal(s) => s as i64 + 4,
                        _ => 4,
                    };
                    Value::Decimal(
                        (d / bigdecimal::BigDecimal::from(n))
                            .with_scale_round(scale, bigdecimal::RoundingMode::HalfUp),
                    )
                }
                (_, Some(v)) => v,
            },
            AggState::MinMax(v) => v.unwrap_or(Value::Null),
            AggState::Bits(b) => Value::UInt(b),
            AggState::Concat(a) => a.map(Value::Str).unwrap_or(Value::Null),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use bigdecimal::BigDecimal;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn key(v: &Value, t: Ty) -> Vec<u8> {
        let mut k = Vec::new();
        group_key(v, t, &mut k);
        k
    }

    /// Exact numbers in every form: equal keys exactly for equal values, and
    /// the keys in the values' order (NULL first).
    #[test]
    fn numeric_group_keys_are_canonical_and_in_order() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut vals = vec![
            Value::Null,
            Value::Int(0),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::UInt(u64::MAX),
            Value::Decimal(BigDecimal::from_str("-0.00").unwrap()),
            Value::Decimal(BigDecimal::from_str("2.00").unwrap()),
            Value::Int(2),
            Value::UInt(2),
            Value::Decimal(BigDecimal::from_str("1.5").unwrap()),
            Value::Decimal(BigDecimal::from_str("-1.5").unwrap()),
            Value::Decimal(BigDecimal::from_str("-1").unwrap()),
            Value::Decimal(BigDecimal::from_str("0.001").unwrap()),
            Value::Decimal(BigDecimal::from_str("100").unwrap()),
            Value::Decimal(BigDecimal::from_str("1E+2").unwrap()),
            Value::Decimal(BigDecimal::from_str("99999999999999999999999999.5").unwrap()),
            Value::Decimal(BigDecimal::from_str("-99999999999999999999999999.5").unwrap()),
            Value::Double(2.0),
            Value::Double(-0.25),
        ];
        for _ in 0..400 {
            let scale = rng.gen_range(0..6);
            let unscaled: i64 = rng.gen_range(-100_000..100_000) * 10i64.pow(rng.gen_range(0..4));
            vals.push(Value::Decimal(BigDecimal::new(unscaled.into(), scale)));
            vals.push(Value::Int(rng.gen_range(-2000..2000)));
        }
        for ty in [Ty::Int, Ty::UInt, Ty::Decimal(30)] {
            for a in &vals {
                for b in &vals {
                    let want = match (a.to_decimal(), b.to_decimal()) {
                        (None, None) => Ordering::Equal,
                        (None, Some(_)) => Ordering::Less,
                        (Some(_), None) => Ordering::Greater,
                        (Some(x), Some(y)) => x.cmp(&y),
                    };
                    assert_eq!(key(a, ty).cmp(&key(b, ty)), want, "{a:?} against {b:?} as {ty:?}");
                }
            }
        }
        // Doubles by their value: -0 is 0, and the order is the numbers'.
        let d = |x: f64| key(&Value::Double(x), Ty::Double);
        assert_eq!(d(-0.0), d(0.0));
        assert_eq!(key(&Value::Int(5), Ty::Double), d(5.0));
        assert!(d(-2.5) < d(-1.0) && d(-1.0) < d(0.0) && d(0.0) < d(0.1) && d(0.1) < d(10.0));
        assert_ne!(d(0.1 + 0.2), d(0.3), "two doubles that print alike are two groups");
    }
}
