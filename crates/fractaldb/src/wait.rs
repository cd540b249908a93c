//! Blocking waits, announced to whoever runs the thread.
//!
//! A server that runs many connections' statements on a few threads (a
//! thread pool) must know when one of them blocks (a row-lock wait, the
//! group commit's fsync, `SLEEP()`), so it can let another thread run
//! meanwhile. The pool installs a [`WaitHook`] on each of its threads; the
//! engine brackets each blocking wait with a [`Blocking`] guard, which
//! calls the hook's `begin` and, when dropped, its `end`. Without a hook
//! the guard does nothing but read a thread-local.
//!
//! Invariant: `begin` and `end` alternate on a thread, outermost guard
//! only (nested guards are counted, not reported), so a pool's count of
//! threads inside a wait never drifts.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Told when the thread it is installed on starts and ends a blocking wait.
pub trait WaitHook: Send + Sync {
    fn begin(&self);
    fn end(&self);
}

thread_local! {
    static HOOK: RefCell<Option<Arc<dyn WaitHook>>> = const { RefCell::new(None) };
    /// Guards alive on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Installs (or, with `None`, removes) the hook of the calling thread.
pub fn set_thread_wait_hook(hook: Option<Arc<dyn WaitHook>>) {
    HOOK.with(|h| *h.borrow_mut() = hook);
}

/// A blocking wait in progress on this thread (see the module's text).
#[must_use = "the wait ends when the guard is dropped"]
pub struct Blocking {
    hook: Option<Arc<dyn WaitHook>>,
}

/// Announces a blocking wait on this thread until the guard is dropped.
pub fn blocking() -> Blocking {
    let depth = DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    });
    let hook = if depth == 0 { HOOK.with(|h| h.borrow().clone()) } else { None };
    if let Some(h) = &hook {
        h.begin();
    }
    Blocking { hook }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
        if let Some(h) = &self.hook {
            h.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    struct Count(AtomicI64, AtomicI64);
    impl WaitHook for Count {
        fn begin(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn end(&self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn outermost_guard_reports_once() {
        let c = Arc::new(Count(AtomicI64::new(0), AtomicI64::new(0)));
        drop(blocking()); // no hook: nothing to tell
        set_thread_wait_hook(Some(c.clone()));
        {
            let _a = blocking();
            let _b = blocking();
            assert_eq!((c.0.load(Ordering::SeqCst), c.1.load(Ordering::SeqCst)), (1, 0));
        }
        assert_eq!((c.0.load(Ordering::SeqCst), c.1.load(Ordering::SeqCst)), (1, 1));
        set_thread_wait_hook(None);
        drop(blocking());
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
    }
}
