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
