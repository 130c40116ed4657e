//! Traces (issue 49): capture with `-p trace.output=FILE`, `kvperf trace
//! show`, and bad traces refused in one line.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{assert_input_error, kvperf, metric, workload};

/// `kvperf trace show FILE --format csv`, parsed: one map per row.
fn csv_rows(dir: &Path, trace: &str) -> Vec<BTreeMap<String, String>> {
    let out = kvperf(dir, &["trace", "show", trace, "--format", "csv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut lines = out.stdout.lines();
    let columns: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), columns.len(), "{l}");
            columns
                .iter()
                .zip(cells)
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn count(rows: &[BTreeMap<String, String>], op: &str) -> u64 {
    rows.iter().filter(|r| r["op"] == op).count() as u64
}

fn num(row: &BTreeMap<String, String>, column: &str) -> u64 {
    row[column].parse().unwrap()
}

/// A load and a run on RocksDB, each captured: every operation the YCSB
/// output counts is in the trace, with its kind, key, sizes and times.
#[test]
fn a_capture_holds_every_operation_the_run_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let a = workload("a");
    let common = [
        "-P",
        &a,
        "-p",
        "recordcount=500",
        "-p",
        "fieldcount=3",
        "--db",
        "db",
    ];
    let load = kvperf(
        dir,
        &[&["load"][..], &common, &["-p", "trace.output=load.kvtrace"]].concat(),
    );
    assert_eq!(load.code, 0, "{}", load.stderr);
    let rows = csv_rows(dir, "load.kvtrace");
    assert_eq!(count(&rows, "INSERT"), 500);
    for row in &rows {
        assert_eq!(row["value_sizes"], "100;100;100", "{row:?}");
        assert!(row["key"].starts_with("user"), "{row:?}");
    }
    let mut keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 500, "every loaded key once");

    let run = kvperf(
        dir,
        &[
            &["run"][..],
            &common,
            &[
                "-p",
                "operationcount=4000",
                "-threads",
                "3",
                "-p",
                "trace.output=run.kvtrace",
            ],
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("trace of 4000 operations written to 'run.kvtrace'"),
        "{}",
        run.stderr
    );
    let rows = csv_rows(dir, "run.kvtrace");
    assert_eq!(rows.len(), 4000);
    for group in ["READ", "UPDATE"] {
        let counted = metric(&run.stdout, group, "Operations").unwrap() as u64;
        assert_eq!(count(&rows, group), counted, "{group}");
    }
    let mut clients = std::collections::BTreeSet::new();
    for row in &rows {
        clients.insert(num(row, "client"));
        // Unpaced: the intended start is the start.
        assert_eq!(num(row, "intended_ns"), num(row, "start_ns"), "{row:?}");
        assert!(num(row, "end_ns") > num(row, "start_ns"), "{row:?}");
        assert_eq!(row["outcome"], "OK", "{row:?}");
        match row["op"].as_str() {
            "READ" => assert_eq!(num(row, "bytes_read"), 3 * (6 + 100), "{row:?}"),
            "UPDATE" => assert_eq!(row["value_sizes"], "100", "{row:?}"),
            other => panic!("{other}"),
        }
    }
    assert_eq!(clients.len(), 3, "{clients:?}");
}

/// Under a target rate, each operation's intended start is on the
/// schedule and its start is not before it.
#[test]
fn a_paced_capture_keeps_intended_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = common::run_null(
        dir,
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=300",
            "-target",
            "1000",
            "-p",
            "trace.output=t.kvtrace",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut rows = csv_rows(dir, "t.kvtrace");
    assert_eq!(rows.len(), 300);
    rows.sort_by_key(|r| num(r, "intended_ns"));
    for row in &rows {
        assert!(num(row, "start_ns") >= num(row, "intended_ns"), "{row:?}");
    }
    // 1 ms apart on one client's fixed schedule.
    let gaps: Vec<u64> = rows
        .windows(2)
        .map(|w| num(&w[1], "intended_ns") - num(&w[0], "intended_ns"))
        .collect();
    assert!(
        gaps.iter().all(|g| (999_000..=1_001_000).contains(g)),
        "{gaps:?}"
    );
    let text = kvperf(dir, &["trace", "show", "t.kvtrace"]);
    assert!(
        text.stdout.contains("paced at 1000 ops/s"),
        "{}",
        text.stdout
    );
}

/// trace.output obeys the ownership rules of every output.
#[test]
fn trace_output_writes_only_what_kvperf_may() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes"), "mine").unwrap();
    std::os::unix::fs::symlink("notes", dir.join("link")).unwrap();
    let run = |trace: &str, extra: &[&str]| {
        let mut args = vec!["-p", "recordcount=10", "-p", "operationcount=10"];
        let property = format!("trace.output={trace}");
        args.extend(["-p", property.as_str()]);
        args.extend_from_slice(extra);
        common::run_null(dir, "c", &args)
    };
    assert_input_error(&run("notes", &[]), "is not a kvperf trace");
    assert_input_error(&run("link", &[]), "is a symbolic link");
    assert_input_error(&run("missing/t", &[]), "does not exist");
    assert_input_error(
        &run("same", &["--output", "same"]),
        "is given as both --output and trace.output",
    );
    assert_eq!(std::fs::read(dir.join("notes")).unwrap(), b"mine");
    // Its own trace is replaced, and no temporary file stays behind.
    assert_eq!(run("t", &[]).code, 0);
    assert_eq!(run("t", &[]).code, 0);
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// Empty, foreign, truncated and absurd traces: one line, exit 2.
#[test]
fn bad_traces_are_one_line_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = common::run_null(
        dir,
        "a",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=2000",
            "-p",
            "trace.output=good",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let good = std::fs::read(dir.join("good")).unwrap();
    let magic = b"kvperf-file/1 trace\n";
    let mut absurd_block = magic.to_vec();
    absurd_block.extend([1, 0, 2, b'{', b'}']);
    let mut wrong_version = good.clone();
    wrong_version[magic.len()] = 9;
    // A block that claims 2^60 bytes.
    let mut huge = good[..good.iter().position(|&b| b == b'B').unwrap()].to_vec();
    huge.extend([
        b'B', 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10,
    ]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "is empty"),
        ("csv", b"time,op,key\n".to_vec(), "is not a kvperf trace"),
        ("half", good[..good.len() / 2].to_vec(), "truncated"),
        ("no-end", good[..good.len() - 20].to_vec(), "truncated"),
        ("version", wrong_version, "format version 9"),
        ("header", absurd_block, "header that is not valid"),
        ("huge", huge, "has a block of"),
    ];
    for (name, bytes, says) in cases {
        std::fs::write(dir.join(name), bytes).unwrap();
        let out = kvperf(dir, &["trace", "show", name]);
        assert_input_error(&out, says);
    }
    assert_input_error(&kvperf(dir, &["trace", "show", "."]), "is a directory");
}

/// Both CSV layouts import; bad lines are one line naming the line.
#[test]
fn csv_traces_import_and_bad_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("plain.csv"),
        "time,op,key,value_size\n0.5,update,k1,100\n0.75,read,k2,50\n\n# note\n1.0,insert,k3,10\n2,scan,k1,5\n",
    )
    .unwrap();
    let out = kvperf(
        dir,
        &[
            "trace",
            "import",
            "plain.csv",
            "--from",
            "csv",
            "--output",
            "p",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = csv_rows(dir, "p");
    let ops: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| (r["op"].as_str(), r["key"].as_str(), num(r, "intended_ns")))
        .collect();
    assert_eq!(
        ops,
        [
            ("UPDATE", "k1", 0),
            ("READ", "k2", 250_000_000),
            ("INSERT", "k3", 500_000_000),
            ("SCAN", "k1", 1_500_000_000)
        ]
    );
    assert_eq!(rows[0]["value_sizes"], "100");
    assert_eq!(
        (num(&rows[1], "bytes_read"), num(&rows[3], "scan_length")),
        (50, 5)
    );

    std::fs::write(
        dir.join("twitter.csv"),
        "0,q:a,21,2450,6,get,0\n1,q:b,21,10,7,set,0\n1,q:a,21,10,6,delete,0\n2,q:c,21,33,7,add,600\n",
    )
    .unwrap();
    let out = kvperf(
        dir,
        &[
            "trace",
            "import",
            "twitter.csv",
            "--from",
            "twitter",
            "--output",
            "t",
        ],
    );
    assert!(
        out.stderr.contains("4 operations of 2 clients"),
        "{}",
        out.stderr
    );
    let rows = csv_rows(dir, "t");
    let mut by_client: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (num(r, "client"), r["op"].as_str()))
        .collect();
    by_client.sort();
    assert_eq!(
        by_client,
        [(0, "READ"), (0, "DELETE"), (1, "UPDATE"), (1, "INSERT")]
    );

    let long = format!("1,read,{},1\n", "k".repeat(2 << 20));
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty.csv", String::new(), "is empty"),
        (
            "header.csv",
            "time,op,key,value_size\n".into(),
            "holds no operations",
        ),
        ("cells.csv", "1,read,k\n".into(), "line 1: 3 cells"),
        (
            "size.csv",
            "1,update,k,99999999999\n".into(),
            "line 1: size 99999999999 is more",
        ),
        (
            "time.csv",
            "0,read,k,1\nNaN,read,k,1\n".into(),
            "line 2: time 'NaN'",
        ),
        ("long.csv", long, "line 1: longer than"),
        ("binary.csv", "\u{0}\u{1},\u{2}".into(), "line 1: 2 cells"),
    ];
    for (name, text, says) in cases {
        std::fs::write(dir.join(name), text).unwrap();
        let out = kvperf(
            dir,
            &["trace", "import", name, "--from", "csv", "--output", "out"],
        );
        assert_input_error(&out, says);
        assert!(!dir.join("out").exists(), "{name}: nothing written");
    }
    let out = kvperf(
        dir,
        &[
            "trace",
            "import",
            "plain.csv",
            "--from",
            "csv",
            "--output",
            "plain.csv",
        ],
    );
    assert_input_error(&out, "is also an input");
}
