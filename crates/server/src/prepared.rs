//! Server-side prepared statements, first form: the SQL layer has no
//! placeholders, so PREPARE finds the `?` marks in the text and EXECUTE
//! splices each parameter in as a SQL literal and runs the result as an
//! ordinary statement. Each EXECUTE parses the statement again: keeping a
//! parsed plan with parameter slots is a later optimization.

use crate::proto::{self, Cursor};

/// A prepared statement.
pub struct Prepared {
    pub sql: Vec<u8>,
    /// Byte offsets of the `?` placeholders in `sql`, in order.
    pub marks: Vec<usize>,
    /// Each parameter's type and unsigned flag, from the last EXECUTE that
    /// bound them. Clients send the types only when they change (sysbench
    /// sends them once): they are kept across executions.
    pub types: Option<Vec<(u8, bool)>>,
    /// COM_STMT_SEND_LONG_DATA's pieces, per parameter, until the next
    /// EXECUTE or RESET.
    pub long_data: Vec<Option<Vec<u8>>>,
}

impl Prepared {
    pub fn new(sql: Vec<u8>) -> Prepared {
        let marks = placeholders(&sql);
        let n = marks.len();
        Prepared { sql, marks, types: None, long_data: vec![None; n] }
    }

    /// The statement with `literals` (one per placeholder) in place of the marks.
    pub fn substitute(&self, literals: &[Vec<u8>]) -> Vec<u8> {
        debug_assert_eq!(literals.len(), self.marks.len());
        let mut out = Vec::with_capacity(self.sql.len() + literals.iter().map(Vec::len).sum::<usize>());
        let mut at = 0;
        for (&m, lit) in self.marks.iter().zip(literals) {
            out.extend_from_slice(&self.sql[at..m]);
            // Spaces keep a literal from gluing to its neighbours (`a-?`
            // with -1 must not become `a--1`, a comment).
            out.push(b' ');
            out.extend_from_slice(lit);
            out.push(b' ');
            at = m + 1;
        }
        out.extend_from_slice(&self.sql[at..]);
        out
    }
}

/// The offsets of the `?` placeholders: every `?` outside string literals,
/// quoted identifiers and comments. `/*! ... */` and `/*M! ... */` bodies
/// are code (the SQL layer runs them), so marks in them count.
pub fn placeholders(sql: &[u8]) -> Vec<usize> {
    let mut marks = Vec::new();
    let mut i = 0;
    let n = sql.len();
    while i < n {
        match sql[i] {
            b'?' => {
                marks.push(i);
                i += 1;
            }
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < n {
                    if sql[i] == b'\\' && q != b'`' {
                        i += 2;
                    } else if sql[i] == q {
                        if i + 1 < n && sql[i + 1] == q {
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'#' => {
                while i < n && sql[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if sql.get(i + 1) == Some(&b'-')
                && sql.get(i + 2).is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
            {
                while i < n && sql[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if sql.get(i + 1) == Some(&b'*') => {
                let code =
                    sql.get(i + 2) == Some(&b'!') || sql.get(i + 2..).is_some_and(|r| r.starts_with(b"M!"));
                if code {
                    // Skip the opener; the body is scanned as code and its
                    // closing `*/` is harmless.
                    i += 3;
                } else {
                    i += 2;
                    while i < n && !(sql[i] == b'*' && sql.get(i + 1) == Some(&b'/')) {
                        i += 1;
                    }
                    i = (i + 2).min(n);
                }
            }
            _ => i += 1,
        }
    }
    marks
}

/// Whether the statement may return rows: its first word (after spaces,
/// comments and opening parentheses) is SELECT, WITH, SHOW, VALUES, TABLE,
/// DESCRIBE / DESC or EXPLAIN.
pub fn returns_rows(sql: &[u8]) -> bool {
    let mut i = 0;
    let n = sql.len();
    loop {
        while i < n && (sql[i].is_ascii_whitespace() || sql[i] == b'(') {
            i += 1;
        }
        if sql[i..].starts_with(b"/*") && !sql[i..].starts_with(b"/*!") && !sql[i..].starts_with(b"/*M!") {
            match sql[i + 2..].windows(2).position(|w| w == b"*/") {
                Some(p) => i += p + 4,
                None => return false,
            }
        } else if sql[i..].starts_with(b"#") || sql[i..].starts_with(b"-- ") {
            while i < n && sql[i] != b'\n' {
                i += 1;
            }
        } else {
            break;
        }
    }
    let word: Vec<u8> =
        sql[i..].iter().take_while(|c| c.is_ascii_alphabetic()).map(|c| c.to_ascii_uppercase()).collect();
    matches!(
        &word[..],
        b"SELECT" | b"WITH" | b"SHOW" | b"VALUES" | b"TABLE" | b"DESCRIBE" | b"DESC" | b"EXPLAIN"
    )
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
/// count) and returns one SQL literal per parameter. Updates the kept types
/// when the new-params-bound flag is set.
pub fn read_params(stmt: &mut Prepared, c: &mut Cursor<'_>) -> Result<Vec<Vec<u8>>, ParamError> {
    let n = stmt.marks.len();
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
            out.push(quote_bytes(&data));
            continue;
        }
        if bitmap[i / 8] & (1 << (i % 8)) != 0 || ty == proto::T_NULL {
            out.push(b"NULL".to_vec());
            continue;
        }
        out.push(read_value(c, ty, unsigned)?);
    }
    Ok(out)
}

fn read_value(c: &mut Cursor<'_>, ty: u8, unsigned: bool) -> Result<Vec<u8>, ParamError> {
    use proto::*;
    let m = ParamError::Malformed;
    let int = |v: i64, u: u64| if unsigned { u.to_string() } else { v.to_string() };
    Ok(match ty {
        T_TINY => {
            let b = c.u8().ok_or(m)?;
            int(b as i8 as i64, b as u64).into_bytes()
        }
        T_SHORT | T_YEAR => {
            let v = c.u16().ok_or(m)?;
            int(v as i16 as i64, v as u64).into_bytes()
        }
        T_LONG | T_INT24 => {
            let v = c.u32().ok_or(m)?;
            int(v as i32 as i64, v as u64).into_bytes()
        }
        T_LONGLONG => {
            let v = c.u64().ok_or(m)?;
            int(v as i64, v).into_bytes()
        }
        T_FLOAT => {
            let v = f32::from_le_bytes(c.bytes(4).ok_or(m)?.try_into().map_err(|_| ParamError::Malformed)?);
            if !v.is_finite() {
                return Err(ParamError::Unrepresentable);
            }
            // The float's shortest decimal form, read back as a double.
            format!("{v:e}").into_bytes()
        }
        T_DOUBLE => {
            let v = f64::from_le_bytes(c.bytes(8).ok_or(m)?.try_into().map_err(|_| ParamError::Malformed)?);
            if !v.is_finite() {
                return Err(ParamError::Unrepresentable);
            }
            // `{:e}` is the shortest form that reads back to the same
            // double, with an exponent: a double literal in MySQL.
            format!("{v:e}").into_bytes()
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
            let mut t = format!("'{y:04}-{mo:02}-{d:02}");
            if ty != T_DATE || len >= 7 {
                t += &format!(" {h:02}:{mi:02}:{s:02}");
                if us != 0 {
                    t += &format!(".{us:06}");
                }
            }
            t.push('\'');
            t.into_bytes()
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
            let mut t = format!("'{}{hours:02}:{mi:02}:{s:02}", if neg { "-" } else { "" });
            if us != 0 {
                t += &format!(".{us:06}");
            }
            t.push('\'');
            t.into_bytes()
        }
        T_NEWDECIMAL | T_DECIMAL => {
            let b = c.lenenc_bytes().ok_or(m)?;
            let numeric = !b.is_empty() && b.iter().all(|&x| x.is_ascii_digit() || b"+-.eE".contains(&x));
            if numeric {
                b.to_vec()
            } else {
                quote_bytes(b)
            }
        }
        // Strings, blobs, JSON, BIT, ENUM, SET, GEOMETRY: the bytes as sent.
        _ => quote_bytes(c.lenenc_bytes().ok_or(m)?),
    })
}

/// A string literal holding exactly `b`: quotes and backslashes escaped,
/// NUL, newline, CR and ^Z written as escapes (the SQL layer's lexer reads
/// MySQL's escapes, and keeps bytes that are not UTF-8).
pub fn quote_bytes(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len() + 2);
    out.push(b'\'');
    for &x in b {
        match x {
            b'\'' => out.extend_from_slice(b"\\'"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0 => out.extend_from_slice(b"\\0"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x1a => out.extend_from_slice(b"\\Z"),
            _ => out.push(x),
        }
    }
    out.push(b'\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_skip_strings_identifiers_and_comments() {
        let sql = b"SELECT ?, '?', \"a\\\"?\", `?``?`, 'it''s?' -- ?\n, ? # ?\n /* ? */ /*!40101 ? */ FROM t WHERE a=?";
        let m = placeholders(sql);
        assert_eq!(m.len(), 4, "{m:?}");
        for &i in &m {
            assert_eq!(sql[i], b'?');
        }
        assert_eq!(placeholders(b"SELECT 1--?").len(), 1, "--? is not a comment");
    }

    #[test]
    fn which_statements_return_rows() {
        assert!(returns_rows(b"  (SELECT 1)"));
        assert!(returns_rows(b"/* x */ select ?"));
        assert!(returns_rows(b"-- c\nSHOW TABLES"));
        assert!(!returns_rows(b"INSERT INTO t SELECT 1"));
        assert!(!returns_rows(b"/* unclosed"));
        assert!(!returns_rows(b""));
    }

    #[test]
    fn substitution_splices_literals() {
        let p = Prepared::new(b"SELECT a-? FROM t WHERE b=?".to_vec());
        let s = p.substitute(&[b"-1".to_vec(), quote_bytes(b"x'\\")]);
        assert_eq!(s, b"SELECT a- -1  FROM t WHERE b= 'x\\'\\\\' ".to_vec());
    }
}
