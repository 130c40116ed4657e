//! redb (a pure-Rust copy-on-write B-tree) through the `redb` crate.
//!
//! The store is one file, `kvperf.redb`, holding one table `kvperf` of
//! byte keys and byte values, shared by every runner thread. All YCSB
//! tables share it, as in the RocksDB engine: the `table` argument is
//! ignored. A YCSB record is one value in the encoding of YCSB's RocksDB
//! binding ([`super::record::codec`]).
//!
//! Every operation is its own redb transaction: reads and scans a read
//! transaction, writes a write transaction committed at once. `update`
//! reads, merges and writes the record inside one write transaction, so it
//! is atomic. redb runs one write transaction at a time, so writers wait for
//! each other; that is redb's design, and kvperf keeps it. Readers never wait.
//!
//! Durability: by default commits use `Durability::None`, the cheapest mode
//! that is still crash-consistent (after a crash redb reopens at the last
//! durable commit, intact), and the first commit a second or more after the
//! last durable one uses `Durability::Immediate` (`durable_interval_ms`).
//! A non-durable commit leaves its pages in redb's write buffer: without
//! the periodic durable commits the write I/O of a whole run would wait for
//! `close` (outside the measured window) and everything since the load would
//! be lost on a crash. Even so this is weaker than the other engines'
//! defaults: up to a second of commits is lost on a crash of kvperf itself,
//! not only of the machine (redb has no "written to the OS, not synced"
//! mode). The commit that is made immediate pays the write-out and the
//! fsync, which shows in the latency tail, as SQLite's checkpoints do.
//! `settle` and `close` make everything durable by committing an empty
//! transaction with `Durability::Immediate`. `durability=immediate` (redb's
//! own default) fsyncs every commit; `durable_interval_ms=0` is plain
//! `Durability::None`. Pages freed by non-durable commits are reused only
//! after a durable one, so redb's file grows under updates (compact shrinks
//! it).
//!
//! The db_bench cursor is a redb range over a read transaction's snapshot;
//! a `fresh` seek takes a new snapshot, another seek reuses the old one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::Instant;

use anyhow::Context;
use redb::{
    AccessGuard, Database, Durability, Range, ReadOnlyTable, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableDefinition, WriteTransaction,
};

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
    name: "redb",
    about: "embedded redb (pure-Rust copy-on-write B-tree) via the redb crate",
    feature: "redb",
    store: StoreKind::Directory { owns, dirs: None },
    capabilities: Capabilities {
        // Commits write the tree; nothing runs after them.
        background_work: false,
        // Database::compact.
        compact: true,
        events: EventSupport::Unavailable("redb runs no background work: a commit writes (and, when durable, syncs) in the committing client"),
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "cache_size", default: "1073741824", help: "page cache bytes (redb's default: 1 GiB)" },
        EngineOption { name: "durability", default: "none", help: "per commit: none (durable at the next immediate commit) or immediate (fsync every commit)" },
        EngineOption { name: "durable_interval_ms", default: "1000", help: "with durability=none, the first commit after this many ms since the last immediate one is immediate (bounds lost commits, lets redb reuse freed pages); 0 = only at settle and close" },
        EngineOption { name: "two_phase_commit", default: "false", help: "commit in two fsync phases (redb's hardening against crafted crashes)" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

const FILE: &str = "kvperf.redb";
pub const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kvperf");

fn owns(name: &str) -> bool {
    name == FILE
}

/// The redb crate's version, read from Cargo.lock at build time.
pub const REDB_VERSION: &str = env!("KVPERF_REDB_VERSION");

const MAX_MEMORY_OPTION: u64 = 1 << 40;

pub(crate) struct RedbOptions {
    cache_size: u64,
    durability: Durability,
    /// With `Durability::None`: a commit this long after the last
    /// immediate one is immediate; 0 = never.
    durable_interval_ms: u64,
    two_phase_commit: bool,
    effective: BTreeMap<String, String>,
}

impl RedbOptions {
    pub(crate) fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        Ok(Self {
            cache_size: v.u64_at_most("cache_size", MAX_MEMORY_OPTION)?,
            durability: match v.choice("durability", &["none", "immediate"])?.as_str() {
                "immediate" => Durability::Immediate,
                _ => Durability::None,
            },
            durable_interval_ms: v.u64("durable_interval_ms")?,
            two_phase_commit: v.bool("two_phase_commit")?,
            effective: v.effective(),
        })
    }
}

/// `--cache_size` sets redb's cache, `--sync` its durability (immediate, or
/// none). redb has no compression, filters, log, background jobs,
/// statistics dump or direct I/O, so those flags are honoured only when they
/// ask for nothing (`--compression_type=none`, `--disable_wal=0`...).
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
            "durability",
            if sync { "immediate" } else { "none" },
        );
        honoured.push("sync");
    }
    flags.not_honoured(&honoured)
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<RedbEngine> {
    let dir = opts.dir()?;
    let options = RedbOptions::from_properties(opts.properties)?;
    // A fresh store was emptied by store::prepare.
    let path = dir.join(FILE);
    let mut builder = Database::builder();
    builder.set_cache_size(options.cache_size as usize);
    let context = || format!("cannot open redb database '{}'", path.display());
    let db = if opts.mode == OpenMode::Existing {
        builder.open(&path)
    } else {
        builder.create(&path)
    }
    .with_context(context)?;
    // Create the table (durably) so that read transactions find it.
    let txn = db.begin_write().with_context(context)?;
    txn.open_table(TABLE).with_context(context)?;
    txn.commit().with_context(context)?;
    Ok(RedbEngine {
        db: RwLock::new(db),
        opened: Instant::now(),
        last_durable_ms: AtomicU64::new(0),
        dir: dir.to_path_buf(),
        options,
    })
}

pub struct RedbEngine {
    /// Shared by the workers; `compact` needs it exclusively.
    db: RwLock<Database>,
    /// When the engine was opened, and the last immediate commit was begun
    /// (ms after that), for `durable_interval_ms`.
    opened: Instant,
    last_durable_ms: AtomicU64,
    dir: PathBuf,
    options: RedbOptions,
}

fn failed(err: impl std::fmt::Display) -> OpError {
    OpError::failed(format!("redb: {err}"))
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

impl RedbEngine {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database kvperf's clients share (read-locked: `compact` takes it).
    pub fn db(&self) -> Result<RwLockReadGuard<'_, Database>, OpError> {
        self.db
            .read()
            .map_err(|_| OpError::Failed("redb: a thread panicked holding the database".into()))
    }

    fn begin_write(&self) -> Result<WriteTransaction, OpError> {
        let mut txn = self.db()?.begin_write().map_err(failed)?;
        txn.set_durability(self.next_durability()).map_err(failed)?;
        txn.set_two_phase_commit(self.options.two_phase_commit);
        Ok(txn)
    }

    /// The durability of the write transaction about to begin: the
    /// configured one, or immediate when `durable_interval_ms` is due.
    pub fn next_durability(&self) -> Durability {
        match self.options.durability {
            Durability::None if self.durable_now() => Durability::Immediate,
            d => d,
        }
    }

    pub fn two_phase_commit(&self) -> bool {
        self.options.two_phase_commit
    }

    /// Whether this commit is the periodic immediate one: the first to
    /// begin `durable_interval_ms` after the last (one thread wins).
    fn durable_now(&self) -> bool {
        let interval = self.options.durable_interval_ms;
        if interval == 0 {
            return false;
        }
        let now = self.opened.elapsed().as_millis() as u64;
        let last = self.last_durable_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= interval
            && self
                .last_durable_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    fn read_table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>, OpError> {
        let txn = self.db()?.begin_read().map_err(failed)?;
        txn.open_table(TABLE).map_err(failed)
    }

    /// Makes every commit durable: an empty commit with immediate durability.
    fn make_durable(&self) -> anyhow::Result<()> {
        let db = self.db().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let mut txn = db.begin_write().context("redb write transaction failed")?;
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_durable_ms.store(now, Ordering::Relaxed);
        txn.set_durability(Durability::Immediate)
            .context("redb durability")?;
        txn.commit().context("redb durable commit failed")
    }

    fn records(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(RedbWorker {
            engine: self,
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(RedbKvWorker {
            engine: self,
            current: None,
            range: None,
            table: None,
        }))
    }
}

impl Engine for RedbEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(
            &SPEC,
            format!("redb {REDB_VERSION}"),
            &self.options.effective,
        )
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let mut stats = BTreeMap::new();
        let Ok(table) = self.read_table() else {
            return stats;
        };
        if let Ok(n) = table.len() {
            stats.insert("entries".into(), n);
        }
        if let Ok(s) = table.stats() {
            stats.insert("tree-height".into(), u64::from(s.tree_height()));
            stats.insert("leaf-pages".into(), s.leaf_pages());
            stats.insert("branch-pages".into(), s.branch_pages());
            stats.insert("stored-bytes".into(), s.stored_bytes());
            stats.insert("metadata-bytes".into(), s.metadata_bytes());
            stats.insert("fragmented-bytes".into(), s.fragmented_bytes());
        }
        stats
    }

    /// Nothing runs in the background. With `durability=none`, commits an
    /// empty transaction with immediate durability, which makes every
    /// earlier commit durable; with `immediate` nothing is pending.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        match self.options.durability {
            Durability::Immediate => Ok(()),
            _ => self.make_durable(),
        }
    }

    /// `Database::compact` until it finds nothing more to do (it needs the
    /// database to itself: no transaction may be open).
    fn compact(&self) -> anyhow::Result<()> {
        self.make_durable()?;
        let mut db = self
            .db
            .write()
            .map_err(|_| anyhow::anyhow!("redb: a thread panicked holding the database"))?;
        for _ in 0..1000 {
            if !db.compact().context("redb compaction failed")? {
                return Ok(());
            }
        }
        Ok(())
    }

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    /// Makes every commit durable; the file is closed when the engine is
    /// dropped (kvperf reads `stats` after `close`). Calling it twice does
    /// no harm.
    fn close(&self) -> anyhow::Result<()> {
        self.make_durable()
    }
}

pub struct RedbWorker<'a> {
    engine: &'a RedbEngine,
    encoded: Vec<u8>,
    scratch: Record,
}

impl RedbWorker<'_> {
    /// Writes the encoded record under `key` in a transaction of its own.
    fn write_encoded(&self, key: &[u8]) -> OpResult {
        let txn = self.engine.begin_write()?;
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            table.insert(key, &self.encoded[..]).map_err(failed)?;
        }
        txn.commit().map_err(failed)
    }
}

super::blocking_records!(RedbWorker<'_>);

impl RedbWorker<'_> {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        let table = self.engine.read_table()?;
        match table.get(key).map_err(failed)? {
            None => Err(OpError::NotFound),
            Some(value) if codec::decode(value.value(), fields, out) => Ok(()),
            Some(_) => Err(OpError::Failed(CORRUPT.into())),
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
        let table = self.engine.read_table()?;
        for entry in table.range(start_key..).map_err(failed)?.take(count) {
            let (_, value) = entry.map_err(failed)?;
            if !codec::decode(value.value(), fields, out.next_slot()) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
        }
        Ok(())
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let txn = self.engine.begin_write()?;
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            let merged = match table.get(key).map_err(failed)? {
                None => None,
                Some(stored) => Some(codec::merge(
                    stored.value(),
                    values,
                    &mut self.scratch,
                    &mut self.encoded,
                )),
            };
            match merged {
                None => {
                    drop(table);
                    txn.abort().map_err(failed)?;
                    return Err(OpError::NotFound);
                }
                Some(false) => {
                    drop(table);
                    txn.abort().map_err(failed)?;
                    return Err(OpError::Failed(CORRUPT.into()));
                }
                Some(true) => {
                    table.insert(key, &self.encoded[..]).map_err(failed)?;
                }
            }
        }
        txn.commit().map_err(failed)
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        codec::encode(values, &mut self.encoded);
        self.write_encoded(key)
    }

    /// Deleting a missing key is Ok (RocksDB's behaviour).
    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        let txn = self.engine.begin_write()?;
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            table.remove(key).map_err(failed)?;
        }
        txn.commit().map_err(failed)
    }
}

type Guard = AccessGuard<'static, &'static [u8]>;

/// Raw keys and values for `kvperf bench`, as db_bench stores them.
pub struct RedbKvWorker<'a> {
    engine: &'a RedbEngine,
    // Dropped in this order: the entry, the range, then the snapshot.
    current: Option<(Guard, Guard)>,
    range: Option<Range<'static, &'static [u8], &'static [u8]>>,
    table: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

impl RedbKvWorker<'_> {
    fn step(&mut self) -> Result<bool, OpError> {
        self.current = match self.range.as_mut().and_then(Iterator::next) {
            Some(entry) => Some(entry.map_err(failed)?),
            None => None,
        };
        Ok(self.current.is_some())
    }
}

super::blocking_raw!(RedbKvWorker<'_>);

impl RedbKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let table = self.engine.read_table()?;
        match table.get(key).map_err(failed)? {
            Some(value) => Ok(value.value().len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let txn = self.engine.begin_write()?;
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            table.insert(key, value).map_err(failed)?;
        }
        txn.commit().map_err(failed)
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        let txn = self.engine.begin_write()?;
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            table.remove(key).map_err(failed)?;
        }
        txn.commit().map_err(failed)
    }

    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError> {
        self.current = None;
        self.range = None;
        if fresh || self.table.is_none() {
            self.table = None;
            self.table = Some(self.engine.read_table()?);
        }
        let Some(table) = self.table.as_ref() else {
            return Ok(false);
        };
        let range = match target {
            Some(key) => table.range(key..),
            None => table.range::<&[u8]>(..),
        }
        .map_err(failed)?;
        self.range = Some(range);
        self.step()
    }

    fn next(&mut self) -> Result<bool, OpError> {
        if self.current.is_none() {
            return Ok(false);
        }
        self.step()
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.current.as_ref().map(|(k, v)| (k.value(), v.value()))
    }
}
