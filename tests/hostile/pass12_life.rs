//! The twelfth hostile pass, bench, signals and verdicts (docs/reliability.md,
//! "Pass 12: bench, signals and verdicts"): an output inside the store the
//! engine fills, and waits that outlived their benchmark or time limit.
//! Each case failed on the main of 2026-11-29 (990db44).

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::pass10_life::Watch;
use super::waits::{ended_within, rest, spawn, wait_within};
use crate::common::{assert_input_error, kvperf, workload};

/// `child`'s piped stdout, a line at a time, read to its end on a thread
/// of its own (a closed stdout would end bench its own way).
fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::{BufRead, BufReader};
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    lines
}

/// `bench --report_file D/LOG --db D` measured, then found RocksDB's own
/// `LOG` where its ops log was to go: the log was neither written nor
/// kept, exit 0. Every output of bench, load, run and replay inside the
/// store directory (any spelling: `./`, `..`, a link to the store) is now
/// refused before the engine opens, one line, exit 2.
#[test]
fn an_output_inside_the_store_directory_is_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::create_dir(dir.join("elsewhere")).unwrap();
    symlink("d", dir.join("link")).unwrap();
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--engine",
            "rocksdb",
            "--db",
            "d",
            "--benchmarks",
            "fillseq",
            "--num",
            "100",
        ];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let c = workload("c");
    let ycsb = |phase: &str, db: &str, output: &str| {
        [
            phase,
            "--engine",
            "rocksdb",
            "--db",
            db,
            "-P",
            c.as_str(),
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=100",
            "--format",
            "json",
            "--output",
            output,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
    };
    let cases: Vec<Vec<String>> = vec![
        bench(&["--report_interval_seconds", "1", "--report_file", "d/LOG"]),
        bench(&["--json", "d/LOG"]),
        bench(&["--json", "./d/../d/r.json"]),
        bench(&["--json", "link/r.json"]),
        bench(&[
            "--json",
            "-",
            "--report_interval_seconds=1",
            "--report_file=link/LOG",
        ]),
        bench(&["-p", "rocksdb.trace=d/t.trace"]),
        ycsb("load", "d", "d/LOG"),
        ycsb("load", "link", "d/OPTIONS-000007"),
        ycsb("run", "d", "link/r.json"),
        ycsb("load", "elsewhere/../d", "d/r.json"),
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = kvperf(dir, &args);
        assert_input_error(&out, "is inside the store directory");
        let left: Vec<_> = std::fs::read_dir(dir.join("d")).unwrap().collect();
        assert!(left.is_empty(), "{args:?}: the store was opened: {left:?}");
    }
    // The same output outside the store is taken.
    let out = kvperf(
        dir,
        &bench(&["--report_interval_seconds", "1", "--report_file", "r.csv"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.join("r.csv").is_file());
}

/// `readwhilewriting`'s writer under `--benchmark_write_rate_limit=1`
/// slept each write's whole budget (over 100 s a write) past the
/// benchmark's `--duration` and past its readers' last read. Its wait now
/// ends with the benchmark.
#[test]
fn a_rate_limited_writer_never_sleeps_past_its_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, end) in [["--duration", "1"], ["--reads", "100"]].iter().enumerate() {
        let db = format!("d{i}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
            .args(["bench", "--engine", "rocksdb", "--db", &db])
            .args(["--benchmarks", "fillseq,readwhilewriting", "--num", "1000"])
            .args(["--benchmark_write_rate_limit=1"])
            .args(end)
            .current_dir(tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // A loaded machine takes seconds to open RocksDB; a write's budget
        // at 1 B/s is over 100 s.
        let status = wait_within(&mut child, Duration::from_secs(60), &format!("{end:?}"));
        assert_eq!(status.code(), Some(0), "{end:?}");
    }
}

/// A target under one operation per second per client (50 clients, 1
/// op/s) had each client sleep 50 s for its second operation, far past
/// `maxexecutiontime=1`. A paced client now waits in slices that end at
/// its time limit.
#[test]
fn a_slow_pace_never_holds_a_client_past_its_time_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let c = workload("c");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["load", "--engine", "null", "-P", &c, "--threads", "50"])
        .args(["--target", "1", "-p", "recordcount=1000"])
        .args([
            "-p",
            "maxexecutiontime=1",
            "--format",
            "json",
            "--output",
            "r.json",
        ])
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(30), "a slow target");
    assert_eq!(status.code(), Some(0));
    assert!(Path::new(&tmp.path().join("r.json")).is_file());
}

/// A SIGTERM while RocksDB's version is read (a probe store opened in
/// TMPDIR, then removed) ended kvperf with the probe's directory left,
/// 10 times of 10. The probe now holds the signal until its directory is
/// gone: the signal still ends the command.
#[test]
fn a_signal_during_the_rocksdb_version_probe_leaves_nothing_in_tmpdir() {
    let tmp = tempfile::tempdir().unwrap();
    let probes = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("kvperf-rocksdb-version-")
            })
            .count()
    };
    for _ in 0..5 {
        let watch = Watch::new(tmp.path());
        let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
            .arg("engines")
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The signal comes as the probe's directory is made.
        let caught = watch.made("kvperf-rocksdb-version-", Duration::from_secs(60));
        // SAFETY: kill(2) on the child this test started and has not reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = wait_within(&mut child, Duration::from_secs(30), "engines");
        assert!(caught, "no probe seen: {status:?}");
        assert_eq!(probes(tmp.path()), 0, "left after {status:?}");
    }
}

/// A SIGINT during `bench`'s `compact` waited for the compaction, then
/// was taken by the next benchmark after one operation (or lost, exit 0,
/// when compact was the last). It now ends the sequence after compact,
/// exit 3, with the figures so far in the JSON.
#[test]
fn a_signal_during_compact_ends_bench_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args([
            "bench", "--engine", "rocksdb", "--db", "d", "--json", "j.json",
        ])
        .args(["--benchmarks", "fillseq,compact,readrandom"])
        .args(["--num", "20000", "--reads", "100000000"])
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut child);
    // fillseq's result line: compact starts next.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with("fillseq") => break,
            Ok(_) => {}
            Err(_) => panic!("no fillseq result line"),
        }
    }
    // SAFETY: kill(2) on the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (status, stderr) = ended_within(&mut child, Duration::from_secs(60), "bench");
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("interrupted during compact"), "{stderr}");
    let json = super::waits::output(&tmp.path().join("j.json"));
    assert_eq!(json.measurements.len(), 1, "fillseq's figures only");
}

/// A user's file put at `--report_file` between two benchmarks (the path
/// checked before measuring): the second benchmark's ops log was only
/// warned about, its lines lost, exit 0. They are now kept in a
/// `kvperf-unsaved-*` file named in one line, exit 3; the user's file
/// stays.
#[test]
fn an_ops_log_that_cannot_be_written_is_kept_and_fails_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["bench", "--engine", "rocksdb", "--db", "d"])
        .args(["--benchmarks", "fillseq,readrandom", "--num", "300000"])
        .args(["--duration", "2", "--report_interval_seconds", "1"])
        .args(["--report_file", "r.csv", "--json", "j.json"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut child);
    // fillseq's log appears; the user's file takes its place before
    // fillseq's result line (else the case was missed).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !dir.join("r.csv").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::remove_file(dir.join("r.csv")).unwrap();
    std::fs::write(dir.join("r.csv"), "USER\n").unwrap();
    let in_time = lines.try_iter().all(|l| !l.starts_with("fillseq"));
    let (status, stderr) = ended_within(&mut child, Duration::from_secs(60), "bench");
    assert_eq!(
        std::fs::read_to_string(dir.join("r.csv")).unwrap(),
        "USER\n"
    );
    if !in_time {
        return crate::common::note_skip(
            "SKIPPED an_ops_log_that_cannot_be_written_is_kept_and_fails_the_command: fillseq ended before the user's file was put",
        );
    }
    assert_eq!(status.code(), Some(3), "{stderr}");
    let kept: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kvperf-unsaved-") && n.ends_with(".csv"))
        .collect();
    assert_eq!(kept.len(), 1, "{stderr}");
    assert!(stderr.contains(&kept[0]), "{stderr}");
    let text = std::fs::read_to_string(dir.join(&kept[0])).unwrap();
    assert!(text.starts_with("secs_elapsed,interval_qps\n"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("1,")), "{text}");
    // The JSON says so too: a plan keeps a step's figures by its error,
    // and dropped a bench step whose JSON had none but exited 3 (pass 14).
    let json = super::waits::output(&dir.join("j.json"));
    let error = json.error.expect("the lost ops log is the JSON's error");
    assert!(error.message.contains(&kept[0]), "{}", error.message);
    assert!(!json.measurements.is_empty(), "the figures stay");
}

/// `compare --fail-if-slower` over one repeat a side printed "passed"
/// and then refused "cannot judge" (exit 2). The gate now says "cannot
/// judge" wherever it speaks, never "passed", and refuses in one line.
#[test]
fn a_gate_that_judged_nothing_never_says_passed() {
    use crate::compare_gate::{compare, results};
    let tmp = tempfile::tempdir().unwrap();
    let base = results(tmp.path(), "base.jsonl", &[(100_000.0, 100)]);
    let new = results(tmp.path(), "new.jsonl", &[(80_000.0, 125)]);
    for format in ["text", "md", "json"] {
        let out = compare(
            tmp.path(),
            &base,
            &new,
            &["--fail-if-slower", "5%", "--format", format],
        );
        assert_input_error(&out, "--fail-if-slower cannot judge");
        assert!(
            !out.stdout.contains("\"passed\": true"),
            "{format}: {}",
            out.stdout
        );
        assert!(!out.stdout.contains(": passed"), "{format}: {}", out.stdout);
        assert!(
            out.stdout.contains("cannot judge"),
            "{format}: {}",
            out.stdout
        );
    }
}

/// A SIGTERM while `run` or `bench` wrote its output (held until the
/// write ended) was then taken silently: exit 0, as if no signal came.
/// The output is whole, so it stays; the signal now ends the step as one
/// after its window does, exit 3, in one line.
#[test]
fn a_signal_while_a_step_writes_its_output_is_not_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let c = workload("c");
    let steps: [&[&str]; 3] = [
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &c,
            "-p",
            "operationcount=20000",
        ],
        &[
            "load",
            "--engine",
            "null",
            "-P",
            &c,
            "-p",
            "recordcount=20000",
        ],
        &[
            "bench",
            "--engine",
            "null",
            "--benchmarks",
            "fillseq",
            "--num",
            "20000",
        ],
    ];
    for step in steps {
        let _ = std::fs::remove_file(tmp.path().join("r.json"));
        let output: &[&str] = match step[0] {
            "bench" => &["--json", "r.json"],
            _ => &["--format", "json", "--output", "r.json"],
        };
        let args: Vec<String> = step.iter().chain(output).map(|a| a.to_string()).collect();
        let watch = Watch::new(tmp.path());
        let (mut child, lines) = spawn(tmp.path(), &args);
        let caught = watch.made(".r.json.kvperf-", Duration::from_secs(60));
        // SAFETY: kill(2) on the child this test started and has not reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = wait_within(&mut child, Duration::from_secs(60), step[0]);
        let seen = rest(&lines);
        assert!(caught, "{}: no temporary seen: {seen:#?}", step[0]);
        assert_eq!(status.code(), Some(3), "{}: {seen:#?}", step[0]);
        assert!(
            seen.iter()
                .any(|l| l.contains("interrupted as the step's figures were written")),
            "{}: {seen:#?}",
            step[0]
        );
        let json = super::waits::output(&tmp.path().join("r.json"));
        assert_eq!(json.measurements.len(), 1, "{}", step[0]);
    }
}
