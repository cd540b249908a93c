//! Leafentries: what a leaf stores for one key.
//!
//! The format is laid out for MVCC from the start so that transactions add
//! behaviour without changing the bytes on disk:
//!
//! ```text
//! 0x01 | value...                      one committed value (the common case)
//! 0x02 | n varint | n × version        a version stack, oldest first
//!        version = txid varint | flags u8 | len varint | bytes
//!        flags bit 0: provisional (txid still open); bit 1: a delete
//! ```
//!
//! Without transactions every entry is `0x01`. A reader of a `0x02` entry
//! sees its newest committed version that is not a delete.

use crate::encoding::{put_varint, DecodeResult, Reader};

pub(crate) const LE_VALUE: u8 = 0x01;
pub(crate) const LE_MVCC: u8 = 0x02;
const FLAG_PROVISIONAL: u8 = 1;
const FLAG_DELETE: u8 = 2;

/// Appends the leafentry for a single committed value.
pub(crate) fn encode_value(out: &mut Vec<u8>, value: &[u8]) {
    out.reserve(1 + value.len());
    out.push(LE_VALUE);
    out.extend_from_slice(value);
}

/// Size of the leafentry `encode_value` writes.
pub(crate) fn value_le_len(value: &[u8]) -> usize {
    1 + value.len()
}

/// One version of an MVCC leafentry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Version<'a> {
    pub txid: u64,
    pub provisional: bool,
    /// `None` is a delete.
    pub value: Option<&'a [u8]>,
}

/// Appends an MVCC leafentry holding `versions`, oldest first.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn encode_versions(out: &mut Vec<u8>, versions: &[Version]) {
    out.push(LE_MVCC);
    put_varint(out, versions.len() as u64);
    for v in versions {
        put_varint(out, v.txid);
        let mut flags = 0;
        if v.provisional {
            flags |= FLAG_PROVISIONAL;
        }
        if v.value.is_none() {
            flags |= FLAG_DELETE;
        }
        out.push(flags);
        let bytes = v.value.unwrap_or_default();
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }
}

/// Decodes every version of a leafentry, oldest first.
pub(crate) fn versions(le: &[u8]) -> DecodeResult<Vec<Version<'_>>> {
    match le.first() {
        Some(&LE_VALUE) => Ok(vec![Version { txid: 0, provisional: false, value: Some(&le[1..]) }]),
        Some(&LE_MVCC) => {
            let mut r = Reader::new(&le[1..]);
            let n = r.varint()?;
            if n > le.len() as u64 {
                return Err(format!("leafentry claims {n} versions in {} bytes", le.len()));
            }
            let mut out = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let txid = r.varint()?;
                let flags = r.u8()?;
                if flags & !(FLAG_PROVISIONAL | FLAG_DELETE) != 0 {
                    return Err(format!("unknown leafentry version flags {flags:#x}"));
                }
                let bytes = r.bytes()?;
                let value = if flags & FLAG_DELETE != 0 { None } else { Some(bytes) };
                out.push(Version { txid, provisional: flags & FLAG_PROVISIONAL != 0, value });
            }
            if !r.is_empty() {
                return Err("trailing bytes after leafentry versions".into());
            }
            Ok(out)
        }
        Some(t) => Err(format!("unknown leafentry type {t:#x}")),
        None => Err("empty leafentry".into()),
    }
}

/// The value a non-transactional reader sees: the newest committed version,
/// or `None` if that version is a delete.
pub(crate) fn committed_value(le: &[u8]) -> DecodeResult<Option<&[u8]>> {
    if le.first() == Some(&LE_VALUE) {
        return Ok(Some(&le[1..]));
    }
    let vs = versions(le)?;
    Ok(vs.iter().rev().find(|v| !v.provisional).and_then(|v| v.value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_value_is_one_byte_of_overhead() {
        let mut out = Vec::new();
        encode_value(&mut out, b"abc");
        assert_eq!(out, b"\x01abc");
        assert_eq!(value_le_len(b"abc"), out.len());
        assert_eq!(committed_value(&out).unwrap(), Some(&b"abc"[..]));
    }

    #[test]
    fn readers_see_the_newest_committed_version_of_a_stack() {
        let mut out = Vec::new();
        let vs = [
            Version { txid: 3, provisional: false, value: Some(b"old") },
            Version { txid: 5, provisional: false, value: Some(b"new") },
            Version { txid: 9, provisional: true, value: None },
        ];
        encode_versions(&mut out, &vs);
        assert_eq!(versions(&out).unwrap(), vs);
        assert_eq!(committed_value(&out).unwrap(), Some(&b"new"[..]));
    }

    #[test]
    fn garbage_leafentries_are_errors() {
        assert!(committed_value(b"").is_err());
        assert!(committed_value(b"\x07x").is_err());
        assert!(committed_value(b"\x02\x05").is_err());
        assert!(committed_value(b"\x02\x01\x00\x04\x03ab").is_err());
    }
}
