//! Command-line interface: clap structs, YCSB's single-dash flags, and the
//! dispatch to one function per subcommand.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;
use crate::error::InputError;

const ABOUT: &str = "Benchmark key-value and storage engines the way storage studies do.";

const LONG_ABOUT: &str = "\
Benchmark key-value and storage engines the way storage studies do: YCSB's
core workloads with YCSB's exact semantics and output, db_bench's benchmarks
with db_bench's flags and output, honest latency (per-operation
HdrHistograms, coordinated-omission-correct with -target), on real engines.

Examples:
  kvperf load -P workloads/workloada -p recordcount=100000 --db /tmp/kv
  kvperf run  -P workloads/workloada -p recordcount=100000 -p operationcount=1000000 \\
              -threads 8 --db /tmp/kv -s
  kvperf run  --engine null -P workloads/workloadc -p recordcount=1000000 \\
              -p operationcount=10000000 -threads 2
  kvperf bench --benchmarks=fillseq,readrandom --num=1000000 --value_size=4096 \\
              --threads=8 --histogram=1 --db=/tmp/kvbench      # db_bench's flags and output";

#[derive(Debug, Parser)]
#[command(name = "kvperf", version = version(), about = ABOUT, long_about = LONG_ABOUT)]
// A later flag overrides an earlier one, as a later `-p` does.
#[command(args_override_self = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

fn version() -> &'static str {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (commit ",
        env!("KVPERF_GIT_COMMIT"),
        ", RocksDB ",
        env!("KVPERF_ROCKSDB_VERSION"),
        ")"
    )
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load records into the engine (YCSB's `-load` phase).
    #[command(
        long_about = "Load records into the engine (YCSB's `-load` phase).\n\n\
        Inserts `insertcount` (default `recordcount` - `insertstart`) records with\n\
        keys from `insertstart` on.\n\n\
        Example:\n  kvperf load -P workloads/workloada -p recordcount=100000 --db /tmp/kv -threads 4"
    )]
    Load(YcsbArgs),
    /// Run a workload's transactions (YCSB's `-t` phase).
    #[command(long_about = "Run a workload's transactions (YCSB's `-t` phase).\n\n\
        Performs `operationcount` operations (or runs for `maxexecutiontime` seconds)\n\
        chosen by the workload's proportions.\n\n\
        Example:\n  kvperf run -P workloads/workloadb -p recordcount=100000 -p operationcount=500000 \\\n      -threads 8 --db /tmp/kv -s")]
    Run(YcsbArgs),
    /// Run db_bench's benchmarks with db_bench's flags and output.
    #[command(
        long_about = "Run db_bench's benchmarks with db_bench's flags, defaults and output\n\
        (RocksDB 11.8 tools/db_bench_tool.cc): one result line per benchmark, the\n\
        percentile block with --histogram=1. Flags take `--flag=value` or `-flag=value`.\n\n\
        Example:\n  kvperf bench --benchmarks=fillrandom,readrandom,readwhilewriting --num=1000000 \\\n      \
        --value_size=4096 --threads=8 --histogram=1 --db=/tmp/kvbench"
    )]
    Bench(Box<BenchArgs>),
    /// Wait until a store's background work (flushes, compactions) is done.
    #[command(
        long_about = "Open the store, wait until its background work (memtable flushes,\n\
        compactions) is done, and close it, so that the next measurement starts from a\n\
        quiet store. Use it between phases when comparing runs.\n\n\
        Example:\n  kvperf settle --db /tmp/kv -p rocksdb.compression=lz4"
    )]
    Settle(SettleArgs),
    /// Run a study written as a plan (plans/*.toml), or show its steps.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Write Markdown, CSV and HTML (SVG charts) reports from results files.
    #[command(
        long_about = "Write report.md, report.csv and report.html (self-contained, with\n\
        SVG charts) into --out from one or more results files of `kvperf plan run`.\n\
        Each plan config is a column; the first is compared with each other one.\n\n\
        Example:\n  kvperf report results/seed-000.jsonl --out reports/seed-000"
    )]
    Report(ReportArgs),
    /// Print the comparison of two configurations (or two results files).
    #[command(
        long_about = "Print, as Markdown tables, the first configuration's improvement over\n\
        the others: peak and average throughput improvement, latency per thread count.\n\
        Give one results file holding two configs, or two files (e.g. two machines).\n\n\
        Example:\n  kvperf compare machine-a.jsonl machine-b.jsonl"
    )]
    Compare(CompareArgs),
    /// List the engines this binary was built with.
    Engines,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Run every step not yet in --results, appending each as one fsynced JSON line.
    #[command(
        long_about = "Run every step of PLAN not yet in --results: each finished step is\n\
        appended to FILE as one JSON line and fsynced, so a crash or kill -9 loses at most\n\
        the step in progress; rerun the same command to resume.\n\n\
        Example:\n  kvperf plan run plans/seed-000-rocksdb-ycsb.toml --scale 0.0005 \\\n      \
        --results results/seed-000.jsonl --db tmpfs=/dev/shm/kv --db disk=/var/tmp/kv"
    )]
    Run(PlanRunArgs),
    /// Validate PLAN and list its steps and their command lines.
    Show(PlanShowArgs),
}

#[derive(Debug, Args)]
pub struct PlanShowArgs {
    /// Plan file (TOML).
    pub plan: PathBuf,
    /// Multiply record and operation counts and durations by F (e.g. 0.001).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub scale: f64,
    /// Use DIR as config NAME's data directory; repeatable.
    #[arg(long = "db", value_name = "NAME=DIR", value_parser = parse_db_override)]
    pub db: Vec<(String, PathBuf)>,
}

#[derive(Debug, Args)]
pub struct PlanRunArgs {
    #[command(flatten)]
    pub plan: PlanShowArgs,
    /// Results file (JSON lines): appended to, and read to skip finished steps.
    #[arg(long, value_name = "FILE")]
    pub results: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results files of `kvperf plan run`.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Directory for report.md, report.csv and report.html.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One results file with two or more configs, or several files.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
}

fn parse_db_override(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, dir)) if !name.is_empty() && !dir.is_empty() => {
            Ok((name.to_string(), PathBuf::from(dir)))
        }
        _ => Err(format!(
            "'{text}' is not NAME=DIR (e.g. --db disk=/mnt/nvme/kv)"
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YCSB's text format: `[OVERALL], Throughput(ops/sec), ...`.
    Text,
    /// One JSON document with configuration, host facts and all figures.
    Json,
}

#[derive(Debug, Args)]
pub struct YcsbArgs {
    /// Workload property file (Java properties syntax); repeatable, later files win.
    /// Example: -P workloads/workloada
    #[arg(short = 'P', value_name = "FILE")]
    pub workload_files: Vec<PathBuf>,

    /// Set a property, overriding the files; repeatable.
    /// Example: -p recordcount=1000000 -p rocksdb.compression=lz4
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,

    /// Client threads (also `-threads N`, or property `threadcount`). Default 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,

    /// Target total throughput in ops/s (also `-target N`); latency is then
    /// also measured from each operation's intended start.
    #[arg(long, value_name = "OPS", value_parser = clap::value_parser!(u64).range(1..))]
    pub target: Option<u64>,

    /// Print a status line every `status.interval` seconds (default 10) on stderr.
    #[arg(short = 's')]
    pub status: bool,

    /// Label prefixed to status lines.
    #[arg(short = 'l', value_name = "LABEL", default_value = "")]
    pub label: String,

    /// Engine to benchmark (see `kvperf engines`).
    #[arg(long, value_name = "NAME", default_value = "rocksdb")]
    pub engine: String,

    /// Data directory; created and marked by kvperf if missing. kvperf
    /// refuses a non-empty directory that is not a store it can use.
    #[arg(long, value_name = "DIR", default_value = "kvperf-data")]
    pub db: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Never draw a progress bar (it is drawn only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
pub struct SettleArgs {
    /// Engine of the store.
    #[arg(long, value_name = "NAME", default_value = "rocksdb")]
    pub engine: String,
    /// Data directory of an existing store.
    #[arg(long, value_name = "DIR", default_value = "kvperf-data")]
    pub db: PathBuf,
    /// Engine option, as for `run` (e.g. -p rocksdb.compression=lz4); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,
    /// Compact the whole store first (RocksDB: every key range to the
    /// bottom level), so each measurement starts from the same shape.
    #[arg(long)]
    pub compact: bool,
}

/// db_bench's flags (gflags): `--name=value`, booleans as `--name`,
/// `--name=1|0|true|false`. Defaults are db_bench's.
#[derive(Debug, Args, serde::Serialize)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order: fillseq, fillrandom, overwrite,
    /// readrandom, readseq, readwhilewriting, readrandomwriterandom, seekrandom,
    /// updaterandom, deleterandom, waitforcompaction (not measured).
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
    #[arg(long = "threads", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// Seconds each benchmark runs; 0 = run the operation count.
    #[arg(long = "duration", value_name = "SECONDS", default_value_t = 0)]
    pub duration: u64,
    #[arg(long = "key_size", value_name = "BYTES", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub key_size: u32,
    #[arg(long = "value_size", value_name = "BYTES", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
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
    /// Database directory (db_bench's default: /tmp/rocksdbtest-<uid>/dbbench).
    #[arg(long = "db", value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Percent of reads in readrandomwriterandom.
    #[arg(long = "readwritepercent", value_name = "PERCENT", default_value_t = 90, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub readwritepercent: u32,
    /// Seed base; 0 = derived from the current time.
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Block cache bytes.
    #[arg(long = "cache_size", value_name = "BYTES", default_value_t = 32 << 20)]
    pub cache_size: u64,
    /// Bloom filter bits per key; negative = no filter.
    #[arg(long = "bloom_bits", value_name = "BITS", default_value_t = -1.0, allow_negative_numbers = true)]
    pub bloom_bits: f64,
    /// none, snappy, lz4, lz4hc, zstd, zlib, bzip2.
    #[arg(
        long = "compression_type",
        value_name = "NAME",
        default_value = "snappy"
    )]
    pub compression_type: String,
    #[arg(long = "write_buffer_size", value_name = "BYTES", default_value_t = 64 << 20)]
    pub write_buffer_size: u64,
    #[arg(long = "max_background_jobs", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_background_jobs: u32,
    /// Sync every write.
    #[arg(long = "sync", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub sync: bool,
    /// Write without the WAL.
    #[arg(long = "disable_wal", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub disable_wal: bool,
    /// Print RocksDB's statistics at the end.
    #[arg(long = "statistics", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub statistics: bool,
    /// Print the latency percentile block after each result line.
    #[arg(long = "histogram", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub histogram: bool,
    /// Write `secs_elapsed,interval_qps` to --report_file every N seconds.
    #[arg(
        long = "report_interval_seconds",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub report_interval_seconds: u64,
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
        default_value_t = 0
    )]
    pub benchmark_write_rate_limit: u64,
    /// Next() calls after each Seek in seekrandom.
    #[arg(long = "seek_nexts", value_name = "N", default_value_t = 0)]
    pub seek_nexts: u64,
    /// kvperf: sync and drop the page cache before each benchmark (needs root).
    #[arg(long = "drop_caches", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_gflags_bool)]
    pub drop_caches: bool,
    /// kvperf: engine (see `kvperf engines`).
    #[arg(long = "engine", value_name = "NAME", default_value = "rocksdb")]
    pub engine: String,
    /// kvperf: also write every result and the full configuration as JSON to
    /// FILE, rewritten atomically after each benchmark.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// kvperf: never draw a progress bar.
    #[arg(long = "no-progress")]
    pub no_progress: bool,
}

fn parse_gflags_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        other => Err(format!(
            "'{other}' is not a boolean (use 1, 0, true or false)"
        )),
    }
}

/// YCSB spells multi-letter flags with one dash, and so may db_bench's
/// gflags; clap wants two.
fn normalize_ycsb_flags(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let args: Vec<OsString> = args.into_iter().collect();
    let is_bench = args.get(1).is_some_and(|a| a == "bench");
    args.into_iter()
        .map(|a| match a.to_str() {
            Some("-threads") => "--threads".into(),
            Some("-target") => "--target".into(),
            Some(flag) if is_bench && is_single_dash_long(flag) => format!("-{flag}").into(),
            _ => a,
        })
        .collect()
}

fn is_single_dash_long(arg: &str) -> bool {
    let bytes = arg.as_bytes();
    bytes.len() > 2 && bytes[0] == b'-' && bytes[1].is_ascii_alphabetic()
}

pub fn run(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<()> {
    let cli = match Cli::try_parse_from(normalize_ycsb_flags(args)) {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            err.print()?;
            return Ok(());
        }
        Err(err) => return Err(InputError::Invalid(first_line(&err.to_string())).into()),
    };
    match cli.command {
        Command::Load(args) => commands::ycsb::run(args, crate::workload::ycsb::Phase::Load),
        Command::Run(args) => commands::ycsb::run(args, crate::workload::ycsb::Phase::Run),
        Command::Bench(args) => commands::bench::run(*args),
        Command::Settle(args) => commands::settle::run(args),
        Command::Plan(PlanCommand::Run(args)) => commands::plan::run(args),
        Command::Plan(PlanCommand::Show(args)) => commands::plan::show(args),
        Command::Report(args) => commands::report::report(args),
        Command::Compare(args) => commands::report::compare(args),
        Command::Engines => {
            for spec in crate::engine::registry() {
                println!("{:<10} {}", spec.name, spec.about);
            }
            Ok(())
        }
    }
}

/// clap's message without its "error: " prefix and usage footer.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycsb_style_flags_parse() {
        let args = [
            "kvperf", "run", "-P", "w", "-p", "a=1", "-threads", "8", "-target", "100", "-s",
        ];
        let cli = Cli::try_parse_from(normalize_ycsb_flags(args.map(OsString::from))).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(a.threads, Some(8));
        assert_eq!(a.target, Some(100));
        assert!(a.status);
        assert_eq!(a.properties, vec!["a=1"]);
    }

    #[test]
    fn db_bench_style_flags_parse() {
        let args = [
            "kvperf",
            "bench",
            "--benchmarks=readrandom",
            "-num=5000",
            "--histogram",
            "--sync=0",
            "--reads",
            "-1",
        ];
        let cli = Cli::try_parse_from(normalize_ycsb_flags(args.map(OsString::from))).unwrap();
        let Command::Bench(a) = cli.command else {
            panic!("not bench")
        };
        assert_eq!(
            (a.num, a.reads, a.histogram, a.sync),
            (5000, -1, true, false)
        );
        assert_eq!(a.value_size, 100, "db_bench's default");
    }
}
