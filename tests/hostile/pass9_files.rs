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
