//! `kvperf report` and `kvperf compare`: results files -> the briefs' tables.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::InputError;
use crate::files::Destination;
use crate::report;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results files of `kvperf plan run`, or results of single steps
    /// (`kvperf load|run|merge --format json --output FILE`), each its own
    /// configuration named after the file.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Directory for report.md, report.csv and report.html.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Also write every step's timeline (per second: operations, failures,
    /// p50/p99/p99.9/max per operation type) as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One results file with two or more configs, or several files (plan
    /// results or single steps' results, as for `kvperf report`).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
}

pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    let inputs: Vec<&Path> = args.results.iter().map(PathBuf::as_path).collect();
    report::check_out(&args.out, "--out", &inputs)?;
    let timeline = args
        .timeline
        .as_deref()
        .map(|path| Destination::check(path, "--timeline", report::timeline_csv::WRITTEN, &inputs))
        .transpose()?;
    let study = report::load(&args.results)?;
    report::write(&study, &args.out, &inputs)?;
    for name in ["report.md", "report.csv", "report.html"] {
        crate::say!("{}", args.out.join(name).display());
    }
    if let Some(timeline) = timeline {
        timeline.write(report::timeline_csv::csv(&study).as_bytes())?;
        crate::say!("{}", timeline.path().display());
    }
    Ok(())
}

pub fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let study = report::load(&args.results)?;
    if study.series.len() < 2 {
        return Err(InputError::Invalid(format!(
            "nothing to compare: the results hold one configuration ('{}'); give a file with two configs or two files",
            study.series.first().map_or("", String::as_str)
        ))
        .into());
    }
    crate::output::stdout::say(&report::build(&study, false).to_markdown());
    Ok(())
}
