//! Session state tracking (CLIENT_SESSION_TRACK): what the OK packets of a
//! client that asked for it say about changes to its session, as MariaDB
//! 10.11 reports them.
//!
//! - system variables named in `session_track_system_variables` (MariaDB's
//!   default: autocommit, character_set_client, character_set_connection,
//!   character_set_results, time_zone; `*` is every session variable):
//!   type 0, the name and the value as SHOW VARIABLES prints it;
//! - with `session_track_schema` (ON by default), the current database
//!   after USE, COM_INIT_DB or connect-with-db: type 1;
//! - with `session_track_state_change` (OFF by default), "1" when any of
//!   the session's system variables or its database changed: type 2.
//!
//! The tracker compares the session with what it last reported, at each
//! OK packet: a change is reported by the first OK that follows it (the
//! statement's own, or, after a result set, the next one). Invariant: the
//! baseline is always what the client was last told (or the session's
//! state when it began to be tracked), so no change is reported twice
//! and none is lost.

use fractaldb_sql::{Session, Value};

use crate::proto::{
    put_lenenc_str, SESSION_TRACK_SCHEMA, SESSION_TRACK_STATE_CHANGE, SESSION_TRACK_SYSTEM_VARIABLES,
};

/// MariaDB's default list, in the order MariaDB's OK packets carry them
/// (its hash's order, not the list's): other names follow in list order.
const MARIADB_ORDER: [&str; 5] =
    ["autocommit", "character_set_connection", "character_set_client", "time_zone", "character_set_results"];

#[derive(Clone)]
pub struct Tracker {
    /// `session_track_system_variables` as last seen.
    list: String,
    /// The tracked variables and their values as last reported, in the
    /// order they are sent.
    vars: Vec<(String, String)>,
    /// The database as last reported.
    schema: Option<String>,
    /// Every session variable's value, kept while
    /// `session_track_state_change` is on (`None` while it is off).
    all: Option<Vec<(&'static str, String)>>,
    /// `Session::state_gen` when the baseline was last brought up to date.
    gen: u64,
    /// `follows_gen` of the baseline (recomputed when it is rebuilt).
    follows: bool,
}

/// Session variables whose value is computed per statement, not stored:
/// they change without `Session::state_gen` moving.
const COMPUTED: [&str; 5] = ["timestamp", "last_insert_id", "identity", "warning_count", "error_count"];

/// A variable's value as SHOW VARIABLES prints it (booleans ON/OFF).
fn var_text(name: &str, v: &Value) -> String {
    let on = |b: bool| if b { "ON" } else { "OFF" }.to_string();
    match (v, fractaldb_sql::sysvars::is_bool(name)) {
        (Value::Null, _) => String::new(),
        (Value::Int(i), true) => on(*i != 0),
        (Value::UInt(i), true) => on(*i != 0),
        (Value::Str(b), true) if b == b"1" || b == b"0" => on(b == b"1"),
        _ => v.render(),
    }
}

fn value(s: &Session, name: &str) -> String {
    s.variable(name).map(|v| var_text(name, &v)).unwrap_or_default()
}

fn flag(s: &Session, name: &str) -> bool {
    s.variable(name).and_then(|v| v.to_i64()).unwrap_or(0) != 0
}

/// The session-scoped variables (what `*` tracks).
fn session_names() -> impl Iterator<Item = &'static str> {
    fractaldb_sql::sysvars::DEFS
        .iter()
        .filter(|d| d.scope != fractaldb_sql::sysvars::Scope::Global)
        // `timestamp` reads as the statement's clock: it moves with every
        // statement without anything being SET (MariaDB reports it only
        // when SET; here it is never reported).
        .filter(|d| d.name != "timestamp")
        .map(|d| d.name)
}

/// The names a `session_track_system_variables` value tracks, in the
/// order they are reported; unknown names are skipped.
fn tracked_names(list: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for n in list.split(',').map(|n| n.trim().to_ascii_lowercase()) {
        if n == "*" {
            names.extend(session_names().map(str::to_string));
        } else if fractaldb_sql::sysvars::def(&n).is_some() {
            names.push(n);
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    // A stable sort: MariaDB's five first, in its order, the rest as listed.
    names.sort_by_key(|n| MARIADB_ORDER.iter().position(|m| m == n).unwrap_or(MARIADB_ORDER.len()));
    names
}

fn snapshot_all(s: &Session) -> Vec<(&'static str, String)> {
    session_names().map(|n| (n, value(s, n))).collect()
}

impl Tracker {
    /// A tracker whose baseline is the session as it is now.
    pub fn new(s: &Session) -> Tracker {
        let list = value(s, "session_track_system_variables");
        let vars = tracked_names(&list)
            .into_iter()
            .map(|n| {
                let v = value(s, &n);
                (n, v)
            })
            .collect();
        let all = flag(s, "session_track_state_change").then(|| snapshot_all(s));
        let mut t = Tracker {
            list,
            vars,
            schema: s.current_db().map(str::to_string),
            all,
            gen: s.state_gen(),
            follows: false,
        };
        t.follows = t.follows_gen();
        t
    }

    /// Whether every tracked value moves only with `Session::state_gen`:
    /// no state-change tracking (it compares every variable, computed
    /// ones too), no computed or GLOBAL-only variable in the list.
    fn follows_gen(&self) -> bool {
        self.all.is_none()
            && self.vars.iter().all(|(n, _)| {
                !COMPUTED.contains(&n.as_str())
                    && fractaldb_sql::sysvars::def(n)
                        .is_some_and(|d| d.scope != fractaldb_sql::sysvars::Scope::Global)
            })
    }

    /// The changes since the last call (or since `new`), encoded as the
    /// entries of an OK packet's session state block; empty when nothing
    /// is to be reported. The baseline moves to the session as it is now.
    ///
    /// Every OK packet asks; almost every statement changes nothing, and
    /// while the session's state generation stands still the comparison
    /// (a lookup and a rendering per tracked variable) is skipped.
    pub fn changes(&mut self, s: &Session) -> Vec<u8> {
        let gen = s.state_gen();
        if gen == self.gen && self.follows {
            debug_assert!(
                self.clone().compare(s).is_empty(),
                "session state changed without Session::state_gen moving"
            );
            return Vec::new();
        }
        self.gen = gen;
        let out = self.compare(s);
        self.follows = self.follows_gen();
        out
    }

    /// What `changes` reports, found by comparing every tracked value.
    fn compare(&mut self, s: &Session) -> Vec<u8> {
        let mut out = Vec::new();
        let mut changed = false;
        // System variables. A variable that begins to be tracked (the list
        // changed) starts from its value now, unreported, except the list
        // variable itself, which changed in this statement.
        let list = value(s, "session_track_system_variables");
        if list != self.list {
            let old_list = std::mem::replace(&mut self.list, list.clone());
            let old: Vec<(String, String)> = std::mem::take(&mut self.vars);
            self.vars = tracked_names(&list)
                .into_iter()
                .map(|n| {
                    let base = if n == "session_track_system_variables" {
                        old_list.clone()
                    } else {
                        old.iter()
                            .find(|(o, _)| *o == n)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_else(|| value(s, &n))
                    };
                    (n, base)
                })
                .collect();
            changed = true;
        }
        for (name, last) in &mut self.vars {
            let now = value(s, name);
            if now != *last {
                let mut e = Vec::new();
                put_lenenc_str(&mut e, name.as_bytes());
                put_lenenc_str(&mut e, now.as_bytes());
                out.push(SESSION_TRACK_SYSTEM_VARIABLES);
                put_lenenc_str(&mut out, &e);
                *last = now;
                changed = true;
            }
        }
        // The database.
        let schema = s.current_db().map(str::to_string);
        if schema != self.schema {
            if flag(s, "session_track_schema") {
                let mut e = Vec::new();
                put_lenenc_str(&mut e, schema.as_deref().unwrap_or("").as_bytes());
                out.push(SESSION_TRACK_SCHEMA);
                put_lenenc_str(&mut out, &e);
            }
            self.schema = schema;
            changed = true;
        }
        // Any change at all, while state change tracking is on (turning it
        // on is one).
        let on = flag(s, "session_track_state_change");
        match (on, self.all.as_mut()) {
            (false, _) => self.all = None,
            (true, None) => {
                self.all = Some(snapshot_all(s));
                changed = true;
            }
            (true, Some(all)) => {
                for (name, last) in all.iter_mut() {
                    let now = value(s, name);
                    if now != *last {
                        *last = now;
                        changed = true;
                    }
                }
            }
        }
        if on && changed {
            out.push(SESSION_TRACK_STATE_CHANGE);
            put_lenenc_str(&mut out, b"1");
        }
        out
    }

    /// Forgets what was reported: the session was reset (COM_RESET_CONNECTION,
    /// COM_CHANGE_USER); the baseline is the fresh session.
    pub fn rebase(&mut self, s: &Session) {
        *self = Tracker::new(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_mariadb_order_then_listed() {
        let n = tracked_names("time_zone, character_set_client,sql_mode,autocommit,nope,autocommit");
        assert_eq!(n, vec!["autocommit", "character_set_client", "time_zone", "sql_mode"]);
        assert!(tracked_names("*").len() > 20);
        assert!(tracked_names("").is_empty());
    }
}
