//! What operators use, through real clients: global variables (SET GLOBAL,
//! scopes and their errors, max_connections enforced), SHOW STATUS
//! counters, SHOW ENGINE FRACTALDB STATUS, wait_timeout, the slow query
//! log, SHUTDOWN's privilege answer, and PROCESSLIST showing another
//! statement's progress. (my.cnf, SHUTDOWN and the exit code of the real
//! process: crates/cli/tests/server_ops.rs.)

mod support;

use std::time::Duration;

use mysql::prelude::*;
use support::TestServer;

fn status(c: &mut mysql::Conn, q: &str) -> u64 {
    let r: Option<(String, String)> = c.query_first(q).unwrap();
    r.unwrap_or_else(|| panic!("no row for {q}")).1.parse().unwrap()
}

fn code(e: mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("not a server error: {other}"),
    }
}

#[test]
fn global_variables_scopes_and_max_connections() {
    let srv = TestServer::start_with(|o| {
        o.max_connections = 12;
        o.db.variables.push(("wait_timeout".into(), "1234".into()));
    });
    let mut a = srv.conn();
    let v: (u64, u64, u64) =
        a.query_first("SELECT @@max_connections, @@global.wait_timeout, @@wait_timeout").unwrap().unwrap();
    assert_eq!(v, (12, 1234, 1234), "the configured values");
    let r: Vec<mysql::Row> = a.query("SELECT @@global.wait_timeout, @@SESSION.wait_timeout").unwrap();
    let names: Vec<String> = r[0].columns_ref().iter().map(|c| c.name_str().into_owned()).collect();
    assert_eq!(names, ["@@global.wait_timeout", "@@SESSION.wait_timeout"], "named as written, as MariaDB");
    // MariaDB's errors for the wrong scope or a read-only variable.
    assert_eq!(code(a.query_drop("SET max_connections = 20").unwrap_err()), 1229);
    assert_eq!(code(a.query_drop("SET SESSION max_connections = 20").unwrap_err()), 1229);
    assert_eq!(code(a.query_drop("SET GLOBAL warning_count = 1").unwrap_err()), 1238);
    assert_eq!(code(a.query_drop("SET GLOBAL last_insert_id = 1").unwrap_err()), 1228);
    assert_eq!(code(a.query_drop("SET GLOBAL version = 'x'").unwrap_err()), 1238);
    assert_eq!(code(a.query_drop("SELECT @@global.warning_count").unwrap_err()), 1238);
    assert_eq!(code(a.query_drop("SELECT @@session.max_connections").unwrap_err()), 1238);
    assert_eq!(code(a.query_drop("SET GLOBAL max_connections = 'many'").unwrap_err()), 1232);
    // Clamped with MariaDB's warning.
    a.query_drop("SET GLOBAL wait_timeout = -5").unwrap();
    let w: Vec<(String, u32, String)> = a.query("SHOW WARNINGS").unwrap();
    assert_eq!(w, vec![("Warning".into(), 1292, "Truncated incorrect wait_timeout value: '-5'".into())]);
    // SET GLOBAL changes later sessions only; the session keeps its own.
    a.query_drop("SET GLOBAL wait_timeout = 77").unwrap();
    a.query_drop("SET @@global.sql_mode = 'ANSI_QUOTES'").unwrap();
    let mine: (u64, String) = a.query_first("SELECT @@wait_timeout, @@sql_mode").unwrap().unwrap();
    assert_eq!(mine.0, 1234);
    assert!(mine.1.contains("STRICT_TRANS_TABLES"), "{}", mine.1);
    let mut b = srv.conn();
    let theirs: (u64, String) = b.query_first("SELECT @@wait_timeout, @@sql_mode").unwrap().unwrap();
    assert_eq!(theirs, (77, "ANSI_QUOTES".to_string()));
    let g: Vec<(String, String)> = b.query("SHOW GLOBAL VARIABLES LIKE 'wait_timeout'").unwrap();
    assert_eq!(g, vec![("wait_timeout".into(), "77".into())]);
    let g: Option<String> = b
        .query_first(
            "SELECT VARIABLE_VALUE FROM INFORMATION_SCHEMA.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'SQL_MODE'",
        )
        .unwrap();
    assert_eq!(g.as_deref(), Some("ANSI_QUOTES"));
    // SHOW GLOBAL VARIABLES has no SESSION-only variable.
    let g: Vec<(String, String)> = b.query("SHOW GLOBAL VARIABLES LIKE 'warning_count'").unwrap();
    assert!(g.is_empty());
    b.query_drop("SET @@global.sql_mode = DEFAULT").unwrap();

    // max_connections is enforced as set: 10 here, with a and b connected.
    a.query_drop("SET GLOBAL max_connections = 10").unwrap();
    let n: u64 = a.query_first("SELECT @@max_connections").unwrap().unwrap();
    assert_eq!(n, 10);
    let mut more: Vec<mysql::Conn> = (0..8).map(|_| srv.conn()).collect();
    let e = mysql::Conn::new(srv.opts()).map(|_| ()).unwrap_err();
    assert_eq!(code(e), 1040, "the 11th connection is refused");
    more.pop();
    drop(more);
    a.query_drop("SET GLOBAL max_connections = 151").unwrap();
}

#[test]
fn status_counters_session_global_and_engine() {
    let srv = TestServer::start();
    let mut a = srv.conn();
    a.query_drop("CREATE DATABASE s").unwrap();
    a.query_drop("USE s").unwrap();
    a.query_drop("CREATE TABLE t (id INT PRIMARY KEY, v INT)").unwrap();
    for i in 0..3 {
        a.query_drop(format!("INSERT INTO t VALUES ({i}, {i})")).unwrap();
    }
    a.query_drop("INSERT INTO t SELECT id + 10, v FROM t").unwrap();
    a.query_drop("UPDATE t SET v = 5 WHERE id = 1").unwrap();
    let _: Vec<u64> = a.query("SELECT id FROM t").unwrap();
    let st = a.prep("SELECT v FROM t WHERE id = ?").unwrap();
    let _: Option<u64> = a.exec_first(&st, (1,)).unwrap();
    let _: Option<u64> = a.exec_first(&st, (2,)).unwrap();
    assert_eq!(status(&mut a, "SHOW SESSION STATUS LIKE 'Com_insert'"), 3);
    assert_eq!(status(&mut a, "SHOW STATUS LIKE 'Com_insert_select'"), 1);
    assert_eq!(status(&mut a, "SHOW STATUS LIKE 'Com_update'"), 1);
    assert_eq!(status(&mut a, "SHOW STATUS LIKE 'Com_create_table'"), 1);
    assert_eq!(status(&mut a, "SHOW STATUS LIKE 'Com_stmt_prepare'"), 1);
    assert_eq!(status(&mut a, "SHOW STATUS LIKE 'Com_stmt_execute'"), 2);
    assert!(status(&mut a, "SHOW STATUS LIKE 'Bytes_received'") > 100);
    assert!(status(&mut a, "SHOW STATUS LIKE 'Bytes_sent'") > 100);
    let q1 = status(&mut a, "SHOW STATUS LIKE 'Questions'");
    let q2 = status(&mut a, "SHOW STATUS LIKE 'Questions'");
    assert_eq!(q2, q1 + 1, "each statement is a question");

    // A second connection's counts reach GLOBAL, and stay after it ends.
    let before = status(&mut a, "SHOW GLOBAL STATUS LIKE 'Com_select'");
    let mut b = srv.conn();
    // (The client library runs its own SELECTs at connect.)
    let b0 = status(&mut b, "SHOW STATUS LIKE 'Com_select'");
    for _ in 0..4 {
        let _: Vec<u64> = b.query("SELECT 1").unwrap();
    }
    assert_eq!(status(&mut b, "SHOW STATUS LIKE 'Com_select'"), b0 + 4);
    drop(b);
    // The connection's thread ends its session soon after the client goes.
    let mut after = 0;
    for _ in 0..200 {
        after = status(&mut a, "SHOW GLOBAL STATUS LIKE 'Com_select'");
        if status(&mut a, "SHOW GLOBAL STATUS LIKE 'Threads_connected'") == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(after, before + b0 + 4);
    assert!(status(&mut a, "SHOW GLOBAL STATUS LIKE 'Connections'") >= 2);
    // b said COM_QUIT when it was dropped: not an aborted client.
    assert_eq!(status(&mut a, "SHOW GLOBAL STATUS LIKE 'Aborted_clients'"), 0);
    let rows: Vec<(String, String)> = a
        .query("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM INFORMATION_SCHEMA.GLOBAL_STATUS WHERE VARIABLE_NAME LIKE 'FRACTALDB_CHECKPOINT%'")
        .unwrap();
    assert!(rows.iter().any(|(n, _)| n == "FRACTALDB_CHECKPOINT_TAKEN"), "{rows:?}");
    for name in [
        "Uptime",
        "Threads_running",
        "Max_used_connections",
        "Fractaldb_CACHETABLE_MISS",
        "Fractaldb_LOGGER_WRITES_BYTES",
        "Fractaldb_LOCKTREE_WAIT_COUNT",
    ] {
        let r: Vec<(String, String)> = a.query(format!("SHOW GLOBAL STATUS LIKE '{name}'")).unwrap();
        assert_eq!(r.len(), 1, "{name}");
    }
    assert!(status(&mut a, "SHOW GLOBAL STATUS LIKE 'Fractaldb_LOGGER_WRITES_BYTES'") > 0);
    let e: Vec<(String, String, String)> = a.query("SHOW ENGINE FRACTALDB STATUS").unwrap();
    assert!(e.iter().any(|(t, n, _)| t == "FractalDB" && n == "cachetable_size_current"), "{e:?}");
}

#[test]
fn wait_timeout_closes_idle_connections_only() {
    let srv = TestServer::start();
    let mut setup = srv.conn();
    setup.query_drop("CREATE DATABASE w").unwrap();
    setup.query_drop("CREATE TABLE w.t (id INT PRIMARY KEY)").unwrap();

    let mut idle = srv.conn();
    idle.query_drop("SET wait_timeout = 1").unwrap();

    // A connection with the same limit runs a statement that waits for a
    // row lock longer than that: it is not cut.
    let mut holder = srv.conn();
    holder.query_drop("BEGIN").unwrap();
    holder.query_drop("INSERT INTO w.t VALUES (1)").unwrap();
    let mut busy = srv.conn();
    busy.query_drop("SET wait_timeout = 1, tokudb_lock_timeout = 60000").unwrap();
    let waiter = std::thread::spawn(move || {
        let r = busy.query_drop("INSERT INTO w.t VALUES (1)");
        (r.map_err(|e| e.to_string()), busy)
    });
    std::thread::sleep(Duration::from_millis(2500));
    holder.query_drop("ROLLBACK").unwrap();
    let (r, mut busy) = waiter.join().unwrap();
    r.expect("the long statement finished");
    let _: Vec<u64> = busy.query("SELECT id FROM w.t").unwrap();

    // The idle one was closed (silently, as MariaDB does).
    assert!(idle.query_drop("SELECT 1").is_err(), "the idle connection was closed");
    let log = srv.log();
    assert!(log.contains("idle (wait_timeout)"), "{log}");
}

#[test]
fn slow_query_log_in_mariadb_format() {
    let srv = TestServer::start();
    let path = srv.dir.path().join("slow.log");
    let mut a = srv.conn();
    a.query_drop(format!("SET GLOBAL slow_query_log_file = '{}'", path.display())).unwrap();
    a.query_drop("SET GLOBAL slow_query_log = ON").unwrap();
    // long_query_time is per session, copied at connect: a new session.
    a.query_drop("SET GLOBAL long_query_time = 0").unwrap();
    let mut b = srv.conn();
    b.query_drop("CREATE DATABASE sl").unwrap();
    b.query_drop("USE sl").unwrap();
    b.query_drop("CREATE TABLE t (id INT PRIMARY KEY)").unwrap();
    b.query_drop("INSERT INTO t VALUES (1), (2), (3)").unwrap();
    let _: Vec<u64> = b.query("SELECT id FROM t WHERE id > 1").unwrap();
    let id: u64 = b.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
    assert!(status(&mut b, "SHOW STATUS LIKE 'Slow_queries'") >= 5);
    let text = std::fs::read_to_string(&path).unwrap();
    let entry = text
        .split("# User@Host:")
        .find(|e| e.contains("SELECT id FROM t WHERE id > 1"))
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = entry.lines().collect();
    assert_eq!(lines[0], " root[root] @  [127.0.0.1]");
    assert_eq!(lines[1], format!("# Thread_id: {id}  Schema: sl  QC_hit: No"));
    assert!(
        lines[2].starts_with("# Query_time: ")
            && lines[2].contains("  Lock_time: 0.000000  Rows_sent: 2  Rows_examined: "),
        "{}",
        lines[2]
    );
    assert!(lines[3].starts_with("# Rows_affected: 0  Bytes_sent: "), "{}", lines[3]);
    assert!(lines[4].starts_with("SET timestamp="), "{}", lines[4]);
    assert_eq!(lines[5], "SELECT id FROM t WHERE id > 1;");
    assert!(text.contains("use `sl`;\nSET timestamp="), "{text}");
    assert!(text.contains("# Time: "));
    // The first session kept long_query_time 10: its statements are not logged.
    let _: Vec<u64> = a.query("SELECT 12345").unwrap();
    assert!(!std::fs::read_to_string(&path).unwrap().contains("SELECT 12345"));
}

#[test]
fn shutdown_is_refused_without_the_privilege_hook_for_others() {
    // Only root exists until accounts are built: root may shut down; the
    // server reports it to its owner (the CLI test checks the exit).
    let srv = TestServer::start();
    let mut a = srv.conn();
    a.query_drop("SHUTDOWN").unwrap();
    assert!(srv.log().contains("shutdown requested by connection"), "{}", srv.log());
}

#[test]
fn processlist_shows_progress_of_another_statement() {
    let srv = TestServer::start();
    let mut a = srv.conn();
    a.query_drop("CREATE DATABASE p").unwrap();
    a.query_drop("USE p").unwrap();
    a.query_drop("CREATE TABLE src (id INT PRIMARY KEY)").unwrap();
    a.query_drop("CREATE TABLE dst (id INT PRIMARY KEY)").unwrap();
    let values: Vec<String> = (1..=300).map(|i| format!("({i})")).collect();
    a.query_drop(format!("INSERT INTO src VALUES {}", values.join(","))).unwrap();
    // Another transaction holds key 300 of dst: the copy inserts 1..299,
    // then waits there, so its progress is exactly 299 rows.
    let mut holder = srv.conn();
    holder.query_drop("BEGIN").unwrap();
    holder.query_drop("INSERT INTO p.dst VALUES (300)").unwrap();
    a.query_drop("SET tokudb_lock_timeout = 60000").unwrap();
    let long = format!("INSERT INTO dst SELECT id FROM src /* {} */ ORDER BY id", "x".repeat(120));
    let a_id: u64 = a.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
    let q = long.clone();
    let runner = std::thread::spawn(move || a.query_drop(q).map_err(|e| e.to_string()));
    let mut b = srv.conn();
    let mut seen = None;
    for _ in 0..1000 {
        let rows: Vec<(u64, String, String, Option<String>)> =
            b.query("SELECT ID, COMMAND, STATE, INFO FROM INFORMATION_SCHEMA.PROCESSLIST").unwrap();
        if let Some(r) = rows.into_iter().find(|r| r.0 == a_id && r.2 == "Inserted about 299 rows") {
            seen = Some(r);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, command, _, info) = seen.expect("the INSERT ... SELECT's progress in PROCESSLIST");
    assert_eq!(command, "Query");
    assert_eq!(info.as_deref(), Some(long.as_str()));
    // SHOW PROCESSLIST: the same State; Info cut at 100 characters without FULL.
    let rows: Vec<mysql::Row> = b.query("SHOW PROCESSLIST").unwrap();
    let row = rows.iter().find(|r| r.get::<u64, _>(0) == Some(a_id)).unwrap();
    assert_eq!(row.get::<String, _>(6).unwrap(), "Inserted about 299 rows");
    assert_eq!(row.get::<String, _>(7).unwrap(), long.chars().take(100).collect::<String>());
    let rows: Vec<mysql::Row> = b.query("SHOW FULL PROCESSLIST").unwrap();
    let row = rows.iter().find(|r| r.get::<u64, _>(0) == Some(a_id)).unwrap();
    assert_eq!(row.get::<String, _>(7).unwrap(), long);
    holder.query_drop("ROLLBACK").unwrap();
    runner.join().unwrap().expect("the copy finished");
    let n: u64 = b.query_first("SELECT COUNT(*) FROM p.dst").unwrap().unwrap();
    assert_eq!(n, 300);
}

#[test]
fn interactive_client_gets_interactive_timeout() {
    let Some(py) = support::need_pymysql("interactive_client_gets_interactive_timeout") else { return };
    let srv = TestServer::start_with(|o| {
        o.db.variables.push(("interactive_timeout".into(), "4321".into()));
        o.db.variables.push(("wait_timeout".into(), "1234".into()));
    });
    // PyMySQL with CLIENT_INTERACTIVE (1024) in its handshake, and without.
    let script = format!(
        "import pymysql\n\
         for flag in (1024, 0):\n\
         \x20   c = pymysql.connect(host='127.0.0.1', port={}, user='root', client_flag=flag)\n\
         \x20   cur = c.cursor()\n\
         \x20   cur.execute('SELECT @@wait_timeout')\n\
         \x20   print(cur.fetchone()[0])\n\
         \x20   c.close()\n",
        srv.port
    );
    let out = std::process::Command::new(py).args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4321\n1234\n");
}
