//! Table maintenance: OPTIMIZE, ANALYZE, CHECK and REPAIR TABLE, and the
//! index statistics ANALYZE keeps.
//!
//! Each statement answers one result set of (Table, Op, Msg_type,
//! Msg_text) rows, a table at a time, as MariaDB does: a table that cannot
//! be opened gives an `Error` row and `status | Operation failed`, and the
//! statement goes on with the next table.
//!
//! OPTIMIZE runs `Env::optimize` on each dictionary of the table (the
//! primary key's, then each secondary index's, then the row count's):
//! every buffered message goes down to the leaves, underfull nodes are
//! merged on the way, and a checkpoint gives the freed blocks back. It
//! takes no table lock: other sessions read and write while it runs. The
//! session's PROCESSLIST State says how far it is, in TokuDB's words
//! ("Optimization of index 1 of 3 about 40% done"), and KILL QUERY stops it
//! between two steps (what was flushed stays flushed).
//!
//! ANALYZE reads every index in key order once and counts, for each prefix
//! of its declared columns, the entries whose prefix holds no NULL and how
//! many distinct prefixes they have. It keeps, in the table's status
//! dictionary under `stat` + the index's dictionary name (so an index
//! rebuilt into a new dictionary starts without statistics), the table's
//! row count and each prefix's average frequency (entries per distinct
//! value) in MariaDB's form, a fixed-point number with 4 decimals. SHOW
//! INDEX and INFORMATION_SCHEMA.STATISTICS show a prefix's cardinality as
//! MariaDB derives it from its engine-independent statistics: the row
//! count divided by the average frequency, truncated.

use fractaldb::{Dictionary, Txn};

use crate::catalog::{IndexDef, IndexKind};
use crate::error::{SqlError, SqlResult};
use crate::lex::{MaintenanceOp, TableName};
use crate::session::{Outcome, ResultSet, Session};
use crate::table::Table;
use crate::value::Value;

/// The status dictionary's key of an index's statistics.
fn stats_key(ix: &IndexDef) -> Vec<u8> {
    let mut k = b"stat".to_vec();
    k.extend_from_slice(ix.dict.as_bytes());
    k
}

/// Average frequencies are kept as MariaDB keeps them: DECIMAL(12,4).
const AVG_SCALE: u64 = 10_000;

/// The cardinality of each prefix of index `ix` per the statistics the
/// last ANALYZE stored, or `None` where it stored none (for the index, or
/// for a prefix whose entries were all NULL).
pub(crate) fn cardinality(txn: &Txn, t: &Table, ix: &IndexDef) -> SqlResult<Vec<Option<u64>>> {
    let none = vec![None; ix.parts.len()];
    let Some(v) = txn.get(&t.status, &stats_key(ix))? else { return Ok(none) };
    let nums: Vec<u64> =
        v.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    // Stored as the row count, then one average frequency per part.
    if nums.len() != ix.parts.len() + 1 || v.len() % 8 != 0 {
        return Ok(none);
    }
    let rows = nums[0];
    Ok(nums[1..]
        .iter()
        .map(|&avg| (avg != 0).then(|| (rows as u128 * AVG_SCALE as u128 / avg as u128) as u64))
        .collect())
}

/// For each prefix of `ix`'s columns: (entries with no NULL in it,
/// distinct values among them), read from `dict` in key order.
fn count_prefixes(
    s: &Session,
    txn: &Txn,
    t: &Table,
    ix: &IndexDef,
    dict: &Dictionary,
) -> SqlResult<Vec<(u64, u64)>> {
    let parts: Vec<_> = ix.parts.iter().map(|p| (&t.def.columns[p.col].ty, p.desc)).collect();
    let mut counts = vec![(0u64, 0u64); parts.len()];
    // The previous key, where each of its parts ended, and how many of its
    // leading parts were not NULL.
    let (mut prev, mut prev_ends, mut prev_full) = (Vec::new(), Vec::new(), 0usize);
    for (n, kv) in txn.range(dict, None, None, false).enumerate() {
        if n % 4096 == 4095 {
            s.check_killed()?;
        }
        crate::progress::examined();
        let (key, _) = kv?;
        let mut buf = &key[..];
        let mut ends = Vec::with_capacity(parts.len());
        let mut full = 0;
        for &(ty, desc) in &parts {
            let v = crate::keycodec::decode_part(&mut buf, ty, desc)?;
            if full == ends.len() && !matches!(v, Some(Value::Null)) {
                full += 1;
            }
            ends.push(key.len() - buf.len());
        }
        for j in 0..full {
            counts[j].0 += 1;
            // Keys come in order and equal values encode alike (text as its
            // collation's sort key), so equal prefixes are neighbours.
            if j >= prev_full || prev[..prev_ends[j]] != key[..ends[j]] {
                counts[j].1 += 1;
            }
        }
        (prev, prev_ends, prev_full) = (key, ends, full);
    }
    Ok(counts)
}

/// ANALYZE TABLE on one table: counts each index's prefixes and stores
/// the statistics (see the module comment).
fn analyze(s: &mut Session, t: &Table) -> SqlResult<()> {
    s.in_txn(true, |s, txn| {
        let rows = t.row_count_settled(txn, &s.inner.env)?;
        for (i, ix) in t.def.indexes.iter().enumerate() {
            let dict = match (&ix.kind, &t.sec[i]) {
                // Stale until ENABLE KEYS (`IndexDef::disabled`).
                _ if ix.disabled => continue,
                (IndexKind::Primary, _) => &t.main,
                (_, Some(d)) => d,
                (_, None) => continue,
            };
            let mut v = rows.to_le_bytes().to_vec();
            for (entries, distinct) in count_prefixes(s, txn, t, ix, dict)? {
                // MariaDB's avg_frequency: entries / distinct, rounded to 4
                // decimals (0: no entry without NULL, which it keeps as NULL).
                let avg = match distinct {
                    0 => 0,
                    d => ((entries as u128 * AVG_SCALE as u128 * 2 + d as u128) / (2 * d as u128)) as u64,
                };
                v.extend_from_slice(&avg.to_le_bytes());
            }
            txn.put(&t.status, &stats_key(ix), &v)?;
        }
        Ok(())
    })
}

/// OPTIMIZE TABLE on one table (see the module comment). Fails with 1317
/// when killed.
fn optimize(s: &Session, t: &Table) -> SqlResult<()> {
    let dicts: Vec<&Dictionary> = std::iter::once(&t.main).chain(t.sec.iter().flatten()).collect();
    let n = dicts.len();
    for (i, d) in dicts.into_iter().chain(std::iter::once(&t.status)).enumerate() {
        let done = s.inner.env.optimize(d, &mut |share| {
            if i < n {
                crate::progress::optimizing(i + 1, n, share);
            }
            s.check_killed().is_ok()
        })?;
        if !done {
            return Err(SqlError::interrupted());
        }
    }
    Ok(())
}

/// What CHECK TABLE finds: the first dictionary that fails its check.
fn check(t: &Table) -> String {
    for d in std::iter::once(&t.main).chain(t.sec.iter().flatten()).chain(std::iter::once(&t.status)) {
        if let Err(e) = d.check() {
            return format!("Corrupt: {e}");
        }
    }
    "OK".to_string()
}

/// Runs a maintenance statement on each of `tables` in turn.
pub(crate) fn run(
    s: &mut Session,
    op: MaintenanceOp,
    tables: Vec<TableName>,
    persistent: bool,
) -> SqlResult<Outcome> {
    let opname = match op {
        MaintenanceOp::Optimize => "optimize",
        MaintenanceOp::Check => "check",
        MaintenanceOp::Analyze => "analyze",
        MaintenanceOp::Repair => "repair",
        MaintenanceOp::Checksum => return Err(SqlError::unsupported("CHECKSUM TABLE")),
    };
    let text = |n: &str| {
        crate::session::ColumnMeta::expr(
            n,
            crate::types::SqlType::Str {
                kind: crate::types::StrKind::Var,
                len: 255,
                coll: crate::types::Collation::Utf8mb4GeneralCi,
            },
        )
    };
    let mut rows = Vec::new();
    for t in tables {
        let db = t.db.clone().or_else(|| s.db.clone()).ok_or_else(SqlError::no_db)?;
        let name = format!("{db}.{}", t.name);
        s.check_table("SELECT", &db, &t.name)?;
        s.check_table("INSERT", &db, &t.name)?;
        let row = |kind: &str, msg: &str| {
            vec![Value::str(&name), Value::str(opname), Value::str(kind), Value::str(msg)]
        };
        let tab = match s.inner.table(&db, &t.name) {
            Ok(tab) => tab,
            Err(e) => {
                rows.push(row("Error", &e.message));
                rows.push(row("status", "Operation failed"));
                continue;
            }
        };
        match op {
            MaintenanceOp::Check => rows.push(row("status", &check(&tab))),
            MaintenanceOp::Repair => {
                // As MariaDB answers for InnoDB: there is nothing to repair
                // that CHECK TABLE would not report.
                rows.push(row("note", "The storage engine for the table doesn't support repair"));
            }
            MaintenanceOp::Optimize => {
                optimize(s, &tab)?;
                rows.push(row("status", "OK"));
            }
            MaintenanceOp::Analyze => {
                analyze(s, &tab)?;
                if persistent {
                    rows.push(row("status", "Engine-independent statistics collected"));
                }
                rows.push(row("status", "OK"));
            }
            MaintenanceOp::Checksum => unreachable!("refused above"),
        }
    }
    Ok(Outcome::Rows(ResultSet {
        columns: vec![text("Table"), text("Op"), text("Msg_type"), text("Msg_text")],
        rows,
    }))
}
