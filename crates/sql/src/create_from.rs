//! CREATE TABLE ... LIKE and CREATE TABLE ... [AS] SELECT.
//!
//! LIKE copies the source's definition (columns, indexes, CHECKs, comment,
//! collation; not its rows nor its AUTO_INCREMENT counter) into new
//! dictionaries. SELECT runs the query first, types a column for each
//! result column MariaDB's way (a column read straight from a table keeps
//! that column's definition, without AUTO_INCREMENT; an expression takes
//! its result type, NOT NULL when it can never be NULL), adds them after
//! the declared columns (a declared column of the same name takes the
//! values instead), and inserts the rows with INSERT's conversions in the
//! transaction that commits the catalog record (see `ddl::create_table`).

use std::sync::Arc;

use fractaldb::{Isolation, Txn};
use sqlparser::ast;

use crate::catalog::{self, check_ident, Column, DefaultSpec, Ident, TableDef};
use crate::coerce::{self, StoreCtx};
use crate::error::{SqlError, SqlResult, Warning};
use crate::session::{ColumnMeta, Outcome, ResultSet, Session};
use crate::table::Table;
use crate::types::{Collation, SqlType, StrKind};
use crate::value::Value;

/// CREATE TABLE `to` LIKE `from` (the caller checked that `to` is free).
pub fn create_like(s: &mut Session, from: (String, String), to: (String, String)) -> SqlResult<Outcome> {
    let src = s.inner.table(&from.0, &from.1)?;
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    let id = s.inner.next_table_id(&txn)?;
    let mut def = TableDef {
        id,
        db: to.0.clone(),
        name: to.1.clone(),
        auto_increment_start: 1,
        schema_version: 1,
        // As in MariaDB, LIKE copies no foreign key.
        foreign_keys: Vec::new(),
        // Its rows are all of its first version.
        layouts: Vec::new(),
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        ..src.def.clone()
    };
    drop(src);
    crate::ddl::create_dicts(s, &mut def)?;
    let made = crate::ddl::dict_names(&def);
    let res = (|| -> SqlResult<Table> {
        catalog::put_table(&txn, &s.inner.catalog, (&to.0, &to.1), &def)?;
        txn.commit()?;
        s.inner.open_table(def.clone())
    })();
    match res {
        Ok(t) => {
            s.inner.schema.write().tables.insert(to, Arc::new(t));
            Ok(Outcome::done(0))
        }
        Err(e) => {
            for d in made {
                let _ = s.inner.env.drop_dictionary(&d);
            }
            Err(e)
        }
    }
}

/// Runs the query of CREATE TABLE ... SELECT at a snapshot of its own.
pub fn run_query(s: &mut Session, q: &ast::Query) -> SqlResult<ResultSet> {
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    let rs = crate::query::select(s, &txn, q, false)?;
    txn.commit()?;
    Ok(rs)
}

/// The column a result column of the query becomes.
pub fn column_from_meta(s: &Session, meta: &ColumnMeta) -> SqlResult<Column> {
    check_ident(&meta.name, Ident::Column)?;
    if !meta.org_name.is_empty() && !meta.org_table.is_empty() {
        if let Ok(t) = s.inner.table(&meta.db, &meta.org_table) {
            if let Some(i) = t.def.col_index(&meta.org_name) {
                let mut c = t.def.columns[i].clone();
                c.name = meta.name.clone();
                if c.auto_increment {
                    // MariaDB keeps NOT NULL and gives the implicit default.
                    c.auto_increment = false;
                    c.default =
                        DefaultSpec::Literal(coerce::implicit_default(&c.ty).to_bytes().unwrap_or_default());
                }
                if meta.nullable && !c.nullable {
                    // An outer join's column can be NULL.
                    c.nullable = true;
                    c.default = DefaultSpec::Null;
                }
                return Ok(c);
            }
        }
    }
    meta.ty.validate(&meta.name)?;
    Ok(Column {
        name: meta.name.clone(),
        ty: meta.ty.clone(),
        nullable: meta.nullable,
        default: if meta.nullable { DefaultSpec::Null } else { DefaultSpec::None },
        auto_increment: false,
        on_update_now: false,
        comment: String::new(),
    })
}

/// An expression's string column is made wide enough for the values the
/// query returned: the result metadata of some expressions is narrower
/// than MariaDB's (a CONCAT of long strings), and a CREATE ... SELECT must
/// not fail on its own rows. VARCHAR up to its limit, then TEXT types.
pub fn widen(col: &mut Column, rows: &[Vec<Value>], i: usize) {
    let SqlType::Str { kind, len, coll } = &mut col.ty else { return };
    if *kind == StrKind::Lob {
        return;
    }
    let binary = *coll == Collation::Binary;
    let longest = rows
        .iter()
        .filter_map(|r| match r.get(i) {
            Some(Value::Str(b)) => {
                Some(if binary { b.len() } else { String::from_utf8_lossy(b).chars().count() })
            }
            Some(v) if !v.is_null() => v.to_bytes().map(|b| b.len()),
            _ => None,
        })
        .max()
        .unwrap_or(0) as u64;
    if longest <= *len {
        return;
    }
    let bytes = longest * coll.charset().max_len();
    if bytes <= 65532 {
        *kind = StrKind::Var;
        *len = longest;
    } else {
        *kind = StrKind::Lob;
        *len = if bytes <= 16777215 { 16777215 } else { 4294967295 };
    }
}

/// Inserts the query's rows into the new table `t` (result column `i` into
/// table column `targets[i]`); every other column takes its default.
pub fn fill(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    targets: &[usize],
    rs: ResultSet,
) -> SqlResult<Outcome> {
    debug_assert_eq!(targets.len(), rs.columns.len());
    let def = &t.def;
    let strict = s.strict;
    let now = crate::dml::now_value(s);
    let checks = crate::dml::bind_checks(s, def)?;
    let mut warnings: Vec<Warning> = Vec::new();
    let mut n = 0u64;
    for (ri, vals) in rs.rows.into_iter().enumerate() {
        let rownum = ri + 1;
        let mut given: Vec<Option<Value>> = vec![None; def.columns.len()];
        for (v, &c) in vals.into_iter().zip(targets) {
            given[c] = Some(v);
        }
        let mut row = Vec::with_capacity(def.columns.len());
        for (i, col) in def.columns.iter().enumerate() {
            let v = match given[i].take() {
                Some(v) => v,
                None if col.auto_increment => Value::Null,
                None => match coerce::default_value(col, Some(now.clone()))? {
                    Some(v) => v,
                    None => coerce::implicit_default(&col.ty),
                },
            };
            let mut cx = StoreCtx { strict, row: rownum, warnings: &mut warnings };
            let mut v = coerce::store(v, col, &mut cx)?;
            if col.auto_increment && (v.is_null() || v.to_i64() == Some(0)) {
                v = coerce::store(Value::UInt(crate::dml::next_autoinc(t, txn)?), col, &mut cx)?;
            } else if col.auto_increment {
                crate::dml::note_autoinc(t, txn, &v)?;
            }
            if v.is_null() && !col.nullable {
                let e = SqlError::null_column(&col.name);
                if strict {
                    return Err(e);
                }
                warnings.push(Warning::from_error(&e));
                v = coerce::implicit_default(&col.ty);
            }
            row.push(v);
        }
        crate::dml::check_row(s, t, &checks, &row)?;
        crate::fk::check_child(s, txn, t, None, &row)?;
        let hidden = if def.primary.is_none() { Some(t.next_row_id()) } else { None };
        let pk = t.pk(&row, hidden)?;
        if let Some(d) = t.find_duplicate(txn, &row, &pk, None)? {
            let ix = &def.indexes[d.index];
            return Err(SqlError::dup_entry(&t.dup_entry_text(d.index, &row), &ix.name));
        }
        t.write_new(txn, &row, &pk)?;
        n += 1;
        s.check_killed()?;
    }
    t.add_rows(txn, n as i64)?;
    let nwarn = warnings.len();
    s.warnings.extend(warnings);
    Ok(Outcome::Done {
        affected: n,
        last_insert_id: 0,
        info: Some(format!("Records: {n}  Duplicates: 0  Warnings: {nwarn}")),
    })
}
