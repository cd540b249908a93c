//! The write-ahead log: one per environment, a sequence of files in the
//! environment's folder, each holding framed, checksummed records numbered
//! by LSN.
//!
//! ## Format (version 2)
//!
//! LSNs are record numbers 1, 2, 3, ... with no gaps, below `MAX_LSN`. A log
//! file is named `log-<first LSN, 20 decimal digits>.fdl` and starts with a
//! 24-byte header:
//!
//! ```text
//! magic "FDBLOG01" (8) | version u32 (2) | first LSN u64 | crc32c u32 of the first 20 bytes
//! ```
//!
//! then records, back to back, all integers little-endian:
//!
//! ```text
//! len u32 (payload bytes) | crc32c u32 of (payload ‖ lsn ‖ synced) | lsn u64 | synced u64 | payload
//! ```
//!
//! `synced` is the LSN up to which the log was durable (fsynced) when the
//! record was appended, always below `lsn`: a valid record vouches that
//! every record up to its `synced` had been acknowledged. The payload is
//! opaque to the framing (`record.rs` gives it meaning).
//!
//! Version 1 (read, never written) has no `synced`: a 16-byte frame
//! `len u32 | crc32c u32 of (payload ‖ lsn) | lsn u64 | payload`. Recovery
//! starts a version-2 file before appending after a version-1 one (or, if
//! that file holds no records, rewrites its header as version 2).
//!
//! Besides the log files, `log.trim` (20 bytes: magic "FDBTRIM1" | u64 |
//! crc32c u32 of the 16 bytes before) names the first LSN of the oldest
//! log file the last trim kept; it does not exist until a trim deleted a
//! file.
//!
//! ## Invariants
//!
//! - Records reach the files in LSN order and a record is durable only once
//!   `durable_lsn() >= its lsn`; `sync_to` returns once that holds. A
//!   record's `synced` is the `durable_lsn` when it was appended, so it
//!   never claims more than the disk held.
//! - A file is rolled only at a record boundary, and only after its records
//!   are fsynced, so only the newest file can end in a torn record.
//! - Every file with a log file name has a durable, valid header: a file is
//!   created under a temporary name (`log-<first LSN>.fdl.tmp`), its header
//!   written and fsynced, then renamed to its name and the folder synced,
//!   all before any record goes into it (`create_file`). So a log file with
//!   a bad header, the newest included, is damage, `Error::Corrupt` naming
//!   it: it may have held acknowledged records. A crash during a creation
//!   leaves at most the temporary file, which holds nothing and is removed
//!   once recovery succeeded (`Pending::remove`). (A build that wrote the
//!   header under the final name could leave, at a crash, a newest file
//!   with a torn header and nothing after it. That cannot be told from a
//!   file truncated or zeroed after its records were acknowledged, so it is
//!   refused too, the error saying that it holds no records: an operator
//!   who knows such a build crashed can remove it.)
//! - Files are deleted only from the front, by `trim`, and only after
//!   `log.trim` durably names the oldest file kept (written under a
//!   temporary name, fsynced, renamed, the folder synced): the oldest log
//!   file starts at or before what `log.trim` says. So an oldest file that
//!   starts after it means log files were lost, whose records a
//!   dictionary's checkpoint may need: `Error::Corrupt` (a check that does
//!   not depend on the dictionaries' `ckpt_lsn`s, which a dictionary not
//!   opened for a while keeps old legitimately). A log never trimmed has no
//!   `log.trim`, and losing its oldest file is not detected; nor is losing
//!   the newest file, which is the same as losing its tail.
//! - With O_DIRECT (`LogOptions::direct_io`, where the file system allows
//!   it) every write is whole pages: it rewrites the file's last, partial
//!   page (kept in `Files::tail`) with the new records after it, padded
//!   with zeros. The padding past the last record is cut off before a file
//!   is rolled, and recovery cuts it off the newest file like a torn tail
//!   (and accepts less than a page of zeros at the end of an older one, in
//!   case a crash came between the two). O_DIRECT spares the commit path
//!   the kernel's copy into the page cache and its dirty-page bookkeeping.
//! - In either mode the newest file has zeros written ahead of its records
//!   (`zero_ahead`), so a commit's fdatasync need not change the file's
//!   size; recovery cuts them like the padding, and a roll cuts them (and
//!   fsyncs) before the next file is created.
//! - After a write or fsync error the log is poisoned: every later append
//!   and sync fails (the environment turns read-only). What reached the disk
//!   is sorted out by recovery at the next open.
//!
//! ## Recovery: a torn tail or damage
//!
//! The newest file ends at its first record that is not whole and valid
//! with the expected LSN. Past that point, recovery looks for valid records
//! (a frame whose checksum holds and whose LSN is above the bad one's, at
//! any byte offset, since the bad record's length may be what is damaged).
//! If one of them vouches (`synced`) for the bad record's LSN, the bad
//! record had been fsynced whole: that is media damage of an acknowledged
//! record, and recovery fails with `Error::Corrupt` naming the file and the
//! offset, changing nothing. Otherwise it is a torn tail, the unsynced end
//! of the last writes before a crash: the log ends there. (Records of the
//! last group commits before a crash are acknowledged but vouched for by
//! no later record; damage to them cannot be told from a torn write.)
//! Recovery changes no file while it reads: the cut of the torn tail (and
//! the removal of temporary files left by a crash) waits in
//! `Files::pending` until `finish_recovery`, which the first write of the
//! log also runs, so no new record is written over or before the old
//! bytes. In the environment the log is first written by the checkpoint
//! after replay, so a failed replay leaves the log files as they were.
//!
//! ## Group commit
//!
//! `append` only copies the record into memory. `sync_to(lsn)` makes one
//! thread the leader: it takes everything appended so far, writes it and
//! fsyncs once, while the others wait; whoever still needs more when it is
//! done becomes the next leader. So N concurrent committers share about one
//! fsync, and a committer never waits for more than two. Waiters park
//! (`parking_lot_core`) with the number of the round they need as their
//! token: the end of a round wakes one waiter of the next round first, to
//! lead it, then its own members, and no one else. A woken member returns
//! on reading the atomic `durable` mirror, without taking `mem` again: with
//! a condition variable every member had to retake the mutex to return,
//! one after another, each waiting for a core.
//!
//! `mem` is the only lock of the append path. The values other threads
//! read often (the next LSN, the bytes buffered, the durable LSN, whether a
//! round is in flight, whether the log failed) are mirrored in atomics,
//! written under `mem` and read without it; each reader is right with an
//! older value (see `Mirror`).

pub(crate) mod record;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::file::{AlignedBuf, OpenMode, Vfs, VfsFile, PAGE};

const MAGIC: &[u8; 8] = b"FDBLOG01";
/// The format version written.
const VERSION: u32 = 2;
/// The first format version: frames without `synced` (read only).
const VERSION_1: u32 = 1;
/// Bytes of a file header.
pub(crate) const FILE_HEADER_LEN: usize = 24;
/// Bytes of a record's frame before its payload.
pub(crate) const RECORD_HEADER_LEN: usize = 24;
/// Bytes of a version-1 record's frame before its payload.
const RECORD_HEADER_LEN_V1: usize = 16;
/// The largest payload accepted (a bigger `len` on disk is damage).
const MAX_PAYLOAD: usize = 1 << 30;
/// LSNs are below this (a billion records a second would take 146 years to
/// get there): a file header or checkpoint naming one at or past it is
/// damage, and `lsn + 1` never overflows.
pub(crate) const MAX_LSN: u64 = 1 << 62;

/// Settings of the log.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogOptions {
    /// A file is closed and a new one started once it reaches this size.
    pub file_size_bytes: u64,
    /// Write the files with O_DIRECT where the file system allows it.
    pub direct_io: bool,
}

/// Counters of the log, for benchmarks (fsyncs per commit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Records appended since the environment opened.
    pub records: u64,
    /// Bytes written to log files (frames and payloads).
    pub bytes: u64,
    /// fsyncs of log files.
    pub fsyncs: u64,
    /// Log files created.
    pub files_created: u64,
    /// Log files deleted by `trim`.
    pub files_deleted: u64,
}

/// The name of the log file whose first record is `first_lsn`.
pub(crate) fn file_name(first_lsn: u64) -> String {
    format!("log-{first_lsn:020}.fdl")
}

/// The file saying how far the log was trimmed (see `Log::trim`).
pub(crate) const TRIM_FILE: &str = "log.trim";
const TRIM_MAGIC: &[u8; 8] = b"FDBTRIM1";

/// `log.trim`'s 20 bytes: magic "FDBTRIM1" | first LSN of the oldest log
/// file kept, u64 | crc32c u32 of the 16 bytes before.
fn encode_trim(first: u64) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[..8].copy_from_slice(TRIM_MAGIC);
    b[8..16].copy_from_slice(&first.to_le_bytes());
    let crc = crc32c::crc32c(&b[..16]);
    b[16..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode_trim(b: &[u8]) -> std::result::Result<u64, String> {
    if b.len() != 20 || &b[..8] != TRIM_MAGIC {
        return Err(format!("not a trim record ({} bytes)", b.len()));
    }
    if crc32c::crc32c(&b[..16]).to_le_bytes() != b[16..20] {
        return Err("trim record checksum mismatch".into());
    }
    Ok(u64::from_le_bytes(b[8..16].try_into().unwrap()))
}

/// The name a log file is created under until its header is durable.
fn tmp_file_name(first_lsn: u64) -> String {
    format!("{}.tmp", file_name(first_lsn))
}

/// The first LSN of a log file, from its name; None if it is not one.
pub(crate) fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("log-")?.strip_suffix(".fdl")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn encode_file_header_version(first_lsn: u64, version: u32) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..20].copy_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32c::crc32c(&h[..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

fn encode_file_header(first_lsn: u64) -> [u8; FILE_HEADER_LEN] {
    encode_file_header_version(first_lsn, VERSION)
}

/// The first LSN and format version a file header names, or why it is not
/// a valid header.
fn decode_file_header(h: &[u8]) -> std::result::Result<(u64, u32), String> {
    if h.len() < FILE_HEADER_LEN {
        return Err(format!("file is {} bytes, shorter than its header", h.len()));
    }
    if &h[..8] != MAGIC {
        return Err("bad magic number".into());
    }
    let crc = u32::from_le_bytes(h[20..24].try_into().unwrap());
    if crc32c::crc32c(&h[..20]) != crc {
        return Err("header checksum mismatch".into());
    }
    let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
    if version != VERSION && version != VERSION_1 {
        return Err(format!("log format version {version}, this build reads {VERSION_1} and {VERSION}"));
    }
    Ok((u64::from_le_bytes(h[12..20].try_into().unwrap()), version))
}

fn record_crc(payload: &[u8], lsn: u64, synced: u64) -> u32 {
    let mut tail = [0u8; 16];
    tail[..8].copy_from_slice(&lsn.to_le_bytes());
    tail[8..].copy_from_slice(&synced.to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(payload), &tail)
}

fn record_crc_v1(payload: &[u8], lsn: u64) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(payload), &lsn.to_le_bytes())
}

/// The bytes of a record's frame before its payload, in a file of `version`.
fn frame_header_len(version: u32) -> usize {
    if version == VERSION_1 {
        RECORD_HEADER_LEN_V1
    } else {
        RECORD_HEADER_LEN
    }
}

/// A whole, valid record read from a file.
#[derive(Debug)]
struct Frame<'a> {
    lsn: u64,
    /// The LSN the log had made durable when the record was appended (0 in
    /// version 1, which does not say).
    synced: u64,
    payload: &'a [u8],
    /// The frame's full length.
    len: usize,
}

/// Parses the record at the start of `b` in a file of `version` if its LSN
/// passes `lsn_ok` (checked before the checksum is computed): None if it is
/// not a whole, valid record.
fn parse_frame(b: &[u8], version: u32, lsn_ok: impl Fn(u64) -> bool) -> Option<Frame<'_>> {
    let head = frame_header_len(version);
    if b.len() < head {
        return None;
    }
    let len = u32::from_le_bytes(b[0..4].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(b[4..8].try_into().unwrap());
    let lsn = u64::from_le_bytes(b[8..16].try_into().unwrap());
    if !lsn_ok(lsn) || len > MAX_PAYLOAD || b.len() < head + len {
        return None;
    }
    let payload = &b[head..head + len];
    let (synced, expected) = if version == VERSION_1 {
        (0, record_crc_v1(payload, lsn))
    } else {
        let synced = u64::from_le_bytes(b[16..24].try_into().unwrap());
        (synced, record_crc(payload, lsn, synced))
    };
    // A record never vouches for itself or a later one.
    (expected == crc && synced < lsn).then_some(Frame { lsn, synced, payload, len: head + len })
}

/// Parses the record at the start of `b`, expecting `lsn`.
fn parse_record(b: &[u8], lsn: u64, version: u32) -> Option<Frame<'_>> {
    parse_frame(b, version, |found| found == lsn)
}

/// What valid records past a bad one say.
#[derive(Debug, Default, PartialEq, Eq)]
struct Beyond {
    /// The first valid record found: its LSN and offset in the bytes searched.
    first: Option<(u64, usize)>,
    /// The record vouching for the highest LSN: its `synced`, LSN and offset.
    best: Option<(u64, u64, usize)>,
}

/// Looks for valid records in `b`, the bytes after a bad record expected to
/// be `lsn`: frames at any byte offset whose checksum holds and whose LSN is
/// above `lsn` (and no further above it than one per frame header's worth of
/// bytes, which is all the LSNs the bytes could hold, so garbage rarely
/// gets as far as a checksum). After a valid frame the search goes on
/// after it.
fn search_beyond(b: &[u8], lsn: u64, version: u32) -> Beyond {
    let head = frame_header_len(version);
    let mut out = Beyond::default();
    let mut i = 0;
    while i + head <= b.len() {
        let max = lsn.saturating_add(1 + (i / head) as u64);
        match parse_frame(&b[i..], version, |found| found > lsn && found <= max) {
            Some(fr) => {
                out.first.get_or_insert((fr.lsn, i));
                if out.best.is_none_or(|(s, _, _)| fr.synced > s) {
                    out.best = Some((fr.synced, fr.lsn, i));
                }
                i += fr.len;
            }
            None => i += 1,
        }
    }
    out
}

/// Appends one framed record to `buf`.
fn frame(buf: &mut Vec<u8>, lsn: u64, synced: u64, payload: &[u8]) {
    debug_assert!(synced < lsn, "record {lsn} vouches for {synced}");
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&record_crc(payload, lsn, synced).to_le_bytes());
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(&synced.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// What recovery leaves to do to the files once the caller's recovery has
/// succeeded (`Log::finish_recovery`): until then no file is changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// Temporary files a crash left while creating a log file (each holds
    /// at most a header), to remove.
    pub remove: Vec<PathBuf>,
    /// The current file's length on disk: longer than `Files::current_len`
    /// by a torn tail (or O_DIRECT padding) to cut.
    pub disk_len: u64,
    /// The current file is in format version 1: records are not appended
    /// to it.
    pub old_version: bool,
}

/// What appenders and syncers share.
struct Mem {
    /// The LSN the next append gets.
    next_lsn: u64,
    /// Framed records appended but not yet taken by a leader.
    buf: Vec<u8>,
    /// The LSN of the first record in `buf` (== next_lsn when it is empty).
    buf_first_lsn: u64,
    /// Every record up to here is durable.
    durable_lsn: u64,
    /// A leader is writing and fsyncing.
    leader: bool,
    /// Group commits led so far; the one in flight (if `leader`) is
    /// number `round`, and holds the records before `buf_first_lsn`.
    round: u64,
    /// Why the log stopped, after a write or fsync error.
    failed: Option<String>,
}

/// Copies of `Mem`'s fields, each stored under `mem` right after the field
/// changes and loaded without it. A load may see an older value; every
/// reader is right with one:
/// - `next_lsn`: `last_lsn` is a lower bound for the first LSN of a
///   transaction's first record (`note_first_write`: lower keeps more log),
///   and `sync_all` covers every record whose append returned before it
///   was called (the append's store happens before that call).
/// - `buffered`: the 4 MiB bound on what a writer leaves buffered is
///   approximate anyway.
/// - `durable`: only grows, and a record at or below it is durable.
/// - `leading`, `failed`: read by a committer about to park, under the
///   parking lot's own lock, against a leader that stores them before it
///   unparks (`Log::park_for`).
struct Mirror {
    next_lsn: AtomicU64,
    buffered: AtomicUsize,
    durable: AtomicU64,
    leading: AtomicBool,
    failed: AtomicBool,
}

/// The file being written; only the leader (or `trim`) holds it.
struct Files {
    current: Arc<dyn VfsFile>,
    current_len: u64,
    /// The current file's length on disk: `current_len`, then zeros (a
    /// direct write's padding, the zeros written ahead by `zero_ahead`,
    /// or before `finish_pending`, a torn tail). Never below `current_len`.
    disk_len: u64,
    /// The bytes of `current` from `current_len` rounded down to a page up
    /// to `current_len`: a direct write starts by rewriting them.
    tail: Vec<u8>,
    /// Where a direct write is put together (page-aligned), kept between writes.
    scratch: Option<AlignedBuf>,
    /// First LSN of every file, oldest first; the last is `current`'s.
    first_lsns: VecDeque<u64>,
    /// What recovery left to do before anything is written (see `Pending`).
    pending: Option<Pending>,
}

/// Where a backup cuts the log (`Log::backup_point`).
#[derive(Debug, Clone)]
pub(crate) struct BackupPoint {
    /// First LSN of every log file, oldest first.
    pub first_lsns: Vec<u64>,
    /// Bytes of the newest file that hold records, all of them durable.
    pub current_len: u64,
    /// The last record in those bytes.
    pub lsn: u64,
}

/// The write-ahead log of an environment.
pub(crate) struct Log {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    opts: LogOptions,
    mem: Mutex<Mem>,
    /// `Mem`'s fields other threads read without taking `mem`.
    mirror: Mirror,
    /// The address committers park on (`Log::park_for`), with their
    /// round as the token; only its address is used.
    park_key: u8,
    /// Notified at each round's end, for those who wait under `mem` for
    /// no round to be in flight (`roll`, `backup_point`).
    idle: Condvar,
    files: Mutex<Files>,
    records: AtomicU64,
    bytes: AtomicU64,
    fsyncs: AtomicU64,
    files_created: AtomicU64,
    files_deleted: AtomicU64,
}

impl Log {
    /// Opens the log in `dir`: checks every file, finds where the newest
    /// ends (a torn tail, or damage to an acknowledged record, which is
    /// `Error::Corrupt`), hands every record to `replay` in LSN order (one
    /// file in memory at a time, so a long log never has to fit in memory;
    /// a file's records only once the whole file checked out) and returns
    /// the log, appending after the last valid record. `replay` may see
    /// records of an older file before a damaged later one makes this an
    /// error. With no log files, the log starts at `min_next_lsn`; with
    /// files, their records must reach at least `min_next_lsn - 1` (a
    /// checkpoint recorded that LSN, so the log had made it durable).
    ///
    /// No file is changed (but for the first log file, created if there is
    /// none): what recovery would cut or remove waits in
    /// `pending()` until `finish_recovery`, which the caller runs once its
    /// own recovery succeeded, and the log's first write runs if the
    /// caller did not.
    pub(crate) fn recover(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        opts: LogOptions,
        min_next_lsn: u64,
        replay: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<Log> {
        let min_next_lsn = min_next_lsn.max(1);
        if min_next_lsn >= MAX_LSN {
            let why = format!("a checkpoint recorded LSN {}, past any LSN the log reaches", min_next_lsn - 1);
            return Err(Error::corrupt(dir, None, why));
        }
        let names = vfs.list(dir)?;
        let mut firsts: Vec<u64> = names.iter().filter_map(|n| parse_file_name(n)).collect();
        firsts.sort_unstable();
        let tmps = temp_files(&names, dir);
        check_trim(&*vfs, dir, &firsts)?;
        let mut pending = Pending { remove: tmps, disk_len: 0, old_version: false };
        let Replayed { mut kept, next_lsn, tail_len, mut last_page } =
            replay_files(&*vfs, dir, &firsts, &mut pending, replay)?;
        // A file just created has nothing to cut and its header is synced;
        // only temporary files may be left to remove.
        if next_lsn.is_none() {
            pending.disk_len = FILE_HEADER_LEN as u64;
        }
        let pending = (next_lsn.is_some() || !pending.remove.is_empty()).then_some(pending);
        let (current, current_len, disk_len, next_lsn) = match next_lsn {
            Some(next) => {
                check_reaches(dir, next, min_next_lsn)?;
                let first = *kept.back().unwrap();
                let f = vfs.open(&dir.join(file_name(first)), OpenMode::Existing, opts.direct_io)?;
                let disk_len = pending.as_ref().map_or(tail_len, |p| p.disk_len);
                (f, tail_len, disk_len, next)
            }
            None => {
                let (f, header, disk_len) = create_file(&*vfs, dir, min_next_lsn, opts.direct_io)?;
                last_page = header.to_vec();
                kept.push_back(min_next_lsn);
                (f, FILE_HEADER_LEN as u64, disk_len, min_next_lsn)
            }
        };
        debug_assert!(disk_len >= current_len);
        let files = Files {
            current,
            current_len,
            disk_len,
            tail: last_page,
            scratch: None,
            first_lsns: kept,
            pending,
        };
        Ok(Log::recovered(vfs, dir, opts, next_lsn, files))
    }

    /// The log recovery found: appending at `next_lsn` to `files`.
    fn recovered(vfs: Arc<dyn Vfs>, dir: &Path, opts: LogOptions, next_lsn: u64, files: Files) -> Log {
        Log {
            vfs,
            dir: dir.to_path_buf(),
            opts,
            mem: Mutex::new(Mem {
                next_lsn,
                buf: Vec::new(),
                buf_first_lsn: next_lsn,
                // Once `finish_recovery` has fsynced the current file (it
                // runs before any new record is written), which every new
                // record's `synced` relies on.
                durable_lsn: next_lsn - 1,
                leader: false,
                round: 0,
                failed: None,
            }),
            mirror: Mirror {
                next_lsn: AtomicU64::new(next_lsn),
                buffered: AtomicUsize::new(0),
                durable: AtomicU64::new(next_lsn - 1),
                leading: AtomicBool::new(false),
                failed: AtomicBool::new(false),
            },
            park_key: 0,
            idle: Condvar::new(),
            files: Mutex::new(files),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            files_created: AtomicU64::new(0),
            files_deleted: AtomicU64::new(0),
        }
    }

    /// What recovery left to do to the files (None once done): a torn tail
    /// to cut, temporary files to remove.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> Option<Pending> {
        self.files.lock().pending.clone()
    }

    /// Does what recovery left to do, once the caller's recovery has
    /// succeeded: removes temporary files left by a crash, cuts the
    /// current file back to its last record (a torn tail, O_DIRECT
    /// padding), fsyncs it so that every recovered record is durable (new
    /// records say so in their `synced`), and starts a version-2 file after
    /// a version-1 one. Idempotent. The environment does not call it: the
    /// log's first write (the checkpoint after replay, or any write after
    /// `Env::open`) runs it, and nothing writes before replay succeeded.
    #[cfg(test)]
    pub(crate) fn finish_recovery(&self) -> Result<()> {
        let next = self.mem.lock().next_lsn;
        let mut f = self.files.lock();
        let res = self.finish_pending(&mut f, next);
        if let Err(e) = &res {
            self.fail(&mut self.mem.lock(), format!("the log failed: {e}"));
        }
        res
    }

    /// `finish_recovery` with the files held; `next` is the LSN of the
    /// first record not yet written (the records before it are all in the
    /// files).
    fn finish_pending(&self, f: &mut Files, next: u64) -> Result<()> {
        let Some(p) = f.pending.take() else { return Ok(()) };
        if !p.remove.is_empty() {
            for path in &p.remove {
                match self.vfs.remove(path) {
                    // A first file created at recovery may have reused it.
                    Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                    res => res?,
                }
            }
            self.vfs.sync_dir(&self.dir)?;
        }
        if p.disk_len != f.current_len {
            f.current.set_len(f.current_len)?;
        }
        f.disk_len = f.current_len;
        f.current.sync()?;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        if p.old_version {
            if f.current_len == FILE_HEADER_LEN as u64 {
                // No records: the same file, with a version-2 header.
                let first = *f.first_lsns.back().expect("the current file is listed");
                let header = encode_file_header(first);
                if f.current.direct_io() {
                    let mut page = AlignedBuf::zeroed(PAGE as usize);
                    page[..FILE_HEADER_LEN].copy_from_slice(&header);
                    f.current.write_at(0, &page)?;
                    f.disk_len = f.disk_len.max(PAGE);
                } else {
                    f.current.write_at(0, &header)?;
                }
                f.current.sync()?;
                self.fsyncs.fetch_add(1, Ordering::Relaxed);
                f.tail = header.to_vec();
            } else {
                // Its records are synced: a roll at a record boundary.
                self.start_file(f, next)?;
            }
        }
        Ok(())
    }

    /// Appends a record in memory (no I/O) and returns its LSN. It becomes
    /// durable at the next `sync_to` that covers it.
    pub(crate) fn append(&self, payload: &[u8]) -> Result<u64> {
        // `frame` stores the length as a u32: MAX_PAYLOAD keeps it in range.
        // (Writes are bounded far below it: `limits::MAX_BATCH_BYTES`.)
        if payload.len() > MAX_PAYLOAD || u32::try_from(payload.len()).is_err() {
            let (len, limit) = (payload.len() as u64, MAX_PAYLOAD as u64);
            return Err(Error::TooLarge { what: "log record", len, limit });
        }
        let mut m = self.mem.lock();
        if let Some(why) = &m.failed {
            return Err(Error::ReadOnly(why.clone()));
        }
        let lsn = m.next_lsn;
        // Recovery starts below MAX_LSN; 2^62 appends are out of reach.
        debug_assert!(lsn < MAX_LSN, "LSN {lsn}");
        m.next_lsn += 1;
        // What the disk holds now: this record vouches for it (see the
        // module's "Recovery"), at no cost beyond 8 bytes.
        let synced = m.durable_lsn;
        frame(&mut m.buf, lsn, synced, payload);
        self.mirror.next_lsn.store(m.next_lsn, Ordering::Release);
        self.mirror.buffered.store(m.buf.len(), Ordering::Relaxed);
        self.records.fetch_add(1, Ordering::Relaxed);
        Ok(lsn)
    }

    /// Bytes appended and not yet taken by a leader to write (maybe a
    /// moment old: `Mirror`).
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.mirror.buffered.load(Ordering::Relaxed)
    }

    /// The LSN of the last record appended (0 if none ever was); at least
    /// that of every append that returned before this call (`Mirror`).
    pub(crate) fn last_lsn(&self) -> u64 {
        self.mirror.next_lsn.load(Ordering::Acquire) - 1
    }

    /// Every record up to this LSN is durable.
    #[cfg(test)]
    pub(crate) fn durable_lsn(&self) -> u64 {
        self.mem.lock().durable_lsn
    }

    /// Makes every record appended so far durable.
    pub(crate) fn sync_all(&self) -> Result<()> {
        let last = self.last_lsn();
        self.sync_to(last)
    }

    /// Returns once record `lsn` (and every one before it) is durable.
    pub(crate) fn sync_to(&self, lsn: u64) -> Result<()> {
        if self.mirror.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        // Waiting for (or doing) the fsync: a server's thread pool runs
        // another connection meanwhile.
        let _blocked = crate::wait::blocking();
        loop {
            let m = self.mem.lock();
            debug_assert!(lsn < m.next_lsn, "sync_to({lsn}) of a record never appended");
            // Under `mem`, every mirror equals what it copies.
            debug_assert_eq!(self.mirror.durable.load(Ordering::Relaxed), m.durable_lsn);
            debug_assert_eq!(self.mirror.next_lsn.load(Ordering::Relaxed), m.next_lsn);
            debug_assert_eq!(self.mirror.leading.load(Ordering::Relaxed), m.leader);
            if m.durable_lsn >= lsn {
                return Ok(());
            }
            if let Some(why) = &m.failed {
                return Err(Error::ReadOnly(why.clone()));
            }
            if !m.leader {
                // Leading takes every record appended, `lsn`'s included.
                // Its failure is reported as every waiter sees it.
                return self.lead(m, |_| Ok(())).map_err(|e| Error::ReadOnly(format!("the log failed: {e}")));
            }
            // A member of the round in flight, or (appended after its
            // leader took the buffer) of the next one.
            let round = m.round + u64::from(lsn >= m.buf_first_lsn);
            drop(m);
            self.park_for(round, lsn);
            // Woken as a member (durable now), to lead the next round, or
            // by a failure: the loop tells which.
            if self.mirror.durable.load(Ordering::Acquire) >= lsn {
                return Ok(());
            }
        }
    }

    /// Sleeps until round `round`'s end wakes this thread, unless record
    /// `lsn` is durable already, no round is in flight (the caller then
    /// leads) or the log failed. Spurious returns are allowed: the caller
    /// looks again.
    ///
    /// No lost wake-up: the check runs under the parking lot's lock for
    /// `park_key`, and a leader stores `durable`, `leading` and `failed`
    /// before it takes that lock to unpark (`end_round`). So either the
    /// check sees the round over, or this thread is queued before the
    /// leader looks for whom to wake.
    fn park_for(&self, round: u64, lsn: u64) {
        let key = self.key();
        let still = || {
            self.mirror.durable.load(Ordering::SeqCst) < lsn
                && self.mirror.leading.load(Ordering::SeqCst)
                && !self.mirror.failed.load(Ordering::SeqCst)
        };
        // SAFETY: `key` is the address of a field of this log, which
        // outlives the call, and is used for nothing else; the callbacks
        // neither panic nor call into the parking lot.
        unsafe {
            parking_lot_core::park(
                key,
                still,
                || {},
                |_, _| {},
                parking_lot_core::ParkToken(round as usize),
                None,
            );
        }
    }

    /// The parking lot key of this log's committers.
    fn key(&self) -> usize {
        &self.park_key as *const u8 as usize
    }

    /// Marks the log failed (under `mem`); every waiter then wakes to see it.
    fn fail(&self, m: &mut Mem, why: String) {
        m.failed = Some(why);
        self.mirror.failed.store(true, Ordering::SeqCst);
    }

    /// Makes every record appended so far durable and, if the current file
    /// then holds more than `min_bytes`, starts a new file for the records
    /// to come. A checkpoint calls it before its begin record: `trim` never
    /// deletes the current file, so without a roll the records the
    /// checkpoint makes unnecessary would take disk space until that file
    /// filled up (up to `file_size_bytes`); rolled, its trim deletes them.
    pub(crate) fn roll(&self, min_bytes: u64) -> Result<()> {
        let mut m = self.mem.lock();
        while m.leader && m.failed.is_none() {
            self.idle.wait(&mut m);
        }
        if let Some(why) = &m.failed {
            return Err(Error::ReadOnly(why.clone()));
        }
        self.lead(m, |next| {
            let mut f = self.files.lock();
            if f.current_len <= min_bytes.max(FILE_HEADER_LEN as u64) {
                return Ok(());
            }
            // At a record boundary, after write_out synced every record
            // before `next`: the invariant of every roll.
            self.start_file(&mut f, next)
        })
    }

    /// Leads one group commit (the caller saw no leader): takes everything
    /// appended so far, for all waiters, writes and syncs it with no lock
    /// held, then runs `then` with the LSN after it (still the only writer
    /// of the files), publishes the outcome and wakes whom it concerns
    /// (`end_round`). Returns the outcome.
    fn lead<'a>(
        &'a self,
        mut m: parking_lot::MutexGuard<'a, Mem>,
        then: impl FnOnce(u64) -> Result<()>,
    ) -> Result<()> {
        debug_assert!(!m.leader && m.failed.is_none());
        m.leader = true;
        self.mirror.leading.store(true, Ordering::SeqCst);
        m.round += 1;
        let buf = std::mem::take(&mut m.buf);
        self.mirror.buffered.store(0, Ordering::Relaxed);
        let first = m.buf_first_lsn;
        let next = m.next_lsn;
        m.buf_first_lsn = next;
        drop(m);
        let res = self.write_out(&buf, first).and_then(|()| then(next));
        let mut m = self.mem.lock();
        m.leader = false;
        match &res {
            Ok(()) => {
                debug_assert!(next > m.durable_lsn);
                m.durable_lsn = next - 1;
                self.mirror.durable.store(next - 1, Ordering::SeqCst);
            }
            Err(e) => self.fail(&mut m, format!("the log failed: {e}")),
        }
        self.mirror.leading.store(false, Ordering::SeqCst);
        let round = m.round;
        let failed = m.failed.is_some();
        drop(m);
        self.idle.notify_all();
        self.end_round(round, failed);
        res
    }

    /// Wakes, after round `round` ended (its outcome published), one
    /// waiter of the next round first, to lead it, then every member of
    /// this round and of any before it; after a failure, everyone, to see
    /// it. The others sleep on: a woken waiter whose record is still not
    /// durable costs a context switch both ways (two per commit at 32
    /// committers when every round's end woke everyone).
    fn end_round(&self, round: u64, failed: bool) {
        let key = self.key();
        let token = |t: parking_lot_core::ParkToken| t.0 as u64;
        // SAFETY: as in `park_for`; the filters only read the token.
        unsafe {
            if failed {
                parking_lot_core::unpark_all(key, parking_lot_core::DEFAULT_UNPARK_TOKEN);
                return;
            }
            let mut leader_found = false;
            parking_lot_core::unpark_filter(
                key,
                |t| match (leader_found, token(t) == round + 1) {
                    (true, _) => parking_lot_core::FilterOp::Stop,
                    (false, true) => {
                        leader_found = true;
                        parking_lot_core::FilterOp::Unpark
                    }
                    (false, false) => parking_lot_core::FilterOp::Skip,
                },
                |_| parking_lot_core::DEFAULT_UNPARK_TOKEN,
            );
            parking_lot_core::unpark_filter(
                key,
                |t| {
                    if token(t) <= round {
                        parking_lot_core::FilterOp::Unpark
                    } else {
                        parking_lot_core::FilterOp::Skip
                    }
                },
                |_| parking_lot_core::DEFAULT_UNPARK_TOKEN,
            );
        }
    }

    /// Makes a new file, with a durable header and name, the current one;
    /// its first record will be `first_lsn`. Call at a record boundary with
    /// every record before it synced.
    fn start_file(&self, f: &mut Files, first_lsn: u64) -> Result<()> {
        // Nothing is written before recovery's cut (a torn tail left in a
        // file that is no longer the newest would be damage).
        self.finish_pending(f, first_lsn)?;
        if f.first_lsns.back() == Some(&first_lsn) {
            // Finishing recovery just made this file (after a version-1 one).
            return Ok(());
        }
        if f.disk_len > f.current_len {
            // Cut the zeros after the last record (a direct write's padding,
            // the zeros written ahead), durably, before the next file
            // exists: a file that is not the newest ends with its last
            // record.
            f.current.set_len(f.current_len)?;
            f.current.sync()?;
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        let (new, header, disk_len) = create_file(&*self.vfs, &self.dir, first_lsn, self.opts.direct_io)?;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.files_created.fetch_add(1, Ordering::Relaxed);
        f.current = new;
        f.current_len = FILE_HEADER_LEN as u64;
        f.disk_len = disk_len;
        f.tail = header.to_vec();
        f.first_lsns.push_back(first_lsn);
        Ok(())
    }

    /// Writes framed records (the first is `first_lsn`) to the files,
    /// rolling to a new file at a record boundary once the current one is
    /// full, and fsyncs. Only the leader calls it.
    fn write_out(&self, mut buf: &[u8], mut first_lsn: u64) -> Result<()> {
        let mut f = self.files.lock();
        if !buf.is_empty() {
            // Recovery's cut first: no record goes after a torn tail's
            // bytes, and `finish_pending`'s fsync makes every recovered
            // record durable, as the new records' `synced` claims.
            self.finish_pending(&mut f, first_lsn)?;
        }
        while !buf.is_empty() {
            if f.current_len >= self.opts.file_size_bytes {
                // Roll: the old file is synced (below, before every roll).
                self.start_file(&mut f, first_lsn)?;
            }
            // Take whole records until the file would be full.
            let room = self.opts.file_size_bytes.saturating_sub(f.current_len);
            let mut take = 0usize;
            let mut n = 0u64;
            while take < buf.len() && (n == 0 || (take as u64) < room) {
                let len = u32::from_le_bytes(buf[take..take + 4].try_into().unwrap()) as usize;
                take += RECORD_HEADER_LEN + len;
                n += 1;
            }
            write_records(&mut f, &buf[..take])?;
            zero_ahead(&mut f, self.opts.file_size_bytes)?;
            f.current.sync()?;
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(take as u64, Ordering::Relaxed);
            buf = &buf[take..];
            first_lsn += n;
        }
        Ok(())
    }

    /// Deletes the log files whose records are all before `keep_from_lsn`
    /// (a checkpoint made them unnecessary). The current file is never
    /// deleted. Before any file goes, `log.trim` durably names the first
    /// LSN of the oldest file kept, so recovery can tell a trimmed log from
    /// one whose oldest files were lost (invariant: the oldest log file
    /// starts at or before what `log.trim` says).
    pub(crate) fn trim(&self, keep_from_lsn: u64) -> Result<()> {
        let mut f = self.files.lock();
        // File i holds LSNs [first_i, first_{i+1}); it can go if first_{i+1} <= keep.
        let n = (1..f.first_lsns.len()).take_while(|&i| f.first_lsns[i] <= keep_from_lsn).count();
        if n == 0 {
            return Ok(());
        }
        write_trim_file(&*self.vfs, &self.dir, f.first_lsns[n])?;
        for _ in 0..n {
            let first = f.first_lsns[0];
            self.vfs.remove(&self.dir.join(file_name(first)))?;
            f.first_lsns.pop_front();
            self.files_deleted.fetch_add(1, Ordering::Relaxed);
        }
        self.vfs.sync_dir(&self.dir)?;
        Ok(())
    }

    /// Makes every record durable, starts a new file for the records to
    /// come and deletes every older file: a log with no records left. Only
    /// for a quiet log (at close, after the last checkpoint): records
    /// appended meanwhile would be deleted unapplied, so that is a bug.
    pub(crate) fn start_empty_file(&self) -> Result<()> {
        self.sync_all()?;
        let next = {
            let mut f = self.files.lock();
            let m = self.mem.lock();
            assert!(m.buf.is_empty() && !m.leader, "start_empty_file while records are being appended");
            if f.current_len > FILE_HEADER_LEN as u64 {
                self.start_file(&mut f, m.next_lsn)?;
            }
            m.next_lsn
        };
        self.trim(next)
    }

    /// A consistent cut of the log for a backup, taken after making every
    /// record appended so far durable: the first LSN of every file (oldest
    /// first), the newest file's length in bytes, and the LSN of the last
    /// record those bytes hold. Every byte up to that length is written and
    /// fsynced and ends at a record boundary, so a copy of the older files
    /// whole plus that prefix of the newest is a log that recovers to
    /// exactly the returned LSN. Taken with no leader active (files, then
    /// mem: the order `start_empty_file` uses), because between a leader's
    /// write and its update of `durable_lsn` the file holds records the
    /// count does not say yet.
    pub(crate) fn backup_point(&self) -> Result<BackupPoint> {
        self.sync_all()?;
        loop {
            let f = self.files.lock();
            let mut m = self.mem.lock();
            if let Some(why) = &m.failed {
                return Err(Error::ReadOnly(why.clone()));
            }
            if !m.leader {
                return Ok(BackupPoint {
                    first_lsns: f.first_lsns.iter().copied().collect(),
                    current_len: f.current_len,
                    lsn: m.durable_lsn,
                });
            }
            drop(f);
            self.idle.wait(&mut m);
        }
    }

    /// The number of log files.
    #[cfg(test)]
    pub(crate) fn file_count(&self) -> usize {
        self.files.lock().first_lsns.len()
    }

    pub(crate) fn stats(&self) -> LogStats {
        LogStats {
            records: self.records.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            files_created: self.files_created.load(Ordering::Relaxed),
            files_deleted: self.files_deleted.load(Ordering::Relaxed),
        }
    }
}
/// Temporary files left by a crash while a file was created: removed once
/// recovery succeeded (a first file created then may reuse one of them).
fn temp_files(names: &[String], dir: &Path) -> Vec<PathBuf> {
    let tmp_trim = format!("{TRIM_FILE}.tmp");
    names
        .iter()
        .filter(|n| n.strip_suffix(".tmp").and_then(parse_file_name).is_some() || **n == tmp_trim)
        .map(|n| dir.join(n))
        .collect()
}

/// What replaying the log files found (`replay_files`).
struct Replayed {
    /// The first LSN of each file, oldest first.
    kept: VecDeque<u64>,
    /// The LSN after the newest file's last record; `None`: no file.
    next_lsn: Option<u64>,
    /// Bytes of the newest file that hold records.
    tail_len: u64,
    /// Those of them in its last page, partly filled.
    last_page: Vec<u8>,
}

/// Checks each log file and replays its records, oldest first; notes the newest one's length and format.
fn replay_files(
    vfs: &dyn Vfs,
    dir: &Path,
    firsts: &[u64],
    pending: &mut Pending,
    replay: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Replayed> {
    let mut kept = VecDeque::new();
    let mut next_lsn = None::<u64>;
    let mut tail_len = 0u64;
    let mut last_page = Vec::new();
    for (i, &first) in firsts.iter().enumerate() {
        let last_file = i + 1 == firsts.len();
        let path = dir.join(file_name(first));
        let bytes = vfs.read_file(&path)?.unwrap_or_default();
        let version = checked_file_header(&path, &bytes, first)?;
        if let Some(expected) = next_lsn {
            if first != expected {
                return Err(Error::corrupt(
                    &path,
                    None,
                    format!("log files are not contiguous: expected first LSN {expected}, found {first}"),
                ));
            }
        }
        // Where the file's records end, before any is replayed.
        let (off, lsn) = records_end(&path, &bytes, first, version, last_file)?;
        // The file checked out: replay its records.
        replay_file(&bytes, first..lsn, version, off, replay)?;
        kept.push_back(first);
        next_lsn = Some(lsn);
        tail_len = off as u64;
        last_page = bytes[off - off % PAGE as usize..off].to_vec();
        pending.disk_len = bytes.len() as u64;
        pending.old_version = version != VERSION;
    }
    Ok(Replayed { kept, next_lsn, tail_len, last_page })
}

/// Fails if the log (ending before `next`) lacks records a checkpoint saw (up to `min_next_lsn - 1`).
fn check_reaches(dir: &Path, next: u64, min_next_lsn: u64) -> Result<()> {
    if next < min_next_lsn {
        return Err(Error::corrupt(
            dir,
            None,
            format!(
                "the log ends at LSN {} but a checkpoint recorded LSN {}: log records are missing",
                next - 1,
                min_next_lsn - 1
            ),
        ));
    }
    Ok(())
}

/// Hands the records `lsns` of a log file that checked out (they end at
/// byte `off`) to `replay`, in order.
fn replay_file(
    bytes: &[u8],
    lsns: std::ops::Range<u64>,
    version: u32,
    off: usize,
    replay: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut at = FILE_HEADER_LEN;
    for l in lsns {
        let fr = parse_record(&bytes[at..], l, version).expect("checked above");
        replay(l, fr.payload)?;
        at += fr.len;
    }
    debug_assert_eq!(at, off);
    Ok(())
}

/// Files are only ever deleted from the front, after `log.trim` durably
/// said which file is then the oldest: an oldest file past it means files
/// were lost (their records may be needed by a checkpoint).
fn check_trim(vfs: &dyn Vfs, dir: &Path, firsts: &[u64]) -> Result<()> {
    let trim_path = dir.join(TRIM_FILE);
    if let Some(b) = vfs.read_file(&trim_path)? {
        let kept = decode_trim(&b).map_err(|why| Error::corrupt(&trim_path, None, why))?;
        match firsts.first() {
            Some(&oldest) if oldest <= kept => {}
            Some(&oldest) => {
                let why = format!(
                    "the log was trimmed to the file starting at LSN {kept} ({TRIM_FILE}), but its oldest \
                     file starts at LSN {oldest}: log files holding records {kept} to {} are missing",
                    oldest - 1
                );
                return Err(Error::corrupt(&dir.join(file_name(oldest)), None, why));
            }
            None => {
                let why = format!("the log was trimmed to LSN {kept}, but no log file is left");
                return Err(Error::corrupt(&trim_path, None, why));
            }
        }
    }
    Ok(())
}

/// The format version of the log file at `path` whose name says its first
/// LSN is `first`, once its header checked out.
fn checked_file_header(path: &Path, bytes: &[u8], first: u64) -> Result<u32> {
    match decode_file_header(bytes) {
        // LSNs start at 1 (0 means "none" in `synced` and `durable_lsn`).
        Ok((f, version)) if f == first && f > 0 && f < MAX_LSN => Ok(version),
        Ok((f, _)) => Err(Error::corrupt(path, None, format!("header names first LSN {f}"))),
        Err(why) => {
            // A log file's header is durable before the file gets
            // its name (`create_file`): this is damage, and the file
            // may have held acknowledged records, the newest too.
            let hint = match bytes.iter().skip(FILE_HEADER_LEN).all(|&b| b == 0) {
                true => {
                    "; the file holds no records (as a file an older build was creating at a \
                     crash would)"
                }
                false => "",
            };
            Err(Error::corrupt(path, None, format!("bad log file header: {why}{hint}")))
        }
    }
}

/// Where the records of a log file (first LSN `first`) end: the byte
/// offset after the last valid one and the LSN after it. What follows must
/// be a torn tail in the newest file (`last_file`), and in an older one
/// zeros of less than a page; anything else is damage.
fn records_end(path: &Path, bytes: &[u8], first: u64, version: u32, last_file: bool) -> Result<(usize, u64)> {
    let mut off = FILE_HEADER_LEN;
    let mut lsn = first;
    while let Some(fr) = parse_record(&bytes[off..], lsn, version) {
        off += fr.len;
        lsn = match lsn.checked_add(1).filter(|&n| n < MAX_LSN) {
            Some(n) => n,
            None => {
                let why = format!("log record {lsn} at byte {}: LSNs end below {MAX_LSN}", off - fr.len);
                return Err(Error::corrupt(path, None, why));
            }
        };
    }
    if off < bytes.len() {
        if !last_file {
            // Zeros after the last record, less than a page: the
            // padding of a direct write that a crash kept from
            // being cut at a roll. A gap in the LSNs this hides is
            // caught by the next file's first LSN.
            if bytes.len() - off >= PAGE as usize || bytes[off..].iter().any(|&b| b != 0) {
                return Err(Error::corrupt(path, None, format!("damaged log record {lsn} at byte {off}")));
            }
        } else {
            check_torn_tail(path, bytes, off, lsn, version)?;
        }
    }
    Ok((off, lsn))
}

/// Sorts out the end of the newest file, whose records end at byte `off`
/// (the next would be record `lsn`): Ok if what follows is a torn tail, the
/// unsynced end of the last writes before a crash; `Error::Corrupt` naming
/// the file and offset if a valid record after it says record `lsn` had
/// been durable when it was appended.
fn check_torn_tail(path: &Path, bytes: &[u8], off: usize, lsn: u64, version: u32) -> Result<()> {
    let beyond = search_beyond(&bytes[off + 1..], lsn, version);
    if version == VERSION_1 {
        // Version 1 does not say what was durable: the log ends here.
        if let Some((found, at)) = beyond.first {
            eprintln!(
                "fractaldb: {}: log record {lsn} at byte {off} is damaged and record {found} at byte {} \
                 follows it; recovery ends the log there",
                path.display(),
                off + 1 + at,
            );
        }
        return Ok(());
    }
    match beyond.best {
        Some((synced, found, at)) if synced >= lsn => Err(Error::corrupt(
            path,
            None,
            format!(
                "log record {lsn} at byte {off} is damaged, but record {found} at byte {} was appended \
                 after record {synced} was durable: acknowledged log records are lost",
                off + 1 + at
            ),
        )),
        _ => Ok(()),
    }
}

/// Writes framed records at the end of the current file (no fsync). With
/// O_DIRECT the write is whole pages: the last partial page's bytes
/// (`tail`), the records, then zeros to the page's end; `tail` becomes
/// the new last partial page.
fn write_records(f: &mut Files, records: &[u8]) -> Result<()> {
    let page = PAGE as usize;
    let Files { current, current_len, disk_len, tail, scratch, .. } = f;
    debug_assert_eq!(tail.len() as u64, *current_len % PAGE, "tail is the last partial page");
    let total = tail.len() + records.len();
    let new_tail = total % page;
    if current.direct_io() {
        let padded = total.next_multiple_of(page);
        if scratch.as_ref().is_none_or(|s| s.len() < padded) {
            *scratch = Some(AlignedBuf::zeroed(padded.next_power_of_two().max(1 << 16)));
        }
        let s = scratch.as_mut().expect("just made");
        s[..tail.len()].copy_from_slice(tail);
        s[tail.len()..total].copy_from_slice(records);
        s[total..padded].fill(0);
        let at = *current_len - tail.len() as u64;
        current.write_at(at, &s[..padded])?;
        *disk_len = (*disk_len).max(at + padded as u64);
    } else {
        current.write_at(*current_len, records)?;
        *disk_len = (*disk_len).max(*current_len + records.len() as u64);
    }
    // The new last partial page: the last `new_tail` bytes of tail ‖ records
    // (all of them when they do not reach a page boundary).
    if records.len() >= new_tail {
        tail.clear();
        tail.extend_from_slice(&records[records.len() - new_tail..]);
    } else {
        tail.extend_from_slice(records);
    }
    debug_assert_eq!(tail.len(), new_tail);
    *current_len += records.len() as u64;
    Ok(())
}

/// Bytes of zeros `zero_ahead` writes at a time.
const ZERO_AHEAD: u64 = 1 << 20;

/// Keeps at least half of `ZERO_AHEAD` bytes of zeros written after the
/// current file's records (up to `file_size`, where the file rolls), so
/// that a commit's write lands on blocks the file already has: its
/// fdatasync then flushes data only, where a write that extends the file
/// must also commit the file system's journal (the new size and blocks),
/// which on ext4 nearly doubled a commit's fsync (about 250 against
/// 130 µs for a 4 KiB O_DIRECT write here; fallocate's unwritten extents
/// cost the same as extending). So one commit in a megabyte of log pays for
/// the file's growth. Run by the leader after writing records and before
/// its fsync, which makes the zeros durable with them. Recovery reads
/// zeros after the newest file's last record as a torn tail (no frame has
/// LSN 0) and cuts them; a roll cuts them before the next file exists.
fn zero_ahead(f: &mut Files, file_size: u64) -> Result<()> {
    let end = file_size.next_multiple_of(PAGE);
    if f.disk_len >= end || f.disk_len - f.current_len >= ZERO_AHEAD / 2 {
        return Ok(());
    }
    // Whole pages from a page boundary (a direct write's padding already
    // reaches one; a buffered file is written from its end).
    let from = f.disk_len;
    debug_assert!(!f.current.direct_io() || from.is_multiple_of(PAGE), "direct writes pad to whole pages");
    let to = (from + ZERO_AHEAD).min(end);
    // (An AlignedBuf is whole pages: a buffered file's `from` may not be.)
    let zeros = AlignedBuf::zeroed((to - from) as usize);
    f.current.write_at(from, &zeros[..(to - from) as usize])?;
    f.disk_len = to;
    Ok(())
}

/// Durably replaces `log.trim` with `first` (a temporary file, fsynced,
/// renamed, the folder synced), before the files before `first` are deleted.
fn write_trim_file(vfs: &dyn Vfs, dir: &Path, first: u64) -> Result<()> {
    let tmp = dir.join(format!("{TRIM_FILE}.tmp"));
    let f = vfs.open(&tmp, OpenMode::CreateOrOpen, false)?;
    if f.len()? > 0 {
        f.set_len(0)?;
    }
    f.write_at(0, &encode_trim(first))?;
    f.sync()?;
    drop(f);
    vfs.rename(&tmp, &dir.join(TRIM_FILE))?;
    vfs.sync_dir(dir)
}

/// Creates the log file starting at `first_lsn`, so that its name never
/// names a file without a durable, valid header (see the module's
/// invariants): the header is written under a temporary name and fsynced,
/// then the file is renamed to its name and the folder synced, before any
/// record goes into it. A crash leaves the file under its name with its
/// header, or at most the temporary file. Returns the file (opened under its
/// name) and its header.
fn create_file(
    vfs: &dyn Vfs,
    dir: &Path,
    first_lsn: u64,
    direct: bool,
) -> Result<(Arc<dyn VfsFile>, [u8; FILE_HEADER_LEN], u64)> {
    let path = dir.join(file_name(first_lsn));
    // A rename would replace a file of that name: refuse, as creating it would.
    match vfs.open(&path, OpenMode::Existing, false) {
        Ok(_) => return Err(Error::io(&path, "create", std::io::ErrorKind::AlreadyExists.into())),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let tmp = dir.join(tmp_file_name(first_lsn));
    let f = vfs.open(&tmp, OpenMode::CreateOrOpen, direct)?;
    if f.len()? > 0 {
        // Left by a crash during an earlier attempt: it holds at most a header.
        f.set_len(0)?;
    }
    let header = encode_file_header(first_lsn);
    let len = if f.direct_io() {
        let mut page = AlignedBuf::zeroed(PAGE as usize);
        page[..FILE_HEADER_LEN].copy_from_slice(&header);
        f.write_at(0, &page)?;
        PAGE
    } else {
        f.write_at(0, &header)?;
        FILE_HEADER_LEN as u64
    };
    f.sync()?;
    drop(f);
    vfs.rename(&tmp, &path)?;
    vfs.sync_dir(dir)?;
    let f = vfs.open(&path, OpenMode::Existing, direct)?;
    Ok((f, header, len))
}

#[cfg(test)]
mod tests;
