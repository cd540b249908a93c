//! A table's rows and index entries in its engine dictionaries.
//!
//! - main dictionary: primary key → row (`rowcodec`); a table without a
//!   primary key uses a hidden 8-byte big-endian row id.
//! - each secondary index: key = the index's parts (`keycodec`), followed
//!   by the primary key unless the index is unique and no part is NULL,
//!   then the values a plain index carries (`IndexDef::carry`);
//!   value = empty when the key holds the primary key (it is read from
//!   the key: [`Table::entry_pk`]), the primary key for a unique entry
//!   without NULLs (whose key is its parts alone), or the whole row for a
//!   clustering index ([`Table::entry_for`]). Entries written before held
//!   the primary key as their value in every case; they are still read
//!   (a primary key is never empty: every key part has a marker byte, a
//!   hidden row id 8 bytes).
//!   A unique index's key without NULLs is its parts alone, so two equal
//!   entries are the same engine key: the unique check is one locked point
//!   read of the index it guards (`Txn::get_for_update`), which also keeps a
//!   concurrent transaction from inserting the same value until this one ends.
//! - status dictionary: its engine counters ([`fractaldb::Txn::add_count`])
//!   hold the row count ([`ROWS`]) and the blind upserts not yet settled
//!   ([`UNCERTAIN`]): each statement adds its delta in its transaction,
//!   with no tree write and no lock, and a snapshot sees exactly the
//!   deltas of the transactions it sees. Older tables also hold
//!   `rows` + 4-byte slot → i64 deltas (LE; upserts by `ADD_I64`, one
//!   slot per session) and `unc` + slot → i64 keys, written before the
//!   counters existed: they are still summed (a table's count is those
//!   keys' sum plus the counter) and never written any more. The status
//!   dictionary also holds ANALYZE's statistics (`maint.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use fractaldb::{Dictionary, Txn};
use parking_lot::Mutex;

use crate::catalog::{IndexDef, IndexKind, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::keycodec;
use crate::rowcodec;
use crate::types::SqlType;
use crate::value::Value;

/// The engine update function adding a little-endian i64 to a value.
pub const ADD_I64: u8 = 1;

/// `TableDef::row_form` of tables whose rows leave out the primary key's
/// integer columns ([`Table::key_held`]).
pub const ROW_KEYLESS: u8 = 1;

pub fn add_i64(_key: &[u8], old: Option<&[u8]>, arg: &[u8]) -> Option<Vec<u8>> {
    let get = |b: Option<&[u8]>| b.and_then(|b| b.try_into().ok()).map(i64::from_le_bytes).unwrap_or(0);
    Some(get(old).wrapping_add(get(Some(arg))).to_le_bytes().to_vec())
}

/// The status dictionary's counter holding the row count.
pub const ROWS: usize = 0;
/// The status dictionary's counter holding the blind upserts
/// (`fastupdate`) not yet settled into the row count (see
/// [`Table::settle_count`]).
pub const UNCERTAIN: usize = 1;
const _: () = assert!(UNCERTAIN < fractaldb::COUNTERS);

/// Keys of the row-count deltas tables written before the engine's
/// counters (see the module comment): read, never written.
pub const ROWS_PREFIX: &[u8] = b"rows";
/// The same for the uncertain counter.
pub const UNCERTAIN_PREFIX: &[u8] = b"unc";

/// An open table: its definition and dictionaries.
pub struct Table {
    pub def: TableDef,
    pub main: Dictionary,
    /// One per index in `def.indexes`; `None` for the primary key.
    pub sec: Vec<Option<Dictionary>>,
    pub status: Dictionary,
    /// The next AUTO_INCREMENT value, read from the table on first use.
    pub autoinc: Mutex<Option<u64>>,
    /// The next hidden row id, for tables without a primary key.
    pub next_row_id: AtomicU64,
    /// Held while [`Table::settle_count`] runs.
    pub settling: Mutex<()>,
    /// Indexes being built online (`online.rs`), not in `def` yet: every
    /// write of a row also maintains their entries.
    pub building: parking_lot::RwLock<Vec<std::sync::Arc<crate::online::Building>>>,
    /// Transactions with a lower id do not read the secondary indexes
    /// (0: every one may). Set past the commit of every index build
    /// (`alter::swap_locked`, which ADD INDEX, CREATE INDEX, the online
    /// build, ENABLE KEYS and every table rebuild end in): a built index's
    /// entries were written by transactions that committed after an older
    /// snapshot began, so that snapshot would miss rows through it; the
    /// planner reads such a transaction's rows through the primary key
    /// instead (InnoDB fails the read with 1412; the rows are there to
    /// read, so they are read). Txids grow with each begin, so an id at or
    /// above the floor began after the build committed.
    pub index_floor: AtomicU64,
    /// Transactions with a lower id fail every read of the table with
    /// 1412 (as InnoDB's): a rebuild (a copying ALTER) wrote every row
    /// into new dictionaries in a transaction that committed after their
    /// snapshot began, so the table would look empty to them. Checked
    /// where rows are read ([`Table::check_snapshot`]).
    pub rows_floor: AtomicU64,
}

/// A failed unique check: which index.
pub struct Duplicate {
    pub index: usize,
    /// The primary key of the row already there.
    pub existing_pk: Vec<u8>,
}

impl Table {
    /// The same dictionaries under a changed definition (one that moves no
    /// row: a rename, a foreign key's parent renamed); the AUTO_INCREMENT
    /// counter and the next hidden row id go on.
    pub fn with_def(&self, def: TableDef) -> Table {
        debug_assert_eq!(def.main_dict, self.def.main_dict, "the same dictionaries");
        Table {
            def,
            main: self.main.clone(),
            sec: self.sec.clone(),
            status: self.status.clone(),
            autoinc: Mutex::new(*self.autoinc.lock()),
            next_row_id: AtomicU64::new(self.next_row_id.load(Ordering::SeqCst)),
            settling: Mutex::new(()),
            // DDL is serialised: no build runs while another DDL replaces
            // a definition.
            building: Default::default(),
            index_floor: AtomicU64::new(self.index_floor.load(Ordering::SeqCst)),
            rows_floor: AtomicU64::new(self.rows_floor.load(Ordering::SeqCst)),
        }
    }

    /// 1412 when `txn`'s snapshot is older than the rows (see `rows_floor`).
    pub fn check_snapshot(&self, txn: &Txn) -> SqlResult<()> {
        if txn.id() < self.rows_floor.load(Ordering::SeqCst) {
            return Err(crate::error::SqlError::table_def_changed());
        }
        Ok(())
    }

    /// Whether `txn` may read the secondary indexes (see `index_floor`).
    pub fn secondary_usable(&self, txn: &Txn) -> bool {
        txn.id() >= self.index_floor.load(Ordering::SeqCst)
    }

    pub fn types(&self) -> Vec<&SqlType> {
        self.def.columns.iter().map(|c| &c.ty).collect()
    }

    /// The row stored under primary key `pk`, in the current definition's
    /// columns; a row of another schema version is converted first, or is
    /// 1412 when this definition is older than the row (`instant.rs`).
    /// The columns the row leaves out ([`Table::key_held`]) are read from
    /// `pk`.
    pub fn decode_row(&self, pk: &[u8], bytes: &[u8]) -> SqlResult<Vec<Value>> {
        self.decode_row_some(pk, bytes, None)
    }

    /// [`Table::decode_row`] building only the columns `needed` marks
    /// (`None`: all); the others are NULL.
    pub fn decode_row_some(&self, pk: &[u8], bytes: &[u8], needed: Option<&[bool]>) -> SqlResult<Vec<Value>> {
        let types = self.def.columns.iter().map(|c| &c.ty);
        let mut row = if crate::instant::version_of(bytes) == Some(self.def.schema_version) {
            rowcodec::decode_some(types, needed, bytes)?.1
        } else {
            rowcodec::decode_some(types, needed, &crate::instant::upgrade(&self.def, bytes)?)?.1
        };
        self.fill_from_key(pk, &mut row, needed)?;
        Ok(row)
    }

    /// A clustering index's value: the whole row, its primary key's
    /// columns included (a unique clustering entry's key does not hold
    /// the primary key). Read with [`Table::decode_row`] like any row.
    pub fn decode_full_row(&self, bytes: &[u8], needed: Option<&[bool]>) -> SqlResult<Vec<Value>> {
        self.decode_row_some(&[], bytes, needed)
    }

    /// Whether column `col` is left out of the main dictionary's rows and
    /// read from their keys: an integer column of the primary key, in a
    /// table whose rows are `ROW_KEYLESS` (`TableDef::row_form`). The key
    /// gives an integer's value back exactly (`keycodec::gives_value`);
    /// other types are kept in the row, where their stored form is not
    /// the key's (strings hold weights, TIMESTAMPs a zone, DECIMALs a
    /// scale).
    pub fn key_held(&self, col: usize) -> bool {
        self.def.row_form == ROW_KEYLESS
            && self.def.primary.is_some_and(|p| {
                self.def.indexes[p].parts.iter().any(|part| {
                    part.col == col
                        && part.prefix.is_none()
                        && matches!(self.def.columns[col].ty, SqlType::Int { .. })
                })
            })
    }

    /// Sets the columns of `row` the row left out ([`Table::key_held`])
    /// from primary key `pk` where they are NULL and `needed`.
    fn fill_from_key(&self, pk: &[u8], row: &mut [Value], needed: Option<&[bool]>) -> SqlResult<()> {
        let Some(p) = self.def.primary.filter(|_| self.def.row_form == ROW_KEYLESS) else {
            return Ok(());
        };
        let parts = &self.def.indexes[p].parts;
        let wanted = |row: &[Value], col: usize| {
            row[col].is_null()
                && needed.is_none_or(|n| n.get(col).copied().unwrap_or(true))
                && self.key_held(col)
        };
        if !parts.iter().any(|part| wanted(row, part.col)) {
            return Ok(());
        }
        let mut buf = pk;
        for part in parts {
            let ty = &self.def.columns[part.col].ty;
            if wanted(row, part.col) {
                row[part.col] = keycodec::decode_part(&mut buf, ty, part.desc)?
                    .filter(|v| !v.is_null())
                    .ok_or_else(damaged)?;
            } else {
                keycodec::skip_part(&mut buf, ty, part.desc)?;
            }
        }
        Ok(())
    }

    /// The main dictionary's form of `row` (see [`Table::key_held`]).
    pub fn encode_row(&self, row: &[Value]) -> SqlResult<Vec<u8>> {
        let mut out = Vec::with_capacity(rowcodec::size_hint(row));
        rowcodec::encode(self.def.schema_version, &self.types(), row, |i| self.key_held(i), &mut out)?;
        Ok(out)
    }

    /// `row` whole, its primary key's columns included: a clustering
    /// index's value ([`Table::decode_full_row`]).
    pub fn encode_full_row(&self, row: &[Value]) -> SqlResult<Vec<u8>> {
        let mut out = Vec::with_capacity(rowcodec::size_hint(row));
        rowcodec::encode(self.def.schema_version, &self.types(), row, |_| false, &mut out)?;
        Ok(out)
    }

    /// The key parts of index `ix` for `row`; also whether any part is NULL.
    pub fn index_key(&self, ix: &IndexDef, row: &[Value]) -> SqlResult<(Vec<u8>, bool)> {
        let mut out = Vec::new();
        let mut null = false;
        for p in &ix.parts {
            let col = &self.def.columns[p.col];
            let v = key_form(&row[p.col], &col.ty);
            null |= v.is_null();
            keycodec::encode_part(&mut out, &v, &col.ty, p.desc, p.prefix)?;
        }
        Ok((out, null))
    }

    /// The primary key of a row (`hidden` for tables without one).
    pub fn pk(&self, row: &[Value], hidden: Option<u64>) -> SqlResult<Vec<u8>> {
        match self.def.primary {
            Some(i) => Ok(self.index_key(&self.def.indexes[i], row)?.0),
            None => {
                Ok(hidden.expect("a hidden row id for a table without a primary key").to_be_bytes().to_vec())
            }
        }
    }

    /// A secondary index entry for a row with primary key `pk`.
    pub fn sec_entry(&self, i: usize, row: &[Value], pk: &[u8]) -> SqlResult<(Vec<u8>, Vec<u8>)> {
        let (key, val, _) = self.entry_for(&self.def.indexes[i], row, pk)?;
        Ok((key, val))
    }

    /// The entry of `row` (primary key `pk`) in secondary index `ix`, and
    /// whether its key is a UNIQUE one to check (no NULL part): the one
    /// place entries are made, for the table's indexes and for those being
    /// built (`online.rs`). The key is the parts, then the primary key
    /// (unless unique without NULL), then the carried values
    /// ([`IndexDef::carries`]) and their length in two bytes; the value is
    /// the row for a clustering index, the primary key for a unique key,
    /// else empty: the key already holds the primary key
    /// ([`Table::entry_pk`] reads it there), and a second copy cost a
    /// plain index up to half its compressed bytes (docs/benchmarks-sql.md,
    /// "a plain index entry without a second copy of the primary key").
    pub fn entry_for(&self, ix: &IndexDef, row: &[Value], pk: &[u8]) -> SqlResult<(Vec<u8>, Vec<u8>, bool)> {
        let (mut key, null) = self.index_key(ix, row)?;
        let unique = ix.kind == IndexKind::Unique && !null;
        if !unique {
            key.extend_from_slice(pk);
        }
        let start = key.len();
        let mut any = false;
        for p in &ix.parts {
            if ix.carries(p, &self.def.columns[p.col].ty) {
                let ty = &self.def.columns[p.col].ty;
                keycodec::put_carried_as(
                    &mut key,
                    &row[p.col],
                    ty,
                    ix.carry_form == keycodec::CARRY_COMPACT,
                )?;
                any = true;
            }
        }
        if any {
            keycodec::end_carried(&mut key, start)?;
        }
        debug_assert!(!pk.is_empty(), "an empty primary key would read as an entry without one");
        let val = if ix.clustering {
            self.encode_full_row(row)?
        } else if unique {
            pk.to_vec()
        } else {
            Vec::new()
        };
        Ok((key, val, unique))
    }

    /// The primary key that entry `key`, `val` of index `ix` (not a
    /// clustering one, whose value is the row) names: its value, or for an
    /// entry with an empty value ([`Table::entry_for`]) the bytes of its
    /// key after the index's parts and before the values it carries.
    pub fn entry_pk<'a>(&self, ix: &IndexDef, key: &'a [u8], val: &'a [u8]) -> SqlResult<&'a [u8]> {
        debug_assert!(!ix.clustering, "a clustering entry's value is its row");
        if !val.is_empty() {
            return Ok(val);
        }
        let mut rest = key;
        for p in &ix.parts {
            keycodec::skip_part(&mut rest, &self.def.columns[p.col].ty, p.desc)?;
        }
        let start = key.len() - rest.len();
        let end = if ix.parts.iter().any(|p| ix.carries(p, &self.def.columns[p.col].ty)) {
            keycodec::carried(key)?.0.len()
        } else {
            key.len()
        };
        if end <= start {
            return Err(damaged());
        }
        Ok(&key[start..end])
    }

    /// Checks every unique index for `row` (under write locks); the first
    /// index holding a different row with the same key is returned. `own`
    /// is the row's current primary key when it is being updated.
    pub fn find_duplicate(
        &self,
        txn: &Txn,
        row: &[Value],
        pk: &[u8],
        own: Option<&[u8]>,
    ) -> SqlResult<Option<Duplicate>> {
        self.find_duplicate_as(txn, row, pk, own, false)
    }

    /// [`Table::find_duplicate`]; with `fresh_pk` the primary key is a value
    /// from a block of AUTO_INCREMENT values the caller reserved and whose
    /// keys it locked: no row can hold it (every stored row's value is below
    /// the counter: `note_auto` on every write), so it is not read.
    pub fn find_duplicate_as(
        &self,
        txn: &Txn,
        row: &[Value],
        pk: &[u8],
        own: Option<&[u8]>,
        fresh_pk: bool,
    ) -> SqlResult<Option<Duplicate>> {
        if self.def.primary.is_some() && own != Some(pk) {
            if fresh_pk {
                // Locked with its block (`dml::write_rows`).
            } else if txn.get_for_update(&self.main, pk)?.is_some() {
                return Ok(Some(Duplicate { index: 0, existing_pk: pk.to_vec() }));
            }
        }
        for (i, ix) in self.def.secondary() {
            if ix.kind != IndexKind::Unique {
                continue;
            }
            let (key, null) = self.index_key(ix, row)?;
            if null {
                continue;
            }
            let d = self.sec[i].as_ref().expect("secondary dictionary");
            if let Some(v) = txn.get_for_update(d, &key)? {
                let existing = if ix.clustering { self.pk_of_clustered(&v)? } else { v };
                if Some(existing.as_slice()) != own {
                    return Ok(Some(Duplicate { index: i, existing_pk: existing }));
                }
            }
        }
        Ok(None)
    }

    fn pk_of_clustered(&self, row_bytes: &[u8]) -> SqlResult<Vec<u8>> {
        let row = self.decode_full_row(row_bytes, None)?;
        self.pk(&row, None)
    }

    /// Keeps the AUTO_INCREMENT invariant: every stored row's value is
    /// below the counter, whichever statement wrote it (INSERT, UPDATE,
    /// a cascade, CREATE ... SELECT), so a value the counter hands out is
    /// never a stored row's (`find_duplicate_as` relies on it).
    pub(crate) fn note_auto(&self, txn: &Txn, row: &[Value]) -> SqlResult<()> {
        match self.def.auto_col() {
            Some(col) => crate::dml::note_autoinc(self, txn, &row[col]),
            None => Ok(()),
        }
    }

    /// Writes a new row and its index entries (the caller checked uniqueness).
    pub fn write_new(&self, txn: &Txn, row: &[Value], pk: &[u8]) -> SqlResult<()> {
        self.note_auto(txn, row)?;
        txn.put(&self.main, pk, &self.encode_row(row)?)?;
        for (i, _) in self.def.maintained() {
            let (k, v) = self.sec_entry(i, row, pk)?;
            txn.put(self.sec[i].as_ref().expect("secondary dictionary"), &k, &v)?;
        }
        crate::online::on_insert(self, txn, row, pk)
    }

    /// The keys `row` would take in the main dictionary (index `usize::MAX`)
    /// and in each unique index without a NULL part, for
    /// [`StmtWrites`]' duplicate check.
    fn unique_keys(&self, row: &[Value], pk: &[u8]) -> SqlResult<Vec<(usize, Vec<u8>)>> {
        let mut v = Vec::new();
        if self.def.primary.is_some() {
            v.push((usize::MAX, pk.to_vec()));
        }
        for (i, ix) in self.def.secondary() {
            if ix.kind == IndexKind::Unique {
                let (key, null) = self.index_key(ix, row)?;
                if !null {
                    v.push((i, key));
                }
            }
        }
        Ok(v)
    }

    /// Removes a row and its index entries.
    pub fn remove(&self, txn: &Txn, row: &[Value], pk: &[u8]) -> SqlResult<()> {
        txn.delete(&self.main, pk)?;
        for (i, _) in self.def.maintained() {
            let (k, _) = self.sec_entry(i, row, pk)?;
            txn.delete(self.sec[i].as_ref().expect("secondary dictionary"), &k)?;
        }
        crate::online::on_delete(self, txn, row, pk)
    }

    /// Replaces `old` (at `old_pk`) by `new` (at `new_pk`), touching only
    /// the index entries whose keys changed.
    pub fn replace(
        &self,
        txn: &Txn,
        old: &[Value],
        old_pk: &[u8],
        new: &[Value],
        new_pk: &[u8],
    ) -> SqlResult<()> {
        if old_pk != new_pk {
            self.remove(txn, old, old_pk)?;
            return self.write_new(txn, new, new_pk);
        }
        self.note_auto(txn, new)?;
        txn.put(&self.main, new_pk, &self.encode_row(new)?)?;
        for (i, ix) in self.def.maintained() {
            let (ok, ov) = self.sec_entry(i, old, old_pk)?;
            let (nk, nv) = self.sec_entry(i, new, new_pk)?;
            let d = self.sec[i].as_ref().expect("secondary dictionary");
            if ok != nk {
                // One write of both (one root lock, one log record), not two.
                let mut b = fractaldb::WriteBatch::new();
                b.delete(&ok);
                b.put(&nk, &nv);
                txn.write_batch(d, &b)?;
            } else if ix.clustering && ov != nv {
                txn.put(d, &nk, &nv)?;
            }
        }
        crate::online::on_replace(self, txn, old, new, new_pk)
    }

    /// Adds `delta` to the row count.
    pub fn add_rows(&self, txn: &Txn, delta: i64) -> SqlResult<()> {
        Ok(txn.add_count(&self.status, ROWS, delta)?)
    }

    /// Adds `n` blind upserts (`fastupdate`) to the uncertain counter:
    /// rows that may or may not have been inserted.
    pub fn add_uncertain(&self, txn: &Txn, n: i64) -> SqlResult<()> {
        Ok(txn.add_count(&self.status, UNCERTAIN, n)?)
    }

    fn sum_prefix(&self, txn: &Txn, prefix: &[u8]) -> SqlResult<i64> {
        let mut hi = prefix.to_vec();
        *hi.last_mut().expect("not empty") += 1;
        let mut n: i64 = 0;
        for kv in txn.range(&self.status, Some(prefix), Some(&hi), false) {
            let (_, v) = kv?;
            n = n.wrapping_add(v.as_slice().try_into().map(i64::from_le_bytes).unwrap_or(0));
        }
        Ok(n)
    }

    /// The row count and the uncertain counter as `txn` sees them.
    fn counters(&self, txn: &Txn) -> SqlResult<(i64, i64)> {
        let rows = self.sum_prefix(txn, ROWS_PREFIX)?.wrapping_add(txn.count(&self.status, ROWS)?);
        let uncertain =
            self.sum_prefix(txn, UNCERTAIN_PREFIX)?.wrapping_add(txn.count(&self.status, UNCERTAIN)?);
        Ok((rows, uncertain))
    }

    fn scan_count(&self, txn: &Txn) -> SqlResult<u64> {
        let mut n = 0u64;
        for kv in txn.range(&self.main, None, None, false) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// The row count for the planner and EXPLAIN: the summed deltas, plus
    /// the unsettled blind upserts (each inserted at most one row); never
    /// a scan.
    pub fn row_estimate(&self, txn: &Txn) -> SqlResult<u64> {
        let (n, uncertain) = self.counters(txn)?;
        Ok(n.saturating_add(uncertain.max(0)).max(0) as u64)
    }

    /// The exact row count as `txn` sees it: the summed deltas, or, while
    /// blind upserts it sees are not settled, the rows counted one by one
    /// (and then the blind upserts settled, see [`Table::settle_count`]).
    pub fn row_count_settled(&self, txn: &Txn, env: &fractaldb::Env) -> SqlResult<u64> {
        self.check_snapshot(txn)?;
        let (n, uncertain) = self.counters(txn)?;
        if uncertain == 0 {
            return Ok(n.max(0) as u64);
        }
        let counted = self.scan_count(txn)?;
        self.settle_count(env)?;
        Ok(counted)
    }

    /// Makes the summed deltas exact again after blind upserts: in a
    /// transaction of its own (a snapshot), counts the rows, adds the
    /// difference from the summed deltas and subtracts the uncertain
    /// counter, and commits.
    ///
    /// **Invariant:** after it commits, every later snapshot's sum is its
    /// row count: the counted snapshot's sum becomes its rows, and what
    /// commits after it adds exact deltas (ADD_I64 messages commute) or
    /// uncertain ones (which make the count scan again). Settlers take
    /// turns (`settling`, try-lock: a busy one means one is running), each
    /// beginning after the previous committed, so no difference is added
    /// twice; counters take no lock, so it never waits for one.
    pub fn settle_count(&self, env: &fractaldb::Env) -> SqlResult<()> {
        let Some(_turn) = self.settling.try_lock() else { return Ok(()) };
        let txn = env.begin(fractaldb::Isolation::RepeatableRead)?;
        let (n, uncertain) = self.counters(&txn)?;
        if uncertain == 0 {
            txn.commit()?;
            return Ok(());
        }
        let counted = self.scan_count(&txn)? as i64;
        self.add_rows(&txn, counted.wrapping_sub(n))?;
        self.add_uncertain(&txn, uncertain.wrapping_neg())?;
        txn.commit()?;
        Ok(())
    }

    /// Formats index `ix`'s values of `row` as MySQL's duplicate-key message
    /// shows them ('1-abc').
    pub fn dup_entry_text(&self, ix: usize, row: &[Value]) -> String {
        let parts: Vec<String> = self.def.indexes[ix]
            .parts
            .iter()
            .map(|p| {
                let s = row[p.col].render();
                match p.prefix {
                    Some(n) => s.chars().take(n as usize).collect(),
                    None => s,
                }
            })
            .collect();
        parts.join("-")
    }

    /// 1062 as MariaDB 10.11 words it: the key's name alone (`'PRIMARY'`,
    /// `'a'`; MySQL 8 writes `'t.a'`).
    pub fn dup_error(&self, d: &Duplicate, row: &[Value]) -> SqlError {
        let ix = &self.def.indexes[d.index];
        let key = if ix.kind == IndexKind::Primary { "PRIMARY" } else { ix.name.as_str() };
        SqlError::dup_entry(&self.dup_entry_text(d.index, row), key)
    }

    pub fn next_row_id(&self) -> u64 {
        self.next_row_id.fetch_add(1, Ordering::SeqCst)
    }
}

/// A value as the key codec takes it: ENUM as its 1-based index, SET as
/// its bit mask (both order that way in MySQL).
pub fn key_form(v: &Value, ty: &SqlType) -> Value {
    match (ty, v) {
        (SqlType::Enum { values, .. }, Value::Str(s)) => {
            Value::UInt(values.iter().position(|e| e.as_bytes() == &s[..]).map_or(0, |i| i as u64 + 1))
        }
        (SqlType::Set { values, .. }, Value::Str(s)) => {
            let mut mask = 0u64;
            if !s.is_empty() {
                for part in s.split(|b| *b == b',') {
                    if let Some(i) = values.iter().position(|e| e.as_bytes() == part) {
                        mask |= 1 << i;
                    }
                }
            }
            Value::UInt(mask)
        }
        _ => v.clone(),
    }
}

/// New rows of one INSERT statement, written to each dictionary as one
/// batch (one lock request, one tree write and one log record per
/// dictionary rather than per row; a 1000-row INSERT into a table with
/// three indexes made 4000 separate writes).
///
/// **Invariant:** a row is added only after its keys were checked against
/// the engine (`Table::find_duplicate`, which also write-locks them) and
/// against the rows already here (`collides`); anything that must see
/// these rows in the engine (a duplicate found here, ON DUPLICATE KEY
/// UPDATE, REPLACE) flushes first.
pub struct StmtWrites {
    main: fractaldb::WriteBatch,
    sec: Vec<fractaldb::WriteBatch>,
    keys: std::collections::HashSet<(usize, Vec<u8>)>,
    bytes: usize,
}

/// Flush a statement's batches past this many bytes.
const STMT_BATCH_BYTES: usize = 8 << 20;

impl StmtWrites {
    pub fn new(t: &Table) -> StmtWrites {
        StmtWrites {
            main: fractaldb::WriteBatch::new(),
            sec: t.def.indexes.iter().map(|_| fractaldb::WriteBatch::new()).collect(),
            keys: Default::default(),
            bytes: 0,
        }
    }

    /// True if `row` would collide with a row added here.
    pub fn collides(&self, t: &Table, row: &[Value], pk: &[u8]) -> SqlResult<bool> {
        if self.keys.is_empty() {
            return Ok(false);
        }
        Ok(t.unique_keys(row, pk)?.iter().any(|k| self.keys.contains(k)))
    }

    pub fn add(&mut self, txn: &Txn, t: &Table, row: &[Value], pk: &[u8]) -> SqlResult<()> {
        t.note_auto(txn, row)?;
        let enc = t.encode_row(row)?;
        self.bytes += pk.len() + enc.len();
        self.main.put(pk, &enc);
        for (i, _) in t.def.maintained() {
            let (k, v) = t.sec_entry(i, row, pk)?;
            self.bytes += k.len() + v.len();
            self.sec[i].put(&k, &v);
        }
        self.keys.extend(t.unique_keys(row, pk)?);
        // Indexes being built take the entry at once (`online.rs`).
        crate::online::on_insert(t, txn, row, pk)?;
        if self.bytes > STMT_BATCH_BYTES {
            self.flush(txn, t)?;
        }
        Ok(())
    }

    /// Writes what was added to the engine.
    pub fn flush(&mut self, txn: &Txn, t: &Table) -> SqlResult<()> {
        if !self.main.is_empty() {
            txn.write_batch(&t.main, &self.main)?;
            self.main.clear();
        }
        for (i, b) in self.sec.iter_mut().enumerate() {
            if !b.is_empty() {
                txn.write_batch(t.sec[i].as_ref().expect("secondary dictionary"), b)?;
                b.clear();
            }
        }
        self.keys.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// Reads the row at `pk`.
pub fn fetch(t: &Table, txn: &Txn, pk: &[u8], for_update: bool) -> SqlResult<Option<Vec<Value>>> {
    let bytes = if for_update { txn.get_for_update(&t.main, pk)? } else { txn.get(&t.main, pk)? };
    match bytes {
        Some(b) => Ok(Some(t.decode_row(pk, &b)?)),
        None => Ok(None),
    }
}

/// Placeholder error for a damaged secondary entry.
pub fn damaged() -> SqlError {
    SqlError::engine("an index entry points at a missing row")
}
