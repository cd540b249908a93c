//! Golden SQL scripts: `tests/golden/NAME.sql` runs statement by statement
//! on a fresh fractaldb database, and each statement's result (rows, OK
//! counts and info line, warning count, or error number and message) must
//! equal the one recorded in `tests/golden/NAME.result`.
//!
//! The `.result` files are never written by hand: MariaDB 10.11 writes
//! them. `FRACTALDB_BLESS=1 cargo test -p fractaldb-sql --test golden`
//! runs every script on a private MariaDB and rewrites the files. Under
//! CI=true the test also runs each script on MariaDB and fails if the
//! recorded result no longer matches it, so a file cannot drift from the
//! oracle.

mod support;

use std::path::{Path, PathBuf};

use fractaldb_sql::{Database, DbOptions};
use support::mariadb::{self, MariaDb};
use support::{run_fractal, show_result, RunResult};

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/golden")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    v.sort();
    v
}

fn statements(script: &Path) -> Vec<String> {
    let text = std::fs::read(script).expect("script");
    fractaldb_sql::lex::split_script(&text)
        .into_iter()
        .map(|s| String::from_utf8(s.to_vec()).expect("scripts are UTF-8"))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The recorded form: each statement, then its result, then a blank line.
fn render(stmts: &[String], results: &[RunResult]) -> String {
    let mut out = String::new();
    for (s, r) in stmts.iter().zip(results) {
        out.push_str(&format!("> {}\n{}\n\n", s.replace('\n', "\n> "), show_result(r)));
    }
    out
}

/// Each script runs in a database named after it, on both engines, so
/// messages that name the database match.
fn run_mariadb(server: &MariaDb, name: &str, stmts: &[String]) -> Vec<RunResult> {
    let mut c = server.conn();
    for s in [
        format!("DROP DATABASE IF EXISTS `{name}`"),
        format!("CREATE DATABASE `{name}`"),
        format!("USE `{name}`"),
    ] {
        mariadb::run(&mut c, &s).expect("set-up");
    }
    stmts.iter().map(|s| mariadb::run(&mut c, s)).collect()
}

fn run_fractaldb(name: &str, stmts: &[String]) -> Vec<RunResult> {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions::default()).unwrap();
    let mut s = db.session();
    s.execute(format!("CREATE DATABASE `{name}`").as_bytes()).unwrap();
    s.execute(format!("USE `{name}`").as_bytes()).unwrap();
    let out = stmts.iter().map(|q| run_fractal(&mut s, q)).collect();
    drop(s);
    db.close().unwrap();
    out
}

#[test]
fn golden_scripts() {
    let bless = std::env::var("FRACTALDB_BLESS").is_ok_and(|v| v == "1");
    let oracle = if bless || std::env::var("CI").is_ok_and(|v| v == "true") {
        if !mariadb::available("golden_scripts") {
            return;
        }
        MariaDb::shared()
    } else {
        None
    };
    let mut failures = Vec::new();
    for script in scripts() {
        let name = script.file_stem().unwrap().to_string_lossy().into_owned();
        let stmts = statements(&script);
        let result_path = script.with_extension("result");
        if let Some(server) = oracle {
            let expected = render(&stmts, &run_mariadb(server, &name, &stmts));
            if bless {
                std::fs::write(&result_path, &expected).unwrap();
            } else {
                let recorded = std::fs::read_to_string(&result_path).unwrap_or_default();
                if recorded != expected {
                    failures.push(format!(
                        "{name}.result no longer matches MariaDB: rerun with FRACTALDB_BLESS=1\n{}",
                        first_difference(&recorded, &expected)
                    ));
                }
            }
        }
        let recorded = std::fs::read_to_string(&result_path)
            .unwrap_or_else(|_| panic!("{} missing: run with FRACTALDB_BLESS=1", result_path.display()));
        let got = render(&stmts, &run_fractaldb(&name, &stmts));
        if got != recorded {
            failures.push(format!(
                "{name}: fractaldb differs from MariaDB\n{}",
                first_difference(&recorded, &got)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The statements whose recorded blocks differ (the first few), both ways.
fn first_difference(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.split("\n\n").collect();
    let b: Vec<&str> = got.split("\n\n").collect();
    let mut out = Vec::new();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied().unwrap_or(""), b.get(i).copied().unwrap_or(""));
        if x != y && out.len() < 8 {
            out.push(format!("MariaDB:\n{x}\n\nfractaldb:\n{y}"));
        }
    }
    out.join("\n----\n")
}
