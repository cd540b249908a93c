//! A dictionary's settings and root, kept in its file header's meta blob.
//!
//! ```text
//! meta_version u8 (4) | root block u64 (u64::MAX: empty tree) | max_msn u64 | ckpt_lsn u64 |
//! next_txid u64 | node_size_bytes u32 | basement_size_bytes u32 | fanout u32 | codec u8 |
//! comparator name (varint len + UTF-8; empty: bytewise) |
//! counters u8 | counters × i64 (the committed totals of `txn/counts.rs` at `ckpt_lsn`)
//! ```
//!
//! Version 2 lacks `next_txid` (read as 0: it predates transactions);
//! versions 2 and 3 lack the counters (read as 0: they predate them).

use crate::encoding::{put_bytes, Reader};
use crate::file::{BlockNum, Codec};
use crate::txn::counts::{Deltas, COUNTERS};

const META_VERSION: u8 = 4;
pub(crate) const NO_ROOT: BlockNum = u64::MAX;

/// Per-dictionary settings, fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub node_size_bytes: usize,
    pub basement_size_bytes: usize,
    pub fanout: usize,
    pub codec: Codec,
    pub comparator: Option<String>,
}

impl From<&crate::DictOptions> for Settings {
    /// The settings a new dictionary is created with (checked against their
    /// bounds by `Env::check_new_dict` before this).
    fn from(o: &crate::DictOptions) -> Settings {
        Settings {
            node_size_bytes: o.node_size_bytes,
            basement_size_bytes: o.basement_size_bytes,
            fanout: o.fanout,
            codec: o.codec,
            comparator: o.comparator.clone(),
        }
    }
}

impl From<&Settings> for crate::DictOptions {
    /// What a dictionary was created with, as `Dictionary::options` tells it.
    fn from(s: &Settings) -> crate::DictOptions {
        crate::DictOptions {
            node_size_bytes: s.node_size_bytes,
            basement_size_bytes: s.basement_size_bytes,
            fanout: s.fanout,
            codec: s.codec,
            comparator: s.comparator.clone(),
        }
    }
}

/// What a checkpoint records about a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub root: BlockNum,
    pub max_msn: u64,
    /// The LSN of the checkpoint-begin record this checkpoint was taken at:
    /// log records before it are in the file, records from it on are not.
    pub ckpt_lsn: u64,
    /// Every transaction id in the checkpointed tree is below this.
    pub next_txid: u64,
    pub settings: Settings,
    /// The dictionary's counters as committed before `ckpt_lsn`.
    pub counts: Deltas,
}

impl Meta {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let s = &self.settings;
        let mut out = vec![META_VERSION];
        out.extend_from_slice(&self.root.to_le_bytes());
        out.extend_from_slice(&self.max_msn.to_le_bytes());
        out.extend_from_slice(&self.ckpt_lsn.to_le_bytes());
        out.extend_from_slice(&self.next_txid.to_le_bytes());
        // Checked at create (`limits::check_settings`): all fit a u32.
        let u32_of = |v: usize| u32::try_from(v).expect("settings are checked at create");
        debug_assert!(
            crate::limits::check_settings(s.node_size_bytes, s.basement_size_bytes, s.fanout).is_ok()
        );
        out.extend_from_slice(&u32_of(s.node_size_bytes).to_le_bytes());
        out.extend_from_slice(&u32_of(s.basement_size_bytes).to_le_bytes());
        out.extend_from_slice(&u32_of(s.fanout).to_le_bytes());
        out.push(s.codec as u8);
        put_bytes(&mut out, s.comparator.as_deref().unwrap_or("").as_bytes());
        out.push(COUNTERS as u8);
        for c in self.counts {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Meta, String> {
        let mut r = Reader::new(bytes);
        let v = r.u8()?;
        if !(2..=META_VERSION).contains(&v) {
            return Err(format!("unknown dictionary meta version {v}"));
        }
        let root = r.u64()?;
        let max_msn = r.u64()?;
        let ckpt_lsn = r.u64()?;
        let next_txid = if v >= 3 { r.u64()? } else { 0 };
        let node_size_bytes = r.u32()? as usize;
        let basement_size_bytes = r.u32()? as usize;
        let fanout = r.u32()? as usize;
        let codec = r.u8()?;
        let codec = Codec::from_u8(codec).ok_or_else(|| format!("unknown codec {codec}"))?;
        let cmp = std::str::from_utf8(r.bytes()?).map_err(|_| "comparator name is not UTF-8".to_string())?;
        // The bounds create checks (`limits.rs`): a file saying otherwise
        // is damaged, and a node size past them would overflow the write
        // path's budgets.
        crate::limits::check_settings(node_size_bytes, basement_size_bytes, fanout)
            .map_err(|e| format!("impossible dictionary settings: {e}"))?;
        let comparator = if cmp.is_empty() { None } else { Some(cmp.to_string()) };
        let mut counts = [0; COUNTERS];
        if v >= 4 {
            let n = r.u8()? as usize;
            if n != COUNTERS {
                return Err(format!("the header has {n} counters, not {COUNTERS}"));
            }
            for c in counts.iter_mut() {
                *c = r.u64()? as i64;
            }
        }
        Ok(Meta {
            root,
            max_msn,
            ckpt_lsn,
            next_txid,
            settings: Settings { node_size_bytes, basement_size_bytes, fanout, codec, comparator },
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_and_rejects_garbage() {
        let m = Meta {
            root: 3,
            max_msn: 99,
            ckpt_lsn: 1234,
            next_txid: 12,
            settings: Settings {
                node_size_bytes: 4096,
                basement_size_bytes: 512,
                fanout: 4,
                codec: Codec::Lz4,
                comparator: Some("reverse".into()),
            },
            counts: [7, -3],
        };
        assert_eq!(Meta::decode(&m.encode()).unwrap(), m);
        let bytes = m.encode();
        for cut in 0..bytes.len() {
            assert!(Meta::decode(&bytes[..cut]).is_err());
        }
        // Settings outside the bounds create checks are refused at open.
        // Node size is at 33, basement size at 37, fanout at 41.
        let set = |at: usize, v: u32| {
            let mut b = bytes.clone();
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            Meta::decode(&b)
        };
        assert!(set(33, 4096).is_ok());
        for (at, v) in [
            (33, 0),
            (33, u32::MAX),
            (33, crate::limits::MAX_NODE_BYTES as u32 + 1),
            (37, 0),
            (37, 4097),
            (41, 1),
            (41, crate::limits::MAX_FANOUT as u32 + 1),
        ] {
            assert!(set(at, v).is_err(), "byte {at} = {v}");
        }
    }
}
