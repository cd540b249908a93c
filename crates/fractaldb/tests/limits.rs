//! The limits on what callers may pass in (`fractaldb::MAX_KEY_BYTES`,
//! `MAX_VALUE_BYTES`, `MAX_BATCH_BYTES`) and on dictionary settings
//! (`MIN_NODE_BYTES` ... `MAX_FANOUT`): at the limit everything works
//! (put, get, scan, reopen, `check`), past it every entry point refuses
//! with `Error::TooLarge` (or `InvalidArgument` for settings) before it
//! copies anything, writes nothing, and the environment stays writable.
//!
//! The tests take one lock so they run one at a time: some hold hundreds
//! of MiB, and one measures the process's resident memory.

use std::sync::{Arc, Mutex};

use fractaldb::{
    Codec, DictOptions, Dictionary, Env, EnvOptions, Error, Isolation, SimVfs, UpdateFn, WriteBatch,
    MAX_BATCH_BYTES, MAX_FANOUT, MAX_KEY_BYTES, MAX_NODE_BYTES, MAX_VALUE_BYTES, MIN_BASEMENT_BYTES,
    MIN_FANOUT, MIN_NODE_BYTES,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Update function 1 appends its argument to the value.
fn opts() -> EnvOptions {
    let append: UpdateFn = Arc::new(|_k: &[u8], old: Option<&[u8]>, arg: &[u8]| {
        let mut v = old.unwrap_or_default().to_vec();
        v.extend_from_slice(arg);
        Some(v)
    });
    EnvOptions {
        cache_size_bytes: 64 << 20,
        update_fns: vec![(1, append)],
        // The limits tests write a few hundred MiB of log; the reserve
        // check is not what they are about.
        reserve_free_bytes: 0,
        ..Default::default()
    }
}

/// The smallest settings a dictionary may have.
fn smallest() -> DictOptions {
    DictOptions {
        node_size_bytes: MIN_NODE_BYTES,
        basement_size_bytes: MIN_BASEMENT_BYTES,
        fanout: MIN_FANOUT,
        codec: Codec::Lz4,
        comparator: None,
    }
}

/// A key of `len` bytes, all `b`.
fn big_key(b: u8, len: usize) -> Vec<u8> {
    vec![b; len]
}

/// A value of `len` bytes that is not all one byte (so compression and
/// copies are exercised), starting with `tag`.
fn big_value(tag: u8, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[3]).collect();
    if let Some(first) = v.first_mut() {
        *first = tag;
    }
    v
}

fn is_too_large<T: std::fmt::Debug>(r: &fractaldb::Result<T>, what: &str, len: usize, limit: usize) -> bool {
    matches!(r, Err(Error::TooLarge { what: w, len: l, limit: m })
        if *w == what && *l == len as u64 && *m == limit as u64)
}

/// Collects what each call did, so one run reports every entry point that
/// does not refuse, not just the first.
#[derive(Default)]
struct Outcomes(Vec<String>);

impl Outcomes {
    fn expect<T: std::fmt::Debug>(
        &mut self,
        call: &str,
        r: fractaldb::Result<T>,
        what: &str,
        len: usize,
        limit: usize,
    ) {
        if !is_too_large(&r, what, len, limit) {
            self.0.push(format!("{call}: expected TooLarge {{ {what}, {len}, {limit} }}, got {r:?}"));
        }
    }

    fn assert_none(self) {
        assert!(self.0.is_empty(), "calls past the limits were not refused:\n{}", self.0.join("\n"));
    }
}

/// Every entry point taking a key, with `key`, must refuse it.
fn refuse_key(env: &Env, d: &Dictionary, key: &[u8], out: &mut Outcomes) {
    let (len, limit) = (key.len(), MAX_KEY_BYTES);
    out.expect("Dictionary::put", d.put(key, b"v"), "key", len, limit);
    out.expect("Dictionary::delete", d.delete(key), "key", len, limit);
    out.expect("Dictionary::update", d.update(key, 1, b"a"), "key", len, limit);
    out.expect("Dictionary::get", d.get(key), "key", len, limit);
    let mut b = WriteBatch::new();
    b.put(b"ok", b"v");
    b.put(key, b"v");
    out.expect("Dictionary::write (put)", d.write(&b), "key", len, limit);
    let mut b = WriteBatch::new();
    b.delete(key);
    out.expect("Dictionary::write (delete)", d.write(&b), "key", len, limit);
    let mut b = WriteBatch::new();
    b.update(key, 1, b"a");
    out.expect("Dictionary::write (update)", d.write(&b), "key", len, limit);
    let mut c = d.cursor();
    out.expect("Cursor::seek_ge", c.seek_ge(key), "key", len, limit);
    out.expect("Cursor::seek_le", c.seek_le(key), "key", len, limit);
    for (name, lo, hi, rev) in [
        ("range lo", Some(key), None, false),
        ("range hi", None, Some(key), false),
        ("range lo reverse", Some(key), None, true),
        ("range hi reverse", None, Some(key), true),
    ] {
        let first = d.range(lo, hi, rev).next();
        match first {
            Some(r) => out.expect(&format!("Dictionary::{name}"), r, "key", len, limit),
            None => out.0.push(format!("Dictionary::{name}: expected TooLarge, got an empty range")),
        }
    }
    for iso in [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable] {
        let t = env.begin(iso).unwrap();
        out.expect(&format!("Txn::put {iso:?}"), t.put(d, key, b"v"), "key", len, limit);
        out.expect(&format!("Txn::delete {iso:?}"), t.delete(d, key), "key", len, limit);
        out.expect(&format!("Txn::update {iso:?}"), t.update(d, key, 1, b"a"), "key", len, limit);
        out.expect(&format!("Txn::get {iso:?}"), t.get(d, key), "key", len, limit);
        out.expect(&format!("Txn::get_for_update {iso:?}"), t.get_for_update(d, key), "key", len, limit);
        let mut b = WriteBatch::new();
        b.put(key, b"v");
        out.expect(&format!("Txn::write_batch {iso:?}"), t.write_batch(d, &b), "key", len, limit);
        let first = t.range(d, Some(key), None, false).next();
        match first {
            Some(r) => out.expect(&format!("Txn::range {iso:?}"), r, "key", len, limit),
            None => out.0.push(format!("Txn::range {iso:?}: expected TooLarge, got an empty range")),
        }
        let mut c = t.cursor(d);
        out.expect(&format!("Txn cursor seek_ge {iso:?}"), c.seek_ge(key), "key", len, limit);
        t.commit().unwrap();
    }
}

/// Every entry point taking a value or an update argument, with `value`,
/// must refuse it.
fn refuse_value(env: &Env, d: &Dictionary, value: &[u8], out: &mut Outcomes) {
    let (len, limit) = (value.len(), MAX_VALUE_BYTES);
    out.expect("Dictionary::put", d.put(b"k", value), "value", len, limit);
    out.expect("Dictionary::update", d.update(b"k", 1, value), "update argument", len, limit);
    let r = d.broadcast_update(1, value);
    out.expect("Dictionary::broadcast_update", r, "update argument", len, limit);
    let mut b = WriteBatch::new();
    b.put(b"a", b"small");
    b.put(b"k", value);
    out.expect("Dictionary::write (put)", d.write(&b), "value", len, limit);
    let mut b = WriteBatch::new();
    b.update(b"k", 1, value);
    out.expect("Dictionary::write (update)", d.write(&b), "update argument", len, limit);
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    out.expect("Txn::put", t.put(d, b"k", value), "value", len, limit);
    out.expect("Txn::update", t.update(d, b"k", 1, value), "update argument", len, limit);
    let mut b = WriteBatch::new();
    b.put(b"k", value);
    out.expect("Txn::write_batch", t.write_batch(d, &b), "value", len, limit);
    t.commit().unwrap();
}

/// After refused calls: nothing of them was written, the environment
/// still takes writes, and the dictionary checks.
fn still_writable_and_unchanged(d: &Dictionary) {
    assert_eq!(d.get(b"k").unwrap(), None, "a refused write left something");
    assert_eq!(d.get(b"a").unwrap(), None, "part of a refused batch was written");
    d.put(b"after", b"ok").unwrap();
    assert_eq!(d.get(b"after").unwrap(), Some(b"ok".to_vec()));
    d.delete(b"after").unwrap();
    d.check().unwrap();
}

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// At the limits: three keys of `MAX_KEY_BYTES` with values of
/// `MAX_VALUE_BYTES` (by put, in a batch, by an upsert whose argument is at
/// the limit) among small keys, in a default dictionary and in one with the
/// smallest settings allowed: reads, scans, seeks and `check` see them, after
/// the cleaner's work, a clean reopen, and a power failure (log replay).
#[test]
fn keys_and_values_at_the_limits_work_and_survive_reopen() {
    let _serial = serial();
    for (seed, (name, dict)) in
        [("default", DictOptions::default()), ("smallest", smallest())].into_iter().enumerate()
    {
        let sim = SimVfs::new(seed as u64);
        let env_opts =
            || EnvOptions { vfs: sim.boot(), direct_io: false, background_threads: false, ..opts() };
        let dir = std::path::Path::new("/limits/db");
        let env = Env::open(dir, env_opts()).unwrap();
        let d = env.create_dictionary(name, dict.clone()).unwrap();
        let (ka, kb, kc) =
            (big_key(b'a', MAX_KEY_BYTES), big_key(b'b', MAX_KEY_BYTES), big_key(b'c', MAX_KEY_BYTES));
        let (va, vb, vc) =
            (big_value(1, MAX_VALUE_BYTES), big_value(2, MAX_VALUE_BYTES), big_value(3, MAX_VALUE_BYTES));
        d.put(&ka, &va).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(&kb, &vb);
        batch.put(b"b-small", b"2");
        d.write(&batch).unwrap();
        drop(batch);
        let t = env.begin(Isolation::RepeatableRead).unwrap();
        t.update(&d, &kc, 1, &vc).unwrap();
        t.commit().unwrap();
        for i in 0..200u32 {
            d.put(format!("s{i:04}").as_bytes(), &i.to_le_bytes()).unwrap();
        }
        let expect = |d: &Dictionary, va: &[u8]| {
            assert_eq!(d.get(&ka).unwrap().as_deref(), Some(va), "{name}: key a");
            assert_eq!(d.get(&kb).unwrap().as_deref(), Some(&vb[..]), "{name}: key b");
            assert_eq!(d.get(&kc).unwrap().as_deref(), Some(&vc[..]), "{name}: key c");
            let rows: Vec<(Vec<u8>, Vec<u8>)> = d.range(None, None, false).map(|r| r.unwrap()).collect();
            assert_eq!(rows.len(), 204, "{name}: a scan sees every row");
            assert_eq!((&rows[0].0[..], &rows[0].1[..]), (&ka[..], va));
            // "b-small" sorts before 32 KiB of b'b'.
            assert_eq!(rows[1].0, b"b-small");
            assert_eq!((&rows[2].0, &rows[2].1), (&kb, &vb));
            assert_eq!((&rows[3].0, &rows[3].1), (&kc, &vc));
            let mut c = d.cursor();
            assert!(c.seek_ge(&kb).unwrap());
            assert_eq!(c.key(), Some(&kb[..]));
            assert!(c.seek_le(&kc).unwrap());
            assert_eq!(c.key(), Some(&kc[..]));
            let back: Vec<Vec<u8>> = d.range(Some(&ka), Some(&kc), true).map(|r| r.unwrap().0).collect();
            assert_eq!(back, vec![kb.clone(), b"b-small".to_vec(), ka.clone()]);
            d.check().unwrap();
        };
        expect(&d, &va);
        env.run_cleaner(1000).unwrap();
        expect(&d, &va);
        env.close().unwrap();
        let env = Env::open(dir, env_opts()).unwrap();
        let d = env.open_dictionary(name).unwrap();
        expect(&d, &va);
        // A record at the limit is replayed after a power failure.
        d.put(&ka, &vb).unwrap();
        sim.crash();
        drop(d);
        drop(env);
        let env = Env::open(dir, env_opts()).unwrap();
        let d = env.open_dictionary(name).unwrap();
        expect(&d, &vb);
        env.close().unwrap();
    }
}

#[test]
fn keys_and_values_just_over_the_limits_are_refused_everywhere() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    let d = env.create_dictionary("d", DictOptions::default()).unwrap();
    let mut out = Outcomes::default();
    refuse_key(&env, &d, &big_key(b'k', MAX_KEY_BYTES + 1), &mut out);
    refuse_value(&env, &d, &big_value(9, MAX_VALUE_BYTES + 1), &mut out);
    out.assert_none();
    still_writable_and_unchanged(&d);
    env.close().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    let d = env.open_dictionary("d").unwrap();
    assert_eq!(d.range(None, None, false).count(), 0, "nothing refused was written");
    d.check().unwrap();
}

/// Far past the limits: a 1 MiB key, values of 100 MiB, 1 GiB and 5 GiB.
/// The big values are zeroed allocations the OS maps lazily, so they cost
/// no memory unless something copies or reads them: the process's
/// resident memory shows that the check comes before any copy.
#[test]
fn far_over_the_limits_is_refused_before_anything_is_copied() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    let d = env.create_dictionary("d", DictOptions::default()).unwrap();
    let mut out = Outcomes::default();
    refuse_key(&env, &d, &big_key(b'k', 1 << 20), &mut out);
    out.assert_none();
    for len in [100usize << 20, 1 << 30, 5 << 30] {
        let before = resident_bytes();
        let value = vec![0u8; len];
        let mut out = Outcomes::default();
        refuse_value(&env, &d, &value, &mut out);
        // A batch that would hold it refuses it as it is added: the batch
        // does not copy it.
        let mut b = WriteBatch::new();
        b.put(b"k", &value);
        out.expect("WriteBatch::put then write", d.write(&b), "value", len, MAX_VALUE_BYTES);
        let grown = resident_bytes().saturating_sub(before);
        drop(b);
        drop(value);
        out.assert_none();
        assert!(grown < 256 << 20, "refusing a {len}-byte value made the process {grown} bytes larger");
        still_writable_and_unchanged(&d);
    }
    env.close().unwrap();
}

/// One batch is bounded as a whole (`MAX_BATCH_BYTES`, so its log record's
/// length always fits the record's u32): values each within the limit add
/// up past it. The batch refuses the change that would cross the limit and
/// keeps none of it; writing it is refused and writes nothing.
#[test]
fn a_batch_past_the_batch_limit_is_refused_whole() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    let d = env.create_dictionary("d", DictOptions::default()).unwrap();
    let value = big_value(5, MAX_VALUE_BYTES);
    let mut b = WriteBatch::new();
    b.put(b"a", b"small");
    let n = MAX_BATCH_BYTES / MAX_VALUE_BYTES;
    for i in 0..n {
        b.put(format!("k{i}").as_bytes(), &value);
    }
    let r = d.write(&b);
    assert!(
        matches!(r, Err(Error::TooLarge { what: "batch", limit, .. }) if limit == MAX_BATCH_BYTES as u64),
        "{r:?}"
    );
    let t = env.begin(Isolation::ReadCommitted).unwrap();
    let r = t.write_batch(&d, &b);
    assert!(matches!(r, Err(Error::TooLarge { what: "batch", .. })), "{r:?}");
    t.commit().unwrap();
    drop(b);
    assert_eq!(d.get(b"k0").unwrap(), None);
    still_writable_and_unchanged(&d);
    // Cleared, the same batch takes changes again.
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(format!("k{i}").as_bytes(), &value);
    }
    b.clear();
    b.put(b"k0", &value);
    d.write(&b).unwrap();
    assert_eq!(d.get(b"k0").unwrap().as_deref(), Some(&value[..]));
    d.check().unwrap();
}

/// The empty key is a key like any other: the least one.
#[test]
fn the_empty_key_is_a_valid_key() {
    let _serial = serial();
    for dict in [DictOptions::default(), smallest()] {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::open(dir.path(), EnvOptions { background_threads: false, ..opts() }).unwrap();
        let d = env.create_dictionary("d", dict).unwrap();
        d.put(b"", b"empty").unwrap();
        for i in 0..300u32 {
            d.put(format!("k{i:04}").as_bytes(), &[b'x'; 40]).unwrap();
        }
        d.update(b"", 1, b"+").unwrap();
        let check = |d: &Dictionary| {
            assert_eq!(d.get(b"").unwrap(), Some(b"empty+".to_vec()));
            let first = d.range(None, None, false).next().unwrap().unwrap();
            assert_eq!(first, (b"".to_vec(), b"empty+".to_vec()));
            let first = d.range(Some(b""), Some(b"k0001"), false).map(|r| r.unwrap().0).collect::<Vec<_>>();
            assert_eq!(first, vec![b"".to_vec(), b"k0000".to_vec()]);
            let last = d.range(None, Some(b"k0000"), true).map(|r| r.unwrap().0).collect::<Vec<_>>();
            assert_eq!(last, vec![b"".to_vec()]);
            let mut c = d.cursor();
            assert!(c.seek_le(b"").unwrap());
            assert_eq!((c.key(), c.value()), (Some(&b""[..]), Some(&b"empty+"[..])));
            assert!(c.seek_ge(b"").unwrap());
            assert_eq!(c.key(), Some(&b""[..]));
            assert!(!c.prev().unwrap());
            d.check().unwrap();
        };
        check(&d);
        env.run_cleaner(1000).unwrap();
        check(&d);
        env.close().unwrap();
        let env = Env::open(dir.path(), EnvOptions { background_threads: false, ..opts() }).unwrap();
        let d = env.open_dictionary("d").unwrap();
        check(&d);
        let t = env.begin(Isolation::Serializable).unwrap();
        assert_eq!(t.get_for_update(&d, b"").unwrap(), Some(b"empty+".to_vec()));
        t.delete(&d, b"").unwrap();
        t.commit().unwrap();
        assert_eq!(d.get(b"").unwrap(), None);
        let mut b = WriteBatch::new();
        b.put(b"", b"again");
        d.write(&b).unwrap();
        assert_eq!(d.get(b"").unwrap(), Some(b"again".to_vec()));
        d.check().unwrap();
    }
}

/// Settings outside what the code and the file format hold are refused at
/// create with `InvalidArgument`, and leave no dictionary behind; settings
/// at the bounds work and reopen as they were made.
#[test]
fn dictionary_settings_are_checked_at_create() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    let base = DictOptions::default();
    let bad = [
        ("node 4 GiB", DictOptions { node_size_bytes: 4 << 30, ..base.clone() }),
        ("node 4 GiB + 4096", DictOptions { node_size_bytes: (4 << 30) + 4096, ..base.clone() }),
        ("node usize::MAX", DictOptions { node_size_bytes: usize::MAX, ..base.clone() }),
        ("node 0", DictOptions { node_size_bytes: 0, ..base.clone() }),
        ("node past the max", DictOptions { node_size_bytes: MAX_NODE_BYTES + 1, ..base.clone() }),
        (
            "node below the min",
            DictOptions { node_size_bytes: MIN_NODE_BYTES - 1, basement_size_bytes: 64, ..base.clone() },
        ),
        ("basement 0", DictOptions { basement_size_bytes: 0, ..base.clone() }),
        (
            "basement below the min",
            DictOptions { basement_size_bytes: MIN_BASEMENT_BYTES - 1, ..base.clone() },
        ),
        ("basement past the node", DictOptions { basement_size_bytes: (1 << 20) + 1, ..base.clone() }),
        ("basement usize::MAX", DictOptions { basement_size_bytes: usize::MAX, ..base.clone() }),
        ("fanout 0", DictOptions { fanout: 0, ..base.clone() }),
        ("fanout 1", DictOptions { fanout: 1, ..base.clone() }),
        ("fanout past the max", DictOptions { fanout: MAX_FANOUT + 1, ..base.clone() }),
        ("fanout usize::MAX", DictOptions { fanout: usize::MAX, ..base.clone() }),
    ];
    let mut wrong = Vec::new();
    for (what, o) in &bad {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let r = env.create_dictionary("x", o.clone());
            // If it was accepted, it must at least take a write and reopen.
            if let Ok(d) = &r {
                let w = d.put(b"k", b"v");
                let _ = env.drop_dictionary("x");
                return format!("accepted (a put: {w:?})");
            }
            match r {
                Err(Error::InvalidArgument(_)) => String::new(),
                other => format!("{:?}", other.err()),
            }
        }));
        match r {
            Ok(s) if s.is_empty() => {}
            Ok(s) => wrong.push(format!("{what}: {s}")),
            Err(_) => wrong.push(format!("{what}: panicked")),
        }
        assert!(!env.list_dictionaries().contains(&"x".to_string()), "{what} left a dictionary");
    }
    assert!(wrong.is_empty(), "settings not refused with InvalidArgument:\n{}", wrong.join("\n"));
    // The bounds themselves are accepted, and reopen as they were made.
    let good = [
        ("min", smallest()),
        (
            "max node",
            DictOptions {
                node_size_bytes: MAX_NODE_BYTES,
                basement_size_bytes: MAX_NODE_BYTES,
                ..base.clone()
            },
        ),
        ("max fanout", DictOptions { fanout: MAX_FANOUT, codec: Codec::None, ..base.clone() }),
    ];
    for (name, o) in &good {
        let d = env.create_dictionary(name, o.clone()).unwrap();
        for i in 0..100u32 {
            d.put(&i.to_be_bytes(), b"v").unwrap();
        }
        d.check().unwrap();
    }
    env.close().unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    for (name, _) in &good {
        let d = env.open_dictionary(name).unwrap();
        assert_eq!(d.range(None, None, false).count(), 100, "{name}");
        d.check().unwrap();
    }
    // The name the refused creates used is free.
    env.create_dictionary("x", base).unwrap();
    env.close().unwrap();
}

/// Settings of an environment past what the engine can run with are refused
/// at open with the bound they broke, before anything is created: a cache of
/// `usize::MAX` bytes overflowed the cache's arithmetic, and log files of 0
/// or 1 byte rolled into a file of the same name and turned the environment
/// read-only.
#[test]
fn env_options_out_of_bounds_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, EnvOptions)> = vec![
        ("cache_size_bytes", EnvOptions { cache_size_bytes: usize::MAX, ..EnvOptions::default() }),
        ("cache_size_bytes", EnvOptions { cache_size_bytes: 1024, ..EnvOptions::default() }),
        ("log_file_size_bytes", EnvOptions { log_file_size_bytes: 0, ..EnvOptions::default() }),
        ("log_file_size_bytes", EnvOptions { log_file_size_bytes: 1, ..EnvOptions::default() }),
        ("log_file_size_bytes", EnvOptions { log_file_size_bytes: u64::MAX, ..EnvOptions::default() }),
        ("cleaner_threads", EnvOptions { cleaner_threads: usize::MAX, ..EnvOptions::default() }),
        ("max_active_threads", EnvOptions { max_active_threads: usize::MAX, ..EnvOptions::default() }),
        (
            "checkpoint_period",
            EnvOptions { checkpoint_period: Some(std::time::Duration::MAX), ..EnvOptions::default() },
        ),
        ("lock_timeout", EnvOptions { lock_timeout: std::time::Duration::MAX, ..EnvOptions::default() }),
        ("fsync_log_period_ms", EnvOptions { fsync_log_period_ms: u64::MAX, ..EnvOptions::default() }),
    ];
    for (what, opts) in cases {
        let sub = dir.path().join(what);
        match Env::open(&sub, opts) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{what}: {m}"),
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: accepted"),
        }
        // Refused before anything was created but the folder and its lock.
        let names: Vec<_> = std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.iter().all(|n| n == "LOCK"), "{what}: {names:?}");
    }
    // The bounds themselves open.
    let opts =
        EnvOptions { log_file_size_bytes: 4 << 10, cache_size_bytes: 256 << 10, ..EnvOptions::default() };
    let env = Env::open(dir.path().join("ok"), opts).unwrap();
    let d = env.create_dictionary("d", DictOptions::default()).unwrap();
    for i in 0..200u32 {
        d.put(&i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    env.close().unwrap();
}
