//! What the tests that compare fractaldb with MariaDB share: one shape for a
//! statement's result, whichever engine ran it, so results compare byte for
//! byte, and the private MariaDB server ([`mariadb`]).
//!
//! Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

pub mod crash;
pub mod embedded;
pub mod mariadb;
pub mod script;

use std::fmt;

use fractaldb_sql::{Outcome, Session, SqlError};

/// A statement's result as a client of the text protocol sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// Column names; empty for a statement without a result set.
    pub columns: Vec<String>,
    /// Values as the text protocol sends them; `None` is NULL.
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
    /// Rows changed (0 for a result set).
    pub affected: u64,
    /// The OK packet's info line ("Records: 3  Duplicates: 0  Warnings: 0"), or "".
    pub info: String,
    /// How many warnings the statement left.
    pub warnings: u64,
}

/// A failed statement: MySQL's error number and message.
pub type Failure = (u16, String);

/// A statement's result or its error.
pub type RunResult = Result<Rows, Failure>;

impl Rows {
    /// True when the statement returned a result set (maybe empty).
    pub fn is_result_set(&self) -> bool {
        !self.columns.is_empty()
    }
}

impl fmt::Display for Rows {
    /// A readable form for failure messages: a header, then one line per
    /// row, tab-separated, NULL as `NULL`, bytes escaped where not text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_result_set() {
            write!(f, "OK, {} rows affected", self.affected)?;
            if !self.info.is_empty() {
                write!(f, " ({})", self.info)?;
            }
            if self.warnings > 0 {
                write!(f, ", {} warnings", self.warnings)?;
            }
            return Ok(());
        }
        writeln!(f, "{}", self.columns.join("\t"))?;
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|v| show_value(v.as_deref())).collect();
            writeln!(f, "{}", cells.join("\t"))?;
        }
        write!(f, "({} rows)", self.rows.len())
    }
}

/// One value as failure messages show it: NULL, or the text with anything
/// unprintable and trailing spaces made visible ('a  ' keeps its quotes).
pub fn show_value(v: Option<&[u8]>) -> String {
    match v {
        None => "NULL".into(),
        Some(b) => format!("'{}'", b.escape_ascii()),
    }
}

/// A [`RunResult`] in one line or a few, for failure messages.
pub fn show_result(r: &RunResult) -> String {
    match r {
        Ok(rows) => rows.to_string(),
        Err((code, msg)) => format!("ERROR {code}: {msg}"),
    }
}

/// fractaldb's outcome of a statement in the shape MariaDB's client gives:
/// values rendered as the text protocol would send them.
pub fn outcome_rows(outcome: &Outcome, warnings: usize) -> Rows {
    match outcome {
        Outcome::Rows(rs) => Rows {
            columns: rs.columns.iter().map(|c| c.name.clone()).collect(),
            rows: rs.rows.iter().map(|r| r.iter().map(|v| v.to_bytes()).collect()).collect(),
            affected: 0,
            info: String::new(),
            warnings: warnings as u64,
        },
        Outcome::Done { affected, info, .. } => Rows {
            columns: Vec::new(),
            rows: Vec::new(),
            affected: *affected,
            info: info.clone().unwrap_or_default(),
            warnings: warnings as u64,
        },
    }
}

/// The error as a [`Failure`].
pub fn failure(e: &SqlError) -> Failure {
    (e.code, e.message.clone())
}

/// Runs one statement on a fractaldb session.
///
/// A panic inside the SQL layer (a `todo!()`, a bug) becomes error 0 with
/// the panic's message, so a comparison reports it next to MariaDB's result
/// instead of ending the test without the script that caused it.
pub fn run_fractal(session: &mut Session, sql: &str) -> RunResult {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.execute(sql.as_bytes())));
    match r {
        Ok(Ok(outcome)) => Ok(outcome_rows(&outcome, session.warnings().len())),
        Ok(Err(e)) => Err(failure(&e)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Err((0, format!("PANIC: {msg}")))
        }
    }
}
