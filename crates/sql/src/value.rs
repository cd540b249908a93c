//! Values: what an expression yields and a row holds, and MySQL's implicit
//! conversions between them.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::str::FromStr;

use bigdecimal::BigDecimal;

/// A date, a datetime or a time, as MySQL's `MYSQL_TIME` holds one: the
/// fields as written, so zero dates ('0000-00-00') and times past 24 hours
/// ('838:59:59') are representable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Temporal {
    pub kind: TemporalKind,
    /// Only for `Time`: a negative interval.
    pub neg: bool,
    pub year: u16,
    pub month: u8,
    pub day: u8,
    /// Up to 838 for `Time`, below 24 otherwise.
    pub hour: u32,
    pub minute: u8,
    pub second: u8,
    pub micro: u32,
    /// Fractional digits shown (0..=6).
    pub fsp: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TemporalKind {
    Date,
    DateTime,
    Time,
}

impl Temporal {
    pub fn date(year: u16, month: u8, day: u8) -> Temporal {
        Temporal {
            kind: TemporalKind::Date,
            neg: false,
            year,
            month,
            day,
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            fsp: 0,
        }
    }

    /// A key that orders temporals of one kind chronologically (times by
    /// signed duration).
    pub fn ordinal(&self) -> i128 {
        let t = ((self.hour as i128 * 60 + self.minute as i128) * 60 + self.second as i128) * 1_000_000
            + self.micro as i128;
        match self.kind {
            TemporalKind::Time => {
                if self.neg {
                    -t
                } else {
                    t
                }
            }
            _ => {
                let d = (self.year as i128 * 13 + self.month as i128) * 32 + self.day as i128;
                d * 86_400_000_000 * 4 + t
            }
        }
    }

    /// As MySQL prints it: '2024-01-31', '2024-01-31 10:00:00.5', '-01:02:03'.
    pub fn render(&self) -> String {
        let mut s = String::new();
        match self.kind {
            TemporalKind::Date => {
                let _ = write!(s, "{:04}-{:02}-{:02}", self.year, self.month, self.day);
                return s;
            }
            TemporalKind::DateTime => {
                let _ = write!(
                    s,
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                    self.year, self.month, self.day, self.hour, self.minute, self.second
                );
            }
            TemporalKind::Time => {
                let _ = write!(
                    s,
                    "{}{:02}:{:02}:{:02}",
                    if self.neg { "-" } else { "" },
                    self.hour,
                    self.minute,
                    self.second
                );
            }
        }
        if self.fsp > 0 {
            let frac = format!("{:06}", self.micro);
            s.push('.');
            s.push_str(&frac[..self.fsp as usize]);
        }
        s
    }

    /// As a number: 20240131, 20240131100000, 10203 (-10203).
    pub fn to_number(&self) -> f64 {
        let n = match self.kind {
            TemporalKind::Date => {
                (self.year as u64 * 10000 + self.month as u64 * 100 + self.day as u64) as f64
            }
            TemporalKind::DateTime => {
                let d = self.year as u64 * 10000 + self.month as u64 * 100 + self.day as u64;
                (d * 1_000_000 + self.hour as u64 * 10000 + self.minute as u64 * 100 + self.second as u64)
                    as f64
                    + self.micro as f64 / 1e6
            }
            TemporalKind::Time => {
                let v = (self.hour as u64 * 10000 + self.minute as u64 * 100 + self.second as u64) as f64
                    + self.micro as f64 / 1e6;
                if self.neg {
                    -v
                } else {
                    v
                }
            }
        };
        if self.fsp == 0 {
            n.trunc()
        } else {
            n
        }
    }
}

/// A SQL value.
///
/// Strings are bytes: text is UTF-8 (whatever the column's character set),
/// binary strings are anything; which collation compares them is known from
/// the expression's type, not from the value.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Double(f64),
    Decimal(BigDecimal),
    Str(Vec<u8>),
    Temporal(Temporal),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn str(s: impl AsRef<[u8]>) -> Value {
        Value::Str(s.as_ref().to_vec())
    }

    /// As a double, MySQL's way: strings by their longest numeric prefix
    /// (`'12abc'` is 12, `'abc'` is 0). Returns whether the string was
    /// wholly a number, for the warnings non-strict modes give.
    pub fn to_f64(&self) -> Option<f64> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => *i as f64,
            Value::UInt(u) => *u as f64,
            Value::Double(d) => *d,
            Value::Decimal(d) => d.to_string().parse().unwrap_or(0.0),
            Value::Str(s) => parse_f64_prefix(s).0,
            Value::Temporal(t) => t.to_number(),
        })
    }

    /// As a signed 64-bit integer, rounding as MySQL does (half away from
    /// zero), saturating at the ends of the range.
    pub fn to_i64(&self) -> Option<i64> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => *i,
            Value::UInt(u) => (*u).min(i64::MAX as u64) as i64,
            Value::Double(d) => round_f64_to_i64(*d),
            Value::Decimal(d) => {
                let r = d.with_scale_round(0, bigdecimal::RoundingMode::HalfUp);
                i64::from_str(&r.to_string()).unwrap_or(if r.sign() == bigdecimal::num_bigint::Sign::Minus {
                    i64::MIN
                } else {
                    i64::MAX
                })
            }
            Value::Str(s) => match parse_int_prefix(s) {
                Some(i) => i.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                None => round_f64_to_i64(parse_f64_prefix(s).0),
            },
            Value::Temporal(t) => round_f64_to_i64(t.to_number()),
        })
    }

    /// As an exact decimal.
    pub fn to_decimal(&self) -> Option<BigDecimal> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => BigDecimal::from(*i),
            Value::UInt(u) => BigDecimal::from(*u),
            Value::Double(d) => BigDecimal::from_str(&format_double(*d)).unwrap_or_default(),
            Value::Decimal(d) => d.clone(),
            Value::Str(s) => {
                let (_, len) = parse_f64_prefix(s);
                let txt = std::str::from_utf8(&s[..len]).unwrap_or("0").trim();
                BigDecimal::from_str(txt).unwrap_or_default()
            }
            Value::Temporal(t) => BigDecimal::from_str(&t.to_number().to_string()).unwrap_or_default(),
        })
    }

    /// As the bytes MySQL prints for it.
    pub fn to_bytes(&self) -> Option<Vec<u8>> {
        Some(match self {
            Value::Null => return None,
            Value::Str(s) => s.clone(),
            other => other.render().into_bytes(),
        })
    }

    /// The text form of a non-string value (NULL prints as "NULL").
    pub fn render(&self) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Double(d) => format_double(*d),
            Value::Decimal(d) => d.to_plain_string(),
            Value::Str(s) => String::from_utf8_lossy(s).into_owned(),
            Value::Temporal(t) => t.render(),
        }
    }

    /// SQL truth: NULL is unknown (`None`), numbers are true when not zero.
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(*i != 0),
            Value::UInt(u) => Some(*u != 0),
            Value::Double(d) => Some(*d != 0.0),
            Value::Decimal(d) => Some(d.sign() != bigdecimal::num_bigint::Sign::NoSign),
            Value::Str(_) => Some(self.to_f64().unwrap_or(0.0) != 0.0),
            Value::Temporal(t) => Some(t.to_number() != 0.0),
        }
    }
}

fn round_f64_to_i64(d: f64) -> i64 {
    let r = d.round();
    if r >= 9.223_372_036_854_776e18 {
        i64::MAX
    } else if r <= -9.223_372_036_854_776e18 {
        i64::MIN
    } else {
        r as i64
    }
}

/// MySQL's shortest round-trip printing of a double: `1e20` prints as
/// "1e20", `0.1` as "0.1", `3.0` as "3".
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return "0".into();
    }
    let abs = d.abs();
    if (1e-5..1e15).contains(&abs) {
        let s = format!("{d}");
        return s;
    }
    // Scientific: mantissa digits, then e+NN / e-NN as MySQL prints it.
    let s = format!("{d:e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    format!("{m}e{exp}")
}

/// The longest prefix of `s` that reads as a decimal number (after leading
/// spaces), as MySQL's `my_strntod`: its value and how many bytes it took.
pub fn parse_f64_prefix(s: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while i < s.len() && (s[i] == b' ' || s[i] == b'\t' || s[i] == b'\n' || s[i] == b'\r') {
        i += 1;
    }
    let start = i;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    let mut any = i > digits_start;
    if i < s.len() && s[i] == b'.' {
        let j = i + 1;
        let mut k = j;
        while k < s.len() && s[k].is_ascii_digit() {
            k += 1;
        }
        if k > j || any {
            any = any || k > j;
            i = k;
        }
    }
    if !any {
        return (0.0, 0);
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        let mut k = i + 1;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            k += 1;
        }
        let ds = k;
        while k < s.len() && s[k].is_ascii_digit() {
            k += 1;
        }
        if k > ds {
            i = k;
        }
    }
    let txt = std::str::from_utf8(&s[start..i]).unwrap_or("0");
    (txt.parse().unwrap_or(0.0), i)
}

/// An integer prefix with nothing numeric after it ('12', ' -7'), exact;
/// `None` when the string has a fraction or exponent (read as a double).
pub fn parse_int_prefix(s: &[u8]) -> Option<i128> {
    let (_, len) = parse_f64_prefix(s);
    let txt = std::str::from_utf8(&s[..len]).ok()?.trim();
    if txt.is_empty() {
        return Some(0);
    }
    if txt.contains(['.', 'e', 'E']) {
        return None;
    }
    if txt.len() > 38 {
        return None;
    }
    txt.parse::<i128>().ok()
}

/// True when the whole of `s` (spaces aside) is a number.
pub fn is_whole_number(s: &[u8]) -> bool {
    let (_, len) = parse_f64_prefix(s);
    len > 0 && s[len..].iter().all(|b| b.is_ascii_whitespace())
}

/// Compares two numbers exactly where that matters (integers, decimals),
/// as doubles otherwise.
pub fn compare_numeric(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::UInt(y)) => Some((*x as i128).cmp(&(*y as i128))),
        (Value::UInt(x), Value::Int(y)) => Some((*x as i128).cmp(&(*y as i128))),
        (Value::Double(_), _) | (_, Value::Double(_)) | (Value::Str(_), _) | (_, Value::Str(_)) => {
            a.to_f64()?.partial_cmp(&b.to_f64()?)
        }
        _ => Some(a.to_decimal()?.cmp(&b.to_decimal()?)),
    }
}
