//! Result column names as MariaDB gives them.
//!
//! MariaDB names a select item without an alias by the item's text exactly
//! as the client wrote it (`a+1`, `CONCAT( 'x' ,b)`, comments included),
//! except where the item, once its parentheses and unary pluses are peeled,
//! is a column (named by the column: `(t.a)` is `a`) or a literal (a string
//! by its value with leading whitespace cut, `NULL`, `TRUE`/`FALSE`, a
//! number or hex literal as written). Names are cut to 255 bytes.
//!
//! sqlparser is given re-emitted text (see `lex::emit`), so its spans point
//! into that text, not the client's. Each `SELECT` keyword's span is exact;
//! from it the select list is split on the token list (depth-0 commas, up
//! to a clause keyword or an unmatched `)`), and each token carries its byte
//! range in the statement as the client sent it. Other spans are not used
//! for boundaries: sqlparser's start of `-a`, `(a)`, `DATE '..'` or
//! `CAST(..)` is inside the item and its end of a call can miss the `)`.
//! The expression's span is only a check that the split item covers it.
//!
//! An unaliased item that is not a column becomes `expr AS `name``, so the
//! name reaches every place that names columns (result sets, derived tables,
//! CTEs, views, CREATE TABLE ... SELECT) and a view's stored text keeps it,
//! as MariaDB's view text does. Where the split cannot be trusted (the item
//! count differs, a span falls outside the item) the item is left alone and
//! `query::expr_name` prints the AST instead. Only the SELECTs reached
//! through queries, CTEs, set operations, derived tables, INSERT ... SELECT,
//! CREATE TABLE ... SELECT and CREATE VIEW are named: a subquery in an
//! expression never shows its column names.

use super::{Tok, K};
use sqlparser::ast::{self, Expr, Query, SelectItem, SetExpr, Statement, TableFactor, Value};
use sqlparser::tokenizer::Location;

/// MariaDB's longest item name, in bytes.
const MAX_NAME: usize = 255;

/// Where sqlparser's locations fall in the emitted text.
pub(super) struct SourceMap<'a> {
    /// The statement as the client sent it.
    pub s: &'a [u8],
    /// The tokens sqlparser was given.
    pub toks: &'a [Tok],
    /// Byte offset of each token in the emitted text.
    pub at: &'a [usize],
    /// The emitted text.
    pub text: &'a str,
}

impl SourceMap<'_> {
    /// The byte offset in the emitted text of a (1-based line, 1-based
    /// character column) location.
    fn offset(&self, l: Location) -> Option<usize> {
        if l.line == 0 || l.column == 0 {
            return None;
        }
        let mut line_start = 0;
        for _ in 1..l.line {
            line_start += self.text[line_start..].find('\n')? + 1;
        }
        let col = usize::try_from(l.column - 1).ok()?;
        match self.text[line_start..].char_indices().nth(col) {
            Some((i, _)) => Some(line_start + i),
            None => Some(self.text.len()),
        }
    }

    /// The index of the token that starts at a location.
    fn token_at(&self, l: Location) -> Option<usize> {
        let off = self.offset(l)?;
        self.at.binary_search(&off).ok()
    }

    /// The token's keyword text, upper-cased, if it is a word.
    fn word(&self, i: usize) -> Option<String> {
        let t = &self.toks[i];
        match &t.k {
            K::Word => std::str::from_utf8(&self.s[t.start..t.end]).ok().map(|w| w.to_ascii_uppercase()),
            K::Raw(r) => Some(r.to_ascii_uppercase()),
            _ => None,
        }
    }

    fn punct(&self, i: usize) -> Option<u8> {
        let t = &self.toks[i];
        (t.k == K::Punct).then(|| self.s[t.start])
    }

    /// The end of token `i` in the emitted text.
    fn emitted_end(&self, i: usize) -> usize {
        self.at.get(i + 1).copied().unwrap_or(self.text.len())
    }
}

/// Names the unaliased select items of every SELECT the statement's result
/// columns come from.
pub(super) fn name_items(m: &SourceMap, st: &mut Statement) {
    match st {
        Statement::Query(q) => query(m, q),
        Statement::Insert(ins) => {
            if let Some(q) = &mut ins.source {
                query(m, q);
            }
        }
        Statement::CreateTable(ct) => {
            if let Some(q) = &mut ct.query {
                query(m, q);
            }
        }
        Statement::CreateView(cv) => query(m, &mut cv.query),
        _ => {}
    }
}

fn query(m: &SourceMap, q: &mut Query) {
    if let Some(w) = &mut q.with {
        for cte in &mut w.cte_tables {
            query(m, &mut cte.query);
        }
    }
    set_expr(m, &mut q.body);
}

fn set_expr(m: &SourceMap, e: &mut SetExpr) {
    match e {
        SetExpr::Select(sel) => {
            select(m, sel);
            for twj in &mut sel.from {
                factor(m, &mut twj.relation);
                for j in &mut twj.joins {
                    factor(m, &mut j.relation);
                }
            }
        }
        SetExpr::Query(q) => query(m, q),
        SetExpr::SetOperation { left, right, .. } => {
            set_expr(m, left);
            set_expr(m, right);
        }
        _ => {}
    }
}

fn factor(m: &SourceMap, f: &mut TableFactor) {
    match f {
        TableFactor::Derived { subquery, .. } => query(m, subquery),
        TableFactor::NestedJoin { table_with_joins, .. } => {
            factor(m, &mut table_with_joins.relation);
            for j in &mut table_with_joins.joins {
                factor(m, &mut j.relation);
            }
        }
        _ => {}
    }
}

/// Words that end a select list at depth 0.
const CLAUSES: &[&str] = &[
    "FROM",
    "INTO",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "FOR",
    "LOCK",
    "PROCEDURE",
];

/// Modifiers between SELECT and the first item.
const MODIFIERS: &[&str] = &[
    "ALL",
    "DISTINCT",
    "DISTINCTROW",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "SQL_CACHE",
    "SQL_NO_CACHE",
    "SQL_CALC_FOUND_ROWS",
];

fn select(m: &SourceMap, sel: &mut ast::Select) {
    let Some(k) = m.token_at(sel.select_token.0.span.start) else { return };
    if m.word(k).as_deref() != Some("SELECT") {
        return;
    }
    let mut i = k + 1;
    while i < m.toks.len() && m.word(i).is_some_and(|w| MODIFIERS.contains(&w.as_str())) {
        i += 1;
    }
    // Each item's token range [from, to).
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut from = i;
    while i < m.toks.len() {
        match m.punct(i) {
            Some(b'(' | b'{') => depth += 1,
            Some(b')' | b'}') if depth == 0 => break,
            Some(b')' | b'}') => depth -= 1,
            Some(b',') if depth == 0 => {
                items.push((from, i));
                from = i + 1;
            }
            Some(b';') if depth == 0 => break,
            _ => {
                if depth == 0 && m.word(i).is_some_and(|w| CLAUSES.contains(&w.as_str())) {
                    break;
                }
            }
        }
        i += 1;
    }
    items.push((from, i));
    if items.len() != sel.projection.len() {
        return;
    }
    for (item, &(a, b)) in sel.projection.iter_mut().zip(&items) {
        let SelectItem::UnnamedExpr(e) = item else { continue };
        if a >= b || !covers(m, e, a, b) {
            continue;
        }
        let Some(name) = item_name(m, e, a, b) else { continue };
        let expr = std::mem::replace(e, Expr::value(Value::Null));
        *item = SelectItem::ExprWithAlias { expr, alias: ast::Ident::with_quote('`', name) };
    }
}

/// Whether tokens [a, b) hold the expression's span (where it has one).
fn covers(m: &SourceMap, e: &Expr, a: usize, b: usize) -> bool {
    use sqlparser::ast::Spanned;
    let sp = e.span();
    let (Some(start), Some(end)) = (m.offset(sp.start), m.offset(sp.end)) else { return true };
    m.at[a] <= start && end <= m.emitted_end(b - 1)
}

/// The name of an unaliased item spanning tokens [a, b), or None for a
/// column (named by `query::expr_name`).
fn item_name(m: &SourceMap, e: &Expr, a: usize, b: usize) -> Option<String> {
    let mut core = e;
    loop {
        match core {
            Expr::Nested(x) => core = x,
            Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } => core = expr,
            _ => break,
        }
    }
    let name = match core {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => return None,
        Expr::Value(v) => match &v.value {
            Value::Null => "NULL".to_string(),
            Value::Boolean(true) => "TRUE".to_string(),
            Value::Boolean(false) => "FALSE".to_string(),
            _ => literal_name(m, a, b)?,
        },
        _ => {
            let start = leading_comment(m, a).unwrap_or(m.toks[a].start);
            let end = m.toks[b - 1].end.max(start);
            strip_version_markers(&String::from_utf8_lossy(&unnumbered(m, a, b, start, end)))
        }
    };
    Some(cut(name.trim_start()))
}

/// The bytes `start..end` of the statement (tokens `a..b`) with each
/// prepared statement's placeholder `?N` (`lex::number_placeholders`)
/// written back as the client wrote it, `?`: `SELECT ? + ?` names its
/// column `? + ?`, as MariaDB does.
fn unnumbered(m: &SourceMap, a: usize, b: usize, start: usize, end: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(end - start);
    let mut at = start;
    for i in a..b.saturating_sub(1) {
        let n = &m.toks[i + 1];
        if m.punct(i) == Some(b'?')
            && !n.gap
            && n.k == K::Word
            && m.s[n.start..n.end].iter().all(u8::is_ascii_digit)
        {
            out.extend_from_slice(&m.s[at..n.start]);
            at = n.end;
        }
    }
    out.extend_from_slice(&m.s[at..end]);
    out
}

/// The name of a literal wrapped in any parentheses and unary pluses.
fn literal_name(m: &SourceMap, mut a: usize, mut b: usize) -> Option<String> {
    loop {
        if b - a >= 2 && m.punct(a) == Some(b'(') && m.punct(b - 1) == Some(b')') {
            a += 1;
            b -= 1;
        } else if b - a >= 2 && m.punct(a) == Some(b'+') {
            a += 1;
        } else {
            break;
        }
    }
    if b - a != 1 {
        return None;
    }
    let t = &m.toks[a];
    Some(match &t.k {
        K::Str { bytes, .. } => String::from_utf8_lossy(bytes).into_owned(),
        K::Raw(r) => r.clone(),
        _ => String::from_utf8_lossy(&m.s[t.start..t.end]).into_owned(),
    })
}

/// Where a block comment right before token `a` starts: MariaDB's name of
/// `SELECT /* x */ a+1` starts at the comment. Only a gap that is one
/// ordinary block comment counts, since a gap can also hold words a
/// rewrite took out.
fn leading_comment(m: &SourceMap, a: usize) -> Option<usize> {
    let prev_end = m.toks[..a].iter().rev().find(|t| !matches!(t.k, K::Raw(_)))?.end;
    let start = m.toks[a].start;
    if prev_end >= start {
        return None;
    }
    let gap = std::str::from_utf8(&m.s[prev_end..start]).ok()?;
    let lead = gap.len() - gap.trim_start().len();
    let g = gap.trim();
    let single = g.starts_with("/*")
        && !g.starts_with("/*!")
        && !g.starts_with("/*M!")
        && g.find("*/") == Some(g.len() - 2);
    single.then_some(prev_end + lead)
}

/// The text with `/*!NNNNN` / `/*M!NNNNNN` openers and their `*/` taken
/// out, as MariaDB's preprocessed text has them; quotes and ordinary
/// comments are kept as they are.
fn strip_version_markers(t: &str) -> String {
    if !t.contains("/*!") && !t.contains("/*M!") {
        return t.to_string();
    }
    let b = t.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_version = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' || c == b'"' || c == b'`' {
            let q = c;
            out.push(c);
            i += 1;
            while i < b.len() {
                out.push(b[i]);
                if b[i] == b'\\' && q != b'`' && i + 1 < b.len() {
                    out.push(b[i + 1]);
                    i += 2;
                    continue;
                }
                i += 1;
                if b[i - 1] == q {
                    break;
                }
            }
        } else if b[i..].starts_with(b"/*!") || b[i..].starts_with(b"/*M!") {
            i += if b[i + 2] == b'M' { 4 } else { 3 };
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            in_version = true;
        } else if b[i..].starts_with(b"/*") {
            let end = t[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            out.extend_from_slice(&b[i..end]);
            i = end;
        } else if in_version && b[i..].starts_with(b"*/") {
            in_version = false;
            i += 2;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// At most [`MAX_NAME`] bytes, cut at a character boundary.
fn cut(s: &str) -> String {
    if s.len() <= MAX_NAME {
        return s.to_string();
    }
    let mut n = MAX_NAME;
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s[..n].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_markers_go_and_quotes_stay() {
        assert_eq!(strip_version_markers("a+3 /*!+5 */"), "a+3 +5 ");
        assert_eq!(strip_version_markers("a+3 /*!10000 +5 */"), "a+3  +5 ");
        assert_eq!(strip_version_markers("'/*!' /* c */ a"), "'/*!' /* c */ a");
        assert_eq!(cut(&"é".repeat(200)).len(), 254);
    }
}
