//! `--metrics-addr`: a run and a plan serve their live figures in the
//! Prometheus text format while they run; a scrape mid-run parses with a
//! Prometheus text-format parser and shows the window's operations.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_input_error, run_null, workload};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvperf starts")
}

fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: kvperf\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    Some(body.to_string())
}

/// The value of the first sample of `name` whose labels include `labels`.
fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

/// Scrapes until `ready` holds on a parsed scrape (or the child ends).
fn scrape_until(
    child: &mut Child,
    port: u16,
    ready: impl Fn(&prometheus_parse::Scrape) -> bool,
) -> prometheus_parse::Scrape {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(body) = scrape(port) {
            let lines = body.lines().map(|l| Ok(l.to_string()));
            let parsed =
                prometheus_parse::Scrape::parse(lines).expect("the Prometheus parser reads it");
            if ready(&parsed) {
                return parsed;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "kvperf ended before its figures were seen"
        );
        assert!(Instant::now() < give_up, "no figures within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_serves_its_figures_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let file = workload("a");
    let mut child = spawn(
        dir.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &file,
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=6",
            "--metrics-addr",
            &addr,
        ],
    );
    let seen = scrape_until(&mut child, port, |s| {
        sample(
            s,
            "kvperf_operations_total",
            &[("op", "read"), ("outcome", "ok")],
        )
        .is_some_and(|v| v > 0.0)
    });
    assert_eq!(
        sample(
            &seen,
            "kvperf_step_info",
            &[("command", "run"), ("engine", "null")]
        ),
        Some(1.0)
    );
    assert!(
        sample(
            &seen,
            "kvperf_interval_operations_per_second",
            &[("op", "update")]
        )
        .unwrap()
            > 0.0
    );
    assert_eq!(
        sample(
            &seen,
            "kvperf_operations_total",
            &[("op", "read"), ("outcome", "failed")]
        ),
        Some(0.0)
    );
    let p99 = sample(
        &seen,
        "kvperf_interval_latency_microseconds",
        &[("op", "read"), ("quantile", "0.99")],
    );
    assert!(p99.is_some_and(|v| v > 0.0), "{p99:?}");
    let status = child.wait().unwrap();
    assert!(status.success());
}

#[test]
fn a_plan_serves_its_progress_and_the_step_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "watched"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 100000000
maxexecutiontime = 4
[[configs]]
name = "only"
[[steps]]
workloads = ["c"]
threads = [1, 2]
"#,
    )
    .unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let shown = plan.display().to_string();
    let mut child = spawn(
        dir.path(),
        &[
            "plan",
            "run",
            &shown,
            "--results",
            "r.jsonl",
            "--metrics-addr",
            &addr,
        ],
    );
    let seen = scrape_until(&mut child, port, |s| {
        sample(
            s,
            "kvperf_operations_total",
            &[("op", "read"), ("outcome", "ok")],
        )
        .is_some_and(|v| v > 0.0)
    });
    assert_eq!(
        sample(&seen, "kvperf_plan_steps", &[("state", "total")]),
        Some(2.0)
    );
    // The step's figures carry the plan's labels for the step.
    assert_eq!(
        sample(
            &seen,
            "kvperf_step_info",
            &[("plan", "watched"), ("config", "only"), ("workload", "c")]
        ),
        Some(1.0)
    );
    let status = child.wait().unwrap();
    assert!(status.success());
    // The mirrors' directory went with the plan.
    let mirrors = std::env::temp_dir().join(format!("kvperf-live-{}", child.id()));
    assert!(!mirrors.exists(), "{} left behind", mirrors.display());
}

#[test]
fn a_bad_or_taken_address_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_null(
        dir.path(),
        "c",
        &["-p", "operationcount=1000", "--metrics-addr", "nowhere"],
    );
    assert_input_error(&out, "is not an address and port");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run_null(
        dir.path(),
        "c",
        &["-p", "operationcount=1000", "--metrics-addr", &addr],
    );
    assert_input_error(&out, "cannot listen there");
    assert!(out.stdout.is_empty(), "measured anyway: {}", out.stdout);
}
