//! What `load`, `run` and `bench` share: filling the typed step output
//! with warnings and the error that ended a step, and the data directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::{Engine, EngineSpec, EventSupport, StoreKind};
use crate::error::{exit_code, EXIT_INPUT};
use crate::files::Destination;
use crate::measure::accounting::{Accounting, LogicalBytes, Probe};
use crate::measure::events::{self, EngineEvents};
use crate::measure::power::{self, IdleBaseline, PowerMeter, PowerSetup, PowerUse};
use crate::measure::spikes;
use crate::measure::verdict::{self, Verdict};
use crate::measure::{OpGroup, OpHistograms, OpKind, Outcome};
use crate::output::Format;
use crate::results::step::{
    op_stats, Clients, ErrorKind, Measurement, StepError, StepOutput, WindowBounds,
};
use crate::runner::{AfterWindow, RunOutcome, RunSpec, StallKeeper};

/// A measured window and what it cost.
pub struct Window {
    pub outcome: RunOutcome,
    pub accounting: Accounting,
    pub verdict: Verdict,
    pub engine_stats: BTreeMap<String, u64>,
    /// The engine's counters just before the window.
    pub engine_stats_before: BTreeMap<String, u64>,
    /// The engine's close, when asked for (after the window, outside it).
    pub closed: Option<anyhow::Result<()>>,
    /// What the engine's background work did in the window.
    pub events: EngineEvents,
}

/// The engine a window measures, and how often its background activity
/// is polled for events (`events.interval`; None: not at all).
pub struct MeasuredEngine<'a> {
    pub spec: &'a EngineSpec,
    pub engine: &'a dyn Engine,
    pub events_every: Option<Duration>,
    /// The power meter read over the window (`power.*`), or None: RAPL's
    /// package counter at the window's bounds, where readable.
    pub power: Option<&'a PowerSetup>,
}

/// Runs `execute` on the engine with every cost counter read by the runner
/// at the measured window's open and close, and the engine's activity
/// polled from just before the run to just after it ([`events::sample`]);
/// then closes the engine if `close`, reads its size on disk, and judges
/// what bound the window. `logical` gives the bytes the window's
/// operations moved. What `load`, `run` and `bench` measure a step with
/// (docs/semantics.md, "Costs" and "Engine events").
pub fn measure_window(
    out: &mut StepOutput,
    measured: MeasuredEngine,
    mut spec: RunSpec,
    execute: impl FnOnce(&RunSpec) -> anyhow::Result<RunOutcome>,
    logical: impl FnOnce(&RunOutcome) -> LogicalBytes,
    close: bool,
) -> anyhow::Result<Window> {
    let MeasuredEngine {
        spec: engine_spec,
        engine,
        events_every,
        power,
    } = measured;
    if let Some(before) = &spec.before_window {
        // A server's counters and the events sampler's first poll.
        let server = matches!(engine_spec.store, StoreKind::Server { .. });
        before.now(
            "the engine's counters and its events sampler's first poll",
            spec.stall_timeout.filter(|_| server),
        );
    }
    spec.costs = Some(Probe {
        device: out.host.block_device().map(str::to_string),
        server_pids: engine.server_pids(),
        network: matches!(engine_spec.store, StoreKind::Server { .. }),
        memory_filesystem: out.host.data_dir_in_memory(),
    });
    let stats_before = engine.stats();
    crate::runner::stop_on_interrupt();
    let sampled = match (engine_spec.capabilities.events, events_every) {
        (EventSupport::Unavailable(why), _) => Err(why.to_string()),
        (_, None) => Err("not sampled: turned off (an interval of 0)".to_string()),
        (EventSupport::Reports(_), Some(every)) => Ok(every),
    };
    let mut meter = power.map(|setup| open_meter(out, setup));
    let (outcome, recorder, readings, after) = std::thread::scope(|s| {
        let events = sampled
            .as_ref()
            .ok()
            .map(|every| events::sample(s, *every, || engine.activity()));
        let power = match meter.as_mut() {
            Some(Ok((m, every, _))) => m.take().map(|m| power::sample(s, m, *every)),
            _ => None,
        };
        let outcome = execute(&spec);
        // Every call after the window is bounded by stalltimeout and ends
        // at SIGINT or SIGTERM, keeping what was measured.
        let after = outcome
            .as_ref()
            .ok()
            .map(|o| AfterWindow::watch(o, spec.stall_timeout, spec.stall_keeper.clone()));
        if let Some(after) = &after {
            after.now("the engine's events sampler (its last poll)");
        }
        let stopped = (events.map(|e| e.stop()), power.map(|p| p.stop()));
        (outcome, stopped.0, stopped.1, after)
    });
    let outcome = outcome?;
    let after = after.expect("watched when the run ended well");
    let events = match (recorder, sampled) {
        (Some(recorder), _) => recorder.finish(outcome.start_unix_ms, outcome.end_unix_ms),
        (None, Err(why)) => EngineEvents::unavailable(why),
        (None, Ok(_)) => EngineEvents::unavailable("the events sampler did not start"),
    };
    warn_events(out, &events);
    after.now("the engine's close");
    let closed = close.then(|| engine.close());
    let counters = outcome
        .costs
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("internal: the runner read no cost counters"))?;
    after.now("the engine's size (its footprint query)");
    let footprint = engine.footprint();
    let mut accounting = counters.open.until(
        &counters.close,
        outcome.operations,
        logical(&outcome),
        footprint,
    );
    accounting.client_threads_cpu_s = Some(outcome.client_cpu_s);
    if let Some(meter) = meter {
        let used = meter.map(|(_, _, idle)| {
            let readings = readings.unwrap_or_else(|| power::Readings {
                meter: String::new(),
                interval: Duration::ZERO,
                samples: Vec::new(),
            });
            PowerUse::of_window(&readings, outcome.start_unix_ms, outcome.runtime, idle)
        });
        record_power(out, &mut accounting, used);
    }
    accounting.derived = accounting.derive();
    after.now("the engine's counters");
    let engine_stats = engine.stats();
    after.done();
    let mut verdict = verdict::judge(&accounting, stall_seconds(&stats_before, &engine_stats));
    verdict.spikes = spikes::find(&outcome.timeline, &events.spans(outcome.start_unix_ms));
    warn_unreadable(out, &accounting);
    warn_failures(out, &outcome.histograms);
    Ok(Window {
        outcome,
        accounting,
        verdict,
        engine_stats,
        engine_stats_before: stats_before,
        closed,
        events,
    })
}

/// A power meter opened (one reading that worked) and its idle baseline
/// read, before the window; or why the meter is unavailable. The meter is
/// taken by the sampler.
type OpenMeter = Result<(Option<Box<dyn PowerMeter>>, Duration, Option<IdleBaseline>), String>;

fn open_meter(out: &mut StepOutput, setup: &PowerSetup) -> OpenMeter {
    let mut meter = setup.open()?;
    let idle = setup.idle.and_then(|length| {
        power::idle_baseline(meter.as_mut(), setup.interval, length)
            .map_err(|why| {
                warn(
                    out,
                    format!("power: {why}; energy above idle is not measured"),
                )
            })
            .ok()
    });
    Ok((Some(meter), setup.interval, idle))
}

/// The window's power in `accounting`: its energy is the meter's (RAPL's
/// package counter does not stand for it), or unavailable with the reason.
fn record_power(out: &mut StepOutput, accounting: &mut Accounting, used: Result<PowerUse, String>) {
    accounting
        .unavailable
        .retain(|u| !u.starts_with("energy: RAPL"));
    match used {
        Ok(p) => {
            accounting.energy_joules = p.joules;
            if let Some(why) = &p.incomplete {
                accounting.unavailable.push(format!("energy: {why}"));
                warn(
                    out,
                    format!("power: {why}; energy and operations per joule are not figures"),
                );
            }
            accounting.power = Some(p);
        }
        Err(why) => {
            accounting.energy_joules = None;
            let line = format!("power: unavailable: {why}");
            warn(out, line.clone());
            accounting.unavailable.push(line);
        }
    }
}

/// An engine that reports events but could not be asked (a server that
/// did not answer the sampler) is worth a warning; one that reports none
/// is not.
fn warn_events(out: &mut StepOutput, events: &EngineEvents) {
    if events.polls > 0 && events.unavailable.is_some() {
        let why = events.unavailable.clone().unwrap_or_default();
        warn(out, format!("engine events: {why}"));
    } else if let Some(first) = &events.first_failure {
        warn(
            out,
            format!(
                "engine events: {} of {} polls failed (first: {first}); events may be missing or longer than they were",
                events.failed_polls, events.polls
            ),
        );
    }
}

/// Proof that a step ended without an error.
pub struct Finished;

/// Records how the step ended: its end time and, on failure, the error
/// (what was measured before it stays in `out`).
pub fn finish(out: &mut StepOutput, result: anyhow::Result<()>) -> anyhow::Result<Finished> {
    out.finished_at_unix_ms = crate::clock::unix_ms();
    match result {
        Ok(()) => Ok(Finished),
        Err(err) => {
            out.error = Some(StepError {
                kind: if exit_code(&err) == EXIT_INPUT {
                    ErrorKind::Input
                } else {
                    ErrorKind::Run
                },
                // Its words may quote a URL or connection string a user
                // gave, password and all (pass 14).
                message: crate::properties::scrubbed_text(&format!("{err:#}")),
            });
            Err(err)
        }
    }
}

/// Refuses the command's `outputs` inside its engine's store directory
/// (`db`, else `default`) before any is written: a refusal's own JSON
/// went to the refused path.
pub fn outputs_outside_store(
    engine: &str,
    db: Option<&Path>,
    default: &str,
    outputs: &[(&str, &Path)],
) -> Result<(), crate::error::InputError> {
    let Some(store) = crate::engine::find(engine)
        .ok()
        .and_then(|spec| data_dir(spec, db, default))
    else {
        return Ok(());
    };
    let mut checked = crate::files::Outputs::new();
    for (what, path) in outputs {
        checked.file(what, path)?;
    }
    checked.outside_store(&store)
}

/// How a step that finished ends once its output is written: a SIGINT or
/// SIGTERM that came meanwhile (held while the output was written) is
/// not lost but ends it as one after the window does, exit 3; its output
/// is whole.
pub fn ended(finished: anyhow::Result<Finished>) -> anyhow::Result<()> {
    let Finished = finished?;
    if crate::runner::interrupted() {
        anyhow::bail!("interrupted as the step's figures were written; they are written whole");
    }
    Ok(())
}

/// How a step's measurement is labelled: what [`Shape::measurement`]
/// needs besides what the runner measured.
#[derive(Debug, Clone)]
pub struct Shape {
    pub name: String,
    pub threads: usize,
    pub clients: Clients,
    pub target_ops_per_sec: f64,
    pub warmup_s: f64,
}

impl Shape {
    /// The measurement of `outcome`: its window, operations, throughput
    /// and histograms; the costs, verdict and events are the caller's to
    /// add (a stall keeps none of them).
    pub fn measurement(&self, outcome: &RunOutcome) -> Measurement {
        let window = WindowBounds {
            start_unix_ms: outcome.start_unix_ms,
            end_unix_ms: outcome.end_unix_ms,
            runtime_s: outcome.runtime.as_secs_f64(),
            operations: outcome.operations,
        };
        Measurement {
            threads: self.threads,
            clients: self.clients,
            target_ops_per_sec: self.target_ops_per_sec,
            warmup_s: self.warmup_s,
            hit_time_limit: outcome.hit_time_limit,
            ops: op_stats(&outcome.histograms),
            intervals: outcome.intervals.clone(),
            timeline: Some(outcome.timeline.clone()),
            ..Measurement::of_window(self.name.clone(), window)
        }
    }
}

/// When a stall (or a wait after the window that outlived `stalltimeout`,
/// or was interrupted) ends the process, `destination` still gets the
/// step's output as it stands (`out` now: settings, engine, host, earlier
/// benchmarks), with what the window had measured when `shape` says how
/// to label it, and the stall as its error: a plan records the step as
/// failed with its figures, not mute. `keeper` is the step's.
pub fn keep_on_stall(
    keeper: &StallKeeper,
    out: &StepOutput,
    destination: Option<&Destination>,
    shape: Option<Shape>,
) {
    let Some(destination) = destination.cloned() else {
        return;
    };
    keep_output_on_stall(keeper, out, shape, move |json| {
        if let Err(e) = destination.write(json) {
            eprintln!("kvperf: {e:#}");
        }
    });
}

/// [`keep_on_stall`] for a step whose output is `format` written to
/// `destination`, or to stdout when it has none: JSON goes where the
/// result would; text, which a stall's partial figures cannot be written
/// as, is kept as JSON in a `kvperf-unsaved-*` file named on stderr (pass
/// 15: `run --output m.txt` stalled after its window said "what was
/// measured is kept" and kept nothing; pass 16: so did `replay --output
/// m.txt`, and every step printing to stdout).
pub fn keep_in_output_on_stall(
    keeper: &StallKeeper,
    out: &StepOutput,
    (format, destination): (Format, Option<&Destination>),
    shape: Option<Shape>,
) {
    match (format, destination) {
        (Format::Json, Some(destination)) => keep_on_stall(keeper, out, Some(destination), shape),
        (Format::Json, None) => {
            let stdout = Destination::stdout(crate::output::written_as(format));
            keep_on_stall(keeper, out, Some(&stdout), shape)
        }
        (Format::Text, _) => keep_unsaved_on_stall(keeper, out, shape),
    }
}

/// Keeps a stall's figures as JSON in a `kvperf-unsaved-*` file named on
/// stderr.
fn keep_unsaved_on_stall(keeper: &StallKeeper, out: &StepOutput, shape: Option<Shape>) {
    keep_output_on_stall(keeper, out, shape, |json| match crate::files::keep_unsaved(
        json, None, "json",
    ) {
        Ok(path) => eprintln!(
            "kvperf: the step's figures are kept as JSON in '{}'",
            path.display()
        ),
        Err(e) => eprintln!("kvperf: the step's figures could not be kept ({e})"),
    });
}

fn keep_output_on_stall(
    keeper: &StallKeeper,
    out: &StepOutput,
    shape: Option<Shape>,
    write: impl Fn(&[u8]) + Send + Sync + 'static,
) {
    let partial = out.clone();
    keeper.keep(move |why, measured| {
        let mut output = partial.clone();
        output.finished_at_unix_ms = crate::clock::unix_ms();
        if let (Some(shape), Some(measured)) = (&shape, measured) {
            output.measurements.push(shape.measurement(measured));
            for (kind, group) in measured.histograms.iter() {
                if let Some(line) = failure_line(kind, group) {
                    output.warnings.push(line);
                }
            }
        }
        output.error = Some(StepError {
            kind: ErrorKind::Run,
            message: why.to_string(),
        });
        write(crate::output::json::to_pretty(&output).as_bytes());
    });
}

/// A warning: on stderr now, and in the output for whoever reads it later.
pub fn warn(out: &mut StepOutput, message: String) {
    eprintln!("kvperf: warning: {message}");
    out.warnings.push(message);
}

/// Counters that exist on Linux but could not be read (not tmpfs or a
/// machine without RAPL, where absence is normal).
pub fn warn_unreadable(out: &mut StepOutput, a: &Accounting) {
    let unexpected = |w: &&String| w.contains("cannot read") || w.contains("failed");
    for why in a.unavailable.iter().filter(unexpected) {
        warn(out, format!("{why}; recorded as unavailable"));
    }
}

/// Failed operations (every return but `OK`: `NOT_FOUND` as much as an
/// engine's error) are counted per operation type, not fatal: say how
/// many, the same count as the text output's `[OP-FAILED]` group and the
/// JSON's `returns`.
pub fn warn_failures(out: &mut StepOutput, histograms: &OpHistograms) {
    for (kind, group) in histograms.iter() {
        if let Some(line) = failure_line(kind, group) {
            warn(out, line);
        }
    }
}

/// "N OP operations failed (first: ...)" when engine errors are all there
/// is, else with the count of each status: "N OP operations failed (N1
/// NOT_FOUND, N2 ERROR; first: ...)".
pub fn failure_line<H>(kind: OpKind, group: &OpGroup<H>) -> Option<String>
where
    H: crate::measure::OkCounts,
{
    let failed = group.unsuccessful();
    if failed == 0 {
        return None;
    }
    let name = kind.ycsb_name();
    let why = group.first_failure();
    if group.count(Outcome::Error) == failed {
        return Some(format!("{failed} {name} operations failed (first: {why})"));
    }
    let parts: Vec<String> = Outcome::ALL[1..]
        .iter()
        .filter(|o| group.count(**o) > 0)
        .map(|o| format!("{} {}", group.count(*o), o.ycsb_name()))
        .collect();
    Some(format!(
        "{failed} {name} operations failed ({}; first: {why})",
        parts.join(", ")
    ))
}

/// Seconds the engine spent in write stalls between two `stats()`
/// readings, when it counts them (`stall-micros`).
pub fn stall_seconds(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Option<f64> {
    let key = "stall-micros";
    Some(after.get(key)?.saturating_sub(*before.get(key)?) as f64 / 1e6)
}

/// The data directory of a directory engine (`given` or the default);
/// for other engines only what was given, which `engine::open` refuses.
pub fn data_dir(spec: &EngineSpec, given: Option<&Path>, default: &str) -> Option<PathBuf> {
    match given {
        Some(dir) => Some(dir.to_path_buf()),
        None if spec.uses_data_dir() => Some(PathBuf::from(default)),
        None => None,
    }
}
