//! kvperf: benchmark key-value and storage engines the way storage studies do.
//!
//! Data flows one way: workload (what to do) -> runner (threads, pacing,
//! timing) -> engine (where to do it) -> measure (histograms) -> output.

pub mod cli;
pub mod clock;
mod commands;
pub mod device;
pub mod dialect;
pub mod engine;
pub mod error;
pub mod files;
pub mod fingerprint;
#[doc(hidden)]
pub mod fuzzing;
pub mod host;
pub mod measure;
pub mod metrics_endpoint;
pub mod output;
pub mod plan;
pub mod private_args;
pub mod properties;
pub mod report;
pub mod results;
pub mod runner;
pub mod server;
pub mod shard;
pub mod shipped;
pub mod units;
pub mod workload;
