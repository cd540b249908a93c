//! Prepared statements: parsed once, executed many times with parameters.
//!
//! `Session::prepare` numbers the statement's `?` placeholders in text
//! order (`?` becomes `?1`, `?2`, ... outside strings, quoted names and
//! comments, by the same lexer `parse` uses) and parses it; each
//! `Session::execute_prepared` binds and runs the parsed statement with
//! the parameter values in a thread-local the binder reads when it meets
//! `?N` (`bind::literal`), so a parameter is a constant of that execution:
//! it narrows access paths like a literal. Binding and planning still
//! happen per execution; parsing does not.

use std::cell::RefCell;

use crate::error::{SqlError, SqlResult};
use crate::expr::{Expr, Ty};
use crate::lex::Parsed;
use crate::value::Value;

/// A statement parsed once, with how many parameters it takes.
#[derive(Clone, Debug)]
pub struct PreparedStatement {
    pub(crate) parsed: Parsed,
    pub(crate) text: String,
    params: usize,
}

impl PreparedStatement {
    /// How many `?` the statement has.
    pub fn param_count(&self) -> usize {
        self.params
    }
}

thread_local! {
    static PARAMS: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn prepare(sql: &[u8]) -> SqlResult<PreparedStatement> {
    let (text, params) = crate::lex::number_placeholders(sql)?;
    let parsed = crate::lex::parse(&text)?;
    use crate::lex::{Parsed, Special};
    if let Parsed::Special(
        Special::Prepare { .. }
        | Special::Execute { .. }
        | Special::ExecuteImmediate { .. }
        | Special::Deallocate(_),
    ) = parsed
    {
        return Err(SqlError::new(
            1295,
            "HY000",
            "This command is not supported in the prepared statement protocol yet",
        ));
    }
    Ok(PreparedStatement { parsed, text: String::from_utf8_lossy(sql).trim().to_string(), params })
}

/// Makes `params` the values of `?1`, `?2`, ... until the guard drops.
pub(crate) fn bind_params(params: &[Value]) -> Guard {
    let prev = PARAMS.with(|p| p.replace(params.to_vec()));
    Guard(prev)
}

pub(crate) struct Guard(Vec<Value>);

impl Drop for Guard {
    fn drop(&mut self) {
        let prev = std::mem::take(&mut self.0);
        PARAMS.with(|p| *p.borrow_mut() = prev);
    }
}

/// The value of placeholder `name` (`?N`) in the running execution.
pub(crate) fn param(name: &str) -> SqlResult<(Expr, Ty)> {
    let n: usize = name.strip_prefix('?').and_then(|d| d.parse().ok()).unwrap_or(0);
    PARAMS.with(|p| {
        let p = p.borrow();
        match n.checked_sub(1).and_then(|i| p.get(i)) {
            Some(v) => Ok((Expr::Const(v.clone()), crate::bind::value_ty(v))),
            // A `?` outside a prepared statement, or one with too few values.
            None => Err(SqlError::new(1210, "HY000", "Incorrect arguments to EXECUTE")),
        }
    })
}
