//! One module per subcommand: glue from parsed arguments to the library.

pub mod bench;
pub mod plan;
pub mod report;
pub mod settle;
pub mod ycsb;
