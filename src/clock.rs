//! Wall-clock time since the Unix epoch, for results, file names and seeds:
//! a floor below every module that stamps something, so none of them
//! imports another for the time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Time since the epoch; zero on a clock set before 1970.
fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Milliseconds since the Unix epoch, for the `*_unix_ms` fields of results.
pub fn unix_ms() -> u64 {
    since_epoch().as_millis() as u64
}

/// Whole seconds since the Unix epoch.
pub fn unix_secs() -> u64 {
    since_epoch().as_secs()
}

/// Nanoseconds since the Unix epoch (a seed when none is given).
pub fn unix_nanos() -> u64 {
    since_epoch().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_units_agree() {
        let (s, ms, ns) = (unix_secs(), unix_ms(), unix_nanos());
        // Read in that order, each is at least the one before in its unit.
        assert!(ms / 1000 >= s && ns / 1_000_000 >= ms, "{s} {ms} {ns}");
        assert!(s > 1_700_000_000, "a clock after 2023: {s}");
    }
}
