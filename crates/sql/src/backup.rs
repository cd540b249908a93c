//! `SET tokudb_backup_dir = '/path'`: a hot backup of the running database
//! from a session, as Percona's TokuDB backup plugin takes it.
//!
//! The statement blocks until the copy is finished (`Env::backup`: the
//! engine's files consistent at one moment, writers going on) and then
//! succeeds; the folder opens as a database folder (`fractaldb server
//! --datadir` on it) holding every transaction committed before that moment.
//! Besides the engine's files the copy takes every other regular file of the
//! data folder (the server's TLS and RSA keys), so the server started on it
//! has the same keys; accounts and privileges live in the engine and come
//! with it. Scratch (`sql-tmp/`) and the socket are not copied.
//!
//! As the plugin: the caller needs SUPER (1227 otherwise); the folder must
//! exist; `tokudb_backup_last_error` and `tokudb_backup_last_error_string`
//! are reset when the statement starts and, when the backup fails, hold an
//! errno and the reason, and the statement fails with 1231 (the plugin's
//! check function refusing the value). `tokudb_backup_throttle` bounds the
//! copy's bytes per second. PROCESSLIST's State shows "tokudb backup about
//! N% done: ...". KILL QUERY stops it (1317); the folder then holds an
//! unfinished copy the engine refuses to open.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::value::Value;

const ENOENT: i64 = 2;
const EINTR: i64 = 4;
const EIO: i64 = 5;
const EINVAL: i64 = 22;
const ENOTEMPTY: i64 = 39;

/// How the server lays out its data folder (`Database::set_backup_layout`):
/// the database folder is `root/subdir`, and `files` in `root` are the
/// server's own (its keys). A backup copies the same shape.
#[derive(Clone, Debug)]
pub(crate) struct BackupLayout {
    pub root: PathBuf,
    pub subdir: String,
    pub files: Vec<PathBuf>,
}

/// Why a backup failed: the errno `tokudb_backup_last_error` shows, and the
/// text of `tokudb_backup_last_error_string`.
struct Failed(i64, String);

impl Session {
    /// Runs the backup `SET tokudb_backup_dir = dir` asks for.
    pub(crate) fn set_backup_dir(&mut self, dir: &Value) -> SqlResult<()> {
        self.vars.insert("tokudb_backup_last_error".into(), Value::Int(0));
        self.vars.insert("tokudb_backup_last_error_string".into(), Value::str(""));
        self.check_global(&["SUPER"])?;
        let text = match dir {
            Value::Null => None,
            v => Some(v.render()),
        };
        let result = match &text {
            None => Err(Failed(EINVAL, "the backup folder is NULL".into())),
            Some(t) => self.backup_to(t),
        };
        match result {
            Ok(()) => {
                self.vars.insert("tokudb_backup_dir".into(), dir.clone());
                Ok(())
            }
            Err(Failed(errno, why)) => {
                self.vars.insert("tokudb_backup_last_error".into(), Value::Int(errno));
                self.vars.insert("tokudb_backup_last_error_string".into(), Value::str(why));
                if errno == EINTR {
                    return Err(SqlError::interrupted());
                }
                Err(SqlError::wrong_value_for_var("tokudb_backup_dir", text.as_deref().unwrap_or("NULL")))
            }
        }
    }

    fn backup_to(&mut self, dir: &str) -> Result<(), Failed> {
        let dest = std::fs::canonicalize(dir).map_err(|e| {
            Failed(
                e.raw_os_error().map_or(ENOENT, i64::from),
                format!("Could not get real path for {dir}: {e}"),
            )
        })?;
        if !dest.is_dir() {
            return Err(Failed(20, format!("{dir} is not a directory")));
        }
        // The database folder is `sql-tmp`'s parent (db.rs).
        let db_dir = self.inner.tmp_dir.parent().unwrap_or(Path::new(".")).to_path_buf();
        let layout = self.inner.backup_layout.lock().clone();
        let home = layout.as_ref().map_or(db_dir.clone(), |l| l.root.clone());
        let home =
            std::fs::canonicalize(&home).map_err(|e| Failed(EIO, format!("{}: {e}", home.display())))?;
        if dest.starts_with(&home) {
            return Err(Failed(EINVAL, format!("{dir} is inside the data folder {}", home.display())));
        }
        let not_empty = std::fs::read_dir(&dest)
            .map_err(|e| Failed(e.raw_os_error().map_or(EIO, i64::from), format!("{dir}: {e}")))?
            .next()
            .is_some();
        if not_empty {
            return Err(Failed(ENOTEMPTY, format!("the backup folder {dir} is not empty")));
        }
        let (engine_dest, extra) = match &layout {
            None => {
                let files =
                    other_files(&db_dir).map_err(|e| Failed(EIO, format!("{}: {e}", db_dir.display())))?;
                let extra: Vec<(PathBuf, PathBuf)> =
                    files.into_iter().filter_map(|f| Some((f.clone(), dest.join(f.file_name()?)))).collect();
                (dest.clone(), extra)
            }
            Some(l) => {
                let extra: Vec<(PathBuf, PathBuf)> = l
                    .files
                    .iter()
                    .filter(|f| f.is_file())
                    .filter_map(|f| Some((f.clone(), dest.join(f.file_name()?))))
                    .collect();
                (dest.join(&l.subdir), extra)
            }
        };
        let throttle = self
            .session_var("tokudb_backup_throttle")
            .and_then(|v| v.to_f64())
            .filter(|&t| t > 0.0 && t < u64::MAX as f64);
        let (progress, killed) = (self.progress.clone(), self.killed.clone());
        let start = Instant::now();
        let mut on_progress = |p: &fractaldb::BackupProgress| -> fractaldb::Result<()> {
            progress.backup(p.bytes_done, p.bytes_total);
            loop {
                if killed.load(Ordering::SeqCst) {
                    return Err(fractaldb::Error::InvalidArgument("the backup was interrupted".into()));
                }
                // Bytes per second: wait until the copy is back under it,
                // in short sleeps so KILL is seen.
                let Some(rate) = throttle else { return Ok(()) };
                let due = Duration::from_secs_f64(p.bytes_done as f64 / rate);
                let Some(wait) = due.checked_sub(start.elapsed()) else { return Ok(()) };
                std::thread::sleep(wait.min(Duration::from_millis(100)));
            }
        };
        match self.inner.env.backup(&engine_dest, &extra, &mut on_progress) {
            Ok(_) => Ok(()),
            Err(_) if self.killed.swap(false, Ordering::SeqCst) => {
                Err(Failed(EINTR, "the backup was interrupted".into()))
            }
            Err(e) => {
                let errno = match &e {
                    fractaldb::Error::Io { source, .. } => source.raw_os_error().map_or(EIO, i64::from),
                    fractaldb::Error::InvalidArgument(_) => EINVAL,
                    _ => EIO,
                };
                Err(Failed(errno, e.to_string()))
            }
        }
    }
}

/// The regular files of the data folder that are not the engine's: what the
/// server keeps there (its keys), copied with the backup.
fn other_files(data: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(data)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if entry.file_type()?.is_file() && !fractaldb::is_env_file(name) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}
