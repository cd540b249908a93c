//! Bulk building of new dictionaries: entries gathered in any order,
//! sorted within a memory budget (runs on disk past it, through the
//! external sort's run files, `sort.rs`), then written by the engine's
//! loader (`fractaldb::Env::loader`: leaf by leaf, bottom-up, never
//! through a root's buffers), as TokuDB's loader built indexes.
//!
//! Used where the target dictionary is new and no other transaction can
//! see it: ALTER TABLE's rebuild (every dictionary of the new table), its
//! index builds (ADD INDEX, CREATE INDEX, ENABLE KEYS) and LOAD DATA into
//! an empty table (`bulkload.rs`, through the rebuild). `load` creates the
//! dictionary when it finishes, before the statement's catalog
//! transaction commits, so the crash-safe DDL invariant holds as with
//! `create_dictionary` (a crash leaves the old table or the new one; a
//! half-loaded dictionary is deleted by the engine at the next open).
//!
//! The loaded entries are committed values (see the engine's loader):
//! nobody sees them until the catalog transaction that names the
//! dictionary commits, so they are committed as of that transaction.
//!
//! Budget: `tokudb_loader_memory_size` (TokuDB's variable, default 100 MB)
//! for all the sorts of one statement, shared evenly.

use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::sort::{merge_runs, Merge, Run, RunWriter, SortCfg};

/// The least budget one sort gets, however small the variable.
const MIN_BUDGET: usize = 64 << 10;

/// Bytes an entry costs in memory beyond its key and value (its place in
/// `PairSorter::idx`).
const ENTRY_OVERHEAD: usize = 16;

/// The sort configuration of `n` sorts sharing this session's loader budget.
pub(crate) fn cfg(s: &Session, n: usize) -> SortCfg {
    let mut cfg = SortCfg::of(s);
    let total = s
        .session_var("tokudb_loader_memory_size")
        .and_then(|v| v.to_i64())
        .map_or(100_000_000, |b| usize::try_from(b).unwrap_or(usize::MAX));
    cfg.budget = (total / n.max(1)).max(MIN_BUDGET);
    cfg
}

/// Key/value pairs in any order; out in key order (bytewise).
///
/// The pairs are copied back to back into one buffer and sorted as
/// (offset, lengths) triples: two allocations per sorter rather than two
/// per pair, so a load of millions of entries does not fill the heap with
/// small blocks (which the allocator then walks whenever it consolidates).
pub(crate) struct PairSorter {
    cfg: SortCfg,
    data: Vec<u8>,
    /// Per pair: where its key starts in `data`, the key's and the value's
    /// lengths (the value follows the key).
    idx: Vec<(usize, u32, u32)>,
    runs: Vec<Run>,
}

/// The key of pair `e` in `data`.
fn key_of<'a>(data: &'a [u8], e: &(usize, u32, u32)) -> &'a [u8] {
    &data[e.0..e.0 + e.1 as usize]
}

/// The value of pair `e` in `data`.
fn value_of<'a>(data: &'a [u8], e: &(usize, u32, u32)) -> &'a [u8] {
    let at = e.0 + e.1 as usize;
    &data[at..at + e.2 as usize]
}

impl PairSorter {
    pub fn new(cfg: SortCfg) -> PairSorter {
        PairSorter { cfg, data: Vec::new(), idx: Vec::new(), runs: Vec::new() }
    }

    fn mem(&self) -> usize {
        self.data.len() + self.idx.len() * ENTRY_OVERHEAD
    }

    pub fn add(&mut self, key: Vec<u8>, value: Vec<u8>) -> SqlResult<()> {
        let (Ok(kl), Ok(vl)) = (u32::try_from(key.len()), u32::try_from(value.len())) else {
            return Err(SqlError::internal("an index entry over 4 GiB"));
        };
        self.idx.push((self.data.len(), kl, vl));
        self.data.extend_from_slice(&key);
        self.data.extend_from_slice(&value);
        if self.mem() > self.cfg.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn sort(&mut self) {
        let data = &self.data;
        self.idx.sort_unstable_by(|a, b| key_of(data, a).cmp(key_of(data, b)));
    }

    fn spill(&mut self) -> SqlResult<()> {
        self.sort();
        let mut w = RunWriter::new(&self.cfg)?;
        for e in &self.idx {
            w.put(key_of(&self.data, e), value_of(&self.data, e))?;
        }
        self.runs.push(w.finish()?);
        // The buffers keep their capacity for the next run.
        self.idx.clear();
        self.data.clear();
        Ok(())
    }

    /// Runs written to disk so far.
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The pairs in key order.
    pub fn finish(mut self) -> SqlResult<Sorted> {
        if self.runs.is_empty() {
            self.sort();
            return Ok(Sorted::Mem {
                data: std::mem::take(&mut self.data),
                idx: std::mem::take(&mut self.idx),
                at: 0,
            });
        }
        if !self.idx.is_empty() {
            self.spill()?;
        }
        Ok(Sorted::Merge(merge_runs(std::mem::take(&mut self.runs), &self.cfg)?))
    }
}

pub(crate) enum Sorted {
    Mem { data: Vec<u8>, idx: Vec<(usize, u32, u32)>, at: usize },
    Merge(Merge),
}

impl Sorted {
    pub fn next(&mut self) -> SqlResult<Option<(Vec<u8>, Vec<u8>)>> {
        match self {
            Sorted::Mem { data, idx, at } => Ok(idx.get(*at).map(|e| {
                *at += 1;
                (key_of(data, e).to_vec(), value_of(data, e).to_vec())
            })),
            Sorted::Merge(m) => m.next(),
        }
    }
}

/// Creates dictionary `name` (with `opts`: the table's codec) holding the
/// pairs of `sorter`, by the engine's loader. Two equal keys are an
/// internal error (the callers check unique keys first and give 1062;
/// every other key carries the primary key). Checks the statement's KILL
/// flag between rows.
pub(crate) fn load(
    s: &Session,
    name: &str,
    opts: fractaldb::DictOptions,
    sorter: PairSorter,
) -> SqlResult<fractaldb::Dictionary> {
    let mut sorted = sorter.finish()?;
    let mut loader = Loader::new(s, name, opts)?;
    while let Some((k, v)) = sorted.next()? {
        loader.add(s, &k, &v)?;
    }
    loader.finish(s)
}

/// The engine's loader for one new dictionary, fed pairs in strictly
/// increasing key order (`load`, and LOAD DATA's bulk path, which drops
/// duplicate rows between the sort and the loader). Dropped unfinished,
/// it leaves no dictionary.
pub(crate) struct Loader {
    name: String,
    inner: fractaldb::Loader,
    n: u64,
}

impl Loader {
    pub fn new(s: &Session, name: &str, opts: fractaldb::DictOptions) -> SqlResult<Loader> {
        Ok(Loader { name: name.to_string(), inner: s.inner.env.loader(name, opts)?, n: 0 })
    }

    /// Adds a pair; checks the statement's KILL flag now and then.
    pub fn add(&mut self, s: &Session, k: &[u8], v: &[u8]) -> SqlResult<()> {
        self.inner.add(k, v).map_err(|e| match e {
            fractaldb::Error::InvalidArgument(m) => SqlError::internal(format!("loading {}: {m}", self.name)),
            e => e.into(),
        })?;
        self.n += 1;
        if self.n.is_multiple_of(4096) {
            s.check_killed()?;
        }
        Ok(())
    }

    /// Creates the dictionary (counted in `Fractaldb_bulk_loads`).
    pub fn finish(self, s: &Session) -> SqlResult<fractaldb::Dictionary> {
        let d = self.inner.finish()?;
        s.count(crate::sysvars::Stat::FractaldbBulkLoads, 1);
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// Pairs come out in key order with their values, whether they stayed
    /// in memory or went through runs on disk (merged in passes).
    #[test]
    fn pairs_come_out_sorted_in_memory_and_through_runs() {
        let dir = tempfile::tempdir().unwrap();
        for (budget, spills) in [(1 << 20, false), (2000, true)] {
            let cfg = SortCfg {
                budget,
                dir: dir.path().to_path_buf(),
                killed: Arc::new(AtomicBool::new(false)),
                fanin: 3,
                proc: None,
            };
            let mut s = PairSorter::new(cfg);
            // 1000 distinct keys in a scrambled order.
            for i in 0..1000u32 {
                let k = (i.wrapping_mul(7919) % 1000).to_be_bytes().to_vec();
                let v = format!("v{}", u32::from_be_bytes(k[..].try_into().unwrap())).into_bytes();
                s.add(k, v).unwrap();
            }
            assert_eq!(s.runs() > 0, spills);
            let mut out = s.finish().unwrap();
            for i in 0..1000u32 {
                assert_eq!(
                    out.next().unwrap(),
                    Some((i.to_be_bytes().to_vec(), format!("v{i}").into_bytes()))
                );
            }
            assert_eq!(out.next().unwrap(), None);
        }
        // Every run file is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
