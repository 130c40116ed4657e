//! One module per subcommand: each owns its arguments (clap structs) and
//! the glue from them to the library. `cli.rs` only dispatches.

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

/// Checks a step's command line (`load|run|bench|device ...`, without the
/// program) as that command checks it before it opens an engine or
/// measures: the plan runner's steps, each before the first runs, through
/// the same parser (clap, then the command's own checks).
pub(crate) fn check_step(args: &[String]) -> anyhow::Result<()> {
    use crate::cli::Command;
    let words = std::iter::once("kvperf".into()).chain(args.iter().map(Into::into));
    let cli = crate::cli::parse(words).map_err(|e| match e.downcast::<clap::Error>() {
        Ok(clap) => crate::error::InputError::Invalid(crate::cli::clap_message(&clap)).into(),
        Err(e) => e,
    })?;
    match cli.command {
        Command::Load(a) => ycsb::check_step(&a, crate::workload::ycsb::Phase::Load),
        Command::Run(a) => ycsb::check_step(&a, crate::workload::ycsb::Phase::Run),
        Command::Bench(a) => bench::check_step(&a),
        // A device step's flags are numbers and sizes clap has read.
        _ => Ok(()),
    }
}

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
