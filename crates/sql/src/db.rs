//! A database folder: the engine environment and the SQL catalog in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fractaldb::{DictOptions, Dictionary, Env, EnvOptions, Isolation};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{self, DbDef, IndexKind, TableDef, CATALOG_DICT};
use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::table::{self, Table};
use crate::types::Collation;
use crate::value::Value;

/// Settings of a database folder.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// The engine's node cache.
    pub cache_size_bytes: usize,
    /// Wait for the log fsync at each commit (`tokudb_commit_sync`).
    pub commit_sync: bool,
    /// O_DIRECT for data and log files where the file system allows it.
    pub direct_io: bool,
    /// With `commit_sync` off: how often the log is fsynced
    /// (`tokudb_fsync_log_period`, milliseconds).
    pub fsync_log_period_ms: u64,
    /// How often a checkpoint runs (`tokudb_checkpointing_period`); 0: only
    /// at close.
    pub checkpoint_period_secs: u64,
    /// Global values of system variables (name, text as in my.cnf), over
    /// the defaults of `sysvars::DEFS`; an unknown name fails `open`.
    pub variables: Vec<(String, String)>,
    /// Where the engine's progress notes go (recovery's); None: stderr.
    pub engine_notes: Option<fractaldb::Notes>,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            cache_size_bytes: 64 << 20,
            commit_sync: true,
            direct_io: true,
            fsync_log_period_ms: 1000,
            checkpoint_period_secs: 60,
            variables: Vec::new(),
            engine_notes: None,
        }
    }
}

/// The schema in memory: a copy of the catalog's records with the tables' dictionaries open.
#[derive(Default)]
pub(crate) struct Schema {
    pub dbs: BTreeMap<String, DbDef>,
    pub tables: BTreeMap<(String, String), Arc<Table>>,
}

pub(crate) struct Inner {
    pub env: Env,
    pub catalog: Dictionary,
    pub schema: RwLock<Schema>,
    /// Serialises DDL: one schema change at a time.
    pub ddl: Mutex<()>,
    pub next_conn: AtomicU64,
    /// Row-count slots not held by a session.
    pub free_slots: Mutex<Vec<u32>>,
    pub next_slot: AtomicU64,
    /// When the folder was opened (SHOW STATUS Uptime).
    pub started: std::time::Instant,
    /// Where sorts and GROUP BY spill their runs (`sort.rs`); emptied at open.
    pub tmp_dir: std::path::PathBuf,
    /// Every open session's PROCESSLIST row, by connection id.
    pub procs: Mutex<BTreeMap<u64, Arc<Mutex<Proc>>>>,
    /// The accounts (`accounts.rs`), reloaded after each account statement.
    pub accounts: crate::accounts::Cache,
    /// Global system variables (`sysvars.rs`).
    pub globals: crate::sysvars::Globals,
    /// The status counts of sessions that have ended (GLOBAL STATUS adds
    /// the live sessions' own).
    pub ended_stats: Mutex<crate::sysvars::Stats>,
    /// Counters the server keeps (Connections, Aborted_*, Threads_created).
    pub counters: crate::sysvars::ServerCounters,
    /// Where a hot backup puts what (`backup.rs`); set by the server.
    pub backup_layout: Mutex<Option<crate::backup::BackupLayout>>,
    /// Metadata locks by table (`mdl.rs`).
    pub mdl: crate::mdl::Mdl,
    /// The live sessions' XA transactions (`xa.rs`).
    pub xa: Mutex<crate::xa::Registry>,
}

/// What SHOW PROCESSLIST shows of a session; the session updates it at the
/// start and end of each statement.
pub(crate) struct Proc {
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    /// "Query" while a statement runs, "Sleep" between statements.
    pub command: &'static str,
    /// The running statement's text ("" between statements).
    pub info: String,
    /// Since when the session is in `command`.
    pub since: std::time::Instant,
    /// The session's status counters (SHOW SESSION STATUS).
    pub stats: crate::sysvars::Stats,
    /// The running statement's progress (PROCESSLIST's State).
    pub progress: crate::progress::ProgressHandle,
}

impl Inner {
    /// The PROCESSLIST rows, by connection id:
    /// (id, user, host, db, command, since, info).
    pub(crate) fn processes(&self) -> Vec<(u64, Proc)> {
        let procs = self.procs.lock();
        procs
            .iter()
            .map(|(id, p)| {
                let p = p.lock();
                (
                    *id,
                    Proc {
                        user: p.user.clone(),
                        host: p.host.clone(),
                        db: p.db.clone(),
                        command: p.command,
                        info: p.info.clone(),
                        since: p.since,
                        stats: p.stats,
                        progress: p.progress.clone(),
                    },
                )
            })
            .collect()
    }
}

/// An open database folder. Sessions share it.
pub struct Database {
    pub(crate) inner: Arc<Inner>,
}

impl Database {
    /// Opens (creating if needed) the database in `dir`: the engine
    /// recovers, the catalog is read, and dictionaries no catalog record
    /// names (left by a crash in the middle of DDL) are dropped.
    pub fn open(dir: impl AsRef<Path>, opts: DbOptions) -> SqlResult<Database> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(|e| SqlError::internal(format!("cannot create {}: {e}", dir.display())))?;
        let globals = crate::sysvars::Globals::new(&opts.variables)?;
        let eo = EnvOptions {
            cache_size_bytes: opts.cache_size_bytes,
            commit_sync: opts.commit_sync,
            direct_io: opts.direct_io,
            fsync_log_period_ms: opts.fsync_log_period_ms.max(1),
            checkpoint_period: (opts.checkpoint_period_secs > 0)
                .then(|| std::time::Duration::from_secs(opts.checkpoint_period_secs)),
            update_fns: vec![
                (table::ADD_I64, Arc::new(table::add_i64) as fractaldb::UpdateFn),
                (crate::fastupdate::FAST_UPDATE, Arc::new(crate::fastupdate::apply) as fractaldb::UpdateFn),
                (crate::instant::CONVERT_ROW, Arc::new(crate::instant::apply) as fractaldb::UpdateFn),
            ],
            notes: opts.engine_notes.clone(),
            // No admission gate: a statement's thread spends most of its
            // time outside tree code (parsing, the SQL layer, the socket),
            // so the gate's line (at most twice the cores inside tree code)
            // parked threads that would not have contended. With sysbench
            // at 64 client threads on 2 cores it cost read_write 8-15% of
            // its rate and 15% more CPU per transaction, inserts 8-30%;
            // point selects and 16 threads showed no difference
            // (docs/benchmarks-sql.md). The gate stays for embedders whose
            // threads live in tree code (`fractaldb bench-txn`).
            max_active_threads: EnvOptions::NO_ACTIVE_THREAD_LIMIT,
            ..EnvOptions::default()
        };
        let env = Env::open(dir, eo)?;
        // Runs a crash left behind.
        let tmp_dir = dir.join("sql-tmp");
        let _ = std::fs::remove_dir_all(&tmp_dir);
        let catalog = match env.open_dictionary(CATALOG_DICT) {
            Ok(d) => d,
            Err(fractaldb::Error::NoSuchDictionary(_)) => {
                env.create_dictionary(CATALOG_DICT, DictOptions::default())?
            }
            Err(e) => return Err(e.into()),
        };
        let inner = Inner {
            env,
            catalog,
            schema: RwLock::new(Schema::default()),
            ddl: Mutex::new(()),
            next_conn: AtomicU64::new(1),
            free_slots: Mutex::new(Vec::new()),
            next_slot: AtomicU64::new(0),
            started: std::time::Instant::now(),
            tmp_dir,
            procs: Mutex::new(BTreeMap::new()),
            accounts: crate::accounts::Cache::default(),
            globals,
            ended_stats: Mutex::new([0; crate::sysvars::STAT_COUNT]),
            counters: crate::sysvars::ServerCounters::default(),
            backup_layout: Mutex::new(None),
            mdl: Default::default(),
            xa: Mutex::new(crate::xa::Registry::default()),
        };
        let db = Database { inner: Arc::new(inner) };
        db.inner.load()?;
        db.inner.accounts.load(&db.inner.env, &db.inner.catalog)?;
        Ok(db)
    }

    pub fn session(&self) -> Session {
        Session::new(self.inner.clone())
    }

    /// Says how a hot backup (`SET tokudb_backup_dir`) lays out its copy:
    /// the database folder goes to `<backup>/<subdir>`, and each of `files`
    /// (kept in `root`, which holds this database folder) to `<backup>/`
    /// under its name, so the copy is a folder like `root`. Without it the
    /// copy is the database folder itself plus its other regular files.
    pub fn set_backup_layout(&self, root: PathBuf, subdir: &str, files: Vec<PathBuf>) {
        *self.inner.backup_layout.lock() =
            Some(crate::backup::BackupLayout { root, subdir: subdir.to_string(), files });
    }

    /// The engine dictionaries of table `db`.`table`, as its catalog record
    /// names them: main, status, then each secondary index's.
    pub fn table_dictionaries(&self, db: &str, table: &str) -> SqlResult<Vec<String>> {
        Ok(crate::ddl::dict_names(&self.inner.table(db, table)?.def))
    }

    /// The codec engine dictionary `name` stores its rows with, as the
    /// engine reports it (tests check ROW_FORMAT through it).
    pub fn dictionary_codec(&self, name: &str) -> SqlResult<fractaldb::Codec> {
        Ok(self.inner.env.open_dictionary(name)?.codec())
    }

    /// The settings engine dictionary `name` was created with, as the
    /// engine reports them (tests check the block-size variables through
    /// it).
    pub fn dictionary_options(&self, name: &str) -> SqlResult<fractaldb::DictOptions> {
        Ok(self.inner.env.open_dictionary(name)?.options())
    }

    /// Every entry of index `index` of `db`.`table` (its key and value, the
    /// newest committed versions), read from its dictionary: tests compare
    /// indexes built different ways through it.
    pub fn index_entries(&self, db: &str, table: &str, index: &str) -> SqlResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let t = self.inner.table(db, table)?;
        let i = t.def.index_by_name(index).ok_or_else(|| SqlError::cant_drop(index))?;
        let d = t.sec[i].as_ref().unwrap_or(&t.main);
        let txn = self.inner.env.begin(fractaldb::Isolation::ReadCommitted)?;
        let out = txn.range(d, None, None, false).collect::<Result<Vec<_>, _>>()?;
        txn.commit()?;
        Ok(out)
    }

    /// Every engine dictionary of the folder (tests use it to see that no
    /// dictionary is left that no catalog record names).
    pub fn dictionaries(&self) -> Vec<String> {
        self.inner.env.list_dictionaries()
    }

    /// A system variable's global value (`@@global.name`), `None` for an
    /// unknown name or a SESSION-only variable.
    pub fn global_var(&self, name: &str) -> Option<Value> {
        let d = crate::sysvars::def(&name.to_ascii_lowercase())?;
        if d.scope == crate::sysvars::Scope::Session {
            return None;
        }
        self.inner.globals.get(d.name)
    }

    /// Sets a global variable from its text, as my.cnf would (read-only
    /// ones too: for the server to say what it uses).
    pub fn set_global(&self, name: &str, text: &str) -> SqlResult<()> {
        let d = crate::sysvars::def(&name.to_ascii_lowercase())
            .ok_or_else(|| SqlError::unknown_variable(name))?;
        let v = crate::sysvars::parse_text(d, text).map_err(|e| SqlError::wrong_value_for_var(d.name, &e))?;
        self.inner.globals.set(d, v);
        Ok(())
    }

    /// [`Database::global_var`] as an unsigned integer (0 when not one).
    pub fn global_u64(&self, name: &str) -> u64 {
        self.global_var(name).and_then(|v| v.to_f64()).map_or(0, |f| f.max(0.0) as u64)
    }

    /// The counters the server keeps for SHOW STATUS.
    pub fn counters(&self) -> &crate::sysvars::ServerCounters {
        &self.inner.counters
    }

    /// The engine's counters (cache, log, locks, checkpoints).
    pub fn engine_stats(&self) -> fractaldb::EnvStats {
        self.inner.env.stats()
    }

    /// Writes a checkpoint now.
    pub fn checkpoint(&self) -> SqlResult<()> {
        self.inner.env.checkpoint()?;
        Ok(())
    }

    /// Closes the engine: a final checkpoint, files closed. Sessions must
    /// have been dropped.
    pub fn close(self) -> SqlResult<()> {
        let inner = Arc::try_unwrap(self.inner)
            .map_err(|_| SqlError::internal("the database is closed while sessions are open"))?;
        drop(inner.schema);
        drop(inner.catalog);
        inner.env.close()?;
        Ok(())
    }
}

impl Inner {
    fn load(&self) -> SqlResult<()> {
        let txn = self.env.begin(Isolation::RepeatableRead)?;
        let mut schema = Schema::default();
        let mut named = std::collections::HashSet::new();
        named.insert(CATALOG_DICT.to_string());
        let mut max_slot = 0u32;
        for kv in txn.range(&self.catalog, None, None, false) {
            let (k, v) = kv?;
            if k.starts_with(b"db/") {
                let d: DbDef = serde_json::from_slice(&v).map_err(bad_record)?;
                schema.dbs.insert(d.name.clone(), d);
            } else if k.starts_with(b"table/") {
                let def: TableDef = serde_json::from_slice(&v).map_err(bad_record)?;
                named.insert(def.main_dict.clone());
                named.insert(def.status_dict.clone());
                for ix in &def.indexes {
                    named.insert(ix.dict.clone());
                }
                let t = self.open_table(def)?;
                max_slot = max_slot.max(t.max_slot(&txn)?);
                schema.tables.insert((t.def.db.clone(), t.def.name.clone()), Arc::new(t));
            }
        }
        txn.commit()?;
        // Slots of earlier runs are reused from 0 (their deltas stay summed).
        let _ = max_slot;
        for name in self.env.list_dictionaries() {
            if !named.contains(&name) && name.contains('/') {
                // Left by a DDL statement a crash interrupted: its catalog
                // change never committed (CREATE) or already did (DROP).
                self.env.drop_dictionary(&name)?;
            }
        }
        *self.schema.write() = schema;
        Ok(())
    }

    /// Opens the dictionaries of a table.
    pub fn open_table(&self, def: TableDef) -> SqlResult<Table> {
        let main = self.env.open_dictionary(&def.main_dict)?;
        let status = self.env.open_dictionary(&def.status_dict)?;
        let mut sec = Vec::new();
        for ix in &def.indexes {
            sec.push(if ix.kind == IndexKind::Primary {
                None
            } else {
                Some(self.env.open_dictionary(&ix.dict)?)
            });
        }
        // The next hidden row id: one past the last key.
        let mut next = 1;
        if def.primary.is_none() {
            let mut c = main.cursor();
            if c.last()? {
                if let Some(k) = c.key() {
                    if let Ok(b) = <[u8; 8]>::try_from(k) {
                        next = u64::from_be_bytes(b) + 1;
                    }
                }
            }
        }
        Ok(Table {
            def,
            main,
            sec,
            status,
            autoinc: Mutex::new(None),
            next_row_id: AtomicU64::new(next),
            settling: Mutex::new(()),
            building: Default::default(),
            index_floor: AtomicU64::new(0),
            rows_floor: AtomicU64::new(0),
        })
    }

    /// A dictionary name not in use, from `base`.
    pub fn fresh_dict_name(&self, base: &str) -> String {
        let existing: std::collections::HashSet<String> = self.env.list_dictionaries().into_iter().collect();
        if !existing.contains(base) && base.len() <= 240 {
            return base.to_string();
        }
        let base = if base.len() > 200 {
            &base[..base
                .char_indices()
                .take_while(|(i, _)| *i < 200)
                .last()
                .map_or(0, |(i, c)| i + c.len_utf8())]
        } else {
            base
        };
        (1..).map(|n| format!("{base}~{n}")).find(|n| !existing.contains(n)).expect("a free name")
    }

    pub fn db_collation(&self, db: &str) -> Collation {
        self.schema.read().dbs.get(db).map_or(Collation::Utf8mb4GeneralCi, |d| d.collation)
    }

    pub fn table(&self, db: &str, name: &str) -> SqlResult<Arc<Table>> {
        // A DML statement locks what it resolves, before reading it and
        // before any row lock (`mdl.rs`).
        if let Some((owner, timeout)) = crate::mdl::dml_owner() {
            self.mdl.shared(owner, db, name, timeout)?;
        }
        let s = self.schema.read();
        if let Some(t) = s.tables.get(&(db.to_string(), name.to_string())) {
            return Ok(t.clone());
        }
        if !s.dbs.contains_key(db) {
            return Err(SqlError::unknown_db(db));
        }
        Err(SqlError::no_such_table(db, name))
    }

    pub fn alloc_slot(&self) -> u32 {
        self.free_slots.lock().pop().unwrap_or_else(|| self.next_slot.fetch_add(1, Ordering::SeqCst) as u32)
    }

    pub fn free_slot(&self, s: u32) {
        self.free_slots.lock().push(s);
    }

    pub fn next_table_id(&self, txn: &fractaldb::Txn) -> SqlResult<u64> {
        let cur = txn
            .get_for_update(&self.catalog, catalog::NEXT_ID_KEY)?
            .and_then(|v| v.try_into().ok().map(u64::from_le_bytes))
            .unwrap_or(1);
        txn.put(&self.catalog, catalog::NEXT_ID_KEY, &(cur + 1).to_le_bytes())?;
        Ok(cur)
    }
}

impl Table {
    fn max_slot(&self, _txn: &fractaldb::Txn) -> SqlResult<u32> {
        Ok(0)
    }
}

fn bad_record(e: serde_json::Error) -> SqlError {
    SqlError::engine(format!("a catalog record is damaged: {e}"))
}
