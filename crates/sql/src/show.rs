//! SHOW statements and EXPLAIN.

use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::lex::{ShowKind, ShowStmt};
use crate::session::{ColumnMeta, Outcome, ResultSet, Session};
use crate::types::{Collation, SqlType, StrKind};
use crate::value::Value;

fn text_col(name: &str) -> ColumnMeta {
    ColumnMeta::expr(name, SqlType::Str { kind: StrKind::Var, len: 64, coll: Collation::Utf8mb4GeneralCi })
}

fn like_ok(pattern: &Option<Vec<u8>>, s: &str) -> bool {
    pattern
        .as_ref()
        .is_none_or(|p| crate::collation::like(Collation::Utf8mb4GeneralCi, s.as_bytes(), p, b'\\'))
}

pub fn show(s: &mut Session, st: &ShowStmt) -> SqlResult<Outcome> {
    match st.kind {
        ShowKind::Databases => {
            let names: Vec<String> = s.inner.schema.read().dbs.keys().cloned().collect();
            let mut rows: Vec<Vec<Value>> = vec![vec![Value::str("information_schema")]];
            rows.extend(names.into_iter().filter(|n| like_ok(&st.like, n)).map(|n| vec![Value::str(n)]));
            rows.retain(|r| like_ok(&st.like, &r[0].render()));
            Ok(Outcome::Rows(ResultSet { columns: vec![text_col("Database")], rows }))
        }
        ShowKind::Tables => {
            let db = match &st.db {
                Some(d) => d.clone(),
                None => s.db.clone().ok_or_else(SqlError::no_db)?,
            };
            if !s.inner.schema.read().dbs.contains_key(&db) {
                return Err(SqlError::unknown_db(&db));
            }
            let names: Vec<String> = s
                .inner
                .schema
                .read()
                .tables
                .keys()
                .filter(|(d, _)| *d == db)
                .map(|(_, t)| t.clone())
                .filter(|t| like_ok(&st.like, t))
                .collect();
            let mut columns = vec![text_col(&format!("Tables_in_{db}"))];
            if st.full {
                columns.push(text_col("Table_type"));
            }
            let rows = names
                .into_iter()
                .map(|n| {
                    let mut r = vec![Value::str(n)];
                    if st.full {
                        r.push(Value::str("BASE TABLE"));
                    }
                    r
                })
                .collect();
            Ok(Outcome::Rows(ResultSet { columns, rows }))
        }
        #[allow(unreachable_patterns)]
        _ => Err(SqlError::unsupported("this SHOW statement")),
    }
}

pub fn explain(_s: &mut Session, _stmt: &ast::Statement) -> SqlResult<Outcome> {
    Err(SqlError::unsupported("EXPLAIN"))
}
