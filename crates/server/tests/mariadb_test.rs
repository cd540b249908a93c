//! MariaDB's own test cases (Debian's `mariadb-test` package:
//! /usr/share/mysql/mysql-test/main/*.test with their .result files), run by
//! the `mariadb-test` binary against a fractaldb server. The files listed in
//! tests/mariadb_test/pass.txt must pass; tests/mariadb_test/skip.txt lists
//! every other file of main/ with the reason it does not (pass.txt and
//! skip.txt together name every file, so a new package version's files are
//! noticed). Skipped without mariadb-test, except under CI=true.
//!
//! mariadb-test writes NAME.reject beside the result file it is given, so
//! the suite is seen through a temp folder of symlinks (the package's files
//! are never written).

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use mysql::prelude::Queryable;
use support::{need_program, tests_dir, TestServer};

const SUITE: &str = "/usr/share/mysql/mysql-test";

/// The first field of each line that is not a comment.
fn names(file: &str) -> Vec<String> {
    std::fs::read_to_string(tests_dir().join("mariadb_test").join(file))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('|').next().unwrap().trim().to_string())
        .collect()
}

/// `dir` mirrors the suite by symlinks, main/ file by file.
fn mirror(dir: &Path) {
    for e in std::fs::read_dir(SUITE).unwrap().flatten() {
        if e.file_name() != "main" {
            std::os::unix::fs::symlink(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    let main = dir.join("main");
    std::fs::create_dir(&main).unwrap();
    for e in std::fs::read_dir(Path::new(SUITE).join("main")).unwrap().flatten() {
        std::os::unix::fs::symlink(e.path(), main.join(e.file_name())).unwrap();
    }
    std::fs::create_dir(dir.join("tmp")).unwrap();
    std::fs::create_dir(dir.join("log")).unwrap();
}

#[test]
fn mariadb_test_suite() {
    let Some(bin) = need_program("mariadb_test_suite", "mariadb-test", "apt-get install mariadb-test") else {
        return;
    };
    assert!(
        Path::new(SUITE).join("main").is_dir(),
        "{SUITE}/main is missing: Debian's mariadb-test package installs it with mariadb-test"
    );
    let pass = names("pass.txt");
    let skip = names("skip.txt");
    // The lists stay whole and apart: each file of main/ in exactly one.
    let pass_set: BTreeSet<&String> = pass.iter().collect();
    let skip_set: BTreeSet<&String> = skip.iter().collect();
    assert_eq!(pass_set.len(), pass.len(), "a file twice in pass.txt");
    assert_eq!(skip_set.len(), skip.len(), "a file twice in skip.txt");
    assert!(pass_set.is_disjoint(&skip_set), "a file in both pass.txt and skip.txt");
    let all: BTreeSet<String> = std::fs::read_dir(Path::new(SUITE).join("main"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".test").map(String::from))
        .collect();
    let unlisted: Vec<&String> =
        all.iter().filter(|n| !pass_set.contains(n) && !skip_set.contains(n)).collect();
    assert!(unlisted.is_empty(), "files of main/ in neither list: {unlisted:?}");

    let dir = tempfile::tempdir().unwrap();
    mirror(dir.path());
    let s = TestServer::start();
    let mut c = s.conn();
    let mut failed = Vec::new();
    for name in &pass {
        // Each file starts from an empty `test` database, as under
        // mariadb-test-run.
        c.query_drop("DROP DATABASE IF EXISTS test").unwrap();
        c.query_drop("CREATE DATABASE test").unwrap();
        // `timeout` is a watchdog for a hung server, not a timing check.
        let o = Command::new("timeout")
            .arg("300")
            .arg(&bin)
            .args(["--host=127.0.0.1", "--user=root", "--database=test", "--silent"])
            .arg(format!("--port={}", s.port))
            .arg(format!("--socket={}", s.socket.display()))
            .arg(format!("--basedir={}/", dir.path().display()))
            .arg(format!("--tmpdir={}", dir.path().join("tmp").display()))
            .arg(format!("--logdir={}", dir.path().join("log").display()))
            .arg(format!("--test-file=main/{name}.test"))
            .arg(format!("--result-file=main/{name}.result"))
            .current_dir(dir.path())
            .output()
            .expect("running mariadb-test");
        if !o.status.success() {
            failed.push(format!(
                "{name}: {}\n{}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    eprintln!(
        "mariadb_test_suite: {} of {} files pass ({} listed in skip.txt)",
        pass.len() - failed.len(),
        pass.len() + skip.len(),
        skip.len()
    );
    assert!(
        failed.is_empty(),
        "files of pass.txt that failed:\n{}\nserver log:\n{}",
        failed.join("\n"),
        s.log()
    );
}

/// What the suite's include files ask before anything else, through the
/// server (no mariadb-test needed): the server's own variables in
/// @@ and in INFORMATION_SCHEMA.SYSTEM_VARIABLES, the plugins, FLUSH STATUS.
#[test]
fn include_file_prerequisites() {
    let s = TestServer::start();
    let mut c = s.conn();
    let datadir: String = c.query_first("SELECT @@datadir").unwrap().unwrap();
    assert_eq!(datadir, format!("{}/", s.dir.path().display()));
    let row: (String, Option<String>, String, String) = c
        .query_first(
            "SELECT GLOBAL_VALUE, SESSION_VALUE, VARIABLE_SCOPE, READ_ONLY \
             FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = 'datadir'",
        )
        .unwrap()
        .unwrap();
    assert_eq!(row, (datadir, None, "GLOBAL".into(), "YES".into()));
    let port: String = c
        .query_first(
            "SELECT GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = 'PORT'",
        )
        .unwrap()
        .unwrap();
    assert_eq!(port, s.port.to_string());
    let n: i64 = c
        .query_first(
            "SELECT COUNT(*) FROM information_schema.system_variables \
             WHERE variable_name = 'have_sanitizer' AND global_value LIKE 'MSAN%'",
        )
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
    // Only what the server has: no partitioning, no Aria.
    let plugins: Vec<(String, String)> = c
        .query("SELECT PLUGIN_NAME, PLUGIN_TYPE FROM information_schema.PLUGINS ORDER BY PLUGIN_NAME")
        .unwrap();
    assert_eq!(
        plugins,
        [
            ("caching_sha2_password".to_string(), "AUTHENTICATION".to_string()),
            ("FractalDB".to_string(), "STORAGE ENGINE".to_string()),
            ("mysql_native_password".to_string(), "AUTHENTICATION".to_string()),
        ]
    );
    let (log_bin, dl, cc): (i64, String, String) = c
        .query_first("SELECT @@log_bin, @@have_dynamic_loading, @@global.concurrent_insert")
        .unwrap()
        .unwrap();
    assert_eq!((log_bin, dl.as_str(), cc.as_str()), (0, "NO", "AUTO"));
    // FLUSH STATUS: this session's counters start again; GLOBAL keeps them.
    let com_select = |c: &mut mysql::Conn, scope: &str| -> u64 {
        let (_, v): (String, String) =
            c.query_first(format!("SHOW {scope} STATUS LIKE 'Com_select'")).unwrap().unwrap();
        v.parse().unwrap()
    };
    c.query_drop("SELECT 1").unwrap();
    c.query_drop("SELECT 2").unwrap();
    assert!(com_select(&mut c, "SESSION") >= 2);
    let global = com_select(&mut c, "GLOBAL");
    c.query_drop("FLUSH STATUS").unwrap();
    assert_eq!(com_select(&mut c, "SESSION"), 0);
    assert_eq!(com_select(&mut c, "GLOBAL"), global);
    let e = c.query_drop("FLUSH STATUS now").unwrap_err();
    assert!(matches!(e, mysql::Error::MySqlError(ref m) if m.code == 1064), "{e}");
}
