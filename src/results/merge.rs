//! The shards of one study as one result: what `kvperf merge` and a plan
//! step with `clients = N` produce. The merge is exact where it can be:
//! latency histograms are added per operation type (never averaged
//! percentiles, YCSB issues #433/#455), counts and errors summed, and
//! throughput taken over the union of the shards' measured windows.
//!
//! It refuses, with one line naming the files, shards that do not make up
//! one study exactly once: results of other studies, of another shard
//! count, a shard given twice or missing, slices that overlap or leave
//! records out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::step::{
    Clients, Integrity, Latency, Measurement, OpStats, StepError, StepOutput, WindowBounds,
};
use crate::error::InputError;
use crate::measure::accounting::Accounting;
use crate::measure::events::EngineEvents;
use crate::measure::timeline::{self, Timeline};
use crate::measure::{hdr, verdict};
use crate::shard::{ShardInfo, Slice};

/// Below this share of their union window running together, shards did
/// not measure the same thing at the same time (a straggler, clock skew).
pub const MIN_OVERLAP_PCT: f64 = 90.0;

/// What a merged result is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    /// The study's fingerprint, shared by every shard.
    pub fingerprint: String,
    pub count: u64,
    /// The shards, by index.
    pub shards: Vec<ShardPart>,
    /// Latest minus earliest start, and latest minus earliest end, of the
    /// shards' measured windows.
    pub start_spread_ms: u64,
    pub end_spread_ms: u64,
    /// Share of the union of the windows when every shard was measuring.
    pub overlap_pct: f64,
    /// The machines the shards ran on, in shard order, each once.
    pub hosts: Vec<String>,
}

/// One shard of a merged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    pub index: u64,
    /// Where it was read from (a file, or a plan's client number).
    pub from: String,
    pub hostname: String,
    pub seed: u64,
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    pub operations: u64,
    pub ops_per_sec: f64,
    /// The shard's returns per operation type (`OK`, `NOT_FOUND`...), so
    /// that the merged counts can be checked against their parts; absent
    /// in results from before it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub returns: BTreeMap<crate::measure::OpKind, BTreeMap<String, u64>>,
    /// The Slurm job, step and task it ran as (srun, a job array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<crate::shard::SlurmPlace>,
    /// The pod it ran in (the kubernetes launcher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<crate::shard::KubernetesPlace>,
}

impl ShardPart {
    /// Where the shard ran, in words: its host, and its Slurm task
    /// (`node1 (job 12 step 3 task 0 on node1)`) or its pod.
    pub fn place(&self) -> String {
        match (&self.slurm, &self.kubernetes) {
            (Some(place), _) => format!("{} ({place})", self.hostname),
            (None, Some(place)) => place.to_string(),
            (None, None) => self.hostname.clone(),
        }
    }
}

/// Merges shard results, each named by where it came from. The result
/// carries the first failed shard's error (what the others measured is
/// kept); refusals are [`InputError`]s.
pub fn merge(mut parts: Vec<(String, StepOutput)>) -> Result<StepOutput, InputError> {
    check(&parts)?;
    parts.sort_by_key(|(_, o)| o.shard.as_ref().map(|s| s.index));
    let shards: Vec<&ShardInfo> = parts.iter().filter_map(|(_, o)| o.shard.as_ref()).collect();
    let first = &parts[0].1;
    let mut out = StepOutput {
        started_at_unix_ms: parts
            .iter()
            .map(|(_, o)| o.started_at_unix_ms)
            .min()
            .unwrap_or(0),
        finished_at_unix_ms: parts
            .iter()
            .map(|(_, o)| o.finished_at_unix_ms)
            .max()
            .unwrap_or(0),
        measurements: Vec::new(),
        warnings: Vec::new(),
        error: None,
        shard: None,
        merged: None,
        ..first.clone()
    };
    for (name, o) in &parts {
        let at = shards_label(o);
        if o.kvperf != first.kvperf {
            out.warnings.push(format!(
                "{at} ('{name}') was measured by kvperf {} (commit {}), {} by {} (commit {})",
                o.kvperf.version,
                o.kvperf.commit,
                shards_label(first),
                first.kvperf.version,
                first.kvperf.commit
            ));
        }
        out.warnings
            .extend(o.warnings.iter().map(|w| format!("{at}: {w}")));
        if let (None, Some(e)) = (&out.error, &o.error) {
            out.error = Some(StepError {
                kind: e.kind,
                message: format!("{at}: {}", e.message),
            });
        }
    }
    let phases = parts
        .iter()
        .map(|(_, o)| o.measurements.len())
        .max()
        .unwrap_or(0);
    for k in 0..phases {
        let windows: Vec<(&StepOutput, &Measurement)> = parts
            .iter()
            .filter_map(|(_, o)| o.measurements.get(k).map(|m| (o, m)))
            .collect();
        out.measurements.push(merge_measurements(&windows));
    }
    if let Some(m) = out.measured() {
        let info = merge_info(&parts, &shards, m);
        if info.overlap_pct < MIN_OVERLAP_PCT {
            out.warnings.push(format!(
                "the shards measured together for only {:.0}% of their window (starts spread over {:.3} s, ends over {:.3} s): a straggler or clock skew; throughput is over the union of their windows",
                info.overlap_pct,
                info.start_spread_ms as f64 / 1000.0,
                info.end_spread_ms as f64 / 1000.0
            ));
        }
        out.merged = Some(info);
    }
    Ok(out)
}

fn shards_label(o: &StepOutput) -> String {
    o.shard
        .as_ref()
        .map_or_else(String::new, |s| format!("shard {}", s.shard()))
}

/// Every refusal, in the order a user would fix them.
fn check(parts: &[(String, StepOutput)]) -> Result<(), InputError> {
    let refuse = |message: String| Err(InputError::Invalid(message));
    let Some((first_name, _)) = parts.first() else {
        return refuse("nothing to merge: give the result files of the shards".into());
    };
    let mut shards = Vec::with_capacity(parts.len());
    for (name, o) in parts {
        match (&o.shard, &o.merged) {
            (Some(s), _) => shards.push(s),
            (None, Some(_)) => {
                return refuse(format!(
                    "'{name}' is already a merged result; merge the shards' own results"
                ))
            }
            (None, None) => {
                return refuse(format!(
                    "'{name}' is not a shard's result (run kvperf load|run with --shard I/N --format json)"
                ))
            }
        }
    }
    let first = shards[0];
    for ((name, o), s) in parts.iter().zip(&shards) {
        if s.fingerprint != first.fingerprint {
            return refuse(format!(
                "'{name}' is a shard of another study than '{first_name}' (fingerprint {} vs {}; {}): merge the shards of one study",
                s.fingerprint,
                first.fingerprint,
                differences(&parts[0].1, o)
            ));
        }
        if s.count != first.count {
            return refuse(format!(
                "'{name}' is shard {} but '{first_name}' is shard {}: every shard must be of the same count",
                s.shard(),
                first.shard()
            ));
        }
    }
    let mut by_index: BTreeMap<u64, &str> = BTreeMap::new();
    for ((name, _), s) in parts.iter().zip(&shards) {
        if let Some(other) = by_index.insert(s.index, name) {
            return refuse(format!(
                "shard {} is given twice ('{other}' and '{name}')",
                s.shard()
            ));
        }
    }
    // Counted, and the first few named: a shard's count is any u64 its
    // file says (pass 14: 10^12 made a list of every missing one).
    let missing = first.count - by_index.range(..first.count).count() as u64;
    if missing > 0 {
        let shown = (0..first.count)
            .filter(|i| !by_index.contains_key(i))
            .take(8)
            .map(|i| format!("{i}/{}", first.count))
            .collect::<Vec<_>>()
            .join(", ");
        let more = if missing > 8 { ", ..." } else { "" };
        return refuse(format!(
            "{missing} of {} shards missing ({shown}{more}): merge every shard of the study",
            first.count
        ));
    }
    check_slices(parts, &shards)?;
    check_windows(parts)
}

/// The merge lays the shards' windows on one clock and sizes its
/// timelines by where they fall: windows that open more than
/// [`timeline::MOST_MERGE_SKEW_S`] apart, or intervals placed past what a
/// timeline's intervals cover, are refused before anything is sized by
/// them (pass 14: a start moved by 10^11 ms asked for 2.7 GB).
fn check_windows(parts: &[(String, StepOutput)]) -> Result<(), InputError> {
    let phases = parts.iter().map(|(_, o)| o.measurements.len()).max();
    for k in 0..phases.unwrap_or(0) {
        let windows: Vec<(&str, &Measurement)> = parts
            .iter()
            .filter_map(|(name, o)| o.measurements.get(k).map(|m| (name.as_str(), m)))
            .collect();
        let Some((first, m0)) = windows.iter().min_by_key(|(_, m)| m.start_unix_ms) else {
            continue;
        };
        for (name, m) in &windows {
            let later_s = (m.start_unix_ms - m0.start_unix_ms) as f64 / 1000.0;
            if later_s > timeline::MOST_MERGE_SKEW_S {
                return Err(InputError::Invalid(format!(
                    "'{name}' opened its window {later_s:.0} s after '{first}': shards measured together open within {} s of each other (clock skew, or another run's result)",
                    timeline::MOST_MERGE_SKEW_S
                )));
            }
            if let Some(why) = m.timeline.as_ref().and_then(Timeline::unmergeable) {
                return Err(InputError::Invalid(format!("'{name}': {why}")));
            }
        }
    }
    Ok(())
}

/// What tells two studies apart, for the refusal.
fn differences(a: &StepOutput, b: &StepOutput) -> String {
    if a.command != b.command {
        return format!("a {} and a {}", a.command, b.command);
    }
    if a.engine.name != b.engine.name {
        return format!("engines {} and {}", a.engine.name, b.engine.name);
    }
    let keys: Vec<&str> = a
        .settings
        .keys()
        .chain(b.settings.keys())
        .filter(|k| a.settings.get(*k) != b.settings.get(*k))
        .map(String::as_str)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if keys.is_empty() {
        "their threads or target rate differ".into()
    } else {
        format!("they differ in {}", keys.join(", "))
    }
}

/// The slices must cover what they split exactly once.
fn check_slices(parts: &[(String, StepOutput)], shards: &[&ShardInfo]) -> Result<(), InputError> {
    let what = match parts[0].1.command.as_str() {
        "load" => "records",
        _ => "operations",
    };
    let first = shards[0];
    let mut slices: Vec<(Slice, &ShardInfo, &str)> = Vec::new();
    for ((name, _), s) in parts.iter().zip(shards) {
        if s.of != first.of {
            return Err(InputError::Invalid(format!(
                "'{name}' splits other {what} than '{}' ({} vs {})",
                parts[0].0,
                shown(s.of),
                shown(first.of)
            )));
        }
        match s.slice {
            Some(slice) => slices.push((slice, s, name)),
            None if first.of.is_none() => {}
            None => {
                return Err(InputError::Invalid(format!(
                    "'{name}' (shard {}) has no slice of the {what}",
                    s.shard()
                )))
            }
        }
    }
    let Some(of) = first.of else {
        return Ok(());
    };
    slices.sort_by_key(|(slice, _, _)| (slice.start, slice.count));
    let mut covered = of.start;
    let mut last: Option<(&ShardInfo, &str)> = None;
    for (slice, s, name) in &slices {
        if slice.start < covered {
            let (other, other_name) = last.expect("an earlier slice covers it");
            return Err(InputError::Invalid(format!(
                "slices overlap: {what} {}..{} are in shard {} ('{other_name}') and shard {} ('{name}')",
                slice.start,
                covered.min(slice.end()),
                other.shard(),
                s.shard()
            )));
        }
        if slice.start > covered {
            return Err(gap(what, covered, slice.start));
        }
        covered = slice.end();
        last = Some((s, name));
    }
    if covered < of.end() {
        return Err(gap(what, covered, of.end()));
    }
    Ok(())
}

fn gap(what: &str, from: u64, to: u64) -> InputError {
    InputError::Invalid(format!(
        "slices leave {what} {from}..{to} out: a shard's slice is missing"
    ))
}

fn shown(slice: Option<Slice>) -> String {
    slice.map_or("none".into(), |s| format!("{}..{}", s.start, s.end()))
}

/// A window's bounds in milliseconds: its wall-clock start, and its end
/// from the precise runtime (the end in whole milliseconds is rounded).
fn window(m: &Measurement) -> (f64, f64) {
    let start = m.start_unix_ms as f64;
    (start, start + m.runtime_s * 1000.0)
}

/// Total length of the union of `windows`, in milliseconds.
fn union_ms(windows: &[(f64, f64)]) -> f64 {
    let mut sorted = windows.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (start, end) in sorted {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

/// How the shards' clients ran: tasks on all their runtimes' workers
/// (summed, as the clients are) when every shard ran tasks, pinned when
/// every shard pinned them, else threads.
fn merge_clients(ms: &[&Measurement]) -> Clients {
    let tasks = ms.iter().map(|m| match m.clients {
        Clients::Tasks {
            runtime_threads,
            pinned,
        } => Some((runtime_threads, pinned)),
        Clients::Threads => None,
    });
    tasks
        .collect::<Option<Vec<_>>>()
        .map_or(Clients::Threads, |shards| Clients::Tasks {
            runtime_threads: shards.iter().map(|(workers, _)| workers).sum(),
            pinned: shards.iter().all(|(_, pinned)| *pinned),
        })
}

/// The same phase of every shard as one window.
fn merge_measurements(windows: &[(&StepOutput, &Measurement)]) -> Measurement {
    let ms: Vec<&Measurement> = windows.iter().map(|(_, m)| *m).collect();
    let bounds: Vec<(f64, f64)> = ms.iter().map(|m| window(m)).collect();
    let runtime_s = union_ms(&bounds) / 1000.0;
    let operations: u64 = ms.iter().map(|m| m.operations).sum();
    let timeline = merge_timelines(&ms);
    let last_to_end = ms.iter().max_by_key(|m| m.end_unix_ms).expect("a window");
    let accounting = ms
        .iter()
        .zip(windows)
        .map(|(m, (o, _))| Some((o.host.hostname.clone(), m.accounting.clone()?)))
        .collect::<Option<Vec<_>>>()
        .and_then(|parts| Accounting::concurrent(&parts, runtime_s));
    let one_host = windows
        .iter()
        .all(|(o, _)| o.host.hostname == windows[0].0.host.hostname);
    let bounds = WindowBounds {
        start_unix_ms: ms.iter().map(|m| m.start_unix_ms).min().unwrap_or(0),
        end_unix_ms: ms.iter().map(|m| m.end_unix_ms).max().unwrap_or(0),
        runtime_s,
        operations,
    };
    Measurement {
        threads: ms.iter().map(|m| m.threads).sum(),
        clients: merge_clients(&ms),
        target_ops_per_sec: ms.iter().map(|m| m.target_ops_per_sec).sum(),
        warmup_s: ms.iter().map(|m| m.warmup_s).fold(0.0, f64::max),
        hit_time_limit: ms.iter().any(|m| m.hit_time_limit),
        ops: merge_ops(&ms),
        intervals: match &timeline {
            Some(t) => t.counts(),
            None => merge_intervals(&ms),
        },
        timeline,
        // A verdict weighs a host's CPU and device; over several hosts
        // there is no one machine to judge.
        verdict: accounting
            .as_ref()
            .filter(|_| one_host)
            .map(|a| verdict::judge(a, None)),
        accounting,
        // A server's counters are the server's, read after the window.
        engine_stats: last_to_end.engine_stats.clone(),
        engine_stats_before: BTreeMap::new(),
        integrity: ms.iter().filter_map(|m| m.integrity.as_ref()).fold(
            None,
            |total: Option<Integrity>, i| {
                let t = total.unwrap_or(Integrity {
                    verified: 0,
                    failed: 0,
                });
                Some(Integrity {
                    verified: t.verified + i.verified,
                    failed: t.failed + i.failed,
                })
            },
        ),
        db_bench: None,
        device: None,
        events: merge_events(windows),
        ..Measurement::of_window(ms[0].name.clone(), bounds)
    }
}

/// The engine events of the shard whose window is widest: the shards of
/// a server engine all watch one server, so one shard's are the server's
/// (an embedded engine's shards on several hosts keep theirs in their own
/// results). None when no shard has any.
fn merge_events(windows: &[(&StepOutput, &Measurement)]) -> Option<EngineEvents> {
    windows
        .iter()
        .filter(|(_, m)| m.events.is_some())
        .max_by_key(|(_, m)| m.end_unix_ms.saturating_sub(m.start_unix_ms))
        .and_then(|(_, m)| m.events.clone())
}

/// Per operation type: return codes summed, histograms added.
fn merge_ops(ms: &[&Measurement]) -> BTreeMap<crate::measure::OpKind, OpStats> {
    let mut per_op: BTreeMap<_, Vec<&OpStats>> = BTreeMap::new();
    for m in ms {
        for (op, stats) in &m.ops {
            per_op.entry(*op).or_default().push(stats);
        }
    }
    per_op
        .into_iter()
        .map(|(op, stats)| {
            let added = |pick: fn(&OpStats) -> Option<&Latency>| {
                hdr::sum(
                    stats
                        .iter()
                        .filter_map(|s| pick(s))
                        .map(|l| l.histogram.get()),
                )
                .map(|h| Latency::of(&h))
            };
            let mut returns: BTreeMap<String, u64> = BTreeMap::new();
            for s in &stats {
                for (name, n) in &s.returns {
                    *returns.entry(name.clone()).or_default() += n;
                }
            }
            let merged = OpStats {
                returns,
                first_error: stats.iter().find_map(|s| s.first_error.clone()),
                latency: added(|s| Some(&s.latency)).expect("every op type has a latency"),
                failed: added(|s| s.failed.as_ref()),
                intended: added(|s| s.intended.as_ref()),
                intended_failed: added(|s| s.intended_failed.as_ref()),
            };
            (op, merged)
        })
        .collect()
}

/// Per-second operation counts on one timeline from the earliest start:
/// each shard's second goes to the second its middle falls in (shards
/// start at different milliseconds), so every operation is counted once.
fn merge_intervals(ms: &[&Measurement]) -> Vec<u64> {
    let t0 = ms.iter().map(|m| m.start_unix_ms).min().unwrap_or(0);
    let mut merged: Vec<u64> = Vec::new();
    for m in ms {
        let offset_ms = m.start_unix_ms - t0;
        for (k, &n) in m.intervals.iter().enumerate() {
            let at = ((offset_ms + k as u64 * 1000 + 500) / 1000) as usize;
            if merged.len() <= at {
                merged.resize(at + 1, 0);
            }
            merged[at] += n;
        }
    }
    merged
}

/// The shards' timelines on one wall clock ([`timeline::merge`]), ended
/// where the last shard's window ended; none when a shard has none
/// (results from before timelines).
fn merge_timelines(ms: &[&Measurement]) -> Option<Timeline> {
    let parts: Option<Vec<(u64, &Timeline)>> = ms
        .iter()
        .map(|m| m.timeline.as_ref().map(|t| (m.start_unix_ms, t)))
        .collect();
    let mut merged = timeline::merge(&parts?)?;
    let first = ms.iter().map(|m| m.start_unix_ms).min()?;
    let last = ms.iter().map(|m| m.end_unix_ms).max()?;
    merged.clip_to(last.saturating_sub(first) as f64 / 1000.0);
    Some(merged)
}

fn merge_info(parts: &[(String, StepOutput)], shards: &[&ShardInfo], m: &Measurement) -> MergeInfo {
    let mut list: Vec<ShardPart> = parts
        .iter()
        .zip(shards)
        .map(|((name, o), s)| {
            let measured = o.measured();
            ShardPart {
                index: s.index,
                from: name.clone(),
                hostname: o.host.hostname.clone(),
                seed: o.seed,
                start_unix_ms: measured.map_or(0, |m| m.start_unix_ms),
                end_unix_ms: measured.map_or(0, |m| m.end_unix_ms),
                operations: measured.map_or(0, |m| m.operations),
                ops_per_sec: measured.map_or(0.0, |m| m.ops_per_sec),
                returns: measured.map_or_else(BTreeMap::new, |m| {
                    m.ops.iter().map(|(k, v)| (*k, v.returns.clone())).collect()
                }),
                slurm: s.slurm.clone(),
                kubernetes: s.kubernetes.clone(),
            }
        })
        .collect();
    list.sort_by_key(|p| p.index);
    let measured: Vec<&Measurement> = parts.iter().filter_map(|(_, o)| o.measured()).collect();
    let bounds: Vec<(f64, f64)> = measured.iter().map(|m| window(m)).collect();
    let spread = |pick: fn(&(f64, f64)) -> f64| {
        let values = bounds.iter().map(pick);
        let max = values.clone().fold(f64::MIN, f64::max);
        let min = values.fold(f64::MAX, f64::min);
        (max - min).max(0.0)
    };
    let latest_start = bounds.iter().map(|b| b.0).fold(f64::MIN, f64::max);
    let earliest_end = bounds.iter().map(|b| b.1).fold(f64::MAX, f64::min);
    let together_ms = (earliest_end - latest_start).max(0.0);
    let union = m.runtime_s * 1000.0;
    let mut hosts: Vec<String> = Vec::new();
    for p in &list {
        if !hosts.contains(&p.hostname) {
            hosts.push(p.hostname.clone());
        }
    }
    MergeInfo {
        fingerprint: shards[0].fingerprint.clone(),
        count: shards[0].count,
        shards: list,
        start_spread_ms: spread(|b| b.0).round() as u64,
        end_spread_ms: spread(|b| b.1).round() as u64,
        overlap_pct: if union > 0.0 {
            together_ms / union * 100.0
        } else {
            100.0
        },
        hosts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{new_histogram, OpHistograms, OpKind};
    use crate::results::step::op_stats;
    use crate::shard::Shard;

    const TOTAL: u64 = 3000;

    /// Shard `index` of `count` of a run of TOTAL operations: its reads
    /// took `latencies_ns`, in a window of `runtime_s` from `start_ms`.
    fn shard(
        index: u64,
        count: u64,
        start_ms: u64,
        runtime_s: f64,
        latencies_ns: &[u64],
    ) -> (String, StepOutput) {
        let mut h = OpHistograms::new();
        for &ns in latencies_ns {
            h.record(OpKind::Read, ns, None, &Ok(()));
        }
        let mut o = StepOutput::begin("run");
        o.host.hostname = "h".into();
        o.measurements.push(Measurement {
            name: "run".into(),
            threads: 2,
            start_unix_ms: start_ms,
            end_unix_ms: start_ms + (runtime_s * 1000.0) as u64,
            runtime_s,
            operations: latencies_ns.len() as u64,
            ops_per_sec: latencies_ns.len() as f64 / runtime_s,
            ops: op_stats(&h),
            intervals: vec![latencies_ns.len() as u64],
            timeline: None,
            ..Measurement::default()
        });
        let me = Shard { index, count };
        o.shard = Some(ShardInfo {
            index,
            count,
            source: "--shard".into(),
            fingerprint: "f".into(),
            slice: Some(me.slice(0, TOTAL)),
            of: Some(Slice {
                start: 0,
                count: TOTAL,
            }),
            target_ops_per_sec: 0.0,
            slurm: None,
            kubernetes: None,
        });
        (format!("s{index}.json"), o)
    }

    /// Three shards with different latency distributions: the first fast,
    /// the last slow, so averaged percentiles would be far off.
    fn latencies(index: u64) -> Vec<u64> {
        (0..1000u64)
            .map(|i| (index * index * 50 + 1) * 1000 + i * 7_919 % 100_000)
            .collect()
    }

    fn refusal(parts: Vec<(String, StepOutput)>) -> String {
        let err = merge(parts).unwrap_err().to_string();
        assert!(!err.contains('\n'), "one line: {err}");
        err
    }

    #[test]
    fn merged_clients_are_tasks_only_if_every_shard_ran_tasks_and_pinned_only_if_all_pinned() {
        let tasks = |runtime_threads, pinned| Clients::Tasks {
            runtime_threads,
            pinned,
        };
        let merged = |clients: &[Clients]| {
            let ms: Vec<Measurement> = clients
                .iter()
                .map(|&clients| Measurement {
                    clients,
                    ..Measurement::default()
                })
                .collect();
            merge_clients(&ms.iter().collect::<Vec<_>>())
        };
        assert_eq!(merged(&[tasks(2, true), tasks(4, true)]), tasks(6, true));
        assert_eq!(merged(&[tasks(2, true), tasks(2, false)]), tasks(4, false));
        assert_eq!(
            merged(&[tasks(2, true), Clients::Threads]),
            Clients::Threads
        );
    }

    #[test]
    fn merged_percentiles_are_those_of_every_latency_together() {
        let parts: Vec<_> = (0..3)
            .map(|i| shard(i, 3, 1_000, 10.0, &latencies(i)))
            .collect();
        let merged = merge(parts.clone()).unwrap();
        let read = &merged.measured().unwrap().ops[&OpKind::Read];
        let mut all: Vec<u64> = (0..3).flat_map(latencies).collect();
        let mut one = new_histogram();
        for &ns in &all {
            one.record(ns).unwrap();
        }
        let direct = Latency::of(&one);
        assert_eq!(read.latency.count, 3000);
        for (got, want) in [
            (read.latency.p50_us, direct.p50_us),
            (read.latency.p99_us, direct.p99_us),
            (read.latency.p999_us, direct.p999_us),
            (read.latency.max_us, direct.max_us),
            (read.latency.min_us, direct.min_us),
            (read.latency.avg_us, direct.avg_us),
        ] {
            assert_eq!(got, want);
        }
        // And within HdrHistogram's 3 digits of the exact order statistic.
        all.sort_unstable();
        let exact_p99 = all[(0.99 * all.len() as f64).ceil() as usize - 1] as f64 / 1000.0;
        assert!((read.latency.p99_us - exact_p99).abs() / exact_p99 < 1e-3);
        // What averaging the shards' p99 would have said is far from it.
        let averaged: f64 = parts
            .iter()
            .map(|(_, o)| o.measured().unwrap().ops[&OpKind::Read].latency.p99_us)
            .sum::<f64>()
            / 3.0;
        assert!(
            (averaged - exact_p99).abs() / exact_p99 > 0.2,
            "{averaged} vs {exact_p99}"
        );
        assert_eq!(read.count(crate::measure::Outcome::Ok), 3000);
    }

    #[test]
    fn throughput_is_over_the_union_of_the_windows() {
        let parts = vec![
            shard(0, 2, 10_000, 10.0, &[1_000; 1500]),
            shard(1, 2, 10_500, 10.0, &[1_000; 1500]),
        ];
        let merged = merge(parts).unwrap();
        let m = merged.measured().unwrap();
        assert_eq!(m.operations, 3000);
        assert!((m.runtime_s - 10.5).abs() < 1e-9, "{}", m.runtime_s);
        assert!((m.ops_per_sec - 3000.0 / 10.5).abs() < 1e-6);
        assert_eq!(m.threads, 4);
        assert_eq!(
            m.intervals.iter().sum::<u64>(),
            3000,
            "every operation once"
        );
        let info = merged.merged.as_ref().unwrap();
        assert_eq!((info.start_spread_ms, info.end_spread_ms), (500, 500));
        assert!((info.overlap_pct - 9.5 / 10.5 * 100.0).abs() < 1e-6);
        assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
        assert_eq!(
            info.shards.iter().map(|s| s.index).collect::<Vec<_>>(),
            [0, 1]
        );
    }

    #[test]
    fn shards_that_hardly_overlap_are_flagged() {
        let parts = vec![
            shard(1, 2, 10_000, 10.0, &[1_000; 1500]),
            shard(0, 2, 15_000, 10.0, &[1_000; 1500]),
        ];
        let merged = merge(parts).unwrap();
        assert!((merged.measured().unwrap().runtime_s - 15.0).abs() < 1e-9);
        let w = merged.warnings.join("\n");
        assert!(w.contains("only 33%") && w.contains("straggler"), "{w}");
        // Shard 0 leads the merged result whatever the order given.
        assert_eq!(merged.merged.unwrap().shards[0].from, "s0.json");
    }

    #[test]
    fn windows_a_day_apart_or_intervals_past_their_timeline_are_refused_before_sizing() {
        // Pass 14: the merged timeline was sized by the clocks' gap; a
        // start moved by 10^11 ms, or an interval at start_s 1e9, asked
        // for gigabytes.
        let day_ms = timeline::MOST_MERGE_SKEW_S as u64 * 1000;
        let late = shard(1, 2, 5_000 + day_ms + 1_000, 10.0, &[1_000; 1500]);
        let err = refusal(vec![shard(0, 2, 5_000, 10.0, &[1_000; 1500]), late]);
        assert!(
            err.contains("'s1.json' opened its window 86401 s after 's0.json'"),
            "{err}"
        );
        let zero = shard(0, 2, 0, 10.0, &[1_000; 1500]);
        let err = refusal(vec![
            zero,
            shard(1, 2, 1_795_973_071_399, 10.0, &[1_000; 1500]),
        ]);
        assert!(err.contains("after 's0.json'"), "{err}");
        let with_timeline = |start_s: f64, length_s: f64| {
            let mut s = shard(1, 2, 5_000, 10.0, &[1_000; 1500]);
            s.1.measurements[0].timeline = Some(Timeline {
                interval_s: 1.0,
                percentiles: Default::default(),
                intervals: vec![timeline::Interval {
                    start_s,
                    length_s,
                    ops: BTreeMap::new(),
                }],
            });
            vec![shard(0, 2, 5_000, 10.0, &[1_000; 1500]), s]
        };
        for (start_s, length_s) in [
            (1e9, 1.0),
            (-1.0, 1.0),
            (f64::NAN, 1.0),
            (0.0, f64::INFINITY),
        ] {
            let err = refusal(with_timeline(start_s, length_s));
            assert!(
                err.contains("'s1.json': its timeline's interval 0"),
                "{err}"
            );
        }
        // A day's skew inside the timeline is still merged.
        assert!(merge(with_timeline(80_000.0, 1.0)).is_ok());
        assert!(merge(with_timeline(0.0, 1.0)).is_ok());
    }

    #[test]
    fn another_study_is_refused_naming_what_differs() {
        let mut b = shard(1, 2, 0, 1.0, &[1_000]);
        b.1.shard.as_mut().unwrap().fingerprint = "g".into();
        b.1.settings.insert("recordcount".into(), "5".into());
        let err = refusal(vec![shard(0, 2, 0, 1.0, &[1_000]), b]);
        assert!(
            err.contains("'s1.json' is a shard of another study than 's0.json'"),
            "{err}"
        );
        assert!(err.contains("recordcount"), "{err}");
    }

    #[test]
    fn a_duplicate_or_missing_shard_is_refused() {
        let err = refusal(vec![shard(0, 3, 0, 1.0, &[1]), shard(0, 3, 0, 1.0, &[1])]);
        assert!(err.contains("shard 0/3 is given twice"), "{err}");
        let err = refusal(vec![shard(0, 3, 0, 1.0, &[1]), shard(2, 3, 0, 1.0, &[1])]);
        assert!(err.contains("1 of 3 shards missing (1/3)"), "{err}");
        let err = refusal(vec![shard(0, 3, 0, 1.0, &[1]), shard(1, 2, 0, 1.0, &[1])]);
        assert!(err.contains("same count"), "{err}");
        // Pass 14: a count of 10^12 listed every missing shard.
        let err = refusal(vec![shard(0, 1_000_000_000_000, 0, 1.0, &[1])]);
        assert!(
            err.contains("999999999999 of 1000000000000 shards missing (1/1000000000000, "),
            "{err}"
        );
    }

    #[test]
    fn overlapping_or_missing_slices_are_refused() {
        let mut b = shard(1, 2, 0, 1.0, &[1]);
        b.1.shard.as_mut().unwrap().slice = Some(Slice {
            start: 1400,
            count: 1600,
        });
        let err = refusal(vec![shard(0, 2, 0, 1.0, &[1]), b.clone()]);
        assert!(
            err.contains("slices overlap: operations 1400..1500"),
            "{err}"
        );
        b.1.shard.as_mut().unwrap().slice = Some(Slice {
            start: 1600,
            count: 1400,
        });
        let err = refusal(vec![shard(0, 2, 0, 1.0, &[1]), b.clone()]);
        assert!(err.contains("leave operations 1500..1600 out"), "{err}");
        b.1.shard.as_mut().unwrap().slice = Some(Slice {
            start: 1500,
            count: 1000,
        });
        let err = refusal(vec![shard(0, 2, 0, 1.0, &[1]), b]);
        assert!(err.contains("2500..3000 out"), "{err}");
    }

    #[test]
    fn results_that_are_not_shards_are_refused() {
        let (_, whole) = shard(0, 1, 0, 1.0, &[1]);
        let mut plain = whole.clone();
        plain.shard = None;
        let err = refusal(vec![shard(0, 2, 0, 1.0, &[1]), ("x.json".into(), plain)]);
        assert!(err.contains("'x.json' is not a shard's result"), "{err}");
        let merged = merge(vec![shard(0, 1, 0, 1.0, &[1])]).unwrap();
        let err = refusal(vec![("m.json".into(), merged)]);
        assert!(err.contains("already a merged result"), "{err}");
        assert!(refusal(Vec::new()).contains("nothing to merge"));
    }

    #[test]
    fn a_failed_shard_fails_the_merge_and_keeps_what_was_measured() {
        let mut b = shard(1, 2, 0, 1.0, &[1_000; 10]);
        b.1.error = Some(StepError {
            kind: super::super::step::ErrorKind::Run,
            message: "server went away".into(),
        });
        let merged = merge(vec![shard(0, 2, 0, 1.0, &[1_000; 5]), b]).unwrap();
        assert_eq!(
            merged.error.as_ref().unwrap().message,
            "shard 1/2: server went away"
        );
        assert_eq!(merged.measured().unwrap().operations, 15);
    }
}
