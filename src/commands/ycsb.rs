//! `kvperf load` and `kvperf run`: properties -> workload -> engine ->
//! runner -> one typed [`StepOutput`], printed in YCSB's text format or
//! written as JSON.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::hdr_logs::HdrLogs;
use super::live;
use crate::engine::{self, EngineSpec, OpenMode, OpenOptions};
use crate::error::InputError;
use crate::files::Destination;
use crate::host::HostInfo;
use crate::measure::{few_samples, window_warnings};
use crate::measure::{OpKind, Outcome};
use crate::output::run_header;
use crate::output::ycsb_text::{self, LatencyFrom};
use crate::output::{self, Format};
use crate::properties::Properties;
use crate::results::step::{Clients, Integrity, Measurement, StepOutput};
use crate::runner::{
    self, BeforeWindow, ClientRuntime, RunOutcome, StallKeeper, StatusOptions, TaskScheduling,
};
use crate::shard::{self, Shard, ShardInfo};
use crate::step::client::{
    default_interval, parse_percentiles, ClientSettings, DEFAULT_PERCENTILES,
};
use crate::step::{self, Finished};
use crate::trace::{self, capture, capture::Capture};
use crate::workload::ycsb::config::unknown_property_warnings;
use crate::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

#[derive(Debug, Args)]
pub struct YcsbArgs {
    /// Workload property file (Java properties syntax); repeatable, later files win.
    /// Example: -P workloads/workloada
    #[arg(short = 'P', value_name = "FILE")]
    pub workload_files: Vec<PathBuf>,

    /// Set a property, overriding the files; repeatable.
    /// Example: -p recordcount=1000000 -p <engine>.<option>=VALUE (`kvperf engines`
    /// lists each engine's options)
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,

    /// Client threads (also `-threads N`, `-threads=N`, or property
    /// `threadcount`). Default 1. YCSB's `-load`, `-t`, `-db CLASS` and
    /// `load BINDING` are read too.
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,

    /// Target total throughput in ops/s (also `-target N`, or property
    /// `target`); 0 = as fast as possible. With a target, latency is also
    /// measured from each operation's intended start (`Intended-` groups;
    /// `-p measurement.interval=op` for YCSB's output only).
    #[arg(long, value_name = "OPS")]
    pub target: Option<u64>,

    /// Print a status line every `status.interval` seconds (default 10) on stderr.
    #[arg(short = 's')]
    pub status: bool,

    /// Label prefixed to status lines.
    #[arg(short = 'l', value_name = "LABEL", default_value = "")]
    pub label: String,

    /// Engine to benchmark (see `kvperf engines`).
    #[arg(long, value_name = "NAME", default_value = crate::engine::DEFAULT_ENGINE)]
    pub engine: String,

    /// Data directory of a directory engine (default `kvperf-data`); created
    /// and marked by kvperf if missing. kvperf refuses a non-empty directory
    /// that is not a store it can use.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,

    /// `load` only: start from an empty store. The engine removes its own
    /// data first (only in a directory kvperf created; a server's table is
    /// dropped and made again).
    #[arg(long)]
    pub fresh: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the result to FILE (atomically) instead of stdout; `-`,
    /// /dev/stdout and /dev/stderr write to that stream. With
    /// `--format json` the file is written even when the run fails, with
    /// the error and what was measured. `--json FILE` is `--format json
    /// --output FILE`.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Never draw a progress bar (it is drawn only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,

    /// Run shard I of N of the study (I from 0): a load inserts its slice
    /// of the records, a run performs its share of the operations and of
    /// the target rate; `kvperf merge` puts the N results together. Also
    /// read from KVPERF_SHARD=I/N, Kubernetes' JOB_COMPLETION_INDEX (with
    /// KVPERF_SHARD_COUNT), an srun task's SLURM_PROCID (of SLURM_NTASKS)
    /// or a Slurm array's SLURM_ARRAY_TASK_ID (with
    /// SLURM_ARRAY_TASK_COUNT); `--shard 0/1` runs the whole study whatever
    /// those say.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Serve the measured window's figures (per second: ops/s, failures,
    /// p50/p99/p99.9/max per operation type) at http://ADDR/metrics in the
    /// Prometheus text format while the step runs, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,
}

/// The default data directory of a directory engine.
pub const DEFAULT_DB: &str = "kvperf-data";

fn load_properties(args: &YcsbArgs) -> anyhow::Result<Properties> {
    let mut props = Properties::new();
    for file in &args.workload_files {
        if std::fs::metadata(file).is_ok_and(|m| m.is_dir()) {
            return Err(InputError::Invalid(format!(
                "workload file '{}' is a directory; give a property file such as workloads/workloada",
                file.display()
            ))
            .into());
        }
        props.load_file(file)?;
    }
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    Ok(props)
}

pub fn run(args: YcsbArgs, phase: Phase) -> anyhow::Result<()> {
    // From the step's first moment SIGINT/SIGTERM end it with its output
    // written (exit 3), before the window as in it.
    runner::stop_on_interrupt();
    // Where the result goes is checked before anything is measured.
    let inputs: Vec<&Path> = args.workload_files.iter().map(PathBuf::as_path).collect();
    let output: Vec<_> = args
        .output
        .iter()
        .map(|p| ("--output", p.as_path()))
        .collect();
    step::outputs_outside_store(&args.engine, args.db.as_deref(), DEFAULT_DB, &output)?;
    let destination = destination(args.output.as_deref(), args.format, &inputs)?;
    let (out, finished) = measured_step(&args, phase, destination.as_ref(), super::stall_keeper());
    emit(&out, args.format, destination.as_ref())?;
    step::ended(finished)
}

/// Runs a load or run and returns what it measured, not yet printed
/// (`kvperf fit --check` compares it with a replay). `keeper` ends the
/// process around calls nothing can cancel; what it keeps is set here for
/// JSON output, else by the caller (fit --check keeps its replay).
pub(super) fn measured_step(
    args: &YcsbArgs,
    phase: Phase,
    destination: Option<&Destination>,
    keeper: crate::runner::StallKeeper,
) -> (StepOutput, anyhow::Result<Finished>) {
    let mut out = StepOutput::begin(match phase {
        Phase::Load => "load",
        Phase::Run => "run",
    });
    if args.format == Format::Json {
        step::keep_on_stall(&keeper, &out, destination, None);
    }
    let watching =
        runner::before_window::Watching(BeforeWindow::watch("the step's checks", keeper.clone()));
    let measured = measure(args, phase, destination, &mut out, (&watching.0, &keeper));
    drop(watching);
    let finished = step::finish(&mut out, measured);
    (out, finished)
}

/// The checked `--output` of `load`, `run` and `merge`.
pub(super) fn destination(
    path: Option<&Path>,
    format: Format,
    inputs: &[&Path],
) -> Result<Option<Destination>, InputError> {
    path.map(|p| Destination::check_or_stream(p, "--output", output::written_as(format), inputs))
        .transpose()
}

/// Prints `out` or writes it to `destination` in `format`: what `load`,
/// `run` and `merge` write.
pub(super) fn emit(
    out: &StepOutput,
    format: Format,
    destination: Option<&Destination>,
) -> anyhow::Result<()> {
    let rendered = match format {
        Format::Json => Some(output::json::to_pretty(out)),
        // What was measured is printed even when a check failed after it
        // (a data-integrity failure); nothing, when nothing was.
        Format::Text => (!out.measurements.is_empty()).then(|| render_text(out)),
    };
    match rendered {
        Some(text) => output::emit(text, format, &out.command, destination),
        None => Ok(()),
    }
}

/// The percentiles the text output prints (`hdrhistogram.percentiles`).
fn text_percentiles(out: &StepOutput) -> Vec<f64> {
    out.settings
        .get("hdrhistogram.percentiles")
        .and_then(|p| parse_percentiles(p).ok())
        .unwrap_or_else(|| parse_percentiles(DEFAULT_PERCENTILES).expect("valid default"))
}

fn render_text(out: &StepOutput) -> String {
    let percentiles = text_percentiles(out);
    let from = out
        .settings
        .get("measurement.interval")
        .and_then(|i| LatencyFrom::parse(i))
        .unwrap_or(LatencyFrom::Op);
    out.measurements
        .iter()
        .map(|m| ycsb_text::render(m, &percentiles, from))
        .collect()
}

/// What a load or run checks of its settings before the engine opens.
struct Checked {
    client: ClientSettings,
    hdr_logs: Option<HdrLogs>,
    /// `trace.output`, checked.
    trace: Option<Destination>,
    /// The files written beside the result: interval logs, the trace.
    files: crate::plan::runner::StepFiles,
    workload: CoreWorkload,
    /// The shard to run ([`Shard::WHOLE`] unless sharded) and what said so.
    shard: (Shard, String),
}

/// Every check of a load's or run's settings that needs no engine: the
/// workload's and the client's properties, the interval logs' files and
/// the workload itself. [`check_step`] runs the same for a plan's step.
fn check(
    args: &YcsbArgs,
    phase: Phase,
    props: &Properties,
    shard: Option<(Shard, String)>,
) -> anyhow::Result<Checked> {
    if args.fresh && phase == Phase::Run {
        return Err(InputError::Invalid(
            "--fresh is for kvperf load: a run works on the loaded store".into(),
        )
        .into());
    }
    let cfg = CoreConfig::from_properties(props, phase == Phase::Load)?;
    let client = ClientSettings::from(args.threads, args.target, props)?;
    let inputs: Vec<&Path> = args.workload_files.iter().map(PathBuf::as_path).collect();
    let hdr_logs = HdrLogs::from_properties(props, &inputs)?;
    // No file written twice: the result, the interval logs, the trace and
    // the engine's own files.
    let mut outputs = crate::files::Outputs::new();
    if let Some(path) = &args.output {
        outputs.file("--output", path)?;
    }
    let mut files = Vec::new();
    for path in hdr_logs.iter().flat_map(HdrLogs::paths) {
        outputs.file("hdrhistogram.output.path", path)?;
        files.push(("hdrhistogram.output.path", path.to_path_buf()));
    }
    let trace = props
        .get(capture::PROPERTY)
        .map(|path| {
            let path = Path::new(path);
            outputs.file(capture::PROPERTY, path)?;
            files.push((capture::PROPERTY, path.to_path_buf()));
            trace::output::destination(path, capture::PROPERTY, &inputs)
        })
        .transpose()?;
    // The engine's own files (RocksDB's trace) are outputs of the command too.
    if let Ok(spec) = engine::find(&args.engine) {
        for (what, path) in spec.files_written(props) {
            outputs.file(what, &path)?;
        }
        if let Some(db) = step::data_dir(spec, args.db.as_deref(), DEFAULT_DB) {
            outputs.outside_store(&db)?;
        }
    }
    let (shard, shard_source) = shard
        .filter(|(s, _)| s.count > 1)
        .unwrap_or((Shard::WHOLE, String::new()));
    if args.fresh && shard != Shard::WHOLE {
        // Each shard would empty the store the others are loading.
        return Err(InputError::Invalid(format!(
            "--fresh with shard {shard}: the shards load one store, so none may empty it; start them on an empty store"
        ))
        .into());
    }
    if phase == Phase::Run && cfg.operation_count == 0 && client.max_execution.is_none() {
        return Err(InputError::property(
            "operationcount",
            "is required for run (or set maxexecutiontime to run for a fixed time)",
        )
        .into());
    }
    let workload = CoreWorkload::new(cfg, phase, shard.seed(client.seed), shard)?;
    if let Some(power) = &client.power {
        power.check_remote()?;
    }
    Ok(Checked {
        client,
        hdr_logs,
        trace,
        files,
        workload,
        shard: (shard, shard_source),
    })
}

/// Checks a load or run as `kvperf load|run ARGS` would before its engine
/// opens (the plan runner's steps, before the first runs): the shard, the
/// properties, the engine's name and what it can run, and [`check`].
pub(crate) fn check_step(
    args: &YcsbArgs,
    phase: Phase,
) -> anyhow::Result<crate::plan::runner::StepFiles> {
    // A step is whole or names its shard: no job array's variables.
    let shard = Shard::resolve(args.shard.as_deref(), &|_| None)?;
    let props = load_properties(args)?;
    let spec = engine::find(&args.engine)?;
    let Checked {
        client,
        workload,
        mut files,
        ..
    } = check(args, phase, &props, shard)?;
    let threads = match workload.operation_count() {
        0 => client.threads,
        n => client.threads.min(n as usize),
    };
    client.task_runtime_for(spec, threads)?;
    files.extend(spec.files_written(&props));
    Ok(files)
}

/// Runs the phase and fills `out`; an error leaves what was measured in it.
fn measure(
    args: &YcsbArgs,
    phase: Phase,
    destination: Option<&Destination>,
    out: &mut StepOutput,
    (before, keeper): (&BeforeWindow, &StallKeeper),
) -> anyhow::Result<()> {
    let shard = resolve_shard(args)?;
    let (props, spec) = properties_and_engine(args, out)?;
    let Checked {
        client,
        hdr_logs,
        trace,
        workload,
        shard: (shard, shard_source),
        ..
    } = check(args, phase, &props, shard)?;
    // An interrupt from here keeps the settings and warnings.
    if args.format == Format::Json {
        step::keep_on_stall(keeper, out, destination, None);
    }
    let live = live_figures(args, out, spec, shard)?;
    record_chosen_interval(out, &props, &client);
    out.seed = shard.seed(client.seed);
    let target = shard.rate(client.target as f64);
    if shard != Shard::WHOLE {
        out.shard = Some(shard_info(
            out,
            spec,
            &client,
            &workload,
            (shard, shard_source),
            target,
        ));
    }
    let (operations, threads) = operations_and_clients(&workload, &client);

    // Clients as tasks run on the runner's runtime, which the engine's
    // driver shares; it outlives the engine (dropped after it).
    let (runtime, clients) = client_runtime(&client, spec, threads)?;

    let (db, engine) = open_engine(
        args,
        phase,
        spec,
        &props,
        (&client, threads),
        runtime.as_ref(),
        before,
    )?;
    out.engine = engine.info();
    announce(
        out,
        phase,
        &workload,
        db.as_deref(),
        (threads, clients),
        target,
        client.max_execution,
    )?;
    // A server's data directory, when it is local, is the device to account.
    out.host = HostInfo::collect(db.clone().or_else(|| engine.data_location()).as_deref());
    let shape = step::Shape {
        name: out.command.clone(),
        threads,
        clients,
        target_ops_per_sec: target,
        warmup_s: client.warmup.as_secs_f64(),
    };
    // Read by now: the workload's, the client's and the engine's opening.
    out.defaults = props.defaults_used();
    step::keep_in_output_on_stall(keeper, out, (args.format, destination), Some(shape.clone()));
    let status = status_options(args, &client, hdr_logs.is_some(), live.clone());
    let run_spec = client.run_spec(threads, operations, target, status, (before, keeper));
    let capture = start_capture(trace, out, &workload, (threads, target))?;
    let bound = workload.bind(engine.as_ref()).capturing(capture.as_ref());
    // Closing (a flush of buffered writes) comes after the measured window and is
    // outside every figure, its time (YCSB counts it in RunTime, which
    // makes short runs look slow) and its costs alike. A failed close is
    // reported after what was measured is kept.
    let step::Window {
        outcome,
        accounting,
        verdict,
        engine_stats,
        engine_stats_before,
        closed,
        events,
    } = step::measure_window(
        out,
        step::MeasuredEngine {
            spec,
            engine: engine.as_ref(),
            events_every: client.events_interval,
            power: client.power.as_ref(),
        },
        run_spec,
        |run_spec| match &runtime {
            Some(rt) => runner::execute_tasks(&bound, run_spec, rt),
            None => runner::execute(&bound, run_spec),
        },
        |outcome| {
            workload.logical_bytes(&outcome.histograms, spec.capabilities.whole_record_updates)
        },
        true,
    )?;
    let sessions_closed = step::close_sessions(spec, engine, client.stall_timeout);
    if sessions_closed.is_err() {
        // The engine's drop, left waiting on its server, may still use it.
        std::mem::forget(runtime);
    }
    // The window's figures are kept whatever becomes of the files written
    // beside them: a trace or a log that cannot be put in place is an
    // error said after they are (it dropped the whole window).
    let traced = finish_capture(capture);

    let integrity = integrity_of(&workload, &outcome);
    live::finished(live.as_ref());
    let logs_written = write_interval_logs(hdr_logs.as_ref(), &outcome);
    out.measurements.push(Measurement {
        accounting: Some(accounting),
        engine_stats,
        engine_stats_before,
        integrity: integrity.clone(),
        verdict: Some(verdict),
        events: Some(events),
        ..shape.measurement(&outcome)
    });
    if phase == Phase::Load {
        record_loaded_keys(out, db.as_deref(), &workload);
    }
    warn_of_the_window(out, phase);
    traced?;
    say_logs_written(logs_written?);
    how_it_ended(&outcome, &workload, closed, integrity).and(sessions_closed)
}

/// The step's properties (recorded, secrets redacted, in `out`) and its
/// engine; a property nobody reads is warned of.
fn properties_and_engine(
    args: &YcsbArgs,
    out: &mut StepOutput,
) -> anyhow::Result<(Properties, &'static EngineSpec)> {
    let props = load_properties(args)?;
    out.settings = props.redacted_map();
    let spec = engine::find(&args.engine)?;
    // Another RocksDB release (rocksdb.version): this command runs again on it.
    engine::run_on_asked_library(spec.name, &props)?;
    let prefixes: Vec<String> = engine::registry()
        .iter()
        .map(|s| format!("{}.", s.name))
        .collect();
    let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
    for warning in unknown_property_warnings(&props, &prefixes) {
        step::warn(out, warning);
    }
    Ok((props, spec))
}

/// The live figures `--metrics-addr` serves, labelled with the step.
fn live_figures(
    args: &YcsbArgs,
    out: &StepOutput,
    spec: &EngineSpec,
    shard: Shard,
) -> anyhow::Result<Option<std::sync::Arc<crate::measure::live::LiveFigures>>> {
    let mut labels = std::collections::BTreeMap::from([
        ("command".to_string(), out.command.clone()),
        ("engine".to_string(), spec.name.to_string()),
    ]);
    if shard.count > 1 {
        labels.insert("shard".into(), shard.to_string());
    }
    Ok(live::figures(args.metrics_addr.as_deref(), labels)?)
}

/// The runtime `threads` clients run on as tasks (None: on threads), and
/// how the output names the clients.
fn client_runtime(
    client: &ClientSettings,
    spec: &EngineSpec,
    threads: usize,
) -> anyhow::Result<(Option<ClientRuntime>, Clients)> {
    let runtime = client
        .task_runtime_for(spec, threads)?
        .map(|(workers, scheduling)| ClientRuntime::new(workers, scheduling))
        .transpose()?;
    let clients = runtime
        .as_ref()
        .map_or(Clients::Threads, |rt| Clients::Tasks {
            runtime_threads: rt.workers(),
            pinned: rt.scheduling() == TaskScheduling::Pinned,
        });
    Ok((runtime, clients))
}

/// What the data integrity check found, when the workload verified reads.
fn integrity_of(workload: &CoreWorkload, outcome: &RunOutcome) -> Option<Integrity> {
    workload.config().data_integrity.then(|| {
        let verify = outcome.histograms.get(OpKind::Verify);
        let total = verify.map_or(0, |g| g.total_returns());
        let ok = verify.map_or(0, |g| g.count(Outcome::Ok));
        Integrity {
            verified: total,
            failed: total - ok,
        }
    })
}

/// Names the interval logs written, if any.
fn say_logs_written(logs_written: Vec<PathBuf>) {
    if !logs_written.is_empty() {
        let names: Vec<String> = logs_written
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!("kvperf: interval logs written: {}", names.join(", "));
    }
}

/// Starts capturing the step's operations into `trace.output`, if given.
fn start_capture(
    trace: Option<Destination>,
    out: &StepOutput,
    workload: &CoreWorkload,
    (threads, target): (usize, f64),
) -> anyhow::Result<Option<Capture>> {
    trace
        .map(|destination| {
            let header = trace_header(out, workload.config().table.clone(), threads, target);
            Capture::start(destination, header)
        })
        .transpose()
}

/// Writes the window's interval logs (`hdrhistogram.output.path`), if asked for.
fn write_interval_logs(
    hdr_logs: Option<&HdrLogs>,
    outcome: &RunOutcome,
) -> anyhow::Result<Vec<PathBuf>> {
    let interval_logs = outcome.interval_logs.as_ref();
    match (hdr_logs, interval_logs) {
        (Some(files), Some(logs)) => files.write(logs, outcome.start_unix_ms),
        _ => Ok(Vec::new()),
    }
}

/// Ends the trace the step captured (`trace.output`), saying where.
fn finish_capture(capture: Option<Capture>) -> anyhow::Result<()> {
    if let Some(capture) = capture {
        let path = capture.path().display().to_string();
        let operations = capture.finish()?;
        eprintln!("kvperf: trace of {operations} operations written to '{path}'");
    }
    Ok(())
}

/// What the step shows while it runs: status lines, a progress bar, the
/// interval logs' and live figures' feeds.
fn status_options(
    args: &YcsbArgs,
    client: &ClientSettings,
    interval_logs: bool,
    live: Option<std::sync::Arc<crate::measure::live::LiveFigures>>,
) -> StatusOptions {
    StatusOptions {
        interval: args.status.then_some(client.status_interval),
        progress: !args.no_progress && std::io::stderr().is_terminal(),
        label: args.label.clone(),
        ops_log: None,
        intended_groups: client.latency_from == LatencyFrom::Both,
        interval_logs,
        live,
    }
}

/// The effective `measurement.interval`, when kvperf chose it, is part
/// of the record.
fn record_chosen_interval(out: &mut StepOutput, props: &Properties, client: &ClientSettings) {
    if !props.contains("measurement.interval") && client.target > 0 {
        out.settings.insert(
            "measurement.interval".into(),
            default_interval(client.target).into(),
        );
    }
}

/// The shard `--shard` or the job's environment names, said on stderr
/// when the environment named it.
fn resolve_shard(args: &YcsbArgs) -> Result<Option<(Shard, String)>, InputError> {
    let shard = Shard::resolve(args.shard.as_deref(), &|name| std::env::var(name).ok())?;
    if let Some((shard, source)) = shard.as_ref().filter(|(_, source)| source != "--shard") {
        eprintln!("kvperf: shard {shard} (from {source})");
    }
    Ok(shard)
}

/// The window's operations (None: until the time limit) and its clients:
/// never more than operations, as YCSB.
fn operations_and_clients(
    workload: &CoreWorkload,
    client: &ClientSettings,
) -> (Option<u64>, usize) {
    let total_ops = workload.operation_count();
    let operations = (total_ops > 0).then_some(total_ops);
    // YCSB: never more threads than operations.
    let threads = match operations {
        Some(n) => client.threads.min(n as usize),
        None => client.threads,
    };
    (operations, threads)
}

/// Opens the step's engine on its data directory (None: a server engine),
/// watched as the step waits for it: a server's connection and schema
/// checks are bounded by `stalltimeout`, an embedded store's opening (a
/// long recovery) only by an interrupt.
fn open_engine(
    args: &YcsbArgs,
    phase: Phase,
    spec: &'static EngineSpec,
    props: &Properties,
    (client, threads): (&ClientSettings, usize),
    runtime: Option<&ClientRuntime>,
    before: &BeforeWindow,
) -> anyhow::Result<(Option<PathBuf>, Box<dyn engine::Engine>)> {
    let db = step::data_dir(spec, args.db.as_deref(), DEFAULT_DB);
    if let Some(dir) = db.as_deref() {
        // Its ledger is read before the engine opens (and `--fresh` would
        // write it): a FIFO or a device there is refused, not waited on.
        engine::loaded_keys::loaded(dir)?;
    }
    // A server engine connects, checks its schema (and empties it with
    // --fresh): bounded by stalltimeout; an embedded store's opening (a
    // long recovery) only by an interrupt.
    let server = matches!(spec.store, engine::StoreKind::Server { .. });
    match server {
        true => before.now(
            "the engine to open (its server's connection and schema checks)",
            client.stall_timeout,
        ),
        false => before.now("the engine to open its store", None),
    }
    let engine = engine::open(
        spec,
        &OpenOptions {
            dir: db.as_deref(),
            properties: props,
            runtime: runtime.map(ClientRuntime::handle),
            clients: Some(threads),
            mode: match (phase, args.fresh) {
                (Phase::Load, true) => OpenMode::Fresh,
                _ => OpenMode::Any,
            },
        },
    )?;
    Ok((db, engine))
}

/// States what is about to run (with what the store holds, as kvperf
/// loaded it), and warns of a run whose store holds fewer of the records
/// it reads than `recordcount` says.
fn announce(
    out: &mut StepOutput,
    phase: Phase,
    workload: &CoreWorkload,
    db: Option<&Path>,
    (threads, clients): (usize, Clients),
    target: f64,
    max_execution: Option<Duration>,
) -> anyhow::Result<()> {
    let keys = workload.config().insert_start
        ..workload.config().insert_start + workload.config().insert_count;
    // What kvperf's loads put in the store, where it marked it.
    let loaded = db
        .map(engine::loaded_keys::loaded)
        .transpose()?
        .flatten()
        .map(|k| k.within(keys.clone()));
    let store = db.map(|dir| run_header::Store {
        location: dir.display().to_string(),
        loaded,
    });
    state_what_runs(
        phase,
        out,
        workload,
        store,
        (threads, clients),
        target,
        max_execution,
    );
    if let Some(held) = loaded.filter(|held| phase == Phase::Run && *held < keys.end - keys.start) {
        step::warn(
            out,
            fewer_records(db, held, &keys, workload.config().record_count),
        );
    }
    Ok(())
}

/// What a shard's output says of its place in the study.
fn shard_info(
    out: &StepOutput,
    spec: &EngineSpec,
    client: &ClientSettings,
    workload: &CoreWorkload,
    (shard, shard_source): (Shard, String),
    target: f64,
) -> ShardInfo {
    let (slice, of) = workload.shard_slices();
    ShardInfo {
        index: shard.index,
        count: shard.count,
        source: shard_source,
        fingerprint: shard::fingerprint(
            &out.command,
            spec.name,
            &out.settings,
            client.threads,
            client.target as f64,
        ),
        slice,
        of,
        target_ops_per_sec: target,
        slurm: shard::SlurmPlace::from_env(&|name| std::env::var(name).ok()),
        kubernetes: shard::KubernetesPlace::from_env(&|name| std::env::var(name).ok()),
    }
}

/// The measured window judged as YCSB's figures are read: a run too
/// short, a target rate missed, percentiles of too few samples.
fn warn_of_the_window(out: &mut StepOutput, phase: Phase) {
    let judged = out.measurements.last().map(|m| {
        (
            (phase == Phase::Run)
                .then(|| window_warnings::short_window(m.runtime_s, window_warnings::YCSB_LENGTHEN))
                .flatten(),
            window_warnings::target_missed(m.target_ops_per_sec, m.ops_per_sec),
        )
    });
    if let Some((short, missed)) = judged {
        for warning in [short, missed].into_iter().flatten() {
            step::warn(out, warning);
        }
    }
    if let Some(thin) = out.measurements.last().and_then(|m| {
        let ops: Vec<(String, u64)> = m
            .ops
            .iter()
            .map(|(op, s)| (op.ycsb_name().to_string(), s.latency.count))
            .collect();
        let lengthen = match phase {
            Phase::Load => "recordcount (or insertcount)",
            Phase::Run => window_warnings::YCSB_LENGTHEN,
        };
        // The percentiles the text output prints, as fractions.
        let printed: Vec<f64> = text_percentiles(out).iter().map(|p| p / 100.0).collect();
        few_samples::warning(&ops, &printed, lengthen)
    }) {
        step::warn(out, thin);
    }
}

/// The step's error, if the window ended other than as asked: an
/// interrupt, a load incomplete, the first failure under `onerror=stop`,
/// the engine's close, the data integrity check.
fn how_it_ended(
    outcome: &RunOutcome,
    workload: &CoreWorkload,
    closed: Option<anyhow::Result<()>>,
    integrity: Option<Integrity>,
) -> anyhow::Result<()> {
    if outcome.interrupted {
        anyhow::bail!(
            "interrupted after {} operations; what was measured is kept",
            outcome.operations
        );
    }
    let first_failure = || {
        outcome
            .histograms
            .iter()
            .find(|(_, g)| g.unsuccessful() > 0)
            .map_or("an operation failed: unknown error".into(), |(k, g)| {
                format!("{} failed: {}", k.ycsb_name(), g.first_failure())
            })
    };
    // A load cut short by its own time limit is the user's choice.
    if let Some((inserted, share)) = workload
        .incomplete_load()
        .filter(|_| !outcome.hit_time_limit)
    {
        anyhow::bail!(
            "load incomplete: {inserted} of {share} records inserted; first: {}",
            first_failure()
        );
    }
    if outcome.stopped_on_error {
        anyhow::bail!(
            "stopped at the first failed operation (onerror=stop) after {} operations: {}",
            outcome.operations,
            first_failure()
        );
    }
    if let Some(closed) = closed {
        closed.context("closing the engine after the run")?;
    }
    if let Some(Integrity { verified, failed }) = integrity {
        if failed > 0 {
            anyhow::bail!(
                "data integrity check failed: {failed} of {verified} verified reads did not match"
            );
        }
    }
    Ok(())
}

/// What a trace captured by this step says of it.
fn trace_header(out: &StepOutput, table: String, threads: usize, target: f64) -> trace::Header {
    trace::Header {
        source: format!("kvperf {}", out.command),
        kvperf: format!(
            "{} ({})",
            env!("CARGO_PKG_VERSION"),
            env!("KVPERF_GIT_COMMIT")
        ),
        engine: Some(out.engine.name.clone()),
        table,
        epoch_unix_ns: 0,
        clients: threads as u32,
        paced: target > 0.0,
        target_ops_per_sec: target,
        // What was given, and the defaults it ran with (a fit reads
        // recordcount and fieldcount from them).
        settings: out
            .defaults
            .iter()
            .chain(&out.settings)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// States on stderr what is about to run (see [`run_header`]).
fn state_what_runs(
    phase: Phase,
    out: &StepOutput,
    workload: &CoreWorkload,
    store: Option<run_header::Store>,
    (threads, clients): (usize, Clients),
    target: f64,
    max_execution: Option<Duration>,
) {
    let cfg = workload.config();
    let header = run_header::RunHeader {
        phase: match phase {
            Phase::Load => "load",
            Phase::Run => "run",
        },
        engine: out.engine.name.clone(),
        engine_version: out.engine.version.clone(),
        store,
        threads,
        clients,
        target_ops_per_sec: target,
        record_count: cfg.record_count,
        field_count: cfg.field_count,
        field_length: cfg.field_length.describe(),
        operations: (workload.operation_count() > 0).then(|| workload.operation_count()),
        max_execution,
    };
    eprint!("{}\n{}", run_header::this_command_line(), header.render());
}

/// The warning of a run whose store holds fewer of the records it reads
/// than `recordcount` says: its reads of the others find nothing.
fn fewer_records(
    db: Option<&Path>,
    held: u64,
    keys: &std::ops::Range<u64>,
    record_count: u64,
) -> String {
    format!(
        "the store in '{}' holds {held} of the {} records this run reads (recordcount {record_count}, keys {}..{}), as kvperf loaded it: \
         reads of the others return NOT_FOUND and updates may insert; run kvperf load with the same properties first",
        db.map(|d| d.display().to_string()).unwrap_or_default(),
        keys.end - keys.start,
        keys.start,
        keys.end,
    )
}

/// Writes into the store's ledger the keys a load tried, warm-up
/// included, and how many of those inserts failed (each may be a hole).
fn record_loaded_keys(out: &mut StepOutput, db: Option<&Path>, workload: &CoreWorkload) {
    let Some(dir) = db else { return };
    let range = workload.loaded_range();
    if let Err(e) = engine::loaded_keys::record(dir, range.start, range.tried, range.failed) {
        step::warn(
            out,
            format!("{e:#}; a later run cannot tell how many records the store holds"),
        );
    }
}
