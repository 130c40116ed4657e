//! `kvperf fit`: a YCSB workload file that describes a trace: the
//! operation mix, the key popularity (the candidate distribution with the
//! smallest KS distance, a simpler one winning within [`SIMPLER_WINS`]),
//! field counts and value sizes, scan lengths and the offered rate.
//! What it cannot describe (correlations between keys, mixes that change
//! over time) docs/traces.md lists.

pub mod popularity;

use std::collections::HashMap;
use std::fmt::Write;

use popularity::Candidate;

use crate::trace::{Header, OpType, TraceOp};

/// A candidate with more parameters must beat a simpler one (earlier in
/// the list) by more than this KS distance to be chosen.
pub const SIMPLER_WINS: f64 = 0.01;

/// What a fit found.
#[derive(Debug, Clone)]
pub struct Fit {
    pub operations: u64,
    /// Share of each YCSB operation (sums to 1), in YCSB's order.
    pub mix: Vec<(OpType, f64)>,
    pub deletes: u64,
    pub records: u64,
    pub candidates: Vec<Candidate>,
    /// Index of the chosen candidate.
    pub chosen: usize,
    pub field_count: u64,
    /// Value sizes written: min, max, and whether all are equal.
    pub value_sizes: Option<(u32, u32)>,
    pub scan_lengths: Option<(u32, u32)>,
    pub read_all_fields: bool,
    /// Operations per second over the trace's span of intended starts.
    pub rate: f64,
    pub paced: bool,
}

/// The kinds YCSB's core workload has, in its property order.
const YCSB_OPS: [(OpType, &str); 5] = [
    (OpType::Read, "readproportion"),
    (OpType::Update, "updateproportion"),
    (OpType::Insert, "insertproportion"),
    (OpType::Scan, "scanproportion"),
    (OpType::ReadModifyWrite, "readmodifywriteproportion"),
];

/// Fits `ops` (any order); `header` says how many records a kvperf
/// capture's store held (`recordcount`), which the keys alone may not.
pub fn fit(header: &Header, ops: &[TraceOp]) -> Fit {
    let mut per_kind: HashMap<OpType, u64> = HashMap::new();
    let mut accesses: HashMap<&[u8], u64> = HashMap::new();
    let mut inserted: HashMap<&[u8], ()> = HashMap::new();
    let (mut sizes, mut scans, mut fields) = (None::<(u32, u32)>, None::<(u32, u32)>, 0u64);
    let (mut all_reads, mut some_reads) = (0u64, 0u64);
    for op in ops {
        *per_kind.entry(op.op).or_default() += 1;
        if op.op == OpType::Insert {
            inserted.insert(&op.key, ());
            fields = fields.max(op.value_sizes.len() as u64);
        } else {
            *accesses.entry(&op.key).or_default() += 1;
        }
        for &s in &op.value_sizes {
            sizes = Some(sizes.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))));
        }
        if op.op == OpType::Scan {
            let s = op.scan_length;
            scans = Some(scans.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))));
        }
        if op.op.reads() {
            if op.read_fields == 0 {
                all_reads += 1;
            } else {
                some_reads += 1;
            }
        }
    }
    let ycsb_total: u64 = YCSB_OPS
        .iter()
        .map(|(k, _)| per_kind.get(k).copied().unwrap_or(0))
        .sum();
    let mix = YCSB_OPS
        .iter()
        .map(|(k, _)| {
            let n = per_kind.get(k).copied().unwrap_or(0);
            (
                *k,
                if ycsb_total > 0 {
                    n as f64 / ycsb_total as f64
                } else {
                    0.0
                },
            )
        })
        .collect();
    let settings = |name: &str| {
        header
            .settings
            .get(name)
            .and_then(|v| v.parse::<u64>().ok())
    };
    let preloaded = accesses
        .keys()
        .filter(|k| !inserted.contains_key(*k))
        .count() as u64;
    let records = preloaded.max(settings("recordcount").unwrap_or(0)).max(1);
    let field_count = settings("fieldcount").unwrap_or(fields.max(1));
    let counts = popularity::rank_counts(accesses.into_values().collect(), records as usize);
    let candidates = if counts.iter().sum::<u64>() == 0 {
        Vec::new()
    } else {
        vec![
            popularity::uniform(&counts),
            popularity::zipfian(&counts),
            popularity::plain_zipfian(&counts),
            popularity::hotspot(&counts),
            popularity::exponential(&counts),
        ]
    };
    let chosen = choose(&candidates);
    let (first, last) = ops.iter().fold((u64::MAX, 0), |(lo, hi), op| {
        (lo.min(op.intended_ns), hi.max(op.intended_ns))
    });
    let span_s = last.saturating_sub(first) as f64 / 1e9;
    Fit {
        operations: ops.len() as u64,
        mix,
        deletes: per_kind.get(&OpType::Delete).copied().unwrap_or(0),
        records,
        candidates,
        chosen,
        field_count,
        value_sizes: sizes,
        scan_lengths: scans,
        read_all_fields: all_reads >= some_reads,
        rate: if span_s > 0.0 {
            ops.len() as f64 / span_s
        } else {
            0.0
        },
        paced: header.paced,
    }
}

/// The candidate with the smallest KS distance, unless an earlier
/// (simpler) one is within [`SIMPLER_WINS`] of it.
fn choose(candidates: &[Candidate]) -> usize {
    let judged = || {
        candidates
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.ks.map(|k| (i, k)))
    };
    let Some((_, best)) = judged().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return 0;
    };
    judged()
        .find(|(_, k)| *k <= best + SIMPLER_WINS)
        .map_or(0, |(i, _)| i)
}

impl Fit {
    /// The candidates, one line each, the chosen one marked.
    pub fn table(&self) -> String {
        let mut s = String::from("candidate     KS distance  fit\n");
        for (i, c) in self.candidates.iter().enumerate() {
            let ks = c.ks.map_or("-".to_string(), |k| format!("{k:.4}"));
            let mark = if i == self.chosen { "  <- chosen" } else { "" };
            let _ = writeln!(s, "{:<13} {ks:<12} {}{mark}", c.name, c.note);
        }
        s
    }

    /// The YCSB workload file (Java properties).
    pub fn workload_file(&self, source: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Fitted by kvperf fit from {source} ({} operations).",
            self.operations
        );
        let _ = writeln!(
            s,
            "# Key popularity, KS distance of the key-rank CDF per candidate:"
        );
        for line in self.table().lines() {
            let _ = writeln!(s, "#   {line}");
        }
        if self.deletes > 0 {
            let _ = writeln!(
                s,
                "# {} deletes are left out: YCSB's core workload has none.",
                self.deletes
            );
        }
        s.push_str("workload=site.ycsb.workloads.CoreWorkload\n");
        let _ = writeln!(s, "recordcount={}", self.records);
        let _ = writeln!(s, "operationcount={}", self.operations - self.deletes);
        for ((_, share), (_, name)) in self.mix.iter().zip(YCSB_OPS) {
            let _ = writeln!(s, "{name}={share:.4}");
        }
        if let Some(c) = self.candidates.get(self.chosen) {
            let _ = writeln!(s, "requestdistribution={}", c.name);
            for (k, v) in &c.properties {
                let _ = writeln!(s, "{k}={v}");
            }
        }
        let _ = writeln!(s, "fieldcount={}", self.field_count);
        match self.value_sizes {
            Some((lo, hi)) if lo == hi => {
                let _ = writeln!(s, "fieldlength={hi}");
            }
            Some((lo, hi)) => {
                let _ = writeln!(
                    s,
                    "fieldlengthdistribution=uniform\nminfieldlength={lo}\nfieldlength={hi}"
                );
            }
            None => {}
        }
        let _ = writeln!(s, "readallfields={}", self.read_all_fields);
        if let Some((lo, hi)) = self.scan_lengths {
            let _ = writeln!(
                s,
                "scanlengthdistribution=uniform\nminscanlength={}\nmaxscanlength={}",
                lo.max(1),
                hi.max(1)
            );
        }
        if self.paced {
            let _ = writeln!(s, "# The trace's offered rate (its intended starts).");
            let _ = writeln!(s, "target={}", self.rate.round() as u64);
        } else if self.rate > 0.0 {
            let _ = writeln!(
                s,
                "# The trace was not paced: {:.0} ops/s is the rate it achieved, not one it was offered.",
                self.rate
            );
        }
        s
    }
}
