//! `kvperf fit TRACE --output FILE`: a YCSB workload file fitted to a
//! trace, and each key-popularity candidate's goodness of fit; with
//! `--check`, the trace and the fitted workload run side by side
//! ([`super::fit_check`]).

use std::path::PathBuf;

use clap::Args;

use super::fit_check::{self, CheckOn};
use crate::error::InputError;
use crate::files::Destination;
use crate::output::{self, Format};

#[derive(Debug, Args)]
pub struct FitArgs {
    /// The trace (`-p trace.output=FILE`, or `kvperf trace import`).
    pub trace: PathBuf,
    /// The workload file to write (`-` for stdout); optional with --check.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replay the trace, then load and run the fitted workload, on the
    /// same engine and store, and print their figures side by side.
    #[arg(long)]
    pub check: bool,
    /// --check: the engine both run on (see `kvperf engines`).
    #[arg(long, value_name = "NAME", requires = "check")]
    pub engine: Option<String>,
    /// --check: the data directory both use (emptied first, as by a replay).
    #[arg(long, value_name = "DIR", requires = "check")]
    pub db: Option<PathBuf>,
    /// --check: clients of both (default 1).
    #[arg(long, value_name = "N", requires = "check")]
    pub threads: Option<usize>,
    /// --check: an engine option (`-p rocksdb.block_cache_size=8m`); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE", requires = "check")]
    pub properties: Vec<String>,
}

/// Refuses a fit whose workload `kvperf run` would refuse (a trace of
/// deletes only fits proportions that sum to 0), by run's own parser:
/// fit wrote it and exited 0, and only the run said what was wrong.
fn runnable(fit: &crate::workload::fit::Fit, source: &str) -> Result<(), InputError> {
    let mut props = crate::properties::Properties::new();
    props.load_str(&fit.workload_file(source));
    let Err(why) = crate::workload::ycsb::CoreConfig::from_properties(&props, false) else {
        return Ok(());
    };
    let only_deletes = if fit.deletes == fit.operations {
        format!(
            " (its {} operations are all deletes, which YCSB's core workload has none of)",
            fit.operations
        )
    } else {
        String::new()
    };
    Err(InputError::Invalid(format!(
        "trace {source} fits no workload kvperf can run{only_deletes}; kvperf run would refuse it: {why}"
    )))
}

/// The most records a fit models. It ranks every record of the store the
/// trace was captured on (`recordcount`), and each candidate simulates its
/// popularity over all of them: a capture of 10^7 records was still fitting
/// after 13 minutes, one of 10^12 was killed by the kernel at 17.5 GB.
const MOST_RECORDS: u64 = 2_000_000;

/// Refuses, before fitting, a trace captured on a store larger than
/// `MOST_RECORDS`.
fn check_store_size(
    header: &crate::trace::format::Header,
    trace: &std::path::Path,
) -> Result<(), InputError> {
    let records = header
        .settings
        .get("recordcount")
        .and_then(|v| v.parse::<u64>().ok());
    match records {
        Some(n) if n > MOST_RECORDS => Err(InputError::Invalid(format!(
            "trace '{}' was captured on a store of {n} records; kvperf fit models at most {MOST_RECORDS} (it ranks every record): capture a run over fewer records",
            trace.display()
        ))),
        _ => Ok(()),
    }
}

pub fn run(args: FitArgs) -> anyhow::Result<()> {
    if args.output.is_none() && !args.check {
        return Err(InputError::Invalid(
            "kvperf fit needs --output FILE (the workload file to write) or --check".into(),
        )
        .into());
    }
    if args.threads == Some(0) {
        return Err(InputError::Invalid("--threads 0 runs nothing; give 1 or more".into()).into());
    }
    let destination = args
        .output
        .as_deref()
        .map(|o| Destination::check_or_stream(o, "--output", output::TEXT, &[&args.trace]))
        .transpose()?;
    let on = args.check.then(|| CheckOn {
        trace: args.trace.clone(),
        engine: args
            .engine
            .clone()
            .unwrap_or_else(|| crate::engine::DEFAULT_ENGINE.to_string()),
        db: args.db.clone(),
        threads: args.threads,
        properties: args.properties.clone(),
    });
    if let Some(on) = &on {
        let file = destination.as_ref().filter(|d| d.stream().is_none());
        fit_check::check_outputs(on, file.map(Destination::path))?;
    }
    let (header, ops) = crate::trace::read_trace(&args.trace)?;
    if ops.is_empty() {
        return Err(InputError::Invalid(format!(
            "trace '{}' holds no operations",
            args.trace.display()
        ))
        .into());
    }
    check_store_size(&header, &args.trace)?;
    let fit = crate::workload::fit::fit(&header, &ops);
    drop(ops);
    let source = format!("'{}' ({})", args.trace.display(), header.source);
    runnable(&fit, &source)?;
    match destination.as_ref().and_then(Destination::stream) {
        // The file goes to stdout: the table beside it on stderr.
        Some(_) => eprintln!("{}", fit.table().trim_end()),
        None => crate::say!("{}", fit.table().trim_end()),
    }
    if let Some(destination) = &destination {
        output::emit(
            fit.workload_file(&source),
            Format::Text,
            "fit",
            Some(destination),
        )?;
    }
    if let Some(on) = &on {
        let table = fit_check::check(on, &fit)?;
        match destination.as_ref().and_then(Destination::stream) {
            Some(_) => eprintln!("{}", table.trim_end()),
            // The check's result: kept in a named file when stdout cannot
            // take it (it was lost, after the whole check had run).
            None => output::stdout::print_result(&format!("{}\n", table.trim_end()), "txt")?,
        }
    }
    Ok(())
}
