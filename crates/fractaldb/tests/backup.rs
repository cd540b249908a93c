//! Hot backup (`Env::backup`): a copy taken while a writer commits opens
//! as a normal environment holding exactly the transactions committed by
//! the backup's moment, and a backup cut short by a crash (simulated, or a
//! SIGKILL of its process) leaves the source intact and the destination
//! refused at open.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fractaldb::{
    Codec, DictOptions, Env, EnvOptions, Isolation, OpenMode, SimVfs, Vfs, BACKUP_INCOMPLETE_FILE,
};

fn opts(sim: &SimVfs, background_threads: bool) -> EnvOptions {
    EnvOptions {
        background_threads,
        // Checkpoints keep trying during the backup (they must skip), and
        // the log rolls into several files.
        checkpoint_period: background_threads.then_some(Duration::from_millis(5)),
        ..common::sim_opts(sim)
    }
}

fn dict() -> DictOptions {
    DictOptions {
        node_size_bytes: 4096,
        basement_size_bytes: 512,
        fanout: 8,
        codec: Codec::Lz4,
        comparator: None,
    }
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// Every key of dictionary `name`, in order.
fn keys(env: &Env, name: &str) -> Vec<u64> {
    let d = env.open_dictionary(name).unwrap();
    let mut c = d.cursor();
    c.first().unwrap();
    let mut out = Vec::new();
    while let Some(k) = c.key() {
        out.push(u64::from_be_bytes(k.try_into().unwrap()));
        c.next().unwrap();
    }
    out
}

#[test]
fn a_backup_during_a_load_holds_exactly_the_commits_before_its_moment() {
    let sim = SimVfs::new(7);
    let env = Arc::new(Env::open("/db", opts(&sim, true)).unwrap());
    let a = env.create_dictionary("a", dict()).unwrap();
    env.create_dictionary("b", dict()).unwrap();
    // A transaction open across the backup: never in the copy.
    let open_txn = env.begin(Isolation::RepeatableRead).unwrap();
    open_txn.put(&a, b"uncommitted", b"x").unwrap();
    // The writer commits transactions 0, 1, 2, ... each writing its key to
    // both dictionaries; `acked` is how many returned from commit.
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (env, acked, stop) = (env.clone(), acked.clone(), stop.clone());
        let (a, b) = (env.open_dictionary("a").unwrap(), env.open_dictionary("b").unwrap());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) || i < 3000 {
                let t = env.begin(Isolation::RepeatableRead).unwrap();
                t.put(&a, &key(i), &[7u8; 100]).unwrap();
                t.put(&b, &key(i), &[9u8; 100]).unwrap();
                t.commit().unwrap();
                i += 1;
                acked.store(i, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 1500 {
        std::thread::yield_now();
    }
    env.checkpoint().unwrap();
    // A file of the layers above, named by the caller, travels along.
    let key_file = Path::new("/db/server-key.pem");
    let f = sim.open(key_file, OpenMode::CreateNew, false).unwrap();
    f.write_at(0, b"key").unwrap();
    f.sync().unwrap();
    let before = acked.load(Ordering::SeqCst);
    let mut calls = 0;
    let report = env
        .backup(
            Path::new("/backup"),
            &[(key_file.to_path_buf(), "/backup/server-key.pem".into())],
            &mut |p| {
                calls += 1;
                assert!(p.bytes_done <= p.bytes_total, "{p:?}");
                Ok(())
            },
        )
        .unwrap();
    let after = acked.load(Ordering::SeqCst);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(calls > 0 && report.dictionaries == 2 && report.bytes > 0);
    // A second backup into the same folder is refused: it is not empty.
    let e = env.backup(Path::new("/backup"), &[], &mut |_| Ok(())).unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    open_txn.abort().unwrap();

    assert_eq!(sim.read_file(Path::new("/backup/server-key.pem")).unwrap(), Some(b"key".to_vec()));
    let copy = Env::open("/backup", opts(&sim, false)).unwrap();
    let (ka, kb) = (keys(&copy, "a"), keys(&copy, "b"));
    // A prefix of the writer's transactions, each whole in both
    // dictionaries: everything acknowledged before the backup began, nothing
    // begun after it ended (the writer commits one at a time, in order).
    let n = ka.len() as u64;
    assert_eq!(ka, (0..n).collect::<Vec<_>>());
    assert_eq!(ka, kb);
    assert!(n >= before && n <= after + 1, "copy holds {n}, acked {before} before and {after} after");
    for name in ["a", "b"] {
        copy.open_dictionary(name).unwrap().check().unwrap();
    }
    copy.close().unwrap();
    // The source goes on as before.
    Arc::try_unwrap(env).ok().unwrap().close().unwrap();
    let src = Env::open("/db", opts(&sim, false)).unwrap();
    assert!(keys(&src, "a").len() as u64 >= after);
}

#[test]
fn a_crash_during_a_backup_leaves_the_source_whole_and_the_copy_refused() {
    for crash_in in [8u64, 15, 30] {
        let sim = SimVfs::new(crash_in);
        let env = Env::open("/db", opts(&sim, false)).unwrap();
        let a = env.create_dictionary("a", dict()).unwrap();
        for i in 0..400u64 {
            a.put(&key(i), &[1u8; 200]).unwrap();
        }
        env.checkpoint().unwrap();
        for i in 400..600u64 {
            a.put(&key(i), &[1u8; 200]).unwrap();
        }
        sim.crash_after(Some(crash_in));
        assert!(env.backup(Path::new("/backup"), &[], &mut |_| Ok(())).is_err());
        assert_eq!(sim.crash_count(), 1);
        let sites = sim.crash_sites();
        drop(env);
        let src = Env::open("/db", opts(&sim, false)).unwrap();
        assert_eq!(keys(&src, "a"), (0..600).collect::<Vec<_>>());
        src.close().unwrap();
        // The marker was durable before anything was copied: the copy is
        // refused, with a reason that says so.
        let e = Env::open("/backup", opts(&sim, false)).err().expect("an unfinished backup opened");
        assert!(e.to_string().contains(BACKUP_INCOMPLETE_FILE), "crash at {crash_in} {sites:?}: {e}");
    }
}

/// The child of the SIGKILL test: a writer thread commits key after key
/// into `a` (real files, commit sync on) and says so, while the main thread
/// backs the environment up to `b<n>`, one new folder after another, and
/// says when each returned.
fn kill_child(dir: &Path) {
    let env = Arc::new(
        Env::open(dir.join("src"), EnvOptions { cache_size_bytes: 8 << 20, ..EnvOptions::default() })
            .unwrap(),
    );
    let a = env.open_dictionary("a").unwrap();
    let start = keys(&env, "a").len() as u64;
    // Keys 0..acked are acknowledged.
    let acked = Arc::new(AtomicU64::new(start));
    let writer = acked.clone();
    std::thread::spawn(move || {
        for i in start.. {
            a.put(&key(i), &[3u8; 300]).unwrap();
            writer.store(i + 1, Ordering::SeqCst);
            println!("wrote {i}");
        }
    });
    let first: u64 = std::env::var("FRACTALDB_BACKUP_FIRST").unwrap().parse().unwrap();
    for n in first.. {
        let before = acked.load(Ordering::SeqCst);
        env.backup(&dir.join(format!("b{n}")), &[], &mut |_| Ok(())).unwrap();
        println!("backup {n} {before}");
    }
}

/// A process backing itself up while it commits is SIGKILLed, three times:
/// the source reopens with every acknowledged commit; each backup that
/// returned opens as an environment holding a prefix of the keys (the
/// writer's commits up to the backup's moment), at least every key
/// acknowledged before it began; the one cut short is refused
/// (or, if it finished unsaid, opens like the others).
#[test]
fn a_killed_process_leaves_its_source_whole_and_its_backups_finished_or_refused() {
    let root = match std::env::var("FRACTALDB_BACKUP_CHILD") {
        Ok(dir) => return kill_child(Path::new(&dir)),
        Err(_) => tempfile::tempdir().unwrap(),
    };
    {
        let env = Env::open(root.path().join("src"), EnvOptions::default()).unwrap();
        env.create_dictionary("a", dict()).unwrap();
        env.close().unwrap();
    }
    let mut first = 0u64;
    for round in 0..3u64 {
        let (mut child, mut lines) = common::spawn_self(
            "a_killed_process_leaves_its_source_whole_and_its_backups_finished_or_refused",
            &[
                ("FRACTALDB_BACKUP_CHILD", root.path().display().to_string()),
                ("FRACTALDB_BACKUP_FIRST", first.to_string()),
            ],
        );
        let mut wrote = None;
        let mut done: Vec<(u64, Option<u64>)> = Vec::new();
        let read = |l: String, wrote: &mut Option<u64>, done: &mut Vec<(u64, Option<u64>)>| {
            if let Some(i) = l.strip_prefix("wrote ") {
                *wrote = Some(i.parse().unwrap());
            } else if let Some(n) = l.strip_prefix("backup ") {
                // With how many keys were acknowledged before it began.
                let (n, before) = n.split_once(' ').unwrap();
                done.push((n.parse().unwrap(), Some(before.parse().unwrap())));
            }
        };
        // Killed during a later backup than the first, at a different
        // point each round.
        while done.len() < 2 + round as usize {
            read(lines.next().expect("the child stopped").unwrap(), &mut wrote, &mut done);
        }
        std::thread::sleep(Duration::from_millis(5 + 20 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        for l in lines.map_while(Result::ok) {
            read(l, &mut wrote, &mut done);
        }
        let acked = wrote.expect("nothing written");
        let src = Env::open(root.path().join("src"), EnvOptions::default()).unwrap();
        let all = keys(&src, "a");
        assert!(all.len() as u64 > acked, "round {round}: {} keys, {acked} acknowledged", all.len());
        assert_eq!(all, (0..all.len() as u64).collect::<Vec<_>>());
        src.close().unwrap();
        let last = done.last().unwrap().0;
        for n in first..=last + 1 {
            let dest = root.path().join(format!("b{n}"));
            // Killed before the folder (or its marker) was made: nothing
            // there to open (an open would make a new environment).
            if std::fs::read_dir(&dest).map_or(true, |mut d| d.next().is_none()) {
                assert!(!done.iter().any(|d| d.0 == n), "b{n} returned but is empty");
                continue;
            }
            match Env::open(&dest, EnvOptions::default()) {
                Ok(env) => {
                    let got = keys(&env, "a");
                    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>(), "b{n}");
                    assert!(got.len() <= all.len(), "b{n}: {} keys, the source {}", got.len(), all.len());
                    if let Some((_, Some(before))) = done.iter().find(|d| d.0 == n) {
                        assert!(
                            got.len() as u64 >= *before,
                            "b{n}: {} keys, {before} acknowledged before it",
                            got.len()
                        );
                    }
                    env.close().unwrap();
                }
                Err(e) => {
                    assert!(!done.iter().any(|d| d.0 == n), "b{n} returned but does not open: {e}");
                    assert!(e.to_string().contains(BACKUP_INCOMPLETE_FILE), "b{n}: {e}");
                }
            }
        }
        first = last + 2;
    }
}
