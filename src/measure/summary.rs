//! Figures of one operation group in the units YCSB prints (microseconds).

use hdrhistogram::Histogram;
use serde::Serialize;

/// One `[GROUP]` of YCSB's output.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupSummary {
    pub name: String,
    pub operations: u64,
    pub average_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// (percentile, latency in us), e.g. (99.0, 812.3).
    pub percentiles_us: Vec<(f64, f64)>,
    /// Return code name -> count (`Return=OK` ...); empty for derived groups.
    pub returns: Vec<(String, u64)>,
}

impl GroupSummary {
    pub fn from_histogram(name: &str, h: &Histogram<u64>, percentiles: &[f64]) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        let empty = h.is_empty();
        Self {
            name: name.to_string(),
            operations: h.len(),
            average_us: if empty { 0.0 } else { h.mean() / 1000.0 },
            min_us: if empty { 0.0 } else { us(h.min()) },
            max_us: if empty { 0.0 } else { us(h.max()) },
            percentiles_us: percentiles
                .iter()
                .map(|&p| {
                    (
                        p,
                        if empty {
                            0.0
                        } else {
                            us(h.value_at_quantile(p / 100.0))
                        },
                    )
                })
                .collect(),
            returns: Vec::new(),
        }
    }

    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles_us
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

/// YCSB's metric name for a percentile: `95th`, `99.9`, `50th`.
pub fn percentile_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}th", p as u64)
    } else {
        format!("{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::new_histogram;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = new_histogram();
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let s = GroupSummary::from_histogram("READ", &h, &[50.0, 99.0, 99.9]);
        assert_eq!(s.operations, 1000);
        assert!((s.average_us - 500.5).abs() < 1.0, "{}", s.average_us);
        let p99 = s.percentile(99.0).unwrap();
        assert!((p99 - 990.0).abs() <= 1.0, "{p99}");
        let p50 = s.percentile(50.0).unwrap();
        assert!((p50 - 500.0).abs() <= 1.0, "{p50}");
        assert_eq!(percentile_label(99.0), "99th");
        assert_eq!(percentile_label(99.9), "99.9");
    }
}
