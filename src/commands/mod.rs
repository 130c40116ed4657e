//! One module per subcommand: each owns its arguments (clap structs) and
//! the glue from them to the library. `cli.rs` only dispatches.

pub mod bench;
pub mod device;
pub mod engines;
mod hdr_logs;
mod live;
pub mod merge;
pub mod plan;
pub mod report;
pub mod server;
pub mod settle;
mod step;
pub mod verdict;
pub mod ycsb;
