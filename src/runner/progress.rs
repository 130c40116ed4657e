//! The progress bar on a terminal: by time when a time limit bounds the
//! run (position = seconds of the measured window, of the limit), else by
//! operations; the rate as a whole number of ops/s, no ETA guessed from a
//! count the time limit will cut short.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
    by_time: bool,
}

impl Progress {
    /// A bar for a run of `operations` (None: until the limit) within
    /// `time_limit` (None: none).
    pub fn new(operations: Option<u64>, time_limit: Option<Duration>) -> Self {
        let (bar, by_time) = match (operations, time_limit) {
            (_, Some(limit)) => (
                ProgressBar::new(limit.as_secs().max(1)).with_style(
                    ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} s, {msg}")
                        .expect("valid template")
                        .progress_chars("=> "),
                ),
                true,
            ),
            (Some(n), None) => (
                ProgressBar::new(n).with_style(
                    ProgressStyle::with_template(
                        "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} ops ({msg}, ETA {eta})",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                ),
                false,
            ),
            (None, None) => (
                ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{elapsed_precise} {spinner} {human_pos} ops ({msg})")
                        .expect("valid template"),
                ),
                false,
            ),
        };
        bar.enable_steady_tick(Duration::from_millis(250));
        Self { bar, by_time }
    }

    /// `ops` done after `measured` of the measured window.
    pub fn update(&self, ops: u64, measured: Duration) {
        if self.by_time {
            self.bar.set_position(measured.as_secs());
            self.bar
                .set_message(format!("{ops} ops, {}", rate(ops, measured)));
        } else {
            self.bar.set_position(ops);
            self.bar.set_message(rate(ops, measured));
        }
    }

    pub fn bar(&self) -> &ProgressBar {
        &self.bar
    }
}

/// "12345 ops/s": a whole number, as YCSB's status lines print it.
fn rate(ops: u64, measured: Duration) -> String {
    let s = measured.as_secs_f64();
    if s > 0.0 {
        format!("{:.0} ops/s", ops as f64 / s)
    } else {
        "- ops/s".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_limited_run_counts_seconds_and_rates_are_whole_numbers() {
        let p = Progress::new(Some(100_000_000), Some(Duration::from_secs(4)));
        assert!(p.by_time);
        assert_eq!(
            p.bar.length(),
            Some(4),
            "seconds of the limit, not operations"
        );
        p.update(12_345, Duration::from_millis(2_500));
        assert_eq!(p.bar.position(), 2);
        assert_eq!(p.bar.message(), "12345 ops, 4938 ops/s");
        let p = Progress::new(Some(1000), None);
        assert!(!p.by_time);
        p.update(500, Duration::from_secs(2));
        assert_eq!(
            (p.bar.position(), p.bar.message()),
            (500, "250 ops/s".to_string())
        );
        assert_eq!(rate(1, Duration::ZERO), "- ops/s");
    }
}
