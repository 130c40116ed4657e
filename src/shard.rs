//! Shards: one study split over N kvperf processes (on one machine or on
//! many), each doing shard I of N, so that their results can be merged
//! exactly (`kvperf merge`).
//!
//! This module only says *which* shard a process is and what its share is;
//! the workload applies the share and `results::merge` puts shards together.
//! A shard's share is YCSB's manual method done for the user: a load gets a
//! contiguous slice of the records (`insertstart`/`insertcount`), a run a
//! slice of `operationcount` and 1/N of the target rate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::InputError;

/// Shard `index` of `count`; indexes run from 0, as Kubernetes'
/// `JOB_COMPLETION_INDEX` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// More shards than this is a typo, not a study.
const MAX_SHARDS: u64 = 1 << 20;

/// Properties that may differ between the shards of one study: the
/// client's own status output, engine-event sampling and power meter
/// (`power.*`: a meter is the host's, not the study's), and the thread
/// count and target, which enter the fingerprint as resolved figures
/// instead (`-threads 4` and `-p threadcount=4` are the same study).
const CLIENT_LOCAL: [&str; 4] = [
    "status.interval",
    "events.interval",
    "threadcount",
    "target",
];

impl Shard {
    /// The whole study in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `I/N`, e.g. `0/4` .. `3/4`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("'{text}' is not I/N (e.g. 0/4 for the first of 4 shards)"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("'{text}': {what} '{s}' is not a whole number"))
        };
        Self::new(number(i, "shard index")?, number(n, "shard count")?)
            .map_err(|e| format!("'{text}': {e}"))
    }

    fn new(index: u64, count: u64) -> Result<Self, String> {
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("the shard count must be 1 to {MAX_SHARDS}"));
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is not below the shard count {count} (indexes run from 0 to {})",
                count - 1
            ));
        }
        Ok(Self { index, count })
    }

    /// The shard this process is, and where that was read: `--shard`
    /// (`flag`), else `KVPERF_SHARD=I/N`, else Kubernetes'
    /// `JOB_COMPLETION_INDEX` with `KVPERF_SHARD_COUNT` (which the Job
    /// manifest sets to its completions), else an srun task of a step of
    /// several tasks: `SLURM_PROCID` of `SLURM_NTASKS` (only in a job step,
    /// where `SLURM_STEP_ID` is set: a batch script has `SLURM_PROCID=0`
    /// and the job's `SLURM_NTASKS` and is no shard), else a Slurm job
    /// array's `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`, over
    /// `SLURM_ARRAY_TASK_STEP`) of `SLURM_ARRAY_TASK_COUNT`. None: no shard.
    pub fn resolve(
        flag: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Self, String)>, InputError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let bad = |source: &str, e: String| InputError::Invalid(format!("{source}: {e}"));
        if let Some(text) = flag {
            let shard = Self::parse(text).map_err(|e| bad("--shard", e))?;
            return Ok(Some((shard, "--shard".into())));
        }
        if let Some(text) = var("KVPERF_SHARD") {
            let shard = Self::parse(&text).map_err(|e| bad("KVPERF_SHARD", e))?;
            return Ok(Some((shard, "KVPERF_SHARD".into())));
        }
        let number = |name: &str, value: String| {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| InputError::Invalid(format!("{name}='{value}' is not a whole number")))
        };
        if let Some(index) = var("JOB_COMPLETION_INDEX") {
            let source = "JOB_COMPLETION_INDEX";
            let count = var("KVPERF_SHARD_COUNT").ok_or_else(|| {
                bad(source, "is set but KVPERF_SHARD_COUNT is not; set it to the Job's completions (or pass --shard I/N)".into())
            })?;
            let shard = Self::new(number(source, index)?, number("KVPERF_SHARD_COUNT", count)?)
                .map_err(|e| bad(source, e))?;
            return Ok(Some((shard, source.into())));
        }
        // An srun step of several tasks inside an array task is sharded by
        // its tasks; a step of one task leaves the array's shard.
        if let (Some(_), Some(procid), Some(ntasks)) = (
            var("SLURM_STEP_ID"),
            var("SLURM_PROCID"),
            var("SLURM_NTASKS"),
        ) {
            let source = "SLURM_PROCID";
            let count = number("SLURM_NTASKS", ntasks)?;
            if count > 1 {
                let shard =
                    Self::new(number(source, procid)?, count).map_err(|e| bad(source, e))?;
                return Ok(Some((shard, source.into())));
            }
        }
        if let Some(id) = var("SLURM_ARRAY_TASK_ID") {
            let source = "SLURM_ARRAY_TASK_ID";
            let id = number(source, id)?;
            let count = var("SLURM_ARRAY_TASK_COUNT")
                .ok_or_else(|| bad(source, "is set but SLURM_ARRAY_TASK_COUNT is not".into()))?;
            let count = number("SLURM_ARRAY_TASK_COUNT", count)?;
            let min =
                var("SLURM_ARRAY_TASK_MIN").map_or(Ok(0), |v| number("SLURM_ARRAY_TASK_MIN", v))?;
            let step = var("SLURM_ARRAY_TASK_STEP")
                .map_or(Ok(1), |v| number("SLURM_ARRAY_TASK_STEP", v))?
                .max(1);
            let offset = id.checked_sub(min).filter(|o| o % step == 0).ok_or_else(|| {
                bad(source, format!("task {id} is not min {min} plus a multiple of step {step}; use a plain range such as --array=0-{}", count.saturating_sub(1)))
            })?;
            let shard = Self::new(offset / step, count).map_err(|e| bad(source, e))?;
            return Ok(Some((shard, source.into())));
        }
        Ok(None)
    }

    /// This shard's part of `count` items from `start`, contiguous: the
    /// first `count % N` shards take one more (as YCSB splits a load
    /// over threads).
    pub fn slice(&self, start: u64, count: u64) -> Slice {
        let (base, extra) = (count / self.count, count % self.count);
        let before = self.index * base + self.index.min(extra);
        Slice {
            start: start + before,
            count: base + u64::from(self.index < extra),
        }
    }

    /// This shard's part of a total rate.
    pub fn rate(&self, total: f64) -> f64 {
        total / self.count as f64
    }

    /// A seed of its own per shard, so shards do not repeat each other's
    /// key sequence; shard 0 keeps the study's seed.
    pub fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_add(self.index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Items `start .. start + count`: key numbers of a load, operation
/// numbers of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub start: u64,
    pub count: u64,
}

impl Slice {
    pub fn end(&self) -> u64 {
        self.start + self.count
    }
}

/// What a shard's result says about the shard: enough for `kvperf merge`
/// to check that shards belong together and cover the study once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u64,
    pub count: u64,
    /// Where I/N was read: `--shard`, `KVPERF_SHARD`,
    /// `JOB_COMPLETION_INDEX` or `SLURM_ARRAY_TASK_ID`.
    pub source: String,
    /// The study's identity ([`fingerprint`]): equal in every shard.
    pub fingerprint: String,
    /// A load: the records it inserts; a run: the operations it performs
    /// (none when it runs for `maxexecutiontime` instead).
    pub slice: Option<Slice>,
    /// What the slices split: every record loaded, every operation run.
    pub of: Option<Slice>,
    pub target_ops_per_sec: f64,
    /// The Slurm job, step and task the shard ran as, when it ran under
    /// Slurm; absent in results from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmPlace>,
    /// The pod the shard ran in, when Kubernetes' downward API told it
    /// (the kubernetes launcher's Jobs do); absent in results from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubernetesPlace>,
}

/// Where a shard ran under Kubernetes: the variables a Job's pod template
/// sets from the downward API (`metadata.name`, `metadata.namespace`,
/// `spec.nodeName`), since a pod's hostname is the node's on the host
/// network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesPlace {
    /// `KVPERF_POD_NAME`.
    pub pod: String,
    /// `KVPERF_POD_NAMESPACE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `KVPERF_NODE_NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// The variables a pod template sets for [`KubernetesPlace`].
pub const POD_NAME_VAR: &str = "KVPERF_POD_NAME";
pub const POD_NAMESPACE_VAR: &str = "KVPERF_POD_NAMESPACE";
pub const NODE_NAME_VAR: &str = "KVPERF_NODE_NAME";

impl KubernetesPlace {
    /// None outside a pod that was told its name.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let var = |name: &str| set_var(env, name);
        Some(Self {
            pod: var(POD_NAME_VAR)?,
            namespace: var(POD_NAMESPACE_VAR),
            node: var(NODE_NAME_VAR),
        })
    }
}

impl std::fmt::Display for KubernetesPlace {
    /// `pod kvperf-1a-0-xk2p9 on node3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pod {}", self.pod)?;
        if let Some(node) = &self.node {
            write!(f, " on {node}")?;
        }
        Ok(())
    }
}

/// A variable's value, trimmed; None when unset or blank.
fn set_var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Where a shard ran under Slurm, from the task's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmPlace {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_STEP_ID`: absent in a batch script (an array task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// `SLURMD_NODENAME`: the node's name in Slurm (the hostname may differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `SLURM_PROCID`: the task's rank in its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
}

impl SlurmPlace {
    /// None outside a Slurm job (no `SLURM_JOB_ID`).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let var = |name: &str| set_var(env, name);
        Some(Self {
            job_id: var("SLURM_JOB_ID")?,
            step_id: var("SLURM_STEP_ID"),
            node: var("SLURMD_NODENAME"),
            task: var("SLURM_PROCID").and_then(|v| v.parse().ok()),
        })
    }
}

impl std::fmt::Display for SlurmPlace {
    /// `job 12 step 0 task 1 on node3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job {}", self.job_id)?;
        if let Some(step) = &self.step_id {
            write!(f, " step {step}")?;
        }
        if let Some(task) = self.task {
            write!(f, " task {task}")?;
        }
        if let Some(node) = &self.node {
            write!(f, " on {node}")?;
        }
        Ok(())
    }
}

impl ShardInfo {
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.index,
            count: self.count,
        }
    }
}

/// The identity of a sharded study: the command, the engine, every
/// workload and engine property (client-local ones aside), the threads of
/// each shard and the total target rate — everything that must be equal
/// for shards to be parts of one study. The shard itself is left out.
pub fn fingerprint(
    command: &str,
    engine: &str,
    settings: &BTreeMap<String, String>,
    threads: usize,
    target_ops_per_sec: f64,
) -> String {
    let settings: BTreeMap<&str, &str> = settings
        .iter()
        .filter(|(k, _)| {
            !CLIENT_LOCAL.contains(&k.as_str())
                && !crate::measure::power::PROPERTIES.contains(&k.as_str())
        })
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    crate::fingerprint::of(&serde_json::json!({
        "command": command,
        "engine": engine,
        "settings": settings,
        "threads": threads,
        "target": target_ops_per_sec,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn resolve(
        flag: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<Option<(Shard, String)>, String> {
        Shard::resolve(flag, &env(vars)).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_i_of_n_and_refuses_nonsense() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        for (bad, why) in [
            ("4/4", "not below the shard count 4"),
            ("1/0", "1 to"),
            ("x/4", "'x' is not a whole number"),
            ("3", "not I/N"),
            ("-1/4", "not a whole number"),
        ] {
            let err = Shard::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn slices_tile_the_range_once_with_the_remainder_first() {
        for (count, n) in [(10u64, 3u64), (3, 3), (1000, 7), (5, 1)] {
            let slices: Vec<Slice> = (0..n)
                .map(|i| Shard { index: i, count: n }.slice(100, count))
                .collect();
            assert_eq!(slices[0].start, 100);
            for pair in slices.windows(2) {
                assert_eq!(pair[0].end(), pair[1].start, "contiguous");
                assert!(pair[0].count >= pair[1].count);
            }
            assert_eq!(slices.last().unwrap().end(), 100 + count);
        }
        let three: Vec<u64> = (0..3)
            .map(|i| Shard { index: i, count: 3 }.slice(0, 10).count)
            .collect();
        assert_eq!(three, [4, 3, 3], "as YCSB splits a load over threads");
    }

    #[test]
    fn the_flag_wins_then_kvperf_shard_then_kubernetes_then_slurm() {
        let all = [
            ("KVPERF_SHARD", "1/2"),
            ("JOB_COMPLETION_INDEX", "2"),
            ("KVPERF_SHARD_COUNT", "3"),
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        let got = |flag, vars: &[(&str, &str)]| resolve(flag, vars).unwrap().unwrap();
        assert_eq!(got(Some("0/5"), &all).0, Shard { index: 0, count: 5 });
        assert_eq!(got(None, &all).1, "KVPERF_SHARD");
        assert_eq!(got(None, &all[1..]).0, Shard { index: 2, count: 3 });
        assert_eq!(got(None, &all[3..]).0, Shard { index: 3, count: 4 });
        assert_eq!(resolve(None, &[]).unwrap(), None);
        assert_eq!(resolve(None, &[("KVPERF_SHARD", " ")]).unwrap(), None);
    }

    #[test]
    fn srun_tasks_are_shards_of_their_step_and_a_batch_script_is_not() {
        let task = [
            ("SLURM_JOB_ID", "12"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
        ];
        let (shard, source) = resolve(None, &task).unwrap().unwrap();
        assert_eq!(
            (shard, source.as_str()),
            (Shard { index: 1, count: 2 }, "SLURM_PROCID")
        );
        assert_eq!(
            resolve(Some("0/1"), &task).unwrap().unwrap().0,
            Shard::WHOLE,
            "--shard wins"
        );
        // A batch script: SLURM_PROCID=0 and the job's tasks, no step.
        assert_eq!(
            resolve(
                None,
                &task[..1]
                    .iter()
                    .chain(&task[2..])
                    .copied()
                    .collect::<Vec<_>>()
            )
            .unwrap(),
            None
        );
        // A step of one task inside an array task: the array's shard.
        let one = [
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(
            resolve(None, &one).unwrap().unwrap().1,
            "SLURM_ARRAY_TASK_ID"
        );
        // A step of several tasks inside an array task: its tasks.
        let mut several = one;
        several[2].1 = "3";
        assert_eq!(resolve(None, &several).unwrap().unwrap().1, "SLURM_PROCID");
        let err = resolve(
            None,
            &[
                ("SLURM_STEP_ID", "0"),
                ("SLURM_PROCID", "x"),
                ("SLURM_NTASKS", "2"),
            ],
        )
        .unwrap_err();
        assert!(err.contains("SLURM_PROCID='x'"), "{err}");
        let place = SlurmPlace::from_env(&env(&task)).unwrap();
        assert_eq!(place.to_string(), "job 12 step 0 task 1");
        assert_eq!(SlurmPlace::from_env(&env(&[])), None);
    }

    #[test]
    fn slurm_arrays_count_from_their_minimum_and_step() {
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        let (shard, _) = resolve(None, &vars).unwrap().unwrap();
        assert_eq!(shard, Shard { index: 3, count: 4 });
        let mut off_step = vars;
        off_step[0].1 = "6";
        let err = resolve(None, &off_step).unwrap_err();
        assert!(err.contains("plain range"), "{err}");
    }

    #[test]
    fn an_index_without_its_count_is_one_clear_error() {
        let err = resolve(None, &[("JOB_COMPLETION_INDEX", "1")]).unwrap_err();
        assert!(err.contains("KVPERF_SHARD_COUNT"), "{err}");
        let err = resolve(None, &[("SLURM_ARRAY_TASK_ID", "1")]).unwrap_err();
        assert!(err.contains("SLURM_ARRAY_TASK_COUNT"), "{err}");
        let err = resolve(
            None,
            &[("JOB_COMPLETION_INDEX", "3"), ("KVPERF_SHARD_COUNT", "3")],
        )
        .unwrap_err();
        assert!(
            err.starts_with("JOB_COMPLETION_INDEX: shard index 3"),
            "{err}"
        );
    }

    #[test]
    fn the_fingerprint_ignores_client_local_settings_only() {
        let mut s = BTreeMap::new();
        s.insert("recordcount".to_string(), "1000".to_string());
        let base = fingerprint("run", "redis", &s, 4, 0.0);
        let mut local = s.clone();
        local.insert("status.interval".into(), "1".into());
        local.insert("threadcount".into(), "4".into());
        assert_eq!(base, fingerprint("run", "redis", &local, 4, 0.0));
        let mut other = s.clone();
        other.insert("recordcount".into(), "1001".into());
        assert_ne!(base, fingerprint("run", "redis", &other, 4, 0.0));
        assert_ne!(base, fingerprint("load", "redis", &s, 4, 0.0));
        assert_ne!(base, fingerprint("run", "redis", &s, 8, 0.0));
        assert_ne!(base, fingerprint("run", "redis", &s, 4, 100.0));
    }

    #[test]
    fn shard_zero_keeps_the_seed_and_others_differ() {
        let s = |i| Shard { index: i, count: 3 }.seed(42);
        assert_eq!(s(0), 42);
        assert_ne!(s(1), s(2));
        assert_ne!(s(1), 42);
    }

    #[test]
    fn a_pod_told_its_name_records_it_and_nothing_else_does() {
        let pod = [
            (POD_NAME_VAR, "kvperf-1-0-x7k2p"),
            (POD_NAMESPACE_VAR, "bench"),
            (NODE_NAME_VAR, " "),
        ];
        let place = KubernetesPlace::from_env(&env(&pod)).unwrap();
        assert_eq!(place.pod, "kvperf-1-0-x7k2p");
        assert_eq!(place.namespace.as_deref(), Some("bench"));
        assert_eq!(place.node, None, "blank is absent");
        assert_eq!(place.to_string(), "pod kvperf-1-0-x7k2p");
        let on_node = [(POD_NAME_VAR, "p"), (NODE_NAME_VAR, "node3")];
        let place = KubernetesPlace::from_env(&env(&on_node)).unwrap();
        assert_eq!(place.to_string(), "pod p on node3");
        assert_eq!(KubernetesPlace::from_env(&env(&[("HOSTNAME", "p")])), None);
    }
}
