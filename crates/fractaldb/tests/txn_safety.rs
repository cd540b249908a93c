//! Transactions and cursors misused: a transaction's cursor or range used
//! after the transaction ended, a dictionary's cursor after the dictionary
//! was dropped or the environment closed, an unpositioned cursor. Each must
//! end in an error, never a panic, never locks held for a finished
//! transaction.

use std::time::Duration;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, Error, Isolation};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn small_dict() -> DictOptions {
    DictOptions {
        node_size_bytes: 8 << 10,
        basement_size_bytes: 1 << 10,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    }
}

/// An environment in a temporary folder with a short lock timeout (so a
/// lock left behind shows as a `LockTimeout` quickly), and one dictionary
/// holding `n` keys.
fn env_with(n: u32) -> (tempfile::TempDir, Env, Dictionary) {
    let dir = tempfile::tempdir().unwrap();
    let opts = EnvOptions { lock_timeout: Duration::from_millis(100), ..EnvOptions::default() };
    let env = Env::open(dir.path(), opts).unwrap();
    let d = env.create_dictionary("t", small_dict()).unwrap();
    let mut b = fractaldb::WriteBatch::new();
    for i in 0..n {
        b.put(&key(i), b"old");
    }
    d.write(&b).unwrap();
    (dir, env, d)
}

fn is_ended(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(m) if m.contains("ended"))
}

#[test]
fn an_unpositioned_cursor_has_no_key_or_value() {
    let (_dir, env, d) = env_with(3);
    let mut c = d.cursor();
    assert_eq!((c.key(), c.value()), (None, None), "a new cursor");
    assert!(c.last().unwrap());
    assert_eq!(c.key(), Some(&key(2)[..]));
    assert!(!c.next().unwrap());
    assert_eq!((c.key(), c.value()), (None, None), "past the end");
    assert!(!c.next().unwrap() && !c.prev().unwrap());
    let empty = env.create_dictionary("empty", small_dict()).unwrap();
    let mut c = empty.cursor();
    assert!(!c.first().unwrap() && !c.last().unwrap() && !c.seek_ge(b"a").unwrap());
    assert_eq!((c.key(), c.value()), (None, None), "an empty dictionary");

    let t = env.begin(Isolation::RepeatableRead).unwrap();
    let mut c = t.cursor(&d);
    assert_eq!(c.key(), None);
    assert!(c.seek_ge(&key(1)).unwrap());
    assert_eq!(c.value(), Some(&b"old"[..]));
    t.commit().unwrap();
    // What the last move read stays readable; the next move fails and
    // leaves the cursor on no key.
    assert_eq!(c.key(), Some(&key(1)[..]));
    assert!(c.prev().is_err());
    assert_eq!((c.key(), c.value()), (None, None));
}

#[test]
fn a_serializable_cursor_after_commit_errors_and_takes_no_locks() {
    let (_dir, env, d) = env_with(3000);
    let t = env.begin(Isolation::Serializable).unwrap();
    let mut c = t.cursor(&d);
    assert!(c.first().unwrap());
    t.commit().unwrap();
    // Walked after the commit: before the fix every batch took a range
    // lock for the finished transaction, and no one could write again.
    let next = c.next();
    let first = c.first();
    let mut walked = 0;
    while let Ok(true) = c.next() {
        walked += 1;
    }
    let locks = env.stats().locks.locks;
    let put = d.put(&key(5), b"new");
    assert!(
        matches!(&next, Err(e) if is_ended(e))
            && matches!(&first, Err(e) if is_ended(e))
            && walked == 0
            && locks == 0
            && put.is_ok(),
        "after the commit: next() = {next:?}, first() = {first:?}, {walked} more steps walked, \
         {locks} locks held, a later put: {put:?}"
    );
    assert!(!c.valid(), "a cursor whose move failed is on no key");
}

#[test]
fn a_repeatable_read_cursor_after_commit_reads_nothing() {
    let (_dir, env, d) = env_with(10);
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    let mut c = t.cursor(&d);
    d.put(&key(0), b"new").unwrap();
    t.commit().unwrap();
    // With the snapshot gone, the old versions are collected on the next
    // write; a read after the commit would see the newest value.
    d.put(&key(0), b"newer").unwrap();
    let first = c.first();
    assert!(matches!(&first, Err(e) if is_ended(e)), "first() after the commit: {first:?}");
}

#[test]
fn a_range_after_its_transaction_ended_yields_one_error() {
    let (_dir, env, d) = env_with(100);
    for (end, iso) in
        [(0, Isolation::Serializable), (1, Isolation::RepeatableRead), (2, Isolation::ReadCommitted)]
    {
        let t = env.begin(iso).unwrap();
        let mut r = t.range(&d, Some(&key(10)), None, false);
        assert_eq!(r.next().unwrap().unwrap().0, key(10));
        match end {
            0 => t.commit().unwrap(),
            1 => t.abort().unwrap(),
            _ => drop(t),
        }
        let got = r.next();
        assert!(matches!(&got, Some(Err(e)) if is_ended(e)), "{iso:?}, end {end}: {got:?}");
        assert!(r.next().is_none(), "an error ends the iteration");
    }
    assert_eq!(env.stats().locks.locks, 0);
    d.put(&key(10), b"new").unwrap();
}

#[test]
fn a_dictionary_cursor_after_drop_or_close_errors() {
    let (_dir, env, d) = env_with(200);
    let other = env.create_dictionary("other", small_dict()).unwrap();
    other.put(b"a", b"1").unwrap();
    let mut c = d.cursor();
    assert!(c.first().unwrap());
    let mut r = d.range(None, None, false);
    assert!(r.next().unwrap().is_ok());
    env.drop_dictionary("t").unwrap();
    // Even a move inside the batch already loaded.
    let next = c.next();
    assert!(next.is_err() && !c.valid(), "next() after the drop: {next:?}");
    assert!(c.first().is_err() && c.last().is_err() && c.seek_ge(b"k").is_err());
    assert!(matches!(r.next(), Some(Err(_))) && r.next().is_none());

    let mut c = other.cursor();
    let mut r = other.range(None, None, true);
    env.close().unwrap();
    assert!(c.first().is_err() && !c.valid());
    assert!(matches!(r.next(), Some(Err(_))) && r.next().is_none());
}
