//! Scalar functions with MariaDB 10.11's results.
//!
//! `call` receives evaluated arguments (with the collation each string
//! argument's expression has) and returns the value MariaDB would, with its
//! NULL rules, conversions and warnings. Functions that are not pure
//! (NOW, DATABASE, LAST_INSERT_ID) read what they need from [`FnCtx`].

use std::cmp::Ordering;
use std::str::FromStr;

use bigdecimal::{BigDecimal, RoundingMode};

use crate::collation;
use crate::error::{SqlError, SqlResult, Warning};
use crate::types::Collation;
use crate::value::{format_double, is_whole_number, parse_f64_prefix, Value};

/// What a function may need beyond its arguments.
pub struct FnCtx<'a> {
    /// The statement's start, microseconds since the Unix epoch, UTC
    /// (NOW() is constant within a statement).
    pub now_micros: i64,
    /// The session's `time_zone`, as set ('SYSTEM', '+02:00', 'Europe/Paris').
    pub time_zone: &'a str,
    /// Where warnings go (SHOW WARNINGS).
    pub warnings: &'a mut Vec<Warning>,
    /// The current database (DATABASE()).
    pub database: Option<&'a str>,
    /// LAST_INSERT_ID(), CONNECTION_ID() and friends.
    pub last_insert_id: u64,
    pub connection_id: u64,
}

/// One argument: its value and, for strings, the collation its expression has.
pub struct Arg {
    pub value: Value,
    pub coll: Option<Collation>,
}

/// MariaDB's default `max_allowed_packet`: string results longer than this
/// are NULL with warning 1301.
const MAX_RESULT: u64 = 16 * 1024 * 1024;

/// Every function `call` knows.
const NAMES: &[&str] = &[
    // control flow
    "IF",
    "IFNULL",
    "NVL",
    "NULLIF",
    "COALESCE",
    "GREATEST",
    "LEAST",
    "ISNULL",
    "INTERVAL",
    // strings
    "CONCAT",
    "CONCAT_WS",
    "LENGTH",
    "OCTET_LENGTH",
    "CHAR_LENGTH",
    "CHARACTER_LENGTH",
    "UPPER",
    "UCASE",
    "LOWER",
    "LCASE",
    "SUBSTRING",
    "SUBSTR",
    "MID",
    "LEFT",
    "RIGHT",
    "TRIM",
    "LTRIM",
    "RTRIM",
    "TRIM_LEADING",
    "TRIM_TRAILING",
    "LPAD",
    "RPAD",
    "REPEAT",
    "REPLACE",
    "REVERSE",
    "LOCATE",
    "POSITION",
    "INSTR",
    "SUBSTRING_INDEX",
    "ASCII",
    "ORD",
    "CHAR",
    "HEX",
    "UNHEX",
    "SPACE",
    "STRCMP",
    "FIELD",
    "FIND_IN_SET",
    "ELT",
    "INSERT",
    "FORMAT",
    "QUOTE",
    "BIN",
    "OCT",
    "CONV",
    "TO_BASE64",
    "FROM_BASE64",
    "MD5",
    "SHA1",
    "SHA",
    "SHA2",
    "CRC32",
    "UUID",
    "LAST_INSERT_ID",
    "DATABASE",
    "SCHEMA",
    "USER",
    "CURRENT_USER",
    "SESSION_USER",
    "SYSTEM_USER",
    "VERSION",
    "CONNECTION_ID",
    "CHARSET",
    "COLLATION",
    "SLEEP",
    "BIT_LENGTH",
    // numbers
    "ABS",
    "SIGN",
    "CEIL",
    "CEILING",
    "FLOOR",
    "ROUND",
    "TRUNCATE",
    "MOD",
    "POW",
    "POWER",
    "SQRT",
    "EXP",
    "LN",
    "LOG",
    "LOG2",
    "LOG10",
    "PI",
    "RAND",
    "SIN",
    "COS",
    "TAN",
    "ASIN",
    "ACOS",
    "ATAN",
    "ATAN2",
    "COT",
    "DEGREES",
    "RADIANS",
];

/// True if `name` (upper case) is a scalar function `call` knows.
pub fn exists(name: &str) -> bool {
    NAMES.contains(&name) || DATE_NAMES.contains(&name) || JSON_NAMES.contains(&name)
}

/// True for functions whose result is a binary string whatever their
/// arguments (UNHEX, CHAR, FROM_BASE64).
pub fn result_is_binary(name: &str) -> bool {
    matches!(name, "UNHEX" | "CHAR" | "FROM_BASE64")
}

/// UNIX_TIMESTAMP of a non-constant string (the binder picks it; no SQL
/// name can reach it, as it is not in the list `exists` reads).
pub const UNIX_TIMESTAMP_OF_ROWS: &str = "UNIX_TIMESTAMP OF ROWS";

/// Calls scalar function `name` (upper case).
pub fn call(name: &str, args: Vec<Arg>, ctx: &mut FnCtx) -> SqlResult<Value> {
    if let Some(v) = control(name, &args, ctx)? {
        return Ok(v);
    }
    if let Some(v) = string(name, &args, ctx)? {
        return Ok(v);
    }
    if let Some(v) = numeric(name, &args, ctx)? {
        return Ok(v);
    }
    if let Some(v) = date_fn(name, &args, ctx)? {
        return Ok(v);
    }
    if let Some(v) = json_fn(name, &args, ctx)? {
        return Ok(v);
    }
    Err(SqlError::no_such_function(name))
}

// ---------------------------------------------------------------------------
// Shared helpers

fn count(name: &str, args: &[Arg], min: usize, max: usize) -> SqlResult<()> {
    if args.len() < min || args.len() > max {
        return Err(SqlError::wrong_arg_count(name));
    }
    Ok(())
}

fn any_null(args: &[Arg]) -> bool {
    args.iter().any(|a| a.value.is_null())
}

/// The collation string arguments are handled in: binary if any argument
/// is binary, else the first string argument's, else the default.
fn coll_of(args: &[Arg]) -> Collation {
    let mut c = None;
    for a in args {
        if let Some(x) = a.coll {
            if x == Collation::Binary {
                return x;
            }
            c.get_or_insert(x);
        }
    }
    c.unwrap_or(Collation::Utf8mb4GeneralCi)
}

fn bytes(v: &Value) -> Vec<u8> {
    v.to_bytes().unwrap_or_default()
}

fn lossy(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// A double from a numeric function's argument; strings that are not
/// wholly a number give warning 1292, as MariaDB does.
fn f64_of(v: &Value, ctx: &mut FnCtx) -> Option<f64> {
    match v {
        Value::Str(s) => Some(str_f64(s, ctx)),
        other => other.to_f64(),
    }
}

fn str_f64(s: &[u8], ctx: &mut FnCtx) -> f64 {
    if !is_whole_number(s) {
        ctx.warnings.push(Warning::warn(1292, format!("Truncated incorrect DOUBLE value: '{}'", lossy(s))));
    }
    parse_f64_prefix(s).0
}

/// An integer argument (a length, a position, a count).
fn i64_of(v: &Value, ctx: &mut FnCtx) -> Option<i64> {
    if let Value::Str(s) = v {
        if !is_whole_number(s) {
            ctx.warnings
                .push(Warning::warn(1292, format!("Truncated incorrect INTEGER value: '{}'", lossy(s))));
        }
    }
    v.to_i64()
}

/// Error 1690 for a DOUBLE result out of range, naming the call as
/// MariaDB prints it ('exp(1000)').
fn double_range(name: &str, args: &[Arg]) -> SqlError {
    let list: Vec<String> = args
        .iter()
        .map(|a| match &a.value {
            Value::Str(s) => format!("'{}'", lossy(s)),
            v => v.render(),
        })
        .collect();
    SqlError::value_out_of_range("DOUBLE", &format!("{}({})", name.to_ascii_lowercase(), list.join(",")))
}

/// A finite double result; overflow is error 1690.
fn dbl(name: &str, args: &[Arg], d: f64) -> SqlResult<Value> {
    if d.is_nan() {
        return Ok(Value::Null);
    }
    if d.is_infinite() {
        return Err(double_range(name, args));
    }
    Ok(Value::Double(d))
}

/// A string result, NULL with warning 1301 past `max_allowed_packet`.
fn limited(name: &str, len: u64, ctx: &mut FnCtx) -> bool {
    if len > MAX_RESULT {
        let e = SqlError::too_large(&format!("{}()", name.to_ascii_lowercase()), MAX_RESULT);
        ctx.warnings.push(Warning::from_error(&e));
        return false;
    }
    true
}

/// Byte offsets where each character of `s` starts (every byte for binary
/// strings); invalid UTF-8 counts a byte per character.
fn char_starts(s: &[u8], bin: bool) -> Vec<usize> {
    if bin {
        return (0..s.len()).collect();
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        out.push(i);
        i += utf8_width(s, i);
    }
    out
}

fn utf8_width(s: &[u8], i: usize) -> usize {
    let b = s[i];
    let w = match b {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    };
    if i + w > s.len() || s[i + 1..i + w].iter().any(|c| c & 0xC0 != 0x80) {
        1
    } else {
        w
    }
}

fn char_count(s: &[u8], bin: bool) -> usize {
    if bin {
        s.len()
    } else {
        char_starts(s, false).len()
    }
}

/// The characters `from..from+n` (0-based, clamped) of `s`.
fn char_slice(s: &[u8], bin: bool, from: usize, n: usize) -> Vec<u8> {
    let st = char_starts(s, bin);
    if from >= st.len() {
        return Vec::new();
    }
    let a = st[from];
    let b = st.get(from.saturating_add(n)).copied().unwrap_or(s.len());
    s[a..b].to_vec()
}

/// Case mapping one character at a time (utf8mb4_general_ci maps 'ß' to
/// itself, not to "SS").
fn map_case(s: &[u8], upper: bool) -> Vec<u8> {
    let text = lossy(s);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let mut m: Vec<char> = if upper { c.to_uppercase().collect() } else { c.to_lowercase().collect() };
        if m.len() == 1 {
            out.push(m.pop().unwrap_or(c));
        } else {
            out.push(c);
        }
    }
    out.into_bytes()
}

/// Where `needle` first occurs in `hay` at or after character `from`
/// (0-based), in characters, by the collation's equality.
fn find_chars(hay: &[u8], needle: &[u8], coll: Collation, from: usize) -> Option<usize> {
    let bin = coll == Collation::Binary;
    let hs = char_starts(hay, bin);
    let nlen = char_count(needle, bin);
    if needle.is_empty() {
        return if from <= hs.len() { Some(from) } else { None };
    }
    if nlen > hs.len() {
        return None;
    }
    let exact = bin || matches!(coll, Collation::Utf8mb4Bin | Collation::Utf8mb3Bin | Collation::Latin1Bin);
    for i in from..=hs.len() - nlen {
        let a = hs[i];
        let b = hs.get(i + nlen).copied().unwrap_or(hay.len());
        let w = &hay[a..b];
        let eq = if exact {
            w == needle
        } else {
            collation::compare(coll, w, needle) == Ordering::Equal
                && w.last().is_some_and(|c| *c != b' ') == needle.last().is_some_and(|c| *c != b' ')
                || w == needle
                || fold_eq(w, needle)
        };
        if eq {
            return Some(i);
        }
    }
    None
}

/// Case-insensitive equality character by character.
fn fold_eq(a: &[u8], b: &[u8]) -> bool {
    map_case(a, false) == map_case(b, false)
}

/// Equality of two strings in a collation, for FIELD / FIND_IN_SET.
fn str_eq(coll: Collation, a: &[u8], b: &[u8]) -> bool {
    match coll {
        Collation::Binary => a == b,
        c if c.is_ci() => {
            collation::compare(c, a, b) == Ordering::Equal || fold_eq(trim_end_sp(a), trim_end_sp(b))
        }
        c => collation::compare(c, a, b) == Ordering::Equal,
    }
}

fn str_cmp(coll: Collation, a: &[u8], b: &[u8]) -> Ordering {
    match coll {
        Collation::Binary => a.cmp(b),
        c if c.is_ci() => {
            let x = map_case(trim_end_sp(a), false);
            let y = map_case(trim_end_sp(b), false);
            x.cmp(&y)
        }
        c => collation::compare(c, trim_end_sp(a), trim_end_sp(b)),
    }
}

fn trim_end_sp(s: &[u8]) -> &[u8] {
    let mut e = s.len();
    while e > 0 && s[e - 1] == b' ' {
        e -= 1;
    }
    &s[..e]
}

fn is_numeric(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_))
}

// ---------------------------------------------------------------------------
// Control flow

fn control(name: &str, args: &[Arg], ctx: &mut FnCtx) -> SqlResult<Option<Value>> {
    Ok(Some(match name {
        "IF" => {
            count(name, args, 3, 3)?;
            if args[0].value.truth() == Some(true) {
                args[1].value.clone()
            } else {
                args[2].value.clone()
            }
        }
        "IFNULL" | "NVL" => {
            count(name, args, 2, 2)?;
            if args[0].value.is_null() {
                args[1].value.clone()
            } else {
                args[0].value.clone()
            }
        }
        "NULLIF" => {
            count(name, args, 2, 2)?;
            let (a, b) = (&args[0].value, &args[1].value);
            if !a.is_null() && !b.is_null() && cmp_values(args, a, b, ctx) == Some(Ordering::Equal) {
                Value::Null
            } else {
                a.clone()
            }
        }
        "COALESCE" => {
            if args.is_empty() {
                return Err(SqlError::wrong_arg_count(name));
            }
            args.iter().find(|a| !a.value.is_null()).map(|a| a.value.clone()).unwrap_or(Value::Null)
        }
        "GREATEST" | "LEAST" => {
            if args.len() < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let mut best = &args[0].value;
            for a in &args[1..] {
                let o = cmp_values(args, &a.value, best, ctx).unwrap_or(Ordering::Equal);
                if (name == "GREATEST" && o == Ordering::Greater) || (name == "LEAST" && o == Ordering::Less)
                {
                    best = &a.value;
                }
            }
            greatest_result(args, best)
        }
        "ISNULL" => {
            count(name, args, 1, 1)?;
            Value::Int(args[0].value.is_null() as i64)
        }
        "INTERVAL" => {
            if args.len() < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let Some(n) = f64_of(&args[0].value, ctx) else {
                return Ok(Some(Value::Int(-1)));
            };
            let mut i = 0;
            for a in &args[1..] {
                match f64_of(&a.value, ctx) {
                    Some(x) if x <= n => i += 1,
                    None => i += 1,
                    _ => break,
                }
            }
            Value::Int(i)
        }
        _ => return Ok(None),
    }))
}

/// Compares two arguments of a comparison function the way its argument
/// list decides: as temporals if any is temporal, numbers if all are
/// numbers (or a number meets a string), strings in the list's collation.
fn cmp_values(args: &[Arg], a: &Value, b: &Value, ctx: &mut FnCtx) -> Option<Ordering> {
    let all_str = args.iter().all(|x| matches!(x.value, Value::Str(_) | Value::Null));
    let any_temporal = args.iter().find_map(|x| match &x.value {
        Value::Temporal(t) => Some(t.kind),
        _ => None,
    });
    if let Some(kind) = any_temporal {
        let k = if kind == TemporalKind::Time { kind } else { TemporalKind::DateTime };
        let ta = to_temporal_quiet(a, k);
        let tb = to_temporal_quiet(b, k);
        if let (Some(x), Some(y)) = (ta, tb) {
            return Some(x.ordinal().cmp(&y.ordinal()));
        }
    }
    if all_str {
        return Some(str_cmp(coll_of(args), &bytes(a), &bytes(b)));
    }
    let fa = match a {
        Value::Str(s) => Value::Double(str_f64(s, ctx)),
        v => v.clone(),
    };
    let fb = match b {
        Value::Str(s) => Value::Double(str_f64(s, ctx)),
        v => v.clone(),
    };
    crate::value::compare_numeric(&fa, &fb)
}

/// GREATEST / LEAST return their winner converted to the type of the
/// whole list: a decimal when integers meet decimals (GREATEST(3, 2.5) is
/// 3.0), a double when doubles take part.
fn greatest_result(args: &[Arg], best: &Value) -> Value {
    let nums = args.iter().all(|a| is_numeric(&a.value));
    if !nums {
        if let Value::Temporal(_) = best {
            return best.clone();
        }
        if args.iter().any(|a| matches!(a.value, Value::Temporal(_))) {
            return best.clone();
        }
        return best.clone();
    }
    if args.iter().any(|a| matches!(a.value, Value::Double(_))) {
        return Value::Double(best.to_f64().unwrap_or(0.0));
    }
    let scale = args
        .iter()
        .filter_map(|a| match &a.value {
            Value::Decimal(d) => Some(d.fractional_digit_count().max(0)),
            _ => None,
        })
        .max();
    if let Some(s) = scale {
        let d = best.to_decimal().unwrap_or_default();
        return Value::Decimal(d.with_scale(s));
    }
    best.clone()
}

// ---------------------------------------------------------------------------
// Strings

fn string(name: &str, args: &[Arg], ctx: &mut FnCtx) -> SqlResult<Option<Value>> {
    let coll = coll_of(args);
    let bin = coll == Collation::Binary;
    let n = args.len();
    // Functions that see NULLs themselves.
    match name {
        "CONCAT_WS" => {
            if n < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let Some(sep) = args[0].value.to_bytes() else {
                return Ok(Some(Value::Null));
            };
            let parts: Vec<Vec<u8>> = args[1..].iter().filter_map(|a| a.value.to_bytes()).collect();
            let total: u64 = parts.iter().map(|p| p.len() as u64).sum::<u64>()
                + sep.len() as u64 * parts.len().saturating_sub(1) as u64;
            if !limited(name, total, ctx) {
                return Ok(Some(Value::Null));
            }
            return Ok(Some(Value::Str(parts.join(&sep[..]))));
        }
        "ELT" => {
            if n < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let Some(i) = i64_of(&args[0].value, ctx) else {
                return Ok(Some(Value::Null));
            };
            if i < 1 || i as u64 >= n as u64 {
                return Ok(Some(Value::Null));
            }
            return Ok(Some(match &args[i as usize].value {
                Value::Null => Value::Null,
                v => Value::Str(bytes(v)),
            }));
        }
        "FIELD" => {
            if n < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            if args[0].value.is_null() {
                return Ok(Some(Value::Int(0)));
            }
            let all_str = args.iter().all(|a| matches!(a.value, Value::Str(_) | Value::Null));
            for (i, a) in args.iter().enumerate().skip(1) {
                if a.value.is_null() {
                    continue;
                }
                let eq = if all_str {
                    str_eq(coll, &bytes(&args[0].value), &bytes(&a.value))
                } else {
                    cmp_values(args, &args[0].value, &a.value, ctx) == Some(Ordering::Equal)
                };
                if eq {
                    return Ok(Some(Value::Int(i as i64)));
                }
            }
            return Ok(Some(Value::Int(0)));
        }
        "QUOTE" => {
            count(name, args, 1, 1)?;
            let Some(s) = args[0].value.to_bytes() else {
                return Ok(Some(Value::str("NULL")));
            };
            let mut out = Vec::with_capacity(s.len() + 2);
            out.push(b'\'');
            for c in s {
                match c {
                    b'\\' | b'\'' => {
                        out.push(b'\\');
                        out.push(c);
                    }
                    0 => out.extend_from_slice(b"\\0"),
                    0x1a => out.extend_from_slice(b"\\Z"),
                    c => out.push(c),
                }
            }
            out.push(b'\'');
            return Ok(Some(Value::Str(out)));
        }
        "CHAR" => {
            if n == 0 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let mut out = Vec::new();
            for a in args {
                let Some(v) = i64_of(&a.value, ctx) else { continue };
                let v = v as u32;
                let b = v.to_be_bytes();
                let skip = if v & 0xFF00_0000 != 0 {
                    0
                } else if v & 0xFF_0000 != 0 {
                    1
                } else if v & 0xFF00 != 0 {
                    2
                } else {
                    3
                };
                out.extend_from_slice(&b[skip..]);
            }
            return Ok(Some(Value::Str(out)));
        }
        "CHARSET" | "COLLATION" => {
            count(name, args, 1, 1)?;
            let c = match (&args[0].value, args[0].coll) {
                (Value::Null, Some(c)) => c,
                (Value::Null, None) => Collation::Binary,
                (Value::Str(_), Some(c)) => c,
                (Value::Str(_), None) => Collation::Utf8mb4GeneralCi,
                _ => Collation::Binary,
            };
            let s = if name == "CHARSET" { c.charset().name() } else { c.name() };
            return Ok(Some(Value::str(s)));
        }
        "LAST_INSERT_ID" => {
            count(name, args, 0, 1)?;
            return Ok(Some(match args.first() {
                None => Value::UInt(ctx.last_insert_id),
                Some(a) => match a.value.to_i64() {
                    None => Value::Null,
                    Some(v) => Value::UInt(v as u64),
                },
            }));
        }
        "DATABASE" | "SCHEMA" => {
            count(name, args, 0, 0)?;
            return Ok(Some(ctx.database.map(Value::str).unwrap_or(Value::Null)));
        }
        "USER" | "SESSION_USER" | "SYSTEM_USER" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::str(crate::accounts::user_fn())));
        }
        "CURRENT_USER" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::str(crate::accounts::current_user_fn())));
        }
        "VERSION" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::str(crate::SERVER_VERSION)));
        }
        "CONNECTION_ID" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::UInt(ctx.connection_id)));
        }
        "UUID" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::str(uuid(ctx))));
        }
        "SLEEP" => {
            count(name, args, 1, 1)?;
            let Some(s) = f64_of(&args[0].value, ctx) else {
                return Ok(Some(Value::Null));
            };
            if s > 0.0 && s.is_finite() {
                // Sleeps in slices so a KILL (the thread's interrupt flag)
                // ends it: MariaDB fails the statement with 1317 then.
                let _blocked = fractaldb::blocking();
                let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(s.min(31_536_000.0));
                loop {
                    if fractaldb::interrupt_requested() {
                        return Err(SqlError::interrupted());
                    }
                    let left = end.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(fractaldb::INTERRUPT_POLL));
                }
            }
            return Ok(Some(Value::Int(0)));
        }
        _ => {}
    }
    if !NAMES.contains(&name) {
        return Ok(None);
    }
    let (min, max) = match name {
        "CONCAT" => (1, usize::MAX),
        "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "UPPER" | "UCASE" | "LOWER"
        | "LCASE" | "LTRIM" | "RTRIM" | "REVERSE" | "ASCII" | "ORD" | "HEX" | "UNHEX" | "SPACE" | "BIN"
        | "OCT" | "TO_BASE64" | "FROM_BASE64" | "MD5" | "SHA1" | "SHA" | "CRC32" | "BIT_LENGTH" => (1, 1),
        "SUBSTRING" | "SUBSTR" | "MID" => (2, 3),
        "TRIM" | "TRIM_LEADING" | "TRIM_TRAILING" => (1, 2),
        "LOCATE" | "POSITION" => (2, 3),
        "FORMAT" => (2, 3),
        "LEFT" | "RIGHT" | "REPEAT" | "INSTR" | "STRCMP" | "FIND_IN_SET" | "SHA2" => (2, 2),
        "LPAD" | "RPAD" | "REPLACE" | "SUBSTRING_INDEX" | "CONV" => (3, 3),
        "INSERT" => (4, 4),
        _ => return Ok(None),
    };
    count(name, args, min, max)?;
    if any_null(args) {
        return Ok(Some(Value::Null));
    }
    let s = |i: usize| bytes(&args[i].value);
    Ok(Some(match name {
        "CONCAT" => {
            let total: u64 = args.iter().map(|a| bytes(&a.value).len() as u64).sum();
            if !limited(name, total, ctx) {
                return Ok(Some(Value::Null));
            }
            Value::Str(args.iter().flat_map(|a| bytes(&a.value)).collect())
        }
        "LENGTH" | "OCTET_LENGTH" => Value::Int(s(0).len() as i64),
        "BIT_LENGTH" => Value::Int(s(0).len() as i64 * 8),
        "CHAR_LENGTH" | "CHARACTER_LENGTH" => Value::Int(char_count(&s(0), bin) as i64),
        "UPPER" | "UCASE" | "LOWER" | "LCASE" => {
            if bin {
                Value::Str(s(0))
            } else {
                Value::Str(map_case(&s(0), matches!(name, "UPPER" | "UCASE")))
            }
        }
        "SUBSTRING" | "SUBSTR" | "MID" => {
            let st = s(0);
            let total = char_count(&st, bin) as i64;
            let pos = i64_of(&args[1].value, ctx).unwrap_or(0);
            let len = if n == 3 { i64_of(&args[2].value, ctx).unwrap_or(0) } else { i64::MAX };
            if pos == 0 || len <= 0 {
                return Ok(Some(Value::str("")));
            }
            let start = if pos < 0 {
                if pos < -total {
                    return Ok(Some(Value::str("")));
                }
                total + pos
            } else {
                pos - 1
            };
            if start >= total {
                return Ok(Some(Value::str("")));
            }
            Value::Str(char_slice(&st, bin, start as usize, len.min(total) as usize))
        }
        "LEFT" | "RIGHT" => {
            let st = s(0);
            let k = i64_of(&args[1].value, ctx).unwrap_or(0);
            if k <= 0 {
                return Ok(Some(Value::str("")));
            }
            let total = char_count(&st, bin);
            let k = (k as u64).min(total as u64) as usize;
            if name == "LEFT" {
                Value::Str(char_slice(&st, bin, 0, k))
            } else {
                Value::Str(char_slice(&st, bin, total - k, k))
            }
        }
        "LTRIM" => {
            let st = s(0);
            let i = st.iter().position(|c| *c != b' ').unwrap_or(st.len());
            Value::Str(st[i..].to_vec())
        }
        "RTRIM" => Value::Str(trim_end_sp(&s(0)).to_vec()),
        "TRIM" | "TRIM_LEADING" | "TRIM_TRAILING" => {
            let st = s(0);
            let rem = if n == 2 { s(1) } else { b" ".to_vec() };
            let mut a = 0;
            let mut b = st.len();
            if !rem.is_empty() {
                if name != "TRIM_TRAILING" {
                    while b - a >= rem.len() && st[a..a + rem.len()] == rem[..] {
                        a += rem.len();
                    }
                }
                if name != "TRIM_LEADING" {
                    while b - a >= rem.len() && st[b - rem.len()..b] == rem[..] {
                        b -= rem.len();
                    }
                }
            }
            Value::Str(st[a..b].to_vec())
        }
        "LPAD" | "RPAD" => {
            let st = s(0);
            let Some(len) = i64_of(&args[1].value, ctx) else {
                return Ok(Some(Value::Null));
            };
            let pad = s(2);
            if len < 0 {
                return Ok(Some(Value::Null));
            }
            let have = char_count(&st, bin) as u64;
            let len = len as u64;
            if len <= have {
                return Ok(Some(Value::Str(char_slice(&st, bin, 0, len as usize))));
            }
            if pad.is_empty() {
                return Ok(Some(Value::Null));
            }
            let need = len - have;
            let pad_chars = char_starts(&pad, bin);
            if !limited(name, len.saturating_mul(coll.charset().max_len()), ctx) {
                return Ok(Some(Value::Null));
            }
            let mut fill = Vec::new();
            let whole = need / pad_chars.len() as u64;
            for _ in 0..whole {
                fill.extend_from_slice(&pad);
            }
            let rest = (need % pad_chars.len() as u64) as usize;
            fill.extend_from_slice(&char_slice(&pad, bin, 0, rest));
            if name == "LPAD" {
                fill.extend_from_slice(&st);
                Value::Str(fill)
            } else {
                let mut out = st;
                out.extend_from_slice(&fill);
                Value::Str(out)
            }
        }
        "REPEAT" => {
            let st = s(0);
            let k = i64_of(&args[1].value, ctx).unwrap_or(0);
            if k <= 0 || st.is_empty() {
                return Ok(Some(Value::str("")));
            }
            if !limited(name, (st.len() as u64).saturating_mul(k as u64), ctx) {
                return Ok(Some(Value::Null));
            }
            Value::Str(st.repeat(k as usize))
        }
        "SPACE" => {
            let k = i64_of(&args[0].value, ctx).unwrap_or(0);
            if k <= 0 {
                return Ok(Some(Value::str("")));
            }
            if !limited(name, k as u64, ctx) {
                return Ok(Some(Value::Null));
            }
            Value::Str(vec![b' '; k as usize])
        }
        "REPLACE" => {
            let (st, from, to) = (s(0), s(1), s(2));
            if from.is_empty() {
                return Ok(Some(Value::Str(st)));
            }
            let mut out = Vec::with_capacity(st.len());
            let mut i = 0;
            while i < st.len() {
                if st[i..].starts_with(&from) {
                    out.extend_from_slice(&to);
                    i += from.len();
                    if !limited(name, out.len() as u64, ctx) {
                        return Ok(Some(Value::Null));
                    }
                } else {
                    let w = if bin { 1 } else { utf8_width(&st, i) };
                    out.extend_from_slice(&st[i..i + w]);
                    i += w;
                }
            }
            Value::Str(out)
        }
        "REVERSE" => {
            let st = s(0);
            let starts = char_starts(&st, bin);
            let mut out = Vec::with_capacity(st.len());
            for (k, a) in starts.iter().enumerate().rev() {
                let b = starts.get(k + 1).copied().unwrap_or(st.len());
                out.extend_from_slice(&st[*a..b]);
            }
            Value::Str(out)
        }
        "LOCATE" | "POSITION" | "INSTR" => {
            let (needle, hay) = if name == "INSTR" { (s(1), s(0)) } else { (s(0), s(1)) };
            let from = if n == 3 {
                let p = i64_of(&args[2].value, ctx).unwrap_or(0);
                if p <= 0 {
                    return Ok(Some(Value::Int(0)));
                }
                (p - 1) as usize
            } else {
                0
            };
            let total = char_count(&hay, bin);
            if from > total {
                return Ok(Some(Value::Int(0)));
            }
            Value::Int(find_chars(&hay, &needle, coll, from).map(|p| p as i64 + 1).unwrap_or(0))
        }
        "SUBSTRING_INDEX" => {
            let (st, delim) = (s(0), s(1));
            let k = i64_of(&args[2].value, ctx).unwrap_or(0);
            if k == 0 || delim.is_empty() {
                return Ok(Some(Value::str("")));
            }
            let mut pos = Vec::new();
            let mut i = 0;
            while i + delim.len() <= st.len() {
                if st[i..].starts_with(&delim) {
                    pos.push(i);
                    i += delim.len();
                } else {
                    i += 1;
                }
            }
            if k > 0 {
                match pos.get((k - 1).min(i64::MAX - 1) as usize) {
                    Some(p) => Value::Str(st[..*p].to_vec()),
                    None => Value::Str(st),
                }
            } else {
                let back = k.unsigned_abs();
                if back as usize > pos.len() {
                    Value::Str(st)
                } else {
                    let p = pos[pos.len() - back as usize];
                    Value::Str(st[p + delim.len()..].to_vec())
                }
            }
        }
        "ASCII" => Value::Int(s(0).first().copied().unwrap_or(0) as i64),
        "ORD" => {
            let st = s(0);
            if st.is_empty() {
                return Ok(Some(Value::Int(0)));
            }
            let w = if bin { 1 } else { utf8_width(&st, 0) };
            Value::Int(st[..w].iter().fold(0i64, |acc, b| acc * 256 + *b as i64))
        }
        "HEX" => match &args[0].value {
            Value::Str(b) => Value::str(hex_upper(b)),
            Value::UInt(u) => Value::str(format!("{u:X}")),
            Value::Double(d) if *d >= 9.223_372_036_854_776e18 => {
                Value::str(format!("{:X}", if *d >= 1.8446744073709552e19 { u64::MAX } else { *d as u64 }))
            }
            v => Value::str(format!("{:X}", v.to_i64().unwrap_or(0) as u64)),
        },
        "UNHEX" => {
            let st = s(0);
            let mut digits: Vec<u8> = Vec::with_capacity(st.len() + 1);
            if st.len() % 2 == 1 {
                digits.push(b'0');
            }
            digits.extend_from_slice(&st);
            let mut out = Vec::with_capacity(digits.len() / 2);
            for pair in digits.chunks(2) {
                let (Some(h), Some(l)) = (hexval(pair[0]), hexval(pair[1])) else {
                    return Ok(Some(Value::Null));
                };
                out.push(h * 16 + l);
            }
            Value::Str(out)
        }
        "STRCMP" => Value::Int(match str_cmp(coll, &s(0), &s(1)) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }),
        "FIND_IN_SET" => {
            let (needle, list) = (s(0), s(1));
            if needle.contains(&b',') {
                return Ok(Some(Value::Int(0)));
            }
            let mut found = 0;
            for (i, item) in list.split(|c| *c == b',').enumerate() {
                if str_eq(coll, item, &needle) {
                    found = i as i64 + 1;
                    break;
                }
            }
            if list.is_empty() {
                found = 0;
            }
            Value::Int(found)
        }
        "INSERT" => {
            let st = s(0);
            let pos = i64_of(&args[1].value, ctx).unwrap_or(0);
            let len = i64_of(&args[2].value, ctx).unwrap_or(0);
            let new = s(3);
            let total = char_count(&st, bin) as i64;
            if pos < 1 || pos > total {
                return Ok(Some(Value::Str(st)));
            }
            let start = pos - 1;
            let len = if len < 0 || len > total - start { total - start } else { len };
            let mut out = char_slice(&st, bin, 0, start as usize);
            out.extend_from_slice(&new);
            out.extend_from_slice(&char_slice(&st, bin, (start + len) as usize, usize::MAX));
            if !limited(name, out.len() as u64, ctx) {
                return Ok(Some(Value::Null));
            }
            Value::Str(out)
        }
        "FORMAT" => {
            let d = i64_of(&args[1].value, ctx).unwrap_or(0).clamp(0, 38);
            Value::str(format_number(&args[0].value, d as u32, ctx))
        }
        "BIN" | "OCT" => {
            let to = if name == "BIN" { 2 } else { 8 };
            Value::str(conv(&args[0].value, 10, to).unwrap_or_default())
        }
        "CONV" => {
            let from = i64_of(&args[1].value, ctx).unwrap_or(0);
            let to = i64_of(&args[2].value, ctx).unwrap_or(0);
            match conv(&args[0].value, from, to) {
                Some(x) => Value::str(x),
                None => Value::Null,
            }
        }
        "TO_BASE64" => {
            let enc = base64_encode(&s(0));
            if !limited(name, enc.len() as u64, ctx) {
                return Ok(Some(Value::Null));
            }
            Value::str(enc)
        }
        "FROM_BASE64" => match base64_decode(&s(0)) {
            Some(b) => Value::Str(b),
            None => Value::Null,
        },
        "MD5" => {
            use md5::Digest;
            Value::str(hex_lower(&md5::Md5::digest(s(0))))
        }
        "SHA1" | "SHA" => {
            use sha1::Digest;
            Value::str(hex_lower(&sha1::Sha1::digest(s(0))))
        }
        "SHA2" => {
            use sha2::Digest;
            let st = s(0);
            match i64_of(&args[1].value, ctx).unwrap_or(-1) {
                0 | 256 => Value::str(hex_lower(&sha2::Sha256::digest(&st))),
                224 => Value::str(hex_lower(&sha2::Sha224::digest(&st))),
                384 => Value::str(hex_lower(&sha2::Sha384::digest(&st))),
                512 => Value::str(hex_lower(&sha2::Sha512::digest(&st))),
                _ => Value::Null,
            }
        }
        "CRC32" => Value::UInt(crc32fast::hash(&s(0)) as u64),
        _ => return Ok(None),
    }))
}

fn hexval(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn hex_upper(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for c in b {
        s.push_str(&format!("{c:02X}"));
    }
    s
}

fn hex_lower(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for c in b {
        s.push_str(&format!("{c:02x}"));
    }
    s
}

/// A version-1 style UUID as MariaDB prints it: a 60-bit timestamp of
/// 100 ns ticks since 1582-10-15, a clock sequence and a node.
fn uuid(ctx: &FnCtx) -> String {
    use std::sync::atomic::{AtomicU64, Ordering as O};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, O::Relaxed);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 / 100)
        .unwrap_or(0);
    let ticks = wall.wrapping_add(0x01B2_1DD2_1381_4000).wrapping_add(seq);
    let node = 0x02fc_0000_0000u64 | (ctx.connection_id & 0xFFFF_FFFF);
    let clock = (std::process::id() as u64 ^ 0x8f98) & 0x3FFF | 0x8000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        ticks & 0xFFFF_FFFF,
        (ticks >> 32) & 0xFFFF,
        ((ticks >> 48) & 0x0FFF) | 0x1000,
        clock,
        node
    )
}

/// FORMAT(X, D): rounded to D decimals (half away from zero for exact
/// numbers, to even for doubles as MariaDB's `rint`), thousands separated
/// by commas.
fn format_number(v: &Value, d: u32, ctx: &mut FnCtx) -> String {
    let txt = match v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
            let x = v.to_decimal().unwrap_or_default();
            x.with_scale_round(d as i64, RoundingMode::HalfUp).to_plain_string()
        }
        other => {
            let f = f64_of(other, ctx).unwrap_or(0.0);
            if !f.is_finite() {
                return format_double(f);
            }
            let r = round_double(f, d as i64, false);
            format!("{:.*}", d as usize, r)
        }
    };
    let (neg, body) = match txt.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, txt),
    };
    let (ip, fp) = match body.split_once('.') {
        Some((a, b)) => (a.to_string(), Some(b.to_string())),
        None => (body, None),
    };
    let mut out = String::new();
    let digits = ip.as_bytes();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(*c as char);
    }
    if let Some(f) = fp {
        if d > 0 {
            out.push('.');
            out.push_str(&f);
        }
    }
    let zero = out.bytes().all(|c| c == b'0' || c == b',' || c == b'.');
    if neg && !zero {
        out.insert(0, '-');
    }
    out
}

/// CONV: `v` read in base |from| (negative: signed) written in base |to|
/// (negative: signed output). `None` for a base outside 2..=36.
fn conv(v: &Value, from: i64, to: i64) -> Option<String> {
    if !(2..=36).contains(&from.unsigned_abs()) || !(2..=36).contains(&to.unsigned_abs()) {
        return None;
    }
    let n: u64 = match v {
        Value::Int(i) => *i as u64,
        Value::UInt(u) => *u,
        Value::Double(_) | Value::Decimal(_) | Value::Temporal(_) => v.to_i64().unwrap_or(0) as u64,
        Value::Str(s) => {
            let base = from.unsigned_abs() as u32;
            let mut i = 0;
            while i < s.len() && s[i].is_ascii_whitespace() {
                i += 1;
            }
            let neg = s.get(i) == Some(&b'-');
            if neg || s.get(i) == Some(&b'+') {
                i += 1;
            }
            let mut acc: u64 = 0;
            let mut overflow = false;
            while i < s.len() {
                let Some(d) = (s[i] as char).to_digit(base) else { break };
                match acc.checked_mul(base as u64).and_then(|x| x.checked_add(d as u64)) {
                    Some(x) => acc = x,
                    None => overflow = true,
                }
                i += 1;
            }
            if from < 0 {
                let lim = if neg { 1u64 << 63 } else { i64::MAX as u64 };
                if overflow || acc > lim {
                    acc = lim;
                }
                if neg {
                    (acc as i64).wrapping_neg() as u64
                } else {
                    acc
                }
            } else {
                if overflow {
                    acc = u64::MAX;
                }
                if neg {
                    acc.wrapping_neg()
                } else {
                    acc
                }
            }
        }
        Value::Null => return None,
    };
    let (neg, mut mag) =
        if to < 0 && (n as i64) < 0 { (true, (n as i64).unsigned_abs()) } else { (false, n) };
    let base = to.unsigned_abs();
    let mut digits = Vec::new();
    loop {
        let d = (mag % base) as u32;
        digits.push(std::char::from_digit(d, 36).unwrap_or('0').to_ascii_uppercase());
        mag /= base;
        if mag == 0 {
            break;
        }
    }
    if neg {
        digits.push('-');
    }
    Some(digits.iter().rev().collect())
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// TO_BASE64: MariaDB breaks the text into lines of 76 characters.
fn base64_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() * 4 / 3 + 4);
    let mut line = 0;
    for chunk in b.chunks(3) {
        if line == 76 {
            out.push('\n');
            line = 0;
        }
        let v = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        out.push(B64[(v >> 18) as usize & 63] as char);
        out.push(B64[(v >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 { B64[(v >> 6) as usize & 63] as char } else { '=' });
        out.push(if chunk.len() > 2 { B64[v as usize & 63] as char } else { '=' });
        line += 4;
    }
    out
}

/// FROM_BASE64: spaces and line breaks are skipped; anything else that is
/// not base64, or a wrong length, gives NULL.
fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut vals = Vec::with_capacity(s.len());
    let mut pad = 0;
    for &c in s {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            pad += 1;
            vals.push(0);
            continue;
        }
        if pad > 0 {
            return None;
        }
        let v = B64.iter().position(|x| *x == c)? as u32;
        vals.push(v);
    }
    if vals.len() % 4 != 0 || pad > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(vals.len() / 4 * 3);
    for q in vals.chunks(4) {
        let v = q[0] << 18 | q[1] << 12 | q[2] << 6 | q[3];
        out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
    }
    out.truncate(out.len() - pad);
    Some(out)
}

// ---------------------------------------------------------------------------
// Numbers

/// A numeric argument by the kind of arithmetic MariaDB does on it.
enum Num {
    I(i64),
    U(u64),
    D(BigDecimal),
    F(f64),
}

fn num_of(v: &Value, ctx: &mut FnCtx) -> Option<Num> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => Num::I(*i),
        Value::UInt(u) => Num::U(*u),
        Value::Decimal(d) => Num::D(d.clone()),
        Value::Double(d) => Num::F(*d),
        Value::Str(s) => Num::F(str_f64(s, ctx)),
        Value::Temporal(t) => {
            if t.fsp == 0 {
                Num::I(t.to_number() as i64)
            } else {
                Num::D(
                    BigDecimal::from_str(&format!("{:.*}", t.fsp as usize, t.to_number()))
                        .unwrap_or_default(),
                )
            }
        }
    })
}

/// An integer result, as a decimal when it leaves BIGINT's range.
fn int_result(x: i128) -> Value {
    if let Ok(i) = i64::try_from(x) {
        Value::Int(i)
    } else if let Ok(u) = u64::try_from(x) {
        Value::UInt(u)
    } else {
        Value::Decimal(BigDecimal::from(x))
    }
}

/// MariaDB's `my_double_round`: scale by 10^dec, round to even (`rint`)
/// or truncate, scale back.
fn round_double(value: f64, dec: i64, truncate: bool) -> f64 {
    let abs = dec.unsigned_abs();
    let tmp = if abs < 309 { 10f64.powi(abs as i32) } else { f64::INFINITY };
    let div = value / tmp;
    let mul = value * tmp;
    if dec < 0 && tmp.is_infinite() {
        return 0.0;
    }
    if dec >= 0 && mul.is_infinite() {
        return value;
    }
    if truncate {
        if value >= 0.0 {
            if dec < 0 {
                div.floor() * tmp
            } else {
                mul.floor() / tmp
            }
        } else if dec < 0 {
            div.ceil() * tmp
        } else {
            mul.ceil() / tmp
        }
    } else if dec < 0 {
        div.round_ties_even() * tmp
    } else {
        mul.round_ties_even() / tmp
    }
}

/// ROUND / TRUNCATE of an integer to `dec` (negative) decimal places.
fn round_int(x: i128, dec: i64, truncate: bool) -> Value {
    if dec >= 0 {
        return int_result(x);
    }
    let p = dec.unsigned_abs();
    if p > 38 {
        return Value::Int(0);
    }
    let m = 10i128.pow(p as u32);
    let q = x / m;
    let r = x % m;
    let q = if !truncate && r.abs() * 2 >= m { q + x.signum() } else { q };
    match q.checked_mul(m) {
        Some(v) => int_result(v),
        None => Value::Decimal(BigDecimal::from(q) * BigDecimal::from(m)),
    }
}

fn numeric(name: &str, args: &[Arg], ctx: &mut FnCtx) -> SqlResult<Option<Value>> {
    let n = args.len();
    match name {
        "PI" => {
            count(name, args, 0, 0)?;
            return Ok(Some(Value::Double(std::f64::consts::PI)));
        }
        "RAND" => {
            count(name, args, 0, 1)?;
            return Ok(Some(Value::Double(match args.first() {
                Some(a) => {
                    let seed = a.value.to_i64().unwrap_or(0) as u32;
                    let mut r = Rnd::new(
                        seed.wrapping_mul(0x10001).wrapping_add(55555555),
                        seed.wrapping_mul(0x10000001),
                    );
                    r.next()
                }
                None => random_double(ctx),
            })));
        }
        _ => {}
    }
    let (min, max) = match name {
        "ABS" | "SIGN" | "CEIL" | "CEILING" | "FLOOR" | "SQRT" | "EXP" | "LN" | "LOG2" | "LOG10" | "SIN"
        | "COS" | "TAN" | "ASIN" | "ACOS" | "COT" | "DEGREES" | "RADIANS" => (1, 1),
        "ROUND" | "LOG" | "ATAN" => (1, 2),
        "TRUNCATE" | "MOD" | "POW" | "POWER" | "ATAN2" => (2, 2),
        _ => return Ok(None),
    };
    count(name, args, min, max)?;
    if any_null(args) {
        return Ok(Some(Value::Null));
    }
    let Some(x) = num_of(&args[0].value, ctx) else {
        return Ok(Some(Value::Null));
    };
    let xf = |x: &Num| match x {
        Num::I(i) => *i as f64,
        Num::U(u) => *u as f64,
        Num::D(d) => Value::Decimal(d.clone()).to_f64().unwrap_or(0.0),
        Num::F(f) => *f,
    };
    let f = xf(&x);
    let div0 = |ctx: &mut FnCtx| {
        ctx.warnings.push(Warning::warn(1365, "Division by 0"));
        Ok(Some(Value::Null))
    };
    let v = match name {
        "ABS" => match x {
            Num::I(i) => match i.checked_abs() {
                Some(a) => Value::Int(a),
                None => {
                    return Err(SqlError::value_out_of_range("BIGINT", &format!("abs({i})")));
                }
            },
            Num::U(u) => Value::UInt(u),
            Num::D(d) => Value::Decimal(d.abs()),
            Num::F(f) => Value::Double(f.abs()),
        },
        "SIGN" => Value::Int(match x {
            Num::I(i) => i.signum(),
            Num::U(u) => (u > 0) as i64,
            Num::D(d) => match d.sign() {
                bigdecimal::num_bigint::Sign::Minus => -1,
                bigdecimal::num_bigint::Sign::NoSign => 0,
                bigdecimal::num_bigint::Sign::Plus => 1,
            },
            Num::F(f) => {
                if f > 0.0 {
                    1
                } else if f < 0.0 {
                    -1
                } else {
                    0
                }
            }
        }),
        "CEIL" | "CEILING" | "FLOOR" => {
            let mode = if name == "FLOOR" { RoundingMode::Floor } else { RoundingMode::Ceiling };
            match x {
                Num::I(i) => Value::Int(i),
                Num::U(u) => Value::UInt(u),
                Num::D(d) => {
                    let r = d.with_scale_round(0, mode);
                    match i128::from_str(&r.to_plain_string()) {
                        Ok(v) if i64::try_from(v).is_ok() => Value::Int(v as i64),
                        _ => Value::Decimal(r),
                    }
                }
                Num::F(f) => Value::Double(if name == "FLOOR" { f.floor() } else { f.ceil() }),
            }
        }
        "ROUND" | "TRUNCATE" => {
            let dec = if n == 2 { i64_of(&args[1].value, ctx).unwrap_or(0) } else { 0 };
            let trunc = name == "TRUNCATE";
            match x {
                Num::I(i) => round_int(i as i128, dec, trunc),
                Num::U(u) => round_int(u as i128, dec, trunc),
                Num::D(d) => {
                    let mode = if trunc { RoundingMode::Down } else { RoundingMode::HalfUp };
                    let dec = dec.clamp(-100, 38);
                    let r = d.with_scale_round(dec, mode);
                    Value::Decimal(if dec < 0 { r.with_scale(0) } else { r })
                }
                Num::F(f) => Value::Double(round_double(f, dec, trunc)),
            }
        }
        "MOD" => {
            let Some(y) = num_of(&args[1].value, ctx) else {
                return Ok(Some(Value::Null));
            };
            match (x, y) {
                (a, b) if matches!(a, Num::F(_)) || matches!(b, Num::F(_)) => {
                    let (a, b) = (xf(&a), xf(&b));
                    if b == 0.0 {
                        return div0(ctx);
                    }
                    Value::Double(a % b)
                }
                (a @ (Num::I(_) | Num::U(_)), b @ (Num::I(_) | Num::U(_))) => {
                    let wide = |v: &Num| match v {
                        Num::I(i) => *i as i128,
                        Num::U(u) => *u as i128,
                        _ => 0,
                    };
                    let (p, q) = (wide(&a), wide(&b));
                    if q == 0 {
                        return div0(ctx);
                    }
                    let r = p % q;
                    if matches!(a, Num::U(_)) {
                        Value::UInt(r as u64)
                    } else {
                        Value::Int(r as i64)
                    }
                }
                (a, b) => {
                    let dd = |v: Num| match v {
                        Num::I(i) => BigDecimal::from(i),
                        Num::U(u) => BigDecimal::from(u),
                        Num::D(d) => d,
                        Num::F(f) => BigDecimal::from_str(&format_double(f)).unwrap_or_default(),
                    };
                    let (p, q) = (dd(a), dd(b));
                    if q.sign() == bigdecimal::num_bigint::Sign::NoSign {
                        return div0(ctx);
                    }
                    let scale = p.fractional_digit_count().max(q.fractional_digit_count()).max(0);
                    Value::Decimal((p % q).with_scale(scale))
                }
            }
        }
        "POW" | "POWER" => {
            let y = f64_of(&args[1].value, ctx).unwrap_or(0.0);
            return dbl(name, args, f.powf(y)).map(Some);
        }
        "SQRT" => {
            if f < 0.0 {
                Value::Null
            } else {
                Value::Double(f.sqrt())
            }
        }
        "EXP" => return dbl(name, args, f.exp()).map(Some),
        "LN" | "LOG2" | "LOG10" | "LOG" => {
            let (base, x) = if name == "LOG" && n == 2 {
                (Some(f), f64_of(&args[1].value, ctx).unwrap_or(0.0))
            } else {
                (None, f)
            };
            if x <= 0.0 {
                return div0(ctx);
            }
            match (name, base) {
                ("LOG2", _) => Value::Double(x.log2()),
                ("LOG10", _) => Value::Double(x.log10()),
                (_, Some(b)) => {
                    if b <= 1.0 {
                        return div0(ctx);
                    }
                    Value::Double(x.ln() / b.ln())
                }
                _ => Value::Double(x.ln()),
            }
        }
        "SIN" => Value::Double(f.sin()),
        "COS" => Value::Double(f.cos()),
        "TAN" => return dbl(name, args, f.tan()).map(Some),
        "COT" => {
            let t = f.tan();
            if t == 0.0 {
                return Err(double_range(name, args));
            }
            return dbl(name, args, 1.0 / t).map(Some);
        }
        "ASIN" => return dbl(name, args, f.asin()).map(Some),
        "ACOS" => return dbl(name, args, f.acos()).map(Some),
        "ATAN" | "ATAN2" => {
            if n == 2 {
                let y = f64_of(&args[1].value, ctx).unwrap_or(0.0);
                Value::Double(f.atan2(y))
            } else {
                Value::Double(f.atan())
            }
        }
        "DEGREES" => return dbl(name, args, f.to_degrees()).map(Some),
        "RADIANS" => Value::Double(f.to_radians()),
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// MySQL's `my_rnd`: the generator behind RAND(N), so seeded sequences
/// match MariaDB's.
struct Rnd {
    seed1: u64,
    seed2: u64,
}

impl Rnd {
    const MAX: u64 = 0x3FFF_FFFF;

    fn new(seed1: u32, seed2: u32) -> Rnd {
        Rnd { seed1: seed1 as u64 % Self::MAX, seed2: seed2 as u64 % Self::MAX }
    }

    fn next(&mut self) -> f64 {
        self.seed1 = (self.seed1 * 3 + self.seed2) % Self::MAX;
        self.seed2 = (self.seed1 + self.seed2 + 33) % Self::MAX;
        self.seed1 as f64 / Self::MAX as f64
    }
}

/// RAND(): a per-thread generator seeded from the clock and the connection.
fn random_double(ctx: &FnCtx) -> f64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
            x = t ^ ctx.connection_id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

// ---------------------------------------------------------------------------
// Dates and times

const DATE_NAMES: &[&str] = &[
    "NOW",
    "CURRENT_TIMESTAMP",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "SYSDATE",
    "CURDATE",
    "CURRENT_DATE",
    "CURTIME",
    "CURRENT_TIME",
    "UTC_TIMESTAMP",
    "UTC_DATE",
    "UTC_TIME",
    "UNIX_TIMESTAMP",
    "FROM_UNIXTIME",
    "DATE",
    "TIME",
    "YEAR",
    "MONTH",
    "DAY",
    "DAYOFMONTH",
    "HOUR",
    "MINUTE",
    "SECOND",
    "MICROSECOND",
    "DAYOFWEEK",
    "WEEKDAY",
    "DAYOFYEAR",
    "WEEK",
    "WEEKOFYEAR",
    "YEARWEEK",
    "QUARTER",
    "DAYNAME",
    "MONTHNAME",
    "LAST_DAY",
    "DATEDIFF",
    "TIMEDIFF",
    "TIMESTAMPDIFF",
    "DATE_ADD",
    "ADDDATE",
    "DATE_SUB",
    "SUBDATE",
    "ADDTIME",
    "SUBTIME",
    "DATE_FORMAT",
    "TIME_FORMAT",
    "STR_TO_DATE",
    "MAKEDATE",
    "MAKETIME",
    "SEC_TO_TIME",
    "TIME_TO_SEC",
    "TO_DAYS",
    "FROM_DAYS",
    "TO_SECONDS",
    "PERIOD_ADD",
    "PERIOD_DIFF",
    "EXTRACT",
    "CONVERT_TZ",
    "TIMESTAMP",
];

use crate::temporal::{self as tm, Interval, IntervalUnit, TimeZone};
use crate::value::{Temporal, TemporalKind};

const WEEK_YEAR: u32 = 2;

fn session_tz(ctx: &FnCtx) -> TimeZone {
    tm::parse_tz(ctx.time_zone).unwrap_or(TimeZone::System)
}

fn today(ctx: &FnCtx) -> Temporal {
    let n = tm::now(ctx.now_micros, &session_tz(ctx), 0);
    Temporal::date(n.year, n.month, n.day)
}

fn bad_datetime(v: &Value, what: &str, ctx: &mut FnCtx) {
    ctx.warnings.push(Warning::warn(1292, format!("Incorrect {what} value: '{}'", lossy(&bytes(v)))));
}

/// Reads an argument as a temporal of `kind`, as MariaDB's `get_date` /
/// `get_time` do: temporals convert, strings parse, numbers read as
/// YYYYMMDD[hhmmss] (or [[H]HMM]SS for TIME). A string or number that is
/// not one gives NULL with warning 1292. For `DateTime`, a date-only
/// string or number stays a `Date` (DATE_ADD keeps its kind).
fn to_temporal(v: &Value, kind: TemporalKind, ctx: &mut FnCtx) -> Option<Temporal> {
    let what = if kind == TemporalKind::Time { "time" } else { "datetime" };
    match v {
        Value::Null => None,
        Value::Temporal(t) => {
            let td = today(ctx);
            if t.kind == TemporalKind::Date && kind == TemporalKind::DateTime {
                return Some(*t);
            }
            tm::convert(t, kind, &td)
        }
        Value::Str(s) => {
            let p = if kind == TemporalKind::DateTime {
                tm::parse_datetime(s).map(|mut p| {
                    if p.t.kind == TemporalKind::Time {
                        p.t.kind = TemporalKind::DateTime;
                    }
                    p
                })
            } else {
                tm::parse_ext(s, kind)
            };
            match p {
                Some(p) => {
                    if p.truncated && !p.frac_only {
                        ctx.warnings.push(Warning::warn(
                            1292,
                            format!("Truncated incorrect {what} value: '{}'", lossy(s)),
                        ));
                    }
                    Some(p.t)
                }
                None => {
                    bad_datetime(v, what, ctx);
                    None
                }
            }
        }
        _ => {
            let r = match v {
                Value::Int(i) => tm::from_int(*i as i128, kind),
                Value::UInt(u) => tm::from_int(*u as i128, kind),
                Value::Decimal(d) => tm::from_decimal_str(&d.to_plain_string(), kind),
                Value::Double(d) => tm::from_number(*d, kind),
                _ => None,
            };
            match r {
                Some((mut t, clamped)) => {
                    if clamped {
                        ctx.warnings.push(Warning::warn(
                            1292,
                            format!("Truncated incorrect {what} value: '{}'", v.render()),
                        ));
                    }
                    if kind == TemporalKind::DateTime && t.hour == 0 && t.minute == 0 && t.second == 0 {
                        let n = v.to_f64().unwrap_or(0.0).abs();
                        if n < 100_000_000.0 {
                            t.kind = TemporalKind::Date;
                        }
                    }
                    if kind == TemporalKind::Date {
                        t = Temporal::date(t.year, t.month, t.day);
                    }
                    Some(t)
                }
                None => {
                    bad_datetime(v, what, ctx);
                    None
                }
            }
        }
    }
}

/// [`to_temporal`] without warnings, for comparisons.
fn to_temporal_quiet(v: &Value, kind: TemporalKind) -> Option<Temporal> {
    let mut w = Vec::new();
    let mut ctx = FnCtx {
        now_micros: 0,
        time_zone: "+00:00",
        warnings: &mut w,
        database: None,
        last_insert_id: 0,
        connection_id: 0,
    };
    to_temporal(v, kind, &mut ctx).map(|mut t| {
        if t.kind == TemporalKind::Date && kind == TemporalKind::DateTime {
            t.kind = TemporalKind::DateTime;
        }
        t
    })
}

/// A date argument for functions that need a real calendar date (no zero
/// month or day): NULL with warning 1292 otherwise.
fn real_date(v: &Value, ctx: &mut FnCtx) -> Option<Temporal> {
    let t = to_temporal(v, TemporalKind::DateTime, ctx)?;
    if tm::has_zero_in_date(&t) {
        bad_datetime(v, "datetime", ctx);
        return None;
    }
    Some(t)
}

/// The optional fractional-seconds precision argument of NOW(fsp) etc.
fn fsp_arg(name: &str, args: &[Arg]) -> SqlResult<u8> {
    count(name, args, 0, 1)?;
    match args.first() {
        None => Ok(0),
        Some(a) => {
            let f = a.value.to_i64().unwrap_or(0);
            if !(0..=6).contains(&f) {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!(
                        "Too big precision {f} specified for '{}'. Maximum is 6",
                        name.to_ascii_lowercase()
                    ),
                ));
            }
            Ok(f as u8)
        }
    }
}

fn overflow(ctx: &mut FnCtx) -> Option<Value> {
    ctx.warnings.push(Warning::warn(1441, "Datetime function: datetime field overflow"));
    Some(Value::Null)
}

fn temporal_value(t: Temporal) -> Value {
    Value::Temporal(t)
}

/// Seconds with `fsp` digits as a number: an integer, or a decimal when
/// there is a fraction to show.
fn secs_value(us: i128, fsp: u8) -> Value {
    if fsp == 0 {
        return int_result(us.div_euclid(1_000_000));
    }
    let d = BigDecimal::new(us.into(), 6);
    Value::Decimal(d.with_scale_round(fsp as i64, RoundingMode::Down))
}

/// The fraction digits a string argument shows once read: 6 when it has a
/// fraction (MariaDB's `time_precision` of a constant string).
fn str_fsp(v: &Value, t: &Temporal) -> u8 {
    match v {
        Value::Str(_) => {
            if t.micro != 0 {
                6
            } else {
                0
            }
        }
        _ => t.fsp,
    }
}

/// An INTERVAL's amount in `unit`, as MariaDB's `get_interval_value`:
/// strings of a simple unit read as integers (truncated), numbers round,
/// SECOND keeps a fraction, composite units read their fields from text.
/// A string that is not wholly the number read gives MariaDB's warning
/// 1292 (INTEGER, or DECIMAL for SECOND).
fn interval_of(v: &Value, unit: IntervalUnit, ctx: &mut FnCtx) -> Option<Interval> {
    use IntervalUnit::*;
    let simple = matches!(unit, Microsecond | Second | Minute | Hour | Day | Week | Month | Quarter | Year);
    if !simple {
        return Interval::from_str_unit(&lossy(&bytes(v)), unit);
    }
    if unit == Second {
        if let Value::Decimal(_) | Value::Double(_) | Value::Str(_) = v {
            let d = match v {
                Value::Str(s) => {
                    if !crate::value::is_whole_number(s) {
                        ctx.warnings.push(Warning::warn(
                            1292,
                            format!("Truncated incorrect DECIMAL value: '{}'", lossy(s)),
                        ));
                    }
                    let (_, len) = parse_f64_prefix(s);
                    BigDecimal::from_str(lossy(&s[..len]).trim()).unwrap_or_default()
                }
                other => other.to_decimal()?,
            };
            let neg = d.sign() == bigdecimal::num_bigint::Sign::Minus;
            let us = (d.abs() * BigDecimal::from(1_000_000)).with_scale_round(0, RoundingMode::Down);
            let us = u64::from_str(&us.to_plain_string()).unwrap_or(u64::MAX / 2);
            return Some(Interval::from_seconds(neg, us / 1_000_000, us % 1_000_000));
        }
    }
    let n = match v {
        Value::Str(s) => {
            let t = s.trim_ascii();
            let digits = t.strip_prefix(b"-").or_else(|| t.strip_prefix(b"+")).unwrap_or(t);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                ctx.warnings
                    .push(Warning::warn(1292, format!("Truncated incorrect INTEGER value: '{}'", lossy(s))));
            }
            crate::value::parse_int_prefix(s)
                .map(|i| i.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
                .unwrap_or_else(|| parse_f64_prefix(s).0.trunc() as i64)
        }
        other => other.to_i64()?,
    };
    Some(Interval::from_int(n, unit))
}

fn date_fn(name: &str, args: &[Arg], ctx: &mut FnCtx) -> SqlResult<Option<Value>> {
    if !DATE_NAMES.contains(&name) && name != UNIX_TIMESTAMP_OF_ROWS {
        return Ok(None);
    }
    use TemporalKind::*;
    let tz = session_tz(ctx);
    // Functions of the clock.
    match name {
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" => {
            let f = fsp_arg(name, args)?;
            return Ok(Some(temporal_value(tm::now(ctx.now_micros, &tz, f))));
        }
        // The moment it runs, not the statement's start, and never the
        // session's `SET timestamp` (as MySQL).
        "SYSDATE" => {
            let f = fsp_arg(name, args)?;
            let us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64);
            return Ok(Some(temporal_value(tm::now(us, &tz, f))));
        }
        "UTC_TIMESTAMP" => {
            let f = fsp_arg(name, args)?;
            return Ok(Some(temporal_value(tm::now(ctx.now_micros, &TimeZone::Offset(0), f))));
        }
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" => {
            count(name, args, 0, 0)?;
            let z = if name == "UTC_DATE" { TimeZone::Offset(0) } else { tz };
            let n = tm::now(ctx.now_micros, &z, 0);
            return Ok(Some(temporal_value(Temporal::date(n.year, n.month, n.day))));
        }
        "CURTIME" | "CURRENT_TIME" | "UTC_TIME" => {
            let f = fsp_arg(name, args)?;
            let z = if name == "UTC_TIME" { TimeZone::Offset(0) } else { tz };
            let n = tm::now(ctx.now_micros, &z, f);
            let mut t = tm::zero(Time);
            (t.hour, t.minute, t.second, t.micro, t.fsp) = (n.hour, n.minute, n.second, n.micro, f);
            return Ok(Some(temporal_value(t)));
        }
        "UNIX_TIMESTAMP" | UNIX_TIMESTAMP_OF_ROWS => {
            count(name, args, 0, 1)?;
            // The binder's name for a string argument read from rows,
            // which always shows 6 fraction digits.
            let of_rows = name == UNIX_TIMESTAMP_OF_ROWS;
            let Some(a) = args.first() else {
                return Ok(Some(Value::Int(ctx.now_micros.div_euclid(1_000_000))));
            };
            let Some(t) = to_temporal(&a.value, DateTime, ctx) else {
                return Ok(Some(Value::Null));
            };
            let mut dt = t;
            dt.kind = DateTime;
            let fsp = if of_rows { 6 } else { t.fsp };
            if tm::is_zero_date(&dt) {
                // A zero date: 0, but NULL from a string read from rows
                // (as MariaDB 10.11).
                return Ok(Some(if of_rows { Value::Null } else { Value::Int(0) }));
            }
            let Some(us) = tm::local_to_utc_any(&dt, &tz) else {
                return Ok(Some(Value::Null));
            };
            if !(0..=tm::TIMESTAMP_MAX_SECS as i128 * 1_000_000 + 999_999).contains(&(us as i128)) {
                return Ok(Some(Value::Null));
            }
            return Ok(Some(secs_value(us as i128, fsp)));
        }
        "FROM_UNIXTIME" => {
            count(name, args, 1, 2)?;
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let (us, fsp) = match &args[0].value {
                Value::Int(i) => ((*i as i128) * 1_000_000, 0),
                Value::UInt(u) => ((*u as i128) * 1_000_000, 0),
                v => {
                    let d = match v {
                        Value::Str(s) => {
                            let f = str_f64(s, ctx);
                            BigDecimal::from_str(&format!("{f:.6}")).unwrap_or_default()
                        }
                        Value::Double(f) => BigDecimal::from_str(&format!("{f:.6}")).unwrap_or_default(),
                        other => other.to_decimal().unwrap_or_default(),
                    };
                    let fsp = match v {
                        Value::Decimal(x) => x.fractional_digit_count().clamp(0, 6) as u8,
                        _ => 6,
                    };
                    let us = (d * BigDecimal::from(1_000_000)).with_scale_round(0, RoundingMode::Down);
                    (i128::from_str(&us.to_plain_string()).unwrap_or(-1), fsp)
                }
            };
            if !(0..=tm::TIMESTAMP_MAX_SECS as i128 * 1_000_000 + 999_999).contains(&us) {
                return Ok(Some(Value::Null));
            }
            let t = tm::from_utc_micros(us as i64, &tz, fsp);
            if args.len() == 2 {
                let f = bytes(&args[1].value);
                return Ok(Some(tm::format(&t, &f, false).map(Value::Str).unwrap_or(Value::Null)));
            }
            return Ok(Some(temporal_value(t)));
        }
        "EXTRACT" => {
            count(name, args, 2, 2)?;
            let unit = lossy(&bytes(&args[0].value)).to_ascii_uppercase();
            if args[1].value.is_null() {
                return Ok(Some(Value::Null));
            }
            return Ok(Some(extract(&unit, &args[1].value, ctx).unwrap_or(Value::Null)));
        }
        "TIMESTAMPDIFF" => {
            count(name, args, 3, 3)?;
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let unit = lossy(&bytes(&args[0].value)).to_ascii_uppercase();
            let unit = unit.strip_prefix("SQL_TSI_").unwrap_or(&unit).to_string();
            let (Some(a), Some(b)) =
                (to_temporal(&args[1].value, DateTime, ctx), to_temporal(&args[2].value, DateTime, ctx))
            else {
                return Ok(Some(Value::Null));
            };
            return Ok(Some(timestampdiff(&unit, &a, &b).unwrap_or(Value::Null)));
        }
        "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" => {
            count(name, args, 2, 3)?;
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let unit = if args.len() == 3 {
                let u = lossy(&bytes(&args[2].value));
                match IntervalUnit::by_name(&u) {
                    Some(u) => u,
                    None => return Err(SqlError::syntax(format!("'{u}'"))),
                }
            } else {
                IntervalUnit::Day
            };
            let t = match &args[0].value {
                Value::Temporal(t) if t.kind == Time => Some(*t),
                v => to_temporal(v, DateTime, ctx),
            };
            let Some(t) = t else {
                return Ok(Some(Value::Null));
            };
            let Some(mut iv) = interval_of(&args[1].value, unit, ctx) else {
                return Ok(Some(Value::Null));
            };
            if name == "DATE_SUB" || name == "SUBDATE" {
                iv.neg = !iv.neg;
            }
            if t.kind != Time && tm::has_zero_in_date(&t) {
                let shown = Value::Temporal(t);
                bad_datetime(&shown, "datetime", ctx);
                return Ok(Some(Value::Null));
            }
            return Ok(match tm::add_interval(&t, &iv, unit) {
                Some(mut r) => {
                    // MariaDB's fractional digits of a DATETIME or TIME
                    // result come from the types, not the values: the
                    // microsecond units give 6, SECOND the more of the
                    // date's and the amount's (a string or double: 6).
                    if r.kind != Date {
                        use IntervalUnit::*;
                        let amount = match &args[1].value {
                            Value::Str(_) | Value::Double(_) => 6,
                            Value::Decimal(d) => d.fractional_digit_count().clamp(0, 6) as u8,
                            _ => 0,
                        };
                        r.fsp = match unit {
                            Microsecond | SecondMicrosecond | MinuteMicrosecond | HourMicrosecond
                            | DayMicrosecond => 6,
                            Second => t.fsp.max(amount),
                            _ => t.fsp,
                        };
                    }
                    Some(temporal_value(r))
                }
                None => overflow(ctx),
            });
        }
        "CONVERT_TZ" => {
            count(name, args, 3, 3)?;
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let from = tm::parse_tz(&lossy(&bytes(&args[1].value)));
            let to = tm::parse_tz(&lossy(&bytes(&args[2].value)));
            let (Some(from), Some(to)) = (from, to) else {
                return Ok(Some(Value::Null));
            };
            let Some(mut t) = to_temporal(&args[0].value, DateTime, ctx) else {
                return Ok(Some(Value::Null));
            };
            t.kind = DateTime;
            return Ok(Some(tm::convert_tz(&t, &from, &to).map(temporal_value).unwrap_or(Value::Null)));
        }
        "STR_TO_DATE" => {
            count(name, args, 2, 2)?;
            if any_null(args) {
                return Ok(Some(Value::Null));
            }
            let (s, f) = (bytes(&args[0].value), bytes(&args[1].value));
            return Ok(Some(match tm::str_to_date(&s, &f) {
                Some((t, trailing)) => {
                    if trailing {
                        ctx.warnings.push(Warning::warn(
                            1292,
                            format!("Truncated incorrect datetime value: '{}'", lossy(&s)),
                        ));
                    }
                    temporal_value(t)
                }
                None => {
                    ctx.warnings.push(Warning::warn(
                        1411,
                        format!("Incorrect datetime value: '{}' for function str_to_date", lossy(&s)),
                    ));
                    Value::Null
                }
            }));
        }
        _ => {}
    }
    let (min, max) = match name {
        "WEEK" | "YEARWEEK" | "TIMESTAMP" => (1, 2),
        "DATEDIFF" | "TIMEDIFF" | "ADDTIME" | "SUBTIME" | "DATE_FORMAT" | "TIME_FORMAT" | "MAKEDATE"
        | "PERIOD_ADD" | "PERIOD_DIFF" => (2, 2),
        "MAKETIME" => (3, 3),
        _ => (1, 1),
    };
    count(name, args, min, max)?;
    if any_null(args) {
        return Ok(Some(Value::Null));
    }
    let a0 = &args[0].value;
    let none = Ok(Some(Value::Null));
    Ok(Some(match name {
        "DATE" => match to_temporal(a0, DateTime, ctx) {
            Some(t) => temporal_value(Temporal::date(t.year, t.month, t.day)),
            None => Value::Null,
        },
        "TIME" => match to_temporal(a0, Time, ctx) {
            Some(t) => temporal_value(t),
            None => Value::Null,
        },
        "TIMESTAMP" => {
            let Some(mut t) = to_temporal(a0, DateTime, ctx) else { return none };
            t.kind = DateTime;
            if args.len() == 2 {
                let Some(add) = to_temporal(&args[1].value, Time, ctx) else { return none };
                let us = tm::datetime_to_micros(&t).unwrap_or(0) as i128 + tm::time_to_micros(&add) as i128;
                let fsp = t.fsp.max(add.fsp);
                match i64::try_from(us).ok().and_then(tm::micros_to_datetime) {
                    Some(mut r) => {
                        r = tm::round_fsp(&r, fsp);
                        temporal_value(r)
                    }
                    None => return Ok(overflow(ctx)),
                }
            } else {
                temporal_value(t)
            }
        }
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "QUARTER" => {
            let Some(t) = to_temporal(a0, DateTime, ctx) else { return none };
            Value::Int(match name {
                "YEAR" => t.year as i64,
                "MONTH" => t.month as i64,
                "QUARTER" => (t.month as i64 + 2) / 3,
                _ => t.day as i64,
            })
        }
        "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND" => {
            let Some(t) = to_temporal(a0, Time, ctx) else { return none };
            Value::Int(match name {
                "HOUR" => t.hour as i64,
                "MINUTE" => t.minute as i64,
                "SECOND" => t.second as i64,
                _ => t.micro as i64,
            })
        }
        "DAYOFWEEK" | "WEEKDAY" | "DAYOFYEAR" | "DAYNAME" | "WEEKOFYEAR" | "TO_DAYS" | "TO_SECONDS" => {
            let Some(t) = real_date(a0, ctx) else { return none };
            let wd = tm::weekday(&t);
            match name {
                "DAYOFWEEK" => Value::Int(((wd + 1) % 7 + 1) as i64),
                "WEEKDAY" => Value::Int(wd as i64),
                "DAYOFYEAR" => Value::Int(tm::day_of_year(&t)),
                "DAYNAME" => Value::str(tm::day_name(wd)),
                "WEEKOFYEAR" => Value::Int(tm::calc_week(&t, tm::week_mode(3)).0 as i64),
                "TO_DAYS" => Value::Int(tm::daynr(t.year as i64, t.month as i64, t.day as i64)),
                _ => {
                    let d = tm::daynr(t.year as i64, t.month as i64, t.day as i64) as i128;
                    let secs = d * 86_400 + (tm::time_to_micros(&t) / 1_000_000) as i128;
                    int_result(secs)
                }
            }
        }
        "WEEK" | "YEARWEEK" => {
            let Some(t) = real_date(a0, ctx) else { return none };
            let mode = if args.len() == 2 { args[1].value.to_i64().unwrap_or(0) as u32 } else { 0 };
            if name == "WEEK" {
                Value::Int(tm::calc_week(&t, tm::week_mode(mode)).0 as i64)
            } else {
                let (w, y) = tm::calc_week(&t, tm::week_mode(mode) | WEEK_YEAR);
                Value::Int(y * 100 + w as i64)
            }
        }
        "MONTHNAME" => {
            let Some(t) = to_temporal(a0, DateTime, ctx) else { return none };
            match tm::month_name(t.month) {
                Some(m) => Value::str(m),
                None => Value::Null,
            }
        }
        "LAST_DAY" => {
            let Some(t) = to_temporal(a0, DateTime, ctx) else { return none };
            if t.month == 0 || (t.year == 0 && t.day == 0) {
                return none;
            }
            temporal_value(Temporal::date(
                t.year,
                t.month,
                tm::days_in_month(t.year as i64, t.month as u32) as u8,
            ))
        }
        "DATEDIFF" => {
            let a = to_temporal(a0, DateTime, ctx);
            let b = to_temporal(&args[1].value, DateTime, ctx);
            let (Some(a), Some(b)) = (a, b) else { return none };
            if tm::has_zero_in_date(&a) || tm::has_zero_in_date(&b) {
                return none;
            }
            let d = |t: &Temporal| tm::daynr(t.year as i64, t.month as i64, t.day as i64);
            Value::Int(d(&a) - d(&b))
        }
        "TIMEDIFF" => {
            let (Some(a), Some(b)) = (time_or_datetime(a0, ctx), time_or_datetime(&args[1].value, ctx))
            else {
                return none;
            };
            if (a.kind == Time) != (b.kind == Time) {
                return none;
            }
            let us = |t: &Temporal| {
                if t.kind == Time {
                    tm::time_to_micros(t) as i128
                } else {
                    tm::datetime_to_micros(t).unwrap_or(0) as i128
                }
            };
            let diff = us(&a) - us(&b);
            let fsp = a.fsp.max(b.fsp);
            time_result(diff, fsp, ctx)
        }
        "ADDTIME" | "SUBTIME" => {
            let Some(a) = time_or_datetime(a0, ctx) else { return none };
            let Some(b) = to_temporal(&args[1].value, Time, ctx) else { return none };
            if b.kind != Time {
                return none;
            }
            let fsp = str_fsp(a0, &a).max(str_fsp(&args[1].value, &b));
            let mut add = tm::time_to_micros(&b) as i128;
            if name == "SUBTIME" {
                add = -add;
            }
            if a.kind == Time {
                time_result(tm::time_to_micros(&a) as i128 + add, fsp, ctx)
            } else {
                let us = tm::datetime_to_micros(&a).unwrap_or(0) as i128 + add;
                match i64::try_from(us).ok().and_then(tm::micros_to_datetime) {
                    Some(r) => temporal_value(tm::round_fsp(&r, fsp)),
                    None => return none,
                }
            }
        }
        "DATE_FORMAT" | "TIME_FORMAT" => {
            let time_only = name == "TIME_FORMAT";
            let t = if time_only { to_temporal(a0, Time, ctx) } else { to_temporal(a0, DateTime, ctx) };
            let Some(t) = t else { return none };
            let f = bytes(&args[1].value);
            match tm::format(&t, &f, time_only) {
                Some(b) => Value::Str(b),
                None => Value::Null,
            }
        }
        "MAKEDATE" => {
            let y = i64_of(a0, ctx).unwrap_or(0);
            let doy = i64_of(&args[1].value, ctx).unwrap_or(0);
            if doy <= 0 || !(0..=9999).contains(&y) {
                return none;
            }
            let y = if y < 70 {
                y + 2000
            } else if y < 100 {
                y + 1900
            } else {
                y
            };
            let d = tm::daynr(y, 1, 1).saturating_add(doy - 1);
            if !(366..=tm::MAX_DAY_NUMBER).contains(&d) {
                return none;
            }
            let (y, m, dd) = tm::from_daynr(d);
            temporal_value(Temporal::date(y, m, dd))
        }
        "MAKETIME" => {
            let h = i64_of(a0, ctx).unwrap_or(0);
            let m = i64_of(&args[1].value, ctx).unwrap_or(0);
            let s = args[2].value.to_decimal().unwrap_or_default();
            let sf = Value::Decimal(s.clone()).to_f64().unwrap_or(0.0);
            if !(0..=59).contains(&m) || !(0.0..60.0).contains(&sf) {
                return none;
            }
            let fsp = match &args[2].value {
                Value::Decimal(d) => d.fractional_digit_count().clamp(0, 6) as u8,
                Value::Double(_) | Value::Str(_) => 6,
                _ => 0,
            };
            let us = (s * BigDecimal::from(1_000_000)).with_scale_round(0, RoundingMode::Down);
            let sus = i128::from_str(&us.to_plain_string()).unwrap_or(0);
            let total = (h.unsigned_abs() as i128 * 3600 + m as i128 * 60) * 1_000_000 + sus;
            let total = if h < 0 { -total } else { total };
            time_result(total, fsp, ctx)
        }
        "SEC_TO_TIME" => {
            let (us, fsp) = match a0 {
                Value::Int(i) => (*i as i128 * 1_000_000, 0),
                Value::UInt(u) => (*u as i128 * 1_000_000, 0),
                v => {
                    let d = match v {
                        Value::Str(s) => {
                            BigDecimal::from_str(&format!("{:.6}", str_f64(s, ctx))).unwrap_or_default()
                        }
                        Value::Double(f) => BigDecimal::from_str(&format!("{f:.6}")).unwrap_or_default(),
                        o => o.to_decimal().unwrap_or_default(),
                    };
                    let fsp = match v {
                        Value::Decimal(x) => x.fractional_digit_count().clamp(0, 6) as u8,
                        _ => 6,
                    };
                    let us = (d * BigDecimal::from(1_000_000)).with_scale_round(0, RoundingMode::Down);
                    (i128::from_str(&us.to_plain_string()).unwrap_or(i128::MAX / 2), fsp)
                }
            };
            let (r, clamped) = tm::time_from_micros(us.clamp(i64::MIN as i128, i64::MAX as i128) as i64, fsp);
            if clamped {
                ctx.warnings
                    .push(Warning::warn(1292, format!("Truncated incorrect time value: '{}'", a0.render())));
            }
            temporal_value(tm::round_fsp(&r, fsp))
        }
        "TIME_TO_SEC" => {
            let Some(t) = to_temporal(a0, Time, ctx) else { return none };
            let us = tm::time_to_micros(&t) as i128;
            if t.micro == 0 {
                int_result(us / 1_000_000)
            } else {
                let d = BigDecimal::new(us.into(), 6);
                Value::Decimal(d.with_scale_round(t.fsp.max(1) as i64, RoundingMode::Down))
            }
        }
        "FROM_DAYS" => {
            let d = i64_of(a0, ctx).unwrap_or(0);
            let (y, m, dd) = tm::from_daynr(d);
            temporal_value(Temporal::date(y, m, dd))
        }
        "PERIOD_ADD" | "PERIOD_DIFF" => {
            let p = i64_of(a0, ctx).unwrap_or(0);
            let q = i64_of(&args[1].value, ctx).unwrap_or(0);
            if name == "PERIOD_ADD" {
                if p == 0 {
                    return Ok(Some(Value::Int(0)));
                }
                let m = period_months(p) + q as i128;
                int_result(m.div_euclid(12) * 100 + m.rem_euclid(12) + 1)
            } else {
                int_result(period_months(p) - period_months(q))
            }
        }
        _ => return Ok(None),
    }))
}

/// A YYMM / YYYYMM period as months since year 0 (MySQL's `convert_period_to_month`).
fn period_months(p: i64) -> i128 {
    if p == 0 {
        return 0;
    }
    let p = p as i128;
    let mut y = p / 100;
    if y < 70 {
        y += 2000;
    } else if y < 100 {
        y += 1900;
    }
    y * 12 + p % 100 - 1
}

/// A TIME result from signed microseconds, clamped to ±838:59:59 with
/// warning 1292.
fn time_result(us: i128, fsp: u8, ctx: &mut FnCtx) -> Value {
    let c = us.clamp(i64::MIN as i128 / 2, i64::MAX as i128 / 2) as i64;
    let (t, clamped) = tm::time_from_micros(c, fsp);
    if clamped {
        let (shown, _) = tm::time_from_micros(c.clamp(-(i64::MAX / 4), i64::MAX / 4), fsp);
        let mut s = shown;
        s.hour = (c.unsigned_abs() / 3_600_000_000) as u32;
        ctx.warnings.push(Warning::warn(1292, format!("Truncated incorrect time value: '{}'", s.render())));
    }
    Value::Temporal(tm::round_fsp(&t, fsp))
}

/// A TIMEDIFF / ADDTIME argument: a datetime if it reads as one, a time
/// otherwise.
fn time_or_datetime(v: &Value, ctx: &mut FnCtx) -> Option<Temporal> {
    match v {
        Value::Temporal(t) => {
            let mut t = *t;
            if t.kind == TemporalKind::Date {
                t.kind = TemporalKind::DateTime;
            }
            Some(t)
        }
        Value::Str(s) => {
            if let Some(p) = tm::parse_datetime(s) {
                if p.t.kind != TemporalKind::Time && s.iter().any(|c| *c == b'-' || *c == b'/') {
                    let mut t = p.t;
                    t.kind = TemporalKind::DateTime;
                    return Some(t);
                }
            }
            to_temporal(v, TemporalKind::Time, ctx)
        }
        _ => to_temporal(v, TemporalKind::Time, ctx),
    }
}

fn timestampdiff(unit: &str, a: &Temporal, b: &Temporal) -> Option<Value> {
    let us = |t: &Temporal| tm::datetime_to_micros(t).map(|x| x as i128);
    let diff = us(b)? - us(a)?;
    let div: i128 = match unit {
        "MICROSECOND" => 1,
        "SECOND" => 1_000_000,
        "MINUTE" => 60_000_000,
        "HOUR" => 3_600_000_000,
        "DAY" => 86_400_000_000,
        "WEEK" => 7 * 86_400_000_000,
        "MONTH" | "QUARTER" | "YEAR" => {
            let (early, late, neg) = if diff >= 0 { (a, b, false) } else { (b, a, true) };
            let mut months =
                (late.year as i64 * 12 + late.month as i64) - (early.year as i64 * 12 + early.month as i64);
            let key = |t: &Temporal| (t.day, tm::time_to_micros(t));
            if key(late) < key(early) {
                months -= 1;
            }
            let m = match unit {
                "MONTH" => months,
                "QUARTER" => months / 3,
                _ => months / 12,
            };
            return Some(Value::Int(if neg { -m } else { m }));
        }
        _ => return None,
    };
    Some(int_result(diff / div))
}

/// EXTRACT(unit FROM v).
fn extract(unit: &str, v: &Value, ctx: &mut FnCtx) -> Option<Value> {
    // Units of the calendar read a datetime; the others (DAY and its
    // compounds too) read a TIME when the text is one, as MariaDB does
    // ('-30:11:12' is -1 day 6 hours); a number is a datetime for those.
    let day_unit = unit.starts_with("DAY");
    let date_unit = matches!(unit, "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "YEAR_MONTH")
        || (day_unit && !matches!(v, Value::Str(_) | Value::Temporal(_)));
    let t = if date_unit { to_temporal(v, TemporalKind::DateTime, ctx)? } else { time_or_datetime(v, ctx)? };
    let sign: i64 = if t.kind == TemporalKind::Time && t.neg { -1 } else { 1 };
    let (d, h, mi, s, us) = (t.day as i64, t.hour as i64, t.minute as i64, t.second as i64, t.micro as i64);
    // A TIME's days are in its hours (HOUR of '30:11:12' is 6).
    let (d, h) = if t.kind == TemporalKind::Time { (h / 24, h % 24) } else { (d, h) };
    let r = match unit {
        "YEAR" => t.year as i64,
        "QUARTER" => (t.month as i64 + 2) / 3,
        "MONTH" => t.month as i64,
        "WEEK" => tm::calc_week(&t, tm::week_mode(0)).0 as i64,
        "DAY" => d,
        "HOUR" => h,
        "MINUTE" => mi,
        "SECOND" => s,
        "MICROSECOND" => us,
        "YEAR_MONTH" => t.year as i64 * 100 + t.month as i64,
        "DAY_HOUR" => d * 100 + h,
        "DAY_MINUTE" => (d * 100 + h) * 100 + mi,
        "DAY_SECOND" => ((d * 100 + h) * 100 + mi) * 100 + s,
        "DAY_MICROSECOND" => (((d * 100 + h) * 100 + mi) * 100 + s) * 1_000_000 + us,
        "HOUR_MINUTE" => h * 100 + mi,
        "HOUR_SECOND" => (h * 100 + mi) * 100 + s,
        "HOUR_MICROSECOND" => ((h * 100 + mi) * 100 + s) * 1_000_000 + us,
        "MINUTE_SECOND" => mi * 100 + s,
        "MINUTE_MICROSECOND" => (mi * 100 + s) * 1_000_000 + us,
        "SECOND_MICROSECOND" => s * 1_000_000 + us,
        _ => return None,
    };
    Some(Value::Int(r * sign))
}

// ---------------------------------------------------------------------------
// JSON

const JSON_NAMES: &[&str] = &[
    "JSON_VALID",
    "JSON_EXTRACT",
    "JSON_UNQUOTE",
    "JSON_OBJECT",
    "JSON_ARRAY",
    "JSON_CONTAINS",
    "JSON_LENGTH",
    "JSON_TYPE",
    "JSON_KEYS",
    "JSON_SET",
    "JSON_INSERT",
    "JSON_REPLACE",
    "JSON_REMOVE",
    "JSON_QUOTE",
    "JSON_DEPTH",
];

/// A JSON document as MariaDB keeps it: object members in the order
/// written (duplicates included), numbers and strings as their source
/// text (a string without its quotes, escapes as written), so extracted
/// values print exactly as MariaDB prints them.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// Why a document did not parse: MariaDB's warning number and text.
struct JErr {
    end: bool,
    pos: usize,
}

struct JParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl JParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err(&self) -> JErr {
        JErr { end: self.i >= self.s.len(), pos: self.i }
    }

    fn value(&mut self) -> Result<J, JErr> {
        self.ws();
        let Some(&c) = self.s.get(self.i) else { return Err(self.err()) };
        match c {
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > 32 {
                    return Err(self.err());
                }
                self.i += 1;
                let r = if c == b'{' { self.object() } else { self.array() };
                self.depth -= 1;
                r
            }
            b'"' => Ok(J::Str(self.string()?)),
            b't' => self.word("true", J::Bool(true)),
            b'f' => self.word("false", J::Bool(false)),
            b'n' => self.word("null", J::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err()),
        }
    }

    fn word(&mut self, w: &str, v: J) -> Result<J, JErr> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(self.err())
        }
    }

    fn number(&mut self) -> Result<J, JErr> {
        let st = self.i;
        if self.s[self.i] == b'-' {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let d = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i > d
        };
        if !digits(self) {
            return Err(self.err());
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(self.err());
            }
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(self.err());
            }
        }
        Ok(J::Num(lossy(&self.s[st..self.i])))
    }

    /// A string's source text between its quotes (escapes checked, kept).
    fn string(&mut self) -> Result<String, JErr> {
        self.i += 1;
        let st = self.i;
        loop {
            let Some(&c) = self.s.get(self.i) else { return Err(self.err()) };
            match c {
                b'"' => {
                    let t = lossy(&self.s[st..self.i]);
                    self.i += 1;
                    return Ok(t);
                }
                b'\\' => {
                    let Some(&e) = self.s.get(self.i + 1) else {
                        self.i += 1;
                        return Err(self.err());
                    };
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let h = self.s.get(self.i + 2..self.i + 6).unwrap_or(b"");
                            if h.len() != 4 || !h.iter().all(|x| x.is_ascii_hexdigit()) {
                                return Err(self.err());
                            }
                            self.i += 6;
                        }
                        _ => return Err(self.err()),
                    }
                }
                c if c < 0x20 => return Err(self.err()),
                _ => self.i += 1,
            }
        }
    }

    fn array(&mut self) -> Result<J, JErr> {
        let mut v = Vec::new();
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(J::Arr(v));
        }
        loop {
            v.push(self.value()?);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(J::Arr(v));
                }
                _ => return Err(self.err()),
            }
        }
    }

    fn object(&mut self) -> Result<J, JErr> {
        let mut v = Vec::new();
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(J::Obj(v));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err());
            }
            let k = self.string()?;
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.err());
            }
            self.i += 1;
            v.push((k, self.value()?));
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(J::Obj(v));
                }
                _ => return Err(self.err()),
            }
        }
    }
}

fn parse_json(s: &[u8]) -> Result<J, JErr> {
    let mut p = JParser { s, i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.i < s.len() {
        return Err(p.err());
    }
    Ok(v)
}

impl J {
    /// MariaDB's printing: `[1, 2]`, `{"a": 1}`.
    fn write(&self, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(n) => out.push_str(n),
            J::Str(s) => {
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
            J::Arr(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write(out);
                }
                out.push(']');
            }
            J::Obj(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push('"');
                    out.push_str(k);
                    out.push_str("\": ");
                    x.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn type_name(&self) -> &'static str {
        match self {
            J::Null => "NULL",
            J::Bool(_) => "BOOLEAN",
            J::Num(n) => {
                if n.contains(['.', 'e', 'E']) {
                    "DOUBLE"
                } else {
                    "INTEGER"
                }
            }
            J::Str(_) => "STRING",
            J::Arr(_) => "ARRAY",
            J::Obj(_) => "OBJECT",
        }
    }
}

/// Escapes text for a JSON string (the inside of the quotes).
fn json_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04X}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// Decodes a JSON string's source text (JSON_UNQUOTE).
fn json_unescape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            o.push(c);
            continue;
        }
        match it.next() {
            Some('n') => o.push('\n'),
            Some('r') => o.push('\r'),
            Some('t') => o.push('\t'),
            Some('b') => o.push('\u{8}'),
            Some('f') => o.push('\u{c}'),
            Some('u') => {
                let h: String = it.by_ref().take(4).collect();
                let mut cp = u32::from_str_radix(&h, 16).unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&cp) {
                    let mut look = it.clone();
                    if look.next() == Some('\\') && look.next() == Some('u') {
                        let l: String = look.by_ref().take(4).collect();
                        if let Ok(lo) = u32::from_str_radix(&l, 16) {
                            if (0xDC00..0xE000).contains(&lo) {
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                it = look;
                            }
                        }
                    }
                }
                o.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
            }
            Some(x) => o.push(x),
            None => o.push('\\'),
        }
    }
    o
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq)]
enum Leg {
    Key(String),
    AnyKey,
    /// An array index; `from_end` for `last` / `last-N`.
    Index {
        n: usize,
        from_end: bool,
    },
    AnyIndex,
    /// `**`: any depth.
    Deep,
}

/// Parses `$.a[1].b`, `$.*`, `$**.b`, `$[last]`, `$."a b"`; the error is
/// the 1-based position MariaDB reports.
fn parse_path(p: &[u8]) -> Result<Vec<Leg>, usize> {
    let mut i = 0;
    while i < p.len() && p[i].is_ascii_whitespace() {
        i += 1;
    }
    if p.get(i) != Some(&b'$') {
        return Err(i + 1);
    }
    i += 1;
    let mut legs = Vec::new();
    loop {
        while i < p.len() && p[i].is_ascii_whitespace() {
            i += 1;
        }
        let Some(&c) = p.get(i) else { break };
        match c {
            b'.' => {
                i += 1;
                match p.get(i) {
                    Some(b'*') => {
                        legs.push(Leg::AnyKey);
                        i += 1;
                    }
                    Some(b'"') => {
                        let st = i + 1;
                        let mut j = st;
                        while j < p.len() && p[j] != b'"' {
                            if p[j] == b'\\' {
                                j += 1;
                            }
                            j += 1;
                        }
                        if j >= p.len() {
                            return Err(j + 1);
                        }
                        legs.push(Leg::Key(lossy(&p[st..j])));
                        i = j + 1;
                    }
                    _ => {
                        let st = i;
                        while i < p.len() && (p[i].is_ascii_alphanumeric() || p[i] == b'_' || p[i] >= 0x80) {
                            i += 1;
                        }
                        if i == st {
                            return Err(i + 1);
                        }
                        legs.push(Leg::Key(lossy(&p[st..i])));
                    }
                }
            }
            b'[' => {
                i += 1;
                while i < p.len() && p[i] == b' ' {
                    i += 1;
                }
                if p.get(i) == Some(&b'*') {
                    legs.push(Leg::AnyIndex);
                    i += 1;
                } else if p[i..].starts_with(b"last") {
                    i += 4;
                    while i < p.len() && p[i] == b' ' {
                        i += 1;
                    }
                    let mut n = 0usize;
                    if p.get(i) == Some(&b'-') {
                        i += 1;
                        while i < p.len() && p[i] == b' ' {
                            i += 1;
                        }
                        let st = i;
                        while i < p.len() && p[i].is_ascii_digit() {
                            n = n.saturating_mul(10).saturating_add((p[i] - b'0') as usize);
                            i += 1;
                        }
                        if i == st {
                            return Err(i + 1);
                        }
                    }
                    legs.push(Leg::Index { n, from_end: true });
                } else {
                    let st = i;
                    let mut n = 0usize;
                    while i < p.len() && p[i].is_ascii_digit() {
                        n = n.saturating_mul(10).saturating_add((p[i] - b'0') as usize);
                        i += 1;
                    }
                    if i == st {
                        return Err(i + 1);
                    }
                    legs.push(Leg::Index { n, from_end: false });
                }
                while i < p.len() && p[i] == b' ' {
                    i += 1;
                }
                if p.get(i) != Some(&b']') {
                    return Err(i + 1);
                }
                i += 1;
            }
            b'*' if p.get(i + 1) == Some(&b'*') => {
                legs.push(Leg::Deep);
                i += 2;
            }
            _ => return Err(i + 1),
        }
    }
    if legs.last() == Some(&Leg::Deep) {
        return Err(p.len() + 1);
    }
    Ok(legs)
}

fn has_wildcard(legs: &[Leg]) -> bool {
    legs.iter().any(|l| matches!(l, Leg::AnyKey | Leg::AnyIndex | Leg::Deep))
}

fn index_of(n: usize, from_end: bool, len: usize) -> Option<usize> {
    if from_end {
        len.checked_sub(1)?.checked_sub(n)
    } else if n < len {
        Some(n)
    } else {
        None
    }
}

/// Every value `legs` reaches from `v`, in document order.
fn select<'a>(v: &'a J, legs: &[Leg], out: &mut Vec<&'a J>) {
    let Some((leg, rest)) = legs.split_first() else {
        out.push(v);
        return;
    };
    match (leg, v) {
        (Leg::Key(k), J::Obj(m)) => {
            if let Some((_, x)) = m.iter().find(|(kk, _)| kk == k) {
                select(x, rest, out);
            }
        }
        (Leg::AnyKey, J::Obj(m)) => m.iter().for_each(|(_, x)| select(x, rest, out)),
        (Leg::Index { n, from_end }, J::Arr(a)) => {
            if let Some(i) = index_of(*n, *from_end, a.len()) {
                select(&a[i], rest, out);
            }
        }
        // MariaDB reads a scalar as an array of one for [0] / [last].
        (Leg::Index { n: 0, .. }, x) if !matches!(x, J::Arr(_)) => select(x, rest, out),
        (Leg::AnyIndex, J::Arr(a)) => a.iter().for_each(|x| select(x, rest, out)),
        (Leg::Deep, x) => {
            select(x, rest, out);
            match x {
                J::Arr(a) => a.iter().for_each(|y| select(y, legs, out)),
                J::Obj(m) => m.iter().for_each(|(_, y)| select(y, legs, out)),
                _ => {}
            }
        }
        _ => {}
    }
}

/// The value at a path without wildcards, for changing it.
/// The first value `legs` selects in `v`.
fn first_match(v: &J, legs: &[Leg]) -> Option<J> {
    let mut f = Vec::new();
    select(v, legs, &mut f);
    f.first().map(|x| (*x).clone())
}

fn select_mut<'a>(v: &'a mut J, legs: &[Leg]) -> Option<&'a mut J> {
    let Some((leg, rest)) = legs.split_first() else { return Some(v) };
    match (leg, v) {
        (Leg::Key(k), J::Obj(m)) => {
            let x = m.iter_mut().find(|(kk, _)| kk == k)?;
            select_mut(&mut x.1, rest)
        }
        (Leg::Index { n, from_end }, J::Arr(a)) => {
            let i = index_of(*n, *from_end, a.len())?;
            select_mut(&mut a[i], rest)
        }
        (Leg::Index { n: 0, .. }, x) if !matches!(x, J::Arr(_)) => select_mut(x, rest),
        _ => None,
    }
}

/// An SQL value as a JSON value: JSON text from another JSON function or
/// a JSON column (a `utf8mb4_bin` string that parses) stays JSON, other
/// strings and temporals become JSON strings, numbers numbers.
fn to_json(a: &Arg) -> J {
    match &a.value {
        Value::Null => J::Null,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => J::Num(a.value.render()),
        Value::Double(d) => J::Num(format_double(*d)),
        Value::Str(s) => {
            if a.coll == Some(Collation::Utf8mb4Bin) {
                if let Ok(j) = parse_json(s) {
                    return j;
                }
            }
            J::Str(json_escape(&lossy(s)))
        }
        Value::Temporal(t) => J::Str(t.render()),
    }
}

fn json_warn(ctx: &mut FnCtx, e: &JErr, argno: usize, name: &str) {
    let f = name.to_ascii_lowercase();
    let w = if e.end {
        Warning::warn(4037, format!("Unexpected end of JSON text in argument {argno} to function '{f}'"))
    } else {
        Warning::warn(
            4038,
            format!(
                "Syntax error in JSON text in argument {argno} to function '{f}' at position {}",
                e.pos + 1
            ),
        )
    };
    ctx.warnings.push(w);
}

fn path_warn(ctx: &mut FnCtx, pos: usize, argno: usize, name: &str) {
    ctx.warnings.push(Warning::warn(
        4042,
        format!(
            "Syntax error in JSON path in argument {argno} to function '{}' at position {pos}",
            name.to_ascii_lowercase()
        ),
    ));
}

/// MySQL's JSON_CONTAINS rule: scalars by equality, arrays when every
/// candidate element is in the target, objects key by key.
fn json_contains(t: &J, c: &J) -> bool {
    match (t, c) {
        (J::Arr(ta), J::Arr(ca)) => ca.iter().all(|x| ta.iter().any(|y| json_contains(y, x))),
        (J::Arr(ta), x) => ta.iter().any(|y| json_contains(y, x)),
        (J::Obj(tm), J::Obj(cm)) => {
            cm.iter().all(|(k, cv)| tm.iter().any(|(tk, tv)| tk == k && json_contains(tv, cv)))
        }
        (J::Num(a), J::Num(b)) => a == b || a.parse::<f64>().ok() == b.parse::<f64>().ok(),
        (a, b) => a == b,
    }
}

fn json_depth(v: &J) -> i64 {
    match v {
        J::Arr(a) if !a.is_empty() => 1 + a.iter().map(json_depth).max().unwrap_or(0),
        J::Obj(m) if !m.is_empty() => 1 + m.iter().map(|(_, x)| json_depth(x)).max().unwrap_or(0),
        _ => 1,
    }
}

// The path arguments are read by position (their numbers go into warnings).
#[allow(clippy::needless_range_loop)]
fn json_fn(name: &str, args: &[Arg], ctx: &mut FnCtx) -> SqlResult<Option<Value>> {
    if !JSON_NAMES.contains(&name) {
        return Ok(None);
    }
    let n = args.len();
    let jstr = |j: &J| Value::str(j.text());
    // Documents in argument `i` (1-based in warnings).
    macro_rules! doc {
        ($i:expr) => {{
            let Some(b) = args[$i].value.to_bytes() else { return Ok(Some(Value::Null)) };
            match parse_json(&b) {
                Ok(j) => j,
                Err(e) => {
                    json_warn(ctx, &e, $i + 1, name);
                    return Ok(Some(Value::Null));
                }
            }
        }};
    }
    macro_rules! path {
        ($i:expr) => {{
            let Some(b) = args[$i].value.to_bytes() else { return Ok(Some(Value::Null)) };
            match parse_path(&b) {
                Ok(p) => p,
                Err(pos) => {
                    path_warn(ctx, pos, $i + 1, name);
                    return Ok(Some(Value::Null));
                }
            }
        }};
    }
    Ok(Some(match name {
        "JSON_OBJECT" => {
            if n % 2 == 1 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let mut m = Vec::new();
            for pair in args.chunks(2) {
                let Some(k) = pair[0].value.to_bytes() else {
                    return Err(SqlError::new(
                        4076,
                        "HY000",
                        "JSON documents may not contain NULL member names",
                    ));
                };
                m.push((json_escape(&lossy(&k)), to_json(&pair[1])));
            }
            jstr(&J::Obj(m))
        }
        "JSON_ARRAY" => jstr(&J::Arr(args.iter().map(to_json).collect())),
        "JSON_QUOTE" => {
            count(name, args, 1, 1)?;
            match &args[0].value {
                Value::Str(s) => Value::str(format!("\"{}\"", json_escape(&lossy(s)))),
                _ => Value::Null,
            }
        }
        "JSON_VALID" => {
            count(name, args, 1, 1)?;
            match args[0].value.to_bytes() {
                None => Value::Null,
                Some(b) => Value::Int(parse_json(&b).is_ok() as i64),
            }
        }
        "JSON_UNQUOTE" => {
            count(name, args, 1, 1)?;
            let Some(b) = args[0].value.to_bytes() else { return Ok(Some(Value::Null)) };
            if b.len() >= 2 && b[0] == b'"' {
                match parse_json(&b) {
                    Ok(J::Str(s)) => Value::str(json_unescape(&s)),
                    Ok(_) => Value::Str(b),
                    Err(e) => {
                        json_warn(ctx, &e, 1, name);
                        Value::Str(b)
                    }
                }
            } else {
                Value::Str(b)
            }
        }
        "JSON_EXTRACT" => {
            if n < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let d = doc!(0);
            let mut paths = Vec::new();
            for i in 1..n {
                paths.push(path!(i));
            }
            let mut found = Vec::new();
            for p in &paths {
                select(&d, p, &mut found);
            }
            if found.is_empty() {
                Value::Null
            } else if paths.len() == 1 && !has_wildcard(&paths[0]) {
                jstr(found[0])
            } else {
                jstr(&J::Arr(found.into_iter().cloned().collect()))
            }
        }
        "JSON_LENGTH" | "JSON_TYPE" | "JSON_KEYS" | "JSON_DEPTH" => {
            let max = if matches!(name, "JSON_TYPE" | "JSON_DEPTH") { 1 } else { 2 };
            count(name, args, 1, max)?;
            let d = doc!(0);
            let target = if n == 2 {
                let p = path!(1);
                match first_match(&d, &p) {
                    Some(x) => x,
                    None => return Ok(Some(Value::Null)),
                }
            } else {
                d
            };
            match name {
                "JSON_LENGTH" => Value::Int(match &target {
                    J::Arr(a) => a.len() as i64,
                    J::Obj(m) => m.len() as i64,
                    _ => 1,
                }),
                "JSON_TYPE" => Value::str(target.type_name()),
                "JSON_DEPTH" => Value::Int(json_depth(&target)),
                _ => match &target {
                    J::Obj(m) => jstr(&J::Arr(m.iter().map(|(k, _)| J::Str(k.clone())).collect())),
                    _ => Value::Null,
                },
            }
        }
        "JSON_CONTAINS" => {
            count(name, args, 2, 3)?;
            let d = doc!(0);
            let c = doc!(1);
            let target = if n == 3 {
                let p = path!(2);
                match first_match(&d, &p) {
                    Some(x) => x,
                    None => return Ok(Some(Value::Null)),
                }
            } else {
                d
            };
            Value::Int(json_contains(&target, &c) as i64)
        }
        "JSON_SET" | "JSON_INSERT" | "JSON_REPLACE" => {
            if n < 3 || n.is_multiple_of(2) {
                return Err(SqlError::wrong_arg_count(name));
            }
            let mut d = doc!(0);
            for i in (1..n).step_by(2) {
                let p = path!(i);
                if has_wildcard(&p) {
                    ctx.warnings.push(Warning::warn(
                        4044,
                        format!(
                            "Wildcards in JSON path not allowed in argument {} to function '{}'",
                            i + 1,
                            name.to_ascii_lowercase()
                        ),
                    ));
                    return Ok(Some(Value::Null));
                }
                let val = to_json(&args[i + 1]);
                json_modify(&mut d, &p, val, name);
            }
            jstr(&d)
        }
        "JSON_REMOVE" => {
            if n < 2 {
                return Err(SqlError::wrong_arg_count(name));
            }
            let mut d = doc!(0);
            for i in 1..n {
                let p = path!(i);
                if p.is_empty() || has_wildcard(&p) {
                    return Ok(Some(Value::Null));
                }
                let (last, parent) = p.split_last().expect("non-empty");
                if let Some(par) = select_mut(&mut d, parent) {
                    match (last, par) {
                        (Leg::Key(k), J::Obj(m)) => m.retain(|(kk, _)| kk != k),
                        (Leg::Index { n, from_end }, J::Arr(a)) => {
                            if let Some(ix) = index_of(*n, *from_end, a.len()) {
                                a.remove(ix);
                            }
                        }
                        _ => {}
                    }
                }
            }
            jstr(&d)
        }
        _ => return Ok(None),
    }))
}

/// JSON_SET (insert or replace), JSON_INSERT (only missing), JSON_REPLACE
/// (only present) of `val` at `path`.
fn json_modify(d: &mut J, path: &[Leg], val: J, name: &str) {
    let (insert, replace) = match name {
        "JSON_SET" => (true, true),
        "JSON_INSERT" => (true, false),
        _ => (false, true),
    };
    let Some((last, parent)) = path.split_last() else {
        if replace {
            *d = val;
        }
        return;
    };
    let Some(par) = select_mut(d, parent) else { return };
    match (last, par) {
        (Leg::Key(k), J::Obj(m)) => match m.iter_mut().find(|(kk, _)| kk == k) {
            Some(slot) => {
                if replace {
                    slot.1 = val;
                }
            }
            None => {
                if insert {
                    m.push((k.clone(), val));
                }
            }
        },
        (Leg::Index { n, from_end }, J::Arr(a)) => match index_of(*n, *from_end, a.len()) {
            Some(i) => {
                if replace {
                    a[i] = val;
                }
            }
            None => {
                if insert {
                    a.push(val);
                }
            }
        },
        (Leg::Index { n, .. }, other) => {
            // A scalar or object reads as an array of one: [0] is itself,
            // a later index appends, making an array.
            if *n == 0 {
                if replace {
                    *other = val;
                }
            } else if insert {
                let cur = std::mem::replace(other, J::Null);
                *other = J::Arr(vec![cur, val]);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test argument: strings get the default collation, `B(..)` is binary.
    enum A {
        S(&'static str),
        B(&'static [u8]),
        I(i64),
        F(f64),
        D(&'static str),
        N,
        /// A DATE, DATETIME or TIME value (by what the text holds).
        Da(&'static str),
        Dt(&'static str),
        Tm(&'static str),
        /// JSON text as another JSON function returns it.
        J(&'static str),
    }

    fn arg(a: &A) -> Arg {
        match a {
            A::S(s) => Arg { value: Value::str(s), coll: Some(Collation::Utf8mb4GeneralCi) },
            A::B(b) => Arg { value: Value::str(b), coll: Some(Collation::Binary) },
            A::I(i) => Arg { value: Value::Int(*i), coll: None },
            A::F(f) => Arg { value: Value::Double(*f), coll: None },
            A::D(d) => Arg { value: Value::Decimal(BigDecimal::from_str(d).unwrap()), coll: None },
            A::N => Arg { value: Value::Null, coll: None },
            A::J(j) => Arg { value: Value::str(j), coll: Some(Collation::Utf8mb4Bin) },
            A::Da(t) => Arg {
                value: Value::Temporal(tm::parse(t.as_bytes(), TemporalKind::Date).unwrap()),
                coll: None,
            },
            A::Dt(t) => Arg {
                value: Value::Temporal(tm::parse(t.as_bytes(), TemporalKind::DateTime).unwrap()),
                coll: None,
            },
            A::Tm(t) => Arg {
                value: Value::Temporal(tm::parse(t.as_bytes(), TemporalKind::Time).unwrap()),
                coll: None,
            },
        }
    }

    fn run_w(name: &str, args: &[A]) -> (SqlResult<Value>, Vec<Warning>) {
        let mut w = Vec::new();
        let mut ctx = FnCtx {
            now_micros: 1_706_700_000_123_456,
            time_zone: "+00:00",
            warnings: &mut w,
            database: Some("shop"),
            last_insert_id: 7,
            connection_id: 3,
        };
        let r = call(name, args.iter().map(arg).collect(), &mut ctx);
        (r, w)
    }

    /// The result as MariaDB's client prints it.
    fn r(name: &str, args: &[A]) -> String {
        run_w(name, args).0.unwrap().render()
    }

    use A::*;

    #[test]
    fn control_flow() {
        assert_eq!(r("IF", &[I(1), I(2), S("x")]), "2");
        assert_eq!(r("IF", &[N, I(2), S("x")]), "x");
        assert_eq!(r("IFNULL", &[N, I(2)]), "2");
        assert_eq!(r("NULLIF", &[I(1), S("1")]), "NULL");
        assert_eq!(r("NULLIF", &[S("a"), S("A")]), "NULL");
        assert_eq!(r("NULLIF", &[I(1), I(2)]), "1");
        assert_eq!(r("COALESCE", &[N, N, I(3)]), "3");
        assert_eq!(r("GREATEST", &[I(1), D("2.5")]), "2.5");
        assert_eq!(r("GREATEST", &[I(3), D("2.5")]), "3.0");
        assert_eq!(r("GREATEST", &[S("10"), I(9)]), "10");
        assert_eq!(r("GREATEST", &[S("b"), S("A")]), "b");
        assert_eq!(r("GREATEST", &[I(1), S("a")]), "1");
        assert_eq!(r("GREATEST", &[F(1.0), I(2)]), "2");
        assert_eq!(r("LEAST", &[I(1), N]), "NULL");
        assert_eq!(r("INTERVAL", &[I(5), I(1), I(3), I(7)]), "2");
        assert_eq!(r("INTERVAL", &[N, I(1)]), "-1");
        assert_eq!(r("INTERVAL", &[I(0), I(1)]), "0");
        assert_eq!(r("ISNULL", &[N]), "1");
        assert_eq!(run_w("IF", &[I(1)]).0.unwrap_err().code, 1582);
    }

    #[test]
    fn strings() {
        assert_eq!(r("SUBSTRING", &[S("hello"), I(0)]), "");
        assert_eq!(r("SUBSTRING", &[S("hello"), I(-3)]), "llo");
        assert_eq!(r("SUBSTRING", &[S("hello"), I(-10)]), "");
        assert_eq!(r("SUBSTRING", &[S("hello"), I(2), I(-1)]), "");
        assert_eq!(r("SUBSTRING", &[S("héllo"), I(2), I(2)]), "él");
        assert_eq!(r("SUBSTRING", &[S("abc"), I(i64::MAX)]), "");
        assert_eq!(r("SUBSTRING", &[S("abc"), I(i64::MIN), I(i64::MIN)]), "");
        assert_eq!(r("SUBSTRING", &[S("abc"), I(i64::MIN)]), "");
        assert_eq!(r("LOCATE", &[S(""), S("abc")]), "1");
        assert_eq!(r("LOCATE", &[S(""), S("abc"), I(3)]), "3");
        assert_eq!(r("LOCATE", &[S(""), S("abc"), I(5)]), "0");
        assert_eq!(r("LOCATE", &[S("B"), S("abc")]), "2");
        assert_eq!(r("LOCATE", &[S("b"), S("abcb"), I(3)]), "4");
        assert_eq!(r("LOCATE", &[S("b"), S("abc"), I(0)]), "0");
        assert_eq!(r("INSTR", &[S("abc"), S("c")]), "3");
        assert_eq!(r("SUBSTRING_INDEX", &[S("a.b.c"), S("."), I(2)]), "a.b");
        assert_eq!(r("SUBSTRING_INDEX", &[S("a.b.c"), S("."), I(-2)]), "b.c");
        assert_eq!(r("SUBSTRING_INDEX", &[S("aXbxc"), S("x"), I(1)]), "aXb");
        assert_eq!(r("SUBSTRING_INDEX", &[S("a.b"), S("."), I(i64::MIN)]), "a.b");
        assert_eq!(r("TRIM", &[S("  a  ")]), "a");
        assert_eq!(r("TRIM_LEADING", &[S("xxaxx"), S("x")]), "axx");
        assert_eq!(r("TRIM", &[S("xyxyaxy"), S("xy")]), "a");
        assert_eq!(r("TRIM_TRAILING", &[S("  a  ")]), "  a");
        assert_eq!(r("LTRIM", &[S("  a ")]), "a ");
        assert_eq!(r("REPLACE", &[S("aAa"), S("a"), S("b")]), "bAb");
        assert_eq!(r("REVERSE", &[S("héllo")]), "olléh");
        assert_eq!(r("UPPER", &[S("straße")]), "STRAßE");
        assert_eq!(r("LOWER", &[S("ÀB")]), "àb");
        assert_eq!(r("LENGTH", &[S("é")]), "2");
        assert_eq!(r("CHAR_LENGTH", &[S("é")]), "1");
        assert_eq!(r("CHAR_LENGTH", &[B("é".as_bytes())]), "2");
        assert_eq!(r("REPEAT", &[S("ab"), I(3)]), "ababab");
        assert_eq!(r("REPEAT", &[S("a"), I(-1)]), "");
        assert_eq!(r("SPACE", &[I(3)]), "   ");
        assert_eq!(r("LEFT", &[S("abc"), I(-1)]), "");
        assert_eq!(r("RIGHT", &[S("abc"), I(2)]), "bc");
        assert_eq!(r("CONCAT", &[S("a"), I(1), D("2.5")]), "a12.5");
        assert_eq!(r("CONCAT", &[S("a"), N]), "NULL");
        assert_eq!(r("CONCAT", &[F(1.0)]), "1");
        assert_eq!(r("CONCAT_WS", &[S(","), S("a"), N, S("b")]), "a,b");
        assert_eq!(r("CONCAT_WS", &[N, S("a")]), "NULL");
        assert_eq!(r("LPAD", &[S("hi"), I(5), S("")]), "NULL");
        assert_eq!(r("LPAD", &[S("hello"), I(3), S("x")]), "hel");
        assert_eq!(r("LPAD", &[S("hi"), I(-1), S("x")]), "NULL");
        assert_eq!(r("RPAD", &[S("hi"), I(6), S("ab")]), "hiabab");
        assert_eq!(r("LPAD", &[S("ab"), I(4), S("é")]), "ééab");
        assert_eq!(r("INSERT", &[S("Quadratic"), I(3), I(4), S("What")]), "QuWhattic");
        assert_eq!(r("INSERT", &[S("Quadratic"), I(-1), I(4), S("What")]), "Quadratic");
        assert_eq!(r("INSERT", &[S("Quadratic"), I(3), I(100), S("What")]), "QuWhat");
        assert_eq!(r("ELT", &[I(0), S("a")]), "NULL");
        assert_eq!(r("ELT", &[I(2), S("a"), S("b")]), "b");
        assert_eq!(r("FIELD", &[S("b"), S("a"), S("B")]), "2");
        assert_eq!(r("FIELD", &[I(2), S("1"), S("2")]), "2");
        assert_eq!(r("FIND_IN_SET", &[S("b"), S("a,b,c")]), "2");
        assert_eq!(r("STRCMP", &[S("a"), S("A")]), "0");
        assert_eq!(r("STRCMP", &[S("a"), S("b")]), "-1");
        assert_eq!(r("ORD", &[S("é")]), "50089");
        assert_eq!(r("ASCII", &[S("")]), "0");
        assert_eq!(r("CHAR", &[I(65), I(66), N, I(67)]), "ABC");
        assert_eq!(r("HEX", &[I(-1)]), "FFFFFFFFFFFFFFFF");
        assert_eq!(r("HEX", &[D("2.5")]), "3");
        assert_eq!(r("HEX", &[S("abc")]), "616263");
        let c = run_w("CHAR", &[I(256)]).0.unwrap();
        assert_eq!(
            r(
                "HEX",
                &[B(match &c {
                    Value::Str(s) => Box::leak(s.clone().into_boxed_slice()),
                    _ => unreachable!(),
                })]
            ),
            "0100"
        );
        assert_eq!(r("UNHEX", &[S("4")]), "\u{4}");
        assert_eq!(r("UNHEX", &[S("zz")]), "NULL");
        assert_eq!(r("QUOTE", &[S("a'b\\c")]), "'a\\'b\\\\c'");
        assert_eq!(r("QUOTE", &[N]), "NULL");
        assert_eq!(r("CONV", &[S("ff"), I(16), I(10)]), "255");
        assert_eq!(r("CONV", &[I(-1), I(10), I(16)]), "FFFFFFFFFFFFFFFF");
        assert_eq!(r("CONV", &[S("-17"), I(10), I(-10)]), "-17");
        assert_eq!(r("CONV", &[S("z"), I(10), I(10)]), "0");
        assert_eq!(r("CONV", &[S("1"), I(1), I(10)]), "NULL");
        assert_eq!(r("BIN", &[I(5)]), "101");
        assert_eq!(r("OCT", &[I(-1)]), "1777777777777777777777");
        assert_eq!(r("FORMAT", &[D("-1234.5"), I(0)]), "-1,235");
        assert_eq!(r("FORMAT", &[F(1234.5), I(0)]), "1,234");
        assert_eq!(r("FORMAT", &[D("0.5"), I(0)]), "1");
        assert_eq!(r("FORMAT", &[F(1e20), I(2)]), "100,000,000,000,000,000,000.00");
        assert_eq!(r("FORMAT", &[I(123), I(-1)]), "123");
        assert_eq!(r("FORMAT", &[D("1234.567"), I(2)]), "1,234.57");
    }

    #[test]
    fn string_misc() {
        let long = "a".repeat(60);
        let long: &'static str = Box::leak(long.into_boxed_str());
        assert_eq!(
            r("TO_BASE64", &[S(long)]),
            "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh\nYWFh"
        );
        assert_eq!(r("FROM_BASE64", &[S("YWJj")]), "abc");
        assert_eq!(r("FROM_BASE64", &[S("YW Jj")]), "abc");
        assert_eq!(r("FROM_BASE64", &[S("YWJ")]), "NULL");
        assert_eq!(r("FROM_BASE64", &[S("@@")]), "NULL");
        assert_eq!(r("FROM_BASE64", &[S("YQ==")]), "a");
        assert_eq!(
            r("SHA2", &[S("abc"), I(0)]),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(r("SHA2", &[S("abc"), I(1)]), "NULL");
        assert_eq!(r("CRC32", &[S("abc")]), "891568578");
        assert_eq!(r("MD5", &[I(1)]), "c4ca4238a0b923820dcc509a6f75849b");
        assert_eq!(r("SHA1", &[S("abc")]), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(r("CHARSET", &[I(1)]), "binary");
        assert_eq!(r("CHARSET", &[S("a")]), "utf8mb4");
        assert_eq!(r("COLLATION", &[N]), "binary");
        assert_eq!(r("COLLATION", &[S("a")]), "utf8mb4_general_ci");
        assert_eq!(r("LAST_INSERT_ID", &[]), "7");
        assert_eq!(r("DATABASE", &[]), "shop");
        assert_eq!(r("USER", &[]), "root@localhost");
        assert_eq!(r("CONNECTION_ID", &[]), "3");
        let u = r("UUID", &[]);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "1");
        let (v, w) = run_w("LEFT", &[S("abc"), S("1x")]);
        assert_eq!(v.unwrap().render(), "a");
        assert_eq!(w[0].message, "Truncated incorrect INTEGER value: '1x'");
        let (v, w) = run_w("REPEAT", &[S("a"), I(20_000_000)]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].code, 1301);
        assert_eq!(
            w[0].message,
            "Result of repeat() was larger than max_allowed_packet (16777216) - truncated"
        );
        assert_eq!(r("REPEAT", &[S("ab"), I(i64::MAX)]), "NULL");
        assert_eq!(r("LPAD", &[S("ab"), I(i64::MAX), S("x")]), "NULL");
        assert_eq!(r("RPAD", &[S("ab"), I(i64::MIN), S("x")]), "NULL");
        assert_eq!(r("SPACE", &[I(i64::MAX)]), "NULL");
        assert_eq!(r("INSERT", &[S("abc"), I(i64::MAX), I(i64::MAX), S("x")]), "abc");
        assert_eq!(r("INSERT", &[S("abc"), I(2), I(i64::MAX), S("x")]), "ax");
        assert_eq!(r("LOCATE", &[S("a"), S("abc"), I(i64::MAX)]), "0");
        assert_eq!(r("ELT", &[I(i64::MAX), S("a")]), "NULL");
    }

    #[test]
    fn numbers() {
        assert_eq!(r("PI", &[]), "3.141592653589793");
        assert_eq!(r("RAND", &[I(1)]), "0.40540353712197724");
        assert_eq!(r("ROUND", &[D("2.5")]), "3");
        assert_eq!(r("ROUND", &[F(2.5)]), "2");
        assert_eq!(r("ROUND", &[F(-2.5)]), "-2");
        assert_eq!(r("ROUND", &[D("123.456"), I(-1)]), "120");
        assert_eq!(r("ROUND", &[F(1234.5), I(-1)]), "1230");
        assert_eq!(r("ROUND", &[D("2.675"), I(2)]), "2.68");
        assert_eq!(r("ROUND", &[D("1.5"), I(3)]), "1.500");
        assert_eq!(r("ROUND", &[D("1.55"), I(1)]), "1.6");
        assert_eq!(r("ROUND", &[D("-1.55"), I(1)]), "-1.6");
        assert_eq!(r("ROUND", &[D("99.5")]), "100");
        assert_eq!(r("ROUND", &[S("2.5")]), "2");
        assert_eq!(r("ROUND", &[I(15), I(-1)]), "20");
        assert_eq!(r("ROUND", &[I(-15), I(-1)]), "-20");
        assert_eq!(r("ROUND", &[I(9223372036854775807), I(-1)]), "9223372036854775810");
        assert_eq!(r("ROUND", &[I(5), I(i64::MIN)]), "0");
        assert_eq!(r("ROUND", &[F(5.0), I(i64::MIN)]), "0");
        assert_eq!(r("ROUND", &[F(5.5), I(i64::MAX)]), "5.5");
        assert_eq!(r("ROUND", &[D("5.5"), I(i64::MAX)]).len(), 40);
        assert_eq!(r("TRUNCATE", &[D("15.78"), I(1)]), "15.7");
        assert_eq!(r("TRUNCATE", &[F(-15.78), I(1)]), "-15.7");
        assert_eq!(r("TRUNCATE", &[D("-1.55"), I(1)]), "-1.5");
        assert_eq!(r("TRUNCATE", &[I(1234), I(-2)]), "1200");
        assert_eq!(r("TRUNCATE", &[F(1.999), I(2)]), "1.99");
        assert_eq!(r("MOD", &[I(7), I(0)]), "NULL");
        assert_eq!(r("MOD", &[I(-7), I(3)]), "-1");
        assert_eq!(r("MOD", &[D("7.5"), I(2)]), "1.5");
        assert_eq!(r("MOD", &[S("7"), I(2)]), "1");
        assert_eq!(r("MOD", &[F(10.5), I(3)]), "1.5");
        assert_eq!(r("MOD", &[I(-10), D("3.5")]), "-3.0");
        assert_eq!(r("MOD", &[I(i64::MIN), I(-1)]), "0");
        assert_eq!(r("ABS", &[I(-5)]), "5");
        assert_eq!(r("ABS", &[D("-5.5")]), "5.5");
        assert_eq!(run_w("ABS", &[I(i64::MIN)]).0.unwrap_err().code, 1690);
        let (v, w) = run_w("ABS", &[S("-3x")]);
        assert_eq!(v.unwrap().render(), "3");
        assert_eq!(w[0].message, "Truncated incorrect DOUBLE value: '-3x'");
        assert_eq!(r("SIGN", &[D("-3.2")]), "-1");
        assert_eq!(r("SIGN", &[I(0)]), "0");
        assert_eq!(r("CEIL", &[D("1.2")]), "2");
        assert_eq!(r("CEIL", &[F(1.2)]), "2");
        assert_eq!(r("CEIL", &[S("1.2")]), "2");
        assert_eq!(r("CEIL", &[D("-0.5")]), "0");
        assert_eq!(r("FLOOR", &[D("-1.5")]), "-2");
        assert_eq!(r("FLOOR", &[D("12345678901234567890.5")]), "12345678901234567890");
        assert_eq!(r("RADIANS", &[I(180)]), "3.141592653589793");
        assert_eq!(r("DEGREES", &[F(std::f64::consts::PI)]), "180");
        assert_eq!(r("ATAN", &[I(1), I(2)]), "0.4636476090008061");
        assert_eq!(r("ATAN2", &[I(1), I(2)]), "0.4636476090008061");
        assert_eq!(r("ATAN", &[I(1)]), "0.7853981633974483");
        assert_eq!(r("SIN", &[I(0)]), "0");
        assert_eq!(r("COS", &[I(0)]), "1");
        assert_eq!(r("TAN", &[I(1)]), "1.5574077246549023");
        assert_eq!(r("EXP", &[I(1)]), "2.718281828459045");
        assert_eq!(r("POWER", &[I(2), I(10)]), "1024");
        assert_eq!(r("POW", &[I(2), I(-1)]), "0.5");
        assert_eq!(r("SQRT", &[I(16)]), "4");
        assert_eq!(r("SQRT", &[I(-1)]), "NULL");
        assert_eq!(r("SQRT", &[I(2)]), "1.4142135623730951");
        assert_eq!(r("ASIN", &[I(2)]), "NULL");
        assert_eq!(r("LOG2", &[I(8)]), "3");
        assert_eq!(r("LOG10", &[I(100)]), "2");
        assert_eq!(r("LOG", &[I(2), I(8)]), "3");
        let (v, w) = run_w("LN", &[I(0)]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Division by 0");
        assert_eq!(r("LOG", &[I(1), I(2)]), "NULL");
        assert_eq!(r("LOG", &[I(-1)]), "NULL");
        let e = run_w("EXP", &[I(1000)]).0.unwrap_err();
        assert_eq!(e.message, "DOUBLE value is out of range in 'exp(1000)'");
        let e = run_w("POW", &[I(0), I(-1)]).0.unwrap_err();
        assert_eq!(e.message, "DOUBLE value is out of range in 'pow(0,-1)'");
        assert_eq!(run_w("COT", &[I(0)]).0.unwrap_err().code, 1690);
    }

    #[test]
    fn dates() {
        assert_eq!(r("DATE", &[S("2024-01-31 10:11:12")]), "2024-01-31");
        assert_eq!(r("TIME", &[S("2024-01-31 10:11:12.5")]), "10:11:12.5");
        assert_eq!(r("YEAR", &[S("2024-01-31")]), "2024");
        assert_eq!(r("MONTH", &[I(20240131)]), "1");
        assert_eq!(r("DAY", &[S("2024-01-31")]), "31");
        assert_eq!(r("DAYOFMONTH", &[Da("2024-02-03")]), "3");
        assert_eq!(r("HOUR", &[S("10:11:12")]), "10");
        assert_eq!(r("HOUR", &[S("838:00:00")]), "838");
        assert_eq!(r("MINUTE", &[S("2024-01-31 10:11:12")]), "11");
        assert_eq!(r("SECOND", &[I(101112)]), "12");
        assert_eq!(r("MICROSECOND", &[S("10:11:12.5")]), "500000");
        assert_eq!(r("MICROSECOND", &[S("2024-01-01")]), "0");
        assert_eq!(r("DAYOFWEEK", &[S("2024-01-31")]), "4");
        assert_eq!(r("WEEKDAY", &[S("2024-01-31")]), "2");
        assert_eq!(r("DAYOFYEAR", &[S("2024-12-31")]), "366");
        assert_eq!(r("WEEK", &[S("2024-01-31")]), "4");
        assert_eq!(r("WEEK", &[S("2024-01-01"), I(3)]), "1");
        assert_eq!(r("WEEK", &[S("2024-12-31"), I(1)]), "53");
        assert_eq!(r("YEARWEEK", &[S("2024-01-01")]), "202353");
        assert_eq!(r("YEARWEEK", &[S("2024-12-31"), I(1)]), "202501");
        assert_eq!(r("QUARTER", &[S("2024-05-01")]), "2");
        assert_eq!(r("DAYNAME", &[S("2024-01-31")]), "Wednesday");
        assert_eq!(r("MONTHNAME", &[S("2024-01-31")]), "January");
        assert_eq!(r("LAST_DAY", &[S("2024-02-10")]), "2024-02-29");
        assert_eq!(r("LAST_DAY", &[S("2024-00-01")]), "NULL");
        assert_eq!(r("DATEDIFF", &[S("2024-03-01"), S("2024-02-01 23:00:00")]), "29");
        assert_eq!(r("TIMEDIFF", &[S("2024-01-01 10:00:00"), S("2024-01-01 08:30:00.5")]), "01:29:59.5");
        assert_eq!(r("TIMEDIFF", &[S("10:00"), S("12:00")]), "-02:00:00");
        assert_eq!(r("TIMESTAMPDIFF", &[S("MONTH"), S("2024-01-31"), S("2024-02-29")]), "0");
        assert_eq!(r("TIMESTAMPDIFF", &[S("MONTH"), S("2024-02-29"), S("2024-01-31")]), "0");
        assert_eq!(r("TIMESTAMPDIFF", &[S("YEAR"), S("2000-02-29"), S("2024-02-28")]), "23");
        assert_eq!(r("TIMESTAMPDIFF", &[S("SECOND"), S("2024-01-01"), S("2024-01-02")]), "86400");
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), I(1), S("MONTH")]), "2024-02-29");
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), I(1), S("HOUR")]), "2024-01-31 01:00:00");
        assert_eq!(r("DATE_SUB", &[S("2024-01-01"), S("1 1"), S("DAY_HOUR")]), "2023-12-30 23:00:00");
        assert_eq!(r("ADDDATE", &[S("2024-01-01"), I(5)]), "2024-01-06");
        assert_eq!(r("DATE_ADD", &[S("2024-01-01"), S("1.5"), S("DAY")]), "2024-01-02");
        assert_eq!(r("DATE_ADD", &[S("2024-01-01"), D("1.5"), S("DAY")]), "2024-01-03");
        assert_eq!(r("DATE_ADD", &[S("2024-01-01"), D("1.5"), S("HOUR")]), "2024-01-01 02:00:00");
        assert_eq!(r("DATE_ADD", &[I(20240131), I(1), S("DAY")]), "2024-02-01");
        assert_eq!(
            r("DATE_ADD", &[S("2024-01-31 10:00:00"), D("1.5"), S("SECOND")]),
            "2024-01-31 10:00:01.5"
        );
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), S("1.5"), S("DAY_SECOND")]), "2024-01-31 00:01:05");
        assert_eq!(r("DATE_ADD", &[S("10:00:00"), I(1), S("HOUR")]), "NULL");
        let (v, w) = run_w("DATE_ADD", &[S("2024-00-00"), I(1), S("DAY")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Incorrect datetime value: '2024-00-00'");
        assert_eq!(r("DATE_ADD", &[Tm("10:00:00"), I(1), S("HOUR")]), "11:00:00");
        assert_eq!(r("DATE_ADD", &[Da("2024-01-31"), I(1), S("HOUR")]), "2024-01-31 01:00:00");
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), I(-1), S("DAY")]), "2024-01-30");
        assert_eq!(r("SUBDATE", &[S("2024-01-31"), I(1), S("YEAR")]), "2023-01-31");
        let (v, w) = run_w("DATE_ADD", &[S("9999-12-31"), I(1), S("DAY")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Datetime function: datetime field overflow");
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), I(i64::MAX), S("DAY")]), "NULL");
        assert_eq!(r("DATE_ADD", &[S("2024-01-31"), I(i64::MIN), S("MONTH")]), "NULL");
        assert_eq!(r("ADDTIME", &[S("2024-01-01 10:00:00"), S("1:30:00")]), "2024-01-01 11:30:00");
        assert_eq!(r("SUBTIME", &[S("10:00:00"), S("11:00:00")]), "-01:00:00");
        assert_eq!(r("ADDTIME", &[S("10:00:00.5"), S("1.25")]), "10:00:01.750000");
        assert_eq!(
            r("DATE_FORMAT", &[S("2024-01-31 13:05:00"), S("%W %D %M %Y %h:%i %p")]),
            "Wednesday 31st January 2024 01:05 PM"
        );
        assert_eq!(
            r("DATE_FORMAT", &[S("2024-01-31"), S("%j %U %u %V %v %X %x %w %a %b %c %e %f")]),
            "031 04 05 04 05 2024 2024 3 Wed Jan 1 31 000000"
        );
        assert_eq!(r("DATE_FORMAT", &[S("abc"), S("%Y")]), "NULL");
        assert_eq!(r("TIME_FORMAT", &[S("13:05:00"), S("%H.%i")]), "13.05");
        assert_eq!(r("TIME_FORMAT", &[S("25:00:00"), S("%H %k %h %l")]), "25 25 01 1");
        assert_eq!(r("STR_TO_DATE", &[S("31/01/2024"), S("%d/%m/%Y")]), "2024-01-31");
        assert_eq!(r("STR_TO_DATE", &[S("2024-01-31 10:11"), S("%Y-%m-%d %H:%i")]), "2024-01-31 10:11:00");
        assert_eq!(r("STR_TO_DATE", &[S("10:11"), S("%H:%i")]), "10:11:00");
        let (v, w) = run_w("STR_TO_DATE", &[S("abc"), S("%Y")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Incorrect datetime value: 'abc' for function str_to_date");
        assert_eq!(r("MAKEDATE", &[I(2024), I(60)]), "2024-02-29");
        assert_eq!(r("MAKEDATE", &[I(2024), I(0)]), "NULL");
        assert_eq!(r("MAKEDATE", &[I(i64::MAX), I(i64::MAX)]), "NULL");
        assert_eq!(r("MAKETIME", &[I(10), I(11), I(12)]), "10:11:12");
        assert_eq!(r("MAKETIME", &[I(900), I(0), I(0)]), "838:59:59");
        assert_eq!(r("MAKETIME", &[I(1), I(60), I(0)]), "NULL");
        assert_eq!(r("MAKETIME", &[I(1), I(2), D("3.5")]), "01:02:03.5");
        assert_eq!(r("MAKETIME", &[I(i64::MIN), I(0), I(0)]), "-838:59:59");
        assert_eq!(r("SEC_TO_TIME", &[I(3661)]), "01:01:01");
        assert_eq!(r("SEC_TO_TIME", &[D("-1.5")]), "-00:00:01.5");
        assert_eq!(r("SEC_TO_TIME", &[I(99999999)]), "838:59:59");
        assert_eq!(r("SEC_TO_TIME", &[I(i64::MIN)]), "-838:59:59");
        assert_eq!(r("TIME_TO_SEC", &[S("01:01:01")]), "3661");
        assert_eq!(r("TIME_TO_SEC", &[S("-01:00:00")]), "-3600");
        assert_eq!(r("TIME_TO_SEC", &[S("10:00:00.5")]), "36000.5");
        assert_eq!(r("TO_DAYS", &[S("2024-01-31")]), "739281");
        assert_eq!(r("TO_DAYS", &[S("0000-00-00")]), "NULL");
        assert_eq!(r("FROM_DAYS", &[I(739281)]), "2024-01-31");
        assert_eq!(r("FROM_DAYS", &[I(0)]), "0000-00-00");
        assert_eq!(r("FROM_DAYS", &[I(i64::MIN)]), "0000-00-00");
        assert_eq!(r("TO_SECONDS", &[S("2024-01-31")]), "63873878400");
        assert_eq!(r("PERIOD_ADD", &[I(202401), I(13)]), "202502");
        assert_eq!(r("PERIOD_ADD", &[I(2401), I(1)]), "202402");
        assert_eq!(r("PERIOD_ADD", &[I(0), I(1)]), "0");
        assert_eq!(r("PERIOD_DIFF", &[I(202401), I(202312)]), "1");
        assert_eq!(r("PERIOD_DIFF", &[I(9901), I(200001)]), "-12");
        assert_eq!(r("EXTRACT", &[S("YEAR_MONTH"), S("2024-01-31")]), "202401");
        assert_eq!(r("EXTRACT", &[S("DAY_SECOND"), S("2024-01-31 10:11:12")]), "31101112");
        assert_eq!(r("EXTRACT", &[S("HOUR"), S("10:11:12")]), "10");
        assert_eq!(r("EXTRACT", &[S("HOUR"), S("-10:11:12")]), "-10");
        assert_eq!(r("EXTRACT", &[S("MICROSECOND"), S("10:11:12.5")]), "500000");
        assert_eq!(r("EXTRACT", &[S("DAY_MICROSECOND"), S("2024-01-31 10:11:12.5")]), "31101112500000");
        assert_eq!(r("EXTRACT", &[S("WEEK"), S("2024-01-31")]), "4");
        assert_eq!(
            r("CONVERT_TZ", &[S("2024-07-01 12:00:00"), S("+00:00"), S("+02:00")]),
            "2024-07-01 14:00:00"
        );
        assert_eq!(
            r("CONVERT_TZ", &[S("2024-07-01 12:00:00"), S("UTC"), S("Europe/Paris")]),
            "2024-07-01 14:00:00"
        );
        assert_eq!(r("CONVERT_TZ", &[S("2024-07-01"), S("nowhere"), S("UTC")]), "NULL");
        assert_eq!(r("TIMESTAMP", &[S("2024-01-31")]), "2024-01-31 00:00:00");
        assert_eq!(r("TIMESTAMP", &[S("2024-01-31"), S("10:00:00")]), "2024-01-31 10:00:00");
        assert_eq!(r("UNIX_TIMESTAMP", &[S("2024-01-31 00:00:00")]), "1706659200");
        assert_eq!(r("UNIX_TIMESTAMP", &[S("2024-01-31 00:00:00.25")]), "1706659200.25");
        assert_eq!(r("UNIX_TIMESTAMP", &[S("1960-01-01")]), "NULL");
        assert_eq!(r("UNIX_TIMESTAMP", &[S("2040-01-01")]), "NULL");
        assert_eq!(r("UNIX_TIMESTAMP", &[]), "1706700000");
        assert_eq!(r("FROM_UNIXTIME", &[I(1706659200)]), "2024-01-31 00:00:00");
        assert_eq!(r("FROM_UNIXTIME", &[D("1706659200.5")]), "2024-01-31 00:00:00.5");
        assert_eq!(r("FROM_UNIXTIME", &[I(1706659200), S("%Y")]), "2024");
        assert_eq!(r("FROM_UNIXTIME", &[I(-1)]), "NULL");
        assert_eq!(r("FROM_UNIXTIME", &[D("1.123456789")]), "1970-01-01 00:00:01.123456");
        assert_eq!(r("FROM_UNIXTIME", &[F(1e300)]), "NULL");
        assert_eq!(r("NOW", &[]), "2024-01-31 11:20:00");
        assert_eq!(r("NOW", &[I(3)]), "2024-01-31 11:20:00.123");
        assert_eq!(r("CURDATE", &[]), "2024-01-31");
        assert_eq!(r("CURTIME", &[I(2)]), "11:20:00.12");
        assert_eq!(r("UTC_TIMESTAMP", &[]), "2024-01-31 11:20:00");
        assert_eq!(run_w("NOW", &[I(7)]).0.unwrap_err().code, 1426);
        let (v, w) = run_w("YEAR", &[S("abc")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Incorrect datetime value: 'abc'");
        assert_eq!(r("DATE", &[S("2024-02-30")]), "NULL");
        let (v, w) = run_w("DAYNAME", &[S("0000-00-00")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Incorrect datetime value: '0000-00-00'");
        assert_eq!(r("MONTH", &[S("0000-00-00")]), "0");
        assert_eq!(r("YEAR", &[D("2024.5")]), "NULL");
        assert_eq!(r("HOUR", &[D("1.5")]), "0");
        assert_eq!(r("GREATEST", &[S("2024-01-01"), Da("2023-01-01")]), "2024-01-01");
        assert_eq!(r("LEAST", &[S("2024-01-01"), Da("2023-01-01")]), "2023-01-01");
        assert_eq!(r("DATEDIFF", &[Dt("2024-03-01 10:00:00"), Da("2024-02-01")]), "29");
    }

    #[test]
    fn json() {
        let doc = r#"{"a":1.50, "b" : [1,2,{"c":true}]}"#;
        assert_eq!(r("JSON_EXTRACT", &[S(doc), S("$")]), r#"{"a": 1.50, "b": [1, 2, {"c": true}]}"#);
        assert_eq!(r("JSON_EXTRACT", &[S(doc), S("$.a")]), "1.50");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":[1,2]}"#), S("$.a")]), "[1, 2]");
        assert_eq!(r("JSON_EXTRACT", &[S("[1,2,3]"), S("$[1]")]), "2");
        assert_eq!(r("JSON_EXTRACT", &[S("[1,2,3]"), S("$[last]")]), "3");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":{"b":1},"c":{"b":2}}"#), S("$.*.b")]), "[1, 2]");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":{"b":1},"c":[{"b":2}]}"#), S("$**.b")]), "[1, 2]");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":1}"#), S("$.b")]), "NULL");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":1}"#), S("$.a"), S("$.a")]), "[1, 1]");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":"x"}"#), S("$.a")]), r#""x""#);
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":"x\u0041"}"#), S("$.a")]), r#""x\u0041""#);
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a b":1}"#), S(r#"$."a b""#)]), "1");
        assert_eq!(r("JSON_EXTRACT", &[S(r#"{"a":{}}"#), S("$.a")]), "{}");
        assert_eq!(r("JSON_EXTRACT", &[S("  [ ]  "), S("$")]), "[]");
        let (v, w) = run_w("JSON_EXTRACT", &[S("[1,2"), S("$[0]")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(w[0].message, "Unexpected end of JSON text in argument 1 to function 'json_extract'");
        let (v, w) = run_w("JSON_EXTRACT", &[S("[1]"), S("$[a]")]);
        assert_eq!(v.unwrap().render(), "NULL");
        assert_eq!(
            w[0].message,
            "Syntax error in JSON path in argument 2 to function 'json_extract' at position 3"
        );
        assert_eq!(r("JSON_UNQUOTE", &[S(r#""x\ny""#)]), "x\ny");
        assert_eq!(r("JSON_UNQUOTE", &[S("abc")]), "abc");
        assert_eq!(
            r("JSON_OBJECT", &[S("a"), I(1), S("b"), S("x"), S("c"), N, S("d"), F(1.5), S("e"), J("[1, 2]")]),
            r#"{"a": 1, "b": "x", "c": null, "d": 1.5, "e": [1, 2]}"#
        );
        assert_eq!(r("JSON_OBJECT", &[S("a"), S("[1]")]), r#"{"a": "[1]"}"#);
        assert_eq!(r("JSON_OBJECT", &[S("a"), Da("2024-01-01")]), r#"{"a": "2024-01-01"}"#);
        assert_eq!(run_w("JSON_OBJECT", &[S("a")]).0.unwrap_err().code, 1582);
        assert_eq!(r("JSON_ARRAY", &[I(1), S("a"), N, D("2.50")]), r#"[1, "a", null, 2.50]"#);
        assert_eq!(r("JSON_ARRAY", &[]), "[]");
        assert_eq!(r("JSON_VALID", &[S(r#"{"a":1}"#)]), "1");
        assert_eq!(r("JSON_VALID", &[S("x")]), "0");
        assert_eq!(r("JSON_VALID", &[N]), "NULL");
        assert_eq!(r("JSON_VALID", &[I(1)]), "1");
        assert_eq!(r("JSON_LENGTH", &[S("[1,2]")]), "2");
        assert_eq!(r("JSON_LENGTH", &[S(r#"{"a":1,"b":2}"#), S("$.a")]), "1");
        assert_eq!(r("JSON_TYPE", &[S("1")]), "INTEGER");
        assert_eq!(r("JSON_TYPE", &[S("1.5")]), "DOUBLE");
        assert_eq!(r("JSON_TYPE", &[S(r#""a""#)]), "STRING");
        assert_eq!(r("JSON_TYPE", &[S("[1]")]), "ARRAY");
        assert_eq!(r("JSON_TYPE", &[S("{}")]), "OBJECT");
        assert_eq!(r("JSON_TYPE", &[S("null")]), "NULL");
        assert_eq!(r("JSON_TYPE", &[S("true")]), "BOOLEAN");
        assert_eq!(r("JSON_KEYS", &[S(r#"{"b":1,"a":2}"#)]), r#"["b", "a"]"#);
        assert_eq!(r("JSON_QUOTE", &[S("a\"b")]), r#""a\"b""#);
        assert_eq!(r("JSON_QUOTE", &[I(1)]), "NULL");
        assert_eq!(r("JSON_CONTAINS", &[S("[1,2,3]"), S("2")]), "1");
        assert_eq!(r("JSON_CONTAINS", &[S(r#"{"a":1,"b":2}"#), S(r#"{"a":1}"#)]), "1");
        assert_eq!(r("JSON_CONTAINS", &[S("[1,[2,3]]"), S("[3]")]), "1");
        assert_eq!(r("JSON_CONTAINS", &[S("[1,2]"), S("5")]), "0");
        assert_eq!(r("JSON_SET", &[S(r#"{"a":1}"#), S("$.b"), I(2), S("$.a"), I(3)]), r#"{"a": 3, "b": 2}"#);
        assert_eq!(
            r("JSON_INSERT", &[S(r#"{"a":1}"#), S("$.a"), I(9), S("$.c"), S("x")]),
            r#"{"a": 1, "c": "x"}"#
        );
        assert_eq!(r("JSON_REPLACE", &[S(r#"{"a":1}"#), S("$.a"), I(9), S("$.c"), S("x")]), r#"{"a": 9}"#);
        assert_eq!(r("JSON_REMOVE", &[S(r#"{"a":1,"b":[1,2]}"#), S("$.b[0]")]), r#"{"a": 1, "b": [2]}"#);
        assert_eq!(r("JSON_SET", &[S("[1,2]"), S("$[5]"), I(3)]), "[1, 2, 3]");
        let deep = "[".repeat(100);
        let deep: &'static str = Box::leak(deep.into_boxed_str());
        assert_eq!(r("JSON_VALID", &[S(deep)]), "0");
    }

    /// Every function with up to three arguments drawn from awkward values
    /// returns a value or an error, never panics.
    #[test]
    fn no_panics() {
        let vals: Vec<Arg> = vec![
            Arg { value: Value::Null, coll: None },
            Arg { value: Value::Int(i64::MIN), coll: None },
            Arg { value: Value::Int(i64::MAX), coll: None },
            Arg { value: Value::Int(-1), coll: None },
            Arg { value: Value::UInt(u64::MAX), coll: None },
            Arg { value: Value::Double(f64::NAN), coll: None },
            Arg { value: Value::Double(f64::INFINITY), coll: None },
            Arg { value: Value::Double(-1e308), coll: None },
            Arg {
                value: Value::Decimal(
                    BigDecimal::from_str("-99999999999999999999999999999.999999999").unwrap(),
                ),
                coll: None,
            },
            Arg { value: Value::str(""), coll: Some(Collation::Utf8mb4GeneralCi) },
            Arg { value: Value::Str(vec![0xff, 0xe2, 0x82]), coll: Some(Collation::Utf8mb4GeneralCi) },
            Arg { value: Value::str("$[last-99999999999999999999]"), coll: Some(Collation::Utf8mb4Bin) },
            Arg { value: Value::str("9999-12-31 23:59:59.999999"), coll: Some(Collation::Binary) },
            Arg { value: Value::str("[{\"a\":[1]}]"), coll: Some(Collation::Utf8mb4Bin) },
            Arg { value: Value::str("DAY_MICROSECOND"), coll: Some(Collation::Utf8mb4GeneralCi) },
            Arg { value: Value::Temporal(tm::parse(b"-838:59:59", TemporalKind::Time).unwrap()), coll: None },
            Arg { value: Value::Temporal(tm::zero(TemporalKind::DateTime)), coll: None },
        ];
        let names: Vec<&str> =
            NAMES.iter().chain(DATE_NAMES).chain(JSON_NAMES).copied().filter(|n| *n != "SLEEP").collect();
        let clone = |a: &Arg| Arg { value: a.value.clone(), coll: a.coll };
        let mut w = Vec::new();
        for name in names {
            assert!(exists(name));
            let mut lists: Vec<Vec<&Arg>> = vec![vec![]];
            for a in &vals {
                lists.push(vec![a]);
                for b in &vals {
                    lists.push(vec![a, b]);
                    for c in &vals {
                        lists.push(vec![a, b, c]);
                    }
                    for c in &vals[..6] {
                        for d in &vals[8..] {
                            lists.push(vec![a, b, c, d]);
                        }
                    }
                }
            }
            for l in lists {
                let mut ctx = FnCtx {
                    now_micros: 1_706_700_000_123_456,
                    time_zone: "Europe/Paris",
                    warnings: &mut w,
                    database: None,
                    last_insert_id: 0,
                    connection_id: 1,
                };
                let _ = call(name, l.iter().map(|a| clone(a)).collect(), &mut ctx);
                w.clear();
            }
        }
    }
}
