//! Order-preserving key encoding: SQL values as byte strings whose bytewise
//! order (the engine's only order) is SQL's order.
//!
//! An index key is the concatenation of one *part* per index column. Every
//! part is self-delimiting (fixed width, or a sort key that ends itself), so
//! parts can be concatenated and a part can be stepped over without knowing
//! what follows ([`skip_part`], used to find the primary key at the end of
//! a secondary index entry).
//!
//! # Part layout (ascending)
//!
//! A part starts with a marker byte: `0x00` for NULL (and nothing follows),
//! `0x01` for a value, followed by the value's payload:
//!
//! | type | stored form | payload |
//! |------|-------------|---------|
//! | TINYINT..BIGINT (`bytes` = 1,2,3,4,8) | `Int(i64)` / `UInt(u64)` | `bytes` bytes big-endian; signed: two's complement with the sign bit flipped |
//! | DECIMAL(p,s) | `Decimal` with scale ≤ s | unscaled value (value × 10^s, \|v\| < 10^p) + 2^(8W−1), W bytes big-endian, W = smallest width holding ±10^p (1..28 bytes; 28 for p = 65) |
//! | FLOAT, DOUBLE | `Double(f64)` | 8 bytes: IEEE bits, all flipped if negative, else sign bit flipped; −0 written as +0 |
//! | BIT(n) | `UInt` | ⌈n/8⌉ bytes big-endian |
//! | YEAR | `UInt` (0, 1901..2155) | 1 byte: 0, or year − 1900 |
//! | ENUM | `UInt` index (1-based, 0 = '') | 2 bytes big-endian (MySQL orders ENUM by index) |
//! | SET | `UInt` bitmask | 8 bytes big-endian |
//! | CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB | `Str` | `collation::sort_key` of the value (of its first n characters with an index prefix length n; bytes for binary) |
//! | DATE, DATETIME, TIME | `Temporal` | `Temporal::ordinal()` as i64, 8 bytes big-endian, sign bit flipped |
//! | TIMESTAMP | `Temporal` in the session's zone | microseconds since 1970-01-01 00:00:00 UTC (0 for the zero timestamp), i64, 8 bytes big-endian, sign bit flipped: instants order as they happened, whatever zone wrote them |
//! | JSON | — | not indexable (error 3152) |
//!
//! ENUM and SET also accept their string form (`Str`), turned into the
//! index or bitmask through the column's collation, so both forms of one
//! value encode alike.
//!
//! # Descending parts
//!
//! A descending part is the bitwise complement of the whole ascending part,
//! marker included: NULL becomes `0xFF` and sorts last, values start with
//! `0xFE`. Complementing reverses the order of any two different
//! prefix-free codes (they differ at a byte inside both), so descending
//! parts stay self-delimiting and correctly ordered whatever follows them.
//!
//! # Decoding
//!
//! [`decode_part`] gives back the value for every type except strings of a
//! text collation (only the weights are stored: `Ok(None)`); `binary`
//! strings decode to the bytes the key holds (the prefix, if the index has
//! a prefix length). Keys come from disk: malformed or truncated input is
//! an error, never a panic or an out-of-bounds read.
//!
//! # Carried values
//!
//! A plain index whose parts include strings of a text collation can keep
//! those strings' values after the primary key that ends its keys
//! (`IndexDef::carry`, [`put_carried`], [`take_carried`], then their
//! length in two bytes, [`end_carried`]), so a read of the
//! index alone answers a query that selects them. They follow a unique
//! suffix, so they change neither the order nor the equality of entries.
//! ASCII text of a `*_bin` or `*_general_ci` collation, whose key part
//! spells it but for its letters' case and its trailing spaces, can be
//! carried as just those ([`put_carried_as`]) and rebuilt from the part.
use std::sync::OnceLock;

use bigdecimal::num_bigint::{BigInt, Sign};
use bigdecimal::BigDecimal;

use crate::collation;
use crate::error::{SqlError, SqlResult};
use crate::types::{Collation, SqlType};
use crate::value::{Temporal, TemporalKind, Value};

const NULL: u8 = 0x00;
const PRESENT: u8 = 0x01;

/// Appends `v` (already converted to `ty`'s stored form) as one key part;
/// `prefix_chars` is the index prefix length of a string column
/// (characters; bytes for binary strings), ignored for other types. On
/// error `out` is left as it was.
pub fn encode_part(
    out: &mut Vec<u8>,
    v: &Value,
    ty: &SqlType,
    desc: bool,
    prefix_chars: Option<u32>,
) -> SqlResult<()> {
    if *ty == SqlType::Json {
        return Err(json_not_indexable());
    }
    let start = out.len();
    if v.is_null() {
        out.push(NULL);
    } else {
        out.push(PRESENT);
        if let Err(e) = encode_value(out, v, ty, prefix_chars) {
            out.truncate(start);
            return Err(e);
        }
    }
    if desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
    Ok(())
}

/// Steps over one key part at the front of `buf`. On error `buf` is left
/// as it was.
pub fn skip_part(buf: &mut &[u8], ty: &SqlType, desc: bool) -> SqlResult<()> {
    decode_or_skip(buf, ty, desc, false).map(|_| ())
}

/// Reads one key part back, or `Ok(None)` (after stepping over it) where the
/// key holds only a sort key (strings of text collations). NULL decodes as
/// `Some(Value::Null)`. On error `buf` is left as it was.
pub fn decode_part(buf: &mut &[u8], ty: &SqlType, desc: bool) -> SqlResult<Option<Value>> {
    decode_or_skip(buf, ty, desc, true)
}

/// Whether a key part of type `ty` gives the column's value back
/// ([`decode_part`]): not a prefix, not a collation's weights (a text
/// collation's key holds weights, PAD SPACE ones drop trailing spaces),
/// not a FLOAT/DOUBLE (-0 is keyed as +0).
pub fn gives_value(ty: &SqlType, prefix: Option<u32>) -> bool {
    prefix.is_none()
        && match ty {
            SqlType::Str { coll, .. } => *coll == Collation::Binary,
            SqlType::Float { .. } | SqlType::Double { .. } | SqlType::Json => false,
            _ => true,
        }
}

/// Appends a carried string value (`IndexDef::carry`), which follows the
/// primary key at the end of an index key, where its bytes decide no
/// order: `0` for NULL, else `1`, its length (u32, big-endian) and its
/// bytes.
pub fn put_carried(out: &mut Vec<u8>, v: &Value) -> SqlResult<()> {
    match v {
        Value::Null => out.push(0),
        Value::Str(b) => {
            let n = u32::try_from(b.len()).map_err(|_| garbled("carried value"))?;
            out.push(1);
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(b);
        }
        other => {
            return Err(SqlError::internal(format!(
                "key encoding: a carried value must be a string, not {other:?}"
            )))
        }
    }
    Ok(())
}

/// The most trailing spaces a compact carried record ([`put_carried_as`])
/// counts; a longer run is carried whole (a VARCHAR holds at most 65,535
/// bytes anyway).
const MAX_TRAILING: usize = u16::MAX as usize;

/// Appends the carried value of `v`, the value of a string key part of
/// type `ty` in the same key. With `compact` (`IndexDef::carry_form`
/// [`CARRY_COMPACT`]), ASCII text of a `*_bin` or `*_general_ci` collation,
/// which its key part spells but for its letters' case and its trailing
/// spaces ([`collation::ascii_of_key`]), is carried as just those: `2`,
/// the number of trailing spaces (LEB128, at most 65,535), then `0` (every
/// letter as the key spells it: upper case under `_ci`), `1` (every letter
/// lower case) or `2` and one bit per letter of the key's text, most
/// significant first, set for lower case. A 32-character hex digest
/// carries 3 bytes instead of 37. Anything else, and any value the record
/// would not rebuild exactly (checked here), is carried whole
/// ([`put_carried`]). The choice depends on the value alone, so the same
/// row always makes the same key (deletes find entries by their key).
pub fn put_carried_as(out: &mut Vec<u8>, v: &Value, ty: &SqlType, compact: bool) -> SqlResult<()> {
    if let (true, Value::Str(b), SqlType::Str { coll, .. }) = (compact, v, ty) {
        if let Some(rec) = compact_record(*coll, b) {
            out.extend_from_slice(&rec);
            return Ok(());
        }
    }
    put_carried(out, v)
}

/// `IndexDef::carry_form` of dictionaries whose entries carry ASCII
/// strings as compact records ([`put_carried_as`]).
pub const CARRY_COMPACT: u8 = 1;

/// The compact record of `s` ([`put_carried_as`]), if it rebuilds `s`.
fn compact_record(coll: Collation, s: &[u8]) -> Option<Vec<u8>> {
    if !s.is_ascii() {
        return None;
    }
    let mut key = Vec::with_capacity(s.len() + 2);
    collation::sort_key(coll, s, &mut key);
    let text = collation::ascii_of_key(coll, &key, false)?;
    let trailing = s.len().checked_sub(text.len())?;
    if trailing > MAX_TRAILING || s[text.len()..].iter().any(|&b| b != b' ') {
        return None;
    }
    let mut lower = Vec::new();
    for (&k, &c) in text.iter().zip(s) {
        if k.is_ascii_alphabetic() {
            lower.push(c != k);
        }
    }
    let mut rec = vec![2];
    let mut n = trailing;
    loop {
        let low = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            rec.push(low);
            break;
        }
        rec.push(low | 0x80);
    }
    if lower.iter().all(|&l| !l) {
        rec.push(0);
    } else if lower.iter().all(|&l| l) {
        rec.push(1);
    } else {
        rec.push(2);
        for chunk in lower.chunks(8) {
            rec.push(chunk.iter().enumerate().fold(0u8, |m, (i, &l)| m | (u8::from(l) << (7 - i))));
        }
    }
    let mut r = &rec[1..];
    (rebuild(coll, &key, false, &mut r).ok()?.as_slice() == s && r.is_empty()).then_some(rec)
}

/// Rebuilds a string from its sort key `key` (complemented when
/// `complemented`) and the compact record at the front of `rec` (after
/// its tag), stepping over the record.
fn rebuild(coll: Collation, key: &[u8], complemented: bool, rec: &mut &[u8]) -> SqlResult<Vec<u8>> {
    let bad = || garbled("carried value");
    let mut text = collation::ascii_of_key(coll, key, complemented).ok_or_else(bad)?;
    let mut trailing = 0usize;
    let mut shift = 0;
    loop {
        let (&b, rest) = rec.split_first().ok_or_else(truncated)?;
        *rec = rest;
        trailing |= usize::from(b & 0x7F) << shift;
        if trailing > MAX_TRAILING {
            return Err(bad());
        }
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 14 {
            return Err(bad());
        }
    }
    let (&case, rest) = rec.split_first().ok_or_else(truncated)?;
    *rec = rest;
    let letters = text.iter().filter(|b| b.is_ascii_alphabetic()).count();
    let mask = match case {
        0 | 1 => None,
        2 => {
            let n = letters.div_ceil(8);
            let m = rec.get(..n).ok_or_else(truncated)?;
            *rec = &rec[n..];
            Some(m)
        }
        _ => return Err(bad()),
    };
    for (i, b) in text.iter_mut().filter(|b| b.is_ascii_alphabetic()).enumerate() {
        let low = match mask {
            None => case == 1,
            Some(m) => m[i / 8] & (0x80 >> (i % 8)) != 0,
        };
        if low {
            b.make_ascii_lowercase();
        }
    }
    text.resize(text.len() + trailing, b' ');
    Ok(text)
}

/// Ends the carried values that start at `start` in `out`: their length
/// in bytes (u16, big-endian) goes last, so a reader finds them from the
/// key's end without stepping over the parts before them ([`carried`]).
pub fn end_carried(out: &mut Vec<u8>, start: usize) -> SqlResult<()> {
    let n = u16::try_from(out.len() - start).map_err(|_| garbled("carried values"))?;
    out.extend_from_slice(&n.to_be_bytes());
    Ok(())
}

/// The carried values at the end of `key` ([`end_carried`]) and what is
/// before them; a damaged length is an error.
pub fn carried(key: &[u8]) -> SqlResult<(&[u8], &[u8])> {
    let at = key.len().checked_sub(2).ok_or_else(truncated)?;
    let n = u16::from_be_bytes([key[at], key[at + 1]]) as usize;
    let start = at.checked_sub(n).ok_or_else(truncated)?;
    Ok((&key[..start], &key[start..at]))
}

/// Reads a value [`put_carried`] or [`put_carried_as`] wrote from the
/// front of `buf`; `part` is the key part (marker included) of the column
/// it carries, of type `ty`, descending when `desc`, which a compact
/// record is rebuilt from. A damaged one is an error, never a panic.
pub fn take_carried(buf: &mut &[u8], part: &[u8], ty: &SqlType, desc: bool) -> SqlResult<Value> {
    let (&tag, rest) = buf.split_first().ok_or_else(truncated)?;
    match tag {
        0 => {
            *buf = rest;
            Ok(Value::Null)
        }
        1 => {
            let n = rest.get(..4).ok_or_else(truncated)?;
            let n = u32::from_be_bytes(n.try_into().expect("4 bytes")) as usize;
            let b = rest.get(4..4 + n).ok_or_else(truncated)?;
            *buf = &rest[4 + n..];
            Ok(Value::Str(b.to_vec()))
        }
        2 => {
            let SqlType::Str { coll, .. } = ty else {
                return Err(garbled("carried value"));
            };
            let marker = if desc { !PRESENT } else { PRESENT };
            let key = match part.split_first() {
                Some((&m, key)) if m == marker => key,
                _ => return Err(garbled("carried value")),
            };
            let mut rec = rest;
            let v = rebuild(*coll, key, desc, &mut rec)?;
            *buf = rec;
            Ok(Value::Str(v))
        }
        _ => Err(garbled("carried value")),
    }
}

/// Byte width of an integer column's parts.
fn int_width(bytes: u8) -> usize {
    if (1..=8).contains(&bytes) {
        bytes as usize
    } else {
        8
    }
}

fn bit_width(bits: u8) -> usize {
    (bits as usize).div_ceil(8).clamp(1, 8)
}

fn mismatch(v: &Value, ty: &SqlType) -> SqlError {
    SqlError::internal(format!("key encoding: a {v:?} for a {} column", ty.column_type()))
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::UInt(u) => Some(*u as i128),
        _ => None,
    }
}

fn put_uint(out: &mut Vec<u8>, v: u64, width: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - width..]);
}

fn encode_value(out: &mut Vec<u8>, v: &Value, ty: &SqlType, prefix: Option<u32>) -> SqlResult<()> {
    let range_err =
        || SqlError::internal(format!("key encoding: {v:?} out of range for {}", ty.column_type()));
    match ty {
        SqlType::Int { bytes, unsigned } => {
            let w = int_width(*bytes);
            let i = as_i128(v).ok_or_else(|| mismatch(v, ty))?;
            let (lo, hi) = SqlType::int_range(w as u8, *unsigned);
            if i < lo || i > hi {
                return Err(range_err());
            }
            // Unsigned: the value; signed: value - min = the sign bit flipped.
            put_uint(out, (i - lo) as u64, w);
        }
        SqlType::Bit { bits } => {
            let i = as_i128(v).ok_or_else(|| mismatch(v, ty))?;
            let max = if *bits >= 64 { u64::MAX as i128 } else { (1i128 << *bits) - 1 };
            if i < 0 || i > max {
                return Err(range_err());
            }
            put_uint(out, i as u64, bit_width(*bits));
        }
        SqlType::Year => {
            let y = as_i128(v).ok_or_else(|| mismatch(v, ty))?;
            match y {
                0 => out.push(0),
                1901..=2155 => out.push((y - 1900) as u8),
                _ => return Err(range_err()),
            }
        }
        SqlType::Enum { values, coll } => {
            let i = match v {
                Value::Str(s) => enum_index(values, *coll, s).ok_or_else(range_err)?,
                _ => as_i128(v).ok_or_else(|| mismatch(v, ty))?,
            };
            if i < 0 || i > values.len().min(u16::MAX as usize) as i128 {
                return Err(range_err());
            }
            put_uint(out, i as u64, 2);
        }
        SqlType::Set { values, coll } => {
            let m = match v {
                Value::Str(s) => set_mask(values, *coll, s).ok_or_else(range_err)? as i128,
                _ => as_i128(v).ok_or_else(|| mismatch(v, ty))?,
            };
            let max = if values.len() >= 64 { u64::MAX as i128 } else { (1i128 << values.len()) - 1 };
            if m < 0 || m > max {
                return Err(range_err());
            }
            put_uint(out, m as u64, 8);
        }
        SqlType::Float { .. } | SqlType::Double { .. } => {
            let Value::Double(d) = v else { return Err(mismatch(v, ty)) };
            if d.is_nan() {
                return Err(range_err());
            }
            put_uint(out, f64_key(*d), 8);
        }
        SqlType::Decimal { precision, scale, .. } => {
            let d = match v {
                Value::Decimal(d) => d.clone(),
                Value::Int(i) => BigDecimal::from(*i),
                Value::UInt(u) => BigDecimal::from(*u),
                _ => return Err(mismatch(v, ty)),
            };
            let scaled = d.with_scale(*scale as i64);
            if scaled != d {
                return Err(SqlError::internal(format!(
                    "key encoding: {d} has more than {scale} decimals for {}",
                    ty.column_type()
                )));
            }
            let (unscaled, _) = scaled.as_bigint_and_exponent();
            let (w, limit) = decimal_width(*precision);
            if unscaled.magnitude() >= limit.magnitude() {
                return Err(range_err());
            }
            let biased = unscaled + (BigInt::from(1) << (8 * w - 1));
            let (_, bytes) = biased.to_bytes_be();
            out.extend(std::iter::repeat_n(0, w - bytes.len()));
            out.extend_from_slice(&bytes);
        }
        SqlType::Str { coll, .. } => {
            let Value::Str(s) = v else { return Err(mismatch(v, ty)) };
            let s = match prefix {
                Some(n) => collation::truncate_chars(*coll, s, n as usize),
                None => s,
            };
            collation::sort_key(*coll, s, out);
        }
        SqlType::Timestamp { .. } => {
            let Value::Temporal(t) = v else { return Err(mismatch(v, ty)) };
            if t.kind != TemporalKind::DateTime {
                return Err(mismatch(v, ty));
            }
            let us = crate::temporal::timestamp_to_stored(t);
            put_uint(out, (us as u64) ^ (1 << 63), 8);
        }
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Time { .. } => {
            let Value::Temporal(t) = v else { return Err(mismatch(v, ty)) };
            if t.kind != temporal_kind(ty) {
                return Err(mismatch(v, ty));
            }
            let o = i64::try_from(t.ordinal()).map_err(|_| range_err())?;
            put_uint(out, (o as u64) ^ (1 << 63), 8);
        }
        SqlType::Json => return Err(json_not_indexable()),
    }
    Ok(())
}

fn json_not_indexable() -> SqlError {
    SqlError::new(
        3152,
        "42000",
        "JSON column supports indexing only via generated columns on a specified JSON path.",
    )
}

fn temporal_kind(ty: &SqlType) -> TemporalKind {
    match ty {
        SqlType::Date => TemporalKind::Date,
        SqlType::Time { .. } => TemporalKind::Time,
        _ => TemporalKind::DateTime,
    }
}

/// The 1-based index of `s` among an ENUM's values (0 for '' when '' is
/// not one of them).
fn enum_index(values: &[String], coll: Collation, s: &[u8]) -> Option<i128> {
    match values.iter().position(|v| collation::compare(coll, v.as_bytes(), s).is_eq()) {
        Some(i) => Some(i as i128 + 1),
        None if s.is_empty() => Some(0),
        None => None,
    }
}

fn set_mask(values: &[String], coll: Collation, s: &[u8]) -> Option<u64> {
    let mut m = 0u64;
    if s.is_empty() {
        return Some(0);
    }
    for item in s.split(|&b| b == b',') {
        let i = values.iter().position(|v| collation::compare(coll, v.as_bytes(), item).is_eq())?;
        m |= 1u64.checked_shl(i as u32)?;
    }
    Some(m)
}

pub(crate) fn f64_key(d: f64) -> u64 {
    let bits = if d == 0.0 { 0 } else { d.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

fn f64_from_key(k: u64) -> f64 {
    let bits = if k >> 63 == 1 { k ^ (1 << 63) } else { !k };
    f64::from_bits(bits)
}

/// For DECIMAL(p): the part's width W in bytes and 10^p.
fn decimal_width(precision: u8) -> (usize, &'static BigInt) {
    static TABLE: OnceLock<Vec<(usize, BigInt)>> = OnceLock::new();
    let t = TABLE.get_or_init(|| {
        (0..=u8::MAX as u32)
            .map(|p| {
                let limit = BigInt::from(10).pow(p);
                // Need 2^(8W-1) >= 10^p, so 8W - 1 >= bits(10^p) (10^p is
                // not a power of two for p > 0; for p = 0 one byte is plenty).
                let w = (limit.bits() as usize + 1).div_ceil(8);
                (w, limit)
            })
            .collect()
    });
    let (w, limit) = &t[precision as usize];
    (*w, limit)
}

/// Reads the bytes of a part, complemented back for descending parts.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    desc: bool,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> SqlResult<Vec<u8>> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or_else(truncated)?;
        let bytes = self.buf[self.pos..end].iter().map(|&b| if self.desc { !b } else { b }).collect();
        self.pos = end;
        Ok(bytes)
    }

    /// A big-endian unsigned integer of `width` bytes (at most 8), read in
    /// place: every part starts with one (its NULL marker), so a copy here
    /// was two allocations a part.
    fn uint(&mut self, width: usize) -> SqlResult<u64> {
        debug_assert!(width <= 8);
        let end = self.pos.checked_add(width).filter(|&e| e <= self.buf.len()).ok_or_else(truncated)?;
        let flip = if self.desc { 0xff } else { 0 };
        let v = self.buf[self.pos..end].iter().fold(0u64, |acc, &b| (acc << 8) | (b ^ flip) as u64);
        self.pos = end;
        Ok(v)
    }
}

fn truncated() -> SqlError {
    SqlError::internal("key decoding: truncated key")
}

fn garbled(what: &str) -> SqlError {
    SqlError::internal(format!("key decoding: malformed {what} key part"))
}

fn decode_or_skip(buf: &mut &[u8], ty: &SqlType, desc: bool, decode: bool) -> SqlResult<Option<Value>> {
    if *ty == SqlType::Json {
        return Err(json_not_indexable());
    }
    let data: &[u8] = buf;
    let mut r = Reader { buf: data, pos: 0, desc };
    let v = match r.uint(1)? as u8 {
        NULL => Some(Value::Null),
        PRESENT => decode_value(&mut r, ty, decode)?,
        _ => return Err(garbled("NULL marker of a")),
    };
    *buf = &data[r.pos..];
    Ok(v)
}

fn decode_value(r: &mut Reader, ty: &SqlType, decode: bool) -> SqlResult<Option<Value>> {
    Ok(Some(match ty {
        SqlType::Int { bytes, unsigned } => {
            let w = int_width(*bytes);
            let k = r.uint(w)?;
            if *unsigned {
                Value::UInt(k)
            } else {
                let (lo, _) = SqlType::int_range(w as u8, false);
                Value::Int((k as i128 + lo) as i64)
            }
        }
        SqlType::Bit { bits } => {
            let k = r.uint(bit_width(*bits))?;
            if *bits < 64 && k >> *bits != 0 {
                return Err(garbled("BIT"));
            }
            Value::UInt(k)
        }
        SqlType::Year => match r.uint(1)? {
            0 => Value::UInt(0),
            y => Value::UInt(1900 + y),
        },
        SqlType::Enum { values, .. } => {
            let i = r.uint(2)?;
            if i > values.len() as u64 {
                return Err(garbled("ENUM"));
            }
            Value::UInt(i)
        }
        SqlType::Set { values, .. } => {
            let m = r.uint(8)?;
            if values.len() < 64 && m >> values.len() != 0 {
                return Err(garbled("SET"));
            }
            Value::UInt(m)
        }
        SqlType::Float { .. } | SqlType::Double { .. } => {
            let d = f64_from_key(r.uint(8)?);
            if d.is_nan() {
                return Err(garbled("DOUBLE"));
            }
            Value::Double(d)
        }
        SqlType::Decimal { precision, scale, .. } => {
            let (w, limit) = decimal_width(*precision);
            let bytes = r.take(w)?;
            let unscaled = BigInt::from_bytes_be(Sign::Plus, &bytes) - (BigInt::from(1) << (8 * w - 1));
            if unscaled.magnitude() >= limit.magnitude() {
                return Err(garbled("DECIMAL"));
            }
            Value::Decimal(BigDecimal::new(unscaled, *scale as i64))
        }
        SqlType::Str { coll, .. } => {
            let rest = &r.buf[r.pos..];
            if *coll == Collation::Binary {
                let (bytes, len) =
                    collation::decode_binary_key(rest, r.desc).ok_or_else(|| garbled("string"))?;
                r.pos += len;
                if !decode {
                    return Ok(None);
                }
                Value::Str(bytes)
            } else {
                let len = collation::sort_key_len(*coll, rest, r.desc).ok_or_else(|| garbled("string"))?;
                r.pos += len;
                return Ok(None);
            }
        }
        SqlType::Timestamp { fsp } => {
            let us = (r.uint(8)? ^ (1 << 63)) as i64;
            if !(us == 0
                || (crate::temporal::TIMESTAMP_MIN_MICROS..=crate::temporal::TIMESTAMP_MAX_MICROS)
                    .contains(&us))
            {
                return Err(garbled("timestamp"));
            }
            Value::Temporal(crate::temporal::timestamp_from_stored(us, *fsp))
        }
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Time { .. } => {
            let o = (r.uint(8)? ^ (1 << 63)) as i64;
            Value::Temporal(temporal_from_ordinal(ty, o).ok_or_else(|| garbled("temporal"))?)
        }
        SqlType::Json => return Err(json_not_indexable()),
    }))
}

/// The inverse of `Temporal::ordinal` for a column of type `ty`.
fn temporal_from_ordinal(ty: &SqlType, o: i64) -> Option<Temporal> {
    const DAY_SLOT: i64 = 86_400_000_000 * 4;
    let kind = temporal_kind(ty);
    let fsp = match ty {
        SqlType::Time { fsp } | SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => *fsp,
        _ => 0,
    };
    let (neg, days, t) = match kind {
        TemporalKind::Time => (o < 0, 0, o.unsigned_abs()),
        _ => {
            if o < 0 {
                return None;
            }
            let t = (o % DAY_SLOT) as u64;
            if t >= 86_400_000_000 {
                return None;
            }
            (false, o / DAY_SLOT, t)
        }
    };
    let mut v =
        Temporal::date(u16::try_from(days / (13 * 32)).ok()?, ((days / 32) % 13) as u8, (days % 32) as u8);
    v.kind = kind;
    v.neg = neg;
    v.hour = u32::try_from(t / 3_600_000_000).ok()?;
    v.minute = (t / 60_000_000 % 60) as u8;
    v.second = (t / 1_000_000 % 60) as u8;
    v.micro = (t % 1_000_000) as u32;
    v.fsp = fsp;
    if kind == TemporalKind::Date && t != 0 {
        return None;
    }
    Some(v)
}
