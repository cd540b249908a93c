//! Crash tests: a child process writes with `commit_sync` on and is killed
//! with SIGKILL at random moments; after each kill the environment is
//! reopened (recovery runs) and checked:
//!
//! - every batch the child was told is durable is there, whole;
//! - no batch is half there: each batch's keys are all present or all absent;
//! - the batches present are a prefix of what the child wrote (per thread);
//! - deletes and overwrites survive too;
//! - `check()` passes.
//!
//! Thread 1 writes each batch as a transaction instead (repeatable read),
//! with one extra key written under a savepoint and rolled back: that key
//! must never appear, and a transaction open at the kill must leave nothing.
//!
//! One more thread (`COUNTER_THREAD`) writes counters by upserts (an update
//! function adding its argument, registered in the child and the verifier):
//! each of its batches adds known amounts to a few counters and puts its
//! number, and it reports each batch as soon as it is acknowledged, before
//! writing the next. After recovery each counter must equal the total of
//! the batches up to the number found, which must be the last acknowledged
//! or the one after it (in flight, whole or not at all): an upsert replayed
//! twice, or lost, shows. Every other round, an open without the update
//! function comes first; it fails when the log has upserts to replay, and
//! must leave the files as they were.
//!
//! The child is this test binary itself, started with `FRACTALDB_CRASH_CHILD`
//! set. Small nodes, a small cache, a 100 ms checkpoint period and 64 KiB log
//! files make kills land mid-flush, mid-split, mid-checkpoint and
//! mid-log-rollover.
//!
//! `FRACTALDB_CRASH_KILLS` sets the number of kills (default 12 in CI; the
//! nightly run is `FRACTALDB_CRASH_KILLS=1000 cargo test --release -p fractaldb
//! --test crash -- --nocapture`). `FRACTALDB_SEED` fixes the kill timing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fractaldb::{Codec, DictOptions, Env, EnvOptions, Isolation, UpdateFn, WriteBatch};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const THREADS: u64 = 3;
/// The thread writing counters by upserts reports its batches as this thread.
const COUNTER_THREAD: u64 = THREADS;
const COUNTERS: usize = 12;
/// The update function: adds its argument to the value (both u64 LE, an
/// absent value is 0).
const ADD: u8 = 1;

fn add_fn() -> UpdateFn {
    std::sync::Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let old = old.map_or(0, |o| u64::from_le_bytes(o.try_into().expect("a counter is 8 bytes")));
        let arg = u64::from_le_bytes(arg.try_into().expect("an amount is 8 bytes"));
        Some((old + arg).to_le_bytes().to_vec())
    })
}

fn env_opts() -> EnvOptions {
    EnvOptions {
        update_fns: vec![(ADD, add_fn())],
        cache_size_bytes: 1 << 20,
        commit_sync: true,
        checkpoint_period: Some(Duration::from_millis(100)),
        log_file_size_bytes: 64 << 10,
        direct_io: false,
        reserve_free_bytes: 0,
        ..Default::default()
    }
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

/// Keys of batch `i` of thread `t`: a few puts spread over the key space.
fn batch_keys(t: u64, i: u64) -> Vec<Vec<u8>> {
    let n = 1 + (i * 7 + t) % 9;
    (0..n)
        .map(|j| format!("k{:06}-{t}-{i:07}-{j}", (i * 7919 + j * 104729 + t * 31) % 100_000).into_bytes())
        .collect()
}

fn value(t: u64, i: u64, j: usize) -> Vec<u8> {
    let mut v = format!("v{t}-{i}-{j}-").into_bytes();
    v.resize(40 + (i as usize * 13 + j) % 200, b'x');
    v
}

/// The "latest" key of each thread is overwritten by every batch; the
/// "tmp" key of batch i is deleted by batch i + 3.
fn latest_key(t: u64) -> Vec<u8> {
    format!("latest-{t}").into_bytes()
}
fn tmp_key(t: u64, i: u64) -> Vec<u8> {
    format!("tmp-{t}-{i:07}").into_bytes()
}
/// Written under a savepoint and rolled back, in transactional batches.
fn junk_key(t: u64, i: u64) -> Vec<u8> {
    format!("junk-{t}-{i:07}").into_bytes()
}

fn counter_key(c: usize) -> Vec<u8> {
    format!("ctr-{c:02}").into_bytes()
}
/// Put by every counter batch: the number of the last one applied.
const COUNTER_LATEST: &[u8] = b"ctr-latest";

/// The upserts of counter batch `i`: (counter, amount).
fn counter_batch(i: u64) -> Vec<(usize, u64)> {
    (0..1 + i % 4).map(|j| (((i * 7 + j * 5) % COUNTERS as u64) as usize, 1 + (i * 31 + j) % 97)).collect()
}

/// Each counter's total over counter batches `0..=upto`, kept as batches
/// are added (the batch found after a kill only grows from round to round).
#[derive(Default)]
struct Tally {
    next: u64,
    totals: [u64; COUNTERS],
}

impl Tally {
    fn upto(&mut self, last: u64) -> [u64; COUNTERS] {
        assert!(self.next <= last + 1, "counter batch {last} found after batch {} was", self.next - 1);
        for i in self.next..=last {
            for (c, amount) in counter_batch(i) {
                self.totals[c] += amount;
            }
        }
        self.next = last + 1;
        self.totals
    }
}

/// Writes counter batches, reporting each on stdout once acknowledged and
/// before the next is written, so at most one is in flight at a kill.
fn counter_writer(d: fractaldb::Dictionary) {
    use std::io::Write;
    let start = d.get(COUNTER_LATEST).unwrap().map_or(0, |v| parse_latest(&v) + 1);
    let mut b = WriteBatch::new();
    for i in start.. {
        b.clear();
        b.put(COUNTER_LATEST, i.to_string().as_bytes());
        for (c, amount) in counter_batch(i) {
            b.update(&counter_key(c), ADD, &amount.to_le_bytes());
        }
        d.write(&b).unwrap();
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{COUNTER_THREAD} {i}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

fn child(dir: &Path) {
    let env = std::sync::Arc::new(Env::open(dir, env_opts()).unwrap());
    let d = match env.open_dictionary("crash") {
        Ok(d) => d,
        Err(_) => env.create_dictionary("crash", dict_opts()).unwrap(),
    };
    // Continue each thread's numbering after what survived.
    let (tx, rx) = mpsc::channel::<String>();
    let mut handles = Vec::new();
    let counters = d.clone();
    handles.push(std::thread::spawn(move || counter_writer(counters)));
    for t in 0..THREADS {
        let d = d.clone();
        let tx = tx.clone();
        let env = env.clone();
        handles.push(std::thread::spawn(move || {
            let start = d.get(&latest_key(t)).unwrap().map_or(0, |v| parse_latest(&v) + 1);
            for i in start.. {
                if t == 1 {
                    let txn = env.begin(Isolation::RepeatableRead).unwrap();
                    for (j, k) in batch_keys(t, i).iter().enumerate() {
                        txn.put(&d, k, &value(t, i, j)).unwrap();
                    }
                    let sp = txn.savepoint().unwrap();
                    txn.put(&d, &junk_key(t, i), b"junk").unwrap();
                    txn.rollback_to(sp).unwrap();
                    txn.put(&d, &latest_key(t), i.to_string().as_bytes()).unwrap();
                    txn.put(&d, &tmp_key(t, i), b"tmp").unwrap();
                    if i >= 3 {
                        txn.delete(&d, &tmp_key(t, i - 3)).unwrap();
                    }
                    txn.commit().unwrap();
                    if tx.send(format!("{t} {i}")).is_err() {
                        return;
                    }
                    continue;
                }
                let mut b = WriteBatch::new();
                for (j, k) in batch_keys(t, i).iter().enumerate() {
                    b.put(k, &value(t, i, j));
                }
                b.put(&latest_key(t), i.to_string().as_bytes());
                b.put(&tmp_key(t, i), b"tmp");
                if i >= 3 {
                    b.delete(&tmp_key(t, i - 3));
                }
                d.write(&b).unwrap();
                // Acknowledged: the parent may count on it from now on.
                if tx.send(format!("{t} {i}")).is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);
    let stdout = std::io::stdout();
    for line in rx {
        use std::io::Write;
        let mut out = stdout.lock();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    }
}

fn parse_latest(v: &[u8]) -> u64 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

/// Opens the environment after a kill and checks everything; returns the
/// highest batch present per thread.
fn verify(dir: &Path, acked: &BTreeMap<u64, u64>, tally: &mut Tally) -> BTreeMap<u64, u64> {
    let env = Env::open(dir, env_opts()).expect("recovery after a kill");
    let mut present = BTreeMap::new();
    let Ok(d) = env.open_dictionary("crash") else {
        assert!(acked.is_empty(), "the dictionary is gone but writes were acknowledged");
        return present;
    };
    d.check().expect("check() after recovery");
    for t in 0..THREADS {
        let last = d.get(&latest_key(t)).unwrap().map(|v| parse_latest(&v));
        if let Some(&a) = acked.get(&t) {
            assert!(
                last.is_some_and(|l| l >= a),
                "thread {t}: batch {a} was acknowledged, latest is {last:?}"
            );
        }
        let Some(last) = last else { continue };
        // Every batch up to `last` whole, with its values; none after it.
        for i in 0..=last + 2 {
            for (j, k) in batch_keys(t, i).iter().enumerate() {
                let got = d.get(k).unwrap();
                if i <= last {
                    assert_eq!(got, Some(value(t, i, j)), "thread {t} batch {i} key {j} (latest {last})");
                } else {
                    assert_eq!(
                        got, None,
                        "thread {t}: batch {i} after the latest {last} is (partly) present"
                    );
                }
            }
            assert_eq!(d.get(&junk_key(t, i)).unwrap(), None, "thread {t}: rolled-back key of batch {i}");
            let tmp = d.get(&tmp_key(t, i)).unwrap();
            let want = i <= last && i + 3 > last;
            assert_eq!(tmp.is_some(), want, "thread {t}: tmp key of batch {i} (latest {last})");
        }
        present.insert(t, last);
    }
    // The counters: exactly the totals of the batches up to the last one
    // present, which is the last acknowledged or the one in flight.
    let last = d.get(COUNTER_LATEST).unwrap().map(|v| parse_latest(&v));
    let floor = acked.get(&COUNTER_THREAD).copied();
    let ok = match (floor, last) {
        (Some(a), Some(l)) => l == a || l == a + 1,
        (None, l) => l.is_none_or(|l| l == 0),
        (Some(_), None) => false,
    };
    assert!(ok, "counter batches: {floor:?} acknowledged (or one more in flight), {last:?} present");
    let want = last.map_or([0; COUNTERS], |l| tally.upto(l));
    for (c, &want) in want.iter().enumerate() {
        let got =
            d.get(&counter_key(c)).unwrap().map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()));
        assert_eq!(got, want, "counter {c} after counter batch {last:?} (an upsert lost or applied twice)");
    }
    if let Some(l) = last {
        present.insert(COUNTER_THREAD, l);
    }
    env.close().unwrap();
    present
}

#[test]
fn killed_writers_lose_nothing_acknowledged() {
    if let Ok(dir) = std::env::var("FRACTALDB_CRASH_CHILD") {
        child(Path::new(&dir));
        return;
    }
    let kills: usize = std::env::var("FRACTALDB_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    let seed: u64 =
        std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("crash test seed {seed} (rerun with FRACTALDB_SEED={seed}), {kills} kills");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut tally = Tally::default();
    let started = Instant::now();
    for round in 0..kills {
        let mut child = Command::new(&exe)
            .args(["--exact", "killed_writers_lose_nothing_acknowledged", "--nocapture", "--test-threads=1"])
            .env("FRACTALDB_CRASH_CHILD", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let mut it = line.split(' ');
                let (Some(t), Some(i)) = (it.next(), it.next()) else { continue };
                if let (Ok(t), Ok(i)) = (t.parse::<u64>(), i.parse::<u64>()) {
                    if tx.send((t, i)).is_err() {
                        break;
                    }
                }
            }
        });
        // Kill after the child has acknowledged something, at a random moment.
        let wait = Duration::from_millis(rng.gen_range(50..700));
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got_any = false;
        let t0 = Instant::now();
        while Instant::now() < deadline && (!got_any || t0.elapsed() < wait) {
            if let Ok((t, i)) = rx.recv_timeout(Duration::from_millis(5)) {
                got_any = true;
                let a = acked.entry(t).or_insert(i);
                *a = (*a).max(i);
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("round {round}: the writer died on its own: {status}");
            }
        }
        assert!(got_any, "round {round}: the writer acknowledged nothing in 30 s");
        // SIGKILL: no destructors, no flushes, no close.
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        // Lines read after the kill were acknowledged before it.
        for (t, i) in rx.try_iter() {
            let a = acked.entry(t).or_insert(i);
            *a = (*a).max(i);
        }
        if round % 2 == 1 {
            // An open without the update function first: it fails if the
            // log has upserts to replay, and must then change nothing (a
            // failed open that wrote headers made the next one apply
            // upserts twice). If it succeeds there were none to replay.
            let opts = EnvOptions { update_fns: Vec::new(), ..env_opts() };
            match Env::open(dir.path(), opts) {
                Err(e) => eprintln!("round {round}: an open without the update function failed: {e}"),
                Ok(env) => drop(env),
            }
        }
        let present = verify(dir.path(), &acked, &mut tally);
        eprintln!("round {round}: acknowledged {acked:?}, present {present:?}");
        // What survived beyond the acknowledged is durable now (recovery checkpointed it).
        acked = present;
    }
    eprintln!("{kills} kills in {:.1} s", started.elapsed().as_secs_f64());
}
