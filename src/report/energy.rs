//! Seed 002's power-efficiency and endurance figures beside the cost
//! table: operations per joule (the briefs' "operations per watt", ops/s
//! over watts, is the same number) with the meter, its period and the
//! share of the window it covered; drive bytes written per operation, the
//! drive's own and the end-to-end write amplification, and drive writes
//! per day. Shown only where a result has them, so reports of results
//! without a power meter or an NVMe drive are unchanged.

use super::document::Table;
use super::model::{Study, WorkloadView};
use super::numbers::ops;
use super::tables::UNRELIABLE;
use crate::measure::accounting::Accounting;

/// Whether any result of the study has a meter's power or a drive's writes.
pub fn measured(study: &Study) -> bool {
    study
        .workloads
        .iter()
        .flat_map(|w| w.points.iter().flat_map(|p| p.values()))
        .filter_map(|p| p.accounting.as_ref())
        .any(|a| a.power.is_some() || a.drive.is_some())
}

/// The figures at each configuration's peak, or None when no result of
/// this workload has them.
pub fn table(study: &Study, w: &WorkloadView) -> Option<Table> {
    let any = w
        .points
        .iter()
        .flat_map(|p| p.values())
        .filter_map(|p| p.accounting.as_ref())
        .any(|a| a.power.is_some() || a.drive.is_some());
    if !any {
        return None;
    }
    let header = [
        "Config",
        "#Threads",
        "ops/s",
        "power meter (period)",
        "covered",
        "avg W",
        "peak W",
        "ops per joule (= ops/s per W)",
        "ops per joule above idle",
        "drive write B/op",
        "drive WA (flash / host)",
        "end-to-end WA (flash / logical)",
        "drive writes per day",
        "years to the drive's endurance estimate",
    ]
    .map(String::from)
    .to_vec();
    let rows = super::tables::rows_at_peaks(study, w, |p| cells(p.accounting.as_ref()));
    Some(Table { header, rows })
}

/// Why the table says "unavailable": each distinct reason the results give
/// for a power or drive figure (`accounting.unavailable`), with the
/// configurations it applies to; None when every figure was measured.
pub fn unavailable_note(study: &Study, w: &WorkloadView) -> Option<String> {
    let mut reasons: Vec<(String, Vec<&str>)> = Vec::new();
    for (series, points) in study.series.iter().zip(&w.points) {
        let accountings = points.values().filter_map(|p| p.accounting.as_ref());
        for why in accountings.flat_map(|a| &a.unavailable) {
            if !(why.starts_with("drive writes") || why.starts_with("power: ")) {
                continue;
            }
            let why = why.replacen("power: ", "power ", 1);
            match reasons.iter_mut().find(|(w, _)| *w == why) {
                Some((_, names)) if !names.contains(&series.as_str()) => names.push(series),
                Some(_) => {}
                None => reasons.push((why, vec![series.as_str()])),
            }
        }
    }
    if reasons.is_empty() {
        return None;
    }
    let listed: Vec<String> = reasons
        .iter()
        .map(|(why, names)| format!("{why} ({})", names.join(", ")))
        .collect();
    Some(format!("Unavailable: {}.", listed.join("; ")))
}

/// The table's figures of one window: "unavailable" where not measured,
/// "incomplete" where the meter missed part of the window.
fn cells(a: Option<&Accounting>) -> Vec<String> {
    let Some(a) = a else {
        return vec!["unavailable".to_string(); 11];
    };
    let d = &a.derived;
    let na = || "unavailable".to_string();
    let watts = |v: Option<f64>| v.map_or_else(na, |w| format!("{w:.1}"));
    let ratio = |v: Option<f64>| v.map_or_else(na, |x| format!("{x:.2}"));
    let mut row = match &a.power {
        Some(p) => vec![
            format!("{} ({} ms)", p.meter, p.interval_ms),
            format!("{:.1}%", p.coverage * 100.0),
            watts(p.average_watts),
            watts(p.peak_watts),
            match p.incomplete {
                Some(_) => "incomplete".to_string(),
                None => d.ops_per_joule.map_or_else(na, ops),
            },
            match p.idle {
                None => "-".to_string(),
                Some(_) => d.ops_per_joule_above_idle.map_or_else(na, ops),
            },
        ],
        None => vec![
            na(),
            "-".into(),
            na(),
            na(),
            d.ops_per_joule.map_or_else(na, ops),
            "-".into(),
        ],
    };
    match &a.drive {
        Some(_) => row.extend([
            d.drive_write_bytes_per_op.map_or_else(na, ops),
            ratio(d.drive_write_amplification),
            match d.end_to_end_write_amplification_unreliable {
                true => UNRELIABLE.to_string(),
                false => ratio(d.end_to_end_write_amplification),
            },
            d.drive_writes_per_day
                .map_or_else(na, |x| format!("{x:.3}")),
            d.years_to_endurance_estimate
                .map_or_else(na, |x| format!("{x:.1}")),
        ]),
        None => row.extend(std::iter::repeat_n(na(), 5)),
    }
    row
}

/// The CSV's extra columns, appended where [`measured`].
pub const CSV_HEADER: &str = ",power_meter,power_interval_ms,power_coverage,average_watts,\
peak_watts,joules,joules_above_idle,ops_per_joule_above_idle,drive_host_bytes_written,\
drive_media_bytes_written,drive_write_bytes_per_op,drive_write_amplification,\
end_to_end_write_amplification,drive_writes_per_day,years_to_endurance_estimate";

/// One row's extra cells (leading comma included); empty where not measured.
pub fn csv_cells(a: Option<&Accounting>) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    let int = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    let d = a.map(|a| a.derived).unwrap_or_default();
    let power = a.and_then(|a| a.power.as_ref());
    let drive = a.and_then(|a| a.drive.as_ref());
    let cells = [
        power.map_or(String::new(), |p| super::numbers::csv_field(&p.meter)),
        int(power.map(|p| p.interval_ms)),
        opt(power.map(|p| p.coverage)),
        opt(power.and_then(|p| p.average_watts)),
        opt(power.and_then(|p| p.peak_watts)),
        opt(power.and_then(|p| p.joules)),
        opt(power.and_then(|p| p.joules_above_idle)),
        opt(d.ops_per_joule_above_idle),
        int(drive.map(|d| d.host_bytes_written)),
        int(drive.and_then(|d| d.media_bytes_written)),
        opt(d.drive_write_bytes_per_op),
        opt(d.drive_write_amplification),
        match d.end_to_end_write_amplification_unreliable {
            true => UNRELIABLE.to_string(),
            false => opt(d.end_to_end_write_amplification),
        },
        opt(d.drive_writes_per_day),
        opt(d.years_to_endurance_estimate),
    ];
    format!(",{}", cells.join(","))
}
