//! Message buffers: one per child of an internal node.
//!
//! A buffer keeps its point messages in their serialized form (the bytes of
//! `Msg::encode`), back to back in one arena, plus the arena offset of each
//! message in (key, MSN) order. So:
//!
//! - a message costs its encoded bytes plus a 4-byte offset, not a B-tree
//!   entry and two allocations (the old `BTreeMap` form cost about 96 bytes
//!   and two mallocs per message, which was a quarter of a random-insert
//!   load's CPU and half the memory the buffers were charged for);
//! - writing a buffer to disk is a copy, and reading one back is an
//!   indexing pass that checks every length and the order, with no decode;
//! - a reader finds one key's messages by binary search, decoding only those.
//!
//! Inserting splices an offset into the sorted index (a memmove of at most a
//! few thousand `u32`s for a buffer within its node's budget). A flush takes
//! a whole buffer, cuts it at the child's pivots and merges each piece into
//! a grandchild's buffer: the piece's bytes are appended to the arena and
//! the two offset lists merged.
//!
//! Broadcast messages, which apply to every key, are kept decoded beside
//! the index in MSN order; a flush copies them into every buffer below.
//!
//! Invariant (checked by `check`): every message in a buffer has a lower MSN
//! than every message in the buffers of its parent node for the same child,
//! because a flush always moves a whole buffer.

use std::cmp::Ordering;

use super::message::{Msg, MsgBody, MsgKind, KIND_PROVISIONAL};
use super::Comparator;
use crate::encoding::{put_varint, DecodeResult, Reader};

/// Memory a buffered message costs beyond its encoded bytes: its offset.
const OFFSET_BYTES: usize = 4;

/// Memory charged per broadcast message beyond its value.
const BROADCAST_OVERHEAD_BYTES: usize = 64;

/// The messages waiting above one child.
#[derive(Default, Clone)]
pub(crate) struct MsgBuffer {
    /// Point messages in `Msg::encode` form, in no particular order. May
    /// hold bytes no offset points at (a decoded buffer's count prefix and
    /// broadcasts); `mem_bytes` counts them, as they are memory held.
    data: Vec<u8>,
    /// Start of each point message in `data`, in (key, MSN) order.
    offs: Vec<u32>,
    /// Broadcast messages, in MSN order.
    broadcasts: Vec<(u64, MsgBody)>,
}

// The arena holds only messages that `Msg::encode` wrote or that `decode`
// validated, so the accessors below parse without checks: the layout is
// `msn u64 | kind u8 | fn_id u8 | txid varint | [sp varint if provisional]
// | key_len varint | key | val_len varint | val` (see `message.rs`). They
// are the buffer's hot path (every binary-search step and merge comparison
// reads a key), and going through the checked `Reader` made them a third
// of an iibench load's CPU.

/// The varint at `p`: (value, position after it).
#[inline]
fn varint_at(data: &[u8], mut p: usize) -> (usize, usize) {
    let (mut v, mut shift) = (0usize, 0);
    loop {
        let b = data[p];
        p += 1;
        v |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return (v, p);
        }
        shift += 7;
    }
}

/// Where the key's length varint of the message at `off` starts, and the MSN.
#[inline]
fn key_pos(data: &[u8], off: u32) -> (usize, u64) {
    let p = off as usize;
    let msn = u64::from_le_bytes(data[p..p + 8].try_into().expect("8 bytes"));
    let kind = data[p + 8];
    let (_, mut q) = varint_at(data, p + 10); // txid
    if kind & KIND_PROVISIONAL != 0 {
        q = varint_at(data, q).1; // savepoint id
    }
    (q, msn)
}

/// The key and MSN of the message at `off`, without allocating.
#[inline]
fn key_at(data: &[u8], off: u32) -> (&[u8], u64) {
    let (q, msn) = key_pos(data, off);
    let (len, q) = varint_at(data, q);
    (&data[q..q + len], msn)
}

/// The whole message at `off`, with its key borrowed from `data`.
fn message_at(data: &[u8], off: u32) -> (&[u8], u64, MsgBody) {
    let mut r = Reader::new(&data[off as usize..]);
    let msn = r.u64().expect("validated");
    let mut body = MsgBody::decode_head(&mut r).expect("validated");
    let key = r.bytes().expect("validated");
    body.val = r.bytes().expect("validated").into();
    (key, msn, body)
}

/// The encoded length of the message at `off`.
fn len_at(data: &[u8], off: u32) -> usize {
    let (q, _) = key_pos(data, off);
    let (key_len, q) = varint_at(data, q);
    let (val_len, q) = varint_at(data, q + key_len);
    q + val_len - off as usize
}

/// Orders two messages of one arena by (key, MSN).
fn order(data: &[u8], a: u32, b: u32, cmp: Comparator) -> Ordering {
    let (ka, ma) = key_at(data, a);
    let (kb, mb) = key_at(data, b);
    cmp(ka, kb).then(ma.cmp(&mb))
}

/// An arena offset: buffers stay within a few node budgets, far below 4 GiB.
fn offset(pos: usize) -> u32 {
    u32::try_from(pos).expect("a message buffer past 4 GiB")
}

impl MsgBuffer {
    pub(crate) fn len(&self) -> usize {
        self.offs.len() + self.broadcasts.len()
    }

    /// Memory held (capacities, not lengths: the cache charges what the
    /// heap holds), and the quantity the flush policy budgets.
    pub(crate) fn mem_bytes(&self) -> usize {
        self.data.capacity()
            + self.offs.capacity() * OFFSET_BYTES
            + self.broadcasts.iter().map(|(_, b)| b.val.len() + BROADCAST_OVERHEAD_BYTES).sum::<usize>()
    }

    pub(crate) fn insert(&mut self, msg: Msg, cmp: Comparator) {
        if msg.body.kind == MsgKind::Broadcast {
            self.insert_broadcast(msg.msn, msg.body);
            return;
        }
        let off = offset(self.data.len());
        // Grow by a quarter, not the default doubling, so capacity (which
        // the cache charges) stays close to the bytes held.
        let need = msg.key.len() + msg.body.val.len() + 32;
        if self.data.capacity() - self.data.len() < need {
            self.data.reserve_exact(need.max(self.data.len() / 4));
        }
        if self.offs.capacity() == self.offs.len() {
            self.offs.reserve_exact((self.offs.len() / 4).max(16));
        }
        let at = self.offs.partition_point(|&o| {
            let (k, m) = key_at(&self.data, o);
            cmp(k, &msg.key).then(m.cmp(&msg.msn)) == Ordering::Less
        });
        msg.encode(&mut self.data);
        debug_assert!(
            self.offs.get(at).is_none_or(|&o| order(&self.data, o, off, cmp) != Ordering::Equal),
            "two messages with one MSN"
        );
        self.offs.insert(at, off);
    }

    pub(crate) fn insert_broadcast(&mut self, msn: u64, body: MsgBody) {
        debug_assert!(self.broadcasts.last().is_none_or(|(m, _)| *m < msn), "broadcasts out of MSN order");
        self.broadcasts.push((msn, body));
    }

    /// Index of the first message whose key is not below `key`.
    fn lower_bound(&self, key: &[u8], cmp: Comparator) -> usize {
        self.offs.partition_point(|&o| cmp(key_at(&self.data, o).0, key) == Ordering::Less)
    }

    /// The messages for one key, in MSN order (broadcasts not included).
    pub(crate) fn for_key(&self, key: &[u8], cmp: Comparator) -> Vec<(u64, MsgBody)> {
        let mut out = Vec::new();
        for &o in &self.offs[self.lower_bound(key, cmp)..] {
            let (k, msn, body) = message_at(&self.data, o);
            if cmp(k, key) != Ordering::Equal {
                break;
            }
            out.push((msn, body));
        }
        out
    }

    /// The messages whose keys fall in [lo, hi), in (key, MSN) order, with
    /// their keys borrowed from the buffer.
    pub(crate) fn range<'a>(
        &'a self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        cmp: Comparator,
    ) -> Vec<(&'a [u8], u64, MsgBody)> {
        let start = lo.map_or(0, |lo| self.lower_bound(lo, cmp));
        let mut out = Vec::new();
        for &o in &self.offs[start..] {
            if hi.is_some_and(|hi| cmp(key_at(&self.data, o).0, hi) != Ordering::Less) {
                break;
            }
            out.push(message_at(&self.data, o));
        }
        out
    }

    /// Every point message in (key, MSN) order, keys borrowed.
    pub(crate) fn messages(&self) -> Vec<(&[u8], u64, MsgBody)> {
        self.offs.iter().map(|&o| message_at(&self.data, o)).collect()
    }

    /// The (key, MSN) of every point message, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.offs.iter().map(|&o| key_at(&self.data, o))
    }

    pub(crate) fn broadcasts(&self) -> &[(u64, MsgBody)] {
        &self.broadcasts
    }

    /// Lowest and highest MSN held, if any.
    pub(crate) fn msn_range(&self) -> Option<(u64, u64)> {
        let it = self.keys().map(|(_, m)| m).chain(self.broadcasts.iter().map(|(m, _)| *m));
        it.fold(None, |acc, m| match acc {
            None => Some((m, m)),
            Some((lo, hi)) => Some((lo.min(m), hi.max(m))),
        })
    }

    /// Merges `other` into this buffer: its bytes are appended to the arena
    /// and the two sorted offset lists merged. Broadcasts present in both
    /// (copies made by `split`) are kept once.
    pub(crate) fn append(&mut self, other: MsgBuffer, cmp: Comparator) {
        if self.offs.is_empty() && self.broadcasts.is_empty() {
            *self = other;
            return;
        }
        if !other.offs.is_empty() {
            let base = offset(self.data.len());
            self.data.reserve_exact(other.data.len());
            self.data.extend_from_slice(&other.data);
            let theirs = other.offs.iter().map(|&o| o + base);
            let mine = std::mem::take(&mut self.offs);
            let mut merged = Vec::with_capacity(mine.len() + other.offs.len());
            let mut theirs = theirs.peekable();
            for o in mine {
                while let Some(&t) = theirs.peek() {
                    if order(&self.data, t, o, cmp) == Ordering::Less {
                        merged.push(t);
                        theirs.next();
                    } else {
                        break;
                    }
                }
                merged.push(o);
            }
            merged.extend(theirs);
            debug_assert!(
                merged.windows(2).all(|w| order(&self.data, w[0], w[1], cmp) == Ordering::Less),
                "merged buffer out of order"
            );
            self.offs = merged;
        }
        if !other.broadcasts.is_empty() {
            let mut all = std::mem::take(&mut self.broadcasts);
            all.extend(other.broadcasts);
            all.sort_by_key(|(m, _)| *m);
            all.dedup_by_key(|(m, _)| *m);
            self.broadcasts = all;
        }
    }

    /// Empties the buffer, returning what it held.
    pub(crate) fn take_all(&mut self) -> MsgBuffer {
        std::mem::take(self)
    }

    /// Cuts the buffer at `pivots` (ascending): piece `i` holds the messages
    /// with keys below `pivots[i]` and not below `pivots[i - 1]`. Every
    /// piece gets a copy of the broadcasts. Each piece's arena holds only
    /// its own messages, in order.
    pub(crate) fn split(self, pivots: &[Box<[u8]>], cmp: Comparator) -> Vec<MsgBuffer> {
        let mut pieces = Vec::with_capacity(pivots.len() + 1);
        let mut start = 0;
        for i in 0..=pivots.len() {
            let end = match pivots.get(i) {
                Some(p) => {
                    start
                        + self.offs[start..]
                            .partition_point(|&o| cmp(key_at(&self.data, o).0, p) == Ordering::Less)
                }
                None => self.offs.len(),
            };
            let lens: Vec<usize> = self.offs[start..end].iter().map(|&o| len_at(&self.data, o)).collect();
            let mut piece = MsgBuffer {
                data: Vec::with_capacity(lens.iter().sum()),
                offs: Vec::with_capacity(end - start),
                broadcasts: self.broadcasts.clone(),
            };
            for (&o, len) in self.offs[start..end].iter().zip(lens) {
                piece.offs.push(offset(piece.data.len()));
                piece.data.extend_from_slice(&self.data[o as usize..o as usize + len]);
            }
            pieces.push(piece);
            start = end;
        }
        pieces
    }

    /// Serializes as `count varint | count × message` (see `message.rs`):
    /// point messages in (key, MSN) order, then broadcasts.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.len() as u64);
        for &o in &self.offs {
            out.extend_from_slice(&self.data[o as usize..o as usize + len_at(&self.data, o)]);
        }
        for (msn, body) in &self.broadcasts {
            Msg { msn: *msn, key: Box::new([]), body: body.clone() }.encode(out);
        }
    }

    /// Takes over what `encode` wrote, checking every length and that the
    /// point messages ascend by (key, MSN). Nothing is copied: the bytes
    /// become the arena.
    pub(crate) fn decode(data: Vec<u8>, cmp: Comparator) -> DecodeResult<MsgBuffer> {
        let mut r = Reader::new(&data);
        let n = r.varint()?;
        if n > data.len() as u64 {
            return Err(format!("buffer claims {n} messages in {} bytes", data.len()));
        }
        let mut offs = Vec::with_capacity(n as usize);
        let mut broadcasts = Vec::new();
        let mut prev: Option<(&[u8], u64)> = None;
        for _ in 0..n {
            let start = r.pos();
            let msn = r.u64()?;
            let mut head = MsgBody::decode_head(&mut r)?;
            let key = r.bytes()?;
            let val = r.bytes()?;
            if head.kind == MsgKind::Broadcast {
                head.val = val.into();
                broadcasts.push((msn, head));
                continue;
            }
            if let Some(p) = prev {
                if cmp(p.0, key).then(p.1.cmp(&msn)) != Ordering::Less {
                    return Err(if p.1 == msn && cmp(p.0, key) == Ordering::Equal {
                        format!("duplicate message MSN {msn}")
                    } else {
                        "buffer messages out of order".into()
                    });
                }
            }
            prev = Some((key, msn));
            offs.push(offset(start));
        }
        if !r.is_empty() {
            return Err("trailing bytes after buffer messages".into());
        }
        broadcasts.sort_by_key(|(m, _)| *m);
        if let Some(w) = broadcasts.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!("duplicate broadcast MSN {}", w[0].0));
        }
        Ok(MsgBuffer { data, offs, broadcasts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn msg(key: &[u8], msn: u64, kind: MsgKind) -> Msg {
        Msg {
            msn,
            key: key.into(),
            body: MsgBody { kind, fn_id: 0, txid: 0, provisional: false, sp: 0, val: b"v".to_vec().into() },
        }
    }

    fn buffer(msgs: &[(&[u8], u64)]) -> MsgBuffer {
        let mut b = MsgBuffer::default();
        for &(k, msn) in msgs {
            b.insert(msg(k, msn, MsgKind::Insert), bytewise);
        }
        b
    }

    fn keys(b: &MsgBuffer) -> Vec<(Vec<u8>, u64)> {
        b.keys().map(|(k, m)| (k.to_vec(), m)).collect()
    }

    #[test]
    fn a_buffer_finds_one_keys_messages_in_msn_order_and_survives_encoding() {
        let mut b = MsgBuffer::default();
        for (i, k) in [&b"b"[..], b"a", b"b", b"c", b"b"].iter().enumerate() {
            b.insert(msg(k, 10 + i as u64, MsgKind::Insert), bytewise);
        }
        b.insert(msg(b"", 20, MsgKind::Broadcast), bytewise);
        let msns: Vec<u64> = b.for_key(b"b", bytewise).into_iter().map(|(m, _)| m).collect();
        assert_eq!(msns, vec![10, 12, 14]);
        assert_eq!(b.range(Some(b"b"), Some(b"c"), bytewise).len(), 3);
        assert_eq!(b.range(None, None, bytewise).len(), 5);
        let mut out = Vec::new();
        b.encode(&mut out);
        let d = MsgBuffer::decode(out.clone(), bytewise).unwrap();
        assert_eq!(d.len(), b.len());
        assert_eq!(keys(&d), keys(&b));
        assert_eq!(d.broadcasts().len(), 1);
        assert_eq!(d.msn_range(), Some((10, 20)));
        assert_eq!(d.for_key(b"b", bytewise), b.for_key(b"b", bytewise));
        // A decoded buffer encodes to the same bytes.
        let mut again = Vec::new();
        d.encode(&mut again);
        assert_eq!(again, out);
        // The same message twice is corruption.
        let mut dup = Vec::new();
        put_varint(&mut dup, 2);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        assert!(MsgBuffer::decode(dup, bytewise).is_err());
        // So is any truncation.
        for cut in 1..out.len() {
            assert!(MsgBuffer::decode(out[..cut].to_vec(), bytewise).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn split_and_append_keep_key_msn_order() {
        let mut b = buffer(&[(b"d", 4), (b"a", 1), (b"m", 3), (b"x", 2), (b"m", 9)]);
        b.insert_broadcast(10, msg(b"", 10, MsgKind::Broadcast).body);
        let pivots: Vec<Box<[u8]>> = vec![b"b".to_vec().into(), b"m".to_vec().into(), b"n".to_vec().into()];
        let pieces = b.clone().split(&pivots, bytewise);
        let got: Vec<Vec<(Vec<u8>, u64)>> = pieces.iter().map(keys).collect();
        assert_eq!(
            got,
            vec![
                vec![(b"a".to_vec(), 1)],
                vec![(b"d".to_vec(), 4)],
                vec![(b"m".to_vec(), 3), (b"m".to_vec(), 9)],
                vec![(b"x".to_vec(), 2)],
            ]
        );
        assert!(pieces.iter().all(|p| p.broadcasts().len() == 1));
        // Appending newer messages interleaves them by key, then MSN.
        let mut older = buffer(&[(b"c", 20), (b"m", 21), (b"z", 22)]);
        let newer = buffer(&[(b"a", 30), (b"m", 31), (b"q", 32)]);
        older.append(newer, bytewise);
        assert_eq!(
            keys(&older),
            vec![
                (b"a".to_vec(), 30),
                (b"c".to_vec(), 20),
                (b"m".to_vec(), 21),
                (b"m".to_vec(), 31),
                (b"q".to_vec(), 32),
                (b"z".to_vec(), 22),
            ]
        );
        // Pieces put back together give the whole.
        let mut whole = MsgBuffer::default();
        for p in pieces {
            whole.append(p, bytewise);
        }
        assert_eq!(keys(&whole), keys(&b));
        assert_eq!(whole.broadcasts().len(), 1);
    }

    #[test]
    fn the_unchecked_accessors_read_what_the_checked_decoder_reads() {
        let mut b = MsgBuffer::default();
        let long_key = vec![7u8; 300];
        for (i, (txid, provisional, sp)) in [(0, false, 0), (300, true, 200), (1 << 40, true, 1), (5, false, 0)]
            .into_iter()
            .enumerate()
        {
            let key: &[u8] = if i == 1 { &long_key } else { b"k" };
            let body = MsgBody {
                kind: MsgKind::Insert,
                fn_id: 3,
                txid,
                provisional,
                sp,
                val: vec![i as u8; 130 * i].into(),
            };
            b.insert(Msg { msn: 1000 + i as u64, key: key.into(), body }, bytewise);
        }
        let mut out = Vec::new();
        b.encode(&mut out);
        let mut r = Reader::new(&out);
        r.varint().unwrap();
        for &o in &b.offs {
            let m = Msg::decode(&mut r).unwrap();
            let (k, msn, body) = message_at(&b.data, o);
            assert_eq!((k, msn), (&m.key[..], m.msn));
            assert_eq!(key_at(&b.data, o), (&m.key[..], m.msn));
            assert_eq!(body, m.body);
            let mut one = Vec::new();
            m.encode(&mut one);
            assert_eq!(len_at(&b.data, o), one.len());
        }
    }

    #[test]
    fn memory_is_the_encoded_bytes_plus_an_offset() {
        let b = buffer(&[(b"key", 1)]);
        let mut one = Vec::new();
        msg(b"key", 1, MsgKind::Insert).encode(&mut one);
        assert!(b.mem_bytes() >= one.len() + OFFSET_BYTES);
        assert!(b.mem_bytes() <= one.len() + 32 + 16 * OFFSET_BYTES);
    }
}
