//! What the engine writes into the log, and how recovery reads it back.
//!
//! One log record per atomic step: a whole `WriteBatch` (or single put,
//! delete, update, broadcast, range delete) is one `Write` record, so replay applies a batch
//! entirely or not at all. The record is appended while the tree's root is
//! write-locked, so for every dictionary the log's order is the order in which
//! messages took their MSNs: replaying in LSN order rebuilds the same state.
//!
//! Payload layouts (inside the log's framing, which adds length, checksum and LSN):
//!
//! ```text
//! Write:           1 | file_id varint | count varint |
//!                  count × (kind u8 | fn_id u8 | txid varint | [sp varint] | key (varint len + bytes) | value (varint len + bytes))
//!                  (the message head of `message.rs`: bit 0x80 of kind marks a provisional write, which carries sp;
//!                  a range delete, kind 7, has an empty key and the value `lo (varint len + bytes) | hi (varint len + bytes)`)
//! CreateDict:      2 | file_id varint | name (varint len + UTF-8)
//! DropDict:        3 | file_id varint | name
//! RenameDict:      4 | file_id varint | from | to
//! CheckpointBegin: 5
//! CheckpointEnd:   6 | begin lsn varint
//! TxnCommit:       7 | txid varint
//! TxnAbort:        8 | txid varint | lo varint | hi varint    (savepoints [lo, hi) rolled back; 0..u32::MAX: all)
//! TxnPrepare:      9 | txid varint | first_lsn varint | xid (varint len + bytes, at most MAX_XID_BYTES)
//! TxnCommit with counts:  10 | txid varint | counts
//! TxnPrepare with counts: 11 | txid varint | first_lsn varint | xid | counts
//!   counts: n varint (at least 1) | n × (file_id varint | COUNTERS u8 | COUNTERS × delta (zigzag varint))
//! ```
//!
//! Counts: the deltas a transaction added to its dictionaries' counters
//! (`txn/counts.rs`), carried by its commit record (and its prepare record,
//! for a prepared transaction restored after a crash). Recovery adds a
//! commit record's deltas to a dictionary iff `lsn >= ckpt_lsn`, as it
//! replays writes.
//!
//! Two-phase commit: `TxnPrepare` (fsynced before `Txn::prepare` returns)
//! says the transaction's writes so far are its whole work and it awaits a
//! decision under `xid`; `first_lsn` is a lower bound on its first record's
//! LSN (the log is kept from there while it is prepared, across restarts).
//! A transaction with a prepare record and no end record is not rolled back
//! by recovery: it is restored prepared, its written keys write-locked
//! again, until `Env::commit_prepared` or `Env::rollback_prepared` ends it
//! with an ordinary commit or abort record.
//!
//! Transactions: a transaction's writes are logged as provisional `Write`
//! records as they happen; its commit, abort or rollback to a savepoint is
//! one record. The trees learn of a commit or abort through `Commit`/`Abort`
//! messages, one per key written, sent after the record (see `txn`). Those
//! messages are idempotent, so recovery simply sends them again for every
//! commit and abort record it reads, in log order, and aborts every
//! transaction the log shows no end for. For that it needs each transaction's
//! writes from its first one: the log is never trimmed past the first record
//! of a transaction whose clean-up has not finished (`Env` checkpoint).
//!
//! Exactly once: every dictionary's checkpoint header records `ckpt_lsn`, the
//! LSN of the checkpoint-begin record it was taken at. Everything logged before
//! that LSN is in the dictionary's file; everything at or after it is not. So
//! recovery applies a `Write` record to its dictionary iff `lsn >= ckpt_lsn`.
//!
//! Dictionary create, drop and rename are made durable by the catalog itself
//! (written and fsynced before the call returns); their records document the
//! history and let recovery skip writes to dictionaries that no longer exist.

use crate::encoding::{put_bytes, put_varint, DecodeResult, Reader};
use crate::tree::message::{KeyedMsg, MsgBody, MsgKind, Stamp};
use crate::txn::counts::{Deltas, COUNTERS};

/// The messages of one atomic write.
pub(crate) type Msgs = Vec<(Box<[u8]>, MsgBody)>;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Write { file_id: u64, msgs: Msgs },
    CreateDict { file_id: u64, name: String },
    DropDict { file_id: u64, name: String },
    RenameDict { file_id: u64, from: String, to: String },
    CheckpointBegin,
    CheckpointEnd { begin_lsn: u64 },
    TxnCommit { txid: u64, counts: Counts },
    TxnAbort { txid: u64, lo: u32, hi: u32 },
    TxnPrepare { txid: u64, first_lsn: u64, xid: Vec<u8>, counts: Counts },
}

/// A transaction's counter deltas, per dictionary file id.
pub(crate) type Counts = Vec<(u64, Deltas)>;

fn put_counts(out: &mut Vec<u8>, counts: &Counts) {
    put_varint(out, counts.len() as u64);
    for (file_id, d) in counts {
        put_varint(out, *file_id);
        out.push(COUNTERS as u8);
        for &v in d {
            // Zigzag: small negative deltas stay short.
            put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
        }
    }
}

fn get_counts(r: &mut Reader, len: usize) -> DecodeResult<Counts> {
    let n = r.varint()?;
    // Each takes at least 2 + COUNTERS bytes; none: the record would be kind 7 or 9.
    if n == 0 || n > (len / (2 + COUNTERS)) as u64 {
        return Err(format!("record claims {n} counted dictionaries in {len} bytes"));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let file_id = r.varint()?;
        let k = r.u8()? as usize;
        if k != COUNTERS {
            return Err(format!("record has {k} counters per dictionary, not {COUNTERS}"));
        }
        let mut d = [0i64; COUNTERS];
        for v in d.iter_mut() {
            let z = r.varint()?;
            *v = ((z >> 1) as i64) ^ -((z & 1) as i64);
        }
        out.push((file_id, d));
    }
    Ok(out)
}

/// The longest global transaction id `Txn::prepare` takes (X/Open's XID is
/// at most 128 bytes of gtrid and bqual plus a 4-byte format id).
pub const MAX_XID_BYTES: usize = 256;

/// Encodes a `Write` record without building a `Record` (the hot path),
/// with `stamp` (if any) on every message.
pub(crate) fn encode_write<M: KeyedMsg>(file_id: u64, msgs: &[M], stamp: Option<Stamp>) -> Vec<u8> {
    let size: usize = msgs.iter().map(|m| m.key().len() + m.val().len() + 16).sum();
    let mut out = Vec::with_capacity(size + 16);
    out.push(1);
    put_varint(&mut out, file_id);
    put_varint(&mut out, msgs.len() as u64);
    for m in msgs {
        let body = m.stamped(stamp);
        body.encode_head(&mut out);
        put_bytes(&mut out, m.key());
        put_bytes(&mut out, body.val);
    }
    out
}

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Record::Write { file_id, msgs } => return encode_write(*file_id, msgs, None),
            Record::CreateDict { file_id, name } | Record::DropDict { file_id, name } => {
                out.push(if matches!(self, Record::CreateDict { .. }) { 2 } else { 3 });
                put_varint(&mut out, *file_id);
                put_bytes(&mut out, name.as_bytes());
            }
            Record::RenameDict { file_id, from, to } => {
                out.push(4);
                put_varint(&mut out, *file_id);
                put_bytes(&mut out, from.as_bytes());
                put_bytes(&mut out, to.as_bytes());
            }
            Record::CheckpointBegin => out.push(5),
            Record::CheckpointEnd { begin_lsn } => {
                out.push(6);
                put_varint(&mut out, *begin_lsn);
            }
            Record::TxnCommit { txid, counts } => {
                out.push(if counts.is_empty() { 7 } else { 10 });
                put_varint(&mut out, *txid);
                if !counts.is_empty() {
                    put_counts(&mut out, counts);
                }
            }
            Record::TxnAbort { txid, lo, hi } => {
                out.push(8);
                put_varint(&mut out, *txid);
                put_varint(&mut out, *lo as u64);
                put_varint(&mut out, *hi as u64);
            }
            Record::TxnPrepare { txid, first_lsn, xid, counts } => {
                out.push(if counts.is_empty() { 9 } else { 11 });
                put_varint(&mut out, *txid);
                put_varint(&mut out, *first_lsn);
                put_bytes(&mut out, xid);
                if !counts.is_empty() {
                    put_counts(&mut out, counts);
                }
            }
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> DecodeResult<Record> {
        let mut r = Reader::new(bytes);
        let name = |r: &mut Reader| -> DecodeResult<String> {
            std::str::from_utf8(r.bytes()?).map(str::to_string).map_err(|_| "name is not UTF-8".to_string())
        };
        let rec = match r.u8()? {
            1 => {
                let file_id = r.varint()?;
                let n = r.varint()?;
                // Each message takes at least 5 bytes: a count beyond that is damage.
                if n > bytes.len() as u64 / 5 {
                    return Err(format!("write record claims {n} messages in {} bytes", bytes.len()));
                }
                let mut msgs = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let mut body = MsgBody::decode_head(&mut r)?;
                    // Commits are never logged as messages (only as
                    // `TxnCommit` records), folded into a write or not.
                    let cleanup = matches!(
                        body.kind,
                        MsgKind::Commit | MsgKind::Abort | MsgKind::CommitRange | MsgKind::AbortRange
                    );
                    if cleanup || body.commits {
                        return Err("a write record holds a transaction clean-up message".into());
                    }
                    let key: Box<[u8]> = r.bytes()?.into();
                    body.val = r.bytes()?.into();
                    crate::tree::message::check_wide(body.kind, &key, &body.val)?;
                    msgs.push((key, body));
                }
                Record::Write { file_id, msgs }
            }
            2 => Record::CreateDict { file_id: r.varint()?, name: name(&mut r)? },
            3 => Record::DropDict { file_id: r.varint()?, name: name(&mut r)? },
            4 => {
                let file_id = r.varint()?;
                Record::RenameDict { file_id, from: name(&mut r)?, to: name(&mut r)? }
            }
            5 => Record::CheckpointBegin,
            6 => Record::CheckpointEnd { begin_lsn: r.varint()? },
            7 => Record::TxnCommit { txid: r.varint()?, counts: Vec::new() },
            10 => Record::TxnCommit { txid: r.varint()?, counts: get_counts(&mut r, bytes.len())? },
            8 => {
                let txid = r.varint()?;
                let (lo, hi) = (r.varint()?, r.varint()?);
                match (u32::try_from(lo), u32::try_from(hi)) {
                    (Ok(lo), Ok(hi)) if lo <= hi => Record::TxnAbort { txid, lo, hi },
                    _ => return Err(format!("abort record with savepoint range {lo}..{hi}")),
                }
            }
            k @ (9 | 11) => {
                let (txid, first_lsn) = (r.varint()?, r.varint()?);
                let xid = r.bytes()?.to_vec();
                if xid.is_empty() || xid.len() > MAX_XID_BYTES {
                    return Err(format!("prepare record with a {}-byte xid", xid.len()));
                }
                let counts = if k == 11 { get_counts(&mut r, bytes.len())? } else { Vec::new() };
                Record::TxnPrepare { txid, first_lsn, xid, counts }
            }
            k => return Err(format!("unknown log record kind {k}")),
        };
        if !r.is_empty() {
            return Err(format!("{} bytes after the end of a log record", bytes.len() - r.pos()));
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(kind: MsgKind, val: &[u8]) -> MsgBody {
        MsgBody { kind, fn_id: 7, txid: 3, provisional: false, commits: false, sp: 0, val: val.into() }
    }

    #[test]
    fn records_round_trip_and_garbage_is_an_error() {
        let recs = vec![
            Record::Write {
                file_id: 9,
                msgs: vec![
                    (b"k".to_vec().into(), body(MsgKind::Insert, b"v")),
                    (b"".to_vec().into(), body(MsgKind::Broadcast, b"")),
                    (vec![0xff; 300].into(), body(MsgKind::Delete, b"")),
                ],
            },
            Record::CreateDict { file_id: 1, name: "a".into() },
            Record::DropDict { file_id: 2, name: "b".into() },
            Record::RenameDict { file_id: 3, from: "c".into(), to: "d".into() },
            Record::CheckpointBegin,
            Record::CheckpointEnd { begin_lsn: 1 << 40 },
            Record::Write {
                file_id: 4,
                msgs: vec![(
                    b"k".to_vec().into(),
                    MsgBody {
                        kind: MsgKind::Update,
                        fn_id: 1,
                        txid: 77,
                        provisional: true,
                        commits: false,
                        sp: 3,
                        val: b"a".to_vec().into(),
                    },
                )],
            },
            Record::TxnCommit { txid: 77, counts: Vec::new() },
            Record::TxnCommit { txid: 77, counts: vec![(3, [1, -1]), (1 << 40, [i64::MIN, i64::MAX])] },
            Record::TxnAbort { txid: 78, lo: 2, hi: 9 },
            Record::TxnPrepare {
                txid: 79,
                first_lsn: 1 << 33,
                xid: b"gtrid\0bqual".to_vec(),
                counts: Vec::new(),
            },
            Record::TxnPrepare { txid: 79, first_lsn: 5, xid: b"x".to_vec(), counts: vec![(2, [0, -300])] },
        ];
        for rec in recs {
            let bytes = rec.encode();
            assert_eq!(Record::decode(&bytes).unwrap(), rec);
            for cut in 0..bytes.len() {
                assert!(Record::decode(&bytes[..cut]).is_err(), "{rec:?} cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(Record::decode(&longer).is_err());
        }
        assert!(Record::decode(&[99]).is_err());
        // Counted records name at least one dictionary, each with every counter.
        assert!(Record::decode(&[10, 1, 0]).is_err());
        assert!(Record::decode(&[10, 1, 1, 2, 1, 0, 0]).is_err());
        assert!(Record::decode(&[1, 1, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
