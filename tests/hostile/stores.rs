//! Hostile cases: stores (docs/reliability.md, "Stores: interrupted and
//! shared"). A `load --fresh` killed at any moment while it empties a
//! store leaves one the next `load --fresh` empties and a `run` names as
//! incomplete in one line.

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

/// A `load` of `records` records of workload a into `db` (fresh or not)
/// with `engine`; RocksDB with a small write buffer, so its store has
/// many files and emptying it takes a while.
fn load_args(engine: &str, db: &str, records: &str, fresh: bool) -> Vec<String> {
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

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A short `run` of workload c on `db`.
fn short_run(dir: &Path, engine: &str, db: &str, records: &str) -> Output {
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
        assert_input_error(&out, "was emptying");
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
