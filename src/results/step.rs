//! The typed contract between a step and everything that reads it: what
//! `kvperf load|run --format json` and `kvperf bench --json` write, what
//! the plan runner, `report`, `compare` and `merge` read, with one type.
//! Errors and warnings travel inside it; nothing reads it by string keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::EngineInfo;
use crate::error::InputError;
use crate::host::HostInfo;
use crate::measure::accounting::Accounting;
use crate::measure::events::EngineEvents;
use crate::measure::hdr::Hdr;
use crate::measure::steady::Steadiness;
use crate::measure::timeline::Timeline;
use crate::measure::verdict::Verdict;
use crate::measure::{OpGroup, OpHistograms, OpKind, Outcome};
pub use crate::results::merge::MergeInfo;
use crate::shard::ShardInfo;

/// Version of [`StepOutput`]; a reader refuses any other with a clear line.
pub const STEP_FORMAT: u32 = 2;

/// kvperf's own identity, recorded in every result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub version: String,
    pub commit: String,
}

impl Provenance {
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("KVPERF_GIT_COMMIT").to_string(),
        }
    }
}

/// Everything one `kvperf load`, `run` or `bench` measured and what makes
/// it reproducible.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepOutput {
    /// [`STEP_FORMAT`].
    pub kvperf_step: u32,
    pub kvperf: Provenance,
    /// `load`, `run`, `bench` or `precondition`.
    pub command: String,
    pub started_at_unix_ms: u64,
    pub finished_at_unix_ms: u64,
    pub engine: EngineInfo,
    pub host: HostInfo,
    /// Seed of the random generators (db_bench: the seed base), written
    /// as a JSON string: seeds exceed 2^53, past which jq and JavaScript
    /// round a number. Results that wrote it as a number read back too.
    #[serde(with = "seed_text")]
    pub seed: u64,
    /// YCSB: every property as resolved from `-P` files and `-p`
    /// overrides; db_bench: every flag with its effective value.
    pub settings: BTreeMap<String, String>,
    /// YCSB: every property kvperf read but was not given, with the
    /// default it used (credentials redacted): with `settings`, the
    /// effective value of every property the workload and the engine's
    /// opening read. Absent in results from before it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub defaults: BTreeMap<String, String>,
    /// One per measured phase: a YCSB load or run, or each db_bench
    /// benchmark in order.
    pub measurements: Vec<Measurement>,
    pub warnings: Vec<String>,
    /// Why the step stopped early; what was measured before stays above.
    pub error: Option<StepError>,
    /// A precondition's rounds: whether they reached steady state.
    #[serde(default)]
    pub steady: Option<Steadiness>,
    /// A shard's result (`--shard I/N`): which shard of which study.
    #[serde(default)]
    pub shard: Option<ShardInfo>,
    /// A merged result (`kvperf merge`, a plan step with `clients`): the
    /// shards it is made of.
    #[serde(default)]
    pub merged: Option<MergeInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Bad input: exit code 2.
    Input,
    /// The run failed (an engine, a device, a data-integrity check): exit code 3.
    Run,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepError {
    pub kind: ErrorKind,
    pub message: String,
}

/// One measured window.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// `load`, `run`, or the db_bench benchmark.
    pub name: String,
    /// Clients (YCSB's `threadcount`): threads or tasks, see `clients`.
    pub threads: usize,
    /// How the clients ran; results before this field ran threads.
    #[serde(default)]
    pub clients: Clients,
    /// Total target rate; 0 = as fast as possible.
    pub target_ops_per_sec: f64,
    pub warmup_s: f64,
    /// Wall-clock bounds of the measured window (warmup excluded).
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    pub runtime_s: f64,
    pub operations: u64,
    pub ops_per_sec: f64,
    /// True when a time limit ended the window before its operations.
    pub hit_time_limit: bool,
    /// Per operation type: return codes and latency histograms.
    pub ops: BTreeMap<OpKind, OpStats>,
    /// Operations completed in each interval of `timeline`, in order (the
    /// same counts; in results from before timelines, each second's from
    /// a running total, the last entry covering less than a second).
    pub intervals: Vec<u64>,
    /// Per interval (about a second, each with its own start and length,
    /// ended with the window): operations, failures and latency
    /// percentiles of each operation type; absent in results from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Device and process I/O, CPU and energy of the window.
    pub accounting: Option<Accounting>,
    /// The engine's own counters after the window.
    pub engine_stats: BTreeMap<String, u64>,
    /// The same counters just before the window (`kvperf fit --check`
    /// takes the window's share of the block cache's hits from them); not
    /// written out.
    #[serde(skip)]
    pub engine_stats_before: BTreeMap<String, u64>,
    pub integrity: Option<Integrity>,
    /// db_bench's result-line figures (`kvperf bench` only).
    pub db_bench: Option<DbBenchFigures>,
    /// What bound the window: device, engine stalls, CPU, or unclear.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// A device measurement (`kvperf device corners`): the I/O pattern and
    /// its bandwidth, with fio's figures beside it when asked.
    #[serde(default)]
    pub device: Option<DeviceFigures>,
    /// What the engine's background work did in the window (flushes,
    /// compactions, stalls, checkpoints, saves), on the window's clock, or
    /// why the engine cannot say; absent in results from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EngineEvents>,
}

/// When a measured window ran, for how long, and the operations it
/// completed: what a [`Measurement`]'s throughput is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowBounds {
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    pub runtime_s: f64,
    pub operations: u64,
}

/// Throughput, the one definition (docs/semantics.md, "Throughput
/// (ops/s)"): operations over the window's seconds; 0 for a window of no
/// length.
pub fn ops_per_sec(operations: u64, runtime_s: f64) -> f64 {
    if runtime_s > 0.0 {
        operations as f64 / runtime_s
    } else {
        0.0
    }
}

impl Measurement {
    /// The measurement named `name` of the window `w`: its bounds, its
    /// operations and their throughput ([`ops_per_sec`]); the rest empty,
    /// for the caller to add. Every measurement is made here, so no figure
    /// is without a window.
    pub fn of_window(name: impl Into<String>, w: WindowBounds) -> Measurement {
        Measurement {
            name: name.into(),
            start_unix_ms: w.start_unix_ms,
            end_unix_ms: w.end_unix_ms,
            runtime_s: w.runtime_s,
            operations: w.operations,
            ops_per_sec: ops_per_sec(w.operations, w.runtime_s),
            ..Measurement::default()
        }
    }

    /// The window's failed operations: every return but `OK` (`NOT_FOUND`
    /// too) of the groups a client's operation is one of, that is every
    /// group but VERIFY (a read's check) and READ-MODIFY-WRITE (its READ
    /// and UPDATE are counted in their own groups, so a read-modify-write
    /// both of whose halves failed counts twice). What stderr's warnings,
    /// the text output's `[OVERALL], FailedOperations` and the plan's step
    /// line count (docs/semantics.md, "Failed operations").
    pub fn failed_operations(&self) -> u64 {
        self.ops
            .iter()
            .filter(|(kind, _)| !matches!(kind, OpKind::Verify | OpKind::ReadModifyWrite))
            .map(|(_, stats)| stats.unsuccessful())
            .sum()
    }

    /// The window's successful operations: the `OK` returns of every
    /// group but VERIFY, less one per successful READ-MODIFY-WRITE (whose
    /// READ and UPDATE are two of them).
    pub fn ok_operations(&self) -> u64 {
        crate::measure::client_operations(
            self.ops
                .iter()
                .map(|(kind, stats)| (*kind, stats.count(Outcome::Ok))),
        )
    }

    /// Successful operations per second of the window, over the same
    /// seconds as `ops_per_sec` (which counts every completed operation,
    /// as YCSB does).
    pub fn ok_ops_per_sec(&self) -> f64 {
        ops_per_sec(self.ok_operations(), self.runtime_s)
    }
}

/// How a step's clients ran: each a closed loop with one operation in
/// flight, either on its own thread or as a task on a runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Clients {
    /// One OS thread per client, each blocking on the engine.
    #[default]
    Threads,
    /// One task per client on a runtime with `runtime_threads` worker
    /// threads (an engine with async operations); `pinned`: each client
    /// stays on one worker, which polls its connection (else the workers
    /// steal tasks from each other; results from before it say neither).
    Tasks {
        runtime_threads: usize,
        #[serde(default)]
        pinned: bool,
    },
}

impl Clients {
    /// `count` clients run this way, in words: "4 threads", "16 clients as
    /// tasks on 2 workers (each client pinned to one)".
    pub fn describe(self, count: usize) -> String {
        match self {
            Clients::Threads if count == 1 => "1 thread".into(),
            Clients::Threads => format!("{count} threads"),
            Clients::Tasks {
                runtime_threads,
                pinned: true,
            } => format!(
                "{count} clients as tasks on {runtime_threads} workers (each client pinned to one)"
            ),
            Clients::Tasks {
                runtime_threads,
                pinned: false,
            } => format!("{count} clients as tasks on {runtime_threads} work-stealing workers"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFigures {
    pub block_bytes: u64,
    pub queue_depth: u64,
    pub random: bool,
    pub write: bool,
    /// 10^6 bytes per second, as fio prints MB/s.
    pub mb_per_sec: f64,
    pub fio: Option<FioFigures>,
    /// The memory the I/O went through (absent in results from before
    /// 2026-11-27, whose buffers were on 4 KiB pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<IoBuffers>,
}

/// The I/O buffers of a device measurement: on scattered 4 KiB pages a
/// block is many segments, on a huge page one (docs/your-ssd.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IoBuffers {
    /// What was asked for: "huge" (2 MiB transparent huge pages) or "small".
    pub pages: String,
    /// Block size times queue depth.
    pub bytes: u64,
    /// Of `bytes`, those the kernel backed with huge pages.
    pub huge_page_bytes: u64,
}

/// fio's figures for the same corner, on the same target, in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioFigures {
    pub version: String,
    /// fio's `--iomem`: "shmhuge" (huge pages) or "malloc" (its default).
    #[serde(default)]
    pub iomem: String,
    pub iops: f64,
    pub mb_per_sec: f64,
    pub mean_latency_us: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Integrity {
    pub verified: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbBenchFigures {
    /// The threads' summed elapsed time per operation.
    pub micros_per_op: f64,
    /// Key and value bytes per second, for benchmarks that move data.
    pub mb_per_sec: Option<f64>,
    /// db_bench's message, e.g. `(632 of 1000 found)`.
    pub message: String,
    /// Reads, found keys, writes and bytes over all measured threads.
    pub totals: BTreeMap<String, u64>,
}

/// One operation type: YCSB's `Return=` counts and latency histograms.
/// Only successful operations are in `latency` (both drivers); failed ones
/// are counted in `returns` and timed apart in `failed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpStats {
    /// `OK`, `NOT_FOUND`, `ERROR`, `UNEXPECTED_STATE` -> count.
    pub returns: BTreeMap<String, u64>,
    /// The engine's words for the first failure.
    pub first_error: Option<String>,
    /// Successful operations, from their actual start.
    pub latency: Latency,
    pub failed: Option<Latency>,
    /// From the intended start (with a target rate).
    pub intended: Option<Latency>,
    pub intended_failed: Option<Latency>,
}

impl OpStats {
    pub fn of(group: &OpGroup) -> Self {
        let optional = |h: &hdrhistogram::Histogram<u64>| (!h.is_empty()).then(|| Latency::of(h));
        Self {
            returns: Outcome::ALL
                .iter()
                .map(|o| (o.ycsb_name().to_string(), group.count(*o)))
                .filter(|(name, n)| *n > 0 || name == "OK" || name == "ERROR")
                .collect(),
            first_error: group.first_error.clone(),
            latency: Latency::of(&group.ok),
            failed: optional(&group.failed),
            intended: optional(&group.intended),
            intended_failed: optional(&group.intended_failed),
        }
    }

    pub fn count(&self, outcome: Outcome) -> u64 {
        self.returns.get(outcome.ycsb_name()).copied().unwrap_or(0)
    }

    /// Operations that did not succeed (not found included, as YCSB counts).
    pub fn unsuccessful(&self) -> u64 {
        self.returns
            .iter()
            .filter(|(name, _)| name.as_str() != "OK")
            .map(|(_, n)| n)
            .sum()
    }
}

/// Latency figures in microseconds and the histogram they come from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub avg_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    /// Of the percentiles above, those from too few operations to mean
    /// much ("p99.9" under 1,000): by nearest rank, their maximum
    /// (`measure::few_samples`). Absent when none is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub too_few_for: Vec<String>,
    /// Nanoseconds.
    pub histogram: Hdr,
}

impl Latency {
    /// From a histogram in nanoseconds.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let us = |ns: f64| ns / 1000.0;
        let at = |q: f64| {
            if h.is_empty() {
                0.0
            } else {
                us(h.value_at_quantile(q) as f64)
            }
        };
        Self {
            count: h.len(),
            avg_us: if h.is_empty() { 0.0 } else { us(h.mean()) },
            min_us: if h.is_empty() {
                0.0
            } else {
                us(h.min() as f64)
            },
            max_us: if h.is_empty() {
                0.0
            } else {
                us(h.max() as f64)
            },
            p50_us: at(0.50),
            p95_us: at(0.95),
            p99_us: at(0.99),
            p999_us: at(0.999),
            p9999_us: at(0.9999),
            too_few_for: crate::measure::few_samples::too_few_for(
                h.len(),
                &[0.50, 0.95, 0.99, 0.999, 0.9999],
            ),
            histogram: Hdr::of(h),
        }
    }
}

/// Per-type figures of `h`, for a [`Measurement`].
pub fn op_stats(h: &OpHistograms) -> BTreeMap<OpKind, OpStats> {
    h.iter()
        .filter(|(_, g)| g.total_returns() > 0)
        .map(|(kind, group)| (kind, OpStats::of(group)))
        .collect()
}

impl StepOutput {
    /// An output with nothing measured yet, started now.
    pub fn begin(command: &str) -> Self {
        Self {
            kvperf_step: STEP_FORMAT,
            kvperf: Provenance::current(),
            command: command.to_string(),
            started_at_unix_ms: crate::clock::unix_ms(),
            finished_at_unix_ms: 0,
            engine: EngineInfo::default(),
            host: HostInfo::default(),
            seed: 0,
            settings: BTreeMap::new(),
            defaults: BTreeMap::new(),
            measurements: Vec::new(),
            warnings: Vec::new(),
            error: None,
            steady: None,
            shard: None,
            merged: None,
        }
    }

    /// The measured part of a step: a YCSB phase, or the last db_bench
    /// benchmark (a plan's run step measures one after `waitforcompaction`).
    pub fn measured(&self) -> Option<&Measurement> {
        self.measurements.last()
    }

    /// Reads a step's output, refusing another format version by name.
    pub fn from_json(text: &str) -> Result<Self, InputError> {
        #[derive(Deserialize)]
        struct Version {
            kvperf_step: Option<u32>,
        }
        let version: Version = serde_json::from_str(text)
            .map_err(|e| InputError::Invalid(format!("not a kvperf step output ({e})")))?;
        match version.kvperf_step {
            Some(STEP_FORMAT) => serde_json::from_str(text).map_err(|e| {
                InputError::Invalid(format!("kvperf step output does not parse ({e})"))
            }),
            Some(other) => Err(InputError::Invalid(format!(
                "kvperf step output format {other}; this kvperf reads format {STEP_FORMAT}"
            ))),
            None => Err(InputError::Invalid(format!(
                "not a kvperf step output (no kvperf_step version; written by kvperf 0.1 before format {STEP_FORMAT}?)"
            ))),
        }
    }
}

/// [`StepOutput::seed`] as text, read from text or a number.
mod seed_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(seed: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(seed)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Seed {
            Number(u64),
            Text(String),
        }
        match Seed::deserialize(d)? {
            Seed::Number(n) => Ok(n),
            Seed::Text(t) => t
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("seed '{t}' is not a whole number"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_of_a_window_has_its_throughput_and_none_without_length() {
        let w = WindowBounds {
            start_unix_ms: 1_000,
            end_unix_ms: 3_000,
            runtime_s: 2.0,
            operations: 10,
        };
        let m = Measurement::of_window("run", w);
        assert_eq!(
            (m.name.as_str(), m.operations, m.ops_per_sec),
            ("run", 10, 5.0)
        );
        assert_eq!(
            (m.start_unix_ms, m.end_unix_ms, m.runtime_s),
            (1_000, 3_000, 2.0)
        );
        let empty = WindowBounds {
            runtime_s: 0.0,
            ..w
        };
        assert_eq!(Measurement::of_window("run", empty).ops_per_sec, 0.0);
    }
    use crate::measure::OpError;

    #[test]
    fn clients_as_tasks_from_before_pinning_read_as_not_pinned() {
        let old: Clients = serde_json::from_str(r#"{"kind":"tasks","runtime_threads":2}"#).unwrap();
        assert_eq!(
            old,
            Clients::Tasks {
                runtime_threads: 2,
                pinned: false
            }
        );
        let pinned = Clients::Tasks {
            runtime_threads: 2,
            pinned: true,
        };
        let text = serde_json::to_string(&pinned).unwrap();
        assert_eq!(serde_json::from_str::<Clients>(&text).unwrap(), pinned);
    }

    #[test]
    fn the_seed_is_written_as_text_and_read_from_text_or_a_number() {
        let mut out = StepOutput::begin("run");
        out.seed = u64::MAX;
        let json = serde_json::to_string(&out).unwrap();
        assert!(json.contains(r#""seed":"18446744073709551615""#), "{json}");
        let back: StepOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back.seed, u64::MAX);
        let old = json.replace(
            r#""seed":"18446744073709551615""#,
            r#""seed":9007199254740993"#,
        );
        let back: StepOutput = serde_json::from_str(&old).unwrap();
        assert_eq!(back.seed, 9_007_199_254_740_993);
        let bad = json.replace(r#""seed":"18446744073709551615""#, r#""seed":"lucky""#);
        let err = serde_json::from_str::<StepOutput>(&bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("seed 'lucky' is not a whole number"), "{err}");
    }

    #[test]
    fn op_stats_keep_failures_apart_from_latency() {
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 2_000, None, &Ok(()));
        h.record(
            OpKind::Read,
            9_000_000,
            None,
            &Err(OpError::Failed("io".into())),
        );
        h.record(OpKind::Read, 3_000, None, &Err(OpError::NotFound));
        let stats = op_stats(&h);
        let read = &stats[&OpKind::Read];
        assert_eq!(read.latency.count, 1);
        assert!(
            read.latency.max_us < 3.0,
            "failed ops are not in the latency"
        );
        assert_eq!(read.failed.as_ref().map(|l| l.count), Some(2));
        assert_eq!(read.count(Outcome::Error), 1);
        assert_eq!(read.count(Outcome::NotFound), 1);
        assert_eq!(read.unsuccessful(), 2);
        assert_eq!(read.first_error.as_deref(), Some("io"));
    }

    #[test]
    fn another_format_is_refused_by_name() {
        let err = StepOutput::from_json(r#"{"kvperf_step": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("format 1") && err.contains("format 2"),
            "{err}"
        );
        let err = StepOutput::from_json(r#"{"overall": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no kvperf_step version"), "{err}");
    }
}
