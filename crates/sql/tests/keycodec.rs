//! Key parts: byte order = SQL order for every type, ascending and
//! descending, NULLs, multi-part keys; skip and decode consume exactly one
//! part; garbage never panics.
use std::cmp::Ordering::{self, Equal};
use std::str::FromStr;

use bigdecimal::num_bigint::BigInt;
use bigdecimal::BigDecimal;
use fractaldb_sql::collation;
use fractaldb_sql::keycodec::{decode_part, encode_part, skip_part};
use fractaldb_sql::types::{Collation, SqlType, StrKind, ALL_COLLATIONS};
use fractaldb_sql::value::{Temporal, TemporalKind, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn rng(name: &str) -> SmallRng {
    let seed = std::env::var("FRACTALDB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen::<u64>());
    println!("{name}: FRACTALDB_SEED={seed}");
    SmallRng::seed_from_u64(seed)
}

/// A key column: its type and index prefix length.
#[derive(Clone, Debug)]
struct Col {
    ty: SqlType,
    prefix: Option<u32>,
}

fn col(ty: SqlType) -> Col {
    Col { ty, prefix: None }
}

fn columns() -> Vec<Col> {
    let mut v = Vec::new();
    for bytes in [1, 2, 3, 4, 8] {
        for unsigned in [false, true] {
            v.push(col(SqlType::Int { bytes, unsigned }));
        }
    }
    for (precision, scale) in [(1, 0), (5, 2), (10, 0), (18, 4), (19, 19), (38, 10), (65, 30), (65, 0)] {
        v.push(col(SqlType::Decimal { precision, scale, unsigned: false }));
    }
    v.push(col(SqlType::Float { unsigned: false }));
    v.push(col(SqlType::Double { unsigned: false }));
    for bits in [1, 7, 8, 13, 64] {
        v.push(col(SqlType::Bit { bits }));
    }
    for &coll in ALL_COLLATIONS {
        for prefix in [None, Some(2)] {
            v.push(Col { ty: SqlType::Str { kind: StrKind::Var, len: 20, coll }, prefix });
        }
    }
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    v.push(col(SqlType::Enum { values: names(&["b", "a", "c"]), coll: Collation::Utf8mb4GeneralCi }));
    v.push(col(SqlType::Set {
        values: names(&["x", "y", "z", "w", "v"]),
        coll: Collation::Utf8mb4GeneralCi,
    }));
    v.push(col(SqlType::Date));
    v.push(col(SqlType::DateTime { fsp: 0 }));
    v.push(col(SqlType::DateTime { fsp: 6 }));
    v.push(col(SqlType::Timestamp { fsp: 3 }));
    v.push(col(SqlType::Time { fsp: 0 }));
    v.push(col(SqlType::Time { fsp: 6 }));
    v.push(col(SqlType::Year));
    v
}

const ALPHABET: &[&[u8]] = &[
    b" ",
    b"\t",
    b"\0",
    b"a",
    b"A",
    b"b",
    b"s",
    "é".as_bytes(),
    "ß".as_bytes(),
    "€".as_bytes(),
    "😀".as_bytes(),
    b"\xff",
    b"\x80",
    b"\x01",
    b"\xfe",
];

fn random_str(rng: &mut SmallRng) -> Vec<u8> {
    let mut s = Vec::new();
    for _ in 0..rng.gen_range(0..6) {
        s.extend_from_slice(ALPHABET[rng.gen_range(0..ALPHABET.len())]);
    }
    if rng.gen_bool(0.2) {
        s.push(b' ');
    }
    s
}

fn random_temporal(rng: &mut SmallRng, ty: &SqlType) -> Temporal {
    let mut t = Temporal::date(0, 0, 0);
    let fsp = match ty {
        SqlType::Time { fsp } | SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => *fsp,
        _ => 0,
    };
    t.fsp = fsp;
    let micro = |rng: &mut SmallRng| {
        let m: u32 = rng.gen_range(0..1_000_000);
        let unit = 10u32.pow(6 - fsp as u32);
        m / unit * unit
    };
    match ty {
        // A TIMESTAMP holds an instant (or the zero value): what
        // `coerce::store` lets through. The codec converts through the
        // thread's session zone; in UTC local order is instant order.
        SqlType::Timestamp { .. } => {
            use fractaldb_sql::temporal::{self as tm, TimeZone};
            tm::set_session_tz(TimeZone::Offset(0));
            if rng.gen_bool(0.05) {
                return tm::timestamp_from_stored(0, fsp);
            }
            let us = rng.gen_range(tm::TIMESTAMP_MIN_MICROS..=tm::TIMESTAMP_MAX_MICROS);
            let unit = 10i64.pow(6 - fsp as u32);
            return tm::timestamp_from_stored(us / unit * unit, fsp);
        }
        SqlType::Time { .. } => {
            t.kind = TemporalKind::Time;
            t.hour = rng.gen_range(0..=838);
            t.minute = rng.gen_range(0..60);
            t.second = rng.gen_range(0..60);
            t.micro = micro(rng);
            t.neg = rng.gen() && t.ordinal() != 0;
        }
        _ => {
            // Zero dates and zero parts happen, and must sort first.
            if !rng.gen_bool(0.05) {
                t.year = if rng.gen() { rng.gen_range(1990..2030) } else { rng.gen_range(0..=9999) };
                t.month = rng.gen_range(0..=12);
                t.day = rng.gen_range(0..=31);
            }
            if *ty != SqlType::Date {
                t.kind = TemporalKind::DateTime;
                t.hour = rng.gen_range(0..24);
                t.minute = rng.gen_range(0..60);
                t.second = rng.gen_range(0..60);
                t.micro = micro(rng);
            }
        }
    }
    t
}

fn random_f64(rng: &mut SmallRng) -> f64 {
    const SPECIAL: &[f64] = &[
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
    ];
    match rng.gen_range(0..3) {
        0 => SPECIAL[rng.gen_range(0..SPECIAL.len())],
        1 => rng.gen_range(-1000..1000) as f64 / 8.0,
        _ => loop {
            let d = f64::from_bits(rng.gen());
            if !d.is_nan() {
                break d;
            }
        },
    }
}

fn random_value(rng: &mut SmallRng, ty: &SqlType) -> Value {
    match ty {
        SqlType::Int { bytes, unsigned } => {
            let (lo, hi) = SqlType::int_range(*bytes, *unsigned);
            let i = match rng.gen_range(0..4) {
                0 => lo,
                1 => hi,
                2 => rng.gen_range(-3i128..3).clamp(lo, hi),
                _ => rng.gen_range(lo..=hi),
            };
            if *unsigned {
                Value::UInt(i as u64)
            } else {
                Value::Int(i as i64)
            }
        }
        SqlType::Decimal { precision, scale, .. } => {
            let digits = rng.gen_range(0..=*precision as usize);
            let mut s: String = (0..digits).map(|_| char::from(b'0' + rng.gen_range(0..10))).collect();
            if s.is_empty() {
                s.push('0');
            }
            let mut n = BigInt::from_str(&s).unwrap();
            if rng.gen() {
                n = -n;
            }
            Value::Decimal(BigDecimal::new(n, *scale as i64))
        }
        SqlType::Float { .. } | SqlType::Double { .. } => Value::Double(random_f64(rng)),
        SqlType::Bit { bits } => {
            let max = if *bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            Value::UInt(if rng.gen() { rng.gen_range(0..=max) } else { rng.gen_range(0..=max.min(3)) })
        }
        SqlType::Str { .. } => Value::Str(random_str(rng)),
        SqlType::Enum { values, .. } => Value::UInt(rng.gen_range(0..=values.len() as u64)),
        SqlType::Set { values, .. } => Value::UInt(rng.gen_range(0..1u64 << values.len())),
        SqlType::Year => Value::UInt(if rng.gen_bool(0.1) { 0 } else { rng.gen_range(1901..=2155) }),
        _ => Value::Temporal(random_temporal(rng, ty)),
    }
}

/// SQL's order of two non-NULL values of one column.
fn sql_cmp(c: &Col, a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::UInt(x), Value::UInt(y)) => x.cmp(y),
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y).unwrap(),
        (Value::Temporal(x), Value::Temporal(y)) => x.ordinal().cmp(&y.ordinal()),
        (Value::Str(x), Value::Str(y)) => {
            let coll = c.ty.collation().unwrap();
            let cut = |s: &'_ [u8]| match c.prefix {
                Some(n) => collation::truncate_chars(coll, s, n as usize).to_vec(),
                None => s.to_vec(),
            };
            collation::compare(coll, &cut(x), &cut(y))
        }
        _ => panic!("{a:?} {b:?}"),
    }
}

/// NULL first, then SQL order; reversed for descending parts.
fn part_cmp(c: &Col, desc: bool, a: &Value, b: &Value) -> Ordering {
    let o = match (a.is_null(), b.is_null()) {
        (true, true) => Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => sql_cmp(c, a, b),
    };
    if desc {
        o.reverse()
    } else {
        o
    }
}

/// What decoding must give back: the value itself, or None for strings of
/// text collations.
fn check_decoded(c: &Col, v: &Value, got: Option<Value>) {
    if v.is_null() {
        assert!(matches!(got, Some(Value::Null)), "{c:?} {got:?}");
        return;
    }
    let decodable = match &c.ty {
        SqlType::Str { coll, .. } => *coll == Collation::Binary,
        _ => true,
    };
    if !decodable {
        assert!(got.is_none(), "{c:?} {v:?} {got:?}");
        return;
    }
    let got = got.unwrap_or_else(|| panic!("{c:?} {v:?} not decoded"));
    let same = match (v, &got) {
        (Value::Null, Value::Null) => true,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::UInt(x), Value::UInt(y)) => x == y,
        (Value::Decimal(x), Value::Decimal(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits() || (*x == 0.0 && *y == 0.0),
        (Value::Temporal(x), Value::Temporal(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => match c.prefix {
            Some(n) => &x[..x.len().min(n as usize)] == y.as_slice(),
            None => x == y,
        },
        _ => false,
    };
    assert!(same, "{c:?}: {v:?} decoded as {got:?}");
}

fn enc(c: &Col, v: &Value, desc: bool) -> Vec<u8> {
    let mut out = vec![0xAB];
    encode_part(&mut out, v, &c.ty, desc, c.prefix).unwrap_or_else(|e| panic!("{c:?} {v:?}: {e}"));
    out.remove(0);
    out
}

#[test]
fn single_parts_order_skip_decode() {
    let mut rng = rng("single_parts");
    for c in columns() {
        for _ in 0..3000 {
            let desc = rng.gen();
            let gen = |rng: &mut SmallRng| {
                if rng.gen_bool(0.1) {
                    Value::Null
                } else {
                    random_value(rng, &c.ty)
                }
            };
            let a = gen(&mut rng);
            let b = gen(&mut rng);
            let (ka, kb) = (enc(&c, &a, desc), enc(&c, &b, desc));
            let want = part_cmp(&c, desc, &a, &b);
            assert_eq!(ka.cmp(&kb), want, "{c:?} desc={desc} {a:?} {b:?} {ka:x?} {kb:x?}");
            if want == Equal {
                assert_eq!(ka, kb, "{c:?} {a:?} {b:?}");
            }
            // Followed by anything, skip and decode take exactly the part.
            let mut buf = ka.clone();
            buf.extend_from_slice(&kb);
            let mut rest: &[u8] = &buf;
            skip_part(&mut rest, &c.ty, desc).unwrap();
            assert_eq!(rest, &kb[..], "{c:?} {a:?}");
            let mut rest: &[u8] = &buf;
            let got = decode_part(&mut rest, &c.ty, desc).unwrap();
            assert_eq!(rest, &kb[..], "{c:?} {a:?}");
            check_decoded(&c, &a, got);
            // A part cut short is an error, and leaves the input alone.
            for cut in 0..ka.len() {
                let mut short: &[u8] = &ka[..cut];
                assert!(skip_part(&mut short, &c.ty, desc).is_err(), "{c:?} {a:?} cut at {cut}");
                assert_eq!(short.len(), cut);
                assert!(decode_part(&mut short, &c.ty, desc).is_err(), "{c:?} {a:?} cut at {cut}");
            }
        }
    }
}

#[test]
fn multi_part_keys() {
    let mut rng = rng("multi_part");
    let cols = columns();
    for _ in 0..3000 {
        let n = rng.gen_range(1..5);
        let key: Vec<(Col, bool)> =
            (0..n).map(|_| (cols[rng.gen_range(0..cols.len())].clone(), rng.gen())).collect();
        // Rows drawn from few values so that leading parts are often equal.
        let pool: Vec<Vec<Value>> = key
            .iter()
            .map(|(c, _)| {
                (0..3)
                    .map(|_| if rng.gen_bool(0.15) { Value::Null } else { random_value(&mut rng, &c.ty) })
                    .collect()
            })
            .collect();
        let row = |rng: &mut SmallRng| -> Vec<Value> {
            pool.iter().map(|p| p[rng.gen_range(0..3)].clone()).collect()
        };
        let encode = |r: &[Value]| {
            let mut out = Vec::new();
            for ((c, desc), v) in key.iter().zip(r) {
                encode_part(&mut out, v, &c.ty, *desc, c.prefix).unwrap();
            }
            out
        };
        for _ in 0..10 {
            let (ra, rb) = (row(&mut rng), row(&mut rng));
            let want = key
                .iter()
                .zip(ra.iter().zip(&rb))
                .map(|((c, desc), (a, b))| part_cmp(c, *desc, a, b))
                .find(|o| *o != Equal)
                .unwrap_or(Equal);
            let (ka, kb) = (encode(&ra), encode(&rb));
            assert_eq!(ka.cmp(&kb), want, "{key:?} {ra:?} {rb:?}");
            let mut rest: &[u8] = &ka;
            for (c, desc) in &key {
                skip_part(&mut rest, &c.ty, *desc).unwrap();
            }
            assert!(rest.is_empty());
            let mut rest: &[u8] = &ka;
            for ((c, desc), v) in key.iter().zip(&ra) {
                let got = decode_part(&mut rest, &c.ty, *desc).unwrap();
                check_decoded(c, v, got);
            }
            assert!(rest.is_empty());
        }
    }
}

#[test]
fn garbage_never_panics() {
    let mut rng = rng("garbage");
    let cols = columns();
    for _ in 0..200_000 {
        let c = &cols[rng.gen_range(0..cols.len())];
        let n = rng.gen_range(0..40);
        let mut g: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        if let Some(b) = g.first_mut() {
            // Mostly well-formed markers, to get past them.
            if rng.gen_bool(0.8) {
                *b = *[0x00u8, 0x01, 0xFE, 0xFF].get(rng.gen_range(0..4)).unwrap();
            }
        }
        let desc = rng.gen();
        let mut rest: &[u8] = &g;
        if skip_part(&mut rest, &c.ty, desc).is_ok() {
            assert!(rest.len() < g.len());
        } else {
            assert_eq!(rest.len(), g.len());
        }
        let mut rest: &[u8] = &g;
        let _ = decode_part(&mut rest, &c.ty, desc);
    }
}

#[test]
fn known_layouts() {
    let int = SqlType::Int { bytes: 4, unsigned: false };
    let mut out = Vec::new();
    encode_part(&mut out, &Value::Int(-1), &int, false, None).unwrap();
    assert_eq!(out, [0x01, 0x7F, 0xFF, 0xFF, 0xFF]);
    out.clear();
    encode_part(&mut out, &Value::Null, &int, true, None).unwrap();
    assert_eq!(out, [0xFF]);
    out.clear();
    encode_part(&mut out, &Value::Int(1), &int, true, None).unwrap();
    assert_eq!(out, [0xFE, 0x7F, 0xFF, 0xFF, 0xFE]);
    // -0.0 and 0.0 are one key.
    let dbl = SqlType::Double { unsigned: false };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_part(&mut a, &Value::Double(-0.0), &dbl, false, None).unwrap();
    encode_part(&mut b, &Value::Double(0.0), &dbl, false, None).unwrap();
    assert_eq!(a, b);
    // Strings: the collation's sort key; an index prefix counts characters.
    let s = SqlType::Str { kind: StrKind::Var, len: 10, coll: Collation::Utf8mb4GeneralCi };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_part(&mut a, &Value::str("ÉTÉ  "), &s, false, Some(3)).unwrap();
    encode_part(&mut b, &Value::str("étéx"), &s, false, Some(3)).unwrap();
    assert_eq!(a, b);
    let mut k = Vec::new();
    collation::sort_key(Collation::Utf8mb4GeneralCi, b"ETE", &mut k);
    assert_eq!(a[1..], k[..]);
    // A TIMESTAMP is its UTC instant: the same key from every zone.
    {
        use fractaldb_sql::temporal::{self as tm, parse_tz};
        let ts = SqlType::Timestamp { fsp: 0 };
        let local = |s: &str| Value::Temporal(tm::parse(s.as_bytes(), TemporalKind::DateTime).unwrap());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        tm::set_session_tz(parse_tz("+05:00").unwrap());
        encode_part(&mut a, &local("1970-01-01 05:00:01"), &ts, false, None).unwrap();
        tm::set_session_tz(parse_tz("America/New_York").unwrap());
        encode_part(&mut b, &local("1969-12-31 19:00:01"), &ts, false, None).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, [0x01, 0x80, 0, 0, 0, 0, 0x0F, 0x42, 0x40]);
        let back = decode_part(&mut &a[..], &ts, false).unwrap().unwrap();
        assert_eq!(back.render(), "1969-12-31 19:00:01");
        tm::set_session_tz(tm::TimeZone::Offset(0));
    }
    // ENUM and SET from their strings encode as their index and bitmask.
    let e = SqlType::Enum { values: vec!["b".into(), "a".into()], coll: Collation::Utf8mb4GeneralCi };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_part(&mut a, &Value::str("A"), &e, false, None).unwrap();
    encode_part(&mut b, &Value::UInt(2), &e, false, None).unwrap();
    assert_eq!(a, b);
    let set = SqlType::Set { values: vec!["x".into(), "y".into()], coll: Collation::Utf8mb4GeneralCi };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_part(&mut a, &Value::str("y,x"), &set, false, None).unwrap();
    encode_part(&mut b, &Value::UInt(3), &set, false, None).unwrap();
    assert_eq!(a, b);
    // DECIMAL(65, 30): 28 bytes.
    let d = SqlType::Decimal { precision: 65, scale: 30, unsigned: false };
    let mut out = Vec::new();
    encode_part(&mut out, &Value::Decimal(BigDecimal::from_str("-12.5").unwrap()), &d, false, None).unwrap();
    assert_eq!(out.len(), 1 + 28);
}

#[test]
fn wrong_values_are_errors() {
    let cases: Vec<(SqlType, Value)> = vec![
        (SqlType::Int { bytes: 4, unsigned: false }, Value::str("1")),
        (SqlType::Int { bytes: 1, unsigned: false }, Value::Int(200)),
        (SqlType::Int { bytes: 8, unsigned: false }, Value::UInt(u64::MAX)),
        (SqlType::Int { bytes: 4, unsigned: true }, Value::Int(-1)),
        (SqlType::Double { unsigned: false }, Value::Double(f64::NAN)),
        (SqlType::Double { unsigned: false }, Value::Int(1)),
        (
            SqlType::Decimal { precision: 3, scale: 1, unsigned: false },
            Value::Decimal(BigDecimal::from_str("100.0").unwrap()),
        ),
        (
            SqlType::Decimal { precision: 5, scale: 1, unsigned: false },
            Value::Decimal(BigDecimal::from_str("1.25").unwrap()),
        ),
        (SqlType::Bit { bits: 3 }, Value::UInt(8)),
        (SqlType::Year, Value::UInt(1900)),
        (SqlType::Date, Value::Temporal(Temporal { kind: TemporalKind::Time, ..Temporal::date(0, 0, 0) })),
        (SqlType::Date, Value::Int(3)),
        (SqlType::Str { kind: StrKind::Var, len: 3, coll: Collation::Binary }, Value::Int(3)),
        (SqlType::Enum { values: vec!["a".into()], coll: Collation::Utf8mb4GeneralCi }, Value::UInt(2)),
        (SqlType::Enum { values: vec!["a".into()], coll: Collation::Utf8mb4GeneralCi }, Value::str("b")),
        (SqlType::Json, Value::str("{}")),
        (SqlType::Json, Value::Null),
    ];
    for (ty, v) in cases {
        let mut out = vec![7];
        assert!(encode_part(&mut out, &v, &ty, false, None).is_err(), "{ty:?} {v:?}");
        assert_eq!(out, [7]);
    }
}

/// The values a plain index carries after its primary key come back from
/// the key's end, NULL included; a damaged length or value is an error,
/// never a panic or a read past the key.
#[test]
fn carried_values_round_trip_and_damage_is_an_error() {
    use fractaldb_sql::keycodec::{carried, end_carried, put_carried, take_carried};
    let ty = SqlType::Str { kind: StrKind::Var, len: 10, coll: Collation::Utf8mb4GeneralCi };
    let take = |v: &mut &[u8]| take_carried(v, &[], &ty, false);
    let mut key = b"weights+pk".to_vec();
    let start = key.len();
    for v in [Value::Str(b"AbC ".to_vec()), Value::Null, Value::Str(Vec::new())] {
        put_carried(&mut key, &v).unwrap();
    }
    end_carried(&mut key, start).unwrap();
    let (front, mut vals) = carried(&key).unwrap();
    assert_eq!(front, b"weights+pk");
    let got: Vec<Value> = (0..3).map(|_| take(&mut vals).unwrap()).collect();
    assert!(matches!(&got[..], [Value::Str(a), Value::Null, Value::Str(b)] if a == b"AbC " && b.is_empty()));
    assert!(vals.is_empty());
    // Every truncation and every damaged byte: an error or other values,
    // never a panic.
    for cut in 0..key.len() {
        if let Ok((_, mut v)) = carried(&key[..cut]) {
            while !v.is_empty() && take(&mut v).is_ok() {}
        }
    }
    for i in 0..key.len() {
        for b in [0u8, 1, 2, 0x7f, 0xff] {
            let mut k = key.clone();
            k[i] = b;
            if let Ok((_, mut v)) = carried(&k) {
                while !v.is_empty() && take(&mut v).is_ok() {}
            }
        }
    }
    assert!(put_carried(&mut Vec::new(), &Value::Int(1)).is_err());
}

/// A compact carried value (`put_carried_as`) is rebuilt exactly from its
/// key part, ascending or descending, in every collation and for every
/// string: ASCII text of `*_bin` and `*_general_ci` as a few bytes (its
/// letters' case and trailing spaces), everything else whole. A damaged
/// record or a part it does not belong to is an error, never a panic.
#[test]
fn compact_carried_values_rebuild_exactly_from_their_key_part() {
    use fractaldb_sql::keycodec::{put_carried_as, take_carried};
    let mut r = rng("compact_carried");
    let fixed: Vec<Vec<u8>> = [
        &b""[..],
        b"0123456789abcdef0123456789abcdef",
        b"0123456789ABCDEF0123456789ABCDEF",
        b"John.Smith@Example.com",
        b"a  ",
        b"   ",
        b" a b ",
        b"tab\tend\t",
        b"nul\0x",
        b"\x01\x1f~",
        "caf\u{e9}".as_bytes(),
        "\u{1F600}x".as_bytes(),
        b"ss\xff",
        b"MiXeD cAsE wItH mAnY lEtTeRs 123 !?",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    let alphabet = b"aAbBzZ09 \t\0~_.";
    let random = (0..400).map(|_| {
        let n = r.gen_range(0..40);
        (0..n).map(|_| alphabet[r.gen_range(0..alphabet.len())]).collect::<Vec<u8>>()
    });
    let strings: Vec<Vec<u8>> = fixed.into_iter().chain(random).collect();
    for &coll in ALL_COLLATIONS {
        let ty = SqlType::Str { kind: StrKind::Var, len: 200, coll };
        let rebuilds = matches!(
            coll,
            Collation::Utf8mb4GeneralCi
                | Collation::Utf8mb3GeneralCi
                | Collation::Utf8mb4Bin
                | Collation::Utf8mb3Bin
                | Collation::Latin1Bin
        );
        for s in &strings {
            for desc in [false, true] {
                let v = Value::Str(s.clone());
                let mut part = Vec::new();
                encode_part(&mut part, &v, &ty, desc, None).unwrap();
                let mut rec = Vec::new();
                put_carried_as(&mut rec, &v, &ty, true).unwrap();
                let mut whole = Vec::new();
                put_carried_as(&mut whole, &v, &ty, false).unwrap();
                assert_eq!(whole.len(), 5 + s.len());
                if rebuilds && s.is_ascii() {
                    assert_eq!(rec[0], 2, "{coll:?} {s:?}");
                    let letters = s.iter().filter(|b| b.is_ascii_alphabetic()).count();
                    assert!(rec.len() <= 3 + letters.div_ceil(8), "{coll:?} {s:?} {rec:?}");
                } else {
                    assert_eq!(rec, whole, "{coll:?} {s:?}");
                }
                let mut buf = &rec[..];
                let got = take_carried(&mut buf, &part, &ty, desc).unwrap();
                assert!(matches!(&got, Value::Str(g) if g == s), "{coll:?} {s:?} {desc} {got:?}");
                assert!(buf.is_empty());
                if rec[0] != 2 {
                    continue;
                }
                // The other direction's part, another string's part, a
                // truncated or damaged record: an error or some string,
                // never a panic or a read past the record.
                let mut other = Vec::new();
                encode_part(&mut other, &v, &ty, !desc, None).unwrap();
                assert!(take_carried(&mut &rec[..], &other, &ty, desc).is_err());
                assert!(take_carried(&mut &rec[..], &[], &ty, desc).is_err());
                for cut in 0..rec.len() {
                    assert!(take_carried(&mut &rec[..cut], &part, &ty, desc).is_err());
                }
                for i in 0..rec.len() {
                    for b in [0u8, 1, 2, 3, 0x7f, 0x80, 0xff] {
                        let mut d = rec.clone();
                        d[i] = b;
                        let _ = take_carried(&mut &d[..], &part, &ty, desc);
                    }
                }
                for i in 0..part.len() {
                    let mut p = part.clone();
                    p[i] ^= 0x41;
                    let _ = take_carried(&mut &rec[..], &p, &ty, desc);
                }
            }
        }
    }
    // Long runs of trailing spaces: counted up to 65,535, carried whole
    // past that; a count above it in a record is an error.
    let ty = SqlType::Str { kind: StrKind::Var, len: 70_000, coll: Collation::Utf8mb4GeneralCi };
    for n in [127usize, 128, 16_383, 16_384, 65_535, 65_536] {
        let mut s = b"x".to_vec();
        s.resize(1 + n, b' ');
        let v = Value::Str(s);
        let mut part = Vec::new();
        encode_part(&mut part, &v, &ty, false, None).unwrap();
        let mut rec = Vec::new();
        put_carried_as(&mut rec, &v, &ty, true).unwrap();
        assert_eq!(rec[0] == 2, n <= 65_535, "{n}");
        let got = take_carried(&mut &rec[..], &part, &ty, false).unwrap();
        assert!(matches!((&got, &v), (Value::Str(g), Value::Str(w)) if g == w), "{n}");
    }
    let mut part = Vec::new();
    encode_part(&mut part, &Value::str("x"), &ty, false, None).unwrap();
    for rec in [
        &[2u8, 0x80, 0x80, 0x04, 0][..],
        &[2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1, 0],
    ] {
        assert!(take_carried(&mut &rec[..], &part, &ty, false).is_err(), "{rec:?}");
    }
}
