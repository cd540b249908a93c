//! `LOAD DATA [LOCAL] INFILE`: a text file's lines become rows, written
//! through INSERT's path (`dml::load_rows`: conversion, defaults,
//! AUTO_INCREMENT, CHECK, unique and foreign keys).
//!
//! Into an empty table the rows take the bulk loader instead
//! (`bulkload::load_primary`): each line is read and converted the same
//! way, in the same batches (`dml::convert_rows`), then sorted and loaded
//! into new dictionaries swapped in by ALTER's rebuild; the answer
//! (Records / Deleted / Skipped / Warnings) is the ordinary path's. With
//! a unique secondary key or a foreign key only the non-unique indexes
//! are deferred and built after the rows (`bulkload::deferring`).
//!
//! The input streams: it is read through a buffer, parsed one line at a
//! time, and written in batches of [`BATCH`] rows inside the statement's
//! transaction, so a file larger than memory loads (the transaction's
//! undo is the engine's, as for INSERT ... SELECT).
//!
//! Where the bytes come from:
//! - a server-side file (no LOCAL): only under `secure_file_priv` when the
//!   session runs for a server (`ServerInfo::remote`): NULL refuses every
//!   file, a folder admits the files under it (after resolving links),
//!   empty admits any (error 1290 otherwise). An embedded session reads
//!   any file its process can;
//! - LOCAL: the client's file, through the [`LocalInfile`] the server
//!   gives `Session::execute_local` (it asks the client for the file and
//!   streams its packets). An embedded session reads the file itself; a
//!   server session without one (a prepared statement) gets 4166.
//!
//! The format is MySQL's: FIELDS TERMINATED BY (default tab), [OPTIONALLY]
//! ENCLOSED BY (default none), ESCAPED BY (default `\`), LINES STARTING BY
//! (default none) and TERMINATED BY (default newline). `\N` unenclosed is
//! NULL (the word NULL when there is no escape character); an escape before
//! 0 b n r t Z gives NUL, backspace, newline, CR, tab, ^Z, before anything
//! else that byte. A doubled enclosure inside an enclosed field is one.
//! Too few fields: the rest of the columns take their defaults and
//! warning 1261; too many: warning 1262. Strict mode makes conversion
//! errors errors, as for INSERT; IGNORE and REPLACE act on duplicates as
//! for INSERT.

use std::io::Read;
use std::sync::Arc;

use crate::error::{SqlError, SqlResult, Warning};
use crate::expr::Expr;
use crate::lex::TableName;
use crate::session::{Outcome, Session};
use crate::value::Value;

/// Rows written per batch.
pub const BATCH: usize = 10_000;

/// What a server gives the statement it runs (`Session::execute_local`):
/// the client's files for LOAD DATA LOCAL, and where a query's rows go.
pub trait LocalInfile {
    /// Asks the client for `name` and returns its contents as a stream.
    /// Errors end the statement (4166 when the client cannot send files).
    fn open(&mut self, name: &[u8]) -> SqlResult<Box<dyn Read + '_>>;

    /// Where a query takes its rows as it makes them (the server: straight
    /// to the client), rather than returning them all in its `ResultSet`
    /// (whose rows are then empty); `None` (the default): returned.
    fn rows(&mut self) -> Option<&mut dyn crate::session::RowSink> {
        None
    }
}

/// What to do with a row whose key is taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OnDup {
    Error,
    Replace,
    Ignore,
}

/// Where a field goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Column(String),
    /// `@name` (lower case).
    Var(String),
}

/// A parsed LOAD DATA statement.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadData {
    pub local: bool,
    pub file: Vec<u8>,
    pub dup: OnDup,
    pub table: TableName,
    pub charset: Option<String>,
    pub fields_terminated: Vec<u8>,
    pub enclosed: Option<u8>,
    pub optionally: bool,
    pub escaped: Option<u8>,
    pub lines_starting: Vec<u8>,
    pub lines_terminated: Vec<u8>,
    pub ignore_lines: u64,
    /// `None`: every column, in table order.
    pub targets: Option<Vec<Target>>,
    /// `SET col = expr`: the column and the expression's text.
    pub set: Vec<(String, String)>,
}

impl LoadData {
    pub fn new(local: bool, file: Vec<u8>, table: TableName) -> LoadData {
        LoadData {
            local,
            file,
            dup: OnDup::Error,
            table,
            charset: None,
            fields_terminated: b"\t".to_vec(),
            enclosed: None,
            optionally: false,
            escaped: Some(b'\\'),
            lines_starting: Vec::new(),
            lines_terminated: b"\n".to_vec(),
            ignore_lines: 0,
            targets: None,
            set: Vec::new(),
        }
    }
}

fn secure_file_priv_error() -> SqlError {
    SqlError::new(
        1290,
        "HY000",
        "The MariaDB server is running with the --secure-file-priv option so it cannot execute this statement",
    )
}

/// Opens a server-side file, checked against secure_file_priv.
fn open_server_file(s: &Session, name: &[u8]) -> SqlResult<Box<dyn Read>> {
    let name = String::from_utf8_lossy(name).into_owned();
    let remote = s.server.remote;
    let priv_dir = s.server.vars.iter().find(|(k, _)| k == "secure_file_priv").map(|(_, v)| v.clone());
    let mut path = std::path::PathBuf::from(&name);
    if remote {
        let Some(Some(dir)) = priv_dir else { return Err(secure_file_priv_error()) };
        if !dir.is_empty() {
            if path.is_relative() {
                path = std::path::Path::new(&dir).join(path);
            }
            // Links and `..` resolved first: the file itself must be under the folder.
            let real = path.canonicalize().map_err(|e| not_found(&path.display().to_string(), &e))?;
            let root = std::path::Path::new(&dir).canonicalize().map_err(|_| secure_file_priv_error())?;
            if !real.starts_with(&root) {
                return Err(secure_file_priv_error());
            }
            path = real;
        }
    }
    let f = std::fs::File::open(&path).map_err(|e| not_found(&path.display().to_string(), &e))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(SqlError::new(
            29,
            "HY000",
            format!("File '{}' not found (Errcode: 21 \"Is a directory\")", path.display()),
        ));
    }
    Ok(Box::new(f))
}

fn not_found(path: &str, e: &std::io::Error) -> SqlError {
    let code = e.raw_os_error().unwrap_or(0);
    let what = match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        _ => e.to_string(),
    };
    SqlError::new(13, "HY000", format!("Can't get stat of '{path}' (Errcode: {code} \"{what}\")"))
}

fn local_disabled() -> SqlError {
    SqlError::new(
        4166,
        "HY000",
        "The used command is not allowed because the MariaDB server or client has disabled the local infile capability",
    )
}

/// Runs LOAD DATA; `local` is the server's way to the client's file.
pub fn run(s: &mut Session, ld: &LoadData, local: Option<&mut dyn LocalInfile>) -> SqlResult<Outcome> {
    if ld.fields_terminated.is_empty() && ld.enclosed.is_none() {
        return Err(SqlError::unsupported(
            "LOAD DATA with fixed-width fields (FIELDS TERMINATED BY '' ENCLOSED BY '')",
        ));
    }
    if ld.lines_terminated.is_empty() && ld.fields_terminated.is_empty() {
        return Err(SqlError::unsupported("LOAD DATA with empty field and line terminators"));
    }
    if let Some(cs) = &ld.charset {
        let ok = ["utf8", "utf8mb3", "utf8mb4", "binary", "latin1", "ascii"]
            .iter()
            .any(|c| cs.eq_ignore_ascii_case(c));
        if !ok {
            return Err(SqlError::new(1115, "42000", format!("Unknown character set: '{cs}'")));
        }
    }
    // The table first: a bad table is reported before the file is asked for.
    let db = match &ld.table.db {
        Some(d) => d.clone(),
        None => s.db.clone().ok_or_else(SqlError::no_db)?,
    };
    let t = s.inner.table(&db, &ld.table.name)?;
    // The privileges of INSERT (and REPLACE's DELETE); a server-side file
    // needs FILE too, as in MySQL. (`execute_local` reaches here without
    // `run_parsed`, which refreshes them for other statements.)
    if s.login.is_some() {
        s.refresh_privs();
        s.check_table("INSERT", &t.def.db, &t.def.name)?;
        if ld.dup == OnDup::Replace {
            s.check_table("DELETE", &t.def.db, &t.def.name)?;
        }
        if !ld.local {
            s.check_global(&["FILE"])?;
        }
    }
    let plan = Plan::new(s, &t, ld)?;
    let r: Box<dyn Read + '_> = match (ld.local, local) {
        (true, Some(l)) => l.open(&ld.file)?,
        (true, None) if s.server.remote => return Err(local_disabled()),
        _ => open_server_file(s, &ld.file)?,
    };
    let mut input = Some(r);
    // Into an empty table: the rows by the bulk loader (`bulkload.rs`).
    if crate::bulkload::primary_eligible(s, &t) {
        if let Some(done) = load_bulk(s, &t, ld, &plan, &mut input)? {
            return Ok(done);
        }
    }
    let r = input.take().expect("not read by the bulk path");
    crate::bulkload::deferring(s, t, |s, t| load(s, t, ld, &plan, r))
}

/// The column list and SET assignments, bound to the table.
struct Plan {
    /// Per field: the column (position in `cols`) or the user variable.
    fields: Vec<Dest>,
    /// The columns written, in the order of each row's values.
    cols: Vec<usize>,
    /// `SET`: the position in `cols` and the bound expression.
    set: Vec<(usize, Expr)>,
    width: usize,
}

enum Dest {
    Col(usize),
    Var(String),
}

impl Plan {
    fn new(s: &Session, t: &Arc<crate::table::Table>, ld: &LoadData) -> SqlResult<Plan> {
        let def = &t.def;
        let mut cols: Vec<usize> = Vec::new();
        let mut fields = Vec::new();
        let col_pos = |cols: &mut Vec<usize>, i: usize| match cols.iter().position(|&c| c == i) {
            Some(p) => p,
            None => {
                cols.push(i);
                cols.len() - 1
            }
        };
        match &ld.targets {
            None => {
                for i in 0..def.columns.len() {
                    fields.push(Dest::Col(col_pos(&mut cols, i)));
                }
            }
            Some(ts) => {
                for tg in ts {
                    match tg {
                        Target::Column(n) => {
                            let i =
                                def.col_index(n).ok_or_else(|| SqlError::unknown_column(n, "field list"))?;
                            fields.push(Dest::Col(col_pos(&mut cols, i)));
                        }
                        Target::Var(v) => fields.push(Dest::Var(v.clone())),
                    }
                }
            }
        }
        let scope = crate::expr::table_scope(def, &def.name);
        let sysvar = |n: &str| s.sysvar(n);
        let mut no_sub = |_q: &sqlparser::ast::Query| -> SqlResult<Vec<Vec<Value>>> {
            Err(SqlError::unsupported("subqueries in LOAD DATA ... SET"))
        };
        let mut set = Vec::new();
        for (name, text) in &ld.set {
            let i = def.col_index(name).ok_or_else(|| SqlError::unknown_column(name, "field list"))?;
            let e = sqlparser::parser::Parser::new(&sqlparser::dialect::MySqlDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_expr())
                .map_err(|_| SqlError::syntax(format!("'{text}'")))?;
            let (x, _) = crate::bind::Binder::plain(&scope, &sysvar, &mut no_sub, "field list").bind(&e)?;
            set.push((col_pos(&mut cols, i), x));
        }
        let width = def.columns.len();
        Ok(Plan { fields, cols, set, width })
    }
}

/// Writes a batch of rows (values in `Plan::cols` order; `base` rows
/// came before it, the warnings are its lines'); returns rows affected.
type Flush<'a> = dyn FnMut(&mut Session, Vec<Vec<Value>>, Vec<Warning>, usize) -> SqlResult<u64> + 'a;

/// Reads the rows and writes them in batches, in one transaction.
fn load(
    s: &mut Session,
    t: &Arc<crate::table::Table>,
    ld: &LoadData,
    plan: &Plan,
    input: Box<dyn Read + '_>,
) -> SqlResult<Outcome> {
    let from = s.warnings.len();
    let mut rd = Reader::new(input, ld);
    let ignore = ignores(ld);
    let r = s.in_txn(true, |s, txn| {
        let mut flush = |s: &mut Session, batch: Vec<Vec<Value>>, w: Vec<Warning>, base: usize| {
            crate::dml::load_rows(s, txn, t, &plan.cols, batch, ignore, ld.dup == OnDup::Replace, base, w)
        };
        read_rows(s, ld, plan, &mut rd, &mut flush)
    });
    outcome(s, from, t, ld, r)
}

/// LOAD DATA into an empty table by the bulk loader (`bulkload.rs`):
/// the rows are read and converted as [`load`] does them, in the same
/// batches, then sorted and loaded into new dictionaries. `None` when
/// the table turned out not to qualify (`input` is then unread).
fn load_bulk(
    s: &mut Session,
    t: &Arc<crate::table::Table>,
    ld: &LoadData,
    plan: &Plan,
    input: &mut Option<Box<dyn Read + '_>>,
) -> SqlResult<Option<Outcome>> {
    let from = s.warnings.len();
    let ignore = ignores(ld);
    let dups = match ld.dup {
        OnDup::Replace => crate::bulkload::Dups::Replace,
        _ if ignore => crate::bulkload::Dups::Ignore,
        OnDup::Ignore | OnDup::Error => crate::bulkload::Dups::Error,
    };
    let mut read = |s: &mut Session,
                    txn: &fractaldb::Txn,
                    t: &Arc<crate::table::Table>,
                    c: &mut crate::bulkload::Collector<'_>|
     -> SqlResult<u64> {
        let mut rd = Reader::new(input.take().expect("read once"), ld);
        let mut flush = |s: &mut Session, batch: Vec<Vec<Value>>, w: Vec<Warning>, base: usize| {
            c.convert(s, txn, t, &plan.cols, batch, ignore, base, w).map(|()| 0)
        };
        Ok(read_rows(s, ld, plan, &mut rd, &mut flush)?.0)
    };
    match crate::bulkload::load_primary(s, t, dups, &mut read) {
        Ok(None) => Ok(None),
        Ok(Some(r)) => outcome(s, from, t, ld, Ok(r)).map(Some),
        Err(e) => outcome(s, from, t, ld, Err(e)).map(Some),
    }
}

/// IGNORE, or LOCAL without REPLACE (which acts as IGNORE: the server
/// cannot stop the client's transfer midway).
fn ignores(ld: &LoadData) -> bool {
    ld.dup == OnDup::Ignore || (ld.local && ld.dup == OnDup::Error)
}

/// The statement's answer from (records, rows affected), as MariaDB's.
fn outcome(
    s: &mut Session,
    from: usize,
    t: &crate::table::Table,
    ld: &LoadData,
    r: SqlResult<(u64, u64)>,
) -> SqlResult<Outcome> {
    let (records, affected) = match r {
        Ok(v) => v,
        Err(e) => {
            let q = crate::dml::qualify(s, from, &t.def.db, &t.def.name, Err(e));
            return q.map(|_| unreachable_outcome());
        }
    };
    let _ = crate::dml::qualify(s, from, &t.def.db, &t.def.name, Ok(unreachable_outcome()));
    let (deleted, skipped) = match ld.dup {
        OnDup::Replace => (affected.saturating_sub(records), 0),
        OnDup::Ignore | OnDup::Error => (0, records.saturating_sub(affected)),
    };
    let nwarn = s.warnings.len() - from;
    Ok(Outcome::Done {
        affected,
        last_insert_id: 0,
        info: Some(format!("Records: {records}  Deleted: {deleted}  Skipped: {skipped}  Warnings: {nwarn}")),
    })
}

/// Reads every line (after IGNORE n LINES) into rows of values and hands
/// them to `flush` in batches of [`BATCH`]; returns (records, affected).
fn read_rows(
    s: &mut Session,
    ld: &LoadData,
    plan: &Plan,
    rd: &mut Reader<'_>,
    flush: &mut Flush<'_>,
) -> SqlResult<(u64, u64)> {
    let mut skipped_lines = 0;
    while skipped_lines < ld.ignore_lines {
        if rd.row()?.is_none() {
            break;
        }
        skipped_lines += 1;
    }
    let strict = s.strict && !ignores(ld);
    let mut records = 0u64;
    let mut affected = 0u64;
    let mut batch: Vec<Vec<Value>> = Vec::new();
    let mut warnings: Vec<Warning> = Vec::new();
    let mut base = 0usize;
    while let Some(fields) = rd.row()? {
        records += 1;
        batch.push(row_values(s, plan, fields, records, strict, &mut warnings)?);
        if batch.len() >= BATCH {
            let n = batch.len();
            affected += flush(s, std::mem::take(&mut batch), std::mem::take(&mut warnings), base)?;
            base += n;
        }
        s.check_killed()?;
    }
    if !batch.is_empty() || !warnings.is_empty() {
        affected += flush(s, batch, warnings, base)?;
    }
    Ok((records, affected))
}

/// One line's fields as the row's values in `Plan::cols` order (a column
/// the line does not give: the DEFAULT marker), user variables set, SET
/// evaluated; 1261 / 1262 for a short or long line.
fn row_values(
    s: &mut Session,
    plan: &Plan,
    fields: Vec<Option<Vec<u8>>>,
    rownum: u64,
    strict: bool,
    warnings: &mut Vec<Warning>,
) -> SqlResult<Vec<Value>> {
    let mut vals: Vec<Option<Value>> = vec![None; plan.cols.len()];
    let nf = fields.len();
    let mut it = fields.into_iter();
    for d in &plan.fields {
        let v = match it.next() {
            Some(Some(b)) => Value::Str(b),
            Some(None) => Value::Null,
            None => {
                if let Dest::Var(name) = d {
                    s.user_vars.insert(name.clone(), Value::Null);
                }
                continue;
            }
        };
        match d {
            Dest::Col(p) => vals[*p] = Some(v),
            Dest::Var(name) => {
                s.user_vars.insert(name.clone(), v);
            }
        }
    }
    let short = format!("Row {rownum} doesn't contain data for all columns");
    let long = format!("Row {rownum} was truncated; it contained more data than there were input columns");
    // Strict mode makes a short or long line an error, unless IGNORE or
    // LOCAL (see `ignores`) turns errors into warnings.
    if strict && nf != plan.fields.len() {
        return Err(if nf < plan.fields.len() {
            SqlError::new(1261, "01000", short)
        } else {
            SqlError::new(1262, "01000", long)
        });
    }
    if nf < plan.fields.len() {
        warnings.push(Warning::warn(1261, short));
    } else if nf > plan.fields.len() {
        warnings.push(Warning::warn(1262, long));
    }
    if !plan.set.is_empty() {
        set_values(s, plan, &mut vals, warnings)?;
    }
    Ok(vals.into_iter().map(|v| v.unwrap_or(Value::Str(b"\0DEFAULT".to_vec()))).collect())
}

/// Evaluates the SET assignments over the line's values.
fn set_values(
    s: &mut Session,
    plan: &Plan,
    vals: &mut [Option<Value>],
    warnings: &mut Vec<Warning>,
) -> SqlResult<()> {
    let mut row = vec![Value::Null; plan.width];
    for (p, &c) in plan.cols.iter().enumerate() {
        if let Some(v) = &vals[p] {
            row[c] = v.clone();
        }
    }
    let mut w = Vec::new();
    let mut out = Vec::new();
    {
        let mut cx = s.eval_ctx(&mut w);
        for (p, e) in &plan.set {
            let v = e.eval(&row, &mut cx)?;
            row[plan.cols[*p]] = v.clone();
            out.push((*p, v));
        }
    }
    warnings.extend(w);
    for (p, v) in out {
        vals[p] = Some(v);
    }
    Ok(())
}

fn unreachable_outcome() -> Outcome {
    Outcome::Done { affected: 0, last_insert_id: 0, info: None }
}

/// The file, parsed into rows of fields (`None` is NULL). Its own buffer
/// (not a BufReader) so that a terminator split between two reads can be
/// looked at whole.
struct Reader<'a> {
    src: Box<dyn Read + 'a>,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
    ft: Vec<u8>,
    lt: Vec<u8>,
    ls: Vec<u8>,
    enc: Option<u8>,
    esc: Option<u8>,
}

const CHUNK: usize = 256 << 10;

impl<'a> Reader<'a> {
    fn new(input: Box<dyn Read + 'a>, ld: &LoadData) -> Reader<'a> {
        Reader {
            src: input,
            buf: Vec::new(),
            pos: 0,
            done: false,
            ft: ld.fields_terminated.clone(),
            lt: ld.lines_terminated.clone(),
            ls: ld.lines_starting.clone(),
            enc: ld.enclosed,
            esc: ld.escaped,
        }
    }

    /// At least `n` bytes buffered past `pos`, unless the input ends first.
    fn ensure(&mut self, n: usize) -> SqlResult<()> {
        while self.buf.len() - self.pos < n && !self.done {
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let at = self.buf.len();
            self.buf.resize(at + CHUNK, 0);
            let r = loop {
                match self.src.read(&mut self.buf[at..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
            match r {
                Ok(k) => {
                    self.buf.truncate(at + k);
                    if k == 0 {
                        self.done = true;
                    }
                }
                Err(e) => {
                    self.buf.truncate(at);
                    return Err(read_error(e));
                }
            }
        }
        Ok(())
    }

    fn peek_is(&mut self, c: u8) -> SqlResult<bool> {
        self.ensure(1)?;
        Ok(self.buf.get(self.pos) == Some(&c))
    }

    fn at(&mut self, pat: &[u8]) -> SqlResult<bool> {
        if pat.is_empty() {
            return Ok(false);
        }
        self.ensure(pat.len())?;
        Ok(self.buf[self.pos..].starts_with(pat))
    }

    fn next(&mut self) -> SqlResult<Option<u8>> {
        self.ensure(1)?;
        let c = self.buf.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        Ok(c)
    }

    fn skip(&mut self, n: usize) -> SqlResult<()> {
        self.ensure(n)?;
        self.pos = (self.pos + n).min(self.buf.len());
        Ok(())
    }

    fn eof(&mut self) -> SqlResult<bool> {
        self.ensure(1)?;
        Ok(self.pos >= self.buf.len())
    }

    /// The next line's fields; `None` at the end of the input.
    fn row(&mut self) -> SqlResult<Option<Vec<Option<Vec<u8>>>>> {
        if self.eof()? {
            return Ok(None);
        }
        if !self.ls.is_empty() {
            // Lines without the prefix are skipped; text before it on a
            // line is ignored.
            let ls = self.ls.clone();
            loop {
                if self.at(&ls)? {
                    self.skip(ls.len())?;
                    break;
                }
                if self.next()?.is_none() {
                    return Ok(None);
                }
            }
        }
        let mut fields = Vec::new();
        loop {
            let (f, end) = self.field()?;
            fields.push(f);
            if end != End::Field {
                break;
            }
        }
        Ok(Some(fields))
    }

    fn unescape(&mut self, out: &mut Vec<u8>) -> SqlResult<bool> {
        // Returns true for `N` (a NULL when it is the whole field).
        match self.next()? {
            None => {
                out.extend(self.esc);
                Ok(false)
            }
            Some(b'N') => {
                out.push(b'N');
                Ok(true)
            }
            Some(c) => {
                out.push(match c {
                    b'0' => 0,
                    b'b' => 8,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'Z' => 26,
                    c => c,
                });
                Ok(false)
            }
        }
    }

    fn field(&mut self) -> SqlResult<(Option<Vec<u8>>, End)> {
        let ft = self.ft.clone();
        let lt = self.lt.clone();
        let mut out = Vec::new();
        if let Some(q) = self.enc {
            if self.peek_is(q)? {
                self.skip(1)?;
                // `"\N"` is NULL too (MariaDB reads it so).
                let mut null_escape = false;
                let value = |out: Vec<u8>, null: bool| if null && out == b"N" { None } else { Some(out) };
                loop {
                    let Some(c) = self.next()? else { return Ok((value(out, null_escape), End::Eof)) };
                    if Some(c) == self.esc && self.esc != Some(q) {
                        let was_empty = out.is_empty();
                        null_escape = self.unescape(&mut out)? && was_empty;
                    } else if c == q {
                        if self.peek_is(q)? {
                            self.skip(1)?;
                            out.push(q);
                            null_escape = false;
                        } else if self.at(&ft)? {
                            self.skip(ft.len())?;
                            return Ok((value(out, null_escape), End::Field));
                        } else if self.at(&lt)? {
                            self.skip(lt.len())?;
                            return Ok((value(out, null_escape), End::Line));
                        } else if self.eof()? {
                            return Ok((value(out, null_escape), End::Eof));
                        } else {
                            out.push(q);
                            null_escape = false;
                        }
                    } else {
                        out.push(c);
                        null_escape = false;
                    }
                }
            }
        }
        let mut null_escape = false;
        let end = loop {
            if self.at(&ft)? {
                self.skip(ft.len())?;
                break End::Field;
            }
            if self.at(&lt)? {
                self.skip(lt.len())?;
                break End::Line;
            }
            let Some(c) = self.next()? else { break End::Eof };
            if Some(c) == self.esc {
                let was_empty = out.is_empty();
                let n = self.unescape(&mut out)?;
                // `\N` and nothing else is NULL.
                null_escape = was_empty && n;
            } else {
                null_escape = false;
                out.push(c);
            }
        };
        if null_escape && out == b"N" {
            return Ok((None, end));
        }
        // The word NULL, unenclosed, is NULL when there is no escape
        // character or when fields may be enclosed (an enclosed "NULL" is
        // the string).
        if (self.esc.is_none() || self.enc.is_some()) && out == b"NULL" {
            return Ok((None, end));
        }
        Ok((Some(out), end))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    Field,
    Line,
    Eof,
}

fn read_error(e: std::io::Error) -> SqlError {
    // An error from the client's stream says what it is; a file's, too.
    match e.get_ref().and_then(|i| i.downcast_ref::<SqlError>()) {
        Some(se) => se.clone(),
        None => SqlError::new(1105, "HY000", format!("Error reading the LOAD DATA input: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &[u8], f: impl FnOnce(&mut LoadData)) -> Vec<Vec<Option<String>>> {
        let mut ld = LoadData::new(false, Vec::new(), TableName { db: None, name: "t".into() });
        f(&mut ld);
        let mut r = Reader::new(Box::new(std::io::Cursor::new(text.to_vec())), &ld);
        let mut out = Vec::new();
        while let Some(row) = r.row().unwrap() {
            out.push(row.into_iter().map(|f| f.map(|b| String::from_utf8_lossy(&b).into_owned())).collect());
        }
        out
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn fields_lines_escapes() {
        assert_eq!(rows(b"a\tb\n\\N\tc\\td\n", |_| {}), vec![vec![s("a"), s("b")], vec![None, s("c\td")]]);
        assert_eq!(rows(b"x\\Ny\t\\\\N\n", |_| {}), vec![vec![s("xNy"), s("\\N")]]);
        assert_eq!(
            rows(b"\"a,b\",\"c\"\"d\",NULL\r\n1,\\N,\"\\N\"\r\n", |l| {
                l.fields_terminated = b",".to_vec();
                l.enclosed = Some(b'"');
                l.lines_terminated = b"\r\n".to_vec();
            }),
            vec![vec![s("a,b"), s("c\"d"), None], vec![s("1"), None, None]]
        );
        assert_eq!(
            rows(b"NULL,x\n", |l| {
                l.fields_terminated = b",".to_vec();
                l.escaped = None;
            }),
            vec![vec![None, s("x")]]
        );
        assert_eq!(
            rows(b"junk>>a|b\nno prefix\n>>c|d", |l| {
                l.fields_terminated = b"|".to_vec();
                l.lines_starting = b">>".to_vec();
            }),
            vec![vec![s("a"), s("b")], vec![s("c"), s("d")]]
        );
        // An enclosed field holds line terminators.
        assert_eq!(
            rows(b"'a\nb';c\n", |l| {
                l.fields_terminated = b";".to_vec();
                l.enclosed = Some(b'\'');
            }),
            vec![vec![s("a\nb"), s("c")]]
        );
        // Multi-byte terminators.
        assert_eq!(
            rows(b"1<>2###3<>4###", |l| {
                l.fields_terminated = b"<>".to_vec();
                l.lines_terminated = b"###".to_vec();
            }),
            vec![vec![s("1"), s("2")], vec![s("3"), s("4")]]
        );
    }

    #[test]
    fn terminator_across_refills() {
        // Lines longer than the buffer, with a terminator at its edge.
        let mut text = Vec::new();
        let mut want = Vec::new();
        for i in 0..2000 {
            let f = "x".repeat(100 + i % 7);
            text.extend_from_slice(f.as_bytes());
            text.extend_from_slice(b"<>");
            text.extend_from_slice(i.to_string().as_bytes());
            text.extend_from_slice(b"##\n");
            want.push(vec![s(&f), s(&i.to_string())]);
        }
        let got = rows(&text, |l| {
            l.fields_terminated = b"<>".to_vec();
            l.lines_terminated = b"##\n".to_vec();
        });
        assert_eq!(got, want);
    }
}
