//! System variables (`@@x`, SET [GLOBAL|SESSION], SHOW VARIABLES) and the
//! status counters (SHOW STATUS).
//!
//! Every variable the server knows is in [`DEFS`]: its scope (MariaDB's:
//! GLOBAL only, SESSION only, or both), whether SET may change it, its kind
//! (which values it takes, how SHOW VARIABLES prints it) and its built-in
//! default. The global values live in [`Globals`] (one per `Database`),
//! filled at open from the defaults, then from `DbOptions::variables` (the
//! server's my.cnf and flags). A new session reads the global values of
//! both-scoped variables through a snapshot taken when it starts, so
//! `SET GLOBAL` changes later sessions only (as in MySQL); GLOBAL-only
//! variables (`max_connections`, `slow_query_log`) are read live.
//! Nothing is persisted: a restart starts from the configuration again.
//!
//! Invariant: every name `Session::sysvar` answers for is in `DEFS` (the
//! unit test checks it), so SHOW VARIABLES lists each one once.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{SqlError, SqlResult};
use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Global,
    Session,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unsigned integer from `.0` to `.1` (values outside are clamped
    /// with warning 1292, as MariaDB does).
    Int(u64, u64),
    /// ON/OFF (stored 1/0).
    Bool,
    /// Seconds with 6 decimals (long_query_time).
    Secs,
    Str,
}

pub struct Def {
    pub name: &'static str,
    pub scope: Scope,
    /// SET may change it.
    pub dynamic: bool,
    pub kind: Kind,
    pub default: &'static str,
}

const fn d(name: &'static str, scope: Scope, dynamic: bool, kind: Kind, default: &'static str) -> Def {
    Def { name, scope, dynamic, kind, default }
}

use Kind::{Bool, Int, Secs, Str};
use Scope::{Both, Global as G, Session as S};

const U32: u64 = u32::MAX as u64;
const TIMEOUT_MAX: u64 = 31_536_000;

/// Every system variable, sorted by name.
pub static DEFS: &[Def] = &[
    d("auto_increment_increment", Both, true, Int(1, 65535), "1"),
    d("auto_increment_offset", Both, true, Int(1, 65535), "1"),
    d("autocommit", Both, true, Bool, "1"),
    d("big_tables", Both, true, Bool, "0"),
    d("bind_address", G, false, Str, "127.0.0.1"),
    d("character_set_client", Both, true, Str, "utf8mb4"),
    d("character_set_connection", Both, true, Str, "utf8mb4"),
    d("character_set_database", Both, true, Str, "utf8mb4"),
    d("character_set_results", Both, true, Str, "utf8mb4"),
    d("character_set_server", Both, true, Str, "utf8mb4"),
    d("check_constraint_checks", Both, true, Bool, "1"),
    d("collation_connection", Both, true, Str, "utf8mb4_general_ci"),
    d("collation_database", Both, true, Str, "utf8mb4_general_ci"),
    d("collation_server", Both, true, Str, "utf8mb4_general_ci"),
    d("concurrent_insert", G, true, Str, "AUTO"),
    d("datadir", G, false, Str, ""),
    d("default_storage_engine", Both, true, Str, "FractalDB"),
    d("default_week_format", Both, true, Int(0, 7), "0"),
    d("div_precision_increment", Both, true, Int(0, 38), "4"),
    d("enforce_storage_engine", Both, true, Str, ""),
    d("error_count", S, false, Int(0, u64::MAX), "0"),
    d("foreign_key_checks", Both, true, Bool, "1"),
    // DISABLE KEYS defers non-unique indexes, LOAD DATA into an empty
    // table does too; OFF: both keep every index up to date (bulkload.rs).
    d("fractaldb_bulk_load", Both, true, Bool, "1"),
    d("group_concat_max_len", Both, true, Int(4, U32), "1048576"),
    d("have_dynamic_loading", G, false, Str, "NO"),
    d("have_ssl", G, false, Str, "DISABLED"),
    d("hostname", G, false, Str, "localhost"),
    d("identity", S, true, Int(0, u64::MAX), "0"),
    d("innodb_lock_wait_timeout", Both, true, Int(0, 1_073_741_824), "4"),
    // InnoDB's persistent optimizer statistics: there is no InnoDB here, so
    // they are kept (SET GLOBAL works, as scripts save and restore them)
    // and change nothing; fractaldb's own statistics are ANALYZE's.
    d("innodb_stats_persistent", G, true, Bool, "1"),
    d("innodb_stats_persistent_sample_pages", G, true, Int(1, u64::MAX), "20"),
    d("insert_id", S, true, Int(0, u64::MAX), "0"),
    d("interactive_timeout", Both, true, Int(1, TIMEOUT_MAX), "28800"),
    // The optimizer knobs below (join_buffer_*, optimizer_*, sort_buffer_size)
    // take MariaDB's defaults and ranges; our planner reads none of them.
    d("join_buffer_size", Both, true, Int(128, u64::MAX), "262144"),
    d("join_buffer_space_limit", Both, true, Int(2048, u64::MAX), "2097152"),
    d("join_cache_level", Both, true, Int(0, 8), "2"),
    d("last_insert_id", S, true, Int(0, u64::MAX), "0"),
    d("license", G, false, Str, "Apache-2.0"),
    d("lock_wait_timeout", Both, true, Int(0, TIMEOUT_MAX), "86400"),
    d("log_bin", G, false, Bool, "0"),
    d("log_error", G, false, Str, ""),
    d("long_query_time", Both, true, Secs, "10"),
    d("lower_case_table_names", G, false, Int(0, 2), "0"),
    d("max_allowed_packet", Both, true, Int(1024, 1 << 30), "16777216"),
    d("max_connections", G, true, Int(1, 100_000), "151"),
    d("max_heap_table_size", Both, true, Int(16384, u64::MAX), "16777216"),
    d("max_recursive_iterations", Both, true, Int(0, U32), "4294967295"),
    d("net_read_timeout", Both, true, Int(1, TIMEOUT_MAX), "30"),
    d("net_write_timeout", Both, true, Int(1, TIMEOUT_MAX), "60"),
    d("note_verbosity", Both, true, Str, "basic,explain"),
    d("old_passwords", Both, true, Bool, "0"),
    d("optimizer_prune_level", Both, true, Int(0, 2), "2"),
    d("optimizer_search_depth", Both, true, Int(0, 62), "62"),
    // MariaDB's default; settable, but our planner reads no flag of it.
    d(
        "optimizer_switch",
        Both,
        true,
        Str,
        "index_merge=on,index_merge_union=on,index_merge_sort_union=on,index_merge_intersection=on,index_merge_sort_intersection=off,engine_condition_pushdown=off,index_condition_pushdown=on,derived_merge=on,derived_with_keys=on,firstmatch=on,loosescan=on,materialization=on,in_to_exists=on,semijoin=on,partial_match_rowid_merge=on,partial_match_table_scan=on,subquery_cache=on,mrr=off,mrr_cost_based=off,mrr_sort_keys=off,outer_join_with_cache=on,semijoin_with_cache=on,join_cache_incremental=on,join_cache_hashed=on,join_cache_bka=on,optimize_join_buffer_size=on,table_elimination=on,extended_keys=on,exists_to_in=on,orderby_uses_equalities=on,condition_pushdown_for_derived=on,split_materialized=on,condition_pushdown_for_subquery=on,rowid_filter=on,condition_pushdown_from_having=on,not_null_range_scan=off,hash_join_cardinality=off,cset_narrowing=off",
    ),
    d("optimizer_use_condition_selectivity", Both, true, Int(1, 5), "4"),
    d("performance_schema", G, false, Bool, "0"),
    d("port", G, false, Int(0, 65535), "3306"),
    d("profiling", Both, true, Bool, "0"),
    d("protocol_version", G, false, Int(0, 255), "10"),
    d("read_only", G, false, Bool, "0"),
    d("server_id", G, true, Int(1, U32), "1"),
    d("session_track_schema", Both, true, Bool, "1"),
    d("session_track_state_change", Both, true, Bool, "0"),
    d(
        "session_track_system_variables",
        Both,
        true,
        Str,
        "autocommit,character_set_client,character_set_connection,character_set_results,time_zone",
    ),
    d("slow_query_log", G, true, Bool, "0"),
    d("slow_query_log_file", G, true, Str, ""),
    d("socket", G, false, Str, ""),
    d("sort_buffer_size", Both, true, Int(1024, u64::MAX), "2097152"),
    d("sql_auto_is_null", Both, true, Bool, "0"),
    d("sql_big_selects", Both, true, Bool, "1"),
    d("sql_log_bin", S, true, Bool, "1"),
    d("sql_mode", Both, true, Str, crate::session::DEFAULT_SQL_MODE),
    d("sql_notes", Both, true, Bool, "1"),
    d("sql_quote_show_create", Both, true, Bool, "1"),
    d("sql_safe_updates", Both, true, Bool, "0"),
    d("sql_select_limit", Both, true, Int(0, u64::MAX), "18446744073709551615"),
    d("sql_warnings", Both, true, Bool, "0"),
    d("storage_engine", Both, true, Str, "FractalDB"),
    d("system_time_zone", G, false, Str, "UTC"),
    d("thread_handling", G, false, Str, "one-thread-per-connection"),
    d("thread_pool_size", G, false, Int(1, 100_000), "2"),
    d("thread_pool_stall_limit", G, false, Int(1, U32), "500"),
    d("time_zone", Both, true, Str, "SYSTEM"),
    d("timestamp", S, true, Str, "0"),
    d("tmp_memory_table_size", Both, true, Int(1024, u64::MAX), "16777216"),
    d("tmp_table_size", Both, true, Int(1024, u64::MAX), "16777216"),
    d("tokudb_backup_dir", S, true, Str, ""),
    d("tokudb_backup_last_error", Both, true, Int(0, U32), "0"),
    d("tokudb_backup_last_error_string", Both, true, Str, ""),
    d("tokudb_backup_throttle", Both, true, Int(0, u64::MAX), "18446744073709551615"),
    // Node size, basement size and fanout of new tables (`rowformat.rs`,
    // "Block sizes"): TokuDB's variables with the engine's defaults and
    // bounds (`fractaldb::DictOptions`), not TokuDB's 4 MiB / 64 KiB.
    d("tokudb_block_size", Both, true, Int(4096, 128 << 20), "1048576"),
    d("tokudb_cache_size", G, false, Int(0, u64::MAX), "67108864"),
    d("tokudb_checkpointing_period", G, false, Int(0, U32), "60"),
    d("tokudb_commit_sync", G, false, Bool, "1"),
    d("tokudb_directio", G, false, Bool, "1"),
    d("tokudb_enable_fast_update", Both, true, Bool, "0"),
    d("tokudb_enable_fast_upsert", Both, true, Bool, "0"),
    d("tokudb_fanout", Both, true, Int(2, 1024), "16"),
    d("tokudb_fsync_log_period", G, false, Int(0, U32), "1000"),
    d("tokudb_loader_memory_size", Both, true, Int(0, u64::MAX), "100000000"),
    d("tokudb_lock_timeout", Both, true, Int(0, U32), "4000"),
    d("tokudb_read_block_size", Both, true, Int(4096, U32), "8192"),
    // The codec of new tables without a ROW_FORMAT (rowformat.rs).
    d("tokudb_row_format", Both, true, Str, crate::rowformat::VAR_DEFAULT),
    d("transaction_isolation", Both, true, Str, "REPEATABLE-READ"),
    d("transaction_read_only", Both, true, Bool, "0"),
    d("tx_isolation", Both, true, Str, "REPEATABLE-READ"),
    d("tx_read_only", Both, true, Bool, "0"),
    d("unique_checks", Both, true, Bool, "1"),
    d("version", G, false, Str, crate::SERVER_VERSION),
    d("version_comment", G, false, Str, "fractaldb"),
    d("version_compile_machine", G, false, Str, "x86_64"),
    d("version_compile_os", G, false, Str, "Linux"),
    d("wait_timeout", Both, true, Int(1, TIMEOUT_MAX), "28800"),
    d("warning_count", S, false, Int(0, u64::MAX), "0"),
];

/// The definition of `name` (lower case).
///
/// A hash lookup, not a binary search of `DEFS`: every OK packet of a
/// client that tracks session state looks up about seven names
/// (`fractaldb_server::track`), and the search's string comparisons were
/// 1.3% of the server's time under sysbench's insert at 80 threads.
pub fn def(name: &str) -> Option<&'static Def> {
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&'static str, &'static Def>> =
        std::sync::OnceLock::new();
    BY_NAME.get_or_init(|| DEFS.iter().map(|d| (d.name, d)).collect()).get(name).copied()
}

/// Whether SHOW VARIABLES prints it ON/OFF.
pub fn is_bool(name: &str) -> bool {
    def(name).is_some_and(|d| d.kind == Kind::Bool)
}

/// `text` (a my.cnf value or a flag) as the value of variable `d`.
pub fn parse_text(d: &Def, text: &str) -> Result<Value, String> {
    let t = text.trim();
    Ok(match d.kind {
        Kind::Bool => match t.to_ascii_uppercase().as_str() {
            "ON" | "TRUE" | "1" | "YES" | "" => Value::Int(1),
            "OFF" | "FALSE" | "0" | "NO" => Value::Int(0),
            _ => return Err(format!("'{t}' is not ON or OFF")),
        },
        Kind::Int(lo, hi) => {
            let n = parse_size(t).ok_or_else(|| format!("'{t}' is not a number"))?;
            Value::UInt(n.clamp(lo, hi))
        }
        Kind::Secs => {
            let f: f64 = t.parse().map_err(|_| format!("'{t}' is not a number of seconds"))?;
            secs_value(f.max(0.0))
        }
        Kind::Str if d.name == "tokudb_row_format" => {
            crate::rowformat::check_var(&Value::str(t)).map_err(|_| format!("'{t}' is no row format"))?
        }
        Kind::Str => Value::str(t),
    })
}

/// A number with MySQL's K/M/G/T suffixes (`64M`).
pub fn parse_size(t: &str) -> Option<u64> {
    let t = t.trim();
    let (num, mul) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

fn secs_value(f: f64) -> Value {
    let micros = (f * 1e6).round() as i64;
    Value::Decimal(bigdecimal::BigDecimal::new(micros.into(), 6))
}

/// A value SET gives variable `d` (as MariaDB checks it): integers must be
/// integers (1232 otherwise) and are clamped into range with warning 1292;
/// booleans take ON/OFF/1/0 (1231 otherwise). Returns the value and the
/// warning, if any.
pub fn check_set(d: &Def, v: &Value) -> SqlResult<(Value, Option<crate::error::Warning>)> {
    match d.kind {
        Kind::Int(lo, hi) => {
            let n: i128 = match v {
                Value::Int(i) => *i as i128,
                Value::UInt(u) => *u as i128,
                _ => return Err(incorrect_type(d.name)),
            };
            let c = n.clamp(lo as i128, hi as i128);
            let w = (c != n).then(|| {
                crate::error::Warning::warn(
                    1292,
                    format!("Truncated incorrect {} value: '{}'", d.name, v.render()),
                )
            });
            Ok((Value::UInt(c as u64), w))
        }
        Kind::Bool => {
            let on = match v {
                Value::Str(s) => match String::from_utf8_lossy(s).to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => true,
                    "OFF" | "FALSE" | "0" => false,
                    _ => return Err(SqlError::wrong_value_for_var(d.name, &v.render())),
                },
                Value::Int(0) | Value::UInt(0) => false,
                Value::Int(1) | Value::UInt(1) => true,
                other => return Err(SqlError::wrong_value_for_var(d.name, &other.render())),
            };
            Ok((Value::Int(on as i64), None))
        }
        Kind::Secs => {
            let f = match v {
                Value::Str(_) | Value::Null => return Err(incorrect_type(d.name)),
                other => other.to_f64().ok_or_else(|| incorrect_type(d.name))?,
            };
            Ok((secs_value(f.max(0.0)), None))
        }
        // A number of seconds (strings, NULL, temporals: 1232), as MariaDB:
        // below 0 or past 2038 a 1292 warning and 0 (the real clock) or
        // the largest TIMESTAMP second.
        Kind::Str if d.name == "timestamp" => {
            let f = match v {
                Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_) => {
                    v.to_f64().ok_or_else(|| incorrect_type(d.name))?
                }
                _ => return Err(incorrect_type(d.name)),
            };
            const MAX: f64 = 2_147_483_647.0;
            let truncated = || {
                Some(crate::error::Warning::warn(
                    1292,
                    format!("Truncated incorrect {} value: '{}'", d.name, v.render()),
                ))
            };
            Ok(if f < 0.0 || f.is_nan() {
                (Value::Int(0), truncated())
            } else if f > MAX {
                (Value::Int(MAX as i64), truncated())
            } else {
                (v.clone(), None)
            })
        }
        Kind::Str if d.name == "time_zone" => Ok((Value::str(check_time_zone(v)?.name()), None)),
        Kind::Str if d.name == "tokudb_row_format" => Ok((crate::rowformat::check_var(v)?, None)),
        Kind::Str => Ok((v.clone(), None)),
    }
}

/// A value for `time_zone`: a string naming a zone `temporal::parse_tz`
/// knows (else 1298, as MariaDB), NULL 1231, a number 1232.
pub fn check_time_zone(v: &Value) -> SqlResult<crate::temporal::TimeZone> {
    match v {
        Value::Str(s) => {
            let name = String::from_utf8_lossy(s);
            crate::temporal::parse_tz(&name).ok_or_else(|| unknown_time_zone(&name))
        }
        Value::Null => Err(SqlError::wrong_value_for_var("time_zone", "NULL")),
        _ => Err(incorrect_type("time_zone")),
    }
}

/// 1298 Unknown or incorrect time zone.
pub fn unknown_time_zone(name: &str) -> SqlError {
    SqlError::new(1298, "HY000", format!("Unknown or incorrect time zone: '{name}'"))
}

fn incorrect_type(name: &str) -> SqlError {
    SqlError::new(1232, "42000", format!("Incorrect argument type to variable '{name}'"))
}

/// 1228: SET GLOBAL of a SESSION-only variable.
pub fn session_only(name: &str) -> SqlError {
    SqlError::new(
        1228,
        "HY000",
        format!("Variable '{name}' is a SESSION variable and can't be used with SET GLOBAL"),
    )
}

/// 1229: SET [SESSION] of a GLOBAL-only variable.
pub fn global_only(name: &str) -> SqlError {
    SqlError::new(
        1229,
        "HY000",
        format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
    )
}

/// 1238: `@@global.x` of a SESSION-only variable, `@@session.x` of a
/// GLOBAL-only one.
pub fn wrong_scope_read(name: &str, is: &str) -> SqlError {
    SqlError::new(1238, "HY000", format!("Variable '{name}' is a {is} variable"))
}

/// The global values: one map, replaced whole on each SET GLOBAL, so a
/// session takes a consistent snapshot with one `Arc` clone.
pub struct Globals {
    map: RwLock<Arc<BTreeMap<&'static str, Value>>>,
}

impl Globals {
    /// The defaults, then `overrides` (name, text) in order. An unknown
    /// name or a bad value is an error naming it.
    pub fn new(overrides: &[(String, String)]) -> SqlResult<Globals> {
        let mut m = BTreeMap::new();
        for d in DEFS {
            let v = parse_text(d, d.default).expect("a default parses");
            m.insert(d.name, v);
        }
        for (name, text) in overrides {
            let n = name.to_ascii_lowercase().replace('-', "_");
            let d = def(&n).ok_or_else(|| SqlError::unknown_variable(&n))?;
            let mut v = parse_text(d, text)
                .map_err(|e| SqlError::wrong_value_for_var(d.name, &format!("{text}' ({e})")))?;
            if d.name == "time_zone" {
                v = Value::str(check_time_zone(&v)?.name());
            }
            m.insert(d.name, v);
        }
        // The server's zone as the machine says it (MariaDB reads it at
        // startup), unless the configuration names one.
        if !overrides.iter().any(|(n, _)| n.eq_ignore_ascii_case("system_time_zone")) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64);
            m.insert("system_time_zone", Value::str(crate::temporal::system_time_zone_name(now)));
        }
        Ok(Globals { map: RwLock::new(Arc::new(m)) })
    }

    pub fn snapshot(&self) -> Arc<BTreeMap<&'static str, Value>> {
        self.map.read().clone()
    }

    pub fn get(&self, name: &str) -> Option<Value> {
        self.map.read().get(name).cloned()
    }

    pub fn set(&self, d: &'static Def, v: Value) {
        let mut g = self.map.write();
        let mut m = (**g).clone();
        m.insert(d.name, v);
        *g = Arc::new(m);
    }
}

/// The counters SHOW STATUS reports per session and globally. Each
/// session counts into its PROCESSLIST row (`db::Proc::stats`, under the
/// lock that statement start takes anyway); a session's counts are added
/// to `Inner::ended_stats` when it ends, so GLOBAL is that plus every live
/// session's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Stat {
    BytesReceived,
    BytesSent,
    ComAlterTable,
    ComBegin,
    ComChangeDb,
    ComCommit,
    ComCreateDb,
    ComCreateIndex,
    ComCreateTable,
    ComCreateView,
    ComDeallocSql,
    ComDelete,
    ComDropDb,
    ComDropIndex,
    ComDropTable,
    ComDropView,
    ComExecuteImmediate,
    ComExecuteSql,
    ComInsert,
    ComInsertSelect,
    ComKill,
    ComLockTables,
    ComPrepareSql,
    ComRenameTable,
    ComReplace,
    ComReplaceSelect,
    ComRollback,
    ComSavepoint,
    ComSelect,
    ComSetOption,
    ComShowCreateDb,
    ComShowCreateTable,
    ComShowDatabases,
    ComShowEngineStatus,
    ComShowFields,
    ComShowKeys,
    ComShowProcesslist,
    ComShowStatus,
    ComShowTableStatus,
    ComShowTables,
    ComShowVariables,
    ComShowWarnings,
    ComShutdown,
    ComStmtClose,
    ComStmtExecute,
    ComStmtPrepare,
    ComStmtReset,
    ComTruncate,
    ComUnlockTables,
    ComUpdate,
    /// Dictionaries built by the bulk loader (`bulk::load`).
    FractaldbBulkLoads,
    /// Rows written as update messages without a read (`fastupdate.rs`).
    FractaldbFastUpdates,
    Questions,
    SlowQueries,
    /// Merge passes of sorts with more runs than one merge reads (`sort.rs`).
    SortMergePasses,
}

pub const STAT_COUNT: usize = Stat::SortMergePasses as usize + 1;

/// MariaDB's names, in `Stat` order.
pub const STAT_NAMES: [&str; STAT_COUNT] = [
    "Bytes_received",
    "Bytes_sent",
    "Com_alter_table",
    "Com_begin",
    "Com_change_db",
    "Com_commit",
    "Com_create_db",
    "Com_create_index",
    "Com_create_table",
    "Com_create_view",
    "Com_dealloc_sql",
    "Com_delete",
    "Com_drop_db",
    "Com_drop_index",
    "Com_drop_table",
    "Com_drop_view",
    "Com_execute_immediate",
    "Com_execute_sql",
    "Com_insert",
    "Com_insert_select",
    "Com_kill",
    "Com_lock_tables",
    "Com_prepare_sql",
    "Com_rename_table",
    "Com_replace",
    "Com_replace_select",
    "Com_rollback",
    "Com_savepoint",
    "Com_select",
    "Com_set_option",
    "Com_show_create_db",
    "Com_show_create_table",
    "Com_show_databases",
    "Com_show_engine_status",
    "Com_show_fields",
    "Com_show_keys",
    "Com_show_processlist",
    "Com_show_status",
    "Com_show_table_status",
    "Com_show_tables",
    "Com_show_variables",
    "Com_show_warnings",
    "Com_shutdown",
    "Com_stmt_close",
    "Com_stmt_execute",
    "Com_stmt_prepare",
    "Com_stmt_reset",
    "Com_truncate",
    "Com_unlock_tables",
    "Com_update",
    "Fractaldb_bulk_loads",
    "Fractaldb_fast_updates",
    "Questions",
    "Slow_queries",
    "Sort_merge_passes",
];

pub type Stats = [u64; STAT_COUNT];

/// What the server counts that no session owns (MariaDB's names).
#[derive(Default)]
pub struct ServerCounters {
    /// Connection attempts (Connections).
    pub connections: AtomicU64,
    /// Connections that ended without COM_QUIT (Aborted_clients).
    pub aborted_clients: AtomicU64,
    /// Logins that failed (Aborted_connects).
    pub aborted_connects: AtomicU64,
    /// Connection threads started (Threads_created).
    pub threads_created: AtomicU64,
    /// The most connections at once (Max_used_connections).
    pub max_used_connections: AtomicU64,
}

/// The `Stat` a parsed statement counts as.
pub(crate) fn stat_of(p: &crate::lex::Parsed) -> Option<Stat> {
    use crate::lex::{Parsed, ShowKind as K, Special};
    use sqlparser::ast::{ObjectType, Statement as St};
    Some(match p {
        Parsed::Empty => return None,
        Parsed::Special(s) => match s {
            Special::Show(sh) => match sh.kind {
                K::Databases => Stat::ComShowDatabases,
                K::Tables => Stat::ComShowTables,
                K::CreateTable | K::CreateView => Stat::ComShowCreateTable,
                K::CreateDatabase => Stat::ComShowCreateDb,
                K::Columns => Stat::ComShowFields,
                K::Index => Stat::ComShowKeys,
                K::Variables => Stat::ComShowVariables,
                K::Status => Stat::ComShowStatus,
                K::Warnings | K::WarningCount => Stat::ComShowWarnings,
                K::TableStatus => Stat::ComShowTableStatus,
                K::ProcessList => Stat::ComShowProcesslist,
                K::EngineStatus => Stat::ComShowEngineStatus,
                _ => return None,
            },
            Special::FastInsert(_) => Stat::ComInsert,
            Special::Begin { .. } => Stat::ComBegin,
            Special::LockTables(_) => Stat::ComLockTables,
            Special::UnlockTables => Stat::ComUnlockTables,
            Special::SetNames { .. } => Stat::ComSetOption,
            Special::Prepare { .. } => Stat::ComPrepareSql,
            Special::Execute { .. } => Stat::ComExecuteSql,
            Special::ExecuteImmediate { .. } => Stat::ComExecuteImmediate,
            Special::Deallocate(_) => Stat::ComDeallocSql,
            _ => return None,
        },
        Parsed::Std(st, _) => match st.as_ref() {
            St::Query(_) => Stat::ComSelect,
            St::Insert(i) => match (
                i.replace_into,
                i.source.as_ref().map(|q| matches!(*q.body, sqlparser::ast::SetExpr::Values(_))),
            ) {
                (true, Some(false)) => Stat::ComReplaceSelect,
                (true, _) => Stat::ComReplace,
                (false, Some(false)) => Stat::ComInsertSelect,
                (false, _) => Stat::ComInsert,
            },
            St::Update { .. } => Stat::ComUpdate,
            St::Delete(_) => Stat::ComDelete,
            St::StartTransaction { .. } => Stat::ComBegin,
            St::Commit { .. } => Stat::ComCommit,
            St::Rollback { savepoint: None, .. } => Stat::ComRollback,
            St::Rollback { .. } | St::Savepoint { .. } | St::ReleaseSavepoint { .. } => Stat::ComSavepoint,
            St::Set(_) => Stat::ComSetOption,
            St::Use(_) => Stat::ComChangeDb,
            St::CreateTable(_) => Stat::ComCreateTable,
            St::CreateDatabase { .. } | St::CreateSchema { .. } => Stat::ComCreateDb,
            St::CreateIndex(_) => Stat::ComCreateIndex,
            St::CreateView { .. } => Stat::ComCreateView,
            St::AlterTable { .. } => Stat::ComAlterTable,
            St::Truncate { .. } => Stat::ComTruncate,
            St::RenameTable(_) => Stat::ComRenameTable,
            St::Drop { object_type, .. } => match object_type {
                ObjectType::Table => Stat::ComDropTable,
                ObjectType::Database | ObjectType::Schema => Stat::ComDropDb,
                ObjectType::View => Stat::ComDropView,
                ObjectType::Index => Stat::ComDropIndex,
                _ => return None,
            },
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defs_sorted_and_defaults_parse() {
        for w in DEFS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for d in DEFS {
            parse_text(d, d.default).unwrap_or_else(|e| panic!("{}: {e}", d.name));
            // The lookup finds every variable, as itself.
            assert!(def(d.name).is_some_and(|f| std::ptr::eq(f, d)), "{}", d.name);
        }
        assert!(def("no_such_variable").is_none() && def("AUTOCOMMIT").is_none());
        assert_eq!(STAT_NAMES.len(), STAT_COUNT);
        for w in STAT_NAMES.windows(2) {
            assert!(w[0] < w[1], "{} before {}", w[0], w[1]);
        }
    }

    #[test]
    fn sizes_and_values() {
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("12"), Some(12));
        assert_eq!(parse_size("x"), None);
        let mc = def("max_connections").unwrap();
        assert_eq!(parse_text(mc, "0").unwrap().render(), "1");
        assert!(parse_text(mc, "many").is_err());
        assert_eq!(parse_text(def("slow_query_log").unwrap(), "").unwrap().render(), "1");
        let (v, w) = check_set(def("wait_timeout").unwrap(), &Value::Int(-5)).unwrap();
        assert_eq!(v.render(), "1");
        assert!(w.unwrap().message.contains("Truncated incorrect wait_timeout value: '-5'"));
        assert_eq!(check_set(mc, &Value::str("abc")).unwrap_err().code, 1232);
    }
}
