//! LMDB through the `heed` crate (which bundles LMDB's C source; see
//! `info().version`).
//!
//! The store is one LMDB environment in the data directory (`data.mdb` and
//! `lock.mdb`), shared by every runner thread; its unnamed database holds
//! all records. All YCSB tables share it, as in the RocksDB engine: the
//! `table` argument is ignored. A YCSB record is one value in the encoding of
//! YCSB's RocksDB binding ([`super::record::codec`]).
//!
//! Every operation is its own LMDB transaction: reads and scans a read
//! transaction, writes a write transaction committed at once. `update`
//! reads, merges and writes the record inside one write transaction, so it
//! is atomic. LMDB allows one write transaction at a time, so writers wait
//! for each other; that is LMDB's design, and kvperf keeps it. Readers never
//! wait. Read transactions use LMDB's thread-local reader slots (heed's
//! `WithTls`), so a thread reuses its slot; `max_readers` must cover the
//! runner threads.
//!
//! Durability: by default the environment is opened with `MDB_NOSYNC`
//! (`lmdb.sync=false`), like RocksDB's default of not syncing every write:
//! a commit is in the OS page cache when it returns and survives a crash of
//! kvperf, but not of the machine (LMDB warns that an OS crash with
//! `MDB_NOSYNC` may even corrupt the store). `settle` and `close` sync the
//! environment (`mdb_env_sync(force)`). `lmdb.sync=true` syncs every commit.
//!
//! The db_bench cursor copies entries out of short read transactions in
//! growing batches (1, then 16 up to 1024 entries), so a cursor pins no
//! snapshot between calls; a batch is one consistent snapshot.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use anyhow::Context;
use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions};

use super::kv::{self, KvBatch};
use super::options::{set_unless_given, OptionValues};
use super::record::codec;
use super::{
    ready_client, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineInfo, EngineOption,
    EngineSpec, EventSupport, OpError, OpResult, OpenOptions, Operations, Record, ScanResults,
    SetupFuture, StoreKind, EMBEDDED,
};
use crate::error::InputError;
use crate::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "lmdb",
    about: "embedded LMDB (copy-on-write B+tree, mmap) via heed",
    feature: "lmdb",
    store: StoreKind::Directory { owns, dirs: None },
    capabilities: Capabilities {
        // Commits write the B+tree in place; nothing runs after them.
        background_work: false,
        // LMDB can only compact into a copy (mdb_env_copy2), not in place.
        compact: false,
        // Its lock table lets processes share the environment.
        shared_store: true,
        events: EventSupport::Unavailable("LMDB runs no background work: the committing client writes and syncs its pages"),
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "map_size", default: "274877906944", help: "bytes of address space reserved for the store (its maximum size; sparse, not allocated): 256 GiB" },
        EngineOption { name: "max_readers", default: "512", help: "reader slots (one per thread that reads); must be at least the thread count" },
        EngineOption { name: "sync", default: "false", help: "fsync every commit; false = MDB_NOSYNC (synced at settle and close)" },
        EngineOption { name: "write_map", default: "false", help: "MDB_WRITEMAP: write through a writable memory map" },
        EngineOption { name: "read_ahead", default: "true", help: "OS read-ahead on the map; false = MDB_NORDAHEAD" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

/// LMDB's two files in a (non-`MDB_NOSUBDIR`) environment directory.
fn owns(name: &str) -> bool {
    name == "data.mdb" || name == "lock.mdb"
}

/// The heed crate's version, read from Cargo.lock at build time.
pub const HEED_VERSION: &str = env!("KVPERF_HEED_VERSION");

/// The largest map kvperf asks for: 64 TiB (x86-64 has 128 TiB of user space).
const MAX_MAP_SIZE: u64 = 1 << 46;

pub(crate) struct LmdbOptions {
    map_size: usize,
    max_readers: u32,
    sync: bool,
    write_map: bool,
    read_ahead: bool,
    effective: BTreeMap<String, String>,
}

/// Checks the options and, when the command knows how many clients it
/// starts, that each has a reader slot: before a `--fresh` empties the
/// store (its first client refused it only after).
pub(crate) fn check_options(props: &Properties, clients: Option<usize>) -> Result<(), InputError> {
    let options = LmdbOptions::from_properties(props)?;
    clients.map_or(Ok(()), |n| options.check_readers(n))
}

impl LmdbOptions {
    fn check_readers(&self, threads: usize) -> Result<(), InputError> {
        if threads > self.max_readers as usize {
            return Err(InputError::Invalid(format!(
                "lmdb.max_readers={} is fewer than the {threads} threads; raise it",
                self.max_readers
            )));
        }
        Ok(())
    }

    pub(crate) fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let map_size = v.u64_at_most("map_size", MAX_MAP_SIZE)?;
        // LMDB needs a multiple of the OS page size: round up.
        let page = page_size();
        let map_size = map_size.max(page).div_ceil(page) * page;
        let max_readers = v.u64_at_most("max_readers", 65_536)?;
        if max_readers == 0 {
            return Err(InputError::property(
                "lmdb.max_readers",
                "0 reader slots leave no thread able to read",
            ));
        }
        let mut effective = v.effective();
        effective.insert("map_size".into(), map_size.to_string());
        Ok(Self {
            map_size: map_size as usize,
            max_readers: max_readers as u32,
            sync: v.bool("sync")?,
            write_map: v.bool("write_map")?,
            read_ahead: v.bool("read_ahead")?,
            effective,
        })
    }

    fn flags(&self) -> EnvFlags {
        let mut flags = EnvFlags::empty();
        if !self.sync {
            flags |= EnvFlags::NO_SYNC;
        }
        if self.write_map {
            flags |= EnvFlags::WRITE_MAP;
        }
        if !self.read_ahead {
            flags |= EnvFlags::NO_READ_AHEAD;
        }
        flags
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

/// `--sync` maps onto `lmdb.sync`. LMDB has no cache of its own (it reads
/// through the OS page cache), no compression, no filters, no log and no
/// background jobs, so the other flags are honoured only when they ask for
/// nothing (`--compression_type=none`, `--bloom_bits=0`, `--disable_wal=0`...).
fn map_db_bench_flags(flags: &DbBenchFlags, props: &mut Properties) -> Vec<&'static str> {
    let mut honoured = flags.asking_for_nothing();
    if let Some(sync) = flags.sync {
        set_unless_given(props, &SPEC, "sync", &sync.to_string());
        honoured.push("sync");
    }
    flags.not_honoured(&honoured)
}

pub type Db = Database<'static, Bytes, Bytes>;

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<LmdbEngine> {
    let dir = opts.dir()?;
    let options = LmdbOptions::from_properties(opts.properties)?;
    // A fresh store was emptied by store::prepare.
    let mut env_options = EnvOpenOptions::new();
    env_options
        .map_size(options.map_size)
        .max_readers(options.max_readers);
    // SAFETY: NO_SYNC only weakens durability across an OS crash (documented
    // above); WRITE_MAP and NO_READ_AHEAD are safe. kvperf opens the
    // environment once per process and never modifies its files otherwise.
    let env: Env = unsafe {
        env_options.flags(options.flags());
        env_options.open(dir)
    }
    .with_context(|| format!("cannot open LMDB in '{}'", dir.display()))?;
    let wtxn = env.write_txn().context("LMDB write transaction failed")?;
    let created = env
        .create_databases_and_commit(wtxn, |opener, wtxn| {
            opener
                .create_database::<Bytes, Bytes>(wtxn, None)
                .map(CommitOrAbort::<_, ()>::Commit)
        })
        .context("cannot open LMDB's unnamed database")?;
    let CommitOrAbort::Commit(db) = created else {
        anyhow::bail!("opening LMDB's unnamed database was aborted");
    };
    let v = heed::lmdb_version();
    Ok(LmdbEngine {
        env,
        db,
        dir: dir.to_path_buf(),
        version: format!(
            "LMDB {}.{}.{} (heed {HEED_VERSION})",
            v.major, v.minor, v.patch
        ),
        options,
    })
}

pub struct LmdbEngine {
    env: Env,
    db: Db,
    dir: PathBuf,
    version: String,
    options: LmdbOptions,
}

impl LmdbEngine {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The environment and its unnamed database, as kvperf's clients use them.
    pub fn env(&self) -> &Env {
        &self.env
    }

    pub fn database(&self) -> Db {
        self.db
    }

    fn check_readers(&self, thread: ClientSlot) -> anyhow::Result<()> {
        Ok(self.options.check_readers(thread.count)?)
    }

    fn records(&self, thread: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        self.check_readers(thread)?;
        Ok(Box::new(LmdbWorker {
            env: &self.env,
            db: self.db,
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, thread: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        self.check_readers(thread)?;
        Ok(Box::new(LmdbKvWorker {
            env: &self.env,
            db: self.db,
            cursor: KvBatch::default(),
        }))
    }
}

impl Engine for LmdbEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(&SPEC, self.version.clone(), &self.options.effective)
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let stat = self.env.unnamed_database_stat();
        let info = self.env.info();
        BTreeMap::from([
            ("entries".to_string(), stat.entries as u64),
            ("depth".to_string(), u64::from(stat.depth)),
            ("branch-pages".to_string(), stat.branch_pages as u64),
            ("leaf-pages".to_string(), stat.leaf_pages as u64),
            ("overflow-pages".to_string(), stat.overflow_pages as u64),
            ("page-size".to_string(), u64::from(stat.page_size)),
            ("last-page-number".to_string(), info.last_page_number as u64),
            ("map-size".to_string(), info.map_size as u64),
            (
                "readers-used".to_string(),
                u64::from(info.number_of_readers),
            ),
        ])
    }

    /// Nothing runs in the background: settle only syncs (`mdb_env_sync`
    /// with force), which makes `MDB_NOSYNC` commits durable.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        self.env.force_sync().context("LMDB sync failed")
    }

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    /// Syncs; the environment itself is closed when the engine is dropped.
    fn close(&self) -> anyhow::Result<()> {
        self.env.force_sync().context("LMDB sync failed")
    }
}

fn failed(env: &Env, err: heed::Error) -> OpError {
    OpError::failed(format!("LMDB: {err}{}", why_eio(env, &err)))
}

/// LMDB returns EIO for a write the filesystem cut short (`mdb_page_flush`:
/// "short write, filesystem full?"), where a write refused outright gives
/// ENOSPC. When the filesystem holding the store has no room left (under
/// 1 MiB available), that is what the EIO was, and it is named; otherwise
/// the EIO stands as a device's error.
fn why_eio(env: &Env, err: &heed::Error) -> String {
    let heed::Error::Io(io) = err else {
        return String::new();
    };
    if io.raw_os_error() != Some(libc::EIO) {
        return String::new();
    }
    match available_bytes(env.path()) {
        Some(free) if free < 1 << 20 => format!(
            " (a write cut short: the disk is full, {free} bytes available on the filesystem of '{}')",
            env.path().display()
        ),
        _ => String::new(),
    }
}

/// Bytes an unprivileged write may still take on the filesystem of `path`.
fn available_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data, for which all zeroes is a value.
    let mut fs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct statvfs fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut fs) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    Some(fs.f_bavail as u64 * fs.f_frsize as u64)
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

pub struct LmdbWorker<'a> {
    env: &'a Env,
    db: Db,
    encoded: Vec<u8>,
    scratch: Record,
}

impl LmdbWorker<'_> {
    /// Writes the encoded record under `key` in a transaction of its own.
    fn write_encoded(&self, key: &[u8]) -> OpResult {
        let mut wtxn = self.env.write_txn().map_err(|e| failed(self.env, e))?;
        self.db
            .put(&mut wtxn, key, &self.encoded)
            .map_err(|e| failed(self.env, e))?;
        wtxn.commit().map_err(|e| failed(self.env, e))
    }
}

super::blocking_records!(LmdbWorker<'_>);

impl LmdbWorker<'_> {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        let rtxn = self.env.read_txn().map_err(|e| failed(self.env, e))?;
        match self.db.get(&rtxn, key).map_err(|e| failed(self.env, e))? {
            None => Err(OpError::NotFound),
            Some(value) if codec::decode(value, fields, out) => Ok(()),
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
        let rtxn = self.env.read_txn().map_err(|e| failed(self.env, e))?;
        let range = (Bound::Included(start_key), Bound::Unbounded);
        let iter = self
            .db
            .range(&rtxn, &range)
            .map_err(|e| failed(self.env, e))?;
        for entry in iter.take(count) {
            let (_, value) = entry.map_err(|e| failed(self.env, e))?;
            if !codec::decode(value, fields, out.next_slot()) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
        }
        Ok(())
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let mut wtxn = self.env.write_txn().map_err(|e| failed(self.env, e))?;
        let merged = match self.db.get(&wtxn, key).map_err(|e| failed(self.env, e))? {
            None => return Err(OpError::NotFound),
            Some(stored) => codec::merge(stored, values, &mut self.scratch, &mut self.encoded),
        };
        if !merged {
            return Err(OpError::Failed(CORRUPT.into()));
        }
        self.db
            .put(&mut wtxn, key, &self.encoded)
            .map_err(|e| failed(self.env, e))?;
        wtxn.commit().map_err(|e| failed(self.env, e))
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        codec::encode(values, &mut self.encoded);
        self.write_encoded(key)
    }

    /// Deleting a missing key is Ok (RocksDB's behaviour).
    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        let mut wtxn = self.env.write_txn().map_err(|e| failed(self.env, e))?;
        self.db
            .delete(&mut wtxn, key)
            .map_err(|e| failed(self.env, e))?;
        wtxn.commit().map_err(|e| failed(self.env, e))
    }
}

/// Raw keys and values for `kvperf bench`, as db_bench stores them.
pub struct LmdbKvWorker<'a> {
    env: &'a Env,
    db: Db,
    cursor: KvBatch,
}

impl LmdbKvWorker<'_> {
    fn fill(&mut self, from: Bound<&[u8]>) -> Result<bool, OpError> {
        let asked = self.cursor.start_fill();
        let rtxn = self.env.read_txn().map_err(|e| failed(self.env, e))?;
        let range = (from, Bound::Unbounded);
        let iter = self
            .db
            .range(&rtxn, &range)
            .map_err(|e| failed(self.env, e))?;
        for entry in iter.take(asked) {
            let (key, value) = entry.map_err(|e| failed(self.env, e))?;
            self.cursor.push(key, value);
        }
        Ok(self.cursor.end_fill(asked))
    }
}

super::blocking_raw!(LmdbKvWorker<'_>);

impl LmdbKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let rtxn = self.env.read_txn().map_err(|e| failed(self.env, e))?;
        match self.db.get(&rtxn, key).map_err(|e| failed(self.env, e))? {
            Some(value) => Ok(value.len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let mut wtxn = self.env.write_txn().map_err(|e| failed(self.env, e))?;
        self.db
            .put(&mut wtxn, key, value)
            .map_err(|e| failed(self.env, e))?;
        wtxn.commit().map_err(|e| failed(self.env, e))
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        let mut wtxn = self.env.write_txn().map_err(|e| failed(self.env, e))?;
        self.db
            .delete(&mut wtxn, key)
            .map_err(|e| failed(self.env, e))?;
        wtxn.commit().map_err(|e| failed(self.env, e))
    }

    /// Every seek reads a fresh snapshot (no cursor is kept open), so
    /// `fresh` changes nothing.
    fn seek(&mut self, target: Option<&[u8]>, _fresh: bool) -> Result<bool, OpError> {
        self.cursor.reset();
        self.fill(target.map_or(Bound::Unbounded, Bound::Included))
    }

    fn next(&mut self) -> Result<bool, OpError> {
        kv::next_entry(
            self,
            |w| &mut w.cursor,
            |w, after| w.fill(Bound::Excluded(after)),
        )
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.cursor.current()
    }
}
