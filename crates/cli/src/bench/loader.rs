//! `fractaldb bench-loader`: the bulk loader (`Env::loader`) against puts
//! through the tree, for the same rows in the same (ascending) order.
//!
//! Each side gets a fresh environment in its own folder and writes `--rows`
//! rows of 8-byte ascending keys and `insert`'s 100-byte values:
//! - `loader`: one `Env::loader`, every row added, `finish` (which makes
//!   the dictionary durable: its checkpoint and the catalog, fsynced);
//! - `puts`: `create_dictionary`, WriteBatches of `--batch-rows` rows (the
//!   log unsynced, `commit_sync` off: the cheapest a put gets), then a
//!   checkpoint so that the rows are in the file as the loader's are.
//!
//! Prints rows/s of each, the ratio, and each side's file bytes; every row
//! is read back and compared after both ran.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use fractaldb::{DictOptions, Env, EnvOptions, WriteBatch};

use super::report::group_digits;
use super::workloads::{RowGen, VALUE_BYTES};
use super::{parse_count, parse_size, say, wipe};
use crate::bail;
use crate::error::Result;

/// Options of `fractaldb bench-loader`.
#[derive(Args, Debug)]
pub struct LoaderArgs {
    /// Rows each side writes.
    #[arg(long, value_parser = parse_count, default_value = "2M", value_name = "N")]
    pub rows: u64,

    /// Rows per WriteBatch of the puts side.
    #[arg(long, value_parser = parse_count, default_value = "1000", value_name = "N")]
    pub batch_rows: u64,

    /// Cache size of the engine, e.g. 64MiB, 1GiB.
    #[arg(long, value_parser = parse_size, default_value = "64MiB", value_name = "SIZE")]
    pub cache: u64,

    /// Seed of the values.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Data folder; its `loader` and `puts` subfolders are wiped first.
    #[arg(long, default_value = "data/bench-loader", value_name = "DATA_DIR")]
    pub dir: PathBuf,
}

fn key(i: u64) -> [u8; 8] {
    // Ascending, with gaps (as ids of a table after deletes would be).
    (i * 3).to_be_bytes()
}

fn env_opts(cache: u64) -> EnvOptions {
    EnvOptions { cache_size_bytes: cache as usize, commit_sync: false, ..Default::default() }
}

pub fn run(args: LoaderArgs) -> Result<()> {
    if args.rows == 0 || args.batch_rows == 0 {
        bail!("--rows and --batch-rows must be above 0");
    }
    let gen = RowGen::new(args.seed);
    let mut value = [0u8; VALUE_BYTES];
    let raw = args.rows * (8 + VALUE_BYTES as u64);
    say(&format!("{} rows, {} raw bytes, cache {}", group_digits(args.rows), group_digits(raw), args.cache));

    let dir_l = args.dir.join("loader");
    wipe(&dir_l)?;
    let env = Env::open(&dir_l, env_opts(args.cache))?;
    let t = Instant::now();
    let mut l = env.loader("t", DictOptions::default())?;
    for i in 0..args.rows {
        gen.value(0, i, &mut value);
        l.add(&key(i), &value)?;
    }
    let (d, stats) = l.finish_with_stats()?;
    let loader_secs = t.elapsed().as_secs_f64();
    let loader_bytes = d.space()?.live_bytes;
    check(&d, &gen, args.rows)?;
    drop(d);
    env.close()?;
    say(&format!(
        "loader: {:.2} s, {} rows/s; {} leaves, {} internal nodes, height {}, {} live bytes",
        loader_secs,
        group_digits((args.rows as f64 / loader_secs) as u64),
        stats.leaves,
        stats.internal_nodes,
        stats.height,
        group_digits(loader_bytes)
    ));

    let dir_p = args.dir.join("puts");
    wipe(&dir_p)?;
    let env = Env::open(&dir_p, env_opts(args.cache))?;
    let t = Instant::now();
    let d = env.create_dictionary("t", DictOptions::default())?;
    let mut batch = WriteBatch::new();
    for i in 0..args.rows {
        gen.value(0, i, &mut value);
        batch.put(&key(i), &value);
        if batch.len() as u64 == args.batch_rows || i + 1 == args.rows {
            d.write(&batch)?;
            batch.clear();
        }
    }
    env.checkpoint()?;
    let puts_secs = t.elapsed().as_secs_f64();
    let puts_bytes = d.space()?.live_bytes;
    check(&d, &gen, args.rows)?;
    drop(d);
    env.close()?;
    say(&format!(
        "puts:   {:.2} s, {} rows/s; {} live bytes",
        puts_secs,
        group_digits((args.rows as f64 / puts_secs) as u64),
        group_digits(puts_bytes)
    ));
    say(&format!("loader / puts: {:.2}x the rows/s", puts_secs / loader_secs));
    Ok(())
}

/// Every row, in order, with its value.
fn check(d: &fractaldb::Dictionary, gen: &RowGen, rows: u64) -> Result<()> {
    let mut value = [0u8; VALUE_BYTES];
    let mut n = 0;
    for r in d.range(None, None, false) {
        let (k, v) = r?;
        gen.value(0, n, &mut value);
        if k != key(n) || v != value {
            bail!("row {n} read back wrong");
        }
        n += 1;
    }
    if n != rows {
        bail!("{n} rows read back, {rows} written");
    }
    Ok(())
}
