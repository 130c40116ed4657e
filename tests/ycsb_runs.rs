//! End-to-end YCSB runs through the real binary.

use crate::common;

use crate::common::{kvperf, metric, run_null, workload};
use kvperf::measure::OpKind;
use kvperf::results::StepOutput;

const SMALL: [&str; 4] = ["-p", "recordcount=2000", "-p", "operationcount=4000"];

fn args<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(tail).copied().collect()
}

#[test]
fn rocksdb_load_then_every_core_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let out = kvperf(
        tmp.path(),
        &args(&["load", "--db", "db", "-P", &wa, "-threads", "2"], &SMALL),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(metric(&out.stdout, "INSERT", "Return=OK"), Some(2000.0));
    assert!(metric(&out.stdout, "OVERALL", "Throughput(ops/sec)").unwrap() > 0.0);
    // Settling between phases leaves a store the next phase can use.
    let settled = kvperf(tmp.path(), &["settle", "--db", "db"]);
    assert_eq!(settled.code, 0, "{}", settled.stderr);

    // YCSB's order: D and E insert, so they run last.
    for (name, groups) in [
        ("a", &["READ", "UPDATE"][..]),
        ("b", &["READ", "UPDATE"]),
        ("c", &["READ"]),
        ("f", &["READ", "UPDATE", "READ-MODIFY-WRITE"]),
        ("d", &["READ", "INSERT"]),
        ("e", &["SCAN", "INSERT"]),
    ] {
        let w = workload(name);
        let out = kvperf(
            tmp.path(),
            &args(&["run", "--db", "db", "-P", &w, "-threads", "2"], &SMALL),
        );
        assert_eq!(out.code, 0, "workload {name}: {}", out.stderr);
        let mut total = 0.0;
        for g in groups {
            let ok = metric(&out.stdout, g, "Return=OK")
                .unwrap_or_else(|| panic!("{name}: no [{g}]\n{}", out.stdout));
            assert!(ok > 0.0, "workload {name}: no successful {g}");
            assert_eq!(
                metric(&out.stdout, g, "Return=ERROR"),
                Some(0.0),
                "workload {name} {g}"
            );
            // Every key read was loaded or acknowledged: nothing missing.
            assert_eq!(
                metric(&out.stdout, g, "Return=NOT_FOUND"),
                None,
                "workload {name} {g}"
            );
            if *g != "READ-MODIFY-WRITE" {
                total += ok;
            }
        }
        let rmw = metric(&out.stdout, "READ-MODIFY-WRITE", "Operations").unwrap_or(0.0);
        // Each RMW also counts one READ and one UPDATE.
        assert_eq!(
            total - rmw,
            4000.0,
            "workload {name} op count\n{}",
            out.stdout
        );
        for p in ["50th", "95th", "99th", "99.9", "99.99"] {
            assert!(
                out.stdout
                    .contains(&format!("], {p}PercentileLatency(us), ")),
                "{p}"
            );
        }
    }
}

#[test]
fn operation_mix_matches_each_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 200_000.0;
    for (name, group, share) in [
        ("a", "READ", 0.5),
        ("b", "READ", 0.95),
        ("c", "READ", 1.0),
        ("d", "INSERT", 0.05),
        ("e", "SCAN", 0.95),
        ("f", "READ-MODIFY-WRITE", 0.5),
    ] {
        let w = workload(name);
        let out = kvperf(
            tmp.path(),
            &[
                "run",
                "--engine",
                "null",
                "-P",
                &w,
                "-p",
                "recordcount=10000",
                "-p",
                "operationcount=200000",
                "-p",
                "seed=1",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let got = metric(&out.stdout, group, "Operations").unwrap() / n;
        // Binomial sd at n=200k is at most 0.0011; allow ~5 sd.
        assert!(
            (got - share).abs() < 0.006,
            "workload {name}: {group} share {got}, expected {share}"
        );
    }
}

#[test]
fn json_output_has_configuration_host_and_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let wb = workload("b");
    let out = kvperf(
        tmp.path(),
        &args(
            &[
                "run", "--engine", "null", "-P", &wb, "--format", "json", "--output", "r.json",
                "-threads", "2",
            ],
            &SMALL,
        ),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "--output keeps stdout clean");
    let text = std::fs::read_to_string(tmp.path().join("r.json")).unwrap();
    let v = StepOutput::from_json(&text).unwrap();
    assert_eq!(v.command, "run");
    assert_eq!(v.engine.name, "null");
    assert_eq!(v.settings["recordcount"], "2000");
    assert_eq!(v.settings["requestdistribution"], "zipfian");
    assert!(!v.kvperf.version.is_empty() && !v.kvperf.commit.is_empty());
    assert!(v.host.logical_cores >= 1 && !v.host.kernel.is_empty());
    // A run of milliseconds: it is too short, and its rarer percentiles
    // are of too few operations; nothing else.
    assert!(
        v.error.is_none()
            && v.warnings.len() == 2
            && v.warnings[0].contains("too short to judge")
            && v.warnings[1].starts_with("percentiles from too few operations to mean much: "),
        "{:?}",
        v.warnings
    );
    let m = &v.measurements[0];
    assert_eq!((m.threads, m.operations), (2, 4000));
    assert!(m.ops_per_sec > 0.0);
    assert!(
        !m.intervals.is_empty(),
        "operations per second of the window"
    );
    assert_eq!(
        m.intervals.iter().sum::<u64>(),
        4000,
        "every operation in some second"
    );
    assert!(m.verdict.is_some(), "what bound the run");
    let read = &m.ops[&OpKind::Read];
    assert!(read.latency.count > 3000);
    assert_eq!(read.latency.histogram.get().len(), read.latency.count);
    let a = m.accounting.as_ref().unwrap();
    assert!(a.cpu.is_some() && a.client_threads_cpu_s.is_some() && a.machine_cpu.is_some());
}

#[test]
fn target_rate_paces_reports_both_latencies_and_status_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=3000",
            "-target",
            "2000",
            "-threads",
            "2",
            "-s",
            "-p",
            "status.interval=1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runtime = metric(&out.stdout, "OVERALL", "RunTime(ms)").unwrap();
    // 3000 ops at 2000 ops/s: the last is due at 1.4995 s.
    assert!((1450.0..2500.0).contains(&runtime), "runtime {runtime} ms");
    // Under a target kvperf defaults to `both` (YCSB: `op`): the
    // coordinated-omission-corrected groups are printed beside [READ].
    assert_eq!(metric(&out.stdout, "READ", "Operations"), Some(3000.0));
    assert_eq!(
        metric(&out.stdout, "Intended-READ", "Operations"),
        Some(3000.0),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("[Intended-READ: Count="),
        "{}",
        out.stderr
    );
    let status: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" sec: "))
        .collect();
    assert!(!status.is_empty(), "no status line in {:?}", out.stderr);
    assert!(
        status
            .iter()
            .any(|l| l.contains("operations;") && l.contains("[READ: Count=")),
        "{status:?}"
    );
}

#[test]
fn under_a_target_measurement_interval_op_keeps_ycsbs_output_and_json_records_the_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let paced = |extra: &[&str]| {
        let head = [
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=3000",
            "-target",
            "2000",
        ];
        run_null(tmp.path(), "c", &args(&head, extra))
    };
    let op = paced(&["-p", "measurement.interval=op"]);
    assert_eq!(op.code, 0, "{}", op.stderr);
    assert_eq!(metric(&op.stdout, "READ", "Operations"), Some(3000.0));
    assert_eq!(metric(&op.stdout, "Intended-READ", "Operations"), None);

    let json = paced(&["--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v = StepOutput::from_json(&json.stdout).unwrap();
    assert_eq!(
        v.settings.get("measurement.interval").map(String::as_str),
        Some("both"),
        "the effective value is recorded"
    );
    let read = &v.measurements[0].ops[&OpKind::Read];
    assert_eq!(read.intended.as_ref().map(|l| l.count), Some(3000));

    // Unpaced runs keep YCSB's default and record nothing extra.
    let free = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=300",
            "--format",
            "json",
        ],
    );
    let v = StepOutput::from_json(&free.stdout).unwrap();
    assert_eq!(v.settings.get("measurement.interval"), None);
    assert!(v.measurements[0].ops[&OpKind::Read].intended.is_none());
}

#[test]
fn measurement_interval_both_and_intended_follow_ycsb() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |interval: &str| {
        run_null(
            tmp.path(),
            "c",
            &[
                "-p",
                "recordcount=1000",
                "-p",
                "operationcount=400",
                "-target",
                "400",
                "-p",
                &format!("measurement.interval={interval}"),
                "-s",
                "-p",
                "status.interval=1",
            ],
        )
    };
    let both = run("both");
    assert_eq!(both.code, 0, "{}", both.stderr);
    assert_eq!(metric(&both.stdout, "READ", "Operations"), Some(400.0));
    assert_eq!(
        metric(&both.stdout, "Intended-READ", "Operations"),
        Some(400.0)
    );
    assert!(
        both.stderr.contains("[Intended-READ: Count="),
        "{}",
        both.stderr
    );
    let intended = run("intended");
    assert_eq!(intended.code, 0, "{}", intended.stderr);
    assert_eq!(metric(&intended.stdout, "READ", "Operations"), Some(400.0));
    assert_eq!(
        metric(&intended.stdout, "Intended-READ", "Operations"),
        None
    );
    assert_eq!(metric(&intended.stdout, "READ", "Return=OK"), Some(400.0));
    let first = both.stderr.lines().find(|l| l.contains(" sec: ")).unwrap();
    assert!(
        first.contains(" 0 sec: "),
        "YCSB prints its first status line at once: {first}"
    );
}

#[test]
fn max_execution_time_and_warmup_bound_the_measured_window() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=1",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = StepOutput::from_json(&out.stdout).unwrap();
    let m = &v.measurements[0];
    assert!(m.hit_time_limit);
    let ms = m.runtime_s * 1000.0;
    assert!((990.0..1500.0).contains(&ms), "{ms}");

    // 500 ops at 1000/s after a 1 s warmup: the window is 0.5 s, not 1.5 s,
    // and only the 500 measured operations are counted.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=500",
            "-p",
            "warmuptime=1",
            "-target",
            "1000",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(metric(&out.stdout, "READ", "Operations"), Some(500.0));
    let runtime = metric(&out.stdout, "OVERALL", "RunTime(ms)").unwrap();
    assert!((450.0..1000.0).contains(&runtime), "runtime {runtime}");
}

/// Ctrl-C ends a run like its time limit: what it measured is written, and
/// the interruption is a run failure (exit 3), not silence.
#[test]
fn an_interrupted_run_keeps_what_it_measured() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("run.json");
    let file = workload("c");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args([
            "run", "--engine", "null", "-P", &file, "-s", "--format", "json",
        ])
        .args(["-p", "recordcount=1000", "-p", "operationcount=100000000"])
        .args([
            "-p",
            "target=2000",
            "-p",
            "maxexecutiontime=120",
            "-p",
            "status.interval=1",
        ])
        .arg("--output")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The first status line with operations: the run is under way.
    while !line.contains("[READ: Count=") || line.contains("[READ: Count=0,") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no status line");
    }
    // SAFETY: kill() on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{rest}");
    assert!(rest.contains("interrupted after"), "{rest}");
    let out: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = &out.measurements[0];
    assert!(
        m.operations > 0 && m.runtime_s < 100.0,
        "{} ops in {} s",
        m.operations,
        m.runtime_s
    );
    assert!(out.error.unwrap().message.contains("interrupted"));
}

#[test]
fn percentiles_from_too_few_operations_are_marked_in_text_json_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    // Workload C, 500 reads: p99 is of enough (100), p99.9 is not (1,000).
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=500",
            "-p",
            "hdrhistogram.percentiles=99,99.9",
            "--format",
            "json",
            "--output",
            "r.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "kvperf: warning: percentiles from too few operations to mean much: READ from 500 operations: p99.9 needs 1,000; by nearest rank"
        ),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(tmp.path().join("r.json")).unwrap();
    let v = StepOutput::from_json(&text).unwrap();
    let read = &v.measurements[0].ops[&OpKind::Read].latency;
    assert_eq!(read.count, 500);
    assert_eq!(
        read.too_few_for,
        ["p99.9", "p99.99"],
        "what the JSON carries"
    );
    // By nearest rank, p99.9 of 500 is their maximum; p99 is not.
    assert_eq!(read.p999_us, read.max_us);
    // A report marks the p99.9 and states the rule.
    let results = tmp.path().join("r.json");
    let dir = tmp.path().join("report");
    common::report(tmp.path(), &results, &dir);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("Percentiles are by nearest rank"), "{md}");
    let marked = format!("{} \u{b6} |", kvperf_micros(read.p999_us));
    assert!(md.contains(&marked), "no `{marked}` in {md}");
    let csv = std::fs::read_to_string(dir.join("report.csv")).unwrap();
    let row = csv.lines().find(|l| l.contains(",read,")).unwrap();
    assert!(row.contains(",actual,p99.9,"), "{row}");

    // 2,000 reads are enough for p99.9: no warning, nothing marked.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=2000",
            "-p",
            "hdrhistogram.percentiles=99,99.9",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("too few operations"), "{}", out.stderr);
}

/// A latency as reports print it: one decimal under 100 us, then grouped
/// whole microseconds, from 10 ms in ms (the null engine's are far below).
fn kvperf_micros(us: f64) -> String {
    assert!(us < 100.0, "a null read takes under 100 us: {us}");
    format!("{us:.1}")
}
