//! A database folder: the engine environment and the SQL catalog in it.

use std::path::Path;

use crate::error::SqlResult;
use crate::session::Session;

/// Settings of a database folder.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// The engine's node cache.
    pub cache_size_bytes: usize,
    /// Wait for the log fsync at each commit (`tokudb_commit_sync`).
    pub commit_sync: bool,
    /// O_DIRECT for data and log files where the file system allows it.
    pub direct_io: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions { cache_size_bytes: 64 << 20, commit_sync: true, direct_io: true }
    }
}

/// An open database folder. Sessions share it.
pub struct Database {}

impl Database {
    pub fn open(dir: impl AsRef<Path>, opts: DbOptions) -> SqlResult<Database> {
        let _ = (dir.as_ref(), opts);
        todo!()
    }

    pub fn session(&self) -> Session {
        todo!()
    }

    /// Closes the engine: a final checkpoint, files closed.
    pub fn close(self) -> SqlResult<()> {
        todo!()
    }
}
