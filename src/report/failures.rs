//! Failed operations and steps that stopped early, where a reader sees
//! them: a sentence at the top of the report, a mark on every throughput
//! cell they touch, and a table per workload with counts, shares and the
//! engine's own words. Throughput counts every operation (as YCSB does);
//! latency holds successful ones only; this is what lies between the two.

use super::document::Table;
use super::format::ops;
use super::model::{Point, Study, WorkloadView};

/// The mark on a throughput cell with failed operations or a step error.
pub const MARK: &str = "\u{2021}";

/// What the throughput tables count, and what [`MARK`] means.
pub const THROUGHPUT_DEFINITION: &str = "Throughput counts every operation completed in the \
     measured window, failed ones included, as YCSB counts them; latency figures are of \
     successful operations only.";

/// One sentence on the whole study: nothing failed, or which cells did.
pub fn summary(study: &Study) -> String {
    const SHOWN: usize = 8;
    let mut cells = Vec::new();
    let mut total = 0;
    for w in &study.workloads {
        for (name, points) in study.series.iter().zip(&w.points) {
            for p in points.values() {
                total += 1;
                if p.has_failures() {
                    cells.push(format!(
                        "{} at {} threads on {name} ({})",
                        w.name,
                        p.threads,
                        brief(p)
                    ));
                }
            }
        }
    }
    if cells.is_empty() {
        return format!(
            "**Failures: none.** No operation failed and no step stopped early in the {total} measured cells."
        );
    }
    let more = cells.len().saturating_sub(SHOWN);
    let mut text = format!(
        "**Failures in {} of {total} measured cells** (marked {MARK} in the throughput tables; \
         each workload's failures table has the details): {}",
        cells.len(),
        cells.into_iter().take(SHOWN).collect::<Vec<_>>().join("; ")
    );
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text.push('.');
    text
}

/// "391 of 10,000 operations failed (3.9%)", "step stopped: interrupted".
fn brief(p: &Point) -> String {
    let mut parts = Vec::new();
    if p.failed() > 0 {
        parts.push(format!(
            "{} of {} operations failed, {}",
            ops(p.failed() as f64),
            ops(p.operations() as f64),
            share(p.failed(), p.operations())
        ));
    }
    for e in &p.step_errors {
        parts.push(format!("step stopped: {e}"));
    }
    parts.join("; ")
}

/// `n` of `of` in percent, never rounded to a reassuring 0%.
fn share(n: u64, of: u64) -> String {
    if of == 0 {
        return "-".into();
    }
    let pct = n as f64 / of as f64 * 100.0;
    match pct {
        p if p > 0.0 && p < 0.1 => "<0.1%".into(),
        p => format!("{p:.1}%"),
    }
}

/// The cells of `w` with failures, one row per operation type that failed
/// (and one for a step error); None when there are none.
pub fn table(study: &Study, w: &WorkloadView) -> Option<Table> {
    let header = [
        "#Threads",
        "Configuration",
        "Operation",
        "Failed",
        "Of",
        "Share",
        "Return codes",
        "ops/s (all)",
        "ops/s (successful)",
        "First error",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for (name, points) in study.series.iter().zip(&w.points) {
        for p in points.values().filter(|p| p.has_failures()) {
            let row = |op: String,
                       failed: String,
                       of: String,
                       pct: String,
                       codes: String,
                       why: String| {
                vec![
                    p.threads.to_string(),
                    name.clone(),
                    op,
                    failed,
                    of,
                    pct,
                    codes,
                    ops(p.ops_per_sec),
                    ops(p.ok_ops_per_sec),
                    why,
                ]
            };
            for (op, a) in p.attempts.iter().filter(|(_, a)| a.failed_total() > 0) {
                let codes = a
                    .failed
                    .iter()
                    .map(|(code, n)| format!("{code} {}", ops(*n as f64)))
                    .collect::<Vec<_>>()
                    .join(", ");
                rows.push(row(
                    op.name().to_string(),
                    ops(a.failed_total() as f64),
                    ops(a.total as f64),
                    share(a.failed_total(), a.total),
                    codes,
                    a.first_error.clone().unwrap_or_default(),
                ));
            }
            for e in &p.step_errors {
                let dash = || "-".to_string();
                rows.push(row(
                    "(step)".into(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    format!("stopped early: {e}"),
                ));
            }
        }
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}
