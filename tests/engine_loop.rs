//! The embedded engines' bare loop (bench/engine_loop.rs) against kvperf:
//! on a store `kvperf load` wrote, run with kvperf's seed, it finds every
//! record and does exactly as many reads and updates as `kvperf run` did
//! (the same op chooser on the same RNG stream: a draw out of step, in the
//! key, field or value choice, would change the counts). `cargo test`
//! builds the example beside this test; without it the test says SKIPPED
//! (and fails under CI).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use crate::common::{kvperf, metric, workload};

const ENGINES: [&str; 6] = ["rocksdb", "wiredtiger", "lmdb", "sqlite", "fjall", "redb"];
const RECORDS: &str = "500";
const OPERATIONS: &str = "3000";
const SEED: &str = "7";
const SEED_PROPERTY: &str = "seed=7";

/// target/PROFILE/deps/engine_loop-HASH -> target/PROFILE/examples/engine-loop
fn engine_loop() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("examples/engine-loop");
    bin.exists().then_some(bin)
}

#[test]
fn the_bare_loop_does_kvperfs_operations_and_finds_every_record() {
    let Some(bare) = engine_loop() else {
        common::skip_unless_ci(
            "the_bare_loop",
            "no engine-loop example beside this test (cargo build --example engine-loop)",
        );
        return;
    };
    let shape = [
        "-p",
        "fieldcount=10",
        "-p",
        "fieldlength=100",
        "-p",
        &format!("recordcount={RECORDS}"),
        "-p",
        &format!("operationcount={OPERATIONS}"),
    ]
    .map(String::from);
    for engine in ENGINES {
        let tmp = tempfile::tempdir().unwrap();
        let wa = workload("a");
        let mut load = vec![
            "load", "--fresh", "--engine", engine, "--db", "db", "-P", &wa,
        ];
        load.extend(shape.iter().map(String::as_str));
        let out = kvperf(tmp.path(), &load);
        assert_eq!(out.code, 0, "{engine}: load: {}", out.stderr);
        for (w, threads) in [("a", "2"), ("c", "1")] {
            let file = workload(w);
            let mut run = vec!["run", "--engine", engine, "--db", "db", "-P", &file];
            run.extend(shape.iter().map(String::as_str));
            run.extend(["-p", SEED_PROPERTY, "-threads", threads]);
            let kv = kvperf(tmp.path(), &run);
            assert_eq!(kv.code, 0, "{engine} {w}: run: {}", kv.stderr);

            let loop_out = Command::new(&bare)
                .args([engine, "db", w, RECORDS, OPERATIONS, threads, SEED])
                .args(["fieldcount=10", "fieldlength=100"])
                .current_dir(tmp.path())
                .output()
                .expect("engine-loop runs");
            let stdout = String::from_utf8_lossy(&loop_out.stdout);
            let stderr = String::from_utf8_lossy(&loop_out.stderr);
            assert!(
                loop_out.status.success(),
                "{engine} {w}: engine-loop: {stdout}{stderr}"
            );
            assert!(
                stdout.contains(" 0 not found; updates ")
                    && stdout.contains(" 0 not found; 0 errors)"),
                "{engine} {w}: every read and update finds its record: {stdout}"
            );
            for group in ["READ", "UPDATE"] {
                assert_eq!(
                    metric(&stdout, group, "Operations"),
                    metric(&kv.stdout, group, "Operations"),
                    "{engine} {w}: {group} operations of the bare loop and of kvperf with seed {SEED}"
                );
            }
            let reads = metric(&stdout, "READ", "Operations").unwrap_or(0.0);
            assert!(reads > 0.0, "{engine} {w}: no reads: {stdout}");
            if w == "a" {
                let updates = metric(&stdout, "UPDATE", "Operations").unwrap_or(0.0);
                assert!(updates > 0.0, "{engine} a: no updates: {stdout}");
            }
        }
    }
}
