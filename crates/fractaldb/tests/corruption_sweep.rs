//! The corruption sweep: for every file of a closed environment (the
//! catalog, each dictionary's `d<id>.fdb`, each `log-*.fdl`), of one closed
//! cleanly and of one whose log still holds acknowledged records (a power
//! failure on `SimVfs`), flip a bit, zero a range, truncate, at offsets
//! spread over the file (headers included), and remove the file; then open
//! the environment and read everything. The outcome must be an error that
//! names the damaged file, or exactly the acknowledged data: never a panic,
//! never rows silently missing or wrong. One exception, the log's stated
//! limit: the newest log file cut short, zeroed to its end or removed is
//! what a crash before those writes' fsync leaves, and no later record
//! vouches for them, so there the state after some prefix of the writes
//! made since the last checkpoint is accepted too (never a state that is
//! not such a prefix).
//!
//! Each file gets a sample of offsets (`FRACTALDB_SWEEP_OFFSETS=<n>` per
//! file and kind of damage, default 10; the first few are always in the
//! first 64 bytes). Every distinct failure is listed at the end with the
//! file, offset and what happened.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use fractaldb::{Codec, DictOptions, Env, EnvOptions, Error, OpenMode, SimVfs, UpdateFn, Vfs, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DIR: &str = "/sweep";
const APPEND: u8 = 7;

type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// The acknowledged writes made after the last checkpoint, oldest first:
/// per write, its dictionary and each key's value before it (`None`: the key
/// was absent). Undoing them from the end gives the state after any prefix
/// of them.
type History = Vec<(String, Vec<(Vec<u8>, Option<Vec<u8>>)>)>;

fn append() -> UpdateFn {
    Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let mut v = old.unwrap_or_default().to_vec();
        v.extend_from_slice(arg);
        Some(v)
    })
}

fn env_opts(vfs: Arc<dyn Vfs>) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 1 << 20,
        direct_io: false,
        background_threads: false,
        update_fns: vec![(APPEND, append())],
        vfs,
        commit_sync: true,
        checkpoint_period: None,
        log_file_size_bytes: 16 << 10,
        reserve_free_bytes: 0,
        ..Default::default()
    }
}

fn dict_opts(codec: Codec) -> DictOptions {
    DictOptions { node_size_bytes: 4096, basement_size_bytes: 512, fanout: 4, codec, comparator: None }
}

/// A closed environment's files, by name.
type Files = BTreeMap<String, Vec<u8>>;

/// Builds an environment with two dictionaries, a checkpoint in the middle
/// and writes after it; `crash`: ends with a power failure (every write was
/// acknowledged, so durable) instead of a close. Returns its files and the
/// acknowledged data.
fn build(crash: bool) -> (Files, Model, History) {
    let sim = SimVfs::new(7);
    sim.boot().create_dir_all(Path::new(DIR)).unwrap();
    let env = Env::open(DIR, env_opts(sim.boot())).unwrap();
    let mut model = Model::new();
    let mut rng = SmallRng::seed_from_u64(11);
    let dicts = [
        ("t", env.create_dictionary("t", dict_opts(Codec::Zstd)).unwrap()),
        ("u", env.create_dictionary("u", dict_opts(Codec::Lz4)).unwrap()),
    ];
    let mut history = History::new();
    let mut step = |phase: u32, n: u32, model: &mut Model, history: &mut History| {
        for i in 0..n {
            let (name, d) = &dicts[(i % 3 == 0) as usize];
            let before = model.clone();
            let m = model.entry(name.to_string()).or_default();
            let k = format!("key{:05}", rng.gen_range(0..2000)).into_bytes();
            match rng.gen_range(0..10) {
                0 => {
                    d.delete(&k).unwrap();
                    m.remove(&k);
                }
                1 => {
                    let arg = format!("+{phase}.{i}").into_bytes();
                    d.update(&k, APPEND, &arg).unwrap();
                    m.entry(k).or_default().extend_from_slice(&arg);
                }
                2 => {
                    let mut b = WriteBatch::new();
                    for j in 0..5 {
                        let k = format!("batch{phase}-{i}-{j}").into_bytes();
                        b.put(&k, b"b");
                        m.insert(k, b"b".to_vec());
                    }
                    d.write(&b).unwrap();
                }
                _ => {
                    let v = format!("value-{phase}-{i}-{}", "x".repeat(i as usize % 40)).into_bytes();
                    d.put(&k, &v).unwrap();
                    m.insert(k, v);
                }
            }
            if phase == 1 {
                let (old, new) = (&before.get(*name).cloned().unwrap_or_default(), &model[*name]);
                let changed: Vec<_> = new
                    .iter()
                    .filter(|(k, v)| old.get(*k) != Some(*v))
                    .map(|(k, _)| (k.clone(), old.get(k).cloned()))
                    .chain(
                        old.keys()
                            .filter(|k| !new.contains_key(*k))
                            .map(|k| (k.clone(), old.get(k).cloned())),
                    )
                    .collect();
                history.push((name.to_string(), changed));
            }
        }
    };
    step(0, 2500, &mut model, &mut history);
    env.run_cleaner(200).unwrap();
    env.checkpoint().unwrap();
    // After the checkpoint: these are only in the log until the next one.
    step(1, 1200, &mut model, &mut history);
    if crash {
        sim.crash_clean();
        drop(dicts);
        drop(env);
    } else {
        drop(dicts);
        env.close().unwrap();
    }
    let vfs = sim.boot();
    let mut files = Files::new();
    for name in vfs.list(Path::new(DIR)).unwrap() {
        if name == "LOCK" {
            continue;
        }
        let bytes = vfs.read_file(&Path::new(DIR).join(&name)).unwrap().unwrap();
        files.insert(name, bytes);
    }
    (files, model, history)
}

/// A fresh file system holding `files`, all durable.
fn install(files: &Files) -> Arc<SimVfs> {
    let sim = SimVfs::new(1);
    let vfs = sim.boot();
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    for (name, bytes) in files {
        let f = vfs.open(&Path::new(DIR).join(name), OpenMode::CreateNew, false).unwrap();
        if !bytes.is_empty() {
            f.write_at(0, bytes).unwrap();
        }
        f.sync().unwrap();
    }
    vfs.sync_dir(Path::new(DIR)).unwrap();
    sim
}

/// Opens the environment and reads every dictionary of the model whole
/// (scan and gets), then checks it. `Ok(Err(..))`: the engine reported an
/// error; `Err(..)`: it returned wrong data (described).
fn read_all(sim: &SimVfs, model: &Model, tail: Option<&History>) -> Result<Result<(), Error>, String> {
    match read_all_as(sim, model) {
        Err(wrong) => match tail {
            // Reads back as the state after some prefix of the writes made
            // since the checkpoint: only an unvouched tail of the newest log
            // file was lost (see `tail_loss`).
            Some(history)
                if read_state(sim, model)
                    .is_some_and(|got| prefix_states(model, history).any(|m| m == got)) =>
            {
                Ok(Ok(()))
            }
            _ => Err(wrong),
        },
        ok => ok,
    }
}

/// Whether zeroing bytes `from..to` of the newest log file `bytes` (format
/// version 2, ARCHITECTURE.md) leaves what a crash could: no whole record
/// after the damage vouches (its `synced`) for the first record it
/// touches. Such records were in the last group commits before the crash,
/// whose pages may land in any order, and recovery rightly ends the log at
/// them. (The file ends with zeros written ahead of its records, so damage
/// reaching its end is not the only such case.)
fn unvouched(bytes: &[u8], from: usize, to: usize) -> bool {
    // (offset, frame length, lsn, synced) of each record, in order.
    let mut frames = Vec::new();
    let mut off = 24;
    while off + 24 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let lsn = u64::from_le_bytes(bytes[off + 8..off + 16].try_into().unwrap());
        let synced = u64::from_le_bytes(bytes[off + 16..off + 24].try_into().unwrap());
        if lsn == 0 || off + 24 + len > bytes.len() {
            break;
        }
        frames.push((off, 24 + len, lsn, synced));
        off += 24 + len;
    }
    if from < 24 {
        return false; // the file's header: damage, never a crash's
    }
    let Some(&(_, _, hit, _)) = frames.iter().find(|&&(o, l, _, _)| o < to && from < o + l) else {
        return true; // only zeros after the records
    };
    !frames.iter().any(|&(o, _, _, synced)| o >= to && synced >= hit)
}

/// Every dictionary `model` names, as an environment opened on `sim` reads
/// it (None if anything fails).
fn read_state(sim: &SimVfs, model: &Model) -> Option<Model> {
    let env = Env::open(DIR, env_opts(sim.boot())).ok()?;
    let mut got = Model::new();
    for name in model.keys() {
        let d = env.open_dictionary(name).ok()?;
        let rows: Result<BTreeMap<_, _>, _> = d.range(None, None, false).collect();
        got.insert(name.clone(), rows.ok()?);
    }
    env.close().ok()?;
    Some(got)
}

/// The model after each prefix of `history`, the longest first.
fn prefix_states<'a>(model: &Model, history: &'a History) -> impl Iterator<Item = Model> + 'a {
    let mut state = model.clone();
    history.iter().rev().map(move |(name, changed)| {
        let m = state.entry(name.clone()).or_default();
        for (k, old) in changed {
            match old {
                Some(v) => m.insert(k.clone(), v.clone()),
                None => m.remove(k),
            };
        }
        state.clone()
    })
}

fn read_all_as(sim: &SimVfs, model: &Model) -> Result<Result<(), Error>, String> {
    let env = match Env::open(DIR, env_opts(sim.boot())) {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let mut names = env.list_dictionaries();
    names.sort();
    let want: Vec<&String> = model.keys().collect();
    if names.iter().collect::<Vec<_>>() != want {
        return Err(format!("dictionaries listed {names:?}, acknowledged {want:?}"));
    }
    for (name, m) in model {
        let d = match env.open_dictionary(name) {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        let mut rows = Vec::new();
        for r in d.range(None, None, false) {
            match r {
                Ok(kv) => rows.push(kv),
                Err(e) => return Ok(Err(e)),
            }
        }
        let expect: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if rows != expect {
            let missing = expect.iter().filter(|kv| !rows.contains(kv)).count();
            let extra = rows.iter().filter(|kv| !expect.contains(kv)).count();
            return Err(format!(
                "dictionary {name}: {} rows read, {} acknowledged; {missing} acknowledged rows missing or different, {extra} rows not acknowledged",
                rows.len(),
                expect.len()
            ));
        }
        for (k, v) in m.iter().step_by(13) {
            match d.get(k) {
                Ok(Some(got)) if &got == v => {}
                Ok(got) => {
                    return Err(format!(
                        "dictionary {name}: get {:?} = {:?}",
                        String::from_utf8_lossy(k),
                        got.map(|g| g.len())
                    ))
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        if let Err(e) = d.check() {
            return Ok(Err(e));
        }
    }
    match env.close() {
        Ok(()) => Ok(Ok(())),
        Err(e) => Ok(Err(e)),
    }
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip { at: usize, bit: u8 },
    Zero { at: usize, len: usize },
    Truncate { at: usize },
    Remove,
}

fn apply(bytes: &[u8], d: Damage) -> Option<Vec<u8>> {
    let mut b = bytes.to_vec();
    match d {
        Damage::Flip { at, bit } => b[at] ^= 1 << bit,
        Damage::Zero { at, len } => {
            let end = (at + len).min(b.len());
            b[at..end].fill(0);
        }
        Damage::Truncate { at } => b.truncate(at),
        Damage::Remove => return None,
    }
    Some(b)
}

/// Offsets to damage in a file of `len` bytes: the first bytes (magic,
/// version, lengths, checksums) and a spread over the rest.
fn offsets(len: usize, n: usize, rng: &mut SmallRng) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    let mut v: Vec<usize> =
        [0, 4, 8, 12, 16, 20, 24].into_iter().filter(|&o| o < len).take(n.clamp(1, 7)).collect();
    for i in 0..n {
        // Evenly spread, jittered within its slice.
        let lo = len * i / n;
        let hi = (len * (i + 1) / n).max(lo + 1).min(len);
        v.push(rng.gen_range(lo..hi));
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn kind_of_file(name: &str) -> &'static str {
    if name == "catalog" {
        "catalog"
    } else if name.ends_with(".fdb") {
        "dictionary"
    } else if name.ends_with(".fdl") {
        "log"
    } else {
        "other"
    }
}

/// Runs the sweep over one environment's files; returns the failures.
fn sweep(label: &str, files: &Files, model: &Model, history: &History) -> BTreeMap<String, String> {
    let n: usize = std::env::var("FRACTALDB_SWEEP_OFFSETS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut rng = SmallRng::seed_from_u64(3);
    let mut failures = BTreeMap::new();
    let mut fail = |kind: String, what: String| {
        if let std::collections::btree_map::Entry::Vacant(e) = failures.entry(kind) {
            eprintln!("{label}: FAILURE [{}] {what}", e.key());
            e.insert(what);
        }
    };
    // The undamaged environment reads back whole.
    match read_all(&install(files), model, None) {
        Ok(Ok(())) => {}
        other => panic!("{label}: the undamaged environment does not read back: {other:?}"),
    }
    let (mut trials, mut reported, mut harmless) = (0, 0, 0);
    for (name, bytes) in files {
        let mut damages = vec![Damage::Remove];
        for at in offsets(bytes.len(), n, &mut rng) {
            damages.push(Damage::Flip { at, bit: rng.gen_range(0..8) });
            damages.push(Damage::Zero { at, len: rng.gen_range(1..4096) });
        }
        for at in offsets(bytes.len(), n, &mut rng) {
            damages.push(Damage::Truncate { at });
        }
        for damage in damages {
            trials += 1;
            let mut damaged = files.clone();
            match apply(bytes, damage) {
                Some(b) => {
                    damaged.insert(name.clone(), b);
                }
                None => {
                    damaged.remove(name);
                }
            }
            let sim = install(&damaged);
            let what = format!("{name} ({} bytes), {damage:?}", bytes.len());
            let dmg = match damage {
                Damage::Flip { .. } => "flip",
                Damage::Zero { .. } => "zero",
                Damage::Truncate { .. } => "truncate",
                Damage::Remove => "remove",
            };
            let at_header = match damage {
                Damage::Flip { at, .. } | Damage::Zero { at, .. } | Damage::Truncate { at } => at < 64,
                Damage::Remove => false,
            };
            let region = if at_header { "header" } else { "body" };
            let class = format!("{} {dmg} ({region})", kind_of_file(name));
            // The newest log file's tail cut off, zeroed or the file gone
            // is what a crash before those writes' fsync leaves: nothing
            // later vouches for them (ARCHITECTURE.md, the log), so a state
            // after a prefix of the writes is as right as an error.
            let newest_log = files.keys().rev().find(|n| n.ends_with(".fdl")) == Some(name);
            let tail_loss = newest_log
                && match damage {
                    Damage::Truncate { .. } | Damage::Remove => true,
                    Damage::Zero { at, len } => unvouched(bytes, at, at + len),
                    Damage::Flip { .. } => false,
                };
            let tail = tail_loss.then_some(history);
            match catch_unwind(AssertUnwindSafe(|| read_all(&sim, model, tail))) {
                Err(p) => {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    fail(format!("{class}: panic"), format!("{what}: panicked: {msg}"));
                }
                Ok(Err(wrong)) => fail(format!("{class}: wrong data, no error"), format!("{what}: {wrong}")),
                Ok(Ok(Ok(()))) => harmless += 1,
                Ok(Ok(Err(e))) => {
                    reported += 1;
                    let msg = e.to_string();
                    // A removed file cannot be named (the error must still be
                    // a corruption error); recovery reads the log files as one
                    // stream, so a short or missing log file may be reported
                    // against the next one ("not contiguous").
                    let named = msg.contains(name.as_str())
                        || matches!(damage, Damage::Remove)
                        || (name.ends_with(".fdl") && msg.contains(".fdl"));
                    let clear = e.is_corruption() || matches!(e, Error::Io { .. });
                    if !named || !clear {
                        fail(
                            format!(
                                "{class}: error does not name the file or is not a corruption/I/O error ({})",
                                error_kind(&e)
                            ),
                            format!("{what}: {msg}"),
                        );
                    }
                }
            }
        }
    }
    println!(
        "{label}: {trials} trials, {reported} reported, {harmless} read back whole, {} distinct failures",
        failures.len()
    );
    failures
}

fn error_kind(e: &Error) -> String {
    format!("{e:?}").split([' ', '(', '{']).next().unwrap_or("").to_string()
}

fn finish(label: &str, failures: BTreeMap<String, String>) {
    if !failures.is_empty() {
        let list: Vec<String> = failures.iter().map(|(k, v)| format!("  [{k}] {v}")).collect();
        panic!("{label}: {} distinct failures:\n{}", failures.len(), list.join("\n"));
    }
}

#[test]
fn sweep_a_cleanly_closed_environment() {
    let (files, model, history) = build(false);
    let names: Vec<(&String, usize)> = files.iter().map(|(n, b)| (n, b.len())).collect();
    println!("clean close: files {names:?}");
    assert!(files.keys().any(|n| n.ends_with(".fdl")) && files.contains_key("catalog"));
    let failures = sweep("clean close", &files, &model, &history);
    finish("clean close", failures);
}

#[test]
fn sweep_an_environment_whose_log_holds_records() {
    let (files, model, history) = build(true);
    let names: Vec<(&String, usize)> = files.iter().map(|(n, b)| (n, b.len())).collect();
    println!("power failure: files {names:?}");
    let logs: usize = files.iter().filter(|(n, _)| n.ends_with(".fdl")).map(|(_, b)| b.len()).sum();
    assert!(logs > 16 << 10, "the log must hold the writes made after the checkpoint ({logs} bytes)");
    let failures = sweep("power failure", &files, &model, &history);
    finish("power failure", failures);
}
