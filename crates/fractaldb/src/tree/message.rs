//! Messages: every change to a dictionary is one.
//!
//! A message travels from the root's buffer down to the leaf that holds its
//! key, one flush per level. It carries a message sequence number (MSN),
//! taken from one counter per environment while the root is locked, so along
//! any root-to-leaf path a deeper message is always older than a shallower
//! one. Applying messages to a value in MSN order gives the value a reader
//! must see; nothing on the write path reads a leaf.
//!
//! Wire form (inside a buffer partition, see `serialize.rs`):
//! `msn u64 | kind u8 | fn_id u8 | txid varint | [sp varint] | key (varint len + bytes) | value (varint len + bytes)`.
//! Bit 0x80 of `kind` marks a provisional message (a write of a transaction
//! that has not committed); only those carry `sp`, the savepoint id the write
//! was made under. Bit 0x40, only beside 0x80, marks a provisional message
//! that also commits: a `Commit` folded into it (`MsgBuffer::fold_commits`),
//! applied as the write and then the commit. A message without bit 0x80 is
//! committed when it is made: `txid` 0 (internal writes, visible to every
//! reader) or an autocommit write's transaction id. See `leafentry.rs` for what each kind does to a
//! key's versions.

use std::sync::Arc;

use crate::encoding::{put_bytes, put_varint, DecodeResult, Reader};

/// An upsert callback: given the key, the current value (if any) and the
/// message's argument, returns the new value, or `None` to delete the key.
pub type UpdateFn = Arc<dyn Fn(&[u8], Option<&[u8]>, &[u8]) -> Option<Vec<u8>> + Send + Sync>;

/// The update functions registered on an environment, by id: a table of
/// 256, as every upsert a leaf or reader applies looks its function up (a
/// `HashMap` spent a tenth of a roll-up's leaf work hashing the id).
#[derive(Clone)]
pub(crate) struct UpdateFns {
    table: Vec<Option<UpdateFn>>,
}

impl UpdateFns {
    pub(crate) fn new() -> UpdateFns {
        UpdateFns { table: vec![None; 256] }
    }

    pub(crate) fn insert(&mut self, id: u8, f: UpdateFn) {
        self.table[usize::from(id)] = Some(f);
    }

    pub(crate) fn get(&self, id: &u8) -> Option<&UpdateFn> {
        self.table[usize::from(*id)].as_ref()
    }

    pub(crate) fn contains_key(&self, id: &u8) -> bool {
        self.get(id).is_some()
    }
}

impl FromIterator<(u8, UpdateFn)> for UpdateFns {
    fn from_iter<I: IntoIterator<Item = (u8, UpdateFn)>>(iter: I) -> UpdateFns {
        let mut fns = UpdateFns::new();
        for (id, f) in iter {
            fns.insert(id, f);
        }
        fns
    }
}

/// What a message does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum MsgKind {
    /// Set the key's value.
    Insert = 1,
    /// Remove the key.
    Delete = 2,
    /// Upsert: run update function `fn_id` on the old value with the argument.
    Update = 3,
    /// Run update function `fn_id` on every existing key (key is empty).
    Broadcast = 4,
    /// Transaction `txid` committed: its provisional version of the key
    /// becomes a committed version. A no-op if the key has none of its.
    Commit = 5,
    /// Transaction `txid` rolled back the savepoints with ids in
    /// `[lo, hi)` (the value: `lo varint | hi varint`): its provisional
    /// versions made under them are dropped. A no-op if there are none, so
    /// replaying it twice is harmless.
    Abort = 6,
    /// Delete every key `k` with `lo <= k < hi` under the dictionary's
    /// comparator (the value: `lo (varint len + bytes) | hi (varint len +
    /// bytes)`, [`range_val`]; the key is empty). One message however many
    /// keys it covers: like a broadcast it is kept beside a buffer's point
    /// messages and applied by MSN order to each key it covers, but a flush
    /// copies it only into the children whose key ranges meet `[lo, hi)`.
    RangeDelete = 7,
    /// `Commit` for every key in a range: what a transaction's provisional
    /// range delete needs at its commit (the keys it covered are not
    /// known). Wide, like `RangeDelete`; the value is `range_val(lo, hi)`.
    CommitRange = 8,
    /// `Abort` for every key in a range; the value is `range_val(lo, hi)`
    /// followed by an `Abort`'s savepoint range.
    AbortRange = 9,
}

impl MsgKind {
    pub(crate) fn from_u8(b: u8) -> Option<MsgKind> {
        Some(match b {
            1 => MsgKind::Insert,
            2 => MsgKind::Delete,
            3 => MsgKind::Update,
            4 => MsgKind::Broadcast,
            5 => MsgKind::Commit,
            6 => MsgKind::Abort,
            7 => MsgKind::RangeDelete,
            8 => MsgKind::CommitRange,
            9 => MsgKind::AbortRange,
            _ => return None,
        })
    }
}

/// The body of a message, without its key and MSN (which a buffer keeps in
/// its index). Its value is owned (`Box<[u8]>`, the default) where the body
/// is kept, and borrowed (`&[u8]`) where messages are only applied: a flush
/// applies a buffer's messages to a leaf straight from the buffer's bytes,
/// with no allocation per message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MsgBody<V = Box<[u8]>> {
    pub kind: MsgKind,
    pub fn_id: u8,
    /// The transaction the message belongs to; 0 for internal writes.
    pub txid: u64,
    /// True for a transaction's uncommitted write (see the module doc).
    pub provisional: bool,
    /// Only with `provisional`: the transaction's `Commit` for the key was
    /// folded into this message, which then means the write followed at
    /// once by the commit.
    pub commits: bool,
    /// The savepoint id a provisional write was made under (0: none).
    pub sp: u32,
    /// The value for `Insert`, the argument for `Update`/`Broadcast`, the
    /// savepoint range for `Abort`.
    pub val: V,
}

/// Flag on the wire `kind` byte: the message is provisional.
pub(crate) const KIND_PROVISIONAL: u8 = 0x80;
/// Flag on the wire `kind` byte, only beside `KIND_PROVISIONAL`: the
/// message also commits its transaction's versions of the key.
pub(crate) const KIND_COMMITS: u8 = 0x40;

impl MsgBody {
    /// A committed message of no transaction (visible to every reader).
    pub(crate) fn plain(kind: MsgKind, fn_id: u8, val: &[u8]) -> MsgBody {
        MsgBody { kind, fn_id, txid: 0, provisional: false, commits: false, sp: 0, val: val.into() }
    }

    /// A committed message of transaction `txid` (clean-ups, autocommit).
    pub(crate) fn plain_txn(kind: MsgKind, txid: u64, val: Box<[u8]>) -> MsgBody {
        MsgBody { kind, fn_id: 0, txid, provisional: false, commits: false, sp: 0, val }
    }

    /// Reads what `encode_head` wrote; the caller fills `val`.
    pub(crate) fn decode_head(r: &mut Reader) -> DecodeResult<MsgBody> {
        let k = r.u8()?;
        let kind = MsgKind::from_u8(k & !(KIND_PROVISIONAL | KIND_COMMITS))
            .ok_or_else(|| format!("unknown message kind {k}"))?;
        let provisional = k & KIND_PROVISIONAL != 0;
        let commits = k & KIND_COMMITS != 0;
        if commits && !provisional {
            return Err(format!("message kind {k:#x}: commits but is not provisional"));
        }
        let fn_id = r.u8()?;
        let txid = r.varint()?;
        let sp = if provisional { r.varint()? } else { 0 };
        let sp = u32::try_from(sp).map_err(|_| format!("savepoint id {sp} out of range"))?;
        if provisional
            && (txid == 0
                || !matches!(
                    kind,
                    MsgKind::Insert | MsgKind::Delete | MsgKind::Update | MsgKind::RangeDelete
                ))
        {
            return Err(format!("a provisional {kind:?} message of transaction {txid}"));
        }
        Ok(MsgBody { kind, fn_id, txid, provisional, commits, sp, val: Box::new([]) })
    }

    /// A committed range delete of `[lo, hi)`, of no transaction yet.
    pub(crate) fn range_delete(lo: &[u8], hi: &[u8]) -> MsgBody {
        MsgBody::plain(MsgKind::RangeDelete, 0, &range_val(lo, hi))
    }

    /// An `Abort` message's value for the savepoint range `[lo, hi)`.
    pub(crate) fn abort_val(lo: u32, hi: u32) -> Box<[u8]> {
        let mut v = Vec::new();
        put_varint(&mut v, lo as u64);
        put_varint(&mut v, hi as u64);
        v.into()
    }
}

impl<V: AsRef<[u8]>> MsgBody<V> {
    /// Writes `kind u8 | fn_id u8 | txid varint | [sp varint]`.
    pub(crate) fn encode_head(&self, out: &mut Vec<u8>) {
        debug_assert!(self.provisional || !self.commits, "a committing message is provisional");
        let flags = match (self.provisional, self.commits) {
            (false, _) => 0,
            (true, false) => KIND_PROVISIONAL,
            (true, true) => KIND_PROVISIONAL | KIND_COMMITS,
        };
        out.push(self.kind as u8 | flags);
        out.push(self.fn_id);
        put_varint(out, self.txid);
        if self.provisional {
            put_varint(out, self.sp as u64);
        }
    }

    /// The same body with `stamp` (if any) applied: a transaction's (or an
    /// autocommit's) id and savepoint, put on a plain message as it is
    /// written. Stamps go on plain messages only.
    pub(crate) fn stamp(self, stamp: Option<Stamp>) -> MsgBody<V> {
        match stamp {
            Some(s) => {
                debug_assert!(self.txid == 0 && !self.provisional, "a stamp goes on a plain message");
                MsgBody { txid: s.txid, provisional: s.provisional, sp: s.sp, ..self }
            }
            None => self,
        }
    }

    /// The same head with another value.
    pub(crate) fn with_val<W>(&self, val: W) -> MsgBody<W> {
        MsgBody {
            kind: self.kind,
            fn_id: self.fn_id,
            txid: self.txid,
            provisional: self.provisional,
            commits: self.commits,
            sp: self.sp,
            val,
        }
    }

    /// The body with its value borrowed.
    pub(crate) fn borrowed(&self) -> MsgBody<&[u8]> {
        self.with_val(self.val.as_ref())
    }

    /// Whether the message applies to many keys, not to its own (empty)
    /// key: a broadcast or a range delete. Such messages are kept apart from
    /// a buffer's key index (`MsgBuffer::broadcasts`), in MSN order.
    pub(crate) fn is_wide(&self) -> bool {
        matches!(
            self.kind,
            MsgKind::Broadcast | MsgKind::RangeDelete | MsgKind::CommitRange | MsgKind::AbortRange
        )
    }

    /// The bounds `[lo, hi)` of a range delete, borrowed from its value.
    /// Only for values `check_range_val` accepted (every decoder of a
    /// buffer or log record checks them), so a bad one is a bug.
    pub(crate) fn range_bounds(&self) -> (&[u8], &[u8]) {
        debug_assert!(matches!(self.kind, MsgKind::RangeDelete | MsgKind::CommitRange | MsgKind::AbortRange));
        let (lo, hi, _) = parse_range_val(self.val.as_ref()).expect("range value checked when decoded");
        (lo, hi)
    }

    /// A clean-up message (`Commit` or `Abort` of transaction `txid`) for
    /// every key of the range `range` (a `range_val`): its wide form.
    pub(crate) fn over_range(&self, range: &[u8]) -> MsgBody {
        let kind = match self.kind {
            MsgKind::Commit => MsgKind::CommitRange,
            MsgKind::Abort => MsgKind::AbortRange,
            k => unreachable!("{k:?} is not a clean-up message"),
        };
        let mut val = range.to_vec();
        val.extend_from_slice(self.val.as_ref());
        MsgBody {
            kind,
            fn_id: 0,
            txid: self.txid,
            provisional: false,
            commits: false,
            sp: 0,
            val: val.into(),
        }
    }

    /// Whether a wide message applies to `key`: a broadcast to every key,
    /// a range delete to the keys in its range.
    pub(crate) fn covers(&self, key: &[u8], cmp: super::Comparator) -> bool {
        match self.kind {
            MsgKind::Broadcast => true,
            MsgKind::RangeDelete | MsgKind::CommitRange | MsgKind::AbortRange => {
                let (lo, hi) = self.range_bounds();
                cmp(lo, key) != std::cmp::Ordering::Greater && cmp(key, hi) == std::cmp::Ordering::Less
            }
            _ => false,
        }
    }

    /// Whether a wide message can apply to a key in `[lo, hi)` (`None`:
    /// unbounded): a flush copies it only into the children for which it
    /// can, and a read gathers only those for its stretch of keys.
    pub(crate) fn meets(&self, lo: Option<&[u8]>, hi: Option<&[u8]>, cmp: super::Comparator) -> bool {
        match self.kind {
            MsgKind::Broadcast => true,
            MsgKind::RangeDelete | MsgKind::CommitRange | MsgKind::AbortRange => {
                let (a, b) = self.range_bounds();
                cmp(a, b) == std::cmp::Ordering::Less
                    && hi.is_none_or(|hi| cmp(a, hi) == std::cmp::Ordering::Less)
                    && lo.is_none_or(|lo| cmp(lo, b) == std::cmp::Ordering::Less)
            }
            _ => false,
        }
    }

    /// The savepoint range `[lo, hi)` of an `Abort` (or `AbortRange`) message.
    pub(crate) fn abort_range(&self) -> DecodeResult<(u32, u32)> {
        let val = match self.kind {
            MsgKind::AbortRange => parse_range_val(self.val.as_ref())?.2,
            _ => self.val.as_ref(),
        };
        let mut r = Reader::new(val);
        let lo = r.varint()?;
        let hi = r.varint()?;
        match (u32::try_from(lo), u32::try_from(hi)) {
            (Ok(lo), Ok(hi)) if r.is_empty() => Ok((lo, hi)),
            _ => Err("bad abort message range".into()),
        }
    }
}

/// A range delete's value: `lo (varint len + bytes) | hi (varint len + bytes)`.
pub(crate) fn range_val(lo: &[u8], hi: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(lo.len() + hi.len() + 6);
    put_bytes(&mut v, lo);
    put_bytes(&mut v, hi);
    v
}

/// The bounds of a range delete's value built by `range_val` (or checked
/// by `check_wide`).
pub(crate) fn split_range_val(val: &[u8]) -> (&[u8], &[u8]) {
    let (lo, hi, _) = parse_range_val(val).expect("a range delete's value is checked when made or decoded");
    (lo, hi)
}

/// The bounds at the head of a range message's value, and what follows.
fn parse_range_val(val: &[u8]) -> DecodeResult<(&[u8], &[u8], &[u8])> {
    let mut r = Reader::new(val);
    let lo = r.bytes()?;
    let hi = r.bytes()?;
    Ok((lo, hi, &val[r.pos()..]))
}

/// Checks a decoded message with an empty key and value `val` of kind
/// `kind`: a range delete's value must hold two bounds, each within the
/// key size limit. (Their order is checked when the write is made, with
/// the comparator; a decoder has none, and `lo >= hi` covers no key.)
pub(crate) fn check_wide(kind: MsgKind, key: &[u8], val: &[u8]) -> DecodeResult<()> {
    if matches!(kind, MsgKind::RangeDelete | MsgKind::CommitRange | MsgKind::AbortRange) {
        if !key.is_empty() {
            return Err(format!("a {kind:?} message with a key"));
        }
        let (lo, hi, rest) = parse_range_val(val)?;
        if lo.len().max(hi.len()) > crate::limits::MAX_KEY_BYTES {
            return Err("a range bound past the key size limit".into());
        }
        let rest_ok = match kind {
            MsgKind::AbortRange => {
                let mut r = Reader::new(rest);
                r.varint().is_ok() && r.varint().is_ok() && r.is_empty()
            }
            _ => rest.is_empty(),
        };
        if !rest_ok {
            return Err(format!("a {kind:?} message with bad bytes after its bounds"));
        }
    }
    Ok(())
}

/// The transaction fields a write gives every message of a batch as it
/// writes it (`Tree::write_msgs`): a batch holds plain messages, and a
/// transaction or an autocommit stamps its id on them on the way into the
/// log and the root's buffer, so the batch is borrowed, never copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub txid: u64,
    pub provisional: bool,
    pub sp: u32,
}

/// A message to write: its key and its body, owned or borrowed (a
/// `WriteBatch`'s messages live in one arena; see `Tree::write_msgs`).
pub(crate) trait KeyedMsg {
    fn key(&self) -> &[u8];
    /// The body with its value borrowed, `stamp` (if any) applied.
    fn stamped(&self, stamp: Option<Stamp>) -> MsgBody<&[u8]>;
    fn val(&self) -> &[u8] {
        self.stamped(None).val
    }
    fn kind(&self) -> MsgKind {
        self.stamped(None).kind
    }
    fn fn_id(&self) -> u8 {
        self.stamped(None).fn_id
    }
}

/// A borrowed message: a batch put in another order without copying it.
impl<M: KeyedMsg> KeyedMsg for &M {
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn stamped(&self, stamp: Option<Stamp>) -> MsgBody<&[u8]> {
        (**self).stamped(stamp)
    }
}

/// A key and a body, each owned or borrowed.
impl<K: AsRef<[u8]>, B: std::borrow::Borrow<MsgBody>> KeyedMsg for (K, B) {
    fn key(&self) -> &[u8] {
        self.0.as_ref()
    }
    fn stamped(&self, stamp: Option<Stamp>) -> MsgBody<&[u8]> {
        self.1.borrow().borrowed().stamp(stamp)
    }
}

/// A plain message (no transaction yet) whose key and value are borrowed:
/// a `WriteBatch`'s.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlainMsg<'a> {
    pub kind: MsgKind,
    pub fn_id: u8,
    pub key: &'a [u8],
    pub val: &'a [u8],
}

impl KeyedMsg for PlainMsg<'_> {
    fn key(&self) -> &[u8] {
        self.key
    }
    fn stamped(&self, stamp: Option<Stamp>) -> MsgBody<&[u8]> {
        let plain = MsgBody {
            kind: self.kind,
            fn_id: self.fn_id,
            txid: 0,
            provisional: false,
            commits: false,
            sp: 0,
            val: self.val,
        };
        plain.stamp(stamp)
    }
}

/// A whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Msg {
    pub msn: u64,
    pub key: Box<[u8]>,
    pub body: MsgBody,
}

impl Msg {
    /// Appends the message's form in a buffer partition.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.as_ref().encode(out);
    }

    pub(crate) fn as_ref(&self) -> MsgRef<'_> {
        MsgRef { msn: self.msn, key: &self.key, body: self.body.borrowed() }
    }

    #[cfg(test)]
    pub(crate) fn decode(r: &mut Reader) -> DecodeResult<Msg> {
        let msn = r.u64()?;
        let mut body = MsgBody::decode_head(r)?;
        let key = r.bytes()?.into();
        body.val = r.bytes()?.into();
        Ok(Msg { msn, key, body })
    }
}

/// A message whose key and value are borrowed from the writer (the root
/// write encodes them straight into a buffer).
#[derive(Clone, Debug)]
pub(crate) struct MsgRef<'a> {
    pub msn: u64,
    pub key: &'a [u8],
    pub body: MsgBody<&'a [u8]>,
}

impl MsgRef<'_> {
    /// Appends the message's form in a buffer partition (`Msg::encode`).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.msn.to_le_bytes());
        self.body.encode_head(out);
        put_bytes(out, self.key);
        put_bytes(out, self.body.val);
    }
}

impl KeyedMsg for MsgRef<'_> {
    fn key(&self) -> &[u8] {
        self.key
    }
    fn stamped(&self, stamp: Option<Stamp>) -> MsgBody<&[u8]> {
        self.body.clone().stamp(stamp)
    }
}

/// Applies one message to a key's current value and returns the new value.
/// An update function missing from the registry is reported, never guessed.
/// The old value is borrowed: an update function reads it, and an insert or
/// delete ignores it, so a caller never copies it to apply a message.
pub(crate) fn apply_to_value<V: AsRef<[u8]>>(
    key: &[u8],
    old: Option<&[u8]>,
    body: &MsgBody<V>,
    fns: &UpdateFns,
) -> Result<Option<Vec<u8>>, ApplyError> {
    match body.kind {
        MsgKind::Insert => Ok(Some(body.val.as_ref().to_vec())),
        MsgKind::Delete => Ok(None),
        MsgKind::Update => {
            let f = fns.get(&body.fn_id).ok_or(ApplyError::MissingFn(body.fn_id))?;
            Ok(call_update_fn(f, body.fn_id, key, old, body.val.as_ref()))
        }
        // A broadcast changes only keys that exist.
        MsgKind::Broadcast => match old {
            None => Ok(None),
            Some(old) => {
                let f = fns.get(&body.fn_id).ok_or(ApplyError::MissingFn(body.fn_id))?;
                Ok(call_update_fn(f, body.fn_id, key, Some(old), body.val.as_ref()))
            }
        },
        // Applied only to the keys its range covers (`MsgBody::covers`).
        MsgKind::RangeDelete => Ok(None),
        // Transaction clean-ups act on versions, not values (`leafentry.rs`).
        MsgKind::Commit | MsgKind::Abort | MsgKind::CommitRange | MsgKind::AbortRange => {
            Ok(old.map(<[u8]>::to_vec))
        }
    }
}

/// A panic of update function `fn_id`, carried on (as the unwinding
/// payload) to the engine boundary that catches it (`Tree::caught`), which
/// turns it into `Error::CallbackPanicked` naming the function. Unwinding
/// on, rather than returning an error, takes every caller of
/// `apply_to_value` to that boundary unchanged: a caller applying to a copy
/// (a read) loses the copy; one changing a node in place (a flush, a root
/// leaf write) has a `Tree::changing` guard, which marks the tree poisoned
/// before its locks are released.
pub(crate) struct UpdateFnPanic {
    pub fn_id: u8,
    pub message: String,
}

/// Calls user code. `catch_unwind` costs nothing unless it panics.
fn call_update_fn(f: &UpdateFn, fn_id: u8, key: &[u8], old: Option<&[u8]>, arg: &[u8]) -> Option<Vec<u8>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(key, old, arg))) {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(Box::new(UpdateFnPanic {
            fn_id,
            message: crate::tree::panic_message(&*p),
        })),
    }
}

/// Why applying messages to a value, an entry or a leaf failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// An update or a broadcast names a function this environment was not
    /// opened with: the caller's set-up, not damage (`InvalidArgument`);
    /// opened again with it, the same messages apply.
    MissingFn(u8),
    /// A damaged entry, or a basement that would pass its size limit.
    Other(String),
}

impl From<String> for ApplyError {
    fn from(s: String) -> Self {
        ApplyError::Other(s)
    }
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::MissingFn(id) => f.write_str(&missing_fn(*id)),
            ApplyError::Other(s) => f.write_str(s),
        }
    }
}

impl ApplyError {
    /// The error to return: a missing function is the caller's
    /// (`InvalidArgument`), anything else what `other` makes of its reason
    /// (a corrupt block, naming it).
    pub(crate) fn into_error(self, other: impl FnOnce(String) -> crate::Error) -> crate::Error {
        match self {
            ApplyError::MissingFn(id) => crate::Error::invalid(missing_fn(id)),
            ApplyError::Other(s) => other(s),
        }
    }
}

pub(crate) fn missing_fn(id: u8) -> String {
    format!("update function {id} is not registered on this environment (EnvOptions::update_fns)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::buffer::MsgBuffer;
    use crate::tree::KeyOrder;

    #[test]
    fn messages_round_trip_through_their_wire_form() {
        let m = Msg {
            msn: 42,
            key: b"k".to_vec().into(),
            body: MsgBody {
                kind: MsgKind::Update,
                fn_id: 7,
                txid: 9,
                provisional: true,
                commits: true,
                sp: 3,
                val: b"arg".to_vec().into(),
            },
        };
        let mut out = Vec::new();
        m.encode(&mut out);
        let mut r = Reader::new(&out);
        assert_eq!(Msg::decode(&mut r).unwrap(), m);
        assert!(r.is_empty());
        out[8] = 99;
        assert!(Msg::decode(&mut Reader::new(&out)).is_err());
        // The commits flag without the provisional one is refused.
        out[8] = MsgKind::Update as u8 | KIND_COMMITS;
        assert!(Msg::decode(&mut Reader::new(&out)).is_err());
    }

    #[test]
    fn range_messages_cover_their_range_and_bad_values_are_refused() {
        let cmp: crate::tree::Comparator = |a, b| a.cmp(b);
        let rd = MsgBody::range_delete(b"b", b"d");
        assert!(rd.is_wide());
        assert_eq!(rd.range_bounds(), (&b"b"[..], &b"d"[..]));
        let covered: Vec<&[u8]> =
            [&b"a"[..], b"b", b"c", b"d"].into_iter().filter(|k| rd.covers(k, cmp)).collect();
        assert_eq!(covered, [&b"b"[..], b"c"]);
        assert!(rd.meets(Some(b"c"), None, cmp) && rd.meets(None, Some(b"c"), cmp));
        assert!(!rd.meets(Some(b"d"), None, cmp) && !rd.meets(None, Some(b"b"), cmp));
        assert!(!MsgBody::range_delete(b"b", b"b").meets(None, None, cmp), "an empty range meets nothing");
        // The clean-up forms keep the range and, for an abort, its savepoints.
        let abort = MsgBody::plain_txn(MsgKind::Abort, 5, MsgBody::abort_val(2, 9)).over_range(&rd.val);
        assert_eq!((abort.kind, abort.txid, abort.abort_range()), (MsgKind::AbortRange, 5, Ok((2, 9))));
        assert!(abort.covers(b"c", cmp) && !abort.covers(b"d", cmp));
        check_wide(MsgKind::AbortRange, b"", &abort.val).unwrap();
        check_wide(MsgKind::RangeDelete, b"", &rd.val).unwrap();
        // A decoder refuses a key, a truncated range, trailing bytes and a
        // bound past the key size limit.
        assert!(check_wide(MsgKind::RangeDelete, b"k", &rd.val).is_err());
        assert!(check_wide(MsgKind::RangeDelete, b"", &rd.val[..3]).is_err());
        assert!(check_wide(MsgKind::RangeDelete, b"", &[&rd.val[..], b"x"].concat()).is_err());
        assert!(check_wide(MsgKind::CommitRange, b"", &abort.val).is_err());
        let long = vec![0; crate::limits::MAX_KEY_BYTES + 1];
        assert!(check_wide(MsgKind::RangeDelete, b"", &range_val(b"", &long)).is_err());
        // A buffer holding a damaged range delete does not decode.
        let mut buf = MsgBuffer::default();
        buf.insert(Msg { msn: 1, key: Box::new([]), body: rd.clone() }, KeyOrder { cmp, bytewise: true });
        let mut bytes = Vec::new();
        buf.encode(&mut bytes);
        assert_eq!(MsgBuffer::decode(bytes.clone(), KeyOrder { cmp, bytewise: true }).unwrap().len(), 1);
        // The value ends `1 | b | 1 | d`: `hi`'s length now runs past it.
        let n = bytes.len();
        assert_eq!(bytes[n - 4..], [1, b'b', 1, b'd']);
        bytes[n - 2] = 5;
        assert!(MsgBuffer::decode(bytes, KeyOrder { cmp, bytewise: true }).is_err());
    }

    #[test]
    fn broadcast_leaves_absent_keys_absent_and_update_needs_its_function() {
        let mut fns = UpdateFns::new();
        fns.insert(
            1,
            Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
                let mut v = old.unwrap_or_default().to_vec();
                v.extend_from_slice(arg);
                Some(v)
            }) as UpdateFn,
        );
        let b: MsgBody = MsgBody {
            kind: MsgKind::Broadcast,
            fn_id: 1,
            txid: 0,
            provisional: false,
            commits: false,
            sp: 0,
            val: b"x".to_vec().into(),
        };
        assert_eq!(apply_to_value(b"k", None, &b, &fns).unwrap(), None);
        assert_eq!(apply_to_value(b"k", Some(b"a"), &b, &fns).unwrap(), Some(b"ax".to_vec()));
        let u = MsgBody {
            kind: MsgKind::Update,
            fn_id: 2,
            txid: 0,
            provisional: false,
            commits: false,
            sp: 0,
            val: Box::<[u8]>::from([]),
        };
        assert!(apply_to_value(b"k", None, &u, &fns).is_err());
    }
}
