//! The tenth hostile pass, the lead's part (docs/reliability.md, "Pass 10:
//! what it found, and the lead's part"). Each case failed on the main of
//! 2026-11-29 (cc1ad35).

use std::path::Path;

use crate::common::{assert_input_error, kvperf, workload, Output};

fn ycsb(dir: &Path, phase: &str, db: &str, extra: &[&str]) -> Output {
    let w = workload(if phase == "load" { "a" } else { "c" });
    let mut args = vec![
        phase,
        "--engine",
        "redb",
        "-P",
        &w,
        "-p",
        "recordcount=200",
        "-p",
        "operationcount=50",
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    kvperf(dir, &args)
}

/// What a `load --fresh` killed while redb made its file leaves (seen in a
/// whole-suite run at cc1ad35, hostile::stores): the store emptied, its
/// ledger begun (no load finished) and a `kvperf.redb` of zeros, redb
/// writing its magic number last.
fn leave_an_unfinished_creation(store: &Path, ledger: &str) {
    std::fs::write(store.join(".kvperf-loaded-keys"), ledger).unwrap();
    std::fs::write(store.join("kvperf.redb"), vec![0u8; 73728]).unwrap();
}

#[test]
fn a_store_whose_creation_was_killed_is_refused_in_one_line_with_its_remedy() {
    // On cc1ad35 `run`, `load` and `settle` failed with exit 3 and redb's
    // own words ("Not a redb database: magic number mismatch"), as if the
    // step had failed, where only `load --fresh` could help.
    let dir = tempfile::tempdir().unwrap();
    let load = ycsb(dir.path(), "load", "d", &[]);
    assert_eq!(load.code, 0, "{}", load.stderr);
    leave_an_unfinished_creation(&dir.path().join("d"), "");
    for out in [
        ycsb(dir.path(), "run", "d", &[]),
        ycsb(dir.path(), "load", "d", &[]),
        kvperf(dir.path(), &["settle", "--engine", "redb", "--db", "d"]),
    ] {
        assert_input_error(&out, "no load finished");
        assert!(out.stderr.contains("kvperf load --fresh"), "{}", out.stderr);
    }
    let fresh = ycsb(dir.path(), "load", "d", &["--fresh"]);
    assert_eq!(fresh.code, 0, "{}", fresh.stderr);
    let run = ycsb(dir.path(), "run", "d", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_loaded_store_the_engine_cannot_open_stays_a_run_failure() {
    // The refusal above is for a store no load finished; a store a load
    // finished that the engine cannot open is damaged: the run fails
    // (exit 3) in the engine's words, nothing is advised away.
    let dir = tempfile::tempdir().unwrap();
    let load = ycsb(dir.path(), "load", "d", &[]);
    assert_eq!(load.code, 0, "{}", load.stderr);
    leave_an_unfinished_creation(&dir.path().join("d"), "0 200\n");
    let run = ycsb(dir.path(), "run", "d", &[]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("redb"), "{}", run.stderr);
    assert!(!run.stderr.contains("no load finished"), "{}", run.stderr);
}
