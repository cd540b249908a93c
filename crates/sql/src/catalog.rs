//! The schema: databases, tables, columns, indexes, and where each table's
//! dictionaries are.
//!
//! Kept in one engine dictionary, [`CATALOG_DICT`], as JSON records:
//! `db/<name>` → [`DbDef`], `table/<db>/<name>` → [`TableDef`], and
//! `next_id` → the next table id. Every DDL statement changes these records
//! in one engine transaction, so a crash leaves the old schema or the new
//! one. The table's dictionaries are created before that transaction
//! commits and dropped after it: a crash between leaves dictionaries no
//! record names, which `Database::open` drops (see `db.rs`).
//!
//! A table's dictionaries are named as TokuDB named its files:
//! `<db>/<table>/main` (primary key → row), `<db>/<table>/key-<index>` per
//! secondary index, `<db>/<table>/status` (row count deltas,
//! auto-increment). The names are recorded in the `TableDef`, and the
//! records, not the names, say which table a dictionary belongs to: a
//! RENAME TABLE changes the record only, and a name already taken (by a
//! renamed table, or by the new dictionaries of a TRUNCATE) gets a `~<n>`
//! suffix.

use serde::{Deserialize, Serialize};

use crate::types::{Collation, SqlType};

/// The engine dictionary holding the catalog.
pub const CATALOG_DICT: &str = "__sql/catalog";

/// Longest database, table, column or index name, in characters.
pub const MAX_IDENT_CHARS: usize = 64;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DbDef {
    pub name: String,
    pub collation: Collation,
}

/// What a column's DEFAULT is.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum DefaultSpec {
    /// No DEFAULT clause on a NOT NULL column: an INSERT must name it (1364
    /// in strict mode).
    None,
    Null,
    /// A constant, kept as text and converted to the column's type when
    /// used (as MySQL's .frm keeps the converted record).
    Literal(Vec<u8>),
    /// CURRENT_TIMESTAMP[(fsp)].
    CurrentTimestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub default: DefaultSpec,
    pub auto_increment: bool,
    /// ON UPDATE CURRENT_TIMESTAMP.
    pub on_update_now: bool,
    pub comment: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum IndexKind {
    Primary,
    Unique,
    Plain,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IndexPart {
    /// Position in `TableDef::columns`.
    pub col: usize,
    /// A prefix length in characters (bytes for binary strings).
    pub prefix: Option<u32>,
    pub desc: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IndexDef {
    pub name: String,
    pub kind: IndexKind,
    /// A TokuDB clustering index: its entries carry the whole row.
    pub clustering: bool,
    pub parts: Vec<IndexPart>,
    /// The engine dictionary holding it (for the primary key: the table's
    /// main dictionary).
    pub dict: String,
    pub comment: String,
    /// `ALTER TABLE t DISABLE KEYS` (bulkload.rs): a non-unique index
    /// no statement writes or reads until ENABLE KEYS rebuilds it.
    /// **Invariant:** its dictionary is stale while set (rows written since
    /// lack entries, rows removed keep theirs), so nothing reads it: the
    /// planner, joins, EXPLAIN, foreign keys and ANALYZE skip it, and
    /// writes skip it ([`TableDef::maintained`]). Only plain indexes no
    /// foreign key uses are ever disabled, so unique checks and foreign key
    /// lookups never depend on one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Its entries carry the values of the key parts whose key form does
    /// not give the value back (a string under a text collation keys its
    /// weights): after the primary key that ends a plain index's key, each
    /// such part's value in order and their length (`keycodec::put_carried`,
    /// `keycodec::end_carried`), so a read of
    /// the index alone can return them ([`IndexDef::carries`]). Set when
    /// the index gets a new dictionary ([`IndexDef::new_dictionary`]), so
    /// every entry of a dictionary is written under one setting; indexes
    /// built before it existed keep `false` until they are rebuilt.
    /// **Invariant:** the types of an index's parts never change while
    /// its dictionary lives (a column in an index is retyped by a rebuild,
    /// `instant::prepare`), so the carried parts of its entries are fixed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub carry: bool,
    /// How its entries carry values (`keycodec::put_carried_as`): 0, each
    /// value whole; `keycodec::CARRY_COMPACT`, ASCII text of a `*_bin` or
    /// `*_general_ci` collation as its letters' case and trailing spaces,
    /// the rest rebuilt from the key part. Set with `carry`, for the same
    /// reason: a row's entry must come out byte for byte as it was written
    /// for a delete or CHECK TABLE to find it, so one dictionary never
    /// mixes the two forms. Readers take either form.
    #[serde(default, skip_serializing_if = "crate::rowformat::is_zero")]
    pub carry_form: u8,
}

impl IndexDef {
    /// Whether part `p` of this index (a column of type `ty`) carries its
    /// value after the key (see `carry`): only a plain, non-clustering
    /// index's key ends with the primary key, after which more bytes
    /// change neither its order nor its uniqueness; a clustering index's
    /// value is the row anyway.
    pub fn carries(&self, p: &IndexPart, ty: &crate::types::SqlType) -> bool {
        self.carry
            && self.kind == IndexKind::Plain
            && !self.clustering
            && p.prefix.is_none()
            && matches!(ty, crate::types::SqlType::Str { .. })
            && !crate::keycodec::gives_value(ty, None)
    }

    /// Names the new dictionary this index's entries are about to be
    /// written into, all of them by this build: they can carry values.
    pub fn new_dictionary(&mut self, dict: String) {
        self.dict = dict;
        self.carry = true;
        self.carry_form = crate::keycodec::CARRY_COMPACT;
    }
}

/// The protocol's column flags a column's definition gives it (the values
/// are MySQL's: drivers read them, e.g. to find a table's key).
pub mod column_flags {
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const AUTO_INCREMENT: u16 = 0x200;
    pub const NO_DEFAULT_VALUE: u16 = 0x1000;
    pub const PART_KEY: u16 = 0x4000;
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TableDef {
    /// Unique over the life of the folder; never reused.
    pub id: u64,
    pub db: String,
    pub name: String,
    pub columns: Vec<Column>,
    /// The primary key: `Some(i)` into `indexes` (always 0 when present), or
    /// `None` for a table without one, keyed by a hidden 8-byte row id.
    pub primary: Option<usize>,
    /// Every index, the primary key (if any) first.
    pub indexes: Vec<IndexDef>,
    pub main_dict: String,
    pub status_dict: String,
    pub collation: Collation,
    pub comment: String,
    /// AUTO_INCREMENT=n given at CREATE or ALTER: the next value is at least this.
    pub auto_increment_start: u64,
    /// Bumped by every change of the row format; rows carry it.
    pub schema_version: u32,
    /// The CREATE time, seconds since the epoch (SHOW TABLE STATUS).
    pub created: i64,
    /// CHECK constraints, enforced on every row written.
    #[serde(default)]
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints of this table (the child), enforced as
    /// InnoDB enforces them (`fk.rs`). Records written before foreign keys
    /// existed have none.
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// ROW_FORMAT as CREATE or ALTER TABLE named it, upper case ("" for
    /// none or DEFAULT): what SHOW CREATE TABLE writes (`rowformat.rs`).
    #[serde(default)]
    pub row_format: String,
    /// The engine codec (`fractaldb::Codec::name`) every dictionary of the
    /// table is created with; older records' dictionaries are all zstd.
    #[serde(default = "crate::rowformat::old_records_codec")]
    pub codec: String,
    /// The node size, basement size and fanout every dictionary of the
    /// table is created with: `tokudb_block_size`, `tokudb_read_block_size`
    /// and `tokudb_fanout` at CREATE TABLE, kept by rebuilds
    /// (`rowformat::dict_options`). 0: the engine's default (records
    /// written before tables had them).
    #[serde(default, skip_serializing_if = "crate::rowformat::is_zero")]
    pub node_bytes: u32,
    #[serde(default, skip_serializing_if = "crate::rowformat::is_zero")]
    pub basement_bytes: u32,
    #[serde(default, skip_serializing_if = "crate::rowformat::is_zero")]
    pub fanout: u32,
    /// How to read rows of older schema versions left by instant column
    /// changes (`instant.rs`); empty after a rebuild. Older records have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layouts: Vec<crate::instant::Layout>,
    /// What the main dictionary's rows leave out: 0, nothing (records
    /// written before 2026-12-01); `table::ROW_KEYLESS`, the primary key's
    /// integer columns, which the row's key holds (`Table::key_held`):
    /// their NULL bits are set and they have no field, and
    /// `Table::decode_row` reads them from the key. Set when the table
    /// gets a new main dictionary (`ddl::create_dicts`, a rebuild), so one
    /// dictionary's rows are all of one form. **Invariant:** the primary
    /// key's columns and types never change while its main dictionary
    /// lives (a change of the primary key, or of a column in it, is a
    /// rebuild: `instant::prepare`).
    #[serde(default, skip_serializing_if = "crate::rowformat::is_zero")]
    pub row_form: u8,
}

/// What a foreign key does to the child rows when their parent row is
/// deleted or its referenced columns change.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum FkAction {
    Restrict,
    NoAction,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    /// As SHOW CREATE TABLE and INFORMATION_SCHEMA write it.
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::Restrict => "RESTRICT",
            FkAction::NoAction => "NO ACTION",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY constraint. Columns are kept by name (the parent's may
/// not exist yet when `foreign_key_checks` is off, as in dump files);
/// ALTER TABLE renames them here when it renames a column.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ForeignKeyDef {
    /// The constraint's name (`<table>_ibfk_<n>` when none was given).
    pub name: String,
    /// The child's columns, in order.
    pub cols: Vec<String>,
    pub ref_db: String,
    pub ref_table: String,
    /// The parent's columns, one per child column.
    pub ref_cols: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
}

/// A CHECK constraint: its name (a column-level one is named after its
/// column, as in MariaDB) and its expression as SQL text, bound over the
/// table's columns when a statement writes rows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
}

impl TableDef {
    /// Column `col`'s key and default flags, as MySQL sets them: PRI_KEY on
    /// every part of the primary key; on the first part of another key,
    /// UNIQUE_KEY if it is a unique key of one column, else MULTIPLE_KEY;
    /// PART_KEY on any column some key starts with or contains;
    /// NO_DEFAULT_VALUE on a NOT NULL column with no DEFAULT that is not
    /// AUTO_INCREMENT.
    pub fn column_flags(&self, col: usize) -> u16 {
        use column_flags::*;
        let c = &self.columns[col];
        let mut f = 0;
        if c.auto_increment {
            f |= AUTO_INCREMENT;
        } else if matches!(c.default, DefaultSpec::None) && !c.nullable {
            f |= NO_DEFAULT_VALUE;
        }
        for ix in &self.indexes {
            let Some(pos) = ix.parts.iter().position(|p| p.col == col) else { continue };
            f |= PART_KEY;
            match ix.kind {
                IndexKind::Primary => f |= PRI_KEY,
                IndexKind::Unique if pos == 0 && ix.parts.len() == 1 => f |= UNIQUE_KEY,
                _ if pos == 0 => f |= MULTIPLE_KEY,
                _ => {}
            }
        }
        f
    }

    pub fn col_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    pub fn index_by_name(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// The AUTO_INCREMENT column, if any.
    pub fn auto_col(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }

    /// The secondary indexes: every index but the primary key.
    pub fn secondary(&self) -> impl Iterator<Item = (usize, &IndexDef)> {
        self.indexes.iter().enumerate().filter(|(_, i)| i.kind != IndexKind::Primary)
    }

    /// The secondary indexes writes keep up to date: all but the disabled.
    pub fn maintained(&self) -> impl Iterator<Item = (usize, &IndexDef)> {
        self.secondary().filter(|(_, i)| !i.disabled)
    }
}

/// Catalog record keys.
pub fn db_key(db: &str) -> Vec<u8> {
    format!("db/{db}").into_bytes()
}

pub fn table_key(db: &str, table: &str) -> Vec<u8> {
    format!("table/{db}/{table}").into_bytes()
}

pub const NEXT_ID_KEY: &[u8] = b"next_id";

/// Writes `def` as the catalog record of table `db`.`name` in `txn`.
pub fn put_table(
    txn: &fractaldb::Txn,
    catalog: &fractaldb::Dictionary,
    (db, name): (&str, &str),
    def: &TableDef,
) -> crate::SqlResult<()> {
    let json = serde_json::to_vec(def).expect("a TableDef serialises");
    txn.put(catalog, &table_key(db, name), &json)?;
    Ok(())
}

/// Checks a database, table, column or index name as MySQL does.
pub fn check_ident(name: &str, what: Ident) -> crate::SqlResult<()> {
    use crate::SqlError;
    let bad = name.is_empty() || name.ends_with(' ') || name.contains('\0');
    if name.chars().count() > MAX_IDENT_CHARS {
        return Err(SqlError::ident_too_long(name));
    }
    if bad
        || (what != Ident::Column
            && (name.contains('/') || name.contains('\\') || name == "." || name == ".."))
    {
        return Err(match what {
            Ident::Db => SqlError::wrong_db_name(name),
            Ident::Table => SqlError::wrong_table_name(name),
            Ident::Column | Ident::Index => SqlError::wrong_column_name(name),
        });
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ident {
    Db,
    Table,
    Column,
    Index,
}
