//! IO-bound analytic reads: range scans over secondary indexes that join
//! back to a table several times larger than the cache.
//!
//! `orders` (an auto-increment key, a customer, a date, an amount and 200
//! bytes of padding, indexes on the date and on the customer) is loaded with
//! 1,000-row INSERTs in random date and customer order, so the rows one
//! index range names lie all over the primary key; `customers` holds one
//! row per 100 orders. Then each client thread runs, for the sysbench run's
//! seconds at each of its thread counts, queries of two kinds in turn:
//!
//! - `SELECT COUNT(*), SUM(amount) FROM orders WHERE created BETWEEN d AND d + 1`:
//!   a range of the date index (about 1/1825 of the table), each entry
//!   looked up in the primary key for its amount;
//! - `SELECT c.region, COUNT(*), SUM(o.amount) FROM customers c JOIN orders o
//!   ON o.customer_id = c.id WHERE c.id BETWEEN x AND x + 9 GROUP BY c.region`:
//!   ten customers, their orders through the customer index, each order
//!   from the primary key.
//!
//! The rate is queries per second; the default size (`--analytic-rows`) is
//! ten times the cache in row bytes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client;
use super::servers::Endpoint;
use super::workloads::{summarize, Params, Run};
use crate::error::{Error, Result};

/// Days the dates spread over.
const DAYS: i64 = 3650;
/// Orders per customer.
const ORDERS_PER_CUSTOMER: u64 = 100;
/// Bytes one order takes in the engines, roughly (for the default size).
pub const ROW_BYTES: u64 = 260;

fn schema() -> Vec<String> {
    vec![
        "DROP DATABASE IF EXISTS bench".into(),
        "CREATE DATABASE bench".into(),
        "CREATE TABLE bench.customers (id INT NOT NULL PRIMARY KEY, region INT NOT NULL, name VARCHAR(40) NOT NULL)"
            .into(),
        "CREATE TABLE bench.orders (id BIGINT NOT NULL AUTO_INCREMENT, customer_id INT NOT NULL, \
         created DATE NOT NULL, amount INT NOT NULL, pad CHAR(200) NOT NULL, PRIMARY KEY (id), \
         KEY created (created), KEY customer (customer_id))"
            .into(),
    ]
}

fn day(d: i64) -> String {
    super::maintenance::date(14_610 + d)
}

/// Loads the tables with `p.threads` connections; returns the customers' count.
fn load(ep: &Endpoint, p: &Params, progress: &dyn Fn(&str)) -> Result<u64> {
    let mut c = client::connect(ep, None)?;
    client::exec_all(&mut c, &schema())?;
    let rows = p.analytic_rows.max(1);
    let customers = rows.div_ceil(ORDERS_PER_CUSTOMER);
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let mut id = 0;
    while id < customers {
        let end = (id + 1000).min(customers);
        let values: Vec<String> =
            (id..end).map(|i| format!("({i},{},'customer {i}')", rng.gen_range(0..20))).collect();
        client::exec_all(&mut c, &[format!("INSERT INTO bench.customers VALUES {}", values.join(","))])?;
        id = end;
    }
    let batches = rows.div_ceil(1000);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..p.threads.max(1) {
        let (ep, next) = (ep.clone(), next.clone());
        let seed = p.seed.wrapping_add(1 + t as u64);
        handles.push(std::thread::spawn(move || -> Result<()> {
            let mut conn = client::connect(&ep, Some("bench"))?;
            let mut rng = SmallRng::seed_from_u64(seed);
            let pad = "x".repeat(200);
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= batches {
                    return Ok(());
                }
                let n = (rows - b * 1000).min(1000);
                let values: Vec<String> = (0..n)
                    .map(|_| {
                        format!(
                            "({},'{}',{},'{pad}')",
                            rng.gen_range(0..customers),
                            day(rng.gen_range(0..DAYS)),
                            rng.gen_range(0..100_000)
                        )
                    })
                    .collect();
                conn.query_drop(format!(
                    "INSERT INTO orders (customer_id, created, amount, pad) VALUES {}",
                    values.join(",")
                ))
                .map_err(|e| Error::new(format!("loading orders: {e}")))?;
            }
        }));
    }
    for h in handles {
        h.join().map_err(|_| Error::new("a loader thread panicked".to_string()))??;
    }
    progress(&format!("loaded {rows} orders in {:.1} s", started.elapsed().as_secs_f64()));
    Ok(customers)
}

pub fn run(ep: &Endpoint, p: &Params, progress: &dyn Fn(&str)) -> Result<Vec<Run>> {
    let customers = load(ep, p, progress)?;
    let mut runs = Vec::new();
    for &threads in &p.sysbench_threads {
        progress(&format!("{threads} threads, {} s", p.sysbench_secs));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let mut handles = Vec::new();
        for t in 0..threads.max(1) {
            let (ep, stop) = (ep.clone(), stop.clone());
            let seed = p.seed.wrapping_add(1000 + t as u64);
            handles.push(std::thread::spawn(move || -> Result<Vec<(u64, u32)>> {
                let mut conn = client::connect(&ep, Some("bench"))?;
                let mut rng = SmallRng::seed_from_u64(seed);
                let mut events = Vec::new();
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    let sql = if k.is_multiple_of(2) {
                        let d = rng.gen_range(0..DAYS - 1);
                        format!(
                            "SELECT COUNT(*), SUM(amount) FROM orders WHERE created BETWEEN '{}' AND '{}'",
                            day(d),
                            day(d + 1)
                        )
                    } else {
                        let x = rng.gen_range(0..customers.saturating_sub(9).max(1));
                        format!(
                            "SELECT c.region, COUNT(*), SUM(o.amount) FROM customers c JOIN orders o \
                             ON o.customer_id = c.id WHERE c.id BETWEEN {x} AND {} GROUP BY c.region",
                            x + 9
                        )
                    };
                    let _: Vec<mysql::Row> =
                        conn.query(&sql).map_err(|e| Error::new(format!("{e} in: {sql}")))?;
                    k += 1;
                    let now = Instant::now();
                    events.push((
                        now.duration_since(start).as_micros() as u64,
                        now.duration_since(began).as_micros().min(u32::MAX as u128) as u32,
                    ));
                }
                Ok(events)
            }));
        }
        let deadline = Duration::from_secs(p.sysbench_secs);
        while start.elapsed() < deadline && !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        let mut events = Vec::new();
        for h in handles {
            events.extend(h.join().map_err(|_| Error::new("a query thread panicked".to_string()))??);
        }
        let mut run = summarize(events, 1, p.interval_secs, threads, 0);
        run.variant = "range+join".into();
        runs.push(run);
    }
    Ok(runs)
}
