//! The one error type of the engine.
//!
//! User errors and environmental failures (bad input, missing dictionaries,
//! I/O failures, corrupt files) are values of [`Error`]; they never panic.
//! A violated internal invariant is a bug and panics (or trips a
//! `debug_assert!`), so that it is found rather than hidden.

use std::fmt;
use std::path::{Path, PathBuf};

/// A `Result` whose error is the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the engine, each case naming where.
#[derive(Debug)]
pub enum Error {
    /// An operating-system I/O call failed.
    Io { path: PathBuf, op: &'static str, source: std::io::Error },
    /// Bytes on disk are not what the engine wrote: a checksum mismatch, a
    /// bad magic number, a truncated block or an impossible field.
    /// `block` is the block number, or `None` for headers and other files.
    Corrupt { path: PathBuf, block: Option<u64>, reason: String },
    /// A file was written by a format version this build cannot read.
    UnsupportedVersion { path: PathBuf, found: u32, supported: u32 },
    /// No dictionary of that name exists in the environment.
    NoSuchDictionary(String),
    /// A dictionary of that name already exists.
    DictionaryExists(String),
    /// The caller passed something the engine cannot accept.
    InvalidArgument(String),
    /// An earlier failure (for example a write-back I/O error) left the
    /// environment unable to accept writes; reads may still work.
    ReadOnly(String),
    /// The environment folder is in use by another process.
    Locked(PathBuf),
    /// The disk holding the environment has less free space than the
    /// environment keeps in reserve (`EnvOptions::reserve_free_bytes`): writes
    /// are refused, nothing is damaged, and they are accepted again once
    /// space is freed.
    NoSpace { free: u64, reserve: u64 },
    /// A lock request waited `lock_timeout` for transaction `holder`. The
    /// request failed; the transaction may retry or abort.
    LockTimeout { holder: u64 },
    /// Waiting for the lock would have closed a cycle of transactions each
    /// waiting for the next (`cycle`); this transaction is the victim and
    /// should abort.
    Deadlock { cycle: Vec<u64> },
    /// The lock tree is at its memory limit (`EnvOptions::lock_memory_bytes`)
    /// even after merging each transaction's adjacent locks.
    LockMemoryFull { used: usize, limit: usize },
    /// At repeatable read: transaction `writer` committed a change to the key
    /// after this transaction's snapshot, so writing it would lose that
    /// change. The transaction should abort and retry.
    WriteConflict { dictionary: String, key: Vec<u8>, writer: u64 },
    /// A key, value or batch is larger than the engine accepts: `what` names
    /// it ("key", "value", ...), `len` is its size and `limit` the largest
    /// accepted, both in bytes. Nothing was written.
    TooLarge { what: &'static str, len: u64, limit: u64 },
    /// Code the caller registered (an update function or a comparator)
    /// panicked inside the engine; `callback` names it and `message` is the
    /// panic's message. The operation failed; see the call's documentation
    /// for what state the dictionary is left in.
    CallbackPanicked { callback: String, message: String },
}

impl Error {
    pub(crate) fn io(path: &Path, op: &'static str, source: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), op, source }
    }

    pub(crate) fn corrupt(path: &Path, block: Option<u64>, reason: impl Into<String>) -> Self {
        Error::Corrupt { path: path.to_path_buf(), block, reason: reason.into() }
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Error::InvalidArgument(reason.into())
    }

    /// True for errors that mean the data on disk is damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corrupt { .. } | Error::UnsupportedVersion { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, op, source } => {
                write!(f, "I/O error during {op} on {}: {source}", path.display())
            }
            Error::Corrupt { path, block: Some(b), reason } => {
                write!(f, "corrupt data in {} at block {b}: {reason}", path.display())
            }
            Error::Corrupt { path, block: None, reason } => {
                write!(f, "corrupt data in {}: {reason}", path.display())
            }
            Error::UnsupportedVersion { path, found, supported } => write!(
                f,
                "{} has format version {found}, this build reads version {supported}",
                path.display()
            ),
            Error::NoSuchDictionary(name) => write!(f, "no dictionary named {name:?}"),
            Error::DictionaryExists(name) => write!(f, "a dictionary named {name:?} already exists"),
            Error::InvalidArgument(reason) => write!(f, "invalid argument: {reason}"),
            Error::ReadOnly(reason) => {
                write!(f, "environment is read-only after an earlier failure: {reason}")
            }
            Error::Locked(path) => write!(f, "environment {} is in use by another process", path.display()),
            Error::NoSpace { free, reserve } => write!(
                f,
                "disk nearly full: {free} bytes free, writes need {reserve} in reserve; \
                 they resume once space is freed"
            ),
            Error::LockTimeout { holder } => {
                write!(
                    f,
                    "lock wait timeout: transaction {holder} held a conflicting lock past the lock timeout"
                )
            }
            Error::Deadlock { cycle } => {
                write!(
                    f,
                    "deadlock: transactions {cycle:?} each wait for the next; this one was chosen to abort"
                )
            }
            Error::LockMemoryFull { used, limit } => write!(
                f,
                "lock memory full: {used} bytes of locks against a limit of {limit} \
                 (EnvOptions::lock_memory_bytes); commit or abort transactions holding many locks"
            ),
            Error::WriteConflict { dictionary, key, writer } => write!(
                f,
                "write conflict in {dictionary:?} on key {key:02x?}: transaction {writer} committed it \
                 after this transaction's snapshot; abort and retry"
            ),
            Error::TooLarge { what, len, limit } => {
                write!(f, "{what} too large: {len} bytes, the limit is {limit} bytes")
            }
            Error::CallbackPanicked { callback, message } => {
                write!(f, "{callback} panicked: {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
