//! A SIGKILL crash test of the server under concurrent transactional load.
//!
//! The server runs in a child process (this test binary itself, started
//! with `FRACTALDB_SERVER_CRASH_CHILD` set to the data folder; it commits
//! with an fsync, as a production server does). Several connections run
//! transactions over the protocol:
//!
//! - transfers: move an amount between two accounts and record the transfer
//!   (`SELECT ... FOR UPDATE`, two UPDATEs, an INSERT, COMMIT);
//! - roll-ups: insert a few events and add them to their group's total
//!   (INSERTs, `INSERT ... ON DUPLICATE KEY UPDATE`, COMMIT), on a table
//!   with a secondary index.
//!
//! A commit counts as acknowledged when COMMIT's OK came back. The child is
//! killed with SIGKILL at a random moment, restarted on the same folder
//! (recovery runs), and checked:
//!
//! - the balances add up to the opening total, and each account's balance
//!   is its opening balance plus the transfers recorded (so a transfer is
//!   all there or not at all, including the one in flight at the kill);
//! - every acknowledged transfer and event is there;
//! - each group's total and count equal its events' sum and count;
//! - the secondary index has exactly the rows the primary has.
//!
//! `FRACTALDB_SERVER_CRASH_KILLS` sets the number of kills (default 6);
//! `FRACTALDB_SEED` fixes the timing.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use rand::{rngs::SmallRng, Rng, SeedableRng};

const CHILD_ENV: &str = "FRACTALDB_SERVER_CRASH_CHILD";
const ACCOUNTS: i64 = 16;
const OPENING: i64 = 1000;
const GROUPS: i64 = 8;
const TRANSFER_THREADS: u64 = 2;
const ROLLUP_THREADS: u64 = 2;

/// The child: a server on the folder named by the environment, its port on
/// stdout, until killed. Returns at once in an ordinary test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let mut opts = fractaldb_server::ServerOptions::new(&dir);
    opts.port = 0;
    opts.socket = None;
    opts.log_stderr = false;
    opts.db.cache_size_bytes = 16 << 20;
    opts.db.commit_sync = true;
    opts.db.direct_io = false;
    let server = fractaldb_server::Server::start(opts).expect("child: starting the server");
    println!("PORT {}", server.tcp_addr().port());
    loop {
        std::thread::park();
    }
}

struct Child2 {
    child: Child,
    port: u16,
}

fn start_child(dir: &Path) -> Child2 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the child");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the child exited before listening").unwrap();
        // libtest prints "test crash_child ... " first, on the same line.
        if let Some(p) = line.split("PORT ").nth(1) {
            break p.trim().parse::<u16>().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Child2 { child, port }
}

fn connect(port: u16) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false)
        .db_name(Some("bank"))
        .tcp_connect_timeout(Some(Duration::from_secs(10)));
    mysql::Conn::new(opts).expect("connecting")
}

/// What the clients saw acknowledged, across all rounds.
#[derive(Default)]
struct Acked {
    transfers: BTreeSet<i64>,
    events: BTreeSet<i64>,
}

/// True for the errors a transaction is retried after (deadlock, lock wait
/// timeout); anything else from a live server fails the test.
fn retryable(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::MySqlError(m) if m.code == 1213 || m.code == 1205)
}

/// The connection is gone (the kill): the client stops.
fn gone(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::IoError(_) | mysql::Error::DriverError(_) | mysql::Error::CodecError(_))
}

/// One transaction; Ok(true) committed and acknowledged, Ok(false) retry.
fn run_txn(c: &mut mysql::Conn, stmts: &[String], stop: &AtomicBool) -> Result<bool, mysql::Error> {
    let r = (|| -> Result<(), mysql::Error> {
        c.query_drop("BEGIN")?;
        for s in stmts {
            c.query_drop(s)?;
        }
        c.query_drop("COMMIT")
    })();
    match r {
        Ok(()) => Ok(true),
        Err(e) if retryable(&e) && !stop.load(Ordering::Relaxed) => {
            c.query_drop("ROLLBACK")?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

fn transfer_client(port: u16, thread: u64, seed: u64, stop: Arc<AtomicBool>, acked: Arc<Mutex<Acked>>) {
    let mut c = connect(port);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        // Ids are unique across rounds: the round's seed is in them.
        let id = ((seed % 100_000) as i64 * 10 + thread as i64) * 1_000_000 + seq;
        seq += 1;
        let a = rng.gen_range(0..ACCOUNTS);
        let mut b = rng.gen_range(0..ACCOUNTS - 1);
        if b >= a {
            b += 1;
        }
        let amount = rng.gen_range(1..50);
        let stmts = vec![
            format!("SELECT balance FROM accounts WHERE id IN ({a}, {b}) FOR UPDATE"),
            format!("UPDATE accounts SET balance = balance - {amount} WHERE id = {a}"),
            format!("UPDATE accounts SET balance = balance + {amount} WHERE id = {b}"),
            format!("INSERT INTO transfers VALUES ({id}, {a}, {b}, {amount})"),
        ];
        match run_txn(&mut c, &stmts, &stop) {
            Ok(true) => {
                acked.lock().unwrap().transfers.insert(id);
            }
            Ok(false) => {}
            Err(e) if gone(&e) => return,
            Err(e) => panic!("transfer {id}: {e}"),
        }
    }
}

fn rollup_client(port: u16, thread: u64, seed: u64, stop: Arc<AtomicBool>, acked: Arc<Mutex<Acked>>) {
    let mut c = connect(port);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let g = rng.gen_range(0..GROUPS);
        let mut ids = Vec::new();
        let mut stmts = Vec::new();
        let mut sum = 0;
        for _ in 0..rng.gen_range(1..4) {
            let id = ((seed % 100_000) as i64 * 10 + thread as i64) * 1_000_000 + seq;
            seq += 1;
            let amount = rng.gen_range(1..1000);
            sum += amount;
            // A payload so the events table outgrows the small cache.
            stmts.push(format!(
                "INSERT INTO events VALUES ({id}, {g}, {amount}, REPEAT('x', {}))",
                50 + id % 150
            ));
            ids.push(id);
        }
        stmts.push(format!(
            "INSERT INTO totals VALUES ({g}, {sum}, {}) ON DUPLICATE KEY UPDATE total = total + {sum}, n = n + {}",
            ids.len(),
            ids.len()
        ));
        match run_txn(&mut c, &stmts, &stop) {
            Ok(true) => acked.lock().unwrap().events.extend(ids),
            Ok(false) => {}
            Err(e) if gone(&e) => return,
            Err(e) => panic!("roll-up {ids:?}: {e}"),
        }
    }
}

fn setup(port: u16) {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false);
    let mut c = mysql::Conn::new(opts).unwrap();
    c.query_drop("CREATE DATABASE bank").unwrap();
    c.query_drop("USE bank").unwrap();
    c.query_drop("CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)").unwrap();
    c.query_drop(
        "CREATE TABLE transfers (id BIGINT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, amount INT NOT NULL)",
    )
    .unwrap();
    c.query_drop(
        "CREATE TABLE events (id BIGINT PRIMARY KEY, grp INT NOT NULL, amount INT NOT NULL, pad VARCHAR(255), KEY grp (grp, amount))",
    )
    .unwrap();
    c.query_drop("CREATE TABLE totals (grp INT PRIMARY KEY, total BIGINT NOT NULL, n BIGINT NOT NULL)")
        .unwrap();
    let rows: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {OPENING})")).collect();
    c.query_drop(format!("INSERT INTO accounts VALUES {}", rows.join(","))).unwrap();
}

/// The checks after a restart; returns the row counts for the log line.
fn verify(port: u16, acked: &Acked, round: usize) -> (usize, usize) {
    let mut c = connect(port);
    let balances: BTreeMap<i64, i64> =
        c.query::<(i64, i64), _>("SELECT id, balance FROM accounts").unwrap().into_iter().collect();
    assert_eq!(balances.len() as i64, ACCOUNTS, "round {round}: accounts");
    let total: i64 = balances.values().sum();
    assert_eq!(total, ACCOUNTS * OPENING, "round {round}: the balances no longer add up");
    let transfers: Vec<(i64, i64, i64, i64)> = c.query("SELECT id, src, dst, amount FROM transfers").unwrap();
    let mut expect: BTreeMap<i64, i64> = (0..ACCOUNTS).map(|i| (i, OPENING)).collect();
    let present: BTreeSet<i64> = transfers.iter().map(|t| t.0).collect();
    for &(_, src, dst, amount) in &transfers {
        *expect.get_mut(&src).unwrap() -= amount;
        *expect.get_mut(&dst).unwrap() += amount;
    }
    assert_eq!(
        balances, expect,
        "round {round}: balances differ from the transfers recorded (a torn transfer)"
    );
    let lost: Vec<_> = acked.transfers.difference(&present).collect();
    assert!(lost.is_empty(), "round {round}: acknowledged transfers lost: {lost:?}");

    let events: Vec<(i64, i64, i64)> = c.query("SELECT id, grp, amount FROM events").unwrap();
    let ev_ids: BTreeSet<i64> = events.iter().map(|e| e.0).collect();
    let lost: Vec<_> = acked.events.difference(&ev_ids).collect();
    assert!(lost.is_empty(), "round {round}: acknowledged events lost: {lost:?}");
    let mut sums: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(_, g, amount) in &events {
        let e = sums.entry(g).or_default();
        e.0 += amount;
        e.1 += 1;
    }
    let totals: BTreeMap<i64, (i64, i64)> = c
        .query::<(i64, i64, i64), _>("SELECT grp, total, n FROM totals")
        .unwrap()
        .into_iter()
        .map(|(g, t, n)| (g, (t, n)))
        .collect();
    assert_eq!(totals, sums, "round {round}: group totals differ from their events (a torn roll-up)");
    // The secondary index: the same rows through it as through the primary.
    let by_index: Vec<(i64, i64, i64)> = c
        .query("SELECT id, grp, amount FROM events FORCE INDEX (grp) WHERE grp >= 0 ORDER BY grp, amount")
        .unwrap();
    let mut a: Vec<_> = by_index.clone();
    a.sort();
    let mut b = events.clone();
    b.sort();
    assert_eq!(a, b, "round {round}: the secondary index differs from the primary");
    (transfers.len(), events.len())
}

fn kill(mut c: Child2) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc_kill(c.child.id() as i32, 9) };
    c.child.wait().unwrap();
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn sigkill_under_transactional_load() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let kills: usize =
        std::env::var("FRACTALDB_SERVER_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let seed: u64 = std::env::var("FRACTALDB_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen::<u32>() as u64);
    eprintln!("sigkill_under_transactional_load: FRACTALDB_SEED={seed}, {kills} kills");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::Builder::new().prefix("fdbcrash").tempdir_in("/tmp").unwrap();
    let path = dir.path().to_path_buf();
    // FRACTALDB_SERVER_CRASH_KEEP=1 leaves the folder (killed) for a look.
    if std::env::var("FRACTALDB_SERVER_CRASH_KEEP").is_ok() {
        eprintln!("keeping {}", path.display());
        std::mem::forget(dir);
    }
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut child = start_child(&path);
    setup(child.port);
    for round in 0..kills {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for t in 0..TRANSFER_THREADS + ROLLUP_THREADS {
            let (port, stop, acked) = (child.port, stop.clone(), acked.clone());
            let s = rng.gen::<u64>();
            threads.push(std::thread::spawn(move || {
                if t < TRANSFER_THREADS {
                    transfer_client(port, t, s, stop, acked)
                } else {
                    rollup_client(port, t, s, stop, acked)
                }
            }));
        }
        // Let the load run, then kill mid-flight.
        let start = Instant::now();
        let wait = Duration::from_millis(rng.gen_range(500..2500));
        // A client that ends before the kill failed: its panic shows at
        // the join below.
        while start.elapsed() < wait && !threads.iter().any(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        kill(child);
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            if let Err(p) = t.join() {
                std::panic::resume_unwind(p);
            }
        }
        let t0 = Instant::now();
        child = start_child(&path);
        let restart = t0.elapsed();
        if restart > Duration::from_secs(5) {
            let log = std::fs::read_to_string(path.join("fractaldb.log")).unwrap_or_default();
            eprintln!(
                "slow restart; the server's log ends:\n{}",
                log.lines().rev().take(8).collect::<Vec<_>>().join("\n")
            );
        }
        let a = acked.lock().unwrap();
        let (nt, ne) = verify(child.port, &a, round);
        eprintln!(
            "round {round}: killed after {wait:?}; {} transfers and {} events acknowledged so far, {nt} and {ne} present; restart {restart:?}, checks {:?}",
            a.transfers.len(),
            a.events.len(),
            t0.elapsed() - restart
        );
    }
    kill(child);
}
