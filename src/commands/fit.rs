//! `kvperf fit TRACE --output FILE`: a YCSB workload file fitted to a
//! trace, and each key-popularity candidate's goodness of fit.

use std::path::PathBuf;

use clap::Args;

use crate::files::Destination;
use crate::output::{self, Format};

#[derive(Debug, Args)]
pub struct FitArgs {
    /// The trace (`-p trace.output=FILE`, or `kvperf trace import`).
    pub trace: PathBuf,
    /// The workload file to write (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
}

pub fn run(args: FitArgs) -> anyhow::Result<()> {
    let destination =
        Destination::check_or_stream(&args.output, "--output", output::TEXT, &[&args.trace])?;
    let (header, ops) = crate::trace::read_trace(&args.trace)?;
    if ops.is_empty() {
        return Err(crate::error::InputError::Invalid(format!(
            "trace '{}' holds no operations",
            args.trace.display()
        ))
        .into());
    }
    let fit = crate::trace::fit::fit(&header, &ops);
    let source = format!("'{}' ({})", args.trace.display(), header.source);
    match destination.stream() {
        // The file goes to stdout: the table beside it on stderr.
        Some(_) => eprintln!("{}", fit.table().trim_end()),
        None => crate::say!("{}", fit.table().trim_end()),
    }
    output::emit(
        fit.workload_file(&source),
        Format::Text,
        "fit",
        Some(&destination),
    )
}
