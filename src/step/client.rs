//! The client's settings of a YCSB step: what the client (not the
//! workload) reads from properties and flags, checked before the engine
//! opens, and the run specification they make.

use std::time::Duration;

use crate::engine::{Capability, EngineSpec};
use crate::error::InputError;
use crate::measure::power::PowerSetup;
use crate::output::ycsb_text::LatencyFrom;
use crate::properties::Properties;
use crate::runner::{BeforeWindow, RunSpec, StallKeeper, StatusOptions, TaskScheduling};

/// kvperf's default `hdrhistogram.percentiles` (YCSB's is `95,99`).
pub const DEFAULT_PERCENTILES: &str = "50,95,99,99.9,99.99";

/// The longest duration a property may ask for: ten years.
const MAX_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

/// Everything the client (not the workload) reads from properties and flags.
pub struct ClientSettings {
    pub threads: usize,
    pub target: u64,
    pub max_execution: Option<Duration>,
    pub warmup: Duration,
    pub status_interval: Duration,
    pub latency_from: LatencyFrom,
    pub seed: u64,
    /// `onerror=stop`: the first failed operation ends the run.
    pub stop_on_error: bool,
    /// `clients=tasks|threads`; None: tasks for an engine with async
    /// operations, else threads.
    pub tasks: Option<bool>,
    /// `runtimethreads`: worker threads of the runtime of client tasks.
    pub runtime_threads: Option<usize>,
    /// `taskscheduling=pinned|stealing`: how client tasks share them.
    pub task_scheduling: Option<TaskScheduling>,
    /// `stalltimeout` seconds (default 300; 0 = never).
    pub stall_timeout: Option<Duration>,
    /// `events.interval` milliseconds between polls of the engine's
    /// activity (default 250; 0 = no polling).
    pub events_interval: Option<Duration>,
    /// The power meter (`power.*`), when one is named.
    pub power: Option<PowerSetup>,
}

/// The longest `events.interval`: an hour, in milliseconds.
const MAX_EVENTS_INTERVAL_MS: u64 = 3_600_000;

/// The most worker threads `runtimethreads` may ask for.
const MAX_RUNTIME_THREADS: u64 = 1024;

impl ClientSettings {
    /// `threads` and `target` are the flags (`--threads`, `--target`),
    /// which win over the properties `threadcount` and `target`.
    pub fn from(
        threads: Option<u64>,
        target: Option<u64>,
        p: &Properties,
    ) -> Result<Self, InputError> {
        let threads = match threads {
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
        let target = match target {
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
    pub fn task_runtime_for(
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

impl ClientSettings {
    /// The run specification of a step of `threads` clients doing
    /// `operations` (None: until the time limit) at `target` ops/s in all,
    /// with these settings' warmup, time limit, latency groups, failure
    /// rule and stall bound; `status` says what it shows while it runs,
    /// `before` is the step's watching before its window and `stall_keeper`
    /// what it keeps of a stall.
    pub fn run_spec(
        &self,
        threads: usize,
        operations: Option<u64>,
        target: f64,
        status: StatusOptions,
        (before, stall_keeper): (&BeforeWindow, &StallKeeper),
    ) -> RunSpec {
        RunSpec {
            threads,
            operations,
            target_ops_per_sec: target,
            warmup: self.warmup,
            max_execution: self.max_execution,
            track_intended: self.latency_from.needs_intended(),
            costs: None,
            stop_on_error: self.stop_on_error,
            stall_timeout: self.stall_timeout,
            status,
            before_window: Some(before.clone()),
            stall_keeper: Some(stall_keeper.clone()),
        }
    }
}

/// `measurement.interval` when the user gives none: YCSB's `op`, or
/// `both` under a target rate.
pub fn default_interval(target: u64) -> &'static str {
    if target > 0 {
        "both"
    } else {
        "op"
    }
}

/// `stalltimeout` (seconds or a duration, default 300 s; 0: none), as
/// `load`, `run` and `replay` read it.
pub fn stall_timeout(p: &Properties) -> Result<Option<Duration>, InputError> {
    Ok(Some(seconds(p, "stalltimeout", 300.0)?).filter(|d| !d.is_zero()))
}

/// A duration property in seconds (fractions allowed) or with a unit
/// (`10s`, `1m`), at most ten years.
pub fn seconds(p: &Properties, key: &str, default: f64) -> Result<Duration, InputError> {
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

pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, InputError> {
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
