//! The ninth hostile pass, the files side (docs/reliability.md, "Pass 9:
//! files"): what pass 8 built around a plan's own files (its results file,
//! its report directory, its hold on its stores), probed again. Each case
//! failed on the main of 2026-11-29 (31ece17).

use std::path::{Path, PathBuf};

use crate::common::{self, workload, Output};

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

/// `kvperf ARGS` in `dir` with `env` set.
fn kvperf_with(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    Output::from(out)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

#[test]
fn a_wiredtiger_config_in_the_environment_is_refused_before_anything_is_written() {
    // Pass 8 refused `-p wiredtiger.config=log=(path=DIR)`; WiredTiger
    // also adds WIREDTIGER_CONFIG from the environment to every open. On
    // 31ece17, with it naming another store's directory, a load into a new
    // --db wrote its log there, recovered that store's log and removed its
    // WiredTigerLog.0000000001: the other store no longer opened
    // ("txn-recover: ... No such file or directory"), and the load failed.
    let dir = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let load = |db: &str, env: &[(&str, String)]| {
        let args = ["load", "--engine", "wiredtiger", "-P", &wa, "--db", db];
        kvperf_with(
            dir.path(),
            &[&args[..], &["-p", "recordcount=100"]].concat(),
            env,
        )
    };
    let out = load("theirs", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let theirs = dir.path().join("theirs");
    let before = names(&theirs);
    let env = [(
        "WIREDTIGER_CONFIG",
        format!("log=(enabled=true,path={})", theirs.display()),
    )];
    let out = load("mine", &env);
    common::assert_input_error(&out, "WIREDTIGER_CONFIG");
    assert!(!dir.path().join("mine").exists(), "{}", out.stderr);
    assert_eq!(names(&theirs), before, "{}", out.stderr);
    let run = [
        "run",
        "--engine",
        "wiredtiger",
        "-P",
        &wa,
        "--db",
        "theirs",
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
    ];
    let out = kvperf_with(dir.path(), &run, &[]);
    assert_eq!(out.code, 0, "the other store still opens: {}", out.stderr);
    // And a store kvperf made opens again (its second open reads the
    // configuration WiredTiger saved at the first).
    let out = kvperf_with(dir.path(), &run, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_wiredtiger_config_file_put_into_kvperfs_store_is_refused_not_read() {
    // On 31ece17 a `WiredTiger.config` put into kvperf's WiredTiger store
    // (WiredTiger reads it at every open, after kvperf's configuration)
    // with `log=(path=DIR)` made a `run` write WiredTiger's log into DIR,
    // outside --db, unchecked and recorded nowhere, exit 0.
    let dir = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let args = [
        "--engine",
        "wiredtiger",
        "-P",
        &wa,
        "--db",
        "st",
        "-p",
        "recordcount=100",
    ];
    let out = common::kvperf(dir.path(), &[&["load"][..], &args].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let config = format!("log=(enabled=true,path={})\n", theirs.display());
    std::fs::write(dir.path().join("st/WiredTiger.config"), &config).unwrap();
    let more = ["-p", "operationcount=100"];
    let out = common::kvperf(dir.path(), &[&["run"][..], &args, &more].concat());
    common::assert_input_error(&out, "WiredTiger.config");
    assert_eq!(names(&theirs), Vec::<String>::new(), "{}", out.stderr);
    // A `--fresh` load empties kvperf's store but keeps the user's file
    // (31ece17 deleted it as WiredTiger's), and is refused at the open.
    let fresh = ["load", "--fresh"];
    let out = common::kvperf(dir.path(), &[&fresh[..], &args].concat());
    common::assert_input_error(&out, "WiredTiger.config");
    assert_eq!(names(&theirs), Vec::<String>::new(), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("st/WiredTiger.config")).unwrap(),
        config
    );
}

#[test]
fn a_results_path_that_cannot_be_opened_is_a_bad_input() {
    // On 31ece17 `--results r.jsonl/` and `--results sub/.` ended exit 3
    // ("cannot open results file 'r.jsonl/': Is a directory"), as if a
    // step had failed, though nothing ran: bad input is exit 2.
    let dir = tempfile::tempdir().unwrap();
    let plan = super::plans::null_plan(dir.path());
    for results in ["r.jsonl/", "sub/."] {
        let out = common::kvperf(
            dir.path(),
            &["plan", "run", plan.to_str().unwrap(), "--results", results],
        );
        common::assert_input_error(&out, "cannot open results file");
        assert!(
            !out.stderr.lines().any(|l| l.starts_with('[')),
            "a step ran: {}",
            out.stderr
        );
    }
}
