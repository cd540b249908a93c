//! SHOW statements and EXPLAIN.
//!
//! Every SHOW builds its whole result (MariaDB's column names, order and
//! value formats, so clients and tools that parse them work), then LIKE
//! (on the first column, case-insensitive) or WHERE (an expression over
//! the result's columns) keeps some rows. The descriptions of tables,
//! columns and indexes come from `infoschema`, so SHOW and
//! INFORMATION_SCHEMA agree.

use sqlparser::ast;

use crate::catalog::{IndexKind, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::expr::ScopeCol;
use crate::infoschema::{self as is, show_cols, DefaultText, VCol};
use crate::lex::{ShowKind, ShowStmt};
use crate::session::{ColumnMeta, Outcome, ResultSet, Session};
use crate::types::{Collation, SqlType};
use crate::value::Value;

/// The rows a SHOW gives before LIKE / WHERE.
struct Shown {
    cols: Vec<VCol>,
    rows: Vec<Vec<Value>>,
    /// The column LIKE matches (the first, but for OPEN TABLES).
    like_col: usize,
}

/// Whether LIKE tells letter cases apart: for database and table names,
/// which are file names to MariaDB (lower_case_table_names=0).
fn like_case_sensitive(k: ShowKind) -> bool {
    matches!(k, ShowKind::Databases | ShowKind::Tables | ShowKind::TableStatus | ShowKind::OpenTables)
}

fn shown(spec: &str, rows: Vec<Vec<Value>>) -> Shown {
    Shown { cols: show_cols(spec), rows, like_col: 0 }
}

fn like_ok(pattern: &[u8], s: &str, cs: bool) -> bool {
    let coll = if cs { Collation::Utf8mb4Bin } else { Collation::Utf8mb4GeneralCi };
    crate::collation::like(coll, s.as_bytes(), pattern, b'\\')
}

pub fn show(s: &mut Session, st: &ShowStmt) -> SqlResult<Outcome> {
    crate::accounts::check_show(s, st)?;
    let out = build(s, st)?;
    let Some(mut out) = out else { return Ok(Outcome::done(0)) };
    if let Some(p) = &st.like {
        let (c, cs) = (out.like_col, like_case_sensitive(st.kind));
        out.rows.retain(|r| r.get(c).is_some_and(|v| like_ok(p, &v.render(), cs)));
    }
    if let Some(f) = &st.filter {
        out.rows = filter(s, &out.cols, out.rows, f)?;
    }
    let columns = out
        .cols
        .into_iter()
        .map(|c| {
            let mut m = ColumnMeta::expr(c.name, c.ty);
            m.nullable = c.nullable;
            m
        })
        .collect();
    Ok(Outcome::Rows(ResultSet { columns, rows: out.rows }))
}

/// Keeps the rows for which `f`, over the result's columns, is true.
fn filter(
    s: &mut Session,
    cols: &[VCol],
    rows: Vec<Vec<Value>>,
    f: &ast::Expr,
) -> SqlResult<Vec<Vec<Value>>> {
    let scope: Vec<ScopeCol> = cols
        .iter()
        .map(|c| ScopeCol {
            table: String::new(),
            name: c.name.clone(),
            db: String::new(),
            org_table: String::new(),
            ty: c.ty.clone(),
            nullable: c.nullable,
            hidden: false,
            flags: 0,
            default: None,
        })
        .collect();
    let sysvar = |n: &str| s.sysvar(n);
    let mut no_sub = |_q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
        Err(SqlError::unsupported("subqueries in SHOW ... WHERE"))
    };
    let (e, _) = crate::bind::Binder::plain(&scope, &sysvar, &mut no_sub, "where clause").bind(f)?;
    let mut w = Vec::new();
    let mut kept = Vec::new();
    {
        let mut cx = s.eval_ctx(&mut w);
        for r in rows {
            if e.eval(&r, &mut cx)?.truth() == Some(true) {
                kept.push(r);
            }
        }
    }
    s.warnings.extend(w);
    Ok(kept)
}

/// The database a SHOW ... FROM db means, checked.
fn target_db(s: &Session, st: &ShowStmt) -> SqlResult<String> {
    let db = match &st.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    if is::is_schema(&db) {
        return Ok(is::SCHEMA.to_string());
    }
    if !s.inner.schema.read().dbs.contains_key(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    Ok(db)
}

/// The heading MariaDB gives a listing filtered by LIKE: `Database (d%)`.
fn with_like(name: String, st: &ShowStmt) -> String {
    match &st.like {
        Some(p) => format!("{name} ({})", String::from_utf8_lossy(p)),
        None => name,
    }
}

fn strs<const N: usize>(v: [&str; N]) -> Vec<Value> {
    v.iter().map(Value::str).collect()
}

fn build(s: &mut Session, st: &ShowStmt) -> SqlResult<Option<Shown>> {
    use ShowKind as K;
    let o = match st.kind {
        K::Databases => {
            let mut rows = vec![vec![Value::str(is::SCHEMA)]];
            let names: Vec<String> = s.inner.schema.read().dbs.keys().cloned().collect();
            // Only the databases the account has some privilege on.
            rows.extend(names.into_iter().filter(|n| s.sees_db(n)).map(|n| vec![Value::str(n)]));
            rows.sort_by(|a, b| a[0].render().cmp(&b[0].render()));
            Shown { cols: show_cols(&(with_like("Database".into(), st) + ":varchar(64)")), rows, like_col: 0 }
        }
        K::Tables => {
            let db = target_db(s, st)?;
            let named: Vec<(String, &str)> = if db == is::SCHEMA {
                is::view_names().into_iter().map(|n| (n.to_string(), "SYSTEM VIEW")).collect()
            } else {
                let mut v: Vec<(String, &str)> = s
                    .inner
                    .schema
                    .read()
                    .tables
                    .keys()
                    .filter(|(d, _)| *d == db)
                    .map(|(_, t)| (t.clone(), "BASE TABLE"))
                    .collect();
                let views = s.in_txn(false, |s, txn| crate::views::list(s, txn, &db))?;
                v.extend(views.into_iter().map(|d| (d.name, "VIEW")));
                // Only the tables the account has some privilege on.
                v.retain(|(n, _)| s.privs().is_none_or(|p| p.on_table(&db, n) != 0));
                v
            };
            let mut spec = with_like(format!("Tables_in_{db}"), st) + ":varchar(64)";
            if st.full {
                spec += "|Table_type:varchar(64)";
            }
            let rows = named
                .into_iter()
                .map(|(n, kind)| {
                    let mut r = vec![Value::str(n)];
                    if st.full {
                        r.push(Value::str(kind));
                    }
                    r
                })
                .collect();
            Shown { cols: show_cols(&spec), rows, like_col: 0 }
        }
        K::CreateTable | K::CreateView if view_of(s, st)?.is_some() => {
            let def = view_of(s, st)?.expect("checked above");
            shown(
                "View:varchar(64)|Create View:varchar(1024)|character_set_client:varchar(32)|collation_connection:varchar(32)",
                vec![crate::views::show_create(&def)],
            )
        }
        K::CreateTable => {
            let (t, _) = table_of(s, st)?;
            let text = s.in_txn(false, |s, txn| create_table_text(s, txn, &t))?;
            shown("Table:varchar(64)|Create Table:varchar(1024)", vec![vec![Value::str(&t.def.name), Value::str(text)]])
        }
        K::CreateDatabase => {
            let name = st.db.clone().unwrap_or_default();
            let coll = if is::is_schema(&name) {
                Collation::Utf8mb3GeneralCi
            } else {
                match s.inner.schema.read().dbs.get(&name) {
                    Some(d) => d.collation,
                    None => return Err(SqlError::unknown_db(&name)),
                }
            };
            let name = if is::is_schema(&name) { is::SCHEMA.to_string() } else { name };
            let ine = if st.if_not_exists { "/*!32312 IF NOT EXISTS*/ " } else { "" };
            let text = format!(
                "CREATE DATABASE {ine}{} /*!40100 DEFAULT CHARACTER SET {} COLLATE {} */",
                quote_ident(&name),
                coll.charset().name(),
                coll.name()
            );
            shown("Database:varchar(64)|Create Database:varchar(1024)", vec![vec![Value::str(&name), Value::str(text)]])
        }
        K::Columns => {
            let spec = if st.full {
                "Field:varchar(64)|Type:longtext|Collation:varchar(64)|Null:varchar(3)|Key:varchar(3)|Default:longtext|Extra:varchar(80)|Privileges:varchar(80)|Comment:varchar(1024)"
            } else {
                "Field:varchar(64)|Type:longtext|Null:varchar(3)|Key:varchar(3)|Default:longtext|Extra:varchar(80)"
            };
            let rows = match table_or_view(s, st)? {
                Either::View(cols) => cols
                    .iter()
                    .map(|c| {
                        let coll = is::text_collation(&c.ty);
                        let mut r = vec![Value::str(&c.name), Value::str(c.ty.column_type())];
                        if st.full {
                            r.push(coll.map_or(Value::Null, |c| Value::str(c.name())));
                        }
                        r.extend([
                            Value::str(if c.nullable { "YES" } else { "NO" }),
                            Value::str(""),
                            Value::Null,
                            Value::str(""),
                        ]);
                        if st.full {
                            r.extend([Value::str("select"), Value::str("")]);
                        }
                        r
                    })
                    .collect(),
                Either::Table(t) => columns_rows(&t.def, st.full),
            };
            shown(spec, rows)
        }
        K::Index => {
            let rows = match table_or_view(s, st)? {
                Either::View(_) => Vec::new(),
                Either::Table(t) => s.in_txn(false, |_, txn| is::index_rows(txn, &t))?,
            };
            shown("Table:varchar(64)|Non_unique:bigint(1)|Key_name:varchar(64)|Seq_in_index:int(2) unsigned|Column_name:varchar(64)|Collation:varchar(1)|Cardinality:bigint(21)|Sub_part:bigint(3)|Packed:varchar(10)|Null:varchar(3)|Index_type:varchar(16)|Comment:varchar(16)|Index_comment:varchar(1024)|Ignored:varchar(3)", rows)
        }
        K::Engines => shown(
            "Engine:varchar(64)|Support:varchar(8)|Comment:varchar(160)|Transactions:varchar(3)|XA:varchar(3)|Savepoints:varchar(3)",
            is::engines(),
        ),
        K::Collation => shown(
            "Collation:varchar(64)|Charset:varchar(32)|Id:bigint(11)|Default:varchar(3)|Compiled:varchar(3)|Sortlen:bigint(3)",
            is::collations(),
        ),
        K::Charset => shown(
            "Charset:varchar(32)|Description:varchar(60)|Default collation:varchar(64)|Maxlen:bigint(3)",
            is::charsets().into_iter().map(|r| vec![r[0].clone(), r[2].clone(), r[1].clone(), r[3].clone()]).collect(),
        ),
        K::Variables => shown(
            "Variable_name:varchar(64)|Value:varchar(4096)",
            is::variables(s, st.global).into_iter().map(|(n, v)| vec![Value::str(n), Value::str(v)]).collect(),
        ),
        K::Status => shown(
            "Variable_name:varchar(64)|Value:varchar(4096)",
            is::status(s, st.global).into_iter().map(|(n, v)| vec![Value::str(n), Value::str(v)]).collect(),
        ),
        K::Warnings | K::Errors => {
            let errors_only = st.kind == K::Errors;
            let (off, n) = st.limit.unwrap_or((0, u64::MAX));
            let rows = s
                .warnings
                .iter()
                .filter(|w| !errors_only || w.level == "Error")
                .skip(off as usize)
                .take(n as usize)
                .map(|w| vec![Value::str(w.level), Value::UInt(w.code as u64), Value::str(&w.message)])
                .collect();
            shown("Level:varchar(7)|Code:int(4) unsigned|Message:varchar(512)", rows)
        }
        K::WarningCount | K::ErrorCount => {
            let (name, n) = if st.kind == K::WarningCount {
                ("@@session.warning_count", s.warnings.len())
            } else {
                ("@@session.error_count", s.warnings.iter().filter(|w| w.level == "Error").count())
            };
            shown(&format!("{name}:bigint(21) unsigned"), vec![vec![Value::UInt(n as u64)]])
        }
        K::TableStatus => {
            let db = target_db(s, st)?;
            let tables: Vec<_> = is::tables(s).into_iter().filter(|t| t.def.db == db).collect();
            let rows = s.in_txn(false, |s, txn| {
                let mut rows = Vec::new();
                for t in &tables {
                    let mut r = vec![Value::str(&t.def.name)];
                    r.extend(is::table_status(s, txn, t)?);
                    rows.push(r);
                }
                // A view's row is its name, NULLs and Comment 'VIEW', as
                // MariaDB shows it (mariadb-dump reads it for each view).
                if !is::is_schema(&db) {
                    for v in crate::views::list(s, txn, &db)? {
                        let mut r = vec![Value::Null; 20];
                        r[0] = Value::str(&v.name);
                        r[17] = Value::str("VIEW");
                        rows.push(r);
                    }
                }
                rows.sort_by(|a, b| a[0].render().cmp(&b[0].render()));
                Ok(rows)
            })?;
            shown("Name:varchar(64)|Engine:varchar(64)|Version:bigint(21) unsigned|Row_format:varchar(10)|Rows:bigint(21) unsigned|Avg_row_length:bigint(21) unsigned|Data_length:bigint(21) unsigned|Max_data_length:bigint(21) unsigned|Index_length:bigint(21) unsigned|Data_free:bigint(21) unsigned|Auto_increment:bigint(21) unsigned|Create_time:datetime|Update_time:datetime|Check_time:datetime|Collation:varchar(64)|Checksum:bigint(21) unsigned|Create_options:varchar(2048)|Comment:varchar(2048)|Max_index_length:bigint(21) unsigned|Temporary:varchar(1)", rows)
        }
        K::ProcessList => {
            // Every session of the database, by id; this one is running
            // the SHOW ("starting", as MariaDB says for its own row).
            let rows = s
                .inner
                .processes()
                .into_iter()
                // Without PROCESS, only the account's own threads.
                .filter(|(_, p)| s.sees_user(&p.user))
                .map(|(id, p)| {
                    let running = p.command == "Query";
                    let info: String = if st.full { p.info } else { p.info.chars().take(100).collect() };
                    // Another session's running statement says how far it
                    // got, as TokuDB worded it ("Inserted about 4000 rows").
                    let state = if id == s.conn_id {
                        "starting".to_string()
                    } else if running {
                        p.progress.state().unwrap_or_else(|| "Sending data".into())
                    } else {
                        String::new()
                    };
                    vec![
                        Value::Int(id as i64),
                        Value::str(&p.user),
                        Value::str(&p.host),
                        p.db.as_deref().map_or(Value::Null, Value::str),
                        Value::str(p.command),
                        Value::Int(p.since.elapsed().as_secs() as i64),
                        Value::str(state),
                        if running { Value::str(info) } else { Value::Null },
                        crate::infoschema::decimal3(if running && id != s.conn_id {
                            crate::progress::overall(p.progress.stage())
                        } else {
                            0.0
                        }),
                    ]
                })
                .collect();
            shown(
                "Id:bigint(4)|User:varchar(128)|Host:varchar(64)|db:varchar(64)|Command:varchar(16)|Time:int(7)|State:varchar(64)|Info:longtext|Progress:decimal(7,3)",
                rows,
            )
        }
        K::Grants => {
            let (title, grants) = crate::accounts::show_grants(s, st.name.as_deref())?;
            shown(&format!("{title}:varchar(1024)"), grants.into_iter().map(|g| vec![Value::str(g)]).collect())
        }
        K::CreateUser => {
            let (title, text) = crate::accounts::show_create_user(s, st.name.as_deref())?;
            shown(&format!("{title}:varchar(1024)"), vec![vec![Value::str(text)]])
        }
        K::EngineStatus | K::EngineMutex | K::EngineLogs => {
            let name = st.name.clone().unwrap_or_default();
            if !["fractaldb", "tokudb"].contains(&name.to_ascii_lowercase().as_str()) {
                return Err(SqlError::new(1286, "42000", format!("Unknown storage engine '{name}'")));
            }
            // As TokuDB's: one row per engine counter (Type, Name, Status),
            // the same counters SHOW STATUS lists as Fractaldb_*.
            let rows = if st.kind == K::EngineStatus {
                is::status(s, true)
                    .into_iter()
                    .filter_map(|(n, v)| {
                        let name = n.strip_prefix("Fractaldb_")?.to_ascii_lowercase();
                        Some(strs(["FractalDB", &name, &v]))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            shown("Type:varchar(10)|Name:varchar(32)|Status:varchar(10)", rows)
        }
        K::MasterStatus => shown("File:varchar(512)|Position:bigint(20) unsigned|Binlog_Do_DB:varchar(255)|Binlog_Ignore_DB:varchar(255)", Vec::new()),
        K::SlaveStatus => {
            // No replication: MariaDB's columns, no row.
            let spec = SLAVE_STATUS_COLS.split('|').map(|c| format!("{c}:varchar(64)")).collect::<Vec<_>>().join("|");
            shown(&spec, Vec::new())
        }
        K::BinaryLogs => return Err(SqlError::new(1381, "HY000", "You are not using binary logging")),
        K::Triggers => {
            target_db(s, st)?;
            shown("Trigger:varchar(64)|Event:varchar(6)|Table:varchar(64)|Statement:longtext|Timing:varchar(6)|Created:datetime(2)|sql_mode:varchar(8192)|Definer:varchar(384)|character_set_client:varchar(32)|collation_connection:varchar(64)|Database Collation:varchar(64)", Vec::new())
        }
        K::ProcedureStatus | K::FunctionStatus => shown(
            "Db:varchar(64)|Name:varchar(64)|Type:varchar(9)|Definer:varchar(384)|Modified:datetime|Created:datetime|Security_type:varchar(7)|Comment:longtext|character_set_client:varchar(32)|collation_connection:varchar(64)|Database Collation:varchar(64)",
            Vec::new(),
        ),
        K::Events => {
            target_db(s, st)?;
            shown("Db:varchar(64)|Name:varchar(64)|Definer:varchar(384)|Time zone:varchar(64)|Type:varchar(9)|Execute at:datetime|Interval value:varchar(256)|Interval field:varchar(18)|Starts:datetime|Ends:datetime|Status:varchar(18)|Originator:bigint(10)|character_set_client:varchar(32)|collation_connection:varchar(64)|Database Collation:varchar(64)", Vec::new())
        }
        K::Plugins => {
            let license = s.sysvar("license").map(|v| v.render()).unwrap_or_default();
            shown(
                "Name:varchar(64)|Status:varchar(16)|Type:varchar(80)|Library:varchar(64)|License:varchar(80)",
                vec![vec![Value::str("FractalDB"), Value::str("ACTIVE"), Value::str("STORAGE ENGINE"), Value::Null, Value::str(license)]],
            )
        }
        K::OpenTables => {
            let db = match &st.db {
                Some(_) => Some(target_db(s, st)?),
                None => None,
            };
            let rows = is::tables(s)
                .into_iter()
                .filter(|t| db.as_ref().is_none_or(|d| *d == t.def.db))
                .map(|t| vec![Value::str(&t.def.db), Value::str(&t.def.name), Value::Int(0), Value::Int(0)])
                .collect();
            Shown { like_col: 1, ..shown("Database:varchar(64)|Table:varchar(64)|In_use:bigint(4)|Name_locked:bigint(4)", rows) }
        }
        K::Privileges => shown(
            "Privilege:varchar(64)|Context:varchar(64)|Comment:varchar(64)",
            PRIVILEGES.iter().map(|(p, c, m)| strs([p, c, m])).collect(),
        ),
        K::Profiles => shown("Query_ID:int(20)|Duration:decimal(22,8)|Query:varchar(40)", Vec::new()),
        K::CreateView => {
            let (t, db) = table_of(s, st)?;
            return Err(SqlError::new(1347, "HY000", format!("'{db}.{}' is not of type 'VIEW'", t.def.name)));
        }
        K::CreateTrigger => return Err(SqlError::new(1360, "HY000", "Trigger does not exist")),
        K::CreateProcedure | K::CreateFunction => {
            let what = if st.kind == K::CreateProcedure { "PROCEDURE" } else { "FUNCTION" };
            let name = st.table.clone().unwrap_or_default();
            return Err(SqlError::new(1305, "42000", format!("{what} {name} does not exist")));
        }
        K::CreateEvent => {
            let name = st.table.clone().unwrap_or_default();
            return Err(SqlError::new(1539, "HY000", format!("Unknown event '{name}'")));
        }
    };
    Ok(Some(o))
}

enum Either {
    Table(std::sync::Arc<crate::table::Table>),
    View(Vec<VCol>),
}

/// The engine table SHOW COLUMNS / INDEX / CREATE TABLE names.
/// The view a SHOW CREATE names, if it names one.
fn view_of(s: &mut Session, st: &ShowStmt) -> SqlResult<Option<crate::views::ViewDef>> {
    let db = match &st.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    let name = st.table.clone().unwrap_or_default();
    if is::is_schema(&db) || s.inner.table(&db, &name).is_ok() {
        return Ok(None);
    }
    s.in_txn(false, |s, txn| crate::views::lookup(s, txn, &db, &name))
}

fn table_of(s: &Session, st: &ShowStmt) -> SqlResult<(std::sync::Arc<crate::table::Table>, String)> {
    let db = match &st.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    let name = st.table.clone().unwrap_or_default();
    if is::is_schema(&db) {
        is::view_cols(&name)?;
        return Err(SqlError::unsupported("SHOW CREATE of an INFORMATION_SCHEMA view"));
    }
    Ok((s.inner.table(&db, &name)?, db))
}

fn table_or_view(s: &mut Session, st: &ShowStmt) -> SqlResult<Either> {
    let db = match &st.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    let name = st.table.clone().unwrap_or_default();
    if is::is_schema(&db) {
        return Ok(Either::View(is::view_cols(&name)?.1));
    }
    if let Ok(t) = s.inner.table(&db, &name) {
        return Ok(Either::Table(t));
    }
    // A user view: its columns are what its SELECT returns (run once, as
    // FROM would read it; mariadb-dump asks SHOW FIELDS of every view).
    let cols = s.in_txn(false, |s, txn| match crate::views::lookup(s, txn, &db, &name)? {
        Some(def) => Ok(Some(crate::views::materialize(s, txn, &def)?.cols)),
        None => Ok(None),
    })?;
    cols.map(Either::View).ok_or_else(|| SqlError::no_such_table(&db, &name))
}

fn columns_rows(def: &TableDef, full: bool) -> Vec<Vec<Value>> {
    def.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let default = match is::default_text(c) {
                DefaultText::None | DefaultText::Null => Value::Null,
                DefaultText::Bare(s) | DefaultText::Quoted(s) => Value::str(s),
                DefaultText::Now => Value::str("current_timestamp()"),
            };
            let mut r = vec![Value::str(&c.name), Value::str(c.ty.column_type())];
            if full {
                r.push(is::text_collation(&c.ty).map_or(Value::Null, |c| Value::str(c.name())));
            }
            r.extend([
                Value::str(if c.nullable { "YES" } else { "NO" }),
                Value::str(is::column_key(def, i)),
                default,
                Value::str(is::column_extra(c)),
            ]);
            if full {
                r.extend([Value::str("select,insert,update,references"), Value::str(&c.comment)]);
            }
            r
        })
        .collect()
}

/// An identifier as SHOW CREATE writes it: in backquotes, a backquote doubled.
pub fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// SHOW CREATE TABLE's text, as MariaDB 10.11 writes it.
fn create_table_text(_s: &Session, txn: &fractaldb::Txn, t: &crate::table::Table) -> SqlResult<String> {
    let def = &t.def;
    let mut lines = Vec::new();
    for c in &def.columns {
        let mut l = format!("  {} {}", quote_ident(&c.name), c.ty.column_type());
        let coll = match &c.ty {
            SqlType::Json => Some(Collation::Utf8mb4Bin),
            ty => is::text_collation(ty),
        };
        if let Some(cc) = coll {
            if cc != def.collation || matches!(c.ty, SqlType::Json) {
                l += &format!(" CHARACTER SET {} COLLATE {}", cc.charset().name(), cc.name());
            }
        }
        let is_ts = matches!(c.ty, SqlType::Timestamp { .. });
        if !c.nullable {
            l += " NOT NULL";
        } else if is_ts {
            l += " NULL";
        }
        match is::default_text(c) {
            DefaultText::None => {
                if c.nullable && !c.auto_increment {
                    l += " DEFAULT NULL";
                }
            }
            DefaultText::Null => l += " DEFAULT NULL",
            DefaultText::Bare(v) => l += &format!(" DEFAULT {v}"),
            DefaultText::Quoted(v) => l += &format!(" DEFAULT {}", is::quote_str(&v)),
            DefaultText::Now => l += " DEFAULT current_timestamp()",
        }
        if c.on_update_now {
            l += " ON UPDATE current_timestamp()";
        }
        if c.auto_increment {
            l += " AUTO_INCREMENT";
        }
        if !c.comment.is_empty() {
            l += &format!(" COMMENT {}", is::quote_str(&c.comment));
        }
        if matches!(c.ty, SqlType::Json) {
            l += &format!(" CHECK (json_valid({}))", quote_ident(&c.name));
        }
        // A column's own CHECK is named after the column (ddl.rs) and
        // written on its line, as MariaDB does; a dump must carry it.
        for ck in def.checks.iter().filter(|k| k.name.eq_ignore_ascii_case(&c.name)) {
            l += &format!(" CHECK ({})", ck.expr);
        }
        lines.push(l);
    }
    for i in is::index_order(def) {
        let ix = &def.indexes[i];
        let parts: Vec<String> = ix
            .parts
            .iter()
            .map(|p| {
                let mut s = quote_ident(&def.columns[p.col].name);
                if let Some(n) = p.prefix {
                    s += &format!("({n})");
                }
                if p.desc {
                    s += " DESC";
                }
                s
            })
            .collect();
        let head = match ix.kind {
            IndexKind::Primary => "PRIMARY KEY".to_string(),
            IndexKind::Unique => format!("UNIQUE KEY {}", quote_ident(&ix.name)),
            IndexKind::Plain if ix.clustering => format!("CLUSTERING KEY {}", quote_ident(&ix.name)),
            IndexKind::Plain => format!("KEY {}", quote_ident(&ix.name)),
        };
        let mut l = format!("  {head} ({})", parts.join(","));
        if !ix.comment.is_empty() {
            l += &format!(" COMMENT {}", is::quote_str(&ix.comment));
        }
        lines.push(l);
    }
    // Foreign keys after the keys, by name, as InnoDB lists them.
    let mut fks: Vec<&crate::catalog::ForeignKeyDef> = def.foreign_keys.iter().collect();
    fks.sort_by(|a, b| a.name.cmp(&b.name));
    for fk in fks {
        lines.push(format!("  {}", crate::fk::text(&def.db, fk)));
    }
    // Table CHECK constraints last, as MariaDB lists them (the expression
    // as the parser prints it, not MariaDB's canonical form).
    for ck in def.checks.iter().filter(|k| def.col_index(&k.name).is_none()) {
        lines.push(format!("  CONSTRAINT {} CHECK ({})", quote_ident(&ck.name), ck.expr));
    }
    let mut opts = String::from(") ENGINE=FractalDB");
    if def.auto_col().is_some() {
        let next = is::next_auto_increment(txn, t)?;
        if next > 1 {
            opts += &format!(" AUTO_INCREMENT={next}");
        }
    }
    opts += &format!(" DEFAULT CHARSET={} COLLATE={}", def.collation.charset().name(), def.collation.name());
    if !def.row_format.is_empty() {
        opts += &format!(" ROW_FORMAT={}", def.row_format);
    }
    if !def.comment.is_empty() {
        opts += &format!(" COMMENT={}", is::quote_str(&def.comment));
    }
    Ok(format!("CREATE TABLE {} (\n{}\n{opts}", quote_ident(&def.name), lines.join(",\n")))
}

const SLAVE_STATUS_COLS: &str = "Slave_IO_State|Master_Host|Master_User|Master_Port|Connect_Retry|Master_Log_File|Read_Master_Log_Pos|Relay_Log_File|Relay_Log_Pos|Relay_Master_Log_File|Slave_IO_Running|Slave_SQL_Running|Replicate_Do_DB|Replicate_Ignore_DB|Replicate_Do_Table|Replicate_Ignore_Table|Replicate_Wild_Do_Table|Replicate_Wild_Ignore_Table|Last_Errno|Last_Error|Skip_Counter|Exec_Master_Log_Pos|Relay_Log_Space|Until_Condition|Until_Log_File|Until_Log_Pos|Master_SSL_Allowed|Master_SSL_CA_File|Master_SSL_CA_Path|Master_SSL_Cert|Master_SSL_Cipher|Master_SSL_Key|Seconds_Behind_Master|Master_SSL_Verify_Server_Cert|Last_IO_Errno|Last_IO_Error|Last_SQL_Errno|Last_SQL_Error|Replicate_Ignore_Server_Ids|Master_Server_Id|Master_SSL_Crl|Master_SSL_Crlpath|Using_Gtid|Gtid_IO_Pos|Replicate_Do_Domain_Ids|Replicate_Ignore_Domain_Ids|Parallel_Mode|SQL_Delay|SQL_Remaining_Delay|Slave_SQL_Running_State|Slave_DDL_Groups|Slave_Non_Transactional_Groups|Slave_Transactional_Groups|Replicate_Rewrite_DB";

/// SHOW PRIVILEGES, as MariaDB 10.11 lists them.
const PRIVILEGES: &[(&str, &str, &str)] = &[
    ("Alter", "Tables", "To alter the table"),
    ("Alter routine", "Functions,Procedures", "To alter or drop stored functions/procedures"),
    ("Create", "Databases,Tables,Indexes", "To create new databases and tables"),
    ("Create routine", "Databases", "To use CREATE FUNCTION/PROCEDURE"),
    ("Create temporary tables", "Databases", "To use CREATE TEMPORARY TABLE"),
    ("Create view", "Tables", "To create new views"),
    ("Create user", "Server Admin", "To create new users"),
    ("Delete", "Tables", "To delete existing rows"),
    ("Delete history", "Tables", "To delete versioning table historical rows"),
    ("Drop", "Databases,Tables", "To drop databases, tables, and views"),
    ("Event", "Server Admin", "To create, alter, drop and execute events"),
    ("Execute", "Functions,Procedures", "To execute stored routines"),
    ("File", "File access on server", "To read and write files on the server"),
    (
        "Grant option",
        "Databases,Tables,Functions,Procedures",
        "To give to other users those privileges you possess",
    ),
    ("Index", "Tables", "To create or drop indexes"),
    ("Insert", "Tables", "To insert data into tables"),
    ("Lock tables", "Databases", "To use LOCK TABLES (together with SELECT privilege)"),
    ("Process", "Server Admin", "To view the plain text of currently executing queries"),
    ("Proxy", "Server Admin", "To make proxy user possible"),
    ("References", "Databases,Tables", "To have references on tables"),
    ("Reload", "Server Admin", "To reload or refresh tables, logs and privileges"),
    ("Binlog admin", "Server", "To purge binary logs"),
    ("Binlog monitor", "Server", "To use SHOW BINLOG STATUS and SHOW BINARY LOG"),
    ("Binlog replay", "Server", "To use BINLOG (generated by mariadb-binlog)"),
    ("Replication master admin", "Server", "To monitor connected slaves"),
    ("Replication slave admin", "Server", "To start/stop slave and apply binlog events"),
    ("Slave monitor", "Server", "To use SHOW SLAVE STATUS and SHOW RELAYLOG EVENTS"),
    ("Replication slave", "Server Admin", "To read binary log events from the master"),
    ("Select", "Tables", "To retrieve rows from table"),
    ("Show databases", "Server Admin", "To see all databases with SHOW DATABASES"),
    ("Show view", "Tables", "To see views with SHOW CREATE VIEW"),
    ("Shutdown", "Server Admin", "To shut down the server"),
    ("Super", "Server Admin", "To use KILL thread, SET GLOBAL, CHANGE MASTER, etc."),
    ("Trigger", "Tables", "To use triggers"),
    ("Create tablespace", "Server Admin", "To create/alter/drop tablespaces"),
    ("Update", "Tables", "To update existing rows"),
    ("Set user", "Server", "To create views and stored routines with a different definer"),
    ("Federated admin", "Server", "To execute the CREATE SERVER, ALTER SERVER, DROP SERVER statements"),
    ("Connection admin", "Server", "To bypass connection limits and kill other users' connections"),
    ("Read_only admin", "Server", "To perform write operations even if @@read_only=ON"),
    ("Usage", "Server Admin", "No privileges - allow connect only"),
];
