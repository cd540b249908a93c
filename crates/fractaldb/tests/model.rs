//! The randomized model test: long random sequences of every operation
//! against a `BTreeMap`, with tiny nodes and a tiny cache so that splits,
//! merges, flushes, evictions and reopenings all happen many times.
//!
//! Each run is 100,000 operations by default; with batches of up to 300
//! writes and range deletes of up to 3,000 keys, that is a few million
//! individual changes, reads and cursor steps per test.
//!
//! Reproduce a failure with the seed it prints:
//! `FRACTALDB_SEED=<seed> cargo test -p fractaldb --test model`.
//! Make it longer with `FRACTALDB_MODEL_OPS=<n>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, UpdateFn, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ADD: u8 = 1;

/// Update function 1: the value is a little-endian u64 counter; add the argument.
fn add_fn() -> UpdateFn {
    Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let old = old.map(counter).unwrap_or(0);
        Some(old.wrapping_add(counter(arg)).to_le_bytes().to_vec())
    })
}

fn counter(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(a)
}

fn env_opts(cache: usize) -> EnvOptions {
    // Buffered I/O: with a cache this small almost every step misses, and with
    // O_DIRECT each miss is a device read, which on a slow CI disk turns a
    // minute into hours. O_DIRECT itself is tested in file::io and tests/memory.rs.
    //
    // The log is fsynced in the background (commit_sync off: durability is
    // tested in crash.rs, sim.rs and faults.rs), and checkpoints come every
    // 250 ms, so they run while the cleaner flushes and the test writes:
    // nodes changed mid-checkpoint are copied (Tree::cow) all the time.
    EnvOptions {
        cache_size_bytes: cache,
        update_fns: vec![(ADD, add_fn())],
        direct_io: false,
        commit_sync: false,
        checkpoint_period: Some(std::time::Duration::from_millis(250)),
        ..Default::default()
    }
}

fn key(rng: &mut SmallRng, space: u64) -> Vec<u8> {
    let k = rng.gen_range(0..space);
    // Variable-length keys sharing prefixes exercise the comparator paths.
    let mut s = format!("{k:08}").into_bytes();
    if k % 3 == 0 {
        s.extend_from_slice(b"-long-suffix");
    }
    s
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..10) {
        0 => 0,
        1 => rng.gen_range(200..600),
        _ => rng.gen_range(1..40),
    };
    (0..len).map(|_| rng.gen_range(b'a'..=b'z')).collect()
}

struct Run {
    rng: SmallRng,
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    space: u64,
}

impl Run {
    fn check_cursor_walk(&mut self, d: &Dictionary) {
        let start = key(&mut self.rng, self.space);
        let steps = self.rng.gen_range(1..200);
        let mut c = d.cursor();
        if self.rng.gen_bool(0.5) {
            let mut expect = self.model.range(start.clone()..);
            let mut ok = c.seek_ge(&start).unwrap();
            for _ in 0..steps {
                match expect.next() {
                    Some((k, v)) => {
                        assert!(ok, "cursor ended early (seek_ge {start:?})");
                        assert_eq!((c.key(), c.value()), (Some(&k[..]), Some(&v[..])));
                    }
                    None => {
                        assert!(!ok, "cursor went past the end");
                        break;
                    }
                }
                ok = c.next().unwrap();
            }
        } else {
            let mut expect = self.model.range(..=start.clone()).rev();
            let mut ok = c.seek_le(&start).unwrap();
            for _ in 0..steps {
                match expect.next() {
                    Some((k, v)) => {
                        assert!(ok, "cursor ended early (seek_le {start:?})");
                        assert_eq!((c.key(), c.value()), (Some(&k[..]), Some(&v[..])));
                    }
                    None => {
                        assert!(!ok, "cursor went before the start");
                        break;
                    }
                }
                ok = c.prev().unwrap();
            }
        }
    }

    fn check_full_scan(&self, d: &Dictionary) {
        let mut c = d.cursor();
        let mut ok = c.first().unwrap();
        for (n, (k, v)) in self.model.iter().enumerate() {
            assert!(ok, "forward scan ended after {n} of {} keys", self.model.len());
            assert_eq!((c.key(), c.value()), (Some(&k[..]), Some(&v[..])));
            ok = c.next().unwrap();
        }
        assert!(!ok, "forward scan found more keys than the model");
        let mut ok = c.last().unwrap();
        for (k, v) in self.model.iter().rev() {
            assert!(ok);
            assert_eq!((c.key(), c.value()), (Some(&k[..]), Some(&v[..])));
            ok = c.prev().unwrap();
        }
        assert!(!ok);
    }
}

/// Returns the most spills (`flush.rs`) one check found, and how many
/// buffers went to spills before their node's write-back (`EnvStats`).
fn run_model(seed: u64, ops: usize, opts: DictOptions, cache: usize) -> (u64, u64) {
    let mut spills = 0;
    let mut write_back_spills = 0;
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::open(dir.path(), env_opts(cache)).unwrap();
    let mut d = env.create_dictionary("m", opts).unwrap();
    let mut run = Run { rng: SmallRng::seed_from_u64(seed), model: BTreeMap::new(), space: 20_000 };
    for i in 0..ops {
        let r = run.rng.gen_range(0..1000);
        match r {
            0..=399 => {
                let (k, v) = (key(&mut run.rng, run.space), value(&mut run.rng));
                d.put(&k, &v).unwrap();
                run.model.insert(k, v);
            }
            400..=499 => {
                let k = key(&mut run.rng, run.space);
                d.delete(&k).unwrap();
                run.model.remove(&k);
            }
            500..=579 => {
                let k = key(&mut run.rng, run.space);
                let add = run.rng.gen_range(1..100u64);
                d.update(&k, ADD, &add.to_le_bytes()).unwrap();
                let old = run.model.get(&k).map(|v| counter(v)).unwrap_or(0);
                run.model.insert(k, old.wrapping_add(add).to_le_bytes().to_vec());
            }
            580..=659 => {
                let mut b = WriteBatch::new();
                for _ in 0..run.rng.gen_range(1..300) {
                    let k = key(&mut run.rng, run.space);
                    if run.rng.gen_bool(0.8) {
                        let v = value(&mut run.rng);
                        b.put(&k, &v);
                        run.model.insert(k, v);
                    } else {
                        b.delete(&k);
                        run.model.remove(&k);
                    }
                }
                d.write(&b).unwrap();
            }
            660..=661 => {
                let add = run.rng.gen_range(1..5u64);
                d.broadcast_update(ADD, &add.to_le_bytes()).unwrap();
                for v in run.model.values_mut() {
                    *v = counter(v).wrapping_add(add).to_le_bytes().to_vec();
                }
            }
            662..=664 => {
                // Delete a whole range, so leaves empty out and merge.
                let a = key(&mut run.rng, run.space);
                let doomed: Vec<Vec<u8>> =
                    run.model.range(a..).take(run.rng.gen_range(100..3000)).map(|(k, _)| k.clone()).collect();
                let mut b = WriteBatch::new();
                for k in &doomed {
                    b.delete(k);
                    run.model.remove(k);
                }
                d.write(&b).unwrap();
            }
            665..=669 => {
                // A range delete, alone or in a batch among puts and
                // deletes (which apply in order: a put after it stays).
                let mut a = key(&mut run.rng, run.space);
                let first: u64 = std::str::from_utf8(&a[..8]).unwrap().parse().unwrap();
                let mut z = format!("{:08}", first + run.rng.gen_range(0..3000)).into_bytes();
                if a > z {
                    std::mem::swap(&mut a, &mut z);
                }
                if run.rng.gen_bool(0.5) {
                    d.delete_range(&a, &z).unwrap();
                    run.model.retain(|k, _| !(&a..&z).contains(&k));
                } else {
                    let mut b = WriteBatch::new();
                    let around = |b: &mut WriteBatch, run: &mut Run| {
                        for _ in 0..run.rng.gen_range(0..20) {
                            let k = key(&mut run.rng, run.space);
                            let v = value(&mut run.rng);
                            b.put(&k, &v);
                            run.model.insert(k, v);
                        }
                    };
                    around(&mut b, &mut run);
                    b.delete_range(&a, &z);
                    run.model.retain(|k, _| !(&a..&z).contains(&k));
                    around(&mut b, &mut run);
                    d.write(&b).unwrap();
                }
            }
            670..=899 => {
                let k = key(&mut run.rng, run.space);
                assert_eq!(d.get(&k).unwrap(), run.model.get(&k).cloned(), "get {k:?} at op {i}");
            }
            900..=990 => run.check_cursor_walk(&d),
            991..=993 => {
                run.check_full_scan(&d);
                spills = spills.max(d.check().unwrap().spills);
            }
            _ => {
                // Close and reopen: everything must come back.
                drop(d);
                write_back_spills += env.stats().write_back_spills;
                env.close().unwrap();
                env = Env::open(dir.path(), env_opts(cache)).unwrap();
                d = env.open_dictionary("m").unwrap();
                spills = spills.max(d.check().unwrap().spills);
            }
        }
    }
    run.check_full_scan(&d);
    let report = d.check().unwrap();
    eprintln!("seed {seed}: {report:?} stats {:?}", env.stats().cache);
    write_back_spills += env.stats().write_back_spills;
    env.close().unwrap();
    (spills.max(report.spills), write_back_spills)
}

fn seed() -> u64 {
    std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

fn ops(default: usize) -> usize {
    std::env::var("FRACTALDB_MODEL_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Runs `f(seed)` and names the seed if it panics.
fn with_seed(f: impl FnOnce(u64) + std::panic::UnwindSafe) {
    let seed = seed();
    eprintln!("model test seed: {seed} (rerun with FRACTALDB_SEED={seed})");
    if let Err(e) = std::panic::catch_unwind(move || f(seed)) {
        eprintln!("model test FAILED with seed {seed}: rerun with FRACTALDB_SEED={seed}");
        std::panic::resume_unwind(e);
    }
}

#[test]
fn tiny_nodes_tiny_cache() {
    with_seed(|seed| {
        let opts = DictOptions {
            node_size_bytes: 2048,
            basement_size_bytes: 256,
            fanout: 4,
            codec: Codec::Lz4,
            comparator: None,
        };
        let (spills, write_back_spills) = run_model(seed, ops(100_000), opts, 256 << 10);
        // The cache is far smaller than the data: flushes into leaves not
        // in memory go to spills, and checks see them (reads, cursors,
        // reopening and checkpoints are then tested with spills present).
        assert!(spills > 0, "no check ever saw a spill");
        // Internal nodes leave the cache too, and their larger buffers go
        // to spills first: the model checks that path as well.
        assert!(write_back_spills > 0, "no write-back moved a buffer to a spill");
    });
}

#[test]
fn small_nodes_every_codec() {
    with_seed(|seed| {
        for (i, codec) in
            [Codec::None, Codec::Zstd, Codec::Snappy, Codec::Zlib, Codec::Lzma].into_iter().enumerate()
        {
            let opts = DictOptions {
                node_size_bytes: 8192,
                basement_size_bytes: 1024,
                fanout: 8,
                codec,
                comparator: None,
            };
            run_model(seed.wrapping_add(i as u64), ops(100_000) / 5, opts, 512 << 10);
        }
    });
}
