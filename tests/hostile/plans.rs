//! Hostile cases: plans (docs/reliability.md). Every bad input of a plan
//! is found before its first step: each step's properties through the
//! parser the step uses, every config's data directory, every output path
//! against every other. What only a step can find ends with exit 2 and
//! never advises rerunning the same command; no empty results file and no
//! step marker are left behind.

use std::path::{Path, PathBuf};

use crate::common;

/// A plan of the null engine: a load of 100 records and a run of 100
/// operations, both at 1 thread.
pub(crate) fn null_plan(dir: &Path) -> PathBuf {
    plan(dir, "tiny", "engine = \"null\"", "")
}

/// A plan named `name` with `head` after its driver and `config` in its
/// one config `c`: a load and a run of workload A.
fn plan(dir: &Path, name: &str, head: &str, config: &str) -> PathBuf {
    let text = format!(
        r#"name = "{name}"
driver = "ycsb"
{head}
[properties]
recordcount = 100
operationcount = 100
[[configs]]
name = "c"
{config}
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["a"]
threads = [1]
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn plan_run(dir: &Path, plan: &Path, extra: &[&str]) -> common::Output {
    let plan = plan.display().to_string();
    let mut args = vec!["plan", "run", plan.as_str(), "--results", "k.jsonl"];
    args.extend_from_slice(extra);
    common::kvperf(dir, &args)
}

/// Refused before the first step: exit 2, one line naming `needle`, no
/// advice to rerun, and nothing of the plan left (no results file, no
/// step marker, no report).
fn assert_refused_before_the_first_step(dir: &Path, out: &common::Output, needle: &str) {
    common::assert_input_error(out, needle);
    assert!(!out.stderr.contains("rerun"), "{}", out.stderr);
    assert!(
        !out.stderr.lines().any(|l| l.starts_with('[')),
        "a step ran: {}",
        out.stderr
    );
    for left in ["k.jsonl", ".k.jsonl.in-progress", "k-report"] {
        assert!(
            !dir.join(left).exists(),
            "{left} left behind: {}",
            out.stderr
        );
    }
}

#[test]
fn a_property_no_step_can_parse_is_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path());
    let out = plan_run(tmp.path(), &plan, &["--set", "recordcount=abc"]);
    assert_refused_before_the_first_step(
        tmp.path(),
        &out,
        "step c/000-load-a-t1-r1: property recordcount: 'abc' is not a non-negative integer",
    );
    // One the load does not read, that only the run step would have met.
    let out = plan_run(
        tmp.path(),
        &plan,
        &["--set", "steps.1.properties.requestdistribution=bogus"],
    );
    assert_refused_before_the_first_step(
        tmp.path(),
        &out,
        "step c/001-run-a-t1-r1: property requestdistribution: 'bogus'",
    );
}

#[test]
fn a_scale_that_makes_a_count_too_large_is_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path());
    let out = plan_run(tmp.path(), &plan, &["--scale", "1e300"]);
    assert_refused_before_the_first_step(tmp.path(), &out, "--scale 1e300 makes plan property");
}

/// The load used to run and be recorded first; the run step then failed.
#[test]
fn a_thread_count_no_step_can_start_is_refused_before_the_load_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path());
    let out = plan_run(tmp.path(), &plan, &["--set", "threads=[2000000]"]);
    assert_refused_before_the_first_step(
        tmp.path(),
        &out,
        "step c/001-run-a-t2000000-r1: property threadcount: 2000000 threads is more than kvperf starts",
    );
}

#[test]
fn a_bad_kubernetes_namespace_is_refused_when_the_plan_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let head =
        "engine = \"redis\"\nlauncher = \"kubernetes\"\n[kubernetes]\nnamespace = \"Bench_NS\"";
    let plan = plan(tmp.path(), "k8s", head, "");
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("threads = [1]\n", "threads = [1]\nclients = 2\n");
    std::fs::write(&plan, text).unwrap();
    let out = plan_run(tmp.path(), &plan, &[]);
    assert_refused_before_the_first_step(
        tmp.path(),
        &out,
        "kubernetes.namespace 'Bench_NS' is not a Kubernetes namespace name",
    );
    // The same from the command line.
    let ok = null_plan(tmp.path());
    let out = plan_run(tmp.path(), &ok, &["--set", "kubernetes.namespace=-all"]);
    assert_refused_before_the_first_step(tmp.path(), &out, "kubernetes.namespace '-all'");
}

/// A config's own `db` (not only a `--db`) holding a user's files.
#[test]
fn a_configs_own_db_holding_a_users_files_is_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("mine");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("notes.txt"), "mine\n").unwrap();
    let config = format!("db = \"{}\"", user.display());
    let plan = plan(tmp.path(), "lmdb", "engine = \"lmdb\"", &config);
    let out = plan_run(tmp.path(), &plan, &[]);
    assert_refused_before_the_first_step(tmp.path(), &out, "holds files kvperf did not create");
    let left: Vec<_> = std::fs::read_dir(&user)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"], "the user's directory was written to");
}

/// The whole plan used to run, then exit 2 without a report.
#[test]
fn results_and_report_at_one_path_are_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path());
    let out = plan_run(tmp.path(), &plan, &["--report", "k.jsonl"]);
    assert_refused_before_the_first_step(
        tmp.path(),
        &out,
        "'k.jsonl' is given as both --results and --report (a directory)",
    );
    // A report directory whose report.csv is the results file.
    let out = common::kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            plan.to_str().unwrap(),
            "--results",
            "out/report.csv",
            "--report",
            "out",
        ],
    );
    common::assert_input_error(
        &out,
        "'out/report.csv' is given as both --results and a --report file",
    );
    assert!(!tmp.path().join("out").exists());
}

/// An engine's own option is read only when the step opens its engine:
/// the step refuses it, and the plan says so in one line, exit 2, without
/// telling the user to rerun the same command, and leaves no empty
/// results file nor a step marker that would make a rerun remake a store.
#[test]
fn bad_input_only_a_step_finds_is_exit_2_without_advice_to_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let config = format!("db = \"{}\"", tmp.path().join("db").display());
    let plan = plan(tmp.path(), "lmdb", "engine = \"lmdb\"", &config);
    let out = plan_run(tmp.path(), &plan, &["--set", "lmdb.sync=maybe"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kvperf: step c/000-load-a-t1-r1 cannot run:"),
        "{last}"
    );
    assert!(last.contains("lmdb.sync"), "{last}");
    assert!(
        !out.stderr.contains("rerun the same command"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(
        !tmp.path().join("k.jsonl").exists(),
        "an empty results file was left"
    );
    assert!(
        !tmp.path().join(".k.jsonl.in-progress").exists(),
        "a step marker was left"
    );
}

/// Pass 5: `kvperf fit TRACE --check -p recordcount=abc` (or any -p the
/// fitted side refuses) replayed the whole trace, measuring, and only
/// then refused the property at the fitted side's load. Both sides' steps
/// are checked by their own parser before the replay now.
#[test]
fn fit_check_finds_a_bad_property_before_it_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::import_csv_trace(
        dir,
        "m",
        "0,insert,k1,100\n1,read,k1,100\n2,update,k1,100\n3,read,k2,100\n",
    );
    for bad in [
        "recordcount=abc",
        "requestdistribution=bogus",
        "readproportion=-1",
    ] {
        let out = common::kvperf(
            dir,
            &["fit", "m.kvtrace", "--check", "--engine", "null", "-p", bad],
        );
        let key = bad.split('=').next().unwrap();
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(
            !out.stderr.contains("replaying"),
            "{bad} replayed first: {}",
            out.stderr
        );
        assert!(
            out.stderr.lines().last().unwrap_or_default().contains(key),
            "{}",
            out.stderr
        );
    }
}
