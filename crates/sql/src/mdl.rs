//! Metadata locks (MySQL's MDL), one per table name: what keeps a table's
//! definition and dictionaries from changing under a transaction that
//! writes it.
//!
//! - **Shared**: taken by DML (INSERT, UPDATE, DELETE, REPLACE, LOAD DATA)
//!   and locking reads (`FOR UPDATE`, `LOCK IN SHARE MODE`) on every table
//!   they resolve by name (`Inner::table` while a [`dml_scope`] is set on
//!   the thread), held by the connection until its transaction ends (in
//!   autocommit: the statement): `Session` releases them after every
//!   statement that leaves no transaction open, and at COMMIT/ROLLBACK and
//!   implicit commits (`commit_open`). Plain reads take none: they read a
//!   snapshot through the `Arc<Table>` they resolved.
//! - **Exclusive**: taken by the DDL that replaces a table's record or
//!   dictionaries (ALTER, CREATE/DROP INDEX, DROP, TRUNCATE, RENAME) for as
//!   long as the change needs it: a copying ALTER for the whole copy, the
//!   online index build (`online.rs`) only for its two short moments. It
//!   waits at most `lock_wait_timeout` seconds (1205).
//!
//! **Invariant:** no connection holds a shared lock on a table while
//! another holds it exclusively. So a writer never writes through a
//! `Table` that DDL is replacing: every row a transaction writes is either
//! committed before a copying ALTER starts reading (the copy sees it) or
//! written after the new table is in the schema (and goes to it).
//!
//! A waiting exclusive request stops new shared grants (as in MySQL: a
//! stream of short writers cannot starve an ALTER), except to a
//! connection that already holds the table: it may be in an open
//! transaction the ALTER waits for, and making it wait would deadlock.
//! Locks are re-entrant per connection: a connection's own shared lock
//! never blocks its own exclusive request (its DDL commits the transaction
//! first anyway).
//!
//! **No deadlock with row locks:** a statement resolves its tables before
//! it reads or writes rows, so it takes its metadata locks before any row
//! lock of its own; a wait that still closes a cycle through an earlier
//! statement's row locks ends at `lock_wait_timeout` (the DDL's 1205) or
//! the row lock's timeout.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{SqlError, SqlResult};

type Key = (String, String);

#[derive(Default)]
struct Entry {
    shared: HashSet<u64>,
    exclusive: Option<u64>,
    /// Exclusive requests waiting.
    pending: usize,
}

#[derive(Default)]
struct State {
    tables: HashMap<Key, Entry>,
    /// Per connection, the tables it holds shared (`release` visits only
    /// these, not every table). Invariant: `owner` is in
    /// `tables[k].shared` exactly when `k` is in `held[owner]`.
    held: HashMap<u64, Vec<Key>>,
}

/// The metadata locks of a database (one per `Inner`).
#[derive(Clone, Default)]
pub(crate) struct Mdl {
    inner: Arc<(Mutex<State>, Condvar)>,
}

/// An exclusive lock; released when dropped.
pub(crate) struct Exclusive {
    mdl: Mdl,
    key: Key,
    owner: u64,
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let (m, cv) = &*self.mdl.inner;
        let mut st = m.lock();
        if let Some(e) = st.tables.get_mut(&self.key) {
            debug_assert_eq!(e.exclusive, Some(self.owner));
            e.exclusive = None;
            if e.shared.is_empty() && e.pending == 0 {
                st.tables.remove(&self.key);
            }
        }
        cv.notify_all();
    }
}

fn key(db: &str, table: &str) -> Key {
    (db.to_string(), table.to_string())
}

/// Waits on `cv` until `done`, or fails with 1205 at `deadline`, or with
/// 1317 once the statement is killed (the thread's interrupt flag, looked
/// at every `INTERRUPT_POLL`). `waiting` is told when the wait starts and
/// ends (the processlist's State).
fn wait_until(
    st: &mut parking_lot::MutexGuard<'_, State>,
    cv: &Condvar,
    deadline: Option<Instant>,
    mut done: impl FnMut(&State) -> bool,
) -> SqlResult<()> {
    if done(st) {
        return Ok(());
    }
    crate::progress::waiting_mdl(true);
    let r = loop {
        let poll = Instant::now() + fractaldb::INTERRUPT_POLL;
        cv.wait_until(st, deadline.map_or(poll, |d| d.min(poll)));
        if done(st) {
            break Ok(());
        }
        if fractaldb::interrupt_requested() {
            break Err(SqlError::interrupted());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break Err(SqlError::lock_wait_timeout());
        }
    };
    crate::progress::waiting_mdl(false);
    r
}

fn deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl Mdl {
    /// Takes a shared lock on `db`.`table` for connection `owner` (kept
    /// until [`Mdl::release`]).
    pub fn shared(&self, owner: u64, db: &str, table: &str, timeout: Duration) -> SqlResult<()> {
        let (m, cv) = &*self.inner;
        let k = key(db, table);
        let mut st = m.lock();
        {
            let e = st.tables.entry(k.clone()).or_default();
            if e.shared.contains(&owner) || e.exclusive == Some(owner) {
                return Ok(());
            }
        }
        let r = wait_until(&mut st, cv, deadline(timeout), |st| {
            st.tables.get(&k).is_none_or(|e| e.exclusive.is_none() && e.pending == 0)
        });
        match r {
            Ok(()) => {
                st.tables.entry(k.clone()).or_default().shared.insert(owner);
                st.held.entry(owner).or_default().push(k);
                Ok(())
            }
            Err(e) => {
                if st
                    .tables
                    .get(&k)
                    .is_some_and(|e| e.exclusive.is_none() && e.shared.is_empty() && e.pending == 0)
                {
                    st.tables.remove(&k);
                }
                Err(e)
            }
        }
    }

    /// Takes `db`.`table` exclusively for connection `owner`: waits for
    /// every other connection's lock to go. `None`: no time limit.
    pub fn exclusive(
        &self,
        owner: u64,
        db: &str,
        table: &str,
        timeout: Option<Duration>,
    ) -> SqlResult<Exclusive> {
        let (m, cv) = &*self.inner;
        let k = key(db, table);
        let mut st = m.lock();
        st.tables.entry(k.clone()).or_default().pending += 1;
        let r = wait_until(&mut st, cv, timeout.and_then(deadline), |st| {
            let e = &st.tables[&k];
            e.exclusive.is_none() && e.shared.iter().all(|o| *o == owner)
        });
        let e = st.tables.get_mut(&k).expect("entry of a pending request");
        e.pending -= 1;
        match r {
            Ok(()) => {
                e.exclusive = Some(owner);
                Ok(Exclusive { mdl: self.clone(), key: k, owner })
            }
            Err(err) => {
                if e.exclusive.is_none() && e.shared.is_empty() && e.pending == 0 {
                    st.tables.remove(&k);
                }
                // Shared requests held back by this one may go now.
                cv.notify_all();
                Err(err)
            }
        }
    }

    /// Releases every shared lock of connection `owner` (its transaction
    /// ended).
    pub fn release(&self, owner: u64) {
        let (m, cv) = &*self.inner;
        let mut st = m.lock();
        let Some(keys) = st.held.remove(&owner) else { return };
        for k in keys {
            let e = st.tables.get_mut(&k).expect("a held table's entry");
            let was = e.shared.remove(&owner);
            debug_assert!(was, "held lists a table the owner does not hold");
            if e.shared.is_empty() && e.exclusive.is_none() && e.pending == 0 {
                st.tables.remove(&k);
            }
        }
        cv.notify_all();
    }

    /// True if connection `owner` holds a shared lock on anything.
    #[cfg(test)]
    fn holds(&self, owner: u64) -> bool {
        let st = self.inner.0.lock();
        let holds = st.tables.values().any(|e| e.shared.contains(&owner));
        assert_eq!(holds, st.held.contains_key(&owner), "tables and held disagree");
        holds
    }
}

thread_local! {
    /// While a DML statement runs: its connection and `lock_wait_timeout`.
    static DML: Cell<Option<(u64, Duration)>> = const { Cell::new(None) };
}

/// Restores the thread's previous DML scope when dropped.
pub(crate) struct Scope(Option<(u64, Duration)>);

impl Drop for Scope {
    fn drop(&mut self) {
        DML.with(|c| c.set(self.0));
    }
}

/// Until the guard drops, tables this thread resolves by name
/// (`Inner::table`) are locked shared for connection `owner`.
pub(crate) fn dml_scope(owner: u64, timeout: Duration) -> Scope {
    Scope(DML.with(|c| c.replace(Some((owner, timeout)))))
}

/// The running DML statement's connection and timeout, if any.
pub(crate) fn dml_owner() -> Option<(u64, Duration)> {
    DML.with(|c| c.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_waits_for_shared_and_times_out() {
        let m = Mdl::default();
        m.shared(1, "d", "t", Duration::ZERO).unwrap();
        // The owner's own shared lock does not block its exclusive request.
        drop(m.exclusive(1, "d", "t", Some(Duration::ZERO)).unwrap());
        let e = m.exclusive(2, "d", "t", Some(Duration::from_millis(1))).err().unwrap();
        assert_eq!(e.code, 1205);
        // Another table is free.
        drop(m.exclusive(2, "d", "u", Some(Duration::ZERO)).unwrap());
        m.release(1);
        assert!(!m.holds(1));
        let x = m.exclusive(2, "d", "t", Some(Duration::ZERO)).unwrap();
        assert_eq!(m.shared(3, "d", "t", Duration::from_millis(1)).unwrap_err().code, 1205);
        drop(x);
        m.shared(3, "d", "t", Duration::ZERO).unwrap();
        assert!(m.inner.0.lock().tables.len() == 1);
        // A release frees every table the owner holds, and only its own.
        m.shared(3, "d", "u", Duration::ZERO).unwrap();
        m.shared(3, "d", "u", Duration::ZERO).unwrap();
        m.shared(4, "d", "u", Duration::ZERO).unwrap();
        m.release(3);
        assert!(!m.holds(3) && m.holds(4));
        assert_eq!(m.inner.0.lock().tables.len(), 1);
        m.release(4);
        m.release(4);
        assert!(!m.holds(4));
        assert!(m.inner.0.lock().tables.is_empty());
    }

    #[test]
    fn a_waiting_exclusive_request_holds_back_new_shared_ones_but_not_holders() {
        let m = Mdl::default();
        m.shared(1, "d", "t", Duration::ZERO).unwrap();
        let m2 = m.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let g = m2.exclusive(2, "d", "t", None).unwrap();
            tx.send(()).unwrap();
            drop(g);
        });
        while m.inner.0.lock().tables[&key("d", "t")].pending == 0 {
            std::thread::yield_now();
        }
        assert_eq!(m.shared(3, "d", "t", Duration::ZERO).unwrap_err().code, 1205);
        m.shared(1, "d", "t", Duration::ZERO).unwrap();
        assert!(rx.try_recv().is_err());
        m.release(1);
        rx.recv().unwrap();
        h.join().unwrap();
        m.shared(3, "d", "t", Duration::ZERO).unwrap();
    }
}
