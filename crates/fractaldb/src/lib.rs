//! fractaldb: a transactional storage engine whose indexes are fractal trees.
//!
//! Layers, bottom up (see `docs/ARCHITECTURE.md`):
//! - `file`: block files: copy-on-write blocks through a translation table,
//!   alternating checksummed headers, codecs, O_DIRECT I/O, the I/O layer;
//! - `cache`: one byte-bounded node cache with eviction and write-back;
//! - `tree`: the Bε-tree: messages, buffers, basements, flushing, splits,
//!   merges, cursors, `check`;
//! - `log`: the write-ahead log (framed, checksummed records; group commit);
//!   `recovery`: the records the engine logs and the exactly-once replay rule;
//! - `env`: environments, the catalog of dictionaries, background threads,
//!   checkpoints and recovery at open.
//!
//! Every file operation goes through a [`Vfs`]: [`OsVfs`] in production,
//! [`SimVfs`] (in memory, crashes and faults on demand) in tests.
//!
//! ```no_run
//! use fractaldb::{DictOptions, Env, EnvOptions};
//! let env = Env::open("/tmp/mydb", EnvOptions::default())?;
//! let d = env.create_dictionary("events", DictOptions::default())?;
//! d.put(b"k1", b"v1")?;
//! assert_eq!(d.get(b"k1")?, Some(b"v1".to_vec()));
//! let mut c = d.cursor();
//! c.first()?;
//! // key() and value() are None once the cursor has moved past the end.
//! while let (Some(k), Some(v)) = (c.key(), c.value()) {
//!     println!("{k:?} => {v:?}");
//!     c.next()?;
//! }
//! env.close()?;
//! # Ok::<(), fractaldb::Error>(())
//! ```

mod cache;
mod catalog;
mod encoding;
mod env;
mod error;
mod file;
mod limits;
mod log;
mod tree;
mod txn;
mod wait;

pub use cache::CacheStats;
pub use env::{
    is_env_file, BackupProgress, BackupReport, CheckpointTiming, DictOptions, Dictionary, Env, EnvOptions,
    EnvStats, LiveTxn, LoadStats, Loader, LockInfo, LockWait, Notes, PreparedTxn, Range, RecoveryStats,
    WriteBatch, BACKUP_INCOMPLETE_FILE,
};
pub use error::{Error, Result};
pub use file::sim::{SimFileInfo, SimStats, SimVfs};
pub use file::{Codec, OpenMode, OsVfs, SpaceStats, Vfs, VfsFile};
pub use limits::{
    BATCH_BYTES_PER_CHANGE, MAX_BATCH_BYTES, MAX_FANOUT, MAX_KEY_BYTES, MAX_NODE_BYTES, MAX_VALUE_BYTES,
    MIN_BASEMENT_BYTES, MIN_FANOUT, MIN_NODE_BYTES,
};
pub use log::record::MAX_XID_BYTES;
pub use log::LogStats;
pub use tree::check::CheckReport;
pub use tree::cursor::Cursor;
pub use tree::estimate::RangeEstimate;
pub use tree::message::UpdateFn;
pub use tree::Comparator;
pub use txn::counts::COUNTERS;
pub use txn::locktree::{LockEnd, LockStats};
pub use txn::{Isolation, Savepoint, Txn, TxnOptions};
pub use wait::{
    blocking, interrupt_requested, set_thread_interrupt, set_thread_wait_hook, Blocking, WaitHook,
    INTERRUPT_POLL,
};
