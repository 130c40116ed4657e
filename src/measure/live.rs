//! The figures of the window in progress, for a long study to be watched
//! while it runs: updated at every timeline interval, rendered in the
//! Prometheus text exposition format (version 0.0.4) for the Prometheus
//! or Grafana a team already runs. Nothing here is touched unless asked
//! for (`--metrics-addr`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::timeline::Interval;
use super::{OpHistograms, OpKind};
use crate::files::HeldDir;

/// Set by `kvperf plan run --metrics-addr` for its steps: the directory
/// where each step process mirrors its figures (`<pid>.json`).
pub const LIVE_DIR_ENV: &str = "KVPERF_LIVE_DIR";

/// The name of the directory plan run `plan_pid` makes for its steps'
/// mirrors: what a step checks `KVPERF_LIVE_DIR` against.
pub fn live_dir_name(plan_pid: u32) -> String {
    format!("kvperf-live-{plan_pid}")
}

/// The window in progress, as its intervals arrive; mirrored to a file
/// after each one when a plan watches its steps (a step is a child process).
#[derive(Debug, Default)]
pub struct LiveFigures {
    state: Mutex<Snapshot>,
    /// The mirror's directory, held from the start (a directory renamed,
    /// and a link to a user's put at its name, is not written through),
    /// and its name there.
    mirror: Option<(HeldDir, String)>,
    /// Whether the mirror at its name is one this step put there: its
    /// first is put only where nothing stands (pass 15: a user's
    /// `<pid>.json` in a directory named as a plan's was replaced, then
    /// removed); a step that found one there mirrors nothing.
    mirror_state: Mutex<Mirror>,
    /// The labels every window carries (a window may add its own).
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Mirror {
    #[default]
    NotYet,
    Placed,
    Refused,
}

/// The figures at one moment.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    /// Labels naming what runs: command, engine, shard.
    pub labels: BTreeMap<String, String>,
    /// Since the window opened, per op type.
    pub totals: BTreeMap<OpKind, Totals>,
    pub last: Option<Interval>,
    /// Seconds from the window's open to the last interval's end.
    pub elapsed_s: f64,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub struct Totals {
    pub operations: u64,
    pub failed: u64,
    /// The successful operations' latency added up, seconds (from each
    /// interval's histogram: its mean times its count).
    #[serde(default)]
    pub ok_latency_s: f64,
}

impl LiveFigures {
    /// `mirror`: a file rewritten (atomically) with the snapshot as JSON
    /// after each interval.
    pub fn new(labels: BTreeMap<String, String>, mirror: Option<PathBuf>) -> Self {
        Self {
            state: Mutex::new(Snapshot {
                labels: labels.clone(),
                ..Snapshot::default()
            }),
            mirror: mirror.and_then(|path| {
                let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
                let held = HeldDir::open(dir.unwrap_or(Path::new("."))).ok()?;
                Some((held, path.file_name()?.to_str()?.to_string()))
            }),
            mirror_state: Mutex::new(Mirror::NotYet),
            labels,
        }
    }

    /// A new window opens (the next db_bench benchmark): its figures start
    /// from nothing, labelled with `more` beside the fixed labels.
    pub fn new_window(&self, more: &[(&str, &str)]) {
        let mut labels = self.labels.clone();
        labels.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Snapshot {
            labels,
            ..Snapshot::default()
        };
    }

    /// Takes the interval just cut, and the histograms it was cut from.
    pub fn update(&self, interval: &Interval, histograms: &OpHistograms) {
        let snapshot = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            for (kind, op) in &interval.ops {
                let t = s.totals.entry(*kind).or_default();
                t.operations += op.operations;
                t.failed += op.failed;
            }
            for (kind, group) in histograms.iter().filter(|(_, g)| !g.ok.is_empty()) {
                let t = s.totals.entry(kind).or_default();
                // Nanoseconds: the mean times the count is the sum.
                t.ok_latency_s += group.ok.mean() * group.ok.len() as f64 / 1e9;
            }
            s.elapsed_s = interval.start_s + interval.length_s;
            s.last = Some(interval.clone());
            s.clone()
        };
        if let Some((dir, name)) = &self.mirror {
            // A watcher is not the measurement: a failed write only
            // leaves the last figures in place.
            // A new file of its own (never through a link), renamed over
            // the last; not synced: a watcher's view, not a result.
            let tmp = crate::files::owned::temporary_name(Path::new(""), name);
            let json = serde_json::to_vec(&snapshot).unwrap_or_default();
            let mut state = self.mirror_state.lock().unwrap_or_else(|e| e.into_inner());
            if *state == Mirror::Refused {
                return;
            }
            let written = dir
                .create_new(&tmp)
                .and_then(|mut f| std::io::Write::write_all(&mut f, &json))
                .and_then(|()| match *state {
                    Mirror::Placed => dir.rename(&tmp, name, 0),
                    _ => dir.rename_noreplace(&tmp, name),
                });
            match written {
                Ok(()) => *state = Mirror::Placed,
                Err(e) => {
                    let _ = dir.remove(&tmp);
                    if *state == Mirror::NotYet && e.kind() == std::io::ErrorKind::AlreadyExists {
                        *state = Mirror::Refused;
                    }
                }
            }
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Removes the mirror file this step put at its name, when the step
    /// ends: in the directory held, and only one it put.
    pub fn remove_mirror(&self) {
        let state = *self.mirror_state.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some((dir, name)), Mirror::Placed) = (&self.mirror, state) {
            let _ = dir.remove(name);
        }
    }
}

/// The latency summary's name: base unit seconds, as Prometheus asks.
pub const LATENCY: &str = "kvperf_latency_seconds";

/// The snapshots in Prometheus' text format, each metric family once.
pub fn render(snapshots: &[Snapshot]) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "kvperf_step_info",
        "gauge",
        "What runs now (always 1; the labels say what).",
        snapshots,
        |s, out| line(out, "kvperf_step_info", &s.labels, &[], 1.0),
    );
    family(
        &mut out,
        "kvperf_window_elapsed_seconds",
        "gauge",
        "Seconds of the measured window covered by the figures below.",
        snapshots,
        |s, out| {
            line(
                out,
                "kvperf_window_elapsed_seconds",
                &s.labels,
                &[],
                s.elapsed_s,
            )
        },
    );
    family(
        &mut out,
        "kvperf_operations_total",
        "counter",
        "Operations completed in the measured window, by type and outcome (failed: any return but OK).",
        snapshots,
        |s, out| {
            for (kind, t) in &s.totals {
                for (outcome, n) in [("ok", t.operations - t.failed), ("failed", t.failed)] {
                    let more = [("op", kind.name()), ("outcome", outcome)];
                    line(out, "kvperf_operations_total", &s.labels, &more, n as f64);
                }
            }
        },
    );
    let rate =
        |s: &Snapshot, n: u64| n as f64 / s.last.as_ref().map_or(1.0, |l| l.length_s.max(1e-9));
    family(
        &mut out,
        "kvperf_interval_operations_per_second",
        "gauge",
        "Operations per second in the last interval, by type (failed ones included).",
        snapshots,
        |s, out| {
            for (kind, op) in s.last.iter().flat_map(|l| &l.ops) {
                let name = "kvperf_interval_operations_per_second";
                line(
                    out,
                    name,
                    &s.labels,
                    &[("op", kind.name())],
                    rate(s, op.operations),
                );
            }
        },
    );
    family(
        &mut out,
        "kvperf_interval_failed_per_second",
        "gauge",
        "Failed operations per second in the last interval, by type.",
        snapshots,
        |s, out| {
            for (kind, op) in s.last.iter().flat_map(|l| &l.ops) {
                let name = "kvperf_interval_failed_per_second";
                line(
                    out,
                    name,
                    &s.labels,
                    &[("op", kind.name())],
                    rate(s, op.failed),
                );
            }
        },
    );
    // A summary as Prometheus' clients write one: quantiles over a recent
    // span (here the last interval), `_sum` and `_count` over the whole
    // window so far (so `rate(_sum) / rate(_count)` is the mean latency).
    family(
        &mut out,
        LATENCY,
        "summary",
        "Latency of successful operations, by type: quantiles of the last interval (1 = its max); sum and count since the window opened.",
        snapshots,
        |s, out| {
            for (kind, t) in &s.totals {
                let last = s.last.as_ref().and_then(|l| l.ops.get(kind));
                for (q, v) in last.into_iter().flat_map(|op| {
                    [
                        ("0.5", op.p50_us),
                        ("0.99", op.p99_us),
                        ("0.999", op.p999_us),
                        ("1", op.max_us),
                    ]
                }) {
                    if let Some(v) = v {
                        let more = [("op", kind.name()), ("quantile", q)];
                        line(out, LATENCY, &s.labels, &more, v / 1e6);
                    }
                }
                let more = [("op", kind.name())];
                let sum = format!("{LATENCY}_sum");
                line(out, &sum, &s.labels, &more, t.ok_latency_s);
                let count = format!("{LATENCY}_count");
                let ok = (t.operations - t.failed) as f64;
                line(out, &count, &s.labels, &more, ok);
            }
        },
    );
    out
}

/// One metric family: its HELP and TYPE lines, then each snapshot's samples.
pub fn family(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    snapshots: &[Snapshot],
    samples: impl Fn(&Snapshot, &mut String),
) {
    metric(out, name, kind, help);
    for s in snapshots {
        samples(s, out);
    }
}

/// One sample line: `name{labels} value`.
pub fn line(
    out: &mut String,
    name: &str,
    fixed: &BTreeMap<String, String>,
    more: &[(&str, &str)],
    value: f64,
) {
    let _ = writeln!(out, "{name}{} {value}", label_set(fixed, more));
}

pub fn metric(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `{a="x",b="y"}` from the fixed labels and these, escaped as the text
/// format asks (backslash, double quote, line feed).
pub fn label_set(fixed: &BTreeMap<String, String>, more: &[(&str, &str)]) -> String {
    let pairs: Vec<String> = fixed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(more.iter().copied())
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timeline::IntervalOp;

    #[test]
    fn counters_add_up_and_the_last_interval_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = dir.path().join("live.json");
        let live = LiveFigures::new(
            [("engine".to_string(), "rocks\"db".to_string())].into(),
            Some(mirror.clone()),
        );
        assert!(render(&[live.snapshot()]).contains("kvperf_step_info{engine=\"rocks\\\"db\"} 1"));
        // Each interval's 90 reads took 10 us each.
        let mut handed_over = OpHistograms::new();
        for _ in 0..90 {
            handed_over.record(OpKind::Read, 10_000, None, &Ok(()));
        }
        for k in 0..3 {
            live.update(
                &Interval {
                    start_s: k as f64,
                    length_s: 0.5,
                    ops: [(
                        OpKind::Read,
                        IntervalOp {
                            operations: 100,
                            failed: 10,
                            p99_us: Some(42.5),
                            ..Default::default()
                        },
                    )]
                    .into(),
                },
                &handed_over,
            );
        }
        let text = render(&[live.snapshot()]);
        // The mirror holds the same snapshot.
        let mirrored: Snapshot = serde_json::from_slice(&std::fs::read(&mirror).unwrap()).unwrap();
        assert_eq!(render(&[mirrored]), text);
        assert!(
            text.contains(
                "kvperf_operations_total{engine=\"rocks\\\"db\",op=\"read\",outcome=\"ok\"} 270\n"
            ),
            "{text}"
        );
        assert!(text.contains("kvperf_operations_total{engine=\"rocks\\\"db\",op=\"read\",outcome=\"failed\"} 30\n"), "{text}");
        assert!(
            text.contains(
                "kvperf_interval_operations_per_second{engine=\"rocks\\\"db\",op=\"read\"} 200\n"
            ),
            "{text}"
        );
        // A summary in seconds: the last interval's quantiles, the
        // window's sum and count of successful operations.
        assert!(
            text.contains("# TYPE kvperf_latency_seconds summary\n"),
            "{text}"
        );
        assert!(text.contains("kvperf_latency_seconds{engine=\"rocks\\\"db\",op=\"read\",quantile=\"0.99\"} 0.0000425\n"), "{text}");
        assert!(
            text.contains("kvperf_latency_seconds_count{engine=\"rocks\\\"db\",op=\"read\"} 270\n"),
            "{text}"
        );
        let sum: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("kvperf_latency_seconds_sum{engine=\"rocks\\\"db\",op=\"read\"} ")
            })
            .expect("a sum")
            .parse()
            .unwrap();
        assert!((sum - 270.0 * 10e-6).abs() < 270.0 * 10e-9, "{sum}");
        assert!(
            !text.contains("quantile=\"0.5\""),
            "no p50 was given: {text}"
        );
        assert!(
            text.contains("kvperf_window_elapsed_seconds{engine=\"rocks\\\"db\"} 2.5\n"),
            "{text}"
        );
    }
}
