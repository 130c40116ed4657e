//! `kvperf replay TRACE --engine NAME`: load what the trace reads before
//! it writes it, then replay the trace through the runner, with the
//! outputs a run has (YCSB text, JSON with histograms).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::engine::{self, Engine, EngineSpec, OpenMode, OpenOptions};
use crate::error::InputError;
use crate::files::Destination;
use crate::host::HostInfo;
use crate::output::Format;
use crate::properties::Properties;
use crate::results::step::{Clients, Measurement, StepOutput};
use crate::runner::before_window::{BeforeWindow, Watching};
use crate::runner::{self, RunSpec, StallKeeper, StatusOptions};
use crate::step::{self, Finished};
use crate::trace::capture::{self, Capture};
use crate::trace::format::Header;
use crate::trace::record::TraceOp;
use crate::workload::replay::{preload, Lateness, Replay, Schedule};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace (`-p trace.output=FILE`, or `kvperf trace import`).
    pub trace: PathBuf,

    /// Engine to replay on (see `kvperf engines`).
    #[arg(long, value_name = "NAME", default_value = crate::engine::DEFAULT_ENGINE)]
    pub engine: String,

    /// Data directory of a directory engine (default `kvperf-data`): the
    /// replay starts from an empty store there (as `kvperf load --fresh`).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,

    /// Replay on the store as it is (it must exist), loading nothing
    /// first: the store a trace was recorded on, or a copy of it.
    #[arg(long)]
    pub existing: bool,

    /// Closed loop: clients that each take the trace's next operation as
    /// soon as they are free. Default 1; open loop: enough to keep up.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Open loop: issue each operation at its time in the trace divided
    /// by SPEED (2: twice as fast), latency from that time.
    // Negative numbers reach the check below, which names --speed.
    #[arg(long, value_name = "SPEED", allow_negative_numbers = true)]
    pub speed: Option<f64>,

    /// An engine option (`-p rocksdb.cache_size=1g`); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Settle the store (flush, wait out compactions) after loading it,
    /// as a store reopened after `kvperf load` is: `kvperf fit --check`.
    #[arg(skip)]
    pub settle_after_load: bool,
}

/// Clients of an open-loop replay unless told: each waits for its
/// operation's time, so more than one keeps a slow operation from
/// delaying the next.
const OPEN_LOOP_CLIENTS: usize = 16;

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    // As `load` and `run`: from the step's first moment SIGINT/SIGTERM end
    // it with its output written (exit 3), and a server that stops
    // answering before the window ends it at stalltimeout plus a grace.
    runner::stop_on_interrupt();
    let output: Vec<_> = args
        .output
        .iter()
        .map(|p| ("--output", p.as_path()))
        .collect();
    let db = args.db.as_deref();
    step::outputs_outside_store(&args.engine, db, super::ycsb::DEFAULT_DB, &output)?;
    let destination =
        super::ycsb::destination(args.output.as_deref(), args.format, &[&args.trace])?;
    let (out, finished) = measured_step(&args, destination.as_ref());
    super::ycsb::emit(&out, args.format, destination.as_ref())?;
    step::ended(finished)
}

/// The slowest and fastest `--speed`: a million times slower or faster
/// than the trace (a second of it then lasts 11.6 days, or 1 us).
const SPEEDS: std::ops::RangeInclusive<f64> = 1e-6..=1e6;
/// The most clients a replay starts, as `threadcount` of a run.
const MOST_THREADS: usize = 1_000_000;

/// Runs the replay and returns what it measured, not yet printed
/// (`kvperf fit --check` compares it with the fitted workload's run).
pub(super) fn measured_step(
    args: &ReplayArgs,
    destination: Option<&Destination>,
) -> (StepOutput, anyhow::Result<Finished>) {
    let mut out = StepOutput::begin("replay");
    let json_to = destination.filter(|_| args.format == Format::Json);
    let keeper = super::stall_keeper();
    step::keep_on_stall(&keeper, &out, json_to, None);
    let watching = Watching(BeforeWindow::watch("the step's checks", keeper.clone()));
    let measured = measure(args, &mut out, destination, (&watching.0, &keeper));
    drop(watching);
    let finished = step::finish(&mut out, measured);
    (out, finished)
}

fn measure(
    args: &ReplayArgs,
    out: &mut StepOutput,
    destination: Option<&Destination>,
    (before, keeper): (&BeforeWindow, &StallKeeper),
) -> anyhow::Result<()> {
    let json_to = destination.filter(|_| args.format == Format::Json);
    let (schedule, threads) = schedule_and_threads(args)?;
    let mut props = Properties::new();
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    let stall_timeout = crate::step::client::stall_timeout(&props)?;
    let (header, ops) = read_ops(&args.trace)?;
    out.settings = props.redacted_map();
    out.settings
        .insert("trace".into(), args.trace.display().to_string());
    if let Some(s) = schedule {
        out.settings.insert("speed".into(), s.speed.to_string());
        out.settings
            .insert("measurement.interval".into(), "both".into());
    }
    let spec = engine::find(&args.engine)?;
    let trace_output = trace_output(args, &props, spec)?;
    engine::run_on_asked_library(spec.name, &props)?;
    let db = step::data_dir(spec, args.db.as_deref(), super::ycsb::DEFAULT_DB);
    // An interrupt from here keeps the settings.
    step::keep_on_stall(keeper, out, json_to, None);
    let engine = open_store(
        spec,
        db.as_deref(),
        &props,
        (args.existing, threads),
        (before, stall_timeout),
    )?;
    out.engine = engine.info();
    out.host = HostInfo::collect(db.clone().or_else(|| engine.data_location()).as_deref());
    let capture = trace_output
        .map(|destination| {
            let own = own_header(&header, spec.name, threads, schedule, out);
            Capture::start(destination, own)
        })
        .transpose()?;
    let replay = Replay::new(
        &ops,
        &header.table,
        engine.as_ref(),
        schedule,
        crate::clock::unix_nanos(),
    )
    .capturing(capture.as_ref());
    let loads = if args.existing {
        Vec::new()
    } else {
        preload::records_to_load(&ops)
    };
    // Each insert is bounded by the engine's own calls; the whole load,
    // as long as the trace makes it, only by an interrupt.
    before.now("the trace's records to be loaded before it replays", None);
    let dataset = replay.load(&loads)?;
    if args.settle_after_load {
        engine.settle(true)?;
    }
    let how = match schedule {
        Some(s) => format!("open loop at speed {} with {threads} clients", s.speed),
        None => format!("closed loop with {threads} clients"),
    };
    eprintln!(
        "kvperf: replaying {} operations of trace '{}' ({}) on {}: {} records loaded first, {how}",
        ops.len(),
        args.trace.display(),
        header.source,
        spec.name,
        loads.len(),
    );
    let shape = step::Shape {
        name: "replay".into(),
        threads,
        clients: Clients::Threads,
        target_ops_per_sec: 0.0,
        warmup_s: 0.0,
    };
    // A stall or an interrupt in the window keeps what it measured.
    step::keep_in_output_on_stall(keeper, out, (args.format, destination), Some(shape.clone()));
    // Waiting for an operation's time in the trace is no stall.
    let window_stall = stall_timeout.map(|limit| limit + replay.longest_pause());
    let run_spec = run_spec(threads, schedule, window_stall, (before, keeper));
    let window = step::measure_window(
        out,
        step::MeasuredEngine {
            spec,
            engine: engine.as_ref(),
            events_every: Some(crate::measure::events::DEFAULT_INTERVAL),
            power: None,
        },
        run_spec,
        |run_spec| runner::execute(&replay, run_spec),
        |_| replay.logical_bytes(dataset),
        true,
    )?;
    let late = replay.lateness();
    drop(replay);
    let sessions_closed = step::close_sessions(spec, engine, stall_timeout);
    // The window's figures are kept before the trace is put in place,
    // which may fail (a file put at its path meanwhile).
    let traced = capture.map(|capture| {
        let path = capture.path().display().to_string();
        capture.finish().map(|operations| {
            eprintln!("kvperf: trace of {operations} operations written to '{path}'");
        })
    });
    out.measurements.push(Measurement {
        accounting: Some(window.accounting),
        engine_stats: window.engine_stats,
        engine_stats_before: window.engine_stats_before,
        verdict: Some(window.verdict),
        events: Some(window.events),
        ..shape.measurement(&window.outcome)
    });
    if let Some(s) = schedule {
        tell_lateness(out, s, &late);
    }
    traced.transpose()?;
    if let Some(closed) = window.closed {
        closed?;
    }
    if window.outcome.interrupted {
        anyhow::bail!(
            "interrupted after {} operations; what was measured is kept",
            window.outcome.operations
        );
    }
    sessions_closed
}

/// `--speed` and `--threads` checked: the open loop's schedule, if any,
/// and how many clients replay.
fn schedule_and_threads(args: &ReplayArgs) -> anyhow::Result<(Option<Schedule>, usize)> {
    let schedule = match args.speed {
        None => None,
        Some(speed) if speed.is_finite() && SPEEDS.contains(&speed) => Some(Schedule { speed }),
        Some(speed) => {
            return Err(InputError::Invalid(format!(
                "--speed {speed:e} is not a speed between 0.000001 and 1000000 (1: the trace's own times)"
            ))
            .into())
        }
    };
    let threads = match (args.threads, schedule) {
        (Some(0), _) => {
            return Err(
                InputError::Invalid("--threads 0 replays nothing; give 1 or more".into()).into(),
            )
        }
        (Some(n), _) if n > MOST_THREADS => {
            return Err(InputError::Invalid(format!(
                "--threads {n} is more than kvperf starts ({MOST_THREADS})"
            ))
            .into())
        }
        (Some(n), _) => n,
        (None, Some(_)) => OPEN_LOOP_CLIENTS,
        (None, None) => 1,
    };
    Ok((schedule, threads))
}

/// Where `trace.output` (if given) writes the replay's own trace, checked
/// against the trace read; the replay's outputs (its result, that trace,
/// the engine's own files such as RocksDB's trace) each at a path of its own.
fn trace_output(
    args: &ReplayArgs,
    props: &Properties,
    spec: &EngineSpec,
) -> Result<Option<Destination>, InputError> {
    let mut outputs = crate::files::Outputs::new();
    if let Some(output) = &args.output {
        outputs.file("--output", output)?;
    }
    for (what, path) in spec.files_written(props) {
        outputs.file(what, &path)?;
    }
    if let Some(path) = props.get(capture::PROPERTY) {
        outputs.file(capture::PROPERTY, std::path::Path::new(path))?;
    }
    if let Some(db) = crate::step::data_dir(spec, args.db.as_deref(), super::ycsb::DEFAULT_DB) {
        outputs.outside_store(&db)?;
    }
    props
        .get(capture::PROPERTY)
        .map(|path| {
            let path = std::path::Path::new(path);
            crate::trace::output::destination(path, capture::PROPERTY, &[&args.trace])
        })
        .transpose()
}

/// The runner's specification of a replay: no warmup, no target rate,
/// intended start times only in an open loop.
fn run_spec(
    threads: usize,
    schedule: Option<Schedule>,
    stall_timeout: Option<Duration>,
    (before, keeper): (&BeforeWindow, &StallKeeper),
) -> RunSpec {
    RunSpec {
        threads,
        operations: None,
        target_ops_per_sec: 0.0,
        warmup: Duration::ZERO,
        max_execution: None,
        track_intended: schedule.is_some(),
        costs: None,
        stop_on_error: false,
        stall_timeout,
        before_window: Some(before.clone()),
        stall_keeper: Some(keeper.clone()),
        status: StatusOptions {
            interval: None,
            progress: false,
            label: String::new(),
            ops_log: None,
            intended_groups: schedule.is_some(),
            interval_logs: false,
            live: None,
        },
    }
}

/// An open-loop replay's word on how well it kept to the trace's times: a
/// warning when operations started late.
fn tell_lateness(out: &mut StepOutput, s: Schedule, late: &Lateness) {
    if late.late > 0 {
        step::warn(
            out,
            format!(
                "the replay fell behind the trace's times (speed {}): {} of {} operations started over {} ms late, the latest {:.1} ms late; their latency counts from their time in the trace",
                s.speed,
                late.late,
                late.operations,
                crate::workload::replay::LATE.as_millis(),
                late.max.as_secs_f64() * 1e3
            ),
        );
    } else {
        eprintln!(
            "kvperf: the replay kept to the trace's times (speed {}): no operation started over {} ms late",
            s.speed,
            crate::workload::replay::LATE.as_millis()
        );
    }
}

/// The trace's header and its operations in time order; a trace with none
/// is refused.
fn read_ops(trace: &Path) -> anyhow::Result<(Header, Vec<TraceOp>)> {
    let (header, mut ops) = crate::trace::read_trace(trace)?;
    if ops.is_empty() {
        return Err(InputError::Invalid(format!(
            "trace '{}' holds no operations",
            trace.display()
        ))
        .into());
    }
    crate::trace::in_time_order(&mut ops);
    Ok((header, ops))
}

/// The header of the trace a replay writes of itself: the trace read's,
/// with this replay's engine, clients, pacing and settings.
fn own_header(
    header: &Header,
    engine: &str,
    threads: usize,
    schedule: Option<Schedule>,
    out: &StepOutput,
) -> Header {
    let mut own = header.clone();
    own.source = "kvperf replay".into();
    own.engine = Some(engine.to_string());
    own.clients = threads as u32;
    own.paced = schedule.is_some();
    own.settings = out.settings.clone().into_iter().collect();
    own
}

/// The engine opened on its store for `clients` (an empty one, or with
/// --existing the store as it is), watched by `before` for as long as a
/// server's connection may take (`stall_timeout`).
fn open_store(
    spec: &'static EngineSpec,
    db: Option<&Path>,
    props: &Properties,
    (existing, clients): (bool, usize),
    (before, stall_timeout): (&BeforeWindow, Option<Duration>),
) -> anyhow::Result<Box<dyn Engine>> {
    let mode = match existing {
        true => OpenMode::Existing,
        false => OpenMode::Fresh,
    };
    match spec.store {
        engine::StoreKind::Server { .. } => before.now(
            "the engine to open (its server's connection and schema checks)",
            stall_timeout,
        ),
        _ => before.now("the engine to open its store", None),
    }
    engine::open(
        spec,
        &OpenOptions {
            dir: db,
            properties: props,
            runtime: None,
            mode,
            clients: Some(clients),
        },
    )
}
