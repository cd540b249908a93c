//! MySQL's lexical layer in front of sqlparser.
//!
//! Two jobs live here:
//!
//! - [`Splitter`] / [`split_script`] cut a script into statements the way the
//!   `mariadb` command-line client does, on bytes: a mysqldump file may hold
//!   BLOBs dumped raw, so it need not be UTF-8.
//! - [`parse`] turns one statement into a sqlparser [`Statement`], or into a
//!   [`Special`] for what `MySqlDialect` (0.64) rejects or misreads. Before
//!   sqlparser sees the text it is rewritten: comments go, `/*!NNNNN ... */`
//!   version comments are expanded or dropped, and every string literal is
//!   decoded with MySQL's escape rules and re-emitted in a form sqlparser
//!   reads back byte for byte (or as `X'..'` when the bytes are not UTF-8).

use crate::error::{SqlError, SqlResult};
use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};
use sqlparser::dialect::MySqlDialect;

#[path = "colnames.rs"]
mod colnames;

// ---------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------

/// Splits a whole script into statements (see [`Splitter`]).
/// The thread's NO_BACKSLASH_ESCAPES (see [`set_lex_mode`]) holds for the
/// whole script.
pub fn split_script(input: &[u8]) -> Vec<Vec<u8>> {
    let mut s = Splitter::new();
    s.set_no_backslash_escapes(lex_mode().no_backslash_escapes);
    let mut out = s.push(input);
    out.extend(s.finish());
    out
}

/// Where the scanner is inside the current statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Normal,
    /// Inside a quoted string or identifier; the byte is the quote.
    Quote(u8),
    /// `#` or `-- ` up to the end of the line.
    LineComment,
    /// `/* ... */` (not a version comment).
    BlockComment,
}

/// An incremental statement splitter with the `mariadb` client's rules.
///
/// The delimiter (`;` unless a `DELIMITER xx` line changed it) ends a
/// statement outside quotes (`'..'`, `".."` with backslash escapes,
/// `` `..` ``) and comments (`#`, `-- `, `/* */`). Text inside a
/// `/*!NNNNN ... */` or `/*M! ... */` version comment is statement text, but
/// the delimiter does not end a statement there: dumps wrap whole trigger
/// bodies in them. `\g` and `\G` also end a statement. Statements made only
/// of whitespace and comments are dropped; leading comments are cut off.
///
/// Bytes may arrive in pieces cut anywhere (an interactive shell pushes one
/// line at a time); the scan state is kept between pushes so a long
/// statement is scanned once.
#[derive(Clone, Debug)]
pub struct Splitter {
    buf: Vec<u8>,
    /// Start of the current statement in `buf`.
    start: usize,
    /// Next byte to scan.
    pos: usize,
    /// First byte of the current statement that is not whitespace or an
    /// ordinary comment.
    content_at: Option<usize>,
    mode: Mode,
    /// Inside an expanded `/*! ... */`: its `*/` must be found.
    in_version: bool,
    delimiter: Vec<u8>,
    /// NO_BACKSLASH_ESCAPES: a `\\` in quotes escapes nothing (the client
    /// reads it from the server's status flag).
    no_backslash_escapes: bool,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter::new()
    }
}

/// What one scanning step decided.
enum Step {
    /// Keep scanning.
    Go,
    /// More bytes are needed to decide about the byte at `pos`.
    Wait,
    /// A statement ends at `pos`; the terminator is this many bytes.
    End(usize),
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter {
            buf: Vec::new(),
            start: 0,
            pos: 0,
            content_at: None,
            mode: Mode::Normal,
            in_version: false,
            delimiter: b";".to_vec(),
            no_backslash_escapes: false,
        }
    }

    /// Whether `\\` escapes the next byte inside quotes from here on
    /// (off under sql_mode NO_BACKSLASH_ESCAPES).
    pub fn set_no_backslash_escapes(&mut self, on: bool) {
        self.no_backslash_escapes = on;
    }

    /// Adds bytes; returns the statements they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let out = self.scan(false);
        self.compact();
        out
    }

    /// Whether an unfinished statement is buffered (the shell's `->`).
    pub fn pending(&self) -> bool {
        self.content_at.is_some()
            || self.in_version
            || matches!(self.mode, Mode::Quote(_) | Mode::BlockComment)
    }

    /// What the input is inside, for a continuation prompt as the client
    /// shows it: `'`, `"` or `` ` `` for an open quote, `*` for an open
    /// comment, `-` for a statement that is merely unfinished.
    pub fn open_quote(&self) -> Option<u8> {
        match self.mode {
            Mode::Quote(q) => Some(q),
            Mode::BlockComment => Some(b'*'),
            _ if self.in_version => Some(b'*'),
            _ if self.content_at.is_some() => Some(b'-'),
            _ => None,
        }
    }

    /// The current delimiter (`;` unless a `DELIMITER` line changed it).
    pub fn delimiter(&self) -> &[u8] {
        &self.delimiter
    }

    /// Ends the input: returns what is left as a last statement, if it has
    /// any content. The splitter is then empty again (the delimiter stays).
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let mut out = self.scan(true);
        let last = self.content_at.map(|c| trim(&self.buf[c..]).to_vec());
        self.buf.clear();
        self.start = 0;
        self.pos = 0;
        self.content_at = None;
        self.mode = Mode::Normal;
        self.in_version = false;
        out.extend(last.filter(|s| !s.is_empty()));
        // `push` only leaves bytes unscanned when it needs to look past the
        // end of the input, so the end of input completes at most one
        // statement.
        debug_assert!(out.len() <= 1);
        out.into_iter().next()
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.pos -= self.start;
            if let Some(c) = &mut self.content_at {
                *c -= self.start;
            }
            self.start = 0;
        }
    }

    fn scan(&mut self, eof: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while self.pos < self.buf.len() {
            match self.step(eof) {
                Step::Go => {}
                Step::Wait => break,
                Step::End(len) => {
                    if let Some(c) = self.content_at {
                        let s = trim(&self.buf[c..self.pos]);
                        if !s.is_empty() {
                            let mut v = s.to_vec();
                            // `\G` (vertical output in the client) stays on
                            // the statement for the shell to see; `parse`
                            // drops it.
                            if len == 2 && self.buf.get(self.pos + 1) == Some(&b'G') {
                                v.extend_from_slice(b"\\G");
                            }
                            out.push(v);
                        }
                    }
                    self.pos += len;
                    self.start = self.pos;
                    self.content_at = None;
                }
            }
        }
        out
    }

    fn mark_content(&mut self) {
        if self.content_at.is_none() {
            self.content_at = Some(self.pos);
        }
    }

    /// Looks at `buf[pos]` and advances past what it can decide.
    fn step(&mut self, eof: bool) -> Step {
        let buf = &self.buf;
        let pos = self.pos;
        let c = buf[pos];
        let next = buf.get(pos + 1).copied();
        match self.mode {
            Mode::Quote(q) => {
                if c == b'\\' && q != b'`' && !self.no_backslash_escapes {
                    if next.is_none() && !eof {
                        return Step::Wait;
                    }
                    self.pos += 2.min(buf.len() - pos);
                } else {
                    if c == q {
                        // A doubled quote closes and reopens: same state.
                        self.mode = Mode::Normal;
                    }
                    self.pos += 1;
                }
                Step::Go
            }
            Mode::LineComment => {
                if c == b'\n' {
                    self.mode = Mode::Normal;
                }
                self.pos += 1;
                Step::Go
            }
            Mode::BlockComment => {
                if c == b'*' {
                    match next {
                        None if !eof => return Step::Wait,
                        Some(b'/') => {
                            self.mode = Mode::Normal;
                            self.pos += 2;
                            return Step::Go;
                        }
                        _ => {}
                    }
                }
                self.pos += 1;
                Step::Go
            }
            Mode::Normal => self.step_normal(eof),
        }
    }

    fn step_normal(&mut self, eof: bool) -> Step {
        let buf = &self.buf;
        let pos = self.pos;
        let rest = &buf[pos..];
        let c = rest[0];
        if !self.in_version {
            if rest.starts_with(&self.delimiter) {
                return Step::End(self.delimiter.len());
            }
            if !eof && self.delimiter.starts_with(rest) {
                return Step::Wait;
            }
            if self.content_at.is_none() && (c == b'd' || c == b'D') {
                const CMD: &[u8] = b"delimiter";
                let n = rest.len().min(CMD.len());
                if rest[..n].eq_ignore_ascii_case(&CMD[..n]) {
                    if rest.len() <= CMD.len() {
                        if !eof {
                            return Step::Wait;
                        }
                    } else if rest[CMD.len()] == b' ' || rest[CMD.len()] == b'\t' {
                        let line_end = rest.iter().position(|&b| b == b'\n');
                        if line_end.is_none() && !eof {
                            return Step::Wait;
                        }
                        let line_end = line_end.unwrap_or(rest.len());
                        let arg = delimiter_arg(&rest[CMD.len()..line_end]);
                        if !arg.is_empty() {
                            self.delimiter = arg;
                        }
                        self.pos += line_end + usize::from(line_end < rest.len());
                        self.start = self.pos;
                        return Step::Go;
                    }
                }
            }
        }
        let next = rest.get(1).copied();
        match c {
            b'\'' | b'"' | b'`' => {
                self.mark_content();
                self.mode = Mode::Quote(c);
                self.pos += 1;
            }
            b'#' => {
                self.mode = Mode::LineComment;
                self.pos += 1;
            }
            b'\\' => {
                if next.is_none() && !eof {
                    return Step::Wait;
                }
                if matches!(next, Some(b'g' | b'G')) && !self.in_version {
                    return Step::End(2);
                }
                self.mark_content();
                self.pos += 1;
            }
            b'-' if next == Some(b'-') || (next.is_none() && !eof) => {
                match rest.get(2) {
                    None if !eof => return Step::Wait,
                    None => self.mode = Mode::LineComment,
                    Some(&b) if b <= b' ' => self.mode = Mode::LineComment,
                    Some(_) => self.mark_content(),
                }
                self.pos += if self.mode == Mode::LineComment { 2 } else { 1 };
            }
            b'/' if next == Some(b'*') || (next.is_none() && !eof) => {
                if next.is_none() {
                    return Step::Wait;
                }
                match rest.get(2) {
                    None if !eof => return Step::Wait,
                    Some(b'!') => {
                        self.mark_content();
                        self.in_version = true;
                        self.pos += 3;
                    }
                    Some(b'M') => match rest.get(3) {
                        None if !eof => return Step::Wait,
                        Some(b'!') => {
                            self.mark_content();
                            self.in_version = true;
                            self.pos += 4;
                        }
                        _ => {
                            self.mode = Mode::BlockComment;
                            self.pos += 2;
                        }
                    },
                    _ => {
                        self.mode = Mode::BlockComment;
                        self.pos += 2;
                    }
                }
            }
            b'*' if self.in_version && (next == Some(b'/') || (next.is_none() && !eof)) => {
                if next.is_none() {
                    return Step::Wait;
                }
                self.in_version = false;
                self.pos += 2;
            }
            _ => {
                if !c.is_ascii_whitespace() {
                    self.mark_content();
                }
                self.pos += 1;
            }
        }
        Step::Go
    }
}

/// The argument of a `DELIMITER` line: its first word, unquoted.
fn delimiter_arg(rest: &[u8]) -> Vec<u8> {
    let rest = trim(rest);
    if let Some(&q) = rest.first() {
        if q == b'\'' || q == b'"' || q == b'`' {
            if let Some(end) = rest[1..].iter().position(|&b| b == q) {
                return rest[1..1 + end].to_vec();
            }
        }
    }
    let end = rest.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(rest.len());
    rest[..end].to_vec()
}

fn trim(s: &[u8]) -> &[u8] {
    let a = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let z = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(a, |z| z + 1);
    &s[a..z]
}

// ---------------------------------------------------------------------------
// Public parse results
// ---------------------------------------------------------------------------

/// What one statement parsed into.
// One value per statement, moved once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// A statement sqlparser understands, with what the rewrite removed.
    Std(Box<Statement>, Flags),
    /// Statements parsed here.
    Special(Special),
    /// Only comments / whitespace.
    Empty,
}

/// What `parse` took out of the text before sqlparser saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `... LOCK IN SHARE MODE` was removed from the end of a SELECT.
    pub lock_in_share_mode: bool,
    /// TokuDB's `CLUSTERING` was removed from these indexes (in CREATE
    /// INDEX, CREATE TABLE or ALTER TABLE ADD); they are otherwise normal
    /// indexes in the statement. An unnamed one was given the name MySQL
    /// gives it (its first column, `_2`, `_3`... on a clash within the
    /// statement), and that name was written into the statement.
    pub clustering_indexes: Vec<String>,
    /// Table options of an ALTER TABLE that mixes them with other changes
    /// (`ENGINE`, `COMMENT`, `[DEFAULT] CHARSET`, `[DEFAULT] COLLATE`,
    /// `ROW_FORMAT`, ...), which sqlparser 0.64 rejects in ALTER TABLE:
    /// upper-cased name (`CHARSET` for all charset spellings) and value
    /// (unquoted).
    pub table_options: Vec<(String, String)>,
    /// `UPDATE IGNORE` / `DELETE IGNORE`: the modifier was removed.
    pub ignore: bool,
    /// `CREATE VIEW ... WITH [CASCADED | LOCAL] CHECK OPTION` (which
    /// sqlparser 0.64 rejects) was removed: "CASCADED" (also for a bare
    /// `WITH CHECK OPTION`) or "LOCAL"; "" without one.
    pub check_option: String,
}

/// A table reference as written: `t` or `db.t`, unquoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableName {
    pub db: Option<String>,
    pub name: String,
}

/// One table of LOCK TABLES.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockTarget {
    pub table: TableName,
    pub alias: Option<String>,
    /// WRITE (else READ).
    pub write: bool,
    /// READ LOCAL.
    pub local: bool,
    /// LOW_PRIORITY WRITE.
    pub low_priority: bool,
}

/// The table maintenance statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintenanceOp {
    Optimize,
    Check,
    Analyze,
    Repair,
    Checksum,
}

/// Statements parsed by our own code, because sqlparser 0.64 with
/// `MySqlDialect` rejects or misreads them.
// One value per statement, moved once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Special {
    Show(ShowStmt),
    LoadData(Box<crate::loaddata::LoadData>),
    /// `START TRANSACTION` with `WITH CONSISTENT SNAPSHOT` (mysqldump
    /// `--single-transaction` sends it); plain forms stay `Std`.
    Begin {
        consistent_snapshot: bool,
        read_only: bool,
    },
    /// `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS`.
    AlterKeys {
        db: Option<String>,
        table: String,
        enable: bool,
    },
    /// An ALTER TABLE made only of table options (`ENGINE=X`,
    /// `COMMENT='..'`, `CONVERT TO CHARACTER SET x` gives `CONVERT`, ...);
    /// the options are as in [`Flags::table_options`].
    AlterTableOptions {
        db: Option<String>,
        table: String,
        options: Vec<(String, String)>,
    },
    /// `OPTIMIZE|CHECK|ANALYZE|REPAIR|CHECKSUM TABLE t1, t2 ...` (trailing
    /// options such as QUICK or EXTENDED are ignored).
    Maintenance {
        op: MaintenanceOp,
        tables: Vec<TableName>,
        /// `ANALYZE TABLE ... PERSISTENT FOR ...`: MariaDB then reports
        /// its engine-independent statistics as collected.
        persistent: bool,
    },
    /// `SET NAMES {cs [COLLATE c] | DEFAULT}` (`character_set` false) or
    /// `SET {CHARACTER SET | CHARSET} {cs | DEFAULT}` (true); `None` is
    /// DEFAULT.
    SetNames {
        charset: Option<String>,
        collation: Option<String>,
        character_set: bool,
    },
    LockTables(Vec<LockTarget>),
    UnlockTables,
    /// `FLUSH [LOCAL | NO_WRITE_TO_BINLOG] STATUS`: the session's status
    /// counters move into the global total and start again from zero.
    FlushStatus,
    /// Account management (CREATE/DROP/ALTER/RENAME USER, GRANT, REVOKE,
    /// SET PASSWORD, roles, FLUSH PRIVILEGES): the statement's text with
    /// comments removed.
    Account(String),
    /// `DO expr, ...`
    Do(Vec<Expr>),
    /// `INSERT ... VALUES` of literal rows, scanned without sqlparser
    /// (`fastinsert.rs`).
    FastInsert(crate::fastinsert::FastInsert),
    /// `XA START|BEGIN|END|PREPARE|COMMIT|ROLLBACK|RECOVER` (`xa.rs`).
    Xa(crate::xa::XaStmt),
    /// `PREPARE name FROM expr` (a string literal, a user variable or any
    /// expression, as MariaDB takes): SQL-level prepared statements
    /// (`sqlprepare.rs`).
    Prepare {
        name: String,
        text: Expr,
    },
    /// `EXECUTE name [USING expr, ...]`
    Execute {
        name: String,
        using: Vec<Expr>,
    },
    /// `EXECUTE IMMEDIATE expr [USING expr, ...]`
    ExecuteImmediate {
        text: Expr,
        using: Vec<Expr>,
    },
    /// `{DEALLOCATE | DROP} PREPARE name`
    Deallocate(String),
    /// A statement this server knows and refuses (error 1235 with this
    /// name): "LOAD XML", "partitioning",
    /// "CREATE TRIGGER", "CREATE PROCEDURE", "CREATE FUNCTION",
    /// "CREATE EVENT".
    Unsupported(&'static str),
}

/// A SHOW statement.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowStmt {
    pub kind: ShowKind,
    /// FULL (TABLES, COLUMNS, PROCESSLIST).
    pub full: bool,
    /// GLOBAL (VARIABLES, STATUS); SESSION and LOCAL give false.
    pub global: bool,
    /// FROM/IN db, or the db of `db.t`; the database of SHOW CREATE
    /// DATABASE.
    pub db: Option<String>,
    /// The table (COLUMNS, INDEX, CREATE TABLE), or the object of SHOW
    /// CREATE VIEW/TRIGGER/PROCEDURE/FUNCTION/EVENT.
    pub table: Option<String>,
    /// LIKE 'pattern', as bytes.
    pub like: Option<Vec<u8>>,
    /// WHERE expr.
    pub filter: Option<Expr>,
    /// The engine of SHOW ENGINE x ...; the account of SHOW GRANTS FOR /
    /// SHOW CREATE USER as written (`'u'@'%'`, `CURRENT_USER`).
    pub name: Option<String>,
    /// LIMIT [offset,] count of SHOW WARNINGS / ERRORS: (offset, count).
    pub limit: Option<(u64, u64)>,
    /// SHOW CREATE DATABASE IF NOT EXISTS.
    pub if_not_exists: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowKind {
    Databases,
    Tables,
    CreateTable,
    CreateDatabase,
    CreateView,
    CreateTrigger,
    CreateProcedure,
    CreateFunction,
    CreateEvent,
    CreateUser,
    Columns,
    Index,
    Engines,
    Collation,
    Charset,
    Variables,
    Status,
    Warnings,
    Errors,
    /// SHOW COUNT(*) WARNINGS
    WarningCount,
    /// SHOW COUNT(*) ERRORS
    ErrorCount,
    TableStatus,
    ProcessList,
    Grants,
    EngineStatus,
    EngineMutex,
    EngineLogs,
    MasterStatus,
    SlaveStatus,
    BinaryLogs,
    Triggers,
    ProcedureStatus,
    FunctionStatus,
    Events,
    Plugins,
    OpenTables,
    Privileges,
    Profiles,
}

impl ShowStmt {
    fn new(kind: ShowKind) -> ShowStmt {
        ShowStmt {
            kind,
            full: false,
            global: false,
            db: None,
            table: None,
            like: None,
            filter: None,
            name: None,
            limit: None,
            if_not_exists: false,
        }
    }
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum K {
    /// Letters, digits, `_`, `$` and non-ASCII bytes; emitted as written.
    Word,
    /// `` `x` ``, decoded; emitted as written.
    QIdent(String),
    /// A string literal's bytes. `binary` (from `_binary`) emits X'..'.
    Str { bytes: Vec<u8>, binary: bool, introduced: bool },
    /// `X'..'`, `0x..`, `b'..'`, `0b..`: emitted as X'..'.
    Hex(Vec<u8>),
    /// One ASCII byte of punctuation; emitted as written.
    Punct,
    /// Text put in by a rewrite.
    Raw(String),
}

#[derive(Clone, Debug)]
struct Tok {
    k: K,
    /// Byte range in the statement (for a `Raw` token: what it replaced).
    start: usize,
    end: usize,
    /// Whitespace or a comment came before it.
    gap: bool,
}

impl Tok {
    fn raw(s: &str, at: usize) -> Tok {
        Tok { k: K::Raw(s.to_string()), start: at, end: at, gap: true }
    }
}

/// The identifier quoted by the byte at `s[i]` (`` ` ``, or `"` under
/// ANSI_QUOTES), a doubled quote standing for one, and the offset past its
/// closing quote.
fn quoted_ident(s: &[u8], i: usize) -> SqlResult<(String, usize)> {
    let q = s[i];
    let mut j = i + 1;
    let mut name = Vec::new();
    loop {
        match s.get(j) {
            None => return Err(syntax_at(s, i)),
            Some(&b) if b == q && s.get(j + 1) == Some(&q) => {
                name.push(q);
                j += 2;
            }
            Some(&b) if b == q => break,
            Some(&b) => {
                name.push(b);
                j += 1;
            }
        }
    }
    let name = String::from_utf8(name).map_err(|_| syntax_at(s, i))?;
    Ok((name, j + 1))
}

/// A 1064 error quoting the statement from byte `at` on, as MySQL does
/// (80 characters at most, and the line it is on).
fn syntax_at(stmt: &[u8], at: usize) -> SqlError {
    let at = at.min(stmt.len());
    let near: String = String::from_utf8_lossy(&stmt[at..]).chars().take(80).collect();
    let line = 1 + stmt[..at].iter().filter(|&&b| b == b'\n').count();
    SqlError::syntax(format!("'{near}' at line {line}"))
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Character sets whose name may introduce a literal (`_latin1'..'`).
const CHARSETS: &[&str] = &[
    "armscii8", "ascii", "big5", "binary", "cp1250", "cp1251", "cp1256", "cp1257", "cp850", "cp852", "cp866",
    "cp932", "dec8", "eucjpms", "euckr", "filename", "gb2312", "gbk", "geostd8", "greek", "hebrew", "hp8",
    "keybcs2", "koi8r", "koi8u", "latin1", "latin2", "latin5", "latin7", "macce", "macroman", "sjis", "swe7",
    "tis620", "ucs2", "ujis", "utf16", "utf16le", "utf32", "utf8", "utf8mb3", "utf8mb4",
];

/// The parts of the session's sql_mode that change how text is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LexMode {
    /// NO_BACKSLASH_ESCAPES: `\` in a string is an ordinary byte.
    pub no_backslash_escapes: bool,
    /// ANSI_QUOTES: `"..."` quotes an identifier, not a string.
    pub ansi_quotes: bool,
}

impl LexMode {
    /// The mode an sql_mode value (upper case, as the session keeps it)
    /// sets. ANSI implies ANSI_QUOTES as in MySQL.
    pub fn of_sql_mode(mode: &str) -> LexMode {
        let has = |m: &str| mode.split(',').any(|p| p.trim() == m);
        LexMode {
            no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
            ansi_quotes: has("ANSI_QUOTES") || has("ANSI"),
        }
    }
}

thread_local! {
    /// The mode statements are read in on this thread. The session sets
    /// it (`set_lex_mode`) before every parse, as it sets the session time
    /// zone, so a thread running many sessions reads each in its own mode.
    static LEX_MODE: std::cell::Cell<LexMode> = const { std::cell::Cell::new(LexMode { no_backslash_escapes: false, ansi_quotes: false }) };
}

/// Sets the mode [`parse`], [`split_script`] and the fast INSERT path read
/// text in on this thread.
pub fn set_lex_mode(m: LexMode) {
    LEX_MODE.with(|c| c.set(m));
}

/// The mode text is read in on this thread (see [`set_lex_mode`]).
pub fn lex_mode() -> LexMode {
    LEX_MODE.with(|c| c.get())
}

/// Reads a quoted string starting at the quote `s[i]`, with MySQL's
/// escapes (none under NO_BACKSLASH_ESCAPES); returns its bytes and the
/// index after the closing quote.
pub(crate) fn read_string(s: &[u8], i: usize) -> Option<(Vec<u8>, usize)> {
    let q = s[i];
    let escapes = !lex_mode().no_backslash_escapes;
    let mut out = Vec::new();
    let mut j = i + 1;
    loop {
        // The bytes up to the next quote or escape go in as one run (most
        // strings have none: one allocation of their size).
        let run = s[j..].iter().position(|&c| c == q || (c == b'\\' && escapes))?;
        out.extend_from_slice(&s[j..j + run]);
        j += run;
        let c = s[j];
        if c == b'\\' && escapes {
            let n = *s.get(j + 1)?;
            match n {
                b'0' => out.push(0),
                b'b' => out.push(8),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(26),
                // Kept for LIKE: `\%` and `\_` match a literal % and _.
                b'%' | b'_' => out.extend_from_slice(&[b'\\', n]),
                _ => out.push(n),
            }
            j += 2;
        } else if c == q {
            if s.get(j + 1) == Some(&q) {
                out.push(q);
                j += 2;
            } else {
                return Some((out, j + 1));
            }
        }
    }
}

pub(crate) fn hex_digits(h: &[u8]) -> Option<Vec<u8>> {
    if h.len() % 2 == 1 {
        return None;
    }
    h.chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}

fn bit_digits(b: &[u8]) -> Option<Vec<u8>> {
    if !b.iter().all(|&c| c == b'0' || c == b'1') {
        return None;
    }
    let nbytes = b.len().div_ceil(8);
    let mut out = vec![0u8; nbytes];
    for (k, &c) in b.iter().rev().enumerate() {
        if c == b'1' {
            out[nbytes - 1 - k / 8] |= 1 << (k % 8);
        }
    }
    Some(out)
}

/// Splits a statement into tokens, dropping comments and expanding or
/// dropping version comments.
fn lex(s: &[u8]) -> SqlResult<Vec<Tok>> {
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    let mut gap = false;
    let mut in_version = false;
    // Past the `*/` closing the comment opened at `open`.
    let skip_comment = |open: usize, from: usize| -> SqlResult<usize> {
        match s[from..].windows(2).position(|w| w == b"*/") {
            Some(p) => Ok(from + p + 2),
            None => Err(syntax_at(s, open)),
        }
    };
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c.is_ascii_whitespace() {
            gap = true;
            i += 1;
            continue;
        }
        if c == b'#' || (c == b'-' && next == Some(b'-') && s.get(i + 2).is_none_or(|&b| b <= b' ')) {
            i = s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |p| i + p + 1);
            gap = true;
            continue;
        }
        if c == b'/' && next == Some(b'*') {
            gap = true;
            if s.get(i + 2) == Some(&b'!') {
                let d = s[i + 3..].iter().take(6).take_while(|b| b.is_ascii_digit()).count();
                if d >= 5 {
                    let v: u32 = std::str::from_utf8(&s[i + 3..i + 3 + d]).unwrap().parse().unwrap();
                    if !crate::version_comment_runs(v) {
                        i = skip_comment(i, i + 3)?;
                        continue;
                    }
                    i += 3 + d;
                } else {
                    i += 3;
                }
                if in_version {
                    // MySQL does not nest them either.
                    return Err(syntax_at(s, i));
                }
                in_version = true;
                continue;
            }
            // Ordinary comments, and MariaDB's `/*M!` which is dropped
            // whole.
            i = skip_comment(i, i + 2)?;
            continue;
        }
        if c == b'*' && next == Some(b'/') && in_version {
            in_version = false;
            gap = true;
            i += 2;
            continue;
        }
        let start = i;
        let tok = |k: K, end: usize, gap: bool| Tok { k, start, end, gap };
        if c == b'"' && lex_mode().ansi_quotes {
            // An identifier as `` `..` ``: a doubled `"` is one, no escapes.
            let (name, end) = quoted_ident(s, i)?;
            toks.push(tok(K::QIdent(name), end, gap));
            i = end;
        } else if c == b'\'' || c == b'"' {
            let (bytes, end) = read_string(s, i).ok_or_else(|| syntax_at(s, i))?;
            toks.push(tok(K::Str { bytes, binary: false, introduced: false }, end, gap));
            i = end;
        } else if c == b'`' {
            let (name, end) = quoted_ident(s, i)?;
            toks.push(tok(K::QIdent(name), end, gap));
            i = end;
        } else if is_word_byte(c) {
            let mut j = i;
            while j < s.len() && is_word_byte(s[j]) {
                j += 1;
            }
            let w = &s[i..j];
            let quote_next = s.get(j) == Some(&b'\'');
            let lw = w.to_ascii_lowercase();
            if quote_next && (lw == b"x" || lw == b"b") {
                let (body, end) = read_string(s, j).ok_or_else(|| syntax_at(s, j))?;
                let bytes = if lw == b"x" { hex_digits(&body) } else { bit_digits(&body) };
                let bytes = bytes.ok_or_else(|| syntax_at(s, i))?;
                toks.push(tok(K::Hex(bytes), end, gap));
                i = end;
            } else if quote_next && lw == b"n" {
                let (bytes, end) = read_string(s, j).ok_or_else(|| syntax_at(s, j))?;
                toks.push(tok(K::Str { bytes, binary: false, introduced: true }, end, gap));
                i = end;
            } else if w.len() > 2 && w.starts_with(b"0x") && w[2..].iter().all(u8::is_ascii_hexdigit) {
                let mut h = w[2..].to_vec();
                if h.len() % 2 == 1 {
                    h.insert(0, b'0');
                }
                toks.push(tok(K::Hex(hex_digits(&h).unwrap()), j, gap));
                i = j;
            } else if w.len() > 2 && w.starts_with(b"0b") && w[2..].iter().all(|&b| b == b'0' || b == b'1') {
                toks.push(tok(K::Hex(bit_digits(&w[2..]).unwrap()), j, gap));
                i = j;
            } else if lw.first() == Some(&b'_')
                && CHARSETS.iter().any(|cs| cs.as_bytes() == &lw[1..])
                && introduced_literal(s, j).is_some()
            {
                let k = introduced_literal(s, j).unwrap();
                let binary = &lw[1..] == b"binary";
                match s[k] {
                    b'\'' | b'"' => {
                        let (bytes, end) = read_string(s, k).ok_or_else(|| syntax_at(s, k))?;
                        toks.push(tok(K::Str { bytes, binary, introduced: true }, end, gap));
                        i = end;
                    }
                    _ => {
                        // `_cs X'..'` / `_cs 0x..` / `_cs b'..'`: lex the
                        // literal on its own, the introducer changes
                        // nothing we keep.
                        gap = true;
                        i = k;
                        continue;
                    }
                }
            } else {
                if std::str::from_utf8(w).is_err() {
                    return Err(syntax_at(s, i));
                }
                toks.push(tok(K::Word, j, gap));
                i = j;
            }
        } else {
            toks.push(tok(K::Punct, i + 1, gap));
            i += 1;
        }
        gap = false;
    }
    // An expanded comment left open at the end is accepted, as MySQL does.
    Ok(merge_strings(toks))
}

/// After an introducer ending at `j`: where its literal starts, if one
/// follows.
fn introduced_literal(s: &[u8], j: usize) -> Option<usize> {
    let k = j + s[j..].iter().take_while(|b| b.is_ascii_whitespace()).count();
    match s.get(k)? {
        b'\'' | b'"' => Some(k),
        b'x' | b'X' | b'b' | b'B' if s.get(k + 1) == Some(&b'\'') => Some(k),
        b'0' if matches!(s.get(k + 1), Some(b'x' | b'b')) => Some(k),
        _ => None,
    }
}

/// MySQL concatenates adjacent string literals: `'a' 'b'` is `'ab'`.
fn merge_strings(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::with_capacity(toks.len());
    for t in toks {
        if let (Some(prev), K::Str { bytes: more, introduced: false, .. }) = (out.last_mut(), &t.k) {
            if let K::Str { bytes, .. } = &mut prev.k {
                bytes.extend_from_slice(more);
                prev.end = t.end;
                continue;
            }
        }
        out.push(t);
    }
    out
}

/// The text sqlparser is given for these tokens, and where each token
/// starts in it.
fn emit(s: &[u8], toks: &[Tok]) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut at = Vec::with_capacity(toks.len());
    let mut prev_word = false;
    for t in toks {
        let literal = matches!(t.k, K::Str { .. } | K::Hex(_));
        if !out.is_empty() && (t.gap || (literal && prev_word)) {
            out.push(' ');
        }
        at.push(out.len());
        match &t.k {
            K::Word if s[t.start..].starts_with(b"0x") || s[t.start..].starts_with(b"0b") => {
                // Not a literal (`lex` took those), so an identifier as in
                // MySQL; sqlparser would read `0x` as an empty X''.
                out.push('`');
                out.push_str(std::str::from_utf8(&s[t.start..t.end]).unwrap_or("?"));
                out.push('`');
            }
            K::QIdent(name) => {
                // Re-quoted with backticks: it may have been `"..."`.
                out.push('`');
                out.push_str(&name.replace('`', "``"));
                out.push('`');
            }
            K::Word | K::Punct => {
                // Checked to be UTF-8 by `lex`.
                out.push_str(std::str::from_utf8(&s[t.start..t.end]).unwrap_or("?"));
            }
            K::Raw(r) => out.push_str(r),
            K::Str { bytes, binary: false, .. } if std::str::from_utf8(bytes).is_ok() => {
                // Only `'` and `\` are special to sqlparser's MySQL
                // tokenizer once escaped this way; every other byte,
                // control characters included, is taken as it is.
                out.push('\'');
                for ch in std::str::from_utf8(bytes).unwrap().chars() {
                    match ch {
                        '\'' => out.push_str("''"),
                        '\\' => out.push_str("\\\\"),
                        c => out.push(c),
                    }
                }
                out.push('\'');
            }
            K::Str { bytes, .. } | K::Hex(bytes) => {
                out.push_str("X'");
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.reserve(bytes.len() * 2 + 1);
                for &b in bytes {
                    out.push(HEX[usize::from(b >> 4)] as char);
                    out.push(HEX[usize::from(b & 15)] as char);
                }
                out.push('\'');
            }
        }
        prev_word = matches!(t.k, K::Word | K::Raw(_));
    }
    (out, at)
}

/// Runs sqlparser over the tokens; its errors become 1064 quoting the
/// original text from the failing token on.
fn sqlparse(s: &[u8], toks: &[Tok]) -> SqlResult<Vec<Statement>> {
    let (text, at) = emit(s, toks);
    sqlparse_emitted(s, toks, &text, &at)
}

/// [`sqlparse`], then unaliased select items are named by their text as
/// the client wrote it (see `colnames`).
fn sqlparse_named(s: &[u8], toks: &[Tok]) -> SqlResult<Vec<Statement>> {
    let (text, at) = emit(s, toks);
    let mut v = sqlparse_emitted(s, toks, &text, &at)?;
    let map = colnames::SourceMap { s, toks, at: &at, text: &text };
    for st in &mut v {
        colnames::name_items(&map, st);
    }
    Ok(v)
}

fn sqlparse_emitted(s: &[u8], toks: &[Tok], text: &str, at: &[usize]) -> SqlResult<Vec<Statement>> {
    sqlparser::parser::Parser::parse_sql(&MySqlDialect {}, text).map_err(|e| {
        let msg = e.to_string();
        let off = error_offset(&msg, text);
        let orig = match off {
            None => s.len(),
            Some(off) => {
                let k = at.partition_point(|&a| a <= off);
                if k == 0 {
                    toks.first().map_or(0, |t| t.start)
                } else {
                    toks[k - 1].start
                }
            }
        };
        syntax_at(s, orig)
    })
}

/// The byte offset in `text` of sqlparser's " at Line: L, Column: C".
fn error_offset(msg: &str, text: &str) -> Option<usize> {
    let p = msg.rfind(" at Line: ")?;
    let rest = &msg[p + " at Line: ".len()..];
    let (l, c) = rest.split_once(", Column: ")?;
    let line: usize = l.trim().parse().ok()?;
    let col: usize = c.trim().parse().ok()?;
    let (mut cl, mut cc) = (1, 1);
    for (i, ch) in text.char_indices() {
        if cl == line && cc == col {
            return Some(i);
        }
        if ch == '\n' {
            cl += 1;
            cc = 1;
        } else {
            cc += 1;
        }
    }
    Some(text.len())
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// A cursor over the tokens for the statements parsed here.
struct Cur<'a> {
    s: &'a [u8],
    t: &'a [Tok],
    i: usize,
}

impl<'a> Cur<'a> {
    fn word_at(&self, i: usize) -> Option<&'a str> {
        let t = self.t.get(i)?;
        match t.k {
            K::Word => std::str::from_utf8(&self.s[t.start..t.end]).ok(),
            _ => None,
        }
    }

    fn is_kw_at(&self, i: usize, kw: &str) -> bool {
        self.word_at(i).is_some_and(|w| w.eq_ignore_ascii_case(kw))
    }

    fn peek_kw(&self, kw: &str) -> bool {
        self.is_kw_at(self.i, kw)
    }

    fn kw(&mut self, kw: &str) -> bool {
        let ok = self.peek_kw(kw);
        if ok {
            self.i += 1;
        }
        ok
    }

    fn kws(&mut self, kws: &[&str]) -> bool {
        let ok = kws.iter().enumerate().all(|(k, kw)| self.is_kw_at(self.i + k, kw));
        if ok {
            self.i += kws.len();
        }
        ok
    }

    fn punct_at(&self, i: usize, p: u8) -> bool {
        self.t.get(i).is_some_and(|t| t.k == K::Punct && self.s[t.start] == p)
    }

    fn punct(&mut self, p: u8) -> bool {
        let ok = self.punct_at(self.i, p);
        if ok {
            self.i += 1;
        }
        ok
    }

    fn done(&self) -> bool {
        self.i >= self.t.len()
    }

    fn err(&self) -> SqlError {
        syntax_at(self.s, self.t.get(self.i).map_or(self.s.len(), |t| t.start))
    }

    fn expect_end(&self) -> SqlResult<()> {
        if self.done() {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn ident(&mut self) -> SqlResult<String> {
        let t = self.t.get(self.i).ok_or_else(|| self.err())?;
        let name = match &t.k {
            K::QIdent(n) => n.clone(),
            K::Word => self.word_at(self.i).ok_or_else(|| self.err())?.to_string(),
            _ => return Err(self.err()),
        };
        self.i += 1;
        Ok(name)
    }

    /// `t` or `db.t`
    fn table_name(&mut self) -> SqlResult<TableName> {
        let a = self.ident()?;
        if self.punct(b'.') {
            let b = self.ident()?;
            Ok(TableName { db: Some(a), name: b })
        } else {
            Ok(TableName { db: None, name: a })
        }
    }

    fn string(&mut self) -> SqlResult<Vec<u8>> {
        match self.t.get(self.i).map(|t| &t.k) {
            Some(K::Str { bytes, .. }) | Some(K::Hex(bytes)) => {
                self.i += 1;
                Ok(bytes.clone())
            }
            _ => Err(self.err()),
        }
    }

    fn number(&mut self) -> SqlResult<u64> {
        let n = self.word_at(self.i).and_then(|w| w.parse().ok()).ok_or_else(|| self.err())?;
        self.i += 1;
        Ok(n)
    }

    /// The text of tokens `from..to`, as sqlparser would see it.
    fn text(&self, from: usize, to: usize) -> String {
        emit(self.s, &self.t[from..to]).0
    }

    /// An account as written: `'u'@'%'`, `u@h`, `CURRENT_USER[()]`.
    fn account(&mut self) -> SqlResult<String> {
        let from = self.i;
        if self.kw("CURRENT_USER") {
            if self.punct(b'(') && !self.punct(b')') {
                return Err(self.err());
            }
        } else {
            self.user_part()?;
            if self.punct(b'@') {
                self.user_part()?;
            }
        }
        Ok(self.text(from, self.i))
    }

    fn user_part(&mut self) -> SqlResult<()> {
        if self.string().is_ok() || self.ident().is_ok() {
            Ok(())
        } else {
            Err(self.err())
        }
    }
}

/// Parses one statement. See the module documentation for what is
/// rewritten; everything that does not parse is error 1064.
/// The statement with its `?` placeholders numbered in text order (`?1`,
/// `?2`, ...; strings, quoted names and comments keep theirs), and how
/// many there are: what a prepared statement parses.
pub fn number_placeholders(stmt: &[u8]) -> SqlResult<(Vec<u8>, usize)> {
    let toks = lex(stmt)?;
    let mut out = Vec::with_capacity(stmt.len() + 8);
    let mut at = 0;
    let mut n = 0;
    for t in &toks {
        if t.k == K::Punct && stmt.get(t.start) == Some(&b'?') {
            n += 1;
            out.extend_from_slice(&stmt[at..t.start]);
            out.extend_from_slice(format!("?{n}").as_bytes());
            at = t.start + 1;
        }
    }
    out.extend_from_slice(&stmt[at..]);
    Ok((out, n))
}

/// `SET NAMES ...` / `SET CHARACTER SET ...` / `SET CHARSET ...` (see
/// [`Special::SetNames`]); `None` when it is another SET (`SET names = 1`
/// names a variable).
fn parse_set_names(c: &mut Cur) -> SqlResult<Option<Special>> {
    let character_set = if c.is_kw_at(1, "NAMES") {
        c.i = 2;
        false
    } else if c.is_kw_at(1, "CHARSET") {
        c.i = 2;
        true
    } else if c.is_kw_at(1, "CHARACTER") && c.is_kw_at(2, "SET") {
        c.i = 3;
        true
    } else {
        return Ok(None);
    };
    if c.punct_at(c.i, b'=') || c.punct_at(c.i, b':') {
        c.i = 0;
        return Ok(None);
    }
    // A charset or collation: a word, a quoted name or a string.
    let name = |c: &mut Cur| -> SqlResult<String> {
        match c.t.get(c.i).map(|t| &t.k) {
            Some(K::Str { bytes, .. }) => {
                let n = String::from_utf8_lossy(bytes).into_owned();
                c.i += 1;
                Ok(n)
            }
            _ => c.ident(),
        }
    };
    let charset = if c.kw("DEFAULT") { None } else { Some(name(c)?) };
    let collation = if !character_set && charset.is_some() && c.kw("COLLATE") {
        if c.kw("DEFAULT") {
            None
        } else {
            Some(name(c)?)
        }
    } else {
        None
    };
    c.expect_end()?;
    Ok(Some(Special::SetNames { charset, collation, character_set }))
}

/// `LOAD DATA [LOW_PRIORITY | CONCURRENT] [LOCAL] INFILE 'file'
/// [REPLACE | IGNORE] INTO TABLE t [CHARACTER SET cs] [{FIELDS | COLUMNS}
/// [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
/// [LINES [STARTING BY 's'] [TERMINATED BY 's']] [IGNORE n {LINES | ROWS}]
/// [(col | @var, ...)] [SET col = expr, ...]`, after `LOAD`.
fn parse_load_data(c: &mut Cur) -> SqlResult<crate::loaddata::LoadData> {
    use crate::loaddata::{LoadData, OnDup, Target};
    if !c.kw("DATA") {
        return Err(c.err());
    }
    let _ = c.kw("LOW_PRIORITY") || c.kw("CONCURRENT");
    let local = c.kw("LOCAL");
    if !c.kw("INFILE") {
        return Err(c.err());
    }
    let file = c.string()?;
    let dup = if c.kw("REPLACE") {
        OnDup::Replace
    } else if c.kw("IGNORE") {
        OnDup::Ignore
    } else {
        OnDup::Error
    };
    if !c.kws(&["INTO", "TABLE"]) {
        return Err(c.err());
    }
    let table = c.table_name()?;
    let mut ld = LoadData::new(local, file, table);
    ld.dup = dup;
    if c.kws(&["CHARACTER", "SET"]) || c.kw("CHARSET") {
        ld.charset = Some(match c.string() {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(_) => c.ident()?,
        });
    }
    // One byte, or none for ''.
    let one = |c: &mut Cur| -> SqlResult<Option<u8>> {
        let at = c.i;
        let b = c.string()?;
        match b.len() {
            0 => Ok(None),
            1 => Ok(Some(b[0])),
            _ => Err(SqlError::new(
                1083,
                "42000",
                format!(
                    "Field separator argument is not what is expected; check the manual (near {})",
                    c.text(at, at + 1)
                ),
            )),
        }
    };
    if c.kw("FIELDS") || c.kw("COLUMNS") {
        let mut any = false;
        loop {
            if c.kws(&["TERMINATED", "BY"]) {
                ld.fields_terminated = c.string()?;
            } else if c.kws(&["OPTIONALLY", "ENCLOSED", "BY"]) {
                ld.enclosed = one(c)?;
                ld.optionally = true;
            } else if c.kws(&["ENCLOSED", "BY"]) {
                ld.enclosed = one(c)?;
            } else if c.kws(&["ESCAPED", "BY"]) {
                ld.escaped = one(c)?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(c.err());
        }
    }
    if c.kw("LINES") {
        let mut any = false;
        loop {
            if c.kws(&["STARTING", "BY"]) {
                ld.lines_starting = c.string()?;
            } else if c.kws(&["TERMINATED", "BY"]) {
                ld.lines_terminated = c.string()?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(c.err());
        }
    }
    if c.kw("IGNORE") {
        ld.ignore_lines = c.number()?;
        if !(c.kw("LINES") || c.kw("ROWS")) {
            return Err(c.err());
        }
    }
    if c.punct(b'(') {
        let mut ts = Vec::new();
        if !c.punct(b')') {
            loop {
                if c.punct(b'@') {
                    let v = match c.string() {
                        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                        Err(_) => c.ident()?,
                    };
                    ts.push(Target::Var(v.to_ascii_lowercase()));
                } else {
                    // `t.col` names the column.
                    let mut n = c.ident()?;
                    while c.punct(b'.') {
                        n = c.ident()?;
                    }
                    ts.push(Target::Column(n));
                }
                if c.punct(b')') {
                    break;
                }
                if !c.punct(b',') {
                    return Err(c.err());
                }
            }
        }
        ld.targets = Some(ts);
    }
    if c.kw("SET") {
        loop {
            let mut n = c.ident()?;
            while c.punct(b'.') {
                n = c.ident()?;
            }
            if !c.punct(b'=') {
                return Err(c.err());
            }
            let from = c.i;
            let mut depth = 0i32;
            while !c.done() {
                if c.punct_at(c.i, b'(') {
                    depth += 1;
                } else if c.punct_at(c.i, b')') {
                    depth -= 1;
                } else if depth == 0 && c.punct_at(c.i, b',') {
                    break;
                }
                c.i += 1;
            }
            if from == c.i {
                return Err(c.err());
            }
            ld.set.push((n, c.text(from, c.i)));
            if !c.punct(b',') {
                break;
            }
        }
    }
    c.expect_end()?;
    Ok(ld)
}

pub fn parse(stmt: &[u8]) -> SqlResult<Parsed> {
    if let Some(fi) = crate::fastinsert::parse(stmt) {
        return Ok(Parsed::Special(Special::FastInsert(fi)));
    }
    parse_general(stmt)
}

/// `parse` without the fast INSERT path (an INSERT into a view).
pub fn parse_general(stmt: &[u8]) -> SqlResult<Parsed> {
    let stmt = strip_vertical(stmt);
    let mut toks = lex(stmt)?;
    // A trailing delimiter is harmless; anything after one is a second
    // statement, which the caller should have split off.
    while toks.last().is_some_and(|t| t.k == K::Punct && stmt[t.start] == b';') {
        toks.pop();
    }
    if toks.is_empty() {
        return Ok(Parsed::Empty);
    }
    // Stored programs hold `;` in their bodies: recognise them first.
    if let Some(what) = stored_program(stmt, &toks) {
        return Ok(Parsed::Special(Special::Unsupported(what)));
    }
    if let Some(p) = toks.iter().position(|t| t.k == K::Punct && stmt[t.start] == b';') {
        return Err(syntax_at(stmt, toks[p + 1].start));
    }
    let mut c = Cur { s: stmt, t: &toks, i: 0 };
    let first = c.word_at(0).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
    match first.as_str() {
        "SHOW" => {
            c.i = 1;
            return parse_show(&mut c).map(|s| Parsed::Special(Special::Show(s)));
        }
        "START" if c.is_kw_at(1, "TRANSACTION") && (2..toks.len()).any(|i| c.is_kw_at(i, "CONSISTENT")) => {
            c.i = 2;
            return parse_begin(&mut c);
        }
        "XA" => {
            c.i = 1;
            return parse_xa(&mut c).map(|x| Parsed::Special(Special::Xa(x)));
        }
        "LOAD" => {
            if c.is_kw_at(1, "XML") {
                return Ok(Parsed::Special(Special::Unsupported("LOAD XML")));
            }
            c.i = 1;
            return parse_load_data(&mut c).map(|l| Parsed::Special(Special::LoadData(Box::new(l))));
        }
        "DO" => return parse_do(stmt, &toks),
        "PREPARE" => return parse_prepare(&mut c),
        "EXECUTE" => return parse_execute(&mut c),
        "DEALLOCATE" | "DROP" if c.is_kw_at(1, "PREPARE") => {
            c.i = 2;
            let name = c.ident()?;
            c.expect_end()?;
            return Ok(Parsed::Special(Special::Deallocate(name)));
        }
        // MariaDB's grammar knows BACKUP only before STAGE and LOCK: its
        // error quotes what follows the word (MySQL 5's BACKUP TABLE).
        "BACKUP" if !(c.is_kw_at(1, "STAGE") || c.is_kw_at(1, "LOCK")) => {
            c.i = 1;
            return Err(c.err());
        }
        "SET" if c.is_kw_at(1, "NAMES") || c.is_kw_at(1, "CHARSET") || c.is_kw_at(1, "CHARACTER") => {
            if let Some(p) = parse_set_names(&mut c)? {
                return Ok(Parsed::Special(p));
            }
        }
        "LOCK" if c.is_kw_at(1, "TABLES") || c.is_kw_at(1, "TABLE") => {
            c.i = 2;
            return parse_lock(&mut c);
        }
        "UNLOCK" if c.is_kw_at(1, "TABLES") || c.is_kw_at(1, "TABLE") => {
            c.i = 2;
            c.expect_end()?;
            return Ok(Parsed::Special(Special::UnlockTables));
        }
        "OPTIMIZE" | "CHECK" | "ANALYZE" | "REPAIR" | "CHECKSUM" => {
            c.i = 1;
            if let Some(p) = parse_maintenance(&mut c, &first)? {
                return Ok(p);
            }
        }
        "GRANT" | "REVOKE" => return Ok(account(stmt, &toks)),
        "FLUSH" if c.is_kw_at(1, "PRIVILEGES") => return Ok(account(stmt, &toks)),
        "FLUSH" => {
            let k = if c.is_kw_at(1, "LOCAL") || c.is_kw_at(1, "NO_WRITE_TO_BINLOG") { 2 } else { 1 };
            if c.is_kw_at(k, "STATUS") {
                c.i = k + 1;
                c.expect_end()?;
                return Ok(Parsed::Special(Special::FlushStatus));
            }
        }
        "SET"
            if c.is_kw_at(1, "PASSWORD")
                || c.is_kw_at(1, "ROLE")
                || (c.is_kw_at(1, "DEFAULT") && c.is_kw_at(2, "ROLE")) =>
        {
            return Ok(account(stmt, &toks))
        }
        "CREATE" | "DROP" | "ALTER" | "RENAME" => {
            let k = if c.kws(&[&first, "OR", "REPLACE"]) { 3 } else { 1 };
            if c.is_kw_at(k, "USER") || c.is_kw_at(k, "ROLE") {
                return Ok(account(stmt, &toks));
            }
        }
        _ => {}
    }
    let mut flags = Flags::default();
    let mut toks = toks.clone();
    if first == "ALTER" || first == "CREATE" {
        if first == "CREATE" {
            strip_check_option(stmt, &mut toks, &mut flags);
        }
        if let Some(p) = ddl_rewrites(stmt, &mut toks, &mut flags, &first)? {
            return Ok(p);
        }
    }
    // `EXPLAIN [EXTENDED | PARTITIONS] UPDATE|DELETE ...` too.
    let (dml, b) = match first.as_str() {
        "EXPLAIN" | "DESCRIBE" | "DESC" => {
            let c = Cur { s: stmt, t: &toks, i: 0 };
            let b = if c.is_kw_at(1, "EXTENDED") || c.is_kw_at(1, "PARTITIONS") { 2 } else { 1 };
            (c.word_at(b).map(|w| w.to_ascii_uppercase()).unwrap_or_default(), b)
        }
        _ => (first.clone(), 0),
    };
    strip_dml_modifiers(stmt, &mut toks, &dml, b, &mut flags);
    multi_table_rewrites(stmt, &mut toks, &dml, b)?;
    strip_lock_in_share_mode(stmt, &mut toks, &mut flags);
    rewrite_mod(stmt, &mut toks);
    rewrite_interval_units(stmt, &mut toks);
    let mut v = sqlparse_named(stmt, &toks)?;
    if v.len() != 1 {
        return Err(syntax_at(stmt, stmt.len()));
    }
    Ok(Parsed::Std(Box::new(v.remove(0)), flags))
}

fn account(stmt: &[u8], toks: &[Tok]) -> Parsed {
    Parsed::Special(Special::Account(emit(stmt, toks).0))
}

/// `CREATE [OR REPLACE] [DEFINER = account] [SQL SECURITY x] [AGGREGATE]
/// TRIGGER|PROCEDURE|FUNCTION|EVENT`: the name to refuse it with.
fn stored_program(stmt: &[u8], toks: &[Tok]) -> Option<&'static str> {
    let mut c = Cur { s: stmt, t: toks, i: 0 };
    if !c.kw("CREATE") {
        return None;
    }
    c.kws(&["OR", "REPLACE"]);
    if c.kw("DEFINER") {
        c.punct(b'=');
        c.account().ok()?;
    }
    if c.kws(&["SQL", "SECURITY"]) {
        c.i += 1;
    }
    c.kw("AGGREGATE");
    for (kw, what) in [
        ("TRIGGER", "CREATE TRIGGER"),
        ("PROCEDURE", "CREATE PROCEDURE"),
        ("FUNCTION", "CREATE FUNCTION"),
        ("EVENT", "CREATE EVENT"),
    ] {
        if c.peek_kw(kw) {
            return Some(what);
        }
    }
    None
}

/// `START TRANSACTION` characteristics, one of which is WITH CONSISTENT
/// SNAPSHOT.
fn parse_begin(c: &mut Cur) -> SqlResult<Parsed> {
    let mut consistent_snapshot = false;
    let mut read_only = false;
    loop {
        if c.kws(&["WITH", "CONSISTENT", "SNAPSHOT"]) {
            consistent_snapshot = true;
        } else if c.kws(&["READ", "ONLY"]) {
            read_only = true;
        } else if c.kws(&["READ", "WRITE"]) {
            read_only = false;
        } else {
            return Err(c.err());
        }
        if !c.punct(b',') {
            break;
        }
    }
    c.expect_end()?;
    Ok(Parsed::Special(Special::Begin { consistent_snapshot, read_only }))
}

/// `DO expr, ...` parsed as `SELECT expr, ...`.
/// After `XA`: MariaDB's grammar. A gtrid or bqual is a string, hex or
/// bit literal of at most 64 bytes, a formatID a number up to 2^31-1; past
/// either bound it is a syntax error, as in MariaDB.
fn parse_xa(c: &mut Cur) -> SqlResult<crate::xa::XaStmt> {
    use crate::xa::XaStmt;
    fn xid(c: &mut Cur) -> SqlResult<crate::xa::Xid> {
        let part = |c: &mut Cur| -> SqlResult<Vec<u8>> {
            let b = c.string()?;
            if b.len() > crate::xa::MAX_PART {
                return Err(c.err());
            }
            Ok(b)
        };
        let gtrid = part(c)?;
        let (mut bqual, mut format_id) = (Vec::new(), 1);
        if c.punct(b',') {
            bqual = part(c)?;
            if c.punct(b',') {
                let at = c.i;
                let n = c.number()?;
                if n > crate::xa::MAX_FORMAT_ID {
                    c.i = at;
                    return Err(c.err());
                }
                format_id = n as u32;
            }
        }
        Ok(crate::xa::Xid { gtrid, bqual, format_id })
    }
    let stmt = if c.kw("START") || c.kw("BEGIN") {
        let xid = xid(c)?;
        let join = c.kw("JOIN") || c.kw("RESUME");
        XaStmt::Start { xid, join }
    } else if c.kw("END") {
        let xid = xid(c)?;
        let suspend = c.kw("SUSPEND");
        if suspend && c.kw("FOR") && !c.kw("MIGRATE") {
            return Err(c.err());
        }
        XaStmt::End { xid, suspend }
    } else if c.kw("PREPARE") {
        XaStmt::Prepare(xid(c)?)
    } else if c.kw("COMMIT") {
        let xid = xid(c)?;
        let one_phase = c.kw("ONE");
        if one_phase && !c.kw("PHASE") {
            return Err(c.err());
        }
        XaStmt::Commit { xid, one_phase }
    } else if c.kw("ROLLBACK") {
        XaStmt::Rollback(xid(c)?)
    } else if c.kw("RECOVER") {
        let mut format = None;
        if c.kw("FORMAT") {
            if !c.punct(b'=') {
                return Err(c.err());
            }
            let f = c.string()?;
            format = Some(String::from_utf8_lossy(&f).into_owned());
        }
        XaStmt::Recover { format }
    } else {
        return Err(c.err());
    };
    c.expect_end()?;
    Ok(stmt)
}

fn parse_do(stmt: &[u8], toks: &[Tok]) -> SqlResult<Parsed> {
    Ok(Parsed::Special(Special::Do(parse_expr_list(stmt, &toks[1..])?)))
}

/// `PREPARE name FROM expr`
fn parse_prepare(c: &mut Cur) -> SqlResult<Parsed> {
    c.i = 1;
    let name = c.ident()?;
    if !c.kw("FROM") {
        return Err(c.err());
    }
    let mut text = parse_expr_list(c.s, &c.t[c.i..])?;
    if text.len() != 1 {
        return Err(c.err());
    }
    Ok(Parsed::Special(Special::Prepare { name, text: text.remove(0) }))
}

/// `EXECUTE name [USING expr, ...]` or `EXECUTE IMMEDIATE expr [USING expr, ...]`
fn parse_execute(c: &mut Cur) -> SqlResult<Parsed> {
    c.i = 1;
    let immediate = c.is_kw_at(1, "IMMEDIATE") && c.t.len() > 2;
    // USING at parenthesis depth 0 ends the statement's text or name.
    let mut depth = 0i32;
    let mut using = None;
    for i in c.i..c.t.len() {
        if c.punct_at(i, b'(') {
            depth += 1;
        } else if c.punct_at(i, b')') {
            depth -= 1;
        } else if depth == 0 && c.is_kw_at(i, "USING") {
            using = Some(i);
            break;
        }
    }
    let end = using.unwrap_or(c.t.len());
    let params = match using {
        Some(u) => parse_expr_list(c.s, &c.t[u + 1..])?,
        None => Vec::new(),
    };
    if immediate {
        let mut text = parse_expr_list(c.s, &c.t[2..end])?;
        if text.len() != 1 {
            return Err(syntax_at(c.s, c.t[2].start));
        }
        return Ok(Parsed::Special(Special::ExecuteImmediate { text: text.remove(0), using: params }));
    }
    let name = c.ident()?;
    if c.i != end {
        return Err(c.err());
    }
    Ok(Parsed::Special(Special::Execute { name, using: params }))
}

/// A comma-separated list of expressions (as after SELECT or DO), parsed
/// by sqlparser; none is a syntax error at the statement's end.
fn parse_expr_list(stmt: &[u8], toks: &[Tok]) -> SqlResult<Vec<Expr>> {
    let Some(first) = toks.first() else { return Err(syntax_at(stmt, stmt.len())) };
    let mut t = vec![Tok::raw("SELECT", first.start)];
    t.extend_from_slice(toks);
    let mut v = sqlparse(stmt, &t)?;
    let bad = || syntax_at(stmt, first.start);
    if v.len() != 1 {
        return Err(bad());
    }
    let Statement::Query(q) = v.remove(0) else { return Err(bad()) };
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() {
        return Err(bad());
    }
    let SetExpr::Select(sel) = *q.body else { return Err(bad()) };
    if !sel.from.is_empty() || sel.selection.is_some() || sel.having.is_some() || sel.distinct.is_some() {
        return Err(bad());
    }
    let mut exprs = Vec::new();
    for item in sel.projection {
        match item {
            SelectItem::UnnamedExpr(e) => exprs.push(e),
            _ => return Err(bad()),
        }
    }
    Ok(exprs)
}

/// `LOCK TABLE[S] tbl [[AS] alias] READ [LOCAL] | [LOW_PRIORITY] WRITE, ...`
fn parse_lock(c: &mut Cur) -> SqlResult<Parsed> {
    let mut out = Vec::new();
    loop {
        let table = c.table_name()?;
        let explicit = c.kw("AS");
        let mut alias = None;
        if explicit || !(c.peek_kw("READ") || c.peek_kw("WRITE") || c.peek_kw("LOW_PRIORITY")) {
            alias = Some(c.ident()?);
        }
        let mut t = LockTarget { table, alias, write: false, local: false, low_priority: false };
        if c.kw("READ") {
            t.local = c.kw("LOCAL");
        } else {
            t.low_priority = c.kw("LOW_PRIORITY");
            t.write = true;
            if !c.kw("WRITE") {
                return Err(c.err());
            }
            // MariaDB's `WRITE CONCURRENT`.
            c.kw("CONCURRENT");
        }
        out.push(t);
        if !c.punct(b',') {
            break;
        }
    }
    c.expect_end()?;
    Ok(Parsed::Special(Special::LockTables(out)))
}

/// `OPTIMIZE|CHECK|ANALYZE|REPAIR|CHECKSUM [NO_WRITE_TO_BINLOG|LOCAL]
/// TABLE t, ... [options]`. None when it is not that form (`ANALYZE
/// SELECT` and the like go to sqlparser).
fn parse_maintenance(c: &mut Cur, first: &str) -> SqlResult<Option<Parsed>> {
    let op = match first {
        "OPTIMIZE" => MaintenanceOp::Optimize,
        "CHECK" => MaintenanceOp::Check,
        "ANALYZE" => MaintenanceOp::Analyze,
        "REPAIR" => MaintenanceOp::Repair,
        _ => MaintenanceOp::Checksum,
    };
    if !c.kw("NO_WRITE_TO_BINLOG") {
        c.kw("LOCAL");
    }
    if !(c.kw("TABLE") || c.kw("TABLES")) {
        return if op == MaintenanceOp::Analyze { Ok(None) } else { Err(c.err()) };
    }
    let mut tables = Vec::new();
    loop {
        tables.push(c.table_name()?);
        if !c.punct(b',') {
            break;
        }
    }
    // QUICK, EXTENDED, FAST, MEDIUM, CHANGED, FOR UPGRADE, USE_FRM,
    // PERSISTENT FOR ...: how hard to look, which changes nothing here.
    let persistent =
        op == MaintenanceOp::Analyze && c.word_at(c.i).is_some_and(|w| w.eq_ignore_ascii_case("PERSISTENT"));
    while !c.done() {
        if c.word_at(c.i).is_none()
            && !c.punct_at(c.i, b'(')
            && !c.punct_at(c.i, b')')
            && !c.punct_at(c.i, b',')
        {
            return Err(c.err());
        }
        c.i += 1;
    }
    Ok(Some(Parsed::Special(Special::Maintenance { op, tables, persistent })))
}

/// Takes a trailing `WITH [CASCADED | LOCAL] CHECK OPTION` off a CREATE
/// ... VIEW into `flags.check_option`.
fn strip_check_option(s: &[u8], toks: &mut Vec<Tok>, flags: &mut Flags) {
    let c = Cur { s, t: toks, i: 0 };
    let n = toks.len();
    if n < 4
        || !(0..n).any(|i| c.is_kw_at(i, "VIEW"))
        || !c.is_kw_at(n - 1, "OPTION")
        || !c.is_kw_at(n - 2, "CHECK")
    {
        return;
    }
    let (kind, from) = if c.is_kw_at(n - 3, "WITH") {
        ("CASCADED", n - 3)
    } else if n >= 5
        && c.is_kw_at(n - 4, "WITH")
        && (c.is_kw_at(n - 3, "CASCADED") || c.is_kw_at(n - 3, "LOCAL"))
    {
        (if c.is_kw_at(n - 3, "LOCAL") { "LOCAL" } else { "CASCADED" }, n - 4)
    } else {
        return;
    };
    toks.truncate(from);
    flags.check_option = kind.to_string();
}

/// Removes `LOCK IN SHARE MODE` (MySQL's older FOR SHARE), which
/// sqlparser 0.64 rejects.
fn strip_lock_in_share_mode(s: &[u8], toks: &mut Vec<Tok>, flags: &mut Flags) {
    let mut i = 0;
    while i + 4 <= toks.len() {
        let c = Cur { s, t: toks, i };
        if c.is_kw_at(i, "LOCK")
            && c.is_kw_at(i + 1, "IN")
            && c.is_kw_at(i + 2, "SHARE")
            && c.is_kw_at(i + 3, "MODE")
        {
            toks.drain(i..i + 4);
            flags.lock_in_share_mode = true;
        } else {
            i += 1;
        }
    }
}

/// `UPDATE [LOW_PRIORITY] [IGNORE] t` and `DELETE [LOW_PRIORITY] [QUICK]
/// [IGNORE] FROM`: sqlparser 0.64 read the first modifier as the table's
/// name (1146 "Table 'db.ignore' doesn't exist"). LOW_PRIORITY and QUICK
/// change nothing here (no table locks, no MyISAM index merging); IGNORE
/// goes into `flags.ignore`. All are removed from the statement.
fn strip_dml_modifiers(s: &[u8], toks: &mut Vec<Tok>, first: &str, b: usize, flags: &mut Flags) {
    let mods: &[&str] = match first {
        "UPDATE" => &["LOW_PRIORITY", "IGNORE"],
        "DELETE" => &["LOW_PRIORITY", "QUICK", "IGNORE"],
        _ => return,
    };
    let c = Cur { s, t: toks, i: 0 };
    let mut n = 0;
    while mods.iter().any(|m| c.is_kw_at(b + 1 + n, m)) {
        n += 1;
    }
    // QUICK is no reserved word: the words are modifiers when FROM or a
    // table name (a multi-table DELETE's `t1, t2 FROM`) follows them, not
    // in `DELETE quick, t FROM` (UPDATE's are reserved words).
    let table_next = matches!(toks.get(b + 1 + n).map(|t| &t.k), Some(K::Word | K::QIdent(_)));
    if n == 0 || (first == "DELETE" && !c.is_kw_at(b + 1 + n, "FROM") && !table_next) {
        return;
    }
    flags.ignore = (b + 1..=b + n).any(|i| c.is_kw_at(i, "IGNORE"));
    toks.drain(b + 1..=b + n);
}

/// The tokens of a statement's top level (outside parentheses): their
/// positions.
fn top_level(s: &[u8], toks: &[Tok]) -> Vec<usize> {
    let mut depth = 0i32;
    let mut v = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.k == K::Punct && s[t.start] == b'(' {
            depth += 1;
        } else if t.k == K::Punct && s[t.start] == b')' {
            depth -= 1;
        } else if depth == 0 {
            v.push(i);
        }
    }
    v
}

/// Multi-table UPDATE and DELETE forms sqlparser 0.64 does not read as
/// MySQL does:
/// - `UPDATE t1, t2 JOIN t3 ON ... SET`: sqlparser takes one table with
///   joins. The comma list becomes `t1 CROSS JOIN (t2 JOIN t3 ON ...)`
///   (an item with joins in parentheses, so a comma binds looser than
///   JOIN, as in MySQL).
/// - a multi-table DELETE (`DELETE t1 FROM ...`, `DELETE FROM t1 USING
///   ...`) with ORDER BY or LIMIT: MariaDB's grammar has neither there
///   (1064 quoting from ORDER / LIMIT).
fn multi_table_rewrites(s: &[u8], toks: &mut Vec<Tok>, first: &str, b: usize) -> SqlResult<()> {
    let top = top_level(s, toks);
    let snapshot = toks.clone();
    let c = Cur { s, t: &snapshot, i: 0 };
    match first {
        "UPDATE" => {
            // MySQL's UPDATE has no FROM (sqlparser reads one).
            if let Some(f) = top.iter().copied().find(|&i| i > b && c.is_kw_at(i, "FROM")) {
                return Err(syntax_at(s, toks[f].start));
            }
            let Some(set) = top.iter().copied().find(|&i| c.is_kw_at(i, "SET")) else { return Ok(()) };
            let commas: Vec<usize> =
                top.iter().copied().filter(|&i| i < set && c.punct_at(i, b',')).collect();
            if commas.is_empty() {
                return Ok(());
            }
            // Items: [1, comma0), (comma0, comma1), ..., (last, set).
            let mut bounds = vec![b + 1];
            bounds.extend(commas.iter().map(|&k| k + 1));
            let ends: Vec<usize> = commas.iter().copied().chain(std::iter::once(set)).collect();
            let has_join = |a: usize, b: usize| top.iter().any(|&i| i >= a && i < b && c.is_kw_at(i, "JOIN"));
            let mut out: Vec<Tok> = toks[..=b].to_vec();
            for (n, (&a, &b)) in bounds.iter().zip(&ends).enumerate() {
                if n > 0 {
                    out.push(Tok::raw("CROSS JOIN", toks[a - 1].start));
                }
                let wrap = has_join(a, b);
                if wrap {
                    out.push(Tok::raw("(", toks[a].start));
                }
                out.extend_from_slice(&toks[a..b]);
                if wrap {
                    out.push(Tok::raw(")", toks[b - 1].end));
                }
            }
            out.extend_from_slice(&toks[set..]);
            *toks = out;
        }
        "DELETE" => {
            let from = top.iter().copied().find(|&i| c.is_kw_at(i, "FROM"));
            let multi = from.is_some_and(|f| f > b + 1) || top.iter().any(|&i| c.is_kw_at(i, "USING"));
            if !multi {
                // `DELETE FROM t1, t2 WHERE` (USING missing) and `DELETE
                // FROM t1 JOIN t2`: MariaDB's 1064, quoting from WHERE (or
                // the end) and from the join.
                let Some(f) = from else { return Ok(()) };
                let end = top
                    .iter()
                    .copied()
                    .find(|&i| {
                        i > f && ["WHERE", "ORDER", "LIMIT", "RETURNING"].iter().any(|k| c.is_kw_at(i, k))
                    })
                    .unwrap_or(toks.len());
                let joins = ["JOIN", "LEFT", "RIGHT", "INNER", "CROSS", "STRAIGHT_JOIN", "NATURAL"];
                let list = || top.iter().copied().filter(|&i| i > f + 1 && i < end);
                if let Some(j) = list().find(|&i| joins.iter().any(|k| c.is_kw_at(i, k))) {
                    return Err(syntax_at(s, toks[j].start));
                }
                if list().any(|i| c.punct_at(i, b',')) {
                    return Err(syntax_at(s, toks.get(end).map_or(s.len(), |t| t.start)));
                }
                return Ok(());
            }
            for &i in &top {
                if (c.is_kw_at(i, "ORDER") && c.is_kw_at(i + 1, "BY")) || c.is_kw_at(i, "LIMIT") {
                    return Err(syntax_at(s, toks[i].start));
                }
            }
            // A target may be written `t.*` (`DELETE t1.*, t2.* FROM ...`).
            let stars: Vec<usize> =
                top.iter().copied().filter(|&i| c.punct_at(i, b'.') && c.punct_at(i + 1, b'*')).collect();
            for i in stars.into_iter().rev() {
                toks.drain(i..i + 2);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `a MOD b` is `a % b`; sqlparser 0.64 only knows the function MOD(a, b).
fn rewrite_mod(s: &[u8], toks: &mut [Tok]) {
    for i in 1..toks.len() {
        let c = Cur { s, t: toks, i };
        if c.is_kw_at(i, "MOD") && !c.punct_at(i + 1, b'(') && !c.punct_at(i - 1, b'.') {
            let t = &mut toks[i];
            t.k = K::Raw("%".into());
        }
    }
}

/// MySQL's compound INTERVAL units (`INTERVAL '1:30' HOUR_MINUTE`) as the
/// `leading TO last` qualifier sqlparser 0.64 reads; `bind.rs` names the
/// unit back from the pair. SECOND_MICROSECOND is written `MICROSECOND TO
/// SECOND`, as sqlparser reads no `TO` after SECOND. The units are reserved
/// words, so outside EXTRACT's `(unit FROM x)` (written as a call, below)
/// one is always an INTERVAL's unit.
fn rewrite_interval_units(s: &[u8], toks: &mut [Tok]) {
    const UNITS: &[(&str, &str)] = &[
        ("YEAR_MONTH", "YEAR TO MONTH"),
        ("DAY_HOUR", "DAY TO HOUR"),
        ("DAY_MINUTE", "DAY TO MINUTE"),
        ("DAY_SECOND", "DAY TO SECOND"),
        ("DAY_MICROSECOND", "DAY TO MICROSECOND"),
        ("HOUR_MINUTE", "HOUR TO MINUTE"),
        ("HOUR_SECOND", "HOUR TO SECOND"),
        ("HOUR_MICROSECOND", "HOUR TO MICROSECOND"),
        ("MINUTE_SECOND", "MINUTE TO SECOND"),
        ("MINUTE_MICROSECOND", "MINUTE TO MICROSECOND"),
        ("SECOND_MICROSECOND", "MICROSECOND TO SECOND"),
    ];
    for i in 1..toks.len() {
        let c = Cur { s, t: toks, i };
        // `EXTRACT(HOUR_MINUTE FROM x)`: sqlparser reads no compound unit
        // there, so it becomes the call `EXTRACT`('HOUR_MINUTE', x), which
        // bind.rs and func.rs take as EXTRACT with that unit.
        if i >= 2 && c.is_kw_at(i - 2, "EXTRACT") && c.punct_at(i - 1, b'(') && c.is_kw_at(i + 1, "FROM") {
            if let Some((u, _)) = UNITS.iter().find(|(u, _)| c.is_kw_at(i, u)) {
                toks[i - 2].k = K::Raw("`EXTRACT`".into());
                toks[i].k = K::Raw(format!("'{u}'"));
                toks[i + 1].k = K::Raw(",".into());
            }
            continue;
        }
        if c.punct_at(i - 1, b'(') || c.punct_at(i - 1, b'.') || c.punct_at(i + 1, b'(') {
            continue;
        }
        if let Some((_, q)) = UNITS.iter().find(|(u, _)| c.is_kw_at(i, u)) {
            toks[i].k = K::Raw((*q).into());
        }
    }
}

/// CREATE / ALTER rewrites: partitioning (refused), TokuDB's CLUSTERING,
/// ALTER TABLE ... DISABLE/ENABLE KEYS, and ALTER TABLE table options.
fn ddl_rewrites(s: &[u8], toks: &mut Vec<Tok>, flags: &mut Flags, first: &str) -> SqlResult<Option<Parsed>> {
    let c = Cur { s, t: toks, i: 0 };
    let mut k = 1;
    while c.is_kw_at(k, "OR")
        || c.is_kw_at(k, "REPLACE")
        || c.is_kw_at(k, "TEMPORARY")
        || c.is_kw_at(k, "ONLINE")
        || c.is_kw_at(k, "IGNORE")
    {
        k += 1;
    }
    let is_table = c.is_kw_at(k, "TABLE");
    // PARTITION BY outside parentheses (inside them it is a window's).
    if is_table {
        let mut depth = 0i32;
        for (i, t) in toks.iter().enumerate() {
            if t.k == K::Punct && s[t.start] == b'(' {
                depth += 1;
            } else if t.k == K::Punct && s[t.start] == b')' {
                depth -= 1;
            } else if depth == 0 && c.is_kw_at(i, "PARTITION") && c.is_kw_at(i + 1, "BY") {
                return Ok(Some(Parsed::Special(Special::Unsupported("partitioning"))));
            }
        }
    }
    if is_table {
        check_row_format(s, toks)?;
    }
    if first == "ALTER" && is_table {
        let mut a = Cur { s, t: toks, i: k + 1 };
        let table = a.table_name()?;
        let after = a.i;
        if a.kw("DISABLE") || a.kw("ENABLE") {
            let enable = a.is_kw_at(after, "ENABLE");
            if a.kw("KEYS") {
                a.expect_end()?;
                return Ok(Some(Parsed::Special(Special::AlterKeys {
                    db: table.db,
                    table: table.name,
                    enable,
                })));
            }
        }
        let options = take_table_options(s, toks, after, flags)?;
        if let Some(options) = options {
            return Ok(Some(Parsed::Special(Special::AlterTableOptions {
                db: table.db,
                table: table.name,
                options,
            })));
        }
    }
    clustering(s, toks, flags, first, is_table);
    Ok(None)
}

/// `ROW_FORMAT [=] x` of CREATE / ALTER TABLE: MariaDB's grammar takes
/// only its row types there (and we TokuDB's, `rowformat.rs`), as unquoted
/// words; anything else is 1064 near the value. Only options outside
/// parentheses and before a CREATE's SELECT are looked at, and only where
/// `=` follows (a column may be named `row_format`); without `=` the value
/// reaches `rowformat::resolve`, which refuses it too.
fn check_row_format(s: &[u8], toks: &[Tok]) -> SqlResult<()> {
    let c = Cur { s, t: toks, i: 0 };
    let mut depth = 0i32;
    for i in 0..toks.len() {
        if c.punct_at(i, b'(') {
            depth += 1;
        } else if c.punct_at(i, b')') {
            depth -= 1;
        } else if depth == 0 && c.is_kw_at(i, "SELECT") {
            break;
        } else if depth == 0 && c.is_kw_at(i, "ROW_FORMAT") && c.punct_at(i + 1, b'=') {
            let known = c.word_at(i + 2).is_some_and(crate::rowformat::is_name);
            if !known {
                return Err(syntax_at(s, toks.get(i + 2).map_or(s.len(), |t| t.start)));
            }
        }
    }
    Ok(())
}

/// Takes the table options out of an ALTER TABLE whose clauses start at
/// `from`. All clauses options: Some(options). Else they go to
/// `flags.table_options` and the rest stays.
fn take_table_options(
    s: &[u8],
    toks: &mut Vec<Tok>,
    from: usize,
    flags: &mut Flags,
) -> SqlResult<Option<Vec<(String, String)>>> {
    // Split the clauses at top-level commas.
    let mut clauses = Vec::new();
    let mut depth = 0i32;
    let mut start = from;
    for i in from..toks.len() {
        if toks[i].k == K::Punct {
            match s[toks[i].start] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b',' if depth == 0 => {
                    clauses.push((start, i));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    clauses.push((start, toks.len()));
    let mut options = Vec::new();
    let mut remove = Vec::new();
    let mut any_other = false;
    for &(a, b) in &clauses {
        let mut c = Cur { s, t: toks, i: a };
        let mut opts = Vec::new();
        while c.i < b {
            let save = c.i;
            match table_option(&mut c) {
                Some(o) if c.i <= b => opts.push(o),
                _ => {
                    c.i = save;
                    break;
                }
            }
        }
        if c.i == b && !opts.is_empty() {
            options.extend(opts);
            remove.push((a, b));
        } else {
            any_other = true;
        }
    }
    if options.is_empty() {
        return Ok(None);
    }
    if !any_other {
        return Ok(Some(options));
    }
    // Remove the option clauses with a neighbouring comma, last first.
    for &(a, b) in remove.iter().rev() {
        if b < toks.len() {
            toks.drain(a..=b);
        } else {
            toks.drain(a - 1..b);
        }
    }
    flags.table_options.extend(options);
    Ok(None)
}

/// One table option of ALTER TABLE (the ones sqlparser 0.64 rejects there).
fn table_option(c: &mut Cur) -> Option<(String, String)> {
    let value = |c: &mut Cur| -> Option<String> {
        c.punct(b'=');
        if let Ok(b) = c.string() {
            return Some(String::from_utf8_lossy(&b).into_owned());
        }
        c.ident().ok()
    };
    if c.kws(&["CONVERT", "TO"]) {
        if !(c.kws(&["CHARACTER", "SET"]) || c.kw("CHARSET")) {
            return None;
        }
        let cs = value(c)?;
        let mut v = cs;
        if c.kw("COLLATE") {
            v = format!("{v} COLLATE {}", value(c)?);
        }
        return Some(("CONVERT".into(), v));
    }
    // FORCE (rebuild the table) takes no value.
    if c.kw("FORCE") {
        return Some(("FORCE".into(), String::new()));
    }
    c.kw("DEFAULT");
    if c.kws(&["CHARACTER", "SET"]) || c.kw("CHARSET") {
        return Some(("CHARSET".into(), value(c)?));
    }
    for name in [
        "ALGORITHM",
        "LOCK",
        "ENGINE",
        "COMMENT",
        "COLLATE",
        "ROW_FORMAT",
        "KEY_BLOCK_SIZE",
        "PACK_KEYS",
        "CHECKSUM",
        "STATS_PERSISTENT",
        "STATS_AUTO_RECALC",
        "STATS_SAMPLE_PAGES",
        "DELAY_KEY_WRITE",
        "COMPRESSION",
        "ENCRYPTED",
        "TRANSACTIONAL",
        "PAGE_CHECKSUM",
    ] {
        if c.kw(name) {
            return Some((name.to_string(), value(c)?));
        }
    }
    None
}

/// TokuDB's CLUSTERING: `CREATE CLUSTERING INDEX`, and `CLUSTERING
/// KEY|INDEX` (optionally with UNIQUE either side) in CREATE TABLE and
/// ALTER TABLE ADD. The word is removed and the index recorded.
fn clustering(s: &[u8], toks: &mut Vec<Tok>, flags: &mut Flags, first: &str, is_table: bool) {
    let c = Cur { s, t: toks, i: 0 };
    if first == "CREATE" && !is_table {
        // CREATE [UNIQUE] CLUSTERING [UNIQUE] INDEX name ON ...
        let mut j = 1;
        let mut found = None;
        while j < toks.len() && !c.is_kw_at(j, "INDEX") && !c.is_kw_at(j, "KEY") {
            if c.is_kw_at(j, "CLUSTERING") {
                found = Some(j);
            }
            j += 1;
        }
        if let Some(p) = found {
            let name = Cur { s, t: toks, i: j + 1 }.ident().ok();
            toks.remove(p);
            flags.clustering_indexes.extend(name);
        }
        return;
    }
    if !is_table {
        return;
    }
    // Names of the named indexes, for MySQL's invented names.
    let mut used: Vec<String> = Vec::new();
    for i in 0..toks.len() {
        let c = Cur { s, t: toks, i };
        if (c.is_kw_at(i, "KEY") || c.is_kw_at(i, "INDEX")) && !c.punct_at(i + 1, b'(') {
            if let Ok(n) = (Cur { s, t: toks, i: i + 1 }).ident() {
                used.push(n.to_ascii_lowercase());
            }
        }
    }
    let mut i = 0;
    while i < toks.len() {
        let c = Cur { s, t: toks, i };
        if !c.is_kw_at(i, "CLUSTERING") {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if c.is_kw_at(j, "UNIQUE") {
            j += 1;
        }
        if !(c.is_kw_at(j, "KEY") || c.is_kw_at(j, "INDEX")) {
            i += 1;
            continue;
        }
        let kw = j;
        let mut named = None;
        if !c.punct_at(kw + 1, b'(') && !c.is_kw_at(kw + 1, "USING") {
            named = (Cur { s, t: toks, i: kw + 1 }).ident().ok();
        }
        let name = match named {
            Some(n) => n,
            None => {
                // The first column of the list.
                let open = (kw + 1..toks.len()).find(|&p| c.punct_at(p, b'('));
                let col = open.and_then(|o| (Cur { s, t: toks, i: o + 1 }).ident().ok());
                let Some(col) = col else {
                    i += 1;
                    continue;
                };
                let mut n = col.clone();
                let mut suffix = 2;
                while used.contains(&n.to_ascii_lowercase()) {
                    n = format!("{col}_{suffix}");
                    suffix += 1;
                }
                used.push(n.to_ascii_lowercase());
                let at = toks[kw].end;
                toks.insert(kw + 1, Tok::raw(&format!("`{}`", n.replace('`', "``")), at));
                n
            }
        };
        toks.remove(i);
        flags.clustering_indexes.push(name);
    }
}

// ---------------------------------------------------------------------------
// SHOW
// ---------------------------------------------------------------------------

fn parse_show(c: &mut Cur) -> SqlResult<ShowStmt> {
    use ShowKind as S;
    let mut st = ShowStmt::new(S::Databases);
    if c.kw("FULL") {
        st.full = true;
    }
    if c.kw("GLOBAL") {
        st.global = true;
    } else if !c.kw("SESSION") {
        c.kw("LOCAL");
    }
    let scoped = c.i;
    let k = if c.kw("DATABASES") || c.kw("SCHEMAS") {
        S::Databases
    } else if c.kw("TABLES") {
        S::Tables
    } else if c.kws(&["TABLE", "STATUS"]) {
        S::TableStatus
    } else if c.kw("CREATE") {
        return show_create(c, st);
    } else if c.kw("COLUMNS") || c.kw("FIELDS") {
        S::Columns
    } else if c.kw("INDEX") || c.kw("INDEXES") || c.kw("KEYS") {
        S::Index
    } else if c.kw("ENGINES") || c.kws(&["STORAGE", "ENGINES"]) {
        S::Engines
    } else if c.kw("COLLATION") {
        S::Collation
    } else if c.kws(&["CHARACTER", "SET"]) || c.kw("CHARSET") {
        S::Charset
    } else if c.kw("VARIABLES") {
        S::Variables
    } else if c.kw("STATUS") {
        S::Status
    } else if c.kw("WARNINGS") {
        S::Warnings
    } else if c.kw("ERRORS") {
        S::Errors
    } else if c.kw("COUNT") {
        if !(c.punct(b'(') && c.punct(b'*') && c.punct(b')')) {
            return Err(c.err());
        }
        if c.kw("WARNINGS") {
            S::WarningCount
        } else if c.kw("ERRORS") {
            S::ErrorCount
        } else {
            return Err(c.err());
        }
    } else if c.kw("PROCESSLIST") {
        S::ProcessList
    } else if c.kw("GRANTS") {
        if c.kw("FOR") {
            st.name = Some(c.account()?);
        }
        S::Grants
    } else if c.kw("ENGINE") {
        st.name = Some(c.ident()?);
        if c.kw("STATUS") {
            S::EngineStatus
        } else if c.kw("MUTEX") {
            S::EngineMutex
        } else if c.kw("LOGS") {
            S::EngineLogs
        } else {
            return Err(c.err());
        }
    } else if c.kws(&["MASTER", "STATUS"]) || c.kws(&["BINLOG", "STATUS"]) {
        S::MasterStatus
    } else if c.kws(&["SLAVE", "STATUS"])
        || c.kws(&["REPLICA", "STATUS"])
        || c.kws(&["ALL", "SLAVES", "STATUS"])
    {
        S::SlaveStatus
    } else if c.kws(&["BINARY", "LOGS"]) || c.kws(&["MASTER", "LOGS"]) {
        S::BinaryLogs
    } else if c.kw("TRIGGERS") {
        S::Triggers
    } else if c.kws(&["PROCEDURE", "STATUS"])
        || c.kws(&["PACKAGE", "STATUS"])
        || c.kws(&["PACKAGE", "BODY", "STATUS"])
    {
        // MariaDB's packages (Oracle mode) list in PROCEDURE STATUS's
        // columns; there are none, as there are no routines
        // (mariadb-dump --routines asks for them).
        S::ProcedureStatus
    } else if c.kws(&["FUNCTION", "STATUS"]) {
        S::FunctionStatus
    } else if c.kw("EVENTS") {
        S::Events
    } else if c.kw("PLUGINS") {
        S::Plugins
    } else if c.kws(&["OPEN", "TABLES"]) {
        S::OpenTables
    } else if c.kw("PRIVILEGES") {
        S::Privileges
    } else if c.kw("PROFILES") {
        S::Profiles
    } else {
        // After TABLE only STATUS may come: the error quotes what does.
        c.kw("TABLE");
        return Err(c.err());
    };
    st.kind = k;
    // FULL and the scope only go with some kinds.
    let full_ok = matches!(k, S::Tables | S::Columns | S::ProcessList);
    let scope_ok = matches!(k, S::Variables | S::Status);
    if (st.full && !full_ok) || (scoped > 1 + usize::from(st.full) && !scope_ok) {
        return Err(syntax_at(c.s, c.t[1].start));
    }
    let from = |c: &mut Cur| c.kw("FROM") || c.kw("IN");
    match k {
        S::Columns | S::Index => {
            if !from(c) {
                return Err(c.err());
            }
            let t = c.table_name()?;
            st.db = t.db;
            st.table = Some(t.name);
            if from(c) {
                st.db = Some(c.ident()?);
            }
        }
        S::Tables | S::TableStatus | S::Triggers | S::Events | S::OpenTables if from(c) => {
            st.db = Some(c.ident()?);
        }
        S::Warnings | S::Errors => {
            if c.kw("LIMIT") {
                let a = c.number()?;
                st.limit = Some(if c.punct(b',') {
                    (a, c.number()?)
                } else if c.kw("OFFSET") {
                    (c.number()?, a)
                } else {
                    (0, a)
                });
            }
            c.expect_end()?;
            return Ok(st);
        }
        _ => {}
    }
    let filter_ok = !matches!(
        k,
        S::Grants
            | S::EngineStatus
            | S::EngineMutex
            | S::EngineLogs
            | S::MasterStatus
            | S::SlaveStatus
            | S::BinaryLogs
            | S::ProcessList
            | S::Privileges
            | S::Profiles
            | S::WarningCount
            | S::ErrorCount
    );
    if filter_ok && c.kw("LIKE") {
        st.like = Some(c.string()?);
    } else if filter_ok && c.peek_kw("WHERE") {
        st.filter = Some(where_expr(c)?);
    }
    c.expect_end()?;
    Ok(st)
}

/// `WHERE expr` to the end, parsed as `SELECT 1 WHERE expr`.
fn where_expr(c: &mut Cur) -> SqlResult<Expr> {
    let at = c.t[c.i].start;
    let mut t = vec![Tok::raw("SELECT", at), Tok::raw("1", at)];
    t.extend_from_slice(&c.t[c.i..]);
    c.i = c.t.len();
    let bad = || syntax_at(c.s, at);
    let mut v = sqlparse(c.s, &t)?;
    if v.len() != 1 {
        return Err(bad());
    }
    let Statement::Query(q) = v.remove(0) else { return Err(bad()) };
    if q.order_by.is_some() || q.limit_clause.is_some() {
        return Err(bad());
    }
    let SetExpr::Select(sel) = *q.body else { return Err(bad()) };
    if sel.group_by != sqlparser::ast::GroupByExpr::Expressions(vec![], vec![]) || sel.having.is_some() {
        return Err(bad());
    }
    sel.selection.ok_or_else(bad)
}

fn show_create(c: &mut Cur, mut st: ShowStmt) -> SqlResult<ShowStmt> {
    use ShowKind as S;
    if st.full || st.global || c.i > 2 {
        return Err(syntax_at(c.s, c.t[1].start));
    }
    if c.kw("DATABASE") || c.kw("SCHEMA") {
        st.kind = S::CreateDatabase;
        st.if_not_exists = c.kws(&["IF", "NOT", "EXISTS"]);
        st.db = Some(c.ident()?);
    } else if c.kw("USER") {
        st.kind = S::CreateUser;
        st.name = Some(c.account()?);
    } else {
        st.kind = if c.kw("TABLE") {
            S::CreateTable
        } else if c.kw("VIEW") {
            S::CreateView
        } else if c.kw("TRIGGER") {
            S::CreateTrigger
        } else if c.kw("PROCEDURE") {
            S::CreateProcedure
        } else if c.kw("FUNCTION") {
            S::CreateFunction
        } else if c.kw("EVENT") {
            S::CreateEvent
        } else {
            return Err(c.err());
        };
        let t = c.table_name()?;
        st.db = t.db;
        st.table = Some(t.name);
    }
    c.expect_end()?;
    Ok(st)
}

/// A statement without the `\\G` terminator the splitter leaves on it.
fn strip_vertical(stmt: &[u8]) -> &[u8] {
    let t = trim(stmt);
    match t.strip_suffix(b"\\G").or_else(|| t.strip_suffix(b"\\g")) {
        Some(rest) => rest,
        None => stmt,
    }
}
