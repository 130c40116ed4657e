//! The server engines: database servers reached over a socket at
//! `<engine>.host` and `<engine>.port` (`kvperf server start` runs one
//! locally). Each engine is one file, compiled in with the Cargo feature of
//! its name and listed in the registry ([`super::registry()`]), beside the
//! pieces they share.

// The engines name the seam as `super::…` (`super::Engine`,
// `super::options`): the seam's names, seen from this folder.
#[allow(unused_imports)]
use super::*;

/// What a server engine can do unless its declaration says otherwise
/// (`Capabilities { compact: true, ..SERVER }`): point key-value access;
/// scans in key order and updates of existing records only, each writing
/// the fields given (not whole records); a store on the server that kvperf
/// did not load can be adopted; an async driver whose clients run as tasks
/// unless `clients=threads`, through the driver's own tasks; no background
/// work, compaction, events or stats report until declared; no directory
/// store to share.
pub const SERVER: Capabilities = Capabilities {
    background_work: false,
    compact: false,
    kv: KvSupport::Point,
    adopt: true,
    ordered_scans: true,
    update_needs_existing: true,
    whole_record_updates: false,
    async_ops: AsyncOps::ByDefault,
    tasks_own_sockets: false,
    events: EventSupport::Unavailable("the engine reports no background events"),
    stats_report: false,
    // A server's store is not a directory kvperf opens: its lock is moot.
    shared_store: false,
};

#[cfg(feature = "cassandra")]
pub mod cassandra;
#[cfg(any(feature = "cassandra", feature = "mongodb"))]
pub(crate) mod driver_runtime;
#[allow(dead_code)] // each function serves some of the server engines
pub(crate) mod endpoint;
#[cfg(feature = "mongodb")]
pub mod mongodb;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod reconnect;
#[cfg(feature = "redis")]
pub mod redis;
