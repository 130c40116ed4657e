//! `kvperf bench`: db_bench's benchmarks, flags and output on kvperf's
//! runner and engines. Each benchmark's result line is printed (and the
//! JSON file rewritten) as soon as it finishes, so an interrupted sequence
//! keeps what it measured.

mod args;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use args::BenchArgs;

use crate::engine::{self, Capability, Engine, EngineSpec, OpenMode, OpenOptions, StoreKind};
use crate::error::InputError;
use crate::files::{Destination, Written};
use crate::host::HostInfo;
use crate::measure::power::PowerSetup;
use crate::measure::{window_warnings, OpHistograms, OpKind, Outcome};
use crate::output::dbbench_text::{render_result_line, DbBenchHistogram, ResultLine};
use crate::output::{self};
use crate::properties::Properties;
use crate::results::step::StepOutput;
use crate::runner::before_window::Watching;
use crate::runner::{BeforeWindow, OpsLog, StallKeeper};
use crate::step;
use crate::workload::dbbench::{BenchConfig, Benchmark};

/// db_bench's histogram order (its `OperationType` enum) and names.
const HISTOGRAM_ORDER: [(OpKind, &str); 5] = [
    (OpKind::Read, "read"),
    (OpKind::Write, "write"),
    (OpKind::Delete, "delete"),
    (OpKind::Seek, "seek"),
    (OpKind::Update, "update"),
];

/// db_bench's per-interval file (`--report_file`), recognised by kvperf's
/// signature after db_bench's header (a report file db_bench wrote is a
/// user's, never replaced).
pub const OPS_CSV: Written = crate::runner::OPS_LOG_WRITTEN;

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    // db_bench's lines go to stdout as it measures: a reader gone is
    // noted, the figures are kept in --json or a named file.
    output::stdout::keep_going_on_a_gone_reader();
    let mut out = StepOutput::begin("bench");
    // Every file the run writes is checked before anything is measured.
    let mut outputs: Vec<_> = args.json.iter().map(|p| ("--json", p.as_path())).collect();
    if !args.report_interval_seconds.is_zero() {
        outputs.push(("--report_file", &args.report_file));
    }
    let db = args.db.as_deref();
    step::outputs_outside_store(&args.engine, db, &default_db_dir(), &outputs)?;
    let json = args
        .json
        .as_deref()
        .map(|p| Destination::check_or_stream(p, "--json", output::STEP_JSON, &[]))
        .transpose()?;
    let ops_log = (!args.report_interval_seconds.is_zero())
        .then(|| Destination::check(&args.report_file, "--report_file", OPS_CSV, &[]))
        .transpose()?;
    let measured = measure(&args, json.as_ref(), ops_log.as_ref(), &mut out);
    let finished = step::finish(&mut out, measured);
    // A lost ops log is the step's failure in its JSON too: a plan keeps a
    // step's figures by the JSON's error, and a JSON without one from a
    // step that exited 3 was dropped whole (pass 14).
    if let (Some(lost), None) = (crate::runner::lost_ops_log(), &out.error) {
        out.error = Some(crate::results::step::StepError {
            kind: crate::results::step::ErrorKind::Run,
            message: lost.to_string(),
        });
    }
    let json_text = output::json::to_pretty(&out);
    if let Some(json) = &json {
        json.write(json_text.as_bytes())?;
    }
    if let Some(why) = output::stdout::failure() {
        // db_bench's lines are lost with stdout; the figures are not.
        return Err(match &json {
            Some(json) => anyhow::anyhow!(
                "cannot write to standard output ({why}); every result is in '{}'",
                json.path().display()
            ),
            None => output::stdout::lost_stdout(why, json_text.as_bytes(), "json"),
        });
    }
    // A measured figure not where it was asked for fails the command,
    // said with any other failure in its one line.
    if let Some(lost) = crate::runner::lost_ops_log() {
        finished.map_err(|e| e.context(lost))?;
        anyhow::bail!("{lost}");
    }
    step::ended(finished)
}

/// The store as benchmarks name it: its directory, else the engine.
fn shown_db(engine: &str, db: Option<&Path>) -> String {
    db.map_or_else(|| engine.to_string(), |d| d.display().to_string())
}

fn measure(
    args: &BenchArgs,
    json: Option<&Destination>,
    ops_log: Option<&Destination>,
    out: &mut StepOutput,
) -> anyhow::Result<()> {
    let Checked {
        benches,
        cfg,
        spec,
        props,
        power,
        stall_timeout,
    } = checked_inputs(args, out)?;
    // Another RocksDB release (rocksdb.version): this command runs again on it.
    engine::run_on_asked_library(spec.name, &props)?;
    let db = step::data_dir(spec, args.db.as_deref(), &default_db_dir());
    let seed_base = seed_base(args);
    out.seed = seed_base;
    out.settings = flag_map(args, db.as_deref());
    let keeper = super::stall_keeper();
    step::keep_on_stall(&keeper, out, json, None);
    let limit = stall_timeout.filter(|_| matches!(spec.store, StoreKind::Server { .. }));
    let watched = |what, between| watched_for((what, between), &keeper, limit);
    let open = |mode, what, between| {
        let _watching = watched(what, between);
        engine::open(
            spec,
            &OpenOptions {
                dir: db.as_deref(),
                properties: &props,
                mode,
                runtime: None,
                clients: most_clients(&benches, args),
            },
        )
    };
    // db_bench destroys the database first unless --use_existing_db.
    let first = open(
        if args.use_existing_db {
            OpenMode::Existing
        } else {
            OpenMode::Fresh
        },
        "the engine to open",
        false,
    )?;
    out.engine = first.info();
    out.host = HostInfo::collect(db.clone().or_else(|| first.data_location()).as_deref());
    // None while a benchmark reopens it; every way out drops it bounded
    // (its sessions close, [`step::close_sessions`]).
    let mut engine = Some(first);
    let mut benchmarks = || -> anyhow::Result<()> {
        let live = live_figures(args, out, spec)?;
        step::keep_on_stall(&keeper, out, json, None);
        // YCSB's first line, on stderr: db_bench's header on stdout stays as it is.
        eprintln!("{}", output::run_header::this_command_line());
        let opened = engine.as_deref().expect("opened above");
        print_header(args, &cfg, opened, db.as_deref());

        let run = bench_run(args, ops_log, keeper.clone(), stall_timeout);
        // db_bench seeds thread i of the run with seed_base + (threads started so far).
        let mut threads_started = 0u64;
        let shown_db = shown_db(spec.name, db.as_deref());
        for (index, &bench) in benches.iter().enumerate() {
            if bench.needs_fresh_db() {
                if args.use_existing_db {
                    crate::say!("{:<12} : skipped (--use_existing_db is true)", bench.name());
                    continue;
                }
                if index > 0 {
                    let watching = watched("the engine to close", true);
                    let old = engine.take().expect("opened above");
                    old.close()?;
                    drop((old, watching));
                    engine = Some(open(
                        OpenMode::Fresh,
                        "the engine to reopen on an empty store",
                        true,
                    )?);
                }
            }
            let opened = engine.as_deref().expect("opened above");
            let watching = watch_compaction(spec, bench, &keeper);
            let unmeasured = run_unmeasured(bench, opened, &shown_db)?;
            drop(watching);
            if unmeasured {
                // A signal during a compaction (not cut short) ends the
                // sequence after it, as one during a measured benchmark does.
                end_at_a_failure(
                    opened,
                    bench,
                    &OpHistograms::new(),
                    crate::runner::interrupted(),
                )?;
                continue;
            }
            if args.drop_caches {
                crate::host::drop_page_cache("--drop_caches")?;
            }
            // A stall keeps this benchmark's figures so far beside the others'.
            step::keep_on_stall(&run.stall_keeper, out, json, Some(shape(bench, args)));
            let measured = step::dbbench::run_benchmark(
                out,
                &run,
                &cfg,
                bench,
                step::MeasuredEngine {
                    spec,
                    engine: opened,
                    events_every: (args.events_interval_ms > 0)
                        .then(|| Duration::from_millis(args.events_interval_ms)),
                    power: power.as_ref(),
                },
                seed_base + threads_started,
                live.as_ref(),
            )?;
            threads_started += measured.measurement.threads as u64;
            report_benchmark(out, args, bench, &measured);
            out.measurements.push(measured.measurement);
            // A file is rewritten after each benchmark; a stream gets the whole once.
            if let Some(json) = json.filter(|j| j.stream().is_none()) {
                json.write(output::json::to_pretty(&*out).as_bytes())?;
            }
            step::keep_on_stall(&run.stall_keeper, out, json, None);
            end_at_a_failure(opened, bench, &measured.histograms, measured.interrupted)?;
        }
        super::live::finished(live.as_ref());
        let opened = engine.as_deref().expect("opened above");
        if let Some(stats) = opened.statistics_text() {
            crate::say!("STATISTICS:\n{stats}");
        }
        Ok(())
    };
    let ran = benchmarks();
    closed((ran, engine), spec, stall_timeout)
}

/// The engine's end after the sequence `ran`: closed when it ran well,
/// bounded as its drop is (a server's last flush, Cassandra's).
fn closed(
    (ran, engine): (anyhow::Result<()>, Option<Box<dyn Engine>>),
    spec: &EngineSpec,
    stall_timeout: Option<Duration>,
) -> anyhow::Result<()> {
    match engine {
        Some(engine) if ran.is_ok() => {
            step::close_engine(spec, engine, stall_timeout, "the last benchmark")
        }
        Some(engine) => ran.and(step::close_sessions(spec, engine, stall_timeout)),
        None => ran,
    }
}

/// The most clients any of `benches` starts (readwhilewriting's writer
/// included), checked against an engine's limit before the store is touched.
fn most_clients(benches: &[Benchmark], args: &BenchArgs) -> Option<usize> {
    let threads = args.threads as usize;
    benches.iter().map(|b| b.total_threads(threads)).max()
}

/// How a benchmark's measurement is labelled.
fn shape(bench: Benchmark, args: &BenchArgs) -> step::Shape {
    step::Shape {
        name: bench.name().to_string(),
        threads: bench.total_threads(args.threads as usize),
        clients: Default::default(),
        target_ops_per_sec: 0.0,
        warmup_s: 0.0,
    }
}

/// Watches a wait for `what` before a window, as a run's: at most `limit`
/// (a server's `stalltimeout`; None: a store's recovery, only until an
/// interrupt) plus a grace, until the returned watch is dropped.
/// `between`: after a window, before the next (what was measured is kept).
fn watched_for(
    (what, between): (&'static str, bool),
    keeper: &StallKeeper,
    limit: Option<Duration>,
) -> Watching {
    let watching = Watching(match between {
        false => BeforeWindow::watch(what, keeper.clone()),
        true => BeforeWindow::watch_between(what, keeper.clone()),
    });
    watching.0.now(what, limit);
    watching
}

/// Watches a server's compaction (`compact`, `waitforcompaction`): a
/// signal is answered at once, the figures kept (an embedded store's
/// compaction ends first); it may be long, so stalltimeout does not bound it.
fn watch_compaction(spec: &EngineSpec, bench: Benchmark, keeper: &StallKeeper) -> Option<Watching> {
    let compacts = matches!(bench, Benchmark::WaitForCompaction | Benchmark::Compact);
    (compacts && matches!(spec.store, StoreKind::Server { .. }))
        .then(|| watched_for(("the server's compaction", true), keeper, None))
}

/// Runs a benchmark db_bench does not measure (waitforcompaction, stats,
/// levelstats, compact) as db_bench does, printing its lines; false for
/// every other benchmark.
fn run_unmeasured(bench: Benchmark, engine: &dyn Engine, shown_db: &str) -> anyhow::Result<bool> {
    if bench == Benchmark::WaitForCompaction {
        // db_bench's two lines; nothing is measured.
        crate::say!("waitforcompaction({shown_db}): started");
        engine.settle(false)?;
        crate::say!("waitforcompaction({shown_db}): finished with status (OK)");
        return Ok(true);
    }
    if matches!(bench, Benchmark::Stats | Benchmark::LevelStats) {
        // db_bench prints the engine's report as it stands; not measured.
        let report = engine.stats_report(bench == Benchmark::LevelStats)?;
        crate::say!("\n{}", report.trim_end());
        return Ok(true);
    }
    if bench == Benchmark::Compact {
        // db_bench measures its one CompactRange call; kvperf reports
        // how long it took and keeps it out of the results.
        let started = std::time::Instant::now();
        engine.compact()?;
        crate::say!(
            "compact({shown_db}): finished in {:.3} seconds",
            started.elapsed().as_secs_f64()
        );
        return Ok(true);
    }
    Ok(false)
}

/// Prints a measured benchmark as db_bench does (its result line, the
/// energy lines, the histograms with --histogram) and warns of a window
/// too short or percentiles of too few samples.
fn report_benchmark(
    out: &mut StepOutput,
    args: &BenchArgs,
    bench: Benchmark,
    measured: &step::dbbench::Measured,
) {
    output::stdout::say(&render_result_line(&ResultLine::of(&measured.measurement)));
    if let Some(a) = &measured.measurement.accounting {
        let mut lines = String::new();
        output::ycsb_text::power_lines(&mut lines, a);
        output::stdout::say(&lines);
    }
    if matches!(
        bench,
        Benchmark::ReadRandom | Benchmark::ReadWhileWriting | Benchmark::SeekRandom
    ) {
        // db_bench's "(N of M found)\n" message ends in its own newline.
        crate::say!();
    }
    if args.histogram {
        print_histograms(&measured.histograms);
        // The block's percentiles, judged as a YCSB run's are.
        let ops: Vec<(String, u64)> = measured
            .measurement
            .ops
            .iter()
            .map(|(op, s)| (op.ycsb_name().to_string(), s.latency.count))
            .collect();
        let printed = [0.50, 0.75, 0.99, 0.999, 0.9999];
        let lengthen = window_warnings::DB_BENCH_LENGTHEN;
        if let Some(thin) = crate::measure::few_samples::warning(&ops, &printed, lengthen) {
            step::warn(out, format!("{}: {thin}", bench.name()));
        }
    }
    // A fill's length is its key count; a timed read or mix is judged
    // as a YCSB run's window is.
    if !bench.needs_fresh_db() {
        let seconds = measured.measurement.runtime_s;
        if let Some(short) =
            window_warnings::short_window(seconds, window_warnings::DB_BENCH_LENGTHEN)
        {
            step::warn(out, format!("{}: {short}", bench.name()));
        }
    }
}

/// Ends the sequence after `bench` when an operation failed or an
/// interrupt came, closing the engine.
fn end_at_a_failure(
    engine: &dyn Engine,
    bench: Benchmark,
    histograms: &OpHistograms,
    interrupted: bool,
) -> anyhow::Result<()> {
    if let Some(failure) = first_failure(histograms) {
        // db_bench exits at a failed operation ("put error: ..."):
        // the sequence ends here, with the engine's own words (a full
        // disk's ENOSPC), not with the close that fails after it.
        let _ = engine.close();
        anyhow::bail!("{} failed: {failure}", bench.name());
    }
    if interrupted {
        engine.close()?;
        anyhow::bail!(
            "interrupted during {}; what was measured is kept",
            bench.name()
        );
    }
    Ok(())
}

/// The live figures `--metrics-addr` serves, labelled with the step.
fn live_figures(
    args: &BenchArgs,
    out: &StepOutput,
    spec: &EngineSpec,
) -> anyhow::Result<Option<std::sync::Arc<crate::measure::live::LiveFigures>>> {
    let labels = BTreeMap::from([
        ("command".to_string(), out.command.clone()),
        ("engine".to_string(), spec.name.to_string()),
    ]);
    Ok(super::live::figures(args.metrics_addr.as_deref(), labels)?)
}

/// `--seed`, or the time in seconds when it is 0, as db_bench.
fn seed_base(args: &BenchArgs) -> u64 {
    match args.seed {
        0 => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        s => s,
    }
}

/// How each benchmark's clients run, from the flags.
fn bench_run(
    args: &BenchArgs,
    ops_log: Option<&Destination>,
    stall_keeper: StallKeeper,
    stall_timeout: Option<Duration>,
) -> step::dbbench::BenchRun {
    step::dbbench::BenchRun {
        foreground_threads: args.threads as usize,
        progress: !args.no_progress && std::io::stderr().is_terminal(),
        ops_log: ops_log.map(|destination| OpsLog {
            interval: args.report_interval_seconds,
            destination: destination.clone(),
        }),
        stall_keeper,
        stall_timeout,
    }
}

/// How many operations of the first kind that had failures failed, and
/// the engine's words for the first failure.
fn first_failure(histograms: &OpHistograms) -> Option<String> {
    histograms.iter().find_map(|(kind, group)| {
        let failed = group.count(Outcome::Error);
        (failed > 0).then(|| {
            format!(
                "{failed} {} operations failed; first: {}",
                kind.ycsb_name(),
                group.first_error.as_deref().unwrap_or("unknown error")
            )
        })
    })
}

/// What db_bench's flags ask for, checked before anything is opened or
/// measured.
pub(crate) struct Checked {
    benches: Vec<Benchmark>,
    cfg: BenchConfig,
    spec: &'static EngineSpec,
    props: Properties,
    /// The power meter `-p power.*` names, read over every benchmark.
    power: Option<PowerSetup>,
    /// `-p stalltimeout`: how long a server may not answer.
    stall_timeout: Option<Duration>,
}

/// Every check of the flags that needs no engine open; warnings about
/// flags the engine cannot honour go to `out`.
/// Checks `kvperf bench ARGS` as [`run`] does before its engine opens
/// (a plan's db_bench steps, before the first runs).
/// Checks a plan's bench step; the files it writes beside its result (its
/// ops log, when it keeps one).
pub(crate) fn check_step(args: &BenchArgs) -> anyhow::Result<crate::plan::runner::StepFiles> {
    checked_inputs(args, &mut StepOutput::begin("bench"))?;
    Ok(if args.report_interval_seconds.is_zero() {
        Vec::new()
    } else {
        vec![("--report_file", args.report_file.clone())]
    })
}

pub(crate) fn checked_inputs(args: &BenchArgs, out: &mut StepOutput) -> anyhow::Result<Checked> {
    let benches = parse_benchmarks(&args.benchmarks)?;
    if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
        return Err(InputError::Invalid(format!(
            "--compression_ratio={} must be in (0, 1]",
            args.compression_ratio
        ))
        .into());
    }
    let cfg = BenchConfig {
        num: args.num,
        reads: if args.reads < 0 {
            args.num
        } else {
            args.reads as u64
        },
        key_size: args.key_size as usize,
        value_size: args.value_size as usize,
        compression_ratio: args.compression_ratio,
        read_write_percent: args.readwritepercent,
        seek_nexts: args.seek_nexts,
        duration: (!args.duration.is_zero()).then_some(args.duration),
        write_rate_limit: args.benchmark_write_rate_limit,
    };
    check_benchmark_sh_flags(args, out)?;
    // No file written twice: the JSON result and the ops log.
    let mut outputs = crate::files::Outputs::new();
    if let Some(json) = &args.json {
        outputs.file("--json", json)?;
    }
    if !args.report_interval_seconds.is_zero() {
        outputs.file("--report_file", &args.report_file)?;
    }
    let spec = engine::find(&args.engine)?;
    let props = engine_properties(spec, args, out)?;
    for (what, path) in spec.files_written(&props) {
        outputs.file(what, &path)?;
    }
    if let Some(db) = step::data_dir(spec, args.db.as_deref(), &default_db_dir()) {
        outputs.outside_store(&db)?;
    }
    for bench in &benches {
        if *bench == Benchmark::Compact {
            spec.require(Capability::Compact, "--benchmarks=compact")?;
        } else if matches!(bench, Benchmark::Stats | Benchmark::LevelStats) {
            spec.require(
                Capability::StatsReport,
                &format!("--benchmarks={}", bench.name()),
            )?;
        } else if !bench.is_maintenance() {
            spec.require(
                Capability::Kv(bench.kv_support()),
                &format!("--benchmarks={}", bench.name()),
            )?;
        }
    }
    let power = PowerSetup::from_properties(&props)?;
    if let Some(power) = &power {
        power.check_remote()?;
    }
    let stall_timeout = step::client::stall_timeout(&props)?;
    Ok(Checked {
        benches,
        cfg,
        spec,
        props,
        power,
        stall_timeout,
    })
}

/// benchmark.sh's flags kvperf takes only in the form it can honour, and
/// the flags dropped under `--undefok`, each named in a warning.
fn check_benchmark_sh_flags(args: &BenchArgs, out: &mut StepOutput) -> Result<(), InputError> {
    if let Some(rep) = args.memtablerep.as_deref().filter(|r| *r != "skip_list") {
        return Err(InputError::Invalid(format!(
            "--memtablerep={rep}: kvperf runs RocksDB's default memtable only; give --memtablerep=skip_list or leave it out"
        )));
    }
    if let Some(wal) = &args.wal_dir {
        let db = args.db.clone().unwrap_or_else(|| default_db_dir().into());
        let same = wal == &db
            || std::fs::canonicalize(wal)
                .ok()
                .is_some_and(|w| std::fs::canonicalize(&db).ok() == Some(w));
        if !same {
            return Err(InputError::Invalid(format!(
                "--wal_dir '{}': kvperf keeps the write-ahead log in --db '{}' (the store it marks and resets, and measures the I/O of); give --wal_dir equal to --db or leave it out",
                wal.display(),
                db.display()
            )));
        }
    }
    for flag in &args.ignored_flags {
        step::warn(
            out,
            format!("{flag} is not a kvperf bench flag; ignored as --undefok asks"),
        );
    }
    Ok(())
}

fn parse_benchmarks(list: &str) -> Result<Vec<Benchmark>, InputError> {
    let benches: Vec<Benchmark> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Benchmark::parse)
        .collect::<Result<_, _>>()?;
    if benches.is_empty() {
        return Err(InputError::Invalid("--benchmarks is empty".into()));
    }
    Ok(benches)
}

/// db_bench's default `--db`: /tmp/rocksdbtest-<uid>/dbbench.
fn default_db_dir() -> String {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    format!("/tmp/rocksdbtest-{uid}/dbbench")
}

/// The engine's options from db_bench's flags (mapped by the engine) and
/// `-p` options; each flag the engine cannot honour is named once.
fn engine_properties(
    spec: &EngineSpec,
    args: &BenchArgs,
    out: &mut StepOutput,
) -> anyhow::Result<Properties> {
    let mut props = Properties::new();
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    for flag in (spec.db_bench)(&args.engine_flags(), &mut props) {
        step::warn(
            out,
            format!(
                "engine '{}' cannot honour --{flag}; it is ignored",
                spec.name
            ),
        );
    }
    Ok(props)
}

fn flag_map(args: &BenchArgs, db: Option<&Path>) -> BTreeMap<String, String> {
    // Every flag, from the parsed arguments themselves, so none is forgotten.
    let serde_json::Value::Object(fields) =
        serde_json::to_value(args).expect("flags always serialize")
    else {
        unreachable!("BenchArgs serializes as an object")
    };
    let mut flags: BTreeMap<String, String> = fields
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| match v {
            serde_json::Value::String(text) => (k, text),
            other => (k, other.to_string()),
        })
        .collect();
    if let Some(db) = db {
        flags.insert("db".into(), db.display().to_string());
    }
    // Engine options, credentials redacted.
    for assignment in &args.properties {
        if let Some((k, v)) = assignment.split_once('=') {
            flags.insert(format!("-p {k}"), crate::properties::redacted(k, v));
        }
    }
    flags
}

fn print_header(args: &BenchArgs, cfg: &BenchConfig, engine: &dyn Engine, db: Option<&Path>) {
    let info = engine.info();
    let compressed = (cfg.value_size as f64 * cfg.compression_ratio) as u64;
    let raw_mb = (cfg.key_size + cfg.value_size) as f64 * cfg.num as f64 / 1_048_576.0;
    crate::say!("kvperf:     {} (db_bench mode)", env!("CARGO_PKG_VERSION"));
    crate::say!("Engine:     {} {}", info.name, info.version);
    crate::say!("Keys:       {} bytes each", cfg.key_size);
    crate::say!(
        "Values:     {} bytes each ({compressed} bytes after compression)",
        cfg.value_size
    );
    crate::say!("Entries:    {}", cfg.num);
    crate::say!("RawSize:    {raw_mb:.1} MB (estimated)");
    let compression = info.options.get("compression").cloned();
    crate::say!(
        "Compression: {}",
        compression.unwrap_or_else(|| args.compression_type.clone().unwrap_or_else(|| "-".into()))
    );
    if let Some(db) = db {
        crate::say!("DB path: [{}]", db.display());
    }
}

/// db_bench's percentile block per operation type, successful operations
/// only (failures are counted apart, as in YCSB: docs/semantics.md).
fn print_histograms(histograms: &OpHistograms) {
    for (kind, name) in HISTOGRAM_ORDER {
        if let Some(group) = histograms.get(kind) {
            let h = DbBenchHistogram::from_nanos(&group.ok);
            crate::say!("Microseconds per {name}:\n{}", h.render());
        }
    }
}
