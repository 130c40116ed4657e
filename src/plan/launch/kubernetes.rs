//! The kubernetes launcher: a step's `clients = N` shards as one Indexed
//! Job (`completionMode: Indexed`, `completions` = `parallelism` = N), so
//! that the Job controller creates every pod at once. Each pod runs the
//! step's kvperf command in the plan's `[kubernetes] image` and is shard
//! `JOB_COMPLETION_INDEX` of `KVPERF_SHARD_COUNT` ([`crate::shard`]); it
//! prints its result, which the launcher reads back with `kubectl logs`
//! (no shared volume needed). Everything goes through `kubectl` with the
//! user's kubeconfig (`KUBECONFIG`) and the plan's `context`/`namespace`;
//! `KVPERF_KUBECTL` names another kubectl program.
//!
//! The launcher creates the Job (and a Secret when the command holds a
//! credential) with `kubectl create`, which refuses a name that exists, so
//! it never takes over an object it did not make; it deletes both when the
//! step ends, however it ends. A pod that is not running within
//! `start_timeout` seconds, or that cannot start at all (a bad image),
//! fails the step with one line naming the pods.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{first_failed, merge_shards, printing_args, shard_output, Launcher};
use crate::files::RESULT_LINE_TAG_VAR;
use crate::plan::child;
use crate::plan::expand::Step;
use crate::plan::Plan;
use crate::private_args::PRIVATE_ARGS;
use crate::results::step::StepOutput;
use crate::shard::{NODE_NAME_VAR, POD_NAMESPACE_VAR, POD_NAME_VAR};

/// The tag before each line of a pod's printed result.
const RESULT_LINE_TAG: &str = "kvperf-result| ";

/// `[kubernetes]` in a plan: where and how the Jobs run. Not part of the
/// plan's identity (like `launcher`): the same study run elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesOptions {
    /// An image with `kvperf` on its PATH.
    #[serde(default = "default_image")]
    pub image: String,
    /// kubectl's `--context`; the kubeconfig's current one if absent.
    pub context: Option<String>,
    /// kubectl's `--namespace`; the context's if absent.
    pub namespace: Option<String>,
    /// Seconds every pod may take to be running (scheduling, image pull).
    #[serde(default = "default_start_timeout")]
    pub start_timeout: u64,
    /// Pods on their node's network (a database on the node's 127.0.0.1).
    #[serde(default)]
    pub host_network: bool,
}

impl KubernetesOptions {
    /// What kubectl and the API server would refuse only when a step
    /// creates its Job: checked when the plan is read, in one line.
    pub fn check(&self) -> Result<(), String> {
        if let Some(ns) = &self.namespace {
            // A namespace is an RFC 1123 label.
            let label = !ns.is_empty()
                && ns.len() <= 63
                && ns
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !ns.starts_with('-')
                && !ns.ends_with('-');
            if !label {
                return Err(format!(
                    "kubernetes.namespace '{}' is not a Kubernetes namespace name (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63)",
                    ns.escape_debug()
                ));
            }
        }
        let word = |value: &str| {
            !value.is_empty()
                && !value.starts_with('-')
                && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        if let Some(context) = self.context.as_deref().filter(|c| !word(c)) {
            return Err(format!(
                "kubernetes.context '{}' is not a kubeconfig context name (empty, a leading '-', spaces or control characters)",
                context.escape_debug()
            ));
        }
        if !word(&self.image) {
            return Err(format!(
                "kubernetes.image '{}' is not an image reference (empty, a leading '-', spaces or control characters)",
                self.image.escape_debug()
            ));
        }
        if self.start_timeout == 0 {
            return Err("kubernetes.start_timeout must be at least 1 second".into());
        }
        Ok(())
    }
}

fn default_image() -> String {
    "kvperf:latest".into()
}

fn default_start_timeout() -> u64 {
    300
}

impl Default for KubernetesOptions {
    fn default() -> Self {
        Self {
            image: default_image(),
            context: None,
            namespace: None,
            start_timeout: default_start_timeout(),
            host_network: false,
        }
    }
}

/// The pods' container, and the key of the Secret's private arguments.
const CONTAINER: &str = "kvperf";
const SECRET_KEY: &str = "args";
/// The label every object of one step carries (Job, Secret, pods).
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Set by the Job controller on each pod of an Indexed Job.
const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// How often the launcher asks for the Job's and pods' state.
const POLL: Duration = Duration::from_secs(1);
/// Container states in which a pod will never start by waiting longer.
const CANNOT_START: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// Runs `step`'s clients as one Indexed Job and merges their results; the
/// command recorded names the Job, with the kvperf command its pods ran.
pub(in crate::plan) fn run(
    plan: &Plan,
    step: &Step,
    _results: &Path,
) -> anyhow::Result<(Vec<String>, StepOutput)> {
    let options = plan.kubernetes.clone().unwrap_or_default();
    let n = step.clients;
    let args = printing_args(plan, step, Launcher::Kubernetes)?;
    let (public, private) = child::split_private(&args);
    let kubectl = Kubectl::new(&options);
    let name = job_name();
    let objects = manifest(&name, n, &options, &public, &private, &step.id.to_string());
    kubectl
        .run(
            &["create", "-f", "-", "-o", "name"],
            Some(&objects.to_string()),
        )
        .map_err(|e| anyhow::anyhow!("cannot create the step's Job {name}: {e}"))?;
    let created = Created {
        kubectl: &kubectl,
        name: &name,
        secret: !private.is_empty(),
    };
    eprintln!(
        "        kubernetes: job/{name}, {n} pods at once (Indexed), image {}{}",
        options.image,
        kubectl.whereabouts()
    );
    let outcome = watch(&kubectl, &name, n, options.start_timeout)
        .and_then(|pods| gather(&kubectl, &name, n, &pods));
    let deleted = created.delete();
    let parts = match (outcome, deleted) {
        (Ok(parts), Ok(())) => parts,
        (Ok(_), Err(e)) => anyhow::bail!("job/{name} ended, but {e}"),
        (Err(e), Ok(())) => anyhow::bail!("{e:#}; job/{name} and its pods were deleted"),
        (Err(e), Err(d)) => anyhow::bail!("{e:#}; and {d}"),
    };
    let first_failed = first_failed(&parts);
    let kept = "";
    let merged = merge_shards(parts, first_failed, "JOB_COMPLETION_INDEX", kept)?;
    let mut command = vec![
        "kubernetes".to_string(),
        format!("job/{name}"),
        "--completion-mode=Indexed".into(),
        format!("--completions={n}"),
        format!("--image={}", options.image),
        CONTAINER.into(),
    ];
    command.extend(args);
    Ok((command, merged))
}

/// A name no earlier step of any plan took: `kvperf-` with the time and
/// this process (a Job's name must be a DNS label; its pods add a suffix).
fn job_name() -> String {
    static SEQUENCE: AtomicU32 = AtomicU32::new(0);
    format!(
        "kvperf-{:x}-{:x}-{}",
        crate::clock::unix_ms(),
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

/// The objects one step creates, as a `List`: the Indexed Job, and a
/// Secret with the arguments that hold a credential (never in the Job's
/// spec, which everyone who may list Jobs reads).
fn manifest(
    name: &str,
    n: u32,
    options: &KubernetesOptions,
    public: &[String],
    private: &[String],
    step: &str,
) -> serde_json::Value {
    use serde_json::json;
    let labels = json!({
        "app.kubernetes.io/name": "kvperf",
        "app.kubernetes.io/managed-by": "kvperf",
        INSTANCE_LABEL: name,
    });
    let field = |path: &str| json!({ "fieldRef": { "fieldPath": path } });
    let mut env = vec![
        json!({ "name": "KVPERF_SHARD_COUNT", "value": n.to_string() }),
        json!({ "name": POD_NAME_VAR, "valueFrom": field("metadata.name") }),
        json!({ "name": POD_NAMESPACE_VAR, "valueFrom": field("metadata.namespace") }),
        json!({ "name": NODE_NAME_VAR, "valueFrom": field("spec.nodeName") }),
        json!({ "name": RESULT_LINE_TAG_VAR, "value": RESULT_LINE_TAG }),
    ];
    let mut items = Vec::new();
    if !private.is_empty() {
        let args = serde_json::to_string(private).unwrap_or_default();
        items.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": name, "labels": labels },
            "type": "Opaque",
            "stringData": { SECRET_KEY: args },
        }));
        env.push(json!({
            "name": PRIVATE_ARGS,
            "valueFrom": { "secretKeyRef": { "name": name, "key": SECRET_KEY } },
        }));
    }
    let mut command = vec!["kvperf".to_string()];
    command.extend(public.iter().cloned());
    items.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": { "kvperf/step": step },
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A retried shard would measure a window of its own, after
            // the others: the step fails instead.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "hostNetwork": options.host_network,
                    "automountServiceAccountToken": false,
                    "containers": [{
                        "name": CONTAINER,
                        "image": options.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": command,
                        "env": env,
                    }],
                },
            },
        },
    }));
    json!({ "apiVersion": "v1", "kind": "List", "items": items })
}

/// kubectl with the plan's context and namespace, each call bounded.
struct Kubectl {
    program: OsString,
    context: Option<String>,
    namespace: Option<String>,
}

impl Kubectl {
    fn new(options: &KubernetesOptions) -> Self {
        Self {
            program: std::env::var_os("KVPERF_KUBECTL").unwrap_or_else(|| "kubectl".into()),
            context: options.context.clone(),
            namespace: options.namespace.clone(),
        }
    }

    /// `, context C, namespace NS` as far as the plan names them.
    fn whereabouts(&self) -> String {
        let mut s = String::new();
        if let Some(c) = &self.context {
            s.push_str(&format!(", context {c}"));
        }
        if let Some(ns) = &self.namespace {
            s.push_str(&format!(", namespace {ns}"));
        }
        s
    }

    /// kubectl's stdout, or its last line on stderr.
    fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        use std::io::Write;
        let mut cmd = Command::new(&self.program);
        // A server that does not answer fails the call, not the plan's wait.
        cmd.arg("--request-timeout=30s");
        if let Some(c) = &self.context {
            cmd.arg(format!("--context={c}"));
        }
        if let Some(ns) = &self.namespace {
            cmd.arg(format!("--namespace={ns}"));
        }
        cmd.args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: killed whole (a wrapper's children too).
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start kubectl ('{}': {e}); the kubernetes launcher needs kubectl",
                Path::new(&self.program).display()
            )
        })?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // kubectl reads all of its input before it answers.
            let _ = pipe.write_all(text.as_bytes());
        }
        // A read may end at an interrupt; a create or delete runs to its
        // end (or the limit), so the launcher knows what exists.
        let reads = matches!(args.first(), Some(&"get" | &"logs"));
        let out = bounded_wait(child, KUBECTL_LIMIT, reads)?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(super::last_line(&stderr)
            .unwrap_or("kubectl failed and said nothing")
            .trim_start_matches("error: ")
            .to_string())
    }
}

/// The longest one kubectl call may take: `--request-timeout` bounds each
/// request it makes, not an auth plugin waiting for a login nor a wrapper
/// (`KVPERF_KUBECTL`) that never answers, which hung the plan for good.
const KUBECTL_LIMIT: Duration = Duration::from_secs(120);

/// `child`'s output once it ends; killed with its process group past
/// `limit`, or at SIGINT/SIGTERM when `interruptible`.
fn bounded_wait(
    mut child: std::process::Child,
    limit: Duration,
    interruptible: bool,
) -> Result<std::process::Output, String> {
    use std::io::Read;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let until = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("lost kubectl: {e}")),
        }
        let interrupted = interruptible && crate::runner::interrupted();
        if interrupted || Instant::now() >= until {
            // SAFETY: kill(2) on the process group the child leads.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            return Err(if interrupted {
                "interrupted while kubectl ran (killed)".into()
            } else {
                format!(
                    "kubectl did not answer within {} s (killed): is it waiting for a login, or is KVPERF_KUBECTL's program stuck?",
                    limit.as_secs()
                )
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// What the launcher created, to be deleted whatever happens.
struct Created<'a> {
    kubectl: &'a Kubectl,
    name: &'a str,
    secret: bool,
}

impl Created<'_> {
    /// Deletes the Job (and Secret), then its pods: the pods go at once
    /// whether or not a garbage collector runs, and a running pod is ended.
    fn delete(&self) -> Result<(), String> {
        let job = format!("job/{}", self.name);
        let secret = format!("secret/{}", self.name);
        let mut objects = vec![job.as_str()];
        if self.secret {
            objects.push(&secret);
        }
        let mut args = vec!["delete", "--ignore-not-found", "--wait=false"];
        args.extend(objects);
        self.kubectl
            .run(&args, None)
            .map_err(|e| format!("could not delete job/{}: {e}", self.name))?;
        let selector = format!("{INSTANCE_LABEL}={}", self.name);
        self.kubectl
            .run(
                &[
                    "delete",
                    "pods",
                    "-l",
                    &selector,
                    "--ignore-not-found",
                    "--wait=false",
                ],
                None,
            )
            .map_err(|e| format!("could not delete the pods of job/{}: {e}", self.name))?;
        Ok(())
    }
}

/// The parts of a Job or Pod the launcher reads (kubectl's JSON).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Object {
    kind: String,
    metadata: Metadata,
    status: Status,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Metadata {
    name: String,
    annotations: BTreeMap<String, String>,
    creation_timestamp: String,
    /// Set once someone deleted the object (it may linger while it ends).
    deletion_timestamp: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Status {
    phase: String,
    conditions: Vec<Condition>,
    container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    reason: String,
    message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ContainerStatus {
    state: ContainerState,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ContainerState {
    waiting: Option<Reason>,
    terminated: Option<Terminated>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Reason {
    reason: String,
    message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Terminated {
    exit_code: i32,
    reason: String,
    message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ObjectList {
    items: Vec<Object>,
}

impl Object {
    fn condition(&self, kind: &str) -> Option<&Condition> {
        self.status
            .conditions
            .iter()
            .find(|c| c.kind == kind && c.status == "True")
    }

    fn index(&self) -> Option<u32> {
        self.metadata
            .annotations
            .get(INDEX_ANNOTATION)?
            .parse()
            .ok()
    }

    fn container(&self) -> Option<&ContainerState> {
        self.status.container_statuses.first().map(|c| &c.state)
    }

    /// Why a pod that is not running has not started, as far as it says.
    fn pending_because(&self) -> String {
        if let Some(w) = self.container().and_then(|s| s.waiting.as_ref()) {
            return join(&w.reason, &w.message);
        }
        match self
            .status
            .conditions
            .iter()
            .find(|c| c.kind == "PodScheduled")
        {
            Some(c) if c.status == "True" => "scheduled, not running yet".into(),
            Some(c) => join(&c.reason, &c.message),
            None => "not scheduled: no scheduler has placed it on a node".into(),
        }
    }

    /// A pod that cannot start by waiting: its image cannot be pulled, its
    /// container cannot be made.
    fn cannot_start(&self) -> bool {
        self.container()
            .and_then(|s| s.waiting.as_ref())
            .is_some_and(|w| CANNOT_START.contains(&w.reason.as_str()))
    }
}

fn join(reason: &str, message: &str) -> String {
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_string(),
        (true, false) => message.to_string(),
        (true, true) => "no reason given".into(),
    }
}

/// The newest pod of each index (a pod the Job controller replaced is
/// older), by index.
fn pods_by_index(objects: &[Object]) -> BTreeMap<u32, &Object> {
    let mut pods: BTreeMap<u32, &Object> = BTreeMap::new();
    for pod in objects.iter().filter(|o| o.kind == "Pod") {
        let Some(index) = pod.index() else { continue };
        let newer = pods
            .get(&index)
            .is_none_or(|p| p.metadata.creation_timestamp <= pod.metadata.creation_timestamp);
        if newer {
            pods.insert(index, pod);
        }
    }
    pods
}

/// Waits until the Job has ended (complete or failed), or fails when a pod
/// is not running `start_timeout` seconds after the Job was created; the
/// pods as they were last seen.
fn watch(kubectl: &Kubectl, name: &str, n: u32, start_timeout: u64) -> anyhow::Result<Vec<Object>> {
    let created = Instant::now();
    let limit = Duration::from_secs(start_timeout);
    let selector = format!("{INSTANCE_LABEL}={name}");
    let mut started = false;
    let mut seen = BTreeMap::new();
    loop {
        if crate::runner::interrupted() {
            anyhow::bail!("interrupted while job/{name} ran");
        }
        let text = kubectl
            .run(&["get", "jobs,pods", "-l", &selector, "-o", "json"], None)
            .map_err(|e| anyhow::anyhow!("lost job/{name}: {e}"))?;
        let list: ObjectList = serde_json::from_str(&text)
            .with_context(|| format!("kubectl's JSON for job/{name} does not read"))?;
        let job = list.items.iter().find(|o| o.kind == "Job");
        let Some(job) = job else {
            anyhow::bail!("job/{name} is gone: someone else deleted it");
        };
        let mut deleted = deleted_pods(&mut seen, &list.items);
        if !deleted.is_empty() {
            if deleted.len() > 1 {
                deleted = not_by_the_job_controller(kubectl, name, deleted);
            }
            anyhow::bail!("{}", were_deleted(&deleted, n));
        }
        if job.condition("Complete").is_some() || job.condition("Failed").is_some() {
            return Ok(list.items);
        }
        if !started {
            let pods = pods_by_index(&list.items);
            let waiting: Vec<(u32, &Object)> = (0..n)
                .filter_map(|i| match pods.get(&i) {
                    Some(p) if p.status.phase == "Pending" || p.status.phase.is_empty() => {
                        Some((i, *p))
                    }
                    _ => None,
                })
                .collect();
            let absent = (0..n).filter(|i| !pods.contains_key(i)).count();
            started = waiting.is_empty() && absent == 0;
            let hopeless: Vec<_> = waiting.iter().filter(|(_, p)| p.cannot_start()).collect();
            if !hopeless.is_empty() {
                anyhow::bail!("{}", never_started(&hopeless, n, None));
            }
            if !started && created.elapsed() >= limit {
                if pods.is_empty() {
                    anyhow::bail!(
                        "job/{name} made no pods within {start_timeout} s (is a Job controller, kube-controller-manager, running?)"
                    );
                }
                let waiting: Vec<_> = waiting.iter().collect();
                let mut line = never_started(&waiting, n, Some(start_timeout));
                if absent > 0 {
                    line.push_str(&format!("; {absent} of {n} pods were never created"));
                }
                anyhow::bail!("{line}");
            }
        }
        std::thread::sleep(POLL);
    }
}

/// The step's pods that someone deleted while it ran (the launcher deletes
/// them only once the step has ended): marked for deletion, or seen at an
/// earlier poll (`seen`, by index, updated here) and gone now.
fn deleted_pods(seen: &mut BTreeMap<u32, String>, objects: &[Object]) -> Vec<(u32, String)> {
    let pods: Vec<(u32, &Object)> = objects
        .iter()
        .filter(|o| o.kind == "Pod")
        .filter_map(|p| Some((p.index()?, p)))
        .collect();
    let listed = |name: &str| pods.iter().any(|(_, p)| p.metadata.name == name);
    let mut deleted: Vec<(u32, String)> = seen
        .iter()
        .filter(|(_, name)| !listed(name))
        .map(|(i, name)| (*i, name.clone()))
        .collect();
    for (i, pod) in &pods {
        if !pod.metadata.deletion_timestamp.is_empty() {
            deleted.push((*i, pod.metadata.name.clone()));
        }
        seen.insert(*i, pod.metadata.name.clone());
    }
    deleted.sort();
    deleted.dedup();
    deleted
}

/// Of several deleted pods, those the Job controller did not delete: once
/// one pod is gone, a Job of `backoffLimit: 0` fails and its controller
/// deletes the others, recording `Deleted pod: NAME` on the Job. All of
/// them when its events say nothing (a second look after a poll's wait:
/// events are recorded after the deletion).
fn not_by_the_job_controller(
    kubectl: &Kubectl,
    name: &str,
    deleted: Vec<(u32, String)>,
) -> Vec<(u32, String)> {
    let selector =
        format!("involvedObject.kind=Job,involvedObject.name={name},reason=SuccessfulDelete");
    for attempt in 0..2 {
        if attempt > 0 {
            std::thread::sleep(POLL);
        }
        let Ok(text) = kubectl.run(
            &["get", "events", "--field-selector", &selector, "-o", "json"],
            None,
        ) else {
            break;
        };
        let said: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let by_controller = |pod: &str| {
            said["items"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["message"].as_str() == Some(&format!("Deleted pod: {pod}")))
        };
        let others: Vec<(u32, String)> = deleted
            .iter()
            .filter(|(_, pod)| !by_controller(pod))
            .cloned()
            .collect();
        if !others.is_empty() && others.len() < deleted.len() {
            return others;
        }
    }
    deleted
}

/// `pod P (shard 1/2) was deleted while the step ran`, for one or more.
fn were_deleted(pods: &[(u32, String)], n: u32) -> String {
    let each: Vec<String> = pods
        .iter()
        .map(|(i, name)| format!("pod {name} (shard {i}/{n})"))
        .collect();
    match each.as_slice() {
        [one] => format!("{one} was deleted while the step ran (not by kvperf)"),
        [init @ .., last] => format!(
            "{} and {last} were deleted while the step ran (not by kvperf)",
            init.join(", ")
        ),
        [] => String::new(),
    }
}

/// `shards 0/2 and 1/2 never started within 5 s: pod P (shard 0/2):
/// why; ...`.
fn never_started(pods: &[&(u32, &Object)], n: u32, within: Option<u64>) -> String {
    let shards: Vec<String> = pods.iter().map(|(i, _)| format!("{i}/{n}")).collect();
    let which = match shards.as_slice() {
        [one] => format!("shard {one}"),
        [init @ .., last] => format!("shards {} and {last}", init.join(", ")),
        [] => "no shard".into(),
    };
    let when = within.map_or(String::new(), |s| format!(" within {s} s"));
    let each: Vec<String> = pods
        .iter()
        .map(|(i, p)| {
            format!(
                "pod {} (shard {i}/{n}) {}",
                p.metadata.name,
                p.pending_because()
            )
        })
        .collect();
    format!("{which} never started{when}: {}", each.join("; "))
}

/// Each index's result from its pod's log; a shard without one fails the
/// step with one line naming its pod.
fn gather(
    kubectl: &Kubectl,
    name: &str,
    n: u32,
    objects: &[Object],
) -> anyhow::Result<Vec<(String, StepOutput)>> {
    let pods = pods_by_index(objects);
    let mut parts = Vec::with_capacity(n as usize);
    let mut missing = Vec::new();
    for i in 0..n {
        let Some(pod) = pods.get(&i) else {
            missing.push(format!("shard {i}/{n} has no pod"));
            continue;
        };
        let pod_name = &pod.metadata.name;
        let log = kubectl.run(&["logs", pod_name, "-c", CONTAINER], None);
        let result = log.as_deref().ok().and_then(printed_result);
        match result {
            Some(text) => {
                let output = shard_output(&text, &format!("shard {i}/{n} (pod {pod_name})"), "")?;
                parts.push((format!("pod {pod_name}"), output));
            }
            None => {
                let said = match &log {
                    Ok(text) => super::last_line(text).map(str::to_string),
                    Err(e) => Some(format!("no log: {e}")),
                };
                let ended = pod
                    .container()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| {
                        format!(
                            "exit code {}{}",
                            t.exit_code,
                            match join(&t.reason, &t.message).as_str() {
                                "no reason given" => String::new(),
                                r => format!(", {r}"),
                            }
                        )
                    });
                let why = [said, ended]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; ");
                missing.push(format!(
                    "shard {i}/{n} (pod {pod_name}, {}) ended without a result: {why}",
                    if pod.status.phase.is_empty() {
                        "no phase"
                    } else {
                        &pod.status.phase
                    }
                ));
            }
        }
    }
    if let Some(first) = missing.first() {
        let others = match missing.len() {
            1 => String::new(),
            k => format!(" ({} more shards of job/{name} without one)", k - 1),
        };
        let cause = first_failed(&parts)
            .map(|(s, e)| format!("; shard {s} failed first: {}", e.message))
            .unwrap_or_default();
        anyhow::bail!("{first}{others}{cause}");
    }
    Ok(parts)
}

/// The JSON result a shard printed (pretty, from a line `{` to a line
/// `}`) among its log's other lines (its stderr: status lines, warnings).
fn printed_result(log: &str) -> Option<std::borrow::Cow<'_, str>> {
    // Each line of the result is tagged: lines of stderr the log put
    // between them are left out.
    let tagged: Vec<&str> = log
        .lines()
        .filter_map(|line| line.strip_prefix(RESULT_LINE_TAG))
        .collect();
    if !tagged.is_empty() {
        return Some(tagged.join("\n").into());
    }
    untagged_result(log).map(Into::into)
}

/// The result printed by a kvperf that tags no line (an older image).
fn untagged_result(log: &str) -> Option<&str> {
    let start = log
        .match_indices("\n{\n")
        .map(|(i, _)| i + 1)
        .chain(log.starts_with("{\n").then_some(0))
        .min()?;
    let end = log[start..].find("\n}").map(|i| start + i + 2)?;
    Some(&log[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, index: u32, created: &str, phase: &str, extra: serde_json::Value) -> Object {
        let mut v = serde_json::json!({
            "kind": "Pod",
            "metadata": {
                "name": name,
                "creationTimestamp": created,
                "annotations": { INDEX_ANNOTATION: index.to_string() },
            },
            "status": { "phase": phase },
        });
        if let (Some(status), Some(extra)) = (v["status"].as_object_mut(), extra.as_object()) {
            status.extend(extra.clone());
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_job_is_indexed_with_every_pod_at_once_and_no_credential_in_its_spec() {
        let options = KubernetesOptions::default();
        let public = vec!["run".to_string(), "--engine".into(), "redis".into()];
        let private = vec!["-p".to_string(), "redis.password=hush".into()];
        let list = manifest("kvperf-x", 3, &options, &public, &private, "load a");
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        let (secret, job) = (&items[0], &items[1]);
        assert_eq!(secret["kind"], "Secret");
        assert!(!job.to_string().contains("hush"), "{job}");
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 3);
        assert_eq!(spec["parallelism"], 3);
        assert_eq!(spec["backoffLimit"], 0);
        let c = &spec["template"]["spec"]["containers"][0];
        assert_eq!(
            c["command"],
            serde_json::json!(["kvperf", "run", "--engine", "redis"])
        );
        let env = c["env"].as_array().unwrap();
        let var = |name: &str| env.iter().find(|e| e["name"] == name).cloned();
        assert_eq!(var("KVPERF_SHARD_COUNT").unwrap()["value"], "3");
        assert_eq!(
            var(POD_NAME_VAR).unwrap()["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name"
        );
        assert_eq!(
            var(PRIVATE_ARGS).unwrap()["valueFrom"]["secretKeyRef"]["name"],
            "kvperf-x"
        );
        let labels = &spec["template"]["metadata"]["labels"];
        assert_eq!(labels[INSTANCE_LABEL], "kvperf-x");
        // No credential: no Secret.
        let list = manifest("kvperf-y", 2, &options, &public, &[], "run a");
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn job_names_are_dns_labels_and_differ() {
        let (a, b) = (job_name(), job_name());
        assert_ne!(a, b);
        for name in [a, b] {
            assert!(name.len() <= 50, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
        }
    }

    #[test]
    fn the_result_is_found_among_the_logs_other_lines() {
        let log = "kvperf: warning: x\n{\n  \"a\": {\n    \"b\": 1\n  }\n}\n10 sec: late line\n";
        assert_eq!(
            printed_result(log).as_deref(),
            Some("{\n  \"a\": {\n    \"b\": 1\n  }\n}")
        );
        assert_eq!(printed_result("{\n}\n").as_deref(), Some("{\n}"));
        assert_eq!(printed_result("kvperf: cannot reach Redis\n"), None);
        // A pod's log mixes stderr into the result line by line (seen:
        // "key must be a string at line 219"): tagged lines are kept alone.
        let mixed = "kvperf-result| {\nkvperf: warning: late\nkvperf-result|   \"b\": 1\nkvperf-result| }\n";
        assert_eq!(printed_result(mixed).as_deref(), Some("{\n  \"b\": 1\n}"));
    }

    #[test]
    fn the_newest_pod_of_each_index_counts_and_says_why_it_waits() {
        let unscheduled = pod(
            "p-0-a",
            0,
            "2026-01-01T00:00:00Z",
            "Pending",
            serde_json::json!({}),
        );
        let old = pod(
            "p-1-a",
            1,
            "2026-01-01T00:00:00Z",
            "Failed",
            serde_json::json!({}),
        );
        let pulling = pod(
            "p-1-b",
            1,
            "2026-01-01T00:00:05Z",
            "Pending",
            serde_json::json!({
                "conditions": [{ "type": "PodScheduled", "status": "True" }],
                "containerStatuses": [{ "state": { "waiting": {
                    "reason": "ImagePullBackOff", "message": "no such image" } } }],
            }),
        );
        let objects = [unscheduled, old, pulling];
        let pods = pods_by_index(&objects);
        assert_eq!(pods[&1].metadata.name, "p-1-b");
        assert!(pods[&1].cannot_start());
        assert!(!pods[&0].cannot_start());
        let waiting = [(0, pods[&0]), (1, pods[&1])];
        let refs: Vec<_> = waiting.iter().collect();
        let line = never_started(&refs, 2, Some(5));
        assert_eq!(
            line,
            "shards 0/2 and 1/2 never started within 5 s: pod p-0-a (shard 0/2) not scheduled: no scheduler has placed it on a node; pod p-1-b (shard 1/2) ImagePullBackOff: no such image"
        );
    }

    #[test]
    fn a_pod_deleted_or_gone_while_the_step_runs_is_named() {
        let mut seen = BTreeMap::new();
        let running = |name: &str, i: u32| {
            pod(
                name,
                i,
                "2026-01-01T00:00:00Z",
                "Running",
                serde_json::json!({}),
            )
        };
        let both = [running("p-0", 0), running("p-1", 1)];
        assert!(deleted_pods(&mut seen, &both).is_empty());
        let mut marked = running("p-1", 1);
        marked.metadata.deletion_timestamp = "2026-01-01T00:00:09Z".into();
        let deleted = deleted_pods(&mut seen, &[running("p-0", 0), marked]);
        assert_eq!(deleted, [(1, "p-1".to_string())]);
        assert_eq!(
            were_deleted(&deleted, 2),
            "pod p-1 (shard 1/2) was deleted while the step ran (not by kvperf)"
        );
        // Gone at the next poll, p-0 marked too.
        let mut marked = running("p-0", 0);
        marked.metadata.deletion_timestamp = "2026-01-01T00:00:10Z".into();
        let deleted = deleted_pods(&mut seen, &[marked]);
        assert_eq!(deleted, [(0, "p-0".to_string()), (1, "p-1".to_string())]);
        assert!(were_deleted(&deleted, 2)
            .starts_with("pod p-0 (shard 0/2) and pod p-1 (shard 1/2) were deleted"));
    }

    #[test]
    fn plans_read_the_kubernetes_table_and_refuse_unknown_keys() {
        let o: KubernetesOptions = toml::from_str("image = \"x:1\"\nstart_timeout = 5").unwrap();
        assert_eq!(o.image, "x:1");
        assert_eq!(o.start_timeout, 5);
        assert!(!o.host_network);
        let err = toml::from_str::<KubernetesOptions>("imag = \"x\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("imag"), "{err}");
    }
}
