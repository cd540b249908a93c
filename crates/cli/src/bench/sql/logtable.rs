//! The log-table compression comparison of the 2017 report: an 11-column
//! web-server log table (an INT AUTO_INCREMENT key, an indexed BIGINT time,
//! VARCHARs, a TEXT message, INTs), the same seeded rows written once as a
//! SQL file of 1,000-row INSERTs and fed to the `mariadb` client, under each
//! codec a server has: fractaldb's every `ROW_FORMAT`, InnoDB's default
//! (DYNAMIC) and `ROW_FORMAT=COMPRESSED`, MyRocks with zstd
//! (`compression=kZSTD;bottommost_compression=kZSTD` on its column family).
//!
//! Every codec runs on a fresh server of its own. Its bytes are the
//! allocated blocks of the files that hold tables after a clean stop (each
//! engine writes its cache out: fractaldb checkpoints, InnoDB flushes its
//! pool, MyRocks flushes its memtables; MyRocks' column family is also
//! flushed and compacted first, as an operator would before measuring),
//! minus the same files' blocks when the server had just started:
//! fractaldb's dictionary files (`*.fdb`), InnoDB's `bench/log.ibd`,
//! MyRocks' `*.sst`. Logs are counted for no engine: they are the same
//! rows before the engine's own format and compression, and every engine
//! recycles them.

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client;
use super::servers::ServerKind;
use super::workloads::{Fresh, Params, Run};
use crate::error::{Error, Result};

const TABLE: &str = "CREATE TABLE log (\
  id INT NOT NULL AUTO_INCREMENT, \
  ts_ms BIGINT NOT NULL, \
  host VARCHAR(64) NOT NULL, \
  method VARCHAR(8) NOT NULL, \
  url VARCHAR(255) NOT NULL, \
  status INT NOT NULL, \
  bytes INT NOT NULL, \
  referrer VARCHAR(255), \
  user_agent VARCHAR(255), \
  client_ip VARCHAR(45) NOT NULL, \
  message TEXT, \
  PRIMARY KEY (id), \
  KEY ts_ms (ts_ms))";

const AGENTS: [&str; 8] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/58.0.3029.110 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_12_5) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.1.1 Safari/603.2.4",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:54.0) Gecko/20100101 Firefox/54.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 10_3_2 like Mac OS X) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.0 Mobile/14F89 Safari/602.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/7.52.1",
    "python-requests/2.18.1",
    "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
];
const PATHS: [&str; 14] = [
    "/",
    "/index.html",
    "/api/v1/orders",
    "/api/v1/users",
    "/api/v1/items",
    "/search",
    "/static/js/app.js",
    "/static/css/site.css",
    "/img/logo.png",
    "/checkout",
    "/cart",
    "/login",
    "/logout",
    "/product",
];
const WORDS: [&str; 22] = [
    "user", "session", "cache", "miss", "hit", "upstream", "timeout", "retry", "order", "payment", "token",
    "expired", "queued", "worker", "db", "query", "slow", "ok", "redirect", "auth", "failed", "served",
];
const REFERRERS: [&str; 6] = [
    "-",
    "https://www.google.com/",
    "https://www.bing.com/",
    "https://news.ycombinator.com/",
    "https://example.com/",
    "https://t.co/x1y2z3",
];

/// fractaldb's codecs, each with the TokuDB names that mean the same.
pub const FRACTALDB_FORMATS: [(&str, &str); 6] = [
    ("TOKUDB_UNCOMPRESSED", ""),
    ("TOKUDB_ZSTD", "TOKUDB_DEFAULT, COMPRESSED"),
    ("TOKUDB_LZ4", "TOKUDB_QUICKLZ, TOKUDB_FAST"),
    ("TOKUDB_SNAPPY", ""),
    ("TOKUDB_ZLIB", ""),
    ("TOKUDB_LZMA", "TOKUDB_SMALL"),
];

/// The setting of fractaldb's large-basement run.
const LARGE_READ_BLOCK: &str = "tokudb_read_block_size=65536";

/// MyRocks' column family options for the zstd run.
const MYROCKS_ZSTD: &str = "--rocksdb-default-cf-options=compression=kZSTD;bottommost_compression=kZSTD";

/// One codec run: its name in the report, the table options, the server's extra settings.
fn variants(kind: Option<ServerKind>) -> Vec<(String, String, Vec<String>)> {
    match kind {
        Some(ServerKind::Fractaldb | ServerKind::FractaldbFast | ServerKind::FractaldbPool) => {
            let mut v: Vec<_> = FRACTALDB_FORMATS
                .iter()
                .map(|(f, _)| (f.to_string(), format!(" ROW_FORMAT={f}"), Vec::new()))
                .collect();
            // The default codec with TokuDB's default basement (64 KiB, ours
            // is 8 KiB): what a table tuned for compression, as a log table
            // is, gets with `tokudb_read_block_size`.
            v.push((
                format!("TOKUDB_ZSTD {LARGE_READ_BLOCK}"),
                " ROW_FORMAT=TOKUDB_ZSTD".into(),
                vec![format!("--{}", LARGE_READ_BLOCK.replace('_', "-"))],
            ));
            v
        }
        Some(ServerKind::Innodb) => vec![
            ("DYNAMIC (default)".into(), String::new(), Vec::new()),
            ("COMPRESSED".into(), " ROW_FORMAT=COMPRESSED".into(), Vec::new()),
        ],
        Some(ServerKind::Myrocks) => vec![("zstd".into(), String::new(), vec![MYROCKS_ZSTD.to_string()])],
        None => vec![("default".into(), String::new(), Vec::new())],
    }
}

fn pick<'a>(rng: &mut SmallRng, items: &[&'a str], weights: &[u32]) -> &'a str {
    let total: u32 = weights.iter().sum();
    let mut x = rng.gen_range(0..total);
    for (item, &w) in items.iter().zip(weights) {
        if x < w {
            return item;
        }
        x -= w;
    }
    items[items.len() - 1]
}

/// A SQL string literal (backslash and quote escaped, as MySQL reads them).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// One row's values after `id`, as a SQL tuple. `ts` is the event's time in ms.
fn row(rng: &mut SmallRng, ts: &mut u64) -> String {
    *ts += rng.gen_range(0..=40);
    let host = format!("web{:02}.dc{}.example.com", rng.gen_range(1..=24), rng.gen_range(1..=3));
    let method = pick(rng, &["GET", "POST", "PUT", "DELETE"], &[80, 15, 3, 2]);
    let mut path = PATHS[rng.gen_range(0..PATHS.len())].to_string();
    if path.starts_with("/api") || path == "/product" {
        let _ = write!(path, "/{}", rng.gen_range(1..=500_000));
    }
    if rng.gen_bool(0.3) {
        let _ = write!(path, "?q={}&page={}", WORDS[rng.gen_range(0..WORDS.len())], rng.gen_range(1..=20));
    }
    let status: u32 =
        pick(rng, &["200", "301", "304", "404", "500", "503"], &[80, 4, 8, 5, 2, 1]).parse().unwrap();
    let nbytes = rng.gen_range(200..=90_000);
    let referrer = REFERRERS[rng.gen_range(0..REFERRERS.len())];
    let agent = AGENTS[rng.gen_range(0..AGENTS.len())];
    let ip = format!(
        "{}.{}.{}.{}",
        rng.gen_range(1..=223),
        rng.gen_range(0..=255),
        rng.gen_range(0..=255),
        rng.gen_range(1..=254)
    );
    let secs = *ts / 1000;
    let stamp = format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        super::maintenance::date((secs / 86_400) as i64),
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
        *ts % 1000
    );
    let level = pick(rng, &["INFO", "WARN", "ERROR", "DEBUG"], &[70, 15, 5, 10]);
    let words: Vec<&str> = (0..rng.gen_range(3..=12)).map(|_| WORDS[rng.gen_range(0..WORDS.len())]).collect();
    let short_host = host.split('.').next().unwrap_or_default().to_string();
    let msg = format!(
        "{stamp} {level} [{short_host}] req={:016x} {method} {path} -> {status} in {}ms: {}",
        rng.gen::<u64>(),
        rng.gen_range(1..=3000),
        words.join(" ")
    );
    format!(
        "({ts},{},{},{},{status},{nbytes},{},{},{},{})",
        quote(&host),
        quote(method),
        quote(&path),
        quote(referrer),
        quote(agent),
        quote(&ip),
        quote(&msg)
    )
}

/// Writes `rows` log rows as 1,000-row INSERTs to `path`.
pub fn write_rows(path: &Path, rows: u64, seed: u64) -> Result<()> {
    let file = fs::File::create(path).map_err(|e| Error::new(format!("creating {}: {e}", path.display())))?;
    let mut w = BufWriter::new(file);
    let werr = |e: std::io::Error| Error::new(format!("writing {}: {e}", path.display()));
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut ts = 1_496_275_200_000; // 2017-06-01 00:00:00 UTC, in ms
    let mut done = 0;
    while done < rows {
        let batch = (rows - done).min(1000);
        let tuples: Vec<String> = (0..batch).map(|_| row(&mut rng, &mut ts)).collect();
        writeln!(
            w,
            "INSERT INTO log (ts_ms,host,method,url,status,bytes,referrer,user_agent,client_ip,message) VALUES {};",
            tuples.join(",")
        )
        .map_err(werr)?;
        done += batch;
    }
    w.flush().map_err(werr)
}

/// Allocated bytes of the files under `dir` that hold a `kind` server's tables.
/// None for a server the user runs (its files are not ours to read).
fn table_bytes(kind: Option<ServerKind>, dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    kind?;
    let holds_tables = |p: &Path| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        match kind {
            Some(ServerKind::Fractaldb | ServerKind::FractaldbFast | ServerKind::FractaldbPool) => {
                name.ends_with(".fdb")
            }
            Some(ServerKind::Innodb) => p.ends_with("bench/log.ibd"),
            Some(ServerKind::Myrocks) => name.ends_with(".sst"),
            None => unreachable!("kind is known"),
        }
    };
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = path.symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if holds_tables(&path) {
                total += meta.blocks() * 512;
            }
        }
    }
    Some(total)
}

/// Loads the log table under each of the kind's codecs, a fresh server per codec.
pub fn run(kind: Option<ServerKind>, fresh: &Fresh, p: &Params, progress: &dyn Fn(&str)) -> Result<Vec<Run>> {
    let n = p.log_rows.max(1);
    fs::create_dir_all(&p.scratch)
        .map_err(|e| Error::new(format!("creating {}: {e}", p.scratch.display())))?;
    let file = p.scratch.join(format!("log-{n}-{}.sql", p.seed));
    if !file.exists() {
        progress(&format!("writing {n} log rows to {}", file.display()));
        let tmp = file.with_extension("sql.tmp");
        write_rows(&tmp, n, p.seed)?;
        fs::rename(&tmp, &file).map_err(|e| Error::new(format!("renaming {}: {e}", tmp.display())))?;
    }
    let mut runs = Vec::new();
    for (name, options, extra) in variants(kind) {
        let server = fresh(&extra)?;
        let empty = server.datadir.as_deref().and_then(|d| table_bytes(kind, d));
        let before = server.counters();
        let ep = server.endpoint.clone();
        let mut c = client::connect(&ep, None)?;
        client::exec_all(
            &mut c,
            &[
                "DROP DATABASE IF EXISTS bench".into(),
                "CREATE DATABASE bench".into(),
                format!("{}{options}", TABLE.replace("CREATE TABLE log", "CREATE TABLE bench.log")),
            ],
        )?;
        let secs = client::source_file(&ep, "bench", &file)?;
        let count = client::scalar(&mut c, "SELECT COUNT(*) FROM bench.log")?.unwrap_or_default();
        if count != n.to_string() {
            return Err(Error::new(format!("log table {name}: {count} rows after loading {n}")));
        }
        if kind == Some(ServerKind::Myrocks) {
            client::exec_all(
                &mut c,
                &[
                    "SET GLOBAL rocksdb_force_flush_memtable_now = 1".into(),
                    "SET GLOBAL rocksdb_compact_cf = 'default'".into(),
                ],
            )?;
        }
        drop(c);
        let counters = match (before, server.counters()) {
            (Some(b), Some(a)) => Some(a.since(&b)),
            _ => None,
        };
        let datadir = server.datadir.clone();
        server.stop()?;
        let after = datadir.as_deref().and_then(|d| table_bytes(kind, d));
        let disk = match (after, empty) {
            (Some(a), Some(e)) => Some(a.saturating_sub(e)),
            _ => None,
        };
        progress(&format!("{name}: {secs:.2} s, {} KiB", disk.map(|d| d >> 10).unwrap_or_default()));
        runs.push(Run {
            variant: name,
            threads: 1,
            units: n,
            secs,
            disk_bytes: disk,
            counters,
            ..Run::default()
        });
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_seeded_and_quoted() {
        let (mut a, mut b) = (SmallRng::seed_from_u64(3), SmallRng::seed_from_u64(3));
        let (mut ta, mut tb) = (1_496_275_200_000, 1_496_275_200_000);
        let ra = row(&mut a, &mut ta);
        assert_eq!(ra, row(&mut b, &mut tb));
        assert!(ra.starts_with('(') && ra.ends_with("')"), "{ra}");
        assert!(ra.contains("2017-06-01T00:00:00."), "{ra}");
        assert_eq!(quote("it's \\ here"), "'it\\'s \\\\ here'");
    }
}
