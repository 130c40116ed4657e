//! The fourteenth hostile pass: a reader that stops reading
//! (docs/reliability.md, "Pass 14: a reader that stops reading"). A
//! stderr or stdout pipe that is full, whose reader is alive and reads
//! nothing (a harness that reads only stdout, a paused pager), held
//! kvperf in write(2): the run never ended after its window, SIGINT and
//! SIGTERM went unanswered, the JSON was held back. Fails on 95410e9.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::waits::{catches_interrupts, rest, spawn_with_stdout, wait_within};
use crate::common;

/// A pipe of one page that nobody will read: (read end, write end).
fn small_pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) into an array of two; each end is owned by a File at once.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both were just made and are owned by nothing else.
    let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // SAFETY: fcntl(2) on the pipe this function made.
    unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    (read, write)
}

/// [`small_pipe`], filled: its reader stopped before kvperf started.
fn full_pipe() -> (File, File) {
    use std::io::Write;
    let (read, mut write) = small_pipe();
    // SAFETY: fcntl(2) on the pipe made above.
    let size = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
    write.write_all(&vec![b'x'; size as usize]).unwrap();
    (read, write)
}

/// Bytes waiting in the pipe whose read end is `read`.
fn unread(read: &File) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD into an int this function owns.
    unsafe { libc::ioctl(read.as_raw_fd(), libc::FIONREAD, &mut n) };
    n as usize
}

/// kvperf `args` in `dir`, with `stdout` and `stderr` as given.
fn start(dir: &Path, args: &[&str], stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Sends SIGINT to `child` once it catches it.
fn interrupt(child: &mut Child, what: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    while !catches_interrupts(child.id()) {
        assert!(child.try_wait().unwrap().is_none(), "{what}: ended early");
        assert!(Instant::now() < until, "{what}: never took SIGINT");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

/// A null `run` with a status line each second and JSON output, as long
/// as `limit` (its `maxexecutiontime=` property) lets it.
fn status_run<'a>(workload: &'a str, limit: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--engine",
        "null",
        "-P",
        workload,
        "-p",
        "operationcount=1000000000",
        "-p",
        limit,
        "-s",
        "-p",
        "status.interval=1",
        "--no-progress",
        "--format",
        "json",
    ]
}

/// Whether `path` holds kvperf's JSON result.
fn is_step_json(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| kvperf::output::json::is_step_output(&b))
}

/// Pass 14: stderr a full pipe never read. A run's status thread stuck
/// in a status line held the run after its window (for ever: the JSON
/// never came); the warnings before a window, and a plan's step lines,
/// likewise. Now a line that waits more than a bound is dropped: the run
/// ends with its window, its JSON written, exit 0.
#[test]
fn a_stderr_nobody_reads_holds_no_run_past_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let workload = common::workload("a");
    let plan = super::plans::null_plan(dir.path());
    let plan = plan.to_str().unwrap();
    let warnings: Vec<String> = (0..200).map(|i| format!("zz.a{i:04}=1")).collect();
    let mut with_warnings = vec!["run", "--engine", "null", "-P", &workload];
    for w in &warnings {
        with_warnings.extend(["-p", w]);
    }
    with_warnings.extend([
        "-p",
        "maxexecutiontime=2",
        "--format",
        "json",
        "--output",
        "w.json",
    ]);
    let status_lines = [
        &status_run(&workload, "maxexecutiontime=3")[..],
        &["--output", "s.json"],
    ]
    .concat();
    let plan_run = ["plan", "run", plan, "--results", "r.jsonl"];
    let forms: [(&str, &[&str], &str); 3] = [
        ("status lines", &status_lines, "s.json"),
        ("warnings before the window", &with_warnings, "w.json"),
        ("a plan's step lines", &plan_run, "r.jsonl"),
    ];
    for (what, args, written) in forms {
        let (_read, write) = full_pipe();
        let mut child = start(dir.path(), args, Stdio::null(), write.into());
        // Its window and one bounded wait for stderr, with room for load.
        let status = wait_within(&mut child, Duration::from_secs(60), what);
        assert_eq!(status.code(), Some(0), "{what}");
        let out = dir.path().join(written);
        match written {
            "r.jsonl" => assert_eq!(common::lines(&out).len(), 2, "{what}"),
            _ => assert!(is_step_json(&out), "{what}: no JSON"),
        }
    }
}

/// Pass 14: SIGINT while stdout or stderr is a pipe its reader stopped
/// reading went unanswered (SIGKILL then lost the whole window). Now the
/// interrupt ends the wait: exit 3, what was measured written (a result
/// stdout does not take is kept in a file named on stderr).
#[test]
fn an_interrupt_is_answered_while_a_reader_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let workload = common::workload("a");
    let long = status_run(&workload, "maxexecutiontime=600");

    // stderr full: the status thread or a warning is stuck in it.
    let (_read, write) = full_pipe();
    let args = [&long[..], &["--output", "i.json"]].concat();
    let mut child = start(dir.path(), &args, Stdio::null(), write.into());
    interrupt(&mut child, "run, stderr full");
    let status = wait_within(&mut child, Duration::from_secs(30), "run, stderr full");
    assert_eq!(status.code(), Some(3));
    assert!(is_step_json(&dir.path().join("i.json")), "run: no JSON");

    // stdout full: the result of a window waits for a reader that never
    // reads (an interrupt before the window measured nothing to keep).
    let (_read, write) = full_pipe();
    let args: Vec<String> = long.iter().map(|a| a.to_string()).collect();
    let (mut child, lines) = spawn_with_stdout(dir.path(), &args, write.into());
    let until = Instant::now() + Duration::from_secs(60);
    while !lines
        .recv_timeout(Duration::from_millis(50))
        .is_ok_and(|l| l.contains(" sec: "))
    {
        assert!(child.try_wait().unwrap().is_none(), "run ended early");
        assert!(Instant::now() < until, "run: no status line");
    }
    interrupt(&mut child, "run, stdout full");
    let status = wait_within(&mut child, Duration::from_secs(30), "run, stdout full");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let kept = stderr
        .split("the result is kept in '")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .unwrap_or_else(|| panic!("no kept result named: {stderr}"));
    assert!(is_step_json(Path::new(kept)), "{stderr}");
    let _ = std::fs::remove_file(kept);

    // bench's lines fill stdout while it measures.
    let (read, write) = small_pipe();
    let benchmarks = format!("fillrandom{}", ",readrandom".repeat(2000));
    let args = [
        "bench",
        "--engine",
        "null",
        "--benchmarks",
        &benchmarks,
        "--num=2000",
        "--json=b.json",
    ];
    let mut child = start(dir.path(), &args, write.into(), Stdio::null());
    let until = Instant::now() + Duration::from_secs(60);
    // Nearly full (a line is at most 120 bytes): the next lines cannot go.
    while unread(&read) < 4096 - 240 {
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        assert!(Instant::now() < until, "bench never filled stdout");
        std::thread::sleep(Duration::from_millis(5));
    }
    interrupt(&mut child, "bench, stdout full");
    let status = wait_within(&mut child, Duration::from_secs(30), "bench, stdout full");
    assert_eq!(status.code(), Some(3));
    assert!(is_step_json(&dir.path().join("b.json")), "bench: no JSON");
    drop(read);
}
