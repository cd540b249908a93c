//! The bulk path of loads: `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS`
//! (a dump's pattern around its INSERTs) and LOAD DATA into an empty table.
//!
//! DISABLE KEYS marks the table's deferrable indexes disabled
//! (`IndexDef::disabled`): writes stop maintaining them and nothing reads
//! them (the planner, joins, EXPLAIN's possible_keys, ANALYZE skip them;
//! SHOW INDEX says "disabled", as MariaDB says of a MyISAM table's).
//! ENABLE KEYS builds each disabled index anew from the rows, sorted and
//! written by the engine's loader (`bulk.rs`), the way ADD INDEX does, and
//! drops the stale dictionary. Both are metadata changes through
//! `alter::swap`, under the DDL lock, so the crash-safe DDL invariant holds
//! (a crash leaves the index disabled or rebuilt, never half of either).
//!
//! Deferrable: a plain (non-unique, non-primary) index that no foreign key
//! of the table or referencing it leads with (FK lookups read indexes) and
//! that the AUTO_INCREMENT column does not lead (the counter's start is
//! read from such an index). Unique indexes stay maintained, so a
//! duplicate is 1062 at the row that makes it, as MariaDB does for MyISAM
//! (its DISABLE KEYS also keeps unique keys).
//!
//! Transactions and visibility. Rows written while an index is disabled
//! are ordinary rows in the main dictionary, under the writing
//! transaction's rules (atomic statements, ROLLBACK, exact counts, unique
//! and foreign keys, CHECKs): only the index's entries are missing, and
//! no reader uses the index until ENABLE KEYS names a rebuilt one. The
//! rebuild holds the table's exclusive metadata lock (`mdl.rs`) from
//! before it reads the rows until the swap, so no writer's row is missed
//! (MyISAM's ENABLE KEYS locks the table too). A reader holding
//! the table's old definition during the swap reads through the primary
//! key or other indexes only, so it sees its snapshot's rows.
//!
//! LOAD DATA into an empty table (autocommit, no open transaction, no
//! index already disabled) defers the same indexes around the statement:
//! DISABLE KEYS, the load in its own transaction as always, ENABLE KEYS.
//! The load's rows commit or roll back as one statement; an error or a
//! crash in the middle leaves the table empty (or, after the commit, whole)
//! and at worst the indexes still disabled, which ENABLE KEYS rebuilds.
//! A load inside a transaction takes the ordinary path (DDL would commit
//! it). `fractaldb_bulk_load = OFF` turns both paths off: DISABLE KEYS is
//! then accepted and does nothing.

use std::sync::Arc;

use crate::catalog::IndexKind;
use crate::error::SqlResult;
use crate::session::{Outcome, Session};
use crate::table::Table;

/// `fractaldb_bulk_load` as the session sees it.
pub(crate) fn enabled(s: &Session) -> bool {
    s.session_var("fractaldb_bulk_load").and_then(|v| v.truth()).unwrap_or(true)
}

/// The indexes of `t` DISABLE KEYS may disable (see the module comment).
fn deferrable(s: &Session, t: &Table) -> Vec<usize> {
    let def = &t.def;
    // Column lists some foreign key looks rows up by in this table.
    let mut fk_cols: Vec<Vec<usize>> =
        def.foreign_keys.iter().map(|f| f.cols.iter().filter_map(|c| def.col_index(c)).collect()).collect();
    for o in s.inner.schema.read().tables.values() {
        for f in &o.def.foreign_keys {
            if f.ref_db == def.db && f.ref_table.eq_ignore_ascii_case(&def.name) {
                fk_cols.push(f.ref_cols.iter().filter_map(|c| def.col_index(c)).collect());
            }
        }
    }
    let auto = def.auto_col();
    def.secondary()
        .filter(|(_, ix)| ix.kind == IndexKind::Plain)
        .filter(|(_, ix)| auto.is_none() || ix.parts.first().map(|p| p.col) != auto)
        .filter(|(_, ix)| {
            !fk_cols.iter().any(|cols| {
                cols.len() <= ix.parts.len() && cols.iter().zip(&ix.parts).all(|(c, p)| *c == p.col)
            })
        })
        .map(|(i, _)| i)
        .collect()
}

/// `ALTER TABLE db.table DISABLE KEYS` / `ENABLE KEYS` (the privilege is
/// checked by the caller). Commits the open transaction, as any ALTER.
pub(crate) fn alter_keys(s: &mut Session, db: &str, table: &str, enable: bool) -> SqlResult<Outcome> {
    s.inner.table(db, table)?;
    s.commit_open()?;
    set_keys(s, db, table, enable)?;
    Ok(Outcome::done(0))
}

/// Disables the deferrable indexes, or rebuilds and enables every
/// disabled one; true if the definition changed.
fn set_keys(s: &mut Session, db: &str, table: &str, enable: bool) -> SqlResult<bool> {
    let inner = s.inner.clone();
    let _g = inner.ddl.lock();
    let old = s.inner.table(db, table)?;
    let mut def = old.def.clone();
    if enable {
        // ENABLE KEYS works whatever the variable says: it only finishes
        // what a DISABLE KEYS (or a load) left.
        let mut any = false;
        for ix in def.indexes.iter_mut().filter(|ix| ix.disabled) {
            ix.disabled = false;
            // An empty name: `swap` builds the index into a new dictionary
            // by the bulk loader and drops the stale one.
            ix.dict.clear();
            any = true;
        }
        if !any {
            return Ok(false);
        }
    } else {
        if !enabled(s) {
            return Ok(false);
        }
        let which: Vec<usize> =
            deferrable(s, &old).into_iter().filter(|&i| !def.indexes[i].disabled).collect();
        if which.is_empty() {
            return Ok(false);
        }
        for i in which {
            debug_assert_eq!(def.indexes[i].kind, IndexKind::Plain, "only plain indexes are disabled");
            def.indexes[i].disabled = true;
        }
    }
    let plan = crate::alter::Plan::metadata(def.columns.len());
    // Under the table's exclusive metadata lock, as the copying ALTER
    // (`alter::swap`, whose online index build would write the index
    // through the tree): no transaction writing the table is open while
    // the rows are read, so the rebuilt index misses none.
    {
        let _x = s.mdl_exclusive(db, table)?;
        crate::alter::swap_locked(s, &old, def, &plan)?;
    }
    // The rebuilt entries are committed for every snapshot: a transaction
    // begun before the swap reads the rows through the primary key, as its
    // snapshot has them, e.g. the table still empty before a load
    // (`Table::index_floor`, set by `swap_locked`).
    Ok(true)
}

/// Runs `load` (a LOAD DATA's rows, in its own transaction) with the
/// table's deferrable indexes disabled when the bulk path applies: the
/// variable is on, no transaction is open and autocommit is on, the table
/// is empty and has no index disabled already. Then rebuilds them,
/// whether the load succeeded or not (after a failed load the table is as
/// empty as before, and the rebuild is cheap).
pub(crate) fn deferring<T>(
    s: &mut Session,
    t: Arc<Table>,
    load: impl FnOnce(&mut Session, &Arc<Table>) -> SqlResult<T>,
) -> SqlResult<T> {
    let eligible = enabled(s)
        && s.txn.is_none()
        && s.autocommit
        && !t.def.indexes.iter().any(|ix| ix.disabled)
        && !deferrable(s, &t).is_empty()
        && is_empty(s, &t)?;
    if !eligible {
        return load(s, &t);
    }
    let (db, name) = (t.def.db.clone(), t.def.name.clone());
    if !set_keys(s, &db, &name, false)? {
        return load(s, &t);
    }
    let r = match s.inner.table(&db, &name) {
        Ok(nt) => load(s, &nt),
        Err(e) => Err(e),
    };
    let enabled = set_keys(s, &db, &name, true);
    match (r, enabled) {
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(v), Ok(_)) => Ok(v),
    }
}

/// True if `t` holds no row a new snapshot sees.
fn is_empty(s: &Session, t: &Table) -> SqlResult<bool> {
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    let first = txn.range(&t.main, None, None, false).next().transpose()?;
    let _ = txn.abort();
    Ok(first.is_none())
}
