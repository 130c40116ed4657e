//! Target-rate pacing on a fixed schedule, as YCSB's `ClientThread`
//! throttles: operation k of a thread is due at `start + k * tick`. The
//! due time is the operation's *intended* start, from which latency is
//! measured too, so a stall shows up in the latency of every operation it
//! delayed (no coordinated omission).

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    /// Nanoseconds between operations of one thread; 0 = unpaced.
    tick_ns: f64,
}

impl Pacer {
    pub fn new(ops_per_sec: f64) -> Self {
        let tick_ns = if ops_per_sec > 0.0 {
            1e9 / ops_per_sec
        } else {
            0.0
        };
        Self { tick_ns }
    }

    pub fn is_paced(&self) -> bool {
        self.tick_ns > 0.0
    }

    /// When operation `k` is due; None when unpaced (no clock is read).
    #[inline]
    pub fn due(&self, start: Instant, k: u64) -> Option<Instant> {
        self.is_paced()
            .then(|| start + Duration::from_nanos((k as f64 * self.tick_ns) as u64))
    }

    /// Sleeps until operation `k` is due and returns its intended start;
    /// unpaced, returns `start` at once (intended latency is then unused).
    /// A task waits with [`super::timer::sleep_until`] instead.
    #[inline]
    pub fn wait_for(&self, start: Instant, k: u64) -> Instant {
        let Some(due) = self.due(start, k) else {
            return start;
        };
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_fixed_not_relative() {
        let pacer = Pacer::new(1000.0);
        let start = Instant::now();
        // Operation 5 is due 5 ms after start no matter when we ask.
        let due = pacer.wait_for(start, 5);
        assert_eq!(due - start, Duration::from_millis(5));
        assert!(Instant::now() >= due);
        // Asking late does not move the schedule (the lateness is latency).
        let late = pacer.wait_for(start, 1);
        assert_eq!(late - start, Duration::from_millis(1));
        assert!(!Pacer::new(0.0).is_paced());
    }
}
