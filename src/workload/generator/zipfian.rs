//! YCSB's zipfian family: `ZipfianGenerator` (Gray et al., "Quickly
//! Generating Billion-Record Synthetic Databases", SIGMOD 1994),
//! `ScrambledZipfianGenerator` and `SkewedLatestGenerator`.

use super::{fnvhash64, next_f64, Rng};

/// YCSB `ScrambledZipfianGenerator.ZETAN`: zeta(10^10 + 1, 0.99), precomputed.
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// YCSB `ScrambledZipfianGenerator.ITEM_COUNT`.
const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// YCSB `ZipfianGenerator.ZIPFIAN_CONSTANT`.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// Popular items first: item `min` is the most frequent.
#[derive(Clone, Debug)]
pub struct Zipfian {
    base: u64,
    /// Item count at construction; YCSB keeps using it for `eta` even when
    /// `next_with_count` grows the range (a quirk we keep).
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
    /// 1 + 0.5^θ, the bound below which item 1 is drawn (precomputed).
    second_item_bound: f64,
}

impl Zipfian {
    /// Over `min..=max` with YCSB's constant 0.99.
    pub fn new(min: u64, max: u64) -> Self {
        Self::with_theta(min, max, ZIPFIAN_CONSTANT)
    }

    pub fn with_theta(min: u64, max: u64, theta: f64) -> Self {
        let items = max - min + 1;
        Self::with_zetan(min, max, theta, zeta(items, theta))
    }

    fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let items = max - min + 1;
        let zeta2theta = zeta(2, theta);
        Self {
            base: min,
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: eta(items, theta, zeta2theta, zetan),
            count_for_zeta: items,
            second_item_bound: 1.0 + 0.5f64.powf(theta),
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.next_with_count(rng, self.count_for_zeta)
    }

    /// YCSB `nextLong(itemcount)`: draws over `itemcount` items, extending
    /// zeta incrementally when the count has grown (a shrinking count is
    /// ignored, as YCSB does unless `allowitemcountdecrease`).
    pub fn next_with_count(&mut self, rng: &mut Rng, item_count: u64) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = if item_count - self.count_for_zeta <= EXACT_TERMS {
                self.zetan + zeta_terms(self.count_for_zeta, item_count, self.theta)
            } else {
                zeta(item_count, self.theta)
            };
            self.count_for_zeta = item_count;
            self.eta = eta(self.items, self.theta, self.zeta2theta, self.zetan);
        }
        let u = next_f64(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < self.second_item_bound {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

fn eta(items: u64, theta: f64, zeta2theta: f64, zetan: f64) -> f64 {
    (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan)
}

/// Terms summed one by one; beyond this the Euler–Maclaurin tail is used
/// (YCSB sums every term, which takes minutes for 10^10 items; the tail
/// agrees with the full sum to ~1e-15 relative).
const EXACT_TERMS: u64 = 1 << 22;

/// zeta(n, θ) = Σ_{i=1..n} 1/i^θ.
pub fn zeta(n: u64, theta: f64) -> f64 {
    if n <= EXACT_TERMS {
        return zeta_terms(0, n, theta);
    }
    let m = EXACT_TERMS;
    zeta_terms(0, m - 1, theta) + euler_maclaurin_tail(m as f64, n as f64, theta)
}

/// YCSB `zeta(st, n, theta, 0)`: Σ_{i=st..n-1} 1/(i+1)^θ.
fn zeta_terms(start: u64, end: u64, theta: f64) -> f64 {
    (start..end)
        .map(|i| 1.0 / ((i + 1) as f64).powf(theta))
        .sum()
}

/// Σ_{k=m..n} k^-θ by Euler–Maclaurin with two correction terms.
fn euler_maclaurin_tail(m: f64, n: f64, theta: f64) -> f64 {
    let f = |x: f64| x.powf(-theta);
    let f1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let f3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let integral = if (theta - 1.0).abs() < 1e-12 {
        (n / m).ln()
    } else {
        (n.powf(1.0 - theta) - m.powf(1.0 - theta)) / (1.0 - theta)
    };
    integral + (f(m) + f(n)) / 2.0 + (f1(n) - f1(m)) / 12.0 - (f3(n) - f3(m)) / 720.0
}

/// YCSB `ScrambledZipfianGenerator`: zipfian popularity, but the popular
/// items are scattered over `min..=max` by FNV-hashing the rank.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: u64,
    item_count: u64,
    gen: Zipfian,
}

impl ScrambledZipfian {
    pub fn with_theta(min: u64, max: u64, theta: f64) -> Self {
        // YCSB draws ranks over 0..=10^10 and uses its precomputed zeta for
        // the default constant; another constant needs zeta computed.
        let gen = if theta == ZIPFIAN_CONSTANT {
            Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, theta, SCRAMBLED_ZETAN)
        } else {
            Zipfian::with_theta(0, SCRAMBLED_ITEM_COUNT, theta)
        };
        Self {
            min,
            item_count: max - min + 1,
            gen,
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let rank = self.gen.next(rng);
        self.min + fnvhash64(rank as i64).unsigned_abs() % self.item_count
    }
}

/// YCSB `SkewedLatestGenerator`: the most recently inserted keys are the
/// most popular; `last` is the acknowledged-insert counter's last value.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `zipfian` spans `0..last` at the start of the run (YCSB builds it
    /// as `new ZipfianGenerator(basis.lastValue())`).
    pub fn from_zipfian(zipfian: Zipfian) -> Self {
        Self { zipfian }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng, last: u64) -> u64 {
        last - self.zipfian.next_with_count(rng, last).min(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::{rng_from_seed, testutil::*};

    fn draws(n: usize, mut f: impl FnMut(&mut Rng) -> u64) -> Vec<u64> {
        let mut rng = rng_from_seed(42, 0);
        (0..n).map(|_| f(&mut rng)).collect()
    }

    #[test]
    fn zipfian_head_matches_theory() {
        // Gray's method is exact for the two most popular items:
        // P(0) = 1/zeta(n), P(1) = 2^-θ/zeta(n).
        let items = 1000;
        let mut gen = Zipfian::new(0, items - 1);
        let z = zeta_terms(0, items, 0.99);
        let d = draws(400_000, |r| gen.next(r));
        assert!(d.iter().all(|&v| v < items));
        assert_close("P(0)", share(&d, 0), 1.0 / z, 0.003);
        assert_close("P(1)", share(&d, 1), 0.5f64.powf(0.99) / z, 0.003);
        // Popularity falls with rank.
        assert!(share(&d, 2) > share(&d, 20) && share(&d, 20) > share(&d, 500));
    }

    #[test]
    fn zipfian_respects_a_custom_constant() {
        let mut gen = Zipfian::with_theta(10, 109, 0.5);
        let z = zeta_terms(0, 100, 0.5);
        let d = draws(200_000, |r| gen.next(r));
        assert!(d.iter().all(|&v| (10..110).contains(&v)));
        assert_close("P(min)", share(&d, 10), 1.0 / z, 0.003);
    }

    #[test]
    fn zeta_tail_agrees_with_the_full_sum() {
        let n = EXACT_TERMS * 3;
        let exact = zeta_terms(0, n, 0.99);
        let fast = zeta(n, 0.99);
        assert!((exact - fast).abs() / exact < 1e-12, "{exact} vs {fast}");
    }

    #[test]
    fn scrambled_zetan_is_zeta_of_ten_billion_items() {
        let computed = zeta(SCRAMBLED_ITEM_COUNT + 1, 0.99);
        assert!((computed - SCRAMBLED_ZETAN).abs() < 1e-9, "{computed}");
    }

    #[test]
    fn scrambled_zipfian_puts_the_hottest_key_where_ycsb_does() {
        let (min, items) = (0, 1000u64);
        let mut gen = ScrambledZipfian::with_theta(min, min + items - 1, 0.99);
        let d = draws(400_000, |r| gen.next(r));
        assert!(d.iter().all(|&v| v < items));
        let hottest = min + fnvhash64(0) as u64 % items;
        // Rank 0 alone has 1/ZETAN; other ranks hashing to the same key add
        // about (1 - 1/ZETAN)/items on average.
        let expected = 1.0 / SCRAMBLED_ZETAN + (1.0 - 1.0 / SCRAMBLED_ZETAN) / items as f64;
        assert_close("hottest key", share(&d, hottest), expected, 0.004);
        let second = min + fnvhash64(1) as u64 % items;
        assert!(share(&d, second) > 0.015, "rank 1 key is hot too");
    }

    #[test]
    fn latest_favours_the_newest_keys() {
        let last = 999;
        let mut gen = SkewedLatest::from_zipfian(Zipfian::new(0, last - 1));
        let d = draws(200_000, |r| gen.next(r, last));
        assert!(d.iter().all(|&v| v <= last));
        let z = zeta_terms(0, last, 0.99);
        assert_close("newest key", share(&d, last), 1.0 / z, 0.003);
        assert_close(
            "second newest",
            share(&d, last - 1),
            0.5f64.powf(0.99) / z,
            0.003,
        );
        // YCSB's latest never returns key 0 (rank < last).
        assert_eq!(share(&d, 0), 0.0);
    }

    #[test]
    fn latest_follows_a_growing_key_space() {
        let mut gen = SkewedLatest::from_zipfian(Zipfian::new(0, 98));
        let mut rng = rng_from_seed(1, 1);
        let before = gen.zipfian.zetan;
        let newest = (0..1000)
            .filter(|_| gen.next(&mut rng, 5000) == 5000)
            .count();
        assert!(gen.zipfian.zetan > before, "zeta extended to the new count");
        assert!(newest > 50, "newest key still hottest: {newest}");
    }
}
