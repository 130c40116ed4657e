//! Every bad input gets one clear line and exit code 2.

mod common;

use common::{assert_input_error, kvperf, workload};

fn run_null(dir: &std::path::Path, extra: &[&str]) -> common::Output {
    common::run_null(dir, "a", extra)
}

#[test]
fn missing_workload_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &["run", "--engine", "null", "-P", "workloads/nope"],
    );
    assert_input_error(&out, "workload file 'workloads/nope' does not exist");
}

#[test]
fn unknown_engine_suggests_the_near_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(tmp.path(), &["--engine", "rocksbd"]);
    assert_input_error(&out, "unknown engine 'rocksbd' (did you mean 'rocksdb'?)");
}

#[test]
fn proportions_that_sum_to_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        &["-p", "readproportion=0", "-p", "updateproportion=0"],
    );
    assert_input_error(&out, "proportions sum to 0");
}

#[test]
fn negative_zero_and_non_numeric_counts() {
    let tmp = tempfile::tempdir().unwrap();
    assert_input_error(
        &run_null(tmp.path(), &["-p", "recordcount=-5"]),
        "recordcount: '-5' is negative",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "recordcount=0"]),
        "recordcount: must be greater than 0",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "operationcount=lots"]),
        "operationcount: 'lots'",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "fieldlength=1.5"]),
        "fieldlength",
    );
    assert_input_error(&run_null(tmp.path(), &["-threads", "0"]), "0");
    assert_input_error(&run_null(tmp.path(), &["-threads", "two"]), "two");
    assert_input_error(
        &run_null(tmp.path(), &["-p", "readproportion=half"]),
        "readproportion",
    );
}

#[test]
fn malformed_override_and_unknown_flag() {
    let tmp = tempfile::tempdir().unwrap();
    assert_input_error(
        &run_null(tmp.path(), &["-p", "recordcount"]),
        "-p expects key=value",
    );
    assert_input_error(&run_null(tmp.path(), &["--frobnicate"]), "--frobnicate");
}

#[test]
fn unknown_engine_option_is_an_error_not_a_pass_through() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let out = kvperf(
        tmp.path(),
        &[
            "load",
            "-P",
            &wa,
            "-p",
            "rocksdb.compresion=lz4",
            "--db",
            "db",
        ],
    );
    assert_input_error(&out, "did you mean 'rocksdb.compression'?");
    let out = kvperf(
        tmp.path(),
        &[
            "load",
            "-P",
            &wa,
            "-p",
            "rocksdb.compression=lzma",
            "--db",
            "db2",
        ],
    );
    assert_input_error(&out, "unknown RocksDB compression 'lzma'");
}

#[test]
fn unwritable_db_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("plainfile"), "x").unwrap();
    let wa = workload("a");
    // A path under a regular file cannot be created, even by root.
    let out = kvperf(tmp.path(), &["load", "-P", &wa, "--db", "plainfile/db"]);
    assert_input_error(&out, "cannot create --db 'plainfile/db'");
}

#[test]
fn db_holding_something_else_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("photos");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("cat.jpg"), "meow").unwrap();
    let wa = workload("a");
    let out = kvperf(tmp.path(), &["load", "-P", &wa, "--db", "photos"]);
    assert_input_error(&out, "is not a kvperf or rocksdb store");
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_to_string(foreign.join("cat.jpg")).unwrap(),
        "meow"
    );
}

#[test]
fn run_needs_an_operation_count_or_a_time_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &["run", "--engine", "null", "-p", "recordcount=10"],
    );
    assert_input_error(&out, "operationcount: is required");
}

#[test]
fn unknown_property_warns_but_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(tmp.path(), &["-p", "operationcont=5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out
        .stderr
        .contains("unknown property 'operationcont' (did you mean 'operationcount'?)"));
}

#[test]
fn settle_needs_an_existing_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(tmp.path(), &["settle", "--db", "nothing-here"]);
    assert_input_error(&out, "--db 'nothing-here' holds no store to settle");
    assert!(
        !tmp.path().join("nothing-here").exists(),
        "settle created nothing"
    );
}
