//! Where a window departs from its own steady level, and what the engine
//! was doing then: the intervals of a timeline whose p99.9 latency rose
//! (or whose throughput fell) well past the window's median interval,
//! each with the engine events that overlap it.

use serde::{Deserialize, Serialize};

use super::timeline::{Interval, Timeline};
use super::OpKind;

/// An interval's p99.9 at least this many times the median interval's is a spike...
pub const LATENCY_FACTOR: f64 = 3.0;
/// ...and at least this much above it (microseconds), so that sub-microsecond
/// jitter of an in-memory engine is not called a spike.
pub const LATENCY_FLOOR_US: f64 = 50.0;
/// An interval whose throughput is at most this share of the median's is a dip.
pub const THROUGHPUT_SHARE: f64 = 0.5;
/// Intervals shorter than this (a window's last, cut short) are not judged.
const SHORTEST_JUDGED_S: f64 = 0.5;
/// Fewer judged intervals than this give no steady level to depart from.
pub const FEWEST_INTERVALS: usize = 5;
/// At most this many spikes are named in a verdict (the largest first).
const MOST_NAMED: usize = 3;

/// What departed from the steady level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Departure {
    /// One operation type's p99.9 latency rose.
    P999,
    /// The window's throughput (every operation type) fell.
    Throughput,
}

/// A run of consecutive intervals that departed, and the events overlapping it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    pub departure: Departure,
    /// The operation type, for a latency spike.
    pub op: Option<OpKind>,
    /// Seconds from the window's open.
    pub start_s: f64,
    pub end_s: f64,
    /// The worst interval's figure: p99.9 in microseconds, or ops/s.
    pub value: f64,
    /// The median interval's figure.
    pub steady: f64,
    /// Engine events overlapping the spike, as [`EventSpan::what`] says.
    pub overlaps: Vec<String>,
}

/// An engine event on the window's clock.
#[derive(Debug, Clone)]
pub struct EventSpan {
    /// Seconds from the window's open (negative: began before it).
    pub start_s: f64,
    pub end_s: f64,
    /// The event's kind as results name it ("flush", "write_stall").
    pub kind: &'static str,
    /// "an L0->L1 compaction of 212 MB".
    pub what: String,
}

/// The spikes of `timeline`, largest departure first, with the `events`
/// that overlap each.
pub fn find(timeline: &Timeline, events: &[EventSpan]) -> Vec<Spike> {
    let judged: Vec<&Interval> = timeline
        .intervals
        .iter()
        .filter(|i| i.length_s >= SHORTEST_JUDGED_S)
        .collect();
    if judged.len() < FEWEST_INTERVALS {
        return Vec::new();
    }
    let mut spikes = Vec::new();
    let mut kinds: Vec<OpKind> = judged.iter().flat_map(|i| i.ops.keys().copied()).collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let p999: Vec<Option<f64>> = judged
            .iter()
            .map(|i| i.ops.get(&kind).and_then(|o| o.p999_us))
            .collect();
        let Some(steady) = median(p999.iter().flatten().copied().collect()) else {
            continue;
        };
        let departs = |v: f64| v >= steady * LATENCY_FACTOR && v >= steady + LATENCY_FLOOR_US;
        let flagged: Vec<Option<f64>> = p999.iter().map(|v| v.filter(|&v| departs(v))).collect();
        spikes.extend(runs(&judged, &flagged, |start_s, end_s, value| Spike {
            departure: Departure::P999,
            op: Some(kind),
            start_s,
            end_s,
            value,
            steady,
            overlaps: Vec::new(),
        }));
    }
    let rates: Vec<f64> = judged
        .iter()
        .map(|i| i.operations() as f64 / i.length_s)
        .collect();
    if let Some(steady) = median(rates.clone()).filter(|s| *s > 0.0) {
        // A dip is flagged by its rate; the worst is the lowest.
        let flagged: Vec<Option<f64>> = rates
            .iter()
            .map(|&r| (r <= steady * THROUGHPUT_SHARE).then_some(-r))
            .collect();
        spikes.extend(runs(&judged, &flagged, |start_s, end_s, lowest| Spike {
            departure: Departure::Throughput,
            op: None,
            start_s,
            end_s,
            value: -lowest,
            steady,
            overlaps: Vec::new(),
        }));
    }
    for spike in &mut spikes {
        spike.overlaps = events
            .iter()
            .filter(|e| e.start_s < spike.end_s && e.end_s > spike.start_s)
            .map(|e| e.what.clone())
            .collect();
    }
    spikes.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    spikes
}

impl Spike {
    /// How far from steady: the p99.9's multiple, or the rate's divisor.
    pub fn ratio(&self) -> f64 {
        match self.departure {
            Departure::P999 => self.value / self.steady,
            Departure::Throughput => self.steady / self.value.max(1e-9),
        }
    }

    /// "READ p99.9 5.1 ms at 12-14 s (3.2x the step's median interval, 1.6 ms),
    /// overlapping an L0->L1 compaction of 212 MB".
    pub fn describe(&self) -> String {
        let at = format!("at {:.0}-{:.0} s", self.start_s, self.end_s);
        let what = match self.departure {
            Departure::P999 => format!(
                "{} p99.9 {} {at} ({:.1}x the step's median interval, {})",
                self.op.map_or("", |k| k.ycsb_name()),
                latency(self.value),
                self.ratio(),
                latency(self.steady)
            ),
            Departure::Throughput => format!(
                "throughput {:.0} ops/s {at} ({:.1}x below the step's median interval, {:.0} ops/s)",
                self.value,
                self.ratio(),
                self.steady
            ),
        };
        if self.overlaps.is_empty() {
            format!("{what}, overlapping no engine event")
        } else {
            format!("{what}, overlapping {}", self.overlaps.join(", "))
        }
    }
}

/// The sentence a verdict gains: the largest spikes, or nothing.
pub fn summary(spikes: &[Spike]) -> Option<String> {
    if spikes.is_empty() {
        return None;
    }
    let named: Vec<String> = spikes
        .iter()
        .take(MOST_NAMED)
        .map(Spike::describe)
        .collect();
    let more = spikes.len().saturating_sub(MOST_NAMED);
    Some(if more > 0 {
        format!("spikes: {} (and {more} more)", named.join("; "))
    } else {
        format!("spikes: {}", named.join("; "))
    })
}

fn latency(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} us")
    }
}

/// Runs of consecutive flagged intervals, each made into a spike with its
/// bounds and the largest flagged value.
fn runs(
    intervals: &[&Interval],
    flagged: &[Option<f64>],
    make: impl Fn(f64, f64, f64) -> Spike,
) -> Vec<Spike> {
    let mut spikes = Vec::new();
    let mut open: Option<(usize, f64)> = None;
    for k in 0..=flagged.len() {
        match (flagged.get(k).copied().flatten(), open) {
            (Some(v), None) => open = Some((k, v)),
            (Some(v), Some((first, worst))) => open = Some((first, worst.max(v))),
            (None, Some((first, worst))) => {
                let last = intervals[k - 1];
                spikes.push(make(
                    intervals[first].start_s,
                    last.start_s + last.length_s,
                    worst,
                ));
                open = None;
            }
            (None, None) => {}
        }
    }
    spikes
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timeline::IntervalOp;

    /// One interval a second with `ops` reads at p99.9 `p999` us.
    fn timeline(series: &[(u64, f64)]) -> Timeline {
        Timeline {
            interval_s: 1.0,
            percentiles: Default::default(),
            intervals: series
                .iter()
                .enumerate()
                .map(|(k, &(ops, p999))| Interval {
                    start_s: k as f64,
                    length_s: 1.0,
                    ops: [(
                        OpKind::Read,
                        IntervalOp {
                            operations: ops,
                            p999_us: Some(p999),
                            ..Default::default()
                        },
                    )]
                    .into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_latency_spike_is_tied_to_the_event_it_overlaps() {
        let t = timeline(&[
            (1000, 400.0),
            (1000, 420.0),
            (1000, 410.0),
            (1000, 5100.0),
            (1000, 4000.0),
            (1000, 400.0),
            (1000, 390.0),
        ]);
        let events = [
            EventSpan {
                start_s: 2.8,
                end_s: 4.6,
                kind: "compaction",
                what: "an L0->L1 compaction of 212 MB".into(),
            },
            EventSpan {
                start_s: 6.5,
                end_s: 7.0,
                kind: "flush",
                what: "a flush".into(),
            },
        ];
        let spikes = find(&t, &events);
        assert_eq!(spikes.len(), 1, "{spikes:?}");
        let s = &spikes[0];
        assert_eq!((s.start_s, s.end_s), (3.0, 5.0));
        assert_eq!(s.value, 5100.0);
        assert_eq!(s.steady, 410.0);
        assert_eq!(s.overlaps, vec!["an L0->L1 compaction of 212 MB"]);
        assert_eq!(
            s.describe(),
            "READ p99.9 5.10 ms at 3-5 s (12.4x the step's median interval, 410 us), overlapping an L0->L1 compaction of 212 MB"
        );
    }

    #[test]
    fn a_throughput_dip_is_found_and_a_steady_window_has_none() {
        let steady = timeline(&[(1000, 400.0); 8]);
        assert!(find(&steady, &[]).is_empty());
        let mut series = vec![(1000, 400.0); 8];
        series[5] = (300, 400.0);
        let spikes = find(&timeline(&series), &[]);
        assert_eq!(spikes.len(), 1);
        assert_eq!(spikes[0].departure, Departure::Throughput);
        assert_eq!(spikes[0].value, 300.0);
        assert!(spikes[0]
            .describe()
            .ends_with("overlapping no engine event"));
        assert!(summary(&spikes)
            .unwrap()
            .starts_with("spikes: throughput 300 ops/s at 5-6 s"));
    }

    #[test]
    fn small_or_few_departures_are_not_spikes() {
        // 3x of a 5 us median is under the 50 us floor.
        let mut series = vec![(1000, 5.0); 8];
        series[2] = (1000, 20.0);
        assert!(find(&timeline(&series), &[]).is_empty());
        // Four intervals give no steady level.
        assert!(find(
            &timeline(&[(1000, 400.0), (1000, 9000.0), (1000, 400.0), (1000, 400.0)]),
            &[]
        )
        .is_empty());
    }
}
