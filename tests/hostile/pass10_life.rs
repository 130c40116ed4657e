//! The tenth hostile pass, signals, waits and limits (docs/reliability.md,
//! "Pass 10: signals, waits and limits"): the process's limits (`ulimit
//! -f`), its umask, the cost of a plan's and a key's checks, and a signal
//! while a command writes its output. Each case failed on the main of
//! 2026-11-29 (cc1ad35).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::waits::{rest, spawn, wait_within};
use crate::common::{kvperf, workload};

/// `kvperf ARGS` in `dir` under a file size limit of `bytes` (`ulimit -f`).
fn kvperf_under_file_limit(dir: &Path, bytes: u64, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    command.args(args).current_dir(dir).stdin(Stdio::null());
    // SAFETY: setrlimit(2) is async-signal-safe; called in the child
    // between fork and exec with a limit this closure owns.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.output().unwrap()
}

/// Names in `dir` that start with `prefix`.
fn names_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// A run whose trace grew past the file size limit (`ulimit -f 1024`, 1
/// MiB) was killed by SIGXFSZ mid-window (exit 153): no JSON, the window
/// lost, the trace's 1 MiB temporary left. Now the trace's write fails
/// (EFBIG) and the run ends with its figures in the JSON, no temporary
/// left; a limit under 1 MiB, where no result could be kept, is refused
/// before measuring.
#[test]
fn a_trace_past_the_file_size_limit_keeps_the_window_and_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let c = workload("c");
    let args = [
        "run",
        "--engine",
        "null",
        "-P",
        c.as_str(),
        "-p",
        "recordcount=1000",
        "-p",
        "operationcount=2000000",
        "-p",
        "trace.output=t.kvtrace",
        "--format",
        "json",
        "--output",
        "r.json",
    ];
    let out = kvperf_under_file_limit(tmp.path(), 1 << 20, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some(),
        "killed by a signal ({:?}): {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("r.json")).unwrap())
            .unwrap_or_else(|e| panic!("r.json: {e}: {stderr}"));
    let measured = json["measurements"].as_array().map_or(0, Vec::len);
    assert!(measured > 0, "no measurement kept: {json}");
    assert!(
        names_starting(tmp.path(), ".t.kvtrace.").is_empty(),
        "{:?}",
        names_starting(tmp.path(), ".")
    );

    let small = tempfile::tempdir().unwrap();
    let out = kvperf_under_file_limit(small.path(), 4096, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("file size limit"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        names_starting(small.path(), "").is_empty(),
        "{:?}",
        names_starting(small.path(), "")
    );
}

/// Under `umask 0777` kvperf made its files and directories with no
/// rights at all: a plan (not as root) measured its step, then could not
/// read the step's result ("Permission denied", exit 3, the hidden step
/// file left) nor its results file on the rerun, and a new `--db` was a
/// directory its engine could not open. The owner's rights are kept now;
/// the group's and others' stay masked. (Checked on the modes: as root,
/// which the suite runs as, a missing right refuses nothing.)
#[test]
fn a_umask_that_takes_the_owners_rights_leaves_kvperfs_files_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        r#"name = "umask"
driver = "ycsb"
engine = "lmdb"
[properties]
recordcount = 100
operationcount = 100
[[configs]]
name = "a"
db = "store"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    command
        .args(["plan", "run", "p.toml", "--results", "r.jsonl"])
        .current_dir(tmp.path())
        .stdin(Stdio::null());
    // SAFETY: umask(2) is async-signal-safe and cannot fail.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o777);
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for (name, owner) in [
        ("r.jsonl", 0o600),
        ("store", 0o700),
        ("store/.kvperf-data", 0o600),
        ("r-report", 0o700),
        ("r-report/report.md", 0o600),
    ] {
        let mode = std::fs::metadata(tmp.path().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}: {stderr}"))
            .permissions()
            .mode();
        assert_eq!(mode & owner, owner, "{name} has mode {mode:o}");
        assert_eq!(mode & 0o077, 0, "{name} has mode {mode:o}");
    }
}

/// `kvperf ARGS` in `dir`, waited for at most `bound` (or the test fails
/// naming `what`); its exit code and stderr lines, read as they come.
fn within(dir: &Path, args: &[String], bound: Duration, what: &str) -> (i32, Vec<String>) {
    let (mut child, lines) = spawn(dir, args);
    let status = wait_within(&mut child, bound, what);
    (status.code().unwrap_or(-1), rest(&lines))
}

/// A property name of 4 000 000 bytes (a property file may hold 4 MiB)
/// held a `run` about a minute before measuring (14 s for 1 MB): the name
/// was checked for a credential by measuring every stretch of it against
/// each credential word, and for a did-you-mean against every known name
/// (Levenshtein over the whole name). A plan's steps paid the first cost
/// once each (about 1.7 ms a step: 33 s for `plan show` of 20 000 steps,
/// about three minutes for the 99 000 a plan may have). Now a name's
/// check is one pass over it, and names whose lengths differ by more than
/// the edits allowed are not measured.
#[test]
fn many_steps_and_a_long_property_name_are_checked_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("many.toml"),
        r#"name = "many"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 10
operationcount = 10
[[configs]]
name = "a"
[[steps]]
workloads = ["c"]
threads = [1]
repeats = 20000
"#,
    )
    .unwrap();
    let started = Instant::now();
    let args: Vec<String> = ["plan", "show", "many.toml"].map(String::from).to_vec();
    let (code, stderr) = within(
        tmp.path(),
        &args,
        Duration::from_secs(90),
        "plan show of 20 000 steps",
    );
    assert_eq!(code, 0, "{stderr:#?}");
    let shown = started.elapsed();

    let props = tmp.path().join("long.properties");
    std::fs::write(&props, format!("x{}=1\n", "a".repeat(4_000_000))).unwrap();
    let c = workload("c");
    let started = Instant::now();
    let args: Vec<String> = [
        "run",
        "--engine",
        "null",
        "-P",
        c.as_str(),
        "-P",
        &props.display().to_string(),
        "-p",
        "recordcount=10",
        "-p",
        "operationcount=10",
    ]
    .map(String::from)
    .to_vec();
    let (code, stderr) = within(
        tmp.path(),
        &args,
        Duration::from_secs(30),
        "a run with a long name",
    );
    assert_eq!(
        code,
        0,
        "{}",
        stderr.join("\n").chars().take(2000).collect::<String>()
    );
    eprintln!(
        "plan show of 20 000 steps: {:.1} s; a 4 000 000-byte name: {:.1} s",
        shown.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// An inotify descriptor watching `dir` for new names.
pub(super) struct Watch(i32);

impl Watch {
    pub(super) fn new(dir: &Path) -> Self {
        // SAFETY: inotify_init1 takes flags only; the path is a C string
        // this function owns, alive across the call.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK);
            assert!(fd >= 0, "inotify_init1");
            let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
            assert!(libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_CREATE) >= 0);
            Self(fd)
        }
    }

    /// Waits until a name starting with `prefix` is made, at most `bound`.
    pub(super) fn made(&self, prefix: &str, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        let mut buf = [0u8; 8192];
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let mut poll = libc::pollfd {
                fd: self.0,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(1000) as i32;
            // SAFETY: one pollfd this function owns; a buffer it owns, of
            // the length given.
            let n = unsafe {
                if libc::poll(&mut poll, 1, ms) <= 0 {
                    continue;
                }
                libc::read(self.0, buf.as_mut_ptr().cast(), buf.len())
            };
            let mut at = 0;
            while n > 0 && at + 16 <= n as usize {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let name = &buf[at + 16..at + 16 + len];
                let name = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap());
                if name.starts_with(prefix) {
                    return true;
                }
                at += 16 + len;
            }
        }
        false
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value owns, once.
        unsafe { libc::close(self.0) };
    }
}

/// `kvperf merge A B --output m.json` signalled (SIGINT, SIGTERM, SIGHUP)
/// as its output's temporary appears died of the signal leaving the hidden
/// `.m.json.kvperf-PID-N` (6 times of 6; pass 9 saw it once in 6 and noted
/// it). Now the signal waits for the write: m.json is there, whole, and
/// nothing hidden is left.
#[test]
fn a_signal_while_merge_writes_its_output_leaves_it_whole_and_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let c = workload("c");
    for shard in ["0/2", "1/2"] {
        let name = format!("s{}.json", &shard[..1]);
        let out = kvperf(
            tmp.path(),
            &[
                "run",
                "--engine",
                "null",
                "-P",
                &c,
                "-p",
                "recordcount=1000",
                "-p",
                "operationcount=20000",
                "--shard",
                shard,
                "--format",
                "json",
                "--output",
                &name,
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let args: Vec<String> = [
        "merge", "s0.json", "s1.json", "--format", "json", "--output", "m.json",
    ]
    .map(String::from)
    .to_vec();
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let _ = std::fs::remove_file(tmp.path().join("m.json"));
        let watch = Watch::new(tmp.path());
        let (mut child, lines) = spawn(tmp.path(), &args);
        let caught = watch.made(".m.json.kvperf-", Duration::from_secs(60));
        // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_within(&mut child, Duration::from_secs(60), "merge after a signal");
        let seen = rest(&lines);
        assert!(caught, "no temporary seen: {status:?} {seen:#?}");
        assert!(
            names_starting(tmp.path(), ".m.json").is_empty(),
            "signal {sig}: {:?} {status:?} {seen:#?}",
            names_starting(tmp.path(), ".")
        );
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("m.json")).unwrap())
                .unwrap_or_else(|e| panic!("m.json: {e}: {seen:#?}"));
        assert!(json["measurements"]
            .as_array()
            .is_some_and(|m| !m.is_empty()));
    }
}

/// A step's label names its steps as a config's name does, but was not
/// bounded: a label of 70 000 bytes, or one holding a line break, made the
/// step marker larger than a marker is read, or four lines; the step ran
/// and was recorded, then "'.r.jsonl.in-progress' is not the step marker
/// kvperf wrote", exit 2, the marker left for the user to move. Now both
/// are refused when the plan is read, nothing written.
#[test]
fn a_label_too_long_or_of_two_lines_is_refused_when_the_plan_is_read() {
    for (label, needle) in [
        ("x".repeat(70_000), "a label is at most 255"),
        ("x\\ny".to_string(), "a label is one line"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("p.toml"),
            format!(
                r#"name = "lb"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 1000
[[configs]]
name = "a"
[[steps]]
label = "{label}"
workloads = ["c"]
threads = [1]
"#
            ),
        )
        .unwrap();
        let out = kvperf(
            tmp.path(),
            &["plan", "run", "p.toml", "--results", "r.jsonl"],
        );
        crate::common::assert_input_error(&out, needle);
        assert_eq!(names_starting(tmp.path(), ""), ["p.toml"], "{}", out.stderr);
    }
}

/// An `--output` of 250 bytes (a name may be 255) was measured, then
/// refused at its write: its temporary, `.NAME.kvperf-PID-N`, was a name
/// too long ("File name too long", exit 3, the result kept elsewhere).
/// Now it is written where asked. A plan's results file named past what
/// the files kvperf writes beside it allow (`.NAME.step-PID.json`) made
/// the first step fail, exit 3, its step marker "kept" in a
/// `kvperf-unsaved-*.txt` as if it were a result, an empty results file
/// left (or, at 245 bytes, "... cannot be checked (File name too long),
/// so kvperf did not make it: move it"); now it is one line, exit 2,
/// before anything is written.
#[test]
fn long_output_names_are_written_or_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("{}.json", "r".repeat(245));
    let c = workload("c");
    let out = kvperf(
        tmp.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &c,
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=1000",
            "--format",
            "json",
            "--output",
            &name,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(names_starting(tmp.path(), ""), [name], "{}", out.stderr);

    for len in [235, 245, 250] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("p.toml"),
            "name = \"long\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 10\noperationcount = 10\n[[configs]]\nname = \"a\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n",
        )
        .unwrap();
        let results = format!("{}.jsonl", "r".repeat(len));
        let out = kvperf(
            tmp.path(),
            &["plan", "run", "p.toml", "--results", &results],
        );
        crate::common::assert_input_error(&out, "is at most 236");
        assert_eq!(names_starting(tmp.path(), ""), ["p.toml"], "{}", out.stderr);
    }
}

/// `kvperf report` given SIGINT and then SIGTERM as its first file's
/// temporary appears (a user pressing Ctrl-C, then a supervisor's stop):
/// the second signal ended it inside the write, leaving the hidden
/// `.report.md.kvperf-PID-N` (and, with SIGHUP twice, the probe
/// `.probe.kvperf-PID-N` of its checks). Now each write finishes before
/// the signal is taken: whatever the report directory holds is whole, and
/// nothing hidden is left.
#[test]
fn two_signals_while_report_writes_leave_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("p.toml"),
        "name = \"two\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 10\noperationcount = 1000\n[[configs]]\nname = \"a\"\n[[configs]]\nname = \"b\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1, 2]\n",
    )
    .unwrap();
    let out = kvperf(
        tmp.path(),
        &["plan", "run", "p.toml", "--results", "r.jsonl"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for round in 0..3 {
        let dir = tmp.path().join(format!("o{round}"));
        std::fs::create_dir(&dir).unwrap();
        let watch = Watch::new(&dir);
        let args: Vec<String> = ["report", "r.jsonl", "--out", &format!("o{round}")]
            .map(String::from)
            .to_vec();
        let (mut child, lines) = spawn(tmp.path(), &args);
        let caught = watch.made(".", Duration::from_secs(60));
        // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let status = wait_within(
            &mut child,
            Duration::from_secs(60),
            "report after two signals",
        );
        let seen = rest(&lines);
        assert!(caught, "no temporary seen: {status:?} {seen:#?}");
        assert!(
            names_starting(&dir, ".").is_empty(),
            "{:?} {status:?} {seen:#?}",
            names_starting(&dir, "")
        );
        let md = dir.join("report.md");
        if md.exists() {
            let text = std::fs::read_to_string(&md).unwrap();
            assert!(text.contains("kvperf-file/1 report.md"), "{text}");
        }
    }
}
