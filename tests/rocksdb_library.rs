//! The RocksDB kvperf runs on: named from the library itself (`--version`,
//! `engines`, every result), and holding every C function kvperf calls.
#![cfg(feature = "rocksdb")]

mod common;

use std::path::{Path, PathBuf};

use kvperf::engine::elf_symbols::{exported_functions, imported_symbols};
use kvperf::engine::rocksdb_library::{self, missing_functions};

fn kvperf_exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kvperf"))
}

/// The library `kvperf --version` says it loaded, or None for a source build.
fn library_of_version_line(line: &str) -> Option<PathBuf> {
    let (_, rest) = line
        .split_once("release library ")
        .or_else(|| line.split_once("shared library "))?;
    Some(PathBuf::from(rest.trim().trim_end_matches(')')))
}

#[test]
fn every_rocksdb_function_kvperf_calls_is_exported_by_the_library_it_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let out = common::kvperf(tmp.path(), &["--version"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let imports = imported_symbols(kvperf_exe(), "rocksdb_").unwrap();
    let Some(library) = library_of_version_line(&out.stdout) else {
        // Compiled in: nothing is looked up at load time.
        assert!(out.stdout.contains("source build"), "{}", out.stdout);
        assert!(
            imports.is_empty(),
            "a source build imports no RocksDB: {imports:?}"
        );
        eprintln!("source build: RocksDB is linked into kvperf, no library to check");
        return;
    };
    // kvperf calls far more than a handful (open, get, put, options, ...).
    assert!(imports.len() > 50, "{imports:?}");
    for called in [
        "rocksdb_open",
        "rocksdb_put",
        "rocksdb_get_pinned",
        "rocksdb_get_options_from_string",
    ] {
        assert!(
            imports.iter().any(|n| n == called),
            "kvperf should call {called}"
        );
    }
    let exports = exported_functions(&library, "rocksdb_").unwrap();
    assert!(
        exports.len() > 900,
        "{} exports in {}",
        exports.len(),
        library.display()
    );
    assert_eq!(
        missing_functions(kvperf_exe(), &library).unwrap(),
        Vec::<String>::new()
    );
    // This test executable links the same library, by the same run path.
    let this = std::env::current_exe().unwrap();
    assert_eq!(
        missing_functions(&this, &library).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn a_library_without_a_function_kvperf_calls_is_found_out() {
    // libc exports no rocksdb_* function: everything kvperf calls is missing.
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.exists() {
        eprintln!("skip: no {}", libc.display());
        return;
    }
    let imports = imported_symbols(kvperf_exe(), "rocksdb_").unwrap();
    let missing = missing_functions(kvperf_exe(), libc).unwrap();
    assert_eq!(missing, imports);
}

#[test]
fn version_engines_and_results_name_the_loaded_rocksdb() {
    let loaded = rocksdb_library::loaded();
    let tmp = tempfile::tempdir().unwrap();
    let version = common::kvperf(tmp.path(), &["--version"]);
    assert!(
        version
            .stdout
            .contains(&format!("RocksDB {}, ", loaded.version)),
        "{}",
        version.stdout
    );
    assert!(
        version.stdout.contains(loaded.build.kind()),
        "{} should say {}",
        version.stdout,
        loaded.build.kind()
    );

    let engines = common::kvperf(tmp.path(), &["engines"]);
    let line = engines
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("library: RocksDB"))
        .unwrap_or_else(|| panic!("no library line: {}", engines.stdout));
    assert!(line.contains(&loaded.version_and_kind()), "{line}");

    let workload = common::workload("a");
    let out = common::kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "rocksdb",
            "-P",
            &workload,
            "-p",
            "recordcount=200",
            "--db",
            "db",
            "--format",
            "json",
            "--output",
            "r.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r.json")).unwrap()).unwrap();
    let engine = &result["engine"];
    assert_eq!(
        engine["version"],
        loaded.version_and_kind().as_str(),
        "{engine}"
    );
    assert_eq!(
        engine["options"]["library"],
        loaded.origin().as_str(),
        "{engine}"
    );
    // The version is the library's own (the store's LOG says the same).
    let log = std::fs::read_to_string(tmp.path().join("db/LOG")).unwrap();
    assert_eq!(
        rocksdb_library::version_in_log(&log).as_deref(),
        Some(loaded.version.as_str())
    );
}
