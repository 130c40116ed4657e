//! Hostile cases: stores (docs/reliability.md, "Stores: interrupted and
//! shared"). A `load --fresh` killed at any moment while it empties a
//! store leaves one the next `load --fresh` empties and a `run` names as
//! incomplete in one line; a `--db` in use by another kvperf is locked:
//! a `--fresh` (or a db_bench fill) there is refused in one line naming
//! the holder, before anything in the directory (ledger, marker, the
//! engine's files) is touched.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{assert_input_error, kvperf, workload, Output};

const DIRECTORY_ENGINES: [&str; 6] = ["rocksdb", "lmdb", "wiredtiger", "fjall", "redb", "sqlite"];

/// `kvperf` with `args` in `dir`, not waited for.
fn spawn(dir: &Path, args: &[&str], stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("kvperf starts")
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Files a running engine deletes or replaces on its own: write-ahead
/// logs, their pre-allocations, rolled info logs, manifests and options.
fn retired_by_the_running_engine(name: &str) -> bool {
    [
        "WiredTigerLog.",
        "WiredTigerPreplog.",
        "WiredTigerTmplog.",
        "LOG.old",
        "MANIFEST-",
        "OPTIONS-",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || name.ends_with(".log")
}

/// A `load` of `records` records of workload a into `db` (fresh or not)
/// with `engine`; RocksDB with a small write buffer, so its store has
/// many files and emptying it takes a while.
pub(super) fn load_args(engine: &str, db: &str, records: &str, fresh: bool) -> Vec<String> {
    let mut args: Vec<String> = ["load", "--engine", engine, "-P", &workload("a")]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["-p".into(), format!("recordcount={records}")]);
    if engine == "rocksdb" {
        args.extend(["-p".into(), "rocksdb.write_buffer_size=65536".into()]);
    }
    args.extend(["--db".into(), db.into()]);
    if fresh {
        args.push("--fresh".into());
    }
    args
}

pub(super) fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A short `run` of workload c on `db`.
pub(super) fn short_run(dir: &Path, engine: &str, db: &str, records: &str) -> Output {
    let wc = workload("c");
    kvperf(
        dir,
        &[
            "run",
            "--engine",
            engine,
            "-P",
            &wc,
            "-p",
            &format!("recordcount={records}"),
            "-p",
            "operationcount=20",
            "--db",
            db,
        ],
    )
}

/// After a `load --fresh` was killed: a `run` works or says in one line
/// that the store is incomplete (never an engine's own error), and the
/// next `load --fresh` works and leaves a store a run reads whole.
fn assert_recovers(dir: &Path, engine: &str, db: &str, records: &str, when: &str) {
    let out = short_run(dir, engine, db, records);
    if out.code != 0 {
        // Stopped while emptying, or after, while the engine made its
        // files (no load finished): either way one line and its remedy.
        assert_input_error(&out, "load it again with `kvperf load --fresh`");
    }
    let load = kvperf(dir, &strs(&load_args(engine, db, records, true)));
    assert_eq!(load.code, 0, "{engine}, killed {when}: {}", load.stderr);
    let out = short_run(dir, engine, db, records);
    assert_eq!(out.code, 0, "{engine}, killed {when}: {}", out.stderr);
    assert!(
        !out.stderr.contains(" of the "),
        "{engine}, killed {when}: the ledger matches the store: {}",
        out.stderr
    );
}

/// The case: a kill while the store is being emptied, at the
/// moment the first of its files goes, and at a few times after start.
#[test]
fn a_fresh_load_killed_while_emptying_leaves_a_store_the_next_one_empties() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in DIRECTORY_ENGINES {
        let records = if engine == "rocksdb" { "20000" } else { "500" };
        let db = format!("{engine}-db");
        let d = tmp.path().join(&db);
        let load = kvperf(tmp.path(), &strs(&load_args(engine, &db, records, false)));
        assert_eq!(load.code, 0, "{engine}: {}", load.stderr);
        let rounds: Vec<(i32, Option<u64>)> = vec![
            (libc::SIGKILL, None),
            (libc::SIGKILL, None),
            (libc::SIGTERM, None),
            (libc::SIGTERM, Some(30)),
            (libc::SIGKILL, Some(60)),
        ];
        for (sig, after_ms) in rounds {
            let before = names(&d);
            let mut child = spawn(
                tmp.path(),
                &strs(&load_args(engine, &db, records, true)),
                Stdio::null(),
            );
            let started = Instant::now();
            match after_ms {
                // At the first of the store's files to go (or to move).
                None => {
                    while child.try_wait().unwrap().is_none()
                        && started.elapsed() < Duration::from_secs(60)
                    {
                        let now = names(&d);
                        if before.iter().any(|n| !now.contains(n)) {
                            break;
                        }
                    }
                }
                Some(ms) => std::thread::sleep(Duration::from_millis(ms)),
            }
            signal(&child, sig);
            child.wait().unwrap();
            let when = format!("by signal {sig} after {:?}", started.elapsed());
            assert_recovers(tmp.path(), engine, &db, records, &when);
        }
    }
}

/// A long `run` on `db`, with its stderr read until it states the store
/// it runs on (after the engine opened); the rest of its stderr comes
/// from the thread returned.
fn long_run(
    dir: &Path,
    engine: &str,
    db: &str,
    records: &str,
) -> (Child, std::thread::JoinHandle<String>) {
    let wc = workload("c");
    let mut child = spawn(
        dir,
        &[
            "run",
            "--engine",
            engine,
            "-P",
            &wc,
            "-p",
            &format!("recordcount={records}"),
            "-p",
            "operationcount=1000000000",
            "-p",
            "maxexecutiontime=60",
            "--db",
            db,
        ],
        Stdio::piped(),
    );
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.starts_with("Study: ") => break,
            Some(Ok(_)) => {}
            _ => panic!("the long run on {db} ended before it started"),
        }
    }
    // The rest is drained, so the run never blocks on a full pipe.
    let rest =
        std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    (child, rest)
}

/// The case: a `load --fresh` beside a running `run` deleted an
/// LMDB store in use; on RocksDB, whose own lock refused it, it had
/// already emptied kvperf's ledger. Now the second kvperf is refused by
/// kvperf's lock before it touches anything, naming the holder; so is a
/// second run on an engine that locks its store for one process.
#[test]
fn a_store_in_use_by_another_kvperf_is_never_emptied_nor_its_ledger_reset() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in ["rocksdb", "lmdb", "wiredtiger"] {
        let db = format!("{engine}-db");
        let d = tmp.path().join(&db);
        let load = kvperf(tmp.path(), &strs(&load_args(engine, &db, "2000", false)));
        assert_eq!(load.code, 0, "{engine}: {}", load.stderr);
        let ledger = std::fs::read(d.join(".kvperf-loaded-keys")).unwrap();
        let marker = std::fs::read(d.join(".kvperf-data")).unwrap();
        let (mut run, run_stderr) = long_run(tmp.path(), engine, &db, "2000");
        let pid = run.id().to_string();
        // The running engine itself retires its logs and rolls its
        // manifests (WiredTiger removed `WiredTigerLog.0000000001` here
        // in CI), so only the files it keeps are watched.
        let before: Vec<String> = names(&d)
            .into_iter()
            .filter(|name| !retired_by_the_running_engine(name))
            .collect();
        assert!(!before.is_empty(), "{engine}: the store has files to watch");
        let refused = [
            load_args(engine, &db, "2000", true),
            vec![
                "bench".to_string(),
                format!("--engine={engine}"),
                "--benchmarks=fillrandom".into(),
                "--num=100".into(),
                format!("--db={db}"),
            ],
        ];
        for args in refused {
            let out = kvperf(tmp.path(), &strs(&args));
            assert_input_error(&out, "in use by another kvperf");
            assert!(
                out.stderr.contains(&pid),
                "{engine}: names the holder (pid {pid}): {}",
                out.stderr
            );
            assert_eq!(
                std::fs::read(d.join(".kvperf-loaded-keys")).unwrap(),
                ledger,
                "{engine} {args:?}: the ledger is untouched"
            );
            assert_eq!(std::fs::read(d.join(".kvperf-data")).unwrap(), marker);
            for name in &before {
                assert!(
                    d.join(name).exists(),
                    "{engine} {args:?}: '{name}' is still there"
                );
            }
        }
        let beside = short_run(tmp.path(), engine, &db, "2000");
        if engine == "lmdb" {
            // LMDB's processes share its store: a second run beside the first.
            assert_eq!(beside.code, 0, "{engine}: {}", beside.stderr);
        } else {
            // The others lock their store for one process (pass 6: the
            // second run was exit 3 in the engine's words, "While lock
            // file: .../LOCK: Resource temporarily unavailable").
            assert_input_error(&beside, "in use by another kvperf");
            assert!(beside.stderr.contains(&pid), "{engine}: {}", beside.stderr);
        }
        signal(&run, libc::SIGINT);
        let status = run.wait().unwrap();
        let said = run_stderr.join().unwrap();
        // An interrupted run exits 3 with what it measured kept.
        assert_eq!(status.code(), Some(3), "{engine}: {said}");
        assert!(
            said.contains("interrupted after") && !said.contains("cannot"),
            "{engine}: the long run ran to its interrupt: {said}"
        );
        let out = short_run(tmp.path(), engine, &db, "2000");
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
        assert!(
            !out.stderr.contains("holds 0 of"),
            "{engine}: the ledger still lists the records: {}",
            out.stderr
        );
    }
}

/// Every file of the store in `db` with its length, but kvperf's lock.
pub(super) fn store_files(db: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(db)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().map_or(0, |m| m.len()))
        })
        .filter(|(n, _)| n != ".kvperf-lock")
        .collect();
    files.sort();
    files
}

/// Pass 5: `load --fresh` with a bad option of LMDB, WiredTiger, fjall,
/// redb or SQLite on a loaded store emptied the store, then refused the
/// option (exit 2): their options were parsed in their open, after the
/// store was prepared (pass 4 fixed RocksDB's only). WiredTiger's own
/// configuration (`wiredtiger.config`) is checked by WiredTiger, with
/// nothing opened. Each is refused now with the store as it was.
#[test]
fn a_bad_option_of_any_embedded_engine_is_refused_before_fresh_empties_its_store() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = [
        ("lmdb", "lmdb.max_readers=0", "lmdb.max_readers"),
        (
            "wiredtiger",
            "wiredtiger.cache_size=1000",
            "wiredtiger.cache_size",
        ),
        (
            "wiredtiger",
            "wiredtiger.config=no_such_key=1",
            "no_such_key",
        ),
        ("fjall", "fjall.block_size=10", "fjall.block_size"),
        ("redb", "redb.durability=eventual", "redb.durability"),
        ("sqlite", "sqlite.page_size=1000", "sqlite.page_size"),
    ];
    for (engine, option, named) in bad {
        let db = format!("d-{engine}");
        let load = kvperf(tmp.path(), &strs(&load_args(engine, &db, "300", true)));
        assert_eq!(load.code, 0, "{engine}: {}", load.stderr);
        let before = store_files(&tmp.path().join(&db));
        let mut args = load_args(engine, &db, "300", true);
        args.extend(["-p".into(), option.into()]);
        let out = kvperf(tmp.path(), &strs(&args));
        assert_input_error(&out, named);
        assert_eq!(
            store_files(&tmp.path().join(&db)),
            before,
            "{option} emptied the store before it was refused"
        );
        let run = short_run(tmp.path(), engine, &db, "300");
        assert_eq!(run.code, 0, "{engine} after {option}: {}", run.stderr);
        assert!(!run.stderr.contains(" of the "), "{}", run.stderr);
    }
}

/// Pass 5: with `LD_LIBRARY_PATH` giving another RocksDB release than
/// kvperf links (10.2.1 here, which `kvperf --version` then names), the
/// default table format was still that of 10.4.2: every load failed
/// after opening, exit 3, in RocksDB's words ("Unsupported
/// BlockBasedTable format_version"). The format is checked against the
/// loaded release now: one line naming rocksdb.format_version, exit 2.
#[cfg(feature = "rocksdb")]
#[test]
fn a_rocksdb_release_loaded_through_ld_library_path_gets_its_own_format() {
    let root = env!("CARGO_MANIFEST_DIR");
    let fetched = Command::new("bash")
        .arg(format!("{root}/scripts/rocksdb-release.sh"))
        .arg("10.2.1")
        .output()
        .unwrap();
    if !fetched.status.success() {
        crate::common::skip_unless_ci(
            "a_rocksdb_release_loaded_through_ld_library_path_gets_its_own_format",
            "RocksDB 10.2.1's release library cannot be fetched here",
        );
        return;
    }
    let release = String::from_utf8_lossy(&fetched.stdout).trim().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let on_10_2 = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kvperf"))
            .args(args)
            .env("LD_LIBRARY_PATH", &release)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        Output::from(out)
    };
    let version = on_10_2(&["--version"]);
    assert!(
        version.stdout.contains("RocksDB 10.2.1"),
        "{}",
        version.stdout
    );
    // The default format (7) is said before opening, as with
    // `rocksdb.version=10.2.1`, naming the loaded release.
    let out = on_10_2(&strs(&load_args("rocksdb", "d", "100", true)));
    assert_input_error(&out, "rocksdb.format_version");
    assert!(out.stderr.contains("RocksDB 10.2.1"), "{}", out.stderr);
    let mut six = load_args("rocksdb", "e", "100", true);
    six.extend(["-p".into(), "rocksdb.format_version=6".into()]);
    let out = on_10_2(&strs(&six));
    assert_eq!(out.code, 0, "the loaded release's format: {}", out.stderr);
}
