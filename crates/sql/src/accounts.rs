//! Accounts and privileges: CREATE/ALTER/DROP/RENAME USER, SET PASSWORD,
//! GRANT, REVOKE, SHOW GRANTS, and the privilege checks statements make.
//!
//! Storage. An account is one catalog record `acct/<user>\0<host>` ->
//! [`AccountRec`] (JSON, beside the tables' records), holding its
//! credentials and every grant it has (global, per database, per table).
//! Each account statement changes its records in one engine transaction, so
//! accounts are there after a crash or not; `acct-init` marks that the
//! first start created `root`@`localhost` (so a folder whose root was
//! dropped does not get it back at the next start).
//!
//! In memory. [`Cache`] (in `Inner`) is a copy of the records, sorted as
//! MySQL sorts its user table: host by specificity first (no wildcard,
//! then the later the first wildcard the more specific, `%` last), then
//! named users before the anonymous `''`. It is reloaded after each account
//! statement commits, and its generation bumped; a session keeps the
//! privileges of its account for a generation ([`Privs`]) and recomputes
//! them when the generation moved, so a GRANT applies to connected sessions
//! at their next statement.
//!
//! Credentials. An account keeps SHA1(SHA1(pw)) (mysql_native_password's
//! stage 2, `*HEX` in SHOW GRANTS as in MariaDB's mysql.user) and
//! SHA256(SHA256(pw)) (what caching_sha2_password's fast path checks).
//! Both are password-equivalent for these challenge protocols: whoever
//! reads them can log in (as with MySQL's authentication_string for the
//! native plugin), so the data folder must be kept private. An account
//! created from a hash (`IDENTIFIED BY PASSWORD '*..'`) has only the
//! native one.
//!
//! Checks. A session with no login (the embedded `Database`) or whose
//! account has every global privilege and GRANT OPTION is a superuser and
//! skips every check: one comparison per statement (`Session::privs`).
//! Otherwise tables are checked where they are resolved: `query.rs`'s
//! FROM (SELECT), and `dml.rs`'s targets (INSERT, UPDATE, DELETE); other
//! statements by [`check_statement`] at dispatch.

use std::cell::RefCell;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};
use sha2::Sha256;
use sqlparser::ast;

use crate::error::{SqlError, SqlResult, Warning};
use crate::session::{Outcome, Session};

pub const NATIVE: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";

// ---------------------------------------------------------------------------
// Privileges
// ---------------------------------------------------------------------------

/// The privileges, in MariaDB's order (SHOW GRANTS lists them so).
pub const PRIV_NAMES: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "RELOAD",
    "SHUTDOWN",
    "PROCESS",
    "FILE",
    "REFERENCES",
    "INDEX",
    "ALTER",
    "SHOW DATABASES",
    "SUPER",
    "CREATE TEMPORARY TABLES",
    "LOCK TABLES",
    "EXECUTE",
    "REPLICATION SLAVE",
    "BINLOG MONITOR",
    "CREATE VIEW",
    "SHOW VIEW",
    "CREATE ROUTINE",
    "ALTER ROUTINE",
    "CREATE USER",
    "EVENT",
    "TRIGGER",
    "CREATE TABLESPACE",
    "DELETE HISTORY",
    "SET USER",
    "FEDERATED ADMIN",
    "CONNECTION ADMIN",
    "READ_ONLY ADMIN",
    "REPLICATION SLAVE ADMIN",
    "REPLICATION MASTER ADMIN",
    "BINLOG ADMIN",
    "BINLOG REPLAY",
    "SLAVE MONITOR",
];

pub type Bits = u64;

/// The bit of a privilege by name (upper case, single spaces).
pub fn bit(name: &str) -> Bits {
    let i = PRIV_NAMES.iter().position(|n| *n == name).expect("a known privilege");
    1 << i
}

pub const ALL_GLOBAL: Bits = (1 << 38) - 1;

fn bits_of(names: &[&str]) -> Bits {
    names.iter().map(|n| bit(n)).fold(0, |a, b| a | b)
}

/// What a database-level grant may hold (MariaDB's DB_ACLS).
pub fn db_bits() -> Bits {
    bits_of(&[
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "REFERENCES",
        "INDEX",
        "ALTER",
        "CREATE TEMPORARY TABLES",
        "LOCK TABLES",
        "EXECUTE",
        "CREATE VIEW",
        "SHOW VIEW",
        "CREATE ROUTINE",
        "ALTER ROUTINE",
        "EVENT",
        "TRIGGER",
        "DELETE HISTORY",
    ])
}

/// What a table-level grant may hold (MariaDB's TABLE_ACLS).
pub fn table_bits() -> Bits {
    bits_of(&[
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "REFERENCES",
        "INDEX",
        "ALTER",
        "CREATE VIEW",
        "SHOW VIEW",
        "TRIGGER",
        "DELETE HISTORY",
    ])
}

/// "SELECT, INSERT" / "ALL PRIVILEGES" (every privilege of the level) /
/// "USAGE" (none).
fn priv_list(bits: Bits, all: Bits) -> String {
    if bits == 0 {
        return "USAGE".into();
    }
    if bits & all == all {
        return "ALL PRIVILEGES".into();
    }
    let names: Vec<&str> =
        PRIV_NAMES.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, n)| *n).collect();
    names.join(", ")
}

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DbGrant {
    pub db: String,
    pub privs: Bits,
    pub grant: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TableGrant {
    pub db: String,
    pub table: String,
    pub privs: Bits,
    pub grant: bool,
}

/// One account as stored.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AccountRec {
    pub user: String,
    pub host: String,
    pub plugin: String,
    /// Hex of SHA1(SHA1(pw)); "" for no password.
    pub native: String,
    /// Hex of SHA256(SHA256(pw)); "" for no password or when only the
    /// native hash is known.
    pub sha2: String,
    pub global: Bits,
    pub grant: bool,
    pub dbs: Vec<DbGrant>,
    pub tables: Vec<TableGrant>,
}

impl AccountRec {
    fn new(user: &str, host: &str) -> AccountRec {
        AccountRec {
            user: user.into(),
            host: host.into(),
            plugin: NATIVE.into(),
            native: String::new(),
            sha2: String::new(),
            global: 0,
            grant: false,
            dbs: Vec::new(),
            tables: Vec::new(),
        }
    }

    pub fn has_password(&self) -> bool {
        !self.native.is_empty() || !self.sha2.is_empty()
    }

    fn set_auth(&mut self, a: &Auth) {
        self.plugin = a.plugin.clone();
        self.native = a.native.clone();
        self.sha2 = a.sha2.clone();
    }
}

fn key(user: &str, host: &str) -> Vec<u8> {
    let mut k = b"acct/".to_vec();
    k.extend_from_slice(user.as_bytes());
    k.push(0);
    k.extend_from_slice(host.to_ascii_lowercase().as_bytes());
    k
}

const INIT_KEY: &[u8] = b"acct-init";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The credentials an auth clause gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Auth {
    plugin: String,
    native: String,
    sha2: String,
}

impl Auth {
    fn from_password(plugin: &str, pw: &[u8]) -> Auth {
        if pw.is_empty() {
            return Auth { plugin: plugin.into(), native: String::new(), sha2: String::new() };
        }
        Auth {
            plugin: plugin.into(),
            native: hex(&Sha1::digest(Sha1::digest(pw))),
            sha2: hex(&Sha256::digest(Sha256::digest(pw))),
        }
    }

    /// From `*HEX` (mysql_native_password's stored form), or 1372.
    fn from_native_hash(h: &[u8]) -> SqlResult<Auth> {
        if h.is_empty() {
            return Ok(Auth { plugin: NATIVE.into(), native: String::new(), sha2: String::new() });
        }
        let s = std::str::from_utf8(h).unwrap_or("");
        if s.len() != 41 || !s.starts_with('*') || unhex(&s[1..]).is_none() {
            return Err(SqlError::new(
                1372,
                "HY000",
                "Password hash should be a 41-digit hexadecimal number",
            ));
        }
        Ok(Auth { plugin: NATIVE.into(), native: s[1..].to_ascii_uppercase(), sha2: String::new() })
    }
}

// ---------------------------------------------------------------------------
// The cache and host matching
// ---------------------------------------------------------------------------

/// The accounts in memory, in match order.
#[derive(Default)]
pub struct Cache {
    pub list: parking_lot::RwLock<Arc<Vec<AccountRec>>>,
    pub generation: std::sync::atomic::AtomicU64,
}

/// MySQL's order: the more specific host first, then named before anonymous.
fn sort_key(a: &AccountRec) -> (std::cmp::Reverse<usize>, bool) {
    let h = &a.host;
    let rank = match h.find(['%', '_']) {
        None if h.is_empty() => 0,
        None => usize::MAX,
        Some(i) => i + 1,
    };
    (std::cmp::Reverse(rank), a.user.is_empty())
}

/// A client's host: its name ("localhost" for a Unix socket and the
/// loopback addresses) and its IP address, if any.
#[derive(Clone, Debug)]
pub struct ClientHost {
    pub name: String,
    pub ip: Option<String>,
}

impl ClientHost {
    /// From the server's peer string: an IP address, or "localhost".
    pub fn from_peer(peer: &str) -> ClientHost {
        match peer.parse::<std::net::IpAddr>() {
            Ok(ip) => {
                let ip = match ip {
                    std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
                    v4 => v4,
                };
                let name = if ip.is_loopback() { "localhost".to_string() } else { ip.to_string() };
                ClientHost { name, ip: Some(ip.to_string()) }
            }
            Err(_) => ClientHost { name: peer.to_string(), ip: None },
        }
    }
}

/// The host a client is known by (USER(), error messages): "localhost"
/// for the Unix socket and loopback addresses, else its IP address.
pub fn client_host_name(peer: &str) -> String {
    ClientHost::from_peer(peer).name
}

/// `s` against a host pattern with `%` and `_` (case-insensitive).
pub fn wild_match(pattern: &str, s: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'%', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some((b'_', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first().is_some_and(|d| d.eq_ignore_ascii_case(c)) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), s.as_bytes())
}

/// Whether an account's host pattern admits the client: its name or its IP.
/// `''` is `%`.
pub fn host_matches(pattern: &str, c: &ClientHost) -> bool {
    if pattern.is_empty() || pattern == "%" {
        return true;
    }
    wild_match(pattern, &c.name) || c.ip.as_deref().is_some_and(|ip| wild_match(pattern, ip))
}

impl Cache {
    pub fn load(&self, env: &fractaldb::Env, catalog: &fractaldb::Dictionary) -> SqlResult<()> {
        let txn = env.begin(fractaldb::Isolation::ReadCommitted)?;
        let mut list = read_all(&txn, catalog)?;
        if txn.get(catalog, INIT_KEY)?.is_none() {
            // First start: root@localhost, no password, every privilege.
            let mut root = AccountRec::new("root", "localhost");
            root.global = ALL_GLOBAL;
            root.grant = true;
            txn.put(catalog, &key("root", "localhost"), &serde_json::to_vec(&root).expect("json"))?;
            txn.put(catalog, INIT_KEY, b"1")?;
            list.push(root);
        }
        txn.commit()?;
        list.sort_by_key(sort_key);
        *self.list.write() = Arc::new(list);
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    pub fn snapshot(&self) -> Arc<Vec<AccountRec>> {
        self.list.read().clone()
    }

    /// The account a client logs in as: the first in match order whose
    /// user is the client's (or anonymous) and whose host admits it.
    pub fn find(&self, user: &str, client: &ClientHost) -> Option<AccountRec> {
        self.snapshot()
            .iter()
            .find(|a| (a.user == user || a.user.is_empty()) && host_matches(&a.host, client))
            .cloned()
    }
}

fn read_all(txn: &fractaldb::Txn, catalog: &fractaldb::Dictionary) -> SqlResult<Vec<AccountRec>> {
    let lo = b"acct/".to_vec();
    let hi = crate::plan::successor(&lo);
    let mut out = Vec::new();
    for kv in txn.range(catalog, Some(&lo), hi.as_deref(), false) {
        let (_, v) = kv?;
        out.push(
            serde_json::from_slice(&v)
                .map_err(|e| SqlError::engine(format!("an account's catalog record is damaged: {e}")))?,
        );
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// A session's login and privileges
// ---------------------------------------------------------------------------

/// Who a server session is: the user it logged in as and its host
/// (`USER()`), and the account that admitted it (`CURRENT_USER()`).
#[derive(Clone, Debug)]
pub struct Login {
    pub user: String,
    pub host: String,
    pub acct_user: String,
    pub acct_host: String,
}

/// A session's privileges, as of a cache generation.
#[derive(Clone, Debug, Default)]
pub struct Privs {
    pub generation: u64,
    /// Every global privilege and GRANT OPTION: no check applies.
    pub superuser: bool,
    pub rec: Option<AccountRec>,
}

impl Privs {
    fn global(&self) -> Bits {
        self.rec.as_ref().map_or(0, |r| r.global)
    }

    /// The privileges on database `db` (global ones included). A database
    /// grant's name may hold `%`/`_` wildcards, as in MySQL.
    pub fn on_db(&self, db: &str) -> Bits {
        let Some(r) = &self.rec else { return 0 };
        r.global | r.dbs.iter().filter(|g| db_name_matches(&g.db, db)).fold(0, |a, g| a | g.privs)
    }

    pub fn on_table(&self, db: &str, table: &str) -> Bits {
        let Some(r) = &self.rec else { return 0 };
        self.on_db(db)
            | r.tables
                .iter()
                .filter(|g| g.db == db && g.table.eq_ignore_ascii_case(table))
                .fold(0, |a, g| a | g.privs)
    }

    /// Any privilege at all on `db` or a table in it (SHOW DATABASES, USE).
    pub fn any_on_db(&self, db: &str) -> bool {
        let Some(r) = &self.rec else { return false };
        self.on_db(db) != 0 || r.tables.iter().any(|g| g.db == db && g.privs != 0)
    }
}

fn db_name_matches(pattern: &str, db: &str) -> bool {
    if !pattern.contains(['%', '_']) {
        return pattern == db;
    }
    // `\_` and `\%` are literal, as in MySQL's grant tables.
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'\\', rest)) if !rest.is_empty() => s.first() == Some(&rest[0]) && go(&rest[1..], &s[1..]),
            Some((b'%', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some((b'_', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), db.as_bytes())
}

thread_local! {
    /// The running statement's login, for USER() and CURRENT_USER() (set
    /// by the session at each statement's start; a statement runs on one
    /// thread).
    static CURRENT: RefCell<Option<Arc<Login>>> = const { RefCell::new(None) };
}

pub(crate) fn set_current(l: Option<Arc<Login>>) {
    CURRENT.with(|c| *c.borrow_mut() = l);
}

/// USER(): `user@host` as the client logged in.
pub fn user_fn() -> String {
    CURRENT
        .with(|c| c.borrow().as_ref().map_or("root@localhost".into(), |l| format!("{}@{}", l.user, l.host)))
}

/// CURRENT_USER(): the account, `user@host-pattern`.
pub fn current_user_fn() -> String {
    CURRENT.with(|c| {
        c.borrow().as_ref().map_or("root@localhost".into(), |l| format!("{}@{}", l.acct_user, l.acct_host))
    })
}

impl Session {
    /// Logs this session in as the account `acct_user`@`acct_host`, for a
    /// client that gave `user` from `host` (the server does, after
    /// authentication). Its statements are then checked against the
    /// account's privileges.
    pub fn login(&mut self, user: &str, host: &str, acct_user: &str, acct_host: &str) {
        self.login = Some(Arc::new(Login {
            user: user.into(),
            host: host.into(),
            acct_user: acct_user.into(),
            acct_host: acct_host.into(),
        }));
        self.privs = None;
    }

    /// `user`@`host` of CURRENT_USER(), if logged in.
    pub fn account(&self) -> Option<(String, String)> {
        self.login.as_ref().map(|l| (l.acct_user.clone(), l.acct_host.clone()))
    }

    /// Recomputes the session's privileges when the accounts changed (at
    /// each statement's start; one atomic load when nothing changed).
    pub(crate) fn refresh_privs(&mut self) {
        let Some(login) = self.login.as_ref() else { return };
        let generation = self.inner.accounts.generation.load(std::sync::atomic::Ordering::SeqCst);
        if self.privs.as_ref().is_none_or(|p| p.generation != generation) {
            let rec = self
                .inner
                .accounts
                .snapshot()
                .iter()
                .find(|a| a.user == login.acct_user && a.host.eq_ignore_ascii_case(&login.acct_host))
                .cloned();
            let superuser = rec.as_ref().is_some_and(|r| r.global == ALL_GLOBAL && r.grant);
            self.privs = Some(Privs { generation, superuser, rec });
        }
    }

    /// The session's privileges; `None` when no check applies (embedded,
    /// a superuser, or a view's query).
    pub(crate) fn privs(&self) -> Option<&Privs> {
        let p = self.privs.as_ref()?;
        // Views and subqueries' child sessions run their queries with the
        // rights the outer statement was checked with (a view as its definer).
        if p.superuser || self.view_depth > 0 {
            None
        } else {
            Some(p)
        }
    }

    fn login_names(&self) -> (String, String) {
        self.login.as_ref().map_or(("root".into(), "localhost".into()), |l| (l.user.clone(), l.host.clone()))
    }

    /// 1142 unless the session holds `need` (one privilege) on `db`.`table`.
    pub(crate) fn check_table(&self, need: &str, db: &str, table: &str) -> SqlResult<()> {
        let Some(p) = self.privs() else { return Ok(()) };
        if crate::infoschema::is_schema(db) || p.on_table(db, table) & bit(need) != 0 {
            return Ok(());
        }
        let (u, h) = self.login_names();
        Err(SqlError::new(
            1142,
            "42000",
            format!("{need} command denied to user '{u}'@'{h}' for table `{db}`.`{table}`"),
        ))
    }

    /// 1142 (worded with `word`) unless the session holds some privilege on
    /// `db`.`table` (SHOW CREATE TABLE, SHOW COLUMNS, DESCRIBE).
    pub(crate) fn check_table_any(&self, word: &str, db: &str, table: &str) -> SqlResult<()> {
        let Some(p) = self.privs() else { return Ok(()) };
        if crate::infoschema::is_schema(db) || p.on_table(db, table) != 0 {
            return Ok(());
        }
        let (u, h) = self.login_names();
        Err(SqlError::new(
            1142,
            "42000",
            format!("{word} command denied to user '{u}'@'{h}' for table `{db}`.`{table}`"),
        ))
    }

    /// 1044 unless the session holds `need` on database `db` (`None`: any).
    pub(crate) fn check_db(&self, need: Option<&str>, db: &str) -> SqlResult<()> {
        let Some(p) = self.privs() else { return Ok(()) };
        let ok = crate::infoschema::is_schema(db)
            || match need {
                Some(n) => p.on_db(db) & bit(n) != 0,
                None => p.any_on_db(db),
            };
        if ok {
            return Ok(());
        }
        Err(self.db_denied(db))
    }

    fn db_denied(&self, db: &str) -> SqlError {
        let (u, h) = self.account().unwrap_or(("root".into(), "localhost".into()));
        SqlError::new(1044, "42000", format!("Access denied for user '{u}'@'{h}' to database '{db}'"))
    }

    /// 1227 unless the session holds one of `any` globally.
    pub(crate) fn check_global(&self, any: &[&str]) -> SqlResult<()> {
        let Some(p) = self.privs() else { return Ok(()) };
        if any.iter().any(|n| p.global() & bit(n) != 0) {
            return Ok(());
        }
        Err(SqlError::new(
            1227,
            "42000",
            format!(
                "Access denied; you need (at least one of) the {} privilege(s) for this operation",
                any.join(", ")
            ),
        ))
    }

    /// Whether the session holds `need` globally (true for a superuser).
    pub fn has_global(&self, need: &str) -> bool {
        self.privs().is_none_or(|p| p.global() & bit(need) != 0)
    }

    /// SHOW DATABASES: whether `db` is listed to this session.
    pub(crate) fn sees_db(&self, db: &str) -> bool {
        match self.privs() {
            None => true,
            Some(p) => p.global() & bit("SHOW DATABASES") != 0 || p.any_on_db(db),
        }
    }

    /// SHOW PROCESSLIST: whether the session sees other users' threads.
    pub(crate) fn sees_user(&self, user: &str) -> bool {
        let own = self.login.as_ref().is_none_or(|l| l.user == user);
        own || self.has_global("PROCESS")
    }

    /// KILL of connection `id`: allowed for one's own connections, and with
    /// SUPER or CONNECTION ADMIN for others' (else 1095, as MySQL).
    pub fn may_kill(&mut self, id: u64) -> SqlResult<()> {
        let own_user = self.login.as_ref().map(|l| l.user.clone());
        let target = self.inner.procs.lock().get(&id).map(|p| p.lock().user.clone());
        let same = match (own_user, target) {
            (None, _) | (_, None) => true,
            (Some(a), Some(b)) => a == b,
        };
        if same || self.has_global("SUPER") || self.has_global("CONNECTION ADMIN") {
            return Ok(());
        }
        Err(SqlError::new(1095, "HY000", format!("You are not owner of thread {id}")))
    }
}

/// The checks of statements whose objects are not resolved through FROM or
/// a DML target: DDL, USE, and the rest. Called at dispatch only for a
/// session that is not a superuser.
pub(crate) fn check_statement(s: &mut Session, stmt: &ast::Statement) -> SqlResult<()> {
    use ast::Statement as S;
    if s.privs().is_none() {
        return Ok(());
    }
    let qualify = |s: &Session, n: &ast::ObjectName| crate::ddl::qualify(s, n);
    match stmt {
        S::CreateDatabase { db_name, .. }
        | S::CreateSchema { schema_name: ast::SchemaName::Simple(db_name), .. } => {
            let name = crate::expr::ident_name(db_name).join(".");
            s.check_db(Some("CREATE"), &name)?;
        }
        S::Use(u) => {
            let name = match u {
                ast::Use::Database(n) | ast::Use::Schema(n) | ast::Use::Object(n) | ast::Use::Catalog(n) => {
                    crate::expr::ident_name(n).join(".")
                }
                _ => return Ok(()),
            };
            s.check_db(None, &name)?;
        }
        S::CreateTable(ct) => {
            let (db, t) = qualify(s, &ct.name)?;
            s.check_table("CREATE", &db, &t)?;
        }
        S::CreateView(cv) => {
            let (db, t) = qualify(s, &cv.name)?;
            s.check_table("CREATE VIEW", &db, &t)?;
        }
        S::CreateIndex(ci) => {
            let (db, t) = qualify(s, &ci.table_name)?;
            s.check_table("INDEX", &db, &t)?;
        }
        S::AlterTable(at) => {
            let (db, t) = qualify(s, &at.name)?;
            s.check_table("ALTER", &db, &t)?;
        }
        S::Drop { object_type, names, .. } => {
            for n in names {
                match object_type {
                    ast::ObjectType::Database | ast::ObjectType::Schema => {
                        s.check_db(Some("DROP"), &crate::expr::ident_name(n).join("."))?
                    }
                    _ => {
                        let (db, t) = qualify(s, n)?;
                        s.check_table("DROP", &db, &t)?;
                    }
                }
            }
        }
        S::Truncate(t) => {
            for n in &t.table_names {
                let (db, tb) = qualify(s, &n.name)?;
                s.check_table("DROP", &db, &tb)?;
            }
        }
        S::ExplainTable { table_name, .. } => {
            let (db, t) = qualify(s, table_name)?;
            s.check_table_any("SELECT", &db, &t)?;
        }
        S::RenameTable(rs) => {
            for r in rs {
                let (db, t) = qualify(s, &r.old_name)?;
                s.check_table("ALTER", &db, &t)?;
                s.check_table("DROP", &db, &t)?;
                let (db, t) = qualify(s, &r.new_name)?;
                s.check_table("CREATE", &db, &t)?;
                s.check_table("INSERT", &db, &t)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The checks of SHOW statements that name a table or a database, with
/// MariaDB's errors: SHOW CREATE TABLE/VIEW 1142 "SHOW", SHOW COLUMNS /
/// INDEX 1142 "SELECT", SHOW TABLES / TABLE STATUS / CREATE DATABASE 1044.
pub(crate) fn check_show(s: &Session, st: &crate::lex::ShowStmt) -> SqlResult<()> {
    use crate::lex::ShowKind as K;
    if s.privs().is_none() {
        return Ok(());
    }
    let db = || st.db.clone().or_else(|| s.db.clone());
    match st.kind {
        K::CreateTable | K::CreateView | K::Columns | K::Index => {
            let Some(db) = db() else { return Ok(()) };
            let word = if matches!(st.kind, K::CreateTable | K::CreateView) { "SHOW" } else { "SELECT" };
            s.check_table_any(word, &db, st.table.as_deref().unwrap_or_default())
        }
        K::Tables | K::TableStatus | K::OpenTables | K::CreateDatabase => match db() {
            Some(db) if !(st.kind == K::OpenTables && st.db.is_none()) => s.check_db(None, &db),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum T {
    Word(String),
    Str(Vec<u8>),
    Ident(String),
    Punct(u8),
}

fn tokenize(s: &str) -> SqlResult<Vec<T>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 {
            let st = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80)
            {
                i += 1;
            }
            out.push(T::Word(s[st..i].to_string()));
        } else if c == b'\'' || c == b'"' || c == b'`' {
            let q = c;
            i += 1;
            let mut v = Vec::new();
            loop {
                let Some(&d) = b.get(i) else {
                    return Err(SqlError::syntax(format!("'{}' at line 1", &s[s.len().min(i)..])));
                };
                if d == q {
                    if b.get(i + 1) == Some(&q) {
                        v.push(q);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if d == b'\\' && q != b'`' && i + 1 < b.len() {
                    let e = b[i + 1];
                    if e == b'%' || e == b'_' {
                        // Kept escaped: a literal wildcard in a name.
                        v.push(b'\\');
                    }
                    v.push(match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => 0,
                        b'Z' => 26,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                v.push(d);
                i += 1;
            }
            out.push(if q == b'`' { T::Ident(String::from_utf8_lossy(&v).into_owned()) } else { T::Str(v) });
        } else {
            out.push(T::Punct(c));
            i += 1;
        }
    }
    Ok(out)
}

struct P<'a> {
    text: &'a str,
    t: Vec<T>,
    i: usize,
}

impl P<'_> {
    fn err(&self) -> SqlError {
        // MariaDB quotes the text from the token on; ours quotes the
        // statement's remaining words.
        let rest: Vec<String> = self.t[self.i.min(self.t.len())..]
            .iter()
            .map(|t| match t {
                T::Word(w) => w.clone(),
                T::Str(v) => format!("'{}'", String::from_utf8_lossy(v)),
                T::Ident(n) => format!("`{n}`"),
                T::Punct(p) => (*p as char).to_string(),
            })
            .collect();
        let _ = self.text;
        SqlError::syntax(format!("'{}' at line 1", rest.join(" ")))
    }

    fn peek_kw(&self, kw: &str) -> bool {
        matches!(self.t.get(self.i), Some(T::Word(w)) if w.eq_ignore_ascii_case(kw))
    }

    fn kw(&mut self, kw: &str) -> bool {
        let ok = self.peek_kw(kw);
        if ok {
            self.i += 1;
        }
        ok
    }

    fn kws(&mut self, kws: &[&str]) -> bool {
        let ok = kws
            .iter()
            .enumerate()
            .all(|(k, kw)| matches!(self.t.get(self.i + k), Some(T::Word(w)) if w.eq_ignore_ascii_case(kw)));
        if ok {
            self.i += kws.len();
        }
        ok
    }

    fn expect_kw(&mut self, kw: &str) -> SqlResult<()> {
        if self.kw(kw) {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn punct(&mut self, p: u8) -> bool {
        let ok = self.t.get(self.i) == Some(&T::Punct(p));
        if ok {
            self.i += 1;
        }
        ok
    }

    fn done(&self) -> bool {
        self.i >= self.t.len()
    }

    fn expect_end(&self) -> SqlResult<()> {
        if self.done() {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn string(&mut self) -> SqlResult<Vec<u8>> {
        match self.t.get(self.i) {
            Some(T::Str(v)) => {
                let v = v.clone();
                self.i += 1;
                Ok(v)
            }
            _ => Err(self.err()),
        }
    }

    /// A name part: a word, a quoted name or a string.
    fn name(&mut self) -> SqlResult<String> {
        let r = match self.t.get(self.i) {
            Some(T::Word(w)) => w.clone(),
            Some(T::Ident(n)) => n.clone(),
            Some(T::Str(v)) => String::from_utf8_lossy(v).into_owned(),
            _ => return Err(self.err()),
        };
        self.i += 1;
        Ok(r)
    }

    /// `'u'@'h'`, `u@h`, `u` (host `%`), `CURRENT_USER[()]`.
    fn account(&mut self) -> SqlResult<AcctName> {
        if self.kw("CURRENT_USER") {
            if self.punct(b'(') && !self.punct(b')') {
                return Err(self.err());
            }
            return Ok(AcctName::Current);
        }
        let user = self.name()?;
        let host = if self.punct(b'@') { self.name()? } else { "%".into() };
        if user.chars().count() > 128 {
            return Err(SqlError::new(
                1470,
                "HY000",
                format!("String '{user}' is too long for user name (should be no longer than 128)"),
            ));
        }
        if host.chars().count() > 255 {
            return Err(SqlError::new(
                1470,
                "HY000",
                format!("String '{host}' is too long for host name (should be no longer than 255)"),
            ));
        }
        Ok(AcctName::Named(user, host))
    }

    /// `IDENTIFIED BY [PASSWORD] 'x' | WITH plugin [BY 'pw' | AS 'hash'] |
    /// VIA plugin [USING PASSWORD('pw') | USING 'hash']`, if present.
    fn auth(&mut self) -> SqlResult<Option<Auth>> {
        if !self.kw("IDENTIFIED") {
            return Ok(None);
        }
        if self.kw("BY") {
            if self.kw("PASSWORD") {
                return Auth::from_native_hash(&self.string()?).map(Some);
            }
            return Ok(Some(Auth::from_password(NATIVE, &self.string()?)));
        }
        if !(self.kw("WITH") || self.kw("VIA")) {
            return Err(self.err());
        }
        let plugin = self.name()?.to_ascii_lowercase();
        if plugin != NATIVE && plugin != CACHING_SHA2 {
            return Err(SqlError::new(1524, "HY000", format!("Plugin '{plugin}' is not loaded")));
        }
        if self.kw("BY") {
            return Ok(Some(Auth::from_password(&plugin, &self.string()?)));
        }
        if self.kw("AS") || self.kw("USING") {
            if self.kw("PASSWORD") {
                if !self.punct(b'(') {
                    return Err(self.err());
                }
                let pw = self.string()?;
                if !self.punct(b')') {
                    return Err(self.err());
                }
                return Ok(Some(Auth::from_password(&plugin, &pw)));
            }
            let h = self.string()?;
            if plugin == CACHING_SHA2 {
                return Err(SqlError::unsupported("caching_sha2_password with a stored hash (AS '...')"));
            }
            return Auth::from_native_hash(&h).map(Some);
        }
        Ok(Some(Auth::from_password(&plugin, b"")))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum AcctName {
    Named(String, String),
    Current,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Global,
    /// `db.*` (`*` alone: the current database, resolved at run time: None).
    Db(Option<String>),
    Table(Option<String>, String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Create { or_replace: bool, if_not_exists: bool, users: Vec<(AcctName, Option<Auth>)> },
    Alter { if_exists: bool, users: Vec<(AcctName, Option<Auth>)> },
    Drop { if_exists: bool, users: Vec<AcctName> },
    Rename(Vec<(AcctName, AcctName)>),
    SetPassword { who: Option<AcctName>, auth: Auth },
    Grant { privs: Bits, all: bool, grant_option: bool, target: Target, users: Vec<(AcctName, Option<Auth>)> },
    Revoke { privs: Bits, all: bool, grant_option: bool, target: Option<Target>, users: Vec<AcctName> },
    Flush,
}

/// Parses an account statement (the text `lex.rs` hands over).
pub fn parse(text: &str) -> SqlResult<Stmt> {
    let mut p = P { text, t: tokenize(text)?, i: 0 };
    let st = if p.kw("CREATE") {
        let or_replace = p.kws(&["OR", "REPLACE"]);
        if p.peek_kw("ROLE") {
            return Err(SqlError::unsupported("roles"));
        }
        p.expect_kw("USER")?;
        let if_not_exists = p.kws(&["IF", "NOT", "EXISTS"]);
        Stmt::Create { or_replace, if_not_exists, users: users_with_auth(&mut p)? }
    } else if p.kw("ALTER") {
        if p.peek_kw("ROLE") {
            return Err(SqlError::unsupported("roles"));
        }
        p.expect_kw("USER")?;
        let if_exists = p.kws(&["IF", "EXISTS"]);
        Stmt::Alter { if_exists, users: users_with_auth(&mut p)? }
    } else if p.kw("DROP") {
        if p.peek_kw("ROLE") {
            return Err(SqlError::unsupported("roles"));
        }
        p.expect_kw("USER")?;
        let if_exists = p.kws(&["IF", "EXISTS"]);
        let mut users = vec![p.account()?];
        while p.punct(b',') {
            users.push(p.account()?);
        }
        Stmt::Drop { if_exists, users }
    } else if p.kw("RENAME") {
        p.expect_kw("USER")?;
        let mut pairs = Vec::new();
        loop {
            let a = p.account()?;
            p.expect_kw("TO")?;
            pairs.push((a, p.account()?));
            if !p.punct(b',') {
                break;
            }
        }
        Stmt::Rename(pairs)
    } else if p.kw("SET") {
        if !p.kw("PASSWORD") {
            return Err(SqlError::unsupported("roles"));
        }
        let who = if p.kw("FOR") { Some(p.account()?) } else { None };
        if !p.punct(b'=') {
            return Err(p.err());
        }
        let auth = if p.kw("PASSWORD") {
            if !p.punct(b'(') {
                return Err(p.err());
            }
            let pw = p.string()?;
            if !p.punct(b')') {
                return Err(p.err());
            }
            Auth::from_password(NATIVE, &pw)
        } else {
            Auth::from_native_hash(&p.string()?)?
        };
        Stmt::SetPassword { who, auth }
    } else if p.kw("GRANT") {
        let (privs, all, grant_opt) = priv_list_parse(&mut p)?;
        if !p.kw("ON") {
            // GRANT role TO user
            return Err(SqlError::unsupported("roles"));
        }
        let target = target(&mut p)?;
        p.expect_kw("TO")?;
        let users = users_with_auth(&mut p)?;
        let mut grant_option = grant_opt;
        if p.kw("WITH") {
            loop {
                if p.kws(&["GRANT", "OPTION"]) {
                    grant_option = true;
                } else {
                    return Err(p.err());
                }
                if p.done() {
                    break;
                }
            }
        }
        p.expect_end()?;
        return Ok(Stmt::Grant { privs, all, grant_option, target, users });
    } else if p.kw("REVOKE") {
        let (privs, all, grant_option) = priv_list_parse(&mut p)?;
        let target = if p.kw("ON") {
            Some(target(&mut p)?)
        } else if all && grant_option {
            // REVOKE ALL PRIVILEGES, GRANT OPTION FROM u: everything.
            None
        } else {
            return Err(SqlError::unsupported("roles"));
        };
        p.expect_kw("FROM")?;
        let mut users = vec![p.account()?];
        while p.punct(b',') {
            users.push(p.account()?);
        }
        Stmt::Revoke { privs, all, grant_option, target, users }
    } else if p.kws(&["FLUSH", "PRIVILEGES"]) {
        Stmt::Flush
    } else {
        return Err(p.err());
    };
    p.expect_end()?;
    Ok(st)
}

fn users_with_auth(p: &mut P) -> SqlResult<Vec<(AcctName, Option<Auth>)>> {
    let mut v = Vec::new();
    loop {
        let a = p.account()?;
        let auth = p.auth()?;
        v.push((a, auth));
        if !p.punct(b',') {
            break;
        }
    }
    Ok(v)
}

/// `ALL [PRIVILEGES] | priv [, priv ...]` (GRANT OPTION among them):
/// (bits, ALL, GRANT OPTION).
fn priv_list_parse(p: &mut P) -> SqlResult<(Bits, bool, bool)> {
    let mut bits = 0;
    let mut all = false;
    let mut grant = false;
    loop {
        if p.kw("ALL") {
            p.kw("PRIVILEGES");
            all = true;
        } else if p.kws(&["GRANT", "OPTION"]) {
            grant = true;
        } else if p.kw("USAGE") {
        } else {
            // The longest name the next words spell.
            let mut found = None;
            for n in PRIV_NAMES {
                let words: Vec<&str> = n.split(' ').collect();
                let here = words
                    .iter()
                    .enumerate()
                    .all(|(k, w)| matches!(p.t.get(p.i + k), Some(T::Word(x)) if x.eq_ignore_ascii_case(w)));
                if here && found.is_none_or(|(_, l)| words.len() > l) {
                    found = Some((*n, words.len()));
                }
            }
            let Some((name, len)) = found else { return Err(p.err()) };
            p.i += len;
            bits |= bit(name);
            if p.t.get(p.i) == Some(&T::Punct(b'(')) {
                return Err(SqlError::unsupported("column privileges"));
            }
        }
        if !p.punct(b',') {
            break;
        }
    }
    Ok((bits, all, grant))
}

/// `*.*`, `*`, `db.*`, `db.t`, `t` (after an optional TABLE).
fn target(p: &mut P) -> SqlResult<Target> {
    p.kw("TABLE");
    if p.punct(b'*') {
        if p.punct(b'.') {
            if !p.punct(b'*') {
                return Err(p.err());
            }
            return Ok(Target::Global);
        }
        return Ok(Target::Db(None));
    }
    let a = match p.t.get(p.i) {
        Some(T::Word(w)) => w.clone(),
        Some(T::Ident(n)) => n.clone(),
        _ => return Err(p.err()),
    };
    p.i += 1;
    if p.punct(b'.') {
        if p.punct(b'*') {
            return Ok(Target::Db(Some(a)));
        }
        let b = match p.t.get(p.i) {
            Some(T::Word(w)) => w.clone(),
            Some(T::Ident(n)) => n.clone(),
            _ => return Err(p.err()),
        };
        p.i += 1;
        return Ok(Target::Table(Some(a), b));
    }
    Ok(Target::Table(None, a))
}

// ---------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------

fn q(s: &str) -> String {
    s.replace('\'', "\\'")
}

fn op_failed(op: &str, users: &[(String, String)]) -> SqlError {
    let list: Vec<String> = users.iter().map(|(u, h)| format!("'{}'@'{}'", q(u), q(h))).collect();
    SqlError::new(1396, "HY000", format!("Operation {op} failed for {}", list.join(",")))
}

/// Runs an account statement (`Special::Account`'s text).
pub(crate) fn execute(s: &mut Session, text: &str) -> SqlResult<Outcome> {
    let st = parse(text)?;
    // Account statements commit the open transaction, as in MySQL.
    s.commit_open()?;
    let inner = s.inner.clone();
    let _ddl = inner.ddl.lock();
    let r = run(s, st);
    // Whatever happened, memory follows what the catalog holds.
    s.inner.accounts.load(&s.inner.env, &s.inner.catalog)?;
    r
}

fn resolve(s: &Session, a: &AcctName) -> (String, String) {
    match a {
        AcctName::Named(u, h) => (u.clone(), h.to_ascii_lowercase()),
        AcctName::Current => s.account().unwrap_or(("root".into(), "localhost".into())),
    }
}

fn get(txn: &fractaldb::Txn, s: &Session, u: &str, h: &str) -> SqlResult<Option<AccountRec>> {
    match txn.get(&s.inner.catalog, &key(u, h))? {
        None => Ok(None),
        Some(v) => serde_json::from_slice(&v)
            .map(Some)
            .map_err(|e| SqlError::engine(format!("an account's catalog record is damaged: {e}"))),
    }
}

fn put(txn: &fractaldb::Txn, s: &Session, a: &AccountRec) -> SqlResult<()> {
    txn.put(&s.inner.catalog, &key(&a.user, &a.host), &serde_json::to_vec(a).expect("json"))?;
    Ok(())
}

fn run(s: &mut Session, st: Stmt) -> SqlResult<Outcome> {
    // Privileges the statement needs, before it reads anything.
    match &st {
        // ALTER USER needs CREATE USER even for oneself, as in MariaDB
        // (SET PASSWORD does not).
        Stmt::Create { .. } | Stmt::Drop { .. } | Stmt::Rename(_) | Stmt::Alter { .. } => {
            s.check_global(&["CREATE USER"])?
        }
        Stmt::SetPassword { who: Some(a), .. } => {
            let (u, h) = resolve(s, a);
            if !s.account().is_some_and(|(cu, ch)| cu == u && ch == h) && s.privs().is_some() {
                let p = s.privs().expect("checked");
                if p.global() & bit("CREATE USER") == 0 && p.on_db("mysql") & bit("UPDATE") == 0 {
                    return Err(s.db_denied("mysql"));
                }
            }
        }
        Stmt::Flush => s.check_global(&["RELOAD"])?,
        _ => {}
    }
    let txn = s.inner.env.begin(fractaldb::Isolation::RepeatableRead)?;
    let out = match st {
        Stmt::Flush => Outcome::done(0),
        Stmt::Create { or_replace, if_not_exists, users } => {
            let mut failed = Vec::new();
            for (a, auth) in users {
                let (u, h) = resolve(s, &a);
                let old = get(&txn, s, &u, &h)?;
                if old.is_some() && !or_replace {
                    if if_not_exists {
                        s.warnings.push(Warning::note(
                            1973,
                            format!("Can't create user '{}'@'{}'; it already exists", q(&u), q(&h)),
                        ));
                        continue;
                    }
                    failed.push((u, h));
                    continue;
                }
                let mut rec = AccountRec::new(&u, &h);
                if let Some(a) = auth {
                    rec.set_auth(&a);
                }
                put(&txn, s, &rec)?;
            }
            if !failed.is_empty() {
                txn.abort()?;
                return Err(op_failed("CREATE USER", &failed));
            }
            Outcome::done(0)
        }
        Stmt::Alter { if_exists, users } => {
            let mut failed = Vec::new();
            for (a, auth) in users {
                let (u, h) = resolve(s, &a);
                match get(&txn, s, &u, &h)? {
                    // MariaDB's two notes for a missing account under IF EXISTS.
                    None if if_exists => {
                        s.warnings.push(Warning {
                            level: "Error",
                            code: 1410,
                            message: "You are not allowed to create a user with GRANT".into(),
                        });
                        s.warnings.push(Warning::note(
                            1396,
                            format!("Operation ALTER USER failed for '{}'@'{}'", q(&u), q(&h)),
                        ));
                    }
                    None => failed.push((u, h)),
                    Some(mut rec) => {
                        if let Some(a) = auth {
                            rec.set_auth(&a);
                            put(&txn, s, &rec)?;
                        }
                    }
                }
            }
            if !failed.is_empty() {
                txn.abort()?;
                return Err(op_failed("ALTER USER", &failed));
            }
            Outcome::done(0)
        }
        Stmt::Drop { if_exists, users } => {
            let mut failed = Vec::new();
            for a in users {
                let (u, h) = resolve(s, &a);
                if get(&txn, s, &u, &h)?.is_none() {
                    if if_exists {
                        s.warnings.push(Warning::note(
                            1974,
                            format!("Can't drop user '{}'@'{}'; it doesn't exist", q(&u), q(&h)),
                        ));
                    } else {
                        failed.push((u, h));
                    }
                    continue;
                }
                txn.delete(&s.inner.catalog, &key(&u, &h))?;
            }
            // As MariaDB: the accounts that exist are dropped, the error
            // names the others.
            txn.commit()?;
            if !failed.is_empty() {
                return Err(op_failed("DROP USER", &failed));
            }
            return Ok(Outcome::done(0));
        }
        Stmt::Rename(pairs) => {
            let mut failed = Vec::new();
            for (from, to) in pairs {
                let (u, h) = resolve(s, &from);
                let (nu, nh) = resolve(s, &to);
                let Some(mut rec) = get(&txn, s, &u, &h)? else {
                    failed.push((u, h));
                    continue;
                };
                if get(&txn, s, &nu, &nh)?.is_some() {
                    failed.push((u, h));
                    continue;
                }
                txn.delete(&s.inner.catalog, &key(&u, &h))?;
                rec.user = nu;
                rec.host = nh;
                put(&txn, s, &rec)?;
            }
            txn.commit()?;
            if !failed.is_empty() {
                return Err(op_failed("RENAME USER", &failed));
            }
            return Ok(Outcome::done(0));
        }
        Stmt::SetPassword { who, auth } => {
            let (u, h) = match &who {
                Some(a) => resolve(s, a),
                None => s.account().unwrap_or(("root".into(), "localhost".into())),
            };
            let Some(mut rec) = get(&txn, s, &u, &h)? else {
                txn.abort()?;
                return Err(SqlError::new(1133, "28000", "Can't find any matching row in the user table"));
            };
            // SET PASSWORD keeps the account's plugin.
            let plugin = rec.plugin.clone();
            rec.set_auth(&auth);
            rec.plugin = plugin;
            put(&txn, s, &rec)?;
            Outcome::done(0)
        }
        Stmt::Grant { privs, all, grant_option, target, users } => {
            let target = resolve_target(s, target)?;
            let (level_all, what) = match &target {
                Target::Global => (ALL_GLOBAL, None),
                Target::Db(d) => (db_bits(), Some((d.clone().expect("resolved"), None))),
                Target::Table(d, t) => (table_bits(), Some((d.clone().expect("resolved"), Some(t.clone())))),
            };
            let bits = if all { level_all } else { privs };
            if bits & !level_all != 0 {
                txn.abort()?;
                return Err(match target {
                    Target::Db(_) => SqlError::new(1221, "HY000", "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES"),
                    _ => SqlError::new(
                        1144,
                        "42000",
                        "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
                    ),
                });
            }
            if let Some((db, Some(t))) = &what {
                if s.inner.table(db, t).is_err() && !crate::views::exists(s, db, t)? {
                    txn.abort()?;
                    return Err(SqlError::no_such_table(db, t));
                }
            }
            check_may_grant(s, bits, grant_option, &target)?;
            for (a, auth) in users {
                let (u, h) = resolve(s, &a);
                let mut rec = match get(&txn, s, &u, &h)? {
                    Some(r) => r,
                    None => {
                        txn.abort()?;
                        return Err(SqlError::new(
                            1133,
                            "28000",
                            "Can't find any matching row in the user table",
                        ));
                    }
                };
                if let Some(a) = auth {
                    rec.set_auth(&a);
                }
                match &what {
                    None => {
                        rec.global |= bits;
                        rec.grant |= grant_option;
                    }
                    Some((db, None)) => match rec.dbs.iter_mut().find(|g| g.db == *db) {
                        Some(g) => {
                            g.privs |= bits;
                            g.grant |= grant_option;
                        }
                        None => rec.dbs.push(DbGrant { db: db.clone(), privs: bits, grant: grant_option }),
                    },
                    Some((db, Some(t))) => {
                        match rec.tables.iter_mut().find(|g| g.db == *db && g.table.eq_ignore_ascii_case(t)) {
                            Some(g) => {
                                g.privs |= bits;
                                g.grant |= grant_option;
                            }
                            None => rec.tables.push(TableGrant {
                                db: db.clone(),
                                table: t.clone(),
                                privs: bits,
                                grant: grant_option,
                            }),
                        }
                    }
                }
                put(&txn, s, &rec)?;
            }
            Outcome::done(0)
        }
        Stmt::Revoke { privs, all, grant_option, target, users } => {
            let target = match target {
                None => None,
                Some(t) => Some(resolve_target(s, t)?),
            };
            match &target {
                None => s.check_global(&["CREATE USER"])?,
                Some(t) => check_may_grant(s, if all { 0 } else { privs }, true, t)?,
            }
            for a in users {
                let (u, h) = resolve(s, &a);
                let Some(mut rec) = get(&txn, s, &u, &h)? else {
                    txn.abort()?;
                    return Err(no_such_grant(&u, &h, None));
                };
                match &target {
                    None => {
                        rec.global = 0;
                        rec.grant = false;
                        rec.dbs.clear();
                        rec.tables.clear();
                    }
                    Some(Target::Global) => {
                        rec.global &= if all { 0 } else { !privs };
                        if grant_option || all {
                            rec.grant = false;
                        }
                    }
                    Some(Target::Db(d)) => {
                        let db = d.as_deref().expect("resolved");
                        let Some(g) = rec.dbs.iter_mut().find(|g| g.db == db) else {
                            txn.abort()?;
                            return Err(no_such_grant(&u, &h, None));
                        };
                        g.privs &= if all { 0 } else { !privs };
                        if grant_option || all {
                            g.grant = false;
                        }
                        rec.dbs.retain(|g| g.privs != 0 || g.grant);
                    }
                    Some(Target::Table(d, t)) => {
                        let db = d.as_deref().expect("resolved");
                        let Some(g) =
                            rec.tables.iter_mut().find(|g| g.db == db && g.table.eq_ignore_ascii_case(t))
                        else {
                            txn.abort()?;
                            return Err(no_such_grant(&u, &h, Some(t)));
                        };
                        g.privs &= if all { 0 } else { !privs };
                        if grant_option || all {
                            g.grant = false;
                        }
                        rec.tables.retain(|g| g.privs != 0 || g.grant);
                    }
                }
                put(&txn, s, &rec)?;
            }
            Outcome::done(0)
        }
    };
    txn.commit()?;
    Ok(out)
}

fn no_such_grant(u: &str, h: &str, table: Option<&str>) -> SqlError {
    match table {
        None => SqlError::new(
            1141,
            "42000",
            format!("There is no such grant defined for user '{u}' on host '{h}'"),
        ),
        Some(t) => SqlError::new(
            1147,
            "42000",
            format!("There is no such grant defined for user '{u}' on host '{h}' on table '{t}'"),
        ),
    }
}

/// `*` and `t` name the current database (1046 without one).
fn resolve_target(s: &Session, t: Target) -> SqlResult<Target> {
    Ok(match t {
        Target::Db(None) => Target::Db(Some(s.db.clone().ok_or_else(SqlError::no_db)?)),
        Target::Table(None, t) => Target::Table(Some(s.db.clone().ok_or_else(SqlError::no_db)?), t),
        other => other,
    })
}

/// A grantor must hold what it grants, and GRANT OPTION at that level.
fn check_may_grant(s: &Session, bits: Bits, _grant_option: bool, t: &Target) -> SqlResult<()> {
    let Some(p) = s.privs() else { return Ok(()) };
    let rec = p.rec.clone();
    let (held, can) = match t {
        Target::Global => (p.global(), rec.as_ref().is_some_and(|r| r.grant)),
        Target::Db(d) => {
            let d = d.as_deref().unwrap_or_default();
            (
                p.on_db(d),
                rec.as_ref()
                    .is_some_and(|r| r.grant || r.dbs.iter().any(|g| db_name_matches(&g.db, d) && g.grant)),
            )
        }
        Target::Table(d, tb) => {
            let d = d.as_deref().unwrap_or_default();
            (
                p.on_table(d, tb),
                rec.as_ref().is_some_and(|r| {
                    r.grant
                        || r.dbs.iter().any(|g| db_name_matches(&g.db, d) && g.grant)
                        || r.tables.iter().any(|g| g.db == d && g.table.eq_ignore_ascii_case(tb) && g.grant)
                }),
            )
        }
    };
    if can && bits & !held == 0 {
        return Ok(());
    }
    match t {
        // MariaDB names the account here (not the login).
        Target::Global => Err(SqlError::new(1045, "28000", {
            let (u, h) = s.account().unwrap_or(("root".into(), "localhost".into()));
            format!("Access denied for user '{u}'@'{h}' (using password: YES)")
        })),
        Target::Db(d) => Err(s.db_denied(d.as_deref().unwrap_or_default())),
        Target::Table(d, tb) => {
            let (u, h) = s.login_names();
            Err(SqlError::new(
                1142,
                "42000",
                format!(
                    "GRANT command denied to user '{u}'@'{h}' for table `{}`.`{tb}`",
                    d.as_deref().unwrap_or_default()
                ),
            ))
        }
    }
}

// ---------------------------------------------------------------------------
// SHOW GRANTS, SHOW CREATE USER
// ---------------------------------------------------------------------------

fn ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

fn identified(rec: &AccountRec) -> String {
    if rec.native.is_empty() {
        if rec.sha2.is_empty() && rec.plugin == NATIVE {
            return String::new();
        }
        return format!(" IDENTIFIED VIA {}", rec.plugin);
    }
    if rec.plugin == NATIVE {
        format!(" IDENTIFIED BY PASSWORD '*{}'", rec.native)
    } else {
        format!(" IDENTIFIED VIA {} USING '*{}'", rec.plugin, rec.native)
    }
}

/// The rows of SHOW GRANTS for an account, as MariaDB prints them.
pub fn grants_of(rec: &AccountRec) -> Vec<String> {
    let who = format!("{}@{}", ident(&rec.user), ident(&rec.host));
    let wgo = |g: bool| if g { " WITH GRANT OPTION" } else { "" };
    let mut out = vec![format!(
        "GRANT {} ON *.* TO {who}{}{}",
        priv_list(rec.global, ALL_GLOBAL),
        identified(rec),
        wgo(rec.grant)
    )];
    for g in &rec.dbs {
        out.push(format!(
            "GRANT {} ON {}.* TO {who}{}",
            priv_list(g.privs, db_bits()),
            ident(&g.db),
            wgo(g.grant)
        ));
    }
    for g in &rec.tables {
        out.push(format!(
            "GRANT {} ON {}.{} TO {who}{}",
            priv_list(g.privs, table_bits()),
            ident(&g.db),
            ident(&g.table),
            wgo(g.grant)
        ));
    }
    out
}

fn parse_show_account(s: &Session, name: Option<&str>) -> SqlResult<(String, String)> {
    let Some(text) = name else {
        return Ok(s.account().unwrap_or(("root".into(), "localhost".into())));
    };
    let mut p = P { text, t: tokenize(text)?, i: 0 };
    let a = p.account()?;
    p.expect_end()?;
    Ok(resolve(s, &a))
}

/// SHOW GRANTS [FOR account]: the column's title and the rows.
pub(crate) fn show_grants(s: &mut Session, name: Option<&str>) -> SqlResult<(String, Vec<String>)> {
    let (u, h) = shown_account(s, name)?;
    let list = s.inner.accounts.snapshot();
    let Some(rec) = list.iter().find(|a| a.user == u && a.host == h) else {
        return Err(no_such_grant(&u, &h, None));
    };
    Ok((format!("Grants for {u}@{h}"), grants_of(rec)))
}

/// SHOW CREATE USER account: the column's title and the statement.
pub(crate) fn show_create_user(s: &mut Session, name: Option<&str>) -> SqlResult<(String, String)> {
    let (u, h) = shown_account(s, name)?;
    let list = s.inner.accounts.snapshot();
    let Some(rec) = list.iter().find(|a| a.user == u && a.host == h) else {
        return Err(SqlError::new(
            1396,
            "HY000",
            format!("Operation SHOW CREATE USER failed for '{u}'@'{h}'"),
        ));
    };
    Ok((
        format!("CREATE USER for {u}@{h}"),
        format!("CREATE USER {}@{}{}", ident(&rec.user), ident(&rec.host), identified(rec)),
    ))
}

/// The account SHOW GRANTS / SHOW CREATE USER names; another account's
/// needs SELECT on the `mysql` database (1044), as in MariaDB.
fn shown_account(s: &mut Session, name: Option<&str>) -> SqlResult<(String, String)> {
    let (u, h) = parse_show_account(s, name)?;
    if s.account().is_some_and(|(cu, ch)| !(cu == u && ch == h)) {
        if let Some(p) = s.privs() {
            if p.on_db("mysql") & bit("SELECT") == 0 {
                return Err(s.db_denied("mysql"));
            }
        }
    }
    Ok((u, h))
}

// ---------------------------------------------------------------------------
// What the server asks
// ---------------------------------------------------------------------------

/// An account's credentials, for the server's authentication.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub user: String,
    pub host: String,
    pub plugin: String,
    /// SHA1(SHA1(pw)), `None` for no password.
    pub native: Option<[u8; 20]>,
    /// SHA256(SHA256(pw)), `None` for no password or unknown.
    pub sha2: Option<[u8; 32]>,
    pub has_password: bool,
}

impl crate::db::Database {
    /// The account a client `user` from `peer` (an IP address, or
    /// "localhost" for the Unix socket) logs in as, if any.
    pub fn find_account(&self, user: &str, peer: &str) -> Option<Credentials> {
        let client = ClientHost::from_peer(peer);
        let rec = self.inner.accounts.find(user, &client)?;
        Some(Credentials {
            native: unhex(&rec.native).and_then(|v| v.try_into().ok()),
            sha2: unhex(&rec.sha2).and_then(|v| v.try_into().ok()),
            has_password: rec.has_password(),
            user: rec.user,
            host: rec.host,
            plugin: rec.plugin,
        })
    }

    /// The accounts with an empty password, as `'u'@'h'`.
    pub fn accounts_without_password(&self) -> Vec<String> {
        self.inner
            .accounts
            .snapshot()
            .iter()
            .filter(|a| !a.has_password())
            .map(|a| format!("'{}'@'{}'", a.user, a.host))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acct(u: &str, h: &str) -> AcctName {
        AcctName::Named(u.into(), h.into())
    }

    #[test]
    fn parses_account_statements() {
        let st = parse("CREATE USER IF NOT EXISTS 'bob'@'%' IDENTIFIED BY 'pw', amy@localhost").unwrap();
        let Stmt::Create { if_not_exists: true, users, .. } = st else { panic!("{st:?}") };
        assert_eq!(users[0].0, acct("bob", "%"));
        assert_eq!(users[0].1.as_ref().unwrap().native, hex(&Sha1::digest(Sha1::digest(b"pw"))));
        assert_eq!(users[1], (acct("amy", "localhost"), None));
        assert_eq!(
            parse("DROP USER IF EXISTS u, `v`@\"10.0.0.%\"").unwrap(),
            Stmt::Drop { if_exists: true, users: vec![acct("u", "%"), acct("v", "10.0.0.%")] }
        );
        let Stmt::Grant { privs, all: false, grant_option: true, target, users } =
            parse("GRANT SELECT, CREATE TEMPORARY TABLES, SHOW VIEW ON db.* TO u@h WITH GRANT OPTION")
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(privs, bit("SELECT") | bit("CREATE TEMPORARY TABLES") | bit("SHOW VIEW"));
        assert_eq!(target, Target::Db(Some("db".into())));
        assert_eq!(users[0].0, acct("u", "h"));
        assert!(matches!(
            parse("GRANT ALL PRIVILEGES ON *.* TO u").unwrap(),
            Stmt::Grant { all: true, target: Target::Global, .. }
        ));
        assert!(matches!(
            parse("GRANT INSERT ON t TO u").unwrap(),
            Stmt::Grant { target: Target::Table(None, _), .. }
        ));
        assert!(matches!(
            parse("REVOKE ALL PRIVILEGES, GRANT OPTION FROM u@h").unwrap(),
            Stmt::Revoke { all: true, grant_option: true, target: None, .. }
        ));
        assert!(matches!(
            parse("SET PASSWORD FOR u@h = PASSWORD('x')").unwrap(),
            Stmt::SetPassword { who: Some(_), .. }
        ));
        assert_eq!(parse("SET PASSWORD = 'x'").unwrap_err().code, 1372);
        assert!(matches!(
            parse("CREATE USER c IDENTIFIED WITH caching_sha2_password BY 'x'").unwrap(),
            Stmt::Create { .. }
        ));
        assert_eq!(parse("CREATE USER c IDENTIFIED WITH ed25519").unwrap_err().code, 1524);
        assert_eq!(parse("GRANT SELEKT ON *.* TO u").unwrap_err().code, 1064);
        assert_eq!(parse("GRANT SELECT ON *.* TO").unwrap_err().code, 1064);
        assert_eq!(parse("CREATE USER 'unterminated").unwrap_err().code, 1064);
        assert_eq!(parse("GRANT SELECT (a) ON t TO u").unwrap_err().code, 1235);
        assert!(matches!(parse("RENAME USER a TO b, c@h TO d@h").unwrap(), Stmt::Rename(v) if v.len() == 2));
        assert_eq!(parse("FLUSH PRIVILEGES").unwrap(), Stmt::Flush);
    }

    #[test]
    fn host_patterns_and_order() {
        let lo = ClientHost::from_peer("127.0.0.1");
        assert_eq!(lo.name, "localhost");
        assert!(host_matches("localhost", &lo));
        assert!(host_matches("127.0.0.%", &lo));
        assert!(host_matches("%", &lo));
        assert!(!host_matches("10.%", &lo));
        let sock = ClientHost::from_peer("localhost");
        assert!(host_matches("localhost", &sock) && !host_matches("127.0.0.1", &sock));
        let v6 = ClientHost::from_peer("::ffff:10.1.2.3");
        assert_eq!(v6.ip.as_deref(), Some("10.1.2.3"));
        assert!(host_matches("10.1._.3", &v6) && !host_matches("10.1.2", &v6));
        assert!(
            host_matches("::1", &ClientHost::from_peer("::1"))
                || host_matches("localhost", &ClientHost::from_peer("::1"))
        );

        let mut v = [
            AccountRec::new("bob", "%"),
            AccountRec::new("", "localhost"),
            AccountRec::new("bob", "10.0.%"),
            AccountRec::new("bob", "10.%"),
            AccountRec::new("bob", "localhost"),
        ];
        v.sort_by_key(sort_key);
        let order: Vec<String> = v.iter().map(|a| format!("{}@{}", a.user, a.host)).collect();
        assert_eq!(order, ["bob@localhost", "@localhost", "bob@10.0.%", "bob@10.%", "bob@%"]);
        assert!(db_name_matches("test\\_%", "test_a") && !db_name_matches("test\\_%", "testxa"));
        assert!(db_name_matches("db1", "db1") && !db_name_matches("db1", "db2"));
    }

    #[test]
    fn grants_print_as_mariadb() {
        let mut r = AccountRec::new("bob", "%");
        r.set_auth(&Auth::from_password(NATIVE, b"pw"));
        r.global = bit("SELECT") | bit("INSERT");
        r.dbs.push(DbGrant { db: "db1".into(), privs: db_bits(), grant: true });
        r.tables.push(TableGrant {
            db: "db1".into(),
            table: "t".into(),
            privs: bit("SELECT") | bit("UPDATE"),
            grant: false,
        });
        assert_eq!(
            grants_of(&r),
            [
                "GRANT SELECT, INSERT ON *.* TO `bob`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122'",
                "GRANT ALL PRIVILEGES ON `db1`.* TO `bob`@`%` WITH GRANT OPTION",
                "GRANT SELECT, UPDATE ON `db1`.`t` TO `bob`@`%`",
            ]
        );
        let mut root = AccountRec::new("root", "localhost");
        root.global = ALL_GLOBAL;
        root.grant = true;
        assert_eq!(grants_of(&root), ["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"]);
    }
}
