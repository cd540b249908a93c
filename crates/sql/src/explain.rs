//! EXPLAIN: the plan of a SELECT, UPDATE, DELETE or INSERT in MySQL's
//! columns (id, select_type, table, type, possible_keys, key, key_len,
//! ref, rows, Extra), and EXPLAIN/DESCRIBE of a table (SHOW COLUMNS).
//! INSERT ... SELECT is its SELECT's plan and INSERT ... VALUES MariaDB's
//! one `INSERT` row; a multi-table UPDATE/DELETE is its join's plan.
//!
//! The query is bound by the ordinary SELECT path with the session's
//! `explaining` flag set; it stops before reading rows and describes the
//! access paths `plan::choose` and the join executor (`join::Exec::explain`)
//! pick. Uncorrelated subqueries and derived tables still run while the
//! query binds (their results are constants of the plan). `rows` is the
//! engine's estimate of the keys in the chosen range (`plan::choose`), 1
//! for a point read, the table's exact row count for a full scan (of the
//! table or of an index) and for a join's per-row probe.

use sqlparser::ast;

use crate::catalog::IndexKind;
use crate::error::{SqlError, SqlResult};
use crate::expr::Expr;
use crate::join::Step;
use crate::query::Rel;
use crate::session::{ColumnMeta, Outcome, ResultSet, Session};
use crate::types::{Charset, Collation, SqlType, StrKind};
use crate::value::Value;

pub fn explain(s: &mut Session, stmt: &ast::Statement) -> SqlResult<Outcome> {
    match stmt {
        ast::Statement::ExplainTable { table_name, .. } => {
            let parts = crate::expr::ident_name(table_name);
            let (db, table) = match parts.as_slice() {
                [t] => (None, t.clone()),
                [d, t] => (Some(d.clone()), t.clone()),
                _ => return Err(SqlError::syntax(format!("'{table_name}'"))),
            };
            let st = crate::lex::ShowStmt {
                kind: crate::lex::ShowKind::Columns,
                full: false,
                global: false,
                db,
                table: Some(table),
                like: None,
                filter: None,
                name: None,
                limit: None,
                if_not_exists: false,
            };
            crate::show::show(s, &st)
        }
        ast::Statement::Explain { statement, analyze, format, .. } => {
            if *analyze {
                return Err(SqlError::unsupported("ANALYZE"));
            }
            if format.is_some() {
                return Err(SqlError::unsupported("EXPLAIN FORMAT"));
            }
            s.explaining = true;
            let r = s.in_txn(false, |s, txn| match statement.as_ref() {
                ast::Statement::Query(q) => crate::query::select(s, txn, q, false).map(Outcome::Rows),
                // The statement binds as it would run and stops before
                // reading rows (`Session::explaining`).
                ast::Statement::Update(up) => crate::dml::update(s, txn, up, false),
                ast::Statement::Delete(del) => crate::dml::delete(s, txn, del, false),
                ast::Statement::Insert(ins) => crate::dml::explain_insert(s, txn, ins),
                _ => Err(SqlError::unsupported("EXPLAIN of this statement")),
            });
            s.explaining = false;
            r
        }
        _ => Err(SqlError::unsupported("this EXPLAIN")),
    }
}

fn text_col(name: &str) -> ColumnMeta {
    ColumnMeta::expr(name, SqlType::Str { kind: StrKind::Var, len: 64, coll: Collation::Utf8mb3GeneralCi })
}

fn columns() -> Vec<ColumnMeta> {
    let mut c = vec![ColumnMeta::expr("id", SqlType::Int { bytes: 8, unsigned: false })];
    for n in ["select_type", "table", "type", "possible_keys", "key", "key_len", "ref"] {
        c.push(text_col(n));
    }
    c.push(ColumnMeta::expr("rows", SqlType::Int { bytes: 8, unsigned: true }));
    c.push(text_col("Extra"));
    c
}

/// One plan row: `c` is table, type, possible_keys, key, key_len, ref, rows.
fn row(c: [Value; 7], extra: &str) -> Vec<Value> {
    let mut r = vec![Value::Int(1), Value::str("SIMPLE")];
    r.extend(c);
    r.push(Value::str(extra));
    r
}

/// EXPLAIN of `INSERT ... VALUES` into `table`: MariaDB's one row.
pub fn insert_values(table: &str) -> ResultSet {
    let n = Value::Null;
    let mut r = vec![Value::Int(1), Value::str("INSERT"), Value::str(table), Value::str("ALL")];
    r.extend([n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n]);
    ResultSet { columns: columns(), rows: vec![r] }
}

/// EXPLAIN of a single-table UPDATE or DELETE reading `t` through
/// `access`, in MariaDB's words: a key range is `range` (a point read too,
/// never `const`), a full UPDATE scan `index` on the primary key (`ALL`
/// without one, and for DELETE), a DELETE without WHERE or LIMIT
/// "Deleting all rows"; "Using where" whenever there is a WHERE.
#[allow(clippy::too_many_arguments)]
pub fn single_dml(
    txn: &fractaldb::Txn,
    t: &crate::table::Table,
    alias: &str,
    access: &crate::plan::Access,
    conj: &[&Expr],
    delete: bool,
    has_where: bool,
    sorted: bool,
    delete_all: bool,
) -> SqlResult<ResultSet> {
    let def = &t.def;
    let count = t.row_estimate(txn)?;
    let n = || Value::Null;
    if delete_all {
        let mut r = vec![Value::Int(1), Value::str("SIMPLE")];
        r.extend([n(), n(), n(), n(), n(), n(), Value::UInt(count), Value::str("Deleting all rows")]);
        return Ok(ResultSet { columns: columns(), rows: vec![r] });
    }
    let ix_name = |i: usize| -> String {
        let ix = &def.indexes[i];
        if ix.kind == IndexKind::Primary {
            "PRIMARY".to_string()
        } else {
            ix.name.clone()
        }
    };
    let possible = possible_keys(def, conj, 0);
    let possible_v = if possible.is_empty() {
        n()
    } else {
        Value::str(possible.iter().map(|&i| ix_name(i)).collect::<Vec<_>>().join(","))
    };
    let (ty, key, parts, rows) = match access.index {
        Some(ix) if access.eq_parts > 0 || access.has_range => {
            let d = &def.indexes[ix];
            let point = access.eq_parts == d.parts.len() && d.kind != IndexKind::Plain && !access.has_range;
            (
                "range",
                Some(ix),
                access.eq_parts + usize::from(access.has_range),
                if point { 1 } else { count },
            )
        }
        _ => match def.primary {
            Some(p) if !delete => ("index", Some(p), def.indexes[p].parts.len(), count),
            _ => ("ALL", None, 0, count),
        },
    };
    let mut extra = Vec::new();
    if has_where {
        extra.push("Using where");
    }
    if sorted {
        extra.push("Using filesort");
    }
    let row = row(
        [
            Value::str(alias),
            Value::str(ty),
            possible_v,
            key.map_or_else(n, |i| Value::str(ix_name(i))),
            key.map_or_else(n, |i| Value::str(key_len(def, i, parts).to_string())),
            n(),
            Value::UInt(rows),
        ],
        &extra.join("; "),
    );
    Ok(ResultSet { columns: columns(), rows: vec![row] })
}

/// A query without tables.
pub fn no_tables(extra: &str) -> ResultSet {
    let n = Value::Null;
    ResultSet {
        columns: columns(),
        rows: vec![row([n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n], extra)],
    }
}

/// The plan's rows. `conj`: every condition (WHERE and ON) for
/// possible_keys; `count_only`: COUNT(*) answered from the exact row count.
pub fn plan(
    txn: &fractaldb::Txn,
    rels: &[Rel],
    steps: &[Step],
    conj: &[&Expr],
    count_only: bool,
    needed: &[Option<Vec<bool>>],
) -> SqlResult<ResultSet> {
    if count_only {
        return Ok(no_tables("Select tables optimized away"));
    }
    let mut offs = Vec::new();
    let mut off = 0;
    for r in rels {
        offs.push(off);
        off += r.width();
    }
    let single = steps.len() == 1;
    let mut out = Vec::new();
    for st in steps {
        let s = |x: &str| Value::str(x);
        match &rels[st.rel] {
            Rel::Rows { alias, view } => {
                let extra = if st.hashed {
                    "Using where; Using join buffer (flat, BNLH join)"
                } else if st.joined {
                    "Using where; Using join buffer (flat, BNL join)"
                } else if st.filtered {
                    "Using where"
                } else {
                    ""
                };
                let ty = if st.hashed { "hash_ALL" } else { "ALL" };
                out.push(row(
                    [
                        s(alias),
                        s(ty),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::UInt(view.rows.len() as u64),
                    ],
                    extra,
                ));
            }
            Rel::Table(src) => {
                let t = &src.table;
                let def = &t.def;
                let ix_name = |i: usize| -> String {
                    let ix = &def.indexes[i];
                    if ix.kind == IndexKind::Primary {
                        "PRIMARY".to_string()
                    } else {
                        ix.name.clone()
                    }
                };
                let possible = possible_keys(def, conj, offs[st.rel]);
                let possible_v = if possible.is_empty() {
                    Value::Null
                } else {
                    s(&possible.iter().map(|&i| ix_name(i)).collect::<Vec<_>>().join(","))
                };
                let count = t.row_estimate(txn)?;
                let (ty, key, parts, refs, rows): (&str, Option<usize>, usize, Option<String>, u64) =
                    if let Some((ix, refs)) = &st.probe {
                        let whole = refs.len() == def.indexes[*ix].parts.len()
                            && def.indexes[*ix].kind != IndexKind::Plain;
                        let ty = if whole { "eq_ref" } else { "ref" };
                        (ty, Some(*ix), refs.len(), Some(refs.join(",")), if whole { 1 } else { count })
                    } else {
                        match &st.access {
                            Some(a) if a.index.is_some() => {
                                let ix = a.index.expect("checked");
                                let d = &def.indexes[ix];
                                let whole = a.eq_parts == d.parts.len() && d.kind != IndexKind::Plain;
                                let consts = vec!["const"; a.eq_parts].join(",");
                                // `choose` leaves a lone primary-key range unestimated.
                                let est =
                                    a.rows.or_else(|| crate::plan::estimate_rows(txn, t, a)).unwrap_or(count);
                                if a.eq_parts == 0 && !a.has_range {
                                    // A whole index read in its order (ORDER BY ... LIMIT):
                                    // the rows read until the LIMIT is met.
                                    ("index", Some(ix), d.parts.len(), None, est)
                                } else if whole && !a.has_range {
                                    (
                                        if single { "const" } else { "eq_ref" },
                                        Some(ix),
                                        a.eq_parts,
                                        Some(consts),
                                        1,
                                    )
                                } else if a.has_range {
                                    ("range", Some(ix), a.eq_parts + 1, None, est)
                                } else {
                                    ("ref", Some(ix), a.eq_parts, Some(consts), est)
                                }
                            }
                            _ if st.hashed => ("hash_ALL", None, 0, None, count),
                            _ => ("ALL", None, 0, None, count),
                        }
                    };
                let key_len = key.map(|i| key_len(def, i, parts));
                let mut extra: Vec<&str> = Vec::new();
                // A range's bounds are checked again on each row read.
                if (st.filtered && ty != "const" && ty != "eq_ref") || ty == "range" {
                    extra.push("Using where");
                }
                let covering = match (&st.probe, &st.access) {
                    (Some((ix, _)), _) => needed
                        .get(st.rel)
                        .and_then(|n| n.as_deref())
                        .is_some_and(|n| crate::plan::covers(t, *ix, n)),
                    (None, Some(a)) => a.covering,
                    _ => false,
                };
                if covering {
                    extra.push("Using index");
                }
                if st.hashed {
                    extra.push("Using join buffer (flat, BNLH join)");
                } else if st.joined && key.is_none() {
                    extra.push("Using join buffer (flat, BNL join)");
                }
                out.push(row(
                    [
                        s(&src.alias),
                        s(ty),
                        possible_v,
                        key.map_or(Value::Null, |i| s(&ix_name(i))),
                        key_len.map_or(Value::Null, |l| s(&l.to_string())),
                        refs.map_or(Value::Null, |r| s(&r)),
                        Value::UInt(rows),
                    ],
                    &extra.join("; "),
                ));
            }
        }
    }
    Ok(ResultSet { columns: columns(), rows: out })
}

/// Indexes whose first column some condition compares.
fn possible_keys(def: &crate::catalog::TableDef, conj: &[&Expr], off: usize) -> Vec<usize> {
    let mut cols = Vec::new();
    for e in conj {
        let mut tested = |x: &Expr| {
            if let Expr::Col(c) = x {
                if *c >= off && *c < off + def.columns.len() {
                    cols.push(*c - off);
                }
            }
        };
        match e {
            Expr::Cmp(_, _, a, b) => {
                tested(a);
                tested(b);
            }
            Expr::Between(x, ..) | Expr::In(x, ..) => tested(x),
            _ => {}
        }
    }
    (0..def.indexes.len())
        .filter(|&i| {
            !def.indexes[i].disabled && def.indexes[i].parts.first().is_some_and(|p| cols.contains(&p.col))
        })
        .collect()
}

/// MySQL's key_len: the bytes of the index parts used (a nullable part
/// one more, a variable-length one two more).
fn key_len(def: &crate::catalog::TableDef, ix: usize, parts: usize) -> usize {
    let mut n = 0;
    for p in def.indexes[ix].parts.iter().take(parts) {
        let c = &def.columns[p.col];
        n += match &c.ty {
            SqlType::Int { bytes, .. } => *bytes as usize,
            SqlType::Decimal { precision, scale, .. } => {
                let dig = |d: u8| (d as usize / 9) * 4 + [0, 1, 1, 2, 2, 3, 3, 4, 4, 4][d as usize % 9];
                dig(precision - scale) + dig(*scale)
            }
            SqlType::Float { .. } => 4,
            SqlType::Double { .. } => 8,
            SqlType::Bit { bits } => (*bits as usize).div_ceil(8),
            SqlType::Str { kind, len, coll } => {
                let per = match coll.charset() {
                    Charset::Utf8mb4 => 4,
                    Charset::Utf8mb3 => 3,
                    Charset::Latin1 | Charset::Binary => 1,
                };
                let chars = p.prefix.map_or(*len as usize, |x| x as usize);
                chars * per + if matches!(kind, StrKind::Fixed) { 0 } else { 2 }
            }
            SqlType::Enum { values, .. } => {
                if values.len() > 255 {
                    2
                } else {
                    1
                }
            }
            SqlType::Set { values, .. } => values.len().div_ceil(8).max(1),
            SqlType::Date => 3,
            SqlType::Time { fsp } => 3 + (*fsp as usize).div_ceil(2),
            SqlType::DateTime { fsp } => 5 + (*fsp as usize).div_ceil(2),
            SqlType::Timestamp { fsp } => 4 + (*fsp as usize).div_ceil(2),
            SqlType::Year => 1,
            SqlType::Json => 0,
        } + usize::from(c.nullable);
    }
    n
}
