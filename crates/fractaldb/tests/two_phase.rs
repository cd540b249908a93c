//! Two-phase commit: a prepared transaction survives checkpoints, crashes
//! and restarts, keeps its writes provisional and its keys locked, is
//! listed, and ends either way by its xid, also when its process is
//! SIGKILLed.

mod common;

use std::time::Duration;

use fractaldb::{DictOptions, Env, EnvOptions, Error, Isolation, SimVfs, TxnOptions};

fn small_dict() -> DictOptions {
    DictOptions {
        node_size_bytes: 16 << 10,
        basement_size_bytes: 2 << 10,
        fanout: 8,
        ..DictOptions::default()
    }
}

fn sim_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 4 << 20,
        direct_io: false,
        vfs: sim.boot(),
        background_threads: false,
        log_file_size_bytes: 64 << 10,
        reserve_free_bytes: 0,
        lock_timeout: Duration::from_millis(20),
        ..EnvOptions::default()
    }
}

fn key(p: &str, i: u32) -> Vec<u8> {
    format!("{p}{i:05}").into_bytes()
}

fn xids(env: &Env) -> Vec<(Vec<u8>, bool)> {
    env.prepared().into_iter().map(|p| (p.xid, p.attached)).collect()
}

/// A write to `k` by someone else fails on the prepared transaction's lock.
fn assert_locked(env: &Env, d: &fractaldb::Dictionary, k: &[u8]) {
    let t =
        env.begin_with(TxnOptions { lock_timeout: Some(Duration::ZERO), ..TxnOptions::default() }).unwrap();
    match t.put(d, k, b"other") {
        Err(Error::LockTimeout { .. }) => {}
        other => panic!("write to a prepared transaction's key {k:?}: {other:?}"),
    }
    t.abort().unwrap();
}

#[test]
fn a_prepared_transaction_survives_checkpoints_and_crashes_and_ends_by_xid() {
    for seed in 0..2u64 {
        let sim = SimVfs::new(seed);
        let env = Env::open("/db", sim_opts(&sim)).unwrap();
        let d = env.create_dictionary("t", small_dict()).unwrap();
        for i in 0..300 {
            d.put(&key("c", i), b"committed").unwrap();
        }
        // Enough keys to cross many leaves.
        let a = env.begin(Isolation::RepeatableRead).unwrap();
        let b = env.begin(Isolation::RepeatableRead).unwrap();
        for i in 0..2000 {
            a.put(&d, &key("a", i), b"from a").unwrap();
            if i % 4 == 0 {
                b.put(&d, &key("b", i), b"from b").unwrap();
            }
        }
        a.delete(&d, &key("c", 7)).unwrap();
        let open = env.begin(Isolation::RepeatableRead).unwrap();
        open.put(&d, b"never", b"x").unwrap();
        a.prepare(b"xid-a").unwrap();
        b.prepare(b"xid-b").unwrap();
        // A prepared transaction takes no more work; its xid is unique.
        assert!(matches!(a.put(&d, b"late", b"x"), Err(Error::InvalidArgument(_))));
        let c = env.begin(Isolation::RepeatableRead).unwrap();
        assert!(matches!(c.prepare(b"xid-a"), Err(Error::InvalidArgument(_))));
        c.abort().unwrap();
        assert_eq!(xids(&env), vec![(b"xid-a".to_vec(), true), (b"xid-b".to_vec(), true)]);
        // Still owned: no one else can end it.
        assert!(!env.commit_prepared(b"xid-a").unwrap());
        // Its owner goes away: the transaction stays prepared.
        drop(a);
        assert_eq!(xids(&env), vec![(b"xid-a".to_vec(), false), (b"xid-b".to_vec(), true)]);
        assert_locked(&env, &d, &key("a", 5));
        // Checkpoints and enough later writes to roll and trim the log.
        env.checkpoint().unwrap();
        for i in 0..3000 {
            d.put(&key("z", i), &[7; 40]).unwrap();
        }
        env.checkpoint().unwrap();
        if seed == 1 {
            for i in 0..500 {
                d.put(&key("y", i), b"after the checkpoint").unwrap();
            }
        }
        sim.crash();
        drop((b, open, d, env));

        // Twice: the restored transaction survives a restart (and the
        // checkpoint after recovery) again.
        for round in 0..2 {
            let env = Env::open("/db", sim_opts(&sim)).unwrap();
            let d = env.open_dictionary("t").unwrap();
            assert_eq!(
                xids(&env),
                vec![(b"xid-a".to_vec(), false), (b"xid-b".to_vec(), false)],
                "round {round}"
            );
            assert_eq!(d.get(&key("a", 5)).unwrap(), None);
            assert_eq!(d.get(&key("c", 7)).unwrap().as_deref(), Some(&b"committed"[..]));
            assert_eq!(d.get(b"never").unwrap(), None);
            assert_locked(&env, &d, &key("a", 5));
            assert_locked(&env, &d, &key("c", 7));
            assert_locked(&env, &d, &key("b", 8));
            // Unwritten keys are free.
            d.put(&key("a", 5000), b"free").unwrap();
            env.checkpoint().unwrap();
            for i in 0..3000 {
                d.put(&key("x", i), &[round as u8; 40]).unwrap();
            }
            env.checkpoint().unwrap();
            sim.crash();
            drop((d, env));
        }

        let env = Env::open("/db", sim_opts(&sim)).unwrap();
        let d = env.open_dictionary("t").unwrap();
        // A snapshot taken before the decision keeps not seeing it.
        let before = env.begin(Isolation::RepeatableRead).unwrap();
        assert!(env.commit_prepared(b"xid-a").unwrap());
        assert!(env.rollback_prepared(b"xid-b").unwrap());
        assert!(!env.commit_prepared(b"xid-b").unwrap());
        assert!(!env.rollback_prepared(b"nope").unwrap());
        assert_eq!(before.get(&d, &key("a", 5)).unwrap(), None);
        before.commit().unwrap();
        assert!(xids(&env).is_empty());
        let check = |d: &fractaldb::Dictionary| {
            for i in 0..2000 {
                assert_eq!(d.get(&key("a", i)).unwrap().as_deref(), Some(&b"from a"[..]), "seed {seed} a{i}");
                assert_eq!(d.get(&key("b", i)).unwrap(), None);
            }
            assert_eq!(d.get(&key("c", 7)).unwrap(), None);
            assert_eq!(d.get(&key("c", 8)).unwrap().as_deref(), Some(&b"committed"[..]));
            d.check().unwrap();
        };
        check(&d);
        // The keys are free again.
        d.put(&key("b", 8), b"mine").unwrap();
        d.delete(&key("b", 8)).unwrap();
        sim.crash();
        drop((d, env));
        // The decisions were logged: nothing comes back prepared.
        let env = Env::open("/db", sim_opts(&sim)).unwrap();
        let d = env.open_dictionary("t").unwrap();
        assert!(xids(&env).is_empty());
        check(&d);
        env.close().unwrap();
    }
}

#[test]
fn a_prepared_transaction_is_ended_by_its_owner_or_kept_across_a_clean_close() {
    let sim = SimVfs::new(9);
    let env = Env::open("/db", sim_opts(&sim)).unwrap();
    let d = env.create_dictionary("t", small_dict()).unwrap();
    // Committed and rolled back by the owner, like any transaction.
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    t.put(&d, b"k1", b"v").unwrap();
    t.prepare(b"one").unwrap();
    assert!(t.is_prepared());
    assert!(t.savepoint().is_err());
    t.commit().unwrap();
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    t.put(&d, b"k2", b"v").unwrap();
    t.prepare(b"two").unwrap();
    t.abort().unwrap();
    // Bad ids change nothing.
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    assert!(matches!(t.prepare(b""), Err(Error::InvalidArgument(_))));
    assert!(matches!(t.prepare(&[1; fractaldb::MAX_XID_BYTES + 1]), Err(Error::InvalidArgument(_))));
    // Prepared with no writes, then left by its owner.
    t.prepare(&[0, 255, 1]).unwrap();
    drop(t);
    let w = env.begin(Isolation::RepeatableRead).unwrap();
    w.put(&d, b"k3", b"v").unwrap();
    w.prepare(b"three").unwrap();
    drop(w);
    assert_eq!(d.get(b"k1").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(d.get(b"k2").unwrap(), None);
    drop(d);
    env.close().unwrap();
    let env = Env::open("/db", sim_opts(&sim)).unwrap();
    assert_eq!(xids(&env), vec![(vec![0, 255, 1], false), (b"three".to_vec(), false)]);
    assert!(env.rollback_prepared(&[0, 255, 1]).unwrap());
    env.close().unwrap();
    let env = Env::open("/db", sim_opts(&sim)).unwrap();
    let d = env.open_dictionary("t").unwrap();
    assert_eq!(xids(&env), vec![(b"three".to_vec(), false)]);
    assert!(env.commit_prepared(b"three").unwrap());
    assert_eq!(d.get(b"k3").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(d.get(b"k2").unwrap(), None);
    drop(d);
    env.close().unwrap();
    let env = Env::open("/db", sim_opts(&sim)).unwrap();
    assert!(xids(&env).is_empty());
    env.close().unwrap();
}

/// The child of the SIGKILL test: on real files with commit sync on, round
/// after round prepares a transaction of ten keys under xid `k<i>` and
/// then commits it, rolls it back, or leaves it prepared (its owner
/// dropped), printing each step once it returned.
fn kill_child(dir: &str) {
    let env = Env::open(dir, EnvOptions { cache_size_bytes: 8 << 20, ..EnvOptions::default() }).unwrap();
    let d = match env.open_dictionary("t") {
        Ok(d) => d,
        Err(_) => env.create_dictionary("t", small_dict()).unwrap(),
    };
    let start: u32 = std::env::var("FRACTALDB_2PC_START").unwrap().parse().unwrap();
    for i in start.. {
        let t = env.begin(Isolation::RepeatableRead).unwrap();
        for j in 0..10 {
            t.put(&d, &key(&format!("k{i}-"), j), format!("v{i}").as_bytes()).unwrap();
        }
        t.prepare(format!("k{i}").as_bytes()).unwrap();
        println!("prepared {i}");
        match i % 3 {
            0 => {
                t.commit().unwrap();
                println!("committed {i}");
            }
            1 => {
                t.abort().unwrap();
                println!("rolled-back {i}");
            }
            _ => {
                drop(t);
                println!("left {i}");
            }
        }
    }
}

/// A process preparing, committing, rolling back and leaving transactions
/// prepared is SIGKILLed, three times: after each reopen every transaction
/// it said it left prepared is listed (detached) with its keys locked and
/// unread, every committed one is there, every rolled-back one is gone, and
/// at most the one in flight is undecided; the parent then commits the even
/// ones and rolls back the odd ones by xid, and after another reopen
/// nothing is prepared and the dictionary checks.
#[test]
fn a_killed_process_keeps_its_prepared_transactions_for_the_next_one_to_end() {
    if let Ok(dir) = std::env::var("FRACTALDB_2PC_CHILD") {
        kill_child(&dir);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut start = 0u32;
    for round in 0..3u64 {
        let (mut child, mut lines) = common::spawn_self(
            "a_killed_process_keeps_its_prepared_transactions_for_the_next_one_to_end",
            &[
                ("FRACTALDB_2PC_CHILD", dir.path().display().to_string()),
                ("FRACTALDB_2PC_START", start.to_string()),
            ],
        );
        let mut said: Vec<(String, u32)> = Vec::new();
        // Killed some steps in, at a different step each round.
        let stop_after = 40 + 17 * round as usize;
        while said.len() < stop_after {
            let line = lines.next().expect("the child stopped").unwrap();
            let Some((what, i)) = line.split_once(' ') else { continue };
            let Ok(i) = i.parse() else { continue };
            said.push((what.to_string(), i));
        }
        std::thread::sleep(Duration::from_millis(3 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        said.extend(lines.map_while(Result::ok).filter_map(|l| {
            let (what, i) = l.split_once(' ')?;
            Some((what.to_string(), i.parse().ok()?))
        }));
        let last = said.iter().map(|s| s.1).max().unwrap();

        let env = Env::open(dir.path(), EnvOptions::default()).unwrap();
        let d = env.open_dictionary("t").unwrap();
        let listed: Vec<u32> = env
            .prepared()
            .into_iter()
            .map(|p| {
                assert!(!p.attached, "round {round}: a restored transaction has no owner");
                String::from_utf8(p.xid).unwrap()[1..].parse().unwrap()
            })
            .collect();
        for i in start..=last + 1 {
            let ended = |w: &str| said.iter().any(|s| s.0 == w && s.1 == i);
            let value = d.get(&key(&format!("k{i}-"), 3)).unwrap();
            let committed = value.as_deref() == Some(format!("v{i}").as_bytes());
            if ended("committed") {
                assert!(committed && !listed.contains(&i), "round {round}: {i} committed");
            } else if ended("rolled-back") {
                assert!(
                    value.is_none() && !listed.contains(&i),
                    "round {round}: {i} rolled back: {value:?}, listed {listed:?}"
                );
            } else if ended("left") {
                assert!(value.is_none() && listed.contains(&i), "round {round}: {i} left prepared");
                assert_locked(&env, &d, &key(&format!("k{i}-"), 3));
            } else if !ended("prepared") {
                // Not said to be prepared: never begun, or killed before
                // or inside its prepare, or before saying so (the one
                // after the last said may be listed).
                assert!(value.is_none(), "round {round}: {i} unprepared");
                assert!(i == last + 1 || !listed.contains(&i), "round {round}: {i} listed, {last} said last");
            } else {
                // Prepared, its end in flight: any one outcome.
                assert!(!(committed && listed.contains(&i)), "round {round}: {i}");
            }
        }
        assert!(listed.iter().all(|&i| i >= start && i <= last + 1), "{listed:?}");
        for &i in &listed {
            let xid = format!("k{i}");
            let ended = if i % 2 == 0 {
                env.commit_prepared(xid.as_bytes())
            } else {
                env.rollback_prepared(xid.as_bytes())
            };
            assert!(ended.unwrap(), "{xid}");
            let value = d.get(&key(&format!("k{i}-"), 9)).unwrap();
            assert_eq!(value.is_some(), i % 2 == 0, "{xid}");
        }
        drop(d);
        env.close().unwrap();
        let env = Env::open(dir.path(), EnvOptions::default()).unwrap();
        assert!(env.prepared().is_empty(), "round {round}");
        env.open_dictionary("t").unwrap().check().unwrap();
        env.close().unwrap();
        start = last + 2;
    }
}
