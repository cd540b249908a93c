//! One client connection: the handshake, then one command at a time until
//! COM_QUIT, a closed socket, KILL or shutdown.
//!
//! Invariants:
//! - every command that expects a reply gets exactly one: a result, an OK
//!   or an ERR. An unknown command gets ERR 1047, never OK;
//! - a malformed packet gets an ERR (and the connection may close); it
//!   never panics the server. A panic inside a statement is caught, answered
//!   with ERR 1105 and ends this connection only;
//! - the session's transaction rolls back when the connection ends.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fractaldb_sql::{ColumnMeta, Outcome, ResultSet, Session, SqlError, Stat};

use crate::auth;
use crate::packet::{PacketIo, ReadError, Stream, TlsInfo};
use crate::prepared::{self, ParamError, Prepared};
use crate::proto::{self, *};
use crate::track::Tracker;
use crate::{ConnEntry, Shared};

/// MySQL's connect_timeout: a client has this long to finish the handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An error reply.
struct Err {
    code: u16,
    state: &'static str,
    msg: String,
}

impl From<SqlError> for Err {
    fn from(e: SqlError) -> Err {
        Err { code: e.code, state: e.state, msg: e.message }
    }
}

fn err(code: u16, state: &'static str, msg: impl Into<String>) -> Err {
    Err { code, state, msg: msg.into() }
}

fn malformed() -> Err {
    err(1835, "HY000", "Malformed communication packet")
}

/// A cursor's rows and how far FETCH has sent them.
struct OpenCursor {
    rs: ResultSet,
    wire: Vec<proto::WireCol>,
    next: usize,
}

/// What the command loop does after a command.
pub(crate) enum Next {
    Continue,
    Close,
}

pub(crate) struct Conn {
    shared: Arc<Shared>,
    io: PacketIo,
    session: Session,
    id: u64,
    peer: String,
    user: String,
    caps: u32,
    /// The client's MariaDB extended capabilities (those this server
    /// offers), from a response without CLIENT_MYSQL.
    ext_caps: u32,
    scramble: [u8; 20],
    /// This connection's packet limit: `@@global.max_allowed_packet` when
    /// it connected (as MySQL: SET GLOBAL applies to new connections).
    max_packet: usize,
    /// Session state tracking, when the client asked for it.
    tracker: Option<Tracker>,
    multi_statements: bool,
    stmts: HashMap<u32, Prepared>,
    /// Open cursors, by statement id. A cursor is a materialized result:
    /// EXECUTE with CURSOR_TYPE_READ_ONLY runs the query whole and keeps
    /// its rows here; FETCH sends them in batches. A statement's cursor
    /// closes at its next EXECUTE, RESET or CLOSE, at its last row, and
    /// with the connection's reset.
    cursors: HashMap<u32, OpenCursor>,
    next_stmt: u32,
    killed: Arc<AtomicBool>,
    busy: Arc<AtomicBool>,
    /// The negotiated TLS session, once the client switched to TLS.
    tls: Option<TlsInfo>,
    /// Connected through the Unix socket (secure, as in MySQL).
    local_socket: bool,
    /// The packet stream is out of step (a LOAD DATA LOCAL transfer
    /// failed): the connection closes after its reply.
    broken: bool,
    /// The client set CLIENT_INTERACTIVE: its wait_timeout starts as
    /// interactive_timeout.
    interactive: bool,
    /// The socket's read timeout now (wait_timeout between commands).
    read_timeout: Option<Duration>,
    /// `Session::state_gen` when `read_timeout` was last worked out.
    timeout_gen: Option<u64>,
    /// `io.bytes_in/out` already added to the session's counters.
    bytes_counted: (u64, u64),
    /// The database of this connection's last slow-log entry.
    slow_db: String,
    /// The client said COM_QUIT (else its end counts in Aborted_clients).
    quit: bool,
    /// The handshake succeeded (else its end counts in Aborted_connects).
    logged_in: bool,
}

/// Serves one connection to its end on this thread (thread_handling
/// one-thread-per-connection). Never panics out: a panic is logged.
pub(crate) fn run(shared: Arc<Shared>, stream: Stream, peer: String) {
    guarded(&shared.clone(), move || {
        if let Some(mut c) = open(&shared, stream, peer) {
            if c.login() {
                c.command_loop();
            }
            c.finish();
        }
    });
}

/// Runs `f`, logging a panic instead of letting it out of the thread.
pub(crate) fn guarded(shared: &Shared, f: impl FnOnce()) {
    let r = catch_unwind(AssertUnwindSafe(f));
    if let Err(p) = r {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        shared.log.log("error", &format!("a connection thread panicked: {what}"));
    }
}

/// A new connection: counted, refused with 1040 past max_connections, or
/// entered in the registry (KILL reaches it from here on). `None` when
/// it ended already; otherwise [`Conn::finish`] must end it.
pub(crate) fn open(shared: &Arc<Shared>, stream: Stream, peer: String) -> Option<Box<Conn>> {
    if shared.shutting_down.load(Ordering::SeqCst) {
        return None;
    }
    let registry_stream = match stream.try_clone() {
        Ok(s) => s,
        Err(e) => {
            shared.log.log("warning", &format!("connection from {peer}: {e}"));
            return None;
        }
    };
    let _ = stream.set_read_timeout(Some(CONNECT_TIMEOUT));
    let local_socket = matches!(stream, Stream::Unix(_));
    let mut io = match PacketIo::new(stream) {
        Ok(io) => io,
        Err(e) => {
            shared.log.log("warning", &format!("connection from {peer}: {e}"));
            return None;
        }
    };
    let counters = shared.db.counters();
    counters.connections.fetch_add(1, Ordering::Relaxed);
    counters.threads_created.fetch_add(1, Ordering::Relaxed);
    let live = shared.conns.lock().len();
    if live >= shared.max_connections() {
        // As MySQL: the error instead of the greeting.
        let _ = io.write_packet(&err_packet(1040, "08004", "Too many connections"));
        let _ = io.flush();
        counters.aborted_connects.fetch_add(1, Ordering::Relaxed);
        shared.log.log("warning", &format!("connection from {peer} refused: too many connections"));
        return None;
    }
    counters.max_used_connections.fetch_max(live as u64 + 1, Ordering::Relaxed);
    let session = shared.db.session();
    let id = session.connection_id();
    let killed = Arc::new(AtomicBool::new(false));
    let busy = Arc::new(AtomicBool::new(false));
    shared.conns.lock().insert(
        id,
        ConnEntry {
            kill: session.kill_handle(),
            stream: registry_stream,
            killed: killed.clone(),
            busy: busy.clone(),
        },
    );
    Some(Box::new(Conn {
        shared: shared.clone(),
        io,
        session,
        id,
        peer,
        user: String::new(),
        caps: 0,
        ext_caps: 0,
        scramble: auth::new_scramble(),
        max_packet: shared.max_allowed_packet(),
        tracker: None,
        multi_statements: false,
        stmts: HashMap::new(),
        cursors: HashMap::new(),
        next_stmt: 1,
        killed,
        busy,
        tls: None,
        local_socket,
        broken: false,
        interactive: false,
        read_timeout: None,
        timeout_gen: None,
        bytes_counted: (0, 0),
        slow_db: String::new(),
        quit: false,
        logged_in: false,
    }))
}

impl Conn {
    /// The handshake and authentication; false when the connection is to
    /// be finished without commands.
    pub(crate) fn login(&mut self) -> bool {
        self.logged_in = self.handshake();
        if self.logged_in {
            let _ = self.io.stream().set_read_timeout(None);
        }
        self.logged_in
    }

    /// Ends the connection: its counters, its registry entry; the session
    /// drops here, so its open transaction rolls back.
    pub(crate) fn finish(mut self: Box<Self>) {
        if self.logged_in {
            self.count_bytes();
        }
        let counters = self.shared.db.counters();
        if self.logged_in {
            if !self.quit && !self.shared.shutting_down.load(Ordering::SeqCst) {
                counters.aborted_clients.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            counters.aborted_connects.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.conns.lock().remove(&self.id);
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn stream(&self) -> &Stream {
        self.io.stream()
    }

    /// A command already read from the socket waits in a buffer.
    pub(crate) fn has_buffered(&mut self) -> bool {
        self.io.has_buffered()
    }

    /// How long the connection may sit idle before it is closed: the
    /// session's wait_timeout (see `arm_wait_timeout`).
    pub(crate) fn idle_limit(&mut self) -> Duration {
        self.arm_wait_timeout();
        self.read_timeout.unwrap_or(Duration::from_secs(28800))
    }

    /// The thread pool closes a connection idle past its wait_timeout:
    /// as MariaDB, without a message to the client; the log says why.
    pub(crate) fn log_idle_close(&self) {
        let secs = self.read_timeout.map_or(0, |d| d.as_secs());
        self.shared.log.log(
            "note",
            &format!("connection {} ({}): closed after {secs} s idle (wait_timeout)", self.id, self.peer),
        );
    }
}

impl Conn {
    /// TLS, or the Unix socket: what `require_secure_transport` and
    /// accounts' `REQUIRE SSL` accept.
    pub(crate) fn is_secure(&self) -> bool {
        self.tls.is_some() || self.local_socket
    }

    /// What this server offers: CLIENT_SSL only with a certificate,
    /// CLIENT_LOCAL_FILES unless local_infile is off.
    fn server_caps(&self) -> u32 {
        SERVER_CAPABILITIES
            | if self.shared.tls.is_some() { CLIENT_SSL } else { 0 }
            | if self.shared.local_infile { CLIENT_LOCAL_FILES } else { 0 }
    }

    fn deprecate_eof(&self) -> bool {
        self.caps & CLIENT_DEPRECATE_EOF != 0
    }

    fn status(&self) -> u16 {
        let mut s = 0;
        if self.session.in_transaction() {
            s |= SERVER_STATUS_IN_TRANS;
        }
        if self.session.autocommit() {
            s |= SERVER_STATUS_AUTOCOMMIT;
        }
        // Every OK, EOF and result ends with the session's sql_mode flags,
        // as MariaDB's do, so a client escapes by the mode in force.
        let mode = self.session.lex_mode();
        if mode.no_backslash_escapes {
            s |= SERVER_STATUS_NO_BACKSLASH_ESCAPES;
        }
        if mode.ansi_quotes {
            s |= SERVER_STATUS_ANSI_QUOTES;
        }
        s
    }

    fn warnings(&self) -> u16 {
        self.session.warnings().len().min(u16::MAX as usize) as u16
    }

    fn send(&mut self, payload: &[u8]) -> bool {
        self.io.write_packet(payload).is_ok()
    }

    fn send_err(&mut self, e: &Err) -> bool {
        let p = err_packet(e.code, e.state, &e.msg);
        self.send(&p)
    }

    /// The session state changes to report in the next OK packet (empty
    /// unless the client asked for session tracking).
    fn state_changes(&mut self) -> Vec<u8> {
        match self.tracker.as_mut() {
            Some(t) => t.changes(&self.session),
            None => Vec::new(),
        }
    }

    fn send_ok(&mut self, affected: u64, last_id: u64, extra_status: u16, info: &str) -> bool {
        let state = self.state_changes();
        let p = ok_packet_with_state(
            0,
            affected,
            last_id,
            self.status() | extra_status,
            self.warnings(),
            info,
            &state,
        );
        self.send(&p)
    }

    /// The end of a column list or of rows: EOF, or with DEPRECATE_EOF an
    /// OK packet with the 0xfe header (`end_of_rows`) / nothing (columns).
    fn send_eof(&mut self, extra_status: u16) -> bool {
        let p = if self.deprecate_eof() {
            let state = self.state_changes();
            ok_packet_with_state(0xfe, 0, 0, self.status() | extra_status, self.warnings(), "", &state)
        } else {
            eof_packet(self.warnings(), self.status() | extra_status)
        };
        self.send(&p)
    }

    // ---------------------------------------------------------------
    // Handshake
    // ---------------------------------------------------------------

    /// Greets, authenticates and applies connect-with-db. True when the
    /// client is in.
    fn handshake(&mut self) -> bool {
        self.session.set_client("unauthenticated user", &self.peer);
        let mut p = vec![10u8];
        p.extend_from_slice(greeting_version().as_bytes());
        p.push(0);
        p.extend_from_slice(&(self.id as u32).to_le_bytes());
        p.extend_from_slice(&self.scramble[..8]);
        p.push(0);
        let caps = self.server_caps();
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(UTF8MB4_GENERAL_CI as u8);
        p.extend_from_slice(&SERVER_STATUS_AUTOCOMMIT.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        // Without CLIENT_MYSQL, the filler's last 4 bytes are MariaDB's
        // extended capabilities.
        debug_assert_eq!(caps & CLIENT_MYSQL, 0);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&MARIADB_SERVER_EXT_CAPABILITIES.to_le_bytes());
        p.extend_from_slice(&self.scramble[8..]);
        p.push(0);
        p.extend_from_slice(auth::NATIVE.as_bytes());
        p.push(0);
        if !self.send(&p) || self.io.flush().is_err() {
            return false;
        }
        let mut pkt = match self.io.read_packet(self.max_packet) {
            Ok(p) => p,
            Err(e) => {
                self.read_failed(e, "handshake");
                return false;
            }
        };
        // An SSLRequest: the response's first 32 bytes, with CLIENT_SSL.
        // TLS starts right after it; the full response follows over TLS
        // with the next sequence id.
        if pkt.len() == SSL_REQUEST_LEN && Cursor::new(&pkt).u32().is_some_and(|c| c & CLIENT_SSL != 0) {
            let Some(tls) = self.shared.tls.as_ref().map(|t| t.config.clone()) else {
                self.fail(&err(1043, "08S01", "Bad handshake: this server does not offer SSL"));
                return false;
            };
            match self.io.start_tls(tls) {
                Ok(info) => self.tls = Some(info),
                Err(e) => {
                    // Nothing can be sent: the client speaks TLS, badly.
                    self.shared
                        .log
                        .log("note", &format!("connection {} ({}): TLS handshake: {e}", self.id, self.peer));
                    return false;
                }
            }
            pkt = match self.io.read_packet(self.max_packet) {
                Ok(p) => p,
                Err(e) => {
                    self.read_failed(e, "handshake");
                    return false;
                }
            };
        }
        let Some(resp) = parse_handshake_response(&pkt) else {
            self.fail(&err(1043, "08S01", "Bad handshake"));
            return false;
        };
        if resp.caps & CLIENT_PROTOCOL_41 == 0 {
            self.fail(&err(1043, "08S01", "Bad handshake: the client does not speak protocol 4.1"));
            return false;
        }
        if resp.caps & CLIENT_SSL != 0 && self.tls.is_none() {
            // CLIENT_SSL in a full response sent in clear.
            self.fail(&err(1043, "08S01", "Bad handshake"));
            return false;
        }
        if self.shared.require_secure_transport && !self.is_secure() {
            // MySQL's error; MariaDB 10.11 answers 1045 "Access denied" here.
            self.fail(&err(
                3159,
                "HY000",
                "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
            ));
            return false;
        }
        self.caps = resp.caps & self.server_caps();
        self.ext_caps = resp.ext_caps & MARIADB_SERVER_EXT_CAPABILITIES;
        self.interactive = resp.caps & CLIENT_INTERACTIVE != 0;
        self.multi_statements = self.caps & CLIENT_MULTI_STATEMENTS != 0;
        self.user = String::from_utf8_lossy(&resp.user).into_owned();
        let plugin =
            if self.caps & CLIENT_PLUGIN_AUTH != 0 { resp.plugin.clone() } else { auth::NATIVE.to_string() };
        if !self.authenticate(&resp.user, &plugin, resp.auth) {
            return false;
        }
        if let Err(e) = self.init_session() {
            self.fail(&e);
            return false;
        }
        // The baseline before connect-with-db: the greeting's OK reports
        // the database, as MariaDB's does.
        if self.caps & CLIENT_SESSION_TRACK != 0 {
            self.tracker = Some(Tracker::new(&self.session));
        }
        if let Some(db) = resp.db.filter(|d| !d.is_empty()) {
            if let Err(e) = self.use_db(&db) {
                self.fail(&e);
                return false;
            }
        }
        self.send_ok(0, 0, 0, "") && self.io.flush().is_ok()
    }

    /// Checks a client's credentials against the account it logs in as
    /// (user + client host, the most specific account first) and logs the
    /// session in. When the client answered for another plugin than the
    /// account's (or one this server does not know), it is switched to the
    /// account's plugin first with an AuthSwitchRequest. Sends the ERR
    /// (1045) on failure.
    fn authenticate(&mut self, user: &[u8], plugin: &str, mut response: Vec<u8>) -> bool {
        let user_s = String::from_utf8_lossy(user).into_owned();
        let acct = self.shared.db.find_account(&user_s, &self.peer);
        let mut plugin = plugin.to_string();
        let known = plugin == auth::NATIVE || plugin == auth::CACHING_SHA2;
        let want = acct.as_ref().map_or(auth::NATIVE, |a| a.plugin.as_str()).to_string();
        let switch = !known || acct.as_ref().is_some_and(|a| a.has_password && a.plugin != plugin);
        if switch {
            let mut p = vec![0xfe];
            p.extend_from_slice(want.as_bytes());
            p.push(0);
            p.extend_from_slice(&self.scramble);
            p.push(0);
            if !self.send(&p) || self.io.flush().is_err() {
                return false;
            }
            match self.io.read_packet(self.max_packet) {
                Ok(r) => response = r,
                Err(e) => {
                    self.read_failed(e, "authentication");
                    return false;
                }
            }
            plugin = want;
        }
        let host = fractaldb_sql::client_host_name(&self.peer);
        let mut ok = acct
            .as_ref()
            .is_some_and(|a| auth::verify(&auth::Account::from(a), &plugin, &self.scramble, &response));
        if plugin == auth::CACHING_SHA2 && !response.is_empty() && response != [0] {
            // The fast path holds only for an account in the cache; any
            // other answer (a miss, a wrong scramble, no such account)
            // moves to full authentication, as in MySQL 8.
            let entry = acct.as_ref().and_then(|a| Some((a.user.clone(), a.host.clone(), a.sha2?)));
            let cached = ok && entry.as_ref().is_some_and(|e| self.shared.sha2_cache.lock().contains(e));
            if cached {
                if !self.send(&[0x01, auth::FAST_AUTH_SUCCESS]) {
                    return false;
                }
            } else {
                let Some(pw) = self.full_authentication() else { return false };
                ok = acct.as_ref().is_some_and(|a| auth::verify_cleartext(&auth::Account::from(a), &pw));
                if ok {
                    if let Some(e) = entry {
                        self.shared.sha2_cache.lock().insert(e);
                    }
                }
            }
        }
        let Some(acct) = acct.filter(|_| ok) else {
            let msg = format!(
                "Access denied for user '{user_s}'@'{host}' (using password: {})",
                if response.is_empty() { "NO" } else { "YES" }
            );
            self.shared.log.log("note", &format!("connection {}: {msg}", self.id));
            self.fail(&err(1045, "28000", msg));
            return false;
        };
        self.session.login(&user_s, &host, &acct.user, &acct.host);
        // PROCESSLIST's Host is the client's address, as before login.
        self.session.set_client(&user_s, &self.peer);
        true
    }

    /// caching_sha2_password's full authentication: asks for the password
    /// (0x01 0x04). Over TLS or the Unix socket the client sends it in
    /// clear (NUL-terminated); otherwise it may ask for the server's public
    /// key (0x02, answered with 0x01 and the PEM) and sends the password,
    /// XORed with the scramble, encrypted with it (RSA-OAEP). Returns the
    /// password, or an unusable one (empty, or 0xff) when what came does
    /// not decrypt, so the caller answers 1045; `None` when the connection
    /// failed.
    fn full_authentication(&mut self) -> Option<Vec<u8>> {
        if !self.send(&[0x01, auth::PERFORM_FULL_AUTHENTICATION]) || self.io.flush().is_err() {
            return None;
        }
        let mut r = match self.io.read_packet(self.max_packet) {
            Ok(r) => r,
            Err(e) => {
                self.read_failed(e, "authentication");
                return None;
            }
        };
        if self.is_secure() {
            if r.last() == Some(&0) {
                r.pop();
            }
            return Some(r);
        }
        let keys = match self.shared.rsa_keys() {
            Ok(k) => k,
            Err(e) => {
                self.shared.log.log("error", &format!("caching_sha2_password: {e}"));
                return Some(vec![0xff]);
            }
        };
        if r == [auth::REQUEST_PUBLIC_KEY] {
            let mut p = vec![0x01];
            p.extend_from_slice(keys.public_pem.as_bytes());
            if !self.send(&p) || self.io.flush().is_err() {
                return None;
            }
            r = match self.io.read_packet(self.max_packet) {
                Ok(r) => r,
                Err(e) => {
                    self.read_failed(e, "authentication");
                    return None;
                }
            };
        }
        // A password that does not decrypt (or was sent in clear over an
        // insecure connection) matches no account.
        Some(keys.decrypt_password(&r, &self.scramble).unwrap_or_else(|| vec![0xff]))
    }

    /// What every new or reset session starts with.
    fn init_session(&mut self) -> Result<(), Err> {
        let path = |p: &std::path::Path| Some(p.display().to_string());
        let tls = self.shared.tls.as_ref();
        let mut info = fractaldb_sql::ServerInfo::default();
        info.vars.push(("have_ssl".into(), Some(if tls.is_some() { "YES" } else { "DISABLED" }.into())));
        info.vars.push(("have_openssl".into(), Some(if tls.is_some() { "YES" } else { "NO" }.into())));
        info.vars.push(("ssl_cert".into(), tls.and_then(|t| path(&t.cert))));
        info.vars.push(("ssl_key".into(), tls.and_then(|t| path(&t.key))));
        info.vars.push((
            "require_secure_transport".into(),
            Some(if self.shared.require_secure_transport { "ON" } else { "OFF" }.into()),
        ));
        info.vars.push(("version_ssl_library".into(), Some("rustls 0.23".into())));
        let key = |f: &str| Some(self.shared.datadir.join(f).display().to_string());
        info.vars.push(("caching_sha2_password_private_key_path".into(), key(auth::PRIVATE_KEY)));
        info.vars.push(("caching_sha2_password_public_key_path".into(), key(auth::PUBLIC_KEY)));
        info.vars.push(("caching_sha2_password_auto_generate_rsa_keys".into(), Some("ON".into())));
        info.vars.push(("secure_file_priv".into(), self.shared.secure_file_priv.clone()));
        info.vars
            .push(("local_infile".into(), Some(if self.shared.local_infile { "ON" } else { "OFF" }.into())));
        info.remote = true;
        let (v, c) = self.tls.as_ref().map(|t| (t.version.clone(), t.cipher.clone())).unwrap_or_default();
        info.status.push(("Ssl_cipher".into(), c));
        info.status.push(("Ssl_version".into(), v));
        self.session.set_server_info(info);
        // @@max_allowed_packet reads the session's copy: clients size their
        // packets by it (the Rust mysql crate refuses larger ones itself).
        // (Set directly, not by a statement: no Questions or Com_* count.)
        let packet = fractaldb_sql::Value::UInt(self.max_packet as u64);
        self.session.set_session_variable("max_allowed_packet", packet)?;
        if self.interactive {
            // As MySQL: an interactive client idles for interactive_timeout.
            let t =
                self.shared.db.global_var("interactive_timeout").unwrap_or(fractaldb_sql::Value::UInt(28800));
            self.session.set_session_variable("wait_timeout", t)?;
        }
        Ok(())
    }

    fn use_db(&mut self, db: &[u8]) -> Result<(), Err> {
        let mut q = b"USE `".to_vec();
        for &b in db {
            if b == b'`' {
                q.push(b'`');
            }
            q.push(b);
        }
        q.push(b'`');
        self.session.execute(&q)?;
        Ok(())
    }

    /// Sends an error and flushes it; the caller closes.
    fn fail(&mut self, e: &Err) {
        self.send_err(e);
        let _ = self.io.flush();
    }

    fn read_failed(&mut self, e: ReadError, during: &str) {
        match e {
            ReadError::Closed => {}
            ReadError::Io(e) => {
                if !self.killed.load(Ordering::SeqCst) && !self.shared.shutting_down.load(Ordering::SeqCst) {
                    self.shared
                        .log
                        .log("note", &format!("connection {} ({}): {during}: {e}", self.id, self.peer));
                }
            }
            ReadError::TooLarge => {
                self.fail(&err(1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes"));
                self.io.drain(self.max_packet.saturating_mul(2));
                self.shared
                    .log
                    .log("note", &format!("connection {}: packet bigger than max_allowed_packet", self.id));
            }
            ReadError::OutOfOrder => {
                self.fail(&err(1156, "08S01", "Got packets out of order"));
            }
        }
    }

    // ---------------------------------------------------------------
    // Commands
    // ---------------------------------------------------------------

    /// Adds the bytes read and written since the last call to the
    /// session's Bytes_received / Bytes_sent.
    fn count_bytes(&mut self) {
        let (i, o) = (self.io.bytes_in, self.io.bytes_out);
        self.session.count(Stat::BytesReceived, i - self.bytes_counted.0);
        self.session.count(Stat::BytesSent, o - self.bytes_counted.1);
        self.bytes_counted = (i, o);
    }

    /// The idle limit between commands: the session's wait_timeout
    /// (interactive_timeout for interactive clients, copied at login).
    /// Only between commands: a statement that runs longer is not cut.
    fn arm_wait_timeout(&mut self) {
        // wait_timeout is a stored session variable: unchanged while the
        // session's state generation stands still.
        let gen = self.session.state_gen();
        if self.timeout_gen == Some(gen) {
            return;
        }
        self.timeout_gen = Some(gen);
        let secs = self.session.variable("wait_timeout").and_then(|v| v.to_f64()).unwrap_or(28800.0);
        let t = Some(Duration::from_secs(secs.clamp(1.0, 31_536_000.0) as u64));
        if t != self.read_timeout {
            let _ = self.io.stream().set_read_timeout(t);
            self.read_timeout = t;
        }
    }

    fn command_loop(&mut self) {
        loop {
            self.arm_wait_timeout();
            if matches!(self.step(), Next::Close) {
                return;
            }
        }
    }

    /// Reads one command, runs it and sends its reply. `Close`: the
    /// connection is over (COM_QUIT, a closed or broken socket, KILL,
    /// the idle limit of a blocking read).
    pub(crate) fn step(&mut self) -> Next {
        self.io.seq = 0;
        self.count_bytes();
        let pkt = match self.io.read_packet(self.max_packet) {
            Ok(p) => p,
            Err(ReadError::Io(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
            {
                // As MariaDB: the idle connection is closed without a
                // message to the client; the log says why.
                self.log_idle_close();
                return Next::Close;
            }
            Err(e) => {
                self.read_failed(e, "reading a command");
                return Next::Close;
            }
        };
        let r = catch_unwind(AssertUnwindSafe(|| self.command(&pkt)));
        let next = match r {
            Ok(n) => n,
            Err(_) => {
                self.shared
                    .log
                    .log("error", &format!("connection {}: a command panicked; closing it", self.id));
                self.send_err(&err(
                    1105,
                    "HY000",
                    "internal error: the command failed; closing the connection",
                ));
                Next::Close
            }
        };
        if self.io.flush().is_err() {
            return Next::Close;
        }
        if matches!(next, Next::Close) || self.killed.load(Ordering::SeqCst) || self.broken {
            return Next::Close;
        }
        Next::Continue
    }

    fn command(&mut self, pkt: &[u8]) -> Next {
        let Some((&cmd, body)) = pkt.split_first() else {
            self.send_err(&malformed());
            return Next::Continue;
        };
        if cmd == COM_STMT_RESET {
            self.session.count(Stat::ComStmtReset, 1);
        }
        match cmd {
            COM_QUIT => {
                self.quit = true;
                return Next::Close;
            }
            COM_SHUTDOWN => {
                self.shutdown(false);
            }
            COM_QUERY => self.com_query(body),
            COM_PING => {
                self.send_ok(0, 0, 0, "");
            }
            COM_INIT_DB => match self.use_db(body) {
                Ok(()) => {
                    self.send_ok(0, 0, 0, "");
                }
                Err(e) => {
                    self.send_err(&e);
                }
            },
            COM_FIELD_LIST => self.com_field_list(body),
            COM_STATISTICS => {
                let up = self.shared.started.elapsed().as_secs();
                let q = self.shared.questions.load(Ordering::Relaxed);
                let threads = self.shared.conns.lock().len();
                let line = format!(
                    "Uptime: {up}  Threads: {threads}  Questions: {q}  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: {:.3}",
                    q as f64 / up.max(1) as f64
                );
                self.send(line.as_bytes());
            }
            COM_PROCESS_INFO => {
                self.run_and_send(b"SHOW PROCESSLIST", false, false);
            }
            COM_PROCESS_KILL => {
                let mut c = Cursor::new(body);
                match c.u32() {
                    Some(id) => {
                        self.kill(id as u64, true, false);
                    }
                    None => {
                        self.send_err(&malformed());
                    }
                }
            }
            COM_SET_OPTION => match Cursor::new(body).u16() {
                Some(0) => {
                    self.multi_statements = true;
                    self.send_eof(0);
                }
                Some(1) => {
                    self.multi_statements = false;
                    self.send_eof(0);
                }
                _ => {
                    self.send_err(&err(1047, "08S01", "Unknown command"));
                }
            },
            COM_RESET_CONNECTION => {
                self.reset();
                match self.init_session() {
                    Ok(()) => {
                        self.rebase_tracker();
                        self.send_ok(0, 0, 0, "");
                    }
                    Err(e) => {
                        self.send_err(&e);
                    }
                }
            }
            COM_CHANGE_USER => return self.com_change_user(body),
            COM_STMT_PREPARE => self.stmt_prepare(body),
            COM_STMT_EXECUTE => self.stmt_execute(body),
            COM_STMT_BULK_EXECUTE => self.stmt_bulk_execute(body),
            COM_STMT_SEND_LONG_DATA => {
                // No reply, by the protocol; a bad id is reported at EXECUTE.
                let mut c = Cursor::new(body);
                if let (Some(id), Some(p)) = (c.u32(), c.u16()) {
                    if let Some(st) = self.stmts.get_mut(&id) {
                        if let Some(slot) = st.long_data.get_mut(p as usize) {
                            slot.get_or_insert_with(Vec::new).extend_from_slice(c.rest());
                        }
                    }
                }
            }
            COM_STMT_CLOSE => {
                self.session.count(Stat::ComStmtClose, 1);
                // No reply, by the protocol.
                if let Some(id) = Cursor::new(body).u32() {
                    self.stmts.remove(&id);
                    self.cursors.remove(&id);
                }
            }
            COM_STMT_RESET => match Cursor::new(body).u32() {
                Some(id) => match self.stmts.get_mut(&id) {
                    Some(st) => {
                        st.long_data.iter_mut().for_each(|d| *d = None);
                        self.cursors.remove(&id);
                        self.send_ok(0, 0, 0, "");
                    }
                    None => {
                        self.send_err(&unknown_stmt(id, "mysqld_stmt_reset"));
                    }
                },
                None => {
                    self.send_err(&malformed());
                }
            },
            COM_STMT_FETCH => self.stmt_fetch(body),
            COM_SLEEP => {
                self.send_err(&err(1047, "08S01", "Unknown command"));
            }
            _ => {
                self.send_err(&err(1047, "08S01", "Unknown command"));
            }
        }
        Next::Continue
    }

    /// SHUTDOWN / COM_SHUTDOWN: for an account allowed to, asks the
    /// server's owner to shut down (`Shared::shutdown_requested`: the
    /// `fractaldb server` loop then checkpoints, closes and exits 0), and
    /// answers OK first. False (an ERR sent) when refused.
    fn shutdown(&mut self, more: bool) -> bool {
        self.session.count(Stat::ComShutdown, 1);
        if !self.session.has_global("SHUTDOWN") {
            self.send_err(&err(
                1227,
                "42000",
                "Access denied; you need (at least one of) the SHUTDOWN privilege(s) for this operation",
            ));
            return false;
        }
        self.shared.log.log(
            "note",
            &format!("shutdown requested by connection {} ({}@{})", self.id, self.user, self.peer),
        );
        self.send_ok(0, 0, if more { SERVER_MORE_RESULTS_EXISTS } else { 0 }, "");
        let _ = self.io.flush();
        self.shared.shutdown_requested.store(true, Ordering::SeqCst);
        true
    }

    /// A fresh session (COM_RESET_CONNECTION, COM_CHANGE_USER). Session
    /// tracking starts again from it once `init_session` ran (`rebase`).
    fn reset(&mut self) {
        self.session.reset();
        self.stmts.clear();
        self.cursors.clear();
        self.multi_statements = self.caps & CLIENT_MULTI_STATEMENTS != 0;
    }

    /// Session tracking's baseline is the session as it is now.
    fn rebase_tracker(&mut self) {
        if let Some(t) = self.tracker.as_mut() {
            t.rebase(&self.session);
        }
    }

    fn com_change_user(&mut self, body: &[u8]) -> Next {
        let mut c = Cursor::new(body);
        let Some(user) = c.nul_str().map(<[u8]>::to_vec) else {
            self.send_err(&malformed());
            return Next::Close;
        };
        let response = if self.caps & CLIENT_SECURE_CONNECTION != 0 {
            let Some(n) = c.u8() else {
                self.send_err(&malformed());
                return Next::Close;
            };
            match c.bytes(n as usize) {
                Some(b) => b.to_vec(),
                None => {
                    self.send_err(&malformed());
                    return Next::Close;
                }
            }
        } else {
            c.nul_str_or_rest().to_vec()
        };
        let db = c.nul_str_or_rest().to_vec();
        let _charset = c.u16();
        let plugin = if self.caps & CLIENT_PLUGIN_AUTH != 0 {
            String::from_utf8_lossy(c.nul_str_or_rest()).into_owned()
        } else {
            auth::NATIVE.to_string()
        };
        let plugin = if plugin.is_empty() { auth::NATIVE.to_string() } else { plugin };
        if !self.authenticate(&user, &plugin, response) {
            return Next::Close;
        }
        self.user = String::from_utf8_lossy(&user).into_owned();
        self.reset();
        let r = self.init_session().and_then(|()| {
            self.rebase_tracker();
            if db.is_empty() {
                Ok(())
            } else {
                self.use_db(&db)
            }
        });
        match r {
            Ok(()) => {
                self.send_ok(0, 0, 0, "");
            }
            Err(e) => {
                self.send_err(&e);
            }
        }
        Next::Continue
    }

    fn com_query(&mut self, sql: &[u8]) {
        // Split in the sql_mode the query arrives under (a SET sql_mode
        // inside it does not re-split the rest).
        fractaldb_sql::lex::set_lex_mode(self.session.lex_mode());
        let stmts =
            if self.multi_statements { fractaldb_sql::lex::split_script(sql) } else { vec![sql.to_vec()] };
        if stmts.is_empty() {
            // Only comments or spaces: the session's own answer (1065).
            self.run_and_send(sql, false, false);
            return;
        }
        let n = stmts.len();
        for (i, s) in stmts.iter().enumerate() {
            if !self.run_and_send(s, false, i + 1 < n) {
                break;
            }
        }
    }

    /// Runs one statement and sends its result (text or binary rows).
    /// False when it failed (a multi-statement query stops there).
    fn run_and_send(&mut self, sql: &[u8], binary: bool, more: bool) -> bool {
        self.shared.questions.fetch_add(1, Ordering::Relaxed);
        if let Some((id, connection)) = parse_kill(sql) {
            self.session.count(Stat::Questions, 1);
            self.session.count(Stat::ComKill, 1);
            return self.kill(id, connection, more);
        }
        if is_shutdown(sql) {
            self.session.count(Stat::Questions, 1);
            return self.shutdown(more);
        }
        let t0 = Instant::now();
        let out0 = self.io.bytes_out;
        self.busy.store(true, Ordering::SeqCst);
        let allowed = self.caps & CLIENT_LOCAL_FILES != 0;
        let max = self.max_packet;
        // Without CLIENT_DEPRECATE_EOF, a streamed result's column
        // definitions end with an EOF carrying the status as the statement
        // starts (the final EOF carries it as the statement ends).
        let eof_status = (!self.deprecate_eof()).then(|| self.status());
        let Conn { session, io, broken, .. } = self;
        let mut local = LocalFromClient {
            io,
            allowed,
            max,
            broken,
            stream: !binary,
            eof_status,
            streamed: None,
            row: Vec::new(),
        };
        let r = session.execute_local(sql, &mut local);
        let streamed = local.streamed;
        self.busy.store(false, Ordering::SeqCst);
        let (ok, sent, affected) = match r {
            Ok(o) => {
                let (sent, affected) = match &o {
                    Outcome::Rows(rs) => (streamed.unwrap_or(rs.rows.len() as u64), 0),
                    Outcome::Done { affected, .. } => (0, *affected),
                };
                let more_flag = if more { SERVER_MORE_RESULTS_EXISTS } else { 0 };
                match (&o, streamed) {
                    // The columns and rows went out as they were made: the end.
                    (Outcome::Rows(_), Some(_)) => {
                        self.send_eof(more_flag);
                    }
                    _ => self.send_outcome(o, binary, more),
                }
                (true, sent, affected)
            }
            Err(e) => {
                self.send_err(&e.into());
                (false, 0, 0)
            }
        };
        self.slow_log(sql, t0, sent, affected, self.io.bytes_out - out0);
        ok
    }

    /// Writes the statement to the slow query log when the log is on and
    /// the statement took the session's long_query_time or more.
    fn slow_log(&mut self, sql: &[u8], t0: Instant, rows_sent: u64, rows_affected: u64, bytes_sent: u64) {
        let took = t0.elapsed();
        let on = self.shared.db.global_u64("slow_query_log") != 0;
        if !on {
            return;
        }
        let long = self.session.variable("long_query_time").and_then(|v| v.to_f64()).unwrap_or(10.0);
        if took.as_secs_f64() < long {
            return;
        }
        self.session.count(Stat::SlowQueries, 1);
        let path = self.shared.db.global_var("slow_query_log_file").map(|v| v.render()).unwrap_or_default();
        let schema = self.session.current_db().unwrap_or("").to_string();
        let use_schema = schema != self.slow_db;
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.saturating_sub(took).as_secs() as i64);
        let ip = if self.peer == "localhost" { "" } else { self.peer.as_str() };
        let entry = crate::slowlog::Entry {
            user: &self.user,
            ip,
            thread_id: self.id,
            schema: &schema,
            use_schema,
            query_secs: took.as_secs_f64(),
            rows_sent,
            rows_examined: self.session.progress_handle().counts().0,
            rows_affected,
            bytes_sent,
            start,
            sql,
        };
        match self.shared.slow_log.write(&path, &entry) {
            Ok(()) => self.slow_db = schema,
            Err(e) => self.shared.log.log("warning", &e),
        }
    }

    /// KILL: false (and an ERR sent) when no connection has the id.
    fn kill(&mut self, id: u64, connection: bool, more: bool) -> bool {
        // Others' connections need SUPER or CONNECTION ADMIN (1095).
        if let Err(e) = self.session.may_kill(id) {
            self.send_err(&e.into());
            return false;
        }
        if self.shared.kill(id, connection) {
            if id == self.id && connection {
                // Killing oneself: the socket is already shut; no reply.
                return false;
            }
            self.send_ok(0, 0, if more { SERVER_MORE_RESULTS_EXISTS } else { 0 }, "");
            true
        } else {
            self.send_err(&err(1094, "HY000", format!("Unknown thread id: {id}")));
            false
        }
    }

    fn send_outcome(&mut self, o: Outcome, binary: bool, more: bool) {
        let more_flag = if more { SERVER_MORE_RESULTS_EXISTS } else { 0 };
        match o {
            Outcome::Done { affected, last_insert_id, info } => {
                self.send_ok(affected, last_insert_id, more_flag, info.as_deref().unwrap_or(""));
            }
            Outcome::Rows(rs) => self.send_result_set(&rs, binary, more_flag),
        }
    }

    /// A result's column count, then its column definitions.
    fn send_columns(&mut self, cols: &[ColumnMeta]) {
        let mut p = Vec::new();
        put_lenenc_int(&mut p, cols.len() as u64);
        self.send(&p);
        for c in cols {
            let d = column_def(c, None);
            self.send(&d);
        }
    }

    fn send_result_set(&mut self, rs: &ResultSet, binary: bool, more_flag: u16) {
        self.send_columns(&rs.columns);
        if !self.deprecate_eof() {
            let e = eof_packet(self.warnings(), self.status());
            self.send(&e);
        }
        let wire: Vec<_> = if binary { rs.columns.iter().map(proto::wire_col).collect() } else { Vec::new() };
        let mut row = Vec::with_capacity(256);
        for r in &rs.rows {
            row.clear();
            if binary {
                binary_row(&mut row, r, &wire);
            } else {
                text_row(&mut row, r);
            }
            if !self.send(&row) {
                return;
            }
        }
        self.send_eof(more_flag);
    }

    /// COM_FIELD_LIST: the columns of a table, as column definitions with
    /// their defaults (the mariadb client's tab completion asks for them).
    fn com_field_list(&mut self, body: &[u8]) {
        let mut c = Cursor::new(body);
        let table = c.nul_str_or_rest().to_vec();
        let wild = c.rest().to_vec();
        let mut q = b"SELECT * FROM `".to_vec();
        for &b in &table {
            if b == b'`' {
                q.push(b'`');
            }
            q.push(b);
        }
        q.extend_from_slice(b"` LIMIT 0");
        let cols: Vec<ColumnMeta> = match self.session.execute(&q) {
            Ok(Outcome::Rows(rs)) => rs.columns,
            Ok(_) => Vec::new(),
            Err(e) => {
                self.send_err(&e.into());
                return;
            }
        };
        for col in cols {
            if !wild.is_empty() && !like(col.name.as_bytes(), &wild) {
                continue;
            }
            // Defaults are not in ColumnMeta; NULL says "not known here".
            let d = column_def(&col, Some(None));
            self.send(&d);
        }
        self.send_eof(0);
    }

    // ---------------------------------------------------------------
    // Prepared statements
    // ---------------------------------------------------------------

    fn stmt_prepare(&mut self, sql: &[u8]) {
        self.session.count(Stat::ComStmtPrepare, 1);
        // Parsed once, here: syntax errors come at PREPARE, as in MySQL.
        let st = match self.session.prepare(sql) {
            Ok(p) => Prepared::new(p, sql),
            Err(e) => {
                self.send_err(&e.into());
                return;
            }
        };
        let columns = self.probe_columns(&st);
        let id = self.next_stmt;
        self.next_stmt = self.next_stmt.wrapping_add(1).max(1);
        let n = st.params().min(u16::MAX as usize) as u16;
        let mut p = vec![0u8];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&(columns.len().min(u16::MAX as usize) as u16).to_le_bytes());
        p.extend_from_slice(&n.to_le_bytes());
        p.push(0);
        p.extend_from_slice(&0u16.to_le_bytes());
        self.send(&p);
        if n > 0 {
            let d = param_def();
            for _ in 0..n {
                self.send(&d);
            }
            if !self.deprecate_eof() {
                let e = eof_packet(0, self.status());
                self.send(&e);
            }
        }
        if !columns.is_empty() {
            for c in &columns {
                let d = column_def(c, None);
                self.send(&d);
            }
            if !self.deprecate_eof() {
                let e = eof_packet(0, self.status());
                self.send(&e);
            }
        }
        self.stmts.insert(id, st);
    }

    /// The columns a prepared statement's result will have. Clients size
    /// their result bindings by PREPARE's column count and refuse a result
    /// with another count (libmariadb: commands out of sync, or
    /// CR_NEW_STMT_METADATA), so PREPARE reports them: the SQL layer binds
    /// the query with NULL parameters without reading rows
    /// (`Session::describe_prepared`). Other statements report none.
    fn probe_columns(&mut self, st: &Prepared) -> Vec<ColumnMeta> {
        self.session.describe_prepared(&st.stmt).unwrap_or_default()
    }

    fn stmt_execute(&mut self, body: &[u8]) {
        let mut c = Cursor::new(body);
        let (Some(id), Some(flags), Some(_iterations)) = (c.u32(), c.u8(), c.u32()) else {
            self.send_err(&malformed());
            return;
        };
        // A new execution closes the statement's cursor, whatever follows.
        self.cursors.remove(&id);
        let Some(st) = self.stmts.get_mut(&id) else {
            self.send_err(&unknown_stmt(id, "mysqld_stmt_execute"));
            return;
        };
        let params = match prepared::read_params(st, &mut c) {
            Ok(v) => v,
            Err(e) => {
                st.long_data.iter_mut().for_each(|d| *d = None);
                let e = match e {
                    ParamError::Malformed => malformed(),
                    ParamError::NoTypes => {
                        err(2031, "HY000", "No data supplied for parameters in prepared statement")
                    }
                    ParamError::Unrepresentable => {
                        err(1367, "22007", "Illegal double value found during parsing")
                    }
                    ParamError::Indicator => unsupported_ps(),
                };
                self.send_err(&e);
                return;
            }
        };
        let Some(st) = self.stmts.remove(&id) else { return };
        self.shared.questions.fetch_add(1, Ordering::Relaxed);
        self.session.count(Stat::ComStmtExecute, 1);
        self.busy.store(true, Ordering::SeqCst);
        let r = self.session.execute_prepared(&st.stmt, &params);
        self.busy.store(false, Ordering::SeqCst);
        self.stmts.insert(id, st);
        match r {
            Ok(Outcome::Rows(rs)) if flags & CURSOR_TYPE_READ_ONLY != 0 => self.open_cursor(id, rs),
            Ok(o) => self.send_outcome(o, true, false),
            Err(e) => {
                self.send_err(&e.into());
            }
        }
    }

    /// MariaDB's COM_STMT_BULK_EXECUTE: statement id, 2 bytes of flags
    /// (only STMT_BULK_FLAG_CLIENT_SEND_TYPES is known), the types when
    /// that flag is set, then rows of parameters to the packet's end. The
    /// statement runs once per row, in order; the reply is one OK with the
    /// rows' affected counts summed and the first generated id, or the ERR
    /// of the first row that failed (an INSERT's or REPLACE's rows are all
    /// undone then; an UPDATE's or DELETE's before it stay done). Refused
    /// with 1295, as by MariaDB 10.11: a client that did not announce
    /// MARIADB_CLIENT_STMT_BULK_OPERATIONS, unknown flags, a statement
    /// without parameters or other than INSERT / REPLACE / UPDATE /
    /// DELETE.
    fn stmt_bulk_execute(&mut self, body: &[u8]) {
        let mut c = Cursor::new(body);
        let (Some(id), Some(flags)) = (c.u32(), c.u16()) else {
            self.send_err(&malformed());
            return;
        };
        if self.ext_caps & MARIADB_CLIENT_STMT_BULK_OPERATIONS == 0
            || flags & !STMT_BULK_FLAG_CLIENT_SEND_TYPES != 0
        {
            self.send_err(&unsupported_ps());
            return;
        }
        self.cursors.remove(&id);
        let Some(st) = self.stmts.get_mut(&id) else {
            self.send_err(&unknown_stmt(id, "mysqld_stmt_execute"));
            return;
        };
        if st.params() == 0 || !st.bulk_safe() {
            self.send_err(&unsupported_ps());
            return;
        }
        st.long_data.iter_mut().for_each(|d| *d = None);
        let types = match prepared::read_bulk_types(st, &mut c, flags & STMT_BULK_FLAG_CLIENT_SEND_TYPES != 0)
        {
            Ok(t) => t,
            Err(e) => {
                self.send_err(&bulk_param_error(e));
                return;
            }
        };
        let Some(st) = self.stmts.remove(&id) else { return };
        self.shared.questions.fetch_add(1, Ordering::Relaxed);
        self.session.count(Stat::ComStmtExecute, 1);
        let (mut affected, mut first_id) = (0u64, 0u64);
        let mut failed: Option<Err> = None;
        self.busy.store(true, Ordering::SeqCst);
        // An INSERT or REPLACE is one statement in MariaDB, all its rows or
        // none; UPDATE and DELETE run row by row. So the rows of an INSERT
        // run inside a savepoint, or, with autocommit and no transaction
        // open, with autocommit off until they are done.
        let atomic = matches!(st.verb.as_str(), "INSERT" | "REPLACE");
        let own = atomic && self.session.autocommit() && !self.session.in_transaction();
        if atomic {
            let begin: &[u8] = if own { b"SET autocommit = 0" } else { b"SAVEPOINT fractaldb_bulk" };
            if let Err(e) = self.session.execute(begin) {
                failed = Some(e.into());
            }
        }
        // Rows to the packet's end, each run before the next is read (as
        // MariaDB reads them): a bad row fails the batch there.
        while failed.is_none() {
            let row = match prepared::read_bulk_row(&mut c, &types) {
                Ok(r) => r,
                Err(e) => {
                    failed = Some(bulk_param_error(e));
                    break;
                }
            };
            match self.session.execute_prepared(&st.stmt, &row) {
                Ok(Outcome::Done { affected: a, last_insert_id, .. }) => {
                    affected += a;
                    if first_id == 0 {
                        first_id = last_insert_id;
                    }
                }
                // Not a bulk-safe statement's outcome; nothing to send.
                Ok(Outcome::Rows(_)) => {}
                Err(e) => failed = Some(e.into()),
            }
            if c.remaining() == 0 {
                break;
            }
        }
        if atomic {
            let ends: &[&[u8]] = match (own, failed.is_some()) {
                (true, true) => &[b"ROLLBACK"],
                (true, false) => &[b"COMMIT"],
                (false, true) => {
                    &[b"ROLLBACK TO SAVEPOINT fractaldb_bulk", b"RELEASE SAVEPOINT fractaldb_bulk"]
                }
                (false, false) => &[b"RELEASE SAVEPOINT fractaldb_bulk"],
            };
            for end in ends {
                if let Err(e) = self.session.execute(end) {
                    // A commit that fails is the batch's error.
                    failed.get_or_insert(e.into());
                    if own {
                        let _ = self.session.execute(b"ROLLBACK");
                    }
                }
            }
            if own {
                // No transaction is open: this cannot have a commit to fail.
                if let Err(e) = self.session.execute(b"SET autocommit = 1") {
                    failed.get_or_insert(e.into());
                }
                debug_assert!(!self.session.in_transaction());
            }
        }
        self.busy.store(false, Ordering::SeqCst);
        self.stmts.insert(id, st);
        match failed {
            Some(e) => {
                self.send_err(&e);
            }
            None => {
                self.send_ok(affected, first_id, 0, "");
            }
        }
    }

    /// EXECUTE with a cursor: the column definitions, then EOF (or the OK
    /// that replaces it with DEPRECATE_EOF) with CURSOR_EXISTS, no rows.
    fn open_cursor(&mut self, id: u32, rs: ResultSet) {
        self.send_columns(&rs.columns);
        self.send_eof(SERVER_STATUS_CURSOR_EXISTS);
        let wire = rs.columns.iter().map(proto::wire_col).collect();
        self.cursors.insert(id, OpenCursor { rs, wire, next: 0 });
    }

    /// COM_STMT_FETCH(stmt, n): up to n rows of the cursor, then EOF with
    /// CURSOR_EXISTS while rows remain, or LAST_ROW_SENT (and the cursor
    /// closes) once the last one went.
    fn stmt_fetch(&mut self, body: &[u8]) {
        let mut c = Cursor::new(body);
        let (Some(id), Some(n)) = (c.u32(), c.u32()) else {
            self.send_err(&malformed());
            return;
        };
        let Some(mut cur) = self.cursors.remove(&id) else {
            let e = if self.stmts.contains_key(&id) {
                err(1421, "HY000", format!("The statement ({id}) has no open cursor."))
            } else {
                unknown_stmt(id, "mysqld_stmt_fetch")
            };
            self.send_err(&e);
            return;
        };
        let end = cur.rs.rows.len().min(cur.next.saturating_add(n as usize));
        let mut row = Vec::with_capacity(256);
        for r in &cur.rs.rows[cur.next..end] {
            row.clear();
            binary_row(&mut row, r, &cur.wire);
            if !self.send(&row) {
                return;
            }
        }
        cur.next = end;
        debug_assert!(cur.next <= cur.rs.rows.len());
        if cur.next < cur.rs.rows.len() {
            self.cursors.insert(id, cur);
            self.send_eof(SERVER_STATUS_CURSOR_EXISTS);
        } else {
            self.send_eof(SERVER_STATUS_LAST_ROW_SENT);
        }
    }
}

/// LOAD DATA LOCAL's file, from the client: the server sends 0xFB and the
/// name; the client answers with the file's bytes in packets, ended by an
/// empty one (at once when it cannot or will not send the file).
///
/// It is also where a query's rows go as they are made (`RowSink`), in the
/// text protocol: a result set never has to fit in the server's memory,
/// and the client sees the first rows while the rest are read. An error
/// after some rows ends the result with an ERR packet, as in MariaDB.
struct LocalFromClient<'a> {
    io: &'a mut PacketIo,
    /// The client announced CLIENT_LOCAL_FILES (and the server offers it).
    allowed: bool,
    max: usize,
    broken: &'a mut bool,
    /// Rows may stream (a text-protocol statement).
    stream: bool,
    /// The status for the EOF after the column definitions; `None`: the
    /// client deprecates that EOF.
    eof_status: Option<u16>,
    /// The columns went out, then this many rows.
    streamed: Option<u64>,
    /// A row's packet, reused.
    row: Vec<u8>,
}

impl LocalFromClient<'_> {
    fn write(&mut self, p: &[u8]) -> Result<(), SqlError> {
        self.io.write_packet(p).map_err(|_| {
            *self.broken = true;
            net_error()
        })
    }
}

impl fractaldb_sql::RowSink for LocalFromClient<'_> {
    fn columns(&mut self, cols: &[ColumnMeta]) -> Result<(), SqlError> {
        debug_assert!(self.streamed.is_none(), "a result's columns once");
        let mut p = Vec::new();
        put_lenenc_int(&mut p, cols.len() as u64);
        self.write(&p)?;
        for c in cols {
            self.write(&column_def(c, None))?;
        }
        if let Some(status) = self.eof_status {
            self.write(&eof_packet(0, status))?;
        }
        self.streamed = Some(0);
        Ok(())
    }

    fn row(&mut self, row: &[fractaldb_sql::Value]) -> Result<(), SqlError> {
        let mut p = std::mem::take(&mut self.row);
        p.clear();
        text_row(&mut p, row);
        let r = self.write(&p);
        self.row = p;
        r?;
        *self.streamed.as_mut().expect("columns before rows") += 1;
        Ok(())
    }
}

impl fractaldb_sql::loaddata::LocalInfile for LocalFromClient<'_> {
    fn open(&mut self, name: &[u8]) -> Result<Box<dyn std::io::Read + '_>, SqlError> {
        if !self.allowed {
            return Err(SqlError::new(
                4166,
                "HY000",
                "The used command is not allowed because the MariaDB server or client has disabled the local infile capability",
            ));
        }
        let mut p = vec![0xfb];
        p.extend_from_slice(name);
        if self.io.write_packet(&p).is_err() || self.io.flush().is_err() {
            *self.broken = true;
            return Err(net_error());
        }
        Ok(Box::new(ClientFile {
            io: self.io,
            max: self.max,
            broken: self.broken,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }))
    }

    fn rows(&mut self) -> Option<&mut dyn fractaldb_sql::RowSink> {
        if self.stream {
            Some(self)
        } else {
            None
        }
    }
}

fn net_error() -> SqlError {
    SqlError::new(1158, "08S01", "Got an error reading communication packets")
}

/// The client's packets as a byte stream, to the empty packet. Dropped
/// before the end (the statement failed), it reads and discards the rest,
/// so the reply follows the client's last packet, as the protocol needs.
struct ClientFile<'a> {
    io: &'a mut PacketIo,
    max: usize,
    broken: &'a mut bool,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ClientFile<'_> {
    fn next_packet(&mut self) -> Result<(), SqlError> {
        match self.io.read_packet(self.max) {
            Ok(p) => {
                self.done = p.is_empty();
                self.buf = p;
                self.pos = 0;
                Ok(())
            }
            Err(e) => {
                self.done = true;
                *self.broken = true;
                Err(match e {
                    ReadError::TooLarge => {
                        SqlError::new(1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
                    }
                    ReadError::OutOfOrder => SqlError::new(1156, "08S01", "Got packets out of order"),
                    ReadError::Closed | ReadError::Io(_) => net_error(),
                })
            }
        }
    }
}

impl std::io::Read for ClientFile<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.next_packet().map_err(std::io::Error::other)?;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for ClientFile<'_> {
    fn drop(&mut self) {
        while !self.done {
            if self.next_packet().is_err() {
                break;
            }
        }
    }
}

/// A bulk execute's parameters that could not be read, as MariaDB 10.11
/// answers.
fn bulk_param_error(e: ParamError) -> Err {
    match e {
        ParamError::Indicator => unsupported_ps(),
        ParamError::Unrepresentable => err(1367, "22007", "Illegal double value found during parsing"),
        ParamError::Malformed | ParamError::NoTypes => {
            err(1210, "HY000", "Incorrect arguments to mysqld_stmt_bulk_execute")
        }
    }
}

fn unsupported_ps() -> Err {
    err(1295, "HY000", "This command is not supported in the prepared statement protocol yet")
}

fn unknown_stmt(id: u32, to: &str) -> Err {
    err(1243, "HY000", format!("Unknown prepared statement handler ({id}) given to {to}"))
}

struct HandshakeResponse {
    caps: u32,
    /// MariaDB's extended capabilities: the filler's last 4 bytes, when
    /// CLIENT_MYSQL is not set (0 otherwise).
    ext_caps: u32,
    user: Vec<u8>,
    auth: Vec<u8>,
    db: Option<Vec<u8>>,
    plugin: String,
}

fn parse_handshake_response(p: &[u8]) -> Option<HandshakeResponse> {
    let mut c = Cursor::new(p);
    let caps = c.u32()?;
    let _max_packet = c.u32()?;
    let _charset = c.u8()?;
    let filler = c.bytes(23)?;
    let ext_caps = if caps & CLIENT_MYSQL == 0 {
        u32::from_le_bytes([filler[19], filler[20], filler[21], filler[22]])
    } else {
        0
    };
    let user = c.nul_str()?.to_vec();
    let auth = if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        c.lenenc_bytes()?.to_vec()
    } else if caps & CLIENT_SECURE_CONNECTION != 0 {
        let n = c.u8()? as usize;
        c.bytes(n)?.to_vec()
    } else {
        c.nul_str_or_rest().to_vec()
    };
    let db = if caps & CLIENT_CONNECT_WITH_DB != 0 && c.remaining() > 0 {
        Some(c.nul_str_or_rest().to_vec())
    } else {
        None
    };
    let plugin = if caps & CLIENT_PLUGIN_AUTH != 0 && c.remaining() > 0 {
        String::from_utf8_lossy(c.nul_str_or_rest()).into_owned()
    } else {
        auth::NATIVE.to_string()
    };
    // Connection attributes (CLIENT_CONNECT_ATTRS) are read past, not kept.
    Some(HandshakeResponse { caps, ext_caps, user, auth, db, plugin })
}

/// The server version the greeting names: `SERVER_VERSION` with
/// `-MariaDB` after the number (`10.11.99-MariaDB-fractaldb`), because
/// MariaDB's drivers (mysql_async, the mysql crate) read MariaDB's
/// extended capabilities, and so use bulk execute, only from a server whose
/// greeting says so. VERSION() and @@version stay `SERVER_VERSION`.
fn greeting_version() -> String {
    let v = fractaldb_sql::SERVER_VERSION;
    match v.split_once('-') {
        Some((num, rest)) => format!("{num}-MariaDB-{rest}"),
        None => format!("{v}-MariaDB"),
    }
}

/// `KILL [CONNECTION | QUERY] id`: the SQL layer has no connections to
/// kill, so the server answers it. `None` when the text is not one.
fn parse_kill(sql: &[u8]) -> Option<(u64, bool)> {
    if !starts_with_word(sql, b"kill") {
        return None;
    }
    let text = std::str::from_utf8(sql).ok()?;
    let text = text.trim().trim_end_matches(';').trim_end();
    let mut words = text.split_ascii_whitespace();
    if !words.next()?.eq_ignore_ascii_case("kill") {
        return None;
    }
    let mut w = words.next()?;
    if w.eq_ignore_ascii_case("hard") || w.eq_ignore_ascii_case("soft") {
        w = words.next()?;
    }
    let mut connection = true;
    if w.eq_ignore_ascii_case("connection") {
        w = words.next()?;
    } else if w.eq_ignore_ascii_case("query") {
        connection = false;
        w = words.next()?;
    }
    let id = w.parse().ok()?;
    words.next().is_none().then_some((id, connection))
}

/// Whether `sql`'s first word (after ASCII spaces) is `word` (lower
/// case), in any case: the check every statement pays before the full
/// parse of KILL and SHUTDOWN, without allocating.
fn starts_with_word(sql: &[u8], word: &[u8]) -> bool {
    let start = sql.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(sql.len());
    let rest = &sql[start..];
    rest.len() >= word.len()
        && rest[..word.len()].eq_ignore_ascii_case(word)
        && rest.get(word.len()).is_none_or(|b| b.is_ascii_whitespace() || *b == b';')
}

/// `SHUTDOWN` (MariaDB's `SHUTDOWN [WAIT FOR ALL SLAVES]`): the server
/// answers it, as KILL.
fn is_shutdown(sql: &[u8]) -> bool {
    if !starts_with_word(sql, b"shutdown") {
        return false;
    }
    let Ok(text) = std::str::from_utf8(sql) else { return false };
    let words: Vec<String> =
        text.trim().trim_end_matches(';').split_ascii_whitespace().map(|w| w.to_ascii_uppercase()).collect();
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(w.as_slice(), ["SHUTDOWN"] | ["SHUTDOWN", "WAIT", "FOR", "ALL", "SLAVES" | "REPLICAS"])
}

/// SQL LIKE with `%` and `_` (COM_FIELD_LIST's wildcard), case-insensitive.
fn like(s: &[u8], pat: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'%', rest)) => (0..=s.len()).any(|i| like(&s[i..], rest)),
        Some((b'_', rest)) => !s.is_empty() && like(&s[1..], rest),
        Some((c, rest)) => s.first().is_some_and(|x| x.eq_ignore_ascii_case(c)) && like(&s[1..], rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_statements() {
        assert_eq!(parse_kill(b"KILL 5"), Some((5, true)));
        assert_eq!(parse_kill(b" kill query 7 ;"), Some((7, false)));
        assert_eq!(parse_kill(b"KILL CONNECTION 9"), Some((9, true)));
        assert_eq!(parse_kill(b"KILL HARD QUERY 9"), Some((9, false)));
        assert_eq!(parse_kill(b"KILL USER bob"), None);
        assert_eq!(parse_kill(b"SELECT 1"), None);
        assert_eq!(parse_kill(b"KILL 5 6"), None);
    }

    #[test]
    fn shutdown_statements() {
        assert!(is_shutdown(b"SHUTDOWN"));
        assert!(is_shutdown(b" shutdown ; "));
        assert!(is_shutdown(b"SHUTDOWN WAIT FOR ALL SLAVES"));
        assert!(!is_shutdown(b"SHUTDOWN NOW"));
        assert!(!is_shutdown(b"SELECT 'SHUTDOWN'"));
        assert!(!is_shutdown(b"SHUTDOWNX"));
        assert!(is_shutdown(b"\n\tShutdown;"));
        assert_eq!(parse_kill(b"\tkill\n3;"), Some((3, true)));
        assert_eq!(parse_kill(b"KILLED 3"), None);
    }

    #[test]
    fn like_wildcards() {
        assert!(like(b"abc", b"a%"));
        assert!(like(b"abc", b"_B_"));
        assert!(!like(b"abc", b"b%"));
    }
}
