//! fjall (a pure-Rust LSM tree) through the `fjall` crate.
//!
//! The store is one fjall database in the subdirectory `fjall/` of the data
//! directory, with one keyspace, `kvperf`, shared by every runner thread.
//! All YCSB tables share it, as in the RocksDB engine: the `table` argument
//! is ignored. A YCSB record is one value in the encoding of YCSB's RocksDB
//! binding ([`super::record::codec`]).
//!
//! The database is opened as fjall's `SingleWriterTxDatabase`. `update`
//! reads, merges and writes the record inside one of its write transactions
//! (which fjall runs one at a time), so concurrent updates of a record never
//! lose each other's fields. `insert`, `delete` and db_bench's puts are
//! fjall's plain single writes (each atomic; fjall's journal orders them),
//! which do not wait for a running update transaction: an insert of the very
//! key being updated could be overwritten by the update's merge. YCSB never
//! does that (it inserts new keys); the plain path is fjall's write cost.
//!
//! Durability: every write goes to fjall's journal and is flushed to the OS
//! before it returns (`persist=buffer`, fjall's default), like RocksDB's
//! default WAL without sync: it survives a crash of kvperf, not of the
//! machine. `persist=sync_data` or `sync_all` fsyncs the journal after every
//! write. `settle` and `close` fsync it (and `close` flushes the memtable,
//! as the RocksDB engine does, so a following run starts from tables).
//!
//! Background work: fjall's worker threads flush memtables and compact.
//! `settle` waits until no flush is queued and no compaction runs for half a
//! second in a row (fjall has no "wait for compactions" call; this polls its
//! counters), after rotating and flushing the memtable when asked to flush.
//! `compact` is fjall's `major_compact` (public but `#[doc(hidden)]` in
//! fjall 3, as are the counters and `rotate_memtable_and_wait`).
//!
//! Keyspace options (`memtable_size`, `block_size`, `compression`,
//! `bloom_bits`) are stored with the keyspace when it is created (a fresh
//! load); opening an existing store keeps the stored ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ::fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
};
use ::fjall::{
    CompressionType, Iter, Keyspace, KeyspaceCreateOptions, PersistMode, Readable,
    SingleWriterTxDatabase, SingleWriterTxKeyspace, Snapshot, UserKey, UserValue,
};
use anyhow::Context;

use super::options::{set_unless_given, OptionValues};
use super::record::codec;
use super::{
    ready_client, Activity, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineDirs, EngineInfo,
    EngineOption, EngineSpec, EventKind, EventSupport, OpError, OpResult, OpenOptions, Operations,
    Record, ScanResults, SetupFuture, StoreKind, EMBEDDED,
};
use crate::error::InputError;
use crate::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "fjall",
    about: "embedded fjall (pure-Rust LSM tree) via the fjall crate",
    feature: "fjall",
    store: StoreKind::Directory {
        owns,
        dirs: Some(EngineDirs {
            at: &[SUBDIR],
            holds,
        }),
    },
    capabilities: Capabilities {
        // Worker threads flush memtables and compact tables.
        background_work: true,
        // Keyspace::major_compact.
        compact: true,
        // The database's counters of queued flushes and running and finished
        // compactions (fjall's experimental stats API).
        events: EventSupport::Reports(&[EventKind::Flush, EventKind::Compaction]),
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "cache_size", default: "33554432", help: "block cache bytes (fjall's default: 32 MiB)" },
        EngineOption { name: "persist", default: "buffer", help: "per write: buffer (journal flushed to the OS, no fsync), sync_data (fdatasync) or sync_all (fsync)" },
        EngineOption { name: "worker_threads", default: "auto", help: "flush and compaction threads; auto = fjall's default (cores, at most 4)" },
        EngineOption { name: "max_journaling_size", default: "536870912", help: "journal bytes before memtables are flushed to free it (at least 64 MiB)" },
        EngineOption { name: "memtable_size", default: "67108864", help: "memtable bytes before a flush; fixed when the keyspace is created" },
        EngineOption { name: "block_size", default: "4096", help: "data block bytes; fixed when the keyspace is created" },
        EngineOption { name: "compression", default: "default", help: "default (fjall's: none on L0 and L1, lz4 below), none or lz4; fixed when the keyspace is created" },
        EngineOption { name: "bloom_bits", default: "default", help: "default (fjall's: 0.01% false positives on L0, 10 bits per key below) or bits per key, 0 = no filter; fixed when the keyspace is created" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

/// The subdirectory holding fjall's database.
const SUBDIR: &str = "fjall";
const KEYSPACE: &str = "kvperf";

fn owns(name: &str) -> bool {
    name == SUBDIR
}

/// The names fjall 3 and lsm-tree 3 make inside `fjall/`, at any depth:
/// `version`, `lock`, journals `N.jnl`, `keyspaces/N/` with `current`,
/// versions `vN`, `tables/N` and `blobs/N`, and tempfile's `.tmp*` of an
/// atomic rewrite. Anything else there is a user's.
fn holds(name: &str) -> bool {
    const NAMES: [&str; 6] = ["version", "lock", "keyspaces", "current", "tables", "blobs"];
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    NAMES.contains(&name)
        || number(name)
        || name.strip_suffix(".jnl").is_some_and(number)
        || name.strip_prefix('v').is_some_and(number)
        || name.starts_with(".tmp")
}

/// The fjall and lsm-tree crates' versions, read from Cargo.lock at build time.
pub const FJALL_VERSION: &str = env!("KVPERF_FJALL_VERSION");
pub const LSM_TREE_VERSION: &str = env!("KVPERF_LSM_TREE_VERSION");

const MAX_MEMORY_OPTION: u64 = 1 << 40;
/// lsm-tree's largest data block (`use_data_block_size` asserts it).
const MAX_BLOCK_SIZE: u64 = 4 << 20;

pub(crate) struct FjallOptions {
    cache_size: u64,
    persist: Option<PersistMode>,
    worker_threads: Option<usize>,
    max_journaling_size: u64,
    memtable_size: u64,
    block_size: u32,
    compression: Option<CompressionType>,
    /// None: fjall's default filter policy; Some(0.0): no filter.
    bloom_bits: Option<f32>,
    effective: BTreeMap<String, String>,
}

impl FjallOptions {
    pub(crate) fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let persist = match v
            .choice("persist", &["buffer", "sync_data", "sync_all"])?
            .as_str()
        {
            "sync_data" => Some(PersistMode::SyncData),
            "sync_all" => Some(PersistMode::SyncAll),
            _ => None,
        };
        let worker_threads = match v.text("worker_threads").as_str() {
            "auto" => None,
            _ => match v.u64_at_most("worker_threads", 1024)? {
                0 => {
                    return Err(InputError::property(
                        "fjall.worker_threads",
                        "fjall needs at least 1 worker thread (or auto)",
                    ))
                }
                n => Some(n as usize),
            },
        };
        let max_journaling_size = v.u64_at_most("max_journaling_size", MAX_MEMORY_OPTION)?;
        if max_journaling_size < 64 << 20 {
            return Err(InputError::property(
                "fjall.max_journaling_size",
                format!("{max_journaling_size} is less than fjall's minimum, 67108864 (64 MiB)"),
            ));
        }
        let block_size = v.u64_at_most("block_size", 1 << 30)?;
        if block_size < 512 {
            return Err(InputError::property(
                "fjall.block_size",
                format!("{block_size} is less than 512"),
            ));
        }
        // lsm-tree asserts it in its flush thread: a panic there left
        // fjall's close waiting for good.
        if block_size > MAX_BLOCK_SIZE {
            return Err(InputError::property(
                "fjall.block_size",
                format!("{block_size} is more than fjall's largest data block, {MAX_BLOCK_SIZE} (4 MiB)"),
            ));
        }
        let compression = match v
            .choice("compression", &["default", "none", "lz4"])?
            .as_str()
        {
            "none" => Some(CompressionType::None),
            "lz4" => Some(CompressionType::Lz4),
            _ => None,
        };
        let bloom_bits = match v.text("bloom_bits").as_str() {
            "default" => None,
            _ => {
                let bits = v.f64("bloom_bits")?;
                if !(0.0..=1000.0).contains(&bits) {
                    return Err(InputError::property(
                        "fjall.bloom_bits",
                        format!("{bits} is not from 0 to 1000 bits per key (or default)"),
                    ));
                }
                // lsm-tree truncates bits per key to a whole number: below
                // 1 its filter has 0 bits, a divisor of zero in its flush
                // thread (a panic, then a close that never returned).
                if bits > 0.0 && bits < 1.0 {
                    return Err(InputError::property(
                        "fjall.bloom_bits",
                        format!("{bits} is less than 1 bit per key, fjall's least filter; give 0 (no filter) or 1 to 1000"),
                    ));
                }
                Some(bits as f32)
            }
        };
        let mut effective = v.effective();
        if worker_threads.is_none() {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            effective.insert("worker_threads".into(), format!("auto ({})", cores.min(4)));
        }
        Ok(Self {
            cache_size: v.u64_at_most("cache_size", MAX_MEMORY_OPTION)?,
            persist,
            worker_threads,
            max_journaling_size,
            memtable_size: v.u64_at_most("memtable_size", MAX_MEMORY_OPTION)?,
            block_size: block_size as u32,
            compression,
            bloom_bits,
            effective,
        })
    }

    fn keyspace_options(&self) -> KeyspaceCreateOptions {
        let mut ks = KeyspaceCreateOptions::default()
            .max_memtable_size(self.memtable_size)
            .data_block_size_policy(BlockSizePolicy::all(self.block_size));
        if let Some(c) = self.compression {
            ks = ks.data_block_compression_policy(CompressionPolicy::all(c));
        }
        match self.bloom_bits {
            None => {}
            Some(b) if b <= 0.0 => ks = ks.filter_policy(FilterPolicy::disabled()),
            Some(b) => {
                ks = ks.filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                    BloomConstructionPolicy::BitsPerKey(b),
                )))
            }
        }
        ks
    }
}

/// Maps `--cache_size`, `--sync` (persist=sync_all), `--write_buffer_size`
/// (memtable_size), `--bloom_bits`, `--max_background_jobs` (worker threads)
/// and `--compression_type` none or lz4. fjall cannot skip its journal, has
/// no statistics dump and no direct I/O, so `--disable_wal`, `--statistics`
/// and the direct I/O flags are honoured only when they ask for nothing.
/// Flags not given keep fjall's defaults (not db_bench's).
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
            "persist",
            if sync { "sync_all" } else { "buffer" },
        );
        honoured.push("sync");
    }
    if let Some(bytes) = flags.write_buffer_size {
        set_unless_given(props, &SPEC, "memtable_size", &bytes.to_string());
        honoured.push("write_buffer_size");
    }
    if let Some(bits) = flags.bloom_bits {
        set_unless_given(props, &SPEC, "bloom_bits", &bits.max(0.0).to_string());
        honoured.push("bloom_bits");
    }
    if let Some(jobs) = flags.max_background_jobs.filter(|j| *j > 0) {
        set_unless_given(props, &SPEC, "worker_threads", &jobs.to_string());
        honoured.push("max_background_jobs");
    }
    if let Some(c) = flags.compression_type.as_deref() {
        if c == "none" || c == "lz4" {
            set_unless_given(props, &SPEC, "compression", c);
            honoured.push("compression_type");
        }
    }
    flags.not_honoured(&honoured)
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<FjallEngine> {
    let dir = opts.dir()?;
    let options = FjallOptions::from_properties(opts.properties)?;
    // A fresh store was emptied by store::prepare.
    let path = dir.join(SUBDIR);
    let mut builder = SingleWriterTxDatabase::builder(&path)
        .cache_size(options.cache_size)
        .max_journaling_size(options.max_journaling_size);
    if let Some(n) = options.worker_threads {
        builder = builder.worker_threads(n);
    }
    let context = || format!("cannot open fjall in '{}'", path.display());
    let db = builder.open().with_context(context)?;
    let keyspace = db
        .keyspace(KEYSPACE, || options.keyspace_options())
        .with_context(context)?;
    Ok(FjallEngine {
        db,
        keyspace,
        dir: dir.to_path_buf(),
        options,
    })
}

pub struct FjallEngine {
    db: SingleWriterTxDatabase,
    keyspace: SingleWriterTxKeyspace,
    dir: PathBuf,
    options: FjallOptions,
}

impl FjallEngine {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database, its keyspace and the persist mode after each write,
    /// as kvperf's clients use them.
    pub fn database(&self) -> &SingleWriterTxDatabase {
        &self.db
    }

    pub fn keyspace(&self) -> &SingleWriterTxKeyspace {
        &self.keyspace
    }

    pub fn persist_mode(&self) -> Option<PersistMode> {
        self.options.persist
    }

    fn ks(&self) -> &Keyspace {
        self.keyspace.inner()
    }

    /// Polls fjall's counters until no flush is queued and no compaction
    /// runs, ten times in a row 50 ms apart.
    fn wait_for_background_work(&self) -> anyhow::Result<()> {
        const QUIET_POLLS: u32 = 10;
        const LIMIT: Duration = Duration::from_secs(6 * 3600);
        let db = self.db.inner();
        let started = Instant::now();
        let mut quiet = 0;
        while quiet < QUIET_POLLS {
            if db.outstanding_flushes() == 0 && db.active_compactions() == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
            if started.elapsed() > LIMIT {
                anyhow::bail!("fjall's background work did not finish within 6 hours");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn records(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(FjallWorker {
            db: &self.db,
            keyspace: &self.keyspace,
            persist: self.options.persist,
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(FjallKvWorker {
            db: &self.db,
            keyspace: self.ks(),
            persist: self.options.persist,
            snapshot: None,
            iter: None,
            current: None,
        }))
    }
}

impl Engine for FjallEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(
            &SPEC,
            format!("fjall {FJALL_VERSION} (lsm-tree {LSM_TREE_VERSION})"),
            &self.options.effective,
        )
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let db = self.db.inner();
        let ks = self.ks();
        let mut stats = BTreeMap::from([
            ("approximate-len".to_string(), ks.approximate_len() as u64),
            ("table-count".to_string(), ks.table_count() as u64),
            ("l0-table-count".to_string(), ks.l0_table_count() as u64),
            ("journal-count".to_string(), db.journal_count() as u64),
            ("write-buffer-size".to_string(), db.write_buffer_size()),
            (
                "outstanding-flushes".to_string(),
                db.outstanding_flushes() as u64,
            ),
            (
                "active-compactions".to_string(),
                db.active_compactions() as u64,
            ),
            (
                "compactions-completed".to_string(),
                db.compactions_completed() as u64,
            ),
            (
                "time-compacting-us".to_string(),
                db.time_compacting().as_micros() as u64,
            ),
        ]);
        if let Ok(bytes) = db.disk_space() {
            stats.insert("disk-space".into(), bytes);
        }
        stats
    }

    /// With `flush`, rotates the memtable and waits for its flush; then
    /// waits out flushes and compactions (see the module comment) and
    /// fsyncs the journal.
    fn settle(&self, flush: bool) -> anyhow::Result<()> {
        if flush {
            self.ks()
                .rotate_memtable_and_wait()
                .context("fjall memtable flush failed")?;
        }
        self.wait_for_background_work()?;
        self.db
            .persist(PersistMode::SyncAll)
            .context("fjall journal sync failed")
    }

    /// Flushes the memtable, then compacts the whole keyspace into the last
    /// level (blocking), then waits for any follow-up work.
    fn compact(&self) -> anyhow::Result<()> {
        self.ks()
            .rotate_memtable_and_wait()
            .context("fjall memtable flush failed")?;
        self.wait_for_background_work()?;
        self.ks()
            .major_compact()
            .context("fjall major compaction failed")?;
        self.wait_for_background_work()?;
        self.db
            .persist(PersistMode::SyncAll)
            .context("fjall journal sync failed")
    }

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    /// Flushes waiting for a worker (`outstanding_flushes` is fjall's
    /// queue of flush tasks: a flush a worker has taken is in it no
    /// more, and is not seen), compactions running (`active_compactions`)
    /// and finished (`compactions_completed`): a channel's length and
    /// atomic counters, no lock.
    fn activity(&self) -> Result<Activity, String> {
        let db = self.db.inner();
        let mut a = Activity::idle();
        match db.outstanding_flushes() {
            0 => {}
            n => a.running(EventKind::Flush, "", format!("{n} queued")),
        }
        match db.active_compactions() {
            0 => {}
            1 => a.running(EventKind::Compaction, "", ""),
            n => a.running(EventKind::Compaction, "", format!("{n} running")),
        }
        a.tally(
            EventKind::Compaction,
            "",
            db.compactions_completed() as u64,
            None,
        );
        Ok(a)
    }

    /// Flushes the memtable (so the next process does not replay the
    /// journal), waits for the flush's follow-up work (so the footprint
    /// measured next is stable) and fsyncs the journal. The database is
    /// closed when the engine is dropped. Calling it twice does no harm.
    fn close(&self) -> anyhow::Result<()> {
        self.ks()
            .rotate_memtable_and_wait()
            .context("fjall memtable flush failed")?;
        self.wait_for_background_work()?;
        self.db
            .persist(PersistMode::SyncAll)
            .context("fjall journal sync failed")
    }
}

fn failed(err: ::fjall::Error) -> OpError {
    OpError::failed(format!("fjall: {err}"))
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

/// fjall (lsm-tree) panics on an empty key or one longer than 65535 bytes:
/// refuse those as failed operations instead.
fn check_key(key: &[u8]) -> OpResult {
    if key.is_empty() || key.len() > usize::from(u16::MAX) {
        return Err(OpError::failed(format!(
            "fjall: a key must be 1 to 65535 bytes, not {}",
            key.len()
        )));
    }
    Ok(())
}

fn persist(db: &SingleWriterTxDatabase, mode: Option<PersistMode>) -> OpResult {
    match mode {
        Some(mode) => db.persist(mode).map_err(failed),
        None => Ok(()),
    }
}

pub struct FjallWorker<'a> {
    db: &'a SingleWriterTxDatabase,
    keyspace: &'a SingleWriterTxKeyspace,
    persist: Option<PersistMode>,
    encoded: Vec<u8>,
    scratch: Record,
}

super::blocking_records!(FjallWorker<'_>);

impl FjallWorker<'_> {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        check_key(key)?;
        match self.keyspace.inner().get(key).map_err(failed)? {
            None => Err(OpError::NotFound),
            Some(value) if codec::decode(&value, fields, out) => Ok(()),
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
        for guard in self.keyspace.inner().range(start_key..).take(count) {
            let value = guard.value().map_err(failed)?;
            if !codec::decode(&value, fields, out.next_slot()) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
        }
        Ok(())
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        check_key(key)?;
        // One write transaction: fjall runs them one at a time.
        let mut tx = self.db.write_tx();
        let Some(stored) = tx.get(self.keyspace.inner(), key).map_err(failed)? else {
            return Err(OpError::NotFound);
        };
        if !codec::merge(&stored, values, &mut self.scratch, &mut self.encoded) {
            return Err(OpError::Failed(CORRUPT.into()));
        }
        tx.insert(self.keyspace, key, &self.encoded[..]);
        tx.commit().map_err(failed)?;
        persist(self.db, self.persist)
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        check_key(key)?;
        codec::encode(values, &mut self.encoded);
        self.keyspace
            .inner()
            .insert(key, &self.encoded[..])
            .map_err(failed)?;
        persist(self.db, self.persist)
    }

    /// Deleting a missing key is Ok (a tombstone, as in RocksDB).
    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        check_key(key)?;
        self.keyspace.inner().remove(key).map_err(failed)?;
        persist(self.db, self.persist)
    }
}

/// Raw keys and values for `kvperf bench`, as db_bench stores them. The
/// cursor is a fjall iterator over a snapshot; a `fresh` seek takes a new
/// snapshot, another seek reuses the old one.
pub struct FjallKvWorker<'a> {
    db: &'a SingleWriterTxDatabase,
    keyspace: &'a Keyspace,
    persist: Option<PersistMode>,
    snapshot: Option<Snapshot>,
    iter: Option<Iter>,
    current: Option<(UserKey, UserValue)>,
}

impl FjallKvWorker<'_> {
    fn step(&mut self) -> Result<bool, OpError> {
        self.current = match self.iter.as_mut().and_then(Iterator::next) {
            Some(guard) => Some(guard.into_inner().map_err(failed)?),
            None => None,
        };
        Ok(self.current.is_some())
    }
}

super::blocking_raw!(FjallKvWorker<'_>);

impl FjallKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        check_key(key)?;
        match self.keyspace.get(key).map_err(failed)? {
            Some(value) => Ok(value.len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        check_key(key)?;
        self.keyspace.insert(key, value).map_err(failed)?;
        persist(self.db, self.persist)
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        check_key(key)?;
        self.keyspace.remove(key).map_err(failed)?;
        persist(self.db, self.persist)
    }

    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError> {
        self.iter = None;
        self.current = None;
        if fresh || self.snapshot.is_none() {
            self.snapshot = Some(self.db.read_tx());
        }
        let Some(snapshot) = self.snapshot.as_ref() else {
            return Ok(false);
        };
        self.iter = Some(match target {
            Some(key) => snapshot.range(self.keyspace, key..),
            None => snapshot.iter(self.keyspace),
        });
        self.step()
    }

    fn next(&mut self) -> Result<bool, OpError> {
        if self.current.is_none() {
            return Ok(false);
        }
        self.step()
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.current.as_ref().map(|(k, v)| (&k[..], &v[..]))
    }
}
