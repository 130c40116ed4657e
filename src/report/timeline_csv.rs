//! Every step's timeline as CSV (`kvperf report --timeline FILE`): one row
//! per (config, workload, threads, repeat, interval, operation type), so a
//! spreadsheet or a plotting script can draw any step over time.

use super::model::Study;
use crate::files::Written;

const HEADER: &str = "config,workload,threads,repeat,start_s,length_s,op,operations,failed,\
ops_per_sec,p50_us,p99_us,p999_us,max_us,percentiles\n";

/// How kvperf recognises a timeline CSV it wrote, before replacing one.
pub const WRITTEN: Written = Written {
    what: "kvperf timeline CSV",
    // The whole header line, every column: never a prefix a user may type.
    recognizes: |head| crate::files::signature::line(head, 0) == Some(HEADER.trim_end()),
    extension: "csv",
};

pub fn csv(study: &Study) -> String {
    let mut out = String::from(HEADER);
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for w in &study.workloads {
        for (name, points) in study.series.iter().zip(&w.points) {
            for p in points.values() {
                for (repeat, timeline) in p.timelines.iter().enumerate() {
                    let Some(t) = timeline else {
                        continue;
                    };
                    let basis = serde_json::to_value(t.percentiles)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    for i in &t.intervals {
                        for (op, figures) in &i.ops {
                            out.push_str(&format!(
                                "{},{},{},{},{:.3},{:.3},{},{},{},{:.1},{},{},{},{},{}\n",
                                super::numbers::csv_field(name),
                                super::numbers::csv_field(&w.name),
                                p.threads,
                                repeat + 1,
                                i.start_s,
                                i.length_s,
                                op.name(),
                                figures.operations,
                                figures.failed,
                                figures.operations as f64 / i.length_s.max(1e-9),
                                opt(figures.p50_us),
                                opt(figures.p99_us),
                                opt(figures.p999_us),
                                opt(figures.max_us),
                                basis
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}
