//! The ninth hostile pass, the files side (docs/reliability.md, "Pass 9:
//! files"): what pass 8 built around a plan's own files (its results file,
//! its report directory, its hold on its stores), probed again. Each case
//! failed on the main of 2026-11-29 (31ece17).

use std::path::{Path, PathBuf};

use crate::common::{self, Output};

/// An LMDB plan on `--db lmdb=...`: a load of 20 000 records and a run of
/// workload C lasting one second.
fn lmdb_plan(dir: &Path) -> PathBuf {
    let path = dir.join("lm.toml");
    std::fs::write(
        &path,
        r#"name = "lm"
driver = "ycsb"
settle = false
[properties]
recordcount = 20000
operationcount = 1000000000000
maxexecutiontime = 1
[[configs]]
name = "lmdb"
engine = "lmdb"
[[steps]]
load = true
workloads = ["c"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
    )
    .unwrap();
    path
}

#[test]
fn two_plans_started_together_on_one_new_results_file_lose_neither_ones_results() {
    // On 31ece17 the plan refused ("in use by another kvperf plan run")
    // had found no results file when it started, so it removed the one
    // the other plan had made meanwhile as its own empty file: the other
    // plan ran on, appending into a file no name led to, and ended
    // "complete: 2 steps in 'r.jsonl'", exit 0, with no r.jsonl (4 pairs
    // of 6). Each pair here starts both at once; whichever runs keeps its
    // records.
    for pair in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let plan = lmdb_plan(dir.path());
        let plan = plan.to_str().unwrap();
        let run = |name: &str| -> Output {
            let db = format!(
                "lmdb={}",
                dir.path().join(format!("store-{name}")).display()
            );
            common::kvperf(
                dir.path(),
                &[
                    "plan",
                    "run",
                    plan,
                    "--db",
                    &db,
                    "--results",
                    "r.jsonl",
                    "--report",
                    &format!("report-{name}"),
                ],
            )
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| run("a"));
            let b = s.spawn(|| run("b"));
            (a.join().unwrap(), b.join().unwrap())
        });
        let results = dir.path().join("r.jsonl");
        for (name, out) in [("a", &a), ("b", &b)] {
            match out.code {
                0 => {
                    assert!(
                        results.exists(),
                        "pair {pair}: plan {name} ended well, but its results file is gone: {}",
                        out.stderr
                    );
                    assert_eq!(common::lines(&results).len(), 2, "pair {pair}");
                    assert!(
                        dir.path().join(format!("report-{name}/report.md")).exists(),
                        "pair {pair}: {}",
                        out.stderr
                    );
                }
                _ => common::assert_input_error(out, "in use by another kvperf plan run"),
            }
        }
        assert!(
            a.code == 0 || b.code == 0,
            "pair {pair}: neither ran: {}\n{}",
            a.stderr,
            b.stderr
        );
    }
}

/// Runs `tiny` (the null engine's load and run) into `results`.
fn tiny_results(dir: &Path, results: &str) {
    let plan = super::plans::null_plan(dir);
    let out = common::kvperf(
        dir,
        &["plan", "run", plan.to_str().unwrap(), "--results", results],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_results_file_given_twice_is_refused_and_two_files_of_one_name_stay_two() {
    // On 31ece17 `report r.jsonl ./r.jsonl` showed each step as 2 repeats
    // of one measurement (pass 8 refused a copy inside one file, not one
    // file given twice); one plan run on two machines into `m1/r.jsonl`
    // and `m2/r.jsonl` became one configuration `r:c` of 2 repeats, and
    // `compare` of the two said "nothing to compare".
    let dir = tempfile::tempdir().unwrap();
    tiny_results(dir.path(), "m1/r.jsonl");
    tiny_results(dir.path(), "m2/r.jsonl");
    std::fs::hard_link(dir.path().join("m1/r.jsonl"), dir.path().join("m1/h.jsonl")).unwrap();
    for twice in [["m1/r.jsonl", "./m1/r.jsonl"], ["m1/r.jsonl", "m1/h.jsonl"]] {
        let out = common::kvperf(
            dir.path(),
            &["report", twice[0], twice[1], "--out", "twice"],
        );
        common::assert_input_error(&out, "is given twice");
        assert!(
            !dir.path().join("twice").exists(),
            "a refused report leaves no directory"
        );
        let out = common::kvperf(dir.path(), &["compare", twice[0], twice[1]]);
        common::assert_input_error(&out, "is given twice");
    }
    let out = common::kvperf(
        dir.path(),
        &["report", "m1/r.jsonl", "m2/r.jsonl", "--out", "both"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let csv = std::fs::read_to_string(dir.path().join("both/report.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(!rows.is_empty(), "{csv}");
    for row in &rows {
        assert_eq!(
            row[3], "1",
            "one measurement per cell, never a repeat of the other file's: {csv}"
        );
    }
    for config in ["m1/r.jsonl:c", "m2/r.jsonl:c"] {
        assert!(rows.iter().any(|r| r[0] == config), "{config}: {csv}");
    }
    let out = common::kvperf(dir.path(), &["compare", "m1/r.jsonl", "m2/r.jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_report_directory_that_cannot_be_made_leaves_none_of_the_directories_it_made() {
    // On 31ece17 `--out new/..` made `new`, then failed on `new/..`
    // ("File exists") and left `new`; `--out a/b/..` left `a/b`.
    let dir = tempfile::tempdir().unwrap();
    tiny_results(dir.path(), "r.jsonl");
    for (out_dir, made) in [("new/..", "new"), ("a/b/..", "a")] {
        let out = common::kvperf(dir.path(), &["report", "r.jsonl", "--out", out_dir]);
        common::assert_input_error(&out, "cannot be created");
        assert!(!dir.path().join(made).exists(), "{out_dir} left '{made}'");
    }
}
