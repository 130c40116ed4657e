//! Hostile cases: inputs (docs/reliability.md). Every file kvperf reads
//! (markers, ledgers, property files, results, plans, histograms) is
//! opened without blocking, must be a regular file of a real filesystem,
//! and is read up to a bound; a FIFO, a device, a /proc file or an
//! oversized file is one line and exit 2, at once.
//!
//! Each case runs kvperf with a deadline and a 2 GiB data limit, so a
//! kvperf that waits on a FIFO or reads /dev/zero fails the test instead
//! of hanging it or taking the machine's memory.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

const DEADLINE: Duration = Duration::from_secs(60);

fn bounded(dir: &Path, args: &[&str]) -> common::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_DATA, &limit);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kvperf {args:?} still ran after {DEADLINE:?}");
        }
        std::thread::park_timeout(Duration::from_millis(50));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    common::Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A store kvperf loaded (LMDB, 100 records) in `dir/db`.
fn loaded_store(dir: &Path) -> std::path::PathBuf {
    let a = common::workload("a");
    let out = bounded(
        dir,
        &[
            "load",
            "--engine",
            "lmdb",
            "--db",
            "db",
            "-P",
            &a,
            "-p",
            "recordcount=100",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    dir.join("db")
}

fn run_on(dir: &Path, extra: &[&str]) -> common::Output {
    let a = common::workload("a");
    let mut args = vec![
        "run",
        "--engine",
        "lmdb",
        "--db",
        "db",
        "-P",
        &a,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
    ];
    args.extend_from_slice(extra);
    bounded(dir, &args)
}

/// A FIFO at the data directory's marker hung `run` forever.
#[test]
fn a_fifo_or_a_link_to_dev_zero_as_the_data_marker_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = loaded_store(tmp.path());
    let marker = db.join(".kvperf-data");
    std::fs::remove_file(&marker).unwrap();
    mkfifo(&marker);
    common::assert_input_error(
        &run_on(tmp.path(), &[]),
        "has a '.kvperf-data' that is a FIFO (named pipe), not kvperf's marker",
    );
    std::fs::remove_file(&marker).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &marker).unwrap();
    common::assert_input_error(
        &run_on(tmp.path(), &[]),
        "has a '.kvperf-data' that is a symbolic link, not kvperf's marker",
    );
}

/// A FIFO at the loaded-keys ledger hung `run`; a link to /dev/zero grew
/// kvperf's memory until the kernel killed it; `load --fresh`, which
/// starts the ledger again, waited on the FIFO too.
#[test]
fn a_fifo_or_a_link_to_dev_zero_as_the_ledger_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = loaded_store(tmp.path());
    let ledger = db.join(".kvperf-loaded-keys");
    std::fs::remove_file(&ledger).unwrap();
    mkfifo(&ledger);
    common::assert_input_error(
        &run_on(tmp.path(), &[]),
        "ledger 'db/.kvperf-loaded-keys' is a FIFO",
    );
    let a = common::workload("a");
    let fresh = bounded(
        tmp.path(),
        &[
            "load",
            "--fresh",
            "--engine",
            "lmdb",
            "--db",
            "db",
            "-P",
            &a,
            "-p",
            "recordcount=100",
        ],
    );
    common::assert_input_error(&fresh, "ledger 'db/.kvperf-loaded-keys' is a FIFO");
    std::fs::remove_file(&ledger).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &ledger).unwrap();
    common::assert_input_error(
        &run_on(tmp.path(), &[]),
        "is a character device, not a file",
    );
}

/// A /proc file says size 0 and is "regular": `-P /proc/self/pagemap`
/// read without bound.
#[test]
fn kernel_files_as_property_results_or_histogram_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bounded(
        tmp.path(),
        &["run", "--engine", "null", "-P", "/proc/self/pagemap"],
    );
    common::assert_input_error(
        &out,
        "workload file '/proc/self/pagemap' is a kernel interface file (on /proc)",
    );
    let out = bounded(
        tmp.path(),
        &["report", "/proc/self/pagemap", "--out", "rep"],
    );
    common::assert_input_error(
        &out,
        "results file '/proc/self/pagemap' is a kernel interface file",
    );
    let out = common::run_null(
        tmp.path(),
        "a",
        &[
            "-p",
            "operationcount=10",
            "-p",
            "fieldlengthdistribution=histogram",
            "-p",
            "fieldlengthhistogram=/proc/self/pagemap",
        ],
    );
    common::assert_input_error(
        &out,
        "fieldlengthhistogram '/proc/self/pagemap' is a kernel interface file",
    );
}

/// A property file far larger than any (5 MiB of comments) is refused by
/// its bound, not read into memory.
#[test]
fn a_property_file_past_its_bound_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("huge");
    let mut text = std::fs::read_to_string(common::workload("a")).unwrap();
    text.push_str(&"# a comment line, repeated\n".repeat(200_000));
    std::fs::write(&big, text).unwrap();
    let out = bounded(
        tmp.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            "huge",
            "-p",
            "operationcount=10",
        ],
    );
    common::assert_input_error(
        &out,
        "workload file 'huge' is larger than a workload file can be (4 MiB)",
    );
    // A plan likewise (its own bound, 4 MiB).
    let plan = crate::hostile::plans::null_plan(tmp.path());
    let mut text = std::fs::read_to_string(&plan).unwrap();
    text.push_str(&"# a comment line, repeated\n".repeat(200_000));
    std::fs::write(&plan, text).unwrap();
    let out = bounded(
        tmp.path(),
        &[
            "plan",
            "run",
            plan.to_str().unwrap(),
            "--results",
            "r.jsonl",
        ],
    );
    common::assert_input_error(&out, "is larger than a plan can be (4 MiB)");
    assert!(!tmp.path().join("r.jsonl").exists());
}

/// `kvperf report` and `kvperf compare` given what is not a kvperf results
/// file (a user's JSON, an empty file, a binary file, a directory): one
/// line naming the file and what it is not, exit 2, and no advice that
/// belongs to another command (issue 44 follow-up: "give a new --results
/// path", and serde's "trailing characters at line 1 column 4").
#[test]
fn report_and_compare_name_a_file_that_is_not_results_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files: [(&str, &[u8]); 5] = [
        ("mine.json", b"{\"name\": \"mine\", \"items\": [1, 2]}\n"),
        ("pretty.json", b"{\n  \"kvperf\": true\n}\n"),
        ("list.json", b"[1, 2]\n"),
        ("empty.jsonl", b""),
        ("blob.bin", b"\x00\x9f\xff\x01kvperf\n\x02\x03"),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    std::fs::create_dir(dir.join("results.d")).unwrap();
    let names = files.map(|(n, _)| n);
    for name in names.iter().copied().chain(["results.d"]) {
        for command in ["report", "compare"] {
            let out_dir = dir.join(format!("out-{name}"));
            let out_dir = out_dir.display().to_string();
            let args = match command {
                "report" => vec!["report", name, "--out", &out_dir],
                _ => vec!["compare", name],
            };
            let out = common::kvperf(dir, &args);
            let what = format!("{command} {name}");
            assert_eq!(out.code, 2, "{what}: {}", out.stderr);
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{what}: {}", out.stderr);
            let line = lines[0];
            let said = if name == "results.d" {
                "is a directory, not a file"
            } else {
                "is not a kvperf results file"
            };
            assert!(
                line.starts_with("kvperf: ")
                    && line.contains(&format!("'{name}'"))
                    && line.contains(said),
                "{what}: {line}"
            );
            for foreign in ["--results path", "column", "expected", "struct", "Version"] {
                assert!(!line.contains(foreign), "{what}: {line}");
            }
            assert!(
                !Path::new(&out_dir).exists(),
                "{what}: a report was written"
            );
        }
    }
}

/// Pass 5: `kvperf fit` of a trace of deletes only wrote, exit 0, a
/// workload whose proportions are all 0, which `kvperf run` refuses
/// ("operation proportions sum to 0"). fit checks its workload with
/// run's own parser now: one line, exit 2, nothing written.
#[test]
fn fit_refuses_a_trace_it_can_fit_no_runnable_workload_to() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::import_csv_trace(dir, "d", "0,delete,k1,0\n1,delete,k2,0\n");
    let out = bounded(dir, &["fit", "d.kvtrace", "--output", "w.properties"]);
    common::assert_input_error(&out, "fits no workload kvperf can run");
    assert!(out.stderr.contains("all deletes"), "{}", out.stderr);
    assert!(!dir.join("w.properties").exists());
}
