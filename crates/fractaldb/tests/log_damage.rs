//! Damage in the newest log file, through the public API on `SimVfs`.
//!
//! The newest log file may end in a torn write: the unsynced end of the last
//! group commit before a crash, never acknowledged. Recovery cuts that off.
//! A damaged record that later records show was durable (each record says
//! which LSN the log had fsynced when it was appended) is media damage, and
//! `Env::open` fails with `Error::Corrupt` naming the file and the offset,
//! leaving the log as it found it. Nothing is cut until recovery succeeded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fractaldb::{Comparator, DictOptions, Env, EnvOptions, Error, SimVfs, Vfs};

const DIR: &str = "/db";
const PUTS: u32 = 200;

fn reverse(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    b.cmp(a)
}

fn opts(sim: &SimVfs, comparators: bool) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 1 << 20,
        background_threads: false,
        checkpoint_period: None,
        commit_sync: true,
        reserve_free_bytes: 0,
        comparators: if comparators { vec![("reverse".into(), reverse as Comparator)] } else { vec![] },
        vfs: sim.boot(),
        ..Default::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} {}", "v".repeat(i as usize % 40)).into_bytes()
}

/// An environment with one dictionary (named comparator "reverse") and
/// `PUTS` acknowledged puts, each fsynced before `put` returned, then a
/// power failure: the log was never emptied by a clean close.
fn crashed_env(seed: u64) -> Arc<SimVfs> {
    let sim = SimVfs::new(seed);
    let env = Env::open(DIR, opts(&sim, true)).unwrap();
    let d = env
        .create_dictionary("t", DictOptions { comparator: Some("reverse".into()), ..Default::default() })
        .unwrap();
    for i in 0..PUTS {
        d.put(&key(i), &value(i)).unwrap();
    }
    sim.crash();
    drop(d);
    drop(env);
    sim
}

/// The one log file holding records, and its bytes.
fn log_file(sim: &SimVfs) -> (PathBuf, Vec<u8>) {
    let mut logs: Vec<PathBuf> = sim
        .files()
        .into_iter()
        .filter(|f| f.len.is_some() && f.path.extension().is_some_and(|e| e == "fdl"))
        .map(|f| f.path)
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 1, "one log file: {logs:?}");
    let bytes = sim.read_durable(&logs[0]).unwrap();
    (logs.pop().unwrap(), bytes)
}

/// The frames of a log file: (LSN, offset, frame length), walking the
/// format of the file's version (1: 16-byte frame header, 2: 24 bytes).
fn frames(bytes: &[u8]) -> Vec<(u64, usize, usize)> {
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let head = if version == 1 { 16 } else { 24 };
    let mut out = Vec::new();
    let mut off = 24;
    while off + head <= bytes.len() {
        let len = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let lsn = u64::from_le_bytes(bytes[off + 8..off + 16].try_into().unwrap());
        if lsn == 0 || off + head + len > bytes.len() {
            break;
        }
        out.push((lsn, off, head + len));
        off += head + len;
    }
    out
}

/// Every put, read back.
fn assert_all_puts(env: &Env) {
    let d = env.open_dictionary("t").unwrap();
    for i in 0..PUTS {
        assert_eq!(d.get(&key(i)).unwrap(), Some(value(i)), "acknowledged put {i} lost");
    }
    d.check().unwrap();
}

#[test]
fn a_damaged_acknowledged_record_is_an_error_naming_file_and_offset() {
    let sim = crashed_env(1);
    let (path, before) = log_file(&sim);
    let recs = frames(&before);
    // The create record and the 200 puts.
    assert_eq!(recs.len(), PUTS as usize + 1, "{} records", recs.len());
    let (lsn, off, len) = recs[100];
    assert_eq!(lsn, 101);
    // One bit of record 101's payload.
    sim.corrupt(&path, (off + len - 3) as u64, 0x04);
    let damaged = sim.read_durable(&path).unwrap();
    let err = match Env::open(DIR, opts(&sim, true)) {
        Err(e) => e,
        Ok(env) => {
            let d = env.open_dictionary("t").unwrap();
            let lost = (0..PUTS).filter(|&i| d.get(&key(i)).unwrap().is_none()).count();
            let after = sim.read_durable(&path).map(|b| b.len());
            panic!(
                "open succeeded with record 101 of 201 damaged: {lost} acknowledged puts lost, \
                 log {} -> {after:?} bytes",
                before.len()
            );
        }
    };
    let msg = err.to_string();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(msg.contains(&*path.to_string_lossy()), "names the file: {msg}");
    assert!(msg.contains(&format!("byte {off}")), "names the offset {off}: {msg}");
    // The log is untouched: not cut, not written.
    assert_eq!(sim.read_durable(&path).unwrap(), damaged, "the log file changed");
    let v: Arc<dyn Vfs> = sim.boot();
    assert_eq!(v.read_file(&path).unwrap().unwrap(), damaged);
    // Repaired (say, from a replica), it opens with every put.
    sim.corrupt(&path, (off + len - 3) as u64, 0x04);
    let env = Env::open(DIR, opts(&sim, true)).unwrap();
    assert_all_puts(&env);
}

#[test]
fn a_damaged_length_field_is_found_by_the_records_after_it() {
    let sim = crashed_env(2);
    let (path, _) = log_file(&sim);
    let (_, off, _) = frames(&sim.read_durable(&path).unwrap())[150];
    // The length of record 151 now points far past the end of the file.
    sim.corrupt(&path, off as u64 + 2, 0x40);
    let err = Env::open(DIR, opts(&sim, true)).err().expect("a damaged acknowledged record opened");
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("byte {off}")), "{err}");
}

/// Appends what a torn, unacknowledged group-commit write leaves: the start
/// of a record after the last one, then garbage, in the file's unsynced end.
fn tear_tail(sim: &SimVfs, path: &Path) -> usize {
    let bytes = sim.read_durable(path).unwrap();
    let (_, off, len) = *frames(&bytes).last().unwrap();
    let end = off + len;
    let mut torn = bytes[off..end].to_vec();
    torn[8..16].copy_from_slice(&(PUTS as u64 + 2).to_le_bytes());
    torn.truncate(torn.len() / 2);
    torn.extend_from_slice(&[0xA5; 700]);
    let v: Arc<dyn Vfs> = sim.boot();
    let f = v.open(path, fractaldb::OpenMode::Existing, false).unwrap();
    f.write_at(end as u64, &torn).unwrap();
    f.sync().unwrap();
    end
}

#[test]
fn a_torn_tail_keeps_every_acknowledged_write_and_is_cut_only_after_recovery() {
    let sim = crashed_env(3);
    let (path, _) = log_file(&sim);
    let end = tear_tail(&sim, &path);
    let torn = sim.read_durable(&path).unwrap();
    assert!(torn.len() > end);
    // Recovery fails (the dictionary's comparator is not registered): the
    // log is left exactly as it was, torn tail included.
    let err = Env::open(DIR, opts(&sim, false)).err().expect("opened without the comparator");
    assert!(!err.is_corruption(), "{err}");
    assert_eq!(sim.read_durable(&path).unwrap(), torn, "the log changed though recovery failed");
    // Recovery succeeds: every acknowledged put is there, and the torn
    // bytes are gone from the log.
    let env = Env::open(DIR, opts(&sim, true)).unwrap();
    assert_all_puts(&env);
    let now = sim.read_durable(&path).unwrap();
    assert_eq!(now[..end], torn[..end], "acknowledged records changed");
    assert!(!now.windows(16).any(|w| w == [0xA5; 16]), "the torn tail was not cut");
    // And after another crash, the log reads back cleanly.
    sim.crash();
    drop(env);
    let env = Env::open(DIR, opts(&sim, true)).unwrap();
    assert_all_puts(&env);
    env.close().unwrap();
}

/// A bit flipped anywhere in the log of a crashed environment: open fails
/// with `Error::Corrupt` naming the log file and leaves it as it was, or
/// succeeds with every put but possibly the last (its record is the only
/// one no later record vouches for: damage to it looks like a torn write).
#[test]
fn flipped_bits_in_the_log_are_reported_or_lose_at_most_the_last_put() {
    let seed = std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7u64);
    println!("seed {seed} (FRACTALDB_SEED=<s> to replay)");
    let mut rng = seed;
    let mut next = move || {
        // xorshift64*: the test needs no more.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut sim = crashed_env(4);
    let (path, pristine) = log_file(&sim);
    let records_end = frames(&pristine).last().map(|&(_, o, l)| o + l).unwrap();
    let (mut reported, mut harmless, mut last_lost) = (0, 0, 0);
    for round in 0..120 {
        // Most flips inside the records, some in the padding after them.
        let limit = if round % 4 == 0 { pristine.len() } else { records_end };
        let at = (next() % limit as u64) as usize;
        let bit = 1u8 << (next() % 8);
        sim.corrupt(&path, at as u64, bit);
        let damaged = sim.read_durable(&path).unwrap();
        match Env::open(DIR, opts(&sim, true)) {
            Err(e) => {
                let msg = e.to_string();
                assert!(e.is_corruption(), "round {round}, byte {at}: {e:?}");
                assert!(msg.contains(&*path.to_string_lossy()), "round {round}: {msg}");
                assert_eq!(sim.read_durable(&path).unwrap(), damaged, "round {round}: the log changed");
                sim.corrupt(&path, at as u64, bit);
                reported += 1;
            }
            Ok(env) => {
                let d = env.open_dictionary("t").unwrap();
                let lost: Vec<u32> = (0..PUTS).filter(|&i| d.get(&key(i)).unwrap().is_none()).collect();
                assert!(lost.is_empty() || lost == [PUTS - 1], "round {round}, byte {at}: lost {lost:?}");
                for i in 0..PUTS - 1 {
                    assert_eq!(d.get(&key(i)).unwrap(), Some(value(i)), "round {round}");
                }
                if lost.is_empty() {
                    harmless += 1;
                } else {
                    assert!(at >= frames(&pristine).last().unwrap().1, "round {round}, byte {at}");
                    last_lost += 1;
                }
                drop(d);
                drop(env);
                // The log was written: start again from the crashed state.
                sim = crashed_env(4);
            }
        }
    }
    println!("{reported} reported, {harmless} harmless, {last_lost} lost the last put");
    assert!(reported > 60, "{reported} reported, {harmless} harmless");
    // The limit, stated: damage to the last record, which no later record
    // vouches for, ends the log like a torn write, and its put is lost.
    let sim = crashed_env(4);
    let (_, off, len) = *frames(&pristine).last().unwrap();
    sim.corrupt(&path, (off + len - 1) as u64, 0x01);
    let env = Env::open(DIR, opts(&sim, true)).unwrap();
    let d = env.open_dictionary("t").unwrap();
    assert_eq!(d.get(&key(PUTS - 2)).unwrap(), Some(value(PUTS - 2)));
    assert_eq!(d.get(&key(PUTS - 1)).unwrap(), None);
}

/// A log file gets its name only once its header is durable, so a newest
/// log file cut to nothing, cut inside its header or with its header
/// damaged is an error naming it (its acknowledged records are gone), with
/// the file left as it was: never an environment that opens without them.
#[test]
fn a_newest_log_file_cut_to_nothing_or_with_a_bad_header_is_an_error_naming_it() {
    for (what, seed) in [("cut to 0", 11), ("cut inside its header", 12), ("header bit flipped", 13)] {
        let sim = crashed_env(seed);
        let (path, before) = log_file(&sim);
        match what {
            "header bit flipped" => sim.corrupt(&path, 14, 0x01),
            _ => {
                let f = sim.boot().open(&path, fractaldb::OpenMode::Existing, false).unwrap();
                f.set_len(if what == "cut to 0" { 0 } else { 10 }).unwrap();
                f.sync().unwrap();
            }
        }
        let damaged = sim.read_durable(&path).unwrap();
        assert_ne!(damaged, before);
        let err = match Env::open(DIR, opts(&sim, true)) {
            Err(e) => e,
            Ok(env) => {
                let d = env.open_dictionary("t").unwrap();
                let lost = (0..PUTS).filter(|&i| d.get(&key(i)).unwrap().is_none()).count();
                panic!("{what}: opened, {lost} of {PUTS} acknowledged puts lost");
            }
        };
        assert!(err.is_corruption(), "{what}: {err:?}");
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{what}: {err}");
        assert_eq!(sim.read_durable(&path), Some(damaged), "{what}: the log file changed");
    }
}

fn log_name(first: u64) -> String {
    format!("log-{first:020}.fdl")
}

/// After a checkpoint trimmed the log, the oldest log file left holds
/// records the dictionaries' checkpoints need: removing it is an error,
/// not an environment that opens without them. (`log.trim` says which
/// file the log was trimmed to.)
#[test]
fn a_removed_oldest_log_file_is_an_error() {
    let sim = SimVfs::new(31);
    let opts = || EnvOptions { log_file_size_bytes: 16 << 10, ..opts(&sim, true) };
    let env = Env::open(DIR, opts()).unwrap();
    let d = env
        .create_dictionary("t", DictOptions { comparator: Some("reverse".into()), ..Default::default() })
        .unwrap();
    for round in 0..4 {
        for i in 0..PUTS {
            d.put(&key(i), &value(i + round)).unwrap();
        }
    }
    env.checkpoint().unwrap();
    // New keys: every put after the checkpoint shows.
    let after: Vec<u32> = (PUTS..3 * PUTS).collect();
    for &i in &after {
        d.put(&key(i), &value(i)).unwrap();
    }
    sim.crash();
    drop(d);
    drop(env);
    let mut logs: Vec<PathBuf> = sim
        .files()
        .into_iter()
        .filter(|f| f.len.is_some() && f.path.extension().is_some_and(|e| e == "fdl"))
        .map(|f| f.path)
        .collect();
    logs.sort();
    assert!(logs.len() >= 3 && !logs[0].ends_with(log_name(1)), "the checkpoint trimmed the log: {logs:?}");
    let v = sim.boot();
    v.remove(&logs[0]).unwrap();
    v.sync_dir(Path::new(DIR)).unwrap();
    match Env::open(DIR, opts()) {
        Err(e) => {
            assert!(e.is_corruption(), "{e:?}");
            assert!(e.to_string().contains("missing"), "{e}");
        }
        Ok(env) => {
            let d = env.open_dictionary("t").unwrap();
            let lost = after.iter().filter(|&&i| d.get(&key(i)).unwrap() != Some(value(i))).count();
            panic!("opened without {}: {lost} of {} acknowledged puts lost", logs[0].display(), after.len());
        }
    }
}
