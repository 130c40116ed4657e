//! One cell's repeats: how sure is its median? The 95% interval of the
//! median from the order statistics of the repeats, exact and
//! distribution-free (it assumes only that the repeats are independent
//! draws of one distribution, of any shape).
//!
//! With the n repeats in order, [x_(k), x_(n+1-k)] holds the true median
//! with probability 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2) (each repeat
//! falls below the median with probability 1/2); k is the largest whose
//! tail is at most 2.5%. Below 6 repeats no k qualifies (with 5, even
//! [min, max] misses the median with probability 2/32 = 6.3%), so no
//! interval exists: the same reason [`super::stats::MIN_REPEATS`] exists
//! for comparisons. What adaptive repeats stop on.

/// Fewest repeats with a 95% interval of their median.
pub const MIN_REPEATS: usize = 6;

/// The 95% interval of a cell's median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianInterval {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// What the interval achieves, at least 95% (B takes whole values).
    pub confidence: f64,
}

impl MedianInterval {
    /// The interval's larger side as a fraction of the median: the "±5%"
    /// a plan's `repeats.until` is compared with.
    pub fn half_width(&self) -> f64 {
        if self.median <= 0.0 {
            return f64::INFINITY;
        }
        (self.median - self.low).max(self.high - self.median) / self.median
    }
}

/// The interval of `values`' median, None below [`MIN_REPEATS`] or when a
/// value is not finite.
pub fn median_interval(values: &[f64]) -> Option<MedianInterval> {
    if values.len() < MIN_REPEATS || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let (k, tail) = order_statistic_k(n, (1.0 - super::stats::CONFIDENCE) / 2.0)?;
    let median = super::stats::median_of_sorted(&sorted);
    Some(MedianInterval {
        median,
        low: sorted[k - 1],
        high: sorted[n - k],
        confidence: 1.0 - 2.0 * tail,
    })
}

/// The largest k with P(B <= k-1) <= `alpha_each_side`, B ~ Bin(n, 1/2),
/// and that tail.
fn order_statistic_k(n: usize, alpha_each_side: f64) -> Option<(usize, f64)> {
    // The pmf in logarithms: 0.5^n underflows past n = 1074.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_pmf = ln_half_n; // P(B = 0)
    let mut cdf = 0.0; // P(B <= k-1) for the k being tried
    let mut best = None;
    for k in 1..=n / 2 {
        let i = k - 1; // adding P(B = i)
        cdf += ln_pmf.exp();
        if cdf > alpha_each_side {
            break;
        }
        best = Some((k, cdf));
        ln_pmf += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// One repeat's figure.
    type Draw = fn(&mut SmallRng) -> f64;

    #[test]
    fn below_six_repeats_there_is_no_interval() {
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]), None);
    }

    #[test]
    fn the_order_statistics_and_confidence_are_the_binomial_ones() {
        // n = 6: [min, max], 1 - 2/64.
        let six = median_interval(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]).unwrap();
        assert_eq!((six.low, six.median, six.high), (1.0, 3.5, 6.0));
        assert!((six.confidence - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        // n = 9: P(B <= 1) = 10/512 <= 2.5%, P(B <= 2) = 46/512 is not:
        // [x2, x8].
        let values: Vec<f64> = (1..=9).map(f64::from).collect();
        let nine = median_interval(&values).unwrap();
        assert_eq!((nine.low, nine.median, nine.high), (2.0, 5.0, 8.0));
        assert!((nine.confidence - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        assert!((nine.half_width() - 3.0 / 5.0).abs() < 1e-12);
        // Large n stays finite and near the normal approximation's k:
        // n/2 - 0.98 sqrt(n) = 2000 - 61.98 for n = 4000.
        let big: Vec<f64> = (0..4000).map(f64::from).collect();
        let i = median_interval(&big).unwrap();
        assert!((1930.0..=1945.0).contains(&i.low), "{i:?}");
        assert!(i.confidence >= 0.95 && i.confidence < 0.96, "{i:?}");
    }

    /// Over simulated cells of repeats from skewed and symmetric
    /// distributions, the interval holds the true median at least as often
    /// as its confidence says (within the simulation's error).
    #[test]
    fn the_interval_covers_the_true_median_as_often_as_it_claims() {
        let mut rng = SmallRng::seed_from_u64(25);
        // (draw, true median): lognormal(0, 0.25) has median 1; uniform
        // 0.8..1.2 has median 1.
        let cases: [(&str, Draw); 2] = [
            ("lognormal", |r| {
                let u1: f64 = 1.0 - r.gen::<f64>();
                let u2: f64 = r.gen::<f64>();
                (0.25 * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()).exp()
            }),
            ("uniform", |r| 0.8 + 0.4 * r.gen::<f64>()),
        ];
        for (name, draw) in cases {
            for n in [6, 7, 10] {
                let runs = 4000;
                let mut covered = 0;
                let mut confidence = 0.0;
                for _ in 0..runs {
                    let v: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                    let i = median_interval(&v).unwrap();
                    confidence = i.confidence;
                    if i.low <= 1.0 && 1.0 <= i.high {
                        covered += 1;
                    }
                }
                let share = covered as f64 / runs as f64;
                // 4000 runs: the share's standard error is under 0.4%.
                assert!(
                    share >= confidence - 0.012 && share <= confidence + 0.012,
                    "{name}, n = {n}: covered {share:.4}, claims {confidence:.4}"
                );
            }
        }
    }
}
