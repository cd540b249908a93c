//! The external sort: ORDER BY, DISTINCT, window partitions, UNION's
//! DISTINCT and ORDER BY, and GROUP BY's spilled runs all go through it.
//!
//! Rows are sorted by a byte string: each ORDER BY value's order-preserving
//! encoding ([`put_key`]), so comparing two rows is one `memcmp` and the
//! order is exactly ORDER BY's (collations, NULLs first, DESC, numbers of
//! any kind). Rows accumulate in memory up to the sort's budget
//! (`sort_buffer_size`, per sort, as MariaDB's filesort allocates it);
//! past it, the rows so far are sorted and written as a run to a file in
//! the database folder's `sql-tmp/`, and at the end the runs are merged,
//! at most [`SortCfg::fanin`] at a time (more runs are merged in passes
//! into fewer, longer runs first). With a LIMIT, the first N rows are kept
//! in a heap and nothing spills while those N rows fit the budget.
//!
//! **Invariant (stable):** rows with equal keys come out in the order
//! they went in, whether or not the sort spilled: the in-memory sort is
//! stable, runs are consecutive stretches of the input, a merge breaks a
//! tie by the earlier run, and a pass merges consecutive runs. So a
//! spilled sort gives exactly the in-memory result.
//!
//! **Invariant (no leftovers):** a run file belongs to a [`Run`], which
//! deletes it when dropped: when the sort ends, fails (disk full, KILL) or
//! its statement is abandoned; `Database::open` empties `sql-tmp/` after a
//! crash.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::error::{SqlError, SqlResult};
use crate::expr::CmpKind;
use crate::types::Collation;
use crate::value::{Temporal, TemporalKind, Value};

/// How a sort may use memory and disk, and how it is stopped.
#[derive(Clone)]
pub(crate) struct SortCfg {
    /// Bytes of rows held in memory before they go to a run.
    pub budget: usize,
    /// The spill folder (`<datadir>/sql-tmp`), created on first use.
    pub dir: PathBuf,
    /// The statement's kill flag, checked between rows.
    pub killed: Arc<AtomicBool>,
    /// The most runs one merge reads at once.
    pub fanin: usize,
    /// The session's status counters (Sort_merge_passes).
    pub proc: Option<Arc<parking_lot::Mutex<crate::db::Proc>>>,
}

/// Runs merged at once: each open run holds a read buffer.
pub(crate) const FANIN: usize = 16;

impl SortCfg {
    /// A sort of this session's statement: `sort_buffer_size` bytes.
    pub fn of(s: &crate::session::Session) -> SortCfg {
        let budget =
            s.session_var("sort_buffer_size").and_then(|v| v.to_i64()).map_or(2 << 20, |b| b.max(1024));
        SortCfg {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            dir: s.inner.tmp_dir.clone(),
            killed: s.killed.clone(),
            fanin: FANIN,
            proc: Some(s.proc.clone()),
        }
    }

    /// `of`, with the budget of MariaDB's in-memory temporary tables
    /// (`tmp_memory_table_size`, 16 MiB by default, at least 64 KiB): a
    /// GROUP BY's groups, an INSERT ... SELECT's held source.
    pub fn of_tmp_table(s: &crate::session::Session) -> SortCfg {
        let budget = s
            .sysvar("tmp_memory_table_size")
            .ok()
            .and_then(|v| v.to_i64())
            .map_or(16 << 20, |b| b.max(1 << 16) as usize);
        SortCfg { budget, ..SortCfg::of(s) }
    }

    fn check_killed(&self) -> SqlResult<()> {
        if self.killed.swap(false, AtomicOrdering::SeqCst) {
            return Err(SqlError::interrupted());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------
// Sort keys.

/// Appends the order-preserving encoding of one ORDER BY value: for
/// values of one ORDER BY expression, bytewise order of the encodings is
/// `query::sort_cmp`'s order (NULL first, then by `kind`), reversed whole
/// when `desc` (NULLs last, as MySQL's DESC), and no encoding is a prefix
/// of a different one, so parts concatenate and anything may follow.
/// Strings are the collation's sort key; temporals their ordinal as the
/// kind reads them; numbers of every type one decimal form (exact for
/// integers and DECIMAL; a double by its shortest round-trip digits, which
/// keep the doubles' order). Where `sort_cmp` is not a total order the
/// encoding picks one: under a temporal kind a string that is no date
/// sorts after every date (by its bytes); under a numeric kind a double
/// and an integer or DECIMAL compare by their exact digits, not through a
/// double.
pub(crate) fn put_key(v: &Value, kind: CmpKind, desc: bool, out: &mut Vec<u8>) {
    let start = out.len();
    if v.is_null() {
        out.push(0);
    } else {
        out.push(1);
        match kind {
            CmpKind::Str(c) => match v {
                Value::Str(b) => crate::collation::sort_key(c, b, out),
                _ => crate::collation::sort_key(c, &v.to_bytes().unwrap_or_default(), out),
            },
            CmpKind::Temporal(k) => match crate::expr::to_temporal(v, k) {
                Some(t) => {
                    out.push(1);
                    out.extend_from_slice(&((t.ordinal() as u128) ^ (1 << 127)).to_be_bytes());
                }
                None => {
                    out.push(2);
                    crate::collation::sort_key(Collation::Binary, &v.to_bytes().unwrap_or_default(), out);
                }
            },
            CmpKind::Numeric => put_number(v, out),
        }
    }
    if desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// A number as sign, then (for a non-zero one) its decimal exponent and
/// digits: 1 negative, 2 zero, 3 positive; the exponent `e` of
/// `0.d1d2... * 10^e` as a biased big-endian i64, each digit as 1..=10,
/// and 0 at the end (so 0.12 < 0.123); a negative number's exponent and
/// digits are complemented.
fn put_number(v: &Value, out: &mut Vec<u8>) {
    use std::fmt::Write as _;
    let mut buf = Digits { b: [0; 64], len: 0 };
    let (neg, int_len) = match v {
        Value::Int(i) => {
            let _ = write!(buf, "{}", i.unsigned_abs());
            (*i < 0, buf.len as i64)
        }
        Value::UInt(u) => {
            let _ = write!(buf, "{u}");
            (false, buf.len as i64)
        }
        Value::Double(d) => double_digits(*d, &mut buf),
        Value::Str(_) => double_digits(v.to_f64().unwrap_or(0.0), &mut buf),
        Value::Decimal(d) => return put_decimal(d, out),
        other => match other.to_decimal() {
            Some(d) => return put_decimal(&d, out),
            None => (false, 0),
        },
    };
    put_digits(neg, &buf.b[..buf.len], int_len, out);
}

/// Digits written without allocating (a u64 has 20, a double's `{:e}` 24).
struct Digits {
    b: [u8; 64],
    len: usize,
}

impl std::fmt::Write for Digits {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.b.get_mut(self.len..end).ok_or(std::fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A double's shortest round-trip digits (which keep the doubles' order)
/// into `buf`; (negative, digits before the point).
fn double_digits(d: f64, buf: &mut Digits) -> (bool, i64) {
    use std::fmt::Write as _;
    if d == 0.0 || !d.is_finite() {
        // MySQL has no infinities or NaN; whatever makes one sorts as 0.
        return (false, 0);
    }
    // d1.d2d3...e<x>
    let _ = write!(buf, "{:e}", d.abs());
    let text = &buf.b[..buf.len];
    let e = text.iter().position(|&c| c == b'e').unwrap_or(text.len());
    let exp: i64 =
        std::str::from_utf8(&text[(e + 1).min(text.len())..]).ok().and_then(|x| x.parse().ok()).unwrap_or(0);
    let mut n = 0;
    for i in 0..e {
        if buf.b[i].is_ascii_digit() {
            buf.b[n] = buf.b[i];
            n += 1;
        }
    }
    buf.len = n;
    (d < 0.0, exp + 1)
}

fn put_decimal(d: &bigdecimal::BigDecimal, out: &mut Vec<u8>) {
    let (bi, scale) = d.as_bigint_and_exponent();
    let s = bi.magnitude().to_string();
    put_digits(bi.sign() == bigdecimal::num_bigint::Sign::Minus, s.as_bytes(), s.len() as i64 - scale, out);
}

/// `all`: ASCII digits, `int_len` of them before the decimal point.
fn put_digits(neg: bool, all: &[u8], int_len: i64, out: &mut Vec<u8>) {
    debug_assert!(all.iter().all(u8::is_ascii_digit));
    let lead = all.iter().take_while(|&&c| c == b'0').count();
    let rest = &all[lead..];
    let trail = rest.iter().rev().take_while(|&&c| c == b'0').count();
    let digits = &rest[..rest.len() - trail];
    if digits.is_empty() {
        out.push(2);
        return;
    }
    out.push(if neg { 1 } else { 3 });
    let body = out.len();
    let exp = int_len - lead as i64;
    out.extend_from_slice(&((exp as u64) ^ (1 << 63)).to_be_bytes());
    out.extend(digits.iter().map(|d| d - b'0' + 1));
    out.push(0);
    if neg {
        for b in &mut out[body..] {
            *b = !*b;
        }
    }
}

// ---------------------------------------------------------------------
// Values in run files: a tag byte, then the payload.

pub(crate) fn put_u64(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

pub(crate) fn put_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::UInt(u) => {
            out.push(2);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Value::Double(d) => {
            out.push(3);
            out.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        Value::Decimal(d) => {
            // Digits and scale, so the scale survives (0.000 stays 0.000).
            out.push(4);
            let (digits, scale) = d.as_bigint_and_exponent();
            put_bytes(out, digits.to_string().as_bytes());
            put_u64(out, scale as u64);
        }
        Value::Str(s) => {
            out.push(5);
            put_bytes(out, s);
        }
        Value::Temporal(t) => {
            out.push(6);
            out.push(match t.kind {
                TemporalKind::Date => 0,
                TemporalKind::Time => 1,
                TemporalKind::DateTime => 2,
            });
            out.push(t.neg as u8);
            out.extend_from_slice(&t.year.to_le_bytes());
            out.extend_from_slice(&[t.month, t.day]);
            out.extend_from_slice(&t.hour.to_le_bytes());
            out.extend_from_slice(&[t.minute, t.second]);
            out.extend_from_slice(&t.micro.to_le_bytes());
            out.push(t.fsp);
        }
    }
}

fn put_row(row: &[Value], out: &mut Vec<u8>) {
    put_u64(out, row.len() as u64);
    for v in row {
        put_value(v, out);
    }
}

fn damaged() -> SqlError {
    SqlError::internal("a sort's temporary file is damaged")
}

/// Reads what `put_*` wrote; a short or malformed record is an error,
/// never a panic.
pub(crate) struct Cursor<'b> {
    pub b: &'b [u8],
}

impl<'b> Cursor<'b> {
    pub fn take(&mut self, n: usize) -> SqlResult<&'b [u8]> {
        if self.b.len() < n {
            return Err(damaged());
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(a)
    }
    pub fn u8(&mut self) -> SqlResult<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u64(&mut self) -> SqlResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    pub fn bytes(&mut self) -> SqlResult<Vec<u8>> {
        let n = usize::try_from(self.u64()?).map_err(|_| damaged())?;
        Ok(self.take(n)?.to_vec())
    }
    pub fn value(&mut self) -> SqlResult<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Int(self.u64()? as i64),
            2 => Value::UInt(self.u64()?),
            3 => Value::Double(f64::from_bits(self.u64()?)),
            4 => {
                let s = self.bytes()?;
                let digits: bigdecimal::num_bigint::BigInt =
                    std::str::from_utf8(&s).ok().and_then(|s| s.parse().ok()).ok_or_else(damaged)?;
                Value::Decimal(bigdecimal::BigDecimal::new(digits, self.u64()? as i64))
            }
            5 => Value::Str(self.bytes()?),
            6 => {
                let kind = match self.u8()? {
                    0 => TemporalKind::Date,
                    1 => TemporalKind::Time,
                    _ => TemporalKind::DateTime,
                };
                let neg = self.u8()? != 0;
                let year = u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"));
                let (month, day) = (self.u8()?, self.u8()?);
                let hour = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                let (minute, second) = (self.u8()?, self.u8()?);
                let micro = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                let fsp = self.u8()?;
                Value::Temporal(Temporal { kind, neg, year, month, day, hour, minute, second, micro, fsp })
            }
            _ => return Err(damaged()),
        })
    }
    pub fn row(&mut self) -> SqlResult<Vec<Value>> {
        let n = self.u64()? as usize;
        let mut row = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            row.push(self.value()?);
        }
        Ok(row)
    }
}

/// Memory a value takes, roughly, for the budget.
pub(crate) fn value_size(v: &Value) -> usize {
    16 + match v {
        Value::Str(s) => s.len(),
        Value::Decimal(_) => 32,
        _ => 0,
    }
}

fn entry_size(key: &[u8], row: &[Value]) -> usize {
    64 + key.len() + row.iter().map(value_size).sum::<usize>()
}

// ---------------------------------------------------------------------
// Run files: records of (key, payload) in key order.

/// MariaDB's errors for a temporary file: 1004 ER_CANT_CREATE_FILE,
/// 1026 ER_ERROR_ON_WRITE, 1024 ER_ERROR_ON_READ, with the OS's errno and
/// its text as `%M` prints them (`errno: 28 "No space left on device"`).
fn file_err(code: u16, what: &str, path: &std::path::Path, e: &std::io::Error) -> SqlError {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    SqlError::new(
        code,
        "HY000",
        format!("{what} file '{}' (errno: {} \"{text}\")", path.display(), e.raw_os_error().unwrap_or(0)),
    )
}

/// A run file; deleted when dropped.
pub(crate) struct Run {
    path: PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes one run: `put` records in key order, then `finish`.
pub(crate) struct RunWriter {
    run: Run,
    w: BufWriter<std::fs::File>,
}

impl RunWriter {
    pub fn new(cfg: &SortCfg) -> SqlResult<RunWriter> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let n = SEQ.fetch_add(1, AtomicOrdering::Relaxed);
        let path = cfg.dir.join(format!("sort-{}-{n}.run", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&cfg.dir) {
            return Err(file_err(1004, "Can't create", &path, &e));
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| file_err(1004, "Can't create", &path, &e))?;
        // From here the file is the Run's: deleted on any error below.
        Ok(RunWriter { run: Run { path }, w: BufWriter::with_capacity(64 << 10, f) })
    }

    /// Record: key length, payload length (u64 LE each), key, payload.
    pub fn put(&mut self, key: &[u8], payload: &[u8]) -> SqlResult<()> {
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(&(key.len() as u64).to_le_bytes());
        head[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        let r = self
            .w
            .write_all(&head)
            .and_then(|_| self.w.write_all(key))
            .and_then(|_| self.w.write_all(payload));
        r.map_err(|e| file_err(1026, "Error writing", &self.run.path, &e))
    }

    pub fn finish(mut self) -> SqlResult<Run> {
        if let Err(e) = self.w.flush() {
            return Err(file_err(1026, "Error writing", &self.run.path, &e));
        }
        Ok(self.run)
    }
}

struct RunReader {
    r: BufReader<std::fs::File>,
    run: Run,
}

impl RunReader {
    fn open(run: Run) -> SqlResult<RunReader> {
        let f = std::fs::File::open(&run.path).map_err(|e| file_err(1024, "Error reading", &run.path, &e))?;
        Ok(RunReader { r: BufReader::with_capacity(64 << 10, f), run })
    }

    fn next(&mut self) -> SqlResult<Option<(Vec<u8>, Vec<u8>)>> {
        let mut head = [0u8; 16];
        match self.r.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(file_err(1024, "Error reading", &self.run.path, &e)),
        }
        let klen = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let plen = u64::from_le_bytes(head[8..].try_into().expect("8 bytes"));
        // Read through `take`: a damaged length cannot allocate more than
        // the file holds.
        let mut read = |n: u64| -> SqlResult<Vec<u8>> {
            let mut b = Vec::new();
            (&mut self.r)
                .take(n)
                .read_to_end(&mut b)
                .map_err(|e| file_err(1024, "Error reading", &self.run.path, &e))?;
            if b.len() as u64 != n {
                return Err(damaged());
            }
            Ok(b)
        };
        let key = read(klen)?;
        let payload = read(plen)?;
        Ok(Some((key, payload)))
    }
}

/// The k-way merge of runs: records in key order, a tie going to the
/// earlier run.
pub(crate) struct Merge {
    readers: Vec<RunReader>,
    heads: Vec<Option<Vec<u8>>>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    cfg: SortCfg,
    n: u64,
}

impl Merge {
    fn open(runs: Vec<Run>, cfg: &SortCfg) -> SqlResult<Merge> {
        let mut m =
            Merge { readers: Vec::new(), heads: Vec::new(), heap: BinaryHeap::new(), cfg: cfg.clone(), n: 0 };
        // Sort_merge_passes counts every merge of runs, as MariaDB's.
        if let Some(p) = &cfg.proc {
            p.lock().stats[crate::sysvars::Stat::SortMergePasses as usize] += 1;
        }
        #[cfg(test)]
        tests::PASSES.with(|p| p.set(p.get() + 1));
        for run in runs {
            m.readers.push(RunReader::open(run)?);
        }
        for i in 0..m.readers.len() {
            m.heads.push(None);
            m.refill(i)?;
        }
        Ok(m)
    }

    fn refill(&mut self, i: usize) -> SqlResult<()> {
        if let Some((k, p)) = self.readers[i].next()? {
            self.heap.push(Reverse((k, i)));
            self.heads[i] = Some(p);
        }
        Ok(())
    }

    pub fn next(&mut self) -> SqlResult<Option<(Vec<u8>, Vec<u8>)>> {
        self.n += 1;
        if self.n.is_multiple_of(1024) {
            self.cfg.check_killed()?;
        }
        let Some(Reverse((key, i))) = self.heap.pop() else { return Ok(None) };
        let payload = self.heads[i].take().ok_or_else(|| SqlError::internal("a merged run lost its head"))?;
        self.refill(i)?;
        Ok(Some((key, payload)))
    }
}

/// Merges `runs` (in input order) into one stream: while there are more
/// than `cfg.fanin`, consecutive groups of them are merged into longer
/// runs (a pass), which keeps ties in input order.
pub(crate) fn merge_runs(mut runs: Vec<Run>, cfg: &SortCfg) -> SqlResult<Merge> {
    let fanin = cfg.fanin.max(2);
    while runs.len() > fanin {
        let mut next = Vec::with_capacity(runs.len().div_ceil(fanin));
        let mut rest = runs.into_iter();
        loop {
            let mut chunk: Vec<Run> = rest.by_ref().take(fanin).collect();
            match chunk.len() {
                0 => break,
                1 => next.push(chunk.pop().expect("one run")),
                _ => {
                    let mut m = Merge::open(chunk, cfg)?;
                    let mut w = RunWriter::new(cfg)?;
                    while let Some((k, p)) = m.next()? {
                        w.put(&k, &p)?;
                    }
                    next.push(w.finish()?);
                }
            }
        }
        runs = next;
    }
    Merge::open(runs, cfg)
}

// ---------------------------------------------------------------------
// The sort.

struct HeapEntry {
    key: Vec<u8>,
    seq: u64,
    row: Vec<Value>,
}

impl PartialEq for HeapEntry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for HeapEntry {}
impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapEntry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key).then(self.seq.cmp(&o.seq))
    }
}

/// Sorts rows by their keys; see the module documentation.
pub(crate) struct Sorter {
    cfg: SortCfg,
    /// Only the first `limit` rows are wanted.
    limit: Option<usize>,
    /// The first `limit` rows so far, largest on top (while they fit).
    heap: Option<BinaryHeap<HeapEntry>>,
    seq: u64,
    buf: Vec<(Vec<u8>, Vec<Value>)>,
    mem: usize,
    runs: Vec<Run>,
}

impl Sorter {
    pub fn new(cfg: SortCfg, limit: Option<u64>) -> Sorter {
        let limit = limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        Sorter {
            cfg,
            limit,
            heap: limit.map(|_| BinaryHeap::new()),
            seq: 0,
            buf: Vec::new(),
            mem: 0,
            runs: Vec::new(),
        }
    }

    /// Runs written so far.
    #[cfg(test)]
    fn spilled(&self) -> usize {
        self.runs.len()
    }

    pub fn add(&mut self, key: Vec<u8>, row: Vec<Value>) -> SqlResult<()> {
        self.seq += 1;
        if self.seq.is_multiple_of(1024) {
            self.cfg.check_killed()?;
        }
        let size = entry_size(&key, &row);
        if let Some(heap) = &mut self.heap {
            let limit = self.limit.unwrap_or(usize::MAX);
            let e = HeapEntry { key, seq: self.seq, row };
            if heap.len() < limit {
                heap.push(e);
                self.mem += size;
            } else if heap.peek().is_some_and(|top| e < *top) {
                let out = heap.pop().expect("peeked");
                self.mem -= entry_size(&out.key, &out.row);
                heap.push(e);
                self.mem += size;
            }
            if self.mem > self.cfg.budget {
                // The first N rows do not fit: sort as without a LIMIT.
                // In (key, arrival) order, so later ties stay after them.
                let heap = self.heap.take().expect("in heap mode");
                self.buf = heap.into_sorted_vec().into_iter().map(|e| (e.key, e.row)).collect();
                self.spill()?;
            }
            return Ok(());
        }
        self.buf.push((key, row));
        self.mem += size;
        if self.mem > self.cfg.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the rows in memory to a new run, in key order.
    fn spill(&mut self) -> SqlResult<()> {
        // Stable: equal keys keep their arrival order.
        self.buf.sort_by(|a, b| a.0.cmp(&b.0));
        let mut w = RunWriter::new(&self.cfg)?;
        let mut payload = Vec::new();
        for (i, (k, row)) in std::mem::take(&mut self.buf).into_iter().enumerate() {
            if i % 1024 == 1023 {
                self.cfg.check_killed()?;
            }
            payload.clear();
            put_row(&row, &mut payload);
            w.put(&k, &payload)?;
        }
        self.runs.push(w.finish()?);
        self.mem = 0;
        Ok(())
    }

    /// The rows in key order (the first `limit` of them).
    pub fn finish(mut self) -> SqlResult<Sorted> {
        let limit = self.limit.unwrap_or(usize::MAX);
        if let Some(heap) = self.heap.take() {
            let v: Vec<_> = heap.into_sorted_vec().into_iter().map(|e| (e.key, e.row)).collect();
            return Ok(Sorted { mem: v.into_iter(), merge: None, left: limit });
        }
        if self.runs.is_empty() {
            let mut v = std::mem::take(&mut self.buf);
            v.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(Sorted { mem: v.into_iter(), merge: None, left: limit });
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        let merge = merge_runs(std::mem::take(&mut self.runs), &self.cfg)?;
        Ok(Sorted { mem: Vec::new().into_iter(), merge: Some(merge), left: limit })
    }
}

/// A sort's output, read in order.
pub(crate) struct Sorted {
    mem: std::vec::IntoIter<(Vec<u8>, Vec<Value>)>,
    merge: Option<Merge>,
    left: usize,
}

impl Sorted {
    pub fn next(&mut self) -> SqlResult<Option<(Vec<u8>, Vec<Value>)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        match &mut self.merge {
            None => Ok(self.mem.next()),
            Some(m) => match m.next()? {
                None => Ok(None),
                Some((k, p)) => Ok(Some((k, Cursor { b: &p }.row()?))),
            },
        }
    }
}

// ---------------------------------------------------------------------
// DISTINCT, ORDER BY, LIMIT over a query's output rows.

/// The last steps of a query: DISTINCT (the first of equal rows stays),
/// ORDER BY (stable), then OFFSET and LIMIT. Rows come in one at a time.
///
/// With `send` (`Output::sending`), rows go out through it rather than
/// being collected: as they come when nothing orders them or drops
/// duplicates, else from the sort (`finish_sent`). Nothing then holds the
/// whole result, which may be larger than memory (the sort spills).
pub(crate) struct Output<'a> {
    send: Option<&'a mut dyn FnMut(Vec<Value>) -> SqlResult<()>>,
    /// Rows the plain path skipped for OFFSET, and sent, when sending.
    skipped: u64,
    sent: u64,
    cfg: SortCfg,
    ordered: bool,
    /// DISTINCT: rows by their distinct key, each with its arrival number
    /// and order key (as the row's last two values).
    distinct: Option<Sorter>,
    sorter: Option<Sorter>,
    plain: Vec<Vec<Value>>,
    seq: u64,
    offset: u64,
    limit: Option<u64>,
}

impl<'a> Output<'a> {
    pub fn new(cfg: SortCfg, ordered: bool, distinct: bool, offset: u64, limit: Option<u64>) -> Output<'a> {
        let keep = limit.map(|l| l.saturating_add(offset));
        Output {
            send: None,
            skipped: 0,
            sent: 0,
            distinct: distinct.then(|| Sorter::new(cfg.clone(), None)),
            sorter: (ordered && !distinct).then(|| Sorter::new(cfg.clone(), keep)),
            cfg,
            ordered,
            plain: Vec::new(),
            seq: 0,
            offset,
            limit,
        }
    }

    /// One output row, its ORDER BY key (`put_key` of each ORDER BY value)
    /// and, under DISTINCT, its distinct key (equal for equal rows).
    pub fn add(&mut self, mut row: Vec<Value>, order_key: Vec<u8>, distinct_key: Vec<u8>) -> SqlResult<()> {
        if let Some(d) = &mut self.distinct {
            row.push(Value::UInt(self.seq));
            row.push(Value::Str(order_key));
            self.seq += 1;
            d.add(distinct_key, row)
        } else if let Some(s) = &mut self.sorter {
            s.add(order_key, row)
        } else if let Some(send) = self.send.as_mut() {
            if self.skipped < self.offset {
                self.skipped += 1;
                return Ok(());
            }
            if self.limit.is_some_and(|l| self.sent >= l) {
                return Ok(());
            }
            self.sent += 1;
            send(row)
        } else {
            self.plain.push(row);
            Ok(())
        }
    }

    /// Rows go out through `send`, in order, instead of being returned
    /// (`finish_sent`). Before the first row.
    pub fn sending(mut self, send: &'a mut dyn FnMut(Vec<Value>) -> SqlResult<()>) -> Self {
        debug_assert!(self.plain.is_empty() && self.seq == 0 && self.sent == 0);
        self.send = Some(send);
        self
    }

    /// The rows not sent yet (those a sort held), through `send`.
    pub fn finish_sent(mut self) -> SqlResult<()> {
        let send = self.send.take().expect("an output that sends");
        self.finish_each(send)
    }

    /// Every row, in order, collected.
    pub fn finish(self) -> SqlResult<Vec<Vec<Value>>> {
        debug_assert!(self.send.is_none(), "a sending output ends with finish_sent");
        let mut out = Vec::new();
        self.finish_each(&mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    fn finish_each(self, f: &mut dyn FnMut(Vec<Value>) -> SqlResult<()>) -> SqlResult<()> {
        let limit = usize::try_from(self.limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
        let offset = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let sorter = match (self.distinct, self.sorter) {
            (Some(d), _) => {
                // The first row of each distinct key, then sorted by
                // (order key, arrival), or by arrival without ORDER BY.
                let keep = self.limit.map(|l| l.saturating_add(self.offset));
                let mut next = Sorter::new(self.cfg.clone(), keep);
                let mut rows = d.finish()?;
                let mut last: Option<Vec<u8>> = None;
                while let Some((k, mut row)) = rows.next()? {
                    if last.as_ref() == Some(&k) {
                        continue;
                    }
                    let (Some(Value::Str(mut key)), Some(Value::UInt(seq))) = (row.pop(), row.pop()) else {
                        return Err(SqlError::internal("DISTINCT lost a row's order key"));
                    };
                    if !self.ordered {
                        key.clear();
                    }
                    key.extend_from_slice(&seq.to_be_bytes());
                    next.add(key, row)?;
                    last = Some(k);
                }
                next
            }
            (None, Some(s)) => s,
            (None, None) => {
                for r in self.plain.into_iter().skip(offset).take(limit) {
                    f(r)?;
                }
                return Ok(());
            }
        };
        let mut rows = sorter.finish()?;
        let (mut i, mut given) = (0usize, 0usize);
        while let Some((_, row)) = rows.next()? {
            if i >= offset {
                if given >= limit {
                    break;
                }
                given += 1;
                f(row)?;
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    thread_local! {
        /// Merge passes on this thread.
        pub static PASSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn cfg(dir: &std::path::Path, budget: usize, fanin: usize) -> SortCfg {
        SortCfg {
            budget,
            dir: dir.to_path_buf(),
            killed: Arc::new(AtomicBool::new(false)),
            fanin,
            proc: None,
        }
    }

    fn rows(n: usize, seed: u64) -> Vec<(Vec<u8>, Vec<Value>)> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                let k: u8 = rng.gen_range(0..50);
                let key = vec![k, rng.gen_range(0..3)];
                (key, vec![Value::Int(i as i64), Value::Str(vec![b'x'; rng.gen_range(0..40)])])
            })
            .collect()
    }

    /// The rows' first values (their input positions), in output order.
    fn sorted(cfg: SortCfg, input: &[(Vec<u8>, Vec<Value>)], limit: Option<u64>) -> (Vec<i64>, usize) {
        let mut s = Sorter::new(cfg, limit);
        for (k, r) in input {
            s.add(k.clone(), r.clone()).unwrap();
        }
        let runs = s.spilled();
        let mut it = s.finish().unwrap();
        let mut out = Vec::new();
        while let Some((_, r)) = it.next().unwrap() {
            out.push(r[0].to_i64().unwrap());
        }
        (out, runs)
    }

    #[test]
    fn spilled_sorts_in_passes_equal_the_stable_sort_and_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let input = rows(3000, 7);
        let mut want = input.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<i64> = want.into_iter().map(|(_, r)| r[0].to_i64().unwrap()).collect();
        let (mem, runs) = sorted(cfg(dir.path(), usize::MAX, 16), &input, None);
        assert_eq!((mem == want, runs), (true, 0));
        // A tiny budget and fan-in: dozens of runs, merged in several passes.
        PASSES.with(|p| p.set(0));
        let (spilled, runs) = sorted(cfg(dir.path(), 4096, 3), &input, None);
        assert!(runs > 27, "{runs} runs");
        let passes = PASSES.with(|p| p.get());
        assert!(passes >= 3, "{passes} passes");
        assert!(spilled == want);
        // LIMIT: the heap, and a heap whose rows outgrow the budget.
        let (top, runs) = sorted(cfg(dir.path(), usize::MAX, 3), &input, Some(10));
        assert_eq!((top[..] == want[..10], runs), (true, 0));
        let (top, runs) = sorted(cfg(dir.path(), 4096, 3), &input, Some(500));
        assert!(runs > 0 && top[..] == want[..500]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_kill_or_an_unwritable_folder_ends_the_sort_with_an_error_and_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let input = rows(5000, 3);
        let c = cfg(dir.path(), 4096, 2);
        let mut s = Sorter::new(c.clone(), None);
        let mut err = None;
        for (i, (k, r)) in input.iter().enumerate() {
            if i == 2000 {
                c.killed.store(true, AtomicOrdering::SeqCst);
            }
            if let Err(e) = s.add(k.clone(), r.clone()) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err.map(|e| e.code), Some(1317));
        drop(s);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Killed while merging: the merge stops between rows.
        let mut s = Sorter::new(c.clone(), None);
        for (k, r) in &input[..3000] {
            s.add(k.clone(), r.clone()).unwrap();
        }
        let mut out = s.finish().unwrap();
        c.killed.store(true, AtomicOrdering::SeqCst);
        let e = std::iter::from_fn(|| out.next().transpose()).find_map(|r| r.err()).expect("killed");
        assert_eq!(e.code, 1317);
        drop(out);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // The spill folder cannot be made (a file is in its way): 1004.
        let file = dir.path().join("blocked");
        std::fs::write(&file, b"").unwrap();
        let mut s = Sorter::new(cfg(&file.join("sql-tmp"), 4096, 2), None);
        let e = input.iter().find_map(|(k, r)| s.add(k.clone(), r.clone()).err()).expect("the spill fails");
        assert_eq!(e.code, 1004, "{}", e.message);
        // A full disk: /dev/full refuses every write (ENOSPC): 1026.
        if std::path::Path::new("/dev/full").exists() {
            let mut w = RunWriter {
                run: Run { path: dir.path().join("never-created") },
                w: BufWriter::new(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap()),
            };
            let e = w.put(b"k", &[0; 100_000]).and_then(|_| w.finish().map(drop)).expect_err("ENOSPC");
            assert_eq!(e.code, 1026);
            assert!(e.message.contains("(errno: 28 \"No space left on device\")"), "{}", e.message);
        }
    }

    #[test]
    fn keys_order_as_order_by_compares() {
        use crate::expr::CmpKind;
        let num = |v: Value| {
            let mut k = Vec::new();
            put_key(&v, CmpKind::Numeric, false, &mut k);
            k
        };
        let vals = [
            Value::Null,
            Value::Double(-1e300),
            Value::Int(i64::MIN),
            Value::Decimal("-12.5".parse().unwrap()),
            Value::Int(-12),
            Value::Double(-0.5),
            Value::Int(0),
            Value::Double(1e-300),
            Value::Decimal("0.0999".parse().unwrap()),
            Value::Double(0.1),
            Value::Decimal("0.123".parse().unwrap()),
            Value::Int(1),
            Value::Double(9.5),
            Value::Decimal("10.000".parse().unwrap()),
            Value::UInt(10000),
            Value::UInt(u64::MAX),
            Value::Double(1e300),
        ];
        for w in vals.windows(2) {
            assert!(num(w[0].clone()) < num(w[1].clone()), "{:?} < {:?}", w[0], w[1]);
        }
        assert_eq!(num(Value::Int(10)), num(Value::Decimal("10.000".parse().unwrap())));
        assert_eq!(num(Value::Double(-0.0)), num(Value::Int(0)));
        // DESC reverses the whole part, NULL included; parts stay prefix-free.
        let mut a = Vec::new();
        put_key(&Value::Null, CmpKind::Numeric, true, &mut a);
        let mut b = Vec::new();
        put_key(&Value::Int(5), CmpKind::Numeric, true, &mut b);
        let mut c = Vec::new();
        put_key(&Value::Int(50), CmpKind::Numeric, true, &mut c);
        assert!(c < b && b < a);
        let s = |t: &str| {
            let mut k = Vec::new();
            put_key(&Value::Str(t.into()), CmpKind::Str(Collation::Utf8mb4GeneralCi), false, &mut k);
            k
        };
        assert!(s("a") < s("B") && s("B") < s("c") && s("a") == s("A ") && s("") < s("a"));
    }

    /// Random pairs of values of one ORDER BY expression: the keys' byte
    /// order is `query::cmp_sort_keys`'s, ASC and DESC, for numbers of
    /// each kind, strings of several collations, and temporals.
    #[test]
    fn key_order_equals_the_in_memory_comparison() {
        use crate::expr::CmpKind;
        use crate::value::Temporal;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let make = |rng: &mut rand::rngs::SmallRng, which: u8| -> (Value, CmpKind) {
            if rng.gen_range(0..10) == 0 {
                return (Value::Null, CmpKind::Numeric);
            }
            match which {
                0 => {
                    (Value::Int(rng.gen_range(-300..300) * 10i64.pow(rng.gen_range(0..15))), CmpKind::Numeric)
                }
                1 => {
                    let d: bigdecimal::BigDecimal =
                        format!("{}.{:03}", rng.gen_range(-500..500), rng.gen_range(0..1000))
                            .parse()
                            .unwrap();
                    (Value::Decimal(d.with_scale(rng.gen_range(0..5))), CmpKind::Numeric)
                }
                2 => (
                    Value::Double(rng.gen_range(-1e6..1e6) / 10f64.powi(rng.gen_range(0..12))),
                    CmpKind::Numeric,
                ),
                3 => {
                    let t =
                        Temporal::date(rng.gen_range(1990..2030), rng.gen_range(1..13), rng.gen_range(1..29));
                    (Value::Temporal(t), CmpKind::Temporal(crate::value::TemporalKind::Date))
                }
                _ => {
                    let len = rng.gen_range(0..5);
                    let w: String =
                        (0..len).map(|_| ['a', 'A', 'b', ' ', 'é', 'E', 'z'][rng.gen_range(0..7)]).collect();
                    let c = [
                        Collation::Utf8mb4GeneralCi,
                        Collation::Utf8mb4Bin,
                        Collation::Binary,
                        Collation::Utf8mb4UnicodeCi,
                    ][which as usize - 4];
                    (Value::Str(w.into_bytes()), CmpKind::Str(c))
                }
            }
        };
        for _ in 0..20_000 {
            let which = rng.gen_range(0..8u8);
            let (a, ka) = make(&mut rng, which);
            let (b, kb) = make(&mut rng, which);
            // A NULL takes the kind of the other value.
            let kind = if a.is_null() { kb } else { ka };
            for desc in [false, true] {
                let want = crate::query::cmp_sort_keys(
                    std::slice::from_ref(&a),
                    std::slice::from_ref(&b),
                    &[(kind, desc)],
                );
                let (mut x, mut y) = (Vec::new(), Vec::new());
                put_key(&a, kind, desc, &mut x);
                put_key(&b, kind, desc, &mut y);
                assert_eq!(x.cmp(&y), want, "{a:?} vs {b:?} ({kind:?}, desc {desc})");
            }
        }
    }
}
