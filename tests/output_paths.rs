//! Files kvperf writes never destroy what kvperf did not create: every
//! output path is checked before anything is measured, only kvperf's own
//! regular files are replaced (atomically, keeping their mode), inputs
//! that are not regular files are refused, and a result that cannot be
//! written is kept in a file named in the error. The probes of issue 23.

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{assert_input_error, kvperf, workload};

/// A short null-engine run writing `--output out` in `format`.
fn run_to(dir: &Path, out: &Path, format: &str) -> common::Output {
    let file = workload("c");
    let out = out.display().to_string();
    kvperf(
        dir,
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &file,
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=2000",
            "--format",
            format,
            "--output",
            &out,
        ],
    )
}

pub(crate) fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Refused with exit 2 and one line, before measuring: nothing on stdout.
fn assert_refused_before_measuring(out: &common::Output, says: &str) {
    assert_input_error(out, says);
    assert!(out.stdout.is_empty(), "nothing measured: {}", out.stdout);
}

#[test]
fn output_refuses_devices_links_directories_and_foreign_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "my notes").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    let mine = dir.join("mine.json");
    assert_eq!(run_to(dir, &mine, "json").code, 0);
    let hard = dir.join("hard.json");
    std::fs::hard_link(&mine, &hard).unwrap();
    let cases: [(PathBuf, &str); 7] = [
        ("/dev/null".into(), "is a character device"),
        ("/dev/full".into(), "is a character device"),
        (link.clone(), "is a symbolic link"),
        (hard.clone(), "has 2 hard links"),
        (notes.clone(), "is not a kvperf JSON result"),
        (dir.to_path_buf(), "is a directory"),
        (dir.join("missing/out.json"), "which does not exist"),
    ];
    for (path, says) in &cases {
        assert_refused_before_measuring(&run_to(dir, path, "json"), says);
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(std::fs::metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn output_replaces_its_own_file_atomically_keeping_its_mode() {
    let tmp = tempfile::tempdir().unwrap();
    for (format, name) in [("json", "r.json"), ("text", "r.txt")] {
        let path = tmp.path().join(name);
        assert_eq!(run_to(tmp.path(), &path, format).code, 0);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let again = run_to(tmp.path(), &path, format);
        assert_eq!(again.code, 0, "{format}: {}", again.stderr);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{format}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[OVERALL], Throughput(ops/sec)") || text.contains("kvperf_step"));
        // A text result from a file starts with kvperf's line, then YCSB's.
        if format == "text" {
            assert!(text.starts_with("# kvperf "), "{text}");
            assert!(text
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("[OVERALL], RunTime(ms)"));
        }
    }
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
}

#[test]
fn merge_never_writes_over_one_of_its_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    assert_eq!(run_to(tmp.path(), &a, "json").code, 0);
    let before = std::fs::read(&a).unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "merge", "a.json", "a.json", "--format", "json", "--output", "a.json",
        ],
    );
    assert_input_error(&out, "is also an input of this command");
    assert_eq!(std::fs::read(&a).unwrap(), before);
}

#[test]
fn results_files_kvperf_did_not_write_are_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = common::small_plan(tmp.path());
    let fifo = tmp.path().join("fifo.jsonl");
    mkfifo(&fifo);
    let notes = tmp.path().join("notes.jsonl");
    let contents = ["my notes, no newline", "{\"a\": 1}\n", "\u{1}\u{2}\u{3}"];
    for text in contents {
        std::fs::write(&notes, text).unwrap();
        let out = common::plan_run(tmp.path(), &plan, &notes);
        // "is not a kvperf results file", or its line "is not a kvperf result".
        assert_input_error(&out, "not a kvperf result");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    }
    for (path, says) in [
        (Path::new("/dev/full"), "is a character device"),
        (fifo.as_path(), "is a FIFO"),
        (tmp.path(), "is a directory"),
    ] {
        // Refused at once: a FIFO or /dev/full would hang or grow forever.
        assert_input_error(&common::plan_run(tmp.path(), &plan, path), says);
    }
    assert!(
        !tmp.path().join("db-first").exists(),
        "nothing was measured"
    );
}

#[test]
fn a_report_directory_with_a_users_files_is_checked_before_the_plan_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = common::small_plan(tmp.path());
    let report = tmp.path().join("mine");
    std::fs::create_dir(&report).unwrap();
    std::fs::write(report.join("report.md"), "my own report").unwrap();
    let results = tmp.path().join("r.jsonl");
    let shown = (plan.display().to_string(), results.display().to_string());
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            &shown.0,
            "--results",
            &shown.1,
            "--report",
            "mine",
        ],
    );
    assert_input_error(&out, "is not a kvperf report");
    assert!(!results.exists(), "refused before the first step");
    assert_eq!(
        std::fs::read_to_string(report.join("report.md")).unwrap(),
        "my own report"
    );
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.display().to_string();
    assert_input_error(
        &kvperf(tmp.path(), &["report", "/dev/zero", "--out", "rep"]),
        "results file '/dev/zero' is a character device",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["report", &fifo, "--out", "rep"]),
        "is a FIFO",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["run", "--engine", "null", "-P", &fifo]),
        "workload file",
    );
    assert_input_error(&kvperf(tmp.path(), &["plan", "show", &fifo]), "plan");
    assert_input_error(
        &kvperf(tmp.path(), &["merge", "/dev/zero", "--format", "json"]),
        "is a character device",
    );
    assert!(!tmp.path().join("rep").exists());
}

#[test]
fn bench_checks_its_files_before_measuring_and_leaves_a_users_empty_directory_empty() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.json"), "my notes").unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillseq",
            "--num=100",
            "--db=db",
            "--json=notes.json",
        ],
    );
    assert_input_error(
        &out,
        "--json 'notes.json' exists and is not a kvperf JSON result",
    );
    assert!(!tmp.path().join("db").exists(), "nothing was measured");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=readrandom",
            "--num=100",
            "--db=empty",
            "--use_existing_db=1",
        ],
    );
    assert_input_error(&out, "holds no rocksdb store");
    let left = std::fs::read_dir(tmp.path().join("empty")).unwrap().count();
    assert_eq!(left, 0, "no marker written into the user's directory");
}

/// A short null-engine run whose stdout is `stdout`, with its
/// temporary directory in `dir`.
fn null_run(dir: &Path, stdout: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "null", "-P", &workload("c")])
        .args(["-p", "recordcount=100", "-p", "operationcount=2000"])
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The file named by the last line of `stderr`, "... kept in 'FILE'".
fn kept_file(stderr: &str) -> String {
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("cannot write to standard output"), "{stderr}");
    let kept = last.split("kept in '").nth(1).expect("names the file");
    kept.trim_end_matches('\'').to_string()
}

#[test]
fn a_full_stdout_or_a_gone_reader_keeps_the_result_in_a_named_file() {
    let tmp = tempfile::tempdir().unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut gone = null_run(tmp.path(), Stdio::piped());
    // The reader goes away before kvperf prints.
    drop(gone.stdout.take());
    for child in [null_run(tmp.path(), Stdio::from(full)), gone] {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let text = std::fs::read_to_string(kept_file(&stderr)).unwrap();
        assert!(text.contains("[READ], Operations, 2000"), "{text}");
    }
}
