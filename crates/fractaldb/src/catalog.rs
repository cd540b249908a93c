//! The catalog: which dictionaries an environment holds and in which files.
//!
//! One small file, `catalog`, rewritten whole on every create, drop and
//! rename: written to `catalog.tmp`, fsynced, renamed over `catalog`, and
//! the folder fsynced, so a crash leaves either the old or the new catalog.
//!
//! ```text
//! magic "FDBCATL\0" | version u32 (1) | next_file_id u64 | count u32 |
//! count × (name: varint len + UTF-8 | file_id u64) | crc32c u32 of all before
//! ```
//! Dictionary `file_id` lives in the file `d<file_id>.fdb`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::encoding::{put_bytes, Reader};
use crate::error::{Error, Result};
use crate::file::{OpenMode, Vfs};

const MAGIC: &[u8; 8] = b"FDBCATL\0";
const VERSION: u32 = 1;

/// Names to file ids, and the next id to hand out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Catalog {
    pub dicts: BTreeMap<String, u64>,
    pub next_file_id: u64,
}

pub(crate) fn dict_file(dir: &Path, file_id: u64) -> PathBuf {
    dir.join(format!("d{file_id}.fdb"))
}

impl Catalog {
    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.next_file_id.to_le_bytes());
        out.extend_from_slice(&(self.dicts.len() as u32).to_le_bytes());
        for (name, id) in &self.dicts {
            put_bytes(&mut out, name.as_bytes());
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
        if version != VERSION {
            return Err(Error::UnsupportedVersion { path: path.into(), found: version, supported: VERSION });
        }
        let next_file_id = r.u64().map_err(bad)?;
        let n = r.u32().map_err(bad)?;
        let mut dicts = BTreeMap::new();
        for _ in 0..n {
            let name =
                std::str::from_utf8(r.bytes().map_err(bad)?).map_err(|_| bad("name is not UTF-8".into()))?;
            let id = r.u64().map_err(bad)?;
            dicts.insert(name.to_string(), id);
        }
        Ok(Catalog { dicts, next_file_id })
    }

    /// Reads the catalog of `dir`, or an empty one if there is none yet.
    pub(crate) fn load(vfs: &dyn Vfs, dir: &Path) -> Result<Catalog> {
        let path = dir.join("catalog");
        match vfs.read_file(&path)? {
            Some(bytes) => Catalog::decode(&path, &bytes),
            None => Ok(Catalog { dicts: BTreeMap::new(), next_file_id: 1 }),
        }
    }

    /// Durably replaces the catalog of `dir`.
    pub(crate) fn store(&self, vfs: &dyn Vfs, dir: &Path) -> Result<()> {
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
        assert_eq!(Catalog::load(&OsVfs, dir.path()).unwrap().dicts.len(), 0);
        let mut c = Catalog { next_file_id: 7, ..Default::default() };
        c.dicts.insert("a".into(), 3);
        c.dicts.insert("ünïcode".into(), 5);
        c.store(&OsVfs, dir.path()).unwrap();
        assert_eq!(Catalog::load(&OsVfs, dir.path()).unwrap(), c);
        let path = dir.path().join("catalog");
        let mut bytes = fs::read(&path).unwrap();
        bytes[20] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(Catalog::load(&OsVfs, dir.path()).unwrap_err().is_corruption());
    }
}
