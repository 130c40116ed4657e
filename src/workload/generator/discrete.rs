//! YCSB `DiscreteGenerator`: picks a value with probability proportional
//! to its weight (the operation chooser).

use super::{next_f64, Rng};

#[derive(Clone, Debug)]
pub struct Discrete<T> {
    /// (weight as given, value), in insertion order as YCSB.
    weights: Vec<(f64, T)>,
    /// The same weights divided by their total, used for drawing.
    choices: Vec<(f64, T)>,
}

impl<T: Copy> Discrete<T> {
    pub fn new() -> Self {
        Self {
            weights: Vec::new(),
            choices: Vec::new(),
        }
    }

    pub fn add(&mut self, weight: f64, value: T) {
        self.weights.push((weight, value));
        let total: f64 = self.weights.iter().map(|(w, _)| w).sum();
        self.choices = self.weights.iter().map(|&(w, v)| (w / total, v)).collect();
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> T {
        let mut u = next_f64(rng);
        for &(weight, value) in &self.choices {
            if u < weight {
                return value;
            }
            u -= weight;
        }
        // Rounding can leave u a hair above the last weight.
        self.choices.last().expect("Discrete has no values").1
    }
}

impl<T: Copy> Default for Discrete<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::{rng_from_seed, testutil::*};

    #[test]
    fn shares_follow_weights() {
        let mut gen = Discrete::new();
        gen.add(0.5, 'r');
        gen.add(0.3, 'u');
        gen.add(0.2, 's');
        let mut rng = rng_from_seed(3, 0);
        let draws: Vec<char> = (0..100_000).map(|_| gen.next(&mut rng)).collect();
        assert_close("read share", share(&draws, 'r'), 0.5, 0.01);
        assert_close("update share", share(&draws, 'u'), 0.3, 0.01);
        assert_close("scan share", share(&draws, 's'), 0.2, 0.01);
    }

    #[test]
    fn weights_need_not_sum_to_one() {
        let mut gen = Discrete::new();
        gen.add(3.0, 1);
        gen.add(1.0, 2);
        let mut rng = rng_from_seed(4, 0);
        let draws: Vec<i32> = (0..100_000).map(|_| gen.next(&mut rng)).collect();
        assert_close("weight 3 of 4", share(&draws, 1), 0.75, 0.01);
    }
}
