//! The randomized model test, for concurrent transactions: up to five
//! transactions open at once at read committed and repeatable read, their
//! steps interleaved at random on one thread (so a seed replays exactly),
//! with autocommit writes, upserts, savepoints, cursor scans, cleaner steps
//! and checkpoints in between, on tiny nodes so messages sit in buffers
//! and versions are collected at every level. A model predicts every
//! outcome: each read, each lock conflict (another open transaction wrote
//! the key: the request times out), each write conflict (repeatable read:
//! someone committed the key after the snapshot), and the state after every
//! commit, abort and reopen. The environment runs on `SimVfs` with
//! `commit_sync`, and now and then the power fails: every acknowledged
//! commit must survive it and every open transaction must be rolled back.
//!
//! `FRACTALDB_TXN_SEEDS=<n>` runs more seeds (default 16); a failure prints its seed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use fractaldb::{Codec, DictOptions, Env, EnvOptions, Error, Isolation, Savepoint, SimVfs, Txn, UpdateFn};
use rand::{rngs::SmallRng, Rng, SeedableRng};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// A transaction's own writes (None: deleted).
type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn append_fn() -> UpdateFn {
    Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let mut v = old.map(<[u8]>::to_vec).unwrap_or_default();
        v.extend_from_slice(arg);
        v.truncate(40);
        Some(v)
    })
}

fn append(old: Option<&Vec<u8>>, arg: &[u8]) -> Vec<u8> {
    let mut v = old.cloned().unwrap_or_default();
    v.extend_from_slice(arg);
    v.truncate(40);
    v
}

/// A model transaction.
struct MTxn {
    txn: Txn,
    iso: Isolation,
    /// Repeatable read: the committed state at begin, and the commit count then.
    snap: Option<(Map, u64)>,
    /// Its own writes (None: deleted), and one copy per open savepoint.
    writes: Writes,
    saves: Vec<(Savepoint, Writes)>,
    /// Keys it holds write locks on (kept past a rollback to a savepoint).
    locks: BTreeSet<Vec<u8>>,
}

impl MTxn {
    fn sees(&self, committed: &Map, k: &[u8]) -> Option<Vec<u8>> {
        if let Some(w) = self.writes.get(k) {
            return w.clone();
        }
        match &self.snap {
            Some((m, _)) => m.get(k).cloned(),
            None => committed.get(k).cloned(),
        }
    }
}

fn opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        vfs: sim.boot(),
        cache_size_bytes: 512 << 10,
        direct_io: false,
        background_threads: false,
        update_fns: vec![(1, append_fn())],
        commit_sync: true,
        checkpoint_period: None,
        reserve_free_bytes: 0,
        lock_timeout: Duration::from_millis(1),
        ..EnvOptions::default()
    }
}

/// Returns the most folded commits one check found.
fn run(seed: u64) -> u64 {
    let mut rng = SmallRng::seed_from_u64(seed);
    let sim = SimVfs::new(seed);
    let mut env = Env::open("/m", opts(&sim)).unwrap();
    let dopts = DictOptions {
        node_size_bytes: 4096,
        basement_size_bytes: 512,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    };
    let mut d = env.create_dictionary("t", dopts).unwrap();
    let mut committed = Map::new();
    // Per key: the commit count when it was last committed.
    let mut last_commit: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut commits = 0u64;
    let mut open: Vec<MTxn> = Vec::new();
    let (mut crashes, mut rolled_back) = (0, 0);
    let mut folded = 0;
    for step in 0..4000 {
        let ctx = format!("seed {seed} step {step}");
        if step % 50 == 49 {
            folded = folded.max(d.check().unwrap().folded_commits);
        }
        let key = format!("k{:03}", rng.gen_range(0..150)).into_bytes();
        let val = vec![b'a' + rng.gen_range(0..26u8); rng.gen_range(0..60)];
        match rng.gen_range(0..100) {
            0..=7 if open.len() < 5 => {
                let iso =
                    if rng.gen_bool(0.5) { Isolation::RepeatableRead } else { Isolation::ReadCommitted };
                let txn = env.begin(iso).unwrap();
                let snap = (iso == Isolation::RepeatableRead).then(|| (committed.clone(), commits));
                open.push(MTxn {
                    txn,
                    iso,
                    snap,
                    writes: BTreeMap::new(),
                    saves: Vec::new(),
                    locks: BTreeSet::new(),
                });
            }
            8..=40 if !open.is_empty() => {
                // A transactional write: put, delete or upsert.
                let i = rng.gen_range(0..open.len());
                let kind = rng.gen_range(0..3);
                let locked_by_other = open.iter().enumerate().any(|(j, t)| j != i && t.locks.contains(&key));
                let t = &open[i];
                let conflict = kind != 2
                    && t.snap.as_ref().is_some_and(|(_, at)| last_commit.get(&key).is_some_and(|c| c > at));
                let r = match kind {
                    0 => t.txn.put(&d, &key, &val),
                    1 => t.txn.delete(&d, &key),
                    _ => t.txn.update(&d, &key, 1, &val),
                };
                match r {
                    Ok(()) => {
                        assert!(!locked_by_other && !conflict, "{ctx}: write should have failed");
                        let new = match kind {
                            0 => Some(val.clone()),
                            1 => None,
                            // An upsert applies to the newest committed value
                            // (it holds the key's lock: no one else changes it).
                            _ => {
                                let base = match t.writes.get(&key) {
                                    Some(w) => w.clone(),
                                    None => committed.get(&key).cloned(),
                                };
                                Some(append(base.as_ref(), &val))
                            }
                        };
                        open[i].writes.insert(key.clone(), new);
                        open[i].locks.insert(key.clone());
                    }
                    Err(Error::LockTimeout { .. }) => {
                        assert!(locked_by_other, "{ctx}: unexpected lock timeout")
                    }
                    Err(Error::WriteConflict { .. }) => {
                        assert!(conflict && !locked_by_other, "{ctx}: unexpected write conflict");
                        // The lock was taken before the check failed.
                        open[i].locks.insert(key.clone());
                    }
                    Err(e) => panic!("{ctx}: {e}"),
                }
            }
            41..=55 if !open.is_empty() => {
                let i = rng.gen_range(0..open.len());
                let t = &open[i];
                assert_eq!(
                    t.txn.get(&d, &key).unwrap(),
                    t.sees(&committed, &key),
                    "{ctx}: txn get {:?}",
                    t.iso
                );
            }
            56..=60 if !open.is_empty() => {
                // A whole scan through the transaction's cursor.
                let i = rng.gen_range(0..open.len());
                let t = &open[i];
                let mut expect: Map = match &t.snap {
                    Some((m, _)) => m.clone(),
                    None => committed.clone(),
                };
                for (k, w) in &t.writes {
                    match w {
                        Some(v) => expect.insert(k.clone(), v.clone()),
                        None => expect.remove(k),
                    };
                }
                let mut c = t.txn.cursor(&d);
                let mut got = Map::new();
                c.first().unwrap();
                while let (Some(k), Some(v)) = (c.key(), c.value()) {
                    got.insert(k.to_vec(), v.to_vec());
                    c.next().unwrap();
                }
                assert_eq!(got, expect, "{ctx}: txn scan");
            }
            61..=66 if !open.is_empty() => {
                let i = rng.gen_range(0..open.len());
                let t = open.remove(i);
                if rng.gen_bool(0.7) {
                    t.txn.commit().unwrap();
                    commits += 1;
                    for (k, w) in t.writes {
                        match w {
                            Some(v) => committed.insert(k.clone(), v),
                            None => committed.remove(&k),
                        };
                        last_commit.insert(k, commits);
                    }
                } else {
                    t.txn.abort().unwrap();
                }
            }
            67..=70 if !open.is_empty() => {
                let i = rng.gen_range(0..open.len());
                let t = &mut open[i];
                if !t.saves.is_empty() && rng.gen_bool(0.6) {
                    let j = rng.gen_range(0..t.saves.len());
                    let (sp, w) = t.saves[j].clone();
                    if rng.gen_bool(0.5) {
                        t.txn.rollback_to(sp).unwrap();
                        t.writes = w;
                        t.saves.truncate(j + 1);
                        t.saves[j].1 = t.writes.clone();
                    } else {
                        t.txn.release(sp).unwrap();
                        t.saves.truncate(j);
                    }
                } else {
                    let sp = t.txn.savepoint().unwrap();
                    t.saves.push((sp, t.writes.clone()));
                }
            }
            71..=82 => {
                // An autocommit write (fails on a key an open transaction holds).
                let held = open.iter().any(|t| t.locks.contains(&key));
                let r = if rng.gen_bool(0.8) { d.put(&key, &val) } else { d.delete(&key) };
                match r {
                    Ok(()) => {
                        assert!(!held, "{ctx}: autocommit over a held lock");
                        commits += 1;
                        last_commit.insert(key.clone(), commits);
                    }
                    Err(Error::LockTimeout { .. }) => {
                        assert!(held, "{ctx}: unexpected autocommit timeout");
                        continue;
                    }
                    Err(e) => panic!("{ctx}: {e}"),
                }
                // Which one ran: look at the dictionary (the model cannot
                // tell a put of `val` from a delete otherwise).
                match d.get(&key).unwrap() {
                    Some(v) => {
                        assert_eq!(v, val, "{ctx}");
                        committed.insert(key.clone(), v);
                    }
                    None => {
                        committed.remove(&key);
                    }
                }
            }
            83..=92 => {
                assert_eq!(d.get(&key).unwrap(), committed.get(&key).cloned(), "{ctx}: autocommit get");
            }
            93..=96 => {
                env.run_cleaner(rng.gen_range(1..20)).unwrap();
            }
            97 => env.checkpoint().unwrap(),
            98 if open.is_empty() => {
                // Close and reopen: nothing committed is lost.
                drop(d);
                env.close().unwrap();
                env = Env::open("/m", opts(&sim)).unwrap();
                d = env.open_dictionary("t").unwrap();
            }
            99 => {
                // Power failure with transactions open: they roll back.
                crashes += 1;
                rolled_back += open.iter().filter(|t| !t.writes.is_empty()).count();
                sim.crash();
                open.clear();
                drop(d);
                drop(env);
                env = Env::open("/m", opts(&sim)).unwrap();
                d = env.open_dictionary("t").unwrap();
                let got: Map = d.range(None, None, false).map(|r| r.unwrap()).collect();
                assert_eq!(got, committed, "{ctx}: after the crash");
            }
            _ => {}
        }
    }
    for t in open.drain(..) {
        t.txn.abort().unwrap();
    }
    let got: Map = d.range(None, None, false).map(|r| r.unwrap()).collect();
    assert_eq!(got, committed, "seed {seed}: final state");
    let report = d.check().unwrap();
    assert_eq!(env.stats().locks.locks, 0, "seed {seed}: locks left");
    eprintln!("seed {seed}: {commits} commits, {crashes} crashes rolling back {rolled_back} transactions with writes");
    assert!(crashes > 0 && commits > 100, "seed {seed}: the workload must crash and commit");
    folded.max(report.folded_commits)
}

#[test]
fn concurrent_transactions_agree_with_the_model() {
    let seeds: u64 = std::env::var("FRACTALDB_TXN_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(16);
    let mut folded = 0;
    for seed in 0..seeds {
        folded = folded.max(run(seed));
    }
    // Commits folded into writes in the buffers (`MsgBuffer::fold_commits`)
    // were read, flushed, crashed over and checked above.
    assert!(folded > 0, "no check saw a commit folded into a write");
}
