//! The on-disk form of a node.
//!
//! ```text
//! header:
//!   0   magic        8 bytes  "FDBNODE\0"
//!   8   version      u16      NODE_FORMAT_VERSION
//!   10  height       u16      0 for a leaf
//!   12  n_parts      u32      children (internal) or basements (leaf)
//!   16  max_msn      u64      leaves: highest MSN applied
//!   24  header_len   u32      bytes of the header, including its checksum
//!   28  pivots       (n_parts - 1) × (len varint | bytes)
//!       children     internal only: n_parts × block number u64
//!       spills       internal only, version 2 on: n_parts × (n varint |
//!                    n × (block number u64 | raw_len u32 | count u32 |
//!                    bloom: len varint | bytes)), each child's spills
//!                    oldest first (bloom.rs; empty: none)
//!       partitions   n_parts × (offset u32 | disk_len u32 | raw_len u32 | codec u8 | crc32c u32)
//!       crc32c       u32 over every header byte before it
//! partitions, each compressed on its own with the codec named in its entry
//! (basements: the dictionary's; buffers: `Codec::for_buffers` of it):
//!   basement: its packed entries (see basement.rs)
//!   buffer:   count varint | messages (see buffer.rs, message.rs)
//! ```
//! A spill block (messages for one child, written out by a flush instead of
//! into the child; see `flush.rs`):
//!   0   magic        8 bytes  "FDBSPILL"
//!   8   version      u16      SPILL_FORMAT_VERSION (2; 1 is read)
//!   10  codec u8 | raw_len u32 | disk_len u32 | crc32c u32 of the payload
//!   23  crc32c       u32 over bytes 0..23
//!   27  payload      the buffer as `MsgBuffer::encode` wrote it, compressed
//!                    with the codec named at 10 (written: the dictionary's
//!                    leaf codec; older files may hold `Codec::for_buffers` of it)
//! Version 1 node headers (no spill lists) and version 2 nodes (no folded
//! commits, kind bit 0x40, in their buffers) are still read.
//!
//! Offsets count from the start of the block. Each partition's checksum is
//! over its compressed bytes, so a point read verifies exactly what it read.
//! All integers are little-endian.

use super::buffer::MsgBuffer;
use super::node::{Body, PartInfo, Spill};
use super::{basement::Basement, node::Node};
use super::{Comparator, KeyOrder};
use crate::encoding::{put_bytes, put_varint, varint_len, Reader};
use crate::error::{Error, Result as EngineResult};
use crate::file::{BlockNum, Codec};

pub(crate) const NODE_MAGIC: &[u8; 8] = b"FDBNODE\0";
/// Version 3 (buffers may hold writes with a commit folded in, kind bit
/// 0x40) is written; 1 (no spill lists) and 2 are read.
pub(crate) const NODE_FORMAT_VERSION: u16 = 3;
pub(crate) const SPILL_MAGIC: &[u8; 8] = b"FDBSPILL";
/// Version 2 (messages may carry kind bit 0x40) is written; 1 is read.
const SPILL_FORMAT_VERSION: u16 = 2;
/// Bytes of a spill block before its payload. The block table records it as
/// the block's header length, which tells a spill from a node: every node
/// header is longer (`Tree::try_pin` relies on it).
pub(crate) const SPILL_HEADER_BYTES: usize = 27;
const _: () = assert!(SPILL_HEADER_BYTES < FIXED_HEADER_BYTES + 4);
const FIXED_HEADER_BYTES: usize = 28;
const PART_ENTRY_BYTES: usize = 17;

/// A node ready to be written.
pub(crate) struct Serialized {
    pub bytes: Vec<u8>,
    pub header_len: u32,
    pub parts: Vec<PartInfo>,
}

/// Why a header could not be read.
#[derive(Debug)]
pub(crate) enum HeaderError {
    Corrupt(String),
    Version(u16),
}

/// A parsed node header.
pub(crate) struct Header {
    pub height: u32,
    pub max_msn: u64,
    pub pivots: Vec<Box<[u8]>>,
    pub child_bns: Vec<BlockNum>,
    /// Internal nodes: each child's spills (empty lists in version 1).
    pub spills: Vec<Vec<Spill>>,
    pub parts: Vec<PartInfo>,
}

/// A length the format stores as a u32, or `TooLarge` naming it. The
/// limits (`limits.rs`) keep nodes far below 4 GiB; the one thing they do
/// not bound, the versions MVCC keeps of a key, surfaces here (or earlier,
/// in `Basement`) as an error instead of a wrapped length.
fn u32_len(what: &'static str, len: usize) -> EngineResult<u32> {
    u32::try_from(len).map_err(|_| Error::TooLarge { what, len: len as u64, limit: u32::MAX.into() })
}

/// Serializes a node whose partitions are all in memory; a leaf's versions
/// below `horizon` are collected on the way (`Basement::collected`).
/// Every length and offset the format stores as a u32 is checked: a node
/// that does not fit is `TooLarge`, and is not written.
pub(crate) fn serialize(node: &Node, codec: Codec, horizon: u64) -> EngineResult<Serialized> {
    assert!(node.all_loaded(), "serializing a node with evicted partitions");
    let mut compressed: Vec<(Vec<u8>, u32)> = Vec::with_capacity(node.n_parts());
    let mut spills: Vec<u8> = Vec::new();
    let child_bns: Vec<BlockNum> = match &node.body {
        Body::Internal(children) => {
            compress_buffers(children, codec, &mut compressed, &mut spills)?;
            children.iter().map(|c| c.bn).collect()
        }
        Body::Leaf(basements) => {
            compress_basements(basements, codec, horizon, &mut compressed)?;
            Vec::new()
        }
    };
    let pivot_bytes: usize = node.pivots.iter().map(|p| varint_len(p.len() as u64) + p.len()).sum();
    let header_len = FIXED_HEADER_BYTES
        + pivot_bytes
        + child_bns.len() * 8
        + spills.len()
        + compressed.len() * PART_ENTRY_BYTES
        + 4;
    let total = header_len + compressed.iter().map(|(c, _)| c.len()).sum::<usize>();
    // The block's length is a u32 (`BlockFile`); so are the header length,
    // the part count and every partition's offset and length below it.
    u32_len("node block", total)?;
    // A node is at most as tall as the tree: a few levels.
    debug_assert!(node.height < 64, "a tree {} levels tall", node.height);
    let mut out = Vec::with_capacity(total);
    put_header_start(&mut out, node, header_len, &child_bns, &spills);
    let parts = put_part_entries(&mut out, node, codec, header_len, &compressed);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len(), header_len);
    for (c, _) in &compressed {
        out.extend_from_slice(c);
    }
    debug_assert_eq!(out.len(), total);
    Ok(Serialized { bytes: out, header_len: header_len as u32, parts })
}

/// Compresses each child buffer of an internal node into `compressed`; appends its spills to `spills`.
fn compress_buffers(
    children: &[super::node::Child],
    codec: Codec,
    compressed: &mut Vec<(Vec<u8>, u32)>,
    spills: &mut Vec<u8>,
) -> EngineResult<()> {
    let mut raw = Vec::new();
    for c in children {
        raw.clear();
        c.buf.encode(&mut raw);
        let mut out = Vec::with_capacity(raw.len() / 2 + 64);
        codec.for_buffers().compress(&raw, &mut out);
        compressed.push((out, u32_len("node buffer", raw.len())?));
        put_varint(spills, c.spills.len() as u64);
        for sp in &c.spills {
            spills.extend_from_slice(&sp.bn.to_le_bytes());
            spills.extend_from_slice(&sp.raw_len.to_le_bytes());
            spills.extend_from_slice(&sp.count.to_le_bytes());
            put_bytes(spills, &sp.bloom);
        }
    }
    Ok(())
}

/// Compresses each basement of a leaf, its versions below `horizon` collected, into `compressed`.
fn compress_basements(
    basements: &[Option<Basement>],
    codec: Codec,
    horizon: u64,
    compressed: &mut Vec<(Vec<u8>, u32)>,
) -> EngineResult<()> {
    for b in basements {
        let b = b.as_ref().expect("checked all_loaded");
        // An entry that does not decode is left as it is: reads
        // report it as corrupt, with its block.
        let gc = b.collected(horizon).unwrap_or_else(|e| {
            debug_assert!(false, "undecodable leafentry in memory: {e}");
            None
        });
        let packed = gc.as_deref().unwrap_or(b.packed());
        let mut out = Vec::with_capacity(packed.len() / 2 + 64);
        codec.compress(packed, &mut out);
        compressed.push((out, u32_len("basement", packed.len())?));
    }
    Ok(())
}

/// Appends a node header's fields before its partition entries (the caller checked they fit a u32).
fn put_header_start(
    out: &mut Vec<u8>,
    node: &Node,
    header_len: usize,
    child_bns: &[BlockNum],
    spills: &[u8],
) {
    out.extend_from_slice(NODE_MAGIC);
    out.extend_from_slice(&NODE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(node.height as u16).to_le_bytes());
    // Each part has an entry in the header, which is within `total`.
    out.extend_from_slice(&(node.n_parts() as u32).to_le_bytes());
    out.extend_from_slice(&node.max_msn.to_le_bytes());
    out.extend_from_slice(&(header_len as u32).to_le_bytes());
    for p in &node.pivots {
        put_bytes(out, p);
    }
    for bn in child_bns {
        out.extend_from_slice(&bn.to_le_bytes());
    }
    out.extend_from_slice(spills);
}

/// Appends a node header's partition entries, the first partition at `header_len`, and returns them.
fn put_part_entries(
    out: &mut Vec<u8>,
    node: &Node,
    codec: Codec,
    header_len: usize,
    compressed: &[(Vec<u8>, u32)],
) -> Vec<PartInfo> {
    let mut parts = Vec::with_capacity(compressed.len());
    let mut offset = header_len;
    for (c, raw_len) in compressed {
        // Both within `total`, checked by `serialize`.
        let info = PartInfo {
            offset: offset as u32,
            disk_len: c.len() as u32,
            raw_len: *raw_len,
            codec: if node.is_leaf() { codec } else { codec.for_buffers() } as u8,
            crc32c: crc32c::crc32c(c),
        };
        out.extend_from_slice(&info.offset.to_le_bytes());
        out.extend_from_slice(&info.disk_len.to_le_bytes());
        out.extend_from_slice(&info.raw_len.to_le_bytes());
        out.push(info.codec);
        out.extend_from_slice(&info.crc32c.to_le_bytes());
        parts.push(info);
        offset += c.len();
    }
    parts
}

/// Parses and verifies a node header from the first `header_len` bytes of a block.
pub(crate) fn parse_header(bytes: &[u8], block_len: u32) -> Result<Header, HeaderError> {
    let c = |s: String| HeaderError::Corrupt(s);
    if bytes.len() < FIXED_HEADER_BYTES + 4 {
        return Err(c(format!("node header of {} bytes is too short", bytes.len())));
    }
    if &bytes[..8] != NODE_MAGIC {
        return Err(c("bad node magic".into()));
    }
    let mut r = Reader::new(&bytes[8..]);
    let version = r.u16().map_err(c)?;
    let height = r.u16().map_err(c)? as u32;
    let n_parts = r.u32().map_err(c)? as usize;
    let max_msn = r.u64().map_err(c)?;
    let header_len = r.u32().map_err(c)? as usize;
    if header_len != bytes.len() {
        return Err(c(format!("node header says {header_len} bytes, block table says {}", bytes.len())));
    }
    let stored = u32::from_le_bytes(bytes[header_len - 4..].try_into().unwrap());
    if crc32c::crc32c(&bytes[..header_len - 4]) != stored {
        return Err(c("node header checksum mismatch".into()));
    }
    if !(1..=NODE_FORMAT_VERSION).contains(&version) {
        return Err(HeaderError::Version(version));
    }
    if n_parts == 0 || n_parts > bytes.len() {
        return Err(c(format!("node has {n_parts} partitions")));
    }
    let mut r = Reader::new(&bytes[FIXED_HEADER_BYTES..header_len - 4]);
    let mut pivots = Vec::with_capacity(n_parts - 1);
    for _ in 1..n_parts {
        pivots.push(r.bytes().map_err(c)?.into());
    }
    let mut child_bns = Vec::new();
    let mut spills = Vec::new();
    if height > 0 {
        for _ in 0..n_parts {
            child_bns.push(r.u64().map_err(c)?);
        }
        for _ in 0..n_parts {
            let n = if version >= 2 { r.varint().map_err(c)? } else { 0 };
            if n > bytes.len() as u64 {
                return Err(c(format!("a child with {n} spills")));
            }
            let mut list = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let bn = r.u64().map_err(c)?;
                let raw_len = r.u32().map_err(c)?;
                let count = r.u32().map_err(c)?;
                list.push(Spill::new(bn, raw_len, count, r.bytes().map_err(c)?.into()));
            }
            spills.push(list);
        }
    }
    let mut parts = Vec::with_capacity(n_parts);
    for _ in 0..n_parts {
        let info = PartInfo {
            offset: r.u32().map_err(c)?,
            disk_len: r.u32().map_err(c)?,
            raw_len: r.u32().map_err(c)?,
            codec: r.u8().map_err(c)?,
            crc32c: r.u32().map_err(c)?,
        };
        let end = info.offset as u64 + info.disk_len as u64;
        if (info.offset as usize) < header_len || end > block_len as u64 {
            return Err(c(format!("partition at {}+{} lies outside the block", info.offset, info.disk_len)));
        }
        parts.push(info);
    }
    if !r.is_empty() {
        return Err(c("trailing bytes in node header".into()));
    }
    Ok(Header { height, max_msn, pivots, child_bns, spills, parts })
}

/// Verifies and decompresses one partition's bytes.
pub(crate) fn decode_part(info: &PartInfo, disk: &[u8]) -> Result<Vec<u8>, String> {
    if disk.len() != info.disk_len as usize {
        return Err(format!("partition is {} bytes, expected {}", disk.len(), info.disk_len));
    }
    if crc32c::crc32c(disk) != info.crc32c {
        return Err(format!("partition checksum mismatch at offset {}", info.offset));
    }
    let codec = Codec::from_u8(info.codec).ok_or_else(|| format!("unknown codec {}", info.codec))?;
    codec.decompress(disk, info.raw_len as usize)
}

pub(crate) fn decode_basement(info: &PartInfo, disk: &[u8], cmp: Comparator) -> Result<Basement, String> {
    Basement::from_packed(decode_part(info, disk)?, cmp)
}

pub(crate) fn decode_buffer(info: &PartInfo, disk: &[u8], order: KeyOrder) -> Result<MsgBuffer, String> {
    MsgBuffer::decode(decode_part(info, disk)?, order)
}

/// A spill block holding `buf`, compressed with `codec`; also its raw length.
/// Its raw and compressed lengths are stored as u32s: `TooLarge` if they
/// do not fit (spills are at most `SPILL_NODES` node sizes, far below).
pub(crate) fn encode_spill(buf: &MsgBuffer, codec: Codec) -> EngineResult<(Vec<u8>, u32)> {
    let mut raw = Vec::new();
    buf.encode(&mut raw);
    // The payload is compressed straight after room for the header, which
    // is filled in last: no second copy of the payload (the spill writer
    // compresses while the cleaner works, and its copies count against
    // the memory bound, `tests/memory.rs`).
    let mut out = Vec::with_capacity(SPILL_HEADER_BYTES + raw.len() / 2 + 64);
    out.resize(SPILL_HEADER_BYTES, 0);
    codec.compress(&raw, &mut out);
    let payload = &out[SPILL_HEADER_BYTES..];
    let mut h = Vec::with_capacity(SPILL_HEADER_BYTES);
    h.extend_from_slice(SPILL_MAGIC);
    h.extend_from_slice(&SPILL_FORMAT_VERSION.to_le_bytes());
    h.push(codec as u8);
    let raw_len = u32_len("spill", raw.len())?;
    h.extend_from_slice(&raw_len.to_le_bytes());
    // Below the block's length, which must fit a u32 too.
    u32_len("spill block", SPILL_HEADER_BYTES + payload.len())?;
    h.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    h.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(h.len(), SPILL_HEADER_BYTES);
    out[..SPILL_HEADER_BYTES].copy_from_slice(&h);
    Ok((out, raw_len))
}

/// Verifies and decodes a whole spill block.
pub(crate) fn decode_spill(block: &[u8], order: KeyOrder) -> Result<MsgBuffer, String> {
    if block.len() < SPILL_HEADER_BYTES {
        return Err(format!("spill block of {} bytes is too short", block.len()));
    }
    if &block[..8] != SPILL_MAGIC {
        return Err("bad spill magic".into());
    }
    let stored = u32::from_le_bytes(block[23..27].try_into().expect("4 bytes"));
    if crc32c::crc32c(&block[..23]) != stored {
        return Err("spill header checksum mismatch".into());
    }
    let mut r = Reader::new(&block[8..23]);
    let version = r.u16()?;
    if !(1..=SPILL_FORMAT_VERSION).contains(&version) {
        return Err(format!("spill format version {version}, this build reads {SPILL_FORMAT_VERSION}"));
    }
    let info = PartInfo {
        offset: SPILL_HEADER_BYTES as u32,
        codec: r.u8()?,
        raw_len: r.u32()?,
        disk_len: r.u32()?,
        crc32c: r.u32()?,
    };
    decode_buffer(&info, &block[SPILL_HEADER_BYTES..], order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::message::{Msg, MsgBody, MsgKind};
    use crate::tree::node::Child;

    fn bytewise(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
    const BYTEWISE: KeyOrder = KeyOrder { cmp: bytewise, bytewise: true };

    /// A committed insert message.
    fn insert(msn: u64, key: Vec<u8>, val: Vec<u8>) -> Msg {
        Msg { msn, key: key.into(), body: MsgBody::plain(MsgKind::Insert, 0, &val) }
    }

    /// An internal node of a zstd dictionary writes its buffers with lz4
    /// and names lz4 in their entries; they read back as written.
    #[test]
    fn lengths_past_a_u32_are_too_large() {
        assert_eq!(u32_len("x", u32::MAX as usize).unwrap(), u32::MAX);
        let r = u32_len("node block", u32::MAX as usize + 1);
        assert!(matches!(r, Err(Error::TooLarge { what: "node block", len, .. }) if len == 1 << 32));
    }

    #[test]
    fn buffers_use_the_fast_codec_and_read_back() {
        let mut internal = Node::new_leaf();
        internal.height = 1;
        let mut children = vec![Child::new(7), Child::new(9)];
        for i in 0..200u32 {
            let key = format!("key{i:05}").into_bytes();
            let c = if i < 100 { 0 } else { 1 };
            children[c].buf.insert(insert(u64::from(i) + 1, key, vec![b'x'; 50]), BYTEWISE);
        }
        children.iter_mut().for_each(|c| c.loaded = true);
        internal.pivots = vec![b"key00100".to_vec().into()];
        internal.body = Body::Internal(children);
        let s = serialize(&internal, Codec::Zstd, 0).unwrap();
        let header = parse_header(&s.bytes[..s.header_len as usize], s.bytes.len() as u32).unwrap();
        assert_eq!(header.child_bns, vec![7, 9]);
        for (i, info) in header.parts.iter().enumerate() {
            assert_eq!(info.codec, Codec::Lz4 as u8, "buffer {i}");
            let disk = &s.bytes[info.offset as usize..(info.offset + info.disk_len) as usize];
            let buf = decode_buffer(info, disk, BYTEWISE).unwrap();
            assert_eq!(buf.len(), 100);
        }
        // Spill lists round-trip through the header.
        let spill = Spill::new(41, 5000, 77, vec![1, 2, 3].into());
        let other = Spill::new(3, 5000, 77, Box::new([]));
        internal.children_mut()[1].spills = vec![spill.clone(), other.clone()];
        let s = serialize(&internal, Codec::Zstd, 0).unwrap();
        let header = parse_header(&s.bytes[..s.header_len as usize], s.bytes.len() as u32).unwrap();
        assert_eq!(header.spills, vec![vec![], vec![spill.clone(), other.clone()]]);
        // Ids name one entry's messages in this process: a copy keeps its
        // id, an entry read back or made anew for the same block number
        // (a freed spill's number taken again) gets a new one, so a
        // cursor's decoded spill is never taken for another's
        // (`cursor.rs`, `SpillCache`).
        assert_eq!(spill.clone().id, spill.id);
        assert_ne!(header.spills[1][0].id, spill.id);
        assert_ne!(Spill::new(41, 5000, 77, vec![1, 2, 3].into()).id, spill.id);
        assert_ne!(spill.id, other.id);
        // A leaf keeps the dictionary's codec.
        let mut leaf = Node::new_leaf();
        leaf.dirty = true;
        let s = serialize(&leaf, Codec::Zstd, 0).unwrap();
        let header = parse_header(&s.bytes[..s.header_len as usize], s.bytes.len() as u32).unwrap();
        assert!(header.parts.iter().all(|p| p.codec == Codec::Zstd as u8));
    }

    /// A spill block reads back as written; any flipped bit or cut is an
    /// error, never other messages.
    #[test]
    fn spill_blocks_round_trip_and_damage_is_an_error() {
        let mut buf = MsgBuffer::default();
        for i in 0..300u32 {
            let key = format!("k{i:04}").into_bytes();
            buf.insert(insert(u64::from(i) + 10, key, format!("value {i}").into_bytes()), BYTEWISE);
        }
        let (block, raw_len) = encode_spill(&buf, Codec::Lz4).unwrap();
        let mut raw = Vec::new();
        buf.encode(&mut raw);
        assert_eq!(raw_len as usize, raw.len());
        let back = decode_spill(&block, BYTEWISE).unwrap();
        let mut again = Vec::new();
        back.encode(&mut again);
        assert_eq!(again, raw);
        for i in 0..block.len() {
            for bit in [0, 3, 7] {
                let mut bad = block.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_spill(&bad, BYTEWISE).is_err(), "flip at byte {i} bit {bit}");
            }
        }
        for len in 0..block.len() {
            assert!(decode_spill(&block[..len], BYTEWISE).is_err(), "cut at {len}");
        }
    }
}
