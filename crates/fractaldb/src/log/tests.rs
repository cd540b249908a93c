use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::file::sim::SimVfs;
use crate::file::OsVfs;

fn dir() -> &'static Path {
    Path::new("/db")
}

/// A record read back at recovery: its LSN and payload.
type LogRecord = (u64, Vec<u8>);

/// `Log::recover`, collecting the records.
fn recover(vfs: Arc<dyn Vfs>, dir: &Path, opts: LogOptions, min_next: u64) -> Result<(Log, Vec<LogRecord>)> {
    let mut recs = Vec::new();
    let log = Log::recover(vfs, dir, opts, min_next, &mut |lsn, p| {
        recs.push((lsn, p.to_vec()));
        Ok(())
    })?;
    Ok((log, recs))
}

thread_local! {
    /// Whether `open` asks for O_DIRECT (the simulated file system grants
    /// it and checks that every write is whole aligned pages).
    static DIRECT: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Runs `test` with buffered log files, then with O_DIRECT ones.
fn buffered_and_direct(test: impl Fn()) {
    for direct in [false, true] {
        DIRECT.with(|d| d.set(direct));
        test();
    }
}

fn open(vfs: &Arc<SimVfs>, size: u64, min_next: u64) -> Result<(Log, Vec<LogRecord>)> {
    let v: Arc<dyn Vfs> = vfs.boot();
    v.create_dir_all(dir())?;
    let direct_io = DIRECT.with(|d| d.get());
    recover(v, dir(), LogOptions { file_size_bytes: size, direct_io }, min_next)
}

fn payload(i: u64) -> Vec<u8> {
    format!("record number {i} {}", "x".repeat((i % 50) as usize)).into_bytes()
}

fn log_files(vfs: &SimVfs) -> Vec<u64> {
    let v: Arc<dyn Vfs> = vfs.boot();
    let mut f: Vec<u64> = v.list(dir()).unwrap().iter().filter_map(|n| parse_file_name(n)).collect();
    f.sort_unstable();
    f
}

#[test]
fn names_round_trip() {
    assert_eq!(file_name(42), "log-00000000000000000042.fdl");
    assert_eq!(parse_file_name(&file_name(42)), Some(42));
    assert_eq!(parse_file_name("log-42.fdl"), None);
    assert_eq!(parse_file_name("d1.fdb"), None);
}

#[test]
fn records_survive_reopen_across_many_files() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(1);
        let (log, recs) = open(&sim, 256, 1).unwrap();
        assert!(recs.is_empty());
        for i in 1..=200 {
            assert_eq!(log.append(&payload(i)).unwrap(), i);
            if i % 7 == 0 {
                log.sync_to(i).unwrap();
            }
        }
        log.sync_all().unwrap();
        assert_eq!(log.durable_lsn(), 200);
        assert!(log.file_count() > 10, "files roll at the size setting");
        let files = log_files(&sim);
        assert_eq!(files.len(), log.file_count());
        drop(log);
        sim.crash_clean();
        let (log, recs) = open(&sim, 256, 1).unwrap();
        assert_eq!(recs.len(), 200);
        for (i, (lsn, p)) in recs.iter().enumerate() {
            assert_eq!(*lsn, i as u64 + 1);
            assert_eq!(*p, payload(*lsn));
        }
        assert_eq!(log.append(b"next").unwrap(), 201);
    });
}

#[test]
fn unsynced_records_are_lost_and_synced_ones_kept_at_a_crash() {
    buffered_and_direct(|| {
        for seed in 0..20 {
            let sim = SimVfs::new(seed);
            let (log, _) = open(&sim, 512, 1).unwrap();
            for i in 1..=50 {
                log.append(&payload(i)).unwrap();
            }
            log.sync_to(30).unwrap();
            for i in 51..=60 {
                log.append(&payload(i)).unwrap();
            }
            sim.crash();
            drop(log);
            let (log, recs) = open(&sim, 512, 1).unwrap();
            // Everything synced is there; past that, a prefix of what followed.
            assert!(recs.len() >= 50, "seed {seed}: {} records", recs.len());
            for (i, (lsn, p)) in recs.iter().enumerate() {
                assert_eq!(*lsn, i as u64 + 1);
                assert_eq!(*p, payload(*lsn));
            }
            assert_eq!(log.append(b"after").unwrap(), recs.len() as u64 + 1);
        }
    });
}

#[test]
fn a_torn_tail_is_cut_and_the_log_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let vfs = OsVfs::shared();
    let opts = LogOptions { file_size_bytes: 1 << 20, direct_io: false };
    let (log, _) = recover(vfs.clone(), tmp.path(), opts, 1).unwrap();
    for i in 1..=10 {
        log.append(&payload(i)).unwrap();
    }
    log.sync_all().unwrap();
    drop(log);
    let path = tmp.path().join(file_name(1));
    let full = std::fs::read(&path).unwrap();
    // The records, then the zeros written ahead of them (`zero_ahead`).
    let end = FILE_HEADER_LEN + (1..=10).map(|i| RECORD_HEADER_LEN + payload(i).len()).sum::<usize>();
    assert!(full.len() > end && full[end..].iter().all(|&b| b == 0), "{} bytes", full.len());
    // Cut the last record in half.
    let last_len = RECORD_HEADER_LEN + payload(10).len();
    std::fs::write(&path, &full[..end - last_len / 2]).unwrap();
    let (log, recs) = recover(vfs.clone(), tmp.path(), opts, 1).unwrap();
    assert_eq!(recs.len(), 9);
    // Cut when recovery is finished, not before.
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, end - last_len / 2);
    log.finish_recovery().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, end - last_len);
    assert_eq!(log.append(b"ten again").unwrap(), 10);
    log.sync_all().unwrap();
    drop(log);
    let (_, recs) = recover(vfs, tmp.path(), opts, 1).unwrap();
    assert_eq!(recs.len(), 10);
    assert_eq!(recs[9].1, b"ten again");
}

#[test]
fn damage_before_the_tail_is_corruption() {
    let sim = SimVfs::new(3);
    let (log, _) = open(&sim, 300, 1).unwrap();
    for i in 1..=40 {
        log.append(&payload(i)).unwrap();
    }
    log.sync_all().unwrap();
    drop(log);
    let files = log_files(&sim);
    assert!(files.len() >= 3);
    // A flipped byte in an older file.
    let older = dir().join(file_name(files[0]));
    sim.corrupt(&older, FILE_HEADER_LEN as u64 + 20, 0x10);
    let err = open(&sim, 300, 1).err().expect("a damaged older file is an error");
    assert!(err.is_corruption(), "{err}");
    sim.corrupt(&older, FILE_HEADER_LEN as u64 + 20, 0x10);
    // A flipped byte in the first record of the newest file: the log ends
    // there, which is an error when a checkpoint recorded a later LSN...
    let newest_first = *files.last().unwrap();
    let newest = dir().join(file_name(newest_first));
    sim.corrupt(&newest, FILE_HEADER_LEN as u64 + 17, 0x01);
    let err = open(&sim, 300, 40).err().expect("damage before a checkpointed LSN is an error");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("records are missing"), "{err}");
    // ...and otherwise the end of the log (as after a torn write).
    let (log, recs) = open(&sim, 300, 1).unwrap();
    assert_eq!(recs.last().unwrap().0, newest_first - 1);
    assert_eq!(log.append(b"x").unwrap(), newest_first);
}

#[test]
fn trim_deletes_only_files_wholly_before_the_lsn() {
    let sim = SimVfs::new(5);
    let (log, _) = open(&sim, 400, 1).unwrap();
    for i in 1..=60 {
        log.append(&payload(i)).unwrap();
        log.sync_to(i).unwrap();
    }
    let files = log_files(&sim);
    assert!(files.len() >= 4, "{files:?}");
    let keep = files[2] + 1;
    log.trim(keep).unwrap();
    assert_eq!(log_files(&sim), files[2..].to_vec());
    // Trimming past the end keeps the current file.
    log.trim(u64::MAX).unwrap();
    assert_eq!(log_files(&sim), vec![*files.last().unwrap()]);
    assert_eq!(log.stats().files_deleted as usize, files.len() - 1);
    drop(log);
    sim.crash_clean();
    let (log, recs) = open(&sim, 400, 1).unwrap();
    assert_eq!(recs.first().unwrap().0, *files.last().unwrap());
    assert_eq!(recs.last().unwrap().0, 60);
    assert_eq!(log.append(b"61").unwrap(), 61);
}

#[test]
fn an_empty_folder_starts_at_the_lsn_a_checkpoint_recorded() {
    let sim = SimVfs::new(6);
    let (log, _) = open(&sim, 1 << 20, 500).unwrap();
    assert_eq!(log.append(b"a").unwrap(), 500);
    log.sync_all().unwrap();
    drop(log);
    // A log that ends before an LSN a checkpoint recorded lost records.
    let err = open(&sim, 1 << 20, 800).err().expect("missing records");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("records are missing"), "{err}");
}

#[test]
fn concurrent_committers_share_fsyncs() {
    let sim = SimVfs::new(7);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    let log = Arc::new(log);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let lsn = log.append(&payload(t * 1000 + i)).unwrap();
                    log.sync_to(lsn).unwrap();
                    assert!(log.durable_lsn() >= lsn);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = log.stats();
    assert_eq!(s.records, 1600);
    assert!(s.fsyncs <= s.records, "at most one fsync per commit: {s:?}");
    drop(log);
    sim.crash_clean();
    let (_, recs) = open(&sim, 1 << 20, 1).unwrap();
    assert_eq!(recs.len(), 1600);
}

/// Runs `f` on a thread of its own and fails if it has not returned in
/// `secs` seconds (a committer parked with no one left to wake it).
fn within(secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(()) => t.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => t.join().unwrap(),
        Err(_) => panic!("hung: a committer was never woken"),
    }
}

/// Committers that come and go at random moments, on real files, with
/// rolls in between: every `sync_to` returns (no lost wake-up when the
/// leader of a round finds no waiter of the next one yet), its record
/// durable, and every record comes back.
#[test]
fn committers_arriving_at_any_moment_are_all_woken() {
    let tmp = tempfile::tempdir().unwrap();
    let vfs = OsVfs::shared();
    let opts = LogOptions { file_size_bytes: 1 << 20, direct_io: false };
    let (log, _) = recover(vfs.clone(), tmp.path(), opts, 1).unwrap();
    let log = Arc::new(log);
    let l2 = log.clone();
    within(120, move || {
        let threads: Vec<_> = (0..16u64)
            .map(|t| {
                let log = l2.clone();
                std::thread::spawn(move || {
                    for i in 0..300u64 {
                        let lsn = log.append(&payload(t * 1000 + i)).unwrap();
                        if (i + t) % 7 == 0 {
                            // Some leave without waiting, like a
                            // transaction's writes before its commit.
                            continue;
                        }
                        if i % 50 == t {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        log.sync_to(lsn).unwrap();
                        assert!(log.durable_lsn() >= lsn);
                        assert!(log.last_lsn() >= lsn);
                        if t == 0 && i % 60 == 0 {
                            log.roll(0).unwrap();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Episodes of three committers with one record each: the one who
        // needs the round after the one in flight has no later commit of
        // the leader's own thread to carry its record, only the wake-up.
        for e in 0..300u64 {
            let threads: Vec<_> = (0..3u64)
                .map(|t| {
                    let log = l2.clone();
                    std::thread::spawn(move || {
                        let lsn = log.append(&payload(e * 3 + t)).unwrap();
                        log.sync_to(lsn).unwrap();
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
        l2.sync_all().unwrap();
    });
    assert_eq!(log.buffered_bytes(), 0);
    assert_eq!(log.stats().records, 16 * 300 + 900);
    drop(log);
    let (_, recs) = recover(vfs, tmp.path(), opts, 1).unwrap();
    assert_eq!(recs.len(), 16 * 300 + 900);
    assert!(recs.windows(2).all(|w| w[1].0 == w[0].0 + 1));
}

/// An fsync that fails while many committers wait: every one of them
/// wakes with the log's error, none hangs, and nothing is appended after.
#[test]
fn a_failed_fsync_wakes_every_waiting_committer() {
    let sim = SimVfs::new(12);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    let log = Arc::new(log);
    for i in 0..5 {
        let lsn = log.append(&payload(i)).unwrap();
        log.sync_to(lsn).unwrap();
    }
    sim.fail_syncs_randomly(0.05, Some(".fdl"));
    let l2 = log.clone();
    within(120, move || {
        let threads: Vec<_> = (0..12u64)
            .map(|t| {
                let log = l2.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let lsn = match log.append(&payload(t * 10_000 + i)) {
                            Ok(lsn) => lsn,
                            Err(e) => {
                                assert!(matches!(e, Error::ReadOnly(_)), "{e}");
                                return;
                            }
                        };
                        if let Err(e) = log.sync_to(lsn) {
                            assert!(matches!(e, Error::ReadOnly(_)), "{e}");
                            assert!(e.to_string().contains("the log failed"), "{e}");
                            return;
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
    assert!(log.append(b"after").is_err(), "some fsync failed in 24,000 tries");
}

#[test]
fn a_failed_fsync_poisons_the_log_and_keeps_what_was_durable() {
    let sim = SimVfs::new(8);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    for i in 1..=10 {
        log.append(&payload(i)).unwrap();
    }
    log.sync_all().unwrap();
    log.append(&payload(11)).unwrap();
    sim.fail_next_syncs(1, Some(".fdl"));
    let err = log.sync_to(11).unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
    assert!(err.to_string().contains("fdatasync"), "{err}");
    assert!(matches!(log.append(b"more"), Err(Error::ReadOnly(_))));
    assert!(log.sync_all().is_err());
    drop(log);
    sim.crash();
    let (_, recs) = open(&sim, 1 << 20, 1).unwrap();
    assert!(recs.len() == 10 || recs.len() == 11, "{}", recs.len());
}

#[test]
fn a_failed_write_poisons_the_log() {
    let sim = SimVfs::new(9);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    log.append(b"one").unwrap();
    sim.fail_next_writes(1, Some(".fdl"));
    assert!(matches!(log.sync_all(), Err(Error::ReadOnly(_))));
    assert!(matches!(log.append(b"two"), Err(Error::ReadOnly(_))));
}

#[test]
fn crashes_during_rollover_lose_nothing_synced() {
    buffered_and_direct(|| {
        for seed in 0..40 {
            let sim = SimVfs::new(seed);
            let (log, _) = open(&sim, 128, 1).unwrap();
            let mut synced = 0;
            for i in 1..=30u64 {
                log.append(&payload(i)).unwrap();
                if i % 3 == 0 {
                    log.sync_to(i).unwrap();
                    synced = i;
                }
            }
            // Fail a sync in the middle of a roll now and then.
            if seed % 4 == 0 {
                sim.fail_next_syncs(1, None);
                log.append(&payload(31)).unwrap();
                let _ = log.sync_all();
                sim.clear_faults();
            }
            sim.crash();
            drop(log);
            let (log, recs) = open(&sim, 128, 1).unwrap();
            assert!(recs.len() as u64 >= synced, "seed {seed}");
            for (i, (lsn, p)) in recs.iter().enumerate() {
                assert_eq!(*lsn, i as u64 + 1);
                assert_eq!(*p, payload(*lsn));
            }
            let next = log.append(b"x").unwrap();
            log.sync_all().unwrap();
            assert_eq!(next, recs.len() as u64 + 1);
        }
    });
}

#[test]
fn start_empty_file_leaves_no_records_and_continues_the_lsns() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(10);
        let (log, _) = open(&sim, 150, 1).unwrap();
        for i in 1..=30 {
            log.append(&payload(i)).unwrap();
        }
        log.start_empty_file().unwrap();
        assert_eq!(log_files(&sim), vec![31]);
        drop(log);
        sim.crash_clean();
        let (log, recs) = open(&sim, 150, 1).unwrap();
        assert!(recs.is_empty());
        assert_eq!(log.append(b"31").unwrap(), 31);
    });
}

#[test]
fn roll_makes_records_durable_and_lets_trim_delete_them() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(3);
        let (log, _) = open(&sim, 1 << 20, 1).unwrap();
        for i in 1..=50 {
            log.append(&payload(i)).unwrap();
        }
        // Too little in the file: no new file, but the records are durable.
        log.roll(1 << 20).unwrap();
        assert_eq!((log_files(&sim), log.durable_lsn()), (vec![1], 50));
        log.roll(0).unwrap();
        assert_eq!(log_files(&sim), vec![1, 51]);
        // A roll of a file with nothing in it after its header does nothing.
        log.roll(0).unwrap();
        assert_eq!(log_files(&sim), vec![1, 51]);
        for i in 51..=60 {
            assert_eq!(log.append(&payload(i)).unwrap(), i);
        }
        log.sync_all().unwrap();
        log.trim(51).unwrap();
        assert_eq!(log_files(&sim), vec![51]);
        drop(log);
        sim.crash();
        let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs, (51..=60).map(|i| (i, payload(i))).collect::<Vec<_>>());
        assert_eq!(log.append(b"next").unwrap(), 61);
    });
}

fn path_of(first: u64) -> std::path::PathBuf {
    dir().join(file_name(first))
}

/// The bytes of a file now (not only what is durable).
fn bytes_of(sim: &SimVfs, path: &Path) -> Vec<u8> {
    let v: Arc<dyn Vfs> = sim.boot();
    v.read_file(path).unwrap().unwrap()
}

/// The records of a version-2 file as (LSN, offset, frame length, synced),
/// up to the first that is not valid.
fn frames_of(bytes: &[u8]) -> Vec<(u64, usize, usize, u64)> {
    let mut out = Vec::new();
    let mut off = FILE_HEADER_LEN;
    while let Some(fr) = parse_frame(&bytes[off..], VERSION, |_| true) {
        out.push((fr.lsn, off, fr.len, fr.synced));
        off += fr.len;
    }
    out
}

/// A log of `n` records in one file, each synced on its own (as committers
/// with `commit_sync` do one at a time), then a power failure.
fn synced_one_by_one(seed: u64, n: u64) -> Arc<SimVfs> {
    let sim = SimVfs::new(seed);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    for i in 1..=n {
        log.append(&payload(i)).unwrap();
        log.sync_to(i).unwrap();
    }
    drop(log);
    sim.crash();
    sim
}

#[test]
fn each_record_says_what_was_durable_when_it_was_appended() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(11);
        let (log, _) = open(&sim, 1 << 20, 1).unwrap();
        log.append(&payload(1)).unwrap();
        log.append(&payload(2)).unwrap();
        log.sync_to(2).unwrap();
        log.append(&payload(3)).unwrap();
        log.append(&payload(4)).unwrap();
        log.sync_all().unwrap();
        log.append(&payload(5)).unwrap();
        log.sync_all().unwrap();
        let bytes = bytes_of(&sim, &path_of(1));
        assert_eq!(decode_file_header(&bytes), Ok((1, 2)), "version 2");
        let frames = frames_of(&bytes);
        let synced: Vec<u64> = frames.iter().map(|f| f.3).collect();
        assert_eq!(synced, vec![0, 0, 2, 2, 4]);
        // The frame, byte by byte.
        for &(lsn, off, len, synced) in &frames {
            let f = &bytes[off..off + len];
            let p = payload(lsn);
            assert_eq!(len, 24 + p.len());
            assert_eq!(f[0..4], (p.len() as u32).to_le_bytes());
            assert_eq!(f[8..16], lsn.to_le_bytes());
            assert_eq!(f[16..24], synced.to_le_bytes());
            assert_eq!(f[24..], p[..]);
            let mut covered = p.clone();
            covered.extend_from_slice(&lsn.to_le_bytes());
            covered.extend_from_slice(&synced.to_le_bytes());
            assert_eq!(f[4..8], crc32c::crc32c(&covered).to_le_bytes());
        }
    });
}

#[test]
fn damage_to_a_vouched_record_is_corruption_naming_the_offset_and_changes_nothing() {
    buffered_and_direct(|| {
        let sim = synced_one_by_one(12, 30);
        let path = path_of(1);
        let frames = frames_of(&bytes_of(&sim, &path));
        assert_eq!(frames.len(), 30);
        // Every field of records 1, 15 and 29 (record 30 is vouched for by none).
        for k in [0usize, 14, 28] {
            let (lsn, off, _, _) = frames[k];
            for field in [2usize, 5, 9, 17, 25] {
                let at = (off + field) as u64;
                sim.corrupt(&path, at, 0x40);
                let damaged = bytes_of(&sim, &path);
                let err = open(&sim, 1 << 20, 1).err().unwrap_or_else(|| panic!("record {lsn} byte {field}"));
                let msg = err.to_string();
                assert!(matches!(err, Error::Corrupt { .. }), "{msg}");
                assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
                assert!(msg.contains(&format!("log record {lsn} at byte {off} is damaged")), "{msg}");
                assert_eq!(bytes_of(&sim, &path), damaged, "the file changed");
                assert_eq!(sim.read_durable(&path).unwrap(), damaged, "the file changed");
                sim.corrupt(&path, at, 0x40);
            }
        }
        let (_, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs.len(), 30);
    });
}

#[test]
fn damage_no_later_record_vouches_for_ends_the_log_and_is_cut_when_recovery_finishes() {
    buffered_and_direct(|| {
        // Records 1-10 synced one by one, then 11-20 written by one group
        // commit: they vouch for 10 only, so damage in 11 (a page of that
        // write that did not reach the disk while later ones did) is a torn
        // tail. So is damage in the very last record.
        let sim = SimVfs::new(13);
        let (log, _) = open(&sim, 1 << 20, 1).unwrap();
        for i in 1..=10 {
            log.append(&payload(i)).unwrap();
            log.sync_to(i).unwrap();
        }
        for i in 11..=20 {
            log.append(&payload(i)).unwrap();
        }
        log.sync_all().unwrap();
        drop(log);
        sim.crash();
        let path = path_of(1);
        let frames = frames_of(&bytes_of(&sim, &path));
        assert!(frames[11..].iter().all(|f| f.3 == 10), "{frames:?}");
        let (_, off, _, _) = frames[10];
        sim.corrupt(&path, off as u64 + 30, 0x01);
        let before = bytes_of(&sim, &path);
        for _ in 0..2 {
            // Not finished: nothing changes, however often it is opened.
            let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
            assert_eq!(recs.len(), 10);
            let p = log.pending().unwrap();
            assert_eq!((p.disk_len, p.remove, p.old_version), (before.len() as u64, vec![], false));
            drop(log);
            sim.crash();
            assert_eq!(bytes_of(&sim, &path), before);
        }
        let (log, _) = open(&sim, 1 << 20, 1).unwrap();
        log.finish_recovery().unwrap();
        assert_eq!(log.pending(), None);
        assert_eq!(sim.read_durable(&path).unwrap(), before[..off], "cut and synced");
        log.finish_recovery().unwrap();
        assert_eq!(log.append(b"eleven").unwrap(), 11);
        log.sync_all().unwrap();
        drop(log);
        sim.crash();
        let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs.len(), 11);
        assert_eq!(recs[10], (11, b"eleven".to_vec()));
        drop(log);
        // The last record, damaged: no record after it says it was durable.
        let last = frames_of(&bytes_of(&sim, &path)).last().copied().unwrap();
        sim.corrupt(&path, last.1 as u64 + 25, 0x01);
        let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs.len(), 10);
        assert_eq!(log.append(b"x").unwrap(), 11);
    });
}

#[test]
fn a_failed_recovery_changes_no_file() {
    buffered_and_direct(|| {
        let sim = synced_one_by_one(14, 10);
        let path = path_of(1);
        // A torn tail: half of record 11 and garbage.
        let bytes = bytes_of(&sim, &path);
        let end = frames_of(&bytes).last().map(|f| f.1 + f.2).unwrap();
        let v: Arc<dyn Vfs> = sim.boot();
        let f = v.open(&path, OpenMode::Existing, false).unwrap();
        let mut torn = Vec::new();
        frame(&mut torn, 11, 10, &payload(11));
        torn.truncate(torn.len() / 2);
        torn.extend_from_slice(&[0x5a; 3000]);
        f.write_at(end as u64, &torn).unwrap();
        f.sync().unwrap();
        let before = bytes_of(&sim, &path);
        // A checkpoint recorded LSN 12: records are missing.
        let err = open(&sim, 1 << 20, 13).err().expect("records are missing");
        assert!(err.to_string().contains("records are missing"), "{err}");
        assert_eq!(bytes_of(&sim, &path), before, "the file changed");
        // The caller's replay fails.
        let v: Arc<dyn Vfs> = sim.boot();
        let opts = LogOptions { file_size_bytes: 1 << 20, direct_io: DIRECT.with(|d| d.get()) };
        let err = Log::recover(v, dir(), opts, 1, &mut |lsn, _| match lsn {
            7 => Err(Error::invalid("replay failed")),
            _ => Ok(()),
        })
        .err()
        .expect("replay failed");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(bytes_of(&sim, &path), before, "the file changed");
        // Recovery succeeds: cut at the first write.
        let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs.len(), 10);
        assert_eq!(bytes_of(&sim, &path), before);
        log.append(b"11").unwrap();
        log.sync_all().unwrap();
        let now = bytes_of(&sim, &path);
        assert_eq!(now[..end], before[..end]);
        assert!(!now.windows(8).any(|w| w == [0x5a; 8]), "torn bytes left after the new record");
    });
}

/// Appends a version-1 frame to `buf`.
fn frame_v1(buf: &mut Vec<u8>, lsn: u64, payload: &[u8]) {
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&record_crc_v1(payload, lsn).to_le_bytes());
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Writes a durable version-1 log file starting at `first` with `bytes`
/// after its header.
fn write_v1_file(sim: &SimVfs, first: u64, records: &[u8]) {
    let v: Arc<dyn Vfs> = sim.boot();
    v.create_dir_all(dir()).unwrap();
    let f = v.open(&path_of(first), OpenMode::CreateNew, false).unwrap();
    let mut bytes = encode_file_header_version(first, VERSION_1).to_vec();
    bytes.extend_from_slice(records);
    f.write_at(0, &bytes).unwrap();
    f.sync().unwrap();
    v.sync_dir(dir()).unwrap();
}

#[test]
fn version_1_logs_are_read_and_continued_in_version_2() {
    buffered_and_direct(|| {
        // A crashed environment's version-1 log, with a torn tail.
        let sim = SimVfs::new(15);
        let mut recs = Vec::new();
        for i in 1..=5 {
            frame_v1(&mut recs, i, &payload(i));
        }
        let whole = recs.len();
        frame_v1(&mut recs, 6, &payload(6));
        recs.truncate(whole + 10);
        write_v1_file(&sim, 1, &recs);
        let (log, got) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(got, (1..=5).map(|i| (i, payload(i))).collect::<Vec<_>>());
        assert!(log.pending().unwrap().old_version);
        assert_eq!(log.append(&payload(6)).unwrap(), 6);
        log.sync_all().unwrap();
        // Version-1 records are not appended to: record 6 starts a version-2 file.
        assert_eq!(log_files(&sim), vec![1, 6]);
        assert_eq!(bytes_of(&sim, &path_of(1)).len(), FILE_HEADER_LEN + whole, "torn tail cut");
        assert_eq!(decode_file_header(&bytes_of(&sim, &path_of(6))), Ok((6, VERSION)));
        drop(log);
        sim.crash();
        let (log, got) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(got, (1..=6).map(|i| (i, payload(i))).collect::<Vec<_>>());
        assert_eq!(log.append(b"7").unwrap(), 7);

        // A cleanly closed one: a version-1 file with no records, whose
        // header is rewritten as version 2.
        let sim = SimVfs::new(16);
        write_v1_file(&sim, 40, &[]);
        let (log, got) = open(&sim, 1 << 20, 1).unwrap();
        assert!(got.is_empty());
        assert_eq!(log.append(&payload(40)).unwrap(), 40);
        log.sync_all().unwrap();
        assert_eq!(log_files(&sim), vec![40]);
        assert_eq!(decode_file_header(&bytes_of(&sim, &path_of(40))), Ok((40, VERSION)));
        drop(log);
        sim.crash();
        let (_, got) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(got, vec![(40, payload(40))]);
    });
}

#[test]
fn searching_past_a_bad_record_finds_valid_frames_at_any_offset() {
    // Garbage, then three valid frames (11 vouching for 4, 12 for 9, 13 for
    // 10) after a stretch of bytes that is not one.
    let mut b = vec![0xffu8; 37];
    frame(&mut b, 11, 4, b"eleven");
    let at_12 = b.len();
    frame(&mut b, 12, 9, b"twelve");
    b.extend_from_slice(&[7u8; 5]);
    frame(&mut b, 13, 10, b"thirteen");
    let found = search_beyond(&b, 10, VERSION);
    assert_eq!(found.first, Some((11, 37)));
    assert_eq!(found.best.unwrap().0, 10);
    // Frames with LSNs at or below the bad one's are not after it.
    let found = search_beyond(&b[at_12..], 12, VERSION);
    assert_eq!(found.first.map(|f| f.0), Some(13));
    // Zeros and garbage hold no frame.
    assert_eq!(search_beyond(&[0u8; 5000], 3, VERSION), Beyond::default());
    assert_eq!(search_beyond(&[0xa5u8; 5000], 3, VERSION), Beyond::default());
}

#[test]
fn a_file_claiming_first_lsn_0_is_corruption_not_a_panic() {
    let sim = SimVfs::new(17);
    let v: Arc<dyn Vfs> = sim.boot();
    v.create_dir_all(dir()).unwrap();
    let f = v.open(&path_of(0), OpenMode::CreateNew, false).unwrap();
    f.write_at(0, &encode_file_header(0)).unwrap();
    f.sync().unwrap();
    v.sync_dir(dir()).unwrap();
    let err = open(&sim, 1 << 20, 1).err().expect("LSN 0 opened");
    assert!(err.is_corruption(), "{err}");
}

/// A log of 33 records in files of about 400 bytes, every record synced.
fn several_files(seed: u64) -> (Arc<SimVfs>, Vec<u64>) {
    let sim = SimVfs::new(seed);
    let (log, _) = open(&sim, 400, 1).unwrap();
    for i in 1..=33 {
        log.append(&payload(i)).unwrap();
        log.sync_to(i).unwrap();
    }
    drop(log);
    sim.crash();
    let files = log_files(&sim);
    assert!(files.len() >= 3, "{files:?}");
    (sim, files)
}

/// Rewrites a file behind the log's back, durably.
fn rewrite(sim: &SimVfs, path: &Path, bytes: &[u8]) {
    let v: Arc<dyn Vfs> = sim.boot();
    let f = v.open(path, OpenMode::Existing, false).unwrap();
    f.set_len(0).unwrap();
    if !bytes.is_empty() {
        f.write_at(0, bytes).unwrap();
    }
    f.sync().unwrap();
}

/// Every log file gets its name only once its header is durable, so a log
/// file with a bad header, the newest included, is damage: `Corrupt`
/// naming it, nothing changed. (Taken for a file whose creation a crash
/// cut short, the acknowledged records in it, or after it, would be lost
/// without a word.)
#[test]
fn a_log_file_with_a_bad_header_is_corruption_naming_it_and_changes_nothing() {
    buffered_and_direct(|| {
        let (sim, files) = several_files(21);
        let newest = path_of(*files.last().unwrap());
        let pristine = bytes_of(&sim, &newest);
        assert!(
            frames_of(&pristine).len() >= 2,
            "the newest file holds acknowledged records: {files:?} {}",
            pristine.len()
        );
        let zeroed_header = [&[0u8; FILE_HEADER_LEN][..], &pristine[FILE_HEADER_LEN..]].concat();
        let damages: Vec<(&str, Vec<u8>)> = vec![
            ("truncated to 0", vec![]),
            ("truncated inside its header", pristine[..10].to_vec()),
            ("zeroed whole", vec![0; pristine.len()]),
            ("header zeroed", zeroed_header),
        ];
        for (what, bytes) in damages {
            rewrite(&sim, &newest, &bytes);
            let names_before = log_files(&sim);
            let err = open(&sim, 400, 1).err().unwrap_or_else(|| panic!("newest file {what}: opened"));
            assert!(err.is_corruption(), "{what}: {err}");
            assert!(err.to_string().contains(&*newest.to_string_lossy()), "{what}: {err}");
            assert_eq!((log_files(&sim), bytes_of(&sim, &newest)), (names_before, bytes), "{what}: changed");
        }
        rewrite(&sim, &newest, &pristine);
        // An older file, and the only file left.
        let older = path_of(files[1]);
        let before = bytes_of(&sim, &older);
        rewrite(&sim, &older, &[]);
        let err = open(&sim, 400, 1).err().expect("an older file truncated to 0 opened");
        assert!(err.is_corruption() && err.to_string().contains(&*older.to_string_lossy()), "{err}");
        rewrite(&sim, &older, &before);
        let (log, recs) = open(&sim, 400, 1).unwrap();
        assert_eq!(recs.len(), 33);
        log.trim(u64::MAX).unwrap();
        drop(log);
        let only = log_files(&sim);
        assert_eq!(only.len(), 1);
        rewrite(&sim, &path_of(only[0]), &[]);
        let err = open(&sim, 400, 1).err().expect("the only file, truncated to 0, opened");
        assert!(err.is_corruption(), "{err}");
        assert!(err.to_string().contains("holds no records"), "{err}");
    });
}

/// A crash at every step of a roll (temporary file created, header
/// written, fsynced, renamed, folder synced) leaves a log that recovers
/// every synced record: never a log file with a bad header.
#[test]
fn a_crash_at_any_step_of_creating_a_log_file_loses_nothing_and_leaves_no_bad_header() {
    buffered_and_direct(|| {
        for n in 0..12 {
            let sim = SimVfs::new(100 + n);
            let (log, _) = open(&sim, 1 << 20, 1).unwrap();
            for i in 1..=5 {
                log.append(&payload(i)).unwrap();
            }
            log.sync_all().unwrap();
            sim.crash_after(Some(n));
            let rolled = log.roll(0);
            sim.crash_after(None);
            if sim.crash_count() == 0 {
                assert!(rolled.is_ok(), "{rolled:?}");
                sim.crash();
            }
            drop(log);
            let (log, recs) = open(&sim, 1 << 20, 1).unwrap_or_else(|e| panic!("crash before op {n}: {e}"));
            assert_eq!(recs.len(), 5, "crash before op {n}");
            assert_eq!(log.append(b"6").unwrap(), 6);
            log.sync_all().unwrap();
            let v: Arc<dyn Vfs> = sim.boot();
            assert!(!v.list(dir()).unwrap().iter().any(|f| f.ends_with(".tmp")), "crash before op {n}");
        }
    });
}

/// A temporary file a crash left (on a real file system its name can be
/// durable before the rename) is removed, but only once recovery succeeded.
#[test]
fn a_leftover_temporary_file_is_removed_once_recovery_succeeded() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(22);
        let (log, _) = open(&sim, 1 << 20, 1).unwrap();
        for i in 1..=5 {
            log.append(&payload(i)).unwrap();
        }
        log.sync_all().unwrap();
        drop(log);
        let v: Arc<dyn Vfs> = sim.boot();
        let tmp = dir().join(tmp_file_name(6));
        let f = v.open(&tmp, OpenMode::CreateNew, false).unwrap();
        f.write_at(0, &encode_file_header(6)[..10]).unwrap();
        f.sync().unwrap();
        v.sync_dir(dir()).unwrap();
        // A recovery that fails (a checkpoint recorded LSN 9) leaves it.
        assert!(open(&sim, 1 << 20, 10).is_err());
        assert!(v.read_file(&tmp).unwrap().is_some());
        let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
        assert_eq!(recs.len(), 5);
        assert_eq!(log.pending().unwrap().remove, vec![tmp.clone()]);
        assert!(v.read_file(&tmp).unwrap().is_some(), "removed before recovery finished");
        assert_eq!(log.append(b"6").unwrap(), 6);
        log.roll(0).unwrap();
        assert_eq!(log_files(&sim), vec![1, 7]);
        assert_eq!(v.read_file(&tmp).unwrap(), None);
        drop(log);
        sim.crash();
        assert_eq!(open(&sim, 1 << 20, 1).unwrap().1.len(), 6);

        // No log file, only a temporary one: the first file reuses its name.
        let sim = SimVfs::new(23);
        let v: Arc<dyn Vfs> = sim.boot();
        v.create_dir_all(dir()).unwrap();
        for first in [40, 7] {
            let f = v.open(&dir().join(tmp_file_name(first)), OpenMode::CreateNew, false).unwrap();
            f.write_at(0, &[1; 100]).unwrap();
            f.sync().unwrap();
        }
        v.sync_dir(dir()).unwrap();
        let (log, recs) = open(&sim, 1 << 20, 40).unwrap();
        assert!(recs.is_empty());
        assert_eq!(log.append(b"a").unwrap(), 40);
        log.sync_all().unwrap();
        let names = v.list(dir()).unwrap();
        assert_eq!(names, vec![file_name(40)], "{names:?}");
        assert_eq!(frames_of(&bytes_of(&sim, &path_of(40))).len(), 1);
    });
}

/// A crafted file whose LSNs reach the end of the u64 range is `Corrupt`
/// naming it, not an overflow; so is a checkpoint LSN there.
#[test]
fn lsns_at_the_end_of_the_range_are_corruption_not_an_overflow() {
    for first in [u64::MAX, u64::MAX - 1, MAX_LSN - 1, MAX_LSN] {
        let sim = SimVfs::new(24);
        let v: Arc<dyn Vfs> = sim.boot();
        v.create_dir_all(dir()).unwrap();
        let mut bytes = encode_file_header(first).to_vec();
        for lsn in [first, first.wrapping_add(1)].into_iter().filter(|&l| l > 0) {
            frame(&mut bytes, lsn, 0, b"x");
        }
        let f = v.open(&path_of(first), OpenMode::CreateNew, false).unwrap();
        f.write_at(0, &bytes).unwrap();
        f.sync().unwrap();
        v.sync_dir(dir()).unwrap();
        let err = open(&sim, 1 << 20, 1).err().unwrap_or_else(|| panic!("first LSN {first} opened"));
        assert!(err.is_corruption(), "{first}: {err}");
        assert!(err.to_string().contains(&file_name(first)), "{first}: {err}");
    }
    let sim = SimVfs::new(25);
    for min_next in [u64::MAX, MAX_LSN] {
        let err = open(&sim, 1 << 20, min_next).err().expect("a checkpoint LSN past the range");
        assert!(err.is_corruption(), "{err}");
    }
}

/// Once the log was trimmed, `log.trim` names its oldest file: an oldest
/// file missing (or every file) is `Corrupt`, not a log that silently
/// starts later, while a log trimmed as far is read as usual.
#[test]
fn a_lost_oldest_log_file_is_told_from_a_trimmed_log() {
    let (sim, files) = several_files(26);
    let v: Arc<dyn Vfs> = sim.boot();
    let trim = dir().join(TRIM_FILE);
    // Never trimmed: nothing says how far the log reaches (as before).
    assert_eq!(v.read_file(&trim).unwrap(), None);
    let (log, _) = open(&sim, 400, 1).unwrap();
    log.trim(files[1] + 1).unwrap();
    drop(log);
    assert_eq!(log_files(&sim), files[1..].to_vec());
    assert_eq!(decode_trim(&v.read_file(&trim).unwrap().unwrap()), Ok(files[1]));
    let (_, recs) = open(&sim, 400, 1).unwrap();
    assert_eq!(recs.first().unwrap().0, files[1]);
    // The oldest file removed: the next one starts after the trim point.
    let oldest = path_of(files[1]);
    let before = bytes_of(&sim, &oldest);
    v.remove(&oldest).unwrap();
    v.sync_dir(dir()).unwrap();
    let err = open(&sim, 400, 1).err().expect("a log missing its oldest file opened");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("missing") && err.to_string().contains(&file_name(files[2])), "{err}");
    // Every file removed.
    for &first in &files[2..] {
        v.remove(&path_of(first)).unwrap();
    }
    let err = open(&sim, 400, 1).err().expect("a log with no file left opened");
    assert!(err.is_corruption() && err.to_string().contains(TRIM_FILE), "{err}");
    // A damaged log.trim is Corrupt naming it.
    let f = v.open(&oldest, OpenMode::CreateNew, false).unwrap();
    f.write_at(0, &before).unwrap();
    f.sync().unwrap();
    sim.corrupt(&trim, 9, 0x10);
    let err = open(&sim, 400, 1).err().expect("a damaged log.trim opened");
    assert!(err.is_corruption() && err.to_string().contains(TRIM_FILE), "{err}");
}

/// A crash at every step of a trim (log.trim written under a temporary
/// name, fsynced, renamed, the folder synced, files removed, the folder
/// synced) leaves a log that opens with every record from the trim point.
#[test]
fn a_crash_at_any_step_of_a_trim_leaves_a_log_that_opens() {
    for n in 0..16 {
        let (sim, files) = several_files(200 + n);
        let (log, _) = open(&sim, 400, 1).unwrap();
        sim.crash_after(Some(n));
        let _ = log.trim(files[2]);
        sim.crash_after(None);
        if sim.crash_count() == 1 {
            sim.crash();
        }
        drop(log);
        let (log, recs) = open(&sim, 400, 1).unwrap_or_else(|e| panic!("crash before op {n}: {e}"));
        assert!(recs.first().unwrap().0 <= files[2], "crash before op {n}");
        assert_eq!(recs.last().unwrap().0, 33, "crash before op {n}");
        log.append(b"x").unwrap();
        log.sync_all().unwrap();
        let v: Arc<dyn Vfs> = sim.boot();
        assert!(!v.list(dir()).unwrap().iter().any(|f| f.ends_with(".tmp")), "crash before op {n}");
    }
}

#[test]
fn commits_write_into_zeros_written_ahead_and_a_roll_cuts_them() {
    buffered_and_direct(|| {
        let sim = SimVfs::new(17);
        let size = 3 * ZERO_AHEAD;
        let (log, _) = open(&sim, size, 1).unwrap();
        let big = |i: u64| [payload(i), vec![b'y'; 900]].concat();
        let mut lens = Vec::new();
        let mut lsn = 0;
        while log_files(&sim).len() == 1 {
            lsn = log.append(&big(lsn + 1)).unwrap();
            log.sync_to(lsn).unwrap();
            let f = log.files.lock();
            let on_disk = f.current.len().unwrap();
            assert_eq!(on_disk, f.disk_len, "record {lsn}");
            if f.first_lsns.len() == 1 {
                // The records are followed by zeros: half a chunk at least,
                // or up to where the file rolls.
                let ahead = (ZERO_AHEAD / 2).min(size.next_multiple_of(PAGE).saturating_sub(f.current_len));
                assert!(on_disk >= f.current_len + ahead, "record {lsn}: {on_disk} bytes on disk");
                if lens.last() != Some(&on_disk) {
                    lens.push(on_disk);
                }
            }
        }
        // Thousands of commits, and the file grew only a chunk at a time
        // (so only those commits' fsyncs carried a new size).
        assert!(lsn > 3000, "{lsn} records");
        assert!(lens.len() as u64 <= size / ZERO_AHEAD + 1, "the file grew {} times: {lens:?}", lens.len());
        // The roll cut the zeros: the older file ends with its last record.
        let bytes = bytes_of(&sim, &path_of(1));
        let frames = frames_of(&bytes);
        let &(last, off, len, _) = frames.last().unwrap();
        assert_eq!((last, off + len), (lsn - 1, bytes.len()));
        // A power failure: every record back, the zeros after the newest
        // file's last one read as its end.
        drop(log);
        sim.crash();
        let (log, recs) = open(&sim, size, 1).unwrap();
        assert_eq!(recs.len() as u64, lsn);
        assert!(recs.iter().all(|(i, p)| *p == big(*i)));
        assert_eq!(log.append(b"next").unwrap(), lsn + 1);
    });
}
