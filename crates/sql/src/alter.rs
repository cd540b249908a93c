//! ALTER TABLE: columns (ADD, DROP, MODIFY, CHANGE, RENAME, ALTER ...
//! DEFAULT), keys (primary, unique, plain), CHECK constraints and table
//! options, several in one statement.
//!
//! The statement's changes are applied to a working copy of the table's
//! definition; then one of three things happens, each ending in one engine
//! transaction that commits the new catalog record:
//!
//! - **metadata only** (a rename, a default, a comment, table options, a
//!   dropped index, and the column changes `instant.rs` makes without
//!   touching rows): the record is replaced; no row is read.
//! - **new indexes only**: built online while other sessions write
//!   (`online.rs`); with a new foreign key or CHECK to verify, their
//!   dictionaries are created and filled from the rows by the transaction
//!   that commits the record.
//! - **rows change** (a column change `instant.rs` cannot make, the
//!   primary key changed, CONVERT TO CHARACTER SET, ALGORITHM=COPY): every dictionary is
//!   new. The transaction reads each row, converts it with INSERT's
//!   store-into-column rules (`coerce.rs`: errors in strict mode, warnings
//!   otherwise), writes it and its index entries, writes the exact row
//!   count into the new status dictionary, and commits the record.
//!
//! **Invariant (crash-safe DDL):** new dictionaries are created before the
//! transaction and the old ones dropped after it commits, so after a crash
//! the catalog names either the old dictionaries or the new ones, and
//! `Database::open` drops whatever no record names (a half-built copy).
//! A failed statement drops what it created and leaves the table as it was.
//!
//! **Invariant (no row lost):** the swap runs under the table's exclusive
//! metadata lock (`mdl.rs`): no transaction that writes the table is open
//! while the rows are copied, so the copy reads every committed row and
//! later writers write the new table. New indexes alone are built online
//! instead, while other sessions write (`online.rs`).

use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use fractaldb::Isolation;
use sqlparser::ast;

use crate::bulk::PairSorter;
use crate::catalog::{
    self, check_ident, CheckDef, Column, DefaultSpec, Ident, IndexDef, IndexKind, TableDef,
};
use crate::coerce::{self, StoreCtx};
use crate::ddl::{build_column, index_parts, qualify, BuiltColumn};
use crate::error::{SqlError, SqlResult, Warning};
use crate::session::{Outcome, Session};
use crate::table::Table;
use crate::types::{Charset, Collation, SqlType};
use crate::value::Value;

/// A column of the working definition: `id` is stable while the
/// statement's changes are applied (index parts refer to it), `src` is the
/// old column its values come from (`None` for a new column).
#[derive(Clone)]
struct WCol {
    col: Column,
    id: usize,
    src: Option<usize>,
}

struct Work {
    old: Arc<Table>,
    cols: Vec<WCol>,
    /// Index parts' `col` are `WCol::id`s here.
    indexes: Vec<IndexDef>,
    checks: Vec<CheckDef>,
    /// The table's foreign keys (columns by name), and those added.
    fks: Vec<catalog::ForeignKeyDef>,
    new_fks: Vec<crate::fk::Declared>,
    next_id: usize,
    comment: String,
    collation: Collation,
    auto_increment: Option<u64>,
    /// CONVERT TO CHARACTER SET: every text column takes this collation.
    convert: Option<Collation>,
    /// ROW_FORMAT=: its word, resolved by `finish` (a new codec rebuilds).
    row_format: Option<String>,
    /// ENGINE=: changes nothing; `finish` notes it (`ddl::engine_named`).
    engine: Option<String>,
    rename: Option<(String, String)>,
    /// ALGORITHM= / LOCK= (`instant.rs`).
    clauses: crate::instant::Clauses,
}

/// ALTER TABLE as sqlparser parsed it, with what lex.rs took out of it
/// (`flags.table_options`: `ENGINE`, `COMMENT`, `CHARSET`, ...;
/// `flags.clustering_indexes`). The caller holds the DDL lock.
pub fn alter_table(s: &mut Session, at: &ast::AlterTable, flags: &crate::lex::Flags) -> SqlResult<Outcome> {
    let (db, name) = qualify(s, &at.name)?;
    let old = s.inner.table(&db, &name)?;
    let mut w = Work::new(old);
    // Drops are resolved against the table as it was, before the rest (as
    // in MariaDB: `ADD INDEX (c), DROP INDEX c` finds no index c).
    for op in &at.operations {
        w.apply_drop(s, op)?;
    }
    for op in &at.operations {
        w.apply(s, op)?;
    }
    for (k, v) in &flags.table_options {
        w.option(k, v)?;
    }
    // TokuDB's CLUSTERING keys added by this statement.
    for ix in w.indexes.iter_mut().filter(|i| i.dict.is_empty() && i.kind != IndexKind::Primary) {
        ix.clustering = flags.clustering_indexes.iter().any(|c| c.eq_ignore_ascii_case(&ix.name));
    }
    w.finish(s)
}

/// An ALTER TABLE made of table options only (see `lex.rs`).
pub fn alter_options(
    s: &mut Session,
    db: &str,
    table: &str,
    options: &[(String, String)],
) -> SqlResult<Outcome> {
    let inner = s.inner.clone();
    let _g = inner.ddl.lock();
    let old = s.inner.table(db, table)?;
    let mut w = Work::new(old);
    for (k, v) in options {
        w.option(k, v)?;
    }
    w.finish(s)
}

fn unknown_col(name: &str, table: &str) -> SqlError {
    SqlError::unknown_column(name, table)
}

fn cant_drop(what: &str, name: &str) -> SqlError {
    SqlError::new(1091, "42000", format!("Can't DROP {what} `{name}`; check that it exists"))
}

pub(crate) fn index_comment(opts: &[ast::IndexOption]) -> String {
    opts.iter()
        .find_map(|o| match o {
            ast::IndexOption::Comment(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

impl Work {
    fn new(old: Arc<Table>) -> Work {
        let cols: Vec<WCol> = old
            .def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| WCol { col: c.clone(), id: i, src: Some(i) })
            .collect();
        Work {
            next_id: cols.len(),
            cols,
            indexes: old.def.indexes.clone(),
            checks: old.def.checks.clone(),
            fks: old.def.foreign_keys.clone(),
            new_fks: Vec::new(),
            comment: old.def.comment.clone(),
            collation: old.def.collation,
            auto_increment: None,
            convert: None,
            row_format: None,
            engine: None,
            rename: None,
            clauses: Default::default(),
            old,
        }
    }

    fn tname(&self) -> String {
        self.old.def.name.clone()
    }

    fn pos(&self, name: &str) -> Option<usize> {
        self.cols.iter().position(|c| c.col.name.eq_ignore_ascii_case(name))
    }

    fn pos_or_err(&self, name: &str) -> SqlResult<usize> {
        self.pos(name).ok_or_else(|| unknown_col(name, &self.tname()))
    }

    fn columns(&self) -> Vec<Column> {
        self.cols.iter().map(|c| c.col.clone()).collect()
    }

    /// 1054 for `AFTER x` naming no column (MariaDB checks it first).
    fn check_position(&self, position: &Option<ast::MySQLColumnPosition>) -> SqlResult<()> {
        match position {
            Some(ast::MySQLColumnPosition::After(a)) if self.pos(&a.value).is_none() => {
                Err(unknown_col(&a.value, &self.tname()))
            }
            _ => Ok(()),
        }
    }

    /// Puts `wc` where `position` says (at the end without one).
    fn place(&mut self, wc: WCol, position: &Option<ast::MySQLColumnPosition>) -> SqlResult<()> {
        match position {
            None => self.cols.push(wc),
            Some(ast::MySQLColumnPosition::First) => self.cols.insert(0, wc),
            Some(ast::MySQLColumnPosition::After(a)) => match self.pos(&a.value) {
                Some(p) => self.cols.insert(p + 1, wc),
                None => return Err(unknown_col(&a.value, &self.tname())),
            },
        }
        Ok(())
    }

    /// Index parts over the working columns, with `col` as ids.
    fn parts(&self, ics: &[ast::IndexColumn]) -> SqlResult<Vec<catalog::IndexPart>> {
        let mut parts = index_parts(ics, &self.columns())?;
        for p in &mut parts {
            p.col = self.cols[p.col].id;
        }
        Ok(parts)
    }

    fn primary(&self) -> Option<usize> {
        self.indexes.iter().position(|i| i.kind == IndexKind::Primary)
    }

    fn add_index(
        &mut self,
        s: &mut Session,
        name: Option<String>,
        kind: IndexKind,
        parts: Vec<catalog::IndexPart>,
        comment: String,
    ) -> SqlResult<()> {
        if kind == IndexKind::Primary {
            if self.primary().is_some() {
                return Err(SqlError::multiple_primary_keys());
            }
            for p in &parts {
                if let Some(c) = self.cols.iter_mut().find(|c| c.id == p.col) {
                    c.col.nullable = false;
                    if c.col.default == DefaultSpec::Null && !c.col.auto_increment {
                        c.col.default = DefaultSpec::None;
                    }
                }
            }
            self.indexes.insert(
                0,
                IndexDef {
                    name: "PRIMARY".into(),
                    kind,
                    clustering: true,
                    parts,
                    dict: String::new(),
                    comment,
                    disabled: false,
                    carry: false,
                    carry_form: 0,
                },
            );
            return Ok(());
        }
        let name = match name {
            Some(n) => {
                if n.eq_ignore_ascii_case("PRIMARY") {
                    return Err(SqlError::new(1280, "42000", format!("Incorrect index name '{n}'")));
                }
                if self.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&n)) {
                    return Err(SqlError::dup_key_name(&n));
                }
                check_ident(&n, Ident::Index)?;
                n
            }
            None => {
                // Named after its first column, `_2`, `_3` ... on a clash.
                let base = self
                    .cols
                    .iter()
                    .find(|c| c.id == parts[0].col)
                    .map(|c| c.col.name.clone())
                    .unwrap_or_default();
                let mut n = base.clone();
                let mut k = 2;
                while n.eq_ignore_ascii_case("PRIMARY")
                    || self.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&n))
                {
                    n = format!("{base}_{k}");
                    k += 1;
                }
                n
            }
        };
        if self.indexes.iter().any(|i| i.kind == kind && i.parts == parts) {
            s.warnings.push(Warning::note(
                1831,
                format!(
                    "Duplicate index `{name}`. This is deprecated and will be disallowed in a future release"
                ),
            ));
        }
        self.indexes.push(IndexDef {
            name,
            kind,
            clustering: false,
            parts,
            dict: String::new(),
            comment,
            disabled: false,
            carry: false,
            carry_form: 0,
        });
        Ok(())
    }

    fn drop_column(&mut self, p: usize) {
        let id = self.cols.remove(p).id;
        for ix in &mut self.indexes {
            ix.parts.retain(|part| part.col != id);
        }
        self.indexes.retain(|ix| !ix.parts.is_empty());
    }

    fn apply_drop(&mut self, s: &mut Session, op: &ast::AlterTableOperation) -> SqlResult<()> {
        use ast::AlterTableOperation as O;
        match op {
            O::DropColumn { column_names, if_exists, .. } => {
                for n in column_names {
                    // An index a foreign key needs cannot lose the column.
                    if let Some(p) = self.pos(&n.value) {
                        let id = self.cols[p].id;
                        for ix in &self.indexes {
                            if ix.parts.iter().any(|part| part.col == id) {
                                self.fk_needs_index(s, ix)?;
                            }
                        }
                    }
                    match self.pos(&n.value) {
                        Some(p) => self.drop_column(p),
                        None if *if_exists => {
                            s.warnings.push(Warning::note(1091, cant_drop("COLUMN", &n.value).message))
                        }
                        None => return Err(cant_drop("COLUMN", &n.value)),
                    }
                }
            }
            O::DropPrimaryKey { .. } => match self.primary() {
                Some(p) => {
                    self.indexes.remove(p);
                }
                None => return Err(cant_drop("INDEX", "PRIMARY")),
            },
            O::DropIndex { name } => {
                match self.indexes.iter().position(|i| i.name.eq_ignore_ascii_case(&name.value)) {
                    Some(p) => {
                        self.fk_needs_index(s, &self.indexes[p])?;
                        self.indexes.remove(p);
                    }
                    None => return Err(cant_drop("INDEX", &name.value)),
                }
            }
            O::DropConstraint { name, if_exists, .. } => {
                if let Some(p) = self.checks.iter().position(|c| c.name.eq_ignore_ascii_case(&name.value)) {
                    self.checks.remove(p);
                } else if let Some(p) = self
                    .indexes
                    .iter()
                    .position(|i| i.kind == IndexKind::Unique && i.name.eq_ignore_ascii_case(&name.value))
                {
                    self.indexes.remove(p);
                } else if *if_exists {
                    s.warnings.push(Warning::note(1091, cant_drop("CONSTRAINT", &name.value).message));
                } else {
                    return Err(cant_drop("CONSTRAINT", &name.value));
                }
            }
            O::DropForeignKey { name, .. } => {
                match self.fks.iter().position(|f| f.name.eq_ignore_ascii_case(&name.value)) {
                    // Its index stays, as in InnoDB.
                    Some(p) => {
                        self.fks.remove(p);
                    }
                    None => return Err(cant_drop("FOREIGN KEY", &name.value)),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A column definition of MODIFY / CHANGE replacing column `p`.
    fn redefine(
        &mut self,
        s: &mut Session,
        p: usize,
        cd: &ast::ColumnDef,
        position: &Option<ast::MySQLColumnPosition>,
    ) -> SqlResult<()> {
        self.check_position(position)?;
        let mut others = self.columns();
        others.remove(p);
        let b = build_column(s, cd, self.collation, &others)?;
        let mut wc = self.cols[p].clone();
        self.rename_in_fks(&wc.col.name, &b.col.name);
        wc.col = b.col.clone();
        if position.is_some() {
            self.cols.remove(p);
            self.place(wc.clone(), position)?;
        } else {
            self.cols[p] = wc.clone();
        }
        self.inline_keys(s, &b, wc.id)
    }

    /// 1553 when index `ix` (parts as ids, before this statement's drops
    /// of other indexes) is the one a foreign key of this table, or of a
    /// table referencing it, is served by.
    fn fk_needs_index(&self, s: &Session, ix: &IndexDef) -> SqlResult<()> {
        let od = &self.old.def;
        let names: Vec<String> = ix
            .parts
            .iter()
            .map(|p| self.cols.iter().find(|c| c.id == p.col).map(|c| c.col.name.clone()).unwrap_or_default())
            .collect();
        let leads = |cols: &[String]| {
            names.len() >= cols.len() && names.iter().zip(cols).all(|(a, b)| a.eq_ignore_ascii_case(b))
        };
        // Another index leading with the same columns would serve as well.
        let others = |cols: &[String]| {
            self.indexes.iter().filter(|o| o.name != ix.name).any(|o| {
                o.parts.len() >= cols.len()
                    && o.parts.iter().zip(cols).all(|(p, c)| {
                        self.cols
                            .iter()
                            .find(|x| x.id == p.col)
                            .is_some_and(|x| x.col.name.eq_ignore_ascii_case(c))
                    })
            })
        };
        let mut needed = self.fks.iter().any(|f| leads(&f.cols) && !others(&f.cols));
        if !needed && crate::fk::checks_on(s) {
            needed = crate::fk::children(s, &od.db, &od.name).iter().any(|(c, i)| {
                leads(&c.def.foreign_keys[*i].ref_cols) && !others(&c.def.foreign_keys[*i].ref_cols)
            });
        }
        if needed {
            return Err(SqlError::new(
                1553,
                "HY000",
                format!("Cannot drop index '{}': needed in a foreign key constraint", ix.name),
            ));
        }
        Ok(())
    }

    /// A column renamed: the table's foreign keys follow.
    fn rename_in_fks(&mut self, from: &str, to: &str) {
        let (db, name) = (self.old.def.db.clone(), self.old.def.name.clone());
        for fk in &mut self.fks {
            let self_ref = fk.ref_db == db && fk.ref_table.eq_ignore_ascii_case(&name);
            for c in &mut fk.cols {
                if c.eq_ignore_ascii_case(from) {
                    *c = to.to_string();
                }
            }
            if self_ref {
                for c in &mut fk.ref_cols {
                    if c.eq_ignore_ascii_case(from) {
                        *c = to.to_string();
                    }
                }
            }
        }
    }

    fn inline_keys(&mut self, s: &mut Session, b: &BuiltColumn, id: usize) -> SqlResult<()> {
        for fk in &b.fks {
            let d = crate::fk::declared(&self.old.def.db, fk, Some(&b.col.name))?;
            self.new_fks.push(d);
        }
        let part = || vec![catalog::IndexPart { col: id, prefix: None, desc: false }];
        if b.primary {
            self.add_index(s, None, IndexKind::Primary, part(), String::new())?;
        }
        if b.unique {
            self.add_index(s, None, IndexKind::Unique, part(), String::new())?;
        }
        self.checks.extend(b.checks.iter().cloned());
        Ok(())
    }

    fn apply(&mut self, s: &mut Session, op: &ast::AlterTableOperation) -> SqlResult<()> {
        use ast::AlterTableOperation as O;
        match op {
            O::DropColumn { .. }
            | O::DropPrimaryKey { .. }
            | O::DropIndex { .. }
            | O::DropConstraint { .. } => {}
            O::DropForeignKey { .. } => {}
            O::AddColumn { column_def, column_position, if_not_exists, .. } => {
                if *if_not_exists && self.pos(&column_def.name.value).is_some() {
                    s.warnings
                        .push(Warning::note(1060, SqlError::dup_column(&column_def.name.value).message));
                    return Ok(());
                }
                self.check_position(column_position)?;
                let b = build_column(s, column_def, self.collation, &self.columns())?;
                let id = self.next_id;
                self.next_id += 1;
                self.place(WCol { col: b.col.clone(), id, src: None }, column_position)?;
                self.inline_keys(s, &b, id)?;
            }
            O::ModifyColumn { col_name, data_type, options, column_position } => {
                let p = self.pos_or_err(&col_name.value)?;
                let cd = column_def(col_name, data_type, options);
                self.redefine(s, p, &cd, column_position)?;
            }
            O::ChangeColumn { old_name, new_name, data_type, options, column_position } => {
                let p = self.pos_or_err(&old_name.value)?;
                let cd = column_def(new_name, data_type, options);
                self.redefine(s, p, &cd, column_position)?;
            }
            O::RenameColumn { old_column_name, new_column_name } => {
                let p = self.pos_or_err(&old_column_name.value)?;
                let new = &new_column_name.value;
                check_ident(new, Ident::Column)?;
                if self.cols.iter().enumerate().any(|(i, c)| i != p && c.col.name.eq_ignore_ascii_case(new)) {
                    return Err(SqlError::dup_column(new));
                }
                let old_name = self.cols[p].col.name.clone();
                self.rename_in_fks(&old_name, new);
                self.cols[p].col.name = new.clone();
            }
            O::AlterColumn { column_name, op } => {
                let p = self.pos_or_err(&column_name.value)?;
                match op {
                    ast::AlterColumnOperation::SetDefault { value } => {
                        let d = crate::ddl::default_spec(s, value, &column_name.value)?;
                        let c = &mut self.cols[p].col;
                        if d == DefaultSpec::Null && !c.nullable {
                            return Err(SqlError::invalid_default(&c.name));
                        }
                        c.default = d;
                        crate::coerce::timestamp_default_as_utc(c)?;
                    }
                    ast::AlterColumnOperation::DropDefault => {
                        let c = &mut self.cols[p].col;
                        c.default = if c.nullable { DefaultSpec::Null } else { DefaultSpec::None };
                    }
                    other => return Err(SqlError::syntax(format!("'{other}'"))),
                }
            }
            O::AddConstraint { constraint, .. } => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    let parts = self.parts(&pk.columns)?;
                    self.add_index(s, None, IndexKind::Primary, parts, index_comment(&pk.index_options))?;
                }
                ast::TableConstraint::Unique(u) => {
                    let parts = self.parts(&u.columns)?;
                    let n = u.name.as_ref().or(u.index_name.as_ref()).map(|n| n.value.clone());
                    self.add_index(s, n, IndexKind::Unique, parts, index_comment(&u.index_options))?;
                }
                ast::TableConstraint::Index(ix) => {
                    let parts = self.parts(&ix.columns)?;
                    let n = ix.name.as_ref().map(|n| n.value.clone());
                    self.add_index(s, n, IndexKind::Plain, parts, index_comment(&ix.index_options))?;
                }
                ast::TableConstraint::Check(c) => {
                    let name = match &c.name {
                        Some(n) => n.value.clone(),
                        None => {
                            let mut k = self.checks.len() + 1;
                            while self.checks.iter().any(|x| x.name == format!("CONSTRAINT_{k}")) {
                                k += 1;
                            }
                            format!("CONSTRAINT_{k}")
                        }
                    };
                    if self.checks.iter().any(|x| x.name.eq_ignore_ascii_case(&name)) {
                        return Err(SqlError::new(
                            1826,
                            "HY000",
                            format!("Duplicate CHECK constraint name '{name}'"),
                        ));
                    }
                    self.checks.push(CheckDef { name, expr: c.expr.to_string() });
                }
                ast::TableConstraint::ForeignKey(fk) => {
                    let d = crate::fk::declared(&self.old.def.db, fk, None)?;
                    self.new_fks.push(d);
                }
                _ => return Err(SqlError::unsupported("this ALTER TABLE ... ADD")),
            },
            O::RenameTable { table_name } => {
                let to = match table_name {
                    ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => qualify(s, n)?,
                };
                self.rename = Some(to);
            }
            O::AutoIncrement { value, .. } => {
                let v = value.value.to_string();
                self.auto_increment = Some(v.parse::<u64>().map_err(|_| SqlError::syntax(format!("'{v}'")))?);
            }
            O::Algorithm { algorithm, .. } => {
                self.clauses.option("ALGORITHM", &algorithm.to_string())?;
            }
            O::Lock { lock, .. } => {
                self.clauses.option("LOCK", &lock.to_string())?;
            }
            other => {
                let words: String =
                    other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                return Err(SqlError::unsupported(format!("ALTER TABLE ... {words}")));
            }
        }
        Ok(())
    }

    /// One table option (as `lex.rs` gives it).
    fn option(&mut self, k: &str, v: &str) -> SqlResult<()> {
        if self.clauses.option(k, v)? {
            return Ok(());
        }
        match k {
            "COMMENT" => self.comment = v.to_string(),
            "CHARSET" => {
                self.collation = Charset::by_name(v)
                    .map(|c| c.default_collation())
                    .ok_or_else(|| SqlError::new(1115, "42000", format!("Unknown character set: '{v}'")))?
            }
            "COLLATE" => {
                self.collation = Collation::by_name(v)
                    .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{v}'")))?
            }
            "CONVERT" => {
                let (cs, coll) = match v.split_once(" COLLATE ") {
                    Some((a, b)) => (a, Some(b)),
                    None => (v, None),
                };
                let c = match coll {
                    Some(c) => Collation::by_name(c)
                        .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{c}'")))?,
                    None => Charset::by_name(cs).map(|c| c.default_collation()).ok_or_else(|| {
                        SqlError::new(1115, "42000", format!("Unknown character set: '{cs}'"))
                    })?,
                };
                self.collation = c;
                self.convert = Some(c);
            }
            "ROW_FORMAT" => self.row_format = Some(v.to_string()),
            "ENGINE" => self.engine = Some(v.to_string()),
            // FORCE and the storage options of other engines are
            // accepted and ignored: every table is a FractalDB table, and
            // FORCE's rebuild would write the same rows.
            _ => {}
        }
        Ok(())
    }

    /// Turns the working copy into the new definition and swaps it in.
    fn finish(mut self, s: &mut Session) -> SqlResult<Outcome> {
        if let Some(e) = self.engine.take() {
            crate::ddl::engine_named(s, &e, &self.old.def.name, crate::ddl::EngineIn::Alter)?;
        }
        if self.cols.is_empty() {
            return Err(SqlError::new(
                1090,
                "42000",
                "You can't delete all columns with ALTER TABLE; use DROP TABLE instead",
            ));
        }
        // Primary key columns are NOT NULL whatever MODIFY / CHANGE said
        // (as in MariaDB, which adds it silently).
        if let Some(p) = self.primary() {
            let ids: Vec<usize> = self.indexes[p].parts.iter().map(|part| part.col).collect();
            for c in self.cols.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.col.nullable = false;
                if c.col.default == DefaultSpec::Null && !c.col.auto_increment {
                    c.col.default = DefaultSpec::None;
                }
            }
        }
        if let Some(c) = self.convert {
            for wc in &mut self.cols {
                convert_collation(&mut wc.col.ty, c);
            }
        }
        let old = self.old.clone();
        let od = &old.def;
        // Ids -> positions.
        let at = |id: usize, cols: &[WCol]| {
            cols.iter().position(|c| c.id == id).expect("an index part names a column of the table")
        };
        let mut indexes = self.indexes.clone();
        for ix in &mut indexes {
            for p in &mut ix.parts {
                p.col = at(p.col, &self.cols);
            }
        }
        // The primary key first, as the catalog wants it.
        if let Some(p) = indexes.iter().position(|i| i.kind == IndexKind::Primary) {
            let pk = indexes.remove(p);
            indexes.insert(0, pk);
        }
        let columns: Vec<Column> = self.cols.iter().map(|c| c.col.clone()).collect();
        for ix in &indexes {
            for p in &ix.parts {
                if columns[p.col].ty.is_lob() && p.prefix.is_none() {
                    return Err(SqlError::blob_key_without_length(&columns[p.col].name));
                }
            }
        }
        if columns.iter().filter(|c| c.auto_increment).count() > 1 {
            return Err(SqlError::bad_auto_increment());
        }
        if let Some(a) = columns.iter().position(|c| c.auto_increment) {
            if !indexes.iter().any(|ix| ix.parts.first().is_some_and(|p| p.col == a)) {
                return Err(SqlError::bad_auto_increment());
            }
        }
        let mut def = TableDef {
            columns,
            primary: indexes.first().filter(|i| i.kind == IndexKind::Primary).map(|_| 0),
            indexes,
            collation: self.collation,
            comment: self.comment.clone(),
            checks: self.checks.clone(),
            foreign_keys: self.fks.clone(),
            ..od.clone()
        };
        // New foreign keys: checked, named, given their child index.
        let mut check_fks = Vec::new();
        for d in std::mem::take(&mut self.new_fks) {
            crate::fk::add(s, &mut def, d)?;
            check_fks.push(def.foreign_keys.last().expect("just added").clone());
        }
        if let Some(n) = self.auto_increment {
            def.auto_increment_start = n.max(1);
        }
        if let Some(rf) = &self.row_format {
            let (declared, codec) = crate::rowformat::resolve(rf, s.row_format_default())?;
            def.row_format = declared;
            def.codec = codec.name().to_string();
        }
        if self.cols.iter().any(|c| c.src.is_none() && c.col.auto_increment) {
            // A new AUTO_INCREMENT column numbers the rows from 1.
            def.auto_increment_start = 1;
        }
        // Every CHECK must still bind over the columns.
        crate::dml::bind_checks(s, &def)?;
        // Columns a foreign key uses keep their type (1832 / 1833); the
        // constraints of other tables follow a referenced column's rename.
        let children: Vec<(Arc<Table>, usize)> =
            crate::fk::children(s, &od.db, &od.name).into_iter().filter(|(c, _)| c.def.id != od.id).collect();
        for fk in &def.foreign_keys {
            if fk.on_delete != catalog::FkAction::SetNull && fk.on_update != catalog::FkAction::SetNull {
                continue;
            }
            for c in &fk.cols {
                if def.col_index(c).is_some_and(|i| !def.columns[i].nullable) {
                    return Err(SqlError::new(
                        1830,
                        "HY000",
                        format!("Column '{c}' cannot be NOT NULL: needed in a foreign key constraint '{}' SET NULL", fk.name),
                    ));
                }
            }
        }
        let mut child_defs: Vec<(Arc<Table>, TableDef)> = Vec::new();
        for c in &self.cols {
            let Some(j) = c.src else { continue };
            let was = &od.columns[j];
            if !crate::fk::compatible(&was.ty, &c.col.ty) {
                if let Some(fk) =
                    od.foreign_keys.iter().find(|f| f.cols.iter().any(|x| x.eq_ignore_ascii_case(&was.name)))
                {
                    return Err(SqlError::new(
                        1832,
                        "HY000",
                        format!(
                            "Cannot change column '{}': used in a foreign key constraint '{}'",
                            was.name, fk.name
                        ),
                    ));
                }
                for (ct, i) in &children {
                    let fk = &ct.def.foreign_keys[*i];
                    if fk.ref_cols.iter().any(|x| x.eq_ignore_ascii_case(&was.name)) {
                        return Err(SqlError::new(
                            1833,
                            "HY000",
                            format!(
                                "Cannot change column '{}': used in a foreign key constraint '{}' of table '{}.{}'",
                                was.name, fk.name, ct.def.db, ct.def.name
                            ),
                        ));
                    }
                }
            }
            if was.name != c.col.name {
                for (ct, i) in &children {
                    if !ct.def.foreign_keys[*i].ref_cols.iter().any(|x| x.eq_ignore_ascii_case(&was.name)) {
                        continue;
                    }
                    let at = match child_defs.iter().position(|(t, _)| t.def.id == ct.def.id) {
                        Some(p) => p,
                        None => {
                            child_defs.push((ct.clone(), ct.def.clone()));
                            child_defs.len() - 1
                        }
                    };
                    for x in &mut child_defs[at].1.foreign_keys[*i].ref_cols {
                        if x.eq_ignore_ascii_case(&was.name) {
                            *x = c.col.name.clone();
                        }
                    }
                }
            }
        }
        // Do the rows change? A column added, dropped, moved, retyped or
        // made NOT NULL, or a different primary key.
        let same_pk = match (od.primary, def.primary) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                let (x, y) = (&od.indexes[a], &def.indexes[b]);
                x.parts.len() == y.parts.len()
                    && x.parts.iter().zip(&y.parts).all(|(p, q)| {
                        self.cols[q.col].src == Some(p.col) && p.prefix == q.prefix && p.desc == q.desc
                    })
            }
            _ => false,
        };
        let retyped = self.cols.iter().any(|c| match c.src {
            Some(j) => c.col.ty != od.columns[j].ty || (!c.col.nullable && od.columns[j].nullable),
            None => false,
        });
        // A new codec (ROW_FORMAT=) recompresses: every dictionary is new.
        let mut rows_change = retyped
            || def.codec != od.codec
            || !same_pk
            || self.cols.len() != od.columns.len()
            || self.cols.iter().enumerate().any(|(i, c)| c.src != Some(i));
        // A copy the way InnoDB reports it (rows affected): a retype or a
        // primary key dropped without a new one.
        let mut copy = retyped || (od.primary.is_some() && def.primary.is_none());
        // Column changes made without touching rows (`instant.rs`), unless
        // ALGORITHM=COPY asks for a copy; ALGORITHM= and LOCK= refuse what
        // they do not allow.
        let src: Vec<Option<usize>> = self.cols.iter().map(|c| c.src).collect();
        let mut instant_def = def.clone();
        let mut rebuild =
            if rows_change { crate::instant::prepare(s, od, &mut instant_def, &src)? } else { None };
        if rows_change && rebuild.is_none() && (def.codec != od.codec || !same_pk) {
            rebuild = Some(crate::instant::Rebuild::Other);
        }
        let adds_index = def.indexes.iter().any(|i| i.dict.is_empty() && i.kind != IndexKind::Primary);
        self.clauses.allow(rebuild, adds_index)?;
        if self.clauses.force_copy() {
            rows_change = true;
            copy = true;
        } else if rows_change && rebuild.is_none() {
            def = instant_def;
            rows_change = false;
            copy = false;
        }
        // A CHECK added must hold for the rows there (4025).
        let check_rows = def.checks.iter().any(|c| !od.checks.contains(c));
        // RENAME TO in the same statement: the same transaction moves the
        // record (and the foreign keys that name the table follow).
        if let Some(to) = self.rename.take() {
            if to.0 != od.db || to.1 != od.name {
                check_ident(&to.1, Ident::Table)?;
                if !s.inner.schema.read().dbs.contains_key(&to.0) {
                    return Err(SqlError::unknown_db(&to.0));
                }
                if s.inner.table(&to.0, &to.1).is_ok() {
                    return Err(SqlError::table_exists(&to.1));
                }
                let follow = |fk: &mut catalog::ForeignKeyDef| {
                    if fk.ref_db == od.db && fk.ref_table.eq_ignore_ascii_case(&od.name) {
                        fk.ref_db = to.0.clone();
                        fk.ref_table = to.1.clone();
                    }
                };
                def.foreign_keys.iter_mut().for_each(follow);
                for (ct, i) in &children {
                    let at = match child_defs.iter().position(|(t, _)| t.def.id == ct.def.id) {
                        Some(p) => p,
                        None => {
                            child_defs.push((ct.clone(), ct.def.clone()));
                            child_defs.len() - 1
                        }
                    };
                    follow(&mut child_defs[at].1.foreign_keys[*i]);
                }
                def.db = to.0;
                def.name = to.1;
            }
        }
        let plan = Plan {
            src: self.cols.iter().map(|c| c.src).collect(),
            rows_change,
            copy,
            check_fks,
            check_rows,
            children: child_defs,
        };
        swap(s, &old, def, &plan)
    }
}

fn column_def(name: &ast::Ident, ty: &ast::DataType, options: &[ast::ColumnOption]) -> ast::ColumnDef {
    ast::ColumnDef {
        name: name.clone(),
        data_type: ty.clone(),
        options: options.iter().map(|o| ast::ColumnOptionDef { name: None, option: o.clone() }).collect(),
    }
}

fn convert_collation(ty: &mut SqlType, c: Collation) {
    match ty {
        SqlType::Str { coll, .. } if *coll != Collation::Binary => *coll = c,
        SqlType::Enum { coll, .. } | SqlType::Set { coll, .. } => *coll = c,
        _ => {}
    }
}

/// How the new definition is filled.
pub(crate) struct Plan {
    /// For each new column: the old column it is filled from.
    pub src: Vec<Option<usize>>,
    /// Every row is rewritten into new dictionaries.
    pub rows_change: bool,
    /// Rows affected and "Records: n" report the copied rows.
    pub copy: bool,
    /// Foreign keys added: every row must satisfy them (1452).
    pub check_fks: Vec<catalog::ForeignKeyDef>,
    /// A CHECK constraint was added: every row must satisfy the CHECKs (4025).
    pub check_rows: bool,
    /// Tables whose foreign keys follow this change (a referenced column
    /// renamed): their new records, written in the same transaction.
    pub children: Vec<(Arc<Table>, TableDef)>,
}

impl Plan {
    /// No row changes: columns stay where they are.
    pub fn metadata(ncols: usize) -> Plan {
        Plan {
            src: (0..ncols).map(Some).collect(),
            rows_change: false,
            copy: false,
            check_fks: Vec::new(),
            check_rows: false,
            children: Vec::new(),
        }
    }

    /// The same columns in new dictionaries (every one rebuilt).
    pub fn rebuild(ncols: usize) -> Plan {
        Plan { rows_change: true, ..Plan::metadata(ncols) }
    }
}

/// Swaps `def` in for `old`'s definition (see the module comment). `def`'s
/// indexes with an empty `dict` are new and built here; with
/// `plan.rows_change` every dictionary is new.
pub(crate) fn swap(s: &mut Session, old: &Arc<Table>, def: TableDef, plan: &Plan) -> SqlResult<Outcome> {
    if crate::online::eligible(&old.def, &def, plan) {
        // New indexes only: built while other sessions write (`online.rs`).
        return crate::online::add_indexes(s, old, def, plan);
    }
    // No transaction writes the table while it is replaced (`mdl.rs`):
    // a copy reads every committed row.
    let _x = s.mdl_exclusive(&old.def.db, &old.def.name)?;
    swap_locked(s, old, def, plan)
}

/// [`swap`] under the table's exclusive metadata lock.
pub(crate) fn swap_locked(
    s: &mut Session,
    old: &Arc<Table>,
    def: TableDef,
    plan: &Plan,
) -> SqlResult<Outcome> {
    swap_filled(s, old, def, plan, None)
}

/// How a rebuild's new dictionaries are filled instead of by copying the
/// old rows (LOAD DATA's bulk path, `bulkload.rs`): given the catalog
/// transaction and an encoder of the new definition (whose main and
/// index dictionaries are named, not yet created), it creates each of
/// them with the bulk loader, pushes their names to the list (dropped if
/// the statement fails) and returns the row count.
pub(crate) type Fill<'a> =
    Box<dyn FnOnce(&mut Session, &fractaldb::Txn, &Table, &mut Vec<String>) -> SqlResult<u64> + 'a>;

/// [`swap_locked`], the new dictionaries of a rebuild (`plan.rows_change`)
/// filled by `fill` when given, else by copying `old`'s rows. Everything
/// else is the copying ALTER's: dictionaries created before the catalog
/// transaction commits and dropped after it (or dropped when the
/// statement fails), the exact row count written by that transaction,
/// the snapshot floors set before the new table is in the schema.
pub(crate) fn swap_filled(
    s: &mut Session,
    old: &Arc<Table>,
    mut def: TableDef,
    plan: &Plan,
    fill: Option<Fill<'_>>,
) -> SqlResult<Outcome> {
    debug_assert!(fill.is_none() || plan.rows_change, "only a rebuild is filled");
    let od = &old.def;
    let mut created: Vec<String> = Vec::new();
    let res = (|| -> SqlResult<(Table, u64, Vec<Warning>)> {
        let base = format!("{}/{}", def.db, def.name);
        // Every dictionary made here takes the table's codec (a rebuild
        // for ROW_FORMAT= has the new one). Dictionaries whose rows are
        // built here (the new main with `rows_change`, new indexes) get
        // names now and are created by the bulk loader once their entries
        // are sorted (`bulk.rs`); the status dictionary is created empty.
        let opts = crate::rowformat::dict_options(&def);
        if plan.rows_change {
            def.schema_version = od.schema_version.wrapping_add(1);
            // Every row is rewritten at the new version (`instant.rs`),
            // without the key's columns (`Table::key_held`).
            def.layouts.clear();
            def.row_form = crate::table::ROW_KEYLESS;
            def.main_dict = s.inner.fresh_dict_name(&format!("{base}/main"));
            def.status_dict = s.inner.fresh_dict_name(&format!("{base}/status"));
            s.inner.env.create_dictionary(&def.status_dict, opts.clone())?;
            created.push(def.status_dict.clone());
        }
        let mut build: Vec<usize> = Vec::new();
        for (i, ix) in def.indexes.iter_mut().enumerate() {
            if ix.kind == IndexKind::Primary {
                ix.dict = def.main_dict.clone();
            } else if plan.rows_change || ix.dict.is_empty() {
                ix.new_dictionary(s.inner.fresh_dict_name(&format!("{base}/key-{}", ix.name)));
                build.push(i);
            }
        }
        let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
        let mut warnings = Vec::new();
        // The new definition's encodings (keys, rows), before its
        // dictionaries exist: nothing is written through it.
        let enc = encoder(&def, old);
        let n = if let Some(fill) = fill {
            fill(s, &txn, &enc, &mut created)?
        } else if plan.rows_change {
            copy_rows(s, &txn, old, &enc, plan, &mut warnings, &mut created)?
        } else if !build.is_empty() {
            build_indexes(s, &txn, &old.main, &enc, &build, &mut created)?;
            0
        } else {
            0
        };
        let newt = s.inner.open_table(def.clone())?;
        if plan.rows_change {
            // The exact count, in the new status dictionary's counter.
            newt.add_rows(&txn, n as i64)?;
        }
        for fk in &plan.check_fks {
            crate::fk::check_existing(s, &txn, &newt, fk)?;
        }
        if plan.check_rows {
            let checks = crate::dml::bind_checks(s, &newt.def)?;
            for kv in txn.range(&newt.main, None, None, false) {
                let (k, v) = kv?;
                crate::dml::check_row(s, &newt, &checks, &newt.decode_row(&k, &v)?)?;
            }
        }
        catalog::put_table(&txn, &s.inner.catalog, (&def.db, &def.name), &newt.def)?;
        if (def.db.as_str(), def.name.as_str()) != (od.db.as_str(), od.name.as_str()) {
            txn.delete(&s.inner.catalog, &catalog::table_key(&od.db, &od.name))?;
        }
        for (_, d) in &plan.children {
            catalog::put_table(&txn, &s.inner.catalog, (&d.db, &d.name), d)?;
        }
        txn.commit()?;
        Ok((newt, n, warnings))
    })();
    let (newt, n, warnings) = match res {
        Ok(r) => r,
        Err(e) => {
            for d in &created {
                let _ = s.inner.env.drop_dictionary(d);
            }
            return Err(e);
        }
    };
    // Snapshots older than the commit above must not read what it built
    // (`Table::index_floor`, `Table::rows_floor`); the floors are set
    // before the new table is in the schema, so no statement sees it
    // without them.
    let fresh_index = newt
        .def
        .indexes
        .iter()
        .any(|ix| ix.kind != IndexKind::Primary && !od.indexes.iter().any(|o| o.dict == ix.dict));
    let (mut index_floor, mut rows_floor) = (old.index_floor.load(SeqCst), old.rows_floor.load(SeqCst));
    if plan.rows_change || fresh_index {
        let mark = s.inner.env.begin(Isolation::ReadCommitted)?;
        let floor = mark.id();
        let _ = mark.abort();
        index_floor = index_floor.max(floor);
        if plan.rows_change {
            rows_floor = floor;
        }
    }
    newt.index_floor.store(index_floor, SeqCst);
    newt.rows_floor.store(rows_floor, SeqCst);
    // The AUTO_INCREMENT counter goes on from where it was (rows deleted
    // at the top do not bring it back, as in InnoDB), unless AUTO_INCREMENT=n
    // asked for another start or the column is another (then it is found
    // again from the rows).
    let same_auto = match (newt.def.auto_col(), od.auto_col()) {
        (Some(a), Some(b)) => plan.src.get(a) == Some(&Some(b)),
        _ => false,
    };
    if newt.def.auto_increment_start == od.auto_increment_start && same_auto {
        *newt.autoinc.lock() = *old.autoinc.lock();
    }
    let keep: HashSet<String> = crate::ddl::dict_names(&newt.def).into_iter().collect();
    let gone: Vec<String> = crate::ddl::dict_names(od).into_iter().filter(|d| !keep.contains(d)).collect();
    let newt = Arc::new(newt);
    {
        let mut sc = s.inner.schema.write();
        sc.tables.remove(&(od.db.clone(), od.name.clone()));
        sc.tables.insert((newt.def.db.clone(), newt.def.name.clone()), newt.clone());
        for (t, d) in &plan.children {
            sc.tables.insert((d.db.clone(), d.name.clone()), Arc::new(t.with_def(d.clone())));
        }
    }
    if !plan.rows_change && newt.def.schema_version != od.schema_version {
        // An instant column change: old rows are rewritten as the tree flushes.
        crate::instant::broadcast(&newt);
    }
    for d in gone {
        s.inner.env.drop_dictionary(&d)?;
    }
    let nwarn = warnings.len();
    s.warnings.extend(warnings);
    let records = if plan.copy { n } else { 0 };
    Ok(Outcome::Done {
        affected: records,
        last_insert_id: 0,
        info: Some(format!("Records: {records}  Duplicates: 0  Warnings: {nwarn}")),
    })
}

/// Checks `key` of unique index `i` against the keys written so far.
fn unique_seen(
    seen: &mut [HashSet<Vec<u8>>],
    i: usize,
    key: Vec<u8>,
    t: &Table,
    row: &[Value],
) -> SqlResult<()> {
    if !seen[i].insert(key) {
        let ix = &t.def.indexes[i];
        return Err(SqlError::dup_entry(&t.dup_entry_text(i, row), &ix.name));
    }
    Ok(())
}

/// A table of definition `def` for its encodings only (row, primary and
/// index keys; the next hidden row id from 1): its dictionary handles are
/// `old`'s and are never written through it.
fn encoder(def: &TableDef, old: &Table) -> Table {
    Table {
        def: def.clone(),
        main: old.main.clone(),
        sec: vec![None; def.indexes.len()],
        status: old.status.clone(),
        autoinc: parking_lot::Mutex::new(None),
        next_row_id: std::sync::atomic::AtomicU64::new(1),
        settling: parking_lot::Mutex::new(()),
        building: Default::default(),
        index_floor: std::sync::atomic::AtomicU64::new(0),
        rows_floor: std::sync::atomic::AtomicU64::new(0),
    }
}

/// Builds new indexes `build` of `t` (an encoder of the new definition)
/// from the rows of `main`: each index's entries are sorted and loaded
/// into its new dictionary (`bulk.rs`), whose name goes to `created`.
fn build_indexes(
    s: &Session,
    txn: &fractaldb::Txn,
    main: &fractaldb::Dictionary,
    t: &Table,
    build: &[usize],
    created: &mut Vec<String>,
) -> SqlResult<()> {
    let cfg = crate::bulk::cfg(s, build.len());
    let mut sorters: Vec<PairSorter> = build.iter().map(|_| PairSorter::new(cfg.clone())).collect();
    let mut seen: Vec<HashSet<Vec<u8>>> = t.def.indexes.iter().map(|_| HashSet::new()).collect();
    for kv in txn.range(main, None, None, false) {
        let (pk, v) = kv?;
        let row = t.decode_row(&pk, &v)?;
        for (b, &i) in sorters.iter_mut().zip(build) {
            let (k, val) = t.sec_entry(i, &row, &pk)?;
            if t.def.indexes[i].kind == IndexKind::Unique {
                let (key, null) = t.index_key(&t.def.indexes[i], &row)?;
                if !null {
                    unique_seen(&mut seen, i, key, t, &row)?;
                }
            }
            b.add(k, val)?;
        }
        s.check_killed()?;
    }
    load_all(s, t, build, sorters, created)
}

/// Loads each sorter into the new dictionary of index `which[j]`.
fn load_all(
    s: &Session,
    t: &Table,
    which: &[usize],
    sorters: Vec<PairSorter>,
    created: &mut Vec<String>,
) -> SqlResult<()> {
    for (sorter, &i) in sorters.into_iter().zip(which) {
        let name = &t.def.indexes[i].dict;
        crate::bulk::load(s, name, crate::rowformat::dict_options(&t.def), sorter)?;
        created.push(name.clone());
    }
    Ok(())
}

/// Converts every row of `old` to `newt` (an encoder of the new
/// definition) and loads the new main dictionary and every secondary
/// index from the sorted entries (`bulk.rs`), their names going to
/// `created`. Returns the number of rows.
fn copy_rows(
    s: &Session,
    txn: &fractaldb::Txn,
    old: &Table,
    newt: &Table,
    plan: &Plan,
    warnings: &mut Vec<Warning>,
    created: &mut Vec<String>,
) -> SqlResult<u64> {
    let strict = s.strict;
    let now = crate::dml::now_value(s);
    let nd = &newt.def;
    let od = &old.def;
    let secs: Vec<usize> = nd.secondary().map(|(i, _)| i).collect();
    let cfg = crate::bulk::cfg(s, 1 + secs.len());
    let mut main = PairSorter::new(cfg.clone());
    let mut batches: Vec<PairSorter> = secs.iter().map(|_| PairSorter::new(cfg.clone())).collect();
    let mut seen: Vec<HashSet<Vec<u8>>> = nd.indexes.iter().map(|_| HashSet::new()).collect();
    let mut next_auto = 1u64;
    let mut n = 0u64;
    let total = old.row_estimate(txn)?;
    for kv in txn.range(&old.main, None, None, false) {
        let (k, v) = kv?;
        let orow = old.decode_row(&k, &v)?;
        n += 1;
        crate::progress::alter(crate::progress::Stage::AlterCopy, n, total);
        let rownum = n as usize;
        let mut row = Vec::with_capacity(nd.columns.len());
        for (col, src) in nd.columns.iter().zip(&plan.src) {
            let val = match src {
                Some(j) => {
                    let v = orow[*j].clone();
                    let same = od.columns[*j].ty == col.ty;
                    let v = if same {
                        v
                    } else {
                        let mut cx = StoreCtx { strict, row: rownum, warnings: &mut *warnings };
                        coerce::store(v, col, &mut cx)
                            .map_err(|e| alter_error(e, col, rownum, od, &od.columns[*j].name))?
                    };
                    if v.is_null() && !col.nullable {
                        let e = SqlError::data_truncated(&col.name, rownum);
                        if strict {
                            return Err(e);
                        }
                        warnings.push(Warning::from_error(&e));
                        coerce::implicit_default(&col.ty)
                    } else {
                        v
                    }
                }
                None if col.auto_increment => {
                    let v = Value::UInt(next_auto);
                    next_auto += 1;
                    let mut cx = StoreCtx { strict, row: rownum, warnings: &mut *warnings };
                    coerce::store(v, col, &mut cx)?
                }
                None => match coerce::default_value(col, Some(now.clone()))? {
                    Some(v) if !v.is_null() || col.nullable => v,
                    _ => coerce::implicit_default(&col.ty),
                },
            };
            row.push(val);
        }
        let hidden = if nd.primary.is_none() { Some(newt.next_row_id()) } else { None };
        let pk = newt.pk(&row, hidden)?;
        for (i, ix) in nd.indexes.iter().enumerate() {
            if ix.kind == IndexKind::Plain {
                continue;
            }
            let (key, null) = newt.index_key(ix, &row)?;
            if !null || ix.kind == IndexKind::Primary {
                unique_seen(&mut seen, i, key, newt, &row)?;
            }
        }
        for (b, &i) in batches.iter_mut().zip(&secs) {
            let (k, val) = newt.sec_entry(i, &row, &pk)?;
            b.add(k, val)?;
        }
        main.add(pk, newt.encode_row(&row)?)?;
        s.check_killed()?;
    }
    crate::bulk::load(s, &nd.main_dict, crate::rowformat::dict_options(nd), main)?;
    created.push(nd.main_dict.clone());
    load_all(s, newt, &secs, batches, created)?;
    // As MariaDB words them for ALTER (see `alter_error`).
    for w in warnings.iter_mut() {
        if w.code == 1406 {
            if let Some(col) = w.message.split('\'').nth(1) {
                let row = w.message.rsplit(' ').next().and_then(|r| r.parse().ok()).unwrap_or(0);
                *w = Warning::from_error(&SqlError::data_truncated(col, row));
            }
        } else if w.code == 1366 {
            // "Incorrect integer value: 'x' for column `c` at row n"
            let col = w.message.split('`').nth(1).and_then(|c| nd.col_index(c));
            let kind = col.and_then(|c| number_kind(&nd.columns[c].ty));
            if let (Some(kind), Some(v)) = (kind, w.message.split('\'').nth(1)) {
                *w = Warning::from_error(&SqlError::truncated_wrong_value(kind, v));
            }
        }
    }
    Ok(n)
}

/// MariaDB reports a string that is no number, met while ALTER converts a
/// column, as 1292 "Truncated incorrect INTEGER value" (INSERT says 1366),
/// and a string too long for the new column as 1265 (INSERT says 1406).
fn alter_error(e: SqlError, col: &Column, row: usize, table: &TableDef, src: &str) -> SqlError {
    if e.code == 1406 {
        return SqlError::data_truncated(&col.name, row);
    }
    // A date that is none: MariaDB's ALTER names it a datetime, and the
    // column (by its old name) with its database and table.
    if e.code == 1292
        && matches!(col.ty, SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. })
    {
        if let Some(v) = e.message.split('\'').nth(1) {
            return SqlError::new(
                1292,
                "22007",
                format!(
                    "Incorrect datetime value: '{v}' for column `{}`.`{}`.`{src}` at row {row}",
                    table.db, table.name
                ),
            );
        }
    }
    if e.code == 1366 {
        if let (Some(kind), Some(v)) = (number_kind(&col.ty), e.message.split('\'').nth(1)) {
            return SqlError::truncated_wrong_value(kind, v);
        }
    }
    e
}

/// The word MariaDB's 1292 uses for a column's number type.
fn number_kind(ty: &SqlType) -> Option<&'static str> {
    match ty {
        SqlType::Int { .. } => Some("INTEGER"),
        SqlType::Decimal { .. } => Some("DECIMAL"),
        SqlType::Float { .. } | SqlType::Double { .. } => Some("DOUBLE"),
        _ => None,
    }
}
