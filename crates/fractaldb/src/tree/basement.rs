//! Basements: the sorted runs of leafentries that make up a leaf.
//!
//! A basement is kept in memory in the same packed form it has on disk
//! (before compression), plus an index of entry offsets, so reading one from
//! disk is a decompress and one scan, writing it is a copy, and a point lookup
//! is a binary search with no allocation. Leaves receive messages in batches
//! (a whole flushed buffer at a time), which a basement applies by one merge
//! pass; single messages (a dictionary whose root is still a leaf) splice.
//!
//! Packed form: a sequence of entries, each
//! `key_len varint | key | le_len varint | leafentry` (see `leafentry.rs`),
//! in strictly increasing key order under the dictionary's comparator.

use std::cmp::Ordering;

use super::leafentry::{self, encode_value, Entry};
use super::message::{apply_to_value, ApplyError, MsgBody, MsgKind, UpdateFns};
use super::Comparator;
use crate::encoding::{put_varint, DecodeResult, Reader};

/// A sorted run of leafentries in packed form.
///
/// Invariant: `data` is at most `MAX_PACKED_BYTES` (u32::MAX) long, so
/// every entry's offset and the packed length (a partition's `raw_len` on
/// disk) fit a u32. Every way bytes get in checks it (`push_raw`,
/// `stage_one`, `from_packed`; `append` joins two small ones). Keys and
/// values are bounded (`limits.rs`), but the versions MVCC keeps for live
/// snapshots are not: one key's leafentry can grow past 4 GiB, and that is
/// an error from the message application, never a wrapped offset.
#[derive(Clone, Debug, Default)]
pub(crate) struct Basement {
    data: Vec<u8>,
    /// Start of each entry in `data`.
    offs: Vec<u32>,
}

/// A basement's new contents, computed and not yet made current
/// (`Basement::stage_sorted`, then `commit`).
pub(crate) enum Staged {
    Unchanged,
    /// The whole new basement.
    Replace(Basement),
    /// One entry's bytes, `start..start + old_len`, become `entry`: entry
    /// `idx` was there (`present`) and stays (`keep`), or either.
    Splice {
        idx: usize,
        present: bool,
        keep: bool,
        start: usize,
        old_len: usize,
        entry: Vec<u8>,
    },
}

/// The longest a basement's packed form may be (see `Basement`).
const MAX_PACKED_BYTES: usize = u32::MAX as usize;

/// The error for a basement that would pass `MAX_PACKED_BYTES`.
fn too_large(len: usize) -> String {
    format!(
        "a basement would hold {len} bytes, past the {MAX_PACKED_BYTES} its format allows \
         (a key's versions kept for live snapshots grew too large)"
    )
}

/// Memory a basement costs beyond its packed bytes, per entry (the offset).
const OFFSET_BYTES: usize = 4;

/// A varint length at `at` in validated bytes, and where its bytes start.
/// One byte in the common case (lengths below 128).
#[inline]
fn validated_varint(data: &[u8], mut at: usize) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let b = data[at];
        at += 1;
        v |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return (v, at);
        }
        shift += 7;
    }
}

impl Basement {
    pub(crate) fn new() -> Self {
        Basement::default()
    }

    /// Rebuilds a basement from its packed bytes, checking every length and
    /// that keys ascend.
    pub(crate) fn from_packed(data: Vec<u8>, cmp: Comparator) -> DecodeResult<Basement> {
        let mut offs = Vec::new();
        let mut r = Reader::new(&data);
        let mut prev: Option<&[u8]> = None;
        if data.len() > MAX_PACKED_BYTES {
            return Err(too_large(data.len()));
        }
        while !r.is_empty() {
            // Below `data.len()`, checked above.
            offs.push(r.pos() as u32);
            let key = r.bytes()?;
            let le = r.bytes()?;
            if le.is_empty() {
                return Err("empty leafentry".into());
            }
            if let Some(p) = prev {
                if cmp(p, key) != Ordering::Less {
                    return Err("basement keys out of order".into());
                }
            }
            prev = Some(key);
        }
        Ok(Basement { data, offs })
    }

    pub(crate) fn packed(&self) -> &[u8] {
        &self.data
    }

    pub(crate) fn len(&self) -> usize {
        self.offs.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.offs.is_empty()
    }

    /// Bytes of memory this basement holds (capacity, not length: that is
    /// what the allocator gave it).
    pub(crate) fn mem_bytes(&self) -> usize {
        self.data.capacity() + self.offs.capacity() * OFFSET_BYTES
    }

    /// Gives back spare capacity when it exceeds a quarter of what is used,
    /// so the cache's charge stays close to the data.
    pub(crate) fn compact(&mut self) {
        if self.data.capacity() > self.data.len() + self.data.len() / 4 + 64 {
            self.data.shrink_to_fit();
        }
        if self.offs.capacity() > self.offs.len() + self.offs.len() / 4 + 16 {
            self.offs.shrink_to_fit();
        }
    }

    /// Bytes of the packed form (what a serialization writes before compression).
    pub(crate) fn packed_bytes(&self) -> usize {
        self.data.len()
    }

    fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        // The packed form was validated when built (`from_packed`) or written
        // by `push_raw`, so its lengths are in bounds: read them without the
        // checked reader (its error paths cost a fifth of a scan's CPU).
        let at = self.offs[i] as usize;
        let (key_len, at) = validated_varint(&self.data, at);
        let key = &self.data[at..at + key_len];
        let (le_len, at) = validated_varint(&self.data, at + key_len);
        (key, &self.data[at..at + le_len])
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        self.entry(i).0
    }

    pub(crate) fn leafentry(&self, i: usize) -> &[u8] {
        self.entry(i).1
    }

    /// Binary search for `key`: `Ok(i)` if present, `Err(i)` where it would go.
    pub(crate) fn search(&self, key: &[u8], cmp: Comparator) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.offs.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cmp(self.key(mid), key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The leafentry stored for `key`, if any.
    pub(crate) fn get(&self, key: &[u8], cmp: Comparator) -> Option<&[u8]> {
        self.search(key, cmp).ok().map(|i| self.leafentry(i))
    }

    /// Appends an entry; refused if the basement would pass `MAX_PACKED_BYTES`.
    fn push_raw(&mut self, key: &[u8], le: &[u8]) -> Result<(), String> {
        // Two varints of at most 10 bytes each.
        let end = self.data.len() + key.len() + le.len() + 20;
        if end > MAX_PACKED_BYTES {
            return Err(too_large(end));
        }
        // Below `end`, checked above.
        self.offs.push(self.data.len() as u32);
        put_varint(&mut self.data, key.len() as u64);
        self.data.extend_from_slice(key);
        put_varint(&mut self.data, le.len() as u64);
        self.data.extend_from_slice(le);
        Ok(())
    }

    #[cfg(test)]
    fn push_value(&mut self, key: &[u8], value: &[u8]) {
        self.push_committed(key, value).unwrap();
    }

    /// Appends `key` holding one committed value every reader sees (the
    /// leafentry `0x01 | value`, as `encode_value` writes it) after every
    /// entry. The caller keeps keys strictly ascending (the loader checks
    /// each key against the last); refused past `MAX_PACKED_BYTES`.
    pub(crate) fn push_committed(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let le_len = 1 + value.len();
        let end = self.data.len() + key.len() + le_len + 20;
        if end > MAX_PACKED_BYTES {
            return Err(too_large(end));
        }
        // Below `end`, checked above.
        self.offs.push(self.data.len() as u32);
        put_varint(&mut self.data, key.len() as u64);
        self.data.extend_from_slice(key);
        put_varint(&mut self.data, le_len as u64);
        encode_value(&mut self.data, value);
        Ok(())
    }

    /// Applies messages sorted by (key, MSN) in one merge pass. Keys the
    /// messages leave empty are dropped from the basement; versions below
    /// `horizon` are collected (see `leafentry.rs`).
    #[cfg(test)]
    pub(crate) fn apply_sorted<V: AsRef<[u8]>>(
        &mut self,
        msgs: &[(&[u8], &MsgBody<V>)],
        cmp: Comparator,
        fns: &UpdateFns,
        horizon: u64,
    ) -> Result<(), ApplyError> {
        let staged = self.stage_sorted(msgs, cmp, fns, horizon)?;
        self.commit(staged);
        Ok(())
    }

    /// What `apply_sorted` would make of this basement, without changing
    /// it: a leaf stages every basement a flush touches and commits them
    /// only if all succeed (`flush.rs`, `apply_to_leaf`), so an error (an
    /// update function's, a basement past `MAX_PACKED_BYTES`) leaves the
    /// whole leaf as it was.
    pub(crate) fn stage_sorted<V: AsRef<[u8]>>(
        &self,
        msgs: &[(&[u8], &MsgBody<V>)],
        cmp: Comparator,
        fns: &UpdateFns,
        horizon: u64,
    ) -> Result<Staged, ApplyError> {
        if msgs.is_empty() {
            return Ok(Staged::Unchanged);
        }
        // One message: a search and a splice, at any size. Copying entry
        // by entry (below) decodes and compares every entry; at a few KiB
        // (a status dictionary's few counters, each message a commit's
        // clean-up or a count) it was most of the apply.
        if msgs.len() == 1 {
            return self.stage_one(msgs[0].0, msgs[0].1, cmp, fns, horizon);
        }
        let mut out = Basement {
            data: Vec::with_capacity(self.data.len() + msgs.len() * 32),
            offs: Vec::with_capacity(self.offs.len() + msgs.len()),
        };
        let mut le = Vec::new();
        let (mut i, mut m) = (0, 0);
        while m < msgs.len() {
            let key = msgs[m].0;
            // Copy the untouched entries before this message's key.
            while i < self.len() && cmp(self.key(i), key) == Ordering::Less {
                let (k, le) = self.entry(i);
                out.push_raw(k, le)?;
                i += 1;
            }
            let old = if i < self.len() && cmp(self.key(i), key) == Ordering::Equal {
                i += 1;
                Some(self.leafentry(i - 1))
            } else {
                None
            };
            let first = m;
            while m < msgs.len() && cmp(msgs[m].0, key) == Ordering::Equal {
                m += 1;
            }
            le.clear();
            if merge_key(key, old, msgs[first..m].iter().map(|x| x.1), fns, horizon, &mut le)? {
                out.push_raw(key, &le)?;
            }
        }
        while i < self.len() {
            let (k, le) = self.entry(i);
            out.push_raw(k, le)?;
            i += 1;
        }
        out.compact();
        Ok(Staged::Replace(out))
    }

    /// Makes what `stage_sorted` staged this basement's contents. Cannot fail.
    pub(crate) fn commit(&mut self, staged: Staged) {
        match staged {
            Staged::Unchanged => {}
            Staged::Replace(b) => *self = b,
            Staged::Splice { idx, present, keep, start, old_len, entry } => {
                let delta = entry.len() as i64 - old_len as i64;
                // Grow by an eighth at least, not Vec's doubling: `compact`
                // (after every application, `rebalance_basements`) shrinks a
                // basement whose capacity passes a quarter over its length,
                // and a doubled one would be shrunk and grown again, a copy of
                // the basement each way, at the next insert.
                if delta > 0 && self.data.capacity() < self.data.len() + delta as usize {
                    self.data.reserve_exact(delta as usize + self.data.len() / 8);
                }
                if !present && keep && self.offs.len() == self.offs.capacity() {
                    self.offs.reserve_exact(1 + self.offs.len() / 8);
                }
                self.data.splice(start..start + old_len, entry);
                match (present, keep) {
                    (true, true) => {}
                    (true, false) => {
                        self.offs.remove(idx);
                    }
                    // At most the old length, which fit.
                    (false, true) => self.offs.insert(idx, start as u32),
                    (false, false) => unreachable!("staged as Unchanged"),
                }
                let first_after = if keep { idx + 1 } else { idx };
                // Every moved offset is below the new length, which
                // `stage_one` checked.
                for o in &mut self.offs[first_after..] {
                    *o = (*o as i64 + delta) as u32;
                }
                debug_assert!(self.data.len() <= MAX_PACKED_BYTES);
                debug_assert!(self.offs.last().is_none_or(|&o| (o as usize) < self.data.len()));
            }
        }
    }

    #[cfg(test)]
    fn apply_one<V: AsRef<[u8]>>(
        &mut self,
        key: &[u8],
        body: &MsgBody<V>,
        cmp: Comparator,
        fns: &UpdateFns,
        horizon: u64,
    ) -> Result<(), ApplyError> {
        let staged = self.stage_one(key, body, cmp, fns, horizon)?;
        self.commit(staged);
        Ok(())
    }

    /// Stages one message as a splice of the packed bytes.
    fn stage_one<V: AsRef<[u8]>>(
        &self,
        key: &[u8],
        body: &MsgBody<V>,
        cmp: Comparator,
        fns: &UpdateFns,
        horizon: u64,
    ) -> Result<Staged, ApplyError> {
        let (idx, present) = match self.search(key, cmp) {
            Ok(i) => (i, true),
            Err(i) => (i, false),
        };
        let old = if present { Some(self.leafentry(idx)) } else { None };
        let mut le = Vec::new();
        let keep = merge_key(key, old, std::iter::once(body), fns, horizon, &mut le)?;
        let start = self.offs.get(idx).map_or(self.data.len(), |&o| o as usize);
        let old_len =
            if present { self.offs.get(idx + 1).map_or(self.data.len(), |&o| o as usize) - start } else { 0 };
        let mut entry = Vec::new();
        if keep {
            put_varint(&mut entry, key.len() as u64);
            entry.extend_from_slice(key);
            put_varint(&mut entry, le.len() as u64);
            entry.extend_from_slice(&le);
        }
        let new_len = self.data.len() - old_len + entry.len();
        if new_len > MAX_PACKED_BYTES {
            return Err(too_large(new_len).into());
        }
        if !present && !keep {
            return Ok(Staged::Unchanged);
        }
        Ok(Staged::Splice { idx, present, keep, start, old_len, entry })
    }

    /// Applies a wide message to every entry it covers: a broadcast
    /// update to all, a range message (a range delete, or a transaction's
    /// clean-up of one) to those in its range (the entries
    /// outside are copied as they are, and a basement it misses is left
    /// alone).
    pub(crate) fn apply_wide<V: AsRef<[u8]>>(
        &mut self,
        body: &MsgBody<V>,
        cmp: Comparator,
        fns: &UpdateFns,
        horizon: u64,
    ) -> Result<(), ApplyError> {
        debug_assert!(body.is_wide());
        let (start, end) = if body.kind != MsgKind::Broadcast {
            let (lo, hi) = body.range_bounds();
            let at = |k: &[u8]| match self.search(k, cmp) {
                Ok(x) | Err(x) => x,
            };
            let (start, end) = (at(lo), at(hi));
            if start >= end {
                return Ok(());
            }
            (start, end)
        } else {
            (0, self.len())
        };
        let mut out = Basement { data: Vec::with_capacity(self.data.len()), offs: Vec::new() };
        let mut le = Vec::new();
        for i in 0..self.len() {
            let (k, old) = self.entry(i);
            if !(start..end).contains(&i) {
                out.push_raw(k, old)?;
                continue;
            }
            le.clear();
            if merge_key(k, Some(old), std::iter::once(body), fns, horizon, &mut le)? {
                out.push_raw(k, &le)?;
            }
        }
        *self = out;
        Ok(())
    }

    /// The packed form with the versions below `horizon` collected, if any
    /// entry has versions to look at (`None`: `packed()` as it is). Leaf
    /// writes use it, so versions no snapshot needs do not reach the disk
    /// even on keys no message touches again.
    pub(crate) fn collected(&self, horizon: u64) -> Result<Option<Vec<u8>>, String> {
        if !(0..self.len()).any(|i| self.leafentry(i).first() == Some(&leafentry::LE_MVCC)) {
            return Ok(None);
        }
        let mut out = Basement { data: Vec::with_capacity(self.data.len()), offs: Vec::new() };
        let mut le = Vec::new();
        for i in 0..self.len() {
            let (k, old) = self.entry(i);
            if old.first() != Some(&leafentry::LE_MVCC) {
                out.push_raw(k, old)?;
                continue;
            }
            let mut e = Entry::decode(old)?;
            e.gc(horizon);
            if !e.is_empty() {
                le.clear();
                e.encode(&mut le);
                out.push_raw(k, &le)?;
            }
        }
        Ok(Some(out.data))
    }

    /// Moves entries `at..` into a new basement.
    pub(crate) fn split_off(&mut self, at: usize) -> Basement {
        if at >= self.len() {
            return Basement::new();
        }
        let cut = self.offs[at];
        let data = self.data.split_off(cut as usize);
        let offs = self.offs.split_off(at).into_iter().map(|o| o - cut).collect();
        Basement { data, offs }
    }

    /// Appends `other`, whose keys all sort after this basement's. Only
    /// small basements are joined (`flush.rs`, `rebalance_basements`: the
    /// two together at most half a basement size, itself at most
    /// `MAX_NODE_BYTES`), so the result is far below `MAX_PACKED_BYTES`.
    pub(crate) fn append(&mut self, other: Basement) {
        assert!(
            self.data.len() + other.data.len() <= MAX_PACKED_BYTES,
            "joined basements past 4 GiB: only small ones are joined"
        );
        let base = self.data.len() as u32;
        self.data.extend_from_slice(&other.data);
        self.offs.extend(other.offs.into_iter().map(|o| o + base));
    }

    /// Index at which the packed bytes before it first reach `bytes`.
    pub(crate) fn index_at_bytes(&self, bytes: usize) -> usize {
        self.offs.partition_point(|&o| (o as usize) < bytes)
    }
}

/// Applies `msgs` (one key's, in MSN order) to its stored leafentry `old`
/// and appends the result to `out`; false if the key ends up absent.
pub(crate) fn merge_key<'m, V: AsRef<[u8]> + 'm>(
    key: &[u8],
    old: Option<&[u8]>,
    msgs: impl Iterator<Item = &'m MsgBody<V>> + Clone,
    fns: &UpdateFns,
    horizon: u64,
    out: &mut Vec<u8>,
) -> Result<bool, ApplyError> {
    // The common case, without building an `Entry`: a single visible value
    // and committed writes every snapshot sees (a provisional write with its
    // commit folded in is one: there is no provisional version it could
    // stack on, as the stored entry is a single value).
    let simple = |b: &MsgBody<V>| {
        (!b.provisional || b.commits)
            && b.txid < horizon
            && matches!(b.kind, MsgKind::Insert | MsgKind::Delete | MsgKind::Update | MsgKind::RangeDelete)
    };
    if old.is_none_or(|le| le.first() == Some(&leafentry::LE_VALUE)) && msgs.clone().all(simple) {
        // A newest message that is an insert or a delete sets the value
        // whatever came before: no copies (the usual flush of a load).
        if let Some(last) = msgs.clone().last().filter(|b| b.kind != MsgKind::Update) {
            if last.kind == MsgKind::Insert {
                encode_value(out, last.val.as_ref());
            }
            return Ok(last.kind == MsgKind::Insert);
        }
        let mut value = old.map(|le| le[1..].to_vec());
        for b in msgs {
            value = apply_to_value(key, value.as_deref(), b, fns)?;
        }
        if let Some(v) = &value {
            encode_value(out, v);
        }
        return Ok(value.is_some());
    }
    let mut e = match old {
        Some(le) => Entry::decode(le)?,
        None => Entry::default(),
    };
    for b in msgs {
        e.apply(key, b, fns)?;
    }
    e.gc(horizon);
    if e.is_empty() {
        return Ok(false);
    }
    e.encode(out);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn ins(v: &[u8]) -> MsgBody {
        MsgBody::plain(MsgKind::Insert, 0, v)
    }

    fn del() -> MsgBody {
        MsgBody::plain(MsgKind::Delete, 0, b"")
    }

    fn contents(b: &Basement) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..b.len())
            .map(|i| (b.key(i).to_vec(), leafentry::committed_value(b.leafentry(i)).unwrap().unwrap()))
            .collect()
    }

    /// A basement never passes 4 GiB, where its u32 offsets would wrap: the
    /// entry that would take it there is refused, and the basement is left
    /// as it was. (The huge leafentry is a zeroed allocation the OS maps
    /// lazily: the check comes before any copy, so it costs no memory.)
    #[test]
    fn an_entry_past_4_gib_is_refused_not_wrapped() {
        let mut b = Basement::new();
        b.push_raw(b"a", &[1, 2]).unwrap();
        let before = b.packed().to_vec();
        let huge = vec![0u8; MAX_PACKED_BYTES - 10];
        assert!(b.push_raw(b"b", &huge).is_err());
        assert_eq!((b.packed(), b.len()), (&before[..], 1));
    }

    /// The unchecked accessors read what the checked reader reads, for
    /// lengths of one, two and three varint bytes.
    #[test]
    fn unchecked_entries_match_the_checked_reader() {
        let mut b = Basement::new();
        for (i, len) in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000].into_iter().enumerate() {
            let key = vec![b'a' + i as u8; len.min(200) + 1];
            b.push_raw(&key, &vec![7u8; len + 1]).unwrap();
        }
        let rebuilt = Basement::from_packed(b.packed().to_vec(), bytewise).unwrap();
        let mut r = Reader::new(rebuilt.packed());
        for i in 0..rebuilt.len() {
            let (key, le) = (r.bytes().unwrap(), r.bytes().unwrap());
            assert_eq!((rebuilt.key(i), rebuilt.leafentry(i)), (key, le), "entry {i}");
        }
        assert!(r.is_empty());
    }

    #[test]
    fn batches_and_single_messages_agree_with_a_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let fns = UpdateFns::new();
        let (mut batched, mut single) = (Basement::new(), Basement::new());
        let mut model = BTreeMap::new();
        for _round in 0..50 {
            let mut msgs: Vec<(Vec<u8>, MsgBody)> = Vec::new();
            for _ in 0..rng.gen_range(1..200) {
                let k = format!("{:04}", rng.gen_range(0..500)).into_bytes();
                if rng.gen_bool(0.3) {
                    model.remove(&k);
                    msgs.push((k, del()));
                } else {
                    let v = vec![rng.gen::<u8>(); rng.gen_range(0..300)];
                    model.insert(k.clone(), v.clone());
                    msgs.push((k, ins(&v)));
                }
            }
            for (k, m) in &msgs {
                single.apply_one(k, m, bytewise, &fns, 1).unwrap();
            }
            // A stable sort keeps MSN order within a key.
            msgs.sort_by(|a, b| a.0.cmp(&b.0));
            let refs: Vec<(&[u8], &MsgBody)> = msgs.iter().map(|(k, m)| (&k[..], m)).collect();
            batched.apply_sorted(&refs, bytewise, &fns, 1).unwrap();
            let expect: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(contents(&batched), expect);
            assert_eq!(contents(&single), expect);
            let rebuilt = Basement::from_packed(batched.packed().to_vec(), bytewise).unwrap();
            assert_eq!(contents(&rebuilt), expect);
        }
    }

    #[test]
    fn leaf_writes_collect_versions_no_snapshot_needs() {
        let fns = UpdateFns::new();
        let mut b = Basement::new();
        let committed = |txid, kind, v: &[u8]| MsgBody::plain_txn(kind, txid, v.into());
        let msgs = [
            (&b"a"[..], committed(5, MsgKind::Insert, b"old")),
            (&b"a"[..], committed(9, MsgKind::Insert, b"new")),
            (&b"b"[..], committed(6, MsgKind::Insert, b"x")),
            (&b"b"[..], committed(8, MsgKind::Delete, b"")),
            (&b"c"[..], ins(b"plain")),
        ];
        let refs: Vec<(&[u8], &MsgBody)> = msgs.iter().map(|(k, m)| (*k, m)).collect();
        // Horizon 1: every version is kept.
        b.apply_sorted(&refs, bytewise, &fns, 1).unwrap();
        assert_eq!(b.len(), 3);
        assert!(b.collected(5).unwrap().is_some(), "entries with versions are looked at");
        let gc = Basement::from_packed(b.collected(10).unwrap().unwrap(), bytewise).unwrap();
        // "a" is one value again; "b"'s delete is visible to all: gone.
        assert_eq!(contents(&gc), vec![(b"a".to_vec(), b"new".to_vec()), (b"c".to_vec(), b"plain".to_vec())]);
        assert_eq!(gc.leafentry(0), b"\x01new");
        assert!(gc.collected(10).unwrap().is_none(), "nothing left to collect");
    }

    #[test]
    fn split_and_append_are_inverse() {
        let fns = UpdateFns::new();
        let mut b = Basement::new();
        let msgs: Vec<(Vec<u8>, MsgBody)> =
            (0..100u32).map(|i| (i.to_be_bytes().to_vec(), ins(b"v"))).collect();
        let refs: Vec<(&[u8], &MsgBody)> = msgs.iter().map(|(k, m)| (&k[..], m)).collect();
        b.apply_sorted(&refs, bytewise, &fns, 1).unwrap();
        let before = contents(&b);
        let right = b.split_off(37);
        assert_eq!(b.len(), 37);
        assert_eq!(right.key(0), 37u32.to_be_bytes());
        b.append(right);
        assert_eq!(contents(&b), before);
    }

    #[test]
    fn corrupt_packed_bytes_are_rejected() {
        assert!(Basement::from_packed(vec![5, b'a'], bytewise).is_err());
        // Keys out of order.
        let mut b = Basement::new();
        b.push_value(b"b", b"1");
        b.push_value(b"a", b"2");
        assert!(Basement::from_packed(b.packed().to_vec(), bytewise).is_err());
    }
}
