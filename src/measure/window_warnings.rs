//! What hyperfine would warn about a measured window, judged once here
//! and used by the step (a warning on stderr and in the result) and the
//! report (a mark on the cell): a window too short to mean anything, and
//! a target rate the clients did not reach (docs/semantics.md, "Measured
//! window" and "Target rate reached").

/// A window shorter than this is too short to judge: too few one-second
/// intervals to tell a steady rate from a warm-up or a stall.
pub const MIN_WINDOW_S: f64 = 10.0;

/// A target rate counts as reached when the window's throughput is at
/// least this share of it.
pub const TARGET_REACHED_SHARE: f64 = 0.95;

/// The warning for a window of `seconds`, when it is under [`MIN_WINDOW_S`];
/// `lengthen` names the settings that make it longer, in the mode's words.
pub fn short_window(seconds: f64, lengthen: &str) -> Option<String> {
    (seconds < MIN_WINDOW_S).then(|| {
        format!(
            "the measured window lasted {seconds:.2} s, under {MIN_WINDOW_S:.0} s: too short to judge \
             (too few one-second intervals to tell a steady rate from warm-up or a stall); \
             raise {lengthen} before quoting it"
        )
    })
}

/// What lengthens a YCSB run's window.
pub const YCSB_LENGTHEN: &str = "operationcount or maxexecutiontime";
/// What lengthens a db_bench benchmark's window.
pub const DB_BENCH_LENGTHEN: &str = "--duration (or --num / --reads)";

/// The warning for a window that reached `achieved` ops/s under a target
/// of `target` ops/s (0: none), when it fell short of
/// [`TARGET_REACHED_SHARE`] of the target.
pub fn target_missed(target: f64, achieved: f64) -> Option<String> {
    (target > 0.0 && achieved < TARGET_REACHED_SHARE * target).then(|| {
        format!(
            "target rate not reached: {:.0} ops/s of the {:.0} ops/s asked ({:.0}%, under {:.0}%): \
             the clients could not keep up, so the figures are of a saturated system, not of the target load",
            achieved,
            target,
            100.0 * achieved / target,
            100.0 * TARGET_REACHED_SHARE
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_under_ten_seconds_is_too_short_and_ten_is_not() {
        let warning = short_window(4.0, YCSB_LENGTHEN).expect("4 s is short");
        assert!(warning.contains("4.00 s, under 10 s"), "{warning}");
        assert_eq!(short_window(MIN_WINDOW_S, YCSB_LENGTHEN), None);
        assert_eq!(short_window(600.0, YCSB_LENGTHEN), None);
    }

    #[test]
    fn a_target_is_missed_under_ninety_five_percent_and_never_without_one() {
        let warning = target_missed(1000.0, 900.0).expect("90% misses");
        assert!(
            warning.contains("900 ops/s of the 1000 ops/s asked (90%, under 95%)"),
            "{warning}"
        );
        assert_eq!(target_missed(1000.0, 950.0), None);
        assert_eq!(target_missed(1000.0, 1200.0), None);
        assert_eq!(target_missed(0.0, 5.0), None);
    }
}
