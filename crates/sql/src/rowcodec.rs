//! The row format: what a table's main dictionary holds under each primary key.
//!
//! ```text
//! row    := version:varint  nulls:bitmap  field*
//! bitmap := ceil(ncols / 8) bytes, bit i set = column i is NULL
//! field  := (one per non-NULL column, in column order)
//!   Int, Bit, Year       8 bytes little-endian (i64 or u64)
//!   Float, Double        8 bytes little-endian f64
//!   Decimal              varint length + the plain decimal text
//!   Str, Json            varint length + bytes
//!   Enum                 2 bytes little-endian index (1-based; 0 = '')
//!   Set                  8 bytes little-endian bit mask
//!   Date/DateTime/Time   year u16, month u8, day u8, hour u32, minute u8,
//!                        second u8, micro u32, flags u8 (bit 0: negative)
//!   Timestamp            8 bytes little-endian i64: microseconds since
//!                        1970-01-01 00:00:00 UTC (0: the zero timestamp);
//!                        converted from and to the session's time zone
//!                        (`temporal::timestamp_to_stored` / `_from_stored`)
//! ```
//! `version` is the table's `schema_version` when the row was written. The
//! hidden primary key of a table without one is not in the row; in a
//! table with `TableDef::row_form` = `table::ROW_KEYLESS` neither are
//! the primary key's integer columns (NULL bit set, no field: a primary
//! key column is never NULL, so the bit is unambiguous).

use std::str::FromStr;

use bigdecimal::BigDecimal;

use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;
use crate::value::{Temporal, TemporalKind, Value};

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn get_varint(buf: &mut &[u8]) -> SqlResult<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first().ok_or_else(bad)?;
        *buf = rest;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(bad())
}

fn bad() -> SqlError {
    SqlError::engine("a row in the table is damaged")
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> SqlResult<&'a [u8]> {
    if buf.len() < n {
        return Err(bad());
    }
    let (a, b) = buf.split_at(n);
    *buf = b;
    Ok(a)
}

/// Encodes `row` (one value per column, each in its column's stored form).
/// About the bytes [`encode`] writes for `row` (at least them for rows of
/// numbers and strings), so the buffer is allocated once.
pub fn size_hint(row: &[Value]) -> usize {
    let fields: usize = row
        .iter()
        .map(|v| match v {
            Value::Str(s) => s.len() + 3,
            _ => 9,
        })
        .sum();
    5 + row.len().div_ceil(8) + fields
}

/// Appends `row`; the columns `omit` names are written as NULL (no
/// field), for a reader that knows their values from elsewhere (the
/// key: `Table::key_held`).
pub fn encode(
    version: u32,
    types: &[&SqlType],
    row: &[Value],
    omit: impl Fn(usize) -> bool,
    out: &mut Vec<u8>,
) -> SqlResult<()> {
    debug_assert_eq!(types.len(), row.len());
    put_varint(out, version as u64);
    let start = out.len();
    out.resize(start + types.len().div_ceil(8), 0);
    for (i, (ty, v)) in types.iter().zip(row).enumerate() {
        if v.is_null() || omit(i) {
            out[start + i / 8] |= 1 << (i % 8);
            continue;
        }
        encode_field(ty, v, out)?;
    }
    Ok(())
}

pub(crate) fn encode_field(ty: &SqlType, v: &Value, out: &mut Vec<u8>) -> SqlResult<()> {
    let mismatch = || SqlError::internal(format!("value {v:?} does not fit a {} field", ty.column_type()));
    match ty {
        SqlType::Int { .. } | SqlType::Bit { .. } | SqlType::Year => match v {
            Value::Int(i) => out.extend_from_slice(&i.to_le_bytes()),
            Value::UInt(u) => out.extend_from_slice(&u.to_le_bytes()),
            _ => return Err(mismatch()),
        },
        SqlType::Float { .. } | SqlType::Double { .. } => match v {
            Value::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
            _ => return Err(mismatch()),
        },
        SqlType::Decimal { .. } => match v {
            Value::Decimal(d) => {
                let s = d.to_plain_string();
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            _ => return Err(mismatch()),
        },
        SqlType::Str { .. } | SqlType::Json => match v {
            Value::Str(s) => {
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s);
            }
            _ => return Err(mismatch()),
        },
        SqlType::Enum { values, .. } => match v {
            Value::Str(s) => {
                let idx = if s.is_empty() {
                    0
                } else {
                    values.iter().position(|e| e.as_bytes() == &s[..]).ok_or_else(mismatch)? + 1
                };
                out.extend_from_slice(&(idx as u16).to_le_bytes());
            }
            _ => return Err(mismatch()),
        },
        SqlType::Set { values, .. } => match v {
            Value::Str(s) => {
                let mut mask = 0u64;
                if !s.is_empty() {
                    for part in s.split(|b| *b == b',') {
                        let i = values.iter().position(|e| e.as_bytes() == part).ok_or_else(mismatch)?;
                        mask |= 1 << i;
                    }
                }
                out.extend_from_slice(&mask.to_le_bytes());
            }
            _ => return Err(mismatch()),
        },
        SqlType::Timestamp { .. } => match v {
            Value::Temporal(t) if t.kind == TemporalKind::DateTime => {
                out.extend_from_slice(&crate::temporal::timestamp_to_stored(t).to_le_bytes());
            }
            _ => return Err(mismatch()),
        },
        SqlType::Date | SqlType::Time { .. } | SqlType::DateTime { .. } => match v {
            Value::Temporal(t) => {
                out.extend_from_slice(&t.year.to_le_bytes());
                out.push(t.month);
                out.push(t.day);
                out.extend_from_slice(&t.hour.to_le_bytes());
                out.push(t.minute);
                out.push(t.second);
                out.extend_from_slice(&t.micro.to_le_bytes());
                out.push(t.neg as u8);
            }
            _ => return Err(mismatch()),
        },
    }
    Ok(())
}

/// Decodes a row written by [`encode`] for these column types.
#[cfg(test)]
pub fn decode(types: &[&SqlType], buf: &[u8]) -> SqlResult<(u32, Vec<Value>)> {
    decode_some(types.iter().copied(), None, buf)
}

/// [`decode`] with the types from an iterator (no vector of them per row)
/// and, when `needed` is given, only the columns it marks: the others are
/// skipped over without being built, and are NULL in the row. Allocates
/// only the row and its string values: this runs once per row read.
pub fn decode_some<'t>(
    types: impl ExactSizeIterator<Item = &'t SqlType>,
    needed: Option<&[bool]>,
    mut buf: &[u8],
) -> SqlResult<(u32, Vec<Value>)> {
    let buf = &mut buf;
    let version = get_varint(buf)? as u32;
    let nulls = take(buf, types.len().div_ceil(8))?;
    let mut row = Vec::with_capacity(types.len());
    for (i, ty) in types.enumerate() {
        if nulls[i / 8] & (1 << (i % 8)) != 0 {
            row.push(Value::Null);
            continue;
        }
        if needed.is_some_and(|n| !n.get(i).copied().unwrap_or(true)) {
            skip_field(ty, buf)?;
            row.push(Value::Null);
            continue;
        }
        row.push(decode_field(ty, buf)?);
    }
    Ok((version, row))
}

/// Moves past one non-NULL field of type `ty` without building its value
/// (the sizes `encode` writes).
fn skip_field(ty: &SqlType, buf: &mut &[u8]) -> SqlResult<()> {
    match ty {
        SqlType::Decimal { .. } | SqlType::Str { .. } | SqlType::Json => {
            let n = get_varint(buf)? as usize;
            take(buf, n)?;
        }
        SqlType::Enum { .. } => {
            take(buf, 2)?;
        }
        SqlType::Set { .. } => {
            take(buf, 8)?;
        }
        // Fixed-size fields that decode without allocating.
        _ => {
            decode_field(ty, buf)?;
        }
    }
    Ok(())
}

fn decode_field(ty: &SqlType, buf: &mut &[u8]) -> SqlResult<Value> {
    let u64le = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    Ok(match ty {
        SqlType::Int { unsigned: false, .. } => Value::Int(u64le(take(buf, 8)?) as i64),
        SqlType::Int { unsigned: true, .. } | SqlType::Bit { .. } | SqlType::Year => {
            Value::UInt(u64le(take(buf, 8)?))
        }
        SqlType::Float { .. } | SqlType::Double { .. } => Value::Double(f64::from_bits(u64le(take(buf, 8)?))),
        SqlType::Decimal { .. } => {
            let n = get_varint(buf)? as usize;
            let s = std::str::from_utf8(take(buf, n)?).map_err(|_| bad())?;
            Value::Decimal(BigDecimal::from_str(s).map_err(|_| bad())?)
        }
        SqlType::Str { .. } | SqlType::Json => {
            let n = get_varint(buf)? as usize;
            Value::Str(take(buf, n)?.to_vec())
        }
        SqlType::Enum { values, .. } => {
            let b = take(buf, 2)?;
            let idx = u16::from_le_bytes([b[0], b[1]]) as usize;
            match idx {
                0 => Value::Str(Vec::new()),
                i => Value::Str(values.get(i - 1).ok_or_else(bad)?.as_bytes().to_vec()),
            }
        }
        SqlType::Set { values, .. } => {
            let mask = u64le(take(buf, 8)?);
            let parts: Vec<&str> = values
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, v)| v.as_str())
                .collect();
            Value::Str(parts.join(",").into_bytes())
        }
        SqlType::Timestamp { fsp } => {
            let b = take(buf, 8)?;
            let us = i64::from_le_bytes(b.try_into().map_err(|_| bad())?);
            if !(us == 0
                || (crate::temporal::TIMESTAMP_MIN_MICROS..=crate::temporal::TIMESTAMP_MAX_MICROS)
                    .contains(&us))
            {
                return Err(bad());
            }
            Value::Temporal(crate::temporal::timestamp_from_stored(us, *fsp))
        }
        SqlType::Date | SqlType::Time { .. } | SqlType::DateTime { .. } => {
            let b = take(buf, 15)?;
            let (kind, fsp) = match ty {
                SqlType::Date => (TemporalKind::Date, 0),
                SqlType::Time { fsp } => (TemporalKind::Time, *fsp),
                SqlType::DateTime { fsp } => (TemporalKind::DateTime, *fsp),
                _ => unreachable!("matched above"),
            };
            Value::Temporal(Temporal {
                kind,
                year: u16::from_le_bytes([b[0], b[1]]),
                month: b[2],
                day: b[3],
                hour: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                minute: b[8],
                second: b[9],
                micro: u32::from_le_bytes([b[10], b[11], b[12], b[13]]),
                neg: b[14] & 1 != 0,
                fsp,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Collation, StrKind};

    #[test]
    fn rows_round_trip_and_damage_is_an_error() {
        let types = [
            SqlType::Int { bytes: 4, unsigned: false },
            SqlType::Str { kind: StrKind::Var, len: 10, coll: Collation::Utf8mb4GeneralCi },
            SqlType::Decimal { precision: 10, scale: 2, unsigned: false },
            SqlType::Date,
            SqlType::Enum { values: vec!["a".into(), "b".into()], coll: Collation::Utf8mb4GeneralCi },
        ];
        let refs: Vec<&SqlType> = types.iter().collect();
        let row = vec![
            Value::Int(-5),
            Value::Null,
            Value::Decimal(BigDecimal::from_str("12.50").unwrap()),
            Value::Temporal(Temporal::date(2024, 2, 29)),
            Value::str("b"),
        ];
        let mut out = Vec::new();
        encode(3, &refs, &row, |_| false, &mut out).unwrap();
        let (v, back) = decode(&refs, &out).unwrap();
        assert_eq!(v, 3);
        assert_eq!(
            back.iter().map(|v| v.render()).collect::<Vec<_>>(),
            ["-5", "NULL", "12.50", "2024-02-29", "b"]
        );
        for cut in 0..out.len() {
            assert!(decode(&refs, &out[..cut]).is_err(), "a row cut at {cut} decoded");
        }
    }

    /// Columns a reader does not use are stepped over by their stored
    /// size and read as NULL; the ones after them still decode.
    #[test]
    fn only_the_needed_columns_are_decoded() {
        let types = [
            SqlType::Str { kind: StrKind::Var, len: 10, coll: Collation::Utf8mb4GeneralCi },
            SqlType::Decimal { precision: 10, scale: 2, unsigned: false },
            SqlType::Enum { values: vec!["a".into(), "b".into()], coll: Collation::Utf8mb4GeneralCi },
            SqlType::Set { values: vec!["x".into(), "y".into()], coll: Collation::Utf8mb4GeneralCi },
            SqlType::DateTime { fsp: 0 },
            SqlType::Json,
            SqlType::Int { bytes: 4, unsigned: true },
        ];
        let refs: Vec<&SqlType> = types.iter().collect();
        let row = vec![
            Value::str("skipped"),
            Value::Decimal(BigDecimal::from_str("-1.25").unwrap()),
            Value::str("a"),
            Value::str("x,y"),
            Value::Temporal(Temporal::date(2024, 2, 29)),
            Value::str("[1]"),
            Value::UInt(7),
        ];
        let mut out = Vec::new();
        encode(1, &refs, &row, |_| false, &mut out).unwrap();
        let render = |r: Vec<Value>| r.iter().map(|v| v.render()).collect::<Vec<_>>();
        let all = render(decode_some(refs.iter().copied(), None, &out).unwrap().1);
        assert_eq!(all, ["skipped", "-1.25", "a", "x,y", "2024-02-29 00:00:00", "[1]", "7"]);
        // Every other column, then each column alone.
        let odd = [false, true, false, true, false, true, false];
        let some = decode_some(refs.iter().copied(), Some(&odd), &out).unwrap().1;
        assert_eq!(render(some), ["NULL", "-1.25", "NULL", "x,y", "NULL", "[1]", "NULL"]);
        for i in 0..types.len() {
            let mut one = vec![false; types.len()];
            one[i] = true;
            let r = decode_some(refs.iter().copied(), Some(&one), &out).unwrap().1;
            assert_eq!(r[i].render(), all[i], "column {i} alone");
            assert!(r.iter().enumerate().all(|(j, v)| j == i || v.is_null()));
        }
        // A cut row is an error with columns skipped too.
        for cut in 0..out.len() {
            assert!(decode_some(refs.iter().copied(), Some(&odd), &out[..cut]).is_err(), "cut at {cut}");
        }
    }
}
