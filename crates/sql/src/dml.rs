//! INSERT, REPLACE, UPDATE, DELETE.

use std::sync::Arc;

use fractaldb::Txn;
use sqlparser::ast;

use crate::bind::Binder;
use crate::coerce::{self, StoreCtx};
use crate::error::{SqlError, SqlResult, Warning};
use crate::expr::Expr;
use crate::query::{resolve_table, scope_of, Source};
use crate::session::{Outcome, Session};
use crate::table::{self, Table};
use crate::value::Value;

pub(crate) fn now_value(s: &Session) -> Value {
    let mut w = Vec::new();
    let mut cx = s.eval_ctx(&mut w);
    Expr::Func("NOW".into(), vec![], vec![]).eval(&[], &mut cx).unwrap_or(Value::Null)
}

/// Rewrites the conversion errors and warnings a statement on `table` left
/// (from warning `from` on) to name their column as MariaDB does.
fn qualified(
    s: &mut Session,
    from: usize,
    table: Option<(String, String)>,
    r: SqlResult<Outcome>,
) -> SqlResult<Outcome> {
    let Some((db, t)) = table else { return r };
    for w in s.warnings.iter_mut().skip(from) {
        if let Some(m) = coerce::qualify_column(&w.message, &db, &t) {
            w.message = m;
        }
    }
    r.map_err(|mut e| {
        if let Some(m) = coerce::qualify_column(&e.message, &db, &t) {
            e.message = m;
        }
        e
    })
}

/// `INSERT ... VALUES` of literal rows, as `fastinsert.rs` scanned them:
/// the same checks and writes as the general path, without an AST.
pub fn insert_fast(s: &mut Session, txn: &Txn, fi: crate::fastinsert::FastInsert) -> SqlResult<Outcome> {
    let from = s.warnings.len();
    let db = match &fi.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    if crate::infoschema::is_schema(&db) {
        let name = ast::ObjectName::from(vec![ast::Ident::new(&db), ast::Ident::new(&fi.table)]);
        resolve_table(s, &name)?;
    }
    if s.inner.table(&db, &fi.table).is_err() && crate::views::lookup(s, txn, &db, &fi.table)?.is_some() {
        // A view: the general INSERT path writes through it.
        let text = s.stmt_text.clone();
        if let crate::lex::Parsed::Std(st, _) = crate::lex::parse_general(text.as_bytes())? {
            if let ast::Statement::Insert(ins) = *st {
                return insert(s, txn, &ins);
            }
        }
    }
    if s.login.is_some() {
        s.check_table("INSERT", &db, &fi.table)?;
    }
    let t = crate::seqengine::writable(s.inner.table(&db, &fi.table), &db, &fi.table)?;
    let crate::fastinsert::FastInsert { ignore, columns, rows, .. } = fi;
    let r = (|| {
        let def = &t.def;
        let cols: Vec<usize> = match &columns {
            None => (0..def.columns.len()).collect(),
            Some(names) => {
                let mut v = Vec::new();
                for n in names {
                    let i = def.col_index(n).ok_or_else(|| SqlError::unknown_column(n, "INSERT INTO"))?;
                    if v.contains(&i) {
                        return Err(SqlError::new(1110, "42000", format!("Column '{n}' specified twice")));
                    }
                    v.push(i);
                }
                v
            }
        };
        let empty_ok = columns.is_none();
        for (ri, r) in rows.iter().enumerate() {
            if r.len() != cols.len() && !(r.is_empty() && empty_ok) {
                return Err(SqlError::column_count(ri + 1));
            }
        }
        let how = InsertHow {
            ignore,
            replace: false,
            upd: Vec::new(),
            from_select: false,
            load_base: None,
            sink: None,
        };
        let n = rows.len();
        write_rows(s, txn, &t, &cols, Input::Rows(rows.into_iter()), n, how, Vec::new())
    })();
    qualified(s, from, Some((t.def.db.clone(), t.def.name.clone())), r)
}

pub fn insert(s: &mut Session, txn: &Txn, ins: &ast::Insert) -> SqlResult<Outcome> {
    if ins.source.is_none() && !ins.assignments.is_empty() {
        return insert(s, txn, &set_as_values(ins)?);
    }
    if let Some(r) = crate::views::insert(s, txn, ins)? {
        return Ok(r);
    }
    let from = s.warnings.len();
    let r = insert_rows(s, txn, ins);
    let table = match &ins.table {
        ast::TableObject::TableName(n) => {
            resolve_table(s, n).ok().map(|t| (t.def.db.clone(), t.def.name.clone()))
        }
        _ => None,
    };
    qualified(s, from, table, r)
}

/// `INSERT [INTO] t SET a = x, b = y` is `INSERT INTO t (a, b) VALUES (x,
/// y)` in MySQL, with the same checks, defaults and ON DUPLICATE KEY UPDATE.
fn set_as_values(ins: &ast::Insert) -> SqlResult<ast::Insert> {
    let mut out = ins.clone();
    let mut row = Vec::with_capacity(ins.assignments.len());
    for a in std::mem::take(&mut out.assignments) {
        let ast::AssignmentTarget::ColumnName(n) = a.target else {
            return Err(SqlError::syntax("'('"));
        };
        out.columns.push(n);
        row.push(a.value);
    }
    let dialect = sqlparser::dialect::MySqlDialect {};
    let mut q = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql("VALUES (1)")
        .and_then(|mut p| p.parse_query())
        .map_err(|e| SqlError::syntax(format!("'{e}'")))?;
    let ast::SetExpr::Values(v) = q.body.as_mut() else {
        return Err(SqlError::unsupported("INSERT ... SET"));
    };
    v.rows[0].content = row;
    out.source = Some(q);
    Ok(out)
}

fn insert_rows(s: &mut Session, txn: &Txn, ins: &ast::Insert) -> SqlResult<Outcome> {
    let ast::TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    let t = resolve_table(s, name)?;
    check_insert(s, &t, ins)?;
    let def = &t.def;
    // Target columns.
    let cols: Vec<usize> = if ins.columns.is_empty() {
        (0..def.columns.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let n = crate::expr::ident_name(c).pop().unwrap_or_default();
            let i = def.col_index(&n).ok_or_else(|| SqlError::unknown_column(&n, "INSERT INTO"))?;
            if v.contains(&i) {
                return Err(SqlError::new(1110, "42000", format!("Column '{n}' specified twice")));
            }
            v.push(i);
        }
        v
    };
    let source = ins.source.as_ref().ok_or_else(|| SqlError::unsupported("INSERT ... SET"))?;
    let selected = match source.body.as_ref() {
        ast::SetExpr::Values(_) => None,
        _ => Some(select_source(s, txn, source)?),
    };
    let sysvar = |n: &str| s.sysvar(n);
    let mut no_sub = |_q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
        Err(SqlError::unsupported("subqueries in VALUES"))
    };
    let mut warnings: Vec<Warning> = Vec::new();
    let table_cols = crate::expr::table_scope(def, &def.name);
    let (input, n_rows) = match source.body.as_ref() {
        ast::SetExpr::Values(vals) => {
            let mut rows = Vec::with_capacity(vals.rows.len());
            let mut cx = s.eval_ctx(&mut warnings);
            for (ri, r) in vals.rows.iter().enumerate() {
                let r = &r.content;
                if r.len() != cols.len() && !(r.is_empty() && ins.columns.is_empty()) {
                    return Err(SqlError::column_count(ri + 1));
                }
                let mut out = Vec::with_capacity(r.len());
                for e in r {
                    if is_default_keyword(e) {
                        out.push(None);
                        continue;
                    }
                    let mut b = Binder::plain(&[], &sysvar, &mut no_sub, "VALUES");
                    b.defaults = &table_cols;
                    let (x, _) = b.bind(e)?;
                    out.push(Some(x.eval(&[], &mut cx)?));
                }
                rows.push(out.into_iter().map(|v| v.unwrap_or(Value::Str(b"\0DEFAULT".to_vec()))).collect());
            }
            let n = rows.len();
            (Input::Rows(rows.into_iter()), n)
        }
        _ => {
            let (columns, input, n) = selected.expect("selected above");
            if columns != cols.len() {
                return Err(SqlError::column_count(1));
            }
            (input, n)
        }
    };
    // ON DUPLICATE KEY UPDATE assignments, bound over the existing row.
    let scope = scope_of(&[Source { table: t.clone(), alias: def.name.clone(), hints: Default::default() }]);
    let insert_cols: Vec<(String, usize)> =
        def.columns.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect();
    let mut upd: Vec<(usize, Expr)> = Vec::new();
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assigns)) = &ins.on {
        for a in assigns {
            let i = assign_col(&t, a, "UPDATE")?;
            if is_default_keyword(&a.value) {
                upd.push((i, crate::bind::default_of(&scope[i])?.0));
                continue;
            }
            let (x, _) = Binder {
                scope: &scope,
                aggs: None,
                agg_base: 0,
                sysvar: &sysvar,
                subquery: &mut no_sub,
                aliases: &[],
                insert_cols: &insert_cols,
                place: "field list",
                outer: &[],
                windows: &[],
                defaults: &[],
                where_top: false,
            }
            .bind(&a.value)?;
            upd.push((i, x));
        }
    }
    let from_select =
        ins.source.as_ref().is_some_and(|q| !matches!(q.body.as_ref(), ast::SetExpr::Values(_)));
    let how = InsertHow {
        ignore: ins.ignore,
        replace: ins.replace_into,
        upd,
        from_select,
        load_base: None,
        sink: None,
    };
    write_rows(s, txn, &t, &cols, input, n_rows, how, warnings)
}

/// An INSERT's rows: in memory (VALUES, a LOAD DATA batch, the rows of a
/// UNION or WITH source), or an INSERT ... SELECT's plain SELECT source
/// in the sort's run files past its memory budget (`select_source`).
pub(crate) enum Input {
    Rows(std::vec::IntoIter<Vec<Value>>),
    Held(crate::sort::Sorted),
}

impl Input {
    fn next(&mut self) -> SqlResult<Option<Vec<Value>>> {
        match self {
            Input::Rows(r) => Ok(r.next()),
            Input::Held(h) => Ok(h.next()?.map(|(_, row)| row)),
        }
    }
}

/// Runs INSERT ... SELECT's source to its end before the first row is
/// written, as MySQL does (the statement never reads its own rows): its
/// column count, its rows and how many. A plain SELECT streams its rows
/// into a sort keyed by arrival, which holds `tmp_memory_table_size` of
/// them and spills the rest to run files, so a source larger than memory
/// (copying a big table) never has to fit in it; any other query's rows
/// come back in its result set.
fn select_source(s: &mut Session, txn: &Txn, q: &ast::Query) -> SqlResult<(usize, Input, usize)> {
    struct Hold {
        sorter: crate::sort::Sorter,
        began: bool,
        n: u64,
    }
    impl crate::session::RowSink for Hold {
        fn columns(&mut self, _cols: &[crate::session::ColumnMeta]) -> SqlResult<()> {
            self.began = true;
            Ok(())
        }
        fn row(&mut self, row: &[Value]) -> SqlResult<()> {
            // Unique keys in arrival order: the sort gives the rows back
            // as they came.
            self.sorter.add(self.n.to_be_bytes().to_vec(), row.to_vec())?;
            self.n += 1;
            Ok(())
        }
    }
    let cfg = crate::sort::SortCfg::of_tmp_table(s);
    let mut hold = Hold { sorter: crate::sort::Sorter::new(cfg, None), began: false, n: 0 };
    let rs = crate::query::select_to(s, txn, q, false, Some(&mut hold))?;
    if hold.began {
        debug_assert!(rs.rows.is_empty(), "a streamed source returns no rows");
        let n = usize::try_from(hold.n).unwrap_or(usize::MAX);
        return Ok((rs.columns.len(), Input::Held(hold.sorter.finish()?), n));
    }
    let n = rs.rows.len();
    Ok((rs.columns.len(), Input::Rows(rs.rows.into_iter()), n))
}

/// LOAD DATA's rows (see `loaddata.rs`), one batch: `base` rows came
/// before it (warnings and errors number rows from the file's first).
/// Returns the affected rows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load_rows(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    cols: &[usize],
    input: Vec<Vec<Value>>,
    ignore: bool,
    replace: bool,
    base: usize,
    warnings: Vec<Warning>,
) -> SqlResult<u64> {
    let how =
        InsertHow { ignore, replace, upd: Vec::new(), from_select: false, load_base: Some(base), sink: None };
    let n = input.len();
    match write_rows(s, txn, t, cols, Input::Rows(input.into_iter()), n, how, warnings)? {
        Outcome::Done { affected, .. } => Ok(affected),
        Outcome::Rows(_) => Ok(0),
    }
}

/// Where [`convert_rows`] hands each converted row: its number in the
/// load (from 1), its values, its primary key, and the position in
/// `Session::warnings` a duplicate-key warning of this row would take.
pub(crate) type RowSink<'a> = &'a mut dyn FnMut(usize, &[Value], Vec<u8>, usize) -> SqlResult<()>;

/// LOAD DATA's rows converted exactly as [`load_rows`] converts them
/// (defaults, AUTO_INCREMENT values from `t`'s counter, coercion with its
/// warnings and strict-mode errors, CHECKs; IGNORE skips a refused row),
/// then given to `sink` instead of written: no duplicate check, no write,
/// no row count (the bulk path, `bulkload.rs`, sorts them and resolves
/// duplicates). Nothing is written to `t`'s dictionaries through `txn`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn convert_rows(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    cols: &[usize],
    input: Vec<Vec<Value>>,
    ignore: bool,
    base: usize,
    warnings: Vec<Warning>,
    sink: RowSink<'_>,
) -> SqlResult<()> {
    let how = InsertHow {
        ignore,
        replace: false,
        upd: Vec::new(),
        from_select: false,
        load_base: Some(base),
        sink: Some(sink),
    };
    let n = input.len();
    write_rows(s, txn, t, cols, Input::Rows(input.into_iter()), n, how, warnings).map(|_| ())
}

/// `qualified` for LOAD DATA.
pub(crate) fn qualify(
    s: &mut Session,
    from: usize,
    db: &str,
    t: &str,
    r: SqlResult<Outcome>,
) -> SqlResult<Outcome> {
    qualified(s, from, Some((db.to_string(), t.to_string())), r)
}

/// How an INSERT treats its rows.
struct InsertHow<'a> {
    ignore: bool,
    /// REPLACE: a duplicate's old row goes.
    replace: bool,
    /// ON DUPLICATE KEY UPDATE assignments, bound over the existing row.
    upd: Vec<(usize, Expr)>,
    /// INSERT ... SELECT (the info line is given even for one row).
    from_select: bool,
    /// LOAD DATA: the rows before this batch. Its rows are numbered from
    /// the file's first, and a NULL for a NOT NULL column is a warning
    /// outside strict mode even when the batch is one row.
    load_base: Option<usize>,
    /// The bulk path of LOAD DATA ([`convert_rows`]): converted rows go
    /// here instead of into the table.
    sink: Option<RowSink<'a>>,
}

/// INSERT of `cols` from `input` (one value per column; a DEFAULT as the
/// marker string): defaults, AUTO_INCREMENT, conversion, CHECK, unique and
/// foreign key checks, then the writes, batched per statement. `input`
/// holds exactly `n_rows` rows (AUTO_INCREMENT reserves a block for them).
#[allow(clippy::too_many_arguments)]
fn write_rows(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    cols: &[usize],
    mut input: Input,
    n_rows: usize,
    how: InsertHow<'_>,
    mut warnings: Vec<Warning>,
) -> SqlResult<Outcome> {
    let t = t.clone();
    let def = &t.def;
    let InsertHow { ignore, replace, upd, from_select, load_base, mut sink } = how;
    let checks = bind_checks(s, def)?;
    let strict = s.strict && !ignore;
    // A NOT NULL column without a default that the statement never names
    // fails before any row (MySQL checks it when it prepares the insert).
    if strict {
        for (i, col) in def.columns.iter().enumerate() {
            if !cols.contains(&i) && !col.auto_increment && col.default == crate::catalog::DefaultSpec::None {
                return Err(SqlError::no_default(&col.name));
            }
        }
    }
    // NOW() for column defaults, evaluated once, when a default needs it.
    let now = std::cell::OnceCell::new();
    let mut affected = 0u64;
    let mut delta = 0i64;
    let mut first_id: Option<u64> = None;
    let mut dups = 0u64;
    let mut refused = 0usize;
    let mut batch = table::StmtWrites::new(&t);
    let auto_pk = def.primary.is_some_and(|p| {
        let parts = &def.indexes[p].parts;
        parts.len() == 1
            && Some(parts[0].col) == def.auto_col()
            && parts[0].prefix.is_none()
            && !parts[0].desc
    });
    // AUTO_INCREMENT values reserved for this statement, their keys locked: [next, end).
    let mut block: Option<(u64, u64)> = None;
    // Blind upserts (`fastupdate`): a row sent as one update message on
    // its primary key, unread; counted as uncertain for the row count.
    let fast = if !ignore && !replace && !from_select && load_base.is_none() {
        crate::fastupdate::plan_upsert(s, &t, &upd)
    } else {
        None
    };
    let mut blind = 0i64;
    for ri in 0..n_rows {
        let Some(vals) = input.next()? else {
            return Err(SqlError::internal("an INSERT's input ended before its count"));
        };
        let rownum = load_base.unwrap_or(0) + ri + 1;
        let mut generated = false;
        let mut row = vec![None; def.columns.len()];
        for (v, &c) in vals.into_iter().zip(cols) {
            let is_default = matches!(&v, Value::Str(b) if b == b"\0DEFAULT");
            row[c] = if is_default { None } else { Some(v) };
        }
        let mut full = Vec::with_capacity(def.columns.len());
        for (i, col) in def.columns.iter().enumerate() {
            let v = match row[i].take() {
                Some(v) => v,
                None if col.auto_increment => Value::Null,
                None => match coerce::default_value(
                    col,
                    matches!(col.default, crate::catalog::DefaultSpec::CurrentTimestamp)
                        .then(|| now.get_or_init(|| now_value(s)).clone()),
                )? {
                    Some(v) => v,
                    None => {
                        let e = SqlError::no_default(&col.name);
                        if strict {
                            return Err(e);
                        }
                        warnings.push(Warning::from_error(&e));
                        coerce::implicit_default(&col.ty)
                    }
                },
            };
            let mut cx = StoreCtx { strict, row: rownum, warnings: &mut warnings };
            let mut v = coerce::store(v, col, &mut cx)?;
            if col.auto_increment && (v.is_null() || v.to_i64() == Some(0)) {
                let id = match block {
                    Some((next, end)) if next < end => {
                        block = Some((next + 1, end));
                        next
                    }
                    _ if auto_pk => {
                        // A block for the rest of the statement's rows, its
                        // keys locked with one range lock (unused values are
                        // a gap, as InnoDB leaves after a bulk insert).
                        let n = (n_rows - ri) as u64;
                        let first = reserve_autoinc(&t, txn, n)?;
                        let key_of = |id: u64| -> SqlResult<Vec<u8>> {
                            let mut w = Vec::new();
                            let mut scx = StoreCtx { strict: false, row: rownum, warnings: &mut w };
                            let mut r = vec![Value::Null; def.columns.len()];
                            r[i] = coerce::store(Value::UInt(id), col, &mut scx)?;
                            t.pk(&r, None)
                        };
                        txn.lock_range_for_update(&t.main, &key_of(first)?, &key_of(first + n - 1)?)?;
                        block = Some((first + 1, first + n));
                        first
                    }
                    _ => next_autoinc(&t, txn)?,
                };
                first_id.get_or_insert(id);
                v = coerce::store(Value::UInt(id), col, &mut cx)?;
                generated = true;
            } else if col.auto_increment {
                note_autoinc(&t, txn, &v)?;
            }
            if v.is_null() && !col.nullable {
                let e = SqlError::null_column(&col.name);
                // An explicit NULL: an error for a single row or in strict
                // mode, unless IGNORE turns it into a warning.
                if !ignore && (strict || (n_rows == 1 && load_base.is_none())) {
                    return Err(e);
                }
                warnings.push(Warning::from_error(&e));
                v = coerce::implicit_default(&col.ty);
            }
            full.push(v);
        }
        if let Err(e) = check_row(s, &t, &checks, &full) {
            // IGNORE skips a row a CHECK or a view's CHECK OPTION refuses,
            // with a warning; MariaDB leaves it out of Records.
            if ignore && matches!(e.code, 1369 | 4025) {
                warnings.push(Warning::from_error(&e));
                refused += 1;
                continue;
            }
            return Err(e);
        }
        let hidden = if def.primary.is_none() { Some(t.next_row_id()) } else { None };
        let pk = t.pk(&full, hidden)?;
        if let Some(sink) = sink.as_mut() {
            // The bulk path: a duplicate's warning would follow this row's
            // conversion warnings, as below.
            debug_assert!(fast.is_none(), "no blind upserts on the bulk path");
            sink(rownum, &full, pk, s.warnings.len() + warnings.len())?;
            crate::progress::changed(crate::progress::Stage::Inserted, 1);
            s.check_killed()?;
            continue;
        }
        // A generated AUTO_INCREMENT value takes the ordinary path (as TokuDB).
        if let (Some(plan), false) = (&fast, generated) {
            if let Some(arg) = plan.arg(s, Some(&full), strict, rownum, &mut warnings)? {
                // After this statement's earlier rows, which it may change.
                batch.flush(txn, &t)?;
                txn.update(&t.main, &pk, crate::fastupdate::FAST_UPDATE, &arg)?;
                blind += 1;
                crate::progress::changed(crate::progress::Stage::Inserted, 1);
                s.check_killed()?;
                continue;
            }
        }
        // A collision with a row of this statement not yet in the engine:
        // write them so the ordinary path below sees that row.
        if batch.collides(&t, &full, &pk)? {
            batch.flush(txn, &t)?;
        }
        // A primary key that is just an AUTO_INCREMENT value allocated now
        // holds no row: its key is locked (with the block), not read.
        let fresh_pk = generated && auto_pk;
        match t.find_duplicate_as(txn, &full, &pk, None, fresh_pk)? {
            None => {
                // After the duplicate check, as InnoDB (1062 before 1452).
                if !def.foreign_keys.is_empty() {
                    // A self-referencing row may need one of this statement's rows.
                    if def
                        .foreign_keys
                        .iter()
                        .any(|f| f.ref_db == def.db && f.ref_table.eq_ignore_ascii_case(&def.name))
                    {
                        batch.flush(txn, &t)?;
                    }
                    crate::fk::check_child(s, txn, &t, None, &full)?;
                }
                batch.add(txn, &t, &full, &pk)?;
                affected += 1;
                delta += 1;
            }
            Some(d) => {
                let old = table::fetch(&t, txn, &d.existing_pk, true)?.ok_or_else(table::damaged)?;
                if replace {
                    // MariaDB replaces a row the last unique key collides
                    // with (when no foreign key references the table) by an
                    // update, so the same row again counts 1 affected row
                    // and no duplicate; otherwise (and for a changed row)
                    // each row removed counts one (Duplicates) and the
                    // insert one. An identical row has every key of the old
                    // one, so no other row can collide.
                    let last_unique = def.indexes[d.index + 1..]
                        .iter()
                        .all(|ix| ix.kind == crate::catalog::IndexKind::Plain);
                    let same = last_unique && !changed(&old, &full) && !referenced_by_fk(s, def);
                    if same {
                        affected += 1;
                    } else {
                        crate::fk::on_parent_delete(s, txn, &t, &old, 0)?;
                        t.remove(txn, &old, &d.existing_pk)?;
                        dups += 1;
                        // Another unique index may collide too: remove those rows as well.
                        while let Some(d2) = t.find_duplicate(txn, &full, &pk, None)? {
                            let o2 =
                                table::fetch(&t, txn, &d2.existing_pk, true)?.ok_or_else(table::damaged)?;
                            crate::fk::on_parent_delete(s, txn, &t, &o2, 0)?;
                            t.remove(txn, &o2, &d2.existing_pk)?;
                            affected += 1;
                            dups += 1;
                            delta -= 1;
                        }
                        t.write_new(txn, &full, &pk)?;
                        affected += 2;
                    }
                } else if !upd.is_empty() {
                    let mut new = old.clone();
                    {
                        let mut cx = s.eval_ctx(&mut warnings);
                        cx.insert_row = Some(&full);
                        cx.strict_dml = strict;
                        let mut computed = Vec::new();
                        for (i, e) in &upd {
                            computed.push((*i, e.eval(&new, &mut cx)?));
                            // Later assignments see earlier ones, as in MySQL.
                            let (ci, v) = computed.last().cloned().expect("just pushed");
                            new[ci] = v;
                        }
                    }
                    for (i, col) in def.columns.iter().enumerate() {
                        let mut cx = StoreCtx { strict, row: rownum, warnings: &mut warnings };
                        new[i] = coerce::store(std::mem::replace(&mut new[i], Value::Null), col, &mut cx)?;
                        if new[i].is_null() && !col.nullable {
                            return Err(SqlError::null_column(&col.name));
                        }
                    }
                    if changed(&old, &new) {
                        check_row(s, &t, &checks, &new)?;
                        let new_pk = t.pk(&new, None)?;
                        if let Some(d2) = t.find_duplicate(txn, &new, &new_pk, Some(&d.existing_pk))? {
                            return Err(t.dup_error(&d2, &new));
                        }
                        crate::fk::check_child(s, txn, &t, Some(&old), &new)?;
                        crate::fk::on_parent_update(s, txn, &t, &old, &new, 0)?;
                        t.replace(txn, &old, &d.existing_pk, &new, &new_pk)?;
                        affected += 2;
                    }
                } else if ignore {
                    warnings.push(Warning::from_error(&t.dup_error(&d, &full)));
                    dups += 1;
                } else {
                    return Err(t.dup_error(&d, &full));
                }
            }
        }
        crate::progress::changed(crate::progress::Stage::Inserted, 1);
        s.check_killed()?;
    }
    batch.flush(txn, &t)?;
    if sink.is_none() {
        t.add_rows(txn, delta)?;
        t.add_uncertain(txn, blind)?;
    }
    s.count(crate::sysvars::Stat::FractaldbFastUpdates, blind as u64);
    if let Some(id) = first_id {
        s.last_insert_id = id;
    }
    let nwarn = warnings.len();
    s.warnings.extend(warnings);
    let info = (n_rows > 1 || from_select)
        .then(|| format!("Records: {}  Duplicates: {dups}  Warnings: {nwarn}", n_rows - refused));
    Ok(Outcome::Done { affected, last_insert_id: first_id.unwrap_or(0), info })
}

/// Whether some table's foreign key references `def` (its rows' removal
/// then runs the key's action, so REPLACE deletes and inserts).
pub(crate) fn referenced_by_fk(s: &Session, def: &crate::catalog::TableDef) -> bool {
    s.inner.schema.read().tables.values().any(|o| {
        o.def.foreign_keys.iter().any(|f| f.ref_db == def.db && f.ref_table.eq_ignore_ascii_case(&def.name))
    })
}

/// The table's CHECK constraints bound over its row: (name, expression).
pub fn bind_checks(s: &Session, def: &crate::catalog::TableDef) -> SqlResult<Vec<(String, Expr)>> {
    let view_checks: Vec<_> = s
        .view_checks
        .iter()
        .filter(|(d, t, _, _)| *d == def.db && t.eq_ignore_ascii_case(&def.name))
        .collect();
    if def.checks.is_empty() && view_checks.is_empty() {
        return Ok(Vec::new());
    }
    let scope = crate::expr::table_scope(def, &def.name);
    let sysvar = |n: &str| s.sysvar(n);
    let mut no_sub =
        |_q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> { Err(SqlError::unsupported("subqueries in CHECK")) };
    let mut out = Vec::new();
    for c in &def.checks {
        let e = sqlparser::parser::Parser::new(&sqlparser::dialect::MySqlDialect {})
            .try_with_sql(&c.expr)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| SqlError::syntax(format!("'{e}'")))?;
        let (x, _) = Binder::plain(&scope, &sysvar, &mut no_sub, "CHECK").bind(&e)?;
        out.push((c.name.clone(), x));
    }
    // The CHECK OPTION of the view the statement writes through: a
    // condition like the table's own, named so `check_row` says 1369.
    for (_, _, view, e) in view_checks {
        let (x, _) = Binder::plain(&scope, &sysvar, &mut no_sub, "CHECK").bind(e)?;
        out.push((format!("{}{view}", crate::views::CHECK_MARK), x));
    }
    Ok(out)
}

/// Fails with 4025 when a CHECK constraint is false for `row` (NULL passes).
pub(crate) fn check_row(s: &Session, t: &Table, checks: &[(String, Expr)], row: &[Value]) -> SqlResult<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let mut w = Vec::new();
    let mut cx = s.eval_ctx(&mut w);
    for (name, e) in checks {
        if e.eval(row, &mut cx)?.truth() == Some(false) {
            if let Some(view) = name.strip_prefix(crate::views::CHECK_MARK) {
                return Err(SqlError::new(1369, "44000", format!("CHECK OPTION failed {view}")));
            }
            return Err(SqlError::new(
                4025,
                "23000",
                format!("CONSTRAINT `{name}` failed for `{}`.`{}`", t.def.db, t.def.name),
            ));
        }
    }
    Ok(())
}

fn changed(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).any(|(x, y)| !same_value(x, y))
}

/// Two stored values are the same (NULL is the same as NULL).
pub(crate) fn same_value(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        _ => x.to_bytes() == y.to_bytes() && std::mem::discriminant(x) == std::mem::discriminant(y),
    }
}

/// A bare `DEFAULT` as a value (`SET c = DEFAULT`, `VALUES (DEFAULT)`):
/// the keyword, not a column named default (that one is quoted).
pub(crate) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT"))
}

fn assign_col(t: &Table, a: &ast::Assignment, place: &str) -> SqlResult<usize> {
    let ast::AssignmentTarget::ColumnName(n) = &a.target else {
        return Err(SqlError::syntax("'('"));
    };
    let n = crate::expr::ident_name(n).pop().unwrap_or_default();
    t.def.col_index(&n).ok_or_else(|| SqlError::unknown_column(&n, place))
}

/// The next AUTO_INCREMENT value: one past the largest value in the
/// table, read once (from the end of the primary key when the column
/// leads it, else by a scan) and then counted in memory; values are not
/// given back on rollback, as in MySQL.
/// The next AUTO_INCREMENT value (one value reserved).
pub(crate) fn next_autoinc(t: &Table, txn: &Txn) -> SqlResult<u64> {
    reserve_autoinc(t, txn, 1)
}

/// The table's counter, found from its rows on first use.
fn autoinc_counter<'g>(t: &'g Table, txn: &Txn) -> SqlResult<parking_lot::MutexGuard<'g, Option<u64>>> {
    let mut g = t.autoinc.lock();
    if g.is_none() {
        *g = Some(max_auto(t, txn)?.max(t.def.auto_increment_start.max(1)));
    }
    Ok(g)
}

/// Reserves `n` consecutive AUTO_INCREMENT values; returns the first.
pub(crate) fn reserve_autoinc(t: &Table, txn: &Txn, n: u64) -> SqlResult<u64> {
    debug_assert!(n > 0);
    let mut g = autoinc_counter(t, txn)?;
    let v = g.expect("set by autoinc_counter");
    *g = Some(v.saturating_add(n));
    Ok(v)
}

/// A stored value moves the counter past it (the AUTO_INCREMENT invariant,
/// see `Table::note_auto`).
pub(crate) fn note_autoinc(t: &Table, txn: &Txn, v: &Value) -> SqlResult<()> {
    let n = match v {
        Value::Int(i) if *i > 0 => *i as u64,
        Value::UInt(u) => *u,
        _ => return Ok(()),
    };
    let mut g = autoinc_counter(t, txn)?;
    if n >= g.expect("set by autoinc_counter") {
        *g = Some(n.saturating_add(1));
    }
    Ok(())
}

pub(crate) fn max_auto(t: &Table, txn: &Txn) -> SqlResult<u64> {
    let Some(col) = t.def.auto_col() else { return Ok(1) };
    let as_u64 = |v: &Value| match v {
        Value::Int(i) if *i > 0 => *i as u64,
        Value::UInt(u) => *u,
        _ => 0,
    };
    let led = t.def.indexes.iter().enumerate().find(|(_, ix)| ix.parts.first().is_some_and(|p| p.col == col));
    if let Some((i, ix)) = led {
        let reverse = !ix.parts[0].desc;
        let access = crate::plan::Access {
            index: Some(i),
            lo: None,
            hi: None,
            eq_parts: 0,
            has_range: false,
            reverse,
            ..crate::plan::Access::full()
        };
        let mut max = 0u64;
        crate::plan::for_each_row(txn, t, &access, |_, row| {
            max = as_u64(&row[col]);
            // Past the NULLs (read last going backwards, first going forwards).
            Ok(row[col].is_null() && !reverse)
        })?;
        return Ok(max + 1);
    }
    let mut max = 0u64;
    for kv in txn.range(&t.main, None, None, false) {
        let (k, v) = kv?;
        max = max.max(as_u64(&t.decode_row(&k, &v)?[col]));
    }
    Ok(max + 1)
}

/// The rows of `t` matching `selection`, with their primary keys, read
/// at the latest committed version under write locks.
fn matching(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    selection: Option<&ast::Expr>,
    order_by: &[ast::OrderByExpr],
    limit: Option<&ast::Expr>,
    alias: Option<&ast::TableAlias>,
) -> SqlResult<Vec<(Vec<u8>, Vec<Value>)>> {
    // The table is reached by its alias when it has one (`UPDATE t AS x`).
    let name = alias.map_or_else(|| t.def.name.clone(), |a| a.name.value.clone());
    let scope = scope_of(&[Source { table: t.clone(), alias: name, hints: Default::default() }]);
    let sysvar = |n: &str| s.sysvar(n);
    let proto = s.child();
    let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
        let mut sub = proto.child();
        crate::query::select(&mut sub, txn, q, false).map(|r| r.rows)
    };
    let filter = match selection {
        Some(w) => Some(Binder::plain(&scope, &sysvar, &mut subq, "where clause").bind(w)?.0),
        None => None,
    };
    let mut order = Vec::new();
    for o in order_by {
        let (e, ty) = Binder::plain(&scope, &sysvar, &mut subq, "order clause").bind(&o.expr)?;
        order.push((e, ty, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
    }
    // Correlated subqueries in WHERE run per row, seeing the row's columns.
    let proto2 = s.child();
    let width = scope.len();
    let corr_scope = scope.clone();
    let mut runner = move |q: &ast::Query, row: &[Value]| -> SqlResult<Vec<Vec<Value>>> {
        let mut sub = proto2.child();
        sub.outer_scope = corr_scope.clone();
        sub.outer_row = row.iter().take(width).cloned().collect();
        crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
    };
    // The columns WHERE and ORDER BY read (`None`: not known, all).
    let read = {
        let mut needed = vec![false; t.def.columns.len()];
        let mut ok = true;
        for e in filter.iter().chain(order.iter().map(|o| &o.0)) {
            ok &= crate::plan::mark_columns(e, 0, &mut needed);
        }
        ok.then_some(needed)
    };
    let mut w = Vec::new();
    let mut out = Vec::new();
    {
        // A bad number in a comparison only warns here. (MariaDB's UPDATE
        // in strict mode makes it an error when it compares row by row, and
        // a warning when its range optimizer converted the constant first:
        // a known deviation, see docs/ARCHITECTURE.md.)
        let mut cx = s.eval_ctx(&mut w);
        cx.sub = Some(&mut runner);
        let mut conj = Vec::new();
        if let Some(f) = &filter {
            crate::query::conjuncts(f, &mut conj);
        }
        // The rows read here only pick the keys (each is re-read below):
        // an index holding the WHERE's and ORDER BY's columns is enough.
        let mut access = crate::plan::choose(txn, t, &Default::default(), &conj, 0, &mut cx, read.as_deref());
        access.lock_points = true;
        crate::plan::for_each_row(txn, t, &access, |k, row| {
            if filter.as_ref().map_or(Ok(true), |f| f.eval(&row, &mut cx).map(|v| v.truth() == Some(true)))? {
                out.push((k.to_vec(), row));
            }
            Ok(true)
        })?;
        if !order.is_empty() {
            let mut keyed = Vec::new();
            for (k, r) in out {
                let mut ks = Vec::new();
                for (e, _, _) in &order {
                    ks.push(e.eval(&r, &mut cx)?);
                }
                keyed.push((ks, k, r));
            }
            let dirs: Vec<(crate::expr::CmpKind, bool)> =
                order.iter().map(|(_, ty, desc)| (crate::query::sort_kind(*ty), *desc)).collect();
            keyed.sort_by(|a, b| crate::query::cmp_sort_keys(&a.0, &b.0, &dirs));
            out = keyed.into_iter().map(|(_, k, r)| (k, r)).collect();
        }
    }
    s.warnings.extend(w);
    if let Some(l) = limit {
        let n = match s.eval_const(l)? {
            Value::Int(i) if i >= 0 => i as usize,
            Value::UInt(u) => u as usize,
            _ => return Err(SqlError::syntax(format!("'{l}'"))),
        };
        out.truncate(n);
    }
    // Lock and re-read each row at its newest committed version. Where a
    // column WHERE reads changed since the snapshot, WHERE is evaluated
    // again on the newest version and a row no longer matching is left
    // alone (InnoDB evaluates WHERE on what its locking read returns);
    // an unchanged row is not evaluated twice (RAND() in WHERE).
    let mut locked = Vec::with_capacity(out.len());
    let mut w = Vec::new();
    {
        let mut cx = s.eval_ctx(&mut w);
        cx.sub = Some(&mut runner);
        for (k, seen) in out {
            let Some(row) = table::fetch(t, txn, &k, true)? else { continue };
            let moved = match &read {
                Some(cols) => row.iter().zip(&seen).zip(cols).any(|((a, b), c)| *c && !same_value(a, b)),
                None => changed(&row, &seen),
            };
            let keep = match &filter {
                Some(f) if moved => f.eval(&row, &mut cx)?.truth() == Some(true),
                _ => true,
            };
            if keep {
                locked.push((k, row));
            }
        }
    }
    Ok(locked)
}

pub fn update(s: &mut Session, txn: &Txn, up: &ast::Update, ignore: bool) -> SqlResult<Outcome> {
    if crate::multidml::is_multi_update(up) {
        return crate::multidml::update(s, txn, up, ignore);
    }
    if let Some(r) = crate::views::update(s, txn, up, ignore)? {
        return Ok(r);
    }
    let from = s.warnings.len();
    let r = update_rows(s, txn, up, ignore);
    let table = match &up.table.relation {
        ast::TableFactor::Table { name, .. } => {
            resolve_table(s, name).ok().map(|t| (t.def.db.clone(), t.def.name.clone()))
        }
        _ => None,
    };
    qualified(s, from, table, r)
}

/// The errors UPDATE IGNORE and DELETE IGNORE skip a row for: a duplicate
/// key, a foreign key failing either way, a CHECK constraint.
fn ignorable(code: u16) -> bool {
    matches!(code, 1062 | 1369 | 1451 | 1452 | 4025)
}

/// What became of one row an UPDATE matched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Updated {
    /// The new values are the old ones: nothing written.
    Same,
    Changed,
    /// IGNORE skipped the row on an error; `matched`: it still counts in
    /// "Rows matched" (MariaDB leaves out a row a CHECK refused).
    Skipped {
        matched: bool,
    },
}

impl Updated {
    /// Counts the row as MariaDB's info line does: "Rows matched" (a row
    /// IGNORE skipped counts unless a CHECK refused it) and "Changed";
    /// a changed row is also progress.
    pub(crate) fn count(self, matched: &mut u64, changed: &mut u64) {
        match self {
            Updated::Same | Updated::Skipped { matched: true } => *matched += 1,
            Updated::Skipped { matched: false } => {}
            Updated::Changed => {
                *matched += 1;
                *changed += 1;
                crate::progress::changed(crate::progress::Stage::Updated, 1);
            }
        }
    }
}

/// Writes UPDATE's new rows into one table: conversion, NOT NULL, ON
/// UPDATE columns, CHECK, foreign keys, unique keys (InnoDB's order),
/// and IGNORE. Single- and multi-table UPDATE both write through it.
pub(crate) struct RowUpdater {
    pub t: Arc<Table>,
    checks: Vec<(String, Expr)>,
    /// Strict mode and no IGNORE: a bad value is an error.
    pub strict: bool,
    ignore: bool,
    now: Value,
    /// IGNORE on a table other tables reference: a row's cascades are
    /// undone (to a savepoint) when the row is skipped after them.
    guard: bool,
}

impl RowUpdater {
    pub(crate) fn new(s: &Session, t: &Arc<Table>, ignore: bool) -> SqlResult<RowUpdater> {
        Ok(RowUpdater {
            t: t.clone(),
            checks: bind_checks(s, &t.def)?,
            strict: s.strict && !ignore,
            ignore,
            now: now_value(s),
            guard: ignore && referenced_by_fk(s, &t.def),
        })
    }

    /// Replaces row `old` (key `pk`) by `new`, the SET values computed
    /// over it; `explicitly`: the columns SET names, sorted; `rownum`
    /// numbers the row in conversion messages.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn apply(
        &self,
        s: &Session,
        txn: &Txn,
        pk: &[u8],
        old: &[Value],
        mut new: Vec<Value>,
        explicitly: &[usize],
        rownum: usize,
        warnings: &mut Vec<Warning>,
    ) -> SqlResult<Updated> {
        let t = &self.t;
        let strict = self.strict;
        for (i, col) in t.def.columns.iter().enumerate() {
            let mut cx = StoreCtx { strict, row: rownum, warnings };
            new[i] = coerce::store(std::mem::replace(&mut new[i], Value::Null), col, &mut cx)?;
            if new[i].is_null() && !col.nullable {
                let e = SqlError::null_column(&col.name);
                if strict {
                    return Err(e);
                }
                warnings.push(Warning::from_error(&e));
                new[i] = coerce::implicit_default(&col.ty);
            }
        }
        if !changed(old, &new) {
            return Ok(Updated::Same);
        }
        for (i, col) in t.def.columns.iter().enumerate() {
            if col.on_update_now && explicitly.binary_search(&i).is_err() {
                let mut cx = StoreCtx { strict, row: rownum, warnings };
                new[i] = coerce::store(self.now.clone(), col, &mut cx)?;
            }
        }
        if let Err(e) = check_row(s, t, &self.checks, &new) {
            if self.ignore && ignorable(e.code) {
                // MariaDB warns, and does not count the row as matched.
                warnings.push(Warning::from_error(&e));
                return Ok(Updated::Skipped { matched: false });
            }
            return Err(e);
        }
        let new_pk = if t.def.primary.is_some() { t.pk(&new, None)? } else { pk.to_vec() };
        let sp = if self.guard { Some(txn.savepoint()?) } else { None };
        let r = (|| {
            // Foreign keys before the duplicate check, as InnoDB (1451 before 1062).
            crate::fk::check_child(s, txn, t, Some(old), &new)?;
            crate::fk::on_parent_update(s, txn, t, old, &new, 0)?;
            if let Some(d) = t.find_duplicate(txn, &new, &new_pk, Some(pk))? {
                return Err(t.dup_error(&d, &new));
            }
            t.replace(txn, old, pk, &new, &new_pk)
        })();
        match r {
            Ok(()) => {
                if let Some(sp) = sp {
                    txn.release(sp)?;
                }
                Ok(Updated::Changed)
            }
            // MariaDB's UPDATE IGNORE skips these rows without a warning.
            Err(e) if self.ignore && ignorable(e.code) => {
                if let Some(sp) = sp {
                    txn.rollback_to(sp)?;
                    txn.release(sp)?;
                }
                Ok(Updated::Skipped { matched: true })
            }
            Err(e) => Err(e),
        }
    }
}

/// Deletes row `row` (key `pk`) of `t` with its foreign key actions; under
/// IGNORE a foreign key refusing it leaves the row (false), with a warning
/// when `warn` (MariaDB's multi-table DELETE IGNORE gives none). `guard`:
/// undo the row's cascades then (see `RowUpdater`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn delete_row(
    s: &mut Session,
    txn: &Txn,
    t: &Table,
    pk: &[u8],
    row: &[Value],
    ignore: bool,
    guard: bool,
    warn: bool,
) -> SqlResult<bool> {
    let sp = if ignore && guard { Some(txn.savepoint()?) } else { None };
    let r = crate::fk::on_parent_delete(s, txn, t, row, 0).and_then(|()| t.remove(txn, row, pk));
    match r {
        Ok(()) => {
            if let Some(sp) = sp {
                txn.release(sp)?;
            }
            Ok(true)
        }
        Err(e) if ignore && ignorable(e.code) => {
            if let Some(sp) = sp {
                txn.rollback_to(sp)?;
                txn.release(sp)?;
            }
            if warn {
                s.warnings.push(Warning::from_error(&e));
            }
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Whether deleting or updating rows of `def` may run foreign key actions.
pub(crate) fn has_children(s: &Session, def: &crate::catalog::TableDef) -> bool {
    referenced_by_fk(s, def)
}

fn update_rows(s: &mut Session, txn: &Txn, up: &ast::Update, ignore: bool) -> SqlResult<Outcome> {
    let ast::TableFactor::Table { name, alias, .. } = &up.table.relation else {
        return Err(SqlError::unsupported("this UPDATE target"));
    };
    let t = resolve_table(s, name)?;
    if s.login.is_some() {
        s.check_table("UPDATE", &t.def.db, &t.def.name)?;
    }
    let shown = alias.as_ref().map_or_else(|| t.def.name.clone(), |a| a.name.value.clone());
    let mut sets = Vec::new();
    let scope = scope_of(&[Source { table: t.clone(), alias: shown, hints: Default::default() }]);
    {
        // An uncorrelated subquery in SET runs once, here, before any row
        // changes; a correlated one runs per row (below).
        let sysvar = |n: &str| s.sysvar(n);
        let proto = s.child();
        let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
            let mut sub = proto.child();
            crate::query::select(&mut sub, txn, q, false).map(|r| r.rows)
        };
        for a in &up.assignments {
            let i = assign_col(&t, a, "SET")?;
            let (x, _) = if is_default_keyword(&a.value) {
                crate::bind::default_of(&scope[i])?
            } else {
                Binder::plain(&scope, &sysvar, &mut subq, "SET").bind(&a.value)?
            };
            sets.push((i, x));
        }
    }
    let mut correlated = false;
    for (_, e) in &sets {
        e.walk(&mut |x| correlated |= matches!(x, Expr::Correlated(_)));
    }
    if s.explaining {
        let how = ExplainHow { delete: false, sorted: !up.order_by.is_empty(), limited: up.limit.is_some() };
        return explain_single(s, txn, &t, alias.as_ref(), up.selection.as_ref(), how);
    }
    if !ignore && up.order_by.is_empty() && up.limit.is_none() && !correlated {
        if let Some(r) = fast_update(s, txn, &t, &scope, &sets, up.selection.as_ref())? {
            return Ok(r);
        }
    }
    let rows = matching(s, txn, &t, up.selection.as_ref(), &up.order_by, up.limit.as_ref(), alias.as_ref())?;
    let upd = RowUpdater::new(s, &t, ignore)?;
    let mut explicitly: Vec<usize> = sets.iter().map(|(i, _)| *i).collect();
    explicitly.sort_unstable();
    let mut warnings = Vec::new();
    // A correlated subquery in SET sees the table as it was before the
    // statement (MariaDB reads the target table as of the statement's start
    // when a subquery names it): every row's new values are computed before
    // the first row is written. Without one, each row is computed and
    // written in turn.
    let proto = s.child();
    let width = scope.len();
    let mut runner = move |q: &ast::Query, row: &[Value]| -> SqlResult<Vec<Vec<Value>>> {
        let mut sub = proto.child();
        sub.outer_scope = scope.clone();
        sub.outer_row = row.iter().take(width).cloned().collect();
        crate::query::select(&mut sub, txn, q, false).map(|rs| rs.rows)
    };
    let new_row = |s: &Session,
                   runner: &mut crate::expr::SubRunner<'_>,
                   warnings: &mut Vec<Warning>,
                   old: &[Value]|
     -> SqlResult<Vec<Value>> {
        let mut new = old.to_vec();
        let mut cx = s.eval_ctx(warnings);
        cx.strict_dml = upd.strict;
        cx.sub = Some(runner);
        for (i, e) in &sets {
            new[*i] = e.eval(&new, &mut cx)?;
        }
        Ok(new)
    };
    let mut precomputed = Vec::new();
    if correlated {
        for (_, old) in &rows {
            precomputed.push(new_row(s, &mut runner, &mut warnings, old)?);
            s.check_killed()?;
        }
    }
    let mut precomputed = precomputed.into_iter();
    let (mut matched, mut affected) = (0u64, 0u64);
    for (ri, (pk, old)) in rows.into_iter().enumerate() {
        let new = match precomputed.next() {
            Some(new) => new,
            None => new_row(s, &mut runner, &mut warnings, &old)?,
        };
        upd.apply(s, txn, &pk, &old, new, &explicitly, ri + 1, &mut warnings)?
            .count(&mut matched, &mut affected);
        s.check_killed()?;
    }
    s.warnings.extend(warnings);
    // The statement's warnings, its WHERE's (from `matching`) too.
    let nwarn = s.warnings.len();
    Ok(Outcome::Done {
        affected,
        last_insert_id: 0,
        info: Some(format!("Rows matched: {matched}  Changed: {affected}  Warnings: {nwarn}")),
    })
}

/// UPDATE of one row named by its whole primary key as one update message
/// (`fastupdate`), when `tokudb_enable_fast_update` is on and the
/// statement qualifies; `None`: the ordinary path. Nothing is read, so
/// nothing is known of the row: 0 rows matched and changed, as TokuDB.
fn fast_update(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    scope: &[crate::expr::ScopeCol],
    sets: &[(usize, Expr)],
    selection: Option<&ast::Expr>,
) -> SqlResult<Option<Outcome>> {
    if s.session_var("tokudb_enable_fast_update").and_then(|v| v.truth()) != Some(true) {
        return Ok(None);
    }
    let filter = match selection {
        Some(w) => {
            let sysvar = |n: &str| s.sysvar(n);
            let proto = s.child();
            let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
                let mut sub = proto.child();
                crate::query::select(&mut sub, txn, q, false).map(|r| r.rows)
            };
            Some(Binder::plain(scope, &sysvar, &mut subq, "where clause").bind(w)?.0)
        }
        None => None,
    };
    let Some((plan, pk)) = crate::fastupdate::plan_update(s, t, sets, filter.as_ref())? else {
        return Ok(None);
    };
    let mut warnings = Vec::new();
    let Some(arg) = plan.arg(s, None, s.strict, 1, &mut warnings)? else {
        return Ok(None);
    };
    txn.update(&t.main, &pk, crate::fastupdate::FAST_UPDATE, &arg)?;
    s.count(crate::sysvars::Stat::FractaldbFastUpdates, 1);
    s.warnings.extend(warnings);
    let nwarn = s.warnings.len();
    Ok(Some(Outcome::Done {
        affected: 0,
        last_insert_id: 0,
        info: Some(format!("Rows matched: 0  Changed: 0  Warnings: {nwarn}")),
    }))
}

pub fn delete(s: &mut Session, txn: &Txn, del: &ast::Delete, ignore: bool) -> SqlResult<Outcome> {
    if crate::multidml::is_multi_delete(del) {
        return crate::multidml::delete(s, txn, del, ignore);
    }
    if let Some(r) = crate::views::delete(s, txn, del, ignore)? {
        return Ok(r);
    }
    let from = match &del.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    let ast::TableFactor::Table { name, alias, .. } = &from[0].relation else {
        return Err(SqlError::unsupported("this DELETE target"));
    };
    let t = resolve_table(s, name)?;
    if s.login.is_some() {
        s.check_table("DELETE", &t.def.db, &t.def.name)?;
    }
    if s.explaining {
        let how = ExplainHow { delete: true, sorted: !del.order_by.is_empty(), limited: del.limit.is_some() };
        return explain_single(s, txn, &t, alias.as_ref(), del.selection.as_ref(), how);
    }
    let rows =
        matching(s, txn, &t, del.selection.as_ref(), &del.order_by, del.limit.as_ref(), alias.as_ref())?;
    let guard = referenced_by_fk(s, &t.def);
    let mut n = 0u64;
    for (pk, row) in rows {
        if delete_row(s, txn, &t, &pk, &row, ignore, guard, true)? {
            n += 1;
            crate::progress::changed(crate::progress::Stage::Deleted, 1);
        }
        s.check_killed()?;
    }
    t.add_rows(txn, -(n as i64))?;
    Ok(Outcome::done(n))
}

/// What EXPLAIN of a single-table UPDATE or DELETE needs besides WHERE.
struct ExplainHow {
    delete: bool,
    /// ORDER BY (the rows are sorted in memory).
    sorted: bool,
    limited: bool,
}

/// EXPLAIN of a single-table UPDATE or DELETE: WHERE bound as `matching`
/// binds it, the access path `plan::choose` gives (see
/// `explain::single_dml`).
fn explain_single(
    s: &mut Session,
    txn: &Txn,
    t: &Arc<Table>,
    alias: Option<&ast::TableAlias>,
    selection: Option<&ast::Expr>,
    how: ExplainHow,
) -> SqlResult<Outcome> {
    let name = alias.map_or_else(|| t.def.name.clone(), |a| a.name.value.clone());
    let scope = scope_of(&[Source { table: t.clone(), alias: name.clone(), hints: Default::default() }]);
    let filter = {
        let sysvar = |n: &str| s.sysvar(n);
        let proto = s.child();
        let mut subq = |q: &ast::Query| -> SqlResult<Vec<Vec<Value>>> {
            let mut sub = proto.child();
            crate::query::select(&mut sub, txn, q, false).map(|r| r.rows)
        };
        match selection {
            Some(w) => Some(Binder::plain(&scope, &sysvar, &mut subq, "where clause").bind(w)?.0),
            None => None,
        }
    };
    let mut conj = Vec::new();
    if let Some(f) = &filter {
        crate::query::conjuncts(f, &mut conj);
    }
    let mut w = Vec::new();
    let access = {
        let mut cx = s.eval_ctx(&mut w);
        crate::plan::choose(txn, t, &Default::default(), &conj, 0, &mut cx, None)
    };
    let delete_all = how.delete && selection.is_none() && !how.limited;
    let rs = crate::explain::single_dml(
        txn,
        t,
        &name,
        &access,
        &conj,
        how.delete,
        selection.is_some(),
        how.sorted,
        delete_all,
    )?;
    Ok(Outcome::Rows(rs))
}

/// The privileges an INSERT needs: INSERT, and UPDATE for ON DUPLICATE
/// KEY UPDATE, DELETE for REPLACE.
fn check_insert(s: &Session, t: &Table, ins: &ast::Insert) -> SqlResult<()> {
    if s.login.is_some() {
        s.check_table("INSERT", &t.def.db, &t.def.name)?;
        if ins.on.is_some() {
            s.check_table("UPDATE", &t.def.db, &t.def.name)?;
        }
        if ins.replace_into {
            s.check_table("DELETE", &t.def.db, &t.def.name)?;
        }
    }
    Ok(())
}

/// EXPLAIN of INSERT / REPLACE: MariaDB's one `INSERT` row for VALUES,
/// else the plan of the SELECT.
pub(crate) fn explain_insert(s: &mut Session, txn: &Txn, ins: &ast::Insert) -> SqlResult<Outcome> {
    let ast::TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    let t = resolve_table(s, name)?;
    check_insert(s, &t, ins)?;
    match &ins.source {
        Some(q) if !matches!(q.body.as_ref(), ast::SetExpr::Values(_)) => {
            crate::query::select(s, txn, q, false).map(Outcome::Rows)
        }
        _ => Ok(Outcome::Rows(crate::explain::insert_values(&t.def.name))),
    }
}
