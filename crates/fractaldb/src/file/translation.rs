//! The block translation table: block number -> where the block lives.

use std::collections::BTreeSet;
use std::path::Path;

use super::io::{page_round, PAGE};
use crate::error::{Error, Result};

/// A node's name inside its file. Parents refer to children by block number, so
/// a node can move on disk without its parent being rewritten.
pub(crate) type BlockNum = u64;

/// Where one block lives: `len` bytes at `offset`, of which the first
/// `header_len` are the node header (readable alone, before the partitions).
/// `pub` rather than `pub(crate)` only because `BlockFile`'s public methods use it.
///
/// Two extents are equal only if the same write made them: `stamp` numbers the
/// writes of this process (1, 2, ...; 0 for extents read from the table at open)
/// and is never stored. So "is `bn` still at the extent I read?" cannot be
/// fooled when a freed extent is reused and the block comes back to the same
/// offset later (an ABA a reader without the node's lock would otherwise
/// mistake for its own, checksums and all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub len: u32,
    pub header_len: u32,
    pub(crate) stamp: u64,
}

impl Extent {
    /// The bytes the extent occupies in the file: whole pages, at least one.
    pub(crate) fn alloc_len(&self) -> u64 {
        page_round(u64::from(self.len).max(1))
    }
}

/// Magic number of a translation table block.
const MAGIC: [u8; 8] = *b"FDBTABL1";
/// Bytes before the first entry: magic, checkpoint sequence, entry count.
const PREFIX: usize = 24;
const ENTRY: usize = 16;
/// The `offset` of an entry that holds no block.
const UNUSED: u64 = u64::MAX;

/// Block number -> extent, plus the block numbers free for reuse. A number is in
/// one of three states: free, allocated but not yet written (`None`, not in
/// `free`), or written (`Some`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Translation {
    entries: Vec<Option<Extent>>,
    free: BTreeSet<BlockNum>,
}

impl Translation {
    /// Hands out the lowest free block number, so the table stays dense.
    pub(crate) fn allocate(&mut self) -> BlockNum {
        if let Some(bn) = self.free.pop_first() {
            return bn;
        }
        self.entries.push(None);
        self.entries.len() as BlockNum - 1
    }

    pub(crate) fn is_allocated(&self, bn: BlockNum) -> bool {
        bn < self.entries.len() as u64 && !self.free.contains(&bn)
    }

    /// Gives `bn` back and returns the extent it had.
    pub(crate) fn free(&mut self, bn: BlockNum) -> Option<Extent> {
        assert!(self.is_allocated(bn), "freeing block {bn}, which is not allocated");
        self.free.insert(bn);
        self.entries[bn as usize].take()
    }

    pub(crate) fn get(&self, bn: BlockNum) -> Option<Extent> {
        self.entries.get(bn as usize).copied().flatten()
    }

    /// Points `bn` at `ext` and returns the extent it replaces.
    pub(crate) fn set(&mut self, bn: BlockNum, ext: Extent) -> Option<Extent> {
        assert!(self.is_allocated(bn), "writing block {bn}, which is not allocated");
        self.entries[bn as usize].replace(ext)
    }

    /// How many block numbers the table has handed out, free ones included.
    pub(crate) fn numbers(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Every written block, in block number order.
    pub(crate) fn extents(&self) -> impl Iterator<Item = (BlockNum, Extent)> + '_ {
        self.entries.iter().enumerate().filter_map(|(bn, e)| e.map(|e| (bn as BlockNum, e)))
    }

    /// The table block of checkpoint `seq`, little-endian:
    ///
    /// | offset      | size | field                                                  |
    /// |-------------|------|--------------------------------------------------------|
    /// | 0           | 8    | magic `FDBTABL1`                                       |
    /// | 8           | 8    | checkpoint sequence (same as the header pointing here) |
    /// | 16          | 8    | entry count `n` (entry `i` is block number `i`)        |
    /// | 24 + 16i    | 8    | extent offset, or `u64::MAX` if block `i` is unused    |
    /// | 32 + 16i    | 4    | extent length (0 if unused)                            |
    /// | 36 + 16i    | 4    | node header length (0 if unused)                       |
    /// | 24 + 16n    | 4    | crc32c of bytes `[0, 24 + 16n)`                        |
    ///
    /// Allocated-but-unwritten numbers are stored as unused (no checkpoint can refer
    /// to them) and trailing unused entries are left out.
    pub(crate) fn encode(&self, seq: u64) -> Vec<u8> {
        let n = self.entries.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        let mut out = Vec::with_capacity(PREFIX + ENTRY * n + 4);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&(n as u64).to_le_bytes());
        for e in &self.entries[..n] {
            let (offset, len, header_len) = e.map_or((UNUSED, 0, 0), |e| (e.offset, e.len, e.header_len));
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&header_len.to_le_bytes());
        }
        out.extend_from_slice(&crc32c::crc32c(&out).to_le_bytes());
        out
    }

    /// Parses a table block written by [`encode`](Self::encode) for checkpoint
    /// `seq`. Checks every field; `first_data` is the lowest offset a block may have.
    pub(crate) fn decode(path: &Path, bytes: &[u8], seq: u64, first_data: u64) -> Result<Translation> {
        let bad =
            |bn: Option<u64>, why: String| Error::corrupt(path, bn, format!("translation table: {why}"));
        let n = match bytes.get(16..24) {
            Some(b) => u64::from_le_bytes(b.try_into().unwrap()),
            None => return Err(bad(None, format!("{} bytes is too short", bytes.len()))),
        };
        let expect = n.checked_mul(ENTRY as u64).and_then(|x| x.checked_add(PREFIX as u64 + 4));
        if expect != Some(bytes.len() as u64) {
            return Err(bad(None, format!("{n} entries cannot fill {} bytes", bytes.len())));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body).to_le_bytes() != crc {
            return Err(bad(None, "checksum mismatch".into()));
        }
        if body[..8] != MAGIC {
            return Err(bad(None, "bad magic".into()));
        }
        let found = u64::from_le_bytes(body[8..16].try_into().unwrap());
        if found != seq {
            return Err(bad(None, format!("written by checkpoint {found}, expected {seq}")));
        }
        let mut t = Translation::default();
        for (bn, raw) in body[PREFIX..].chunks_exact(ENTRY).enumerate() {
            let offset = u64::from_le_bytes(raw[..8].try_into().unwrap());
            let len = u32::from_le_bytes(raw[8..12].try_into().unwrap());
            let header_len = u32::from_le_bytes(raw[12..].try_into().unwrap());
            let bn = bn as BlockNum;
            if offset == UNUSED {
                if len != 0 || header_len != 0 {
                    return Err(bad(Some(bn), "unused entry with a length".into()));
                }
                t.free.insert(bn);
                t.entries.push(None);
                continue;
            }
            let ext = Extent { offset, len, header_len, stamp: 0 };
            if !offset.is_multiple_of(PAGE)
                || offset < first_data
                || offset.checked_add(ext.alloc_len()).is_none()
            {
                return Err(bad(Some(bn), format!("impossible extent offset {offset}")));
            }
            if header_len > len {
                return Err(bad(
                    Some(bn),
                    format!("node header of {header_len} bytes in a {len}-byte block"),
                ));
            }
            t.entries.push(Some(ext));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(page: u64, len: u32) -> Extent {
        Extent { offset: page * PAGE, len, header_len: len / 2, stamp: 0 }
    }

    fn sample() -> Translation {
        let mut t = Translation::default();
        for i in 0..6 {
            assert_eq!(t.allocate(), i);
            t.set(i, ext(2 + 3 * i, 5000 + i as u32));
        }
        t.free(1);
        t.free(4);
        t
    }

    #[test]
    fn freed_block_numbers_are_reused_lowest_first() {
        let mut t = sample();
        t.free(3);
        assert_eq!((t.allocate(), t.allocate(), t.allocate(), t.allocate()), (1, 3, 4, 6));
        assert_eq!(t.get(1), None, "reused number starts unwritten");
        assert_eq!(t.get(2), Some(ext(8, 5002)));
    }

    #[test]
    fn encode_decode_round_trips_holes_and_drops_trailing_unused_entries() {
        let mut t = sample();
        let unwritten = t.allocate(); // 1: allocated but never written
        t.free(5);
        let back = Translation::decode(Path::new("f"), &t.encode(9), 9, 2 * PAGE).unwrap();
        assert_eq!(back.extents().collect::<Vec<_>>(), t.extents().collect::<Vec<_>>());
        assert_eq!(back.entries.len(), 4, "entry 4 and 5 are trailing unused entries");
        assert!(!back.is_allocated(unwritten));
        let empty = Translation::default().encode(1);
        assert_eq!(empty.len(), PREFIX + 4);
        assert_eq!(Translation::decode(Path::new("f"), &empty, 1, 2 * PAGE).unwrap().extents().count(), 0);
    }

    #[test]
    fn every_truncation_and_bit_flip_is_a_corruption_error() {
        let bytes = sample().encode(3);
        let decode = |b: &[u8]| Translation::decode(Path::new("f"), b, 3, 2 * PAGE);
        for cut in 0..bytes.len() {
            assert!(matches!(decode(&bytes[..cut]), Err(Error::Corrupt { .. })), "cut at {cut}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(decode(&b), Err(Error::Corrupt { .. })), "bit {bit}");
        }
        assert!(matches!(
            Translation::decode(Path::new("f"), &bytes, 4, 2 * PAGE),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn impossible_entries_name_their_block_number() {
        let mut t = sample();
        t.set(2, Extent { offset: 3 * PAGE + 1, len: 10, header_len: 0, stamp: 0 });
        let err = Translation::decode(Path::new("f"), &t.encode(1), 1, 2 * PAGE).unwrap_err();
        assert!(matches!(err, Error::Corrupt { block: Some(2), .. }), "{err}");
        t.set(2, Extent { offset: 3 * PAGE, len: 10, header_len: 11, stamp: 0 });
        let err = Translation::decode(Path::new("f"), &t.encode(1), 1, 2 * PAGE).unwrap_err();
        assert!(matches!(err, Error::Corrupt { block: Some(2), .. }), "{err}");
    }
}
