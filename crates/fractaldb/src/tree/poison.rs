//! Panics in user code.
//!
//! User code (update functions, comparators) runs deep inside the tree.
//! A panic is caught at the boundaries: the public entry points (the tree's:
//! `write_msgs`, `get`, `newest_committed_txid`; the cursor's and the
//! transaction layer's calls; `Dictionary::check`) and each step of each
//! background thread (`clean_step`, `drain_step`, write-backs, spill
//! writes, checkpoints; the loops in env/threads.rs and cache/evict.rs). A
//! panic while a node was being changed in place poisons the tree: a
//! `Changing` guard, declared after the node locks in every frame that
//! changes nodes, marks it during unwinding, before those locks are
//! released, so no thread that takes them afterwards can miss it.
//! Readers check the mark after their last lock (`guarded_read`), so a
//! half-changed node is never served.

use super::*;

/// The message of a caught panic's payload (a `&str` or `String`, as
/// `panic!` makes them), or a stand-in.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(p) = payload.downcast_ref::<message::UpdateFnPanic>() {
        p.message.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// Marks its tree poisoned if it is dropped while the thread unwinds from
/// a panic (`Tree::changing`).
pub(crate) struct Changing<'a>(&'a Tree);

impl Drop for Changing<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, AtomicOrdering::SeqCst);
        }
    }
}

impl Tree {
    /// A guard to hold, declared after the node write locks, while
    /// changing nodes in place: a panic before it is dropped poisons the tree.
    pub(crate) fn changing(&self) -> Changing<'_> {
        Changing(self)
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(AtomicOrdering::SeqCst)
    }

    /// Poisons the tree (see `poisoned`) for a panic of `callback`, and
    /// says so on stderr once.
    pub(crate) fn poison(&self, callback: &str, message: &str) {
        self.poisoned.store(true, AtomicOrdering::SeqCst);
        let mut cause = self.poison_cause.lock();
        if cause.is_none() {
            let reason = format!(
                "{callback} panicked ({message}) while the dictionary was changed in memory; \
                 it refuses reads and writes until the environment is reopened"
            );
            eprintln!("fractaldb: {}: {reason}", self.path().display());
            *cause = Some((callback.to_string(), message.to_string()));
            self.fail(reason);
        }
    }

    /// What a caught panic's payload says: who panicked (an update
    /// function, by the payload `apply_to_value` gives it; else the
    /// dictionary's comparator, the only other user code a tree runs) and
    /// the message. `None`: the engine's own code panicked (a bug).
    pub(super) fn panic_cause(&self, payload: &(dyn std::any::Any + Send)) -> Option<(String, String)> {
        if let Some(p) = payload.downcast_ref::<message::UpdateFnPanic>() {
            return Some((format!("update function {}", p.fn_id), p.message.clone()));
        }
        let name = self.settings.comparator.as_ref()?;
        Some((format!("comparator {name:?}"), panic_message(payload)))
    }

    /// Turns a panic caught at a boundary into an error, poisoning the tree
    /// if `changing` (the work changed nodes in place) or a `Changing` guard
    /// did. A panic of the engine's own code is a bug: it goes on unwinding
    /// (after the poisoning), so that it is found.
    pub(crate) fn caught(&self, payload: Box<dyn std::any::Any + Send>, changing: bool) -> Error {
        let cause = self.panic_cause(&*payload);
        if changing || self.is_poisoned() {
            match &cause {
                Some((callback, message)) => self.poison(callback, message),
                None => self.poison("fractaldb itself (a bug)", &panic_message(&*payload)),
            }
        }
        match cause {
            Some((callback, message)) => Error::CallbackPanicked { callback, message },
            None => std::panic::resume_unwind(payload),
        }
    }

    /// Runs `f`, which changes nothing in place (a read, or work before
    /// any node lock), turning a panic of user code into an error.
    pub(crate) fn guarded<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|p| Err(self.caught(p, false)))
    }

    /// `guarded` for a read: refused on a poisoned tree, before and after
    /// (a reader that took a lock a panicking thread released sees the
    /// mark, set before the release).
    pub(crate) fn guarded_read<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_readable()?;
        let r = self.guarded(f)?;
        self.check_readable()?;
        Ok(r)
    }

    /// Runs `f`, which changes nodes (or other state of the tree) in
    /// place: any panic poisons the tree.
    pub(crate) fn guarded_change<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|p| Err(self.caught(p, true)))
    }

    /// `Err` once the tree is poisoned: its nodes in memory may be
    /// half-changed.
    pub(crate) fn check_readable(&self) -> Result<()> {
        if !self.is_poisoned() {
            return Ok(());
        }
        let (callback, message) = self
            .poison_cause
            .lock()
            .clone()
            .unwrap_or_else(|| ("code the dictionary ran".to_string(), POISONED.to_string()));
        Err(Error::CallbackPanicked {
            callback,
            message: format!(
                "{message} (it panicked earlier, changing the dictionary in memory: the dictionary \
                 refuses reads and writes until the environment is reopened)"
            ),
        })
    }
}
