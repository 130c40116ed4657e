//! What the report's charts draw, read back from their SVG: throughput
//! over time is each timeline interval's operations / its length at its
//! midpoint, for every repeat, each named; the throughput chart's dot and
//! bar are the mean and the lowest-to-highest of the same repeats.

use std::path::{Path, PathBuf};

use crate::common::{lines, plan_run, report, run_record};
use kvperf::measure::timeline::{Interval, IntervalOp, Percentiles, Timeline};
use kvperf::measure::OpKind;
use kvperf::results::Record;

/// The `<svg>` whose title is `title`, whole.
fn svg_titled<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html
        .find(&format!("<title>{title}</title>"))
        .unwrap_or_else(|| {
            let titles: Vec<&str> = html
                .split("<title>")
                .skip(1)
                .map(|t| &t[..t.find('<').unwrap()])
                .collect();
            panic!("no chart titled `{title}` among {titles:?}")
        });
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap();
    &html[start..end]
}

/// Points of a line, in order.
type Points = Vec<(f64, f64)>;

/// A polyline's drawn points and the values behind them, in order.
fn line_of(svg: &str) -> (Points, Points) {
    let attr = |name: &str| -> Points {
        let key = format!("{name}=\"");
        let from = svg.find("<polyline").expect("a line")
            + svg[svg.find("<polyline").unwrap()..]
                .find(&key)
                .unwrap_or_else(|| panic!("no {name} in {svg}"))
            + key.len();
        let text = &svg[from..from + svg[from..].find('"').unwrap()];
        text.split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    };
    (attr("points"), attr("data-values"))
}

/// The drawing is one linear map of the values per axis: pixel offsets
/// from the first point are proportional to value offsets.
fn assert_drawn_linearly(drawn: &[(f64, f64)], values: &[(f64, f64)]) {
    assert_eq!(drawn.len(), values.len());
    let scale = |axis: fn(&(f64, f64)) -> f64| -> Vec<Option<f64>> {
        drawn
            .iter()
            .zip(values)
            .skip(1)
            .map(|(d, v)| {
                let dv = axis(v) - axis(&values[0]);
                (dv.abs() > 1e-9).then(|| (axis(d) - axis(&drawn[0])) / dv)
            })
            .collect()
    };
    for (axis, scales) in [("x", scale(|p| p.0)), ("y", scale(|p| p.1))] {
        let known: Vec<f64> = scales.into_iter().flatten().collect();
        let Some(first) = known.first() else { continue };
        for s in &known {
            // Pixels are printed to 0.1: allow that rounding.
            assert!(
                (s - first).abs() <= first.abs() * 0.02 + 0.05,
                "{axis} not drawn to one scale: {known:?}"
            );
        }
    }
}

/// (midpoint, operations / length) of every interval a chart draws.
fn rates(t: &Timeline) -> Vec<(f64, f64)> {
    t.intervals
        .iter()
        .filter(|i| i.length_s >= t.interval_s * 0.5)
        .map(|i| {
            (
                i.start_s + i.length_s / 2.0,
                i.operations() as f64 / i.length_s,
            )
        })
        .collect()
}

fn assert_close(got: &[(f64, f64)], want: &[(f64, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(near(g.0, w.0) && near(g.1, w.1), "{got:?} vs {want:?}");
    }
}

/// A null-engine plan: a load, then workload C timed for 3 s, twice.
fn timed_plan(dir: &Path) -> PathBuf {
    let text = r#"
name = "charts"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 1000000000
maxexecutiontime = 3
[[configs]]
name = "driver"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [2]
repeats = 2
"#;
    let path = dir.join("charts.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn each_repeat_is_drawn_at_its_intervals_real_rates_and_times() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = timed_plan(tmp.path());
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs: Vec<Record> = lines(&results)
        .into_iter()
        .filter(|r| r.step.kind == "run")
        .collect();
    assert_eq!(runs.len(), 2);
    let out_dir = tmp.path().join("report");
    report(tmp.path(), &results, &out_dir);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    for (r, run) in runs.iter().enumerate() {
        let m = run.measured().unwrap();
        let t = m.timeline.as_ref().expect("a timeline");
        // One source: the results' per-interval counts are the timeline's,
        // and the timeline ends where the window ends.
        let counts: Vec<u64> = t.intervals.iter().map(Interval::operations).collect();
        assert_eq!(m.intervals, counts);
        let last = t.intervals.last().unwrap();
        assert!(
            (last.start_s + last.length_s - m.runtime_s).abs() < 1e-3,
            "timeline ends at {} s, the window at {} s",
            last.start_s + last.length_s,
            m.runtime_s
        );
        let svg = svg_titled(
            &html,
            &format!("driver, 2 threads, repeat {} of 2: ops/s", r + 1),
        );
        let (drawn, values) = line_of(svg);
        assert!(values.len() >= 2, "{values:?}");
        assert_close(&values, &rates(t));
        assert_drawn_linearly(&drawn, &values);
        assert!(
            svg.contains("an interval&#39;s operations / its length, at its midpoint")
                || svg.contains("an interval's operations / its length, at its midpoint")
        );
    }
}

/// A run whose intervals last 0.77 to 1.24 s, as a loaded machine cuts them.
fn uneven_record() -> Record {
    let mut r = run_record("uneven", "c", 4, 1000.0, &[1_000; 10]);
    let spans = [
        (0.0, 0.77),
        (0.77, 1.24),
        (2.01, 0.9),
        (2.91, 1.1),
        (4.01, 0.2),
    ];
    let counts = [770u64, 1488, 990, 1045, 100];
    let timeline = Timeline {
        interval_s: 1.0,
        percentiles: Percentiles::Exact,
        intervals: spans
            .iter()
            .zip(counts)
            .map(|(&(start_s, length_s), n)| Interval {
                start_s,
                length_s,
                ops: [(
                    OpKind::Read,
                    IntervalOp {
                        operations: n,
                        p99_us: Some(10.0),
                        p999_us: Some(20.0),
                        ..Default::default()
                    },
                )]
                .into(),
            })
            .collect(),
    };
    let m = &mut r.output.measurements[0];
    m.runtime_s = 4.21;
    m.intervals = counts.to_vec();
    m.timeline = Some(timeline);
    r
}

#[test]
fn uneven_intervals_are_drawn_as_count_over_length_at_their_midpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.jsonl");
    let record = uneven_record();
    std::fs::write(&results, serde_json::to_string(&record).unwrap() + "\n").unwrap();
    let out_dir = tmp.path().join("report");
    report(tmp.path(), &results, &out_dir);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    let svg = svg_titled(&html, "uneven, 4 threads, repeat 1 of 1: ops/s");
    let (drawn, values) = line_of(svg);
    // 770 in 0.77 s is 1,000/s at 0.385 s, not 770/s at 1 s; the 0.2 s
    // tail is too short to be a rate and is left out.
    let want = [
        (0.385, 1000.0),
        (1.39, 1200.0),
        (2.46, 1100.0),
        (3.46, 950.0),
    ];
    assert_close(&values, &want);
    assert_drawn_linearly(&drawn, &values);
    // The latency chart is on the same clock: midpoints too.
    // It names its latency kind (timelines are from the actual start), in
    // the title, the y axis and the caption.
    let latency = svg_titled(
        &html,
        "uneven, 4 threads, repeat 1 of 1: READ latency (actual start), us",
    );
    assert!(latency.contains(">us, actual start"), "{latency}");
    assert!(
        latency.contains("percentile, from the actual start"),
        "{latency}"
    );
    let (_, p99) = line_of(latency);
    let xs: Vec<f64> = p99.iter().map(|p| p.0).collect();
    assert_close(
        &xs.iter().map(|x| (*x, 0.0)).collect::<Vec<_>>(),
        &want.iter().map(|w| (w.0, 0.0)).collect::<Vec<_>>(),
    );
}

#[test]
fn the_throughput_dot_is_the_mean_and_its_bar_the_repeats_range_from_two() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.jsonl");
    let mut text = String::new();
    for (repeat, ops) in [(1, 900.0), (2, 1500.0)] {
        let mut r = run_record("two", "c", 4, ops, &[1_000; 10]);
        r.step.repeat = repeat;
        r.step.id = format!("two/c-t4-r{repeat}");
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    std::fs::write(&results, text).unwrap();
    let out_dir = tmp.path().join("report");
    report(tmp.path(), &results, &out_dir);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    let svg = svg_titled(&html, "Workload C: throughput");
    let (_, values) = line_of(svg);
    assert_eq!(values, vec![(4.0, 1200.0)], "the dot is the mean");
    assert!(
        svg.contains("two: lowest to highest repeat 900 to 1.5k"),
        "a bar from 2 repeats, lowest to highest: {svg}"
    );
    assert!(
        svg.contains(
            "the mean ops/s of the cell&#39;s 2 repeats; its bar: lowest to highest repeat"
        ) || svg
            .contains("the mean ops/s of the cell's 2 repeats; its bar: lowest to highest repeat"),
        "the caption says which statistic: {svg}"
    );
}
