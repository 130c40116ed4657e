//! Time-resolved results through the real binary: every measured window
//! carries a timeline whose intervals add up to the window's totals, and
//! `-p hdrhistogram.fileoutput=true` writes YCSB's HdrHistogram interval
//! logs, which HdrHistogram's own log reader reads and whose intervals add
//! up to the step's histogram.

use crate::common;

use std::path::Path;

use crate::common::{assert_input_error, run_null};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;
use kvperf::measure::interval_log::to_micros;
use kvperf::measure::timeline::Percentiles;
use kvperf::measure::{hdr, new_histogram, OpKind};
use kvperf::results::step::StepOutput;

fn read_output(path: &Path) -> StepOutput {
    StepOutput::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every interval histogram of an interval log, summed, and how many.
fn sum_of_log(path: &Path) -> (Histogram<u64>, usize) {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sum = new_histogram();
    let mut n = 0;
    for entry in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(i) = entry.expect("HdrHistogram's reader parses the log") {
            sum.add(hdr::decode(i.encoded_histogram()).unwrap())
                .unwrap();
            n += 1;
        }
    }
    (sum, n)
}

/// A histogram's recorded buckets: (value, count), in order.
fn recorded(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[test]
fn a_timed_run_has_a_timeline_and_interval_logs_that_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_null(
        dir.path(),
        "a",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=3",
            "-threads",
            "2",
            "-p",
            "hdrhistogram.fileoutput=true",
            "-p",
            "hdrhistogram.output.path=logs-",
            "--format",
            "json",
            "--output",
            "out.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = read_output(&dir.path().join("out.json"));
    let m = step.measured().expect("a measured window");
    let timeline = m.timeline.as_ref().expect("a timeline");
    assert_eq!(timeline.percentiles, Percentiles::Exact);
    // A 3 s window in one-second intervals (the last one may be short).
    let n = timeline.intervals.len();
    assert!((3..=4).contains(&n), "{n} intervals: {timeline:?}");
    let covered: f64 = timeline.intervals.iter().map(|i| i.length_s).sum();
    assert!(
        (covered - m.runtime_s).abs() < 0.5,
        "{covered} s of {} s",
        m.runtime_s
    );
    for w in timeline.intervals.windows(2) {
        assert!((w[0].start_s + w[0].length_s - w[1].start_s).abs() < 1e-9);
    }
    for kind in [OpKind::Read, OpKind::Update] {
        let in_intervals: u64 = timeline
            .intervals
            .iter()
            .filter_map(|i| i.ops.get(&kind))
            .map(|o| o.operations)
            .sum();
        let stats = &m.ops[&kind];
        assert_eq!(
            in_intervals,
            stats.returns.values().sum::<u64>(),
            "{kind:?}"
        );
        assert!(in_intervals > 0);
        // The logs: one interval per timeline interval, adding up to the
        // step's histogram in microseconds, count for count.
        let (sum, lines) = sum_of_log(&dir.path().join(format!("logs-{}.hdr", kind.ycsb_name())));
        assert_eq!(lines, n, "{kind:?}");
        assert_eq!(
            recorded(&sum),
            recorded(&to_micros(&stats.latency.histogram.get())),
            "{kind:?}"
        );
    }
    assert!(
        out.stderr.contains("interval logs written"),
        "{}",
        out.stderr
    );
    // No failures, so no -FAILED logs; no target, so no Intended- logs.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".hdr"))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_users_file_where_a_log_would_go_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("READ.hdr");
    std::fs::write(&notes, "my own notes\n").unwrap();
    let out = run_null(
        dir.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=1000",
            "-p",
            "hdrhistogram.fileoutput=true",
        ],
    );
    assert_input_error(&out, "READ.hdr");
    assert!(out.stdout.is_empty(), "measured anyway: {}", out.stdout);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my own notes\n");
}

#[test]
fn a_second_run_replaces_kvperfs_own_logs() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=2000",
        "-p",
        "hdrhistogram.fileoutput=true",
    ];
    for _ in 0..2 {
        let out = run_null(dir.path(), "c", &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let (sum, _) = sum_of_log(&dir.path().join("READ.hdr"));
    assert_eq!(sum.len(), 2000);
}

#[test]
fn the_report_draws_each_step_over_time_and_writes_the_timeline_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_null(
        dir.path(),
        "b",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=3",
            "--format",
            "json",
            "--output",
            "b.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = common::kvperf(
        dir.path(),
        &[
            "report",
            "b.json",
            "--out",
            "report",
            "--timeline",
            "timeline.csv",
        ],
    );
    assert_eq!(report.code, 0, "{}", report.stderr);
    let step = read_output(&dir.path().join("b.json"));
    let m = step.measured().unwrap();
    let csv = std::fs::read_to_string(dir.path().join("timeline.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (op, operations) = (col("op"), col("operations"));
    let mut reads = 0u64;
    let mut rows = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[op] == "read" {
            reads += cells[operations].parse::<u64>().unwrap();
        }
        rows += 1;
    }
    assert_eq!(reads, m.ops[&OpKind::Read].returns.values().sum::<u64>());
    assert!(rows >= 6, "{rows} rows: {csv}");
    let html = std::fs::read_to_string(dir.path().join("report/report.html")).unwrap();
    assert!(html.contains("<details><summary>"), "no collapsed step");
    assert!(
        html.contains("READ latency (actual start), us"),
        "no latency-over-time chart"
    );
    // A second report may replace the CSV kvperf wrote, never a user's file.
    std::fs::write(dir.path().join("mine.csv"), "a,b\n1,2\n").unwrap();
    let refused = common::kvperf(
        dir.path(),
        &[
            "report",
            "b.json",
            "--out",
            "report",
            "--timeline",
            "mine.csv",
        ],
    );
    assert_input_error(&refused, "mine.csv");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.csv")).unwrap(),
        "a,b\n1,2\n"
    );
}
