//! The runner with clients as tasks (`clients=tasks`), against a small
//! in-process async engine that exists only for these tests: an ordered
//! in-memory map whose every operation first waits on the runtime (a yield,
//! or an awaited delay), as a network driver's does. Each test is a
//! behaviour the threaded runner has too: YCSB's per-client split, every key
//! loaded once, data integrity through the shared operation code, pacing,
//! warmup and time limit, onerror=stop, setup failures, CPU accounting and
//! status lines.

use crate::common;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kvperf::engine::{
    Call, ClientSlot, Engine, EngineInfo, OpError, Operations, Record, Runs, ScanResults,
    SetupFuture,
};
use kvperf::measure::{OpKind, Outcome};
use kvperf::properties::Properties;
use kvperf::runner::{
    execute_tasks, sleep_until, stop_on_interrupt, ClientRuntime, RunOutcome, RunSpec,
    StatusOptions, TaskScheduling,
};
use kvperf::shard::Shard;
use kvperf::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

#[derive(Default)]
struct MemoryEngine {
    records: Mutex<BTreeMap<Vec<u8>, Record>>,
    /// Operations of each client (by its slot index), warmup included.
    per_client: Mutex<Vec<u64>>,
    duplicate_inserts: AtomicU64,
    /// Every operation awaits this long (zero: one yield).
    delay: Duration,
    /// CPU time each operation burns on its worker thread.
    spin: Duration,
    /// Reads fail from the n-th operation of the engine on.
    fail_reads_after: Option<u64>,
    /// Inserts fail from the n-th operation of the engine on (a server
    /// that died mid-load).
    fail_inserts_after: Option<u64>,
    /// This client cannot be made.
    failing_client: Option<usize>,
    operations: AtomicU64,
}

impl Engine for MemoryEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "memory-async".into(),
            version: "test".into(),
            options: Default::default(),
        }
    }
    fn client(&self, client: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        Box::pin(async move {
            if client.runs == Runs::Thread {
                anyhow::bail!("the test engine has async clients only");
            }
            tokio::task::yield_now().await;
            if self.failing_client == Some(client.index) {
                anyhow::bail!("no session for client {}", client.index);
            }
            let mut per_client = self.per_client.lock().unwrap();
            if per_client.len() < client.count {
                per_client.resize(client.count, 0);
            }
            Ok(Box::new(MemoryWorker {
                engine: self,
                index: client.index,
            }) as Box<dyn Operations>)
        })
    }
    fn settle(&self, _: bool) -> anyhow::Result<()> {
        Ok(())
    }
    fn footprint(&self) -> Result<u64, String> {
        Err("in memory".into())
    }
    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

struct MemoryWorker<'e> {
    engine: &'e MemoryEngine,
    index: usize,
}

impl MemoryWorker<'_> {
    /// What every operation does before it answers: wait, then work.
    async fn wait(&self) -> u64 {
        let e = self.engine;
        if e.delay.is_zero() {
            tokio::task::yield_now().await;
        } else {
            sleep_until(Instant::now() + e.delay).await;
        }
        let t0 = thread_cpu();
        while thread_cpu() - t0 < e.spin {
            std::hint::black_box(0);
        }
        e.per_client.lock().unwrap()[self.index] += 1;
        e.operations.fetch_add(1, Relaxed)
    }
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes only into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn copy_fields(stored: &Record, fields: Option<&[&str]>, out: &mut Record) {
    for (name, value) in stored.fields() {
        if fields.is_none_or(|f| f.iter().any(|n| n.as_bytes() == name)) {
            out.push(name, value);
        }
    }
}

impl Operations for MemoryWorker<'_> {
    fn read<'a>(
        &'a mut self,
        _: &'a str,
        key: &'a [u8],
        fields: Option<&'a [&'a str]>,
        out: &'a mut Record,
    ) -> Call<'a> {
        Call::waiting(async move {
            let n = self.wait().await;
            if self.engine.fail_reads_after.is_some_and(|after| n >= after) {
                return Err(OpError::Failed("the test engine fails on purpose".into()));
            }
            let records = self.engine.records.lock().unwrap();
            let stored = records.get(key).ok_or(OpError::NotFound)?;
            copy_fields(stored, fields, out);
            Ok(())
        })
    }
    fn scan<'a>(
        &'a mut self,
        _: &'a str,
        start: &'a [u8],
        count: usize,
        fields: Option<&'a [&'a str]>,
        out: &'a mut ScanResults,
    ) -> Call<'a> {
        Call::waiting(async move {
            self.wait().await;
            let records = self.engine.records.lock().unwrap();
            for (_, stored) in records.range(start.to_vec()..).take(count) {
                copy_fields(stored, fields, out.next_slot());
            }
            Ok(())
        })
    }
    fn update<'a>(&'a mut self, _: &'a str, key: &'a [u8], values: &'a Record) -> Call<'a> {
        Call::waiting(async move {
            self.wait().await;
            let mut records = self.engine.records.lock().unwrap();
            let stored = records.get_mut(key).ok_or(OpError::NotFound)?;
            let mut merged = Record::new();
            for (name, value) in stored.fields() {
                merged.push(name, values.get(name).unwrap_or(value));
            }
            for (name, value) in values.fields() {
                if stored.get(name).is_none() {
                    merged.push(name, value);
                }
            }
            *stored = merged;
            Ok(())
        })
    }
    fn insert<'a>(&'a mut self, _: &'a str, key: &'a [u8], values: &'a Record) -> Call<'a> {
        Call::waiting(async move {
            let n = self.wait().await;
            if self
                .engine
                .fail_inserts_after
                .is_some_and(|after| n >= after)
            {
                return Err(OpError::Failed("the test engine fails on purpose".into()));
            }
            let mut records = self.engine.records.lock().unwrap();
            if records.insert(key.to_vec(), values.clone()).is_some() {
                self.engine.duplicate_inserts.fetch_add(1, Relaxed);
            }
            Ok(())
        })
    }
    fn delete<'a>(&'a mut self, _: &'a str, key: &'a [u8]) -> Call<'a> {
        Call::waiting(async move {
            self.wait().await;
            self.engine.records.lock().unwrap().remove(key);
            Ok(())
        })
    }
}

fn workload(properties: &str, phase: Phase) -> CoreWorkload {
    shard_workload(properties, phase, Shard::WHOLE)
}

/// `engine` holding SHAPE's records, loaded by two client tasks.
fn loaded(engine: MemoryEngine) -> MemoryEngine {
    let load = workload(SHAPE, Phase::Load);
    run(&engine, &load, &spec(2, Some(1003)), 2).unwrap();
    engine
}

/// Reads of SHAPE's records: `operations` of them (0: until a time limit).
fn reads(operations: u64) -> CoreWorkload {
    let props = format!("{SHAPE}operationcount={operations}\nreadproportion=1\nupdateproportion=0");
    workload(&props, Phase::Run)
}

fn shard_workload(properties: &str, phase: Phase, shard: Shard) -> CoreWorkload {
    let mut p = Properties::new();
    p.load_str(properties);
    let cfg = CoreConfig::from_properties(&p, phase == Phase::Load).unwrap();
    CoreWorkload::new(cfg, phase, shard.seed(7), shard).unwrap()
}

fn spec(clients: usize, operations: Option<u64>) -> RunSpec {
    RunSpec {
        threads: clients,
        operations,
        target_ops_per_sec: 0.0,
        warmup: Duration::ZERO,
        max_execution: None,
        track_intended: false,
        costs: None,
        stop_on_error: false,
        before_window: None,
        stall_keeper: None,
        stall_timeout: None,
        status: StatusOptions::default(),
    }
}

fn run(
    engine: &MemoryEngine,
    wl: &CoreWorkload,
    spec: &RunSpec,
    workers: usize,
) -> anyhow::Result<RunOutcome> {
    let rt = ClientRuntime::new(workers, TaskScheduling::Pinned).unwrap();
    execute_tasks(&wl.bind(engine), spec, &rt)
}

fn count(outcome: &RunOutcome, kind: OpKind, outcome_kind: Outcome) -> u64 {
    outcome
        .histograms
        .get(kind)
        .map_or(0, |g| g.count(outcome_kind))
}

const SHAPE: &str = "recordcount=1003\nfieldcount=4\nfieldlength=20\ndataintegrity=true\n";

#[test]
fn a_load_by_tasks_inserts_each_key_once_split_like_ycsb_then_a_run_verifies_it() {
    let engine = MemoryEngine::default();
    let load = workload(SHAPE, Phase::Load);
    let loaded = run(&engine, &load, &spec(4, Some(1003)), 2).unwrap();
    assert_eq!(loaded.operations, 1003);
    assert_eq!(count(&loaded, OpKind::Insert, Outcome::Ok), 1003);
    assert_eq!(*engine.per_client.lock().unwrap(), [251, 251, 251, 250]);
    assert_eq!(engine.records.lock().unwrap().len(), 1003);
    assert_eq!(engine.duplicate_inserts.load(Relaxed), 0);

    // Reads and read-modify-writes through the same operation code as a
    // thread's, every read checked against YCSB's deterministic values.
    let props = format!(
        "{SHAPE}operationcount=2000\nreadproportion=0.5\nupdateproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian"
    );
    let ran = run(
        &engine,
        &workload(&props, Phase::Run),
        &spec(3, Some(2000)),
        2,
    )
    .unwrap();
    assert_eq!(ran.operations, 2000);
    let rmw = count(&ran, OpKind::ReadModifyWrite, Outcome::Ok);
    let reads = count(&ran, OpKind::Read, Outcome::Ok);
    assert!(rmw > 700 && reads == 2000, "{rmw} rmw, {reads} reads");
    assert_eq!(count(&ran, OpKind::Verify, Outcome::Ok), 2000);
    assert_eq!(count(&ran, OpKind::Verify, Outcome::UnexpectedState), 0);
}

#[test]
fn a_target_rate_paces_tasks_from_their_intended_starts() {
    let engine = loaded(MemoryEngine::default());
    let reads_wl = reads(2000);
    let mut paced = spec(4, Some(2000));
    paced.target_ops_per_sec = 2000.0;
    paced.track_intended = true;
    let outcome = run(&engine, &reads_wl, &paced, 2).unwrap();
    let secs = outcome.runtime.as_secs_f64();
    assert!(
        (0.95..1.5).contains(&secs),
        "2000 ops at 2000/s took {secs} s"
    );
    let read = outcome.histograms.get(OpKind::Read).unwrap();
    assert_eq!(read.intended.len(), 2000);
    // Each operation starts close to its intended start; what it waited
    // past it (timer lateness, scheduling) is part of its latency.
    let median = read.intended.value_at_quantile(0.5);
    assert!(median < 1_000_000, "median from intended start {median} ns");
    assert!(read.intended.value_at_quantile(0.5) >= read.ok.value_at_quantile(0.5));
}

#[test]
fn warmup_and_the_time_limit_bound_the_measured_window() {
    let engine = loaded(MemoryEngine {
        delay: Duration::from_millis(1),
        ..MemoryEngine::default()
    });
    let before = engine.operations.load(Relaxed);
    let reads_wl = reads(0);
    let mut timed = spec(3, None);
    timed.warmup = Duration::from_millis(300);
    timed.max_execution = Some(Duration::from_secs(1));
    let outcome = run(&engine, &reads_wl, &timed, 2).unwrap();
    assert!(outcome.hit_time_limit);
    let secs = outcome.runtime.as_secs_f64();
    assert!((1.0..1.4).contains(&secs), "a 1 s window took {secs} s");
    let engine_ops = engine.operations.load(Relaxed) - before;
    assert!(
        outcome.operations > 300 && engine_ops > outcome.operations + 100,
        "{} measured of {engine_ops}: warmup operations ran and were left out",
        outcome.operations
    );
    assert_eq!(outcome.intervals.iter().sum::<u64>(), outcome.operations);
}

#[test]
fn onerror_stop_ends_every_task_at_the_first_failure() {
    let engine = loaded(MemoryEngine {
        // The load's inserts, then 300 good reads.
        fail_reads_after: Some(1003 + 300),
        ..MemoryEngine::default()
    });
    let reads_wl = reads(100000);
    let mut stopping = spec(4, Some(100_000));
    stopping.stop_on_error = true;
    let outcome = run(&engine, &reads_wl, &stopping, 2).unwrap();
    assert!(outcome.stopped_on_error);
    assert!(count(&outcome, OpKind::Read, Outcome::Error) >= 1);
    // Each client stops after its operation in flight.
    assert!(outcome.operations < 300 + 20, "{}", outcome.operations);
}

/// Each load task stops at its first failed insert; the load is then
/// short, and says so, with or without onerror=stop.
#[test]
fn a_load_whose_server_dies_is_incomplete_and_stops_under_onerror_stop() {
    for stop_on_error in [false, true] {
        // A workload per load: its key counter is the load's own.
        let load = workload(SHAPE, Phase::Load);
        let engine = MemoryEngine {
            fail_inserts_after: Some(500),
            ..MemoryEngine::default()
        };
        let mut spec = spec(4, Some(1003));
        spec.stop_on_error = stop_on_error;
        let outcome = run(&engine, &load, &spec, 2).unwrap();
        assert_eq!(outcome.stopped_on_error, stop_on_error);
        assert_eq!(count(&outcome, OpKind::Insert, Outcome::Ok), 500);
        assert!(count(&outcome, OpKind::Insert, Outcome::Error) >= 1);
        assert_eq!(load.incomplete_load(), Some((500, 1003)));
    }
    let load = workload(SHAPE, Phase::Load);
    run(&MemoryEngine::default(), &load, &spec(4, Some(1003)), 2).unwrap();
    assert_eq!(load.incomplete_load(), None);
}

#[test]
fn a_client_that_cannot_be_made_fails_the_run_before_its_clock_starts() {
    let engine = MemoryEngine {
        failing_client: Some(2),
        ..MemoryEngine::default()
    };
    let err = run(
        &engine,
        &workload(SHAPE, Phase::Load),
        &spec(4, Some(1003)),
        2,
    )
    .expect_err("a client could not be made");
    let err = format!("{err:#}");
    assert!(
        err.contains("client 2 setup") && err.contains("no session for client 2"),
        "{err}"
    );
    assert_eq!(engine.operations.load(Relaxed), 0);
}

#[test]
fn client_cpu_is_the_runtimes_worker_time() {
    let engine = MemoryEngine {
        spin: Duration::from_micros(200),
        ..MemoryEngine::default()
    };
    let mut timed = spec(4, None);
    timed.max_execution = Some(Duration::from_millis(800));
    let props = format!("{SHAPE}insertcount=100000000\nrecordcount=100000000");
    let outcome = run(&engine, &workload(&props, Phase::Load), &timed, 2).unwrap();
    // Two workers spinning 200 us per operation: up to 2 CPU seconds per
    // second, less on a busy machine, never more.
    let window = outcome.runtime.as_secs_f64();
    let spun = outcome.operations as f64 * 200e-6;
    assert!(
        outcome.client_cpu_s >= spun && outcome.client_cpu_s <= 2.0 * window + 0.1,
        "{} CPU s over {window} s for {spun} s of spinning",
        outcome.client_cpu_s
    );
}

/// Status lines go to stderr, so this test runs the run in a child process
/// (this test binary again, filtered to this test) and reads its stderr.
#[test]
fn status_lines_hand_over_every_tasks_operations_once() {
    const CHILD: &str = "KVPERF_TEST_STATUS_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let engine = loaded(MemoryEngine::default());
        let reads_wl = reads(0);
        let mut timed = spec(3, None);
        timed.max_execution = Some(Duration::from_millis(2500));
        timed.target_ops_per_sec = 1500.0;
        timed.track_intended = true;
        timed.status = StatusOptions {
            interval: Some(Duration::from_secs(1)),
            intended_groups: true,
            ..StatusOptions::default()
        };
        let outcome = run(&engine, &reads_wl, &timed, 2).unwrap();
        eprintln!("OPERATIONS={}", outcome.operations);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &common::test_path(
                module_path!(),
                "status_lines_hand_over_every_tasks_operations_once",
            ),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let operations: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("OPERATIONS="))
        .expect("the child's figure")
        .parse()
        .unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(" sec: ")).collect();
    assert!(lines.len() >= 3, "{stderr}");
    let counts = |group: &str| -> Vec<u64> {
        let needle = format!("[{group}: Count=");
        lines
            .iter()
            .map(|l| {
                l.split(&needle)
                    .nth(1)
                    .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
            })
            .collect()
    };
    // Every operation of every task reaches exactly one status line, and
    // the lines during the run see them as they happen.
    let reads = counts("READ");
    assert_eq!(reads.iter().sum::<u64>(), operations, "{stderr}");
    assert!(
        reads[1..lines.len() - 1].iter().all(|&n| n > 500),
        "{reads:?}"
    );
    assert_eq!(counts("Intended-READ"), reads);
    let last = lines.last().unwrap();
    assert!(
        last.contains(&format!(" {operations} operations;")),
        "{last}"
    );
}

#[test]
fn the_shards_of_a_load_by_tasks_write_every_record_once() {
    let engine = MemoryEngine::default();
    let mut operations = 0;
    for index in 0..3 {
        let shard = Shard { index, count: 3 };
        let load = shard_workload(SHAPE, Phase::Load, shard);
        let loaded = run(&engine, &load, &spec(2, Some(load.operation_count())), 2).unwrap();
        operations += loaded.operations;
    }
    assert_eq!(operations, 1003);
    assert_eq!(engine.records.lock().unwrap().len(), 1003);
    assert_eq!(engine.duplicate_inserts.load(Relaxed), 0);
    // Every record holds its key's deterministic values.
    let reads_wl = reads(3000);
    let ran = run(&engine, &reads_wl, &spec(3, Some(3000)), 2).unwrap();
    assert_eq!(count(&ran, OpKind::Verify, Outcome::Ok), 3000);
}

/// Set in the child process that [`in_child`] starts: which case it runs.
const CHILD: &str = "KVPERF_ASYNC_RUNNER_CHILD";

/// Runs test `name` of this binary again in a child process with
/// [`CHILD`] set to `case` (for what ends or signals the whole process);
/// its exit status and stderr.
fn in_child(name: &str, case: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &common::test_path(module_path!(), name)])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What `kvperf`'s commands do after a stall: say why, exit 3.
fn end_after_stall(why: &str) -> ! {
    eprintln!("kvperf: {why}");
    std::process::exit(3)
}

#[test]
fn a_stalled_engine_ends_a_task_run_after_stalltimeout() {
    const NAME: &str = "a_stalled_engine_ends_a_task_run_after_stalltimeout";
    if std::env::var(CHILD).as_deref() == Ok("stall") {
        let engine = loaded(MemoryEngine::default());
        // Every operation now takes an hour: the engine stopped answering.
        let engine = MemoryEngine {
            delay: Duration::from_secs(3600),
            ..engine
        };
        let reads_wl = reads(1000);
        let mut stalling = spec(3, Some(1000));
        stalling.stall_timeout = Some(Duration::from_secs(2));
        // The runner watches for a stall only with a keeper to end the
        // step (the commands' ends the process with exit 3; this one too).
        stalling.stall_keeper = Some(kvperf::runner::StallKeeper::new(end_after_stall));
        let _ = run(&engine, &reads_wl, &stalling, 2);
        eprintln!("child: the run returned");
        std::process::exit(0);
    }
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let started = Instant::now();
    let (code, stderr) = in_child(NAME, "stall");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("3 of 3 client tasks are still inside the engine")
            && stderr.contains("stopped answering (stalltimeout=2)"),
        "{stderr}"
    );
    let secs = started.elapsed().as_secs_f64();
    assert!(secs < 30.0, "stopped after {secs} s");
}

#[test]
fn an_interrupt_ends_a_task_run_with_what_it_measured() {
    const NAME: &str = "an_interrupt_ends_a_task_run_with_what_it_measured";
    if std::env::var(CHILD).as_deref() == Ok("interrupt") {
        let engine = loaded(MemoryEngine {
            delay: Duration::from_millis(1),
            ..MemoryEngine::default()
        });
        let reads_wl = reads(0);
        let mut timed = spec(4, None);
        timed.max_execution = Some(Duration::from_secs(30));
        stop_on_interrupt();
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill() on our own process with a handled signal.
            unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        });
        let outcome = run(&engine, &reads_wl, &timed, 2).unwrap();
        eprintln!(
            "child: interrupted={} operations={} runtime_ms={}",
            outcome.interrupted,
            outcome.operations,
            outcome.runtime.as_millis()
        );
        std::process::exit(0);
    }
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (code, stderr) = in_child(NAME, "interrupt");
    assert_eq!(code, Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("child: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let field = |name: &str| -> String {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")).map(str::to_string))
            .unwrap()
    };
    assert_eq!(field("interrupted"), "true", "{line}");
    let ops: u64 = field("operations").parse().unwrap();
    let ms: u64 = field("runtime_ms").parse().unwrap();
    assert!(ops > 0 && ms < 5000, "{line}");
}
