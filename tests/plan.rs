//! `kvperf plan` on any engine: shipped plans validate, bad plans fail
//! clearly, plans on an engine without a data directory run, warnings
//! reach the results, `--set`, `compare` (RocksDB plans: plan_rocksdb.rs).

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{assert_input_error, kvperf, lines, plan_run, small_plan};

fn plans_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plans")
}

/// A one-config plan on the null engine (no data directory), `extra` TOML
/// appended to its header.
fn null_plan(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"
name = "{name}"
driver = "ycsb"
engine = "null"
{extra}
[properties]
recordcount = 1000
operationcount = 5000
[[configs]]
name = "driver"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1, 2]
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
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
    // An engine this kvperf lacks (HSE, seed 002's) is named before anything runs.
    let seed_002 = std::fs::read_to_string(plans_dir().join("seed-002-engines.toml")).unwrap();
    let hse = tmp.path().join("hse.toml");
    std::fs::write(
        &hse,
        seed_002.replace(
            "engine = \"rocksdb\"\nproperties",
            "engine = \"hse\"\nproperties",
        ),
    )
    .unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            &hse.display().to_string(),
            "--results",
            "r.jsonl",
        ],
    );
    assert_input_error(&out, "unknown engine 'hse'");
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
        "plan 'missing.toml' does not exist",
    );
}

#[test]
fn results_of_another_plan_are_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.jsonl");
    let first = null_plan(tmp.path(), "first", "");
    let out = plan_run(tmp.path(), &first, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let before = std::fs::read_to_string(&results).unwrap();
    let other = null_plan(tmp.path(), "other", "");
    let out = plan_run(tmp.path(), &other, &results);
    assert_input_error(&out, "holds results of another plan ('first'");
    assert_eq!(std::fs::read_to_string(&results).unwrap(), before);

    // A line of an older results format is named, and the file kept.
    let old = tmp.path().join("old.jsonl");
    let line = "{\"kvperf_results\":1,\"plan\":{\"name\":\"x\"}}\n";
    std::fs::write(&old, line).unwrap();
    let out = plan_run(tmp.path(), &first, &old);
    assert_input_error(&out, "written in results format 1");
    assert_eq!(std::fs::read_to_string(&old).unwrap(), line);
}

#[test]
fn a_plan_on_an_engine_without_a_data_directory_runs_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "null-plan", "settle = true");
    let results = tmp.path().join("null.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = lines(&results);
    assert_eq!(records.len(), 3, "a load and two run steps");
    for r in &records {
        assert_eq!(r.output.engine.name, "null");
        assert_eq!(r.step.db, "", "no data directory");
        assert!(r.measured().unwrap().operations > 0);
    }
    // The report is written when the plan finishes.
    let report = tmp.path().join("null-report");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("Workload C"), "{md}");
    assert!(report.join("report.html").exists() && report.join("report.csv").exists());
}

#[test]
fn a_failed_step_is_kept_as_a_failed_record_marked_in_the_report_and_retried() {
    let tmp = tempfile::tempdir().unwrap();
    // The null engine stores nothing, so every verified read fails the
    // data-integrity check: a run failure after a whole measured window.
    let text = std::fs::read_to_string(null_plan(tmp.path(), "fails", "")).unwrap();
    let plan = tmp.path().join("fails.toml");
    std::fs::write(
        &plan,
        text.replace("[properties]", "[properties]\ndataintegrity = true"),
    )
    .unwrap();
    let results = tmp.path().join("fails.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("marked failed"), "{}", out.stderr);
    let records = lines(&results);
    assert_eq!(records.len(), 2, "the load, then the failed run step");
    let failed = &records[1];
    let error = failed.output.error.as_ref().expect("kept as failed");
    assert!(
        error.message.contains("data integrity check failed"),
        "{}",
        error.message
    );
    assert_eq!(
        failed.measured().unwrap().operations,
        5000,
        "what it measured is kept"
    );
    // A rerun retries the failed step (not the load), and fails it again.
    let again = plan_run(tmp.path(), &plan, &results);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(
        again.stderr.contains("done earlier, skipped"),
        "{}",
        again.stderr
    );
    assert_eq!(lines(&results).len(), 3);
    let report = tmp.path().join("rep");
    common::report(tmp.path(), &results, &report);
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains("step stopped: data integrity check failed"),
        "{md}"
    );
    assert!(md.contains("**Failures in 1 of 2 measured cells**"), "{md}");
}

#[test]
fn repeated_inserting_steps_insert_new_keys_into_one_store() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("inserts.toml");
    let text = format!(
        r#"
name = "inserts"
driver = "ycsb"
engine = "redb"
[properties]
recordcount = 1000
operationcount = 4000
insertproportion = 0.5
readproportion = 0.5
[[configs]]
name = "one"
db = "{}/db"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["d"]
threads = [1, 2]
"#,
        tmp.path().display()
    );
    std::fs::write(&plan, text).unwrap();
    let results = tmp.path().join("inserts.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = lines(&results);
    let inserts = |r: &kvperf::results::Record| {
        r.measured().unwrap().ops[&kvperf::measure::OpKind::Insert].returns["OK"]
    };
    let first = inserts(&records[1]);
    let second = inserts(&records[2]);
    assert!(first > 1000 && second > 1000, "{first} {second}");
    // The second D starts past the first one's keys, and says so.
    let start = format!("runinsertstart={}", 1000 + first);
    assert!(
        records[2].command.contains(&start),
        "{:?}",
        records[2].command
    );
    // Every key 0 .. all inserts is in the store exactly once: read each.
    let total = (1000 + first + second).to_string();
    let ops = format!("operationcount={total}");
    let records_arg = format!("recordcount={total}");
    let db = tmp.path().join("db").display().to_string();
    let check = common::kvperf(
        tmp.path(),
        &[
            "run",
            "--engine",
            "redb",
            "--db",
            &db,
            "-P",
            &common::workload("c"),
            "-p",
            &records_arg,
            "-p",
            &ops,
            "-p",
            "requestdistribution=sequential",
            "--format",
            "json",
        ],
    );
    assert_eq!(check.code, 0, "{}", check.stderr);
    let output = kvperf::results::StepOutput::from_json(&check.stdout).unwrap();
    let reads = &output.measurements[0].ops[&kvperf::measure::OpKind::Read];
    assert_eq!(reads.returns.get("NOT_FOUND"), None, "{:?}", reads.returns);
    assert_eq!(reads.returns["OK"].to_string(), total);
}

#[test]
fn a_step_that_died_while_changing_its_store_makes_the_store_again_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "resume", "");
    let results = tmp.path().join("resume.jsonl");
    assert_eq!(plan_run(tmp.path(), &plan, &results).code, 0);
    assert!(
        !tmp.path().join(".resume.jsonl.in-progress").exists(),
        "ended with its step"
    );
    // As a kill -9 after the last step began: its record is not in the
    // results, and the marker names it.
    let step_id = lines(&results)[2].step.id.clone();
    let text = std::fs::read_to_string(&results).unwrap();
    let kept: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&results, format!("{}\n", kept.join("\n"))).unwrap();
    std::fs::write(
        tmp.path().join(".resume.jsonl.in-progress"),
        format!("kvperf step in progress\ndriver\n{step_id}\n"),
    )
    .unwrap();
    let again = plan_run(tmp.path(), &plan, &results);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("making it again with"),
        "{}",
        again.stderr
    );
    let records = lines(&results);
    assert_eq!(records.len(), 3, "the remade load is not recorded again");
    assert_eq!(records[2].step.id, step_id);
    assert!(!tmp.path().join(".resume.jsonl.in-progress").exists());
}

#[test]
fn what_an_engine_cannot_do_stops_a_plan_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "compact-null", "settle = \"compact\"");
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_input_error(
        &out,
        "engine 'null' cannot compact its store (the plan's settle = \"compact\")",
    );
    assert!(!results.exists());
    let with_db = tmp.path().join("db.toml");
    let text = std::fs::read_to_string(null_plan(tmp.path(), "db", ""))
        .unwrap()
        .replace("name = \"driver\"", "name = \"driver\"\ndb = \"somewhere\"");
    std::fs::write(&with_db, text).unwrap();
    let out = plan_run(tmp.path(), &with_db, &results);
    assert_input_error(
        &out,
        "engine 'null' keeps no data directory; remove the config's db",
    );
}

/// A config's servers are checked against the server registry before
/// anything runs: their node counts and setting names.
#[test]
fn a_configs_servers_are_checked_before_the_plan_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "served", "");
    let text = std::fs::read_to_string(&plan).unwrap();
    let bad = |file: &str, server: &str| {
        let path = tmp.path().join(file);
        let config = format!("name = \"driver\"\nservers = [{server}]");
        std::fs::write(&path, text.replace("name = \"driver\"", &config)).unwrap();
        path
    };
    let nodes = bad("nodes.toml", r#"{ name = "redis", nodes = 2 }"#);
    let out = plan_run(tmp.path(), &nodes, &tmp.path().join("r1.jsonl"));
    assert_input_error(&out, "--nodes 2: redis runs as one node here");
    let setting = bad(
        "setting.toml",
        r#"{ name = "postgres", settings = { pg_fsyn = "off" } }"#,
    );
    let out = plan_run(tmp.path(), &setting, &tmp.path().join("r2.jsonl"));
    assert_input_error(
        &out,
        "unknown postgres setting 'pg_fsyn' (did you mean 'pg_fsync'?)",
    );
    assert!(!tmp.path().join("r2.jsonl").exists(), "nothing ran");
}

#[test]
fn a_steps_warnings_reach_the_results_and_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "warned", "");
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "operationcount = 5000",
        "operationcount = 5000\nreadproportoin = 1",
    );
    std::fs::write(&plan, text).unwrap();
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warning = "unknown property 'readproportoin' (did you mean 'readproportion'?)";
    for r in lines(&results) {
        assert!(
            r.output.warnings.iter().any(|w| w.contains(warning)),
            "{}: {:?}",
            r.step.id,
            r.output.warnings
        );
    }
    assert_eq!(out.stderr.matches(warning).count(), 3, "{}", out.stderr);
}

#[test]
fn plan_values_change_with_set() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "setme", "");
    let shown = plan.display().to_string();
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "show",
            &shown,
            "--set",
            "threads=[4]",
            "--set",
            "operationcount=77",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("run-c-t4-r1"), "{}", out.stdout);
    assert!(!out.stdout.contains("run-c-t2-r1"), "{}", out.stdout);
    assert!(out.stdout.contains("operationcount=77"), "{}", out.stdout);
    let out = kvperf(
        tmp.path(),
        &["plan", "show", &shown, "--set", "threads=[0]"],
    );
    assert_input_error(&out, "after --set: steps[1]: threads has 0");
    let out = kvperf(
        tmp.path(),
        &["plan", "show", &shown, "--set", "configs.disk.db=/x"],
    );
    assert_input_error(&out, "no config 'disk'");
}

#[test]
fn two_results_files_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for machine in ["machine-a", "machine-b"] {
        let plan = null_plan(tmp.path(), "cmp", "");
        let results = tmp.path().join(format!("{machine}.jsonl"));
        let out = plan_run(tmp.path(), &plan, &results);
        assert_eq!(out.code, 0, "{}", out.stderr);
        files.push(results.display().to_string());
    }
    // One line per cell first; the report's tables with --detail.
    let out = kvperf(tmp.path(), &["compare", &files[0], &files[1], "--detail"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("machine-b:driver: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("| #Threads | machine-a:driver | machine-b:driver | machine-a:driver vs machine-b:driver |"),
        "{}",
        out.stdout
    );
    let out = kvperf(tmp.path(), &["compare", &files[0]]);
    assert_input_error(&out, "nothing to compare");
}

/// Starts `kvperf plan run PLAN` whose second run step would take an hour,
/// waits (by the plan's own progress line) until that step runs, sends
/// SIGTERM to the plan process alone (as `kill` or a service manager does,
/// not Ctrl-C's whole process group), and returns its exit code and stderr.
fn plan_run_until_the_long_step_then_sigterm(dir: &Path, plan: &Path) -> (Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["plan", "run", &plan.display().to_string()])
        .args(["--results", "r.jsonl"])
        .args(["--set", "steps.1.operations=100000000000"])
        .args(["--set", "maxexecutiontime=3600"])
        .current_dir(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{seen}");
        seen.push_str(&line);
        if line.contains("001-run-c-t1-r1 (1 threads)") {
            break;
        }
    }
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    stderr.read_to_string(&mut seen).unwrap();
    (child.wait().unwrap().code(), seen)
}

#[test]
fn sigterm_ends_a_plan_keeping_finished_steps_and_a_rerun_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "interrupted", "");
    let (code, stderr) = plan_run_until_the_long_step_then_sigterm(tmp.path(), &plan);
    assert_eq!(code, Some(3), "{stderr}");
    let message = "interrupted during step driver/001-run-c-t1-r1: it is not kept; the 1 finished steps are in 'r.jsonl'; rerun the same command to resume";
    assert!(stderr.contains(message), "{stderr}");
    assert_eq!(lines(&tmp.path().join("r.jsonl")).len(), 1, "the load only");
    // The same command again skips the load and reaches the same step.
    let (code, stderr) = plan_run_until_the_long_step_then_sigterm(tmp.path(), &plan);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("000-load-a-t1-r1: done earlier, skipped"),
        "{stderr}"
    );
    assert!(stderr.contains(message), "{stderr}");
    assert_eq!(lines(&tmp.path().join("r.jsonl")).len(), 1);
}

/// Passwords in a config's properties (a password property, a URL's
/// userinfo) and in a server's settings: nowhere in the results, the
/// report's files or what `plan run` and `plan show` print.
#[test]
fn a_plans_passwords_reach_no_results_report_or_output() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "secret", "");
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "name = \"driver\"",
        "name = \"driver\"\nproperties = { \"db.passwd\" = \"S3cr3tPw1\", \
         \"db.url\" = \"mongodb://kv:S3cr3tPw2@127.0.0.1:1/db\" }",
    );
    std::fs::write(&plan, text).unwrap();
    let results = tmp.path().join("r.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = tmp.path().join("r-report");
    let mut shown = vec![
        ("stdout".to_string(), out.stdout),
        ("stderr".to_string(), out.stderr),
        (
            "results".to_string(),
            std::fs::read_to_string(&results).unwrap(),
        ),
    ];
    for file in ["report.md", "report.csv", "report.html"] {
        shown.push((
            file.into(),
            std::fs::read_to_string(report.join(file)).unwrap(),
        ));
    }
    assert!(shown[2].1.contains("db.passwd"), "the property is recorded");
    // A server engine's config with a server whose URL holds a password.
    let wire = tmp.path().join("wire.toml");
    std::fs::write(
        &wire,
        r#"
name = "wire"
driver = "ycsb"
engine = "mongodb"
[properties]
recordcount = 1000
"mongodb.url" = "mongodb://kv:S3cr3tPw3@127.0.0.1:27018/db"
[[configs]]
name = "pg"
servers = [{ name = "ferretdb", port = 27018, settings = { ferretdb_handler = "postgresql", ferretdb_pg_url = "postgres://kv:S3cr3tPw4@127.0.0.1:1/kvperf" } }]
[[steps]]
load = true
workloads = ["a"]
threads = [1]
"#,
    )
    .unwrap();
    let show = kvperf(tmp.path(), &["plan", "show", &wire.display().to_string()]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    shown.push(("plan show".into(), show.stdout + &show.stderr));
    for (what, text) in &shown {
        assert!(!text.contains("S3cr3tPw"), "{what}: {text}");
    }
}

/// The field names of each table of docs/plans.md's "Results file"
/// section, by the table's heading line: the first cell's `names`.
fn documented_results_fields() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plans.md"))
        .unwrap();
    let section = doc
        .split("## Results file (JSON lines)")
        .nth(1)
        .expect("docs/plans.md has a Results file section");
    let section = section.split("\n## ").next().unwrap();
    let mut tables: Vec<(String, Vec<String>)> = Vec::new();
    let mut intro = String::new();
    let mut in_table = false;
    for line in section.lines() {
        if !line.starts_with('|') {
            in_table = false;
            if !line.trim().is_empty() {
                intro = line.to_string();
            }
            continue;
        }
        if !in_table {
            in_table = true;
            tables.push((intro.clone(), Vec::new()));
            continue; // the header row
        }
        let first = line.split('|').nth(1).unwrap_or("");
        let names = first.split('`').skip(1).step_by(2).map(str::to_string);
        tables.last_mut().unwrap().1.extend(names);
    }
    tables
}

#[test]
fn a_fresh_results_line_is_as_docs_plans_md_describes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = null_plan(tmp.path(), "format", "");
    let results = tmp.path().join("format.jsonl");
    let out = plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&results).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let tables = documented_results_fields();
    assert_eq!(
        tables.len(),
        3,
        "top level, output, measurements: {tables:?}"
    );
    assert!(tables[1].0.starts_with("`output`"), "{:?}", tables[1].0);
    assert!(
        tables[2].0.starts_with("`output.measurements[]`"),
        "{:?}",
        tables[2].0
    );
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let output = &line["output"];
    let measurement = &output["measurements"][0];
    for ((what, documented), written) in
        tables
            .iter()
            .zip([keys(&line), keys(output), keys(measurement)])
    {
        for key in &written {
            assert!(
                documented.contains(key),
                "'{key}' is written but docs/plans.md does not document it (table after {what:?})"
            );
        }
    }
    // The top level's fields are all written, none optional.
    for key in &tables[0].1 {
        assert!(line.get(key).is_some(), "documented but not written: {key}");
    }
    // The version the doc names is the one written.
    let version = line["kvperf_results"].as_u64().unwrap();
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plans.md"))
        .unwrap();
    assert!(doc.contains(&format!(
        "| `kvperf_results` | format version ({version}) |"
    )));
    assert!(doc.contains(&format!(
        "| `kvperf_step` | its format version ({}) |",
        output["kvperf_step"]
    )));
}
