//! Results files -> the figures a comparison prints: per series (a config,
//! or a config of one file among several), per workload and thread count,
//! every repeat; the device's corners and preconditioning; and the briefs'
//! comparison arithmetic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::measure::accounting::Accounting;
use crate::measure::hdr;
pub use crate::measure::latency_start::LatencyStart;
use crate::measure::spikes::EventSpan;
use crate::measure::stats::{self, RepeatComparison};
use crate::measure::steady::{Steadiness, SteadyCriterion};
use crate::measure::timeline::Timeline;
use crate::measure::{OpKind, Outcome};
use crate::results::merge::MergeInfo;
use crate::results::step::{Latency, Measurement};
use crate::results::{self, Record};

/// One (series, workload, threads) cell and its repeats.
#[derive(Debug, Clone)]
pub struct Point {
    pub threads: u64,
    pub repeats: u32,
    /// Every repeat's measured window, in order.
    pub windows: Vec<Window>,
    /// The mean over repeats (the briefs average passes).
    pub ops_per_sec: f64,
    /// Every repeat's ops/s, in order.
    pub ops_each: Vec<f64>,
    /// Latency of every operation type, from the repeats' histograms
    /// added together (never averaged percentiles).
    pub latency: BTreeMap<OpKind, Latency>,
    /// What `latency`, the primary operation's figures and `tails_each`
    /// are timed from: the intended start only where every cell of the
    /// workload, in every series, was paced and recorded it (so a table
    /// or a comparison never sets one kind against the other).
    pub latency_start: LatencyStart,
    /// Every repeat ran paced (a target rate) and recorded latency from
    /// the intended start too, whichever kind `latency` shows.
    pub paced: bool,
    /// Every repeat ran at a target rate: the mean of their targets
    /// (ops/s). Its throughput is then that pace, not what the engine can
    /// do (report::pacing marks it).
    pub pace: Option<f64>,
    /// When `latency` is from the intended start: the same operations'
    /// latency from their actual start (their service time), shown beside
    /// it; empty otherwise.
    pub latency_actual: BTreeMap<OpKind, Latency>,
    /// Latency of the workload's primary operation (read where it has one).
    pub latency_avg_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_p999_us: Option<f64>,
    /// Per operation type, each repeat's own tail (from its own histogram,
    /// from the intended start when `latency` is), in order; a repeat in
    /// which no operation of the type succeeded has none. What a
    /// comparison's interval is computed over.
    pub tails_each: BTreeMap<OpKind, Vec<Tail>>,
    /// The cost of every repeat together (counters added).
    pub accounting: Option<Accounting>,
    /// What bound each repeat (distinct verdicts, in order).
    pub verdicts: Vec<String>,
    /// Operations per second of each repeat's window.
    pub intervals: Vec<Vec<u64>>,
    /// Each repeat's timeline (None in results from before timelines).
    pub timelines: Vec<Option<Timeline>>,
    /// Each repeat's engine events on its window's clock (none in results
    /// from before events, or from an engine that reports none).
    pub events: Vec<Vec<EventSpan>>,
    /// Per operation type, over every repeat: how many there were
    /// (successful or not) and how many did not succeed (YCSB's ERROR,
    /// NOT_FOUND, UNEXPECTED_STATE), with the engine's first words for one.
    pub attempts: BTreeMap<OpKind, Attempts>,
    /// Mean over repeats of the successful operations per second.
    pub ok_ops_per_sec: f64,
    /// Errors that stopped a repeat early ("interrupted", "data integrity
    /// check failed"): what it measured is here, but it is not a normal step.
    pub step_errors: Vec<String>,
    /// Warnings the steps recorded (distinct, in order).
    pub warnings: Vec<String>,
    /// Each repeat's shards and where they ran, when the step ran as
    /// several clients merged into one record (None for one client).
    pub shards: Vec<Option<MergeInfo>>,
}

/// One repeat's measured window: how long, how many operations, and what
/// ended it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub seconds: f64,
    pub operations: u64,
    /// A time limit ended it (`maxexecutiontime`, `--duration`), not the
    /// operation count.
    pub ended_on_time: bool,
}

/// The one definition of a window too short to judge, shared with the
/// step's warning.
pub use crate::measure::window_warnings::MIN_WINDOW_S;

impl Point {
    /// Whether any repeat's window is too short to mean much.
    pub fn short_window(&self) -> bool {
        self.windows.iter().any(|w| w.seconds < MIN_WINDOW_S)
    }
}

/// One repeat's tail latency of one operation type, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tail {
    pub p99_us: f64,
    pub p999_us: f64,
}

/// Which percentile of the repeats a comparison takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percentile {
    P99,
    P999,
}

impl Percentile {
    pub fn name(self) -> &'static str {
        match self {
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }

    /// 0.99 or 0.999.
    pub fn fraction(self) -> f64 {
        match self {
            Percentile::P99 => 0.99,
            Percentile::P999 => 0.999,
        }
    }

    fn of(self, t: &Tail) -> f64 {
        match self {
            Percentile::P99 => t.p99_us,
            Percentile::P999 => t.p999_us,
        }
    }
}

/// One operation type's operations in a cell, over every repeat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attempts {
    pub total: u64,
    /// Return code (`ERROR`, `NOT_FOUND`, ...) -> count, failures only.
    pub failed: BTreeMap<String, u64>,
    pub first_error: Option<String>,
}

impl Attempts {
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }
}

impl Point {
    pub fn min(&self) -> f64 {
        self.ops_each.iter().copied().fold(f64::INFINITY, f64::min)
    }

    pub fn max(&self) -> f64 {
        self.ops_each.iter().copied().fold(0.0, f64::max)
    }

    pub fn median(&self) -> f64 {
        let mut v = self.ops_each.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    /// (max - min) / mean, in %: how far the repeats disagree.
    pub fn spread_pct(&self) -> f64 {
        if self.ops_per_sec <= 0.0 {
            return 0.0;
        }
        (self.max() - self.min()) / self.ops_per_sec * 100.0
    }

    /// Operations that did not succeed, every type and repeat together.
    pub fn failed(&self) -> u64 {
        self.attempts.values().map(Attempts::failed_total).sum()
    }

    /// Every operation, successful or not, of every repeat.
    pub fn operations(&self) -> u64 {
        self.attempts.values().map(|a| a.total).sum()
    }

    /// Whether a reader must look twice: failed operations or a step error.
    pub fn has_failures(&self) -> bool {
        self.failed() > 0 || !self.step_errors.is_empty()
    }

    /// With three or more repeats: did they settle (SNIA's criterion over
    /// the repeats as rounds, the window shortened to the repeats)?
    pub fn steadiness(&self) -> Option<Steadiness> {
        (self.ops_each.len() >= 3).then(|| {
            SteadyCriterion {
                window: self.ops_each.len().min(5),
                ..SteadyCriterion::default()
            }
            .check(&self.ops_each)
        })
    }
}

/// One workload across series: the unit of a brief's table.
#[derive(Debug, Clone)]
pub struct WorkloadView {
    /// Display name: "Workload A", "readrandom 16KB", "load".
    pub name: String,
    /// The operation whose latency the summary shows (read, else the most
    /// frequent: insert for a load).
    pub latency_op: Option<OpKind>,
    /// Every operation type the workload has.
    pub ops: Vec<OpKind>,
    /// series index -> points by thread count.
    pub points: Vec<BTreeMap<u64, Point>>,
    /// What every point's latency is timed from (one kind per workload).
    pub latency_start: LatencyStart,
}

impl WorkloadView {
    /// Some cells ran paced but their latency is shown from the actual
    /// start, as the unpaced cells beside them have it: like for like.
    pub fn paced_shown_from_actual(&self) -> bool {
        self.latency_start == LatencyStart::Actual
            && self.points.iter().flat_map(|p| p.values()).any(|p| p.paced)
    }
}

/// The device measurements of a series: its corners and preconditioning.
#[derive(Debug, Clone, Default)]
pub struct DeviceView {
    pub corners: Vec<Measurement>,
    pub precondition: Vec<Measurement>,
    pub steady: Option<Steadiness>,
}

#[derive(Debug, Clone)]
pub struct Study {
    pub title: String,
    pub series: Vec<String>,
    /// Host facts per series (CPU, kernel, filesystem and device).
    pub hosts: Vec<String>,
    /// Where the figures come from: plan file, fingerprint, kvperf build,
    /// number of steps and when they ran.
    pub provenance: String,
    /// How big the study was (records, data set against memory, windows).
    pub size: Option<String>,
    /// The plan's own words: its description and notes (what of the
    /// brief it does not reproduce), as written.
    pub about: Vec<String>,
    pub workloads: Vec<WorkloadView>,
    /// Per series, when the plan measured the device.
    pub devices: Vec<DeviceView>,
    /// db_bench studies draw bar charts.
    pub db_bench: bool,
    /// Improvements written as ratios (the plan's `[report]`).
    pub ratios: bool,
    /// The brief the plan reproduces (its `[report] brief`), if it names one.
    pub brief: Option<String>,
    /// "How we tested": rows of what, one cell per series.
    pub how_tested: Vec<super::how_tested::Row>,
}

/// Reads `files` into a study. A config name present in several files is
/// shown as `file-stem:config`.
pub fn load(files: &[PathBuf]) -> anyhow::Result<Study> {
    let mut per_file = Vec::new();
    let mut given: Vec<((u64, u64), &PathBuf)> = Vec::new();
    for file in files {
        let records = results::read_records(file)?;
        // One file by two names (`r.jsonl ./r.jsonl`, a hard link) would
        // show each of its steps as two repeats of itself.
        if let Ok(meta) = std::fs::metadata(file) {
            let id = crate::files::identity(&meta);
            if let Some((_, other)) = given.iter().find(|(seen, _)| *seen == id) {
                return Err(crate::error::InputError::Invalid(format!(
                    "results file '{}' is given twice ('{}' and '{}'): its steps would count as repeats of themselves; give each results file once",
                    file.display(),
                    other.display(),
                    file.display()
                ))
                .into());
            }
            given.push((id, file));
        }
        // A step measured twice (a file joined or edited) would count as
        // two repeats of its cell.
        results::check_one_plan_once_each(file, &records)?;
        if records.is_empty() {
            return Err(crate::error::InputError::Invalid(format!(
                "results file '{}' holds no results",
                file.display()
            ))
            .into());
        }
        per_file.push((file, records));
    }
    let mut count_by_config: BTreeMap<String, usize> = BTreeMap::new();
    for (_, records) in &per_file {
        let mut seen: Vec<&str> = records.iter().map(|r| r.step.config.as_str()).collect();
        seen.sort();
        seen.dedup();
        for c in seen {
            *count_by_config.entry(c.to_string()).or_default() += 1;
        }
    }
    let stem_of = |file: &Path| {
        file.file_stem()
            .map_or("results".into(), |s| s.to_string_lossy().into_owned())
    };
    let stems: Vec<String> = per_file.iter().map(|(f, _)| stem_of(f)).collect();
    let mut tagged: Vec<(String, Record)> = Vec::new();
    for (file, records) in per_file {
        // Two files of one name in two directories (`m1/r.jsonl`,
        // `m2/r.jsonl`: one plan on two machines) are told apart by their
        // paths: by their names alone their cells would be one cell, each
        // file's run a repeat of the other's.
        let stem = stem_of(file);
        let stem = if stems.iter().filter(|s| **s == stem).count() > 1 {
            file.display().to_string()
        } else {
            stem
        };
        for r in records {
            let name = if count_by_config[&r.step.config] > 1 {
                format!("{stem}:{}", r.step.config)
            } else {
                r.step.config.clone()
            };
            tagged.push((name, r));
        }
    }
    Ok(from_records(&current(with_corners_measured_apart(tagged))))
}

/// Corners of `kvperf device corners` run on its own, not a plan's step.
fn measured_apart(r: &Record) -> bool {
    r.step.kind == "corners" && r.plan.name == "kvperf corners"
}

/// `kvperf device corners` run on its own (docs/your-ssd.md, step 3) and
/// given beside a study's results: its corners are those of every
/// configuration whose data was on the same device, shown with that
/// configuration's figures rather than as a configuration of their own.
/// Corners of a device no configuration used stay apart.
fn with_corners_measured_apart(tagged: Vec<(String, Record)>) -> Vec<(String, Record)> {
    let apart = measured_apart;
    let device = |r: &Record| {
        r.output
            .host
            .data_dir
            .as_ref()
            .map(|d| match d.device_number.as_str() {
                "" => d.mount_point.clone(),
                number => number.to_string(),
            })
    };
    let mut out = Vec::with_capacity(tagged.len());
    for (name, r) in &tagged {
        if !apart(r) {
            out.push((name.clone(), r.clone()));
            continue;
        }
        let mut on_same_device: Vec<&String> = Vec::new();
        for (other, o) in &tagged {
            if !apart(o)
                && device(o).is_some()
                && device(o) == device(r)
                && !on_same_device.contains(&other)
            {
                on_same_device.push(other);
            }
        }
        if on_same_device.is_empty() {
            out.push((name.clone(), r.clone()));
        }
        for config in on_same_device {
            out.push((config.clone(), r.clone()));
        }
    }
    out
}

/// The records a report shows: a step's failed records give way to a
/// successful one (a rerun retried the step); with none, its last failed
/// record stays, to be marked. Order is kept.
pub fn current(records: Vec<(String, Record)>) -> Vec<(String, Record)> {
    let key = |(name, r): &(String, Record)| (name.clone(), r.step.id.clone());
    let succeeded: std::collections::BTreeSet<(String, String)> = records
        .iter()
        .filter(|(_, r)| r.output.error.is_none())
        .map(key)
        .collect();
    let mut last_failed: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, tagged) in records.iter().enumerate() {
        if tagged.1.output.error.is_some() {
            last_failed.insert(key(tagged), i);
        }
    }
    records
        .into_iter()
        .enumerate()
        .filter(|(i, tagged)| {
            tagged.1.output.error.is_none()
                || (!succeeded.contains(&key(tagged)) && last_failed.get(&key(tagged)) == Some(i))
        })
        .map(|(_, tagged)| tagged)
        .collect()
}

/// Builds a study from records tagged with their series name, in order.
pub fn from_records(records: &[(String, Record)]) -> Study {
    let mut series: Vec<String> = Vec::new();
    let mut hosts: Vec<String> = Vec::new();
    let mut devices: Vec<DeviceView> = Vec::new();
    let mut workload_names: Vec<String> = Vec::new();
    // (series, workload, threads) -> records
    let mut cells: BTreeMap<(usize, usize, u64), Vec<&Record>> = BTreeMap::new();
    let mut db_bench = false;
    // A series' host line comes from its first engine step: a device step
    // before it ran `kvperf device`, not the series' engine.
    let mut host_from_engine: Vec<bool> = Vec::new();
    for (name, r) in records {
        let s = index_of(&mut series, name);
        let device_step = matches!(r.step.kind.as_str(), "corners" | "precondition");
        if hosts.len() < series.len() {
            hosts.push(host_line(r));
            host_from_engine.push(!device_step);
            devices.push(DeviceView::default());
        } else if !device_step && !host_from_engine[s] {
            hosts[s] = host_line(r);
            host_from_engine[s] = true;
        }
        match r.step.kind.as_str() {
            "corners" => devices[s].corners = r.output.measurements.clone(),
            "precondition" => {
                devices[s].precondition = r.output.measurements.clone();
                devices[s].steady = r.output.steady.clone();
            }
            _ => {
                db_bench |= r.output.command == "bench";
                let w = index_of(&mut workload_names, &workload_name(r));
                cells.entry((s, w, r.step.threads)).or_default().push(r);
            }
        }
    }
    let mut workloads: Vec<WorkloadView> = workload_names
        .iter()
        .map(|name| WorkloadView {
            name: name.clone(),
            latency_op: None,
            ops: Vec::new(),
            points: vec![BTreeMap::new(); series.len()],
            latency_start: LatencyStart::Intended,
        })
        .collect();
    // One kind per workload: from the intended start only when every cell
    // of every series has it, else from the actual start, which all have.
    for ((_, w, _), rs) in &cells {
        if !paced(rs) {
            workloads[*w].latency_start = LatencyStart::Actual;
        }
    }
    for ((s, w, threads), rs) in &cells {
        let view = &mut workloads[*w];
        if view.latency_op.is_none() {
            view.latency_op = primary_op(rs[0]);
        }
        let point = average(*threads, rs, view.latency_op, view.latency_start);
        for op in point.latency.keys() {
            if !view.ops.contains(op) && *op != OpKind::Verify {
                view.ops.push(*op);
            }
        }
        view.points[*s].insert(*threads, point);
    }
    for view in &mut workloads {
        view.ops.sort();
    }
    let title = records.first().map_or_else(String::new, |(_, r)| {
        format!("{} (scale {})", r.plan.name, r.plan.scale)
    });
    let about = super::scale::about(records);
    let how_tested = super::how_tested::rows(records, &series);
    Study {
        provenance: provenance(records),
        size: super::scale::sentence(records),
        about,
        title,
        series,
        hosts,
        workloads,
        devices,
        db_bench,
        ratios: records.first().is_some_and(|(_, r)| r.plan.ratios),
        brief: records
            .first()
            .map(|(_, r)| r.plan.brief.trim().to_string())
            .filter(|b| !b.is_empty()),
        how_tested,
    }
}

fn provenance(all: &[(String, Record)]) -> String {
    // Corners measured apart are not the plan's steps (each is also
    // shown once per configuration on their drive): said apart.
    let records: Vec<&(String, Record)> = all.iter().filter(|(_, r)| !measured_apart(r)).collect();
    let apart = match all.len() > records.len() {
        true => ", beside device corners measured apart",
        false => "",
    };
    let Some((_, first)) = records.first() else {
        return String::new();
    };
    let version = &first.output.kvperf.version;
    let commit = &first.output.kvperf.commit;
    let day = |ms: u64| civil_date((ms / 86_400_000) as i64);
    let start = records
        .iter()
        .map(|(_, r)| r.started_at_unix_ms)
        .min()
        .unwrap_or(0);
    let end = records
        .iter()
        .map(|(_, r)| r.finished_at_unix_ms)
        .max()
        .unwrap_or(0);
    let when = match (day(start), day(end)) {
        _ if start == 0 => String::new(),
        (a, b) if a == b => format!(", {a} (UTC)"),
        (a, b) => format!(", {a} to {b} (UTC)"),
    };
    // Single steps' results have no plan fingerprint: nothing is said of it.
    let fingerprint = match first.plan.fingerprint.as_str() {
        "" => String::new(),
        f => format!(" (fingerprint {f})"),
    };
    format!(
        "Plan {}{fingerprint}, {} steps measured by kvperf {version} (commit {commit}){when}{apart}.",
        if first.plan.file.is_empty() {
            first.plan.name.clone()
        } else {
            format!("`{}`", first.plan.file)
        },
        super::numbers::ops(records.len() as f64),
    )
}

/// Days since 1970-01-01 -> "YYYY-MM-DD" (Howard Hinnant's civil_from_days).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn index_of(list: &mut Vec<String>, name: &str) -> usize {
    match list.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            list.push(name.to_string());
            list.len() - 1
        }
    }
}

fn workload_name(r: &Record) -> String {
    let base = match (r.step.kind.as_str(), r.step.workload.len()) {
        ("load", _) if r.step.workload.len() == 1 => "load".to_string(),
        (_, 1) => format!("Workload {}", r.step.workload.to_uppercase()),
        _ => r.step.workload.clone(),
    };
    if r.step.label.is_empty() {
        base
    } else {
        format!("{base} {}", r.step.label)
    }
}

fn primary_op(r: &Record) -> Option<OpKind> {
    let ops = &r.measured()?.ops;
    if ops.contains_key(&OpKind::Read) {
        return Some(OpKind::Read);
    }
    ops.iter()
        .filter(|(op, _)| **op != OpKind::Verify)
        .max_by_key(|(_, s)| s.latency.count)
        .map(|(op, _)| *op)
}

/// Whether every repeat of a cell ran paced and recorded latency from the
/// intended start.
fn paced(rs: &[&Record]) -> bool {
    let measured: Vec<&Measurement> = rs.iter().filter_map(|r| r.measured()).collect();
    !measured.is_empty() && measured.iter().all(|m| paced_with_intended(m))
}

/// Repeats of one cell: throughput is the mean (the briefs average passes);
/// latency comes from the repeats' histograms added together, never from
/// averaged percentiles, timed from `start` where the cell has it (else
/// from the actual start); the cost from their counters added.
fn average(threads: u64, rs: &[&Record], op: Option<OpKind>, start: LatencyStart) -> Point {
    let measured: Vec<&Measurement> = rs.iter().filter_map(|r| r.measured()).collect();
    let ops_each: Vec<f64> = measured.iter().map(|m| m.ops_per_sec).collect();
    let paced = paced(rs);
    let start = match start {
        LatencyStart::Intended if paced => LatencyStart::Intended,
        _ => LatencyStart::Actual,
    };
    let intended = start == LatencyStart::Intended;
    let latency = merged_latency(&measured, intended);
    let latency_actual = match intended {
        true => merged_latency(&measured, false),
        false => BTreeMap::new(),
    };
    let primary = op.and_then(|op| latency.get(&op));
    let accountings: Vec<Accounting> = rs
        .iter()
        .filter_map(|r| {
            let mut a = r.measured()?.accounting.clone()?;
            // Results from before the flag: the host says where the data was.
            a.memory_filesystem |= r.output.host.data_dir_in_memory();
            Some(a)
        })
        .collect();
    let mut verdicts: Vec<String> = Vec::new();
    for v in measured.iter().filter_map(|m| m.verdict.as_ref()) {
        push_distinct(&mut verdicts, &v.line());
    }
    let mut step_errors = Vec::new();
    let mut warnings = Vec::new();
    for r in rs {
        if let Some(e) = &r.output.error {
            push_distinct(&mut step_errors, &e.message);
        }
        for w in &r.output.warnings {
            push_distinct(&mut warnings, w);
        }
    }
    let ok_each: Vec<f64> = measured.iter().map(|m| m.ok_ops_per_sec()).collect();
    Point {
        threads,
        repeats: rs.len() as u32,
        ops_per_sec: ops_each.iter().sum::<f64>() / ops_each.len().max(1) as f64,
        latency_avg_us: primary.map(|l| l.avg_us),
        latency_p99_us: primary.map(|l| l.p99_us),
        latency_p999_us: primary.map(|l| l.p999_us),
        tails_each: tails_each(&measured, intended),
        accounting: if accountings.len() == measured.len() {
            Accounting::combine(&accountings)
        } else {
            None
        },
        verdicts,
        intervals: measured.iter().map(|m| m.intervals.clone()).collect(),
        timelines: measured.iter().map(|m| m.timeline.clone()).collect(),
        events: measured
            .iter()
            .map(|m| {
                m.events
                    .as_ref()
                    .map(|e| e.spans(m.start_unix_ms))
                    .unwrap_or_default()
            })
            .collect(),
        windows: measured
            .iter()
            .map(|m| Window {
                seconds: m.runtime_s,
                operations: m.operations,
                ended_on_time: m.hit_time_limit,
            })
            .collect(),
        ops_each,
        latency,
        latency_actual,
        attempts: attempts(&measured),
        ok_ops_per_sec: ok_each.iter().sum::<f64>() / ok_each.len().max(1) as f64,
        step_errors,
        warnings,
        latency_start: start,
        paced,
        pace: pace(&measured),
        shards: rs.iter().map(|r| r.output.merged.clone()).collect(),
    }
}

fn push_distinct(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|i| i == item) {
        list.push(item.to_string());
    }
}

/// Per operation type, the operations of every repeat and their failures.
fn attempts(measured: &[&Measurement]) -> BTreeMap<OpKind, Attempts> {
    let mut per_op: BTreeMap<OpKind, Attempts> = BTreeMap::new();
    for m in measured {
        for (op, stats) in &m.ops {
            let a = per_op.entry(*op).or_default();
            for (code, n) in &stats.returns {
                a.total += n;
                if code != Outcome::Ok.ycsb_name() && *n > 0 {
                    *a.failed.entry(code.clone()).or_default() += n;
                }
            }
            if a.first_error.is_none() {
                a.first_error.clone_from(&stats.first_error);
            }
        }
    }
    per_op
}

/// Per operation type, each repeat's p99 and p99.9 from its own
/// histogram (from the intended start when `intended`).
fn tails_each(measured: &[&Measurement], intended: bool) -> BTreeMap<OpKind, Vec<Tail>> {
    let mut per_op: BTreeMap<OpKind, Vec<Tail>> = BTreeMap::new();
    for m in measured {
        for (op, stats) in &m.ops {
            let latency = match &stats.intended {
                Some(from_intended) if intended => from_intended,
                _ => &stats.latency,
            };
            let h = latency.histogram.get();
            if h.is_empty() {
                continue;
            }
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            per_op.entry(*op).or_default().push(Tail {
                p99_us: us(0.99),
                p999_us: us(0.999),
            });
        }
    }
    per_op
}

/// The mean target rate of `measured` when every one of them ran paced.
fn pace(measured: &[&Measurement]) -> Option<f64> {
    let targets: Vec<f64> = measured.iter().map(|m| m.target_ops_per_sec).collect();
    (!targets.is_empty() && targets.iter().all(|t| *t > 0.0))
        .then(|| targets.iter().sum::<f64>() / targets.len() as f64)
}

/// A paced measurement that recorded intended-start latency for every
/// operation type that succeeded: its honest latency under the target.
fn paced_with_intended(m: &Measurement) -> bool {
    m.target_ops_per_sec > 0.0
        && m.ops
            .values()
            .all(|s| s.intended.is_some() || s.latency.count == 0)
}

/// Per operation type, the successful operations of every repeat, from
/// their intended start when `intended`.
fn merged_latency(measured: &[&Measurement], intended: bool) -> BTreeMap<OpKind, Latency> {
    let mut per_op: BTreeMap<OpKind, Vec<&hdr::Hdr>> = BTreeMap::new();
    for m in measured {
        for (op, stats) in &m.ops {
            let latency = match &stats.intended {
                Some(from_intended) if intended => from_intended,
                _ => &stats.latency,
            };
            per_op.entry(*op).or_default().push(&latency.histogram);
        }
    }
    per_op
        .into_iter()
        .filter_map(|(op, hs)| Some((op, Latency::of(&hdr::sum(hs.iter().map(|h| h.get()))?))))
        // An op none of whose operations succeeded has no latency to show
        // (zeros would read as instant); its failures are counted apart.
        .filter(|(_, l)| l.count > 0)
        .collect()
}

fn host_line(r: &Record) -> String {
    let h = &r.output.host;
    if h.logical_cores == 0 {
        return String::new();
    }
    let mem_gib = h.memory_bytes as f64 / (1u64 << 30) as f64;
    let mut line = format!(
        "{}, {} cores, {mem_gib:.0} GiB, kernel {}",
        h.cpu_model, h.logical_cores, h.kernel
    );
    if let Some(d) = &h.data_dir {
        let model = d
            .device_model
            .as_ref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default();
        line.push_str(&format!(
            "; data in {} ({} on {}{model})",
            d.path, d.filesystem, d.source
        ));
    }
    let engine = &r.output.engine;
    if !engine.name.is_empty() {
        line.push_str(&format!("; engine {} {}", engine.name, engine.version));
    }
    line
}

/// The briefs' arithmetic, candidate vs baseline, for one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Per thread count present in both: (threads, improvement %).
    pub per_thread: Vec<(u64, f64)>,
    pub peak_candidate: Option<(u64, f64)>,
    pub peak_baseline: Option<(u64, f64)>,
    /// (peak A - peak B) / peak B, in %.
    pub peak_improvement: Option<f64>,
    /// Mean of the per-thread % (how the briefs average across threads).
    pub average_improvement: Option<f64>,
    /// The largest per-thread improvement and its thread count.
    pub max_improvement: Option<(u64, f64)>,
    /// The smallest one: with the largest, the range ("from ... to ...").
    pub min_improvement: Option<(u64, f64)>,
    /// Lower-is-better, per thread: B / A of the primary op's average and p99.
    pub latency_avg_ratios: Vec<(u64, f64)>,
    pub latency_p99_ratios: Vec<(u64, f64)>,
    /// The briefs' average latency comparison: the arithmetic mean of the
    /// per-thread "% lower", (B - A) / B (seed 000's "when averaged across
    /// all #Threads ... 51% lower").
    pub latency_avg_lower_pct: Option<f64>,
    pub latency_p99_lower_pct: Option<f64>,
    /// The largest per-thread p99 "% lower" and its thread count (seeds
    /// 001 and 003's "greatest application responsiveness improvement").
    pub max_p99_improvement: Option<(u64, f64)>,
    /// Seed 004's "advantage": each configuration at its own peak, B / A of
    /// every operation's average latency there.
    pub latency_at_peaks: BTreeMap<OpKind, f64>,
}

/// Higher is better: (a - b) / b in %.
pub fn improvement(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| (a - b) / b * 100.0)
}

/// A latency's "% lower" from the ratio baseline / candidate, as the
/// briefs compute it: (B - A) / B in %.
pub fn lower_pct(ratio: f64) -> f64 {
    (1.0 - 1.0 / ratio) * 100.0
}

/// The arithmetic mean of the per-thread "% lower" (how the briefs average
/// latency across thread counts).
pub fn mean_lower_pct(ratios: &[(u64, f64)]) -> Option<f64> {
    let pcts: Vec<f64> = ratios
        .iter()
        .filter(|r| r.1 > 0.0)
        .map(|r| lower_pct(r.1))
        .collect();
    (!pcts.is_empty()).then(|| pcts.iter().sum::<f64>() / pcts.len() as f64)
}

pub fn peak(points: &BTreeMap<u64, Point>) -> Option<(u64, f64)> {
    points
        .values()
        .filter(|p| p.step_errors.is_empty())
        .map(|p| (p.threads, p.ops_per_sec))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Geometric mean of ratios: the average of "x times" figures, bounded and
/// symmetric (2x better and 2x worse average to 1x).
pub fn geometric_mean(ratios: &[(u64, f64)]) -> Option<f64> {
    let positive: Vec<f64> = ratios.iter().map(|r| r.1).filter(|r| *r > 0.0).collect();
    (!positive.is_empty())
        .then(|| (positive.iter().map(|r| r.ln()).sum::<f64>() / positive.len() as f64).exp())
}

/// Candidate `a` against baseline `b` over their repeats' throughput
/// (the ratio a / b, its interval and verdict); None when either step
/// stopped early.
pub fn throughput_repeats(a: &Point, b: &Point) -> Option<RepeatComparison> {
    if !a.step_errors.is_empty() || !b.step_errors.is_empty() {
        return None;
    }
    stats::compare_repeats(&b.ops_each, &a.ops_each)
}

/// The same for a percentile of `op`'s latency (lower is better).
pub fn tail_repeats(a: &Point, b: &Point, op: OpKind, p: Percentile) -> Option<RepeatComparison> {
    if !a.step_errors.is_empty() || !b.step_errors.is_empty() {
        return None;
    }
    let each = |pt: &Point| -> Vec<f64> {
        pt.tails_each
            .get(&op)
            .map_or_else(Vec::new, |ts| ts.iter().map(|t| p.of(t)).collect())
    };
    stats::compare_repeats(&each(b), &each(a))
}

pub fn compare(a: &BTreeMap<u64, Point>, b: &BTreeMap<u64, Point>) -> Comparison {
    // A step that stopped early measured part of a window: it is shown,
    // marked, and left out of every comparison.
    let both: Vec<(&Point, &Point)> = a
        .iter()
        .filter_map(|(t, pa)| Some((pa, b.get(t)?)))
        .filter(|(pa, pb)| pa.step_errors.is_empty() && pb.step_errors.is_empty())
        .collect();
    let per_thread: Vec<(u64, f64)> = both
        .iter()
        .filter_map(|(pa, pb)| Some((pa.threads, improvement(pa.ops_per_sec, pb.ops_per_sec)?)))
        .collect();
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let ratios = |f: fn(&Point) -> Option<f64>| -> Vec<(u64, f64)> {
        both.iter()
            .filter_map(|(pa, pb)| {
                let (la, lb) = (f(pa)?, f(pb)?);
                (la > 0.0).then(|| (pa.threads, lb / la))
            })
            .collect()
    };
    let (peak_candidate, peak_baseline) = (peak(a), peak(b));
    let latency_avg_ratios = ratios(|p| p.latency_avg_us);
    let latency_p99_ratios = ratios(|p| p.latency_p99_us);
    let mut latency_at_peaks = BTreeMap::new();
    if let (Some((ta, _)), Some((tb, _))) = (peak_candidate, peak_baseline) {
        for (op, la) in &a[&ta].latency {
            if let Some(lb) = b[&tb].latency.get(op) {
                if la.avg_us > 0.0 && *op != OpKind::Verify {
                    latency_at_peaks.insert(*op, lb.avg_us / la.avg_us);
                }
            }
        }
    }
    Comparison {
        peak_improvement: match (peak_candidate, peak_baseline) {
            (Some(pa), Some(pb)) => improvement(pa.1, pb.1),
            _ => None,
        },
        average_improvement: mean(per_thread.iter().map(|(_, v)| *v).collect()),
        max_improvement: per_thread
            .iter()
            .copied()
            .max_by(|x, y| x.1.total_cmp(&y.1)),
        min_improvement: per_thread
            .iter()
            .copied()
            .min_by(|x, y| x.1.total_cmp(&y.1)),
        latency_avg_lower_pct: mean_lower_pct(&latency_avg_ratios),
        latency_p99_lower_pct: mean_lower_pct(&latency_p99_ratios),
        max_p99_improvement: latency_p99_ratios
            .iter()
            .filter(|r| r.1 > 0.0)
            .map(|(t, r)| (*t, lower_pct(*r)))
            .max_by(|x, y| x.1.total_cmp(&y.1)),
        latency_at_peaks,
        latency_avg_ratios,
        latency_p99_ratios,
        per_thread,
        peak_candidate,
        peak_baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::record;

    fn line(config: &str, threads: u64, ops: f64) -> String {
        serde_json::to_string(&record(config, "c", threads, ops, OpKind::Read, &[10_000])).unwrap()
    }

    #[test]
    fn a_series_host_line_names_its_engine_not_a_device_step() {
        let with = |kind: &str, engine: &str| {
            let mut r = record("nvme", "c", 4, 100.0, OpKind::Read, &[10_000]);
            r.step.kind = kind.into();
            r.output.host.logical_cores = 2;
            r.output.engine.name = engine.into();
            ("nvme".to_string(), r)
        };
        let study = from_records(&[with("corners", "io_uring"), with("run", "cassandra")]);
        assert!(
            study.hosts[0].ends_with("; engine cassandra "),
            "{}",
            study.hosts[0]
        );
    }

    #[test]
    fn the_same_config_from_two_machines_is_two_series() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("machine-a.jsonl");
        let b = dir.path().join("machine-b.jsonl");
        std::fs::write(
            &a,
            format!("{}\n{}\n", line("disk", 4, 200.0), line("disk", 8, 300.0)),
        )
        .unwrap();
        std::fs::write(
            &b,
            format!("{}\n{}\n", line("disk", 4, 100.0), line("disk", 8, 200.0)),
        )
        .unwrap();
        let study = load(&[a, b]).unwrap();
        assert_eq!(study.series, ["machine-a:disk", "machine-b:disk"]);
        let w = &study.workloads[0];
        assert_eq!(w.name, "Workload C");
        let c = compare(&w.points[0], &w.points[1]);
        assert_eq!(c.per_thread, vec![(4, 100.0), (8, 50.0)]);
        assert_eq!(c.average_improvement, Some(75.0));
        assert_eq!(c.peak_improvement, Some(50.0));
        assert_eq!(c.min_improvement, Some((8, 50.0)));
        assert_eq!(c.max_improvement, Some((4, 100.0)));
    }

    #[test]
    fn repeat_latency_adds_histograms_instead_of_averaging_percentiles() {
        // Repeat 1: 99 fast reads and one slow; repeat 2: 100 fast reads.
        let mut slow = vec![10_000u64; 99];
        slow.push(9_000_000);
        let fast = vec![10_000u64; 100];
        let records: Vec<Record> = [(1, &slow), (2, &fast)]
            .into_iter()
            .map(|(repeat, values)| {
                let mut r = record("x", "a", 4, 100.0, OpKind::Read, values);
                r.step.repeat = repeat;
                r
            })
            .collect();
        let p = average(
            4,
            &records.iter().collect::<Vec<_>>(),
            Some(OpKind::Read),
            LatencyStart::Actual,
        );
        // 200 reads, one slow: the exact p99.9 is the slow read (9 ms); the
        // mean of the repeats' p99.9s would be about 4.5 ms.
        assert!((p.latency_p99_us.unwrap() - 10.0).abs() < 0.1);
        assert!(
            (p.latency_p999_us.unwrap() - 9000.0).abs() < 10.0,
            "{:?}",
            p.latency_p999_us
        );
        assert_eq!(p.latency[&OpKind::Read].count, 200);
    }

    #[test]
    fn a_paced_cell_shows_latency_from_the_intended_start() {
        // Served in 10 us, but queued behind a stall: 5 ms from the intended start.
        let paced = |target: f64| {
            let mut r = record("x", "c", 4, 100.0, OpKind::Read, &[10_000; 100]);
            let m = &mut r.output.measurements[0];
            m.target_ops_per_sec = target;
            let mut h = crate::measure::new_histogram();
            h.record_n(5_000_000, 100).unwrap();
            m.ops.get_mut(&OpKind::Read).unwrap().intended = Some(Latency::of(&h));
            r
        };
        let r = paced(1000.0);
        let p = average(4, &[&r], Some(OpKind::Read), LatencyStart::Intended);
        assert_eq!((p.latency_start, p.paced), (LatencyStart::Intended, true));
        assert!((p.latency_avg_us.unwrap() - 5000.0).abs() < 10.0, "{p:?}");
        // Asked for the actual start (an unpaced cell beside it): 10 us.
        let p = average(4, &[&r], Some(OpKind::Read), LatencyStart::Actual);
        assert_eq!((p.latency_start, p.paced), (LatencyStart::Actual, true));
        assert!((p.latency_avg_us.unwrap() - 10.0).abs() < 0.1, "{p:?}");
        // Unpaced (measurement.interval=both without a target): the actual start.
        let r = paced(0.0);
        let p = average(4, &[&r], Some(OpKind::Read), LatencyStart::Intended);
        assert_eq!((p.latency_start, p.paced), (LatencyStart::Actual, false));
        assert!((p.latency_avg_us.unwrap() - 10.0).abs() < 0.1, "{p:?}");
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_415), "2025-11-23");
        assert_eq!(civil_date(19_782), "2024-02-29");
    }

    #[test]
    fn repeats_are_averaged_and_their_spread_kept() {
        let rs: Vec<Record> = [100.0, 300.0, 200.0]
            .iter()
            .enumerate()
            .map(|(i, ops)| {
                let mut r = record("x", "c", 4, *ops, OpKind::Read, &[10_000]);
                r.step.repeat = i as u32 + 1;
                r
            })
            .collect();
        let tagged: Vec<(String, Record)> = rs.into_iter().map(|r| ("x".into(), r)).collect();
        let study = from_records(&tagged);
        let p = &study.workloads[0].points[0][&4];
        assert_eq!((p.repeats, p.ops_per_sec), (3, 200.0));
        assert_eq!((p.min(), p.median(), p.max()), (100.0, 200.0, 300.0));
        assert_eq!(p.spread_pct(), 100.0);
        assert!(matches!(p.steadiness(), Some(Steadiness::NotSteady { .. })));
    }

    #[test]
    fn the_geometric_mean_of_ratios_is_bounded_and_symmetric() {
        assert_eq!(geometric_mean(&[(1, 2.0), (2, 0.5)]), Some(1.0));
        assert!((geometric_mean(&[(1, 4.0), (2, 1.0)]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[]), None);
    }

    #[test]
    fn the_briefs_average_latency_is_the_mean_of_percent_lower() {
        // 2x lower at one thread count (50% lower), 2x higher at another
        // (-100%): the briefs' arithmetic mean is 25% higher; the geometric
        // mean of the ratios says the same.
        let ratios = [(4, 2.0), (8, 0.5)];
        assert_eq!(mean_lower_pct(&ratios), Some(-25.0));
        assert_eq!(geometric_mean(&ratios), Some(1.0));
        // Seed 001's footnote 9: (0.24 ms - 0.52 ms) / 0.52 ms = -54%.
        assert!((lower_pct(0.52 / 0.24) - 53.846).abs() < 1e-3);
        assert_eq!(mean_lower_pct(&[]), None);
    }
}
