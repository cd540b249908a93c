//! The Hermitage suite (<https://github.com/ept/hermitage>): the anomalies of
//! Adya's and Berenson et al.'s isolation levels, each provoked by a short
//! script of interleaved transactions, run at each of the four isolation
//! levels, asserting what each step observes.
//!
//! **Setup**, before every script (Hermitage's): a fresh environment with a
//! dictionary `test` holding the rows (1, 10) and (2, 20), keys and values
//! as decimal strings (`b"1" => b"10"`).
//!
//! **Notation.** Each step is written as a comment in Hermitage's notation,
//! `-- T1: update test set value = 11 where id = 1`, with the code that runs
//! it below. `select ... where id = k` is `Txn::get` (`where id in (1, 2)`
//! two of them); `select * from test where <predicate>` is a cursor scan of
//! the whole dictionary, filtered in the test (the predicate read); `update`
//! and `insert` are `Txn::put`. Every transaction (session) runs on its own
//! thread and executes its steps in order, as a `psql` session would; the
//! script hands the steps out one at a time. A step either completes at once
//! (`is(..)`: asserts its result) or **blocks** (`blocks()`: no result within
//! `BLOCKED_AFTER`) until a later step of another transaction releases it;
//! a step sent to a blocked session waits behind it (it "blocks" too). Each
//! step's result is a string: the rows read (`1 => 10, 2 => 20`, or
//! `nothing`), `ok` for a write, `committed`/`aborted` for the end of a
//! transaction, or the error's name (`WriteConflict`, `Deadlock`,
//! `LockTimeout`). As in Hermitage, a transaction one of whose steps failed
//! is aborted where the script says `commit` ("there's nothing else we can
//! do"), and its `commit` step then reports `aborted`.
//!
//! Each test loops over the four levels with a table of the expected results
//! of the steps that differ between levels; every other step's result is
//! written in the script. Every case ends by checking the committed state.
//!
//! **Expected outcomes** (RU = read uncommitted, RC = read committed,
//! RR = repeatable read, a snapshot; SER = serializable, strict two-phase
//! locking with range locks):
//!
//! | anomaly                           | RU                | RC            | RR                   | SER                |
//! |-----------------------------------|-------------------|---------------|----------------------|--------------------|
//! | G0 write cycles                   | prevented (1)     | prevented (1) | prevented (1), (2)   | prevented (1)      |
//! | G1a aborted reads                 | **occurs**        | prevented     | prevented            | prevented (3)      |
//! | G1b intermediate reads            | **occurs**        | prevented     | prevented            | prevented (3)      |
//! | G1c circular information flow     | **occurs**        | prevented     | prevented            | prevented (3), (4) |
//! | OTV observed transaction vanishes | not prevented (5) | prevented     | prevented (snapshot) | prevented (3)      |
//! | PMP predicate-many-preceders      | **occurs**        | **occurs**    | prevented (snapshot) | prevented (6)      |
//! | P4 lost update                    | **occurs**        | **occurs**    | prevented (1), (2)   | prevented (4)      |
//! | G-single read skew                | **occurs**        | **occurs**    | prevented (snapshot) | prevented (3)      |
//! | G2-item write skew                | **occurs**        | **occurs**    | **occurs**           | prevented (4)      |
//! | G2 anti-dependency cycles         | **occurs**        | **occurs**    | **occurs**           | prevented (4), (6) |
//!
//! 1. The second writer of a key blocks on the first's write lock until the
//!    first commits or aborts.
//! 2. First committer wins: once the first writer commits, the blocked (or
//!    later) write of a key it committed after the writer's snapshot fails
//!    with `WriteConflict`, and the writer aborts.
//! 3. A read of a key another transaction has written (or, for a scan, of a
//!    range holding one) blocks on its write lock; a write of a key another
//!    transaction has read blocks on the read lock.
//! 4. Two transactions each holding a lock the other needs (read locks
//!    against writes, or write locks against reads): the second request
//!    would close a cycle and fails at once with `Deadlock`; the victim
//!    aborts and the other proceeds.
//! 5. The script's reader sees the second writer's updates before it commits
//!    (`1 => 12` while T2 is running): at read uncommitted nothing protects a
//!    reader from transactions that may still abort; the script cannot show
//!    the vanishing itself, only that the premise of the guarantee is gone.
//! 6. A serializable scan holds a read lock on the range it scanned, so an
//!    insert into that range blocks until the scanner ends.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::Scope;
use std::time::Duration;

use fractaldb::Isolation::{
    ReadCommitted as RC, ReadUncommitted as RU, RepeatableRead as RR, Serializable as SER,
};
use fractaldb::{DictOptions, Dictionary, Env, EnvOptions, Error, Isolation, Txn};

/// A step that has not completed after this long is taken to be blocked.
const BLOCKED_AFTER: Duration = Duration::from_millis(100);
/// A step expected to complete that has not after this long fails the test.
const STEP_LIMIT: Duration = Duration::from_secs(10);
/// Longer than any script keeps a transaction waiting (a few blocked-step
/// checks in a row), so that only a missed wake-up or an undetected deadlock
/// ends in `LockTimeout`; no script expects a timeout.
const LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// What a step that may block, depending on the level, is expected to do.
#[derive(Clone, Copy, Debug)]
enum Exp {
    /// It completes at once with this result.
    Now(&'static str),
    /// It blocks; once a later step releases it, it completes with this result.
    Blocks(&'static str),
}
use Exp::{Blocks, Now};

/// One case's environment: `create table test (id int primary key, value
/// int); insert into test (id, value) values (1, 10), (2, 20);`
struct Db {
    // Field order is drop order: the handle, then the environment, then the folder.
    d: Dictionary,
    env: Env,
    _dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Db {
        let dir = tempfile::tempdir().unwrap();
        // Durability plays no part in isolation: commits need not wait for fsyncs.
        let opts = EnvOptions { lock_timeout: LOCK_TIMEOUT, commit_sync: false, ..EnvOptions::default() };
        let env = Env::open(dir.path(), opts).unwrap();
        let d = env.create_dictionary("test", DictOptions::default()).unwrap();
        d.put(b"1", b"10").unwrap();
        d.put(b"2", b"20").unwrap();
        Db { d, env, _dir: dir }
    }

    /// `begin; set transaction isolation level <level>; -- <name>`: a
    /// session on its own thread, its transaction begun before this returns.
    fn begin<'s, 'e>(&'e self, s: &'s Scope<'s, 'e>, name: &'static str, level: Isolation) -> Session {
        let (ops, rx) = mpsc::channel();
        let (began, began_rx) = mpsc::channel();
        s.spawn(move || {
            let txn = self.env.begin(level).expect("begin");
            began.send(()).unwrap();
            serve(txn, &self.d, rx);
        });
        began_rx.recv().expect("the session began its transaction");
        Session { name, level, ops }
    }

    /// `select * from test where <pred>` outside any transaction: the newest
    /// committed rows.
    fn select_where(&self, pred: fn(u32) -> bool) -> String {
        let rows = self.d.range(None, None, false).map(|r| r.unwrap());
        render(rows.filter(|(_, v)| pred(num(v))).map(|(k, v)| row(&k, &v)))
    }

    fn select_all(&self) -> String {
        self.select_where(|_| true)
    }
}

fn num(v: &[u8]) -> u32 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

fn row(k: &[u8], v: &[u8]) -> String {
    format!("{} => {}", String::from_utf8_lossy(k), String::from_utf8_lossy(v))
}

fn render(rows: impl Iterator<Item = String>) -> String {
    let rows: Vec<String> = rows.collect();
    if rows.is_empty() {
        "nothing".into()
    } else {
        rows.join(", ")
    }
}

fn error_name(e: &Error) -> String {
    match e {
        Error::WriteConflict { .. } => "WriteConflict".into(),
        Error::Deadlock { .. } => "Deadlock".into(),
        Error::LockTimeout { .. } => "LockTimeout".into(),
        e => format!("error: {e}"),
    }
}

/// A step of a session.
enum Op {
    /// `select * from test where id in (keys)`: point reads.
    Get(&'static [&'static str]),
    /// `select * from test where pred(value)`: a cursor scan, filtered.
    Select(fn(u32) -> bool),
    /// `update test set value = v where id = k` or `insert ... values (k, v)`.
    Put(&'static str, &'static str),
    /// `commit` (an abort if a step of the transaction failed).
    Commit,
    Abort,
}

/// A session's thread: runs the steps it is sent, in order, replying to each.
fn serve(txn: Txn, d: &Dictionary, ops: Receiver<(Op, Sender<String>)>) {
    let mut txn = Some(txn);
    let mut failed = false;
    for (op, reply) in ops {
        let t = txn.as_ref().expect("a step after the transaction ended");
        let result = match op {
            Op::Get(keys) => keys
                .iter()
                .map(|k| Ok(t.get(d, k.as_bytes())?.map(|v| row(k.as_bytes(), &v))))
                .collect::<Result<Vec<_>, Error>>()
                .map(|rows| render(rows.into_iter().flatten())),
            Op::Select(pred) => scan(t, d, pred),
            Op::Put(k, v) => t.put(d, k.as_bytes(), v.as_bytes()).map(|()| "ok".into()),
            Op::Commit if !failed => txn.take().unwrap().commit().map(|()| "committed".into()),
            Op::Commit | Op::Abort => txn.take().unwrap().abort().map(|()| "aborted".into()),
        };
        let out = result.unwrap_or_else(|e| {
            failed = true;
            error_name(&e)
        });
        // The script may have stopped listening (a failed assertion).
        let _ = reply.send(out);
    }
    // Dropping a transaction still open aborts it.
}

fn scan(t: &Txn, d: &Dictionary, pred: fn(u32) -> bool) -> fractaldb::Result<String> {
    let mut c = t.cursor(d);
    let mut rows = Vec::new();
    c.first()?;
    while let (Some(k), Some(v)) = (c.key(), c.value()) {
        if pred(num(v)) {
            rows.push(row(k, v));
        }
        c.next()?;
    }
    Ok(render(rows.into_iter()))
}

/// A transaction running on its own thread.
struct Session {
    name: &'static str,
    level: Isolation,
    ops: Sender<(Op, Sender<String>)>,
}

impl Session {
    fn send(&self, op: Op, sql: String) -> Reply {
        let (tx, rx) = mpsc::channel();
        self.ops.send((op, tx)).expect("the session is running");
        Reply { step: format!("[{:?}] {}: {sql}", self.level, self.name), rx }
    }

    fn get(&self, keys: &'static [&'static str]) -> Reply {
        let sql = match keys {
            [k] => format!("select * from test where id = {k}"),
            _ => format!("select * from test where id in ({})", keys.join(", ")),
        };
        self.send(Op::Get(keys), sql)
    }

    fn select_where(&self, sql_pred: &str, pred: fn(u32) -> bool) -> Reply {
        self.send(Op::Select(pred), format!("select * from test where {sql_pred}"))
    }

    fn select_all(&self) -> Reply {
        self.send(Op::Select(|_| true), "select * from test".into())
    }

    fn update(&self, id: &'static str, value: &'static str) -> Reply {
        self.send(Op::Put(id, value), format!("update test set value = {value} where id = {id}"))
    }

    fn insert(&self, id: &'static str, value: &'static str) -> Reply {
        self.send(Op::Put(id, value), format!("insert into test (id, value) values ({id}, {value})"))
    }

    fn commit(&self) -> Reply {
        self.send(Op::Commit, "commit".into())
    }

    fn abort(&self) -> Reply {
        self.send(Op::Abort, "abort".into())
    }
}

/// The coming result of a step sent to a session.
#[must_use]
struct Reply {
    step: String,
    rx: Receiver<String>,
}

impl Reply {
    /// The step completes (at once, or once released if it was blocked)
    /// with `expected`.
    fn is(self, expected: &str) {
        let got = match self.rx.recv_timeout(STEP_LIMIT) {
            Ok(got) => got,
            Err(e) => panic!("{}: no result after {STEP_LIMIT:?} ({e})", self.step),
        };
        assert_eq!(got, expected, "{}", self.step);
    }

    /// The step blocks: no result within `BLOCKED_AFTER`. Its result is
    /// checked later, with `is`, once another step has released it.
    fn blocks(self) -> Reply {
        match self.rx.recv_timeout(BLOCKED_AFTER) {
            Ok(got) => panic!("{}: expected to block, but it completed with {got:?}", self.step),
            Err(RecvTimeoutError::Timeout) => self,
            Err(RecvTimeoutError::Disconnected) => panic!("{}: the session died", self.step),
        }
    }

    /// The step completes at once or blocks, as `e` says; a blocked step's
    /// result is checked by `Pending::settle` once it has been released.
    fn expect(self, e: Exp) -> Pending {
        match e {
            Now(expected) => {
                self.is(expected);
                Pending(None)
            }
            Blocks(expected) => Pending(Some((self.blocks(), expected))),
        }
    }
}

/// A step that `expect` found blocked (`None`: it had completed).
#[must_use]
struct Pending(Option<(Reply, &'static str)>);

impl Pending {
    /// Checks the result of a blocked step that should now have been released.
    fn settle(self) {
        if let Some((reply, expected)) = self.0 {
            reply.is(expected);
        }
    }
}

/// G0, write cycles: two transactions updating the same two rows must not
/// interleave their writes; the end state is that of a serial order.
#[test]
fn g0_write_cycles() {
    #[rustfmt::skip]
    const CASES: [(Isolation, &str, &str, &str, &str); 4] = [
        // level  T2's update of 1  T2's update of 2  T2 commits    the end state
        //        (once released)
        (RU,  "ok",              "ok",              "committed", "1 => 12, 2 => 22"),
        (RC,  "ok",              "ok",              "committed", "1 => 12, 2 => 22"),
        (RR,  "WriteConflict",   "WriteConflict",   "aborted",   "1 => 11, 2 => 21"),
        (SER, "ok",              "ok",              "committed", "1 => 12, 2 => 22"),
    ];
    for (level, t2_update_1, t2_update_2, t2_commit, end) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: update test set value = 11 where id = 1
            t1.update("1", "11").is("ok");
            // -- T2: update test set value = 12 where id = 1   -- BLOCKS on T1's write lock
            let blocked = t2.update("1", "12").blocks();
            // -- T1: update test set value = 21 where id = 2
            t1.update("2", "21").is("ok");
            // -- T1: commit   -- unblocks T2 (RR: T2's update fails, T1 committed id 1 after T2's snapshot)
            t1.commit().is("committed");
            blocked.is(t2_update_1);
            // -- T1: select * from test   -- shows 1 => 11, 2 => 21
            assert_eq!(db.select_all(), "1 => 11, 2 => 21", "[{level:?}] T1 after its commit");
            // -- T2: update test set value = 22 where id = 2
            t2.update("2", "22").is(t2_update_2);
            // -- T2: commit
            t2.commit().is(t2_commit);
        });
        // -- either: select * from test
        assert_eq!(db.select_all(), end, "[{level:?}] the end state");
    }
}

/// G1a, aborted reads: T2 must not see a value T1 wrote and then aborted.
#[test]
fn g1a_aborted_reads() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp); 4] = [
        // level  T2's first select
        (RU,  Now("1 => 101, 2 => 20")),   // the aborted read
        (RC,  Now("1 => 10, 2 => 20")),
        (RR,  Now("1 => 10, 2 => 20")),
        (SER, Blocks("1 => 10, 2 => 20")),
    ];
    for (level, t2_select) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: update test set value = 101 where id = 1
            t1.update("1", "101").is("ok");
            // -- T2: select * from test   -- still shows 1 => 10 (RU: 1 => 101; SER: BLOCKS on T1's write lock)
            let select = t2.select_all().expect(t2_select);
            // -- T1: abort   -- (SER: unblocks T2)
            t1.abort().is("aborted");
            select.settle();
            // -- T2: select * from test   -- still shows 1 => 10
            t2.select_all().is("1 => 10, 2 => 20");
            // -- T2: commit
            t2.commit().is("committed");
        });
        assert_eq!(db.select_all(), "1 => 10, 2 => 20", "[{level:?}] the end state");
    }
}

/// G1b, intermediate reads: T2 must not see a value T1 overwrote before it
/// committed.
#[test]
fn g1b_intermediate_reads() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, &str); 4] = [
        // level  T2's first select              T2's select after T1 commits
        (RU,  Now("1 => 101, 2 => 20"),    "1 => 11, 2 => 20"),   // the intermediate read
        (RC,  Now("1 => 10, 2 => 20"),     "1 => 11, 2 => 20"),
        (RR,  Now("1 => 10, 2 => 20"),     "1 => 10, 2 => 20"),
        (SER, Blocks("1 => 11, 2 => 20"),  "1 => 11, 2 => 20"),
    ];
    for (level, t2_select_1, t2_select_2) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: update test set value = 101 where id = 1
            t1.update("1", "101").is("ok");
            // -- T2: select * from test   -- still shows 1 => 10 (RU: 1 => 101; SER: BLOCKS on T1's write lock)
            let select = t2.select_all().expect(t2_select_1);
            // -- T1: update test set value = 11 where id = 1
            t1.update("1", "11").is("ok");
            // -- T1: commit   -- (SER: unblocks T2, which reads 1 => 11)
            t1.commit().is("committed");
            select.settle();
            // -- T2: select * from test   -- now shows 1 => 11 (RR: still 1 => 10, its snapshot)
            t2.select_all().is(t2_select_2);
            // -- T2: commit
            t2.commit().is("committed");
        });
        assert_eq!(db.select_all(), "1 => 11, 2 => 20", "[{level:?}] the end state");
    }
}

/// G1c, circular information flow: T1 and T2 must not each see the other's
/// write.
#[test]
fn g1c_circular_information_flow() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, &str, Exp, &str, &str); 4] = [
        // level  T1 reads id 2    T2 reads id 1  T1 commits             T2 commits   the end state
        (RU,  Now("2 => 22"),    "1 => 11",     Now("committed"),    "committed", "1 => 11, 2 => 22"),
        (RC,  Now("2 => 20"),    "1 => 10",     Now("committed"),    "committed", "1 => 11, 2 => 22"),
        (RR,  Now("2 => 20"),    "1 => 10",     Now("committed"),    "committed", "1 => 11, 2 => 22"),
        (SER, Blocks("2 => 20"), "Deadlock",    Blocks("committed"), "aborted",   "1 => 11, 2 => 20"),
    ];
    for (level, t1_select, t2_select, t1_commit, t2_commit, end) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: update test set value = 11 where id = 1
            t1.update("1", "11").is("ok");
            // -- T2: update test set value = 22 where id = 2
            t2.update("2", "22").is("ok");
            // -- T1: select * from test where id = 2   -- still shows 2 => 20
            //        (RU: 2 => 22, T2's uncommitted write; SER: BLOCKS on T2's write lock)
            let select = t1.get(&["2"]).expect(t1_select);
            // -- T2: select * from test where id = 1   -- still shows 1 => 10
            //        (RU: 1 => 11; SER: Deadlock, T2 would wait for T1, which waits for T2)
            t2.get(&["1"]).is(t2_select);
            // -- T1: commit   -- (SER: waits behind T1's blocked select)
            let commit = t1.commit().expect(t1_commit);
            // -- T2: commit   -- (SER: aborts, the deadlock victim; unblocks T1)
            t2.commit().is(t2_commit);
            select.settle();
            commit.settle();
        });
        assert_eq!(db.select_all(), end, "[{level:?}] the end state");
    }
}

/// OTV, observed transaction vanishes: once T3 has seen T1's write to one
/// row, it must not later see T1's write to the other row overwritten by a
/// transaction (T2) whose write to the first row it does not see.
#[test]
fn otv_observed_transaction_vanishes() {
    type Case = (Isolation, &'static str, Exp, Exp, &'static str, &'static str, &'static str, &'static str);
    #[rustfmt::skip]
    const CASES: [Case; 4] = [
        // level  T2's updates     T3 reads id 1      T3 reads id 2      T2 commits   T3 reads   T3 reads   the end state
        //        (of id 1 once                                                       id 2       id 1
        //        released, id 2)
        (RU,  "ok",            Now("1 => 12"),    Now("2 => 18"),    "committed", "2 => 18", "1 => 12", "1 => 12, 2 => 18"),
        (RC,  "ok",            Now("1 => 11"),    Now("2 => 19"),    "committed", "2 => 18", "1 => 12", "1 => 12, 2 => 18"),
        (RR,  "WriteConflict", Now("1 => 10"),    Now("2 => 20"),    "aborted",   "2 => 20", "1 => 10", "1 => 11, 2 => 19"),
        (SER, "ok",            Blocks("1 => 12"), Blocks("2 => 18"), "committed", "2 => 18", "1 => 12", "1 => 12, 2 => 18"),
    ];
    for (level, t2_updates, t3_select_1, t3_select_2, t2_commit, t3_select_3, t3_select_4, end) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            let t3 = db.begin(s, "T3", level);
            // -- T1: update test set value = 11 where id = 1
            t1.update("1", "11").is("ok");
            // -- T1: update test set value = 19 where id = 2
            t1.update("2", "19").is("ok");
            // -- T2: update test set value = 12 where id = 1   -- BLOCKS on T1's write lock
            let blocked = t2.update("1", "12").blocks();
            // -- T1: commit   -- unblocks T2 (RR: T2's update fails, T1 committed id 1 after T2's snapshot)
            t1.commit().is("committed");
            blocked.is(t2_updates);
            // -- T3: select * from test where id = 1   -- shows 1 => 11
            //        (RU: 1 => 12, T2's uncommitted write; RR: 1 => 10, T3's snapshot;
            //        SER: BLOCKS on T2's write lock)
            let select_1 = t3.get(&["1"]).expect(t3_select_1);
            // -- T2: update test set value = 18 where id = 2
            t2.update("2", "18").is(t2_updates);
            // -- T3: select * from test where id = 2   -- shows 2 => 19
            //        (RU: 2 => 18; RR: 2 => 20; SER: waits behind T3's blocked select)
            let select_2 = t3.get(&["2"]).expect(t3_select_2);
            // -- T2: commit   -- (SER: unblocks T3, which reads 1 => 12, then 2 => 18)
            t2.commit().is(t2_commit);
            select_1.settle();
            select_2.settle();
            // -- T3: select * from test where id = 2   -- shows 2 => 18 (RR: 2 => 20)
            t3.get(&["2"]).is(t3_select_3);
            // -- T3: select * from test where id = 1   -- shows 1 => 12 (RR: 1 => 10)
            t3.get(&["1"]).is(t3_select_4);
            // -- T3: commit
            t3.commit().is("committed");
        });
        assert_eq!(db.select_all(), end, "[{level:?}] the end state");
    }
}

/// PMP, predicate-many-preceders: a predicate read repeated in T1 must not
/// see a row T2 inserted into the predicate's range after the first read.
#[test]
fn pmp_predicate_many_preceders() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, Exp, &str); 4] = [
        // level  T2's insert     T2 commits             T1's second select
        (RU,  Now("ok"),      Now("committed"),      "3 => 30"),   // the new row appears
        (RC,  Now("ok"),      Now("committed"),      "3 => 30"),   // the new row appears
        (RR,  Now("ok"),      Now("committed"),      "nothing"),
        (SER, Blocks("ok"),   Blocks("committed"),   "nothing"),
    ];
    for (level, t2_insert, t2_commit, t1_select_2) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: select * from test where value = 30   -- returns nothing
            t1.select_where("value = 30", |v| v == 30).is("nothing");
            // -- T2: insert into test (id, value) values (3, 30)   -- (SER: BLOCKS on T1's range lock)
            let insert = t2.insert("3", "30").expect(t2_insert);
            // -- T2: commit   -- (SER: waits behind T2's blocked insert)
            let commit = t2.commit().expect(t2_commit);
            // -- T1: select * from test where value % 3 = 0   -- RU, RC: returns the new row 3 => 30;
            //        RR, SER: still returns nothing
            t1.select_where("value % 3 = 0", |v| v % 3 == 0).is(t1_select_2);
            // -- T1: commit   -- (SER: unblocks T2)
            t1.commit().is("committed");
            insert.settle();
            commit.settle();
        });
        assert_eq!(db.select_all(), "1 => 10, 2 => 20, 3 => 30", "[{level:?}] the end state");
    }
}

/// P4, lost update: T1 and T2 each read id 1 and write back the value read
/// plus one; both must not commit, or one increment is lost.
#[test]
fn p4_lost_update() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, Exp, Exp, &str); 4] = [
        // level  T1's update     T2's update                T1 commits             T2 commits
        (RU,  Now("ok"),      Blocks("ok"),              Now("committed"),      "committed"),   // lost
        (RC,  Now("ok"),      Blocks("ok"),              Now("committed"),      "committed"),   // lost
        (RR,  Now("ok"),      Blocks("WriteConflict"),   Now("committed"),      "aborted"),
        (SER, Blocks("ok"),   Now("Deadlock"),           Blocks("committed"),   "aborted"),
    ];
    for (level, t1_update, t2_update, t1_commit, t2_commit) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: select * from test where id = 1   -- shows 1 => 10
            t1.get(&["1"]).is("1 => 10");
            // -- T2: select * from test where id = 1   -- shows 1 => 10
            t2.get(&["1"]).is("1 => 10");
            // -- T1: update test set value = 11 where id = 1   -- (10 + 1) (SER: BLOCKS on T2's read lock)
            let update_1 = t1.update("1", "11").expect(t1_update);
            // -- T2: update test set value = 11 where id = 1   -- (10 + 1) BLOCKS on T1's write lock
            //        (SER: Deadlock, T2 would wait for T1, which waits for T2)
            let update_2 = t2.update("1", "11").expect(t2_update);
            // -- T1: commit   -- unblocks T2, whose update overwrites T1's (RR: T2's update fails,
            //        T1 committed id 1 after T2's snapshot; SER: waits behind T1's blocked update)
            let commit = t1.commit().expect(t1_commit);
            update_2.settle();
            // -- T2: commit   -- (RR, SER: aborts; SER: unblocks T1)
            t2.commit().is(t2_commit);
            update_1.settle();
            commit.settle();
        });
        // At RU and RC both committed an increment, and the value went up by one only.
        assert_eq!(db.select_all(), "1 => 11, 2 => 20", "[{level:?}] the end state");
    }
}

/// G-single, read skew: T1 must not see id 1 before T2's transaction and
/// id 2 after it.
#[test]
fn g_single_read_skew() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, Exp, Exp, &str); 4] = [
        // level  T2 updates id 1  T2 updates id 2  T2 commits             T1 reads id 2
        (RU,  Now("ok"),       Now("ok"),       Now("committed"),      "2 => 18"),   // the skew
        (RC,  Now("ok"),       Now("ok"),       Now("committed"),      "2 => 18"),   // the skew
        (RR,  Now("ok"),       Now("ok"),       Now("committed"),      "2 => 20"),
        (SER, Blocks("ok"),    Blocks("ok"),    Blocks("committed"),   "2 => 20"),
    ];
    for (level, t2_update_1, t2_update_2, t2_commit, t1_select_2) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: select * from test where id = 1   -- shows 1 => 10
            t1.get(&["1"]).is("1 => 10");
            // -- T2: select * from test where id = 1
            t2.get(&["1"]).is("1 => 10");
            // -- T2: select * from test where id = 2
            t2.get(&["2"]).is("2 => 20");
            // -- T2: update test set value = 12 where id = 1   -- (SER: BLOCKS on T1's read lock)
            let update_1 = t2.update("1", "12").expect(t2_update_1);
            // -- T2: update test set value = 18 where id = 2   -- (SER: waits behind T2's blocked update)
            let update_2 = t2.update("2", "18").expect(t2_update_2);
            // -- T2: commit   -- (SER: waits behind T2's blocked update)
            let commit = t2.commit().expect(t2_commit);
            // -- T1: select * from test where id = 2   -- RU, RC: shows 2 => 18; RR, SER: shows 2 => 20
            t1.get(&["2"]).is(t1_select_2);
            // -- T1: commit   -- (SER: unblocks T2)
            t1.commit().is("committed");
            update_1.settle();
            update_2.settle();
            commit.settle();
        });
        assert_eq!(db.select_all(), "1 => 12, 2 => 18", "[{level:?}] the end state");
    }
}

/// G2-item, write skew: T1 and T2 each read both rows and update a
/// different one; both must not commit (each decided on what the other
/// changed).
#[test]
fn g2_item_write_skew() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, &str, Exp, &str, &str); 4] = [
        // level  T1's update     T2's update   T1 commits             T2 commits   the end state
        (RU,  Now("ok"),      "ok",         Now("committed"),      "committed", "1 => 11, 2 => 21"),   // the skew
        (RC,  Now("ok"),      "ok",         Now("committed"),      "committed", "1 => 11, 2 => 21"),   // the skew
        (RR,  Now("ok"),      "ok",         Now("committed"),      "committed", "1 => 11, 2 => 21"),   // the skew
        (SER, Blocks("ok"),   "Deadlock",   Blocks("committed"),   "aborted",   "1 => 11, 2 => 20"),
    ];
    for (level, t1_update, t2_update, t1_commit, t2_commit, end) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: select * from test where id in (1, 2)   -- shows 1 => 10, 2 => 20
            t1.get(&["1", "2"]).is("1 => 10, 2 => 20");
            // -- T2: select * from test where id in (1, 2)   -- shows 1 => 10, 2 => 20
            t2.get(&["1", "2"]).is("1 => 10, 2 => 20");
            // -- T1: update test set value = 11 where id = 1   -- (SER: BLOCKS on T2's read lock)
            let update = t1.update("1", "11").expect(t1_update);
            // -- T2: update test set value = 21 where id = 2   -- (SER: Deadlock, T2 would wait for T1,
            //        which waits for T2)
            t2.update("2", "21").is(t2_update);
            // -- T1: commit   -- (SER: waits behind T1's blocked update)
            let commit = t1.commit().expect(t1_commit);
            // -- T2: commit   -- (SER: aborts, the deadlock victim; unblocks T1)
            t2.commit().is(t2_commit);
            update.settle();
            commit.settle();
        });
        assert_eq!(db.select_all(), end, "[{level:?}] the end state");
    }
}

/// G2, anti-dependency cycles over a predicate: T1 and T2 each scan for
/// rows with `value % 3 = 0`, find none, and insert one; both must not
/// commit (each would have found the other's row in a serial order).
#[test]
fn g2_anti_dependency_cycles() {
    #[rustfmt::skip]
    const CASES: [(Isolation, Exp, &str, Exp, &str, &str); 4] = [
        // level  T1's insert     T2's insert   T1 commits             T2 commits   the predicate at the end
        (RU,  Now("ok"),      "ok",         Now("committed"),      "committed", "3 => 30, 4 => 42"),   // the cycle
        (RC,  Now("ok"),      "ok",         Now("committed"),      "committed", "3 => 30, 4 => 42"),   // the cycle
        (RR,  Now("ok"),      "ok",         Now("committed"),      "committed", "3 => 30, 4 => 42"),   // the cycle
        (SER, Blocks("ok"),   "Deadlock",   Blocks("committed"),   "aborted",   "3 => 30"),
    ];
    for (level, t1_insert, t2_insert, t1_commit, t2_commit, end) in CASES {
        let db = Db::new();
        std::thread::scope(|s| {
            let t1 = db.begin(s, "T1", level);
            let t2 = db.begin(s, "T2", level);
            // -- T1: select * from test where value % 3 = 0   -- returns nothing
            t1.select_where("value % 3 = 0", |v| v % 3 == 0).is("nothing");
            // -- T2: select * from test where value % 3 = 0   -- returns nothing
            t2.select_where("value % 3 = 0", |v| v % 3 == 0).is("nothing");
            // -- T1: insert into test (id, value) values (3, 30)   -- (SER: BLOCKS on T2's range lock)
            let insert = t1.insert("3", "30").expect(t1_insert);
            // -- T2: insert into test (id, value) values (4, 42)   -- (SER: Deadlock, T2 would wait
            //        for T1, which waits for T2)
            t2.insert("4", "42").is(t2_insert);
            // -- T1: commit   -- (SER: waits behind T1's blocked insert)
            let commit = t1.commit().expect(t1_commit);
            // -- T2: commit   -- (SER: aborts, the deadlock victim; unblocks T1)
            t2.commit().is(t2_commit);
            insert.settle();
            commit.settle();
        });
        // -- either: select * from test where value % 3 = 0
        assert_eq!(db.select_where(|v| v % 3 == 0), end, "[{level:?}] the end state");
    }
}
