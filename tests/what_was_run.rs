//! A YCSB-mode step states what it runs (YCSB's `Command line:` and a
//! header, on stderr), and warns where hyperfine would: a store holding
//! fewer records than the run reads, a window too short to judge, a
//! target rate not reached (docs/semantics.md).

use crate::common::{kvperf, run_null, workload};
use kvperf::results::StepOutput;

const SHORT: [&str; 4] = ["-p", "recordcount=1000", "-p", "operationcount=2000"];

fn warnings_of(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    StepOutput::from_json(&text).unwrap().warnings
}

#[test]
fn a_run_states_its_command_line_engine_and_study_on_stderr_only() {
    let tmp = tempfile::tempdir().unwrap();
    let mut extra = SHORT.to_vec();
    extra.extend(["-threads", "2", "-p", "fieldlength=50"]);
    let out = run_null(tmp.path(), "c", &extra);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let wc = workload("c");
    let typed = format!(
        "Command line: run --engine null -P {wc} -p recordcount=1000 -p operationcount=2000 -threads 2 -p fieldlength=50"
    );
    assert!(out.stderr.contains(&typed), "{}", out.stderr);
    assert!(out.stderr.contains("\nEngine: null"), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "Study: run, recordcount 1000 (10 fields x 50 B each), 2000 operations, 2 threads, no target"
        ),
        "{}",
        out.stderr
    );
    // stdout is YCSB's lines alone, as parsers expect.
    assert!(
        out.stdout.starts_with("[OVERALL], RunTime(ms), "),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("Command line"));
}

#[test]
fn a_short_run_and_a_missed_target_warn_on_stderr_and_in_the_json() {
    let tmp = tempfile::tempdir().unwrap();
    // No client reaches a trillion operations per second.
    let mut extra = SHORT.to_vec();
    extra.extend(["-target", "1000000000000", "--json", "r.json"]);
    let out = run_null(tmp.path(), "c", &extra);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in ["too short to judge", "target rate not reached"] {
        assert!(
            out.stderr.contains("kvperf: warning: ") && out.stderr.contains(needle),
            "{needle}: {}",
            out.stderr
        );
        let warnings = warnings_of(&tmp.path().join("r.json"));
        assert!(
            warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {warnings:?}"
        );
    }
}

#[test]
fn a_target_that_is_reached_gives_no_warning() {
    let tmp = tempfile::tempdir().unwrap();
    // 1000 ops/s for 1500 operations: a paced run of 1.5 s.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=1500",
            "-target",
            "1000",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("target 1000 ops/s"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("target rate not reached"),
        "{}",
        out.stderr
    );
}

#[test]
#[cfg(feature = "rocksdb")]
fn a_run_on_a_store_without_its_records_warns_and_a_loaded_one_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let wc = workload("c");
    let run = |db: &str| {
        let mut args = vec!["run", "--db", db, "-P", wc.as_str(), "--json", "r.json"];
        args.extend(SHORT);
        let out = kvperf(tmp.path(), &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        (out, warnings_of(&tmp.path().join("r.json")))
    };
    let missing = "holds 0 of the 1000 records this run reads";

    // A new store: kvperf made it, nothing was loaded.
    let (out, warnings) = run("fresh");
    assert!(out.stderr.contains(missing), "{}", out.stderr);
    assert!(
        out.stderr.contains("(0 of these records loaded by kvperf)"),
        "{}",
        out.stderr
    );
    assert!(warnings.iter().any(|w| w.contains(missing)), "{warnings:?}");

    // Half loaded: 500 of 1000.
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--db",
            "half",
            "-P",
            wc.as_str(),
            "-p",
            "recordcount=1000",
        ];
        args.extend(extra);
        let out = kvperf(tmp.path(), &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
    };
    load(&["-p", "insertcount=500"]);
    let (out, _) = run("half");
    assert!(
        out.stderr
            .contains("holds 500 of the 1000 records this run reads"),
        "{}",
        out.stderr
    );
    // The other half: now the store holds every record the run reads.
    load(&["-p", "insertstart=500", "-p", "insertcount=500"]);
    let (out, warnings) = run("half");
    assert!(
        !out.stderr.contains("records this run reads"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("(1000 of these records loaded by kvperf)"),
        "{}",
        out.stderr
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("records this run reads")),
        "{warnings:?}"
    );

    // A load with a warm-up: the keys inserted while warming up count too,
    // and it inserts its 1000 records, not 1000 more after the warm-up.
    load(&["--fresh", "-p", "warmuptime=0.2"]);
    let (out, _) = run("half");
    assert!(
        out.stderr
            .contains("(1000 of these records loaded by kvperf)"),
        "{}",
        out.stderr
    );
    let beyond = kvperf(
        tmp.path(),
        &[
            "run",
            "--db",
            "half",
            "-P",
            &wc,
            "-p",
            "recordcount=2000",
            "-p",
            "operationcount=2000",
            "-p",
            "requestdistribution=uniform",
        ],
    );
    assert_eq!(beyond.code, 0, "{}", beyond.stderr);
    assert!(
        !beyond.stdout.contains("[READ], Return=NOT_FOUND, 0")
            && beyond.stdout.contains("[READ], Return=NOT_FOUND, "),
        "keys 1000..2000 were never to be loaded: {}",
        beyond.stdout
    );

    // A fresh load empties the store and the ledger with it.
    load(&["--fresh", "-p", "insertcount=10"]);
    let (out, _) = run("half");
    assert!(
        out.stderr
            .contains("holds 10 of the 1000 records this run reads"),
        "{}",
        out.stderr
    );
}

#[test]
#[cfg(feature = "rocksdb")]
fn settle_says_what_it_waited_for_and_how_long() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let load = kvperf(
        tmp.path(),
        &["load", "--db", "db", "-P", &wa, "-p", "recordcount=500"],
    );
    assert_eq!(load.code, 0, "{}", load.stderr);
    let out = kvperf(tmp.path(), &["settle", "--db", "db", "--compact"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stderr);
    assert!(
        lines[0].starts_with("kvperf: settle: compacted the rocksdb store in 'db' in ")
            && lines[0].ends_with(" s"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(
            "kvperf: settle: flushed buffered writes and waited for background work (flushes, compactions) to finish in the rocksdb store in 'db': "
        ),
        "{}",
        lines[1]
    );
    assert!(lines[2].ends_with("; done"), "{}", lines[2]);
}

#[test]
fn kvperf_bench_states_its_command_line_and_warns_of_a_short_read_window() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillrandom,readrandom",
            "--num=500",
            "--db=store",
            "--json",
            "r.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "Command line: bench --benchmarks=fillrandom,readrandom --num=500 --db=store"
        ),
        "{}",
        out.stderr
    );
    // db_bench's header stays first on stdout, for its parsers.
    assert!(out.stdout.starts_with("kvperf:"), "{}", out.stdout);
    assert!(!out.stdout.contains("Command line"), "{}", out.stdout);
    // The read is judged; the fill (its length is its key count) is not.
    let warnings = warnings_of(&tmp.path().join("r.json"));
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("readrandom: the measured window lasted")
                && w.contains("--duration")),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.starts_with("fillrandom")),
        "{warnings:?}"
    );
}
