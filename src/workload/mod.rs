//! What to do: YCSB's core workload, its generators and its properties.

pub mod dbbench;
pub mod generator;
pub mod properties;
pub mod ycsb;
