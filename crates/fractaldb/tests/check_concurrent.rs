//! `Dictionary::check` holds no environment-wide lock across its walk:
//! while one dictionary is being checked, writes to other dictionaries and
//! checkpoints go on; and a check stays correct while checkpoints, the
//! evictor's write-backs and the spill writer run beside it.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU8, Ordering as AtomicOrdering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What the probe does inside the check: write to another dictionary and
/// take a checkpoint. Set by the test while its check runs.
static OTHER: Mutex<Option<(Arc<Env>, Arc<Dictionary>)>> = Mutex::new(None);

/// 0: the probe has not run; 1: the write and the checkpoint finished while
/// the check was inside the comparator; 2: they did not finish.
static PROBE: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// Armed on the thread that runs the check, so only the check's
    /// comparisons run the probe (not the loads before it).
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Bytewise order. The first time it is called on an armed thread (inside
/// the check's walk, with the tree's nodes pinned), it makes another thread
/// write to a different dictionary and checkpoint the environment, and
/// waits for it. Before the fix the check held the checkpoint lock
/// exclusively, so that write could not finish until the walk ended: the
/// wait gives up (a liveness bound, not a timing assertion) and the probe
/// records the failure.
fn probe(a: &[u8], b: &[u8]) -> Ordering {
    if ARMED.with(|x| x.replace(false)) {
        let (env, other) = OTHER.lock().unwrap().clone().expect("set before the check");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = other.put(b"written-during-check", b"yes").and_then(|()| env.checkpoint());
            // The handles go before the answer: the test unwraps the Env's
            // Arc once the check is done, and a clone still alive here
            // would fail that at random.
            drop((env, other));
            let _ = tx.send(r);
        });
        let outcome = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => 1,
            Ok(Err(e)) => panic!("the write beside the check failed: {e}"),
            Err(_) => 2,
        };
        PROBE.store(outcome, AtomicOrdering::SeqCst);
    }
    a.cmp(b)
}

fn small(comparator: Option<&str>) -> DictOptions {
    DictOptions {
        node_size_bytes: 4096,
        basement_size_bytes: 512,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: comparator.map(String::from),
    }
}

#[test]
fn writes_to_another_dictionary_and_checkpoints_proceed_during_a_check() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EnvOptions {
        background_threads: false,
        commit_sync: false,
        direct_io: false,
        reserve_free_bytes: 0,
        cache_size_bytes: 1 << 20,
        comparators: vec![("probe".into(), probe as fractaldb::Comparator)],
        ..Default::default()
    };
    let env = Arc::new(Env::open(dir.path(), opts).unwrap());
    let big = env.create_dictionary("big", small(Some("probe"))).unwrap();
    let other = Arc::new(env.create_dictionary("other", small(None)).unwrap());
    for i in 0..20_000u32 {
        big.put(format!("key{i:08}").as_bytes(), &[b'v'; 40]).unwrap();
    }
    env.run_cleaner(1000).unwrap();
    // Clean: the checkpoint the probe takes then has no node of `big` to
    // write (it would wait for the node the check holds while it waits).
    env.checkpoint().unwrap();
    *OTHER.lock().unwrap() = Some((env.clone(), other.clone()));

    ARMED.with(|x| x.set(true));
    let report = big.check().unwrap();
    ARMED.with(|x| x.set(false));
    assert!(report.height >= 2, "a tree of several levels: {report:?}");
    assert_eq!(report.leafentries, 20_000);
    match PROBE.load(AtomicOrdering::SeqCst) {
        1 => {}
        0 => panic!("the check never compared a key"),
        _ => panic!("a write to another dictionary (and a checkpoint) waited for the whole check"),
    }
    assert_eq!(other.get(b"written-during-check").unwrap().as_deref(), Some(&b"yes"[..]));
    *OTHER.lock().unwrap() = None;
    drop((big, other));
    Arc::try_unwrap(env).ok().expect("no other handle").close().unwrap();
}

/// Checks run over and over while writers load two dictionaries through a
/// tiny cache (evictor write-backs with spills, the spill writer, merges)
/// and checkpoints run back to back: every check must pass, the leak check
/// included. Not deterministic (threads); the seed of the keys is printed.
#[test]
fn checks_pass_while_writers_checkpoints_and_write_backs_run() {
    let seed: u64 =
        std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("seed {seed}");
    let dir = tempfile::tempdir().unwrap();
    let opts = EnvOptions {
        commit_sync: false,
        direct_io: false,
        reserve_free_bytes: 0,
        cache_size_bytes: 256 << 10,
        checkpoint_period: Some(Duration::from_millis(5)),
        ..Default::default()
    };
    let env = Arc::new(Env::open(dir.path(), opts).unwrap());
    let a = Arc::new(env.create_dictionary("a", small(None)).unwrap());
    let b = Arc::new(env.create_dictionary("b", small(None)).unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .enumerate()
        .map(|(n, d)| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed + n as u64);
                let mut i = 0u64;
                while !stop.load(AtomicOrdering::Relaxed) && i < 30_000 {
                    let k = rng.gen_range(0..50_000u32);
                    if rng.gen_bool(0.1) {
                        d.delete(format!("k{k:08}").as_bytes()).unwrap();
                    } else {
                        d.put(format!("k{k:08}").as_bytes(), &vec![b'x'; rng.gen_range(1..60)]).unwrap();
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let ckpt = {
        let env = env.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(AtomicOrdering::Relaxed) {
                env.checkpoint().unwrap();
            }
        })
    };
    // Check until both writers are done (and at least a few times).
    let (mut round, mut spills) = (0, 0);
    while round < 5 || !writers.iter().all(|w| w.is_finished()) {
        for d in [&a, &b] {
            match d.check() {
                Ok(r) => spills += r.spills,
                Err(e) => {
                    stop.store(true, AtomicOrdering::Relaxed);
                    panic!("seed {seed}: check of {} failed in round {round}: {e}", d.name());
                }
            }
        }
        round += 1;
    }
    println!("{round} rounds of checks, {spills} spills seen");
    stop.store(true, AtomicOrdering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    ckpt.join().unwrap();
    a.check().unwrap();
    b.check().unwrap();
    drop((a, b));
    Arc::try_unwrap(env).ok().expect("no other handle").close().unwrap();
}
