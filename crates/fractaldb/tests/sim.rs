//! The deterministic simulation: the engine runs on `SimVfs`, an in-memory
//! file system that loses, keeps or tears unsynced writes at a crash, with
//! no background threads (`EnvOptions::background_threads = false`), so the
//! seed alone decides the workload, the I/O and where each crash lands.
//!
//! Each seed runs a random workload (puts, deletes, range deletes, batches,
//! upserts whose effect shows if applied twice, broadcast upserts, explicit checkpoints
//! and cleaner steps) on tiny nodes, a tiny cache and 4 KiB log files,
//! against a model (a `BTreeMap`). A crash is armed to strike after a random
//! number of file-system operations, so it lands anywhere: mid-flush,
//! mid-split, mid-eviction write-back, mid-checkpoint, mid-log-roll, or
//! during recovery itself. After each crash the environment is reopened and
//! must equal the model as of every acknowledged operation, plus or minus
//! the one operation in flight (whole or not at all), and pass `check()`.
//!
//! `FRACTALDB_SIM_SEEDS=<n>` runs more seeds (default 24), `FRACTALDB_SEED=<s>`
//! one seed; a failure prints the seed to rerun.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use fractaldb::{Codec, DictOptions, Env, EnvOptions, Error, SimVfs, UpdateFn, WriteBatch};
use rand::{rngs::SmallRng, Rng, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/sim/db";
const APPEND: u8 = 1;

/// The upsert: appends the argument to the value (keeping the last 64
/// bytes), creating it if absent. Applied twice, it shows.
fn append_fn() -> UpdateFn {
    Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let mut v = old.map(<[u8]>::to_vec).unwrap_or_default();
        v.extend_from_slice(arg);
        let cut = v.len().saturating_sub(64);
        Some(v[cut..].to_vec())
    })
}

fn apply_append(old: Option<&Vec<u8>>, arg: &[u8]) -> Vec<u8> {
    let mut v = old.cloned().unwrap_or_default();
    v.extend_from_slice(arg);
    let cut = v.len().saturating_sub(64);
    v[cut..].to_vec()
}

fn env_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 256 << 10,
        direct_io: false,
        background_threads: false,
        update_fns: vec![(APPEND, append_fn())],
        vfs: sim.boot(),
        commit_sync: true,
        checkpoint_period: None,
        log_file_size_bytes: 4 << 10,
        reserve_free_bytes: 0,
        ..Default::default()
    }
}

fn dict_opts() -> DictOptions {
    DictOptions {
        node_size_bytes: 2048,
        basement_size_bytes: 256,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    }
}

/// One step of the workload.
#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// Deletes the keys in [lo, hi).
    RangeDelete(Vec<u8>, Vec<u8>),
    Append(Vec<u8>, Vec<u8>),
    Broadcast(Vec<u8>),
    Batch(Vec<Op>),
    Checkpoint,
    Clean(usize),
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("key{:05}", rng.gen_range(0..5000)).into_bytes()
}

fn gen_op(rng: &mut SmallRng, depth: u32) -> Op {
    match rng.gen_range(0..100) {
        0..=44 => {
            let len = rng.gen_range(0..400);
            let v = (0..len).map(|_| rng.gen_range(b'a'..=b'z')).collect();
            Op::Put(key(rng), v)
        }
        45..=56 => Op::Delete(key(rng)),
        57..=59 => {
            let lo = rng.gen_range(0..5000);
            let hi = lo + rng.gen_range(0..200);
            Op::RangeDelete(format!("key{lo:05}").into_bytes(), format!("key{hi:05}").into_bytes())
        }
        60..=74 => Op::Append(key(rng), vec![rng.gen_range(b'A'..=b'Z')]),
        75..=76 => Op::Broadcast(vec![rng.gen_range(b'0'..=b'9')]),
        77..=91 if depth == 0 => Op::Batch((0..rng.gen_range(1..8)).map(|_| gen_op(rng, 1)).collect()),
        92..=94 if depth == 0 => Op::Checkpoint,
        95..=99 if depth == 0 => Op::Clean(rng.gen_range(1..20)),
        _ => Op::Delete(key(rng)),
    }
}

fn apply_model(m: &mut Model, op: &Op) {
    match op {
        Op::Put(k, v) => {
            m.insert(k.clone(), v.clone());
        }
        Op::Delete(k) => {
            m.remove(k);
        }
        Op::RangeDelete(lo, hi) => m.retain(|k, _| !(lo..hi).contains(&k)),
        Op::Append(k, a) => {
            let v = apply_append(m.get(k), a);
            m.insert(k.clone(), v);
        }
        Op::Broadcast(a) => {
            for v in m.values_mut() {
                *v = apply_append(Some(v), a);
            }
        }
        Op::Batch(ops) => ops.iter().for_each(|o| apply_model(m, o)),
        Op::Checkpoint | Op::Clean(_) => {}
    }
}

fn run_op(env: &Env, d: &fractaldb::Dictionary, op: &Op) -> fractaldb::Result<()> {
    match op {
        Op::Checkpoint => env.checkpoint(),
        Op::Clean(n) => env.run_cleaner(*n).map(|_| ()),
        write => run_write(d, write),
    }
}

/// Runs a write (not `Checkpoint` or `Clean`) on the dictionary.
fn run_write(d: &fractaldb::Dictionary, op: &Op) -> fractaldb::Result<()> {
    match op {
        Op::Put(k, v) => d.put(k, v),
        Op::Delete(k) => d.delete(k),
        Op::RangeDelete(lo, hi) => d.delete_range(lo, hi),
        Op::Append(k, a) => d.update(k, APPEND, a),
        Op::Broadcast(a) => d.broadcast_update(APPEND, a),
        Op::Batch(ops) => {
            let mut b = WriteBatch::new();
            for o in ops {
                match o {
                    Op::Put(k, v) => b.put(k, v),
                    Op::Delete(k) => b.delete(k),
                    Op::RangeDelete(lo, hi) => b.delete_range(lo, hi),
                    Op::Append(k, a) => b.update(k, APPEND, a),
                    // A broadcast cannot be batched (`batchable` removes them).
                    _ => {}
                }
            }
            d.write(&b)
        }
        Op::Checkpoint | Op::Clean(_) => unreachable!("not a write: {op:?}"),
    }
}

fn batchable(op: &Op) -> Op {
    match op {
        Op::Batch(ops) => Op::Batch(ops.iter().filter(|o| !matches!(o, Op::Broadcast(_))).cloned().collect()),
        o => o.clone(),
    }
}

fn read_all(d: &fractaldb::Dictionary) -> fractaldb::Result<Model> {
    d.range(None, None, false).collect()
}

/// Opens the environment after a crash, retrying if a crash armed during
/// recovery strikes; returns it with its dictionary.
fn reopen(sim: &Arc<SimVfs>, seed: u64) -> (Env, fractaldb::Dictionary) {
    for _ in 0..20 {
        let opened = Env::open(DIR, env_opts(sim)).and_then(|env| {
            let d = env.open_dictionary("t")?;
            Ok((env, d))
        });
        match opened {
            Ok(pair) => return pair,
            // A crash armed for recovery struck: boot again.
            Err(e) if sim.crash_count() > 0 && is_power_off(&e) => continue,
            Err(e) => panic!("seed {seed}: recovery failed: {e}"),
        }
    }
    panic!("seed {seed}: could not reopen");
}

fn is_power_off(e: &Error) -> bool {
    let s = e.to_string();
    s.contains("before a crash")
}

fn run_seed(seed: u64, ops_per_seed: usize) {
    let sim = SimVfs::new(seed);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let boot: Arc<dyn fractaldb::Vfs> = sim.boot();
    boot.create_dir_all(Path::new(DIR)).unwrap();
    let env = Env::open(DIR, env_opts(&sim)).unwrap();
    let mut d = env.create_dictionary("t", dict_opts()).unwrap();
    let mut env = Some(env);
    let mut model = Model::new();
    let mut crashes = 0;
    let mut i = 0;
    let mut write_backs = 0;
    while i < ops_per_seed {
        // Arm a crash somewhere in the next stretch of I/O.
        sim.crash_after(Some(rng.gen_range(0..3000)));
        let mut in_flight: Option<Op> = None;
        while i < ops_per_seed {
            let op = batchable(&gen_op(&mut rng, 0));
            i += 1;
            match run_op(env.as_ref().unwrap(), &d, &op) {
                Ok(()) => apply_model(&mut model, &op),
                Err(e) if sim.crash_count() == crashes => {
                    panic!("seed {seed}, op {i}: {op:?} failed with no crash: {e}")
                }
                Err(_) => {
                    in_flight = Some(op);
                    break;
                }
            }
        }
        // Power off (if the armed crash has not struck yet) and reboot.
        sim.crash_after(None);
        if sim.crash_count() == crashes {
            sim.crash();
        }
        write_backs += env.as_ref().unwrap().stats().cache.write_backs;
        drop(d);
        drop(env.take());
        // Recovery, with a crash armed in it now and then.
        if rng.gen_bool(0.3) {
            sim.crash_after(Some(rng.gen_range(0..200)));
        }
        let (e2, d2) = reopen(&sim, seed);
        sim.crash_after(None);
        crashes = sim.crash_count();
        let found = read_all(&d2).unwrap_or_else(|e| panic!("seed {seed}: reading after recovery: {e}"));
        if found != model {
            let mut with = model.clone();
            match &in_flight {
                Some(op) => apply_model(&mut with, op),
                None => panic!("seed {seed}, op {i}: state after crash {crashes} differs from the model"),
            }
            assert!(
                found == with,
                "seed {seed}, op {i}: after crash {crashes} the state is neither before nor after {in_flight:?}"
            );
            model = with;
        }
        let report = d2.check().unwrap_or_else(|e| panic!("seed {seed}: check() after crash {crashes}: {e}"));
        SPILLS_SEEN.fetch_add(report.spills, std::sync::atomic::Ordering::Relaxed);
        env = Some(e2);
        d = d2;
    }
    // Where the armed crashes struck, by operation and kind of file.
    let mut sites: BTreeMap<String, usize> = BTreeMap::new();
    for (op, path) in sim.crash_sites() {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let kind = match () {
            _ if name.ends_with(".fdl") => "log",
            _ if name.ends_with(".fdb") => "dictionary",
            _ if name.starts_with("catalog") => "catalog",
            _ => "folder",
        };
        *sites.entry(format!("{op} {kind}")).or_default() += 1;
    }
    eprintln!("seed {seed}: crashes struck before: {sites:?}");
    let st = sim.stats();
    eprintln!(
        "seed {seed}: {i} ops, {} crashes, {} keys, {write_backs} evictions written back, {} writes, {} syncs, {} log files now",
        sim.crash_count(),
        model.len(),
        st.writes,
        st.syncs,
        sim.files().iter().filter(|f| f.path.to_string_lossy().ends_with(".fdl")).count()
    );
    drop(d);
    env.unwrap().close().unwrap_or_else(|e| panic!("seed {seed}: close: {e}"));
}

#[test]
fn crashes_anywhere_lose_nothing_acknowledged() {
    let seeds: Vec<u64> = match std::env::var("FRACTALDB_SEED") {
        Ok(s) => vec![s.parse().expect("FRACTALDB_SEED is a number")],
        Err(_) => {
            let n = std::env::var("FRACTALDB_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(24);
            (1..=n).collect()
        }
    };
    let ops: usize = std::env::var("FRACTALDB_SIM_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(8000);
    let several = seeds.len() > 1;
    for seed in seeds {
        eprintln!("sim seed {seed} (rerun with FRACTALDB_SEED={seed})");
        run_seed(seed, ops);
    }
    // Crashes must also strike with spills in the tree (flush.rs): the
    // cache is far smaller than the data, so recovered trees hold some.
    if several {
        assert!(SPILLS_SEEN.load(std::sync::atomic::Ordering::Relaxed) > 0, "no recovered tree held a spill");
    }
}

/// Spills the checks after crashes found, over every seed.
static SPILLS_SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The same checks with the background threads on: writers on three
/// threads, the cleaner and evictor, and a checkpoint every 20 ms, so nodes
/// are copied mid-checkpoint (`Tree::cow`) while a crash strikes at a random
/// moment. Thread scheduling makes this run differ from run to run; the
/// seed fixes the workloads and the file system's luck.
#[test]
fn crashes_during_concurrent_checkpoints_lose_nothing_acknowledged() {
    let seeds: u64 = std::env::var("FRACTALDB_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    for seed in 1..=seeds {
        concurrent_seed(seed);
    }
}

fn concurrent_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        background_threads: true,
        checkpoint_period: Some(std::time::Duration::from_millis(20)),
        log_file_size_bytes: 8 << 10,
        ..env_opts(sim)
    }
}

/// Thread `t`'s keys all start with its prefix.
fn prefixed(t: u64, op: Op) -> Op {
    let p = |k: Vec<u8>| [format!("t{t}-").into_bytes(), k].concat();
    match op {
        Op::Put(k, v) => Op::Put(p(k), v),
        Op::Delete(k) => Op::Delete(p(k)),
        Op::RangeDelete(lo, hi) => Op::RangeDelete(p(lo), p(hi)),
        Op::Append(k, a) => Op::Append(p(k), a),
        Op::Batch(ops) => Op::Batch(ops.into_iter().map(|o| prefixed(t, o)).collect()),
        other => other,
    }
}

fn concurrent_seed(seed: u64) {
    const THREADS: u64 = 3;
    let sim = SimVfs::new(seed);
    let boot: Arc<dyn fractaldb::Vfs> = sim.boot();
    boot.create_dir_all(Path::new(DIR)).unwrap();
    let env = Env::open(DIR, concurrent_opts(&sim)).unwrap();
    env.create_dictionary("t", dict_opts()).unwrap();
    drop(env);
    let mut models: Vec<Model> = vec![Model::new(); THREADS as usize];
    let mut rng = SmallRng::seed_from_u64(seed);
    for round in 0..5 {
        let env =
            Env::open(DIR, concurrent_opts(&sim)).unwrap_or_else(|e| panic!("seed {seed}: recovery: {e}"));
        let d = env.open_dictionary("t").unwrap();
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let d = d.clone();
                let mut model = models[t as usize].clone();
                let mut rng = SmallRng::seed_from_u64(seed * 1000 + round * 10 + t);
                std::thread::spawn(move || {
                    loop {
                        let op = loop {
                            // Only writes here: checkpoints and cleaning run in the background.
                            let op = batchable(&gen_op(&mut rng, 0));
                            if matches!(
                                op,
                                Op::Put(..)
                                    | Op::Delete(_)
                                    | Op::RangeDelete(..)
                                    | Op::Append(..)
                                    | Op::Batch(_)
                            ) {
                                break prefixed(t, op);
                            }
                        };
                        let r = run_write(&d, &op);
                        match r {
                            Ok(()) => apply_model(&mut model, &op),
                            Err(_) => return (model, op),
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(rng.gen_range(30..300)));
        let before = env.stats();
        sim.crash();
        let results: Vec<(Model, Op)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        drop(d);
        drop(env);
        let env =
            Env::open(DIR, concurrent_opts(&sim)).unwrap_or_else(|e| panic!("seed {seed}: recovery: {e}"));
        let d = env.open_dictionary("t").unwrap();
        d.check().unwrap_or_else(|e| panic!("seed {seed} round {round}: check(): {e}"));
        let all = read_all(&d).unwrap();
        for (t, (acked, in_flight)) in results.into_iter().enumerate() {
            let prefix = format!("t{t}-").into_bytes();
            let found: Model = all
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut with = acked.clone();
            apply_model(&mut with, &in_flight);
            assert!(
                found == acked || found == with,
                "seed {seed} round {round} thread {t}: the state is neither the acknowledged one nor that plus {in_flight:?}"
            );
            models[t] = found;
        }
        eprintln!(
            "concurrent seed {seed} round {round}: {} keys; before the crash {} nodes copied mid-checkpoint, {} log records",
            all.len(),
            before.checkpoint_copies,
            before.log.records
        );
        drop(d);
        drop(env);
    }
}
