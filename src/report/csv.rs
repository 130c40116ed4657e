//! The report as CSV: one row per (config, workload, threads, operation
//! type), every figure, so a spreadsheet can recompute anything.

use super::model::Study;

const HEADER: &str = "config,workload,threads,repeats,ops_per_sec,ops_min,ops_median,ops_max,\
op,count,avg_us,p50_us,p99_us,p999_us,max_us,\
device_read_bytes_per_op,device_write_bytes_per_op,read_amplification,write_amplification,\
space_amplification,device_busy_pct,device_queue_depth,cpu_us_per_op,ops_per_cpu_s,\
network_sent_bytes_per_op,network_received_bytes_per_op,server_cpu_us_per_op,ops_per_joule,bound\n";

pub fn csv(study: &Study) -> String {
    let mut out = String::from(HEADER);
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for w in &study.workloads {
        for (name, points) in study.series.iter().zip(&w.points) {
            for p in points.values() {
                let d = p.accounting.as_ref().map(|a| a.derived).unwrap_or_default();
                let cell = format!(
                    "{},{},{},{},{:.1},{:.1},{:.1},{:.1}",
                    field(name),
                    field(&w.name),
                    p.threads,
                    p.repeats,
                    p.ops_per_sec,
                    p.min(),
                    p.median(),
                    p.max()
                );
                let cost = [
                    d.device_read_bytes_per_op,
                    d.device_write_bytes_per_op,
                    d.read_amplification,
                    d.write_amplification,
                    d.space_amplification,
                    d.device_busy_pct,
                    d.device_queue_depth,
                    d.cpu_s_per_op.map(|x| x * 1e6),
                    d.ops_per_cpu_s,
                    d.network_sent_bytes_per_op,
                    d.network_received_bytes_per_op,
                    d.server_cpu_s_per_op.map(|x| x * 1e6),
                    d.ops_per_joule,
                ]
                .map(opt)
                .join(",");
                let bound = field(&p.verdicts.join(" / "));
                let mut lines: Vec<String> = p
                    .latency
                    .iter()
                    .map(|(op, l)| {
                        format!(
                            "{cell},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{cost},{bound}\n",
                            op.name(),
                            l.count,
                            l.avg_us,
                            l.p50_us,
                            l.p99_us,
                            l.p999_us,
                            l.max_us
                        )
                    })
                    .collect();
                if lines.is_empty() {
                    lines.push(format!("{cell},,,,,,,,{cost},{bound}\n"));
                }
                out.extend(lines);
            }
        }
    }
    out
}

fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
