//! One module per subcommand: glue from parsed arguments to the library.

pub mod bench;
pub mod ycsb;
pub mod settle;
