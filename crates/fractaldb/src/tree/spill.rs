//! Spills of one tree: reading them, handing new ones to the spill
//! writer, writing and freeing their blocks.

use super::*;

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
        serialize::decode_spill(&bytes, self.order).map(Arc::new).map_err(|r| self.corrupt(bn, r))
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

    /// A merge took spill `bn`: frees its block number, now or once the
    /// thread writing it (or the checkpoint that needs it) is done.
    pub(crate) fn free_spill(&self, bn: BlockNum) {
        debug_assert!(self.check_lock.is_locked(), "a spill freed outside the check lock (check.rs)");
        if self.pending.cancel(bn) {
            self.file.free_blocknum(bn);
        }
    }
}
