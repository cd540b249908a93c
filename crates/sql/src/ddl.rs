//! CREATE/DROP DATABASE, CREATE/DROP/TRUNCATE TABLE.
//!
//! Every change is one engine transaction on the catalog dictionary; new
//! dictionaries are created before it commits and old ones dropped after
//! (see `catalog.rs` for why a crash between is harmless).

use std::sync::Arc;

use fractaldb::Isolation;
use sqlparser::ast;

use crate::catalog::{
    self, check_ident, CheckDef, Column, DbDef, DefaultSpec, Ident, IndexDef, IndexKind, IndexPart, TableDef,
};
use crate::error::{SqlError, SqlResult};
use crate::expr::ident_name;
use crate::session::{Outcome, Session};
use crate::types::{Charset, Collation, SqlType, StrKind};
use crate::value::Value;

pub fn execute(s: &mut Session, stmt: &ast::Statement, flags: &crate::lex::Flags) -> SqlResult<Outcome> {
    use ast::Statement as S;
    let inner = s.inner.clone();
    let _g = inner.ddl.lock();
    match stmt {
        S::CreateDatabase { db_name, if_not_exists, default_charset, default_collation, .. } => {
            let name = ident_name(db_name).join(".");
            check_ident(&name, Ident::Db)?;
            if s.inner.schema.read().dbs.contains_key(&name) {
                if *if_not_exists {
                    s.warnings.push(crate::error::Warning::note(1007, SqlError::db_exists(&name).message));
                    return Ok(Outcome::done(0));
                }
                return Err(SqlError::db_exists(&name));
            }
            let coll = pick_collation(
                default_charset.as_deref(),
                default_collation.as_deref(),
                Collation::Utf8mb4GeneralCi,
            )?;
            let def = DbDef { name: name.clone(), collation: coll };
            let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
            txn.put(
                &s.inner.catalog,
                &catalog::db_key(&name),
                &serde_json::to_vec(&def).expect("serialisable"),
            )?;
            txn.commit()?;
            s.inner.schema.write().dbs.insert(name, def);
            Ok(Outcome::done(1))
        }
        S::CreateSchema { schema_name, if_not_exists, .. } => {
            let name = schema_name.to_string().trim_matches('`').to_string();
            let stmt = format!(
                "CREATE DATABASE {}`{}`",
                if *if_not_exists { "IF NOT EXISTS " } else { "" },
                name.replace('`', "``")
            );
            drop(_g);
            s.execute(stmt.as_bytes())
        }
        S::Drop { object_type, if_exists, names, table, .. } => match object_type {
            ast::ObjectType::Schema | ast::ObjectType::Database => {
                let name = ident_name(&names[0]).join(".");
                drop_database(s, &name, *if_exists)
            }
            ast::ObjectType::Table => {
                // A table other tables reference through a foreign key
                // cannot go (unless they go too, or checks are off).
                if crate::fk::checks_on(s) {
                    let mut dropping = Vec::new();
                    for n in names {
                        dropping.push(qualify(s, n)?);
                    }
                    for (db, t) in &dropping {
                        for (child, _) in crate::fk::children(s, db, t) {
                            let c = (child.def.db.clone(), child.def.name.clone());
                            if !dropping.iter().any(|d| d.0 == c.0 && d.1.eq_ignore_ascii_case(&c.1)) {
                                return Err(crate::fk::drop_parent_error());
                            }
                        }
                    }
                }
                let mut missing = Vec::new();
                for n in names {
                    let (db, t) = qualify(s, n)?;
                    match s.inner.table(&db, &t) {
                        Ok(_) => drop_table(s, &db, &t)?,
                        Err(_) => missing.push(format!("{db}.{t}")),
                    }
                }
                if !missing.is_empty() {
                    if *if_exists {
                        // One note naming them all, as MariaDB writes it.
                        s.warnings.push(crate::error::Warning::note(
                            1051,
                            format!("Unknown table '{}'", missing.join(",")),
                        ));
                    } else {
                        return Err(SqlError::new(
                            1051,
                            "42S02",
                            format!("Unknown table '{}'", missing.join(",")),
                        ));
                    }
                }
                Ok(Outcome::done(0))
            }
            ast::ObjectType::View => Err(SqlError::unsupported("views")),
            ast::ObjectType::Index => {
                let on = table.as_ref().ok_or_else(|| SqlError::syntax("''"))?;
                let (db, t) = qualify(s, on)?;
                drop_index(s, &db, &t, &ident_name(&names[0]).join("."))
            }
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        },
        S::CreateTable(ct) => create_table(s, ct, &flags.clustering_indexes),
        S::CreateIndex(ci) => {
            let (db, name) = qualify(s, &ci.table_name)?;
            let t = s.inner.table(&db, &name)?;
            let parts = index_parts(&ci.columns, &t.def.columns)?;
            let ix_name = ci.name.as_ref().map(|n| ident_name(n).join("."));
            let kind = if ci.unique { IndexKind::Unique } else { IndexKind::Plain };
            let mut d = index_def(ix_name, kind, parts, &t.def.columns);
            d.clustering = flags.clustering_indexes.iter().any(|c| c.eq_ignore_ascii_case(&d.name));
            drop(t);
            add_index(s, &db, &name, d)
        }
        S::AlterTable(at) => crate::alter::alter_table(s, at, flags),
        S::RenameTable(list) => {
            for r in list {
                let from = qualify(s, &r.old_name)?;
                let to = qualify(s, &r.new_name)?;
                rename_table(s, from, to)?;
            }
            Ok(Outcome::done(0))
        }
        S::Truncate(tr) => {
            for t in &tr.table_names {
                let (db, name) = qualify(s, &t.name)?;
                truncate(s, &db, &name)?;
            }
            Ok(Outcome::done(0))
        }
        _ => Err(SqlError::unsupported(
            stmt.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" "),
        )),
    }
}

pub(crate) fn pick_collation(
    cs: Option<&str>,
    coll: Option<&str>,
    default: Collation,
) -> SqlResult<Collation> {
    if let Some(c) = coll {
        return Collation::by_name(c)
            .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{c}'")));
    }
    if let Some(c) = cs {
        return Charset::by_name(c)
            .map(|c| c.default_collation())
            .ok_or_else(|| SqlError::new(1115, "42000", format!("Unknown character set: '{c}'")));
    }
    Ok(default)
}

pub fn qualify(s: &Session, n: &ast::ObjectName) -> SqlResult<(String, String)> {
    let parts = ident_name(n);
    match parts.as_slice() {
        [t] => Ok((s.db.clone().ok_or_else(SqlError::no_db)?, t.clone())),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::syntax(format!("'{n}'"))),
    }
}

fn drop_database(s: &mut Session, name: &str, if_exists: bool) -> SqlResult<Outcome> {
    if !s.inner.schema.read().dbs.contains_key(name) {
        if if_exists {
            s.warnings.push(crate::error::Warning::note(1008, SqlError::db_drop_missing(name).message));
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::db_drop_missing(name));
    }
    let tables: Vec<String> =
        s.inner.schema.read().tables.keys().filter(|(d, _)| d == name).map(|(_, t)| t.clone()).collect();
    // A table another database's tables reference cannot go (1451).
    if crate::fk::checks_on(s) {
        for t in &tables {
            if crate::fk::children(s, name, t).iter().any(|(c, _)| c.def.db != name) {
                return Err(crate::fk::drop_parent_error());
            }
        }
    }
    let n = tables.len();
    for t in tables {
        drop_table(s, name, &t)?;
    }
    // The database's views go with its record, in one transaction: a view
    // record left behind would answer 1050 to the same CREATE VIEW in a
    // database of the same name made later.
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    let views = crate::views::list(s, &txn, name)?;
    for v in &views {
        txn.delete(&s.inner.catalog, &crate::views::key(&v.db, &v.name))?;
    }
    txn.delete(&s.inner.catalog, &catalog::db_key(name))?;
    txn.commit()?;
    s.inner.schema.write().dbs.remove(name);
    if s.db.as_deref() == Some(name) {
        s.touch();
        s.db = None;
    }
    // MariaDB counts the views it dropped among the rows affected.
    Ok(Outcome::done((n + views.len()) as u64))
}

fn drop_table(s: &mut Session, db: &str, name: &str) -> SqlResult<()> {
    // No transaction writes the table while it goes (`mdl.rs`).
    let _x = s.mdl_exclusive(db, name)?;
    let t = s.inner.table(db, name)?;
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    txn.delete(&s.inner.catalog, &catalog::table_key(db, name))?;
    txn.commit()?;
    s.inner.schema.write().tables.remove(&(db.to_string(), name.to_string()));
    let dicts = dict_names(&t.def);
    drop(t);
    for d in dicts {
        s.inner.env.drop_dictionary(&d)?;
    }
    Ok(())
}

/// Commits `def` as its table's catalog record (one engine transaction)
/// and puts the table, opened with it, in the schema.
pub(crate) fn replace_def(s: &Session, def: TableDef) -> SqlResult<()> {
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    catalog::put_table(&txn, &s.inner.catalog, (&def.db, &def.name), &def)?;
    txn.commit()?;
    let key = (def.db.clone(), def.name.clone());
    let opened = s.inner.open_table(def)?;
    s.inner.schema.write().tables.insert(key, Arc::new(opened));
    Ok(())
}

pub(crate) fn dict_names(def: &TableDef) -> Vec<String> {
    let mut v = vec![def.main_dict.clone(), def.status_dict.clone()];
    v.extend(def.indexes.iter().filter(|i| i.kind != IndexKind::Primary).map(|i| i.dict.clone()));
    v
}

/// TRUNCATE: new empty dictionaries swapped in by one catalog change, in
/// constant time; the old ones are dropped after.
fn truncate(s: &mut Session, db: &str, name: &str) -> SqlResult<()> {
    let _x = s.mdl_exclusive(db, name)?;
    let t = crate::seqengine::writable(s.inner.table(db, name), db, name)?;
    if crate::fk::checks_on(s) {
        if let Some((child, i)) = crate::fk::children(s, db, name)
            .into_iter()
            .find(|(c, _)| !(c.def.db == db && c.def.name == name))
        {
            return Err(SqlError::new(
                1701,
                "42000",
                format!(
                    "Cannot truncate a table referenced in a foreign key constraint (`{}`.`{}`, {})",
                    child.def.db,
                    child.def.name,
                    crate::fk::text("", &child.def.foreign_keys[i])
                ),
            ));
        }
    }
    let mut def = t.def.clone();
    create_dicts(s, &mut def)?;
    replace_def(s, def)?;
    let old = dict_names(&t.def);
    drop(t);
    for d in old {
        s.inner.env.drop_dictionary(&d)?;
    }
    Ok(())
}

/// Gives `def` fresh dictionaries (named `<db>/<table>/main` etc., with a
/// suffix where the name is taken) and creates them.
pub(crate) fn create_dicts(s: &Session, def: &mut TableDef) -> SqlResult<()> {
    let base = format!("{}/{}", def.db, def.name);
    def.main_dict = s.inner.fresh_dict_name(&format!("{base}/main"));
    // New dictionaries hold no row of an older version (`instant.rs`),
    // and rows without the key's columns (`Table::key_held`).
    def.layouts.clear();
    def.row_form = crate::table::ROW_KEYLESS;
    // Every dictionary of the table takes its codec (ROW_FORMAT).
    let opts = crate::rowformat::dict_options(def);
    s.inner.env.create_dictionary(&def.main_dict, opts.clone())?;
    def.status_dict = s.inner.fresh_dict_name(&format!("{base}/status"));
    s.inner.env.create_dictionary(&def.status_dict, opts.clone())?;
    for ix in def.indexes.iter_mut() {
        if ix.kind == IndexKind::Primary {
            ix.dict = def.main_dict.clone();
        } else {
            ix.new_dictionary(s.inner.fresh_dict_name(&format!("{base}/key-{}", ix.name)));
            s.inner.env.create_dictionary(&ix.dict, opts.clone())?;
        }
    }
    Ok(())
}

/// CREATE TABLE; `clustering` names TokuDB's CLUSTERING keys (lex.rs took
/// the word out of the statement).
fn create_table(s: &mut Session, ct: &ast::CreateTable, clustering: &[String]) -> SqlResult<Outcome> {
    let (db, name) = qualify(s, &ct.name)?;
    check_ident(&name, Ident::Table)?;
    if !s.inner.schema.read().dbs.contains_key(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    if s.inner.table(&db, &name).is_ok() {
        if ct.if_not_exists {
            s.warnings.push(crate::error::Warning::note(1050, SqlError::table_exists(&name).message));
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::table_exists(&name));
    }
    if ct.temporary {
        return Err(SqlError::unsupported("temporary tables"));
    }
    if let Some(like) = &ct.like {
        let (ast::CreateTableLikeKind::Parenthesized(l) | ast::CreateTableLikeKind::Plain(l)) = like;
        let from = qualify(s, &l.name)?;
        return crate::create_from::create_like(s, from, (db, name));
    }
    // CREATE TABLE ... SELECT: the query runs first; its columns follow
    // the declared ones.
    let selected = match &ct.query {
        Some(q) => Some(crate::create_from::run_query(s, q)?),
        None => None,
    };
    if ct.columns.is_empty() && selected.is_none() {
        return Err(SqlError::table_needs_column());
    }
    let topts = table_options(&ct.table_options)?;
    if let Some(e) = &topts.engine {
        engine_named(s, e, &name, EngineIn::Create)?;
    }
    // ROW_FORMAT, else the session's tokudb_row_format, picks the codec.
    let (row_format, codec) =
        crate::rowformat::resolve(topts.row_format.as_deref().unwrap_or("DEFAULT"), s.row_format_default())?;
    let table_coll = match (&topts.charset, &topts.collate) {
        (None, None) => s.inner.db_collation(&db),
        (cs, co) => pick_collation(cs.as_deref(), co.as_deref(), Collation::Utf8mb4GeneralCi)?,
    };
    let mut columns: Vec<Column> = Vec::new();
    let mut indexes: Vec<IndexDef> = Vec::new();
    let mut pk: Option<Vec<IndexPart>> = None;
    let mut checks: Vec<CheckDef> = Vec::new();
    let mut fks: Vec<crate::fk::Declared> = Vec::new();
    for cd in &ct.columns {
        let b = build_column(s, cd, table_coll, &columns)?;
        if b.primary {
            if pk.is_some() {
                return Err(SqlError::multiple_primary_keys());
            }
            pk = Some(vec![IndexPart { col: columns.len(), prefix: None, desc: false }]);
        }
        if b.unique {
            indexes.push(IndexDef {
                name: b.col.name.clone(),
                kind: IndexKind::Unique,
                clustering: false,
                parts: vec![IndexPart { col: columns.len(), prefix: None, desc: false }],
                dict: String::new(),
                comment: String::new(),
                disabled: false,
                carry: false,
                carry_form: 0,
            });
        }
        checks.extend(b.checks);
        for fk in &b.fks {
            fks.push(crate::fk::declared(&db, fk, Some(&b.col.name))?);
        }
        columns.push(b.col);
    }
    // Where each selected column goes.
    let mut targets: Vec<usize> = Vec::new();
    if let Some(rs) = &selected {
        let declared = columns.len();
        for meta in &rs.columns {
            match columns.iter().position(|c| c.name.eq_ignore_ascii_case(&meta.name)) {
                Some(i) if i < declared => targets.push(i),
                Some(_) => return Err(SqlError::dup_column(&meta.name)),
                None => {
                    targets.push(columns.len());
                    let mut c = crate::create_from::column_from_meta(s, meta)?;
                    if meta.org_name.is_empty() {
                        crate::create_from::widen(&mut c, &rs.rows, targets.len() - 1);
                    }
                    columns.push(c);
                }
            }
        }
    }
    let parts_of = index_parts;
    for c in &ct.constraints {
        match c {
            ast::TableConstraint::PrimaryKey(p) => {
                if pk.is_some() {
                    return Err(SqlError::multiple_primary_keys());
                }
                let parts = parts_of(&p.columns, &columns)?;
                for part in &parts {
                    columns[part.col].nullable = false;
                    if columns[part.col].default == DefaultSpec::Null {
                        columns[part.col].default = DefaultSpec::None;
                    }
                }
                pk = Some(parts);
            }
            ast::TableConstraint::Unique(u) => {
                let parts = parts_of(&u.columns, &columns)?;
                let name = u
                    .name
                    .as_ref()
                    .or(u.index_name.as_ref())
                    .map(|i| i.value.clone())
                    .unwrap_or_else(|| columns[parts[0].col].name.clone());
                indexes.push(IndexDef {
                    name,
                    kind: IndexKind::Unique,
                    clustering: false,
                    parts,
                    dict: String::new(),
                    comment: crate::alter::index_comment(&u.index_options),
                    disabled: false,
                    carry: false,
                    carry_form: 0,
                });
            }
            ast::TableConstraint::Index(ix) => {
                let parts = parts_of(&ix.columns, &columns)?;
                let name = ix
                    .name
                    .as_ref()
                    .map(|i| i.value.clone())
                    .unwrap_or_else(|| columns[parts[0].col].name.clone());
                indexes.push(IndexDef {
                    name,
                    kind: IndexKind::Plain,
                    clustering: false,
                    parts,
                    dict: String::new(),
                    comment: crate::alter::index_comment(&ix.index_options),
                    disabled: false,
                    carry: false,
                    carry_form: 0,
                });
            }
            ast::TableConstraint::Check(c) => {
                let name = c
                    .name
                    .as_ref()
                    .map(|n| n.value.clone())
                    .unwrap_or_else(|| format!("CONSTRAINT_{}", checks.len() + 1));
                checks.push(CheckDef { name, expr: c.expr.to_string() });
            }
            ast::TableConstraint::ForeignKey(fk) => fks.push(crate::fk::declared(&db, fk, None)?),
            _ => return Err(SqlError::unsupported("this table constraint")),
        }
    }
    // Unnamed indexes named after their first column get _2, _3 ... on a clash.
    let mut seen: Vec<String> = Vec::new();
    for ix in indexes.iter_mut() {
        let base = ix.name.clone();
        let mut n = 2;
        while seen.iter().any(|s| s.eq_ignore_ascii_case(&ix.name)) {
            ix.name = format!("{base}_{n}");
            n += 1;
        }
        if ix.name.eq_ignore_ascii_case("PRIMARY") {
            return Err(SqlError::new(1280, "42000", format!("Incorrect index name '{}'", ix.name)));
        }
        seen.push(ix.name.clone());
    }
    for ix in &indexes {
        for p in &ix.parts {
            if columns[p.col].ty.is_lob() && p.prefix.is_none() {
                return Err(SqlError::blob_key_without_length(&columns[p.col].name));
            }
        }
    }
    for ix in indexes.iter_mut() {
        ix.clustering = clustering.iter().any(|c| c.eq_ignore_ascii_case(&ix.name));
    }
    let mut all = Vec::new();
    let primary = pk.map(|parts| {
        all.push(IndexDef {
            name: "PRIMARY".into(),
            kind: IndexKind::Primary,
            clustering: true,
            parts,
            dict: String::new(),
            comment: String::new(),
            disabled: false,
            carry: false,
            carry_form: 0,
        });
        0
    });
    if let Some(p) = primary {
        for part in &all[p].parts {
            if columns[part.col].ty.is_lob() && part.prefix.is_none() {
                return Err(SqlError::blob_key_without_length(&columns[part.col].name));
            }
        }
    }
    all.extend(indexes);
    let autos = columns.iter().filter(|c| c.auto_increment).count();
    if autos > 1 {
        return Err(SqlError::bad_auto_increment());
    }
    if let Some(a) = columns.iter().position(|c| c.auto_increment) {
        if !all.iter().any(|ix| ix.parts.first().is_some_and(|p| p.col == a)) {
            return Err(SqlError::bad_auto_increment());
        }
        columns[a].default = DefaultSpec::Null;
    }
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    let id = s.inner.next_table_id(&txn)?;
    let mut def = TableDef {
        id,
        db: db.clone(),
        name: name.clone(),
        columns,
        primary,
        indexes: all,
        main_dict: String::new(),
        status_dict: String::new(),
        collation: table_coll,
        comment: topts.comment.clone().unwrap_or_default(),
        auto_increment_start: topts.auto_increment.unwrap_or(1).max(1),
        schema_version: 1,
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        checks,
        foreign_keys: Vec::new(),
        row_format,
        codec: codec.name().to_string(),
        node_bytes: s.block_size_var("tokudb_block_size"),
        basement_bytes: s.block_size_var("tokudb_read_block_size"),
        fanout: s.block_size_var("tokudb_fanout"),
        layouts: Vec::new(),
        row_form: 0,
    };
    for d in fks {
        crate::fk::add(s, &mut def, d)?;
    }
    // Every CHECK must bind over the table's columns now, not at the first insert.
    crate::dml::bind_checks(s, &def)?;
    create_dicts(s, &mut def)?;
    let made = dict_names(&def);
    // The rows of CREATE TABLE ... SELECT go in with the catalog record, in
    // one transaction: after a crash the table is there with its rows or
    // not at all.
    let res = (|| -> SqlResult<(crate::table::Table, Outcome)> {
        let t = Arc::new(s.inner.open_table(def.clone())?);
        let out = match selected {
            Some(rs) => crate::create_from::fill(s, &txn, &t, &targets, rs)?,
            None => Outcome::done(0),
        };
        catalog::put_table(&txn, &s.inner.catalog, (&db, &name), &def)?;
        txn.commit()?;
        let t = Arc::try_unwrap(t).map_err(|_| SqlError::internal("the new table is still shared"))?;
        Ok((t, out))
    })();
    match res {
        Ok((t, out)) => {
            s.inner.schema.write().tables.insert((db, name), Arc::new(t));
            Ok(out)
        }
        Err(e) => {
            for d in made {
                let _ = s.inner.env.drop_dictionary(&d);
            }
            Err(e)
        }
    }
}

/// A column as a column definition declares it, with what it declares
/// beside: an inline PRIMARY KEY or UNIQUE, CHECK constraints.
pub(crate) struct BuiltColumn {
    pub col: Column,
    pub primary: bool,
    pub unique: bool,
    pub checks: Vec<CheckDef>,
    /// `REFERENCES ...` of the column.
    pub fks: Vec<ast::ForeignKeyConstraint>,
}

/// Builds column `cd` of a table whose other columns are `columns` (the
/// first TIMESTAMP NOT NULL without a default gets CURRENT_TIMESTAMP, as
/// in MariaDB).
pub(crate) fn build_column(
    s: &mut Session,
    cd: &ast::ColumnDef,
    table_coll: Collation,
    columns: &[Column],
) -> SqlResult<BuiltColumn> {
    let cname = cd.name.value.clone();
    check_ident(&cname, Ident::Column)?;
    if columns.iter().any(|c| c.name.eq_ignore_ascii_case(&cname)) {
        return Err(SqlError::dup_column(&cname));
    }
    let mut coll_name = None;
    let mut cs_name = None;
    for o in &cd.options {
        match &o.option {
            ast::ColumnOption::Collation(c) => coll_name = Some(ident_name(c).join(".")),
            ast::ColumnOption::CharacterSet(c) => cs_name = Some(ident_name(c).join(".")),
            _ => {}
        }
    }
    let coll = pick_collation(cs_name.as_deref(), coll_name.as_deref(), table_coll)?;
    let ty = map_type(&cd.data_type, coll, &cname)?;
    ty.validate(&cname)?;
    let mut b = BuiltColumn {
        col: Column {
            name: cname.clone(),
            ty,
            nullable: true,
            default: DefaultSpec::Null,
            auto_increment: false,
            on_update_now: false,
            comment: String::new(),
        },
        primary: false,
        unique: false,
        checks: Vec::new(),
        fks: Vec::new(),
    };
    let col = &mut b.col;
    let mut explicit_null = false;
    for o in &cd.options {
        match &o.option {
            ast::ColumnOption::Null => explicit_null = true,
            ast::ColumnOption::NotNull => col.nullable = false,
            ast::ColumnOption::Default(e) => col.default = default_spec(s, e, &cname)?,
            ast::ColumnOption::Comment(c) => col.comment = c.clone(),
            ast::ColumnOption::OnUpdate(_) => col.on_update_now = true,
            ast::ColumnOption::PrimaryKey(_) => {
                if b.primary {
                    return Err(SqlError::multiple_primary_keys());
                }
                b.primary = true;
                col.nullable = false;
            }
            ast::ColumnOption::Unique(_) => b.unique = true,
            ast::ColumnOption::DialectSpecific(toks) => {
                let t: String =
                    toks.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" ").to_ascii_uppercase();
                if t.contains("AUTO_INCREMENT") {
                    col.auto_increment = true;
                }
            }
            ast::ColumnOption::Check(c) => {
                b.checks.push(CheckDef { name: cname.clone(), expr: c.expr.to_string() });
            }
            // MariaDB 10.5+ honours a column's REFERENCES.
            ast::ColumnOption::ForeignKey(fk) => b.fks.push(fk.clone()),
            _ => {}
        }
    }
    if explicit_null && !col.nullable {
        return Err(SqlError::syntax("'NULL'"));
    }
    if !col.nullable && col.default == DefaultSpec::Null {
        col.default = DefaultSpec::None;
    }
    if matches!(col.ty, SqlType::Timestamp { .. }) && col.default == DefaultSpec::Null && !explicit_null {
        col.nullable = explicit_null;
        if !col.nullable && columns.iter().all(|c| !matches!(c.ty, SqlType::Timestamp { .. })) {
            col.default = DefaultSpec::CurrentTimestamp;
            col.on_update_now = true;
        } else if !col.nullable {
            col.default = DefaultSpec::None;
        }
    }
    // A constant default must fit the column (MariaDB checks it here).
    if let DefaultSpec::Literal(_) = &col.default {
        if crate::coerce::timestamp_default_as_utc(col).is_err()
            || crate::coerce::default_value(col, None).is_err()
        {
            return Err(SqlError::invalid_default(&cname));
        }
    }
    if col.auto_increment {
        // MariaDB makes an AUTO_INCREMENT column NOT NULL.
        col.nullable = false;
        col.default = DefaultSpec::Null;
    }
    Ok(b)
}

/// The table options of CREATE TABLE that change the table: the others
/// (ENGINE, KEY_BLOCK_SIZE, ...) are accepted and ignored.
#[derive(Default)]
pub(crate) struct TableOptions {
    pub comment: Option<String>,
    /// ROW_FORMAT's word as written (`rowformat::resolve` reads it).
    pub row_format: Option<String>,
    pub auto_increment: Option<u64>,
    pub charset: Option<String>,
    pub collate: Option<String>,
    /// ENGINE= as written ([`engine_named`] judges it).
    pub engine: Option<String>,
}

/// The storage engines a MariaDB or MySQL server may name in a table's
/// definition (lower case). Every table here is a FractalDB table, so a
/// dump from another server names one of these: the table is made
/// anyway.
const OTHER_ENGINES: &[&str] = &[
    "innodb",
    "xtradb",
    "myisam",
    "aria",
    "maria",
    "memory",
    "heap",
    "csv",
    "archive",
    "blackhole",
    "rocksdb",
    "mrg_myisam",
    "merge",
    "federated",
    "federatedx",
    "connect",
    "spider",
    "s3",
    "sequence",
    "mroonga",
    "columnstore",
    "ndb",
    "ndbcluster",
    "oqgraph",
    "sphinx",
    "example",
];

/// Which statement names the engine ([`engine_named`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EngineIn {
    Create,
    Alter,
}

/// What `ENGINE=name` in CREATE or ALTER TABLE `table` does: FractalDB and
/// TokuDB (our own names) nothing. Another server's engine makes or keeps a
/// FractalDB table: silently in CREATE TABLE (a dump's every table names
/// one; MariaDB is silent for its own engines, and SHOW CREATE TABLE says
/// FractalDB), with note 1266 in ALTER TABLE, whose author asked for a
/// conversion that is not done (MariaDB's words when it substitutes its
/// default engine; a note, since nothing is lost). A name no server has
/// is 1286, an error under NO_ENGINE_SUBSTITUTION (the default sql_mode),
/// otherwise a warning followed by the note, as in MariaDB 10.11.
pub(crate) fn engine_named(s: &mut Session, name: &str, table: &str, within: EngineIn) -> SqlResult<()> {
    let lower = name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase();
    if matches!(lower.as_str(), "fractaldb" | "tokudb" | "default") {
        return Ok(());
    }
    let known = OTHER_ENGINES.contains(&lower.as_str());
    if !known {
        let unknown = SqlError::new(1286, "42000", format!("Unknown storage engine '{name}'"));
        if s.sql_mode_has("NO_ENGINE_SUBSTITUTION") {
            return Err(unknown);
        }
        s.warnings.push(crate::error::Warning::warn(1286, unknown.message));
    }
    if !known || within == EngineIn::Alter {
        s.warnings.push(crate::error::Warning::note(
            1266,
            format!("Using storage engine FractalDB for table '{table}'"),
        ));
    }
    Ok(())
}

pub(crate) fn table_options(o: &ast::CreateTableOptions) -> SqlResult<TableOptions> {
    let mut t = TableOptions::default();
    let list = match o {
        ast::CreateTableOptions::None => return Ok(t),
        ast::CreateTableOptions::With(l)
        | ast::CreateTableOptions::Options(l)
        | ast::CreateTableOptions::Plain(l)
        | ast::CreateTableOptions::TableProperties(l) => l,
    };
    for opt in list {
        match opt {
            ast::SqlOption::Comment(c) => {
                t.comment = Some(match c {
                    ast::CommentDef::WithEq(s) | ast::CommentDef::WithoutEq(s) => s.clone(),
                })
            }
            ast::SqlOption::KeyValue { key, value } => {
                let k = key.to_string().to_ascii_uppercase();
                let v = match value {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    ast::Expr::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                };
                match k.as_str() {
                    "AUTO_INCREMENT" => {
                        t.auto_increment =
                            Some(v.parse::<u64>().map_err(|_| SqlError::syntax(format!("'{v}'")))?)
                    }
                    "DEFAULT CHARSET" | "CHARSET" | "DEFAULT CHARACTER SET" | "CHARACTER SET" => {
                        t.charset = Some(v)
                    }
                    "DEFAULT COLLATE" | "COLLATE" => t.collate = Some(v),
                    // A quoted value is no row format (MariaDB: 1064);
                    // lex.rs refuses it first where it follows `=`.
                    "ROW_FORMAT" => match value {
                        ast::Expr::Identifier(i) if i.quote_style.is_none() => t.row_format = Some(v),
                        _ => return Err(SqlError::syntax(format!("'{value}' at line 1"))),
                    },
                    _ => {}
                }
            }
            ast::SqlOption::NamedParenthesizedList(l) if l.key.value.eq_ignore_ascii_case("ENGINE") => {
                t.engine = l.name.as_ref().map(|n| n.value.clone());
            }
            _ => {}
        }
    }
    Ok(t)
}

/// An index's parts from its column list: `col`, `col(10)` (a prefix),
/// `col DESC`.
pub(crate) fn index_parts(ics: &[ast::IndexColumn], cols: &[Column]) -> SqlResult<Vec<IndexPart>> {
    let mut v = Vec::new();
    for ic in ics {
        let desc = matches!(ic.column.options.sort, Some(ast::OrderBySort::Desc));
        let (n, prefix) = match &ic.column.expr {
            ast::Expr::Identifier(i) => (i.value.clone(), None),
            ast::Expr::Function(f) => {
                let n = ident_name(&f.name).join(".");
                let len = match &f.args {
                    ast::FunctionArguments::List(l) => match l.args.first() {
                        Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))) => {
                            v.value.to_string().parse::<u32>().ok()
                        }
                        _ => None,
                    },
                    _ => None,
                };
                (n, Some(len.ok_or_else(|| SqlError::syntax("'('"))?))
            }
            other => return Err(SqlError::syntax(format!("'{other}'"))),
        };
        let c = cols
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(&n))
            .ok_or_else(|| SqlError::key_column_missing(&n))?;
        if cols[c].ty.is_lob() && prefix.is_none() {
            return Err(SqlError::blob_key_without_length(&cols[c].name));
        }
        if v.iter().any(|p: &IndexPart| p.col == c) {
            return Err(SqlError::dup_column(&cols[c].name));
        }
        v.push(IndexPart { col: c, prefix, desc });
    }
    if v.is_empty() {
        return Err(SqlError::syntax("')'"));
    }
    Ok(v)
}

/// Adds secondary index `ix` to a table: a new dictionary filled from the
/// table's rows by the transaction that commits the catalog change
/// (`alter::swap`, ALTER TABLE's mechanism). Not online yet: rows other
/// sessions write meanwhile may miss the index (issue 20 builds indexes
/// while writes go on).
fn add_index(s: &mut Session, db: &str, name: &str, mut ix: IndexDef) -> SqlResult<Outcome> {
    let t = s.inner.table(db, name)?;
    if ix.name.eq_ignore_ascii_case("PRIMARY") || t.def.index_by_name(&ix.name).is_some() {
        return Err(SqlError::dup_key_name(&ix.name));
    }
    check_ident(&ix.name, Ident::Index)?;
    let mut def = t.def.clone();
    ix.dict = String::new();
    def.indexes.push(ix);
    crate::alter::swap(s, &t, def, &crate::alter::Plan::metadata(t.def.columns.len()))
}

/// Drops secondary index `ix_name` of a table: the catalog change, then
/// its dictionary (`alter::swap`).
fn drop_index(s: &mut Session, db: &str, name: &str, ix_name: &str) -> SqlResult<Outcome> {
    let t = s.inner.table(db, name)?;
    let i = t.def.index_by_name(ix_name).ok_or_else(|| SqlError::cant_drop(ix_name))?;
    if t.def.indexes[i].kind == IndexKind::Primary {
        return Err(SqlError::unsupported("dropping the primary key"));
    }
    let mut def = t.def.clone();
    def.indexes.remove(i);
    crate::alter::swap(s, &t, def, &crate::alter::Plan::metadata(t.def.columns.len()))
}

/// RENAME TABLE: the catalog record moves; the dictionaries keep their names.
pub(crate) fn rename_table(s: &mut Session, from: (String, String), to: (String, String)) -> SqlResult<()> {
    let _x = s.mdl_exclusive(&from.0, &from.1)?;
    let t = s.inner.table(&from.0, &from.1)?;
    check_ident(&to.1, Ident::Table)?;
    if !s.inner.schema.read().dbs.contains_key(&to.0) {
        return Err(SqlError::unknown_db(&to.0));
    }
    if s.inner.table(&to.0, &to.1).is_ok() {
        return Err(SqlError::table_exists(&to.1));
    }
    let mut def = t.def.clone();
    def.db = to.0.clone();
    def.name = to.1.clone();
    // Foreign keys referencing the table follow it (as in InnoDB), in the
    // same transaction.
    let follow = |d: &mut TableDef| {
        for fk in &mut d.foreign_keys {
            if fk.ref_db == from.0 && fk.ref_table.eq_ignore_ascii_case(&from.1) {
                fk.ref_db = to.0.clone();
                fk.ref_table = to.1.clone();
            }
        }
    };
    follow(&mut def);
    let children: Vec<(Arc<crate::table::Table>, TableDef)> = crate::fk::children(s, &from.0, &from.1)
        .into_iter()
        .filter(|(c, _)| c.def.id != t.def.id)
        .map(|(c, _)| {
            let mut d = c.def.clone();
            follow(&mut d);
            (c, d)
        })
        .collect();
    let txn = s.inner.env.begin(Isolation::RepeatableRead)?;
    txn.delete(&s.inner.catalog, &catalog::table_key(&from.0, &from.1))?;
    catalog::put_table(&txn, &s.inner.catalog, (&to.0, &to.1), &def)?;
    for (_, d) in &children {
        catalog::put_table(&txn, &s.inner.catalog, (&d.db, &d.name), d)?;
    }
    txn.commit()?;
    let newt = t.with_def(def);
    let mut sc = s.inner.schema.write();
    sc.tables.remove(&from);
    sc.tables.insert(to, Arc::new(newt));
    for (c, d) in children {
        sc.tables.insert((d.db.clone(), d.name.clone()), Arc::new(c.with_def(d)));
    }
    Ok(())
}

pub(crate) fn index_def(
    name: Option<String>,
    kind: IndexKind,
    parts: Vec<IndexPart>,
    cols: &[Column],
) -> IndexDef {
    let name = name.unwrap_or_else(|| cols[parts[0].col].name.clone());
    IndexDef {
        name,
        kind,
        clustering: false,
        parts,
        dict: String::new(),
        comment: String::new(),
        disabled: false,
        carry: false,
        carry_form: 0,
    }
}

pub(crate) fn default_spec(s: &mut Session, e: &ast::Expr, col: &str) -> SqlResult<DefaultSpec> {
    let text = e.to_string().to_ascii_uppercase();
    if text.starts_with("CURRENT_TIMESTAMP") || text.starts_with("NOW(") || text.starts_with("LOCALTIMESTAMP")
    {
        return Ok(DefaultSpec::CurrentTimestamp);
    }
    match s.eval_const(e) {
        Ok(Value::Null) => Ok(DefaultSpec::Null),
        Ok(v) => Ok(DefaultSpec::Literal(v.to_bytes().unwrap_or_default())),
        Err(_) => Err(SqlError::invalid_default(col)),
    }
}

/// MySQL's column types from sqlparser's.
pub fn map_type(t: &ast::DataType, coll: Collation, col: &str) -> SqlResult<SqlType> {
    use ast::DataType as D;
    let text = t.to_string().to_ascii_uppercase();
    let unsigned = text.contains("UNSIGNED");
    let int = |bytes: u8| SqlType::Int { bytes, unsigned };
    let len = |n: &Option<ast::CharacterLength>, dflt: u64| match n {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => *length,
        Some(ast::CharacterLength::Max) => 65535,
        None => dflt,
    };
    let fsp = |p: &Option<u64>| p.unwrap_or(0).min(255) as u8;
    Ok(match t {
        D::TinyInt(_) | D::TinyIntUnsigned(_) | D::Bool | D::Boolean => int(1),
        D::SmallInt(_) | D::SmallIntUnsigned(_) => int(2),
        D::MediumInt(_) | D::MediumIntUnsigned(_) => int(3),
        D::Int(_) | D::Integer(_) | D::IntUnsigned(_) | D::IntegerUnsigned(_) => int(4),
        D::BigInt(_) | D::BigIntUnsigned(_) => int(8),
        D::Decimal(i) | D::Numeric(i) | D::Dec(i) | D::DecimalUnsigned(i) | D::DecUnsigned(i) => {
            let (p, s) = match i {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s as u64),
            };
            if p > 65 {
                return Err(SqlError::too_big_precision(p, col, 65));
            }
            SqlType::Decimal { precision: p.max(1) as u8, scale: s.min(255) as u8, unsigned }
        }
        D::Float(_) | D::FloatUnsigned(_) | D::Real => SqlType::Float { unsigned },
        D::Double(_) | D::DoublePrecision | D::DoubleUnsigned(_) | D::DoublePrecisionUnsigned => {
            SqlType::Double { unsigned }
        }
        D::Bit(n) => SqlType::Bit { bits: n.unwrap_or(1).min(255) as u8 },
        D::Char(n) | D::Character(n) => SqlType::Str { kind: StrKind::Fixed, len: len(n, 1), coll },
        D::Varchar(n) | D::CharacterVarying(n) | D::Nvarchar(n) => {
            if n.is_none() {
                return Err(SqlError::syntax("')'"));
            }
            SqlType::Str { kind: StrKind::Var, len: len(n, 0), coll }
        }
        D::Binary(n) => SqlType::Str { kind: StrKind::Fixed, len: n.unwrap_or(1), coll: Collation::Binary },
        D::Varbinary(n) => SqlType::Str {
            kind: StrKind::Var,
            len: match n {
                Some(ast::BinaryLength::IntegerLength { length }) => *length,
                _ => return Err(SqlError::syntax("')'")),
            },
            coll: Collation::Binary,
        },
        D::TinyText => SqlType::Str { kind: StrKind::Lob, len: 255, coll },
        D::Text => SqlType::Str { kind: StrKind::Lob, len: 65535, coll },
        D::MediumText => SqlType::Str { kind: StrKind::Lob, len: 16777215, coll },
        D::LongText => SqlType::Str { kind: StrKind::Lob, len: 4294967295, coll },
        D::TinyBlob => SqlType::Str { kind: StrKind::Lob, len: 255, coll: Collation::Binary },
        D::Blob(_) => SqlType::Str { kind: StrKind::Lob, len: 65535, coll: Collation::Binary },
        D::MediumBlob => SqlType::Str { kind: StrKind::Lob, len: 16777215, coll: Collation::Binary },
        D::LongBlob => SqlType::Str { kind: StrKind::Lob, len: 4294967295, coll: Collation::Binary },
        D::Enum(members, _) => SqlType::Enum { values: members.iter().map(enum_member).collect(), coll },
        D::Set(members) => SqlType::Set { values: members.clone(), coll },
        D::Date => SqlType::Date,
        D::Time(p, _) => SqlType::Time { fsp: fsp(p) },
        D::Datetime(p) => SqlType::DateTime { fsp: fsp(p) },
        D::Timestamp(p, _) => SqlType::Timestamp { fsp: fsp(p) },
        D::JSON => SqlType::Json,
        _ if text.starts_with("YEAR") => SqlType::Year,
        _ => return Err(SqlError::syntax(format!("'{text}'"))),
    })
}

fn enum_member(m: &ast::EnumMember) -> String {
    match m {
        ast::EnumMember::Name(n) => n.clone(),
        ast::EnumMember::NamedValue(n, _) => n.clone(),
    }
}
