//! Command-line interface: clap structs, YCSB's single-dash flags, and the
//! dispatch to one function per subcommand.

use std::ffi::OsString;

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands;
use crate::commands::bench::BenchArgs;
use crate::commands::merge::MergeArgs;
use crate::commands::plan::{PlanRunArgs, PlanShowArgs};
use crate::commands::report::{CompareArgs, ReportArgs};
use crate::commands::settle::SettleArgs;
use crate::commands::ycsb::YcsbArgs;
use crate::error::InputError;

mod step_command;

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

/// Built with every parse, so without the RocksDB library's line, which
/// opens a probe store: `--version` prints [`full_version`].
fn version() -> &'static str {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (commit ",
        env!("KVPERF_GIT_COMMIT"),
        ")"
    )
}

/// "0.1.0 (commit abc, RocksDB 10.4.2, release library /path/librocksdb.so)":
/// the RocksDB actually loaded, read from it at run time.
fn full_version() -> String {
    format!(
        "{} (commit {}, {})",
        env!("CARGO_PKG_VERSION"),
        env!("KVPERF_GIT_COMMIT"),
        crate::engine::default_engine_library()
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
    /// Merge the results of a study's shards (`load|run --shard I/N`) exactly.
    #[command(
        long_about = "Merge the results of a study's shards (`kvperf load|run --shard I/N --format\n\
        json --output FILE`, one per process or machine) into one result, in the layout and\n\
        formats of a single run: latency histograms added per operation type (never\n\
        averaged percentiles), counts and errors summed, throughput over the union of the\n\
        shards' measured windows. Refuses shards of different studies, a shard given\n\
        twice or missing, and slices that overlap or leave records out.\n\n\
        Example:\n  kvperf merge shard-*.json --format json --output merged.json"
    )]
    Merge(MergeArgs),
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
        SVG charts) into --out from one or more results files of `kvperf plan run`\n\
        (or results of single runs: `kvperf run|merge --format json --output FILE`).\n\
        Each plan config is a column; the first is compared with each other one.\n\n\
        Example:\n  kvperf report results/seed-000.jsonl --out reports/seed-000"
    )]
    Report(ReportArgs),
    /// Print the comparison of two configurations (or two results files).
    #[command(
        long_about = "Print, as Markdown tables, each other configuration against the first\n\
        (the base), cell by cell, with a 95% confidence interval over the repeats\n\
        and a verdict (faster, slower, ~ for no difference; at least 4 repeats of\n\
        each cell), then the report: the first configuration's improvement over\n\
        the others, peak and average, latency per thread count. Give one results\n\
        file holding two configs, or two files (e.g. two machines).\n\n\
        --fail-if-slower PCT exits with code 4 when a figure is worse than the\n\
        base's by more than PCT with 95% confidence (a regression gate for CI).\n\n\
        Examples:\n  kvperf compare machine-a.jsonl machine-b.jsonl\n  \
        kvperf compare base.jsonl new.jsonl --fail-if-slower 5% --format json"
    )]
    Compare(CompareArgs),
    /// Judge two sets of repeats given as numbers, as `kvperf compare` does.
    #[command(
        long_about = "Compare the candidate's repeats (--new) with the baseline's (--base),\n\
        one figure per repeat, as `kvperf compare` compares cells: the ratio new/base\n\
        (Hodges-Lehmann), its exact 95% confidence interval (Mann-Whitney) and a\n\
        verdict: faster, slower, ~ (no difference at 95%), or need >= 4 repeats.\n\
        For figures that are not in results files: another tool's runs beside\n\
        kvperf's (bench/), a spreadsheet's columns. Latencies (--better lower) may\n\
        say what they are timed from (--base-latency-from, --new-latency-from:\n\
        actual or intended start); two different kinds are refused.\n\n\
        Example:\n  kvperf verdict --base 101,98,103,99,100 --new 118,121,115,124,119"
    )]
    Verdict(crate::commands::verdict::VerdictArgs),
    /// List the engines this binary was built with, what each can do and its options.
    Engines,
    /// Start, stop or check a database server kvperf runs on 127.0.0.1.
    #[command(subcommand)]
    Server(crate::commands::server::ServerCommand),
    /// Measure the device under a data directory: `kvperf device corners`.
    #[command(subcommand)]
    Device(crate::commands::device::DeviceCommand),
    /// Replay a trace on an engine: closed loop, or open loop at its times.
    #[command(
        long_about = "Replay a trace (`-p trace.output=FILE` or `kvperf trace import`) on an\n\
        engine: first the keys the trace reads before it writes them are loaded (value\n\
        sizes from the trace) into a fresh store, then the operations are issued in the\n\
        trace's order, closed loop by --threads clients, or open loop at the trace's own\n\
        times divided by --speed, latency from those times (a replay that falls behind\n\
        says by how much). The output is a run's: YCSB's text, or JSON with histograms.\n\n\
        Examples:\n  kvperf replay run.kvtrace --engine lmdb --db /tmp/kv --threads 4\n  \
        kvperf replay run.kvtrace --engine rocksdb --db /tmp/kv --speed 2 --format json --output r.json"
    )]
    Replay(crate::commands::replay::ReplayArgs),
    /// Write a YCSB workload file fitted to a trace.
    #[command(
        long_about = "Write a YCSB workload file that describes a trace: the operation mix,\n\
        the key popularity (uniform, zipfian with its constant by maximum likelihood,\n\
        hotspot, exponential: the one whose key-rank CDF is nearest the trace's by\n\
        Kolmogorov-Smirnov distance, printed for each), field count and value sizes,\n\
        scan lengths and the offered rate. docs/traces.md says what a fit cannot capture.\n\
        With --check, the trace is replayed and the fitted workload loaded and run on the\n\
        same engine and store, and their throughput, p50/p95/p99 per operation kind and\n\
        (RocksDB) block-cache hit ratio are printed side by side with their differences.\n\n\
        Examples:\n  kvperf fit run.kvtrace --output workloads/mine\n  \
        kvperf fit run.kvtrace --check --engine rocksdb --db /tmp/kv --threads 2"
    )]
    Fit(crate::commands::fit::FitArgs),
    /// Show a trace captured with `-p trace.output=FILE`, or import one.
    #[command(subcommand)]
    Trace(crate::commands::trace::TraceCommand),
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
    /// List the plans built into kvperf: `plan run NAME` takes each name
    /// from any directory (a file of that name in the current one wins).
    List,
}

/// The command line as kvperf reads it: YCSB's and db_bench's spellings
/// rewritten ([`crate::dialect`]), then clap's parse.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<Cli> {
    let rewritten = crate::dialect::rewrite(args, &Cli::command())?;
    let mut cli = Cli::try_parse_from(rewritten.args)?;
    if let Command::Bench(bench) = &mut cli.command {
        bench.ignored_flags = rewritten.ignored;
    }
    Ok(cli)
}

pub fn run(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<()> {
    let cli = match parse(args) {
        Ok(cli) => cli,
        Err(err) => {
            return match err.downcast::<clap::Error>() {
                Ok(err) if err.kind() == clap::error::ErrorKind::DisplayVersion => {
                    crate::say!("kvperf {}", full_version());
                    stdout_took_it(Ok(()))
                }
                // --help, in the words of every listing stdout did not take.
                Ok(err) if !err.use_stderr() => err
                    .print()
                    .map_err(|e| anyhow::anyhow!("cannot write to standard output ({e})")),
                Ok(err) => Err(InputError::Invalid(clap_message(&err)).into()),
                Err(err) => Err(err),
            };
        }
    };
    let measures = matches!(
        cli.command,
        Command::Load(_)
            | Command::Run(_)
            | Command::Bench(_)
            | Command::Plan(PlanCommand::Run(_))
            | Command::Device(_)
            | Command::Replay(_)
            | Command::Fit(_)
    );
    if measures {
        crate::files::check_file_size_limit()?;
    }
    let done = match cli.command {
        Command::Load(args) => commands::ycsb::run(args, crate::workload::ycsb::Phase::Load),
        Command::Run(args) => commands::ycsb::run(args, crate::workload::ycsb::Phase::Run),
        Command::Merge(args) => commands::merge::run(args),
        Command::Bench(args) => commands::bench::run(*args),
        Command::Settle(args) => commands::settle::run(args),
        Command::Plan(PlanCommand::Run(args)) => commands::plan::run(args, check_step),
        Command::Plan(PlanCommand::Show(args)) => commands::plan::show(args, check_step),
        Command::Plan(PlanCommand::List) => commands::plan::list(),
        Command::Report(args) => commands::report::report(args),
        Command::Compare(args) => commands::report::compare(args),
        Command::Verdict(args) => commands::verdict::run(args),
        Command::Engines => commands::engines::list(),
        Command::Device(command) => commands::device::run(command),
        Command::Server(command) => commands::server::run(command),
        Command::Trace(command) => commands::trace::run(command),
        Command::Replay(args) => commands::replay::run(args),
        Command::Fit(args) => commands::fit::run(args),
    };
    stdout_took_it(done)
}

/// A listing, a version or a report's paths that stdout did not take is a
/// failure too (commands that print results keep them and say where).
fn stdout_took_it(done: anyhow::Result<()>) -> anyhow::Result<()> {
    match (done, crate::output::stdout::failure()) {
        (Ok(()), Some(why)) => Err(anyhow::anyhow!("cannot write to standard output ({why})")),
        (done, _) => done,
    }
}

/// Checks a plan step's command (`load|run|bench|device ...`) as that
/// command checks it before it opens an engine or measures: its command
/// line through the same parser (clap, then the command's own checks), and
/// read back into a [`StepCommand`](crate::plan::StepCommand) the way
/// [`step_command::step_command`] does, so a command line no step has is
/// refused before the plan's first step. Handed to the plan runner as its
/// [`crate::plan::runner::StepCheck`].
pub(crate) fn check_step(
    command: &crate::plan::StepCommand,
) -> anyhow::Result<crate::plan::runner::StepFiles> {
    let args = command.args();
    let words = std::iter::once("kvperf".into()).chain(args.iter().map(Into::into));
    let cli = parse(words).map_err(|e| match e.downcast::<clap::Error>() {
        Ok(clap) => InputError::Invalid(clap_message(&clap)).into(),
        Err(e) => e,
    })?;
    let files = match cli.command {
        Command::Load(a) => commands::ycsb::check_step(&a, crate::workload::ycsb::Phase::Load)?,
        Command::Run(a) => commands::ycsb::check_step(&a, crate::workload::ycsb::Phase::Run)?,
        Command::Bench(a) => commands::bench::check_step(&a)?,
        Command::Device(d) => {
            commands::device::check_step(&d)?;
            Vec::new()
        }
        _ => Vec::new(),
    };
    step_command::step_command(&args)?;
    Ok(files)
}

/// clap's message on one line, with a did-you-mean for a subcommand one
/// or two typos away that clap's own (Jaro) measure misses: `rn` for `run`.
pub(crate) fn clap_message(err: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let line = one_line(&err.to_string());
    let typed = match err.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(typed)) if err.kind() == ErrorKind::InvalidSubcommand => typed,
        _ => return line,
    };
    let command = Cli::command();
    let names = command.get_subcommands().map(|s| s.get_name());
    match crate::error::did_you_mean(typed, names) {
        Some(name) if !line.contains("tip:") => {
            format!("{line}; tip: a similar subcommand exists: '{name}'")
        }
        _ => line,
    }
}

/// clap's whole message on one line, without its "error: " prefix and
/// usage footer: the missing arguments after "were not provided:", the
/// possible values and the "a similar argument exists" tip, joined by "; ".
fn one_line(message: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut listing = false;
    for line in message.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if line.is_empty() {
            listing = false;
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        match parts.last_mut() {
            Some(last) if listing => {
                last.push_str(if last.ends_with(':') { " " } else { ", " });
                last.push_str(line);
            }
            _ => parts.push(line.to_string()),
        }
        listing |= line.ends_with(':');
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::private_args::with_private_args;

    #[test]
    fn private_args_from_the_environment_join_the_command_line() {
        let args = ["kvperf", "server", "start", "ferretdb"].map(OsString::from);
        let private = r#"["-p","ferretdb_pg_url=postgres://kv:S3cr3t@h/db"]"#;
        let all = with_private_args(args.clone(), Some(private.into())).unwrap();
        let Command::Server(commands::server::ServerCommand::Start(a)) =
            parse(all).unwrap().command
        else {
            panic!("not server start")
        };
        assert_eq!(a.settings, ["ferretdb_pg_url=postgres://kv:S3cr3t@h/db"]);
        assert_eq!(with_private_args(args.clone(), None).unwrap(), args);
        let err = with_private_args(args, Some("-p x".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "KVPERF_PRIVATE_ARGS is not a JSON array of strings"
        );
    }

    #[test]
    fn ycsb_style_flags_parse() {
        let args = [
            "kvperf", "run", "-P", "w", "-p", "a=1", "-threads", "8", "-target", "100", "-s",
        ];
        let cli = parse(args.map(OsString::from)).unwrap();
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
        let cli = parse(args.map(OsString::from)).unwrap();
        let Command::Bench(a) = cli.command else {
            panic!("not bench")
        };
        assert_eq!(
            (a.num, a.reads, a.histogram, a.sync),
            (5000, -1, true, Some(false))
        );
        assert_eq!(a.value_size, 100, "db_bench's default");
    }

    #[test]
    fn clap_messages_keep_their_lists_and_tips_on_one_line() {
        let message = |args: &[&str]| {
            let args = std::iter::once("kvperf").chain(args.iter().copied());
            let err = parse(args.map(OsString::from)).unwrap_err();
            one_line(&err.downcast::<clap::Error>().unwrap().to_string())
        };
        assert_eq!(
            message(&["plan", "run"]),
            "the following required arguments were not provided: --results <FILE>, <PLAN>"
        );
        let typo = message(&["run", "--enigne", "null"]);
        assert!(
            typo.starts_with("unexpected argument '--enigne' found; "),
            "{typo}"
        );
        assert!(typo.contains("'--engine'"), "{typo}");
        let subcommand = |args: &[&str]| {
            let args = std::iter::once("kvperf").chain(args.iter().copied());
            let err = parse(args.map(OsString::from)).unwrap_err();
            clap_message(&err.downcast::<clap::Error>().unwrap())
        };
        assert_eq!(
            subcommand(&["rn"]),
            "unrecognized subcommand 'rn'; tip: a similar subcommand exists: 'run'"
        );
        assert_eq!(
            subcommand(&["lod"]),
            "unrecognized subcommand 'lod'; tip: a similar subcommand exists: 'load'"
        );
        let value = message(&["run", "--format", "JSON"]);
        assert!(
            value.contains("'JSON'") && value.contains("[possible values: text, json]"),
            "{value}"
        );
        assert!(!value.contains('\n') && !value.contains("Usage"), "{value}");
    }

    #[test]
    fn every_command_defaults_to_the_one_default_engine() {
        assert!(crate::engine::KNOWN_ENGINES
            .iter()
            .any(|(name, _)| *name == crate::engine::DEFAULT_ENGINE));
        let of = |args: &[&str]| parse(args.iter().map(OsString::from)).unwrap().command;
        let Command::Run(run) = of(&["kvperf", "run"]) else {
            panic!("not run")
        };
        let Command::Settle(settle) = of(&["kvperf", "settle"]) else {
            panic!("not settle")
        };
        let Command::Bench(bench) = of(&["kvperf", "bench"]) else {
            panic!("not bench")
        };
        for engine in [run.engine, settle.engine, bench.engine] {
            assert_eq!(engine, crate::engine::DEFAULT_ENGINE);
        }
        assert!(
            full_version().ends_with(&format!(", {})", crate::engine::default_engine_library()))
        );
    }
}
