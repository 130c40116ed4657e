//! The orchestration files under deploy/, checked without a cluster: the
//! Kubernetes manifests read as typed Kubernetes objects (every field
//! known, nothing dropped), their kvperf command lines parsed by kvperf's
//! own CLI; the Slurm script checked by bash (and shellcheck) and run,
//! with a stand-in `sbatch`, against a real Redis.

use crate::common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, PersistentVolumeClaim, PodSpec};
use kvperf::cli::{self, Command as Kvperf};
use kvperf::output::Format;
use kvperf::shard::Shard;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

/// The one YAML document of `file` as a typed object, refusing any field
/// the type does not know (Kubernetes would reject or ignore it).
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(file: &str) -> T {
    let text = std::fs::read_to_string(deploy(file)).unwrap();
    let yaml: serde_norway::Value =
        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{file} is not YAML: {e}"));
    let as_written = serde_json::to_value(&yaml).unwrap();
    let object: T = serde_json::from_value(as_written.clone())
        .unwrap_or_else(|e| panic!("{file} does not read as its kind: {e}"));
    assert_eq!(
        serde_json::to_value(&object).unwrap(),
        as_written,
        "{file}: a field the Kubernetes type does not know was dropped"
    );
    object
}

fn pod(job: &Job) -> &PodSpec {
    job.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("a pod template")
}

/// The pod's one container, and the shell script it runs.
fn container(job: &Job) -> (&Container, &str) {
    let pod = pod(job);
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    assert_eq!(
        c.command.as_deref(),
        Some(&["/bin/sh".to_string(), "-c".to_string()][..])
    );
    let script = c.args.as_ref().and_then(|a| a.first()).expect("a script");
    (c, script)
}

/// The shared results volume is mounted at /results.
fn mounts_results(job: &Job) {
    let pod = pod(job);
    let volume = pod
        .volumes
        .as_ref()
        .and_then(|v| v.iter().find(|v| v.name == "results"))
        .expect("a results volume");
    let claim = volume.persistent_volume_claim.as_ref().expect("a claim");
    assert_eq!(claim.claim_name, "kvperf-results");
    let mounted = pod.containers[0]
        .volume_mounts
        .as_ref()
        .and_then(|m| m.iter().find(|m| m.name == "results"))
        .expect("mounted");
    assert_eq!(mounted.mount_path, "/results");
}

#[test]
fn kubernetes_manifests_are_indexed_jobs_over_one_shared_volume() {
    let claim: PersistentVolumeClaim = typed("k8s/results-volume.yaml");
    assert_eq!(claim.metadata.name.as_deref(), Some("kvperf-results"));
    let modes = claim.spec.and_then(|s| s.access_modes).unwrap_or_default();
    assert_eq!(
        modes,
        ["ReadWriteMany"],
        "pods on several nodes write to it"
    );

    for phase in ["load", "run"] {
        let file = format!("k8s/{phase}-job.yaml");
        let job: Job = typed(&file);
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"), "{file}");
        let n = spec.completions.expect("completions");
        assert_eq!(spec.parallelism, Some(n), "{file}: every shard at once");
        assert_eq!(
            spec.backoff_limit,
            Some(0),
            "{file}: no shard retried alone"
        );
        mounts_results(&job);
        let (c, script) = container(&job);
        let count = c
            .env
            .as_ref()
            .and_then(|e| e.iter().find(|v| v.name == "KVPERF_SHARD_COUNT"))
            .and_then(|v| v.value.clone())
            .expect("KVPERF_SHARD_COUNT");
        assert_eq!(count, n.to_string(), "{file}: the shard count kvperf sees");

        // The command line, as the pod of the last index runs it.
        let last = (n - 1).to_string();
        let words: Vec<OsString> = script
            .split_whitespace()
            .skip_while(|w| *w == "exec")
            .map(|w| w.replace("$JOB_COMPLETION_INDEX", &last).into())
            .collect();
        assert_eq!(words[0], "kvperf", "{file}");
        assert_eq!(words[1], phase, "{file}");
        let parsed = cli::parse(words).unwrap_or_else(|e| panic!("{file}: {e}"));
        let args = match parsed.command {
            Kvperf::Load(a) if phase == "load" => a,
            Kvperf::Run(a) if phase == "run" => a,
            other => panic!("{file}: {other:?}"),
        };
        assert_eq!(args.format, Format::Json, "{file}");
        assert_eq!(
            args.output.as_deref(),
            Some(Path::new(&format!("/results/{phase}-{last}.json"))),
            "{file}: one result per shard on the shared volume"
        );
        assert_eq!(args.shard, None, "{file}: the shard comes from the Job");
        let env = |name: &str| match name {
            "JOB_COMPLETION_INDEX" => Some(last.clone()),
            "KVPERF_SHARD_COUNT" => Some(count.clone()),
            _ => None,
        };
        let (shard, _) = Shard::resolve(None, &env).unwrap().expect("a shard");
        assert_eq!(
            shard.index + 1,
            shard.count,
            "{file}: the last index is the last shard"
        );
        assert_eq!(shard.count, n as u64);
    }

    let merge: Job = typed("k8s/merge-job.yaml");
    mounts_results(&merge);
    let (_, script) = container(&merge);
    assert!(
        script.contains(
            "kvperf merge /results/run-*.json --format json --output /results/merged.json"
        ),
        "{script}"
    );
}

#[test]
fn the_slurm_script_is_valid_shell() {
    let script = deploy("slurm/kvperf-array.sbatch");
    let out = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    match Command::new("shellcheck").arg(&script).output() {
        Ok(out) => assert!(
            out.status.success(),
            "shellcheck: {}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(e) => common::skip_unless_ci(
            &format!("shellcheck of {}", script.display()),
            &format!("shellcheck is not installed ({e}; scripts/ensure-deps.sh --with-chromium installs it)"),
        ),
    }
}

#[cfg(feature = "redis")]
#[test]
fn the_slurm_script_runs_its_shards_and_submits_their_merge() {
    use kvperf::measure::{OpKind, Outcome};
    use kvperf::results::step::StepOutput;

    let Some(server) = common::server::Server::start("redis", "the_slurm_script_runs") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A stand-in sbatch: keeps the merge command the first task submits.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let sbatch = bin.join("sbatch");
    std::fs::write(
        &sbatch,
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --wrap=*) printf '%s\\n' \"${a#--wrap=}\" > \"$SBATCH_WRAP\";; esac; done\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&sbatch)
        .status()
        .unwrap();
    let results = dir.path().join("results");
    let wrap = dir.path().join("wrap.sh");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (phase, job) in [("load", "77"), ("run", "78")] {
        for task in ["0", "1"] {
            let out = Command::new("bash")
                .arg(deploy("slurm/kvperf-array.sbatch"))
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("SBATCH_WRAP", &wrap)
                .env("KVPERF", env!("CARGO_BIN_EXE_kvperf"))
                .env("RESULTS", &results)
                .env("PHASE", phase)
                .env("THREADS", "2")
                .env("RECORDS", "2000")
                .env("OPERATIONS", "4000")
                .env("REDIS_HOST", "127.0.0.1")
                .env("REDIS_PORT", server.port.to_string())
                .env("SLURM_ARRAY_JOB_ID", job)
                .env("SLURM_ARRAY_TASK_ID", task)
                .env("SLURM_ARRAY_TASK_MIN", "0")
                .env("SLURM_ARRAY_TASK_COUNT", "2")
                .env_remove("KVPERF_SHARD")
                .env_remove("JOB_COMPLETION_INDEX")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{phase} task {task}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // What Slurm would run once both tasks ended.
        let out = Command::new("bash").arg(&wrap).output().unwrap();
        assert!(
            out.status.success(),
            "merge: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let merged = results.join(format!("{phase}-{job}.merged.json"));
        let merged = StepOutput::from_json(&std::fs::read_to_string(&merged).unwrap()).unwrap();
        assert_eq!(merged.merged.as_ref().unwrap().count, 2);
        let m = merged.measured().unwrap();
        match phase {
            "load" => assert_eq!(m.ops[&OpKind::Insert].count(Outcome::Ok), 2000),
            _ => {
                assert_eq!(m.operations, 4000);
                assert_eq!(m.ops[&OpKind::Read].count(Outcome::NotFound), 0);
            }
        }
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("[OVERALL], Throughput(ops/sec)"), "{text}");
    }
}
