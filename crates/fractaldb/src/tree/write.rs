//! The write path: messages into the root's buffer, logged, as one step.

use super::*;

impl Tree {
    /// Applies messages (keys and bodies, in order) as one atomic step: one
    /// root lock, consecutive MSNs, one log record. With `commit_sync`, returns
    /// once the record is durable. Before recovery has finished (the log is
    /// not set yet) nothing is logged: that is the replay.
    pub(crate) fn write(&self, msgs: Msgs) -> Result<()> {
        self.write_msgs(&msgs, None, Logging::Commit).map(|_| ())
    }

    /// `write` with a choice of logging (see `Logging`) and a stamp (if
    /// any) put on every message on its way in (`Stamp`: the messages
    /// are borrowed, keys and values copied once, into the log record and
    /// the root's buffer); returns the LSN of the record, if one was written.
    ///
    /// A panic of user code (a comparator placing a key, an update function
    /// applied to a root leaf) returns `Error::CallbackPanicked`; if it came
    /// once the root was being changed, the tree is poisoned. The record may
    /// be in the log by then: as for any failed write, it may or may not
    /// survive a restart.
    pub(crate) fn write_msgs<M: KeyedMsg>(
        &self,
        msgs: &[M],
        stamp: Option<Stamp>,
        logging: Logging,
    ) -> Result<Option<u64>> {
        self.guarded(|| self.write_msgs_unguarded(msgs, stamp, logging))
    }

    fn write_msgs_unguarded<M: KeyedMsg>(
        &self,
        msgs: &[M],
        stamp: Option<Stamp>,
        logging: Logging,
    ) -> Result<Option<u64>> {
        self.check_open()?;
        self.check_writable()?;
        let log = self.ctx.log.get().filter(|_| logging != Logging::None);
        self.check_fns(msgs)?;
        // Every entry point checked its keys and values already; this is
        // the one place every logged write passes, before anything is
        // copied, so no record can outgrow `MAX_BATCH_BYTES` (and its
        // u32 length). A replay (no log yet) is not checked: it applies
        // records already written.
        if log.is_some() {
            crate::limits::check_msgs(msgs)?;
        }
        let record = log.map(|_| encode_write(self.file_id, msgs, stamp));
        // Clean-up messages are never refused: a transaction whose commit
        // is logged must be able to finish.
        if let Some(r) = &record {
            self.ctx.check_space(r.len())?;
        }
        self.ctx.cache.throttle();
        self.help_cleaner()?;
        // Waits out a `check` of this tree; taken before the gate and the
        // checkpoint lock, so the wait holds up no other dictionary.
        let _walk = self.check_lock.read();
        let pass = self.ctx.gate.enter();
        let ckpt = self.ctx.checkpoint_lock.read();
        let root_bn = self.root_bn();
        let mut held = Vec::new();
        let mut lsn = None;
        loop {
            let root = self.pin(root_bn)?;
            let mut g = root.node.write();
            if !g.all_loaded() {
                drop(g);
                self.fetch_all(&root)?;
                held.push(root);
                continue;
            }
            // Poisoned since `check_writable` (the mark is set before the
            // panicking thread let go of this lock): nothing is logged.
            if self.is_poisoned() {
                return self.check_writable().map(|()| None);
            }
            check_root_room(&g, msgs)?;
            self.cow(root_bn, &mut g);
            // From here the root changes in place; declared after `g`, so a
            // panic marks the tree before the root's lock is released.
            let _changing = self.changing();
            // Logged under the root lock, so the log's order is the MSN order.
            if let (Some(log), Some(rec)) = (log, &record) {
                lsn = Some(log.append(rec).map_err(log_failed)?);
            }
            let first_msn = self.ctx.msn.fetch_add(msgs.len() as u64, AtomicOrdering::SeqCst) + 1;
            if g.is_leaf() {
                self.apply_to_root_leaf(root_bn, &mut g, msgs, stamp, first_msn)?;
            } else {
                self.buffer_at_root(&mut g, msgs, stamp, first_msn);
            }
            g.dirty = true;
            let bytes = g.mem_bytes();
            self.ctx.cache.recharge(&root, bytes);
            break;
        }
        drop(ckpt);
        drop(pass);
        if self.root_pressure_bytes.load(AtomicOrdering::Relaxed) > self.root_flush_bytes() {
            self.ctx.wake_cleaner();
        }
        if let Some((log, lsn)) = log.zip(lsn) {
            self.sync_written(log, lsn, logging)?;
        }
        Ok(lsn)
    }

    /// Every update and broadcast names an update function the
    /// environment knows, and every range delete's bounds are in order.
    fn check_fns<M: KeyedMsg>(&self, msgs: &[M]) -> Result<()> {
        for m in msgs {
            if m.kind() == MsgKind::RangeDelete {
                let body = m.stamped(None);
                let (lo, hi) = body.range_bounds();
                if (self.cmp)(lo, hi) == Ordering::Greater {
                    return Err(Error::invalid("a range delete whose lower bound is above its upper bound"));
                }
            }
            if matches!(m.kind(), MsgKind::Update | MsgKind::Broadcast)
                && !self.ctx.fns.contains_key(&m.fn_id())
            {
                return Err(Error::invalid(message::missing_fn(m.fn_id())));
            }
        }
        Ok(())
    }

    /// Back-pressure: while the root is over `WRITER_HELPS_AT_NODES` node
    /// sizes the writer does the cleaner's work instead of letting the
    /// buffers grow.
    /// Bounded, so the write always goes on: a root no step can bring
    /// under (a root leaf holding one entry larger than the threshold
    /// cannot split) must not hold its writer forever. The root's
    /// buffers stay bounded by `MAX_ROOT_BUFFER_BYTES` (`check_root_room`).
    fn help_cleaner(&self) -> Result<()> {
        for _ in 0..WRITER_HELP_STEPS {
            if self.root_pressure_bytes.load(AtomicOrdering::Relaxed)
                <= flush::WRITER_HELPS_AT_NODES * self.settings.node_size_bytes
                || !self.clean_step()?
            {
                break;
            }
        }
        Ok(())
    }

    /// Applies the messages (MSNs from `first_msn`) to the root, a leaf,
    /// with their values borrowed.
    fn apply_to_root_leaf<M: KeyedMsg>(
        &self,
        root_bn: BlockNum,
        g: &mut Node,
        msgs: &[M],
        stamp: Option<Stamp>,
        first_msn: u64,
    ) -> Result<()> {
        let bodies: Vec<MsgBody<&[u8]>> = msgs.iter().map(|m| m.stamped(stamp)).collect();
        let mut sorted: Vec<flush::PointMsg<&[u8]>> =
            (0..msgs.len()).map(|i| (msgs[i].key(), first_msn + i as u64, &bodies[i])).collect();
        // The record is logged: a failure here leaves the leaf
        // partly changed, so the tree takes no more writes and no
        // checkpoint; a restart replays the log.
        if let Err(r) = flush::apply_to_leaf(self, g, &mut sorted) {
            self.fail(format!("applying a write to the root leaf failed: {r}"));
            return Err(self.apply_error(r, Some(root_bn)));
        }
        self.root_pressure_bytes.store(g.leaf_bytes(), AtomicOrdering::Relaxed);
        Ok(())
    }

    /// Puts the messages (MSNs from `first_msn`) into the buffers of the
    /// root, an internal node: each into its child's, a broadcast into
    /// every child's, a range delete into the buffer of each child whose
    /// key range meets its range, folding commits into the writes they
    /// commit.
    fn buffer_at_root<M: KeyedMsg>(&self, g: &mut Node, msgs: &[M], stamp: Option<Stamp>, first_msn: u64) {
        let mut per_child: Vec<Vec<MsgRef>> = (0..g.n_parts()).map(|_| Vec::new()).collect();
        for (i, m) in msgs.iter().enumerate() {
            let msn = first_msn + i as u64;
            let body = m.stamped(stamp);
            if body.is_wide() {
                let body = body.with_val(Box::from(body.val));
                let n = g.n_parts();
                let meets: Vec<bool> = (0..n)
                    .map(|c| {
                        let lo = c.checked_sub(1).map(|j| &*g.pivots[j]);
                        body.meets(lo, g.pivots.get(c).map(|p| &**p), self.cmp)
                    })
                    .collect();
                for (c, _) in g.children_mut().iter_mut().zip(meets).filter(|(_, m)| *m) {
                    c.buf.insert_broadcast(msn, body.clone());
                }
            } else {
                let key = m.key();
                per_child[g.part_for(key, self.cmp)].push(MsgRef { msn, key, body });
            }
        }
        for (c, msgs) in g.children_mut().iter_mut().zip(per_child) {
            let msgs = c.buf.fold_commits(msgs, self.order);
            if !msgs.is_empty() {
                c.buf.insert_many(msgs, self.order);
            }
        }
        self.root_pressure_bytes.store(g.buffer_bytes(), AtomicOrdering::Relaxed);
    }

    /// Once the write's record `lsn` is appended: waits for it to be
    /// durable if the write is a commit with `commit_sync`.
    /// A writer that does not wait for its record (a transaction's
    /// writes before its commit, or commit_sync off) still writes
    /// the log out once this much piles up in memory: a transaction
    /// of millions of rows must not hold its log records in memory.
    fn sync_written(&self, log: &Log, lsn: u64, logging: Logging) -> Result<()> {
        let piled_up = log.buffered_bytes() > LOG_BUFFER_BYTES;
        if piled_up || (self.ctx.commit_sync && logging == Logging::Commit) {
            log.sync_to(lsn).map_err(log_failed)?;
        }
        Ok(())
    }
}

/// A root buffer's arena is indexed by u32 offsets (`buffer.rs`).
/// Back-pressure keeps the root's buffers near `WRITER_HELPS_AT_NODES` node
/// sizes, but writers that all passed it at once could each add a batch:
/// refuse a write that would take them past `MAX_ROOT_BUFFER_BYTES`, before
/// it is logged. (A root leaf's basements check their own offsets, and a
/// failure there fails the tree.)
fn check_root_room<M: KeyedMsg>(g: &Node, msgs: &[M]) -> Result<()> {
    if !g.is_leaf() {
        // Each message costs its key, value, head and a slot (< 48).
        let incoming: usize = msgs.iter().map(|m| m.key().len() + m.val().len() + 48).sum();
        let after = g.buffer_bytes().saturating_add(incoming);
        if after > MAX_ROOT_BUFFER_BYTES {
            return Err(Error::TooLarge {
                what: "root buffers (the cleaner is behind; retry)",
                len: after as u64,
                limit: MAX_ROOT_BUFFER_BYTES as u64,
            });
        }
    }
    Ok(())
}
