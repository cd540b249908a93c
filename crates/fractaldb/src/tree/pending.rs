//! Spills whose blocks are not written yet.
//!
//! A flush into a child that is not in memory writes the buffer as a spill
//! (`flush.rs`). Compressing and writing it on the cleaner thread, under
//! the parent's write lock, takes a large share of the cleaner's time when
//! the data is many times the cache (docs/benchmarks.md, "Engine
//! constants"), and the cleaner is what bounds a load there. So the cleaner
//! only takes a block number for the spill, records it in the parent, and
//! leaves the buffer here; the spill writer thread (`fractaldb-spill`)
//! compresses and writes it. Until then readers, merges and `check` use
//! the buffer in memory (`Tree::read_spill`), and a merge that takes a
//! spill before it is written saves the write.
//!
//! Invariants:
//! - A block number here is allocated in the block file and has no block
//!   of its own yet. The entry owns the number: `free_blocknum` is called
//!   for it exactly once, by whoever removes the entry after it was
//!   cancelled (a merge took the spill), or by the merge once the entry has
//!   left written.
//! - An entry marked `ckpt` was here when the checkpoint in progress
//!   began, so that checkpoint's nodes may name it: the checkpoint writes no
//!   table until every such entry is written and joined to it
//!   (`BlockFile::add_to_checkpoint`). Spills made after the begin are in
//!   nodes changed after it, which the checkpoint does not hold.
//! - Each buffer is charged to the cache while it is here; the cleaner
//!   writes spills itself while more than `cap` bytes wait, so the writer
//!   falling behind slows the cleaner instead of filling the cache.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::buffer::MsgBuffer;
use crate::cache::Cache;
use crate::file::BlockNum;

struct Waiting {
    buf: Arc<MsgBuffer>,
    /// Claimed by a thread that is compressing and writing it.
    writing: bool,
    /// A merge took the spill: once no one is writing it and no checkpoint
    /// needs it, the entry goes and its block number is freed.
    cancelled: bool,
    /// Named by the checkpoint in progress (see the module's invariants).
    ckpt: bool,
    charged: usize,
}

#[derive(Default)]
struct Map {
    entries: HashMap<BlockNum, Waiting>,
    /// Block numbers in the order their spills were made (may hold numbers
    /// that have left `entries`; they are skipped).
    order: VecDeque<BlockNum>,
    bytes: usize,
}

/// The spills of one tree that wait for their blocks to be written.
pub(crate) struct Pending {
    map: Mutex<Map>,
    /// Signalled whenever an entry stops being written.
    done: Condvar,
    cache: Arc<Cache>,
}

/// What a thread that claimed an entry must write.
pub(crate) struct Claim {
    pub bn: BlockNum,
    pub buf: Arc<MsgBuffer>,
}

impl Pending {
    pub(crate) fn new(cache: Arc<Cache>) -> Pending {
        Pending { map: Mutex::new(Map::default()), done: Condvar::new(), cache }
    }

    /// Leaves `buf` to be written as spill block `bn`.
    pub(crate) fn add(&self, bn: BlockNum, buf: MsgBuffer) {
        let charged = buf.mem_bytes();
        self.cache.hold_extra(charged);
        let mut m = self.map.lock();
        let w = Waiting { buf: Arc::new(buf), writing: false, cancelled: false, ckpt: false, charged };
        let was = m.entries.insert(bn, w);
        debug_assert!(was.is_none(), "spill block {bn} left to write twice");
        m.order.push_back(bn);
        m.bytes += charged;
    }

    /// Bytes of buffers waiting.
    pub(crate) fn bytes(&self) -> usize {
        self.map.lock().bytes
    }

    /// The buffer of spill `bn` if its block is not written yet.
    pub(crate) fn get(&self, bn: BlockNum) -> Option<Arc<MsgBuffer>> {
        self.map.lock().entries.get(&bn).filter(|w| !w.cancelled).map(|w| w.buf.clone())
    }

    /// Every block number waiting that a merge has not taken.
    pub(crate) fn live(&self) -> Vec<BlockNum> {
        self.map.lock().entries.iter().filter(|(_, w)| !w.cancelled).map(|(&bn, _)| bn).collect()
    }

    /// Claims the oldest entry nobody is writing, for the caller to write.
    /// Entries a merge took are left alone: nobody needs them written
    /// unless the checkpoint does, and then the checkpoint writes them.
    pub(crate) fn claim_oldest(&self) -> Option<Claim> {
        let mut m = self.map.lock();
        while let Some(bn) = m.order.pop_front() {
            if let Some(w) = m.entries.get_mut(&bn).filter(|w| !w.writing && !w.cancelled) {
                w.writing = true;
                return Some(Claim { bn, buf: w.buf.clone() });
            }
        }
        None
    }

    /// Claims an entry the checkpoint in progress names, or waits while
    /// all that are left are being written by another thread; `None` once
    /// none is left.
    pub(crate) fn claim_for_checkpoint(&self) -> Option<Claim> {
        let mut m = self.map.lock();
        loop {
            let mut busy = false;
            let mut found = None;
            for (&bn, w) in m.entries.iter_mut() {
                if !w.ckpt {
                    continue;
                }
                if w.writing {
                    busy = true;
                } else {
                    w.writing = true;
                    found = Some(Claim { bn, buf: w.buf.clone() });
                    break;
                }
            }
            if found.is_some() || !busy {
                return found;
            }
            self.done.wait(&mut m);
        }
    }

    /// The write of a claimed entry succeeded: the entry leaves. The caller
    /// then joins the block to the checkpoint and frees its number as the
    /// answer says, in that order, before anything else can free or reuse
    /// the number. `join` runs under this map's lock, so no checkpoint can
    /// begin or be abandoned in between.
    pub(crate) fn written(&self, bn: BlockNum, join: impl FnOnce(bool)) -> bool {
        let mut m = self.map.lock();
        let w = m.entries.remove(&bn).expect("a claimed entry stays until written");
        debug_assert!(w.writing);
        m.bytes -= w.charged;
        join(w.ckpt);
        drop(m);
        self.cache.release_extra(w.charged);
        self.done.notify_all();
        w.cancelled
    }

    /// The write of a claimed entry failed: it waits again.
    pub(crate) fn unclaim(&self, bn: BlockNum) {
        let mut m = self.map.lock();
        if let Some(w) = m.entries.get_mut(&bn) {
            w.writing = false;
            m.order.push_front(bn);
        }
        drop(m);
        self.done.notify_all();
    }

    /// A merge took spill `bn` (its messages are in the child now). Returns
    /// true if the caller must free the block number at once (the spill is
    /// on disk, or was waiting and nobody needs it any more); false if the
    /// entry stays until its writer or the checkpoint is done with it.
    pub(crate) fn cancel(&self, bn: BlockNum) -> bool {
        let mut m = self.map.lock();
        let Some(w) = m.entries.get_mut(&bn) else { return true };
        debug_assert!(!w.cancelled, "spill {bn} merged twice");
        if w.writing || w.ckpt {
            w.cancelled = true;
            return false;
        }
        let w = m.entries.remove(&bn).expect("just seen");
        m.bytes -= w.charged;
        drop(m);
        self.cache.release_extra(w.charged);
        true
    }

    /// Marks every entry still in the tree as named by the checkpoint that
    /// begins now, and
    /// runs `begin` (the block file's begin) under the same lock: a write
    /// ending in between would otherwise be neither in the checkpoint's
    /// table nor joined to it.
    pub(crate) fn begin_checkpoint(&self, begin: impl FnOnce()) {
        let mut m = self.map.lock();
        // Not one a merge took already (kept only while its writer is busy):
        // no node names it, and joined to the checkpoint it would leak there.
        for w in m.entries.values_mut().filter(|w| !w.cancelled) {
            w.ckpt = true;
        }
        begin();
    }

    /// The checkpoint ends (written, or abandoned while some entries it
    /// named may still be written by the spill writer): runs `end` (the
    /// block file's finish or abandon) and unmarks every entry under the
    /// same lock, so no write joins a checkpoint that is gone. Returns the
    /// block numbers of entries a merge took meanwhile that nobody writes
    /// now; the caller frees them.
    pub(crate) fn end_checkpoint<T>(&self, end: impl FnOnce() -> T) -> (T, Vec<BlockNum>) {
        let mut m = self.map.lock();
        let t = end();
        let mut gone = Vec::new();
        m.entries.retain(|&bn, w| {
            w.ckpt = false;
            let keep = !w.cancelled || w.writing;
            if !keep {
                gone.push((bn, w.charged));
            }
            keep
        });
        let freed: usize = gone.iter().map(|g| g.1).sum();
        m.bytes -= freed;
        drop(m);
        self.cache.release_extra(freed);
        (t, gone.into_iter().map(|g| g.0).collect())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.cache.release_extra(self.map.get_mut().bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::message::{Msg, MsgBody, MsgKind};
    use crate::tree::KeyOrder;

    fn bytewise_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }

    fn buf(keys: &[&[u8]]) -> MsgBuffer {
        let order = KeyOrder { cmp: bytewise_cmp, bytewise: true };
        let mut b = MsgBuffer::default();
        for (i, k) in keys.iter().enumerate() {
            let body = MsgBody {
                kind: MsgKind::Insert,
                fn_id: 0,
                txid: 0,
                provisional: false,
                commits: false,
                sp: 0,
                val: b"value".to_vec().into(),
            };
            b.insert(Msg { msn: i as u64 + 1, key: (*k).into(), body }, order);
        }
        b
    }

    #[test]
    fn a_spill_taken_while_written_is_freed_by_its_writer_and_charges_return() {
        let cache = Cache::new(1 << 20, true);
        let p = Pending::new(cache.clone());
        p.add(7, buf(&[b"a", b"b"]));
        assert!(cache.used_bytes() > 0 && p.bytes() == cache.used_bytes());
        assert_eq!(p.get(7).map(|b| b.len()), Some(2));
        let claim = p.claim_oldest().expect("waiting");
        assert!(p.claim_oldest().is_none(), "claimed once");
        // Taken by a merge while written: the writer frees the number.
        assert!(!p.cancel(7));
        assert!(p.get(7).is_none(), "readers no longer see a taken spill");
        assert!(p.live().is_empty());
        let free = p.written(claim.bn, |ckpt| assert!(!ckpt));
        assert!(free);
        assert_eq!((p.bytes(), cache.used_bytes()), (0, 0));
        // Taken before anyone claimed it: freed by the merge at once.
        p.add(8, buf(&[b"c"]));
        assert!(p.cancel(8));
        assert!(p.claim_oldest().is_none());
        assert_eq!(cache.used_bytes(), 0);
    }

    #[test]
    fn a_checkpoint_waits_for_the_spills_it_names_and_only_those() {
        let cache = Cache::new(1 << 20, true);
        let p = Pending::new(cache.clone());
        p.add(1, buf(&[b"a"]));
        p.add(2, buf(&[b"b"]));
        p.add(3, buf(&[b"c"]));
        // 3 is being written and was taken before the checkpoint began: no
        // node of the checkpoint names it, so it must not join it.
        let c3 = p.claim_oldest().expect("1");
        assert_eq!(c3.bn, 1);
        assert!(!p.cancel(1));
        let mut began = false;
        p.begin_checkpoint(|| began = true);
        assert!(began);
        // Made after the begin: not the checkpoint's.
        p.add(4, buf(&[b"d"]));
        // 2 is taken by a merge after the begin: the checkpoint still
        // names it, so it stays until the checkpoint wrote it.
        assert!(!p.cancel(2));
        let mut claimed = Vec::new();
        while let Some(c) = p.claim_for_checkpoint() {
            claimed.push(c.bn);
            let free = p.written(c.bn, |ckpt| assert!(ckpt, "spill {} joins the checkpoint", c.bn));
            assert_eq!(free, c.bn == 2);
        }
        claimed.sort_unstable();
        assert_eq!(claimed, vec![2, 3]);
        assert!(p.written(1, |ckpt| assert!(!ckpt)), "1 was taken: its writer frees it");
        let ((), gone) = p.end_checkpoint(|| ());
        assert!(gone.is_empty());
        assert_eq!(p.live(), vec![4]);
    }

    #[test]
    fn an_abandoned_checkpoint_hands_back_the_spills_only_it_kept() {
        let cache = Cache::new(1 << 20, true);
        let p = Pending::new(cache.clone());
        p.add(5, buf(&[b"a"]));
        p.add(6, buf(&[b"b"]));
        p.begin_checkpoint(|| ());
        assert!(!p.cancel(5), "named by the checkpoint");
        let ((), gone) = p.end_checkpoint(|| ());
        assert_eq!(gone, vec![5]);
        assert_eq!(p.live(), vec![6]);
        // The spill writer takes what is left; nothing joins a checkpoint.
        let c = p.claim_oldest().expect("6 waits");
        assert_eq!(c.bn, 6);
        assert!(!p.written(6, |ckpt| assert!(!ckpt)));
        drop(p);
        assert_eq!(cache.used_bytes(), 0);
    }
}
