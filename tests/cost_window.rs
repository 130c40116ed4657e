//! Costs cover the measured window only: warmup and the engine's close
//! are outside every per-operation cost, as they are outside latency.

use crate::common::run_null;
use kvperf::measure::accounting::Accounting;
use kvperf::results::StepOutput;

fn measured(stdout: &str) -> (f64, f64, Accounting) {
    let step: StepOutput = serde_json::from_str(stdout).expect("a step's JSON");
    let m = &step.measurements[0];
    let a = m.accounting.clone().expect("accounting");
    (m.runtime_s, m.operations as f64, a)
}

#[test]
fn the_accounting_window_is_the_measured_window_not_the_warmup() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "warmuptime=1",
            "-p",
            "maxexecutiontime=1",
            "-p",
            "operationcount=0",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (runtime_s, _, a) = measured(&out.stdout);
    // Read at the window's open and close: the second of warmup is not in it.
    assert!(
        (a.wall_s - runtime_s).abs() < 0.25,
        "costs over {} s, latency over {runtime_s} s",
        a.wall_s
    );
}

#[test]
fn warmup_cpu_is_not_in_the_cpu_per_operation() {
    let tmp = tempfile::tempdir().unwrap();
    // A second of unpaced warmup keeps a client thread busy; the 2000
    // measured operations take milliseconds.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "warmuptime=1",
            "-p",
            "operationcount=2000",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, ops, a) = measured(&out.stdout);
    assert_eq!(ops, 2000.0);
    let cpu = a.cpu.map(|c| c.user_s + c.system_s).expect("CPU time");
    assert!(cpu < 0.25, "{cpu} CPU seconds for 2000 null operations");
}
