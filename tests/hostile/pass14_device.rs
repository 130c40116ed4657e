//! The fourteenth hostile pass, the device and fio (docs/reliability.md,
//! "Pass 14: the device and fio"): fio, given kvperf's test file by name,
//! split it at ':' and followed a link renamed over it into users' files;
//! an interrupt waited out fio's runtime; fio's failure lost the corners
//! measured; a new output 'NAME/' failed only after measuring. Each case
//! failed on 99fcefe.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::pass10_servers::{kvperf_with, wait_for};
use super::waits::{family, output, rest, spawn, wait_within};
use crate::common::{assert_input_error, kvperf, skip_unless_ci, test_path};

/// A directory on a real filesystem (direct I/O fails on tmpfs).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Whether fio runs here; if not, the test says it skipped.
fn fio_here(test: &str) -> bool {
    let here = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        skip_unless_ci(&test_path(module_path!(), test), "fio is not installed");
    }
    here
}

/// `device corners TARGET --with-fio`, 1 MiB, no ramp, `runtime` seconds.
fn corners(target: &Path, runtime: &str, extra: &[&str]) -> Vec<String> {
    let fio = [&["--io-buffers", "small", "--with-fio"], extra].concat();
    crate::device::corners_args(target, "1MiB", runtime, &fio)
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The pid of the fio that kvperf `pid` runs for a corner, once it runs
/// (at most `bound`); not `fio --version`, asked before anything is made.
fn fio_of(pid: i32, bound: Duration) -> Option<i32> {
    let mut fio = None;
    wait_for(bound, || {
        fio = family(pid).into_iter().skip(1).find(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"fio\0--name=kvperf-corner"))
        });
        fio.is_some()
    });
    fio
}

/// Processes in the process group `group`.
fn in_group(group: i32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid pgrp: comm may hold spaces.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok())
                == Some(group)
        })
        .count()
}

/// fio splits `--filename` at ':' and wrote each part: a user's `a` (and
/// `b` in the working directory) for the new file `a:b`, a user's `x` for
/// the directory `x:y`. fio now gets kvperf's open file, whatever its name.
#[test]
fn a_colon_in_the_target_leads_fio_to_no_users_file() {
    if !fio_here("a_colon_in_the_target_leads_fio_to_no_users_file") {
        return;
    }
    let tmp = disk_dir();
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(tmp.path().join("x:y")).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    let users = [tmp.path().join("a"), cwd.join("b"), tmp.path().join("x")];
    for file in &users {
        std::fs::write(file, "the user's").unwrap();
    }
    for target in [tmp.path().join("a:b"), tmp.path().join("x:y")] {
        let out = kvperf(&cwd, &as_strs(&corners(&target, "1", &[])));
        assert_eq!(out.code, 0, "{}: {}", target.display(), out.stderr);
        assert!(
            out.stdout.contains("kvperf / fio") && !out.stdout.contains(" - | - |"),
            "fio's figures beside kvperf's: {}",
            out.stdout
        );
        for file in &users {
            assert_eq!(
                std::fs::read_to_string(file).unwrap(),
                "the user's",
                "{} after corners of {}",
                file.display(),
                target.display()
            );
        }
    }
    let names = |dir: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(tmp.path()), ["a", "cwd", "x", "x:y"]);
    assert_eq!(names(&cwd), ["b"]);
    assert!(names(&tmp.path().join("x:y")).is_empty());
}

/// A link to a user's file renamed over kvperf's test file while fio ran
/// a corner: the next fio runs opened it by name and wrote the user's file.
#[test]
fn a_link_renamed_over_the_test_file_leads_fio_nowhere() {
    if !fio_here("a_link_renamed_over_the_test_file_leads_fio_nowhere") {
        return;
    }
    let tmp = disk_dir();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // Larger than --size: the old fio wrote into it rather than lay out.
    let victim = tmp.path().join("victim");
    let precious = vec![b'u'; 2 << 20];
    std::fs::write(&victim, &precious).unwrap();
    let (mut child, lines) = spawn(tmp.path(), &corners(&dir, "1", &[]));
    let fio = fio_of(child.id() as i32, Duration::from_secs(60));
    let link = dir.join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::fs::rename(&link, dir.join("kvperf-device-test.dat")).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120), "corners");
    let stderr = rest(&lines).join("\n");
    assert!(fio.is_some(), "fio never ran: {stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        std::fs::read(&victim).unwrap() == precious,
        "fio wrote the user's file through the link"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        ["kvperf-device-test.dat"],
        "only the link, not kvperf's"
    );
    assert!(
        std::fs::symlink_metadata(dir.join("kvperf-device-test.dat"))
            .unwrap()
            .is_symlink()
    );
}

/// SIGINT or SIGTERM while fio ran a corner: kvperf waited out fio's
/// whole runtime (up to a day), fio unsignalled. fio's group is now ended
/// within seconds, exit 3, kvperf's corners measured kept.
#[test]
fn a_signal_while_fio_runs_ends_fio_within_seconds_and_keeps_the_corners() {
    if !fio_here("a_signal_while_fio_runs_ends_fio_within_seconds_and_keeps_the_corners") {
        return;
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let tmp = disk_dir();
        let json = tmp.path().join("o.json");
        let extra = ["--format", "json", "--output", json.to_str().unwrap()];
        // kvperf's read corner takes the runtime, then fio's would.
        let (mut child, lines) = spawn(tmp.path(), &corners(tmp.path(), "12", &extra));
        let fio = fio_of(child.id() as i32, Duration::from_secs(60));
        let sent = Instant::now();
        // SAFETY: kill(2) on the child this test started and has not reaped.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait_within(&mut child, Duration::from_secs(60), "corners");
        let took = sent.elapsed();
        let stderr = rest(&lines).join("\n");
        let fio = fio.unwrap_or_else(|| panic!("fio never ran: {stderr}"));
        assert!(
            took < Duration::from_secs(8),
            "signal {signal}: kvperf ended {took:?} after it (fio's runtime waited out?): {stderr}"
        );
        assert_eq!(status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains("interrupted while fio ran the read corner"),
            "{stderr}"
        );
        assert!(
            wait_for(Duration::from_secs(5), || in_group(fio) == 0),
            "fio's group still runs"
        );
        let out = output(&json);
        let names: Vec<_> = out.measurements.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["read"], "kvperf's read corner is kept");
        let device = out.measurements[0].device.as_ref().unwrap();
        assert!(
            device.mb_per_sec > 0.0 && device.fio.is_none(),
            "{device:?}"
        );
    }
}

/// fio failing after kvperf's read corner left `measurements: []`.
#[test]
fn fios_failure_keeps_the_corners_kvperf_measured() {
    let tmp = disk_dir();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("fio");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo fio-3.33; exit 0; }\necho 'fio: no room' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let json = tmp.path().join("o.json");
    let args = corners(
        tmp.path(),
        "1",
        &["--format", "json", "--output", json.to_str().unwrap()],
    );
    let out = kvperf_with(tmp.path(), &as_strs(&args), &[("PATH", &path)]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("fio failed on read: fio: no room")
            && out.stderr.contains("kept (1 of 4)"),
        "{}",
        out.stderr
    );
    let out = output(&json);
    let names: Vec<_> = out.measurements.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["read"], "kvperf's read corner is kept");
}

/// `--output NAME/` (and `NAME/.`) for a new NAME passed the check made
/// before measuring, then failed at the write, exit 3 (run --output,
/// trace.output, bench --json and --report_file, fit --output, report
/// --timeline: one check). Now one line, exit 2, nothing measured or made.
#[test]
fn a_new_output_name_ending_in_a_slash_is_refused_before_measuring() {
    let tmp = disk_dir();
    let workload = crate::common::workload("a");
    for name in ["n/", "n/."] {
        let run = [
            "run", "--engine", "null", "-P", &workload, "--format", "json", "--output", name,
        ];
        assert_input_error(&kvperf(tmp.path(), &run), "ends in '/'");
        let trace = format!("trace.output={name}");
        let traced = ["run", "--engine", "null", "-P", &workload, "-p", &trace];
        assert_input_error(&kvperf(tmp.path(), &traced), "ends in '/'");
        let device = ["device", "corners", "d", "--size", "1MiB", "--output", name];
        assert_input_error(&kvperf(tmp.path(), &device), "ends in '/'");
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
