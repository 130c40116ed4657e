//! Amplification as defined, on real runs of a real engine: the device's
//! and the engine's process's bytes are each divided by the logical bytes
//! and named for it; a data directory on tmpfs has neither ("unavailable",
//! not 0.00); updates of one field that rewrite whole records say so.

use crate::common;

use std::path::Path;

use crate::common::{lines, plan_run, report};
use kvperf::measure::accounting::Accounting;

/// A redb plan with one config at `db`: a load of `records` records of
/// 10 x 100 B, then `operations` of workload A (half reads, half
/// one-field updates).
fn plan(dir: &Path, db: &Path, records: u64, operations: u64) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "amp"
driver = "ycsb"
engine = "redb"
[properties]
recordcount = {records}
operationcount = {operations}
fieldcount = 10
fieldlength = 100
[[configs]]
name = "here"
db = "{}"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["a"]
threads = [1]
"#,
        db.display()
    );
    let path = dir.join("amp.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Each step's accounting, in order, and the report's Markdown.
fn run_and_report(
    dir: &Path,
    db: &Path,
    records: u64,
    operations: u64,
) -> (Vec<Accounting>, String) {
    let plan = plan(dir, db, records, operations);
    let results = dir.join("r.jsonl");
    let out = plan_run(dir, &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let accountings = lines(&results)
        .iter()
        .map(|r| r.measured().unwrap().accounting.clone().unwrap())
        .collect();
    let out_dir = dir.join("report");
    report(dir, &results, &out_dir);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    (accountings, md)
}

/// The cost table's row of `config`, as cells, with its header's.
fn cost_row(md: &str, config: &str) -> Vec<(String, String)> {
    let table = &md[md
        .find("Workload A: cost at each configuration's peak")
        .expect("a cost table")..];
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut rows = table.lines().filter(|l| l.starts_with('|'));
    let header = cells(rows.next().unwrap());
    let row = rows
        .find(|l| cells(l)[0] == config)
        .unwrap_or_else(|| panic!("no row for {config} in {table}"));
    header.into_iter().zip(cells(row)).collect()
}

fn cell<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
    &row.iter()
        .find(|(h, _)| h == column)
        .unwrap_or_else(|| panic!("no column {column}: {row:?}"))
        .1
}

#[test]
fn on_a_disk_both_amplifications_are_measured_and_named() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let db = tmp.path().join("db");
    // 3,000 records of 1,060 logical bytes: 3 MiB, over the 1 MiB floor.
    let (steps, md) = run_and_report(tmp.path(), &db, 3000, 3000);
    let load = &steps[0];
    let d = &load.derived;
    assert!(load.device_io.is_some(), "{:?}", load.unavailable);
    assert!(!load.memory_filesystem);
    // Each figure is its own bytes over the same logical bytes.
    let logical = load.logical.written as f64;
    let process = load.process_io.unwrap().write_bytes as f64;
    let device = load.device_io.unwrap().write_bytes as f64;
    let near = |got: Option<f64>, want: f64| {
        got.is_some_and(|g| (g - want).abs() <= 1e-12 * want.max(1.0))
    };
    assert!(
        near(d.write_amplification_process, process / logical),
        "{d:?}"
    );
    assert!(
        near(d.write_amplification_device, device / logical),
        "{d:?}"
    );
    // A load inserts whole records: no rewrite beyond them.
    assert_eq!(d.record_rewrite_factor, Some(1.0));
    // Workload A's updates write one field of ten: the engine rewrites
    // the whole record, ten fields' bytes per update.
    let run = &steps[1].derived;
    let factor = run
        .record_rewrite_factor
        .expect("redb rewrites whole records");
    assert!((9.0..=10.5).contains(&factor), "{factor}");
    let row = cost_row(&md, "here");
    let shown = cell(&row, "write amp (process)");
    assert!(
        shown == format!("{:.2}", run.write_amplification_process.unwrap_or(f64::NAN))
            || shown == "unreliable",
        "{row:?}"
    );
    let device_cell = cell(&row, "write amp (device)");
    match run.write_amplification_device {
        Some(x) if !run.device_amplification_shared => {
            assert_eq!(device_cell, format!("{x:.2}"), "{row:?}")
        }
        Some(_) => assert_eq!(device_cell, "shared", "{row:?}"),
        None => assert_ne!(device_cell, "0.00", "{row:?}"),
    }
    assert_eq!(cell(&row, "record rewrite"), format!("{factor:.2}x"));
    assert!(md.contains("Record rewrite: the engine stores each record whole"));
    assert!(md.contains("an update counts the fields it wrote"));
}

/// A tmpfs of the test's own: mounted (as root, as CI is) in a temporary
/// directory and unmounted when dropped, so the case depends neither on
/// the machine's /dev/shm (a container's is 64 MiB, or none) nor on what
/// else is written there.
struct OwnTmpfs {
    mount: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl OwnTmpfs {
    fn mount() -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mount = dir.path().join("tmpfs");
        std::fs::create_dir(&mount).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=512m", "tmpfs"])
            .arg(&mount)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`mount -t tmpfs` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Self { mount, _dir: dir })
    }
}

impl Drop for OwnTmpfs {
    fn drop(&mut self) {
        let unmounted = std::process::Command::new("umount")
            .arg(&self.mount)
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.mount)
                .status();
        }
    }
}

#[test]
fn on_tmpfs_amplification_is_unavailable_not_zero() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let own = if root {
        Some(OwnTmpfs::mount().unwrap_or_else(|why| panic!("root cannot mount a tmpfs: {why}")))
    } else {
        None
    };
    let shm_is_tmpfs = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/dev/shm") && l.contains(" tmpfs "));
    let place = match &own {
        Some(own) => own.mount.clone(),
        None if shm_is_tmpfs => Path::new("/dev/shm").to_path_buf(),
        None => {
            common::skip_unless_ci(
                "on_tmpfs_amplification_is_unavailable_not_zero",
                "not root (no tmpfs of its own) and /dev/shm is not a tmpfs here",
            );
            return;
        }
    };
    let tmp = tempfile::tempdir_in(&place).unwrap();
    // 10,000 one-field updates of 106 B: over 1 MiB written in the run too.
    let (steps, md) = run_and_report(tmp.path(), &tmp.path().join("db"), 3000, 20_000);
    for a in &steps {
        assert!(a.memory_filesystem, "{a:?}");
        assert_eq!(a.derived.write_amplification_process, None);
        assert_eq!(a.derived.write_amplification_device, None);
        // The window did write: what is missing is a device to count it.
        assert!(a.logical.written > 1 << 20);
    }
    let row = cost_row(&md, "here");
    for column in [
        "read amp (process)",
        "write amp (process)",
        "read amp (device)",
        "write amp (device)",
    ] {
        assert_eq!(cell(&row, column), "unavailable", "{column}: {row:?}");
    }
    drop(tmp);
}

/// The `[AMPLIFICATION]` lines of a load's YCSB-style text output, by
/// name (as in the JSON) to value.
fn text_amplifications(dir: &Path, db: &Path) -> Vec<(String, String)> {
    let db = db.display().to_string();
    let out = common::kvperf(
        dir,
        &[
            "load",
            "--engine",
            "redb",
            "--db",
            &db,
            "-p",
            "recordcount=3000",
            "-p",
            "fieldcount=10",
            "-p",
            "fieldlength=100",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[AMPLIFICATION], "))
        .map(|l| {
            let (name, value) = l.split_once(", ").unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}

#[test]
fn the_text_output_prints_each_amplification_by_its_json_name() {
    let names = [
        "read_amplification_process",
        "write_amplification_process",
        "read_amplification_device",
        "write_amplification_device",
        "space_amplification",
        // derived.record_rewrite_factor: an update rewrites the whole record.
        "record_rewrite_factor",
    ];
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let got = text_amplifications(disk.path(), &disk.path().join("db"));
    let listed: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(listed, names, "{got:?}");
    // 3,000 records of 1,000 B written: the process's bytes are a figure
    // (how large depends on when the kernel accounts redb's writes; the
    // on-disk test above checks that they are counted).
    let write_process = &got[1].1;
    assert!(
        write_process.parse::<f64>().is_ok_and(|x| x >= 0.0),
        "{got:?}"
    );
    // Nothing was read: nothing to divide by, said so.
    assert!(got[0].1.starts_with("nothing to divide"), "{got:?}");

    let shm = Path::new("/dev/shm");
    if !std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/dev/shm") && l.contains(" tmpfs "))
    {
        common::skip_unless_ci("the tmpfs half", "/dev/shm is not a tmpfs mount here");
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    let got = text_amplifications(tmp.path(), &tmp.path().join("db"));
    for (name, value) in &got[..4] {
        assert_eq!(value, "unavailable", "{name} on tmpfs: {got:?}");
    }
}
