//! The report as CSV: one row per (config, workload, threads, operation
//! type), every figure, so a spreadsheet can recompute anything.

use super::model::{Point, Study};
use super::numbers::csv_field;
use super::tables::{amplification, Amplification, Bytes, Direction};
use crate::measure::OpKind;

const HEADER: &str = "config,workload,threads,repeats,ops_per_sec,ops_min,ops_median,ops_max,\
op,count,avg_us,p50_us,p99_us,p999_us,max_us,latency_from,too_few_for,\
device_read_bytes_per_op,device_write_bytes_per_op,read_amplification_process,\
write_amplification_process,read_amplification_device,write_amplification_device,record_rewrite_factor,\
space_amplification,device_busy_pct,device_queue_depth,cpu_us_per_op,ops_per_cpu_s,\
network_sent_bytes_per_op,network_received_bytes_per_op,server_cpu_us_per_op,ops_per_joule,bound,\
failed,failed_pct,ok_ops_per_sec,step_error,window_s_min,short_window\n";

/// The header's amplification columns before each was named for what it
/// divides: a report.csv of that time is kvperf's too.
const OLD_AMPLIFICATION_COLUMNS: (&str, &str) = (
    "read_amplification,write_amplification,",
    "read_amplification_process,write_amplification_process,read_amplification_device,\
write_amplification_device,record_rewrite_factor,",
);

/// The latency columns added with latency kinds: a report.csv from
/// before them is kvperf's too.
const LATENCY_KIND_COLUMNS: &str = "latency_from,too_few_for,";

/// Whether `line` is exactly the header of a report.csv kvperf writes
/// (all of its columns, with or without the power columns), now, before
/// latency kinds, or before the amplification columns were renamed too:
/// how kvperf knows its own file before replacing it.
pub fn is_header(line: &str) -> bool {
    let (old, new) = OLD_AMPLIFICATION_COLUMNS;
    let current = HEADER.trim_end();
    let before_kinds = current.replace(LATENCY_KIND_COLUMNS, "");
    let before_amplification = before_kinds.replace(new, old);
    let matches = |base: &str| {
        line == base
            || line
                .strip_prefix(base)
                .is_some_and(|rest| rest == super::energy::CSV_HEADER.trim_end())
    };
    matches(current) || matches(&before_kinds) || matches(&before_amplification)
}

pub fn csv(study: &Study) -> String {
    // Power and drive columns only where some result has them.
    let energy = super::energy::measured(study);
    let mut out = match energy {
        true => format!("{}{}\n", HEADER.trim_end(), super::energy::CSV_HEADER),
        false => HEADER.to_string(),
    };
    for w in &study.workloads {
        for (name, points) in study.series.iter().zip(&w.points) {
            for p in points.values() {
                out.extend(point_lines(name, &w.name, p, energy));
            }
        }
    }
    out
}

/// A point's rows: one per operation type that ran (or one with no
/// operation, for a point with none), its figures and costs in each.
fn point_lines(name: &str, workload: &str, p: &Point, energy: bool) -> Vec<String> {
    let cell = format!(
        "{},{},{},{},{:.1},{:.1},{:.1},{:.1}",
        csv_field(name),
        csv_field(workload),
        p.threads,
        p.repeats,
        p.ops_per_sec,
        p.min(),
        p.median(),
        p.max()
    );
    let cost = cost_cells(p);
    let bound = csv_field(&p.verdicts.join(" / "));
    let extra = match energy {
        true => super::energy::csv_cells(p.accounting.as_ref()),
        false => String::new(),
    };
    let step_error = csv_field(&p.step_errors.join(" / "));
    // The op's failures; "" where the op had none recorded.
    let failures = |op: Option<&OpKind>| {
        let a = op.and_then(|op| p.attempts.get(op));
        let failed = a.map_or(String::new(), |a| a.failed_total().to_string());
        let pct = a.filter(|a| a.total > 0).map_or(String::new(), |a| {
            format!("{:.3}", a.failed_total() as f64 / a.total as f64 * 100.0)
        });
        let shortest = p
            .windows
            .iter()
            .map(|w| w.seconds)
            .fold(f64::INFINITY, f64::min);
        format!(
            "{failed},{pct},{:.1},{step_error},{},{}",
            p.ok_ops_per_sec,
            if shortest.is_finite() {
                format!("{shortest:.3}")
            } else {
                String::new()
            },
            p.short_window()
        )
    };
    // Every op that ran: one whose operations all failed has
    // no latency, and its failures must still have a row.
    let mut op_kinds: Vec<&OpKind> = p.latency.keys().chain(p.attempts.keys()).collect();
    op_kinds.sort();
    op_kinds.dedup();
    let mut lines: Vec<String> = op_kinds
        .into_iter()
        .map(|op| {
            // The kind of every latency of the row, and the
            // percentiles of it from too few operations ("p99 p99.9").
            let latency = p.latency.get(op).map_or(",,,,,,,".into(), |l| {
                let thin = crate::measure::few_samples::too_few_for(l.count, &[0.5, 0.99, 0.999]);
                format!(
                    "{},{:.3},{:.3},{:.3},{:.3},{:.3},{},{}",
                    l.count,
                    l.avg_us,
                    l.p50_us,
                    l.p99_us,
                    l.p999_us,
                    l.max_us,
                    p.latency_start.name(),
                    thin.join(" ")
                )
            });
            format!(
                "{cell},{},{latency},{cost},{bound},{}{extra}\n",
                op.name(),
                failures(Some(op))
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push(format!(
            "{cell},,,,,,,,,,{cost},{bound},{}{extra}\n",
            failures(None)
        ));
    }
    lines
}

/// The cost columns of a point's rows.
fn cost_cells(p: &Point) -> String {
    let d = p.accounting.as_ref().map(|a| a.derived).unwrap_or_default();
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    // A ratio that is no figure is a marked cell, never a number.
    let amp = |source, direction| match &p.accounting {
        Some(a) => match amplification(a, source, direction) {
            Amplification::Ratio(x) => format!("{x:.3}"),
            Amplification::NothingToDivide => String::new(),
            marked => marked.word().to_string(),
        },
        None => String::new(),
    };
    [
        opt(d.device_read_bytes_per_op),
        opt(d.device_write_bytes_per_op),
        amp(Bytes::Process, Direction::Read),
        amp(Bytes::Process, Direction::Write),
        amp(Bytes::Device, Direction::Read),
        amp(Bytes::Device, Direction::Write),
        opt(d.record_rewrite_factor),
        opt(d.space_amplification),
        opt(d.device_busy_pct),
        opt(d.device_queue_depth),
        opt(d.cpu_s_per_op.map(|x| x * 1e6)),
        opt(d.ops_per_cpu_s),
        opt(d.network_sent_bytes_per_op),
        opt(d.network_received_bytes_per_op),
        opt(d.server_cpu_s_per_op.map(|x| x * 1e6)),
        opt(d.ops_per_joule),
    ]
    .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_csv_of_this_or_the_last_layout_is_kvperfs_own() {
        assert!(is_header(HEADER.trim_end()));
        // Before latency kinds, and before the amplification columns too
        // (what docs/examples' report.csv files began with).
        assert!(is_header(
            &HEADER.trim_end().replace(LATENCY_KIND_COLUMNS, "")
        ));
        assert!(is_header(
            "config,workload,threads,repeats,ops_per_sec,ops_min,ops_median,ops_max,op,count,\
             avg_us,p50_us,p99_us,p999_us,max_us,device_read_bytes_per_op,\
             device_write_bytes_per_op,read_amplification,write_amplification,\
             space_amplification,device_busy_pct,device_queue_depth,cpu_us_per_op,ops_per_cpu_s,\
             network_sent_bytes_per_op,network_received_bytes_per_op,server_cpu_us_per_op,\
             ops_per_joule,bound,failed,failed_pct,ok_ops_per_sec,step_error,window_s_min,\
             short_window"
        ));
        assert!(HEADER.contains(",max_us,latency_from,too_few_for,"));
        assert!(!is_header("config,workload,threads"));
    }
}
