//! How a plan step's `clients = N` shards start.
//!
//! - `local`: N child processes of the plan, each `--shard i/N`
//!   (`runner::run_clients`).
//! - `srun`: one Slurm job step of N tasks, all started together:
//!   `srun --ntasks=N --kill-on-bad-exit=1 ... kvperf run|load ...`. Each
//!   task is shard `SLURM_PROCID` of `SLURM_NTASKS` ([`crate::shard`]) and
//!   prints its JSON result, which srun writes to a file per task
//!   (`--output=DIR/shard-%t.json`, `--error=DIR/shard-%t.err`) in a
//!   directory beside the results file; on a cluster that directory must be
//!   on a filesystem every node shares. Inside an allocation (`salloc`,
//!   `sbatch`: `SLURM_JOB_ID` set) srun places the tasks on its nodes;
//!   outside one it allocates for the step. srun's own input variables
//!   (`SLURM_PARTITION`, `SLURM_CPUS_PER_TASK`, `SLURM_NTASKS_PER_NODE`...)
//!   shape the step; `KVPERF_SRUN` names another srun program.
//!
//! - `kubernetes`: one Indexed Job of N pods, all started together
//!   ([`kubernetes`]); each pod is shard `JOB_COMPLETION_INDEX` of N and
//!   prints its result, which the launcher reads from the pod's log.
//!
//! The runner merges the shards' results exactly as a local step's. A
//! shard that fails or never starts fails the step with one line naming it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::child;
use super::expand::Step;
use super::Plan;
use crate::error::InputError;
use crate::results::step::{ErrorKind, StepError, StepOutput};
use crate::shard::Shard;

mod kubernetes;
pub(super) use kubernetes::run as kubernetes;
pub use kubernetes::KubernetesOptions;

/// `launcher = "local" | "srun" | "kubernetes"` in a plan or a `[[steps]]` entry, and
/// `kvperf plan run --launcher`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    /// Child processes of the plan, on this machine.
    #[default]
    Local,
    /// One Slurm job step, a task per client (`srun --ntasks=N`).
    Srun,
    /// One Indexed Job, a pod per client, with the user's kubectl context.
    Kubernetes,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Local => "local",
            Launcher::Srun => "srun",
            Launcher::Kubernetes => "kubernetes",
        }
    }
}

/// What names a shard in a process's environment besides srun's own
/// variables: the tasks are shards of the step, never of a job array or a
/// Kubernetes Job the plan itself runs in.
const OTHER_SHARD_VARS: [&str; 7] = [
    "KVPERF_SHARD",
    "JOB_COMPLETION_INDEX",
    "KVPERF_SHARD_COUNT",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_STEP",
];

/// Runs `step`'s clients as one srun job step and merges their results;
/// the command recorded is srun's, with the kvperf command it ran.
pub(super) fn srun(
    plan: &Plan,
    step: &Step,
    results: &Path,
) -> anyhow::Result<(Vec<String>, StepOutput)> {
    let n = step.clients;
    let dir = shards_dir(results)?;
    // Left from an earlier attempt of a step: never read as this one's.
    clear_shards_dir(&dir)?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create '{}' for the shards' results", dir.display()))?;
    // Each task prints its result; srun writes it to the task's file.
    let args = printing_args(plan, step, Launcher::Srun)?;
    let exe = std::env::current_exe().context("cannot find the kvperf executable")?;
    let srun_exe = std::env::var_os("KVPERF_SRUN").unwrap_or_else(|| "srun".into());
    let mut srun_args = vec![
        format!("--ntasks={n}"),
        "--kill-on-bad-exit=1".to_string(),
        "--job-name=kvperf".to_string(),
        "--input=none".to_string(),
        format!("--output={}", dir.join("shard-%t.json").display()),
        format!("--error={}", dir.join("shard-%t.err").display()),
    ];
    let inside = std::env::var("SLURM_JOB_ID")
        .ok()
        .filter(|j| !j.trim().is_empty());
    eprintln!(
        "        srun: {n} tasks, {}",
        match &inside {
            Some(job) => format!("in job {job}'s allocation"),
            None => "in an allocation of their own".to_string(),
        }
    );
    let mut full = srun_args.clone();
    full.push(exe.display().to_string());
    full.extend(args.iter().cloned());
    let (status, srun_stderr) = run_srun(Path::new(&srun_exe), &full)?;
    let srun_said = last_line(&srun_stderr).map(str::to_string);
    let kept = format!("(each shard's stderr is in {})", dir.display());

    let (parts, missing) = read_shards(&dir, n, (&status, &srun_said), &kept)?;
    // A shard that failed is the cause; the others were ended by srun for it.
    let first_failed = first_failed(&parts);
    // The first shard that was not ended by srun for another is the cause.
    let missing = missing
        .iter()
        .find(|(cancelled, _)| !cancelled)
        .or(missing.first())
        .map(|(_, line)| line.clone());
    if let Some(missing) = missing {
        let cause = first_failed
            .as_ref()
            .map(|(s, e)| format!("; shard {s} failed first: {}", e.message))
            .unwrap_or_default();
        anyhow::bail!("{missing}{cause} {kept}");
    }
    if first_failed.is_none() && !status.success() {
        anyhow::bail!(
            "srun {}: {} {kept}",
            how(&status),
            srun_said.unwrap_or_else(|| "no shard says why".into())
        );
    }
    let what_passes = "SLURM_PROCID and SLURM_NTASKS";
    let merged = merge_shards(parts, first_failed, what_passes, &kept)?;
    if merged.error.is_none() {
        // A file put there by another stays, with the directory.
        let _ = clear_shards_dir(&dir);
    }
    srun_args.insert(0, "srun".into());
    srun_args.push("kvperf".into());
    srun_args.extend(args);
    Ok((srun_args, merged))
}

/// How long srun has to end its step after the plan passes an interrupt
/// on (real srun cancels its tasks in a second or two); then its process
/// group is killed.
const SRUN_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

/// How long srun's stderr may stay open after srun ended: a wrapper's child
/// left holding it (`KVPERF_SRUN` a script) is killed with its group then.
const STDERR_AFTER_EXIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs srun with `full` (its arguments, then kvperf's command), ended with
/// kvperf (and so ending its tasks); its status and what it said. srun runs
/// in a process group of its own, which is killed when it does not end
/// within [`SRUN_GRACE`] of an interrupt or leaves its stderr open: the
/// plan waited for good on a wrapper ignoring SIGTERM (pass 12).
fn run_srun(
    srun_exe: &Path,
    full: &[String],
) -> anyhow::Result<(std::process::ExitStatus, String)> {
    let mut cmd = child::child_command(srun_exe, full);
    for var in OTHER_SHARD_VARS {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let parent = std::process::id();
    // SAFETY: prctl, getppid and _exit are async-signal-safe; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // SIGTERM, not SIGKILL: srun then ends the job step's tasks too.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| {
        anyhow::anyhow!(
            "cannot start srun ('{}': {e}); the srun launcher needs Slurm's client (slurm-client)",
            srun_exe.display()
        )
    })?;
    let group = child.id() as libc::pid_t;
    // Read on a thread of its own: a pipe a leftover child holds open must
    // not keep the plan from srun's status.
    let (said, stderr) = std::sync::mpsc::channel();
    if let Some(mut pipe) = child.stderr.take() {
        std::thread::spawn(move || {
            use std::io::Read;
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = said.send(text);
        });
    }
    let status = child::forward_interrupt_then_kill(child.id(), SRUN_GRACE, || child.wait())
        .context("lost the srun process")?;
    let srun_stderr = stderr.recv_timeout(STDERR_AFTER_EXIT).unwrap_or_else(|_| {
        // SAFETY: a kill(2) of the group srun led; srun itself is reaped.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        stderr
            .recv_timeout(std::time::Duration::from_secs(1))
            .unwrap_or_default()
    });
    Ok((status, srun_stderr))
}

/// Each shard's output, named by the process that made it.
type ShardOutputs = Vec<(String, StepOutput)>;

/// Each shard's result read from `dir`, and a line for each shard without
/// one (with whether srun ended it for another).
fn read_shards(
    dir: &Path,
    n: u32,
    (status, srun_said): (&std::process::ExitStatus, &Option<String>),
    kept: &str,
) -> anyhow::Result<(ShardOutputs, Vec<(bool, String)>)> {
    let mut parts = Vec::with_capacity(n as usize);
    // Shards without a result: (cancelled by srun for another, the line).
    let mut missing: Vec<(bool, String)> = Vec::new();
    for i in 0..u64::from(n) {
        let json = dir.join(format!("shard-{i}.json"));
        let err = crate::files::read_input(
            &dir.join(format!("shard-{i}.err")),
            "shard's stderr",
            crate::files::bound::TEXT,
        )
        .ok();
        let said = err.as_deref().and_then(last_line).map(|l| {
            l.trim_start_matches("kvperf: ")
                .trim_start_matches("error: ")
                .to_string()
        });
        let text =
            crate::files::read_input(&json, "shard result", crate::files::bound::STEP_RESULT).ok();
        let why = || {
            said.clone()
                .or_else(|| srun_said.clone())
                .unwrap_or_else(|| format!("srun {}", how(status)))
        };
        // Ended by srun for another shard: slurmstepd's "*** STEP ...
        // CANCELLED" anywhere in its stderr, or a shell's report of the
        // signal ("Terminated") as its last word; a shard failing on its
        // own ends with kvperf's line.
        let cancelled = err.as_deref().is_some_and(|e| e.contains("CANCELLED"))
            || said
                .as_deref()
                .is_some_and(|l| l == "Terminated" || l == "Killed");
        match text.as_deref().map(str::trim) {
            // srun makes a task's files when it starts the task.
            None if err.is_none() => {
                missing.push((false, format!("shard {i}/{n} never started: {}", why())));
            }
            None | Some("") => missing.push((
                cancelled,
                format!("shard {i}/{n} ended without a result: {}", why()),
            )),
            Some(text) => {
                let output = shard_output(text, &format!("shard {i}/{n}"), kept)?;
                parts.push((format!("srun task {i}"), output));
            }
        }
    }
    Ok((parts, missing))
}

/// The step's kvperf command for a launcher whose shards print their
/// result on stdout (no `--output`).
fn printing_args(plan: &Plan, step: &Step, launcher: Launcher) -> anyhow::Result<Vec<String>> {
    let placeholder = Path::new("-");
    let mut args = child::child_args(
        plan.driver,
        plan.settle,
        plan.drop_caches,
        step,
        placeholder,
    );
    let prints = matches!(args.as_slice(), [.., flag, path] if flag == "--output" && path == "-");
    if !prints {
        anyhow::bail!(
            "the {} launcher runs YCSB load and run steps only",
            launcher.name()
        );
    }
    args.truncate(args.len() - 2);
    Ok(args)
}

/// A shard's printed result; a refusal of its input is the step's (the
/// same command would be refused anywhere).
fn shard_output(text: &str, shard: &str, kept: &str) -> anyhow::Result<StepOutput> {
    let output = StepOutput::from_json(text)
        .map_err(|e| anyhow::anyhow!("{shard} wrote an unreadable result: {e:#} {kept}"))?;
    if let Some(StepError {
        kind: ErrorKind::Input,
        message,
    }) = &output.error
    {
        return Err(InputError::Invalid(format!("{shard}: {message}")).into());
    }
    Ok(output)
}

/// The shard that failed first, and why: the cause, where the others were
/// ended for it.
fn first_failed(parts: &[(String, StepOutput)]) -> Option<(Shard, StepError)> {
    parts
        .iter()
        .filter(|(_, o)| o.error.is_some())
        .min_by_key(|(_, o)| o.finished_at_unix_ms)
        .and_then(|(_, o)| o.shard.as_ref().zip(o.error.as_ref()))
        .map(|(s, e)| (s.shard(), e.clone()))
}

/// Every shard's result merged into the step's, carrying the first failed
/// shard's error; prints where each shard ran.
fn merge_shards(
    parts: Vec<(String, StepOutput)>,
    first_failed: Option<(Shard, StepError)>,
    what_passes: &str,
    kept: &str,
) -> anyhow::Result<StepOutput> {
    for (name, o) in &parts {
        if o.shard.is_none() {
            anyhow::bail!(
                "{name} ran the whole step, not a shard of it: {what_passes} did not reach it {kept}"
            );
        }
    }
    let mut merged = crate::results::merge::merge(parts)?;
    if let Some((shard, error)) = first_failed {
        merged.error = Some(StepError {
            kind: error.kind,
            message: format!("shard {shard}: {}", error.message),
        });
    }
    if let Some(info) = &merged.merged {
        let places: Vec<String> = info.shards.iter().map(|s| s.place()).collect();
        eprintln!("        shards ran on: {}", places.join(", "));
    }
    Ok(merged)
}

/// Beside the results file (absolute: srun's tasks may start elsewhere,
/// and on a cluster it must be on a filesystem every node shares).
fn shards_dir(results: &Path) -> anyhow::Result<PathBuf> {
    let results = std::path::absolute(results)
        .with_context(|| format!("cannot make '{}' absolute", results.display()))?;
    let name = results
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy().into_owned());
    Ok(results.with_file_name(format!(".{name}.srun-{}", std::process::id())))
}

/// Checks, before the first step, that the shards' directory is absent
/// or kvperf's own (see [`shard_files`]).
pub(super) fn check_shards_dir(results: &Path) -> Result<(), InputError> {
    let dir = shards_dir(results).map_err(|e| InputError::Invalid(format!("{e:#}")))?;
    shard_files(&dir).map(drop)
}

/// Removes the shards' directory and the shards' files in it, when it
/// holds nothing else: kvperf's own, left by an attempt of a step by a
/// plan of this pid that died. Anything else there is refused, not removed.
fn clear_shards_dir(dir: &Path) -> anyhow::Result<()> {
    let Some(files) = shard_files(dir)? else {
        return Ok(());
    };
    for file in files {
        std::fs::remove_file(&file).with_context(|| {
            format!(
                "cannot remove '{}', left by an earlier attempt",
                file.display()
            )
        })?;
    }
    std::fs::remove_dir(dir).with_context(|| {
        format!(
            "cannot remove '{}', left by an earlier attempt",
            dir.display()
        )
    })
}

/// The files in the shards' directory, all of them shards' results or
/// stderr (`shard-N.json`, `shard-N.err`, regular files); `None` when no
/// directory is there. A directory holding anything else, or anything
/// other than a directory at its name, is not kvperf's: one line.
fn shard_files(dir: &Path) -> Result<Option<Vec<PathBuf>>, InputError> {
    let refuse = |why: String| {
        InputError::Invalid(format!(
            "'{}', where srun's shards write their results, {why}, so kvperf did not make it: move it",
            dir.display()
        ))
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot be checked ({e})"))),
        Ok(meta) => meta,
    };
    if !meta.is_dir() {
        return Err(refuse(format!(
            "is {}",
            crate::files::kind_of(meta.file_type())
        )));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| refuse(format!("cannot be read ({e})")))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| refuse(format!("cannot be read ({e})")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if !regular || !is_shard_file(&name) {
            return Err(refuse(format!("holds '{name}'")));
        }
        files.push(entry.path());
    }
    Ok(Some(files))
}

/// `shard-<digits>.json` or `shard-<digits>.err`, as srun is told to write.
fn is_shard_file(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("shard-") else {
        return false;
    };
    let digits = rest
        .strip_suffix(".json")
        .or_else(|| rest.strip_suffix(".err"));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty())
}

fn how(status: &std::process::ExitStatus) -> String {
    match status.code() {
        Some(c) => format!("exited with {c}"),
        None => "was killed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_read_as_plans_write_them() {
        #[derive(Deserialize)]
        struct T {
            launcher: Launcher,
        }
        let t: T = toml::from_str("launcher = \"srun\"").unwrap();
        assert_eq!(t.launcher, Launcher::Srun);
        assert_eq!(Launcher::default().name(), "local");
        let t: T = toml::from_str("launcher = \"kubernetes\"").unwrap();
        assert_eq!(t.launcher, Launcher::Kubernetes);
        let err = toml::from_str::<T>("launcher = \"k8s\"")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("local") && err.contains("srun") && err.contains("kubernetes"),
            "{err}"
        );
    }

    #[test]
    fn the_shards_directory_is_absolute_and_beside_the_results() {
        let dir = shards_dir(Path::new("r/x.jsonl")).unwrap();
        assert!(dir.is_absolute());
        assert!(dir.ends_with(format!("r/.x.jsonl.srun-{}", std::process::id())));
    }
}
