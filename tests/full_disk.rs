//! A really full disk (issue 23 §3): the data directory is a small tmpfs,
//! so the engine's writes fail with ENOSPC part of the way through a step.
//! kvperf must end the step with exit 3 and one line that says the disk is
//! full, count the failed operations, keep a valid results file, and let a
//! rerun on a bigger disk finish the study. Needs root (to mount); without
//! it each test says SKIPPED, except under CI, where it fails.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use crate::common::{kvperf, workload, Output};
use kvperf::measure::OpKind;
use kvperf::results::step::StepOutput;

/// A size-limited tmpfs mounted inside a temporary directory; unmounted
/// when dropped, also when the test panics.
struct SmallDisk {
    mount: PathBuf,
    mounted: bool,
    // Removed after the unmount (fields drop after `drop` runs).
    _dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A `megabytes` MiB tmpfs, or None (SKIPPED, or a panic under CI)
    /// when this machine will not mount one.
    fn mount(test: &str, megabytes: u32) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("small");
        std::fs::create_dir(&mount).unwrap();
        let mut disk = Self {
            mount,
            mounted: false,
            _dir: dir,
        };
        if let Err(why) = disk.mount_at(megabytes) {
            match cannot_mount(test, &why, std::env::var("CI").ok().as_deref()) {
                Ok(skipped) => common::note_skip(&skipped),
                Err(failed) => panic!("{failed}"),
            }
            return None;
        }
        Some(disk)
    }

    fn mount_at(&mut self, megabytes: u32) -> Result<(), String> {
        let size = format!("size={megabytes}m");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
            .arg(&self.mount)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`mount -t tmpfs -o {size}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        self.mounted = true;
        Ok(())
    }

    /// Unmounts (the files on it are gone) and mounts a bigger tmpfs at the
    /// same path: what a user does who grows the disk.
    fn remount(&mut self, megabytes: u32) {
        self.unmount();
        self.mount_at(megabytes)
            .expect("mounted once, mounts again");
    }

    fn unmount(&mut self) {
        if self.mounted {
            let ok = Command::new("umount")
                .arg(&self.mount)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                // Busy (a kvperf still running after a failed assertion):
                // detached now, freed when the last file closes.
                let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
            }
            self.mounted = false;
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        self.unmount();
    }
}

/// SKIPPED, or under CI (CI=true or 1) a failure: as `cannot_start` in
/// tests/common/server.rs decides for servers.
fn cannot_mount(test: &str, why: &str, ci: Option<&str>) -> Result<String, String> {
    if ci.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
        Err(format!(
            "FAILED {test}: CI=true and a small filesystem cannot be mounted: {why}"
        ))
    } else {
        Ok(format!("SKIPPED {test}: {why}"))
    }
}

/// Each engine's words for a full disk. LMDB reports a write cut short by
/// a full disk as EIO ("Input/output error"; ENOSPC when the write is
/// refused outright): kvperf names the full disk beside the EIO ("a write
/// cut short: the disk is full"), a bare EIO is no longer accepted.
const FULL: [&str; 3] = ["No space left on device", "disk is full", "MDB_MAP_FULL"];

/// Exit 3, no panic, and stderr ends with the one line of the error
/// (`kvperf: ...`, not a warning), which says the disk is full. Returns it.
fn assert_full_disk_failure(out: &Output) -> String {
    assert_eq!(out.code, 3, "exit code; stderr: {}", out.stderr);
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "{}",
        out.stderr
    );
    let last = out.stderr.lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with("kvperf: ") && !last.starts_with("kvperf: warning:"),
        "the error is the last line: {:?}",
        out.stderr
    );
    assert!(
        FULL.iter().any(|f| last.contains(f)),
        "the error does not say the disk is full: {last}"
    );
    if last.contains("Input/output error") {
        assert!(
            last.contains("a write cut short: the disk is full"),
            "an EIO that is the full disk says so: {last}"
        );
    }
    last
}

/// `kvperf load` of about 40 MB onto a 16 MiB disk with `engine`: the
/// disk fills mid-load. The step fails (exit 3) with one line naming the
/// full disk, and its JSON output keeps the error and the failed inserts.
fn load_fills_the_disk(test: &str, engine: &str) {
    let Some(disk) = SmallDisk::mount(test, 16) else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let db = disk.mount.join("db");
    let output = outside.path().join("load.json");
    let file = workload("a");
    // redb commits without fsync by default and writes at a later commit
    // or at close, so a fast load could fill only memory; every commit
    // reaching the disk makes the full disk show at the insert it hits.
    let durable = format!("{engine}.durability=immediate");
    let durable = if engine == "redb" {
        durable.as_str()
    } else {
        "seed=1"
    };
    let args = [
        "load",
        "--engine",
        engine,
        "-p",
        durable,
        "--db",
        db.to_str().unwrap(),
        "-P",
        &file,
        "-p",
        "recordcount=4000",
        "-p",
        "fieldcount=10",
        "-p",
        "fieldlength=1000",
        "--format",
        "json",
        "--output",
        output.to_str().unwrap(),
    ];
    let out = kvperf(outside.path(), &args);
    let line = assert_full_disk_failure(&out);
    eprintln!("{engine}: exit {}: {line}", out.code);

    let text = std::fs::read_to_string(&output).expect("the output is written on failure");
    let step = StepOutput::from_json(&text).expect("the output is kvperf's step output");
    let error = step.error.as_ref().expect("the step records its error");
    assert!(
        FULL.iter().any(|f| error.message.contains(f)),
        "recorded error: {}",
        error.message
    );
    let m = step
        .measurements
        .first()
        .expect("what was measured is kept");
    let insert = m.ops.get(&OpKind::Insert).expect("inserts were counted");
    let failed = insert.returns.get("ERROR").copied().unwrap_or(0);
    let ok = insert.returns.get("OK").copied().unwrap_or(0);
    eprintln!("{engine}: INSERT OK={ok} ERROR={failed}");
    assert!(
        failed > 0,
        "failed inserts are counted: {:?}",
        insert.returns
    );
    assert!(ok < 4000, "not every record fits: {:?}", insert.returns);
    assert!(
        insert
            .first_error
            .as_deref()
            .is_some_and(|e| FULL.iter().any(|f| e.contains(f))),
        "first error: {:?}",
        insert.first_error
    );
}

#[test]
fn redb_load_onto_a_full_disk_fails_in_one_line() {
    load_fills_the_disk("redb_load_onto_a_full_disk_fails_in_one_line", "redb");
}

#[test]
fn lmdb_load_onto_a_full_disk_fails_in_one_line() {
    load_fills_the_disk("lmdb_load_onto_a_full_disk_fails_in_one_line", "lmdb");
}

#[test]
fn sqlite_load_onto_a_full_disk_fails_in_one_line() {
    load_fills_the_disk("sqlite_load_onto_a_full_disk_fails_in_one_line", "sqlite");
}

/// A plan whose load fills the disk: exit 3, a valid results file with the
/// load recorded as failed; then the ways to go on. `--db small=BIGGER`
/// changes the plan (its fingerprint covers the data directories), so a
/// rerun with it on the same results file is refused in one line and
/// changes nothing; a bigger disk at the same path, with the same command,
/// retries the failed load and finishes the study.
#[test]
fn a_plan_whose_load_fills_the_disk_fails_the_step_and_resumes_on_a_bigger_one() {
    let test = "a_plan_whose_load_fills_the_disk_fails_the_step_and_resumes_on_a_bigger_one";
    let Some(mut disk) = SmallDisk::mount(test, 16) else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let plan = outside.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "full-disk"
driver = "ycsb"
engine = "redb"
[properties]
"redb.durability" = "immediate"
recordcount = 3000
operationcount = 500
fieldcount = 10
fieldlength = 1000
[[configs]]
name = "small"
db = "{}"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
            disk.mount.join("db").display()
        ),
    )
    .unwrap();
    let results = outside.path().join("results.jsonl");
    let (plan_arg, results_arg) = (plan.display().to_string(), results.display().to_string());
    let run = |extra: &[&str]| {
        let mut args = vec!["plan", "run", &plan_arg, "--results", &results_arg];
        args.extend_from_slice(extra);
        kvperf(outside.path(), &args)
    };

    let first = run(&[]);
    let line = assert_full_disk_failure(&first);
    eprintln!("plan: exit {}: {line}", first.code);
    let records = common::lines(&results);
    assert_eq!(records.len(), 1, "only the load ran: {records:#?}");
    let load = &records[0];
    assert_eq!(load.step.kind, "load");
    let error = load
        .output
        .error
        .as_ref()
        .expect("the load is recorded as failed");
    assert!(
        FULL.iter().any(|f| error.message.contains(f)),
        "recorded error: {}",
        error.message
    );
    let failed = load.output.measurements[0]
        .ops
        .get(&OpKind::Insert)
        .and_then(|s| s.returns.get("ERROR").copied())
        .unwrap_or(0);
    assert!(failed > 0, "failed inserts are counted");

    // Another data directory is another plan for this results file.
    let bigger = outside.path().join("bigger");
    let db_override = format!("small={}", bigger.display());
    let before = std::fs::read(&results).unwrap();
    let moved = run(&["--db", &db_override]);
    eprintln!("plan --db: exit {}: {}", moved.code, moved.stderr.trim());
    common::assert_input_error(&moved, "another plan");
    assert_eq!(
        std::fs::read(&results).unwrap(),
        before,
        "nothing is appended"
    );

    // What a user can do with the same results: grow the disk, rerun.
    disk.remount(64);
    let again = run(&[]);
    assert_eq!(again.code, 0, "the rerun finishes: {}", again.stderr);
    let records = common::lines(&results);
    let kinds: Vec<(&str, bool)> = records
        .iter()
        .map(|r| (r.step.kind.as_str(), r.output.error.is_none()))
        .collect();
    assert_eq!(
        kinds,
        [("load", false), ("load", true), ("run", true)],
        "the failed load stays, marked; the retried load and the run follow"
    );
    let inserted = records[1].output.measurements[0].ops[&OpKind::Insert].returns["OK"];
    assert_eq!(inserted, 3000);
}

/// db_bench's fillrandom onto a full disk: db_bench exits at the first
/// failed write ("put error: ... No space left on device"); kvperf counts
/// the failure, keeps fillrandom's figures in the JSON, runs no further
/// benchmark, and fails in one line that names the full disk (not the
/// "Previous I/O error" of the close after it).
#[test]
fn bench_fillrandom_onto_a_full_disk_fails_in_one_line() {
    let test = "bench_fillrandom_onto_a_full_disk_fails_in_one_line";
    let Some(disk) = SmallDisk::mount(test, 16) else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let db = disk.mount.join("db");
    let json = outside.path().join("bench.json");
    let args = [
        "bench",
        "--engine",
        "redb",
        "-p",
        "redb.durability=immediate",
        "--db",
        db.to_str().unwrap(),
        "--benchmarks=fillrandom,readrandom",
        "--num=8000",
        "--value_size=4096",
        "--json",
        json.to_str().unwrap(),
    ];
    let out = kvperf(outside.path(), &args);
    let line = assert_full_disk_failure(&out);
    eprintln!("bench: exit {}: {line}", out.code);
    let step = StepOutput::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(step.error.is_some(), "the step records its error");
    assert_eq!(step.measurements.len(), 1, "readrandom does not run");
    let m = &step.measurements[0];
    assert_eq!(m.name, "fillrandom");
    let writes = m.ops.get(&OpKind::Write).expect("writes were counted");
    eprintln!("bench: WRITE returns {:?}", writes.returns);
    assert!(writes.returns.get("ERROR").copied().unwrap_or(0) > 0);
}

#[test]
fn an_unmountable_disk_skips_here_and_fails_under_ci() {
    let why = "no permission";
    assert!(cannot_mount("t", why, None)
        .unwrap()
        .starts_with("SKIPPED t: "));
    assert!(cannot_mount("t", why, Some("false")).is_ok());
    for ci in ["true", "TRUE", "1"] {
        assert!(cannot_mount("t", why, Some(ci))
            .unwrap_err()
            .starts_with("FAILED t: "));
    }
}

/// LMDB writing through its memory map (`lmdb.write_map=true`) meets a
/// full disk as SIGBUS, not ENOSPC: still one line that says so, exit 3,
/// not "Bus error (core dumped)".
#[test]
fn lmdb_write_map_onto_a_full_disk_fails_in_one_line_not_a_bus_error() {
    let test = "lmdb_write_map_onto_a_full_disk_fails_in_one_line_not_a_bus_error";
    let Some(disk) = SmallDisk::mount(test, 16) else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let db = disk.mount.join("db");
    let file = workload("a");
    let args = [
        "load",
        "--engine",
        "lmdb",
        "-p",
        "lmdb.write_map=true",
        "--db",
        db.to_str().unwrap(),
        "-P",
        &file,
        "-p",
        "recordcount=4000",
        "-p",
        "fieldcount=10",
        "-p",
        "fieldlength=1000",
    ];
    let out = kvperf(outside.path(), &args);
    let line = assert_full_disk_failure(&out);
    eprintln!("lmdb write_map: exit {}: {line}", out.code);
}
