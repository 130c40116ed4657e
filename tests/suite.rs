//! The integration tests, one binary: each module was its own test binary,
//! and every one of those linked the whole library again (51 links of the
//! same code; ARCHITECTURE.md, "Tests"). Run one module with
//! `cargo test --release --locked --test suite MODULE::`.
//!
//! Every test here shares one process with the others and runs beside them
//! (two at a time on two cores): a test may not change the process's
//! environment, working directory or signal handlers, and one that needs a
//! machine-wide resource (the single-node Slurm cluster, Kubernetes'
//! binaries) holds it through `common::machine` (shared, or alone to stop
//! it). tests/memory.rs stays a binary of its own: it reads the peak of all
//! its children.

// The 120-line bound on a function (Cargo.toml's lints) is the product's:
// a test that walks one scenario from start to end reads best in one piece.
#![allow(clippy::too_many_lines)]

mod common;

mod accounting;
mod adaptive_repeats;
mod amplification;
mod async_runner;
mod bad_input;
mod bench_scripts;
mod bmc;
mod compare_gate;
mod coordinated_omission;
mod cost_window;
mod data_integrity;
mod dbbench;
mod deploy;
mod device;
mod dialects;
mod docs_commands;
mod engine_events;
mod engine_loop;
mod engines;
mod examples;
mod faults;
mod ferretdb;
mod full_disk;
mod hostile;
mod interrupt;
mod kubernetes;
mod logical_bytes;
mod metrics;
mod output_paths;
mod plan;
mod plan_rocksdb;
mod power;
mod report_charts;
mod report_html;
mod rocksdb_engine;
mod rocksdb_library;
mod rocksdb_releases;
mod server_unavailable;
mod shard;
mod slurm;
mod sweep;
mod thread_setup;
mod timeline;
mod traces;
mod what_was_run;
mod wrong_port;
mod ycsb_runs;
mod your_ssd;
