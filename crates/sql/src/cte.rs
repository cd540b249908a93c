//! WITH: common table expressions, materialized before the query that
//! names them.
//!
//! Each CTE runs once, in order (a later one may read an earlier one),
//! and its rows are kept in the session's CTE list, which FROM consults
//! before the catalog (so a CTE hides a table of the same name) and
//! which subqueries and derived tables inherit. The list is restored when
//! the query ends.
//!
//! WITH RECURSIVE: the CTE's body is a UNION of anchor parts (not naming
//! the CTE) and recursive parts. The anchors run once; then each round
//! runs the recursive parts with the CTE standing for the rows the
//! previous round added, until a round adds none (UNION DISTINCT drops
//! rows seen before, which is what ends most recursions), the round
//! limit `max_recursive_iterations` is reached (as MariaDB stops), or
//! the statement is killed.

use std::sync::Arc;

use fractaldb::Txn;
use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::expr::Ty;
use crate::infoschema::{VCol, Virtual};
use crate::session::{ResultSet, Session};

/// The CTEs in scope, innermost last.
pub type Ctes = Vec<(String, Arc<Virtual>)>;

/// The CTE `name` stands for, if one is in scope.
pub fn lookup(s: &Session, name: &str) -> Option<Arc<Virtual>> {
    s.ctes.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

/// Runs `q` (which has a WITH clause) with its CTEs in scope.
pub fn select_with(s: &mut Session, txn: &Txn, q: &ast::Query, locking: bool) -> SqlResult<ResultSet> {
    let with = q.with.as_ref().expect("select_with needs WITH");
    let saved = s.ctes.clone();
    let r = (|| {
        for cte in &with.cte_tables {
            let name = cte.alias.name.value.clone();
            if with.cte_tables.iter().filter(|c| c.alias.name.value == name).count() > 1 {
                return Err(SqlError::new(
                    4004,
                    "HY000",
                    format!("Duplicate query name `{name}` in WITH clause"),
                ));
            }
            let view = if with.recursive && names(&cte.query, &name) {
                recursive(s, txn, cte, &name)?
            } else {
                let rs = sub(s, txn, &cte.query)?;
                to_view(&name, cte, rs)?
            };
            s.ctes.push((name, Arc::new(view)));
        }
        let mut body = q.clone();
        body.with = None;
        crate::query::select(s, txn, &body, locking)
    })();
    s.ctes = saved;
    r
}

/// Runs a query in a sub-session that sees the current CTEs.
fn sub(s: &Session, txn: &Txn, q: &ast::Query) -> SqlResult<ResultSet> {
    let mut sub = s.child();
    crate::query::select(&mut sub, txn, q, false)
}

/// A query result as a CTE's table, its columns named by the CTE's list.
fn to_view(name: &str, cte: &ast::Cte, rs: ResultSet) -> SqlResult<Virtual> {
    let mut cols: Vec<VCol> =
        rs.columns.iter().map(|c| VCol { name: c.name.clone(), ty: c.ty.clone(), nullable: true }).collect();
    if !cte.alias.columns.is_empty() {
        if cte.alias.columns.len() != cols.len() {
            return Err(SqlError::new(
                4002,
                "HY000",
                "WITH column list and SELECT field list have different column counts",
            ));
        }
        for (c, a) in cols.iter_mut().zip(&cte.alias.columns) {
            c.name = a.name.value.clone();
        }
    }
    for (i, c) in cols.iter().enumerate() {
        if cols[..i].iter().any(|d| d.name.eq_ignore_ascii_case(&c.name)) {
            return Err(SqlError::dup_column(&c.name));
        }
    }
    Ok(Virtual { name: name.to_string(), cols, rows: rs.rows })
}

/// True when the query reads a table called `name` (directly, in a
/// join, a derived table or a nested set operation).
fn names(q: &ast::Query, name: &str) -> bool {
    fn set(e: &ast::SetExpr, name: &str) -> bool {
        match e {
            ast::SetExpr::Select(sel) => sel.from.iter().any(|t| twj(t, name)),
            ast::SetExpr::Query(q) => names(q, name),
            ast::SetExpr::SetOperation { left, right, .. } => set(left, name) || set(right, name),
            _ => false,
        }
    }
    fn twj(t: &ast::TableWithJoins, name: &str) -> bool {
        factor(&t.relation, name) || t.joins.iter().any(|j| factor(&j.relation, name))
    }
    fn factor(f: &ast::TableFactor, name: &str) -> bool {
        match f {
            ast::TableFactor::Table { name: n, .. } => {
                let parts = crate::expr::ident_name(n);
                parts.len() == 1 && parts[0] == name
            }
            ast::TableFactor::Derived { subquery, .. } => names(subquery, name),
            ast::TableFactor::NestedJoin { table_with_joins, .. } => twj(table_with_joins, name),
            _ => false,
        }
    }
    set(&q.body, name)
}

/// The parts of a UNION chain, with whether any of its unions is DISTINCT.
fn union_parts<'a>(
    e: &'a ast::SetExpr,
    out: &mut Vec<&'a ast::SetExpr>,
    distinct: &mut bool,
) -> SqlResult<()> {
    match e {
        ast::SetExpr::SetOperation { left, op: ast::SetOperator::Union, set_quantifier, right } => {
            if !matches!(set_quantifier, ast::SetQuantifier::All) {
                *distinct = true;
            }
            union_parts(left, out, distinct)?;
            union_parts(right, out, distinct)
        }
        ast::SetExpr::SetOperation { .. } => {
            Err(SqlError::unsupported("INTERSECT or EXCEPT in a recursive WITH"))
        }
        other => {
            out.push(other);
            Ok(())
        }
    }
}

fn recursive(s: &mut Session, txn: &Txn, cte: &ast::Cte, name: &str) -> SqlResult<Virtual> {
    let mut parts = Vec::new();
    let mut distinct = false;
    union_parts(&cte.query.body, &mut parts, &mut distinct)?;
    let as_query = |e: &ast::SetExpr| {
        let mut q = (*cte.query).clone();
        q.body = Box::new(e.clone());
        q.order_by = None;
        q.limit_clause = None;
        q.with = None;
        q
    };
    let (rec, anchors): (Vec<&ast::SetExpr>, Vec<&ast::SetExpr>) =
        parts.into_iter().partition(|p| names(&as_query(p), name));
    if anchors.is_empty() {
        return Err(SqlError::new(4005, "HY000", format!("No anchors for recursive WITH element '{name}'")));
    }
    // The anchors fix the columns.
    let mut first: Option<Virtual> = None;
    let mut seen = std::collections::HashSet::new();
    let mut tys: Vec<Ty> = Vec::new();
    let mut all: Vec<Vec<crate::value::Value>> = Vec::new();
    let mut add = |rows: Vec<Vec<crate::value::Value>>, tys: &[Ty], all: &mut Vec<_>| {
        let mut fresh = Vec::new();
        for r in rows {
            if distinct {
                let mut k = Vec::new();
                for (v, t) in r.iter().zip(tys) {
                    crate::query::group_key(v, *t, &mut k);
                }
                if !seen.insert(k) {
                    continue;
                }
            }
            fresh.push(r);
        }
        all.extend(fresh.iter().cloned());
        fresh
    };
    let mut working = Vec::new();
    for a in &anchors {
        let rs = sub(s, txn, &as_query(a))?;
        match &first {
            None => {
                let v = to_view(name, cte, ResultSet { columns: rs.columns.clone(), rows: Vec::new() })?;
                tys = v.cols.iter().map(|c| Ty::of(&c.ty)).collect();
                first = Some(v);
            }
            Some(v) if v.cols.len() != rs.columns.len() => return Err(SqlError::union_columns()),
            Some(_) => {}
        }
        working.extend(add(rs.rows, &tys, &mut all));
    }
    let mut view = first.expect("at least one anchor");
    let limit = match s.sysvar("max_recursive_iterations") {
        Ok(v) => v.to_i64().unwrap_or(i64::MAX).max(0) as u64,
        Err(_) => u64::MAX,
    };
    let mut rounds = 0u64;
    while !working.is_empty() && rounds < limit {
        s.check_killed()?;
        rounds += 1;
        let step = Arc::new(Virtual { name: name.to_string(), cols: view.cols.clone(), rows: working });
        s.ctes.push((name.to_string(), step));
        let mut next = Vec::new();
        let r = (|| {
            for p in &rec {
                let rs = sub(s, txn, &as_query(p))?;
                if rs.columns.len() != view.cols.len() {
                    return Err(SqlError::union_columns());
                }
                next.extend(rs.rows);
            }
            Ok(())
        })();
        s.ctes.pop();
        r?;
        working = add(next, &tys, &mut all);
    }
    view.rows = all;
    Ok(view)
}
