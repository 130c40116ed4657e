//! A measured window over time: per interval (one second by default), the
//! operations of each type, how many failed, and their latency
//! percentiles. Recorded by the runner from the same histograms that make
//! the window's totals, so the intervals add up to the totals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{OpHistograms, OpKind, Outcome};

/// Where an interval's percentiles are timed from: [`Interval::of`]
/// reads the actual-start histograms (`ok`), paced or not, so a chart of
/// them names that kind.
pub const LATENCY_START: super::latency_start::LatencyStart =
    super::latency_start::LatencyStart::Actual;

/// Length of a timeline interval.
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How the percentiles of a timeline's intervals were had.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Percentiles {
    /// From the interval's own histogram (one process measured it).
    #[default]
    Exact,
    /// A merge of shards: each percentile is the largest of the shards'
    /// figures for that interval, an upper bound of the merged one (the
    /// shards keep no histogram per interval); counts and max are exact.
    LargestOfShards,
}

/// The intervals of one measured window, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Nominal interval length in seconds (the last may be shorter; each
    /// interval states its own).
    pub interval_s: f64,
    pub percentiles: Percentiles,
    pub intervals: Vec<Interval>,
}

/// One interval of the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds from the window's open to this interval's start.
    pub start_s: f64,
    pub length_s: f64,
    /// Per operation type that completed any operation in the interval.
    pub ops: BTreeMap<OpKind, IntervalOp>,
}

/// One operation type in one interval. Latencies are of the successful
/// operations, in microseconds; absent when none succeeded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalOp {
    /// Every operation that completed in the interval, failed ones included.
    pub operations: u64,
    /// Those whose return was not OK (NOT_FOUND, ERROR, ...).
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
}

impl Interval {
    /// The interval `[start_s, start_s + length_s)` from the histograms
    /// its clients handed over in it.
    pub fn of(histograms: &OpHistograms, start_s: f64, length_s: f64) -> Self {
        let ops = histograms
            .iter()
            .filter(|(_, g)| g.total_returns() > 0)
            .map(|(kind, g)| {
                let us = |q: f64| (!g.ok.is_empty()).then(|| to_us(g.ok.value_at_quantile(q)));
                let op = IntervalOp {
                    operations: g.total_returns(),
                    failed: g.total_returns() - g.count(Outcome::Ok),
                    p50_us: us(0.5),
                    p99_us: us(0.99),
                    p999_us: us(0.999),
                    max_us: (!g.ok.is_empty()).then(|| to_us(g.ok.max())),
                };
                (kind, op)
            })
            .collect();
        Self {
            start_s,
            length_s,
            ops,
        }
    }

    /// Client operations completed in the interval, counted as the
    /// window's are ([`super::client_operations`]).
    pub fn operations(&self) -> u64 {
        super::client_operations(self.ops.iter().map(|(kind, op)| (*kind, op.operations)))
    }
}

impl Timeline {
    /// Ends the timeline at the window's end, `window_s` from its open:
    /// the last cut comes a status tick after the last client ended, so
    /// without this the last interval would run past the window and its
    /// rate would read low. An interval that opened at or after the end
    /// (its operations handed over late) keeps its counts, with length 0.
    pub fn clip_to(&mut self, window_s: f64) {
        for interval in &mut self.intervals {
            let start = interval.start_s.min(window_s);
            let end = (interval.start_s + interval.length_s).min(window_s);
            interval.start_s = start;
            interval.length_s = (end - start).max(0.0);
        }
    }

    /// Operations completed in each interval, in order: what a result's
    /// `intervals` list holds.
    pub fn counts(&self) -> Vec<u64> {
        self.intervals.iter().map(Interval::operations).collect()
    }
}

/// Nanoseconds as microseconds, to the nanosecond.
fn to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Seconds by which shards' windows may open apart, and an interval lie
/// past what its timeline's intervals cover, for [`merge`]: it sizes the
/// merged timeline by where they fall.
pub const MOST_MERGE_SKEW_S: f64 = 86_400.0;

impl Timeline {
    /// Why this timeline cannot go into a [`merge`]: an interval length
    /// that is no time, or an interval further from the window's open
    /// than its timeline's intervals and [`MOST_MERGE_SKEW_S`] reach.
    pub fn unmergeable(&self) -> Option<String> {
        if !(self.interval_s.is_finite() && self.interval_s > 0.0) {
            return Some(format!(
                "its timeline's interval_s ({}) is not a length of time",
                self.interval_s
            ));
        }
        let reach = self.intervals.len() as f64 * self.interval_s.max(1.0) + MOST_MERGE_SKEW_S;
        let placed = |i: &Interval| {
            i.start_s >= 0.0 && i.length_s >= 0.0 && i.start_s + i.length_s / 2.0 <= reach
        };
        let (k, i) = self
            .intervals
            .iter()
            .enumerate()
            .find(|(_, i)| !placed(i))?;
        Some(format!(
            "its timeline's interval {k} (start_s {}, length_s {}) lies outside the {reach:.0} s from the window's open that its {} intervals and {MOST_MERGE_SKEW_S} s of skew reach",
            i.start_s,
            i.length_s,
            self.intervals.len()
        ))
    }
}

/// Shards' timelines on one wall clock: each shard interval goes to the
/// merged interval its middle falls in (shards open their windows at
/// different milliseconds), so every operation is counted once.
/// `parts` are (window open in Unix ms, timeline).
pub fn merge(parts: &[(u64, &Timeline)]) -> Option<Timeline> {
    let t0 = parts.iter().map(|(start, _)| *start).min()?;
    let interval_s = parts
        .iter()
        .map(|(_, t)| t.interval_s)
        .fold(0.0, f64::max)
        .max(INTERVAL.as_secs_f64());
    let mut merged: Vec<Interval> = Vec::new();
    for (start_ms, timeline) in parts {
        let offset_s = (start_ms - t0) as f64 / 1000.0;
        for interval in &timeline.intervals {
            let middle = offset_s + interval.start_s + interval.length_s / 2.0;
            let at = (middle / interval_s).floor().max(0.0) as usize;
            while merged.len() <= at {
                let k = merged.len();
                merged.push(Interval {
                    start_s: k as f64 * interval_s,
                    length_s: interval_s,
                    ops: BTreeMap::new(),
                });
            }
            for (kind, op) in &interval.ops {
                add_op(merged[at].ops.entry(*kind).or_default(), op);
            }
        }
    }
    Some(Timeline {
        interval_s,
        percentiles: Percentiles::LargestOfShards,
        intervals: merged,
    })
}

fn add_op(into: &mut IntervalOp, op: &IntervalOp) {
    into.operations += op.operations;
    into.failed += op.failed;
    let larger = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    into.p50_us = larger(into.p50_us, op.p50_us);
    into.p99_us = larger(into.p99_us, op.p99_us);
    into.p999_us = larger(into.p999_us, op.p999_us);
    into.max_us = larger(into.max_us, op.max_us);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpError;

    #[test]
    fn an_interval_counts_failures_and_times_successes_only() {
        let mut h = OpHistograms::new();
        for us in 1..=100u64 {
            h.record(OpKind::Read, us * 1000, None, &Ok(()));
        }
        h.record(OpKind::Read, 9_000_000, None, &Err(OpError::NotFound));
        h.record(
            OpKind::Update,
            5_000,
            None,
            &Err(OpError::Failed("gone".into())),
        );
        let i = Interval::of(&h, 2.0, 1.0);
        let read = &i.ops[&OpKind::Read];
        assert_eq!((read.operations, read.failed), (101, 1));
        // The 9 ms failed read is not in the latency figures.
        assert!((read.max_us.unwrap() - 100.0).abs() < 0.1, "{read:?}");
        assert!((read.p50_us.unwrap() - 50.0).abs() < 0.1, "{read:?}");
        assert!((read.p99_us.unwrap() - 99.0).abs() < 0.1, "{read:?}");
        let update = &i.ops[&OpKind::Update];
        assert_eq!((update.operations, update.failed), (1, 1));
        assert_eq!(update.p99_us, None);
        assert_eq!(i.operations(), 102);
    }

    fn timeline(counts: &[u64], p99: f64) -> Timeline {
        Timeline {
            interval_s: 1.0,
            percentiles: Percentiles::Exact,
            intervals: counts
                .iter()
                .enumerate()
                .map(|(k, &n)| Interval {
                    start_s: k as f64,
                    length_s: 1.0,
                    ops: [(
                        OpKind::Read,
                        IntervalOp {
                            operations: n,
                            failed: 1,
                            p99_us: Some(p99),
                            ..Default::default()
                        },
                    )]
                    .into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_timeline_ends_at_the_window_end() {
        let mut t = timeline(&[10, 20, 5], 1.0);
        t.clip_to(2.4);
        let spans: Vec<(f64, f64)> = t
            .intervals
            .iter()
            .map(|i| (i.start_s, i.length_s))
            .collect();
        assert_eq!(spans[..2], [(0.0, 1.0), (1.0, 1.0)]);
        assert!((spans[2].0 - 2.0).abs() < 1e-12 && (spans[2].1 - 0.4).abs() < 1e-12);
        // Counts stay: an interval's operations all ended inside the window.
        assert_eq!(t.counts(), vec![10, 20, 5]);
        t.clip_to(1.5);
        assert_eq!(
            (t.intervals[2].start_s, t.intervals[2].length_s),
            (1.5, 0.0)
        );
        assert_eq!(t.counts(), vec![10, 20, 5]);
    }

    #[test]
    fn shards_merge_on_the_wall_clock() {
        let a = timeline(&[10, 20, 30], 5.0);
        // Opened 1.2 s later: its first second is the merged second 1.
        let b = timeline(&[1, 2], 9.0);
        let m = merge(&[(1_000, &a), (2_200, &b)]).unwrap();
        let reads: Vec<u64> = m
            .intervals
            .iter()
            .map(|i| i.ops[&OpKind::Read].operations)
            .collect();
        assert_eq!(reads, vec![10, 21, 32]);
        assert_eq!(m.intervals[1].ops[&OpKind::Read].failed, 2);
        assert_eq!(m.intervals[0].ops[&OpKind::Read].p99_us, Some(5.0));
        assert_eq!(m.intervals[1].ops[&OpKind::Read].p99_us, Some(9.0));
        assert_eq!(m.percentiles, Percentiles::LargestOfShards);
        let total: u64 = m.intervals.iter().map(Interval::operations).sum();
        assert_eq!(total, 63);
    }
}
