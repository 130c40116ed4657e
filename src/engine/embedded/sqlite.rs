//! SQLite through the `rusqlite` crate (with its bundled SQLite; see
//! `info().version`).
//!
//! The store is one database file, `kvperf.sqlite` (with `-wal`, `-shm` or
//! `-journal` beside it), holding one table `kvperf (k BLOB PRIMARY KEY,
//! v BLOB)`; keys compare as BLOBs (memcmp), so scans run in key order.
//! All YCSB tables share it, as in the RocksDB engine: the `table` argument
//! is ignored. A YCSB record is one value in the encoding of YCSB's RocksDB
//! binding ([`super::record::codec`]).
//!
//! Each runner thread has its own connection (SQLite connections are not
//! shared between threads). In WAL mode (the default) readers never wait;
//! writers take the database's one write lock in turn, waiting for it in
//! SQLite's busy handler (`busy_timeout_ms`) rather than failing. A write is
//! one autocommit statement (an upsert, so `insert` overwrites); `update`
//! reads, merges and writes the record inside one `BEGIN IMMEDIATE`
//! transaction, so it is atomic.
//!
//! Durability: `synchronous=normal` by default, SQLite's recommendation for
//! WAL: a commit is in the WAL (OS page cache) when it returns and survives
//! a crash of kvperf; the WAL is fsynced at checkpoints, so a machine crash
//! can lose the last commits but never corrupts the file — like RocksDB's
//! default of not syncing every write. `synchronous=full` fsyncs every
//! commit. `settle` and `close` checkpoint the WAL into the database file
//! (`wal_checkpoint(TRUNCATE)`) and fsync it.
//!
//! The table layout is SQLite's default rowid table with an index on `k`
//! unless `without_rowid=true`: SQLite advises WITHOUT ROWID only for rows
//! smaller than about 1/20 of a page, and a default YCSB record (about
//! 1.1 KB) would spill into an overflow page of its own with 4 KiB pages.
//! Layout and page size are fixed when the file is created (a fresh load);
//! `info().options` records what the file actually uses.
//!
//! The db_bench cursor copies entries out in growing batches (1, then 16 up
//! to 1024 rows per query), so a cursor keeps no read transaction open
//! between calls; each batch is one consistent snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::kv::{KvBatch, Start};
use super::options::{set_unless_given, OptionValues};
use super::record::codec;
use super::{
    ready_client, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineInfo, EngineOption,
    EngineSpec, EventSupport, OpError, OpResult, OpenMode, OpenOptions, Operations, Record,
    ScanResults, SetupFuture, StoreKind, EMBEDDED,
};
use crate::error::InputError;
use crate::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "sqlite",
    about: "embedded SQLite (B-tree, WAL) via rusqlite",
    feature: "sqlite",
    store: StoreKind::Directory { owns, dirs: None },
    capabilities: Capabilities {
        // Checkpoints run inside the committing connection, not behind it.
        background_work: false,
        // VACUUM rebuilds the file.
        compact: true,
        // SQLite's file locks let processes share the database.
        shared_store: true,
        events: EventSupport::Unavailable("SQLite runs no background threads: its WAL checkpoints run inside a committing client's call"),
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "synchronous", default: "normal", help: "off, normal (fsync at WAL checkpoints) or full (fsync every commit)" },
        EngineOption { name: "journal_mode", default: "wal", help: "wal, delete, truncate, persist, memory or off" },
        EngineOption { name: "cache_size", default: "2048000", help: "page cache bytes per connection (SQLite's default: 2000 KiB)" },
        EngineOption { name: "page_size", default: "4096", help: "page bytes, a power of two from 512 to 65536; fixed when the file is created" },
        EngineOption { name: "mmap_size", default: "0", help: "bytes of the file read through mmap; 0 = none" },
        EngineOption { name: "without_rowid", default: "false", help: "store rows in the key's B-tree (WITHOUT ROWID) instead of a rowid table plus an index on k; fixed when the table is created" },
        EngineOption { name: "busy_timeout_ms", default: "30000", help: "how long a writer waits for the write lock before failing" },
        EngineOption { name: "wal_autocheckpoint", default: "1000", help: "WAL pages that trigger a checkpoint by the committing connection; 0 = never" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

const FILE: &str = "kvperf.sqlite";

/// The database file and the files SQLite keeps beside it.
fn owns(name: &str) -> bool {
    name == FILE
        || name
            .strip_prefix(FILE)
            .is_some_and(|suffix| ["-wal", "-shm", "-journal"].contains(&suffix))
}

/// The rusqlite crate's version, read from Cargo.lock at build time.
pub const RUSQLITE_VERSION: &str = env!("KVPERF_RUSQLITE_VERSION");

const MAX_MEMORY_OPTION: u64 = 1 << 40;

#[derive(Debug, Clone)]
pub(crate) struct SqliteOptions {
    synchronous: String,
    journal_mode: String,
    /// Bytes; SQLite takes KiB as a negative cache_size.
    cache_size: u64,
    page_size: u64,
    mmap_size: u64,
    without_rowid: bool,
    busy_timeout: Duration,
    wal_autocheckpoint: u64,
    effective: BTreeMap<String, String>,
}

impl SqliteOptions {
    pub(crate) fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let page_size = v.u64("page_size")?;
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(InputError::property(
                "sqlite.page_size",
                format!("{page_size} is not a power of two from 512 to 65536"),
            ));
        }
        Ok(Self {
            synchronous: v.choice("synchronous", &["off", "normal", "full", "extra"])?,
            journal_mode: v.choice(
                "journal_mode",
                &["wal", "delete", "truncate", "persist", "memory", "off"],
            )?,
            cache_size: v.u64_at_most("cache_size", MAX_MEMORY_OPTION)?,
            page_size,
            mmap_size: v.u64_at_most("mmap_size", 1 << 46)?,
            without_rowid: v.bool("without_rowid")?,
            busy_timeout: Duration::from_millis(v.u64_at_most("busy_timeout_ms", i32::MAX as u64)?),
            wal_autocheckpoint: v.u64_at_most("wal_autocheckpoint", i32::MAX as u64)?,
            effective: v.effective(),
        })
    }

    /// Sets this connection's pragmas; returns the journal mode in effect.
    fn configure(&self, conn: &Connection, synchronous: &str) -> rusqlite::Result<String> {
        conn.busy_timeout(self.busy_timeout)?;
        // Only takes effect before the file's first table exists.
        conn.pragma_update(None, "page_size", self.page_size as i64)?;
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", &self.journal_mode, |r| r.get(0))?;
        conn.pragma_update(None, "synchronous", synchronous)?;
        conn.pragma_update(None, "cache_size", -((self.cache_size / 1024) as i64))?;
        let _: i64 =
            conn.pragma_update_and_check(None, "mmap_size", self.mmap_size as i64, |r| r.get(0))?;
        let _: i64 = conn.pragma_update_and_check(
            None,
            "wal_autocheckpoint",
            self.wal_autocheckpoint as i64,
            |r| r.get(0),
        )?;
        Ok(mode)
    }
}

/// `--cache_size` sets the page cache of each connection, `--sync`
/// `synchronous` (full, or normal). `--disable_wal` is not honoured: SQLite
/// has no log-free mode that keeps the file consistent after a crash
/// (`-p sqlite.journal_mode=off` is there for those who want it). SQLite has
/// no compression, filters or background jobs, so those flags are honoured
/// only when they ask for nothing (`--compression_type=none`...).
fn map_db_bench_flags(flags: &DbBenchFlags, props: &mut Properties) -> Vec<&'static str> {
    let mut honoured = flags.asking_for_nothing();
    if let Some(bytes) = flags.cache_size {
        set_unless_given(props, &SPEC, "cache_size", &bytes.to_string());
        honoured.push("cache_size");
    }
    if let Some(sync) = flags.sync {
        set_unless_given(
            props,
            &SPEC,
            "synchronous",
            if sync { "full" } else { "normal" },
        );
        honoured.push("sync");
    }
    flags.not_honoured(&honoured)
}

pub const SELECT_ONE: &str = "SELECT v FROM kvperf WHERE k = ?1";
const SCAN: &str = "SELECT v FROM kvperf WHERE k >= ?1 ORDER BY k LIMIT ?2";
const UPSERT: &str =
    "INSERT INTO kvperf (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v";
pub const UPDATE: &str = "UPDATE kvperf SET v = ?2 WHERE k = ?1";
const DELETE: &str = "DELETE FROM kvperf WHERE k = ?1";
const ENTRIES_FIRST: &str = "SELECT k, v FROM kvperf ORDER BY k LIMIT ?1";
const ENTRIES_FROM: &str = "SELECT k, v FROM kvperf WHERE k >= ?1 ORDER BY k LIMIT ?2";
const ENTRIES_AFTER: &str = "SELECT k, v FROM kvperf WHERE k > ?1 ORDER BY k LIMIT ?2";

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<SqliteEngine> {
    let dir = opts.dir()?;
    let options = SqliteOptions::from_properties(opts.properties)?;
    // A fresh store was emptied by store::prepare. Absolute: SQLite reads
    // a name that begins `file:` as a URI (`--db file:sq` wrote the user's
    // `sq/kvperf.sqlite`, pass 14), and a path beginning `/` never does.
    let path = std::path::absolute(dir.join(FILE))
        .with_context(|| format!("cannot resolve '{}'", dir.display()))?;
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if opts.mode != OpenMode::Existing {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let context = || format!("cannot open SQLite database '{}'", path.display());
    let conn = Connection::open_with_flags(&path, flags).with_context(context)?;
    // The engine's own connection runs checkpoints, VACUUM and close: with
    // synchronous=full, so what it makes durable is.
    let journal_mode = options.configure(&conn, "full").with_context(context)?;
    let layout = if options.without_rowid {
        " WITHOUT ROWID"
    } else {
        ""
    };
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS kvperf (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL){layout}"
    ))
    .with_context(context)?;

    // Record what the file really uses: page size and layout are the file's.
    let mut options = options;
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    let mmap_size: i64 = conn.pragma_query_value(None, "mmap_size", |r| r.get(0))?;
    let schema: String = conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'kvperf'",
        [],
        |r| r.get(0),
    )?;
    let without_rowid = schema.to_ascii_uppercase().contains("WITHOUT ROWID");
    for (name, value) in [
        ("journal_mode", journal_mode.to_ascii_lowercase()),
        ("page_size", page_size.to_string()),
        ("mmap_size", mmap_size.to_string()),
        ("without_rowid", without_rowid.to_string()),
    ] {
        options.effective.insert(name.into(), value);
    }

    Ok(SqliteEngine {
        path,
        dir: dir.to_path_buf(),
        options,
        control: Mutex::new(conn),
        version: format!(
            "SQLite {} (rusqlite {RUSQLITE_VERSION})",
            rusqlite::version()
        ),
    })
}

pub struct SqliteEngine {
    path: PathBuf,
    dir: PathBuf,
    options: SqliteOptions,
    /// The engine's own connection (settle, compact, close, stats).
    control: Mutex<Connection>,
    version: String,
}

impl SqliteEngine {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A connection configured as each of kvperf's clients' is.
    pub fn connect(&self) -> anyhow::Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let context = || format!("cannot open SQLite database '{}'", self.path.display());
        let conn = Connection::open_with_flags(&self.path, flags).with_context(context)?;
        self.options
            .configure(&conn, &self.options.synchronous)
            .with_context(context)?;
        Ok(conn)
    }

    fn with_control<T>(
        &self,
        f: impl FnOnce(&Connection) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let conn = self
            .control
            .lock()
            .map_err(|_| anyhow::anyhow!("SQLite: a thread panicked holding the connection"))?;
        f(&conn)
    }

    /// Checkpoints the WAL into the database file, truncating the WAL, and
    /// fsyncs the file (also when `synchronous=off` or without a WAL).
    fn checkpoint(&self, conn: &Connection) -> anyhow::Result<()> {
        let (busy, _log, _done): (i64, i64, i64) = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .context("SQLite checkpoint failed")?;
        if busy != 0 {
            anyhow::bail!(
                "SQLite checkpoint could not finish: another connection is in a transaction"
            );
        }
        std::fs::File::open(&self.path)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("cannot fsync '{}'", self.path.display()))
    }

    fn records(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(SqliteWorker {
            conn: self.connect()?,
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(SqliteKvWorker {
            conn: self.connect()?,
            cursor: KvBatch::default(),
        }))
    }
}

impl Engine for SqliteEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(&SPEC, self.version.clone(), &self.options.effective)
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let mut stats = BTreeMap::new();
        let _ = self.with_control(|conn| {
            for name in ["page_count", "freelist_count", "page_size"] {
                if let Ok(v) = conn.pragma_query_value(None, name, |r| r.get::<_, i64>(0)) {
                    stats.insert(name.replace('_', "-"), v.max(0) as u64);
                }
            }
            Ok(())
        });
        stats
    }

    /// Nothing runs in the background: settle checkpoints the WAL
    /// (TRUNCATE) and fsyncs the database file, whatever `flush` says.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        self.with_control(|conn| self.checkpoint(conn))
    }

    /// VACUUM (rebuilds the file without free pages), then a checkpoint.
    fn compact(&self) -> anyhow::Result<()> {
        self.with_control(|conn| {
            conn.execute_batch("VACUUM")
                .context("SQLite VACUUM failed")?;
            self.checkpoint(conn)
        })
    }

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    /// Checkpoints and fsyncs. The connections close when the workers and
    /// the engine are dropped (kvperf reads `stats` after `close`).
    fn close(&self) -> anyhow::Result<()> {
        self.with_control(|conn| self.checkpoint(conn))
    }
}

fn failed(err: impl std::fmt::Display) -> OpError {
    OpError::failed(format!("SQLite: {err}"))
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

pub struct SqliteWorker {
    conn: Connection,
    encoded: Vec<u8>,
    scratch: Record,
}

impl SqliteWorker {
    fn upsert(&self, key: &[u8]) -> OpResult {
        let mut stmt = self.conn.prepare_cached(UPSERT).map_err(failed)?;
        stmt.execute((key, &self.encoded[..])).map_err(failed)?;
        Ok(())
    }
}

super::blocking_records!(SqliteWorker);

impl SqliteWorker {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        let mut stmt = self.conn.prepare_cached(SELECT_ONE).map_err(failed)?;
        let mut rows = stmt.query([key]).map_err(failed)?;
        let Some(row) = rows.next().map_err(failed)? else {
            return Err(OpError::NotFound);
        };
        let value = row.get_ref(0).map_err(failed)?.as_blob().map_err(failed)?;
        if codec::decode(value, fields, out) {
            Ok(())
        } else {
            Err(OpError::Failed(CORRUPT.into()))
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start_key: &[u8],
        count: usize,
        fields: Option<&[&str]>,
        out: &mut ScanResults,
    ) -> OpResult {
        let limit = i64::try_from(count).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(SCAN).map_err(failed)?;
        let mut rows = stmt.query((start_key, limit)).map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            let value = row.get_ref(0).map_err(failed)?.as_blob().map_err(failed)?;
            if !codec::decode(value, fields, out.next_slot()) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
        }
        Ok(())
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let Self {
            conn,
            encoded,
            scratch,
        } = self;
        // IMMEDIATE: take the write lock first (waiting in the busy handler),
        // so no other writer can change the record between read and write.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        {
            let mut stmt = tx.prepare_cached(SELECT_ONE).map_err(failed)?;
            let mut rows = stmt.query([key]).map_err(failed)?;
            let Some(row) = rows.next().map_err(failed)? else {
                return Err(OpError::NotFound);
            };
            let stored = row.get_ref(0).map_err(failed)?.as_blob().map_err(failed)?;
            if !codec::merge(stored, values, scratch, encoded) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
        }
        tx.prepare_cached(UPDATE)
            .and_then(|mut stmt| stmt.execute((key, &encoded[..])))
            .map_err(failed)?;
        tx.commit().map_err(failed)
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        codec::encode(values, &mut self.encoded);
        self.upsert(key)
    }

    /// Deleting a missing key is Ok (RocksDB's behaviour).
    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        let mut stmt = self.conn.prepare_cached(DELETE).map_err(failed)?;
        stmt.execute([key]).map_err(failed)?;
        Ok(())
    }
}

/// Raw keys and values for `kvperf bench`, as db_bench stores them.
pub struct SqliteKvWorker {
    conn: Connection,
    cursor: KvBatch,
}

impl SqliteKvWorker {
    fn fill(&mut self, from: Start) -> Result<bool, OpError> {
        let asked = self.cursor.start_fill();
        let limit = asked as i64;
        let (sql, key) = match from {
            Start::First => (ENTRIES_FIRST, None),
            Start::AtOrAfter(k) => (ENTRIES_FROM, Some(k)),
            Start::After(k) => (ENTRIES_AFTER, Some(k)),
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(failed)?;
        let mut rows = match key {
            Some(k) => stmt.query((k, limit)),
            None => stmt.query([limit]),
        }
        .map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            let key = row.get_ref(0).map_err(failed)?.as_blob().map_err(failed)?;
            let value = row.get_ref(1).map_err(failed)?.as_blob().map_err(failed)?;
            self.cursor.push(key, value);
        }
        Ok(self.cursor.end_fill(asked))
    }
}

super::blocking_raw!(SqliteKvWorker, refilled);

impl SqliteKvWorker {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let mut stmt = self.conn.prepare_cached(SELECT_ONE).map_err(failed)?;
        let mut rows = stmt.query([key]).map_err(failed)?;
        match rows.next().map_err(failed)? {
            Some(row) => Ok(row
                .get_ref(0)
                .map_err(failed)?
                .as_blob()
                .map_err(failed)?
                .len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let mut stmt = self.conn.prepare_cached(UPSERT).map_err(failed)?;
        stmt.execute((key, value)).map_err(failed)?;
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        let mut stmt = self.conn.prepare_cached(DELETE).map_err(failed)?;
        stmt.execute([key]).map_err(failed)?;
        Ok(())
    }
}
