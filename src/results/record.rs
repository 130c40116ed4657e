//! One line of a results file: which plan and step, the figures a report
//! needs (normalized across YCSB and db_bench), the accounting, and the
//! step's whole kvperf JSON result (histograms, host, engine options).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::accounting::Accounting;

/// Format version of a results line.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub kvperf_results: u32,
    pub plan: PlanId,
    pub step: StepId,
    #[serde(default)]
    pub started_at_unix_ms: u128,
    #[serde(default)]
    pub finished_at_unix_ms: u128,
    /// kvperf version and commit that measured it.
    #[serde(default)]
    pub kvperf: serde_json::Value,
    /// The child command that ran the step (reproduce it by hand).
    #[serde(default)]
    pub command: Vec<String>,
    pub summary: Summary,
    #[serde(default)]
    pub accounting: Option<Accounting>,
    #[serde(default)]
    pub host: serde_json::Value,
    #[serde(default)]
    pub engine: serde_json::Value,
    /// The step's full JSON output (`kvperf run --format json` or
    /// `kvperf bench --json`), base64 HdrHistograms included.
    #[serde(default)]
    pub result: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanId {
    pub name: String,
    pub fingerprint: String,
    pub scale: f64,
    #[serde(default)]
    pub file: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepId {
    pub id: String,
    pub config: String,
    pub kind: String,
    pub workload: String,
    #[serde(default)]
    pub label: String,
    pub threads: u64,
    pub repeat: u32,
    #[serde(default)]
    pub db: String,
}

/// Figures every report reads, whatever the driver.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub operations: u64,
    pub runtime_s: f64,
    pub ops_per_sec: f64,
    /// Lower-case operation type (read, update, insert, scan,
    /// read-modify-write, write, seek, delete) -> successful-op latency.
    pub latency_us: BTreeMap<String, LatencySummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub avg: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencySummary {
    /// From a histogram in nanoseconds.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let us = |ns: f64| ns / 1000.0;
        Self {
            count: h.len(),
            avg: us(h.mean()),
            p50: us(h.value_at_quantile(0.50) as f64),
            p99: us(h.value_at_quantile(0.99) as f64),
            p999: us(h.value_at_quantile(0.999) as f64),
            max: us(h.max() as f64),
        }
    }
}

/// The measured part of a step's JSON output: a YCSB report as a whole,
/// db_bench's last benchmark (a run step's only measured one).
pub fn measured(result: &serde_json::Value) -> Option<&serde_json::Value> {
    match result.get("results") {
        Some(benchmarks) => benchmarks.as_array()?.last(),
        None => (!result.is_null()).then_some(result),
    }
}

/// The successful-operation histograms (base64 HdrHistogram) of a step's
/// JSON output by lower-case operation name: YCSB's `histograms` groups
/// (not `-FAILED` or `Intended-`), db_bench's `latency.<op>.hdr_histogram`.
pub fn op_histograms(result: &serde_json::Value) -> Vec<(String, &str)> {
    if let Some(groups) = result.get("histograms").and_then(|h| h.as_object()) {
        return groups
            .iter()
            .filter(|(g, _)| !g.ends_with("-FAILED") && !g.starts_with("Intended-"))
            .filter_map(|(g, encoded)| Some((g.to_lowercase(), encoded.as_str()?)))
            .collect();
    }
    measured(result)
        .and_then(|m| m.get("latency")?.as_object())
        .map(|ops| {
            ops.iter()
                .filter_map(|(op, l)| Some((op.to_lowercase(), l.get("hdr_histogram")?.as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}
