//! The `null` engine: does nothing and succeeds, like YCSB's `BasicDB` with
//! `basicdb.verbose=false`. It exists only to measure the driver's own cost.

use super::{
    AsyncOps, Capabilities, Engine, EngineInfo, EngineSpec, EngineWorker, KvSupport, KvWorker,
    OpError, OpResult, OpenOptions, Record, ScanResults, StoreKind, ThreadSlot,
};

pub static SPEC: EngineSpec = EngineSpec {
    name: "null",
    about: "does nothing and returns OK; measures kvperf's own overhead",
    feature: "",
    store: StoreKind::Nothing,
    capabilities: Capabilities {
        background_work: false,
        compact: false,
        kv: KvSupport::Point,
        adopt: false,
        ordered_scans: true,
        update_needs_existing: true,
        async_ops: AsyncOps::Unavailable,
    },
    options: &[],
    open,
    // Nothing to configure: every engine flag is one it cannot honour.
    db_bench: |flags, _| flags.given(),
};

fn open(_: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(NullEngine))
}

pub struct NullEngine;

impl Engine for NullEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "null".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            options: Default::default(),
        }
    }

    fn worker(&self, _: ThreadSlot) -> anyhow::Result<Box<dyn EngineWorker + '_>> {
        Ok(Box::new(NullWorker))
    }

    fn kv_worker(&self, _: ThreadSlot) -> anyhow::Result<Box<dyn KvWorker + '_>> {
        Ok(Box::new(NullWorker))
    }

    /// Nothing runs in the background and nothing is stored.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }

    fn footprint(&self) -> Result<u64, String> {
        Err("the null engine stores nothing".into())
    }

    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

pub struct NullWorker;

impl EngineWorker for NullWorker {
    fn read(&mut self, _: &str, _: &[u8], _: Option<&[&str]>, _: &mut Record) -> OpResult {
        Ok(())
    }
    fn scan(
        &mut self,
        _: &str,
        _: &[u8],
        _: usize,
        _: Option<&[&str]>,
        _: &mut ScanResults,
    ) -> OpResult {
        Ok(())
    }
    fn update(&mut self, _: &str, _: &[u8], _: &Record) -> OpResult {
        Ok(())
    }
    fn insert(&mut self, _: &str, _: &[u8], _: &Record) -> OpResult {
        Ok(())
    }
    fn delete(&mut self, _: &str, _: &[u8]) -> OpResult {
        Ok(())
    }
}

/// Every key "exists" with an empty value, so `kvperf bench --engine null`
/// measures only the benchmark loop. It has no order to iterate in
/// ([`KvSupport::Point`]), so seek finds nothing.
impl KvWorker for NullWorker {
    fn get(&mut self, _: &[u8]) -> Result<usize, OpError> {
        Ok(0)
    }
    fn put(&mut self, _: &[u8], _: &[u8]) -> OpResult {
        Ok(())
    }
    fn delete(&mut self, _: &[u8]) -> OpResult {
        Ok(())
    }
    fn seek(&mut self, _: Option<&[u8]>, _: bool) -> Result<bool, OpError> {
        Ok(false)
    }
    fn next(&mut self) -> Result<bool, OpError> {
        Ok(false)
    }
    fn current(&self) -> Option<(&[u8], &[u8])> {
        None
    }
}
