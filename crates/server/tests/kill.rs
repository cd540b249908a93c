//! KILL and shutdown against statements that wait rather than work:
//! SLEEP(), a DELETE, a row-lock wait and a metadata-lock wait end on
//! KILL QUERY with 1317 (as in MariaDB 10.11), the DELETE undone; KILL
//! CONNECTION of a waiting session rolls its transaction back; shutdown
//! ends a sleeping statement (its open transaction rolled back) instead
//! of waiting for it.
//!
//! Each kill waits for the statement to show in SHOW PROCESSLIST first;
//! the 60 s limits are hang guards only.

mod support;

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::prelude::*;
use mysql::Conn;
use support::TestServer;

fn code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// Waits until connection `id` runs a statement whose text has `needle`.
fn running(a: &mut Conn, id: u32, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows: Vec<(u64, Option<String>)> =
            a.query_map("SHOW PROCESSLIST", |r: mysql::Row| (r.get(0).unwrap(), r.get(7).unwrap())).unwrap();
        if rows.iter().any(|(i, info)| *i == id as u64 && info.as_deref().is_some_and(|t| t.contains(needle)))
        {
            return;
        }
        assert!(Instant::now() < deadline, "connection {id} never ran {needle}: {rows:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until connection `id` is gone from the processlist.
fn gone(a: &mut Conn, id: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ids: Vec<u64> = a.query_map("SHOW PROCESSLIST", |r: mysql::Row| r.get(0).unwrap()).unwrap();
        if !ids.contains(&(id as u64)) {
            return;
        }
        assert!(Instant::now() < deadline, "connection {id} still listed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

type Running = JoinHandle<(Conn, Result<(), mysql::Error>)>;

/// The result of a statement started by [`start`]; fails the test when it
/// does not end within 60 s of the KILL (a hang guard).
fn finish(t: Running) -> (Conn, Result<(), mysql::Error>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !t.is_finished() {
        assert!(Instant::now() < deadline, "the killed statement still runs");
        std::thread::sleep(Duration::from_millis(10));
    }
    t.join().unwrap()
}

/// Runs `setup` then `sql` on a new connection in another thread.
fn start(s: &TestServer, setup: &[&str], sql: &str) -> (u32, Running) {
    let mut c = s.conn_db("app");
    for q in setup {
        c.query_drop(*q).unwrap();
    }
    let id = c.connection_id();
    let sql = sql.to_string();
    (
        id,
        std::thread::spawn(move || {
            let r = c.query_drop(&sql);
            (c, r)
        }),
    )
}

fn setup(s: &TestServer) -> Conn {
    let mut a = s.conn();
    a.query_drop("CREATE DATABASE app").unwrap();
    a.query_drop("USE app").unwrap();
    a.query_drop("CREATE TABLE k (id INT PRIMARY KEY, v INT)").unwrap();
    a.query_drop("INSERT INTO k VALUES (1, 1), (2, 2), (3, 3)").unwrap();
    a
}

#[test]
fn kill_query_ends_sleep_row_lock_and_metadata_lock_waits() {
    let s = TestServer::start();
    let mut a = setup(&s);

    // SLEEP: MariaDB fails the statement with 1317 (it does not return 1).
    let (id, t) = start(&s, &[], "SELECT SLEEP(1000)");
    running(&mut a, id, "SLEEP(1000)");
    a.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (mut b, r) = finish(t);
    assert_eq!(code(&r.unwrap_err()), 1317);
    // The kill was for that statement only.
    assert_eq!(b.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));

    // A DELETE of many rows (slowed by a SLEEP per row): the rows it
    // deleted before the KILL come back.
    let values: Vec<String> = (0..500).map(|i| format!("({i}, {i})")).collect();
    a.query_drop("CREATE TABLE big (id INT PRIMARY KEY, v INT)").unwrap();
    a.query_drop(format!("INSERT INTO big VALUES {}", values.join(","))).unwrap();
    let (id, t) = start(&s, &[], "DELETE FROM big WHERE v >= SLEEP(0.02)");
    running(&mut a, id, "FROM big");
    a.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, r) = finish(t);
    assert_eq!(code(&r.unwrap_err()), 1317);
    assert_eq!(a.query_first::<i64, _>("SELECT COUNT(*) FROM big").unwrap(), Some(500));

    // A row-lock wait (innodb_lock_wait_timeout far away).
    let mut holder = s.conn_db("app");
    holder.query_drop("BEGIN").unwrap();
    holder.query_drop("UPDATE k SET v = 10 WHERE id = 1").unwrap();
    let set = "SET SESSION innodb_lock_wait_timeout = 1000";
    let (id, t) = start(&s, &[set], "UPDATE k SET v = 20 WHERE id = 1");
    running(&mut a, id, "v = 20");
    a.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (mut b, r) = finish(t);
    assert_eq!(code(&r.unwrap_err()), 1317);
    assert_eq!(b.query_first::<i64, _>("SELECT v FROM k WHERE id = 2").unwrap(), Some(2));

    // A metadata-lock wait: the holder's open transaction wrote k.
    let set = "SET SESSION lock_wait_timeout = 1000";
    let (id, t) = start(&s, &[set], "ALTER TABLE k ADD COLUMN w INT");
    running(&mut a, id, "ADD COLUMN w");
    a.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, r) = finish(t);
    assert_eq!(code(&r.unwrap_err()), 1317);

    // KILL CONNECTION of a session waiting for a row lock: its transaction
    // (an earlier insert) is rolled back.
    let setup = ["SET SESSION innodb_lock_wait_timeout = 1000", "BEGIN", "INSERT INTO k VALUES (100, 100)"];
    let (id, t) = start(&s, &setup, "UPDATE k SET v = 30 WHERE id = 1");
    running(&mut a, id, "v = 30");
    a.query_drop(format!("KILL CONNECTION {id}")).unwrap();
    let (_, r) = finish(t);
    assert!(r.is_err(), "the killed connection's statement failed");
    gone(&mut a, id);
    holder.query_drop("COMMIT").unwrap();
    let rows: Vec<(i32, i32)> = a.query("SELECT id, v FROM k ORDER BY id").unwrap();
    assert_eq!(rows, vec![(1, 10), (2, 2), (3, 3)], "no column w, no row 100");
}

#[test]
fn shutdown_ends_a_sleeping_statement_and_rolls_its_transaction_back() {
    let s = TestServer::start();
    let mut a = setup(&s);
    let (id, t) = start(&s, &["BEGIN", "DELETE FROM k"], "SELECT SLEEP(1000)");
    running(&mut a, id, "SLEEP(1000)");
    drop(a);
    // Shutdown does not wait for the statement (a hang guard again).
    let (tx, rx) = std::sync::mpsc::channel();
    let restarted = std::thread::spawn(move || {
        let mut s = s;
        s.restart();
        tx.send(()).unwrap();
        s
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the shutdown waited for the sleeping statement");
    let s = restarted.join().unwrap();
    let (_, r) = finish(t);
    assert!(r.is_err(), "the statement ended with the server");
    let mut a = s.conn_db("app");
    assert_eq!(a.query_first::<i64, _>("SELECT COUNT(*) FROM k").unwrap(), Some(3));
}
