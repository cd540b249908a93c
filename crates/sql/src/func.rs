//! Scalar functions with MySQL's results. (Stub: helper owns it.)
use crate::error::{SqlError, SqlResult, Warning};
use crate::types::Collation;
use crate::value::Value;

/// What a function may need beyond its arguments.
pub struct FnCtx<'a> {
    /// The statement's start, microseconds since the Unix epoch, UTC
    /// (NOW() is constant within a statement).
    pub now_micros: i64,
    /// The session's `time_zone`, as set ('SYSTEM', '+02:00', 'Europe/Paris').
    pub time_zone: &'a str,
    /// Where warnings go (SHOW WARNINGS).
    pub warnings: &'a mut Vec<Warning>,
    /// The current database (DATABASE()).
    pub database: Option<&'a str>,
    /// LAST_INSERT_ID(), CONNECTION_ID() and friends.
    pub last_insert_id: u64,
    pub connection_id: u64,
}

/// One argument: its value and, for strings, the collation its expression has.
pub struct Arg {
    pub value: Value,
    pub coll: Option<Collation>,
}

/// Calls scalar function `name` (upper case).
pub fn call(name: &str, args: Vec<Arg>, ctx: &mut FnCtx) -> SqlResult<Value> {
    let _ = (args, ctx);
    Err(SqlError::no_such_function(name))
}

/// True if `name` (upper case) is a scalar function `call` knows.
pub fn exists(name: &str) -> bool {
    let _ = name;
    false
}
