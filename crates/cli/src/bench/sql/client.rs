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

/// Feeds the SQL file `file` to the `mariadb` command-line client connected
/// to `ep` in database `db`, as a user loads a mysqldump file
/// (`mariadb db < file`), so every server gets the same statements from the
/// same client. Returns the seconds it took.
pub fn source_file(ep: &Endpoint, db: &str, file: &std::path::Path) -> Result<f64> {
    let input =
        std::fs::File::open(file).map_err(|e| Error::new(format!("opening {}: {e}", file.display())))?;
    let mut cmd = std::process::Command::new("mariadb");
    cmd.arg("--no-defaults")
        .arg("--protocol=TCP")
        .arg(format!("--host={}", ep.host))
        .arg(format!("--port={}", ep.port))
        .arg(format!("--user={}", ep.user))
        .arg("--batch");
    if let Some(pw) = &ep.password {
        cmd.arg(format!("--password={pw}"));
    }
    let started = std::time::Instant::now();
    let out = cmd
        .arg(db)
        .stdin(input)
        .output()
        .map_err(|e| Error::new(format!("running the mariadb client (Debian: mariadb-client): {e}")))?;
    let secs = started.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(Error::new(format!(
            "mariadb {db} < {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(secs)
}
