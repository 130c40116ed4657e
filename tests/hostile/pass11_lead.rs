//! The eleventh hostile pass (probe only), mended by the lead
//! (docs/reliability.md, "Pass 11: a probe of pass 10's mends"). Each
//! case failed on the main of 2026-11-29 (98f5217).

use std::path::Path;

use crate::common::{assert_input_error, kvperf, workload, Output};

fn ycsb(dir: &Path, engine: &str, phase: &str, extra: &[&str]) -> Output {
    let w = workload(if phase == "load" { "a" } else { "c" });
    let mut args = vec![
        phase,
        "--engine",
        engine,
        "-P",
        &w,
        "-p",
        "recordcount=200",
        "-p",
        "operationcount=50",
        "--db",
        "d",
    ];
    args.extend_from_slice(extra);
    kvperf(dir, &args)
}

#[test]
fn a_hard_link_among_an_engines_files_in_kvperfs_store_is_not_written_through() {
    // On 98f5217 a symbolic link there was refused, a hard link was not:
    // a user's file linked at LMDB's `lock.mdb` was overwritten with
    // LMDB's lock table, one at SQLite's `kvperf.sqlite-wal` truncated,
    // `run` exit 0.
    for (engine, name) in [("lmdb", "lock.mdb"), ("sqlite", "kvperf.sqlite-wal")] {
        let dir = tempfile::tempdir().unwrap();
        let load = ycsb(dir.path(), engine, "load", &[]);
        assert_eq!(load.code, 0, "{engine}: {}", load.stderr);
        let theirs = dir.path().join("theirs.txt");
        std::fs::write(&theirs, "my notes\n").unwrap();
        let at = dir.path().join("d").join(name);
        let _ = std::fs::remove_file(&at);
        std::fs::hard_link(&theirs, &at).unwrap();
        let run = ycsb(dir.path(), engine, "run", &[]);
        assert_input_error(&run, "hard links");
        assert_eq!(std::fs::read(&theirs).unwrap(), b"my notes\n", "{engine}");
        // `--fresh` removes kvperf's name of it, never the user's file.
        let fresh = ycsb(dir.path(), engine, "load", &["--fresh"]);
        assert_eq!(fresh.code, 0, "{engine}: {}", fresh.stderr);
        assert_eq!(std::fs::read(&theirs).unwrap(), b"my notes\n", "{engine}");
        let run = ycsb(dir.path(), engine, "run", &[]);
        assert_eq!(run.code, 0, "{engine}: {}", run.stderr);
    }
}

/// bash sources the file `BASH_ENV` names before a script: a user's
/// `export FERRETDB_MODE=proxy` there (CI systems set BASH_ENV for every
/// job) brought back what pass 10 cleared, and kvperf's FerretDB wrote a
/// load into the user's server. Here the file only leaves a trace that it
/// was read; kvperf's server scripts never read it now.
#[cfg(feature = "redis")]
#[test]
fn a_users_bash_env_is_not_sourced_by_kvperfs_server_scripts() {
    let work = tempfile::tempdir().unwrap();
    let sourced = work.path().join("sourced");
    let bash_env = work.path().join("env.sh");
    std::fs::write(&bash_env, format!("touch '{}'\n", sourced.display())).unwrap();
    let dir = work.path().join("srv");
    let shown = dir.display().to_string();
    let port = crate::common::server::free_port().to_string();
    let env = [("BASH_ENV", bash_env.to_str().unwrap())];
    let start = super::pass10_servers::kvperf_with(
        work.path(),
        &["server", "start", "redis", "--dir", &shown, "--port", &port],
        &env,
    );
    let stop = super::pass10_servers::kvperf_with(
        work.path(),
        &["server", "stop", "redis", "--dir", &shown],
        &env,
    );
    if start.code != 0 {
        let why = format!("redis could not start here: {}", start.stderr.trim());
        match crate::common::server::cannot_start(
            "a_users_bash_env_is_not_sourced_by_kvperfs_server_scripts",
            &why,
            std::env::var("CI").ok().as_deref(),
        ) {
            Ok(skipped) => return crate::common::note_skip(&skipped),
            Err(failed) => panic!("{failed}"),
        }
    }
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(start.stderr.contains("BASH_ENV"), "{}", start.stderr);
    assert!(!sourced.exists(), "BASH_ENV was sourced: {}", start.stderr);
}

/// A block cache of 0 bytes: RocksDB crashed (SIGSEGV) opening a store
/// with a hyper clock cache of 0 bytes, `bench --cache_size=0` (whose
/// cache is hyper clock) and `load -p rocksdb.block_cache_size=0 -p
/// rocksdb.cache_type=hyper_clock` alike. 0 now means no block cache, as
/// db_bench reads it.
#[cfg(feature = "rocksdb")]
#[test]
fn a_block_cache_of_no_bytes_is_no_block_cache_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let bench = kvperf(
        dir.path(),
        &[
            "bench",
            "--db",
            "b",
            "--benchmarks=fillseq,readrandom",
            "--num=100",
            "--cache_size=0",
        ],
    );
    assert_eq!(bench.code, 0, "{}", bench.stderr);
    for cache_type in ["hyper_clock", "lru"] {
        let load = kvperf(
            dir.path(),
            &[
                "load",
                "-P",
                &workload("c"),
                "-p",
                "recordcount=100",
                "-p",
                "rocksdb.block_cache_size=0",
                "-p",
                &format!("rocksdb.cache_type={cache_type}"),
                "--db",
                cache_type,
            ],
        );
        assert_eq!(load.code, 0, "{cache_type}: {}", load.stderr);
    }
}
