//! One module per subcommand: each owns its arguments (clap structs) and
//! the glue from them to the library. `cli.rs` only dispatches.

pub mod bench;
pub mod device;
pub mod engines;
pub mod fit;
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
