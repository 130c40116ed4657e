//! `kvperf report` and `kvperf compare`: results files -> the briefs' tables.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::error::{InputError, Regression};
use crate::files::Destination;
use crate::report;
use crate::report::confidence;

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
    /// Exit with code 4 when any compared figure (throughput, the primary
    /// operation's p99 or p99.9) of another configuration is worse than the
    /// first's by more than PCT with 95% confidence: the whole interval
    /// past the limit. Within noise, 0.
    #[arg(long, value_name = "PCT", value_parser = parse_limit)]
    pub fail_if_slower: Option<f64>,
    /// text: one line per compared cell, as hyperfine prints; md: the
    /// verdicts as tables (Markdown); json and csv: every verdict (and
    /// json the gate's outcome), for machines.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// text and md: after the verdicts, the verdict tables and the whole
    /// report (peaks, averages, every table) in Markdown.
    #[arg(long)]
    pub detail: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Md,
    Json,
    Csv,
}

/// "5%", "5" or "2.5%": a limit in percent, at least 0 and under 100.
fn parse_limit(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{text}' is not a limit in percent from 0 to under 100 (e.g. 5%)"
        )),
    }
}

pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    let inputs: Vec<&Path> = args.results.iter().map(PathBuf::as_path).collect();
    let mut outputs = crate::files::Outputs::new();
    outputs.dir("--out", &args.out)?;
    for name in ["report.md", "report.csv", "report.html"] {
        outputs.file("an --out file", &args.out.join(name))?;
    }
    if let Some(path) = &args.timeline {
        outputs.file("--timeline", path)?;
    }
    let out = report::check_out(&args.out, "--out", &inputs)?;
    let written = (|| {
        let timeline = args
            .timeline
            .as_deref()
            .map(|path| {
                Destination::check(path, "--timeline", report::timeline_csv::WRITTEN, &inputs)
            })
            .transpose()?;
        let study = report::load(&args.results)?;
        report::write(&study, &out, &inputs)?;
        anyhow::Ok((study, timeline))
    })();
    let (study, timeline) = written.inspect_err(|_| out.discard())?;
    if crate::runner::interrupted() {
        anyhow::bail!(
            "interrupted while the report was written: report.md, report.csv and report.html in '{}' were written in full{}",
            args.out.display(),
            if timeline.is_some() { "; --timeline was not written" } else { "" }
        );
    }
    for name in ["report.md", "report.csv", "report.html"] {
        crate::say!("{}", args.out.join(name).display());
    }
    if let Some(timeline) = timeline {
        timeline.write(report::timeline_csv::csv(&study).as_bytes())?;
        crate::say!("{}", timeline.path().display());
        // The handlers the report's files set take a signal from then on:
        // one that came while the timeline was written is said, not lost.
        if crate::runner::interrupted() {
            anyhow::bail!(
                "interrupted while --timeline was written: the report in '{}' and '{}' were written in full",
                args.out.display(),
                timeline.path().display()
            );
        }
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
    if args.detail && matches!(args.format, CompareFormat::Json | CompareFormat::Csv) {
        return Err(InputError::Invalid(
            "--detail adds the report to --format text or md; json and csv hold every verdict already"
                .into(),
        )
        .into());
    }
    let rows = confidence::rows(&study);
    let gate = args
        .fail_if_slower
        .map(|limit| confidence::gate(&rows, limit));
    let text = match args.format {
        CompareFormat::Json => {
            let mut text =
                serde_json::to_string_pretty(&confidence::json(&study, &rows, gate.as_ref()))?;
            text.push('\n');
            text
        }
        CompareFormat::Csv => report::compare_lines::csv(&rows),
        CompareFormat::Text if !args.detail => {
            report::compare_lines::text(&study, &rows, gate.as_ref())
        }
        CompareFormat::Text | CompareFormat::Md => {
            let mut doc = report::build(&study, false);
            let verdicts = confidence::blocks(&study, &rows, gate.as_ref());
            let body = std::mem::replace(&mut doc.blocks, verdicts);
            if args.detail {
                doc.blocks.extend(body);
            }
            let md = doc.to_markdown();
            match args.format {
                CompareFormat::Text => format!(
                    "{}\n{md}",
                    report::compare_lines::text(&study, &rows, gate.as_ref())
                ),
                _ => md,
            }
        }
    };
    crate::output::stdout::print_result(
        &text,
        match args.format {
            CompareFormat::Json => "json",
            CompareFormat::Csv => "csv",
            CompareFormat::Text => "txt",
            CompareFormat::Md => "md",
        },
    )?;
    let Some(gate) = gate else {
        return Ok(());
    };
    if !gate.passed() {
        return Err(Regression(format!("--fail-if-slower: {}", gate.summary())).into());
    }
    if gate.judged == 0 {
        return Err(InputError::Invalid(format!(
            "--fail-if-slower cannot judge: no compared cell has at least {} repeats on both sides",
            crate::measure::stats::MIN_REPEATS
        ))
        .into());
    }
    if gate.undecided > 0 {
        eprintln!(
            "kvperf: warning: --fail-if-slower judged {} figures; {} have too few repeats (need \u{2265} {} of each cell)",
            gate.judged,
            gate.undecided,
            crate::measure::stats::MIN_REPEATS
        );
    }
    Ok(())
}
