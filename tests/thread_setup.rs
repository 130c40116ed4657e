//! A client thread that cannot set up (a server refusing its connection,
//! past max_connections) calls the whole run off before the clock starts:
//! no other thread runs a window whose figures would belong to a study
//! one client short, and the failure is reported at once, naming the thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kvperf::engine::embedded::null::NullWorker;
use kvperf::engine::{
    ready, Call, ClientSlot, Engine, EngineInfo, Operations, Record, ScanResults, SetupFuture,
};
use kvperf::properties::Properties;
use kvperf::runner::{execute, RunSpec, StatusOptions};
use kvperf::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

/// The null engine, whose worker for thread `refused` cannot be made;
/// counts the operations the other workers perform.
struct RefusesOne {
    refused: usize,
    operations: AtomicU64,
}

struct Counting<'e> {
    operations: &'e AtomicU64,
    inner: NullWorker,
}

impl Engine for RefusesOne {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "refuses-one".into(),
            version: "test".into(),
            options: Default::default(),
        }
    }
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        if slot.index == self.refused {
            return ready(Err(anyhow::anyhow!("too many clients already")));
        }
        ready(Ok(Box::new(Counting {
            operations: &self.operations,
            inner: NullWorker,
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

impl Counting<'_> {
    fn count(&self) {
        self.operations.fetch_add(1, Ordering::Relaxed);
    }
}

impl Operations for Counting<'_> {
    fn read<'a>(
        &'a mut self,
        t: &'a str,
        k: &'a [u8],
        f: Option<&'a [&'a str]>,
        o: &'a mut Record,
    ) -> Call<'a> {
        self.count();
        self.inner.read(t, k, f, o)
    }
    fn scan<'a>(
        &'a mut self,
        t: &'a str,
        k: &'a [u8],
        n: usize,
        f: Option<&'a [&'a str]>,
        o: &'a mut ScanResults,
    ) -> Call<'a> {
        self.count();
        self.inner.scan(t, k, n, f, o)
    }
    fn update<'a>(&'a mut self, t: &'a str, k: &'a [u8], v: &'a Record) -> Call<'a> {
        self.count();
        self.inner.update(t, k, v)
    }
    fn insert<'a>(&'a mut self, t: &'a str, k: &'a [u8], v: &'a Record) -> Call<'a> {
        self.count();
        self.inner.insert(t, k, v)
    }
    fn delete<'a>(&'a mut self, t: &'a str, k: &'a [u8]) -> Call<'a> {
        self.count();
        self.inner.delete(t, k)
    }
}

#[test]
fn a_thread_that_cannot_set_up_fails_the_run_before_anything_is_measured() {
    let mut p = Properties::new();
    p.load_str("recordcount=1000\nreadproportion=1\nupdateproportion=0");
    let cfg = CoreConfig::from_properties(&p, false).unwrap();
    let workload = CoreWorkload::new(cfg, Phase::Run, 42, kvperf::shard::Shard::WHOLE).unwrap();
    let engine = RefusesOne {
        refused: 2,
        operations: AtomicU64::new(0),
    };
    // A time-bound window: before the fix the other threads ran all of it.
    let spec = RunSpec {
        threads: 4,
        operations: None,
        target_ops_per_sec: 0.0,
        warmup: Duration::ZERO,
        max_execution: Some(Duration::from_secs(2)),
        track_intended: false,
        costs: None,
        stop_on_error: false,
        before_window: None,
        stall_keeper: None,
        stall_timeout: None,
        status: StatusOptions::default(),
    };
    let err = execute(&workload.bind(&engine), &spec).expect_err("thread 2 was refused");
    let err = format!("{err:#}");
    assert!(
        err.contains("thread 2 setup") && err.contains("too many clients already"),
        "{err}"
    );
    assert_eq!(engine.operations.load(Ordering::Relaxed), 0, "nothing ran");
}
