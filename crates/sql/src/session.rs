//! One client's session: current database, transaction, variables, and the
//! statement dispatcher.

use crate::error::{SqlResult, Warning};
use crate::types::SqlType;
use crate::value::Value;

/// A result column, as the protocol's column definition describes it.
#[derive(Clone, Debug)]
pub struct ColumnMeta {
    /// The name shown (an alias, or the expression's text).
    pub name: String,
    /// The column's own name when it is a table column, else "".
    pub org_name: String,
    /// The table alias, or "".
    pub table: String,
    pub org_table: String,
    pub db: String,
    /// The value's type, as the protocol reports it.
    pub ty: SqlType,
    pub nullable: bool,
}

/// The rows a statement returned.
#[derive(Clone, Debug, Default)]
pub struct ResultSet {
    pub columns: Vec<ColumnMeta>,
    pub rows: Vec<Vec<Value>>,
}

/// What a statement did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A query's rows.
    Rows(ResultSet),
    /// A statement without rows: how many rows it changed, the id its
    /// insert generated, and MySQL's info line ("Records: 3  Duplicates: 0
    /// Warnings: 0").
    Done { affected: u64, last_insert_id: u64, info: Option<String> },
}

/// A connection's state.
pub struct Session {
    pub(crate) warnings: Vec<Warning>,
    pub(crate) db: Option<String>,
}

impl Session {
    /// Runs one statement.
    pub fn execute(&mut self, sql: &[u8]) -> SqlResult<Outcome> {
        let _ = sql;
        todo!()
    }

    /// Runs a script: every statement in order, stopping at the first
    /// error (as `mariadb < file` does without `--force`).
    pub fn execute_script(&mut self, script: &[u8]) -> SqlResult<Vec<Outcome>> {
        let mut out = Vec::new();
        for stmt in crate::lex::split_script(script) {
            out.push(self.execute(&stmt)?);
        }
        Ok(out)
    }

    /// The warnings of the last statement.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The current database (USE), if any.
    pub fn current_db(&self) -> Option<&str> {
        self.db.as_deref()
    }
}
