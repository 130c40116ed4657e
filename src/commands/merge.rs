//! `kvperf merge`: the results of a study's shards (`kvperf load|run
//! --shard I/N --format json`) -> one result, in the layout and formats of
//! a single run.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::InputError;
use crate::output::Format;
use crate::results::merge;
use crate::results::step::{ErrorKind, StepOutput};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results (`--format json --output FILE` of each shard),
    /// every shard of the study once, in any order.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the merged result to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    // A merge must never write over one of its shards.
    let inputs: Vec<&Path> = args.results.iter().map(PathBuf::as_path).collect();
    let destination = super::ycsb::destination(args.output.as_deref(), args.format, &inputs)?;
    let mut parts = Vec::with_capacity(args.results.len());
    for path in &args.results {
        let shown = path.display().to_string();
        let text =
            crate::files::read_input(path, "shard result", crate::files::bound::STEP_RESULT)?;
        let output = StepOutput::from_json(&text)
            .map_err(|e| InputError::Invalid(format!("'{shown}': {e}")))?;
        parts.push((shown, output));
    }
    let merged = merge::merge(parts)?;
    for warning in &merged.warnings {
        eprintln!("kvperf: warning: {warning}");
    }
    super::ycsb::emit(&merged, args.format, destination.as_ref())?;
    match &merged.error {
        None => Ok(()),
        // A failed shard fails the merge as it failed the shard.
        Some(e) if e.kind == ErrorKind::Input => Err(InputError::Invalid(e.message.clone()).into()),
        Some(e) => Err(anyhow::anyhow!("{}", e.message)),
    }
}
