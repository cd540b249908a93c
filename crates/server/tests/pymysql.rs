//! PyMySQL (pure-Python driver) smoke test: tests/pymysql_smoke.py against
//! the server. Skipped without python3 + PyMySQL, except under CI=true.

mod support;

use std::process::Command;

use support::{need_pymysql, tests_dir, TestServer};

#[test]
fn pymysql_smoke() {
    let Some(py) = need_pymysql("pymysql_smoke") else { return };
    let s = TestServer::start();
    let o = Command::new(py)
        .arg(tests_dir().join("pymysql_smoke.py"))
        .arg(s.port.to_string())
        .output()
        .expect("running python3");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.contains("OK"),
        "stdout: {out}\nstderr: {err}\nserver log:\n{}",
        s.log()
    );
}
