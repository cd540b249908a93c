//! Hot backup through the server (`SET tokudb_backup_dir`): taken while
//! several connections commit, the copy starts as a server holding exactly
//! the transactions acknowledged before the backup's moment (every one
//! acknowledged before the statement was sent, none that was not committed
//! when it returned), with the same accounts and keys; a killed backup
//! leaves a folder the server refuses to start on.

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mysql::prelude::*;
use support::TestServer;

fn set_dir(dest: &std::path::Path) -> String {
    format!("SET tokudb_backup_dir = '{}'", dest.display())
}

#[test]
fn a_backup_under_load_restores_exactly_the_acknowledged_commits() {
    let s = TestServer::start_with(|o| o.db.commit_sync = true);
    let mut root = s.conn();
    root.query_drop("CREATE DATABASE d").unwrap();
    root.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, w INT, KEY (w))").unwrap();
    root.query_drop("CREATE USER bk@'%' IDENTIFIED BY 'pw'").unwrap();
    root.query_drop("GRANT SUPER ON *.* TO bk@'%'").unwrap();

    // Four writers, each committing transactions of two rows (2k, 2k+1).
    // `acked`: transactions whose COMMIT returned OK; `begun`: those whose
    // COMMIT was sent (a superset: the one in flight may or may not count).
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let begun = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (acked, begun, stop) = (acked.clone(), begun.clone(), stop.clone());
            let mut c = s.conn();
            std::thread::spawn(move || {
                let mut k = w;
                while !stop.load(Ordering::Relaxed) {
                    c.query_drop("BEGIN").unwrap();
                    c.query_drop(format!("INSERT INTO d.t VALUES ({}, {w}), ({}, {w})", 2 * k, 2 * k + 1))
                        .unwrap();
                    begun.lock().unwrap().insert(k);
                    c.query_drop("COMMIT").unwrap();
                    acked.lock().unwrap().insert(k);
                    k += 4;
                }
            })
        })
        .collect();
    while acked.lock().unwrap().len() < 200 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("copy");
    std::fs::create_dir(&dest).unwrap();
    let mut bk = mysql::Conn::new(s.opts().user(Some("bk")).pass(Some("pw"))).unwrap();
    let before = acked.lock().unwrap().clone();
    bk.query_drop(set_dir(&dest)).unwrap();
    let after = begun.lock().unwrap().clone();
    let last_error: u32 = bk.query_first("SELECT @@tokudb_backup_last_error").unwrap().unwrap();
    assert_eq!(last_error, 0);

    // A second one, slowed down, shows its progress and is killed: the
    // folder it leaves is refused.
    let killed_dest = out.path().join("killed");
    std::fs::create_dir(&killed_dest).unwrap();
    let mut slow = s.conn();
    let slow_id: u64 = slow.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
    slow.query_drop("SET tokudb_backup_throttle = 65536").unwrap();
    let slow_run = {
        let q = set_dir(&killed_dest);
        std::thread::spawn(move || slow.query_drop(q))
    };
    let state = loop {
        let st: Option<Option<String>> = root
            .exec_first("SELECT STATE FROM INFORMATION_SCHEMA.PROCESSLIST WHERE ID = ?", (slow_id,))
            .unwrap();
        match st.flatten() {
            Some(st) if st.starts_with("tokudb backup about") => break st,
            _ => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    };
    assert!(state.contains("bytes copied"), "{state}");
    root.query_drop(format!("KILL QUERY {slow_id}")).unwrap();
    match slow_run.join().unwrap() {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("the killed backup returned {other:?}"),
    }

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let src_dir = s.dir.path().to_path_buf();
    let cert = std::fs::read(src_dir.join("server-cert.pem")).unwrap();
    drop((root, bk));
    s.stop();

    let refused = fractaldb_server::Server::start({
        let mut o = fractaldb_server::ServerOptions::new(&killed_dest);
        o.port = 0;
        o.log_stderr = false;
        o
    });
    let e = refused.err().expect("a server started on a killed backup");
    assert!(e.contains("BACKUP-INCOMPLETE"), "{e}");

    let copy = TestServer::start_with(|o| {
        o.datadir = dest.clone();
        o.secure_file_priv = None;
    });
    // The accounts came along: bk logs in with its password.
    mysql::Conn::new(copy.opts().user(Some("bk")).pass(Some("pw"))).unwrap();
    let mut c = copy.conn();
    let ids: Vec<u64> = c.query("SELECT id FROM d.t ORDER BY id").unwrap();
    let count: u64 = c.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    assert_eq!(count, ids.len() as u64);
    let by_w: u64 = c.query_first("SELECT COUNT(*) FROM d.t FORCE INDEX (w) WHERE w >= 0").unwrap().unwrap();
    assert_eq!(by_w, count);
    // Whole transactions only: both rows of each.
    let txns: BTreeSet<u64> = ids.iter().map(|id| id / 2).collect();
    assert_eq!(ids.len(), 2 * txns.len());
    assert!(
        before.is_subset(&txns),
        "{} acknowledged before, missing from the copy",
        before.difference(&txns).count()
    );
    assert!(txns.is_subset(&after), "the copy holds transactions never committed");
    assert_eq!(std::fs::read(dest.join("server-cert.pem")).unwrap(), cert);
}
