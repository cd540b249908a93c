//! `fractaldb sql`: a SQL shell on a database folder, in the manner of the
//! `mariadb` command-line client, so scripts and habits carry over.
//!
//! - On a terminal: prompts, line editing and a history file
//!   (`~/.fractaldb_history`), boxed tables, `\G` for one column per line.
//! - Otherwise (`fractaldb sql --datadir d < dump.sql`, or `-e "..."`): the
//!   client's batch format (tab-separated, a header line, `\n \t \\ \0`
//!   escaped), and the first error ends the run with status 1 after
//!   the statement and `ERROR n (state) at line L: message` on stderr,
//!   unless `--force`.
//!
//! Scripts are read as bytes: dumps carry BLOB bytes that are not UTF-8.

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fractaldb_sql::{Database, DbOptions, Outcome, ResultSet, Session, SqlError, SqlType, Value};
use unicode_width::UnicodeWidthStr;

/// Options of `fractaldb sql`.
#[derive(clap::Args, Debug)]
pub struct SqlArgs {
    /// The database folder (created when missing).
    #[arg(long)]
    pub datadir: PathBuf,
    /// The engine's node cache, in bytes or with a K, M or G suffix.
    #[arg(long, default_value = "64M")]
    pub cache_size: String,
    /// Do not wait for the log to reach the disk at each commit (faster loads; a crash may lose the last commits).
    #[arg(long)]
    pub no_commit_sync: bool,
    /// Run these statements and exit (as `mariadb -e`).
    #[arg(short = 'e', long = "execute")]
    pub execute: Option<String>,
    /// Select this database first.
    #[arg(short = 'D', long)]
    pub database: Option<String>,
    /// Go on after an error in a script.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Print results tab-separated even on a terminal.
    #[arg(short = 'B', long)]
    pub batch: bool,
    /// Print results as boxed tables even when not on a terminal.
    #[arg(short = 't', long)]
    pub table: bool,
}

/// Runs the shell; the exit status is 1 when a script stopped at an error.
pub fn run(args: SqlArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &SqlArgs) -> Result<ExitCode, String> {
    let cache =
        parse_size(&args.cache_size).ok_or_else(|| format!("bad --cache-size {:?}", args.cache_size))?;
    std::fs::create_dir_all(&args.datadir)
        .map_err(|e| format!("creating {}: {e}", args.datadir.display()))?;
    let opts =
        DbOptions { cache_size_bytes: cache, commit_sync: !args.no_commit_sync, ..DbOptions::default() };
    let db = Database::open(&args.datadir, opts)
        .map_err(|e| format!("opening {}: {e}", args.datadir.display()))?;
    let mut session = db.session();
    let mut code = ExitCode::SUCCESS;
    let selected = match &args.database {
        Some(name) => match session.execute(format!("USE `{}`", name.replace('`', "``")).as_bytes()) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("{e}");
                code = ExitCode::FAILURE;
                false
            }
        },
        None => true,
    };
    if selected {
        let stdin_tty = io::stdin().is_terminal();
        let stdout_tty = io::stdout().is_terminal();
        // As the mariadb client: tab-separated unless both ends are a terminal.
        let format = if args.table {
            Format::Table
        } else if args.batch || !stdout_tty || (!stdin_tty && args.execute.is_none()) {
            Format::Tab
        } else {
            Format::Table
        };
        code = if let Some(sql) = &args.execute {
            run_script(&mut session, sql.as_bytes(), format, args.force)?
        } else if stdin_tty {
            interactive(&mut session).map_err(|e| e.to_string())?;
            ExitCode::SUCCESS
        } else {
            // Streamed: a dump of any size runs in bounded memory.
            run_script(&mut session, io::stdin().lock(), format, args.force)?
        };
    }
    drop(session);
    db.close().map_err(|e| format!("closing {}: {e}", args.datadir.display()))?;
    Ok(code)
}

/// "64M" -> 67108864; plain numbers are bytes.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1usize << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

/// How result sets are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `+---+` boxes (a terminal).
    Table,
    /// Tab-separated with a header line (`mariadb --batch`).
    Tab,
}

// ---------------------------------------------------------------------------
// Scripts
// ---------------------------------------------------------------------------

/// Runs every statement read from `input` as it arrives (a chunk at a
/// time through the statement splitter, so a dump of any size runs in
/// bounded memory); stops at the first error (status 1) unless `force`.
fn run_script(
    session: &mut Session,
    mut input: impl Read,
    format: Format,
    force: bool,
) -> Result<ExitCode, String> {
    let mut out = io::stdout().lock();
    let mut code = ExitCode::SUCCESS;
    let mut lines = LineFinder::new();
    let mut splitter = fractaldb_sql::lex::Splitter::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut eof = false;
    let mut queue: std::collections::VecDeque<Vec<u8>> = Default::default();
    'outer: loop {
        if queue.is_empty() {
            if eof {
                break;
            }
            let n = input.read(&mut chunk).map_err(|e| format!("reading the script: {e}"))?;
            if n == 0 {
                eof = true;
                queue.extend(splitter.finish());
            } else {
                lines.feed(&chunk[..n]);
                queue.extend(splitter.push(&chunk[..n]));
            }
            continue;
        }
        let stmt = queue.pop_front().expect("not empty");
        let line = lines.line_of(&stmt);
        let (sql, vertical) = strip_terminator(&stmt);
        if sql.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match session.execute(sql) {
            Ok(Outcome::Rows(rs)) => {
                let r = if vertical {
                    print_vertical(&mut out, &rs)
                } else if format == Format::Table {
                    print_table(&mut out, &rs)
                } else {
                    print_tab(&mut out, &rs)
                };
                if r.is_err() {
                    // stdout is gone (a closed pipe): nothing more can be shown.
                    return Ok(ExitCode::FAILURE);
                }
            }
            Ok(Outcome::Done { .. }) => {}
            Err(e) => {
                let _ = out.flush();
                // As mariadb 10.11 in batch mode: the statement, then the error.
                let mut err = io::stderr().lock();
                let _ = err.write_all(b"--------------\n");
                let _ = err.write_all(sql);
                let _ = write!(
                    err,
                    "\n--------------\n\nERROR {} ({}) at line {line}: {}\n",
                    e.code, e.state, e.message
                );
                code = ExitCode::FAILURE;
                if !force {
                    break 'outer;
                }
            }
        }
    }
    let _ = out.flush();
    Ok(code)
}

/// The line numbers of a script's statements, for error messages: each
/// statement is looked for in the script after the previous one, and its
/// line is the line of its first byte that is not a space.
struct LineFinder {
    /// The script as read; `text[start..]` follows the previous statement.
    text: Vec<u8>,
    start: usize,
    /// The line `text[start..]` starts on.
    line: usize,
}

impl LineFinder {
    fn new() -> Self {
        LineFinder { text: Vec::new(), start: 0, line: 1 }
    }

    /// More of the script, as read (bytes already passed are dropped
    /// first, so the buffer holds about one read's worth).
    fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.text.drain(..self.start);
            self.start = 0;
        }
        self.text.extend_from_slice(bytes);
    }

    /// Moves past `n` bytes, counting their lines.
    fn advance(&mut self, n: usize) {
        let end = (self.start + n).min(self.text.len());
        self.line += self.text[self.start..end].iter().filter(|&&b| b == b'\n').count();
        self.start = end;
    }

    fn line_of(&mut self, stmt: &[u8]) -> usize {
        let trimmed = trim(stmt);
        let rest = &self.text[self.start..];
        let found =
            if trimmed.is_empty() { None } else { rest.windows(trimmed.len()).position(|w| w == trimmed) };
        match found {
            Some(off) => {
                self.advance(off);
                let line = self.line;
                self.advance(trimmed.len());
                line
            }
            None => {
                // The splitter changed the text: the next non-space byte.
                let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
                self.advance(skip);
                self.line
            }
        }
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &s[start..end]
}

/// A statement without its terminator (`;`, `\g`, `\G`), and whether it
/// asked for vertical output (`\G`).
fn strip_terminator(stmt: &[u8]) -> (&[u8], bool) {
    let s = trim(stmt);
    if let Some(r) = s.strip_suffix(b";").or_else(|| s.strip_suffix(b"\\g")) {
        (trim(r), false)
    } else if let Some(r) = s.strip_suffix(b"\\G") {
        (trim(r), true)
    } else {
        (s, false)
    }
}

// ---------------------------------------------------------------------------
// The interactive shell
// ---------------------------------------------------------------------------

const HELP: &str = "\
fractaldb sql: statements end with ; (or \\G for one column per line).
  help      this text
  exit, quit, \\q    leave (so does Ctrl-D)
  use DB    select a database
  Ctrl-C    drops the statement being typed
";

fn interactive(session: &mut Session) -> rustyline::Result<()> {
    let mut rl = rustyline::DefaultEditor::new()?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".fractaldb_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    println!(
        "Welcome to the fractaldb SQL shell. Commands end with ; or \\G.\nServer version: {}\n\nType 'help' for help.\n",
        fractaldb_sql::SERVER_VERSION
    );
    let mut splitter = new_splitter();
    loop {
        let prompt = if splitter.pending() {
            "    -> ".to_string()
        } else {
            format!("fractaldb [{}]> ", session.current_db().unwrap_or("(none)"))
        };
        let line = match rl.readline(&prompt) {
            Ok(line) => line,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                splitter = new_splitter();
                continue;
            }
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(e),
        };
        if !line.trim().is_empty() {
            let _ = rl.add_history_entry(line.as_str());
        }
        if !splitter.pending() {
            let word = line.trim().trim_end_matches(';').trim().to_ascii_lowercase();
            match word.as_str() {
                "exit" | "quit" | "\\q" => break,
                "help" | "\\h" | "?" => {
                    print!("{HELP}");
                    continue;
                }
                _ => {}
            }
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        for stmt in splitter.push(&bytes) {
            execute_interactive(session, &stmt);
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    println!("Bye");
    Ok(())
}

fn execute_interactive(session: &mut Session, stmt: &[u8]) {
    let (sql, vertical) = strip_terminator(stmt);
    if sql.is_empty() {
        eprintln!("ERROR: No query specified\n");
        return;
    }
    let started = Instant::now();
    let result = session.execute(sql);
    let took = started.elapsed();
    let warnings = session.warnings().len();
    let mut out = io::stdout().lock();
    let _ = match result {
        Ok(Outcome::Rows(rs)) => print_rows_interactive(&mut out, &rs, vertical, warnings, took),
        Ok(Outcome::Done { affected, info, .. }) => {
            if is_use(sql) {
                writeln!(out, "Database changed\n")
            } else {
                print_done(&mut out, affected, info.as_deref(), warnings, took)
            }
        }
        Err(e) => {
            let _ = out.flush();
            print_error(&e);
            Ok(())
        }
    };
    let _ = out.flush();
}

fn is_use(sql: &[u8]) -> bool {
    sql.len() > 3 && sql[..3].eq_ignore_ascii_case(b"use") && sql[3].is_ascii_whitespace()
}

fn print_error(e: &SqlError) {
    eprintln!("{e}");
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// "(0.001 sec)" as the client prints it.
fn secs(d: Duration) -> String {
    format!("({:.3} sec)", d.as_secs_f64())
}

fn print_rows_interactive(
    out: &mut impl Write,
    rs: &ResultSet,
    vertical: bool,
    warnings: usize,
    took: Duration,
) -> io::Result<()> {
    let warn = if warnings > 0 { format!(", {}", plural(warnings as u64, "warning")) } else { String::new() };
    if rs.rows.is_empty() {
        return writeln!(out, "Empty set{warn} {}\n", secs(took));
    }
    if vertical {
        print_vertical(out, rs)?;
    } else {
        print_table(out, rs)?;
    }
    writeln!(out, "{} in set{warn} {}\n", plural(rs.rows.len() as u64, "row"), secs(took))
}

fn print_done(
    out: &mut impl Write,
    affected: u64,
    info: Option<&str>,
    warnings: usize,
    took: Duration,
) -> io::Result<()> {
    let warn = if warnings > 0 { format!(", {}", plural(warnings as u64, "warning")) } else { String::new() };
    writeln!(out, "Query OK, {} affected{warn} {}", plural(affected, "row"), secs(took))?;
    if let Some(info) = info.filter(|i| !i.is_empty()) {
        writeln!(out, "{info}")?;
    }
    writeln!(out)
}

// ---------------------------------------------------------------------------
// Result printing
// ---------------------------------------------------------------------------

/// Whether the client right-aligns a column: numbers are.
fn numeric(ty: &SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Float { .. } | SqlType::Double { .. }
    )
}

/// A value as the table formats show it.
fn cell(v: &Value) -> String {
    match v.to_bytes() {
        None => "NULL".into(),
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
    }
}

/// `+---+` boxes; widths are display widths (wide characters count two).
fn print_table(out: &mut impl Write, rs: &ResultSet) -> io::Result<()> {
    let cells: Vec<Vec<String>> = rs.rows.iter().map(|r| r.iter().map(cell).collect()).collect();
    let widths: Vec<usize> = rs
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let data = cells.iter().map(|r| r.get(i).map_or(0, |s| s.width())).max().unwrap_or(0);
            let null = if c.nullable { 4 } else { 0 };
            c.name.width().max(data).max(null)
        })
        .collect();
    let rule: String = widths.iter().map(|w| format!("+{}", "-".repeat(w + 2))).collect::<String>() + "+";
    writeln!(out, "{rule}")?;
    let mut header = String::new();
    for (c, w) in rs.columns.iter().zip(&widths) {
        header.push_str("| ");
        header.push_str(&c.name);
        header.push_str(&" ".repeat(w - c.name.width() + 1));
    }
    writeln!(out, "{header}|")?;
    writeln!(out, "{rule}")?;
    for row in &cells {
        let mut line = String::new();
        for (i, (c, w)) in rs.columns.iter().zip(&widths).enumerate() {
            let s = row.get(i).map_or("", |s| s.as_str());
            let pad = " ".repeat(w - s.width());
            line.push_str("| ");
            if numeric(&c.ty) {
                line.push_str(&pad);
                line.push_str(s);
            } else {
                line.push_str(s);
                line.push_str(&pad);
            }
            line.push(' ');
        }
        writeln!(out, "{line}|")?;
    }
    writeln!(out, "{rule}")
}

/// `\G`: a header per row, then one `name: value` line per column, names
/// right-aligned.
fn print_vertical(out: &mut impl Write, rs: &ResultSet) -> io::Result<()> {
    let name_width = rs.columns.iter().map(|c| c.name.width()).max().unwrap_or(0);
    for (n, row) in rs.rows.iter().enumerate() {
        writeln!(out, "{0} {1}. row {0}", "*".repeat(27), n + 1)?;
        for (c, v) in rs.columns.iter().zip(row) {
            let pad = " ".repeat(name_width - c.name.width());
            write!(out, "{pad}{}: ", c.name)?;
            match v.to_bytes() {
                None => out.write_all(b"NULL")?,
                Some(b) => out.write_all(&b)?,
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// `mariadb --batch`: names (as they are) on a header line, then values
/// tab-separated with `\0 \t \n \\` escaped, NULL as `NULL`. An empty
/// result prints nothing, as the client does.
fn print_tab(out: &mut impl Write, rs: &ResultSet) -> io::Result<()> {
    if rs.rows.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = rs.columns.iter().map(|c| c.name.as_str()).collect();
    writeln!(out, "{}", names.join("\t"))?;
    let mut line = Vec::new();
    for row in &rs.rows {
        line.clear();
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                line.push(b'\t');
            }
            match v.to_bytes() {
                None => line.extend_from_slice(b"NULL"),
                Some(b) => escape_into(&mut line, &b),
            }
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

fn escape_into(out: &mut Vec<u8>, b: &[u8]) {
    for &c in b {
        match c {
            0 => out.extend_from_slice(b"\\0"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            c => out.push(c),
        }
    }
}

// ---------------------------------------------------------------------------
// Statement splitting for typed lines
// ---------------------------------------------------------------------------

/// The shell's incremental splitter. It has the interface of
/// `fractaldb_sql::lex::Splitter` (`new`, `push`, `pending`, `finish`), so
/// that one can replace it here, in `new_splitter`, once it exists.
fn new_splitter() -> LineSplitter {
    LineSplitter::new()
}

/// Where the splitter is inside a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Code,
    /// Inside a quoted string or name; the byte is its quote.
    Quoted(u8),
    LineComment,
    BlockComment,
}

/// Splits typed text into statements at `;`, `\g` or `\G` outside quotes
/// and comments; a statement comes out with its terminator, and text after
/// the last terminator waits for more lines. The unfinished text is scanned
/// again from its start at each push: typed statements are short, and a
/// token cut between two pushes (`/` then `*`) needs no special case.
struct LineSplitter {
    buf: Vec<u8>,
}

impl LineSplitter {
    fn new() -> Self {
        LineSplitter { buf: Vec::new() }
    }

    /// Adds text; returns the statements it completed.
    fn push(&mut self, text: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(text);
        let mut out = Vec::new();
        let mut state = State::Code;
        let mut i = 0;
        let mut start = 0;
        while i < self.buf.len() {
            let c = self.buf[i];
            let next = self.buf.get(i + 1).copied();
            match state {
                State::Code => match c {
                    b'\'' | b'"' | b'`' => state = State::Quoted(c),
                    b'#' => state = State::LineComment,
                    b'-' if next == Some(b'-')
                        && self.buf.get(i + 2).is_none_or(|b| b.is_ascii_whitespace()) =>
                    {
                        state = State::LineComment
                    }
                    b'/' if next == Some(b'*') => {
                        state = State::BlockComment;
                        i += 1;
                    }
                    b';' => {
                        out.push(self.buf[start..=i].to_vec());
                        start = i + 1;
                    }
                    b'\\' if matches!(next, Some(b'G' | b'g')) => {
                        out.push(self.buf[start..i + 2].to_vec());
                        i += 1;
                        start = i + 1;
                    }
                    _ => {}
                },
                State::Quoted(q) => {
                    if c == b'\\' && q != b'`' {
                        i += 1;
                    } else if c == q {
                        state = State::Code;
                    }
                }
                State::LineComment => {
                    if c == b'\n' {
                        state = State::Code;
                    }
                }
                State::BlockComment => {
                    if c == b'*' && next == Some(b'/') {
                        state = State::Code;
                        i += 1;
                    }
                }
            }
            i += 1;
        }
        self.buf.drain(..start);
        // A lone `;` or a comment before one is no statement.
        out.retain(|s| !is_blank(strip_terminator(s).0));
        out
    }

    /// Whether a statement has been begun and not ended.
    fn pending(&self) -> bool {
        !is_blank(&self.buf)
    }

    /// The unfinished statement, if any.
    #[allow(dead_code)]
    fn finish(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.buf);
        (!is_blank(&rest)).then_some(rest)
    }
}

/// Only spaces and comments.
fn is_blank(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'#' => i = s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |p| i + p + 1),
            b'-' if s.get(i + 1) == Some(&b'-') && s.get(i + 2).is_none_or(|b| b.is_ascii_whitespace()) => {
                i = s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |p| i + p + 1)
            }
            b'/' if s.get(i + 1) == Some(&b'*') && s.get(i + 2) != Some(&b'!') => {
                match s[i + 2..].windows(2).position(|w| w == b"*/") {
                    Some(p) => i = i + 2 + p + 2,
                    None => return true,
                }
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(lines: &[&str]) -> (Vec<String>, bool) {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for l in lines {
            for st in s.push(format!("{l}\n").as_bytes()) {
                out.push(String::from_utf8(st).unwrap().trim().to_string());
            }
        }
        (out, s.pending())
    }

    #[test]
    fn splitter_ends_statements_outside_quotes_and_comments() {
        let (v, pending) = split_all(&["select 1; select ';'", ", \"a;b\" -- x;", "; select `x;y`\\G # c;"]);
        assert_eq!(v, ["select 1;", "select ';'\n, \"a;b\" -- x;\n;", "select `x;y`\\G"]);
        assert!(!pending);
        let (v, pending) = split_all(&["select 'it\\'s;", "/* ; */ x"]);
        assert!(v.is_empty());
        assert!(pending);
        let (v, pending) = split_all(&["-- only a comment", ";", "  "]);
        assert!(v.is_empty(), "{v:?}");
        assert!(!pending);
    }

    #[test]
    fn terminators_and_sizes() {
        assert_eq!(strip_terminator(b" select 1 \\G "), (&b"select 1"[..], true));
        assert_eq!(strip_terminator(b"select 1;"), (&b"select 1"[..], false));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn line_numbers_of_statements() {
        let script = b"\n\nselect 1;\nselect\n 2;\n\n  bad;";
        let mut f = LineFinder::new();
        // Fed in pieces, as a streamed script arrives.
        f.feed(&script[..12]);
        assert_eq!(f.line_of(b"select 1"), 3);
        f.feed(&script[12..]);
        assert_eq!(f.line_of(b"\nselect\n 2"), 4);
        assert_eq!(f.line_of(b"bad"), 7);
    }

    fn result_set() -> ResultSet {
        use fractaldb_sql::{Collation, ColumnMeta, StrKind};
        let col = |name: &str, ty: SqlType| ColumnMeta {
            name: name.into(),
            org_name: name.into(),
            table: "t".into(),
            org_table: "t".into(),
            db: "d".into(),
            ty,
            nullable: true,
            flags: 0,
        };
        ResultSet {
            columns: vec![
                col("n", SqlType::Int { bytes: 4, unsigned: false }),
                col("name", SqlType::Str { kind: StrKind::Var, len: 10, coll: Collation::Utf8mb4GeneralCi }),
            ],
            rows: vec![
                vec![Value::Int(5), Value::str("日本")],
                vec![Value::Int(-123), Value::Null],
                vec![Value::Null, Value::str("a\tb\\")],
                vec![Value::Int(0), Value::str("abcdef")],
            ],
        }
    }

    fn printed(f: impl Fn(&mut Vec<u8>, &ResultSet) -> io::Result<()>, rs: &ResultSet) -> String {
        let mut out = Vec::new();
        f(&mut out, rs).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn table_format() {
        let expected = "\
+------+--------+
| n    | name   |
+------+--------+
|    5 | 日本   |
| -123 | NULL   |
| NULL | a\tb\\   |
|    0 | abcdef |
+------+--------+
";
        assert_eq!(printed(print_table, &result_set()), expected);
    }

    #[test]
    fn tab_and_vertical_formats() {
        let rs = result_set();
        assert_eq!(printed(print_tab, &rs), "n\tname\n5\t日本\n-123\tNULL\nNULL\ta\\tb\\\\\n0\tabcdef\n");
        let v = printed(print_vertical, &rs);
        assert!(
            v.starts_with(
                "*************************** 1. row ***************************\n   n: 5\nname: 日本\n"
            ),
            "{v}"
        );
        assert!(
            v.contains("*************************** 3. row ***************************\n   n: NULL\n"),
            "{v}"
        );
        let empty = ResultSet { columns: rs.columns.clone(), rows: vec![] };
        assert_eq!(printed(print_tab, &empty), "");
    }

    #[test]
    fn status_lines() {
        let mut out = Vec::new();
        print_done(&mut out, 3, Some("Records: 3  Duplicates: 0  Warnings: 0"), 0, Duration::from_millis(12))
            .unwrap();
        print_done(&mut out, 1, None, 2, Duration::ZERO).unwrap();
        print_rows_interactive(&mut out, &ResultSet::default(), false, 0, Duration::ZERO).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Query OK, 3 rows affected (0.012 sec)\nRecords: 3  Duplicates: 0  Warnings: 0\n\n\
             Query OK, 1 row affected, 2 warnings (0.000 sec)\n\nEmpty set (0.000 sec)\n\n"
        );
    }

    #[test]
    fn batch_escapes() {
        let mut v = Vec::new();
        escape_into(&mut v, b"a\tb\nc\\d\0");
        assert_eq!(v, b"a\\tb\\nc\\\\d\\0");
    }
}
