//! The fast path for `INSERT [IGNORE] [INTO] t [(cols)] VALUES (...), ...`
//! whose values are all literals: what dump files and bulk loaders send,
//! thousands of rows per statement. Scanned straight into values, without
//! building sqlparser's AST (which costs more than storing the rows).
//!
//! Anything the scanner does not know (an expression, a function call,
//! a comment, ON DUPLICATE KEY UPDATE, SELECT, SET, a charset introducer,
//! adjacent strings) makes it give up, and the statement takes the general
//! path; so the fast path only has to be right for what it accepts. A
//! literal means here what the binder makes of it (`bind::literal` for
//! numbers, the lexer's `read_string` for strings), so both paths store
//! the same row.

use sqlparser::ast;

use crate::value::Value;

/// An INSERT of literal rows.
#[derive(Clone, Debug)]
pub struct FastInsert {
    pub ignore: bool,
    pub db: Option<String>,
    pub table: String,
    /// The column list, if the statement has one.
    pub columns: Option<Vec<String>>,
    /// The rows' values; `DEFAULT` is [`default_marker`].
    pub rows: Vec<Vec<Value>>,
}

// Value has no PartialEq (its comparisons are MySQL's); `Special` wants
// one for tests: two fast inserts are equal when they print the same.
impl PartialEq for FastInsert {
    fn eq(&self, other: &FastInsert) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

/// How a row's `DEFAULT` is carried to the INSERT (as the general path does).
pub fn default_marker() -> Value {
    Value::Str(b"\0DEFAULT".to_vec())
}

struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A bare word (letters, digits, `_`, `$`), not consumed unless it is `kw`.
    fn keyword(&mut self, kw: &str) -> bool {
        self.ws();
        let end = self.word_end();
        if self.s[self.i..end].eq_ignore_ascii_case(kw.as_bytes()) {
            self.i = end;
            true
        } else {
            false
        }
    }

    fn word_end(&self) -> usize {
        let mut j = self.i;
        while j < self.s.len()
            && (self.s[j].is_ascii_alphanumeric() || self.s[j] == b'_' || self.s[j] == b'$')
        {
            j += 1;
        }
        j
    }

    /// An identifier: a bare word that is not a number, or `quoted`.
    fn ident(&mut self) -> Option<String> {
        self.ws();
        if self.s.get(self.i) == Some(&b'`') {
            let mut name = Vec::new();
            let mut j = self.i + 1;
            loop {
                match self.s.get(j) {
                    None => return None,
                    Some(b'`') if self.s.get(j + 1) == Some(&b'`') => {
                        name.push(b'`');
                        j += 2;
                    }
                    Some(b'`') => break,
                    Some(&b) => {
                        name.push(b);
                        j += 1;
                    }
                }
            }
            self.i = j + 1;
            return String::from_utf8(name).ok();
        }
        let end = self.word_end();
        if end == self.i || self.s[self.i].is_ascii_digit() {
            return None;
        }
        let w = std::str::from_utf8(&self.s[self.i..end]).ok()?.to_string();
        self.i = end;
        Some(w)
    }

    /// One literal value, or `None` for anything else.
    fn literal(&mut self) -> Option<Value> {
        let c = self.peek()?;
        match c {
            // Under ANSI_QUOTES `".."` is an identifier: the general path.
            b'"' if crate::lex::lex_mode().ansi_quotes => None,
            b'\'' | b'"' => {
                let (bytes, end) = crate::lex::read_string(self.s, self.i)?;
                self.i = end;
                // 'a' 'b' is one string in MySQL: leave it to the general path.
                if matches!(self.peek(), Some(b'\'' | b'"')) {
                    return None;
                }
                Some(Value::Str(bytes))
            }
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number(),
            _ => {
                let end = self.word_end();
                let w = &self.s[self.i..end];
                if (w.eq_ignore_ascii_case(b"x") || w.eq_ignore_ascii_case(b"b"))
                    && self.s.get(end) == Some(&b'\'')
                {
                    let (body, e2) = crate::lex::read_string(self.s, end)?;
                    let bytes = if w.eq_ignore_ascii_case(b"x") {
                        crate::lex::hex_digits(&body)?
                    } else {
                        return None;
                    };
                    self.i = e2;
                    return Some(Value::Str(bytes));
                }
                let v = if w.eq_ignore_ascii_case(b"NULL") {
                    Value::Null
                } else if w.eq_ignore_ascii_case(b"TRUE") {
                    Value::Int(1)
                } else if w.eq_ignore_ascii_case(b"FALSE") {
                    Value::Int(0)
                } else if w.eq_ignore_ascii_case(b"DEFAULT") {
                    default_marker()
                } else {
                    return None;
                };
                self.i = end;
                // `DEFAULT(col)`, `NULL...`: not a plain literal.
                if self.s.get(self.i).is_some_and(|&b| b == b'(' || b.is_ascii_alphanumeric()) {
                    return None;
                }
                Some(v)
            }
        }
    }

    /// `[+-] digits [. digits] [e [+-] digits]` (also `.5`), or `0x...`.
    fn number(&mut self) -> Option<Value> {
        let s = self.s;
        let start = self.i;
        let mut j = self.i;
        if s[j] == b'-' || s[j] == b'+' {
            j += 1;
            // `- -1`, `-(...)`: leave expressions to the general path.
            if !s.get(j).is_some_and(|b| b.is_ascii_digit() || *b == b'.') {
                return None;
            }
        }
        if s.get(j) == Some(&b'0') && matches!(s.get(j + 1), Some(b'x' | b'X' | b'b' | b'B')) {
            return None;
        }
        let d0 = j;
        while s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        let mut digits = j > d0;
        if s.get(j) == Some(&b'.') {
            j += 1;
            let f0 = j;
            while s.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            digits |= j > f0;
        }
        if !digits {
            return None;
        }
        if matches!(s.get(j), Some(b'e' | b'E')) {
            let mut k = j + 1;
            if matches!(s.get(k), Some(b'+' | b'-')) {
                k += 1;
            }
            let e0 = k;
            while s.get(k).is_some_and(u8::is_ascii_digit) {
                k += 1;
            }
            if k == e0 {
                return None;
            }
            j = k;
        }
        // A number glued to a word (`1abc`) is something else.
        if s.get(j).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$') {
            return None;
        }
        let text = std::str::from_utf8(&s[start..j]).ok()?;
        let text = text.strip_prefix('+').unwrap_or(text);
        self.i = j;
        // Plain integers, the common case, without the binder's String.
        if text.bytes().skip(usize::from(text.starts_with('-'))).all(|b| b.is_ascii_digit()) {
            if let Ok(i) = text.parse::<i64>() {
                return Some(Value::Int(i));
            }
        }
        match crate::bind::literal(&ast::Value::Number(text.to_string(), false)) {
            Ok((crate::expr::Expr::Const(v), _)) => Some(v),
            _ => None,
        }
    }
}

/// The statement as a [`FastInsert`], if it is one.
pub fn parse(stmt: &[u8]) -> Option<FastInsert> {
    let mut p = Scan { s: stmt, i: 0 };
    if !p.keyword("INSERT") {
        return None;
    }
    let ignore = p.keyword("IGNORE");
    p.keyword("INTO");
    let first = p.ident()?;
    let (db, table) = if p.s.get(p.i) == Some(&b'.') {
        p.i += 1;
        (Some(first), p.ident()?)
    } else {
        (None, first)
    };
    let mut columns = None;
    if p.eat(b'(') {
        let mut cols = Vec::new();
        if !p.eat(b')') {
            loop {
                cols.push(p.ident()?);
                if p.eat(b')') {
                    break;
                }
                if !p.eat(b',') {
                    return None;
                }
            }
        }
        columns = Some(cols);
    }
    if !p.keyword("VALUES") && !p.keyword("VALUE") {
        return None;
    }
    let mut rows = Vec::new();
    loop {
        if !p.eat(b'(') {
            return None;
        }
        let mut row = Vec::new();
        if !p.eat(b')') {
            loop {
                row.push(p.literal()?);
                if p.eat(b')') {
                    break;
                }
                if !p.eat(b',') {
                    return None;
                }
            }
        }
        rows.push(row);
        if !p.eat(b',') {
            break;
        }
    }
    p.eat(b';');
    p.ws();
    if p.i != stmt.len() {
        // ON DUPLICATE KEY UPDATE, a comment, RETURNING, ...
        return None;
    }
    Some(FastInsert { ignore, db, table, columns, rows })
}
