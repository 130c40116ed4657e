//! The seventh hostile pass, the files side (docs/reliability.md, "Pass
//! 7: files"): what becomes of a step's figures and of the files written
//! beside them (traces, interval logs, a device's test file) when a
//! user's file takes one of their places while the step runs. Each case
//! failed on the main of 2026-11-29 (a8c2dc9).

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::waits::{rest, spawn, wait_within};
use crate::common::workload;

/// A null-engine run of workload A that lasts until it is interrupted,
/// with status lines every second and its JSON in `r.json`, plus `extra`.
fn endless_run(dir: &Path, extra: &[&str]) -> (Child, Receiver<String>) {
    let mut args: Vec<String> = [
        "run",
        "--engine",
        "null",
        "-P",
        &workload("a"),
        "-p",
        "operationcount=1000000000000",
        "-p",
        "status.interval=1",
        "-s",
        "--format",
        "json",
        "--output",
        "r.json",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    spawn(dir, &args)
}

/// Reads stderr until the first status line: the window is open.
fn wait_for_the_window(lines: &Receiver<String>, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let status = line.contains(" sec: ") && line.contains("operations");
                seen.push(line);
                if status {
                    return;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no status line: {seen:#?}");
}

/// Interrupts the run (SIGINT, as Ctrl-C) and returns its exit code and
/// every stderr line.
fn interrupt(mut child: Child, lines: &Receiver<String>, mut seen: Vec<String>) -> (i32, String) {
    // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_within(&mut child, Duration::from_secs(120), "interrupted run");
    seen.extend(rest(lines));
    (status.code().unwrap_or(-1), seen.join("\n"))
}

/// The file a message says something is kept in: `... kept in 'PATH'`.
fn kept_in(stderr: &str, after: &str) -> PathBuf {
    let from = stderr
        .find(after)
        .unwrap_or_else(|| panic!("no '{after}' in: {stderr}"));
    let rest = &stderr[from + after.len()..];
    let start = rest.find("kept in '").expect("names where it is kept") + "kept in '".len();
    let end = rest[start..].find('\'').unwrap();
    PathBuf::from(&rest[start..start + end])
}

/// The measurements a step's JSON output holds.
fn measurements(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let out = kvperf::results::step::StepOutput::from_json(&text).unwrap();
    out.measurements.len()
}

/// A user's file put at `trace.output` while the window runs: the trace,
/// complete, cannot take its place. The window's figures stay in the
/// JSON and the trace stays where the error says. Before, the step's
/// output held no measurement at all (`measurements: []`) and the trace
/// the error called "kept" was deleted.
#[test]
fn a_trace_that_cannot_take_its_place_loses_neither_the_window_nor_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let (child, lines) = endless_run(tmp.path(), &["-p", "trace.output=t.kvtrace"]);
    let mut seen = Vec::new();
    wait_for_the_window(&lines, &mut seen);
    std::fs::write(tmp.path().join("t.kvtrace"), "my notes\n").unwrap();
    let (code, stderr) = interrupt(child, &lines, seen);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("t.kvtrace")).unwrap(),
        "my notes\n"
    );
    assert_eq!(measurements(&tmp.path().join("r.json")), 1, "{stderr}");
    let kept = kept_in(&stderr, "trace.output");
    let kept = tmp.path().join(kept);
    let shown = crate::common::kvperf(tmp.path(), &["trace", "show", &kept.display().to_string()]);
    assert_eq!(shown.code, 0, "the kept trace is whole: {}", shown.stderr);
}

/// Users' files put at interval logs (`READ.hdr`, then `READ.hdr` and
/// `UPDATE.hdr`) while the window runs: each such log is kept elsewhere,
/// in a file of its own named in the error, and every other group's log
/// is still written. Before, the groups after the first that failed were
/// neither written nor kept.
#[test]
fn an_interval_log_that_cannot_be_written_stops_no_other() {
    for taken in [&["READ"][..], &["READ", "UPDATE"]] {
        let tmp = tempfile::tempdir().unwrap();
        let extra = [
            "-p",
            "hdrhistogram.fileoutput=true",
            "-p",
            "hdrhistogram.output.path=h-",
        ];
        let (child, lines) = endless_run(tmp.path(), &extra);
        let mut seen = Vec::new();
        wait_for_the_window(&lines, &mut seen);
        for group in taken {
            std::fs::write(tmp.path().join(format!("h-{group}.hdr")), "my notes\n").unwrap();
        }
        let (code, stderr) = interrupt(child, &lines, seen);
        assert_eq!(code, 3, "{stderr}");
        let mut kept = Vec::new();
        for group in ["READ", "UPDATE"] {
            let path = tmp.path().join(format!("h-{group}.hdr"));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if taken.contains(&group) {
                assert_eq!(text, "my notes\n", "{group}");
                let copy = tmp.path().join(kept_in(&stderr, &format!("h-{group}.hdr")));
                let log = std::fs::read_to_string(&copy).unwrap();
                assert!(log.contains("#[kvperf"), "{group}: {log}");
                kept.push(copy);
            } else {
                assert!(text.contains("#[kvperf"), "{group} not written: {stderr}");
            }
        }
        kept.dedup();
        assert_eq!(kept.len(), taken.len(), "one file each: {stderr}");
        assert_eq!(measurements(&tmp.path().join("r.json")), 1, "{stderr}");
    }
}

/// A user's file moved over `kvperf-device-test.dat` while `device
/// corners` measures stays: kvperf removes only the file it made (it
/// removed whatever stood at the name).
#[test]
fn device_corners_removes_only_the_test_file_it_made() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = tmp.path().join("corners");
    std::fs::create_dir(&target).unwrap();
    let test_file = target.join("kvperf-device-test.dat");
    let args: Vec<String> = [
        "device",
        "corners",
        "corners",
        "--size",
        "1MiB",
        "--runtime",
        "2",
        "--ramp",
        "0",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let (mut child, lines) = spawn(tmp.path(), &args);
    while !test_file.exists() {
        assert!(child.try_wait().unwrap().is_none(), "{:?}", rest(&lines));
        std::thread::yield_now();
    }
    let mine = tmp.path().join("mine.dat");
    std::fs::write(&mine, "precious").unwrap();
    std::fs::rename(&mine, &test_file).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(300), "device corners");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read(&test_file).unwrap(), b"precious", "{stderr}");
}

/// A user's files whose names only end like an engine's (`app.log`,
/// `notes.sst` beside RocksDB, `mine.wt` beside WiredTiger) in kvperf's
/// own store directory survive `load --fresh`, as every other file a user
/// put there does (src/engine/store.rs): kvperf took every `*.log`,
/// `*.sst` and `*.wt` for the engine's and deleted them.
#[test]
fn a_users_files_named_like_an_engines_in_its_store_survive_a_fresh_load() {
    let cases: [(&str, &[&str]); 2] = [
        (
            "rocksdb",
            &["app.log", "notes.sst", "MANIFEST-notes", "LOG.old.mine"],
        ),
        ("wiredtiger", &["mine.wt", "old.wt"]),
    ];
    let wa = workload("a");
    for (engine, mine) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let load = |fresh: bool| {
            let mut args = vec!["load", "--engine", engine, "-P", &wa];
            args.extend(["-p", "recordcount=100", "--db", "db"]);
            if fresh {
                args.push("--fresh");
            }
            crate::common::kvperf(tmp.path(), &args)
        };
        let out = load(false);
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
        for name in mine {
            std::fs::write(tmp.path().join("db").join(name), "mine\n").unwrap();
        }
        let out = load(true);
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
        for name in mine {
            let kept = std::fs::read_to_string(tmp.path().join("db").join(name));
            assert_eq!(kept.ok().as_deref(), Some("mine\n"), "{engine} {name}");
        }
    }
}

/// `kvperf device precondition DIR` writes its fill only into a directory
/// that is new, empty or kvperf's, and the fill it made is kvperf's, not a
/// user's file, to the load that follows. It wrote a fill into a user's
/// directory, and refused the load into the directory it had made ("holds
/// files kvperf did not create (such as 'kvperf-precondition.fill')").
#[test]
fn device_precondition_writes_only_into_a_directory_kvperf_may_use() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let precondition = |dir: &str| {
        let args = ["device", "precondition", dir, "--size", "1MiB"];
        let rounds = ["--round-seconds", "1", "--max-rounds", "1"];
        crate::common::kvperf(tmp.path(), &[&args[..], &rounds].concat())
    };
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("notes.txt"), "mine").unwrap();
    let out = precondition("theirs");
    crate::common::assert_input_error(&out, "holds files kvperf did not create");
    let names: Vec<_> = std::fs::read_dir(&theirs).unwrap().collect();
    assert_eq!(names.len(), 1, "only the user's file: {}", out.stderr);
    let out = precondition("pc");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let wa = workload("a");
    let load = ["load", "--engine", "lmdb", "-P", &wa, "--db", "pc"];
    let out = crate::common::kvperf(
        tmp.path(),
        &[&load[..], &["-p", "recordcount=100"]].concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = precondition("pc");
    assert_eq!(
        out.code, 0,
        "the fill again beside the store: {}",
        out.stderr
    );
}

/// A property file saved with a byte-order mark (as Windows editors save
/// UTF-8) is read from its first property: `readproportion=0` on its first
/// line was taken for an unknown '\u{feff}readproportion', and the run
/// measured reads the user had set to none.
#[test]
fn a_property_file_with_a_byte_order_mark_is_read_from_its_first_line() {
    let tmp = tempfile::tempdir().unwrap();
    let text =
        "\u{feff}readproportion=0\nupdateproportion=1\nrecordcount=100\noperationcount=100\n";
    std::fs::write(tmp.path().join("w"), text).unwrap();
    let args = ["run", "--engine", "null", "-P", "w", "--format", "json"];
    let out = crate::common::kvperf(tmp.path(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("unknown property"), "{}", out.stderr);
    let step = kvperf::results::step::StepOutput::from_json(&out.stdout).unwrap();
    assert_eq!(
        step.settings.get("readproportion").map(String::as_str),
        Some("0")
    );
    let ops: Vec<String> = step.measurements[0]
        .ops
        .keys()
        .map(|k| format!("{k:?}"))
        .collect();
    assert!(
        !ops.iter().any(|k| k.to_lowercase().contains("read")),
        "{ops:?}"
    );
}
