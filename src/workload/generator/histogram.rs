//! YCSB `HistogramGenerator` (`fieldlengthdistribution=histogram`): a file
//! whose first line is `BlockSize<TAB>n` and whose other lines are
//! `bucket<TAB>count`; a draw returns a multiple of the block size.

use super::Rng;
use rand::Rng as _;

#[derive(Clone, Debug)]
pub struct HistogramGen {
    block_size: u64,
    buckets: Vec<u64>,
    area: u64,
}

impl HistogramGen {
    /// Parses YCSB's histogram file format; the error names the bad line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or("the file is empty")?;
        let block_size = match first.split('\t').collect::<Vec<_>>()[..] {
            ["BlockSize", n] => parse(n, 1)?,
            _ => return Err("the first line must be 'BlockSize<TAB>n'".into()),
        };
        let mut buckets = Vec::new();
        for (index, line) in lines {
            let line_no = index + 1;
            let (bucket, count) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {line_no}: expected 'bucket<TAB>count'"))?;
            let bucket = parse(bucket, line_no)? as usize;
            if bucket > 1 << 20 {
                return Err(format!("line {line_no}: bucket {bucket} is too large"));
            }
            if buckets.len() <= bucket {
                buckets.resize(bucket + 1, 0);
            }
            buckets[bucket] = parse(count, line_no)?;
        }
        if block_size.saturating_mul(buckets.len() as u64) > 1 << 30 {
            return Err(format!(
                "values up to {} x {block_size} bytes: more than kvperf allows (1 GiB)",
                buckets.len()
            ));
        }
        let area: u64 = buckets.iter().sum();
        if area == 0 {
            return Err("the histogram has no counts".into());
        }
        Ok(Self {
            block_size,
            buckets,
            area,
        })
    }

    /// Mean draw, taking bucket `i` as `(i + 1) * block_size` as the walk
    /// mostly returns; used for logical-byte accounting, not for draws.
    pub fn mean(&self) -> f64 {
        let weighted: f64 = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, &count)| (i as f64 + 1.0) * count as f64)
            .sum();
        weighted * self.block_size as f64 / self.area as f64
    }

    /// The longest draw: the last bucket's, `(len - 1) x block_size`
    /// ([`Self::next`] returns `(i + 1) x block_size` for an earlier one).
    pub fn max(&self) -> u64 {
        (self.buckets.len() as u64 - 1) * self.block_size
    }

    /// YCSB's walk, kept exactly (including returning `(i + 1) * blockSize`
    /// once the remainder reaches zero).
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let mut number = rng.gen_range(0..self.area) as i64;
        let last = self.buckets.len() - 1;
        for (i, &count) in self.buckets[..last].iter().enumerate() {
            number -= count as i64;
            if number <= 0 {
                return (i as u64 + 1) * self.block_size;
            }
        }
        last as u64 * self.block_size
    }
}

fn parse(field: &str, line_no: usize) -> Result<u64, String> {
    field.trim().parse().map_err(|_| {
        format!(
            "line {line_no}: '{}' is not a non-negative integer",
            field.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::{rng_from_seed, testutil::*};

    #[test]
    fn draws_follow_the_file() {
        // Bucket 1 has 3/4 of the area, bucket 2 a quarter.
        let mut gen = HistogramGen::parse("BlockSize\t100\n0\t0\n1\t3\n2\t1\n").unwrap();
        let mut rng = rng_from_seed(8, 0);
        let draws: Vec<u64> = (0..40_000).map(|_| gen.next(&mut rng)).collect();
        // YCSB's walk maps number 0 (1/4 of draws) to bucket 0's upper edge (100)
        // and numbers 1..=3 to 200: exactly its behaviour, reproduced.
        assert_close("100-byte share", share(&draws, 100), 0.25, 0.01);
        assert_close("200-byte share", share(&draws, 200), 0.75, 0.01);
        // The record and scan caps are held to this.
        assert_eq!(draws.iter().max(), Some(&gen.max()));
    }

    #[test]
    fn bad_files_are_rejected_with_the_line() {
        assert!(HistogramGen::parse("").unwrap_err().contains("empty"));
        assert!(HistogramGen::parse("Block\t1\n")
            .unwrap_err()
            .contains("BlockSize"));
        let err = HistogramGen::parse("BlockSize\t1\n0\tx\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
    }
}
