//! Cells run at a target rate (`-p target=N`; a scaled load of a plan with
//! a `min_duration` is paced so that its window lasts it, docs/plans.md):
//! their throughput is the pace asked for, not what the engine can do.
//! Said wherever such a throughput is printed: a mark on the figure, a
//! note under the throughput table and a sentence at the top.

use super::model::{Point, Study, WorkloadView};
use super::numbers::ops;

/// The mark on a paced cell's throughput.
pub const MARK: &str = "\u{25ca}";

/// `p`'s throughput, with [`MARK`] when it ran paced.
pub fn ops_of(p: &Point) -> String {
    format!("{}{}", ops(p.ops_per_sec), mark(p))
}

/// " ◊" for a paced cell, else nothing.
pub fn mark(p: &Point) -> String {
    match p.pace {
        Some(_) => format!(" {MARK}"),
        None => String::new(),
    }
}

/// Under a workload's throughput table: what [`MARK`] means, with the
/// paces its cells were asked for; None when none was paced.
pub fn note(w: &WorkloadView) -> Option<String> {
    let paces = paces(w.points.iter().flat_map(|p| p.values()));
    (!paces.is_empty()).then(|| {
        format!(
            "{MARK} marks a cell run at a target rate ({}): its ops/s is that pace, not the most \
             the engine can do, so read its latency, not its throughput (a comparison of two \
             paced cells compares their paces).",
            pace_words(&paces)
        )
    })
}

/// One sentence at the top of the report naming the paced workloads;
/// None when nothing was paced.
pub fn summary(study: &Study) -> Option<String> {
    let workloads: Vec<String> = study
        .workloads
        .iter()
        .filter_map(|w| {
            let paces = paces(w.points.iter().flat_map(|p| p.values()));
            (!paces.is_empty()).then(|| format!("{} ({})", w.name, pace_words(&paces)))
        })
        .collect();
    (!workloads.is_empty()).then(|| {
        format!(
            "**Paced cells** (marked {MARK} wherever their throughput is shown): {}. Their \
             ops/s is the pace asked for, not a capacity; their latency is from each \
             operation's intended start where every cell of the workload was paced, with the \
             actual start beside it.",
            workloads.join("; ")
        )
    })
}

/// The distinct paces of `points`, in ops/s, ascending.
fn paces<'a>(points: impl Iterator<Item = &'a Point>) -> Vec<f64> {
    let mut paces: Vec<f64> = points.filter_map(|p| p.pace).collect();
    paces.sort_by(f64::total_cmp);
    paces.dedup_by(|a, b| (*a - *b).abs() < 0.5);
    paces
}

/// "target 2,496 ops/s" or "targets 1,000 to 5,000 ops/s".
fn pace_words(paces: &[f64]) -> String {
    match paces {
        [one] => format!("target {} ops/s", ops(*one)),
        [lo, .., hi] => format!("targets {} to {} ops/s", ops(*lo), ops(*hi)),
        [] => String::new(),
    }
}
