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
//! LOAD DATA into an empty table (its exact row count 0, autocommit, no
//! open transaction) with no foreign key (its own or referencing it) and
//! no unique secondary key builds every dictionary of the table by the
//! loader ([`load_primary`], TokuDB's loader): under the DDL lock and the
//! table's exclusive metadata lock for the whole statement, the lines are
//! converted exactly as on the ordinary path (`dml::convert_rows`, the
//! same batches), their main and index entries sorted ([`Collector`]),
//! duplicate primary keys resolved in the sorted run (error, IGNORE's
//! first line, REPLACE's last; the ordinary path's messages, warnings in
//! its order and counts), and the copying ALTER's rebuild
//! (`alter::swap_filled`) loads the new dictionaries, commits the record
//! with the exact row count, sets the snapshot floors and drops the old
//! empty dictionaries. **Invariant:** the new dictionaries are named only
//! by the transaction that commits the record; an error or KILL drops
//! them, a crash leaves them to `Database::open`'s sweep, so the table is
//! empty or whole.
//!
//! Any other LOAD DATA into an empty table (autocommit, no open
//! transaction, no index already disabled) defers the same indexes as
//! DISABLE KEYS around the statement: DISABLE KEYS, the load in its own
//! transaction as always, ENABLE KEYS. The load's rows commit or roll
//! back as one statement; an error or a crash in the middle leaves the
//! table empty (or, after the commit, whole) and at worst the indexes
//! still disabled, which ENABLE KEYS rebuilds. A load inside a
//! transaction takes the ordinary path (DDL would commit it).
//! `fractaldb_bulk_load = OFF` turns every bulk path off: DISABLE KEYS is
//! then accepted and does nothing.

use std::collections::HashSet;
use std::sync::Arc;

use crate::bulk::PairSorter;
use crate::catalog::IndexKind;
use crate::error::{SqlError, SqlResult};
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

// ---- LOAD DATA's rows by the bulk loader ----

/// What a bulk load does with rows whose primary key an earlier row of
/// the file has: the statement fails (1062), the first row stays (IGNORE,
/// LOCAL; a 1062 warning per later row) or the last one does (REPLACE).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Dups {
    Error,
    Ignore,
    Replace,
}

/// Whether LOAD DATA into `t` may build its dictionaries by the bulk
/// loader, before the table's emptiness (checked under the lock, in
/// [`load_primary`]): the variable on, autocommit with no transaction
/// open (the rows commit with the new dictionaries, as one statement),
/// no foreign key of the table or referencing it, no unique secondary
/// index (only the primary key can be duplicated within the file).
pub(crate) fn primary_eligible(s: &Session, t: &Table) -> bool {
    enabled(s)
        && s.txn.is_none()
        && s.autocommit
        && t.def.foreign_keys.is_empty()
        && !crate::dml::referenced_by_fk(s, &t.def)
        && !t.def.indexes.iter().any(|ix| ix.kind == IndexKind::Unique)
}

/// Reads a load's rows into the collector (`Collector::convert` per
/// batch) within the given transaction and table; returns the lines read.
pub(crate) type ReadRows<'a> =
    &'a mut dyn FnMut(&mut Session, &fractaldb::Txn, &Arc<Table>, &mut Collector<'_>) -> SqlResult<u64>;

/// LOAD DATA into an empty table by the bulk loader: under the DDL lock
/// and the table's exclusive metadata lock for the whole statement (no
/// writer adds a row meanwhile, as TokuDB's loader locked the table),
/// `read` converts every row into sorted runs, and the copying ALTER's
/// rebuild (`alter::swap_filled`) loads a new main dictionary and new
/// indexes from them and swaps them in with the exact row count. Returns
/// (records, rows affected), or `None` without reading anything if the
/// table is not empty (or no longer qualifies) once locked.
///
/// A failure or KILL anywhere leaves the old, empty dictionaries (the
/// new ones are dropped); a crash leaves new ones no record names, which
/// `Database::open` drops (the crash-safe DDL invariant).
pub(crate) fn load_primary(
    s: &mut Session,
    t: &Arc<Table>,
    dups: Dups,
    read: ReadRows<'_>,
) -> SqlResult<Option<(u64, u64)>> {
    let (db, name) = (t.def.db.clone(), t.def.name.clone());
    let inner = s.inner.clone();
    // DDL lock first, then the table's, as every ALTER takes them.
    let _g = inner.ddl.lock();
    let _x = s.mdl_exclusive(&db, &name)?;
    // The table as it is now (DDL may have replaced it while we waited).
    let t = s.inner.table(&db, &name)?;
    if !primary_eligible(s, &t) || !exactly_empty(s, &t)? {
        return Ok(None);
    }
    let mut counts = (0u64, 0u64);
    let fill: crate::alter::Fill<'_> = Box::new(|s, txn, enc, created| {
        let secs: Vec<usize> = enc.def.secondary().map(|(i, _)| i).collect();
        let mut c = Collector::new(s, enc, &t, &secs);
        let records = match read(s, txn, &t, &mut c) {
            Ok(n) => n,
            Err(e) => return Err(c.earlier_duplicate(s, dups, e)?),
        };
        let (kept, affected) = c.load(s, dups, created)?;
        counts = (records, affected);
        Ok(kept)
    });
    let plan = crate::alter::Plan::rebuild(t.def.columns.len());
    crate::alter::swap_filled(s, &t, t.def.clone(), &plan, Some(fill))?;
    Ok(Some(counts))
}

/// True if `t`'s exact row count is 0 and a new snapshot sees no row.
fn exactly_empty(s: &Session, t: &Table) -> SqlResult<bool> {
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    let n = t.row_count_settled(&txn, &s.inner.env)?;
    let _ = txn.abort();
    Ok(n == 0 && is_empty(s, t)?)
}

/// A load's converted rows, sorted as the new dictionaries' entries.
///
/// The main dictionary's entry of row `seq` (its number in the file) is
/// keyed `esc(pk) 00 00 seq` (`esc` doubles 00 as 00 01, so the order is
/// the primary keys', a key's rows together in file order) and holds the
/// warning position of its duplicate (8 bytes), the AUTO_INCREMENT
/// counter after the row (8 bytes; what a failure there leaves) and the
/// encoded row; an
/// index entry's value starts with `seq` (8 bytes), so a row that loses
/// to a duplicate leaves its entries out.
pub(crate) struct Collector<'a> {
    enc: &'a Table,
    /// The table loaded into (empty; its AUTO_INCREMENT counter counts).
    old: &'a Table,
    main: PairSorter,
    secs: Vec<(usize, PairSorter)>,
    /// Per batch: its first row's number less one, and how many warnings
    /// the session held before it (a duplicate's error cuts back to it,
    /// as the ordinary path drops the failing batch's warnings).
    batches: Vec<(usize, usize)>,
}

impl<'a> Collector<'a> {
    fn new(s: &Session, enc: &'a Table, old: &'a Table, secs: &[usize]) -> Collector<'a> {
        let cfg = crate::bulk::cfg(s, 1 + secs.len());
        Collector {
            enc,
            old,
            main: PairSorter::new(cfg.clone()),
            secs: secs.iter().map(|&i| (i, PairSorter::new(cfg.clone()))).collect(),
            batches: Vec::new(),
        }
    }

    /// Converts one batch of LOAD DATA's rows (`dml::convert_rows`) and
    /// sorts their entries.
    #[allow(clippy::too_many_arguments)]
    pub fn convert(
        &mut self,
        s: &mut Session,
        txn: &fractaldb::Txn,
        t: &Arc<Table>,
        cols: &[usize],
        batch: Vec<Vec<crate::value::Value>>,
        ignore: bool,
        base: usize,
        warnings: Vec<crate::error::Warning>,
    ) -> SqlResult<()> {
        self.batches.push((base, s.warnings.len()));
        let mut sink =
            |seq: usize, row: &[crate::value::Value], pk: Vec<u8>, wpos: usize| self.add(seq, row, pk, wpos);
        crate::dml::convert_rows(s, txn, t, cols, batch, ignore, base, warnings, &mut sink)
    }

    fn add(&mut self, seq: usize, row: &[crate::value::Value], pk: Vec<u8>, wpos: usize) -> SqlResult<()> {
        let seq = (seq as u64).to_be_bytes();
        for (i, sorter) in &mut self.secs {
            let (k, v) = self.enc.sec_entry(*i, row, &pk)?;
            sorter.add(k, [&seq[..], &v].concat())?;
        }
        let mut key = Vec::with_capacity(pk.len() + 12);
        escape_into(&pk, &mut key);
        key.extend_from_slice(&[0, 0]);
        key.extend_from_slice(&seq);
        let mut val = (wpos as u64).to_be_bytes().to_vec();
        let auto = if self.old.def.auto_col().is_some() { self.old.autoinc.lock().unwrap_or(0) } else { 0 };
        val.extend_from_slice(&auto.to_be_bytes());
        val.extend_from_slice(&self.enc.encode_row(row)?);
        self.main.add(key, val)
    }

    /// After `e` ended the reading: the duplicate key error the ordinary
    /// path would have met first, if the rows converted before `e` (all
    /// of which the ordinary path had checked) hold one; else `e`.
    fn earlier_duplicate(self, s: &mut Session, dups: Dups, e: SqlError) -> SqlResult<SqlError> {
        if dups != Dups::Error || e.code == SqlError::interrupted().code {
            return Ok(e);
        }
        let r = resolve(s, self.enc, dups, self.main.finish()?, None)?;
        Ok(match r.first_dup {
            Some(d) => fail_at(s, self.old, &self.batches, d),
            None => e,
        })
    }

    /// Loads the main dictionary (duplicates resolved) and every index
    /// into the encoder's new dictionaries, their names going to
    /// `created`; the duplicates' warnings go into the session's in the
    /// ordinary path's order. Returns (rows kept, rows affected).
    fn load(self, s: &mut Session, dups: Dups, created: &mut Vec<String>) -> SqlResult<(u64, u64)> {
        let def = &self.enc.def;
        let opts = crate::rowformat::dict_options(def);
        let mut main = crate::bulk::Loader::new(s, &def.main_dict, opts.clone())?;
        let r = resolve(s, self.enc, dups, self.main.finish()?, Some(&mut main))?;
        if let Some(d) = r.first_dup {
            return Err(fail_at(s, self.old, &self.batches, d));
        }
        main.finish(s)?;
        created.push(def.main_dict.clone());
        for (i, sorter) in self.secs {
            let name = &def.indexes[i].dict;
            let mut l = crate::bulk::Loader::new(s, name, opts.clone())?;
            let mut sorted = sorter.finish()?;
            while let Some((k, v)) = sorted.next()? {
                let (seq, v) = v.split_at(8);
                if r.losers.is_empty() || !r.losers.contains(&u64::from_be_bytes(seq.try_into().expect("8")))
                {
                    l.add(s, &k, v)?;
                }
            }
            l.finish(s)?;
            created.push(name.clone());
        }
        merge_warnings(s, r.warnings);
        Ok((r.kept, r.affected))
    }
}

/// The statement fails at the duplicate row `d` as the ordinary path
/// fails there: the warnings of that row's batch and later ones go
/// (`batches`: each batch's first row less one and the warnings before
/// it), and `old`'s AUTO_INCREMENT counter is where that row left it.
fn fail_at(s: &mut Session, old: &Table, batches: &[(usize, usize)], d: FirstDup) -> SqlError {
    let at = batches.iter().rev().find(|(base, _)| (*base as u64) < d.seq).map_or(0, |b| b.1);
    s.warnings.truncate(at.min(s.warnings.len()));
    if old.def.auto_col().is_some() && d.auto > 0 {
        *old.autoinc.lock() = Some(d.auto);
    }
    d.error
}

/// `pk` with every 00 byte as 00 01, so `esc(pk) 00 00` orders as `pk`
/// does and no escaped key is a prefix of another's terminator.
fn escape_into(pk: &[u8], out: &mut Vec<u8>) {
    for &b in pk {
        out.push(b);
        if b == 0 {
            out.push(1);
        }
    }
}

fn unescape(esc: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(esc.len());
    let mut i = 0;
    while i < esc.len() {
        out.push(esc[i]);
        i += if esc[i] == 0 { 2 } else { 1 };
    }
    out
}

/// A main dictionary entry taken apart (see `Collector`).
struct Entry {
    /// `esc(pk) 00 00`: equal for rows with the same primary key.
    key: Vec<u8>,
    seq: u64,
    wpos: usize,
    /// The AUTO_INCREMENT counter after this row (0: none).
    auto: u64,
    row: Vec<u8>,
}

impl Entry {
    fn of(mut k: Vec<u8>, v: Vec<u8>) -> Entry {
        debug_assert!(k.len() >= 10 && v.len() >= 16, "a collector's entry");
        let word = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
        let seq = word(&k[k.len() - 8..]);
        k.truncate(k.len() - 8);
        Entry { key: k, seq, wpos: word(&v[..8]) as usize, auto: word(&v[8..16]), row: v[16..].to_vec() }
    }

    fn pk(&self) -> Vec<u8> {
        unescape(&self.key[..self.key.len() - 2])
    }

    /// 1062 for this row's primary key, as the ordinary path words it.
    fn dup_error(&self, enc: &Table) -> SqlResult<SqlError> {
        let pk = self.pk();
        let row = enc.decode_row(&pk, &self.row)?;
        let index = enc.def.primary.ok_or_else(|| SqlError::internal("a duplicate hidden key"))?;
        Ok(enc.dup_error(&crate::table::Duplicate { index, existing_pk: pk }, &row))
    }
}

#[derive(Default)]
struct Resolved {
    /// Rows loaded.
    kept: u64,
    /// Rows affected, counted as the ordinary path counts them.
    affected: u64,
    /// The rows that lost to a duplicate (their index entries are left out).
    losers: HashSet<u64>,
    /// IGNORE's 1062 warnings: (position in the session's, row, warning).
    warnings: Vec<(usize, u64, crate::error::Warning)>,
    /// Without IGNORE / REPLACE: the first row in the file whose key an
    /// earlier row has.
    first_dup: Option<FirstDup>,
}

/// A row whose primary key an earlier row of the file has.
struct FirstDup {
    seq: u64,
    auto: u64,
    /// Its 1062.
    error: SqlError,
}

/// Goes through the sorted main entries, a key's rows in file order,
/// keeping one row per key (see [`Dups`]) and giving it to `out`.
/// REPLACE counts as the ordinary path does (no foreign key, no unique
/// secondary key here): a row replacing an identical one 1, another 2.
fn resolve(
    s: &Session,
    enc: &Table,
    dups: Dups,
    mut sorted: crate::bulk::Sorted,
    mut out: Option<&mut crate::bulk::Loader>,
) -> SqlResult<Resolved> {
    let mut r = Resolved::default();
    let mut cur: Option<Entry> = None;
    let mut keep = |r: &mut Resolved, e: Entry| -> SqlResult<()> {
        r.kept += 1;
        r.affected += 1;
        match out.as_mut() {
            Some(l) => l.add(s, &e.pk(), &e.row),
            None => Ok(()),
        }
    };
    while let Some((k, v)) = sorted.next()? {
        let e = Entry::of(k, v);
        let Some(c) = cur.as_mut().filter(|c| c.key == e.key) else {
            if let Some(c) = cur.replace(e) {
                keep(&mut r, c)?;
            }
            continue;
        };
        debug_assert!(c.seq < e.seq, "a key's rows in file order");
        match dups {
            Dups::Error => {
                if r.first_dup.as_ref().is_none_or(|d| e.seq < d.seq) {
                    r.first_dup = Some(FirstDup { seq: e.seq, auto: e.auto, error: e.dup_error(enc)? });
                }
            }
            Dups::Ignore => {
                r.losers.insert(e.seq);
                let w = crate::error::Warning::from_error(&e.dup_error(enc)?);
                r.warnings.push((e.wpos, e.seq, w));
            }
            Dups::Replace => {
                r.losers.insert(c.seq);
                r.affected += if c.row == e.row { 1 } else { 2 };
                *c = e;
            }
        }
    }
    if let Some(c) = cur {
        keep(&mut r, c)?;
    }
    Ok(r)
}

/// Puts each duplicate's warning where the ordinary path would have
/// pushed it: after its row's conversion warnings.
fn merge_warnings(s: &mut Session, mut dups: Vec<(usize, u64, crate::error::Warning)>) {
    if dups.is_empty() {
        return;
    }
    dups.sort_by_key(|d| (d.0, d.1));
    let old = std::mem::take(&mut s.warnings);
    let mut dups = dups.into_iter().peekable();
    for (i, w) in old.into_iter().enumerate() {
        while let Some(d) = dups.next_if(|d| d.0 <= i) {
            s.warnings.push(d.2);
        }
        s.warnings.push(w);
    }
    s.warnings.extend(dups.map(|d| d.2));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `esc(k) 00 00 seq` orders as `(k, seq)` for any keys, one a prefix
    /// of another or holding 00 bytes, and gives `k` back.
    #[test]
    fn escaped_keys_order_as_the_keys_then_the_line() {
        let keys: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"a\0b"];
        let mut entries = Vec::new();
        for k in keys {
            for seq in [2u64, 1, 300] {
                let mut e = Vec::new();
                escape_into(k, &mut e);
                e.extend_from_slice(&[0, 0]);
                e.extend_from_slice(&seq.to_be_bytes());
                entries.push((e, k.to_vec(), seq));
            }
        }
        entries.sort();
        let got: Vec<(Vec<u8>, u64)> = entries.iter().map(|(_, k, s)| (k.clone(), *s)).collect();
        let mut want = got.clone();
        want.sort();
        assert_eq!(got, want);
        for (e, k, _) in &entries {
            assert_eq!(&unescape(&e[..e.len() - 10]), k);
        }
    }
}
