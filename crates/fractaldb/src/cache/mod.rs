//! The node cache: one for all dictionaries of an environment, bounded in bytes.
//!
//! Every node a thread reads or changes is pinned in the cache: a thread
//! holds an `Arc` of the node's entry (or of its lock) for as long as it uses
//! it, and an entry someone holds is never evicted. Nodes are charged by the
//! bytes they hold (`Node::mem_bytes`), recharged after every change.
//!
//! Eviction runs on its own thread (`evict.rs`) with a clock sweep. It first
//! drops the basements of clean leaves (keeping their headers, so a later
//! point read fetches one basement), then whole clean nodes; a dirty node is
//! first written back, by the same thread, so client threads never write.
//! A client adding memory while the cache is more than `slack` over budget
//! waits for the evictor (back-pressure), and never while holding a node lock.
//!
//! The cache knows the tree's `Node` type only for the three things eviction
//! asks of it: is it dirty, how big is it, and drop its basements.

mod evict;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::error::Result;
use crate::file::BlockNum;
use crate::tree::node::Node;

/// Identifies a dictionary inside one environment's cache.
pub(crate) type DictId = u32;

const SHARDS: usize = 16;

/// A fixed hasher (SipHash with zero keys), so iteration order, and with it
/// eviction order, is the same in every run: simulation tests replay exactly.
type FixedState = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
type Shard = Mutex<HashMap<(DictId, BlockNum), Arc<Entry>, FixedState>>;

/// What owns a cached node: writes it back when the cache needs the memory.
pub(crate) trait NodeOwner: Send + Sync {
    /// Writes a dirty node to a new place on disk and marks it clean, if its
    /// locks can be had without waiting. Returns whether it wrote.
    fn write_back(&self, entry: &Entry) -> Result<bool>;
    /// An error happened on a background thread while working for this owner.
    fn background_error(&self, err: crate::Error);
    /// A panic interrupted a change to the owner's nodes: they may be
    /// half-changed, are never written, and the evictor drops them, dirty
    /// or not (no one reads them again before the environment is reopened).
    fn poisoned(&self) -> bool {
        false
    }
    /// A step of the evictor (`what`) panicked while working on one of the
    /// owner's nodes; the owner is to stop trusting its nodes in memory.
    fn background_panic(&self, what: &str, payload: Box<dyn std::any::Any + Send>) {
        let _ = what;
        std::panic::resume_unwind(payload)
    }
}

/// One cached node.
pub(crate) struct Entry {
    pub dict: DictId,
    pub bn: BlockNum,
    pub node: Arc<RwLock<Node>>,
    charged_bytes: AtomicUsize,
    referenced: AtomicBool,
    pub(crate) owner: Arc<dyn NodeOwner>,
}

/// Counters, for tests, the benchmark report and `EnvStats`.
#[derive(Default, Debug, Clone, Copy)]
pub struct CacheStats {
    pub budget_bytes: usize,
    pub used_bytes: usize,
    /// The most the cache ever held.
    pub peak_used_bytes: usize,
    pub hits: u64,
    pub misses: u64,
    pub partial_evictions: u64,
    pub evictions: u64,
    pub write_backs: u64,
    pub client_waits: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    partial_evictions: AtomicU64,
    evictions: AtomicU64,
    pub(crate) write_backs: AtomicU64,
    client_waits: AtomicU64,
}

/// Memory charged to the cache outside its nodes (`Cache::hold`).
pub(crate) struct Held<'a> {
    cache: &'a Cache,
    bytes: usize,
}

impl Held<'_> {
    pub(crate) fn add(&mut self, bytes: usize) {
        self.bytes += bytes;
        self.cache.hold_extra(bytes);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cache.release_extra(self.bytes);
    }
}

/// The cache of one environment.
pub(crate) struct Cache {
    budget_bytes: usize,
    /// How far over budget the cache may go before clients wait.
    slack_bytes: usize,
    used_bytes: AtomicUsize,
    peak_used_bytes: AtomicUsize,
    shards: Vec<Shard>,
    pub(crate) counters: Counters,
    /// Wakes the evictor; the flag says "work to do".
    wake: (Mutex<bool>, Condvar),
    /// Wakes clients waiting for memory.
    space: (Mutex<()>, Condvar),
    shutdown: AtomicBool,
    /// No evictor thread: clients over budget evict on their own thread
    /// (`EnvOptions::background_threads` off), from this clock hand.
    inline_hand: Option<Mutex<usize>>,
}

impl Cache {
    pub(crate) fn new(budget_bytes: usize, inline_eviction: bool) -> Arc<Cache> {
        Arc::new(Cache {
            budget_bytes,
            slack_bytes: (budget_bytes / 16).max(64 << 10),
            used_bytes: AtomicUsize::new(0),
            peak_used_bytes: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::default())).collect(),
            counters: Counters::default(),
            wake: (Mutex::new(false), Condvar::new()),
            space: (Mutex::new(()), Condvar::new()),
            shutdown: AtomicBool::new(false),
            inline_hand: inline_eviction.then(|| Mutex::new(0)),
        })
    }

    fn shard(&self, dict: DictId, bn: BlockNum) -> &Shard {
        let h = (bn ^ ((dict as u64) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        &self.shards[(h >> 60) as usize % SHARDS]
    }

    pub(crate) fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    /// The cached entry for a node, if present; marks it recently used.
    pub(crate) fn get(&self, dict: DictId, bn: BlockNum) -> Option<Arc<Entry>> {
        let e = self.shard(dict, bn).lock().get(&(dict, bn)).cloned();
        match &e {
            Some(e) => {
                e.referenced.store(true, Ordering::Relaxed);
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.counters.misses.fetch_add(1, Ordering::Relaxed);
            }
        }
        e
    }

    /// Inserts a node read from disk, unless the node is already cached (its
    /// entry is returned) or `still_current` says the disk copy was replaced
    /// while it was being read (`None`: read again).
    pub(crate) fn insert_loaded(
        &self,
        dict: DictId,
        bn: BlockNum,
        node: Node,
        owner: Arc<dyn NodeOwner>,
        still_current: impl FnOnce() -> bool,
    ) -> Option<Arc<Entry>> {
        let mut shard = self.shard(dict, bn).lock();
        if let Some(e) = shard.get(&(dict, bn)) {
            return Some(e.clone());
        }
        if !still_current() {
            return None;
        }
        let e = self.new_entry(dict, bn, node, owner);
        shard.insert((dict, bn), e.clone());
        Some(e)
    }

    /// Inserts a node that was just created (a split, a new root): it must
    /// not be cached yet.
    pub(crate) fn insert_new(
        &self,
        dict: DictId,
        bn: BlockNum,
        node: Node,
        owner: Arc<dyn NodeOwner>,
    ) -> Arc<Entry> {
        let e = self.new_entry(dict, bn, node, owner);
        let prev = self.shard(dict, bn).lock().insert((dict, bn), e.clone());
        assert!(prev.is_none(), "block {bn} of dictionary {dict} cached twice");
        e
    }

    fn new_entry(&self, dict: DictId, bn: BlockNum, node: Node, owner: Arc<dyn NodeOwner>) -> Arc<Entry> {
        let bytes = node.mem_bytes();
        self.used_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.maybe_wake_evictor();
        Arc::new(Entry {
            dict,
            bn,
            node: Arc::new(RwLock::new(node)),
            charged_bytes: AtomicUsize::new(bytes),
            referenced: AtomicBool::new(true),
            owner,
        })
    }

    /// Charges memory held outside any node and outside any one call (a
    /// spill waiting to be written, `tree/pending.rs`), so the evictor makes
    /// room for it as for a node; `release_extra` gives it back. Never
    /// waits.
    pub(crate) fn hold_extra(&self, bytes: usize) {
        self.used_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.maybe_wake_evictor();
    }

    pub(crate) fn release_extra(&self, bytes: usize) {
        self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Charges memory held outside any cached node (a flush's decoded
    /// spills) until the guard is dropped, so the evictor makes room for it
    /// as for a node. Never waits: call it under node locks.
    pub(crate) fn hold(&self, bytes: usize) -> Held<'_> {
        let mut h = Held { cache: self, bytes: 0 };
        h.add(bytes);
        h
    }

    /// Charges an entry for its node's current size. Call after every change.
    pub(crate) fn recharge(&self, entry: &Entry, now_bytes: usize) {
        let before = entry.charged_bytes.swap(now_bytes, Ordering::Relaxed);
        if now_bytes >= before {
            self.used_bytes.fetch_add(now_bytes - before, Ordering::Relaxed);
            self.maybe_wake_evictor();
        } else {
            self.used_bytes.fetch_sub(before - now_bytes, Ordering::Relaxed);
        }
    }

    /// Forgets a node whose block was freed (merged away or dropped).
    pub(crate) fn remove(&self, dict: DictId, bn: BlockNum) {
        if let Some(e) = self.shard(dict, bn).lock().remove(&(dict, bn)) {
            self.used_bytes.fetch_sub(e.charged_bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Forgets every node of a dictionary (closed or dropped).
    pub(crate) fn remove_dict(&self, dict: DictId) {
        for shard in &self.shards {
            shard.lock().retain(|(d, _), e| {
                if *d == dict {
                    self.used_bytes.fetch_sub(e.charged_bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
                    false
                } else {
                    true
                }
            });
        }
        self.space.1.notify_all();
    }

    /// Every cached entry of a dictionary (for checkpoints and checks).
    pub(crate) fn entries_of(&self, dict: DictId) -> Vec<Arc<Entry>> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(shard.lock().iter().filter(|((d, _), _)| *d == dict).map(|(_, e)| e.clone()));
        }
        out
    }

    /// Weak references, so that a node the sweep evicts is freed at once
    /// rather than when the sweep ends.
    fn all_entries(&self) -> Vec<std::sync::Weak<Entry>> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(shard.lock().values().map(Arc::downgrade));
        }
        out
    }

    fn maybe_wake_evictor(&self) {
        self.peak_used_bytes.fetch_max(self.used_bytes(), Ordering::Relaxed);
        if self.used_bytes() > self.budget_bytes - self.budget_bytes / 16 {
            let mut w = self.wake.0.lock();
            if !*w {
                *w = true;
                self.wake.1.notify_one();
            }
        }
    }

    /// Back-pressure: a client about to add data waits while the cache is
    /// more than its slack over budget. Call with no node locks held. Gives up
    /// waiting after 5 s so that a cache full of pinned nodes slows clients
    /// down instead of stopping them.
    pub(crate) fn throttle(&self) {
        if self.used_bytes() <= self.budget_bytes + self.slack_bytes {
            return;
        }
        self.counters.client_waits.fetch_add(1, Ordering::Relaxed);
        if let Some(hand) = &self.inline_hand {
            let mut hand = hand.lock();
            *hand = self.evict_to(self.budget_bytes - self.budget_bytes / 8, *hand);
            return;
        }
        let mut g = self.space.0.lock();
        for _ in 0..500 {
            if self.used_bytes() <= self.budget_bytes || self.shutdown.load(Ordering::Relaxed) {
                return;
            }
            self.maybe_wake_evictor();
            self.space.1.wait_for(&mut g, Duration::from_millis(10));
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let c = &self.counters;
        CacheStats {
            budget_bytes: self.budget_bytes,
            used_bytes: self.used_bytes(),
            peak_used_bytes: self.peak_used_bytes.load(Ordering::Relaxed),
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            partial_evictions: c.partial_evictions.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            write_backs: c.write_backs.load(Ordering::Relaxed),
            client_waits: c.client_waits.load(Ordering::Relaxed),
        }
    }

    /// Stops the evictor thread.
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Relaxed);
        *self.wake.0.lock() = true;
        self.wake.1.notify_all();
        self.space.1.notify_all();
    }
}

pub(crate) use evict::spawn_evictor;
