//! Nodes as they live in the cache.
//!
//! An internal node holds pivots, child block numbers and one message buffer
//! per child. A leaf holds pivots between its basements and the basements
//! themselves, each of which may be absent from memory (evicted, or never
//! read) while the node's header stays cached: a point read then fetches and
//! decompresses only the one basement it needs.
//!
//! Pivot rule, for internal nodes and leaves alike: child (or basement) `i`
//! holds the keys `k` with `pivots[i-1] <= k < pivots[i]`.
//!
//! Invariant: a node is changed only when every partition is in memory
//! (`all_loaded`), so a dirty node never refers to partitions of an older
//! version of itself on disk.

use super::basement::Basement;
use super::buffer::MsgBuffer;
use super::Comparator;
use crate::file::{BlockNum, Extent};
use std::sync::atomic::AtomicBool;

/// Memory a node costs besides its pivots and partitions.
const NODE_OVERHEAD_BYTES: usize = 256;

/// What the allocator adds to each heap chunk on average (glibc: an 8-byte
/// header and rounding to 16), counted per allocation of a basement
/// (`Node::mem_bytes`).
const ALLOC_OVERHEAD_BYTES: usize = 16;

/// The heap chunk glibc gives an allocation of `n` bytes: `n` plus its
/// 8-byte header, rounded up to 16, at least 32.
fn heap_chunk(n: usize) -> usize {
    ((n + 8 + 15) & !15).max(32)
}

/// The on-disk place of one partition inside a node's block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartInfo {
    /// Offset from the start of the block.
    pub offset: u32,
    pub disk_len: u32,
    pub raw_len: u32,
    pub codec: u8,
    pub crc32c: u32,
}

/// Messages for one child written out to a block of their own (a *spill*)
/// instead of into the child: see `flush.rs`, Spills. The block holds a
/// serialized `MsgBuffer` (`serialize::encode_spill`).
#[derive(Clone, Debug)]
pub(crate) struct Spill {
    pub bn: BlockNum,
    /// Bytes of the serialized buffer before compression.
    pub raw_len: u32,
    /// Messages in it (broadcasts included).
    pub count: u32,
    /// A Bloom filter over its keys (`bloom.rs`); empty: none, read it
    /// for every key.
    pub bloom: Box<[u8]>,
    /// This process's name for the spill's messages, never stored: given
    /// when the entry is made (`Spill::new`) or read from its parent's
    /// block, kept by copies of the entry. Entries with one id hold one
    /// block's messages, so a cursor may reuse what it decoded for one of
    /// them (`cursor.rs`, `SpillCache`). The block number is not such a
    /// name: a merged spill's number is freed and may be taken by a later
    /// spill.
    pub id: u64,
}

/// Two entries are equal when they name the same block with the same
/// contents; `id` is the process's, not the spill's.
impl PartialEq for Spill {
    fn eq(&self, other: &Spill) -> bool {
        (self.bn, self.raw_len, self.count, &self.bloom)
            == (other.bn, other.raw_len, other.count, &other.bloom)
    }
}

impl Eq for Spill {}

impl Spill {
    pub(crate) fn new(bn: BlockNum, raw_len: u32, count: u32, bloom: Box<[u8]>) -> Spill {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Spill { bn, raw_len, count, bloom, id }
    }

    /// False only if the spill certainly holds no message for `key`.
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        super::bloom::may_contain(&self.bloom, key)
    }
}

/// Memory a spill's entry costs in its parent.
const SPILL_OVERHEAD_BYTES: usize = 32;

/// One child of an internal node and the messages waiting above it.
///
/// Invariant (checked by `check`): the messages for the child are in
/// `spills`, oldest spill first, then in `buf`; every message of a spill is
/// older than every message of a later spill and of `buf`, and newer than
/// everything below the child.
pub(crate) struct Child {
    pub bn: BlockNum,
    /// Empty, and not to be used, while `loaded` is false: the buffer is
    /// then only on disk, at `disk_parts[i]`.
    pub buf: MsgBuffer,
    pub loaded: bool,
    /// Older messages for the child, in blocks of their own, oldest first.
    /// Part of the node's header: always in memory.
    pub spills: Vec<Spill>,
}

impl Child {
    /// A child with an empty buffer in memory.
    pub(crate) fn new(bn: BlockNum) -> Child {
        Child { bn, buf: MsgBuffer::default(), loaded: true, spills: Vec::new() }
    }

    /// Raw bytes of the child's spills.
    pub(crate) fn spilled_bytes(&self) -> usize {
        self.spills.iter().map(|s| s.raw_len as usize).sum()
    }

    /// True if messages wait for the child, in memory, on disk or in spills.
    pub(crate) fn has_messages(&self) -> bool {
        !self.loaded || self.buf.len() > 0 || !self.spills.is_empty()
    }
}

pub(crate) enum Body {
    Internal(Vec<Child>),
    /// `None` is a basement not in memory; its bytes are at `disk_parts[i]`.
    Leaf(Vec<Option<Basement>>),
}

/// A node of a dictionary's tree.
pub(crate) struct Node {
    /// 0 for leaves.
    pub height: u32,
    pub pivots: Vec<Box<[u8]>>,
    pub body: Body,
    /// Leaves: the highest MSN ever applied to this leaf. Every message still
    /// in an ancestor's buffer for this leaf has a higher MSN.
    pub max_msn: u64,
    /// True when the node differs from its on-disk version.
    pub dirty: bool,
    /// The block holding this node's clean version, if it was ever written.
    pub disk: Option<Extent>,
    /// Partition table of the on-disk version.
    pub disk_parts: Vec<PartInfo>,
    /// Dirty when a checkpoint began and not written or copied since: the
    /// node is still in its begin-time state, which that checkpoint must
    /// write. Whoever changes it first copies it (`Tree::cow`).
    ///
    /// Atomic so a checkpoint's begin can mark a node under a shared lock,
    /// without waiting for the evictor's write-back (which holds an
    /// upgradable lock through its I/O); every other change to it happens
    /// under the node's write lock.
    pub ckpt_pending: AtomicBool,
    /// A checkpoint is writing a copy of this node as it is; cleared by any
    /// change (`Tree::cow`), so the checkpoint knows whether its block may
    /// also serve as the node's current version.
    pub ckpt_writing: bool,
}

impl Node {
    pub(crate) fn new_leaf() -> Node {
        Node {
            height: 0,
            pivots: Vec::new(),
            body: Body::Leaf(vec![Some(Basement::new())]),
            max_msn: 0,
            dirty: true,
            disk: None,
            disk_parts: Vec::new(),
            ckpt_pending: AtomicBool::new(false),
            ckpt_writing: false,
        }
    }

    /// A copy of a dirty node's contents, for a checkpoint to write while
    /// the node itself moves on. A dirty node has every partition in memory.
    pub(crate) fn snapshot(&self) -> Node {
        debug_assert!(self.all_loaded(), "a dirty node has all its partitions");
        let body = match &self.body {
            Body::Internal(c) => Body::Internal(
                c.iter()
                    .map(|c| Child { bn: c.bn, buf: c.buf.clone(), loaded: true, spills: c.spills.clone() })
                    .collect(),
            ),
            Body::Leaf(b) => Body::Leaf(b.clone()),
        };
        Node {
            height: self.height,
            pivots: self.pivots.clone(),
            body,
            max_msn: self.max_msn,
            dirty: true,
            disk: None,
            disk_parts: Vec::new(),
            ckpt_pending: AtomicBool::new(false),
            ckpt_writing: false,
        }
    }

    pub(crate) fn is_leaf(&self) -> bool {
        // Height and body agree (`retire`), so a check of `is_leaf` makes
        // `children()` safe.
        debug_assert!(
            self.height == 0 || matches!(self.body, Body::Internal(_)),
            "a leaf's body at height > 0"
        );
        self.height == 0
    }

    /// Takes the body of a node that leaves the tree (merged into its
    /// sibling, or collapsed into the root) and makes it an empty leaf,
    /// height 0 included. A thread that pinned the node before it went and
    /// locks it after (a queued flush or merge, a writer helping the
    /// cleaner) then sees a leaf with nothing in it and lets it be, as
    /// every such path checks `is_leaf` first. With only the body replaced
    /// it saw an internal node without children: "children() on a leaf"
    /// in `merge_step`.
    pub(crate) fn retire(&mut self) -> Body {
        self.height = 0;
        std::mem::replace(&mut self.body, Body::Leaf(Vec::new()))
    }

    /// Number of children (internal) or basements (leaf).
    pub(crate) fn n_parts(&self) -> usize {
        match &self.body {
            Body::Internal(c) => c.len(),
            Body::Leaf(b) => b.len(),
        }
    }

    /// Index of the child or basement whose range holds `key`.
    pub(crate) fn part_for(&self, key: &[u8], cmp: Comparator) -> usize {
        self.pivots.partition_point(|p| cmp(p, key) != std::cmp::Ordering::Greater)
    }

    /// Bounds [lo, hi) of part `i`, within the node's own bounds.
    pub(crate) fn part_bounds<'a>(
        &'a self,
        i: usize,
        lo: Option<&'a [u8]>,
        hi: Option<&'a [u8]>,
    ) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let l = if i == 0 { lo } else { Some(&self.pivots[i - 1][..]) };
        let h = if i == self.pivots.len() { hi } else { Some(&self.pivots[i][..]) };
        (l, h)
    }

    // These four panic on the other kind of node; `track_caller` makes the
    // panic name the line that misused them.
    #[track_caller]
    pub(crate) fn children(&self) -> &[Child] {
        match &self.body {
            Body::Internal(c) => c,
            Body::Leaf(_) => panic!("children() on a leaf"),
        }
    }

    #[track_caller]
    pub(crate) fn children_mut(&mut self) -> &mut Vec<Child> {
        match &mut self.body {
            Body::Internal(c) => c,
            Body::Leaf(_) => panic!("children_mut() on a leaf"),
        }
    }

    #[track_caller]
    pub(crate) fn basements(&self) -> &[Option<Basement>] {
        match &self.body {
            Body::Leaf(b) => b,
            Body::Internal(_) => panic!("basements() on an internal node"),
        }
    }

    #[track_caller]
    pub(crate) fn basements_mut(&mut self) -> &mut Vec<Option<Basement>> {
        match &mut self.body {
            Body::Leaf(b) => b,
            Body::Internal(_) => panic!("basements_mut() on an internal node"),
        }
    }

    pub(crate) fn all_loaded(&self) -> bool {
        match &self.body {
            Body::Internal(c) => c.iter().all(|c| c.loaded),
            Body::Leaf(b) => b.iter().all(|b| b.is_some()),
        }
    }

    /// Bytes waiting in this node's buffers (0 for leaves).
    pub(crate) fn buffer_bytes(&self) -> usize {
        match &self.body {
            Body::Internal(c) => c.iter().map(|c| c.buf.mem_bytes()).sum(),
            Body::Leaf(_) => 0,
        }
    }

    /// Packed bytes of the basements in memory (leaves), the leaf's size for
    /// the split policy.
    pub(crate) fn leaf_bytes(&self) -> usize {
        match &self.body {
            Body::Leaf(b) => b.iter().flatten().map(|b| b.packed_bytes()).sum(),
            Body::Internal(_) => 0,
        }
    }

    /// Memory this node holds, as charged to the cache.
    pub(crate) fn mem_bytes(&self) -> usize {
        use std::mem::size_of;
        // Each slot as the struct it is plus what it allocates (with the
        // allocator's per-chunk overhead): a leaf header keeps one pivot and
        // one empty basement slot per basement, so with small basements
        // these are a real share of the cache (a flat 32 a slot had left
        // about 70 bytes a basement uncharged).
        let pivots: usize = self.pivots.iter().map(|p| size_of::<Box<[u8]>>() + heap_chunk(p.len())).sum();
        let parts: usize = match &self.body {
            Body::Internal(c) => c
                .iter()
                .map(|c| {
                    let spills: usize = c.spills.iter().map(|s| SPILL_OVERHEAD_BYTES + s.bloom.len()).sum();
                    size_of::<Child>() + c.buf.mem_bytes() + spills
                })
                .sum(),
            Body::Leaf(b) => b
                .iter()
                .map(|b| {
                    size_of::<Option<Basement>>()
                        + b.as_ref().map_or(0, |b| b.mem_bytes() + 2 * ALLOC_OVERHEAD_BYTES)
                })
                .sum(),
        };
        NODE_OVERHEAD_BYTES + pivots + parts + self.disk_parts.len() * size_of::<PartInfo>()
    }

    /// True if some partition is in memory and holds something (an empty
    /// buffer stays loaded: it costs nothing, and dropping it would make
    /// the next read fetch it from disk).
    pub(crate) fn has_loaded_parts(&self) -> bool {
        match &self.body {
            Body::Internal(c) => c.iter().any(|c| c.loaded && c.buf.len() > 0),
            Body::Leaf(b) => b.iter().any(|b| b.is_some()),
        }
    }

    /// Drops the in-memory partitions (basements or buffers) of a clean
    /// node, keeping its header so the next read fetches one partition.
    /// Returns true if anything was dropped.
    pub(crate) fn evict_partitions(&mut self) -> bool {
        if self.dirty || self.disk.is_none() || !self.has_loaded_parts() {
            return false;
        }
        match &mut self.body {
            Body::Leaf(b) => b.iter_mut().for_each(|b| *b = None),
            Body::Internal(c) => c.iter_mut().filter(|c| c.buf.len() > 0).for_each(|c| {
                c.buf = MsgBuffer::default();
                c.loaded = false;
            }),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf header whose basements were evicted (pivots and empty slots)
    /// is charged at least what its structs take and what its pivots
    /// allocate: with 8 KiB basements a leaf keeps about a hundred of them,
    /// and the cache's budget must see them (tests/memory.rs).
    #[test]
    fn a_leaf_header_is_charged_its_slots() {
        let n: usize = 100;
        let mut leaf = Node::new_leaf();
        leaf.pivots = (0..n as u64 - 1).map(|i| i.to_be_bytes().to_vec().into_boxed_slice()).collect();
        *leaf.basements_mut() = (0..n).map(|_| None).collect();
        leaf.disk_parts = vec![PartInfo { offset: 0, disk_len: 0, raw_len: 0, codec: 0, crc32c: 0 }; n];
        let slots = n * std::mem::size_of::<Option<Basement>>()
            + (n - 1) * (std::mem::size_of::<Box<[u8]>>() + 32)
            + n * std::mem::size_of::<PartInfo>();
        assert!(leaf.mem_bytes() >= slots, "{} < {slots}", leaf.mem_bytes());
        // A loaded basement adds its arrays and their chunks.
        let empty = leaf.mem_bytes();
        leaf.basements_mut()[0] = Some(Basement::new());
        assert!(leaf.mem_bytes() >= empty + 2 * ALLOC_OVERHEAD_BYTES);
        assert_eq!(heap_chunk(8), 32);
        assert_eq!(heap_chunk(40), 48);
    }

    /// A node merged or collapsed away is an empty leaf in every respect:
    /// `is_leaf` (what the paths that find it later check) says so, and it
    /// has no parts.
    #[test]
    fn a_retired_node_is_an_empty_leaf() {
        let mut n = Node::new_leaf();
        n.height = 2;
        n.body = Body::Internal(vec![Child::new(7), Child::new(8)]);
        n.pivots = vec![b"m".to_vec().into_boxed_slice()];
        assert!(!n.is_leaf());
        let body = n.retire();
        assert!(matches!(body, Body::Internal(ref c) if c.len() == 2));
        assert!(n.is_leaf());
        assert_eq!(n.n_parts(), 0);
        assert!(n.basements().is_empty());
    }
}
