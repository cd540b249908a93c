//! PyMySQL's own test suite (pymysql/tests of the PyMySQL 0.10.1 sdist from
//! PyPI: later sdists ship no tests) against the server, run by pytest,
//! compared with tests/pymysql_expected.txt: the test fails when a test
//! outside that list fails or errors, and when a listed test passes.
//!
//! `.ci/run` downloads and unpacks the sdist under target/pymysql-suite/
//! and installs pytest; the suite is copied from there into a temp folder
//! per run (its databases.json points at this test's server). Skipped when
//! the sdist or pytest is missing, except under CI=true.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mysql::prelude::Queryable;
use support::{need_program, tests_dir, TestServer};

/// The sdist's version: the last one on PyPI whose sdist has its tests.
const VERSION: &str = "0.10.1";

fn required() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

fn skip_or_fail(why: &str) {
    if required() {
        panic!("pymysql_suite: {why}, and CI=true requires it (.ci/run installs it)");
    }
    eprintln!("pymysql_suite: SKIPPED: {why} (.ci/run installs it; under CI=true this fails)");
}

/// The unpacked sdist: $FRACTALDB_PYMYSQL_SUITE, or target/pymysql-suite/.
fn suite_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FRACTALDB_PYMYSQL_SUITE") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/pymysql-suite")
        .join(format!("PyMySQL-{VERSION}"))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// The expected failures: node id -> reason.
fn expected() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(tests_dir().join("pymysql_expected.txt")).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (id, why) = line.split_once('|').unwrap_or_else(|| panic!("no '|' in {line:?}"));
        let (id, why) = (id.trim().to_string(), why.trim().to_string());
        assert!(!why.is_empty(), "{id}: a listed failure needs its reason");
        assert!(m.insert(id.clone(), why).is_none(), "{id} listed twice");
    }
    m
}

#[test]
fn pymysql_suite() {
    let Some(py) = need_program("pymysql_suite", "python3", "apt-get install python3") else { return };
    let src = suite_dir();
    if !src.join("pymysql/tests/base.py").is_file() {
        return skip_or_fail(&format!("PyMySQL {VERSION}'s sdist not unpacked at {}", src.display()));
    }
    let has_pytest = Command::new(&py)
        .args(["-m", "pytest", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_pytest {
        return skip_or_fail("pytest not installed");
    }
    let s = TestServer::start();
    let mut c = s.conn();
    for db in ["test1", "test2"] {
        c.query_drop(format!("CREATE DATABASE {db} DEFAULT CHARACTER SET utf8mb4")).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("suite");
    copy_tree(&src, &root);
    std::fs::write(
        root.join("pymysql/tests/databases.json"),
        format!(
            r#"[{{"host":"127.0.0.1","port":{p},"user":"root","passwd":"","db":"test1","use_unicode":true,"local_infile":true}},
{{"host":"127.0.0.1","port":{p},"user":"root","passwd":"","db":"test2"}}]"#,
            p = s.port
        ),
    )
    .unwrap();
    // `timeout` is a watchdog for a hung server (the suite takes ~20 s),
    // not a timing assertion. PYTHONPATH makes the sdist's own pymysql the
    // one under test, whatever PyMySQL is installed.
    let o = Command::new("timeout")
        .arg("600")
        .arg(&py)
        .args(["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "pymysql/tests"])
        .current_dir(&root)
        .env("PYTHONPATH", &root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("running pytest");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    // pytest: 0 all passed, 1 some failed; anything else (interrupted,
    // usage error, collection failure, the watchdog's 124) is a broken run.
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "pytest exited {:?}\nstdout: {out}\nstderr: {err}\nserver log:\n{}",
        o.status,
        s.log()
    );
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for line in out.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("PASSED"), Some(id)) => passed.push(id.to_string()),
            (Some("FAILED" | "ERROR"), Some(id)) => failed.push(id.to_string()),
            _ => {}
        }
    }
    assert!(passed.len() > 100, "pytest ran too few tests\n{out}\n{err}");
    let exp = expected();
    let unexpected: Vec<&String> = failed.iter().filter(|id| !exp.contains_key(*id)).collect();
    let now_pass: Vec<&String> = passed.iter().filter(|id| exp.contains_key(*id)).collect();
    let missing: Vec<&String> =
        exp.keys().filter(|id| !failed.contains(id) && !passed.contains(id)).collect();
    eprintln!(
        "pymysql_suite: {} passed, {} failed (all listed: {})",
        passed.len(),
        failed.len(),
        unexpected.is_empty()
    );
    assert!(
        unexpected.is_empty() && now_pass.is_empty() && missing.is_empty(),
        "failing but not in pymysql_expected.txt: {unexpected:#?}\n\
         listed but passing (remove them from the list): {now_pass:#?}\n\
         listed but not run: {missing:#?}\n\npytest output:\n{out}\n{err}"
    );
}
