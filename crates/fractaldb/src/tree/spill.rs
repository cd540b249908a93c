//! Spills of one tree: reading them, handing new ones to the spill
//! writer, writing and freeing their blocks; and the environment's memo of
//! spills readers decoded lately (`SpillMemo`).

use std::collections::VecDeque;

use super::*;

/// Spills readers read from disk lately, decoded, by dictionary and block
/// number. Spills are immutable, and a spill's block number is freed (and
/// may be reused) only by `Tree::free_spill` under its parent's write lock,
/// which forgets it here first, while readers keep one only under the
/// parent's read lock: so a kept spill is what a read of its block would
/// give. (The entry ids a cursor keys its own cache by, `node::Spill::id`,
/// are new each time a parent is read back from disk; a memo keyed by them
/// would keep spills no entry names any more.) Without it, every
/// point read whose key a spill's filter admits, and every new cursor whose
/// path crosses a spill, reads and decodes the whole block again: a
/// DELETE of a thousand IN-list values over an index full of a bulk
/// insert's spills read the same blocks hundreds of times.
///
/// Bounded: at most `limit` bytes of decoded messages (a sixteenth of the
/// cache's budget), least recently used first out, each charged to the
/// cache while kept (`Cache::hold_extra`) so the evictor makes room for
/// them as for nodes. A spill larger than the limit is not kept. A merge
/// that takes a spill forgets it (`Tree::free_spill`).
pub(crate) struct SpillMemo {
    limit: usize,
    kept: Mutex<Memo>,
}

#[derive(Default)]
struct Memo {
    /// Oldest use first.
    spills: VecDeque<Kept>,
    bytes: usize,
}

struct Kept {
    dict: DictId,
    bn: BlockNum,
    buf: Arc<buffer::MsgBuffer>,
    /// Charged to the cache.
    bytes: usize,
}

impl SpillMemo {
    pub(crate) fn new(cache_budget_bytes: usize) -> SpillMemo {
        SpillMemo { limit: cache_budget_bytes / 16, kept: Mutex::new(Memo::default()) }
    }

    fn get(&self, dict: DictId, bn: BlockNum) -> Option<Arc<buffer::MsgBuffer>> {
        let mut m = self.kept.lock();
        let i = m.spills.iter().position(|s| (s.dict, s.bn) == (dict, bn))?;
        let s = m.spills.remove(i).expect("found");
        let buf = Arc::clone(&s.buf);
        m.spills.push_back(s);
        Some(buf)
    }

    fn put(&self, dict: DictId, bn: BlockNum, buf: &Arc<buffer::MsgBuffer>, cache: &Cache) {
        let bytes = buf.mem_bytes();
        if bytes > self.limit {
            return;
        }
        let mut m = self.kept.lock();
        if m.spills.iter().any(|s| (s.dict, s.bn) == (dict, bn)) {
            return; // another reader kept it meanwhile
        }
        cache.hold_extra(bytes);
        m.spills.push_back(Kept { dict, bn, buf: Arc::clone(buf), bytes });
        m.bytes += bytes;
        while m.bytes > self.limit {
            let old = m.spills.pop_front().expect("bytes kept");
            m.bytes -= old.bytes;
            cache.release_extra(old.bytes);
        }
        debug_assert_eq!(m.bytes, m.spills.iter().map(|s| s.bytes).sum::<usize>());
    }

    /// Drops the kept spills that `keep` refuses, giving their charges back.
    fn retain(&self, cache: &Cache, keep: impl Fn(&Kept) -> bool) {
        let mut m = self.kept.lock();
        let before = m.bytes;
        m.spills.retain(|s| keep(s));
        m.bytes = m.spills.iter().map(|s| s.bytes).sum();
        cache.release_extra(before - m.bytes);
    }

    fn forget(&self, dict: DictId, bn: BlockNum, cache: &Cache) {
        self.retain(cache, |s| (s.dict, s.bn) != (dict, bn));
    }

    /// Forgets the spills of a dictionary that was dropped.
    pub(crate) fn forget_dict(&self, dict: DictId, cache: &Cache) {
        self.retain(cache, |s| s.dict != dict);
    }

    /// Forgets every spill (the environment closes).
    pub(crate) fn clear(&self, cache: &Cache) {
        self.retain(cache, |_| false);
    }

    #[cfg(test)]
    pub(crate) fn kept(&self) -> (usize, usize) {
        let m = self.kept.lock();
        (m.spills.len(), m.bytes)
    }
}

impl Tree {
    /// A spill's messages (for one child, that a flush wrote out instead
    /// of into the child; see `flush.rs`): from memory while its block is
    /// not written yet (`pending.rs`), else read from its block. The caller
    /// holds the parent's lock, so the spill cannot be freed meanwhile.
    pub(crate) fn read_spill(&self, bn: BlockNum) -> Result<Arc<buffer::MsgBuffer>> {
        // The writer sets the block before the entry leaves: a miss here
        // finds the block.
        if let Some(buf) = self.pending.get(bn) {
            return Ok(buf);
        }
        let ext =
            self.file.extent(bn).ok_or_else(|| self.corrupt(bn, "spill block is not in the block table"))?;
        let bytes = self.file.read_range(bn, ext, 0, ext.len)?;
        self.ctx.spill_reads.fetch_add(1, AtomicOrdering::Relaxed);
        self.ctx.spill_read_bytes.fetch_add(bytes.len() as u64, AtomicOrdering::Relaxed);
        serialize::decode_spill(&bytes, self.order).map(Arc::new).map_err(|r| self.corrupt(bn, r))
    }

    /// `read_spill` for a reader that leaves the spill where it is (point
    /// reads, cursors): through the environment's memo, so a spill read
    /// from disk is read once while it stays in use.
    pub(crate) fn read_spill_kept(&self, sp: &node::Spill) -> Result<Arc<buffer::MsgBuffer>> {
        if let Some(buf) = self.pending.get(sp.bn) {
            return Ok(buf);
        }
        if let Some(buf) = self.ctx.spill_memo.get(self.dict, sp.bn) {
            return Ok(buf);
        }
        let buf = self.read_spill(sp.bn)?;
        self.ctx.spill_memo.put(self.dict, sp.bn, &buf, &self.ctx.cache);
        Ok(buf)
    }

    /// `read_spill` for a merge, which takes the spill (and frees it):
    /// what the memo kept of it if anything, else its block, not kept.
    pub(crate) fn read_spill_taken(&self, sp: &node::Spill) -> Result<Arc<buffer::MsgBuffer>> {
        match self.ctx.spill_memo.get(self.dict, sp.bn) {
            Some(buf) => Ok(buf),
            None => self.read_spill(sp.bn),
        }
    }

    /// Asks the cleaner to flush child `child` of `parent` down with its
    /// spills: a read had to read them. At most `MERGE_QUEUE_MAX` wait; more
    /// are dropped (a later read asks again).
    pub(crate) fn queue_merge(&self, parent: BlockNum, child: BlockNum) {
        const MERGE_QUEUE_MAX: usize = 4096;
        let mut q = self.merge_queue.lock();
        if q.len() < MERGE_QUEUE_MAX && !q.contains(&(parent, child)) {
            q.push((parent, child));
            drop(q);
            self.ctx.wake_cleaner();
        }
    }

    /// Makes `buf` a spill and returns its entry for the parent. Its block
    /// is written later, by the spill writer (`pending.rs`); meanwhile
    /// readers find it in memory. The Bloom filter is built here, because
    /// the parent's entry carries it.
    pub(crate) fn new_spill(&self, buf: buffer::MsgBuffer) -> node::Spill {
        debug_assert!(self.check_lock.is_locked(), "a spill made outside the check lock (check.rs)");
        // A filter only where keys compare as bytes, and none over
        // broadcasts (they apply to every key): see `bloom.rs`.
        let bloom = if self.order.bytewise && buf.broadcasts().is_empty() {
            bloom::build(buf.keys().map(|(k, _)| k), buf.len())
        } else {
            Box::new([])
        };
        // A buffer is spilled only while its child's spills stay within
        // `SPILL_NODES` node sizes (`spill_room`), at most 4 x
        // `MAX_NODE_BYTES` = 512 MiB (its encoded form is at most its
        // charge and a count): its length, and its message count, fit a u32.
        let raw_len = u32::try_from(buf.encoded_len()).expect("a spill is far below 4 GiB");
        let count = u32::try_from(buf.len()).expect("a spill holds fewer messages than bytes");
        let bn = self.file.allocate_blocknum();
        self.pending.add(bn, buf);
        if self.ctx.spill_writer {
            self.ctx.wake_spill_writer();
        }
        node::Spill::new(bn, raw_len, count, bloom)
    }

    /// Writes up to `max` waiting spills, oldest first; returns how many.
    pub(crate) fn write_spills(&self, max: usize) -> Result<usize> {
        if self.dropped.load(AtomicOrdering::Relaxed) || self.is_failed() {
            return Ok(0);
        }
        for n in 0..max {
            let Some(claim) = self.pending.claim_oldest() else { return Ok(n) };
            self.write_claimed(claim)?;
        }
        Ok(max)
    }

    /// Compresses and writes a spill this thread claimed (`pending.rs`).
    ///
    /// A panic gives the claim back before it goes on unwinding: a claimed
    /// entry left behind would make every later checkpoint wait for it.
    pub(super) fn write_claimed(&self, claim: pending::Claim) -> Result<()> {
        let bn = claim.bn;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.write_claimed_unguarded(claim)))
            .unwrap_or_else(|p| {
                self.pending.unclaim(bn);
                std::panic::resume_unwind(p)
            })
    }

    fn write_claimed_unguarded(&self, claim: pending::Claim) -> Result<()> {
        // Spills take the leaves' codec, not the buffers' faster one: they
        // hold up to `SPILL_NODES` node sizes per child for a long while, so
        // they are a large part of the file (docs/benchmarks.md, "Engine
        // constants").
        let (bytes, raw_len) = match serialize::encode_spill(&claim.buf, self.settings.codec) {
            Ok(spill) => spill,
            Err(e) => {
                self.pending.unclaim(claim.bn);
                return Err(e);
            }
        };
        debug_assert_eq!(raw_len as usize, claim.buf.encoded_len());
        match self.file.write_block(claim.bn, &bytes, serialize::SPILL_HEADER_BYTES as u32) {
            Ok(ext) => {
                let file = &self.file;
                let free = self.pending.written(claim.bn, |ckpt| {
                    if ckpt {
                        file.add_to_checkpoint(claim.bn, ext);
                    }
                });
                if free {
                    self.file.free_blocknum(claim.bn);
                }
                Ok(())
            }
            Err(e) => {
                self.pending.unclaim(claim.bn);
                Err(e)
            }
        }
    }

    /// A merge took spill `sp`: frees its block number, now or once the
    /// thread writing it (or the checkpoint that needs it) is done, and
    /// drops its decoded messages from the memo.
    pub(crate) fn free_spill(&self, sp: &node::Spill) {
        debug_assert!(self.check_lock.is_locked(), "a spill freed outside the check lock (check.rs)");
        self.ctx.spill_memo.forget(self.dict, sp.bn, &self.ctx.cache);
        if self.pending.cancel(sp.bn) {
            self.file.free_blocknum(sp.bn);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::{Rng, SeedableRng};

    use crate::{DictOptions, Dictionary, Env, EnvOptions, SimVfs};

    /// A dictionary of small nodes in a 512 KiB cache, without background
    /// threads: a few tens of thousands of puts leave spills on disk.
    fn small_tree(sim: &SimVfs) -> (Env, Dictionary) {
        let opts = EnvOptions {
            vfs: sim.boot(),
            direct_io: false,
            background_threads: false,
            cache_size_bytes: 512 << 10,
            ..Default::default()
        };
        let env = Env::open("/memo", opts).unwrap();
        let dopts =
            DictOptions { node_size_bytes: 4096, basement_size_bytes: 1024, fanout: 4, ..Default::default() };
        let d = env.create_dictionary("d", dopts).unwrap();
        (env, d)
    }

    /// A point read whose key a spill holds reads the spill's block once:
    /// the next read of it comes from the memo, which charges the cache
    /// for it; merges that take every spill forget them all, and every
    /// read matches a model.
    #[test]
    fn a_spill_read_from_disk_is_kept_until_merged() {
        let sim = SimVfs::new(3);
        let (env, d) = small_tree(&sim);
        let mut model = BTreeMap::new();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for i in 0..40_000u32 {
            let k = rng.gen::<u32>().to_be_bytes();
            let v = format!("value {i}").into_bytes();
            d.put(&k, &v).unwrap();
            model.insert(k.to_vec(), v);
        }
        // Spills written to disk, not only waiting in memory.
        env.run_cleaner(0).unwrap();
        let before = d.check().unwrap();
        assert!(before.spills > 0, "the test needs spills: {before:?}");
        let memo = &d.tree.ctx.spill_memo;
        let reads = || env.stats().spill_reads;
        // A key whose read reads a spill from disk.
        let mut found = None;
        for (k, v) in model.iter().rev() {
            let n = reads();
            assert_eq!(d.get(k).unwrap().as_ref(), Some(v));
            if reads() > n {
                found = Some(k.clone());
                break;
            }
        }
        let k = found.expect("no read read a spill");
        let (kept, bytes) = memo.kept();
        assert!(kept >= 1 && bytes > 0 && bytes <= (512 << 10) / 16, "{kept} spills, {bytes} bytes");
        assert!(env.stats().cache.used_bytes >= bytes, "kept spills are charged to the cache");
        // Again: no block read.
        let n = reads();
        assert_eq!(d.get(&k).unwrap(), model.get(&k).cloned());
        assert_eq!(reads(), n, "the kept spill was read again");
        // Every key still reads right through the memo.
        for (k, v) in &model {
            assert_eq!(d.get(k).unwrap().as_ref(), Some(v));
        }
        // Pushing every message down merges every spill: none is kept.
        assert!(env.optimize(&d, &mut |_| true).unwrap());
        assert_eq!(d.check().unwrap().spills, 0);
        assert_eq!(memo.kept(), (0, 0), "a merged spill is still kept");
        for (k, v) in &model {
            assert_eq!(d.get(k).unwrap().as_ref(), Some(v));
        }
        drop(d);
        env.close().unwrap();
    }

    /// Dropping a dictionary forgets the spills kept for it.
    #[test]
    fn a_dropped_dictionarys_spills_are_forgotten() {
        let sim = SimVfs::new(4);
        let (env, d) = small_tree(&sim);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(10);
        let keys: Vec<[u8; 4]> = (0..40_000).map(|_| rng.gen::<u32>().to_be_bytes()).collect();
        for k in &keys {
            d.put(k, b"v").unwrap();
        }
        env.run_cleaner(0).unwrap();
        for k in keys.iter().rev().take(2000) {
            assert_eq!(d.get(k).unwrap().as_deref(), Some(&b"v"[..]));
        }
        let memo = &d.tree.ctx.spill_memo;
        assert!(memo.kept().0 > 0, "the test needs kept spills");
        let ctx = d.tree.ctx.clone();
        drop(d);
        env.drop_dictionary("d").unwrap();
        assert_eq!(ctx.spill_memo.kept(), (0, 0));
        env.close().unwrap();
    }
}
