//! `kvperf bench`: db_bench's benchmarks, output and bad flags, on RocksDB.
#![cfg(feature = "rocksdb")]

use crate::common;

use crate::common::{assert_input_error, kvperf};

/// The fields of a db_bench result line: (name, micros/op, ops/sec, seconds, ops, rest).
fn result_line<'a>(stdout: &'a str, name: &str) -> (f64, f64, f64, u64, &'a str) {
    let line = stdout
        .lines()
        .find(|l| l.split(" : ").next().map(str::trim) == Some(name))
        .unwrap_or_else(|| panic!("no result line for {name} in:\n{stdout}"));
    let rest = line.split_once(" : ").unwrap().1;
    let words: Vec<&str> = rest.split_whitespace().collect();
    assert_eq!(
        (words[1], words[3], words[5], words[7]),
        ("micros/op", "ops/sec", "seconds", "operations;"),
        "{line}"
    );
    let tail = rest.split_once("operations;").unwrap().1;
    (
        words[0].parse().unwrap(),
        words[2].parse().unwrap(),
        words[4].parse().unwrap(),
        words[6].parse().unwrap(),
        tail,
    )
}

#[test]
fn every_benchmark_runs_with_db_benchs_counts_and_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let all = "fillseq,overwrite,readrandom,readseq,readwhilewriting,readrandomwriterandom,\
               seekrandom,updaterandom,deleterandom,waitforcompaction,fillrandom";
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            &format!("--benchmarks={all}"),
            "--num=2000",
            "--threads=2",
            "--readwritepercent=80",
            "--db=db",
            "--seed=7",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Fills: each thread writes --num keys (not split), as db_bench does.
    let (us_per_op, ops_per_sec, seconds, ops, _) = result_line(&out.stdout, "fillseq");
    assert_eq!(ops, 4000);
    assert!(us_per_op > 0.0 && seconds > 0.0);
    // ops/sec is operations over wall time (seconds are printed to 1 ms).
    assert!((ops_per_sec * seconds - ops as f64).abs() <= ops_per_sec * 0.0006 + 1.0);
    // After fillseq every key exists: all reads find their key. The
    // message shows the first thread's counts, as db_bench's does.
    let (_, _, _, ops, tail) = result_line(&out.stdout, "readrandom");
    assert_eq!(ops, 4000);
    assert!(tail.ends_with("(2000 of 2000 found)"), "{tail}");
    // db_bench's found message carries its own newline: a blank line follows.
    assert!(out.stdout.contains("(2000 of 2000 found)\n\n"));
    // readwhilewriting: the writer's operations are not counted.
    let (_, _, _, ops, tail) = result_line(&out.stdout, "readwhilewriting");
    assert_eq!(ops, 4000);
    assert!(tail.contains("of 2000 found)"), "{tail}");
    // 80/20 interleave in runs of 100: 2000 ops → 1600 reads, 400 writes.
    let (_, _, _, _, tail) = result_line(&out.stdout, "readrandomwriterandom");
    assert!(tail.contains("reads:1600 writes:400 total:2000"), "{tail}");
    let (_, _, _, ops, _) = result_line(&out.stdout, "readseq");
    assert_eq!(
        ops, 4000,
        "each thread reads --reads (= --num) keys in order"
    );
    let (_, _, _, _, tail) = result_line(&out.stdout, "seekrandom");
    assert!(tail.contains("(2000 of 2000 found)"), "{tail}");
    assert!(result_line(&out.stdout, "updaterandom")
        .4
        .contains("updates:2000"));
    assert_eq!(result_line(&out.stdout, "deleterandom").3, 4000);
    assert_eq!(result_line(&out.stdout, "fillrandom").3, 4000);
    // waitforcompaction measures nothing and says so as db_bench does.
    assert!(out
        .stdout
        .contains("waitforcompaction(db): finished with status (OK)"));
    assert!(!out.stdout.contains("waitforcompaction :"));
}

#[test]
fn histogram_block_report_file_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillrandom,readrandom",
            "--num=3000",
            "--value_size=4096",
            "--histogram=1",
            "--report_interval_seconds=1",
            "--duration=2",
            "--db=db",
            "--json=result.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // fillrandom honours --duration: it runs about 2 s, not 3000 ops.
    let (_, _, seconds, _, _) = result_line(&out.stdout, "fillrandom");
    assert!((1.9..4.0).contains(&seconds), "{seconds}");
    for op in ["write", "read"] {
        let header = format!("Microseconds per {op}:\nCount: ");
        assert!(
            out.stdout.contains(&header),
            "no {op} block in:\n{}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("Percentiles: P50: "));
    assert!(out.stdout.contains(" P99.99: "));

    let csv = std::fs::read_to_string(tmp.path().join("report.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("secs_elapsed,interval_qps"));
    // kvperf's signature, a comment line db_bench's own file does not have.
    assert_eq!(lines.next(), Some("# kvperf-file/1 bench-report-file"));
    let first: Vec<u64> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(first[0], 1);
    assert!(first[1] > 0, "operations in the first second");

    let text = std::fs::read_to_string(tmp.path().join("result.json")).unwrap();
    let json = kvperf::results::StepOutput::from_json(&text).unwrap();
    assert_eq!(json.settings["value_size"], "4096");
    assert_eq!(json.engine.name, "rocksdb");
    assert_eq!(json.engine.options["block_cache_size"], "33554432");
    assert_eq!(json.measurements.len(), 2);
    let read = &json.measurements[1].ops[&kvperf::measure::OpKind::Read];
    assert!(read.latency.count > 0 && read.latency.p99_us > 0.0);
    assert_eq!(read.latency.histogram.get().len(), read.latency.count);
    let figures = json.measurements[1].db_bench.as_ref().unwrap();
    assert!(figures.message.contains("found)"), "{}", figures.message);
    assert!(json.error.is_none());
}

#[test]
fn readseq_counts_only_the_keys_it_read() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillseq,readseq",
            "--num=500",
            "--reads=800",
            "--threads=2",
            "--db=db",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Each thread runs out of keys after 500 of its 800 reads, as in
    // db_bench; the step past the last key is not an operation.
    assert_eq!(result_line(&out.stdout, "readseq").3, 1000);
}

#[test]
fn a_fill_removes_only_the_engines_files() {
    let tmp = tempfile::tempdir().unwrap();
    let fill = |name: &str| {
        let out = kvperf(
            tmp.path(),
            &[
                "bench",
                &format!("--benchmarks={name}"),
                "--num=100",
                "--db=db",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    };
    fill("fillseq");
    let db = tmp.path().join("db");
    std::fs::write(db.join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(db.join("photos")).unwrap();
    std::fs::write(db.join("photos/cat.jpg"), "meow").unwrap();
    fill("fillrandom");
    assert_eq!(
        std::fs::read_to_string(db.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        std::fs::read_to_string(db.join("photos/cat.jpg")).unwrap(),
        "meow"
    );
}

#[test]
fn keys_and_values_have_db_benchs_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillseq",
            "--num=10",
            "--value_size=64",
            "--db=db",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let db = rocksdb::DB::open_default(tmp.path().join("db")).unwrap();
    let keys: Vec<Box<[u8]>> = db
        .iterator(rocksdb::IteratorMode::Start)
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(keys.len(), 10);
    // Key 3: 8 big-endian bytes, then '0' padding to 16 bytes.
    assert_eq!(&*keys[3], b"\0\0\0\0\0\0\0\x0300000000");
    let value = db.get(&keys[3]).unwrap().unwrap();
    assert_eq!(value.len(), 64);
    // compression_ratio 0.5: each 100-byte piece is 50 random bytes twice.
    let first = db.get(&keys[0]).unwrap().unwrap();
    assert_eq!(first[50..64], first[..14]);
}

#[test]
fn fill_benchmarks_never_empty_a_store_kvperf_did_not_create() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("foreign");
    {
        // A RocksDB store made by someone else.
        let db = rocksdb::DB::open_default(&foreign).unwrap();
        db.put(b"precious", b"data").unwrap();
    }
    let out = kvperf(
        tmp.path(),
        &["bench", "--benchmarks=fillseq", "--num=10", "--db=foreign"],
    );
    assert_input_error(&out, "kvperf did not create");
    assert!(
        !foreign.join(".kvperf-data").exists(),
        "nothing was written into a store kvperf refused"
    );
    let db = rocksdb::DB::open_default(&foreign).unwrap();
    assert_eq!(db.get(b"precious").unwrap().as_deref(), Some(&b"data"[..]));
}

#[test]
fn bad_flags_get_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["bench", "--db=db", "--num=10"];
        all.extend_from_slice(args);
        kvperf(tmp.path(), &all)
    };
    assert_input_error(
        &run(&["--benchmarks=readrandm"]),
        "unknown benchmark 'readrandm' (did you mean 'readrandom'?)",
    );
    assert_input_error(&run(&["--bloom_locality=1"]), "--bloom_locality");
    assert_input_error(&run(&["--value_size=big"]), "'big'");
    assert_input_error(&run(&["--threads=0"]), "--threads");
    assert_input_error(&run(&["--histogram=maybe"]), "not a boolean");
    assert_input_error(
        &run(&["--compression_type=lzma"]),
        "unknown RocksDB compression 'lzma'",
    );
    assert_input_error(
        &run(&[
            "--benchmarks=readrandom",
            "--use_existing_db=1",
            "--db=empty",
        ]),
        "--db 'empty' holds no rocksdb store; load one first",
    );
    assert_input_error(
        &run(&["--benchmarks=readseq", "--engine=null"]),
        "engine 'null' cannot iterate keys in order (--benchmarks=readseq)",
    );
}

#[test]
fn drop_caches_works_or_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=fillseq",
            "--num=10",
            "--db=db",
            "--drop_caches",
        ],
    );
    // Whether this machine lets us drop the page cache decides which
    // outcome is right; both are asserted.
    if common::can_drop_caches() {
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (_, _, _, ops, _) = result_line(&out.stdout, "fillseq");
        assert_eq!(ops, 10);
    } else {
        eprintln!("drop_caches is not permitted here: checking its error instead");
        assert_input_error(&out, "--drop_caches: cannot write /proc/sys/vm/drop_caches");
    }
}

#[test]
fn the_histogram_blocks_percentiles_from_too_few_operations_are_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = |reads: &str, histogram: &str| {
        let out = kvperf(
            tmp.path(),
            &[
                "bench",
                "--engine",
                "null",
                "--benchmarks=readrandom",
                "--num=500",
                reads,
                histogram,
                "--no-progress",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stderr
    };
    let warned = "readrandom: percentiles from too few operations to mean much: READ from 500 operations: p99.9 needs 1,000, p99.99 needs 10,000;";
    let stderr = bench("--reads=500", "--histogram=1");
    assert!(stderr.contains(warned), "{stderr}");
    // 2,000 reads: p99.9 is of enough; p99.99 still is not.
    let stderr = bench("--reads=2000", "--histogram=1");
    assert!(
        stderr.contains("READ from 2,000 operations: p99.99 needs 10,000;"),
        "{stderr}"
    );
    // Without the block no percentile is printed, so none is warned of.
    let stderr = bench("--reads=500", "--histogram=0");
    assert!(!stderr.contains("too few operations"), "{stderr}");
}
