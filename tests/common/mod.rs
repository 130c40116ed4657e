//! Runs the real `kvperf` binary in a temporary directory.
#![allow(dead_code)]

pub mod machine;
pub mod server;

use std::path::{Path, PathBuf};

use kvperf::results::{self, Record};
use std::process::Command;

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Self {
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

pub fn workloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads")
}

pub fn workload(name: &str) -> String {
    workloads()
        .join(format!("workload{name}"))
        .display()
        .to_string()
}

pub fn kvperf(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("kvperf runs");
    Output::from(out)
}

/// `kvperf run --engine null -P workloads/workload<name>` plus `extra`.
pub fn run_null(dir: &Path, name: &str, extra: &[&str]) -> Output {
    let file = workload(name);
    let mut args = vec!["run", "--engine", "null", "-P", file.as_str()];
    args.extend_from_slice(extra);
    kvperf(dir, &args)
}

/// A value from YCSB's text output: `[GROUP], metric, value`.
pub fn metric(stdout: &str, group: &str, name: &str) -> Option<f64> {
    let prefix = format!("[{group}], {name}, ");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().expect("numeric metric"))
}

/// Asserts the run failed the way bad input must: exit 2, one line on
/// stderr starting with `kvperf: ` and containing `needle`, no panic.
pub fn assert_input_error(out: &Output, needle: &str) {
    assert_eq!(out.code, 2, "exit code; stderr: {}", out.stderr);
    // A step states what it runs before it runs (`Command line:` and its
    // header, docs/semantics.md); an error found then follows it.
    let header = ["Command line: ", "kvperf ", "Engine: ", "Study: "];
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.contains("warning:"))
        .filter(|l| l.starts_with("kvperf: ") || !header.iter().any(|h| l.starts_with(h)))
        .collect();
    assert_eq!(lines.len(), 1, "one line expected, got: {:?}", out.stderr);
    assert!(lines[0].starts_with("kvperf: "), "{}", lines[0]);
    assert!(
        lines[0].contains(needle),
        "{:?} does not mention {needle:?}",
        lines[0]
    );
    assert!(!out.stderr.contains("panicked") && !out.stderr.contains("backtrace"));
}

/// Whether this process may drop the page cache (root outside a container).
pub fn can_drop_caches() -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok()
}

/// The name libtest knows a test by, for `--exact` when a test runs itself
/// again in a child process: `module_path!()` without the crate's name,
/// then the function's (`async_runner::a_test`).
pub fn test_path(module_path: &str, function: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, m)| m);
    if module.is_empty() {
        function.to_string()
    } else {
        format!("{module}::{function}")
    }
}

/// A test that cannot run its case here (a tool not installed): prints
/// `SKIPPED test: why` on a developer's machine; under CI (`CI=true`)
/// fails, since a skip there would pass a test that never ran.
pub fn skip_unless_ci(test: &str, why: &str) {
    match server::cannot_start(test, why, std::env::var("CI").ok().as_deref()) {
        Ok(skipped) => note_skip(&skipped),
        Err(_) => panic!("FAILED {test}: CI=true and {why}"),
    }
}

/// Prints a `SKIPPED test: why` line and appends it to the file
/// `KVPERF_SKIP_LOG` names, where scripts/test.sh counts the skips (cargo
/// test shows no output of a test that passed).
pub fn note_skip(line: &str) {
    use std::io::Write;
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("KVPERF_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        // One write per line: appends from parallel tests do not interleave.
        if let Ok(mut file) = file {
            let _ = file.write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
        }
    }
}

/// `kvperf report RESULTS --out OUT`, which must succeed.
pub fn report(dir: &Path, results: &Path, out: &Path) {
    let shown = (results.display().to_string(), out.display().to_string());
    let done = kvperf(dir, &["report", &shown.0, "--out", &shown.1]);
    assert_eq!(done.code, 0, "kvperf report: {}", done.stderr);
}

/// Asserts that the report of `results` has a "where the shards ran"
/// table naming every shard of every merged record with its place.
pub fn assert_report_places_the_shards(dir: &Path, results: &Path) {
    let out = dir.join("placement-report");
    report(dir, results, &out);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(": where the shards ran"), "{md}");
    for record in lines(results) {
        let Some(info) = &record.output.merged else {
            continue;
        };
        for shard in &info.shards {
            let row = format!("| {}/{} | {} |", shard.index, info.count, shard.place());
            assert!(md.contains(&row), "no row `{row}` in:\n{md}");
        }
    }
}

/// A small RocksDB plan in `dir`: two configs, a load, two workloads x two
/// thread counts; each run step takes about a second (maxexecutiontime).
pub fn small_plan(dir: &Path) -> PathBuf {
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
pub fn plan_run(dir: &Path, plan: &Path, results: &Path) -> Output {
    let shown = (plan.display().to_string(), results.display().to_string());
    kvperf(dir, &["plan", "run", &shown.0, "--results", &shown.1])
}

/// The complete records of a results file, read with kvperf's own type.
pub fn lines(path: &Path) -> Vec<Record> {
    if !path.exists() {
        return Vec::new();
    }
    let loaded = results::read(path).expect("every complete line is a kvperf result");
    loaded.records
}

/// A results line of a run step with known figures (kvperf's own types):
/// `latencies_ns` are the successful reads of the step.
pub fn run_record(
    config: &str,
    workload: &str,
    threads: u64,
    ops_per_sec: f64,
    latencies_ns: &[u64],
) -> Record {
    use kvperf::engine::OpError;
    use kvperf::measure::{OpHistograms, OpKind};
    use kvperf::results::step::{op_stats, Measurement, StepOutput};
    use kvperf::results::{PlanId, StepId};
    let mut h = OpHistograms::new();
    for &ns in latencies_ns {
        h.record(OpKind::Read, ns, None, &Ok::<(), OpError>(()));
    }
    let mut output = StepOutput::begin("run");
    output.measurements.push(Measurement {
        name: "run".into(),
        threads: threads as usize,
        runtime_s: 1.0,
        operations: latencies_ns.len() as u64,
        ops_per_sec,
        ops: op_stats(&h),
        ..Measurement::default()
    });
    Record {
        kvperf_results: results::FORMAT,
        plan: PlanId {
            name: "seed-000".into(),
            fingerprint: "f".into(),
            scale: 1.0,
            file: String::new(),
            ratios: false,
            ..Default::default()
        },
        step: StepId {
            id: format!("{config}/{workload}-t{threads}"),
            config: config.into(),
            kind: "run".into(),
            workload: workload.into(),
            label: String::new(),
            threads,
            repeat: 1,
            db: String::new(),
        },
        started_at_unix_ms: 0,
        finished_at_unix_ms: 0,
        before: Vec::new(),
        command: Vec::new(),
        output,
    }
}

/// The one line of a plan's stderr saying why it stopped (a failed step,
/// or one that cannot run until its input is corrected).
pub fn failed_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("step ") && (l.contains("failed") || l.contains(" cannot run: ")))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0]
}

/// The merged figures are the sum of the shards': operations, and each
/// operation type's returns; and each shard says where it ran.
pub fn assert_merged_is_the_sum(what: &str, out: &kvperf::results::step::StepOutput) {
    let m = out.measured().expect("a measured window");
    let info = out.merged.as_ref().expect("a merged result");
    assert_eq!(info.count, 2, "{what}");
    assert_eq!(info.shards.len(), 2, "{what}");
    let sum: u64 = info.shards.iter().map(|s| s.operations).sum();
    assert_eq!(sum, m.operations, "{what}: operations");
    for (op, stats) in &m.ops {
        for (outcome, &n) in &stats.returns {
            let parts: u64 = info
                .shards
                .iter()
                .map(|s| {
                    s.returns
                        .get(op)
                        .and_then(|r| r.get(outcome))
                        .copied()
                        .unwrap_or(0)
                })
                .sum();
            assert_eq!(parts, n, "{what}: {} {outcome}", op.name());
        }
    }
    assert!(
        info.shards.iter().all(|s| s.operations > 0),
        "{what}: every shard worked: {:?}",
        info.shards
    );
}

/// Imports `csv` (`time,op,key,value_size` lines) as `NAME.kvtrace` in
/// `dir` and returns that file name.
pub fn import_csv_trace(dir: &Path, name: &str, csv: &str) -> String {
    let input = dir.join(format!("{name}.csv"));
    std::fs::write(&input, csv).unwrap();
    let output = format!("{name}.kvtrace");
    let shown = input.display().to_string();
    let done = kvperf(
        dir,
        &[
            "trace", "import", &shown, "--from", "csv", "--output", &output,
        ],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    output
}
