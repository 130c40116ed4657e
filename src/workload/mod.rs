//! What to do: YCSB's core workload, db_bench's benchmarks and their generators.

pub mod dbbench;
pub mod generator;
pub mod ycsb;
