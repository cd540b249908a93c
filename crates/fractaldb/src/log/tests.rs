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
    // Cut the last record in half, then add garbage after a whole record.
    let last_len = RECORD_HEADER_LEN + payload(10).len();
    std::fs::write(&path, &full[..full.len() - last_len / 2]).unwrap();
    let (log, recs) = recover(vfs.clone(), tmp.path(), opts, 1).unwrap();
    assert_eq!(recs.len(), 9);
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, full.len() - last_len);
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
fn a_newest_file_with_a_torn_header_is_removed() {
    let sim = SimVfs::new(4);
    let (log, _) = open(&sim, 1 << 20, 1).unwrap();
    for i in 1..=5 {
        log.append(&payload(i)).unwrap();
    }
    log.sync_all().unwrap();
    drop(log);
    // As if a crash came while the next file's header was being written.
    let v: Arc<dyn Vfs> = sim.boot();
    let f = v.open(&dir().join(file_name(6)), OpenMode::CreateNew, false).unwrap();
    f.write_at(0, &encode_file_header(6)[..10]).unwrap();
    f.sync().unwrap();
    v.sync_dir(dir()).unwrap();
    let (log, recs) = open(&sim, 1 << 20, 1).unwrap();
    assert_eq!(recs.len(), 5);
    assert_eq!(log_files(&sim), vec![1]);
    assert_eq!(log.append(b"6").unwrap(), 6);
}

#[test]
fn trim_deletes_only_files_wholly_before_the_lsn() {
    let sim = SimVfs::new(5);
    let (log, _) = open(&sim, 200, 1).unwrap();
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
    let (log, recs) = open(&sim, 200, 1).unwrap();
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
