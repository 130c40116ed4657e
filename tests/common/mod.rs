//! Runs the real `kvperf` binary in a temporary directory.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
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
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
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
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.contains("warning:"))
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

/// `kvperf report RESULTS --out OUT`, which must succeed.
pub fn report(dir: &Path, results: &Path, out: &Path) {
    let shown = (results.display().to_string(), out.display().to_string());
    let done = kvperf(dir, &["report", &shown.0, "--out", &shown.1]);
    assert_eq!(done.code, 0, "kvperf report: {}", done.stderr);
}
