//! Logical bytes are the record bytes (field names and values) that
//! successful operations wrote and returned, counted, not estimated.

use crate::common::kvperf;
use kvperf::measure::accounting::LogicalBytes;
use kvperf::results::StepOutput;

const RECORDS: u64 = 20;
/// "field0" and "field1".
const NAMES: u64 = 12;

fn step(dir: &std::path::Path, phase: &str, props: &[&str]) -> LogicalBytes {
    let mut args = vec![phase, "--engine", "redb", "--db", "db", "--format", "json"];
    for p in ["recordcount=20", "fieldcount=2", "fieldlength=100"]
        .iter()
        .chain(props)
    {
        args.extend(["-p", p]);
    }
    let out = kvperf(dir, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step: StepOutput = serde_json::from_str(&out.stdout).unwrap();
    step.measurements[0].accounting.as_ref().unwrap().logical
}

#[test]
fn a_load_counts_the_records_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let written = step(tmp.path(), "load", &[]).written;
    assert_eq!(written, RECORDS * (2 * 100 + NAMES));
}

#[test]
fn zipfian_field_lengths_count_what_was_written_not_the_minimum() {
    let tmp = tempfile::tempdir().unwrap();
    let written = step(tmp.path(), "load", &["fieldlengthdistribution=zipfian"]).written;
    // Between every field at its minimum (1 byte, the old estimate) and at 100.
    assert!(
        written > RECORDS * (2 + NAMES) && written <= RECORDS * (200 + NAMES),
        "{written}"
    );
}

#[test]
fn a_scan_counts_the_rows_it_returned() {
    let tmp = tempfile::tempdir().unwrap();
    step(tmp.path(), "load", &[]);
    let read = step(
        tmp.path(),
        "run",
        &[
            "operationcount=50",
            "readproportion=0",
            "updateproportion=0",
            "scanproportion=1",
            "maxscanlength=100",
            "requestdistribution=uniform",
        ],
    )
    .read;
    // No scan returns more than the 20 records there are (a mean scan
    // length of 50 full records was the old estimate).
    assert!(read > 0 && read <= 50 * RECORDS * (200 + NAMES), "{read}");
}
