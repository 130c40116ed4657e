//! Where to do it: the engine seam.
//!
//! An engine is opened once per run ([`Engine`]) and hands each runner
//! thread its own [`EngineWorker`]. Engines only store and fetch; the runner
//! owns threads, pacing, timing and histograms (like fio's ioengine ops or
//! go-ycsb's `DB`). An operation returns [`OpResult`]; the runner counts
//! errors per operation type and never stops on one.

mod data_dir;
pub mod kv;
pub mod null;
pub mod record;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub use data_dir::{
    holds_store, prepare_data_dir, prepare_empty_store, wipe_store, PRECONDITION_FILE,
};
pub use kv::KvWorker;
pub use record::{Record, ScanResults};

use crate::error::{did_you_mean, InputError};
use crate::workload::properties::Properties;

/// Why an operation did not succeed. YCSB's `Status`, reduced to what the
/// report distinguishes: `NOT_FOUND` and `ERROR` (with the engine's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    NotFound,
    Failed(String),
}

pub type OpResult = Result<(), OpError>;

/// Per-thread handle; all record operations of YCSB's `DB` interface.
/// `fields: None` means all fields, as YCSB's `null` field set does.
pub trait EngineWorker: Send {
    fn read(
        &mut self,
        table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult;
    fn scan(
        &mut self,
        table: &str,
        start_key: &[u8],
        count: usize,
        fields: Option<&[&str]>,
        out: &mut ScanResults,
    ) -> OpResult;
    fn update(&mut self, table: &str, key: &[u8], values: &Record) -> OpResult;
    fn insert(&mut self, table: &str, key: &[u8], values: &Record) -> OpResult;
    fn delete(&mut self, table: &str, key: &[u8]) -> OpResult;
}

/// What a result file records about the engine.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
    /// Effective options, defaults included, so a run can be repeated.
    pub options: BTreeMap<String, String>,
}

pub trait Engine: Send + Sync {
    fn info(&self) -> EngineInfo;
    fn worker(&self) -> anyhow::Result<Box<dyn EngineWorker>>;
    /// A raw key-value handle for `kvperf bench`; engines without one say so.
    fn kv_worker(&self) -> anyhow::Result<Box<dyn KvWorker + '_>> {
        Err(InputError::Invalid(format!(
            "engine '{}' does not support kvperf bench",
            self.info().name
        ))
        .into())
    }
    /// Engine-reported counters (bytes written, SST size...), read after a run.
    fn stats(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
    /// The engine's own statistics dump, when enabled (RocksDB `statistics`).
    fn statistics_text(&self) -> Option<String> {
        None
    }
    /// Waits until the engine's background work (flushes, compactions) is
    /// done, so a following measurement starts from a quiet store; with
    /// `flush`, memtables are flushed first.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }
    /// Compacts the whole store (a manual full compaction), so that a
    /// following measurement does not depend on how many small files the
    /// steps before it left behind.
    fn compact(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Flushes and releases the store; called once, after the measured window.
    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// How to open an engine: its data directory and all properties (an engine
/// reads its own `<name>.` prefixed options and rejects unknown ones).
pub struct OpenOptions<'a> {
    pub db_dir: &'a Path,
    pub properties: &'a Properties,
}

pub struct EngineSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// Whether the engine keeps data in `--db` (the null engine does not).
    pub uses_data_dir: bool,
    /// The `-p <prefix>.<option>` names this engine understands.
    pub option_names: &'static [&'static str],
    pub open: fn(&OpenOptions) -> anyhow::Result<Box<dyn Engine>>,
}

/// Every engine compiled into this binary.
pub fn registry() -> Vec<&'static EngineSpec> {
    #[allow(unused_mut)]
    let mut specs = vec![&null::SPEC];
    #[cfg(feature = "rocksdb")]
    specs.push(&rocksdb::SPEC);
    specs
}

pub fn find(name: &str) -> Result<&'static EngineSpec, InputError> {
    let specs = registry();
    if let Some(spec) = specs.iter().find(|s| s.name == name) {
        return Ok(spec);
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    let hint = did_you_mean(name, names.iter().copied())
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    Err(InputError::Invalid(format!(
        "unknown engine '{name}'{hint}; available: {}",
        names.join(", ")
    )))
}

/// Opens `spec`, preparing (and marking) its data directory first.
pub fn open(spec: &EngineSpec, opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    check_option_names(spec, opts.properties)?;
    if spec.uses_data_dir {
        prepare_data_dir(opts.db_dir, spec.name)?;
    }
    (spec.open)(opts)
}

/// An engine's own options are kvperf's, so a typo there is an error, not
/// a pass-through (unlike unknown YCSB properties).
fn check_option_names(spec: &EngineSpec, props: &Properties) -> Result<(), InputError> {
    let prefix = format!("{}.", spec.name);
    for (name, _) in props.with_prefix(&prefix) {
        if !spec.option_names.contains(&name) {
            let hint = did_you_mean(name, spec.option_names.iter().copied())
                .map(|n| format!(" (did you mean '{prefix}{n}'?)"))
                .unwrap_or_default();
            return Err(InputError::Invalid(format!(
                "unknown {} option '{prefix}{name}'{hint}; known: {}",
                spec.name,
                spec.option_names.join(", ")
            )));
        }
    }
    Ok(())
}
