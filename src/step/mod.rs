//! The step: one measured run of a workload on an engine, between the
//! command that asks for it (`commands/`) and the runner that drives its
//! clients (`runner/`). A command turns its arguments into a step's
//! pieces (the client's settings, the run specification, the engine to
//! measure) and the step's outcome into output; the step measures the
//! window (`window.rs`), with every cost counter read at its open and
//! close, and fills the typed [`crate::results::StepOutput`].
//!
//! - `window.rs`: the measured window and what it cost, the step output's
//!   warnings and error, what a stall keeps;
//! - `client.rs`: the client's settings a YCSB step reads from its
//!   properties and flags, and the run specification they make;
//! - `dbbench.rs`: one db_bench benchmark run as a window;
//! - `closing.rs`: the engine's close and drop after the window, and
//!   any call of the step's own to a server, bounded.

pub mod client;
mod closing;
pub mod dbbench;
mod window;

pub use closing::{bounded, close_engine, close_sessions, Ended, Unanswered};
pub use window::*;
