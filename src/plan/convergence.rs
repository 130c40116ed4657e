//! Adaptive repeats (`repeats = { min, max, until }`): whether a cell needs
//! its next repeat, from the throughput of the repeats it has (this run's
//! and those a rerun finds in the results file, so a resumed plan decides
//! as the first run would), and which cells reached `max` unsettled.

use std::collections::BTreeMap;

use super::expand::Step;
use crate::measure::spread::{self, MedianInterval};
use crate::results::Record;

pub struct Convergence {
    /// Throughput of every finished step, by step id (the latest success).
    throughput: BTreeMap<String, f64>,
    /// Cells that ran `max` repeats without meeting their rule, described.
    unsettled: Vec<String>,
}

impl Convergence {
    pub fn from_records(records: &[Record]) -> Self {
        let mut c = Self {
            throughput: BTreeMap::new(),
            unsettled: Vec::new(),
        };
        for r in records {
            c.note(r);
        }
        c
    }

    fn note(&mut self, record: &Record) {
        if record.output.error.is_some() {
            return;
        }
        if let Some(m) = record.measured() {
            self.throughput
                .insert(record.step.id.clone(), m.ops_per_sec);
        }
    }

    /// Why `step` need not run: its cell's earlier repeats (at least `min`)
    /// already have a median interval within the rule. None: run it.
    pub fn enough_before(&self, steps: &[Step], step: &Step) -> Option<String> {
        let until = step.until?;
        if step.repeat <= until.min {
            return None;
        }
        let earlier = self.cell(steps, step, |repeat| repeat < step.repeat);
        let interval = spread::median_interval(&earlier)?;
        (interval.half_width() <= until.half_width).then(|| {
            format!(
                "the cell's throughput is settled: {} over {} repeats, within the plan's ±{}",
                describe(&interval),
                earlier.len(),
                percent(until.half_width)
            )
        })
    }

    /// Records `record` of `step`; when it was the cell's last allowed
    /// repeat and the rule is still unmet, says so (and remembers it).
    pub fn add(&mut self, steps: &[Step], step: &Step, record: &Record) -> Option<String> {
        self.note(record);
        let until = step.until?;
        if step.repeat != until.max {
            return None;
        }
        let all = self.cell(steps, step, |repeat| repeat <= step.repeat);
        let interval = spread::median_interval(&all);
        if interval.is_some_and(|i| i.half_width() <= until.half_width) {
            return None;
        }
        let spread = interval.map_or_else(|| "no interval".to_string(), |i| describe(&i));
        let line = format!(
            "{} (config {}, {} threads): stopped at max = {} repeats without reaching ±{}: {spread}",
            cell_name(step),
            step.config,
            step.threads,
            until.max,
            percent(until.half_width)
        );
        self.unsettled.push(line.clone());
        Some(format!("not settled: {line}"))
    }

    /// At the plan's end: every cell that stopped at `max` unsettled.
    pub fn report_unsettled(&self) {
        if self.unsettled.is_empty() {
            return;
        }
        eprintln!(
            "{} cell(s) stopped at their max repeats without settling (more repeats, a quieter machine, or a wider until):",
            self.unsettled.len()
        );
        for line in &self.unsettled {
            eprintln!("  {line}");
        }
    }

    /// Throughput of `step`'s cell's repeats whose number passes `which`
    /// (the ones finished: skipped or pending repeats have none).
    fn cell(&self, steps: &[Step], step: &Step, which: impl Fn(u32) -> bool) -> Vec<f64> {
        steps
            .iter()
            .filter(|s| same_cell(s, step) && which(s.repeat))
            .filter_map(|s| self.throughput.get(&s.id).copied())
            .collect()
    }
}

/// Repeats of one cell: the same configuration, kind, workload, label,
/// threads and clients.
fn same_cell(a: &Step, b: &Step) -> bool {
    a.config == b.config
        && a.kind == b.kind
        && a.workload == b.workload
        && a.label == b.label
        && a.threads == b.threads
        && a.clients == b.clients
}

fn cell_name(step: &Step) -> String {
    if step.label.is_empty() {
        step.workload.clone()
    } else {
        format!("{}-{}", step.workload, step.label)
    }
}

fn describe(i: &MedianInterval) -> String {
    format!(
        "median {:.0} ops/s, {:.0} to {:.0} at {:.1}% (±{})",
        i.median,
        i.low,
        i.high,
        i.confidence * 100.0,
        percent(i.half_width())
    )
}

/// "5.0%", and small rules readably: "0.001%".
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p >= 0.1 {
        format!("{p:.1}%")
    } else {
        format!("{p:.3}%")
    }
}
