//! Traces: what a load or run did, operation by operation, in a compact
//! binary file (docs/traces.md): capture one, show it, import other tools'
//! traces into it. Replaying one on any engine and fitting a YCSB workload
//! to one are workloads (`workload::replay`, `workload::fit`), above this.
//!
//! - [`format`], [`record`], [`varint`]: the file's layout.
//! - [`writer`], [`reader`]: writing and reading it, bounded.
//! - [`capture`]: `-p trace.output=FILE` during a load or run.
//! - [`show`]: `kvperf trace show`.

pub mod capture;
pub mod format;
pub mod import;
pub mod output;
pub mod reader;
pub mod record;
pub mod show;
pub mod varint;
pub mod writer;

pub use format::Header;
pub use reader::{read_trace, TraceReader};
pub use record::{OpType, TraceOp};

/// The operations of a trace in the order they were issued: by intended
/// start, then start, then client (a replay's and a fit's order).
pub fn in_time_order(ops: &mut [TraceOp]) {
    ops.sort_by_key(|op| (op.intended_ns, op.start_ns, op.client));
}
