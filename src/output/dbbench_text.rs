//! db_bench's output: the result line of `Stats::Report` and, with
//! `--histogram`, the block of `HistogramStat::ToString`
//! (RocksDB 11.8 `tools/db_bench_tool.cc`, `monitoring/histogram.cc`).
//!
//! db_bench's percentiles are interpolated inside coarse buckets (each
//! about 1.5× the previous); kvperf records exact HdrHistograms and, for
//! this block, re-buckets them into db_bench's buckets and interpolates the
//! same way, so the printed P99 can be set beside db_bench's. The exact
//! percentiles are in the JSON output.

use std::fmt::Write as _;
use std::sync::OnceLock;

use hdrhistogram::Histogram;

use crate::results::step::Measurement;

/// db_bench's result line for one benchmark.
#[derive(Debug, Clone)]
pub struct ResultLine {
    pub name: String,
    /// Sum of the threads' elapsed times per operation (db_bench's definition).
    pub micros_per_op: f64,
    pub ops_per_sec: f64,
    pub seconds: f64,
    pub operations: u64,
    /// Key + value bytes moved per second, when any were.
    pub mb_per_sec: Option<f64>,
    pub message: String,
}

impl ResultLine {
    pub fn of(m: &Measurement) -> Self {
        let figures = m.db_bench.as_ref();
        Self {
            name: m.name.clone(),
            micros_per_op: figures.map_or(0.0, |f| f.micros_per_op),
            ops_per_sec: m.ops_per_sec,
            seconds: m.runtime_s,
            operations: m.operations,
            mb_per_sec: figures.and_then(|f| f.mb_per_sec),
            message: figures.map_or_else(String::new, |f| f.message.clone()),
        }
    }
}

pub fn render_result_line(r: &ResultLine) -> String {
    let mut extra = r
        .mb_per_sec
        .map(|mbs| format!("{mbs:6.1} MB/s"))
        .unwrap_or_default();
    if !r.message.is_empty() {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(&r.message);
    }
    format!(
        "{:<12} : {:11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}\n",
        r.name,
        r.micros_per_op,
        r.ops_per_sec as i64,
        r.seconds,
        r.operations,
        if extra.is_empty() { "" } else { " " },
        extra
    )
}

/// db_bench's `HistogramBucketMapper`: 1, 2, then ×1.5 rounded down to two
/// significant digits.
fn bucket_limits() -> &'static [u64] {
    static LIMITS: OnceLock<Vec<u64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        let mut limits = vec![1u64, 2];
        let mut value = 2.0f64;
        loop {
            value *= 1.5;
            if value > u64::MAX as f64 {
                break;
            }
            let mut v = value as u64;
            let mut pow = 1;
            while v / 10 > 10 {
                v /= 10;
                pow *= 10;
            }
            limits.push(v * pow);
        }
        limits
    })
}

/// A latency histogram in db_bench's buckets (microseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct DbBenchHistogram {
    buckets: Vec<u64>,
    count: u64,
    min: u64,
    max: u64,
    sum: f64,
    sum_squares: f64,
}

impl DbBenchHistogram {
    pub fn new() -> Self {
        Self {
            buckets: vec![0; bucket_limits().len()],
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0.0,
            sum_squares: 0.0,
        }
    }

    /// Adds `count` samples of `micros` (db_bench's `Add`).
    pub fn add(&mut self, micros: u64, count: u64) {
        let limits = bucket_limits();
        let index = if micros >= *limits.last().expect("buckets") {
            limits.len() - 1
        } else {
            limits.partition_point(|&l| l < micros)
        };
        self.buckets[index] += count;
        self.count += count;
        self.min = self.min.min(micros);
        self.max = self.max.max(micros);
        self.sum += micros as f64 * count as f64;
        self.sum_squares += (micros as f64).powi(2) * count as f64;
    }

    /// Re-buckets a nanosecond HdrHistogram, rounding to whole microseconds
    /// as db_bench's microsecond clock does.
    pub fn from_nanos(hist: &Histogram<u64>) -> Self {
        let mut h = Self::new();
        for v in hist.iter_recorded() {
            let micros = (v.value_iterated_to() + 500) / 1000;
            h.add(micros, v.count_at_value());
        }
        h
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn average(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    pub fn std_dev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        ((self.sum_squares * n - self.sum * self.sum) / (n * n))
            .max(0.0)
            .sqrt()
    }

    /// db_bench's `Percentile`: linear inside the bucket, clamped to min/max.
    pub fn percentile(&self, p: f64) -> f64 {
        let limits = bucket_limits();
        let threshold = self.count as f64 * (p / 100.0);
        let mut cumulative = 0u64;
        for (b, &in_bucket) in self.buckets.iter().enumerate() {
            cumulative += in_bucket;
            if cumulative as f64 >= threshold {
                let left = if b == 0 { 0 } else { limits[b - 1] } as f64;
                let right = limits[b] as f64;
                let left_sum = cumulative - in_bucket;
                let pos = if in_bucket == 0 {
                    0.0
                } else {
                    (threshold - left_sum as f64) / in_bucket as f64
                };
                let r = left + (right - left) * pos;
                return r.clamp(self.min_or_zero() as f64, self.max as f64);
            }
        }
        self.max as f64
    }

    fn min_or_zero(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// `HistogramStat::ToString`.
    pub fn render(&self) -> String {
        let mut r = String::new();
        let _ = writeln!(
            r,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            self.count,
            self.average(),
            self.std_dev()
        );
        let _ = writeln!(
            r,
            "Min: {}  Median: {:.4}  Max: {}",
            self.min_or_zero(),
            self.percentile(50.0),
            self.max
        );
        let _ = writeln!(
            r,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.percentile(50.0),
            self.percentile(75.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.percentile(99.99)
        );
        r.push_str("------------------------------------------------------\n");
        if self.count == 0 {
            return r;
        }
        let limits = bucket_limits();
        let mult = 100.0 / self.count as f64;
        let mut cumulative = 0;
        for (b, &in_bucket) in self.buckets.iter().enumerate() {
            if in_bucket == 0 {
                continue;
            }
            cumulative += in_bucket;
            let _ = write!(
                r,
                "{} {:7}, {:7} ] {:8} {:7.3}% {:7.3}% ",
                if b == 0 { '[' } else { '(' },
                if b == 0 { 0 } else { limits[b - 1] },
                limits[b],
                in_bucket,
                mult * in_bucket as f64,
                mult * cumulative as f64
            );
            let marks = (mult * in_bucket as f64 / 5.0 + 0.5) as usize;
            r.push_str(&"#".repeat(marks));
            r.push('\n');
        }
        r
    }
}

impl Default for DbBenchHistogram {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_limits_are_db_benchs() {
        // The first limits of RocksDB's HistogramBucketMapper (the ×1.5
        // chain runs on the unrounded value: 2, 3, 4.5, 6.75, 10.1, ...).
        assert_eq!(
            &bucket_limits()[..16],
            &[1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, 380, 580]
        );
        assert_eq!(bucket_limits().len(), 109, "HistogramImpl has 109 buckets");
    }

    #[test]
    fn percentiles_interpolate_inside_a_bucket() {
        let mut h = DbBenchHistogram::new();
        // 100 samples at 10 us: bucket (9, 14]. P50 = 9 + 5 × 0.5 = 11.5,
        // clamped to [min, max] = 10.
        h.add(10, 100);
        assert_eq!(h.percentile(50.0), 10.0);
        // 50 at 3 us, then 50 in bucket (170, 250].
        let mut h = DbBenchHistogram::new();
        h.add(3, 50);
        h.add(180, 25);
        h.add(250, 25);
        assert_eq!(h.percentile(50.0), 3.0); // (2,3] reached exactly at 50
        assert!((h.percentile(99.0) - (170.0 + 80.0 * 0.98)).abs() < 1e-9);
        assert_eq!(h.average(), (150.0 + 4500.0 + 6250.0) / 100.0);
    }

    #[test]
    fn result_line_has_db_benchs_layout() {
        let line = render_result_line(&ResultLine {
            name: "readrandom".into(),
            micros_per_op: 2.345,
            ops_per_sec: 426_439.7,
            seconds: 10.0,
            operations: 4_264_390,
            mb_per_sec: Some(47.25),
            message: "(2632 of 4264390 found)".into(),
        });
        assert_eq!(
            line,
            "readrandom   :       2.345 micros/op 426439 ops/sec 10.000 seconds 4264390 operations;   47.2 MB/s (2632 of 4264390 found)\n"
        );
    }

    #[test]
    fn block_lists_the_used_buckets() {
        let mut h = DbBenchHistogram::new();
        h.add(1, 3);
        h.add(5, 1);
        let text = h.render();
        assert!(
            text.starts_with("Count: 4 Average: 2.0000  StdDev: 1.73\n"),
            "{text}"
        );
        assert!(
            text.contains("[       0,       1 ]        3  75.000%  75.000% ###############\n"),
            "{text}"
        );
        assert!(
            text.contains("(       4,       6 ]        1  25.000% 100.000% #####\n"),
            "{text}"
        );
    }
}
