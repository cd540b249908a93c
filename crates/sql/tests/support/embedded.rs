//! What the tests that drive embedded sessions share: a session's options
//! for a test folder, and one-line ways to run a statement and take its
//! rows, its first value, its affected count or its error number.

use fractaldb_sql::{DbOptions, Outcome, Session};

/// Options for a database in a test's temporary folder (tmpfs may refuse O_DIRECT).
pub fn test_opts() -> DbOptions {
    DbOptions { direct_io: false, ..DbOptions::default() }
}

/// The rows `sql` returns, each value as the text protocol renders it.
pub fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s.execute(sql.as_bytes()).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Outcome::Rows(rs) => rs.rows.iter().map(|r| r.iter().map(|v| v.render()).collect()).collect(),
        other => panic!("{sql}: expected rows, got {other:?}"),
    }
}

/// The first value of the first row `sql` returns.
pub fn one(s: &mut Session, sql: &str) -> String {
    rows(s, sql)[0][0].clone()
}

/// Runs `sql`, which must succeed.
pub fn ok(s: &mut Session, sql: &str) {
    run(s, sql);
}

/// Runs `sql`, which must succeed, and returns what it gave.
pub fn run(s: &mut Session, sql: &str) -> Outcome {
    s.execute(sql.as_bytes()).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Runs `sql`, which must succeed, and returns its affected rows (0 for a result set).
pub fn affected(s: &mut Session, sql: &str) -> u64 {
    match run(s, sql) {
        Outcome::Done { affected, .. } => affected,
        Outcome::Rows(_) => 0,
    }
}

/// The error number of `sql`, which must fail.
pub fn err(s: &mut Session, sql: &str) -> u16 {
    err_msg(s, sql).0
}

/// The error number and message of `sql`, which must fail.
pub fn err_msg(s: &mut Session, sql: &str) -> (u16, String) {
    match s.execute(sql.as_bytes()) {
        Ok(o) => panic!("{sql}: expected an error, got {o:?}"),
        Err(e) => (e.code, e.message),
    }
}

/// Runs `sql` on another thread until a run is killed in the middle: KILL
/// (the session's kill handle) as soon as its progress state satisfies
/// `running`. A run can end before the kill lands, so one that succeeds is
/// tried again, up to 50 times; any error but 1317 fails the test. Returns
/// the session and whether a run was interrupted with 1317.
pub fn kill_while_running(mut s: Session, sql: &str, running: impl Fn(&str) -> bool) -> (Session, bool) {
    for _ in 0..50 {
        let (h, kill) = (s.progress_handle(), s.kill_handle());
        let q = sql.to_string();
        let runner = std::thread::spawn(move || {
            let r = s.execute(q.as_bytes()).map(|_| ()).map_err(|e| e.code);
            (s, r)
        });
        while !runner.is_finished() {
            if h.state().is_some_and(|st| running(&st)) {
                kill.kill();
                break;
            }
            std::thread::yield_now();
        }
        let (back, r) = runner.join().unwrap();
        s = back;
        if r == Err(1317) {
            return (s, true);
        }
        assert_eq!(r, Ok(()), "{sql}");
    }
    (s, false)
}
