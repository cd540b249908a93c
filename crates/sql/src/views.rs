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
//! view's column list. Views are read-only: INSERT, UPDATE and DELETE
//! through a view get 1471/1288 (MariaDB can write through simple views).

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

pub fn create(s: &mut Session, cv: &ast::CreateView) -> SqlResult<Outcome> {
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
        check_option: String::new(),
    };
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
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
    use crate::value::Value;
    vec![Value::str(&def.name), Value::str(&text), Value::str("utf8mb3"), Value::str("utf8mb3_general_ci")]
}
