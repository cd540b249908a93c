//! Views: CREATE [OR REPLACE] VIEW, DROP VIEW, and reading a view in FROM.
//!
//! A view is a catalog record `view/<db>/<name>` → [`ViewDef`] (JSON, in
//! the catalog dictionary beside the tables' records), written in one
//! engine transaction, so it is there after a crash or not. It is not
//! cached in memory: FROM reads the record in the query's own transaction
//! when a name is no table, so a view created or dropped by a committed
//! transaction is seen at once and a snapshot sees the views of its moment.
//!
//! A view in FROM runs its stored SELECT (in the view's database) and is
//! read as a derived table: materialized first, its columns named by the
//! view's column list. INSERT, UPDATE and DELETE through an updatable view
//! are rewritten onto its base table (below); others get 1471/1288.

use serde::{Deserialize, Serialize};
use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::session::{Outcome, ResultSet, Session};

/// How deep views may read other views (a view cycle made by OR REPLACE
/// ends here instead of recursing forever).
const MAX_VIEW_DEPTH: u32 = 32;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ViewDef {
    pub db: String,
    pub name: String,
    /// The view's column names, in order.
    pub columns: Vec<String>,
    /// The SELECT, as sqlparser prints it.
    pub query: String,
    /// UNDEFINED, MERGE or TEMPTABLE (kept for SHOW CREATE VIEW).
    pub algorithm: String,
    /// DEFINER or INVOKER.
    pub security: String,
    /// "", "CASCADED" or "LOCAL".
    #[serde(default)]
    pub check_option: String,
}

pub fn key(db: &str, name: &str) -> Vec<u8> {
    format!("view/{db}/{name}").into_bytes()
}

/// The view `db.name`, if there is one, as `txn` sees the catalog.
pub fn lookup(s: &Session, txn: &fractaldb::Txn, db: &str, name: &str) -> SqlResult<Option<ViewDef>> {
    match txn.get(&s.inner.catalog, &key(db, name))? {
        None => Ok(None),
        Some(v) => serde_json::from_slice(&v)
            .map(Some)
            .map_err(|e| SqlError::engine(format!("a view's catalog record is damaged: {e}"))),
    }
}

/// True when `db.name` is a view (read outside any transaction).
pub fn exists(s: &Session, db: &str, name: &str) -> SqlResult<bool> {
    let txn = s.inner.env.begin(fractaldb::Isolation::ReadCommitted)?;
    let r = lookup(s, &txn, db, name)?.is_some();
    txn.commit()?;
    Ok(r)
}

/// Every view of database `db`, by name.
pub fn list(s: &Session, txn: &fractaldb::Txn, db: &str) -> SqlResult<Vec<ViewDef>> {
    let lo = format!("view/{db}/").into_bytes();
    let hi = crate::plan::successor(&lo);
    let mut out = Vec::new();
    for kv in txn.range(&s.inner.catalog, Some(&lo), hi.as_deref(), false) {
        let (_, v) = kv?;
        out.push(
            serde_json::from_slice(&v)
                .map_err(|e| SqlError::engine(format!("a view's catalog record is damaged: {e}")))?,
        );
    }
    Ok(out)
}

/// `check_option`: "", "CASCADED" or "LOCAL" (lex.rs takes `WITH ...
/// CHECK OPTION` off the statement).
pub fn create(s: &mut Session, cv: &ast::CreateView, check_option: &str) -> SqlResult<Outcome> {
    if cv.materialized {
        return Err(SqlError::unsupported("materialized views"));
    }
    let (db, name) = crate::ddl::qualify(s, &cv.name)?;
    if !s.inner.schema.read().dbs.contains_key(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    crate::catalog::check_ident(&name, crate::catalog::Ident::Table)?;
    let _ddl = s.inner.ddl.lock();
    if s.inner.table(&db, &name).is_ok() {
        return Err(SqlError::table_exists(&name));
    }
    if exists(s, &db, &name)? && !cv.or_replace {
        if cv.if_not_exists {
            s.warnings.push(crate::error::Warning::note(1050, SqlError::table_exists(&name).message));
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::table_exists(&name));
    }
    // The SELECT must run: bind it now (LIMIT 0) in the view's database.
    let mut probe = (*cv.query).clone();
    probe.limit_clause = Some(ast::LimitClause::LimitOffset {
        limit: Some(ast::Expr::value(ast::Value::Number("0".into(), false))),
        offset: None,
        limit_by: Vec::new(),
    });
    let rs = run_in(s, &db, &probe, 0)?;
    let mut columns: Vec<String> = rs.columns.iter().map(|c| c.name.clone()).collect();
    if !cv.columns.is_empty() {
        if cv.columns.len() != columns.len() {
            return Err(SqlError::new(
                1353,
                "HY000",
                "View's SELECT and view's field list have different column counts",
            ));
        }
        columns = cv.columns.iter().map(|c| c.name.value.clone()).collect();
    }
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|d| d.eq_ignore_ascii_case(c)) {
            return Err(SqlError::dup_column(c));
        }
    }
    let (algorithm, security) = match &cv.params {
        Some(p) => (
            p.algorithm.as_ref().map_or("UNDEFINED".to_string(), |a| a.to_string().to_uppercase()),
            p.security.as_ref().map_or("DEFINER".to_string(), |x| x.to_string().to_uppercase()),
        ),
        None => ("UNDEFINED".into(), "DEFINER".into()),
    };
    let def = ViewDef {
        db: db.clone(),
        name: name.clone(),
        columns,
        query: cv.query.to_string(),
        algorithm,
        security,
        check_option: check_option.to_string(),
    };
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    if !def.check_option.is_empty() && write_target(s, &txn, &def)?.is_none() {
        txn.abort()?;
        return Err(SqlError::new(
            1368,
            "HY000",
            format!("CHECK OPTION on non-updatable view `{db}`.`{name}`"),
        ));
    }
    let json = serde_json::to_vec(&def).map_err(|e| SqlError::internal(e.to_string()))?;
    txn.put(&s.inner.catalog, &key(&db, &name), &json)?;
    txn.commit()?;
    Ok(Outcome::done(0))
}

pub fn drop(s: &mut Session, names: &[ast::ObjectName], if_exists: bool) -> SqlResult<Outcome> {
    let _ddl = s.inner.ddl.lock();
    let mut missing = Vec::new();
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    for n in names {
        let (db, name) = crate::ddl::qualify(s, n)?;
        if lookup(s, &txn, &db, &name)?.is_some() {
            txn.delete(&s.inner.catalog, &key(&db, &name))?;
        } else {
            missing.push(format!("{db}.{name}"));
        }
    }
    if !missing.is_empty() {
        let e = SqlError::new(4092, "42S02", format!("Unknown VIEW: '{}'", missing.join(",")));
        if !if_exists {
            txn.abort()?;
            return Err(e);
        }
        s.warnings.push(crate::error::Warning::note(4092, e.message));
    }
    txn.commit()?;
    Ok(Outcome::done(0))
}

/// Runs `q` in database `db`, in a sub-session of `s`'s transaction state
/// (a fresh read transaction when `s` has none open).
fn run_in(s: &Session, db: &str, q: &ast::Query, depth: u32) -> SqlResult<ResultSet> {
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    let r = run_txn(s, &txn, db, q, depth);
    txn.commit()?;
    r
}

fn run_txn(s: &Session, txn: &fractaldb::Txn, db: &str, q: &ast::Query, depth: u32) -> SqlResult<ResultSet> {
    if depth > MAX_VIEW_DEPTH {
        return Err(SqlError::new(1462, "HY000", "`view` contains recursive reference to view"));
    }
    let mut sub = s.child();
    sub.db = Some(db.to_string());
    // A view sees only its own CTE-free definition.
    sub.ctes.clear();
    sub.view_depth = depth;
    crate::query::select(&mut sub, txn, q, false)
}

/// The rows of view `def`, read in `txn`, as a derived table.
pub fn materialize(
    s: &Session,
    txn: &fractaldb::Txn,
    def: &ViewDef,
) -> SqlResult<crate::infoschema::Virtual> {
    let q = match crate::lex::parse(def.query.as_bytes())? {
        crate::lex::Parsed::Std(st, _) => match *st {
            ast::Statement::Query(q) => q,
            _ => return Err(SqlError::engine(format!("view {}.{} holds no SELECT", def.db, def.name))),
        },
        _ => return Err(SqlError::engine(format!("view {}.{} holds no SELECT", def.db, def.name))),
    };
    let rs = run_txn(s, txn, &def.db, &q, s.view_depth + 1)?;
    if rs.columns.len() != def.columns.len() {
        // A table it reads changed since: MariaDB's 1356.
        return Err(invalid(def));
    }
    let cols = rs
        .columns
        .iter()
        .zip(&def.columns)
        .map(|(c, n)| crate::infoschema::VCol { name: n.clone(), ty: c.ty.clone(), nullable: true })
        .collect();
    Ok(crate::infoschema::Virtual { name: def.name.clone(), cols, rows: rs.rows })
}

fn invalid(def: &ViewDef) -> SqlError {
    SqlError::new(
        1356,
        "HY000",
        format!(
            "View '{}.{}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them",
            def.db, def.name
        ),
    )
}

/// SHOW CREATE VIEW's row (also SHOW CREATE TABLE on a view): View,
/// Create View, character_set_client, collation_connection.
pub fn show_create(def: &ViewDef) -> Vec<crate::value::Value> {
    let list = format!(" ({})", def.columns.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(","));
    let text = format!(
        "CREATE ALGORITHM={} DEFINER=`root`@`localhost` SQL SECURITY {} VIEW `{}`{} AS {}",
        def.algorithm, def.security, def.name, list, def.query
    );
    let text = if def.check_option.is_empty() {
        text
    } else {
        format!("{text} WITH {} CHECK OPTION", def.check_option)
    };
    use crate::value::Value;
    vec![Value::str(&def.name), Value::str(&text), Value::str("utf8mb3"), Value::str("utf8mb3_general_ci")]
}

// ---------------------------------------------------------------------
// Writing through views.
//
// An updatable view (one table or updatable view in FROM, no join, no
// DISTINCT, GROUP BY, HAVING, aggregate, window, LIMIT, UNION or subquery
// in the select list) is resolved down to its base table: each view
// column becomes an expression over the base table's columns (a plain
// column where it can be written), and the WHEREs along the chain become
// one filter. INSERT/UPDATE/DELETE on the view are rewritten into the
// same statement on the base table with view columns replaced by their
// expressions and the filter ANDed to WHERE, then run with the view's
// rights (the view's privilege is checked, the base table's is not, as
// SQL SECURITY DEFINER reads do). CHECK OPTION conditions travel to the
// base table's row checks in `Session::view_checks` (dml.rs `bind_checks`).

/// Row-check name prefix marking a view's CHECK OPTION among a table's
/// CHECK constraints (dml.rs `check_row` turns it into 1369).
pub const CHECK_MARK: &str = "\u{0}view\u{0}";

/// A view resolved down to its base table for writing.
#[derive(Clone, Debug)]
pub struct WriteTarget {
    /// The base table, `db`.`name`.
    pub db: String,
    pub table: String,
    /// Each view column: its name and its expression over the base
    /// table's (unqualified) columns.
    pub cols: Vec<(String, ast::Expr)>,
    /// The WHEREs down the chain, over the base table's columns.
    pub filter: Option<ast::Expr>,
    /// The conditions a new row must meet: (`db`.`view` for 1369, condition).
    pub checks: Vec<(String, ast::Expr)>,
}

fn parse_query(def: &ViewDef) -> SqlResult<ast::Query> {
    match crate::lex::parse(def.query.as_bytes())? {
        crate::lex::Parsed::Std(st, _) => match *st {
            ast::Statement::Query(q) => Ok(*q),
            _ => Err(SqlError::engine(format!("view {}.{} holds no SELECT", def.db, def.name))),
        },
        _ => Err(SqlError::engine(format!("view {}.{} holds no SELECT", def.db, def.name))),
    }
}

const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "GROUP_CONCAT",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

/// True when `e` holds an aggregate, a window function or a subquery
/// (an expression that makes a view non-updatable in the select list).
fn blocks_update(e: &ast::Expr) -> bool {
    let mut found = false;
    walk(&mut e.clone(), &mut |x| {
        match x {
            ast::Expr::Function(f) => {
                let n = f.name.to_string().to_ascii_uppercase();
                if f.over.is_some() || AGGREGATES.contains(&n.as_str()) {
                    found = true;
                }
            }
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } => found = true,
            ast::Expr::In { target: ast::InTarget::Subquery(_), .. } => found = true,
            _ => {}
        }
        None
    });
    found
}

/// Calls `f` on every expression of `e` top-down; where `f` returns a
/// replacement, that replaces the expression and is not descended into.
/// Subqueries are not entered (their names are their own scope).
fn walk(e: &mut ast::Expr, f: &mut dyn FnMut(&ast::Expr) -> Option<ast::Expr>) {
    if let Some(r) = f(e) {
        *e = r;
        return;
    }
    use ast::Expr as E;
    match e {
        E::IsFalse(x)
        | E::IsNotFalse(x)
        | E::IsTrue(x)
        | E::IsNotTrue(x)
        | E::IsNull(x)
        | E::IsNotNull(x)
        | E::IsUnknown(x)
        | E::IsNotUnknown(x)
        | E::Nested(x)
        | E::UnaryOp { expr: x, .. }
        | E::Cast { expr: x, .. }
        | E::Convert { expr: x, .. }
        | E::Collate { expr: x, .. }
        | E::Extract { expr: x, .. }
        | E::Ceil { expr: x, .. }
        | E::Floor { expr: x, .. } => walk(x, f),
        E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) | E::BinaryOp { left: a, right: b, .. } => {
            walk(a, f);
            walk(b, f);
        }
        E::Like { expr, pattern, escape_char, .. }
        | E::ILike { expr, pattern, escape_char, .. }
        | E::SimilarTo { expr, pattern, escape_char, .. } => {
            walk(expr, f);
            walk(pattern, f);
            if let Some(x) = escape_char {
                walk(x, f);
            }
        }
        E::RLike { expr, pattern, .. } => {
            walk(expr, f);
            walk(pattern, f);
        }
        E::Between { expr, low, high, .. } => {
            walk(expr, f);
            walk(low, f);
            walk(high, f);
        }
        E::In { expr, target, .. } => {
            walk(expr, f);
            if let ast::InTarget::List(list) = target {
                for x in list {
                    walk(x, f);
                }
            }
        }
        E::Tuple(v) => {
            for x in v {
                walk(x, f);
            }
        }
        E::Case { operand, conditions, else_result, .. } => {
            if let Some(x) = operand {
                walk(x, f);
            }
            for c in conditions {
                walk(&mut c.condition, f);
                walk(&mut c.result, f);
            }
            if let Some(x) = else_result {
                walk(x, f);
            }
        }
        E::Position { expr, r#in } => {
            walk(expr, f);
            walk(r#in, f);
        }
        E::Substring { expr, substring_from, substring_for, .. } => {
            walk(expr, f);
            if let Some(x) = substring_from {
                walk(x, f);
            }
            if let Some(x) = substring_for {
                walk(x, f);
            }
        }
        E::Trim { expr, trim_what, .. } => {
            walk(expr, f);
            if let Some(x) = trim_what {
                walk(x, f);
            }
        }
        E::Function(func) => {
            if let ast::FunctionArguments::List(l) = &mut func.args {
                for a in &mut l.args {
                    let x = match a {
                        ast::FunctionArg::Named { arg, .. } | ast::FunctionArg::Unnamed(arg) => arg,
                        ast::FunctionArg::ExprNamed { arg, .. } => arg,
                    };
                    if let ast::FunctionArgExpr::Expr(x) = x {
                        walk(x, f);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `e` with every column reference that names one of `cols` (by its last
/// part, any qualifier) replaced by that column's expression.
pub fn subst(e: &ast::Expr, cols: &[(String, ast::Expr)]) -> ast::Expr {
    let mut e = e.clone();
    walk(&mut e, &mut |x| {
        let name = match x {
            ast::Expr::Identifier(i) => &i.value,
            ast::Expr::CompoundIdentifier(v) => &v.last()?.value,
            _ => return None,
        };
        let (_, r) = cols.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        Some(match r {
            ast::Expr::Identifier(_) | ast::Expr::Value(_) => r.clone(),
            _ => ast::Expr::Nested(Box::new(r.clone())),
        })
    });
    e
}

/// `subst` for an expression of the statement writing through the view:
/// a column reference that names no view column is 1054 (`place` as
/// MariaDB names it), not a base table column the view hides.
fn subst_checked(e: &ast::Expr, cols: &[(String, ast::Expr)], place: &str) -> SqlResult<ast::Expr> {
    let mut unknown = None;
    let mut e = e.clone();
    walk(&mut e, &mut |x| {
        let name = match x {
            ast::Expr::Identifier(i)
                if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("DEFAULT") =>
            {
                return None
            }
            ast::Expr::Identifier(i) => &i.value,
            ast::Expr::CompoundIdentifier(v) => &v.last()?.value,
            _ => return None,
        };
        match cols.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, r)) => Some(match r {
                ast::Expr::Identifier(_) | ast::Expr::Value(_) => r.clone(),
                _ => ast::Expr::Nested(Box::new(r.clone())),
            }),
            None => {
                unknown.get_or_insert_with(|| name.clone());
                None
            }
        }
    });
    match unknown {
        Some(n) => Err(SqlError::unknown_column(&n, place)),
        None => Ok(e),
    }
}

fn and(a: Option<ast::Expr>, b: Option<ast::Expr>) -> Option<ast::Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::Nested(Box::new(a))),
            op: ast::BinaryOperator::And,
            right: Box::new(ast::Expr::Nested(Box::new(b))),
        }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// `def` resolved to its base table, or `None` when it is not updatable.
pub fn write_target(s: &Session, txn: &fractaldb::Txn, def: &ViewDef) -> SqlResult<Option<WriteTarget>> {
    resolve(s, txn, def, 0)
}

fn resolve(s: &Session, txn: &fractaldb::Txn, def: &ViewDef, depth: u32) -> SqlResult<Option<WriteTarget>> {
    if depth > MAX_VIEW_DEPTH {
        return Err(SqlError::new(1462, "HY000", "`view` contains recursive reference to view"));
    }
    let q = parse_query(def)?;
    if q.with.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return Ok(None);
    }
    let ast::SetExpr::Select(sel) = q.body.as_ref() else { return Ok(None) };
    let grouped = match &sel.group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(v, m) => !v.is_empty() || !m.is_empty(),
    };
    if sel.distinct.is_some() || grouped || sel.having.is_some() || sel.from.len() != 1 {
        return Ok(None);
    }
    let from = &sel.from[0];
    if !from.joins.is_empty() {
        return Ok(None);
    }
    let ast::TableFactor::Table { name, args: None, .. } = &from.relation else { return Ok(None) };
    let parts = crate::expr::ident_name(name);
    let (db, tname) = match parts.as_slice() {
        [t] => (def.db.clone(), t.clone()),
        [d, t] => (d.clone(), t.clone()),
        _ => return Ok(None),
    };
    // What the view's FROM offers: the base table's columns as themselves,
    // or the underlying view's resolution.
    let (under, base_cols): (Option<WriteTarget>, Vec<String>) = match s.inner.table(&db, &tname) {
        Ok(t) => (None, t.def.columns.iter().map(|c| c.name.clone()).collect()),
        Err(_) => match lookup(s, txn, &db, &tname)? {
            Some(inner) => match resolve(s, txn, &inner, depth + 1)? {
                Some(w) => {
                    let names = w.cols.iter().map(|(n, _)| n.clone()).collect();
                    (Some(w), names)
                }
                None => return Ok(None),
            },
            None => return Err(invalid(def)),
        },
    };
    let from_cols: Vec<(String, ast::Expr)> = match &under {
        Some(w) => w.cols.clone(),
        None => base_cols.iter().map(|c| (c.clone(), ast::Expr::Identifier(ast::Ident::new(c)))).collect(),
    };
    let mut exprs = Vec::new();
    for item in &sel.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e)
            | ast::SelectItem::ExprWithAlias { expr: e, .. }
            | ast::SelectItem::ExprWithAliases { expr: e, .. } => {
                if blocks_update(e) {
                    return Ok(None);
                }
                exprs.push(subst(e, &from_cols));
            }
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                exprs.extend(from_cols.iter().map(|(_, e)| e.clone()));
            }
        }
    }
    if exprs.len() != def.columns.len() {
        return Err(invalid(def));
    }
    let cols: Vec<(String, ast::Expr)> = def.columns.iter().cloned().zip(exprs).collect();
    let own = sel.selection.as_ref().map(|w| subst(w, &from_cols));
    let (db_, table, under_filter) = match under {
        Some(w) => (w.db, w.table, w.filter),
        None => (db, tname, None),
    };
    let filter = and(under_filter.clone(), own.clone());
    let me = format!("`{}`.`{}`", def.db, def.name);
    // As MariaDB: CASCADED checks every WHERE down the chain, LOCAL this
    // view's own, and without CHECK OPTION nothing is checked (not even
    // the CHECK OPTIONs of the views below).
    let checks = match def.check_option.as_str() {
        "CASCADED" => filter.clone().map(|f| vec![(me, f)]).unwrap_or_default(),
        "LOCAL" => own.map(|o| vec![(me, o)]).unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(Some(WriteTarget { db: db_, table, cols, filter, checks }))
}

/// The view `name` names for a write, when it names no table.
fn target_view(s: &Session, txn: &fractaldb::Txn, name: &ast::ObjectName) -> SqlResult<Option<ViewDef>> {
    let (db, n) = crate::ddl::qualify(s, name)?;
    if crate::infoschema::is_schema(&db) || s.inner.table(&db, &n).is_ok() {
        return Ok(None);
    }
    lookup(s, txn, &db, &n)
}

fn not_updatable(name: &str, what: &str) -> SqlError {
    SqlError::new(1288, "HY000", format!("The target table {name} of the {what} is not updatable"))
}

/// The view's table reference `rel` turned into its base table's, unaliased
/// (view columns are replaced by unqualified base columns).
fn retarget(rel: &ast::TableFactor, w: &WriteTarget) -> ast::TableFactor {
    let mut r = rel.clone();
    if let ast::TableFactor::Table { name, alias, .. } = &mut r {
        *name = base_name(w);
        *alias = None;
    }
    r
}

fn base_name(w: &WriteTarget) -> ast::ObjectName {
    ast::ObjectName::from(vec![ast::Ident::new(&w.db), ast::Ident::new(&w.table)])
}

/// The base column view column `c` writes, or 1054/1348.
fn writable(w: &WriteTarget, c: &str, place: &str) -> SqlResult<ast::Ident> {
    match w.cols.iter().find(|(n, _)| n.eq_ignore_ascii_case(c)) {
        None => Err(SqlError::unknown_column(c, place)),
        Some((_, ast::Expr::Identifier(i))) => Ok(i.clone()),
        Some((n, _)) => Err(SqlError::new(1348, "HY000", format!("Column '{n}' is not updatable"))),
    }
}

/// Runs `f` with the view's CHECK OPTION conditions in force and the
/// view's rights (its base table's privileges are not checked).
fn with_view<T>(
    s: &mut Session,
    w: &WriteTarget,
    f: impl FnOnce(&mut Session) -> SqlResult<T>,
) -> SqlResult<T> {
    let saved = std::mem::take(&mut s.view_checks);
    s.view_checks =
        w.checks.iter().map(|(n, e)| (w.db.clone(), w.table.clone(), n.clone(), e.clone())).collect();
    s.view_depth += 1;
    let r = f(s);
    s.view_depth -= 1;
    s.view_checks = saved;
    r
}

/// UPDATE of a view: `None` when the target is no view.
pub fn update(
    s: &mut Session,
    txn: &fractaldb::Txn,
    up: &ast::Update,
    ignore: bool,
) -> SqlResult<Option<Outcome>> {
    let ast::TableFactor::Table { name, .. } = &up.table.relation else { return Ok(None) };
    let Some(def) = target_view(s, txn, name)? else { return Ok(None) };
    if s.login.is_some() {
        s.check_table("UPDATE", &def.db, &def.name)?;
    }
    let w = write_target(s, txn, &def)?.ok_or_else(|| not_updatable(&def.name, "UPDATE"))?;
    let mut up2 = up.clone();
    up2.table.relation = retarget(&up.table.relation, &w);
    for a in &mut up2.assignments {
        let col = match &a.target {
            ast::AssignmentTarget::ColumnName(n) => crate::expr::ident_name(n).pop().unwrap_or_default(),
            ast::AssignmentTarget::Tuple(_) => return Err(SqlError::unsupported("tuple assignment")),
        };
        let base = writable(&w, &col, "SET")?;
        a.target = ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![base]));
        a.value = subst_checked(&a.value, &w.cols, "SET")?;
    }
    let own = up.selection.as_ref().map(|e| subst_checked(e, &w.cols, "FROM")).transpose()?;
    up2.selection = and(own, w.filter.clone());
    for o in &mut up2.order_by {
        o.expr = subst_checked(&o.expr, &w.cols, "ORDER BY")?;
    }
    with_view(s, &w, |s| crate::dml::update(s, txn, &up2, ignore)).map(Some)
}

/// DELETE from a view: `None` when the target is no view.
pub fn delete(
    s: &mut Session,
    txn: &fractaldb::Txn,
    del: &ast::Delete,
    ignore: bool,
) -> SqlResult<Option<Outcome>> {
    let from = match &del.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    let Some(ast::TableFactor::Table { name, .. }) = from.first().map(|f| &f.relation) else {
        return Ok(None);
    };
    let Some(def) = target_view(s, txn, name)? else { return Ok(None) };
    if s.login.is_some() {
        s.check_table("DELETE", &def.db, &def.name)?;
    }
    let w = write_target(s, txn, &def)?.ok_or_else(|| not_updatable(&def.name, "DELETE"))?;
    let mut d2 = del.clone();
    let rel = retarget(&from[0].relation, &w);
    match &mut d2.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v[0].relation = rel,
    }
    let own = del.selection.as_ref().map(|e| subst_checked(e, &w.cols, "FROM")).transpose()?;
    d2.selection = and(own, w.filter.clone());
    for o in &mut d2.order_by {
        o.expr = subst_checked(&o.expr, &w.cols, "ORDER BY")?;
    }
    with_view(s, &w, |s| crate::dml::delete(s, txn, &d2, ignore)).map(Some)
}

/// INSERT/REPLACE into a view: `None` when the target is no view.
pub fn insert(s: &mut Session, txn: &fractaldb::Txn, ins: &ast::Insert) -> SqlResult<Option<Outcome>> {
    let ast::TableObject::TableName(name) = &ins.table else { return Ok(None) };
    let Some(def) = target_view(s, txn, name)? else { return Ok(None) };
    if s.login.is_some() {
        s.check_table("INSERT", &def.db, &def.name)?;
    }
    let not_insertable = || {
        SqlError::new(
            1471,
            "HY000",
            format!("The target table {} of the INSERT is not insertable-into", def.name),
        )
    };
    let w = write_target(s, txn, &def)?.ok_or_else(not_insertable)?;
    let mut i2 = ins.clone();
    i2.table = ast::TableObject::TableName(base_name(&w));
    i2.table_alias = None;
    let named: Vec<String> = if ins.columns.is_empty() {
        // All the view's columns: each must be a distinct plain column.
        if w.cols.iter().any(|(_, e)| !matches!(e, ast::Expr::Identifier(_))) {
            return Err(not_insertable());
        }
        w.cols.iter().map(|(n, _)| n.clone()).collect()
    } else {
        ins.columns.iter().map(|c| crate::expr::ident_name(c).pop().unwrap_or_default()).collect()
    };
    // A named column that is no plain column makes the view not
    // insertable-into (1471), as MariaDB.
    let mut cols = Vec::new();
    for c in &named {
        match writable(&w, c, "INSERT INTO") {
            Ok(i) => cols.push(ast::ObjectName::from(vec![i])),
            Err(e) if e.code == 1348 => return Err(not_insertable()),
            Err(e) => return Err(e),
        }
    }
    i2.columns = cols;
    if let Some(ast::OnInsert::DuplicateKeyUpdate(v)) = &mut i2.on {
        for a in v {
            if let ast::AssignmentTarget::ColumnName(n) = &a.target {
                let col = crate::expr::ident_name(n).pop().unwrap_or_default();
                a.target = ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![writable(
                    &w,
                    &col,
                    "field list",
                )?]));
            }
            a.value = subst_checked(&a.value, &w.cols, "SELECT")?;
        }
    }
    with_view(s, &w, |s| crate::dml::insert(s, txn, &i2)).map(Some)
}

/// INFORMATION_SCHEMA.VIEWS.IS_UPDATABLE.
pub fn is_updatable(s: &Session, txn: &fractaldb::Txn, def: &ViewDef) -> bool {
    matches!(write_target(s, txn, def), Ok(Some(_)))
}
