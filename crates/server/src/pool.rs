//! The thread pool (`thread_handling=pool-of-threads`, MariaDB's design):
//! a few worker threads run the commands of many connections.
//!
//! - The pool has `thread_pool_size` groups; a connection belongs to group
//!   `id % size`. Each group aims at one *active* worker: one running a
//!   command and not inside an announced wait.
//! - A connection waiting for its client's next command is *parked*: it
//!   sits in its group's `parked` map, its socket armed in the group's
//!   epoll set with one-shot interest, and costs no thread.
//! - A group's worker with nothing queued becomes its *listener*: it waits
//!   on the epoll set, and of the connections that turned readable (a
//!   command, the client's close, the socket shutdown of KILL and server
//!   shutdown) it runs the first itself when the group has no other active
//!   worker (no hand-off between threads, so one client's command costs
//!   the server no extra context switch) and queues the rest. A worker that
//!   finishes a command takes the next queued connection, or listens.
//! - A statement that blocks (a row lock wait, the group commit's fsync,
//!   `SLEEP()`, a login's round trips) announces it through
//!   `fractaldb::blocking` (the [`WaitHook`] each worker installs): its
//!   worker stops counting as active, and with connections queued another
//!   worker of the group is woken, or started.
//! - The timer thread closes parked connections past their wait_timeout
//!   and catches unannounced blocking (a long CPU-bound statement, a
//!   client that stops reading a large result): in a group whose queue did
//!   not move, or that had no listener, for `thread_pool_stall_limit`, a
//!   worker on one job that long is marked stalled and no longer counts
//!   as active, so another worker runs.
//!
//! Invariants:
//! - a connection is in exactly one place: parked (its interest armed),
//!   queued, or owned by one worker. It is put into `parked` *before* its
//!   interest is re-armed, so the event never finds it missing; with
//!   one-shot interest no event comes while a worker owns it;
//! - a connection is parked only when no command waits in its buffers
//!   (`Conn::has_buffered`): epoll sees only the socket;
//! - a group has at most one listener; `active` counts its workers in
//!   `running` that are neither inside a wait (`begin` and `end` alternate
//!   per worker, see `fractaldb::wait`) nor marked stalled.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use polling::{Event, Events, Poller};

use crate::conn::{self, Conn, Next};
use crate::packet::Stream;
use crate::Shared;

/// The listener's longest wait: it then looks at the stop flag.
const LISTEN: Duration = Duration::from_millis(500);
/// The timer's tick (idle limits, stall checks).
const TICK: Duration = Duration::from_millis(100);
/// A worker idle this long exits, if its group has more than one.
const IDLE_EXIT: Duration = Duration::from_secs(60);
/// Commands a worker runs for one connection whose client pipelines them
/// before it queues the connection behind the others.
const BURST: usize = 16;

enum Job {
    /// A socket just accepted: the worker sends the greeting and logs in.
    New(Stream, String),
    /// A parked connection with something to read.
    Ready(Box<Conn>),
    /// A parked connection past its idle limit: closed.
    Idle(Box<Conn>),
}

struct Parked {
    conn: Box<Conn>,
    deadline: Instant,
}

struct State {
    queue: VecDeque<Job>,
    /// Workers running a job, less those inside an announced wait.
    active: usize,
    /// Workers asleep waiting for work, and how many of them were woken
    /// and have not yet run (so two wake-ups never go to the same one).
    idle: usize,
    notified: usize,
    /// Workers alive.
    threads: usize,
    /// A worker is waiting on the epoll set.
    listening: bool,
    /// The workers on a job, by worker number.
    running: HashMap<u64, Running>,
    /// Jobs taken, and listener returns, so far (the stall check compares
    /// them between ticks).
    taken: u64,
    listened: u64,
    stop: bool,
}

struct Running {
    since: Instant,
    /// Inside an announced wait (not counted in `active`).
    waiting: bool,
    /// Marked by the stall check (not counted in `active` until the job
    /// ends).
    stalled: bool,
}

impl State {
    /// Worker `w` takes a job.
    fn take(&mut self, w: u64) {
        self.active += 1;
        self.taken += 1;
        self.running.insert(w, Running { since: Instant::now(), waiting: false, stalled: false });
    }

    /// Worker `w` finished its job.
    fn done(&mut self, w: u64) {
        let r = self.running.remove(&w);
        debug_assert!(r.as_ref().is_some_and(|r| !r.waiting), "a job ends inside a wait");
        if r.is_some_and(|r| !r.stalled) {
            self.active -= 1;
        }
    }
}

struct Group {
    index: usize,
    state: Mutex<State>,
    work: Condvar,
    parked: Mutex<HashMap<u64, Parked>>,
    /// Connections whose socket is in `poller` (added once, re-armed at
    /// each park, deleted at the end).
    registered: Mutex<HashSet<u64>>,
    poller: Poller,
}

pub(crate) struct Pool {
    me: Weak<Pool>,
    shared: Arc<Shared>,
    groups: Vec<Group>,
    /// How long a group may stand still before one more worker may run
    /// (`thread_pool_stall_limit`).
    stall: Duration,
    handles: Mutex<Vec<JoinHandle<()>>>,
    timer_stop: AtomicBool,
}

/// What each worker installs as its thread's wait hook: pool, group,
/// worker number.
struct Hook(Arc<Pool>, usize, u64);

impl fractaldb::WaitHook for Hook {
    fn begin(&self) {
        let g = &self.0.groups[self.1];
        let mut st = g.state.lock();
        let Some(r) = st.running.get_mut(&self.2) else {
            debug_assert!(false, "a wait begins outside a job");
            return;
        };
        r.waiting = true;
        if r.stalled {
            return;
        }
        st.active -= 1;
        if st.active == 0 && (!st.queue.is_empty() || !st.listening) {
            // Someone must run the queue, or listen, meanwhile.
            self.0.wake_or_spawn(g, &mut st);
        }
    }

    fn end(&self) {
        // May exceed the group's aim for a while: the statement goes on,
        // and no worker takes a new job until `active` is back under it.
        let mut st = self.0.groups[self.1].state.lock();
        if let Some(r) = st.running.get_mut(&self.2) {
            r.waiting = false;
            if !r.stalled {
                st.active += 1;
            }
        }
    }
}

impl Pool {
    pub(crate) fn start(shared: Arc<Shared>, size: usize, stall: Duration) -> Result<Arc<Pool>, String> {
        let mut groups = Vec::new();
        for index in 0..size.max(1) {
            let poller = Poller::new().map_err(|e| format!("cannot create the thread pool's poller: {e}"))?;
            groups.push(Group {
                index,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    active: 0,
                    idle: 0,
                    notified: 0,
                    threads: 0,
                    listening: false,
                    running: HashMap::new(),
                    taken: 0,
                    listened: 0,
                    stop: false,
                }),
                work: Condvar::new(),
                parked: Mutex::new(HashMap::new()),
                registered: Mutex::new(HashSet::new()),
                poller,
            });
        }
        let pool = Arc::new_cyclic(|me| Pool {
            me: me.clone(),
            shared,
            groups,
            stall,
            handles: Mutex::new(Vec::new()),
            timer_stop: AtomicBool::new(false),
        });
        for g in &pool.groups {
            pool.spawn_worker(g, &mut g.state.lock());
        }
        let p = pool.clone();
        let h = std::thread::Builder::new()
            .name("pool-timer".into())
            .spawn(move || p.timer())
            .map_err(|e| format!("cannot start the thread pool's timer: {e}"))?;
        pool.handles.lock().push(h);
        Ok(pool)
    }

    /// A socket just accepted: the group of the fewest connections would
    /// be better, but the id is not known yet; round robin by accept.
    pub(crate) fn submit(&self, stream: Stream, peer: String) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let g = &self.groups[NEXT.fetch_add(1, Ordering::Relaxed) % self.groups.len()];
        self.enqueue(g, Job::New(stream, peer));
    }

    fn group_of(&self, id: u64) -> &Group {
        &self.groups[(id % self.groups.len() as u64) as usize]
    }

    fn enqueue(&self, g: &Group, job: Job) {
        let mut st = g.state.lock();
        st.queue.push_back(job);
        if st.active == 0 {
            self.wake_or_spawn(g, &mut st);
        }
    }

    /// Gets a worker of `g` to look at its queue (and to listen).
    fn wake_or_spawn(&self, g: &Group, st: &mut State) {
        if st.idle > st.notified {
            st.notified += 1;
            g.work.notify_one();
        } else if st.listening {
            // The listener comes back and takes the queue's first job.
            let _ = g.poller.notify();
        } else {
            self.spawn_worker(g, st);
        }
    }

    fn spawn_worker(&self, g: &Group, st: &mut State) {
        static WORKERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let Some(me) = self.me.upgrade() else { return };
        let (index, w) = (g.index, WORKERS.fetch_add(1, Ordering::Relaxed));
        let spawned =
            std::thread::Builder::new().name("pool-worker".into()).spawn(move || me.worker(index, w));
        match spawned {
            Ok(h) => {
                st.threads += 1;
                let mut hs = self.handles.lock();
                hs.retain(|h| !h.is_finished());
                hs.push(h);
            }
            Err(e) => self.shared.log.log("error", &format!("cannot start a pool worker: {e}")),
        }
    }

    fn worker(self: Arc<Pool>, index: usize, w: u64) {
        fractaldb::set_thread_wait_hook(Some(Arc::new(Hook(self.clone(), index, w))));
        let g = &self.groups[index];
        while let Some(job) = self.next_job(g, w) {
            let shared = self.shared.clone();
            conn::guarded(&shared, || self.run(g, job));
            // The next turn takes the next job, if any, itself.
            g.state.lock().done(w);
        }
    }

    /// The next job for a worker of `g` (counted active), or `None` when
    /// the worker is to exit.
    fn next_job(&self, g: &Group, w: u64) -> Option<Job> {
        let mut st = g.state.lock();
        loop {
            if st.active == 0 {
                if let Some(j) = st.queue.pop_front() {
                    st.take(w);
                    return Some(j);
                }
            }
            if st.stop {
                st.threads -= 1;
                return None;
            }
            if !st.listening {
                st.listening = true;
                let ready = MutexGuard::unlocked(&mut st, || self.listen(g));
                st.listening = false;
                st.listened += 1;
                let mut ready = ready.into_iter();
                // Run the first one here when nobody else is active: no
                // hand-off to another thread.
                let mine = if st.active == 0 && st.queue.is_empty() { ready.next() } else { None };
                st.queue.extend(ready.map(Job::Ready));
                if let Some(c) = mine {
                    st.take(w);
                    return Some(Job::Ready(c));
                }
                continue;
            }
            st.idle += 1;
            let timed_out = g.work.wait_for(&mut st, IDLE_EXIT).timed_out();
            st.idle -= 1;
            st.notified = st.notified.saturating_sub(1);
            if timed_out && st.queue.is_empty() && st.threads > 1 {
                st.threads -= 1;
                return None;
            }
        }
    }

    /// Waits on the group's epoll set; the parked connections that turned
    /// readable, taken out of `parked`.
    // Boxed: a `Conn` is large and moves between threads and maps.
    #[allow(clippy::vec_box)]
    fn listen(&self, g: &Group) -> Vec<Box<Conn>> {
        let mut events = Events::new();
        if let Err(e) = g.poller.wait(&mut events, Some(LISTEN)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                self.shared.log.log("error", &format!("thread pool poller: {e}"));
                std::thread::sleep(TICK);
            }
        }
        let mut parked = g.parked.lock();
        events.iter().filter_map(|ev| parked.remove(&(ev.key as u64))).map(|p| p.conn).collect()
    }

    fn run(&self, g: &Group, job: Job) {
        let mut c = match job {
            Job::New(stream, peer) => {
                let Some(mut c) = conn::open(&self.shared, stream, peer) else { return };
                // The handshake's round trips wait for the client.
                let ok = {
                    let _w = fractaldb::blocking();
                    c.login()
                };
                if !ok {
                    self.finish(c);
                    return;
                }
                // Parked until its first command: a client may wait for
                // something else before sending one (sysbench's threads
                // wait for each other to connect), and a read here would
                // hold the group's worker meanwhile. From here on its
                // group is the one of its id.
                let home = self.group_of(c.id());
                let buffered = c.has_buffered();
                if home.index != g.index && buffered {
                    self.enqueue(home, Job::Ready(c));
                    return;
                }
                if home.index != g.index || !buffered {
                    self.park(c);
                    return;
                }
                c
            }
            Job::Idle(c) => {
                c.log_idle_close();
                self.finish(c);
                return;
            }
            Job::Ready(c) => c,
        };
        let mut n = 0;
        loop {
            if matches!(c.step(), Next::Close) {
                self.finish(c);
                return;
            }
            n += 1;
            if !c.has_buffered() {
                self.park(c);
                return;
            }
            if n >= BURST {
                self.enqueue(g, Job::Ready(c));
                return;
            }
        }
    }

    /// Waits for the connection's next command without a thread.
    fn park(&self, c: Box<Conn>) {
        let id = c.id();
        let g = self.group_of(id);
        let mut c = c;
        let deadline = Instant::now() + c.idle_limit();
        let raw = std::os::fd::AsRawFd::as_raw_fd(&c.stream().fd());
        let first = g.registered.lock().insert(id);
        // Parked before armed: the event may come at once.
        g.parked.lock().insert(id, Parked { conn: c, deadline });
        let armed = if first {
            // SAFETY: the descriptor stays open while registered: `finish`
            // deletes it from the poller before the socket closes.
            unsafe { g.poller.add(raw, Event::readable(id as usize)) }
        } else {
            // SAFETY: as above; the connection (and its socket) is alive.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(raw) };
            g.poller.modify(fd, Event::readable(id as usize))
        };
        if let Err(e) = armed {
            self.shared
                .log
                .log("warning", &format!("connection {id}: cannot wait for its next command: {e}"));
            let p = g.parked.lock().remove(&id);
            if let Some(p) = p {
                self.enqueue(g, Job::Idle(p.conn));
            }
        }
    }

    fn finish(&self, c: Box<Conn>) {
        let g = self.group_of(c.id());
        if g.registered.lock().remove(&c.id()) {
            let _ = g.poller.delete(c.stream().fd());
        }
        c.finish();
    }

    #[allow(clippy::vec_box)]
    fn timer(self: Arc<Pool>) {
        let mut last: Vec<(u64, Instant)> = vec![(0, Instant::now()); self.groups.len()];
        let mut last_idle_scan = Instant::now();
        while !self.timer_stop.load(Ordering::SeqCst) {
            std::thread::sleep(TICK.min(self.stall));
            let now = Instant::now();
            let scan = now.duration_since(last_idle_scan) >= Duration::from_secs(1);
            if scan {
                last_idle_scan = now;
            }
            for (g, last) in self.groups.iter().zip(last.iter_mut()) {
                if scan {
                    let expired: Vec<Box<Conn>> = {
                        let mut parked = g.parked.lock();
                        let ids: Vec<u64> =
                            parked.iter().filter(|(_, p)| p.deadline <= now).map(|(id, _)| *id).collect();
                        ids.into_iter().filter_map(|id| parked.remove(&id)).map(|p| p.conn).collect()
                    };
                    for c in expired {
                        self.enqueue(g, Job::Idle(c));
                    }
                }
                // The stall check: work queued and no job taken, or nobody
                // listening and no listener back, for a stall limit.
                let mut st = g.state.lock();
                let moved = st.taken + st.listened;
                let waiting = !st.queue.is_empty() || (!st.listening && !g.parked.lock().is_empty());
                if !waiting || moved != last.0 {
                    *last = (moved, now);
                } else if now.duration_since(last.1) >= self.stall {
                    *last = (moved, now);
                    let stall = self.stall;
                    let mut freed = 0;
                    for r in st.running.values_mut() {
                        if !r.stalled && !r.waiting && now.duration_since(r.since) >= stall {
                            r.stalled = true;
                            freed += 1;
                        }
                    }
                    st.active -= freed;
                    if st.active == 0 {
                        self.wake_or_spawn(g, &mut st);
                    }
                }
            }
        }
    }

    /// Connections in the pool now (parked, queued, running).
    fn busy(&self) -> bool {
        self.groups.iter().any(|g| {
            let st = g.state.lock();
            !st.queue.is_empty() || st.active > 0 || !g.parked.lock().is_empty()
        })
    }

    /// Ends the pool's threads once its connections are gone (the server
    /// ended them: each socket was shut down, so each parked one turned
    /// readable and its worker finished it).
    pub(crate) fn stop(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.busy() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.timer_stop.store(true, Ordering::SeqCst);
        for g in &self.groups {
            let mut st = g.state.lock();
            st.stop = true;
            g.work.notify_all();
            let _ = g.poller.notify();
        }
        let handles: Vec<_> = std::mem::take(&mut *self.handles.lock());
        for h in handles {
            let _ = h.join();
        }
        // Anything left (a connection past the 60 s above) ends here.
        for g in &self.groups {
            let left: Vec<_> = g.parked.lock().drain().map(|(_, p)| p.conn).collect();
            for c in left {
                c.finish();
            }
        }
    }
}
