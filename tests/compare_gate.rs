//! `kvperf compare BASE NEW`: verdicts with 95% confidence over repeats,
//! and the regression gate `--fail-if-slower PCT` (exit code 4), through
//! the real binary.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_input_error, kvperf};

/// A results file of one config, workload A at 8 threads: one record per
/// repeat, with its throughput and 100 reads of its latency (us).
fn results(dir: &Path, file: &str, repeats: &[(f64, u64)]) -> PathBuf {
    let mut text = String::new();
    for (i, (ops, read_us)) in repeats.iter().enumerate() {
        let mut r = common::run_record("kv", "a", 8, *ops, &vec![read_us * 1000; 100]);
        r.step.repeat = i as u32 + 1;
        r.step.id = format!("kv/a-t8-r{}", i + 1);
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

const BASE: [(f64, u64); 5] = [
    (100_000.0, 100),
    (102_000.0, 102),
    (98_000.0, 98),
    (101_000.0, 101),
    (99_000.0, 99),
];

/// BASE's figures times `factor` (throughput) and divided by it (latency).
fn scaled(factor: f64) -> Vec<(f64, u64)> {
    BASE.iter()
        .map(|(ops, us)| (ops * factor, (*us as f64 / factor).round() as u64))
        .collect()
}

fn compare(dir: &Path, base: &Path, new: &Path, extra: &[&str]) -> common::Output {
    let mut args = vec![
        "compare".to_string(),
        base.display().to_string(),
        new.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    kvperf(dir, &args)
}

#[test]
fn a_20_percent_slower_build_fails_the_gate_with_exit_code_4() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    let new = results(tmp.path(), "new.jsonl", &scaled(0.8));
    let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", "5%"]);
    assert_eq!(
        out.code, 4,
        "stderr: {}\nstdout: {}",
        out.stderr, out.stdout
    );
    assert!(
        out.stdout.contains(
            "| Workload A | 8 | ops/s | 100,000 (5x) | 80,000 (5x) | -20% [-22%, -18%] | **slower** |"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("| Workload A | 8 | read p99 us | 102 | 128 | +25%"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "**Gate --fail-if-slower 5%: failed.** 3 of 3 judged figures slower by more than 5%"
        ),
        "{}",
        out.stdout
    );
    // The report follows the verdicts.
    assert!(out.stdout.contains("peak improvement"), "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with(
            "kvperf: --fail-if-slower: 3 of 3 judged figures slower by more than 5% with 95% confidence: \
             Workload A at 8 threads, ops/s (new:kv): -20% ["
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn the_same_figures_in_another_order_pass_the_gate_as_no_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    let mut shuffled = BASE.to_vec();
    shuffled.rotate_left(2);
    let new = results(tmp.path(), "new.jsonl", &shuffled);
    let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", "5%"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "| Workload A | 8 | ops/s | 100,000 (5x) | 100,000 (5x) | 0.0% [-2.9%, +3.0%] | \\~ |"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("**Gate --fail-if-slower 5%: passed.**"),
        "{}",
        out.stdout
    );
}

#[test]
fn slower_with_confidence_but_within_the_limit_passes_and_fails_a_tighter_one() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    // 10% slower: the interval, about [-12%, -8%], is not wholly past -15%.
    let new = results(tmp.path(), "new.jsonl", &scaled(0.9));
    let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", "15"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("**slower**"), "{}", out.stdout);
    let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", "5%"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    // Without a gate the verdicts are printed and the exit is 0.
    let out = compare(tmp.path(), &base, &new, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn json_gives_every_verdict_and_the_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    let new = results(tmp.path(), "new.jsonl", &scaled(1.25));
    let out = compare(
        tmp.path(),
        &base,
        &new,
        &["--fail-if-slower", "5%", "--format", "json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["base"], "base:kv");
    assert_eq!(v["configs"][0], "new:kv");
    assert_eq!(v["min_repeats"], 4);
    let first = &v["comparisons"][0];
    assert_eq!(first["figure"], "ops/s");
    assert_eq!(first["verdict"], "faster");
    assert_eq!(first["base"]["repeats"], 5);
    let (low, high) = (
        first["interval"]["low"].as_f64().unwrap(),
        first["interval"]["high"].as_f64().unwrap(),
    );
    assert!(low > 1.2 && high < 1.3 && low < high, "{first}");
    assert!(first["interval"]["confidence"].as_f64().unwrap() >= 0.95);
    assert_eq!(v["comparisons"][1]["figure"], "read p99 us");
    assert_eq!(v["comparisons"][1]["verdict"], "faster");
    assert_eq!(v["gate"]["passed"], true);
    assert_eq!(v["gate"]["judged"], 3);
}

#[test]
fn a_gate_that_cannot_judge_is_refused_and_bad_limits_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE[..1]);
    let new = results(tmp.path(), "new.jsonl", &scaled(0.5)[..1]);
    // One repeat each: shown as undecided; no gate, no failure.
    let out = compare(tmp.path(), &base, &new, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("| Workload A | 8 | ops/s | 100,000 (1x) | 50,000 (1x) | -50% (1 and 1 repeats) | need \u{2265} 4 repeats |"),
        "{}",
        out.stdout
    );
    let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", "5%"]);
    assert_input_error(&out, "--fail-if-slower cannot judge");
    for bad in ["abc", "150%", "NaN"] {
        let out = compare(tmp.path(), &base, &new, &["--fail-if-slower", bad]);
        assert_input_error(&out, "not a limit in percent");
    }
}

/// `kvperf verdict` judges plain figures (bench scripts' runs) as compare
/// judges cells: the same ratio, interval and verdicts.
#[test]
fn verdict_judges_plain_figures_as_compare_judges_cells() {
    let tmp = tempfile::tempdir().unwrap();
    let list = |factor: f64| -> String {
        BASE.iter()
            .map(|(ops, _)| (ops * factor).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let judge = |base: &str, new: &str, extra: &[&str]| {
        let mut args = vec!["verdict", "--base", base, "--new", new];
        args.extend_from_slice(extra);
        kvperf(tmp.path(), &args)
    };
    let faster = judge(&list(1.0), &list(1.2), &["--format", "json"]);
    assert_eq!(faster.code, 0, "{}", faster.stderr);
    let v: serde_json::Value = serde_json::from_str(&faster.stdout).unwrap();
    assert!((v["ratio"].as_f64().unwrap() - 1.2).abs() < 1e-9, "{v}");
    assert_eq!(v["verdict"], "faster", "{v}");
    assert!(v["interval"]["low"].as_f64().unwrap() > 1.0, "{v}");
    // Lower is better (latency): the same figures are slower.
    let slower = judge(&list(1.0), &list(1.2), &["--better", "lower"]);
    assert!(slower.stdout.ends_with(": slower\n"), "{}", slower.stdout);
    // The same figures: no difference.
    let same = judge(&list(1.0), &list(1.0), &[]);
    assert!(
        same.stdout.starts_with("new/base 1.000x [") && same.stdout.ends_with(": ~\n"),
        "{}",
        same.stdout
    );
    let few = judge("100,101,99", "120,121,119", &[]);
    assert_eq!(few.code, 0, "{}", few.stderr);
    assert_eq!(
        few.stdout,
        "new/base 1.200x: need \u{2265} 4 repeats (have 3 and 3)\n"
    );
    assert_input_error(&judge("100,x", "1", &[]), "'x' is not a positive number");
    assert_input_error(&judge("100,-1", "1", &[]), "'-1' is not a positive number");
}
