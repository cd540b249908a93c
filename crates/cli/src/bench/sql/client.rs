//! The benchmark's client side: plain MySQL-protocol connections (the
//! `mysql` crate), one per worker thread, over TCP so every server pays the
//! same network path.

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

use super::servers::Endpoint;
use crate::error::{Error, Result};

/// Opens a connection, in database `db` when given.
pub fn connect(ep: &Endpoint, db: Option<&str>) -> Result<Conn> {
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some(ep.host.clone()))
        .tcp_port(ep.port)
        .user(Some(ep.user.clone()))
        .pass(ep.password.clone())
        .db_name(db.map(str::to_string))
        .prefer_socket(false);
    Conn::new(opts).map_err(|e| Error::new(format!("connecting to {}:{}: {e}", ep.host, ep.port)))
}

/// Runs statements that return no rows, in order.
pub fn exec_all(conn: &mut Conn, stmts: &[String]) -> Result<()> {
    for s in stmts {
        conn.query_drop(s).map_err(|e| Error::new(format!("{e} in: {}", shorten(s))))?;
    }
    Ok(())
}

/// The first column of the first row of `sql`, as text.
pub fn scalar(conn: &mut Conn, sql: &str) -> Result<Option<String>> {
    let row: Option<mysql::Row> = conn.query_first(sql).map_err(|e| Error::new(format!("{e} in: {sql}")))?;
    Ok(row.and_then(|r| r.get_opt::<String, usize>(0).and_then(|v| v.ok())))
}

/// A statement cut for an error message.
pub fn shorten(s: &str) -> String {
    if s.len() <= 200 {
        s.to_string()
    } else {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}
