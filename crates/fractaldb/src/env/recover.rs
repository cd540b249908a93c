//! Recovery at open: replaying the log into the dictionaries, rolling
//! back what no commit finished, noting progress, and the sweep of files
//! no one needs.

use super::*;
use crate::log::record::{Counts as RecordCounts, Msgs};

/// What the recovery at `Env::open` did (the server logs it).
#[derive(Debug, Clone, Copy, Default)]
pub struct RecoveryStats {
    /// Log records read (all of them are decoded).
    pub records_read: u64,
    /// Their payload bytes.
    pub bytes_read: u64,
    /// Records that changed a tree (writes at or past their dictionary's
    /// checkpoint, commits and aborts re-sent, unfinished transactions
    /// rolled back).
    pub replayed: u64,
    /// How long recovery took: reading, replaying, and the checkpoint
    /// after it when the open takes it (without the periodic
    /// checkpointer; with it, the checkpointer takes it after the open).
    pub duration: Duration,
}

/// Per dictionary file id: its name and its header's (ckpt_lsn, next_txid),
/// or why the header cannot be read.
type CkptInfo = HashMap<u64, (String, Result<(u64, u64)>)>;

impl Env {
    /// Replays the log into the dictionaries (each record at most once, see
    /// `log/record.rs`), then turns logging on and checkpoints if anything was
    /// replayed, so the next recovery starts from here. A dictionary is
    /// opened only if it has records to replay.
    pub(super) fn recover(&self, opts: &EnvOptions) -> Result<()> {
        let inner = &self.inner;
        let t0 = std::time::Instant::now();
        let (mut records_read, mut bytes_read) = (0u64, 0u64);
        let vfs = inner.ctx.vfs.clone();
        let log_opts = LogOptions { file_size_bytes: opts.log_file_size_bytes, direct_io: opts.direct_io };
        let mut ckpt_lsns = self.ckpt_lsns()?;
        let (min_next_lsn, mut next_txid) = log_start(&ckpt_lsns);
        // Every record is decoded: besides the writes to replay (those at or
        // after their dictionary's ckpt_lsn), the writes of transactions
        // give the keys their commit or abort must clean up.
        let mut replayed = 0u64;
        let mut txn_keys: HashMap<u64, Vec<UndoKey>> = HashMap::new();
        let mut progress = ReplayProgress::new(&*vfs, &inner.path, opts.notes.clone());
        // Transactions with a prepare record: (xid, first LSN, counter
        // deltas); an end record removes them.
        let mut prepared: HashMap<u64, (Vec<u8>, u64, RecordCounts)> = HashMap::new();
        let log = Log::recover(vfs, &inner.path, log_opts, min_next_lsn, &mut |lsn, payload| {
            records_read += 1;
            bytes_read += payload.len() as u64;
            progress.record(payload.len(), replayed);
            let rec = Record::decode(payload)
                .map_err(|why| Error::corrupt(&inner.path, None, format!("log record {lsn}: {why}")))?;
            replayed +=
                self.replay_record(lsn, rec, &mut ckpt_lsns, &mut next_txid, &mut txn_keys, &mut prepared)?;
            Ok(())
        })?;
        // Transactions the log shows no end for are rolled back, but for
        // the prepared ones: restored, still prepared (before the
        // checkpoint below, which must keep the log from their first write).
        replayed += self.restore_prepared(prepared, &mut txn_keys, &ckpt_lsns)?;
        let (rolled_back_changes, rolled_back) = self.roll_back_unfinished(txn_keys, &ckpt_lsns)?;
        replayed += rolled_back_changes;
        inner.txns.set_next_txid(next_txid);
        let _ = inner.ctx.log.set(Arc::new(log));
        let deferred = self.checkpoint_after_replay(opts, replayed)?;
        let duration = t0.elapsed();
        progress.done(records_read, replayed, rolled_back, deferred, duration);
        *inner.recovery.lock() = RecoveryStats { records_read, bytes_read, replayed, duration };
        Ok(())
    }

    /// Replays the decoded log record at `lsn`; returns how many changes it made to trees.
    fn replay_record(
        &self,
        lsn: u64,
        rec: Record,
        ckpt_lsns: &mut CkptInfo,
        next_txid: &mut u64,
        txn_keys: &mut HashMap<u64, Vec<UndoKey>>,
        prepared: &mut HashMap<u64, (Vec<u8>, u64, RecordCounts)>,
    ) -> Result<u64> {
        let mut replayed = 0u64;
        let (txid, body) = match rec {
            Record::TxnCommit { txid, counts } => {
                replayed += self.replay_counts(lsn, &counts, ckpt_lsns)?;
                (txid, MsgBody::plain_txn(MsgKind::Commit, txid, Box::new([])))
            }
            Record::TxnAbort { txid, lo, hi } => {
                (txid, MsgBody::plain_txn(MsgKind::Abort, txid, MsgBody::abort_val(lo, hi)))
            }
            Record::TxnPrepare { txid, first_lsn, xid, counts } => {
                *next_txid = (*next_txid).max(txid.saturating_add(1));
                prepared.insert(txid, (xid, first_lsn.min(lsn), counts));
                return Ok(replayed);
            }
            Record::Write { file_id, msgs } => {
                for (k, b) in &msgs {
                    *next_txid = (*next_txid).max(b.txid.saturating_add(1));
                    if b.provisional && b.kind == MsgKind::RangeDelete {
                        // Its clean-up covers the range (`UNDO_RANGE`).
                        txn_keys.entry(b.txid).or_default().push((file_id | UNDO_RANGE, b.val.clone()));
                    } else if b.provisional {
                        txn_keys.entry(b.txid).or_default().push((file_id, k.clone()));
                    }
                }
                if self.replay_write(lsn, file_id, msgs, ckpt_lsns)? {
                    replayed += 1;
                }
                return Ok(replayed);
            }
            _ => return Ok(replayed),
        };
        // A commit or abort: its clean-up messages again (they are
        // idempotent), to every key the transaction wrote.
        *next_txid = (*next_txid).max(txid.saturating_add(1));
        // A rollback to a savepoint leaves the transaction open.
        let ends = body.kind == MsgKind::Commit || body.abort_range() == Ok((0, u32::MAX));
        let keys = match ends {
            true => {
                prepared.remove(&txid);
                txn_keys.remove(&txid).unwrap_or_default()
            }
            false => txn_keys.get(&txid).cloned().unwrap_or_default(),
        };
        replayed += self.send_cleanup(ckpt_lsns, &keys, &body)?;
        Ok(replayed)
    }

    /// Rolls back, oldest first, the transactions in `txn_keys`; returns (changes to trees, how many).
    fn roll_back_unfinished(
        &self,
        txn_keys: HashMap<u64, Vec<UndoKey>>,
        ckpt_lsns: &CkptInfo,
    ) -> Result<(u64, usize)> {
        let mut replayed = 0u64;
        let mut open: Vec<_> = txn_keys.into_iter().collect();
        open.sort_by_key(|(t, _)| *t);
        let rolled_back = open.len();
        for (txid, keys) in open {
            let body = MsgBody::plain_txn(MsgKind::Abort, txid, MsgBody::abort_val(0, u32::MAX));
            replayed += self.send_cleanup(ckpt_lsns, &keys, &body)? + 1;
        }
        Ok((replayed, rolled_back))
    }

    /// Replays a `Write` record at `lsn` into dictionary `file_id` if its
    /// checkpoint does not hold it yet (`lsn >= ckpt_lsn`); returns whether
    /// it did. A dictionary whose file cannot be read is an error here only
    /// if the log has writes for it; else at `open_dictionary`.
    fn replay_write(&self, lsn: u64, file_id: u64, msgs: Msgs, ckpt_lsns: &mut CkptInfo) -> Result<bool> {
        let ckpt_lsn = match ckpt_lsns.get(&file_id) {
            // A dictionary dropped since is not in the catalog: skip its writes.
            None => return Ok(false),
            Some((_, Ok((l, _)))) => *l,
            Some((_, Err(_))) => match ckpt_lsns.remove(&file_id) {
                Some((_, Err(e))) => return Err(e),
                _ => unreachable!("matched just above"),
            },
        };
        if lsn >= ckpt_lsn {
            let tree = self.open_tree(&ckpt_lsns[&file_id].0)?;
            debug_assert_eq!(tree.opened_ckpt_lsn, ckpt_lsn);
            tree.write(msgs)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Adds a commit record's counter deltas (at `lsn`) to the
    /// dictionaries whose checkpoint does not hold them yet (`lsn >=
    /// ckpt_lsn`, as for writes); returns how many it changed. A
    /// dictionary dropped since is skipped; one whose header cannot be
    /// read is an error.
    fn replay_counts(&self, lsn: u64, counts: &RecordCounts, ckpt_lsns: &CkptInfo) -> Result<u64> {
        let mut changed = 0;
        for (file_id, d) in counts {
            let Some((name, info)) = ckpt_lsns.get(file_id) else { continue };
            let ckpt_lsn = match info {
                Ok((l, _)) => *l,
                Err(e) => {
                    return Err(Error::corrupt(
                        &self.inner.path,
                        None,
                        format!("dictionary {name:?} is unreadable ({e}) and the log has counts for it"),
                    ))
                }
            };
            if lsn >= ckpt_lsn {
                self.open_tree(name)?.counts.lock().replay(d);
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Restores the transactions with a prepare record and no end record
    /// (`prepared`: txid -> (xid, first LSN, counter deltas)), still
    /// prepared, their written keys taken out of `txn_keys`; returns how
    /// many.
    fn restore_prepared(
        &self,
        prepared: HashMap<u64, (Vec<u8>, u64, RecordCounts)>,
        txn_keys: &mut HashMap<u64, Vec<UndoKey>>,
        ckpt_lsns: &CkptInfo,
    ) -> Result<u64> {
        let inner = &self.inner;
        let mut replayed = 0;
        let mut restore: Vec<_> = prepared.into_iter().collect();
        restore.sort_by_key(|(t, _)| *t);
        for (txid, (xid, first_lsn, counts)) in restore {
            let keys = txn_keys.remove(&txid).unwrap_or_default();
            let mut trees = HashMap::new();
            let counted = counts.iter().map(|(file_id, _)| file_id);
            for file_id in keys.iter().map(|(entry_id, _)| entry_id & !UNDO_RANGE).chain(counted.copied()) {
                let file_id = &file_id;
                if let (false, Some((name, info))) = (trees.contains_key(file_id), ckpt_lsns.get(file_id)) {
                    if let Err(e) = info {
                        return Err(Error::corrupt(
                            &inner.path,
                            None,
                            format!(
                                "dictionary {name:?} is unreadable ({e}) and a prepared transaction wrote it"
                            ),
                        ));
                    }
                    trees.insert(*file_id, self.open_tree(name)?);
                }
            }
            // Deltas for a dictionary dropped since have no tree: dropped.
            let counts =
                counts.into_iter().filter_map(|(id, d)| Some((trees.get(&id)?.clone(), d))).collect();
            inner.txns.restore_prepared(txid, xid, first_lsn, keys, trees, counts)?;
            replayed += 1;
        }
        Ok(replayed)
    }

    /// The replay succeeded: every record is in its tree, so this
    /// checkpoint's headers are right even if it fails halfway (the open
    /// then fails, and the next recovery replays each tree from the
    /// header it has, old or new). Returns whether it was deferred.
    ///
    /// With the periodic checkpointer, the open does not wait for it:
    /// the checkpointer takes it at once (`Inner::checkpoint_due`),
    /// not paced. Until its header is durable the log keeps
    /// every record replayed here (only a checkpoint trims it), so a
    /// crash meanwhile replays them again from the same headers, and
    /// the transactions rolled back (not logged) are rolled back
    /// again. The replay's writes sit in the cache as dirty nodes, as
    /// any writes do.
    fn checkpoint_after_replay(&self, opts: &EnvOptions, replayed: u64) -> Result<bool> {
        let inner = &self.inner;
        let deferred =
            replayed > 0 && opts.background_threads && opts.checkpoint_period.is_some_and(|p| !p.is_zero());
        if deferred {
            inner.checkpoint_due.store(true, Ordering::SeqCst);
        } else if replayed > 0 {
            inner.checkpoint()?;
        }
        Ok(deferred)
    }

    /// Sends clean-up message `body` to `keys` during recovery, skipping
    /// dictionaries dropped since; returns how many tree writes it made.
    fn send_cleanup(&self, ckpt_lsns: &CkptInfo, keys: &[UndoKey], body: &MsgBody) -> Result<u64> {
        let mut writes = 0;
        for run in keys.chunk_by(|a, b| a.0 == b.0) {
            let Some((name, info)) = ckpt_lsns.get(&(run[0].0 & !UNDO_RANGE)) else { continue };
            if let Err(e) = info {
                return Err(Error::corrupt(
                    &self.inner.path,
                    None,
                    format!("dictionary {name:?} is unreadable ({e}) and the log has transactions on it"),
                ));
            }
            let tree = self.open_tree(name)?;
            for c in run.chunks(1024) {
                let msgs = crate::txn::cleanup_msgs(c, body);
                tree.write_msgs(&msgs, None, Logging::None)?;
                writes += 1;
            }
        }
        Ok(writes)
    }

    /// Each dictionary's name and the `ckpt_lsn` of its newest valid header
    /// (or why it cannot be read), by file id.
    fn ckpt_lsns(&self) -> Result<CkptInfo> {
        let dicts: Vec<(String, u64)> =
            self.inner.open.lock().catalog.dicts.iter().map(|(n, &id)| (n.clone(), id)).collect();
        let mut out = HashMap::new();
        for (name, id) in dicts {
            let path = dict_file(&self.inner.path, id);
            let lsn = BlockFile::open(&*self.inner.ctx.vfs, &path, false).and_then(|(_, meta)| {
                let m = Meta::decode(&meta).map_err(|r| Error::corrupt(&path, None, r))?;
                Ok((m.ckpt_lsn, m.next_txid))
            });
            out.insert(id, (name, lsn));
        }
        Ok(out)
    }
}

/// Where the log and the txids go on from, as the dictionaries' checkpoints
/// recorded them: the least next LSN the log must reach, and the next txid.
fn log_start(ckpt_lsns: &CkptInfo) -> (u64, u64) {
    let min_next_lsn =
        // Saturating: a header claiming LSN u64::MAX is refused by
        // `Log::recover` (past `MAX_LSN`), not an overflow here.
        ckpt_lsns.values().filter_map(|(_, l)| l.as_ref().ok().map(|m| m.0)).max().unwrap_or(0).saturating_add(1);
    let next_txid =
        ckpt_lsns.values().filter_map(|(_, l)| l.as_ref().ok().map(|m| m.1)).max().unwrap_or(0).max(1);
    (min_next_lsn, next_txid)
}

/// Recovery notes its progress this often while it replays.
const REPLAY_NOTE_EVERY: Duration = Duration::from_secs(3);

/// What recovery says of its progress (`EnvOptions::notes`): the log it
/// has to read when it starts, then every `REPLAY_NOTE_EVERY` the bytes
/// read of that total and the rate, and a summary at the end. Silent when
/// the log holds no record (a cleanly closed environment).
struct ReplayProgress {
    notes: Option<Notes>,
    path: PathBuf,
    /// Bytes of the log files when recovery began (headers, records and
    /// any torn tail); None if a length could not be read.
    total: Option<u64>,
    /// Bytes of the records read so far, frames included.
    read: u64,
    records: u64,
    start: Instant,
    last_note: Instant,
    /// Log files found, and whether the first note was made.
    files: u64,
    announced: bool,
}

impl ReplayProgress {
    fn new(vfs: &dyn Vfs, dir: &Path, notes: Option<Notes>) -> ReplayProgress {
        // Best effort: the lengths only make the notes say how far along
        // recovery is; `Log::recover` reports any real problem.
        let mut total = Some(0u64);
        let mut files = 0;
        for name in vfs.list(dir).unwrap_or_default() {
            if crate::log::parse_file_name(&name).is_none() {
                continue;
            }
            files += 1;
            let len =
                vfs.open(&dir.join(&name), crate::file::OpenMode::Existing, false).and_then(|f| f.len());
            total = total.zip(len.ok()).map(|(t, l)| t + l);
        }
        let now = Instant::now();
        ReplayProgress {
            notes,
            path: dir.to_path_buf(),
            total,
            read: 0,
            records: 0,
            start: now,
            last_note: now,
            files,
            announced: false,
        }
    }

    /// The first note, once the first record is read: a log without
    /// records (a cleanly closed environment) is opened silently.
    fn announce(&mut self) {
        self.announced = true;
        let files = self.files;
        let headers = files * crate::log::FILE_HEADER_LEN as u64;
        match self.total {
            Some(t) if t > headers => {
                self.note(&format!("recovery: {} of log in {files} file(s) to read", mib(t)));
            }
            None => self.note(&format!("recovery: {files} log file(s) to read")),
            Some(_) => {}
        }
    }

    fn note(&self, line: &str) {
        Notes::note(self.notes.as_ref(), &format!("{} {line}", self.path.display()));
    }

    /// One record of `payload` bytes was read; `applied` so far.
    fn record(&mut self, payload: usize, applied: u64) {
        if !self.announced {
            self.announce();
        }
        self.read += (payload + crate::log::RECORD_HEADER_LEN) as u64;
        self.records += 1;
        if !self.records.is_multiple_of(256) || self.last_note.elapsed() < REPLAY_NOTE_EVERY {
            return;
        }
        self.last_note = Instant::now();
        let secs = self.start.elapsed().as_secs_f64();
        let of = match self.total {
            Some(t) => format!(" of {} ({:.0}%)", mib(t), 100.0 * self.read as f64 / t.max(1) as f64),
            None => String::new(),
        };
        self.note(&format!(
            "recovery: {}{of} of log read in {secs:.1} s, {:.1} MiB/s; {} records, {applied} applied",
            mib(self.read),
            self.read as f64 / (1 << 20) as f64 / secs.max(1e-3),
            self.records,
        ));
    }

    fn done(&self, records: u64, applied: u64, rolled_back: usize, deferred: bool, took: Duration) {
        if records == 0 {
            return;
        }
        let secs = took.as_secs_f64();
        let checkpoint = match (applied, deferred) {
            (0, _) => "nothing to checkpoint",
            (_, true) => "the checkpoint follows in the background",
            (_, false) => "checkpoint taken",
        };
        self.note(&format!(
            "recovery: done in {secs:.1} s: {} of log read ({:.1} MiB/s), {records} records, {applied} applied, \
             {rolled_back} unfinished transaction(s) rolled back; {checkpoint}",
            mib(self.read),
            self.read as f64 / (1 << 20) as f64 / secs.max(1e-3),
        ));
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The sweep at open, once recovery has succeeded: deletes what no one
/// needs, and only with a positive reason for each file (see `catalog.rs`):
/// - `txn-<id>.undo`: a transaction's undo scratch, which outlives no process;
/// - `d<id>.fdb` with `id` in `catalog.dropped`: a drop wrote the catalog and
///   a crash came before its removal of the file was durable;
/// - `d<id>.fdb` with `id >= catalog.next_file_id`: a create made the file
///   and a crash came before its catalog write (nothing in it was ever
///   acknowledged; the id will be handed out again).
///
/// Any other file the catalog does not name is left where it is, with a
/// warning: without a reason, deleting it could lose a dictionary. Then,
/// the removals durable, `catalog.dropped` is emptied in memory (the next
/// catalog write leaves the ids out; until then the list on disk names
/// files that are gone, which is harmless).
pub(super) fn remove_orphans(vfs: &dyn Vfs, dir: &Path, catalog: &mut Catalog) -> Result<()> {
    let live: HashSet<u64> = catalog.dicts.values().copied().collect();
    let mut removed = false;
    for name in vfs.list(dir)? {
        if name.starts_with("txn-") && name.ends_with(".undo") {
            vfs.remove(&dir.join(&name))?;
            removed = true;
            continue;
        }
        let Some(id) = crate::catalog::parse_dict_file(&name) else { continue };
        if live.contains(&id) {
            continue;
        }
        if catalog.dropped.contains(&id) || id >= catalog.next_file_id {
            vfs.remove(&dir.join(&name))?;
            removed = true;
        } else {
            eprintln!(
                "fractaldb: {}: the catalog names no dictionary in this file and does not list it as \
                 dropped; left in place",
                dir.join(&name).display()
            );
        }
    }
    if removed {
        vfs.sync_dir(dir)?;
    }
    catalog.dropped.clear();
    Ok(())
}
