//! RocksDB through the `rocksdb` crate, on RocksDB's release library or a
//! source build (`kvperf --version` names which, [`rocksdb_library`]).
//!
//! A YCSB record is one RocksDB value in the encoding of YCSB's own RocksDB
//! binding (see [`super::record::codec`]); `update` reads the record, merges
//! the new fields and writes it back, as that binding does, so figures are
//! comparable with YCSB's. All tables share the default column family.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DBRawIteratorWithThreadMode, Options, ReadOptions,
    WaitForCompactOptions, WriteOptions, DB,
};

use super::options::{set_unless_given, OptionValues};
use super::record::codec;
use super::{
    ready_client, Activity, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineInfo,
    EngineOption, EngineSpec, EventKind, EventSupport, OpError, OpResult, OpenMode, OpenOptions,
    Operations, Record, ScanResults, SetupFuture, StoreKind, EMBEDDED,
};
use crate::error::InputError;
use crate::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "rocksdb",
    about: "embedded RocksDB (LSM tree) via the rocksdb crate",
    feature: "rocksdb",
    store: StoreKind::Directory { owns, dirs: None },
    capabilities: Capabilities {
        background_work: true,
        compact: true,
        // Properties (running flushes and compactions, stopped and delayed
        // writes), the compaction stats' counts and RocksDB's background
        // threads' own write counters: see `activity`.
        events: EventSupport::Reports(&[
            EventKind::Flush,
            EventKind::Compaction,
            EventKind::WriteStall,
            EventKind::WriteSlowdown,
        ]),
        stats_report: true,
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "block_cache_size", default: "33554432", help: "block cache bytes (also 32m, 1GiB); 0 = no block cache, as db_bench's --cache_size=0" },
        EngineOption { name: "block_size", default: "4096", help: "data block bytes (also 4k, 16KiB)" },
        EngineOption { name: "bloom_bits", default: "0", help: "bloom filter bits per key; 0 = no filter" },
        EngineOption { name: "compression", default: "snappy", help: "none, snappy, lz4, lz4hc, zstd, zlib or bzip2" },
        EngineOption { name: "write_buffer_size", default: "67108864", help: "memtable bytes" },
        EngineOption { name: "max_write_buffer_number", default: "2", help: "memtables before writes stall" },
        EngineOption { name: "max_background_jobs", default: "2", help: "flush and compaction threads" },
        EngineOption { name: "max_open_files", default: "-1", help: "table files kept open; -1 = all" },
        EngineOption { name: "num_levels", default: "", help: "LSM levels (RocksDB's default: 7)" },
        EngineOption { name: "level_compaction_dynamic_level_bytes", default: "", help: "size levels from the last one up (RocksDB's default: true)" },
        EngineOption { name: "target_file_size_base", default: "", help: "SST file bytes at level 1 (RocksDB's default: 64 MiB)" },
        EngineOption { name: "bytes_per_sync", default: "", help: "sync SST files every N bytes written; 0 = never (RocksDB's default)" },
        EngineOption { name: "stats_dump_period_sec", default: "", help: "seconds between RocksDB's stats dumps into the store's LOG (RocksDB's default: 600)" },
        EngineOption { name: "optimize_level_style_compaction", default: "0", help: "memtable budget for OptimizeLevelStyleCompaction; 0 = not called (YCSB's binding uses 536870912)" },
        EngineOption { name: "wal", default: "true", help: "write the write-ahead log" },
        EngineOption { name: "sync", default: "false", help: "fsync the WAL on every write" },
        EngineOption { name: "statistics", default: "false", help: "collect RocksDB statistics (kvperf bench prints them)" },
        EngineOption { name: "cache_type", default: "lru", help: "lru or hyper_clock" },
        EngineOption { name: "auto_readahead_size", default: "true", help: "iterator auto readahead" },
        EngineOption { name: "use_direct_reads", default: "false", help: "O_DIRECT reads" },
        EngineOption { name: "use_direct_io_for_flush_and_compaction", default: "false", help: "O_DIRECT flushes and compactions" },
        EngineOption { name: "format_version", default: "7", help: "block-based table format; 6 or lower for readers older than RocksDB 10.4 (YCSB's binding, rocksdbjni 10.2.1)" },
        EngineOption { name: "options", default: "", help: "any other options as a RocksDB options string, applied first" },
        EngineOption { name: "version", default: "", help: "RocksDB release to run on, e.g. 10.2.1 (its release library, fetched on first use); empty = the one kvperf links" },
        EngineOption { name: "trace", default: "", help: "write RocksDB's own query trace of the store, open to close, to this new FILE (kvperf trace import --from rocksdb reads it)" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

/// RocksDB's own files in a data directory (what `DestroyDB` removes),
/// by RocksDB's exact names: numbered (`000012.sst`, `MANIFEST-000005`),
/// never a name that only ends like one (a user's `app.log` or
/// `notes.sst` in kvperf's directory was deleted by `--fresh`).
fn owns(name: &str) -> bool {
    const EXACT: [&str; 4] = ["CURRENT", "IDENTITY", "LOCK", "LOG"];
    const PREFIXES: [&str; 4] = ["MANIFEST-", "OPTIONS-", "LOG.old.", "METADB-"];
    const SUFFIXES: [&str; 5] = [".sst", ".log", ".blob", ".dbtmp", ".ldb"];
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|n| number(n.strip_suffix(".dbtmp").unwrap_or(n)))
        })
        || SUFFIXES
            .iter()
            .any(|s| name.strip_suffix(s).is_some_and(number))
}

use super::rocksdb_library;
use super::rocksdb_options_string::options_from_string;

/// The DBOptions of an options string that name a directory of their own
/// for RocksDB's files (`wal_dir`, `db_log_dir`), given a value (bare or
/// in braces), at any depth of `{...}`: the first found. RocksDB writes
/// there, and on opening deletes the numbered logs it finds there as
/// obsolete: a user's `000099.log` in a `wal_dir` was deleted by a `run`.
fn names_a_place_outside_the_store(options: &str) -> Option<&'static str> {
    const OUTSIDE: [&str; 2] = ["wal_dir", "db_log_dir"];
    let unbraced = options.replace(['{', '}'], "");
    let found = [options, unbraced.as_str()].into_iter().find_map(|text| {
        text.split([';', '{', '}'])
            .filter_map(|part| part.split_once('='))
            .find_map(|(name, value)| {
                let name = name.trim();
                OUTSIDE
                    .into_iter()
                    .find(|o| *o == name && !value.trim().is_empty())
            })
    });
    found
}

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
    pub use_direct_reads: bool,
    pub use_direct_io_for_flush_and_compaction: bool,
    pub format_version: u64,
    /// Options RocksDB's defaults stand for unless given (`None`).
    pub num_levels: Option<u64>,
    pub level_compaction_dynamic_level_bytes: Option<bool>,
    pub target_file_size_base: Option<u64>,
    pub bytes_per_sync: Option<u64>,
    pub stats_dump_period_sec: Option<u64>,
    /// Any other option as a RocksDB options string
    /// (`delayed_write_rate=8388608;enable_pipelined_write=true`), applied
    /// before the options above.
    pub options: String,
    /// `rocksdb.trace`: RocksDB's query trace to this file ("" = none).
    pub trace: String,
    /// Every option's effective text, for the results.
    pub effective: BTreeMap<String, String>,
}

/// Sizes that allocate memory up front are bounded, so a typo is an error
/// and not an allocation that kills the machine.
const MAX_MEMORY_OPTION: u64 = 1 << 40;

/// The release the command runs on (`rocksdb.version`, else the one this
/// process loaded: an `LD_LIBRARY_PATH` may give another than kvperf
/// links) and the newest table format it writes: 7 from RocksDB 10.4 on,
/// 6 before (10.2.1 failed to open any store with 7, exit 3).
fn newest_format(props: &Properties) -> (String, u64) {
    let release = props
        .get(super::rocksdb_release::PROPERTY)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map_or_else(|| rocksdb_library::loaded().version.clone(), str::to_string);
    let mut parts = release.split('.').map(|p| p.parse::<u64>().ok());
    let newest = match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) if (major, minor) < (10, 4) => 6,
        _ => 7,
    };
    (release, newest)
}

impl RocksOptions {
    pub fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let compression = v.text("compression");
        compression_type(&compression)?;
        let max_open_files = match v.text("max_open_files").as_str() {
            "-1" => -1,
            _ => v.u64_at_most("max_open_files", i32::MAX as u64)? as i64,
        };
        let format_version = v.u64("format_version")?;
        let (release, newest) = newest_format(props);
        if !(2..=newest).contains(&format_version) {
            return Err(InputError::property(
                "rocksdb.format_version",
                format!(
                    "{format_version} is not a format RocksDB {release} writes (2 to {newest}); give -p rocksdb.format_version={newest} or lower"
                ),
            ));
        }
        let options = v.text("options");
        if let Some(name) = names_a_place_outside_the_store(&options) {
            return Err(InputError::property(
                "rocksdb.options",
                format!(
                    "'{name}' puts RocksDB's files outside --db, into a directory kvperf did not make (RocksDB deletes the old log files it finds there, a user's too); kvperf keeps the whole store in --db, the directory it marks, empties and measures: leave {name} out"
                ),
            ));
        }
        let given = |name: &str| !v.text(name).is_empty();
        Ok(Self {
            num_levels: given("num_levels")
                .then(|| v.u64_at_most("num_levels", 100))
                .transpose()?,
            level_compaction_dynamic_level_bytes: given("level_compaction_dynamic_level_bytes")
                .then(|| v.bool("level_compaction_dynamic_level_bytes"))
                .transpose()?,
            target_file_size_base: given("target_file_size_base")
                .then(|| v.size_at_most("target_file_size_base", MAX_MEMORY_OPTION))
                .transpose()?,
            bytes_per_sync: given("bytes_per_sync")
                .then(|| v.size_at_most("bytes_per_sync", MAX_MEMORY_OPTION))
                .transpose()?,
            stats_dump_period_sec: given("stats_dump_period_sec")
                .then(|| v.u64_at_most("stats_dump_period_sec", u32::MAX as u64))
                .transpose()?,
            block_cache_size: v.size_at_most("block_cache_size", MAX_MEMORY_OPTION)?,
            block_size: v.size_at_most("block_size", 1 << 30)?,
            bloom_bits: v.u64_at_most("bloom_bits", 1000)?,
            compression,
            write_buffer_size: v.size_at_most("write_buffer_size", MAX_MEMORY_OPTION)?,
            max_write_buffer_number: v.u64_at_most("max_write_buffer_number", 1000)?,
            max_background_jobs: v.u64_at_most("max_background_jobs", 1024)?,
            max_open_files,
            optimize_level_style_compaction: v
                .size_at_most("optimize_level_style_compaction", MAX_MEMORY_OPTION)?,
            wal: v.bool("wal")?,
            sync: v.bool("sync")?,
            statistics: v.bool("statistics")?,
            cache_type: v.choice("cache_type", &["lru", "hyper_clock"])?,
            auto_readahead_size: v.bool("auto_readahead_size")?,
            use_direct_reads: v.bool("use_direct_reads")?,
            use_direct_io_for_flush_and_compaction: v
                .bool("use_direct_io_for_flush_and_compaction")?,
            format_version,
            options,
            trace: v.text("trace"),
            effective: v.effective(),
        })
    }

    /// RocksDB `Options` for these settings (create_if_missing on).
    pub fn db_options(&self) -> Result<Options, InputError> {
        let mut opts = Options::default();
        if !self.options.is_empty() {
            opts = options_from_string(&self.options).map_err(|e| {
                InputError::Invalid(format!("rocksdb.options '{}': {e}", self.options))
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
        // Only set when asked, so `rocksdb.options` can turn them on too.
        if self.use_direct_reads {
            opts.set_use_direct_reads(true);
        }
        if self.use_direct_io_for_flush_and_compaction {
            opts.set_use_direct_io_for_flush_and_compaction(true);
        }
        if let Some(n) = self.num_levels {
            opts.set_num_levels(n as i32);
        }
        if let Some(dynamic) = self.level_compaction_dynamic_level_bytes {
            opts.set_level_compaction_dynamic_level_bytes(dynamic);
        }
        if let Some(bytes) = self.target_file_size_base {
            opts.set_target_file_size_base(bytes);
        }
        if let Some(bytes) = self.bytes_per_sync {
            opts.set_bytes_per_sync(bytes);
        }
        if let Some(secs) = self.stats_dump_period_sec {
            opts.set_stats_dump_period_sec(secs as u32);
        }

        let mut table = BlockBasedOptions::default();
        let capacity = self.block_cache_size as usize;
        if capacity == 0 {
            // No block cache, as db_bench makes none for --cache_size=0
            // (a hyper clock cache of 0 bytes crashed RocksDB at open).
            table.disable_cache();
        } else {
            let cache = match self.cache_type.as_str() {
                // Entry charge 0: RocksDB sizes the table itself (AutoHyperClockCache).
                "hyper_clock" => Cache::new_hyper_clock_cache(capacity, 0),
                _ => Cache::new_lru_cache(capacity),
            };
            table.set_block_cache(&cache);
        }
        table.set_block_size(self.block_size as usize);
        table.set_format_version(self.format_version as i32);
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

/// RocksDB options db_bench sets to values other than RocksDB's defaults
/// (db_bench_tool.cc `InitializeOptionsFromFlags`; docs/semantics.md).
const DB_BENCH_OPTIONS: &str =
    "level_compaction_dynamic_level_bytes=false;enable_pipelined_write=true;\
     delayed_write_rate=8388608;hard_pending_compaction_bytes_limit=137438953472;\
     table_cache_numshardbits=4";

/// db_bench's flags as RocksDB options, with db_bench's defaults for the
/// flags not given. RocksDB honours every one of them.
fn map_db_bench_flags(flags: &DbBenchFlags, props: &mut Properties) -> Vec<&'static str> {
    let bloom_bits = flags
        .bloom_bits
        .filter(|b| *b > 0.0)
        .map_or(0, |b| b as u64);
    let settings = [
        (
            "block_cache_size",
            flags.cache_size.unwrap_or(32 << 20).to_string(),
        ),
        ("bloom_bits", bloom_bits.to_string()),
        (
            "compression",
            flags
                .compression_type
                .clone()
                .unwrap_or_else(|| "snappy".into()),
        ),
        (
            "write_buffer_size",
            flags.write_buffer_size.unwrap_or(64 << 20).to_string(),
        ),
        (
            "max_background_jobs",
            flags.max_background_jobs.unwrap_or(2).to_string(),
        ),
        ("wal", (!flags.disable_wal.unwrap_or(false)).to_string()),
        ("sync", flags.sync.unwrap_or(false).to_string()),
        ("statistics", flags.statistics.unwrap_or(false).to_string()),
        (
            "use_direct_reads",
            flags.use_direct_reads.unwrap_or(false).to_string(),
        ),
        (
            "use_direct_io_for_flush_and_compaction",
            flags
                .use_direct_io_for_flush_and_compaction
                .unwrap_or(false)
                .to_string(),
        ),
        ("cache_type", "hyper_clock".to_string()),
        ("auto_readahead_size", "false".to_string()),
        ("options", DB_BENCH_OPTIONS.to_string()),
    ];
    for (name, value) in settings {
        set_unless_given(props, &SPEC, name, &value);
    }
    // benchmark.sh's flags: set only when given, else RocksDB's defaults
    // (which are db_bench's) stand. --memtablerep=skip_list (the only
    // one `kvperf bench` accepts) is RocksDB's default memtable.
    let given = [
        ("block_size", flags.block_size.map(|v| v.to_string())),
        ("num_levels", flags.num_levels.map(|v| v.to_string())),
        ("max_open_files", flags.open_files.map(|v| v.to_string())),
        (
            "level_compaction_dynamic_level_bytes",
            flags
                .level_compaction_dynamic_level_bytes
                .map(|v| v.to_string()),
        ),
        (
            "bytes_per_sync",
            flags.bytes_per_sync.map(|v| v.to_string()),
        ),
        (
            "target_file_size_base",
            flags.target_file_size_base.map(|v| v.to_string()),
        ),
        (
            "max_write_buffer_number",
            flags.max_write_buffer_number.map(|v| v.to_string()),
        ),
        (
            "stats_dump_period_sec",
            flags.stats_interval_seconds.map(|v| v.to_string()),
        ),
    ];
    for (name, value) in given {
        if let Some(value) = value {
            set_unless_given(props, &SPEC, name, &value);
        }
    }
    Vec::new()
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

/// Checks what `open_store` would refuse only after a `--fresh` emptied
/// the store: the options string (parsed by RocksDB) and the trace's
/// file, besides the options' values.
pub(crate) fn check_options(props: &Properties) -> Result<(), InputError> {
    let options = RocksOptions::from_properties(props)?;
    options.db_options()?;
    if !options.trace.is_empty() {
        super::rocksdb_trace::check(Path::new(&options.trace))?;
    }
    Ok(())
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<RocksEngine> {
    let dir = opts.dir()?;
    let options = RocksOptions::from_properties(opts.properties)?;
    let db_options = options.db_options()?;
    if opts.mode == OpenMode::Fresh {
        // RocksDB's DestroyDB: removes RocksDB's own files only.
        DB::destroy(&db_options, dir)
            .with_context(|| format!("cannot remove the RocksDB store in '{}'", dir.display()))?;
    }
    if !options.trace.is_empty() {
        super::rocksdb_trace::check(Path::new(&options.trace))?;
    }
    let tracing = !options.trace.is_empty();
    let db = if tracing {
        // The trace shim reaches the DB through the default column
        // family's handle, which the binding keeps only when it is named.
        let default = rocksdb::ColumnFamilyDescriptor::new(
            rocksdb::DEFAULT_COLUMN_FAMILY_NAME,
            db_options.clone(),
        );
        DB::open_cf_descriptors(&db_options, dir, [default])
    } else {
        DB::open(&db_options, dir)
    }
    .with_context(|| format!("cannot open RocksDB in '{}'", dir.display()))?;
    if tracing {
        super::rocksdb_trace::start(&db, Path::new(&options.trace))?;
    }
    let mut options = options;
    // What RocksDB says it runs with wins over the names kvperf set: a
    // `rocksdb.options` string may have changed them.
    options.effective.extend(reported_options(dir));
    Ok(RocksEngine {
        db: Arc::new(db),
        dir: dir.to_path_buf(),
        options,
        db_options,
        background: Mutex::new(None),
        tracing: std::sync::atomic::AtomicBool::new(tracing),
    })
}

/// kvperf's option names and where RocksDB's OPTIONS file reports each:
/// (name, section, key).
const REPORTED: [(&str, &str, &str); 12] = [
    ("use_direct_reads", "DBOptions", "use_direct_reads"),
    (
        "use_direct_io_for_flush_and_compaction",
        "DBOptions",
        "use_direct_io_for_flush_and_compaction",
    ),
    ("max_background_jobs", "DBOptions", "max_background_jobs"),
    ("max_open_files", "DBOptions", "max_open_files"),
    ("bytes_per_sync", "DBOptions", "bytes_per_sync"),
    (
        "stats_dump_period_sec",
        "DBOptions",
        "stats_dump_period_sec",
    ),
    ("num_levels", "CFOptions \"default\"", "num_levels"),
    (
        "level_compaction_dynamic_level_bytes",
        "CFOptions \"default\"",
        "level_compaction_dynamic_level_bytes",
    ),
    (
        "target_file_size_base",
        "CFOptions \"default\"",
        "target_file_size_base",
    ),
    (
        "write_buffer_size",
        "CFOptions \"default\"",
        "write_buffer_size",
    ),
    (
        "max_write_buffer_number",
        "CFOptions \"default\"",
        "max_write_buffer_number",
    ),
    (
        "block_size",
        "TableOptions/BlockBasedTable \"default\"",
        "block_size",
    ),
];

/// The values RocksDB wrote into the newest OPTIONS file of `dir` after
/// opening it, under kvperf's names; empty when it cannot be read.
fn reported_options(dir: &Path) -> BTreeMap<String, String> {
    let newest = std::fs::read_dir(dir).ok().and_then(|entries| {
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter_map(|n| Some((n.strip_prefix("OPTIONS-")?.parse::<u64>().ok()?, n)))
            .max()
    });
    newest
        .and_then(|(_, name)| {
            // Bounded, and never a FIFO's open: the directory may be a user's.
            let path = dir.join(name);
            crate::files::read_input(&path, "OPTIONS file", crate::files::bound::TEXT).ok()
        })
        .map_or_else(BTreeMap::new, |text| parse_options_file(&text))
}

/// `[Section]` headers and `key=value` lines of an OPTIONS file, picked
/// by [`REPORTED`].
fn parse_options_file(text: &str) -> BTreeMap<String, String> {
    let mut section = "";
    let mut found = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name;
        } else if let Some((key, value)) = line.split_once('=') {
            if let Some((name, _, _)) = REPORTED.iter().find(|(_, s, k)| *s == section && *k == key)
            {
                found.insert((*name).to_string(), value.to_string());
            }
        }
    }
    found
}

pub struct RocksEngine {
    db: Arc<DB>,
    dir: std::path::PathBuf,
    options: RocksOptions,
    /// Kept for its statistics object.
    db_options: Options,
    /// RocksDB's background threads, found at the first `activity` poll.
    background: Mutex<Option<BackgroundThreads>>,
    /// `rocksdb.trace` is being written (ended at close or drop).
    tracing: std::sync::atomic::AtomicBool,
}

impl RocksEngine {
    /// Ends `rocksdb.trace`, once.
    fn end_trace(&self) -> anyhow::Result<()> {
        if self
            .tracing
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            super::rocksdb_trace::end(&self.db)?;
        }
        Ok(())
    }
}

impl Drop for RocksEngine {
    fn drop(&mut self) {
        let _ = self.end_trace();
    }
}

impl RocksEngine {
    pub fn db(&self) -> &Arc<DB> {
        &self.db
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The write options kvperf's clients write with.
    pub fn write_options(&self) -> WriteOptions {
        self.options.write_options()
    }

    fn records(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(RocksWorker {
            db: &self.db,
            write: self.options.write_options(),
            read: ReadOptions::default(),
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(RocksKvWorker {
            db: &self.db,
            write: self.options.write_options(),
            read: ReadOptions::default(),
            auto_readahead_size: self.options.auto_readahead_size,
            cursor: None,
        }))
    }
}

impl Engine for RocksEngine {
    fn info(&self) -> EngineInfo {
        // The library this process actually runs, by its own account.
        let loaded = rocksdb_library::loaded();
        let mut options = self.options.effective.clone();
        options.insert("library".into(), loaded.origin());
        EngineInfo {
            name: "rocksdb".into(),
            version: loaded.version_and_kind(),
            options,
        }
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
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
        if let Some(micros) = self
            .db
            .property_value("rocksdb.dbstats")
            .ok()
            .flatten()
            .and_then(|text| cumulative_stall_micros(&text))
        {
            stats.insert("stall-micros".into(), micros);
        }
        // Since the store opened; only with `rocksdb.statistics=true`. The
        // keys read and written and the seeks are what RocksDB itself did,
        // as db_bench's `--statistics` prints them (bench/rocksdb-replayer.sh
        // compares a replay's with db_bench's replay of the same trace).
        if self.options.statistics {
            for (name, ticker) in [
                ("block-cache-hit", Ticker::BlockCacheHit),
                ("block-cache-miss", Ticker::BlockCacheMiss),
                ("keys-read", Ticker::NumberKeysRead),
                ("keys-written", Ticker::NumberKeysWritten),
                ("db-seek", Ticker::NumberDbSeek),
                ("multiget-keys-read", Ticker::NumberMultigetKeysRead),
            ] {
                stats.insert(name.into(), self.db_options.get_ticker_count(ticker));
            }
        }
        stats
    }

    /// Waits out every compaction (after flushing the memtables with `flush`).
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

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    fn statistics_text(&self) -> Option<String> {
        self.db_options.get_statistics()
    }

    /// Running flushes and compactions (`rocksdb.num-running-flushes`,
    /// `num-running-compactions`, with the levels whose files are being
    /// compacted), stopped writes (`is-write-stopped`) and delayed ones
    /// (`actual-delayed-write-rate`); finished flushes (the L0 row's
    /// `Comp(cnt)` of the compaction stats), compactions by output level
    /// (the other rows'), stalls and slowdowns by cause (`Write Stall
    /// (count)`), and the bytes RocksDB's flush and compaction threads
    /// wrote (their `/proc/self/task/TID/io` `wchar`).
    fn activity(&self) -> Result<Activity, String> {
        let int = |name: &str| -> Result<u64, String> {
            self.db
                .property_int_value(name)
                .map(Option::unwrap_or_default)
                .map_err(rocksdb::Error::into_string)
        };
        let flushes = int("rocksdb.num-running-flushes")?;
        let compactions = int("rocksdb.num-running-compactions")?;
        let stopped = int("rocksdb.is-write-stopped")? != 0;
        let delayed_rate = int("rocksdb.actual-delayed-write-rate")?;
        let text = self
            .db
            .property_value("rocksdb.cfstats-no-file-histogram")
            .map_err(rocksdb::Error::into_string)?
            .unwrap_or_default();
        let stats = CompactionStats::parse(&text);
        let written = {
            let mut found = self.background.lock().unwrap_or_else(|e| e.into_inner());
            let threads = found.get_or_insert_with(BackgroundThreads::find);
            let written = threads.written();
            if written.is_none() {
                // A thread went away (or none was found): look again next time.
                *found = None;
            }
            written
        };

        let mut a = Activity::idle();
        let count = |n: u64| {
            if n > 1 {
                format!("{n} running")
            } else {
                String::new()
            }
        };
        if flushes > 0 {
            a.running(EventKind::Flush, "", count(flushes));
        }
        if compactions > 0 {
            let levels = stats.levels_being_compacted();
            let detail = match (levels.is_empty(), compactions > 1) {
                (true, _) => count(compactions),
                (false, false) => levels.join("+"),
                (false, true) => format!("{}, {}", levels.join("+"), count(compactions)),
            };
            a.running(EventKind::Compaction, "", detail);
        }
        if stopped {
            a.running(EventKind::WriteStall, "", "writes stopped");
        }
        if delayed_rate > 0 {
            let rate = format!("delayed to {:.1} MB/s", delayed_rate as f64 / 1e6);
            a.running(EventKind::WriteSlowdown, "", rate);
        }
        // A flush is counted in the L0 row, a compaction in its output level's.
        a.tally(
            EventKind::Flush,
            "",
            stats.finished("L0"),
            written.map(|w| w.flush),
        );
        for level in stats.levels.iter().filter(|l| l.name != "L0") {
            a.tally(
                EventKind::Compaction,
                format!("into {}", level.name),
                level.finished,
                None,
            );
        }
        a.tally(EventKind::Compaction, "", 0, written.map(|w| w.compaction));
        for (cause, stops, delays) in &stats.stalls {
            a.tally(EventKind::WriteStall, cause.clone(), *stops, None);
            a.tally(EventKind::WriteSlowdown, cause.clone(), *delays, None);
        }
        Ok(a)
    }

    /// RocksDB's `rocksdb.stats` or `rocksdb.levelstats`, as db_bench's
    /// `stats` and `levelstats` benchmarks print them.
    fn stats_report(&self, per_level: bool) -> anyhow::Result<String> {
        let name = if per_level {
            "rocksdb.levelstats"
        } else {
            "rocksdb.stats"
        };
        self.db
            .property_value(name)
            .with_context(|| format!("RocksDB property {name}"))?
            .ok_or_else(|| anyhow::anyhow!("RocksDB has no property {name}"))
    }

    fn close(&self) -> anyhow::Result<()> {
        // Flush memtables so a following `run` (a new process) starts from SSTs
        // and the load's write cost is inside the load's accounting.
        self.db.flush().context("RocksDB flush failed")?;
        self.end_trace()
    }
}

/// Write-stall time since the store was opened, from RocksDB's DB stats:
/// `Cumulative stall: 00:01:2.345 H:M:S, 12.3 percent`.
fn cumulative_stall_micros(dbstats: &str) -> Option<u64> {
    let line = dbstats
        .lines()
        .find_map(|l| l.trim().strip_prefix("Cumulative stall:"))?;
    let hms = line.split_whitespace().next()?;
    let mut parts = hms.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    let seconds =
        h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?;
    Some((seconds * 1e6).round() as u64)
}

/// What `rocksdb.cfstats-no-file-histogram` says that `activity` reads:
/// per level, its files being compacted and the compactions finished into
/// it; per write-stall cause, the stops and delays counted.
#[derive(Debug, Default, PartialEq)]
struct CompactionStats {
    levels: Vec<LevelStats>,
    /// (cause, stops, delays), e.g. ("L0 file count limit", 2, 5).
    stalls: Vec<(String, u64, u64)>,
}

#[derive(Debug, PartialEq)]
struct LevelStats {
    name: String,
    being_compacted: u64,
    /// `Comp(cnt)`: compactions (for L0: flushes) that wrote into the level.
    finished: u64,
}

impl CompactionStats {
    /// The level table's rows (`  L1      4/2    1.21 MB ...`: Files is
    /// `files/being compacted`, `Comp(cnt)` the sixth column from the end)
    /// and the `Write Stall (count):` line. Lines it does not recognise
    /// are skipped, so a changed layout loses figures, not the poll.
    fn parse(text: &str) -> Self {
        let mut stats = Self::default();
        let mut in_levels = false;
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first() {
                Some(&"Level") => in_levels = true,
                Some(&"Sum") | Some(&"Priority") => in_levels = false,
                Some(name) if in_levels && is_level(name) && words.len() > 7 => {
                    let being_compacted = words[1]
                        .split_once('/')
                        .and_then(|(_, c)| c.parse().ok())
                        .unwrap_or(0);
                    let finished = words[words.len() - 6].parse().unwrap_or(0);
                    stats.levels.push(LevelStats {
                        name: name.to_string(),
                        being_compacted,
                        finished,
                    });
                }
                _ => {}
            }
            if let Some(counts) = line.trim().strip_prefix("Write Stall (count):") {
                stats.stalls = stall_counts(counts);
            }
        }
        stats
    }

    fn finished(&self, level: &str) -> u64 {
        self.levels
            .iter()
            .find(|l| l.name == level)
            .map_or(0, |l| l.finished)
    }

    /// "L0", "L1": the levels some of whose files a compaction holds.
    fn levels_being_compacted(&self) -> Vec<String> {
        self.levels
            .iter()
            .filter(|l| l.being_compacted > 0)
            .map(|l| l.name.clone())
            .collect()
    }
}

fn is_level(word: &str) -> bool {
    word.strip_prefix('L')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `l0-file-count-limit-stops: 2, memtable-limit-delays: 5, ...` as
/// (cause, stops, delays), the totals and the "with ongoing compaction"
/// subsets left out.
fn stall_counts(text: &str) -> Vec<(String, u64, u64)> {
    let mut per_cause: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for item in text.split(',') {
        let Some((key, value)) = item.split_once(':') else {
            continue;
        };
        let (key, Ok(n)) = (key.trim(), value.trim().parse::<u64>()) else {
            continue;
        };
        if key.starts_with("total-") || key.starts_with("cf-") {
            continue;
        }
        let (cause, stops) = match (key.strip_suffix("-stops"), key.strip_suffix("-delays")) {
            (Some(cause), _) => (cause, true),
            (_, Some(cause)) => (cause, false),
            _ => continue,
        };
        let cause = match cause {
            "l0-file-count-limit" => "L0 file count limit".to_string(),
            other => other.replace('-', " "),
        };
        let entry = per_cause.entry(cause).or_default();
        if stops {
            entry.0 += n;
        } else {
            entry.1 += n;
        }
    }
    per_cause
        .into_iter()
        .map(|(cause, (stops, delays))| (cause, stops, delays))
        .collect()
}

/// Bytes RocksDB's background threads passed to `write()` so far.
#[derive(Debug, Clone, Copy)]
struct BackgroundWrites {
    flush: u64,
    compaction: u64,
}

/// RocksDB's background threads by thread id: its thread pools name them
/// `rocksdb:high` (flushes) and `rocksdb:low` / `rocksdb:bottom`
/// (compactions). One DB is open per kvperf process, so they are its.
#[derive(Debug, Default)]
struct BackgroundThreads {
    flush: Vec<u32>,
    compaction: Vec<u32>,
}

impl BackgroundThreads {
    fn find() -> Self {
        let mut found = Self::default();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return found;
        };
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<u32>().ok())
            else {
                continue;
            };
            match std::fs::read_to_string(task.path().join("comm"))
                .as_deref()
                .map(str::trim)
            {
                Ok("rocksdb:high") => found.flush.push(tid),
                Ok("rocksdb:low") | Ok("rocksdb:bottom") => found.compaction.push(tid),
                _ => {}
            }
        }
        found
    }

    /// None when there are no such threads or one cannot be read (gone).
    fn written(&self) -> Option<BackgroundWrites> {
        if self.flush.is_empty() && self.compaction.is_empty() {
            return None;
        }
        let sum = |tids: &[u32]| -> Option<u64> { tids.iter().map(|tid| thread_wchar(*tid)).sum() };
        Some(BackgroundWrites {
            flush: sum(&self.flush)?,
            compaction: sum(&self.compaction)?,
        })
    }
}

/// `wchar` of one of this process's threads.
fn thread_wchar(tid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/io")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
}

pub struct RocksWorker<'a> {
    db: &'a DB,
    write: WriteOptions,
    /// Reused: the crate's `get_pinned` allocates a `ReadOptions` per call.
    read: ReadOptions,
    encoded: Vec<u8>,
    scratch: Record,
}

fn failed(err: rocksdb::Error) -> OpError {
    OpError::failed(err.into_string())
}

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

super::blocking_records!(RocksWorker<'_>);

impl RocksWorker<'_> {
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

super::blocking_raw!(RocksKvWorker<'_>);

impl RocksKvWorker<'_> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `wal_dir` and `db_log_dir` put RocksDB's files where kvperf did not
    /// make them: refused in every spelling, other options kept.
    #[test]
    fn options_that_put_files_outside_the_store_are_found() {
        for text in [
            "wal_dir=/home/me/wal",
            " wal_dir = w ;max_open_files=10",
            "max_open_files=10;db_log_dir=/tmp/logs",
            "wal_dir={/home/me/wal}",
            "a={b=1;wal_dir=x}",
        ] {
            assert!(names_a_place_outside_the_store(text).is_some(), "{text}");
        }
        for text in [
            "",
            "wal_dir=",
            "max_open_files=10",
            "block_based_table_factory={block_size=8192}",
            "my_wal_dir=x",
        ] {
            assert_eq!(names_a_place_outside_the_store(text), None, "{text}");
        }
    }

    #[test]
    fn effective_options_are_what_rocksdb_reports() {
        let text = "[Version]\n  rocksdb_version=11.8.1\n[DBOptions]\n  use_direct_reads=true\n  max_open_files=-1\n\
                    [CFOptions \"default\"]\n  write_buffer_size=67108864\n\
                    [TableOptions/BlockBasedTable \"default\"]\n  block_size=4096\n";
        let found = parse_options_file(text);
        assert_eq!(found["use_direct_reads"], "true");
        assert_eq!(found["max_open_files"], "-1");
        assert_eq!(found["write_buffer_size"], "67108864");
        assert_eq!(found["block_size"], "4096");
        assert_eq!(found.len(), 4);
    }

    #[test]
    fn an_options_string_shows_in_the_recorded_options() {
        let dir = tempfile::tempdir().unwrap();
        let mut props = Properties::new();
        props.set(
            "rocksdb.options",
            "use_direct_io_for_flush_and_compaction=true",
        );
        let engine = open(&OpenOptions {
            dir: Some(dir.path()),
            properties: &props,
            mode: OpenMode::Any,
            runtime: None,
            clients: None,
        })
        .unwrap();
        let info = engine.info();
        // The named option's default says false; RocksDB runs with true.
        assert_eq!(
            info.options["use_direct_io_for_flush_and_compaction"],
            "true"
        );
        engine.close().unwrap();
    }

    #[test]
    fn stall_time_is_read_from_the_db_stats() {
        let text = "** DB Stats **\nUptime(secs): 12.0 total, 12.0 interval\n\
                    Cumulative stall: 00:01:02.500 H:M:S, 8.7 percent\n\
                    Interval stall: 00:00:0.000 H:M:S, 0.0 percent\n";
        assert_eq!(cumulative_stall_micros(text), Some(62_500_000));
        assert_eq!(cumulative_stall_micros("no stats"), None);
    }

    #[test]
    fn compaction_stats_give_levels_being_compacted_finished_counts_and_stalls() {
        // From RocksDB 11.8.1's `rocksdb.cfstats-no-file-histogram`.
        let text = "\n** Compaction Stats [default] **\n\
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) WPreComp(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop Rblob(GB) Wblob(GB)\n\
------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------\n\
  L0      4/4    1.02 MB   1.0      0.0     0.0      0.0       0.0      0.0       0.0      0.0   1.0      0.0     15.2      0.07              0.05        17    0.004       0      0       0.0       0.0\n\
  L1      3/2    2.95 MB   0.9      0.0     0.0      0.0       0.0      0.0       0.0      0.0   1.6     30.1     28.8      0.19              0.15         5    0.038     32K   1234       0.0       0.0\n\
  L2      1/0   10.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0      0.0   0.0      0.0      0.0      0.00              0.00         0    0.000       0      0       0.0       0.0\n\
 Sum      8/6    3.98 MB   0.0      0.0     0.0      0.0       0.0      0.0       0.0      0.0   2.1     15.0     22.0      0.26              0.20        22    0.012     32K   1234       0.0       0.0\n\
 Int      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0      0.0   2.1     15.0     22.0      0.26              0.20        22    0.012     32K   1234       0.0       0.0\n\
\n** Compaction Stats [default] **\n\
Priority    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) WPreComp(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop Rblob(GB) Wblob(GB)\n\
 Low      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0      0.0   0.0     30.1     28.8      0.19              0.15         5    0.038     32K   1234       0.0       0.0\n\
Write Stall (count): cf-l0-file-count-limit-delays-with-ongoing-compaction: 1, cf-l0-file-count-limit-stops-with-ongoing-compaction: 0, l0-file-count-limit-delays: 3, l0-file-count-limit-stops: 1, memtable-limit-delays: 0, memtable-limit-stops: 2, pending-compaction-bytes-delays: 0, pending-compaction-bytes-stops: 0, total-delays: 3, total-stops: 3\n";
        let stats = CompactionStats::parse(text);
        let levels: Vec<(&str, u64, u64)> = stats
            .levels
            .iter()
            .map(|l| (l.name.as_str(), l.being_compacted, l.finished))
            .collect();
        assert_eq!(levels, vec![("L0", 4, 17), ("L1", 2, 5), ("L2", 0, 0)]);
        assert_eq!(stats.levels_being_compacted(), vec!["L0", "L1"]);
        assert_eq!(stats.finished("L0"), 17);
        assert_eq!(
            stats.stalls,
            vec![
                ("L0 file count limit".to_string(), 1, 3),
                ("memtable limit".to_string(), 2, 0),
                ("pending compaction bytes".to_string(), 0, 0),
            ]
        );
        assert_eq!(
            CompactionStats::parse("nothing here"),
            CompactionStats::default()
        );
    }

    #[test]
    fn a_store_being_written_reports_its_flushes_and_background_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut props = Properties::new();
        props.set("rocksdb.write_buffer_size", "65536");
        let engine = open(&OpenOptions {
            dir: Some(dir.path()),
            properties: &props,
            mode: OpenMode::Any,
            runtime: None,
            clients: None,
        })
        .unwrap();
        let before = engine.activity().expect("RocksDB answers");
        let flushes = |a: &Activity| {
            a.tallies
                .iter()
                .find(|t| t.kind == EventKind::Flush)
                .map(|t| (t.count, t.bytes))
        };
        let mut client = crate::engine::wait(engine.client(ClientSlot::thread(
            0,
            1,
            crate::engine::Access::Raw,
        )))
        .unwrap();
        for i in 0..5000u32 {
            let key = format!("key{i:08}");
            crate::engine::wait(client.put(key.as_bytes(), &[7u8; 200])).unwrap();
        }
        drop(client);
        engine.settle(true).unwrap();
        let after = engine.activity().unwrap();
        let (n0, b0) = flushes(&before).expect("a flush tally");
        let (n1, b1) = flushes(&after).unwrap();
        assert!(
            n1 > n0,
            "1 MB through 64 KiB memtables flushes: {n0} -> {n1}"
        );
        if let (Some(b0), Some(b1)) = (b0, b1) {
            assert!(b1 > b0, "the flush thread wrote: {b0} -> {b1}");
        }
        engine.close().unwrap();
    }

    #[test]
    fn rocksdbs_own_files_are_told_apart() {
        for own in [
            "CURRENT",
            "IDENTITY",
            "LOCK",
            "LOG",
            "LOG.old.1700000000",
            "MANIFEST-000005",
            "OPTIONS-000007",
            "000012.sst",
            "000011.log",
            "000013.blob",
            "000014.dbtmp",
            "OPTIONS-000015.dbtmp",
        ] {
            assert!(owns(own), "{own}");
        }
        for foreign in [
            ".kvperf-data",
            "kvperf-precondition.fill",
            "notes.txt",
            "photos",
            "app.log",
            "notes.sst",
            "MANIFEST-notes",
            "LOG.old.mine",
            ".log",
        ] {
            assert!(!owns(foreign), "{foreign}");
        }
    }
}
