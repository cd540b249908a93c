//! Instant column changes: ADD COLUMN (with a constant default), DROP
//! COLUMN (of a column in no index), a column moved (FIRST / AFTER), a
//! column widened (`widens`), NOT NULL dropped. No row is read or
//! rewritten: the ALTER commits a new catalog record whose
//! `schema_version` is one higher and whose `layouts` say how to read each
//! older version still present in rows, then sends a broadcast update
//! ([`CONVERT_ROW`]) that rewrites old-version rows to the current layout
//! as the tree next flushes them.
//!
//! **A layout** (`TableDef::layouts`, one per older version rows may hold):
//! the field kinds of the columns rows of that version hold (rowcodec's
//! field layouts, `kind`), and for each *current* column where its field
//! comes from: a field of the old row, NULL, or a constant field (the
//! default of a column added after that version, computed once by the
//! ALTER: `DEFAULT CURRENT_TIMESTAMP` gives every existing row the ALTER's
//! time, as in MariaDB). A widening keeps a field's bytes: every change
//! `widens` allows keeps the field's kind and the meaning of its bytes, so
//! converting a row only moves raw fields, never values (no time zone, no
//! collation is involved).
//!
//! **Invariant (every reader is right at once):** a row whose version is
//! not the table's is converted by `Table::decode_row` through its layout
//! before it is decoded; a version with no layout is a row written under a
//! definition this reader does not know yet (a statement that opened the
//! table before an ALTER committed): 1412, retry. Layouts are composed at
//! each ALTER (each old layout's map is re-pointed through the change), so
//! one step converts any old row.
//!
//! **Invariant (the broadcast is only an optimisation):** the record
//! commits first and the broadcast follows as its own engine write, so a
//! crash between the two, or a broadcast refused (it takes the
//! dictionary's whole-range write lock: a transaction holding row locks
//! there makes it wait, at most the engine's lock timeout), leaves
//! old rows that readers convert. The broadcast function leaves rows of
//! the current version alone (rows written after the ALTER, or converted
//! already), so it is idempotent and commutes with later writes.
//!
//! **When layouts go:** only a rebuild (a copy ALTER, which writes every
//! row into new dictionaries at a new version) empties them. OPTIMIZE
//! TABLE flushes every broadcast down, so afterwards the rows are current,
//! but a statement that opened the table before the ALTER may still write
//! a row of the old version (DML does not wait for DDL), so no scan can
//! prove none is left; the layouts are kept. At most [`MAX_LAYOUTS`]
//! are kept: a change past that is a copy (which empties them).
//!
//! The fast update path (`fastupdate.rs`) reads rows in the current layout
//! and is off while a table has layouts.

use serde::{Deserialize, Serialize};

use crate::catalog::{Column, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::rowcodec::{get_varint, put_varint};
use crate::session::Session;
use crate::types::{SqlType, StrKind};
use crate::value::Value;

/// The engine update function id of [`apply`] (`table::ADD_I64` is 1,
/// `fastupdate::FAST_UPDATE` 2).
pub const CONVERT_ROW: u8 = 3;

/// Older layouts kept at most; a change past that rebuilds the table.
pub const MAX_LAYOUTS: usize = 32;

const K_FIXED8: u8 = 0;
const K_VAR: u8 = 1;
const K_FIXED2: u8 = 2;
const K_FIXED15: u8 = 3;

/// How a field of `ty` is laid out in a stored row (`rowcodec.rs`).
fn kind(ty: &SqlType) -> u8 {
    match ty {
        SqlType::Decimal { .. } | SqlType::Str { .. } | SqlType::Json => K_VAR,
        SqlType::Enum { .. } => K_FIXED2,
        SqlType::Date | SqlType::Time { .. } | SqlType::DateTime { .. } => K_FIXED15,
        SqlType::Int { .. }
        | SqlType::Bit { .. }
        | SqlType::Year
        | SqlType::Float { .. }
        | SqlType::Double { .. }
        | SqlType::Set { .. }
        | SqlType::Timestamp { .. } => K_FIXED8,
    }
}

/// Where a current column's field comes from in a row of an older version.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Src {
    /// Field `n` of the old row.
    Col(usize),
    /// NULL (a nullable column added without a default).
    Null,
    /// This field (rowcodec's bytes of the added column's default).
    Field(Vec<u8>),
}

/// How to read rows of an older schema version (see the module comment).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Layout {
    pub version: u32,
    /// The field kind of each column rows of this version hold.
    pub kinds: Vec<u8>,
    /// One per current column.
    pub map: Vec<Src>,
}

/// Whether a column of type `from` may become `to` without touching its
/// rows: every value of `from` is one of `to`, and its stored field (kind
/// and bytes) means the same value under `to`.
pub(crate) fn widens(from: &SqlType, to: &SqlType) -> bool {
    use SqlType as T;
    match (from, to) {
        (T::Int { bytes: a, unsigned: u }, T::Int { bytes: b, unsigned: v }) => {
            // i64 and u64 fields are the same 8 bytes for values both hold.
            (u == v && b >= a) || (*u && !*v && b > a)
        }
        // CHAR pads and BINARY pads with zeros to the length: those change.
        (T::Str { kind: k1, len: l1, coll: c1 }, T::Str { kind: k2, len: l2, coll: c2 }) => {
            k1 == k2 && *k1 != StrKind::Fixed && c1 == c2 && l2 >= l1
        }
        // Kept as text: the same scale keeps the text.
        (
            T::Decimal { precision: p1, scale: s1, unsigned: u1 },
            T::Decimal { precision: p2, scale: s2, unsigned: u2 },
        ) => s1 == s2 && p2 >= p1 && (u1 == u2 || (*u1 && !*u2)),
        // Members appended: the stored index (ENUM) or bits (SET) keep their member.
        (T::Enum { values: a, coll: c1 }, T::Enum { values: b, coll: c2 })
        | (T::Set { values: a, coll: c1 }, T::Set { values: b, coll: c2 }) => {
            c1 == c2 && b.len() >= a.len() && b[..a.len()] == a[..]
        }
        (T::DateTime { fsp: a }, T::DateTime { fsp: b })
        | (T::Time { fsp: a }, T::Time { fsp: b })
        | (T::Timestamp { fsp: a }, T::Timestamp { fsp: b }) => b >= a,
        (T::Bit { bits: a }, T::Bit { bits: b }) => b >= a,
        _ => from == to,
    }
}

/// Why a column change needs a copy (for ALGORITHM= errors).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rebuild {
    /// A type change that is no widening: MariaDB's "Cannot change column type".
    ColumnType,
    /// Anything else (a key, NOT NULL added, AUTO_INCREMENT added, too many layouts...).
    Other,
}

/// ALTER TABLE's `ALGORITHM=` and `LOCK=` clauses.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Clauses {
    /// DEFAULT, INSTANT, NOCOPY, INPLACE or COPY (`None`: not given).
    pub algorithm: Option<&'static str>,
    /// DEFAULT, NONE, SHARED or EXCLUSIVE.
    pub lock: Option<&'static str>,
}

impl Clauses {
    /// Takes `ALGORITHM` / `LOCK` (as `lex.rs` passes table options); other
    /// options are not ours (`Ok(false)`).
    pub fn option(&mut self, k: &str, v: &str) -> SqlResult<bool> {
        let up = v.to_ascii_uppercase();
        match k {
            "ALGORITHM" => {
                let a = ["DEFAULT", "INSTANT", "NOCOPY", "INPLACE", "COPY"]
                    .into_iter()
                    .find(|a| *a == up)
                    .ok_or_else(|| SqlError::new(1800, "HY000", format!("Unknown ALGORITHM '{v}'")))?;
                self.algorithm = Some(a);
            }
            "LOCK" => {
                let l = ["DEFAULT", "NONE", "SHARED", "EXCLUSIVE"]
                    .into_iter()
                    .find(|l| *l == up)
                    .ok_or_else(|| SqlError::new(1801, "HY000", format!("Unknown LOCK type '{v}'")))?;
                self.lock = Some(l);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// ALGORITHM=COPY: rebuild even a change that could be instant.
    pub fn force_copy(&self) -> bool {
        self.algorithm == Some("COPY")
    }

    /// The statement needs a rebuild for `why` (or builds new indexes:
    /// `adds_index`): the error MariaDB gives when a clause forbids it.
    pub fn allow(&self, why: Option<Rebuild>, adds_index: bool) -> SqlResult<()> {
        let algo = self.algorithm.unwrap_or("DEFAULT");
        let not_supported = |what: String, reason: &str, try_: &str| {
            SqlError::new(1846, "0A000", format!("{what} is not supported. Reason: {reason}. Try {try_}"))
        };
        match why {
            Some(Rebuild::ColumnType) if matches!(algo, "INSTANT" | "NOCOPY" | "INPLACE") => {
                return Err(not_supported(
                    format!("ALGORITHM={algo}"),
                    "Cannot change column type",
                    "ALGORITHM=COPY",
                ));
            }
            Some(Rebuild::Other) if matches!(algo, "INSTANT" | "NOCOPY") => {
                return Err(SqlError::new(
                    1845,
                    "0A000",
                    format!("ALGORITHM={algo} is not supported for this operation. Try ALGORITHM=INPLACE"),
                ));
            }
            None if adds_index && algo == "INSTANT" => {
                return Err(not_supported("ALGORITHM=INSTANT".into(), "ADD INDEX", "ALGORITHM=NOCOPY"));
            }
            _ => {}
        }
        if self.lock == Some("NONE") {
            // A copy reads the rows once: writes committed meanwhile would be lost.
            if why == Some(Rebuild::ColumnType) {
                return Err(not_supported("LOCK=NONE".into(), "Cannot change column type", "LOCK=SHARED"));
            }
            if why.is_some() || self.force_copy() {
                return Err(not_supported(
                    "LOCK=NONE".into(),
                    "COPY algorithm requires a lock",
                    "LOCK=SHARED",
                ));
            }
        }
        Ok(())
    }
}

/// Decides whether the column change from `od` to `def` (each new column
/// filled from `src`, an old column or none) can be made without touching
/// rows. If so, gives `def` its next version and layouts and returns
/// `Ok(None)`; otherwise returns why a copy is needed and leaves `def`.
/// The caller has found that the primary key and codec are unchanged.
pub(crate) fn prepare(
    s: &Session,
    od: &TableDef,
    def: &mut TableDef,
    src: &[Option<usize>],
) -> SqlResult<Option<Rebuild>> {
    debug_assert_eq!(src.len(), def.columns.len());
    let in_old_key = |j: usize| od.indexes.iter().any(|ix| ix.parts.iter().any(|p| p.col == j));
    let in_new_key = |i: usize| def.indexes.iter().any(|ix| ix.parts.iter().any(|p| p.col == i));
    // A type change that is no widening first: its error names the type.
    for (i, (c, s)) in def.columns.iter().zip(src).enumerate() {
        if let Some(j) = *s {
            let was = &od.columns[j];
            if was.ty != c.ty && (!widens(&was.ty, &c.ty) || in_old_key(j) || in_new_key(i)) {
                return Ok(Some(Rebuild::ColumnType));
            }
        }
    }
    if od.layouts.len() >= MAX_LAYOUTS {
        return Ok(Some(Rebuild::Other));
    }
    // A dropped column leaves the indexes it was in (a changed index).
    if (0..od.columns.len()).any(|j| !src.contains(&Some(j)) && in_old_key(j)) {
        return Ok(Some(Rebuild::Other));
    }
    let now = crate::dml::now_value(s);
    let mut fill: Vec<Option<Src>> = Vec::with_capacity(src.len());
    for (c, s) in def.columns.iter().zip(src) {
        match *s {
            Some(j) => {
                if !c.nullable && od.columns[j].nullable {
                    return Ok(Some(Rebuild::Other));
                }
                fill.push(None);
            }
            None => match added_field(c, &now)? {
                Some(f) => fill.push(Some(f)),
                None => return Ok(Some(Rebuild::Other)),
            },
        }
    }
    // Each old layout re-pointed through this change, and one for `od`'s own rows.
    let through = |old_map: &dyn Fn(usize) -> Src| -> Vec<Src> {
        src.iter()
            .zip(&fill)
            .map(|(s, f)| match (s, f) {
                (Some(j), _) => old_map(*j),
                (None, Some(f)) => f.clone(),
                (None, None) => unreachable!("an added column has its field"),
            })
            .collect()
    };
    let mut layouts: Vec<Layout> = od
        .layouts
        .iter()
        .map(|l| Layout { version: l.version, kinds: l.kinds.clone(), map: through(&|j| l.map[j].clone()) })
        .collect();
    layouts.push(Layout {
        version: od.schema_version,
        kinds: od.columns.iter().map(|c| kind(&c.ty)).collect(),
        map: through(&Src::Col),
    });
    def.schema_version = od.schema_version.wrapping_add(1);
    debug_assert!(layouts.iter().all(|l| l.version != def.schema_version), "versions are unique in a table");
    def.layouts = layouts;
    Ok(None)
}

/// The field an added column gives existing rows (the copy path's rule:
/// its default, computed once, or the type's implicit default for NOT
/// NULL); `None` when it needs a value per row (AUTO_INCREMENT).
fn added_field(c: &Column, now: &Value) -> SqlResult<Option<Src>> {
    if c.auto_increment {
        return Ok(None);
    }
    let v = match crate::coerce::default_value(c, Some(now.clone()))? {
        Some(v) if !v.is_null() || c.nullable => v,
        _ => crate::coerce::implicit_default(&c.ty),
    };
    if v.is_null() {
        return Ok(Some(Src::Null));
    }
    let mut f = Vec::new();
    crate::rowcodec::encode_field(&c.ty, &v, &mut f)?;
    Ok(Some(Src::Field(f)))
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if buf.len() < n {
        return None;
    }
    let (a, b) = buf.split_at(n);
    *buf = b;
    Some(a)
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    get_varint(buf).ok()
}

/// The version a stored row starts with.
pub(crate) fn version_of(row: &[u8]) -> Option<u32> {
    let mut b = row;
    varint(&mut b).and_then(|v| u32::try_from(v).ok())
}

/// Rewrites `row` (of the layout `kinds`/`map` describe) as a row of
/// version `current` with `map.len()` columns; `None` if it is damaged.
fn convert(current: u32, kinds: &[u8], map: &[Src], row: &[u8]) -> Option<Vec<u8>> {
    let b = &mut &row[..];
    varint(b)?;
    let bitmap = take(b, kinds.len().div_ceil(8))?;
    let mut fields: Vec<Option<&[u8]>> = Vec::with_capacity(kinds.len());
    for (i, k) in kinds.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            fields.push(None);
            continue;
        }
        let f = match *k {
            K_FIXED8 => take(b, 8)?,
            K_FIXED2 => take(b, 2)?,
            K_FIXED15 => take(b, 15)?,
            _ => {
                let start = *b;
                let len = usize::try_from(varint(b)?).ok()?;
                take(b, len)?;
                &start[..start.len() - b.len()]
            }
        };
        fields.push(Some(f));
    }
    if !b.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(row.len() + 16);
    put_varint(&mut out, current as u64);
    let start = out.len();
    out.resize(start + map.len().div_ceil(8), 0);
    for (i, s) in map.iter().enumerate() {
        let f = match s {
            Src::Col(j) => *fields.get(*j)?,
            Src::Null => None,
            Src::Field(f) => Some(f.as_slice()),
        };
        match f {
            Some(f) => out.extend_from_slice(f),
            None => out[start + i / 8] |= 1 << (i % 8),
        }
    }
    Some(out)
}

/// `row`, of a version other than `def`'s, in `def`'s current layout
/// (see the module comment).
pub(crate) fn upgrade(def: &TableDef, row: &[u8]) -> SqlResult<Vec<u8>> {
    let v = version_of(row).ok_or_else(|| SqlError::engine("a row in the table is damaged"))?;
    let Some(l) = def.layouts.iter().find(|l| l.version == v) else {
        // Written under a newer definition than the one this statement holds.
        return Err(SqlError::table_def_changed());
    };
    debug_assert_eq!(l.map.len(), def.columns.len());
    convert(def.schema_version, &l.kinds, &l.map, row)
        .ok_or_else(|| SqlError::engine("a row in the table is damaged"))
}

// The broadcast's argument (all integers varints):
//
//   arg    := 0x01 current ncols nlayouts layout*
//   layout := version nkinds kind* src*ncols
//   src    := 0x00 col | 0x01 (NULL) | 0x02 len bytes
const FORMAT: u8 = 1;

fn encode_arg(current: u32, ncols: usize, layouts: &[Layout]) -> Vec<u8> {
    let mut out = vec![FORMAT];
    put_varint(&mut out, current as u64);
    put_varint(&mut out, ncols as u64);
    put_varint(&mut out, layouts.len() as u64);
    for l in layouts {
        put_varint(&mut out, l.version as u64);
        put_varint(&mut out, l.kinds.len() as u64);
        out.extend_from_slice(&l.kinds);
        for s in &l.map {
            match s {
                Src::Col(j) => {
                    out.push(0);
                    put_varint(&mut out, *j as u64);
                }
                Src::Null => out.push(1),
                Src::Field(f) => {
                    out.push(2);
                    put_varint(&mut out, f.len() as u64);
                    out.extend_from_slice(f);
                }
            }
        }
    }
    out
}

/// Finds the layout of `version` in `arg` and converts `row` with it.
fn convert_by_arg(mut arg: &[u8], version: u32, row: &[u8]) -> Option<Vec<u8>> {
    let a = &mut arg;
    if take(a, 1)? != [FORMAT] {
        return None;
    }
    let current = u32::try_from(varint(a)?).ok()?;
    if version == current {
        return None;
    }
    let ncols = usize::try_from(varint(a)?).ok()?;
    let nlayouts = varint(a)?;
    for _ in 0..nlayouts {
        let v = u32::try_from(varint(a)?).ok()?;
        let nk = usize::try_from(varint(a)?).ok()?;
        let kinds = take(a, nk)?;
        if kinds.iter().any(|k| *k > K_FIXED15) {
            return None;
        }
        let mut map = Vec::with_capacity(ncols.min(4096));
        for _ in 0..ncols {
            map.push(match take(a, 1)?[0] {
                0 => Src::Col(usize::try_from(varint(a)?).ok()?),
                1 => Src::Null,
                2 => {
                    let n = usize::try_from(varint(a)?).ok()?;
                    Src::Field(take(a, n)?.to_vec())
                }
                _ => return None,
            });
        }
        if v == version {
            return convert(current, kinds, &map, row);
        }
    }
    None
}

/// The update function of the broadcast: a row of an older version the
/// argument knows becomes a row of the current one; anything else (a row
/// of the current version, an unknown version, a damaged row or argument)
/// is left as it is.
///
/// **Invariant:** deterministic and total (re-applied by recovery and by
/// every reader that meets the message): it reads nothing but its inputs
/// and never panics.
pub fn apply(_key: &[u8], old: Option<&[u8]>, arg: &[u8]) -> Option<Vec<u8>> {
    let old = old?;
    version_of(old).and_then(|v| convert_by_arg(arg, v, old)).or_else(|| Some(old.to_vec()))
}

/// After the record of an instant change committed: the broadcast to the
/// main dictionary and every clustering index (their values are rows).
/// A failure is not the statement's: readers convert old rows anyway.
pub(crate) fn broadcast(t: &crate::table::Table) {
    let arg = encode_arg(t.def.schema_version, t.def.columns.len(), &t.def.layouts);
    let _ = t.main.broadcast_update(CONVERT_ROW, &arg);
    for (i, ix) in t.def.indexes.iter().enumerate() {
        if ix.clustering {
            if let Some(d) = &t.sec[i] {
                let _ = d.broadcast_update(CONVERT_ROW, &arg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(version: u32, kinds: &[u8], fields: &[Option<&[u8]>]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, version as u64);
        let start = out.len();
        out.resize(start + kinds.len().div_ceil(8), 0);
        for (i, f) in fields.iter().enumerate() {
            match f {
                Some(f) => out.extend_from_slice(f),
                None => out[start + i / 8] |= 1 << (i % 8),
            }
        }
        out
    }

    #[test]
    fn the_broadcast_converts_old_rows_only_and_damage_leaves_the_row() {
        // Version 1: (a fixed8, b var); version 2 = (b, c = 'x', a).
        let k1 = [K_FIXED8, K_VAR];
        let map = vec![Src::Col(1), Src::Field(vec![1, b'x']), Src::Col(0)];
        let arg = encode_arg(2, 3, &[Layout { version: 1, kinds: k1.to_vec(), map }]);
        let a = 7u64.to_le_bytes();
        let old = row(1, &k1, &[Some(&a), Some(&[2, b'h', b'i'])]);
        let new = apply(b"k", Some(&old), &arg).unwrap();
        let k2 = [K_VAR, K_VAR, K_FIXED8];
        assert_eq!(new, row(2, &k2, &[Some(&[2, b'h', b'i']), Some(&[1, b'x']), Some(&a)]));
        // Current rows, absent rows, damaged rows and arguments: unchanged.
        assert_eq!(apply(b"k", Some(&new), &arg).unwrap(), new);
        assert_eq!(apply(b"k", None, &arg), None);
        for cut in 0..old.len() {
            assert_eq!(apply(b"k", Some(&old[..cut]), &arg).unwrap(), &old[..cut]);
        }
        for cut in 0..arg.len() {
            assert_eq!(apply(b"k", Some(&old), &arg[..cut]).unwrap(), old);
        }
        let nulls = row(1, &k1, &[None, None]);
        assert_eq!(apply(b"k", Some(&nulls), &arg).unwrap(), row(2, &k2, &[None, Some(&[1, b'x']), None]));
    }

    #[test]
    fn widening_keeps_the_field_and_narrowing_is_refused() {
        use crate::types::Collation;
        let int = |bytes, unsigned| SqlType::Int { bytes, unsigned };
        assert!(widens(&int(4, false), &int(8, false)));
        assert!(widens(&int(4, true), &int(8, false)));
        assert!(!widens(&int(8, true), &int(8, false)));
        assert!(!widens(&int(8, false), &int(4, false)));
        assert!(!widens(&int(4, false), &int(8, true)));
        let vc = |len| SqlType::Str { kind: StrKind::Var, len, coll: Collation::Utf8mb4GeneralCi };
        assert!(widens(&vc(10), &vc(20)));
        assert!(!widens(&vc(20), &vc(10)));
        let ch = |len| SqlType::Str { kind: StrKind::Fixed, len, coll: Collation::Utf8mb4GeneralCi };
        assert!(!widens(&ch(10), &ch(20)));
        let dec = |precision, scale| SqlType::Decimal { precision, scale, unsigned: false };
        assert!(widens(&dec(10, 2), &dec(12, 2)));
        assert!(!widens(&dec(10, 2), &dec(12, 3)));
    }
}
