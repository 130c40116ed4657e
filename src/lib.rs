//! kvperf: benchmark key-value and storage engines the way storage studies do.
//!
//! Data flows one way: workload (what to do) -> runner (threads, pacing,
//! timing) -> engine (where to do it) -> measure (histograms) -> output.

/// std's `eprintln!`, shadowed for the whole crate: a line that stderr
/// cannot take (full, a gone reader) is dropped instead of panicking or
/// ending kvperf by SIGPIPE ([`output::stderr`]). Defined before the
/// modules, so every `eprintln!` below resolves to it.
macro_rules! eprintln {
    () => {
        $crate::output::stderr::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stderr::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// std's `eprint!`, shadowed likewise (see `eprintln!`).
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::output::stderr::write(format_args!($($arg)*))
    };
}

pub mod cli;
pub mod clock;
mod commands;
pub mod device;
pub mod dialect;
pub mod engine;
pub mod error;
pub mod files;
pub mod fingerprint;
// Only in the unit tests and in cargo-fuzz's builds (which set `--cfg fuzzing`).
#[cfg(any(test, fuzzing))]
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
pub mod step;
#[cfg(test)]
mod testing;
pub mod trace;
pub mod units;
pub mod workload;
