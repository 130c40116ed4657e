//! The eighth hostile pass, the lead's part (docs/reliability.md, "Pass 8:
//! a plan's own files"): two of pass 7's "noted, not changed" cases. A
//! plan removed whatever stood at the names of its steps' outputs
//! (`.R.step-PID.json`, `.R.srun-PID/`) before each step, and wrote its
//! closing report into whatever directory stood at `--report` by then.
//! Each case failed on the main of 2026-11-29 (b17f7e9).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::plans::null_plan;
use super::waits::{rest, spawn, wait_within};
use crate::common::{self, Output};

/// Runs `prelude` in a shell in `dir`, then execs `kvperf ARGS` in the
/// same process, so that `$$` in the prelude is the pid kvperf runs as
/// (the pid in the names of a plan's own files).
fn exec_after(dir: &Path, prelude: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let script = format!("{prelude}\nexec \"$KVPERF\" \"$@\"");
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(args)
        .env("KVPERF", env!("CARGO_BIN_EXE_kvperf"))
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .unwrap();
    Output::from(out)
}

/// `kvperf plan run PLAN --results r.jsonl` in a fresh directory, after
/// `prelude` (see [`exec_after`]); the directory and what kvperf did.
fn plan_after(
    plan: fn(&Path) -> PathBuf,
    prelude: &str,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path());
    let args = [
        "plan",
        "run",
        plan.to_str().unwrap(),
        "--results",
        "r.jsonl",
    ];
    let out = exec_after(dir.path(), prelude, &args, env);
    (dir, out)
}

/// The one file in `dir` whose name starts with `prefix`.
fn the_file(dir: &Path, prefix: &str) -> PathBuf {
    let found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{prefix}*: {found:?}");
    found.into_iter().next().unwrap()
}

#[test]
fn a_users_file_at_a_steps_output_name_is_refused_before_the_first_step() {
    let (dir, out) = plan_after(null_plan, "echo mine > .r.jsonl.step-$$.json", &[]);
    common::assert_input_error(&out, "a step's output");
    let kept = the_file(dir.path(), ".r.jsonl.step-");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "mine\n");
    assert!(!dir.path().join("r.jsonl").exists(), "nothing measured");
}

#[test]
fn a_result_left_at_a_steps_output_name_by_a_dead_attempt_is_never_read_as_this_steps() {
    // A kvperf result at the name (a plan of this pid that died after its
    // step wrote it) is kvperf's: removed before the step, and the plan
    // records its own steps' results.
    let prelude = format!(
        "\"$KVPERF\" run --engine null -P {} -p operationcount=7 --format json --output .r.jsonl.step-$$.json 2>/dev/null || exit 9",
        common::workload("c")
    );
    let (dir, out) = plan_after(null_plan, &prelude, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = common::lines(&dir.path().join("r.jsonl"));
    assert_eq!(records.len(), 2);
    for record in &records {
        let ops: u64 = record
            .output
            .measurements
            .iter()
            .map(|m| m.operations)
            .sum();
        assert_eq!(
            ops, 100,
            "the step's own 100 operations, not the 7 left there"
        );
    }
}

/// A plan whose one run step has two clients started by srun (Redis on a
/// closed port: the plan never talks to it before srun).
pub(super) fn srun_plan(dir: &Path) -> PathBuf {
    let path = dir.join("srun.toml");
    std::fs::write(
        &path,
        r#"name = "srun"
driver = "ycsb"
settle = false
launcher = "srun"
[properties]
recordcount = 100
operationcount = 100
"redis.port" = 1
[[configs]]
name = "redis"
engine = "redis"
[[steps]]
workloads = ["c"]
threads = [1]
clients = 2
"#,
    )
    .unwrap();
    path
}

#[test]
fn a_users_directory_at_the_shards_name_is_refused_not_removed() {
    // srun itself is never reached: the refusal comes first.
    let (dir, out) = plan_after(
        srun_plan,
        "mkdir .r.jsonl.srun-$$ && echo mine > .r.jsonl.srun-$$/notes",
        &[("KVPERF_SRUN", "/bin/false")],
    );
    common::assert_input_error(&out, "holds 'notes'");
    let kept = the_file(dir.path(), ".r.jsonl.srun-").join("notes");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "mine\n");
}

#[test]
fn shards_files_left_by_a_dead_attempt_are_cleared_for_the_step() {
    let (_dir, out) = plan_after(srun_plan, "mkdir .r.jsonl.srun-$$ && echo '{' > .r.jsonl.srun-$$/shard-0.json && echo old > .r.jsonl.srun-$$/shard-1.err", &[("KVPERF_SRUN", "/bin/false")]);
    // The step ran (srun here is /bin/false, so it fails at its step).
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(!out.stderr.contains("did not make it"), "{}", out.stderr);
    let failed = common::failed_line(&out.stderr);
    assert!(
        !failed.contains("old"),
        "an earlier attempt's file read: {failed}"
    );
}

/// Starts a null plan of a load and a run lasting `run_s` seconds, its
/// report in `report`; returns once the load's record is in the results.
fn plan_past_its_first_step(
    dir: &Path,
    report: &str,
    results: &str,
    run_s: u32,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let plan = dir.join("long.toml");
    std::fs::write(
        &plan,
        format!(
            r#"name = "long"
driver = "ycsb"
[properties]
recordcount = 100
operationcount = 1000000000000
maxexecutiontime = {run_s}
[[configs]]
name = "c"
engine = "null"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["a"]
threads = [1]
"#
        ),
    )
    .unwrap();
    let args: Vec<String> = [
        "plan",
        "run",
        plan.to_str().unwrap(),
        "--results",
        results,
        "--report",
        report,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let started = spawn(dir, &args);
    let results = dir.join(results);
    let deadline = Instant::now() + Duration::from_secs(120);
    while common::lines(&results).is_empty() {
        assert!(Instant::now() < deadline, "the load step never recorded");
        std::thread::sleep(Duration::from_millis(20));
    }
    started
}

#[test]
fn a_report_directory_re_linked_while_the_plan_runs_is_not_written_into() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("documents");
    std::fs::create_dir(&users).unwrap();
    std::fs::create_dir(dir.path().join("rep")).unwrap();
    let (mut child, lines) = plan_past_its_first_step(dir.path(), "rep", "r.jsonl", 3);
    // The checked directory moves away; a link to the user's own takes its name.
    std::fs::rename(dir.path().join("rep"), dir.path().join("rep.old")).unwrap();
    std::os::unix::fs::symlink(&users, dir.path().join("rep")).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120), "plan");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is no longer the directory checked"),
        "{stderr}"
    );
    assert!(
        stderr.contains("every step's result is kept in 'r.jsonl'"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&users).unwrap().count(),
        0,
        "nothing written into the user's directory"
    );
    assert_eq!(
        common::lines(&dir.path().join("r.jsonl")).len(),
        2,
        "every step kept"
    );
}

#[test]
fn a_report_directory_kvperf_made_then_replaced_by_a_users_is_not_written_into() {
    // No directory at the check: kvperf makes it then, before measuring
    // (the quickstart's results file goes inside it); a user's put in its
    // place while the plan runs is not kvperf's.
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = plan_past_its_first_step(dir.path(), "newrep", "r.jsonl", 3);
    // The user's own is made first, then takes the name (made after the
    // removal, it could get kvperf's inode number back: its birth time
    // tells them apart, where the filesystem keeps one).
    std::fs::create_dir(dir.path().join("users")).unwrap();
    std::fs::write(dir.path().join("users/mine.txt"), "mine").unwrap();
    std::fs::remove_dir(dir.path().join("newrep")).unwrap();
    std::fs::rename(dir.path().join("users"), dir.path().join("newrep")).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120), "plan");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is no longer the directory checked"),
        "{stderr}"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path().join("newrep"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["mine.txt"]);
}

#[test]
fn a_report_directory_made_for_a_plan_that_writes_no_report_is_removed() {
    // Bad input found after the check (an unknown engine in the plan):
    // the directories made for the report go, and a user's stays.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("mine")).unwrap();
    let plan = dir.path().join("bad.toml");
    std::fs::write(
        &plan,
        "name = \"bad\"\ndriver = \"ycsb\"\n[[configs]]\nname = \"c\"\nengine = \"nosuch\"\n[[steps]]\nworkloads = [\"a\"]\nthreads = [1]\n",
    )
    .unwrap();
    for report in ["mine/new/deeper", "top/new"] {
        let out = common::kvperf(
            dir.path(),
            &[
                "plan",
                "run",
                plan.to_str().unwrap(),
                "--results",
                "r.jsonl",
                "--report",
                report,
            ],
        );
        assert_eq!(out.code, 2, "{}", out.stderr);
    }
    assert!(dir.path().join("mine").is_dir());
    assert!(!dir.path().join("mine/new").exists());
    assert!(!dir.path().join("top").exists());
}

#[test]
fn a_report_directory_that_stays_gets_the_report() {
    // The control: the same plan, nothing swapped, writes its report into
    // the directory it checked, into one it makes, and into one holding
    // its results file (as the quickstart's does).
    for report in ["rep", "new/deeper", "r-in"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("rep")).unwrap();
        let results = if report == "r-in" {
            "r-in/r.jsonl"
        } else {
            "r.jsonl"
        };
        let (mut child, lines) = plan_past_its_first_step(dir.path(), report, results, 1);
        let status = wait_within(&mut child, Duration::from_secs(120), "plan");
        let stderr = rest(&lines).join("\n");
        assert_eq!(status.code(), Some(0), "{stderr}");
        for name in ["report.md", "report.csv", "report.html"] {
            assert!(
                dir.path().join(report).join(name).is_file(),
                "{report}/{name}"
            );
        }
    }
}

/// An LMDB plan on `DIR/store`: a load of 2 000 records and a run of
/// workload C lasting `run_s` seconds.
fn lmdb_plan(dir: &Path, name: &str, run_s: u32) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"name = "{name}"
driver = "ycsb"
settle = false
[properties]
recordcount = 2000
operationcount = 1000000000000
maxexecutiontime = {run_s}
[[configs]]
name = "lmdb"
engine = "lmdb"
db = "{}/store"
[[steps]]
load = true
workloads = ["c"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
            dir.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_second_plan_on_a_store_a_plan_is_using_is_refused_before_its_first_step() {
    // Pass 8 (signals and results) saw a second plan's load empty the store
    // a first plan had loaded, between the first one's steps, 3 times in 3.
    let dir = tempfile::tempdir().unwrap();
    let first = lmdb_plan(dir.path(), "first", 3);
    let second = lmdb_plan(dir.path(), "second", 1);
    let args: Vec<String> = [
        "plan",
        "run",
        first.to_str().unwrap(),
        "--results",
        "1.jsonl",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (mut child, lines) = spawn(dir.path(), &args);
    let deadline = Instant::now() + Duration::from_secs(120);
    while common::lines(&dir.path().join("1.jsonl")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the first plan's load never recorded"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = common::kvperf(
        dir.path(),
        &[
            "plan",
            "run",
            second.to_str().unwrap(),
            "--results",
            "2.jsonl",
        ],
    );
    common::assert_input_error(&out, "is the store of another kvperf plan running now");
    assert!(!dir.path().join("2.jsonl").exists(), "{}", out.stderr);
    let status = wait_within(&mut child, Duration::from_secs(120), "first plan");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(0), "{stderr}");
    let records = common::lines(&dir.path().join("1.jsonl"));
    assert_eq!(records.len(), 2);
    let run = &records[1].output;
    // Its reads found every record its load wrote (an emptied store warns
    // of failed reads, or of a store holding fewer records).
    let emptied = |w: &&String| w.contains("fail") || w.contains("holds");
    assert!(
        !run.warnings.iter().any(|w| emptied(&w)),
        "{:?}",
        run.warnings
    );
    // After it, the store is free for the second plan.
    let out = common::kvperf(
        dir.path(),
        &[
            "plan",
            "run",
            second.to_str().unwrap(),
            "--results",
            "2.jsonl",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}
