//! `kvperf verdict`: the comparison over repeats of `kvperf compare`, for
//! figures that are not in results files (bench scripts' side-by-side runs
//! of kvperf and another tool, a spreadsheet's columns).

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::error::InputError;
use crate::measure::latency_start::LatencyStart;
use crate::measure::stats::{compare_repeats, Better};

#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// The baseline's repeats, one figure each: "101,98.5,103".
    #[arg(long, value_name = "LIST", value_parser = parse_figures)]
    pub base: Figures,
    /// The candidate's repeats, likewise.
    #[arg(long = "new", value_name = "LIST", value_parser = parse_figures)]
    pub candidate: Figures,
    /// Which way is better: higher (throughput) or lower (latency).
    #[arg(long, value_enum, default_value_t = Direction::Higher)]
    pub better: Direction,
    /// With --better lower, latencies: what the baseline's are timed from,
    /// `actual` (each operation's actual start) or `intended` (its
    /// intended start under a target rate). Both sides must be of one kind.
    #[arg(long, value_enum, value_name = "START")]
    pub base_latency_from: Option<LatencyStart>,
    /// The same for the candidate's figures.
    #[arg(long, value_enum, value_name = "START")]
    pub new_latency_from: Option<LatencyStart>,
    /// text: one line; json: the ratio, the interval and the verdict.
    #[arg(long, value_enum, default_value_t = VerdictFormat::Text)]
    pub format: VerdictFormat,
}

/// The latency kind both sides share, when given: like is compared with
/// like only, and a kind belongs to latencies.
fn latency_kind(args: &VerdictArgs) -> Result<Option<LatencyStart>, InputError> {
    let kind = match (args.base_latency_from, args.new_latency_from) {
        (None, None) => return Ok(None),
        (Some(b), Some(n)) if b == n => b,
        (Some(b), Some(n)) => {
            return Err(InputError::Invalid(format!(
                "--base-latency-from {} and --new-latency-from {}: latency {} and {} are \
                 different figures; compare like with like (a paced run records both)",
                b.name(),
                n.name(),
                b.words(),
                n.words()
            )))
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(InputError::Invalid(
                "give what both sides' latencies are timed from (--base-latency-from and \
                 --new-latency-from), or neither"
                    .into(),
            ))
        }
    };
    if args.better == Direction::Higher {
        return Err(InputError::Invalid(
            "--base-latency-from and --new-latency-from describe latencies: add --better lower"
                .into(),
        ));
    }
    Ok(Some(kind))
}

#[derive(Debug, Clone)]
pub struct Figures(Vec<f64>);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Direction {
    Higher,
    Lower,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerdictFormat {
    Text,
    Json,
}

/// Positive numbers, separated by commas or spaces.
fn parse_figures(text: &str) -> Result<Figures, String> {
    let figures: Result<Vec<f64>, String> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err(format!("'{s}' is not a positive number")),
        })
        .collect();
    match figures? {
        v if v.is_empty() => Err("no figures (give them as \"101,98.5,103\")".into()),
        v => Ok(Figures(v)),
    }
}

pub fn run(args: VerdictArgs) -> anyhow::Result<()> {
    let better = match args.better {
        Direction::Higher => Better::Higher,
        Direction::Lower => Better::Lower,
    };
    let kind = latency_kind(&args)?;
    let (base, new) = (&args.base.0, &args.candidate.0);
    // "latency from the actual start, both sides: new/base ...".
    let named = kind.map_or(String::new(), |k| {
        format!("latency {}, both sides: ", k.words())
    });
    let c = compare_repeats(base, new)
        .ok_or_else(|| InputError::Invalid("figures to compare must be positive numbers".into()))?;
    let verdict = c.verdict(better);
    let line = match c.interval {
        Some(i) => format!(
            "{named}new/base {:.3}x [{:.3}x, {:.3}x] at {:.1}%: {}",
            c.ratio,
            i.low,
            i.high,
            i.confidence * 100.0,
            verdict.word()
        ),
        None => format!(
            "{named}new/base {:.3}x: {} (have {} and {})",
            c.ratio,
            verdict.word(),
            base.len(),
            new.len()
        ),
    };
    let text = match args.format {
        VerdictFormat::Text => line,
        VerdictFormat::Json => json!({
            "ratio": c.ratio,
            "interval": c.interval,
            "verdict": verdict,
            "better": match better { Better::Higher => "higher", Better::Lower => "lower" },
            "base_repeats": base.len(),
            "new_repeats": new.len(),
            "latency_from": kind.map(LatencyStart::name),
        })
        .to_string(),
    };
    let extension = match args.format {
        VerdictFormat::Text => "txt",
        VerdictFormat::Json => "json",
    };
    crate::output::stdout::print_result(&format!("{text}\n"), extension)
}
