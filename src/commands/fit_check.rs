//! `kvperf fit TRACE --check`: the trace replayed, then the fitted
//! workload loaded and run, on the same engine and store, and their
//! figures side by side (throughput, p50/p95/p99 per operation kind and,
//! on RocksDB, the block cache's hit ratio), so a user sees how far the
//! synthetic workload is from theirs.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::hdr_logs::HdrLogs;
use super::replay::{self, ReplayArgs};
use super::ycsb::{self, YcsbArgs};
use crate::error::InputError;
use crate::measure::OpKind;
use crate::output::Format;
use crate::properties::Properties;
use crate::results::step::{Measurement, OpStats, StepOutput};
use crate::trace::capture;
use crate::workload::fit::Fit;
use crate::workload::ycsb::Phase;

/// Where and how both sides run.
pub struct CheckOn {
    pub trace: PathBuf,
    pub engine: String,
    pub db: Option<PathBuf>,
    pub threads: Option<usize>,
    pub properties: Vec<String>,
}

/// Refuses, before anything is measured, what the check's three steps (the
/// replay, the fitted load and run, one set of properties) cannot do
/// right: a file a `-p` names, which each step would write over the one
/// before (pass 16: the replay's trace replaced by the fitted run's), and
/// an `--output` inside the store the check empties.
pub fn check_outputs(on: &CheckOn, output: Option<&Path>) -> Result<(), InputError> {
    let mut props = Properties::new();
    for assignment in &on.properties {
        props.set_override(assignment)?;
    }
    let mut named: Vec<&str> = Vec::new();
    if props.get(capture::PROPERTY).is_some_and(|p| !p.is_empty()) {
        named.push(capture::PROPERTY);
    }
    if HdrLogs::from_properties(&props, &[])?.is_some() {
        named.push("hdrhistogram.output.path");
    }
    if let Ok(spec) = crate::engine::find(&on.engine) {
        named.extend(spec.files_written(&props).into_iter().map(|(what, _)| what));
    }
    if let Some(what) = named.first() {
        return Err(InputError::Invalid(format!(
            "fit --check runs three steps (the replay, the fitted load and the fitted run) with one set of properties: each would write {what}'s file over the one before; capture it with kvperf replay or kvperf run instead"
        )));
    }
    match output {
        Some(output) => crate::step::outputs_outside_store(
            &on.engine,
            on.db.as_deref(),
            ycsb::DEFAULT_DB,
            &[("--output", output)],
        ),
        None => Ok(()),
    }
}

/// Replays the trace, runs the fitted workload, and returns the table.
pub fn check(on: &CheckOn, fit: &Fit) -> anyhow::Result<String> {
    let spec = crate::engine::find(&on.engine)?;
    let mut properties = on.properties.clone();
    // The block-cache hit ratio needs the engine's statistics (RocksDB's
    // tickers, `<engine>.statistics`); both sides pay for them.
    let statistics = spec.options.iter().any(|o| o.name == "statistics");
    let asked = format!("{}.statistics=", spec.name);
    if statistics && !properties.iter().any(|p| p.starts_with(&asked)) {
        properties.push(format!("{asked}true"));
    }
    // The fitted file's properties first, so the user's -p win; the
    // fitted side runs closed loop like the replay.
    let mut fitted_properties: Vec<String> = workload_properties(&fit.workload_file("the check"))
        .into_iter()
        .filter(|p| !p.starts_with("target="))
        .collect();
    fitted_properties.extend(properties.iter().cloned());
    let ycsb_args = |fresh: bool| YcsbArgs {
        workload_files: Vec::new(),
        properties: fitted_properties.clone(),
        threads: on.threads.map(|n| n as u64),
        target: None,
        status: false,
        label: String::new(),
        engine: on.engine.clone(),
        db: on.db.clone(),
        fresh,
        format: Format::Text,
        output: None,
        no_progress: true,
        shard: Some("0/1".into()),
        metrics_addr: None,
    };
    let replay_args = ReplayArgs {
        trace: on.trace.clone(),
        engine: on.engine.clone(),
        db: on.db.clone(),
        existing: false,
        threads: on.threads,
        speed: None,
        properties: properties.clone(),
        format: Format::Text,
        output: None,
        settle_after_load: true,
    };
    // Every bad -p is found before the replay measures: it was found by
    // the fitted side's load, after the whole trace was replayed.
    ycsb::check_step(&ycsb_args(true), Phase::Load)?;
    ycsb::check_step(&ycsb_args(false), Phase::Run)?;
    let (replayed, finished) = replay::measured_step(&replay_args, None);
    finished.map_err(|e| kept(e, &[&replayed]))?;
    eprintln!(
        "kvperf: loading {} records and running the fitted workload on {}",
        fit.records, spec.name
    );
    // An interrupt or a stall the fitted side cannot return from (before
    // its window) ends the process: the replay is kept first.
    let keeper = super::stall_keeper();
    let replay_json = serde_json::to_vec_pretty(&[&replayed]).unwrap_or_default();
    keeper.keep_first(move |_, _| eprintln!("kvperf: {}", keep_measured(&replay_json)));
    let (_, loaded) = ycsb::measured_step(&ycsb_args(true), Phase::Load, None, keeper.clone());
    loaded.map_err(|e| kept(e, &[&replayed]))?;
    let (ran, finished) = ycsb::measured_step(&ycsb_args(false), Phase::Run, None, keeper);
    finished.map_err(|e| kept(e, &[&replayed, &ran]))?;
    let (Some(r), Some(f)) = (replayed.measurements.last(), ran.measurements.last()) else {
        anyhow::bail!("internal: the check measured no window");
    };
    Ok(table(spec.name, r, f, statistics))
}

/// `e`, with what the check measured before it (`measured`, as JSON) kept
/// in a `kvperf-unsaved-*` file named in its words: the check writes no
/// file of its own, and an interrupt or a stall lost a whole replay
/// (pass 14).
fn kept(e: anyhow::Error, measured: &[&StepOutput]) -> anyhow::Error {
    if measured.iter().all(|m| m.measurements.is_empty()) {
        return e;
    }
    let json = serde_json::to_vec_pretty(measured).unwrap_or_default();
    e.context(keep_measured(&json))
}

/// Keeps `json` in a `kvperf-unsaved-*` file; the words that say where.
fn keep_measured(json: &[u8]) -> String {
    match crate::files::keep_unsaved(json, None, "json") {
        Ok(path) => format!("what the check measured is kept in '{}'", path.display()),
        Err(lost) => format!("what the check measured could not be kept ({lost})"),
    }
}

/// The `key=value` lines of a workload file.
fn workload_properties(file: &str) -> Vec<String> {
    file.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && l.contains('='))
        .map(str::to_string)
        .collect()
}

/// One row: a name, the replay's and the fitted run's figure (None when
/// that side has none), and how the difference is shown.
struct Row {
    name: String,
    replay: Option<f64>,
    fitted: Option<f64>,
    diff: Diff,
    decimals: usize,
}

#[derive(Clone, Copy)]
enum Diff {
    /// fitted - replay, as a share of the replay's.
    Relative,
    /// fitted - replay.
    Absolute,
}

/// The side-by-side table of a replay's and a fitted run's measurements.
pub fn table(engine: &str, replay: &Measurement, fitted: &Measurement, hit_ratio: bool) -> String {
    let mut rows = vec![Row {
        name: "throughput (ops/s)".into(),
        replay: Some(replay.ops_per_sec),
        fitted: Some(fitted.ops_per_sec),
        diff: Diff::Relative,
        decimals: 1,
    }];
    let mut kinds: Vec<_> = replay
        .ops
        .keys()
        .chain(fitted.ops.keys())
        .copied()
        .collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let (r, f) = (ran(replay, kind), ran(fitted, kind));
        if r.is_none() && f.is_none() {
            continue;
        }
        let name = kind.ycsb_name();
        rows.push(Row {
            name: format!("{name} operations"),
            replay: r.map(|s| s.returns.values().sum::<u64>() as f64),
            fitted: f.map(|s| s.returns.values().sum::<u64>() as f64),
            diff: Diff::Absolute,
            decimals: 0,
        });
        type Pick = fn(&crate::results::step::Latency) -> f64;
        let percentiles: [(&str, Pick); 3] = [
            ("p50", |l| l.p50_us),
            ("p95", |l| l.p95_us),
            ("p99", |l| l.p99_us),
        ];
        for (label, pick) in percentiles {
            rows.push(Row {
                name: format!("{name} {label} (us)"),
                replay: r.map(|s| pick(&s.latency)),
                fitted: f.map(|s| pick(&s.latency)),
                diff: Diff::Relative,
                decimals: 1,
            });
        }
    }
    if hit_ratio {
        rows.push(Row {
            name: "block cache hit ratio (window)".into(),
            replay: block_cache_hit_ratio(replay),
            fitted: block_cache_hit_ratio(fitted),
            diff: Diff::Absolute,
            decimals: 3,
        });
    }
    render(engine, replay, &rows)
}

/// The figures of `kind` in `m`, if any ran.
fn ran(m: &Measurement, kind: OpKind) -> Option<&OpStats> {
    m.ops
        .get(&kind)
        .filter(|s| s.returns.values().sum::<u64>() > 0)
}

fn render(engine: &str, replay: &Measurement, rows: &[Row]) -> String {
    let mut s = format!(
        "The trace replayed and the fitted workload run on {engine}, {} client(s) each, closed loop:\n",
        replay.threads
    );
    let _ = writeln!(
        s,
        "{:<32} {:>12} {:>12} {:>12}",
        "figure", "replay", "fitted", "difference"
    );
    for row in rows {
        let shown = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.*}", row.decimals));
        let diff = match (row.replay, row.fitted, row.diff) {
            (Some(r), Some(f), Diff::Absolute) => format!("{:+.*}", row.decimals, f - r),
            (Some(r), Some(f), Diff::Relative) if r > 0.0 => {
                format!("{:+.1}%", (f - r) / r * 100.0)
            }
            _ => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "{:<32} {:>12} {:>12} {:>12}",
            row.name,
            shown(row.replay),
            shown(row.fitted),
            diff
        );
    }
    s
}

/// Block-cache hits over lookups in the measured window (RocksDB's
/// tickers, `rocksdb.statistics`, read just before and just after it), so
/// neither the replay's preload nor the fitted run's open counts.
fn block_cache_hit_ratio(m: &Measurement) -> Option<f64> {
    let in_window = |name: &str| -> Option<f64> {
        let after = *m.engine_stats.get(name)?;
        let before = m.engine_stats_before.get(name).copied().unwrap_or(0);
        Some(after.saturating_sub(before) as f64)
    };
    let (hit, miss) = (
        in_window("block-cache-hit")?,
        in_window("block-cache-miss")?,
    );
    (hit + miss > 0.0).then(|| hit / (hit + miss))
}
