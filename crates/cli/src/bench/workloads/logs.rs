//! The codec comparison's rows (DESIGN.md, Benchmarks, "compression"): a
//! log-like table, loaded once per codec into a dataset of its own, so
//! bytes on disk and load time can be set side by side per codec.
//!
//! Each row is one line of an HTTP service's log, 150 to 250 bytes, as
//! real logs are: an increasing timestamp, a level, service and host from
//! small vocabularies, a random request id, a method and a path from a
//! dozen templates with ids drawn from a skewed distribution, a status, a
//! duration, a size and a message. The text repeats across lines as in a
//! real log and the ids and numbers do not, so it compresses like one. The
//! key is the timestamp in milliseconds then the row number (8 + 4 bytes,
//! big-endian), so the load appends in key order, as a log table does.

use std::io::Write as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{hex, load_in_batches, rows, Meter, RowGen, WorkloadParams, LOGS_STREAM};
use crate::bench::engines::{Keyspace, Session};
use crate::error::{Error, Result};

/// The one keyspace: the log table.
pub const KEYSPACES: [Keyspace; 1] = [rows("logs")];

/// The simulated clock's start (2023-11-14 22:13:20 UTC) and its step:
/// rows are 3 ms apart on average.
const START_MS: u64 = 1_700_000_000_000;
const STEP_MS: u64 = 3;

const LEVELS: [(&str, u32); 4] = [("INFO", 80), ("DEBUG", 10), ("WARN", 7), ("ERROR", 3)];
const SERVICES: [&str; 8] = [
    "api-gateway",
    "checkout",
    "search",
    "auth",
    "inventory",
    "payments",
    "recommendations",
    "notifications",
];
const HOSTS: u32 = 16;
const METHODS: [(&str, u32); 4] = [("GET", 70), ("POST", 20), ("PUT", 5), ("DELETE", 5)];
/// Path templates: `{}` takes an id, `{q}` a search word.
const PATHS: [&str; 12] = [
    "/api/v1/users/{}",
    "/api/v1/users/{}/orders",
    "/api/v1/orders/{}",
    "/api/v1/orders/{}/items",
    "/api/v1/products/{}",
    "/api/v1/products/{}/reviews",
    "/api/v1/cart/{}",
    "/api/v1/payments/{}/capture",
    "/api/v1/search?q={q}&page={}",
    "/api/v1/login",
    "/static/js/app.3f9c2a7b.js",
    "/healthz",
];
const WORDS: [&str; 10] =
    ["shoes", "laptop", "coffee", "headphones", "desk", "lamp", "backpack", "watch", "jacket", "phone"];
const STATUSES: [(u32, u32); 8] =
    [(200, 84), (201, 4), (204, 2), (304, 3), (400, 2), (401, 1), (404, 3), (500, 1)];
const MESSAGES_OK: [&str; 6] = [
    "request served",
    "request served from cache",
    "cache miss, loaded from primary",
    "session refreshed",
    "rate limit ok",
    "served stale while revalidating",
];
const MESSAGES_ERROR: [&str; 4] = [
    "upstream timed out after 3000ms",
    "validation failed: missing field",
    "not found",
    "connection reset by peer",
];
/// Distinct user ids; ids are drawn so that small ones are far more common.
const USERS: f64 = 100_000.0;

/// Picks from `(item, weight)` pairs whose weights add up to 100.
fn weighted<T: Copy>(rng: &mut SmallRng, choices: &[(T, u32)]) -> T {
    let mut roll = rng.gen_range(0..100u32);
    for &(item, weight) in choices {
        if roll < weight {
            return item;
        }
        roll -= weight;
    }
    choices[choices.len() - 1].0
}

/// Writes `ms` since 1970 as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn write_timestamp(out: &mut Vec<u8>, ms: u64) {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = crate::bench::civil_date(days);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
}

/// Row `i` of the log table: its key, and its line written into `line`
/// (cleared first). A function of the seed and `i` alone, so a check can
/// make any row again without the ones before it.
pub fn row(gen: &RowGen, i: u64, line: &mut Vec<u8>) -> [u8; 12] {
    let scattered = gen.scatter(LOGS_STREAM, i);
    // Strictly increasing: row i's time is in [3i, 3i + 2], row i+1's from 3i + 3.
    let time_ms = START_MS + i * STEP_MS + scattered % STEP_MS;
    let mut rng = SmallRng::seed_from_u64(scattered);
    line.clear();
    write_timestamp(line, time_ms);
    let level = weighted(&mut rng, &LEVELS);
    let service = SERVICES[rng.gen_range(0..SERVICES.len())];
    let host = rng.gen_range(1..=HOSTS);
    let request_id: u64 = rng.gen();
    let method = weighted(&mut rng, &METHODS);
    let user = USERS.powf(rng.gen::<f64>()) as u32;
    let path = PATHS[rng.gen_range(0..PATHS.len())];
    let status = weighted(&mut rng, &STATUSES);
    // Mostly fast, now and then slow: a long tail as real latencies have.
    let duration_ms = 1 + (rng.gen::<f64>().powi(4) * 3000.0) as u32;
    let bytes = if status == 204 || status == 304 { 0 } else { rng.gen_range(120..24_000u32) };
    let message = if status >= 400 {
        MESSAGES_ERROR[rng.gen_range(0..MESSAGES_ERROR.len())]
    } else {
        MESSAGES_OK[rng.gen_range(0..MESSAGES_OK.len())]
    };
    let path = path
        .replacen("{q}", WORDS[rng.gen_range(0..WORDS.len())], 1)
        .replacen("{}", &user.to_string(), 1)
        .replacen("{}", &rng.gen_range(1..20u32).to_string(), 1);
    let _ = write!(
        line,
        " {level:<5} {service}[{service}-{host:02}] req={request_id:016x} \"{method} {path} HTTP/1.1\" \
         status={status} dur_ms={duration_ms} bytes={bytes} user=u{user} msg=\"{message}\""
    );
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&time_ms.to_be_bytes());
    key[8..].copy_from_slice(&(i as u32).to_be_bytes());
    key
}

/// Writes `rows` log rows in batches; returns the raw bytes written.
pub fn load(
    session: &mut dyn Session,
    params: &WorkloadParams,
    gen: &RowGen,
    meter: &mut Meter,
) -> Result<u64> {
    let mut line = Vec::with_capacity(256);
    load_in_batches(session, &KEYSPACES, params, meter, &mut |batch, start, end| {
        let puts = batch.part(0);
        for i in start..end {
            let key = row(gen, i, &mut line);
            puts.put(&key, &line);
        }
    })
}

/// Reads the whole table back in key order and compares every row with
/// the generator's: the codec must give back exactly what it was given.
pub fn verify(session: &mut dyn Session, params: &WorkloadParams, gen: &RowGen) -> Result<()> {
    let keyspace = KEYSPACES[0].name;
    let mut i = 0u64;
    let mut line = Vec::with_capacity(256);
    session.scan_from(keyspace, &[], u64::MAX, &mut |key, value| {
        if i >= params.rows {
            return Err(Error::new(format!("codec: an extra row, key {}", hex(key))));
        }
        let expected_key = row(gen, i, &mut line);
        if key != expected_key || value != line.as_slice() {
            return Err(Error::new(format!(
                "codec: row {i} reads back as key {} {:?}, expected key {} {:?}",
                hex(key),
                String::from_utf8_lossy(value),
                hex(&expected_key),
                String::from_utf8_lossy(&line)
            )));
        }
        i += 1;
        Ok(())
    })?;
    if i != params.rows {
        return Err(Error::new(format!("codec: read back {i} rows, the load wrote {}", params.rows)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_rows_look_like_logs_and_are_repeatable() {
        let gen = RowGen::new(1);
        let (mut line, mut again) = (Vec::new(), Vec::new());
        let mut previous_key = [0u8; 12];
        let mut total = 0;
        for i in 0..2000 {
            let key = row(&gen, i, &mut line);
            assert!(key > previous_key, "keys increase");
            previous_key = key;
            assert!(
                (120..=260).contains(&line.len()),
                "{} bytes: {}",
                line.len(),
                String::from_utf8_lossy(&line)
            );
            assert_eq!(row(&gen, i, &mut again), key);
            assert_eq!(line, again);
            total += line.len();
        }
        let average = total / 2000;
        assert!((150..=250).contains(&average), "average {average} bytes");
        row(&gen, 0, &mut line);
        let text = String::from_utf8(line).unwrap();
        assert!(text.starts_with("2023-11-14T22:13:20."), "{text}");
        assert!(text.contains(" status=") && text.contains(" req="), "{text}");
    }
}
