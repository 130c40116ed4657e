//! Status lines in YCSB's format (`-s`, every `status.interval` seconds, on
//! stderr) and a progress bar when stderr is a terminal.
//!
//! `2026-11-23 10:00:10:123 10 sec: 81234 operations; 8123.4 current ops/sec;
//! est completion in 2 minutes [READ: Count=..., Max=..., Min=..., Avg=...,
//! 90=..., 99=..., 99.9=..., 99.99=...]` (YCSB 0.17.0 `StatusThread`): the
//! bracketed figures cover the last interval only.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use std::collections::BTreeSet;

use super::progress::Progress;

use super::{RunSpec, Shared};
use crate::measure::interval_log::IntervalLogs;
use crate::measure::live::LiveFigures;
use crate::measure::timeline::{self, Interval, Timeline};
use crate::measure::{OpHistograms, OpKind};

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
    /// Show the `Intended-<OP>` groups in status lines (YCSB's
    /// `measurement.interval=both`).
    pub intended_groups: bool,
    /// Keep every interval's histograms for HdrHistogram interval logs
    /// (YCSB's `hdrhistogram.fileoutput`).
    pub interval_logs: bool,
    /// The window's figures for `--metrics-addr`, updated at every interval.
    pub live: Option<Arc<LiveFigures>>,
}

/// db_bench's `--report_interval_seconds` file: a `secs_elapsed,interval_qps`
/// header, kvperf's signature as a comment line ([`OPS_LOG_SIGNATURE`]),
/// then one line per interval with the operations done in it.
#[derive(Debug, Clone)]
pub struct OpsLog {
    pub interval: Duration,
    /// Checked before measuring; its directory held from then on.
    pub destination: crate::files::Destination,
}

/// The header db_bench writes.
pub const OPS_LOG_HEADER: &str = "secs_elapsed,interval_qps";
/// The comment line after the header by which kvperf knows its own ops
/// log (db_bench's own file has none, and is never replaced).
pub const OPS_LOG_SIGNATURE: &str = "# kvperf-file/1 bench-report-file";

/// Whether `head` is the start of an ops log kvperf wrote.
pub fn is_ops_log(head: &[u8]) -> bool {
    use crate::files::signature::line;
    line(head, 0) == Some(OPS_LOG_HEADER) && line(head, 1) == Some(OPS_LOG_SIGNATURE)
}

/// How kvperf recognises its ops log before replacing it.
pub const OPS_LOG_WRITTEN: crate::files::Written = crate::files::Written {
    what: "kvperf db_bench report file (secs_elapsed,interval_qps and kvperf's signature)",
    recognizes: is_ops_log,
    extension: "csv",
};

struct OpsLogWriter {
    /// None once it could not be made or written.
    file: Option<std::io::BufWriter<std::fs::File>>,
    destination: crate::files::Destination,
    /// Every line, kept in `kvperf-unsaved-*` when the file failed.
    lines: String,
    /// Why the file failed.
    failed: Option<String>,
    interval: Duration,
    next: Instant,
    last_ops: u64,
}

impl OpsLogWriter {
    /// A new file, created exclusively beside the log's path, then renamed
    /// over it once the path is found to be new or kvperf's own log: never
    /// a truncating open, so a link or a user's file put at the path since
    /// the last benchmark is never written through or replaced.
    /// One that cannot make its file keeps its lines for [`Self::end`].
    fn create(log: &OpsLog, start: Instant) -> Option<Self> {
        let (file, failed) = match new_ops_log(&log.destination) {
            Ok(f) => (Some(std::io::BufWriter::new(f)), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let mut w = Self {
            file,
            destination: log.destination.clone(),
            lines: String::new(),
            failed,
            interval: log.interval,
            next: start + log.interval,
            last_ops: 0,
        };
        w.write(&format!("{OPS_LOG_HEADER}\n{OPS_LOG_SIGNATURE}"));
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
        self.lines.push_str(line);
        self.lines.push('\n');
        let Some(file) = self.file.as_mut() else {
            return;
        };
        // Flushed per line so a crash keeps what was measured.
        if let Err(e) = writeln!(file, "{line}").and_then(|_| file.flush()) {
            self.failed = Some(e.to_string());
            self.file = None;
        }
    }

    /// A log that failed is kept in `kvperf-unsaved-*`, and the command
    /// told ([`lost_ops_log`]): the figures are never only warned about.
    fn end(self) {
        let Some(why) = self.failed else {
            return;
        };
        let shown = format!(
            "cannot write --report_file '{}': {why}",
            self.destination.path().display()
        );
        let near = self.destination.dir();
        let said = match crate::files::keep_unsaved(self.lines.as_bytes(), near, "csv") {
            Ok(kept) => format!("{shown}; its lines are kept in '{}'", kept.display()),
            Err(lost) => format!("{shown}; they could not be kept elsewhere either ({lost})"),
        };
        LOST_OPS_LOG.get_or_init(|| said);
    }
}

/// The first ops log that could not be written, once it was kept.
static LOST_OPS_LOG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why an ops log of this process could not be written, and where its
/// lines are: the command then fails (exit 3) after its other outputs.
pub fn lost_ops_log() -> Option<&'static str> {
    LOST_OPS_LOG.get().map(String::as_str)
}

/// Puts a new, empty ops log in place (see [`OpsLogWriter::create`]), in
/// the directory checked before measuring, in place of what stands at its
/// name only when that is new or kvperf's own log (checked again at every
/// benchmark).
fn new_ops_log(destination: &crate::files::Destination) -> anyhow::Result<std::fs::File> {
    let (tmp, file) = destination.temporary()?;
    if let Err(e) = destination.place_temporary(&tmp) {
        let _ = destination.remove_temporary(&tmp);
        return Err(e);
    }
    Ok(file)
}

const TICK: Duration = Duration::from_millis(100);

/// What the status thread recorded over the measured window.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Each interval's operations, failures and percentiles.
    pub timeline: Timeline,
    /// Each interval's histograms, when [`StatusOptions::interval_logs`].
    pub interval_logs: Option<IntervalLogs>,
    /// The measured window's histograms: every foreground client's
    /// hand-overs added up (the clients keep no totals of their own).
    pub histograms: OpHistograms,
}

/// Starts the thread that prints status lines, draws the progress bar,
/// writes the ops log, counts the operations of each second of the
/// measured window and takes each interval's histograms for the timeline
/// (returned when the run is done).
pub(super) fn spawn<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    opts: &'env StatusOptions,
    shared: &'env Shared,
    spec: &'env RunSpec,
    measure_start: Instant,
) -> ScopedJoinHandle<'scope, Recorded> {
    scope.spawn(move || report_until_done(opts, shared, spec, measure_start))
}

/// Cuts the measured window into timeline intervals: every
/// [`timeline::INTERVAL`] from the window's open, the histograms the
/// clients handed over since the last cut become one interval.
struct Intervals {
    measure_start: Instant,
    /// Start of the interval being gathered.
    opened: Instant,
    next_cut: Instant,
    gathered: OpHistograms,
    timeline: Timeline,
    logs: Option<IntervalLogs>,
    live: Option<Arc<LiveFigures>>,
}

impl Intervals {
    fn new(measure_start: Instant, logs: bool, live: Option<Arc<LiveFigures>>) -> Self {
        Self {
            measure_start,
            opened: measure_start,
            next_cut: measure_start + timeline::INTERVAL,
            gathered: OpHistograms::new(),
            timeline: Timeline {
                interval_s: timeline::INTERVAL.as_secs_f64(),
                ..Timeline::default()
            },
            logs: logs.then(IntervalLogs::new),
            live,
        }
    }

    fn due(&self, now: Instant) -> bool {
        now >= self.next_cut
    }

    fn gather(&mut self, handed_over: &OpHistograms) {
        self.gathered.add(handed_over);
    }

    /// Ends the interval being gathered at `now` (before the window
    /// opens, a warmup's histograms are empty and nothing is cut).
    fn cut(&mut self, now: Instant) {
        if now <= self.measure_start {
            return;
        }
        let start_s = self.opened.duration_since(self.measure_start).as_secs_f64();
        let length_s = now.duration_since(self.opened).as_secs_f64();
        let interval = Interval::of(&self.gathered, start_s, length_s);
        if let Some(live) = &self.live {
            live.update(&interval, &self.gathered);
        }
        self.timeline.intervals.push(interval);
        if let Some(logs) = self.logs.as_mut() {
            logs.add(&self.gathered, start_s, length_s);
        }
        self.gathered.clear();
        self.opened = now;
        while self.next_cut <= now {
            self.next_cut += timeline::INTERVAL;
        }
    }
}

fn report_until_done(
    opts: &StatusOptions,
    shared: &Shared,
    spec: &RunSpec,
    measure_start: Instant,
) -> Recorded {
    let start = *shared.start.get().expect("set before status starts");
    let bar = opts
        .progress
        .then(|| Progress::new(spec.operations, spec.max_execution));
    // YCSB prints its first status line at once.
    let mut next_line = opts.interval.map(|_| start);
    let mut seen = SeenGroups::default();
    let mut last_ops = 0;
    let mut last_time = start;
    let mut intervals = Intervals::new(measure_start, opts.interval_logs, opts.live.clone());
    // Status lines cover what was handed over since the last one.
    let mut since_status = OpHistograms::new();
    let mut ops_log = opts
        .ops_log
        .as_ref()
        .and_then(|log| OpsLogWriter::create(log, start));
    loop {
        let finished = shared.all_done.load(Relaxed);
        let ops = total_ops(shared);
        let now = Instant::now();
        if let Some(log) = ops_log.as_mut() {
            log.tick(start, now, ops);
        }
        if let Some(bar) = &bar {
            bar.update(ops, now.saturating_duration_since(measure_start));
        }
        let due = next_line.is_some_and(|t| now >= t);
        let line_due = due || (finished && opts.interval.is_some());
        let cut_due = intervals.due(now) || finished;
        if !(line_due || cut_due) {
            // Clients hand their histograms over at every tick, not only
            // at a cut: a client that then gets stuck inside the engine
            // holds at most a tick's operations, which a stall could not
            // keep ([`super::watch_for_stalls`]).
            shared.epoch.fetch_add(1, Relaxed);
        }
        if line_due || cut_due {
            let handed_over = collect_interval(shared);
            intervals.gather(&handed_over);
            if opts.interval.is_some() {
                since_status.add(&handed_over);
            }
            // Shared, so that a stall can keep what was measured.
            super::lock(&shared.window).absorb(handed_over);
            if cut_due {
                intervals.cut(Instant::now());
            }
        }
        if line_due {
            let interval = std::mem::take(&mut since_status);
            seen.note(&interval);
            let line = status_line(
                opts,
                spec,
                start,
                now,
                ops,
                last_ops,
                last_time,
                &seen.summaries(&interval, opts.intended_groups),
            );
            match &bar {
                Some(bar) => bar.bar().println(line),
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
                bar.bar().finish_and_clear();
            }
            if let Some(log) = ops_log {
                log.end();
            }
            return Recorded {
                timeline: intervals.timeline,
                interval_logs: intervals.logs,
                histograms: std::mem::take(&mut *super::lock(&shared.window)),
            };
        }
        std::thread::sleep(TICK);
    }
}

fn total_ops(shared: &Shared) -> u64 {
    shared.slots.iter().map(|s| s.ops_done.load(Relaxed)).sum()
}

/// Asks every worker to hand over its histograms, waits briefly for them
/// (a thread stuck in a slow operation shows up in the next interval), and
/// takes what was handed over. Hand-overs are taken as they come, not
/// after the last one: a client starts new histograms at once, and holding
/// every client's hand-over beside them doubled a 1,024-client run's
/// memory.
fn collect_interval(shared: &Shared) -> OpHistograms {
    let epoch = shared.epoch.fetch_add(1, Relaxed) + 1;
    let give_up = Instant::now() + Duration::from_secs(1);
    let mut merged = OpHistograms::new();
    loop {
        // Read before taking, so the last take has every hand-over it saw.
        let all_in = shared
            .slots
            .iter()
            .all(|s| s.finished.load(Relaxed) || s.published_epoch.load(Relaxed) >= epoch);
        take_handed_over(shared, &mut merged);
        if all_in || Instant::now() >= give_up {
            return merged;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(super) fn take_handed_over(shared: &Shared, merged: &mut OpHistograms) {
    for slot in &shared.slots {
        let mut interval = slot.interval.lock().expect("not poisoned");
        if !interval.is_empty() {
            merged.add_client(&interval);
            interval.clear();
        }
    }
}

/// Groups that have appeared so far: YCSB shows each one in every later
/// status line, with Count=0 for an interval without operations.
#[derive(Default)]
struct SeenGroups {
    ok: BTreeSet<OpKind>,
    failed: BTreeSet<OpKind>,
}

impl SeenGroups {
    fn note(&mut self, interval: &OpHistograms) {
        for (kind, group) in interval.iter() {
            if group.total_returns() > 0 {
                self.ok.insert(kind);
            }
            if !group.failed.is_empty() {
                self.failed.insert(kind);
            }
        }
    }

    /// `[READ: Count=...]` for every group seen, in YCSB's order: the
    /// operation groups, then (with `both`) the intended ones.
    fn summaries(&self, interval: &OpHistograms, intended: bool) -> String {
        let empty = crate::measure::new_histogram();
        let mut text = String::new();
        let mut pass = |intended_pass: bool| {
            let prefix = if intended_pass { "Intended-" } else { "" };
            for &kind in &self.ok {
                let group = interval.get(kind);
                let (main, failed) = match group {
                    Some(g) if intended_pass => (&*g.intended, &*g.intended_failed),
                    Some(g) => (&g.ok, &*g.failed),
                    None => (&empty, &empty),
                };
                let name = kind.ycsb_name();
                text.push_str(&group_summary(&format!("{prefix}{name}"), main));
                if self.failed.contains(&kind) {
                    text.push_str(&group_summary(&format!("{prefix}{name}-FAILED"), failed));
                }
            }
        };
        pass(false);
        if intended {
            pass(true);
        }
        text
    }
}

/// One bracket of a status line, as YCSB's HdrHistogram summary prints it
/// (microseconds; an empty interval shows Java's Long.MAX_VALUE and NaN).
fn group_summary(name: &str, h: &hdrhistogram::Histogram<u64>) -> String {
    if h.is_empty() {
        return format!(
            "[{name}: Count=0, Max=0, Min=9223372036854775807, Avg=NaN, 90=0, 99=0, 99.9=0, 99.99=0] "
        );
    }
    let us = |ns: u64| (ns as f64 / 1000.0).round() as u64;
    format!(
        "[{name}: Count={}, Max={}, Min={}, Avg={}, 90={}, 99={}, 99.9={}, 99.99={}] ",
        h.len(),
        us(h.max()),
        us(h.min()),
        format_java_decimal(h.mean() / 1000.0),
        us(h.value_at_quantile(0.90)),
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us(h.value_at_quantile(0.9999)),
    )
}

#[allow(clippy::too_many_arguments)]
fn status_line(
    opts: &StatusOptions,
    spec: &RunSpec,
    start: Instant,
    now: Instant,
    ops: u64,
    last_ops: u64,
    last_time: Instant,
    groups: &str,
) -> String {
    let elapsed = now.duration_since(start);
    let mut line = format!(
        "{}{} {} sec: {} operations; ",
        opts.label,
        local_timestamp(),
        elapsed.as_secs(),
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
    if let Some(total) = spec.operations {
        if ops < total {
            line.push_str(&format!(
                "est completion in {}",
                format_remaining(remaining_seconds(total - ops, ops, elapsed))
            ));
        }
    }
    line.push_str(groups);
    line
}

/// YCSB's `(long) Math.ceil(todo / throughput)` with the cumulative
/// throughput since the start: NaN (nothing elapsed) is 0, and no progress
/// yet is Long.MAX_VALUE.
fn remaining_seconds(todo: u64, done: u64, elapsed: Duration) -> u64 {
    let ms = elapsed.as_millis() as f64;
    if ms == 0.0 {
        return 0;
    }
    let throughput = done as f64 / ms * 1000.0;
    if throughput == 0.0 {
        return i64::MAX as u64;
    }
    (todo as f64 / throughput).ceil() as u64
}

/// Java `DecimalFormat("#.##")`: at most two decimals, no trailing zeros.
pub fn format_java_decimal(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// YCSB `RemainingFormatter`: "1 day 2 hours", "3 minutes", "42 seconds".
/// Seconds show only when nothing else does, and YCSB's own quirk is kept:
/// it pluralises by the length of the text, so 1-9 seconds read "5 second".
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
        let digits = seconds.to_string();
        let unit = if digits.len() == 1 {
            "second"
        } else {
            "seconds"
        };
        text = format!("{digits} {unit} ");
    }
    text
}

/// Local time as YCSB prints it: `yyyy-MM-dd HH:mm:ss:SSS`; if the local
/// time cannot be had, the line says so instead of printing a made-up one.
fn local_timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into the `tm` we pass; it returns
    // null on failure.
    let (ok, tm) = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = !libc::localtime_r(&secs, &mut tm).is_null();
        (ok, tm)
    };
    if !ok {
        return "(local time unavailable: localtime_r failed)".into();
    }
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
        assert_eq!(format_remaining(0), "0 second ");
        assert_eq!(format_remaining(5), "5 second ");
        assert_eq!(format_remaining(10), "10 seconds ");
        assert_eq!(format_remaining(42), "42 seconds ");
        assert_eq!(format_remaining(119), "1 minute ");
        assert_eq!(format_remaining(172_800), "2 days ");
        assert_eq!(format_remaining(61), "1 minute ");
        assert_eq!(format_remaining(7260), "2 hours 1 minute ");
        assert_eq!(format_remaining(90_000), "1 day 1 hour ");
    }

    #[test]
    fn remaining_time_rounds_up_on_cumulative_throughput() {
        // 10 done in 4 s = 2.5 ops/s; 11 to do: 4.4 s, rounded up.
        assert_eq!(remaining_seconds(11, 10, Duration::from_secs(4)), 5);
        assert_eq!(remaining_seconds(11, 0, Duration::ZERO), 0);
        assert_eq!(
            remaining_seconds(11, 0, Duration::from_secs(1)),
            i64::MAX as u64
        );
        assert_eq!(
            format_remaining(i64::MAX as u64),
            "106751991167300 days 15 hours "
        );
    }

    #[test]
    fn empty_groups_print_like_ycsbs_empty_histogram() {
        let mut seen = SeenGroups::default();
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 2_000, Some(3_000), &Ok(()));
        seen.note(&h);
        assert_eq!(
            seen.summaries(&OpHistograms::new(), false),
            "[READ: Count=0, Max=0, Min=9223372036854775807, Avg=NaN, 90=0, 99=0, 99.9=0, 99.99=0] "
        );
        let both = seen.summaries(&h, true);
        assert!(both.starts_with("[READ: Count=1, Max=2,"), "{both}");
        assert!(both.contains("[Intended-READ: Count=1, Max=3,"), "{both}");
    }

    #[test]
    fn timestamp_shape() {
        let t = local_timestamp();
        assert_eq!(t.len(), "2026-11-23 10:00:10:123".len(), "{t}");
        assert_eq!(&t[4..5], "-");
        assert_eq!(&t[19..20], ":");
    }
}
