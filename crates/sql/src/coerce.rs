//! Storing a value into a column: MySQL's conversions, range checks and
//! truncation, as errors in strict mode and warnings otherwise.

use std::str::FromStr;

use bigdecimal::BigDecimal;

use crate::catalog::Column;
use crate::error::{SqlError, SqlResult, Warning};
use crate::types::{Charset, Collation, SqlType, StrKind};
use crate::value::{is_whole_number, parse_int_prefix, Temporal, TemporalKind, Value};

/// Where a value is being stored, for error messages and the mode.
pub struct StoreCtx<'a> {
    pub strict: bool,
    /// 1-based row number of the statement ("at row N").
    pub row: usize,
    pub warnings: &'a mut Vec<Warning>,
}

impl StoreCtx<'_> {
    /// An error in strict mode; a warning (and the adjusted value) otherwise.
    fn fail(&mut self, e: SqlError, adjusted: Value) -> SqlResult<Value> {
        if self.strict {
            Err(e)
        } else {
            self.warnings.push(Warning::from_error(&e));
            Ok(adjusted)
        }
    }
}

/// Converts `v` to what column `col` stores.
pub fn store(v: Value, col: &Column, cx: &mut StoreCtx) -> SqlResult<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let name = col.name.as_str();
    let row = cx.row;
    match &col.ty {
        SqlType::Int { bytes, unsigned } => {
            let (lo, hi) = SqlType::int_range(*bytes, *unsigned);
            let (n, exact): (i128, bool) = match &v {
                Value::Int(i) => (*i as i128, true),
                Value::UInt(u) => (*u as i128, true),
                Value::Str(s) => {
                    let whole = is_whole_number(s);
                    let n = match parse_int_prefix(s) {
                        Some(n) => n,
                        None => round_f64(v.to_f64().unwrap_or(0.0)),
                    };
                    if !whole {
                        let adj = clamp(n, lo, hi, *unsigned);
                        return cx.fail(not_a_number(s, "integer", name, row), adj);
                    }
                    (n, true)
                }
                Value::Double(d) => (round_f64(*d), d.is_finite()),
                Value::Decimal(d) => {
                    let r = d.with_scale_round(0, bigdecimal::RoundingMode::HalfUp);
                    (
                        i128::from_str(&r.to_string()).unwrap_or(
                            if r.sign() == bigdecimal::num_bigint::Sign::Minus {
                                i128::MIN
                            } else {
                                i128::MAX
                            },
                        ),
                        true,
                    )
                }
                Value::Temporal(t) => (t.to_number() as i128, true),
                Value::Null => unreachable!("handled above"),
            };
            if n < lo || n > hi || !exact {
                return cx.fail(SqlError::out_of_range(name, row), clamp(n, lo, hi, *unsigned));
            }
            Ok(clamp(n, lo, hi, *unsigned))
        }
        SqlType::Bit { bits } => {
            let n: u128 = match &v {
                Value::Str(s) => s.iter().fold(0u128, |a, b| (a << 8) | *b as u128),
                other => other.to_i64().unwrap_or(0) as u64 as u128,
            };
            let max = if *bits == 64 { u64::MAX as u128 } else { (1u128 << bits) - 1 };
            if n > max {
                return cx.fail(SqlError::out_of_range(name, row), Value::UInt(max as u64));
            }
            Ok(Value::UInt(n as u64))
        }
        SqlType::Year => {
            let n = match &v {
                Value::Str(s) if !is_whole_number(s) => {
                    return cx.fail(SqlError::data_truncated(name, row), Value::UInt(0));
                }
                other => other.to_i64().unwrap_or(0),
            };
            let is_str = matches!(v, Value::Str(_));
            let y = match n {
                0 if !is_str => 0,
                0..=69 => 2000 + n,
                70..=99 => 1900 + n,
                1901..=2155 => n,
                _ => return cx.fail(SqlError::out_of_range(name, row), Value::UInt(0)),
            };
            Ok(Value::UInt(y as u64))
        }
        SqlType::Decimal { precision, scale, unsigned } => {
            let d = match &v {
                Value::Str(s) => {
                    if !is_whole_number(s) {
                        let adj = v.to_decimal().unwrap_or_default();
                        let adj = Value::Decimal(
                            adj.with_scale_round(*scale as i64, bigdecimal::RoundingMode::HalfUp),
                        );
                        return cx.fail(not_a_number(s, "decimal", name, row), adj);
                    }
                    v.to_decimal().unwrap_or_default()
                }
                other => other.to_decimal().unwrap_or_default(),
            };
            let r = d.with_scale_round(*scale as i64, bigdecimal::RoundingMode::HalfUp);
            let limit = BigDecimal::from(10u64).powi((*precision - *scale) as i64);
            let neg = r.sign() == bigdecimal::num_bigint::Sign::Minus;
            if r.abs() >= limit || (*unsigned && neg) {
                let nines = format!(
                    "{}{}{}",
                    if *precision > *scale { "9".repeat((*precision - *scale) as usize) } else { "0".into() },
                    if *scale > 0 { "." } else { "" },
                    "9".repeat(*scale as usize)
                );
                let max = BigDecimal::from_str(&nines).unwrap_or_default();
                let adj = if *unsigned && neg {
                    BigDecimal::from(0).with_scale(*scale as i64)
                } else if neg {
                    -max
                } else {
                    max
                };
                return cx.fail(SqlError::out_of_range(name, row), Value::Decimal(adj));
            }
            Ok(Value::Decimal(r))
        }
        SqlType::Float { unsigned } | SqlType::Double { unsigned } => {
            let f = match &v {
                Value::Str(s) if !is_whole_number(s) => {
                    let adj = Value::Double(v.to_f64().unwrap_or(0.0));
                    return cx.fail(not_a_number(s, "double", name, row), adj);
                }
                other => other.to_f64().unwrap_or(0.0),
            };
            let f = if matches!(col.ty, SqlType::Float { .. }) { f as f32 as f64 } else { f };
            if !f.is_finite() || (*unsigned && f < 0.0) {
                return cx.fail(
                    SqlError::out_of_range(name, row),
                    Value::Double(if f < 0.0 { 0.0 } else { f64::MAX }),
                );
            }
            Ok(Value::Double(f))
        }
        SqlType::Str { kind, len, coll } => {
            let mut s = v.to_bytes().unwrap_or_default();
            check_charset(&s, *coll, name, row)?;
            let n = char_count(*coll, &s);
            let max = match kind {
                StrKind::Lob => *len,
                _ => *len,
            };
            let over = match kind {
                StrKind::Lob => s.len() as u64 > max,
                _ => n as u64 > max,
            };
            if over {
                // Trailing spaces past the length are cut without complaint.
                let cut = cut_chars(*coll, &s, max as usize, *kind == StrKind::Lob);
                let rest_spaces = s[cut..].iter().all(|b| *b == b' ');
                let t = s[..cut].to_vec();
                if rest_spaces && *coll != Collation::Binary {
                    s = t;
                } else {
                    let _ = cx.fail(SqlError::data_too_long(name, row), Value::Null)?;
                    s = t;
                }
            }
            if *kind == StrKind::Fixed {
                if *coll == Collation::Binary {
                    s.resize(*len as usize, 0);
                } else {
                    while s.last() == Some(&b' ') {
                        s.pop();
                    }
                }
            }
            Ok(Value::Str(s))
        }
        SqlType::Enum { values, coll } => {
            let pick = match &v {
                Value::Str(s) => {
                    let trimmed = trim_end_spaces(s);
                    values
                        .iter()
                        .find(|e| crate::collation::compare(*coll, e.as_bytes(), trimmed).is_eq())
                        .cloned()
                }
                other => {
                    let i = other.to_i64().unwrap_or(0);
                    if i == 0 {
                        Some(String::new())
                    } else {
                        usize::try_from(i - 1).ok().and_then(|i| values.get(i).cloned())
                    }
                }
            };
            match pick {
                Some(e) => Ok(Value::Str(e.into_bytes())),
                None => cx.fail(SqlError::data_truncated(name, row), Value::Str(Vec::new())),
            }
        }
        SqlType::Set { values, coll } => {
            let s = match &v {
                Value::Str(s) => s.clone(),
                other => {
                    let mask = other.to_i64().unwrap_or(0) as u64;
                    let parts: Vec<&str> = values
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| mask & (1 << i) != 0)
                        .map(|(_, v)| v.as_str())
                        .collect();
                    return Ok(Value::Str(parts.join(",").into_bytes()));
                }
            };
            let mut mask = 0u64;
            let mut bad = false;
            if !s.is_empty() {
                for part in s.split(|b| *b == b',') {
                    match values
                        .iter()
                        .position(|e| crate::collation::compare(*coll, e.as_bytes(), part).is_eq())
                    {
                        Some(i) => mask |= 1 << i,
                        None => bad = true,
                    }
                }
            }
            let parts: Vec<&str> = values
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, v)| v.as_str())
                .collect();
            let out = Value::Str(parts.join(",").into_bytes());
            if bad {
                return cx.fail(SqlError::data_truncated(name, row), out);
            }
            Ok(out)
        }
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. } | SqlType::Time { .. } => {
            let (kind, fsp, label) = match &col.ty {
                SqlType::Date => (TemporalKind::Date, 0, "date"),
                SqlType::Time { fsp } => (TemporalKind::Time, *fsp, "time"),
                SqlType::DateTime { fsp } => (TemporalKind::DateTime, *fsp, "datetime"),
                SqlType::Timestamp { fsp } => (TemporalKind::DateTime, *fsp, "datetime"),
                _ => unreachable!("matched above"),
            };
            let t = match &v {
                Value::Temporal(t) => Some(*t),
                Value::Str(s) => crate::temporal::parse(s, kind),
                other => crate::temporal::parse(other.render().as_bytes(), kind),
            };
            let zero = zero_temporal(kind, fsp);
            let Some(mut t) = t else {
                let shown = v.render();
                return cx.fail(
                    SqlError::incorrect_datetime_for_column(label, &shown, name, row),
                    Value::Temporal(zero),
                );
            };
            match (kind, t.kind) {
                (TemporalKind::Date, _) => t = Temporal::date(t.year, t.month, t.day),
                (TemporalKind::DateTime, TemporalKind::Date) => t.kind = TemporalKind::DateTime,
                (TemporalKind::DateTime, TemporalKind::Time) => {
                    let shown = v.render();
                    return cx.fail(
                        SqlError::incorrect_datetime_for_column(label, &shown, name, row),
                        Value::Temporal(zero),
                    );
                }
                (TemporalKind::Time, TemporalKind::Date) => t = zero,
                (TemporalKind::Time, TemporalKind::DateTime) => {
                    t = Temporal { kind: TemporalKind::Time, year: 0, month: 0, day: 0, neg: false, ..t }
                }
                _ => {}
            }
            // Fractional seconds past the column's precision are rounded away.
            let unit = 10u32.pow(6 - fsp as u32);
            t.micro = t.micro / unit * unit;
            t.fsp = fsp;
            if matches!(col.ty, SqlType::Timestamp { .. }) {
                return store_timestamp(t, &v, name, cx);
            }
            Ok(Value::Temporal(t))
        }
        SqlType::Json => {
            let s = v.to_bytes().unwrap_or_default();
            if serde_json::from_slice::<serde_json::Value>(&s).is_err() {
                return Err(SqlError::new(
                    4025,
                    "23000",
                    format!("CONSTRAINT `{name}` failed for column `{name}`"),
                ));
            }
            Ok(Value::Str(s))
        }
    }
}

/// A datetime `t` (in the session's zone) stored into a TIMESTAMP column,
/// as MariaDB: outside '1970-01-01 00:00:01' .. '2038-01-19 03:14:07' UTC
/// (or with a zero month or day) it is 1292 in strict mode, else the zero
/// timestamp with warning 1264; a time in the zone's DST gap is 1292 in
/// strict mode, else the instant after the gap with warning 1299. The
/// value returned is the stored instant in the session's zone, so the
/// codecs' conversion to UTC (`temporal::timestamp_to_stored`) is exact.
fn store_timestamp(t: Temporal, v: &Value, name: &str, cx: &mut StoreCtx) -> SqlResult<Value> {
    use crate::temporal::{self as tm, TsLocal};
    let tz = tm::session_tz();
    let row = cx.row;
    let zero = zero_temporal(TemporalKind::DateTime, t.fsp);
    let bad = || SqlError::incorrect_datetime_for_column("datetime", &v.render(), name, row);
    match tm::timestamp_of_local(&t, &tz) {
        TsLocal::Exact(_) => Ok(Value::Temporal(t)),
        TsLocal::Gap(us) => {
            if cx.strict {
                return Err(bad());
            }
            cx.warnings.push(Warning::from_error(&SqlError::new(
                1299,
                "HY000",
                format!("Invalid TIMESTAMP value in column '{name}' at row {row}"),
            )));
            Ok(Value::Temporal(tm::from_utc_micros(us, &tz, t.fsp)))
        }
        TsLocal::OutOfRange => {
            if cx.strict {
                return Err(bad());
            }
            cx.warnings.push(Warning::from_error(&SqlError::out_of_range(name, row)));
            Ok(Value::Temporal(zero))
        }
    }
}

/// A string that is not wholly a number stored into a numeric column:
/// 1265 "Data truncated" when it starts with one ('7x'), 1366 "Incorrect
/// ... value" when it does not ('abc', '').
fn not_a_number(s: &[u8], kind: &str, col: &str, row: usize) -> SqlError {
    if crate::value::parse_f64_prefix(s).1 > 0 {
        SqlError::data_truncated(col, row)
    } else {
        SqlError::incorrect_value(kind, &String::from_utf8_lossy(s), col, row)
    }
}

fn zero_temporal(kind: TemporalKind, fsp: u8) -> Temporal {
    Temporal { kind, fsp, ..Temporal::date(0, 0, 0) }
}

fn trim_end_spaces(s: &[u8]) -> &[u8] {
    let mut e = s.len();
    while e > 0 && s[e - 1] == b' ' {
        e -= 1;
    }
    &s[..e]
}

fn round_f64(d: f64) -> i128 {
    if d.is_nan() {
        0
    } else {
        d.round().clamp(-1.7e38, 1.7e38) as i128
    }
}

fn clamp(n: i128, lo: i128, hi: i128, unsigned: bool) -> Value {
    let n = n.clamp(lo, hi);
    if unsigned {
        Value::UInt(n as u64)
    } else {
        Value::Int(n as i64)
    }
}

fn char_count(coll: Collation, s: &[u8]) -> usize {
    if coll == Collation::Binary {
        s.len()
    } else {
        String::from_utf8_lossy(s).chars().count()
    }
}

/// Byte length of the first `n` characters (bytes for LOBs and binary).
fn cut_chars(coll: Collation, s: &[u8], n: usize, bytes: bool) -> usize {
    if coll == Collation::Binary || bytes {
        let mut cut = n.min(s.len());
        // Never split a UTF-8 character of a text LOB.
        while !bytes && cut > 0 && cut < s.len() && (s[cut] & 0xC0) == 0x80 {
            cut -= 1;
        }
        if bytes && coll != Collation::Binary {
            while cut > 0 && cut < s.len() && (s[cut] & 0xC0) == 0x80 {
                cut -= 1;
            }
        }
        return cut;
    }
    match std::str::from_utf8(s) {
        Ok(t) => t.char_indices().nth(n).map_or(s.len(), |(i, _)| i),
        Err(_) => n.min(s.len()),
    }
}

/// Text must be valid in its character set: UTF-8 for utf8mb4, without
/// 4-byte characters for utf8mb3, and U+0000..U+00FF for latin1 (kept as
/// UTF-8 inside).
fn check_charset(s: &[u8], coll: Collation, col: &str, row: usize) -> SqlResult<()> {
    let cs = coll.charset();
    if cs == Charset::Binary {
        return Ok(());
    }
    let bad = |at: usize| {
        let shown: String = s[at..].iter().take(4).map(|b| format!("\\x{b:02X}")).collect();
        Err(SqlError::new(
            1366,
            "22007",
            format!("Incorrect string value: '{shown}' for column `{col}` at row {row}"),
        ))
    };
    let text = match std::str::from_utf8(s) {
        Ok(t) => t,
        Err(e) => return bad(e.valid_up_to()),
    };
    for (i, c) in text.char_indices() {
        let ok = match cs {
            Charset::Utf8mb3 => (c as u32) < 0x10000,
            Charset::Latin1 => (c as u32) < 0x100,
            _ => true,
        };
        if !ok {
            return bad(i);
        }
    }
    Ok(())
}

/// A conversion message names its column alone ("for column `c` at row
/// 1"); MariaDB names it with its database and table. The statement that
/// knows the table rewrites the message with this.
pub fn qualify_column(msg: &str, db: &str, table: &str) -> Option<String> {
    const AT: &str = "for column `";
    let i = msg.find(AT)?;
    let rest = &msg[i + AT.len()..];
    let j = rest.find('`')?;
    if !rest[j..].starts_with("` at row") {
        return None;
    }
    let col = &rest[..j];
    Some(format!("{}for column `{db}`.`{table}`.`{col}`{}", &msg[..i], &rest[j + 1..]))
}

/// A column's DEFAULT, converted, or `None` when it has none.
pub fn default_value(col: &Column, now: Option<Value>) -> SqlResult<Option<Value>> {
    use crate::catalog::DefaultSpec;
    Ok(match &col.default {
        DefaultSpec::None => None,
        DefaultSpec::Null => Some(Value::Null),
        DefaultSpec::CurrentTimestamp => Some(now.unwrap_or(Value::Null)),
        // A TIMESTAMP's constant default is an instant, kept as its UTC
        // datetime (`timestamp_default_as_utc`), used and shown in the
        // session's zone, as MariaDB keeps it.
        DefaultSpec::Literal(b) if matches!(col.ty, SqlType::Timestamp { .. }) => {
            use crate::temporal::{self as tm, TimeZone};
            let fsp = match col.ty {
                SqlType::Timestamp { fsp } => fsp,
                _ => 0,
            };
            let us = tm::parse(b, TemporalKind::DateTime)
                .and_then(|t| tm::to_utc_micros(&t, &TimeZone::Offset(0)));
            let us = us.ok_or_else(|| SqlError::invalid_default(&col.name))?;
            Some(Value::Temporal(tm::from_utc_micros(us, &tm::session_tz(), fsp)))
        }
        DefaultSpec::Literal(b) => {
            let mut w = Vec::new();
            let mut cx = StoreCtx { strict: true, row: 1, warnings: &mut w };
            Some(store(Value::Str(b.clone()), col, &mut cx)?)
        }
    })
}

/// Makes a TIMESTAMP column's constant DEFAULT, as written in the
/// session's zone, the instant it names, kept as that instant's UTC
/// datetime (what `default_value` reads back). 1067 when it is no
/// TIMESTAMP. Other columns are left as they are.
pub fn timestamp_default_as_utc(col: &mut Column) -> SqlResult<()> {
    use crate::catalog::DefaultSpec;
    use crate::temporal::{self as tm, TimeZone};
    let (DefaultSpec::Literal(b), SqlType::Timestamp { fsp }) = (&col.default, &col.ty) else {
        return Ok(());
    };
    let fsp = *fsp;
    let mut w = Vec::new();
    let mut cx = StoreCtx { strict: true, row: 1, warnings: &mut w };
    let Ok(Value::Temporal(t)) = store(Value::Str(b.clone()), col, &mut cx) else {
        return Err(SqlError::invalid_default(&col.name));
    };
    let utc = tm::from_utc_micros(tm::timestamp_to_stored(&t), &TimeZone::Offset(0), fsp);
    col.default = DefaultSpec::Literal(utc.render().into_bytes());
    Ok(())
}

/// The implicit default of a NOT NULL column without one, as non-strict
/// inserts use it: 0, '', the zero date.
pub fn implicit_default(ty: &SqlType) -> Value {
    match ty {
        SqlType::Int { unsigned: false, .. } => Value::Int(0),
        SqlType::Int { unsigned: true, .. } | SqlType::Bit { .. } | SqlType::Year => Value::UInt(0),
        SqlType::Decimal { scale, .. } => Value::Decimal(BigDecimal::from(0).with_scale(*scale as i64)),
        SqlType::Float { .. } | SqlType::Double { .. } => Value::Double(0.0),
        SqlType::Enum { values, .. } => {
            Value::Str(values.first().map(|v| v.as_bytes().to_vec()).unwrap_or_default())
        }
        SqlType::Date => Value::Temporal(zero_temporal(TemporalKind::Date, 0)),
        SqlType::Time { fsp } => Value::Temporal(zero_temporal(TemporalKind::Time, *fsp)),
        SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => {
            Value::Temporal(zero_temporal(TemporalKind::DateTime, *fsp))
        }
        SqlType::Str { kind: StrKind::Fixed, len, coll: Collation::Binary } => {
            Value::Str(vec![0; *len as usize])
        }
        _ => Value::Str(Vec::new()),
    }
}
