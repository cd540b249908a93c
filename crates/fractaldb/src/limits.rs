//! What the engine accepts: sizes of keys, values and batches, and the
//! settings a dictionary may have. Every public entry point checks its
//! input against these before it copies or writes anything, so input past
//! them is refused with `Error::TooLarge` (settings: `InvalidArgument`)
//! and the environment is left as it was.
//!
//! Why these numbers: every length the engine stores is a u32 or a varint,
//! and its in-memory indexes (basement entry offsets, buffer slots) are
//! u32 offsets. The limits keep each of them far below 4 GiB:
//! - a log record holds one batch: at most `MAX_BATCH_BYTES` (256 MiB)
//!   plus a few bytes of framing, so its u32 length never overflows (the
//!   log refuses payloads past 1 GiB);
//! - a node's buffers and leaves stay within a few node sizes (the write
//!   path's back-pressure, the flush and spill budgets in `flush.rs`), at
//!   most `MAX_NODE_BYTES` (128 MiB) each: a node block, a partition and
//!   every arena stay well under 4 GiB, with room for a batch on top;
//! - a node header holds one pivot key per child: `MAX_FANOUT` (1024)
//!   children with keys of `MAX_KEY_BYTES` (32 KiB) are 32 MiB of header.
//!
//! Keys up to 32 KiB and values up to 32 MiB are TokuDB's limits. The empty
//! key is a valid key (the least one).

use crate::error::{Error, Result};
use crate::tree::message::{KeyedMsg, MsgKind};

/// The longest key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 32 << 10;
/// The longest value, or update (and broadcast) argument, accepted, in bytes.
pub const MAX_VALUE_BYTES: usize = 32 << 20;
/// The most one write may carry: a `WriteBatch` (or a single change), each
/// change counted as its key, its value and `BATCH_BYTES_PER_CHANGE`. One
/// write is one log record, so this bounds every record.
pub const MAX_BATCH_BYTES: usize = 256 << 20;
/// What each change of a batch counts against `MAX_BATCH_BYTES` beyond
/// its key and value: at least what its head and lengths take in the log
/// record (kind, function id, txid and savepoint varints, two length
/// varints: at most 24 bytes), so the record is never longer than the
/// batch's count plus a few bytes, and a batch of empty changes is bounded
/// too (at most 8M changes).
pub const BATCH_BYTES_PER_CHANGE: usize = 32;

/// The smallest `DictOptions::node_size_bytes` accepted.
pub const MIN_NODE_BYTES: usize = 256;
/// The largest `DictOptions::node_size_bytes` accepted (see the module
/// documentation: nodes, buffers and spills grow to a few node sizes, and
/// must stay far below 4 GiB).
pub const MAX_NODE_BYTES: usize = 128 << 20;
/// The smallest `DictOptions::basement_size_bytes` accepted; the largest is
/// the dictionary's node size.
pub const MIN_BASEMENT_BYTES: usize = 64;
/// The smallest `DictOptions::fanout` accepted.
pub const MIN_FANOUT: usize = 2;
/// The largest `DictOptions::fanout` accepted.
pub const MAX_FANOUT: usize = 1024;

fn too_large(what: &'static str, len: usize, limit: usize) -> Error {
    Error::TooLarge { what, len: len as u64, limit: limit as u64 }
}

/// `Err(TooLarge)` for a key longer than `MAX_KEY_BYTES`.
#[inline]
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(too_large("key", key.len(), MAX_KEY_BYTES));
    }
    Ok(())
}

/// `Err(TooLarge)` for a value or argument longer than `MAX_VALUE_BYTES`;
/// `what` names it in the error.
#[inline]
pub(crate) fn check_value(what: &'static str, val: &[u8]) -> Result<()> {
    if val.len() > MAX_VALUE_BYTES {
        return Err(too_large(what, val.len(), MAX_VALUE_BYTES));
    }
    Ok(())
}

/// What a message's value is called in errors.
pub(crate) fn value_name(kind: MsgKind) -> &'static str {
    match kind {
        MsgKind::Update | MsgKind::Broadcast => "update argument",
        _ => "value",
    }
}

/// Checks one change's key and value; returns what it counts against
/// `MAX_BATCH_BYTES`.
#[inline]
pub(crate) fn check_change(kind: MsgKind, key: &[u8], val: &[u8]) -> Result<usize> {
    check_key(key)?;
    check_value(value_name(kind), val)?;
    Ok(key.len() + val.len() + BATCH_BYTES_PER_CHANGE)
}

/// Checks a whole write: every key and value, and their total.
pub(crate) fn check_msgs<M: KeyedMsg>(msgs: &[M]) -> Result<()> {
    let mut total = 0usize;
    for m in msgs {
        let body = m.stamped(None);
        // Both are bounded, so this sum cannot overflow before the check.
        total += check_change(body.kind, m.key(), body.val)?;
        if total > MAX_BATCH_BYTES {
            // The whole batch's count, for the error.
            let all: usize = msgs
                .iter()
                .map(|m| m.key().len().saturating_add(m.val().len()).saturating_add(BATCH_BYTES_PER_CHANGE))
                .fold(0, usize::saturating_add);
            return Err(too_large("batch", all, MAX_BATCH_BYTES));
        }
    }
    Ok(())
}

/// The bounds on a dictionary's settings, checked at create and again
/// where the settings are read back from a file (`meta.rs`): a dictionary
/// that could not be reopened is never made.
pub(crate) fn check_settings(node_size: usize, basement_size: usize, fanout: usize) -> Result<(), String> {
    if !(MIN_NODE_BYTES..=MAX_NODE_BYTES).contains(&node_size) {
        return Err(format!("node size {node_size} is outside {MIN_NODE_BYTES}..={MAX_NODE_BYTES} bytes"));
    }
    if !(MIN_BASEMENT_BYTES..=node_size).contains(&basement_size) {
        return Err(format!(
            "basement size {basement_size} is outside {MIN_BASEMENT_BYTES}..={node_size} bytes (at most the node size)"
        ));
    }
    if !(MIN_FANOUT..=MAX_FANOUT).contains(&fanout) {
        return Err(format!("fanout {fanout} is outside {MIN_FANOUT}..={MAX_FANOUT}"));
    }
    // What `meta.rs` stores them in.
    debug_assert!(u32::try_from(MAX_NODE_BYTES).is_ok() && u32::try_from(MAX_FANOUT).is_ok());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::message::PlainMsg;

    #[test]
    fn settings_bounds() {
        assert!(check_settings(MIN_NODE_BYTES, MIN_BASEMENT_BYTES, MIN_FANOUT).is_ok());
        assert!(check_settings(MAX_NODE_BYTES, MAX_NODE_BYTES, MAX_FANOUT).is_ok());
        for (n, b, f) in [
            (MIN_NODE_BYTES - 1, MIN_BASEMENT_BYTES, 4),
            (MAX_NODE_BYTES + 1, MIN_BASEMENT_BYTES, 4),
            (4 << 30, 64 << 10, 4),
            (usize::MAX, 64 << 10, 4),
            (1 << 20, MIN_BASEMENT_BYTES - 1, 4),
            (1 << 20, (1 << 20) + 1, 4),
            (1 << 20, 64 << 10, MIN_FANOUT - 1),
            (1 << 20, 64 << 10, MAX_FANOUT + 1),
            (1 << 20, 64 << 10, usize::MAX),
        ] {
            assert!(check_settings(n, b, f).is_err(), "{n} {b} {f}");
        }
    }

    #[test]
    fn a_batch_is_counted_with_its_overhead() {
        let val = vec![0u8; MAX_VALUE_BYTES];
        let msg = |key: &'static [u8]| PlainMsg { kind: MsgKind::Insert, fn_id: 0, key, val: &val };
        let n = MAX_BATCH_BYTES / (MAX_VALUE_BYTES + BATCH_BYTES_PER_CHANGE + 1);
        let fits: Vec<PlainMsg> = (0..n).map(|_| msg(b"k")).collect();
        check_msgs(&fits).unwrap();
        let over: Vec<PlainMsg> = (0..=n).map(|_| msg(b"k")).collect();
        let len = (n + 1) * (MAX_VALUE_BYTES + 1 + BATCH_BYTES_PER_CHANGE);
        assert!(
            matches!(check_msgs(&over), Err(Error::TooLarge { what: "batch", len: l, .. }) if l == len as u64)
        );
        // Empty changes count too.
        let empty: Vec<PlainMsg> = (0..MAX_BATCH_BYTES / BATCH_BYTES_PER_CHANGE + 1)
            .map(|_| PlainMsg { kind: MsgKind::Delete, fn_id: 0, key: b"", val: b"" })
            .collect();
        assert!(check_msgs(&empty).is_err());
    }
}
