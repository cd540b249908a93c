//! Message buffers: one per child of an internal node.
//!
//! A buffer keeps its point messages in their serialized form (the bytes of
//! `Msg::encode`), back to back in one arena, plus an index in (key, MSN)
//! order of each message's arena offset and its key's first 8 bytes. So:
//!
//! - a message costs its encoded bytes plus a 16-byte index slot, not a B-tree
//!   entry and two allocations (the old `BTreeMap` form cost about 96 bytes
//!   and two mallocs per message, which was a quarter of a random-insert
//!   load's CPU and half the memory the buffers were charged for);
//! - writing a buffer to disk is a copy, and reading one back is an
//!   indexing pass that checks every length and the order, with no decode;
//! - a reader finds one key's messages by binary search, decoding only those.
//!
//! Inserting splices a slot into the sorted index (a memmove of at most a
//! few thousand slots for a buffer within its node's budget). In a
//! dictionary with the bytewise order, comparisons look at the slots' key
//! prefixes first and reach into the arena only on a tie: a binary search
//! over the arena itself took a cache miss per step, and was the largest
//! cost of inserting. A flush takes
//! a whole buffer, cuts it at the child's pivots and merges each piece into
//! a grandchild's buffer: the piece's bytes are appended to the arena and
//! the two offset lists merged.
//!
//! Wide messages (broadcasts, which apply to every key, and range deletes,
//! which apply to the keys of a range) are kept decoded beside the index in
//! MSN order, in `broadcasts`; a flush copies a broadcast into every buffer
//! below and a range delete, whole (not cut), into each buffer whose child's
//! key range meets its range. A reader of a key applies the buffer's point
//! messages for the key and the wide messages covering it in one MSN order,
//! so a put newer than a range delete over its key wins, and an older one
//! is deleted, whichever list either sits in.
//!
//! Invariant (checked by `check`): every message in a buffer has a lower MSN
//! than every message in the buffers of its parent node for the same child,
//! because a flush always moves a whole buffer.

use std::cmp::Ordering;

use super::message::{Msg, MsgBody, MsgKind, MsgRef, KIND_COMMITS, KIND_PROVISIONAL};
use super::KeyOrder;
use crate::encoding::{put_varint, DecodeResult, Reader};

/// Memory a buffered message costs beyond its encoded bytes: its slot.
const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// One entry of a buffer's sorted index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The key's first 8 bytes, big-endian, zero-padded, in a dictionary
    /// with the bytewise order (so prefixes order as the keys do, ties
    /// aside); 0 otherwise, which leaves every comparison to the comparator.
    prefix: u64,
    /// Where the message starts in the arena.
    off: u32,
}

/// The length of an empty buffer's encoding (`encode`: the count 0).
pub(crate) const EMPTY_BUFFER_RAW_LEN: u32 = 1;

/// Memory charged per broadcast message beyond its value.
const BROADCAST_OVERHEAD_BYTES: usize = 64;

/// The messages waiting above one child.
#[derive(Default, Clone)]
pub(crate) struct MsgBuffer {
    /// Point messages in `Msg::encode` form, in no particular order. May
    /// hold bytes no offset points at (a decoded buffer's count prefix and
    /// broadcasts); `mem_bytes` counts them, as they are memory held.
    data: Vec<u8>,
    /// Each point message's slot, in (key, MSN) order.
    offs: Vec<Slot>,
    /// Wide messages (broadcasts and range deletes), in MSN order.
    broadcasts: Vec<(u64, MsgBody)>,
}

// The arena holds only messages that `Msg::encode` wrote or that `decode`
// validated, so the accessors below parse without checks: the layout is
// `msn u64 | kind u8 | fn_id u8 | txid varint | [sp varint if provisional]
// | key_len varint | key | val_len varint | val` (see `message.rs`). They
// are the buffer's hot path (every binary-search step and merge comparison
// reads a key), too hot for the checked `Reader` (docs/benchmarks.md,
// "Engine constants").

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

/// A message read in place: key, MSN, and body with its value borrowed.
pub(crate) type BorrowedMsg<'a> = (&'a [u8], u64, MsgBody<&'a [u8]>);

/// The whole message at `off`, its key and value borrowed from `data`.
fn message_at(data: &[u8], off: u32) -> BorrowedMsg<'_> {
    let mut r = Reader::new(&data[off as usize..]);
    let msn = r.u64().expect("validated");
    let head = MsgBody::decode_head(&mut r).expect("validated");
    let key = r.bytes().expect("validated");
    let val = r.bytes().expect("validated");
    (key, msn, head.with_val(val))
}

/// The encoded length of the message at `off`.
fn len_at(data: &[u8], off: u32) -> usize {
    let (q, _) = key_pos(data, off);
    let (key_len, q) = varint_at(data, q);
    let (val_len, q) = varint_at(data, q + key_len);
    q + val_len - off as usize
}

/// The slot prefix of `key` under `order` (see [`Slot::prefix`]).
#[inline]
pub(crate) fn prefix(key: &[u8], order: KeyOrder) -> u64 {
    if !order.bytewise {
        return 0;
    }
    super::key_prefix(key)
}

/// The partition point of `v` (every element for which `below` holds comes
/// first) at or after `from`, which must not be past it: an exponential
/// search from `from`, then a binary one. Costs the log of the distance
/// from `from`, not of the length.
fn gallop<T>(v: &[T], from: usize, below: impl Fn(&T) -> bool) -> usize {
    debug_assert!(from == 0 || below(&v[from - 1]), "gallop from past the partition point");
    let (mut lo, mut step) = (from, 1);
    while lo + step <= v.len() && below(&v[lo + step - 1]) {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(v.len());
    lo + v[lo..hi].partition_point(below)
}

/// Orders the message of slot `s` against (key, MSN) with prefix `p`.
#[inline]
fn order_to(data: &[u8], s: Slot, p: u64, key: &[u8], msn: u64, order: KeyOrder) -> Ordering {
    s.prefix.cmp(&p).then_with(|| {
        let (k, m) = key_at(data, s.off);
        (order.cmp)(k, key).then(m.cmp(&msn))
    })
}

/// Orders the messages of two slots of one arena by (key, MSN). The
/// prefixes decide most comparisons; only a tie reads the arena (parsing
/// `b`'s key up front, as this once did, cost a cache miss per comparison).
#[inline]
fn order_slots(data: &[u8], a: Slot, b: Slot, order: KeyOrder) -> Ordering {
    a.prefix.cmp(&b.prefix).then_with(|| {
        let ((ka, ma), (kb, mb)) = (key_at(data, a.off), key_at(data, b.off));
        (order.cmp)(ka, kb).then(ma.cmp(&mb))
    })
}

/// Orders the message of slot `s` against `key` alone (any MSN).
#[inline]
fn key_order(data: &[u8], s: Slot, p: u64, key: &[u8], order: KeyOrder) -> Ordering {
    s.prefix.cmp(&p).then_with(|| (order.cmp)(key_at(data, s.off).0, key))
}

/// An arena offset. Invariant: every arena stays far below 4 GiB, so its
/// offsets fit a u32. A root's buffers hold at most
/// `MAX_ROOT_BUFFER_BYTES` (1 GiB: `Tree::write_msgs` refuses a write past
/// it before logging it); any other buffer its node's budget plus what one
/// flush moves in (a parent's buffer); a `Merger` a child's buffer and its
/// spills (at most `SPILL_NODES` node sizes); and node sizes are at most
/// `MAX_NODE_BYTES` (128 MiB, `limits.rs`): under 2 GiB. A decoded buffer
/// is one partition, whose length is a u32. Past it is a bug: panic, never
/// a wrapped offset.
fn offset(pos: usize) -> u32 {
    u32::try_from(pos).expect("a message buffer past 4 GiB")
}

/// Builds one buffer from several (a child's spills and its buffer, for a
/// flush): each part's arena is copied once as it is added, back to back,
/// so the part can be dropped at once, and `finish` merges their sorted
/// indexes all together, k ways, through a heap. Appending them one by one
/// merged the growing index again for each part: with twenty spills, ten
/// passes over it, a sixth of the cleaner's time at 40x the cache.
pub(crate) struct Merger {
    data: Vec<u8>,
    /// Each part's index, its offsets already moved to the new arena.
    lists: Vec<Vec<Slot>>,
    broadcasts: Vec<(u64, MsgBody)>,
}

impl Merger {
    /// A merger whose arena takes `bytes` without growing.
    pub(crate) fn with_capacity(bytes: usize) -> Merger {
        Merger { data: Vec::with_capacity(bytes), lists: Vec::new(), broadcasts: Vec::new() }
    }

    pub(crate) fn add(&mut self, part: &MsgBuffer) {
        let base = offset(self.data.len());
        self.data.extend_from_slice(&part.data);
        if !part.offs.is_empty() {
            self.lists.push(part.offs.iter().map(|&s| Slot { off: s.off + base, ..s }).collect());
        }
        self.broadcasts.extend(part.broadcasts.iter().cloned());
    }

    /// The parts' messages in (key, MSN) order (MSNs are distinct, so the
    /// order of `add` calls does not matter), broadcasts in MSN order with
    /// the copies `split` made kept once.
    pub(crate) fn finish(self, order: KeyOrder) -> MsgBuffer {
        let Merger { data, lists, mut broadcasts } = self;
        // (slot, list, index in list) of each list's next message; least on top.
        type Head = (Slot, usize, usize);
        let less = |a: &Head, b: &Head| order_slots(&data, a.0, b.0, order) == Ordering::Less;
        let sift_down = |heap: &mut [Head], mut at: usize| loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if l < heap.len() && less(&heap[l], &heap[least]) {
                least = l;
            }
            if r < heap.len() && less(&heap[r], &heap[least]) {
                least = r;
            }
            if least == at {
                return;
            }
            heap.swap(at, least);
            at = least;
        };
        let mut heap: Vec<Head> = lists.iter().enumerate().map(|(i, l)| (l[0], i, 0)).collect();
        for at in (0..heap.len() / 2).rev() {
            sift_down(&mut heap, at);
        }
        let mut offs = Vec::with_capacity(lists.iter().map(Vec::len).sum());
        while let Some(&(slot, i, j)) = heap.first() {
            offs.push(slot);
            match lists[i].get(j + 1) {
                Some(&next) => heap[0] = (next, i, j + 1),
                None => {
                    heap.swap_remove(0);
                }
            }
            sift_down(&mut heap, 0);
        }
        debug_assert!(
            offs.windows(2).all(|w| order_slots(&data, w[0], w[1], order) == Ordering::Less),
            "merged buffer out of order"
        );
        broadcasts.sort_by_key(|(m, _)| *m);
        broadcasts.dedup_by_key(|(m, _)| *m);
        MsgBuffer { data, offs, broadcasts }
    }
}

impl MsgBuffer {
    pub(crate) fn len(&self) -> usize {
        self.offs.len() + self.broadcasts.len()
    }

    /// Memory held (capacities, not lengths: the cache charges what the
    /// heap holds), and the quantity the flush policy budgets.
    pub(crate) fn mem_bytes(&self) -> usize {
        self.data.capacity()
            + self.offs.capacity() * SLOT_BYTES
            + self.broadcasts.iter().map(|(_, b)| b.val.len() + BROADCAST_OVERHEAD_BYTES).sum::<usize>()
    }

    #[cfg(test)]
    pub(crate) fn insert(&mut self, msg: Msg, order: KeyOrder) {
        self.insert_ref(msg.as_ref(), order);
    }

    pub(crate) fn insert_ref(&mut self, msg: MsgRef, order: KeyOrder) {
        if msg.body.is_wide() {
            self.insert_broadcast(msg.msn, msg.body.with_val(msg.body.val.into()));
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
        let p = prefix(msg.key, order);
        let at = self
            .offs
            .partition_point(|&s| order_to(&self.data, s, p, msg.key, msg.msn, order) == Ordering::Less);
        msg.encode(&mut self.data);
        debug_assert!(
            self.offs.get(at).is_none_or(
                |&s| order_slots(&self.data, s, Slot { prefix: p, off }, order) != Ordering::Equal
            ),
            "two messages with one MSN"
        );
        self.offs.insert(at, Slot { prefix: p, off });
    }

    /// Inserts point messages (no broadcasts). A few are spliced in one by
    /// one; more are sorted among themselves and merged in one pass, so a
    /// batch costs one pass over the index rather than a memmove per
    /// message (a transaction's commit messages land right behind its
    /// writes, in the middle of the index).
    pub(crate) fn insert_many(&mut self, msgs: Vec<MsgRef>, order: KeyOrder) {
        const SPLICE_AT_MOST: usize = 8;
        if msgs.len() <= SPLICE_AT_MOST {
            for m in msgs {
                self.insert_ref(m, order);
            }
            return;
        }
        let mut piece = MsgBuffer {
            data: Vec::with_capacity(msgs.iter().map(|m| m.key.len() + m.body.val.len() + 24).sum()),
            offs: Vec::with_capacity(msgs.len()),
            broadcasts: Vec::new(),
        };
        for m in msgs {
            debug_assert!(!m.body.is_wide(), "insert_many takes point messages");
            let slot = Slot { prefix: prefix(m.key, order), off: offset(piece.data.len()) };
            m.encode(&mut piece.data);
            piece.offs.push(slot);
        }
        let data = &piece.data;
        piece.offs.sort_unstable_by(|&a, &b| order_slots(data, a, b, order));
        self.append(piece, order);
    }

    /// Folds each `Commit` of `msgs` into the newest buffered message for
    /// its key, if that is a provisional write of the same transaction, and
    /// returns the messages that did not fold (in their order). A folded
    /// message means the write and then the commit (`KIND_COMMITS`): the
    /// same as the two applied in a row, and nothing can come between them,
    /// since every newer message for the key is in this buffer (a flush
    /// moves a whole buffer) and the write is the newest. A `Commit` met by
    /// an already folded write of its transaction is dropped: the fold left
    /// the transaction nothing on the key to commit.
    ///
    /// A transaction commits right after its writes, which are then usually
    /// still in the root's buffer (95% of an iibench load's commits fold):
    /// the fold halves the messages its writes send down the tree, and lets
    /// the leaves take them as committed values (`basement::merge_key`'s
    /// simple path).
    pub(crate) fn fold_commits<'a>(&mut self, msgs: Vec<MsgRef<'a>>, order: KeyOrder) -> Vec<MsgRef<'a>> {
        // A broadcast newer than the write would fall between the two.
        if !self.broadcasts.is_empty() || !msgs.iter().any(|m| m.body.kind == MsgKind::Commit) {
            return msgs;
        }
        let mut msgs = msgs;
        // Commits come in key order (a transaction's undo list is sorted per
        // write): each search starts where the last one ended.
        let mut from = 0;
        let mut last: Option<&[u8]> = None;
        msgs.retain(|m| {
            if m.body.kind != MsgKind::Commit {
                return true;
            }
            if last.is_some_and(|l| (order.cmp)(l, m.key) == Ordering::Greater) {
                from = 0;
            }
            last = Some(m.key);
            let (folded, end) = self.fold_commit(m.key, m.body.txid, order, from);
            from = end;
            !folded
        });
        msgs
    }

    /// How many messages have a commit folded in (for `check`).
    pub(crate) fn folded(&self) -> usize {
        self.offs.iter().filter(|s| self.data[s.off as usize + 8] & KIND_COMMITS != 0).count()
    }

    /// `fold_commits` for one key: whether the commit needs no message, and
    /// the index after the key's messages. Every message before `from`
    /// must be at or below `key` (the search gallops from there).
    fn fold_commit(&mut self, key: &[u8], txid: u64, order: KeyOrder, from: usize) -> (bool, usize) {
        let p = prefix(key, order);
        let data = &self.data;
        let end = gallop(&self.offs, from, |&s| key_order(data, s, p, key, order) != Ordering::Greater);
        let Some(&newest) = end.checked_sub(1).map(|i| &self.offs[i]) else {
            return (false, end);
        };
        if (order.cmp)(key_at(&self.data, newest.off).0, key) != Ordering::Equal {
            return (false, end);
        }
        let at = newest.off as usize + 8; // the kind byte, after the MSN
        let (kind, (written_by, _)) = (self.data[at], varint_at(&self.data, at + 2));
        if kind & KIND_PROVISIONAL == 0 || written_by as u64 != txid {
            return (false, end);
        }
        self.data[at] = kind | KIND_COMMITS;
        (true, end)
    }

    pub(crate) fn insert_broadcast(&mut self, msn: u64, body: MsgBody) {
        debug_assert!(self.broadcasts.last().is_none_or(|(m, _)| *m < msn), "broadcasts out of MSN order");
        self.broadcasts.push((msn, body));
    }

    /// Index of the first message whose key is not below `key`.
    fn lower_bound(&self, key: &[u8], order: KeyOrder) -> usize {
        let p = prefix(key, order);
        self.offs.partition_point(|&s| key_order(&self.data, s, p, key, order) == Ordering::Less)
    }

    /// The messages for one key, in MSN order (broadcasts not included).
    pub(crate) fn for_key(&self, key: &[u8], order: KeyOrder) -> Vec<(u64, MsgBody)> {
        let mut out = Vec::new();
        for &s in &self.offs[self.lower_bound(key, order)..] {
            let (k, msn, body) = message_at(&self.data, s.off);
            if (order.cmp)(k, key) != Ordering::Equal {
                break;
            }
            out.push((msn, body.with_val(body.val.into())));
        }
        out
    }

    /// The messages whose keys fall in [lo, hi), in (key, MSN) order, with
    /// their keys and values borrowed from the buffer.
    pub(crate) fn range<'a>(
        &'a self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        order: KeyOrder,
    ) -> Vec<BorrowedMsg<'a>> {
        let start = lo.map_or(0, |lo| self.lower_bound(lo, order));
        let mut out = Vec::new();
        for &s in &self.offs[start..] {
            if hi.is_some_and(|hi| (order.cmp)(key_at(&self.data, s.off).0, hi) != Ordering::Less) {
                break;
            }
            out.push(message_at(&self.data, s.off));
        }
        out
    }

    /// Every point message in (key, MSN) order, keys and values borrowed.
    pub(crate) fn messages(&self) -> Vec<BorrowedMsg<'_>> {
        self.offs.iter().map(|s| message_at(&self.data, s.off)).collect()
    }

    /// The (key, MSN) of every point message, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.offs.iter().map(|s| key_at(&self.data, s.off))
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
    pub(crate) fn append(&mut self, other: MsgBuffer, order: KeyOrder) {
        // An empty buffer takes `other` over, unless it has more room.
        if self.offs.is_empty() && self.broadcasts.is_empty() && self.data.capacity() < other.data.len() {
            *self = other;
            return;
        }
        if !other.offs.is_empty() && other.offs.len() * 4 < self.offs.len() {
            // A few into many (a write batch into the root, a flushed piece
            // into a child): each of theirs finds its place by binary search
            // and the runs of ours between move with one memmove each,
            // rather than a comparison per slot of ours.
            let base = offset(self.data.len());
            self.data.reserve_exact(other.data.len());
            self.data.extend_from_slice(&other.data);
            let (n, k) = (self.offs.len(), other.offs.len());
            if self.offs.capacity() < n + k {
                self.offs.reserve_exact(k.max(n / 4));
            }
            self.offs.resize(n + k, other.offs[0]);
            // Ours occupy [0, end); theirs from the greatest down each take
            // the place after the ones of ours below them.
            let mut end = n;
            for (j, s) in other.offs.iter().enumerate().rev() {
                let t = Slot { off: s.off + base, ..*s };
                let pos = self.offs[..end]
                    .partition_point(|&o| order_slots(&self.data, o, t, order) == Ordering::Less);
                self.offs.copy_within(pos..end, pos + j + 1);
                self.offs[pos + j] = t;
                end = pos;
            }
            debug_assert!(
                self.offs.windows(2).all(|w| order_slots(&self.data, w[0], w[1], order) == Ordering::Less),
                "merged buffer out of order"
            );
        } else if !other.offs.is_empty() {
            let base = offset(self.data.len());
            self.data.reserve_exact(other.data.len());
            self.data.extend_from_slice(&other.data);
            let theirs = other.offs.iter().map(|&s| Slot { off: s.off + base, ..s });
            let mine = std::mem::take(&mut self.offs);
            let mut merged = Vec::with_capacity(mine.len() + other.offs.len());
            let mut theirs = theirs.peekable();
            for o in mine {
                while let Some(&t) = theirs.peek() {
                    if order_slots(&self.data, t, o, order) == Ordering::Less {
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
                merged.windows(2).all(|w| order_slots(&self.data, w[0], w[1], order) == Ordering::Less),
                "merged buffer out of order"
            );
            self.offs = merged;
        }
        if !other.broadcasts.is_empty() {
            let mut all = std::mem::take(&mut self.broadcasts);
            all.extend(other.broadcasts.iter().cloned());
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
    /// piece gets a copy of the broadcasts, and of each range delete whose
    /// range meets the piece's key range (uncut). Each piece's arena holds
    /// only its own messages, in order.
    pub(crate) fn split(self, pivots: &[Box<[u8]>], order: KeyOrder) -> Vec<MsgBuffer> {
        let mut pieces = Vec::with_capacity(pivots.len() + 1);
        let mut start = 0;
        for i in 0..=pivots.len() {
            let end = match pivots.get(i) {
                Some(pivot) => {
                    let p = prefix(pivot, order);
                    start
                        + self.offs[start..]
                            .partition_point(|&s| key_order(&self.data, s, p, pivot, order) == Ordering::Less)
                }
                None => self.offs.len(),
            };
            let lens: Vec<usize> = self.offs[start..end].iter().map(|s| len_at(&self.data, s.off)).collect();
            let mut piece = MsgBuffer {
                data: Vec::with_capacity(lens.iter().sum()),
                offs: Vec::with_capacity(end - start),
                broadcasts: self
                    .broadcasts
                    .iter()
                    .filter(|(_, b)| {
                        let lo = i.checked_sub(1).map(|j| &*pivots[j]);
                        b.meets(lo, pivots.get(i).map(|p| &**p), order.cmp)
                    })
                    .cloned()
                    .collect(),
            };
            for (&s, len) in self.offs[start..end].iter().zip(lens) {
                piece.offs.push(Slot { off: offset(piece.data.len()), ..s });
                piece.data.extend_from_slice(&self.data[s.off as usize..s.off as usize + len]);
            }
            pieces.push(piece);
            start = end;
        }
        pieces
    }

    /// How many bytes `encode` writes.
    pub(crate) fn encoded_len(&self) -> usize {
        let points: usize = self.offs.iter().map(|s| len_at(&self.data, s.off)).sum();
        let broadcasts: usize = self
            .broadcasts
            .iter()
            .map(|(msn, body)| {
                let mut v = Vec::new();
                Msg { msn: *msn, key: Box::new([]), body: body.clone() }.encode(&mut v);
                v.len()
            })
            .sum();
        crate::encoding::varint_len(self.len() as u64) + points + broadcasts
    }

    /// Serializes as `count varint | count × message` (see `message.rs`):
    /// point messages in (key, MSN) order, then broadcasts.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.len() as u64);
        for &Slot { off, .. } in &self.offs {
            out.extend_from_slice(&self.data[off as usize..off as usize + len_at(&self.data, off)]);
        }
        for (msn, body) in &self.broadcasts {
            Msg { msn: *msn, key: Box::new([]), body: body.clone() }.encode(out);
        }
    }

    /// Takes over what `encode` wrote, checking every length and that the
    /// point messages ascend by (key, MSN). Nothing is copied: the bytes
    /// become the arena.
    pub(crate) fn decode(data: Vec<u8>, order: KeyOrder) -> DecodeResult<MsgBuffer> {
        let cmp = order.cmp;
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
            super::message::check_wide(head.kind, key, val)?;
            if head.is_wide() {
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
            offs.push(Slot { prefix: prefix(key, order), off: offset(start) });
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

    fn bytewise_cmp(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    /// The bytewise order, with slot prefixes.
    const BYTEWISE: KeyOrder = KeyOrder { cmp: bytewise_cmp, bytewise: true };
    /// The same order given as a custom comparator: no prefixes.
    const CUSTOM: KeyOrder = KeyOrder { cmp: bytewise_cmp, bytewise: false };

    fn msg(key: &[u8], msn: u64, kind: MsgKind) -> Msg {
        Msg {
            msn,
            key: key.into(),
            body: MsgBody {
                kind,
                fn_id: 0,
                txid: 0,
                provisional: false,
                commits: false,
                sp: 0,
                val: b"v".to_vec().into(),
            },
        }
    }

    fn buffer(msgs: &[(&[u8], u64)]) -> MsgBuffer {
        let mut b = MsgBuffer::default();
        for &(k, msn) in msgs {
            b.insert(msg(k, msn, MsgKind::Insert), BYTEWISE);
        }
        b
    }

    fn keys(b: &MsgBuffer) -> Vec<(Vec<u8>, u64)> {
        b.keys().map(|(k, m)| (k.to_vec(), m)).collect()
    }

    fn txn_msg(key: &[u8], msn: u64, kind: MsgKind, txid: u64, provisional: bool) -> Msg {
        let mut m = msg(key, msn, kind);
        (m.body.txid, m.body.provisional) = (txid, provisional);
        m
    }

    #[test]
    fn commits_fold_into_their_transactions_newest_write_only() {
        for order in [BYTEWISE, CUSTOM] {
            let mut b = MsgBuffer::default();
            b.insert(txn_msg(b"a", 1, MsgKind::Insert, 5, true), order);
            b.insert(txn_msg(b"b", 2, MsgKind::Insert, 6, true), order); // another transaction
            b.insert(txn_msg(b"c", 3, MsgKind::Insert, 5, true), order);
            b.insert(txn_msg(b"c", 4, MsgKind::Insert, 7, false), order); // newest is not 5's
            b.insert(txn_msg(b"d", 5, MsgKind::Update, 5, true), order);
            let commit = |k: &[u8], msn| txn_msg(k, msn, MsgKind::Commit, 5, false);
            let (a, d) = (commit(b"a", 10), commit(b"d", 14));
            let msgs = [a, commit(b"b", 11), commit(b"c", 12), commit(b"z", 13), d, commit(b"d", 15)];
            let rest = b.fold_commits(msgs.iter().map(Msg::as_ref).collect(), order);
            // a and d folded (d's second commit dropped); b, c, z kept.
            let kept: Vec<&[u8]> = rest.iter().map(|m| m.key).collect();
            assert_eq!(kept, vec![&b"b"[..], b"c", b"z"]);
            let folded = |k: &[u8]| b.for_key(k, order).last().map(|(_, body)| body.commits);
            assert_eq!(
                (folded(b"a"), folded(b"b"), folded(b"c"), folded(b"d")),
                (Some(true), Some(false), Some(false), Some(true))
            );
            assert_eq!((b.len(), b.folded()), (5, 2));
            // The flag survives encoding and is checked on decode.
            let mut out = Vec::new();
            b.encode(&mut out);
            let again = MsgBuffer::decode(out, order).unwrap();
            assert_eq!(again.for_key(b"d", order), b.for_key(b"d", order));
            // A broadcast could fall between a write and its commit: no fold.
            b.insert(msg(b"", 20, MsgKind::Broadcast), order);
            b.insert(txn_msg(b"e", 21, MsgKind::Insert, 5, true), order);
            assert_eq!(b.fold_commits(vec![commit(b"e", 22).as_ref()], order).len(), 1);
        }
    }

    #[test]
    fn a_buffer_finds_one_keys_messages_in_msn_order_and_survives_encoding() {
        let mut b = MsgBuffer::default();
        for (i, k) in [&b"b"[..], b"a", b"b", b"c", b"b"].iter().enumerate() {
            b.insert(msg(k, 10 + i as u64, MsgKind::Insert), BYTEWISE);
        }
        b.insert(msg(b"", 20, MsgKind::Broadcast), BYTEWISE);
        let msns: Vec<u64> = b.for_key(b"b", BYTEWISE).into_iter().map(|(m, _)| m).collect();
        assert_eq!(msns, vec![10, 12, 14]);
        assert_eq!(b.range(Some(b"b"), Some(b"c"), BYTEWISE).len(), 3);
        assert_eq!(b.range(None, None, BYTEWISE).len(), 5);
        let mut out = Vec::new();
        b.encode(&mut out);
        let d = MsgBuffer::decode(out.clone(), BYTEWISE).unwrap();
        assert_eq!(d.len(), b.len());
        assert_eq!(keys(&d), keys(&b));
        assert_eq!(d.broadcasts().len(), 1);
        assert_eq!(d.msn_range(), Some((10, 20)));
        assert_eq!(d.for_key(b"b", BYTEWISE), b.for_key(b"b", BYTEWISE));
        // A decoded buffer encodes to the same bytes.
        let mut again = Vec::new();
        d.encode(&mut again);
        assert_eq!(again, out);
        // The same message twice is corruption.
        let mut dup = Vec::new();
        put_varint(&mut dup, 2);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        msg(b"k", 5, MsgKind::Delete).encode(&mut dup);
        assert!(MsgBuffer::decode(dup, BYTEWISE).is_err());
        let mut empty = Vec::new();
        MsgBuffer::default().encode(&mut empty);
        assert_eq!(empty.len(), EMPTY_BUFFER_RAW_LEN as usize);
        // So is any truncation.
        for cut in 1..out.len() {
            assert!(MsgBuffer::decode(out[..cut].to_vec(), BYTEWISE).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_merger_gives_what_appending_one_by_one_gives() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(7);
        for parts_n in [0usize, 1, 2, 3, 5, 20] {
            let mut msn = 0;
            let mut parts = Vec::new();
            for _ in 0..parts_n {
                let n = rng.gen_range(0..40);
                let mut msgs = Vec::new();
                for _ in 0..n {
                    msn += 1;
                    // Short keys share prefixes and repeat across parts.
                    let len = rng.gen_range(0..12);
                    let key: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..b'd')).collect();
                    msgs.push((key, msn));
                }
                let refs: Vec<(&[u8], u64)> = msgs.iter().map(|(k, m)| (&k[..], *m)).collect();
                let mut b = buffer(&refs);
                if rng.gen_bool(0.2) {
                    msn += 1;
                    b.insert_broadcast(msn, msg(b"", msn, MsgKind::Broadcast).body);
                }
                parts.push(b);
            }
            let mut appended = MsgBuffer::default();
            for p in &parts {
                appended.append(p.clone(), BYTEWISE);
            }
            let mut merger = Merger::with_capacity(0);
            for p in &parts {
                merger.add(p);
            }
            let merged = merger.finish(BYTEWISE);
            assert_eq!(keys(&merged), keys(&appended), "{parts_n} parts");
            let msns = |b: &MsgBuffer| b.broadcasts().iter().map(|(m, _)| *m).collect::<Vec<_>>();
            assert_eq!(msns(&merged), msns(&appended));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            merged.encode(&mut a);
            appended.encode(&mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn split_and_append_keep_key_msn_order() {
        let mut b = buffer(&[(b"d", 4), (b"a", 1), (b"m", 3), (b"x", 2), (b"m", 9)]);
        b.insert_broadcast(10, msg(b"", 10, MsgKind::Broadcast).body);
        let pivots: Vec<Box<[u8]>> = vec![b"b".to_vec().into(), b"m".to_vec().into(), b"n".to_vec().into()];
        let pieces = b.clone().split(&pivots, BYTEWISE);
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
        older.append(newer, BYTEWISE);
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
            whole.append(p, BYTEWISE);
        }
        assert_eq!(keys(&whole), keys(&b));
        assert_eq!(whole.broadcasts().len(), 1);
    }

    /// Both ways of appending (few into many by binary search, and the
    /// linear merge) give every message in (key, MSN) order.
    #[test]
    fn append_of_any_sizes_gives_the_sorted_union() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut msn = 0;
        for (mine, theirs) in [(0, 5), (5, 0), (100, 3), (100, 24), (100, 26), (40, 40), (3, 100), (1000, 1)]
        {
            let mut gen = |n: usize| {
                let mut b = MsgBuffer::default();
                for _ in 0..n {
                    msn += 1;
                    // Short keys collide often: ties go by MSN.
                    let key = format!("k{}", next() % 50).into_bytes();
                    b.insert(msg(&key, msn, MsgKind::Insert), BYTEWISE);
                }
                b
            };
            let (mut a, b) = (gen(mine), gen(theirs));
            let mut want = keys(&a);
            want.extend(keys(&b));
            want.sort();
            a.append(b, BYTEWISE);
            assert_eq!(keys(&a), want, "{mine} + {theirs}");
            // The arena still decodes to the same thing.
            let mut out = Vec::new();
            a.encode(&mut out);
            assert_eq!(keys(&MsgBuffer::decode(out, BYTEWISE).unwrap()), want);
        }
    }

    #[test]
    fn a_presized_merger_gathers_pieces_without_reallocating() {
        let pieces: Vec<MsgBuffer> = (0..20u64)
            .map(|p| {
                let mut b = MsgBuffer::default();
                for i in 0..30u64 {
                    let key = format!("k{:03}", (i * 7 + p * 13) % 97).into_bytes();
                    b.insert(msg(&key, p * 100 + i + 1, MsgKind::Insert), BYTEWISE);
                }
                b
            })
            .collect();
        let bytes: usize = pieces.iter().map(|b| b.data.len()).sum();
        let mut want: Vec<_> = pieces.iter().flat_map(keys).collect();
        want.sort();
        let mut merger = Merger::with_capacity(bytes);
        let arena = merger.data.as_ptr();
        for b in pieces {
            merger.add(&b);
        }
        let all = merger.finish(BYTEWISE);
        assert_eq!(keys(&all), want);
        assert_eq!(all.data.as_ptr(), arena, "the arena was reallocated");
        let mut out = Vec::new();
        all.encode(&mut out);
        assert_eq!(keys(&MsgBuffer::decode(out, BYTEWISE).unwrap()), want);
    }

    #[test]
    fn the_unchecked_accessors_read_what_the_checked_decoder_reads() {
        let mut b = MsgBuffer::default();
        let long_key = vec![7u8; 300];
        for (i, (txid, provisional, sp)) in
            [(0, false, 0), (300, true, 200), (1 << 40, true, 1), (5, false, 0)].into_iter().enumerate()
        {
            let key: &[u8] = if i == 1 { &long_key } else { b"k" };
            let body = MsgBody {
                kind: MsgKind::Insert,
                fn_id: 3,
                txid,
                provisional,
                commits: provisional && i == 2,
                sp,
                val: vec![i as u8; 130 * i].into(),
            };
            b.insert(Msg { msn: 1000 + i as u64, key: key.into(), body }, BYTEWISE);
        }
        let mut out = Vec::new();
        b.encode(&mut out);
        let mut r = Reader::new(&out);
        r.varint().unwrap();
        for &Slot { off: o, .. } in &b.offs {
            let m = Msg::decode(&mut r).unwrap();
            let (k, msn, body) = message_at(&b.data, o);
            assert_eq!((k, msn), (&m.key[..], m.msn));
            assert_eq!(key_at(&b.data, o), (&m.key[..], m.msn));
            assert_eq!(body, m.body.borrowed());
            let mut one = Vec::new();
            m.encode(&mut one);
            assert_eq!(len_at(&b.data, o), one.len());
        }
    }

    #[test]
    fn gallop_finds_the_partition_point_from_anywhere_before_it() {
        for len in 0..40usize {
            let v: Vec<usize> = (0..len).collect();
            for point in 0..=len {
                for from in 0..=point {
                    assert_eq!(gallop(&v, from, |&x| x < point), point, "len {len} from {from}");
                }
            }
        }
    }

    #[test]
    fn prefixed_and_plain_indexes_agree_with_a_model() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(11);
        // Short keys, keys with zero bytes, and long keys sharing 8-byte
        // prefixes: the cases where prefixes tie or padding matters.
        let alphabet: [&[u8]; 6] = [b"", b"\0", b"a", b"ab", b"abcdefgh", b"abcdefgh\0"];
        for order in [BYTEWISE, CUSTOM] {
            let mut b = MsgBuffer::default();
            let mut model = std::collections::BTreeSet::new();
            for msn in 1..2000u64 {
                let mut key = alphabet[rng.gen_range(0..alphabet.len())].to_vec();
                for _ in 0..rng.gen_range(0..3) {
                    key.push(rng.gen_range(0..3));
                }
                model.insert((key.clone(), msn));
                b.insert(msg(&key, msn, MsgKind::Insert), order);
            }
            let want: Vec<(Vec<u8>, u64)> = model.iter().cloned().collect();
            assert_eq!(keys(&b), want);
            for probe in alphabet {
                let got: Vec<u64> = b.for_key(probe, order).into_iter().map(|(m, _)| m).collect();
                let exp: Vec<u64> = model.iter().filter(|(k, _)| k == probe).map(|(_, m)| *m).collect();
                assert_eq!(got, exp, "for_key {probe:?}");
                let from = b.range(Some(probe), None, order).len();
                assert_eq!(from, model.iter().filter(|(k, _)| k.as_slice() >= probe).count());
            }
            let pivots: Vec<Box<[u8]>> = vec![b"a".to_vec().into(), b"abcdefgh".to_vec().into()];
            // The same messages inserted as batches give the same index.
            let mut batched = MsgBuffer::default();
            let mut all: Vec<Msg> = b
                .messages()
                .into_iter()
                .map(|(k, m, body)| Msg { msn: m, key: k.into(), body: body.with_val(body.val.into()) })
                .collect();
            rand::seq::SliceRandom::shuffle(all.as_mut_slice(), &mut rng);
            let mut rest = all.as_slice();
            while !rest.is_empty() {
                let n = rng.gen_range(1..40).min(rest.len());
                batched.insert_many(rest[..n].iter().map(Msg::as_ref).collect(), order);
                rest = &rest[n..];
            }
            assert_eq!(keys(&batched), want);
            let mut whole = MsgBuffer::default();
            for p in b.clone().split(&pivots, order) {
                whole.append(p, order);
            }
            assert_eq!(keys(&whole), want);
            let mut out = Vec::new();
            b.encode(&mut out);
            assert_eq!(keys(&MsgBuffer::decode(out, order).unwrap()), want);
        }
    }

    #[test]
    fn encoded_len_is_what_encode_writes() {
        // A spill's raw length is taken before anyone encodes it.
        let mut b = buffer(&[(b"key", 1), (b"another key", 3), (b"k", 4)]);
        let mut out = Vec::new();
        b.encode(&mut out);
        assert_eq!(b.encoded_len(), out.len());
        b.insert(msg(b"", 5, MsgKind::Broadcast), BYTEWISE);
        let mut out = Vec::new();
        b.encode(&mut out);
        assert_eq!(b.encoded_len(), out.len());
        assert_eq!(MsgBuffer::default().encoded_len(), 1);
    }

    #[test]
    fn memory_is_the_encoded_bytes_plus_an_offset() {
        let b = buffer(&[(b"key", 1)]);
        let mut one = Vec::new();
        msg(b"key", 1, MsgKind::Insert).encode(&mut one);
        assert!(b.mem_bytes() >= one.len() + SLOT_BYTES);
        assert!(b.mem_bytes() <= one.len() + 32 + 16 * SLOT_BYTES);
    }
}
