//! Message buffers: one per child of an internal node.
//!
//! A buffer is indexed by (key, MSN), so a reader finds one key's messages,
//! already in MSN order, with a range lookup instead of a scan, and a flush
//! can cut the buffer at the child's pivots in O(log n) (`split_off`) and
//! merge the parts into the grandchildren's buffers in one pass (`append`).
//! Broadcast messages, which apply to every key, are kept beside the index
//! in MSN order; a flush copies them into every buffer below.
//!
//! Invariant (checked by `check`): every message in a buffer has a lower MSN
//! than every message in the buffers of its parent node for the same child,
//! because a flush always moves a whole buffer.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use super::message::{Msg, MsgBody, MsgKind};
use super::Comparator;
use crate::encoding::{put_varint, DecodeResult, Reader};

/// Memory a buffered message costs beyond its key and value bytes: its share
/// of a B-tree node, the index key and body structs, and two allocations.
pub(crate) const MSG_OVERHEAD_BYTES: usize = 96;

/// The index key of a buffered message. It carries the dictionary's
/// comparator so the standard `BTreeMap` can order keys by it.
#[derive(Clone)]
pub(crate) struct BufKey {
    pub key: Box<[u8]>,
    pub msn: u64,
    cmp: Comparator,
}

impl PartialEq for BufKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for BufKey {}
impl PartialOrd for BufKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for BufKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.cmp)(&self.key, &other.key).then(self.msn.cmp(&other.msn))
    }
}

/// The messages waiting above one child.
#[derive(Default, Clone)]
pub(crate) struct MsgBuffer {
    msgs: BTreeMap<BufKey, MsgBody>,
    /// Broadcast messages, in MSN order.
    broadcasts: Vec<(u64, MsgBody)>,
    /// Key and value bytes of all messages.
    payload_bytes: usize,
}

fn msg_mem(key_len: usize, body: &MsgBody) -> usize {
    key_len + body.val.len() + MSG_OVERHEAD_BYTES
}

impl MsgBuffer {
    pub(crate) fn len(&self) -> usize {
        self.msgs.len() + self.broadcasts.len()
    }

    /// Memory held, and the quantity the flush policy budgets.
    pub(crate) fn mem_bytes(&self) -> usize {
        self.payload_bytes
    }

    pub(crate) fn insert(&mut self, msg: Msg, cmp: Comparator) {
        if msg.body.kind == MsgKind::Broadcast {
            self.insert_broadcast(msg.msn, msg.body);
            return;
        }
        self.payload_bytes += msg_mem(msg.key.len(), &msg.body);
        let prev = self.msgs.insert(BufKey { key: msg.key, msn: msg.msn, cmp }, msg.body);
        debug_assert!(prev.is_none(), "two messages with one MSN");
    }

    pub(crate) fn insert_broadcast(&mut self, msn: u64, body: MsgBody) {
        debug_assert!(self.broadcasts.last().is_none_or(|(m, _)| *m < msn), "broadcasts out of MSN order");
        self.payload_bytes += msg_mem(0, &body);
        self.broadcasts.push((msn, body));
    }

    /// An index key to search or cut at.
    pub(crate) fn probe(key: &[u8], msn: u64, cmp: Comparator) -> BufKey {
        BufKey { key: key.into(), msn, cmp }
    }

    /// The messages for one key, in MSN order (broadcasts not included).
    pub(crate) fn for_key<'a>(
        &'a self,
        key: &[u8],
        cmp: Comparator,
    ) -> impl Iterator<Item = (u64, &'a MsgBody)> + 'a {
        let lo = Self::probe(key, 0, cmp);
        let hi = Self::probe(key, u64::MAX, cmp);
        self.msgs.range(lo..=hi).map(|(k, b)| (k.msn, b))
    }

    /// The messages whose keys fall in [lo, hi), in (key, MSN) order.
    pub(crate) fn range<'a>(
        &'a self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        cmp: Comparator,
    ) -> impl Iterator<Item = (&'a [u8], u64, &'a MsgBody)> + 'a {
        let lo = match lo {
            Some(k) => Bound::Included(Self::probe(k, 0, cmp)),
            None => Bound::Unbounded,
        };
        let hi = match hi {
            Some(k) => Bound::Excluded(Self::probe(k, 0, cmp)),
            None => Bound::Unbounded,
        };
        self.msgs.range((lo, hi)).map(|(k, b)| (&k.key[..], k.msn, b))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], u64, &MsgBody)> {
        self.msgs.iter().map(|(k, b)| (&k.key[..], k.msn, b))
    }

    pub(crate) fn broadcasts(&self) -> &[(u64, MsgBody)] {
        &self.broadcasts
    }

    /// Lowest and highest MSN held, if any.
    pub(crate) fn msn_range(&self) -> Option<(u64, u64)> {
        let it = self.msgs.keys().map(|k| k.msn).chain(self.broadcasts.iter().map(|(m, _)| *m));
        it.fold(None, |acc, m| match acc {
            None => Some((m, m)),
            Some((lo, hi)) => Some((lo.min(m), hi.max(m))),
        })
    }

    /// Merges `other` into this buffer. Broadcasts present in both (copies
    /// made by `split_off`) are kept once.
    pub(crate) fn append(&mut self, mut other: MsgBuffer) {
        self.payload_bytes += other.payload_bytes;
        self.msgs.append(&mut other.msgs);
        if !other.broadcasts.is_empty() {
            let mut all = std::mem::take(&mut self.broadcasts);
            all.append(&mut other.broadcasts);
            all.sort_by_key(|(m, _)| *m);
            all.dedup_by_key(|(m, _)| *m);
            self.broadcasts = all;
            self.recount();
        }
    }

    fn recount(&mut self) {
        self.payload_bytes = self.msgs.iter().map(|(k, b)| msg_mem(k.key.len(), b)).sum::<usize>()
            + self.broadcasts.iter().map(|(_, b)| msg_mem(0, b)).sum::<usize>();
    }

    /// Empties the buffer, returning point messages in (key, MSN) order and
    /// broadcasts in MSN order.
    pub(crate) fn take_all(&mut self) -> (BTreeMap<BufKey, MsgBody>, Vec<(u64, MsgBody)>) {
        self.payload_bytes = 0;
        (std::mem::take(&mut self.msgs), std::mem::take(&mut self.broadcasts))
    }

    /// Puts back what `take_all` returned (into an empty buffer or one whose
    /// messages are all newer).
    pub(crate) fn put_back(&mut self, msgs: BTreeMap<BufKey, MsgBody>, broadcasts: Vec<(u64, MsgBody)>) {
        let mut other = MsgBuffer { msgs, broadcasts, payload_bytes: 0 };
        other.recount();
        self.append(other);
    }

    /// Serializes as `count varint | count × message` (see `message.rs`).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.len() as u64);
        for (k, body) in &self.msgs {
            Msg { msn: k.msn, key: k.key.clone(), body: body.clone() }.encode(out);
        }
        for (msn, body) in &self.broadcasts {
            Msg { msn: *msn, key: Box::new([]), body: body.clone() }.encode(out);
        }
    }

    pub(crate) fn decode(bytes: &[u8], cmp: Comparator) -> DecodeResult<MsgBuffer> {
        let mut r = Reader::new(bytes);
        let n = r.varint()?;
        if n > bytes.len() as u64 {
            return Err(format!("buffer claims {n} messages in {} bytes", bytes.len()));
        }
        let mut buf = MsgBuffer::default();
        let mut broadcasts = Vec::new();
        let mut sorted: Vec<(BufKey, MsgBody)> = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let m = Msg::decode(&mut r)?;
            if m.body.kind == MsgKind::Broadcast {
                broadcasts.push((m.msn, m.body));
            } else {
                buf.payload_bytes += msg_mem(m.key.len(), &m.body);
                sorted.push((BufKey { key: m.key, msn: m.msn, cmp }, m.body));
            }
        }
        // Buffers are written in index order, so this sort only checks, and
        // the map is then built in one pass instead of one insert per message.
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!("duplicate message MSN {}", w[0].0.msn));
        }
        buf.msgs = sorted.into_iter().collect();
        if !r.is_empty() {
            return Err("trailing bytes after buffer messages".into());
        }
        broadcasts.sort_by_key(|(m, _)| *m);
        for (msn, body) in broadcasts {
            buf.insert_broadcast(msn, body);
        }
        Ok(buf)
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

    #[test]
    fn a_buffer_finds_one_keys_messages_in_msn_order_and_survives_encoding() {
        let mut b = MsgBuffer::default();
        for (i, k) in [&b"b"[..], b"a", b"b", b"c", b"b"].iter().enumerate() {
            b.insert(msg(k, 10 + i as u64, MsgKind::Insert), bytewise);
        }
        b.insert(msg(b"", 20, MsgKind::Broadcast), bytewise);
        let msns: Vec<u64> = b.for_key(b"b", bytewise).map(|(m, _)| m).collect();
        assert_eq!(msns, vec![10, 12, 14]);
        assert_eq!(b.range(Some(b"b"), Some(b"c"), bytewise).count(), 3);
        let mut out = Vec::new();
        b.encode(&mut out);
        let d = MsgBuffer::decode(&out, bytewise).unwrap();
        assert_eq!(d.len(), b.len());
        assert_eq!(d.mem_bytes(), b.mem_bytes());
        assert_eq!(d.broadcasts().len(), 1);
        assert_eq!(d.msn_range(), Some((10, 20)));
        // The same message twice is corruption.
        let mut dup = Vec::new();
        put_varint(&mut dup, 2);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        assert!(MsgBuffer::decode(&dup, bytewise).is_err());
    }
}
