//! MySQL's XA statements over the engine's two-phase commit
//! (`Txn::prepare`, `Env::prepared`, `Env::commit_prepared`).
//!
//! A session runs at most one XA transaction; its states are MariaDB's:
//! `XA START` makes it ACTIVE (statements run in it), `XA END` IDLE,
//! `XA PREPARE` PREPARED (the engine's prepare: durable, survives a crash),
//! and `XA COMMIT` / `XA ROLLBACK` end it (`XA COMMIT ... ONE PHASE` from
//! IDLE). A PREPARED transaction outlives its session: when the session
//! ends, the engine keeps it, and `XA COMMIT 'x'` / `XA ROLLBACK 'x'` from
//! any session without a transaction of its own ends it, as after a
//! restart. `XA RECOVER` lists the prepared ones (those still attached to
//! their session included, as MariaDB does).
//!
//! The engine's xid is `slot u32 | formatID u32 | gtrid length u8 | gtrid |
//! bqual` (big-endian). `slot` is the row-count slot (`table.rs`) the XA
//! transaction writes its row-count deltas through: one of its own, from
//! `XA_SLOT_BASE` up, distinct from every live or prepared XA
//! transaction's, so a prepared transaction's locks on its status keys
//! (kept after its session ended, or restored after a restart) never block
//! a session's writes to the same table. It is in the xid so that it is
//! known after a restart.

use std::collections::HashSet;

use crate::error::{SqlError, SqlResult};
use crate::session::{ColumnMeta, Outcome, ResultSet, Session};
use crate::types::SqlType;
use crate::value::Value;

/// Longest gtrid and bqual (MySQL's MAXGTRIDSIZE and MAXBQUALSIZE).
pub const MAX_PART: usize = 64;
/// The highest formatID the grammar takes.
pub const MAX_FORMAT_ID: u64 = i32::MAX as u64;
/// XA transactions' row-count slots start here; sessions' count up from 0.
const XA_SLOT_BASE: u32 = 0x8000_0000;

/// An XA transaction id as written: `'gtrid'[, 'bqual'[, formatID]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xid {
    pub gtrid: Vec<u8>,
    pub bqual: Vec<u8>,
    pub format_id: u32,
}

/// A parsed XA statement (`lex.rs`).
#[derive(Clone, Debug, PartialEq)]
pub enum XaStmt {
    /// `XA {START|BEGIN} xid [JOIN|RESUME]` (`join`: either option given).
    Start {
        xid: Xid,
        join: bool,
    },
    /// `XA END xid [SUSPEND [FOR MIGRATE]]`.
    End {
        xid: Xid,
        suspend: bool,
    },
    Prepare(Xid),
    Commit {
        xid: Xid,
        one_phase: bool,
    },
    Rollback(Xid),
    /// `XA RECOVER [FORMAT = 'name']`.
    Recover {
        format: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum XaState {
    Active,
    Idle,
    Prepared,
}

impl XaState {
    fn name(self) -> &'static str {
        match self {
            XaState::Active => "ACTIVE",
            XaState::Idle => "IDLE",
            XaState::Prepared => "PREPARED",
        }
    }
}

/// A session's XA transaction (its engine transaction is `Session::txn`).
pub(crate) struct XaCur {
    pub xid: Xid,
    pub state: XaState,
    /// The session's own row-count slot, back in `Session::slot` when the
    /// XA transaction ends.
    pub own_slot: u32,
}

/// The live sessions' XA transactions (ACTIVE, IDLE or PREPARED), for
/// XAER_DUPID and to keep their slots apart.
#[derive(Default)]
pub(crate) struct Registry {
    ids: HashSet<Vec<u8>>,
    slots: HashSet<u32>,
}

fn rmfail(state: &str) -> SqlError {
    SqlError::new(
        1399,
        "XAE07",
        format!(
            "XAER_RMFAIL: The command cannot be executed when global transaction is in the  {state} state"
        ),
    )
}

fn nota() -> SqlError {
    SqlError::new(1397, "XAE04", "XAER_NOTA: Unknown XID")
}

fn inval() -> SqlError {
    SqlError::new(1398, "XAE05", "XAER_INVAL: Invalid arguments (or unsupported command)")
}

fn outside() -> SqlError {
    SqlError::new(1400, "XAE09", "XAER_OUTSIDE: Some work is done outside global transaction")
}

/// The XA transaction lost its engine transaction to a deadlock (the
/// victim's whole transaction is rolled back, as in InnoDB): only
/// XA ROLLBACK ends it quietly.
fn rbdeadlock() -> SqlError {
    SqlError::new(1614, "XA102", "XA_RBDEADLOCK: Transaction branch was rolled back: deadlock was detected")
}

fn dupid() -> SqlError {
    SqlError::new(1440, "XAE08", "XAER_DUPID: The XID already exists")
}

impl Xid {
    /// The key identifying it in the registry: the xid without the slot.
    fn key(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(5 + self.gtrid.len() + self.bqual.len());
        v.extend_from_slice(&self.format_id.to_be_bytes());
        v.push(self.gtrid.len() as u8);
        v.extend_from_slice(&self.gtrid);
        v.extend_from_slice(&self.bqual);
        v
    }

    fn engine(&self, slot: u32) -> Vec<u8> {
        let mut v = slot.to_be_bytes().to_vec();
        v.extend_from_slice(&self.key());
        v
    }

    /// An engine xid back: (slot, xid); `None` if not one of ours.
    fn decode(b: &[u8]) -> Option<(u32, Xid)> {
        let slot = u32::from_be_bytes(b.get(0..4)?.try_into().ok()?);
        let format_id = u32::from_be_bytes(b.get(4..8)?.try_into().ok()?);
        let glen = *b.get(8)? as usize;
        let gtrid = b.get(9..9 + glen)?.to_vec();
        let bqual = b[9 + glen..].to_vec();
        Some((slot, Xid { gtrid, bqual, format_id }))
    }

    /// XA RECOVER FORMAT='SQL': the xid as it is written in a statement.
    fn sql(&self) -> String {
        let plain =
            |b: &[u8]| b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b' ' || c == b'-' || c == b'_');
        let quoted = plain(&self.gtrid) && plain(&self.bqual);
        let part = |b: &[u8]| match quoted {
            true => format!("'{}'", String::from_utf8_lossy(b)),
            false => format!("X'{}'", b.iter().map(|c| format!("{c:02x}")).collect::<String>()),
        };
        let mut s = part(&self.gtrid);
        if !self.bqual.is_empty() || self.format_id != 1 {
            s.push(',');
            s.push_str(&part(&self.bqual));
        }
        if self.format_id != 1 {
            s.push_str(&format!(",{}", self.format_id));
        }
        s
    }
}

/// The statements a session in XA state IDLE or PREPARED may not run
/// (its tables are closed to it, as in MariaDB).
pub(crate) fn check_statement_allowed(s: &Session) -> SqlResult<()> {
    match &s.xa {
        Some(x) if x.state != XaState::Active => Err(rmfail(x.state.name())),
        Some(_) if s.txn.is_none() => Err(rbdeadlock()),
        _ => Ok(()),
    }
}

/// COMMIT, ROLLBACK, BEGIN and statements that commit implicitly are
/// refused inside an XA transaction, whatever its state.
pub(crate) fn check_no_xa(s: &Session) -> SqlResult<()> {
    match &s.xa {
        Some(x) => Err(rmfail(x.state.name())),
        None => Ok(()),
    }
}

/// Ends the session's XA transaction when the session ends or is reset: a
/// PREPARED one is left to the engine (dropping its `Txn` keeps it
/// prepared), any other is rolled back.
pub(crate) fn session_ends(s: &mut Session) {
    let Some(x) = s.xa.take() else { return };
    if let Some(t) = s.txn.take() {
        if x.state == XaState::Prepared {
            drop(t);
        } else {
            let _ = t.abort();
        }
    }
    release(s, &x);
}

fn release(s: &mut Session, x: &XaCur) {
    let mut reg = s.inner.xa.lock();
    reg.ids.remove(&x.xid.key());
    reg.slots.remove(&s.slot);
    s.slot = x.own_slot;
}

/// The prepared transactions the engine holds: (engine xid, slot, xid).
fn prepared(s: &Session) -> Vec<(Vec<u8>, u32, Xid)> {
    s.inner
        .env
        .prepared()
        .into_iter()
        .filter_map(|p| Xid::decode(&p.xid).map(|(slot, x)| (p.xid, slot, x)))
        .collect()
}

pub(crate) fn execute(s: &mut Session, stmt: XaStmt) -> SqlResult<Outcome> {
    match stmt {
        XaStmt::Start { xid, join } => start(s, xid, join),
        XaStmt::End { xid, suspend } => {
            if suspend {
                return Err(inval());
            }
            let x = s.xa.as_mut().ok_or_else(|| rmfail("NON-EXISTING"))?;
            if x.state != XaState::Active {
                return Err(rmfail(x.state.name()));
            }
            if x.xid != xid {
                return Err(nota());
            }
            if s.txn.is_none() {
                return Err(rbdeadlock());
            }
            x.state = XaState::Idle;
            Ok(Outcome::done(0))
        }
        XaStmt::Prepare(xid) => {
            let x = s.xa.as_ref().ok_or_else(|| rmfail("NON-EXISTING"))?;
            if x.state != XaState::Idle {
                return Err(rmfail(x.state.name()));
            }
            if x.xid != xid {
                return Err(nota());
            }
            let engine_xid = xid.engine(s.slot);
            let txn = s.txn.as_ref().ok_or_else(rbdeadlock)?;
            txn.prepare(&engine_xid)?;
            s.xa.as_mut().expect("checked").state = XaState::Prepared;
            Ok(Outcome::done(0))
        }
        XaStmt::Commit { xid, one_phase } => finish(s, xid, true, one_phase),
        XaStmt::Rollback(xid) => finish(s, xid, false, false),
        XaStmt::Recover { format } => recover(s, format),
    }
}

fn start(s: &mut Session, xid: Xid, join: bool) -> SqlResult<Outcome> {
    if join || xid.gtrid.is_empty() {
        return Err(inval());
    }
    if let Some(x) = &s.xa {
        return Err(rmfail(x.state.name()));
    }
    if s.txn.is_some() || s.tables_locked {
        return Err(outside());
    }
    let prepared = prepared(s);
    let slot = {
        let mut reg = s.inner.xa.lock();
        if reg.ids.contains(&xid.key()) || prepared.iter().any(|p| p.2 == xid) {
            return Err(dupid());
        }
        let taken: HashSet<u32> = prepared.iter().map(|p| p.1).chain(reg.slots.iter().copied()).collect();
        let slot =
            (XA_SLOT_BASE..u32::MAX).find(|n| !taken.contains(n)).expect("fewer than 2^31 XA transactions");
        reg.ids.insert(xid.key());
        reg.slots.insert(slot);
        slot
    };
    let iso = s.next_isolation.take().unwrap_or(s.isolation);
    match s.inner.env.begin_with(s.txn_options(iso)) {
        Ok(t) => s.txn = Some(t),
        Err(e) => {
            let mut reg = s.inner.xa.lock();
            reg.ids.remove(&xid.key());
            reg.slots.remove(&slot);
            return Err(e.into());
        }
    }
    s.explicit = true;
    s.xa = Some(XaCur { xid, state: XaState::Active, own_slot: s.slot });
    s.slot = slot;
    Ok(Outcome::done(0))
}

/// XA COMMIT (`commit`) or XA ROLLBACK.
fn finish(s: &mut Session, xid: Xid, commit: bool, one_phase: bool) -> SqlResult<Outcome> {
    let mine = s.xa.as_ref().is_some_and(|x| x.xid == xid);
    if !mine {
        // Someone else's: only from a session with no transaction of its own.
        if s.xa.is_some() || s.txn.is_some() {
            return Err(outside());
        }
        if one_phase {
            return Err(inval());
        }
        let Some((engine_xid, _, _)) = prepared(s).into_iter().find(|p| p.2 == xid) else {
            return Err(nota());
        };
        let done = match commit {
            true => s.inner.env.commit_prepared(&engine_xid)?,
            false => s.inner.env.rollback_prepared(&engine_xid)?,
        };
        // Still attached to its live session: only that one can end it.
        return if done { Ok(Outcome::done(0)) } else { Err(nota()) };
    }
    let state = s.xa.as_ref().expect("mine").state;
    match (commit, one_phase, state) {
        (true, true, XaState::Idle) | (true, false, XaState::Prepared) => {}
        (true, true, XaState::Prepared) => return Err(inval()),
        (false, _, XaState::Idle | XaState::Prepared) => {}
        (_, _, st) => return Err(rmfail(st.name())),
    }
    let x = s.xa.take().expect("mine");
    let t = s.txn.take();
    s.explicit = false;
    s.savepoints.clear();
    release(s, &x);
    match (t, commit) {
        (Some(t), true) => t.commit()?,
        (Some(t), false) => t.abort()?,
        (None, true) => return Err(rbdeadlock()),
        (None, false) => {}
    }
    Ok(Outcome::done(0))
}

fn recover(s: &mut Session, format: Option<String>) -> SqlResult<Outcome> {
    let sql = match format.as_deref() {
        None => false,
        Some(f) if f.eq_ignore_ascii_case("SQL") => true,
        Some(f) if f.eq_ignore_ascii_case("RAW") => false,
        Some(f) => {
            return Err(SqlError::new(1791, "HY000", format!("Unknown XA RECOVER format name: '{f}'")))
        }
    };
    let int = SqlType::Int { bytes: 8, unsigned: false };
    let data_len = if sql { (2 * MAX_PART * 2 + 16) as u64 } else { (2 * MAX_PART) as u64 };
    let columns = vec![
        ColumnMeta::expr("formatID", int.clone()),
        ColumnMeta::expr("gtrid_length", int.clone()),
        ColumnMeta::expr("bqual_length", int),
        ColumnMeta::expr(
            "data",
            SqlType::Str {
                kind: crate::types::StrKind::Var,
                len: data_len,
                coll: crate::types::Collation::Binary,
            },
        ),
    ];
    let rows = prepared(s)
        .into_iter()
        .map(|(_, _, x)| {
            let data = match sql {
                true => x.sql().into_bytes(),
                false => [x.gtrid.as_slice(), x.bqual.as_slice()].concat(),
            };
            vec![
                Value::Int(x.format_id as i64),
                Value::Int(x.gtrid.len() as i64),
                Value::Int(x.bqual.len() as i64),
                Value::Str(data),
            ]
        })
        .collect();
    Ok(Outcome::Rows(ResultSet { columns, rows }))
}
