//! The shape most of a workload's tables share: a row per thread count,
//! a column per series.

use super::document::Table;
use super::model::{Point, Study, WorkloadView};

/// Rows by thread count, a column per series holding `cell` of its point
/// there ("-" where it has none).
pub fn per_series(
    study: &Study,
    w: &WorkloadView,
    threads: &[u64],
    cell: impl Fn(&Point) -> String,
) -> Table {
    let mut header = vec!["#Threads".to_string()];
    header.extend(study.series.iter().cloned());
    let rows = threads
        .iter()
        .map(|t| {
            let mut row = vec![t.to_string()];
            for points in &w.points {
                row.push(points.get(t).map_or("-".into(), &cell));
            }
            row
        })
        .collect();
    Table { header, rows }
}
