//! `fractaldb check DIR`: opens an environment, walks every dictionary
//! with `Dictionary::check` (every invariant, every clean block's
//! checksums), and prints what each holds and where its bytes are: leaves,
//! internal nodes and spills, on disk and before compression, and the
//! basements: how many, their mean compressed size, and what a point read
//! of an uncached basement reads with direct I/O (weighted by size, as gets
//! land). This is how to see why a dictionary takes the room it does.

use std::path::PathBuf;

use clap::Args;
use fractaldb::{CheckReport, Env, EnvOptions};

use super::engines::fractal::counter_add_fn;
use super::parse_size;
use super::report::human_bytes;
use crate::error::{Context, Error, Result};

/// `fractaldb check` options.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The environment's folder (for a benchmark's data: `<dir>/<dataset>/fractaldb`).
    pub dir: PathBuf,
    /// Cache for the walk.
    #[arg(long, value_parser = parse_size, default_value = "256MiB", value_name = "SIZE")]
    pub cache: u64,
    /// Take a checkpoint before the walk, so nodes the open left dirty (replayed from the log) are counted too.
    #[arg(long)]
    pub checkpoint: bool,
}

/// Runs `fractaldb check`; fails on the first dictionary that does not pass.
pub fn run(args: CheckArgs) -> Result<()> {
    // Opening a folder creates an environment there; a check must not.
    if !args.dir.join("catalog").is_file() {
        return Err(Error::new(format!(
            "{} holds no fractaldb environment (no catalog)",
            args.dir.display()
        )));
    }
    let mut options = EnvOptions {
        cache_size_bytes: usize::try_from(args.cache).unwrap_or(usize::MAX),
        ..EnvOptions::default()
    };
    // The benchmark's roll-up counters are update messages: registering
    // their function lets the open replay them.
    options.update_fns.push(counter_add_fn());
    let env = Env::open(&args.dir, options).context(|| format!("opening {}", args.dir.display()))?;
    if args.checkpoint {
        env.checkpoint()?;
    }
    let mut names = env.list_dictionaries();
    names.sort();
    println!(
        "| dictionary | height | leaves | internal | entries | buffered msgs | folded | spills | leaf bytes (raw) | internal bytes (raw) | spill bytes (raw) | basements | mean basement | point read |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut total = CheckReport::default();
    for name in &names {
        let dictionary = env.open_dictionary(name)?;
        let r = dictionary.check().context(|| format!("checking dictionary {name}"))?;
        print_row(name, &r);
        total.add(&r);
    }
    print_row("(all)", &total);
    env.close()?;
    Ok(())
}

fn print_row(name: &str, r: &CheckReport) {
    let pair = |disk: u64, raw: u64| format!("{} ({})", human_bytes(disk as f64), human_bytes(raw as f64));
    let mean = match r.basements {
        0 => "-".to_string(),
        n => human_bytes(r.basement_bytes as f64 / n as f64),
    };
    let point = r.point_read_bytes().map_or("-".to_string(), human_bytes);
    println!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {mean} | {point} |",
        r.height,
        r.leaves,
        r.internal_nodes,
        r.leafentries,
        r.buffered_messages,
        r.folded_commits,
        r.spills,
        pair(r.leaf_bytes, r.leaf_raw_bytes),
        pair(r.internal_bytes, r.internal_raw_bytes),
        pair(r.spill_bytes, r.spill_raw_bytes),
        r.basements,
    );
}
