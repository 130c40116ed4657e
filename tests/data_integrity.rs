//! `dataintegrity=true`: values are derived from key and field, every read
//! is verified, and a corrupted value is caught.
#![cfg(feature = "rocksdb")]

use crate::common::{kvperf, metric, workload};
use kvperf::workload::ycsb::keys::build_key_name;

const SHAPE: [&str; 8] = [
    "-p",
    "recordcount=50",
    "-p",
    "operationcount=2000",
    "-p",
    "dataintegrity=true",
    "-p",
    "requestdistribution=uniform",
];

#[test]
fn verified_reads_pass_then_a_corrupted_value_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let wc = workload("c");
    let load = kvperf(
        tmp.path(),
        &[&["load", "--db", "db", "-P", &wc][..], &SHAPE].concat(),
    );
    assert_eq!(load.code, 0, "{}", load.stderr);
    let run = kvperf(
        tmp.path(),
        &[&["run", "--db", "db", "-P", &wc][..], &SHAPE].concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(metric(&run.stdout, "VERIFY", "Return=OK"), Some(2000.0));

    // Flip one byte of one field of record 7, keeping the encoding valid.
    let mut key = Vec::new();
    build_key_name(7, true, 1, &mut key);
    {
        let db = rocksdb::DB::open_default(tmp.path().join("db")).unwrap();
        let mut value = db.get(&key).unwrap().expect("record 7 was loaded");
        let last = value.len() - 1;
        value[last] ^= 0x01;
        db.put(&key, &value).unwrap();
    }
    let run = kvperf(
        tmp.path(),
        &[&["run", "--db", "db", "-P", &wc][..], &SHAPE].concat(),
    );
    assert_eq!(run.code, 3, "corruption fails the run (not bad input)");
    assert!(
        run.stderr.contains("data integrity check failed"),
        "{}",
        run.stderr
    );
    let bad = metric(&run.stdout, "VERIFY", "Return=UNEXPECTED_STATE").expect("mismatches counted");
    // 2000 uniform reads over 50 keys hit key 7 about 40 times.
    assert!((10.0..100.0).contains(&bad), "{bad}");
    assert_eq!(
        metric(&run.stdout, "VERIFY", "Return=OK"),
        Some(2000.0 - bad)
    );
}

#[test]
fn failed_operations_are_counted_and_reported_not_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let wc = workload("c");
    let load = kvperf(
        tmp.path(),
        &[&["load", "--db", "db", "-P", &wc][..], &SHAPE].concat(),
    );
    assert_eq!(load.code, 0, "{}", load.stderr);
    // Cut record 7's last field short by one byte: its encoding no longer
    // parses, so reads of it fail. (Halving it can land on a field boundary,
    // which is still a valid, shorter record.)
    let mut key = Vec::new();
    build_key_name(7, true, 1, &mut key);
    {
        let db = rocksdb::DB::open_default(tmp.path().join("db")).unwrap();
        let value = db.get(&key).unwrap().expect("record 7 was loaded");
        db.put(&key, &value[..value.len() - 1]).unwrap();
    }
    let run = kvperf(
        tmp.path(),
        &[
            "run",
            "--db",
            "db",
            "-P",
            &wc,
            "--format",
            "json",
            "-p",
            "recordcount=50",
            "-p",
            "operationcount=2000",
            "-p",
            "requestdistribution=uniform",
        ],
    );
    // Failed reads are counted per operation type; the run itself completes.
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = kvperf::results::StepOutput::from_json(&run.stdout).unwrap();
    let read = &out.measurements[0].ops[&kvperf::measure::OpKind::Read];
    let failed = read.count(kvperf::measure::Outcome::Error);
    assert!(
        (10..100).contains(&failed),
        "{failed} failed reads of key 7"
    );
    assert_eq!(
        read.latency.count + failed,
        2000,
        "successes and failures apart"
    );
    let warning = format!(
        "{failed} READ operations failed (first: stored value is not a kvperf/YCSB record)"
    );
    assert!(out.warnings.contains(&warning), "{:?}", out.warnings);
    assert!(run.stderr.contains(&warning), "{}", run.stderr);
}
