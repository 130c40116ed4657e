//! Hostile cases: links (docs/reliability.md, "Links"). Every write
//! kvperf makes opens without following a symbolic link and creates its
//! file exclusively, or renames a new file into place, at every write and
//! not only the first: a link or a hard link put where kvperf writes never
//! leads a write into a file kvperf did not create.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{self, assert_input_error, kvperf, workload};

/// A directory on a disk filesystem (the fill uses direct I/O, which
/// tmpfs refuses).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn precondition(dir: &Path) -> common::Output {
    kvperf(
        dir,
        &[
            "device",
            "precondition",
            "fills",
            "--size",
            "1M",
            "--passes",
            "1",
        ],
    )
}

#[test]
fn a_fill_that_is_a_link_or_has_another_name_is_never_written() {
    let tmp = disk_dir();
    let fills = tmp.path().join("fills");
    std::fs::create_dir(&fills).unwrap();
    let theirs = tmp.path().join("thesis.pdf");
    std::fs::write(&theirs, "precious").unwrap();
    let fill = fills.join("kvperf-precondition.fill");
    let cases: [(&str, &dyn Fn()); 3] = [
        ("symbolic link", &|| {
            std::os::unix::fs::symlink(&theirs, &fill).unwrap()
        }),
        ("2 hard links", &|| {
            std::fs::hard_link(&theirs, &fill).unwrap()
        }),
        // A file of the fill's name that kvperf did not make.
        ("carries no mark", &|| {
            std::fs::write(&fill, "mine").unwrap()
        }),
    ];
    for (says, make) in cases {
        make();
        let out = precondition(tmp.path());
        assert_input_error(&out, says);
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious", "{says}");
        std::fs::remove_file(&fill).unwrap();
    }
    // A dangling link: nothing is created where it points.
    let nowhere = tmp.path().join("nowhere");
    std::os::unix::fs::symlink(&nowhere, &fill).unwrap();
    assert_input_error(&precondition(tmp.path()), "symbolic link");
    assert!(!nowhere.exists());
    std::fs::remove_file(&fill).unwrap();
    // kvperf's own fill is made, then found and reused.
    for _ in 0..2 {
        let out = precondition(tmp.path());
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    assert_eq!(std::fs::metadata(&fill).unwrap().len(), 1 << 20);
}

/// Waits (without a sleep standing in for it) until `path` holds at least
/// `lines` lines, or `child` ends.
fn wait_for_lines(path: &Path, lines: usize, child: &mut std::process::Child) -> bool {
    loop {
        if std::fs::read_to_string(path).is_ok_and(|t| t.lines().count() >= lines) {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::yield_now();
    }
}

#[test]
fn a_link_put_at_the_report_file_mid_run_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs.csv");
    std::fs::write(&theirs, "precious\n").unwrap();
    let report = tmp.path().join("report.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args([
            "bench",
            "--engine=null",
            "--benchmarks=fillrandom,readrandom",
            "--num=1000",
            "--duration=2",
            "--report_interval_seconds=1",
            "--report_file=report.csv",
        ])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // fillrandom has begun its log.
    assert!(
        wait_for_lines(&report, 2, &mut child),
        "fillrandom began its log"
    );
    // A link replaces the file while fillrandom runs; readrandom makes
    // its own file next.
    let link: PathBuf = tmp.path().join("link.tmp");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    std::fs::rename(&link, &report).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Pass 12: lines that could not be written where asked are kept in a
    // file of their own, named, and the command fails (it exited 0).
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert!(stderr.contains("its lines are kept in"), "{stderr}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"precious\n");
    assert!(std::fs::symlink_metadata(&report)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_ledger_that_is_a_link_or_a_hard_link_is_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let load = |fresh: bool| {
        let mut args = vec!["load", "-P", &wa, "-p", "recordcount=20", "--db", "db"];
        if fresh {
            args.push("--fresh");
        }
        kvperf(tmp.path(), &args)
    };
    assert_eq!(load(false).code, 0);
    let ledger = tmp.path().join("db/.kvperf-loaded-keys");
    let theirs = tmp.path().join("theirs.txt");
    for make in [
        &(|l: &Path, t: &Path| std::os::unix::fs::symlink(t, l).unwrap()) as &dyn Fn(&Path, &Path),
        &|l: &Path, t: &Path| std::fs::hard_link(t, l).unwrap(),
    ] {
        std::fs::write(&theirs, "precious\n").unwrap();
        std::fs::remove_file(&ledger).unwrap();
        make(&ledger, &theirs);
        // A load appends its keys to the ledger: not through a link.
        let out = load(false);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stderr.contains(".kvperf-loaded-keys"), "{}", out.stderr);
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious\n");
        // A fresh load begins a new ledger: renamed over the link.
        let out = load(true);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious\n");
        let meta = std::fs::symlink_metadata(&ledger).unwrap();
        assert!(
            meta.is_file() && meta.len() > 0,
            "kvperf's own ledger stands there again"
        );
        assert_eq!(std::fs::read_to_string(&ledger).unwrap(), "0 20\n");
        std::fs::remove_file(&theirs).unwrap();
    }
}

#[test]
fn a_results_file_that_is_a_link_is_not_appended_through() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"tiny\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 10\noperationcount = 10\n[[configs]]\nname = \"c\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n",
    )
    .unwrap();
    let real = tmp.path().join("real.jsonl");
    assert_eq!(common::plan_run(tmp.path(), &plan, &real).code, 0);
    let before = std::fs::read(&real).unwrap();
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = common::plan_run(tmp.path(), &plan, &link);
    assert_input_error(&out, "is a symbolic link");
    assert_eq!(std::fs::read(&real).unwrap(), before);
}

/// Pass 5: a symbolic link at the release cache's lock
/// (`$KVPERF_CACHE/rocksdb/.10.2.1.lock`) led the fetch's truncating open
/// to a user's file, emptied (its log's fixed name likewise). The lock is
/// refused now when it is a link, and is opened to append.
#[cfg(feature = "rocksdb")]
#[test]
fn a_link_at_the_release_caches_lock_leads_no_write() {
    if !crate::hostile::ownership::can_fetch_a_release(
        "a_link_at_the_release_caches_lock_leads_no_write",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(cache.join("rocksdb")).unwrap();
    let mine = tmp.path().join("mine.txt");
    std::fs::write(&mine, "precious").unwrap();
    std::os::unix::fs::symlink(&mine, cache.join("rocksdb/.10.2.1.lock")).unwrap();
    let out = crate::hostile::ownership::run_on_release(tmp.path(), &cache);
    assert_input_error(&out, "is not kvperf's lock file");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "precious");
}
