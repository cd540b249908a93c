//! Counters a dictionary keeps for its users (the SQL layer keeps a table's
//! exact row count in one): signed totals that transactions change by
//! deltas (`Txn::add_count`), each reader seeing the totals its snapshot
//! says, with no write to any tree.
//!
//! How a delta travels:
//! - `Txn::add_count` keeps it in the transaction (a roll-back to a
//!   savepoint drops what was added after it);
//! - the commit record carries the transaction's deltas per dictionary
//!   (and so does a prepare record, so a prepared transaction restored
//!   after a crash still has them);
//! - the commit adds them to each dictionary's `Counts` while it holds the
//!   checkpoint lock shared, around the record's append, and the
//!   manager's lock, where it is decided committed: a checkpoint's begin
//!   (under the lock held exclusively) sees a commit's record and its
//!   deltas on the same side, and a snapshot sees a transaction's deltas
//!   exactly when it sees the transaction;
//! - a checkpoint writes the totals into the dictionary's header (`Meta`);
//!   recovery adds the deltas of the commit records at or after the
//!   header's `ckpt_lsn`.
//!
//! How a reader sees them: a snapshot taken before a commit was decided
//! does not see it, one taken after does. The manager decides under its
//! lock, so "after" is exact: a snapshot sees a commit iff its txid is at
//! least the manager's next txid at the decision (`f`). `Counts` keeps the
//! deltas some live snapshot does not see in groups labelled by `f`; two
//! neighbouring groups merge when no live snapshot's txid falls between
//! their labels (none can tell them apart, and later snapshots see both),
//! and a group every live snapshot sees is dropped. So the list holds at
//! most one group more than there are live snapshots, however many
//! commits a long snapshot outlives.

use std::collections::VecDeque;

/// How many counters each dictionary has.
pub const COUNTERS: usize = 2;

/// One delta (or total) per counter.
pub(crate) type Deltas = [i64; COUNTERS];

/// A dictionary's committed totals and the recent deltas some snapshot
/// does not see yet.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Every committed delta, summed (wrapping: a hostile caller's
    /// deltas must not panic the commit).
    total: Deltas,
    /// `(f, deltas)`: deltas of commits decided when the manager's next
    /// txid was at most `f` (and after the previous group's `f`), oldest
    /// first; a snapshot with txid `s` sees a group iff `s >= f`.
    recent: VecDeque<(u64, Deltas)>,
}

fn add(a: &mut Deltas, b: &Deltas) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(*y);
    }
}

fn sub(a: &mut Deltas, b: &Deltas) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_sub(*y);
    }
}

impl Counts {
    /// Totals read from a checkpoint's header.
    pub(crate) fn new(total: Deltas) -> Counts {
        Counts { total, recent: VecDeque::new() }
    }

    /// Every committed delta (what a checkpoint records and what a reader
    /// of the newest committed state sees).
    pub(crate) fn total(&self) -> Deltas {
        self.total
    }

    /// Adds the deltas of a commit decided when the manager's next txid
    /// was `f`, with `snaps` the txids of the oldest and newest snapshots
    /// still live (`None`: none). Called under the manager's lock, so `f`
    /// never decreases from one call to the next.
    pub(crate) fn commit(&mut self, f: u64, d: &Deltas, snaps: Option<(u64, u64)>) {
        add(&mut self.total, d);
        let Some((oldest, newest)) = snaps else {
            // Every later snapshot sees this commit and all before it.
            self.recent.clear();
            return;
        };
        debug_assert!(newest < f, "a live snapshot taken after the decision it is told of");
        while self.recent.front().is_some_and(|g| g.0 <= oldest) {
            self.recent.pop_front();
        }
        match self.recent.back_mut() {
            // No live snapshot's txid is in [g.0, f): none tells them apart.
            Some(g) if newest < g.0 => {
                debug_assert!(g.0 <= f, "groups out of order");
                g.0 = f;
                add(&mut g.1, d);
            }
            _ => self.recent.push_back((f, *d)),
        }
    }

    /// Adds deltas replayed by recovery (no snapshot is live).
    pub(crate) fn replay(&mut self, d: &Deltas) {
        add(&mut self.total, d);
    }

    /// The totals as a snapshot with txid `snap` sees them (`None`: the
    /// newest committed state).
    pub(crate) fn seen_by(&self, snap: Option<u64>) -> Deltas {
        let mut v = self.total;
        if let Some(s) = snap {
            for g in self.recent.iter().rev().take_while(|g| g.0 > s) {
                sub(&mut v, &g.1);
            }
        }
        v
    }

    #[cfg(test)]
    fn groups(&self) -> usize {
        self.recent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_see_the_commits_decided_before_them() {
        let mut c = Counts::new([10, 0]);
        // No snapshot: nothing kept.
        c.commit(5, &[1, 0], None);
        assert_eq!(c.groups(), 0);
        assert_eq!(c.seen_by(Some(3)), [11, 0]);
        // Snapshot 6 is live; commits decided at next txid 8 and 9.
        c.commit(8, &[2, 1], Some((6, 6)));
        c.commit(9, &[3, 0], Some((6, 6)));
        // Snapshot 6 tells neither apart: one group.
        assert_eq!(c.groups(), 1);
        assert_eq!(c.seen_by(Some(6)), [11, 0]);
        assert_eq!(c.seen_by(None), [16, 1]);
        // Snapshot 9 begins (sees both); a commit at 12 is new to both.
        c.commit(12, &[-4, 0], Some((6, 9)));
        assert_eq!(c.groups(), 2);
        assert_eq!(c.seen_by(Some(6)), [11, 0]);
        assert_eq!(c.seen_by(Some(9)), [16, 1]);
        assert_eq!(c.seen_by(Some(12)), [12, 1]);
        // Snapshot 6 ends: the group it alone missed goes.
        c.commit(13, &[1, 0], Some((9, 9)));
        assert_eq!(c.groups(), 1);
        assert_eq!(c.seen_by(Some(9)), [16, 1]);
        assert_eq!(c.seen_by(None), [13, 1]);
    }

    #[test]
    fn a_long_snapshot_keeps_one_group_however_many_commits_it_outlives() {
        let mut c = Counts::default();
        for f in 10..10_000u64 {
            c.commit(f, &[1, 0], Some((3, 3)));
        }
        assert_eq!(c.groups(), 1);
        assert_eq!(c.seen_by(Some(3)), [0, 0]);
        assert_eq!(c.seen_by(None), [9990, 0]);
    }

    #[test]
    fn hostile_deltas_wrap_instead_of_panicking() {
        let mut c = Counts::new([i64::MAX, i64::MIN]);
        c.commit(2, &[1, -1], Some((1, 1)));
        assert_eq!(c.seen_by(None), [i64::MIN, i64::MAX]);
        assert_eq!(c.seen_by(Some(1)), [i64::MAX, i64::MIN]);
    }
}
