//! `Loader`: the bulk load of a new dictionary (`Env::loader`).

use super::*;

impl Env {
    /// Starts a bulk load of a new dictionary `name` (see [`Loader`]):
    /// its pairs are added in increasing key order and written leaf by
    /// leaf into a file of its own, and the dictionary exists only once
    /// [`Loader::finish`] has returned. Checked as `create_dictionary`
    /// checks (a new name, settings within bounds).
    ///
    /// Crash safety: before the file exists, the catalog is written with
    /// the file's id reserved (`next_file_id` past it) and listed as
    /// dropped, so a crash at any point before `finish` has made the
    /// catalog name the dictionary leaves a file the sweep at open deletes
    /// (a dropped id), and no dictionary. `finish` writes the tree's
    /// checkpoint (durable), then the catalog naming it with the id out of
    /// the dropped list: that one catalog write is the load's commit point.
    pub fn loader(&self, name: &str, opts: DictOptions) -> Result<Loader> {
        let cmp = self.check_new_dict(name, &opts)?;
        let inner = &self.inner;
        let file_id = {
            let _ddl = inner.ddl.lock();
            let mut catalog = inner.open.lock().catalog.clone();
            if catalog.dicts.contains_key(name) {
                return Err(Error::DictionaryExists(name.to_string()));
            }
            let file_id = catalog.next_file_id;
            catalog.next_file_id = file_id + 1;
            catalog.dropped.insert(file_id);
            catalog.store(&*inner.ctx.vfs, &inner.path)?;
            inner.open.lock().catalog = catalog;
            file_id
        };
        let mut loader = Loader { inner: inner.clone(), name: name.to_string(), file_id, builder: None };
        let settings = Settings::from(&opts);
        let empty = Meta {
            root: crate::tree::meta::NO_ROOT,
            max_msn: 0,
            ckpt_lsn: 0,
            next_txid: 0,
            settings,
            counts: [0; crate::txn::counts::COUNTERS],
        };
        let file = BlockFile::create(&*inner.ctx.vfs, &loader.path(), inner.direct_io, &empty.encode())?;
        let msn = inner.ctx.msn.load(Ordering::SeqCst);
        loader.builder = Some(crate::tree::load::TreeBuilder::new(file, empty.settings, cmp, msn)?);
        Ok(loader)
    }
}

/// A bulk load of a new dictionary (`Env::loader`): pairs added in
/// strictly increasing key order are written into full leaves, bottom-up,
/// never through a root's buffers (`tree/load.rs`), and `finish` makes the
/// dictionary exist. Dropped without `finish` (or if `finish` fails), it
/// deletes its file and no dictionary was created; a crash does the same
/// at the next open.
///
/// The loaded pairs are committed values every reader sees (as a put's
/// are once no snapshot needs their history). Nothing can read them
/// before `finish`: the dictionary has no name until then. A caller that
/// makes the new dictionary visible through its own transaction (the SQL
/// layer's catalog) thereby makes the rows committed as of that
/// transaction.
pub struct Loader {
    inner: Arc<Inner>,
    name: String,
    file_id: u64,
    /// `None` once finished (or before the file was created).
    builder: Option<crate::tree::load::TreeBuilder>,
}

pub use crate::tree::load::LoadStats;

impl Loader {
    fn path(&self) -> PathBuf {
        dict_file(&self.inner.path, self.file_id)
    }

    /// Adds a pair. Its key must be greater than every key added before,
    /// by the dictionary's comparator, else `Error::InvalidArgument` and
    /// nothing is added (the load can go on). Keys and values are bounded
    /// as for `Dictionary::put` (`Error::TooLarge`).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match &mut self.builder {
            Some(b) => b.add(key, value),
            None => Err(Error::invalid("the loader is finished")),
        }
    }

    /// Pairs added so far.
    pub fn rows(&self) -> u64 {
        self.builder.as_ref().map_or(0, |b| b.rows())
    }

    /// Writes the last leaf and the internal levels, makes the file's
    /// checkpoint durable, then names the dictionary in the catalog
    /// (durable) and returns a handle to it.
    pub fn finish(self) -> Result<Dictionary> {
        self.finish_with_stats().map(|(d, _)| d)
    }

    /// `finish`, also returning what was written.
    pub fn finish_with_stats(mut self) -> Result<(Dictionary, LoadStats)> {
        let inner = self.inner.clone();
        if inner.closed.load(Ordering::Relaxed) {
            return Err(Error::invalid("the environment is closed"));
        }
        let builder = self.builder.take().ok_or_else(|| Error::invalid("the loader is finished"))?;
        // On any error below, `drop(self)` deletes the file.
        let (file, stats) = builder.finish()?;
        drop(file);
        let _ddl = inner.ddl.lock();
        let mut catalog = inner.open.lock().catalog.clone();
        if catalog.dicts.contains_key(&self.name) {
            return Err(Error::DictionaryExists(self.name.clone()));
        }
        let dict = inner.next_dict.fetch_add(1, Ordering::Relaxed);
        let comparators = &inner.comparators;
        let tree = Tree::open(
            &self.path(),
            dict,
            self.file_id,
            inner.direct_io,
            &|n| comparators.get(n).copied(),
            inner.ctx.clone(),
        )?;
        catalog.dicts.insert(self.name.clone(), self.file_id);
        catalog.dropped.remove(&self.file_id);
        if let Err(e) = catalog.store(&*inner.ctx.vfs, &inner.path) {
            tree.dropped.store(true, Ordering::Relaxed);
            inner.ctx.cache.remove_dict(dict);
            return Err(e);
        }
        // The catalog names it: from here on it is the dictionary's file.
        let name = std::mem::take(&mut self.name);
        self.file_id = u64::MAX;
        let mut open = inner.open.lock();
        open.catalog = catalog;
        open.trees.insert(name.clone(), tree.clone());
        drop(open);
        if let Some(log) = inner.ctx.log.get() {
            let lsn =
                log.append(&Record::CreateDict { file_id: tree.file_id, name: name.clone() }.encode())?;
            log.sync_to(lsn)?;
        }
        Ok((Dictionary { tree, name, txns: inner.txns.clone() }, stats))
    }
}

impl Drop for Loader {
    /// An unfinished load: delete the file, then forget its id from the
    /// dropped list once the removal is durable (as a drop does). If that
    /// fails, the id stays listed and the sweep at the next open deletes
    /// the file.
    fn drop(&mut self) {
        if self.file_id == u64::MAX {
            return;
        }
        self.builder = None;
        let inner = &self.inner;
        let path = self.path();
        let removed = match inner.ctx.vfs.remove(&path) {
            Ok(()) => inner.ctx.vfs.sync_dir(&inner.path).is_ok(),
            Err(_) => false,
        };
        if removed {
            let _ddl = inner.ddl.lock();
            inner.open.lock().catalog.dropped.remove(&self.file_id);
        }
    }
}
