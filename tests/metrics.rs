//! `--metrics-addr`: a run, a plan and a db_bench-mode bench serve their
//! live figures in the Prometheus text format while they run; a scrape
//! mid-run parses with a Prometheus text-format parser, shows the window's
//! operations, and passes Prometheus' own linter (`promtool check metrics`).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{assert_input_error, run_null, workload};

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
    // Latency is a summary in seconds: quantiles of the last interval.
    let p99 = seen
        .samples
        .iter()
        .filter(|s| s.metric == "kvperf_latency_seconds" && s.labels.get("op") == Some("read"))
        .find_map(|s| match &s.value {
            prometheus_parse::Value::Summary(qs) => {
                qs.iter().find(|q| q.quantile == 0.99).map(|q| q.count)
            }
            _ => None,
        });
    // Under a second: a null engine's read is nanoseconds.
    assert!(p99.is_some_and(|v| v > 0.0 && v < 1.0), "{p99:?}");
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

/// Scrapes until the body holds `needle` (or the child ends), then waits
/// for the child; the body as served.
fn body_with(child: &mut Child, port: u16, needle: &str) -> String {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(body) = scrape(port).filter(|b| b.contains(needle)) {
            assert!(child.wait().unwrap().success());
            return body;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "kvperf ended before {needle} was served"
        );
        assert!(Instant::now() < give_up, "no {needle} within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `promtool check metrics` on `body`: Ok, or its complaints.
fn promtool(body: &str) -> Result<(), String> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

#[test]
fn promtool_passes_the_endpoint_of_a_run_a_plan_and_a_bench() {
    let test = "promtool_passes_the_endpoint_of_a_run_a_plan_and_a_bench";
    if let Err(e) = Command::new("promtool").arg("--version").output() {
        common::skip_unless_ci(
            test,
            &format!("promtool is not installed ({e}); scripts/ensure-deps.sh installs Debian's prometheus"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = workload("a");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "linted"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 100000000
maxexecutiontime = 3
[[configs]]
name = "only"
[[steps]]
workloads = ["a"]
threads = [1]
"#,
    )
    .unwrap();
    let shown = plan.display().to_string();
    let cases: [(&str, Vec<&str>); 3] = [
        (
            "run",
            vec![
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
                "maxexecutiontime=3",
            ],
        ),
        ("plan", vec!["plan", "run", &shown, "--results", "r.jsonl"]),
        (
            "bench",
            vec![
                "bench",
                "--engine",
                "null",
                "--benchmarks=readrandom",
                "--num=1000",
                "--duration=3",
                "--no-progress",
            ],
        ),
    ];
    for (what, args) in cases {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let mut args = args.clone();
        args.extend(["--metrics-addr", &addr]);
        let mut child = spawn(dir.path(), &args);
        // A scrape with latency in it: the summary is what promtool judges.
        let body = body_with(&mut child, port, "kvperf_latency_seconds_count{");
        if let Err(complaints) = promtool(&body) {
            panic!("promtool check metrics on a {what}'s endpoint:\n{complaints}\n{body}");
        }
        assert!(
            body.contains("# TYPE kvperf_latency_seconds summary\n"),
            "{body}"
        );
        // The quantile label only on the summary.
        for line in body.lines().filter(|l| l.contains("quantile=")) {
            assert!(
                line.starts_with("kvperf_latency_seconds{"),
                "{what}: {line}"
            );
        }
    }
}
