//! Sharded runs and `kvperf merge` through the real binary: the shards of
//! a load write every record once, N client processes against one real
//! server do the work of one, every refusal is one line with exit 2, and a
//! plan's `clients` step is merged into one record.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

#[cfg(feature = "redis")]
use crate::common::server::Server;
use crate::common::{assert_input_error, kvperf, workload};
#[cfg(any(feature = "lmdb", feature = "redis"))]
use kvperf::measure::{OpKind, Outcome};
use kvperf::results::step::{Measurement, StepOutput};

fn read_output(path: &Path) -> StepOutput {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    StepOutput::from_json(&text).unwrap()
}

fn measured(o: &StepOutput) -> &Measurement {
    o.measured().expect("a measured window")
}

#[cfg(any(feature = "lmdb", feature = "redis"))]
fn returns(m: &Measurement, op: OpKind, outcome: Outcome) -> u64 {
    m.ops.get(&op).map_or(0, |s| s.count(outcome))
}

/// `kvperf ARGS`, started (not waited for), with no shard variables
/// inherited from the environment.
fn spawn(dir: &Path, args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .env_remove("KVPERF_SHARD")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kvperf starts")
}

/// Runs `base` as shards 0..n of n, all at once; the result files, in order.
fn shards_at_once(dir: &Path, base: &[String], n: u64, name: &str) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = (0..n)
        .map(|i| dir.join(format!("{name}-{i}.json")))
        .collect();
    let children: Vec<Child> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let mut args = base.to_vec();
            args.extend([
                "--shard".into(),
                format!("{i}/{n}"),
                "--format".into(),
                "json".into(),
                "--output".into(),
                file.display().to_string(),
            ]);
            spawn(dir, &args)
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name} shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    files
}

fn merge(dir: &Path, files: &[PathBuf], out: &Path) -> StepOutput {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend([
        "--format".into(),
        "json".into(),
        "--output".into(),
        out.display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = kvperf(dir, &args);
    assert_eq!(done.code, 0, "kvperf merge: {}", done.stderr);
    read_output(out)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[cfg(feature = "lmdb")]
#[test]
fn the_shards_of_a_load_write_every_record_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let records = 3001u64;
    let props = |db: &Path| {
        let mut a = strings(&["--engine", "lmdb", "-P", &workload("a")]);
        a.extend(["--db".into(), db.display().to_string()]);
        for p in [
            format!("recordcount={records}"),
            "fieldcount=2".into(),
            "fieldlength=40".into(),
            "dataintegrity=true".into(),
        ] {
            a.extend(["-p".into(), p]);
        }
        a
    };
    // Shards one after the other into one store (LMDB has one writer).
    let load = |db: &Path, shards: std::ops::Range<u64>| -> Vec<PathBuf> {
        shards
            .map(|i| {
                let name = db.file_name().unwrap().to_string_lossy();
                let file = dir.path().join(format!("{name}-load-{i}.json"));
                let mut args = vec!["load".to_string()];
                args.extend(props(db));
                args.extend(strings(&[
                    "-threads",
                    "2",
                    "--shard",
                    &format!("{i}/4"),
                    "--format",
                    "json",
                    "--output",
                ]));
                args.push(file.display().to_string());
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let out = kvperf(dir.path(), &args);
                assert_eq!(out.code, 0, "load shard {i}: {}", out.stderr);
                file
            })
            .collect()
    };
    let verify = |db: &Path| {
        // Every key once, in order, each read checked against its values.
        let mut args = vec!["run".to_string()];
        args.extend(props(db));
        args.extend(strings(&[
            "-p",
            "readproportion=1",
            "-p",
            "updateproportion=0",
            "-p",
            "requestdistribution=sequential",
            "-p",
            &format!("operationcount={records}"),
            "--format",
            "json",
            "--output",
        ]));
        let out_file = db.with_extension("verify.json");
        args.push(out_file.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = kvperf(dir.path(), &args);
        (out, read_output(&out_file))
    };

    let db = dir.path().join("db");
    let files = load(&db, 0..4);
    let mut slices = Vec::new();
    for file in &files {
        let o = read_output(file);
        let shard = o.shard.clone().expect("a shard result");
        let slice = shard.slice.expect("a load slice");
        assert_eq!(
            returns(measured(&o), OpKind::Insert, Outcome::Ok),
            slice.count
        );
        slices.push((slice.start, slice.count));
    }
    assert_eq!(slices, [(0, 751), (751, 750), (1501, 750), (2251, 750)]);
    let merged = merge(dir.path(), &files, &dir.path().join("load.json"));
    let m = measured(&merged);
    assert_eq!(m.operations, records);
    assert_eq!(returns(m, OpKind::Insert, Outcome::Ok), records);
    assert_eq!(
        m.ops[&OpKind::Insert].latency.count,
        records,
        "every insert in the histogram"
    );
    let (out, check) = verify(&db);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let c = measured(&check);
    let integrity = c.integrity.clone().expect("dataintegrity");
    assert_eq!((integrity.verified, integrity.failed), (records, 0));
    assert_eq!(returns(c, OpKind::Read, Outcome::Ok), records);

    // The same check on a store that lacks the last shard finds its records gone.
    let partial = dir.path().join("partial");
    load(&partial, 0..3);
    let (out, check) = verify(&partial);
    assert_eq!(out.code, 3, "a failed integrity check: {}", out.stderr);
    assert_eq!(
        check.measured().unwrap().integrity.clone().unwrap().failed,
        750
    );
}

#[cfg(feature = "redis")]
#[test]
fn four_client_processes_against_one_redis_do_the_work_of_one() {
    let Some(server) = Server::start("redis", "four_client_processes_against_one_redis") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut common = strings(&["--engine", "redis", "-P", &workload("a")]);
    for p in server.properties().into_iter().chain([
        "recordcount=2000".to_string(),
        "fieldcount=2".into(),
        "fieldlength=40".into(),
        "dataintegrity=true".into(),
    ]) {
        common.extend(["-p".into(), p]);
    }
    let mut load = vec!["load".to_string()];
    load.extend(common.clone());
    let loads = shards_at_once(dir.path(), &load, 2, "load");
    let loaded = merge(dir.path(), &loads, &dir.path().join("load.json"));
    assert_eq!(
        returns(measured(&loaded), OpKind::Insert, Outcome::Ok),
        2000
    );

    let ops = 20_000u64;
    let mut run = vec!["run".to_string()];
    run.extend(common.clone());
    run.extend(strings(&["-p", &format!("operationcount={ops}")]));
    // One process with 4 threads...
    let one_file = dir.path().join("one.json");
    let mut args = run.clone();
    args.extend(strings(&["-threads", "4", "--format", "json", "--output"]));
    args.push(one_file.display().to_string());
    let out = spawn(dir.path(), &args).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let one = read_output(&one_file);
    // ...and 4 processes of one thread at once.
    let mut per_client = run.clone();
    per_client.extend(strings(&["-threads", "1"]));
    let files = shards_at_once(dir.path(), &per_client, 4, "run");
    let four = merge(dir.path(), &files, &dir.path().join("four.json"));

    let shards: Vec<StepOutput> = files.iter().map(|f| read_output(f)).collect();
    for (m, label) in [
        (measured(&one), "one process"),
        (measured(&four), "four processes"),
    ] {
        assert_eq!(m.operations, ops, "{label}");
        assert_eq!(m.threads, 4, "{label}");
        let done: u64 = [OpKind::Read, OpKind::Update]
            .iter()
            .map(|op| m.ops[op].returns.values().sum::<u64>())
            .sum();
        assert_eq!(done, ops, "{label}: every operation has a return code");
        for (op, stats) in &m.ops {
            let recorded = stats.latency.count + stats.failed.as_ref().map_or(0, |f| f.count);
            assert_eq!(
                recorded,
                stats.returns.values().sum::<u64>(),
                "{label}: {op:?} histograms hold every op"
            );
        }
        let integrity = m.integrity.clone().unwrap();
        assert_eq!(integrity.failed, 0, "{label}");
        assert_eq!(
            integrity.verified,
            returns(m, OpKind::Read, Outcome::Ok),
            "{label}"
        );
    }
    let m = measured(&four);
    for op in [OpKind::Read, OpKind::Update] {
        let per_shard: u64 = shards
            .iter()
            .map(|s| measured(s).ops[&op].latency.count)
            .sum();
        assert_eq!(
            m.ops[&op].latency.count, per_shard,
            "{op:?}: the merged histogram holds every shard's"
        );
    }
    let info = four.merged.as_ref().unwrap();
    assert_eq!(info.count, 4);
    assert!(info.shards.iter().all(|s| s.operations == ops / 4));
    // The server's CPU is counted once, not once per client.
    let server_cpu: Vec<f64> = shards
        .iter()
        .filter_map(|s| Some(measured(s).accounting.as_ref()?.server.as_ref()?.cpu_s))
        .collect();
    if let Some(merged_cpu) = m
        .accounting
        .as_ref()
        .and_then(|a| a.server.as_ref())
        .map(|s| s.cpu_s)
    {
        let widest = server_cpu.iter().copied().fold(0.0, f64::max);
        assert!(
            merged_cpu <= widest + 1e-9,
            "{merged_cpu} vs {server_cpu:?}"
        );
    } else {
        eprintln!("server CPU not measured here (no /proc access to the server); its merge is unit-tested");
    }
}

/// Three null-engine shards of one study in `dir`; their files.
fn null_shards(dir: &Path, extra: &[&str]) -> Vec<PathBuf> {
    let mut base = strings(&["run", "--engine", "null", "-P", &workload("c")]);
    base.extend(strings(&[
        "-p",
        "recordcount=1000",
        "-p",
        "operationcount=3000",
    ]));
    base.extend(strings(extra));
    shards_at_once(dir, &base, 3, "null")
}

fn merge_refused(dir: &Path, files: &[&Path], needle: &str) {
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = kvperf(dir, &args);
    assert_input_error(&out, needle);
    assert!(out.stdout.is_empty(), "nothing merged: {}", out.stdout);
}

#[test]
fn merge_refuses_shards_that_do_not_make_one_study_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let files = null_shards(d, &[]);
    let [a, b, c] = [&files[0], &files[1], &files[2]].map(|p| p.as_path());
    let other_dir = d.join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let other = null_shards(&other_dir, &["-p", "fieldcount=3"]);
    merge_refused(d, &[a, &other[1], c], "is a shard of another study");
    merge_refused(d, &[a, &other[1], c], "they differ in fieldcount");
    merge_refused(d, &[a, b, b, c], "shard 1/3 is given twice");
    merge_refused(d, &[a, c], "1 of 3 shards missing (1/3)");

    // A shard whose slice was changed by hand overlaps its neighbour.
    let mut edited = read_output(b);
    edited.shard.as_mut().unwrap().slice.as_mut().unwrap().start -= 10;
    let overlapping = d.join("overlapping.json");
    std::fs::write(&overlapping, serde_json::to_string(&edited).unwrap()).unwrap();
    merge_refused(
        d,
        &[a, &overlapping, c],
        "slices overlap: operations 990..1000",
    );

    let whole = d.join("whole.json");
    let out = kvperf(
        d,
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &workload("c"),
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=3000",
            "--format",
            "json",
            "--output",
            &whole.display().to_string(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    merge_refused(d, &[&whole], "is not a shard's result");
    merge_refused(d, &[&d.join("absent.json")], "does not exist");

    // What is left is a study: merged, and readable by report and compare.
    let merged = merge(d, &files, &d.join("merged.json"));
    assert_eq!(measured(&merged).operations, 3000);
    let text = kvperf(
        d,
        &[
            "merge",
            &a.display().to_string(),
            &b.display().to_string(),
            &c.display().to_string(),
        ],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        common::metric(&text.stdout, "READ", "Operations"),
        Some(3000.0)
    );
    common::report(d, &d.join("merged.json"), &d.join("report"));
    let md = std::fs::read_to_string(d.join("report/report.md")).unwrap();
    assert!(md.contains("merged"), "{md}");
}

#[test]
fn a_shard_runs_its_share_of_the_operations_and_of_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    let out = kvperf(
        dir.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &workload("c"),
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=403",
            "-target",
            "400",
            "-threads",
            "2",
            "--shard",
            "3/4",
            "--format",
            "json",
            "--output",
            &file.display().to_string(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = read_output(&file);
    let m = measured(&o);
    assert_eq!(m.operations, 100, "403 over 4 shards: 101, 101, 101, 100");
    assert_eq!(m.target_ops_per_sec, 100.0);
    let shard = o.shard.as_ref().unwrap();
    assert_eq!(
        (shard.index, shard.count, shard.source.as_str()),
        (3, 4, "--shard")
    );
    assert_eq!(shard.slice.map(|s| (s.start, s.count)), Some((303, 100)));
    // Paced at 100 ops/s, 100 operations take about a second.
    assert!(m.runtime_s > 0.9, "{}", m.runtime_s);
}

/// `kvperf ARGS` with `vars` set (and no other shard variable).
fn with_env(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args(args).current_dir(dir);
    for name in [
        "KVPERF_SHARD",
        "JOB_COMPLETION_INDEX",
        "KVPERF_SHARD_COUNT",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(vars.iter().copied()).output().unwrap()
}

#[test]
fn orchestrators_variables_say_which_shard_a_process_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    let shown = file.display().to_string();
    let w = workload("c");
    let args = [
        "run",
        "--engine",
        "null",
        "-P",
        &w,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
        "--format",
        "json",
        "--output",
        &shown,
    ];
    for (vars, want) in [
        (vec![("KVPERF_SHARD", "1/2")], (1, 2, "KVPERF_SHARD")),
        (
            vec![("JOB_COMPLETION_INDEX", "2"), ("KVPERF_SHARD_COUNT", "3")],
            (2, 3, "JOB_COMPLETION_INDEX"),
        ),
        (
            vec![
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "4"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ],
            (1, 2, "SLURM_ARRAY_TASK_ID"),
        ),
    ] {
        let out = with_env(dir.path(), &args, &vars);
        assert!(
            out.status.success(),
            "{vars:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shard = read_output(&file).shard.expect("a shard");
        assert_eq!(
            (shard.index, shard.count, shard.source.as_str()),
            want,
            "{vars:?}"
        );
    }
    // --shard 0/1 is the whole study whatever the environment says.
    let mut whole = args.to_vec();
    whole.extend(["--shard", "0/1"]);
    let out = with_env(dir.path(), &whole, &[("KVPERF_SHARD", "1/2")]);
    assert!(out.status.success());
    let o = read_output(&file);
    assert!(o.shard.is_none());
    assert_eq!(measured(&o).operations, 100);

    for (vars, needle) in [
        (vec![("JOB_COMPLETION_INDEX", "1")], "KVPERF_SHARD_COUNT"),
        (
            vec![("KVPERF_SHARD", "2/2")],
            "KVPERF_SHARD: '2/2': shard index 2 is not below",
        ),
        (
            vec![
                ("SLURM_ARRAY_TASK_ID", "x"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ],
            "is not a whole number",
        ),
    ] {
        let out = with_env(dir.path(), &args, &vars);
        let out = common::Output::from(out);
        assert_input_error(&out, needle);
    }
    for (phase, extra, needle) in [
        (
            "run",
            &["-p", "operationcount=3", "--shard", "3/4"][..],
            "shard 3/4 has nothing to do: 3 operations",
        ),
        ("load", &["--shard", "1of4"], "--shard: '1of4' is not I/N"),
        (
            "load",
            &["--fresh", "--shard", "1/4"],
            "--fresh with shard 1/4: the shards load one store",
        ),
    ] {
        let mut args = vec![phase, "--engine", "null", "-P", &w, "-p", "recordcount=100"];
        args.extend_from_slice(extra);
        assert_input_error(&kvperf(dir.path(), &args), needle);
    }
}

#[cfg(feature = "redis")]
#[test]
fn a_plan_step_with_clients_is_run_by_that_many_processes_and_merged() {
    // The plan starts its own server; check first that this machine can.
    let Some(probe) = Server::start("redis", "a_plan_step_with_clients") else {
        return;
    };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let port = common::server::free_port();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "clients"
driver = "ycsb"
settle = false
[properties]
recordcount = 1000
operationcount = 6000
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
workloads = ["b"]
threads = [1]
clients = 3
"#
        ),
    )
    .unwrap();
    let results = dir.path().join("results.jsonl");
    let out = common::plan_run(dir.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = common::lines(&results);
    assert_eq!(lines.len(), 2);
    let (load, run) = (&lines[0], &lines[1]);
    assert_eq!(load.step.id, "redis/000-load-a-t2-c2-r1");
    assert_eq!(load.before, vec![vec!["fresh store".to_string()]]);
    assert!(
        !load.command.contains(&"--fresh".to_string()),
        "{:?}",
        load.command
    );
    let lm = load.measured().unwrap();
    assert_eq!(returns(lm, OpKind::Insert, Outcome::Ok), 1000);
    assert_eq!(load.output.merged.as_ref().unwrap().count, 2);
    assert_eq!(load.step.threads, 4, "every client's threads");
    let rm = run.measured().unwrap();
    assert_eq!(rm.operations, 6000);
    assert_eq!(
        returns(rm, OpKind::Read, Outcome::NotFound),
        0,
        "the load wrote every record"
    );
    assert_eq!(run.output.merged.as_ref().unwrap().shards.len(), 3);
    assert!(
        run.command
            .ends_with(&["--shard".to_string(), "I/3".to_string()]),
        "{:?}",
        run.command
    );
    assert_eq!(run.step.threads, 3);
    common::assert_report_places_the_shards(dir.path(), &results);
}

/// Interrupted in the middle of a step, a plan still stops the server it
/// started: the stop itself is not interrupted (it was, and the servers
/// outlived the plan).
#[cfg(feature = "redis")]
#[test]
fn an_interrupted_plan_stops_the_servers_it_started() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let Some(probe) = Server::start("redis", "an_interrupted_plan_stops_the_servers") else {
        return;
    };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let port = common::server::free_port();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "interrupted"
driver = "ycsb"
settle = false
[properties]
recordcount = 100
maxexecutiontime = 3600
[[configs]]
name = "redis"
engine = "redis"
servers = [{{ name = "redis", port = {port} }}]
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["c"]
threads = [1]
operations = 100000000000
"#
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["plan", "run", "plan.toml", "--results", "r.jsonl"])
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{seen}");
        seen.push_str(&line);
        if line.contains("001-run-c-t1-r1 (1 threads)") {
            break;
        }
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the plan's Redis serves while its step runs: {seen}"
    );
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    stderr.read_to_string(&mut seen).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{seen}");
    assert!(seen.contains("interrupted during step"), "{seen}");
    // The plan has exited: whatever it stops is stopped by now.
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "Redis on port {port} outlived the interrupted plan: {seen}"
    );
}

#[test]
fn a_plan_refuses_clients_on_an_embedded_engine() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "clients"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
[[configs]]
name = "x"
[[steps]]
workloads = ["c"]
threads = [1]
clients = 2
"#,
    )
    .unwrap();
    let out = common::plan_run(dir.path(), &plan, &dir.path().join("r.jsonl"));
    assert_input_error(
        &out,
        "clients = 2 runs that many processes against one store",
    );
}
