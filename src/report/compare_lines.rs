//! `kvperf compare` in hyperfine's shape: one line per compared cell,
//! each configuration against the base, in the report's one comparison
//! voice ("1.82x the throughput of base", "1.25x lower throughput than
//! base", "read p99 1.64x lower"; never "0.8x" for worse), with the 95%
//! interval and verdict where the repeats allow; and the same rows as
//! CSV. Nothing is printed for what is absent.

use std::fmt::Write;

use super::confidence::{Figure, Gate, Row};
use super::format::{change_in_one_unit, relative};
use super::model::{Percentile, Study};
use crate::measure::few_samples;
use crate::measure::stats::{Verdict, MIN_REPEATS};

/// The lines: one per cell another configuration shares with the base,
/// then the gate's outcome when there is one.
pub fn text(study: &Study, rows: &[Row], gate: Option<&Gate>) -> String {
    let base = &study.series[0];
    let mut out = String::new();
    for (b, new) in study.series.iter().enumerate().skip(1) {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.config == new).collect();
        if mine.is_empty() {
            // Runs at different thread counts are not compared, and say so.
            let _ = writeln!(
                out,
                "{new}: no cell in common with {base}: a comparison needs the same workload at \
                 the same thread count ({base}: {}; {new}: {})",
                cells(study, 0),
                cells(study, b)
            );
        }
        let mut cells: Vec<(&str, u64)> = mine
            .iter()
            .map(|r| (r.workload.as_str(), r.threads))
            .collect();
        cells.dedup();
        for (workload, threads) in cells {
            let of_cell: Vec<&Row> = mine
                .iter()
                .copied()
                .filter(|r| r.workload == workload && r.threads == threads)
                .collect();
            let _ = writeln!(out, "{}", line(new, base, &of_cell, workload, threads));
        }
    }
    if let Some(g) = gate {
        let _ = writeln!(
            out,
            "--fail-if-slower {}%: {}: {}",
            g.limit_pct,
            g.verdict(),
            g.summary()
        );
    }
    out
}

/// "new: 1.82x the throughput of base [+75%, +90%] faster, read p99
/// (actual start) 1.64x lower [-42%, -36%] faster (Workload A, 8 threads)".
fn line(new: &str, base: &str, rows: &[&Row], workload: &str, threads: u64) -> String {
    let mut parts = Vec::new();
    for r in rows {
        let said = match r.figure {
            Figure::Throughput => relative(r.comparison.ratio).map(|(ratio, more)| {
                if more {
                    format!("{ratio} the throughput of {base}")
                } else {
                    format!("{ratio} lower throughput than {base}")
                }
            }),
            Figure::Latency(op, Percentile::P99, start) => {
                // A p99 of under 100 operations is their maximum: said.
                let thin = [r.base_operations, r.new_operations]
                    .iter()
                    .any(|n| few_samples::too_few(*n, 0.99));
                relative(r.comparison.ratio).map(|(ratio, more)| {
                    format!(
                        "{} p99 ({} start{}) {ratio} {}",
                        op.name(),
                        start.name(),
                        if thin {
                            "; of under 100 operations: their maximum"
                        } else {
                            ""
                        },
                        if more { "higher" } else { "lower" }
                    )
                })
            }
            // p99.9 is in the detail, the CSV and the JSON.
            Figure::Latency(_, Percentile::P999, _) => None,
        };
        if let Some(said) = said {
            parts.push(format!("{said}{}", judged(r)));
        }
    }
    let repeats = rows
        .iter()
        .find(|r| r.comparison.interval.is_none())
        .map(|r| {
            format!(
                "; {} and {} repeats: judging at 95% needs \u{2265} {MIN_REPEATS} of each",
                r.new_repeats, r.base_repeats
            )
        })
        .unwrap_or_default();
    format!(
        "{new}: {} ({workload}, {threads} {}){}{repeats}",
        parts.join(", "),
        if threads == 1 { "thread" } else { "threads" },
        pacing(new, base, rows)
    )
}

/// When one side ran paced and the other not: which, and that latency is
/// compared from the actual start, which both record.
fn pacing(new: &str, base: &str, rows: &[&Row]) -> String {
    let Some(r) = rows.first().filter(|r| r.base_paced != r.new_paced) else {
        return String::new();
    };
    let (paced, unpaced) = match r.new_paced {
        true => (new, base),
        false => (base, new),
    };
    format!(
        "; latency from the actual start on both sides: {paced} ran paced (a target rate), \
         {unpaced} did not"
    )
}

/// What series `index` measured: "Workload A at 16 threads, load at 1 thread".
fn cells(study: &Study, index: usize) -> String {
    let said: Vec<String> = study
        .workloads
        .iter()
        .filter_map(|w| {
            let threads: Vec<String> = w.points.get(index)?.keys().map(u64::to_string).collect();
            let unit = if threads == ["1"] {
                "thread"
            } else {
                "threads"
            };
            (!threads.is_empty()).then(|| format!("{} at {} {unit}", w.name, threads.join(" and ")))
        })
        .collect();
    if said.is_empty() {
        "nothing measured".into()
    } else {
        said.join(", ")
    }
}

/// " [-22%, -18%] slower", or nothing without an interval.
fn judged(r: &Row) -> String {
    match (r.comparison.interval, r.verdict()) {
        (Some(i), v) => format!(
            " {} {}",
            change_in_one_unit(r.comparison.ratio, i.low, i.high).1,
            match v {
                Verdict::NoDifference => "no difference at 95%".to_string(),
                v => v.word(),
            }
        ),
        (None, _) => String::new(),
    }
}

/// Every row as CSV: one line per configuration, cell and figure.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "config,workload,threads,figure,base,new,base_repeats,new_repeats,ratio,ci_low,ci_high,verdict\n",
    );
    let quoted = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    for r in rows {
        let (low, high) = r
            .comparison
            .interval
            .map_or((String::new(), String::new()), |i| {
                (i.low.to_string(), i.high.to_string())
            });
        let verdict = serde_json::to_value(r.verdict())
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{low},{high},{verdict}",
            quoted(&r.config),
            quoted(&r.workload),
            r.threads,
            quoted(&r.figure.name()),
            r.base,
            r.new,
            r.base_repeats,
            r.new_repeats,
            r.comparison.ratio,
        );
    }
    out
}
