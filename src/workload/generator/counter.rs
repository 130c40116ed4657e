//! Key sequences shared by all threads: YCSB `CounterGenerator`,
//! `SequentialGenerator` and `AcknowledgedCounterGenerator`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// YCSB `CounterGenerator`: start, start+1, ... across all threads.
#[derive(Debug)]
pub struct Counter {
    next: AtomicU64,
}

impl Counter {
    pub fn new(start: u64) -> Self {
        Self {
            next: AtomicU64::new(start),
        }
    }

    #[inline]
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The value the next call to [`Counter::next`] returns.
    pub fn peek(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// YCSB `SequentialGenerator`: cycles through `start..=end`.
#[derive(Debug)]
pub struct Sequential {
    start: u64,
    interval: u64,
    counter: AtomicU64,
}

impl Sequential {
    pub fn new(start: u64, end: u64) -> Self {
        Self {
            start,
            interval: end - start + 1,
            counter: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn next(&self) -> u64 {
        self.start + self.counter.fetch_add(1, Ordering::Relaxed) % self.interval
    }
}

/// YCSB's window of outstanding inserts: 2^20 keys.
const WINDOW_SIZE: u64 = 1 << 20;
const WINDOW_MASK: u64 = WINDOW_SIZE - 1;

/// More than 2^20 inserts were handed out and not acknowledged
/// (YCSB throws "Too many unacknowledged insertion keys.").
#[derive(Debug, thiserror::Error)]
#[error("too many unacknowledged insertion keys")]
pub struct UnacknowledgedOverflow;

/// YCSB `AcknowledgedCounterGenerator`: hands out insert keys like
/// [`Counter`], but [`last`](Self::last) only advances over keys whose
/// inserts have completed, so reads never target a key not yet written.
pub struct AcknowledgedCounter {
    counter: Counter,
    window: Box<[AtomicBool]>,
    /// Highest key below which every insert is acknowledged.
    limit: AtomicU64,
    advancing: Mutex<()>,
}

impl AcknowledgedCounter {
    pub fn new(start: u64) -> Self {
        Self {
            counter: Counter::new(start),
            window: (0..WINDOW_SIZE).map(|_| AtomicBool::new(false)).collect(),
            // YCSB: limit = countstart - 1 (so `last` of a fresh counter
            // over recordcount records is recordcount - 1).
            limit: AtomicU64::new(start.wrapping_sub(1)),
            advancing: Mutex::new(()),
        }
    }

    #[inline]
    pub fn next(&self) -> u64 {
        self.counter.next()
    }

    /// The highest key such that it and every key before it is acknowledged.
    #[inline]
    pub fn last(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Marks `value` inserted and, if no other thread is already doing it,
    /// advances `last` over the run of acknowledged keys.
    pub fn acknowledge(&self, value: u64) -> Result<(), UnacknowledgedOverflow> {
        let slot = &self.window[(value & WINDOW_MASK) as usize];
        if slot.swap(true, Ordering::AcqRel) {
            return Err(UnacknowledgedOverflow);
        }
        // YCSB uses tryLock: whoever holds the lock advances for everyone.
        if let Ok(_guard) = self.advancing.try_lock() {
            let limit = self.limit.load(Ordering::Acquire);
            let before_first_slot = limit & WINDOW_MASK;
            let mut index = limit.wrapping_add(1);
            while index & WINDOW_MASK != before_first_slot {
                let slot = &self.window[(index & WINDOW_MASK) as usize];
                if !slot.swap(false, Ordering::AcqRel) {
                    break;
                }
                index = index.wrapping_add(1);
            }
            self.limit.store(index.wrapping_sub(1), Ordering::Release);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counters_count_and_sequential_wraps() {
        let c = Counter::new(5);
        assert_eq!((c.next(), c.next()), (5, 6));
        let s = Sequential::new(3, 5);
        let got: Vec<u64> = (0..5).map(|_| s.next()).collect();
        assert_eq!(got, [3, 4, 5, 3, 4]);
    }

    #[test]
    fn last_advances_only_over_a_contiguous_acknowledged_run() {
        let c = AcknowledgedCounter::new(100);
        assert_eq!(c.last(), 99);
        let (a, b, d) = (c.next(), c.next(), c.next());
        assert_eq!((a, b, d), (100, 101, 102));
        c.acknowledge(b).unwrap();
        assert_eq!(c.last(), 99, "101 done but 100 is still in flight");
        c.acknowledge(a).unwrap();
        assert_eq!(c.last(), 101);
        c.acknowledge(d).unwrap();
        assert_eq!(c.last(), 102);
    }

    #[test]
    fn too_many_outstanding_inserts_is_an_error() {
        let c = AcknowledgedCounter::new(0);
        let stuck = c.next(); // key 0: never acknowledged
        for _ in 1..WINDOW_SIZE {
            c.acknowledge(c.next()).unwrap();
        }
        assert_eq!(c.last(), u64::MAX, "nothing is contiguous from key 0");
        let _wraps_onto_slot_0 = c.next();
        // Key 2^20 + 1 lands on key 1's slot, still held: the window is full.
        assert!(c.acknowledge(c.next()).is_err());
        assert_eq!(stuck, 0);
    }

    #[test]
    fn concurrent_acknowledgements_reach_the_end() {
        let c = Arc::new(AcknowledgedCounter::new(0));
        let per_thread = 50_000;
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    for _ in 0..per_thread {
                        c.acknowledge(c.next()).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // With tryLock some advances are skipped; one more insert catches up.
        c.acknowledge(c.next()).unwrap();
        assert_eq!(c.last(), 4 * per_thread);
    }
}
