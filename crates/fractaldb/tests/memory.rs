//! Memory: loading many times the cache keeps resident memory within the
//! cache budget plus a stated overhead.
//!
//! The overhead allowed here is the cache's slack (budget/16), transient
//! copies while nodes are rebuilt, compressed and read (a few node sizes),
//! thread stacks, and the freed memory the allocator has not yet returned
//! to the kernel. It is stated as budget/4 + 32 MiB. The allocator is the
//! one the `fractaldb` program ships, jemalloc with its settings
//! (crates/cli/src/alloc.rs): under glibc's malloc, which this binary used
//! before, resident growth was 8-12 MiB higher (54-59 MiB against 40-48
//! with checkpoints) and the bounds carried that instead. The test also
//! counts live heap bytes, which must stay within the budget plus slack
//! plus a few nodes and what one merge of a child's spills holds (see
//! `live_allowed`).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

use fractaldb::{DictOptions, Env, EnvOptions, WriteBatch};
use tikv_jemallocator::Jemalloc;

/// Counts live heap bytes, to tell the engine's own memory from what the
/// allocator keeps.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK_LIVE: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK_LIVE.fetch_max(n, Ordering::Relaxed);
        Jemalloc.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        Jemalloc.dealloc(p, l)
    }
}

// The `fractaldb` program's jemalloc settings, from the one file that
// holds them.
include!("../../cli/src/alloc_conf.rs");
#[global_allocator]
static A: Counting = Counting;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

#[test]
fn resident_memory_stays_within_the_cache_budget() {
    // No checkpoint during the load: what is measured is the cache's own
    // budget (the next test adds checkpoints). The live heap peaked at
    // 24-25 MiB in most runs, and at 27 MiB in one of about thirty (the
    // cache at 20.5 of it): 4 node sizes of margin for such tails.
    load_within_budget(Some(1 << 30), 4 * (512 << 10), 0);
}

/// With checkpoints during the load (a log trigger of 8 MiB: about twenty
/// of them), writers copy nodes a checkpoint still has to write
/// (`Tree::cow`): 6-9 MiB of copies at once, half the cache, about 270 in
/// all. They are charged to the cache until written (the evictor makes room
/// for them), so the bounds grow only by what the checkpoint itself holds
/// and by the evictor's lag: the node it is writing, copied and then
/// compressed (2 node sizes), the spill writer compressing a spill
/// beside them (its raw and compressed forms, 2 more), and what one
/// writer's step adds between two waits for room (`Cache::throttle`):
/// a writer that helps the cleaner flushes down a cascade
/// (`flush_cascade`), copying every pending node on its way, all charged
/// at once with no wait between them (12 node sizes allowed). Measured: the cache
/// peaked at 21-26 MiB with 5-9 MiB of copies held, the live heap at
/// 23-26 MiB alone and 24-29 MiB beside six busy processes and a
/// writer of synced files; CI once saw over 30 MiB against a bound that
/// allowed 8 node sizes here (30 MiB). For resident memory, what the
/// allocator keeps for a while of the copies the checkpoint thread and
/// the spill writer free (8 MiB): resident growth reached 40-48 MiB
/// under jemalloc (under glibc's malloc, 54-62 MiB, and 66 once beside
/// three busy processes).
/// At this size the live heap cannot tell charged copies from uncharged
/// ones (uncharged, it peaked at 25-29 MiB; charged, 23-29); the
/// charge's effect shows at a 1 GiB cache (docs/benchmarks.md). What this
/// test pins is that checkpoints hold no more than that, and that every
/// charge is given back: a copy never uncharged would leave the cache's
/// usage hundreds of MiB over its budget after the load.
#[test]
fn checkpoint_copies_are_within_the_cache_budget() {
    let (node, budget) = (512 << 10, 16 << 20);
    let stats = load_within_budget(Some(8 << 20), 16 * node, 2 * node + (8 << 20));
    eprintln!(
        "copies {} peak copy bytes {} KiB",
        stats.checkpoint_copies,
        stats.checkpoint_copy_bytes_peak >> 10
    );
    assert!(stats.checkpoint_copies > 0, "no copies were made: the test tests nothing");
    assert!(stats.checkpoint_copy_bytes_peak >= 4 * node as u64, "{stats:?}");
    assert_eq!(stats.checkpoint_copy_bytes, 0, "copies still charged after the checkpoints ended");
    assert!(stats.cache.used_bytes <= budget + budget / 16, "cache usage after the load: {stats:?}");
}

/// Loads about 10x the cache (16 MiB) of random keys and checks resident
/// memory and the live heap against the budget; the environment's
/// counters at the end, after a last checkpoint.
/// One load at a time: the live heap and resident memory are the whole
/// process's, and `cargo test` runs a binary's tests on parallel threads.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `extra_live` and `extra_resident` are added to the bounds.
fn load_within_budget(
    checkpoint_log_bytes: Option<u64>,
    extra_live: usize,
    extra_resident: usize,
) -> fractaldb::EnvStats {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The peak of this load, not of one that ran before it, counted from
    // what the process held before it: a test that failed before this one
    // may have left its environment's memory behind while its threads
    // wind down.
    let live_at_start = LIVE.load(Ordering::Relaxed);
    PEAK_LIVE.store(live_at_start, Ordering::Relaxed);
    let budget = 16 << 20;
    let dir = tempfile::tempdir().unwrap();
    let opts = EnvOptions { cache_size_bytes: budget, checkpoint_log_bytes, ..Default::default() };
    let env = Env::open(dir.path(), opts).unwrap();
    let d = env
        // The default basements (8 KiB): a leaf header keeps ~64 of them,
        // so what the cache charges for each pivot and basement slot
        // matters (`Node::mem_bytes`; charging a flat 32 bytes a slot left
        // about 1.5 MB of headers outside the budget, and this load peaked
        // at 26.x MiB against the bound).
        .create_dictionary("load", DictOptions { node_size_bytes: 512 << 10, ..Default::default() })
        .unwrap();
    // jemalloc hands an earlier test's freed pages back to the kernel
    // within about half a second (`dirty_decay_ms:500`): wait for that,
    // or they would count in the baseline and hide this load's growth.
    let mut baseline = rss_bytes();
    for _ in 0..30 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = rss_bytes();
        if now + (1 << 20) > baseline {
            break;
        }
        baseline = now;
    }
    let baseline = baseline.min(rss_bytes());
    let mut rng = SmallRng::seed_from_u64(3);
    let mut value = [0u8; 100];
    let rows = 1_600_000; // 8-byte keys + 100-byte values: ~170 MB, ~10x the cache
    let mut peak = 0;
    let mut batch = WriteBatch::new();
    for i in 0..rows {
        rng.fill(&mut value[..50]);
        batch.put(&rng.gen::<u64>().to_be_bytes(), &value);
        if batch.len() == 1000 {
            d.write(&batch).unwrap();
            batch.clear();
        }
        if i % 50_000 == 0 {
            peak = peak.max(rss_bytes());
            if std::env::var("FRACTALDB_VERBOSE").is_ok() {
                let s = env.stats().cache;
                eprintln!(
                    "{i}: rss {} MiB live {} MiB used {} MiB waits {} evict {} partial {} wb {}",
                    rss_bytes() >> 20,
                    LIVE.load(Ordering::Relaxed) >> 20,
                    s.used_bytes >> 20,
                    s.client_waits,
                    s.evictions,
                    s.partial_evictions,
                    s.write_backs
                );
            }
        }
    }
    d.write(&batch).unwrap();
    peak = peak.max(rss_bytes());
    let stats = env.stats().cache;
    let grown = peak.saturating_sub(baseline);
    let allowed = budget + budget / 4 + (32 << 20) + extra_resident;
    // Beyond the cache's own overshoot (budget/4), a few node sizes of
    // copies while nodes are rebuilt, compressed and read, plus what a
    // flush that merges a child's spills holds: the decoded spills (up to
    // `flush::SPILL_NODES` = 4 node sizes, charged to the cache while held)
    // and the child grown by as much until it is split and recharged.
    let live_allowed = budget + budget / 4 + (4 + 2 * 4) * (512 << 10) + extra_live;
    let peak_live = PEAK_LIVE.load(Ordering::Relaxed).saturating_sub(live_at_start);
    assert!(
        peak_live <= live_allowed,
        "live heap peaked at {} KiB over the start's, allowed {} KiB; the cache's peak {} KiB, checkpoint copies' peak {} KiB",
        peak_live >> 10,
        live_allowed >> 10,
        stats.peak_used_bytes >> 10,
        env.stats().checkpoint_copy_bytes_peak >> 10
    );
    eprintln!(
        "peak live heap {} MiB, live now {} MiB",
        PEAK_LIVE.load(Ordering::Relaxed) >> 20,
        LIVE.load(Ordering::Relaxed) >> 20
    );
    eprintln!(
        "baseline {} MiB, peak {} MiB, grown {} MiB, allowed {} MiB; file {:?}; {stats:?}",
        baseline >> 20,
        peak >> 20,
        grown >> 20,
        allowed >> 20,
        d.space().unwrap()
    );
    assert!(
        grown <= allowed,
        "resident memory grew {} MiB, more than the {} MiB allowed",
        grown >> 20,
        allowed >> 20
    );
    d.check().unwrap();
    env.checkpoint().unwrap();
    let stats = env.stats();
    drop(d);
    env.close().unwrap();
    stats
}
