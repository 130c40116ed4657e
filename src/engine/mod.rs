//! Where to do it: the engine seam.
//!
//! An engine is opened once per run ([`Engine`]) and hands each client its
//! own [`Operations`] ([`Engine::client`]), made for a [`ClientSlot`]: the
//! client's index and the client count (go-ycsb's `InitThread`), whether it
//! runs on a thread or as a task ([`Runs`]), and whether it uses YCSB's
//! record operations or db_bench's raw ones ([`Access`]). Engines only
//! store and fetch; the runner owns threads, pacing, timing and histograms
//! (like fio's ioengine ops or go-ycsb's `DB`). An operation returns a
//! [`Call`]: a blocking engine's result, already there (no allocation
//! unless it failed), or an async driver's future ([`Call::waiting`]). Its
//! outcome is an [`OpResult`]; the runner counts errors per operation type
//! and never stops on one.
//!
//! Three rules keep the seam fit for every kind of engine:
//! - **Location-neutral**: an engine keeps its data in a directory, on a
//!   server, or nowhere ([`StoreKind`]); nothing outside this module assumes
//!   a directory.
//! - **Capabilities, not silent no-ops**: what an engine can do beyond the
//!   five operations is declared in [`Capabilities`]; asking for what it
//!   lacks is one clear error ([`EngineSpec::require`]).
//! - **Engine-owned lifecycle**: a fresh store, adopting an existing one,
//!   and mapping db_bench's flags are the engine's calls ([`OpenMode`],
//!   [`EngineSpec::db_bench`]).
//!
//! Workloads write an operation once, as async code: a client task awaits
//! it, a client thread runs it with [`wait`] (one poll for a done call).
//! An embedded engine writes plain methods returning [`OpResult`] and
//! declares them with `blocking_records!` / `blocking_raw!`; a server
//! engine writes async methods over its connection and declares them with
//! `async_records!`, each call made by [`call`]`(WAITS, ..)`: done at once
//! on a blocking connection, boxed as `Waiting` on an async one. An engine
//! with an async driver ([`Capabilities::async_ops`]) runs its clients'
//! I/O on the runner's runtime, which the runner lends it at open
//! ([`OpenOptions::runtime`]); blocking engines never see it.
//!

pub mod capabilities;
pub mod db_bench_flags;
pub mod embedded;
pub mod emptying;
pub mod kv;
pub mod loaded_keys;
mod locked;
mod opening;
pub mod operations;
pub mod options;
pub mod record;
mod registry;
pub mod server;
#[cfg(test)]
mod server_names;
pub mod spec;
pub mod store;
pub mod store_lock;
pub mod ycsb_bindings;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use capabilities::{
    AsyncOps, Capabilities, Capability, EngineDirs, EventSupport, KvSupport, StoreKind,
};
pub use db_bench_flags::DbBenchFlags;
pub use opening::open;
#[allow(unused_imports)] // a build with only the null engine uses none
pub(crate) use operations::{
    async_record_call, async_records, blocking_raw, blocking_record_call, blocking_records,
    record_operations,
};
pub use operations::{
    call, ready, ready_client, run_now, wait, Access, Call, ClientSlot, Operations, Runs,
    ScanRequest,
};
pub use options::EngineOption;
pub use record::{Record, ScanResults};
pub use registry::{
    check_asked_library, default_engine_library, find, loaded_library, registry,
    run_on_asked_library, KNOWN_ENGINES,
};
pub use spec::{EngineSpec, OpenMode, OpenOptions};

use crate::error::InputError;
pub use crate::measure::events::{Activity, EventKind};
pub use crate::measure::{Failure, OpError, OpResult};

/// Setting up something on the runner's runtime (an async worker).
pub type SetupFuture<'a, T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send + 'a>>;

/// Which runner thread a worker serves, and how many there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSlot {
    pub index: usize,
    pub count: usize,
}

/// The engine used when none is named (`--engine`, a plan's `engine`).
pub const DEFAULT_ENGINE: &str = "rocksdb";
/// What a result file records about the engine.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EngineInfo {
    pub name: String,
    /// The library or server version actually in use.
    pub version: String,
    /// Effective options, defaults included, so a run can be repeated.
    pub options: BTreeMap<String, String>,
}

impl EngineInfo {
    /// What `spec`'s engine records of itself: the version in use and the
    /// options in effect.
    pub fn new(spec: &EngineSpec, version: String, options: &BTreeMap<String, String>) -> Self {
        Self {
            name: spec.name.into(),
            version,
            options: options.clone(),
        }
    }
}

/// An open engine. Optional abilities return an error naming what is
/// missing by default; callers check [`Capabilities`] first so that the
/// user gets the message before any work is done.
pub trait Engine: Send + Sync {
    fn info(&self) -> EngineInfo;
    /// One client's [`Operations`], made for `slot`: a blocking engine's
    /// at once ([`operations::ready`]); an async driver's on the runtime
    /// the engine was opened with ([`OpenOptions::runtime`]) when the
    /// client is a task, or blocking on the engine's own runtime when it is
    /// a thread. Raw access on an engine without it
    /// ([`Capabilities::kv`]) is an error ([`no_raw_access`]).
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>>;
    /// Engine-reported counters (bytes written, SST size...), read after a
    /// run; empty when the engine has none.
    fn stats(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
    /// The engine's own statistics dump, when enabled (RocksDB `statistics`).
    fn statistics_text(&self) -> Option<String> {
        None
    }
    /// The engine's own report of its state ([`Capabilities::stats_report`]):
    /// the whole store's, or per level with `per_level`.
    fn stats_report(&self, per_level: bool) -> anyhow::Result<String> {
        let _ = per_level;
        Err(unsupported(&self.info().name, "a report of its own state"))
    }
    /// Waits until the engine's background work (compactions, checkpoints)
    /// is done, so a following measurement starts from a quiet store; with
    /// `flush`, buffered writes (memtables) are written out first and made
    /// durable. Every engine says what this means for it; one without
    /// background work only syncs.
    fn settle(&self, flush: bool) -> anyhow::Result<()>;
    /// Compacts the whole store ([`Capabilities::compact`]).
    fn compact(&self) -> anyhow::Result<()> {
        Err(unsupported(&self.info().name, "compaction"))
    }
    /// Bytes of the engine's own data (its files, or a server's data
    /// directory): the numerator of space amplification. `Err` says why
    /// it is unknown.
    fn footprint(&self) -> Result<u64, String>;
    /// Flushes and releases the store; called once, after the measured window.
    fn close(&self) -> anyhow::Result<()>;
    /// Where the store's files are (a directory engine's directory, a local
    /// server's data directory): the device kvperf accounts I/O for. By
    /// default the working directory of the first of [`Self::server_pids`]
    /// (Redis' `--dir`, the postmaster's data directory); none without one.
    fn data_location(&self) -> Option<std::path::PathBuf> {
        let pid = *self.server_pids().first()?;
        crate::host::processes::cwd_of(pid)
    }
    /// A local server's process IDs, for its CPU and I/O (server engines).
    fn server_pids(&self) -> Vec<u32> {
        Vec::new()
    }
    /// What the engine's background work is doing now: the flushes,
    /// compactions, stalls, checkpoints... in progress, and the cumulative
    /// counts of finished ones ([`Capabilities::events`]). Polled a few
    /// times a second during a window by a sampler thread, so it must be
    /// cheap and must not use a client's connection: a server engine asks
    /// over a connection of its own, an embedded engine through its handle.
    /// `Err` says why it cannot answer now.
    fn activity(&self) -> Result<Activity, String> {
        Err(format!(
            "engine '{}' reports no background activity",
            self.info().name
        ))
    }
}
/// The error of a raw-access client asked of an engine without it.
pub fn no_raw_access<'a>(engine: &str) -> SetupFuture<'a, Box<dyn Operations + 'a>> {
    ready(Err(unsupported(
        engine,
        "raw key-value access (kvperf bench)",
    )))
}

/// The error of a default method: the engine lacks `what`.
pub fn unsupported(engine: &str, what: &str) -> anyhow::Error {
    InputError::Invalid(format!("engine '{engine}' has no {what}")).into()
}
