//! Errors as MySQL reports them: a number, a SQLSTATE and a message.
//!
//! Every failure a SQL statement can meet becomes a [`SqlError`] carrying the
//! number MySQL/MariaDB would report for it, so clients that branch on
//! numbers (1062 duplicate key, 1205 lock wait timeout, ...) work unchanged.

use std::fmt;

/// A failed statement, as MySQL would report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    /// MySQL's error number (`ER_*`), e.g. 1062.
    pub code: u16,
    /// The five-character SQLSTATE, e.g. "23000".
    pub state: &'static str,
    pub message: String,
}

pub type SqlResult<T> = Result<T, SqlError>;

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

impl std::error::Error for SqlError {}

impl SqlError {
    pub fn new(code: u16, state: &'static str, message: impl Into<String>) -> SqlError {
        SqlError { code, state, message: message.into() }
    }

    /// 1064: the statement does not parse.
    pub fn syntax(detail: impl fmt::Display) -> SqlError {
        SqlError::new(
            1064,
            "42000",
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near {detail}"
            ),
        )
    }

    /// 1235: a feature this server does not have.
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(1235, "42000", format!("This version of MariaDB doesn't yet support '{what}'"))
    }

    /// 1046: a table name without a database while none is selected.
    pub fn no_db() -> SqlError {
        SqlError::new(1046, "3D000", "No database selected")
    }

    /// 1049
    pub fn unknown_db(db: &str) -> SqlError {
        SqlError::new(1049, "42000", format!("Unknown database '{db}'"))
    }

    /// 1007
    pub fn db_exists(db: &str) -> SqlError {
        SqlError::new(1007, "HY000", format!("Can't create database '{db}'; database exists"))
    }

    /// 1008
    pub fn db_drop_missing(db: &str) -> SqlError {
        SqlError::new(1008, "HY000", format!("Can't drop database '{db}'; database doesn't exist"))
    }

    /// 1146
    pub fn no_such_table(db: &str, table: &str) -> SqlError {
        SqlError::new(1146, "42S02", format!("Table '{db}.{table}' doesn't exist"))
    }

    /// 1051
    pub fn unknown_table(db: &str, table: &str) -> SqlError {
        SqlError::new(1051, "42S02", format!("Unknown table '{db}.{table}'"))
    }

    /// 1050
    pub fn table_exists(table: &str) -> SqlError {
        SqlError::new(1050, "42S01", format!("Table '{table}' already exists"))
    }

    /// 1054
    pub fn unknown_column(col: &str, place: &str) -> SqlError {
        SqlError::new(1054, "42S22", format!("Unknown column '{col}' in '{}'", clause_name(place)))
    }

    /// 1052
    pub fn ambiguous_column(col: &str, place: &str) -> SqlError {
        SqlError::new(1052, "23000", format!("Column '{col}' in {} is ambiguous", clause_name(place)))
    }

    /// 1060
    pub fn dup_column(col: &str) -> SqlError {
        SqlError::new(1060, "42S21", format!("Duplicate column name '{col}'"))
    }

    /// 1061
    pub fn dup_key_name(name: &str) -> SqlError {
        SqlError::new(1061, "42000", format!("Duplicate key name '{name}'"))
    }

    /// 1062: `entry` is the key's value as MySQL prints it ("1-abc").
    pub fn dup_entry(entry: &str, key: &str) -> SqlError {
        SqlError::new(1062, "23000", format!("Duplicate entry '{entry}' for key '{key}'"))
    }

    /// 1048
    pub fn null_column(col: &str) -> SqlError {
        SqlError::new(1048, "23000", format!("Column '{col}' cannot be null"))
    }

    /// 1364
    pub fn no_default(col: &str) -> SqlError {
        SqlError::new(1364, "HY000", format!("Field '{col}' doesn't have a default value"))
    }

    /// 1136
    pub fn column_count(row: usize) -> SqlError {
        SqlError::new(1136, "21S01", format!("Column count doesn't match value count at row {row}"))
    }

    /// 1264
    pub fn out_of_range(col: &str, row: usize) -> SqlError {
        SqlError::new(1264, "22003", format!("Out of range value for column '{col}' at row {row}"))
    }

    /// 1406
    pub fn data_too_long(col: &str, row: usize) -> SqlError {
        SqlError::new(1406, "22001", format!("Data too long for column '{col}' at row {row}"))
    }

    /// 1366
    pub fn incorrect_value(kind: &str, value: &str, col: &str, row: usize) -> SqlError {
        SqlError::new(
            1366,
            "22007",
            format!("Incorrect {kind} value: '{value}' for column `{col}` at row {row}"),
        )
    }

    /// 1292
    pub fn truncated_wrong_value(kind: &str, value: &str) -> SqlError {
        SqlError::new(1292, "22007", format!("Truncated incorrect {kind} value: '{value}'"))
    }

    /// 1690
    pub fn value_out_of_range(kind: &str, expr: &str) -> SqlError {
        SqlError::new(1690, "22003", format!("{kind} value is out of range in '{expr}'"))
    }

    /// 1305
    pub fn no_such_function(name: &str) -> SqlError {
        SqlError::new(1305, "42000", format!("FUNCTION {name} does not exist"))
    }

    /// 1582 / 1318: wrong argument count for a native function.
    pub fn wrong_arg_count(name: &str) -> SqlError {
        SqlError::new(
            1582,
            "42000",
            format!("Incorrect parameter count in the call to native function '{name}'"),
        )
    }

    /// 1111
    pub fn invalid_group_use() -> SqlError {
        SqlError::new(1111, "HY000", "Invalid use of group function")
    }

    /// 1193
    pub fn unknown_variable(name: &str) -> SqlError {
        SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
    }

    /// 1205
    pub fn table_def_changed() -> SqlError {
        SqlError::new(1412, "HY000", "Table definition has changed, please retry transaction")
    }

    pub fn lock_wait_timeout() -> SqlError {
        SqlError::new(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction")
    }

    /// 1213
    pub fn deadlock() -> SqlError {
        SqlError::new(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction")
    }

    /// 1020: a write conflict at repeatable read (the row changed since the
    /// snapshot), as MariaDB's `innodb_snapshot_isolation` reports it.
    pub fn record_changed() -> SqlError {
        SqlError::new(1020, "HY000", "Record has changed since last read in table")
    }

    /// 1317
    pub fn interrupted() -> SqlError {
        SqlError::new(1317, "70100", "Query execution was interrupted")
    }

    /// 1105: anything without a number of its own.
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(1105, "HY000", message)
    }

    /// 1030: the storage engine failed.
    pub fn engine(message: impl fmt::Display) -> SqlError {
        SqlError::new(1030, "HY000", format!("Got error from storage engine: {message}"))
    }

    /// 1059
    pub fn ident_too_long(name: &str) -> SqlError {
        SqlError::new(1059, "42000", format!("Identifier name '{name}' is too long"))
    }

    /// 1365
    pub fn division_by_zero() -> SqlError {
        SqlError::new(1365, "22012", "Division by 0")
    }

    /// 1068
    pub fn multiple_primary_keys() -> SqlError {
        SqlError::new(1068, "42000", "Multiple primary key defined")
    }

    /// 1072
    pub fn key_column_missing(col: &str) -> SqlError {
        SqlError::new(1072, "42000", format!("Key column '{col}' doesn't exist in table"))
    }

    /// 1075
    pub fn bad_auto_increment() -> SqlError {
        SqlError::new(
            1075,
            "42000",
            "Incorrect table definition; there can be only one auto column and it must be defined as a key",
        )
    }

    /// 1091
    pub fn cant_drop(name: &str) -> SqlError {
        SqlError::new(1091, "42000", format!("Can't DROP INDEX `{name}`; check that it exists"))
    }

    /// 1065
    pub fn empty_query() -> SqlError {
        SqlError::new(1065, "42000", "Query was empty")
    }

    /// 1179: a statement not allowed inside a transaction.
    pub fn in_transaction() -> SqlError {
        SqlError::new(1179, "25000", "You are not allowed to execute this command in a transaction")
    }

    /// 1063 / 1074: a column type the engine cannot store as asked.
    pub fn wrong_field_spec(col: &str) -> SqlError {
        SqlError::new(1063, "42000", format!("Incorrect column specifier for column '{col}'"))
    }

    /// 1426 (MariaDB 10.11's text does not name the precision given)
    pub fn too_big_precision(_p: u64, col: &str, max: u64) -> SqlError {
        SqlError::new(1426, "42000", format!("Too big precision specified for '{col}'. Maximum is {max}"))
    }

    /// 1427
    pub fn scale_bigger_than_precision(col: &str) -> SqlError {
        SqlError::new(
            1427,
            "42000",
            format!("For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{col}')"),
        )
    }

    /// 1074
    pub fn too_big_field_length(col: &str, max: u64) -> SqlError {
        SqlError::new(
            1074,
            "42000",
            format!("Column length too big for column '{col}' (max = {max}); use BLOB or TEXT instead"),
        )
    }

    /// 1102
    pub fn wrong_db_name(db: &str) -> SqlError {
        SqlError::new(1102, "42000", format!("Incorrect database name '{db}'"))
    }

    /// 1103
    pub fn wrong_table_name(t: &str) -> SqlError {
        SqlError::new(1103, "42000", format!("Incorrect table name '{t}'"))
    }

    /// 1166
    pub fn wrong_column_name(c: &str) -> SqlError {
        SqlError::new(1166, "42000", format!("Incorrect column name '{c}'"))
    }

    /// 1113
    pub fn table_needs_column() -> SqlError {
        SqlError::new(1113, "42000", "A table must have at least 1 column")
    }

    /// 1067
    pub fn invalid_default(col: &str) -> SqlError {
        SqlError::new(1067, "42000", format!("Invalid default value for '{col}'"))
    }

    /// 1071
    pub fn key_too_long(max: usize) -> SqlError {
        SqlError::new(1071, "42000", format!("Specified key was too long; max key length is {max} bytes"))
    }

    /// 1170
    pub fn blob_key_without_length(col: &str) -> SqlError {
        SqlError::new(
            1170,
            "42000",
            format!("BLOB/TEXT column '{col}' used in key specification without a key length"),
        )
    }

    /// 1301: a result larger than max_allowed_packet.
    pub fn too_large(what: &str, limit: u64) -> SqlError {
        SqlError::new(
            1301,
            "HY000",
            format!("Result of {what} was larger than max_allowed_packet ({limit}) - truncated"),
        )
    }

    /// 1153
    pub fn packet_too_large() -> SqlError {
        SqlError::new(1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
    }

    /// 1242
    pub fn subquery_rows() -> SqlError {
        SqlError::new(1242, "21000", "Subquery returns more than 1 row")
    }

    /// 1241
    pub fn operand_columns(n: usize) -> SqlError {
        SqlError::new(1241, "21000", format!("Operand should contain {n} column(s)"))
    }

    /// 1222
    pub fn union_columns() -> SqlError {
        SqlError::new(1222, "21000", "The used SELECT statements have a different number of columns")
    }

    /// 1054 for ORDER BY / GROUP BY positions.
    pub fn unknown_position(pos: i64, place: &str) -> SqlError {
        SqlError::unknown_column(&pos.to_string(), place)
    }

    /// 1109
    pub fn unknown_table_in(t: &str, place: &str) -> SqlError {
        SqlError::new(1109, "42S02", format!("Unknown table '{t}' in {place}"))
    }

    /// 1066
    pub fn nonunique_table(t: &str) -> SqlError {
        SqlError::new(1066, "42000", format!("Not unique table/alias: '{t}'"))
    }

    /// 1366 for a string value in a numeric column (strict mode).
    pub fn incorrect_integer(value: &str, col: &str, row: usize) -> SqlError {
        SqlError::incorrect_value("integer", value, col, row)
    }

    /// 1525
    pub fn incorrect_datetime_value(kind: &str, value: &str) -> SqlError {
        SqlError::new(1525, "HY000", format!("Incorrect {kind} value: '{value}'"))
    }

    /// 1292 for a bad date/time literal stored into a column.
    pub fn incorrect_datetime_for_column(kind: &str, value: &str, col: &str, row: usize) -> SqlError {
        SqlError::new(
            1292,
            "22007",
            format!("Incorrect {kind} value: '{value}' for column `{col}` at row {row}"),
        )
    }

    /// 1265
    pub fn data_truncated(col: &str, row: usize) -> SqlError {
        SqlError::new(1265, "01000", format!("Data truncated for column '{col}' at row {row}"))
    }

    /// 1231
    pub fn wrong_value_for_var(var: &str, value: &str) -> SqlError {
        SqlError::new(1231, "42000", format!("Variable '{var}' can't be set to the value of '{value}'"))
    }

    /// 1193 is for unknown variables; 1238 for read-only ones.
    pub fn read_only_var(var: &str) -> SqlError {
        SqlError::new(1238, "HY000", format!("Variable '{var}' is a read only variable"))
    }

    /// 1181: ROLLBACK TO an unknown savepoint.
    pub fn no_savepoint(name: &str) -> SqlError {
        SqlError::new(1305, "42000", format!("SAVEPOINT {name} does not exist"))
    }

    /// 1146-like for views etc. is not needed yet; 1347 "is not VIEW".
    pub fn not_a_view(db: &str, name: &str) -> SqlError {
        SqlError::new(1347, "HY000", format!("'{db}.{name}' is not of type 'VIEW'"))
    }
}

/// Maps an engine error to MySQL's number for it.
impl From<fractaldb::Error> for SqlError {
    fn from(e: fractaldb::Error) -> SqlError {
        use fractaldb::Error as E;
        match e {
            // A KILL ends the statement's lock wait early, as a timeout
            // (see `fractaldb::set_thread_interrupt`): 1317, not 1205.
            E::LockTimeout { .. } if fractaldb::interrupt_requested() => SqlError::interrupted(),
            E::LockTimeout { .. } => SqlError::lock_wait_timeout(),
            E::Deadlock { .. } => SqlError::deadlock(),
            E::WriteConflict { .. } => SqlError::record_changed(),
            E::NoSpace { .. } => {
                SqlError::new(1021, "HY000", "Disk full; waiting for someone to free some space")
            }
            E::TooLarge { what, len, limit } => SqlError::new(
                1030,
                "HY000",
                format!("Got error from storage engine: {what} of {len} bytes is larger than {limit}"),
            ),
            E::LockMemoryFull { .. } => {
                SqlError::new(1206, "HY000", "The total number of locks exceeds the lock table size")
            }
            E::ReadOnly(m) => SqlError::new(1036, "HY000", format!("Table is read only: {m}")),
            other => SqlError::engine(other),
        }
    }
}

/// A note or warning a statement leaves for SHOW WARNINGS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// "Note", "Warning" or "Error".
    pub level: &'static str,
    pub code: u16,
    pub message: String,
}

impl Warning {
    pub fn warn(code: u16, message: impl Into<String>) -> Warning {
        Warning { level: "Warning", code, message: message.into() }
    }

    pub fn note(code: u16, message: impl Into<String>) -> Warning {
        Warning { level: "Note", code, message: message.into() }
    }

    /// The warning non-strict modes give where strict mode gives `e`.
    pub fn from_error(e: &SqlError) -> Warning {
        Warning { level: "Warning", code: e.code, message: e.message.clone() }
    }
}

/// The clause MariaDB 10.11 names in 1054/1052 messages ("Unknown column
/// 'x' in 'WHERE'"), from the binder's place names (MySQL's older
/// "where clause", "field list", ...). Other places pass through.
fn clause_name(place: &str) -> &str {
    match place {
        "field list" => "SELECT",
        "where clause" => "WHERE",
        "on clause" => "ON",
        "group statement" => "GROUP BY",
        "order clause" => "ORDER BY",
        "having clause" => "HAVING",
        "from clause" => "FROM",
        p => p,
    }
}
