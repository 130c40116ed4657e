//! A client's latency counts between hand-overs, in a quarter of the
//! memory of a total's. A 1,024-client run holds one success histogram per
//! op type and client, and at 64-bit counts they were the largest part of
//! its memory. A client's counts are 16-bit: before they could saturate
//! (65,535 values since the last hand-over, which a client of a busy run
//! never reaches in its one-second interval, and a lone fast client does
//! every few milliseconds) they move to a 64-bit histogram of its own, so
//! no value is lost and a total is exactly what recording every value into
//! it would have made.

use hdrhistogram::Histogram;

use super::{counts_bytes, new_histogram_of};

type Count = u16;

/// Values one histogram of [`Count`]s takes before its counts move out: a
/// bucket's count never exceeds the histogram's total.
const LIMIT: u64 = Count::MAX as u64;

#[derive(Debug, Clone)]
pub struct CompactHistogram {
    counts: Histogram<Count>,
    /// Counts moved out before they could saturate; `None` until then.
    spilled: Option<Box<Histogram<u64>>>,
}

impl Default for CompactHistogram {
    fn default() -> Self {
        Self {
            counts: new_histogram_of(),
            spilled: None,
        }
    }
}

impl CompactHistogram {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if self.counts.len() >= LIMIT {
            self.spill();
        }
        // Auto-resizing: a value in range is always recorded.
        let _ = self.counts.record(ns);
    }

    /// Adds `other`'s values (a client's hand-over into its slot).
    pub fn add(&mut self, other: &CompactHistogram) {
        if self.counts.len() + other.counts.len() > LIMIT {
            self.spill();
        }
        // Auto-resizing histograms cannot fail to add.
        let _ = self.counts.add(&other.counts);
        if let Some(theirs) = &other.spilled {
            let _ = self
                .spilled
                .get_or_insert_with(|| Box::new(new_histogram_of()))
                .add(&**theirs);
        }
    }

    /// Adds every value held into a 64-bit total: what recording the
    /// values into it directly would have made.
    pub fn add_to(&self, total: &mut Histogram<u64>) {
        add_counts(&self.counts, total);
        if let Some(spilled) = &self.spilled {
            let _ = total.add(&**spilled);
        }
    }

    /// Values held.
    pub fn len(&self) -> u64 {
        self.counts.len() + self.spilled.as_ref().map_or(0, |s| s.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of counts held.
    pub fn allocated_bytes(&self) -> usize {
        self.counts.distinct_values() * std::mem::size_of::<Count>()
            + self.spilled.as_ref().map_or(0, |s| counts_bytes(s))
    }

    /// Moves the small counts into the 64-bit histogram and empties them
    /// (keeping their allocation).
    fn spill(&mut self) {
        let spilled = self
            .spilled
            .get_or_insert_with(|| Box::new(new_histogram_of()));
        add_counts(&self.counts, spilled);
        self.counts.reset();
    }
}

/// Adds `counts` into `total`. Each count is recorded at its bucket's
/// highest equivalent value, which falls in the same bucket of a histogram
/// of the same precision.
fn add_counts(counts: &Histogram<Count>, total: &mut Histogram<u64>) {
    for bucket in counts.iter_recorded() {
        let _ = total.record_n(
            bucket.value_iterated_to(),
            u64::from(bucket.count_at_value()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::new_histogram;

    /// Latencies spread over nine decades, with repeats.
    fn values() -> impl Iterator<Item = u64> {
        (0..20_000u64).map(|i| 1 + (i * 7_919) % 1_000 * 10u64.pow((i % 9) as u32))
    }

    #[test]
    fn adding_to_a_total_equals_recording_into_it() {
        let mut compact = CompactHistogram::default();
        let mut direct = new_histogram();
        for ns in values() {
            compact.record(ns);
            direct.record(ns).unwrap();
        }
        let mut total = new_histogram();
        compact.add_to(&mut total);
        assert_eq!(total, direct);
        assert_eq!((total.min(), total.max()), (direct.min(), direct.max()));
        assert_eq!(
            total.value_at_quantile(0.99),
            direct.value_at_quantile(0.99)
        );
        assert_eq!(compact.len(), 20_000);
        assert!(compact.spilled.is_none(), "20,000 values fit");
        // A quarter of the bytes of the same histogram's 64-bit counts.
        assert_eq!(compact.allocated_bytes() * 4, direct.distinct_values() * 8);
    }

    #[test]
    fn counts_near_the_limit_move_out_instead_of_saturating() {
        let max = Count::MAX;
        // Two histograms whose sum would overflow a count.
        let mut a = CompactHistogram::default();
        let mut b = CompactHistogram::default();
        a.counts.record_n(1_000, max - 5).unwrap();
        b.counts.record_n(1_000, 10).unwrap();
        a.add(&b);
        assert!(a.spilled.is_some(), "the first addend's counts moved out");
        assert_eq!(a.len(), LIMIT + 5);
        // One more value at the limit moves them out again.
        let mut c = CompactHistogram::default();
        c.counts.record_n(2_000, max).unwrap();
        c.record(2_000);
        assert_eq!(c.counts.len(), 1);
        a.add(&c);
        let mut total = new_histogram();
        a.add_to(&mut total);
        assert_eq!(total.count_at(1_000), LIMIT + 5);
        assert_eq!(total.count_at(2_000), LIMIT + 1);
        assert_eq!(total.len(), a.len());
    }

    /// A lone fast client spills many times between hand-overs; its total
    /// is still every value, in its bucket.
    #[test]
    fn a_client_that_spills_often_loses_nothing() {
        let mut compact = CompactHistogram::default();
        let mut direct = new_histogram();
        let n = 5 * LIMIT + 123;
        for i in 0..n {
            let ns = 80 + i % 97 + (i % 10_007 == 0) as u64 * 3_000_000;
            compact.record(ns);
            direct.record(ns).unwrap();
        }
        assert_eq!(compact.len(), n);
        let mut total = new_histogram();
        compact.add_to(&mut total);
        assert_eq!(total, direct);
    }
}
