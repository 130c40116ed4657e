//! `kvperf compare`'s verdicts: every cell two configurations share, each
//! other configuration against the first (the base), throughput and the
//! primary operation's p99 and p99.9 with a 95% confidence interval over
//! the repeats (`measure::stats`), and the regression gate.

use serde_json::{json, Value};

use super::document::{Block, Table};
use super::format::{self, micros, ops};
use super::model::{self, LatencyStart, Percentile, Point, Study};
use crate::measure::stats::{Better, RepeatComparison, Verdict, CONFIDENCE, MIN_REPEATS};
use crate::measure::{few_samples, OpKind};

/// What a row compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Throughput,
    /// A percentile of an operation type's latency, of one kind: both
    /// sides of a comparison are timed from the same start.
    Latency(OpKind, Percentile, LatencyStart),
}

impl Figure {
    pub fn name(self) -> String {
        match self {
            Figure::Throughput => "ops/s".into(),
            Figure::Latency(op, p, start) => {
                format!("{} {} us, {} start", op.name(), p.name(), start.name())
            }
        }
    }

    pub fn better(self) -> Better {
        match self {
            Figure::Throughput => Better::Higher,
            Figure::Latency(..) => Better::Lower,
        }
    }

    /// The cell's figure as the report shows it: the mean of the repeats'
    /// throughput, or the percentile of their histograms added together.
    fn of(self, p: &Point) -> Option<f64> {
        match self {
            Figure::Throughput => Some(p.ops_per_sec),
            Figure::Latency(op, pct, _) => p.latency.get(&op).map(|l| match pct {
                Percentile::P99 => l.p99_us,
                Percentile::P999 => l.p999_us,
            }),
        }
    }

    /// The successful operations a percentile is of (0 for throughput).
    fn operations(self, p: &Point) -> u64 {
        match self {
            Figure::Throughput => 0,
            Figure::Latency(op, ..) => p.latency.get(&op).map_or(0, |l| l.count),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Figure::Throughput => ops(v),
            Figure::Latency(..) => micros(v),
        }
    }
}

/// One figure of one cell: `config` (new) against the base.
#[derive(Debug, Clone)]
pub struct Row {
    pub config: String,
    pub workload: String,
    pub threads: u64,
    pub figure: Figure,
    pub base: f64,
    pub new: f64,
    pub base_repeats: u32,
    pub new_repeats: u32,
    pub comparison: RepeatComparison,
    /// Whether each side ran paced (a target rate): when only one did,
    /// latency is compared from the actual start, which both have.
    pub base_paced: bool,
    pub new_paced: bool,
    /// Successful operations of the figure's type over each side's
    /// repeats (0 for throughput): how many a percentile is of.
    pub base_operations: u64,
    pub new_operations: u64,
}

impl Row {
    pub fn verdict(&self) -> Verdict {
        self.comparison.verdict(self.figure.better())
    }

    /// "Workload C at 4 threads, ops/s: -20% [-22%, -18%]".
    fn describe(&self) -> String {
        format!(
            "{} at {} threads, {}{}: {}",
            self.workload,
            self.threads,
            self.figure.name(),
            if self.config.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.config)
            },
            change_text(&self.comparison)
        )
    }
}

/// Every comparable figure of every cell the base and another
/// configuration share (steps that stopped early left out), in order:
/// configuration, workload, threads, figure.
pub fn rows(study: &Study) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in 1..study.series.len() {
        for w in &study.workloads {
            let mut figures = vec![Figure::Throughput];
            if let Some(op) = w.latency_op {
                figures.push(Figure::Latency(op, Percentile::P99, w.latency_start));
                figures.push(Figure::Latency(op, Percentile::P999, w.latency_start));
            }
            for (t, base) in &w.points[0] {
                let Some(new) = w.points[b].get(t) else {
                    continue;
                };
                for figure in &figures {
                    let comparison = match figure {
                        Figure::Throughput => model::throughput_repeats(new, base),
                        // Like with like only: both sides of the figure's kind.
                        Figure::Latency(op, p, start)
                            if base.latency_start == *start && new.latency_start == *start =>
                        {
                            model::tail_repeats(new, base, *op, *p)
                        }
                        Figure::Latency(..) => None,
                    };
                    let (Some(comparison), Some(bv), Some(nv)) =
                        (comparison, figure.of(base), figure.of(new))
                    else {
                        continue;
                    };
                    rows.push(Row {
                        config: study.series[b].clone(),
                        workload: w.name.clone(),
                        threads: *t,
                        figure: *figure,
                        base: bv,
                        new: nv,
                        base_repeats: base.repeats,
                        new_repeats: new.repeats,
                        comparison,
                        base_paced: base.paced,
                        new_paced: new.paced,
                        base_operations: figure.operations(base),
                        new_operations: figure.operations(new),
                    });
                }
            }
        }
    }
    rows
}

/// The regression gate: what it found.
#[derive(Debug)]
pub struct Gate<'a> {
    pub limit_pct: f64,
    /// Slower by more than the limit, with confidence.
    pub regressions: Vec<&'a Row>,
    /// Cells with too few repeats to judge.
    pub undecided: usize,
    pub judged: usize,
}

pub fn gate(rows: &[Row], limit_pct: f64) -> Gate<'_> {
    let fraction = limit_pct / 100.0;
    Gate {
        limit_pct,
        regressions: rows
            .iter()
            .filter(|r| r.comparison.worse_by_more_than(r.figure.better(), fraction))
            .collect(),
        undecided: rows
            .iter()
            .filter(|r| r.comparison.interval.is_none())
            .count(),
        judged: rows
            .iter()
            .filter(|r| r.comparison.interval.is_some())
            .count(),
    }
}

impl Gate<'_> {
    pub fn passed(&self) -> bool {
        self.regressions.is_empty()
    }

    /// The gate's word: never "passed" when no figure had the repeats to
    /// be judged (the command then refuses, exit 2).
    pub fn verdict(&self) -> &'static str {
        match (self.passed(), self.judged) {
            (false, _) => "failed",
            (true, 0) => "cannot judge",
            (true, _) => "passed",
        }
    }

    /// One line: the outcome, and which cells failed it.
    pub fn summary(&self) -> String {
        let limit = self.limit_pct;
        let undecided = if self.undecided > 0 {
            format!(
                "; {} not judged (need \u{2265} {MIN_REPEATS} repeats of each cell)",
                self.undecided
            )
        } else {
            String::new()
        };
        if self.judged == 0 {
            format!("no compared figure has at least {MIN_REPEATS} repeats of each cell: nothing judged")
        } else if self.passed() {
            format!(
                "no compared figure is slower by more than {limit}% with 95% confidence ({} judged{undecided})",
                self.judged
            )
        } else {
            format!(
                "{} of {} judged figures slower by more than {limit}% with 95% confidence: {}{undecided}",
                self.regressions.len(),
                self.judged,
                self.regressions
                    .iter()
                    .map(|r| r.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    }
}

/// "-20% [-22%, -18%]", or "+3.0% (1 and 1 repeats)" without an interval.
fn change_text(c: &RepeatComparison) -> String {
    match c.interval {
        Some(i) => {
            let (head, bracket) = format::change_in_one_unit(c.ratio, i.low, i.high);
            format!("{head} {bracket}")
        }
        None => format!(
            "{} ({} and {} repeats)",
            format::change(c.ratio),
            c.candidate_repeats,
            c.baseline_repeats
        ),
    }
}

/// How the verdicts are computed, for the top of `kvperf compare`.
fn method(base: &str) -> String {
    format!(
        "Each configuration against the base, **{base}**, cell by cell: throughput and the \
         primary operation's p99 and p99.9 (the read where the workload has reads). The change \
         is the median of the ratios of every repeat of the cell to every repeat of the base's \
         (whole repeats as the unit; latency from each repeat's own histogram), in brackets its \
         95% confidence interval (exact, from the Mann-Whitney distribution); the verdict is \
         faster or slower (for latency, faster is lower) when the interval leaves out no \
         change, ~ (no difference at 95%) when it holds it, and needs at least {MIN_REPEATS} \
         repeats of each cell. The cells' figures are the mean throughput of the repeats and \
         the percentile of their histograms added together. Latency is compared like with \
         like, and each figure names its kind: from the intended start where both cells ran \
         paced (a target rate), else from the actual start on both sides, which every step \
         records."
    )
}

/// The Markdown blocks: the method, a table per other configuration, and
/// the gate's outcome when there is one.
pub fn blocks(study: &Study, rows: &[Row], gate: Option<&Gate>) -> Vec<Block> {
    let base = &study.series[0];
    let mut blocks = vec![
        Block::Heading(1, "Verdicts, with 95% confidence".into()),
        Block::Paragraph(method(base)),
    ];
    for new in &study.series[1..] {
        blocks.push(Block::Heading(2, format!("{new} against {base}")));
        let header = [
            "Workload",
            "#Threads",
            "figure",
            base.as_str(),
            new.as_str(),
            "change [95% CI]",
            "verdict",
        ]
        .map(String::from)
        .to_vec();
        let table_rows: Vec<Vec<String>> = rows
            .iter()
            .filter(|r| &r.config == new)
            .map(|r| {
                // Throughput with its repeats; a percentile marked when
                // its operations are too few for it.
                let shown = |v: f64, n: u32, ops: u64| match r.figure {
                    Figure::Throughput => format!("{} ({n}x)", r.figure.show(v)),
                    Figure::Latency(_, p, _) => format::percentile(v, ops, p.fraction()),
                };
                vec![
                    r.workload.clone(),
                    r.threads.to_string(),
                    r.figure.name(),
                    shown(r.base, r.base_repeats, r.base_operations),
                    shown(r.new, r.new_repeats, r.new_operations),
                    change_text(&r.comparison),
                    match r.verdict() {
                        Verdict::Faster | Verdict::Slower => format!("**{}**", r.verdict().word()),
                        v => v.word(),
                    },
                ]
            })
            .collect();
        if table_rows.is_empty() {
            blocks.push(Block::Paragraph(
                "No cell in common (same workload and thread count) to compare.".into(),
            ));
        } else {
            blocks.push(Block::Table(Table {
                header,
                rows: table_rows,
            }));
        }
    }
    if let Some(g) = gate {
        blocks.push(Block::Paragraph(format!(
            "**Gate --fail-if-slower {}%: {}.** {}.",
            g.limit_pct,
            g.verdict(),
            capitalized(&g.summary())
        )));
    }
    blocks
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The same for machines: `kvperf compare --format json`.
pub fn json(study: &Study, rows: &[Row], gate: Option<&Gate>) -> Value {
    let row = |r: &Row| {
        // A percentile says how many operations it is of, and whether
        // they are too few for it (docs/semantics.md, nearest rank).
        let side = |value: f64, repeats: u32, operations: u64| match r.figure {
            Figure::Throughput => json!({ "value": value, "repeats": repeats }),
            Figure::Latency(_, p, _) => json!({
                "value": value,
                "repeats": repeats,
                "operations": operations,
                "too_few_operations": few_samples::too_few(operations, p.fraction()),
            }),
        };
        json!({
            "config": r.config,
            "workload": r.workload,
            "threads": r.threads,
            "figure": r.figure.name(),
            "latency_from": match r.figure {
                Figure::Latency(_, _, start) => Some(start.name()),
                Figure::Throughput => None,
            },
            "paced": { "base": r.base_paced, "new": r.new_paced },
            "better": match r.figure.better() { Better::Higher => "higher", Better::Lower => "lower" },
            "base": side(r.base, r.base_repeats, r.base_operations),
            "new": side(r.new, r.new_repeats, r.new_operations),
            "ratio": r.comparison.ratio,
            "interval": r.comparison.interval,
            "verdict": r.verdict(),
        })
    };
    json!({
        "kvperf_compare": 1,
        "base": study.series[0],
        "configs": study.series[1..],
        "confidence": CONFIDENCE,
        "min_repeats": MIN_REPEATS,
        "comparisons": rows.iter().map(row).collect::<Vec<_>>(),
        "gate": gate.map(|g| json!({
            "fail_if_slower_pct": g.limit_pct,
            "passed": g.verdict() == "passed",
            "verdict": g.verdict(),
            "judged": g.judged,
            "undecided": g.undecided,
            "regressions": g.regressions.iter().map(|r| row(r)).collect::<Vec<_>>(),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing;
    use crate::results::Record;

    fn cell(config: &str, repeat: u32, ops_per_sec: f64, read_us: u64) -> (String, Record) {
        let mut r = testing::record(
            config,
            "c",
            4,
            ops_per_sec,
            OpKind::Read,
            &vec![read_us * 1000; 100],
        );
        r.step.repeat = repeat;
        r.step.id = format!("{config}/c-t4-r{repeat}");
        (config.to_string(), r)
    }

    fn study(new_factor: f64, repeats: u32) -> Study {
        let mut records = Vec::new();
        for i in 0..repeats {
            let noise = 1.0 + 0.01 * (i as f64 - 2.0);
            records.push(cell("base", i + 1, 100_000.0 * noise, 100));
            records.push(cell(
                "new",
                i + 1,
                100_000.0 * new_factor * noise,
                (100.0 / new_factor) as u64,
            ));
        }
        model::from_records(&records)
    }

    #[test]
    fn a_slower_candidate_fails_the_gate_and_a_same_one_passes() {
        let s = study(0.8, 5);
        let rows = rows(&s);
        assert_eq!(rows.len(), 3, "throughput, p99, p99.9");
        assert_eq!(rows[0].verdict(), Verdict::Slower);
        assert_eq!(rows[1].verdict(), Verdict::Slower, "{:?}", rows[1]);
        let g = gate(&rows, 5.0);
        assert!(!g.passed());
        assert!(
            g.summary()
                .starts_with("3 of 3 judged figures slower by more than 5% with 95% confidence: Workload C at 4 threads, ops/s (new): -20% ["),
            "{}",
            g.summary()
        );
        let same = study(1.0, 5);
        let rows = rows_of(&same);
        assert!(rows.iter().all(|r| r.verdict() == Verdict::NoDifference));
        assert!(gate(&rows, 5.0).passed());
        let md = crate::report::Document {
            title: "t".into(),
            blocks: blocks(&same, &rows, Some(&gate(&rows, 5.0))),
        }
        .to_markdown();
        assert!(
            md.contains("| Workload C | 4 | ops/s | 100,000 (5x) | 100,000 (5x) | 0.0% ["),
            "{md}"
        );
        assert!(
            md.contains("**Gate --fail-if-slower 5%: passed.** No compared figure"),
            "{md}"
        );
    }

    fn rows_of(s: &Study) -> Vec<Row> {
        rows(s)
    }

    #[test]
    fn too_few_repeats_are_not_judged_by_the_gate() {
        let s = study(0.5, 3);
        let rows = rows(&s);
        assert!(rows.iter().all(|r| r.verdict() == Verdict::NeedRepeats));
        let g = gate(&rows, 5.0);
        assert!(g.passed());
        assert_eq!((g.judged, g.undecided), (0, 3));
        let v = json(&s, &rows, Some(&g));
        assert_eq!(v["comparisons"][0]["verdict"], "need_repeats");
        assert_eq!(v["comparisons"][0]["interval"], Value::Null);
        assert_eq!(v["gate"]["undecided"], 3);
    }
}
