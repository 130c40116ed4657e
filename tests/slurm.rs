//! The srun launcher and the Slurm job-array recipe on a real single-node
//! Slurm cluster, set up by `scripts/slurm-single-node.sh` (Debian's
//! slurmctld, slurmd, slurm-client and munge; root). Where that cannot run
//! (not root, no apt-get, the script fails) the tests skip with the
//! reason, except under CI (`CI=true`), where they fail. Every case runs
//! Redis, so a build without it has none.
#![cfg(feature = "redis")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::RwLockReadGuard;
use std::time::{Duration, Instant};

use crate::common::failed_line;
use crate::common::machine::{self, Ready};
use crate::common::server::{free_port, Server};
use kvperf::measure::{OpKind, Outcome};
use kvperf::results::step::StepOutput;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Sets the cluster up (again after a docs block stopped it): Ok, or why
/// it cannot run here.
fn set_up_cluster() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: scripts/slurm-single-node.sh installs packages and starts munged, slurmctld and slurmd".into());
    }
    if Command::new("apt-get").arg("--version").output().is_err() {
        return Err("no apt-get: scripts/slurm-single-node.sh sets Slurm up on Debian".into());
    }
    let started = Instant::now();
    let out = Command::new(repo("scripts/slurm-single-node.sh"))
        .output()
        .map_err(|e| format!("cannot run scripts/slurm-single-node.sh: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "scripts/slurm-single-node.sh failed: {}",
            stderr.lines().last().unwrap_or("").trim()
        ));
    }
    eprintln!(
        "single-node Slurm ready in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        stderr.lines().last().unwrap_or("").trim()
    );
    Ok(())
}

/// The cluster, held shared while the test runs; None after printing
/// SKIPPED (or failing under CI) when it cannot run here.
fn cluster(test: &str) -> Option<RwLockReadGuard<'static, u64>> {
    static READY: Ready<Result<(), String>> = Ready::new();
    let held = machine::SLURM.shared();
    match READY.get(&held, set_up_cluster) {
        Ok(()) => Some(held),
        Err(why) => {
            common::skip_unless_ci(test, &why);
            None
        }
    }
}

/// `kvperf plan run` with a clean Slurm environment (no job of the test
/// runner's own), plus `extra` arguments and `env` variables.
fn plan_run(
    dir: &Path,
    plan: &Path,
    results: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> common::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.arg("plan")
        .arg("run")
        .arg(plan)
        .arg("--results")
        .arg(results)
        .args(extra)
        .current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k == "KVPERF_SHARD" || k == "JOB_COMPLETION_INDEX" {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("kvperf runs");
    common::Output::from(out)
}

fn plan_text(port: u16, launcher: &str) -> String {
    format!(
        r#"
name = "srun"
driver = "ycsb"
settle = false
{launcher}
[properties]
recordcount = 1000
operationcount = 4000
fieldcount = 2
fieldlength = 40
[[configs]]
name = "redis"
engine = "redis"
servers = [{{ name = "redis", port = {port} }}]
[[steps]]
load = true
workloads = ["a"]
threads = [2]
clients = 2
[[steps]]
workloads = ["a"]
threads = [2]
clients = 2
"#
    )
}

#[test]
fn a_plan_step_with_two_clients_runs_as_one_srun_step_and_merges_exactly() {
    let test = "a_plan_step_with_two_clients_runs_as_one_srun_step";
    let Some(_cluster) = cluster(test) else {
        return;
    };
    // The plan starts its own Redis; check first that this machine can.
    let Some(probe) = Server::start("redis", test) else {
        return;
    };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, plan_text(free_port(), "launcher = \"srun\"")).unwrap();
    let results = dir.path().join("results.jsonl");
    let out = plan_run(dir.path(), &plan, &results, &[], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("srun: 2 tasks"), "{}", out.stderr);
    assert!(out.stderr.contains("shards ran on:"), "{}", out.stderr);
    let lines = common::lines(&results);
    assert_eq!(lines.len(), 2);
    let (load, run) = (&lines[0], &lines[1]);
    for (what, r) in [("load", load), ("run", run)] {
        common::assert_merged_is_the_sum(what, &r.output);
        assert_eq!(
            r.command.first().map(String::as_str),
            Some("srun"),
            "{:?}",
            r.command
        );
        assert!(
            r.command.contains(&"--ntasks=2".to_string()),
            "{:?}",
            r.command
        );
        assert!(
            r.command.contains(&"--kill-on-bad-exit=1".to_string()),
            "{:?}",
            r.command
        );
        assert!(!r.command.iter().any(|a| a == "--shard"), "{:?}", r.command);
        let info = r.output.merged.as_ref().unwrap();
        for (i, shard) in info.shards.iter().enumerate() {
            let place = shard
                .slurm
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: shard {i} has no Slurm placement"));
            assert!(!place.job_id.is_empty());
            assert!(place.step_id.is_some(), "{what}: {place:?}");
            assert_eq!(place.task, Some(i as u64), "{what}");
            assert!(!shard.hostname.is_empty());
        }
        assert!(!info.hosts.is_empty());
        // Both tasks are one step of one job.
        let ids: Vec<_> = info
            .shards
            .iter()
            .map(|s| {
                s.slurm
                    .as_ref()
                    .map(|p| (p.job_id.clone(), p.step_id.clone()))
            })
            .collect();
        assert_eq!(ids[0], ids[1], "{what}: one job step");
    }
    let lm = load.measured().unwrap();
    assert_eq!(lm.ops[&OpKind::Insert].count(Outcome::Ok), 1000);
    let rm = run.measured().unwrap();
    assert_eq!(rm.operations, 4000);
    assert_eq!(
        rm.ops[&OpKind::Read].count(Outcome::NotFound),
        0,
        "the load wrote every record"
    );
    assert_eq!(run.step.threads, 4, "every client's threads");
    common::assert_report_places_the_shards(dir.path(), &results);
    // No shard files are left behind after a step that merged.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".srun-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_step_whose_shards_never_start_fails_with_one_line_naming_them() {
    let test = "a_step_whose_shards_never_start";
    let Some(_cluster) = cluster(test) else {
        return;
    };
    let Some(probe) = Server::start("redis", test) else {
        return;
    };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    // No launcher in the plan: the flag chooses srun.
    std::fs::write(&plan, plan_text(free_port(), "")).unwrap();
    let results = dir.path().join("results.jsonl");
    // srun reads its partition from SLURM_PARTITION: one that does not exist.
    let out = plan_run(
        dir.path(),
        &plan,
        &results,
        &["--launcher", "srun"],
        &[("SLURM_PARTITION", "no-such-partition")],
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("step ") && l.contains("failed"))
        .unwrap_or_else(|| panic!("no failed-step line: {}", out.stderr));
    assert!(line.contains("shard 0/2 never started"), "{line}");
    assert!(line.contains("partition"), "srun's reason: {line}");
}

#[test]
fn shards_that_fail_fail_the_step_and_are_named() {
    let test = "shards_that_fail_fail_the_step";
    let Some(_cluster) = cluster(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    // A run step only, on a port with no server: each task fails on its
    // own (the plan itself never talks to Redis before srun).
    std::fs::write(
        &plan,
        format!(
            r#"
name = "srun-fails"
driver = "ycsb"
settle = false
launcher = "srun"
[properties]
recordcount = 100
operationcount = 400
"redis.port" = {}
[[configs]]
name = "redis"
engine = "redis"
[[steps]]
workloads = ["c"]
threads = [1]
clients = 2
"#,
            free_port()
        ),
    )
    .unwrap();
    let results = dir.path().join("results.jsonl");
    let out = plan_run(dir.path(), &plan, &results, &[], &[]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = failed_line(&out.stderr);
    assert!(
        line.contains("shard 0/2: cannot reach Redis")
            || line.contains("shard 1/2: cannot reach Redis"),
        "{line}"
    );
}

#[test]
fn a_task_lost_on_its_node_fails_the_step_and_is_named_not_the_one_srun_ended() {
    let test = "a_task_lost_on_its_node";
    let Some(_cluster) = cluster(test) else {
        return;
    };
    let Some(probe) = Server::start("redis", test) else {
        return;
    };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    // The real srun, with task 1 dying before kvperf starts (a node lost,
    // a binary missing there); srun then ends task 0 (--kill-on-bad-exit).
    let srun = dir.path().join("srun-losing-task-1");
    std::fs::write(
        &srun,
        r#"#!/bin/sh
n=0
for a in "$@"; do
  case "$a" in --*) n=$((n + 1)) ;; *) break ;; esac
done
opts=""
i=0
while [ "$i" -lt "$n" ]; do opts="$opts $1"; shift; i=$((i + 1)); done
# shellcheck disable=SC2086
exec srun $opts /bin/sh -c 'if [ "$SLURM_PROCID" = 1 ]; then echo "lost on purpose" >&2; exit 9; fi; sleep 2; exec "$0" "$@"' "$@"
"#,
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&srun).status().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, plan_text(free_port(), "launcher = \"srun\"")).unwrap();
    let results = dir.path().join("results.jsonl");
    let srun = srun.display().to_string();
    let out = plan_run(
        dir.path(),
        &plan,
        &results,
        &[],
        &[("KVPERF_SRUN", srun.as_str())],
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = failed_line(&out.stderr);
    assert!(
        line.contains("shard 1/2 ended without a result: lost on purpose"),
        "{line}"
    );
    assert!(line.contains("stderr is in"), "{line}");
    assert!(
        common::lines(&results).is_empty(),
        "nothing partial recorded"
    );
}

/// Submits the shipped recipe (it submits itself) and waits for its merge.
fn recipe(dir: &Path, results: &Path, phase: &str, port: u16) -> (String, StepOutput) {
    let out = Command::new(repo("deploy/slurm/kvperf-array.sbatch"))
        .current_dir(dir)
        .env("KVPERF", env!("CARGO_BIN_EXE_kvperf"))
        .env("RESULTS", results)
        .env("PHASE", phase)
        .env("SHARDS", "2")
        .env("CPUS_PER_TASK", "1")
        .env("THREADS", "2")
        .env("RECORDS", "1000")
        .env("OPERATIONS", "4000")
        .env("REDIS_HOST", "127.0.0.1")
        .env("REDIS_PORT", port.to_string())
        .env_remove("SLURM_JOB_ID")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("KVPERF_SHARD")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{phase}: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = stdout
        .split_whitespace()
        .last()
        .filter(|j| j.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no job id in '{stdout}'"))
        .to_string();
    let merged = results.join(format!("{phase}-{job}.merged.json"));
    let started = Instant::now();
    while !merged.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{phase}: no {} after 180 s; logs in {}",
            merged.display(),
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Written atomically by kvperf merge: complete once it exists.
    let text = std::fs::read_to_string(&merged).unwrap();
    (job, StepOutput::from_json(&text).unwrap())
}

#[test]
fn the_shipped_sbatch_recipe_runs_as_a_job_array_and_merges_exactly() {
    let test = "the_shipped_sbatch_recipe_runs";
    let Some(_cluster) = cluster(test) else {
        return;
    };
    let Some(server) = Server::start("redis", test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    for phase in ["load", "run"] {
        let (job, merged) = recipe(dir.path(), &results, phase, server.port);
        common::assert_merged_is_the_sum(phase, &merged);
        // The merge is the shards' own files added up.
        for i in 0..2 {
            let part = results.join(format!("{phase}-{job}-{i}.json"));
            let part = StepOutput::from_json(&std::fs::read_to_string(&part).unwrap()).unwrap();
            let shard = part.shard.as_ref().unwrap();
            assert_eq!(shard.source, "SLURM_ARRAY_TASK_ID");
            let place = shard.slurm.as_ref().expect("the array task's job");
            assert!(
                place.step_id.is_none(),
                "a batch script is no job step: {place:?}"
            );
            assert_eq!(
                merged.merged.as_ref().unwrap().shards[i].operations,
                part.measured().unwrap().operations
            );
        }
        let m = merged.measured().unwrap();
        match phase {
            "load" => assert_eq!(m.ops[&OpKind::Insert].count(Outcome::Ok), 1000),
            _ => {
                assert_eq!(m.operations, 4000);
                assert_eq!(m.ops[&OpKind::Read].count(Outcome::NotFound), 0);
            }
        }
    }
}
