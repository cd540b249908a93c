//! Server-side prepared statements. PREPARE parses the statement once in
//! the SQL layer (`Session::prepare`: its `?` become numbered parameters)
//! and asks it for the result's columns without running the query
//! (`Session::describe_prepared`); EXECUTE decodes the binary parameters
//! into values and runs the parsed statement with them
//! (`Session::execute_prepared`): no SQL text is built and nothing is
//! parsed again.

use fractaldb_sql::{PreparedStatement, Value};

use crate::proto::{self, Cursor};

/// A prepared statement.
pub struct Prepared {
    pub stmt: PreparedStatement,
    /// The statement's first keyword, upper case (what bulk execute
    /// accepts: INSERT, REPLACE, UPDATE, DELETE).
    pub verb: String,
    /// Each parameter's type and unsigned flag, from the last EXECUTE that
    /// bound them. Clients send the types only when they change (sysbench
    /// sends them once): they are kept across executions.
    pub types: Option<Vec<(u8, bool)>>,
    /// COM_STMT_SEND_LONG_DATA's pieces, per parameter, until the next
    /// EXECUTE or RESET.
    pub long_data: Vec<Option<Vec<u8>>>,
}

impl Prepared {
    pub fn new(stmt: PreparedStatement, sql: &[u8]) -> Prepared {
        let n = stmt.param_count();
        Prepared { stmt, verb: first_keyword(sql), types: None, long_data: vec![None; n] }
    }

    /// Whether COM_STMT_BULK_EXECUTE may run it: MariaDB's
    /// CF_PS_ARRAY_BINDING_SAFE statements (no result set per row).
    pub fn bulk_safe(&self) -> bool {
        matches!(self.verb.as_str(), "INSERT" | "REPLACE" | "UPDATE" | "DELETE")
    }

    /// How many parameters EXECUTE must bind.
    pub fn params(&self) -> usize {
        self.long_data.len()
    }
}

/// The first word of a statement, upper case, after spaces and comments
/// (`/*! ... */` executable comments are read into, as the parser does).
fn first_keyword(sql: &[u8]) -> String {
    let mut i = 0;
    loop {
        while i < sql.len() && sql[i].is_ascii_whitespace() {
            i += 1;
        }
        let rest = &sql[i..];
        if rest.starts_with(b"/*!") || rest.starts_with(b"/*M!") {
            i += if rest[2] == b'!' { 3 } else { 4 };
            while i < sql.len() && sql[i].is_ascii_digit() {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            match rest.windows(2).position(|w| w == b"*/") {
                Some(e) => i += e + 2,
                None => return String::new(),
            }
        } else if rest.starts_with(b"#") || rest.starts_with(b"-- ") || rest == b"--" {
            match rest.iter().position(|&b| b == b'\n') {
                Some(e) => i += e + 1,
                None => return String::new(),
            }
        } else {
            break;
        }
    }
    let word: Vec<u8> = sql[i..].iter().take_while(|b| b.is_ascii_alphabetic()).copied().collect();
    String::from_utf8_lossy(&word).to_ascii_uppercase()
}

/// Why an EXECUTE's parameters could not be read.
#[derive(Clone, Copy, Debug)]
pub enum ParamError {
    /// Bulk execute: a DEFAULT or IGNORE indicator (not built).
    Indicator,
    Malformed,
    /// No types were ever sent for this statement.
    NoTypes,
    /// A value no literal can say (NaN, infinity).
    Unrepresentable,
}

/// Reads an EXECUTE's parameter block (after stmt id, flags and iteration
/// count) and returns one value per parameter. Updates the kept types when
/// the new-params-bound flag is set.
pub fn read_params(stmt: &mut Prepared, c: &mut Cursor<'_>) -> Result<Vec<Value>, ParamError> {
    let n = stmt.params();
    if n == 0 {
        return Ok(Vec::new());
    }
    let bitmap = c.bytes(n.div_ceil(8)).ok_or(ParamError::Malformed)?.to_vec();
    let bound = c.u8().ok_or(ParamError::Malformed)?;
    if bound == 1 {
        stmt.types = Some(read_types(c, n)?);
    }
    let types = stmt.types.clone().ok_or(ParamError::NoTypes)?;
    let mut out = Vec::with_capacity(n);
    for (i, &(ty, unsigned)) in types.iter().enumerate() {
        if let Some(data) = stmt.long_data[i].take() {
            out.push(Value::Str(data));
            continue;
        }
        if bitmap[i / 8] & (1 << (i % 8)) != 0 || ty == proto::T_NULL {
            out.push(Value::Null);
            continue;
        }
        out.push(read_value(c, ty, unsigned)?);
    }
    Ok(out)
}

/// Reads COM_STMT_BULK_EXECUTE's types (after stmt id and flags): with
/// `send_types`, one (type, flags) pair per parameter, kept for later
/// executions as EXECUTE's are; without, the types kept.
pub fn read_bulk_types(
    stmt: &mut Prepared,
    c: &mut Cursor<'_>,
    send_types: bool,
) -> Result<Vec<(u8, bool)>, ParamError> {
    let n = stmt.params();
    debug_assert!(n > 0, "bulk execute refuses statements without parameters first");
    if send_types {
        stmt.types = Some(read_types(c, n)?);
    }
    stmt.types.clone().ok_or(ParamError::NoTypes)
}

/// Reads one row of a bulk execute's parameters: each value after its
/// indicator byte (NONE: the value follows; NULL: none). Rows are read one
/// at a time, each run before the next is read, so a packet of many small
/// rows never becomes many rows in memory.
pub fn read_bulk_row(c: &mut Cursor<'_>, types: &[(u8, bool)]) -> Result<Vec<Value>, ParamError> {
    let mut row = Vec::with_capacity(types.len());
    for &(ty, unsigned) in types {
        match c.u8().ok_or(ParamError::Malformed)? {
            proto::STMT_INDICATOR_NONE if ty == proto::T_NULL => row.push(Value::Null),
            proto::STMT_INDICATOR_NONE => row.push(read_value(c, ty, unsigned)?),
            proto::STMT_INDICATOR_NULL => row.push(Value::Null),
            proto::STMT_INDICATOR_DEFAULT | proto::STMT_INDICATOR_IGNORE => {
                return Err(ParamError::Indicator)
            }
            _ => return Err(ParamError::Malformed),
        }
    }
    Ok(row)
}

/// `n` parameter types as a client sends them: a type byte, then a flag
/// byte whose top bit says unsigned.
fn read_types(c: &mut Cursor<'_>, n: usize) -> Result<Vec<(u8, bool)>, ParamError> {
    let mut types = Vec::with_capacity(n);
    for _ in 0..n {
        let t = c.u8().ok_or(ParamError::Malformed)?;
        let f = c.u8().ok_or(ParamError::Malformed)?;
        types.push((t, f & 0x80 != 0));
    }
    Ok(types)
}

fn read_value(c: &mut Cursor<'_>, ty: u8, unsigned: bool) -> Result<Value, ParamError> {
    use proto::*;
    let m = ParamError::Malformed;
    let int = |v: i64, u: u64| if unsigned { Value::UInt(u) } else { Value::Int(v) };
    Ok(match ty {
        T_TINY => {
            let b = c.u8().ok_or(m)?;
            int(b as i8 as i64, b as u64)
        }
        T_SHORT | T_YEAR => {
            let v = c.u16().ok_or(m)?;
            int(v as i16 as i64, v as u64)
        }
        T_LONG | T_INT24 => {
            let v = c.u32().ok_or(m)?;
            int(v as i32 as i64, v as u64)
        }
        T_LONGLONG => {
            let v = c.u64().ok_or(m)?;
            int(v as i64, v)
        }
        T_FLOAT => {
            let v = f32::from_le_bytes(c.bytes(4).ok_or(m)?.try_into().map_err(|_| ParamError::Malformed)?);
            if !v.is_finite() {
                return Err(ParamError::Unrepresentable);
            }
            // The float's shortest decimal form, read back as a double.
            Value::Double(format!("{v:e}").parse().unwrap_or(v as f64))
        }
        T_DOUBLE => {
            let v = f64::from_le_bytes(c.bytes(8).ok_or(m)?.try_into().map_err(|_| ParamError::Malformed)?);
            if !v.is_finite() {
                return Err(ParamError::Unrepresentable);
            }
            Value::Double(v)
        }
        T_DATE | T_DATETIME | T_TIMESTAMP | T_NEWDATE => {
            let len = c.u8().ok_or(m)? as usize;
            let b = c.bytes(len).ok_or(m)?;
            let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut us) = (0u16, 0u8, 0u8, 0u8, 0u8, 0u8, 0u32);
            if len >= 4 {
                y = u16::from_le_bytes([b[0], b[1]]);
                mo = b[2];
                d = b[3];
            }
            if len >= 7 {
                h = b[4];
                mi = b[5];
                s = b[6];
            }
            if len >= 11 {
                us = u32::from_le_bytes([b[7], b[8], b[9], b[10]]);
            }
            // As the text a client would have sent: the SQL layer converts
            // it where the column or comparison wants a temporal.
            let mut t = format!("{y:04}-{mo:02}-{d:02}");
            if ty != T_DATE || len >= 7 {
                t += &format!(" {h:02}:{mi:02}:{s:02}");
                if us != 0 {
                    t += &format!(".{us:06}");
                }
            }
            Value::str(t)
        }
        T_TIME => {
            let len = c.u8().ok_or(m)? as usize;
            let b = c.bytes(len).ok_or(m)?;
            let (mut neg, mut hours, mut mi, mut s, mut us) = (false, 0u64, 0u8, 0u8, 0u32);
            if len >= 8 {
                neg = b[0] != 0;
                hours = u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as u64 * 24 + b[5] as u64;
                mi = b[6];
                s = b[7];
            }
            if len >= 12 {
                us = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            }
            let mut t = format!("{}{hours:02}:{mi:02}:{s:02}", if neg { "-" } else { "" });
            if us != 0 {
                t += &format!(".{us:06}");
            }
            Value::str(t)
        }
        T_NEWDECIMAL | T_DECIMAL => {
            // Exact: a decimal value when it reads as one, else its text.
            let b = c.lenenc_bytes().ok_or(m)?;
            match std::str::from_utf8(b).ok().and_then(|t| t.parse::<bigdecimal::BigDecimal>().ok()) {
                Some(d) => Value::Decimal(d),
                None => Value::Str(b.to_vec()),
            }
        }
        // Strings, blobs, JSON, BIT, ENUM, SET, GEOMETRY: the bytes as sent.
        _ => Value::Str(c.lenenc_bytes().ok_or(m)?.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_keywords() {
        assert_eq!(first_keyword(b"  insert into t values (?)"), "INSERT");
        assert_eq!(first_keyword(b"/* c */ -- x\n# y\nUPDATE t SET a=?"), "UPDATE");
        assert_eq!(first_keyword(b"/*!40101 DELETE FROM t WHERE a=? */"), "DELETE");
        assert_eq!(first_keyword(b"(SELECT ?)"), "");
        assert_eq!(first_keyword(b"/* open"), "");
    }
}
