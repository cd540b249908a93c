//! MariaDB's Sequence engine: a table named `seq_<from>_to_<to>` or
//! `seq_<from>_to_<to>_step_<n>` exists in every database (named or not)
//! without being created, with one column `seq BIGINT UNSIGNED NOT NULL`
//! (its primary key) holding `from`, `from + step`, ... up to `to`; when
//! `from > to` the rows run downwards. It is read-only: INSERT, UPDATE,
//! DELETE and TRUNCATE get 1031.
//!
//! Invariant: a real table or a view of the same name wins (MariaDB
//! discovers the table only when no other is so named), so [`rows`] is
//! asked only after those lookups fail.
//!
//! The rows are built whole when the query starts (as INFORMATION_SCHEMA's
//! are), so a table is limited to [`MAX_ROWS`] rows.

use crate::error::{SqlError, SqlResult};
use crate::infoschema::{VCol, Virtual};
use crate::types::SqlType;
use crate::value::Value;

/// The most rows a sequence table may have here (MariaDB streams them and
/// has no limit; these are built in memory).
pub const MAX_ROWS: u64 = 1 << 21;

/// A number as C's `%llu` reads it: an optional sign, then digits; too
/// large saturates at `u64::MAX`, a minus sign negates modulo 2^64.
/// Returns the number and the rest of the text.
fn llu(s: &str) -> Option<(u64, &str)> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = body.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let v = body[..n].bytes().fold(0u64, |a, d| a.saturating_mul(10).saturating_add(u64::from(d - b'0')));
    Some((if neg { v.wrapping_neg() } else { v }, &body[n..]))
}

/// `(from, to, step)` when `name` is a sequence table's name (case
/// matters, as in MariaDB: `SEQ_1_TO_3` is not one).
pub fn parse(name: &str) -> Option<(u64, u64, u64)> {
    let (from, rest) = llu(name.strip_prefix("seq_")?)?;
    let (to, rest) = llu(rest.strip_prefix("_to_")?)?;
    if rest.is_empty() {
        return Some((from, to, 1));
    }
    let (step, rest) = llu(rest.strip_prefix("_step_")?)?;
    rest.is_empty().then_some((from, to, step))
}

/// The values of `seq_<from>_to_<to>_step_<step>`, in the order a scan
/// reads them. Going down, the values are those of the upward sequence
/// from `to` (so `seq_10_to_2_step_3` is 8, 5, 2), as MariaDB has them.
fn values(from: u64, to: u64, step: u64) -> SqlResult<Vec<u64>> {
    debug_assert!(step > 0);
    let (lo, hi, down) = if from > to {
        if step > from - to {
            (from, from, true)
        } else {
            (to, from, true)
        }
    } else {
        (from, to, false)
    };
    let steps = (hi - lo) / step;
    if steps >= MAX_ROWS {
        return Err(SqlError::unsupported(format!("a Sequence table of more than {MAX_ROWS} rows")));
    }
    let mut v: Vec<u64> = (0..=steps).map(|i| lo + i * step).collect();
    if down {
        v.reverse();
    }
    Ok(v)
}

/// The rows of `name` read as a table, or None when it is not a sequence
/// table's name. Step 0 is MariaDB's 1030 (error 140 of the engine).
pub fn rows(name: &str) -> SqlResult<Option<Virtual>> {
    let Some((from, to, step)) = parse(name) else {
        return Ok(None);
    };
    if step == 0 {
        return Err(SqlError::new(
            1030,
            "HY000",
            "Got error 140 \"Wrong create options\" from storage engine SEQUENCE",
        ));
    }
    let rows = values(from, to, step)?.into_iter().map(|v| vec![Value::UInt(v)]).collect();
    let cols = vec![VCol {
        name: "seq".to_string(),
        ty: SqlType::Int { bytes: 8, unsigned: true },
        nullable: false,
    }];
    Ok(Some(Virtual { name: name.to_string(), cols, rows }))
}

/// A table lookup for a statement that would change the table: a missing
/// table with a sequence table's name is MariaDB's 1031 (the engine has no
/// writes), not 1146.
pub fn writable<T>(r: SqlResult<T>, db: &str, name: &str) -> SqlResult<T> {
    match r {
        Err(e) if e.code == 1146 && parse(name).is_some() => Err(SqlError::new(
            1031,
            "HY000",
            format!("Storage engine SEQUENCE of the table `{db}`.`{name}` doesn't have this option"),
        )),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        assert_eq!(parse("seq_1_to_10"), Some((1, 10, 1)));
        assert_eq!(parse("seq_01_to_3_step_2"), Some((1, 3, 2)));
        assert_eq!(parse("seq_1_to_3_step_"), None);
        assert_eq!(parse("seq_1_to_3x"), None);
        assert_eq!(parse("SEQ_1_TO_3"), None);
        assert_eq!(parse("seq_18446744073709551616_to_1"), Some((u64::MAX, 1, 1)));
        assert_eq!(values(1, 10, 3).unwrap(), vec![1, 4, 7, 10]);
        assert_eq!(values(10, 1, 3).unwrap(), vec![10, 7, 4, 1]);
        assert_eq!(values(10, 2, 3).unwrap(), vec![8, 5, 2]);
        assert_eq!(values(10, 8, 5).unwrap(), vec![10]);
        assert_eq!(values(u64::MAX - 1, u64::MAX, 1).unwrap(), vec![u64::MAX - 1, u64::MAX]);
        assert_eq!(values(1, 3, u64::MAX).unwrap(), vec![1]);
        assert!(values(0, u64::MAX, 1).is_err());
    }
}
