//! The summary of a one-configuration study (a study of one's own drive):
//! per workload, the peak throughput and where it was, the lowest, the
//! primary operation's latency at the peak, and the windows measured. A
//! study of several configurations has the comparison summary instead.

use super::document::Table;
use super::format::micros;
use super::model::{Point, Study};

/// The sentence over the table.
pub fn text(study: &Study) -> String {
    format!(
        "**{}** at a glance: each workload's peak throughput and the thread count it was \
         measured at, the lowest over the thread counts, the average and 99th-percentile \
         latency of the workload's read (else its most frequent operation) at the peak, and \
         the shortest and longest measured window. The sections below give every thread count.",
        study.series.first().map_or("The study", String::as_str)
    )
}

/// One row per workload of the first series.
pub fn table(study: &Study) -> Table {
    let header = [
        "Workload",
        "peak ops/s (threads)",
        "lowest ops/s (threads)",
        "avg latency at peak (us)",
        "p99 latency at peak (us)",
        "windows (s)",
    ]
    .map(String::from)
    .to_vec();
    let rows = study
        .workloads
        .iter()
        .filter_map(|w| {
            let points: Vec<&Point> = w.points.first()?.values().collect();
            let peak = points
                .iter()
                .copied()
                .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))?;
            let low = points
                .iter()
                .copied()
                .min_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))?;
            let op = w
                .latency_op
                .map_or(String::new(), |o| format!(" ({})", o.name()));
            let latency = |v: Option<f64>| v.map_or("-".into(), |v| format!("{}{op}", micros(v)));
            let seconds: Vec<f64> = points
                .iter()
                .flat_map(|p| p.windows.iter().map(|w| w.seconds))
                .collect();
            let lo = seconds.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = seconds.iter().copied().fold(0.0, f64::max);
            let windows = if seconds.is_empty() {
                "-".to_string()
            } else if hi - lo < 0.05 {
                format!("{lo:.1}")
            } else {
                format!("{lo:.1} to {hi:.1}")
            };
            Some(vec![
                w.name.clone(),
                format!(
                    "{}{} ({})",
                    super::pacing::ops_of(peak),
                    super::tables::marks(peak),
                    peak.threads
                ),
                format!(
                    "{}{} ({})",
                    super::pacing::ops_of(low),
                    super::tables::marks(low),
                    low.threads
                ),
                latency(peak.latency_avg_us),
                latency(peak.latency_p99_us),
                windows,
            ])
        })
        .collect();
    Table { header, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpKind;
    use crate::results::testing;

    #[test]
    fn one_configuration_gets_a_summary_of_its_peaks() {
        let records: Vec<(String, crate::results::Record)> =
            [(4, 1000.0), (8, 3000.0), (16, 2000.0)]
                .into_iter()
                .map(|(t, rate)| {
                    (
                        "mine".to_string(),
                        testing::record("mine", "c", t, rate, OpKind::Read, &[1_000_000; 10]),
                    )
                })
                .collect();
        let study = super::super::model::from_records(&records);
        let t = table(&study);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(
            t.rows[0],
            [
                "Workload C",
                "3,000 (8)",
                "1,000 (4)",
                "1,000 (read)",
                "1,000 (read)",
                "10.0"
            ]
        );
        assert!(text(&study).starts_with("**mine** at a glance"));
    }
}
