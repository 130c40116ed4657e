//! The sixth hostile pass (docs/reliability.md, "Pass 6"): a user's file
//! named like kvperf's temporary file, a trace shown as CSV and imported
//! back, one output given to every step of a plan, device sizes smaller
//! than a block, a user's key where a Redis store keeps its index. Each
//! case failed on the main of 2026-11-28 (46aff39).

use std::path::Path;

use crate::common::{self, assert_input_error, kvperf, workload};

/// A user's file named like kvperf's temporary marker, ledger or lock file
/// (`NAME.tmp-PID-N`) is a user's: the directory is refused, the file
/// kept. The name alone was taken as proof: the file was deleted and the
/// directory claimed, alone or beside a marker cut short.
#[test]
fn a_users_file_named_like_kvperfs_temporary_is_never_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let file = workload("a");
    let names = [
        ".kvperf-data.tmp-1-1",
        ".kvperf-loaded-keys.tmp-77-3",
        ".kvperf-lock.tmp-1-2",
    ];
    // One lowercase word, the shape of a marker's first line, is a user's
    // text too (pass 7: "mine\n" was deleted as a cut marker).
    let cases = names
        .iter()
        .flat_map(|name| ["my thesis\n", "mine\n"].map(|text| (*name, text)));
    for (i, (name, text)) in cases.enumerate() {
        for beside_a_cut_marker in [false, true] {
            let db = tmp.path().join(format!("db-{i}-{beside_a_cut_marker}"));
            std::fs::create_dir(&db).unwrap();
            std::fs::write(db.join(name), text).unwrap();
            if beside_a_cut_marker {
                std::fs::write(db.join(".kvperf-data"), "rocksdb\ncreated by kv").unwrap();
            }
            let db_arg = db.display().to_string();
            let out = kvperf(
                tmp.path(),
                &["load", "-P", &file, "-p", "recordcount=10", "--db", &db_arg],
            );
            assert_input_error(&out, "holds files kvperf did not create");
            assert!(out.stderr.contains(name), "{name}: {}", out.stderr);
            assert_eq!(
                std::fs::read_to_string(db.join(name)).unwrap(),
                text,
                "{name}"
            );
            let entries = std::fs::read_dir(&db).unwrap().count();
            assert_eq!(entries, 1 + usize::from(beside_a_cut_marker), "{name}");
        }
    }
}

/// `kvperf plan run p.toml --results r.jsonl` plus `extra`, in `dir`.
fn plan_run(dir: &Path, extra: &[&str]) -> common::Output {
    let mut args = vec!["plan", "run", "p.toml", "--results", "r.jsonl"];
    args.extend_from_slice(extra);
    kvperf(dir, &args)
}

/// `--size` smaller than one 1 MiB block (the least a fill or a layout
/// writes) is bad input, found before the target is made. It was made (a
/// directory and a fill file of 1 byte), then the first write failed, exit 3.
#[test]
fn a_device_size_below_one_block_is_refused_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &["device", "precondition", "fill-here", "--size", "1"],
    );
    assert_input_error(
        &out,
        "--size 1 (1 bytes) is smaller than one 1048576-byte block",
    );
    assert!(!tmp.path().join("fill-here").exists());
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "device",
            "corners",
            "empty",
            "--size",
            "512KiB",
            "--runtime",
            "1",
        ],
    );
    assert_input_error(&out, "smaller than one 1048576-byte block");
    assert_eq!(
        std::fs::read_dir(tmp.path().join("empty")).unwrap().count(),
        0
    );
}

/// A plan whose `--scale` shrinks its precondition fill (or its device
/// corners' file) below one block is refused before its first step. It
/// failed at that step, exit 3, with a failed step recorded and "rerun
/// the same command" (which fails the same way).
#[test]
fn a_plan_scaled_below_one_device_block_is_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    for section in [
        "[precondition]\nfill = \"1MiB\"\nround_seconds = 1\nmax_rounds = 1",
        "[device]\ncorners = true\nsize = \"1MiB\"\nruntime = 1\nramp = 0",
    ] {
        let db = tmp.path().join("db");
        let plan = tmp.path().join("p.toml");
        std::fs::write(
            &plan,
            format!(
                "name = \"p\"\ndriver = \"ycsb\"\n[properties]\nrecordcount = 100\n{section}\n\
                 [[configs]]\nname = \"c\"\nengine = \"rocksdb\"\ndb = \"{}\"\n\
                 [[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n",
                db.display()
            ),
        )
        .unwrap();
        let out = plan_run(tmp.path(), &["--scale", "0.0001"]);
        assert_input_error(&out, "smaller than one 1048576-byte block");
        assert!(!tmp.path().join("r.jsonl").exists(), "{section}");
        assert!(!db.exists(), "{section}");
    }
}

/// One file given to every step of a plan (`--set trace.output=t.kvtrace`,
/// interval logs at one path, `rocksdb.trace`) is refused before the first
/// step. Each step replaced the file the step before wrote (the load's
/// trace lost, exit 0, no word), or the second step found RocksDB's trace
/// there and stopped the plan after the first was measured.
#[test]
fn one_file_written_by_two_steps_of_a_plan_is_refused_before_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"p\"\ndriver = \"ycsb\"\n[properties]\nrecordcount = 100\noperationcount = 200\n\
             [[configs]]\nname = \"c\"\nengine = \"rocksdb\"\ndb = \"{}\"\n\
             [[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n\
             [[steps]]\nworkloads = [\"a\", \"c\"]\nthreads = [1]\n",
            tmp.path().join("db").display()
        ),
    )
    .unwrap();
    for (set, needle) in [
        (
            "trace.output=t.kvtrace",
            "'t.kvtrace' is given as both trace.output of step c/000-load-a-t1-r1 and trace.output of step c/001-run-a-t1-r1",
        ),
        (
            "hdrhistogram.fileoutput=true",
            // Every group's log at one prefix, used by a step or not.
            "is given as both hdrhistogram.output.path of step c/000-load-a-t1-r1 and hdrhistogram.output.path of step c/001-run-a-t1-r1",
        ),
        (
            "rocksdb.trace=rt.trace",
            "'rt.trace' is given as both rocksdb.trace of step c/000-load-a-t1-r1 and rocksdb.trace of step c/001-run-a-t1-r1",
        ),
    ] {
        let out = plan_run(tmp.path(), &["--set", set]);
        assert_input_error(&out, needle);
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["p.toml"], "{set}");
    }
    // One step's own trace is its own file.
    let out = plan_run(
        tmp.path(),
        &[
            "--set",
            "steps.1.properties.trace.output=run.kvtrace",
            "--set",
            "steps.1.workloads=[\"c\"]",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(tmp.path().join("run.kvtrace").exists());
}

/// `kvperf trace show --format csv` is a record of each operation as it
/// ran, not the `time,op,key,value_size` schedule `trace import --from
/// csv` reads: importing it back is refused in one line that says so, with
/// or without its header, and writes nothing. It said only "11 cells where
/// the csv layout has 4".
#[test]
fn a_shown_trace_imported_back_is_refused_naming_the_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = common::import_csv_trace(
        tmp.path(),
        "t",
        "time,op,key,value_size\n0,insert,k1,100\n0.5,read,k1,100\n",
    );
    let shown = kvperf(tmp.path(), &["trace", "show", &trace, "--format", "csv"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let rows: String = shown
        .stdout
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(tmp.path().join("shown.csv"), &shown.stdout).unwrap();
    std::fs::write(tmp.path().join("rows.csv"), rows).unwrap();
    for (file, layout, needle) in [
        (
            "shown.csv",
            "csv",
            "`kvperf trace show --format csv` writes this header",
        ),
        (
            "rows.csv",
            "csv",
            "`kvperf trace show --format csv` writes such rows",
        ),
        (
            "shown.csv",
            "twitter",
            "`kvperf trace show --format csv` writes this header",
        ),
    ] {
        let out = kvperf(
            tmp.path(),
            &[
                "trace",
                "import",
                file,
                "--from",
                layout,
                "--output",
                "back.kvtrace",
            ],
        );
        assert_input_error(&out, needle);
        assert!(
            out.stderr.contains("time,op,key,value_size"),
            "{}",
            out.stderr
        );
        assert!(!tmp.path().join("back.kvtrace").exists());
    }
}

/// A `.kvperf-server` that is not kvperf's marker (a user's text, a link)
/// proves nothing: `server start` refuses the directory before any server
/// runs. Its name alone made a directory of notes kvperf's, and Redis was
/// started in it.
#[test]
fn a_server_marker_kvperf_did_not_write_is_no_proof() {
    let tmp = tempfile::tempdir().unwrap();
    let port = common::server::free_port().to_string();
    let makers: [&dyn Fn(&Path); 2] = [
        &|d| std::fs::write(d.join(".kvperf-server"), "my own\n").unwrap(),
        &|d| {
            std::fs::write(d.join("elsewhere"), "redis\ncreated by kvperf 0.1.0\n").unwrap();
            std::os::unix::fs::symlink(d.join("elsewhere"), d.join(".kvperf-server")).unwrap()
        },
    ];
    for make in makers {
        let dir = tempfile::tempdir_in(tmp.path()).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine\n").unwrap();
        make(dir.path());
        let shown = dir.path().display().to_string();
        let out = kvperf(
            tmp.path(),
            &["server", "start", "redis", "--dir", &shown, "--port", &port],
        );
        assert_input_error(&out, "that is not kvperf's marker");
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(
            names
                .iter()
                .all(|n| [".kvperf-server", "elsewhere", "notes.txt"].contains(&n.as_str())),
            "{names:?}"
        );
    }
}
