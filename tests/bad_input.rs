//! Every bad input gets one clear line and exit code 2.

use crate::common;

use crate::common::{assert_input_error, kvperf, workload};

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
    assert_input_error(
        &run_null(tmp.path(), &["-threads", "0"]),
        "threadcount: 0 threads run nothing",
    );
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
#[cfg(feature = "rocksdb")]
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
    assert!(!tmp.path().join("db").exists(), "nothing was created");
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
#[cfg(feature = "rocksdb")]
fn unwritable_db_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("plainfile"), "x").unwrap();
    let wa = workload("a");
    // A path under a regular file cannot be created, even by root.
    let out = kvperf(tmp.path(), &["load", "-P", &wa, "--db", "plainfile/db"]);
    assert_input_error(&out, "cannot create --db 'plainfile/db'");
}

#[test]
#[cfg(feature = "rocksdb")]
fn db_holding_something_else_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("photos");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("cat.jpg"), "meow").unwrap();
    let wa = workload("a");
    let out = kvperf(tmp.path(), &["load", "-P", &wa, "--db", "photos"]);
    assert_input_error(
        &out,
        "holds files kvperf did not create (such as 'cat.jpg')",
    );
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
#[cfg(feature = "rocksdb")]
fn settle_needs_an_existing_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(tmp.path(), &["settle", "--db", "nothing-here"]);
    assert_input_error(
        &out,
        "--db 'nothing-here' holds no rocksdb store; load one first",
    );
    assert!(
        !tmp.path().join("nothing-here").exists(),
        "settle created nothing"
    );
}

#[test]
fn extreme_durations_are_one_line_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    for (property, needle) in [
        (
            "warmuptime=1e300",
            "warmuptime: 1e300 seconds is more than ten years",
        ),
        (
            "maxexecutiontime=99999999999999",
            "maxexecutiontime: 99999999999999 seconds is more than ten years",
        ),
        ("status.interval=1e20", "status.interval"),
        ("warmuptime=-3", "warmuptime: -3 is negative"),
        ("warmuptime=inf", "warmuptime: 'inf' is not a number"),
    ] {
        let out = run_null(
            tmp.path(),
            &[
                "-p",
                "recordcount=10",
                "-p",
                "operationcount=10",
                "-p",
                property,
            ],
        );
        assert_input_error(&out, needle);
    }
}

#[test]
fn properties_that_size_an_allocation_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    for (property, needle) in [
        (
            "zeropadding=100000000000",
            "zeropadding: 100000000000 is more than kvperf allows",
        ),
        (
            "fieldlength=100000000000",
            "bytes per record, more than kvperf allows",
        ),
        (
            "fieldcount=100000000",
            "fieldcount: 100000000 is more than kvperf allows",
        ),
        ("maxscanlength=999999999999", "maxscanlength"),
    ] {
        let out = run_null(
            tmp.path(),
            &[
                "-p",
                "recordcount=10",
                "-p",
                "operationcount=10",
                "-p",
                property,
            ],
        );
        assert_input_error(&out, needle);
    }
}

#[test]
fn a_thread_that_cannot_start_is_one_line_not_a_hang() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let file = workload("c");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args([
        "run",
        "--engine",
        "null",
        "-P",
        &file,
        "-p",
        "recordcount=10",
        "-p",
        "operationcount=1000000",
        "-threads",
        "1000",
    ])
    // 64 MiB stacks in 2 GiB of address space: a few dozen threads fit,
    // so some start and wait at the start line before one fails.
    .env("RUST_MIN_STACK", "67108864")
    .env("MALLOC_ARENA_MAX", "1")
    .current_dir(tmp.path())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kvperf hung when a thread could not be started");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let out = common::Output {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_input_error(&out, "of 1000 (");
    assert!(out.stderr.contains("use fewer threads"), "{}", out.stderr);
}

#[test]
fn a_directory_given_as_a_workload_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(tmp.path(), &["run", "--engine", "null", "-P", "."]);
    assert_input_error(&out, "workload file '.' is a directory");
}

#[test]
fn a_zero_target_means_no_target_as_in_ycsb() {
    let tmp = tempfile::tempdir().unwrap();
    for flags in [&["-target", "0"][..], &["-p", "target=0"][..]] {
        let mut args = vec!["-p", "recordcount=100", "-p", "operationcount=1000"];
        args.extend_from_slice(flags);
        let out = run_null(tmp.path(), &args);
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        assert_eq!(
            common::metric(&out.stdout, "READ", "Return=OK").map(|r| r > 0.0),
            Some(true)
        );
        assert!(!out.stdout.contains("Intended-"), "{}", out.stdout);
    }
}

#[test]
fn empty_fields_are_allowed_as_in_ycsb() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=1000",
            "-p",
            "fieldlength=0",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_data_directory_for_an_engine_without_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        &[
            "-p",
            "recordcount=10",
            "-p",
            "operationcount=10",
            "--db",
            "somewhere",
        ],
    );
    assert_input_error(
        &out,
        "engine 'null' keeps no data directory, so --db 'somewhere' has no use",
    );
    assert!(!tmp.path().join("somewhere").exists());
}

#[test]
fn an_engine_option_for_a_flag_it_cannot_honour_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--engine=null",
            "--benchmarks=fillrandom",
            "--num=100",
            "--cache_size=1000000",
            "--bloom_bits=10",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for flag in ["--cache_size", "--bloom_bits"] {
        assert_eq!(
            out.stderr
                .matches(&format!(
                    "engine 'null' cannot honour {flag}; it is ignored"
                ))
                .count(),
            1,
            "{}",
            out.stderr
        );
    }
}

#[test]
fn client_tasks_need_an_engine_with_async_operations() {
    let tmp = tempfile::tempdir().unwrap();
    assert_input_error(
        &run_null(tmp.path(), &["-p", "clients=tasks"]),
        "engine 'null' has no async operations; its clients run on threads (clients=tasks)",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "runtimethreads=4"]),
        "runtimethreads: sizes the runtime of clients=tasks, but engine 'null' runs its clients on threads",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "clients=fibers"]),
        "clients: 'fibers' is not threads or tasks",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "runtimethreads=0"]),
        "runtimethreads: 0 is not between 1 and 1024",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "taskscheduling=pinned"]),
        "taskscheduling: shares out the runtime of clients=tasks, but engine 'null' runs its clients on threads",
    );
    assert_input_error(
        &run_null(tmp.path(), &["-p", "taskscheduling=roundrobin"]),
        "taskscheduling: 'roundrobin' is not pinned or stealing",
    );
}

/// Checked before any server is reached: no PostgreSQL needed. Its
/// clients are tasks on request only, so sizing their runtime says how.
#[test]
#[cfg(feature = "postgres")]
fn a_runtime_for_postgres_clients_needs_them_as_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let file = workload("c");
    let args = [
        "run",
        "--engine",
        "postgres",
        "-P",
        &file,
        "-p",
        "postgres.port=1",
        "-p",
        "runtimethreads=2",
    ];
    assert_input_error(
        &kvperf(tmp.path(), &args),
        "engine 'postgres' runs its clients on threads here by default; add -p clients=tasks",
    );
}

/// Checked before any server is reached: no Cassandra needed.
#[test]
#[cfg(feature = "cassandra")]
fn cassandra_options_that_do_not_fit_the_clients_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cassandra = |extra: &[&str]| {
        let file = workload("c");
        let port = ["-p", "cassandra.port=1"];
        let args = [
            &["run", "--engine", "cassandra", "-P", &file][..],
            &port,
            extra,
        ]
        .concat();
        kvperf(tmp.path(), &args)
    };
    // Its own runtime is not started when the clients are tasks.
    assert_input_error(
        &cassandra(&["-p", "cassandra.runtime_threads=4"]),
        "cassandra.runtime_threads: sizes the engine's own runtime, which clients=tasks does not start",
    );
    assert_input_error(
        &cassandra(&["-p", "clients=threads", "-p", "runtimethreads=2"]),
        "runs its clients on threads here (clients=threads)",
    );
}

/// The arguments a plan hands its child through the environment are read
/// as if they were on the command line; a malformed list is bad input.
#[test]
fn private_arguments_from_the_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let with = |private: &str, args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
            .args(args)
            .env("KVPERF_PRIVATE_ARGS", private)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        common::Output::from(out)
    };
    let file = workload("a");
    let run = ["run", "--engine", "null", "-P", file.as_str()];
    let out = with(r#"["-p", "recordcount=-5"]"#, &run);
    assert_input_error(&out, "recordcount");
    let out = with("-p recordcount=5", &run);
    assert_input_error(&out, "KVPERF_PRIVATE_ARGS is not a JSON array of strings");
}
