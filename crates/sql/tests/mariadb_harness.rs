//! The MariaDB test harness on its own (no fractaldb): a private server
//! starts, answers over the text protocol in the shape the comparisons
//! use, reports error numbers, and frees its port when dropped.

mod support;

use std::net::TcpListener;

use support::mariadb::{self, run, MariaDb};

#[test]
fn private_server_round_trip_and_stop() {
    if !mariadb::available("private_server_round_trip_and_stop") {
        return;
    }
    let server = MariaDb::start();
    let port = server.port();
    let mut c = server.conn();
    run(&mut c, "CREATE DATABASE h").unwrap();
    run(&mut c, "USE h").unwrap();
    let r = run(&mut c, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), d DECIMAL(10,2))").unwrap();
    assert!(!r.is_result_set());
    let r = run(&mut c, "INSERT INTO t VALUES (1, 'a', 1.5), (2, NULL, NULL), (3, 'c  ', -2)").unwrap();
    assert_eq!(r.affected, 3);
    assert_eq!(r.info, "Records: 3  Duplicates: 0  Warnings: 0");

    let r = run(&mut c, "SELECT id, name, d FROM t ORDER BY id").unwrap();
    assert_eq!(r.columns, ["id", "name", "d"]);
    let b = |s: &str| Some(s.as_bytes().to_vec());
    assert_eq!(
        r.rows,
        vec![vec![b("1"), b("a"), b("1.50")], vec![b("2"), None, None], vec![b("3"), b("c  "), b("-2.00")]]
    );
    assert_eq!(r.affected, 0);

    let r = run(&mut c, "SELECT * FROM t WHERE id > 10").unwrap();
    assert!(r.is_result_set());
    assert!(r.rows.is_empty());

    let e = run(&mut c, "INSERT INTO t VALUES (1, 'dup', 0)").unwrap_err();
    assert_eq!(e.0, 1062, "{e:?}");
    assert!(e.1.contains("Duplicate entry '1' for key 'PRIMARY'"), "{e:?}");
    let e = run(&mut c, "SELECT * FROM missing").unwrap_err();
    assert_eq!(e.0, 1146, "{e:?}");
    let e = run(&mut c, "SELEKT 1").unwrap_err();
    assert_eq!(e.0, 1064, "{e:?}");

    let r = run(&mut c, "UPDATE t SET d = d + 1 WHERE id <= 3").unwrap();
    assert_eq!(r.affected, 2, "{r}");
    assert!(r.info.starts_with("Rows matched: 3  Changed: 2"), "{r}");

    drop(c);
    let pid = server.pid();
    drop(server);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "mariadbd {pid} still runs");
    TcpListener::bind(("127.0.0.1", port)).expect("the stopped server's port is free again");
}

#[test]
fn shared_server_gives_each_test_its_own_database() {
    let Some(server) = MariaDb::shared() else { return };
    let (mut a, db_a) = server.fresh_db("harness");
    let (mut b, db_b) = server.fresh_db("harness");
    assert_ne!(db_a, db_b);
    run(&mut a, "CREATE TABLE t (x INT)").unwrap();
    run(&mut b, "CREATE TABLE t (x INT)").unwrap();
    run(&mut a, "INSERT INTO t VALUES (1)").unwrap();
    assert_eq!(run(&mut b, "SELECT COUNT(*) FROM t").unwrap().rows, vec![vec![Some(b"0".to_vec())]]);
    let r = run(&mut a, "SELECT @@character_set_server, @@collation_server, @@sql_mode").unwrap();
    assert_eq!(r.rows[0][0].as_deref(), Some(&b"utf8mb4"[..]));
    assert_eq!(r.rows[0][1].as_deref(), Some(&b"utf8mb4_general_ci"[..]));
    let mode = String::from_utf8(r.rows[0][2].clone().unwrap()).unwrap();
    assert!(mode.contains("STRICT_TRANS_TABLES"), "{mode}");
}
