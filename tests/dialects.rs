//! kvperf speaks its users' dialects (issue 28): fio's sizes and
//! durations, YCSB's `Client` flags and binding names, db_bench's flags
//! as benchmark.sh passes them, clap's whole messages, and one output
//! spelling (`--output -`, `--json FILE`) across modes.

use crate::common;

use std::path::Path;

use crate::common::{assert_input_error, kvperf, metric, run_null, workload};
use kvperf::results::StepOutput;

fn json_of(stdout: &str) -> StepOutput {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn sizes_and_durations_take_fio_units_in_properties() {
    let tmp = tempfile::tempdir().unwrap();
    // fieldlength=1k is 1024 bytes, as fio reads 1k: the logical bytes say so.
    let out = kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "null",
            "-p",
            "recordcount=20",
            "-p",
            "fieldcount=1",
            "-p",
            "fieldlength=1k",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    let written = step.measurements[0]
        .accounting
        .as_ref()
        .unwrap()
        .logical
        .written;
    assert_eq!(written, 20 * (1024 + "field0".len() as u64));
    // maxexecutiontime=1s ends a run that has no operation count at 1 s.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=1s",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ms = metric(&out.stdout, "OVERALL", "RunTime(ms)").unwrap();
    assert!((1000.0..5000.0).contains(&ms), "{ms} ms");
    // Decimals and minutes: warmuptime=0.25 and a status interval of 1m.
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=0.5",
            "-p",
            "warmuptime=0.25",
            "-p",
            "status.interval=1m",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json_of(&out.stdout).measurements[0].warmup_s, 0.25);
}

#[test]
fn a_size_or_duration_that_is_not_one_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let counts = ["-p", "recordcount=10", "-p", "operationcount=10", "-p"];
    for (property, needle) in [
        (
            "maxexecutiontime=10y",
            "maxexecutiontime: '10y': unknown unit 'y'",
        ),
        ("warmuptime=soon", "warmuptime: 'soon' is not a duration"),
        (
            "fieldlength=1.5",
            "fieldlength: '1.5' is not a whole number of bytes",
        ),
        ("fieldlength=4q", "fieldlength: '4q': unknown unit 'q'"),
    ] {
        let args: Vec<&str> = counts.iter().copied().chain([property]).collect();
        assert_input_error(&run_null(tmp.path(), "c", &args), needle);
    }
    assert_input_error(
        &kvperf(
            tmp.path(),
            &["device", "corners", ".", "--runtime", "10 fortnights"],
        ),
        "unknown unit 'fortnights'",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["device", "corners", ".", "--size", "2X"]),
        "unknown unit 'X'",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["bench", "--duration=soon"]),
        "'soon' is not a duration",
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn device_corners_take_fio_sizes_and_times() {
    // Direct I/O needs a real filesystem (not tmpfs).
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "device",
            "corners",
            ".",
            "--size",
            "8m",
            "--runtime",
            "1.5",
            "--ramp",
            "0s",
            "--output",
            "-",
            "--format",
            "json",
        ],
    );
    if out.code != 0 && out.stderr.contains("io_uring") {
        eprintln!("skipped: io_uring is not available here: {}", out.stderr);
        assert!(std::env::var("CI").is_err(), "CI must run the corners");
        return;
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    assert_eq!(
        step.settings["size"],
        (8u64 << 20).to_string(),
        "fio's 8m is 8 MiB"
    );
    assert_eq!(step.settings["runtime_s"], "1.5");
    for m in &step.measurements {
        assert!(
            (1.4..4.0).contains(&m.runtime_s),
            "{}: {} s",
            m.name,
            m.runtime_s
        );
    }
}

#[test]
fn ycsb_client_flags_and_bindings_run_as_ycsb_users_type_them() {
    let tmp = tempfile::tempdir().unwrap();
    let a = workload("a");
    // YCSB's Client: -load, -db <class>, -threads=N, -p rocksdb.dir=DIR.
    let out = kvperf(
        tmp.path(),
        &[
            "-load",
            "-db",
            "site.ycsb.BasicDB",
            "-P",
            &a,
            "-p",
            "recordcount=100",
            "-threads=2",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    assert_eq!(
        (step.command.as_str(), step.engine.name.as_str()),
        ("load", "null")
    );
    assert_eq!(step.measurements[0].threads, 2);
    // -t, -target=N: the run phase, paced.
    let out = kvperf(
        tmp.path(),
        &[
            "-t",
            "-db=site.ycsb.BasicDB",
            "-P",
            &a,
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=200",
            "-target=100000",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    assert_eq!(step.command, "run");
    assert_eq!(step.measurements[0].target_ops_per_sec, 100_000.0);
    // -load after `run` is the other phase: refused, never read as `-l oad`.
    assert_input_error(
        &kvperf(tmp.path(), &["run", "-load", "-P", &a]),
        "-load is YCSB's load phase, but this is kvperf run: run `kvperf load ...`",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["run", "-db", "site.ycsb.db.HBaseClient", "-P", &a]),
        "-db 'site.ycsb.db.HBaseClient': kvperf has no engine for this YCSB binding; give --engine NAME",
    );
    assert_input_error(
        &kvperf(tmp.path(), &["load", "hbase20", "-P", &a]),
        "the YCSB binding 'hbase20'",
    );
}

#[test]
#[cfg(feature = "rocksdb")]
fn ycsb_binding_name_and_rocksdb_dir_reach_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    let a = workload("a");
    // bin/ycsb's form: the binding after the command, the directory a property.
    let out = kvperf(
        tmp.path(),
        &[
            "load",
            "rocksdb",
            "-P",
            &a,
            "-p",
            "recordcount=50",
            "-p",
            "rocksdb.dir=ycsb-db",
            "-s",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        tmp.path().join("ycsb-db/CURRENT").exists(),
        "RocksDB's store in rocksdb.dir"
    );
    let out = kvperf(
        tmp.path(),
        &[
            "-t",
            "-db",
            "site.ycsb.db.rocksdb.RocksDBClient",
            "-P",
            &a,
            "-p",
            "recordcount=50",
            "-p",
            "operationcount=100",
            "-p",
            "rocksdb.dir=ycsb-db",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    assert_eq!(step.engine.name, "rocksdb");
    let read = &step.measurements[0].ops[&kvperf::measure::OpKind::Read];
    assert_eq!(
        read.returns.get("NOT_FOUND").copied().unwrap_or(0),
        0,
        "the loaded store"
    );
    assert_input_error(
        &kvperf(
            tmp.path(),
            &["run", "--db", "x", "-p", "rocksdb.dir=y", "-P", &a],
        ),
        "-p rocksdb.dir and --db both name the data directory",
    );
}

#[test]
fn clap_messages_arrive_whole_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            &["plan", "run"][..],
            "kvperf: the following required arguments were not provided: --results <FILE>, <PLAN>",
        ),
        (
            &["run", "--enigne", "null"][..],
            "unexpected argument '--enigne' found; tip: a similar argument exists: '--engine'",
        ),
        (
            &["rn"][..],
            "unrecognized subcommand 'rn'; tip: a similar subcommand exists: 'run'",
        ),
        (
            &["run", "--format", "JSON"][..],
            "invalid value 'JSON' for '--format <FORMAT>'; [possible values: text, json]",
        ),
    ] {
        assert_input_error(&kvperf(tmp.path(), args), needle);
    }
}

/// A short null-engine run with `extra` output flags.
fn run_with(dir: &Path, extra: &[&str]) -> common::Output {
    let args: Vec<&str> = ["-p", "recordcount=100", "-p", "operationcount=500"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    run_null(dir, "c", &args)
}

#[test]
fn output_dash_and_standard_streams_are_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // `-` is stdout: YCSB's text as without --output, no file named "-".
    let out = run_with(dir, &["--output", "-"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("[OVERALL], RunTime(ms)"),
        "{}",
        out.stdout
    );
    let out = run_with(dir, &["--format", "json", "--output", "/dev/stdout"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json_of(&out.stdout).command, "run");
    // A link to standard error is followed (a chain of links too).
    std::os::unix::fs::symlink("/dev/stderr", dir.join("err")).unwrap();
    std::os::unix::fs::symlink("err", dir.join("err2")).unwrap();
    let out = run_with(dir, &["--output", "err2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("[OVERALL], Throughput(ops/sec)"),
        "{}",
        out.stderr
    );
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "no file named '-', links untouched: {names:?}"
    );
    assert!(std::fs::symlink_metadata(dir.join("err"))
        .unwrap()
        .is_symlink());
}

#[test]
fn json_spelling_is_one_across_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // `bench --json FILE` spelled for `run`.
    let out = run_with(dir, &["--json", "r.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&std::fs::read_to_string(dir.join("r.json")).unwrap());
    assert_eq!(step.command, "run");
    // `run --format json --output FILE` spelled for `bench`.
    let bench = |extra: &[&str]| {
        let args: Vec<&str> = [
            "bench",
            "--engine=null",
            "--benchmarks=fillseq",
            "--num=100",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
        kvperf(dir, &args)
    };
    let out = bench(&["--format", "json", "--output", "b.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("fillseq"),
        "db_bench's text stays: {}",
        out.stdout
    );
    let step = json_of(&std::fs::read_to_string(dir.join("b.json")).unwrap());
    assert_eq!(step.measurements[0].name, "fillseq");
    assert_input_error(
        &bench(&["--output", "b.json"]),
        "--json FILE writes the results as JSON",
    );
    // `--json -`: the JSON once, after db_bench's lines.
    let out = bench(&["--json", "-"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json_start = out.stdout.find("{\n").expect("JSON on stdout");
    assert!(
        out.stdout[..json_start].contains("fillseq"),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.matches("\"kvperf_step\"").count(), 1);
    json_of(&out.stdout[json_start..]);
}

#[test]
#[cfg(feature = "rocksdb")]
fn benchmark_sh_flags_reach_rocksdbs_options_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // As benchmark.sh passes them (sizes in its bytes or in fio's units).
    let out = kvperf(
        dir,
        &[
            "bench",
            "--benchmarks=fillseq,stats,levelstats",
            "--num=2000",
            "--db=db",
            "--wal_dir=db",
            "--block_size=8192",
            "--num_levels=5",
            "--open_files=100",
            "--level_compaction_dynamic_level_bytes=true",
            "--bytes_per_sync=1m",
            "--target_file_size_base=4194304",
            "--max_write_buffer_number=3",
            "--stats_interval_seconds=60",
            "--memtablerep=skip_list",
            "--undefok=verify_checksum,cache_numshardbits",
            "--verify_checksum=1",
            "--cache_numshardbits=6",
            "--json=b.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // db_bench's stats and levelstats: RocksDB's own reports, not measured.
    assert!(
        out.stdout.contains("** Compaction Stats [default] **"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("** DB Stats **"), "{}", out.stdout);
    assert!(
        out.stdout.contains("Level Files Size(MB)"),
        "{}",
        out.stdout
    );
    for ignored in ["--verify_checksum=1", "--cache_numshardbits=6"] {
        assert!(
            out.stderr.contains(&format!(
                "warning: {ignored} is not a kvperf bench flag; ignored as --undefok asks"
            )),
            "{}",
            out.stderr
        );
    }
    let expected = [
        ("block_size", "8192"),
        ("num_levels", "5"),
        ("max_open_files", "100"),
        ("level_compaction_dynamic_level_bytes", "true"),
        ("bytes_per_sync", "1048576"),
        ("target_file_size_base", "4194304"),
        ("max_write_buffer_number", "3"),
        ("stats_dump_period_sec", "60"),
    ];
    // What RocksDB wrote in its OPTIONS file...
    let options_file = std::fs::read_dir(dir.join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .max()
        .expect("an OPTIONS file");
    let options = std::fs::read_to_string(options_file).unwrap();
    for (name, value) in expected {
        let line = format!("{name}={value}");
        assert!(
            options.lines().any(|l| l.trim() == line),
            "{line} not in OPTIONS"
        );
    }
    // ...is what the result records.
    let step = json_of(&std::fs::read_to_string(dir.join("b.json")).unwrap());
    for (name, value) in expected {
        assert_eq!(step.engine.options[name], value, "{name}");
    }
    assert_eq!(step.warnings.len(), 2, "{:?}", step.warnings);
}

#[test]
#[cfg(feature = "rocksdb")]
fn benchmark_sh_flags_kvperf_cannot_honour_are_refused_one_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = |extra: &[&str]| {
        let args: Vec<&str> = ["bench", "--benchmarks=fillseq", "--num=10", "--db=db"]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        kvperf(tmp.path(), &args)
    };
    assert_input_error(
        &bench(&["--max_bytes_for_level_base=1048576", "--cache_numshardbits=6"]),
        "--max_bytes_for_level_base is not a flag of kvperf bench; if it is a RocksDB option, -p rocksdb.options=max_bytes_for_level_base=VALUE sets it; --undefok=max_bytes_for_level_base ignores it",
    );
    assert_input_error(
        &bench(&["--memtablerep=vector"]),
        "--memtablerep=vector: kvperf runs RocksDB's default memtable only",
    );
    assert_input_error(
        &bench(&["--wal_dir=/tmp/elsewhere"]),
        "give --wal_dir equal to --db",
    );
    assert_input_error(
        &bench(&["--benchmarks=stats", "--engine=null"]),
        "engine 'null' keeps no report of its own state (--benchmarks=stats); engines that can: rocksdb",
    );
    assert!(
        !tmp.path().join("db").exists(),
        "refused before anything was written"
    );
    // The -p rocksdb.options route the refusal names works.
    let out = bench(&["-p", "rocksdb.options=max_bytes_for_level_base=1048576"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// A result states the effective value of every property it read: the
/// given ones in `settings`, the defaults kvperf used in `defaults`.
#[test]
fn json_records_every_default_used_beside_the_given_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let file = workload("c");
    let out = kvperf(
        tmp.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &file,
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=100",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = json_of(&out.stdout);
    assert_eq!(
        step.settings.get("recordcount").map(String::as_str),
        Some("100")
    );
    // Workload C names its distribution; YCSB's defaults fill the rest.
    assert_eq!(
        step.settings.get("requestdistribution").map(String::as_str),
        Some("zipfian")
    );
    assert!(!step.defaults.contains_key("requestdistribution"));
    for (key, value) in [("fieldcount", "10"), ("fieldlength", "100")] {
        assert_eq!(
            step.defaults.get(key).map(String::as_str),
            Some(value),
            "{key}: {:?}",
            step.defaults
        );
        assert!(!step.settings.contains_key(key));
    }
    assert!(
        step.defaults.keys().all(|k| !step.settings.contains_key(k)),
        "{:?}",
        step.defaults
    );
}
