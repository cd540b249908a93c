//! The evictor: a background thread that keeps the cache within its budget.
//!
//! A clock sweep over all entries: an entry used since the last visit gets a
//! second chance, and internal nodes (few, and on every path) are passed by
//! on the first turn so leaves go first. Otherwise, in order of cost: a clean leaf loses its
//! basements (its header stays, so the next point read costs one partition
//! read); a clean node nobody pins leaves the cache; a dirty node is written
//! back and becomes clean, to be evicted on a later visit.
//!
//! A node is evicted only if nobody holds it: its entry's `Arc` is held only
//! by the shard map and the sweep, and its lock's `Arc` only by the entry.
//! Both are checked under the shard's lock, the only place new holders come
//! from. Locks are only ever tried, never waited for, so the evictor cannot
//! deadlock with a client or the cleaner.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::RwLockUpgradableReadGuard;

use super::{Cache, Entry};

/// Starts the evictor thread of `cache`; it ends after `Cache::shutdown`.
pub(crate) fn spawn_evictor(cache: Arc<Cache>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("fractaldb-evictor".into())
        .spawn(move || {
            let mut hand = 0usize;
            loop {
                {
                    let mut w = cache.wake.0.lock();
                    if !*w && !cache.shutdown.load(Ordering::Relaxed) {
                        cache.wake.1.wait_for(&mut w, Duration::from_millis(100));
                    }
                    *w = false;
                }
                if cache.shutdown.load(Ordering::Relaxed) {
                    return;
                }
                let low_water = cache.budget_bytes - cache.budget_bytes / 8;
                if cache.used_bytes() > cache.budget_bytes - cache.budget_bytes / 16 {
                    hand = cache.evict_to(low_water, hand);
                }
                cache.space.1.notify_all();
            }
        })
        .expect("spawn evictor thread")
}

impl Cache {
    /// Sweeps until usage is at most `target_bytes` or three full turns of
    /// the clock made no further progress. Returns the new hand position.
    pub(crate) fn evict_to(&self, target_bytes: usize, mut hand: usize) -> usize {
        for turn in 0..3 {
            let entries = self.all_entries();
            if entries.is_empty() {
                return 0;
            }
            for _ in 0..entries.len() {
                if self.used_bytes() <= target_bytes || self.shutdown.load(Ordering::Relaxed) {
                    return hand;
                }
                hand = (hand + 1) % entries.len();
                let Some(e) = entries[hand].upgrade() else { continue };
                // Internal nodes are few and on every path: the first turn
                // of the clock passes them by, so leaves go first.
                if turn == 0 && e.node.try_read().is_some_and(|n| !n.is_leaf()) {
                    continue;
                }
                if e.referenced.swap(false, Ordering::Relaxed) {
                    continue;
                }
                // One entry is one step: a panic in it (a write-back's
                // serialization, a partial eviction: a bug, as no user
                // code runs here) fails that entry's dictionary rather than
                // killing the evictor, which every writer waits for when
                // the cache is full. Locks are released on unwinding; a
                // dirty node left half-written is its dictionary's to
                // distrust (`NodeOwner::background_panic`).
                if let Err(p) =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_evict(&e, turn)))
                {
                    e.owner.background_panic("the evictor", p);
                }
                // Let waiting clients go as soon as there is room.
                if self.used_bytes() <= self.budget_bytes {
                    self.space.1.notify_all();
                }
            }
        }
        hand
    }

    /// On the first turn only partitions go; a node's header (pivots and
    /// partition table, a few hundred bytes) leaves the cache only from the
    /// second turn on, so point reads keep finding their leaf's header.
    fn try_evict(&self, e: &Arc<Entry>, turn: usize) {
        let dirty = match e.node.try_read() {
            Some(g) => g.dirty,
            None => return,
        };
        // A poisoned owner's nodes go whole, dirty or not: they are never
        // written, and no one reads them before the environment reopens.
        if e.owner.poisoned() {
            self.try_remove(e, true);
            return;
        }
        if dirty {
            match e.owner.write_back(e) {
                Ok(true) => {
                    self.counters.write_backs.fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => {}
                Err(err) => e.owner.background_error(err),
            }
            return;
        }
        let Some(g) = e.node.try_upgradable_read() else { return };
        if g.dirty {
            return;
        }
        if g.has_loaded_parts() {
            let mut w = RwLockUpgradableReadGuard::upgrade(g);
            if w.evict_partitions() {
                self.recharge(e, w.mem_bytes());
                self.counters.partial_evictions.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        drop(g);
        if turn == 0 {
            return;
        }
        self.try_remove(e, false);
    }

    /// Removes a node nobody holds from the cache: a clean one, or with
    /// `even_dirty` (its owner is poisoned) any.
    fn try_remove(&self, e: &Arc<Entry>, even_dirty: bool) {
        let mut shard = self.shard(e.dict, e.bn).lock();
        // The map must hold this very entry. The sweep works from a list made
        // at the start of its turn, and since then the node may have been
        // freed (a merge, a root collapse) and its block number given to a
        // new node: the map's entry for (dict, bn) is then that other node,
        // perhaps dirty, and removing it would lose its changes and leave a
        // second copy of the node to be loaded from disk beside the one its
        // holders change.
        if !shard.get(&(e.dict, e.bn)).is_some_and(|m| Arc::ptr_eq(m, e)) {
            return;
        }
        // Two holders of the entry: the map and this sweep's upgrade. One of the lock:
        // the entry. Nobody else can pin it while we hold the shard.
        if Arc::strong_count(e) == 2 && Arc::strong_count(&e.node) == 1 {
            let clean = e.node.try_read().is_some_and(|n| even_dirty || !n.dirty);
            if clean && shard.remove(&(e.dict, e.bn)).is_some() {
                self.used_bytes.fetch_sub(e.charged_bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
                self.counters.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::node::Node;

    struct NoOwner;
    impl crate::cache::NodeOwner for NoOwner {
        fn write_back(&self, _: &Entry) -> crate::error::Result<bool> {
            Ok(false)
        }
        fn background_error(&self, err: crate::Error) {
            panic!("{err}")
        }
    }

    /// An owner whose write-back panics, recording what it is told.
    struct Panicky(parking_lot::Mutex<Vec<String>>);
    impl crate::cache::NodeOwner for Panicky {
        fn write_back(&self, _: &Entry) -> crate::error::Result<bool> {
            panic!("write-back bug")
        }
        fn background_error(&self, err: crate::Error) {
            panic!("{err}")
        }
        fn background_panic(&self, what: &str, payload: Box<dyn std::any::Any + Send>) {
            self.0.lock().push(format!("{what}: {}", crate::tree::panic_message(&*payload)));
        }
    }

    /// A step of the evictor that panics is reported to the node's owner,
    /// and the sweep (and the evictor thread) goes on.
    #[test]
    fn a_panicking_write_back_is_reported_and_the_sweep_goes_on() {
        let cache = Cache::new(1 << 20, true);
        let owner = Arc::new(Panicky(Default::default()));
        let dyn_owner: Arc<dyn crate::cache::NodeOwner> = owner.clone();
        let e = cache.insert_new(1, 7, Node::new_leaf(), dyn_owner);
        e.node.write().dirty = true;
        e.referenced.store(false, Ordering::Relaxed);
        drop(e);
        cache.evict_to(0, 0);
        let told = owner.0.lock().clone();
        assert!(!told.is_empty() && told[0] == "the evictor: write-back bug", "{told:?}");
    }

    /// A node freed while the sweep holds it (a merge) whose block number
    /// went to a new node: evicting the old entry must leave the new one.
    #[test]
    fn evicting_a_freed_entry_leaves_the_block_numbers_new_node() {
        let cache = Cache::new(1 << 20, true);
        let owner: Arc<dyn crate::cache::NodeOwner> = Arc::new(NoOwner);
        let old = cache.insert_new(1, 7, Node::new_leaf(), owner.clone());
        {
            // As a merge leaves the node it merged away: clean and empty.
            let mut g = old.node.write();
            g.dirty = false;
            g.basements_mut().clear();
        }
        // Freed (the map forgets it) and block 7 reused for a dirty new node.
        cache.remove(1, 7);
        let new = cache.insert_new(1, 7, Node::new_leaf(), owner);
        let used = cache.used_bytes();
        // The sweep's own reference and one more holder (the thread that
        // pinned it before the merge): the count of a cached, unpinned entry.
        let sweep = old.clone();
        cache.try_evict(&sweep, 1);
        let cached = cache.get(1, 7).expect("the new node stays cached");
        assert!(Arc::ptr_eq(&cached, &new));
        assert_eq!(cache.used_bytes(), used, "nothing uncharged");
    }
}
