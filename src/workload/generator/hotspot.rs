//! YCSB `HotspotIntegerGenerator`: `hot_op_fraction` of draws land in the
//! first `hot_set_fraction` of the interval, uniformly; the rest uniformly
//! in the remainder.

use super::{java_abs_mod, next_f64, Rng};
use rand::Rng as _;

#[derive(Clone, Debug)]
pub struct Hotspot {
    lower: u64,
    hot_interval: u64,
    cold_interval: u64,
    hot_op_fraction: f64,
}

impl Hotspot {
    pub fn new(lower: u64, upper: u64, hot_set_fraction: f64, hot_op_fraction: f64) -> Self {
        // YCSB clamps out-of-range fractions (with a warning) and swaps bounds.
        let hot_set_fraction = hot_set_fraction.clamp(0.0, 1.0);
        let hot_op_fraction = hot_op_fraction.clamp(0.0, 1.0);
        let (lower, upper) = (lower.min(upper), lower.max(upper));
        let interval = upper - lower + 1;
        let hot_interval = (interval as f64 * hot_set_fraction) as u64;
        Self {
            lower,
            hot_interval,
            cold_interval: interval - hot_interval,
            hot_op_fraction,
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        // YCSB divides by zero when a part is empty; we use the other part.
        let hot = next_f64(rng) < self.hot_op_fraction;
        if (hot && self.hot_interval > 0) || self.cold_interval == 0 {
            self.lower + java_abs_mod(rng.gen(), self.hot_interval)
        } else {
            self.lower + self.hot_interval + java_abs_mod(rng.gen(), self.cold_interval)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::{rng_from_seed, testutil::*};

    #[test]
    fn hot_set_gets_its_share_of_operations() {
        // 20% of 1000 keys get 80% of the operations.
        let mut gen = Hotspot::new(0, 999, 0.2, 0.8);
        let mut rng = rng_from_seed(6, 0);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| gen.next(&mut rng)).collect();
        assert!(draws.iter().all(|&v| v < 1000));
        let hot = draws.iter().filter(|&&v| v < 200).count() as f64 / n as f64;
        assert_close("hot share", hot, 0.8, 0.005);
        // Uniform inside the hot set: key 0 and key 199 alike (0.8/200 each).
        assert_close("key 0", share(&draws, 0), 0.004, 0.001);
        assert_close("key 199", share(&draws, 199), 0.004, 0.001);
    }

    #[test]
    fn empty_hot_set_does_not_divide_by_zero() {
        let mut gen = Hotspot::new(5, 5, 0.5, 0.9);
        let mut rng = rng_from_seed(6, 1);
        assert!((0..100).all(|_| gen.next(&mut rng) == 5));
    }
}
