//! With a target rate, one stall must show in the latency of every
//! operation it delayed (intended-start latency), while the per-operation
//! service time shows it once. A fault-injecting wrapper around the null
//! engine provides the stall.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kvperf::engine::null::NullWorker;
use kvperf::engine::{Engine, EngineInfo, EngineWorker, OpResult, Record, ScanResults, ThreadSlot};
use kvperf::measure::OpKind;
use kvperf::properties::Properties;
use kvperf::runner::{execute, RunSpec, StatusOptions};
use kvperf::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

/// Sleeps 300 ms in the 101st read, counted across all workers.
struct StallOnce {
    reads: Arc<AtomicU64>,
}

struct StallWorker {
    reads: Arc<AtomicU64>,
    inner: NullWorker,
}

impl Engine for StallOnce {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "stall-once".into(),
            version: "test".into(),
            options: Default::default(),
        }
    }
    fn worker(&self, _: ThreadSlot) -> anyhow::Result<Box<dyn EngineWorker + '_>> {
        Ok(Box::new(StallWorker {
            reads: Arc::clone(&self.reads),
            inner: NullWorker,
        }))
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

impl EngineWorker for StallWorker {
    fn read(&mut self, t: &str, k: &[u8], f: Option<&[&str]>, o: &mut Record) -> OpResult {
        if self.reads.fetch_add(1, Ordering::Relaxed) == 100 {
            std::thread::sleep(Duration::from_millis(300));
        }
        self.inner.read(t, k, f, o)
    }
    fn scan(
        &mut self,
        t: &str,
        k: &[u8],
        n: usize,
        f: Option<&[&str]>,
        o: &mut ScanResults,
    ) -> OpResult {
        self.inner.scan(t, k, n, f, o)
    }
    fn update(&mut self, t: &str, k: &[u8], v: &Record) -> OpResult {
        self.inner.update(t, k, v)
    }
    fn insert(&mut self, t: &str, k: &[u8], v: &Record) -> OpResult {
        self.inner.insert(t, k, v)
    }
    fn delete(&mut self, t: &str, k: &[u8]) -> OpResult {
        self.inner.delete(t, k)
    }
}

#[test]
fn a_stall_inflates_intended_latency_not_service_time() {
    let mut p = Properties::new();
    p.load_str("recordcount=1000\noperationcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=uniform");
    let cfg = CoreConfig::from_properties(&p, false).unwrap();
    let workload = CoreWorkload::new(cfg, Phase::Run, 42, kvperf::shard::Shard::WHOLE).unwrap();
    let engine = StallOnce {
        reads: Arc::new(AtomicU64::new(0)),
    };
    let spec = RunSpec {
        threads: 1,
        operations: Some(1000),
        target_ops_per_sec: 1000.0,
        warmup: Duration::ZERO,
        max_execution: None,
        track_intended: true,
        count_network: false,
        stop_on_error: false,
        stall_timeout: None,
        status: StatusOptions::default(),
    };
    let outcome = execute(&workload.bind(&engine), &spec).unwrap();
    let read = outcome.histograms.get(OpKind::Read).unwrap();
    assert_eq!(read.ok.len(), 1000);
    // Service time: one slow operation among 1000, so p99 stays tiny.
    assert!(
        read.ok.value_at_quantile(0.99) < 20_000_000,
        "p99 service {}",
        read.ok.value_at_quantile(0.99)
    );
    assert!(read.ok.max() >= 300_000_000);
    // Intended: the ~300 operations due during the stall all waited, so
    // more than 20% of operations took over 50 ms from their intended start.
    let slow = read.intended.count_between(50_000_000, u64::MAX);
    assert!(slow > 200, "only {slow} operations show the stall");
    assert!(read.intended.value_at_quantile(0.99) > 100_000_000);
}
