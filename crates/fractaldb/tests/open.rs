//! Opening an environment: what an open may touch, and when.
//!
//! - A failed `Env::open` leaves every file as it was (no header, no log
//!   change, no file removed), so a later open with the right settings
//!   replays each record exactly once.
//! - The catalog: a brand-new folder gets one at its first open; a folder
//!   holding data or log files without a readable catalog refuses to open;
//!   the sweep at open deletes only files it has a reason to (a dropped id,
//!   a create that crashed before its catalog write) and leaves the rest.
//! - `drop_dictionary` does its fsyncs without holding writers of other
//!   dictionaries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fractaldb::{Codec, DictOptions, Env, EnvOptions, SimVfs, UpdateFn, Vfs};

const DIR: &str = "/db";
const ADD: u8 = 1;
const ADD_TWICE: u8 = 2;

/// Adds the argument (u64 LE) to the value (u64 LE, absent = 0): applied
/// twice, it shows.
fn add_fn(times: u64) -> UpdateFn {
    Arc::new(move |_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let old = old.map_or(0, |o| u64::from_le_bytes(o.try_into().unwrap()));
        let arg = u64::from_le_bytes(arg.try_into().unwrap());
        Some((old + times * arg).to_le_bytes().to_vec())
    })
}

fn sim_opts(sim: &SimVfs, fns: &[u8], background_threads: bool) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 256 << 10,
        direct_io: false,
        background_threads,
        update_fns: fns.iter().map(|&id| (id, add_fn(u64::from(id)))).collect(),
        vfs: sim.boot(),
        commit_sync: true,
        checkpoint_period: None,
        log_file_size_bytes: 64 << 10,
        reserve_free_bytes: 0,
        ..Default::default()
    }
}

fn small_dict() -> DictOptions {
    DictOptions {
        node_size_bytes: 2048,
        basement_size_bytes: 256,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    }
}

fn counter(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()))
}

/// Every file of the simulated folder but `LOCK`: its current bytes and
/// the bytes a clean crash would leave.
type Snapshot = BTreeMap<PathBuf, (Option<Vec<u8>>, Option<Vec<u8>>)>;

fn snapshot(sim: &SimVfs) -> Snapshot {
    sim.files()
        .into_iter()
        .filter(|f| f.path.file_name().is_some_and(|n| n != "LOCK"))
        .map(|f| {
            let current = sim.read_file(&f.path).unwrap();
            let durable = sim.read_durable(&f.path);
            (f.path, (current, durable))
        })
        .collect()
}

/// Writes counters by upserts (`fns` in turn), checkpointing midway so the
/// log holds records on both sides of a checkpoint, then loses power (every
/// write was acknowledged with `commit_sync`, so all are durable). Returns
/// the acknowledged total of counter `n`.
fn write_counters(sim: &Arc<SimVfs>, fns: &[u8]) -> u64 {
    let env = Env::open(DIR, sim_opts(sim, fns, false)).unwrap();
    let d = env.create_dictionary("c", small_dict()).unwrap();
    let mut total = 0;
    for i in 0..20u64 {
        if i == 10 {
            env.checkpoint().unwrap();
        }
        let id = fns[i as usize % fns.len()];
        d.update(b"n", id, &1u64.to_le_bytes()).unwrap();
        d.put(format!("k{i:03}").as_bytes(), &[7; 40]).unwrap();
        total += u64::from(id);
    }
    assert_eq!(counter(d.get(b"n").unwrap()), total);
    sim.crash_clean();
    drop(d);
    drop(env);
    total
}

/// The reviewer's reproduction, in memory: an open that fails during
/// recovery (an upsert names an update function the options do not
/// register) must change no file, and the next open, with the function,
/// must replay every record exactly once.
#[test]
fn a_failed_open_leaves_the_files_as_they_were() {
    for background_threads in [false, true] {
        // One function, none registered at the failed open; two, one of them
        // registered (the failed open replays part of the log first).
        for (fns, registered) in [(&[ADD][..], &[][..]), (&[ADD, ADD_TWICE][..], &[ADD][..])] {
            let sim = SimVfs::new(7);
            let total = write_counters(&sim, fns);
            let before = snapshot(&sim);
            let err = Env::open(DIR, sim_opts(&sim, registered, background_threads))
                .err()
                .expect("an open whose log needs an unregistered update function fails");
            assert!(err.to_string().contains("update function"), "{err}");
            let after = snapshot(&sim);
            let changed: Vec<_> = before
                .keys()
                .chain(after.keys())
                .filter(|p| before.get(*p) != after.get(*p))
                .map(|p| p.display().to_string())
                .collect();

            let env = Env::open(DIR, sim_opts(&sim, fns, background_threads)).unwrap();
            let d = env.open_dictionary("c").unwrap();
            assert_eq!(
                counter(d.get(b"n").unwrap()),
                total,
                "the counter after a failed open and a good one (threads {background_threads}, fns {fns:?})"
            );
            assert!(
                changed.is_empty(),
                "the failed open changed {changed:?} (threads {background_threads}, fns {fns:?})"
            );
            d.check().unwrap();
            drop(d);
            env.close().unwrap();
        }
    }
}

#[allow(dead_code)]
fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}
