//! Where each step's shards ran: for a step run as several clients (local
//! processes, srun tasks, pods) and merged into one record, every shard's
//! place, operations and rate, and how long the shards measured together,
//! so that a study spread over machines shows its spread. Shown only where
//! a step had shards, so single-client reports are unchanged.

use super::document::Table;
use super::model::{Study, WorkloadView};
use super::numbers::ops;
use crate::results::merge::MIN_OVERLAP_PCT;

/// The mark on a repeat whose shards measured together for less than
/// [`MIN_OVERLAP_PCT`] of their union window.
pub const MARK: &str = "\u{2020}";

/// A row per shard of every repeat of every cell that ran as shards, or
/// None when no step of this workload did.
pub fn table(study: &Study, w: &WorkloadView) -> Option<Table> {
    let header = [
        "Config",
        "#Threads",
        "Repeat",
        "Shard",
        "Ran on",
        "Operations",
        "ops/s",
        "Shards measuring together",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for (series, points) in study.series.iter().zip(&w.points) {
        for (threads, point) in points {
            for (repeat, merged) in point.shards.iter().enumerate() {
                let Some(info) = merged else { continue };
                let together = if info.overlap_pct < MIN_OVERLAP_PCT {
                    format!("{:.1}% {MARK}", info.overlap_pct)
                } else {
                    format!("{:.1}%", info.overlap_pct)
                };
                for shard in &info.shards {
                    rows.push(vec![
                        series.clone(),
                        threads.to_string(),
                        (repeat + 1).to_string(),
                        format!("{}/{}", shard.index, info.count),
                        shard.place(),
                        ops(shard.operations as f64),
                        ops(shard.ops_per_sec),
                        together.clone(),
                    ]);
                }
            }
        }
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}

/// What the table's columns mean, in a sentence.
pub fn note() -> String {
    format!(
        "Each shard is one client process of the step (a local process, an srun task or a pod), \
         merged into the step's figures exactly (operations added, histograms added). \
         \"Shards measuring together\" is the share of the union of the shards' measured windows \
         during which every shard was measuring; under {MIN_OVERLAP_PCT:.0}% (marked {MARK}) a \
         straggler or clock skew means the shards did not measure the same thing at the same \
         time, and the step's throughput is over the union of their windows."
    )
}
