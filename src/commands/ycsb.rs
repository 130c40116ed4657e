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
use super::step::{self, Finished};
use crate::engine::{self, Capability, EngineSpec, OpenMode, OpenOptions};
use crate::error::InputError;
use crate::files::Destination;
use crate::host::HostInfo;
use crate::measure::power::PowerSetup;
use crate::measure::{few_samples, window_warnings};
use crate::measure::{OpKind, Outcome};
use crate::output::run_header;
use crate::output::ycsb_text::{self, LatencyFrom};
use crate::output::{self, Format};
use crate::properties::Properties;
use crate::results::step::{Clients, Integrity, Measurement, StepOutput};
use crate::runner::{self, BeforeWindow, ClientRuntime, RunSpec, StatusOptions, TaskScheduling};
use crate::shard::{self, Shard, ShardInfo};
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

/// kvperf's default `hdrhistogram.percentiles` (YCSB's is `95,99`).
const DEFAULT_PERCENTILES: &str = "50,95,99,99.9,99.99";

/// The longest duration a property may ask for: ten years.
const MAX_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

/// Everything the client (not the workload) reads from properties and flags.
struct ClientSettings {
    threads: usize,
    target: u64,
    max_execution: Option<Duration>,
    warmup: Duration,
    status_interval: Duration,
    latency_from: LatencyFrom,
    seed: u64,
    /// `onerror=stop`: the first failed operation ends the run.
    stop_on_error: bool,
    /// `clients=tasks|threads`; None: tasks for an engine with async
    /// operations, else threads.
    tasks: Option<bool>,
    /// `runtimethreads`: worker threads of the runtime of client tasks.
    runtime_threads: Option<usize>,
    /// `taskscheduling=pinned|stealing`: how client tasks share them.
    task_scheduling: Option<TaskScheduling>,
    /// `stalltimeout` seconds (default 300; 0 = never).
    stall_timeout: Option<Duration>,
    /// `events.interval` milliseconds between polls of the engine's
    /// activity (default 250; 0 = no polling).
    events_interval: Option<Duration>,
    /// The power meter (`power.*`), when one is named.
    power: Option<PowerSetup>,
}

/// The longest `events.interval`: an hour, in milliseconds.
const MAX_EVENTS_INTERVAL_MS: u64 = 3_600_000;

/// The most worker threads `runtimethreads` may ask for.
const MAX_RUNTIME_THREADS: u64 = 1024;

impl ClientSettings {
    fn from(args: &YcsbArgs, p: &Properties) -> Result<Self, InputError> {
        let threads = match args.threads {
            Some(n) => n,
            None => p.u64("threadcount", 1)?,
        };
        if threads == 0 {
            return Err(InputError::property(
                "threadcount",
                "0 threads run nothing; give 1 or more",
            ));
        }
        if threads > 1_000_000 {
            return Err(InputError::property(
                "threadcount",
                format!("{threads} threads is more than kvperf starts (1000000)"),
            ));
        }
        // YCSB: 0 (from -target or -p target) means no target.
        let target = match args.target {
            Some(t) => t,
            None => p.u64("target", 0)?,
        };
        let max_execution = match seconds(p, "maxexecutiontime", 0.0)? {
            d if d.is_zero() => None,
            d => Some(d),
        };
        let warmup = seconds(p, "warmuptime", 0.0)?;
        let status_interval = seconds(p, "status.interval", 10.0)?.max(Duration::from_secs(1));
        // Checked now; the text output reads them from the settings.
        parse_percentiles(&p.string("hdrhistogram.percentiles", DEFAULT_PERCENTILES))?;
        // Under a target, latency from the actual start hides the queueing
        // a stall causes (coordinated omission): both unless told otherwise.
        let interval = p.string("measurement.interval", default_interval(target));
        let latency_from = LatencyFrom::parse(&interval).ok_or_else(|| {
            InputError::property(
                "measurement.interval",
                format!("'{interval}' is not op, intended or both"),
            )
        })?;
        let stop_on_error = match p.string("onerror", "continue").as_str() {
            "continue" => false,
            "stop" => true,
            other => {
                return Err(InputError::property(
                    "onerror",
                    format!("'{other}' is not continue or stop"),
                ))
            }
        };
        let tasks = match p.get("clients") {
            None => None,
            Some("tasks") => Some(true),
            Some("threads") => Some(false),
            Some(other) => {
                return Err(InputError::property(
                    "clients",
                    format!("'{other}' is not threads or tasks"),
                ))
            }
        };
        let runtime_threads = match p.get("runtimethreads") {
            None => None,
            Some(_) => match p.u64("runtimethreads", 0)? {
                n @ 1..=MAX_RUNTIME_THREADS => Some(n as usize),
                n => {
                    return Err(InputError::property(
                        "runtimethreads",
                        format!("{n} is not between 1 and {MAX_RUNTIME_THREADS}"),
                    ))
                }
            },
        };
        let task_scheduling = p
            .get("taskscheduling")
            .map(|name| {
                TaskScheduling::from_name(name).ok_or_else(|| {
                    InputError::property(
                        "taskscheduling",
                        format!("'{name}' is not pinned or stealing"),
                    )
                })
            })
            .transpose()?;
        let stall_timeout = stall_timeout(p)?;
        let default_ms = crate::measure::events::DEFAULT_INTERVAL.as_millis() as u64;
        let events_interval = match p.u64("events.interval", default_ms)? {
            0 => None,
            ms @ 1..=MAX_EVENTS_INTERVAL_MS => Some(Duration::from_millis(ms)),
            ms => {
                return Err(InputError::property(
                    "events.interval",
                    format!("{ms} ms is longer than kvperf polls at (at most {MAX_EVENTS_INTERVAL_MS} ms; 0 = no polling)"),
                ))
            }
        };
        let seed = match p.get("seed") {
            Some(_) => p.u64("seed", 0)?,
            None => crate::clock::unix_nanos(),
        };
        Ok(Self {
            threads: threads as usize,
            target,
            max_execution,
            warmup,
            status_interval,
            latency_from,
            seed,
            stop_on_error,
            tasks,
            runtime_threads,
            task_scheduling,
            stall_timeout,
            events_interval,
            power: PowerSetup::from_properties(p)?,
        })
    }

    /// How `clients` clients run against `spec`: as tasks on a runtime
    /// with this many worker threads, shared as it says, or on threads
    /// (None). An engine whose async operations are its default runs tasks
    /// unless `clients=threads`, one that offers them on request only with
    /// `clients=tasks`; tasks that do their own socket I/O
    /// ([`crate::engine::Capabilities::tasks_own_sockets`]) are pinned to a
    /// worker each unless `taskscheduling=stealing`. Asking a blocking
    /// engine for tasks, or shaping a runtime that will not run, is an
    /// error.
    fn task_runtime_for(
        &self,
        spec: &EngineSpec,
        clients: usize,
    ) -> Result<Option<(usize, TaskScheduling)>, InputError> {
        let tasks = match self.tasks {
            Some(true) => {
                spec.require(Capability::AsyncOps, "clients=tasks")?;
                true
            }
            Some(false) => false,
            None => spec.capabilities.async_ops.tasks_by_default(clients),
        };
        if tasks {
            // The machine's cores by default: the clients' and the driver's work.
            let workers = self
                .runtime_threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let scheduling = self
                .task_scheduling
                .unwrap_or_else(|| TaskScheduling::default_for(&spec.capabilities));
            return Ok(Some((workers, scheduling)));
        }
        let asked = [
            ("runtimethreads", "sizes", self.runtime_threads.is_some()),
            (
                "taskscheduling",
                "shares out",
                self.task_scheduling.is_some(),
            ),
        ];
        match asked.iter().find(|(_, _, given)| *given) {
            None => Ok(None),
            Some((name, does, _)) => Err(InputError::property(
                name,
                format!(
                    "{does} the runtime of clients=tasks, but engine '{}' runs its clients on threads here{}",
                    spec.name,
                    match (self.tasks, spec.capabilities.async_ops.available()) {
                        (Some(false), _) => " (clients=threads)",
                        (None, true) => " by default; add -p clients=tasks",
                        _ => "",
                    }
                ),
            )),
        }
    }
}

/// `measurement.interval` when the user gives none: YCSB's `op`, or
/// `both` under a target rate.
fn default_interval(target: u64) -> &'static str {
    if target > 0 {
        "both"
    } else {
        "op"
    }
}

/// A duration property in seconds (fractions allowed) or with a unit
/// (`10s`, `1m`), at most ten years.
/// `stalltimeout` (seconds or a duration, default 300 s; 0: none), as
/// `load`, `run` and `replay` read it.
pub(super) fn stall_timeout(p: &Properties) -> Result<Option<Duration>, InputError> {
    Ok(Some(seconds(p, "stalltimeout", 300.0)?).filter(|d| !d.is_zero()))
}

fn seconds(p: &Properties, key: &str, default: f64) -> Result<Duration, InputError> {
    let s = match p.get(key) {
        // Plain seconds, as YCSB reads them (an exponent too).
        Some(t) if t.trim().parse::<f64>().is_ok() => p.f64(key, default)?,
        _ => p
            .duration(key, Duration::from_secs_f64(default))?
            .as_secs_f64(),
    };
    if s < 0.0 {
        return Err(InputError::property(key, format!("{s} is negative")));
    }
    if s > MAX_SECONDS {
        return Err(InputError::property(
            key,
            format!(
                "{} seconds is more than ten years",
                p.get(key).unwrap_or_default()
            ),
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

fn parse_percentiles(text: &str) -> Result<Vec<f64>, InputError> {
    text.split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 100.0 => Ok(v),
            _ => Err(InputError::property(
                "hdrhistogram.percentiles",
                format!("'{s}' is not a percentile between 0 and 100"),
            )),
        })
        .collect()
}

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
    let destination = destination(args.output.as_deref(), args.format, &inputs)?;
    let (out, finished) = measured_step(&args, phase, destination.as_ref());
    emit(&out, args.format, destination.as_ref())?;
    finished.map(|Finished| ())
}

/// Runs a load or run and returns what it measured, not yet printed
/// (`kvperf fit --check` compares it with a replay).
pub(super) fn measured_step(
    args: &YcsbArgs,
    phase: Phase,
    destination: Option<&Destination>,
) -> (StepOutput, anyhow::Result<Finished>) {
    let mut out = StepOutput::begin(match phase {
        Phase::Load => "load",
        Phase::Run => "run",
    });
    if args.format == Format::Json {
        step::keep_on_stall(&out, destination, None);
    }
    let watching = runner::before_window::Watching(BeforeWindow::watch("the step's checks"));
    let measured = measure(args, phase, destination, &mut out, &watching.0);
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
    let client = ClientSettings::from(args, props)?;
    let inputs: Vec<&Path> = args.workload_files.iter().map(PathBuf::as_path).collect();
    let hdr_logs = HdrLogs::from_properties(props, &inputs)?;
    // No file written twice: the result and the interval logs.
    let mut outputs = crate::files::Outputs::new();
    if let Some(path) = &args.output {
        outputs.file("--output", path)?;
    }
    for path in hdr_logs.iter().flat_map(HdrLogs::paths) {
        outputs.file("hdrhistogram.output.path", path)?;
    }
    let trace = props
        .get(capture::PROPERTY)
        .map(|path| {
            let path = Path::new(path);
            outputs.file(capture::PROPERTY, path)?;
            Destination::check(path, capture::PROPERTY, trace::format::WRITTEN, &inputs)
        })
        .transpose()?;
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
        workload,
        shard: (shard, shard_source),
    })
}

/// Checks a load or run as `kvperf load|run ARGS` would before its engine
/// opens (the plan runner's steps, before the first runs): the shard, the
/// properties, the engine's name and what it can run, and [`check`].
pub(crate) fn check_step(args: &YcsbArgs, phase: Phase) -> anyhow::Result<()> {
    // A step is whole or names its shard: no job array's variables.
    let shard = Shard::resolve(args.shard.as_deref(), &|_| None)?;
    let props = load_properties(args)?;
    let spec = engine::find(&args.engine)?;
    let Checked {
        client, workload, ..
    } = check(args, phase, &props, shard)?;
    let threads = match workload.operation_count() {
        0 => client.threads,
        n => client.threads.min(n as usize),
    };
    client.task_runtime_for(spec, threads)?;
    Ok(())
}

/// Runs the phase and fills `out`; an error leaves what was measured in it.
fn measure(
    args: &YcsbArgs,
    phase: Phase,
    destination: Option<&Destination>,
    out: &mut StepOutput,
    before: &BeforeWindow,
) -> anyhow::Result<()> {
    let shard = Shard::resolve(args.shard.as_deref(), &|name| std::env::var(name).ok())?;
    if let Some((shard, source)) = shard.as_ref().filter(|(_, source)| source != "--shard") {
        eprintln!("kvperf: shard {shard} (from {source})");
    }
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
    let Checked {
        client,
        hdr_logs,
        trace,
        workload,
        shard: (shard, shard_source),
    } = check(args, phase, &props, shard)?;
    // An interrupt from here keeps the settings and warnings.
    if args.format == Format::Json {
        step::keep_on_stall(out, destination, None);
    }
    let mut labels = std::collections::BTreeMap::from([
        ("command".to_string(), out.command.clone()),
        ("engine".to_string(), spec.name.to_string()),
    ]);
    if shard.count > 1 {
        labels.insert("shard".into(), shard.to_string());
    }
    let live = live::figures(args.metrics_addr.as_deref(), labels)?;
    // The effective interval, when kvperf chose it, is part of the record.
    if !props.contains("measurement.interval") && client.target > 0 {
        out.settings.insert(
            "measurement.interval".into(),
            default_interval(client.target).into(),
        );
    }
    out.seed = shard.seed(client.seed);
    let target = shard.rate(client.target as f64);
    if shard != Shard::WHOLE {
        let (slice, of) = workload.shard_slices();
        out.shard = Some(ShardInfo {
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
        });
    }
    let total_ops = workload.operation_count();
    let operations = (total_ops > 0).then_some(total_ops);
    // YCSB: never more threads than operations.
    let threads = match operations {
        Some(n) => client.threads.min(n as usize),
        None => client.threads,
    };

    // Clients as tasks run on the runner's runtime, which the engine's
    // driver shares; it outlives the engine (dropped after it).
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
            properties: &props,
            runtime: runtime.as_ref().map(ClientRuntime::handle),
            mode: match (phase, args.fresh) {
                (Phase::Load, true) => OpenMode::Fresh,
                _ => OpenMode::Any,
            },
        },
    )?;
    out.engine = engine.info();
    let keys = workload.config().insert_start
        ..workload.config().insert_start + workload.config().insert_count;
    // What kvperf's loads put in the store, where it marked it.
    let loaded = db
        .as_deref()
        .map(engine::loaded_keys::loaded)
        .transpose()?
        .flatten()
        .map(|k| k.within(keys.clone()));
    let store = db.as_deref().map(|dir| run_header::Store {
        location: dir.display().to_string(),
        loaded,
    });
    state_what_runs(
        phase,
        out,
        &workload,
        store,
        (threads, clients),
        target,
        client.max_execution,
    );
    if let Some(held) = loaded.filter(|held| phase == Phase::Run && *held < keys.end - keys.start) {
        step::warn(
            out,
            fewer_records(db.as_deref(), held, &keys, workload.config().record_count),
        );
    }
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
    if args.format == Format::Json {
        step::keep_on_stall(out, destination, Some(shape.clone()));
    }
    let run_spec = RunSpec {
        threads,
        operations,
        target_ops_per_sec: target,
        warmup: client.warmup,
        max_execution: client.max_execution,
        track_intended: client.latency_from.needs_intended(),
        costs: None,
        stop_on_error: client.stop_on_error,
        stall_timeout: client.stall_timeout,
        status: StatusOptions {
            interval: args.status.then_some(client.status_interval),
            progress: !args.no_progress && std::io::stderr().is_terminal(),
            label: args.label.clone(),
            ops_log: None,
            intended_groups: client.latency_from == LatencyFrom::Both,
            interval_logs: hdr_logs.is_some(),
            live: live.clone(),
        },
        before_window: Some(before.clone()),
    };
    let capture = trace
        .map(|destination| {
            let header = trace_header(out, workload.config().table.clone(), threads, target);
            Capture::start(destination, header)
        })
        .transpose()?;
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
    if let Some(capture) = capture {
        let path = capture.path().display().to_string();
        let operations = capture.finish()?;
        eprintln!("kvperf: trace of {operations} operations written to '{path}'");
    }

    let integrity = workload.config().data_integrity.then(|| {
        let verify = outcome.histograms.get(OpKind::Verify);
        let total = verify.map_or(0, |g| g.total_returns());
        let ok = verify.map_or(0, |g| g.count(Outcome::Ok));
        Integrity {
            verified: total,
            failed: total - ok,
        }
    });
    live::finished(live.as_ref());
    let interval_logs = outcome.interval_logs.as_ref();
    let logs_written = match (&hdr_logs, interval_logs) {
        (Some(files), Some(logs)) => files.write(logs, outcome.start_unix_ms),
        _ => Ok(Vec::new()),
    };
    out.measurements.push(Measurement {
        accounting: Some(accounting),
        engine_stats,
        integrity: integrity.clone(),
        verdict: Some(verdict),
        events: Some(events),
        ..shape.measurement(&outcome)
    });
    if phase == Phase::Load {
        record_loaded_keys(out, db.as_deref(), &workload);
    }
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
    let logs_written = logs_written?;
    if !logs_written.is_empty() {
        let names: Vec<String> = logs_written
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!("kvperf: interval logs written: {}", names.join(", "));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_list_parses_and_rejects() {
        assert_eq!(
            parse_percentiles("50, 99,99.9").unwrap(),
            vec![50.0, 99.0, 99.9]
        );
        assert!(parse_percentiles("50,100").is_err());
        assert!(parse_percentiles("x").is_err());
    }

    #[test]
    fn durations_are_bounded_not_panicking() {
        let mut p = Properties::new();
        p.set("warmuptime", "1e300");
        let err = seconds(&p, "warmuptime", 0.0).unwrap_err().to_string();
        assert!(err.contains("more than ten years"), "{err}");
        p.set("warmuptime", "-1");
        assert!(seconds(&p, "warmuptime", 0.0).is_err());
        p.set("warmuptime", "0.5");
        assert_eq!(
            seconds(&p, "warmuptime", 0.0).unwrap(),
            Duration::from_millis(500)
        );
        p.set("warmuptime", "1.5m");
        assert_eq!(
            seconds(&p, "warmuptime", 0.0).unwrap(),
            Duration::from_secs(90)
        );
        p.set("warmuptime", "20y");
        let err = seconds(&p, "warmuptime", 0.0).unwrap_err().to_string();
        assert!(err.contains("unknown unit 'y'"), "{err}");
    }
}
