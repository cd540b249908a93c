//! `Dictionary`: the handle to one dictionary, its autocommit reads and
//! writes.

use super::*;

/// A handle to one dictionary: an ordered map from byte strings to byte
/// strings. Cheap to clone; every clone refers to the same dictionary.
#[derive(Clone)]
pub struct Dictionary {
    pub(crate) tree: Arc<Tree>,
    pub(super) name: String,
    pub(super) txns: Arc<TxnManager>,
}

impl Dictionary {
    /// The name this handle was opened under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets `key` to `value`. Keys are at most [`MAX_KEY_BYTES`] and values
    /// [`MAX_VALUE_BYTES`] long (else `Error::TooLarge`, nothing written);
    /// the empty key is a key like any other.
    ///
    /// [`MAX_KEY_BYTES`]: crate::MAX_KEY_BYTES
    /// [`MAX_VALUE_BYTES`]: crate::MAX_VALUE_BYTES
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        limits::check_change(MsgKind::Insert, key, value)?;
        self.txns.autocommit(&self.tree, &[(key, &MsgBody::plain(MsgKind::Insert, 0, value))])
    }

    /// Removes `key` (nothing happens if it is absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        limits::check_key(key)?;
        self.txns.autocommit(&self.tree, &[(key, &MsgBody::plain(MsgKind::Delete, 0, &[]))])
    }

    /// Deletes every key `k` with `lo <= k < hi` under the dictionary's
    /// comparator, as one message and one log record, without reading the
    /// range: its cost does not grow with the keys it covers (they are
    /// dropped as the message reaches the leaves). Readers see the keys gone
    /// at once; a snapshot taken before it still sees them. Each bound is at
    /// most [`MAX_KEY_BYTES`] (else `Error::TooLarge`); `lo` above `hi` is
    /// `Error::InvalidArgument`, and `lo == hi` deletes nothing. Writers of
    /// keys in `[lo, hi]` wait for it as for a delete of their key.
    ///
    /// [`MAX_KEY_BYTES`]: crate::MAX_KEY_BYTES
    pub fn delete_range(&self, lo: &[u8], hi: &[u8]) -> Result<()> {
        limits::check_key(lo)?;
        limits::check_key(hi)?;
        match self.tree.guarded_read(|| Ok((self.tree.cmp)(lo, hi)))? {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => return Ok(()),
            std::cmp::Ordering::Greater => {
                return Err(Error::invalid("delete_range: the lower bound is above the upper bound"))
            }
        }
        self.txns.autocommit(&self.tree, &[(&[][..], &MsgBody::range_delete(lo, hi))])
    }

    /// Upserts `key` through update function `fn_id` with `arg`, without
    /// reading: the function runs when the message reaches the leaf or a reader.
    pub fn update(&self, key: &[u8], fn_id: u8, arg: &[u8]) -> Result<()> {
        limits::check_change(MsgKind::Update, key, arg)?;
        self.txns.autocommit(&self.tree, &[(key, &MsgBody::plain(MsgKind::Update, fn_id, arg))])
    }

    /// Runs update function `fn_id` with `arg` on every key, without reading.
    pub fn broadcast_update(&self, fn_id: u8, arg: &[u8]) -> Result<()> {
        limits::check_change(MsgKind::Broadcast, &[], arg)?;
        self.txns.autocommit(&self.tree, &[(&[][..], &MsgBody::plain(MsgKind::Broadcast, fn_id, arg))])
    }

    /// Applies a batch of changes as one step. A batch holding a change
    /// past the limits (see [`WriteBatch`]) is refused whole.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        batch.check()?;
        if batch.ops.is_empty() {
            return Ok(());
        }
        self.txns.autocommit(&self.tree, &batch.msgs())
    }

    /// The value of `key` (its newest committed version), if any.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        limits::check_key(key)?;
        self.txns.read_latest(&self.tree, key)
    }

    /// A cursor, not yet positioned, reading the newest committed versions.
    pub fn cursor(&self) -> Cursor {
        Cursor::new(self.tree.clone(), self.txns.latest_view())
    }

    /// Iterates over the keys in `[lo, hi)` (`None`: unbounded) in order,
    /// or in reverse order when `reverse` is set.
    pub fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>, reverse: bool) -> Range {
        Range::new(self.cursor(), self.tree.cmp, lo, hi, reverse)
    }

    /// About how many keys lie in `[lo, hi)` (`None`: unbounded), read from
    /// the two root-to-leaf paths to the bounds, never from the range
    /// itself: exact for a range within one basement (or one leaf in
    /// memory), else averaged from the nodes read. Counts what the leaves
    /// hold, committed or not; messages still in buffers are not counted.
    pub fn estimate_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
        self.tree.check_open()?;
        self.tree.estimate_range(lo, hi)
    }

    /// [`Dictionary::estimate_range`] with the bytes the range's entries
    /// take in the leaves, uncompressed: its keys times the average entry
    /// of the basements in memory on the two paths.
    pub fn estimate_range_size(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<crate::RangeEstimate> {
        self.tree.check_open()?;
        self.tree.estimate_range_size(lo, hi)
    }

    /// Walks the whole dictionary and verifies every invariant.
    pub fn check(&self) -> Result<CheckReport> {
        self.tree.check_open()?;
        self.tree.guarded_read(|| self.tree.check())
    }

    /// Whether the dictionary's file is open with O_DIRECT (the setting was
    /// on and the file system allowed it).
    pub fn uses_direct_io(&self) -> bool {
        self.tree.file.direct_io()
    }

    /// The codec the dictionary's leaves are written with: the one it was
    /// created with (`DictOptions::codec`), read back from its file at open.
    pub fn codec(&self) -> Codec {
        self.tree.settings.codec
    }

    /// The settings the dictionary was created with, read back from its
    /// file at open: those of `DictOptions` it was created with, whatever
    /// the defaults are now.
    pub fn options(&self) -> crate::DictOptions {
        (&self.tree.settings).into()
    }

    /// The path of the dictionary's file.
    pub fn file_path(&self) -> &Path {
        self.tree.path()
    }

    /// Bytes of the dictionary's file, and of the blocks in use in it.
    pub fn space(&self) -> Result<SpaceStats> {
        self.tree.check_open()?;
        Ok(self.tree.file.space())
    }
}
