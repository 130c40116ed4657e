//! RocksDB through the `rocksdb` crate (bundled RocksDB, see `kvperf --version`).
//!
//! A YCSB record is one RocksDB value in the encoding of YCSB's own RocksDB
//! binding (see [`super::record::codec`]); `update` reads the record, merges
//! the new fields and writes it back, as that binding does, so figures are
//! comparable with YCSB's. All tables share the default column family.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DBRawIteratorWithThreadMode, Options, ReadOptions,
    WaitForCompactOptions, WriteOptions, DB,
};

use super::record::codec;
use super::{
    Engine, EngineInfo, EngineSpec, EngineWorker, KvWorker, OpError, OpResult, OpenOptions, Record,
    ScanResults,
};
use crate::error::InputError;
use crate::workload::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "rocksdb",
    about: "embedded RocksDB (LSM tree) via the rocksdb crate",
    uses_data_dir: true,
    option_names: &[
        "block_cache_size",
        "block_size",
        "bloom_bits",
        "compression",
        "write_buffer_size",
        "max_write_buffer_number",
        "max_background_jobs",
        "max_open_files",
        "optimize_level_style_compaction",
        "wal",
        "sync",
        "statistics",
        "cache_type",
        "auto_readahead_size",
        "options",
    ],
    open,
};

/// The version of the bundled C++ library, read from Cargo.lock at build time.
pub const ROCKSDB_VERSION: &str = env!("KVPERF_ROCKSDB_VERSION");

/// Options kvperf sets, each settable with `-p rocksdb.<name>=`.
#[derive(Debug, Clone, PartialEq)]
pub struct RocksOptions {
    pub block_cache_size: u64,
    pub block_size: u64,
    /// Bloom filter bits per key; 0 = no filter (RocksDB's default).
    pub bloom_bits: u64,
    pub compression: String,
    pub write_buffer_size: u64,
    pub max_write_buffer_number: u64,
    pub max_background_jobs: u64,
    /// -1 = keep every file open (RocksDB's default).
    pub max_open_files: i64,
    /// Memtable budget for `OptimizeLevelStyleCompaction`; 0 = not called.
    /// YCSB's RocksDB binding calls it with 512 MiB.
    pub optimize_level_style_compaction: u64,
    pub wal: bool,
    pub sync: bool,
    /// RocksDB's statistics (tickers and histograms), printed after a
    /// `kvperf bench` run like db_bench's `--statistics`.
    pub statistics: bool,
    /// Block cache kind: `lru` (kvperf's and YCSB's binding's) or
    /// `hyper_clock` (RocksDB's own default, and db_bench's).
    pub cache_type: String,
    /// ReadOptions.auto_readahead_size for iterators (RocksDB: true; db_bench: false).
    pub auto_readahead_size: bool,
    /// Any other option as a RocksDB options string
    /// (`delayed_write_rate=8388608;enable_pipelined_write=true`), applied
    /// before the options above.
    pub options: String,
}

impl RocksOptions {
    pub fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u64);
        let compression = props.string("rocksdb.compression", "snappy");
        compression_type(&compression)?;
        let max_open_files = match props.get("rocksdb.max_open_files") {
            None | Some("-1") => -1,
            Some(_) => props.u64("rocksdb.max_open_files", 0)? as i64,
        };
        Ok(Self {
            block_cache_size: props.u64("rocksdb.block_cache_size", 32 << 20)?,
            block_size: props.u64("rocksdb.block_size", 4096)?,
            bloom_bits: props.u64("rocksdb.bloom_bits", 0)?,
            compression,
            write_buffer_size: props.u64("rocksdb.write_buffer_size", 64 << 20)?,
            max_write_buffer_number: props.u64("rocksdb.max_write_buffer_number", 2)?,
            max_background_jobs: props.u64("rocksdb.max_background_jobs", cores.max(2))?,
            max_open_files,
            optimize_level_style_compaction: props
                .u64("rocksdb.optimize_level_style_compaction", 0)?,
            wal: props.bool("rocksdb.wal", true)?,
            sync: props.bool("rocksdb.sync", false)?,
            statistics: props.bool("rocksdb.statistics", false)?,
            cache_type: match props.string("rocksdb.cache_type", "lru").as_str() {
                t @ ("lru" | "hyper_clock") => t.to_string(),
                other => {
                    return Err(InputError::Invalid(format!(
                        "unknown rocksdb.cache_type '{other}'; use lru or hyper_clock"
                    )))
                }
            },
            auto_readahead_size: props.bool("rocksdb.auto_readahead_size", true)?,
            options: props.string("rocksdb.options", ""),
        })
    }

    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: String| m.insert(k.to_string(), v);
        put("block_cache_size", self.block_cache_size.to_string());
        put("block_size", self.block_size.to_string());
        put("bloom_bits", self.bloom_bits.to_string());
        put("compression", self.compression.clone());
        put("write_buffer_size", self.write_buffer_size.to_string());
        put(
            "max_write_buffer_number",
            self.max_write_buffer_number.to_string(),
        );
        put("max_background_jobs", self.max_background_jobs.to_string());
        put("max_open_files", self.max_open_files.to_string());
        put(
            "optimize_level_style_compaction",
            self.optimize_level_style_compaction.to_string(),
        );
        put("wal", self.wal.to_string());
        put("sync", self.sync.to_string());
        put("statistics", self.statistics.to_string());
        put("cache_type", self.cache_type.clone());
        put("auto_readahead_size", self.auto_readahead_size.to_string());
        put("options", self.options.clone());
        m
    }

    /// RocksDB `Options` for these settings (create_if_missing on).
    pub fn db_options(&self) -> Result<Options, InputError> {
        let mut opts = Options::default();
        if !self.options.is_empty() {
            opts = opts.get_options_from_string(&self.options).map_err(|e| {
                InputError::Invalid(format!(
                    "rocksdb.options '{}': {}",
                    self.options,
                    e.into_string()
                ))
            })?;
        }
        opts.create_if_missing(true);
        if self.optimize_level_style_compaction > 0 {
            opts.optimize_level_style_compaction(self.optimize_level_style_compaction as usize);
        } else {
            opts.set_write_buffer_size(self.write_buffer_size as usize);
            opts.set_max_write_buffer_number(self.max_write_buffer_number as i32);
        }
        opts.set_max_background_jobs(self.max_background_jobs as i32);
        opts.set_max_open_files(self.max_open_files as i32);
        opts.set_compression_type(compression_type(&self.compression)?);
        if self.statistics {
            opts.enable_statistics();
        }

        let mut table = BlockBasedOptions::default();
        let capacity = self.block_cache_size as usize;
        let cache = match self.cache_type.as_str() {
            // Entry charge 0: RocksDB sizes the table itself (AutoHyperClockCache).
            "hyper_clock" => Cache::new_hyper_clock_cache(capacity, 0),
            _ => Cache::new_lru_cache(capacity),
        };
        table.set_block_cache(&cache);
        table.set_block_size(self.block_size as usize);
        if self.bloom_bits > 0 {
            table.set_bloom_filter(self.bloom_bits as f64, false);
        }
        opts.set_block_based_table_factory(&table);
        Ok(opts)
    }

    pub fn write_options(&self) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync);
        wo.disable_wal(!self.wal);
        wo
    }
}

pub fn compression_type(name: &str) -> Result<DBCompressionType, InputError> {
    Ok(match name {
        "none" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "lz4" => DBCompressionType::Lz4,
        "lz4hc" => DBCompressionType::Lz4hc,
        "zstd" => DBCompressionType::Zstd,
        "zlib" => DBCompressionType::Zlib,
        "bzip2" | "bz2" => DBCompressionType::Bz2,
        other => {
            return Err(InputError::Invalid(format!(
                "unknown RocksDB compression '{other}'; use none, snappy, lz4, lz4hc, zstd, zlib or bzip2"
            )))
        }
    })
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let options = RocksOptions::from_properties(opts.properties)?;
    let db_options = options.db_options()?;
    let db = DB::open(&db_options, opts.db_dir)
        .with_context(|| format!("cannot open RocksDB in '{}'", opts.db_dir.display()))?;
    Ok(Box::new(RocksEngine {
        db: Arc::new(db),
        options,
        db_options,
    }))
}

pub struct RocksEngine {
    db: Arc<DB>,
    options: RocksOptions,
    /// Kept for its statistics object.
    db_options: Options,
}

impl RocksEngine {
    pub fn db(&self) -> &Arc<DB> {
        &self.db
    }
}

impl Engine for RocksEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "rocksdb".into(),
            version: ROCKSDB_VERSION.into(),
            options: self.options.to_map(),
        }
    }

    fn worker(&self) -> anyhow::Result<Box<dyn EngineWorker>> {
        Ok(Box::new(RocksWorker {
            db: Arc::clone(&self.db),
            write: self.options.write_options(),
            read: ReadOptions::default(),
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn kv_worker(&self) -> anyhow::Result<Box<dyn KvWorker + '_>> {
        Ok(Box::new(RocksKvWorker {
            db: &self.db,
            write: self.options.write_options(),
            read: ReadOptions::default(),
            auto_readahead_size: self.options.auto_readahead_size,
            cursor: None,
        }))
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let mut stats = BTreeMap::new();
        for name in [
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
            "rocksdb.live-sst-files-size",
            "rocksdb.cur-size-all-mem-tables",
            "rocksdb.num-running-compactions",
            "rocksdb.estimate-pending-compaction-bytes",
        ] {
            if let Ok(Some(v)) = self.db.property_int_value(name) {
                stats.insert(name.trim_start_matches("rocksdb.").to_string(), v);
            }
        }
        stats
    }

    fn settle(&self, flush: bool) -> anyhow::Result<()> {
        let mut wait = WaitForCompactOptions::default();
        wait.set_flush(flush);
        self.db
            .wait_for_compact(&wait)
            .context("waiting for RocksDB compactions failed")
    }

    fn compact(&self) -> anyhow::Result<()> {
        self.db.flush().context("RocksDB flush failed")?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn statistics_text(&self) -> Option<String> {
        self.db_options.get_statistics()
    }

    fn close(&self) -> anyhow::Result<()> {
        // Flush memtables so a following `run` (a new process) starts from SSTs
        // and the load's write cost is inside the load's accounting.
        self.db.flush().context("RocksDB flush failed")?;
        Ok(())
    }
}

pub struct RocksWorker {
    db: Arc<DB>,
    write: WriteOptions,
    /// Reused: the crate's `get_pinned` allocates a `ReadOptions` per call.
    read: ReadOptions,
    encoded: Vec<u8>,
    scratch: Record,
}

fn failed(err: rocksdb::Error) -> OpError {
    OpError::Failed(err.into_string())
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

impl EngineWorker for RocksWorker {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        match self.db.get_pinned_opt(key, &self.read).map_err(failed)? {
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
        let mut iter = self.db.raw_iterator();
        iter.seek(start_key);
        while out.len() < count && iter.valid() {
            let value = iter.value().unwrap_or_default();
            if !codec::decode(value, fields, out.next_slot()) {
                return Err(OpError::Failed(CORRUPT.into()));
            }
            iter.next();
        }
        iter.status().map_err(failed)
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let merged = match self.db.get_pinned_opt(key, &self.read).map_err(failed)? {
            None => return Err(OpError::NotFound),
            Some(stored) => codec::merge(&stored, values, &mut self.scratch, &mut self.encoded),
        };
        if !merged {
            return Err(OpError::Failed(CORRUPT.into()));
        }
        self.db
            .put_opt(key, &self.encoded, &self.write)
            .map_err(failed)
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        codec::encode(values, &mut self.encoded);
        self.db
            .put_opt(key, &self.encoded, &self.write)
            .map_err(failed)
    }

    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        self.db.delete_opt(key, &self.write).map_err(failed)
    }
}

/// Raw keys and values for `kvperf bench`, as db_bench stores them.
pub struct RocksKvWorker<'a> {
    db: &'a DB,
    write: WriteOptions,
    /// Reused: the crate's `get_pinned` allocates a `ReadOptions` per call.
    read: ReadOptions,
    auto_readahead_size: bool,
    cursor: Option<DBRawIteratorWithThreadMode<'a, DB>>,
}

impl KvWorker for RocksKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        match self.db.get_pinned_opt(key, &self.read).map_err(failed)? {
            Some(found) => Ok(found.len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        self.db.put_opt(key, value, &self.write).map_err(failed)
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        self.db.delete_opt(key, &self.write).map_err(failed)
    }

    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError> {
        if fresh {
            self.cursor = None;
        }
        let (db, auto_readahead_size) = (self.db, self.auto_readahead_size);
        let cursor = self.cursor.get_or_insert_with(|| {
            let mut read = ReadOptions::default();
            read.set_auto_readahead_size(auto_readahead_size);
            db.raw_iterator_opt(read)
        });
        match target {
            Some(key) => cursor.seek(key),
            None => cursor.seek_to_first(),
        }
        cursor.status().map_err(failed)?;
        Ok(cursor.valid())
    }

    fn next(&mut self) -> Result<bool, OpError> {
        let Some(cursor) = self.cursor.as_mut() else {
            return Ok(false);
        };
        if cursor.valid() {
            cursor.next();
        }
        cursor.status().map_err(failed)?;
        Ok(cursor.valid())
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        let cursor = self.cursor.as_ref()?;
        Some((cursor.key()?, cursor.value()?))
    }
}
