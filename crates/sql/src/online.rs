//! Online index builds: ALTER TABLE ... ADD [UNIQUE | CLUSTERING] INDEX
//! and CREATE INDEX fill the new index while other sessions go on
//! inserting, updating and deleting rows of the table (MySQL's
//! `ALGORITHM=INPLACE, LOCK=NONE`; TokuDB's hot index creation). The
//! statement returns once the index is complete and named by the catalog.
//!
//! Three steps (`add_indexes`):
//! 1. Under the table's exclusive metadata lock (`mdl.rs`; so no
//!    transaction is writing the table): the new indexes' dictionaries are
//!    created empty and registered on the open table as being built
//!    (`Table::building`). The catalog does not name them.
//! 2. Without it: the build walks the primary key in chunks of
//!    [`CHUNK`] rows, each in its own short read-committed transaction,
//!    reading every row of the chunk under its write lock
//!    (`get_for_update`: the newest committed version) and putting its
//!    entries (a row a writer holds ends the chunk, see `build`). Meanwhile every writer maintains the new indexes for every
//!    row it writes (`on_insert`, `on_delete`, `on_replace`, called by the
//!    `Table` write paths), whether the build has passed that row or not.
//! 3. Under the exclusive lock again: the definition naming the indexes is
//!    committed and the table reopened with them (`alter::swap_locked`);
//!    from then on the planner may use them.
//!
//! **Invariant:** once step 3 commits, each index holds exactly the
//! entries of the table's committed rows. Why: a row's entries are only
//! written under that row's write lock (writers hold it from their read
//! of the row to their commit; the build from its `get_for_update` to
//! the chunk's commit), so the writes of one row's entries are serialised
//! in the order of those lock holders. Every writer of a row after step 1
//! deletes the entry of the version it replaces and puts its new
//! version's. The build puts the entry of the version it read, which is
//! the newest committed one under the lock: if a writer changes the row
//! later, that writer deletes this entry; if one changed it before, the
//! build writes the same entry the writer did. A row the build does not
//! see (inserted after its chunk was read, or deleted before) is a
//! writer's row: the writer put (or deleted) its entry. And no writer
//! from before step 1 is still writing: step 1 held the exclusive lock,
//! which waits for every transaction that wrote the table to end.
//!
//! **UNIQUE:** the build checks each key against the index as it goes
//! (1062 on a different row's key). A writer whose new key already
//! belongs to another row in an index being built does not fail; it
//! marks the build failed with that 1062, as InnoDB's online ALTER does
//! (so even a duplicate that lived only briefly fails the ALTER). A failed
//! build unregisters its indexes and drops their dictionaries under the
//! exclusive lock (waiting, without a time limit, for writers that wrote
//! them to end).
//!
//! **Crash:** the catalog names an index only after step 3, and
//! `Database::open` drops dictionaries no record names: a crash in the
//! middle leaves the table as it was, without the half-built index.

use std::sync::Arc;

use fractaldb::{Dictionary, Isolation, Txn, TxnOptions};
use parking_lot::Mutex;

use crate::catalog::{IndexDef, IndexKind, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::progress::Stage;
use crate::session::{Outcome, Session};
use crate::table::Table;
use crate::value::Value;

/// Rows per build transaction: each holds the write locks of its rows
/// until it commits, so writers of those rows wait for at most one chunk.
const CHUNK: usize = 500;

/// Times a row the build waits for is tried again after losing a deadlock
/// or a lock wait to a writer before the build gives up.
const RETRIES: u32 = 100;

/// An index being built, registered on its table (`Table::building`).
pub struct Building {
    /// Its definition (column positions as in the table's).
    pub ix: IndexDef,
    pub dict: Dictionary,
    /// A duplicate a writer made in this UNIQUE index: the build fails
    /// with it.
    dup: Mutex<Option<SqlError>>,
}

type Hook = Arc<dyn Fn(&str, &str) + Send + Sync>;

static HOOK: std::sync::Mutex<Option<Hook>> = std::sync::Mutex::new(None);

/// For tests: `hook(table, point)` runs at the build's points: "registered"
/// (step 1 done, the lock released) and "chunk" (a chunk committed).
#[doc(hidden)]
pub fn set_build_hook(hook: Option<Hook>) {
    *HOOK.lock().unwrap_or_else(|e| e.into_inner()) = hook;
}

fn hook(table: &str, point: &str) {
    let h = HOOK.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(h) = h {
        h(table, point);
    }
}

/// Whether `swap` can build `def`'s new indexes online: nothing else
/// changes rows or needs them read (a new foreign key or CHECK), and the
/// table keeps its name.
pub(crate) fn eligible(old: &TableDef, def: &TableDef, plan: &crate::alter::Plan) -> bool {
    !plan.rows_change
        && plan.check_fks.is_empty()
        && !plan.check_rows
        && plan.children.is_empty()
        && def.db == old.db
        && def.name == old.name
        // An instant column change in the same statement takes the
        // locked path: the build's entries are computed in the new
        // layout, which writers do not use until the record commits.
        && def.schema_version == old.schema_version
        && def.indexes.iter().any(|ix| ix.dict.is_empty() && ix.kind != IndexKind::Primary)
}

/// ALTER TABLE with new indexes only (see the module comment). The caller
/// holds the DDL lock, so `old` is the table's current definition.
pub(crate) fn add_indexes(
    s: &mut Session,
    old: &Arc<Table>,
    mut def: TableDef,
    plan: &crate::alter::Plan,
) -> SqlResult<Outcome> {
    let (db, name) = (old.def.db.clone(), old.def.name.clone());
    let base = format!("{db}/{name}");
    let opts = crate::rowformat::dict_options(&def);
    let mut building: Vec<Arc<Building>> = Vec::new();
    {
        let _x = s.mdl_exclusive(&db, &name)?;
        for ix in def.indexes.iter_mut().filter(|i| i.dict.is_empty() && i.kind != IndexKind::Primary) {
            ix.new_dictionary(s.inner.fresh_dict_name(&format!("{base}/key-{}", ix.name)));
            match s.inner.env.create_dictionary(&ix.dict, opts.clone()) {
                Ok(dict) => building.push(Arc::new(Building { ix: ix.clone(), dict, dup: Mutex::new(None) })),
                Err(e) => {
                    for b in &building {
                        let _ = s.inner.env.drop_dictionary(b.dict.name());
                    }
                    return Err(e.into());
                }
            }
        }
        debug_assert!(old.building.read().is_empty(), "DDL is serialised: one build per table");
        *old.building.write() = building.clone();
    }
    hook(&name, "registered");
    let built = build(s, old, &building).and_then(|()| {
        let _x = s.mdl_exclusive(&db, &name)?;
        // A writer's duplicate noted after the build's last chunk.
        check_dups(&building)?;
        old.building.write().clear();
        crate::alter::swap_locked(s, old, def, plan)
    });
    if built.is_err() {
        // Every transaction that wrote the new dictionaries ends before
        // they go.
        let _x = s.inner.mdl.exclusive(s.connection_id(), &db, &name, None);
        old.building.write().clear();
        for b in &building {
            let _ = s.inner.env.drop_dictionary(b.dict.name());
        }
    }
    built
}

fn check_dups(building: &[Arc<Building>]) -> SqlResult<()> {
    for b in building {
        if let Some(e) = b.dup.lock().clone() {
            return Err(e);
        }
    }
    Ok(())
}

/// Step 2: fills `building` from the rows of `t`, chunk by chunk.
///
/// A chunk never waits for a row lock (its transaction's timeout is
/// zero): at the first row a writer holds, it commits what it did, and
/// that row is then taken alone by a transaction that waits for it
/// holding nothing else. So the build is never part of a lock cycle with
/// writers through the rows of a chunk, and a writer waits for at most
/// one chunk's work.
fn build(s: &Session, t: &Table, building: &[Arc<Building>]) -> SqlResult<()> {
    let opts = TxnOptions {
        isolation: Isolation::ReadCommitted,
        lock_timeout: Some(std::time::Duration::ZERO),
        writes_see_latest: true,
        client_id: s.connection_id(),
    };
    let waiting = TxnOptions { lock_timeout: None, ..opts };
    let total = {
        let txn = s.inner.env.begin_with(opts)?;
        let n = t.row_estimate(&txn)?;
        txn.commit()?;
        n
    };
    crate::progress::alter(Stage::AlterIndex, 0, total);
    let mut after: Option<Vec<u8>> = None;
    let mut done = 0u64;
    loop {
        s.check_killed()?;
        check_dups(building)?;
        let txn = s.inner.env.begin_with(opts)?;
        let step = chunk(t, &txn, building, after.as_deref(), CHUNK, true);
        let step = step.and_then(|r| txn.commit().map(|()| r).map_err(Into::into));
        let (n, last, blocked) = step?;
        done += n;
        if let Some(l) = last {
            after = Some(l);
        }
        if blocked {
            // The next row is a writer's: wait for it alone.
            let mut tries = 0;
            let (n, last) = loop {
                let txn = s.inner.env.begin_with(waiting)?;
                match chunk(t, &txn, building, after.as_deref(), 1, false) {
                    Ok((n, last, _)) => {
                        txn.commit()?;
                        break (n, last);
                    }
                    // Lost a deadlock (through a UNIQUE key) or a lock wait:
                    // read the row again.
                    Err(e) if (e.code == 1213 || e.code == 1205) && tries < RETRIES => {
                        let _ = txn.abort();
                        tries += 1;
                        s.check_killed()?;
                    }
                    Err(e) => {
                        let _ = txn.abort();
                        return Err(e);
                    }
                }
            };
            done += n;
            if let Some(l) = last {
                after = Some(l);
            }
        } else if n == 0 {
            break;
        }
        crate::progress::alter(Stage::AlterIndex, done, total);
        hook(&t.def.name, "chunk");
    }
    check_dups(building)
}

/// One chunk: up to `max` rows after `after` (from the start with `None`),
/// each read under its write lock, their entries put. Returns how many
/// rows it finished, the last one's key, and whether it stopped at a row
/// a writer holds (`nowait`: its transaction waits for no lock; rows
/// before that one are finished).
fn chunk(
    t: &Table,
    txn: &Txn,
    building: &[Arc<Building>],
    after: Option<&[u8]>,
    max: usize,
    nowait: bool,
) -> SqlResult<(u64, Option<Vec<u8>>, bool)> {
    let mut pks: Vec<Vec<u8>> = Vec::with_capacity(max);
    for kv in txn.range(&t.main, after, None, false) {
        let (k, _) = kv?;
        if Some(k.as_slice()) == after {
            continue;
        }
        pks.push(k);
        if pks.len() == max {
            break;
        }
    }
    let mut finished = 0usize;
    for pk in &pks {
        match row_entries(t, txn, building, pk) {
            Ok(()) => finished += 1,
            Err(e) if nowait && e.code == 1205 => {
                // Entries this row already got are its newest version's
                // (its lock is held): writing them again later is harmless.
                return Ok((finished as u64, (finished > 0).then(|| pks[finished - 1].clone()), true));
            }
            Err(e) => return Err(e),
        }
    }
    Ok((finished as u64, pks.pop(), false))
}

/// Puts the entries of the row at `pk`: its newest committed version,
/// locked until the transaction ends (nothing if a writer deleted it
/// since the range read it).
fn row_entries(t: &Table, txn: &Txn, building: &[Arc<Building>], pk: &[u8]) -> SqlResult<()> {
    let Some(bytes) = txn.get_for_update(&t.main, pk)? else { return Ok(()) };
    let row = t.decode_row(pk, &bytes)?;
    for b in building {
        let (k, v, unique) = entry(t, &b.ix, &row, pk)?;
        if unique {
            if let Some(e) = duplicate(t, b, txn, &k, pk, &row)? {
                return Err(e);
            }
        }
        txn.put(&b.dict, &k, &v)?;
    }
    Ok(())
}

/// The entry of `row` (primary key `pk`) in index `ix`, and whether its
/// key is a UNIQUE one to check (`Table::entry_for`).
fn entry(t: &Table, ix: &IndexDef, row: &[Value], pk: &[u8]) -> SqlResult<(Vec<u8>, Vec<u8>, bool)> {
    t.entry_for(ix, row, pk)
}

/// 1062 if UNIQUE `key` of `b` holds a row other than `pk` (read under
/// its write lock).
fn duplicate(
    t: &Table,
    b: &Building,
    txn: &Txn,
    key: &[u8],
    pk: &[u8],
    row: &[Value],
) -> SqlResult<Option<SqlError>> {
    let Some(v) = txn.get_for_update(&b.dict, key)? else { return Ok(None) };
    let same = if !b.ix.clustering {
        v == pk
    } else if t.def.primary.is_some() {
        t.pk(&t.decode_full_row(&v, None)?, None)? == pk
    } else {
        // A clustering entry of a table without a primary key carries no
        // row id: the same row is the same values.
        v == t.encode_full_row(row)?
    };
    if same {
        return Ok(None);
    }
    let text: Vec<String> =
        b.ix.parts
            .iter()
            .map(|p| {
                let s = row[p.col].render();
                match p.prefix {
                    Some(n) => s.chars().take(n as usize).collect(),
                    None => s,
                }
            })
            .collect();
    Ok(Some(SqlError::dup_entry(&text.join("-"), &b.ix.name)))
}

/// A writer's new row: its entries in the indexes being built.
pub(crate) fn on_insert(t: &Table, txn: &Txn, row: &[Value], pk: &[u8]) -> SqlResult<()> {
    let building = t.building.read();
    for b in building.iter() {
        put(t, b, txn, row, pk)?;
    }
    Ok(())
}

fn put(t: &Table, b: &Building, txn: &Txn, row: &[Value], pk: &[u8]) -> SqlResult<()> {
    let (k, v, unique) = entry(t, &b.ix, row, pk)?;
    if unique {
        if let Some(e) = duplicate(t, b, txn, &k, pk, row)? {
            b.dup.lock().get_or_insert(e);
        }
    }
    txn.put(&b.dict, &k, &v)?;
    Ok(())
}

/// A writer's deleted row: its entries go.
pub(crate) fn on_delete(t: &Table, txn: &Txn, row: &[Value], pk: &[u8]) -> SqlResult<()> {
    let building = t.building.read();
    for b in building.iter() {
        let (k, _, _) = entry(t, &b.ix, row, pk)?;
        txn.delete(&b.dict, &k)?;
    }
    Ok(())
}

/// A writer's changed row (same primary key `pk`): the old version's
/// entry goes, the new one's comes.
pub(crate) fn on_replace(t: &Table, txn: &Txn, old: &[Value], new: &[Value], pk: &[u8]) -> SqlResult<()> {
    let building = t.building.read();
    for b in building.iter() {
        let (ok, ov, _) = entry(t, &b.ix, old, pk)?;
        let (nk, nv, _) = entry(t, &b.ix, new, pk)?;
        if ok != nk {
            txn.delete(&b.dict, &ok)?;
            put(t, b, txn, new, pk)?;
        } else if ov != nv {
            txn.put(&b.dict, &nk, &nv)?;
        }
    }
    Ok(())
}
