//! Scripts run statement by statement on MariaDB and on fractaldb, every
//! result compared.

use fractaldb_sql::{Database, DbOptions};

use super::mariadb::{self, MariaDb};
use super::{run_fractal, show_result, RunResult};

/// MariaDB's answer with its engine's name replaced by ours.
fn normalize(r: RunResult) -> RunResult {
    r.map(|mut rows| {
        for row in &mut rows.rows {
            for v in row.iter_mut().flatten() {
                let s = String::from_utf8_lossy(v).replace("ENGINE=InnoDB", "ENGINE=FractalDB");
                *v = s.into_bytes();
            }
        }
        rows
    })
}

/// Runs `script` on MariaDB and on fractaldb and compares every statement:
/// errors by number and message, result sets exactly, OK packets by their
/// warning count (and rows affected and info unless `loose_counts`).
pub fn compare(name: &str, script: &[&str], loose_counts: bool) {
    compare_with(name, script, loose_counts, false)
}

/// [`compare`], with result sets compared as multisets when `unordered`
/// (for queries without ORDER BY, whose order is the engine's).
pub fn compare_with(name: &str, script: &[&str], loose_counts: bool, unordered: bool) {
    if !mariadb::available(name) {
        return;
    }
    let server = MariaDb::shared().expect("MariaDB");
    let (mut conn, dbname) = server.fresh_db(name);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = db.session();
    s.execute(format!("CREATE DATABASE `{dbname}`").as_bytes()).unwrap();
    s.execute(format!("USE `{dbname}`").as_bytes()).unwrap();
    let mut diffs = Vec::new();
    for sql in script {
        let m = normalize(mariadb::run(&mut conn, sql));
        let f = run_fractal(&mut s, sql);
        let same = match (&m, &f) {
            (Ok(a), Ok(b)) if loose_counts && !a.is_result_set() => a.warnings == b.warnings,
            // Warnings by level and code: the texts of conversion warnings
            // differ (fractaldb names the column without its table).
            (Ok(a), Ok(b)) if sql.starts_with("SHOW WARNINGS") => {
                let key = |r: &super::Rows| -> Vec<Vec<Option<Vec<u8>>>> {
                    r.rows.iter().map(|row| row[..2].to_vec()).collect()
                };
                key(a) == key(b)
            }
            (Ok(a), Ok(b)) if a.is_result_set() && unordered => {
                let (mut x, mut y) = (a.rows.clone(), b.rows.clone());
                x.sort();
                y.sort();
                a.columns == b.columns && x == y
            }
            (Ok(a), Ok(b)) if a.is_result_set() => a.columns == b.columns && a.rows == b.rows,
            (a, b) => a == b,
        };
        if !same {
            diffs.push(format!("{sql}\n  MariaDB:   {}\n  fractaldb: {}", show_result(&m), show_result(&f)));
        }
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}
