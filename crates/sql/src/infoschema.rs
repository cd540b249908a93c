//! INFORMATION_SCHEMA: read-only views of the catalog and the session,
//! built as rows when a query names one, so WHERE, ORDER BY, GROUP BY and
//! COUNT over them run through the ordinary SELECT path.
//!
//! Each view has MariaDB 10.11's columns, in its order and with its types,
//! because tools (connectors, ORMs, dump and migration tools) select them
//! by name and position. What fractaldb has no notion of (foreign keys,
//! triggers, routines, views, partitions) gives empty views or the rows
//! MariaDB gives for an object without it.
//!
//! The helpers that describe a column or an index the way MariaDB does
//! (key flag, default text, index order) are shared with `show.rs`, so
//! SHOW and INFORMATION_SCHEMA agree.

use fractaldb::Txn;

use crate::catalog::{Column, DefaultSpec, IndexDef, IndexKind, TableDef};
use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::table::Table;
use crate::types::{Charset, Collation, SqlType, StrKind, ALL_COLLATIONS};
use crate::value::Value;

/// The schema's name, as SHOW DATABASES and SCHEMATA list it.
pub const SCHEMA: &str = "information_schema";

/// True for `information_schema` in any letter case.
pub fn is_schema(db: &str) -> bool {
    db.eq_ignore_ascii_case(SCHEMA)
}

/// A column of a view or of a SHOW result.
#[derive(Clone, Debug)]
pub struct VCol {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
}

/// A view's rows, ready to be read as a table.
#[derive(Clone, Debug)]
pub struct Virtual {
    /// The view's name as MariaDB spells it (upper case).
    pub name: String,
    pub cols: Vec<VCol>,
    pub rows: Vec<Vec<Value>>,
}

/// A type as MariaDB's COLUMN_TYPE writes it, for the types the views use.
pub fn parse_type(t: &str) -> SqlType {
    let t = t.trim();
    let unsigned = t.ends_with(" unsigned");
    let base = t.trim_end_matches(" unsigned");
    let (name, args) = match base.find('(') {
        Some(i) => (&base[..i], base[i + 1..].trim_end_matches(')')),
        None => (base, ""),
    };
    let num = |s: &str| s.trim().parse::<u64>().unwrap_or(0);
    let text = Collation::Utf8mb3GeneralCi;
    match name {
        "varchar" => SqlType::Str { kind: StrKind::Var, len: num(args), coll: text },
        "longtext" => SqlType::Str { kind: StrKind::Lob, len: 4_294_967_295, coll: text },
        "blob" => SqlType::Str { kind: StrKind::Lob, len: 65535, coll: Collation::Binary },
        "bigint" => SqlType::Int { bytes: 8, unsigned },
        "int" => SqlType::Int { bytes: 4, unsigned },
        "tinyint" => SqlType::Int { bytes: 1, unsigned },
        "decimal" => {
            let mut it = args.split(',');
            let p = it.next().map_or(10, num) as u8;
            let s = it.next().map_or(0, num) as u8;
            SqlType::Decimal { precision: p, scale: s, unsigned }
        }
        "datetime" => SqlType::DateTime { fsp: num(args) as u8 },
        _ => SqlType::Str { kind: StrKind::Var, len: 64, coll: text },
    }
}

/// Columns from MariaDB's own listing: `NAME type [unsigned] YES|NO`, `|`
/// between columns.
fn is_cols(spec: &str) -> Vec<VCol> {
    spec.split('|')
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let e = e.trim();
            let (name, rest) = e.split_once(' ').unwrap_or((e, "varchar(64) YES"));
            let (ty, null) = rest.rsplit_once(' ').unwrap_or((rest, "YES"));
            VCol { name: name.to_string(), ty: parse_type(ty), nullable: null == "YES" }
        })
        .collect()
}

/// Columns of a SHOW result: `Name:type`, `|` between columns (names may
/// hold spaces).
pub fn show_cols(spec: &str) -> Vec<VCol> {
    spec.split('|')
        .map(|e| {
            let (name, ty) = e.split_once(':').unwrap_or((e, "varchar(64)"));
            VCol { name: name.to_string(), ty: parse_type(ty), nullable: true }
        })
        .collect()
}

/// The views, with MariaDB 10.11's columns.
const VIEWS: &[(&str, &str)] = &[
    ("SCHEMATA", "CATALOG_NAME varchar(512) NO|SCHEMA_NAME varchar(64) NO|DEFAULT_CHARACTER_SET_NAME varchar(32) NO|DEFAULT_COLLATION_NAME varchar(64) NO|SQL_PATH varchar(512) YES|SCHEMA_COMMENT varchar(1024) NO"),
    ("TABLES", "TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|TABLE_TYPE varchar(64) NO|ENGINE varchar(64) YES|VERSION bigint(21) unsigned YES|ROW_FORMAT varchar(10) YES|TABLE_ROWS bigint(21) unsigned YES|AVG_ROW_LENGTH bigint(21) unsigned YES|DATA_LENGTH bigint(21) unsigned YES|MAX_DATA_LENGTH bigint(21) unsigned YES|INDEX_LENGTH bigint(21) unsigned YES|DATA_FREE bigint(21) unsigned YES|AUTO_INCREMENT bigint(21) unsigned YES|CREATE_TIME datetime YES|UPDATE_TIME datetime YES|CHECK_TIME datetime YES|TABLE_COLLATION varchar(64) YES|CHECKSUM bigint(21) unsigned YES|CREATE_OPTIONS varchar(2048) YES|TABLE_COMMENT varchar(2048) NO|MAX_INDEX_LENGTH bigint(21) unsigned YES|TEMPORARY varchar(1) YES"),
    ("COLUMNS", "TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|COLUMN_NAME varchar(64) NO|ORDINAL_POSITION bigint(21) unsigned NO|COLUMN_DEFAULT longtext YES|IS_NULLABLE varchar(3) NO|DATA_TYPE varchar(64) NO|CHARACTER_MAXIMUM_LENGTH bigint(21) unsigned YES|CHARACTER_OCTET_LENGTH bigint(21) unsigned YES|NUMERIC_PRECISION bigint(21) unsigned YES|NUMERIC_SCALE bigint(21) unsigned YES|DATETIME_PRECISION bigint(21) unsigned YES|CHARACTER_SET_NAME varchar(32) YES|COLLATION_NAME varchar(64) YES|COLUMN_TYPE longtext NO|COLUMN_KEY varchar(3) NO|EXTRA varchar(80) NO|PRIVILEGES varchar(80) NO|COLUMN_COMMENT varchar(1024) NO|IS_GENERATED varchar(6) NO|GENERATION_EXPRESSION longtext YES"),
    ("STATISTICS", "TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|NON_UNIQUE bigint(1) NO|INDEX_SCHEMA varchar(64) NO|INDEX_NAME varchar(64) NO|SEQ_IN_INDEX int(2) unsigned NO|COLUMN_NAME varchar(64) NO|COLLATION varchar(1) YES|CARDINALITY bigint(21) YES|SUB_PART bigint(3) YES|PACKED varchar(10) YES|NULLABLE varchar(3) NO|INDEX_TYPE varchar(16) NO|COMMENT varchar(16) YES|INDEX_COMMENT varchar(1024) NO|IGNORED varchar(3) NO"),
    ("KEY_COLUMN_USAGE", "CONSTRAINT_CATALOG varchar(512) NO|CONSTRAINT_SCHEMA varchar(64) NO|CONSTRAINT_NAME varchar(64) NO|TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|COLUMN_NAME varchar(64) NO|ORDINAL_POSITION bigint(10) NO|POSITION_IN_UNIQUE_CONSTRAINT bigint(10) YES|REFERENCED_TABLE_SCHEMA varchar(64) YES|REFERENCED_TABLE_NAME varchar(64) YES|REFERENCED_COLUMN_NAME varchar(64) YES"),
    ("REFERENTIAL_CONSTRAINTS", "CONSTRAINT_CATALOG varchar(512) NO|CONSTRAINT_SCHEMA varchar(64) NO|CONSTRAINT_NAME varchar(64) NO|UNIQUE_CONSTRAINT_CATALOG varchar(512) NO|UNIQUE_CONSTRAINT_SCHEMA varchar(64) NO|UNIQUE_CONSTRAINT_NAME varchar(64) YES|MATCH_OPTION varchar(64) NO|UPDATE_RULE varchar(64) NO|DELETE_RULE varchar(64) NO|TABLE_NAME varchar(64) NO|REFERENCED_TABLE_NAME varchar(64) YES"),
    ("TRIGGERS", "TRIGGER_CATALOG varchar(512) NO|TRIGGER_SCHEMA varchar(64) NO|TRIGGER_NAME varchar(64) NO|EVENT_MANIPULATION varchar(6) NO|EVENT_OBJECT_CATALOG varchar(512) NO|EVENT_OBJECT_SCHEMA varchar(64) NO|EVENT_OBJECT_TABLE varchar(64) NO|ACTION_ORDER bigint(4) NO|ACTION_CONDITION longtext YES|ACTION_STATEMENT longtext YES|ACTION_ORIENTATION varchar(9) NO|ACTION_TIMING varchar(6) NO|ACTION_REFERENCE_OLD_TABLE varchar(64) YES|ACTION_REFERENCE_NEW_TABLE varchar(64) YES|ACTION_REFERENCE_OLD_ROW varchar(3) NO|ACTION_REFERENCE_NEW_ROW varchar(3) NO|CREATED datetime(2) YES|SQL_MODE varchar(8192) NO|DEFINER varchar(384) YES|CHARACTER_SET_CLIENT varchar(32) NO|COLLATION_CONNECTION varchar(64) NO|DATABASE_COLLATION varchar(64) NO"),
    ("ROUTINES", "SPECIFIC_NAME varchar(64) NO|ROUTINE_CATALOG varchar(512) NO|ROUTINE_SCHEMA varchar(64) NO|ROUTINE_NAME varchar(64) NO|ROUTINE_TYPE varchar(13) NO|DATA_TYPE varchar(64) NO|CHARACTER_MAXIMUM_LENGTH int(21) YES|CHARACTER_OCTET_LENGTH int(21) YES|NUMERIC_PRECISION int(21) YES|NUMERIC_SCALE int(21) YES|DATETIME_PRECISION bigint(21) unsigned YES|CHARACTER_SET_NAME varchar(64) YES|COLLATION_NAME varchar(64) YES|DTD_IDENTIFIER longtext YES|ROUTINE_BODY varchar(8) NO|ROUTINE_DEFINITION longtext YES|EXTERNAL_NAME varchar(64) YES|EXTERNAL_LANGUAGE varchar(64) YES|PARAMETER_STYLE varchar(8) NO|IS_DETERMINISTIC varchar(3) NO|SQL_DATA_ACCESS varchar(64) NO|SQL_PATH varchar(64) YES|SECURITY_TYPE varchar(7) NO|CREATED datetime NO|LAST_ALTERED datetime NO|SQL_MODE varchar(8192) NO|ROUTINE_COMMENT longtext NO|DEFINER varchar(384) NO|CHARACTER_SET_CLIENT varchar(32) NO|COLLATION_CONNECTION varchar(64) NO|DATABASE_COLLATION varchar(64) NO"),
    ("ENGINES", "ENGINE varchar(64) NO|SUPPORT varchar(8) NO|COMMENT varchar(160) NO|TRANSACTIONS varchar(3) YES|XA varchar(3) YES|SAVEPOINTS varchar(3) YES"),
    ("COLLATIONS", "COLLATION_NAME varchar(64) NO|CHARACTER_SET_NAME varchar(32) YES|ID bigint(11) YES|IS_DEFAULT varchar(3) YES|IS_COMPILED varchar(3) NO|SORTLEN bigint(3) NO"),
    ("CHARACTER_SETS", "CHARACTER_SET_NAME varchar(32) NO|DEFAULT_COLLATE_NAME varchar(64) NO|DESCRIPTION varchar(60) NO|MAXLEN bigint(3) NO"),
    ("COLLATION_CHARACTER_SET_APPLICABILITY", "COLLATION_NAME varchar(64) NO|CHARACTER_SET_NAME varchar(32) NO|FULL_COLLATION_NAME varchar(64) NO|ID bigint(11) NO|IS_DEFAULT varchar(3) NO"),
    ("TABLE_CONSTRAINTS", "CONSTRAINT_CATALOG varchar(512) NO|CONSTRAINT_SCHEMA varchar(64) NO|CONSTRAINT_NAME varchar(64) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|CONSTRAINT_TYPE varchar(64) NO"),
    ("VIEWS", "TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|VIEW_DEFINITION longtext NO|CHECK_OPTION varchar(8) NO|IS_UPDATABLE varchar(3) NO|DEFINER varchar(384) NO|SECURITY_TYPE varchar(7) NO|CHARACTER_SET_CLIENT varchar(32) NO|COLLATION_CONNECTION varchar(64) NO|ALGORITHM varchar(10) NO"),
    ("PARTITIONS", "TABLE_CATALOG varchar(512) NO|TABLE_SCHEMA varchar(64) NO|TABLE_NAME varchar(64) NO|PARTITION_NAME varchar(64) YES|SUBPARTITION_NAME varchar(64) YES|PARTITION_ORDINAL_POSITION bigint(21) unsigned YES|SUBPARTITION_ORDINAL_POSITION bigint(21) unsigned YES|PARTITION_METHOD varchar(18) YES|SUBPARTITION_METHOD varchar(12) YES|PARTITION_EXPRESSION longtext YES|SUBPARTITION_EXPRESSION longtext YES|PARTITION_DESCRIPTION longtext YES|TABLE_ROWS bigint(21) unsigned NO|AVG_ROW_LENGTH bigint(21) unsigned NO|DATA_LENGTH bigint(21) unsigned NO|MAX_DATA_LENGTH bigint(21) unsigned YES|INDEX_LENGTH bigint(21) unsigned NO|DATA_FREE bigint(21) unsigned NO|CREATE_TIME datetime YES|UPDATE_TIME datetime YES|CHECK_TIME datetime YES|CHECKSUM bigint(21) unsigned YES|PARTITION_COMMENT varchar(80) NO|NODEGROUP varchar(12) NO|TABLESPACE_NAME varchar(64) YES"),
    ("PROCESSLIST", "ID bigint(4) NO|USER varchar(128) NO|HOST varchar(64) NO|DB varchar(64) YES|COMMAND varchar(16) NO|TIME int(7) NO|STATE varchar(64) YES|INFO longtext YES|TIME_MS decimal(22,3) NO|STAGE tinyint(2) NO|MAX_STAGE tinyint(2) NO|PROGRESS decimal(7,3) NO|MEMORY_USED bigint(7) NO|MAX_MEMORY_USED bigint(7) NO|EXAMINED_ROWS int(7) NO|QUERY_ID bigint(4) NO|INFO_BINARY blob YES|TID bigint(4) NO"),
    ("SESSION_VARIABLES", "VARIABLE_NAME varchar(64) NO|VARIABLE_VALUE varchar(4096) NO"),
    ("GLOBAL_VARIABLES", "VARIABLE_NAME varchar(64) NO|VARIABLE_VALUE varchar(4096) NO"),
    ("SESSION_STATUS", "VARIABLE_NAME varchar(64) NO|VARIABLE_VALUE varchar(4096) NO"),
    ("GLOBAL_STATUS", "VARIABLE_NAME varchar(64) NO|VARIABLE_VALUE varchar(4096) NO"),
    ("SYSTEM_VARIABLES", "VARIABLE_NAME varchar(64) NO|SESSION_VALUE varchar(2048) YES|GLOBAL_VALUE varchar(2048) YES|GLOBAL_VALUE_ORIGIN varchar(64) NO|DEFAULT_VALUE varchar(2048) YES|VARIABLE_SCOPE varchar(64) NO|VARIABLE_TYPE varchar(64) NO|VARIABLE_COMMENT varchar(2048) NO|NUMERIC_MIN_VALUE varchar(21) YES|NUMERIC_MAX_VALUE varchar(21) YES|NUMERIC_BLOCK_SIZE varchar(21) YES|ENUM_VALUE_LIST longtext YES|READ_ONLY varchar(3) NO|COMMAND_LINE_ARGUMENT varchar(64) YES|GLOBAL_VALUE_PATH varchar(2048) YES"),
    ("PLUGINS", "PLUGIN_NAME varchar(64) NO|PLUGIN_VERSION varchar(20) NO|PLUGIN_STATUS varchar(16) NO|PLUGIN_TYPE varchar(80) NO|PLUGIN_TYPE_VERSION varchar(20) NO|PLUGIN_LIBRARY varchar(64) YES|PLUGIN_LIBRARY_VERSION varchar(20) YES|PLUGIN_AUTHOR varchar(64) YES|PLUGIN_DESCRIPTION longtext YES|PLUGIN_LICENSE varchar(80) NO|LOAD_OPTION varchar(64) NO|PLUGIN_MATURITY varchar(12) NO|PLUGIN_AUTH_VERSION varchar(80) YES"),
];

/// The views' names, as SHOW TABLES FROM information_schema lists them.
pub fn view_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = VIEWS.iter().chain(crate::engine_is::VIEWS).map(|(n, _)| *n).collect();
    v.sort_unstable();
    v
}

/// The columns of view `name` (any letter case), or 1109.
pub fn view_cols(name: &str) -> SqlResult<(&'static str, Vec<VCol>)> {
    VIEWS
        .iter()
        .chain(crate::engine_is::VIEWS)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(n, spec)| (*n, is_cols(spec)))
        .ok_or_else(|| SqlError::unknown_table_in(name, SCHEMA))
}

/// The rows of view `name` as `txn` sees the tables.
pub fn rows(s: &Session, txn: &Txn, name: &str) -> SqlResult<Virtual> {
    let (canon, cols) = view_cols(name)?;
    if let Some(rows) = crate::engine_is::rows(s, canon)? {
        return Ok(Virtual { name: canon.to_string(), cols, rows });
    }
    let rows = match canon {
        "SCHEMATA" => schemata(s),
        "TABLES" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let mut r = vec![Value::str("def"), Value::str(&t.def.db), Value::str(&t.def.name)];
                r.push(Value::str("BASE TABLE"));
                r.extend(table_status(s, txn, &t)?);
                out.push(r);
            }
            // A view: its names, TABLE_TYPE 'VIEW', TABLE_COMMENT 'VIEW',
            // NULL elsewhere (as MariaDB; mariadb-dump reads TABLE_TYPE).
            let comment = cols.iter().position(|c| c.name == "TABLE_COMMENT");
            for v in user_views(s, txn)? {
                let mut r = vec![Value::Null; cols.len()];
                r[0] = Value::str("def");
                r[1] = Value::str(&v.db);
                r[2] = Value::str(&v.name);
                r[3] = Value::str("VIEW");
                if let Some(i) = comment {
                    r[i] = Value::str("VIEW");
                }
                out.push(r);
            }
            out
        }
        "VIEWS" => user_views(s, txn)?
            .into_iter()
            .map(|v| {
                let create = crate::views::show_create(&v);
                let check = if v.check_option.is_empty() { "NONE" } else { v.check_option.as_str() };
                vec![
                    Value::str("def"),
                    Value::str(&v.db),
                    Value::str(&v.name),
                    Value::str(&v.query),
                    Value::str(check),
                    Value::str(if crate::views::is_updatable(s, txn, &v) { "YES" } else { "NO" }),
                    Value::str("root@localhost"),
                    Value::str(&v.security),
                    create[2].clone(),
                    create[3].clone(),
                    Value::str(&v.algorithm),
                ]
            })
            .collect(),
        "COLUMNS" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let def = &t.def;
                for (i, c) in def.columns.iter().enumerate() {
                    out.push(column_row(def, i, c));
                }
            }
            out
        }
        "STATISTICS" => {
            let mut out = Vec::new();
            for t in tables(s) {
                for r in index_rows(txn, &t)? {
                    let mut row = vec![Value::str("def"), Value::str(&t.def.db), Value::str(&t.def.name)];
                    // SHOW INDEX's columns less Table, with INDEX_SCHEMA after NON_UNIQUE.
                    row.push(r[1].clone());
                    row.push(Value::str(&t.def.db));
                    row.extend(r[2..].iter().cloned());
                    out.push(row);
                }
            }
            out
        }
        "KEY_COLUMN_USAGE" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let def = &t.def;
                for ix in index_order(def).into_iter().map(|i| &def.indexes[i]) {
                    if ix.kind == IndexKind::Plain {
                        continue;
                    }
                    for (pos, p) in ix.parts.iter().enumerate() {
                        out.push(vec![
                            Value::str("def"),
                            Value::str(&def.db),
                            Value::str(&ix.name),
                            Value::str("def"),
                            Value::str(&def.db),
                            Value::str(&def.name),
                            Value::str(&def.columns[p.col].name),
                            Value::Int(pos as i64 + 1),
                            Value::Null,
                            Value::Null,
                            Value::Null,
                            Value::Null,
                        ]);
                    }
                }
                for fk in sorted_fks(def) {
                    for (pos, (c, r)) in fk.cols.iter().zip(&fk.ref_cols).enumerate() {
                        out.push(vec![
                            Value::str("def"),
                            Value::str(&def.db),
                            Value::str(&fk.name),
                            Value::str("def"),
                            Value::str(&def.db),
                            Value::str(&def.name),
                            Value::str(c),
                            Value::Int(pos as i64 + 1),
                            Value::Int(pos as i64 + 1),
                            Value::str(&fk.ref_db),
                            Value::str(&fk.ref_table),
                            Value::str(r),
                        ]);
                    }
                }
            }
            out
        }
        "REFERENTIAL_CONSTRAINTS" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let def = &t.def;
                for fk in sorted_fks(def) {
                    // The parent's index the constraint uses.
                    let unique = s.inner.table(&fk.ref_db, &fk.ref_table).ok().and_then(|p| {
                        let cols: Vec<usize> =
                            fk.ref_cols.iter().filter_map(|c| p.def.col_index(c)).collect();
                        p.def
                            .indexes
                            .iter()
                            .find(|ix| {
                                ix.parts.len() >= cols.len()
                                    && ix.parts.iter().zip(&cols).all(|(a, b)| a.col == *b)
                            })
                            .map(|ix| ix.name.clone())
                    });
                    out.push(vec![
                        Value::str("def"),
                        Value::str(&def.db),
                        Value::str(&fk.name),
                        Value::str("def"),
                        Value::str(&fk.ref_db),
                        unique.map_or(Value::Null, Value::str),
                        Value::str("NONE"),
                        Value::str(fk.on_update.sql()),
                        Value::str(fk.on_delete.sql()),
                        Value::str(&def.name),
                        Value::str(&fk.ref_table),
                    ]);
                }
            }
            out
        }
        "TABLE_CONSTRAINTS" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let def = &t.def;
                for ix in index_order(def).into_iter().map(|i| &def.indexes[i]) {
                    let kind = match ix.kind {
                        IndexKind::Primary => "PRIMARY KEY",
                        IndexKind::Unique => "UNIQUE",
                        IndexKind::Plain => continue,
                    };
                    out.push(constraint_row(def, &ix.name, kind));
                }
                for fk in sorted_fks(def) {
                    out.push(constraint_row(def, &fk.name, "FOREIGN KEY"));
                }
                // A JSON column carries MariaDB's CHECK (json_valid(col)), named after it.
                for c in def.columns.iter().filter(|c| c.ty == SqlType::Json) {
                    out.push(constraint_row(def, &c.name, "CHECK"));
                }
            }
            out
        }
        "PARTITIONS" => {
            let mut out = Vec::new();
            for t in tables(s) {
                let st = table_status(s, txn, &t)?;
                let mut r = vec![Value::str("def"), Value::str(&t.def.db), Value::str(&t.def.name)];
                r.extend(std::iter::repeat_n(Value::Null, 9));
                // TABLE_ROWS .. DATA_FREE, the times, CHECKSUM, as TABLES has them.
                r.extend(st[3..9].iter().cloned());
                r.extend(st[10..13].iter().cloned());
                r.push(st[14].clone());
                r.extend([Value::str(""), Value::str(""), Value::Null]);
                out.push(r);
            }
            out
        }
        "ENGINES" => engines(),
        "COLLATIONS" => collations(),
        "CHARACTER_SETS" => charsets(),
        "COLLATION_CHARACTER_SET_APPLICABILITY" => ALL_COLLATIONS
            .iter()
            .map(|c| {
                vec![
                    Value::str(c.name()),
                    Value::str(c.charset().name()),
                    Value::str(c.name()),
                    Value::Int(c.id() as i64),
                    Value::str(if c.charset().default_collation() == *c { "Yes" } else { "" }),
                ]
            })
            .collect(),
        "PROCESSLIST" => {
            let info = |v: &str| if v.is_empty() { Value::Null } else { Value::str(v) };
            s.inner
                .processes()
                .into_iter()
                .map(|(id, p)| {
                    let state = if id == s.conn_id {
                        "Filling schema table".to_string()
                    } else if p.command == "Query" {
                        p.progress.state().unwrap_or_else(|| "Sending data".into())
                    } else {
                        String::new()
                    };
                    let examined = if p.command == "Query" { p.progress.counts().0 } else { 0 };
                    // ALTER TABLE's stage and progress (`progress.rs`).
                    let running = p.command == "Query" && id != s.conn_id;
                    let stage = if running { p.progress.stage() } else { (0, 0, 0.0) };
                    let ms = p.since.elapsed().as_millis() as i64;
                    vec![
                        Value::Int(id as i64),
                        Value::str(&p.user),
                        Value::str(&p.host),
                        p.db.as_deref().map_or(Value::Null, Value::str),
                        Value::str(p.command),
                        Value::Int(ms / 1000),
                        Value::str(&state),
                        info(&p.info),
                        Value::Decimal(bigdecimal::BigDecimal::from(ms).with_scale(3)),
                        Value::Int(stage.0 as i64),
                        Value::Int(stage.1 as i64),
                        decimal3(stage.2),
                        Value::Int(0),
                        Value::Int(0),
                        Value::Int(examined as i64),
                        Value::Int(0),
                        info(&p.info),
                        Value::Int(0),
                    ]
                })
                .collect()
        }
        "SESSION_VARIABLES" | "GLOBAL_VARIABLES" => variables(s, canon == "GLOBAL_VARIABLES")
            .into_iter()
            .map(|(n, v)| vec![Value::str(n.to_ascii_uppercase()), Value::str(v)])
            .collect(),
        "SESSION_STATUS" | "GLOBAL_STATUS" => status(s, canon == "GLOBAL_STATUS")
            .into_iter()
            .map(|(n, v)| vec![Value::str(n.to_ascii_uppercase()), Value::str(v)])
            .collect(),
        "SYSTEM_VARIABLES" => system_variables(s),
        "PLUGINS" => plugins(),
        // REFERENTIAL_CONSTRAINTS, TRIGGERS, ROUTINES, VIEWS: none exist.
        _ => Vec::new(),
    };
    Ok(Virtual { name: canon.to_string(), cols, rows })
}

/// A table's foreign keys by name, as InnoDB lists them.
fn sorted_fks(def: &TableDef) -> Vec<&crate::catalog::ForeignKeyDef> {
    let mut v: Vec<_> = def.foreign_keys.iter().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

fn constraint_row(def: &TableDef, name: &str, kind: &str) -> Vec<Value> {
    vec![
        Value::str("def"),
        Value::str(&def.db),
        Value::str(name),
        Value::str(&def.db),
        Value::str(&def.name),
        Value::str(kind),
    ]
}

/// Every database's row of SCHEMATA, information_schema first.
pub fn schemata(s: &Session) -> Vec<Vec<Value>> {
    let mut out = vec![schema_row(SCHEMA, Collation::Utf8mb3GeneralCi)];
    for d in s.inner.schema.read().dbs.values() {
        out.push(schema_row(&d.name, d.collation));
    }
    out
}

fn schema_row(name: &str, c: Collation) -> Vec<Value> {
    vec![
        Value::str("def"),
        Value::str(name),
        Value::str(c.charset().name()),
        Value::str(c.name()),
        Value::Null,
        Value::str(""),
    ]
}

/// Every table, ordered by database and name.
/// Every user view, database by database, as `txn` sees the catalog.
fn user_views(s: &Session, txn: &Txn) -> SqlResult<Vec<crate::views::ViewDef>> {
    let dbs: Vec<String> = s.inner.schema.read().dbs.keys().cloned().collect();
    let mut out = Vec::new();
    for db in dbs {
        out.extend(crate::views::list(s, txn, &db)?);
    }
    Ok(out)
}

pub fn tables(s: &Session) -> Vec<std::sync::Arc<Table>> {
    s.inner.schema.read().tables.values().cloned().collect()
}

/// The ENGINES rows (SHOW ENGINES has the same columns).
pub fn engines() -> Vec<Vec<Value>> {
    [
        [
            "FractalDB",
            "DEFAULT",
            "Fractal-tree (B-epsilon) storage: transactions, MVCC, compression",
            "YES",
            "YES",
            "YES",
        ],
        // Its tables are virtual (crate::seqengine), MariaDB's row.
        ["SEQUENCE", "YES", "Generated tables filled with sequential values", "YES", "NO", "YES"],
    ]
    .iter()
    .map(|r| r.iter().map(Value::str).collect())
    .collect()
}

/// SHOW COLLATION's and COLLATIONS' rows.
pub fn collations() -> Vec<Vec<Value>> {
    ALL_COLLATIONS
        .iter()
        .map(|c| {
            let default = c.charset().default_collation() == *c;
            vec![
                Value::str(c.name()),
                Value::str(c.charset().name()),
                Value::Int(c.id() as i64),
                Value::str(if default { "Yes" } else { "" }),
                Value::str("Yes"),
                Value::Int(if *c == Collation::Utf8mb4UnicodeCi { 8 } else { 1 }),
            ]
        })
        .collect()
}

/// CHARACTER_SETS' rows, in the order of its columns.
pub fn charsets() -> Vec<Vec<Value>> {
    [Charset::Binary, Charset::Latin1, Charset::Utf8mb3, Charset::Utf8mb4]
        .iter()
        .map(|c| {
            vec![
                Value::str(c.name()),
                Value::str(c.default_collation().name()),
                Value::str(c.description()),
                Value::Int(c.max_len() as i64),
            ]
        })
        .collect()
}

/// SYSTEM_VARIABLES: one row per variable of `sysvars::DEFS`, with this
/// session's and the global value as SHOW VARIABLES prints them (NULL where
/// the variable has no such scope), the built-in default, and the kind
/// mapped to MariaDB's VARIABLE_TYPE. Deviations from MariaDB (documented in
/// ARCHITECTURE.md): VARIABLE_COMMENT is empty; string variables are
/// VARCHAR (MariaDB says ENUM or SET for some, with ENUM_VALUE_LIST);
/// GLOBAL_VALUE_ORIGIN is COMPILE-TIME while the global value is the
/// default, else CONFIG (MariaDB tells SQL from CONFIG and COMMAND-LINE).
pub fn system_variables(s: &Session) -> Vec<Vec<Value>> {
    use crate::sysvars::{parse_text, Kind, Scope, DEFS};
    let text = |v: Option<String>| v.map_or(Value::Null, Value::str);
    DEFS.iter()
        .map(|d| {
            let session = (d.scope != Scope::Global).then(|| s.sysvar(d.name).ok()).flatten();
            let global =
                (d.scope != Scope::Session).then(|| s.sysvar(&format!("global.{}", d.name)).ok()).flatten();
            let default = parse_text(d, d.default).ok();
            let render = |v: Option<Value>| v.map(|v| var_text(d.name, &v));
            let (global, default) = (render(global), render(default));
            let origin = if global.is_none() || global == default { "COMPILE-TIME" } else { "CONFIG" };
            let (ty, min, max, block, list) = match d.kind {
                Kind::Int(lo, hi) => (
                    "BIGINT UNSIGNED",
                    Some(lo.to_string()),
                    Some(hi.to_string()),
                    Some("1".to_string()),
                    None,
                ),
                Kind::Bool => ("BOOLEAN", None, None, None, Some("OFF,ON".to_string())),
                Kind::Secs => ("DOUBLE", Some("0".to_string()), Some("31536000".to_string()), None, None),
                Kind::Str => ("VARCHAR", None, None, None, None),
            };
            let scope = match d.scope {
                Scope::Global => "GLOBAL",
                Scope::Both => "SESSION",
                Scope::Session => "SESSION ONLY",
            };
            vec![
                Value::str(d.name.to_ascii_uppercase()),
                text(render(session)),
                text(global),
                Value::str(origin),
                // As MariaDB: read-only variables have no default to show,
                // except the numeric server-wide ones.
                text(if !d.dynamic && (d.scope == Scope::Session || !matches!(d.kind, Kind::Int(..))) {
                    None
                } else {
                    default
                }),
                Value::str(scope),
                Value::str(ty),
                Value::str(""),
                text(min),
                text(max),
                text(block),
                text(list),
                Value::str(if d.dynamic { "NO" } else { "YES" }),
                // How the server's command line takes it: booleans as bare
                // flags; session-only variables not at all.
                text(match (d.scope, d.kind) {
                    (Scope::Session, _) | (_, Kind::Bool) => None,
                    (_, Kind::Str) if !d.dynamic => None,
                    _ => Some("REQUIRED".to_string()),
                }),
                Value::Null,
            ]
        })
        .collect()
}

/// PLUGINS: what this server really has: its one storage engine and the
/// two authentication methods the server speaks (crates/server/src/auth.rs).
/// Nothing we lack (partition, Aria, sequence, ...) is listed, so MariaDB's
/// tests that need a plugin skip themselves.
pub fn plugins() -> Vec<Vec<Value>> {
    let version = crate::SERVER_VERSION.split('-').next().unwrap_or(crate::SERVER_VERSION);
    let row = |name: &str, ty: &str, ty_version: &str, desc: &str, load: &str| {
        vec![
            Value::str(name),
            Value::str("1.0"),
            Value::str("ACTIVE"),
            Value::str(ty),
            Value::str(ty_version),
            Value::Null,
            Value::Null,
            Value::str("fractaldb"),
            Value::str(desc),
            Value::str("Apache-2.0"),
            Value::str(load),
            Value::str("Stable"),
            Value::str(version),
        ]
    };
    vec![
        row("mysql_native_password", "AUTHENTICATION", "2.2", "Native MySQL authentication", "FORCE"),
        row("caching_sha2_password", "AUTHENTICATION", "2.2", "MySQL 8's SHA-256 authentication", "FORCE"),
        row(
            "FractalDB",
            "STORAGE ENGINE",
            "101119.0",
            "Fractal-tree (B-epsilon) storage: transactions, MVCC, compression",
            "FORCE",
        ),
    ]
}

/// `v`, the value of variable `name`, as SHOW VARIABLES prints it
/// (booleans ON/OFF).
fn var_text(name: &str, v: &Value) -> String {
    match (v, crate::sysvars::is_bool(name)) {
        (Value::Null, _) => String::new(),
        (Value::Int(i), true) => if *i != 0 { "ON" } else { "OFF" }.to_string(),
        (Value::UInt(i), true) => if *i != 0 { "ON" } else { "OFF" }.to_string(),
        (Value::Str(b), true) if b == b"1" || b == b"0" => if b == b"1" { "ON" } else { "OFF" }.to_string(),
        _ => v.render(),
    }
}

/// The variables SHOW [GLOBAL] VARIABLES lists, sorted by name, with
/// their values rendered as MariaDB does (booleans as ON/OFF): every
/// variable of `sysvars::DEFS` (GLOBAL: not the SESSION-only ones, with
/// their global values), plus the ones the session SET that are not there.
pub fn variables(s: &Session, global: bool) -> Vec<(String, String)> {
    use crate::sysvars::{Scope, DEFS};
    let mut names: Vec<String> =
        DEFS.iter().filter(|d| !global || d.scope != Scope::Session).map(|d| d.name.to_string()).collect();
    if !global {
        names.extend(s.vars.keys().cloned());
    }
    names.extend(s.server.vars.iter().map(|(k, _)| k.clone()));
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for n in names {
        let v = if global { s.sysvar(&format!("global.{n}")) } else { s.sysvar(&n) };
        let Ok(v) = v else { continue };
        let text = var_text(&n, &v);
        out.push((n, text));
    }
    out
}

/// SHOW [GLOBAL | SESSION] STATUS: the statement counters (this
/// session's, or every session's: those ended plus those live), the
/// server's connection counters, and the engine's as `Fractaldb_*` (with
/// TokuDB's `Tokudb_*` names after the prefix where TokuDB had one).
pub fn status(s: &Session, global: bool) -> Vec<(String, String)> {
    use crate::sysvars::{STAT_COUNT, STAT_NAMES};
    use std::sync::atomic::Ordering::Relaxed;
    let inner = &s.inner;
    let uptime = inner.started.elapsed().as_secs();
    let procs = inner.processes();
    let mut counts = if global { *inner.ended_stats.lock() } else { [0; STAT_COUNT] };
    for (id, p) in &procs {
        if global || *id == s.conn_id {
            for (c, x) in counts.iter_mut().zip(p.stats) {
                *c += x;
            }
        }
    }
    let mut v: Vec<(String, String)> =
        STAT_NAMES.iter().zip(counts).map(|(n, c)| (n.to_string(), c.to_string())).collect();
    let questions = counts[crate::sysvars::Stat::Questions as usize];
    let running = procs.iter().filter(|(_, p)| p.command == "Query").count().max(1);
    let k = &inner.counters;
    let stats = inner.env.stats();
    let ckpts = inner.env.checkpoint_timings();
    let ckpt_total: u128 = ckpts.iter().map(|t| t.total.as_millis()).sum();
    let ckpt_last = ckpts.last().map_or(0, |t| t.total.as_millis());
    let mut add = |n: &str, x: String| v.push((n.to_string(), x));
    add("Queries", questions.to_string());
    add("Connections", k.connections.load(Relaxed).to_string());
    add("Aborted_clients", k.aborted_clients.load(Relaxed).to_string());
    add("Aborted_connects", k.aborted_connects.load(Relaxed).to_string());
    add("Max_used_connections", k.max_used_connections.load(Relaxed).to_string());
    add("Threads_cached", "0".into());
    add("Threads_connected", procs.len().to_string());
    add("Threads_created", k.threads_created.load(Relaxed).to_string());
    add("Threads_running", running.to_string());
    add("Open_tables", inner.schema.read().tables.len().to_string());
    add("Opened_tables", inner.schema.read().tables.len().to_string());
    add("Uptime", uptime.to_string());
    add("Uptime_since_flush_status", uptime.to_string());
    add("Fractaldb_CACHETABLE_SIZE_LIMIT", stats.cache.budget_bytes.to_string());
    add("Fractaldb_CACHETABLE_SIZE_CURRENT", stats.cache.used_bytes.to_string());
    add("Fractaldb_CACHETABLE_HIT", stats.cache.hits.to_string());
    add("Fractaldb_CACHETABLE_MISS", stats.cache.misses.to_string());
    add("Fractaldb_CACHETABLE_EVICTIONS", stats.cache.evictions.to_string());
    add("Fractaldb_CACHETABLE_WAIT_PRESSURE_COUNT", stats.cache.client_waits.to_string());
    add("Fractaldb_CHECKPOINT_TAKEN", ckpts.len().to_string());
    add("Fractaldb_CHECKPOINT_DURATION", (ckpt_total / 1000).to_string());
    add("Fractaldb_CHECKPOINT_DURATION_LAST", (ckpt_last / 1000).to_string());
    add("Fractaldb_CHECKPOINT_DURATION_MS", ckpt_total.to_string());
    add("Fractaldb_CHECKPOINT_DURATION_LAST_MS", ckpt_last.to_string());
    add("Fractaldb_CHECKPOINT_COPIES", stats.checkpoint_copies.to_string());
    add("Fractaldb_CHECKPOINT_COPY_BYTES", stats.checkpoint_copy_bytes.to_string());
    add("Fractaldb_CHECKPOINT_COPY_BYTES_PEAK", stats.checkpoint_copy_bytes_peak.to_string());
    add("Fractaldb_SPILLS_WRITTEN_BACK", stats.write_back_spills.to_string());
    add("Fractaldb_SPILL_READS", stats.spill_reads.to_string());
    add("Fractaldb_SPILL_READ_BYTES", stats.spill_read_bytes.to_string());
    add("Fractaldb_LOGGER_WRITES", stats.log.records.to_string());
    add("Fractaldb_LOGGER_WRITES_BYTES", stats.log.bytes.to_string());
    add("Fractaldb_LOGGER_FSYNCS", stats.log.fsyncs.to_string());
    add("Fractaldb_CACHETABLE_LONG_WRITE_BACKS", stats.cache.write_backs.to_string());
    add("Fractaldb_LOCKTREE_MEMORY_SIZE", stats.locks.bytes.to_string());
    add("Fractaldb_LOCKTREE_WAIT_COUNT", stats.locks.waits.to_string());
    add("Fractaldb_LOCKTREE_TIMEOUT_COUNT", stats.locks.timeouts.to_string());
    add("Fractaldb_LOCKTREE_DEADLOCK_COUNT", stats.locks.deadlocks.to_string());
    add("Fractaldb_LOCKTREE_ESCALATION_NUM", stats.locks.escalations.to_string());
    add("Fractaldb_TXN_OPEN", stats.open_transactions.to_string());
    if !global {
        // The connection's own (Ssl_cipher, Ssl_version), from the server.
        v.extend(s.server.status.iter().cloned());
    }
    v.sort_by_key(|a| a.0.to_ascii_lowercase());
    v
}

/// The values of a table's TABLES row from ENGINE on (SHOW TABLE STATUS
/// has the same from its Engine column on).
pub fn table_status(s: &Session, txn: &Txn, t: &Table) -> SqlResult<Vec<Value>> {
    let def = &t.def;
    let rows = t.row_count_settled(txn, &s.inner.env)?;
    let space =
        |d: &fractaldb::Dictionary| d.space().map(|sp| (sp.live_bytes, sp.file_bytes, sp.punched_bytes));
    let (data, file, punched) = space(&t.main)?;
    let mut index = 0u64;
    let mut free = file.saturating_sub(data + punched);
    for d in t.sec.iter().flatten() {
        let (l, f, p) = space(d)?;
        index += l;
        free += f.saturating_sub(l + p);
    }
    let auto = match def.auto_col() {
        Some(_) => Value::UInt(next_auto_increment(txn, t)?),
        None => Value::Null,
    };
    let created = epoch_datetime(s, def.created);
    Ok(vec![
        Value::str("FractalDB"),
        Value::UInt(10),
        // The codec the rows are stored with, by TokuDB's name for it.
        Value::str(crate::rowformat::shown(t.main.codec())),
        Value::UInt(rows),
        Value::UInt(data.checked_div(rows).unwrap_or(0)),
        Value::UInt(data),
        Value::UInt(0),
        Value::UInt(index),
        Value::UInt(free),
        auto,
        created,
        Value::Null,
        Value::Null,
        Value::str(def.collation.name()),
        Value::Null,
        // As MariaDB: the ROW_FORMAT the table was declared with.
        Value::str(if def.row_format.is_empty() {
            String::new()
        } else {
            format!("row_format={}", def.row_format)
        }),
        Value::str(&def.comment),
        Value::UInt(0),
        Value::str("N"),
    ])
}

/// A time kept as seconds since the epoch, as a DATETIME in the session's
/// time zone.
fn epoch_datetime(s: &Session, secs: i64) -> Value {
    match crate::temporal::parse_tz(&s.time_zone) {
        Some(tz) => Value::Temporal(crate::temporal::from_utc_micros(secs.saturating_mul(1_000_000), &tz, 0)),
        None => Value::Null,
    }
}

/// The next AUTO_INCREMENT value: the one the table counts in memory once
/// an insert used it, else one past the largest value stored.
pub fn next_auto_increment(txn: &Txn, t: &Table) -> SqlResult<u64> {
    if let Some(v) = *t.autoinc.lock() {
        return Ok(v);
    }
    let Some(col) = t.def.auto_col() else { return Ok(1) };
    let mut max = 0u64;
    for kv in txn.range(&t.main, None, None, false) {
        let (k, v) = kv?;
        match &t.decode_row(&k, &v)?[col] {
            Value::Int(i) if *i > 0 => max = max.max(*i as u64),
            Value::UInt(u) => max = max.max(*u),
            _ => {}
        }
    }
    Ok((max + 1).max(t.def.auto_increment_start.max(1)))
}

/// The order MariaDB keeps a table's indexes in (and SHOW CREATE TABLE and
/// SHOW INDEX list them in): the primary key, unique keys over NOT NULL
/// columns, other unique keys, then the rest, each group as declared.
pub fn index_order(def: &TableDef) -> Vec<usize> {
    let rank = |ix: &IndexDef| match ix.kind {
        IndexKind::Primary => 0,
        IndexKind::Unique if ix.parts.iter().all(|p| !def.columns[p.col].nullable) => 1,
        IndexKind::Unique => 2,
        IndexKind::Plain => 3,
    };
    let mut v: Vec<usize> = (0..def.indexes.len()).collect();
    v.sort_by_key(|&i| rank(&def.indexes[i]));
    v
}

/// The index MariaDB treats as the primary key: the declared one, else
/// the first unique key over NOT NULL columns without prefixes.
fn effective_primary(def: &TableDef) -> Option<usize> {
    if def.primary.is_some() {
        return def.primary;
    }
    index_order(def).into_iter().find(|&i| {
        let ix = &def.indexes[i];
        ix.kind == IndexKind::Unique
            && ix.parts.iter().all(|p| !def.columns[p.col].nullable && p.prefix.is_none())
    })
}

/// SHOW COLUMNS' Key and COLUMNS.COLUMN_KEY: PRI for a part of the primary
/// key, UNI for the column of a one-column unique key, MUL for the first
/// column of any other index.
pub fn column_key(def: &TableDef, col: usize) -> &'static str {
    if let Some(p) = effective_primary(def) {
        if def.indexes[p].parts.iter().any(|x| x.col == col) {
            return "PRI";
        }
    }
    let first = |ix: &&IndexDef| ix.parts.first().is_some_and(|p| p.col == col);
    if def.indexes.iter().filter(first).any(|ix| ix.kind != IndexKind::Plain && ix.parts.len() == 1) {
        return "UNI";
    }
    if def.indexes.iter().any(|ix| first(&ix)) {
        return "MUL";
    }
    ""
}

/// SHOW COLUMNS' Extra.
pub fn column_extra(c: &Column) -> String {
    if c.auto_increment {
        "auto_increment".into()
    } else if c.on_update_now {
        "on update current_timestamp()".into()
    } else {
        String::new()
    }
}

/// A column's default as a value MariaDB shows (None: no default or NULL).
pub enum DefaultText {
    None,
    Null,
    /// A number or bit literal: written bare.
    Bare(String),
    /// A string or temporal: written quoted where SQL text is expected.
    Quoted(String),
    Now,
}

pub fn default_text(c: &Column) -> DefaultText {
    match &c.default {
        DefaultSpec::None => DefaultText::None,
        // An AUTO_INCREMENT or other NOT NULL column has no NULL default to show.
        DefaultSpec::Null if !c.nullable => DefaultText::None,
        DefaultSpec::Null => DefaultText::Null,
        DefaultSpec::CurrentTimestamp => DefaultText::Now,
        DefaultSpec::Literal(b) => {
            let v = crate::coerce::default_value(c, None).ok().flatten().unwrap_or(Value::Str(b.clone()));
            match &c.ty {
                SqlType::Bit { .. } => {
                    let n = match v {
                        Value::UInt(u) => u,
                        Value::Int(i) => i as u64,
                        Value::Str(b) => b.iter().fold(0u64, |a, x| (a << 8) | *x as u64),
                        _ => 0,
                    };
                    DefaultText::Bare(format!("b'{n:b}'"))
                }
                SqlType::Int { .. }
                | SqlType::Decimal { .. }
                | SqlType::Float { .. }
                | SqlType::Double { .. } => DefaultText::Bare(v.render()),
                SqlType::Year => DefaultText::Bare(v.render()),
                _ => DefaultText::Quoted(v.render()),
            }
        }
    }
}

/// SQL text of a string literal, as SHOW CREATE TABLE writes it.
pub fn quote_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// CHARACTER_MAXIMUM_LENGTH and CHARACTER_OCTET_LENGTH.
fn char_lengths(ty: &SqlType) -> (Value, Value) {
    let mb = |c: &Collation| c.charset().max_len();
    match ty {
        SqlType::Str { kind: StrKind::Lob, len, .. } => (Value::UInt(*len), Value::UInt(*len)),
        SqlType::Str { len, coll, .. } => (Value::UInt(*len), Value::UInt(len * mb(coll))),
        SqlType::Enum { values, coll } => {
            let n = values.iter().map(|v| v.chars().count() as u64).max().unwrap_or(0);
            (Value::UInt(n), Value::UInt(n * mb(coll)))
        }
        SqlType::Set { values, coll } => {
            let n = values.iter().map(|v| v.chars().count() as u64).sum::<u64>()
                + values.len().saturating_sub(1) as u64;
            (Value::UInt(n), Value::UInt(n * mb(coll)))
        }
        SqlType::Json => (Value::UInt(4_294_967_295), Value::UInt(4_294_967_295)),
        _ => (Value::Null, Value::Null),
    }
}

/// NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION.
fn numeric(ty: &SqlType) -> (Value, Value, Value) {
    let u = Value::UInt;
    match ty {
        SqlType::Int { bytes, unsigned } => {
            let p = match (bytes, unsigned) {
                (1, _) => 3,
                (2, _) => 5,
                (3, _) => 7,
                (4, _) => 10,
                (_, false) => 19,
                (_, true) => 20,
            };
            (u(p), u(0), Value::Null)
        }
        SqlType::Decimal { precision, scale, .. } => (u(*precision as u64), u(*scale as u64), Value::Null),
        SqlType::Float { .. } => (u(12), Value::Null, Value::Null),
        SqlType::Double { .. } => (u(22), Value::Null, Value::Null),
        SqlType::Bit { bits } => (u(*bits as u64), Value::Null, Value::Null),
        SqlType::Time { fsp } | SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => {
            (Value::Null, Value::Null, u(*fsp as u64))
        }
        _ => (Value::Null, Value::Null, Value::Null),
    }
}

/// The collation a column shows (None for binary and non-string types).
pub fn text_collation(ty: &SqlType) -> Option<Collation> {
    ty.collation().filter(|c| *c != Collation::Binary)
}

fn column_row(def: &TableDef, i: usize, c: &Column) -> Vec<Value> {
    let default = match default_text(c) {
        DefaultText::None => Value::Null,
        DefaultText::Null => Value::str("NULL"),
        DefaultText::Bare(s) => Value::str(s),
        DefaultText::Quoted(s) => Value::str(quote_str(&s)),
        DefaultText::Now => Value::str("current_timestamp()"),
    };
    let (cmax, coct) = char_lengths(&c.ty);
    let (np, ns, dp) = numeric(&c.ty);
    let coll = text_collation(&c.ty);
    vec![
        Value::str("def"),
        Value::str(&def.db),
        Value::str(&def.name),
        Value::str(&c.name),
        Value::UInt(i as u64 + 1),
        default,
        Value::str(if c.nullable { "YES" } else { "NO" }),
        Value::str(c.ty.data_type()),
        cmax,
        coct,
        np,
        ns,
        dp,
        coll.map_or(Value::Null, |c| Value::str(c.charset().name())),
        coll.map_or(Value::Null, |c| Value::str(c.name())),
        Value::str(c.ty.column_type()),
        Value::str(column_key(def, i)),
        Value::str(column_extra(c)),
        Value::str("select,insert,update,references"),
        Value::str(&c.comment),
        Value::str("NEVER"),
        Value::Null,
    ]
}

/// SHOW INDEX's rows for a table (its 14 columns, Table first).
pub fn index_rows(txn: &Txn, t: &Table) -> SqlResult<Vec<Vec<Value>>> {
    let def = &t.def;
    let rows = t.row_estimate(txn)?;
    let mut out = Vec::new();
    for ix in index_order(def).into_iter().map(|i| &def.indexes[i]) {
        let analyzed = crate::maint::cardinality(txn, t, ix)?;
        for (seq, p) in ix.parts.iter().enumerate() {
            let col = &def.columns[p.col];
            // What the last ANALYZE TABLE counted; else the row count
            // (exact for a unique key's full length; a non-unique index
            // has at most as many distinct values as rows).
            let cardinality = analyzed[seq].unwrap_or(rows);
            out.push(vec![
                Value::str(&def.name),
                Value::Int(i64::from(ix.kind == IndexKind::Plain)),
                Value::str(&ix.name),
                Value::UInt(seq as u64 + 1),
                Value::str(&col.name),
                Value::str(if p.desc { "D" } else { "A" }),
                // A disabled index (DISABLE KEYS): no cardinality and the
                // Comment "disabled", as MariaDB shows a MyISAM one.
                if ix.disabled { Value::Null } else { Value::Int(cardinality as i64) },
                p.prefix.map_or(Value::Null, |n| Value::Int(n as i64)),
                Value::Null,
                Value::str(if col.nullable { "YES" } else { "" }),
                Value::str("BTREE"),
                Value::str(if ix.disabled { "disabled" } else { "" }),
                Value::str(&ix.comment),
                Value::str("NO"),
            ]);
        }
    }
    Ok(out)
}

/// A DECIMAL(_, 3) of `v` (PROCESSLIST's progress columns).
pub(crate) fn decimal3(v: f64) -> Value {
    use std::str::FromStr;
    Value::Decimal(bigdecimal::BigDecimal::from_str(&format!("{v:.3}")).unwrap_or_default().with_scale(3))
}
