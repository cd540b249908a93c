//! One client's session: current database, transaction, variables, and the
//! statement dispatcher.
//!
//! Transactions: with autocommit on and no BEGIN, each statement runs in
//! an engine transaction of its own, committed at its end. Inside BEGIN ...
//! COMMIT, each statement runs under an engine savepoint, and a failing
//! statement rolls back to it: statements are atomic, the transaction
//! goes on (as InnoDB does). A DDL statement commits the open transaction
//! first, as MySQL's implicit commit does.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use fractaldb::{Isolation, Txn, TxnOptions};
use sqlparser::ast;

use crate::db::Inner;
use crate::error::{SqlError, SqlResult, Warning};
use crate::expr::EvalCtx;
use crate::lex::{Parsed, Special};
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
    /// A table column's flags from its definition, numbered as the
    /// protocol's column flags (`column_flags`): PRI_KEY, UNIQUE_KEY,
    /// MULTIPLE_KEY, AUTO_INCREMENT, NO_DEFAULT_VALUE, PART_KEY. The type's
    /// own flags (NOT_NULL, UNSIGNED, BINARY, BLOB, ...) are the server's.
    pub flags: u16,
}

impl ColumnMeta {
    pub fn expr(name: impl Into<String>, ty: SqlType) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            org_name: String::new(),
            table: String::new(),
            org_table: String::new(),
            db: String::new(),
            ty,
            nullable: true,
            flags: 0,
        }
    }
}

/// The rows a statement returned.
#[derive(Clone, Debug, Default)]
pub struct ResultSet {
    pub columns: Vec<ColumnMeta>,
    pub rows: Vec<Vec<Value>>,
}

/// Where a query's rows go as they are made, when whoever runs the
/// statement takes them that way (`LocalInfile::rows`): a result set then
/// never has to fit in memory. Only a plain SELECT's rows stream (not a
/// UNION's, a WITH query's, or a prepared statement's); its `ResultSet`
/// comes back with the columns and no rows.
pub trait RowSink {
    /// The columns, once, before the first row (also when there is none).
    fn columns(&mut self, cols: &[ColumnMeta]) -> SqlResult<()>;
    /// The next row. An error (the client is gone) ends the statement.
    fn row(&mut self, row: &[Value]) -> SqlResult<()>;
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

impl Outcome {
    pub fn done(affected: u64) -> Outcome {
        Outcome::Done { affected, last_insert_id: 0, info: None }
    }
}

/// A connection's state.
pub struct Session {
    pub(crate) inner: Arc<Inner>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) db: Option<String>,
    /// The open engine transaction: a BEGIN's, or (autocommit off) the
    /// implicit one.
    pub(crate) txn: Option<Txn>,
    /// The session's XA transaction (`xa.rs`); its engine transaction is `txn`.
    pub(crate) xa: Option<crate::xa::XaCur>,
    pub(crate) explicit: bool,
    pub(crate) autocommit: bool,
    pub(crate) isolation: Isolation,
    /// SET TRANSACTION ISOLATION LEVEL without SESSION: the next one only.
    pub(crate) next_isolation: Option<Isolation>,
    pub(crate) strict: bool,
    pub(crate) sql_mode: String,
    /// What `sql_mode` says about reading text (kept with it: the server
    /// asks before every statement).
    pub(crate) lex: crate::lex::LexMode,
    pub(crate) time_zone: String,
    pub(crate) user_vars: HashMap<String, Value>,
    /// SQL-level prepared statements by lower-cased name (`sqlprepare.rs`).
    /// Shared, so an EXECUTE takes it without copying the parsed statement.
    pub(crate) sql_prepared: HashMap<String, std::sync::Arc<crate::prepared::PreparedStatement>>,
    pub(crate) vars: HashMap<String, Value>,
    pub(crate) last_insert_id: u64,
    pub(crate) conn_id: u64,
    /// This session's row-count slot (see `table.rs`).
    pub(crate) slot: u32,
    pub(crate) savepoints: Vec<(String, fractaldb::Savepoint)>,
    /// LOCK TABLES is in effect: only then does UNLOCK TABLES commit (as in
    /// MariaDB; mariadb-dump --single-transaction sends UNLOCK TABLES right
    /// after START TRANSACTION WITH CONSISTENT SNAPSHOT and must keep it).
    pub(crate) tables_locked: bool,
    /// The statement's start, for NOW().
    pub(crate) now_micros: i64,
    /// Set by [`KillHandle::kill`]: the running statement stops between rows.
    pub(crate) killed: Arc<std::sync::atomic::AtomicBool>,
    /// The running statement's text (PROCESSLIST's Info).
    pub(crate) stmt_text: String,
    /// The global variables as they were when the session started (or
    /// was reset): both-scoped variables not SET in the session read these.
    pub(crate) globals: Arc<std::collections::BTreeMap<&'static str, Value>>,
    /// The CTEs of the running query (see `cte.rs`).
    pub(crate) ctes: crate::cte::Ctes,
    /// In a correlated subquery's session: the enclosing queries' columns
    /// and their current values (innermost first).
    pub(crate) outer_scope: Vec<crate::expr::ScopeCol>,
    pub(crate) outer_row: Vec<Value>,
    /// How many views deep this (sub-)session's query is.
    pub(crate) view_depth: u32,
    /// CHECK OPTION conditions of the view a write goes through: (base
    /// db, base table, `db`.`view`, condition over the base row); see
    /// views.rs.
    pub(crate) view_checks: Vec<(String, String, String, sqlparser::ast::Expr)>,
    /// EXPLAIN: SELECT binds its query, then returns the plan unread.
    pub(crate) explaining: bool,
    /// `describe_prepared`: SELECT binds its query, then returns its
    /// columns and no rows.
    pub(crate) describing: bool,
    /// A multi-table DELETE's targets (database, table, alias) while it
    /// binds and joins: a subquery naming one is 1093 (`query::add_source`).
    pub(crate) delete_targets: Vec<(String, String, String)>,
    /// The running statement's progress, read by PROCESSLIST.
    pub(crate) progress: Arc<crate::progress::Progress>,
    /// This session's PROCESSLIST row (also in `Inner::procs`).
    pub(crate) proc: Arc<parking_lot::Mutex<crate::db::Proc>>,
    /// A child session (`Session::child`): shares its parent's connection
    /// id, row-count slot and PROCESSLIST row, which it must not release.
    pub(crate) child: bool,
    /// What the server set (`Session::set_server_info`).
    pub(crate) server: Arc<ServerInfo>,
    /// The server's login (`None`: embedded, a superuser) and the
    /// privileges of its account (`accounts.rs`).
    pub(crate) login: Option<Arc<crate::accounts::Login>>,
    pub(crate) privs: Option<crate::accounts::Privs>,
    /// Moves (`touch`) whenever what a session variable stored here or the
    /// current database reads as may have changed: every SET, USE, a drop
    /// of the current database, a reset, what the server sets. The
    /// server's session tracker skips its comparison while it stands still
    /// (`Session::state_gen`). Invariant, checked by the tracker in debug
    /// builds: between two equal readings no such value changed.
    pub(crate) state_gen: u64,
}

/// What the server tells a session about itself and its connection:
/// read-only system variables (have_ssl, ssl_cert, secure_file_priv, ...;
/// `None` is NULL) and session status values (Ssl_cipher, ...). They win
/// over the built-in answers of `sysvar`, and SHOW VARIABLES / SHOW STATUS
/// list them.
#[derive(Clone, Debug, Default)]
pub struct ServerInfo {
    pub vars: Vec<(String, Option<String>)>,
    pub status: Vec<(String, String)>,
    /// The statements come from a client elsewhere: server-side files
    /// obey `secure_file_priv` (NULL when not among `vars`: none), and
    /// LOAD DATA LOCAL reads only through `Session::execute_local`.
    pub remote: bool,
}

/// Stops a session's running statement from another thread (KILL QUERY).
#[derive(Clone)]
pub struct KillHandle(Arc<std::sync::atomic::AtomicBool>);

impl KillHandle {
    pub fn kill(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

pub(crate) const DEFAULT_SQL_MODE: &str =
    "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION";

impl Session {
    pub(crate) fn new(inner: Arc<Inner>) -> Session {
        let conn_id = inner.next_conn.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let slot = inner.alloc_slot();
        let progress: Arc<crate::progress::Progress> = Arc::default();
        let proc = Arc::new(parking_lot::Mutex::new(crate::db::Proc {
            user: "root".into(),
            host: "localhost".into(),
            db: None,
            command: "Sleep",
            info: String::new(),
            since: std::time::Instant::now(),
            stats: [0; crate::sysvars::STAT_COUNT],
            progress: crate::progress::ProgressHandle(progress.clone()),
        }));
        inner.procs.lock().insert(conn_id, proc.clone());
        let globals = inner.globals.snapshot();
        let mut s = Session {
            inner,
            warnings: Vec::new(),
            db: None,
            txn: None,
            xa: None,
            explicit: false,
            autocommit: true,
            isolation: Isolation::RepeatableRead,
            next_isolation: None,
            strict: true,
            sql_mode: DEFAULT_SQL_MODE.into(),
            lex: crate::lex::LexMode::of_sql_mode(DEFAULT_SQL_MODE),
            time_zone: "SYSTEM".into(),
            user_vars: HashMap::new(),
            sql_prepared: HashMap::new(),
            vars: HashMap::new(),
            last_insert_id: 0,
            conn_id,
            slot,
            savepoints: Vec::new(),
            tables_locked: false,
            now_micros: 0,
            killed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            stmt_text: String::new(),
            globals,
            ctes: Vec::new(),
            outer_scope: Vec::new(),
            outer_row: Vec::new(),
            view_depth: 0,
            view_checks: Vec::new(),
            explaining: false,
            describing: false,
            delete_targets: Vec::new(),
            progress,
            proc,
            child: false,
            server: Arc::default(),
            login: None,
            privs: None,
            state_gen: 0,
        };
        s.apply_globals();
        s
    }

    /// A new or reset session starts from the global values of the
    /// variables it keeps in fields (autocommit, sql_mode, time_zone,
    /// isolation); the others are read from `globals` when not SET.
    fn apply_globals(&mut self) {
        self.touch();
        let g = self.globals.clone();
        let text = |n: &str| g.get(n).map(|v| v.render()).unwrap_or_default();
        self.autocommit = text("autocommit") != "0";
        let mode = text("sql_mode").to_ascii_uppercase();
        self.strict = mode.contains("STRICT_TRANS_TABLES")
            || mode.contains("STRICT_ALL_TABLES")
            || mode.contains("TRADITIONAL");
        self.lex = crate::lex::LexMode::of_sql_mode(&mode);
        self.sql_mode = mode;
        self.time_zone = text("time_zone");
        self.isolation = parse_isolation(&text("transaction_isolation")).unwrap_or(Isolation::RepeatableRead);
    }

    /// Adds `n` to one of this session's status counters (the server
    /// counts bytes, prepared statements, KILL and slow queries here).
    pub fn count(&self, stat: crate::sysvars::Stat, n: u64) {
        if n > 0 {
            self.proc.lock().stats[stat as usize] += n;
        }
    }

    /// A system variable as this session reads it (`@@name`).
    pub fn variable(&self, name: &str) -> Option<Value> {
        self.sysvar(name).ok()
    }

    /// Sets a session value of a SESSION or both-scoped system variable
    /// without running a statement (so no status counter moves): what the
    /// server gives a new session (`max_allowed_packet`, an interactive
    /// client's `wait_timeout`).
    pub fn set_session_variable(&mut self, name: &str, v: Value) -> SqlResult<()> {
        let d = crate::sysvars::def(name).ok_or_else(|| SqlError::unknown_variable(name))?;
        if d.scope == crate::sysvars::Scope::Global {
            return Err(crate::sysvars::global_only(name));
        }
        let (v, _) = crate::sysvars::check_set(d, &v)?;
        self.touch();
        self.vars.insert(d.name.to_string(), v);
        Ok(())
    }

    /// A number that stands still while nothing this session keeps of its
    /// variables (session values, the fields autocommit, sql_mode,
    /// time_zone and isolation, what the server set) or its database
    /// changes. Values computed per statement (`timestamp`,
    /// `last_insert_id`, `warning_count`, ...) and GLOBAL-only variables
    /// move without it.
    pub fn state_gen(&self) -> u64 {
        self.state_gen
    }

    /// Notes that session state may change (see `state_gen`).
    pub(crate) fn touch(&mut self) {
        self.state_gen = self.state_gen.wrapping_add(1);
    }

    /// A session for a query inside this session's statement (a
    /// subquery, derived table, CTE or view): the same connection, row-count
    /// slot, PROCESSLIST row, kill flag, progress, variables, database and
    /// CTEs; no transaction of its own (it runs in the caller's).
    pub(crate) fn child(&self) -> Session {
        Session {
            inner: self.inner.clone(),
            warnings: Vec::new(),
            db: self.db.clone(),
            txn: None,
            xa: None,
            explicit: false,
            autocommit: self.autocommit,
            isolation: self.isolation,
            next_isolation: None,
            strict: self.strict,
            sql_mode: self.sql_mode.clone(),
            lex: self.lex,
            time_zone: self.time_zone.clone(),
            user_vars: self.user_vars.clone(),
            sql_prepared: HashMap::new(),
            vars: self.vars.clone(),
            last_insert_id: self.last_insert_id,
            conn_id: self.conn_id,
            slot: self.slot,
            savepoints: Vec::new(),
            tables_locked: false,
            now_micros: self.now_micros,
            killed: self.killed.clone(),
            stmt_text: String::new(),
            globals: self.globals.clone(),
            ctes: self.ctes.clone(),
            outer_scope: Vec::new(),
            outer_row: Vec::new(),
            view_depth: self.view_depth,
            view_checks: Vec::new(),
            explaining: false,
            describing: false,
            delete_targets: self.delete_targets.clone(),
            progress: self.progress.clone(),
            proc: self.proc.clone(),
            child: true,
            server: self.server.clone(),
            login: self.login.clone(),
            privs: self.privs.clone(),
            state_gen: self.state_gen,
        }
    }

    /// Who is connected, for SHOW PROCESSLIST's User and Host (the server
    /// sets them at login; an embedded session is root@localhost).
    pub fn set_client(&mut self, user: &str, host: &str) {
        let mut p = self.proc.lock();
        p.user = user.to_string();
        p.host = host.to_string();
    }

    /// Sets what the server tells the session (see [`ServerInfo`]); kept
    /// across `reset`.
    pub fn set_server_info(&mut self, info: ServerInfo) {
        self.touch();
        self.server = Arc::new(info);
    }

    /// Runs one statement; a LOAD DATA LOCAL in it reads the client's
    /// file through `local` (what a server gives; see `loaddata.rs`).
    pub fn execute_local(
        &mut self,
        sql: &[u8],
        local: &mut dyn crate::loaddata::LocalInfile,
    ) -> SqlResult<Outcome> {
        let _progress = crate::progress::begin(&self.progress);
        self.set_stmt_text(sql);
        self.proc_start();
        self.count_statement(None);
        crate::lex::set_lex_mode(self.lex_mode());
        let r = crate::lex::parse(sql).and_then(|parsed| {
            self.count_statement(Some(&parsed));
            match parsed {
                Parsed::Special(Special::LoadData(ld)) => {
                    self.start_clock();
                    self.warnings.clear();
                    let _mdl = self.dml_scope();
                    crate::loaddata::run(self, &ld, Some(local))
                }
                p => self.run_parsed_to(&p, local.rows()),
            }
        });
        self.proc_end();
        self.release_mdl_if_done();
        r
    }

    /// Runs one statement.
    pub fn execute(&mut self, sql: &[u8]) -> SqlResult<Outcome> {
        let _progress = crate::progress::begin(&self.progress);
        self.set_stmt_text(sql);
        self.proc_start();
        let r = self.execute_statement(sql);
        self.proc_end();
        self.release_mdl_if_done();
        r
    }

    fn execute_statement(&mut self, sql: &[u8]) -> SqlResult<Outcome> {
        self.count_statement(None);
        crate::lex::set_lex_mode(self.lex_mode());
        let parsed = crate::lex::parse(sql)?;
        self.count_statement(Some(&parsed));
        self.run_parsed(&parsed)
    }

    /// Parses a statement once for [`Session::execute_prepared`]; its `?`
    /// are parameters.
    pub fn prepare(&mut self, sql: &[u8]) -> SqlResult<crate::prepared::PreparedStatement> {
        crate::lex::set_lex_mode(self.lex_mode());
        crate::prepared::prepare(sql)
    }

    /// Runs a prepared statement with `params` as the values of its `?`,
    /// in order (error 1210 when there are too few).
    pub fn execute_prepared(
        &mut self,
        p: &crate::prepared::PreparedStatement,
        params: &[Value],
    ) -> SqlResult<Outcome> {
        let _progress = crate::progress::begin(&self.progress);
        let _params = crate::prepared::bind_params(params);
        self.stmt_text.clone_from(&p.text);
        self.proc_start();
        self.count_statement(None);
        self.count_statement(Some(&p.parsed));
        let r = self.run_parsed(&p.parsed);
        self.proc_end();
        self.release_mdl_if_done();
        r
    }

    /// Runs `p` with `params` inside the statement running now (an SQL
    /// EXECUTE: its processlist entry, counters and metadata locks are the
    /// EXECUTE's).
    pub(crate) fn run_prepared_inline(
        &mut self,
        p: &crate::prepared::PreparedStatement,
        params: &[Value],
    ) -> SqlResult<Outcome> {
        let _params = crate::prepared::bind_params(params);
        self.run_parsed(&p.parsed)
    }

    /// The columns a prepared statement's rows will have, without running
    /// it (its parameters NULL): a query is bound, not read (uncorrelated
    /// subqueries and derived tables in it do run); a SHOW runs; other
    /// statements have none. What a server tells a client at PREPARE.
    pub fn describe_prepared(
        &mut self,
        p: &crate::prepared::PreparedStatement,
    ) -> SqlResult<Vec<ColumnMeta>> {
        if self.login.is_some() {
            self.refresh_privs();
        }
        let nulls = vec![Value::Null; p.param_count()];
        let _params = crate::prepared::bind_params(&nulls);
        crate::temporal::set_session_tz(self.tz());
        match &p.parsed {
            Parsed::Std(st, _) => match st.as_ref() {
                ast::Statement::Query(q) => {
                    self.describing = true;
                    let r = self.in_txn(false, |s, txn| crate::query::select(s, txn, q, false));
                    self.describing = false;
                    Ok(r?.columns)
                }
                _ => Ok(Vec::new()),
            },
            Parsed::Special(sp @ Special::Show(_)) => match self.special(sp.clone())? {
                Outcome::Rows(rs) => Ok(rs.columns),
                Outcome::Done { .. } => Ok(Vec::new()),
            },
            _ => Ok(Vec::new()),
        }
    }

    /// The engine transaction options of an SQL transaction: writes and
    /// locking reads act on the newest committed row, as InnoDB's do at
    /// every level, so a concurrent commit never fails an UPDATE with a
    /// write conflict (plain SELECTs still read the snapshot).
    pub(crate) fn txn_options(&self, iso: Isolation) -> TxnOptions {
        TxnOptions {
            isolation: iso,
            lock_timeout: self.lock_timeout(),
            writes_see_latest: true,
            client_id: self.conn_id,
        }
    }

    /// Counts a statement: Questions (`None`, before parsing, so a syntax
    /// error counts too, as in MariaDB), then its Com_* kind.
    /// The running statement's text, into the buffer the last one used
    /// (no allocation per statement once it is large enough; a buffer a
    /// large statement grew is not kept for the next).
    fn set_stmt_text(&mut self, sql: &[u8]) {
        if self.stmt_text.capacity() > 64 << 10 {
            self.stmt_text = String::new();
        }
        self.stmt_text.clear();
        self.stmt_text.push_str(String::from_utf8_lossy(sql).trim());
    }

    fn count_statement(&self, parsed: Option<&Parsed>) {
        let stat = match parsed {
            None => Some(crate::sysvars::Stat::Questions),
            Some(p) => crate::sysvars::stat_of(p),
        };
        if let Some(st) = stat {
            self.count(st, 1);
        }
    }

    /// PROCESSLIST: a statement starts (Query, its text).
    ///
    /// The statement becomes killable: a KILL left over from the previous
    /// statement (it ended between the KILL's look at it and the flag's
    /// store) is dropped before the statement shows in the processlist,
    /// and the flag is the thread's interrupt flag, so a row-lock wait
    /// (`fractaldb::set_thread_interrupt`), a metadata-lock wait
    /// (`mdl.rs`) and SLEEP() end on KILL within `INTERRUPT_POLL`.
    fn proc_start(&self) {
        self.killed.store(false, std::sync::atomic::Ordering::SeqCst);
        fractaldb::set_thread_interrupt(Some(self.killed.clone()));
        let mut p = self.proc.lock();
        p.command = "Query";
        p.info.clone_from(&self.stmt_text);
        p.db.clone_from(&self.db);
        p.since = std::time::Instant::now();
    }

    /// PROCESSLIST: back to Sleep.
    fn proc_end(&self) {
        // A KILL that came too late to stop the statement is not kept for
        // the next one (MariaDB resets `thd->killed` likewise).
        fractaldb::set_thread_interrupt(None);
        self.killed.store(false, std::sync::atomic::Ordering::SeqCst);
        let mut p = self.proc.lock();
        p.command = "Sleep";
        p.info.clear();
        p.db.clone_from(&self.db);
        p.since = std::time::Instant::now();
    }

    /// A statement starts: its NOW() (the clock, or `SET timestamp`'s
    /// fixed instant, as MySQL), and the time zone its TIMESTAMP values
    /// are converted through (`temporal::set_session_tz`, a thread-local
    /// the row and key codecs read).
    fn start_clock(&mut self) {
        let fixed = self.vars.get("timestamp").and_then(|v| v.to_f64()).filter(|f| *f > 0.0);
        self.now_micros = match fixed {
            Some(f) => (f * 1e6).round() as i64,
            None => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64),
        };
        crate::temporal::set_session_tz(self.tz());
    }

    /// The session's `time_zone` (validated when SET, so it parses).
    pub(crate) fn tz(&self) -> crate::temporal::TimeZone {
        crate::temporal::parse_tz(&self.time_zone).unwrap_or(crate::temporal::TimeZone::System)
    }

    /// Takes the statement by reference: a prepared statement runs its parsed
    /// tree again and again, and a deep copy of it cost more than the point
    /// read it asks for.
    fn run_parsed(&mut self, parsed: &Parsed) -> SqlResult<Outcome> {
        self.run_parsed_to(parsed, None)
    }

    /// `run_parsed`, a plain SELECT's rows going to `sink` if given.
    fn run_parsed_to(&mut self, parsed: &Parsed, sink: Option<&mut dyn RowSink>) -> SqlResult<Outcome> {
        self.start_clock();
        // SHOW WARNINGS reads the previous statement's warnings.
        let keep_warnings = matches!(parsed, Parsed::Special(Special::Show(s)) if matches!(s.kind, crate::lex::ShowKind::Warnings
                | crate::lex::ShowKind::Errors
                | crate::lex::ShowKind::WarningCount
                | crate::lex::ShowKind::ErrorCount));
        if !keep_warnings {
            self.warnings.clear();
        }
        if self.login.is_some() {
            self.refresh_privs();
        }
        crate::accounts::set_current(self.login.clone());
        let r = match parsed {
            Parsed::Empty => Err(SqlError::empty_query()),
            Parsed::Special(s) => self.special(s.clone()),
            Parsed::Std(stmt, flags) => self.statement(stmt, flags, sink),
        };
        // `sql_notes = 0` (mysqldump's files set it): notes are not
        // recorded, as in MariaDB; warnings and errors still are.
        if !keep_warnings && self.session_var("sql_notes").and_then(|v| v.truth()) == Some(false) {
            self.warnings.retain(|w| w.level != "Note");
        }
        r
    }

    /// Runs a script: every statement in order, stopping at the first
    /// error (as `mariadb < file` does without `--force`).
    pub fn execute_script(&mut self, script: &[u8]) -> SqlResult<Vec<Outcome>> {
        let mut out = Vec::new();
        crate::lex::set_lex_mode(self.lex_mode());
        for stmt in crate::lex::split_script(script) {
            out.push(self.execute(&stmt)?);
        }
        Ok(out)
    }

    /// Whether the session's sql_mode holds `flag` (upper case).
    pub(crate) fn sql_mode_has(&self, flag: &str) -> bool {
        self.sql_mode.split(',').any(|f| f == flag)
    }

    /// How the session's sql_mode has text read (NO_BACKSLASH_ESCAPES,
    /// ANSI_QUOTES): set on the thread before every parse and split.
    pub fn lex_mode(&self) -> crate::lex::LexMode {
        debug_assert_eq!(self.lex, crate::lex::LexMode::of_sql_mode(&self.sql_mode));
        self.lex
    }

    /// The warnings of the last statement.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The current database (USE), if any.
    pub fn current_db(&self) -> Option<&str> {
        self.db.as_deref()
    }

    /// True inside BEGIN ... COMMIT (or with autocommit off after a statement).
    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    /// Reads this session's running statement's progress from another thread.
    pub fn progress_handle(&self) -> crate::progress::ProgressHandle {
        crate::progress::ProgressHandle(self.progress.clone())
    }

    /// True while each statement commits on its own (`@@autocommit`); the
    /// server reports it in every OK packet's status flags.
    pub fn autocommit(&self) -> bool {
        self.autocommit
    }

    /// Returns the session to a fresh connection's state, keeping its
    /// connection id, row-count slot and kill handle (the server's
    /// COM_RESET_CONNECTION and COM_CHANGE_USER): the open transaction is
    /// rolled back, variables, the current database and warnings go.
    pub fn reset(&mut self) {
        crate::xa::session_ends(self);
        if let Some(t) = self.txn.take() {
            let _ = t.abort();
        }
        self.release_mdl_if_done();
        self.savepoints.clear();
        self.tables_locked = false;
        self.explicit = false;
        self.warnings.clear();
        self.db = None;
        self.next_isolation = None;
        self.globals = self.inner.globals.snapshot();
        self.apply_globals();
        self.user_vars.clear();
        self.sql_prepared.clear();
        self.vars.clear();
        self.last_insert_id = 0;
        self.killed.store(false, std::sync::atomic::Ordering::SeqCst);
        self.stmt_text.clear();
    }

    /// A handle that interrupts this session's statements (error 1317).
    pub fn kill_handle(&self) -> KillHandle {
        KillHandle(self.killed.clone())
    }

    /// Fails with 1317 once the statement was killed.
    pub(crate) fn check_killed(&self) -> SqlResult<()> {
        if self.killed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Err(SqlError::interrupted());
        }
        Ok(())
    }

    pub fn connection_id(&self) -> u64 {
        self.conn_id
    }

    fn statement(
        &mut self,
        stmt: &ast::Statement,
        flags: &crate::lex::Flags,
        sink: Option<&mut dyn RowSink>,
    ) -> SqlResult<Outcome> {
        use ast::Statement as S;
        if self.login.is_some() {
            crate::accounts::check_statement(self, stmt)?;
        }
        match stmt {
            S::Query(q) => {
                let locking = flags.lock_in_share_mode || !q.locks.is_empty();
                let _mdl = locking.then(|| self.dml_scope());
                self.in_txn(false, |s, txn| {
                    crate::query::select_to(s, txn, q, locking, sink).map(Outcome::Rows)
                })
            }
            S::Insert(ins) => {
                let _mdl = self.dml_scope();
                self.in_txn(true, |s, txn| crate::dml::insert(s, txn, ins))
            }
            S::Update(up) => {
                let _mdl = self.dml_scope();
                self.in_txn(true, |s, txn| crate::dml::update(s, txn, up, flags.ignore))
            }
            S::Delete(del) => {
                let _mdl = self.dml_scope();
                self.in_txn(true, |s, txn| crate::dml::delete(s, txn, del, flags.ignore))
            }
            S::StartTransaction { modes, .. } => {
                self.commit_open()?;
                // START TRANSACTION releases table locks (MariaDB).
                self.tables_locked = false;
                let mut iso = self.next_isolation.take().unwrap_or(self.isolation);
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        iso = isolation_of(l);
                    }
                }
                self.txn = Some(self.inner.env.begin_with(self.txn_options(iso))?);
                self.explicit = true;
                Ok(Outcome::done(0))
            }
            S::Commit { .. } => {
                self.commit_open()?;
                Ok(Outcome::done(0))
            }
            S::Rollback { savepoint: Some(name), .. } => {
                let name = name.value.to_ascii_lowercase();
                let Some(pos) = self.savepoints.iter().rposition(|(n, _)| *n == name) else {
                    return Err(SqlError::no_savepoint(&name));
                };
                let sp = self.savepoints[pos].1;
                self.savepoints.truncate(pos + 1);
                let txn = self.txn.as_ref().ok_or_else(|| SqlError::no_savepoint(&name))?;
                txn.rollback_to(sp)?;
                // The savepoint stays usable, as in MySQL.
                let again = txn.savepoint()?;
                self.savepoints[pos].1 = again;
                Ok(Outcome::done(0))
            }
            S::Rollback { .. } => {
                crate::xa::check_no_xa(self)?;
                self.savepoints.clear();
                if let Some(t) = self.txn.take() {
                    t.abort()?;
                }
                self.explicit = false;
                Ok(Outcome::done(0))
            }
            S::Savepoint { name } => {
                if self.txn.is_none() {
                    // Outside a transaction MySQL accepts and forgets it.
                    if self.autocommit {
                        return Ok(Outcome::done(0));
                    }
                    self.begin_implicit()?;
                }
                let name = name.value.to_ascii_lowercase();
                self.savepoints.retain(|(n, _)| *n != name);
                let sp = self.txn.as_ref().expect("open").savepoint()?;
                self.savepoints.push((name, sp));
                Ok(Outcome::done(0))
            }
            S::ReleaseSavepoint { name } => {
                let name = name.value.to_ascii_lowercase();
                let Some(pos) = self.savepoints.iter().rposition(|(n, _)| *n == name) else {
                    return Err(SqlError::no_savepoint(&name));
                };
                self.savepoints.truncate(pos);
                Ok(Outcome::done(0))
            }
            S::Use(u) => {
                let name = match u {
                    ast::Use::Database(n)
                    | ast::Use::Schema(n)
                    | ast::Use::Object(n)
                    | ast::Use::Catalog(n) => crate::expr::ident_name(n).join("."),
                    _ => return Err(SqlError::syntax("'USE'")),
                };
                self.touch();
                if crate::infoschema::is_schema(&name) {
                    self.db = Some(crate::infoschema::SCHEMA.to_string());
                    return Ok(Outcome::done(0));
                }
                if !self.inner.schema.read().dbs.contains_key(&name) {
                    return Err(SqlError::unknown_db(&name));
                }
                self.db = Some(name);
                Ok(Outcome::done(0))
            }
            S::Set(set) => self.set(set),
            S::Drop { object_type: ast::ObjectType::View, if_exists, names, .. } => {
                self.commit_open()?;
                crate::views::drop(self, names, *if_exists)
            }
            S::CreateView(cv) => {
                self.commit_open()?;
                crate::views::create(self, cv, &flags.check_option)
            }
            S::CreateDatabase { .. }
            | S::CreateSchema { .. }
            | S::CreateTable(_)
            | S::Drop { .. }
            | S::Truncate(_)
            | S::CreateIndex(_)
            | S::AlterTable(_)
            | S::RenameTable(_) => {
                self.commit_open()?;
                crate::ddl::execute(self, stmt, flags)
            }
            S::CreateTrigger(_) => Err(SqlError::unsupported("triggers")),
            S::CreateProcedure { .. } | S::CreateFunction(_) => Err(SqlError::unsupported("stored routines")),
            S::Explain { .. } | S::ExplainTable { .. } => crate::explain::explain(self, stmt),
            other => Err(SqlError::unsupported(first_words(&other.to_string()))),
        }
    }

    fn special(&mut self, s: Special) -> SqlResult<Outcome> {
        match s {
            Special::Show(show) => crate::show::show(self, &show),
            Special::LoadData(ld) => {
                let _mdl = self.dml_scope();
                crate::loaddata::run(self, &ld, None)
            }
            Special::FastInsert(fi) => {
                let _mdl = self.dml_scope();
                self.in_txn(true, |s, txn| crate::dml::insert_fast(s, txn, fi))
            }
            Special::Begin { .. } => {
                // Every transaction reads one snapshot from its start, so
                // WITH CONSISTENT SNAPSHOT asks for what BEGIN gives.
                self.commit_open()?;
                let iso = self.next_isolation.take().unwrap_or(self.isolation);
                self.txn = Some(self.inner.env.begin_with(self.txn_options(iso))?);
                self.explicit = true;
                Ok(Outcome::done(0))
            }
            Special::AlterKeys { db, table, enable } => {
                let db = db.or_else(|| self.db.clone()).ok_or_else(SqlError::no_db)?;
                self.check_table("ALTER", &db, &table)?;
                crate::bulkload::alter_keys(self, &db, &table, enable)
            }
            Special::AlterTableOptions { db, table, options } => {
                let db = db.or_else(|| self.db.clone()).ok_or_else(SqlError::no_db)?;
                self.check_table("ALTER", &db, &table)?;
                self.commit_open()?;
                crate::alter::alter_options(self, &db, &table, &options)
            }
            Special::Maintenance { op, tables, persistent } => {
                // An implicit commit, as in MariaDB.
                self.commit_open()?;
                crate::maint::run(self, op, tables, persistent)
            }
            Special::LockTables(targets) => {
                for t in targets {
                    let db = t.table.db.clone().or_else(|| self.db.clone()).ok_or_else(SqlError::no_db)?;
                    self.check_db(Some("LOCK TABLES"), &db)?;
                    self.check_table("SELECT", &db, &t.table.name)?;
                    // A view may be locked too (mariadb-dump locks every
                    // table and view it dumps).
                    if let Err(e) = self.inner.table(&db, &t.table.name) {
                        if !crate::views::exists(self, &db, &t.table.name)? {
                            return Err(e);
                        }
                    }
                }
                // Row locks and snapshots already isolate each statement;
                // table locks are accepted so dumps load (see ARCHITECTURE.md).
                self.commit_open()?;
                self.tables_locked = true;
                Ok(Outcome::done(0))
            }
            Special::SetNames { charset, collation, character_set } => {
                self.set_names(charset.as_deref(), collation.as_deref(), character_set)?;
                Ok(Outcome::done(0))
            }
            Special::UnlockTables => {
                // Without LOCK TABLES there is nothing to release and the
                // open transaction (its snapshot, its savepoints) goes on.
                if std::mem::take(&mut self.tables_locked) {
                    self.commit_open()?;
                }
                Ok(Outcome::done(0))
            }
            Special::FlushStatus => {
                self.check_global(&["RELOAD"])?;
                // As MariaDB: the session's counts are added to the global
                // total, then zeroed, so GLOBAL STATUS never goes back. Both
                // under the procs lock, as at session end, so GLOBAL STATUS
                // never sees them twice or not at all.
                let procs = self.inner.procs.lock();
                let mut p = self.proc.lock();
                let mut ended = self.inner.ended_stats.lock();
                for (e, s) in ended.iter_mut().zip(p.stats.iter_mut()) {
                    *e += std::mem::take(s);
                }
                drop((ended, p, procs));
                Ok(Outcome::done(0))
            }
            Special::Account(text) => crate::accounts::execute(self, &text),
            Special::Do(exprs) => {
                for e in &exprs {
                    self.eval_const(e)?;
                }
                Ok(Outcome::done(0))
            }
            Special::Xa(x) => crate::xa::execute(self, x),
            Special::Prepare { name, text } => crate::sqlprepare::prepare(self, &name, &text),
            Special::Execute { name, using } => crate::sqlprepare::execute(self, &name, &using),
            Special::ExecuteImmediate { text, using } => {
                crate::sqlprepare::execute_immediate(self, &text, &using)
            }
            Special::Deallocate(name) => crate::sqlprepare::deallocate(self, &name),
            Special::Unsupported(what) => Err(SqlError::unsupported(what)),
        }
    }

    fn set(&mut self, set: &ast::Set) -> SqlResult<Outcome> {
        self.touch();
        match set {
            ast::Set::SingleAssignment { variable, values, scope, .. } => {
                let name = crate::expr::ident_name(variable).join(".");
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                self.set_var(&name, values.first().ok_or_else(|| SqlError::syntax("''"))?, global)?;
            }
            ast::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let name = crate::expr::ident_name(&a.name).join(".");
                    let global = matches!(a.scope, Some(ast::ContextModifier::Global));
                    self.set_var(&name, &a.value, global)?;
                }
            }
            ast::Set::ParenthesizedAssignments { variables, values } => {
                for (v, e) in variables.iter().zip(values) {
                    self.set_var(&crate::expr::ident_name(v).join("."), e, false)?;
                }
            }
            ast::Set::SetNames { .. } | ast::Set::SetNamesDefault {} => {}
            ast::Set::SetTimeZone { value, .. } => {
                let v = self.eval_const(value)?;
                self.time_zone = crate::sysvars::check_time_zone(&v)?.name();
                crate::temporal::set_session_tz(self.tz());
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        if *session {
                            self.isolation = isolation_of(l);
                        } else {
                            self.next_isolation = Some(isolation_of(l));
                        }
                    }
                }
            }
            _ => return Err(SqlError::unsupported("this SET")),
        }
        Ok(Outcome::done(0))
    }

    /// SET NAMES / SET CHARACTER SET, as MariaDB: NAMES sets the client,
    /// connection and results character sets to `charset` and
    /// collation_connection to `collation` or its default; CHARACTER SET
    /// sets client and results, and the connection to the database's.
    /// DEFAULT is the global character_set_client. Unknown names are 1115
    /// and 1273, a collation of another charset 1253; a charset clients
    /// cannot send (none of ours) would be 1231.
    fn set_names(
        &mut self,
        charset: Option<&str>,
        collation: Option<&str>,
        character_set: bool,
    ) -> SqlResult<()> {
        use crate::types::{Charset, Collation};
        self.touch();
        let unknown_cs = |n: &str| SqlError::new(1115, "42000", format!("Unknown character set: '{n}'"));
        let cs = match charset {
            Some(n) => Charset::by_name(&n.to_ascii_lowercase()).ok_or_else(|| unknown_cs(n))?,
            None => {
                let g = self.inner.globals.get("character_set_client").map(|v| v.render());
                g.as_deref().and_then(Charset::by_name).unwrap_or(Charset::Utf8mb4)
            }
        };
        let coll = match collation {
            Some(n) => {
                let c = Collation::by_name(&n.to_ascii_lowercase())
                    .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{n}'")))?;
                if c.charset() != cs {
                    return Err(SqlError::new(
                        1253,
                        "42000",
                        format!("COLLATION '{}' is not valid for CHARACTER SET '{}'", c.name(), cs.name()),
                    ));
                }
                c
            }
            None => cs.default_collation(),
        };
        let (conn_cs, conn_coll) = if character_set {
            let db = self.variable("character_set_database").map(|v| v.render()).unwrap_or_default();
            let dbc = self.variable("collation_database").map(|v| v.render()).unwrap_or_default();
            (db, dbc)
        } else {
            (cs.name().to_string(), coll.name().to_string())
        };
        for (k, v) in [
            ("character_set_client", cs.name().to_string()),
            ("character_set_results", cs.name().to_string()),
            ("character_set_connection", conn_cs),
            ("collation_connection", conn_coll),
        ] {
            self.vars.insert(k.to_string(), Value::str(v));
        }
        Ok(())
    }

    fn set_var(&mut self, name: &str, value: &ast::Expr, global: bool) -> SqlResult<()> {
        let is_default = matches!(value, ast::Expr::Identifier(id)
            if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT"));
        let v = self.eval_const(value)?;
        if let Some(u) = name.strip_prefix('@').filter(|n| !n.starts_with('@')) {
            self.user_vars.insert(u.to_ascii_lowercase(), v);
            return Ok(());
        }
        let lower = name.trim_start_matches("@@").to_ascii_lowercase();
        let (scope, n) = split_scope(&lower);
        let global = global || scope == Some(true);
        let n = n.to_string();
        let mut v = v;
        if let Some(d) = crate::sysvars::def(&n) {
            use crate::sysvars::{self as sv, Scope};
            if !d.dynamic {
                return Err(SqlError::read_only_var(&n));
            }
            if global && d.scope == Scope::Session {
                return Err(sv::session_only(&n));
            }
            if !global && d.scope == Scope::Global {
                return Err(sv::global_only(&n));
            }
            // A connection's packet limits are fixed when it connects (the
            // server reads the global then): MariaDB's session copy is
            // read-only.
            if !global && d.name == "max_allowed_packet" {
                return Err(SqlError::new(
                    1621,
                    "HY000",
                    format!("SESSION variable '{n}' is read-only. Use SET GLOBAL to assign the value"),
                ));
            }
            if is_default {
                // SET x = DEFAULT: the session takes the global value, the
                // global the built-in default.
                v = if d.name == "timestamp" {
                    // The real clock again.
                    Value::Int(0)
                } else if global {
                    sv::parse_text(d, d.default).map_err(SqlError::internal)?
                } else {
                    self.inner.globals.get(d.name).unwrap_or(Value::Null)
                };
            }
            let (checked, warning) = sv::check_set(d, &v)?;
            if matches!(d.name, "transaction_isolation" | "tx_isolation") {
                let text = checked.render().to_ascii_uppercase().replace(' ', "-");
                if parse_isolation(&text).is_none() {
                    return Err(SqlError::wrong_value_for_var(&n, &checked.render()));
                }
                v = Value::str(text);
            } else {
                v = checked;
            }
            self.warnings.extend(warning);
            if global {
                if d.name == "sql_mode" {
                    v = Value::str(v.render().to_ascii_uppercase());
                }
                self.inner.globals.set(d, v);
                return Ok(());
            }
        }
        let as_bool = |v: &Value| -> SqlResult<bool> {
            match v {
                Value::Str(s) => match String::from_utf8_lossy(s).to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => Ok(true),
                    "OFF" | "FALSE" | "0" => Ok(false),
                    _ => Err(SqlError::wrong_value_for_var(&n, &v.render())),
                },
                other => Ok(other.truth().unwrap_or(false)),
            }
        };
        match n.as_str() {
            // Takes a hot backup into the folder (backup.rs).
            "tokudb_backup_dir" => return self.set_backup_dir(&v),
            "autocommit" => {
                let on = as_bool(&v)?;
                if on && !self.autocommit {
                    self.commit_open()?;
                }
                self.autocommit = on;
            }
            "sql_mode" => {
                let mode = v.render().to_ascii_uppercase();
                self.strict = mode.contains("STRICT_TRANS_TABLES")
                    || mode.contains("STRICT_ALL_TABLES")
                    || mode.contains("TRADITIONAL");
                self.lex = crate::lex::LexMode::of_sql_mode(&mode);
                self.sql_mode = mode;
            }
            "time_zone" => {
                self.time_zone = v.render();
                crate::temporal::set_session_tz(self.tz());
            }
            // A fixed clock for NOW() and TIMESTAMP defaults; 0 (DEFAULT)
            // is the real clock again.
            "timestamp" => {
                if v.to_f64().is_some_and(|f| f > 0.0) {
                    self.vars.insert(n, v);
                } else {
                    self.vars.remove(&n);
                }
            }
            "transaction_isolation" | "tx_isolation" => {
                self.isolation = parse_isolation(&v.render().to_ascii_uppercase().replace(' ', "-"))
                    .ok_or_else(|| SqlError::wrong_value_for_var(&n, &v.render()))?;
            }
            "names"
            | "character_set_client"
            | "character_set_results"
            | "character_set_connection"
            | "collation_connection"
            | "foreign_key_checks"
            | "unique_checks"
            | "sql_notes"
            | "note_verbosity"
            | "sql_quote_show_create"
            | "net_write_timeout"
            | "net_read_timeout"
            | "wait_timeout"
            | "interactive_timeout"
            | "max_allowed_packet"
            | "sql_log_bin"
            | "sql_safe_updates"
            | "sql_auto_is_null"
            | "group_concat_max_len"
            | "tmp_memory_table_size"
            | "tmp_table_size"
            | "max_heap_table_size"
            | "max_recursive_iterations"
            | "sql_select_limit"
            | "lock_wait_timeout"
            | "innodb_lock_wait_timeout"
            | "tokudb_lock_timeout"
            | "character_set_server"
            | "collation_server"
            | "optimizer_switch"
            | "long_query_time"
            | "profiling"
            | "old_passwords"
            | "storage_engine"
            | "default_storage_engine"
            | "insert_id"
            | "big_tables"
            | "sql_big_selects"
            | "check_constraint_checks"
            | "enforce_storage_engine"
            | "session_track_schema"
            | "session_track_system_variables"
            | "session_track_state_change"
            | "transaction_read_only"
            | "tx_read_only"
            | "time_zone_name" => {
                self.vars.insert(n, v);
            }
            _ if crate::sysvars::def(&n).is_some() => {
                self.vars.insert(n, v);
            }
            _ => return Err(SqlError::unknown_variable(&n)),
        }
        Ok(())
    }

    /// Evaluates an expression that reads no table.
    pub(crate) fn eval_const(&mut self, e: &ast::Expr) -> SqlResult<Value> {
        // A bare word (SET autocommit = ON) is a string.
        if let ast::Expr::Identifier(id) = e {
            if id.quote_style.is_none() && !id.value.starts_with('@') {
                return Ok(Value::str(&id.value));
            }
        }
        let sysvar = |n: &str| self.sysvar(n);
        let mut no_sub =
            |_q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> { Err(SqlError::unsupported("subqueries here")) };
        let (x, _) = crate::bind::Binder::plain(&[], &sysvar, &mut no_sub, "field list").bind(e)?;
        let mut w = Vec::new();
        let v = x.eval(&[], &mut self.eval_ctx(&mut w))?;
        self.warnings.extend(w);
        Ok(v)
    }

    pub(crate) fn eval_ctx<'a>(&'a self, warnings: &'a mut Vec<Warning>) -> EvalCtx<'a> {
        EvalCtx {
            now_micros: self.now_micros,
            time_zone: &self.time_zone,
            warnings,
            database: self.db.as_deref(),
            last_insert_id: self.last_insert_id,
            connection_id: self.conn_id,
            user_vars: &self.user_vars,
            insert_row: None,
            strict_dml: false,
            outer: &self.outer_row,
            sub: None,
        }
    }

    /// Reads system variable `name` (`@@name`, `@@session.name`,
    /// `@@global.name`): GLOBAL-only variables and `@@global.` read the
    /// live global value; a session reads what it SET, else the global
    /// value as it was when the session started.
    pub(crate) fn sysvar(&self, name: &str) -> SqlResult<Value> {
        use crate::sysvars::{self as sv, Scope};
        let lower = name.to_ascii_lowercase();
        let (scope, n) = split_scope(&lower);
        let d = sv::def(n);
        // What the server set (have_ssl, ssl_cert, secure_file_priv, ...)
        // is the truth about this server: it wins over the table's default.
        if scope != Some(false) || d.is_none_or(|d| d.scope != Scope::Global) {
            if let Some((_, v)) = self.server.vars.iter().find(|(k, _)| k == n) {
                return Ok(v.as_deref().map(Value::str).unwrap_or(Value::Null));
            }
        }
        match (scope, d) {
            (Some(true), None) => return Err(SqlError::unknown_variable(n)),
            (Some(true), Some(d)) if d.scope == Scope::Session => {
                return Err(sv::wrong_scope_read(n, "SESSION"))
            }
            (Some(false), Some(d)) if d.scope == Scope::Global => {
                return Err(sv::wrong_scope_read(n, "GLOBAL"))
            }
            (Some(true), Some(d)) | (None, Some(d)) if d.scope == Scope::Global || scope == Some(true) => {
                return Ok(self.inner.globals.get(d.name).unwrap_or(Value::Null));
            }
            _ => {}
        }
        if n == "timestamp" {
            // The statement's clock (SET timestamp's value when fixed), as
            // MariaDB's number of seconds with 6 digits.
            return Ok(Value::Decimal(bigdecimal::BigDecimal::new(self.now_micros.into(), 6)));
        }
        if let Some(v) = self.vars.get(n) {
            return Ok(v.clone());
        }
        let iso = |i: Isolation| match i {
            Isolation::ReadUncommitted => "READ-UNCOMMITTED",
            Isolation::ReadCommitted => "READ-COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE-READ",
            Isolation::Serializable => "SERIALIZABLE",
        };
        Ok(match n {
            "autocommit" => Value::Int(self.autocommit as i64),
            "sql_mode" => Value::str(&self.sql_mode),
            "time_zone" => Value::str(&self.time_zone),
            "transaction_isolation" | "tx_isolation" => Value::str(iso(self.isolation)),
            "last_insert_id" | "identity" => Value::UInt(self.last_insert_id),
            "warning_count" => Value::Int(self.warnings.iter().filter(|w| w.level != "Note").count() as i64),
            "error_count" => Value::Int(self.warnings.iter().filter(|w| w.level == "Error").count() as i64),
            _ => match self.globals.get(n) {
                Some(v) => v.clone(),
                None => return Err(SqlError::unknown_variable(n)),
            },
        })
    }

    /// How long a row lock request waits: `innodb_lock_wait_timeout`
    /// (seconds) when this session SET it, else `tokudb_lock_timeout`
    /// (milliseconds, as TokuDB's; default 4000).
    fn lock_timeout(&self) -> Option<std::time::Duration> {
        if let Some(s) = self.vars.get("innodb_lock_wait_timeout").and_then(|v| v.to_f64()) {
            return Some(std::time::Duration::from_secs_f64(s.clamp(0.0, 31_536_000.0)));
        }
        let ms = self.session_var("tokudb_lock_timeout")?.to_f64()?;
        Some(std::time::Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 31_536_000.0)))
    }

    /// A session-scoped variable the engine layer reads on every statement
    /// (`name` lower case, a session variable of `sysvars::DEFS`): what this
    /// session SET, else the global value it started with. The cheap path
    /// beside [`Session::sysvar`], which parses `@@scope.` names.
    pub(crate) fn session_var(&self, name: &'static str) -> Option<&Value> {
        debug_assert!(crate::sysvars::def(name).is_some_and(|d| d.scope != crate::sysvars::Scope::Global));
        self.vars.get(name).or_else(|| self.globals.get(name))
    }

    /// The codec of a new table that names no ROW_FORMAT (or a MySQL one
    /// that leaves it open): `tokudb_row_format`'s.
    pub(crate) fn row_format_default(&self) -> fractaldb::Codec {
        let v = self.session_var("tokudb_row_format").map(|v| v.render());
        crate::rowformat::var_codec(v.as_deref().unwrap_or(crate::rowformat::VAR_DEFAULT))
    }

    /// A block-size variable of new tables (`rowformat.rs`), within the
    /// engine's bounds by its definition (`sysvars.rs`); 0, the engine's
    /// default, if it has no value.
    pub(crate) fn block_size_var(&self, name: &'static str) -> u32 {
        self.session_var(name).and_then(|v| v.to_i64()).and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
    }

    fn begin_implicit(&mut self) -> SqlResult<()> {
        let iso = self.next_isolation.take().unwrap_or(self.isolation);
        self.txn = Some(self.inner.env.begin_with(self.txn_options(iso))?);
        Ok(())
    }

    /// Commits the open transaction, if any.
    pub(crate) fn commit_open(&mut self) -> SqlResult<()> {
        crate::xa::check_no_xa(self)?;
        self.savepoints.clear();
        self.explicit = false;
        let r = match self.txn.take() {
            Some(t) => t.commit(),
            None => Ok(()),
        };
        self.release_mdl_if_done();
        Ok(r?)
    }

    /// The connection's metadata locks go when its transaction has ended
    /// (`mdl.rs`); a nested session's statement leaves them to its outer
    /// one.
    fn release_mdl_if_done(&self) {
        if self.txn.is_none() && !self.child {
            self.inner.mdl.release(self.conn_id);
        }
    }

    /// Until the guard drops, the tables this statement resolves are
    /// locked shared for this connection (`mdl.rs`).
    pub(crate) fn dml_scope(&self) -> crate::mdl::Scope {
        crate::mdl::dml_scope(self.conn_id, self.mdl_timeout())
    }

    /// `lock_wait_timeout`: how long a metadata lock request waits.
    pub(crate) fn mdl_timeout(&self) -> std::time::Duration {
        let secs = self.session_var("lock_wait_timeout").and_then(|v| v.to_f64()).unwrap_or(86400.0);
        std::time::Duration::from_secs_f64(secs.clamp(0.0, 31_536_000.0))
    }

    /// Takes `db`.`table` exclusively for this connection's DDL, waiting at
    /// most `lock_wait_timeout` (1205).
    pub(crate) fn mdl_exclusive(&self, db: &str, table: &str) -> SqlResult<crate::mdl::Exclusive> {
        self.inner.mdl.exclusive(self.conn_id, db, table, Some(self.mdl_timeout()))
    }

    /// Runs `f` in the session's transaction (opening one if none is open),
    /// atomically: a failure undoes just this statement. Without an open
    /// transaction and with autocommit, the statement's own transaction
    /// commits at its end.
    pub(crate) fn in_txn<T>(
        &mut self,
        writes: bool,
        f: impl FnOnce(&mut Session, &Txn) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let _ = writes;
        crate::xa::check_statement_allowed(self)?;
        let own = self.txn.is_none() && self.autocommit;
        if self.txn.is_none() {
            self.begin_implicit()?;
        }
        let txn = self.txn.take().expect("open");
        if own {
            let r = f(self, &txn);
            match r {
                Ok(v) => {
                    txn.commit()?;
                    Ok(v)
                }
                Err(e) => {
                    let _ = txn.abort();
                    Err(e)
                }
            }
        } else {
            let sp = txn.savepoint();
            let r = match sp {
                Ok(sp) => {
                    let r = f(self, &txn);
                    match &r {
                        Ok(_) => {
                            let _ = txn.release(sp);
                        }
                        Err(e) => {
                            // A deadlock victim loses its whole transaction, as in InnoDB.
                            if e.code == 1213 {
                                let _ = txn.abort();
                                self.savepoints.clear();
                                self.explicit = false;
                                return r;
                            }
                            txn.rollback_to(sp)?;
                        }
                    }
                    r
                }
                Err(e) => Err(e.into()),
            };
            self.txn = Some(txn);
            r
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        crate::xa::session_ends(self);
        if let Some(t) = self.txn.take() {
            let _ = t.abort();
        }
        self.release_mdl_if_done();
        if !self.child {
            // The counts move to the ended sessions' total under the procs
            // lock, so GLOBAL STATUS never sees them twice or not at all.
            let mut procs = self.inner.procs.lock();
            procs.remove(&self.conn_id);
            let stats = self.proc.lock().stats;
            let mut ended = self.inner.ended_stats.lock();
            for (e, s) in ended.iter_mut().zip(stats) {
                *e += s;
            }
            drop(ended);
            drop(procs);
            self.inner.free_slot(self.slot);
        }
    }
}

/// `global.x` / `session.x` / `local.x`: (Some(true) for GLOBAL,
/// Some(false) for SESSION/LOCAL, None unscoped) and the bare name.
fn split_scope(n: &str) -> (Option<bool>, &str) {
    if let Some(r) = n.strip_prefix("global.") {
        (Some(true), r)
    } else if let Some(r) = n.strip_prefix("session.").or_else(|| n.strip_prefix("local.")) {
        (Some(false), r)
    } else {
        (None, n)
    }
}

fn parse_isolation(t: &str) -> Option<Isolation> {
    Some(match t {
        "READ-UNCOMMITTED" => Isolation::ReadUncommitted,
        "READ-COMMITTED" => Isolation::ReadCommitted,
        "REPEATABLE-READ" => Isolation::RepeatableRead,
        "SERIALIZABLE" => Isolation::Serializable,
        _ => return None,
    })
}

fn isolation_of(l: &ast::TransactionIsolationLevel) -> Isolation {
    match l {
        ast::TransactionIsolationLevel::ReadUncommitted => Isolation::ReadUncommitted,
        ast::TransactionIsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        ast::TransactionIsolationLevel::RepeatableRead => Isolation::RepeatableRead,
        ast::TransactionIsolationLevel::Serializable => Isolation::Serializable,
        _ => Isolation::RepeatableRead,
    }
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}
