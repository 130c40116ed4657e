//! The trace file's frame (docs/traces.md has the whole layout):
//!
//! ```text
//! "kvperf-file/1 trace\n"           magic: kvperf's signature line
//! u16 little-endian                 format version (1)
//! varint N, N bytes                 header: JSON (Header)
//! ( 'B' client count length bytes )*  blocks: one client's operations,
//!                                   delta-encoded from the block's start
//! 'E' varint N, N bytes             end: JSON (Trailer); absent = truncated
//! ```
//!
//! Blocks are independent (each starts its deltas afresh), so clients
//! flush their own buffers in any order and a reader needs one block in
//! memory at a time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::files::Written;

/// The first bytes of every trace: kvperf's file signature, one line.
pub const MAGIC: &[u8] = b"kvperf-file/1 trace\n";
/// The format version this kvperf writes and reads.
pub const VERSION: u16 = 1;
/// Tags of what follows the header.
pub const BLOCK: u8 = b'B';
pub const END: u8 = b'E';
/// The most bytes a header or trailer may have.
pub const MAX_JSON: u64 = 1 << 20;
/// The most bytes one block may have; a client flushes at [`FLUSH_AT`].
pub const MAX_BLOCK: u64 = 16 << 20;
pub const FLUSH_AT: usize = 256 << 10;

/// The file kind kvperf may replace: a trace it wrote.
pub const WRITTEN: Written = Written {
    what: "kvperf trace",
    recognizes: |head| head.starts_with(MAGIC),
    extension: "kvtrace",
};

/// What the trace is of, written before its operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// What made it: `kvperf run`, `kvperf load`, `csv`, `twitter`.
    pub source: String,
    /// kvperf's version and commit.
    pub kvperf: String,
    /// The engine it ran on, if it ran.
    #[serde(default)]
    pub engine: Option<String>,
    /// The table its operations name (`usertable`).
    pub table: String,
    /// Wall-clock time of the trace's time 0, in ns since the Unix epoch.
    pub epoch_unix_ns: u64,
    /// Clients that issued the operations.
    pub clients: u32,
    /// Operations had intended starts (a target rate): otherwise each
    /// operation's intended start is its start.
    pub paced: bool,
    #[serde(default)]
    pub target_ops_per_sec: f64,
    /// The properties the run was given (`-P` files, then `-p`).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
}

/// Written last: a trace without it did not finish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    /// Operations in all blocks.
    pub operations: u64,
}
