//! Multi-table UPDATE and DELETE, MySQL's forms:
//! `UPDATE t1 [JOIN | ,] t2 ... SET t1.a = ..., t2.b = ... WHERE ...
//! [ORDER BY ...] [LIMIT n]`, `DELETE t1, t2 FROM <join> WHERE ...` and
//! `DELETE FROM t1, t2 USING <join> WHERE ...` (also `DELETE t1 FROM t1`).
//!
//! The FROM is resolved and joined by the SELECT machinery (`join.rs`) at
//! the statement's snapshot, its rows carrying each target's engine key
//! (`Exec::keep_keys`). Then, table by table in FROM's order, each target
//! row is changed once however often it joined (the first joined row
//! gives an UPDATE's values), after a re-read of its newest committed
//! version under a write lock, as single-table UPDATE and DELETE do
//! (`dml.rs`; the row checks and writes are theirs: `RowUpdater`,
//! `delete_row`). A derived table or view may be read, not written (1288).
//!
//! MariaDB's rules kept here: SET values are computed over the joined row
//! (another table's columns as joined, the target's own earlier
//! assignments seen by later ones); "Rows matched" counts distinct target
//! rows; ORDER BY and LIMIT apply to the joined rows of an UPDATE and are
//! a syntax error in a multi-table DELETE (the lexer refuses them); a
//! subquery of a multi-table DELETE reading a target is 1093.

use std::collections::HashSet;
use std::sync::Arc;

use fractaldb::Txn;
use sqlparser::ast;

use crate::bind::Binder;
use crate::dml::RowUpdater;
use crate::error::{SqlError, SqlResult, Warning};
use crate::expr::{Expr, ScopeCol};
use crate::join::{Exec, From};
use crate::query::Rel;
use crate::session::{Outcome, Session};
use crate::table::{self, Table};
use crate::value::Value;

pub(crate) fn is_multi_update(up: &ast::Update) -> bool {
    !up.table.joins.is_empty() || up.from.is_some()
}

pub(crate) fn is_multi_delete(del: &ast::Delete) -> bool {
    let from = match &del.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    from.len() != 1 || !from[0].joins.is_empty() || !del.tables.is_empty() || del.using.is_some()
}

/// FROM resolved and its conditions bound.
struct Joined {
    from: From,
    scope: Vec<ScopeCol>,
    /// Per table of FROM that a name resolved: (rel, database, name), for
    /// the privilege checks.
    named: Vec<(usize, String, String)>,
    /// Scope offset of each rel.
    offs: Vec<usize>,
}

impl Joined {
    fn build(s: &Session, txn: &Txn, items: &[ast::TableWithJoins]) -> SqlResult<Joined> {
        let mut named = Vec::new();
        let from = {
            let mut add = |f: &ast::TableFactor, out: &mut Vec<Rel>| {
                let before = out.len();
                crate::query::add_source_as(s, txn, f, out, false)?;
                if let (ast::TableFactor::Table { name, .. }, true) = (f, out.len() > before) {
                    let parts = crate::expr::ident_name(name);
                    let cte = parts.len() == 1 && crate::cte::lookup(s, &parts[0]).is_some();
                    let (db, t) = match parts.as_slice() {
                        [t] => (s.db.clone().unwrap_or_default(), t.clone()),
                        [d, t] => (d.clone(), t.clone()),
                        _ => return Err(SqlError::syntax(format!("'{name}'"))),
                    };
                    if !cte {
                        named.push((before, db, t));
                    }
                }
                Ok(())
            };
            From::build(items, &mut add)?
        };
        let mut scope = crate::query::rel_scope(&from.rels);
        from.apply_hidden(&mut scope);
        let mut offs = Vec::new();
        let mut off = 0;
        for r in &from.rels {
            offs.push(off);
            off += r.width();
        }
        Ok(Joined { from, scope, named, offs })
    }

    /// Checks the privileges: `what` (UPDATE or DELETE) on the targets,
    /// SELECT on the tables and views only read.
    fn check_privileges(&self, s: &Session, targets: &[usize], what: &str) -> SqlResult<()> {
        if s.login.is_none() {
            return Ok(());
        }
        for (r, db, t) in &self.named {
            let need = if targets.contains(r) { what } else { "SELECT" };
            s.check_table(need, db, t)?;
        }
        Ok(())
    }

    fn table(&self, r: usize) -> &Arc<Table> {
        match &self.from.rels[r] {
            Rel::Table(src) => &src.table,
            Rel::Rows { .. } => unreachable!("targets are engine tables"),
        }
    }

    /// Binds ON and WHERE; runs the join, the rows carrying the targets'
    /// keys (in `targets`' order, after the columns).
    fn run(
        &mut self,
        s: &mut Session,
        txn: &Txn,
        selection: Option<&ast::Expr>,
        targets: &[usize],
        order_limit: Option<(&[ast::OrderByExpr], Option<&ast::Expr>)>,
    ) -> SqlResult<Vec<Vec<Value>>> {
        let filter = self.bind_conditions(s, txn, selection)?;
        let mut w = Vec::new();
        let mut rows = {
            let mut runner = runner(s, txn, &self.scope);
            let mut cx = s.eval_ctx(&mut w);
            cx.sub = Some(&mut runner);
            let mut ex = Exec::new(&self.from.rels, txn, &mut cx, filter.as_ref(), &s.killed);
            ex.keep_keys(targets);
            match &self.from.tree {
                Some(tree) => ex.run(tree)?,
                None => Vec::new(),
            }
        };
        s.warnings.extend(w);
        if let Some((order_by, limit)) = order_limit {
            if !order_by.is_empty() {
                rows = self.sort(s, txn, rows, order_by)?;
            }
            if let Some(l) = limit {
                let n = match s.eval_const(l)? {
                    Value::Int(i) if i >= 0 => i as usize,
                    Value::UInt(u) => u as usize,
                    _ => return Err(SqlError::syntax(format!("'{l}'"))),
                };
                rows.truncate(n);
            }
        }
        Ok(rows)
    }

    fn bind_conditions(
        &mut self,
        s: &Session,
        txn: &Txn,
        selection: Option<&ast::Expr>,
    ) -> SqlResult<Option<Expr>> {
        let sysvar = |n: &str| s.sysvar(n);
        let proto = s.child();
        let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
            let mut sub = proto.child();
            crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
        };
        let scope = &self.scope;
        self.from.bind_on(&mut |e| Ok(Binder::plain(scope, &sysvar, &mut subq, "on clause").bind(e)?.0))?;
        match selection {
            Some(w) => Ok(Some(Binder::plain(scope, &sysvar, &mut subq, "where clause").bind(w)?.0)),
            None => Ok(None),
        }
    }

    fn sort(
        &self,
        s: &mut Session,
        txn: &Txn,
        rows: Vec<Vec<Value>>,
        order_by: &[ast::OrderByExpr],
    ) -> SqlResult<Vec<Vec<Value>>> {
        let mut order = Vec::new();
        {
            let sysvar = |n: &str| s.sysvar(n);
            let proto = s.child();
            let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
                let mut sub = proto.child();
                crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
            };
            for o in order_by {
                let (e, ty) = Binder::plain(&self.scope, &sysvar, &mut subq, "order clause").bind(&o.expr)?;
                order.push((e, ty, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
            }
        }
        let mut w = Vec::new();
        let mut keyed = Vec::with_capacity(rows.len());
        {
            let mut runner = runner(s, txn, &self.scope);
            let mut cx = s.eval_ctx(&mut w);
            cx.sub = Some(&mut runner);
            for r in rows {
                let mut ks = Vec::with_capacity(order.len());
                for (e, _, _) in &order {
                    ks.push(e.eval(&r, &mut cx)?);
                }
                keyed.push((ks, r));
            }
        }
        s.warnings.extend(w);
        let dirs: Vec<(crate::expr::CmpKind, bool)> =
            order.iter().map(|(_, ty, desc)| (crate::query::sort_kind(*ty), *desc)).collect();
        // A stable sort: rows with equal keys keep the join's order.
        keyed.sort_by(|a, b| crate::query::cmp_sort_keys(&a.0, &b.0, &dirs));
        Ok(keyed.into_iter().map(|(_, r)| r).collect())
    }
}

/// Correlated subqueries run per joined row, seeing its columns.
fn runner<'t>(
    s: &Session,
    txn: &'t Txn,
    scope: &[ScopeCol],
) -> impl FnMut(&ast::Query, &[Value]) -> SqlResult<Vec<Vec<Value>>> + 't {
    let proto = s.child();
    let width = scope.len();
    let corr_scope = scope.to_vec();
    move |q: &ast::Query, row: &[Value]| -> SqlResult<Vec<Vec<Value>>> {
        let mut sub = proto.child();
        sub.outer_scope = corr_scope.clone();
        sub.outer_row = row.iter().take(width).cloned().collect();
        crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
    }
}

/// 1288: a derived table or view named as a target.
fn not_updatable(alias: &str, what: &str) -> SqlError {
    SqlError::new(1288, "HY000", format!("The target table {alias} of the {what} is not updatable"))
}

/// Names conversion messages' columns as MariaDB does (`db`.`t`.`c`), for
/// the warnings from `from` on and the error.
fn qualify<T>(s: &mut Session, from: usize, t: &Table, r: SqlResult<T>) -> SqlResult<T> {
    let (db, name) = (&t.def.db, &t.def.name);
    for w in s.warnings.iter_mut().skip(from) {
        if let Some(m) = crate::coerce::qualify_column(&w.message, db, name) {
            w.message = m;
        }
    }
    r.map_err(|mut e| {
        if let Some(m) = crate::coerce::qualify_column(&e.message, db, name) {
            e.message = m;
        }
        e
    })
}

pub(crate) fn update(s: &mut Session, txn: &Txn, up: &ast::Update, ignore: bool) -> SqlResult<Outcome> {
    if let Some(f) = &up.from {
        let (ast::UpdateTableFromKind::BeforeSet(v) | ast::UpdateTableFromKind::AfterSet(v)) = f;
        let near = v.first().map(|t| t.to_string()).unwrap_or_default();
        return Err(SqlError::syntax(format!("'FROM {near}'")));
    }
    let mut j = Joined::build(s, txn, std::slice::from_ref(&up.table))?;
    // SET: each assignment's column, its table, and the value.
    let mut sets: Vec<(usize, usize, Expr)> = Vec::new();
    {
        let sysvar = |n: &str| s.sysvar(n);
        let proto = s.child();
        let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
            let mut sub = proto.child();
            crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
        };
        for a in &up.assignments {
            let ast::AssignmentTarget::ColumnName(n) = &a.target else {
                return Err(SqlError::syntax("'('"));
            };
            let parts: Vec<ast::Ident> =
                n.0.iter()
                    .map(|p| p.as_ident().cloned().ok_or_else(|| SqlError::syntax(format!("'{n}'"))))
                    .collect::<SqlResult<_>>()?;
            let col_ast = if parts.len() == 1 {
                ast::Expr::Identifier(parts[0].clone())
            } else {
                ast::Expr::CompoundIdentifier(parts)
            };
            let (c, _) = Binder::plain(&j.scope, &sysvar, &mut subq, "SET").bind(&col_ast)?;
            let Expr::Col(pos) = c else {
                return Err(SqlError::unknown_column(&n.to_string(), "SET"));
            };
            let r = j.offs.iter().rposition(|&o| o <= pos).expect("a scope position is in some table");
            if let Rel::Rows { alias, .. } = &j.from.rels[r] {
                return Err(not_updatable(alias, "UPDATE"));
            }
            let (x, _) = if crate::dml::is_default_keyword(&a.value) {
                crate::bind::default_of(&j.scope[pos])?
            } else {
                Binder::plain(&j.scope, &sysvar, &mut subq, "SET").bind(&a.value)?
            };
            sets.push((r, pos - j.offs[r], x));
        }
    }
    let mut targets: Vec<usize> = sets.iter().map(|(r, ..)| *r).collect();
    targets.sort_unstable();
    targets.dedup();
    j.check_privileges(s, &targets, "UPDATE")?;
    if s.explaining {
        return explain(s, txn, &mut j, up.selection.as_ref());
    }
    let rows = j.run(s, txn, up.selection.as_ref(), &targets, Some((&up.order_by, up.limit.as_ref())))?;
    let key_base = j.scope.len();
    let (mut matched, mut affected) = (0u64, 0u64);
    for (ti, &r) in targets.iter().enumerate() {
        let t = j.table(r).clone();
        let off = j.offs[r];
        let width = t.def.columns.len();
        let mine: Vec<(usize, &Expr)> =
            sets.iter().filter(|(sr, ..)| *sr == r).map(|(_, c, e)| (*c, e)).collect();
        let mut explicitly: Vec<usize> = mine.iter().map(|(c, _)| *c).collect();
        explicitly.sort_unstable();
        let upd = RowUpdater::new(s, &t, ignore)?;
        let from = s.warnings.len();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut warnings: Vec<Warning> = Vec::new();
        let mut rownum = 0;
        let res = (|| -> SqlResult<()> {
            for row in &rows {
                let Value::Str(pk) = &row[key_base + ti] else { continue };
                if !seen.insert(pk) {
                    continue;
                }
                // The newest committed version, locked; gone: deleted since.
                let Some(old) = table::fetch(&t, txn, pk, true)? else { continue };
                rownum += 1;
                let mut er = row.clone();
                er[off..off + width].clone_from_slice(&old);
                {
                    let mut runner = runner(s, txn, &j.scope);
                    let mut cx = s.eval_ctx(&mut warnings);
                    cx.sub = Some(&mut runner);
                    cx.strict_dml = upd.strict;
                    for (c, e) in &mine {
                        er[off + c] = e.eval(&er, &mut cx)?;
                    }
                }
                let new = er[off..off + width].to_vec();
                upd.apply(s, txn, pk, &old, new, &explicitly, rownum, &mut warnings)?
                    .count(&mut matched, &mut affected);
                s.check_killed()?;
            }
            Ok(())
        })();
        s.warnings.extend(warnings);
        qualify(s, from, &t, res)?;
    }
    let nwarn = s.warnings.len();
    Ok(Outcome::Done {
        affected,
        last_insert_id: 0,
        info: Some(format!("Rows matched: {matched}  Changed: {affected}  Warnings: {nwarn}")),
    })
}

pub(crate) fn delete(s: &mut Session, txn: &Txn, del: &ast::Delete, ignore: bool) -> SqlResult<Outcome> {
    if !del.order_by.is_empty() || del.limit.is_some() {
        // MariaDB's grammar has neither in a multi-table DELETE (the lexer
        // quotes the statement from them; this is EXPLAIN's path).
        let at = if del.order_by.is_empty() { "LIMIT" } else { "ORDER BY" };
        return Err(SqlError::syntax(format!("'{at}'")));
    }
    let from = match &del.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    // `DELETE t1, t2 FROM <join>` or `DELETE FROM t1, t2 USING <join>`.
    let (names, join): (Vec<&ast::ObjectName>, &[ast::TableWithJoins]) = match &del.using {
        Some(using) => {
            let mut v = Vec::new();
            for twj in from {
                match &twj.relation {
                    ast::TableFactor::Table { name, alias: None, .. } if twj.joins.is_empty() => v.push(name),
                    _ => return Err(SqlError::syntax(format!("'{twj}'"))),
                }
            }
            (v, using)
        }
        None => (del.tables.iter().collect(), from),
    };
    let mut j = Joined::build(s, txn, join)?;
    let mut targets = Vec::new();
    for n in names {
        let parts = crate::expr::ident_name(n);
        let found = match parts.as_slice() {
            [t] => j.from.rels.iter().position(|r| r.alias() == t),
            [d, t] => j.from.rels.iter().position(|r| match r {
                Rel::Table(src) => src.table.def.db == *d && src.table.def.name == *t && src.alias == *t,
                Rel::Rows { .. } => false,
            }),
            _ => None,
        };
        let last = parts.last().cloned().unwrap_or_default();
        let Some(r) = found else {
            return Err(SqlError::unknown_table_in(&last, "MULTI DELETE"));
        };
        if let Rel::Rows { alias, .. } = &j.from.rels[r] {
            return Err(not_updatable(alias, "DELETE"));
        }
        if !targets.contains(&r) {
            targets.push(r);
        }
    }
    targets.sort_unstable();
    j.check_privileges(s, &targets, "DELETE")?;
    if s.explaining {
        return explain(s, txn, &mut j, del.selection.as_ref());
    }
    // While ON and WHERE bind and the join runs, a subquery reading a
    // target is 1093 (`query::add_source`).
    s.delete_targets = targets
        .iter()
        .map(|&r| {
            let t = j.table(r);
            (t.def.db.clone(), t.def.name.clone(), j.from.rels[r].alias().to_string())
        })
        .collect();
    let rows = j.run(s, txn, del.selection.as_ref(), &targets, None);
    s.delete_targets.clear();
    let rows = rows?;
    let key_base = j.scope.len();
    let mut total = 0u64;
    for (ti, &r) in targets.iter().enumerate() {
        let t = j.table(r).clone();
        let guard = crate::dml::has_children(s, &t.def);
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut n = 0u64;
        let res = (|| -> SqlResult<()> {
            for row in &rows {
                let Value::Str(pk) = &row[key_base + ti] else { continue };
                if !seen.insert(pk) {
                    continue;
                }
                // Gone already: deleted by a cascade or through another alias.
                let Some(cur) = table::fetch(&t, txn, pk, true)? else { continue };
                if crate::dml::delete_row(s, txn, &t, pk, &cur, ignore, guard, false)? {
                    n += 1;
                    crate::progress::changed(crate::progress::Stage::Deleted, 1);
                }
                s.check_killed()?;
            }
            Ok(())
        })();
        t.add_rows(txn, -(n as i64))?;
        res?;
        total += n;
    }
    Ok(Outcome::done(total))
}

/// EXPLAIN of a multi-table UPDATE or DELETE: the plan of its join.
fn explain(s: &mut Session, txn: &Txn, j: &mut Joined, selection: Option<&ast::Expr>) -> SqlResult<Outcome> {
    let filter = j.bind_conditions(s, txn, selection)?;
    // Every column of every table counts as read (the targets' rows are
    // re-read whole), so no covering read is claimed.
    let needed = vec![None; j.from.rels.len()];
    crate::query::explain_plan(s, txn, &j.from, filter.as_ref(), Default::default(), false, &needed)
        .map(Outcome::Rows)
}
