//! The RocksDB kvperf runs on: named from the library itself (`--version`,
//! `engines`, every result), and holding every C function kvperf calls.
#![cfg(feature = "rocksdb")]

use crate::common;

use std::path::{Path, PathBuf};

use kvperf::engine::embedded::elf_symbols::{exported_functions, imported_symbols};
use kvperf::engine::embedded::rocksdb_library::{self, missing_functions};

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

/// `. scripts/rocksdb-release.sh --export` as the README's commands source it.
fn export_in(cache: &Path, choice: &str) -> std::process::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/rocksdb-release.sh");
    std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            ". '{script}' --export && echo \"lib=${{ROCKSDB_LIB_DIR:-}} target=$KVPERF_DEFAULT_TARGET_DIR\""
        ))
        .env("KVPERF_ROCKSDB", choice)
        .env("KVPERF_CACHE", cache)
        .env("ROCKSDB_LIB_DIR", "/left/over")
        .output()
        .unwrap()
}

#[test]
fn the_build_links_the_release_library_or_compiles_rocksdb_as_chosen() {
    let tmp = tempfile::tempdir().unwrap();
    // A release already fetched: the script only names it.
    let cached = tmp
        .path()
        .join("rocksdb")
        .join(rocksdb_library::BINDINGS_VERSION);
    std::fs::create_dir_all(&cached).unwrap();
    std::fs::write(cached.join("librocksdb.so"), "").unwrap();
    std::fs::write(cached.join(".complete"), "").unwrap();
    let release = export_in(tmp.path(), "release");
    assert!(
        release.status.success(),
        "{}",
        String::from_utf8_lossy(&release.stderr)
    );
    let stdout = String::from_utf8_lossy(&release.stdout);
    assert!(
        stdout.contains(&format!("lib={} ", cached.display())),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("/target"), "{stdout}");

    let source = export_in(tmp.path(), "source");
    assert!(
        source.status.success(),
        "{}",
        String::from_utf8_lossy(&source.stderr)
    );
    let stdout = String::from_utf8_lossy(&source.stdout);
    assert!(
        stdout.starts_with("lib= "),
        "ROCKSDB_LIB_DIR unset: {stdout}"
    );
    assert!(stdout.trim_end().ends_with("/target-source"), "{stdout}");

    let neither = export_in(tmp.path(), "latest");
    assert_eq!(neither.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&neither.stderr);
    assert!(
        stderr.contains("KVPERF_ROCKSDB must be 'release' or 'source'"),
        "{stderr}"
    );
}
