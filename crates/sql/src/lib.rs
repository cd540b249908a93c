//! fractaldb-sql: MySQL's dialect of SQL over tables kept in fractaldb.
//!
//! Layers, top down (see `docs/ARCHITECTURE.md`, "SQL"):
//! - `lex`: MySQL's lexical quirks in front of `sqlparser` (statement
//!   splitting, `/*!NNNNN ... */` comments, byte-string literals);
//! - `session`: one client's state (current database, transaction,
//!   variables) and the statement dispatcher;
//! - `ddl`, `dml`, `query`, `show`: the statement families;
//! - `expr`, `func`: expressions bound to columns, and their evaluation
//!   with MySQL's conversions;
//! - `catalog`, `table`: the schema kept in the engine, and rows and
//!   index entries written through engine transactions;
//! - `keycodec`, `rowcodec`, `collation`: the byte formats.
//!
//! ```no_run
//! use fractaldb_sql::{Database, DbOptions, Outcome};
//! let db = Database::open("/tmp/sqldb", DbOptions::default())?;
//! let mut s = db.session();
//! s.execute(b"CREATE DATABASE shop")?;
//! s.execute(b"USE shop")?;
//! s.execute(b"CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))")?;
//! s.execute(b"INSERT INTO t VALUES (1, 'a'), (2, 'b')")?;
//! if let Outcome::Rows(rs) = s.execute(b"SELECT name FROM t WHERE id = 2")? {
//!     assert_eq!(rs.rows[0][0].render(), "b");
//! }
//! drop(s);
//! db.close()?;
//! # Ok::<(), fractaldb_sql::SqlError>(())
//! ```

mod accounts;
mod alter;
mod backup;
mod bind;
mod bulk;
mod bulkload;
pub mod catalog;
mod coerce;
pub mod collation;
mod create_from;
mod cte;
mod db;
mod ddl;
mod dml;
mod engine_is;
pub mod error;
mod explain;
mod expr;
pub mod fastinsert;
mod fastupdate;
mod fk;
pub mod func;
mod group;
mod infoschema;
mod instant;
mod join;
pub mod keycodec;
pub mod lex;
pub mod loaddata;
mod maint;
mod mdl;
mod multidml;
mod online;
mod plan;
mod prepared;
mod progress;
mod query;
mod rowcodec;
mod rowformat;
mod seqengine;
mod session;
mod show;
mod sort;
mod sqlprepare;
pub mod sysvars;
mod table;
pub mod temporal;
pub mod types;
pub mod value;
mod views;
mod window;
mod xa;

pub use accounts::{client_host_name, Credentials};
pub use db::{Database, DbOptions};
pub use error::{SqlError, SqlResult};
/// The engine's progress notes (`DbOptions::engine_notes`).
pub use fractaldb::Notes as EngineNotes;
pub use online::set_build_hook;
pub use plan::{pk_lookups, range_estimates, run_rows_skipped};
pub use prepared::PreparedStatement;
pub use progress::ProgressHandle;
pub use session::{ColumnMeta, KillHandle, Outcome, ResultSet, RowSink, ServerInfo, Session};
pub use sysvars::Stat;
pub use types::{Charset, Collation, SqlType, StrKind};
pub use value::{Temporal, TemporalKind, Value};

/// The version this server reports (`SELECT VERSION()`, and the number
/// `/*!NNNNN ... */` comments are compared with): MariaDB 10.11's.
pub const SERVER_VERSION: &str = "10.11.99-fractaldb";
/// `/*!NNNNN ... */` runs when NNNNN is at most this (and is not one of
/// MySQL's own versions, see [`version_comment_runs`]).
pub const VERSION_ID: u32 = 101199;

/// Whether a `/*!NNNNN ... */` comment's text runs here, by MariaDB's rule:
/// its version is at most ours, and it is not 50700 to 99999, the versions
/// of MySQL 5.7 and later, whose syntax MariaDB does not follow (checked
/// on MariaDB 10.11: `SELECT 1 /*!50699 +5 */` gives 6, `/*!50700 +5 */`
/// and `/*!80000 +5 */` give 1, `/*!100000 +5 */` gives 6).
pub fn version_comment_runs(v: u32) -> bool {
    v <= VERSION_ID && !(50700..=99999).contains(&v)
}
