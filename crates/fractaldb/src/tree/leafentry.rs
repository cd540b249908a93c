//! Leafentries: what a leaf stores for one key, and MVCC.
//!
//! ```text
//! 0x01 | value...                      one committed value visible to every reader (the common case)
//! 0x02 | n varint | n × version        a version stack, oldest first
//!        version = txid varint | flags u8 | [sp varint] | len varint | bytes
//!        flags bit 0: provisional (its transaction has not committed; then `sp` follows)
//!        flags bit 1: a delete
//! ```
//!
//! In memory a key's versions are an [`Entry`]: the committed versions in
//! commit order, each tagged with the id of the transaction that wrote it
//! (0: visible to every reader), and the provisional versions of at most one
//! transaction, one per savepoint level it wrote the key under. At most one
//! because a transaction writes a key only under a write lock it holds to
//! its end, and its `Commit`/`Abort` messages reach the key before the lock
//! is released (so they have lower MSNs than any later writer's message).
//!
//! **Visibility.** A reader with a snapshot sees the newest committed version
//! whose transaction committed before the snapshot was taken: txid below the
//! snapshot's id and not among the transactions live when it was taken. A
//! provisional version is visible to its own transaction; to others only if
//! its transaction has committed but its `Commit` message has not reached
//! the key yet (the transaction manager says so, `TxnStates`). If the
//! manager no longer knows the transaction, its clean-up messages arrived
//! after this reader collected the key's messages: the reader starts over.
//!
//! **Garbage collection.** `horizon` is a txid below which every committed
//! version is visible to every live and future snapshot. Applying messages
//! keeps only the newest committed version below the horizon and those
//! after it, retags that one with txid 0, and drops a delete left at the
//! bottom, so an entry no snapshot needs the history of is again `0x01`.

use crate::encoding::{put_varint, DecodeResult, Reader};
use crate::tree::message::{apply_to_value, ApplyError, MsgBody, MsgKind, UpdateFns};

pub(crate) const LE_VALUE: u8 = 0x01;
pub(crate) const LE_MVCC: u8 = 0x02;
const FLAG_PROVISIONAL: u8 = 1;
const FLAG_DELETE: u8 = 2;

/// Appends the leafentry for a single committed value.
pub(crate) fn encode_value(out: &mut Vec<u8>, value: &[u8]) {
    out.reserve(1 + value.len());
    out.push(LE_VALUE);
    out.extend_from_slice(value);
}

/// Size of the leafentry `encode_value` writes.
#[cfg(test)]
pub(crate) fn value_le_len(value: &[u8]) -> usize {
    1 + value.len()
}

/// A value of one version; `None` is a delete.
pub(crate) type Val = Option<Vec<u8>>;

/// The provisional versions of one transaction: (savepoint id, value), with
/// strictly increasing savepoint ids; the last is what the transaction sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Provisional {
    pub txid: u64,
    pub stack: Vec<(u32, Val)>,
}

/// A key's versions (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Committed versions in commit order, oldest first.
    pub committed: Vec<(u64, Val)>,
    pub prov: Option<Provisional>,
}

/// What a transaction manager knows of a transaction id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxnState {
    Active,
    /// Committed; its `Commit` messages may not have reached every key yet.
    Committed,
    /// Aborted; its `Abort` messages may not have reached every key yet.
    Aborted,
}

/// The transaction manager as readers see it.
pub(crate) trait TxnStates: Sync {
    /// The state of `txid`, or `None` once its clean-up messages are all in
    /// the trees (or it never existed).
    fn state(&self, txid: u64) -> Option<TxnState>;
}

/// A snapshot: what a repeatable-read transaction sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// Transactions with ids from here on began after the snapshot.
    pub txid: u64,
    /// Transactions live (begun, not committed) when it was taken, sorted.
    pub live: Vec<u64>,
}

impl Snapshot {
    pub(crate) fn sees(&self, txid: u64) -> bool {
        txid < self.txid && self.live.binary_search(&txid).is_err()
    }
}

/// How a read chooses among versions.
#[derive(Clone, Copy)]
pub(crate) enum ViewMode<'a> {
    /// The newest version, provisional or not (read uncommitted).
    Uncommitted,
    /// The newest committed version (read committed, serializable, autocommit).
    Latest,
    /// The newest version committed before the snapshot.
    Snapshot(&'a Snapshot),
}

/// A reader: its own transaction (0: none), its mode, and whom to ask
/// about other transactions.
#[derive(Clone, Copy)]
pub(crate) struct ReadView<'a> {
    pub own: u64,
    pub mode: ViewMode<'a>,
    pub states: &'a dyn TxnStates,
}

/// The outcome of reading an entry.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Seen<'e> {
    /// The value the reader sees (`None`: absent or deleted).
    Value(Option<&'e [u8]>),
    /// A provisional version of a transaction the manager has forgotten:
    /// read again.
    Retry(u64),
}

impl ReadView<'_> {
    fn sees_committed(&self, txid: u64) -> bool {
        txid == 0
            || txid == self.own
            || match self.mode {
                ViewMode::Uncommitted | ViewMode::Latest => true,
                ViewMode::Snapshot(s) => s.sees(txid),
            }
    }
}

impl Entry {
    /// Decodes a stored leafentry, checking the MVCC invariants.
    pub(crate) fn decode(le: &[u8]) -> DecodeResult<Entry> {
        match le.first() {
            Some(&LE_VALUE) => Ok(Entry { committed: vec![(0, Some(le[1..].to_vec()))], prov: None }),
            Some(&LE_MVCC) => {
                let mut r = Reader::new(&le[1..]);
                let n = r.varint()?;
                if n > le.len() as u64 {
                    return Err(format!("leafentry claims {n} versions in {} bytes", le.len()));
                }
                let mut e = Entry::default();
                for _ in 0..n {
                    let txid = r.varint()?;
                    let flags = r.u8()?;
                    if flags & !(FLAG_PROVISIONAL | FLAG_DELETE) != 0 {
                        return Err(format!("unknown leafentry version flags {flags:#x}"));
                    }
                    let sp = if flags & FLAG_PROVISIONAL != 0 { r.varint()? } else { 0 };
                    let bytes = r.bytes()?;
                    let val = if flags & FLAG_DELETE != 0 { None } else { Some(bytes.to_vec()) };
                    if flags & FLAG_PROVISIONAL == 0 {
                        if e.prov.is_some() {
                            return Err("committed version after a provisional one".into());
                        }
                        e.committed.push((txid, val));
                        continue;
                    }
                    let sp = u32::try_from(sp).map_err(|_| "savepoint id out of range".to_string())?;
                    let p = e.prov.get_or_insert(Provisional { txid, stack: Vec::new() });
                    if txid == 0 || p.txid != txid || p.stack.last().is_some_and(|l| l.0 >= sp) {
                        return Err("provisional versions of several transactions or out of order".into());
                    }
                    p.stack.push((sp, val));
                }
                if !r.is_empty() {
                    return Err("trailing bytes after leafentry versions".into());
                }
                Ok(e)
            }
            Some(t) => Err(format!("unknown leafentry type {t:#x}")),
            None => Err("empty leafentry".into()),
        }
    }

    /// True if the entry holds nothing (the key is absent for every reader).
    pub(crate) fn is_empty(&self) -> bool {
        self.committed.is_empty() && self.prov.is_none()
    }

    /// Appends the stored form; the entry must not be empty.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        debug_assert!(!self.is_empty());
        if let ([(0, Some(v))], None) = (&self.committed[..], &self.prov) {
            encode_value(out, v);
            return;
        }
        out.push(LE_MVCC);
        let np = self.prov.as_ref().map_or(0, |p| p.stack.len());
        put_varint(out, (self.committed.len() + np) as u64);
        let put = |out: &mut Vec<u8>, txid: u64, sp: Option<u32>, val: &Val| {
            put_varint(out, txid);
            let mut flags = if val.is_none() { FLAG_DELETE } else { 0 };
            if sp.is_some() {
                flags |= FLAG_PROVISIONAL;
            }
            out.push(flags);
            if let Some(sp) = sp {
                put_varint(out, sp as u64);
            }
            let bytes = val.as_deref().unwrap_or_default();
            put_varint(out, bytes.len() as u64);
            out.extend_from_slice(bytes);
        };
        for (txid, val) in &self.committed {
            put(out, *txid, None, val);
        }
        if let Some(p) = &self.prov {
            for (sp, val) in &p.stack {
                put(out, p.txid, Some(*sp), val);
            }
        }
    }

    fn newest_committed(&self) -> Option<&[u8]> {
        self.committed.last().and_then(|(_, v)| v.as_deref())
    }

    /// Applies one message (see `MsgKind`).
    pub(crate) fn apply<V: AsRef<[u8]>>(
        &mut self,
        key: &[u8],
        body: &MsgBody<V>,
        fns: &UpdateFns,
    ) -> Result<(), ApplyError> {
        match body.kind {
            // A range delete reaches only the keys it covers (its callers
            // check `MsgBody::covers`), where it is a delete.
            MsgKind::Insert | MsgKind::Delete | MsgKind::Update | MsgKind::RangeDelete
                if body.provisional =>
            {
                if self.prov.as_ref().is_some_and(|p| p.txid != body.txid) {
                    // Two transactions' uncommitted writes to one key: the
                    // lock protocol rules this out (module doc).
                    debug_assert!(false, "provisional versions of two transactions on one key");
                    self.prov = None;
                }
                let base = match &self.prov {
                    Some(p) => p.stack.last().and_then(|(_, v)| v.as_deref()),
                    None => self.newest_committed(),
                };
                let new = apply_to_value(key, base, body, fns)?;
                let p = self.prov.get_or_insert(Provisional { txid: body.txid, stack: Vec::new() });
                // Writing under savepoint `sp` replaces what was written
                // under it and under any savepoint opened after it.
                p.stack.retain(|(sp, _)| *sp < body.sp);
                p.stack.push((body.sp, new));
                if body.commits {
                    // The write and then its transaction's commit.
                    self.commit(body.txid);
                }
            }
            MsgKind::Insert | MsgKind::Delete | MsgKind::Update | MsgKind::RangeDelete => {
                let new = apply_to_value(key, self.newest_committed(), body, fns)?;
                self.committed.push((body.txid, new));
            }
            MsgKind::Broadcast => {
                let vals = self.committed.iter_mut().map(|(_, v)| v);
                let vals = vals.chain(self.prov.iter_mut().flat_map(|p| p.stack.iter_mut().map(|(_, v)| v)));
                for v in vals {
                    if v.is_some() {
                        *v = apply_to_value(key, v.as_deref(), body, fns)?;
                    }
                }
            }
            // The range forms reach only the keys they cover (`covers`).
            MsgKind::Commit | MsgKind::CommitRange => self.commit(body.txid),
            MsgKind::Abort | MsgKind::AbortRange => {
                let (lo, hi) = body.abort_range()?;
                if let Some(p) = self.prov.as_mut().filter(|p| p.txid == body.txid) {
                    p.stack.retain(|(sp, _)| !(lo..hi).contains(sp));
                    if p.stack.is_empty() {
                        self.prov = None;
                    }
                }
            }
        }
        Ok(())
    }

    /// Transaction `txid` committed: its provisional version (if any) becomes
    /// the newest committed one.
    fn commit(&mut self, txid: u64) {
        if self.prov.as_ref().is_some_and(|p| p.txid == txid) {
            let p = self.prov.take().expect("checked");
            let top = p.stack.into_iter().next_back().and_then(|(_, v)| v);
            self.committed.push((p.txid, top));
        }
    }

    /// Drops the committed versions no reader can see any more (module doc).
    pub(crate) fn gc(&mut self, horizon: u64) {
        if let Some(j) = self.committed.iter().rposition(|(t, _)| *t < horizon) {
            self.committed.drain(..j);
            self.committed[0].0 = 0;
            if self.committed[0].1.is_none() {
                self.committed.remove(0);
            }
        }
    }

    /// What `view` sees of this entry.
    pub(crate) fn read(&self, view: &ReadView) -> Seen<'_> {
        let mut in_flight = None;
        if let Some(p) = &self.prov {
            let top = p.stack.last().and_then(|(_, v)| v.as_deref());
            if p.txid == view.own || matches!(view.mode, ViewMode::Uncommitted) {
                return Seen::Value(top);
            }
            match view.states.state(p.txid) {
                Some(TxnState::Active) | Some(TxnState::Aborted) => {}
                Some(TxnState::Committed) => in_flight = Some((p.txid, top)),
                None => return Seen::Retry(p.txid),
            }
        }
        if let Some((txid, top)) = in_flight {
            if view.sees_committed(txid) {
                return Seen::Value(top);
            }
        }
        for (txid, v) in self.committed.iter().rev() {
            if view.sees_committed(*txid) {
                return Seen::Value(v.as_deref());
            }
        }
        Seen::Value(None)
    }

    /// The txid of the newest committed version (counting one committed but
    /// not yet cleaned up), for write-conflict checks: `Err` asks to retry.
    pub(crate) fn newest_committed_txid(&self, states: &dyn TxnStates) -> Result<Option<u64>, u64> {
        if let Some(p) = &self.prov {
            match states.state(p.txid) {
                Some(TxnState::Committed) => return Ok(Some(p.txid)),
                Some(_) => {}
                None => return Err(p.txid),
            }
        }
        Ok(self.committed.last().map(|(t, _)| *t))
    }
}

/// The value a reader that ignores transactions sees: the newest committed
/// version (used by `check` and tests).
pub(crate) fn committed_value(le: &[u8]) -> DecodeResult<Option<Vec<u8>>> {
    if le.first() == Some(&LE_VALUE) {
        return Ok(Some(le[1..].to_vec()));
    }
    Ok(Entry::decode(le)?.newest_committed().map(<[u8]>::to_vec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct States(HashMap<u64, TxnState>);
    impl TxnStates for States {
        fn state(&self, txid: u64) -> Option<TxnState> {
            self.0.get(&txid).copied()
        }
    }

    fn msg(kind: MsgKind, txid: u64, provisional: bool, sp: u32, val: &[u8]) -> MsgBody {
        MsgBody { kind, fn_id: 1, txid, provisional, commits: false, sp, val: val.into() }
    }

    fn fns() -> UpdateFns {
        let mut fns = UpdateFns::new();
        fns.insert(
            1,
            std::sync::Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
                let mut v = old.unwrap_or_default().to_vec();
                v.extend_from_slice(arg);
                Some(v)
            }) as crate::tree::message::UpdateFn,
        );
        fns
    }

    fn round_trip(e: &Entry) {
        let mut out = Vec::new();
        e.encode(&mut out);
        assert_eq!(&Entry::decode(&out).unwrap(), e);
    }

    #[test]
    fn a_single_value_is_one_byte_of_overhead() {
        let mut out = Vec::new();
        encode_value(&mut out, b"abc");
        assert_eq!(out, b"\x01abc");
        assert_eq!(value_le_len(b"abc"), out.len());
        assert_eq!(committed_value(&out).unwrap(), Some(b"abc".to_vec()));
        let e = Entry::decode(&out).unwrap();
        let mut again = Vec::new();
        e.encode(&mut again);
        assert_eq!(again, out);
    }

    #[test]
    fn snapshots_see_what_committed_before_them_and_owners_see_their_own() {
        let fns = fns();
        let mut e = Entry::default();
        e.apply(b"k", &msg(MsgKind::Insert, 3, false, 0, b"a"), &fns).unwrap();
        e.apply(b"k", &msg(MsgKind::Insert, 7, false, 0, b"b"), &fns).unwrap();
        e.apply(b"k", &msg(MsgKind::Update, 9, true, 0, b"+"), &fns).unwrap();
        round_trip(&e);
        let mut st = States(HashMap::from([(9, TxnState::Active)]));
        let old = Snapshot { txid: 8, live: vec![7] };
        let new = Snapshot { txid: 10, live: vec![9] };
        let view = |own, mode| ReadView { own, mode, states: &st as &dyn TxnStates };
        assert_eq!(e.read(&view(0, ViewMode::Snapshot(&old))), Seen::Value(Some(b"a")));
        assert_eq!(e.read(&view(0, ViewMode::Snapshot(&new))), Seen::Value(Some(b"b")));
        assert_eq!(e.read(&view(0, ViewMode::Latest)), Seen::Value(Some(b"b")));
        assert_eq!(e.read(&view(0, ViewMode::Uncommitted)), Seen::Value(Some(b"b+")));
        assert_eq!(e.read(&view(9, ViewMode::Snapshot(&new))), Seen::Value(Some(b"b+")));
        // Committed, clean-up not arrived: Latest sees it, the older snapshot not.
        st.0.insert(9, TxnState::Committed);
        let view = |own, mode| ReadView { own, mode, states: &st as &dyn TxnStates };
        assert_eq!(e.read(&view(0, ViewMode::Latest)), Seen::Value(Some(b"b+")));
        assert_eq!(e.read(&view(0, ViewMode::Snapshot(&new))), Seen::Value(Some(b"b")));
        let after = Snapshot { txid: 11, live: vec![] };
        assert_eq!(e.read(&view(0, ViewMode::Snapshot(&after))), Seen::Value(Some(b"b+")));
        // Forgotten: the reader must look again.
        let none = States(HashMap::new());
        assert_eq!(e.read(&ReadView { own: 0, mode: ViewMode::Latest, states: &none }), Seen::Retry(9));
        e.apply(b"k", &msg(MsgKind::Commit, 9, false, 0, b""), &fns).unwrap();
        assert_eq!(
            e.read(&ReadView { own: 0, mode: ViewMode::Latest, states: &none }),
            Seen::Value(Some(b"b+"))
        );
        // Commit again (replay) changes nothing.
        let before = e.clone();
        e.apply(b"k", &msg(MsgKind::Commit, 9, false, 0, b""), &fns).unwrap();
        assert_eq!(e, before);
    }

    #[test]
    fn a_write_with_its_commit_folded_in_is_the_write_then_the_commit() {
        let fns = fns();
        // Every start: nothing, a committed value, the transaction's own
        // provisional stack (an earlier write of it flushed further down).
        let starts: Vec<Vec<MsgBody>> = vec![
            vec![],
            vec![msg(MsgKind::Insert, 3, false, 0, b"a")],
            vec![msg(MsgKind::Insert, 3, false, 0, b"a"), msg(MsgKind::Update, 9, true, 0, b"x")],
            vec![msg(MsgKind::Update, 9, true, 0, b"x"), msg(MsgKind::Insert, 9, true, 2, b"y")],
        ];
        for start in &starts {
            for kind in [MsgKind::Insert, MsgKind::Delete, MsgKind::Update] {
                for sp in [0, 1, 2, 5] {
                    let mut base = Entry::default();
                    for b in start {
                        base.apply(b"k", b, &fns).unwrap();
                    }
                    let write = msg(kind, 9, true, sp, b"+");
                    let mut two = base.clone();
                    two.apply(b"k", &write, &fns).unwrap();
                    two.apply(b"k", &msg(MsgKind::Commit, 9, false, 0, b""), &fns).unwrap();
                    let mut folded = base.clone();
                    folded.apply(b"k", &MsgBody { commits: true, ..write }, &fns).unwrap();
                    assert_eq!(folded, two, "{start:?} {kind:?} sp {sp}");
                    assert!(folded.prov.is_none());
                }
            }
        }
    }

    #[test]
    fn savepoints_stack_and_roll_back_by_range() {
        let fns = fns();
        let mut e = Entry::default();
        e.apply(b"k", &msg(MsgKind::Insert, 0, false, 0, b"base"), &fns).unwrap();
        e.apply(b"k", &msg(MsgKind::Insert, 5, true, 0, b"t0"), &fns).unwrap();
        e.apply(b"k", &msg(MsgKind::Insert, 5, true, 3, b"t3"), &fns).unwrap();
        e.apply(b"k", &msg(MsgKind::Delete, 5, true, 4, b""), &fns).unwrap();
        round_trip(&e);
        assert_eq!(e.prov.as_ref().unwrap().stack.len(), 3);
        // Roll back savepoint 4 (created when the next id was 5).
        e.apply(b"k", &msg(MsgKind::Abort, 5, false, 0, &MsgBody::abort_val(4, 5)), &fns).unwrap();
        assert_eq!(e.prov.as_ref().unwrap().stack.last().unwrap().1.as_deref(), Some(&b"t3"[..]));
        // A later write under savepoint 0 replaces every level.
        e.apply(b"k", &msg(MsgKind::Update, 5, true, 0, b"!"), &fns).unwrap();
        assert_eq!(e.prov.as_ref().unwrap().stack, vec![(0, Some(b"t3!".to_vec()))]);
        // Replaying the old rollback touches nothing now.
        let before = e.clone();
        e.apply(b"k", &msg(MsgKind::Abort, 5, false, 0, &MsgBody::abort_val(4, 5)), &fns).unwrap();
        assert_eq!(e, before);
        e.apply(b"k", &msg(MsgKind::Abort, 5, false, 0, &MsgBody::abort_val(0, u32::MAX)), &fns).unwrap();
        assert_eq!(e, Entry { committed: vec![(0, Some(b"base".to_vec()))], prov: None });
    }

    #[test]
    fn gc_keeps_what_snapshots_need_and_collapses_to_one_value() {
        let fns = fns();
        let mut e = Entry::default();
        for (t, v) in [(3u64, &b"a"[..]), (9, b"b"), (6, b"c")] {
            e.apply(b"k", &msg(MsgKind::Insert, t, false, 0, v), &fns).unwrap();
        }
        e.gc(5);
        assert_eq!(e.committed.len(), 3);
        assert_eq!(e.committed[0].0, 0);
        e.gc(7);
        // 6 committed after 9: every snapshot seeing 6 sees it as newest.
        assert_eq!(e.committed, vec![(0, Some(b"c".to_vec()))]);
        let mut out = Vec::new();
        e.encode(&mut out);
        assert_eq!(out, b"\x01c");
        e.apply(b"k", &msg(MsgKind::Delete, 8, false, 0, b""), &fns).unwrap();
        e.gc(9);
        assert!(e.is_empty());
    }

    #[test]
    fn garbage_leafentries_are_errors() {
        assert!(committed_value(b"").is_err());
        assert!(committed_value(b"\x07x").is_err());
        assert!(committed_value(b"\x02\x05").is_err());
        assert!(committed_value(b"\x02\x01\x00\x04\x03ab").is_err());
        // Provisional versions of two transactions.
        assert!(Entry::decode(b"\x02\x02\x05\x01\x00\x00\x06\x01\x01\x00").is_err());
        // A committed version after a provisional one.
        assert!(Entry::decode(b"\x02\x02\x05\x01\x00\x00\x06\x00\x00").is_err());
    }
}
