//! FOREIGN KEY constraints, enforced as InnoDB enforces them.
//!
//! A constraint lives in its child table's `TableDef::foreign_keys`, with
//! columns by name. Definitions are checked when they are made (the parent
//! exists, its columns lead one of its indexes in order, the types match,
//! SET NULL has nullable columns: else 1005 errno 150), unless
//! `foreign_key_checks` is off, as dump files set it. The child gets an
//! index leading with its columns if it has none (named after the
//! constraint, as InnoDB does), so both directions are index reads:
//!
//! - a child row written (INSERT, UPDATE) with no NULL in the constraint's
//!   columns must find its parent row through the parent's index (1452);
//! - a parent row deleted, or updated in referenced columns, looks up the
//!   child rows through the child's index: RESTRICT / NO ACTION fail
//!   (1451), CASCADE deletes or updates them, SET NULL clears them, each
//!   through the same checks recursively (at most 15 levels, as InnoDB).
//!
//! Parent lookups are locked reads (`get_for_update` on the first match),
//! so a concurrent transaction cannot delete the parent of a row this one
//! wrote until it ends.

use std::sync::Arc;

use fractaldb::Txn;
use sqlparser::ast;

use crate::catalog::{Column, FkAction, ForeignKeyDef, IndexDef, IndexKind, IndexPart, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::expr::ident_name;
use crate::session::Session;
use crate::table::{self, key_form, Table};
use crate::types::SqlType;
use crate::value::Value;

/// InnoDB's limit on cascading.
const MAX_DEPTH: usize = 15;

/// `foreign_key_checks` of the session (on unless set to 0/OFF).
pub fn checks_on(s: &Session) -> bool {
    match s.sysvar("foreign_key_checks") {
        Ok(Value::Int(0)) | Ok(Value::UInt(0)) => false,
        Ok(Value::Str(b)) => !(b.eq_ignore_ascii_case(b"OFF") || b == b"0"),
        _ => true,
    }
}

fn action(a: &Option<ast::ReferentialAction>) -> FkAction {
    match a {
        None | Some(ast::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ast::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ast::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => FkAction::SetDefault,
    }
}

/// A constraint as written, before naming: (definition with an empty name
/// when unnamed, the name for its implicit index).
pub struct Declared {
    pub def: ForeignKeyDef,
    pub index_name: Option<String>,
}

/// A table-level FOREIGN KEY (or a column's REFERENCES, `column` being
/// that column) of a table in database `db`.
pub fn declared(db: &str, fk: &ast::ForeignKeyConstraint, column: Option<&str>) -> SqlResult<Declared> {
    let parts = ident_name(&fk.foreign_table);
    let (ref_db, ref_table) = match parts.as_slice() {
        [t] => (db.to_string(), t.clone()),
        [d, t] => (d.clone(), t.clone()),
        _ => return Err(SqlError::syntax(format!("'{}'", fk.foreign_table))),
    };
    let cols: Vec<String> = match column {
        Some(c) => vec![c.to_string()],
        None => fk.columns.iter().map(|c| c.value.clone()).collect(),
    };
    let ref_cols: Vec<String> = fk.referred_columns.iter().map(|c| c.value.clone()).collect();
    let name = fk.name.as_ref().map(|n| n.value.clone()).unwrap_or_default();
    Ok(Declared {
        index_name: fk.name.as_ref().or(fk.index_name.as_ref()).map(|n| n.value.clone()),
        def: ForeignKeyDef {
            name: if name.is_empty() {
                fk.index_name.as_ref().map(|n| n.value.clone()).unwrap_or_default()
            } else {
                name
            },
            cols,
            ref_db,
            ref_table,
            ref_cols,
            on_delete: action(&fk.on_delete),
            on_update: action(&fk.on_update),
        },
    })
}

/// Adds `d` to `def` (the child): names it `<table>_ibfk_<n>` if unnamed,
/// checks it (with `foreign_key_checks` on) and gives the child an index
/// leading with its columns if none does. `parent` is the parent's
/// definition when it is another table (`None`: the parent is `def` itself
/// or does not exist).
pub fn add(s: &Session, def: &mut TableDef, d: Declared) -> SqlResult<()> {
    let mut fk = d.def;
    if fk.name.is_empty() {
        let prefix = format!("{}_ibfk_", def.name);
        let n = def
            .foreign_keys
            .iter()
            .filter_map(|f| f.name.strip_prefix(&prefix).and_then(|n| n.parse::<u64>().ok()))
            .max()
            .unwrap_or(0);
        fk.name = format!("{prefix}{}", n + 1);
    }
    if def.foreign_keys.iter().any(|f| f.name.eq_ignore_ascii_case(&fk.name)) {
        return Err(SqlError::new(
            1826,
            "HY000",
            format!("Duplicate FOREIGN KEY constraint name '{}'", fk.name),
        ));
    }
    // The column lists must pair up, checks or not (MariaDB: 1239 or
    // errno 150); an empty one would leave the child's index without parts.
    if fk.cols.is_empty() || fk.cols.len() != fk.ref_cols.len() {
        return Err(incorrectly_formed(&def.db, &def.name));
    }
    let mut child_cols = Vec::new();
    for c in &fk.cols {
        child_cols.push(def.col_index(c).ok_or_else(|| SqlError::key_column_missing(c))?);
    }
    if checks_on(s) {
        let self_ref = fk.ref_db == def.db && fk.ref_table.eq_ignore_ascii_case(&def.name);
        let parent_def = if self_ref {
            Some(def.clone())
        } else {
            s.inner.table(&fk.ref_db, &fk.ref_table).ok().map(|t| t.def.clone())
        };
        let ok = match &parent_def {
            Some(p) => well_formed(def, &child_cols, p, &fk),
            None => false,
        };
        if !ok {
            return Err(incorrectly_formed(&def.db, &def.name));
        }
    }
    // The child's index.
    let covered = def.indexes.iter().any(|ix| {
        ix.parts.len() >= child_cols.len()
            && ix.parts.iter().zip(&child_cols).all(|(p, c)| p.col == *c && p.prefix.is_none())
    });
    if !covered {
        let base = d.index_name.unwrap_or_else(|| def.columns[child_cols[0]].name.clone());
        let mut name = base.clone();
        let mut k = 2;
        while def.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)) {
            name = format!("{base}_{k}");
            k += 1;
        }
        def.indexes.push(IndexDef {
            name,
            kind: IndexKind::Plain,
            clustering: false,
            parts: child_cols.iter().map(|&c| IndexPart { col: c, prefix: None, desc: false }).collect(),
            dict: String::new(),
            comment: String::new(),
            disabled: false,
            carry: false,
            carry_form: 0,
        });
    }
    def.foreign_keys.push(fk);
    Ok(())
}

pub fn incorrectly_formed(db: &str, table: &str) -> SqlError {
    SqlError::new(
        1005,
        "HY000",
        format!("Can't create table `{db}`.`{table}` (errno: 150 \"Foreign key constraint is incorrectly formed\")"),
    )
}

/// The parent's index whose leading parts are `cols` (positions in the
/// parent), in order: the one lookups of a parent row use.
fn parent_index(p: &TableDef, cols: &[usize]) -> Option<usize> {
    p.indexes.iter().position(|ix| {
        !ix.disabled
            && ix.parts.len() >= cols.len()
            && ix.parts.iter().zip(cols).all(|(part, c)| part.col == *c && part.prefix.is_none())
    })
}

/// InnoDB's rules: as many columns, the parent's leading an index, the
/// same types (strings of one character set, any length), SET NULL only
/// on nullable columns.
fn well_formed(child: &TableDef, child_cols: &[usize], parent: &TableDef, fk: &ForeignKeyDef) -> bool {
    if fk.cols.len() != fk.ref_cols.len() || fk.cols.is_empty() {
        return false;
    }
    let mut pcols = Vec::new();
    for c in &fk.ref_cols {
        match parent.col_index(c) {
            Some(i) => pcols.push(i),
            None => return false,
        }
    }
    if parent_index(parent, &pcols).is_none() {
        return false;
    }
    let set_null = fk.on_delete == FkAction::SetNull || fk.on_update == FkAction::SetNull;
    child_cols.iter().zip(&pcols).all(|(&c, &p)| {
        let (cc, pc) = (&child.columns[c], &parent.columns[p]);
        compatible(&cc.ty, &pc.ty) && (!set_null || cc.nullable)
    })
}

pub fn compatible(a: &SqlType, b: &SqlType) -> bool {
    match (a, b) {
        (SqlType::Str { coll: x, .. }, SqlType::Str { coll: y, .. }) => x.charset() == y.charset(),
        (
            SqlType::Decimal { precision: p, scale: s, .. },
            SqlType::Decimal { precision: q, scale: t, .. },
        ) => p == q && s == t,
        _ => a == b,
    }
}

/// `CONSTRAINT ... FOREIGN KEY ... REFERENCES ...` as SHOW CREATE TABLE
/// and the error messages write it (`db` is the child's database: a
/// parent elsewhere is named with its database).
pub fn text(db: &str, fk: &ForeignKeyDef) -> String {
    let q = |n: &str| format!("`{}`", n.replace('`', "``"));
    let list = |v: &[String]| v.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
    let parent =
        if fk.ref_db == db { q(&fk.ref_table) } else { format!("{}.{}", q(&fk.ref_db), q(&fk.ref_table)) };
    let mut t = format!(
        "CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {parent} ({})",
        q(&fk.name),
        list(&fk.cols),
        list(&fk.ref_cols)
    );
    if fk.on_delete != FkAction::Restrict {
        t += &format!(" ON DELETE {}", fk.on_delete.sql());
    }
    if fk.on_update != FkAction::Restrict {
        t += &format!(" ON UPDATE {}", fk.on_update.sql());
    }
    t
}

fn child_error(child: &TableDef, fk: &ForeignKeyDef) -> SqlError {
    SqlError::new(
        1452,
        "23000",
        format!(
            "Cannot add or update a child row: a foreign key constraint fails (`{}`.`{}`, {})",
            child.db,
            child.name,
            text(&child.db, fk)
        ),
    )
}

fn parent_error(child: &TableDef, fk: &ForeignKeyDef) -> SqlError {
    SqlError::new(
        1451,
        "23000",
        format!(
            "Cannot delete or update a parent row: a foreign key constraint fails (`{}`.`{}`, {})",
            child.db,
            child.name,
            text(&child.db, fk)
        ),
    )
}

/// 1451 for DROP TABLE of a parent.
pub fn drop_parent_error() -> SqlError {
    SqlError::new(1451, "23000", "Cannot delete or update a parent row: a foreign key constraint fails")
}

/// The constraints of other tables that reference `db`.`table`.
pub fn children(s: &Session, db: &str, table: &str) -> Vec<(Arc<Table>, usize)> {
    let sc = s.inner.schema.read();
    let mut out = Vec::new();
    for t in sc.tables.values() {
        for (i, fk) in t.def.foreign_keys.iter().enumerate() {
            if fk.ref_db == db && fk.ref_table.eq_ignore_ascii_case(table) {
                out.push((t.clone(), i));
            }
        }
    }
    out
}

/// The key prefix of `vals` (one per part) in index `ix` of `t`.
fn prefix(t: &Table, ix: &IndexDef, vals: &[Value]) -> SqlResult<Vec<u8>> {
    let mut out = Vec::new();
    for (p, v) in ix.parts.iter().zip(vals) {
        let ty = &t.def.columns[p.col].ty;
        crate::keycodec::encode_part(&mut out, &key_form(v, ty), ty, p.desc, None)?;
    }
    Ok(out)
}

/// The first byte string after every string starting with `p`.
fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut v = p.to_vec();
    while let Some(last) = v.pop() {
        if last != 0xff {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

/// Primary keys of the rows of `t` whose index `i` starts with `vals`
/// (all of them, or the first only).
fn rows_by_prefix(
    txn: &Txn,
    t: &Table,
    i: usize,
    vals: &[Value],
    first_only: bool,
) -> SqlResult<Vec<Vec<u8>>> {
    let ix = &t.def.indexes[i];
    let pre = prefix(t, ix, vals)?;
    let hi = successor(&pre);
    let dict = if ix.kind == IndexKind::Primary {
        &t.main
    } else {
        t.sec[i].as_ref().expect("a secondary dictionary")
    };
    let mut out = Vec::new();
    for kv in txn.range(dict, Some(&pre), hi.as_deref(), false) {
        let (k, v) = kv?;
        let pk = if ix.kind == IndexKind::Primary {
            k
        } else if ix.clustering {
            t.pk(&t.decode_full_row(&v, None)?, None)?
        } else {
            t.entry_pk(ix, &k, &v)?.to_vec()
        };
        out.push(pk);
        if first_only {
            break;
        }
    }
    Ok(out)
}

/// Values of columns `names` of `row` in `t`, converted to the types of
/// the corresponding columns `to` (so they encode as keys of that table).
fn values(t: &TableDef, row: &[Value], names: &[String], to: &[&Column]) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for (n, col) in names.iter().zip(to) {
        let v = row[t.col_index(n)?].clone();
        if v.is_null() {
            return None;
        }
        let mut w = Vec::new();
        let mut cx = crate::coerce::StoreCtx { strict: false, row: 1, warnings: &mut w };
        out.push(crate::coerce::store(v, col, &mut cx).ok()?);
    }
    Some(out)
}

/// Checks the constraints of child table `t` for a row written (`old` is
/// the row it replaces): each constraint whose columns changed and hold no
/// NULL must find its parent row.
pub fn check_child(s: &Session, txn: &Txn, t: &Table, old: Option<&[Value]>, new: &[Value]) -> SqlResult<()> {
    if t.def.foreign_keys.is_empty() || !checks_on(s) {
        return Ok(());
    }
    for fk in &t.def.foreign_keys {
        let idx: Vec<usize> = fk.cols.iter().filter_map(|c| t.def.col_index(c)).collect();
        if let Some(o) = old {
            if idx.iter().all(|&i| crate::dml::same_value(&o[i], &new[i])) {
                continue;
            }
        }
        if idx.iter().any(|&i| new[i].is_null()) {
            continue;
        }
        let parent = if fk.ref_db == t.def.db && fk.ref_table.eq_ignore_ascii_case(&t.def.name) {
            None
        } else {
            Some(s.inner.table(&fk.ref_db, &fk.ref_table).map_err(|_| child_error(&t.def, fk))?)
        };
        let p: &Table = parent.as_deref().unwrap_or(t);
        let pcols: Vec<usize> = fk
            .ref_cols
            .iter()
            .map(|c| p.def.col_index(c))
            .collect::<Option<_>>()
            .ok_or_else(|| child_error(&t.def, fk))?;
        let pi = parent_index(&p.def, &pcols).ok_or_else(|| child_error(&t.def, fk))?;
        let to: Vec<&Column> = pcols.iter().map(|&c| &p.def.columns[c]).collect();
        let vals = values(&t.def, new, &fk.cols, &to).ok_or_else(|| child_error(&t.def, fk))?;
        // A self-reference may be satisfied by the row itself.
        if parent.is_none() && pcols.iter().zip(&vals).all(|(&c, v)| crate::dml::same_value(&new[c], v)) {
            continue;
        }
        let found = rows_by_prefix(txn, p, pi, &vals, true)?;
        match found.first() {
            // Lock the parent row: it cannot go while this row needs it.
            Some(pk) if txn.get_for_update(&p.main, pk)?.is_some() => {}
            _ => return Err(child_error(&t.def, fk)),
        }
    }
    Ok(())
}

/// The child rows referencing parent row `row` of `t` through each
/// constraint, when `changed` says the referenced columns changed.
fn each_child(
    s: &Session,
    t: &Table,
    row: &[Value],
    mut f: impl FnMut(&Arc<Table>, &ForeignKeyDef, Vec<Value>) -> SqlResult<()>,
    changed: impl Fn(&ForeignKeyDef) -> bool,
) -> SqlResult<()> {
    if !checks_on(s) {
        return Ok(());
    }
    for (child, i) in children(s, &t.def.db, &t.def.name) {
        let fk = child.def.foreign_keys[i].clone();
        if !changed(&fk) {
            continue;
        }
        let ccols: Vec<&Column> =
            fk.cols.iter().filter_map(|c| child.def.col_index(c)).map(|c| &child.def.columns[c]).collect();
        if ccols.len() != fk.cols.len() {
            continue;
        }
        let Some(vals) = values(&t.def, row, &fk.ref_cols, &ccols) else { continue };
        f(&child, &fk, vals)?;
    }
    Ok(())
}

/// The child index leading with the constraint's columns.
fn child_index(child: &TableDef, fk: &ForeignKeyDef) -> Option<usize> {
    let cols: Vec<usize> = fk.cols.iter().filter_map(|c| child.col_index(c)).collect();
    parent_index(child, &cols)
}

/// Parent row `row` of `t` is being deleted: RESTRICT, CASCADE, SET NULL.
pub fn on_parent_delete(s: &Session, txn: &Txn, t: &Table, row: &[Value], depth: usize) -> SqlResult<()> {
    each_child(
        s,
        t,
        row,
        |child, fk, vals| {
            let Some(ci) = child_index(&child.def, fk) else { return Ok(()) };
            let pks = rows_by_prefix(txn, child, ci, &vals, false)?;
            for pk in pks {
                let Some(crow) = table::fetch(child, txn, &pk, true)? else { continue };
                if depth >= MAX_DEPTH {
                    return Err(parent_error(&child.def, fk));
                }
                match fk.on_delete {
                    FkAction::Restrict | FkAction::NoAction | FkAction::SetDefault => {
                        return Err(parent_error(&child.def, fk))
                    }
                    FkAction::Cascade => {
                        on_parent_delete(s, txn, child, &crow, depth + 1)?;
                        child.remove(txn, &crow, &pk)?;
                        child.add_rows(txn, -1)?;
                    }
                    FkAction::SetNull => set_child(s, txn, child, fk, &pk, &crow, None, depth)?,
                }
            }
            Ok(())
        },
        |_| true,
    )
}

/// Parent row `old` of `t` becomes `new`: for each constraint whose
/// referenced columns changed, RESTRICT, CASCADE, SET NULL.
pub fn on_parent_update(
    s: &Session,
    txn: &Txn,
    t: &Table,
    old: &[Value],
    new: &[Value],
    depth: usize,
) -> SqlResult<()> {
    let changed = |fk: &ForeignKeyDef| {
        fk.ref_cols
            .iter()
            .any(|c| t.def.col_index(c).is_some_and(|i| !crate::dml::same_value(&old[i], &new[i])))
    };
    each_child(
        s,
        t,
        old,
        |child, fk, vals| {
            let Some(ci) = child_index(&child.def, fk) else { return Ok(()) };
            let pks = rows_by_prefix(txn, child, ci, &vals, false)?;
            for pk in pks {
                let Some(crow) = table::fetch(child, txn, &pk, true)? else { continue };
                if depth >= MAX_DEPTH {
                    return Err(parent_error(&child.def, fk));
                }
                match fk.on_update {
                    FkAction::Restrict | FkAction::NoAction | FkAction::SetDefault => {
                        return Err(parent_error(&child.def, fk))
                    }
                    FkAction::Cascade => {
                        let ccols: Vec<&Column> = fk
                            .cols
                            .iter()
                            .filter_map(|c| child.def.col_index(c))
                            .map(|c| &child.def.columns[c])
                            .collect();
                        let newvals = values(&t.def, new, &fk.ref_cols, &ccols);
                        set_child(s, txn, child, fk, &pk, &crow, newvals, depth)?
                    }
                    FkAction::SetNull => set_child(s, txn, child, fk, &pk, &crow, None, depth)?,
                }
            }
            Ok(())
        },
        changed,
    )
}

/// Sets the constraint's columns of child row `crow` to `vals` (NULL when
/// `None`), cascading further.
#[allow(clippy::too_many_arguments)]
fn set_child(
    s: &Session,
    txn: &Txn,
    child: &Table,
    fk: &ForeignKeyDef,
    pk: &[u8],
    crow: &[Value],
    vals: Option<Vec<Value>>,
    depth: usize,
) -> SqlResult<()> {
    let mut nrow = crow.to_vec();
    for (k, c) in fk.cols.iter().enumerate() {
        if let Some(i) = child.def.col_index(c) {
            nrow[i] = vals.as_ref().map_or(Value::Null, |v| v[k].clone());
        }
    }
    on_parent_update(s, txn, child, crow, &nrow, depth + 1)?;
    let new_pk = if child.def.primary.is_some() { child.pk(&nrow, None)? } else { pk.to_vec() };
    if let Some(d) = child.find_duplicate(txn, &nrow, &new_pk, Some(pk))? {
        return Err(child.dup_error(&d, &nrow));
    }
    child.replace(txn, crow, pk, &nrow, &new_pk)
}

/// Every row of `t` satisfies constraint `fk` (ALTER TABLE ADD FOREIGN KEY
/// with checks on): else 1452.
pub fn check_existing(s: &Session, txn: &Txn, t: &Table, fk: &ForeignKeyDef) -> SqlResult<()> {
    if !checks_on(s) {
        return Ok(());
    }
    let view = t.with_def(TableDef { foreign_keys: vec![fk.clone()], ..t.def.clone() });
    for kv in txn.range(&t.main, None, None, false) {
        let (k, v) = kv?;
        let row = t.decode_row(&k, &v)?;
        check_child(s, txn, &view, None, &row)?;
    }
    Ok(())
}
