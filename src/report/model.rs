//! Results files -> the figures a comparison prints: per series (a config,
//! or a config of one file among several), per workload and thread count,
//! the mean over repeats; and the briefs' comparison arithmetic.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::measure::accounting::Accounting;
use crate::output::decode_histogram;
use crate::results::{self, LatencySummary, Record};

/// One (series, workload, threads) cell, averaged over its repeats.
#[derive(Debug, Clone)]
pub struct Point {
    pub threads: u64,
    pub repeats: u32,
    pub ops_per_sec: f64,
    /// Latency of the workload's primary operation (read where it has one).
    pub latency_avg_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_p999_us: Option<f64>,
    /// Of the last repeat (accounting is per step; it is not averaged).
    pub accounting: Option<Accounting>,
}

/// One workload across series: the unit of a brief's table.
#[derive(Debug, Clone)]
pub struct WorkloadView {
    /// Display name: "Workload A", "readrandom 16KB", "load".
    pub name: String,
    /// The operation whose latency is shown ("read", else the first one).
    pub latency_op: String,
    /// series index -> points by thread count.
    pub points: Vec<BTreeMap<u64, Point>>,
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
    pub workloads: Vec<WorkloadView>,
}

/// Reads `files` into a study. A config name present in several files is
/// shown as `file-stem:config`.
pub fn load(files: &[PathBuf]) -> anyhow::Result<Study> {
    let mut per_file = Vec::new();
    for file in files {
        let loaded = results::read(file)?;
        if loaded.records.is_empty() {
            return Err(crate::error::InputError::Invalid(format!(
                "results file '{}' holds no results",
                file.display()
            ))
            .into());
        }
        per_file.push((file, loaded.records));
    }
    let mut count_by_config: BTreeMap<String, usize> = BTreeMap::new();
    for (_, records) in &per_file {
        let mut seen: Vec<&str> = records.iter().map(|r| r.step.config.as_str()).collect();
        seen.dedup();
        seen.sort();
        seen.dedup();
        for c in seen {
            *count_by_config.entry(c.to_string()).or_default() += 1;
        }
    }
    let mut tagged: Vec<(String, Record)> = Vec::new();
    for (file, records) in per_file {
        let stem = file
            .file_stem()
            .map_or("results".into(), |s| s.to_string_lossy().into_owned());
        for r in records {
            let name = if count_by_config[&r.step.config] > 1 {
                format!("{stem}:{}", r.step.config)
            } else {
                r.step.config.clone()
            };
            tagged.push((name, r));
        }
    }
    Ok(from_records(&tagged))
}

/// Builds a study from records tagged with their series name, in order.
pub fn from_records(records: &[(String, Record)]) -> Study {
    let mut series: Vec<String> = Vec::new();
    let mut hosts: Vec<String> = Vec::new();
    let mut workload_names: Vec<String> = Vec::new();
    // (series, workload, threads) -> records
    let mut cells: BTreeMap<(usize, usize, u64), Vec<&Record>> = BTreeMap::new();
    for (name, r) in records {
        if r.step.kind == "precondition" {
            continue;
        }
        let s = index_of(&mut series, name);
        if hosts.len() < series.len() {
            hosts.push(host_line(r));
        }
        let w = index_of(&mut workload_names, &workload_name(r));
        cells.entry((s, w, r.step.threads)).or_default().push(r);
    }
    let mut workloads: Vec<WorkloadView> = workload_names
        .iter()
        .map(|name| WorkloadView {
            name: name.clone(),
            latency_op: String::new(),
            points: vec![BTreeMap::new(); series.len()],
        })
        .collect();
    for ((s, w, threads), rs) in &cells {
        let view = &mut workloads[*w];
        if view.latency_op.is_empty() {
            view.latency_op = primary_op(rs[0]);
        }
        view.points[*s].insert(*threads, average(*threads, rs, &view.latency_op));
    }
    let title = records.first().map_or_else(String::new, |(_, r)| {
        format!("{} (scale {})", r.plan.name, r.plan.scale)
    });
    Study {
        provenance: provenance(records),
        title,
        series,
        hosts,
        workloads,
    }
}

fn provenance(records: &[(String, Record)]) -> String {
    let Some((_, first)) = records.first() else {
        return String::new();
    };
    let text =
        |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let version = text(&first.kvperf, "version").unwrap_or_else(|| "?".into());
    let commit = text(&first.kvperf, "commit").unwrap_or_else(|| "?".into());
    let day = |ms: u128| {
        let days = (ms / 86_400_000) as i64;
        civil_date(days)
    };
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
    format!(
        "Plan {} (fingerprint {}), {} steps measured by kvperf {version} (commit {commit}){when}.",
        if first.plan.file.is_empty() {
            first.plan.name.clone()
        } else {
            format!("`{}`", first.plan.file)
        },
        first.plan.fingerprint,
        records.len(),
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

fn primary_op(r: &Record) -> String {
    let ops = &r.summary.latency_us;
    if ops.contains_key("read") {
        return "read".into();
    }
    ops.iter()
        .max_by_key(|(_, l)| l.count)
        .map_or_else(String::new, |(op, _)| op.clone())
}

/// Repeats of one cell: throughput is the mean (the briefs average passes);
/// latency comes from the repeats' histograms added together, never from
/// averaged percentiles, when every repeat carries its histograms.
fn average(threads: u64, rs: &[&Record], op: &str) -> Point {
    let n = rs.len() as f64;
    let latency = merged_latency(rs, op).or_else(|| {
        // Hand-made or foreign lines without histograms: mean of the summaries.
        let ls: Vec<&LatencySummary> = rs
            .iter()
            .filter_map(|r| r.summary.latency_us.get(op))
            .collect();
        let mean =
            |f: fn(&LatencySummary) -> f64| ls.iter().map(|l| f(l)).sum::<f64>() / ls.len() as f64;
        (!ls.is_empty()).then(|| LatencySummary {
            count: ls.iter().map(|l| l.count).sum(),
            avg: mean(|l| l.avg),
            p50: mean(|l| l.p50),
            p99: mean(|l| l.p99),
            p999: mean(|l| l.p999),
            max: ls.iter().map(|l| l.max).fold(0.0, f64::max),
        })
    });
    Point {
        threads,
        repeats: rs.len() as u32,
        ops_per_sec: rs.iter().map(|r| r.summary.ops_per_sec).sum::<f64>() / n,
        latency_avg_us: latency.as_ref().map(|l| l.avg),
        latency_p99_us: latency.as_ref().map(|l| l.p99),
        latency_p999_us: latency.as_ref().map(|l| l.p999),
        accounting: rs.last().and_then(|r| r.accounting.clone()),
    }
}

fn merged_latency(rs: &[&Record], op: &str) -> Option<LatencySummary> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for r in rs {
        let h = histogram_of(r, op)?;
        match merged.as_mut() {
            Some(m) => m.add(&h).ok()?,
            None => merged = Some(h),
        }
    }
    merged.map(|m| LatencySummary::of(&m))
}

/// The successful-op histogram of `op` in a step's full result.
fn histogram_of(r: &Record, op: &str) -> Option<hdrhistogram::Histogram<u64>> {
    let (_, encoded) = results::op_histograms(&r.result)
        .into_iter()
        .find(|(name, _)| name == op)?;
    decode_histogram(encoded).ok()
}

fn host_line(r: &Record) -> String {
    let h = &r.host;
    if !h.is_object() {
        return String::new();
    }
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_string()
    };
    let cores = h.get("logical_cores").and_then(|x| x.as_u64()).unwrap_or(0);
    let mem_gib =
        h.get("memory_bytes").and_then(|x| x.as_u64()).unwrap_or(0) as f64 / (1u64 << 30) as f64;
    let mut line = format!(
        "{}, {cores} cores, {mem_gib:.0} GiB, kernel {}",
        text(h, "cpu_model"),
        text(h, "kernel")
    );
    if let Some(d) = h.get("data_dir").filter(|d| !d.is_null()) {
        let model = d
            .get("device_model")
            .and_then(|x| x.as_str())
            .map(|m| format!(", {m}"))
            .unwrap_or_default();
        line.push_str(&format!(
            "; data in {} ({} on {}{model})",
            text(d, "path"),
            text(d, "filesystem"),
            text(d, "source")
        ));
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
    /// Lower-is-better: mean over threads of (B - A) / B, in %.
    pub latency_avg_improvement: Option<f64>,
    pub latency_p99_improvement: Option<f64>,
}

/// Higher is better: (a - b) / b in %.
pub fn improvement(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| (a - b) / b * 100.0)
}

/// Lower is better: (b - a) / b in % ("51% lower").
pub fn reduction(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| (b - a) / b * 100.0)
}

pub fn peak(points: &BTreeMap<u64, Point>) -> Option<(u64, f64)> {
    points
        .values()
        .map(|p| (p.threads, p.ops_per_sec))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

pub fn compare(a: &BTreeMap<u64, Point>, b: &BTreeMap<u64, Point>) -> Comparison {
    let both: Vec<(&Point, &Point)> = a
        .iter()
        .filter_map(|(t, pa)| Some((pa, b.get(t)?)))
        .collect();
    let per_thread: Vec<(u64, f64)> = both
        .iter()
        .filter_map(|(pa, pb)| Some((pa.threads, improvement(pa.ops_per_sec, pb.ops_per_sec)?)))
        .collect();
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let latency = |f: fn(&Point) -> Option<f64>| {
        mean(
            both.iter()
                .filter_map(|(pa, pb)| reduction(f(pa)?, f(pb)?))
                .collect(),
        )
    };
    let (peak_candidate, peak_baseline) = (peak(a), peak(b));
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
        latency_avg_improvement: latency(|p| p.latency_avg_us),
        latency_p99_improvement: latency(|p| p.latency_p99_us),
        per_thread,
        peak_candidate,
        peak_baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(config: &str, threads: u64, ops: f64) -> String {
        serde_json::json!({
            "kvperf_results": 1,
            "plan": { "name": "p", "fingerprint": "f", "scale": 1.0 },
            "step": { "id": format!("{config}/{threads}"), "config": config, "kind": "run",
                      "workload": "c", "threads": threads, "repeat": 1 },
            "summary": { "operations": 1, "runtime_s": 1.0, "ops_per_sec": ops, "latency_us": {} },
        })
        .to_string()
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
    }

    #[test]
    fn repeat_latency_adds_histograms_instead_of_averaging_percentiles() {
        use crate::output::encode_histogram;
        let hist = |values: &[u64]| {
            let mut h = crate::measure::new_histogram();
            for &v in values {
                h.record(v).unwrap();
            }
            h
        };
        // Repeat 1: 99 fast reads and one slow; repeat 2: 100 fast reads.
        let mut slow = vec![10_000u64; 99];
        slow.push(9_000_000);
        let fast = vec![10_000u64; 100];
        let mut records = Vec::new();
        for (repeat, values) in [(1, &slow), (2, &fast)] {
            let mut r: Record = serde_json::from_str(&line("x", 4, 100.0)).unwrap();
            r.step.repeat = repeat;
            r.result =
                serde_json::json!({ "histograms": { "READ": encode_histogram(&hist(values)) } });
            records.push(("x".to_string(), r));
        }
        let p = average(
            4,
            &records.iter().map(|(_, r)| r).collect::<Vec<_>>(),
            "read",
        );
        // 200 reads, one slow: the exact p99.9 is the slow read (9 ms); the
        // mean of the repeats' p99.9s would be about 4.5 ms.
        assert!((p.latency_p99_us.unwrap() - 10.0).abs() < 0.1);
        assert!(
            (p.latency_p999_us.unwrap() - 9000.0).abs() < 10.0,
            "{:?}",
            p.latency_p999_us
        );
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_415), "2025-11-23");
        assert_eq!(civil_date(19_782), "2024-02-29");
    }

    #[test]
    fn repeats_are_averaged() {
        let mut r1: Record = serde_json::from_str(&line("x", 4, 100.0)).unwrap();
        let mut r2 = r1.clone();
        r1.step.repeat = 1;
        r2.step.repeat = 2;
        r2.summary.ops_per_sec = 300.0;
        let study = from_records(&[("x".into(), r1), ("x".into(), r2)]);
        let p = &study.workloads[0].points[0][&4];
        assert_eq!((p.repeats, p.ops_per_sec), (2, 200.0));
    }
}
