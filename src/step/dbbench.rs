//! One db_bench benchmark as a step's window: its run specification,
//! the window measured on the engine, and db_bench's own figures beside
//! kvperf's.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::measure::OpHistograms;
use crate::results::step::{op_stats, DbBenchFigures, Measurement, StepOutput, WindowBounds};
use crate::runner::before_window::Watching;
use crate::runner::{self, BeforeWindow, OpsLog, RunSpec, StallKeeper, StatusOptions};
use crate::workload::dbbench::{BenchConfig, BenchWorkload, Benchmark};

/// How `kvperf bench` runs each benchmark's clients.
pub struct BenchRun {
    /// `--threads`: the foreground clients (a benchmark may add a
    /// background writer).
    pub foreground_threads: usize,
    /// Whether a progress bar is drawn.
    pub progress: bool,
    /// `--report_file` every `--report_interval_seconds`, when asked for.
    pub ops_log: Option<OpsLog>,
    /// What the step keeps of a stall.
    pub stall_keeper: StallKeeper,
    /// `-p stalltimeout` (None: 0, no limit).
    pub stall_timeout: Option<Duration>,
}

pub struct Measured {
    pub measurement: Measurement,
    /// Kept for the text block, which re-buckets them.
    pub histograms: OpHistograms,
    /// Ctrl-C or SIGTERM ended it; no further benchmark runs.
    pub interrupted: bool,
}

/// Runs `bench` as one measured window on the engine of `measured`
/// ([`super::measure_window`]) and labels its measurement with db_bench's
/// figures (micros/op over the clients' time, MB/s of the bytes moved).
pub fn run_benchmark(
    out: &mut StepOutput,
    run: &BenchRun,
    cfg: &BenchConfig,
    bench: Benchmark,
    measured: super::MeasuredEngine<'_>,
    seed: u64,
    live: Option<&std::sync::Arc<crate::measure::live::LiveFigures>>,
) -> anyhow::Result<Measured> {
    // Each benchmark is a window of its own, named in the live figures.
    if let Some(live) = live {
        live.new_window(&[("benchmark", bench.name())]);
    }
    let workload = BenchWorkload::new(bench, cfg, measured.engine, seed);
    let foreground = run.foreground_threads;
    let threads = bench.total_threads(foreground);
    let per_thread = cfg.ops_per_thread(bench);
    // Until the window opens (the events sampler's first poll, the clients'
    // sessions) a server that stops answering, or an interrupt, ends the
    // step as before a run's window.
    let watching = Watching(BeforeWindow::watch(
        "the benchmark's clients",
        run.stall_keeper.clone(),
    ));
    let spec = RunSpec {
        threads,
        operations: per_thread.map(|n| n * foreground as u64),
        target_ops_per_sec: 0.0,
        warmup: Duration::ZERO,
        max_execution: if per_thread.is_none() {
            cfg.duration
        } else {
            None
        },
        track_intended: false,
        costs: None,
        stop_on_error: false,
        before_window: Some(watching.0.clone()),
        stall_keeper: Some(run.stall_keeper.clone()),
        stall_timeout: run.stall_timeout,
        status: StatusOptions {
            interval: None,
            progress: run.progress,
            label: String::new(),
            ops_log: run.ops_log.clone(),
            intended_groups: false,
            interval_logs: false,
            live: live.cloned(),
        },
    };
    let super::Window {
        outcome,
        accounting,
        verdict,
        engine_stats,
        events,
        ..
    } = super::measure_window(
        out,
        measured,
        spec,
        |spec| runner::execute(&workload, spec),
        |_| workload.logical_bytes(),
        false,
    )?;
    drop(watching);
    let seconds = outcome.runtime.as_secs_f64().max(1e-9);
    let operations = outcome.operations.max(1); // db_bench: "at least one op"
    let window = WindowBounds {
        start_unix_ms: outcome.start_unix_ms,
        end_unix_ms: outcome.end_unix_ms,
        runtime_s: seconds,
        operations,
    };
    let tally = &workload.tally;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    let bytes = load(&tally.bytes);
    let totals = BTreeMap::from([
        ("reads".to_string(), load(&tally.reads)),
        ("found".to_string(), load(&tally.found)),
        ("writes".to_string(), load(&tally.writes)),
        ("bytes".to_string(), bytes),
    ]);
    Ok(Measured {
        measurement: Measurement {
            threads,
            clients: Default::default(),
            target_ops_per_sec: 0.0,
            warmup_s: 0.0,
            hit_time_limit: outcome.hit_time_limit,
            ops: op_stats(&outcome.histograms),
            intervals: outcome.intervals,
            timeline: Some(outcome.timeline),
            accounting: Some(accounting),
            engine_stats,
            integrity: None,
            verdict: Some(verdict),
            device: None,
            events: Some(events),
            db_bench: Some(DbBenchFigures {
                micros_per_op: outcome.thread_seconds * 1e6 / operations as f64,
                mb_per_sec: (bytes > 0).then(|| bytes as f64 / 1_048_576.0 / seconds),
                message: workload.message(),
                totals,
            }),
            ..Measurement::of_window(bench.name(), window)
        },
        histograms: outcome.histograms,
        interrupted: outcome.interrupted,
    })
}
