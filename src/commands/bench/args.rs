//! db_bench's flags (gflags): `--name=value`, booleans as `--name`,
//! `--name=1|0|true|false`. Defaults are db_bench's; the flags that
//! configure the engine are `Option`s, so an engine can tell the ones a
//! user set (and warn about those it cannot honour) from db_bench's defaults.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::engine::DbBenchFlags;

#[derive(Debug, Args, serde::Serialize)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order: fillseq, fillrandom, overwrite,
    /// readrandom, readseq, readwhilewriting, readrandomwriterandom, seekrandom,
    /// updaterandom, deleterandom, waitforcompaction and compact (not measured).
    #[arg(
        long = "benchmarks",
        value_name = "LIST",
        default_value = "fillrandom,readrandom"
    )]
    pub benchmarks: String,
    /// Number of keys; also the writes (fills) and reads per thread.
    #[arg(long = "num", value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub num: u64,
    /// Reads per thread; -1 means --num.
    #[arg(long = "reads", value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,
    /// Threads (readwhilewriting adds one writer).
    #[arg(long = "threads", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub threads: u32,
    /// Seconds each benchmark runs (or 10m, 1.5h); 0 = run the operation count.
    #[arg(long = "duration", value_name = "SECONDS", default_value = "0", value_parser = crate::units::duration_arg(0, 315_360_000))]
    #[serde(serialize_with = "as_seconds")]
    pub duration: Duration,
    /// Bytes per key (sizes take units everywhere: 4k, 1m, 64MiB).
    #[arg(long = "key_size", value_name = "BYTES", default_value_t = 16, value_parser = key_size)]
    pub key_size: u32,
    #[arg(long = "value_size", value_name = "BYTES", default_value_t = 100, value_parser = value_size)]
    pub value_size: u32,
    /// Fraction a value compresses to (db_bench's value generator).
    #[arg(
        long = "compression_ratio",
        value_name = "FRACTION",
        default_value_t = 0.5
    )]
    pub compression_ratio: f64,
    /// Reuse the database in --db instead of starting empty.
    #[arg(long = "use_existing_db", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub use_existing_db: bool,
    /// Database directory of a directory engine (db_bench's default:
    /// /tmp/rocksdbtest-<uid>/dbbench).
    #[arg(long = "db", value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Percent of reads in readrandomwriterandom.
    #[arg(long = "readwritepercent", value_name = "PERCENT", default_value_t = 90, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub readwritepercent: u32,
    /// Seed base; 0 = derived from the current time.
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Block cache bytes (db_bench's default: 33554432).
    #[arg(long = "cache_size", value_name = "BYTES", value_parser = crate::units::size_arg(0, u64::MAX))]
    pub cache_size: Option<u64>,
    /// Bloom filter bits per key; negative = no filter (the default).
    #[arg(
        long = "bloom_bits",
        value_name = "BITS",
        allow_negative_numbers = true
    )]
    pub bloom_bits: Option<f64>,
    /// none, snappy (the default), lz4, lz4hc, zstd, zlib, bzip2.
    #[arg(long = "compression_type", value_name = "NAME")]
    pub compression_type: Option<String>,
    /// Memtable bytes (db_bench's default: 67108864).
    #[arg(long = "write_buffer_size", value_name = "BYTES", value_parser = crate::units::size_arg(0, u64::MAX))]
    pub write_buffer_size: Option<u64>,
    /// Flush and compaction threads (db_bench's default: 2).
    #[arg(long = "max_background_jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_background_jobs: Option<u32>,
    /// Sync every write.
    #[arg(long = "sync", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub sync: Option<bool>,
    /// Write without the WAL.
    #[arg(long = "disable_wal", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub disable_wal: Option<bool>,
    /// Print the engine's statistics at the end.
    #[arg(long = "statistics", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub statistics: Option<bool>,
    /// Read with O_DIRECT, past the page cache.
    #[arg(long = "use_direct_reads", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub use_direct_reads: Option<bool>,
    /// Flush and compact with O_DIRECT.
    #[arg(long = "use_direct_io_for_flush_and_compaction", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub use_direct_io_for_flush_and_compaction: Option<bool>,
    /// Data block bytes (RocksDB's default: 4096).
    #[arg(long = "block_size", value_name = "BYTES", value_parser = crate::units::size_arg(1, 1 << 30))]
    pub block_size: Option<u64>,
    /// LSM levels (RocksDB's default: 7).
    #[arg(long = "num_levels", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub num_levels: Option<u32>,
    /// Table files kept open; -1 = all (the default).
    #[arg(long = "open_files", value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-1..=i32::MAX as i64))]
    pub open_files: Option<i64>,
    /// Size levels from the last one up (db_bench's default: false).
    #[arg(long = "level_compaction_dynamic_level_bytes", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub level_compaction_dynamic_level_bytes: Option<bool>,
    /// Sync files every N bytes written; 0 = never (the default).
    #[arg(long = "bytes_per_sync", value_name = "BYTES", value_parser = crate::units::size_arg(0, 1 << 40))]
    pub bytes_per_sync: Option<u64>,
    /// SST file bytes at level 1 (RocksDB's default: 64 MiB).
    #[arg(long = "target_file_size_base", value_name = "BYTES", value_parser = crate::units::size_arg(1, 1 << 40))]
    pub target_file_size_base: Option<u64>,
    /// Memtables before writes stall (the default: 2).
    #[arg(long = "max_write_buffer_number", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_write_buffer_number: Option<u32>,
    /// Seconds between the engine's own stats dumps; RocksDB writes them
    /// into the store's LOG file (db_bench prints them on stdout; kvperf
    /// keeps stdout for results). 0 = none.
    #[arg(long = "stats_interval_seconds", value_name = "SECONDS", value_parser = whole_seconds)]
    pub stats_interval_seconds: Option<u64>,
    /// The memtable: skip_list (RocksDB's, the only one kvperf runs).
    #[arg(long = "memtablerep", value_name = "NAME")]
    pub memtablerep: Option<String>,
    /// Where db_bench puts the write-ahead log; kvperf keeps it in --db,
    /// so only --wal_dir equal to --db is accepted.
    #[arg(long = "wal_dir", value_name = "DIR")]
    pub wal_dir: Option<PathBuf>,
    /// Comma-separated flags to ignore when kvperf does not know them
    /// (gflags' --undefok); each ignored flag is named in a warning.
    #[arg(long = "undefok", value_name = "FLAGS")]
    pub undefok: Option<String>,
    /// Flags dropped under --undefok (filled by the command line's reader).
    #[arg(skip)]
    #[serde(skip)]
    pub ignored_flags: Vec<String>,
    /// Print the latency percentile block after each result line.
    #[arg(long = "histogram", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub histogram: bool,
    /// Write `secs_elapsed,interval_qps` to --report_file every N seconds.
    #[arg(
        long = "report_interval_seconds",
        value_name = "SECONDS",
        default_value = "0",
        value_parser = crate::units::duration_arg(0, 315_360_000)
    )]
    #[serde(serialize_with = "as_seconds")]
    pub report_interval_seconds: Duration,
    #[arg(
        long = "report_file",
        value_name = "FILE",
        default_value = "report.csv"
    )]
    pub report_file: PathBuf,
    /// Bytes per second for readwhilewriting's writer; 0 = unlimited.
    #[arg(
        long = "benchmark_write_rate_limit",
        value_name = "BYTES",
        default_value = "0",
        value_parser = crate::units::size_arg(0, u64::MAX)
    )]
    pub benchmark_write_rate_limit: u64,
    /// Next() calls after each Seek in seekrandom.
    #[arg(long = "seek_nexts", value_name = "N", default_value_t = 0)]
    pub seek_nexts: u64,
    /// kvperf: sync and drop the page cache before each benchmark (needs root).
    #[arg(long = "drop_caches", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub drop_caches: bool,
    /// kvperf: milliseconds between polls of the engine's background work
    /// (flushes, compactions, stalls...) for each benchmark's `events`; 0 = none.
    #[arg(long = "events_interval_ms", value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub events_interval_ms: u64,
    /// kvperf: engine (see `kvperf engines`).
    #[arg(long = "engine", value_name = "NAME", default_value = crate::engine::DEFAULT_ENGINE)]
    pub engine: String,
    /// kvperf: engine option, as for `kvperf run` (`-p <engine>.<option>=VALUE`); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    #[serde(skip)]
    pub properties: Vec<String>,
    /// kvperf: also write every result and the full configuration as JSON to
    /// FILE, rewritten atomically after each benchmark (`-`: stdout, once at
    /// the end). `--format json --output FILE` says the same.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// kvperf: never draw a progress bar.
    #[arg(long = "no-progress")]
    pub no_progress: bool,
    /// kvperf: serve the benchmark in progress's figures (operations,
    /// failures, latency quantiles per operation type) at
    /// http://ADDR/metrics in the Prometheus text format, e.g.
    /// 127.0.0.1:9464, as `kvperf run --metrics-addr` does.
    #[arg(long = "metrics-addr", alias = "metrics_addr", value_name = "ADDR")]
    #[serde(skip)]
    pub metrics_addr: Option<String>,
}

/// Keys and values are allocated per thread; these bound what one flag can ask for.
pub const MAX_KEY_SIZE: u64 = 1 << 20;
pub const MAX_VALUE_SIZE: u64 = 64 << 20;

impl BenchArgs {
    /// The flags that configure the engine, as given.
    pub fn engine_flags(&self) -> DbBenchFlags {
        DbBenchFlags {
            cache_size: self.cache_size,
            bloom_bits: self.bloom_bits,
            compression_type: self.compression_type.clone(),
            write_buffer_size: self.write_buffer_size,
            max_background_jobs: self.max_background_jobs,
            sync: self.sync,
            disable_wal: self.disable_wal,
            statistics: self.statistics,
            use_direct_reads: self.use_direct_reads,
            use_direct_io_for_flush_and_compaction: self.use_direct_io_for_flush_and_compaction,
            block_size: self.block_size,
            num_levels: self.num_levels,
            open_files: self.open_files,
            level_compaction_dynamic_level_bytes: self.level_compaction_dynamic_level_bytes,
            bytes_per_sync: self.bytes_per_sync,
            target_file_size_base: self.target_file_size_base,
            max_write_buffer_number: self.max_write_buffer_number,
            stats_interval_seconds: self.stats_interval_seconds,
            memtablerep: self.memtablerep.clone(),
        }
    }
}

fn key_size(text: &str) -> Result<u32, String> {
    crate::units::size_arg(1, MAX_KEY_SIZE)(text).map(|b| b as u32)
}

fn value_size(text: &str) -> Result<u32, String> {
    crate::units::size_arg(1, MAX_VALUE_SIZE)(text).map(|b| b as u32)
}

/// A duration in whole seconds (`60`, `1m`), as RocksDB takes its periods.
fn whole_seconds(text: &str) -> Result<u64, String> {
    let d = crate::units::duration_arg(0, u32::MAX as u64)(text)?;
    if d.subsec_nanos() != 0 {
        return Err(format!("'{text}' is not a whole number of seconds"));
    }
    Ok(d.as_secs())
}

/// A duration flag as recorded in results: seconds (`10`, `1.5`).
fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&d.as_secs_f64().to_string())
}

pub fn parse_gflags_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        other => Err(format!(
            "'{other}' is not a boolean (use 1, 0, true or false)"
        )),
    }
}
