//! The thread pool (`thread_handling=pool-of-threads`): many connections on
//! two workers, a statement blocked on a row lock that lets the others run,
//! KILL and wait_timeout of connections parked in the pool, and shutdown
//! with connections parked.

mod support;

use std::time::{Duration, Instant};

use fractaldb_server::ThreadHandling;
use mysql::prelude::*;
use support::TestServer;

fn pool(size: usize, stall_ms: u64) -> TestServer {
    TestServer::start_with(|o| {
        o.thread_handling = ThreadHandling::PoolOfThreads;
        o.thread_pool_size = size;
        o.thread_pool_stall_limit_ms = stall_ms;
        o.max_connections = 400;
    })
}

/// A client that gives up (an error, so the test fails rather than hangs)
/// when the server does not answer.
fn conn(s: &TestServer) -> mysql::Conn {
    mysql::Conn::new(s.opts().read_timeout(Some(Duration::from_secs(60)))).expect("connecting")
}

#[test]
fn many_idle_connections_and_a_few_busy_ones_on_two_threads() {
    let s = pool(2, 500);
    let mut admin = conn(&s);
    let (th, size): (String, u64) =
        admin.query_first("SELECT @@thread_handling, @@thread_pool_size").unwrap().unwrap();
    assert_eq!((th.as_str(), size), ("pool-of-threads", 2));
    let (code, _) = match admin.query_drop("SET GLOBAL thread_pool_size = 4").unwrap_err() {
        mysql::Error::MySqlError(e) => (e.code, e.message),
        e => panic!("{e}"),
    };
    assert_eq!(code, 1238, "read-only here");
    admin.query_drop("CREATE DATABASE d").unwrap();
    admin.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)").unwrap();
    let mut idle: Vec<mysql::Conn> = (0..200).map(|_| conn(&s)).collect();
    let busy: Vec<_> = (0..4)
        .map(|w| {
            let mut c = conn(&s);
            std::thread::spawn(move || {
                for i in 0..50 {
                    let id = w * 1000 + i;
                    c.exec_drop("INSERT INTO d.t VALUES (?, ?)", (id, i)).unwrap();
                    let v: Option<i64> = c.exec_first("SELECT v FROM d.t WHERE id = ?", (id,)).unwrap();
                    assert_eq!(v, Some(i as i64));
                }
            })
        })
        .collect();
    for b in busy {
        b.join().unwrap();
    }
    let n: u64 = admin.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    assert_eq!(n, 200);
    // Every idle connection still answers, with its own id.
    let mut ids = std::collections::HashSet::new();
    for c in idle.iter_mut() {
        let id: u64 = c.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
        assert_eq!(id, c.connection_id() as u64);
        ids.insert(id);
    }
    assert_eq!(ids.len(), 200);
    let listed = admin.query_map("SHOW PROCESSLIST", |r: mysql::Row| r.get::<u64, _>(0).unwrap()).unwrap();
    assert!(listed.len() >= 201, "{} listed", listed.len());
}

/// With one worker and no stall check (a day), a statement waiting for a
/// row lock must still let the other connections run: the wait tells the
/// pool (`fractaldb::blocking`). Without that, the third connection's
/// queries would wait behind it and the client's read would time out.
#[test]
fn a_statement_blocked_on_a_row_lock_lets_others_run() {
    let s = pool(1, 86_400_000);
    let mut a = conn(&s);
    a.query_drop("CREATE DATABASE d").unwrap();
    a.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)").unwrap();
    a.query_drop("INSERT INTO d.t VALUES (1, 0), (2, 0)").unwrap();
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE d.t SET v = 1 WHERE id = 1").unwrap();
    let mut b = conn(&s);
    let b_id = b.connection_id();
    b.query_drop("SET SESSION tokudb_lock_timeout = 600000").unwrap();
    let blocked = std::thread::spawn(move || {
        b.query_drop("UPDATE d.t SET v = 2 WHERE id = 1").unwrap();
        b
    });
    let mut c = conn(&s);
    // Until b waits on the lock (PROCESSLIST shows its statement), c runs.
    let t0 = Instant::now();
    loop {
        let info: Vec<(u64, Option<String>)> = c
            .query_map("SHOW FULL PROCESSLIST", |r: mysql::Row| (r.get(0).unwrap(), r.get(7).unwrap()))
            .unwrap();
        if info
            .iter()
            .any(|(id, q)| *id == b_id as u64 && q.as_deref().is_some_and(|q| q.starts_with("UPDATE")))
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "b never started its UPDATE");
        std::thread::sleep(Duration::from_millis(10));
    }
    // b is inside its statement (a lock wait it cannot leave until a
    // commits): c and new connections still get answers.
    for i in 0..20 {
        c.exec_drop("UPDATE d.t SET v = ? WHERE id = 2", (i,)).unwrap();
    }
    let mut d = conn(&s);
    let v: i64 = d.query_first("SELECT v FROM d.t WHERE id = 2").unwrap().unwrap();
    assert_eq!(v, 19);
    assert!(!blocked.is_finished(), "b's UPDATE ended before a committed");
    a.query_drop("COMMIT").unwrap();
    let mut b = blocked.join().unwrap();
    let v: i64 = b.query_first("SELECT v FROM d.t WHERE id = 1").unwrap().unwrap();
    assert_eq!(v, 2, "b's UPDATE ran after a's commit");
}

#[test]
fn kill_and_wait_timeout_of_parked_connections() {
    let s = pool(2, 500);
    let mut admin = conn(&s);
    let mut victim = conn(&s);
    let vid = victim.connection_id();
    victim.query_drop("SELECT 1").unwrap();
    // The victim is parked (waiting for its next command): KILL ends it.
    admin.query_drop(format!("KILL {vid}")).unwrap();
    let gone = |admin: &mut mysql::Conn, id: u32| {
        let t0 = Instant::now();
        loop {
            let ids =
                admin.query_map("SHOW PROCESSLIST", |r: mysql::Row| r.get::<u32, _>(0).unwrap()).unwrap();
            if !ids.contains(&id) {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "connection {id} still listed");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    gone(&mut admin, vid);
    assert!(victim.query_drop("SELECT 1").is_err(), "a killed connection's next statement fails");
    // wait_timeout: closed by the pool while parked, the log says so.
    let mut sleepy = conn(&s);
    let sid = sleepy.connection_id();
    sleepy.query_drop("SET SESSION wait_timeout = 1").unwrap();
    gone(&mut admin, sid);
    assert!(sleepy.query_drop("SELECT 1").is_err());
    assert!(
        s.log().contains(&format!("connection {sid} (127.0.0.1): closed after 1 s idle (wait_timeout)")),
        "{}",
        s.log()
    );
    // Shutdown with connections parked: each ends, the database closes.
    let _parked: Vec<mysql::Conn> = (0..5).map(|_| conn(&s)).collect();
    drop(admin);
    s.stop();
}
