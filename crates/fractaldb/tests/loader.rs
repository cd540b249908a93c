//! The bulk loader (`Env::loader`): a new dictionary built from pairs in
//! increasing key order, leaf by leaf.
//!
//! - what it builds passes `check`, reads back (cursor, gets) before and
//!   after a reopen, and takes writes like any dictionary;
//! - a key not above the last is refused and the load goes on;
//! - a crash at any file operation of a load, or a SIGKILL of a process in
//!   the middle of one, leaves either no dictionary and no file (after the
//!   next open's sweep) or the whole dictionary;
//! - a loader dropped unfinished leaves no file and no name.

mod common;

use common::{sim_opts, small_dict};

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use fractaldb::{DictOptions, Env, EnvOptions, Error, SimVfs, Vfs};

const DIR: &str = "/db";

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 23) as usize)).into_bytes()
}

fn dict_files(vfs: &dyn Vfs, dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = vfs.list(dir).unwrap().into_iter().filter(|n| n.ends_with(".fdb")).collect();
    v.sort();
    v
}

fn assert_all(d: &fractaldb::Dictionary, n: u64) {
    let rows: Vec<(Vec<u8>, Vec<u8>)> = d.range(None, None, false).map(|r| r.unwrap()).collect();
    assert_eq!(rows.len() as u64, n);
    for (i, (k, v)) in rows.iter().enumerate() {
        assert_eq!((k, v), (&key(i as u64), &value(i as u64)));
    }
    for i in (0..n).step_by(97) {
        assert_eq!(d.get(&key(i)).unwrap(), Some(value(i)));
    }
    d.check().unwrap();
}

#[test]
fn a_loaded_dictionary_reads_back_checks_and_takes_writes() {
    let sim = SimVfs::new(1);
    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    let n = 3000;
    let mut l = env.loader("t", small_dict()).unwrap();
    for i in 0..n {
        l.add(&key(i), &value(i)).unwrap();
    }
    assert_eq!(l.rows(), n);
    let (d, stats) = l.finish_with_stats().unwrap();
    assert_eq!(stats.rows, n);
    let report = d.check().unwrap();
    // Several levels of internal nodes, none with one child.
    assert!(report.height >= 2, "{report:?}");
    assert_eq!((report.leaves, report.leafentries, report.buffered_messages), (stats.leaves, n, 0));
    assert_eq!(report.internal_nodes, stats.internal_nodes);
    assert_all(&d, n);
    drop(d);
    env.close().unwrap();

    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    assert_eq!(env.list_dictionaries(), ["t"]);
    let d = env.open_dictionary("t").unwrap();
    assert_all(&d, n);
    // Writes go through the tree as usual: overwrite, delete, insert
    // between and past the loaded keys, then flush them all down.
    d.put(&key(5), b"new").unwrap();
    d.delete(&key(6)).unwrap();
    d.put(b"key00000100a", b"between").unwrap();
    for i in n..n + 500 {
        d.put(&key(i), &value(i)).unwrap();
    }
    let t = env.begin(fractaldb::Isolation::RepeatableRead).unwrap();
    assert_eq!(t.get(&d, &key(7)).unwrap(), Some(value(7)));
    t.put(&d, &key(7), b"txn").unwrap();
    t.commit().unwrap();
    d.check().unwrap();
    env.run_cleaner(10_000).unwrap();
    d.check().unwrap();
    assert_eq!(d.get(&key(5)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(d.get(&key(6)).unwrap(), None);
    assert_eq!(d.get(&key(7)).unwrap().as_deref(), Some(&b"txn"[..]));
    assert_eq!(d.get(b"key00000100a").unwrap().as_deref(), Some(&b"between"[..]));
    assert_eq!(d.range(None, None, false).count() as u64, n + 500);
    drop(d);
    env.close().unwrap();
    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    let d = env.open_dictionary("t").unwrap();
    assert_eq!(d.get(&key(7)).unwrap().as_deref(), Some(&b"txn"[..]));
    d.check().unwrap();
}

#[test]
fn small_and_empty_loads_and_bad_input() {
    let sim = SimVfs::new(2);
    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    // Empty: a dictionary with no rows.
    let d = env.loader("empty", small_dict()).unwrap().finish().unwrap();
    assert_eq!(d.range(None, None, false).count(), 0);
    d.check().unwrap();
    d.put(b"a", b"b").unwrap();
    assert_eq!(d.get(b"a").unwrap().as_deref(), Some(&b"b"[..]));
    // Out of order and duplicate keys are refused; the load goes on.
    let mut l = env.loader("one", DictOptions::default()).unwrap();
    l.add(b"b", b"1").unwrap();
    assert!(matches!(l.add(b"b", b"2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(l.add(b"a", b"2"), Err(Error::InvalidArgument(_))));
    let big = vec![0u8; fractaldb::MAX_KEY_BYTES + 1];
    assert!(matches!(l.add(&big, b""), Err(Error::TooLarge { .. })));
    l.add(b"c", b"3").unwrap();
    // A name taken meanwhile: finish fails and leaves nothing behind.
    env.create_dictionary("one", DictOptions::default()).unwrap();
    assert!(matches!(l.finish(), Err(Error::DictionaryExists(_))));
    assert!(matches!(env.loader("one", DictOptions::default()), Err(Error::DictionaryExists(_))));
    let mut l = env.loader("two", DictOptions::default()).unwrap();
    l.add(b"", b"empty key").unwrap();
    l.add(b"b", b"1").unwrap();
    let d = l.finish().unwrap();
    assert_eq!(d.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    d.check().unwrap();
    // Dropped unfinished: no name, no file.
    let mut l = env.loader("gone", small_dict()).unwrap();
    for i in 0..500 {
        l.add(&key(i), &value(i)).unwrap();
    }
    drop(l);
    assert_eq!(env.list_dictionaries(), ["empty", "one", "two"]);
    assert_eq!(dict_files(&*sim, Path::new(DIR)), ["d1.fdb", "d3.fdb", "d4.fdb"]);
    env.close().unwrap();
    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    assert_eq!(env.list_dictionaries(), ["empty", "one", "two"]);
    assert_eq!(dict_files(&*sim, Path::new(DIR)), ["d1.fdb", "d3.fdb", "d4.fdb"]);
}

/// A crash before every file operation of a load (and its finish) in turn:
/// after the next open, either the dictionary is there whole (only if the
/// crash came after the catalog named it) or there is no dictionary and no
/// file of it.
#[test]
fn a_crash_anywhere_in_a_load_leaves_all_or_nothing() {
    let n_rows = 400;
    let mut n = 0;
    loop {
        let sim = SimVfs::new(200 + n);
        let env = Env::open(DIR, sim_opts(&sim)).unwrap();
        let a = env.create_dictionary("a", small_dict()).unwrap();
        a.put(b"k", b"v").unwrap();
        drop(a);
        let crashes = sim.crash_count();
        sim.crash_after(Some(n));
        let loaded = (|| {
            let mut l = env.loader("b", small_dict())?;
            for i in 0..n_rows {
                l.add(&key(i), &value(i))?;
            }
            l.finish()
        })();
        let crashed = sim.crash_count() > crashes;
        sim.crash_after(None);
        let finished = loaded.is_ok();
        drop(loaded);
        if !crashed {
            sim.crash();
        }
        drop(env);
        let env = Env::open(DIR, sim_opts(&sim)).unwrap();
        match &env.list_dictionaries()[..] {
            [a] if a == "a" => {
                assert!(!finished, "crash at op {n}: finish returned Ok but the dictionary is gone");
                assert_eq!(dict_files(&*sim, Path::new(DIR)), ["d1.fdb"], "crash at op {n}: a file left");
            }
            [a, b] if a == "a" && b == "b" => assert_all(&env.open_dictionary("b").unwrap(), n_rows),
            other => panic!("crash at op {n}: dictionaries {other:?}"),
        }
        assert_eq!(env.open_dictionary("a").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        env.close().unwrap();
        if !crashed {
            break;
        }
        n += 1;
        assert!(n < 1000, "the load never finished");
    }
    assert!(n >= 20, "the crashes covered only {n} operations of the load");
}

fn os_opts() -> EnvOptions {
    EnvOptions { cache_size_bytes: 1 << 20, direct_io: false, reserve_free_bytes: 0, ..Default::default() }
}

/// The child of `a_killed_load_leaves_no_dictionary`: loads part of a
/// dictionary, says so, and waits to be killed.
fn killed_child(dir: &Path) {
    let env = Env::open(dir, os_opts()).unwrap();
    let mut l = env.loader("half", small_dict()).unwrap();
    for i in 0..5000 {
        l.add(&key(i), &value(i)).unwrap();
    }
    println!("loading");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(600));
}

#[test]
fn a_killed_load_leaves_no_dictionary() {
    if let Ok(dir) = std::env::var("FRACTALDB_LOADER_CHILD") {
        killed_child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let env = Env::open(dir.path(), os_opts()).unwrap();
        env.create_dictionary("a", small_dict()).unwrap().put(b"k", b"v").unwrap();
        env.close().unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_killed_load_leaves_no_dictionary", "--nocapture", "--test-threads=1"])
        .env("FRACTALDB_LOADER_CHILD", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut saw = false;
    for line in out.lines() {
        if line.unwrap().contains("loading") {
            saw = true;
            break;
        }
    }
    // The half-built file is on disk, its blocks written, its name not in
    // the catalog.
    let files = dict_files(&fractaldb::OsVfs, dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(saw, "the child did not get to load");
    assert_eq!(files, ["d1.fdb", "d2.fdb"]);
    assert!(std::fs::metadata(dir.path().join("d2.fdb")).unwrap().len() > 64 << 10);
    let env = Env::open(dir.path(), os_opts()).unwrap();
    assert_eq!(env.list_dictionaries(), ["a"]);
    assert_eq!(dict_files(&fractaldb::OsVfs, dir.path()), ["d1.fdb"]);
    // The id is not handed out again.
    let d = env.loader("half", small_dict()).unwrap().finish().unwrap();
    d.check().unwrap();
    assert_eq!(dict_files(&fractaldb::OsVfs, dir.path()), ["d1.fdb", "d3.fdb"]);
}
