//! `rocksdb.version`: a command or a plan's config on another RocksDB
//! release, fetched and checked first, refused in one line when the release
//! lacks a function kvperf calls.
#![cfg(feature = "rocksdb")]

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{assert_input_error, workload, Output};
use kvperf::engine::embedded::rocksdb_library;

/// `kvperf ARGS` in `dir` with `KVPERF_CACHE` (where releases are kept) set.
fn kvperf_with_cache(dir: &Path, cache: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    command.args(args).current_dir(dir);
    if let Some(cache) = cache {
        command.env("KVPERF_CACHE", cache);
    }
    let out = command.output().expect("kvperf runs");
    Output::from(out)
}

fn on_release_library() -> bool {
    let loaded = rocksdb_library::loaded();
    if loaded.build.kind() == "source build" {
        eprintln!(
            "skip: this kvperf has RocksDB compiled in; rocksdb.version needs the release library"
        );
        return false;
    }
    true
}

/// A cache holding "release 10.2.1" whose library is libc: it exports no
/// rocksdb_* function at all.
fn cache_with_a_library_lacking_everything(root: &Path) -> Option<std::path::PathBuf> {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.exists() {
        eprintln!("skip: no {}", libc.display());
        return None;
    }
    let dir = root.join("cache/rocksdb/10.2.1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(libc, dir.join("librocksdb.so")).unwrap();
    std::fs::write(dir.join(".complete"), "").unwrap();
    Some(root.join("cache"))
}

#[test]
fn a_release_lacking_a_function_kvperf_calls_is_refused_naming_it() {
    if !on_release_library() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(cache) = cache_with_a_library_lacking_everything(tmp.path()) else {
        return;
    };
    let wa = workload("a");
    let out = kvperf_with_cache(
        tmp.path(),
        Some(&cache),
        &[
            "load",
            "-P",
            &wa,
            "-p",
            "recordcount=100",
            "-p",
            "rocksdb.version=10.2.1",
            "--db",
            "db",
        ],
    );
    assert_input_error(&out, "rocksdb.version");
    assert!(
        out.stderr
            .contains("RocksDB 10.2.1's library lacks rocksdb_"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("which this kvperf calls"),
        "{}",
        out.stderr
    );
    assert!(
        !tmp.path().join("db").exists(),
        "refused before the store was made"
    );

    // A plan's config asking for it: refused before any step runs.
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\ndriver = \"ycsb\"\nengine = \"rocksdb\"\n\
         [properties]\nrecordcount = 100\n\
         [[configs]]\nname = \"old\"\ndb = \"old-db\"\nproperties = { \"rocksdb.version\" = \"10.2.1\" }\n\
         [[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n",
    )
    .unwrap();
    let out = kvperf_with_cache(
        tmp.path(),
        Some(&cache),
        &["plan", "run", "p.toml", "--results", "r.jsonl"],
    );
    assert_input_error(&out, "config 'old'");
    assert!(out.stderr.contains("lacks rocksdb_"), "{}", out.stderr);
    assert!(
        common::lines(&tmp.path().join("r.jsonl")).is_empty(),
        "no step ran"
    );
}

#[test]
fn a_release_without_a_pinned_checksum_or_not_a_release_is_bad_input() {
    if !on_release_library() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let args = |version: &str| {
        vec![
            "load".to_string(),
            "-P".into(),
            wa.clone(),
            "-p".into(),
            "recordcount=100".into(),
            "-p".into(),
            format!("rocksdb.version={version}"),
            "--db".into(),
            "db".into(),
        ]
    };
    let run = |version: &str| {
        let args = args(version);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        kvperf_with_cache(tmp.path(), Some(&tmp.path().join("cache")), &args)
    };
    assert_input_error(&run("9.9.9"), "has no pinned checksum");
    assert_input_error(&run("latest"), "is not a RocksDB release");
}

#[test]
fn a_load_on_another_release_runs_on_it_and_its_result_names_it() {
    if !on_release_library() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    // The user's cache: the release is fetched once with Maven (seconds).
    let out = kvperf_with_cache(
        tmp.path(),
        None,
        &[
            "load",
            "-P",
            &wa,
            "-p",
            "recordcount=300",
            "-p",
            "rocksdb.version=10.2.1",
            "-p",
            "rocksdb.format_version=6",
            "--db",
            "db",
            "--format",
            "json",
            "--output",
            "r.json",
        ],
    );
    if out.code == 3 && out.stderr.contains("Maven could not fetch") {
        let why = format!("cannot fetch RocksDB 10.2.1 here: {}", out.stderr.trim());
        return common::skip_unless_ci("rocksdb_releases", &why);
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(
        result["engine"]["version"], "10.2.1 (release library)",
        "{}",
        result["engine"]
    );
    let library = result["engine"]["options"]["library"].as_str().unwrap();
    assert!(
        library.contains("/rocksdb/10.2.1/librocksdb.so"),
        "{library}"
    );
    assert_eq!(result["engine"]["options"]["version"], "10.2.1");
    // RocksDB 10.2.1 itself wrote the store.
    let log = std::fs::read_to_string(tmp.path().join("db/LOG")).unwrap();
    assert_eq!(
        rocksdb_library::version_in_log(&log).as_deref(),
        Some("10.2.1")
    );
}
