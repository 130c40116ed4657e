//! One module per subcommand: each owns its arguments (clap structs) and
//! the glue from them to the library. `cli.rs` only dispatches (and
//! checks a plan's step command lines with the same parser,
//! `cli::check_step`, which it hands to `plan`).

pub mod bench;
pub mod device;
pub mod engines;
pub mod fit;
pub mod fit_check;
mod hdr_logs;
mod live;
pub mod merge;
pub mod plan;
pub mod replay;
pub mod report;
pub mod server;
pub mod settle;
pub mod trace;
pub mod verdict;
pub mod ycsb;

/// How a step's process ends when a stall (or a wait around the window
/// that outlived `stalltimeout`, or an interrupt there) leaves calls that
/// nothing can cancel (a blocked read of a stopped server, an engine
/// opening), after the step's [`crate::runner::StallKeeper`] kept what was
/// measured: `why` in one line and a run failure (exit 3).
pub(crate) fn end_after_stall(why: &str) -> ! {
    eprintln!("kvperf: {why}");
    // Not `process::exit`: C++ static destructors (RocksDB's) would run
    // while the engine's own threads still use them, and crash (exit 139
    // seen when an interrupt came during RocksDB's opening). Stderr is
    // unbuffered and the output is already written (fsync'd); stdout is
    // flushed first.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit(2) ends the process without running any destructor.
    unsafe { libc::_exit(i32::from(crate::error::EXIT_RUN)) }
}

/// The stall keeper of a step a command runs: it keeps nothing until the
/// step says what, and ends the process with [`end_after_stall`].
pub(crate) fn stall_keeper() -> crate::runner::StallKeeper {
    crate::runner::StallKeeper::new(end_after_stall)
}
