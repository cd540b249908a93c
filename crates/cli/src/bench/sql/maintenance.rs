//! The maintenance sequence of the TokuDB posts: a table with a signed INT
//! primary key, a VARCHAR(32) hash column with an index and a DATE column
//! with an index; a mysqldump-format file of N rows fed to the `mariadb`
//! client (every server gets the same statements from the same client),
//! the table doubled twice with `INSERT ... SELECT`, a `GROUP BY hashcode
//! HAVING COUNT(*) > 12`, a `DELETE ... WHERE hashcode IN (...)` of the first
//! 1000 codes that query returned, `OPTIMIZE`, `TRUNCATE`, `OPTIMIZE`.
//!
//! Each step is a run: its wall time as the client saw it, its rows (rows
//! loaded, inserted or deleted; for the GROUP BY the groups returned, which
//! every server must agree on), and the bytes on disk right after it: every
//! file under the server's data folder, allocated blocks (`st_blocks`), the
//! same walk for every engine, logs included and nothing flushed first.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client;
use super::servers::Server;
use super::workloads::{Params, Run};
use crate::error::{Error, Result};

/// The GROUP BY's threshold: with hash codes drawn uniformly from N values
/// for N rows and the table doubled twice, a code has 4·c rows where c is
/// Poisson(1), so `> 12` returns the codes drawn 4 times or more (about 2%
/// of N).
pub const HAVING_MORE_THAN: u64 = 12;
/// Codes the DELETE names.
pub const DELETE_CODES: usize = 1000;
/// Bytes per extended INSERT in the dump (mysqldump's own default is 1 MiB).
const STATEMENT_BYTES: usize = 1 << 20;

/// The step names, in order.
pub const STEPS: [&str; 8] =
    ["load", "double-1", "double-2", "group-by", "delete", "optimize", "truncate", "optimize-2"];

/// 32 hex digits from `x` (two rounds of splitmix64): the hash column.
fn hashcode(x: u64) -> String {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let a = mix(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
    format!("{a:016x}{:016x}", mix(a ^ x))
}

/// The proleptic Gregorian date `days` after 1970-01-01, as YYYY-MM-DD.
pub(super) fn date(days: i64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Writes the dump of `rows` rows to `path`, as mysqldump writes one:
/// its session header, DROP and CREATE TABLE (no ENGINE clause: each
/// server's default engine), LOCK TABLES, DISABLE KEYS, extended INSERTs in
/// primary-key order, ENABLE KEYS, UNLOCK TABLES and the header undone.
pub fn write_dump(path: &Path, rows: u64, seed: u64) -> Result<()> {
    let file = fs::File::create(path).map_err(|e| Error::new(format!("creating {}: {e}", path.display())))?;
    let mut w = BufWriter::new(file);
    let mut rng = SmallRng::seed_from_u64(seed);
    let werr = |e: std::io::Error| Error::new(format!("writing {}: {e}", path.display()));
    write!(
        w,
        "-- fractaldb bench-sql maintenance table, {rows} rows (mysqldump's format)\n\
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n\
/*!40101 SET NAMES utf8mb4 */;\n\
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;\n\
/*!40103 SET TIME_ZONE='+00:00' */;\n\
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;\n\
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;\n\
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\n\
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;\n\
DROP TABLE IF EXISTS `maint`;\n\
CREATE TABLE `maint` (\n\
  `id` int(11) NOT NULL,\n\
  `hashcode` varchar(32) NOT NULL,\n\
  `dt` date NOT NULL,\n\
  `amount` int(11) NOT NULL,\n\
  PRIMARY KEY (`id`),\n\
  KEY `hashcode` (`hashcode`),\n\
  KEY `dt` (`dt`)\n\
) DEFAULT CHARSET=utf8mb4;\n\
LOCK TABLES `maint` WRITE;\n\
/*!40000 ALTER TABLE `maint` DISABLE KEYS */;\n"
    )
    .map_err(werr)?;
    let mut stmt = String::with_capacity(STATEMENT_BYTES + 256);
    let base_day = 14_610; // 2010-01-01
    for id in 1..=rows {
        if stmt.is_empty() {
            stmt.push_str("INSERT INTO `maint` VALUES ");
        } else {
            stmt.push(',');
        }
        let code = hashcode(rng.gen_range(0..rows));
        let dt = date(base_day + rng.gen_range(0..3650));
        let amount: u32 = rng.gen_range(0..100_000);
        stmt.push_str(&format!("({id},'{code}','{dt}',{amount})"));
        if stmt.len() >= STATEMENT_BYTES || id == rows {
            stmt.push_str(";\n");
            w.write_all(stmt.as_bytes()).map_err(werr)?;
            stmt.clear();
        }
    }
    write!(
        w,
        "/*!40000 ALTER TABLE `maint` ENABLE KEYS */;\n\
UNLOCK TABLES;\n\
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;\n\
/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;\n\
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;\n\
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;\n\
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n\
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;\n"
    )
    .map_err(werr)?;
    w.flush().map_err(werr)
}

/// Runs the sequence on `server`. The dump is written once per size and
/// seed under `p.scratch` and reused by every server.
pub fn run(server: &Server, p: &Params, progress: &dyn Fn(&str)) -> Result<Vec<Run>> {
    let n = p.maintenance_rows.max(1);
    if n > (i32::MAX / 4) as u64 {
        return Err(Error::new(format!(
            "the maintenance table's INT key holds at most {} rows",
            i32::MAX / 4
        )));
    }
    fs::create_dir_all(&p.scratch)
        .map_err(|e| Error::new(format!("creating {}: {e}", p.scratch.display())))?;
    let dump = p.scratch.join(format!("maintenance-{n}-{}.sql", p.seed));
    if !dump.exists() {
        progress(&format!("writing the dump of {n} rows to {}", dump.display()));
        let tmp = dump.with_extension("sql.tmp");
        write_dump(&tmp, n, p.seed)?;
        fs::rename(&tmp, &dump).map_err(|e| Error::new(format!("renaming {}: {e}", tmp.display())))?;
    }
    let ep = &server.endpoint;
    {
        let mut c = client::connect(ep, None)?;
        client::exec_all(&mut c, &["DROP DATABASE IF EXISTS bench".into(), "CREATE DATABASE bench".into()])?;
    }
    let mut conn = client::connect(ep, Some("bench"))?;
    let mut runs = Vec::new();
    let mut codes: Vec<String> = Vec::new();
    for step in STEPS {
        progress(step);
        let before = server.counters();
        let started = Instant::now();
        let e = |e: mysql::Error| Error::new(format!("maintenance step {step}: {e}"));
        let units = match step {
            "load" => {
                client::source_file(ep, "bench", &dump)?;
                n
            }
            "double-1" | "double-2" => {
                let shift = if step == "double-1" { n } else { 2 * n };
                conn.query_drop(format!(
                    "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + {shift}, hashcode, dt, amount FROM maint"
                ))
                .map_err(e)?;
                conn.affected_rows()
            }
            "group-by" => {
                let rows: Vec<(u64, String)> = conn
                    .query(format!(
                        "SELECT COUNT(*), hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > {HAVING_MORE_THAN}"
                    ))
                    .map_err(e)?;
                codes = rows.into_iter().map(|r| r.1).collect();
                codes.sort_unstable();
                codes.len() as u64
            }
            "delete" => {
                let list: Vec<String> = codes.iter().take(DELETE_CODES).map(|c| format!("'{c}'")).collect();
                if list.is_empty() {
                    0
                } else {
                    conn.query_drop(format!("DELETE FROM maint WHERE hashcode IN ({})", list.join(",")))
                        .map_err(e)?;
                    conn.affected_rows()
                }
            }
            "optimize" | "optimize-2" => {
                // OPTIMIZE answers with a result set (Table, Op, Msg_type,
                // Msg_text); an error row there is a failed step.
                let rows: Vec<(String, String, String, String)> =
                    conn.query("OPTIMIZE TABLE maint").map_err(e)?;
                if let Some(bad) = rows.iter().find(|r| r.2.eq_ignore_ascii_case("error")) {
                    return Err(Error::new(format!("OPTIMIZE TABLE maint: {}", bad.3)));
                }
                0
            }
            "truncate" => {
                conn.query_drop("TRUNCATE TABLE maint").map_err(e)?;
                0
            }
            _ => unreachable!("every step is handled"),
        };
        let secs = started.elapsed().as_secs_f64();
        let counters = match (before, server.counters()) {
            (Some(b), Some(a)) => Some(a.since(&b)),
            _ => None,
        };
        let disk = server.disk_bytes();
        progress(&format!(
            "{step}: {units} rows, {secs:.2} s, {} MB on disk",
            disk.map(|d| d >> 20).unwrap_or_default()
        ));
        runs.push(Run {
            variant: step.to_string(),
            threads: 1,
            units,
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
    fn dates_and_codes_are_well_formed() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(14_610), "2010-01-01");
        assert_eq!(date(14_610 + 3649), "2019-12-29");
        assert_eq!(date(11_016), "2000-02-29");
        let c = hashcode(7);
        assert_eq!(c.len(), 32);
        assert!(c.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(hashcode(7), hashcode(8));
    }
}
