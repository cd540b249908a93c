//! Faults injected under the engine through `SimVfs`: a failed write or
//! fsync, a full disk, flipped bits on read. Under each the engine returns a
//! clear error and either stays usable or turns read-only; after a restart
//! (a simulated power failure) nothing acknowledged is lost and `check()`
//! passes.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, Error, SimVfs, Vfs};

const DIR: &str = "/faults/db";

fn opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions { log_file_size_bytes: 16 << 10, ..common::sim_opts(sim) }
}

fn dict_opts() -> DictOptions {
    DictOptions {
        node_size_bytes: 4096,
        basement_size_bytes: 512,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", (i * 7919) % 1_000_003).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(100 + (i % 50) as usize, b'v');
    v
}

fn setup(seed: u64) -> (Arc<SimVfs>, Env, Dictionary) {
    let sim = SimVfs::new(seed);
    let v: Arc<dyn Vfs> = sim.boot();
    v.create_dir_all(Path::new(DIR)).unwrap();
    let env = Env::open(DIR, opts(&sim)).unwrap();
    let d = env.create_dictionary("t", dict_opts()).unwrap();
    (sim, env, d)
}

/// Writes keys from `from` until one fails or `to` is reached; returns the
/// acknowledged ones and the error, if any.
fn write_until_error(d: &Dictionary, from: u64, to: u64) -> (BTreeMap<Vec<u8>, Vec<u8>>, Option<Error>) {
    let mut acked = BTreeMap::new();
    for i in from..to {
        match d.put(&key(i), &value(i)) {
            Ok(()) => {
                acked.insert(key(i), value(i));
            }
            Err(e) => return (acked, Some(e)),
        }
    }
    (acked, None)
}

/// A power failure, a restart, and every acknowledged write checked.
fn restart_and_verify(
    sim: &Arc<SimVfs>,
    env: Env,
    d: Dictionary,
    acked: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> (Env, Dictionary) {
    restart_and_verify_after(true, sim, env, d, acked)
}

/// As `restart_and_verify`, after a power failure or after a clean close.
fn restart_and_verify_after(
    power_failure: bool,
    sim: &Arc<SimVfs>,
    env: Env,
    d: Dictionary,
    acked: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> (Env, Dictionary) {
    if power_failure {
        sim.crash();
    }
    drop(d);
    if !power_failure {
        // A close after a failure reports it, and must not lose anything.
        let _ = env.close();
    } else {
        drop(env);
    }
    sim.clear_faults();
    let env = Env::open(DIR, opts(sim)).expect("restart after the fault");
    let d = env.open_dictionary("t").unwrap();
    for (k, v) in acked {
        assert_eq!(
            d.get(k).unwrap().as_ref(),
            Some(v),
            "acknowledged key {:?} lost",
            String::from_utf8_lossy(k)
        );
    }
    d.check().expect("check() after the fault and a restart");
    (env, d)
}

#[test]
fn a_failed_log_fsync_turns_writes_off_and_loses_nothing_acknowledged() {
    let (sim, env, d) = setup(1);
    let (mut acked, err) = write_until_error(&d, 0, 3000);
    assert!(err.is_none());
    sim.fail_next_syncs(1, Some(".fdl"));
    let err = d.put(b"after", b"x").expect_err("a write whose log fsync failed was acknowledged");
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("read-only") && msg.contains("fdatasync") && msg.contains(".fdl"), "{msg}");
    // Later writes are refused too; reads still work.
    assert!(matches!(d.put(b"later", b"y"), Err(Error::ReadOnly(_))));
    assert_eq!(d.get(&key(5)).unwrap(), Some(value(5)));
    let (env, d) = restart_and_verify(&sim, env, d, &acked);
    // Usable again after the restart.
    let (more, err) = write_until_error(&d, 3000, 3500);
    assert!(err.is_none());
    acked.extend(more);
    restart_and_verify(&sim, env, d, &acked);
}

#[test]
fn a_failed_log_write_turns_writes_off_and_loses_nothing_acknowledged() {
    let (sim, env, d) = setup(2);
    let (acked, _) = write_until_error(&d, 0, 2000);
    sim.set_torn_writes(true);
    sim.fail_next_writes(1, Some(".fdl"));
    let err = d.put(b"after", b"x").expect_err("a write whose log write failed was acknowledged");
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
    restart_and_verify(&sim, env, d, &acked);
}

#[test]
fn failed_data_file_writes_and_fsyncs_during_checkpoints_lose_nothing() {
    for seed in 0..12 {
        let (sim, env, d) = setup(100 + seed);
        let (mut acked, _) = write_until_error(&d, 0, 2000);
        if seed % 2 == 0 {
            sim.fail_next_syncs(1, Some(".fdb"));
        } else {
            sim.set_torn_writes(true);
            sim.fail_next_writes(1 + seed % 5, Some(".fdb"));
        }
        let err = env.checkpoint().expect_err("a checkpoint whose I/O failed succeeded");
        eprintln!("seed {seed}: {err}");
        assert!(err.to_string().contains(".fdb"), "the error names the file: {err}");
        // The environment either goes on or refuses writes, clearly.
        match write_until_error(&d, 2000, 2500) {
            (more, None) => acked.extend(more),
            (more, Some(e)) => {
                acked.extend(more);
                assert!(matches!(e, Error::ReadOnly(_) | Error::Io { .. }), "{e}");
            }
        }
        restart_and_verify_after(seed % 3 != 0, &sim, env, d, &acked);
    }
}

#[test]
fn eviction_write_back_failures_lose_nothing() {
    let (sim, env, d) = setup(3);
    sim.fail_writes_randomly(0.05, Some(".fdb"));
    let (acked, err) = write_until_error(&d, 0, 20_000);
    let e = err.expect("20,000 writes with 5% of data-file writes failing all succeeded");
    eprintln!("after {} writes: {e}", acked.len());
    assert!(matches!(e, Error::ReadOnly(_) | Error::Io { .. }), "{e}");
    assert!(!acked.is_empty());
    restart_and_verify(&sim, env, d, &acked);
}

#[test]
fn a_nearly_full_disk_refuses_writes_cleanly_and_they_resume() {
    let sim = SimVfs::new(4);
    let v: Arc<dyn Vfs> = sim.boot();
    v.create_dir_all(Path::new(DIR)).unwrap();
    let reserve = 1 << 20;
    let env = Env::open(DIR, EnvOptions { reserve_free_bytes: reserve, ..opts(&sim) }).unwrap();
    let d = env.create_dictionary("t", dict_opts()).unwrap();
    sim.set_capacity(Some(sim.used_bytes() + reserve + (512 << 10)));
    let mut acked = BTreeMap::new();
    let mut refused = None;
    for i in 0..200_000 {
        match d.put(&key(i), &value(i)) {
            Ok(()) => {
                acked.insert(key(i), value(i));
            }
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
        if i % 500 == 0 {
            // Checkpoints need room too; they must not fail for lack of it.
            env.checkpoint().expect("a checkpoint ran out of space: the reserve is too small");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let (at, err) = refused.expect("the disk never filled");
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    assert!(err.to_string().contains("disk nearly full"), "{err}");
    // Nothing is damaged: reads, a checkpoint and check() work.
    assert_eq!(d.get(&key(0)).unwrap(), Some(value(0)));
    env.checkpoint().unwrap();
    d.check().unwrap();
    // Space comes back: writes resume (free space is looked at every 50 ms).
    sim.set_capacity(None);
    std::thread::sleep(Duration::from_millis(60));
    for i in at..at + 100 {
        d.put(&key(i), &value(i)).expect("writes resume once space is freed");
        acked.insert(key(i), value(i));
    }
    restart_and_verify(&sim, env, d, &acked);
}

#[test]
fn a_disk_full_without_a_reserve_is_an_error_not_a_loss() {
    let (sim, env, d) = setup(5);
    let (mut acked, _) = write_until_error(&d, 0, 1000);
    sim.set_capacity(Some(sim.used_bytes() + (64 << 10)));
    let (more, err) = write_until_error(&d, 1000, 100_000);
    acked.extend(more);
    let err = err.expect("the disk never filled");
    eprintln!("{err}");
    assert!(matches!(err, Error::ReadOnly(_) | Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("No space left") || err.to_string().contains("space"), "{err}");
    restart_and_verify(&sim, env, d, &acked);
}

#[test]
fn flipped_bits_on_read_are_errors_never_wrong_data() {
    let (sim, env, d) = setup(6);
    let (acked, _) = write_until_error(&d, 0, 5000);
    drop(d);
    env.close().unwrap();
    let env = Env::open(DIR, opts(&sim)).unwrap();
    let d = env.open_dictionary("t").unwrap();
    sim.flip_bits_randomly(0.3, Some(".fdb"));
    let (mut ok, mut bad) = (0, 0);
    for (k, v) in acked.iter().step_by(7) {
        match d.get(k) {
            Ok(got) => {
                assert_eq!(got.as_ref(), Some(v), "a flipped bit returned wrong data");
                ok += 1;
            }
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                assert!(e.to_string().contains(".fdb"), "{e}");
                bad += 1;
            }
        }
    }
    assert!(bad > 0, "no flip was noticed ({ok} reads fine)");
    sim.clear_faults();
    // The stored bytes were never damaged: everything reads back.
    for (k, v) in &acked {
        assert_eq!(d.get(k).unwrap().as_ref(), Some(v));
    }
    d.check().unwrap();
}
