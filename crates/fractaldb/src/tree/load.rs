//! Bulk loading: a new tree built bottom-up from pairs in ascending key
//! order, written leaf by leaf, never through a root's buffers.
//!
//! `TreeBuilder` owns a fresh block file (`BlockFile::create`: checkpoint 1,
//! an empty table). Each pair goes into the basement being filled; a
//! basement is closed once the next pair would take it past
//! `basement_size_bytes` (packed bytes), a leaf once the next pair would
//! take it past `node_size_bytes`, so a loaded leaf is as full as the split
//! policy lets a leaf be and is not split by the next write. A closed leaf
//! gets its block number and goes to the builder's writer thread
//! (`fractaldb-loader`), which serializes it (basements compressed with
//! the dictionary's codec) and writes its block while the next leaf
//! fills: compression is most of a load's work, and this puts it on a
//! second core. At most `QUEUED_LEAVES` leaves wait for it, so a load
//! holds about `QUEUED_LEAVES + 2` leaves in memory; only each written
//! leaf's block number and first key are kept. `finish` then builds the internal levels from those, each node
//! taking at most `fanout` children, spread evenly over the level's nodes
//! (no node left with one child), every buffer empty, and writes the
//! file's second checkpoint: the table naming every block and a header
//! whose meta names the root. Until that header is durable the file's
//! newest checkpoint is the empty one, so a crash in the middle leaves an
//! empty tree in a file the environment deletes (`Env::loader` says how).
//!
//! What the loaded entries are: each is one committed value every reader
//! sees (leafentry `0x01 | value`), as a put's leafentry becomes once no
//! snapshot needs its history. Every leaf and internal node has
//! `max_msn` = the environment's MSN counter when the builder started, and
//! the meta the same, so every message later written to the tree is newer
//! than what the leaves hold (the MSN invariant `check` verifies).

use std::cmp::Ordering;

use super::basement::Basement;
use super::meta::{Meta, Settings, NO_ROOT};
use super::node::{Body, Child, Node};
use super::serialize::serialize;
use super::Comparator;
use crate::error::{Error, Result};
use crate::file::{BlockFile, BlockNum};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Leaves waiting for the writer thread, at most.
const QUEUED_LEAVES: usize = 2;

/// The writer thread: leaves to write, and its end (bytes written, or the
/// first error, after which it takes no more).
struct Writer {
    tx: SyncSender<(BlockNum, Node)>,
    handle: JoinHandle<Result<u64>>,
}

/// What `TreeBuilder::finish` wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    pub rows: u64,
    pub leaves: u64,
    pub internal_nodes: u64,
    /// Height of the root (0: the root is a leaf).
    pub height: u32,
    /// Bytes of blocks written (compressed), and of basements before compression.
    pub bytes_written: u64,
    pub raw_bytes: u64,
}

pub(crate) struct TreeBuilder {
    file: Arc<BlockFile>,
    /// `None` once joined (at `finish`, on an error, or on drop).
    writer: Option<Writer>,
    settings: Settings,
    cmp: Comparator,
    /// A custom comparator is the caller's code: its panics are caught.
    custom_cmp: bool,
    msn: u64,
    /// The leaf being filled: its closed basements, the pivots between
    /// them (each the first key of the basement after it), their packed
    /// bytes, and the basement being filled.
    basements: Vec<Basement>,
    pivots: Vec<Box<[u8]>>,
    leaf_bytes: usize,
    cur: Basement,
    /// The first key of the leaf being filled.
    leaf_first: Option<Box<[u8]>>,
    /// Leaves written: (first key, block).
    leaves: Vec<(Box<[u8]>, BlockNum)>,
    last: Option<Vec<u8>>,
    stats: LoadStats,
}

/// Bytes an entry takes in a basement's packed form.
fn entry_bytes(key: &[u8], value: &[u8]) -> usize {
    use crate::encoding::varint_len;
    varint_len(key.len() as u64) + key.len() + varint_len(value.len() as u64 + 1) + 1 + value.len()
}

impl TreeBuilder {
    pub(crate) fn new(file: BlockFile, settings: Settings, cmp: Comparator, msn: u64) -> Result<TreeBuilder> {
        let file = Arc::new(file);
        let (tx, rx) = sync_channel::<(BlockNum, Node)>(QUEUED_LEAVES);
        let (f, codec) = (file.clone(), settings.codec);
        let handle = std::thread::Builder::new()
            .name("fractaldb-loader".into())
            .spawn(move || {
                let mut bytes = 0;
                for (bn, node) in rx {
                    bytes += write_node_to(&f, bn, &node, codec)?;
                }
                Ok(bytes)
            })
            .map_err(|e| Error::io(file.path(), "spawn the loader's writer thread", e))?;
        Ok(TreeBuilder {
            file,
            writer: Some(Writer { tx, handle }),
            custom_cmp: settings.comparator.is_some(),
            settings,
            cmp,
            msn,
            basements: Vec::new(),
            pivots: Vec::new(),
            leaf_bytes: 0,
            cur: Basement::new(),
            leaf_first: None,
            leaves: Vec::new(),
            last: None,
            stats: LoadStats::default(),
        })
    }

    /// Waits for the writer thread to write what it was sent; its bytes
    /// written, or its error.
    fn join_writer(&mut self) -> Result<()> {
        let Some(w) = self.writer.take() else { return Ok(()) };
        drop(w.tx);
        match w.handle.join() {
            Ok(r) => {
                self.stats.bytes_written += r?;
                Ok(())
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    pub(crate) fn rows(&self) -> u64 {
        self.stats.rows
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Result<Ordering> {
        if !self.custom_cmp {
            return Ok((self.cmp)(a, b));
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.cmp)(a, b))).map_err(|p| {
            Error::CallbackPanicked {
                callback: format!("comparator {:?}", self.settings.comparator.as_deref().unwrap_or("")),
                message: super::panic_message(&*p),
            }
        })
    }

    /// Adds a pair. `key` must be greater than every key added before (by
    /// the dictionary's comparator): else `InvalidArgument` and nothing is
    /// added, so the tree stays sorted whatever the caller sends.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        crate::limits::check_change(super::message::MsgKind::Insert, key, value)?;
        if let Some(last) = &self.last {
            if self.compare(last, key)? != Ordering::Less {
                return Err(Error::invalid(
                    "loader keys must be added in strictly increasing order (this key is not above the last)",
                ));
            }
        }
        let size = entry_bytes(key, value);
        if !self.cur.is_empty() && self.cur.packed_bytes() + size > self.settings.basement_size_bytes {
            // `key` starts a new basement, in this leaf or the next.
            let closed = std::mem::take(&mut self.cur);
            self.leaf_bytes += closed.packed_bytes();
            self.basements.push(closed);
            if self.leaf_bytes + size > self.settings.node_size_bytes {
                self.write_leaf()?;
            } else {
                self.pivots.push(key.into());
            }
        }
        if self.leaf_first.is_none() {
            self.leaf_first = Some(key.into());
        }
        self.cur.push_committed(key, value).map_err(Error::invalid)?;
        match &mut self.last {
            Some(l) => {
                l.clear();
                l.extend_from_slice(key);
            }
            None => self.last = Some(key.to_vec()),
        }
        self.stats.rows += 1;
        Ok(())
    }

    /// Writes the leaf being filled (its closed basements and, if not
    /// empty, the current one) to a new block.
    fn write_leaf(&mut self) -> Result<()> {
        if !self.cur.is_empty() {
            let cur = std::mem::take(&mut self.cur);
            self.leaf_bytes += cur.packed_bytes();
            self.basements.push(cur);
        }
        let Some(first) = self.leaf_first.take() else { return Ok(()) };
        debug_assert_eq!(self.pivots.len() + 1, self.basements.len(), "a pivot between each two basements");
        self.stats.raw_bytes += self.leaf_bytes as u64;
        let node = Node {
            height: 0,
            pivots: std::mem::take(&mut self.pivots),
            body: Body::Leaf(std::mem::take(&mut self.basements).into_iter().map(Some).collect()),
            ..Node::new_leaf()
        };
        self.leaf_bytes = 0;
        let bn = self.file.allocate_blocknum();
        let node = Node { max_msn: self.msn, dirty: false, ..node };
        let sent = match &self.writer {
            Some(w) => w.tx.send((bn, node)).is_ok(),
            None => false,
        };
        if !sent {
            // The writer stopped on an error: that error.
            self.join_writer()?;
            return Err(Error::invalid("the loader's writer thread has stopped"));
        }
        self.stats.leaves += 1;
        self.leaves.push((first, bn));
        Ok(())
    }

    /// Writes an internal node on this thread.
    fn write_node(&mut self, node: Node) -> Result<BlockNum> {
        let node = Node { max_msn: self.msn, dirty: false, ..node };
        let bn = self.file.allocate_blocknum();
        self.stats.bytes_written += write_node_to(&self.file, bn, &node, self.settings.codec)?;
        Ok(bn)
    }

    /// Writes the last leaf and the internal levels, then the checkpoint
    /// that names them all (durable when this returns). Returns the file
    /// and what was written.
    pub(crate) fn finish(mut self) -> Result<(BlockFile, LoadStats)> {
        self.write_leaf()?;
        self.join_writer()?;
        let mut level = std::mem::take(&mut self.leaves);
        let mut height = 0;
        while level.len() > 1 {
            height += 1;
            let fanout = self.settings.fanout;
            let nodes = level.len().div_ceil(fanout);
            let mut next = Vec::with_capacity(nodes);
            let mut it = level.into_iter();
            for i in 0..nodes {
                // Spread evenly: the first `len % nodes` nodes take one more.
                let total = it.len();
                let take = total.div_ceil(nodes - i);
                let children: Vec<(Box<[u8]>, BlockNum)> = it.by_ref().take(take).collect();
                debug_assert!(!children.is_empty() && children.len() <= fanout);
                let mut children = children.into_iter();
                let (first, bn0) = children.next().expect("a node has a child");
                let mut pivots = Vec::new();
                let mut kids = vec![Child::new(bn0)];
                for (k, bn) in children {
                    pivots.push(k);
                    kids.push(Child::new(bn));
                }
                let node = Node { height, pivots, body: Body::Internal(kids), ..Node::new_leaf() };
                let bn = self.write_node(node)?;
                self.stats.internal_nodes += 1;
                next.push((first, bn));
            }
            level = next;
        }
        self.stats.height = height;
        let root = level.first().map_or(NO_ROOT, |&(_, bn)| bn);
        let meta = Meta {
            root,
            max_msn: self.msn,
            ckpt_lsn: 0,
            next_txid: 0,
            settings: self.settings.clone(),
            counts: [0; crate::txn::counts::COUNTERS],
        };
        self.file.begin_checkpoint();
        self.file.finish_checkpoint(&meta.encode())?;
        // The writer thread is joined: this is the file's last handle once
        // the builder is gone.
        let (file, stats) = (self.file.clone(), self.stats);
        drop(self);
        let file = Arc::try_unwrap(file).map_err(|_| Error::invalid("the loader's file is still shared"))?;
        Ok((file, stats))
    }
}

impl Drop for TreeBuilder {
    /// An abandoned load: the writer thread ends before the file goes.
    fn drop(&mut self) {
        if let Some(w) = self.writer.take() {
            drop(w.tx);
            let _ = w.handle.join();
        }
    }
}

/// Serializes `node` and writes it as block `bn`; its bytes.
fn write_node_to(file: &BlockFile, bn: BlockNum, node: &Node, codec: crate::file::Codec) -> Result<u64> {
    // Loaded entries are single committed values: nothing to collect.
    let s = serialize(node, codec, 0)?;
    file.write_block(bn, &s.bytes, s.header_len)?;
    Ok(s.bytes.len() as u64)
}
