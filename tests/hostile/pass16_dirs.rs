//! Pass 16: an output's directory is the one checked. A directory renamed
//! while kvperf measured, and a link to a user's directory put at its name,
//! got the step's result, its interval logs and its trace written into the
//! user's directory (`run --output od/r.txt`, all 4 formats and files seen);
//! a result refused there was then "kept" beside it by name, in the user's
//! directory again (`report --out`'s `kvperf-unsaved-*.md`). The directory
//! is now held open from the check on, and everything is written in it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::waits::{rest, spawn, wait_within};
use crate::common;

/// The user's directory, with a file of theirs, and kvperf's `od` beside it.
fn users_and_od(dir: &Path) -> std::path::PathBuf {
    let users = dir.join("documents");
    std::fs::create_dir(&users).unwrap();
    std::fs::write(users.join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(dir.join("od")).unwrap();
    users
}

/// `od` moves away and a link to `users` takes its name.
fn swap_od(dir: &Path, users: &Path) {
    std::fs::rename(dir.join("od"), dir.join("od.moved")).unwrap();
    std::os::unix::fs::symlink(users, dir.join("od")).unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `run` with every output in `od`, swapped once it measures, then
/// interrupted (what was measured is written, exit 3).
fn run_swapped(dir: &Path, users: &Path, outputs: &[&str]) -> String {
    let workload = common::workload("a");
    let mut args: Vec<String> = [
        "run",
        "--engine",
        "null",
        "-P",
        &workload,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=1000000000",
        "-p",
        "maxexecutiontime=600",
        "-p",
        "target=20000",
        "-s",
        "-p",
        "status.interval=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(outputs.iter().map(|s| s.to_string()));
    let (mut child, lines) = spawn(dir, &args);
    // Every output is checked before measuring; the first status line
    // ("0 sec: N operations") says the window is open.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut said = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(" sec: ") => break,
            Ok(line) => said.push(line),
            Err(_) => panic!("run never started measuring: {said:?}"),
        }
    }
    swap_od(dir, users);
    // SAFETY: a signal to the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_within(&mut child, Duration::from_secs(120), "run");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(3), "interrupted: {stderr}");
    stderr
}

#[test]
fn a_runs_outputs_go_to_the_directory_checked_not_through_a_link_put_at_its_name() {
    for (output, format) in [("od/r.txt", "text"), ("od/r.json", "json")] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let users = users_and_od(dir);
        let stderr = run_swapped(
            dir,
            &users,
            &[
                "--output",
                output,
                "--format",
                format,
                "-p",
                "trace.output=od/t.kvtrace",
                "-p",
                "hdrhistogram.fileoutput=true",
                "-p",
                "hdrhistogram.output.path=od/h-",
            ],
        );
        assert_eq!(names(&users), ["notes.txt"], "{format}: {stderr}");
        let kept = names(&dir.join("od.moved"));
        let result = Path::new(output).file_name().unwrap().to_str().unwrap();
        for name in [result, "t.kvtrace", "h-READ.hdr", "h-UPDATE.hdr"] {
            assert!(kept.iter().any(|k| k == name), "{name}: {kept:?} {stderr}");
        }
        assert!(
            kept.iter().all(|k| !k.starts_with('.')),
            "no temporary left: {kept:?}"
        );
    }
}

const MINE: kvperf::files::Written = kvperf::files::Written {
    what: "kvperf test file",
    recognizes: |head| head.starts_with(b"MINE"),
    extension: "md",
};

#[test]
fn b_a_result_refused_in_a_renamed_directory_is_kept_there_not_beside_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let users = users_and_od(dir);
    let path = dir.join("od/report.md");
    let destination = kvperf::files::Destination::check(&path, "--out", MINE, &[]).unwrap();
    swap_od(dir, &users);
    // Something not kvperf's is put at the name where it was checked.
    std::fs::write(dir.join("od.moved/report.md"), "theirs").unwrap();
    let err = format!("{:#}", destination.write(b"MINE report").unwrap_err());
    assert_eq!(names(&users), ["notes.txt"], "{err}");
    let moved = dir.join("od.moved");
    assert_eq!(std::fs::read(moved.join("report.md")).unwrap(), b"theirs");
    let kept: Vec<String> = names(&moved)
        .into_iter()
        .filter(|n| n.starts_with("kvperf-unsaved-"))
        .collect();
    assert_eq!(kept.len(), 1, "{err}");
    assert_eq!(std::fs::read(moved.join(&kept[0])).unwrap(), b"MINE report");
    // The error names where it is now, not the old name that leads elsewhere.
    let now = moved.canonicalize().unwrap().join(&kept[0]);
    assert!(err.contains(&now.display().to_string()), "{err}");
}
