//! `kvperf compare BASE NEW`: verdicts with 95% confidence over repeats,
//! and the regression gate `--fail-if-slower PCT` (exit code 4), through
//! the real binary.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{assert_input_error, kvperf};

/// A results file of one config, workload A at 8 threads: one record per
/// repeat, with its throughput and 100 reads of its latency (us).
pub(crate) fn results(dir: &Path, file: &str, repeats: &[(f64, u64)]) -> PathBuf {
    results_at(dir, file, 8, repeats)
}

/// [`results`] at `threads` threads.
fn results_at(dir: &Path, file: &str, threads: u64, repeats: &[(f64, u64)]) -> PathBuf {
    let mut text = String::new();
    for (i, (ops, read_us)) in repeats.iter().enumerate() {
        let mut r = common::run_record("kv", "a", threads, *ops, &vec![read_us * 1000; 100]);
        r.step.repeat = i as u32 + 1;
        r.step.id = format!("kv/a-t{threads}-r{}", i + 1);
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

pub(crate) fn compare(dir: &Path, base: &Path, new: &Path, extra: &[&str]) -> common::Output {
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
    let out = compare(
        tmp.path(),
        &base,
        &new,
        &["--fail-if-slower", "5%", "--format", "md", "--detail"],
    );
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
            .contains("| Workload A | 8 | read p99 us, actual start | 102 | 128 | +25%"),
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
    // With --detail the report follows the verdicts.
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
    let out = compare(
        tmp.path(),
        &base,
        &new,
        &["--fail-if-slower", "5%", "--format", "md"],
    );
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
    let out = compare(
        tmp.path(),
        &base,
        &new,
        &["--fail-if-slower", "15", "--format", "md"],
    );
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
    assert_eq!(v["comparisons"][1]["figure"], "read p99 us, actual start");
    assert_eq!(v["comparisons"][1]["latency_from"], "actual");
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
    let out = compare(tmp.path(), &base, &new, &["--format", "md"]);
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

#[test]
fn compare_prints_one_line_per_cell_like_hyperfine_and_detail_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    let new = results(tmp.path(), "new.jsonl", &scaled(0.8));
    let out = compare(tmp.path(), &base, &new, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one compared cell: {}", out.stdout);
    // One voice: a loss is "1.25x lower", never "0.80x".
    assert!(
        lines[0].starts_with(
            "new:kv: 1.25x lower throughput than base:kv [-22%, -18%] slower, read p99 (actual start) 1.25x higher ["
        ) && lines[0].ends_with("] slower (Workload A, 8 threads)"),
        "{}",
        lines[0]
    );
    assert!(!out.stdout.contains("0.8"), "{}", out.stdout);
    // Placeholders of absent facts never print, with or without detail.
    let detail = compare(tmp.path(), &base, &new, &["--detail"]);
    assert_eq!(detail.code, 0, "{}", detail.stderr);
    assert!(detail.stdout.starts_with(lines[0]), "{}", detail.stdout);
    assert!(
        detail.stdout.contains("peak improvement"),
        "{}",
        detail.stdout
    );
    for placeholder in ["fingerprint )", "(fingerprint )", "across 0 thread counts"] {
        assert!(
            !detail.stdout.contains(placeholder),
            "{placeholder}: {}",
            detail.stdout
        );
    }
    // A faster build reads as a multiple of the base's throughput.
    let faster = results(tmp.path(), "faster.jsonl", &scaled(1.25));
    let out = compare(tmp.path(), &base, &faster, &[]);
    assert!(
        out.stdout
            .starts_with("faster:kv: 1.25x the throughput of base:kv [+2")
            && out
                .stdout
                .contains("] faster, read p99 (actual start) 1.25x lower [-")
            && out.stdout.ends_with("] faster (Workload A, 8 threads)\n"),
        "{}",
        out.stdout
    );
    // Too few repeats: said once, no interval.
    let one = results(tmp.path(), "one.jsonl", &BASE[..1]);
    let out = compare(tmp.path(), &one, &faster, &[]);
    assert!(
        out.stdout.contains(
            "(Workload A, 8 threads); 5 and 1 repeats: judging at 95% needs \u{2265} 4 of each"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn compare_writes_csv_and_refuses_detail_where_it_has_no_place() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    let new = results(tmp.path(), "new.jsonl", &scaled(0.8));
    let out = compare(tmp.path(), &base, &new, &["--format", "csv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "config,workload,threads,figure,base,new,base_repeats,new_repeats,ratio,ci_low,ci_high,verdict"
    );
    assert_eq!(lines.len(), 4, "ops/s, p99, p99.9: {}", out.stdout);
    let fields: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(
        fields[..4],
        ["new:kv", "Workload A", "8", "ops/s"],
        "{}",
        lines[1]
    );
    let number = |i: usize| fields[i].parse::<f64>().unwrap();
    assert!((number(4) - 100_000.0).abs() < 1.0 && (number(5) - 80_000.0).abs() < 1.0);
    assert_eq!(fields[6..8], ["5", "5"]);
    assert!((number(8) - 0.8).abs() < 0.005 && number(9) < number(8) && number(8) < number(10));
    assert_eq!(fields[11], "slower", "{}", lines[1]);
    let out = compare(tmp.path(), &base, &new, &["--format", "json", "--detail"]);
    assert_input_error(&out, "--detail adds the report to --format text or md");
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

#[test]
fn runs_at_different_thread_counts_are_not_compared_and_it_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &BASE);
    // The same workload, at 16 threads instead of 8.
    let new = results_at(tmp.path(), "new.jsonl", 16, &BASE);
    let out = compare(tmp.path(), &base, &new, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("no cell in common with base")
            && out.stdout.contains("at 8 threads")
            && out.stdout.contains("at 16 threads"),
        "{}",
        out.stdout
    );
}

/// A plan of two configurations on the null engine, workload C at 2
/// threads, 4 repeats each: `unpaced` as fast as it goes, `paced` at a
/// target rate (so it records latency from the intended start too).
fn paced_and_unpaced(dir: &Path) -> PathBuf {
    let plan = dir.join("pacing.toml");
    std::fs::write(
        &plan,
        r#"
name = "pacing"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 4000
[[configs]]
name = "unpaced"
[[configs]]
name = "paced"
properties = { target = "8000" }
[[steps]]
workloads = ["c"]
threads = [2]
repeats = 4
"#,
    )
    .unwrap();
    let results = dir.join("pacing.jsonl");
    let out = common::plan_run(dir, &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    results
}

/// p99 of the reads of every record of `config`, from the actual start
/// (`intended`: from the intended start), microseconds, as kvperf adds
/// repeats: histograms added.
fn p99_of(results: &Path, config: &str, intended: bool) -> f64 {
    let mut sum: Option<hdrhistogram::Histogram<u64>> = None;
    for r in common::lines(results)
        .iter()
        .filter(|r| r.step.config == config)
    {
        let read = &r.measured().unwrap().ops[&kvperf::measure::OpKind::Read];
        let latency = match intended {
            true => read.intended.as_ref().expect("a paced step records it"),
            false => &read.latency,
        };
        match &mut sum {
            Some(s) => s.add(latency.histogram.get()).unwrap(),
            None => sum = Some(latency.histogram.get()),
        }
    }
    sum.unwrap().value_at_quantile(0.99) as f64 / 1000.0
}

#[test]
fn a_paced_and_an_unpaced_run_are_compared_like_for_like_with_each_kind_named() {
    let tmp = tempfile::tempdir().unwrap();
    let results = paced_and_unpaced(tmp.path());
    let shown = results.display().to_string();
    // The paced side's two kinds differ (a null read takes nanoseconds,
    // its wait for the due time does not): a test that could fail.
    let (actual, intended) = (
        p99_of(&results, "paced", false),
        p99_of(&results, "paced", true),
    );
    assert!(
        intended > actual,
        "intended {intended} us, actual {actual} us"
    );
    let out = kvperf(tmp.path(), &["compare", &shown, "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let p99 = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["figure"] == "read p99 us, actual start")
        .unwrap_or_else(|| panic!("no actual-start p99 row: {}", out.stdout));
    assert_eq!(p99["latency_from"], "actual");
    assert_eq!(p99["paced"]["new"], true);
    assert_eq!(p99["paced"]["base"], false);
    // Both sides from the actual start: the paced side's figure is its
    // actual-start p99, not its intended-start one.
    let new = p99["new"]["value"].as_f64().unwrap();
    assert!((new - actual).abs() < 1e-9, "{new} vs actual {actual}");
    assert!(
        (p99["base"]["value"].as_f64().unwrap() - p99_of(&results, "unpaced", false)).abs() < 1e-9,
        "{p99}"
    );
    // With 4 repeats a side, a verdict, not a bare ratio.
    assert_ne!(p99["verdict"], "need_repeats", "{p99}");
    assert!(
        !out.stdout.contains("intended start"),
        "no intended figure: {}",
        out.stdout
    );
    // The text line names the kind and says why.
    let out = kvperf(tmp.path(), &["compare", &shown]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("read p99 (actual start) ")
            && out.stdout.contains(
                "; latency from the actual start on both sides: paced ran paced (a target rate), unpaced did not"
            ),
        "{}",
        out.stdout
    );
    // The Markdown verdicts and tables say the same.
    let out = kvperf(
        tmp.path(),
        &["compare", &shown, "--format", "md", "--detail"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("| read p99 us, actual start |"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("read latency (us, from the actual start) vs #Threads"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Some cells of this workload ran paced"),
        "{}",
        out.stdout
    );
}

#[test]
fn two_paced_runs_are_compared_from_the_intended_start() {
    let tmp = tempfile::tempdir().unwrap();
    let results = paced_and_unpaced(tmp.path());
    // The paced configuration against itself, as two files.
    let text = std::fs::read_to_string(&results).unwrap();
    let paced: String = text
        .lines()
        .filter(|l| l.contains("\"config\":\"paced\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(paced.lines().count(), 4, "{text}");
    let (a, b) = (tmp.path().join("a.jsonl"), tmp.path().join("b.jsonl"));
    std::fs::write(&a, &paced).unwrap();
    std::fs::write(&b, &paced).unwrap();
    let out = compare(tmp.path(), &a, &b, &["--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let p99 = &v["comparisons"][1];
    assert_eq!(p99["figure"], "read p99 us, intended start", "{p99}");
    let intended = p99_of(&a, "paced", true);
    assert!(
        (p99["base"]["value"].as_f64().unwrap() - intended).abs() < 1e-9,
        "{p99}"
    );
}

#[test]
fn verdict_names_the_latency_kind_and_refuses_two_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let figures = [
        "--base",
        "50,52,49,51",
        "--new",
        "1300,1500,1400,1600",
        "--better",
        "lower",
    ];
    let mut args = vec!["verdict"];
    args.extend(figures);
    args.extend([
        "--base-latency-from",
        "actual",
        "--new-latency-from",
        "intended",
    ]);
    let out = kvperf(tmp.path(), &args);
    assert_input_error(
        &out,
        "--base-latency-from actual and --new-latency-from intended",
    );
    let mut args = vec!["verdict"];
    args.extend(figures);
    args.extend([
        "--base-latency-from",
        "actual",
        "--new-latency-from",
        "actual",
    ]);
    let out = kvperf(tmp.path(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("latency from the actual start, both sides: new/base "),
        "{}",
        out.stdout
    );
    let out = kvperf(
        tmp.path(),
        &[
            "verdict",
            "--base",
            "1,2,3,4",
            "--new",
            "1,2,3,4",
            "--new-latency-from",
            "actual",
        ],
    );
    assert_input_error(&out, "or neither");
}

#[test]
fn a_p99_of_under_100_operations_is_said_to_be_their_maximum() {
    let tmp = tempfile::tempdir().unwrap();
    // One repeat a side, 50 reads each: p99 is the slowest read.
    let file = |name: &str, read_us: u64| {
        let r = common::run_record("kv", "a", 8, 100_000.0, &vec![read_us * 1000; 50]);
        let path = tmp.path().join(name);
        std::fs::write(&path, format!("{}\n", serde_json::to_string(&r).unwrap())).unwrap();
        path
    };
    let (base, new) = (file("base.jsonl", 100), file("new.jsonl", 200));
    let out = compare(tmp.path(), &base, &new, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "read p99 (actual start; of under 100 operations: their maximum) 2.00x higher"
        ),
        "{}",
        out.stdout
    );
    let out = compare(tmp.path(), &base, &new, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["comparisons"][1]["new"]["operations"], 50);
    assert_eq!(v["comparisons"][1]["new"]["too_few_operations"], true);
    // The verdict table marks both sides' p99.
    let out = compare(tmp.path(), &base, &new, &["--format", "md"]);
    assert!(
        out.stdout
            .contains("| read p99 us, actual start | 100 \u{b6} | 200 \u{b6} |"),
        "{}",
        out.stdout
    );
}
