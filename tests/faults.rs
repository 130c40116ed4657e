//! A server that goes away in the middle of a run: its failures are
//! counted per operation type and named once, the run goes on and recovers
//! when the server is back (`onerror=continue`, YCSB's way), or stops at the
//! first failure with what it measured kept (`onerror=stop`). Real Redis,
//! started and stopped by `kvperf server`.
#![cfg(feature = "redis")]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use kvperf::results::step::ErrorKind;
use kvperf::results::StepOutput;

/// Redis started by `kvperf server start` on a free port, which a test
/// stops and starts again.
struct Redis(common::server::Server);

impl Redis {
    fn start() -> Option<Self> {
        common::server::Server::start("redis", "faults").map(Self)
    }

    fn server(&self, action: &str) -> common::Output {
        self.0.action(action)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.dir().join(name)
    }

    fn kvperf_args(&self, phase: &str) -> Vec<String> {
        let mut args: Vec<String> = [phase, "--engine", "redis", "-P", &common::workload("a")]
            .map(String::from)
            .to_vec();
        for p in [
            self.0.port_property("redis"),
            "recordcount=200".into(),
            "fieldcount=2".into(),
            "fieldlength=10".into(),
        ] {
            args.extend(["-p".into(), p]);
        }
        args
    }
}

/// A `kvperf run` of inserts only (they succeed again on a restarted,
/// empty server), paced and bounded in time, printing status every second.
fn start_run(redis: &Redis, json: &Path, extra: &[&str]) -> (Child, Receiver<String>) {
    let mut args = redis.kvperf_args("run");
    for p in [
        "readproportion=0",
        "updateproportion=0",
        "insertproportion=1",
        "operationcount=100000000",
        "target=500",
        "maxexecutiontime=20",
        "status.interval=1",
    ]
    .iter()
    .chain(extra)
    {
        args.extend(["-p".into(), p.to_string()]);
    }
    args.extend([
        "-s".into(),
        "--format".into(),
        "json".into(),
        "--output".into(),
    ]);
    args.push(json.display().to_string());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(&args)
        .current_dir(redis.0.dir())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Reads status lines until one has a non-empty `[GROUP: Count=N` bracket.
fn wait_for_group(lines: &Receiver<String>, group: &str, seen: &mut Vec<String>) {
    let needle = format!("[{group}: Count=");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) else {
            continue;
        };
        seen.push(line.clone());
        if let Some(rest) = line.split(&needle).nth(1) {
            let count: u64 = rest.split(',').next().unwrap().parse().unwrap();
            if count > 0 {
                return;
            }
        }
    }
    panic!(
        "no status line with {group} operations; stderr so far:\n{}",
        seen.join("\n")
    );
}

fn returns(out: &StepOutput, code: &str) -> u64 {
    let m = &out.measurements[0];
    m.ops
        .values()
        .map(|s| s.returns.get(code).copied().unwrap_or(0))
        .sum()
}

#[test]
fn a_run_counts_failures_while_the_server_is_down_and_recovers_after_a_restart() {
    let Some(redis) = Redis::start() else { return };
    let load = common::kvperf(redis.0.dir(), &str_args(&redis.kvperf_args("load")));
    assert_eq!(load.code, 0, "{}", load.stderr);

    let json = redis.path("run.json");
    let (mut child, lines) = start_run(&redis, &json, &[]);
    let mut seen = Vec::new();
    wait_for_group(&lines, "INSERT", &mut seen);
    let stopped = redis.server("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    wait_for_group(&lines, "INSERT-FAILED", &mut seen);
    let started = redis.server("start");
    assert_eq!(started.code, 0, "{}", started.stderr);
    // A status line after the restart with successful inserts: the run
    // reconnected and went on.
    let restarted_at = seen.len();
    wait_for_group(&lines, "INSERT", &mut seen);
    assert!(seen.len() > restarted_at);
    let status = child.wait().unwrap();
    assert!(status.success(), "the run goes on: {status}");

    let out: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let (ok, failed) = (returns(&out, "OK"), returns(&out, "ERROR"));
    assert!(ok > 0 && failed > 0, "OK={ok} ERROR={failed}");
    assert_eq!(ok + failed, out.measurements[0].operations);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("INSERT operations failed")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn onerror_stop_ends_the_run_at_the_first_failure_and_keeps_what_was_measured() {
    let Some(redis) = Redis::start() else { return };
    let load = common::kvperf(redis.0.dir(), &str_args(&redis.kvperf_args("load")));
    assert_eq!(load.code, 0, "{}", load.stderr);

    let json = redis.path("run.json");
    let started = Instant::now();
    let (mut child, lines) = start_run(&redis, &json, &["onerror=stop"]);
    let mut seen = Vec::new();
    wait_for_group(&lines, "INSERT", &mut seen);
    let stopped = redis.server("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "a run failure, not bad input");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "stopped before its time limit"
    );
    let out: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let error = out.error.as_ref().expect("the error is recorded");
    assert_eq!(error.kind, ErrorKind::Run);
    assert!(
        error.message.contains("onerror=stop") && error.message.contains("INSERT failed"),
        "{}",
        error.message
    );
    assert!(
        returns(&out, "OK") > 0,
        "what ran before the failure is kept"
    );
    assert!(returns(&out, "ERROR") >= 1);
    assert!(!out.measurements[0].hit_time_limit);
}

#[test]
fn a_server_that_is_not_running_is_one_clear_line() {
    let Some(redis) = Redis::start() else { return };
    let stopped = redis.server("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let out = common::kvperf(redis.0.dir(), &str_args(&redis.kvperf_args("load")));
    common::assert_input_error(&out, "cannot reach Redis");
    assert!(
        out.stderr.contains("kvperf server start redis"),
        "{}",
        out.stderr
    );
}

fn str_args(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A server that stops answering (SIGSTOP: connections open, no replies)
/// ends the run after `stalltimeout` seconds without a completed
/// operation, with one line and exit 3, instead of hanging a plan.
#[test]
fn a_server_that_stops_answering_ends_the_run_after_the_stall_timeout() {
    let Some(redis) = Redis::start() else { return };
    let load = common::kvperf(redis.0.dir(), &str_args(&redis.kvperf_args("load")));
    assert_eq!(load.code, 0, "{}", load.stderr);
    let pid: i32 = std::fs::read_to_string(redis.0.server_dir().join("redis.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let json = redis.path("run.json");
    let (mut child, lines) = start_run(&redis, &json, &["stalltimeout=3"]);
    let mut seen = Vec::new();
    wait_for_group(&lines, "INSERT", &mut seen);
    // SAFETY: signals to the Redis server this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let status = child.wait();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    assert_eq!(status.unwrap().code(), Some(3));
    // Everything up to the end of its stderr (the reader ends at EOF).
    let rest: Vec<String> = lines.iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("stopped answering (stalltimeout=3)")),
        "{rest:?}"
    );
    // --output is written before the process ends, with the stall as its error.
    let output = StepOutput::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let error = output.error.expect("the stall is the step's error");
    assert!(
        error.message.contains("stopped answering"),
        "{}",
        error.message
    );
    assert_eq!(output.engine.name, "redis");
}

/// A plan whose first configuration's Redis cannot start (its port is
/// taken) records that configuration's steps as failed and runs the
/// other configuration; `--fail-fast` stops at the first instead.
#[test]
fn a_configuration_whose_server_cannot_start_does_not_stop_the_study() {
    // Only to know this machine runs Redis at all (else SKIPPED, or a
    // failure under CI).
    let Some(redis) = Redis::start() else { return };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = redis.0.dir();
    let plan = dir.join("study.toml");
    let text = format!(
        r#"
name = "two-configs"
driver = "ycsb"
[properties]
recordcount = 100
operationcount = 500
[[configs]]
name = "broken"
engine = "redis"
properties = {{ "redis.port" = {port} }}
servers = [{{ name = "redis", port = {port} }}]
[[configs]]
name = "driver"
engine = "null"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#
    );
    std::fs::write(&plan, text).unwrap();
    let plan_arg = plan.display().to_string();
    let run = |results: &str, extra: &[&str]| {
        let mut args = vec!["plan", "run", plan_arg.as_str(), "--results", results];
        args.extend_from_slice(extra);
        common::kvperf(dir, &args)
    };
    let out = run("r.jsonl", &[]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("the other configurations go on"),
        "{}",
        out.stderr
    );
    let records = common::lines(&dir.join("r.jsonl"));
    let failed: Vec<_> = records
        .iter()
        .filter(|r| r.step.config == "broken")
        .collect();
    let ran: Vec<_> = records
        .iter()
        .filter(|r| r.step.config == "driver")
        .collect();
    assert_eq!(failed.len(), 2, "both of its steps, recorded as failed");
    assert!(failed.iter().all(|r| r.output.error.is_some()));
    assert_eq!(ran.len(), 2);
    assert!(ran.iter().all(|r| r.output.error.is_none()));
    // The report is written all the same, the failed configuration marked.
    let md = std::fs::read_to_string(dir.join("r-report/report.md")).unwrap();
    assert!(md.contains("step stopped"), "{md}");
    // --fail-fast: nothing after the first configuration runs.
    let out = run("fast.jsonl", &["--fail-fast"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(common::lines(&dir.join("fast.jsonl")).is_empty());
    drop(taken);
}
