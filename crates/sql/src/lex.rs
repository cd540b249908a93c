//! MySQL's lexical layer in front of sqlparser. (Stub: helper owns it.)
use crate::error::{SqlError, SqlResult};

/// Splits a script into statements (stub).
pub fn split_script(input: &[u8]) -> Vec<Vec<u8>> {
    input
        .split(|b| *b == b';')
        .filter(|s| !s.iter().all(|b| b.is_ascii_whitespace()))
        .map(|s| s.to_vec())
        .collect()
}

/// What one statement parsed into.
pub enum Parsed {
    /// A statement sqlparser understands, with what the rewrite removed.
    Std(Box<sqlparser::ast::Statement>, Flags),
    /// Statements parsed here.
    Special(Special),
    /// Only comments / whitespace.
    Empty,
}

/// What `parse` took out of the text before sqlparser saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `... LOCK IN SHARE MODE` was removed from the end of a SELECT.
    pub lock_in_share_mode: bool,
}

/// Statements parsed by our own code.
#[derive(Clone, Debug, PartialEq)]
pub enum Special {
    Show(ShowStmt),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ShowStmt {
    pub kind: ShowKind,
    pub full: bool,
    pub global: bool,
    pub db: Option<String>,
    pub table: Option<String>,
    pub like: Option<Vec<u8>>,
    pub filter: Option<sqlparser::ast::Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowKind {
    Databases,
    Tables,
    Warnings,
}

/// Parses one statement (stub).
pub fn parse(stmt: &[u8]) -> SqlResult<Parsed> {
    let text = std::str::from_utf8(stmt).map_err(|_| SqlError::syntax("invalid utf8"))?;
    if text.trim().is_empty() {
        return Ok(Parsed::Empty);
    }
    let mut v = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::MySqlDialect {}, text)
        .map_err(|e| SqlError::syntax(format!("'{e}'")))?;
    if v.len() != 1 {
        return Err(SqlError::syntax("''"));
    }
    Ok(Parsed::Std(Box::new(v.remove(0)), Flags::default()))
}
