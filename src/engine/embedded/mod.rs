//! The embedded engines: libraries that run in kvperf's process and keep
//! their data in a data directory (`--db`), and the null engine, which
//! keeps none. Each engine is one file, compiled in with the Cargo feature
//! of its name and listed in the registry ([`super::registry()`]).

// The engines name the seam as `super::…` (`super::Engine`,
// `super::options`): the seam's names, seen from this folder.
#[allow(unused_imports)]
use super::*;

/// What an embedded engine can do unless its declaration says otherwise
/// (`Capabilities { compact: true, ..EMBEDDED }`): ordered key-value access
/// and scans in key order; updates of existing records only, each
/// rewriting the whole record (the record codec); blocking clients only;
/// nothing adopted (kvperf writes only into a data directory it made); no
/// background work, compaction, events or stats report until declared.
pub const EMBEDDED: Capabilities = Capabilities {
    background_work: false,
    compact: false,
    kv: KvSupport::Ordered,
    adopt: false,
    ordered_scans: true,
    update_needs_existing: true,
    whole_record_updates: true,
    async_ops: AsyncOps::Unavailable,
    tasks_own_sockets: false,
    events: EventSupport::Unavailable("the engine reports no background events"),
    stats_report: false,
    shared_store: false,
};

#[cfg(feature = "rocksdb")]
pub mod elf_symbols;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod null;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_library;
#[cfg(feature = "rocksdb")]
mod rocksdb_options_string;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_release;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_trace;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;
