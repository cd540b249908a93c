//! Collations: comparison, order-preserving sort keys, LIKE and case mapping
//! for each [`Collation`].
//!
//! # Model
//!
//! Every text collation turns a string into a sequence of *weights* (`u32`),
//! one or more per character (none for ignorable characters), and compares
//! strings by comparing their weight sequences. Text is UTF-8 whatever the
//! column's character set; a byte that is not part of valid UTF-8 becomes
//! its own unit whose weight is above the weight of every character, so
//! garbage compares as "bytes after valid text" and nothing panics.
//!
//! PAD SPACE collations (all but `binary` and `utf8mb4_0900_ai_ci`) compare
//! as if the shorter string were padded with spaces: trailing spaces do not
//! count ('a' = 'a  '), but 'a' > 'a\t' because the padding space weighs
//! more than a tab. The space's weight is called S below.
//!
//! `binary` compares bytes (memcmp, no padding).
//!
//! # Weights per collation, and where they differ from MariaDB
//!
//! - `*_bin` (utf8mb4, utf8mb3, latin1): the code point. Exactly MariaDB's
//!   order (latin1_bin compares latin1 bytes, which are the code points
//!   U+0000..U+00FF).
//! - `utf8mb4_general_ci` / `utf8mb3_general_ci`: an approximation of
//!   MariaDB's `my_unicase_default` tables: Latin letters with diacritics
//!   (Latin-1, Latin Extended-A, and the common Latin Extended-B letters)
//!   weigh as their base capital ('é' = 'E' = 'e', 'ß' = 'S'); letters with a
//!   stroke (Đ Ħ Ł Ŀ Ŧ Ø) and Æ Ð Þ Œ Ĳ keep their own (capital) weight, as
//!   in MariaDB; Greek letters with tonos/dialytika weigh as their base
//!   capital; every other BMP character weighs as its simple uppercase
//!   (Rust's Unicode tables, newer than MariaDB's, so a few recent case
//!   pairs are folded where MariaDB would not); supplementary characters
//!   (above U+FFFF) all weigh 0xFFFD, as in MariaDB, so all emoji are equal.
//! - `latin1_swedish_ci`: MariaDB's `sort_order_latin1` table verbatim (case
//!   insensitive, accents folded, but Å = '[', Ä = Æ = '\\', Ö = ']' so they
//!   sort after Z, Ü = Ý = Y, Ø and Þ separate). Characters above U+00FF,
//!   which a latin1 column cannot hold, weigh above all latin1 characters.
//! - `utf8mb4_unicode_ci` (UCA 4.0.0 in MariaDB) and `utf8mb4_0900_ai_ci`
//!   (UCA 9.0.0, NO PAD, in MySQL 8): an approximation of the primary
//!   strength, without the DUCET table:
//!   - ignorable (no weight): control characters other than TAB..CR and
//!     NEL, combining marks (U+0300..U+036F, U+1AB0..U+1AFF,
//!     U+1DC0..U+1DFF, U+20D0..U+20FF, U+FE20..U+FE2F), variation
//!     selectors, soft hyphen, zero-width and bidi format characters, BOM;
//!     so a decomposed 'e' + U+0301 equals 'e';
//!   - then, in this order (as in the DUCET): TAB < LF < VT < FF < CR < NEL
//!     < U+2028 < U+2029 < space = every other Unicode space (NBSP, U+3000,
//!     ...); ASCII punctuation in DUCET order
//!     `_ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # % ` ^ + < = > | ~`;
//!     all other symbols and punctuation by code point; currency signs
//!     (`$ ¢ £ ¤ ¥`, U+20A0.., ...) by code point; digits 0..9 (ASCII,
//!     fullwidth, super/subscript, Arabic-Indic, Devanagari digits weigh as
//!     the ASCII digit); other numeric characters by code point; Latin
//!     letters a..z with ð after d, ə after e, ı after i, ŋ after n, ĸ after
//!     q and þ after z; then all other letters by code point of their
//!     lowercase;
//!   - Latin letters fold case and diacritics, including stroke letters
//!     (ø = o, ł = l, đ = d, as UCA's primary level does), fullwidth Latin
//!     letters fold to ASCII; expansions: ß ẞ → ss, æ → ae, œ → oe,
//!     ĳ → ij, ǆ ǳ → dz, ǉ → lj, ǌ → nj, ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ → ff fi fl ffi ffl st st;
//!   - Greek tonos/dialytika and final sigma fold (ά = α, ς = σ), Cyrillic
//!     ё ѐ → е, й ѝ → и, ї → і, ў → у, ѓ → г, ќ → к, katakana weigh as
//!     hiragana;
//!   - `utf8mb4_unicode_ci` only: supplementary characters all weigh as
//!     one character above the BMP, as MariaDB's UCA 4.0.0 gives them all
//!     0xFFFD; `utf8mb4_0900_ai_ci` classifies them like BMP characters.
//!
//!   Not modelled: the DUCET's exact order inside symbols and non-Latin
//!   scripts (we use code point order there), Latin Extended Additional
//!   (Vietnamese: ạ ả ấ ... are distinct letters here), contractions,
//!   secondary and tertiary strengths (never needed: `_ci`/`_ai` compare at
//!   primary strength only).
//!
//! # Sort keys
//!
//! [`sort_key`] appends a byte string whose bytewise order is [`compare`]'s
//! order and which is self-delimiting (no key is a proper prefix of
//! another), so key parts can follow it. Each weight has a prefix-free,
//! order-preserving byte code:
//!
//! - weights below S: `0x01 w` (two bytes);
//! - weights above S, `*_bin`, `*_general_ci`, `latin1_swedish_ci`: the
//!   weight written as UTF-8 (0x21..0x7F in one byte, lead 0xC2..0xF7),
//!   extended with `0xF8 w:u32be` for weights ≥ 0x200000;
//! - weights above S, `utf8mb4_unicode_ci` / `utf8mb4_0900_ai_ci`: one
//!   class byte ≥ 0x21 (ASCII punctuation, digits and Latin letters are one
//!   byte each), followed by a 3-byte code point for the classes ordered by
//!   code point (other symbols 0x40, currency 0x41, other numerics 0x4C,
//!   other letters 0x6D, invalid bytes 0x6F).
//!
//! PAD SPACE keys: trailing S weights are dropped, every remaining S is
//! written `0x02` if the next non-S weight is below S and `0x04` if it is
//! above S, and the key ends with `0x03`. The order of the codes is
//! `0x01..` (below S) < `0x02` (space, then lower) < `0x03` (end) < `0x04`
//! (space, then higher) < `0x21..` (above S), which is exactly the padded
//! comparison: where one string ends (as if followed by spaces forever) the
//! other one's next non-space weight decides against S, and where both have
//! a run of spaces the first non-space weight after the shorter run decides
//! against S or against the other's weight.
//!
//! NO PAD keys (`utf8mb4_0900_ai_ci`): the codes of all weights (space is
//! the single byte 0x20), then `0x00`.
//!
//! `binary` keys: the bytes with 0x00 written `0x00 0xFF`, then `0x00 0x01`.
use std::cmp::Ordering;

use crate::types::Collation;

/// Compares two strings of `coll` (UTF-8 text, or bytes for `Binary`) as
/// MySQL does: case-insensitively for the `_ci` collations, PAD SPACE for
/// all but `binary` and `utf8mb4_0900_ai_ci` (trailing spaces do not count).
pub fn compare(coll: Collation, a: &[u8], b: &[u8]) -> Ordering {
    let kind = Kind::of(coll);
    if kind == Kind::Binary {
        return a.cmp(b);
    }
    let s = kind.space();
    let mut wa = Weights::new(kind, a);
    let mut wb = Weights::new(kind, b);
    loop {
        match (wa.next(), wb.next()) {
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
            }
            (None, None) => return Ordering::Equal,
            (Some(x), None) => {
                return if kind.pad() { rest_vs_space(x, &mut wa, s) } else { Ordering::Greater };
            }
            (None, Some(y)) => {
                return if kind.pad() { rest_vs_space(y, &mut wb, s).reverse() } else { Ordering::Less };
            }
        }
    }
}

/// The rest of a string (its next weight `first`, then `rest`) against an
/// endless run of spaces.
fn rest_vs_space(first: u32, rest: &mut Weights, s: u32) -> Ordering {
    let mut w = first;
    loop {
        if w != s {
            return w.cmp(&s);
        }
        match rest.next() {
            Some(n) => w = n,
            None => return Ordering::Equal,
        }
    }
}

/// Appends the sort key of `s` to `out`: for any a, b of this collation,
/// `compare(a, b)` equals the bytewise order of their sort keys followed by
/// anything (the key is self-delimiting: no key is a prefix of another
/// unless they are equal), and equal strings get equal keys. Byte layout in
/// the module documentation.
pub fn sort_key(coll: Collation, s: &[u8], out: &mut Vec<u8>) {
    let kind = Kind::of(coll);
    // Most keys are about as long as the text (ASCII, binary): room for
    // that at once rather than growing byte by byte.
    out.reserve(s.len() + 2);
    match kind {
        Kind::Binary => {
            for &b in s {
                if b == 0 {
                    out.extend_from_slice(&[0x00, 0xFF]);
                } else {
                    out.push(b);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
        }
        _ if !kind.pad() => {
            for w in Weights::new(kind, s) {
                kind.encode(w, out);
            }
            out.push(NOPAD_END);
        }
        // ASCII text in general_ci or bin: each byte is its own weight
        // (general_ci upper-cases it), with no UTF-8 decoding; the same
        // bytes as `pad_key` gives (a test holds them equal).
        _ if matches!(kind, Kind::General | Kind::Bin) && s.is_ascii() => {
            let sp = kind.space();
            let mut run = 0usize;
            {
                for &b in s {
                    let w = if kind == Kind::General { b.to_ascii_uppercase() } else { b };
                    if w == b' ' {
                        run += 1;
                        continue;
                    }
                    if run > 0 {
                        let tag = if u32::from(w) > sp { T_SPACE_HI } else { T_SPACE_LO };
                        out.extend(std::iter::repeat_n(tag, run));
                        run = 0;
                    }
                    if w < 0x20 {
                        out.extend_from_slice(&[T_LOW, w]);
                    } else {
                        out.push(w);
                    }
                }
                out.push(T_END);
            }
        }
        _ => pad_key(kind, s, out),
    }
}

/// The PAD SPACE sort key of `s`, weight by weight. Streamed: a run of
/// spaces is held back as a count until the weight after it says which tag
/// it gets; a run at the end is dropped (trailing spaces do not count).
fn pad_key(kind: Kind, s: &[u8], out: &mut Vec<u8>) {
    let sp = kind.space();
    let mut run = 0usize;
    for w in Weights::new(kind, s) {
        if w == sp {
            run += 1;
            continue;
        }
        if run > 0 {
            let tag = if w > sp { T_SPACE_HI } else { T_SPACE_LO };
            out.extend(std::iter::repeat_n(tag, run));
            run = 0;
        }
        kind.encode(w, out);
    }
    out.push(T_END);
}

/// The ASCII text a PAD SPACE `*_bin` or `*_general_ci` sort key at the
/// front of `key` spells (bytewise complemented when `complemented`), one
/// byte per weight: `*_general_ci` letters upper case, the trailing spaces
/// [`sort_key`] drops gone. `None` for another collation, a weight above
/// U+007F, or a key that is not well formed. For ASCII text `s` of those
/// collations this is `s` without its trailing spaces (upper-cased for
/// `_ci`), so a reader can rebuild `s` from its key with its letters'
/// case and its trailing spaces (`keycodec::put_carried`, which checks
/// the rebuild before it relies on it).
pub fn ascii_of_key(coll: Collation, key: &[u8], complemented: bool) -> Option<Vec<u8>> {
    if !matches!(Kind::of(coll), Kind::General | Kind::Bin) {
        return None;
    }
    let mut out = Vec::with_capacity(key.len());
    let mut bytes = key.iter().map(|&b| if complemented { !b } else { b });
    loop {
        match bytes.next()? {
            T_END => return Some(out),
            T_SPACE_LO | T_SPACE_HI => out.push(b' '),
            T_LOW => {
                let w = bytes.next()?;
                if w >= 0x20 {
                    return None;
                }
                out.push(w);
            }
            b @ 0x21..=0x7F => out.push(b),
            _ => return None,
        }
    }
}

/// The key GROUP BY, DISTINCT and hash joins group by: the sort key, so two
/// strings get the same key exactly when [`compare`] finds them equal.
pub fn hash_key(coll: Collation, s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    sort_key(coll, s, &mut out);
    out
}

/// The length of the sort key at the front of `key` (bytewise complemented
/// when `complemented`, as descending index parts are), or `None` when
/// `key` does not start with a well-formed sort key of `coll`.
pub fn sort_key_len(coll: Collation, key: &[u8], complemented: bool) -> Option<usize> {
    let kind = Kind::of(coll);
    let at = |i: usize| key.get(i).map(|&b| if complemented { !b } else { b });
    let mut i = 0;
    loop {
        let b = at(i)?;
        let len = match kind {
            Kind::Binary => {
                if b == 0x00 {
                    match at(i + 1)? {
                        0x01 => return Some(i + 2),
                        0xFF => 2,
                        _ => return None,
                    }
                } else {
                    1
                }
            }
            _ => match b {
                0x00 if !kind.pad() => return Some(i + 1),
                T_LOW => 2,
                T_SPACE_LO | T_SPACE_HI if kind.pad() => 1,
                T_END if kind.pad() => return Some(i + 1),
                0x20 if !kind.pad() => 1,
                0x21.. => kind.code_len(b)?,
                _ => return None,
            },
        };
        at(i + len - 1)?;
        i += len;
    }
}

/// Reads back the bytes of a `binary` sort key at the front of `key`
/// (complemented when `complemented`): the bytes and the key's length.
pub fn decode_binary_key(key: &[u8], complemented: bool) -> Option<(Vec<u8>, usize)> {
    let at = |i: usize| key.get(i).map(|&b| if complemented { !b } else { b });
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match at(i)? {
            0x00 => match at(i + 1)? {
                0x01 => return Some((out, i + 2)),
                0xFF => {
                    out.push(0);
                    i += 2;
                }
                _ => return None,
            },
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// The number of characters in `s`: bytes for `binary`, UTF-8 characters
/// otherwise (a byte that is not valid UTF-8 counts as one character).
pub fn char_len(coll: Collation, s: &[u8]) -> usize {
    if coll == Collation::Binary {
        return s.len();
    }
    Units(s).count()
}

/// The first `n` characters of `s` (all of it if it is shorter), counted
/// as [`char_len`] counts them.
pub fn truncate_chars(coll: Collation, s: &[u8], n: usize) -> &[u8] {
    if coll == Collation::Binary {
        return &s[..n.min(s.len())];
    }
    let mut rest = s;
    for _ in 0..n {
        match next_unit(rest) {
            Some((_, len)) => rest = &rest[len..],
            None => break,
        }
    }
    &s[..s.len() - rest.len()]
}

/// `text LIKE pattern ESCAPE escape`: `%` matches any run of characters,
/// `_` exactly one character (a byte for `binary`), `escape` followed by
/// any character matches that character literally (0 means no escape
/// character, as `ESCAPE ''`; an escape at the end of the pattern matches
/// itself). Characters match when the collation weighs them equal
/// (case-insensitively for `_ci`), one character against one: no padding
/// ('a ' LIKE 'a' is false) and no expansions ('ß' LIKE 'ss' is false).
pub fn like(coll: Collation, text: &[u8], pattern: &[u8], escape: u8) -> bool {
    let kind = Kind::of(coll);
    let units = |s: &[u8]| -> Vec<Unit> {
        if kind == Kind::Binary {
            s.iter().map(|&b| Unit::Char(b as char)).collect()
        } else {
            Units(s).collect()
        }
    };
    let t = units(text);
    let praw = units(pattern);
    let is = |u: Unit, b: u8| u == Unit::Char(b as char);
    let mut p = Vec::with_capacity(praw.len());
    let mut i = 0;
    while i < praw.len() {
        let u = praw[i];
        if escape != 0 && is(u, escape) && i + 1 < praw.len() {
            p.push(Pat::Lit(praw[i + 1]));
            i += 2;
            continue;
        }
        p.push(if is(u, b'%') {
            Pat::Many
        } else if is(u, b'_') {
            Pat::One
        } else {
            Pat::Lit(u)
        });
        i += 1;
    }
    let eq = |x: Unit, y: Unit| {
        x == y
            || (matches!(kind, Kind::General | Kind::Latin1 | Kind::Unicode | Kind::Uca900) && {
                let (wx, wy) = (unit_weights(kind, x), unit_weights(kind, y));
                wx.as_slice() == wy.as_slice()
            })
    };
    // Greedy matching with backtracking to the last `%`: linear in practice,
    // O(len(text) * len(pattern)) at worst.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                Pat::Many => {
                    star = Some((pi + 1, ti));
                    pi += 1;
                    continue;
                }
                Pat::One => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                Pat::Lit(u) if eq(u, t[ti]) => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                Pat::Lit(_) => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|x| *x == Pat::Many)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pat {
    Lit(Unit),
    One,
    Many,
}

/// UPPER(): each character's simple uppercase mapping (a character whose
/// uppercase is several characters, like 'ß', stays as it is; latin1
/// collations keep characters whose uppercase is not latin1, like 'ÿ').
/// Bytes that are not UTF-8 are kept; identity for `binary`.
pub fn upper(coll: Collation, s: &[u8]) -> Vec<u8> {
    map_case(coll, s, true)
}

/// LOWER(): each character's simple lowercase mapping (see [`upper`]).
pub fn lower(coll: Collation, s: &[u8]) -> Vec<u8> {
    map_case(coll, s, false)
}

fn map_case(coll: Collation, s: &[u8], up: bool) -> Vec<u8> {
    if coll == Collation::Binary {
        return s.to_vec();
    }
    let latin1 = matches!(coll, Collation::Latin1Bin | Collation::Latin1SwedishCi);
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s;
    while let Some((u, len)) = next_unit(rest) {
        match u {
            Unit::Bad(b) => out.push(b),
            Unit::Char(c) => {
                let m = if up { simple_upper(c) } else { simple_lower(c) };
                let m = if latin1 && (c as u32) <= 0xFF && (m as u32) > 0xFF { c } else { m };
                let mut buf = [0u8; 4];
                out.extend_from_slice(m.encode_utf8(&mut buf).as_bytes());
            }
        }
        rest = &rest[len..];
    }
    out
}

fn simple_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn simple_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

// ---------------------------------------------------------------------------
// Units: characters, or bytes that are not valid UTF-8.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Char(char),
    Bad(u8),
}

/// The unit at the front of `s` and its length in bytes.
fn next_unit(s: &[u8]) -> Option<(Unit, usize)> {
    let b0 = *s.first()?;
    if b0 < 0x80 {
        return Some((Unit::Char(b0 as char), 1));
    }
    let bad = Some((Unit::Bad(b0), 1));
    let (len, min) = match b0 {
        0xC2..=0xDF => (2, 0x80),
        0xE0..=0xEF => (3, 0x800),
        0xF0..=0xF4 => (4, 0x10000),
        _ => return bad,
    };
    if s.len() < len {
        return bad;
    }
    let mut cp = (b0 as u32) & (0x7F >> len);
    for &b in &s[1..len] {
        if b & 0xC0 != 0x80 {
            return bad;
        }
        cp = (cp << 6) | (b & 0x3F) as u32;
    }
    if cp < min {
        return bad;
    }
    match char::from_u32(cp) {
        Some(c) => Some((Unit::Char(c), len)),
        None => bad,
    }
}

struct Units<'a>(&'a [u8]);

impl Iterator for Units<'_> {
    type Item = Unit;
    fn next(&mut self) -> Option<Unit> {
        let (u, len) = next_unit(self.0)?;
        self.0 = &self.0[len..];
        Some(u)
    }
}

// ---------------------------------------------------------------------------
// Weights.

/// The weighing families of the collations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Binary,
    /// `*_bin`: code points.
    Bin,
    General,
    Latin1,
    /// utf8mb4_unicode_ci.
    Unicode,
    /// utf8mb4_0900_ai_ci (NO PAD).
    Uca900,
}

/// Sort key codes (see the module documentation).
const T_LOW: u8 = 0x01;
const T_SPACE_LO: u8 = 0x02;
const T_END: u8 = 0x03;
const T_SPACE_HI: u8 = 0x04;
const NOPAD_END: u8 = 0x00;

impl Kind {
    fn of(coll: Collation) -> Kind {
        match coll {
            Collation::Binary => Kind::Binary,
            Collation::Utf8mb4Bin | Collation::Utf8mb3Bin | Collation::Latin1Bin => Kind::Bin,
            Collation::Utf8mb4GeneralCi | Collation::Utf8mb3GeneralCi => Kind::General,
            Collation::Latin1SwedishCi => Kind::Latin1,
            Collation::Utf8mb4UnicodeCi => Kind::Unicode,
            Collation::Utf8mb4_0900AiCi => Kind::Uca900,
        }
    }

    fn pad(self) -> bool {
        !matches!(self, Kind::Binary | Kind::Uca900)
    }

    /// The weight of ' '.
    fn space(self) -> u32 {
        match self {
            Kind::Unicode | Kind::Uca900 => lead(0x20),
            _ => 0x20,
        }
    }

    /// Appends the code of weight `w` (not the space's, in PAD collations).
    fn encode(self, w: u32, out: &mut Vec<u8>) {
        match self {
            Kind::Unicode | Kind::Uca900 => {
                let l = (w >> 24) as u8;
                if l < 0x20 {
                    out.extend_from_slice(&[T_LOW, l]);
                } else {
                    out.push(l);
                    if lead_has_code_point(l) {
                        out.extend_from_slice(&w.to_be_bytes()[1..]);
                    }
                }
            }
            _ => {
                if w < 0x20 {
                    out.extend_from_slice(&[T_LOW, w as u8]);
                } else {
                    ext_utf8(w, out);
                }
            }
        }
    }

    /// The length of the code whose first byte is `b` (≥ 0x21).
    fn code_len(self, b: u8) -> Option<usize> {
        match self {
            Kind::Unicode | Kind::Uca900 => Some(if lead_has_code_point(b) { 4 } else { 1 }),
            _ => match b {
                0x21..=0x7F => Some(1),
                0xC0..=0xDF => Some(2),
                0xE0..=0xEF => Some(3),
                0xF0..=0xF7 => Some(4),
                0xF8 => Some(5),
                _ => None,
            },
        }
    }
}

/// UTF-8 extended past U+10FFFF: order-preserving and prefix-free.
fn ext_utf8(v: u32, out: &mut Vec<u8>) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v < 0x800 {
        out.extend_from_slice(&[0xC0 | (v >> 6) as u8, 0x80 | (v & 0x3F) as u8]);
    } else if v < 0x1_0000 {
        out.extend_from_slice(&[
            0xE0 | (v >> 12) as u8,
            0x80 | ((v >> 6) & 0x3F) as u8,
            0x80 | (v & 0x3F) as u8,
        ]);
    } else if v < 0x20_0000 {
        out.extend_from_slice(&[
            0xF0 | (v >> 18) as u8,
            0x80 | ((v >> 12) & 0x3F) as u8,
            0x80 | ((v >> 6) & 0x3F) as u8,
            0x80 | (v & 0x3F) as u8,
        ]);
    } else {
        out.push(0xF8);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Up to three weights of one unit.
#[derive(Clone, Copy)]
struct Ws {
    w: [u32; 3],
    n: u8,
}

impl Ws {
    const NONE: Ws = Ws { w: [0; 3], n: 0 };
    fn one(w: u32) -> Ws {
        Ws { w: [w, 0, 0], n: 1 }
    }
    fn push(&mut self, w: u32) {
        if (self.n as usize) < self.w.len() {
            self.w[self.n as usize] = w;
            self.n += 1;
        }
    }
    fn as_slice(&self) -> &[u32] {
        &self.w[..self.n as usize]
    }
}

/// The weights of a string, in order.
struct Weights<'a> {
    kind: Kind,
    units: Units<'a>,
    pending: Ws,
    at: u8,
}

impl<'a> Weights<'a> {
    fn new(kind: Kind, s: &'a [u8]) -> Self {
        Weights { kind, units: Units(s), pending: Ws::NONE, at: 0 }
    }
}

impl Iterator for Weights<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        loop {
            if self.at < self.pending.n {
                self.at += 1;
                return Some(self.pending.w[self.at as usize - 1]);
            }
            let u = self.units.next()?;
            match self.kind {
                Kind::Bin | Kind::General | Kind::Latin1 => return Some(single_weight(self.kind, u)),
                _ => {
                    self.pending = unit_weights(self.kind, u);
                    self.at = 0;
                }
            }
        }
    }
}

fn unit_weights(kind: Kind, u: Unit) -> Ws {
    match kind {
        Kind::Unicode => uca_weights(u, false),
        Kind::Uca900 => uca_weights(u, true),
        Kind::Binary => Ws::one(match u {
            Unit::Char(c) => c as u32,
            Unit::Bad(b) => b as u32,
        }),
        _ => Ws::one(single_weight(kind, u)),
    }
}

/// The one weight of a unit in the collations without expansions.
fn single_weight(kind: Kind, u: Unit) -> u32 {
    match (kind, u) {
        (Kind::Latin1, Unit::Char(c)) if (c as u32) <= 0xFF => SORT_ORDER_LATIN1[c as usize] as u32,
        (Kind::Latin1, Unit::Char(c)) => 0x100 + c as u32,
        (Kind::Latin1, Unit::Bad(b)) => 0x20_0000 + b as u32,
        (Kind::General, Unit::Char(c)) => general_weight(c),
        (Kind::General, Unit::Bad(b)) => 0x1_0000 + b as u32,
        (_, Unit::Char(c)) => c as u32,
        (_, Unit::Bad(b)) => 0x11_0000 + b as u32,
    }
}

/// MariaDB's `sort_order_latin1` (latin1_swedish_ci), indexed by latin1
/// byte = code point.
#[rustfmt::skip]
const SORT_ORDER_LATIN1: [u8; 256] = [
      0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
     16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
     32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
     48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
     64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
     80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
     96, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
     80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90,123,124,125,126,127,
    128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,
    144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159,
    160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,
    176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191,
     65, 65, 65, 65, 92, 91, 92, 67, 69, 69, 69, 69, 73, 73, 73, 73,
     68, 78, 79, 79, 79, 79, 93,215,216, 85, 85, 85, 89, 89,222,223,
     65, 65, 65, 65, 92, 91, 92, 67, 69, 69, 69, 69, 73, 73, 73, 73,
     68, 78, 79, 79, 79, 79, 93,247,216, 85, 85, 85, 89, 89,222,255,
];

/// Base letters of U+00C0..U+017F: a lowercase ASCII letter for a letter
/// that folds to it at the primary level, `*` for the letters handled by
/// [`latin_fold`] itself, `.` for × and ÷.
const LATIN_BASE: &[u8] = concat!(
    "aaaaaa*ceeeeiiii*nooooo.ouuuuy**", // U+00C0..U+00DF
    "aaaaaa*ceeeeiiii*nooooo.ouuuuy*y", // U+00E0..U+00FF
    "aaaaaacc",                         // U+0100 Ā ā Ă ă Ą ą Ć ć
    "ccccccdd",                         // U+0108 Ĉ ĉ Ċ ċ Č č Ď ď
    "ddeeeeee",                         // U+0110 Đ đ Ē ē Ĕ ĕ Ė ė
    "eeeegggg",                         // U+0118 Ę ę Ě ě Ĝ ĝ Ğ ğ
    "gggghhhh",                         // U+0120 Ġ ġ Ģ ģ Ĥ ĥ Ħ ħ
    "iiiiiiii",                         // U+0128 Ĩ ĩ Ī ī Ĭ ĭ Į į
    "i***jjkk",                         // U+0130 İ ı Ĳ ĳ Ĵ ĵ Ķ ķ
    "*lllllll",                         // U+0138 ĸ Ĺ ĺ Ļ ļ Ľ ľ Ŀ
    "lllnnnnn",                         // U+0140 ŀ Ł ł Ń ń Ņ ņ Ň
    "n***oooo",                         // U+0148 ň ŉ Ŋ ŋ Ō ō Ŏ ŏ
    "oo**rrrr",                         // U+0150 Ő ő Œ œ Ŕ ŕ Ŗ ŗ
    "rrssssss",                         // U+0158 Ř ř Ś ś Ŝ ŝ Ş ş
    "sstttttt",                         // U+0160 Š š Ţ ţ Ť ť Ŧ ŧ
    "uuuuuuuu",                         // U+0168 Ũ ũ Ū ū Ŭ ŭ Ů ů
    "uuuuwwyy",                         // U+0170 Ű ű Ų ų Ŵ ŵ Ŷ ŷ
    "yzzzzzzs",                         // U+0178 Ÿ Ź ź Ż ż Ž ž ſ
)
.as_bytes();
const _: () = assert!(LATIN_BASE.len() == 192);

/// The primary letters (UCA approximation) a Latin letter with diacritics,
/// ligature or stroke folds to, as lowercase letters of [`latin_slot`].
fn latin_fold(c: char) -> Option<&'static str> {
    let cp = c as u32;
    if (0xC0..0x180).contains(&cp) {
        let b = LATIN_BASE[(cp - 0xC0) as usize];
        if b.is_ascii_lowercase() {
            return Some(ASCII_LOWER[(b - b'a') as usize]);
        }
        if b == b'.' {
            return None;
        }
    }
    Some(match cp {
        0xC6 | 0xE6 => "ae",
        0xD0 | 0xF0 => "ð",
        0xDE | 0xFE => "þ",
        0xDF | 0x1E9E => "ss",
        0x131 => "ı",
        0x132 | 0x133 => "ij",
        0x138 => "ĸ",
        0x149 => "n",
        0x14A | 0x14B => "ŋ",
        0x152 | 0x153 => "oe",
        0xAA => "a",
        0xBA => "o",
        0x180 => "b",
        0x18F | 0x259 => "ə",
        0x1A0 | 0x1A1 => "o",
        0x1AF | 0x1B0 => "u",
        0x1B5 | 0x1B6 => "z",
        0x1C4..=0x1C6 | 0x1F1..=0x1F3 => "dz",
        0x1C7..=0x1C9 => "lj",
        0x1CA..=0x1CC => "nj",
        0x1CD | 0x1CE => "a",
        0x1CF | 0x1D0 => "i",
        0x1D1 | 0x1D2 => "o",
        0x1D3..=0x1DC => "u",
        0x1DE..=0x1E1 => "a",
        0x1E2 | 0x1E3 | 0x1FC | 0x1FD => "ae",
        0x1E4..=0x1E7 => "g",
        0x1E8 | 0x1E9 => "k",
        0x1EA..=0x1ED => "o",
        0x1F0 => "j",
        0x1F4 | 0x1F5 => "g",
        0x1F8 | 0x1F9 => "n",
        0x1FA | 0x1FB => "a",
        0x1FE | 0x1FF => "o",
        0x200..=0x203 | 0x226 | 0x227 => "a",
        0x204..=0x207 | 0x228 | 0x229 => "e",
        0x208..=0x20B => "i",
        0x20C..=0x20F | 0x22A..=0x231 => "o",
        0x210..=0x213 => "r",
        0x214..=0x217 => "u",
        0x218 | 0x219 => "s",
        0x21A | 0x21B => "t",
        0x21E | 0x21F => "h",
        0x232 | 0x233 => "y",
        0xFB00 => "ff",
        0xFB01 => "fi",
        0xFB02 => "fl",
        0xFB03 => "ffi",
        0xFB04 => "ffl",
        0xFB05 | 0xFB06 => "st",
        0xFF21..=0xFF3A => ASCII_LOWER[(cp - 0xFF21) as usize],
        0xFF41..=0xFF5A => ASCII_LOWER[(cp - 0xFF41) as usize],
        _ => return None,
    })
}

const ASCII_LOWER: [&str; 26] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u",
    "v", "w", "x", "y", "z",
];

/// Greek letters with tonos or dialytika, and final sigma: their base
/// (lowercase) letter.
fn greek_fold(c: char) -> Option<char> {
    Some(match c as u32 {
        0x386 | 0x3AC => '\u{3B1}',
        0x388 | 0x3AD => '\u{3B5}',
        0x389 | 0x3AE => '\u{3B7}',
        0x38A | 0x3AF | 0x390 | 0x3AA | 0x3CA => '\u{3B9}',
        0x38C | 0x3CC => '\u{3BF}',
        0x38E | 0x3CD | 0x3B0 | 0x3AB | 0x3CB => '\u{3C5}',
        0x38F | 0x3CE => '\u{3C9}',
        0x3C2 => '\u{3C3}',
        _ => return None,
    })
}

/// Cyrillic letters that decompose to a base letter and a combining mark:
/// their base (lowercase) letter.
fn cyrillic_fold(c: char) -> Option<char> {
    Some(match c as u32 {
        0x400 | 0x401 | 0x450 | 0x451 => '\u{435}',
        0x403 | 0x453 => '\u{433}',
        0x407 | 0x457 => '\u{456}',
        0x40C | 0x45C => '\u{43A}',
        0x40D | 0x45D | 0x419 | 0x439 => '\u{438}',
        0x40E | 0x45E => '\u{443}',
        _ => return None,
    })
}

/// Letters keeping their own weight in general_ci although [`latin_fold`]
/// folds them: the stroke letters.
fn general_keeps(cp: u32) -> bool {
    matches!(
        cp,
        0xD8 | 0xF8 | 0x149 | 0x110 | 0x111 | 0x126 | 0x127 | 0x13F
            ..=0x142 | 0x166 | 0x167 | 0x180 | 0x1E4 | 0x1E5
    )
}

/// utf8mb4_general_ci's weight of a character (see the module
/// documentation for how it approximates MariaDB's tables).
fn general_weight(c: char) -> u32 {
    let cp = c as u32;
    if cp < 0x80 {
        return c.to_ascii_uppercase() as u32;
    }
    if cp > 0xFFFF {
        return 0xFFFD;
    }
    match cp {
        0xDF => return 'S' as u32,
        0x1E2 | 0x1E3 | 0x1FC | 0x1FD => return 0xC6,
        0x1FE | 0x1FF => return 0xD8,
        _ => {}
    }
    if (0xC0..0x250).contains(&cp) && !general_keeps(cp) {
        if let Some(f) = latin_fold(c) {
            if f.len() == 1 {
                return f.as_bytes()[0].to_ascii_uppercase() as u32;
            }
        }
    }
    let c = greek_fold(c).unwrap_or(c);
    let u = simple_upper(c) as u32;
    if u > 0xFFFF {
        cp
    } else {
        u
    }
}

// UCA approximation: weights are `class << 24 | code point`, the class
// being the code's first byte (see the module documentation).
const L_SYMBOL: u8 = 0x40;
const L_CURRENCY: u8 = 0x41;
const L_DIGIT0: u8 = 0x42;
const L_NUMERIC: u8 = 0x4C;
const L_LATIN: u8 = 0x4D;
const L_LETTER: u8 = 0x6D;
const L_SUPPLEMENTARY: u8 = 0x6E;
const L_BAD: u8 = 0x6F;

/// ASCII punctuation in DUCET order; weights 0x21 + index.
const PUNCT_ORDER: &[u8; 31] = b"_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~";

fn lead(l: u8) -> u32 {
    (l as u32) << 24
}

fn lead_has_code_point(l: u8) -> bool {
    matches!(l, L_SYMBOL | L_CURRENCY | L_NUMERIC | L_LETTER | L_BAD)
}

/// The slot of a Latin letter: a..z with ð, ə, ı, ŋ, ĸ, þ after d, e, i,
/// n, q, z.
fn latin_slot(c: char) -> u8 {
    let base = |from: char, at: u8| at + (c as u32 - from as u32) as u8;
    match c {
        'a'..='d' => base('a', 0),
        'ð' => 4,
        'e' => 5,
        'ə' => 6,
        'f'..='i' => base('f', 7),
        'ı' => 11,
        'j'..='n' => base('j', 12),
        'ŋ' => 17,
        'o'..='q' => base('o', 18),
        'ĸ' => 21,
        'r'..='z' => base('r', 22),
        _ => 31, // 'þ'
    }
}

fn latin_weights(s: &str) -> Ws {
    let mut ws = Ws::NONE;
    for c in s.chars() {
        ws.push(lead(L_LATIN + latin_slot(c)));
    }
    ws
}

fn digit_value(cp: u32) -> Option<u32> {
    match cp {
        0x30..=0x39 => Some(cp - 0x30),
        0xFF10..=0xFF19 => Some(cp - 0xFF10),
        0x660..=0x669 => Some(cp - 0x660),
        0x6F0..=0x6F9 => Some(cp - 0x6F0),
        0x966..=0x96F => Some(cp - 0x966),
        0xB9 => Some(1),
        0xB2 => Some(2),
        0xB3 => Some(3),
        0x2070 => Some(0),
        0x2074..=0x2079 => Some(cp - 0x2070),
        0x2080..=0x2089 => Some(cp - 0x2080),
        _ => None,
    }
}

fn is_uca_ignorable(c: char) -> bool {
    let cp = c as u32;
    (c.is_control() && !matches!(cp, 0x09..=0x0D | 0x85))
        || matches!(
            cp,
            0xAD | 0x300..=0x36F
                | 0x483..=0x489
                | 0x1AB0..=0x1AFF
                | 0x1DC0..=0x1DFF
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x2064
                | 0x20D0..=0x20FF
                | 0xFE00..=0xFE0F
                | 0xFE20..=0xFE2F
                | 0xFEFF
        )
}

fn is_currency(cp: u32) -> bool {
    matches!(
        cp,
        0x24 | 0xA2..=0xA5
            | 0x58F
            | 0x60B
            | 0x9F2
            | 0x9F3
            | 0xE3F
            | 0x17DB
            | 0x20A0..=0x20CF
            | 0xFDFC
            | 0xFE69
            | 0xFF04
            | 0xFFE0
            | 0xFFE1
            | 0xFFE5
            | 0xFFE6
    )
}

/// The UCA-approximation weights of one unit (see the module
/// documentation); `v900` for utf8mb4_0900_ai_ci.
fn uca_weights(u: Unit, v900: bool) -> Ws {
    let c = match u {
        Unit::Bad(b) => return Ws::one(lead(L_BAD) | b as u32),
        Unit::Char(c) => c,
    };
    let cp = c as u32;
    if !v900 && cp > 0xFFFF {
        return Ws::one(lead(L_SUPPLEMENTARY));
    }
    match cp {
        0x09..=0x0D => return Ws::one(lead(cp as u8)),
        0x85 => return Ws::one(lead(0x0E)),
        0x2028 => return Ws::one(lead(0x0F)),
        0x2029 => return Ws::one(lead(0x10)),
        _ => {}
    }
    if is_uca_ignorable(c) {
        return Ws::NONE;
    }
    if c.is_whitespace() {
        return Ws::one(lead(0x20));
    }
    if c.is_ascii_alphabetic() {
        return Ws::one(lead(L_LATIN + latin_slot(c.to_ascii_lowercase())));
    }
    if let Some(d) = digit_value(cp) {
        return Ws::one(lead(L_DIGIT0 + d as u8));
    }
    if c.is_ascii() {
        if let Some(i) = PUNCT_ORDER.iter().position(|&p| p as u32 == cp) {
            return Ws::one(lead(0x21 + i as u8));
        }
    }
    if is_currency(cp) {
        return Ws::one(lead(L_CURRENCY) | cp);
    }
    if let Some(s) = latin_fold(c) {
        return latin_weights(s);
    }
    if c.is_alphabetic() {
        let l = match cp {
            0xB5 => '\u{3BC}',
            0x30A1..=0x30F6 => char::from_u32(cp - 0x60).unwrap_or(c),
            _ => simple_lower(c),
        };
        let l = greek_fold(l).or_else(|| cyrillic_fold(l)).unwrap_or(l);
        return Ws::one(lead(L_LETTER) | l as u32);
    }
    if c.is_numeric() {
        return Ws::one(lead(L_NUMERIC) | cp);
    }
    Ws::one(lead(L_SYMBOL) | cp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sort_key`'s ASCII path gives the bytes of the weight-by-weight one,
    /// for every ASCII byte (controls, spaces inside and at the end).
    #[test]
    fn ascii_sort_keys_equal_the_general_path() {
        let mut cases: Vec<Vec<u8>> =
            vec![b"".to_vec(), b" ".to_vec(), b"a b  ".to_vec(), b"\t x\x01 ".to_vec()];
        for b in 0u8..0x80 {
            cases.push(vec![b, b' ', b'a', b]);
            cases.push(vec![b'Z', b' ', b' ', b]);
        }
        for coll in [Collation::Utf8mb4GeneralCi, Collation::Utf8mb4Bin] {
            let kind = Kind::of(coll);
            for c in &cases {
                let (mut fast, mut slow) = (Vec::new(), Vec::new());
                sort_key(coll, c, &mut fast);
                pad_key(kind, c, &mut slow);
                assert_eq!(fast, slow, "{coll:?} {c:?}");
            }
        }
    }

    #[test]
    fn latin_base_lines_up() {
        assert_eq!(latin_fold('é'), Some("e"));
        assert_eq!(latin_fold('ÿ'), Some("y"));
        assert_eq!(latin_fold('Ā'), Some("a"));
        assert_eq!(latin_fold('ć'), Some("c"));
        assert_eq!(latin_fold('Ł'), Some("l"));
        assert_eq!(latin_fold('ſ'), Some("s"));
        assert_eq!(latin_fold('Ž'), Some("z"));
        assert_eq!(latin_fold('ŉ'), Some("n"));
        assert_eq!(latin_fold('Ű'), Some("u"));
        assert_eq!(latin_fold('Ŷ'), Some("y"));
        assert_eq!(latin_fold('Ğ'), Some("g"));
        assert_eq!(latin_fold('×'), None);
        assert_eq!(latin_fold('ß'), Some("ss"));
        assert_eq!(latin_fold('œ'), Some("oe"));
    }

    #[test]
    fn codes_are_prefix_free_and_ordered() {
        for kind in [Kind::Bin, Kind::General, Kind::Latin1, Kind::Unicode] {
            let ws: Vec<u32> = match kind {
                Kind::Unicode => [0x09u8, 0x21, 0x40, 0x41, 0x4C, 0x4D, 0x6D, 0x6E, 0x6F]
                    .iter()
                    .flat_map(|&l| [lead(l), lead(l) | 0x1234, lead(l) | 0x10FFFF])
                    .filter(|w| lead_has_code_point((w >> 24) as u8) || w & 0xFF_FFFF == 0)
                    .collect(),
                _ => vec![
                    0, 0x1F, 0x21, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x1_0000, 0x1F_FFFF, 0x20_0000,
                    0x20_00FF,
                ],
            };
            let codes: Vec<Vec<u8>> = ws
                .iter()
                .map(|&w| {
                    let mut v = Vec::new();
                    kind.encode(w, &mut v);
                    v
                })
                .collect();
            for i in 0..ws.len() {
                for j in 0..ws.len() {
                    assert_eq!(
                        ws[i].cmp(&ws[j]),
                        codes[i].cmp(&codes[j]),
                        "{kind:?} {:x} {:x}",
                        ws[i],
                        ws[j]
                    );
                    if i != j {
                        assert!(!codes[j].starts_with(&codes[i]));
                    }
                }
            }
        }
    }
}
