//! Every step's measured window, stated: seconds, operations, and whether
//! a time limit or the operation count ended it; a window too short to
//! judge is flagged wherever its throughput is printed.

use super::document::Table;
use super::format::ops;
use super::model::{Point, Study, Window, WorkloadView, MIN_WINDOW_S};

/// The mark on a throughput cell measured in a window under [`MIN_WINDOW_S`].
pub const MARK: &str = "\u{a7}";

/// One sentence on the whole study's windows.
pub fn summary(study: &Study) -> String {
    let points: Vec<&Point> = study
        .workloads
        .iter()
        .flat_map(|w| w.points.iter().flat_map(|p| p.values()))
        .collect();
    let shortest = points
        .iter()
        .flat_map(|p| p.windows.iter().map(|w| w.seconds))
        .fold(f64::INFINITY, f64::min);
    let short = points.iter().filter(|p| p.short_window()).count();
    if short == 0 {
        return format!(
            "**Measured windows**: every one lasted at least {MIN_WINDOW_S:.0} s (the shortest {}); each workload's windows table lists them.",
            seconds(shortest)
        );
    }
    format!(
        "**Measured windows too short to judge in {short} of {} cells** (under {MIN_WINDOW_S:.0} s, the shortest {}; marked {MARK} in the throughput tables): too few one-second intervals to tell a steady rate from warm-up or a stall. Rerun at a larger --scale or a longer duration before quoting them.",
        points.len(),
        seconds(shortest)
    )
}

fn seconds(s: f64) -> String {
    if s.is_finite() {
        format!("{s:.1} s")
    } else {
        "-".into()
    }
}

fn window(w: &Window) -> String {
    let short = if w.seconds < MIN_WINDOW_S {
        format!(" {MARK}")
    } else {
        String::new()
    };
    format!(
        "{}, {} ops, ended by {}{short}",
        seconds(w.seconds),
        ops(w.operations as f64),
        if w.ended_on_time { "time" } else { "count" }
    )
}

/// Rows by thread count: each series' windows (repeats joined by " / ").
pub fn table(study: &Study, w: &WorkloadView, threads: &[u64]) -> Table {
    super::grid::per_series(study, w, threads, |p| {
        p.windows.iter().map(window).collect::<Vec<_>>().join(" / ")
    })
}
