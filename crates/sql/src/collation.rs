//! Collations: comparison and order-preserving weight strings. (Stub: helper owns it.)
use std::cmp::Ordering;

use crate::types::Collation;

/// Compares two strings of `coll` (UTF-8 text, or bytes for `Binary`) as
/// MySQL does: case-insensitively for the `_ci` collations, PAD SPACE for
/// all but `binary` (trailing spaces do not count).
pub fn compare(coll: Collation, a: &[u8], b: &[u8]) -> Ordering {
    let _ = coll;
    a.cmp(b)
}

/// Appends the sort key of `s` to `out`: for any a, b of this collation,
/// `compare(a, b)` equals the bytewise order of their sort keys followed by
/// anything (the key is self-delimiting: no key is a prefix of another
/// unless they are equal), and equal strings get equal keys.
pub fn sort_key(coll: Collation, s: &[u8], out: &mut Vec<u8>) {
    let _ = coll;
    out.extend_from_slice(s);
    out.push(0);
}

/// MySQL LIKE (stub: byte-wise, case-sensitive).
pub fn like(coll: Collation, text: &[u8], pattern: &[u8], escape: u8) -> bool {
    let _ = coll;
    fn go(t: &[u8], p: &[u8], esc: u8) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((&b'%', rest)) => (0..=t.len()).any(|i| go(&t[i..], rest, esc)),
            Some((&b'_', rest)) => !t.is_empty() && go(&t[1..], rest, esc),
            Some((&c, rest)) if c == esc && !rest.is_empty() => {
                t.first() == Some(&rest[0]) && go(&t[1..], &rest[1..], esc)
            }
            Some((&c, rest)) => t.first() == Some(&c) && go(&t[1..], rest, esc),
        }
    }
    go(text, pattern, escape)
}
