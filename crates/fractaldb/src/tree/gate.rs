//! The admission gate: at most so many client threads inside tree code
//! at once.

use super::*;

/// Admission control: at most `max` client threads inside tree code (a
/// descent, a root write) at once; the others wait here, in line, instead
/// of piling onto the root's lock. On a machine with few cores and many
/// client threads, a thread preempted while holding the root lock
/// otherwise stalls every other thread (a lock convoy), and throughput
/// falls as threads are added. Waits for row locks and fsyncs happen
/// outside the gate. Background threads (cleaner, evictor, checkpoint)
/// do not pass through it.
pub(crate) struct Gate {
    active: AtomicUsize,
    waiters: AtomicUsize,
    max: usize,
    lock: Mutex<()>,
    cv: Condvar,
}

/// A thread's place inside the gate; leaving it lets the next one in.
pub(crate) struct GatePass<'a>(&'a Gate);

impl Gate {
    pub(crate) fn new(max: usize) -> Gate {
        Gate {
            active: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            max: max.max(1),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    pub(crate) fn enter(&self) -> GatePass<'_> {
        loop {
            let a = self.active.load(AtomicOrdering::SeqCst);
            if a < self.max {
                if self
                    .active
                    .compare_exchange_weak(a, a + 1, AtomicOrdering::SeqCst, AtomicOrdering::SeqCst)
                    .is_ok()
                {
                    return GatePass(self);
                }
                continue;
            }
            let mut g = self.lock.lock();
            self.waiters.fetch_add(1, AtomicOrdering::SeqCst);
            // Checked after announcing the wait: a leaver that missed the
            // announcement left before this load, which then sees room.
            if self.active.load(AtomicOrdering::SeqCst) >= self.max {
                self.cv.wait_for(&mut g, std::time::Duration::from_millis(5));
            }
            self.waiters.fetch_sub(1, AtomicOrdering::SeqCst);
        }
    }
}

impl Gate {
    /// Runs `f` (a disk read) outside the gate and takes a place again
    /// after it, so threads waiting for the disk do not keep others out.
    pub(crate) fn outside<'g, T>(&'g self, pass: &mut Option<GatePass<'g>>, f: impl FnOnce() -> T) -> T {
        *pass = None;
        let r = f();
        *pass = Some(self.enter());
        r
    }
}

impl Drop for GatePass<'_> {
    fn drop(&mut self) {
        let gate = self.0;
        gate.active.fetch_sub(1, AtomicOrdering::SeqCst);
        if gate.waiters.load(AtomicOrdering::SeqCst) > 0 {
            let _g = gate.lock.lock();
            gate.cv.notify_one();
        }
    }
}
