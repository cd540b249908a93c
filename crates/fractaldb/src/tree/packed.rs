//! Packed buffers: a child's buffer as a reader fetched it, left in its
//! serialized form.
//!
//! A point read that misses an internal node's buffer needs only the few
//! messages for its key. Decoding the whole partition into a `MsgBuffer`
//! (one B-tree entry and two allocations per message) cost more than the
//! read itself: profiles of point gets were half malloc and free. A packed
//! buffer keeps the decompressed bytes and an offset per message, and
//! answers lookups by binary search, decoding only the messages returned.
//! It is read-only: a flush or write loads the node whole and gets a real
//! `MsgBuffer`.
//!
//! The bytes are those of `MsgBuffer::encode`: point messages in (key, MSN)
//! order, then broadcasts, which are decoded up front.

use std::cmp::Ordering;

use super::message::{Msg, MsgBody, MsgKind};
use super::Comparator;
use crate::encoding::{DecodeResult, Reader};

/// A read-only buffer in serialized form.
pub(crate) struct PackedBuffer {
    data: Vec<u8>,
    /// Start of each point message, in (key, MSN) order.
    offs: Vec<u32>,
    broadcasts: Vec<(u64, MsgBody)>,
}

/// Reads the key and MSN of the message at `off` without allocating.
fn key_at(data: &[u8], off: u32) -> (&[u8], u64) {
    // Offsets were validated when the buffer was built.
    let mut r = Reader::new(&data[off as usize..]);
    let msn = r.u64().expect("validated");
    MsgBody::decode_head(&mut r).expect("validated");
    (r.bytes().expect("validated"), msn)
}

impl PackedBuffer {
    /// Indexes serialized buffer bytes, checking every length and that the
    /// point messages ascend by (key, MSN).
    pub(crate) fn new(data: Vec<u8>, cmp: Comparator) -> DecodeResult<PackedBuffer> {
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
            r.u64()?;
            // The head allocates nothing; only broadcasts are decoded whole.
            if MsgBody::decode_head(&mut r)?.kind == MsgKind::Broadcast {
                let mut rb = Reader::new(&data[start..]);
                let m = Msg::decode(&mut rb)?;
                r.take(start + rb.pos() - r.pos())?;
                broadcasts.push((m.msn, m.body));
                continue;
            }
            r.bytes()?;
            r.bytes()?;
            let this = key_at(&data, start as u32);
            if let Some(p) = prev {
                if cmp(p.0, this.0).then(p.1.cmp(&this.1)) != Ordering::Less {
                    return Err("buffer messages out of order".into());
                }
            }
            prev = Some(this);
            offs.push(start as u32);
        }
        if !r.is_empty() {
            return Err("trailing bytes after buffer messages".into());
        }
        broadcasts.sort_by_key(|(m, _)| *m);
        Ok(PackedBuffer { data, offs, broadcasts })
    }

    pub(crate) fn mem_bytes(&self) -> usize {
        self.data.capacity() + self.offs.capacity() * 4 + self.broadcasts.len() * 64
    }

    pub(crate) fn broadcasts(&self) -> &[(u64, MsgBody)] {
        &self.broadcasts
    }

    fn decode(&self, i: usize) -> Msg {
        Msg::decode(&mut Reader::new(&self.data[self.offs[i] as usize..])).expect("validated")
    }

    /// Index of the first message whose key is not below `key`.
    fn lower_bound(&self, key: &[u8], cmp: Comparator) -> usize {
        self.offs.partition_point(|&o| cmp(key_at(&self.data, o).0, key) == Ordering::Less)
    }

    /// The messages for `key`, in MSN order.
    pub(crate) fn for_key(&self, key: &[u8], cmp: Comparator) -> Vec<(u64, MsgBody)> {
        let mut out = Vec::new();
        for i in self.lower_bound(key, cmp)..self.offs.len() {
            if cmp(key_at(&self.data, self.offs[i]).0, key) != Ordering::Equal {
                break;
            }
            let m = self.decode(i);
            out.push((m.msn, m.body));
        }
        out
    }

    /// The messages with keys in [lo, hi), in (key, MSN) order.
    pub(crate) fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>, cmp: Comparator) -> Vec<Msg> {
        let start = lo.map_or(0, |lo| self.lower_bound(lo, cmp));
        let mut out = Vec::new();
        for i in start..self.offs.len() {
            if hi.is_some_and(|hi| cmp(key_at(&self.data, self.offs[i]).0, hi) != Ordering::Less) {
                break;
            }
            out.push(self.decode(i));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::buffer::MsgBuffer;
    use super::*;

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    #[test]
    fn a_packed_buffer_answers_like_the_buffer_it_was_written_from() {
        let mut b = MsgBuffer::default();
        let keys: [&[u8]; 6] = [b"m", b"c", b"m", b"x", b"a", b"m"];
        for (i, k) in keys.iter().enumerate() {
            let body = MsgBody {
                kind: MsgKind::Insert,
                fn_id: 0,
                txid: 0,
                provisional: false,
                sp: 0,
                val: vec![i as u8].into(),
            };
            b.insert(Msg { msn: 100 + i as u64, key: (*k).into(), body }, bytewise);
        }
        let bc = MsgBody {
            kind: MsgKind::Broadcast,
            fn_id: 1,
            txid: 0,
            provisional: false,
            sp: 0,
            val: Box::new([]),
        };
        b.insert(Msg { msn: 200, key: Box::new([]), body: bc }, bytewise);
        let mut bytes = Vec::new();
        b.encode(&mut bytes);
        let p = PackedBuffer::new(bytes.clone(), bytewise).unwrap();
        for k in [&b"a"[..], b"b", b"c", b"m", b"x", b"z"] {
            let want: Vec<(u64, MsgBody)> =
                b.for_key(k, bytewise).map(|(m, body)| (m, body.clone())).collect();
            assert_eq!(p.for_key(k, bytewise), want);
        }
        let r: Vec<&[u8]> = b.range(Some(b"c"), Some(b"x"), bytewise).map(|(k, _, _)| k).collect();
        let pr = p.range(Some(b"c"), Some(b"x"), bytewise);
        assert_eq!(pr.iter().map(|m| &m.key[..]).collect::<Vec<_>>(), r);
        assert_eq!(p.broadcasts().len(), 1);
        // Damage is an error.
        for cut in 1..bytes.len() {
            assert!(PackedBuffer::new(bytes[..cut].to_vec(), bytewise).is_err());
        }
    }
}
