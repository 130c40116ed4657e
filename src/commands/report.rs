//! `kvperf report` and `kvperf compare`: results files -> the briefs' tables.

use crate::cli::{CompareArgs, ReportArgs};
use crate::error::InputError;
use crate::report;

pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    let study = report::load(&args.results)?;
    report::write(&study, &args.out)?;
    for name in ["report.md", "report.csv", "report.html"] {
        println!("{}", args.out.join(name).display());
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
    print!("{}", report::build(&study, false).to_markdown());
    Ok(())
}
