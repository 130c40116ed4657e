//! YCSB's text exporter format (`TextMeasurementsExporter`), so existing
//! parsers read kvperf's output: `[GROUP], metric, value` lines.
//!
//! Integers where YCSB prints Java longs (min, max, percentiles: microseconds
//! rounded to the nearest one), doubles where it prints doubles.

use std::fmt::Write;

use super::RunReport;
use crate::measure::percentile_label;

pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    let o = &report.overall;
    let _ = writeln!(
        out,
        "[OVERALL], RunTime(ms), {}",
        o.runtime_ms.round() as u64
    );
    let _ = writeln!(
        out,
        "[OVERALL], Throughput(ops/sec), {}",
        java_double(o.throughput_ops_per_sec)
    );
    for g in &report.groups {
        let name = &g.name;
        let _ = writeln!(out, "[{name}], Operations, {}", g.operations);
        let _ = writeln!(
            out,
            "[{name}], AverageLatency(us), {}",
            java_double(g.average_us)
        );
        let _ = writeln!(out, "[{name}], MinLatency(us), {}", g.min_us.round() as u64);
        let _ = writeln!(out, "[{name}], MaxLatency(us), {}", g.max_us.round() as u64);
        for (p, v) in &g.percentiles_us {
            let _ = writeln!(
                out,
                "[{name}], {}PercentileLatency(us), {}",
                percentile_label(*p),
                v.round() as u64
            );
        }
        for (status, count) in &g.returns {
            let _ = writeln!(out, "[{name}], Return={status}, {count}");
        }
    }
    out
}

/// Java's `Double.toString` for ordinary magnitudes: always a decimal point.
fn java_double(x: f64) -> String {
    let text = format!("{x}");
    if text.contains('.') || text.contains('e') || !x.is_finite() {
        text
    } else {
        format!("{text}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(java_double(7038.453417169134), "7038.453417169134");
        assert_eq!(java_double(2000.0), "2000.0");
    }
}
