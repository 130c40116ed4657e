//! `kvperf plan`: shipped plans validate, bad plans fail clearly, a plan
//! killed with SIGKILL resumes without losing or repeating a step, and its
//! results make a report.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_input_error, kvperf};

fn plans_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plans")
}

/// A small RocksDB plan in `dir`: two configs, a load, two workloads x two
/// thread counts; each run step takes about a second (maxexecutiontime).
fn small_plan(dir: &Path) -> PathBuf {
    let text = format!(
        r#"
name = "resume-test"
driver = "ycsb"
[properties]
recordcount = 5000
operationcount = 100000000
maxexecutiontime = 1
fieldcount = 2
fieldlength = 100
[[configs]]
name = "first"
db = "{0}/db-first"
[[configs]]
name = "second"
db = "{0}/db-second"
[[steps]]
load = true
workloads = ["a"]
threads = [2]
[[steps]]
workloads = ["a", "c"]
threads = [1, 2]
"#,
        dir.display()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `kvperf plan run PLAN --results RESULTS` in `dir`.
fn plan_run(dir: &Path, plan: &Path, results: &Path) -> common::Output {
    let shown = (plan.display().to_string(), results.display().to_string());
    kvperf(dir, &["plan", "run", &shown.0, "--results", &shown.1])
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is a complete JSON record"))
        .collect()
}

#[test]
fn every_shipped_plan_validates_and_missing_engines_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(plans_dir()).unwrap() {
        let path = entry.unwrap().path();
        let shown = path.display().to_string();
        let out = kvperf(tmp.path(), &["plan", "show", &shown, "--scale", "0.001"]);
        assert_eq!(out.code, 0, "{shown}: {}", out.stderr);
        assert!(out.stdout.contains(" steps, fingerprint "), "{shown}");
        seen += 1;
    }
    assert!(seen >= 6, "a plan per seed brief plus smoke");
    let seed_002 = plans_dir().join("seed-002-mongodb-engines.toml");
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            &seed_002.display().to_string(),
            "--results",
            "r.jsonl",
        ],
    );
    assert_input_error(&out, "needs engine 'hse'");
    assert!(!tmp.path().join("r.jsonl").exists(), "nothing written");
}

#[test]
fn bad_plans_and_arguments_fail_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = small_plan(tmp.path());
    let text = std::fs::read_to_string(&plan).unwrap();
    let bad = |name: &str, from: &str, to: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text.replace(from, to)).unwrap();
        path.display().to_string()
    };
    let typo = bad(
        "typo.toml",
        "maxexecutiontime = 1\n",
        "maxexecutiontime = 1\n[steps_]\n",
    );
    let out = kvperf(tmp.path(), &["plan", "show", &typo]);
    assert_input_error(&out, "line 8");
    let unknown_key = bad(
        "key.toml",
        "threads = [1, 2]",
        "threads = [1, 2]\nthread = 4",
    );
    let out = kvperf(tmp.path(), &["plan", "show", &unknown_key]);
    assert_input_error(&out, "unknown field `thread`");
    assert!(out.stderr.contains("line 23"), "{}", out.stderr);
    let zero = bad("zero.toml", "threads = [1, 2]", "threads = [0, 2]");
    assert_input_error(
        &kvperf(tmp.path(), &["plan", "show", &zero]),
        "threads has 0",
    );
    let empty = bad("empty.toml", "threads = [1, 2]", "threads = []");
    assert_input_error(
        &kvperf(tmp.path(), &["plan", "show", &empty]),
        "threads is empty",
    );
    let p = plan.display().to_string();
    assert_input_error(
        &kvperf(tmp.path(), &["plan", "show", &p, "--scale", "0"]),
        "--scale 0 must be",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["plan", "show", &p, "--db", "frist=/x"]),
        "did you mean 'first'",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["plan", "show", "missing.toml"]),
        "cannot read plan 'missing.toml'",
    );
}

#[test]
fn results_of_another_plan_are_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = small_plan(tmp.path());
    let results = tmp.path().join("r.jsonl");
    let foreign = r#"{"kvperf_results":1,"plan":{"name":"other","fingerprint":"0123","scale":1.0},"step":{"id":"x","config":"c","kind":"run","workload":"a","threads":1,"repeat":1},"summary":{"operations":1,"runtime_s":1.0,"ops_per_sec":1.0,"latency_us":{}}}"#;
    std::fs::write(&results, format!("{foreign}\n")).unwrap();
    let out = plan_run(tmp.path(), &plan, &results);
    assert_input_error(&out, "holds results of another plan ('other'");
    assert_eq!(
        std::fs::read_to_string(&results).unwrap(),
        format!("{foreign}\n")
    );
    assert!(!tmp.path().join("db-first").exists(), "nothing ran");
}

#[test]
fn a_plan_killed_with_sigkill_resumes_without_losing_or_repeating_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = small_plan(tmp.path()).display().to_string();
    let results = tmp.path().join("results.jsonl");
    let args = [
        "plan",
        "run",
        &plan,
        "--results",
        &results.display().to_string(),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill once two steps are on disk: the plan has ten, each run step ~1 s.
    let deadline = Instant::now() + Duration::from_secs(120);
    while lines(&results).len() < 2 {
        assert!(Instant::now() < deadline, "no progress");
        assert!(child.try_wait().unwrap().is_none(), "plan ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read_to_string(&results).unwrap();
    let kept = lines(&results);
    assert!(
        kept.len() >= 2 && kept.len() < 10,
        "killed mid-plan: {} steps",
        kept.len()
    );

    let out = kvperf(tmp.path(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("done earlier, skipped"),
        "{}",
        out.stderr
    );
    let after = std::fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(&before),
        "finished results are kept byte for byte"
    );
    let all = lines(&results);
    let ids: Vec<&str> = all
        .iter()
        .map(|r| r["step"]["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), 10, "{ids:?}");
    assert_eq!(unique.len(), 10, "no step twice: {ids:?}");
    for r in &all {
        assert!(r["kvperf"]["commit"].is_string());
        let kind = r["step"]["kind"].as_str().unwrap();
        assert!(
            r["summary"]["ops_per_sec"].as_f64().unwrap() > 0.0,
            "{kind}"
        );
        assert!(r["host"]["cpu_model"].is_string());
        assert_eq!(r["engine"]["name"], "rocksdb");
        assert!(r["accounting"]["cpu"]["user_s"].as_f64().unwrap() > 0.0);
        let hist = &r["result"]["histograms"];
        assert!(
            hist.as_object().is_some_and(|h| !h.is_empty()),
            "histograms kept"
        );
        if kind == "run" && r["step"]["workload"] == "c" {
            assert!(r["summary"]["latency_us"]["read"]["p99"].as_f64().unwrap() > 0.0);
        }
    }

    // The results make a report with a table per workload.
    let out_dir = tmp.path().join("report");
    common::report(tmp.path(), &results, &out_dir);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        md.contains("| #Threads | first | second | first vs second |"),
        "{md}"
    );
    assert!(md.contains("## Workload C: throughput"), "{md}");
    let compare = kvperf(tmp.path(), &["compare", &results.display().to_string()]);
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    assert!(compare.stdout.contains("peak improvement"));
}

/// Unmounts the small tmpfs when the test ends, however it ends.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_during_a_step_is_one_line_and_keeps_finished_results() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = tmp.path().join("tiny");
    std::fs::create_dir(&tiny).unwrap();
    // A 4 MiB filesystem that a 20 MB load fills (needs root, as CI has).
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&tiny)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIPPED: cannot mount a small tmpfs here (not root?)");
        return;
    }
    let _unmount = Mount(tiny.clone());
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "full-disk"
driver = "ycsb"
[properties]
recordcount = 20000
fieldlength = 100
[[configs]]
name = "roomy"
db = "{}/roomy"
[[configs]]
name = "full"
db = "{}/db"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
"#,
            tmp.path().display(),
            tiny.display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    let errors: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("kvperf: "))
        .collect();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(errors[0].contains("step full/"), "{}", errors[0]);
    assert!(
        errors[0].contains("No space left on device"),
        "{}",
        errors[0]
    );
    let kept = lines(&results);
    assert_eq!(kept.len(), 1, "the finished step is kept");
    assert_eq!(kept[0]["step"]["config"], "roomy");
}
