//! The readers of user input, each behind one function taking arbitrary
//! bytes: what the fuzz targets in `fuzz/` call, and what the corpus test
//! (`corpus_replay.rs`, a unit test) replays on stable Rust. Compiled only
//! into the unit tests and cargo-fuzz's builds (`--cfg fuzzing`), never
//! into the product. A reader may refuse its input (most inputs are
//! refused); it must not panic, hang, or allocate what a hostile header
//! asks for.

use std::path::PathBuf;

use clap::Parser as _;

use crate::cli::{Cli, Command};
use crate::properties::Properties;
use crate::results::Record;
use crate::workload::ycsb::config::{unknown_property_warnings, CoreConfig};

#[cfg(test)]
mod corpus_replay;

/// A YCSB workload file (`-P`): Java properties, then the core workload's
/// checks for both phases.
pub fn workload_properties(data: &[u8]) {
    let mut p = Properties::new();
    p.load_str(&String::from_utf8_lossy(data));
    for load in [true, false] {
        let _ = CoreConfig::from_properties(&p, load);
    }
    let _ = unknown_property_warnings(&p, &[]);
}

/// A plan: TOML, its checks, and its expansion into steps at two scales
/// (workload files named by the plan are looked for where none exist).
pub fn plan(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = crate::plan::parse(text) else {
        return;
    };
    let loaded = crate::plan::LoadedPlan {
        plan,
        path: PathBuf::from("/nonexistent-kvperf-fuzz/plan.toml"),
        unscaled: Vec::new(),
    };
    for scale in [1e-6, 1.0] {
        let _ = crate::plan::expand_steps(&loaded, scale, &[]);
    }
}

/// A command line, one argument per line: every command's flags, and for
/// `kvperf bench` db_bench's flags through every check made before an
/// engine opens.
pub fn command_line(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let args = ["kvperf"].into_iter().chain(text.lines());
    let Ok(cli) = Cli::try_parse_from(args) else {
        return;
    };
    if let Command::Bench(args) = cli.command {
        let mut out = crate::results::StepOutput::begin("bench");
        let _ = crate::commands::bench::checked_inputs(&args, &mut out);
    }
}

/// A results file (JSON lines) or one step's JSON output, and the report
/// of whatever of it reads.
pub fn results(data: &[u8]) {
    let Ok(loaded) = crate::results::parse_bytes(std::path::Path::new("fuzz.jsonl"), data) else {
        return;
    };
    let mut records: Vec<(String, Record)> = loaded
        .records
        .into_iter()
        .map(|r| ("fuzz".to_string(), r))
        .collect();
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(step) = crate::results::StepOutput::from_json(text) {
            records.push(("step".into(), Record::of_step(step, "step")));
        }
    }
    if records.is_empty() {
        return;
    }
    let study = crate::report::model::from_records(&records);
    let _ = crate::report::build(&study, true).to_html();
    let _ = crate::report::build(&study, false).to_markdown();
    let _ = crate::report::csv(&study);
}

/// A histogram as results carry it (base64 text), and the same bytes
/// base64-encoded, so the fuzzer reaches the binary decoder directly.
pub fn histogram(data: &[u8]) {
    use base64::Engine as _;
    let as_text = String::from_utf8_lossy(data);
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    for text in [as_text.as_ref(), encoded.as_str()] {
        if let Ok(h) = crate::measure::hdr::decode(text) {
            let _ = (h.value_at_quantile(0.999), h.mean(), h.max(), h.len());
            let _ = crate::measure::hdr::sum([&h, &h]);
        }
    }
}

/// A reader of arbitrary bytes.
pub type Target = fn(&[u8]);

/// Every target by name, for the corpus test and `scripts/fuzz.sh`.
pub const TARGETS: [(&str, Target); 5] = [
    ("workload_properties", workload_properties),
    ("plan", plan),
    ("command_line", command_line),
    ("results", results),
    ("histogram", histogram),
];
