//! Hostile cases: failures (docs/reliability.md). A stall or any run
//! failure keeps every measurement taken before it, in the step's JSON
//! and in a plan's results (marked failed); every return but OK
//! (NOT_FOUND too) is a failure wherever failures are counted: stderr,
//! the JSON's `warnings`, the text output, `onerror=stop`.

#[allow(unused_imports)]
use crate::common;

#[cfg(feature = "redis")]
use std::time::Duration;

#[cfg(feature = "redis")]
use crate::hostile::waits::{
    output, records, redis_pid, redis_stopped_at, rest, spawn, step_args, stop_at, wait_within,
    Continue,
};
#[cfg(feature = "redis")]
use kvperf::measure::{OpKind, Outcome};

#[cfg(feature = "redis")]
fn loaded_redis(test: &str) -> Option<common::server::Server> {
    let redis = common::server::Server::start("redis", test)?;
    let json = redis.dir().join("load.json");
    let args = step_args("load", "redis", "a", &records(redis.port), &json);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let load = common::kvperf(redis.dir(), &args);
    assert_eq!(load.code, 0, "{}", load.stderr);
    Some(redis)
}

/// Reads at 1000/s, the server stopped (SIGSTOP) as the 1000th read
/// reaches it: the stall ends the run after stalltimeout, and its JSON
/// holds the reads measured before (issue 44: `measurements: []`).
/// Four clients, so tasks (`clients=tasks`).
#[cfg(feature = "redis")]
#[test]
fn a_stall_keeps_what_the_window_measured_before_it() {
    let Some(redis) = loaded_redis("failures_stall") else {
        return;
    };
    let (relay, _cont, props) = redis_stopped_at(
        &redis,
        b"HGETALL",
        1000,
        &[
            "operationcount=100000",
            "target=1000",
            "threadcount=4",
            "stalltimeout=2",
        ],
    );
    let json = redis.dir().join("run.json");
    let (mut child, lines) = spawn(redis.dir(), &step_args("run", "redis", "c", &props, &json));
    relay
        .stopped
        .recv_timeout(Duration::from_secs(60))
        .expect("the 1000th read");
    let status = wait_within(&mut child, Duration::from_secs(20), "a stall");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let out = output(&json);
    let error = out.error.as_ref().expect("the stall is the step's error");
    assert!(
        error.message.contains("stopped answering"),
        "{}",
        error.message
    );
    assert_eq!(out.measurements.len(), 1, "{stderr}");
    let m = &out.measurements[0];
    let reads = m.ops[&OpKind::Read].count(Outcome::Ok);
    // A client hands its figures over every 100 ms: at most a tick's
    // reads of the stuck clients are not kept (about 100 at 1000/s).
    assert!(
        (800..1000).contains(&reads),
        "{reads} reads kept of 999 done"
    );
    assert_eq!(m.operations, reads);
    assert!(m.runtime_s > 0.5 && m.ops_per_sec > 0.0, "{m:?}");
}

/// The same stall inside a plan's run step: the plan records the step as
/// failed with what it measured (issue 44: the record's measurements
/// were empty, while the plan said what was measured is kept).
#[cfg(feature = "redis")]
#[test]
fn a_stall_in_a_plan_keeps_the_steps_figures_in_its_results() {
    let Some(redis) = common::server::Server::start("redis", "failures_plan_stall") else {
        return;
    };
    let pid = redis_pid(&redis);
    let relay = stop_at(redis.port, pid, b"HGETALL", 1000);
    let _cont = Continue(pid);
    let dir = redis.dir();
    let plan = dir.join("stall.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "stall"
driver = "ycsb"
[properties]
recordcount = 200
fieldcount = 2
fieldlength = 10
operationcount = 100000
target = 1000
stalltimeout = 2
[[configs]]
name = "redis"
engine = "redis"
properties = {{ "redis.port" = {} }}
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
            relay.port
        ),
    )
    .unwrap();
    let results = dir.join("r.jsonl");
    let out = common::plan_run(dir, &plan, &results);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        relay.stopped.try_recv().is_ok(),
        "the server was stopped: {}",
        out.stderr
    );
    let records = common::lines(&results);
    let run = records
        .iter()
        .find(|r| r.step.kind == "run")
        .unwrap_or_else(|| panic!("the run step is recorded: {}", out.stderr));
    let error = run.output.error.as_ref().expect("marked failed");
    assert!(
        error.message.contains("stopped answering"),
        "{}",
        error.message
    );
    let m = run.output.measured().expect("its figures are kept");
    let reads = m.ops[&OpKind::Read].count(Outcome::Ok);
    assert!(
        (800..1000).contains(&reads),
        "{reads} reads kept of 999 done"
    );
    assert!(common::failed_line(&out.stderr).contains("what it measured is kept"));
}

/// Empties the server's data (`FLUSHALL`), as a user might between load
/// and run.
#[cfg(feature = "redis")]
fn flushall(port: u16) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"*1\r\n$8\r\nFLUSHALL\r\n").unwrap();
    let mut reply = [0u8; 5];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}

/// Reads after the server's data was flushed return NOT_FOUND: they are
/// failures in every count (issue 44: exit 0 without a warning, counted as
/// throughput, not stopping `onerror=stop`, and stderr's count disagreeing
/// with `[READ-FAILED], Operations`).
#[cfg(feature = "redis")]
#[test]
fn not_found_after_a_flush_is_a_failure_in_every_count() {
    let Some(redis) = loaded_redis("failures_not_found") else {
        return;
    };
    flushall(redis.port);
    let dir = redis.dir();
    let workload = common::workload("c");
    let port = format!("redis.port={}", redis.port);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--engine",
            "redis",
            "-P",
            &workload,
            "-p",
            &port,
            "-p",
            "recordcount=200",
            "-p",
            "operationcount=500",
        ];
        args.extend_from_slice(extra);
        common::kvperf(dir, &args)
    };

    // onerror=continue (the default): counted, warned, the run goes on.
    let text = run(&[]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let warning = "500 READ operations failed (500 NOT_FOUND; first: NOT_FOUND";
    assert!(
        text.stderr.contains(&format!("kvperf: warning: {warning}")),
        "{}",
        text.stderr
    );
    assert_eq!(
        common::metric(&text.stdout, "READ-FAILED", "Operations"),
        Some(500.0)
    );
    assert_eq!(
        common::metric(&text.stdout, "READ", "Return=NOT_FOUND"),
        Some(500.0)
    );
    assert_eq!(
        common::metric(&text.stdout, "OVERALL", "FailedOperations"),
        Some(500.0)
    );
    assert_eq!(
        common::metric(&text.stdout, "OVERALL", "SuccessfulThroughput(ops/sec)"),
        Some(0.0)
    );
    assert!(common::metric(&text.stdout, "OVERALL", "Throughput(ops/sec)").unwrap() > 0.0);

    let json = run(&["--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let out = kvperf::results::StepOutput::from_json(&json.stdout).unwrap();
    assert!(
        out.warnings.iter().any(|w| w.starts_with(warning)),
        "{:?}",
        out.warnings
    );
    let read = &out.measurements[0].ops[&OpKind::Read];
    assert_eq!(read.count(Outcome::NotFound), 500);

    // onerror=stop: the first NOT_FOUND ends the run, exit 3, with what
    // was measured.
    let stop = run(&["-p", "onerror=stop", "--format", "json"]);
    assert_eq!(stop.code, 3, "{}", stop.stderr);
    let out = kvperf::results::StepOutput::from_json(&stop.stdout).unwrap();
    let error = out.error.expect("stopped");
    assert!(
        error.message.contains("onerror=stop") && error.message.contains("READ failed: NOT_FOUND"),
        "{}",
        error.message
    );
    let m = &out.measurements[0];
    assert!(m.operations >= 1 && m.operations < 500, "{}", m.operations);
    assert_eq!(m.ops[&OpKind::Read].count(Outcome::NotFound), m.operations);
}
