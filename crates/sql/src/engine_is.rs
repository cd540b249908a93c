//! The INFORMATION_SCHEMA views of the engine, named and shaped as
//! TokuDB's (Percona's `tokudb_information_schema.cc`), so the queries
//! operators ran against TokuDB run here:
//!
//! - TOKUDB_FILE_MAP: each table's dictionaries and their files;
//! - TOKUDB_FRACTAL_TREE_INFO: the same with each file's block numbers
//!   handed out, blocks in use, file bytes and bytes in use;
//! - TOKUDB_TRX: the open transactions, the connection running each, and
//!   seconds since it began;
//! - TOKUDB_LOCKS: every key range lock held;
//! - TOKUDB_LOCK_WAITS: every lock request waiting, once per transaction
//!   in its way, with when the wait began (milliseconds since the epoch).
//!
//! A dictionary is named as the engine names it (`db/table/main`,
//! `db/table/status`, `db/table/key-<index>`), and split into schema,
//! table and the dictionary's part (`main`, `status`, `key-<index>`), as
//! TokuDB split its `./db/table-main`. Lock ends are the key bytes in
//! lower-case hex, `-infinity` and `+infinity` beyond every key, as TokuDB
//! printed them.
//!
//! Who sees what: the dictionaries of the tables the session holds some
//! privilege on; the transactions, locks and waits of its own account's
//! connections, and everyone's with the PROCESS privilege (as PROCESSLIST:
//! transactions of no connection, the server's own, only with it).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use fractaldb::{Dictionary, LockEnd};

use crate::catalog::IndexKind;
use crate::error::SqlResult;
use crate::session::Session;
use crate::value::Value;

/// The views' names and columns, as `infoschema::VIEWS` lists views.
pub(crate) const VIEWS: &[(&str, &str)] = &[
    ("TOKUDB_FILE_MAP", "dictionary_name varchar(256) NO|internal_file_name varchar(256) NO|table_schema varchar(256) NO|table_name varchar(256) NO|table_dictionary_name varchar(256) NO"),
    ("TOKUDB_FRACTAL_TREE_INFO", "dictionary_name varchar(256) NO|internal_file_name varchar(256) NO|bt_num_blocks_allocated bigint(21) NO|bt_num_blocks_in_use bigint(21) NO|bt_size_allocated bigint(21) NO|bt_size_in_use bigint(21) NO|table_schema varchar(256) NO|table_name varchar(256) NO|table_dictionary_name varchar(256) NO"),
    ("TOKUDB_TRX", "trx_id bigint(21) NO|trx_mysql_thread_id bigint(21) NO|trx_time bigint(21) NO"),
    ("TOKUDB_LOCKS", "locks_trx_id bigint(21) NO|locks_mysql_thread_id bigint(21) NO|locks_dname varchar(256) NO|locks_key_left varchar(256) NO|locks_key_right varchar(256) NO|locks_table_schema varchar(256) NO|locks_table_name varchar(256) NO|locks_table_dictionary_name varchar(256) NO"),
    ("TOKUDB_LOCK_WAITS", "requesting_trx_id bigint(21) NO|blocking_trx_id bigint(21) NO|lock_waits_dname varchar(256) NO|lock_waits_key_left varchar(256) NO|lock_waits_key_right varchar(256) NO|lock_waits_start_time bigint(21) NO|lock_waits_table_schema varchar(256) NO|lock_waits_table_name varchar(256) NO|lock_waits_table_dictionary_name varchar(256) NO"),
];

/// A dictionary of a table: its handle, and (schema, table, part).
struct Dict {
    handle: Dictionary,
    schema: String,
    table: String,
    part: String,
}

/// The dictionaries of every table (`visible_only`: of the tables the
/// session holds a privilege on), by engine name.
fn dictionaries(s: &Session, visible_only: bool) -> Vec<Dict> {
    let mut out = Vec::new();
    for t in crate::infoschema::tables(s) {
        let def = &t.def;
        if visible_only && s.check_table_any("SELECT", &def.db, &def.name).is_err() {
            continue;
        }
        let mut add = |handle: &Dictionary, part: String| {
            out.push(Dict { handle: handle.clone(), schema: def.db.clone(), table: def.name.clone(), part })
        };
        add(&t.main, "main".into());
        add(&t.status, "status".into());
        for (ix, d) in def.indexes.iter().zip(&t.sec) {
            if let (false, Some(d)) = (ix.kind == IndexKind::Primary, d) {
                add(d, format!("key-{}", ix.name));
            }
        }
    }
    out.sort_by(|a, b| a.handle.name().cmp(b.handle.name()));
    out
}

fn file_name(d: &Dictionary) -> String {
    d.file_path().file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// A lock end as TokuDB printed it.
fn pretty(end: &LockEnd) -> String {
    match end {
        LockEnd::Min => "-infinity".into(),
        LockEnd::Max => "+infinity".into(),
        LockEnd::Key(k) => k.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Which connections' transactions the session sees: by connection id,
/// and whether it sees those of no connection.
fn visible_connections(s: &Session) -> (HashMap<u64, bool>, bool) {
    let conns = s.inner.processes().into_iter().map(|(id, p)| (id, s.sees_user(&p.user))).collect();
    (conns, s.has_global("PROCESS"))
}

/// The rows of view `name` (one of `VIEWS`), or `None` for another view.
pub(crate) fn rows(s: &Session, name: &str) -> SqlResult<Option<Vec<Vec<Value>>>> {
    let str_ = |v: &str| Value::str(v);
    let int = |v: u64| Value::Int(v.min(i64::MAX as u64) as i64);
    Ok(Some(match name {
        "TOKUDB_FILE_MAP" => dictionaries(s, true)
            .into_iter()
            .map(|d| {
                vec![
                    str_(d.handle.name()),
                    str_(&file_name(&d.handle)),
                    str_(&d.schema),
                    str_(&d.table),
                    str_(&d.part),
                ]
            })
            .collect(),
        "TOKUDB_FRACTAL_TREE_INFO" => {
            let mut out = Vec::new();
            for d in dictionaries(s, true) {
                // A dictionary dropped since the list was taken is skipped.
                let Ok(sp) = d.handle.space() else { continue };
                out.push(vec![
                    str_(d.handle.name()),
                    str_(&file_name(&d.handle)),
                    int(sp.block_numbers),
                    int(sp.blocks_in_use),
                    int(sp.file_bytes),
                    int(sp.live_bytes),
                    str_(&d.schema),
                    str_(&d.table),
                    str_(&d.part),
                ]);
            }
            out
        }
        "TOKUDB_TRX" | "TOKUDB_LOCKS" | "TOKUDB_LOCK_WAITS" => {
            let env = &s.inner.env;
            let (conns, sees_all) = visible_connections(s);
            let live = env.live_transactions();
            let client: HashMap<u64, u64> = live.iter().map(|t| (t.id, t.client_id)).collect();
            // Whether the session sees transaction `id` (one that ended
            // since `live` was read is not shown).
            let sees = |id: u64| match client.get(&id) {
                Some(0) => sees_all,
                Some(c) => conns.get(c).copied().unwrap_or(sees_all),
                None => false,
            };
            let dicts: HashMap<String, Dict> =
                dictionaries(s, false).into_iter().map(|d| (d.handle.name().to_string(), d)).collect();
            let split = |name: &str| match dicts.get(name) {
                Some(d) => [str_(&d.schema), str_(&d.table), str_(&d.part)],
                None => [str_(""), str_(""), str_(name)],
            };
            let now = SystemTime::now();
            match name {
                "TOKUDB_TRX" => live
                    .iter()
                    .filter(|t| sees(t.id))
                    .map(|t| {
                        let secs = now.duration_since(t.started).map_or(0, |d| d.as_secs());
                        vec![int(t.id), int(t.client_id), int(secs)]
                    })
                    .collect(),
                "TOKUDB_LOCKS" => env
                    .locks()
                    .into_iter()
                    .filter(|l| sees(l.txn_id))
                    .map(|l| {
                        let mut r = vec![
                            int(l.txn_id),
                            int(client.get(&l.txn_id).copied().unwrap_or(0)),
                            str_(&l.dictionary),
                            str_(&pretty(&l.left)),
                            str_(&pretty(&l.right)),
                        ];
                        r.extend(split(&l.dictionary));
                        r
                    })
                    .collect(),
                _ => env
                    .lock_waits()
                    .into_iter()
                    .filter(|w| sees(w.requesting_txn_id))
                    .map(|w| {
                        let ms = w.started.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
                        let mut r = vec![
                            int(w.requesting_txn_id),
                            int(w.blocking_txn_id),
                            str_(&w.dictionary),
                            str_(&pretty(&w.left)),
                            str_(&pretty(&w.right)),
                            int(ms),
                        ];
                        r.extend(split(&w.dictionary));
                        r
                    })
                    .collect(),
            }
        }
        _ => return Ok(None),
    }))
}
