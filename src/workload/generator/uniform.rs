//! YCSB `UniformLongGenerator`: `Math.abs(nextLong()) % interval + lb`.

use super::{java_abs_mod, Rng};
use rand::Rng as _;

#[derive(Clone, Debug)]
pub struct UniformLong {
    lower: u64,
    interval: u64,
}

impl UniformLong {
    /// Uniform over `lower..=upper`.
    pub fn new(lower: u64, upper: u64) -> Self {
        assert!(upper >= lower, "UniformLong: {upper} < {lower}");
        Self {
            lower,
            interval: upper - lower + 1,
        }
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        self.lower + java_abs_mod(rng.gen::<i64>(), self.interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::rng_from_seed;

    #[test]
    fn every_value_is_equally_likely_and_in_range() {
        let gen = UniformLong::new(10, 19);
        let mut rng = rng_from_seed(1, 0);
        let mut counts = [0u32; 10];
        let draws = 200_000;
        for _ in 0..draws {
            let v = gen.next(&mut rng);
            assert!((10..=19).contains(&v));
            counts[(v - 10) as usize] += 1;
        }
        // Chi-square with 9 degrees of freedom: 27.9 is the 0.1% critical value.
        let expected = draws as f64 / 10.0;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 27.9, "chi-square {chi2} for {counts:?}");
    }
}
