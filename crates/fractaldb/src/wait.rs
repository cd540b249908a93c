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
//!
//! A thread may also carry an interrupt flag ([`set_thread_interrupt`]):
//! a server's KILL sets it from another thread. A lock wait on a thread
//! with a flag sleeps in slices of at most [`INTERRUPT_POLL`] and, once the
//! flag is set, gives up as if its timeout had passed (`LockTimeout`); the
//! caller, which installed the flag, tells the two apart by reading it.
//! The flag is only read here, never cleared: its owner clears it.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long an interruptible wait sleeps before it looks at its flag.
pub const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// Told when the thread it is installed on starts and ends a blocking wait.
pub trait WaitHook: Send + Sync {
    fn begin(&self);
    fn end(&self);
}

thread_local! {
    static HOOK: RefCell<Option<Arc<dyn WaitHook>>> = const { RefCell::new(None) };
    /// Guards alive on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Set from another thread to interrupt this thread's waits.
    static INTERRUPT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Installs (or, with `None`, removes) the calling thread's interrupt flag.
pub fn set_thread_interrupt(flag: Option<Arc<AtomicBool>>) {
    INTERRUPT.with(|f| *f.borrow_mut() = flag);
}

/// Whether the calling thread's interrupt flag is installed and set.
pub fn interrupt_requested() -> bool {
    INTERRUPT.with(|f| f.borrow().as_ref().is_some_and(|f| f.load(Ordering::SeqCst)))
}

/// Whether the calling thread has an interrupt flag (its waits poll it).
pub(crate) fn interruptible() -> bool {
    INTERRUPT.with(|f| f.borrow().is_some())
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
