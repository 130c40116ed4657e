//! Traces (issue 49): capture with `-p trace.output=FILE`, `kvperf trace
//! show`, and bad traces refused in one line.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{assert_input_error, kvperf, metric, workload};

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

/// A kvperf command line written as one string, as its words (no argument
/// here holds a space): one line where rustfmt would stack a word a line.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `line`, a replay with `--format json --output r.json`, which must
/// succeed after loading `loaded` records first; its measured window.
fn replay_json(dir: &Path, line: &str, loaded: usize) -> serde_json::Value {
    let out = kvperf(dir, &words(line));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = format!(" {loaded} records loaded first");
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    let text = std::fs::read_to_string(dir.join("r.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["measurements"][0].clone()
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
    let out = kvperf(dir, &words("trace import plain.csv --from csv --output p"));
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
        &words("trace import twitter.csv --from twitter --output t"),
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
        [(0, "DELETE"), (0, "READ"), (1, "INSERT"), (1, "UPDATE")]
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
        &words("trace import plain.csv --from csv --output plain.csv"),
    );
    assert_input_error(&out, "is also an input");
}

/// What a trace's operations were, in time order: kind, key, sizes and
/// outcome (what a replay must reproduce; times differ).
fn sequence(dir: &Path, trace: &str) -> Vec<String> {
    let mut rows = csv_rows(dir, trace);
    rows.sort_by_key(|r| (num(r, "intended_ns"), num(r, "start_ns")));
    rows.iter()
        .map(|r| {
            let fields = [
                "op",
                "key",
                "outcome",
                "read_fields",
                "scan_length",
                "value_sizes",
            ];
            fields.map(|f| r[f].as_str()).join(" ")
        })
        .collect()
}

/// A run captured on RocksDB (reads, updates, inserts, scans,
/// read-modify-writes; one client, so its order is the trace's), replayed
/// on RocksDB and LMDB: each replay, captured too, issues the same
/// operations in the same order with the same outcomes, and its YCSB
/// counts are the run's.
#[test]
fn a_replay_reproduces_the_captured_sequence_and_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let e = workload("e");
    let shape = [
        "-P",
        &e,
        "-p",
        "recordcount=300",
        "-p",
        "fieldcount=2",
        "-p",
        "fieldlength=20",
        "--db",
        "db",
    ];
    let load = kvperf(dir, &[&["load"][..], &shape].concat());
    assert_eq!(load.code, 0, "{}", load.stderr);
    let mix = [
        "-p",
        "operationcount=1500",
        "-p",
        "readproportion=0.3",
        "-p",
        "updateproportion=0.2",
        "-p",
        "insertproportion=0.1",
        "-p",
        "scanproportion=0.2",
        "-p",
        "readmodifywriteproportion=0.2",
        "-p",
        "maxscanlength=5",
        "-p",
        "trace.output=run.kvtrace",
    ];
    let run = kvperf(dir, &[&["run"][..], &shape, &mix].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let captured = sequence(dir, "run.kvtrace");
    assert_eq!(captured.len(), 1500);
    for kind in ["READ ", "UPDATE ", "INSERT ", "SCAN ", "READ-MODIFY-WRITE "] {
        assert!(captured.iter().any(|s| s.starts_with(kind)), "{kind}");
    }
    for engine in ["rocksdb", "lmdb"] {
        let replayed = format!("{engine}.kvtrace");
        let property = format!("trace.output={replayed}");
        let line = format!("replay run.kvtrace --engine {engine} --db {engine} -p {property}");
        let out = kvperf(dir, &words(&line));
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
        assert_eq!(sequence(dir, &replayed), captured, "{engine}");
        for group in ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"] {
            assert_eq!(
                metric(&out.stdout, group, "Operations"),
                metric(&run.stdout, group, "Operations"),
                "{engine} {group}"
            );
        }
    }
}

/// An open-loop replay spans the trace's times; a bad speed is refused.
#[test]
fn an_open_loop_replay_counts_from_the_traces_times() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("slow.csv"),
        "0,insert,k1,10\n0.05,read,k1,10\n0.1,update,k1,10\n0.15,read,k2,30\n",
    )
    .unwrap();
    let out = kvperf(dir, &words("trace import slow.csv --from csv --output t"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m = replay_json(
        dir,
        "replay t --engine lmdb --db db --speed 1 --format json --output r.json",
        1,
    );
    let runtime = m["runtime_s"].as_f64().unwrap();
    assert!(runtime >= 0.149, "{runtime}");
    assert_eq!(m["operations"].as_u64(), Some(4));
    for speed in ["0", "-1", "NaN"] {
        let out = kvperf(
            dir,
            &[
                "replay", "t", "--engine", "lmdb", "--db", "db2", "--speed", speed,
            ],
        );
        assert_input_error(&out, "--speed");
    }
}

/// The fit of a capture of workload A (zipfian 0.99) recovers the
/// constant within 0.03 and the mix within a percentage point, and so
/// does one of plain zipfian at 0.6 (below 0.9, where the fit was biased
/// high); a uniform run's fit picks uniform.
#[test]
fn a_fit_recovers_the_distribution_and_mix_it_was_captured_with() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (name, distribution, theta) in [
        ("zipf", "zipfian", 0.99),
        ("plain", "plainzipfian", 0.6),
        ("uniform", "uniform", 0.99),
    ] {
        let property = format!("trace.output={name}.kvtrace");
        let chosen = format!("requestdistribution={distribution}");
        let constant = format!("zipfianconstant={theta}");
        let out = common::run_null(
            dir,
            "a",
            &[
                "-p",
                "recordcount=1000",
                "-p",
                "operationcount=60000",
                "-p",
                &chosen,
                "-p",
                &constant,
                "-p",
                "readproportion=0.7",
                "-p",
                "updateproportion=0.3",
                "-p",
                &property,
                "-threads",
                "2",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let trace = format!("{name}.kvtrace");
        let fitted = format!("{name}.workload");
        let out = kvperf(dir, &["fit", &trace, "--output", &fitted]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("KS distance"), "{}", out.stdout);
        let file = std::fs::read_to_string(dir.join(&fitted)).unwrap();
        let value = |key: &str| -> String {
            file.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("{key} in {file}"))
                .to_string()
        };
        assert_eq!(value("requestdistribution"), distribution, "{file}");
        let read: f64 = value("readproportion").parse().unwrap();
        assert!((read - 0.7).abs() <= 0.01, "{file}");
        assert_eq!(value("recordcount"), "1000");
        assert_eq!(value("fieldcount"), "10");
        if distribution != "uniform" {
            let fitted: f64 = value("zipfianconstant").parse().unwrap();
            assert!((fitted - theta).abs() <= 0.03, "{file}");
        }
        let out = kvperf(
            dir,
            &[
                "run",
                "--engine",
                "null",
                "-P",
                &fitted,
                "-p",
                "operationcount=100",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
}

/// The fit's printed candidates chose `candidate` (its line ends "<- chosen").
fn assert_chosen(stdout: &str, candidate: &str) {
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(candidate) && l.ends_with("<- chosen")),
        "{stdout}"
    );
}

/// `kvperf fit --check`'s table, parsed: figure -> (replay, fitted).
fn check_table(stdout: &str) -> BTreeMap<String, (String, String)> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("figure "));
    let header: Vec<&str> = lines.next().expect("a table").split_whitespace().collect();
    assert_eq!(
        header,
        ["figure", "replay", "fitted", "difference"],
        "{stdout}"
    );
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            let n = cells.len();
            assert!(n >= 4, "{l}");
            let name = cells[..n - 3].join(" ");
            (name, (cells[n - 3].to_string(), cells[n - 2].to_string()))
        })
        .collect()
}

fn figure(table: &BTreeMap<String, (String, String)>, name: &str) -> (f64, f64) {
    let (r, f) = table
        .get(name)
        .unwrap_or_else(|| panic!("{name} in {table:?}"));
    (r.parse().unwrap(), f.parse().unwrap())
}

/// `kvperf fit --check` on a capture of workload B (zipfian 0.99) on
/// RocksDB: both columns, the replay's counts the trace's, the fitted
/// run's adding up to its operations, p50 <= p95 <= p99 on each side, and
/// a block-cache hit ratio between 0 and 1.
#[test]
fn fit_check_puts_a_workload_b_trace_and_its_fit_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let b = workload("b");
    let shape = ["-P", &b, "-p", "recordcount=1000", "--db", "db"];
    let load = kvperf(dir, &[&["load"][..], &shape].concat());
    assert_eq!(load.code, 0, "{}", load.stderr);
    let run = kvperf(
        dir,
        &[
            &["run"][..],
            &shape,
            &["-p", "operationcount=6000", "-p", "trace.output=b.kvtrace"],
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = kvperf(
        dir,
        &words("fit b.kvtrace --check --engine rocksdb --db check --threads 2"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_chosen(&out.stdout, "zipfian");
    let table = check_table(&out.stdout);
    let (replayed, fitted) = figure(&table, "throughput (ops/s)");
    assert!(replayed > 0.0 && fitted > 0.0, "{table:?}");
    let mut fitted_ops = 0.0;
    for group in ["READ", "UPDATE"] {
        let (r, f) = figure(&table, &format!("{group} operations"));
        assert_eq!(Some(r), metric(&run.stdout, group, "Operations"), "{group}");
        fitted_ops += f;
        for side in [0, 1] {
            let pick = |p: &str| {
                let (r, f) = figure(&table, &format!("{group} {p} (us)"));
                [r, f][side]
            };
            assert!(pick("p50") > 0.0, "{table:?}");
            assert!(
                pick("p50") <= pick("p95") && pick("p95") <= pick("p99"),
                "{table:?}"
            );
        }
    }
    assert_eq!(fitted_ops, 6000.0, "{table:?}");
    let (r, f) = figure(&table, "block cache hit ratio (window)");
    assert!(
        (0.0..=1.0).contains(&r) && (0.0..=1.0).contains(&f),
        "{table:?}"
    );
}

/// `kvperf fit --check` on an imported CSV trace whose 20 hot keys of 400
/// get 80% of the accesses, on LMDB: hotspot is chosen, and the table has
/// both columns with the trace's counts in the replay's.
#[test]
fn fit_check_puts_a_hot_set_csv_trace_and_its_fit_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut csv = String::from("time,op,key,value_size\n");
    let (mut state, mut reads, mut updates) = (12345u64, 0, 0);
    for i in 0..8000u64 {
        // An LCG: a fixed, reproducible sequence.
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = state >> 33;
        let key = if r % 10 < 8 {
            r / 10 % 20
        } else {
            20 + r / 10 % 380
        };
        let op = if r % 7 == 0 { "update" } else { "read" };
        if op == "read" {
            reads += 1;
        } else {
            updates += 1;
        }
        csv.push_str(&format!("{:.4},{op},key{key},200\n", i as f64 * 1e-4));
    }
    std::fs::write(dir.join("hot.csv"), csv).unwrap();
    let out = kvperf(
        dir,
        &words("trace import hot.csv --from csv --output hot.kvtrace"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = kvperf(
        dir,
        &words("fit hot.kvtrace --check --engine lmdb --db check --output hot.workload"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_chosen(&out.stdout, "hotspot");
    let table = check_table(&out.stdout);
    let (r, f) = figure(&table, "READ operations");
    assert_eq!(r, f64::from(reads), "{table:?}");
    let (ru, fu) = figure(&table, "UPDATE operations");
    assert_eq!(ru, f64::from(updates), "{table:?}");
    assert_eq!(f + fu, 8000.0, "{table:?}");
    let (replayed, fitted) = figure(&table, "throughput (ops/s)");
    assert!(replayed > 0.0 && fitted > 0.0, "{table:?}");
    assert!(
        !table.contains_key("block cache hit ratio (window)"),
        "{table:?}"
    );
    assert!(std::fs::read_to_string(dir.join("hot.workload"))
        .unwrap()
        .contains("requestdistribution=hotspot"));
    assert_input_error(&kvperf(dir, &["fit", "hot.kvtrace"]), "--output");
}

/// "N Get, W write batches (P Put, ...), S iterator seeks, ..." from
/// `kvperf trace import --from rocksdb`: the number before `what`.
fn rocksdb_count(stderr: &str, what: &str) -> f64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("from RocksDB's trace"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let before = line.split(what).next().unwrap();
    let number = before.rsplit([' ', '(']).find(|w| !w.is_empty()).unwrap();
    number
        .parse()
        .unwrap_or_else(|_| panic!("{what} in {line}"))
}

/// A run on RocksDB recording both traces (`-p trace.output` and
/// `-p rocksdb.trace`): RocksDB's decodes to what kvperf issued (a read
/// is a Get, an update a Get and a Put, an insert a Put, a scan a seek),
/// and both replay on RocksDB, LMDB and Redis with their counts. Bad
/// RocksDB traces are one line each.
#[test]
fn a_rocksdb_trace_of_a_run_decodes_to_its_counts_and_replays_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let e = workload("e");
    let shape = [
        "-P",
        &e,
        "-p",
        "recordcount=300",
        "-p",
        "fieldcount=2",
        "-p",
        "fieldlength=20",
    ];
    let load = kvperf(dir, &[&["load"][..], &shape, &["--db", "db"]].concat());
    assert_eq!(load.code, 0, "{}", load.stderr);
    let mix = [
        "-p",
        "operationcount=1200",
        "-p",
        "readproportion=0.4",
        "-p",
        "updateproportion=0.3",
        "-p",
        "insertproportion=0.1",
        "-p",
        "scanproportion=0.2",
        "-p",
        "maxscanlength=5",
    ];
    let traces = [
        "-p",
        "trace.output=run.kvtrace",
        "-p",
        "rocksdb.trace=rocks.trace",
    ];
    let run = kvperf(
        dir,
        &[&["run", "--db", "db"][..], &shape, &mix, &traces].concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ran = |group: &str| metric(&run.stdout, group, "Operations").unwrap_or(0.0);
    let out = kvperf(
        dir,
        &words("trace import rocks.trace --from rocksdb --output rocks.kvtrace"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let decoded = |what| rocksdb_count(&out.stderr, what);
    assert_eq!(
        decoded(" Get,"),
        ran("READ") + ran("UPDATE"),
        "{}",
        out.stderr
    );
    assert_eq!(
        decoded(" Put,"),
        ran("UPDATE") + ran("INSERT"),
        "{}",
        out.stderr
    );
    assert_eq!(decoded(" iterator seeks"), ran("SCAN"), "{}", out.stderr);
    let server = common::server::Server::start(
        "redis",
        "a_rocksdb_trace_of_a_run_decodes_to_its_counts_and_replays_everywhere",
    );
    let redis_port = server.as_ref().map(|s| s.port_property("redis"));
    for trace in ["run.kvtrace", "rocks.kvtrace"] {
        let mut engines = vec![("rocksdb", None), ("lmdb", None)];
        if let Some(port) = &redis_port {
            engines.push(("redis", Some(port.as_str())));
        }
        for (engine, port) in engines {
            let db = format!("{engine}-{trace}");
            let mut args = vec!["replay", trace, "--engine", engine];
            match port {
                Some(p) => args.extend(["-p", p]),
                None => args.extend(["--db", &db]),
            }
            let out = kvperf(dir, &args);
            assert_eq!(out.code, 0, "{trace} on {engine}: {}", out.stderr);
            let replayed = |group: &str| metric(&out.stdout, group, "Operations").unwrap_or(0.0);
            if trace == "run.kvtrace" {
                for group in ["READ", "UPDATE", "INSERT", "SCAN"] {
                    assert_eq!(replayed(group), ran(group), "{trace} {engine} {group}");
                }
            } else {
                assert_eq!(replayed("READ"), decoded(" Get,"), "{engine}");
                assert_eq!(
                    replayed("UPDATE") + replayed("INSERT"),
                    decoded(" Put,"),
                    "{engine}"
                );
                assert_eq!(replayed("SCAN"), decoded(" iterator seeks"), "{engine}");
            }
        }
    }
    let whole = std::fs::read(dir.join("rocks.trace")).unwrap();
    std::fs::write(dir.join("cut.trace"), &whole[..whole.len() / 2 + 3]).unwrap();
    std::fs::write(dir.join("empty.trace"), b"").unwrap();
    std::fs::write(
        dir.join("text.trace"),
        b"time,op,key,value_size\n0,read,k,1\n",
    )
    .unwrap();
    for (input, needle) in [
        ("cut.trace", "truncated"),
        ("empty.trace", "empty"),
        ("text.trace", "not a RocksDB trace"),
    ] {
        let line = format!("trace import {input} --from rocksdb --output bad.kvtrace");
        let out = kvperf(dir, &words(&line));
        assert_input_error(&out, needle);
    }
    assert_input_error(
        &kvperf(
            dir,
            &[
                &["run", "--db", "db"][..],
                &shape,
                &mix,
                &["-p", "rocksdb.trace=rocks.trace"],
            ]
            .concat(),
        ),
        "exists",
    );
}

/// `kvperf replay --existing` on the store a trace was recorded on loads
/// nothing first and issues the trace's operations on it, as RocksDB's
/// own tickers count them (what bench/rocksdb-replayer.sh compares with
/// db_bench's replay): a READ is a key read, an UPDATE (kvperf's read and
/// write of the record) a key read and a key written. A store that is not
/// there is one line.
#[test]
fn a_replay_on_the_existing_store_loads_nothing_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let b = workload("b");
    let shape = format!("-P {b} -p recordcount=200 -p fieldcount=2 --db db");
    let load = kvperf(dir, &words(&format!("load {shape}")));
    assert_eq!(load.code, 0, "{}", load.stderr);
    let run = kvperf(
        dir,
        &words(&format!(
            "run {shape} -p operationcount=1500 -p trace.output=run.kvtrace"
        )),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ran = |group: &str| metric(&run.stdout, group, "Operations").unwrap_or(0.0) as u64;
    let line = "replay run.kvtrace --engine rocksdb --db db --existing \
                -p rocksdb.statistics=true --format json --output r.json";
    let stats = &replay_json(dir, line, 0)["engine_stats"];
    assert_eq!(
        stats["keys-read"].as_u64(),
        Some(ran("READ") + ran("UPDATE")),
        "{stats}"
    );
    assert_eq!(
        stats["keys-written"].as_u64(),
        Some(ran("UPDATE")),
        "{stats}"
    );
    assert_eq!(ran("READ") + ran("UPDATE"), 1500);
    let out = kvperf(
        dir,
        &words("replay run.kvtrace --engine rocksdb --db none --existing"),
    );
    assert_input_error(&out, "holds no rocksdb store");
}
