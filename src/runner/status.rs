//! Status lines in YCSB's format (`-s`, every `status.interval` seconds, on
//! stderr) and a progress bar when stderr is a terminal.
//!
//! `2026-11-23 10:00:10:123 10 sec: 81234 operations; 8123.4 current ops/sec;
//! est completion in 2 minutes [READ: Count=..., Max=..., Min=..., Avg=...,
//! 90=..., 99=..., 99.9=..., 99.99=...]` (YCSB 0.17.0 `StatusThread`): the
//! bracketed figures cover the last interval only.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{RunSpec, Shared};
use crate::measure::OpHistograms;

#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    /// Print a status line this often (YCSB `-s`, `status.interval`).
    pub interval: Option<Duration>,
    /// Draw a progress bar (only when stderr is a terminal).
    pub progress: bool,
    /// Prefix of each status line (YCSB `-l`).
    pub label: String,
    /// Operations per interval to a CSV file (db_bench's `--report_file`).
    pub ops_log: Option<OpsLog>,
}

/// db_bench's `--report_interval_seconds` file: a `secs_elapsed,interval_qps`
/// header, then one line per interval with the operations done in it.
#[derive(Debug, Clone)]
pub struct OpsLog {
    pub interval: Duration,
    pub path: PathBuf,
}

struct OpsLogWriter {
    file: std::io::BufWriter<std::fs::File>,
    interval: Duration,
    next: Instant,
    last_ops: u64,
}

impl OpsLogWriter {
    fn create(log: &OpsLog, start: Instant) -> Option<Self> {
        let file = match std::fs::File::create(&log.path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "kvperf: warning: cannot write '{}': {e}",
                    log.path.display()
                );
                return None;
            }
        };
        let mut w = Self {
            file: std::io::BufWriter::new(file),
            interval: log.interval,
            next: start + log.interval,
            last_ops: 0,
        };
        w.write("secs_elapsed,interval_qps");
        Some(w)
    }

    fn tick(&mut self, start: Instant, now: Instant, ops: u64) {
        while now >= self.next {
            let secs = self.next.duration_since(start).as_secs();
            self.write(&format!("{secs},{}", ops - self.last_ops));
            self.last_ops = ops;
            self.next += self.interval;
        }
    }

    fn write(&mut self, line: &str) {
        use std::io::Write;
        // Flushed per line so a crash keeps what was measured.
        let _ = writeln!(self.file, "{line}").and_then(|_| self.file.flush());
    }
}

const TICK: Duration = Duration::from_millis(100);

pub(super) fn spawn<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    opts: &'env StatusOptions,
    shared: &'env Shared,
    spec: &'env RunSpec,
    measure_start: Instant,
) -> Option<ScopedJoinHandle<'scope, ()>> {
    if opts.interval.is_none() && !opts.progress && opts.ops_log.is_none() {
        return None;
    }
    Some(scope.spawn(move || report_until_done(opts, shared, spec, measure_start)))
}

fn report_until_done(
    opts: &StatusOptions,
    shared: &Shared,
    spec: &RunSpec,
    measure_start: Instant,
) {
    let start = *shared.start.get().expect("set before status starts");
    let bar = opts.progress.then(|| progress_bar(spec.operations));
    let mut next_line = opts.interval.map(|i| start + i);
    let mut last_ops = 0;
    let mut last_time = start;
    let mut ops_log = opts
        .ops_log
        .as_ref()
        .and_then(|log| OpsLogWriter::create(log, start));
    loop {
        let finished = shared.all_done.load(Relaxed);
        let ops = total_ops(shared);
        if let Some(log) = ops_log.as_mut() {
            log.tick(start, Instant::now(), ops);
        }
        if let Some(bar) = &bar {
            bar.set_position(ops);
        }
        let now = Instant::now();
        let due = next_line.is_some_and(|t| now >= t);
        if due || (finished && opts.interval.is_some()) {
            let interval = collect_interval(shared);
            let line = status_line(
                opts,
                spec,
                start,
                measure_start,
                now,
                ops,
                last_ops,
                last_time,
                &interval,
            );
            match &bar {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
            last_ops = ops;
            last_time = now;
            if let (Some(t), Some(i)) = (next_line.as_mut(), opts.interval) {
                while *t <= now {
                    *t += i;
                }
            }
        }
        if finished {
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            return;
        }
        std::thread::sleep(TICK);
    }
}

fn total_ops(shared: &Shared) -> u64 {
    shared.slots.iter().map(|s| s.ops_done.load(Relaxed)).sum()
}

/// Asks every worker to hand over its histograms, waits briefly for them
/// (a thread stuck in a slow operation shows up in the next interval), and
/// takes what was handed over.
fn collect_interval(shared: &Shared) -> OpHistograms {
    let epoch = shared.epoch.fetch_add(1, Relaxed) + 1;
    let give_up = Instant::now() + Duration::from_secs(1);
    while Instant::now() < give_up
        && !shared
            .slots
            .iter()
            .all(|s| s.finished.load(Relaxed) || s.published_epoch.load(Relaxed) >= epoch)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut merged = OpHistograms::new();
    for slot in &shared.slots {
        let mut interval = slot.interval.lock().expect("not poisoned");
        merged.add(&interval);
        interval.clear();
    }
    merged
}

#[allow(clippy::too_many_arguments)]
fn status_line(
    opts: &StatusOptions,
    spec: &RunSpec,
    start: Instant,
    measure_start: Instant,
    now: Instant,
    ops: u64,
    last_ops: u64,
    last_time: Instant,
    interval: &OpHistograms,
) -> String {
    let mut line = format!(
        "{}{} {} sec: {} operations; ",
        opts.label,
        local_timestamp(),
        now.duration_since(start).as_secs(),
        ops
    );
    let span = now.duration_since(last_time).as_secs_f64();
    if ops > 0 && span > 0.0 {
        let current = (ops - last_ops) as f64 / span;
        line.push_str(&format!(
            "{} current ops/sec; ",
            format_java_decimal(current)
        ));
    }
    let elapsed = now.saturating_duration_since(measure_start).as_secs_f64();
    if let Some(total) = spec.operations {
        if ops < total && ops > 0 && elapsed > 0.0 {
            let remaining = ((total - ops) as f64 / (ops as f64 / elapsed)) as u64;
            line.push_str(&format!(
                "est completion in {}",
                format_remaining(remaining)
            ));
        }
    }
    for (kind, group) in interval.iter() {
        let h = &group.ok;
        if h.is_empty() {
            continue;
        }
        let us = |ns: u64| (ns as f64 / 1000.0).round() as u64;
        line.push_str(&format!(
            "[{}: Count={}, Max={}, Min={}, Avg={}, 90={}, 99={}, 99.9={}, 99.99={}] ",
            kind.ycsb_name(),
            h.len(),
            us(h.max()),
            us(h.min()),
            format_java_decimal(h.mean() / 1000.0),
            us(h.value_at_quantile(0.90)),
            us(h.value_at_quantile(0.99)),
            us(h.value_at_quantile(0.999)),
            us(h.value_at_quantile(0.9999)),
        ));
    }
    line.trim_end().to_string()
}

/// Java `DecimalFormat("#.##")`: at most two decimals, no trailing zeros.
pub fn format_java_decimal(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// YCSB `RemainingFormatter`: "1 day 2 hours", "3 minutes", "42 seconds".
fn format_remaining(seconds: u64) -> String {
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    let plural = |n: u64, unit: &str| format!("{n} {unit}{} ", if n == 1 { "" } else { "s" });
    let mut text = String::new();
    if days > 0 {
        text.push_str(&plural(days, "day"));
    }
    if hours > 0 {
        text.push_str(&plural(hours, "hour"));
    }
    if days == 0 && minutes > 0 {
        text.push_str(&plural(minutes, "minute"));
    }
    if text.is_empty() {
        text.push_str(&plural(seconds, "second"));
    }
    text
}

/// Local time as YCSB prints it: `yyyy-MM-dd HH:mm:ss:SSS`.
fn local_timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into the `tm` we pass.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}:{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

fn progress_bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} ops ({per_sec}, ETA {eta})",
            )
            .expect("valid template")
            .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{elapsed_precise} {spinner} {human_pos} ops ({per_sec})")
                .expect("valid template"),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_decimal_format() {
        assert_eq!(format_java_decimal(1234.5678), "1234.57");
        assert_eq!(format_java_decimal(10.0), "10");
        assert_eq!(format_java_decimal(0.5), "0.5");
    }

    #[test]
    fn remaining_like_ycsb() {
        assert_eq!(format_remaining(42), "42 seconds ");
        assert_eq!(format_remaining(61), "1 minute ");
        assert_eq!(format_remaining(7260), "2 hours 1 minute ");
        assert_eq!(format_remaining(90_000), "1 day 1 hour ");
    }

    #[test]
    fn timestamp_shape() {
        let t = local_timestamp();
        assert_eq!(t.len(), "2026-11-23 10:00:10:123".len(), "{t}");
        assert_eq!(&t[4..5], "-");
        assert_eq!(&t[19..20], ":");
    }
}
