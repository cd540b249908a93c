//! Table maintenance: OPTIMIZE TABLE (rows kept, progress, KILL, a crash
//! in the middle), ANALYZE TABLE's statistics, TRUNCATE's space given back
//! at once and a crash in the middle of it, and the TokuDB
//! INFORMATION_SCHEMA views of the engine.

use fractaldb_sql::{Database, Session};

mod support;
use support::crash::{last_number, CrashChild};
use support::embedded::{kill_while_running, ok, one, rows, test_opts as opts};

/// Table `d.t` with a secondary index, `n` rows inserted, every other one
/// deleted and every third updated: messages wait in buffers at every level.
fn churned(s: &mut Session, n: usize) {
    ok(s, "CREATE DATABASE d");
    ok(s, "USE d");
    ok(s, "CREATE TABLE t (id INT PRIMARY KEY, v INT, w VARCHAR(20), KEY kv (v))");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let values: Vec<String> = chunk.iter().map(|i| format!("({i}, {}, 'w{i}')", i * 3)).collect();
        ok(s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    }
    ok(s, "DELETE FROM t WHERE id % 2 = 0");
    ok(s, "UPDATE t SET v = v + 1 WHERE id % 3 = 0");
}

fn status(table: &str, op: &str, kind: &str, msg: &str) -> Vec<String> {
    vec![table.into(), op.into(), kind.into(), msg.into()]
}

/// OPTIMIZE answers MariaDB's rows (a missing table gets its Error row and
/// the statement goes on), changes no row, says how far it is in the
/// session's progress ("Optimization of index 1 of 2 about 40% done") and
/// stops with 1317 once killed.
#[test]
fn optimize_keeps_every_row_reports_progress_and_is_killable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    churned(&mut s, 6000);
    let before = rows(&mut s, "SELECT * FROM t ORDER BY id");
    let h = s.progress_handle();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (h2, stop2) = (h.clone(), stop.clone());
    let watcher = std::thread::spawn(move || {
        let mut seen = std::collections::BTreeSet::new();
        while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(st) = h2.state() {
                seen.insert(st);
            }
            std::thread::yield_now();
        }
        seen
    });
    assert_eq!(
        rows(&mut s, "OPTIMIZE TABLE t, nosuch"),
        [
            status("d.t", "optimize", "status", "OK"),
            status("d.nosuch", "optimize", "Error", "Table 'd.nosuch' doesn't exist"),
            status("d.nosuch", "optimize", "status", "Operation failed"),
        ]
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let seen = watcher.join().unwrap();
    assert!(
        seen.iter().any(|st| st.starts_with("Optimization of index ") && st.ends_with("% done")),
        "{seen:?}"
    );
    for st in seen.iter().filter(|st| st.starts_with("Optimization")) {
        let words: Vec<&str> = st.split(' ').collect();
        assert!(["1", "2"].contains(&words[3]) && words[5] == "2", "{st}");
    }
    assert_eq!(h.state(), None);
    assert_eq!(rows(&mut s, "SELECT * FROM t ORDER BY id"), before);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "3000");
    assert_eq!(rows(&mut s, "SELECT id FROM t WHERE v = 10"), [["3"]]);
    assert_eq!(rows(&mut s, "CHECK TABLE t"), [status("d.t", "check", "status", "OK")]);
    // SHOW TABLE STATUS: exact rows, the main dictionary's and the index's
    // bytes; deleting most rows then optimizing gives space back.
    let status_row = |s: &mut Session| -> Vec<u64> {
        let r = rows(s, "SHOW TABLE STATUS LIKE 't'").remove(0);
        [4, 5, 6, 8, 9].iter().map(|&i| r[i].parse().unwrap()).collect()
    };
    let full = status_row(&mut s);
    assert_eq!((full[0], full[1]), (3000, full[2] / 3000));
    assert!(full[2] > 0 && full[3] > 0, "{full:?}");
    ok(&mut s, "DELETE FROM t WHERE id > 100");
    ok(&mut s, "OPTIMIZE TABLE t");
    let emptied = status_row(&mut s);
    assert_eq!(emptied[0], 50);
    assert!(emptied[2] < full[2] && emptied[3] < full[3], "{full:?} -> {emptied:?}");
    // Data_free is the blocks the files hold that no node uses: what the
    // delete freed shows there, and data, index and free together are
    // no more than the main and index files' lengths.
    assert!(emptied[4] > full[4], "{full:?} -> {emptied:?}");
    let file_bytes: u64 =
        table_files(&mut s, dir.path()).iter().map(|f| std::fs::metadata(f).unwrap().len()).sum::<u64>()
            - status_file_bytes(&mut s, dir.path());
    assert!(emptied[2] + emptied[3] + emptied[4] <= file_bytes, "{emptied:?} in {file_bytes} bytes");
    // A KILL that arrives between statements is not kept for the next
    // one (MariaDB resets it likewise).
    s.kill_handle().kill();
    assert_eq!(rows(&mut s, "OPTIMIZE TABLE t"), [status("d.t", "optimize", "status", "OK")]);
    // Killed while it runs (as soon as it reports progress): 1317, no row
    // changed, and the session goes on. An OPTIMIZE can end before the
    // kill lands, so it is tried again until one is interrupted.
    let (back, interrupted) = kill_while_running(s, "OPTIMIZE TABLE t", |st| st.starts_with("Optimization"));
    s = back;
    assert!(interrupted, "no OPTIMIZE was interrupted by KILL");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "50");
    assert_eq!(rows(&mut s, "CHECK TABLE t"), [status("d.t", "check", "status", "OK")]);
    assert_eq!(
        rows(&mut s, "REPAIR TABLE t"),
        [status("d.t", "repair", "note", "The storage engine for the table doesn't support repair")]
    );
}

/// ANALYZE counts each index prefix's distinct values; SHOW INDEX and
/// STATISTICS show the cardinality MariaDB derives from them, before
/// which they show the row count, and the statistics outlive a restart.
#[test]
fn analyze_counts_distinct_prefixes_and_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let cards = |s: &mut Session| -> Vec<String> {
        rows(s, "SHOW INDEX FROM t").into_iter().map(|r| r[6].clone()).collect()
    };
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, b INT, c INT, KEY bc (b, c))");
        let values: Vec<String> = (1..=20).map(|i| format!("({i}, {}, {})", i % 3, i % 7)).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
        assert_eq!(cards(&mut s), ["20", "20", "20"]);
        assert_eq!(rows(&mut s, "ANALYZE TABLE t"), [status("d.t", "analyze", "status", "OK")]);
        // 20 rows / (20 entries / 3 values = 6.6667) = 2.9999: 2, as MariaDB.
        assert_eq!(cards(&mut s), ["20", "2", "20"]);
        drop(s);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    assert_eq!(cards(&mut s), ["20", "2", "20"]);
    assert_eq!(
        rows(&mut s, "SELECT CARDINALITY FROM information_schema.STATISTICS WHERE TABLE_NAME = 't' ORDER BY INDEX_NAME = 'bc', SEQ_IN_INDEX"),
        [["20"], ["2"], ["20"]]
    );
}

/// The files of a table's dictionaries: TOKUDB_FILE_MAP's names, found in
/// the database folder.
fn table_files(s: &mut Session, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let names: Vec<String> = rows(
        s,
        "SELECT internal_file_name FROM information_schema.TOKUDB_FILE_MAP WHERE table_schema = 'd' AND table_name = 't'",
    )
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if names.iter().any(|n| p.file_name().is_some_and(|f| f.to_string_lossy() == *n)) {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), names.len(), "{names:?} vs {found:?}");
    found
}

/// The length of d.t's status dictionary's file.
fn status_file_bytes(s: &mut Session, dir: &std::path::Path) -> u64 {
    let name = one(
        s,
        "SELECT internal_file_name FROM information_schema.TOKUDB_FILE_MAP \
         WHERE table_schema = 'd' AND table_name = 't' AND table_dictionary_name = 'status'",
    );
    let file =
        table_files(s, dir).into_iter().find(|f| f.file_name().unwrap().to_string_lossy() == name).unwrap();
    std::fs::metadata(file).unwrap().len()
}

/// TRUNCATE swaps in new dictionaries and removes the old files at once:
/// they are gone from the folder and no file descriptor of the process
/// keeps one alive (a deleted file still open keeps its blocks).
#[test]
fn truncate_gives_the_space_back_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    churned(&mut s, 3000);
    let mut other = db.session();
    ok(&mut other, "USE d");
    assert_eq!(one(&mut other, "SELECT COUNT(*) FROM t WHERE v > 0"), "1500");
    let old = table_files(&mut s, dir.path());
    assert_eq!(old.len(), 3, "main, status and one index");
    ok(&mut s, "TRUNCATE TABLE t");
    for f in &old {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    // A descriptor still open on an old file (a background thread may hold
    // the tree a moment longer) keeps no bytes of it.
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else { continue };
        let target = target.to_string_lossy().into_owned();
        if old.iter().any(|f| target.starts_with(&*f.to_string_lossy())) {
            let len = std::fs::metadata(e.path()).map_or(0, |m| m.len());
            assert_eq!(len, 0, "{target} still holds {len} bytes");
        }
    }
    assert_eq!(table_files(&mut s, dir.path()).len(), 3);
    assert_eq!(one(&mut other, "SELECT COUNT(*) FROM t"), "0");
    let info = rows(
        &mut s,
        "SELECT table_dictionary_name, bt_size_in_use > 0, bt_size_allocated >= bt_size_in_use, bt_num_blocks_allocated >= bt_num_blocks_in_use FROM information_schema.TOKUDB_FRACTAL_TREE_INFO WHERE table_schema = 'd' ORDER BY 1",
    );
    assert_eq!(info, [["key-kv", "1", "1", "1"], ["main", "1", "1", "1"], ["status", "1", "1", "1"]]);
}

/// TOKUDB_TRX, TOKUDB_LOCKS and TOKUDB_LOCK_WAITS show a transaction
/// holding a row lock and another waiting for it; an account without
/// PROCESS sees only its own connections' transactions.
#[test]
fn tokudb_views_show_transactions_locks_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut a = db.session();
    ok(&mut a, "CREATE DATABASE d");
    ok(&mut a, "USE d");
    ok(&mut a, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    ok(&mut a, "INSERT INTO t VALUES (1, 1), (2, 2)");
    ok(&mut a, "CREATE USER u@localhost");
    ok(&mut a, "GRANT SELECT ON d.* TO u@localhost");
    ok(&mut a, "BEGIN");
    ok(&mut a, "UPDATE t SET v = 10 WHERE id = 1");
    let a_id = a.connection_id();
    let mut c = db.session();
    let trx = rows(&mut c, &format!("SELECT trx_id, trx_time >= 0 FROM information_schema.TOKUDB_TRX WHERE trx_mysql_thread_id = {a_id}"));
    assert_eq!(trx.len(), 1, "{trx:?}");
    let a_trx = trx[0][0].clone();
    let locks = rows(
        &mut c,
        &format!("SELECT locks_dname, locks_key_left = locks_key_right, locks_table_schema, locks_table_name, locks_table_dictionary_name FROM information_schema.TOKUDB_LOCKS WHERE locks_trx_id = {a_trx} AND locks_mysql_thread_id = {a_id}"),
    );
    assert_eq!(locks, [["d/t/main", "1", "d", "t", "main"]]);
    // Another connection waits for the row.
    let mut b = db.session();
    ok(&mut b, "USE d");
    ok(&mut b, "SET innodb_lock_wait_timeout = 100");
    let b_id = b.connection_id();
    let waiter = std::thread::spawn(move || {
        ok(&mut b, "UPDATE t SET v = 20 WHERE id = 1");
        b
    });
    let q = format!("SELECT blocking_trx_id, lock_waits_dname, lock_waits_key_left = lock_waits_key_right, lock_waits_start_time > 0, lock_waits_table_name FROM information_schema.TOKUDB_LOCK_WAITS WHERE blocking_trx_id = {a_trx}");
    let mut waits = Vec::new();
    for _ in 0..3000 {
        waits = rows(&mut c, &q);
        if !waits.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(waits, [[a_trx.as_str(), "d/t/main", "1", "1", "t"]]);
    // Without PROCESS: only the account's own connections' transactions.
    let mut u = db.session();
    u.login("u", "localhost", "u", "localhost");
    u.set_client("u", "localhost");
    // (its own query's transaction is the one it sees)
    let u_id = u.connection_id().to_string();
    assert_eq!(rows(&mut u, "SELECT trx_mysql_thread_id FROM information_schema.TOKUDB_TRX"), [[u_id]]);
    assert_eq!(rows(&mut u, "SELECT COUNT(*) FROM information_schema.TOKUDB_LOCK_WAITS"), [["0"]]);
    assert_eq!(
        rows(&mut u, "SELECT table_dictionary_name FROM information_schema.TOKUDB_FILE_MAP ORDER BY 1"),
        [["main"], ["status"]]
    );
    let threads: Vec<String> =
        rows(&mut c, "SELECT trx_mysql_thread_id FROM information_schema.TOKUDB_TRX ORDER BY 1")
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
    assert!(threads.contains(&a_id.to_string()) && threads.contains(&b_id.to_string()), "{threads:?}");
    ok(&mut a, "COMMIT");
    let mut b = waiter.join().unwrap();
    assert_eq!(one(&mut b, "SELECT v FROM t WHERE id = 1"), "20");
    assert!(rows(&mut c, "SELECT * FROM information_schema.TOKUDB_LOCK_WAITS").is_empty());
    assert!(rows(&mut c, "SELECT * FROM information_schema.TOKUDB_LOCKS").is_empty());
}

/// A child process runs OPTIMIZE TABLE over and over while a second
/// session of it inserts rows, and is killed with SIGKILL: after reopening
/// every row is there (the first ones and each insert acknowledged), the
/// count is exact and the indexes agree with the rows.
#[test]
fn a_crash_during_optimize_keeps_every_row_and_exact_counts() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_OPTIMIZE_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut w = db.session();
        ok(&mut w, "USE d");
        let writer = std::thread::spawn(move || {
            for i in 0.. {
                let id = 100_000 + i * 10;
                let values: Vec<String> = (id..id + 10).map(|k| format!("({k}, {k}, 'x')")).collect();
                ok(&mut w, &format!("INSERT INTO t VALUES {}", values.join(",")));
                println!("wrote {}", i + 1);
            }
        });
        let mut s = db.session();
        ok(&mut s, "USE d");
        for i in 0.. {
            ok(&mut s, "OPTIMIZE TABLE t");
            println!("optimized {i}");
            if writer.is_finished() {
                break;
            }
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        churned(&mut s, 4000);
        drop(s);
        db.close().unwrap();
    }
    for round in 0..2u64 {
        let mut child = CrashChild::spawn(
            "a_crash_during_optimize_keeps_every_row_and_exact_counts",
            "FRACTALDB_SQL_OPTIMIZE_CHILD",
            dir.path(),
        );
        // Killed in the middle of a later OPTIMIZE, some time after the
        // first one finished.
        let optimized = child.wait_for(std::time::Duration::from_secs(600), |l| l.starts_with("optimized "));
        assert!(optimized, "the child finished no OPTIMIZE");
        std::thread::sleep(std::time::Duration::from_millis(150 + 250 * round));
        let wrote = last_number(&child.kill(), "wrote ").unwrap_or(0);
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "USE d");
        // The churned rows, exactly.
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id < 4000"), "2000");
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id < 4000 AND v = id * 3 + 1"), "667");
        // Every acknowledged insert of this round (earlier rounds' rows
        // share ids and are dropped below).
        let inserted: u64 = one(&mut s, "SELECT COUNT(*) FROM t WHERE id >= 100000").parse().unwrap();
        assert!(
            inserted >= wrote * 10 && inserted.is_multiple_of(10),
            "round {round}: {inserted} rows, {wrote} acknowledged"
        );
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), (2000 + inserted).to_string());
        let by_index: u64 =
            one(&mut s, "SELECT COUNT(*) FROM t FORCE INDEX (kv) WHERE v >= 0").parse().unwrap();
        assert_eq!(by_index, 2000 + inserted);
        assert_eq!(rows(&mut s, "CHECK TABLE t"), [status("d.t", "check", "status", "OK")]);
        ok(&mut s, "DELETE FROM t WHERE id >= 100000");
        drop(s);
        db.close().unwrap();
    }
}

/// The dictionary files (`d<id>.fdb`) in the folder that no table's
/// dictionary is: the SQL layer's own.
fn unnamed_dictionary_files(s: &mut Session, dir: &std::path::Path) -> Vec<String> {
    let named: Vec<String> = rows(s, "SELECT internal_file_name FROM information_schema.TOKUDB_FILE_MAP")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let (mut out, mut stack) = (Vec::new(), vec![dir.to_path_buf()]);
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                stack.push(e.path());
            } else if n.starts_with('d') && n.ends_with(".fdb") && !named.contains(&n) {
                out.push(n);
            }
        }
    }
    out.sort();
    out
}

/// A child process fills table t and truncates it over and over, writing
/// a row to u after each TRUNCATE, and is killed: after reopening t holds
/// nothing or whole batches of the round after u's last (a TRUNCATE is all
/// or nothing), counts exactly and its index agrees with its rows, every
/// acknowledged row of u is there, and no dictionary file is left that no
/// table names (old or new files of a TRUNCATE cut short are dropped at
/// open).
#[test]
fn a_crash_during_truncate_keeps_one_table_and_no_stray_files() {
    if let Ok(dir) = std::env::var("FRACTALDB_SQL_TRUNCATE_CHILD") {
        let db = Database::open(&dir, opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "USE d");
        let start: u64 = one(&mut s, "SELECT COALESCE(MAX(r), 0) FROM u").parse().unwrap();
        // The rows the killed child left (its last round's).
        ok(&mut s, "TRUNCATE TABLE t");
        for r in start + 1.. {
            for b in 0..2 {
                let values: Vec<String> =
                    (0..100).map(|i| format!("({}, {r}, 'r{r}')", b * 100 + i)).collect();
                ok(&mut s, &format!("INSERT INTO t VALUES {}", values.join(",")));
            }
            ok(&mut s, "TRUNCATE TABLE t");
            ok(&mut s, &format!("INSERT INTO u VALUES ({r})"));
            println!("round {r}");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let own = {
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d");
        ok(&mut s, "USE d");
        ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, r INT, w VARCHAR(20), KEY kr (r))");
        ok(&mut s, "CREATE TABLE u (r INT PRIMARY KEY)");
        let own = unnamed_dictionary_files(&mut s, dir.path());
        drop(s);
        db.close().unwrap();
        own
    };
    let mut acked = 0;
    for round in 0..3u64 {
        let mut child = CrashChild::spawn(
            "a_crash_during_truncate_keeps_one_table_and_no_stray_files",
            "FRACTALDB_SQL_TRUNCATE_CHILD",
            dir.path(),
        );
        let target = format!("round {}", acked + 5);
        assert!(
            child.wait_for(std::time::Duration::from_secs(600), |l| l == target),
            "the child stopped early"
        );
        // Killed at a different point of a later round each time.
        std::thread::sleep(std::time::Duration::from_millis(7 + 31 * round));
        acked = last_number(&child.kill(), "round ").unwrap();
        let db = Database::open(dir.path(), opts()).unwrap();
        let mut s = db.session();
        ok(&mut s, "USE d");
        let last: u64 = one(&mut s, "SELECT MAX(r) FROM u").parse().unwrap();
        assert!(last == acked || last == acked + 1, "u ends at {last}, {acked} acknowledged");
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM u"), last.to_string());
        acked = last;
        let n: u64 = one(&mut s, "SELECT COUNT(*) FROM t").parse().unwrap();
        assert!(n.is_multiple_of(100) && n <= 200, "t has {n} rows");
        if n > 0 {
            assert_eq!(rows(&mut s, "SELECT DISTINCT r FROM t"), [[(last + 1).to_string()]]);
        }
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t FORCE INDEX (kr) WHERE r >= 0"), n.to_string());
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE w LIKE 'r%'"), n.to_string());
        assert_eq!(rows(&mut s, "CHECK TABLE t"), [status("d.t", "check", "status", "OK")]);
        assert_eq!(table_files(&mut s, dir.path()).len(), 3);
        assert_eq!(unnamed_dictionary_files(&mut s, dir.path()), own, "round {round}");
        drop(s);
        db.close().unwrap();
    }
}
