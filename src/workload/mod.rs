//! What to do: YCSB's core workload, db_bench's benchmarks and their
//! generators, a trace replayed (`replay`) and the YCSB workload fitted to
//! a trace (`fit`).

pub mod dbbench;
pub mod fit;
pub mod generator;
pub mod replay;
pub mod ycsb;
