//! The kubernetes launcher and the shipped deploy/k8s manifests against a
//! real single-node Kubernetes v1.34.0: the control plane of
//! `scripts/k8s-apiserver.sh` (etcd, kube-apiserver,
//! kube-controller-manager) for what needs only the API, and the whole
//! node of `scripts/k8s-node.sh` (plus kube-scheduler, a kubelet,
//! containerd and runc) for pods that run: a plan step of two clients as
//! two pods on the host network against a Redis the plan starts, with
//! kvperf's image built from the test's own binary and imported (no
//! registry).
//!
//! When the tests run: the scripts build the four binaries from the Go
//! module proxy in one `go build` (about an hour on 2 busy cores), too
//! long for a test binary and for CI's budget on a fresh machine. So the
//! tests start the cluster only when the binaries are already cached
//! (`scripts/k8s-apiserver.sh build` beforehand, or `KVPERF_K8S_BUILD=1`
//! to let the test build them), and otherwise skip with that reason, under
//! CI too: the only skip CI allows. Once the binaries are there, anything
//! else that stops the cluster (not root, a script fails: its last line
//! says which part and why) skips with the reason, except under CI
//! (`CI=true`), where it fails. The tests that need only kubectl (bad
//! input, an unknown context) run wherever kubectl is
//! (scripts/ensure-deps.sh installs it).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::RwLockReadGuard;

use crate::common::machine::{self, Ready};
use std::time::{Duration, Instant};

#[cfg(feature = "redis")]
use crate::common::failed_line;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Why the cluster does not run here: the binaries are not built (a skip
/// under CI too), or anything else (a failure under CI).
#[derive(Clone)]
enum NotHere {
    NotBuilt(String),
    Other(String),
}

/// Runs `script` (with `args`) as root: Ok, or its last line on stderr.
fn run_script(script: &str, args: &[&str]) -> Result<String, NotHere> {
    let path = repo(script);
    let out = Command::new(&path)
        .args(args)
        .output()
        .map_err(|e| NotHere::Other(format!("cannot run {script}: {e}")))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("").trim().to_string();
    if !out.status.success() {
        return Err(NotHere::Other(format!("{script} failed: {last}")));
    }
    Ok(last)
}

/// Starts the control plane (again after a docs block stopped it): its
/// kubeconfig, or why not.
fn control_plane_here(held: &Held) -> Result<PathBuf, NotHere> {
    static READY: Ready<Result<PathBuf, NotHere>> = Ready::new();
    READY.get(held, || {
            let script = repo("scripts/k8s-apiserver.sh");
            let built = Command::new(&script).arg("built").output();
            let built = built.map_err(|e| NotHere::Other(format!("cannot run {}: {e}", script.display())))?;
            if !built.status.success() && std::env::var("KVPERF_K8S_BUILD").as_deref() != Ok("1") {
                return Err(NotHere::NotBuilt(format!(
                    "Kubernetes' binaries are not built ({}); building them takes about an hour on 2 cores, so the tests (CI too) use them only when cached: run `scripts/k8s-apiserver.sh build` first, or set KVPERF_K8S_BUILD=1",
                    String::from_utf8_lossy(&built.stdout).trim()
                )));
            }
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                return Err(NotHere::Other("not root: scripts/k8s-apiserver.sh installs etcd-server and keeps its state in /var/lib".into()));
            }
            if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
                return Err(NotHere::Other("no kubectl on the PATH (scripts/ensure-deps.sh --with-chromium installs it)".into()));
            }
            let started = Instant::now();
            let last = run_script("scripts/k8s-apiserver.sh", &[])?;
            eprintln!("control plane ready in {:.1} s: {last}", started.elapsed().as_secs_f64());
            Ok(Path::new(&state_dir()).join("kubeconfig"))
    })
}

fn state_dir() -> String {
    std::env::var("KVPERF_K8S_STATE").unwrap_or_else(|_| "/var/lib/kvperf-k8s".into())
}

/// The node's name (scripts/k8s-node.sh).
const NODE: &str = "localhost";
/// The image the pods run: this test binary's kvperf (scripts/k8s-node.sh image).
const IMAGE: &str = "kvperf.local/kvperf:suite";

/// Starts the whole node (after the control plane; again after a docs
/// block stopped it) and imports kvperf's image: the kubeconfig, or why not.
fn node_here(held: &Held) -> Result<PathBuf, NotHere> {
    static READY: Ready<Result<PathBuf, NotHere>> = Ready::new();
    READY.get(held, || {
        let kubeconfig = control_plane_here(held)?;
        let started = Instant::now();
        let last = run_script("scripts/k8s-node.sh", &[])?;
        eprintln!(
            "node ready in {:.1} s: {last}",
            started.elapsed().as_secs_f64()
        );
        let last = run_script(
            "scripts/k8s-node.sh",
            &["image", IMAGE, env!("CARGO_BIN_EXE_kvperf")],
        )?;
        eprintln!("{last}");
        Ok(kubeconfig)
    })
}

/// The single-node Kubernetes, held shared while a test uses it.
type Held = RwLockReadGuard<'static, u64>;

/// The cluster held and its kubeconfig when the test can go on; else
/// SKIPPED through the shared helper (a failure under CI, unless the
/// binaries are not built).
fn go_on(
    test: &str,
    here: impl FnOnce(&Held) -> Result<PathBuf, NotHere>,
) -> Option<(Held, PathBuf)> {
    let held = machine::KUBERNETES.shared();
    match here(&held) {
        Ok(kubeconfig) => Some((held, kubeconfig)),
        Err(NotHere::NotBuilt(why)) => {
            common::note_skip(&format!("SKIPPED {test}: {why}"));
            None
        }
        Err(NotHere::Other(why)) => {
            common::skip_unless_ci(test, &why);
            None
        }
    }
}

fn control_plane(test: &str) -> Option<(Held, PathBuf)> {
    go_on(test, control_plane_here)
}

fn node(test: &str) -> Option<(Held, PathBuf)> {
    go_on(test, node_here)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> common::Output {
    let out = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs");
    common::Output::from(out)
}

/// `kubectl apply --dry-run=server -f file` in `ns`.
fn dry_run(kubeconfig: &Path, ns: &str, file: &Path) -> common::Output {
    kubectl(
        kubeconfig,
        &[
            "apply",
            "--dry-run=server",
            "-n",
            ns,
            "-f",
            file.to_str().unwrap(),
        ],
    )
}

/// A namespace of the test's own, deleted when dropped.
struct Namespace<'a> {
    name: String,
    kubeconfig: &'a Path,
}

impl<'a> Namespace<'a> {
    /// Made, with its `default` service account (which pods need) there.
    fn new(kubeconfig: &'a Path, test: &str) -> Self {
        let name = format!("kvperf-{test}-{}", std::process::id());
        let out = kubectl(kubeconfig, &["create", "namespace", &name]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let started = Instant::now();
        while kubectl(
            kubeconfig,
            &["get", "serviceaccount", "default", "-n", &name],
        )
        .code
            != 0
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no default service account in {name} after 60 s: is kube-controller-manager running?"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Self { name, kubeconfig }
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let _ = kubectl(
            self.kubeconfig,
            &["delete", "namespace", &self.name, "--wait=false"],
        );
    }
}

#[test]
fn the_shipped_manifests_pass_server_side_validation_and_a_bad_one_does_not() {
    let test = "shipped_manifests";
    let Some((_cluster, kubeconfig)) = control_plane(test) else {
        return;
    };
    let ns = Namespace::new(&kubeconfig, "manifests");
    let files = [
        "results-volume.yaml",
        "load-job.yaml",
        "run-job.yaml",
        "merge-job.yaml",
    ];
    for file in files {
        let path = repo("deploy/k8s").join(file);
        let out = dry_run(&kubeconfig, &ns.name, &path);
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        assert!(
            out.stdout.contains("(server dry run)"),
            "{file}: {}",
            out.stdout
        );
    }
    // The server does validate: an Indexed Job whose parallelism is not a
    // number, and one with an unknown completion mode, are refused.
    let run = std::fs::read_to_string(repo("deploy/k8s/run-job.yaml")).unwrap();
    for (from, to) in [
        ("completionMode: Indexed", "completionMode: Sideways"),
        ("parallelism: 4", "parallelism: four"),
    ] {
        assert!(run.contains(from));
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, run.replace(from, to)).unwrap();
        let out = dry_run(&kubeconfig, &ns.name, &bad);
        assert_ne!(out.code, 0, "{to} passed: {}", out.stdout);
    }
}

/// A plan of one run step of two clients of Redis (which the plan itself
/// never reaches: the pods would), launched by the kubernetes launcher
/// with `kubernetes` as its `[kubernetes]` table.
#[cfg(feature = "redis")]
fn plan_text(kubernetes: &str) -> String {
    format!(
        r#"
name = "kubernetes"
driver = "ycsb"
settle = false
launcher = "kubernetes"
[kubernetes]
{kubernetes}
[properties]
recordcount = 100
operationcount = 400
"redis.host" = "redis.example.invalid"
[[configs]]
name = "redis"
engine = "redis"
[[steps]]
workloads = ["c"]
threads = [1]
clients = 2
"#
    )
}

#[cfg(feature = "redis")]
fn plan_command(dir: &Path, plan: &str, results: &Path) -> Command {
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.arg("plan")
        .arg("run")
        .arg(dir.join("plan.toml"))
        .arg("--results")
        .arg(results)
        .current_dir(dir)
        .env_remove("KVPERF_SHARD")
        .env_remove("JOB_COMPLETION_INDEX");
    cmd
}

#[cfg(feature = "redis")]
fn output(out: std::process::Output) -> common::Output {
    common::Output::from(out)
}

/// What `kubectl get jobs,pods -l SELECTOR -o json` lists.
#[cfg(feature = "redis")]
fn objects(kubeconfig: &Path, ns: &str, selector: &str) -> Vec<serde_json::Value> {
    let out = kubectl(
        kubeconfig,
        &["get", "jobs,pods", "-n", ns, "-l", selector, "-o", "json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

#[cfg(feature = "redis")]
#[test]
fn the_launcher_creates_an_indexed_job_and_fails_in_bounded_time_naming_the_pods_that_never_started(
) {
    let test = "launcher_indexed_job";
    let Some((_cluster, kubeconfig)) = control_plane(test) else {
        return;
    };
    let ns = Namespace::new(&kubeconfig, "launcher");
    // Pods that no node can take, whether or not the node of
    // scripts/k8s-node.sh runs (another test may have started it): each
    // asks for 1000 CPUs by default in this namespace.
    let limits = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        limits.path(),
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: no-room\nspec:\n  limits:\n  - type: Container\n    default: { cpu: \"1000\" }\n    defaultRequest: { cpu: \"1000\" }\n",
    )
    .unwrap();
    let out = kubectl(
        &kubeconfig,
        &[
            "apply",
            "-n",
            &ns.name,
            "-f",
            limits.path().to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dir = tempfile::tempdir().unwrap();
    // The real kubectl, keeping a copy of what the launcher creates.
    let created = dir.path().join("created.json");
    let wrapper = dir.path().join("kubectl-keeping-what-it-creates");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = create ]; then tee '{}' | kubectl \"$@\"; exit $?; fi\ndone\nexec kubectl \"$@\"\n",
            created.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let start_timeout = 5;
    let plan = plan_text(&format!(
        "image = \"kvperf:never-pulled\"\nnamespace = \"{}\"\nstart_timeout = {start_timeout}",
        ns.name
    ));
    let results = dir.path().join("results.jsonl");
    let started = Instant::now();
    let child = plan_command(dir.path(), &plan, &results)
        .env("KUBECONFIG", &kubeconfig)
        .env("KVPERF_KUBECTL", &wrapper)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // While the launcher waits: its Job, and the two pods the Job
    // controller made for it, Pending (nothing schedules them here).
    let selector = "app.kubernetes.io/managed-by=kvperf";
    let seen = loop {
        let items = objects(&kubeconfig, &ns.name, selector);
        let pods = items.iter().filter(|o| o["kind"] == "Pod").count();
        if pods == 2 {
            break items;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no Job with 2 pods after 60 s: {items:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let job = seen.iter().find(|o| o["kind"] == "Job").expect("the Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 2);
    assert_eq!(spec["parallelism"], 2, "every pod at once");
    assert_eq!(spec["backoffLimit"], 0);
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(container["command"][0], "kvperf");
    assert_eq!(container["command"][1], "run");
    let mut pods: Vec<(String, String)> = seen
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|p| {
            assert_eq!(p["status"]["phase"], "Pending", "{p}");
            (
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                p["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pods.sort();
    assert_eq!(
        pods.iter().map(|(i, _)| i.as_str()).collect::<Vec<_>>(),
        ["0", "1"]
    );

    let out = output(child.wait_with_output().unwrap());
    let took = started.elapsed();
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        took < Duration::from_secs(start_timeout + 30),
        "bounded: {took:?} for a {start_timeout} s start timeout"
    );
    let line = failed_line(&out.stderr);
    assert!(
        line.contains(&format!(
            "shards 0/2 and 1/2 never started within {start_timeout} s"
        )),
        "{line}"
    );
    for (i, name) in &pods {
        assert!(
            line.contains(&format!("pod {name} (shard {i}/2)")),
            "{name}: {line}"
        );
    }
    // No scheduler (the control plane alone), or no node with room.
    assert!(
        line.contains("not scheduled") || line.contains("Insufficient cpu"),
        "{line}"
    );
    assert!(line.contains("and its pods were deleted"), "{line}");
    assert!(
        common::lines(&results).is_empty(),
        "nothing partial recorded"
    );

    // What the launcher created is gone (pods leave once the Job
    // controller has taken its finalizer off them).
    let gone = Instant::now();
    loop {
        let left = objects(&kubeconfig, &ns.name, selector);
        if left.is_empty() {
            break;
        }
        assert!(
            gone.elapsed() < Duration::from_secs(30),
            "still there 30 s after the step: {:?}",
            left.iter()
                .map(|o| &o["metadata"]["name"])
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The generated objects pass the server's validation as they are.
    let out = dry_run(&kubeconfig, &ns.name, &created);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("job.batch/kvperf-"), "{}", out.stdout);
}

#[cfg(feature = "redis")]
#[test]
fn an_unknown_kubectl_context_fails_the_step_with_one_line() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        common::skip_unless_ci(
            "an_unknown_kubectl_context",
            "no kubectl on the PATH (scripts/ensure-deps.sh --with-chromium installs it)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("empty-kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    let results = dir.path().join("results.jsonl");
    let plan = plan_text("context = \"no-such-context\"\nstart_timeout = 5");
    let out = output(
        plan_command(dir.path(), &plan, &results)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap(),
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = failed_line(&out.stderr);
    assert!(line.contains("cannot create the step's Job"), "{line}");
    assert!(line.contains("no-such-context"), "kubectl's reason: {line}");
}

#[cfg(feature = "redis")]
#[test]
fn a_missing_kubectl_and_a_bad_kubernetes_table_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let out = output(
        plan_command(dir.path(), &plan_text(""), &results)
            .env("KVPERF_KUBECTL", dir.path().join("no-kubectl"))
            .output()
            .unwrap(),
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = failed_line(&out.stderr);
    assert!(
        line.contains("the kubernetes launcher needs kubectl"),
        "{line}"
    );

    let out = output(
        plan_command(dir.path(), &plan_text("imag = \"typo\""), &results)
            .output()
            .unwrap(),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("imag"), "{}", out.stderr);
}

/// A plan whose steps run as pods on the host network against the Redis
/// on `port` that the plan starts; `steps` are its `[[steps]]` entries.
#[cfg(feature = "redis")]
fn node_plan(ns: &str, port: u16, operations: u64, steps: &str) -> String {
    format!(
        r#"
name = "kubernetes-node"
driver = "ycsb"
settle = false
launcher = "kubernetes"
[kubernetes]
image = "{IMAGE}"
namespace = "{ns}"
host_network = true
start_timeout = 180
[properties]
recordcount = 1000
operationcount = {operations}
fieldcount = 2
fieldlength = 40
[[configs]]
name = "redis"
engine = "redis"
servers = [{{ name = "redis", port = {port} }}]
{steps}
"#
    )
}

/// Waits (60 s at most) until nothing the launcher made is left in `ns`.
#[cfg(feature = "redis")]
fn assert_all_deleted(kubeconfig: &Path, ns: &str) {
    let gone = Instant::now();
    loop {
        let left = objects(kubeconfig, ns, "app.kubernetes.io/managed-by=kvperf");
        if left.is_empty() {
            return;
        }
        assert!(
            gone.elapsed() < Duration::from_secs(60),
            "still there 60 s after the step: {:?}",
            left.iter()
                .map(|o| &o["metadata"]["name"])
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(feature = "redis")]
#[test]
fn a_plan_step_with_two_clients_runs_as_two_pods_on_the_node_and_merges_exactly() {
    let test = "two_pods_on_the_node";
    let Some((_cluster, kubeconfig)) = node(test) else {
        return;
    };
    // The plan starts its own Redis; check first that this machine can.
    let Some(probe) = common::server::Server::start("redis", test) else {
        return;
    };
    drop(probe);
    let ns = Namespace::new(&kubeconfig, "pods");
    let dir = tempfile::tempdir().unwrap();
    let steps = "[[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [2]\nclients = 2\n[[steps]]\nworkloads = [\"a\"]\nthreads = [2]\nclients = 2\n";
    let plan = node_plan(&ns.name, common::server::free_port(), 4000, steps);
    let results = dir.path().join("results.jsonl");
    let out = output(
        plan_command(dir.path(), &plan, &results)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("kubernetes: job/kvperf-"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("shards ran on: pod "), "{}", out.stderr);
    let lines = common::lines(&results);
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    let mut pods = Vec::new();
    for (what, r) in [("load", &lines[0]), ("run", &lines[1])] {
        common::assert_merged_is_the_sum(what, &r.output);
        assert_eq!(
            r.command.first().map(String::as_str),
            Some("kubernetes"),
            "{:?}",
            r.command
        );
        let info = r.output.merged.as_ref().unwrap();
        for (i, shard) in info.shards.iter().enumerate() {
            let place = shard
                .kubernetes
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: shard {i} names no pod"));
            assert!(place.pod.starts_with("kvperf-"), "{what}: {place:?}");
            assert_eq!(place.namespace.as_deref(), Some(ns.name.as_str()), "{what}");
            assert_eq!(place.node.as_deref(), Some(NODE), "{what}");
            // The evidence, for whoever reads the test's output.
            eprintln!(
                "{what}: shard {i}/2 ran in pod {} on node {}: {} operations",
                place.pod, NODE, shard.operations
            );
            pods.push(place.pod.clone());
        }
        eprintln!(
            "{what}: merged {} operations",
            r.output.measured().unwrap().operations
        );
    }
    pods.sort();
    pods.dedup();
    assert_eq!(pods.len(), 4, "a pod per shard and step: {pods:?}");
    let (load, run) = (lines[0].measured().unwrap(), lines[1].measured().unwrap());
    use kvperf::measure::{OpKind, Outcome};
    assert_eq!(load.ops[&OpKind::Insert].count(Outcome::Ok), 1000);
    assert_eq!(run.operations, 4000);
    assert_eq!(
        run.ops[&OpKind::Read].count(Outcome::NotFound),
        0,
        "the pods' load wrote every record"
    );
    common::assert_report_places_the_shards(dir.path(), &results);
    assert_all_deleted(&kubeconfig, &ns.name);
}

#[cfg(feature = "redis")]
#[test]
fn a_pod_deleted_mid_step_fails_the_step_in_one_line_naming_it() {
    let test = "pod_deleted_mid_step";
    let Some((_cluster, kubeconfig)) = node(test) else {
        return;
    };
    let Some(probe) = common::server::Server::start("redis", test) else {
        return;
    };
    drop(probe);
    let ns = Namespace::new(&kubeconfig, "deleted");
    let dir = tempfile::tempdir().unwrap();
    // A run long enough to be caught running (at most 5 minutes).
    let steps = "[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\nclients = 2\nduration = 300\n";
    let plan = node_plan(&ns.name, common::server::free_port(), 1_000_000_000, steps);
    let results = dir.path().join("results.jsonl");
    let child = plan_command(dir.path(), &plan, &results)
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let victim = loop {
        let items = objects(&kubeconfig, &ns.name, "app.kubernetes.io/managed-by=kvperf");
        let running: Vec<String> = items
            .iter()
            .filter(|o| o["kind"] == "Pod" && o["status"]["phase"] == "Running")
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        if running.len() == 2 {
            break running[1].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "2 pods not running after 180 s: {items:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let out = kubectl(
        &kubeconfig,
        &["delete", "pod", "-n", &ns.name, &victim, "--wait=false"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = output(child.wait_with_output().unwrap());
    assert_ne!(out.code, 0, "{}", out.stderr);
    let line = failed_line(&out.stderr);
    eprintln!("{line}");
    assert!(line.contains(&format!("pod {victim} (shard ")), "{line}");
    assert!(line.contains("was deleted while the step ran"), "{line}");
    assert!(line.contains("and its pods were deleted"), "{line}");
    assert!(
        common::lines(&results).is_empty(),
        "nothing partial recorded"
    );
    assert_all_deleted(&kubeconfig, &ns.name);
}
