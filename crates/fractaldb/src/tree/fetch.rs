//! Reading nodes: pinning them in the cache, reading a node or its
//! partitions from disk.

use super::*;

impl Tree {
    /// Pins a node, reading it from disk if it is not cached. Leaves come
    /// in with their header only; see `fetch_basement` and `fetch_all`.
    /// Call with no node locks held.
    pub(crate) fn pin(&self, bn: BlockNum) -> Result<Arc<Entry>> {
        self.try_pin(bn)?.ok_or_else(|| self.corrupt(bn, "block is not in the block table"))
    }

    /// Like `pin`, but `None` if the node no longer exists. A thread that
    /// dropped its locks to read a node uses this: a merge may have freed the
    /// node meanwhile, and then the thread just starts over.
    pub(crate) fn try_pin(&self, bn: BlockNum) -> Result<Option<Arc<Entry>>> {
        loop {
            if let Some(e) = self.ctx.cache.get(self.dict, bn) {
                return Ok(Some(e));
            }
            let Some(ext) = self.file.extent(bn) else {
                // Freed, or a new node that another thread has just cached.
                return Ok(self.ctx.cache.get(self.dict, bn));
            };
            // A node freed by a merge may have had its block number taken
            // by a spill since (a reader that dropped its locks comes back
            // with the old number): then the node is gone. The block table
            // tells them apart: a spill's header is shorter than any node's.
            if ext.header_len as usize == serialize::SPILL_HEADER_BYTES {
                return Ok(None);
            }
            // The extent may be freed and reused while it is read (another
            // thread cached, changed and wrote the node meanwhile): bytes that
            // fail to decode are corruption only if the extent is still current.
            let node = match self.read_node(bn, ext, false) {
                Ok(n) => n,
                Err(e) if self.file.extent(bn) != Some(ext) => {
                    drop(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let file = &self.file;
            if let Some(e) = self
                .ctx
                .cache
                .insert_loaded(self.dict, bn, node, self.owner(), || file.extent(bn) == Some(ext))
            {
                return Ok(Some(e));
            }
        }
    }

    /// Reads a node from its block: the header, then (for internal nodes, or
    /// when `full`) every partition.
    fn read_node(&self, bn: BlockNum, ext: Extent, full: bool) -> Result<Node> {
        let bytes = if full {
            self.file.read_range(bn, ext, 0, ext.len)?
        } else {
            self.file.read_range(bn, ext, 0, ext.header_len)?
        };
        let header = self.parse_header(bn, &bytes[..ext.header_len as usize], ext.len)?;
        let body = if header.height > 0 && !full {
            // An empty buffer (its raw form is the count 0, one byte) needs no
            // read: it is in memory from the start. Drained nodes (see
            // `drain_step`) are all empty buffers, so a point read of data
            // larger than the cache reads just its basement.
            let children =
                header.child_bns.iter().zip(&header.parts).zip(header.spills).map(|((&bn, info), spills)| {
                    node::Child {
                        bn,
                        buf: Default::default(),
                        loaded: info.raw_len == EMPTY_BUFFER_RAW_LEN,
                        spills,
                    }
                });
            Body::Internal(children.collect())
        } else if header.height > 0 {
            let mut children = Vec::with_capacity(header.parts.len());
            for ((info, &child), spills) in header.parts.iter().zip(&header.child_bns).zip(header.spills) {
                let s = info.offset as usize;
                let buf = decode_buffer(info, &bytes[s..s + info.disk_len as usize], self.order)
                    .map_err(|r| self.corrupt(bn, r))?;
                children.push(node::Child { bn: child, buf, loaded: true, spills });
            }
            Body::Internal(children)
        } else if full {
            let mut bs = Vec::with_capacity(header.parts.len());
            for info in &header.parts {
                let s = info.offset as usize;
                let b = decode_basement(info, &bytes[s..s + info.disk_len as usize], self.cmp)
                    .map_err(|r| self.corrupt(bn, r))?;
                bs.push(Some(b));
            }
            Body::Leaf(bs)
        } else {
            Body::Leaf((0..header.parts.len()).map(|_| None).collect())
        };
        Ok(Node {
            height: header.height,
            pivots: header.pivots,
            body,
            max_msn: header.max_msn,
            dirty: false,
            disk: Some(ext),
            disk_parts: header.parts,
            ckpt_pending: std::sync::atomic::AtomicBool::new(false),
            ckpt_writing: false,
        })
    }

    pub(crate) fn parse_header_for_check(
        &self,
        bn: BlockNum,
        bytes: &[u8],
        block_len: u32,
    ) -> Result<serialize::Header> {
        self.parse_header(bn, bytes, block_len)
    }

    fn parse_header(&self, bn: BlockNum, bytes: &[u8], block_len: u32) -> Result<serialize::Header> {
        parse_header(bytes, block_len).map_err(|e| match e {
            HeaderError::Corrupt(r) => self.corrupt(bn, r),
            HeaderError::Version(v) => Error::UnsupportedVersion {
                path: self.file.path().to_path_buf(),
                found: v as u32,
                supported: serialize::NODE_FORMAT_VERSION as u32,
            },
        })
    }

    /// True if `ext` no longer holds this entry's node: the node was
    /// rewritten, or freed by a merge while the caller held its entry.
    fn stale(&self, e: &Entry, ext: Extent) -> bool {
        self.file.extent(e.bn) != Some(ext) || e.node.read().disk != Some(ext)
    }

    /// Brings partition `i` (a basement, or a child's buffer) of a cached
    /// node into memory with one read of just that partition. Call with no
    /// locks held.
    pub(crate) fn fetch_part(&self, e: &Entry, i: usize) -> Result<()> {
        self.fetch_parts(e, i..i + 1)
    }

    /// Brings partitions `parts` of a cached node into memory with one read
    /// of the bytes from the first to the last of them (partitions lie in
    /// order in the block); the ones already in memory are read and left.
    /// A scan uses it to read the rest of a leaf at once. Call with no locks
    /// held.
    pub(crate) fn fetch_parts(&self, e: &Entry, parts: std::ops::Range<usize>) -> Result<()> {
        let (ext, infos, leaf) = {
            let g = e.node.read();
            let loaded = |i: usize| match &g.body {
                Body::Leaf(b) => b.get(i).is_none_or(|b| b.is_some()),
                Body::Internal(c) => c.get(i).is_none_or(|c| c.loaded),
            };
            let parts = parts.start.min(g.n_parts())..parts.end.min(g.n_parts());
            if parts.clone().all(loaded) {
                return Ok(());
            }
            let infos: Vec<(usize, PartInfo)> = parts.map(|i| (i, g.disk_parts[i])).collect();
            (g.disk.expect("an evicted partition has a block"), infos, g.is_leaf())
        };
        // `serialize` lays partitions out in order, so this span holds just
        // them; min and max keep it right for any order the header gives
        // (`parse_header` checked each lies inside the block).
        let lo = infos.iter().map(|(_, p)| p.offset).min().expect("a partition");
        let hi = infos
            .iter()
            .map(|(_, p)| u64::from(p.offset) + u64::from(p.disk_len))
            .max()
            .expect("a partition");
        // `parse_header` checked each partition lies inside the block, whose
        // length is a u32.
        let span =
            u32::try_from(hi - u64::from(lo)).map_err(|_| self.corrupt(e.bn, "partitions past 4 GiB"))?;
        let decoded = self.file.read_range(e.bn, ext, lo, span).and_then(|bytes| {
            let mut out = Vec::with_capacity(infos.len());
            for (i, info) in &infos {
                let at = (info.offset - lo) as usize;
                let part = &bytes[at..at + info.disk_len as usize];
                let r = if leaf {
                    decode_basement(info, part, self.cmp).map(Ok)
                } else {
                    serialize::decode_buffer(info, part, self.order).map(Err)
                };
                out.push((*i, r.map_err(|r| self.corrupt(e.bn, r))?));
            }
            Ok(out)
        });
        let decoded = match decoded {
            Ok(p) => p,
            // Rewritten meanwhile (see `pin`): the caller starts over.
            Err(_) if self.stale(e, ext) => return Ok(()),
            Err(err) => return Err(err),
        };
        let mut g = e.node.write();
        if g.dirty || g.disk != Some(ext) || self.file.extent(e.bn) != Some(ext) {
            return Ok(());
        }
        let mut changed = false;
        for (i, part) in decoded {
            match (&mut g.body, part) {
                (Body::Leaf(b), Ok(basement)) if b.get(i).is_some_and(|b| b.is_none()) => {
                    b[i] = Some(basement)
                }
                (Body::Internal(c), Err(buf)) if c.get(i).is_some_and(|c| !c.loaded) => {
                    c[i].buf = buf;
                    c[i].loaded = true;
                }
                _ => continue,
            }
            changed = true;
        }
        if changed {
            let bytes = g.mem_bytes();
            self.ctx.cache.recharge(e, bytes);
        }
        Ok(())
    }

    /// Brings every partition of a cached node into memory with one read.
    /// Call with no locks held.
    pub(crate) fn fetch_all(&self, e: &Entry) -> Result<()> {
        let ext = {
            let g = e.node.read();
            if g.all_loaded() {
                return Ok(());
            }
            g.disk.expect("an evicted partition has a block")
        };
        let full = match self.read_node(e.bn, ext, true) {
            Ok(n) => n,
            // Rewritten meanwhile (see `pin`): the caller starts over.
            Err(_) if self.stale(e, ext) => return Ok(()),
            Err(err) => return Err(err),
        };
        let mut g = e.node.write();
        if g.dirty || g.disk != Some(ext) || self.file.extent(e.bn) != Some(ext) {
            return Ok(());
        }
        match (&mut g.body, full.body) {
            (Body::Leaf(mine), Body::Leaf(fresh)) => {
                for (slot, b) in mine.iter_mut().zip(fresh) {
                    if slot.is_none() {
                        *slot = b;
                    }
                }
            }
            (Body::Internal(mine), Body::Internal(fresh)) => {
                for (slot, c) in mine.iter_mut().zip(fresh) {
                    if !slot.loaded {
                        *slot = c;
                    }
                }
            }
            // Not a stale read: `ext` (stamp included) is still this node's
            // extent, so these bytes are the node's own. (Never call `stale`
            // here: it read-locks the node this thread has write-locked.)
            _ => return Err(self.corrupt(e.bn, "node changed height on disk")),
        }
        let bytes = g.mem_bytes();
        self.ctx.cache.recharge(e, bytes);
        Ok(())
    }
}
