//! The slow query log, in MariaDB's format: with `slow_query_log` ON, a
//! statement that ran `long_query_time` seconds or more (the session's
//! value) is written to `slow_query_log_file` (default
//! `<datadir>/<hostname>-slow.log`, as MariaDB's) as
//!
//! ```text
//! # Time: 261125  8:57:55
//! # User@Host: root[root] @  [127.0.0.1]
//! # Thread_id: 6  Schema: x  QC_hit: No
//! # Query_time: 0.100280  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
//! # Rows_affected: 0  Bytes_sent: 97
//! use `x`;
//! SET timestamp=1795597075;
//! select 1, sleep(0.1);
//! ```
//!
//! `# Time:` only when the second changed since the last entry, `use` when
//! the connection's database changed since its last entry (MariaDB's
//! rules). Lock_time is 0: row locks are waited for inside the statement.
//! The file is opened on first use and again when `slow_query_log_file`
//! changes (SET GLOBAL), appended to, never truncated.

use std::io::Write as _;
use std::path::PathBuf;

use parking_lot::Mutex;

pub(crate) struct SlowLog {
    state: Mutex<State>,
    port: u16,
    socket: Option<PathBuf>,
}

#[derive(Default)]
struct State {
    path: String,
    file: Option<std::fs::File>,
    last_second: i64,
}

/// One slow statement.
pub(crate) struct Entry<'a> {
    pub user: &'a str,
    /// The client's address ("" for the Unix socket).
    pub ip: &'a str,
    pub thread_id: u64,
    pub schema: &'a str,
    /// Write `use schema;` first (the connection's database changed).
    pub use_schema: bool,
    pub query_secs: f64,
    pub rows_sent: u64,
    pub rows_examined: u64,
    pub rows_affected: u64,
    pub bytes_sent: u64,
    /// The statement's start, seconds since the epoch.
    pub start: i64,
    pub sql: &'a [u8],
}

impl SlowLog {
    pub(crate) fn new(port: u16, socket: Option<PathBuf>) -> SlowLog {
        SlowLog { state: Mutex::new(State::default()), port, socket }
    }

    /// Appends `e` to the file at `path`. An error (the file cannot be
    /// opened or written) is returned for the server's log; the statement
    /// itself has already succeeded.
    pub(crate) fn write(&self, path: &str, e: &Entry) -> Result<(), String> {
        let mut st = self.state.lock();
        if st.file.is_none() || st.path != path {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|err| format!("cannot open the slow query log {path}: {err}"))?;
            st.file = Some(f);
            st.path = path.to_string();
            st.last_second = 0;
            let empty = st.file.as_ref().and_then(|f| f.metadata().ok()).is_some_and(|m| m.len() == 0);
            if empty {
                let head = format!(
                    "fractaldb, Version: {}. started with:\nTcp port: {}  Unix socket: {}\nTime\t\t    Id Command\tArgument\n",
                    fractaldb_sql::SERVER_VERSION,
                    self.port,
                    self.socket.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
                );
                let _ = st.file.as_mut().map(|f| f.write_all(head.as_bytes()));
            }
        }
        let mut out = String::new();
        let now = chrono::Local::now();
        if now.timestamp() != st.last_second {
            st.last_second = now.timestamp();
            out.push_str(&format!("# Time: {}\n", now.format("%y%m%d %k:%M:%S")));
        }
        let host = if e.ip.is_empty() { "localhost []".to_string() } else { format!(" [{}]", e.ip) };
        out.push_str(&format!("# User@Host: {u}[{u}] @ {host}\n", u = e.user));
        out.push_str(&format!("# Thread_id: {}  Schema: {}  QC_hit: No\n", e.thread_id, e.schema));
        out.push_str(&format!(
            "# Query_time: {:.6}  Lock_time: 0.000000  Rows_sent: {}  Rows_examined: {}\n",
            e.query_secs, e.rows_sent, e.rows_examined
        ));
        out.push_str(&format!("# Rows_affected: {}  Bytes_sent: {}\n", e.rows_affected, e.bytes_sent));
        if e.use_schema && !e.schema.is_empty() {
            out.push_str(&format!("use `{}`;\n", e.schema.replace('`', "``")));
        }
        out.push_str(&format!("SET timestamp={};\n", e.start));
        let sql = String::from_utf8_lossy(e.sql);
        let sql = sql.trim();
        out.push_str(sql);
        if !sql.ends_with(';') {
            out.push(';');
        }
        out.push('\n');
        let f = st.file.as_mut().expect("opened above");
        f.write_all(out.as_bytes()).map_err(|err| format!("writing the slow query log {path}: {err}"))
    }
}
