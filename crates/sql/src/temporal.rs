//! Dates and times with MySQL's (MariaDB 10.11's) rules: parsing text and
//! numbers, validation, conversions between kinds, day numbers, interval
//! arithmetic, week numbers, DATE_FORMAT / STR_TO_DATE, and time zones.
//!
//! Day numbers follow MySQL's `calc_daynr` (TO_DAYS): the proleptic
//! Gregorian calendar from year 1, with year 0 a common year, so that
//! TO_DAYS, FROM_DAYS and DATE_ADD agree with MariaDB even near year 0.

use std::str::FromStr;

use chrono::{Datelike, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone as _, Timelike};

use crate::value::{Temporal, TemporalKind};

/// The largest TIME, in hours, MySQL keeps ('838:59:59').
pub const TIME_MAX_HOUR: u32 = 838;
/// FROM_DAYS / TO_DAYS of '9999-12-31'.
pub const MAX_DAY_NUMBER: i64 = 3_652_424;
/// The last TIMESTAMP second, UTC: '2038-01-19 03:14:07'.
pub const TIMESTAMP_MAX_SECS: i64 = 2_147_483_647;

const MICROS_PER_DAY: i64 = 86_400_000_000;

// ---------------------------------------------------------------------------
// Construction and checks

/// A zero value of `kind` ('0000-00-00', '0000-00-00 00:00:00', '00:00:00').
pub fn zero(kind: TemporalKind) -> Temporal {
    Temporal { kind, neg: false, year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, micro: 0, fsp: 0 }
}

/// A datetime from its fields (no validation).
#[allow(clippy::too_many_arguments)]
pub fn datetime(
    year: u16,
    month: u8,
    day: u8,
    hour: u32,
    minute: u8,
    second: u8,
    micro: u32,
    fsp: u8,
) -> Temporal {
    Temporal { kind: TemporalKind::DateTime, neg: false, year, month, day, hour, minute, second, micro, fsp }
}

/// A time from a signed count of microseconds, clamped to ±838:59:59.999999
/// (the bool says whether it had to be clamped).
pub fn time_from_micros(us: i64, fsp: u8) -> (Temporal, bool) {
    let neg = us < 0;
    let mut a = us.unsigned_abs();
    let max = (TIME_MAX_HOUR as u64 * 3600 + 59 * 60 + 59) * 1_000_000 + 999_999;
    let clamped = a > max;
    if clamped {
        // MySQL clamps to the whole second: 838:59:59, whatever the fraction.
        a = max - 999_999;
    }
    let micro = (a % 1_000_000) as u32;
    let secs = a / 1_000_000;
    let t = Temporal {
        kind: TemporalKind::Time,
        neg: neg && a != 0,
        year: 0,
        month: 0,
        day: 0,
        hour: (secs / 3600) as u32,
        minute: ((secs / 60) % 60) as u8,
        second: (secs % 60) as u8,
        micro,
        fsp,
    };
    (t, clamped)
}

/// A TIME as signed microseconds; for dates and datetimes, the time of day.
pub fn time_to_micros(t: &Temporal) -> i64 {
    let v = ((t.hour as i64 * 60 + t.minute as i64) * 60 + t.second as i64) * 1_000_000 + t.micro as i64;
    if t.neg && t.kind == TemporalKind::Time {
        -v
    } else {
        v
    }
}

/// True when every date part is zero ('0000-00-00').
pub fn is_zero_date(t: &Temporal) -> bool {
    t.year == 0 && t.month == 0 && t.day == 0
}

/// True when the month or the day is zero ('2024-00-00', '2024-01-00'),
/// which NO_ZERO_IN_DATE refuses.
pub fn has_zero_in_date(t: &Temporal) -> bool {
    t.month == 0 || t.day == 0
}

pub fn is_leap(year: i64) -> bool {
    (year & 3) == 0 && (year % 100 != 0 || (year % 400 == 0 && year != 0))
}

pub fn days_in_year(year: i64) -> i64 {
    if is_leap(year) {
        366
    } else {
        365
    }
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 => {
            if is_leap(year) {
                29
            } else {
                28
            }
        }
        _ => 0,
    }
}

/// Whether the date part is a real date, zero parts allowed (MySQL keeps
/// '2024-00-00' and '0000-00-00'; sql_mode decides whether they may be
/// stored), and the time fields are in range for the kind.
pub fn is_valid(t: &Temporal) -> bool {
    if t.minute > 59 || t.second > 59 || t.micro > 999_999 {
        return false;
    }
    match t.kind {
        TemporalKind::Time => t.hour <= TIME_MAX_HOUR,
        _ => {
            if t.hour > 23 || t.year > 9999 || t.month > 12 {
                return false;
            }
            t.day == 0 || t.month == 0 || (t.day as u32) <= days_in_month(t.year as i64, t.month as u32)
        }
    }
}

// ---------------------------------------------------------------------------
// Day numbers

/// MySQL's `calc_daynr`: TO_DAYS of a date (0 for '0000-00-00').
pub fn daynr(year: i64, month: i64, day: i64) -> i64 {
    if year == 0 && month == 0 {
        return 0;
    }
    let mut y = year;
    let mut delsum = 365 * y + 31 * (month - 1) + day;
    if month <= 2 {
        y -= 1;
    } else {
        delsum -= (month * 4 + 23) / 10;
    }
    // C's truncating division, as MySQL computes it.
    let temp = ((y / 100 + 1) * 3) / 4;
    delsum + y / 4 - temp
}

/// MySQL's `get_date_from_daynr`: FROM_DAYS; (0, 0, 0) outside
/// 366..=MAX_DAY_NUMBER.
pub fn from_daynr(daynr: i64) -> (u16, u8, u8) {
    if !(366..=MAX_DAY_NUMBER).contains(&daynr) {
        return (0, 0, 0);
    }
    let mut year = daynr * 100 / 36525;
    let temp = (((year - 1) / 100 + 1) * 3) / 4;
    let mut day_of_year = daynr - year * 365 - (year - 1) / 4 + temp;
    let mut diy;
    loop {
        diy = days_in_year(year);
        if day_of_year <= diy {
            break;
        }
        day_of_year -= diy;
        year += 1;
    }
    let mut leap_day = 0;
    if diy == 366 && day_of_year > 31 + 28 {
        day_of_year -= 1;
        if day_of_year == 31 + 28 {
            leap_day = 1;
        }
    }
    let mut month = 1;
    while month < 12 && day_of_year > days_in_month(1, month) as i64 {
        day_of_year -= days_in_month(1, month) as i64;
        month += 1;
    }
    (year as u16, month as u8, (day_of_year + leap_day) as u8)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm): the calendar time zones and Unix timestamps use.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Day of the week, 0 = Monday .. 6 = Sunday (WEEKDAY()).
pub fn weekday(t: &Temporal) -> u32 {
    calc_weekday(daynr(t.year as i64, t.month as i64, t.day as i64), false)
}

/// MySQL's `calc_weekday`: 0 = Monday, or 0 = Sunday when `sunday_first`.
fn calc_weekday(daynr: i64, sunday_first: bool) -> u32 {
    (daynr + 5 + if sunday_first { 1 } else { 0 }).rem_euclid(7) as u32
}

/// Day of the year, 1..=366 (DAYOFYEAR()).
pub fn day_of_year(t: &Temporal) -> i64 {
    daynr(t.year as i64, t.month as i64, t.day as i64) - daynr(t.year as i64, 1, 1) + 1
}

const WEEK_MONDAY_FIRST: u32 = 1;
const WEEK_YEAR: u32 = 2;
const WEEK_FIRST_WEEKDAY: u32 = 4;

/// The behaviour flags of WEEK()'s `mode` (0..=7), as MySQL's `week_mode`.
pub fn week_mode(mode: u32) -> u32 {
    let mut f = mode & 7;
    if f & WEEK_MONDAY_FIRST == 0 {
        f ^= WEEK_FIRST_WEEKDAY;
    }
    f
}

/// MySQL's `calc_week`: the week number for behaviour flags `flags` (see
/// [`week_mode`]) and the year the week belongs to.
pub fn calc_week(t: &Temporal, flags: u32) -> (u32, i64) {
    let dnr = daynr(t.year as i64, t.month as i64, t.day as i64);
    let mut first_daynr = daynr(t.year as i64, 1, 1);
    let monday_first = flags & WEEK_MONDAY_FIRST != 0;
    let mut week_year = flags & WEEK_YEAR != 0;
    let first_weekday = flags & WEEK_FIRST_WEEKDAY != 0;
    let mut wd = calc_weekday(first_daynr, !monday_first) as i64;
    let mut year = t.year as i64;
    if t.month == 1 && (t.day as i64) <= 7 - wd {
        if !week_year && ((first_weekday && wd != 0) || (!first_weekday && wd >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first_daynr -= days;
        wd = (wd + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && wd != 0) || (!first_weekday && wd >= 4) {
        dnr - (first_daynr + (7 - wd))
    } else {
        dnr - (first_daynr - wd)
    };
    if week_year && days >= 52 * 7 {
        let wd2 = (wd + days_in_year(year)).rem_euclid(7);
        if (!first_weekday && wd2 < 4) || (first_weekday && wd2 == 0) {
            return (1, year + 1);
        }
    }
    ((days.div_euclid(7) + 1) as u32, year)
}

// ---------------------------------------------------------------------------
// Parsing text

/// The result of reading a date or time from text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub t: Temporal,
    /// Something was dropped or clamped (trailing characters, fraction
    /// digits past 6, a TIME past 838:59:59): MySQL keeps the value with
    /// warning 1292 "Truncated incorrect ... value".
    pub truncated: bool,
    /// Only fraction digits past the sixth were dropped (a Note, not a
    /// Warning, in MariaDB).
    pub frac_only: bool,
}

/// Reads a date/datetime/time from text as MySQL does ('2024-01-31',
/// '2024-01-31 10:00:00.123', '20240131', '10:00', '1 10:00:00' ...);
/// `None` if it is not one. A value MySQL keeps with a warning (trailing
/// garbage, a TIME clamped to 838:59:59) is returned; use [`parse_ext`] to
/// learn about the warning. For `Date` the time part is dropped; `fsp` is
/// the number of fraction digits written (at most 6).
pub fn parse(s: &[u8], kind: TemporalKind) -> Option<Temporal> {
    parse_ext(s, kind).map(|p| p.t)
}

/// [`parse`], saying whether MySQL would warn about truncation.
pub fn parse_ext(s: &[u8], kind: TemporalKind) -> Option<Parsed> {
    match kind {
        TemporalKind::Time => parse_time(s),
        _ => {
            let mut p = parse_datetime(s)?;
            if kind == TemporalKind::Date {
                p.t.kind = TemporalKind::Date;
                p.t.hour = 0;
                p.t.minute = 0;
                p.t.second = 0;
                p.t.micro = 0;
                p.t.fsp = 0;
            } else {
                p.t.kind = TemporalKind::DateTime;
            }
            Some(p)
        }
    }
}

/// Reads a date or datetime; the kind says which the text had (a date
/// alone gives `Date`).
pub fn parse_datetime(s: &[u8]) -> Option<Parsed> {
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    let digits = i - start;
    if digits == 0 {
        return None;
    }
    let mut t = zero(TemporalKind::Date);
    let mut truncated = false;
    let mut frac_only = false;
    if digits > 4 && (i == s.len() || s[i] == b'.' || s[i].is_ascii_whitespace()) {
        // Digits only: YYMMDD, YYYYMMDD, YYMMDDhhmmss, YYYYMMDDhhmmss.
        let d = &s[start..i];
        let year_len = if digits == 4 || digits == 8 || digits >= 14 { 4 } else { 2 };
        let rest = digits.checked_sub(year_len)?;
        if rest < 4 || rest % 2 != 0 || rest > 10 {
            return None;
        }
        let num =
            |a: usize, b: usize| -> u32 { d[a..b].iter().fold(0u32, |n, c| n * 10 + (c - b'0') as u32) };
        let mut y = num(0, year_len);
        if year_len == 2 {
            y += if y < 70 { 2000 } else { 1900 };
        }
        t.year = y as u16;
        t.month = num(year_len, year_len + 2) as u8;
        t.day = num(year_len + 2, year_len + 4) as u8;
        let mut p = year_len + 4;
        let mut fields = [0u32; 3];
        let mut nf = 0;
        while p + 2 <= digits && nf < 3 {
            fields[nf] = num(p, p + 2);
            nf += 1;
            p += 2;
        }
        if nf > 0 {
            t.kind = TemporalKind::DateTime;
            t.hour = fields[0];
            t.minute = fields[1] as u8;
            t.second = fields[2] as u8;
            if i < s.len() && s[i] == b'.' {
                let (micro, fsp, extra, n) = read_fraction(&s[i + 1..]);
                t.micro = micro;
                t.fsp = fsp;
                frac_only = extra;
                i += 1 + n;
            }
        } else if i < s.len() && s[i] == b'.' {
            truncated = true;
            i = s.len();
        }
    } else {
        // Delimited: year, month, day [ (space|T) hour [: minute [: second [. fraction]]]].
        let year_digits = digits;
        let mut vals = [0u64; 6];
        vals[0] = atoi(&s[start..i]);
        let mut n = 1;
        while n < 6 && i < s.len() {
            let c = s[i];
            let sep_ok = if n == 3 {
                c == b' ' || c == b'T' || c.is_ascii_punctuation()
            } else {
                c.is_ascii_punctuation()
            };
            if !sep_ok {
                break;
            }
            let mut j = i + 1;
            if n == 3 && c == b' ' {
                while j < s.len() && s[j] == b' ' {
                    j += 1;
                }
            }
            let ds = j;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            if j == ds {
                break;
            }
            vals[n] = atoi(&s[ds..j]);
            n += 1;
            i = j;
        }
        if n < 3 {
            return None;
        }
        if vals[0] > 9999 || vals[1] > 99 || vals[2] > 99 {
            return None;
        }
        let mut y = vals[0] as u32;
        if year_digits <= 2 {
            y += if y < 70 { 2000 } else { 1900 };
        }
        t.year = y as u16;
        t.month = vals[1] as u8;
        t.day = vals[2] as u8;
        if n > 3 {
            t.kind = TemporalKind::DateTime;
            if vals[3] > 99 || vals[4] > 99 || vals[5] > 99 {
                return None;
            }
            t.hour = vals[3] as u32;
            t.minute = vals[4] as u8;
            t.second = vals[5] as u8;
            if n == 6 && i < s.len() && s[i] == b'.' {
                let (micro, fsp, extra, k) = read_fraction(&s[i + 1..]);
                t.micro = micro;
                t.fsp = fsp;
                frac_only = extra;
                i += 1 + k;
            }
        } else if i < s.len() && s[i] == b'T' {
            i += 1;
        }
    }
    if s[i..].iter().any(|c| !c.is_ascii_whitespace()) {
        truncated = true;
    }
    if !is_valid(&t) {
        return None;
    }
    Some(Parsed { t, truncated: truncated || frac_only, frac_only: frac_only && !truncated })
}

fn atoi(d: &[u8]) -> u64 {
    d.iter().fold(0u64, |n, c| n.saturating_mul(10).saturating_add((c - b'0') as u64))
}

/// Reads fraction digits: (micros, digits kept, more than 6 digits, bytes read).
fn read_fraction(s: &[u8]) -> (u32, u8, bool, usize) {
    let mut n = 0;
    while n < s.len() && s[n].is_ascii_digit() {
        n += 1;
    }
    let kept = n.min(6);
    let mut micro = 0u32;
    for c in &s[..kept] {
        micro = micro * 10 + (c - b'0') as u32;
    }
    for _ in kept..6 {
        micro *= 10;
    }
    (micro, kept as u8, n > 6, n)
}

/// Reads a TIME: 'hh:mm:ss[.f]', 'hh:mm', 'D hh[:mm[:ss]]', 'hhmmss', 'ss',
/// a sign, or a whole datetime (its time part).
fn parse_time(s: &[u8]) -> Option<Parsed> {
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && s[i] == b'-' {
        neg = true;
        i += 1;
    }
    let start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    let digits = i - start;
    if digits == 0 {
        return None;
    }
    // A whole datetime: a date delimiter after the first number, or 12+ digits.
    let looks_datetime = (i < s.len() && s[i].is_ascii_punctuation() && s[i] != b':' && s[i] != b'.')
        || (digits >= 12 && (i == s.len() || s[i] == b'.' || s[i].is_ascii_whitespace()));
    if looks_datetime && !neg {
        if let Some(p) = parse_datetime(&s[start..]) {
            if p.t.kind == TemporalKind::DateTime {
                let mut t = p.t;
                t.kind = TemporalKind::Time;
                t.year = 0;
                t.month = 0;
                t.day = 0;
                return Some(Parsed { t, ..p });
            }
        } else if digits >= 12 || i < s.len() && s[i] == b'-' && date_like(&s[start..]) {
            return None;
        }
    }
    let first = atoi(&s[start..i]);
    let mut truncated = false;
    let mut frac_only = false;
    let (mut hours, minutes, seconds);
    let mut micro = 0u32;
    let mut fsp = 0u8;
    let is_day_form = i + 1 < s.len() && s[i] == b' ' && {
        let mut j = i;
        while j < s.len() && s[j] == b' ' {
            j += 1;
        }
        let ds = j;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
        }
        j > ds && j < s.len() && s[j] == b':'
    };
    if is_day_form || (i < s.len() && s[i] == b':') {
        let mut days = 0u64;
        if is_day_form {
            days = first;
            while s[i] == b' ' {
                i += 1;
            }
            let ds = i;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
            hours = atoi(&s[ds..i]);
        } else {
            hours = first;
        }
        let mut f = [0u64; 2];
        let mut nf = 0;
        while nf < 2 && i < s.len() && s[i] == b':' {
            let ds = i + 1;
            let mut j = ds;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            if j == ds {
                break;
            }
            f[nf] = atoi(&s[ds..j]);
            nf += 1;
            i = j;
        }
        minutes = f[0];
        seconds = f[1];
        hours = hours.saturating_add(days.saturating_mul(24));
        if nf == 2 && i < s.len() && s[i] == b'.' {
            let (m, d, extra, k) = read_fraction(&s[i + 1..]);
            micro = m;
            fsp = d;
            frac_only = extra;
            i += 1 + k;
        }
    } else {
        // [[[H]H]MM]SS as one number.
        seconds = first % 100;
        minutes = (first / 100) % 100;
        hours = first / 10_000;
        if i < s.len() && s[i] == b'.' {
            let (m, d, extra, k) = read_fraction(&s[i + 1..]);
            micro = m;
            fsp = d;
            frac_only = extra;
            i += 1 + k;
        }
    }
    if s[i..].iter().any(|c| !c.is_ascii_whitespace()) {
        truncated = true;
    }
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let total = ((hours.min(1 << 40) * 60 + minutes) * 60 + seconds) as i64 * 1_000_000 + micro as i64;
    let (t, clamped) = time_from_micros(if neg { -total } else { total }, fsp);
    let truncated = truncated || clamped;
    Some(Parsed { t, truncated: truncated || frac_only, frac_only: frac_only && !truncated })
}

/// 'YYYY-MM-DD...' with a date separator: whatever follows fails as a
/// datetime, it is not a time either.
fn date_like(s: &[u8]) -> bool {
    s.iter().filter(|c| **c == b'-').count() >= 2
}

// ---------------------------------------------------------------------------
// Numbers

/// A date/datetime from a number as MySQL's `number_to_datetime` reads it
/// (20240131, 240131, 20240131101112, 240131101112); a TIME from
/// [[H]HMM]SS (101112 is 10:11:12). Fractions give microseconds. `None`
/// when it is not one; the bool is true when a TIME was clamped.
pub fn from_number(n: f64, kind: TemporalKind) -> Option<(Temporal, bool)> {
    if !n.is_finite() {
        return None;
    }
    let neg = n < 0.0;
    let a = n.abs();
    let ip = a.trunc();
    let micro = ((a - ip) * 1e6).round().min(999_999.0) as u32;
    let fsp = if micro == 0 { 0 } else { frac_digits(micro) };
    if ip > 9.9e18 {
        return None;
    }
    from_parts(neg, ip as u64, micro, fsp, kind)
}

/// [`from_number`] for an exact integer.
pub fn from_int(n: i128, kind: TemporalKind) -> Option<(Temporal, bool)> {
    if n.unsigned_abs() > u64::MAX as u128 {
        return None;
    }
    from_parts(n < 0, n.unsigned_abs() as u64, 0, 0, kind)
}

/// [`from_number`] for decimal text ('20240131.5').
pub fn from_decimal_str(s: &str, kind: TemporalKind) -> Option<(Temporal, bool)> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (ip, fp) = s.split_once('.').unwrap_or((s, ""));
    let ip: u64 = if ip.is_empty() { 0 } else { ip.parse().ok()? };
    let (micro, fsp, _, _) = read_fraction(fp.as_bytes());
    let fsp = if micro == 0 { 0 } else { fsp };
    from_parts(neg, ip, micro, fsp, kind)
}

fn frac_digits(micro: u32) -> u8 {
    let mut d = 6;
    let mut m = micro;
    while d > 0 && m.is_multiple_of(10) {
        m /= 10;
        d -= 1;
    }
    d
}

fn from_parts(neg: bool, nr: u64, micro: u32, fsp: u8, kind: TemporalKind) -> Option<(Temporal, bool)> {
    if kind == TemporalKind::Time && nr <= 99_999_999_999 {
        if (nr % 100 > 59 || (nr / 100) % 100 > 59) && nr < 10_000_000_000 {
            return None;
        }
        if nr > 8_385_959 {
            if nr >= 10_000_000_000 {
                // Fall through to a datetime's time part.
            } else {
                let (t, _) = time_from_micros(if neg { -1 } else { 1 } * i64::MAX, 0);
                return Some((t, true));
            }
        } else {
            let s = nr % 100;
            let m = (nr / 100) % 100;
            if s > 59 || m > 59 {
                return None;
            }
            let h = nr / 10_000;
            let us = (((h * 60 + m) * 60 + s) * 1_000_000 + micro as u64) as i64;
            let (t, c) = time_from_micros(if neg { -us } else { us }, fsp);
            return Some((t, c));
        }
    }
    if neg {
        return None;
    }
    let mut nr = nr;
    if nr == 0 {
        let mut t =
            zero(if kind == TemporalKind::Date { TemporalKind::Date } else { TemporalKind::DateTime });
        t.kind = kind;
        return Some((t, false));
    }
    let orig = nr;
    if nr >= 10_000_101_000_000 {
        if nr > 99_999_999_999_999 {
            return None;
        }
    } else {
        if nr < 101 {
            return None;
        }
        if nr <= 691_231 {
            nr = (nr + 20_000_000) * 1_000_000;
        } else if nr < 700_101 {
            return None;
        } else if nr <= 991_231 {
            nr = (nr + 19_000_000) * 1_000_000;
        } else if nr < 10_000_101 {
            return None;
        } else if nr <= 99_991_231 {
            nr *= 1_000_000;
        } else if nr < 101_000_000 {
            return None;
        } else if nr <= 691_231_235_959 {
            nr += 20_000_000_000_000;
        } else if nr < 700_101_000_000 {
            return None;
        } else if nr <= 991_231_235_959 {
            nr += 19_000_000_000_000;
        }
    }
    let date = nr / 1_000_000;
    let time = nr % 1_000_000;
    let has_time = orig > 99_991_231;
    let mut t = datetime(
        (date / 10_000) as u16,
        ((date / 100) % 100) as u8,
        (date % 100) as u8,
        (time / 10_000) as u32,
        ((time / 100) % 100) as u8,
        (time % 100) as u8,
        micro,
        fsp,
    );
    if !is_valid(&t) {
        return None;
    }
    match kind {
        TemporalKind::Date => {
            t = to_date(&t);
        }
        TemporalKind::DateTime => {
            if !has_time {
                t.fsp = 0;
                t.micro = 0;
            }
        }
        TemporalKind::Time => {
            t.kind = TemporalKind::Time;
            t.year = 0;
            t.month = 0;
            t.day = 0;
        }
    }
    Some((t, false))
}

/// The date part of a date/datetime.
fn to_date(t: &Temporal) -> Temporal {
    Temporal::date(t.year, t.month, t.day)
}

// ---------------------------------------------------------------------------
// Fractions and conversions

/// Cuts the fraction to `fsp` digits. MariaDB truncates by default (it
/// rounds only under sql_mode TIME_ROUND_FRACTIONAL, see
/// [`round_fsp_rounding`]).
pub fn round_fsp(t: &Temporal, fsp: u8) -> Temporal {
    let fsp = fsp.min(6);
    let mut r = *t;
    let div = 10u32.pow(6 - fsp as u32);
    r.micro = t.micro / div * div;
    r.fsp = fsp;
    if r.kind == TemporalKind::Date {
        r.fsp = 0;
    }
    if r.kind == TemporalKind::Time && time_to_micros(&r) == 0 {
        r.neg = false;
    }
    r
}

/// Rounds the fraction to `fsp` digits, half away from zero, carrying into
/// the seconds (TIME_ROUND_FRACTIONAL). `None` if a datetime overflows
/// past 9999-12-31.
pub fn round_fsp_rounding(t: &Temporal, fsp: u8) -> Option<Temporal> {
    let fsp = fsp.min(6);
    let div = 10u32.pow(6 - fsp as u32) as i64;
    let rem = t.micro as i64 % div;
    if rem == 0 || t.kind == TemporalKind::Date {
        return Some(round_fsp(t, fsp));
    }
    let up = if rem * 2 >= div { div - rem } else { -rem };
    match t.kind {
        TemporalKind::Time => {
            let us = time_to_micros(t);
            let us = if us < 0 { us - up } else { us + up };
            Some(time_from_micros(us, fsp).0)
        }
        _ => {
            let us = datetime_to_micros(t)? + up;
            let mut r = micros_to_datetime(us)?;
            r.fsp = fsp;
            Some(r)
        }
    }
}

/// A datetime as microseconds since day 0 of MySQL's day numbers.
pub fn datetime_to_micros(t: &Temporal) -> Option<i64> {
    let d = daynr(t.year as i64, t.month as i64, t.day as i64);
    Some(d * MICROS_PER_DAY + time_to_micros(t))
}

/// The inverse of [`datetime_to_micros`]; `None` outside 0001..9999
/// (MySQL's day-number range).
pub fn micros_to_datetime(us: i64) -> Option<Temporal> {
    let d = us.div_euclid(MICROS_PER_DAY);
    let r = us.rem_euclid(MICROS_PER_DAY);
    if !(0..=MAX_DAY_NUMBER).contains(&d) {
        return None;
    }
    let (y, m, dd) = from_daynr(d);
    let s = r / 1_000_000;
    Some(datetime(
        y,
        m,
        dd,
        (s / 3600) as u32,
        ((s / 60) % 60) as u8,
        (s % 60) as u8,
        (r % 1_000_000) as u32,
        6,
    ))
}

/// Converts between kinds as CAST does: a date becomes midnight, a
/// datetime's time is dropped (to DATE) or kept alone (to TIME), a TIME
/// counts from `today` (a date) as an interval. `None` when the result
/// leaves the datetime range.
pub fn convert(t: &Temporal, to: TemporalKind, today: &Temporal) -> Option<Temporal> {
    use TemporalKind::*;
    let mut r = *t;
    match (t.kind, to) {
        (a, b) if a == b => {}
        (Date, DateTime) => {
            r.kind = DateTime;
        }
        (DateTime, Date) => r = to_date(t),
        (Date, Time) => {
            r = zero(Time);
        }
        (DateTime, Time) => {
            r.kind = Time;
            r.year = 0;
            r.month = 0;
            r.day = 0;
            r.neg = false;
        }
        (Time, DateTime) | (Time, Date) => {
            let base = daynr(today.year as i64, today.month as i64, today.day as i64) * MICROS_PER_DAY;
            let mut d = micros_to_datetime(base + time_to_micros(t))?;
            d.fsp = t.fsp;
            r = if to == Date { to_date(&d) } else { d };
        }
        _ => {}
    }
    Some(r)
}

// ---------------------------------------------------------------------------
// Intervals

/// The unit of an INTERVAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalUnit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    SecondMicrosecond,
    MinuteMicrosecond,
    MinuteSecond,
    HourMicrosecond,
    HourSecond,
    HourMinute,
    DayMicrosecond,
    DaySecond,
    DayMinute,
    DayHour,
    YearMonth,
}

impl IntervalUnit {
    /// The unit from its SQL name ('DAY', 'day_second'), case-insensitive.
    pub fn by_name(name: &str) -> Option<IntervalUnit> {
        use IntervalUnit::*;
        Some(match name.trim().to_ascii_uppercase().as_str() {
            "MICROSECOND" => Microsecond,
            "SECOND" => Second,
            "MINUTE" => Minute,
            "HOUR" => Hour,
            "DAY" => Day,
            "WEEK" => Week,
            "MONTH" => Month,
            "QUARTER" => Quarter,
            "YEAR" => Year,
            "SECOND_MICROSECOND" => SecondMicrosecond,
            "MINUTE_MICROSECOND" => MinuteMicrosecond,
            "MINUTE_SECOND" => MinuteSecond,
            "HOUR_MICROSECOND" => HourMicrosecond,
            "HOUR_SECOND" => HourSecond,
            "HOUR_MINUTE" => HourMinute,
            "DAY_MICROSECOND" => DayMicrosecond,
            "DAY_SECOND" => DaySecond,
            "DAY_MINUTE" => DayMinute,
            "DAY_HOUR" => DayHour,
            "YEAR_MONTH" => YearMonth,
            _ => return None,
        })
    }

    /// Whether the unit moves by months (calendar arithmetic, day clamped).
    pub fn is_months(self) -> bool {
        matches!(
            self,
            IntervalUnit::Month | IntervalUnit::Quarter | IntervalUnit::Year | IntervalUnit::YearMonth
        )
    }

    /// Whether the unit has a part finer than a day (a DATE becomes a DATETIME).
    pub fn has_time(self) -> bool {
        !self.is_months() && !matches!(self, IntervalUnit::Day | IntervalUnit::Week)
    }

    /// The fields of a composite unit's string, largest first, and whether
    /// the last is microseconds.
    fn fields(self) -> (usize, bool) {
        use IntervalUnit::*;
        match self {
            SecondMicrosecond => (2, true),
            MinuteMicrosecond => (3, true),
            MinuteSecond => (2, false),
            HourMicrosecond => (4, true),
            HourSecond => (3, false),
            HourMinute => (2, false),
            DayMicrosecond => (5, true),
            DaySecond => (4, false),
            DayMinute => (3, false),
            DayHour => (2, false),
            YearMonth => (2, false),
            _ => (1, self == Microsecond),
        }
    }
}

/// An interval's amount, split into fields as MySQL's `INTERVAL` struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    pub neg: bool,
    pub years: u64,
    pub months: u64,
    pub days: u64,
    pub hours: u64,
    pub minutes: u64,
    pub seconds: u64,
    pub micros: u64,
}

impl Interval {
    /// An interval of a simple unit from a whole number (its sign gives
    /// the direction).
    pub fn from_int(n: i64, unit: IntervalUnit) -> Interval {
        let mut iv = Interval { neg: n < 0, ..Interval::default() };
        let a = n.unsigned_abs();
        use IntervalUnit::*;
        match unit {
            Microsecond => iv.micros = a,
            Second => iv.seconds = a,
            Minute => iv.minutes = a,
            Hour => iv.hours = a,
            Day => iv.days = a,
            Week => iv.days = a.saturating_mul(7),
            Month => iv.months = a,
            Quarter => iv.months = a.saturating_mul(3),
            Year => iv.years = a,
            _ => return Interval::from_str_unit(&n.to_string(), unit).unwrap_or_default(),
        }
        iv
    }

    /// SECOND with a fraction ('1.5' SECOND is 1.5 s).
    pub fn from_seconds(neg: bool, secs: u64, micros: u64) -> Interval {
        Interval { neg, seconds: secs, micros, ..Interval::default() }
    }

    /// An interval from text as MySQL's `get_interval_info` reads it: the
    /// runs of digits are the unit's fields, right-aligned ('1:2' DAY_SECOND
    /// is 1 minute 2 seconds); a leading '-' negates; the microsecond field
    /// counts as a fraction ('1.5' SECOND_MICROSECOND is 1 s 500000 us).
    /// `None` when there are more numbers than fields.
    pub fn from_str_unit(s: &str, unit: IntervalUnit) -> Option<Interval> {
        let b = s.trim_start().as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if neg {
            i = 1;
        }
        let (count, msec) = unit.fields();
        let mut vals: Vec<u64> = Vec::new();
        let mut last_len = 0;
        while i < b.len() && !b[i].is_ascii_digit() {
            i += 1;
        }
        while i < b.len() && vals.len() < count {
            let ds = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            last_len = i - ds;
            vals.push(atoi(&b[ds..i]));
            while i < b.len() && !b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < b.len() && b[i..].iter().any(|c| c.is_ascii_digit()) {
            return None;
        }
        if vals.is_empty() {
            vals.push(0);
        }
        if msec {
            // The last number read is the fraction, fewer numbers than
            // fields too (they are right-aligned below): '5' is 500000 us,
            // '000005' is 5.
            let last = vals.len() - 1;
            let v = vals[last];
            vals[last] = if last_len < 6 {
                v * 10u64.pow((6 - last_len) as u32)
            } else {
                v / 10u64.pow((last_len - 6) as u32)
            };
        }
        // Right-align.
        let mut f = vec![0u64; count];
        let off = count - vals.len();
        f[off..].copy_from_slice(&vals);
        let mut iv = Interval { neg, ..Interval::default() };
        use IntervalUnit::*;
        match unit {
            Microsecond => iv.micros = f[0],
            Second => iv.seconds = f[0],
            Minute => iv.minutes = f[0],
            Hour => iv.hours = f[0],
            Day => iv.days = f[0],
            Week => iv.days = f[0].saturating_mul(7),
            Month => iv.months = f[0],
            Quarter => iv.months = f[0].saturating_mul(3),
            Year => iv.years = f[0],
            SecondMicrosecond => (iv.seconds, iv.micros) = (f[0], f[1]),
            MinuteMicrosecond => (iv.minutes, iv.seconds, iv.micros) = (f[0], f[1], f[2]),
            MinuteSecond => (iv.minutes, iv.seconds) = (f[0], f[1]),
            HourMicrosecond => (iv.hours, iv.minutes, iv.seconds, iv.micros) = (f[0], f[1], f[2], f[3]),
            HourSecond => (iv.hours, iv.minutes, iv.seconds) = (f[0], f[1], f[2]),
            HourMinute => (iv.hours, iv.minutes) = (f[0], f[1]),
            DayMicrosecond => {
                (iv.days, iv.hours, iv.minutes, iv.seconds, iv.micros) = (f[0], f[1], f[2], f[3], f[4])
            }
            DaySecond => (iv.days, iv.hours, iv.minutes, iv.seconds) = (f[0], f[1], f[2], f[3]),
            DayMinute => (iv.days, iv.hours, iv.minutes) = (f[0], f[1], f[2]),
            DayHour => (iv.days, iv.hours) = (f[0], f[1]),
            YearMonth => (iv.years, iv.months) = (f[0], f[1]),
        }
        Some(iv)
    }

    fn total_micros(&self) -> Option<i128> {
        let v = (((self.days as i128 * 24 + self.hours as i128) * 60 + self.minutes as i128) * 60
            + self.seconds as i128)
            * 1_000_000
            + self.micros as i128;
        Some(if self.neg { -v } else { v })
    }
}

/// `t` + `iv` (DATE_ADD); `t - iv` when `iv.neg`. Month arithmetic clamps
/// the day to the month's end ('2024-01-31' + 1 MONTH is '2024-02-29').
/// `None` when the result leaves 0000-01-01..9999-12-31 (MySQL returns
/// NULL with a warning). A DATE stays a DATE unless the interval has a
/// time part; a TIME stays a TIME (clamped to ±838:59:59; month units give
/// `None`).
pub fn add_interval(t: &Temporal, iv: &Interval, unit: IntervalUnit) -> Option<Temporal> {
    if t.kind == TemporalKind::Time {
        if unit.is_months() {
            return None;
        }
        let us = time_to_micros(t) as i128 + iv.total_micros()?;
        let us = us.clamp(i64::MIN as i128 / 2, i64::MAX as i128 / 2) as i64;
        let fsp = if iv.micros != 0 { 6 } else { t.fsp };
        let (r, clamped) = time_from_micros(us, fsp);
        if clamped {
            return None;
        }
        return Some(r);
    }
    if unit.is_months() {
        let m = (iv.years as i128) * 12 + iv.months as i128;
        let m = if iv.neg { -m } else { m };
        let period = t.year as i128 * 12 + t.month as i128 - 1 + m;
        if !(0..120_000).contains(&period) {
            return None;
        }
        let mut r = *t;
        r.year = (period / 12) as u16;
        r.month = (period % 12 + 1) as u8;
        let dim = days_in_month(r.year as i64, r.month as u32) as u8;
        if r.day > dim {
            r.day = dim;
        }
        return Some(r);
    }
    let base = daynr(t.year as i64, t.month as i64, t.day as i64) as i128 * MICROS_PER_DAY as i128
        + time_to_micros(t) as i128;
    let us = base + iv.total_micros()?;
    let days = us.div_euclid(MICROS_PER_DAY as i128);
    if !(0..=MAX_DAY_NUMBER as i128).contains(&days) {
        return None;
    }
    let mut r = micros_to_datetime(us as i64)?;
    if days < 366 {
        // MySQL's FROM_DAYS gives 0000-00-00 for the first year; keep
        // the calendar of year 0 from the absolute count instead.
        return None;
    }
    let keep_date = t.kind == TemporalKind::Date && !unit.has_time();
    if keep_date {
        r = to_date(&r);
    } else {
        r.fsp = if iv.micros != 0 || unit == IntervalUnit::Microsecond { 6 } else { t.fsp };
        if t.kind == TemporalKind::Date && r.fsp == 0 {
            r.fsp = 0;
        }
    }
    Some(r)
}

// ---------------------------------------------------------------------------
// DATE_FORMAT

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

pub fn month_name(m: u8) -> Option<&'static str> {
    MONTH_NAMES.get((m as usize).checked_sub(1)?).copied()
}

pub fn day_name(weekday: u32) -> &'static str {
    DAY_NAMES[(weekday % 7) as usize]
}

/// DATE_FORMAT / TIME_FORMAT: `fmt` with MySQL's % specifiers filled from
/// `t`. `None` (SQL NULL) where MySQL gives NULL: a name or week of a zero
/// month or date, or a date specifier in TIME_FORMAT (`time_only`).
pub fn format(t: &Temporal, fmt: &[u8], time_only: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(fmt.len() + 16);
    let mut i = 0;
    let is_time = t.kind == TemporalKind::Time;
    let dnr = || daynr(t.year as i64, t.month as i64, t.day as i64);
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' || i + 1 == fmt.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let sp = fmt[i + 1];
        i += 2;
        if time_only && b"aDMbcdeUuVvWwXxYyj".contains(&sp) {
            // TIME_FORMAT gives NULL for date specifiers.
            return None;
        }
        let h12 = |h: u32| if h.is_multiple_of(12) { 12 } else { h % 12 };
        match sp {
            b'M' => out.extend_from_slice(month_name(t.month)?.as_bytes()),
            b'b' => out.extend_from_slice(&month_name(t.month)?.as_bytes()[..3]),
            b'W' | b'a' => {
                if is_time || (t.month == 0 && t.year == 0) {
                    return None;
                }
                let n = day_name(calc_weekday(dnr(), false));
                out.extend_from_slice(if sp == b'W' { n.as_bytes() } else { &n.as_bytes()[..3] });
            }
            b'D' => {
                if is_time {
                    return None;
                }
                let d = t.day as u32;
                out.extend_from_slice(d.to_string().as_bytes());
                let suf = if (11..=13).contains(&(d % 100)) {
                    "th"
                } else {
                    match d % 10 {
                        1 => "st",
                        2 => "nd",
                        3 => "rd",
                        _ => "th",
                    }
                };
                out.extend_from_slice(suf.as_bytes());
            }
            b'Y' => out.extend_from_slice(format!("{:04}", t.year).as_bytes()),
            b'y' => out.extend_from_slice(format!("{:02}", t.year % 100).as_bytes()),
            b'm' => out.extend_from_slice(format!("{:02}", t.month).as_bytes()),
            b'c' => out.extend_from_slice(t.month.to_string().as_bytes()),
            b'd' => out.extend_from_slice(format!("{:02}", t.day).as_bytes()),
            b'e' => out.extend_from_slice(t.day.to_string().as_bytes()),
            b'f' => out.extend_from_slice(format!("{:06}", t.micro).as_bytes()),
            b'H' => out.extend_from_slice(format!("{:02}", t.hour).as_bytes()),
            b'h' | b'I' => out.extend_from_slice(format!("{:02}", h12(t.hour)).as_bytes()),
            b'i' => out.extend_from_slice(format!("{:02}", t.minute).as_bytes()),
            b'j' => {
                if is_time {
                    return None;
                }
                out.extend_from_slice(format!("{:03}", day_of_year(t)).as_bytes())
            }
            b'k' => out.extend_from_slice(t.hour.to_string().as_bytes()),
            b'l' => out.extend_from_slice(h12(t.hour).to_string().as_bytes()),
            b'p' => out.extend_from_slice(if t.hour % 24 < 12 { b"AM" } else { b"PM" }),
            b'r' => out.extend_from_slice(
                format!(
                    "{:02}:{:02}:{:02} {}",
                    h12(t.hour),
                    t.minute,
                    t.second,
                    if t.hour % 24 < 12 { "AM" } else { "PM" }
                )
                .as_bytes(),
            ),
            b'S' | b's' => out.extend_from_slice(format!("{:02}", t.second).as_bytes()),
            b'T' => {
                out.extend_from_slice(format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second).as_bytes())
            }
            b'U' | b'u' | b'V' | b'v' | b'X' | b'x' => {
                if is_time || (t.month == 0 && t.year == 0) {
                    return None;
                }
                let flags = match sp {
                    b'U' => WEEK_FIRST_WEEKDAY,
                    b'u' => WEEK_MONDAY_FIRST,
                    b'V' | b'X' => WEEK_YEAR | WEEK_FIRST_WEEKDAY,
                    _ => WEEK_MONDAY_FIRST | WEEK_YEAR,
                };
                let (w, y) = calc_week(t, flags);
                if sp == b'X' || sp == b'x' {
                    out.extend_from_slice(format!("{y:04}").as_bytes());
                } else {
                    out.extend_from_slice(format!("{w:02}").as_bytes());
                }
            }
            b'w' => {
                if is_time || (t.month == 0 && t.year == 0) {
                    return None;
                }
                out.extend_from_slice(calc_weekday(dnr(), true).to_string().as_bytes())
            }
            other => out.push(other),
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// STR_TO_DATE

/// The kind STR_TO_DATE returns for a format (fixed when the statement is
/// prepared in MySQL): DATETIME when it has date and time specifiers, DATE
/// or TIME when only one sort, with fsp 6 when it has %f.
pub fn str_to_date_kind(fmt: &[u8]) -> (TemporalKind, u8) {
    let (mut date, mut time, mut frac) = (false, false, false);
    let mut i = 0;
    while i + 1 < fmt.len() {
        if fmt[i] == b'%' {
            match fmt[i + 1] {
                b'a' | b'b' | b'c' | b'D' | b'd' | b'e' | b'j' | b'M' | b'm' | b'U' | b'u' | b'V' | b'v'
                | b'W' | b'w' | b'X' | b'x' | b'Y' | b'y' => date = true,
                b'f' => {
                    time = true;
                    frac = true;
                }
                b'H' | b'h' | b'I' | b'i' | b'k' | b'l' | b'p' | b'r' | b'S' | b's' | b'T' => time = true,
                _ => {}
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    let kind = match (date, time) {
        (true, false) => TemporalKind::Date,
        (false, true) => TemporalKind::Time,
        _ => TemporalKind::DateTime,
    };
    (kind, if frac { 6 } else { 0 })
}

/// STR_TO_DATE(s, fmt): reads `s` by `fmt` as MySQL's `extract_date_time`.
/// `None` when the text does not match or the date is invalid; the bool
/// says trailing text was ignored (a warning in MySQL).
pub fn str_to_date(s: &[u8], fmt: &[u8]) -> Option<(Temporal, bool)> {
    let (kind, fsp) = str_to_date_kind(fmt);
    let mut t = zero(TemporalKind::DateTime);
    let mut pm: Option<bool> = None;
    let mut h12 = false;
    let mut yday: Option<i64> = None;
    let mut weekday: Option<u32> = None;
    let mut week: Option<(u32, bool, bool)> = None;
    let mut strict_week_year: Option<i64> = None;
    let mut v = 0usize;
    let mut f = 0usize;
    fn num(s: &[u8], v: &mut usize, max: usize) -> Option<u64> {
        let st = *v;
        let mut n = 0u64;
        while *v < s.len() && *v - st < max && s[*v].is_ascii_digit() {
            n = n * 10 + (s[*v] - b'0') as u64;
            *v += 1;
        }
        if *v == st {
            None
        } else {
            Some(n)
        }
    }
    fn name(s: &[u8], v: &mut usize, names: &[&str], abbr: bool) -> Option<usize> {
        for (k, n) in names.iter().enumerate() {
            let n = if abbr { &n[..3] } else { n };
            let nb = n.as_bytes();
            if s.len() - *v >= nb.len() && s[*v..*v + nb.len()].eq_ignore_ascii_case(nb) {
                *v += nb.len();
                return Some(k);
            }
        }
        None
    }
    while f < fmt.len() && v < s.len() {
        while v < s.len() && s[v].is_ascii_whitespace() {
            v += 1;
        }
        if v >= s.len() {
            break;
        }
        if fmt[f] == b'%' && f + 1 < fmt.len() {
            let sp = fmt[f + 1];
            f += 2;
            match sp {
                b'Y' => {
                    let st = v;
                    let y = num(s, &mut v, 4)?;
                    t.year =
                        if v - st <= 2 { (y + if y < 70 { 2000 } else { 1900 }) as u16 } else { y as u16 };
                }
                b'y' => {
                    let y = num(s, &mut v, 2)?;
                    t.year = (y + if y < 70 { 2000 } else { 1900 }) as u16;
                }
                b'm' | b'c' => t.month = num(s, &mut v, 2)? as u8,
                b'd' | b'e' => t.day = num(s, &mut v, 2)? as u8,
                b'D' => {
                    t.day = num(s, &mut v, 2)? as u8;
                    v = (v + 2).min(s.len());
                }
                b'M' => t.month = name(s, &mut v, &MONTH_NAMES, false)? as u8 + 1,
                b'b' => t.month = name(s, &mut v, &MONTH_NAMES, true)? as u8 + 1,
                b'W' => weekday = Some(name(s, &mut v, &DAY_NAMES, false)? as u32),
                b'a' => weekday = Some(name(s, &mut v, &DAY_NAMES, true)? as u32),
                b'w' => {
                    let w = num(s, &mut v, 1)?;
                    if w > 6 {
                        return None;
                    }
                    weekday = Some(((w + 6) % 7) as u32);
                }
                b'H' | b'k' => {
                    t.hour = num(s, &mut v, 2)? as u32;
                    h12 = false;
                }
                b'h' | b'I' | b'l' => {
                    t.hour = num(s, &mut v, 2)? as u32;
                    h12 = true;
                }
                b'i' => t.minute = num(s, &mut v, 2)? as u8,
                b'S' | b's' => t.second = num(s, &mut v, 2)? as u8,
                b'f' => {
                    let st = v;
                    let n = num(s, &mut v, 6)?;
                    t.micro = (n * 10u64.pow((6 - (v - st)) as u32)) as u32;
                }
                b'j' => yday = Some(num(s, &mut v, 3)? as i64),
                b'p' => {
                    if s.len() - v < 2 {
                        return None;
                    }
                    let w = &s[v..v + 2];
                    pm = Some(if w.eq_ignore_ascii_case(b"PM") {
                        true
                    } else if w.eq_ignore_ascii_case(b"AM") {
                        false
                    } else {
                        return None;
                    });
                    v += 2;
                }
                b'r' | b'T' => {
                    let sub: &[u8] = if sp == b'r' { b"%I:%i:%S %p" } else { b"%H:%i:%S" };
                    // Re-read the rest of the text with the sub-format.
                    let mut sv = v;
                    let mut sf = 0;
                    while sf < sub.len() {
                        while sv < s.len() && s[sv].is_ascii_whitespace() {
                            sv += 1;
                        }
                        if sub[sf] == b'%' {
                            match sub[sf + 1] {
                                b'I' => {
                                    t.hour = num(s, &mut sv, 2)? as u32;
                                    h12 = true;
                                }
                                b'H' => t.hour = num(s, &mut sv, 2)? as u32,
                                b'i' => t.minute = num(s, &mut sv, 2)? as u8,
                                b'S' => t.second = num(s, &mut sv, 2)? as u8,
                                _ => {
                                    if s.len() - sv < 2 {
                                        return None;
                                    }
                                    let w = &s[sv..sv + 2];
                                    pm = Some(w.eq_ignore_ascii_case(b"PM"));
                                    if !w.eq_ignore_ascii_case(b"PM") && !w.eq_ignore_ascii_case(b"AM") {
                                        return None;
                                    }
                                    sv += 2;
                                }
                            }
                            sf += 2;
                        } else {
                            if sv >= s.len() || s[sv] != sub[sf] {
                                return None;
                            }
                            sv += 1;
                            sf += 1;
                        }
                    }
                    v = sv;
                }
                b'U' | b'u' | b'V' | b'v' => {
                    let n = num(s, &mut v, 2)? as u32;
                    week = Some((n, sp == b'u' || sp == b'v', sp == b'V' || sp == b'v'));
                }
                b'X' | b'x' => strict_week_year = Some(num(s, &mut v, 4)? as i64),
                b'.' => {
                    while v < s.len() && s[v].is_ascii_punctuation() {
                        v += 1;
                    }
                }
                b'@' => {
                    while v < s.len() && s[v].is_ascii_alphabetic() {
                        v += 1;
                    }
                }
                b'#' => {
                    while v < s.len() && s[v].is_ascii_digit() {
                        v += 1;
                    }
                }
                other => {
                    if s[v] != other {
                        return None;
                    }
                    v += 1;
                }
            }
        } else {
            let c = fmt[f];
            f += 1;
            if c.is_ascii_whitespace() {
                continue;
            }
            if s[v] != c {
                return None;
            }
            v += 1;
        }
    }
    // Specifiers left without text: only allowed when they are literal-free
    // trailing parts MySQL tolerates (it stops at the text's end).
    if let Some(p) = pm {
        if !h12 || t.hour > 12 || t.hour < 1 {
            return None;
        }
        t.hour %= 12;
        if p {
            t.hour += 12;
        }
    } else if h12 && (t.hour > 12 || t.hour < 1) {
        return None;
    }
    if let Some(yd) = yday {
        if yd < 1 || yd > days_in_year(t.year as i64) {
            return None;
        }
        let (y, m, d) = from_daynr(daynr(t.year as i64, 1, 1) + yd - 1);
        t.year = y;
        t.month = m;
        t.day = d;
    }
    if let (Some((w, monday_first, wyear)), Some(wd)) = (week, weekday) {
        let year = if wyear { strict_week_year? } else { t.year as i64 };
        let first = daynr(year, 1, 1);
        let wd_first = calc_weekday(first, !monday_first) as i64;
        let my_wd = if monday_first { wd as i64 } else { (wd as i64 + 1) % 7 };
        let dnr = if wyear {
            first + if wd_first <= 3 { -wd_first } else { 7 - wd_first } + (w as i64 - 1) * 7 + my_wd
        } else {
            first + if wd_first == 0 { 0 } else { 7 - wd_first } + (w as i64 - 1) * 7 + my_wd
        };
        let (y, m, d) = from_daynr(dnr);
        t.year = y;
        t.month = m;
        t.day = d;
    }
    let trailing = s[v..].iter().any(|c| !c.is_ascii_whitespace());
    if t.minute > 59 || t.second > 59 {
        return None;
    }
    match kind {
        TemporalKind::Time => {
            t.kind = TemporalKind::Time;
            if t.hour > TIME_MAX_HOUR {
                return None;
            }
        }
        TemporalKind::Date => {
            if !is_valid(&t) {
                return None;
            }
            t = to_date(&t);
        }
        TemporalKind::DateTime => {
            if !is_valid(&t) {
                return None;
            }
        }
    }
    t.fsp = fsp;
    Some((t, trailing))
}

// ---------------------------------------------------------------------------
// Time zones

/// A session's `time_zone`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeZone {
    /// The server's zone (MySQL's SYSTEM): see [`system_zone`].
    System,
    /// A fixed offset east of UTC, in seconds ('+02:00').
    Offset(i32),
    /// A zone of the IANA database ('Europe/Paris', 'UTC').
    Named(chrono_tz::Tz),
}

impl TimeZone {
    /// The name `@@time_zone` shows: 'SYSTEM', '+05:00' (always two-digit
    /// hours and minutes), or the zone's canonical name ('Europe/Berlin'
    /// for 'europe/berlin'), as MariaDB shows them.
    pub fn name(&self) -> String {
        match self {
            TimeZone::System => "SYSTEM".into(),
            TimeZone::Offset(o) => {
                let a = o.unsigned_abs() / 60;
                format!("{}{:02}:{:02}", if *o < 0 { '-' } else { '+' }, a / 60, a % 60)
            }
            TimeZone::Named(z) => z.name().into(),
        }
    }
}

/// Reads a `time_zone` value as MariaDB's `my_tz_find` does: 'SYSTEM'
/// (any case), an offset `+h:m` / `-h:m` (sign, any number of hour digits,
/// ':', at least one minute digit, minutes below 60, from -12:59 to
/// +13:00; at least 4 characters), or a zone name of the IANA database
/// (any case). Nothing is trimmed: ' +05:00' is no zone (error 1298).
pub fn parse_tz(name: &str) -> Option<TimeZone> {
    let n = name;
    if n.eq_ignore_ascii_case("SYSTEM") {
        return Some(TimeZone::System);
    }
    let b = n.as_bytes();
    if !b.is_empty() && (b[0] == b'+' || b[0] == b'-') {
        if b.len() < 4 {
            return None;
        }
        let (h, m) = n[1..].split_once(':')?;
        let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
        if !digits(h) || !digits(m) || m.is_empty() {
            return None;
        }
        // Long digit runs: any value past the range is out of it.
        let num = |s: &str| if s.len() > 6 { 1_000_000 } else { s.parse::<i64>().unwrap_or(0) };
        let (h, m) = (num(h), num(m));
        if m > 59 {
            return None;
        }
        let secs = (h * 60 + m) * 60;
        let secs = if b[0] == b'-' { -secs } else { secs };
        if !(-(13 * 3600) + 1..=13 * 3600).contains(&secs) {
            return None;
        }
        return Some(TimeZone::Offset(secs as i32));
    }
    chrono_tz::Tz::from_str(n)
        .ok()
        .or_else(|| chrono_tz::TZ_VARIANTS.iter().copied().find(|z| z.name().eq_ignore_ascii_case(n)))
        .map(TimeZone::Named)
}

/// The server's zone, what SYSTEM means, found once as MariaDB finds it
/// at startup (the C library reads the same places): the `TZ` environment
/// variable (a zone name, ':name' or a path under a `zoneinfo` folder),
/// else the zone `/etc/localtime` links to, else `/etc/timezone`. `None`
/// when none names a zone of the IANA database (a POSIX rule string, a
/// copied file): SYSTEM then converts through the C library's local time
/// (`chrono::Local`).
pub fn system_zone() -> Option<chrono_tz::Tz> {
    static ZONE: std::sync::OnceLock<Option<chrono_tz::Tz>> = std::sync::OnceLock::new();
    *ZONE.get_or_init(|| {
        let named = |s: &str| -> Option<chrono_tz::Tz> {
            let s = s.trim().trim_start_matches(':');
            let s = s.rsplit_once("zoneinfo/").map_or(s, |(_, z)| z);
            chrono_tz::Tz::from_str(s).ok()
        };
        if let Ok(tz) = std::env::var("TZ") {
            if !tz.is_empty() {
                return named(&tz);
            }
        }
        if let Some(z) = std::fs::read_link("/etc/localtime").ok().and_then(|p| named(&p.to_string_lossy())) {
            return Some(z);
        }
        std::fs::read_to_string("/etc/timezone").ok().and_then(|s| named(&s))
    })
}

/// `@@system_time_zone`: the abbreviation of the server's zone at `now`
/// (Unix microseconds; MariaDB takes it at startup): 'UTC', 'CET', 'CEST'.
pub fn system_time_zone_name(now_micros: i64) -> String {
    use chrono_tz::OffsetName as _;
    match system_zone() {
        Some(z) => match z.timestamp_micros(now_micros).single() {
            Some(d) => d.offset().abbreviation().map_or_else(|| z.name().to_string(), str::to_string),
            None => z.name().to_string(),
        },
        None => {
            let off = chrono::Local
                .timestamp_micros(now_micros)
                .single()
                .map_or(0, |d| d.offset().local_minus_utc());
            if off == 0 {
                "UTC".into()
            } else {
                TimeZone::Offset(off).name()
            }
        }
    }
}

thread_local! {
    /// The time zone of the statement this thread runs (`Session` sets it
    /// when a statement starts): TIMESTAMP columns are stored in UTC and
    /// the row and key codecs convert through it, as MySQL converts a
    /// TIMESTAMP field through the connection's zone when it is stored and
    /// read. One thread runs one statement at a time, and a statement's
    /// sub-sessions run on it too.
    static SESSION_TZ: std::cell::Cell<TimeZone> = const { std::cell::Cell::new(TimeZone::System) };
}

/// Makes `tz` the zone TIMESTAMP values are read and written in on this
/// thread (see `SESSION_TZ`).
pub fn set_session_tz(tz: TimeZone) {
    SESSION_TZ.with(|c| c.set(tz));
}

/// The zone TIMESTAMP values are read and written in on this thread.
pub fn session_tz() -> TimeZone {
    SESSION_TZ.with(|c| c.get())
}

fn naive_of(t: &Temporal) -> Option<NaiveDateTime> {
    NaiveDate::from_ymd_opt(t.year as i32, t.month as u32, t.day as u32)?.and_hms_micro_opt(
        t.hour,
        t.minute as u32,
        t.second as u32,
        t.micro,
    )
}

/// A local time in zone `z` as Unix microseconds, and whether it fell in
/// a gap (a spring-forward hour that does not exist there). As MySQL: a
/// time in a gap maps to the first instant after it (the transition), an
/// ambiguous time (a fall-back hour that happens twice) to its first,
/// earlier, instant.
fn local_to_utc<Z: chrono::TimeZone>(z: &Z, n: &NaiveDateTime) -> Option<(i64, bool)> {
    match z.from_local_datetime(n) {
        LocalResult::Single(d) => Some((d.timestamp_micros(), false)),
        LocalResult::Ambiguous(a, b) => Some((a.timestamp_micros().min(b.timestamp_micros()), false)),
        LocalResult::None => {
            // The offset in force before the gap puts `n` past the
            // transition; search back for it (transitions are at whole
            // seconds, gaps shorter than 3 hours).
            let before = *n - chrono::Duration::hours(3);
            let off = match z.from_local_datetime(&before) {
                LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => d.offset().fix().local_minus_utc(),
                LocalResult::None => return None,
            };
            let guess = n.and_utc().timestamp_micros() - off as i64 * 1_000_000;
            let mut lo = guess - 3 * 3_600_000_000;
            let mut hi = guess;
            while hi - lo > 1_000_000 {
                let mid = lo + (hi - lo) / 2;
                let o = z.timestamp_micros(mid).single()?.offset().fix().local_minus_utc();
                if o == off {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Some((hi.div_euclid(1_000_000) * 1_000_000, true))
        }
    }
}

fn zone_local_to_utc(n: &NaiveDateTime, tz: &TimeZone) -> Option<(i64, bool)> {
    match tz {
        TimeZone::Offset(o) => Some((n.and_utc().timestamp_micros() - *o as i64 * 1_000_000, false)),
        TimeZone::Named(z) => local_to_utc(z, n),
        TimeZone::System => match system_zone() {
            Some(z) => local_to_utc(&z, n),
            None => local_to_utc(&chrono::Local, n),
        },
    }
}

/// The first and last instants a TIMESTAMP holds, in Unix microseconds:
/// '1970-01-01 00:00:01' and '2038-01-19 03:14:07.999999' UTC. 0 is the
/// zero timestamp.
pub const TIMESTAMP_MIN_MICROS: i64 = 1_000_000;
pub const TIMESTAMP_MAX_MICROS: i64 = TIMESTAMP_MAX_SECS * 1_000_000 + 999_999;

/// What a datetime written in a zone is as a TIMESTAMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsLocal {
    /// This instant (Unix microseconds; 0 for the zero datetime).
    Exact(i64),
    /// The time is in a DST gap: the instant after the gap (MySQL stores
    /// it with warning 1299, or fails with 1292 in strict mode).
    Gap(i64),
    /// Before '1970-01-01 00:00:01' UTC, after '2038-01-19 03:14:07' UTC,
    /// or a date with a zero month or day: no TIMESTAMP (1264 / 1292).
    OutOfRange,
}

/// A datetime in `tz` as a TIMESTAMP (see [`TsLocal`]).
pub fn timestamp_of_local(t: &Temporal, tz: &TimeZone) -> TsLocal {
    if is_zero_date(t) && t.hour == 0 && t.minute == 0 && t.second == 0 && t.micro == 0 {
        return TsLocal::Exact(0);
    }
    let Some((us, gap)) = naive_of(t).and_then(|n| zone_local_to_utc(&n, tz)) else {
        return TsLocal::OutOfRange;
    };
    if !(TIMESTAMP_MIN_MICROS..=TIMESTAMP_MAX_MICROS).contains(&us) {
        return TsLocal::OutOfRange;
    }
    if gap {
        TsLocal::Gap(us)
    } else {
        TsLocal::Exact(us)
    }
}

/// A wall-clock datetime in `tz` as microseconds since the Unix epoch
/// (what a TIMESTAMP column stores). `Some(0)` for the zero datetime;
/// `None` outside TIMESTAMP's range or for an invalid date; a time in a
/// DST gap is the instant after the gap.
pub fn to_utc_micros(t: &Temporal, tz: &TimeZone) -> Option<i64> {
    match timestamp_of_local(t, tz) {
        TsLocal::Exact(us) | TsLocal::Gap(us) => Some(us),
        TsLocal::OutOfRange => None,
    }
}

/// A wall-clock datetime in `tz` as Unix microseconds, any date (for
/// UNIX_TIMESTAMP's range checks and CONVERT_TZ).
pub fn local_to_utc_any(t: &Temporal, tz: &TimeZone) -> Option<i64> {
    zone_local_to_utc(&naive_of(t)?, tz).map(|(us, _)| us)
}

/// Unix microseconds as a wall-clock datetime in `tz`, with `fsp`
/// fraction digits (truncated); 0 is the zero datetime.
pub fn from_utc_micros(us: i64, tz: &TimeZone, fsp: u8) -> Temporal {
    let mut t = if us == 0 { None } else { utc_to_local(us, tz, fsp) }
        .unwrap_or_else(|| zero(TemporalKind::DateTime));
    t.fsp = fsp;
    t
}

/// A TIMESTAMP column's value as stored (Unix microseconds) for a
/// datetime in the thread's session zone; the row and key codecs' one
/// way in. Values reach the codecs through `coerce::store`, which
/// rejected what is out of range; anything else is stored as the zero
/// timestamp.
pub fn timestamp_to_stored(t: &Temporal) -> i64 {
    to_utc_micros(t, &session_tz()).unwrap_or(0)
}

/// A stored TIMESTAMP (Unix microseconds) as a datetime in the thread's
/// session zone with `fsp` digits; the codecs' one way out.
pub fn timestamp_from_stored(us: i64, fsp: u8) -> Temporal {
    from_utc_micros(us, &session_tz(), fsp)
}

fn utc_to_local(us: i64, tz: &TimeZone, fsp: u8) -> Option<Temporal> {
    let n = match tz {
        TimeZone::Offset(o) => {
            chrono::DateTime::from_timestamp_micros(us + *o as i64 * 1_000_000)?.naive_utc()
        }
        TimeZone::Named(z) => z.timestamp_micros(us).single()?.naive_local(),
        TimeZone::System => match system_zone() {
            Some(z) => z.timestamp_micros(us).single()?.naive_local(),
            None => chrono::Local.timestamp_micros(us).single()?.naive_local(),
        },
    };
    if !(0..=9999).contains(&n.year()) {
        return None;
    }
    let t = datetime(
        n.year() as u16,
        n.month() as u8,
        n.day() as u8,
        n.hour(),
        n.minute() as u8,
        n.second() as u8,
        n.and_utc().timestamp_subsec_micros(),
        6,
    );
    Some(round_fsp(&t, fsp))
}

/// NOW(fsp): the statement's start (`ctx_micros`, Unix microseconds) in `tz`.
pub fn now(ctx_micros: i64, tz: &TimeZone, fsp: u8) -> Temporal {
    utc_to_local(ctx_micros, tz, fsp).unwrap_or_else(|| zero(TemporalKind::DateTime))
}

/// CONVERT_TZ: `t` read in `from` shown in `to`. As MySQL, a value that
/// is no TIMESTAMP in `from` (before '1970-01-01 00:00:01' UTC or after
/// 2038) is returned unconverted.
pub fn convert_tz(t: &Temporal, from: &TimeZone, to: &TimeZone) -> Option<Temporal> {
    let us = local_to_utc_any(t, from)?;
    if !(TIMESTAMP_MIN_MICROS..=TIMESTAMP_MAX_MICROS).contains(&us) {
        let mut r = *t;
        r.kind = TemporalKind::DateTime;
        return Some(r);
    }
    let mut r = utc_to_local(us, to, 6)?;
    r.fsp = t.fsp;
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str, k: TemporalKind) -> Option<String> {
        parse(s.as_bytes(), k).map(|t| t.render())
    }

    #[test]
    fn parse_dates_like_mariadb() {
        use TemporalKind::*;
        assert_eq!(p("2024-01-31abc", Date).as_deref(), Some("2024-01-31"));
        assert!(parse_ext(b"2024-01-31abc", Date).unwrap().truncated);
        assert_eq!(p("2024-02-30", Date), None);
        assert_eq!(p("2024", Date), None);
        assert_eq!(p("202401", Date), None);
        assert_eq!(p("240131", Date).as_deref(), Some("2024-01-31"));
        assert_eq!(p("20240131", Date).as_deref(), Some("2024-01-31"));
        assert_eq!(p("20240131101112", DateTime).as_deref(), Some("2024-01-31 10:11:12"));
        assert_eq!(p("240131101112", DateTime).as_deref(), Some("2024-01-31 10:11:12"));
        assert_eq!(p("2024-1-5 1:2:3.45", DateTime).as_deref(), Some("2024-01-05 01:02:03.45"));
        assert_eq!(p("2024/01/31T10:11:12", DateTime).as_deref(), Some("2024-01-31 10:11:12"));
        assert_eq!(p("2024-01-31 10", DateTime).as_deref(), Some("2024-01-31 10:00:00"));
        assert_eq!(p("0000-00-00", Date).as_deref(), Some("0000-00-00"));
        assert_eq!(p("2024-00-00", Date).as_deref(), Some("2024-00-00"));
        assert_eq!(p("24-1-5", Date).as_deref(), Some("2024-01-05"));
        assert_eq!(p("2024-01-31 25:00:00", Date), None);
        assert_eq!(p("2024-1-5T", Date).as_deref(), Some("2024-01-05"));
        assert_eq!(p(" 2024-01-05", Date).as_deref(), Some("2024-01-05"));
        assert_eq!(p("2024-01-05 10:11:12.", DateTime).as_deref(), Some("2024-01-05 10:11:12"));
        assert_eq!(p("99-01-01", Date).as_deref(), Some("1999-01-01"));
        assert_eq!(p("69-01-01", Date).as_deref(), Some("2069-01-01"));
        assert_eq!(p("2024.1.5", Date).as_deref(), Some("2024-01-05"));
        assert_eq!(p("2024--01--05", Date), None);
        assert_eq!(p("0024-01-05", Date).as_deref(), Some("0024-01-05"));
        assert_eq!(p("2024-01-05 10:11:60", DateTime), None);
        assert_eq!(p("2024-01-05 23:59:59.9999999", DateTime).as_deref(), Some("2024-01-05 23:59:59.999999"));
        assert_eq!(p("", Date), None);
    }

    #[test]
    fn parse_times_like_mariadb() {
        use TemporalKind::Time;
        assert_eq!(p("10:11:12.1234567", Time).as_deref(), Some("10:11:12.123456"));
        let x = parse_ext(b"900:00:00", Time).unwrap();
        assert_eq!((x.t.render().as_str(), x.truncated), ("838:59:59", true));
        assert_eq!(p("1 10:00:00", Time).as_deref(), Some("34:00:00"));
        assert_eq!(p("101112", Time).as_deref(), Some("10:11:12"));
        assert_eq!(p("12", Time).as_deref(), Some("00:00:12"));
        assert_eq!(p("-10:11", Time).as_deref(), Some("-10:11:00"));
        assert_eq!(p("2024-01-31 10:11:12", Time).as_deref(), Some("10:11:12"));
        assert_eq!(p("10.5", Time).as_deref(), Some("00:00:10.5"));
        assert_eq!(p("10:61:00", Time), None);
        assert_eq!(p("-839:00:00", Time).as_deref(), Some("-838:59:59"));
        assert_eq!(p("1 2", Time).as_deref(), Some("00:00:01"));
        assert_eq!(p("1:2", Time).as_deref(), Some("01:02:00"));
        assert_eq!(p("1:2:3:4", Time).as_deref(), Some("01:02:03"));
        assert_eq!(p("2024-13-01 10:00:00", Time), None);
        assert_eq!(p("34 10:00", Time).as_deref(), Some("826:00:00"));
        assert_eq!(p(" 10:00", Time).as_deref(), Some("10:00:00"));
        assert_eq!(p("9000000", Time).as_deref(), Some("838:59:59"));
        assert_eq!(p("abc", Time), None);
        assert_eq!(p("-", Time), None);
        assert_eq!(p("", Time), None);
    }

    #[test]
    fn numbers() {
        use TemporalKind::*;
        let n = |x: f64, k| from_number(x, k).map(|(t, _)| t.render());
        assert_eq!(n(20240131.0, Date).as_deref(), Some("2024-01-31"));
        assert_eq!(n(240131.0, Date).as_deref(), Some("2024-01-31"));
        assert_eq!(n(20240131101112.0, DateTime).as_deref(), Some("2024-01-31 10:11:12"));
        assert_eq!(n(101112.0, Time).as_deref(), Some("10:11:12"));
        assert_eq!(n(8385960.0, Time), None);
        assert_eq!(n(9000000.0, Time).as_deref(), Some("838:59:59"));
        assert_eq!(n(-101112.5, Time).as_deref(), Some("-10:11:12.5"));
        assert_eq!(n(101.0, Date).as_deref(), Some("2000-01-01"));
        assert_eq!(n(100.0, Date), None);
    }

    #[test]
    fn day_numbers() {
        assert_eq!(daynr(2024, 1, 31), 739281);
        assert_eq!(daynr(1970, 1, 1), 719528);
        assert_eq!(from_daynr(739281), (2024, 1, 31));
        assert_eq!(from_daynr(366), (1, 1, 1));
        assert_eq!(from_daynr(365), (0, 0, 0));
        for d in [366i64, 10_000, 719_528, 730_000, 739_281, MAX_DAY_NUMBER] {
            let (y, m, dd) = from_daynr(d);
            assert_eq!(daynr(y as i64, m as i64, dd as i64), d);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(19_753), (2024, 1, 31));
    }

    #[test]
    fn rounding_truncates() {
        let t = parse(b"10:00:00.5678", TemporalKind::Time).unwrap();
        assert_eq!(round_fsp(&t, 2).render(), "10:00:00.56");
        assert_eq!(round_fsp_rounding(&t, 2).unwrap().render(), "10:00:00.57");
    }

    #[test]
    fn time_zones() {
        assert_eq!(parse_tz("+02:00"), Some(TimeZone::Offset(7200)));
        assert_eq!(parse_tz("-05:30"), Some(TimeZone::Offset(-19800)));
        assert!(matches!(parse_tz("Europe/Paris"), Some(TimeZone::Named(_))));
        assert!(matches!(parse_tz("UTC"), Some(TimeZone::Named(_))));
        assert_eq!(parse_tz("system"), Some(TimeZone::System));
        assert_eq!(parse_tz("nowhere"), None);
        let paris = parse_tz("Europe/Paris").unwrap();
        let t = parse(b"2024-07-01 12:00:00", TemporalKind::DateTime).unwrap();
        let us = to_utc_micros(&t, &paris).unwrap();
        assert_eq!(us, 1_719_828_000_000_000);
        assert_eq!(from_utc_micros(us, &paris, 0).render(), "2024-07-01 12:00:00");
        assert_eq!(from_utc_micros(us, &TimeZone::Offset(0), 0).render(), "2024-07-01 10:00:00");
        let late = parse(b"2038-01-19 03:14:08", TemporalKind::DateTime).unwrap();
        assert_eq!(to_utc_micros(&late, &TimeZone::Offset(0)), None);
        let early = parse(b"1970-01-01 00:00:00", TemporalKind::DateTime).unwrap();
        assert_eq!(to_utc_micros(&early, &TimeZone::Offset(0)), None);
    }

    fn dt(s: &str) -> Temporal {
        parse(s.as_bytes(), TemporalKind::DateTime).unwrap()
    }

    /// MariaDB's offsets: sign, hours, ':', minutes; -12:59 .. +13:00;
    /// shown with two digits each.
    #[test]
    fn offsets_like_mariadb() {
        let name = |s: &str| parse_tz(s).map(|z| z.name());
        assert_eq!(name("+13:00").as_deref(), Some("+13:00"));
        assert_eq!(name("-12:59").as_deref(), Some("-12:59"));
        assert_eq!(name("+5:5").as_deref(), Some("+05:05"));
        assert_eq!(name("+005:00").as_deref(), Some("+05:00"));
        assert_eq!(name("-0:30").as_deref(), Some("-00:30"));
        assert_eq!(name("-00:00").as_deref(), Some("+00:00"));
        assert_eq!(name("europe/berlin").as_deref(), Some("Europe/Berlin"));
        assert_eq!(name("SyStEm").as_deref(), Some("SYSTEM"));
        for bad in
            ["+13:01", "-13:00", "+14:00", "+05", "05:00", "+05:60", " +05:00", "+05:05:00", "+1:", "", "Z"]
        {
            assert_eq!(parse_tz(bad), None, "{bad:?}");
        }
    }

    /// TIMESTAMP's range ends, in UTC and through an offset.
    #[test]
    fn timestamp_range_ends() {
        let utc = TimeZone::Offset(0);
        assert_eq!(timestamp_of_local(&dt("1970-01-01 00:00:01"), &utc), TsLocal::Exact(1_000_000));
        assert_eq!(timestamp_of_local(&dt("1970-01-01 00:00:00"), &utc), TsLocal::OutOfRange);
        assert_eq!(timestamp_of_local(&dt("1970-01-01 00:00:00.999999"), &utc), TsLocal::OutOfRange);
        assert_eq!(
            timestamp_of_local(&dt("2038-01-19 03:14:07.999999"), &utc),
            TsLocal::Exact(TIMESTAMP_MAX_MICROS)
        );
        assert_eq!(timestamp_of_local(&dt("2038-01-19 03:14:08"), &utc), TsLocal::OutOfRange);
        assert_eq!(timestamp_of_local(&dt("0000-00-00 00:00:00"), &utc), TsLocal::Exact(0));
        assert_eq!(timestamp_of_local(&dt("2024-00-10 10:00:00"), &utc), TsLocal::OutOfRange);
        let plus5 = parse_tz("+05:00").unwrap();
        assert_eq!(timestamp_of_local(&dt("1970-01-01 05:00:01"), &plus5), TsLocal::Exact(1_000_000));
        assert_eq!(timestamp_of_local(&dt("1970-01-01 05:00:00"), &plus5), TsLocal::OutOfRange);
        assert_eq!(timestamp_of_local(&dt("2038-01-19 08:14:08"), &plus5), TsLocal::OutOfRange);
        assert_eq!(from_utc_micros(TIMESTAMP_MAX_MICROS, &plus5, 6).render(), "2038-01-19 08:14:07.999999");
        assert_eq!(from_utc_micros(0, &plus5, 2).render(), "0000-00-00 00:00:00.00");
    }

    /// DST as MariaDB (with the tz tables loaded) treats it, checked
    /// against MariaDB 10.11: Europe/Berlin springs forward at 2024-03-31
    /// 01:00 UTC (02:00 -> 03:00 local) and falls back at 2024-10-27 01:00
    /// UTC (03:00 -> 02:00 local).
    #[test]
    fn dst_gap_and_overlap() {
        let berlin = parse_tz("Europe/Berlin").unwrap();
        // A time in the gap is the instant after it (1711846800 = 01:00 UTC).
        for t in ["2024-03-31 02:00:00", "2024-03-31 02:30:00", "2024-03-31 02:59:59.5"] {
            assert_eq!(timestamp_of_local(&dt(t), &berlin), TsLocal::Gap(1_711_846_800_000_000), "{t}");
        }
        assert_eq!(
            timestamp_of_local(&dt("2024-03-31 03:00:00"), &berlin),
            TsLocal::Exact(1_711_846_800_000_000)
        );
        assert_eq!(
            timestamp_of_local(&dt("2024-03-31 01:59:59"), &berlin),
            TsLocal::Exact(1_711_846_799_000_000)
        );
        assert_eq!(from_utc_micros(1_711_846_800_000_000, &berlin, 0).render(), "2024-03-31 03:00:00");
        // An hour that happens twice is its first (summer time) instant.
        assert_eq!(
            timestamp_of_local(&dt("2024-10-27 02:30:00"), &berlin),
            TsLocal::Exact(1_729_989_000_000_000)
        );
        assert_eq!(from_utc_micros(1_729_989_000_000_000, &berlin, 0).render(), "2024-10-27 02:30:00");
        assert_eq!(from_utc_micros(1_729_992_600_000_000, &berlin, 0).render(), "2024-10-27 02:30:00");
        assert_eq!(
            timestamp_of_local(&dt("2024-10-27 03:00:00"), &berlin),
            TsLocal::Exact(1_729_994_400_000_000)
        );
        // CONVERT_TZ goes through the same instants.
        let utc = TimeZone::Offset(0);
        assert_eq!(
            convert_tz(&dt("2024-03-31 02:30:00"), &berlin, &utc).unwrap().render(),
            "2024-03-31 01:00:00"
        );
        assert_eq!(
            convert_tz(&dt("2024-10-27 02:30:00"), &berlin, &utc).unwrap().render(),
            "2024-10-27 00:30:00"
        );
        // Outside TIMESTAMP's range CONVERT_TZ leaves the value as it is.
        assert_eq!(
            convert_tz(&dt("1970-01-01 00:30:00"), &parse_tz("+01:00").unwrap(), &utc).unwrap().render(),
            "1970-01-01 00:30:00"
        );
    }

    /// The codecs' conversions go through the thread's session zone.
    #[test]
    fn stored_timestamps_follow_the_session_zone() {
        let before = session_tz();
        set_session_tz(parse_tz("+05:00").unwrap());
        let us = timestamp_to_stored(&dt("2024-01-01 05:00:00"));
        assert_eq!(us, 1_704_067_200_000_000);
        set_session_tz(parse_tz("America/New_York").unwrap());
        assert_eq!(timestamp_from_stored(us, 0).render(), "2023-12-31 19:00:00");
        assert_eq!(timestamp_to_stored(&dt("2023-12-31 19:00:00")), us);
        set_session_tz(before);
    }
}
