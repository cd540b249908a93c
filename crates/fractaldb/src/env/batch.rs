//! `WriteBatch`: changes to one dictionary applied as one step.

use super::*;

/// Changes to apply to one dictionary as one step.
///
/// Keys and values are kept back to back in one buffer, which `clear`
/// keeps: a batch reused for the next one allocates nothing per change.
///
/// Limits: each key and value as for [`Dictionary::put`], and the batch as
/// a whole at most [`MAX_BATCH_BYTES`] (each change counted as its key, its
/// value and [`BATCH_BYTES_PER_CHANGE`]). A change past them is not added
/// (nothing of it is copied) and neither is any later one: writing the
/// batch then fails with `Error::TooLarge` and writes nothing, until
/// `clear`.
///
/// [`MAX_BATCH_BYTES`]: crate::MAX_BATCH_BYTES
/// [`BATCH_BYTES_PER_CHANGE`]: crate::BATCH_BYTES_PER_CHANGE
#[derive(Default, Clone)]
pub struct WriteBatch {
    /// Each change's key then its value.
    data: Vec<u8>,
    pub(super) ops: Vec<BatchOp>,
    /// What the changes count against `MAX_BATCH_BYTES`.
    counted: usize,
    /// The first change refused (`Error::TooLarge`'s fields): the batch
    /// takes no more changes and cannot be written until `clear`.
    refused: Option<(&'static str, u64, u64)>,
}

/// One change of a batch: its key at `data[at..at + key_len]`, its value
/// right after.
#[derive(Clone, Copy)]
pub(super) struct BatchOp {
    kind: MsgKind,
    fn_id: u8,
    at: usize,
    key_len: usize,
    val_len: usize,
}

impl WriteBatch {
    pub fn new() -> Self {
        WriteBatch::default()
    }

    fn push(&mut self, kind: MsgKind, fn_id: u8, key: &[u8], val: &[u8]) {
        // Checked before anything is copied: a 5 GiB value costs nothing.
        if self.refused.is_some() {
            return;
        }
        let counted = match limits::check_change(kind, key, val) {
            Ok(n) => self.counted + n,
            Err(Error::TooLarge { what, len, limit }) => {
                self.refused = Some((what, len, limit));
                return;
            }
            Err(e) => unreachable!("check_change returns TooLarge only: {e}"),
        };
        if counted > limits::MAX_BATCH_BYTES {
            self.refused = Some(("batch", counted as u64, limits::MAX_BATCH_BYTES as u64));
            return;
        }
        self.counted = counted;
        let at = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(val);
        self.ops.push(BatchOp { kind, fn_id, at, key_len: key.len(), val_len: val.len() });
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(MsgKind::Insert, 0, key, value);
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.push(MsgKind::Delete, 0, key, &[]);
    }

    /// Deletes every key `k` with `lo <= k < hi` under the dictionary's
    /// comparator, as one message (see [`Dictionary::delete_range`]). Each
    /// bound is a key (at most `MAX_KEY_BYTES`); a batch holding a range
    /// with `lo` above `hi` fails to write with `Error::InvalidArgument`.
    /// Changes of the batch apply in the order added: a put after the range
    /// delete of its key stays, one before is deleted.
    pub fn delete_range(&mut self, lo: &[u8], hi: &[u8]) {
        if self.refused.is_some() {
            return;
        }
        if let Some(b) = [lo, hi].into_iter().find(|b| b.len() > limits::MAX_KEY_BYTES) {
            self.refused = Some(("key", b.len() as u64, limits::MAX_KEY_BYTES as u64));
            return;
        }
        self.push(MsgKind::RangeDelete, 0, &[], &crate::tree::message::range_val(lo, hi));
    }

    pub fn update(&mut self, key: &[u8], fn_id: u8, arg: &[u8]) {
        self.push(MsgKind::Update, fn_id, key, arg);
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// The changes, in the order they were added.
    pub(crate) fn msgs(&self) -> Vec<PlainMsg<'_>> {
        let data = &self.data[..];
        let msg = |o: &BatchOp| {
            let val_at = o.at + o.key_len;
            PlainMsg {
                kind: o.kind,
                fn_id: o.fn_id,
                key: &data[o.at..val_at],
                val: &data[val_at..val_at + o.val_len],
            }
        };
        self.ops.iter().map(msg).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.ops.clear();
        self.counted = 0;
        self.refused = None;
    }

    /// `Err(TooLarge)` if a change was refused (see the type's documentation).
    pub(crate) fn check(&self) -> Result<()> {
        match self.refused {
            Some((what, len, limit)) => Err(Error::TooLarge { what, len, limit }),
            None => Ok(()),
        }
    }
}
