//! SQL-level prepared statements: `PREPARE name FROM expr`, `EXECUTE name
//! [USING expr, ...]`, `EXECUTE IMMEDIATE expr [USING ...]` and
//! `{DEALLOCATE | DROP} PREPARE name`, as MariaDB runs them.
//!
//! The statement text is parsed once by the same path as the binary
//! protocol's COM_STMT_PREPARE (`prepared.rs`: `?` numbered, parsed), kept
//! in the session under its name (names are case-insensitive), and each
//! EXECUTE binds its USING values to the `?` in order and runs it.
//! MariaDB's rules kept here:
//! - PREPARE drops an existing statement of the same name first, so a
//!   failed PREPARE leaves no statement under that name;
//! - a statement text that is itself PREPARE, EXECUTE or DEALLOCATE is
//!   1295 (`prepared::prepare` refuses it for both protocols);
//! - an unknown name is 1243, a USING list of the wrong length 1210;
//! - a session holds at most `MAX_PREPARED` of them (1461), as MariaDB's
//!   default `max_prepared_stmt_count` bounds a server.
//!
//! A session's statements go away with it (and with COM_RESET_CONNECTION
//! or COM_CHANGE_USER, as its user variables do).
//!
//! Counters, as MariaDB 10.11 keeps them: each statement counts under its
//! own `Com_prepare_sql` / `Com_execute_sql` / `Com_execute_immediate` /
//! `Com_dealloc_sql` whatever its outcome (`sysvars::stat_of`); besides,
//! every PREPARE and EXECUTE IMMEDIATE counts `Com_stmt_prepare` (failed
//! ones too), every execution that binds its parameters
//! `Com_stmt_execute`, and every statement let go of (DEALLOCATE, one
//! replaced by a PREPARE of its name, the end of an EXECUTE IMMEDIATE
//! that prepared) `Com_stmt_close`.

use crate::error::{SqlError, SqlResult};
use crate::session::{Outcome, Session};
use crate::sysvars::Stat;
use crate::value::Value;
use sqlparser::ast::Expr;

/// MariaDB's default `max_prepared_stmt_count`.
pub const MAX_PREPARED: usize = 16382;

/// `PREPARE name FROM text`.
pub(crate) fn prepare(s: &mut Session, name: &str, text: &Expr) -> SqlResult<Outcome> {
    let key = name.to_ascii_lowercase();
    s.count(Stat::ComStmtPrepare, 1);
    if s.sql_prepared.remove(&key).is_some() {
        s.count(Stat::ComStmtClose, 1);
    }
    let sql = statement_text(s, text)?;
    let p = s.prepare(&sql)?;
    if s.sql_prepared.len() >= MAX_PREPARED {
        return Err(SqlError::new(
            1461,
            "42000",
            format!(
                "Can't create more than max_prepared_stmt_count statements (current value: {MAX_PREPARED})"
            ),
        ));
    }
    s.sql_prepared.insert(key, std::sync::Arc::new(p));
    Ok(Outcome::Done { affected: 0, last_insert_id: 0, info: Some("Statement prepared".into()) })
}

/// `EXECUTE name USING ...`
pub(crate) fn execute(s: &mut Session, name: &str, using: &[Expr]) -> SqlResult<Outcome> {
    let p =
        s.sql_prepared.get(&name.to_ascii_lowercase()).cloned().ok_or_else(|| unknown(name, "EXECUTE"))?;
    run(s, &p, using)
}

/// `EXECUTE IMMEDIATE text USING ...`
pub(crate) fn execute_immediate(s: &mut Session, text: &Expr, using: &[Expr]) -> SqlResult<Outcome> {
    s.count(Stat::ComStmtPrepare, 1);
    let sql = statement_text(s, text)?;
    let p = s.prepare(&sql)?;
    let r = run(s, &p, using);
    s.count(Stat::ComStmtClose, 1);
    r
}

/// `DEALLOCATE PREPARE name`
pub(crate) fn deallocate(s: &mut Session, name: &str) -> SqlResult<Outcome> {
    match s.sql_prepared.remove(&name.to_ascii_lowercase()) {
        Some(_) => {
            s.count(Stat::ComStmtClose, 1);
            Ok(Outcome::done(0))
        }
        None => Err(unknown(name, "DEALLOCATE PREPARE")),
    }
}

fn run(s: &mut Session, p: &crate::prepared::PreparedStatement, using: &[Expr]) -> SqlResult<Outcome> {
    // Evaluated before the statement runs, as MariaDB does: `EXECUTE s
    // USING @a` where s changes @a still binds the old value.
    let values = using.iter().map(|e| s.eval_const(e)).collect::<SqlResult<Vec<Value>>>()?;
    if values.len() != p.param_count() {
        return Err(SqlError::new(1210, "HY000", "Incorrect arguments to EXECUTE"));
    }
    s.count(Stat::ComStmtExecute, 1);
    s.run_prepared_inline(p, &values)
}

/// The statement a PREPARE or EXECUTE IMMEDIATE names: its expression's
/// value as text. NULL is a syntax error near 'NULL', as in MariaDB.
fn statement_text(s: &mut Session, text: &Expr) -> SqlResult<Vec<u8>> {
    match s.eval_const(text)? {
        Value::Null => Err(SqlError::syntax("'NULL' at line 1")),
        v => Ok(v.to_bytes().unwrap_or_else(|| v.render().into_bytes())),
    }
}

fn unknown(name: &str, what: &str) -> SqlError {
    SqlError::new(1243, "HY000", format!("Unknown prepared statement handler ({name}) given to {what}"))
}
