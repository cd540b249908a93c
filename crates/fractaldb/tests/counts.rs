//! Dictionary counters (`Txn::add_count`): what each isolation level sees,
//! savepoints, two-phase commit, and crashes at any moment against
//! checkpoints. The invariant the crash tests hold the engine to: a
//! counter kept beside the writes it counts equals, after any restart and
//! in any snapshot, what a scan of those writes finds.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fractaldb::{Env, EnvOptions, Error, Isolation, SimVfs};
use rand::{rngs::SmallRng, Rng, SeedableRng};

mod common;
use common::small_dict;

/// The common simulated disk, with background threads and a checkpoint
/// every 50 ms, so crashes fall inside checkpoints too.
fn sim_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 4 << 20,
        background_threads: true,
        checkpoint_period: Some(Duration::from_millis(50)),
        lock_timeout: Duration::from_secs(2),
        ..common::sim_opts(sim)
    }
}

fn scan(t: &fractaldb::Txn, d: &fractaldb::Dictionary) -> i64 {
    t.range(d, None, None, false).map(|r| r.map(|_| 1).unwrap()).sum()
}

#[test]
fn counts_follow_commits_snapshots_and_savepoints() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path(), EnvOptions::default()).unwrap();
    let d = env.create_dictionary("t", small_dict()).unwrap();
    let other = env.create_dictionary("u", small_dict()).unwrap();

    let before = env.begin(Isolation::RepeatableRead).unwrap();
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    t.add_count(&d, 0, 5).unwrap();
    t.add_count(&d, 1, -2).unwrap();
    t.add_count(&other, 0, 9).unwrap();
    assert_eq!((t.count(&d, 0).unwrap(), t.count(&d, 1).unwrap()), (5, -2), "its own deltas");
    let sp = t.savepoint().unwrap();
    t.add_count(&d, 0, 100).unwrap();
    let sp2 = t.savepoint().unwrap();
    t.add_count(&d, 0, 1000).unwrap();
    assert_eq!(t.count(&d, 0).unwrap(), 1105);
    t.rollback_to(sp2).unwrap();
    assert_eq!(t.count(&d, 0).unwrap(), 105);
    t.rollback_to(sp).unwrap();
    assert_eq!(t.count(&d, 0).unwrap(), 5, "a roll-back to a savepoint drops what came after it");
    t.add_count(&d, 0, 1).unwrap();
    t.release(sp).unwrap();
    // Statements each in a savepoint of their own, released, inside an
    // outer one that is then rolled back: the releases fold the deltas
    // together without moving them past the outer mark.
    let outer = t.savepoint().unwrap();
    for i in 0..200 {
        let s = t.savepoint().unwrap();
        t.add_count(if i % 2 == 0 { &d } else { &other }, i % 2, 1).unwrap();
        t.release(s).unwrap();
    }
    assert_eq!((t.count(&d, 0).unwrap(), t.count(&other, 1).unwrap()), (106, 100));
    t.rollback_to(outer).unwrap();
    assert_eq!((t.count(&d, 0).unwrap(), t.count(&other, 1).unwrap()), (6, 0));
    t.release(outer).unwrap();
    assert_eq!(before.count(&d, 0).unwrap(), 0, "uncommitted deltas are the transaction's own");
    let rc = env.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(rc.count(&d, 0).unwrap(), 0);
    t.commit().unwrap();

    assert_eq!(before.count(&d, 0).unwrap(), 0, "a snapshot taken before the commit does not see it");
    assert_eq!(rc.count(&d, 0).unwrap(), 6, "read committed sees the newest commit");
    let after = env.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!((after.count(&d, 0).unwrap(), after.count(&d, 1).unwrap()), (6, -2));
    assert_eq!(after.count(&other, 0).unwrap(), 9);

    // Aborted and dropped transactions leave no count.
    let a = env.begin(Isolation::RepeatableRead).unwrap();
    a.add_count(&d, 0, 50).unwrap();
    a.abort().unwrap();
    {
        let a = env.begin(Isolation::RepeatableRead).unwrap();
        a.add_count(&d, 0, 50).unwrap();
    }
    // A later commit: `after` keeps its view, `before` still its own.
    let t = env.begin(Isolation::Serializable).unwrap();
    t.add_count(&d, 0, -1).unwrap();
    t.commit().unwrap();
    assert_eq!(before.count(&d, 0).unwrap(), 0);
    assert_eq!(after.count(&d, 0).unwrap(), 6);
    assert_eq!(rc.count(&d, 0).unwrap(), 5);
    for r in [before, after, rc] {
        r.commit().unwrap();
    }

    // Bad callers get errors, and the transaction goes on.
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    assert!(matches!(t.add_count(&d, fractaldb::COUNTERS, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(t.count(&d, usize::MAX), Err(Error::InvalidArgument(_))));
    let dir2 = tempfile::tempdir().unwrap();
    let env2 = Env::open(dir2.path(), EnvOptions::default()).unwrap();
    let foreign = env2.create_dictionary("t", small_dict()).unwrap();
    assert!(matches!(t.add_count(&foreign, 0, 1), Err(Error::InvalidArgument(_))));
    t.add_count(&d, 0, i64::MAX).unwrap();
    t.add_count(&d, 0, i64::MAX).unwrap();
    t.abort().unwrap();

    // Checkpointed and reopened: the totals are in the header.
    env.close().unwrap();
    let env = Env::open(dir.path(), EnvOptions::default()).unwrap();
    let d = env.open_dictionary("t").unwrap();
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!((t.count(&d, 0).unwrap(), t.count(&d, 1).unwrap()), (5, -2));
    t.commit().unwrap();
    env.close().unwrap();
}

/// Writers insert and delete keys, each transaction adding to the counter
/// exactly what it changed, while snapshot readers check that the counter
/// they see is the number of keys they see.
#[test]
fn every_snapshot_counts_what_it_sees() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(
        dir.path(),
        EnvOptions { checkpoint_period: Some(Duration::from_millis(20)), ..Default::default() },
    )
    .unwrap();
    let d = env.create_dictionary("t", small_dict()).unwrap();
    let stop = AtomicBool::new(false);
    let checks = AtomicU64::new(0);
    std::thread::scope(|s| {
        for th in 0..3u64 {
            let (env, d, stop) = (&env, &d, &stop);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(th);
                while !stop.load(Ordering::Relaxed) {
                    let t = env.begin(Isolation::ReadCommitted).unwrap();
                    let mut delta = 0;
                    for _ in 0..rng.gen_range(1..5) {
                        let k = (rng.gen_range(0..300u32)).to_be_bytes();
                        let r = (|| -> fractaldb::Result<i64> {
                            let had = t.get_for_update(d, &k)?.is_some();
                            if had {
                                t.delete(d, &k)?;
                                Ok(-1)
                            } else {
                                t.put(d, &k, b"v")?;
                                Ok(1)
                            }
                        })();
                        match r {
                            Ok(n) => delta += n,
                            Err(Error::Deadlock { .. } | Error::LockTimeout { .. }) => break,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    t.add_count(d, 0, delta).unwrap();
                    if rng.gen_bool(0.2) {
                        t.abort().unwrap();
                    } else {
                        t.commit().unwrap();
                    }
                }
            });
        }
        for _ in 0..2 {
            let (env, d, stop, checks) = (&env, &d, &stop, &checks);
            s.spawn(move || {
                let mut held: Vec<fractaldb::Txn> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    // Some snapshots live on across many commits.
                    held.push(env.begin(Isolation::RepeatableRead).unwrap());
                    for r in &held {
                        assert_eq!(r.count(d, 0).unwrap(), scan(r, d), "a snapshot's count against its scan");
                        checks.fetch_add(1, Ordering::Relaxed);
                    }
                    if held.len() > 4 {
                        held.remove(0).commit().unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::Relaxed);
    });
    assert!(checks.load(Ordering::Relaxed) > 50);
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(t.count(&d, 0).unwrap(), scan(&t, &d));
    t.commit().unwrap();
    env.close().unwrap();
}

/// Crashes strike while writers commit counted inserts and deletes and
/// checkpoints run every 50 ms (so some crashes fall inside one): after
/// every restart the counter is the number of keys, and every
/// acknowledged insert is there.
#[test]
fn counts_match_the_keys_after_crashes_at_any_moment() {
    for seed in 0..4u64 {
        let sim = SimVfs::new(seed);
        {
            let env = Env::open("/db", sim_opts(&sim)).unwrap();
            env.create_dictionary("t", small_dict()).unwrap();
            env.close().unwrap();
        }
        let acked = Arc::new(std::sync::Mutex::new(std::collections::HashSet::<Vec<u8>>::new()));
        for round in 0..4u64 {
            let env = Env::open("/db", sim_opts(&sim)).unwrap();
            let d = env.open_dictionary("t").unwrap();
            let t = env.begin(Isolation::RepeatableRead).unwrap();
            assert_eq!(t.count(&d, 0).unwrap(), scan(&t, &d), "seed {seed} round {round}");
            for k in acked.lock().unwrap().iter() {
                assert!(
                    t.get(&d, k).unwrap().is_some(),
                    "seed {seed} round {round}: acknowledged {k:?} lost"
                );
            }
            t.commit().unwrap();
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                for th in 0..3u64 {
                    let (env, d, stop, acked) = (&env, &d, &stop, &acked);
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(seed * 1000 + round * 10 + th);
                        let mut seq = 0u32;
                        while !stop.load(Ordering::Relaxed) {
                            seq += 1;
                            let Ok(t) = env.begin(Isolation::RepeatableRead) else { return };
                            let k = format!("{round}/{th}/{seq}").into_bytes();
                            let mut deleted = None;
                            let r = (|| -> fractaldb::Result<()> {
                                t.put(d, &k, &[1; 50])?;
                                t.add_count(d, 0, 1)?;
                                // Now and then a delete of an earlier key of this thread.
                                if seq > 1 && rng.gen_bool(0.3) {
                                    let old = format!("{round}/{th}/{}", rng.gen_range(1..seq)).into_bytes();
                                    if t.get_for_update(d, &old)?.is_some() {
                                        t.delete(d, &old)?;
                                        t.add_count(d, 0, -1)?;
                                        deleted = Some(old);
                                    }
                                }
                                Ok(())
                            })();
                            let ok = r.and_then(|()| t.commit()).is_ok();
                            let mut acked = acked.lock().unwrap();
                            // A delete whose commit failed may still be durable.
                            if let Some(old) = deleted {
                                acked.remove(&old);
                            }
                            if !ok {
                                return; // the crash
                            }
                            acked.insert(k);
                        }
                    });
                }
                std::thread::sleep(Duration::from_millis(150 + 40 * (seed % 4)));
                sim.crash();
                stop.store(true, Ordering::Relaxed);
            });
            drop(d);
            drop(env);
        }
        let env = Env::open("/db", sim_opts(&sim)).unwrap();
        let d = env.open_dictionary("t").unwrap();
        let t = env.begin(Isolation::RepeatableRead).unwrap();
        let n = scan(&t, &d);
        assert!(n > 0, "seed {seed}: nothing committed");
        assert_eq!(t.count(&d, 0).unwrap(), n, "seed {seed}: after the last crash");
        t.commit().unwrap();
        d.check().unwrap();
        env.close().unwrap();
    }
}

/// A prepared transaction's deltas survive a crash with it, and count
/// only once it is committed by xid.
#[test]
fn a_prepared_transactions_counts_survive_a_crash() {
    let sim = SimVfs::new(7);
    let opts = || EnvOptions { checkpoint_period: None, ..sim_opts(&sim) };
    let env = Env::open("/db", opts()).unwrap();
    let d = env.create_dictionary("t", small_dict()).unwrap();
    let c = env.begin(Isolation::RepeatableRead).unwrap();
    c.add_count(&d, 0, 3).unwrap();
    c.commit().unwrap();
    let a = env.begin(Isolation::RepeatableRead).unwrap();
    a.put(&d, b"a", b"1").unwrap();
    a.add_count(&d, 0, 10).unwrap();
    a.add_count(&d, 1, -4).unwrap();
    a.prepare(b"xid-a").unwrap();
    // Counts alone, no write.
    let b = env.begin(Isolation::RepeatableRead).unwrap();
    b.add_count(&d, 0, 100).unwrap();
    b.prepare(b"xid-b").unwrap();
    env.checkpoint().unwrap();
    let r = env.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(r.count(&d, 0).unwrap(), 3, "prepared is not committed");
    r.commit().unwrap();
    sim.crash();
    drop((a, b, d, env));

    let env = Env::open("/db", opts()).unwrap();
    let d = env.open_dictionary("t").unwrap();
    let r = env.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(r.count(&d, 0).unwrap(), 3);
    assert_eq!(env.prepared().len(), 2);
    assert!(env.commit_prepared(b"xid-a").unwrap());
    assert!(env.rollback_prepared(b"xid-b").unwrap());
    assert_eq!((r.count(&d, 0).unwrap(), r.count(&d, 1).unwrap()), (13, -4));
    r.commit().unwrap();
    // The commit of the restored transaction is durable in its turn.
    sim.crash();
    drop((d, env));
    let env = Env::open("/db", opts()).unwrap();
    let d = env.open_dictionary("t").unwrap();
    let r = env.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!((r.count(&d, 0).unwrap(), r.count(&d, 1).unwrap()), (13, -4));
    assert_eq!(r.get(&d, b"a").unwrap(), Some(b"1".to_vec()));
    r.commit().unwrap();
    env.close().unwrap();
}
