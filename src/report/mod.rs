//! Reports in the briefs' layout: per workload, throughput by #Threads for
//! each configuration with the first configuration's improvement over each
//! other one, peak and average improvement, read latency (lower is better),
//! and the I/O and CPU cost at each configuration's peak. Markdown, CSV and
//! one self-contained HTML page with SVG charts.

mod document;
pub mod model;
mod svg;

use std::path::Path;

pub use document::{Block, Document, Table};
pub use model::{compare, load, Comparison, Study};

use model::{Point, WorkloadView};
use svg::{Chart, Series, XAxis};

/// The whole report; `charts` adds the SVG blocks (HTML only).
pub fn build(study: &Study, charts: bool) -> Document {
    let mut blocks = Vec::new();
    blocks.push(Block::Paragraph(format!(
        "Configurations: {}. Improvements are {} over each other configuration: \
         throughput (A - B) / B, latency (B - A) / B (lower is better); \
         the average improvement is the mean of the per-thread-count percentages.",
        study
            .series
            .iter()
            .map(|s| format!("**{s}**"))
            .collect::<Vec<_>>()
            .join(", "),
        study.series.first().map_or("-", String::as_str)
    )));
    if !study.provenance.is_empty() {
        blocks.push(Block::Paragraph(study.provenance.clone()));
    }
    for (s, host) in study
        .series
        .iter()
        .zip(&study.hosts)
        .filter(|(_, h)| !h.is_empty())
    {
        blocks.push(Block::Paragraph(format!("{s}: {host}")));
    }
    if study.series.len() > 1 {
        blocks.push(Block::Heading(1, "Summary".into()));
        blocks.push(Block::Table(summary_table(study)));
    }
    for w in &study.workloads {
        workload_blocks(study, w, charts, &mut blocks);
    }
    Document {
        title: format!("kvperf report: {}", study.title),
        blocks,
    }
}

fn summary_table(study: &Study) -> Table {
    let a = &study.series[0];
    let mut header = vec!["Workload".to_string()];
    for s in &study.series {
        header.push(format!("{s} peak ops/s"));
    }
    for b in &study.series[1..] {
        header.push(format!("{a} vs {b}: peak"));
        header.push("average over #Threads".into());
        header.push("avg latency (read)".into());
        header.push("p99 latency (read)".into());
    }
    let rows = study
        .workloads
        .iter()
        .map(|w| {
            let mut row = vec![w.name.clone()];
            for points in &w.points {
                row.push(
                    model::peak(points)
                        .map_or("-".into(), |(t, v)| format!("{} ({t} thr)", ops(v))),
                );
            }
            for b in 1..study.series.len() {
                let c = compare(&w.points[0], &w.points[b]);
                row.push(pct(c.peak_improvement));
                row.push(pct(c.average_improvement));
                row.push(lower(c.latency_avg_improvement));
                row.push(lower(c.latency_p99_improvement));
            }
            row
        })
        .collect();
    Table { header, rows }
}

fn workload_blocks(study: &Study, w: &WorkloadView, charts: bool, blocks: &mut Vec<Block>) {
    blocks.push(Block::Heading(1, w.name.clone()));
    let threads = thread_counts(w);
    if charts {
        blocks.push(Block::Charts(charts_for(study, w, &threads)));
    }
    blocks.push(Block::Heading(
        2,
        format!("{}: throughput (ops/s) vs #Threads", w.name),
    ));
    let peaks: Vec<Option<(u64, f64)>> = w.points.iter().map(model::peak).collect();
    blocks.push(Block::Table(by_threads(
        study,
        w,
        &threads,
        |p| Some(p.ops_per_sec),
        ops,
        true,
        &peaks,
    )));
    let a = &study.series[0];
    for b in 1..study.series.len() {
        let c = compare(&w.points[0], &w.points[b]);
        let bname = &study.series[b];
        let peak_text = |p: Option<(u64, f64)>| {
            p.map_or("-".into(), |(t, v)| {
                format!("**{}** ops/s at {t} threads", ops(v))
            })
        };
        let mut text = format!(
            "Peak: {a} {}, {bname} {}: peak improvement **{}**. Average improvement across thread counts: **{}**.",
            peak_text(c.peak_candidate),
            peak_text(c.peak_baseline),
            pct(c.peak_improvement),
            pct(c.average_improvement),
        );
        if let Some((t, v)) = c.max_improvement {
            text.push_str(&format!(
                " Largest per-thread-count improvement: {} at {t} threads.",
                pct(Some(v))
            ));
        }
        if c.latency_avg_improvement.is_some() {
            text.push_str(&format!(
                " Average {} latency, averaged across thread counts: {}; p99: {}.",
                w.latency_op,
                lower(c.latency_avg_improvement),
                lower(c.latency_p99_improvement)
            ));
        }
        blocks.push(Block::Paragraph(text));
    }
    if w.latency_op.is_empty() {
        return;
    }
    let no_peaks = vec![None; w.points.len()];
    blocks.push(Block::Heading(
        2,
        format!(
            "{}: average {} latency (us) vs #Threads",
            w.name, w.latency_op
        ),
    ));
    blocks.push(Block::Table(by_threads(
        study,
        w,
        &threads,
        |p| p.latency_avg_us,
        micros,
        false,
        &no_peaks,
    )));
    blocks.push(Block::Heading(
        2,
        format!("{}: p99 {} latency (us) vs #Threads", w.name, w.latency_op),
    ));
    blocks.push(Block::Table(by_threads(
        study,
        w,
        &threads,
        |p| p.latency_p99_us,
        micros,
        false,
        &no_peaks,
    )));
    blocks.push(Block::Heading(
        2,
        format!("{}: cost at each configuration's peak", w.name),
    ));
    blocks.push(Block::Table(cost_table(study, w, &peaks)));
}

fn thread_counts(w: &WorkloadView) -> Vec<u64> {
    let mut t: Vec<u64> = w.points.iter().flat_map(|p| p.keys().copied()).collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// Rows by thread count: each series' value, then the first series'
/// improvement over each other one (`higher_is_better` picks the formula).
fn by_threads(
    study: &Study,
    w: &WorkloadView,
    threads: &[u64],
    value: fn(&Point) -> Option<f64>,
    format: fn(f64) -> String,
    higher_is_better: bool,
    bold: &[Option<(u64, f64)>],
) -> Table {
    let mut header = vec!["#Threads".to_string()];
    header.extend(study.series.iter().cloned());
    for b in &study.series[1..] {
        header.push(format!("{} vs {b}", study.series[0]));
    }
    let rows = threads
        .iter()
        .map(|t| {
            let values: Vec<Option<f64>> =
                w.points.iter().map(|p| p.get(t).and_then(value)).collect();
            let mut row = vec![t.to_string()];
            for (i, v) in values.iter().enumerate() {
                row.push(match v {
                    Some(v) if bold[i].is_some_and(|(pt, _)| pt == *t) => {
                        format!("**{}**", format(*v))
                    }
                    Some(v) => format(*v),
                    None => "-".into(),
                });
            }
            for b in 1..values.len() {
                row.push(match (values[0], values[b]) {
                    (Some(a), Some(bv)) if higher_is_better => pct(model::improvement(a, bv)),
                    (Some(a), Some(bv)) => lower(model::reduction(a, bv)),
                    _ => "-".into(),
                });
            }
            row
        })
        .collect();
    Table { header, rows }
}

fn cost_table(study: &Study, w: &WorkloadView, peaks: &[Option<(u64, f64)>]) -> Table {
    let header = [
        "Config",
        "#Threads",
        "ops/s",
        "device read B/op",
        "device write B/op",
        "read amp",
        "write amp",
        "space amp",
        "CPU us/op",
        "ops per CPU-s",
        "ops per joule",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for (i, s) in study.series.iter().enumerate() {
        let Some((t, _)) = peaks[i] else { continue };
        let p = &w.points[i][&t];
        let mut row = vec![s.clone(), t.to_string(), ops(p.ops_per_sec)];
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
                row.push(amp(d.read_amplification, device));
                row.push(amp(d.write_amplification, device));
                row.push(amp(d.space_amplification, a.data_dir_bytes.is_some()));
                row.push(
                    d.cpu_s_per_op
                        .map_or("-".into(), |x| format!("{:.1}", x * 1e6)),
                );
                row.push(d.ops_per_cpu_s.map_or("-".into(), ops));
                row.push(
                    d.ops_per_joule
                        .map_or("unavailable".into(), |x| format!("{x:.0}")),
                );
            }
            None => row.extend(std::iter::repeat_n("unavailable".to_string(), 8)),
        }
        rows.push(row);
    }
    Table { header, rows }
}

fn charts_for(study: &Study, w: &WorkloadView, threads: &[u64]) -> Vec<String> {
    let series = |f: fn(&Point) -> Option<(f64, f64)>| -> Vec<Series> {
        study
            .series
            .iter()
            .zip(&w.points)
            .map(|(name, points)| Series {
                name,
                points: points.values().filter_map(f).collect(),
            })
            .collect()
    };
    let mut out = vec![Chart {
        title: &format!("{}: throughput", w.name),
        x_label: "#Threads",
        y_label: "operations per second",
        x: XAxis::Categories(threads.to_vec()),
        series: series(|p| Some((p.threads as f64, p.ops_per_sec))),
    }
    .render()];
    if !w.latency_op.is_empty() {
        out.push(
            Chart {
                title: &format!("{}: average {} latency", w.name, w.latency_op),
                x_label: "#Threads",
                y_label: "microseconds",
                x: XAxis::Categories(threads.to_vec()),
                series: series(|p| Some((p.threads as f64, p.latency_avg_us?))),
            }
            .render(),
        );
        out.push(
            Chart {
                title: &format!(
                    "{}: p99 {} latency vs throughput (QoS)",
                    w.name, w.latency_op
                ),
                x_label: "operations per second",
                y_label: "p99 latency, microseconds",
                x: XAxis::Linear,
                series: series(|p| Some((p.ops_per_sec, p.latency_p99_us?))),
            }
            .render(),
        );
    }
    out
}

/// One row per (series, workload, threads), every figure.
pub fn csv(study: &Study) -> String {
    let mut out = String::from(
        "config,workload,threads,repeats,ops_per_sec,latency_op,latency_avg_us,latency_p99_us,latency_p999_us,\
         device_read_bytes_per_op,device_write_bytes_per_op,read_amplification,write_amplification,\
         space_amplification,cpu_us_per_op,ops_per_cpu_s,ops_per_joule\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for w in &study.workloads {
        for (name, points) in study.series.iter().zip(&w.points) {
            for p in points.values() {
                let d = p.accounting.as_ref().map(|a| a.derived).unwrap_or_default();
                out.push_str(&format!(
                    "{},{},{},{},{:.1},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    csv_field(name),
                    csv_field(&w.name),
                    p.threads,
                    p.repeats,
                    p.ops_per_sec,
                    w.latency_op,
                    opt(p.latency_avg_us),
                    opt(p.latency_p99_us),
                    opt(p.latency_p999_us),
                    opt(d.device_read_bytes_per_op),
                    opt(d.device_write_bytes_per_op),
                    opt(d.read_amplification),
                    opt(d.write_amplification),
                    opt(d.space_amplification),
                    opt(d.cpu_s_per_op.map(|x| x * 1e6)),
                    opt(d.ops_per_cpu_s),
                    opt(d.ops_per_joule),
                ));
            }
        }
    }
    out
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Writes report.md, report.csv and report.html into `dir` (atomically each).
pub fn write(study: &Study, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        crate::error::InputError::Invalid(format!("cannot create --out '{}': {e}", dir.display()))
    })?;
    let put = |name: &str, text: String| {
        crate::output::write_atomically(&dir.join(name), text.as_bytes())
    };
    put("report.md", build(study, false).to_markdown())?;
    put("report.csv", csv(study))?;
    put("report.html", build(study, true).to_html())
}

/// 12345.6 -> "12,346".
pub fn ops(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn micros(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        ops(v)
    }
}

fn pct(v: Option<f64>) -> String {
    match v {
        // Rounds to zero: no sign ("-0%" reads as a loss).
        Some(x) if x.abs() < 0.5 => "0%".into(),
        Some(x) => format!("{x:+.0}%"),
        None => "-".into(),
    }
}

fn lower(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 0.0 => format!("{x:.0}% lower"),
        Some(x) => format!("{:.0}% higher", -x),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Record;

    /// Seed 000, Table 1 (Recording User Sessions), as two configs.
    const THREADS: [u64; 10] = [4, 8, 16, 32, 48, 64, 96, 128, 192, 256];
    const MICRON_7400: [f64; 10] = [
        17060.0, 28990.0, 40114.0, 42012.0, 41805.0, 40940.0, 40477.0, 40184.0, 40679.0, 41808.0,
    ];
    const GEN3: [f64; 10] = [
        12694.0, 17696.0, 22591.0, 27635.0, 28755.0, 29195.0, 28987.0, 28317.0, 28705.0, 27987.0,
    ];

    fn record(config: &str, threads: u64, ops: f64, read_avg: f64) -> (String, Record) {
        let r = serde_json::from_value(serde_json::json!({
            "kvperf_results": 1,
            "plan": { "name": "seed-000", "fingerprint": "f", "scale": 1.0 },
            "step": { "id": format!("{config}/{threads}"), "config": config, "kind": "run",
                      "workload": "a", "threads": threads, "repeat": 1 },
            "summary": { "operations": 1, "runtime_s": 1.0, "ops_per_sec": ops,
                         "latency_us": { "read": { "count": 1, "avg": read_avg, "p50": read_avg,
                                                   "p99": read_avg * 3.0, "p999": read_avg * 5.0, "max": read_avg * 9.0 } } },
        }))
        .unwrap();
        (config.to_string(), r)
    }

    fn study() -> Study {
        let mut records = Vec::new();
        for (i, &t) in THREADS.iter().enumerate() {
            // Latency: the 7400 half the Gen3's at every thread count.
            records.push(record("micron-7400", t, MICRON_7400[i], 100.0 + t as f64));
            records.push(record("gen3", t, GEN3[i], 2.0 * (100.0 + t as f64)));
        }
        model::from_records(&records)
    }

    #[test]
    fn reproduces_the_briefs_peak_and_average_improvement() {
        let s = study();
        assert_eq!(s.series, ["micron-7400", "gen3"]);
        let c = compare(&s.workloads[0].points[0], &s.workloads[0].points[1]);
        assert_eq!(c.peak_candidate, Some((32, 42012.0)));
        assert_eq!(c.peak_baseline, Some((64, 29195.0)));
        // The brief: "a 44% peak performance improvement", "a 49% increase ...
        // averaged across all tested #Threads".
        assert_eq!(pct(c.peak_improvement), "+44%");
        assert_eq!(pct(c.average_improvement), "+49%");
        assert_eq!(c.max_improvement.map(|m| m.0), Some(16));
        assert_eq!(lower(c.latency_avg_improvement), "50% lower");
    }

    #[test]
    fn markdown_table_has_the_briefs_layout() {
        let md = build(&study(), false).to_markdown();
        assert!(
            md.contains("| #Threads | micron-7400 | gen3 | micron-7400 vs gen3 |"),
            "{md}"
        );
        assert!(md.contains("| 4 | 17,060 | 12,694 | +34% |"), "{md}");
        assert!(md.contains("| 32 | **42,012** | 27,635 | +52% |"), "{md}");
        assert!(md.contains("| 64 | 40,940 | **29,195** | +40% |"), "{md}");
        assert!(md.contains("peak improvement **+44%**"), "{md}");
        assert!(
            md.contains("Plan seed-000 (fingerprint f), 20 steps measured by kvperf ?"),
            "{md}"
        );
    }

    #[test]
    fn percentages_round_without_a_negative_zero() {
        assert_eq!(pct(Some(-0.04)), "0%");
        assert_eq!(pct(Some(43.9)), "+44%");
        assert_eq!(pct(Some(-12.6)), "-13%");
        assert_eq!(lower(Some(-8.0)), "8% higher");
    }

    #[test]
    fn csv_has_a_row_per_config_and_thread_count() {
        let text = csv(&study());
        assert_eq!(text.lines().count(), 1 + 2 * THREADS.len());
        assert!(text.contains("micron-7400,Workload A,32,1,42012.0,read,"));
    }

    #[test]
    fn html_is_self_contained_with_three_charts_per_workload() {
        let html = build(&study(), true).to_html();
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(!html.contains("http"), "no network references");
        assert!(!html.contains("<script"));
    }
}
