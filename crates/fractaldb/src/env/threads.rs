//! The background threads of an environment: cleaners, the spill writer,
//! the periodic checkpointer and log fsyncer, and what a panic in one of
//! them does.

use super::*;

impl Env {
    /// Starts the cleaners and the spill writer (with `background_threads`).
    pub(super) fn spawn_background_threads(&self, opts: &EnvOptions) -> Result<()> {
        let inner = &self.inner;
        let mut threads = Vec::new();
        let cleaners = if opts.background_threads { opts.cleaner_threads.max(1) } else { 0 };
        let checkpoints = opts.checkpoint_period.is_some_and(|p| !p.is_zero());
        for i in 0..cleaners {
            let weak = Arc::downgrade(inner);
            let shutdown = inner.shutdown.clone();
            let ctx = inner.ctx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("fractaldb-cleaner-{i}"))
                    .spawn(move || cleaner_loop(weak, ctx, shutdown, checkpoints))
                    .map_err(|e| Error::io(&inner.path, "spawn cleaner thread", e))?,
            );
        }
        if opts.background_threads {
            let weak = Arc::downgrade(inner);
            let shutdown = inner.shutdown.clone();
            let ctx = inner.ctx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("fractaldb-spill".into())
                    .spawn(move || spill_writer_loop(weak, ctx, shutdown))
                    .map_err(|e| Error::io(&inner.path, "spawn spill writer thread", e))?,
            );
        }
        inner.threads.lock().extend(threads);
        Ok(())
    }

    /// Starts the periodic checkpointer and, without `commit_sync`, the
    /// thread that fsyncs the log every `fsync_log_period_ms`.
    pub(super) fn spawn_durability_threads(&self, opts: &EnvOptions) -> Result<()> {
        let mut threads = Vec::new();
        if !opts.background_threads {
            return Ok(());
        }
        if let Some(period) = opts.checkpoint_period.filter(|p| !p.is_zero()) {
            let weak = Arc::downgrade(&self.inner);
            threads.push(spawn_periodic(
                "fractaldb-checkpointer",
                period,
                weak,
                |inner| {
                    inner.checkpoint_due.load(Ordering::Relaxed)
                        || inner.checkpoint_after_drain.load(Ordering::Relaxed)
                        || inner.log_grown()
                },
                |inner| {
                    // The checkpoint after a recovery is not paced: until
                    // it is done the log keeps everything replayed.
                    let paced = !inner.checkpoint_due.load(Ordering::SeqCst);
                    if let Err(e) = inner.checkpoint_periodic_unless_busy(paced) {
                        eprintln!("fractaldb: checkpoint of {} failed: {e}", inner.path.display());
                    }
                },
            )?);
        }
        if !opts.commit_sync {
            let period = Duration::from_millis(opts.fsync_log_period_ms.max(1));
            let weak = Arc::downgrade(&self.inner);
            threads.push(spawn_periodic(
                "fractaldb-log-fsync",
                period,
                weak,
                |_| false,
                |inner| {
                    if let Some(log) = inner.ctx.log.get() {
                        // A failure poisons the log; writers then get the error.
                        let _ = log.sync_all();
                    }
                },
            )?);
        }
        self.inner.threads.lock().extend(threads);
        Ok(())
    }
}

/// How long no write may have come in before the cleaner drains buffers.
const DRAIN_AFTER_IDLE: Duration = Duration::from_secs(1);

/// The cleaner thread: flushes buffers of every open dictionary while there
/// is work, then sleeps until woken or 100 ms pass.
///
/// `checkpoints`: periodic checkpoints are on. Then a drain that flushed
/// anything ends by asking the periodic thread for a checkpoint
/// (`Inner::checkpoint_after_drain`): a drain rewrites most leaves once,
/// and the blocks it superseded stay allocated until a checkpoint no longer
/// needs them, so without one the file would hold every drained leaf twice
/// for up to a checkpoint period. That thread paces it like any periodic
/// one (`Pacer`: full speed while no write comes in), and the cleaner goes
/// on flushing meanwhile; taken here, unpaced, it was a burst of the
/// drained leaves' writes just when writes may start again.
fn cleaner_loop(
    inner: std::sync::Weak<Inner>,
    ctx: Arc<Context>,
    shutdown: Arc<AtomicBool>,
    checkpoints: bool,
) {
    // Each tree's step is caught (`clean_step`, `drain_step`, and
    // `caught_step` for a panic of the engine's own code), failing that
    // tree; a panic anywhere else fails the environment and ends the
    // thread, reported on stderr and as the `ReadOnly` reason.
    let body = std::panic::AssertUnwindSafe(|| cleaner_steps(inner, &ctx, shutdown, checkpoints));
    if let Err(p) = std::panic::catch_unwind(body) {
        thread_died(&ctx, "the cleaner", &*p);
    }
}

fn cleaner_steps(inner: std::sync::Weak<Inner>, ctx: &Context, shutdown: Arc<AtomicBool>, checkpoints: bool) {
    // Idleness is measured by the MSN counter, which every write advances
    // and flushes do not. `clean`: the trees a drain pass found empty since
    // the MSN last moved, so an idle environment is walked once, not every
    // round. `drained`: a drain step flushed something since the last
    // checkpoint this loop took.
    let (mut last_msn, mut quiet_since) = (u64::MAX, Instant::now());
    let mut clean: HashSet<u64> = HashSet::new();
    let mut drained = false;
    while !shutdown.load(Ordering::Relaxed) {
        let Some(env) = inner.upgrade() else { return };
        let trees = env.trees();
        drop(env);
        let mut busy = false;
        for t in &trees {
            for _ in 0..64 {
                if shutdown.load(Ordering::Relaxed) {
                    return;
                }
                match caught_step(t, "the cleaner", || t.clean_step()) {
                    Ok(true) => busy = true,
                    Ok(false) => break,
                    Err(e) => {
                        t.fail(format!("cleaner failed: {e}"));
                        break;
                    }
                }
            }
        }
        let msn = ctx.msn.load(Ordering::Relaxed);
        if msn != last_msn {
            (last_msn, quiet_since) = (msn, Instant::now());
            clean.clear();
        } else if !busy && quiet_since.elapsed() >= DRAIN_AFTER_IDLE {
            for t in &trees {
                if clean.contains(&t.file_id) {
                    continue;
                }
                for _ in 0..64 {
                    if shutdown.load(Ordering::Relaxed) {
                        return;
                    }
                    match caught_step(t, "the cleaner's drain", || t.drain_step()) {
                        Ok(Drain::Flushed) => (busy, drained) = (true, true),
                        Ok(Drain::Moved) => busy = true,
                        Ok(Drain::Clean) => {
                            clean.insert(t.file_id);
                            break;
                        }
                        Err(e) => {
                            t.fail(format!("cleaner failed: {e}"));
                            clean.insert(t.file_id);
                            break;
                        }
                    }
                }
            }
            if drained && checkpoints && trees.iter().all(|t| clean.contains(&t.file_id)) {
                drained = false;
                let Some(env) = inner.upgrade() else { return };
                env.checkpoint_after_drain.store(true, Ordering::SeqCst);
            }
        }
        if !busy {
            crate::tree::wait_woken(&ctx.cleaner_wake, Duration::from_millis(100));
        }
    }
}

/// Runs one step of a background thread on tree `t`; a panic the step did
/// not catch itself (the engine's own code: a bug) poisons the tree
/// (`NodeOwner::background_panic`, which says so on stderr) and is the
/// step's error.
fn caught_step<T>(t: &Tree, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let message = crate::tree::panic_message(&*p);
        NodeOwner::background_panic(t, what, p);
        Err(Error::ReadOnly(format!("{what} panicked: {message}")))
    })
}

/// A background thread's step panicked outside any one dictionary's work:
/// the environment turns read-only with the reason (`Context::fail_env`,
/// which also prints it), and the thread ends.
fn thread_died(ctx: &Context, thread: &str, payload: &(dyn std::any::Any + Send)) {
    ctx.fail_env(format!(
        "{thread} thread panicked ({}) and stopped; reopen the environment",
        crate::tree::panic_message(payload)
    ));
}

/// The spill writer thread: compresses and writes the spills the cleaner
/// left in memory (`tree/pending.rs`), oldest first, then sleeps until
/// woken or 100 ms pass. A failed write fails its dictionary, like a failed
/// write-back: the spill stays in memory, and the log keeps its messages.
///
/// A panic writing a tree's spills (a bug: no user code runs there) fails
/// that tree (the claim is given back, `Tree::write_claimed`); one anywhere
/// else fails the environment and ends the thread.
fn spill_writer_loop(inner: std::sync::Weak<Inner>, ctx: Arc<Context>, shutdown: Arc<AtomicBool>) {
    let body = std::panic::AssertUnwindSafe(|| spill_writer_steps(inner, &ctx, shutdown));
    if let Err(p) = std::panic::catch_unwind(body) {
        thread_died(&ctx, "the spill writer", &*p);
    }
}

fn spill_writer_steps(inner: std::sync::Weak<Inner>, ctx: &Context, shutdown: Arc<AtomicBool>) {
    let mut trimmed = Instant::now();
    while !shutdown.load(Ordering::Relaxed) {
        let Some(env) = inner.upgrade() else { return };
        let trees = env.trees();
        drop(env);
        let mut wrote = 0;
        for t in &trees {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.write_spills(16)));
            match r {
                Ok(Ok(n)) => wrote += n,
                Ok(Err(e)) => t.fail(format!("spill write failed: {e}")),
                Err(p) => {
                    let reason = format!("a spill write panicked ({})", crate::tree::panic_message(&*p));
                    eprintln!("fractaldb: {}: {reason}", t.path().display());
                    t.fail(reason);
                }
            }
        }
        drop(trees);
        if wrote == 0 {
            // This thread frees every spill-sized buffer it allocates, and
            // glibc keeps freed memory in the thread's own arena: with the
            // spill writer, resident memory in `tests/memory.rs` grew by up
            // to 55 MiB against 39-47 before it. Handing it back when idle,
            // at most once a second, keeps the growth where it was. (The
            // `fractaldb` program runs on jemalloc, which returns freed
            // pages itself; there this trims glibc's nearly empty heap.)
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            if trimmed.elapsed() >= Duration::from_secs(1) {
                // SAFETY: malloc_trim only returns free memory to the system.
                unsafe { libc::malloc_trim(0) };
                trimmed = Instant::now();
            }
            crate::tree::wait_woken(&ctx.spill_wake, Duration::from_millis(100));
        }
    }
}

/// Runs `f` on a thread of its own every `period`, and sooner whenever
/// `due` says so (asked every 20 ms), until the environment closes.
pub(super) fn spawn_periodic(
    name: &str,
    period: Duration,
    inner: std::sync::Weak<Inner>,
    due: fn(&Inner) -> bool,
    f: fn(&Inner),
) -> Result<JoinHandle<()>> {
    let shutdown = inner.upgrade().map(|i| i.shutdown.clone()).unwrap_or_default();
    let wake = inner.upgrade().map(|i| i.ctx.clone()).expect("called while the environment is open");
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut next = Instant::now() + period;
            loop {
                // Sleep in short steps so close() is not held up by a long period.
                while Instant::now() < next {
                    if shutdown.load(Ordering::Relaxed) {
                        return;
                    }
                    if inner.upgrade().is_some_and(|i| due(&i)) {
                        break;
                    }
                    std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
                }
                if shutdown.load(Ordering::Relaxed) {
                    return;
                }
                let Some(inner) = inner.upgrade() else { return };
                // A panic (a bug: no user code runs in these steps) may
                // leave a checkpoint begun in a dictionary's file: every
                // dictionary is failed (no more checkpoints, the log
                // kept) and the environment turns read-only; the thread ends.
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&inner))) {
                    let reason = format!(
                        "the {} thread panicked ({})",
                        std::thread::current().name().unwrap_or("background"),
                        crate::tree::panic_message(&*p)
                    );
                    for t in inner.trees() {
                        t.fail(reason.clone());
                    }
                    inner.ctx.fail_env(format!("{reason} and stopped; reopen the environment"));
                    return;
                }
                drop(inner);
                next = Instant::now() + period;
            }
        })
        .map_err(|e| Error::io(&wake.dir, "spawn thread", e))
}
