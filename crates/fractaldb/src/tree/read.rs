//! Point reads: the value of a key as a snapshot sees it.

use super::*;

impl Tree {
    /// The value of `key` as `view` sees it: the leaf's entry with every
    /// buffered message for the key on the root-to-leaf path applied in MSN
    /// order, then the version `view` chooses (`leafentry.rs`).
    pub(crate) fn get(&self, key: &[u8], view: &ReadView) -> Result<Option<Vec<u8>>> {
        self.guarded_read(|| self.get_unguarded(key, view))
    }

    fn get_unguarded(&self, key: &[u8], view: &ReadView) -> Result<Option<Vec<u8>>> {
        for _attempt in 0..RETRIES {
            let (le, bn, msgs) = self.collect(key)?;
            if msgs.is_empty() {
                match le.as_deref() {
                    None => return Ok(None),
                    Some([leafentry::LE_VALUE, v @ ..]) => return Ok(Some(v.to_vec())),
                    Some(_) => {}
                }
            }
            let e = self.merged_entry(key, le.as_deref(), bn, &msgs)?;
            match e.read(view) {
                Seen::Value(v) => return Ok(v.map(<[u8]>::to_vec)),
                Seen::Retry(_) => std::thread::yield_now(),
            }
        }
        Err(self.unknown_txn(key))
    }

    /// The txid of the newest committed version of `key` (0: older than
    /// every snapshot), for write-conflict checks.
    pub(crate) fn newest_committed_txid(&self, key: &[u8], states: &dyn TxnStates) -> Result<Option<u64>> {
        self.guarded_read(|| self.newest_committed_txid_unguarded(key, states))
    }

    fn newest_committed_txid_unguarded(&self, key: &[u8], states: &dyn TxnStates) -> Result<Option<u64>> {
        for _attempt in 0..RETRIES {
            let (le, bn, msgs) = self.collect(key)?;
            let e = self.merged_entry(key, le.as_deref(), bn, &msgs)?;
            if let Ok(t) = e.newest_committed_txid(states) {
                return Ok(t);
            }
            std::thread::yield_now();
        }
        Err(self.unknown_txn(key))
    }

    pub(super) fn unknown_txn(&self, key: &[u8]) -> Error {
        Error::corrupt(
            self.path(),
            None,
            format!("key {key:02x?} keeps a provisional version of a transaction that no longer exists"),
        )
    }

    /// The stored entry `le` (from block `bn`) with `msgs` applied.
    fn merged_entry(
        &self,
        key: &[u8],
        le: Option<&[u8]>,
        bn: BlockNum,
        msgs: &[(u64, MsgBody)],
    ) -> Result<LeEntry> {
        let mut e = match le {
            Some(le) => LeEntry::decode(le).map_err(|r| self.corrupt(bn, r))?,
            None => LeEntry::default(),
        };
        for (_, body) in msgs {
            e.apply(key, body, &self.ctx.fns).map_err(|e| self.apply_error(e, None))?;
        }
        Ok(e)
    }

    /// The leaf's stored entry for `key` (and the leaf's block), and every
    /// buffered message for the key on the root-to-leaf path, in MSN order.
    #[allow(clippy::type_complexity)]
    fn collect(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, BlockNum, Vec<(u64, MsgBody)>)> {
        self.check_open()?;
        let gate = &self.ctx.gate;
        let mut pass = Some(gate.enter());
        let mut held: Vec<Arc<Entry>> = Vec::new();
        'restart: loop {
            let mut msgs: Vec<(u64, MsgBody)> = Vec::new();
            let mut entry = self.pin(self.root_bn())?;
            let mut guard = entry.node.read_arc();
            let base = loop {
                if guard.is_leaf() {
                    let i = guard.part_for(key, self.cmp);
                    match &guard.basements()[i] {
                        Some(b) => break b.get(key, self.cmp).map(|le| le.to_vec()),
                        None => {
                            drop(guard);
                            gate.outside(&mut pass, || self.fetch_part(&entry, i))?;
                            held.push(entry);
                            continue 'restart;
                        }
                    }
                }
                let c = guard.part_for(key, self.cmp);
                let child = &guard.children()[c];
                if child.loaded {
                    msgs.extend(child.buf.for_key(key, self.order));
                    let covering = |(_, b): &&(u64, MsgBody)| b.covers(key, self.cmp);
                    msgs.extend(child.buf.broadcasts().iter().filter(covering).cloned());
                    // Spills are read under the node's shared lock: they
                    // are immutable, and freed only under its write lock.
                    // A spill that held messages for the key asks for the
                    // child to be flushed down (not a filter's false
                    // positive: a merge costs a rewrite of the child).
                    let mut found = false;
                    for sp in child.spills.iter().filter(|sp| sp.may_contain(key)) {
                        let buf = self.read_spill_kept(sp)?;
                        let before = msgs.len();
                        msgs.extend(buf.for_key(key, self.order));
                        found |= msgs.len() > before;
                        msgs.extend(buf.broadcasts().iter().filter(covering).cloned());
                    }
                    if found {
                        self.queue_merge(entry.bn, child.bn);
                    }
                } else {
                    drop(guard);
                    gate.outside(&mut pass, || self.fetch_part(&entry, c))?;
                    held.push(entry);
                    continue 'restart;
                }
                let child_bn = child.bn;
                let Some(next) = self.ctx.cache.get(self.dict, child_bn) else {
                    drop(guard);
                    held.extend(gate.outside(&mut pass, || self.try_pin(child_bn))?);
                    continue 'restart;
                };
                // Hand over hand: the child is locked before the parent is
                // released, so no flush can move a message past this reader.
                let next_guard = next.node.read_arc();
                guard = next_guard;
                entry = next;
            };
            drop(guard);
            msgs.sort_by_key(|(m, _)| *m);
            return Ok((base, entry.bn, msgs));
        }
    }
}
