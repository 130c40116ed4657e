//! What an engine declares about itself: where it keeps its data
//! ([`StoreKind`]) and what it can do beyond the five record operations
//! ([`Capabilities`]); asking for what it lacks is one clear error
//! ([`super::EngineSpec::require`]).

use super::EventKind;
#[cfg(doc)]
use super::{Call, Engine};

/// Where an engine keeps its data.
#[derive(Debug, Clone, Copy)]
pub enum StoreKind {
    /// Files in a data directory (`--db`); `owns` tells the engine's own
    /// top-level entries apart from anything else in the directory, and
    /// `dirs` which of them the engine makes as directories (None: none).
    Directory {
        owns: fn(&str) -> bool,
        dirs: Option<EngineDirs>,
    },
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

/// The directories an engine makes among its files: at which of its
/// top-level names, and the names it makes inside them, at any depth. A
/// `--fresh` removes such a directory only if it holds nothing else.
#[derive(Debug, Clone, Copy)]
pub struct EngineDirs {
    pub at: &'static [&'static str],
    pub holds: fn(&str) -> bool,
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
    /// Several processes may open a directory engine's store at once
    /// (LMDB, SQLite). Without it the engine locks the store for one
    /// process (RocksDB's `LOCK`), so kvperf's own lock is taken exclusive
    /// to use the store too: a second kvperf is named in one line, exit 2,
    /// not refused by the engine in its words, exit 3.
    pub shared_store: bool,
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
