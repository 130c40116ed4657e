//! A directory engine opened under kvperf's lock on its `--db`
//! ([`super::store_lock`]): the lock lives exactly as long as the engine,
//! released after the engine is dropped (fields drop in order).

use std::collections::BTreeMap;

use super::store_lock::StoreLock;
use super::{Activity, ClientSlot, Engine, EngineInfo, Operations, SetupFuture};

pub struct Locked {
    pub engine: Box<dyn Engine>,
    /// Held, never read: released when dropped, after the engine.
    #[allow(dead_code)]
    pub lock: StoreLock,
}

impl Engine for Locked {
    fn info(&self) -> EngineInfo {
        self.engine.info()
    }
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        self.engine.client(slot)
    }
    fn stats(&self) -> BTreeMap<String, u64> {
        self.engine.stats()
    }
    fn statistics_text(&self) -> Option<String> {
        self.engine.statistics_text()
    }
    fn stats_report(&self, per_level: bool) -> anyhow::Result<String> {
        self.engine.stats_report(per_level)
    }
    fn settle(&self, flush: bool) -> anyhow::Result<()> {
        self.engine.settle(flush)
    }
    fn compact(&self) -> anyhow::Result<()> {
        self.engine.compact()
    }
    fn footprint(&self) -> Result<u64, String> {
        self.engine.footprint()
    }
    fn close(&self) -> anyhow::Result<()> {
        self.engine.close()
    }
    fn data_location(&self) -> Option<std::path::PathBuf> {
        self.engine.data_location()
    }
    fn server_pids(&self) -> Vec<u32> {
        self.engine.server_pids()
    }
    fn activity(&self) -> Result<Activity, String> {
        self.engine.activity()
    }
}
