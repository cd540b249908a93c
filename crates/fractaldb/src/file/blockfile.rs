//! `BlockFile`: a file of numbered, relocatable blocks with atomic checkpoints.

use std::collections::BTreeMap;
use std::path::Path;

use parking_lot::Mutex;

use super::alloc::Allocator;
use super::header::{
    copy_offsets, headers_end, slot_of, Header, FORMAT_VERSION, HEADERS_END_V1, MAX_META, SLOT_SIZE,
    VERSION_1,
};
use super::io::{is_truncation, page_round, write_pages};
use super::translation::{BlockNum, Extent, Translation};
use super::vfs::{OpenMode, Vfs, VfsFile};
use crate::error::{Error, Result};
use std::sync::Arc;

/// How much of a file is in use, for `SHOW TABLE STATUS` and fragmentation checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpaceStats {
    /// The file's length.
    pub file_bytes: u64,
    /// Bytes of current blocks, the header slots and the durable translation table.
    pub live_bytes: u64,
    /// Free bytes inside the file whose disk space was given back to the
    /// file system (punched): the file takes about `file_bytes -
    /// punched_bytes` on disk.
    pub punched_bytes: u64,
    /// Block numbers the translation table has handed out (free ones
    /// included: TokuDB's `bt_num_blocks_allocated`).
    pub block_numbers: u64,
    /// Blocks written and current (`bt_num_blocks_in_use`).
    pub blocks_in_use: u64,
}

/// Free runs at least this long are given back to the file system after
/// each checkpoint; shorter ones (a few pages between live blocks) are soon
/// reused by first-fit allocation.
const PUNCH_MIN_BYTES: u64 = 64 << 10;

/// One dictionary's data file: blocks addressed by number through a translation
/// table, written copy-on-write, and made durable as a whole by [`checkpoint`].
/// Safe to share between threads: the bookkeeping sits behind a mutex that is never
/// held during I/O, so reads and writes of different blocks run concurrently.
///
/// [`checkpoint`]: BlockFile::finish_checkpoint
pub struct BlockFile {
    file: Arc<dyn VfsFile>,
    state: Mutex<State>,
}

/// Byte ranges (offset -> allocated length) that some checkpoint refers to.
type Ranges = BTreeMap<u64, u64>;

/// Which table a block write updates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Current,
    CheckpointOnly,
}

/// The mutable bookkeeping of a [`BlockFile`].
struct State {
    /// The file's format version: 2 (each header written twice, blocks from
    /// `HEADERS_END`) or 1 (one copy, blocks from `HEADERS_END_V1`; a file
    /// keeps its version).
    version: u32,
    table: Translation,
    alloc: Allocator,
    /// Sequence number and slot (0 = A, 1 = B) of the last durable checkpoint.
    seq: u64,
    slot: u64,
    /// Offset and allocated length of the durable checkpoint's table block.
    table_extent: (u64, u64),
    /// Extents the last durable checkpoint refers to, table block included: they
    /// must keep their bytes until a newer header is durable, or a crash would
    /// reopen a checkpoint whose blocks were overwritten.
    durable: Ranges,
    /// Extents of the checkpoint being written, protected likewise while it is.
    in_flight: Option<Ranges>,
    /// The table of the checkpoint being written (between `begin_checkpoint`
    /// and `finish_checkpoint`): the table as it was at the begin, updated
    /// only by writes of the nodes' begin-time states.
    ckpt: Option<Translation>,
    /// Protected extents that no block uses any more, freed by the next checkpoint.
    pending: Vec<(u64, u64)>,
    /// The stamp of the last extent `write_block` made (see `Extent::stamp`).
    stamp: u64,
}

fn overlaps(ranges: &Ranges, off: u64, len: u64) -> bool {
    ranges.range(..off + len).next_back().is_some_and(|(&o, &l)| o + l > off)
}

impl State {
    /// Points the checkpoint in progress at `ext` for `bn` and protects it.
    fn join_checkpoint(&mut self, bn: BlockNum, ext: Extent) {
        let ckpt = self.ckpt.as_mut().expect("a checkpoint write outside a checkpoint");
        assert!(ckpt.is_allocated(bn), "checkpoint write of block {bn}, unknown at its begin");
        let refs = self.in_flight.as_mut().expect("set with ckpt");
        // The begin-time extent this replaces is no longer part of the
        // checkpoint (the last durable one may still protect it).
        if let Some(old) = ckpt.set(bn, ext) {
            refs.remove(&old.offset);
        }
        refs.insert(ext.offset, ext.alloc_len());
    }

    fn protected(&self, off: u64, len: u64) -> bool {
        overlaps(&self.durable, off, len) || self.in_flight.as_ref().is_some_and(|r| overlaps(r, off, len))
    }

    fn allocate(&mut self, len: u64) -> u64 {
        let off = self.alloc.alloc(len);
        debug_assert!(!self.protected(off, len), "handed out [{off}, +{len}), which a checkpoint uses");
        // The allocator's space starts after the header copies (`open`,
        // `create`): no block or table is ever written over a mirror.
        debug_assert!(off >= headers_end(self.version), "handed out [{off}, +{len}) among the header copies");
        off
    }

    /// Frees an extent nobody uses any more: at once if no checkpoint refers to it
    /// (written and superseded since the last one), else after the next checkpoint.
    fn release(&mut self, off: u64, len: u64) {
        if self.protected(off, len) {
            self.pending.push((off, len));
        } else {
            self.alloc.free(off, len);
        }
    }
}

impl BlockFile {
    /// Creates a new file (error if it exists) and durably writes checkpoint #1 with an
    /// empty table and `meta` in slot A (both copies); slot B is zeroed.
    pub fn create(vfs: &dyn Vfs, path: &Path, direct_io: bool, meta: &[u8]) -> Result<BlockFile> {
        Self::create_version(vfs, path, direct_io, meta, FORMAT_VERSION)
    }

    /// `create` in format `version` (1 only for tests of old files).
    fn create_version(
        vfs: &dyn Vfs,
        path: &Path,
        direct_io: bool,
        meta: &[u8],
        version: u32,
    ) -> Result<BlockFile> {
        check_meta(meta)?;
        let file = vfs.open(path, OpenMode::CreateNew, direct_io)?;
        let table = Translation::default();
        let block = table.encode(1);
        let table_bytes = page_round(block.len() as u64);
        // An empty table: a few bytes.
        let start = headers_end(version);
        let header =
            Header { version, seq: 1, table_offset: start, table_len: block.len() as u32, meta: meta.into() };
        // Every header copy: slot A's hold checkpoint 1, slot B's are zero.
        let mut copies = vec![0; start as usize];
        let encoded = header.encode();
        for off in copy_offsets(version, 0) {
            copies[off as usize..(off + SLOT_SIZE) as usize].copy_from_slice(&encoded);
        }
        write_pages(&*file, start, &block)?;
        write_pages(&*file, 0, &copies)?;
        file.sync()?;
        vfs.sync_dir(path.parent().unwrap_or(Path::new("")))?;
        let state = State {
            version,
            table,
            alloc: Allocator::new(start + table_bytes),
            seq: 1,
            slot: 0,
            table_extent: (start, table_bytes),
            durable: Ranges::from([(start, table_bytes)]),
            in_flight: None,
            ckpt: None,
            pending: Vec::new(),
            stamp: 0,
        };
        Ok(BlockFile { file, state: Mutex::new(state) })
    }

    /// Opens: reads every header copy, picks the valid one with the highest checkpoint
    /// sequence (see `newest_header`), loads its translation table, rebuilds the free
    /// map. Returns the meta blob.
    /// Errors: no valid header -> Corrupt(None); newer version -> UnsupportedVersion;
    /// table checksum bad / beyond EOF -> Corrupt.
    pub fn open(vfs: &dyn Vfs, path: &Path, direct_io: bool) -> Result<(BlockFile, Vec<u8>)> {
        let file = vfs.open(path, OpenMode::Existing, direct_io)?;
        let (slot, header) = newest_header(&*file, path)?;
        let start = headers_end(header.version);
        let file_len = file.len()?;
        let beyond_eof = || Error::corrupt(path, None, "translation table lies beyond the end of the file");
        if header.table_offset.saturating_add(u64::from(header.table_len)) > file_len {
            return Err(beyond_eof());
        }
        let mut block = vec![0; header.table_len as usize];
        file.read_at(header.table_offset, &mut block).map_err(|e| {
            if is_truncation(&e) {
                beyond_eof()
            } else {
                e
            }
        })?;
        let table = Translation::decode(path, &block, header.seq, start)?;
        let table_bytes = page_round(u64::from(header.table_len));

        // Everything the checkpoint refers to is in use and protected; the gaps are free.
        let mut used: Vec<(u64, u64, Option<BlockNum>)> = vec![(header.table_offset, table_bytes, None)];
        used.extend(table.extents().map(|(bn, e)| (e.offset, e.alloc_len(), Some(bn))));
        used.sort_unstable();
        let end = used.iter().map(|&(o, l, _)| o + l).max().unwrap_or(0).max(page_round(file_len));
        let mut alloc = Allocator::new(end);
        // The allocator's space starts after the header copies: [0, start) is
        // never free, so no block or table is written over a header or mirror.
        let (mut prev_end, mut prev_bn) = (start, None);
        for &(off, len, bn) in &used {
            if off < prev_end {
                let name =
                    |b: Option<u64>| b.map_or("the translation table".into(), |b| format!("block {b}"));
                let why = format!("{} overlaps {}", name(bn), name(prev_bn));
                return Err(Error::corrupt(path, bn.or(prev_bn), why));
            }
            if off > prev_end {
                alloc.free(prev_end, off - prev_end);
            }
            (prev_end, prev_bn) = (off + len, bn);
        }
        if end > prev_end {
            alloc.free(prev_end, end - prev_end);
        }
        let state = State {
            version: header.version,
            table,
            alloc,
            seq: header.seq,
            slot,
            table_extent: (header.table_offset, table_bytes),
            durable: used.iter().map(|&(o, l, _)| (o, l)).collect(),
            in_flight: None,
            ckpt: None,
            pending: Vec::new(),
            stamp: 0,
        };
        Ok((BlockFile { file, state: Mutex::new(state) }, header.meta))
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// True if the file was opened with O_DIRECT (the file system allowed it).
    pub fn direct_io(&self) -> bool {
        self.file.direct_io()
    }

    pub fn allocate_blocknum(&self) -> BlockNum {
        self.state.lock().table.allocate()
    }

    /// The node at bn is gone: its extent is freed by the rules of `write_block`, bn is reusable.
    pub fn free_blocknum(&self, bn: BlockNum) {
        let mut st = self.state.lock();
        if let Some(old) = st.table.free(bn) {
            st.release(old.offset, old.alloc_len());
        }
    }

    /// Every block number that has a block written, ascending.
    pub fn written_blocknums(&self) -> Vec<BlockNum> {
        self.state.lock().table.extents().map(|(bn, _)| bn).collect()
    }

    pub fn extent(&self, bn: BlockNum) -> Option<Extent> {
        self.state.lock().table.get(bn)
    }

    /// Writes a whole serialized node to a fresh extent (never over a live one), then
    /// points bn at it. The old extent of bn is freed at once if it was written after
    /// the last durable checkpoint, else only after the next checkpoint is durable.
    pub fn write_block(&self, bn: BlockNum, data: &[u8], header_len: u32) -> Result<Extent> {
        self.place_block(bn, data, header_len, Place::Current)
    }

    /// Writes a node's state as of the begin of the checkpoint in progress
    /// (a copy: the node may have moved on). Only the checkpoint's table
    /// points at the block, unless `make_current` says it is also current.
    /// (A block `write_block` wrote joins the checkpoint by `add_to_checkpoint`.)
    pub fn write_block_for_checkpoint(&self, bn: BlockNum, data: &[u8], header_len: u32) -> Result<Extent> {
        self.place_block(bn, data, header_len, Place::CheckpointOnly)
    }

    /// Makes the block `write_block` just wrote for `bn` part of the
    /// checkpoint in progress too: the node was marked by the checkpoint's
    /// begin and had not changed since.
    pub fn add_to_checkpoint(&self, bn: BlockNum, ext: Extent) {
        let mut st = self.state.lock();
        debug_assert_eq!(st.table.get(bn), Some(ext), "add_to_checkpoint of a block not current");
        st.join_checkpoint(bn, ext);
    }

    /// Makes a block written by `write_block_for_checkpoint` the
    /// current version of `bn` too (its node did not change while it was
    /// written). False, changing nothing, if `bn` no longer exists or the
    /// checkpoint has finished.
    pub fn make_current(&self, bn: BlockNum, ext: Extent) -> bool {
        let mut st = self.state.lock();
        let st = &mut *st;
        if !st.table.is_allocated(bn) || st.ckpt.as_ref().and_then(|c| c.get(bn)) != Some(ext) {
            return false;
        }
        // It was queued to be freed once no checkpoint names it; now the
        // current table names it.
        let i = st
            .pending
            .iter()
            .position(|&(o, _)| o == ext.offset)
            .expect("a checkpoint-only block is pending");
        st.pending.swap_remove(i);
        if let Some(old) = st.table.set(bn, ext) {
            st.release(old.offset, old.alloc_len());
        }
        true
    }

    fn place_block(&self, bn: BlockNum, data: &[u8], header_len: u32, place: Place) -> Result<Extent> {
        let len = u32::try_from(data.len()).map_err(|_| Error::invalid("block larger than 4 GiB"))?;
        if header_len > len {
            return Err(Error::invalid(format!("node header of {header_len} bytes in a {len}-byte block")));
        }
        let mut ext = Extent { offset: 0, len, header_len, stamp: 0 };
        {
            let mut st = self.state.lock();
            match place {
                Place::Current => assert!(st.table.is_allocated(bn), "write_block of unallocated block {bn}"),
                _ => {
                    let ckpt = st.ckpt.as_ref().expect("a checkpoint write outside a checkpoint");
                    assert!(ckpt.is_allocated(bn), "checkpoint write of block {bn}, unknown at its begin");
                }
            }
            ext.offset = st.allocate(ext.alloc_len());
            st.stamp += 1;
            ext.stamp = st.stamp;
        }
        if let Err(e) = write_pages(&*self.file, ext.offset, data) {
            self.state.lock().alloc.free(ext.offset, ext.alloc_len());
            return Err(e);
        }
        let mut st = self.state.lock();
        match place {
            Place::CheckpointOnly => {
                st.join_checkpoint(bn, ext);
                // No current block points here: free it once no checkpoint does.
                st.pending.push((ext.offset, ext.alloc_len()));
            }
            Place::Current => {
                if let Some(old) = st.table.set(bn, ext) {
                    st.release(old.offset, old.alloc_len());
                }
            }
        }
        Ok(ext)
    }

    /// Reads [off, off+len) inside an extent previously returned by extent()/write_block.
    /// An extent past the end of the file is Corrupt(Some(bn)) "truncated". The caller
    /// keeps `ext` current: once bn is rewritten its old extent may be reused.
    pub fn read_range(&self, bn: BlockNum, ext: Extent, off: u32, len: u32) -> Result<Vec<u8>> {
        if u64::from(off) + u64::from(len) > u64::from(ext.len) {
            let why = format!("range {off}+{len} lies outside the block's {} bytes", ext.len);
            return Err(Error::corrupt(self.path(), Some(bn), why));
        }
        let mut buf = vec![0; len as usize];
        self.file.read_at(ext.offset + u64::from(off), &mut buf).map_err(|e| match is_truncation(&e) {
            true => Error::corrupt(self.path(), Some(bn), format!("truncated: the file ends inside {ext:?}")),
            false => e,
        })?;
        Ok(buf)
    }

    /// A whole checkpoint of the current table: `begin_checkpoint` then
    /// `finish_checkpoint`.
    #[cfg(test)]
    pub fn checkpoint(&self, meta: &[u8]) -> Result<()> {
        self.begin_checkpoint();
        self.finish_checkpoint(meta)
    }

    /// Starts a checkpoint of the blocks as they are now: the checkpoint's
    /// table is a copy of the current one, and every extent it names is
    /// protected from reuse until a later checkpoint no longer needs it.
    /// Afterwards `write_block` changes only the current table, and
    /// `write_block_for_checkpoint` records begin-time states of nodes that
    /// were dirty at the begin. One checkpoint at a time.
    pub fn begin_checkpoint(&self) {
        let mut st = self.state.lock();
        assert!(st.ckpt.is_none(), "a checkpoint is already in progress");
        let refs: Ranges = st.table.extents().map(|(_, e)| (e.offset, e.alloc_len())).collect();
        st.in_flight = Some(refs);
        st.ckpt = Some(st.table.clone());
    }

    /// Gives up the checkpoint begun by `begin_checkpoint` before any of its
    /// header was written: nothing on disk refers to its extents.
    pub fn abandon_checkpoint(&self) {
        let mut st = self.state.lock();
        st.ckpt = None;
        st.in_flight = None;
    }

    /// Durably finishes the checkpoint begun by `begin_checkpoint`: writes its
    /// table to a fresh extent, fdatasync, writes the other header slot
    /// (seq+1) with `meta`, fdatasync; then releases the extents no durable
    /// checkpoint needs any more. Writers are blocked only while the table is
    /// encoded, not during the I/O.
    pub fn finish_checkpoint(&self, meta: &[u8]) -> Result<()> {
        check_meta(meta)?;
        let (header, slot, block) = {
            let mut st = self.state.lock();
            let table = st.ckpt.take().expect("finish_checkpoint without begin_checkpoint");
            let block = table.encode(st.seq + 1);
            // The header stores the table's length as a u32. Checked before
            // anything is allocated: refused, the checkpoint is abandoned.
            let Ok(table_len) = u32::try_from(block.len()) else {
                st.in_flight = None;
                let (len, limit) = (block.len() as u64, u32::MAX.into());
                return Err(Error::TooLarge { what: "block translation table", len, limit });
            };
            let table_offset = st.allocate(page_round(block.len() as u64));
            st.in_flight.as_mut().expect("set at begin").insert(table_offset, page_round(block.len() as u64));
            let header =
                Header { version: st.version, seq: st.seq + 1, table_offset, table_len, meta: meta.into() };
            (header, 1 - st.slot, block)
        };
        debug_assert_eq!(slot, slot_of(header.seq), "checkpoint {} in slot {slot}", header.seq);
        // Both copies of the slot (version 2), then the one fsync: a crash
        // before it may tear both, and the other slot holds the newest
        // durable checkpoint; damage after it hits one copy, and the other
        // is read (`newest_header`).
        let encoded = header.encode();
        let res = write_pages(&*self.file, header.table_offset, &block)
            .and_then(|()| self.file.sync())
            .and_then(|()| {
                copy_offsets(header.version, slot)
                    .into_iter()
                    .try_for_each(|off| write_pages(&*self.file, off, &encoded))
            })
            .and_then(|()| self.file.sync());

        let mut st = self.state.lock();
        let refs = st.in_flight.take().expect("set above");
        let table_bytes = page_round(u64::from(header.table_len));
        if let Err(e) = res {
            // The new header may have reached the disk anyway, so both checkpoints stay
            // protected; the next one to succeed frees the unused table extent.
            st.durable.extend(refs);
            st.pending.push((header.table_offset, table_bytes));
            return Err(e);
        }
        (st.seq, st.slot, st.durable) = (header.seq, slot, refs);
        let old_table = std::mem::replace(&mut st.table_extent, (header.table_offset, table_bytes));
        st.pending.push(old_table);
        // Blocks superseded while this checkpoint was written are still in it: keep those.
        for (off, len) in std::mem::take(&mut st.pending) {
            st.release(off, len);
        }
        drop(st);
        // Giving space back is not part of the checkpoint: if it fails, the
        // checkpoint stands and the space is tried again after the next one.
        if let Err(e) = self.punch_free_space() {
            eprintln!("fractaldb: could not give free space back to the file system: {e}");
        }
        Ok(())
    }

    /// Gives the disk space of free runs of at least `PUNCH_MIN_BYTES` back
    /// to the file system (`VfsFile::punch_hole`), so the space a file takes
    /// on disk follows its live bytes; its length stays. The runs are taken
    /// out of the free space meanwhile, so no block is written into a range
    /// while it is being punched. Returns the bytes punched.
    pub fn punch_free_space(&self) -> Result<u64> {
        let runs = self.state.lock().alloc.take_punchable(PUNCH_MIN_BYTES);
        let mut err = None;
        let done: Vec<bool> = runs
            .iter()
            .map(|&(off, len)| {
                err.is_none() && self.file.punch_hole(off, len).map_err(|e| err = Some(e)).is_ok()
            })
            .collect();
        let mut st = self.state.lock();
        let mut punched = 0;
        for (&(off, len), done) in runs.iter().zip(done) {
            st.alloc.give_back_punched(off, len, done);
            punched += if done { len } else { 0 };
        }
        match err {
            Some(e) => Err(e),
            None => Ok(punched),
        }
    }

    /// Gives all the file's disk space back (truncates it to nothing), for
    /// a dictionary being dropped: its file is removed next, but a thread
    /// may still hold this handle for a moment (a background thread's list
    /// of trees), and an open file's blocks stay allocated until its last
    /// handle closes. Reads after this fail; nothing may read it anyway.
    pub fn discard(&self) -> Result<()> {
        self.file.set_len(0)
    }

    /// File length, bytes of live extents + headers + table, and free bytes
    /// given back to the file system.
    pub fn space(&self) -> SpaceStats {
        let st = self.state.lock();
        let (mut blocks, mut in_use) = (0u64, 0u64);
        for (_, e) in st.table.extents() {
            blocks += e.alloc_len();
            in_use += 1;
        }
        SpaceStats {
            file_bytes: st.alloc.end(),
            live_bytes: headers_end(st.version) + st.table_extent.1 + blocks,
            punched_bytes: st.alloc.punched_bytes(),
            block_numbers: st.table.numbers(),
            blocks_in_use: in_use,
        }
    }
}

/// Reads the header copies of a file and returns the newest valid one and its
/// slot (0 = A, 1 = B).
///
/// A version-2 file has four copies: the primaries of slots A and B at 0 and
/// 4096, their mirrors at 8192 and 12288. A checkpoint writes both copies of
/// one slot, then fsyncs. A crash during that can tear both copies of that
/// slot, and then the newest valid copy is the other slot's, the newest
/// durable checkpoint; damage after the fsync hits one copy, and the other
/// copy of the same checkpoint is read. So the newest checkpoint among all
/// valid copies is the right one, unless both copies of the newest slot
/// were damaged after it was durable: that falls back to the older slot
/// (whose blocks may have been reused since) and cannot be told from a crash.
///
/// A version-1 file has only the primaries (its blocks start at 8192, so its
/// mirror offsets hold blocks and are not read): it behaves as it always did.
/// The primaries tell the version; if neither is valid, the mirrors are read
/// as version 2 copies. Any copy of a newer version is `UnsupportedVersion`,
/// rather than a silent fall back to an older checkpoint.
fn newest_header(file: &dyn VfsFile, path: &Path) -> Result<(u64, Header)> {
    let read_copy = |off: u64| {
        let mut buf = vec![0; SLOT_SIZE as usize];
        match file.read_at(off, &mut buf) {
            Ok(()) => Ok(Header::decode(path, &buf)),
            Err(e) if is_truncation(&e) => Ok(Err(Error::corrupt(path, None, "file too short for a header"))),
            Err(e) => Err(e),
        }
    };
    let mut copies: Vec<(u64, u64, Result<Header>)> = Vec::with_capacity(4);
    for slot in 0..2 {
        copies.push((slot, slot * SLOT_SIZE, read_copy(slot * SLOT_SIZE)?));
    }
    let versions: Vec<u32> =
        copies.iter().filter_map(|(_, _, h)| h.as_ref().ok().map(|h| h.version)).collect();
    let version = match versions[..] {
        [] => FORMAT_VERSION,
        [v] => v,
        [a, b] if a == b => a,
        _ => return Err(Error::corrupt(path, None, "header slots A and B are of format versions 1 and 2")),
    };
    if version != VERSION_1 {
        for slot in 0..2 {
            let off = HEADERS_END_V1 + slot * SLOT_SIZE;
            copies.push((slot, off, read_copy(off)?));
        }
    }
    let mut newest: Option<(u64, Header)> = None;
    let mut why = Vec::new();
    for (slot, off, copy) in copies {
        let copy = copy.and_then(|h| {
            if h.version != version {
                Err(Error::corrupt(
                    path,
                    None,
                    format!("a version {} header in a version {version} file", h.version),
                ))
            } else if version != VERSION_1 && slot_of(h.seq) != slot {
                Err(Error::corrupt(path, None, format!("checkpoint {} in slot {slot}", h.seq)))
            } else {
                Ok(h)
            }
        });
        match copy {
            // A newer build wrote here: falling back to an older checkpoint would silently lose its work.
            Err(e @ Error::UnsupportedVersion { .. }) => return Err(e),
            Err(e) => why.push(format!("copy at {off}: {e}")),
            // The first copy of the newest checkpoint, primaries first.
            Ok(h) if newest.as_ref().is_none_or(|(_, n)| h.seq > n.seq) => newest = Some((slot, h)),
            Ok(_) => {}
        }
    }
    newest.ok_or_else(|| Error::corrupt(path, None, format!("no valid header ({})", why.join("; "))))
}

fn check_meta(meta: &[u8]) -> Result<()> {
    match meta.len() > MAX_META {
        true => Err(Error::invalid(format!("checkpoint meta of {} bytes, at most {MAX_META}", meta.len()))),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::header::HEADERS_END;
    use crate::file::vfs::OsVfs;
    use std::fs::OpenOptions;
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    fn tmp() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let path = dir.path().join("dict.fdb");
        (dir, path)
    }

    fn node(tag: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| tag.wrapping_add(i as u8)).collect()
    }

    fn read_all(f: &BlockFile, bn: BlockNum) -> Vec<u8> {
        let ext = f.extent(bn).unwrap();
        f.read_range(bn, ext, 0, ext.len).unwrap()
    }

    /// Overwrites bytes of the file behind the BlockFile's back.
    fn scribble(path: &Path, off: u64, bytes: &[u8]) {
        OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, off).unwrap();
    }

    #[test]
    fn create_writes_a_durable_empty_checkpoint_and_refuses_existing_files() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, true, b"meta-1").unwrap();
        assert_eq!(f.path(), path);
        assert_eq!(
            f.space(),
            SpaceStats {
                file_bytes: 5 * 4096,
                live_bytes: 5 * 4096,
                punched_bytes: 0,
                block_numbers: 0,
                blocks_in_use: 0
            }
        );
        drop(f);
        assert!(matches!(BlockFile::create(&OsVfs, &path, true, b""), Err(Error::Io { .. })));
        let (f, meta) = BlockFile::open(&OsVfs, &path, true).unwrap();
        assert_eq!(meta, b"meta-1");
        assert_eq!((f.extent(0), f.allocate_blocknum()), (None, 0));
    }

    #[test]
    fn reopen_returns_the_meta_blob_and_every_extent_as_written() {
        for dir in ["/tmp", "/dev/shm"] {
            let Ok(d) = tempfile::tempdir_in(dir) else { continue };
            let path = d.path().join("f");
            let f = BlockFile::create(&OsVfs, &path, true, b"").unwrap();
            let mut written = Vec::new();
            for i in 0..20u8 {
                let bn = f.allocate_blocknum();
                let data = node(i, 100 + 997 * i as usize);
                written.push((bn, f.write_block(bn, &data, 10).unwrap(), data));
            }
            f.free_blocknum(3);
            written.remove(3);
            f.checkpoint(&[7; MAX_META]).unwrap();
            drop(f);
            let (f, meta) = BlockFile::open(&OsVfs, &path, true).unwrap();
            assert_eq!(meta, vec![7; MAX_META]);
            for (bn, ext, data) in &written {
                assert_eq!(f.extent(*bn), Some(Extent { stamp: 0, ..*ext }), "{dir}: block {bn}");
                assert_eq!(&read_all(&f, *bn), data);
                assert_eq!(f.read_range(*bn, *ext, 3, 7).unwrap(), data[3..10]);
            }
            assert_eq!((f.extent(3), f.allocate_blocknum()), (None, 3), "freed number comes back first");
        }
    }

    /// Checkpoints 1 ("one", slot A), 2 ("two", B) and 3 ("three", A) of
    /// one block; returns the block number and its extents at 2 and 3.
    fn three_checkpoints(path: &Path, version: u32) -> (BlockNum, Extent, Extent) {
        let f = BlockFile::create_version(&OsVfs, path, false, b"one", version).unwrap();
        let bn = f.allocate_blocknum();
        let second = f.write_block(bn, &node(1, 5000), 0).unwrap();
        f.checkpoint(b"two").unwrap(); // seq 2, slot B
        let third = f.write_block(bn, &node(2, 5000), 0).unwrap();
        f.checkpoint(b"three").unwrap(); // seq 3, slot A
        (bn, Extent { stamp: 0, ..second }, Extent { stamp: 0, ..third })
    }

    fn read_at(path: &Path, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0; len];
        OpenOptions::new().read(true).open(path).unwrap().read_exact_at(&mut b, off).unwrap();
        b
    }

    #[test]
    fn a_crash_tearing_both_copies_of_the_newer_slot_falls_back_to_the_older_checkpoint() {
        let (_d, path) = tmp();
        drop(BlockFile::create(&OsVfs, &path, false, b"one").unwrap());
        let one = read_at(&path, 0, 4096); // checkpoint 1, slot A
        std::fs::remove_file(&path).unwrap();
        let (bn, second, _) = three_checkpoints(&path, FORMAT_VERSION);
        let three = read_at(&path, 0, 4096);
        // A crash while checkpoint 3 was written over checkpoint 1: the
        // primary torn, the mirror not written yet (or torn too).
        for mirror in [one.clone(), [&one[..100], &[0xEE; 3996][..]].concat(), vec![0; 4096]] {
            scribble(&path, 0, &three);
            scribble(&path, 20, &[0xEE; 300]);
            scribble(&path, 8192, &mirror);
            let (f, meta) = BlockFile::open(&OsVfs, &path, false).unwrap();
            assert_eq!(meta, b"two");
            assert_eq!((f.extent(bn), read_all(&f, bn)), (Some(second), node(1, 5000)));
        }
        // The next checkpoint goes to the damaged slot, never over the one just loaded.
        let (f, _) = BlockFile::open(&OsVfs, &path, false).unwrap();
        f.checkpoint(b"three again").unwrap();
        drop(f);
        assert_eq!(BlockFile::open(&OsVfs, &path, false).unwrap().1, b"three again");
    }

    /// Damage to one copy of the newest checkpoint's header, after it was
    /// durable (a flipped bit, a zeroed range as in the corruption sweep),
    /// is read past: the other copy of the same checkpoint is used, not
    /// the older checkpoint, whose blocks may be gone and whose data is
    /// stale. Only damage to both copies falls back (undetectable).
    #[test]
    fn damage_to_one_copy_of_the_newest_header_reads_the_other_copy() {
        let (_d, path) = tmp();
        let (bn, _, third) = three_checkpoints(&path, FORMAT_VERSION);
        let pristine = std::fs::read(&path).unwrap();
        let damages: [(u64, Vec<u8>); 6] = [
            (0, vec![pristine[0] ^ 4]),      // a bit of the primary's magic
            (0, vec![0; 1296]),              // the primary's first 1296 bytes
            (30, vec![pristine[30] ^ 0x80]), // the primary's table offset
            (8192, vec![0; 4096]),           // the mirror
            (8192 + 17, vec![pristine[8192 + 17] ^ 1]),
            (1850, vec![0; 2974]), // A's primary and B's, as in the sweep
        ];
        for (off, bytes) in damages {
            std::fs::write(&path, &pristine).unwrap();
            scribble(&path, off, &bytes);
            let (f, meta) = BlockFile::open(&OsVfs, &path, false).unwrap();
            assert_eq!(meta, b"three", "damage at {off}");
            assert_eq!((f.extent(bn), read_all(&f, bn)), (Some(third), node(2, 5000)), "damage at {off}");
        }
        // The same for the newest checkpoint in slot B.
        std::fs::write(&path, &pristine).unwrap();
        let f = BlockFile::open(&OsVfs, &path, false).unwrap().0;
        f.checkpoint(b"four").unwrap(); // seq 4, slot B
        drop(f);
        for (off, len) in [(4096, 4096), (12288, 4096), (1850, 2974), (4000, 200)] {
            let before = read_at(&path, off, len);
            scribble(&path, off, &vec![0; len]);
            assert_eq!(BlockFile::open(&OsVfs, &path, false).unwrap().1, b"four", "zeroed {off}+{len}");
            scribble(&path, off, &before);
        }
        // Both copies of slot B damaged: indistinguishable from a crash
        // while it was written, the older checkpoint is read.
        scribble(&path, 4096, &[0; 4096]);
        scribble(&path, 12288 + 8, &[9]);
        assert_eq!(BlockFile::open(&OsVfs, &path, false).unwrap().1, b"three");
    }

    /// A version-1 file (one copy per slot, blocks from 8192) is read and
    /// written in its own layout: its mirror offsets hold blocks, which are
    /// never taken for headers, and header damage falls back as it always did.
    #[test]
    fn a_version_1_file_keeps_its_layout() {
        let (_d, path) = tmp();
        let (bn, second, third) = three_checkpoints(&path, VERSION_1);
        assert_eq!(second.offset, 8192 + 4096, "version 1 blocks start at 8192 (the table took 8192)");
        let (f, meta) = BlockFile::open(&OsVfs, &path, false).unwrap();
        assert_eq!((meta, f.extent(bn), read_all(&f, bn)), (b"three".to_vec(), Some(third), node(2, 5000)));
        f.checkpoint(b"four").unwrap();
        drop(f);
        assert_eq!(read_at(&path, 8, 4), 1u32.to_le_bytes(), "still version 1");
        assert_eq!(read_at(&path, 4096 + 8, 4), 1u32.to_le_bytes(), "still version 1");
        assert_eq!(BlockFile::open(&OsVfs, &path, false).unwrap().1, b"four");
        scribble(&path, 4096 + 20, &[0xEE; 300]);
        assert_eq!(BlockFile::open(&OsVfs, &path, false).unwrap().1, b"three");
        // With both primaries gone, the blocks at the mirror offsets are no header.
        scribble(&path, 0, &[0; 4096]);
        let err = BlockFile::open(&OsVfs, &path, false).err().unwrap();
        assert!(matches!(err, Error::Corrupt { block: None, .. }), "{err}");
    }

    #[test]
    fn no_valid_header_is_corrupt_and_a_newer_version_is_unsupported() {
        let (_d, path) = tmp();
        BlockFile::create(&OsVfs, &path, false, b"x").unwrap();
        let mut slot = vec![0; 4096];
        OpenOptions::new().read(true).open(&path).unwrap().read_exact_at(&mut slot, 0).unwrap();
        slot[8] = 3; // version 3, checksum fixed up: a valid header from a newer build
        let c = 40 + 1;
        let crc = crc32c::crc32c(&slot[..c]);
        slot[c..c + 4].copy_from_slice(&crc.to_le_bytes());
        scribble(&path, 0, &slot);
        assert!(matches!(
            BlockFile::open(&OsVfs, &path, false),
            Err(Error::UnsupportedVersion { found: 3, .. })
        ));
        scribble(&path, 20, &[1]);
        scribble(&path, 8192 + 20, &[1]);
        let err = BlockFile::open(&OsVfs, &path, false).err().unwrap();
        assert!(matches!(err, Error::Corrupt { block: None, .. }), "{err}");
        std::fs::write(&path, b"short").unwrap();
        assert!(matches!(BlockFile::open(&OsVfs, &path, false), Err(Error::Corrupt { block: None, .. })));
    }

    #[test]
    fn extents_of_the_durable_checkpoint_are_not_reused_before_the_next_one() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, false, b"").unwrap();
        let (a, b) = (f.allocate_blocknum(), f.allocate_blocknum());
        let old_a = f.write_block(a, &node(1, 8192), 0).unwrap();
        let old_b = f.write_block(b, &node(2, 4096), 0).unwrap();
        f.checkpoint(b"").unwrap();
        f.write_block(a, &node(3, 8192), 0).unwrap(); // supersedes old_a
        f.free_blocknum(b); // drops old_b
        for i in 0..4 {
            let ext = f.write_block(f.allocate_blocknum(), &node(4, 4096), 0).unwrap();
            assert!(ext.offset + 4096 <= old_a.offset || ext.offset >= old_a.offset + 8192, "round {i}");
            assert_ne!(ext.offset, old_b.offset, "round {i}");
        }
        // A crash now must still find the checkpoint's blocks intact.
        let (g, _) = BlockFile::open(&OsVfs, &path, false).unwrap();
        assert_eq!((read_all(&g, a), read_all(&g, b)), (node(1, 8192), node(2, 4096)));
        drop(g);
        f.checkpoint(b"").unwrap();
        let reused: Vec<u64> =
            (0..4).map(|_| f.write_block(f.allocate_blocknum(), &node(5, 4096), 0).unwrap().offset).collect();
        assert!(reused.contains(&old_a.offset) && reused.contains(&old_b.offset), "{reused:?} {old_a:?}");
    }

    #[test]
    fn extents_written_and_superseded_between_checkpoints_are_reused_at_once() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, false, b"").unwrap();
        let bn = f.allocate_blocknum();
        let first = f.write_block(bn, &node(1, 6000), 0).unwrap();
        let (other, second) = (f.allocate_blocknum(), f.write_block(bn, &node(2, 6000), 0).unwrap());
        assert_ne!(first.offset, second.offset, "never written over a live extent");
        assert_eq!(f.write_block(other, &node(3, 100), 0).unwrap().offset, first.offset);
        // Copy-on-write needs room for the old and the new copy; after that the file stops growing.
        f.write_block(bn, &node(4, 6000), 0).unwrap();
        let end = f.space().file_bytes;
        for i in 0..50 {
            f.write_block(bn, &node(i, 6000), 0).unwrap();
        }
        assert_eq!(f.space().file_bytes, end, "rewrites recycle space instead of growing the file");
        let live = f.space().live_bytes;
        assert_eq!(live, 4 * 4096 + 4096 + 8192 + 4096);
    }

    #[test]
    fn repeated_checkpoints_keep_the_file_compact() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, false, b"").unwrap();
        let bns: Vec<_> = (0..10).map(|_| f.allocate_blocknum()).collect();
        for round in 0..30u8 {
            for &bn in &bns {
                f.write_block(bn, &node(round, 4096 * (1 + bn as usize % 3)), 0).unwrap();
            }
            f.checkpoint(&[round]).unwrap();
        }
        let s = f.space();
        assert!(s.file_bytes <= 2 * s.live_bytes + 8192, "{s:?}");
        drop(f);
        let (f, meta) = BlockFile::open(&OsVfs, &path, false).unwrap();
        assert_eq!((meta, read_all(&f, 4)), (vec![29], node(29, 4096 * 2)));
    }

    /// Blocks rewritten into new places leave free runs behind; after the
    /// checkpoints that release them, their disk space is given back, so the
    /// file takes about its live bytes on disk while its length stays, and
    /// every live block still reads back.
    #[test]
    fn checkpoints_give_free_space_back_to_the_file_system() {
        use std::os::unix::fs::MetadataExt;
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, true, b"").unwrap();
        let bns: Vec<_> = (0..8).map(|_| f.allocate_blocknum()).collect();
        for &bn in &bns {
            f.write_block(bn, &node(1, 256 << 10), 0).unwrap();
        }
        f.checkpoint(b"1").unwrap();
        // Half the blocks shrink: their new, smaller copies fill the front
        // of the old runs, and the rest of each run is free.
        for &bn in &bns[..4] {
            f.write_block(bn, &node(2, 16 << 10), 0).unwrap();
        }
        f.checkpoint(b"2").unwrap();
        f.checkpoint(b"3").unwrap();
        let s = f.space();
        assert!(s.punched_bytes >= 3 * (240 << 10), "{s:?}");
        let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(allocated <= s.file_bytes - s.punched_bytes + (64 << 10), "{allocated} on disk, {s:?}");
        for (i, &bn) in bns.iter().enumerate() {
            let want = if i < 4 { node(2, 16 << 10) } else { node(1, 256 << 10) };
            assert_eq!(read_all(&f, bn), want, "block {bn}");
        }
        // Nothing is punched twice, and the runs are allocated again as usual.
        assert_eq!(f.punch_free_space().unwrap(), 0);
        for &bn in &bns[..4] {
            f.write_block(bn, &node(3, 200 << 10), 0).unwrap();
        }
        f.checkpoint(b"4").unwrap();
        drop(f);
        let (f, meta) = BlockFile::open(&OsVfs, &path, true).unwrap();
        assert_eq!(
            (meta, read_all(&f, bns[0]), read_all(&f, bns[7])),
            (b"4".to_vec(), node(3, 200 << 10), node(1, 256 << 10))
        );
    }

    #[test]
    fn at_every_moment_a_crash_would_reopen_the_last_checkpoint_intact() {
        use rand::{Rng, SeedableRng};
        use std::collections::HashMap;
        let (_d, path) = tmp();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let f = BlockFile::create(&OsVfs, &path, true, b"0").unwrap();
        let (mut now, mut durable) = (HashMap::new(), (0u32, HashMap::new()));
        for step in 0..3000u32 {
            let pick = |rng: &mut rand::rngs::SmallRng, m: &HashMap<u64, _>| {
                *m.keys().nth(rng.gen_range(0..m.len())).unwrap()
            };
            match if now.is_empty() { 0 } else { rng.gen_range(0..100) } {
                0..=59 => {
                    let bn = match rng.gen_bool(0.8) && !now.is_empty() {
                        true => pick(&mut rng, &now),
                        false => f.allocate_blocknum(),
                    };
                    let data = node(step as u8, rng.gen_range(1..30_000));
                    f.write_block(bn, &data, 0).unwrap();
                    now.insert(bn, data);
                }
                60..=79 => {
                    let bn = pick(&mut rng, &now);
                    f.free_blocknum(bn);
                    now.remove(&bn);
                }
                80..=94 => {
                    f.checkpoint(step.to_string().as_bytes()).unwrap();
                    durable = (step, now.clone());
                }
                _ => {
                    let (g, meta) = BlockFile::open(&OsVfs, &path, true).unwrap();
                    assert_eq!(meta, durable.0.to_string().as_bytes());
                    for (bn, data) in &durable.1 {
                        assert_eq!(&read_all(&g, *bn), data, "step {step}: block {bn}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_truncated_file_is_corrupt_naming_the_block() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, true, b"").unwrap();
        let (a, b) = (f.allocate_blocknum(), f.allocate_blocknum());
        f.write_block(a, &node(1, 4096), 0).unwrap();
        f.checkpoint(b"").unwrap();
        let ext_b = f.write_block(b, &node(2, 20_000), 0).unwrap();
        f.checkpoint(b"").unwrap();
        assert_eq!(f.state.lock().table_extent.0, HEADERS_END, "the table reused the first hole");
        assert_eq!(ext_b.offset + 20_480, f.space().file_bytes, "block b is last");
        drop(f);
        OpenOptions::new().write(true).open(&path).unwrap().set_len(ext_b.offset + 5000).unwrap();
        let (f, _) = BlockFile::open(&OsVfs, &path, true).unwrap();
        assert_eq!(read_all(&f, a), node(1, 4096));
        let err = f.read_range(b, ext_b, 0, ext_b.len).unwrap_err();
        assert!(
            matches!(&err, Error::Corrupt { block: Some(1), reason, .. } if reason.contains("truncated"))
        );
        assert_eq!(f.read_range(b, ext_b, 10, 100).unwrap(), node(2, 20_000)[10..110]);
        assert!(matches!(f.read_range(b, ext_b, 19_999, 2), Err(Error::Corrupt { block: Some(1), .. })));
        // New blocks never land on the missing tail of a block that is still referenced.
        for _ in 0..8 {
            let ext = f.write_block(f.allocate_blocknum(), &node(3, 100), 0).unwrap();
            assert!(ext.offset + 4096 <= ext_b.offset || ext.offset >= ext_b.offset + 20_480, "{ext:?}");
        }
        drop(f);
        OpenOptions::new().write(true).open(&path).unwrap().set_len(HEADERS_END + 10).unwrap();
        let err = BlockFile::open(&OsVfs, &path, true).err().unwrap();
        assert!(
            matches!(&err, Error::Corrupt { block: None, reason, .. } if reason.contains("beyond")),
            "{err}"
        );
    }

    #[test]
    fn a_flipped_bit_in_the_translation_table_is_corrupt() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, false, b"").unwrap();
        let bn = f.allocate_blocknum();
        f.write_block(bn, &node(1, 4096), 0).unwrap();
        f.checkpoint(b"").unwrap();
        let block_at = f.extent(bn).unwrap().offset;
        let table = f.state.lock().durable.keys().copied().find(|&o| o != block_at);
        drop(f);
        scribble(&path, table.unwrap() + 30, &[0x04]);
        let err = BlockFile::open(&OsVfs, &path, false).err().unwrap();
        assert!(matches!(&err, Error::Corrupt { reason, .. } if reason.contains("checksum")), "{err}");
    }

    #[test]
    fn bad_arguments_are_errors() {
        let (_d, path) = tmp();
        assert!(matches!(
            BlockFile::create(&OsVfs, &path, false, &[0; MAX_META + 1]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(!path.exists());
        let f = BlockFile::create(&OsVfs, &path, false, b"").unwrap();
        assert!(matches!(f.checkpoint(&[0; MAX_META + 1]), Err(Error::InvalidArgument(_))));
        let bn = f.allocate_blocknum();
        assert!(matches!(f.write_block(bn, b"abc", 4), Err(Error::InvalidArgument(_))));
        let empty = f.write_block(bn, b"", 0).unwrap();
        assert_eq!((empty.len, f.read_range(bn, empty, 0, 0).unwrap()), (0, vec![]));
    }

    #[test]
    fn concurrent_writers_readers_and_checkpoints_agree() {
        let (_d, path) = tmp();
        let f = BlockFile::create(&OsVfs, &path, true, b"").unwrap();
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let f = &f;
                s.spawn(move || {
                    let bn = f.allocate_blocknum();
                    for i in 0..100u8 {
                        let data = node(t.wrapping_mul(50).wrapping_add(i), 3000 + 1000 * (i as usize % 5));
                        let ext = f.write_block(bn, &data, 0).unwrap();
                        assert_eq!(f.read_range(bn, ext, 0, ext.len).unwrap(), data);
                    }
                });
            }
            s.spawn(|| (0..20).for_each(|_| f.checkpoint(b"c").unwrap()));
        });
        f.checkpoint(b"end").unwrap();
        let blocks: Vec<_> = (0..4).map(|bn| read_all(&f, bn)).collect();
        drop(f);
        let (f, _) = BlockFile::open(&OsVfs, &path, true).unwrap();
        assert_eq!((0..4).map(|bn| read_all(&f, bn)).collect::<Vec<_>>(), blocks);
    }
}
