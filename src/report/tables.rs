//! The report's tables: summary, best thread count, throughput, latency of
//! each operation, what bound each step, cost at the peak, and the device.

use super::document::{Block, Table};
use super::format::{self, micros, ops, Style, SPREAD_FLAG_PCT};
use super::model::{self, Percentile, Point, Study, WorkloadView};
use crate::measure::stats::{Better, Verdict, MIN_REPEATS};
use crate::measure::steady::Steadiness;
use crate::measure::OpKind;
use crate::results::step::{DeviceFigures, Measurement};

pub use crate::measure::amplification::{
    amplification, Amplification, Bytes, Direction, UNRELIABLE,
};

/// The marks a cell's throughput carries wherever it is shown, besides
/// its pace ([`super::pacing::ops_of`] shows that): failed operations or a
/// step error, a window too short to judge. A summary's figure is the
/// same cell's and is marked as its table is.
pub fn marks(p: &Point) -> String {
    let mut marks = String::new();
    if p.has_failures() {
        marks.push_str(&format!(" {}", super::failures::MARK));
    }
    if p.short_window() {
        marks.push_str(&format!(" {}", super::windows::MARK));
    }
    marks
}

/// Per workload: each series' peak, and the first series' improvement
/// over each other one (peak, average, range), its latency averaged over
/// thread counts (the briefs' arithmetic mean of "% lower", and the
/// geometric mean of the ratios), its largest p99 improvement (seeds 001
/// and 003) and its latency advantage at each one's peak (seed 004).
pub fn summary(study: &Study, style: &Style) -> Table {
    let a = &study.series[0];
    let mut header = vec!["Workload".to_string()];
    for s in &study.series {
        header.push(format!("{s} peak ops/s"));
    }
    for b in &study.series[1..] {
        header.push(format!("{a} vs {b}: peak"));
        header.push("peak: 95% CI, verdict".into());
        header.push("average over #Threads".into());
        header.push("range over #Threads".into());
        header.push("verdicts over #Threads".into());
        header.push("avg latency (arithmetic mean)".into());
        header.push("avg latency (geometric mean)".into());
        header.push("p99 latency (arithmetic mean)".into());
        header.push("largest p99 improvement".into());
        header.push("avg latency at each one's peak".into());
    }
    if study.series.len() > 2 {
        header.push("largest over any".into());
        header.push("largest p99 improvement over any".into());
    }
    let rows = study
        .workloads
        .iter()
        .map(|w| {
            let mut row = vec![w.name.clone()];
            for points in &w.points {
                row.push(model::peak(points).map_or("-".into(), |(t, _)| {
                    let p = &points[&t];
                    format!("{}{} ({t} thr)", super::pacing::ops_of(p), marks(p))
                }));
            }
            let op = w.latency_op.map_or("", |o| o.name());
            let with_op = |text: String| {
                if text == "-" {
                    text
                } else {
                    format!("{text} ({op})")
                }
            };
            let mut largest: Option<(f64, u64, &str)> = None;
            let mut largest_p99: Option<(f64, u64, &str)> = None;
            for b in 1..study.series.len() {
                let c = model::compare(&w.points[0], &w.points[b]);
                row.push(style.gain(c.peak_improvement));
                let at_peaks = match (c.peak_candidate, c.peak_baseline) {
                    (Some((ta, _)), Some((tb, _))) => {
                        model::throughput_repeats(&w.points[0][&ta], &w.points[b][&tb])
                    }
                    _ => None,
                };
                row.push(format::confidence(at_peaks.as_ref(), Better::Higher));
                row.push(style.gain(c.average_improvement));
                row.push(match (c.min_improvement, c.max_improvement) {
                    (Some((t0, lo)), Some((t1, hi))) if c.per_thread.len() > 1 => format!(
                        "{} ({t0} thr) to {} ({t1} thr)",
                        style.gain(Some(lo)),
                        style.gain(Some(hi))
                    ),
                    _ => "-".into(),
                });
                row.push(verdict_counts(&w.points[0], &w.points[b]));
                row.push(with_op(style.latency_lower_pct(c.latency_avg_lower_pct)));
                row.push(with_op(
                    style.latency(model::geometric_mean(&c.latency_avg_ratios)),
                ));
                row.push(with_op(style.latency_lower_pct(c.latency_p99_lower_pct)));
                row.push(c.max_p99_improvement.map_or("-".into(), |(t, v)| {
                    format!("{} ({op}, {t} thr)", style.latency_lower_pct(Some(v)))
                }));
                row.push(with_op(
                    style.latency(
                        w.latency_op
                            .and_then(|o| c.latency_at_peaks.get(&o).copied()),
                    ),
                ));
                let name = study.series[b].as_str();
                if let Some((t, v)) = c.max_improvement {
                    if largest.is_none_or(|(l, _, _)| v > l) {
                        largest = Some((v, t, name));
                    }
                }
                if let Some((t, v)) = c.max_p99_improvement {
                    if largest_p99.is_none_or(|(l, _, _)| v > l) {
                        largest_p99 = Some((v, t, name));
                    }
                }
            }
            if study.series.len() > 2 {
                row.push(largest.map_or("-".into(), |(v, t, b)| {
                    format!("{} over {b} at {t} threads", style.gain(Some(v)))
                }));
                row.push(largest_p99.map_or("-".into(), |(v, t, b)| {
                    format!(
                        "{} ({op}) vs {b} at {t} threads",
                        style.latency_lower_pct(Some(v))
                    )
                }));
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// The throughput verdicts of every thread count both have: "3 faster,
/// 2 ~ (of 5)", with the cells too few repeats leave undecided.
pub fn verdict_counts(
    a: &std::collections::BTreeMap<u64, Point>,
    b: &std::collections::BTreeMap<u64, Point>,
) -> String {
    let verdicts: Vec<Verdict> = a
        .iter()
        .filter_map(|(t, pa)| model::throughput_repeats(pa, b.get(t)?))
        .map(|c| c.verdict(Better::Higher))
        .collect();
    if verdicts.is_empty() {
        return "-".into();
    }
    let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count();
    let undecided = count(Verdict::NeedRepeats);
    if undecided == verdicts.len() {
        return format!("need \u{2265} {MIN_REPEATS} repeats");
    }
    let mut parts: Vec<String> = [Verdict::Faster, Verdict::Slower, Verdict::NoDifference]
        .into_iter()
        .filter(|v| count(*v) > 0)
        .map(|v| format!("{} {}", count(v), v.word()))
        .collect();
    if undecided > 0 {
        parts.push(format!(
            "{undecided} undecided (need \u{2265} {MIN_REPEATS} repeats)"
        ));
    }
    format!("{} (of {})", parts.join(", "), verdicts.len())
}

/// Seed 004's tables: per workload and configuration, the thread count with
/// the highest throughput and each operation's average latency there; on
/// each other configuration's row, the first one's advantage over it, each
/// at its own best thread count (peak against peak, latency at each peak).
pub fn best_threads(study: &Study, style: &Style) -> Table {
    const OPS: [OpKind; 6] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::ReadModifyWrite,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::Write,
    ];
    let a = &study.series[0];
    let advantage = format!("{a} advantage");
    let compared = study.series.len() > 1;
    let mut header: Vec<String> = ["Workload", "Config", "best #Threads", "ops/s"]
        .map(String::from)
        .to_vec();
    if compared {
        header.push(advantage.clone());
    }
    for op in OPS {
        header.push(format!("{} avg us", op.name()));
        if compared {
            header.push(advantage.clone());
        }
    }
    let mut rows = Vec::new();
    for w in &study.workloads {
        for (s, name) in study.series.iter().enumerate() {
            let points_s = &w.points[s];
            let Some((t, _)) = model::peak(points_s) else {
                continue;
            };
            let c = (s > 0).then(|| model::compare(&w.points[0], points_s));
            let p = &points_s[&t];
            let mut row = vec![
                w.name.clone(),
                name.clone(),
                t.to_string(),
                format!("{}{}", super::pacing::ops_of(p), marks(p)),
            ];
            if compared {
                row.push(
                    c.as_ref()
                        .map_or(String::new(), |c| style.gain(c.peak_improvement)),
                );
            }
            for op in OPS {
                row.push(p.latency.get(&op).map_or("-".into(), |l| micros(l.avg_us)));
                if compared {
                    row.push(c.as_ref().map_or(String::new(), |c| {
                        style.latency(c.latency_at_peaks.get(&op).copied())
                    }));
                }
            }
            rows.push(row);
        }
    }
    Table { header, rows }
}

/// Seed 002's figures side by side, per workload at each configuration's
/// peak: throughput (Figure 2), the 99.9th percentile of reads and of
/// writes (Figure 3), write amplification and network bytes per operation
/// (Figure 5), with the first configuration's comparison to each other.
pub fn tails_and_amplification(study: &Study, style: &Style) -> Table {
    let a = &study.series[0];
    let mut header = vec!["Workload".to_string()];
    let figures = [
        "ops/s",
        "p99.9 read us",
        "p99.9 write us",
        "write amp (device)",
        "write amp (process)",
        "network B/op",
    ];
    for figure in figures {
        for s in &study.series {
            header.push(format!("{s} {figure}"));
        }
        if !figure.starts_with("network") && !figure.starts_with("write amp") {
            for b in &study.series[1..] {
                header.push(format!("{a} vs {b}"));
            }
        }
    }
    let rows = study
        .workloads
        .iter()
        .map(|w| {
            let peaks: Vec<Option<&Point>> = w
                .points
                .iter()
                .map(|p| model::peak(p).map(|(t, _)| &p[&t]))
                .collect();
            let mut row = vec![w.name.clone()];
            // Throughput: higher is better.
            let tput: Vec<Option<f64>> = peaks.iter().map(|p| p.map(|p| p.ops_per_sec)).collect();
            row.extend(
                peaks
                    .iter()
                    .map(|p| p.map_or("-".into(), super::pacing::ops_of)),
            );
            for b in 1..tput.len() {
                let gain = match (tput[0], tput[b]) {
                    (Some(x), Some(y)) if y > 0.0 => Some((x - y) / y * 100.0),
                    _ => None,
                };
                row.push(style.gain(gain));
            }
            // Tails: lower is better; the write is the workload's update,
            // insert or read-modify-write (YCSB), or db_bench's write, the
            // first it has.
            // (p99.9, operations it is of), so a thin one is marked.
            let read = |p: &Point| p.latency.get(&OpKind::Read).map(|l| (l.p999_us, l.count));
            let write = |p: &Point| {
                [
                    OpKind::Update,
                    OpKind::Insert,
                    OpKind::ReadModifyWrite,
                    OpKind::Write,
                ]
                .iter()
                .find_map(|op| p.latency.get(op).map(|l| (l.p999_us, l.count)))
            };
            for tail in [&read as &dyn Fn(&Point) -> Option<(f64, u64)>, &write] {
                let tails: Vec<Option<(f64, u64)>> =
                    peaks.iter().map(|p| p.and_then(tail)).collect();
                row.extend(
                    tails
                        .iter()
                        .map(|x| x.map_or("-".into(), |(us, n)| format::percentile(us, n, 0.999))),
                );
                let v: Vec<Option<f64>> = tails.iter().map(|x| x.map(|(us, _)| us)).collect();
                for b in 1..v.len() {
                    let ratio = match (v[0], v[b]) {
                        (Some(x), Some(y)) if x > 0.0 => Some(y / x),
                        _ => None,
                    };
                    row.push(style.latency(ratio));
                }
            }
            for bytes in [Bytes::Device, Bytes::Process] {
                for p in &peaks {
                    row.push(
                        p.and_then(|p| p.accounting.as_ref())
                            .map_or("-".into(), |a| {
                                amplification(a, bytes, Direction::Write).cell()
                            }),
                    );
                }
            }
            for p in &peaks {
                let d = p.and_then(|p| p.accounting.as_ref()).map(|a| &a.derived);
                row.push(
                    match d.map(|d| (d.network_sent_bytes_per_op, d.network_received_bytes_per_op))
                    {
                        Some((Some(s), Some(r))) => ops(s + r),
                        _ => "-".into(),
                    },
                );
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// Rows by thread count: each series' throughput (with repeats: mean,
/// then min / median / max, flagged when they spread), then the first
/// series' improvement over each other one.
pub fn throughput(study: &Study, w: &WorkloadView, threads: &[u64], style: &Style) -> Table {
    let mut header = vec!["#Threads".to_string()];
    header.extend(study.series.iter().cloned());
    for b in &study.series[1..] {
        header.push(format!("{} vs {b}", study.series[0]));
        header.push(format!("{} vs {b}: 95% CI, verdict", study.series[0]));
    }
    let peaks: Vec<Option<(u64, f64)>> = w.points.iter().map(model::peak).collect();
    let rows = threads
        .iter()
        .map(|t| {
            let cells: Vec<Option<&Point>> = w.points.iter().map(|p| p.get(t)).collect();
            let mut row = vec![t.to_string()];
            for (i, p) in cells.iter().enumerate() {
                row.push(match p {
                    Some(p) => {
                        let mean = ops(p.ops_per_sec);
                        let mean = if peaks[i].is_some_and(|(pt, _)| pt == *t) {
                            format!("**{mean}**")
                        } else {
                            mean
                        };
                        let marks = format!("{}{}", marks(p), super::pacing::mark(p));
                        if p.repeats > 1 {
                            let flag = if p.spread_pct() > SPREAD_FLAG_PCT {
                                " \u{2020}"
                            } else {
                                ""
                            };
                            format!(
                                "{mean} ({} / {} / {}){flag}{marks}",
                                ops(p.min()),
                                ops(p.median()),
                                ops(p.max())
                            )
                        } else {
                            format!("{mean}{marks}")
                        }
                    }
                    None => "-".into(),
                });
            }
            for b in 1..cells.len() {
                row.push(match (cells[0], cells[b]) {
                    (Some(a), Some(bp))
                        if a.step_errors.is_empty() && bp.step_errors.is_empty() =>
                    {
                        style.gain(model::improvement(a.ops_per_sec, bp.ops_per_sec))
                    }
                    _ => "-".into(),
                });
                let repeats = match (cells[0], cells[b]) {
                    (Some(a), Some(bp)) => model::throughput_repeats(a, bp),
                    _ => None,
                };
                row.push(format::confidence(repeats.as_ref(), Better::Higher));
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// One operation type: average, p99 and p99.9 per series by thread count,
/// and the first series' p99 against each other one.
pub fn latency(study: &Study, w: &WorkloadView, threads: &[u64], op: OpKind) -> Table {
    let mut header = vec!["#Threads".to_string()];
    for s in &study.series {
        header.extend([format!("{s} avg"), format!("{s} p99"), format!("{s} p99.9")]);
    }
    for b in &study.series[1..] {
        let a = &study.series[0];
        header.push(format!("{a} vs {b} p99"));
        header.push(format!("{a} vs {b} p99: 95% CI, verdict"));
        header.push(format!("{a} vs {b} p99.9: 95% CI, verdict"));
    }
    let rows = threads
        .iter()
        .map(|t| {
            let lat: Vec<Option<&crate::results::step::Latency>> = w
                .points
                .iter()
                .map(|p| p.get(t).and_then(|p| p.latency.get(&op)))
                .collect();
            let mut row = vec![t.to_string()];
            for l in &lat {
                match l {
                    Some(l) => row.extend([
                        micros(l.avg_us),
                        format::percentile(l.p99_us, l.count, 0.99),
                        format::percentile(l.p999_us, l.count, 0.999),
                    ]),
                    None => row.extend(["-".into(), "-".into(), "-".into()]),
                }
            }
            for b in 1..lat.len() {
                row.push(match (lat[0], lat[b]) {
                    (Some(a), Some(bl)) if a.p99_us > 0.0 => {
                        format::lower_ratio(Some(bl.p99_us / a.p99_us))
                    }
                    _ => "-".into(),
                });
                for p in [Percentile::P99, Percentile::P999] {
                    let repeats = match (w.points[0].get(t), w.points[b].get(t)) {
                        (Some(a), Some(bp)) => model::tail_repeats(a, bp, op, p),
                        _ => None,
                    };
                    row.push(format::confidence(repeats.as_ref(), Better::Lower));
                }
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// A paced workload's `op` latency from each operation's actual start,
/// beside its table from the intended start: avg, p99 and p99.9 per
/// series (no comparison: those are made on the intended start).
pub fn latency_from_actual(study: &Study, w: &WorkloadView, threads: &[u64], op: OpKind) -> Table {
    let mut header = vec!["#Threads".to_string()];
    for s in &study.series {
        header.extend([format!("{s} avg"), format!("{s} p99"), format!("{s} p99.9")]);
    }
    let rows = threads
        .iter()
        .map(|t| {
            let mut row = vec![t.to_string()];
            for points in &w.points {
                match points.get(t).and_then(|p| p.latency_actual.get(&op)) {
                    Some(l) => row.extend([
                        micros(l.avg_us),
                        format::percentile(l.p99_us, l.count, 0.99),
                        format::percentile(l.p999_us, l.count, 0.999),
                    ]),
                    None => row.extend(["-".into(), "-".into(), "-".into()]),
                }
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// What bound each step, by thread count and series.
pub fn verdicts(study: &Study, w: &WorkloadView, threads: &[u64]) -> Table {
    super::grid::per_series(study, w, threads, |p| {
        if p.verdicts.is_empty() {
            "-".into()
        } else {
            p.verdicts.join(" / ")
        }
    })
}

/// A line on the repeats that did not settle (SNIA's criterion over them).
pub fn steadiness_note(study: &Study, w: &WorkloadView) -> String {
    let mut unsteady = Vec::new();
    let mut checked = 0;
    for (s, points) in study.series.iter().zip(&w.points) {
        for p in points.values() {
            match p.steadiness() {
                Some(Steadiness::NotSteady { range_pct, .. }) => {
                    checked += 1;
                    unsteady.push(format!(
                        "{s} at {} threads (range {range_pct:.0}%)",
                        p.threads
                    ));
                }
                Some(_) => checked += 1,
                None => {}
            }
        }
    }
    match (checked, unsteady.is_empty()) {
        (0, _) => String::new(),
        (_, true) => {
            format!(" All {checked} cells with 3 or more repeats were steady over their repeats.")
        }
        (_, false) => format!(" Not steady over their repeats: {}.", unsteady.join("; ")),
    }
}

/// The cost at each configuration's peak, from every repeat there.
pub fn cost(study: &Study, w: &WorkloadView) -> Table {
    let header = [
        "Config",
        "#Threads",
        "ops/s",
        "device read B/op",
        "device write B/op",
        "read amp (process)",
        "write amp (process)",
        "read amp (device)",
        "write amp (device)",
        "record rewrite",
        "space amp",
        "device busy",
        "CPU us/op",
        "ops per CPU-s",
        "network B/op (sent / received)",
        "server CPU us/op",
        "ops per joule",
    ]
    .map(String::from)
    .to_vec();
    let rows = rows_at_peaks(study, w, |p| {
        let mut row = Vec::new();
        match &p.accounting {
            Some(a) => {
                let d = &a.derived;
                // "unavailable": the counter was not read; "-": nothing to divide by
                // (no logical reads in a load, say).
                let missing =
                    |measured: bool| if measured { "-" } else { "unavailable" }.to_string();
                let device = a.device_io.is_some();
                let dev = |v: Option<f64>| v.map_or_else(|| missing(device), ops);
                let amp = |v: Option<f64>, measured: bool| {
                    v.map_or_else(|| missing(measured), |x| format!("{x:.2}"))
                };
                row.push(dev(d.device_read_bytes_per_op));
                row.push(dev(d.device_write_bytes_per_op));
                for bytes in [Bytes::Process, Bytes::Device] {
                    for direction in [Direction::Read, Direction::Write] {
                        row.push(amplification(a, bytes, direction).cell());
                    }
                }
                row.push(
                    d.record_rewrite_factor
                        .map_or("-".into(), |x| format!("{x:.2}x")),
                );
                row.push(amp(d.space_amplification, a.data_dir_bytes.is_some()));
                row.push(
                    d.device_busy_pct
                        .map_or_else(|| missing(device), |b| format!("{b:.0}%")),
                );
                row.push(
                    d.cpu_s_per_op
                        .map_or("-".into(), |x| format!("{:.1}", x * 1e6)),
                );
                row.push(d.ops_per_cpu_s.map_or("-".into(), ops));
                row.push(
                    match (d.network_sent_bytes_per_op, d.network_received_bytes_per_op) {
                        (Some(s), Some(r)) => format!("{} / {}", ops(s), ops(r)),
                        _ => "-".into(),
                    },
                );
                row.push(
                    d.server_cpu_s_per_op
                        .map_or("-".into(), |x| format!("{:.1}", x * 1e6)),
                );
                row.push(d.ops_per_joule.map_or("unavailable".into(), ops));
            }
            None => row.extend(std::iter::repeat_n("unavailable".to_string(), 14)),
        }
        row
    });
    Table { header, rows }
}

/// Under the cost table: what each amplification divides, what logical
/// bytes count and, where updates rewrote whole records, by how much.
pub fn cost_note(study: &Study, w: &WorkloadView) -> String {
    let mut note = String::from(
        "Amplification = bytes / logical bytes over the measured window. (process): the \
         engine's processes' block-layer bytes (`/proc/PID/io`: a server's processes, else \
         kvperf's own, an embedded engine's); (device): the data directory's device's sectors \
         (`/proc/diskstats`), every process's, \"shared\" where more than 20% of them were not \
         the engine's; \"unavailable\" on a memory file system (tmpfs: no device) or where \
         the counter could not be read; \"unreliable\" under 1 MiB of logical bytes. Logical \
         bytes are the record bytes each successful operation moved (field names and values; \
         keys not counted): an update counts the fields it wrote, a read the fields it returned.",
    );
    let rewrites: Vec<f64> = rows_at_peaks_points(study, w)
        .filter_map(|p| p.accounting.as_ref()?.derived.record_rewrite_factor)
        .collect();
    if rewrites.iter().any(|f| *f > 1.0) {
        let (low, high) = rewrites
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), f| (l.min(*f), h.max(*f)));
        let here = match format!("{low:.2}") == format!("{high:.2}") {
            true => format!("{low:.2}x"),
            false => format!("{low:.2}x to {high:.2}x"),
        };
        note.push_str(&format!(
            " Record rewrite: the engine stores each record whole, so an update of some fields \
             writes the whole record; whole-record bytes written / logical bytes written \
             ({here} here) is a factor inside both write amplifications (divide by it for bytes \
             per whole-record byte)."
        ));
    }
    note
}

/// Each configuration's peak point of `w`.
fn rows_at_peaks_points<'a>(
    study: &'a Study,
    w: &'a WorkloadView,
) -> impl Iterator<Item = &'a Point> {
    study.series.iter().enumerate().filter_map(|(i, _)| {
        let (t, _) = model::peak(&w.points[i])?;
        w.points[i].get(&t)
    })
}

/// One row per configuration at its peak: its name, thread count and
/// ops/s, then `figures` of that point.
pub fn rows_at_peaks(
    study: &Study,
    w: &WorkloadView,
    figures: impl Fn(&Point) -> Vec<String>,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (i, s) in study.series.iter().enumerate() {
        let Some((t, _)) = model::peak(&w.points[i]) else {
            continue;
        };
        let p = &w.points[i][&t];
        let mut row = vec![s.clone(), t.to_string(), super::pacing::ops_of(p)];
        row.extend(figures(p));
        rows.push(row);
    }
    rows
}

/// Which pages the corners' I/O buffers were on: a sequential corner on
/// scattered 4 KiB pages can read several times lower (docs/your-ssd.md).
fn corner_buffers(study: &Study) -> &'static str {
    // Results from before the buffers were recorded had 4 KiB pages.
    let huge_and_total: Vec<(u64, u64)> = study
        .devices
        .iter()
        .flat_map(|d| &d.corners)
        .map(|m| {
            m.device
                .as_ref()
                .and_then(|d| d.buffers.as_ref())
                .map_or((0, 1), |b| (b.huge_page_bytes, b.bytes))
        })
        .collect();
    if huge_and_total.iter().all(|(huge, total)| huge == total) {
        "from I/O buffers on 2 MiB huge pages"
    } else if huge_and_total.iter().all(|(huge, _)| *huge == 0) {
        "from I/O buffers on 4 KiB pages"
    } else {
        "from I/O buffers partly on 4 KiB pages (each step's JSON says how many bytes had huge pages)"
    }
}

/// The 4 corners of each configuration's device, and its preconditioning.
pub fn device_blocks(study: &Study, blocks: &mut Vec<Block>) {
    if study.devices.iter().any(|d| !d.corners.is_empty()) {
        blocks.push(Block::Heading(1, "Device: 4 corners".into()));
        blocks.push(Block::Paragraph(format!(
            "`kvperf device corners` on each configuration's data directory: direct I/O through \
             io_uring, sequential 128 KiB and random 4 KiB at queue depth 32, a ramp not counted \
             (fio's usual settings), {}; fio's figures beside them where it ran too.",
            corner_buffers(study)
        )));
        let mut header = vec!["corner".to_string()];
        header.extend(study.series.iter().cloned());
        let names: Vec<String> = study
            .devices
            .iter()
            .flat_map(|d| d.corners.iter().map(|m| m.name.clone()))
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            });
        let rows =
            names
                .iter()
                .map(|name| {
                    let mut row = vec![corner_label(study, name)];
                    for d in &study.devices {
                        row.push(d.corners.iter().find(|m| &m.name == name).map_or(
                            "-".into(),
                            |m| {
                                let mut cell = device_headline(m);
                                if let Some(f) = m.device.as_ref().and_then(|d| d.fio.as_ref()) {
                                    let fio = if m.device.as_ref().is_some_and(|d| d.random) {
                                        format!("{} IOPS", ops(f.iops))
                                    } else {
                                        format!("{} MB/s", ops(f.mb_per_sec))
                                    };
                                    cell.push_str(&format!(" (fio {fio})"));
                                }
                                cell
                            },
                        ));
                    }
                    row
                })
                .collect();
        blocks.push(Block::Table(Table { header, rows }));
    }
    if study.devices.iter().any(|d| !d.precondition.is_empty()) {
        blocks.push(Block::Heading(1, "Preconditioning".into()));
        // What each column holds, from the figures themselves: the fill's
        // passes are sequential writes (MB/s each), the rounds random writes
        // (IOPS each) until steady.
        let (fill, rounds): (Vec<&Measurement>, Vec<&Measurement>) = study
            .devices
            .iter()
            .flat_map(|d| &d.precondition)
            .partition(|m| is_fill(m));
        let header = vec![
            "Config".to_string(),
            format!(
                "fill passes ({}): MB/s each",
                pattern_of(&fill, "sequential writes")
            ),
            format!(
                "steady-state rounds ({}): count: IOPS each",
                pattern_of(&rounds, "random writes")
            ),
            "steady state".to_string(),
        ];
        let rows = study
            .series
            .iter()
            .zip(&study.devices)
            .filter(|(_, d)| !d.precondition.is_empty())
            .map(|(s, d)| {
                let (passes, rounds): (Vec<_>, Vec<_>) =
                    d.precondition.iter().partition(|m| is_fill(m));
                vec![
                    s.clone(),
                    if passes.is_empty() {
                        "-".into()
                    } else {
                        passes
                            .iter()
                            .map(|m| device_headline(m))
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    if rounds.is_empty() {
                        "-".into()
                    } else {
                        format!(
                            "{}: {}",
                            rounds.len(),
                            rounds
                                .iter()
                                .map(|m| ops(m.ops_per_sec))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    },
                    d.steady.as_ref().map_or("-".into(), |s| s.describe()),
                ]
            })
            .collect();
        blocks.push(Block::Table(Table { header, rows }));
    }
}

fn is_fill(m: &Measurement) -> bool {
    m.name.starts_with("fill")
}

/// "1 MiB sequential writes, QD 8", from the first figure that says.
fn pattern_of(ms: &[&Measurement], otherwise: &str) -> String {
    match ms.iter().find_map(|m| m.device.as_ref()) {
        Some(d) => io_pattern(d, "s"),
        None => otherwise.to_string(),
    }
}

/// "128 KiB sequential read, QD 32" (`plural` "s": "reads").
fn io_pattern(d: &DeviceFigures, plural: &str) -> String {
    format!(
        "{} {} {}{plural}, QD {}",
        block_size(d.block_bytes),
        if d.random { "random" } else { "sequential" },
        if d.write { "write" } else { "read" },
        d.queue_depth
    )
}

fn block_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

/// A device figure as the report writes numbers: "12,345 IOPS", "3,100 MB/s".
fn device_headline(m: &Measurement) -> String {
    match &m.device {
        Some(d) if d.random => format!("{} IOPS", ops(m.ops_per_sec)),
        Some(d) => format!("{} MB/s", ops(d.mb_per_sec)),
        None => "-".into(),
    }
}

/// "read" -> "128 KiB sequential read, QD 32", from any series' figures.
fn corner_label(study: &Study, name: &str) -> String {
    let m = study
        .devices
        .iter()
        .flat_map(|d| &d.corners)
        .find(|m| m.name == name);
    match m.and_then(|m| m.device.as_ref()) {
        Some(d) => io_pattern(d, ""),
        None => name.to_string(),
    }
}
