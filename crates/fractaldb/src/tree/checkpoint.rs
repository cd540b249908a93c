//! Checkpoints of one tree: marking the dirty nodes at begin, writing
//! them (or the copies writers made) before finish, node write-back.

use super::*;

/// A checkpoint of one tree between its begin and its finish.
pub(crate) struct TreeCheckpoint {
    meta: Meta,
    /// The nodes dirty at the begin (marked `ckpt_pending`).
    pending: Vec<Arc<Entry>>,
}

impl TreeCheckpoint {
    /// How many nodes the checkpoint has to visit (its pacing's measure).
    pub(crate) fn nodes(&self) -> usize {
        self.pending.len()
    }
}

/// A copy a writer made of a node a running checkpoint still has to write
/// (`Tree::cow`), with the block it is written to.
///
/// The copy is memory outside any cached node until the checkpoint writes
/// it, so it is charged to the cache (the evictor makes room for it) for
/// as long as it lives, and the charge goes back when it is dropped:
/// written, abandoned with a failed checkpoint, or dropped with its tree.
/// When the cache first fills nearly every node is dirty and pending; the
/// copies held at once reached 100-200 MiB at a 1 GiB cache before they
/// were charged.
pub(crate) struct CheckpointCopy {
    bn: BlockNum,
    node: Node,
    /// Bytes charged to `ctx.cache` and counted in `checkpoint_copy_bytes`.
    bytes: usize,
    ctx: Arc<Context>,
}

impl CheckpointCopy {
    fn new(ctx: &Arc<Context>, bn: BlockNum, node: Node) -> Self {
        let bytes = node.mem_bytes();
        ctx.cache.hold_extra(bytes);
        let now = ctx.checkpoint_copy_bytes.fetch_add(bytes as u64, AtomicOrdering::Relaxed) + bytes as u64;
        ctx.checkpoint_copy_bytes_peak.fetch_max(now, AtomicOrdering::Relaxed);
        CheckpointCopy { bn, node, bytes, ctx: Arc::clone(ctx) }
    }
}

impl Drop for CheckpointCopy {
    fn drop(&mut self) {
        // The node's size cannot have changed: nothing mutates a copy.
        debug_assert_eq!(self.node.mem_bytes(), self.bytes);
        self.ctx.cache.release_extra(self.bytes);
        let before = self.ctx.checkpoint_copy_bytes.fetch_sub(self.bytes as u64, AtomicOrdering::Relaxed);
        debug_assert!(before >= self.bytes as u64, "checkpoint copy bytes went below zero");
    }
}

impl Tree {
    /// Begins a checkpoint recording `ckpt_lsn` (see `log/record.rs`): the
    /// tree as it is at this instant is what the checkpoint will hold. The
    /// caller holds the context's checkpoint lock exclusively, so no node is
    /// changing; this only marks the dirty nodes, no I/O.
    pub(crate) fn begin_checkpoint(&self, ckpt_lsn: u64) -> TreeCheckpoint {
        let meta = Meta {
            root: self.root_bn(),
            max_msn: self.ctx.msn.load(AtomicOrdering::SeqCst),
            ckpt_lsn,
            next_txid: self.ctx.next_txid.load(AtomicOrdering::SeqCst),
            settings: self.settings.clone(),
            // Under the checkpoint lock held exclusively: the totals of
            // exactly the commits logged before `ckpt_lsn` (`txn/counts.rs`).
            counts: self.counts.lock().total(),
        };
        // Spills still waiting to be written are named by this checkpoint's
        // nodes: it writes them before its table (`pending.rs`).
        self.pending.begin_checkpoint(|| self.file.begin_checkpoint());
        let mut pending = Vec::new();
        if !self.dropped.load(AtomicOrdering::Relaxed) {
            for e in self.ctx.cache.entries_of(self.dict) {
                // A shared lock: the evictor may be writing this node back
                // (holding it upgradable through the I/O); it sees the mark
                // when it finishes and puts its block in this checkpoint too.
                let g = e.node.read();
                if g.dirty {
                    let was = g.ckpt_pending.swap(true, AtomicOrdering::SeqCst);
                    debug_assert!(!was, "a node pending from an earlier checkpoint");
                    drop(g);
                    pending.push(e);
                }
            }
        }
        debug_assert!(self.ckpt_clones.lock().is_empty());
        TreeCheckpoint { meta, pending }
    }

    /// Writes what `begin_checkpoint` marked, while writers go on: a node
    /// still pending is written as it is (and becomes clean); a node changed
    /// since was copied first, and the copy is written. Then the table and
    /// the header.
    ///
    /// A failure turns the dictionary read-only: after a failed write or
    /// fdatasync the file's contents are unknown (Linux may have dropped the
    /// dirty pages and marked them clean), so no later header may point at
    /// blocks written before it. The log still holds every write since the
    /// last good checkpoint; a restart recovers them.
    ///
    /// A panic (no user code runs here: a bug) abandons the checkpoint, so
    /// no header is written, and fails the tree the same way.
    ///
    /// A tree poisoned after this checkpoint began is still written: what
    /// the checkpoint writes is the tree at its begin (taken under the
    /// exclusive checkpoint lock, so between changes), as every change
    /// since copied its node first (`cow`), before the panic could come.
    ///
    /// `pace(n)` is called after each step that wrote, `n` the marked
    /// nodes it visited (0 for a copy): the caller may sleep there to
    /// spread the writes (env/checkpoint.rs, `Pacer`). No lock is held across it.
    pub(crate) fn finish_checkpoint(&self, ckpt: TreeCheckpoint, pace: &mut dyn FnMut(usize)) -> Result<()> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.finish_checkpoint_inner(&ckpt, pace)
        }))
        .unwrap_or_else(|p| {
            self.abandon_checkpoint(&ckpt);
            let message = panic_message(&*p);
            eprintln!("fractaldb: {}: a checkpoint panicked: {message}", self.path().display());
            Err(Error::ReadOnly(format!("a checkpoint panicked: {message}")))
        });
        if let Err(e) = &r {
            self.fail(format!("checkpoint failed: {e}"));
        }
        r
    }

    fn finish_checkpoint_inner(&self, ckpt: &TreeCheckpoint, pace: &mut dyn FnMut(usize)) -> Result<()> {
        let mut result = Ok(());
        for e in &ckpt.pending {
            if result.is_ok() {
                result = self.write_pending(e);
            }
            // The copies writers made so far are written as they come, not
            // all at the end: a paced checkpoint runs long enough for many
            // nodes to be copied, and they would end it in one burst and
            // hold memory meanwhile. A copy is final (the node's state at
            // the begin), so when it is written does not matter.
            while result.is_ok() {
                let Some(copy) = self.ckpt_clones.lock().pop() else { break };
                result = self.write_clone(&copy);
                drop(copy);
                pace(0);
            }
            pace(1);
        }
        // Every spill the checkpoint's nodes may name has its block before
        // the table is written (or is being written by the spill writer,
        // which joins it to the checkpoint; then this waits for it).
        while result.is_ok() {
            match self.pending.claim_for_checkpoint() {
                Some(claim) => result = self.write_claimed(claim),
                None => break,
            }
        }
        // Every pending node has been visited under its lock, so no copy can
        // be added after this point.
        let clones = std::mem::take(&mut *self.ckpt_clones.lock());
        // Each copy's charge goes back as it is dropped: after its write,
        // or with the rest of the list on a failure.
        let written = result.and_then(|()| clones.into_iter().try_for_each(|copy| self.write_clone(&copy)));
        if let Err(e) = written {
            self.abandon_checkpoint(ckpt);
            return Err(e);
        }
        let result = self.file.finish_checkpoint(&ckpt.meta.encode());
        // Nothing is marked any more (every marked spill was written above).
        let ((), gone) = self.pending.end_checkpoint(|| ());
        debug_assert!(gone.is_empty(), "spills the checkpoint named were not written");
        result
    }

    /// Writes a copy a writer made of a marked node (`cow`) for the checkpoint.
    fn write_clone(&self, copy: &CheckpointCopy) -> Result<()> {
        serialize::serialize(&copy.node, self.settings.codec, self.ctx.horizon.load(AtomicOrdering::Acquire))
            .and_then(|s| self.file.write_block_for_checkpoint(copy.bn, &s.bytes, s.header_len))
            .map(|_| ())
    }

    /// Writes a node for the checkpoint without holding its lock during the
    /// work: copy it under the lock (a memory copy), then compress and write
    /// the copy while writers go on. If nobody changed the node meanwhile
    /// (`ckpt_writing` still set: every change goes through `cow`, which
    /// clears it), the written block becomes its current version too and the
    /// node is clean; else the block serves the checkpoint only.
    fn write_pending(&self, e: &Entry) -> Result<()> {
        let snap = {
            let mut g = e.node.write();
            if !g.ckpt_pending.swap(false, AtomicOrdering::SeqCst) {
                return Ok(()); // copied by a writer (`cow`) or written by the evictor
            }
            g.ckpt_writing = true;
            g.snapshot()
        };
        let s =
            serialize::serialize(&snap, self.settings.codec, self.ctx.horizon.load(AtomicOrdering::Acquire));
        drop(snap);
        let s = match s {
            Ok(s) => s,
            Err(err) => {
                e.node.write().ckpt_writing = false;
                return Err(err);
            }
        };
        let ext = self.file.write_block_for_checkpoint(e.bn, &s.bytes, s.header_len);
        let mut g = e.node.write();
        let unchanged = std::mem::replace(&mut g.ckpt_writing, false);
        let ext = ext?;
        if unchanged && g.dirty && self.file.make_current(e.bn, ext) {
            g.dirty = false;
            g.disk = Some(ext);
            g.disk_parts = s.parts;
            let bytes = g.mem_bytes();
            drop(g);
            self.ctx.cache.recharge(e, bytes);
        }
        Ok(())
    }

    /// A failed checkpoint: unmark what is still marked (the nodes stay
    /// dirty) and close the file's checkpoint without a header.
    pub(crate) fn abandon_checkpoint(&self, ckpt: &TreeCheckpoint) {
        for e in &ckpt.pending {
            e.node.read().ckpt_pending.store(false, AtomicOrdering::SeqCst);
        }
        // Dropping the copies gives their charge back.
        drop(std::mem::take(&mut *self.ckpt_clones.lock()));
        // Under the pending spills' lock: a spill write ending now must not
        // join the checkpoint being abandoned.
        let ((), gone) = self.pending.end_checkpoint(|| self.file.abandon_checkpoint());
        for bn in gone {
            self.file.free_blocknum(bn);
        }
    }

    /// Call before changing a node under its write lock: if a checkpoint
    /// still needs the node's begin-time state, hand it a copy first. This
    /// is how a checkpoint never makes a writer wait for a node write.
    pub(crate) fn cow(&self, bn: BlockNum, node: &mut Node) {
        // The checkpoint's copy of this node, if being written, is now stale
        // as the node's current version (see `write_pending`).
        node.ckpt_writing = false;
        if node.ckpt_pending.swap(false, AtomicOrdering::SeqCst) {
            self.ctx.checkpoint_copies.fetch_add(1, AtomicOrdering::Relaxed);
            let copy = CheckpointCopy::new(&self.ctx, bn, node.snapshot());
            self.ckpt_clones.lock().push(copy);
        }
    }

    /// Writes a dirty node, held by `g` so it cannot change meanwhile, and
    /// marks it clean at its new place.
    /// A node `ckpt_pending` once the write is done (marked before it, or by
    /// a checkpoint's begin during it: `g` keeps writers out, so either way
    /// the bytes are the begin-time state) also serves the checkpoint.
    pub(super) fn write_clean(
        &self,
        e: &Entry,
        g: parking_lot::RwLockUpgradableReadGuard<'_, Node>,
    ) -> Result<()> {
        let s =
            serialize::serialize(&g, self.settings.codec, self.ctx.horizon.load(AtomicOrdering::Acquire))?;
        let ext = self.file.write_block(e.bn, &s.bytes, s.header_len)?;
        let parts = s.parts;
        let mut w = parking_lot::RwLockUpgradableReadGuard::upgrade(g);
        if w.ckpt_pending.swap(false, AtomicOrdering::SeqCst) {
            self.file.add_to_checkpoint(e.bn, ext);
        }
        w.ckpt_writing = false;
        w.dirty = false;
        w.disk = Some(ext);
        w.disk_parts = parts;
        let bytes = w.mem_bytes();
        self.ctx.cache.recharge(e, bytes);
        Ok(())
    }
}
