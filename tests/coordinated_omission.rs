//! With a target rate, one stall must show in the latency of every
//! operation it delayed (intended-start latency), while the per-operation
//! service time shows it once, whether the clients are threads (a
//! blocking engine) or tasks (an async one). A fault-injecting wrapper
//! around the null engine provides the stall; as a test-only async engine
//! it stalls by awaiting, holding no thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kvperf::engine::embedded::null::NullWorker;
use kvperf::engine::{
    ready, Call, ClientSlot, Engine, EngineInfo, Operations, Record, Runs, SetupFuture,
};
use kvperf::measure::OpKind;
use kvperf::properties::Properties;
use kvperf::runner::{
    execute, execute_tasks, sleep_until, ClientRuntime, RunOutcome, RunSpec, StatusOptions,
    TaskScheduling,
};
use kvperf::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

const STALL: Duration = Duration::from_millis(300);

/// Sleeps 300 ms in the 101st read, counted across all workers.
struct StallOnce {
    reads: Arc<AtomicU64>,
}

struct StallWorker {
    reads: Arc<AtomicU64>,
    inner: NullWorker,
    runs: Runs,
}

impl Engine for StallOnce {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "stall-once".into(),
            version: "test".into(),
            options: Default::default(),
        }
    }
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready(Ok(Box::new(StallWorker {
            reads: Arc::clone(&self.reads),
            inner: NullWorker,
            runs: slot.runs,
        })))
    }
    fn settle(&self, _: bool) -> anyhow::Result<()> {
        Ok(())
    }
    fn footprint(&self) -> Result<u64, String> {
        Err("stores nothing".into())
    }
    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

impl StallWorker {
    fn stalls(&self) -> bool {
        self.reads.fetch_add(1, Ordering::Relaxed) == 100
    }
}

/// Reads only (the other operations keep their default error). On a
/// thread the worker stalls by sleeping; as a task, by awaiting (its
/// thread is free).
impl Operations for StallWorker {
    fn read<'a>(
        &'a mut self,
        t: &'a str,
        k: &'a [u8],
        f: Option<&'a [&'a str]>,
        o: &'a mut Record,
    ) -> Call<'a> {
        let stall = self.stalls();
        match self.runs {
            Runs::Thread => {
                if stall {
                    std::thread::sleep(STALL);
                }
                self.inner.read(t, k, f, o)
            }
            Runs::Task => Call::waiting(async move {
                if stall {
                    sleep_until(Instant::now() + STALL).await;
                }
                self.inner.read(t, k, f, o).await
            }),
        }
    }
}

/// 1000 reads by `clients` clients at 1000 ops/s in all, the 101st stalling.
fn stalled_run(clients: usize, tasks: Option<&ClientRuntime>) -> RunOutcome {
    let mut p = Properties::new();
    p.load_str("recordcount=1000\noperationcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=uniform");
    let cfg = CoreConfig::from_properties(&p, false).unwrap();
    let workload = CoreWorkload::new(cfg, Phase::Run, 42, kvperf::shard::Shard::WHOLE).unwrap();
    let engine = StallOnce {
        reads: Arc::new(AtomicU64::new(0)),
    };
    let spec = RunSpec {
        threads: clients,
        operations: Some(1000),
        target_ops_per_sec: 1000.0,
        warmup: Duration::ZERO,
        max_execution: None,
        track_intended: true,
        costs: None,
        stop_on_error: false,
        before_window: None,
        stall_keeper: None,
        stall_timeout: None,
        status: StatusOptions::default(),
    };
    let bound = workload.bind(&engine);
    match tasks {
        Some(rt) => execute_tasks(&bound, &spec, rt),
        None => execute(&bound, &spec),
    }
    .unwrap()
}

/// The stalled client's ~300 operations due during the stall all waited
/// (1000 ops/s over `clients`), while its service time shows one slow read.
fn assert_the_stall_shows_in_intended_latency(outcome: &RunOutcome, clients: u64) {
    let read = outcome.histograms.get(OpKind::Read).unwrap();
    assert_eq!(read.ok.len(), 1000);
    // Service time: one slow operation among 1000, so p99 stays tiny.
    assert!(
        read.ok.value_at_quantile(0.99) < 20_000_000,
        "p99 service {}",
        read.ok.value_at_quantile(0.99)
    );
    assert!(read.ok.max() >= 300_000_000);
    let slow = read.intended.count_between(50_000_000, u64::MAX);
    let expected = 200 / clients;
    assert!(
        slow > expected,
        "only {slow} operations show the stall (expected > {expected})"
    );
    if clients == 1 {
        assert!(read.intended.value_at_quantile(0.99) > 100_000_000);
    }
}

#[test]
fn a_stall_inflates_intended_latency_not_service_time() {
    assert_the_stall_shows_in_intended_latency(&stalled_run(1, None), 1);
}

#[test]
fn with_client_tasks_a_stall_inflates_intended_latency_not_service_time() {
    let rt = ClientRuntime::new(2, TaskScheduling::Pinned).unwrap();
    assert_the_stall_shows_in_intended_latency(&stalled_run(1, Some(&rt)), 1);
    // Four tasks on two worker threads: the stalled one holds no thread, so
    // the other three keep their schedule; only its own operations wait.
    let outcome = stalled_run(4, Some(&rt));
    assert_the_stall_shows_in_intended_latency(&outcome, 4);
    let read = outcome.histograms.get(OpKind::Read).unwrap();
    let slow = read.intended.count_between(50_000_000, u64::MAX);
    assert!(
        slow < 150,
        "{slow} operations waited: the stall held other tasks"
    );
}
