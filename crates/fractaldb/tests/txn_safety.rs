//! Transactions and cursors misused or failing: a transaction's cursor or
//! range used after the transaction ended, a dictionary's cursor after the
//! dictionary was dropped or the environment closed, an unpositioned
//! cursor, and a commit, abort or savepoint rollback whose clean-up cannot
//! be finished (a dictionary that failed, a log that failed). Each must end
//! in an error, never a panic, never locks or log held for a finished
//! transaction, and after a restart the outcome the transaction was told.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fractaldb::{Codec, DictOptions, Dictionary, Env, EnvOptions, Error, Isolation, SimVfs, TxnOptions, Vfs};

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

// ---- clean-ups that cannot finish -----------------------------------------

const DIR: &str = "/txn_safety/db";

fn sim_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 1 << 20,
        direct_io: false,
        background_threads: false,
        vfs: sim.boot(),
        checkpoint_period: None,
        reserve_free_bytes: 0,
        lock_timeout: Duration::from_millis(100),
        ..EnvOptions::default()
    }
}

/// A simulated environment with dictionaries "x" and "y", each holding
/// keys 0..100 = "old".
fn sim_env(seed: u64) -> (Arc<SimVfs>, Env, Dictionary, Dictionary) {
    let sim = SimVfs::new(seed);
    let v: Arc<dyn Vfs> = sim.boot();
    v.create_dir_all(Path::new(DIR)).unwrap();
    let env = Env::open(DIR, sim_opts(&sim)).unwrap();
    let x = env.create_dictionary("x", small_dict()).unwrap();
    let y = env.create_dictionary("y", small_dict()).unwrap();
    for d in [&x, &y] {
        for i in 0..100 {
            d.put(&key(i), b"old").unwrap();
        }
    }
    env.checkpoint().unwrap();
    (sim, env, x, y)
}

/// Fails dictionary "x": a checkpoint whose write of its file fails turns
/// it read-only (`Tree::fail`), so no tree write reaches it any more.
fn fail_x(sim: &SimVfs, env: &Env, x: &Dictionary) {
    let files: Vec<_> = sim.files().into_iter().map(|f| f.path).collect();
    let xfile = files
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .filter(|n| n.starts_with('d') && n.ends_with(".fdb"))
        .min()
        .expect("x's file (the first created)")
        .to_string();
    x.put(b"dirty", b"x").unwrap();
    sim.fail_next_writes(1, Some(&xfile));
    env.checkpoint().expect_err("a checkpoint whose write failed succeeded");
    assert!(matches!(x.put(b"after", b"x"), Err(Error::ReadOnly(_))), "x did not fail");
}

/// A power failure and a restart; returns the dictionaries again.
fn restart(sim: &Arc<SimVfs>, env: Env) -> (Env, Dictionary, Dictionary) {
    sim.crash();
    drop(env);
    sim.clear_faults();
    let env = Env::open(DIR, sim_opts(sim)).expect("restart");
    let (x, y) = (env.open_dictionary("x").unwrap(), env.open_dictionary("y").unwrap());
    x.check().unwrap();
    y.check().unwrap();
    (env, x, y)
}

/// What `other` transactions see of keys a finished transaction wrote:
/// no lock of it left in their way.
fn locks_free(env: &Env, y: &Dictionary, k: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    let opts = TxnOptions {
        isolation: Isolation::Serializable,
        lock_timeout: Some(Duration::from_millis(100)),
        writes_see_latest: false,
        client_id: 0,
    };
    let r = env.begin_with(opts)?;
    let v = r.get(y, k)?;
    r.commit()?;
    let w = env.begin(Isolation::ReadCommitted)?;
    w.put(y, k, b"later")?;
    w.abort()?;
    Ok(v)
}

#[test]
fn a_commit_whose_cleanup_cannot_reach_a_failed_dictionary_leaves_no_locks() {
    let (sim, env, x, y) = sim_env(1);
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    // x first on the undo list: its clean-up fails before y's is sent.
    t.put(&x, &key(1), b"new").unwrap();
    t.put(&y, &key(1), b"new").unwrap();
    fail_x(&sim, &env, &x);
    let commit = t.commit();
    let after = locks_free(&env, &y, &key(1));
    assert!(
        commit.is_ok() && matches!(&after, Ok(Some(v)) if v == b"new"),
        "commit: {commit:?}; then another transaction reading and writing y's key: {after:?}"
    );
    // Readers see it committed in the failed dictionary too; no writer gets in.
    assert_eq!(x.get(&key(1)).unwrap(), Some(b"new".to_vec()));
    let r = env.begin(Isolation::Serializable).unwrap();
    assert_eq!(r.get(&x, &key(1)).unwrap(), Some(b"new".to_vec()));
    drop(r);
    assert!(matches!(x.put(&key(1), b"z"), Err(Error::ReadOnly(_))));
    assert_eq!(env.stats().locks.locks, 0);
    // The commit was acknowledged: it survives a power failure.
    let (_env, x, y) = restart(&sim, env);
    assert_eq!(x.get(&key(1)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(y.get(&key(1)).unwrap(), Some(b"new".to_vec()));
    x.put(&key(1), b"writable again").unwrap();
}

#[test]
fn an_abort_whose_cleanup_cannot_reach_a_failed_dictionary_leaves_no_locks() {
    let (sim, env, x, y) = sim_env(2);
    let t = env.begin(Isolation::ReadCommitted).unwrap();
    t.put(&x, &key(2), b"new").unwrap();
    t.put(&y, &key(2), b"new").unwrap();
    fail_x(&sim, &env, &x);
    let abort = t.abort();
    let after = locks_free(&env, &y, &key(2));
    assert!(
        abort.is_ok() && matches!(&after, Ok(Some(v)) if v == b"old"),
        "abort: {abort:?}; then another transaction reading and writing y's key: {after:?}"
    );
    assert_eq!(x.get(&key(2)).unwrap(), Some(b"old".to_vec()));
    let (_env, x, y) = restart(&sim, env);
    assert_eq!(x.get(&key(2)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(y.get(&key(2)).unwrap(), Some(b"old".to_vec()));
}

#[test]
fn a_savepoint_rollback_that_cannot_finish_aborts_the_transaction() {
    let (sim, env, x, y) = sim_env(3);
    let t = env.begin(Isolation::ReadCommitted).unwrap();
    t.put(&y, &key(3), b"before the savepoint").unwrap();
    let sp = t.savepoint().unwrap();
    t.put(&x, &key(3), b"rolled back").unwrap();
    t.put(&y, &key(4), b"rolled back").unwrap();
    fail_x(&sim, &env, &x);
    let rollback = t.rollback_to(sp);
    let after = locks_free(&env, &y, &key(3));
    assert!(
        rollback.is_err() && matches!(&after, Ok(Some(v)) if v == b"old"),
        "rollback_to: {rollback:?}; then another transaction reading and writing y's key: {after:?}"
    );
    // The transaction can no longer commit what its failed rollback left.
    let commit = t.commit();
    assert!(matches!(&commit, Err(e) if is_ended(e)), "{commit:?}");
    assert_eq!(x.get(&key(3)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(y.get(&key(4)).unwrap(), Some(b"old".to_vec()));
    let (_env, x, y) = restart(&sim, env);
    for (d, k) in [(&y, 3), (&x, 3), (&y, 4)] {
        assert_eq!(d.get(&key(k)).unwrap(), Some(b"old".to_vec()), "{} {k}", d.name());
    }
}

#[test]
fn a_commit_whose_record_cannot_be_logged_rolls_back_and_leaves_no_locks() {
    let (sim, env, x, y) = sim_env(4);
    let t = env.begin(Isolation::RepeatableRead).unwrap();
    t.put(&y, &key(5), b"new").unwrap();
    // The log fails (an fsync error poisons it): the commit record cannot
    // be written, so the transaction did not commit.
    sim.fail_next_syncs(1, Some(".fdl"));
    assert!(matches!(x.put(b"k", b"v"), Err(Error::ReadOnly(_))));
    let commit = t.commit();
    let opts = TxnOptions {
        isolation: Isolation::Serializable,
        lock_timeout: Some(Duration::from_millis(100)),
        writes_see_latest: false,
        client_id: 0,
    };
    let r = env.begin_with(opts).unwrap();
    let read = r.get(&y, &key(5));
    drop(r);
    assert!(
        matches!(&commit, Err(Error::ReadOnly(_))) && matches!(&read, Ok(Some(v)) if v == b"old"),
        "commit: {commit:?}; then a serializable read of its key: {read:?}"
    );
    assert_eq!(env.stats().locks.locks, 0);
    assert_eq!(env.stats().open_transactions, 0);
    let (_env, _x, y) = restart(&sim, env);
    assert_eq!(y.get(&key(5)).unwrap(), Some(b"old".to_vec()));
}

/// A savepoint names one transaction's savepoint: handed to another
/// transaction (whose own savepoint sits at the same depth with the same
/// serial, since both count from the start) it must be refused, not roll
/// back the other transaction's own savepoint.
#[test]
fn another_transactions_savepoint_is_refused() {
    let (_dir, env, d) = env_with(0);
    let a = env.begin(Isolation::RepeatableRead).unwrap();
    let b = env.begin(Isolation::RepeatableRead).unwrap();
    let sp_a = a.savepoint().unwrap();
    let _sp_b = b.savepoint().unwrap();
    b.put(&d, b"k", b"b's write").unwrap();
    let e = b.rollback_to(sp_a).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("belongs to transaction")), "{e}");
    assert!(matches!(b.release(sp_a), Err(Error::InvalidArgument(_))));
    // b's own write and savepoint are untouched; a's savepoint still works.
    assert_eq!(b.get(&d, b"k").unwrap().as_deref(), Some(&b"b's write"[..]));
    a.rollback_to(sp_a).unwrap();
    b.commit().unwrap();
    a.commit().unwrap();
    assert_eq!(d.get(b"k").unwrap().as_deref(), Some(&b"b's write"[..]));
}

/// Transaction ids are unique only within one environment: two
/// environments (or one reopened after a crash, which hands out again the
/// ids of transactions that left nothing in the log) give out the same
/// ids. A savepoint of one environment's transaction handed to the other's
/// transaction with the same id and the same stack must still be refused.
#[test]
fn a_savepoint_of_another_environments_transaction_with_the_same_id_is_refused() {
    let (_d1, env1, _x1) = env_with(0);
    let (_d2, env2, y) = env_with(0);
    let a = env1.begin(Isolation::RepeatableRead).unwrap();
    let b = env2.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(a.id(), b.id(), "both environments count transactions from the same start");
    let sp_a = a.savepoint().unwrap();
    let _sp_b = b.savepoint().unwrap();
    b.put(&y, b"k", b"b's write").unwrap();
    let e = b.rollback_to(sp_a).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("belongs to transaction")), "{e}");
    assert!(matches!(b.release(sp_a), Err(Error::InvalidArgument(_))));
    assert_eq!(b.get(&y, b"k").unwrap().as_deref(), Some(&b"b's write"[..]));
    b.commit().unwrap();
    a.commit().unwrap();
    assert_eq!(y.get(b"k").unwrap().as_deref(), Some(&b"b's write"[..]));
}
