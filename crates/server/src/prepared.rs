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
    /// Each parameter's type and unsigned flag, from the last EXECUTE that
    /// bound them. Clients send the types only when they change (sysbench
    /// sends them once): they are kept across executions.
    pub types: Option<Vec<(u8, bool)>>,
    /// COM_STMT_SEND_LONG_DATA's pieces, per parameter, until the next
    /// EXECUTE or RESET.
    pub long_data: Vec<Option<Vec<u8>>>,
}

impl Prepared {
    pub fn new(stmt: PreparedStatement) -> Prepared {
        let n = stmt.param_count();
        Prepared { stmt, types: None, long_data: vec![None; n] }
    }

    /// How many parameters EXECUTE must bind.
    pub fn params(&self) -> usize {
        self.long_data.len()
    }
}

/// Why an EXECUTE's parameters could not be read.
#[derive(Clone, Copy, Debug)]
pub enum ParamError {
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
        let mut types = Vec::with_capacity(n);
        for _ in 0..n {
            let t = c.u8().ok_or(ParamError::Malformed)?;
            let f = c.u8().ok_or(ParamError::Malformed)?;
            types.push((t, f & 0x80 != 0));
        }
        stmt.types = Some(types);
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
