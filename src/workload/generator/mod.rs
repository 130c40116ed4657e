//! YCSB 0.17.0's number generators (`core/src/main/java/site/ycsb/generator`),
//! rewritten for per-thread use: every generator that draws randomness takes
//! the calling thread's RNG, so threads never contend on a shared one.
//! Shared state (key counters) is atomic, as in YCSB.

mod counter;
mod discrete;
mod exponential;
mod histogram;
mod hotspot;
mod uniform;
mod zipfian;

pub use counter::{AcknowledgedCounter, Counter, Sequential, UnacknowledgedOverflow};
pub use discrete::Discrete;
pub use exponential::Exponential;
pub use histogram::HistogramGen;
pub use hotspot::Hotspot;
pub use uniform::UniformLong;
pub use zipfian::{zeta, ScrambledZipfian, SkewedLatest, Zipfian};

use rand::{Rng as _, SeedableRng};

/// The per-thread random source: small, fast, and not shared.
pub type Rng = rand::rngs::SmallRng;

/// A uniform double in [0, 1), like Java's `Random.nextDouble`.
#[inline]
pub fn next_f64(rng: &mut Rng) -> f64 {
    rng.gen::<f64>()
}

/// An RNG for one `stream` (a thread index) of a run seeded with `seed`:
/// the same seed and stream always give the same sequence.
pub fn rng_from_seed(seed: u64, stream: u64) -> Rng {
    Rng::seed_from_u64(splitmix64(seed ^ splitmix64(stream)))
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of `val`,
/// then Java's `Math.abs` (which leaves `i64::MIN` negative).
pub fn fnvhash64(mut val: i64) -> i64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8; // arithmetic shift, as Java's `>>`
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    hash.wrapping_abs()
}

/// Java's `Math.abs(long) % bound`, the way YCSB turns a random long into
/// an offset below `bound`.
#[inline]
fn java_abs_mod(value: i64, bound: u64) -> u64 {
    // `wrapping_abs(i64::MIN)` stays negative in Java too; its unsigned
    // magnitude 2^63 is the mathematically sensible reading.
    value.unsigned_abs() % bound
}

#[cfg(test)]
pub(crate) mod testutil {
    /// Fraction of `draws` equal to `value`.
    pub fn share<T: PartialEq>(draws: &[T], value: T) -> f64 {
        draws.iter().filter(|d| **d == value).count() as f64 / draws.len() as f64
    }

    /// Asserts |actual − expected| ≤ tolerance with a message naming both.
    pub fn assert_close(what: &str, actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "{what}: got {actual:.5}, expected {expected:.5} ± {tolerance}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnvhash64_matches_ycsb_for_known_inputs() {
        // FNV-1a of eight zero bytes, computed independently in u64 arithmetic.
        let mut expected: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            expected = expected.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnvhash64(0), (expected as i64).wrapping_abs());
        // Values YCSB 0.17.0 prints for keys 0 and 1 (user6284781860667377211, ...).
        assert_eq!(fnvhash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnvhash64(1), 8_517_097_267_634_966_620);
    }

    #[test]
    fn seeded_streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| rng_from_seed(7, 1).gen()).collect();
        let b: Vec<u64> = (0..4).map(|_| rng_from_seed(7, 1).gen()).collect();
        assert_eq!(a, b);
        let mut s1 = rng_from_seed(7, 1);
        let mut s2 = rng_from_seed(7, 2);
        assert_ne!(s1.gen::<u64>(), s2.gen::<u64>());
    }

    #[test]
    fn java_abs_mod_handles_the_extremes() {
        assert_eq!(java_abs_mod(-7, 5), 2);
        assert_eq!(java_abs_mod(i64::MIN, 10), (1u64 << 63) % 10);
    }
}
