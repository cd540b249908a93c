//! Collations: known answers from MariaDB/MySQL, and properties of
//! `compare` and `sort_key` over random strings.
use std::cmp::Ordering::{self, Equal, Greater, Less};

use fractaldb_sql::collation::{
    char_len, compare, hash_key, like, lower, sort_key, sort_key_len, truncate_chars, upper,
};
use fractaldb_sql::types::{Collation, ALL_COLLATIONS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use Collation::*;

fn key(c: Collation, s: &[u8]) -> Vec<u8> {
    let mut k = Vec::new();
    sort_key(c, s, &mut k);
    k
}

fn cmp(c: Collation, a: &str, b: &str) -> Ordering {
    compare(c, a.as_bytes(), b.as_bytes())
}

const TEXT: &[Collation] = &[
    Utf8mb4GeneralCi,
    Utf8mb4Bin,
    Utf8mb4UnicodeCi,
    Utf8mb4_0900AiCi,
    Utf8mb3GeneralCi,
    Utf8mb3Bin,
    Latin1SwedishCi,
    Latin1Bin,
];

#[test]
fn padding() {
    for &c in ALL_COLLATIONS {
        let pad = c.pad_space();
        assert_eq!(cmp(c, "a", "a  ") == Equal, pad, "{c:?}");
        assert_eq!(cmp(c, "", "   ") == Equal, pad, "{c:?}");
        if pad {
            // The padding space weighs more than a tab.
            assert_eq!(cmp(c, "a", "a\t"), Greater, "{c:?}");
            assert_eq!(cmp(c, "a \t", "a"), Less, "{c:?}");
            assert_eq!(cmp(c, "a  b", "a"), Greater, "{c:?}");
            assert_eq!(cmp(c, "a  b", "a b"), Less, "{c:?}");
        }
        if !pad {
            assert_eq!(cmp(c, "a", "a "), Less, "{c:?}");
        }
    }
}

#[test]
fn case_and_accents() {
    for c in [Utf8mb4GeneralCi, Utf8mb3GeneralCi, Utf8mb4UnicodeCi, Utf8mb4_0900AiCi, Latin1SwedishCi] {
        assert_eq!(cmp(c, "abc", "ABC"), Equal, "{c:?}");
        assert_eq!(cmp(c, "é", "E"), Equal, "{c:?}");
        assert_eq!(cmp(c, "é", "e"), Equal, "{c:?}");
        assert_eq!(cmp(c, "a", "b"), Less, "{c:?}");
        assert_eq!(cmp(c, "B", "a"), Greater, "{c:?}");
        assert_eq!(cmp(c, "Ç", "c"), Equal, "{c:?}");
    }
    for c in [Utf8mb4Bin, Utf8mb3Bin, Latin1Bin, Binary] {
        assert_eq!(cmp(c, "abc", "ABC"), Greater, "{c:?}");
        assert_eq!(cmp(c, "é", "e"), Greater, "{c:?}");
    }
    // general_ci: ß weighs as S; supplementary characters are all equal.
    assert_eq!(cmp(Utf8mb4GeneralCi, "ß", "s"), Equal);
    assert_eq!(cmp(Utf8mb4GeneralCi, "straße", "strasse"), Less);
    assert_eq!(cmp(Utf8mb4GeneralCi, "😀", "🐬"), Equal);
    assert_eq!(cmp(Utf8mb4GeneralCi, "😀", "\u{FFFD}"), Equal);
    assert_eq!(cmp(Utf8mb4GeneralCi, "Ø", "O"), Greater);
    assert_eq!(cmp(Utf8mb4GeneralCi, "ą", "A"), Equal);
    // unicode_ci: expansions, stroke letters, emoji all equal.
    assert_eq!(cmp(Utf8mb4UnicodeCi, "straße", "STRASSE"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "Æ", "ae"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "œuvre", "OEUVRE"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "Łódź", "lodz"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "e\u{301}", "é"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "😀", "🐬"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "a\u{a0}", "a"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "a\0", "a"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "_", "a"), Less);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "9", "a"), Less);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "€", "0"), Less);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "z", "α"), Less);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "ά", "Α"), Equal);
    assert_eq!(cmp(Utf8mb4UnicodeCi, "ё", "Е"), Equal);
    // 0900_ai_ci: emoji differ, no padding.
    assert_eq!(cmp(Utf8mb4_0900AiCi, "😀", "🐬"), Greater);
    assert_eq!(cmp(Utf8mb4_0900AiCi, "a", "a\t"), Less);
    assert_eq!(cmp(Utf8mb4_0900AiCi, "straße", "strasse"), Equal);
    // latin1_swedish_ci: Swedish letters after Z, ü = y.
    assert_eq!(cmp(Latin1SwedishCi, "Å", "Z"), Greater);
    assert_eq!(cmp(Latin1SwedishCi, "Ä", "Å"), Greater);
    assert_eq!(cmp(Latin1SwedishCi, "Ö", "Ä"), Greater);
    assert_eq!(cmp(Latin1SwedishCi, "Ä", "æ"), Equal);
    assert_eq!(cmp(Latin1SwedishCi, "ü", "Y"), Equal);
    assert_eq!(cmp(Latin1SwedishCi, "å", "["), Equal);
    // Bad UTF-8 sorts after every character.
    for &c in TEXT {
        assert_eq!(compare(c, b"\xff", "😀".as_bytes()), Greater, "{c:?}");
        assert_eq!(compare(c, b"a\x80", b"a\xff"), Less, "{c:?}");
    }
}

/// `_bin` against an independent model: code points, padded with spaces.
#[test]
fn bin_matches_padded_code_points() {
    let mut rng = rng("bin_model");
    for _ in 0..20000 {
        let a = random_valid(&mut rng);
        let b = random_valid(&mut rng);
        let mut ca: Vec<char> = a.chars().collect();
        let mut cb: Vec<char> = b.chars().collect();
        let n = ca.len().max(cb.len());
        ca.resize(n, ' ');
        cb.resize(n, ' ');
        assert_eq!(cmp(Utf8mb4Bin, &a, &b), ca.cmp(&cb), "{a:?} {b:?}");
    }
}

const ALPHABET: &[&[u8]] = &[
    b" ",
    b"\t",
    b"\0",
    b"a",
    b"A",
    b"b",
    b"e",
    b"s",
    b"ss",
    "é".as_bytes(),
    "É".as_bytes(),
    "ß".as_bytes(),
    "€".as_bytes(),
    "😀".as_bytes(),
    "🐬".as_bytes(),
    "\u{a0}".as_bytes(),
    "\u{301}".as_bytes(),
    "Å".as_bytes(),
    "ü".as_bytes(),
    b"y",
    b"_",
    b"\x7f",
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xf0\x9f",
    b"\x1f",
    b"~",
];

fn random_str(rng: &mut SmallRng) -> Vec<u8> {
    let n = rng.gen_range(0..7);
    let mut s = Vec::new();
    for _ in 0..n {
        s.extend_from_slice(ALPHABET[rng.gen_range(0..ALPHABET.len())]);
    }
    // Trailing spaces are where PAD SPACE is subtle: add some often.
    if rng.gen_bool(0.3) {
        s.extend(std::iter::repeat_n(b' ', rng.gen_range(1..3)));
    }
    s
}

fn random_valid(rng: &mut SmallRng) -> String {
    loop {
        let s = random_str(rng);
        if let Ok(s) = String::from_utf8(s) {
            return s;
        }
    }
}

fn rng(name: &str) -> SmallRng {
    let seed = std::env::var("FRACTALDB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen::<u64>());
    println!("{name}: FRACTALDB_SEED={seed}");
    SmallRng::seed_from_u64(seed)
}

/// For every collation: compare agrees with the key order, keys of unequal
/// strings decide before either ends (so any suffixes may follow), equal
/// strings get equal keys, and the length of a key can be found from the
/// key alone, complemented or not.
#[test]
fn sort_keys_order_like_compare() {
    let mut rng = rng("sort_keys");
    for &c in ALL_COLLATIONS {
        for _ in 0..30000 {
            let a = random_str(&mut rng);
            let b = random_str(&mut rng);
            let ord = compare(c, &a, &b);
            assert_eq!(compare(c, &b, &a), ord.reverse(), "{c:?} {a:?} {b:?}");
            let (ka, kb) = (key(c, &a), key(c, &b));
            assert_eq!(ka.cmp(&kb), ord, "{c:?} {a:?} {b:?} {ka:x?} {kb:x?}");
            assert_eq!(hash_key(c, &a), ka);
            if ord == Equal {
                assert_eq!(ka, kb, "{c:?} {a:?} {b:?}");
            } else {
                assert!(!ka.starts_with(&kb) && !kb.starts_with(&ka), "{c:?} {a:?} {b:?}");
                let mut xa = ka.clone();
                let mut xb = kb.clone();
                xa.extend_from_slice(&random_str(&mut rng));
                xb.extend_from_slice(&random_str(&mut rng));
                assert_eq!(xa.cmp(&xb), ord, "{c:?} {a:?} {b:?}");
                // Complemented (descending) keys order the other way.
                let na: Vec<u8> = xa.iter().map(|b| !b).collect();
                let nb: Vec<u8> = xb.iter().map(|b| !b).collect();
                assert_eq!(na.cmp(&nb), ord.reverse(), "{c:?} {a:?} {b:?}");
            }
            let mut k = ka.clone();
            k.extend_from_slice(&random_str(&mut rng));
            assert_eq!(sort_key_len(c, &k, false), Some(ka.len()), "{c:?} {a:?}");
            let nk: Vec<u8> = k.iter().map(|b| !b).collect();
            assert_eq!(sort_key_len(c, &nk, true), Some(ka.len()), "{c:?} {a:?}");
            assert_eq!(sort_key_len(c, &ka[..ka.len() - 1], false), None, "{c:?} {a:?}");
        }
    }
}

/// Sorting by compare and by key gives the same order, and compare is
/// transitive over the sorted list.
#[test]
fn compare_is_a_total_order() {
    let mut rng = rng("total_order");
    for &c in ALL_COLLATIONS {
        let mut v: Vec<Vec<u8>> = (0..400).map(|_| random_str(&mut rng)).collect();
        v.sort_by(|a, b| compare(c, a, b));
        for w in v.windows(2) {
            assert_ne!(compare(c, &w[0], &w[1]), Greater, "{c:?}");
        }
        for i in 0..v.len() {
            for j in i..v.len().min(i + 40) {
                assert_ne!(compare(c, &v[i], &v[j]), Greater, "{c:?} {:?} {:?}", v[i], v[j]);
            }
        }
    }
}

#[test]
fn garbage_keys_never_panic() {
    let mut rng = rng("garbage");
    for &c in ALL_COLLATIONS {
        for _ in 0..20000 {
            let n = rng.gen_range(0..12);
            let g: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            if let Some(len) = sort_key_len(c, &g, rng.gen()) {
                assert!(len <= g.len());
            }
            let _ = fractaldb_sql::collation::decode_binary_key(&g, rng.gen());
            let _ = compare(c, &g, b"abc");
            let _ = like(c, &g, &g, b'\\');
            let _ = upper(c, &g);
            let _ = char_len(c, &g);
        }
    }
}

#[test]
fn lengths_and_truncation() {
    let s = "aé😀".as_bytes();
    assert_eq!(char_len(Utf8mb4GeneralCi, s), 3);
    assert_eq!(char_len(Binary, s), 7);
    assert_eq!(char_len(Utf8mb4Bin, b"a\xffb"), 3);
    assert_eq!(truncate_chars(Utf8mb4GeneralCi, s, 2), "aé".as_bytes());
    assert_eq!(truncate_chars(Utf8mb4GeneralCi, s, 9), s);
    assert_eq!(truncate_chars(Binary, s, 2), &s[..2]);
    assert_eq!(truncate_chars(Utf8mb4Bin, s, 0), b"");
}

#[test]
fn like_patterns() {
    let ci = Utf8mb4GeneralCi;
    let t = |c, text: &str, pat: &str| like(c, text.as_bytes(), pat.as_bytes(), b'\\');
    assert!(t(ci, "abc", "abc"));
    assert!(t(ci, "ABC", "a%"));
    assert!(t(ci, "abc", "%c"));
    assert!(t(ci, "abc", "%b%"));
    assert!(t(ci, "abc", "a_c"));
    assert!(!t(ci, "abc", "a_"));
    assert!(!t(ci, "a ", "a"));
    assert!(!t(ci, "a", "a "));
    assert!(t(ci, "é", "_"));
    assert!(t(ci, "é", "E"));
    assert!(t(ci, "", "%"));
    assert!(t(ci, "", "%%"));
    assert!(!t(ci, "", "_"));
    assert!(t(ci, "a%b", "a\\%b"));
    assert!(!t(ci, "axb", "a\\%b"));
    assert!(t(ci, "a_b", "a\\_b"));
    assert!(!t(ci, "axb", "a\\_b"));
    assert!(t(ci, "a\\", "a\\"));
    assert!(t(ci, "mississippi", "%iss%ippi"));
    assert!(t(ci, "mississippi", "m%s%s%p_"));
    assert!(!t(ci, "mississippi", "m%s%s%p"));
    assert!(t(ci, "😀x", "_X"));
    assert!(!t(Utf8mb4Bin, "ABC", "a%"));
    assert!(t(Utf8mb4Bin, "ABC", "A%"));
    assert!(!t(Binary, "é", "_"));
    assert!(t(Binary, "é", "__"));
    assert!(!t(Utf8mb4UnicodeCi, "Straße", "strasse"));
    assert!(t(Utf8mb4UnicodeCi, "STRAßE", "stra_e"));
    assert!(like(ci, b"a|xyzb", b"a||%b", b'|'));
    assert!(like(ci, b"a%b", b"a|%b", b'|'));
    assert!(like(ci, b"a\\b", b"a\\b", 0));
}

#[test]
fn case_mapping() {
    assert_eq!(upper(Utf8mb4GeneralCi, "abcé ß😀".as_bytes()), "ABCÉ ß😀".as_bytes());
    assert_eq!(lower(Utf8mb4GeneralCi, "ABCÉ İ".as_bytes()), "abcé i".as_bytes());
    assert_eq!(upper(Utf8mb4Bin, "ǆ".as_bytes()), "Ǆ".as_bytes());
    assert_eq!(upper(Latin1SwedishCi, "ÿé".as_bytes()), "ÿÉ".as_bytes());
    assert_eq!(upper(Binary, b"abc"), b"abc");
    assert_eq!(upper(Utf8mb4GeneralCi, b"a\xffb"), b"A\xffB");
}
