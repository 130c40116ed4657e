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
//! Adding an engine is one file and one line in [`registry`].

pub mod db_bench_flags;
#[cfg(any(feature = "cassandra", feature = "mongodb"))]
pub(crate) mod driver_runtime;
#[cfg(feature = "rocksdb")]
pub mod elf_symbols;
pub mod emptying;
#[cfg(test)]
pub(crate) mod fake_listener;
pub mod kv;
pub mod loaded_keys;
mod locked;
pub mod null;
pub mod operations;
pub mod options;
pub mod reconnect;
pub mod record;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_library;
#[cfg(feature = "rocksdb")]
mod rocksdb_options_string;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_release;
#[cfg(all(test, any(feature = "redis", feature = "postgres")))]
pub(crate) mod secret_checks;
pub mod store;
pub mod store_lock;
pub mod ycsb_bindings;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use db_bench_flags::DbBenchFlags;
#[allow(unused_imports)] // a build with only the null engine uses none
pub(crate) use operations::{async_records, blocking_raw, blocking_records};
pub use operations::{call, ready, run_now, wait, Access, Call, ClientSlot, Operations, Runs};
pub use options::EngineOption;
pub use record::{Record, ScanResults};

use crate::error::{did_you_mean, InputError};
pub use crate::measure::events::{Activity, EventKind};
pub use crate::measure::{Failure, OpError, OpResult};
use crate::properties::Properties;

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

/// The default engine's library as loaded, named in `kvperf --version`:
/// "RocksDB 10.4.2, release library /root/.cache/kvperf/rocksdb/10.4.2/librocksdb.so".
pub fn default_engine_library() -> String {
    #[cfg(feature = "rocksdb")]
    return rocksdb_library::loaded().to_string();
    #[cfg(not(feature = "rocksdb"))]
    return "RocksDB not compiled in".to_string();
}

/// The library an embedded engine runs on as this process loaded it, when
/// it can be read at run time (`kvperf engines`).
pub fn loaded_library(engine: &str) -> Option<String> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => {
            let loaded = rocksdb_library::loaded();
            Some(format!(
                "RocksDB {}, {}",
                loaded.version_and_kind(),
                loaded.origin()
            ))
        }
        _ => None,
    }
}

/// Runs this command again on the engine library its properties ask for
/// (`rocksdb.version`), when another one is loaded: returns only when
/// nothing needs to change, or with the error (a release that is not
/// pinned, or lacks a function kvperf calls).
pub fn run_on_asked_library(engine: &str, props: &Properties) -> anyhow::Result<()> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocksdb_release::run_on_asked(props),
        _ => Ok(()),
    }
}

/// Fetches and checks, before anything runs, the engine library `props`
/// ask for (`rocksdb.version`).
pub fn check_asked_library(engine: &str, props: &Properties) -> anyhow::Result<()> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocksdb_release::check_asked(props),
        _ => {
            let _ = props;
            Ok(())
        }
    }
}

/// What a result file records about the engine.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EngineInfo {
    pub name: String,
    /// The library or server version actually in use.
    pub version: String,
    /// Effective options, defaults included, so a run can be repeated.
    pub options: BTreeMap<String, String>,
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
    /// server's data directory): the device kvperf accounts I/O for.
    fn data_location(&self) -> Option<std::path::PathBuf> {
        None
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

/// Where an engine keeps its data.
#[derive(Debug, Clone, Copy)]
pub enum StoreKind {
    /// Files in a data directory (`--db`); `owns` tells the engine's own
    /// top-level entries apart from anything else in the directory.
    Directory { owns: fn(&str) -> bool },
    /// A database server, reached at an address from the engine's options
    /// (`<engine>.host`, `<engine>.port`); `kvperf server start SERVER`
    /// runs one locally. `namespace` is the option that keeps two stores
    /// apart on one server (a keyspace, a database, a key prefix).
    Server {
        server: &'static str,
        namespace: &'static str,
    },
    /// Nowhere: the null engine.
    Nothing,
}

/// Raw key-value access for db_bench's benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvSupport {
    None,
    /// get, put and delete.
    Point,
    /// Also seek and next in key order (readseq, seekrandom).
    Ordered,
}

/// What an engine can do besides the five record operations (which every
/// engine supports).
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// Background work (flushes, compactions, checkpoints) that `settle`
    /// waits out; without it settle only makes writes durable.
    pub background_work: bool,
    /// A full compaction of the store (`settle --compact`).
    pub compact: bool,
    pub kv: KvSupport,
    /// Using data on a server that kvperf did not load (a YCSB table, a
    /// keyspace). Never a directory engine's: kvperf writes only into a
    /// data directory it made (docs/reliability.md, "Ownership").
    pub adopt: bool,
    /// YCSB scans return records in key order; false for engines that
    /// scan in another order (Cassandra: token order, as YCSB's binding).
    pub ordered_scans: bool,
    /// `update` of a missing key is `NotFound`; false for engines whose
    /// update is an upsert that creates the record (Cassandra's CQL
    /// `UPDATE`, as YCSB's binding).
    pub update_needs_existing: bool,
    /// An update of some fields writes the whole record: the engine stores
    /// each record as one value and updates by read, merge and write (the
    /// record codec). What the record-rewrite share of write amplification
    /// is stated for; false where the engine writes only the fields given
    /// or kvperf cannot say what it rewrites.
    pub whole_record_updates: bool,
    /// Whether [`Engine::client`] hands out clients whose calls wait
    /// ([`Call::waiting`]), for clients run as tasks on the runner's
    /// runtime (`clients=tasks`), and whether the clients run so unless told.
    pub async_ops: AsyncOps,
    /// Whether each client task reads and writes a socket of its own
    /// itself, opened in [`Engine::client`] on the worker that makes it,
    /// with no driver task between it and the socket. The runner pins such
    /// clients to one worker each (`taskscheduling=pinned`: the worker that
    /// polls a client's socket runs the client, and a reply wakes no other
    /// thread, as pgbench's threads each poll their own connections).
    /// Clients that hand requests to a driver's tasks (a shared session, a
    /// multiplexed connection) run on work-stealing workers. Meaningless
    /// without [`Capabilities::async_ops`].
    pub tasks_own_sockets: bool,
    /// The engine's own report of its state, per store and per level
    /// ([`Engine::stats_report`]; db_bench's `stats` and `levelstats`).
    pub stats_report: bool,
    /// Which background events [`Engine::activity`] reports, or why none.
    pub events: EventSupport,
}

/// The engine events a measurement can carry ([`Capabilities::events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSupport {
    /// [`Engine::activity`] reports these kinds.
    Reports(&'static [EventKind]),
    /// It reports none; why, in one phrase for results and `kvperf engines`.
    Unavailable(&'static str),
}

/// An engine's async operations ([`Capabilities::async_ops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncOps {
    /// Blocking clients only: clients run on threads.
    Unavailable,
    /// Clients run as tasks when asked (`clients=tasks`), on threads by
    /// default: measured faster here for this engine.
    OnRequest,
    /// Clients run as tasks unless `clients=threads`.
    ByDefault,
    /// As [`AsyncOps::ByDefault`] from this many clients up; fewer run on
    /// threads unless `clients=tasks` (measured faster for the engine: a
    /// lone client has nothing to share an event loop with, and a blocking
    /// connection saves the hop through the async driver's own task).
    ByDefaultFrom(usize),
}

impl AsyncOps {
    pub fn available(self) -> bool {
        self != AsyncOps::Unavailable
    }

    /// Whether a run of `clients` clients that does not say
    /// `clients=tasks|threads` runs them as tasks.
    pub fn tasks_by_default(self, clients: usize) -> bool {
        match self {
            AsyncOps::Unavailable | AsyncOps::OnRequest => false,
            AsyncOps::ByDefault => true,
            AsyncOps::ByDefaultFrom(least) => clients >= least,
        }
    }
}

/// What a caller may ask of an engine beyond the record operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Compact,
    Kv(KvSupport),
    Adopt,
    AsyncOps,
    StatsReport,
}

/// How `open` treats what is already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Start from an empty store: the engine removes its own data first
    /// (a YCSB load, a db_bench fill).
    Fresh,
    /// The store must exist already (`--use_existing_db`, settle).
    Existing,
    /// Use what is there, creating an empty store if there is none (a YCSB run).
    Any,
}

/// How to open an engine.
pub struct OpenOptions<'a> {
    /// The data directory, for [`StoreKind::Directory`] engines only.
    pub dir: Option<&'a Path>,
    /// Every property: an engine reads its own `<name>.` options.
    pub properties: &'a Properties,
    pub mode: OpenMode,
    /// The runner's runtime when the run's clients are tasks (an engine
    /// with [`Capabilities::async_ops`]): the engine runs its driver on it
    /// and starts no runtime of its own. None otherwise.
    pub runtime: Option<&'a tokio::runtime::Handle>,
}

impl OpenOptions<'_> {
    /// The data directory of a directory engine (checked by [`open`]).
    pub fn dir(&self) -> anyhow::Result<&Path> {
        self.dir
            .ok_or_else(|| anyhow::anyhow!("internal: a directory engine opened without --db"))
    }
}

pub struct EngineSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// The Cargo feature that compiles the engine in.
    pub feature: &'static str,
    pub store: StoreKind,
    pub capabilities: Capabilities,
    /// The `-p <name>.<option>` options, with defaults and meaning.
    pub options: &'static [EngineOption],
    pub open: fn(&OpenOptions) -> anyhow::Result<Box<dyn Engine>>,
    /// Maps db_bench's engine flags (`--cache_size`, `--sync`...) onto the
    /// engine's options; returns the flags it cannot honour.
    pub db_bench: fn(&DbBenchFlags, &mut Properties) -> Vec<&'static str>,
}

impl EngineSpec {
    pub fn uses_data_dir(&self) -> bool {
        matches!(self.store, StoreKind::Directory { .. })
    }

    pub fn has(&self, capability: Capability) -> bool {
        let c = &self.capabilities;
        match capability {
            Capability::Compact => c.compact,
            Capability::Kv(level) => c.kv >= level,
            Capability::Adopt => c.adopt,
            Capability::AsyncOps => c.async_ops.available(),
            Capability::StatsReport => c.stats_report,
        }
    }

    /// One clear error when the engine lacks `capability`; `asked_by` says
    /// which flag or plan setting asked for it.
    pub fn require(&self, capability: Capability, asked_by: &str) -> Result<(), InputError> {
        if self.has(capability) {
            return Ok(());
        }
        let what = match capability {
            Capability::Compact => "cannot compact its store",
            Capability::Kv(KvSupport::Ordered) => "cannot iterate keys in order",
            Capability::Kv(_) => "has no raw key-value access",
            Capability::Adopt => "cannot adopt a store kvperf did not load",
            Capability::AsyncOps => "has no async operations; its clients run on threads",
            Capability::StatsReport => "keeps no report of its own state",
        };
        let able: Vec<&str> = registry()
            .into_iter()
            .filter(|s| s.has(capability))
            .map(|s| s.name)
            .collect();
        Err(InputError::Invalid(format!(
            "engine '{}' {what} ({asked_by}); engines that can: {}",
            self.name,
            if able.is_empty() {
                "none in this build".into()
            } else {
                able.join(", ")
            }
        )))
    }

    /// Whether `dir` holds this engine's files (a directory engine): a
    /// store kvperf made is still there. Never a claim on a directory.
    pub fn recognizes(&self, dir: &Path) -> bool {
        match self.store {
            StoreKind::Directory { owns } => store::holds_owned(dir, owns),
            _ => false,
        }
    }
}

/// Declares the engines: for each, its module (compiled in with the Cargo
/// feature of the same name), its place in [`registry`] and in
/// [`KNOWN_ENGINES`]. Adding an engine is its file and one line below.
macro_rules! engines {
    ($($name:literal => $module:ident),* $(,)?) => {
        $(
            #[cfg(feature = $name)]
            pub mod $module;
        )*

        /// Every engine this kvperf knows, compiled in or not, with the Cargo
        /// feature that enables it: for "not compiled in" errors.
        pub const KNOWN_ENGINES: &[(&str, &str)] = &[("null", ""), $(($name, $name)),*];

        /// Every engine compiled into this binary.
        pub fn registry() -> Vec<&'static EngineSpec> {
            #[allow(unused_mut)]
            let mut specs = vec![&null::SPEC];
            $(
                #[cfg(feature = $name)]
                specs.push(&$module::SPEC);
            )*
            specs
        }
    };
}

engines! {
    "rocksdb" => rocksdb,
    "wiredtiger" => wiredtiger,
    "lmdb" => lmdb,
    "sqlite" => sqlite,
    "fjall" => fjall,
    "redb" => redb,
    "cassandra" => cassandra,
    "mongodb" => mongodb,
    "redis" => redis,
    "postgres" => postgres,
}

pub fn find(name: &str) -> Result<&'static EngineSpec, InputError> {
    let specs = registry();
    if let Some(spec) = specs.iter().find(|s| s.name == name) {
        return Ok(spec);
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    if let Some((_, feature)) = KNOWN_ENGINES.iter().find(|(n, _)| *n == name) {
        return Err(InputError::Invalid(format!(
            "engine '{name}' is not compiled into this kvperf; rebuild with `cargo build --release --features {feature}` (compiled in: {})",
            names.join(", ")
        )));
    }
    let known = KNOWN_ENGINES.iter().map(|(n, _)| *n);
    let hint = did_you_mean(name, known)
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    Err(InputError::Invalid(format!(
        "unknown engine '{name}'{hint}; available: {}",
        names.join(", ")
    )))
}

/// Opens `spec` after checking its options and, for a directory engine,
/// preparing (and marking) its data directory: a fresh store is only ever
/// made in a directory kvperf created, and only the engine's own files
/// are removed.
pub fn open(spec: &EngineSpec, opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    options::check_names(spec, opts.properties)?;
    let lock = match (spec.store, opts.dir) {
        (StoreKind::Directory { .. }, None) => {
            return Err(InputError::Invalid(format!(
                "engine '{}' keeps its data in a directory: give --db DIR",
                spec.name
            ))
            .into())
        }
        (StoreKind::Directory { .. }, Some(dir)) => store::prepare(spec, dir, opts.mode)?,
        (_, Some(dir)) => {
            return Err(InputError::Invalid(format!(
                "engine '{}' keeps no data directory, so --db '{}' has no use; drop it{}",
                spec.name,
                dir.display(),
                if matches!(spec.store, StoreKind::Server { .. }) {
                    format!(
                        " (the server's address comes from -p {}.host and {}.port)",
                        spec.name, spec.name
                    )
                } else {
                    String::new()
                }
            ))
            .into())
        }
        (_, None) => None,
    };
    let engine = (spec.open)(opts)?;
    Ok(match lock {
        Some(lock) => Box::new(locked::Locked { engine, lock }),
        None => engine,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_capability_names_the_engines_that_have_it() {
        let err = null::SPEC
            .require(Capability::Compact, "settle = \"compact\"")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("engine 'null' cannot compact"), "{err}");
        assert!(err.contains("settle = \"compact\""), "{err}");
        assert!(null::SPEC
            .require(Capability::Kv(KvSupport::Point), "x")
            .is_ok());
    }

    #[test]
    fn clients_run_as_tasks_by_default_only_where_the_engine_says() {
        let lone_on_a_thread = AsyncOps::ByDefaultFrom(2);
        assert!(!lone_on_a_thread.tasks_by_default(1));
        assert!(lone_on_a_thread.tasks_by_default(2));
        assert!(lone_on_a_thread.tasks_by_default(64));
        assert!(AsyncOps::ByDefault.tasks_by_default(1));
        assert!(!AsyncOps::OnRequest.tasks_by_default(64));
        assert!(!AsyncOps::Unavailable.tasks_by_default(64));
        #[cfg(feature = "redis")]
        {
            let redis = find("redis").expect("compiled in").capabilities.async_ops;
            assert!(!redis.tasks_by_default(1), "a lone Redis client: a thread");
            assert!(redis.tasks_by_default(4));
        }
    }

    #[test]
    fn unknown_engines_get_a_hint_and_known_ones_their_feature() {
        let err = find("rocksbd").err().expect("unknown").to_string();
        assert!(err.contains("did you mean 'rocksdb'"), "{err}");
    }
}
