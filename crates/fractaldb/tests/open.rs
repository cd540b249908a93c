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

mod common;

use common::small_dict;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use fractaldb::{Env, EnvOptions, Error, Notes, OpenMode, SimVfs, UpdateFn, Vfs, VfsFile};

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
        background_threads,
        update_fns: fns.iter().map(|&id| (id, add_fn(u64::from(id)))).collect(),
        ..common::sim_opts(sim)
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

/// Recovery says what it has to read and what it did (`EnvOptions::notes`).
/// With the periodic checkpointer the open does not wait for the
/// checkpoint after the replay: the checkpointer takes it at once. Once it
/// is taken, it has trimmed the log: the next recovery replays only what
/// came after it (here one update), none lost, none applied twice (the
/// counters are upserts).
///
/// Each round waits for that checkpoint before its update: an update made
/// while the checkpoint may still begin would land in the checkpoint's
/// trees or in the log after it, by the scheduler's whim, and a CI run saw
/// the first (nothing to replay in the next round).
#[test]
fn recovery_notes_its_progress_and_checkpoints_after_the_open() {
    let fns = [ADD, ADD_TWICE];
    let sim = SimVfs::new(11);
    let mut total = write_counters(&sim, &fns);
    let notes = Arc::new(Mutex::new(Vec::<String>::new()));
    let opts = |background_threads| {
        let n = notes.clone();
        EnvOptions {
            checkpoint_period: Some(Duration::from_secs(3600)),
            notes: Some(Notes(Arc::new(move |line: &str| n.lock().unwrap().push(line.to_string())))),
            ..sim_opts(&sim, &fns, background_threads)
        }
    };
    for round in 0..2 {
        notes.lock().unwrap().clear();
        let env = Env::open(DIR, opts(true)).unwrap();
        let rec = env.stats().recovery;
        // Round 0 replays `write_counters`; round 1 the update of round 0.
        if round == 0 {
            assert!(rec.replayed > 0, "round {round}: {rec:?}");
        } else {
            assert_eq!(rec.replayed, 1, "round {round}: {rec:?}");
        }
        let lines = notes.lock().unwrap().clone();
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines[0].contains("of log in") && lines[0].ends_with("file(s) to read"), "{lines:?}");
        let last = lines.last().unwrap();
        assert!(last.contains("recovery: done in"), "{lines:?}");
        assert!(last.contains(&format!(" {} records, ", rec.records_read)), "{lines:?}");
        assert!(last.ends_with("the checkpoint follows in the background"), "{lines:?}");
        let d = env.open_dictionary("c").unwrap();
        assert_eq!(counter(d.get(b"n").unwrap()), total, "round {round}");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while env.checkpoint_timings().is_empty() {
            assert!(std::time::Instant::now() < deadline, "round {round}: no checkpoint after the recovery");
            std::thread::sleep(Duration::from_millis(10));
        }
        d.update(b"n", ADD, &1u64.to_le_bytes()).unwrap();
        total += u64::from(ADD);
        sim.crash_clean();
        drop(d);
        drop(env);
    }
    notes.lock().unwrap().clear();
    let env = Env::open(DIR, opts(false)).unwrap();
    let rec = env.stats().recovery;
    // Only the update after the checkpoint is applied: the writes of the
    // rounds before are in its trees.
    assert_eq!(rec.replayed, 1, "{rec:?}");
    let d = env.open_dictionary("c").unwrap();
    assert_eq!(counter(d.get(b"n").unwrap()), total);
    d.check().unwrap();
    drop(d);
    // Without the checkpointer the open checkpoints itself; a clean close
    // leaves nothing to replay, and the next open notes nothing.
    assert!(notes.lock().unwrap().last().unwrap().ends_with("checkpoint taken"));
    env.close().unwrap();
    notes.lock().unwrap().clear();
    let env = Env::open(DIR, opts(false)).unwrap();
    assert_eq!(env.stats().recovery.records_read, 0);
    assert_eq!(notes.lock().unwrap().clone(), Vec::<String>::new());
    env.close().unwrap();
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// The `d<id>.fdb` files of the folder, by name.
fn dict_files(vfs: &dyn Vfs) -> Vec<String> {
    let mut v: Vec<String> =
        vfs.list(Path::new(DIR)).unwrap().into_iter().filter(|n| n.ends_with(".fdb")).collect();
    v.sort();
    v
}

/// Copies a file, durably (a stray dictionary file for the sweep to judge).
fn copy_file(sim: &SimVfs, from: &str, to: &str) {
    let bytes = sim.read_file(&path(from)).unwrap().unwrap();
    let f = sim.open(&path(to), OpenMode::CreateNew, false).unwrap();
    f.write_at(0, &bytes).unwrap();
    f.sync().unwrap();
    sim.sync_dir(Path::new(DIR)).unwrap();
}

/// A folder that held an environment and lost its catalog is not a new
/// environment: the open fails, naming the catalog, and deletes nothing
/// (before, it opened empty and swept away `d1.fdb` and the log).
#[test]
fn a_missing_catalog_is_an_error_and_deletes_nothing() {
    let sim = SimVfs::new(11);
    let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
    let d = env.create_dictionary("a", small_dict()).unwrap();
    for i in 0..1000 {
        d.put(&key(i), b"v").unwrap();
    }
    drop(d);
    env.close().unwrap();
    let catalog = sim.read_file(&path("catalog")).unwrap().unwrap();
    sim.remove(&path("catalog")).unwrap();
    sim.sync_dir(Path::new(DIR)).unwrap();
    let before = snapshot(&sim);
    let err = Env::open(DIR, sim_opts(&sim, &[], false)).err().expect("an open without the catalog fails");
    assert!(
        matches!(&err, Error::Corrupt { path: p, .. } if p.ends_with("catalog")),
        "the error names the catalog: {err}"
    );
    assert_eq!(snapshot(&sim), before, "the refused open changed the folder");

    // A damaged catalog: refused the same way.
    let bad = {
        let mut b = catalog.clone();
        b[14] ^= 0x40;
        b
    };
    for bytes in [&bad, &catalog] {
        let f = sim.open(&path("catalog"), OpenMode::CreateOrOpen, false).unwrap();
        f.set_len(0).unwrap();
        f.write_at(0, bytes).unwrap();
        f.sync().unwrap();
        sim.sync_dir(Path::new(DIR)).unwrap();
        if bytes == &bad {
            let before = snapshot(&sim);
            let err =
                Env::open(DIR, sim_opts(&sim, &[], false)).err().expect("a damaged catalog fails the open");
            assert!(err.is_corruption(), "{err}");
            assert_eq!(snapshot(&sim), before, "the refused open changed the folder");
        }
    }
    // With its catalog back, everything is there.
    let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
    let d = env.open_dictionary("a").unwrap();
    assert_eq!(d.range(None, None, false).count(), 1000);
    drop(d);
    env.close().unwrap();
}

/// A folder with no fractaldb files is a new environment: its first open
/// writes the catalog, so the next open does not take it for a folder that
/// lost its catalog.
#[test]
fn a_new_folder_gets_its_catalog_at_first_open() {
    let sim = SimVfs::new(12);
    Env::open(DIR, sim_opts(&sim, &[], false)).unwrap().close().unwrap();
    assert!(sim.read_durable(&path("catalog")).is_some(), "the first open wrote no durable catalog");
    let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
    assert!(env.list_dictionaries().is_empty());
    env.create_dictionary("a", small_dict()).unwrap();
    env.close().unwrap();
}

/// The sweep at open deletes a dictionary file only with a reason: its id
/// is in the catalog's dropped list (a drop that did not get to remove it),
/// or at or above `next_file_id` (a create cut short before its catalog
/// write). Any other file the catalog does not name stays.
#[test]
fn the_sweep_deletes_only_files_it_has_a_reason_to() {
    let sim = SimVfs::new(13);
    let hook = HookVfs::new(sim.boot());
    let opts = || EnvOptions { vfs: Arc::new(hook.clone()), ..sim_opts(&sim, &[], false) };
    let env = Env::open(DIR, opts()).unwrap();
    for name in ["a", "b", "c"] {
        let d = env.create_dictionary(name, small_dict()).unwrap();
        for i in 0..200 {
            d.put(&key(i), name.as_bytes()).unwrap();
        }
    }
    // The drop of "c" (d3.fdb) fails to remove the file, after its catalog write.
    hook.set(Some(Arc::new(|op, p: &Path| match op {
        "remove" if p.ends_with("d3.fdb") => {
            Err(Error::Io { path: p.into(), op: "remove", source: std::io::Error::other("injected") })
        }
        _ => Ok(()),
    })));
    assert!(env.drop_dictionary("c").is_err());
    hook.set(None);
    env.close().unwrap();
    assert_eq!(dict_files(&*sim), ["d1.fdb", "d2.fdb", "d3.fdb"]);
    // A create cut short (id 9 >= next_file_id 4), and a file nothing
    // accounts for (id 0, below next_file_id, neither named nor dropped).
    copy_file(&sim, "d1.fdb", "d9.fdb");
    copy_file(&sim, "d1.fdb", "d0.fdb");

    let env = Env::open(DIR, opts()).unwrap();
    assert_eq!(env.list_dictionaries(), ["a", "b"]);
    assert_eq!(dict_files(&*sim), ["d0.fdb", "d1.fdb", "d2.fdb"], "what the sweep deleted and kept");
    // Ids are not handed out again: a new dictionary gets a new file.
    let d = env.create_dictionary("d", small_dict()).unwrap();
    d.put(b"x", b"y").unwrap();
    drop(d);
    for name in ["a", "b"] {
        let d = env.open_dictionary(name).unwrap();
        assert_eq!(d.range(None, None, false).count(), 200);
        assert_eq!(d.get(&key(7)).unwrap().as_deref(), Some(name.as_bytes()));
    }
    env.close().unwrap();
    assert_eq!(dict_files(&*sim), ["d0.fdb", "d1.fdb", "d2.fdb", "d4.fdb"]);
}

/// A crash at any point of a drop leaves either the dictionary, whole, or
/// no dictionary, and no dictionary file the catalog does not name once
/// the next open has swept.
#[test]
fn a_crash_anywhere_in_a_drop_leaves_the_dictionary_or_nothing() {
    let mut n = 0;
    loop {
        let sim = SimVfs::new(100 + n);
        let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
        for name in ["a", "b"] {
            let d = env.create_dictionary(name, small_dict()).unwrap();
            for i in 0..300 {
                d.put(&key(i), name.as_bytes()).unwrap();
            }
        }
        let crashes = sim.crash_count();
        sim.crash_after(Some(n));
        let dropped = env.drop_dictionary("b");
        let crashed = sim.crash_count() > crashes;
        sim.crash_after(None);
        if !crashed {
            dropped.unwrap();
            sim.crash();
        }
        drop(env);
        let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
        let names = env.list_dictionaries();
        match &names[..] {
            [a] if a == "a" => assert_eq!(dict_files(&*sim), ["d1.fdb"], "crash at op {n}: a file left"),
            [a, b] if a == "a" && b == "b" => {
                assert!(crashed, "the drop returned Ok but the dictionary is back");
                let d = env.open_dictionary("b").unwrap();
                assert_eq!(d.range(None, None, false).count(), 300, "crash at op {n}");
                d.check().unwrap();
                assert_eq!(dict_files(&*sim), ["d1.fdb", "d2.fdb"]);
            }
            other => panic!("crash at op {n}: dictionaries {other:?}"),
        }
        let d = env.open_dictionary("a").unwrap();
        assert_eq!(d.range(None, None, false).count(), 300);
        drop(d);
        env.close().unwrap();
        if !crashed {
            break;
        }
        n += 1;
        assert!(n < 1000, "the drop never finished");
    }
    assert!(n >= 4, "the crashes covered only {n} operations of the drop");
}

/// While a drop does its fsyncs, a writer of another dictionary is not
/// held: at every sync, folder sync, rename and removal the drop makes, a
/// write to another dictionary, on another thread, completes. (The wait
/// for it is bounded only so that a writer held by the drop fails the test
/// instead of hanging it; nothing is timed.)
#[test]
fn a_drop_does_not_hold_writers_of_other_dictionaries_across_its_io() {
    let sim = SimVfs::new(14);
    let hook = HookVfs::new(sim.boot());
    let opts = EnvOptions { vfs: Arc::new(hook.clone()), ..sim_opts(&sim, &[], false) };
    let env = Env::open(DIR, opts).unwrap();
    let a = env.create_dictionary("a", small_dict()).unwrap();
    let b = env.create_dictionary("b", small_dict()).unwrap();
    for i in 0..500 {
        a.put(&key(i), b"a").unwrap();
        b.put(&key(i), b"b").unwrap();
    }
    thread_local!(static WRITER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let (seen2, b2) = (seen.clone(), b.clone());
    let written = Arc::new(std::sync::atomic::AtomicU32::new(0));
    hook.set(Some(Arc::new(move |op, p: &Path| {
        let name = p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        if WRITER.with(|w| w.get()) || name.starts_with("log-") {
            return Ok(());
        }
        let (tx, rx) = mpsc::channel();
        let (b, i) = (b2.clone(), written.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        std::thread::spawn(move || {
            WRITER.with(|w| w.set(true));
            let k = format!("during-drop-{i}").into_bytes();
            let r = b.put(&k, b"x").and_then(|()| b.get(&k));
            let _ = tx.send(r.map(|v| v.is_some()));
        });
        let done = matches!(rx.recv_timeout(Duration::from_secs(20)), Ok(Ok(true)));
        seen2.lock().unwrap().push((format!("{op} {name}"), done));
        Ok(())
    })));
    env.drop_dictionary("a").unwrap();
    hook.set(None);
    let seen = seen.lock().unwrap().clone();
    let held: Vec<_> = seen.iter().filter(|(_, done)| !done).map(|(op, _)| op.clone()).collect();
    assert!(
        held.is_empty(),
        "a writer of another dictionary was held across the drop's {held:?} (of {seen:?})"
    );
    for op in ["fdatasync catalog.tmp", "rename catalog", "fsync folder db", "remove d1.fdb"] {
        assert!(seen.iter().any(|(o, _)| o == op), "the drop did no {op:?}: {seen:?}");
    }
    assert!(a.put(b"x", b"y").is_err(), "a dropped dictionary's handle must fail");
    assert_eq!(b.range(None, None, false).count(), 500 + seen.len());
    drop((a, b));
    env.close().unwrap();
}

/// A catalog change (create, rename, drop) holds no lock a checkpoint needs
/// across its catalog fsyncs: a checkpoint begun meanwhile takes the list of
/// open dictionaries under its exclusive lock, and if a catalog change held
/// that list across its fsync, every writer would wait behind the
/// checkpoint for the fsync. At the catalog's fsync in each change, a
/// checkpoint starts on one thread and, a moment later, a write to another
/// dictionary on another; the write must complete while the fsync is held.
/// (If the checkpoint has not reached its exclusive lock by then the check
/// is vacuous for that change; the waits are bounded only so a held writer
/// fails the test instead of hanging it.)
#[test]
fn a_checkpoint_during_a_catalog_change_does_not_hold_writers() {
    let sim = SimVfs::new(15);
    let hook = HookVfs::new(sim.boot());
    let opts = EnvOptions { vfs: Arc::new(hook.clone()), ..sim_opts(&sim, &[], false) };
    let env = Arc::new(Env::open(DIR, opts).unwrap());
    let b = env.create_dictionary("b", small_dict()).unwrap();
    for i in 0..200 {
        b.put(&key(i), b"b").unwrap();
    }
    thread_local!(static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let (seen2, b2, env2) = (seen.clone(), b.clone(), Arc::downgrade(&env));
    hook.set(Some(Arc::new(move |op, p: &Path| {
        let name = p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        if INSIDE.with(|w| w.get()) || name != "catalog.tmp" || op != "fdatasync" {
            return Ok(());
        }
        let Some(env) = env2.upgrade() else { return Ok(()) };
        let checkpoint = std::thread::spawn(move || {
            INSIDE.with(|w| w.set(true));
            env.checkpoint()
        });
        std::thread::sleep(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        let b = b2.clone();
        std::thread::spawn(move || {
            INSIDE.with(|w| w.set(true));
            let _ = tx.send(b.put(b"during-ddl", b"x").is_ok());
        });
        let done = matches!(rx.recv_timeout(Duration::from_secs(20)), Ok(true));
        seen2.lock().unwrap().push((format!("{op} {name}"), done));
        // Let the checkpoint finish before the change goes on (it does, now
        // or once the change lets go of what it holds).
        drop(checkpoint);
        Ok(())
    })));
    env.create_dictionary("a", small_dict()).unwrap();
    env.rename_dictionary("a", "a2").unwrap();
    env.drop_dictionary("a2").unwrap();
    hook.set(None);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "one catalog fsync per change: {seen:?}");
    assert!(
        seen.iter().all(|(_, done)| *done),
        "a writer was held behind a checkpoint across a catalog fsync: {seen:?}"
    );
    drop(b);
    Arc::try_unwrap(env).ok().expect("no other handle").close().unwrap();
}

type Hook = Arc<dyn Fn(&'static str, &Path) -> fractaldb::Result<()> + Send + Sync>;

/// A `Vfs` that runs a hook before each sync, folder sync, rename and
/// removal (an error from it fails the call), then passes the call on.
#[derive(Clone)]
struct HookVfs {
    inner: Arc<dyn Vfs>,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl std::fmt::Debug for HookVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HookVfs({:?})", self.inner)
    }
}

impl HookVfs {
    fn new(inner: Arc<dyn Vfs>) -> HookVfs {
        HookVfs { inner, hook: Arc::default() }
    }

    fn set(&self, hook: Option<Hook>) {
        *self.hook.lock().unwrap() = hook;
    }

    fn call(&self, op: &'static str, path: &Path) -> fractaldb::Result<()> {
        let hook = self.hook.lock().unwrap().clone();
        hook.map_or(Ok(()), |h| h(op, path))
    }
}

impl Vfs for HookVfs {
    fn open(&self, path: &Path, mode: OpenMode, direct: bool) -> fractaldb::Result<Arc<dyn VfsFile>> {
        let inner = self.inner.open(path, mode, direct)?;
        Ok(Arc::new(HookFile { inner, vfs: self.clone() }))
    }
    fn read_file(&self, path: &Path) -> fractaldb::Result<Option<Vec<u8>>> {
        self.inner.read_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> fractaldb::Result<()> {
        self.call("rename", to)?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> fractaldb::Result<()> {
        self.call("remove", path)?;
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> fractaldb::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> fractaldb::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> fractaldb::Result<()> {
        self.call("fsync folder", dir)?;
        self.inner.sync_dir(dir)
    }
    fn free_bytes(&self, dir: &Path) -> Option<u64> {
        self.inner.free_bytes(dir)
    }
    fn lock(&self, path: &Path) -> fractaldb::Result<Box<dyn Send + Sync>> {
        self.inner.lock(path)
    }
}

struct HookFile {
    inner: Arc<dyn VfsFile>,
    vfs: HookVfs,
}

impl VfsFile for HookFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn direct_io(&self) -> bool {
        self.inner.direct_io()
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> fractaldb::Result<()> {
        self.inner.read_at(off, buf)
    }
    fn write_at(&self, off: u64, data: &[u8]) -> fractaldb::Result<()> {
        self.inner.write_at(off, data)
    }
    fn sync(&self) -> fractaldb::Result<()> {
        self.vfs.call("fdatasync", self.inner.path())?;
        self.inner.sync()
    }
    fn len(&self) -> fractaldb::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> fractaldb::Result<()> {
        self.inner.set_len(len)
    }
    fn punch_hole(&self, off: u64, len: u64) -> fractaldb::Result<()> {
        self.inner.punch_hole(off, len)
    }
}

/// Messages already in a tree that name an update function the environment
/// was not opened with are the caller's set-up, not damage: the flush that
/// meets them is refused with `InvalidArgument` naming the function, never
/// reported as a corrupt block; nothing is lost, and opened again with the
/// function, they apply.
#[test]
fn buffered_updates_without_their_function_are_refused_not_called_corrupt() {
    let sim = SimVfs::new(5);
    let env = Env::open(DIR, sim_opts(&sim, &[ADD], false)).unwrap();
    let d = env.create_dictionary("c", small_dict()).unwrap();
    for i in 0..400u32 {
        d.put(format!("k{i:05}").as_bytes(), &[7; 40]).unwrap();
    }
    for _ in 0..30 {
        d.update(b"n", ADD, &1u64.to_le_bytes()).unwrap();
    }
    drop(d);
    env.close().unwrap();

    let env = Env::open(DIR, sim_opts(&sim, &[], false)).unwrap();
    let d = env.open_dictionary("c").unwrap();
    let err = env.optimize(&d, &mut |_| true).expect_err("a flush of updates without their function");
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("update function 1 is not registered")),
        "{err:?}"
    );
    drop(d);
    let _ = env.close();

    let env = Env::open(DIR, sim_opts(&sim, &[ADD], false)).unwrap();
    let d = env.open_dictionary("c").unwrap();
    assert_eq!(counter(d.get(b"n").unwrap()), 30);
    assert!(env.optimize(&d, &mut |_| true).unwrap());
    assert_eq!(counter(d.get(b"n").unwrap()), 30);
    assert_eq!(d.range(None, None, false).count(), 401);
    d.check().unwrap();
    drop(d);
    env.close().unwrap();
}
