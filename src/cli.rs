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
core workloads with YCSB's exact semantics and output, honest latency
(per-operation HdrHistograms, coordinated-omission-correct with -target),
on real engines.

Examples:
  kvperf load -P workloads/workloada -p recordcount=100000 --db /tmp/kv
  kvperf run  -P workloads/workloada -p recordcount=100000 -p operationcount=1000000 \\
              -threads 8 --db /tmp/kv -s
  kvperf run  --engine null -P workloads/workloadc -p recordcount=1000000 \\
              -p operationcount=10000000 -threads 2";

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
    /// List the engines this binary was built with.
    Engines,
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

/// YCSB spells multi-letter flags with one dash; clap wants two.
fn normalize_ycsb_flags(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|a| match a.to_str() {
            Some("-threads") => "--threads".into(),
            Some("-target") => "--target".into(),
            _ => a,
        })
        .collect()
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
}
