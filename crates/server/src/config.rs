//! The server's configuration: a my.cnf file and command-line options,
//! with MySQL's rules (see `docs/ARCHITECTURE.md`, "Server").
//!
//! - Sections `[mysqld]`, `[server]`, `[mariadb]` and `[fractaldb]` are
//!   read; others are skipped (they are other programs' options).
//! - `name = value`, `name value`-less booleans (`skip-name-resolve`),
//!   quotes around values, `#` and `;` comments, `-` and `_` alike in
//!   names, `loose-` prefix (an unknown loose option is skipped with a
//!   warning), `!include FILE` and `!includedir DIR` (its `*.cnf` files,
//!   sorted).
//! - Later settings override earlier ones: files in order, then the
//!   command line.
//! - An unknown option is an error naming it and where it was, as mysqld
//!   says it: `unknown variable 'x=1'`.
//!
//! The parser is ours: the INI crates do not take values-less options or
//! `!include`, and the format is small.

use std::path::{Path, PathBuf};

use fractaldb_sql::sysvars;

use crate::ServerOptions;

/// One `name=value` setting and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Lower case, `_` for `-`, without `loose_`.
    pub name: String,
    pub value: Option<String>,
    pub loose: bool,
    /// `file:line`, or `command line`.
    pub origin: String,
}

const SECTIONS: &[&str] = &["mysqld", "server", "mariadb", "fractaldb"];
const MAX_INCLUDE_DEPTH: usize = 10;

/// Reads a my.cnf file (and what it includes): the settings of our sections.
pub fn read_file(path: &Path) -> Result<Vec<Setting>, String> {
    let mut out = Vec::new();
    read_into(path, &mut out, 0)?;
    Ok(out)
}

fn read_into(path: &Path, out: &mut Vec<Setting>, depth: usize) -> Result<(), String> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(format!("{}: !include nested more than {MAX_INCLUDE_DEPTH} deep", path.display()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut in_ours = false;
    for (i, raw) in text.lines().enumerate() {
        let origin = format!("{}:{}", path.display(), i + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('!') {
            let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let arg = arg.trim();
            let target = if Path::new(arg).is_absolute() { PathBuf::from(arg) } else { base.join(arg) };
            match word {
                "include" if !arg.is_empty() => read_into(&target, out, depth + 1)?,
                "includedir" if !arg.is_empty() => {
                    let mut files: Vec<PathBuf> = std::fs::read_dir(&target)
                        .map_err(|e| format!("{origin}: cannot read {}: {e}", target.display()))?
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
                        .collect();
                    files.sort();
                    for f in files {
                        read_into(&f, out, depth + 1)?;
                    }
                }
                _ => return Err(format!("{origin}: unknown directive '!{word}'")),
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(format!("{origin}: wrong group definition '{line}'"));
            };
            in_ours = SECTIONS.contains(&name.trim().to_ascii_lowercase().as_str());
            continue;
        }
        if !in_ours {
            continue;
        }
        out.push(parse_setting(line, origin)?);
    }
    Ok(())
}

/// `name`, `name=value` or `name = "value"  # comment`.
fn parse_setting(line: &str, origin: String) -> Result<Setting, String> {
    let (name, value) = match line.split_once('=') {
        Some((n, v)) => (n.trim(), Some(unquote(v.trim()))),
        None => (strip_comment(line).trim(), None),
    };
    if name.is_empty() {
        return Err(format!("{origin}: a setting without a name: '{line}'"));
    }
    Ok(setting(name, value, origin))
}

fn setting(name: &str, value: Option<String>, origin: String) -> Setting {
    let mut n = name.to_ascii_lowercase().replace('-', "_");
    let loose = n.starts_with("loose_");
    if loose {
        n = n["loose_".len()..].to_string();
    }
    Setting { name: n, value, loose, origin }
}

fn strip_comment(v: &str) -> &str {
    v.find(" #").or_else(|| v.find("\t#")).map_or(v, |i| &v[..i])
}

/// A value: quoted ('..' or "..", with \ escapes) or up to a ` #` comment.
fn unquote(v: &str) -> String {
    let q = v.chars().next();
    if let Some(q @ ('"' | '\'')) = q {
        let mut out = String::new();
        let mut chars = v[1..].chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => {}
                },
                c if c == q => return out,
                c => out.push(c),
            }
        }
        return out;
    }
    strip_comment(v).trim().to_string()
}

/// Command-line options in the same names: `--name=value`, `--name value`
/// (when the next word is not an option) or `--name` (a boolean ON).
pub fn parse_args(args: &[String]) -> Result<Vec<Setting>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let Some(body) = a.strip_prefix("--") else {
            return Err(format!("unexpected argument '{a}' (options are --name=value)"));
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => match args.get(i + 1).filter(|n| !n.starts_with("--")) {
                Some(v) => {
                    i += 1;
                    (body, Some(v.clone()))
                }
                None => (body, None),
            },
        };
        out.push(setting(name, value, "command line".into()));
        i += 1;
    }
    Ok(out)
}

/// Where the log goes and which files were read, besides `ServerOptions`.
#[derive(Debug, Default)]
pub struct Applied {
    /// Warnings to log once the log is open (skipped loose options).
    pub warnings: Vec<String>,
    /// `pid_file`, when set.
    pub pid_file: Option<PathBuf>,
}

/// Applies settings in order onto `opts`. Unknown options fail (naming
/// the option and where it was) unless `loose-`.
pub fn apply(opts: &mut ServerOptions, settings: &[Setting]) -> Result<Applied, String> {
    let mut applied = Applied::default();
    let mut socket_set = false;
    for s in settings {
        let v = s.value.as_deref();
        let text = || v.unwrap_or("").to_string();
        let bad = |why: String| format!("{}: option '{}': {why}", s.origin, s.name);
        let num = |what: &str| -> Result<u64, String> {
            sysvars::parse_size(v.unwrap_or("")).ok_or_else(|| bad(format!("'{}' is not {what}", text())))
        };
        let boolean = || -> Result<bool, String> {
            match v.unwrap_or("1").to_ascii_lowercase().as_str() {
                "1" | "on" | "true" | "yes" => Ok(true),
                "0" | "off" | "false" | "no" => Ok(false),
                o => Err(bad(format!("'{o}' is not ON or OFF"))),
            }
        };
        match s.name.as_str() {
            "datadir" => {
                opts.datadir = PathBuf::from(text());
                if !socket_set {
                    opts.socket = Some(opts.datadir.join("fractaldb.sock"));
                }
            }
            "port" => {
                opts.port = u16::try_from(num("a port number")?).map_err(|_| bad("out of range".into()))?
            }
            "bind_address" | "bind" => {
                opts.bind = text().parse().map_err(|_| bad(format!("'{}' is not an IP address", text())))?
            }
            "socket" => {
                socket_set = true;
                opts.socket = if text().is_empty() { None } else { Some(PathBuf::from(text())) };
            }
            "max_connections" => opts.max_connections = num("a number")?.clamp(1, 100_000) as usize,
            "thread_handling" => {
                opts.thread_handling = crate::ThreadHandling::parse(&text()).ok_or_else(|| {
                    bad(format!("'{}' is not one-thread-per-connection or pool-of-threads", text()))
                })?
            }
            "thread_pool_size" => opts.thread_pool_size = num("a number")?.clamp(1, 100_000) as usize,
            "thread_pool_stall_limit" => {
                opts.thread_pool_stall_limit_ms = num("milliseconds")?.clamp(1, u32::MAX as u64)
            }
            "max_allowed_packet" => opts.max_allowed_packet = num("a size")?.clamp(1024, 1 << 30) as usize,
            "tokudb_cache_size" => opts.db.cache_size_bytes = num("a size")? as usize,
            "cache_mb" => opts.db.cache_size_bytes = (num("a number")? as usize) << 20,
            "tokudb_commit_sync" => opts.db.commit_sync = boolean()?,
            "tokudb_directio" => opts.db.direct_io = boolean()?,
            "tokudb_fsync_log_period" => opts.db.fsync_log_period_ms = num("milliseconds")?.max(1),
            "tokudb_checkpointing_period" => opts.db.checkpoint_period_secs = num("seconds")?,
            "log_error" => opts.log_error = Some(PathBuf::from(text())),
            "pid_file" => applied.pid_file = Some(PathBuf::from(text())),
            // TLS (`tls.rs`) and LOAD DATA's files.
            "ssl" | "have_ssl" => opts.ssl = boolean()?,
            "skip_ssl" => opts.ssl = !boolean()?,
            "ssl_cert" => opts.ssl_cert = Some(PathBuf::from(text())),
            "ssl_key" => opts.ssl_key = Some(PathBuf::from(text())),
            "require_secure_transport" => opts.require_secure_transport = boolean()?,
            "secure_file_priv" => {
                opts.secure_file_priv = if text() == "NULL" { None } else { Some(PathBuf::from(text())) }
            }
            // MariaDB's name for the global time_zone's starting value.
            "default_time_zone" => {
                let tz = sysvars::check_time_zone(&fractaldb_sql::Value::str(text()))
                    .map_err(|e| bad(e.message))?;
                opts.db.variables.push(("time_zone".into(), tz.name()));
            }
            "local_infile" => opts.local_infile = boolean()?,
            "skip_local_infile" => opts.local_infile = !boolean()?,
            // mysqld options with nothing to do here (no name resolution,
            // no external locking).
            "skip_name_resolve" | "skip_external_locking" => {}
            n => match sysvars::def(n) {
                Some(d) if d.scope != sysvars::Scope::Session => {
                    let val = v.unwrap_or("1");
                    sysvars::parse_text(d, val).map_err(bad)?;
                    opts.db.variables.push((d.name.to_string(), val.to_string()));
                }
                _ if s.loose => applied
                    .warnings
                    .push(format!("{}: unknown option '{}' ignored (loose)", s.origin, s.name)),
                _ => {
                    let shown = match v {
                        Some(v) => format!("{}={v}", s.name),
                        None => s.name.clone(),
                    };
                    return Err(format!("{}: unknown variable '{shown}'", s.origin));
                }
            },
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn sections_comments_quotes_and_loose() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(
            dir.path(),
            "my.cnf",
            "# comment\n[client]\nport=1\n[mysqld]\nport = 3307 # trailing\nskip-name-resolve\n\
             loose-innodb-buffer-pool-size=1G\n; semicolon comment\n[fractaldb]\nsql_mode=\"ANSI_QUOTES\"\n\
             slow-query-log-file = '/tmp/a b.log'\n[mysqldump]\nquick\n",
        );
        let s = read_file(&f).unwrap();
        let names: Vec<_> = s.iter().map(|s| (s.name.as_str(), s.value.as_deref(), s.loose)).collect();
        assert_eq!(
            names,
            vec![
                ("port", Some("3307"), false),
                ("skip_name_resolve", None, false),
                ("innodb_buffer_pool_size", Some("1G"), true),
                ("sql_mode", Some("ANSI_QUOTES"), false),
                ("slow_query_log_file", Some("/tmp/a b.log"), false),
            ]
        );
        assert!(s[0].origin.ends_with("my.cnf:5"), "{}", s[0].origin);
        let mut o = ServerOptions::new("/tmp/x");
        let a = apply(&mut o, &s).unwrap();
        assert_eq!(o.port, 3307);
        assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
        assert!(o.db.variables.contains(&("sql_mode".into(), "ANSI_QUOTES".into())));
    }

    #[test]
    fn unknown_option_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(dir.path(), "my.cnf", "[mysqld]\nport=1\nfrobnicate=1\n");
        let s = read_file(&f).unwrap();
        let e = apply(&mut ServerOptions::new("/tmp/x"), &s).unwrap_err();
        assert!(e.ends_with("my.cnf:3: unknown variable 'frobnicate=1'"), "{e}");
        let e = apply(
            &mut ServerOptions::new("/tmp/x"),
            &parse_args(&["--max-connections=lots".into()]).unwrap(),
        )
        .unwrap_err();
        assert!(e.contains("command line: option 'max_connections'"), "{e}");
    }

    #[test]
    fn includes_sizes_and_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("conf.d")).unwrap();
        write(dir.path(), "conf.d/b.cnf", "[mysqld]\nmax_connections=20\n");
        write(dir.path(), "conf.d/a.cnf", "[mysqld]\nmax_connections=10\ntokudb_cache_size=1G\n");
        write(dir.path(), "conf.d/ignored.txt", "[mysqld]\nnonsense\n");
        write(dir.path(), "extra.cnf", "[server]\nmax-allowed-packet=32M\n");
        let f =
            write(dir.path(), "my.cnf", "[mysqld]\n!includedir conf.d\n!include extra.cnf\nwait_timeout=5\n");
        let mut s = read_file(&f).unwrap();
        s.extend(
            parse_args(&[
                "--port".into(),
                "0".into(),
                "--tokudb-commit-sync=OFF".into(),
                "--slow-query-log".into(),
                "--default-time-zone=europe/berlin".into(),
            ])
            .unwrap(),
        );
        let mut o = ServerOptions::new("/tmp/x");
        apply(&mut o, &s).unwrap();
        assert_eq!(o.max_connections, 20, "the later file wins");
        assert_eq!(o.db.cache_size_bytes, 1 << 30);
        assert_eq!(o.max_allowed_packet, 32 << 20);
        assert_eq!(o.port, 0);
        assert!(!o.db.commit_sync);
        assert!(o.db.variables.contains(&("wait_timeout".into(), "5".into())));
        assert!(o.db.variables.contains(&("slow_query_log".into(), "1".into())));
        assert!(o.db.variables.contains(&("time_zone".into(), "Europe/Berlin".into())));
        let e = apply(
            &mut ServerOptions::new("/tmp/x"),
            &parse_args(&["--default-time-zone=+14:00".into()]).unwrap(),
        )
        .unwrap_err();
        assert!(e.contains("Unknown or incorrect time zone: '+14:00'"), "{e}");
        // A missing include and a bad group line are errors.
        let bad = write(dir.path(), "bad.cnf", "[mysqld]\n!include nothere.cnf\n");
        assert!(read_file(&bad).unwrap_err().contains("nothere.cnf"));
        let bad = write(dir.path(), "bad2.cnf", "[mysqld\n");
        assert!(read_file(&bad).unwrap_err().contains("bad2.cnf:1"));
        // Including itself stops at the depth limit instead of looping.
        let rec = write(dir.path(), "rec.cnf", "!include rec.cnf\n");
        assert!(read_file(&rec).unwrap_err().contains("nested"));
    }
}
