//! The header slots at the front of every data file: two alternating
//! slots, each written twice (a primary copy and a mirror) in version 2.

use std::path::Path;

use crate::error::{Error, Result};

/// Size of one header copy; slot A is at offset 0, slot B right after it.
pub(crate) const SLOT_SIZE: u64 = 4096;
/// The first byte after the header copies of a version-1 file (slots A and
/// B, no mirrors), where its blocks start. In a version-2 file the mirrors
/// of A and B are here.
pub(crate) const HEADERS_END_V1: u64 = 2 * SLOT_SIZE;
/// The first byte after the header copies of a version-2 file (A, B, then
/// the mirrors of A and B), where its blocks start.
pub(crate) const HEADERS_END: u64 = 4 * SLOT_SIZE;
/// The format version this build writes for new files; it reads 1 too.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// The first format version: no mirrors. Read, and written to files of
/// that version (they keep their layout).
pub(crate) const VERSION_1: u32 = 1;
/// The largest meta blob a header carries.
pub(crate) const MAX_META: usize = 3000;

const MAGIC: [u8; 8] = *b"FDBHEADR";
/// Size of the fields before the meta blob (both versions).
const FIXED: usize = 40;

/// Where the copies of header slot `slot` (0 = A, 1 = B) are in a file of
/// `version`: the primary, then (version 2) the mirror. The mirror sits
/// 8192 bytes after its primary, so no range of up to 8 KiB of damage hits
/// both copies of one slot.
pub(crate) fn copy_offsets(version: u32, slot: u64) -> Vec<u64> {
    debug_assert!(slot < 2);
    let primary = slot * SLOT_SIZE;
    match version {
        VERSION_1 => vec![primary],
        _ => vec![primary, HEADERS_END_V1 + primary],
    }
}

/// The first byte blocks and tables may use in a file of `version`.
pub(crate) fn headers_end(version: u32) -> u64 {
    match version {
        VERSION_1 => HEADERS_END_V1,
        _ => HEADERS_END,
    }
}

/// The slot checkpoint `seq` goes to: checkpoint 1 to A, then alternating
/// (a failed checkpoint's retry reuses its number and so its slot).
pub(crate) fn slot_of(seq: u64) -> u64 {
    1 - seq % 2
}

/// The root of one checkpoint: its sequence number, where its translation table
/// lives, and the layer above's meta blob (tree roots, log position...). Two slots
/// are written alternately, so a torn write can only damage the newer one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The file's format version (1 or 2): the layout the header is part of.
    pub version: u32,
    pub seq: u64,
    pub table_offset: u64,
    pub table_len: u32,
    pub meta: Vec<u8>,
}

impl Header {
    /// One copy's 4096 bytes, little-endian:
    ///
    /// | offset | size | field                                                 |
    /// |--------|------|-------------------------------------------------------|
    /// | 0      | 8    | magic `FDBHEADR`                                      |
    /// | 8      | 4    | format version (2; 1 in a version-1 file)             |
    /// | 12     | 4    | `c`: offset of the checksum = 40 + meta length         |
    /// | 16     | 8    | checkpoint sequence (1 for the file's first)          |
    /// | 24     | 8    | translation table offset                              |
    /// | 32     | 4    | translation table length in bytes                     |
    /// | 36     | 4    | meta length `m` (at most 3000)                        |
    /// | 40     | m    | meta bytes                                            |
    /// | c      | 4    | crc32c of bytes `[0, c)`                              |
    /// | c + 4  | ..   | zero up to 4096                                       |
    ///
    /// Bytes 0..16 and the checksum at `c` frame every version, so an older build
    /// can tell a newer, valid header from garbage. The primary and the mirror
    /// of a slot are the same bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        assert!(self.meta.len() <= MAX_META, "meta blob of {} bytes", self.meta.len());
        debug_assert!(self.version == VERSION_1 || self.version == FORMAT_VERSION);
        let c = FIXED + self.meta.len();
        let mut out = Vec::with_capacity(SLOT_SIZE as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        // `c` and the meta length are at most FIXED + MAX_META (asserted above).
        out.extend_from_slice(&(c as u32).to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.table_offset.to_le_bytes());
        out.extend_from_slice(&self.table_len.to_le_bytes());
        out.extend_from_slice(&(self.meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.meta);
        out.extend_from_slice(&crc32c::crc32c(&out).to_le_bytes());
        out.resize(SLOT_SIZE as usize, 0);
        out
    }

    /// Parses one copy. A copy that was never written, torn or garbled is
    /// `Corrupt`; a well-framed header of another version is `UnsupportedVersion`.
    pub(crate) fn decode(path: &Path, slot: &[u8]) -> Result<Header> {
        let bad = |why: String| Error::corrupt(path, None, why);
        let u32_at = |i: usize| u32::from_le_bytes(slot[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(slot[i..i + 8].try_into().unwrap());
        if slot.len() != SLOT_SIZE as usize {
            return Err(bad(format!("header slot of {} bytes", slot.len())));
        }
        if slot[..8] != MAGIC {
            return Err(bad("header: bad magic".into()));
        }
        let c = u32_at(12) as usize;
        if !(16..=slot.len() - 4).contains(&c) {
            return Err(bad(format!("header: checksum offset {c} out of range")));
        }
        if crc32c::crc32c(&slot[..c]) != u32_at(c) {
            return Err(bad("header: checksum mismatch".into()));
        }
        let version = u32_at(8);
        if version != FORMAT_VERSION && version != VERSION_1 {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if c < FIXED {
            return Err(bad(format!("header: checksum offset {c} inside the fixed fields")));
        }
        let meta_len = u32_at(36) as usize;
        if meta_len > MAX_META || c != FIXED + meta_len {
            return Err(bad(format!("header: meta length {meta_len} does not fit checksum offset {c}")));
        }
        let h = Header {
            version,
            seq: u64_at(16),
            table_offset: u64_at(24),
            table_len: u32_at(32),
            meta: slot[FIXED..c].to_vec(),
        };
        if h.seq == 0 || !h.table_offset.is_multiple_of(SLOT_SIZE) || h.table_offset < headers_end(version) {
            return Err(bad(format!(
                "header: impossible checkpoint {} or table offset {}",
                h.seq, h.table_offset
            )));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(meta_len: usize) -> Header {
        Header {
            version: FORMAT_VERSION,
            seq: 7,
            table_offset: 5 * 4096,
            table_len: 28,
            meta: (0..meta_len).map(|i| i as u8).collect(),
        }
    }

    #[test]
    fn round_trips_with_empty_and_largest_meta() {
        for n in [0, 1, MAX_META] {
            let bytes = sample(n).encode();
            assert_eq!(bytes.len(), SLOT_SIZE as usize);
            assert_eq!(Header::decode(Path::new("f"), &bytes).unwrap(), sample(n));
        }
    }

    #[test]
    fn every_bit_flip_in_the_used_bytes_is_detected() {
        let bytes = sample(20).encode();
        for bit in 0..(FIXED + 24) * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let err = Header::decode(Path::new("f"), &b).unwrap_err();
            assert!(matches!(err, Error::Corrupt { block: None, .. }), "bit {bit}: {err}");
        }
    }

    #[test]
    fn a_zeroed_torn_or_random_slot_is_corrupt() {
        let torn: Vec<u8> = sample(100).encode()[..60].iter().copied().chain([0; 4036]).collect();
        let random: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for slot in [vec![0; 4096], torn, random, vec![0xFF; 4096], vec![1; 17]] {
            assert!(matches!(Header::decode(Path::new("f"), &slot), Err(Error::Corrupt { block: None, .. })));
        }
    }

    #[test]
    fn a_valid_header_of_another_version_is_unsupported_not_corrupt() {
        let mut b = sample(10).encode();
        b[8..12].copy_from_slice(&3u32.to_le_bytes());
        let c = FIXED + 10;
        let crc = crc32c::crc32c(&b[..c]);
        b[c..c + 4].copy_from_slice(&crc.to_le_bytes());
        let err = Header::decode(Path::new("f"), &b).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { found: 3, supported: 2, .. }), "{err}");
    }

    #[test]
    fn version_1_headers_are_read_and_tables_stay_clear_of_the_copies() {
        // Version 1: no mirrors, blocks from 8192. Version 2: mirrors at
        // 8192 and 12288, blocks from 16384.
        assert_eq!((copy_offsets(VERSION_1, 0), copy_offsets(VERSION_1, 1)), (vec![0], vec![4096]));
        assert_eq!((copy_offsets(2, 0), copy_offsets(2, 1)), (vec![0, 8192], vec![4096, 12288]));
        assert_eq!((slot_of(1), slot_of(2), slot_of(3)), (0, 1, 0));
        let v1 = Header { version: VERSION_1, table_offset: 8192, ..sample(5) };
        assert_eq!(Header::decode(Path::new("f"), &v1.encode()).unwrap(), v1);
        for (version, table_offset, ok) in
            [(1, 4096, false), (1, 12288, true), (2, 8192, false), (2, 12288, false), (2, 16384, true)]
        {
            let h = Header { version, table_offset, ..sample(5) };
            assert_eq!(
                Header::decode(Path::new("f"), &h.encode()).is_ok(),
                ok,
                "version {version}, table at {table_offset}"
            );
        }
    }
}
