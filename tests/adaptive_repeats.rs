//! Adaptive repeats (`repeats = { min, max, until }`): a cell runs again
//! until the 95% interval of its throughput's median is within `until`, at
//! most `max` times; a rerun decides as the first run did; a cell that
//! stops at `max` unsettled is named; bad rules are one line, exit 2.

use std::path::{Path, PathBuf};

use crate::common::{assert_input_error, kvperf, lines, plan_run};
use kvperf::measure::spread::median_interval;

/// A null-engine plan whose run entry has `repeats` as given.
fn plan(dir: &Path, repeats: &str) -> PathBuf {
    let text = format!(
        r#"
name = "adaptive"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 20000
[[configs]]
name = "driver"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
repeats = {repeats}
"#
    );
    let path = dir.join("adaptive.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Throughput of the recorded run repeats, in order.
fn run_throughputs(results: &Path) -> Vec<f64> {
    lines(results)
        .iter()
        .filter(|r| r.step.kind == "run")
        .map(|r| r.measured().unwrap().ops_per_sec)
        .collect()
}

#[test]
fn a_cell_stops_once_its_interval_is_within_the_rule_and_a_rerun_agrees() {
    let tmp = tempfile::tempdir().unwrap();
    // ±60%: six repeats of the null engine meet it unless the machine
    // doubles or halves one of them; either way the decision must be the
    // one the recorded figures give.
    let plan = plan(tmp.path(), r#"{ min = 2, max = 9, until = "60%" }"#);
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ran = run_throughputs(&results);
    assert!(
        (6..=9).contains(&ran.len()),
        "no interval before 6 repeats: {}",
        ran.len()
    );
    // Every repeat before the last ran because the ones before it were not
    // yet settled; the plan stopped at the first settled prefix or at max.
    for n in 6..ran.len() {
        let before = median_interval(&ran[..n]).unwrap();
        assert!(
            before.half_width() > 0.6,
            "repeat {} ran though {n} repeats were settled: {before:?}",
            n + 1
        );
    }
    let settled = median_interval(&ran).unwrap().half_width() <= 0.6;
    if ran.len() < 9 {
        assert!(settled, "stopped early unsettled: {ran:?}");
        assert!(
            out.stderr
                .contains("not needed, the cell's throughput is settled"),
            "{}",
            out.stderr
        );
    } else if !settled {
        assert!(out.stderr.contains("stopped at max = 9"), "{}", out.stderr);
    }

    // The report draws the cell's repeats as a bar around their mean, and
    // says so under the chart.
    let html = std::fs::read_to_string(tmp.path().join("r-report/report.html")).unwrap();
    assert!(
        html.contains("its bar: lowest to highest repeat"),
        "no caption saying what the bars are"
    );
    assert!(
        html.contains(": lowest to highest repeat "),
        "no error bar drawn"
    );

    // A rerun of the same plan on the same results runs nothing more.
    let again = plan_run(tmp.path(), &plan, &results);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        run_throughputs(&results).len(),
        ran.len(),
        "{}",
        again.stderr
    );
}

#[test]
fn a_cell_that_never_settles_runs_max_repeats_and_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    // 0.001%: no machine repeats a run that closely.
    let plan = plan(tmp.path(), r#"{ min = 3, max = 6, until = "0.001%" }"#);
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(run_throughputs(&results).len(), 6);
    assert!(
        out.stderr
            .contains("1 cell(s) stopped at their max repeats without settling"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "c (config driver, 1 threads): stopped at max = 6 repeats without reaching ±0.001%"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_rules_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (repeats, needle) in [
        (
            r#"{ min = 3, max = 5, until = "5%" }"#,
            "max = 5 cannot stop on an interval: a 95% interval of the median needs 6 repeats",
        ),
        (
            r#"{ min = 3, max = 10, until = "5" }"#,
            "repeats.until = \"5\": a percentage above 0 and below 100",
        ),
        (
            r#"{ min = 7, max = 6, until = "5%" }"#,
            "min (7) must be at least 1 and max (6) at least min",
        ),
        (r#""many""#, "is neither a count (repeats = 5) nor a rule"),
        ("0", "repeats must be at least 1"),
    ] {
        let plan = plan(tmp.path(), repeats);
        let out = kvperf(tmp.path(), &["plan", "show", &plan.display().to_string()]);
        assert_input_error(&out, needle);
    }
}
