//! `fractaldb backup`: a hot backup of a running server (over MySQL's
//! protocol, `SET tokudb_backup_dir`) or of a stopped one's data folder.
//!
//! Either way the destination becomes a data folder a server starts on
//! (`fractaldb server --datadir DEST`): the database in `db/` holding every
//! transaction committed before the backup's moment, and the server's keys.

use std::path::{Path, PathBuf};

use clap::Args;
use fractaldb_sql::{Database, DbOptions, Outcome, Session};

use crate::error::{Error, Result};

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// Back up a stopped server's data folder instead of connecting.
    #[arg(long, conflicts_with_all = ["host", "port", "user", "password", "socket"])]
    pub datadir: Option<PathBuf>,
    /// The server to connect to [default: 127.0.0.1].
    #[arg(long, short = 'H')]
    pub host: Option<String>,
    /// Its TCP port [default: 3306].
    #[arg(long, short = 'P')]
    pub port: Option<u16>,
    /// Its Unix socket (instead of host and port).
    #[arg(long, short = 'S')]
    pub socket: Option<PathBuf>,
    /// The account (it needs SUPER) [default: root].
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// Its password [default: $MYSQL_PWD, else none].
    #[arg(long, short = 'p')]
    pub password: Option<String>,
    /// The folder to write: created if missing, and must be empty. With a
    /// running server it is a path on the server's machine: for one on
    /// this machine (a socket, or a loopback host) it is created here and
    /// sent as an absolute path; for another machine it must exist there.
    pub dest: PathBuf,
}

/// `path` as a SQL string literal.
fn quoted(path: &Path) -> String {
    let mut out = String::from("'");
    for c in path.to_string_lossy().chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

pub fn run(args: BackupArgs) -> Result<()> {
    match &args.datadir {
        Some(d) => offline(d, &args.dest),
        None => online(&args),
    }
}

/// A stopped server: open its database here (recovery runs, as a server
/// start would) and take the backup from a session.
fn offline(datadir: &Path, dest: &Path) -> Result<()> {
    let server_layout = datadir.join(fractaldb_server::DB_SUBDIR).is_dir();
    let db_dir =
        if server_layout { datadir.join(fractaldb_server::DB_SUBDIR) } else { datadir.to_path_buf() };
    if !db_dir.join("catalog").is_file() {
        return Err(Error::new(format!("{} holds no fractaldb database", datadir.display())));
    }
    std::fs::create_dir_all(dest).map_err(|e| Error::new(format!("creating {}: {e}", dest.display())))?;
    let dest = std::fs::canonicalize(dest).map_err(|e| Error::new(format!("{}: {e}", dest.display())))?;
    let db = Database::open(&db_dir, DbOptions::default())
        .map_err(|e| Error::new(format!("opening {}: {e}", db_dir.display())))?;
    if server_layout {
        db.set_backup_layout(
            datadir.to_path_buf(),
            fractaldb_server::DB_SUBDIR,
            fractaldb_server::key_files(datadir),
        );
    }
    let mut s = db.session();
    let r = s.execute(format!("SET tokudb_backup_dir = {}", quoted(&dest)).as_bytes());
    let why = match r {
        Ok(_) => None,
        Err(e) => Some(reason(&mut s).unwrap_or_else(|| e.to_string())),
    };
    drop(s);
    db.close().map_err(|e| Error::new(format!("closing {}: {e}", db_dir.display())))?;
    match why {
        None => {
            println!("backup of {} written to {}", datadir.display(), dest.display());
            Ok(())
        }
        Some(why) => Err(Error::new(format!("backup to {} failed: {why}", dest.display()))),
    }
}

/// The session's `tokudb_backup_last_error_string`, if it says anything.
fn reason(s: &mut Session) -> Option<String> {
    match s.execute(b"SELECT @@tokudb_backup_last_error_string").ok()? {
        Outcome::Rows(rs) => rs.rows.first()?.first().map(|v| v.render()).filter(|t| !t.is_empty()),
        _ => None,
    }
}

/// A running server: connect and send the statement.
fn online(args: &BackupArgs) -> Result<()> {
    use mysql::prelude::Queryable;
    let password = args.password.clone().or_else(|| std::env::var("MYSQL_PWD").ok());
    let mut opts = mysql::OptsBuilder::new()
        .user(Some(args.user.clone().unwrap_or_else(|| "root".into())))
        .pass(password)
        .prefer_socket(false);
    let target = match &args.socket {
        Some(sock) => {
            opts = opts.socket(Some(sock.to_string_lossy().into_owned()));
            sock.display().to_string()
        }
        None => {
            let host = args.host.clone().unwrap_or_else(|| "127.0.0.1".into());
            let port = args.port.unwrap_or(3306);
            opts = opts.ip_or_hostname(Some(host.clone())).tcp_port(port);
            format!("{host}:{port}")
        }
    };
    let local = args.socket.is_some()
        || args.host.as_deref().is_none_or(|h| matches!(h, "127.0.0.1" | "localhost" | "::1"));
    let dest = if local {
        // The server resolves a relative path from its own folder and
        // wants the folder to exist (as SET tokudb_backup_dir does).
        std::fs::create_dir_all(&args.dest)
            .map_err(|e| Error::new(format!("creating {}: {e}", args.dest.display())))?;
        std::fs::canonicalize(&args.dest).map_err(|e| Error::new(format!("{}: {e}", args.dest.display())))?
    } else {
        args.dest.clone()
    };
    let mut conn = mysql::Conn::new(opts).map_err(|e| Error::new(format!("connecting to {target}: {e}")))?;
    let stmt = format!("SET tokudb_backup_dir = {}", quoted(&dest));
    if let Err(e) = conn.query_drop(&stmt) {
        let why: Option<String> =
            conn.query_first("SELECT @@tokudb_backup_last_error_string").ok().flatten().flatten();
        let why = why.filter(|w| !w.is_empty()).unwrap_or_else(|| e.to_string());
        return Err(Error::new(format!("backup of {target} to {} failed: {why}", dest.display())));
    }
    println!("backup of {target} written to {}", dest.display());
    Ok(())
}
