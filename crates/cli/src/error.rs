//! The command's error type: one readable message per failure.

use std::fmt;

/// A `Result` whose error is the command's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure of the `fractaldb` command, carried as the message the user will read.
///
/// Every error here ends the command with a message (never a retry), so the
/// error is plain text with its context folded in front, in the manner of
/// "opening sqlite in data/bench/sqlite/insert: disk I/O error".
#[derive(Debug)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Error { message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(e.to_string())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::new(format!("sqlite: {e}"))
    }
}

impl From<fractaldb::Error> for Error {
    fn from(e: fractaldb::Error) -> Self {
        Error::new(format!("fractaldb: {e}"))
    }
}

#[cfg(feature = "rocksdb")]
impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        Error::new(format!("rocksdb: {e}"))
    }
}

/// Puts a phrase saying what was being done in front of an error.
pub trait Context<T> {
    /// On error, prefix the message with `what()` and ": ".
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::new(format!("{}: {e}", what())))
    }
}

/// Returns early with an [`Error`] built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::new(format!($($arg)*)))
    };
}
