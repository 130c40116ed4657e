//! db_bench's values (`RandomGenerator` in `tools/db_bench_tool.cc`): a
//! buffer of at least 1 MiB made of 100-byte pieces that compress to
//! `--compression_ratio` (`test::CompressibleString`: a random binary
//! prefix of `100 × ratio` bytes repeated), handed out as consecutive
//! slices, from RocksDB's Park–Miller `Random(301)`, so the bytes on disk,
//! and what compression makes of them, are db_bench's.

/// RocksDB `util/random.h` `Random`: Park–Miller minimal standard generator.
#[derive(Debug, Clone)]
pub struct ParkMiller {
    seed: u32,
}

impl ParkMiller {
    const M: u32 = 2_147_483_647; // 2^31 - 1
    const A: u64 = 16_807;

    pub fn new(seed: u32) -> Self {
        let s = seed & Self::M;
        Self {
            seed: if s != 0 { s } else { 1 },
        }
    }

    pub fn next_u32(&mut self) -> u32 {
        let product = u64::from(self.seed) * Self::A;
        // (product % M), computed as RocksDB does, using ((x << 31) % M) == x.
        let mut seed = ((product >> 31) + (product & u64::from(Self::M))) as u32;
        if seed > Self::M {
            seed -= Self::M;
        }
        self.seed = seed;
        seed
    }

    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }
}

pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
    value_size: usize,
    /// db_bench draws `PercentTrue(same_value_percentage)` per value; the
    /// draw is kept so the sequence of slices is db_bench's.
    rng: ParkMiller,
}

impl ValueGenerator {
    pub fn new(value_size: usize, compression_ratio: f64) -> Self {
        let mut rng = ParkMiller::new(301);
        let target = value_size.max(1 << 20);
        let mut data = Vec::with_capacity(target + 100);
        let raw_len = ((100.0 * compression_ratio) as usize).max(1);
        while data.len() < target {
            // RandomBinaryString: Uniform(CHAR_MAX = 127) per byte.
            let raw: Vec<u8> = (0..raw_len).map(|_| rng.uniform(127) as u8).collect();
            let start = data.len();
            while data.len() - start < 100 {
                data.extend_from_slice(&raw);
            }
            data.truncate(start + 100);
        }
        Self {
            data,
            pos: 0,
            value_size,
            rng,
        }
    }

    /// The next value of `--value_size` bytes.
    #[inline]
    pub fn generate(&mut self) -> &[u8] {
        self.rng.next_u32(); // PercentTrue(same_value_percentage = 0)
        let len = self.value_size;
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn park_miller_matches_the_minimal_standard() {
        // Park & Miller (1988): from seed 1, the 10000th value is 1043618065.
        let mut rng = ParkMiller::new(1);
        let mut last = 0;
        for _ in 0..10_000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 1_043_618_065);
        assert_eq!(ParkMiller::new(0).next_u32(), 16_807, "seed 0 becomes 1");
    }

    #[test]
    fn values_repeat_their_prefix_as_the_ratio_says() {
        let mut gen = ValueGenerator::new(100, 0.5);
        let v = gen.generate().to_vec();
        assert_eq!(v.len(), 100);
        assert_eq!(v[..50], v[50..], "50 random bytes, repeated once");
        assert!(v.iter().all(|&b| b < 127));
        let next = gen.generate().to_vec();
        assert_ne!(v, next, "consecutive values differ");
    }

    #[test]
    fn values_wrap_around_the_buffer() {
        let mut gen = ValueGenerator::new(4096, 0.5);
        let first = gen.generate().to_vec();
        let per_buffer = gen.data.len() / 4096;
        for _ in 1..per_buffer {
            gen.generate();
        }
        assert_eq!(gen.generate(), &first[..], "wraps to the start");
    }
}
