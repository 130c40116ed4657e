//! A table-driven sweep: every property kvperf knows, at its type's
//! extremes and with nonsense, on a short null-engine run. Whatever the
//! value, kvperf either runs (exit 0) or refuses it with exactly one line
//! (exit 2); it never panics, never prints a backtrace, never fails the
//! run (exit 3) over a value it should have refused, and never hangs (each
//! case is killed after a bound and reported).

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kvperf::workload::ycsb::config::KNOWN_PROPERTIES;

/// What every property is tried with: zero, one, negative, the largest
/// integers, huge and not-a-number floats, text, empty, and a value with
/// an embedded newline.
const VALUES: [&str; 12] = [
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "1e308",
    "NaN",
    "-inf",
    "abc",
    "",
    "1\n2",
];

/// Properties whose extreme values legitimately make a run long or large
/// (they are bounded by other checks, but a 2^63 `operationcount` is a
/// valid request to run for a very long time): each gets a time limit.
const LIMIT: &str = "maxexecutiontime=1";

/// A case's bound: far above the ~0.1 s a case takes, so a slow machine
/// does not fail it, and far below forever.
const BOUND: Duration = Duration::from_secs(30);

struct Case {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

fn run_case(dir: &std::path::Path, property: &str, value: &str) -> Case {
    let assignment = format!("{property}={value}");
    let file = common::workload("a");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "null", "-P", &file])
        .args([
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=200",
            "-p",
            LIMIT,
        ])
        .args(["-p", &assignment])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Case {
        code,
        stderr,
        took: started.elapsed(),
    }
}

/// What is wrong with `case` for `-p property=value`, if anything.
fn defect(property: &str, value: &str, case: &Case) -> Option<String> {
    let lines: Vec<&str> = case
        .stderr
        .lines()
        .filter(|l| !l.contains("warning:"))
        .collect();
    let shown = format!("-p {property}={value:?}");
    if case.stderr.contains("panicked") || case.stderr.contains("backtrace") {
        return Some(format!("{shown}: panicked: {:?}", case.stderr));
    }
    match case.code {
        Some(0) => None,
        Some(2) if lines.len() == 1 && lines[0].starts_with("kvperf: ") => None,
        None => Some(format!("{shown}: still running after {:?}", case.took)),
        Some(code) => Some(format!("{shown}: exit {code}: {:?}", case.stderr)),
    }
}

#[test]
fn every_property_at_its_extremes_runs_or_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, &str)> = KNOWN_PROPERTIES
        .iter()
        .flat_map(|p| VALUES.iter().map(move |v| (*p, *v)))
        .collect();
    // Four at a time: most cases take milliseconds, a few run their second.
    let workers = 4;
    let defects: Vec<String> = std::thread::scope(|scope| {
        let running: Vec<_> = (0..workers)
            .map(|w| {
                let (cases, dir) = (&cases, tmp.path());
                scope.spawn(move || {
                    cases
                        .iter()
                        .skip(w)
                        .step_by(workers)
                        .filter_map(|(p, v)| defect(p, v, &run_case(dir, p, v)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        running
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    eprintln!("sweep: {} cases", cases.len());
    assert!(
        defects.is_empty(),
        "{} defects:\n{}",
        defects.len(),
        defects.join("\n")
    );
}
