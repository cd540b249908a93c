//! The catalog: which dictionaries an environment holds and in which files.
//!
//! One small file, `catalog`, rewritten whole on every create, drop and
//! rename: written to `catalog.tmp`, fsynced, renamed over `catalog`, and
//! the folder fsynced, so a crash leaves either the old or the new catalog.
//!
//! ```text
//! magic "FDBCATL\0" | version u32 (2) | next_file_id u64 | count u32 |
//! count × (name: varint len + UTF-8 | file_id u64) |
//! dropped u32 | dropped × file_id u64 |
//! crc32c u32 of all before
//! ```
//! Version 1 (still read) ends after the names: no dropped list.
//!
//! Dictionary `file_id` lives in the file `d<file_id>.fdb`. Ids are handed
//! out from `next_file_id` up and never reused: every id named, dropped or
//! on disk is below `next_file_id`, except a file a create made before its
//! catalog write, which a crash cut short (nothing in it was acknowledged).
//! `dropped` lists ids a drop removed from the catalog whose file may still
//! exist (the drop writes the catalog before it removes the file). So the
//! sweep at open (`env/recover.rs`, `remove_orphans`) has a positive reason for
//! every file it deletes: a dropped id, or an id at or above
//! `next_file_id`. A `d<id>.fdb` with neither reason is left in place.
//!
//! The catalog is the environment's root: a folder whose catalog is
//! missing or unreadable while it holds data or log files does not open
//! (`Catalog::open`); only a folder with neither is a new environment,
//! which gets its catalog at its first open.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::encoding::{put_bytes, Reader};
use crate::error::{Error, Result};
use crate::file::{OpenMode, Vfs};

const MAGIC: &[u8; 8] = b"FDBCATL\0";
/// The version written; version 1 (no dropped list) is still read.
const VERSION: u32 = 2;

/// Names to file ids, and the next id to hand out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Catalog {
    pub dicts: BTreeMap<String, u64>,
    pub next_file_id: u64,
    /// Ids of dropped dictionaries whose files may still exist: the sweep
    /// at open deletes them. An id leaves the list once its file's removal
    /// is durable (the folder synced after it).
    pub dropped: BTreeSet<u64>,
}

pub(crate) fn dict_file(dir: &Path, file_id: u64) -> PathBuf {
    dir.join(format!("d{file_id}.fdb"))
}

/// The file id of a dictionary file's name (`d<id>.fdb`).
pub(crate) fn parse_dict_file(name: &str) -> Option<u64> {
    name.strip_prefix('d')?.strip_suffix(".fdb")?.parse().ok()
}

impl Catalog {
    /// The catalog of a new environment: no dictionaries.
    pub(crate) fn new() -> Catalog {
        Catalog { dicts: BTreeMap::new(), next_file_id: 1, dropped: BTreeSet::new() }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.next_file_id.to_le_bytes());
        out.extend_from_slice(&(self.dicts.len() as u32).to_le_bytes());
        for (name, id) in &self.dicts {
            put_bytes(&mut out, name.as_bytes());
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(&(self.dropped.len() as u32).to_le_bytes());
        for id in &self.dropped {
            out.extend_from_slice(&id.to_le_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(path: &Path, bytes: &[u8]) -> Result<Catalog> {
        let bad = |r: String| Error::corrupt(path, None, r);
        if bytes.len() < 28 || &bytes[..8] != MAGIC {
            return Err(bad("not a fractaldb catalog".into()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(bad("catalog checksum mismatch".into()));
        }
        let mut r = Reader::new(&body[8..]);
        let version = r.u32().map_err(bad)?;
        if !(1..=VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion { path: path.into(), found: version, supported: VERSION });
        }
        let next_file_id = r.u64().map_err(bad)?;
        let n = r.u32().map_err(bad)?;
        let mut dicts = BTreeMap::new();
        for _ in 0..n {
            let name =
                std::str::from_utf8(r.bytes().map_err(bad)?).map_err(|_| bad("name is not UTF-8".into()))?;
            let id = r.u64().map_err(bad)?;
            if id >= next_file_id {
                return Err(bad(format!("{name:?} has file id {id}, not below next_file_id {next_file_id}")));
            }
            dicts.insert(name.to_string(), id);
        }
        let mut dropped = BTreeSet::new();
        if version >= 2 {
            for _ in 0..r.u32().map_err(bad)? {
                let id = r.u64().map_err(bad)?;
                if id >= next_file_id || dicts.values().any(|&d| d == id) {
                    return Err(bad(format!("dropped file id {id} is in use or not below next_file_id")));
                }
                dropped.insert(id);
            }
        }
        if !r.is_empty() {
            return Err(bad("bytes after the catalog's last field".into()));
        }
        Ok(Catalog { dicts, next_file_id, dropped })
    }

    /// Reads the catalog of `dir`; `None` if there is none.
    pub(crate) fn load(vfs: &dyn Vfs, dir: &Path) -> Result<Option<Catalog>> {
        let path = dir.join("catalog");
        match vfs.read_file(&path)? {
            Some(bytes) => Catalog::decode(&path, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The catalog of the environment in `dir`, at open. A folder with no
    /// catalog is a new environment only if it holds no data file and no
    /// log file: it then gets an empty catalog, durably, before anything
    /// else is written. Otherwise the catalog was lost, and opening with an
    /// empty one would sweep away every dictionary file: an error naming
    /// the catalog file. (A damaged catalog is an error from `load`.)
    pub(crate) fn open(vfs: &dyn Vfs, dir: &Path) -> Result<Catalog> {
        if let Some(c) = Catalog::load(vfs, dir)? {
            return Ok(c);
        }
        let mut found: Vec<String> = vfs
            .list(dir)?
            .into_iter()
            .filter(|n| parse_dict_file(n).is_some() || crate::log::parse_file_name(n).is_some())
            .collect();
        if !found.is_empty() {
            found.sort();
            let more = if found.len() > 4 { format!(" and {} more", found.len() - 4) } else { String::new() };
            found.truncate(4);
            return Err(Error::corrupt(
                &dir.join("catalog"),
                None,
                format!(
                    "the catalog is missing but the folder holds {}{more}: refusing to open \
                     (an empty catalog would lose every dictionary)",
                    found.join(", ")
                ),
            ));
        }
        let c = Catalog::new();
        c.store(vfs, dir)?;
        Ok(c)
    }

    /// Durably replaces the catalog of `dir`.
    pub(crate) fn store(&self, vfs: &dyn Vfs, dir: &Path) -> Result<()> {
        // What `decode` checks: a catalog it would refuse is never written.
        debug_assert!(
            self.dicts.values().chain(&self.dropped).all(|&id| id < self.next_file_id)
                && self.dicts.values().all(|id| !self.dropped.contains(id)),
            "file ids below next_file_id, none both named and dropped: {self:?}"
        );
        let tmp = dir.join("catalog.tmp");
        let path = dir.join("catalog");
        let bytes = self.encode();
        let f = vfs.open(&tmp, OpenMode::CreateOrOpen, false)?;
        f.set_len(0)?;
        f.write_at(0, &bytes)?;
        f.sync()?;
        drop(f);
        vfs.rename(&tmp, &path)?;
        vfs.sync_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::OsVfs;
    use std::fs;

    #[test]
    fn catalog_round_trips_and_detects_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Catalog::load(&OsVfs, dir.path()).unwrap(), None);
        let mut c = Catalog { next_file_id: 7, ..Catalog::new() };
        c.dicts.insert("a".into(), 3);
        c.dicts.insert("ünïcode".into(), 5);
        c.dropped.insert(4);
        c.store(&OsVfs, dir.path()).unwrap();
        assert_eq!(Catalog::load(&OsVfs, dir.path()).unwrap(), Some(c));
        let path = dir.path().join("catalog");
        let mut bytes = fs::read(&path).unwrap();
        bytes[20] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(Catalog::load(&OsVfs, dir.path()).unwrap_err().is_corruption());
    }

    /// Version 1, written by earlier builds: no dropped list.
    #[test]
    fn version_1_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut v1 = MAGIC.to_vec();
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&3u64.to_le_bytes());
        v1.extend_from_slice(&1u32.to_le_bytes());
        put_bytes(&mut v1, b"a");
        v1.extend_from_slice(&2u64.to_le_bytes());
        let crc = crc32c::crc32c(&v1);
        v1.extend_from_slice(&crc.to_le_bytes());
        fs::write(dir.path().join("catalog"), &v1).unwrap();
        let c = Catalog::load(&OsVfs, dir.path()).unwrap().unwrap();
        assert_eq!(c.dicts, BTreeMap::from([("a".to_string(), 2)]));
        assert_eq!((c.next_file_id, c.dropped.len()), (3, 0));
    }

    /// Ids at or above `next_file_id` in the catalog would let the sweep
    /// delete a live file: such a catalog is corrupt. (`store` refuses to
    /// write one in debug builds, so the bytes are written here directly.)
    #[test]
    fn ids_must_be_below_next_file_id() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog { next_file_id: 3, ..Catalog::new() };
        c.dicts.insert("a".into(), 3);
        fs::write(dir.path().join("catalog"), c.encode()).unwrap();
        assert!(Catalog::load(&OsVfs, dir.path()).unwrap_err().is_corruption());
        let mut c = Catalog { next_file_id: 3, ..Catalog::new() };
        c.dicts.insert("a".into(), 2);
        c.dropped.insert(2);
        fs::write(dir.path().join("catalog"), c.encode()).unwrap();
        assert!(Catalog::load(&OsVfs, dir.path()).unwrap_err().is_corruption());
    }

    #[test]
    fn a_new_folder_gets_a_catalog_and_a_used_one_without_catalog_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("LOCK"), b"").unwrap();
        assert_eq!(Catalog::open(&OsVfs, dir.path()).unwrap(), Catalog::new());
        assert_eq!(Catalog::load(&OsVfs, dir.path()).unwrap(), Some(Catalog::new()));
        for name in ["d1.fdb", "log-00000000000000000001.fdl"] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(name), b"x").unwrap();
            let e = Catalog::open(&OsVfs, dir.path()).unwrap_err();
            assert!(e.is_corruption() && e.to_string().contains("catalog"), "{e}");
            assert!(!dir.path().join("catalog").exists());
        }
    }
}
