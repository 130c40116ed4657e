//! YCSB's text exporter format (`TextMeasurementsExporter`), so existing
//! parsers read kvperf's output: `[GROUP], metric, value` lines.
//!
//! Integers where YCSB prints Java longs (min, max, percentiles: microseconds
//! rounded to the nearest one), doubles where it prints doubles.

use std::fmt::Write;

use crate::measure::accounting::Accounting;
use crate::measure::{percentile_label, GroupSummary, Outcome};
use crate::results::step::{Latency, Measurement};

/// YCSB's `measurement.interval`: which latency each group holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyFrom {
    /// From each operation's actual start (YCSB's default, `op`).
    Op,
    /// From its intended start only, under the plain group names (`intended`).
    Intended,
    /// Both: the intended ones as `Intended-<OP>` groups (`both`).
    Both,
}

impl LatencyFrom {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "op" => Some(Self::Op),
            "intended" => Some(Self::Intended),
            "both" => Some(Self::Both),
            _ => None,
        }
    }

    /// Whether intended-start latency must be recorded at all.
    pub fn needs_intended(self) -> bool {
        self != Self::Op
    }
}

/// The `[GROUP]` summaries of `m`, in YCSB's naming, with their return counts.
pub fn groups(m: &Measurement, percentiles: &[f64], from: LatencyFrom) -> Vec<GroupSummary> {
    let mut groups = Vec::new();
    for (kind, op) in &m.ops {
        let name = kind.ycsb_name();
        let summary = |label: String, latency: &Latency| {
            GroupSummary::from_histogram(&label, &latency.histogram.get(), percentiles)
        };
        let (main, failed) = match from {
            LatencyFrom::Intended => (op.intended.as_ref(), op.intended_failed.as_ref()),
            _ => (Some(&op.latency), op.failed.as_ref()),
        };
        let mut first = main.map_or_else(
            || GroupSummary::from_histogram(name, &crate::measure::new_histogram(), percentiles),
            |l| summary(name.to_string(), l),
        );
        // In YCSB's Status order, OK first.
        first.returns = Outcome::ALL
            .iter()
            .filter_map(|o| Some((o.ycsb_name().to_string(), *op.returns.get(o.ycsb_name())?)))
            .collect();
        groups.push(first);
        if let Some(l) = failed {
            groups.push(summary(format!("{name}-FAILED"), l));
        }
        if from == LatencyFrom::Both {
            if let Some(l) = &op.intended {
                groups.push(summary(format!("Intended-{name}"), l));
            }
            if let Some(l) = &op.intended_failed {
                groups.push(summary(format!("Intended-{name}-FAILED"), l));
            }
        }
    }
    groups
}

pub fn render(m: &Measurement, percentiles: &[f64], from: LatencyFrom) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "[OVERALL], RunTime(ms), {}",
        (m.runtime_s * 1000.0).round() as u64
    );
    let _ = writeln!(
        out,
        "[OVERALL], Throughput(ops/sec), {}",
        java_double(m.ops_per_sec)
    );
    // kvperf's own lines (YCSB's Throughput counts failed operations too):
    // the successful ones' rate beside it, and how many failed.
    let _ = writeln!(
        out,
        "[OVERALL], SuccessfulThroughput(ops/sec), {}",
        java_double(m.ok_ops_per_sec())
    );
    let _ = writeln!(
        out,
        "[OVERALL], FailedOperations, {}",
        m.failed_operations()
    );
    for g in groups(m, percentiles, from) {
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
    if let Some(a) = &m.accounting {
        amplification_lines(&mut out, a);
        power_lines(&mut out, a);
    }
    out
}

/// `[AMPLIFICATION]` lines (kvperf's own group): each read and write
/// amplification the window has, under its name in the JSON, as a
/// number or the word the report prints for it ("unavailable" on a
/// memory file system or where a counter could not be read).
fn amplification_lines(out: &mut String, a: &Accounting) {
    use crate::measure::amplification::{
        amplification, json_name, Amplification, Bytes, Direction,
    };
    let d = &a.derived;
    for bytes in Bytes::BOTH {
        for direction in Direction::BOTH {
            let value = match amplification(a, bytes, direction) {
                Amplification::Ratio(x) => java_double(x),
                Amplification::NothingToDivide => "nothing to divide (no logical bytes)".into(),
                other => other.word().into(),
            };
            let _ = writeln!(
                out,
                "[AMPLIFICATION], {}, {value}",
                json_name(bytes, direction)
            );
        }
    }
    let space = d
        .space_amplification
        .map_or_else(|| "unavailable".into(), java_double);
    let _ = writeln!(out, "[AMPLIFICATION], space_amplification, {space}");
    if let Some(x) = d.record_rewrite_factor {
        let _ = writeln!(
            out,
            "[AMPLIFICATION], record_rewrite_factor, {}",
            java_double(x)
        );
    }
}

/// `[POWER]` and `[DRIVE]` lines, when a power meter was asked for or the
/// drive reported its writes (kvperf's own groups; YCSB has none); also
/// what `kvperf bench` prints after a benchmark's line.
pub fn power_lines(out: &mut String, a: &Accounting) {
    let num = |v: Option<f64>| v.map_or_else(|| "unavailable".to_string(), java_double);
    let mut lines: Vec<(&str, &str, String)> = Vec::new();
    let d = &a.derived;
    let power_unavailable = a.unavailable.iter().find_map(|u| u.strip_prefix("power: "));
    if let Some(p) = &a.power {
        lines.extend([
            ("POWER", "Meter", p.meter.clone()),
            ("POWER", "Interval(ms)", p.interval_ms.to_string()),
            (
                "POWER",
                "Readings",
                format!("{} ({} failed)", p.readings, p.failed_readings),
            ),
            ("POWER", "Coverage(%)", java_double(p.coverage * 100.0)),
            ("POWER", "AverageWatts", num(p.average_watts)),
            ("POWER", "PeakWatts", num(p.peak_watts)),
            ("POWER", "Joules", num(p.joules)),
            ("POWER", "OpsPerJoule", num(d.ops_per_joule)),
            // (ops/s) / W, the briefs' "operations per watt": ops per joule again.
            ("POWER", "OpsPerSecPerWatt", num(d.ops_per_joule)),
        ]);
        if let Some(idle) = &p.idle {
            lines.extend([
                ("POWER", "IdleWatts", java_double(idle.watts)),
                ("POWER", "JoulesAboveIdle", num(p.joules_above_idle)),
                (
                    "POWER",
                    "OpsPerJouleAboveIdle",
                    num(d.ops_per_joule_above_idle),
                ),
            ]);
        }
        if let Some(why) = &p.incomplete {
            lines.push(("POWER", "Incomplete", why.clone()));
        }
    } else if let Some(why) = power_unavailable {
        lines.push(("POWER", "Unavailable", why.to_string()));
    }
    if let Some(drive) = &a.drive {
        let e2e = match d.end_to_end_write_amplification_unreliable {
            true => "unreliable".to_string(),
            false => num(d.end_to_end_write_amplification),
        };
        lines.extend([
            ("DRIVE", "Device", drive.device.clone()),
            (
                "DRIVE",
                "HostBytesWritten",
                drive.host_bytes_written.to_string(),
            ),
            ("DRIVE", "WriteBytesPerOp", num(d.drive_write_bytes_per_op)),
            (
                "DRIVE",
                "MediaBytesWritten",
                drive
                    .media_bytes_written
                    .map_or_else(|| "unavailable".to_string(), |b| b.to_string()),
            ),
            (
                "DRIVE",
                "WriteAmplification",
                num(d.drive_write_amplification),
            ),
            ("DRIVE", "EndToEndWriteAmplification", e2e),
            ("DRIVE", "DriveWritesPerDay", num(d.drive_writes_per_day)),
            (
                "DRIVE",
                "YearsToEnduranceEstimate",
                num(d.years_to_endurance_estimate),
            ),
        ]);
    } else if a.power.is_some() || power_unavailable.is_some() {
        // Energy figures were asked for: say why the drive's are absent.
        if let Some(why) = a.unavailable.iter().find(|u| u.starts_with("drive writes")) {
            let why = why.trim_start_matches("drive writes: ");
            let why = why.strip_prefix("unavailable: ").unwrap_or(why);
            lines.push(("DRIVE", "Unavailable", why.to_string()));
        }
    }
    for (group, name, value) in lines {
        let _ = writeln!(out, "[{group}], {name}, {value}");
    }
}

/// Java's `Double.toString` for ordinary magnitudes: always a decimal point.
pub fn java_double(x: f64) -> String {
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
    use crate::measure::OpError;
    use crate::measure::{OpHistograms, OpKind};
    use crate::results::step::op_stats;

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(java_double(7038.453417169134), "7038.453417169134");
        assert_eq!(java_double(2000.0), "2000.0");
    }

    fn measurement(h: &OpHistograms) -> Measurement {
        Measurement {
            name: "run".into(),
            threads: 1,
            clients: Default::default(),
            target_ops_per_sec: 100.0,
            warmup_s: 0.0,
            start_unix_ms: 0,
            end_unix_ms: 1000,
            runtime_s: 1.0,
            operations: 2,
            ops_per_sec: 2.0,
            hit_time_limit: false,
            ops: op_stats(h),
            intervals: vec![2],
            timeline: None,
            accounting: None,
            engine_stats: Default::default(),
            engine_stats_before: Default::default(),
            integrity: None,
            db_bench: None,
            verdict: None,
            device: None,
            events: None,
        }
    }

    #[test]
    fn groups_follow_ycsb_naming_for_each_interval_mode() {
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 2_000, Some(9_000), &Ok(()));
        h.record(OpKind::Read, 3_000, Some(9_000), &Err(OpError::NotFound));
        let m = measurement(&h);
        let names = |from| -> Vec<String> {
            groups(&m, &[99.0], from)
                .into_iter()
                .map(|g| g.name)
                .collect()
        };
        assert_eq!(names(LatencyFrom::Op), ["READ", "READ-FAILED"]);
        assert_eq!(names(LatencyFrom::Intended), ["READ", "READ-FAILED"]);
        assert_eq!(
            names(LatencyFrom::Both),
            [
                "READ",
                "READ-FAILED",
                "Intended-READ",
                "Intended-READ-FAILED"
            ]
        );
        let intended = &groups(&m, &[99.0], LatencyFrom::Intended)[0];
        assert!(intended.max_us > 8.0, "holds the intended latency");
        let read = &groups(&m, &[99.0], LatencyFrom::Op)[0];
        assert_eq!(
            read.returns,
            vec![
                ("OK".to_string(), 1),
                ("NOT_FOUND".to_string(), 1),
                ("ERROR".to_string(), 0)
            ]
        );
    }

    /// A NOT_FOUND is a failed operation in the overall lines too: the
    /// same count as the `-FAILED` group, and not in the successful rate.
    #[test]
    fn overall_lines_count_not_found_as_failed() {
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 2_000, None, &Ok(()));
        h.record(OpKind::Read, 3_000, None, &Err(OpError::NotFound));
        let text = render(&measurement(&h), &[99.0], LatencyFrom::Op);
        assert!(
            text.contains("[OVERALL], Throughput(ops/sec), 2.0\n"),
            "{text}"
        );
        assert!(
            text.contains("[OVERALL], SuccessfulThroughput(ops/sec), 1.0\n"),
            "{text}"
        );
        assert!(text.contains("[OVERALL], FailedOperations, 1\n"), "{text}");
        assert!(text.contains("[READ-FAILED], Operations, 1\n"), "{text}");
    }
}
