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
//! `msn u64 | kind u8 | fn_id u8 | txid varint | key (varint len + bytes) | value (varint len + bytes)`.
//! `txid` is 0 for non-transactional writes; the transaction layer fills it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::encoding::{put_bytes, put_varint, DecodeResult, Reader};

/// An upsert callback: given the key, the current value (if any) and the
/// message's argument, returns the new value, or `None` to delete the key.
pub type UpdateFn = Arc<dyn Fn(&[u8], Option<&[u8]>, &[u8]) -> Option<Vec<u8>> + Send + Sync>;

/// The update functions registered on an environment, by id.
pub(crate) type UpdateFns = HashMap<u8, UpdateFn>;

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
}

impl MsgKind {
    pub(crate) fn from_u8(b: u8) -> Option<MsgKind> {
        Some(match b {
            1 => MsgKind::Insert,
            2 => MsgKind::Delete,
            3 => MsgKind::Update,
            4 => MsgKind::Broadcast,
            _ => return None,
        })
    }
}

/// The body of a message, without its key and MSN (which a buffer keeps in
/// its index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MsgBody {
    pub kind: MsgKind,
    pub fn_id: u8,
    pub txid: u64,
    /// The value for `Insert`, the argument for `Update`/`Broadcast`.
    pub val: Box<[u8]>,
}

/// A whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Msg {
    pub msn: u64,
    pub key: Box<[u8]>,
    pub body: MsgBody,
}

impl Msg {
    /// Encoded size in a buffer partition.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.msn.to_le_bytes());
        out.push(self.body.kind as u8);
        out.push(self.body.fn_id);
        put_varint(out, self.body.txid);
        put_bytes(out, &self.key);
        put_bytes(out, &self.body.val);
    }

    pub(crate) fn decode(r: &mut Reader) -> DecodeResult<Msg> {
        let msn = r.u64()?;
        let kind = r.u8()?;
        let kind = MsgKind::from_u8(kind).ok_or_else(|| format!("unknown message kind {kind}"))?;
        let fn_id = r.u8()?;
        let txid = r.varint()?;
        let key = r.bytes()?.into();
        let val = r.bytes()?.into();
        Ok(Msg { msn, key, body: MsgBody { kind, fn_id, txid, val } })
    }
}

/// Applies one message to a key's current value and returns the new value.
/// An update function missing from the registry is reported, never guessed.
pub(crate) fn apply_to_value(
    key: &[u8],
    old: Option<Vec<u8>>,
    body: &MsgBody,
    fns: &UpdateFns,
) -> Result<Option<Vec<u8>>, String> {
    match body.kind {
        MsgKind::Insert => Ok(Some(body.val.to_vec())),
        MsgKind::Delete => Ok(None),
        MsgKind::Update => {
            let f = fns.get(&body.fn_id).ok_or_else(|| missing_fn(body.fn_id))?;
            Ok(f(key, old.as_deref(), &body.val))
        }
        // A broadcast changes only keys that exist.
        MsgKind::Broadcast => match old {
            None => Ok(None),
            Some(old) => {
                let f = fns.get(&body.fn_id).ok_or_else(|| missing_fn(body.fn_id))?;
                Ok(f(key, Some(&old), &body.val))
            }
        },
    }
}

pub(crate) fn missing_fn(id: u8) -> String {
    format!("update function {id} is not registered on this environment (EnvOptions::update_fns)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_their_wire_form() {
        let m = Msg {
            msn: 42,
            key: b"k".to_vec().into(),
            body: MsgBody { kind: MsgKind::Update, fn_id: 7, txid: 9, val: b"arg".to_vec().into() },
        };
        let mut out = Vec::new();
        m.encode(&mut out);
        let mut r = Reader::new(&out);
        assert_eq!(Msg::decode(&mut r).unwrap(), m);
        assert!(r.is_empty());
        out[8] = 99;
        assert!(Msg::decode(&mut Reader::new(&out)).is_err());
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
        let b = MsgBody { kind: MsgKind::Broadcast, fn_id: 1, txid: 0, val: b"x".to_vec().into() };
        assert_eq!(apply_to_value(b"k", None, &b, &fns).unwrap(), None);
        assert_eq!(apply_to_value(b"k", Some(b"a".to_vec()), &b, &fns).unwrap(), Some(b"ax".to_vec()));
        let u = MsgBody { kind: MsgKind::Update, fn_id: 2, txid: 0, val: Box::new([]) };
        assert!(apply_to_value(b"k", None, &u, &fns).is_err());
    }
}
