//! YCSB `ExponentialGenerator`: `percentile`% of draws fall below `range`.

use super::{next_f64, Rng};

#[derive(Clone, Debug)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    /// YCSB: `gamma = -ln(1 - percentile/100) / range`.
    pub fn new(percentile: f64, range: f64) -> Self {
        Self {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        // 1 - u lies in (0, 1], so the logarithm is finite.
        (-(1.0 - next_f64(rng)).ln() / self.gamma) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::{rng_from_seed, testutil::*};

    #[test]
    fn percentile_of_draws_fall_below_range() {
        let mut gen = Exponential::new(95.0, 1000.0);
        let mut rng = rng_from_seed(5, 0);
        let n = 100_000;
        let below = (0..n).filter(|_| gen.next(&mut rng) < 1000).count();
        assert_close("share below range", below as f64 / n as f64, 0.95, 0.005);
    }
}
