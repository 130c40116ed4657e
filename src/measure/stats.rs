//! Two cells compared by their repeats: the ratio candidate / baseline of a
//! figure (throughput, a percentile), a 95% confidence interval around it,
//! and a verdict: faster, slower, or no difference at that confidence.
//!
//! The unit is the whole repeat: each repeat gives one figure (its ops/s,
//! or the p99 of its own histogram). The seconds within a run are not
//! independent (a compaction or a cold cache spans several), so they are
//! never the sample.
//!
//! The method is exact and distribution-free, the one Go's benchstat
//! builds on (a Mann-Whitney U test), applied to the logarithms of the
//! figures so that it speaks of ratios:
//!
//! - the ratio is the Hodges-Lehmann estimate, the median of the n x m
//!   ratios b_j / a_i of every candidate repeat to every baseline repeat;
//! - the interval is [D_(k), D_(nm+1-k)] of those ratios in order, where k
//!   is the largest whose tail under "no difference", P(U <= k-1), is at
//!   most 2.5% (U, the Mann-Whitney count, from its exact distribution);
//!   its confidence is then 1 - 2 P(U <= k-1), at least 95% (it is not
//!   exactly 95%: U takes whole values);
//! - the verdict is "faster" or "slower" when the interval leaves out 1 (no
//!   change), "~" when it holds it.
//!
//! The interval covers the true ratio with that confidence whenever the
//! candidate's repeats are distributed as the baseline's scaled by the
//! ratio (multiplicative noise of any shape: normal, lognormal, skewed, a
//! rare slow repeat), with no assumption of normality and no random
//! numbers, so a report is reproducible. A percentile bootstrap over 3 to
//! 5 repeats would cover far less than it claims (it cannot see beyond
//! the repeats it resamples); a t-interval assumes a normal shape and is
//! pulled by one bad repeat.
//!
//! Its price is a minimum: with 3 repeats on each side even the clearest
//! outcome (every candidate repeat above every baseline repeat) happens
//! by chance with probability 2 / C(6,3) = 10%, so no rank-based method
//! can decide at 95%; with 4 on each side it is 2 / C(8,4) = 2.9%. Hence
//! [`MIN_REPEATS`] (benchstat's "need >= 4 samples to detect a difference
//! at alpha level 0.05"). Unbalanced counts are judged by the same exact
//! test (3 against 5 repeats can decide: 2 / C(8,3) = 3.6%).

use serde::Serialize;

/// The confidence the intervals are asked for.
pub const CONFIDENCE: f64 = 0.95;

/// Repeats on each side for the exact test to be able to decide at 95%.
pub const MIN_REPEATS: usize = 4;

/// Above this many pairs U's distribution is approximated by a normal
/// one (with a continuity correction) instead of counted exactly.
const EXACT_PAIRS: usize = 2500;

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Throughput.
    Higher,
    /// Latency.
    Lower,
}

/// What the interval says about the candidate against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better with confidence: more throughput, or less latency.
    Faster,
    /// Worse with confidence.
    Slower,
    /// The interval holds "no change".
    NoDifference,
    /// Too few repeats for the test to decide at 95%.
    NeedRepeats,
}

impl Verdict {
    /// How reports write it: benchstat's "~" for no difference.
    pub fn word(self) -> String {
        match self {
            Verdict::Faster => "faster".into(),
            Verdict::Slower => "slower".into(),
            Verdict::NoDifference => "~".into(),
            Verdict::NeedRepeats => format!("need \u{2265} {MIN_REPEATS} repeats"),
        }
    }
}

/// A confidence interval of a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// Its exact confidence (at least [`CONFIDENCE`]).
    pub confidence: f64,
}

/// Candidate against baseline, over their repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatComparison {
    pub baseline_repeats: usize,
    pub candidate_repeats: usize,
    /// Hodges-Lehmann: the median of every candidate / baseline ratio.
    pub ratio: f64,
    /// None with too few repeats to decide.
    pub interval: Option<Interval>,
}

impl RepeatComparison {
    pub fn verdict(&self, better: Better) -> Verdict {
        let Some(i) = self.interval else {
            return Verdict::NeedRepeats;
        };
        let (up, down) = (i.low > 1.0, i.high < 1.0);
        match (better, up, down) {
            (Better::Higher, true, _) | (Better::Lower, _, true) => Verdict::Faster,
            (Better::Higher, _, true) | (Better::Lower, true, _) => Verdict::Slower,
            _ => Verdict::NoDifference,
        }
    }

    /// Worse by more than `fraction` (0.05 for 5%) with confidence: the
    /// whole interval beyond it (throughput below 1 - fraction of the
    /// baseline's, latency above 1 + fraction).
    pub fn worse_by_more_than(&self, better: Better, fraction: f64) -> bool {
        match (self.interval, better) {
            (Some(i), Better::Higher) => i.high < 1.0 - fraction,
            (Some(i), Better::Lower) => i.low > 1.0 + fraction,
            (None, _) => false,
        }
    }
}

/// Compares the repeats of a candidate with those of a baseline. None when
/// either has none, or a figure that is not a positive number (a repeat
/// with no successful operation has no latency to compare).
///
/// Memory and time are linear in the repeats (up to logarithms): the n x m
/// ratios are never materialised; each order statistic of them is
/// selected from the two sorted sets ([`Differences::select`]), exactly
/// the value sorting all of them would give.
pub fn compare_repeats(baseline: &[f64], candidate: &[f64]) -> Option<RepeatComparison> {
    let usable = |v: &[f64]| !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0);
    if !usable(baseline) || !usable(candidate) {
        return None;
    }
    let (n, m) = (baseline.len(), candidate.len());
    let diffs = Differences::new(baseline, candidate);
    let pairs = n * m;
    let median = if pairs % 2 == 1 {
        diffs.select(pairs / 2)
    } else {
        (diffs.select(pairs / 2 - 1) + diffs.select(pairs / 2)) / 2.0
    };
    let interval = order_statistic_k(n, m, (1.0 - CONFIDENCE) / 2.0).map(|(k, tail)| Interval {
        low: diffs.select(k - 1).exp(),
        high: diffs.select(pairs - k).exp(),
        confidence: 1.0 - 2.0 * tail,
    });
    Some(RepeatComparison {
        baseline_repeats: n,
        candidate_repeats: m,
        ratio: median.exp(),
        interval,
    })
}

/// Every difference ln b - ln a of a candidate figure b and a baseline
/// figure a, held as the two sorted sets of logarithms: a matrix whose
/// row j is candidate j and column c baseline n-1-c (in descending
/// order), so each row and each column increases.
struct Differences {
    /// The baseline's logarithms, ascending.
    base: Vec<f64>,
    /// The candidate's logarithms, ascending.
    new: Vec<f64>,
}

/// Below this many candidates left, they are gathered and selected among.
const GATHER: usize = 4096;

impl Differences {
    fn new(baseline: &[f64], candidate: &[f64]) -> Self {
        let sorted_logs = |v: &[f64]| {
            let mut logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
            logs.sort_by(f64::total_cmp);
            logs
        };
        Self {
            base: sorted_logs(baseline),
            new: sorted_logs(candidate),
        }
    }

    /// Row `j`, column `c`: computed exactly as the difference of the two
    /// logarithms (so a selected value equals the sorted list's).
    fn at(&self, j: usize, c: usize) -> f64 {
        self.new[j] - self.base[self.base.len() - 1 - c]
    }

    /// How many of row `j`'s values are below `p` (`or_equal`: at most `p`).
    fn in_row_below(&self, j: usize, p: f64, or_equal: bool) -> usize {
        let (mut lo, mut hi) = (0, self.base.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let v = self.at(j, mid);
            if v < p || (or_equal && v == p) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The difference of rank `q` (from 0) among all n x m in ascending
    /// order. Each row keeps the columns that may still hold it; a pivot,
    /// the weighted median of the rows' middle values, rules out at least
    /// a quarter of them each round (Monahan's selection for the
    /// Hodges-Lehmann estimator), until few enough are left to gather.
    fn select(&self, q: usize) -> f64 {
        let (rows, cols) = (self.new.len(), self.base.len());
        let mut lo = vec![0usize; rows];
        let mut hi = vec![cols; rows];
        loop {
            let left: usize = lo.iter().zip(&hi).map(|(l, h)| h - l).sum();
            let below: usize = lo.iter().sum();
            let rank = q - below;
            if left <= GATHER.max(2 * rows) {
                let mut gathered: Vec<f64> = (0..rows)
                    .flat_map(|j| (lo[j]..hi[j]).map(move |c| (j, c)))
                    .map(|(j, c)| self.at(j, c))
                    .collect();
                let (_, v, _) = gathered.select_nth_unstable_by(rank, f64::total_cmp);
                return *v;
            }
            let mut middles: Vec<(f64, usize)> = (0..rows)
                .filter(|&j| hi[j] > lo[j])
                .map(|j| (self.at(j, lo[j] + (hi[j] - lo[j]) / 2), hi[j] - lo[j]))
                .collect();
            middles.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut weight = 0;
            let pivot = middles
                .iter()
                .find(|(_, w)| {
                    weight += w;
                    2 * weight >= left
                })
                .map_or(middles[0].0, |(v, _)| *v);
            let less: Vec<usize> = (0..rows)
                .map(|j| self.in_row_below(j, pivot, false))
                .collect();
            let at_most: Vec<usize> = (0..rows)
                .map(|j| self.in_row_below(j, pivot, true))
                .collect();
            if q < less.iter().sum() {
                for (h, l) in hi.iter_mut().zip(&less) {
                    *h = (*h).min(*l);
                }
            } else if q < at_most.iter().sum() {
                return pivot;
            } else {
                for (l, a) in lo.iter_mut().zip(&at_most) {
                    *l = (*l).max(*a);
                }
            }
            // A row's bounds never cross: lo <= hi.
            for (l, h) in lo.iter_mut().zip(&mut hi) {
                *l = (*l).min(*h);
            }
        }
    }
}

/// The median of values already in order (none empty).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The largest k >= 1 with P(U <= k - 1) <= `alpha_each_side`, and that
/// probability; None when even P(U = 0) is larger (too few repeats).
fn order_statistic_k(n: usize, m: usize, alpha_each_side: f64) -> Option<(usize, f64)> {
    let pairs = n * m;
    // Tiny slack: a tail of exactly 2.5% counts (floating point).
    let limit = alpha_each_side * (1.0 + 1e-9);
    let best = if pairs > EXACT_PAIRS {
        // Above EXACT_PAIRS, U is taken as normal (with a continuity
        // correction): P(U <= u) increases with u, so the u within the
        // limit are a prefix of 0..=pairs, found by bisection.
        let mean = pairs as f64 / 2.0;
        let sd = (pairs as f64 * (n + m + 1) as f64 / 12.0).sqrt();
        let cdf = |u: usize| normal_cdf((u as f64 + 0.5 - mean) / sd);
        let (mut within, mut beyond) = (0, pairs + 1);
        while within < beyond {
            let mid = within + (beyond - within) / 2;
            if cdf(mid) <= limit {
                within = mid + 1;
            } else {
                beyond = mid;
            }
        }
        (within > 0).then(|| (within, cdf(within - 1)))
    } else {
        // cdf[u] = P(U <= u), increasing in u.
        let mut best = None;
        for (u, p) in u_cdf(n, m).iter().enumerate() {
            if *p <= limit {
                best = Some((u + 1, *p));
            } else {
                break;
            }
        }
        best
    };
    // k can be at most half of the pairs (the interval must not invert).
    best.filter(|(k, _)| *k <= pairs.div_ceil(2))
}

/// P(U <= u) for u = 0..=n*m (at most [`EXACT_PAIRS`] pairs), U the
/// Mann-Whitney count of (baseline, candidate) pairs in which the
/// candidate is smaller, under "both from one distribution" (every order
/// of the n + m repeats equally likely).
fn u_cdf(n: usize, m: usize) -> Vec<f64> {
    // counts[j][u]: orders of i baseline and j candidate repeats with U = u.
    // The largest of the i + j is either a baseline repeat (above all j
    // candidates: j more pairs) or a candidate one (no more pairs).
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        cur.push(vec![1.0]);
        for j in 1..=m {
            let mut counts = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                counts[u + j] += c;
            }
            for (u, c) in cur[j - 1].iter().enumerate() {
                counts[u] += c;
            }
            cur.push(counts);
        }
        prev = cur;
    }
    let counts = &prev[m];
    let total: f64 = counts.iter().sum();
    let mut running = 0.0;
    counts
        .iter()
        .map(|c| {
            running += c;
            running / total
        })
        .collect()
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26
/// for erf, absolute error under 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A standard normal draw (Box-Muller).
    fn normal(rng: &mut SmallRng) -> f64 {
        let u1: f64 = 1.0 - rng.gen::<f64>();
        let u2: f64 = rng.gen::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// How one repeat's figure is drawn, around 1.
    #[derive(Clone, Copy)]
    enum Noise {
        /// Normal with this standard deviation (a fraction of the mean).
        Normal(f64),
        /// Lognormal with this standard deviation of the logarithm.
        Lognormal(f64),
        /// One of the factors this machine's repeats showed.
        Observed,
    }

    /// Throughput of each repeat / its cell's mean, seed 002's RocksDB and
    /// WiredTiger cells on this machine (docs/examples/seed-002-engines-
    /// scale-0.0001, three repeats of ten cells): skewed, up to +59% / -33%;
    /// the standard deviation of their logarithms is 0.18.
    const OBSERVED: [f64; 30] = [
        0.905, 0.931, 1.164, 1.14, 1.005, 0.855, 0.968, 0.81, 1.222, 1.075, 0.854, 1.071, 1.028,
        1.157, 0.816, 0.894, 1.045, 1.061, 1.295, 0.958, 0.747, 1.589, 0.739, 0.672, 1.091, 0.917,
        0.991, 0.963, 0.945, 1.092,
    ];

    impl Noise {
        fn draw(self, rng: &mut SmallRng) -> f64 {
            match self {
                // Clamped away from zero: a throughput is positive.
                Noise::Normal(sd) => (1.0 + sd * normal(rng)).max(0.01),
                Noise::Lognormal(sd) => (sd * normal(rng)).exp(),
                Noise::Observed => OBSERVED[rng.gen_range(0..OBSERVED.len())],
            }
        }
    }

    /// Over `runs` simulated experiments, each of `n` baseline repeats and
    /// `m` candidate repeats whose distribution is the baseline's times
    /// `ratio`: how often the interval covered the ratio, and the verdicts.
    struct Outcome {
        covered: usize,
        faster: usize,
        slower: usize,
        same: usize,
        confidence: f64,
    }

    fn simulate(seed: u64, runs: usize, n: usize, m: usize, noise: Noise, ratio: f64) -> Outcome {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut out = Outcome {
            covered: 0,
            faster: 0,
            slower: 0,
            same: 0,
            confidence: 0.0,
        };
        for _ in 0..runs {
            let a: Vec<f64> = (0..n).map(|_| 1000.0 * noise.draw(&mut rng)).collect();
            let b: Vec<f64> = (0..m)
                .map(|_| 1000.0 * ratio * noise.draw(&mut rng))
                .collect();
            let c = compare_repeats(&a, &b).unwrap();
            let i = c.interval.expect("enough repeats");
            out.confidence = i.confidence;
            // Relative slack: an end can be the truth itself (a tie of the
            // observed factors), off by a rounding of the logarithms.
            if i.low <= ratio * (1.0 + 1e-9) && ratio * (1.0 - 1e-9) <= i.high {
                out.covered += 1;
            }
            match c.verdict(Better::Higher) {
                Verdict::Faster => out.faster += 1,
                Verdict::Slower => out.slower += 1,
                Verdict::NoDifference => out.same += 1,
                Verdict::NeedRepeats => unreachable!(),
            }
        }
        out
    }

    const RUNS: usize = 2000;

    /// 2000 experiments: a correct 95% interval covers the truth in 95% of
    /// them give or take 1% (one standard error is 0.5%). The tolerance,
    /// 93% to 99%, also holds the method's exact confidence (96.8% with 5
    /// repeats a side, 97.1% with 4): an interval too narrow (a bootstrap
    /// over 5 repeats covers about 85%) or one that always covers fails.
    fn assert_covers(what: &str, o: &Outcome) {
        let rate = o.covered as f64 / RUNS as f64;
        // Shown with --nocapture: the figures docs/semantics.md quotes.
        eprintln!(
            "{what}: covered {:.1}% of {RUNS} (exact confidence {:.1}%)",
            rate * 100.0,
            o.confidence * 100.0
        );
        assert!(
            (0.93..=0.99).contains(&rate),
            "{what}: covered the true ratio in {:.1}% of {RUNS} experiments (exact confidence {:.1}%)",
            rate * 100.0,
            o.confidence * 100.0
        );
    }

    #[test]
    fn the_exact_distribution_of_u_matches_the_tables() {
        // n = m = 5: 252 orders; U = 0, 1, 2 happen 1, 1, 2 times.
        let cdf = u_cdf(5, 5);
        assert_eq!(cdf.len(), 26);
        assert!((cdf[2] - 4.0 / 252.0).abs() < 1e-12);
        assert!((cdf[25] - 1.0).abs() < 1e-12);
        // Symmetric: P(U <= u) = P(U >= nm - u).
        assert!((cdf[10] - (1.0 - cdf[14])).abs() < 1e-12);
        // The two-sided 5% critical values of the Mann-Whitney tables:
        // k - 1 = 2 for 5 a side, 0 for 4, 5 for 4 against 8 (tables'
        // critical U 2, 0 and 4: the largest U with tail <= 2.5%).
        assert_eq!(order_statistic_k(5, 5, 0.025).unwrap().0, 3);
        assert_eq!(order_statistic_k(4, 4, 0.025).unwrap().0, 1);
        assert_eq!(order_statistic_k(4, 8, 0.025).unwrap().0, 5);
        assert_eq!(order_statistic_k(8, 8, 0.025).unwrap().0, 14);
        // The normal approximation agrees with the exact count near its edge.
        let exact = u_cdf(40, 40);
        let mean = 800.0;
        let sd = (1600.0_f64 * 81.0 / 12.0).sqrt();
        let approx = normal_cdf((600.0 + 0.5 - mean) / sd);
        assert!(
            (exact[600] - approx).abs() < 0.002,
            "{} {approx}",
            exact[600]
        );
    }

    #[test]
    fn too_few_repeats_say_so_instead_of_guessing() {
        let c = compare_repeats(&[100.0, 101.0, 99.0], &[200.0, 201.0, 199.0]).unwrap();
        assert_eq!(c.interval, None);
        assert_eq!(c.verdict(Better::Higher), Verdict::NeedRepeats);
        assert!((c.ratio - 2.0).abs() < 0.02);
        assert_eq!(Verdict::NeedRepeats.word(), "need \u{2265} 4 repeats");
        // One repeat a side: a ratio and no verdict.
        let one = compare_repeats(&[100.0], &[150.0]).unwrap();
        assert!((one.ratio - 1.5).abs() < 1e-12 && one.interval.is_none());
        // 4 a side decide; so do 3 against 5 (2 / C(8,3) = 3.6%).
        let four = compare_repeats(&[100.0, 101.0, 99.0, 100.5], &[200.0, 201.0, 199.0, 200.0]);
        assert_eq!(four.unwrap().verdict(Better::Higher), Verdict::Faster);
        let uneven = compare_repeats(&[100.0, 101.0, 99.0], &[90.0, 91.0, 89.0, 90.5, 90.2]);
        assert_eq!(uneven.unwrap().verdict(Better::Higher), Verdict::Slower);
        // No figure: nothing to compare.
        assert_eq!(compare_repeats(&[], &[1.0]), None);
        assert_eq!(compare_repeats(&[0.0, 1.0], &[1.0]), None);
    }

    #[test]
    fn latency_is_better_lower_and_the_gate_needs_the_whole_interval_past_its_limit() {
        let base = [100.0, 102.0, 98.0, 101.0, 99.0];
        let worse: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let c = compare_repeats(&base, &worse).unwrap();
        assert_eq!(c.verdict(Better::Lower), Verdict::Slower);
        assert_eq!(c.verdict(Better::Higher), Verdict::Faster);
        assert!(c.worse_by_more_than(Better::Lower, 0.05));
        assert!(!c.worse_by_more_than(Better::Higher, 0.05));
        // Throughput 10% down, the interval about [-13%, -7%]: slower, past
        // a 5% gate, within a 10% one (the interval reaches above -10%).
        let down: Vec<f64> = base.iter().map(|x| x * 0.9).collect();
        let c = compare_repeats(&base, &down).unwrap();
        let i = c.interval.unwrap();
        assert!(i.low < 0.9 && 0.9 < i.high && i.high < 0.95, "{i:?}");
        assert_eq!(c.verdict(Better::Higher), Verdict::Slower);
        assert!(c.worse_by_more_than(Better::Higher, 0.05));
        assert!(!c.worse_by_more_than(Better::Higher, 0.10));
    }

    #[test]
    fn identical_repeats_are_no_difference() {
        let same = [500.0; 5];
        let c = compare_repeats(&same, &same).unwrap();
        assert_eq!(c.ratio, 1.0);
        assert_eq!(c.verdict(Better::Higher), Verdict::NoDifference);
    }

    #[test]
    fn intervals_cover_the_true_ratio_about_95_percent_of_the_time() {
        for (what, seed, n, m, noise, ratio) in [
            (
                "normal 5%, 5 a side, +10%",
                1,
                5,
                5,
                Noise::Normal(0.05),
                1.10,
            ),
            (
                "normal 5%, 4 a side, -20%",
                2,
                4,
                4,
                Noise::Normal(0.05),
                0.80,
            ),
            (
                "lognormal 25%, 5 a side, +30%",
                3,
                5,
                5,
                Noise::Lognormal(0.25),
                1.30,
            ),
            (
                "lognormal 25%, 8 a side, -5%",
                4,
                8,
                8,
                Noise::Lognormal(0.25),
                0.95,
            ),
            (
                "lognormal 25%, 4 against 6, 1.0",
                5,
                4,
                6,
                Noise::Lognormal(0.25),
                1.0,
            ),
            (
                "this machine's spread, 5 a side, +15%",
                6,
                5,
                5,
                Noise::Observed,
                1.15,
            ),
            (
                "this machine's spread, 10 a side, -10%",
                7,
                10,
                10,
                Noise::Observed,
                0.90,
            ),
        ] {
            assert_covers(what, &simulate(seed, RUNS, n, m, noise, ratio));
        }
    }

    #[test]
    fn identical_distributions_are_no_difference_about_95_percent_of_the_time() {
        for (what, seed, n, noise) in [
            ("normal 5%", 11, 5, Noise::Normal(0.05)),
            ("lognormal 25%", 12, 5, Noise::Lognormal(0.25)),
            ("this machine's spread", 13, 6, Noise::Observed),
        ] {
            let o = simulate(seed, RUNS, n, n, noise, 1.0);
            let rate = o.same as f64 / RUNS as f64;
            eprintln!(
                "{what}, identical: ~ in {:.1}% of {RUNS} ({} faster, {} slower)",
                rate * 100.0,
                o.faster,
                o.slower
            );
            assert!(
                (0.93..=0.99).contains(&rate),
                "{what}: '~' in {:.1}% of {RUNS}",
                rate * 100.0
            );
            // The errors split evenly between the two wrong verdicts.
            assert!(
                o.faster.abs_diff(o.slower) < 40,
                "{what}: {} {}",
                o.faster,
                o.slower
            );
        }
    }

    #[test]
    fn a_real_20_percent_gain_with_5_repeats_at_5_percent_noise_is_faster() {
        // The exact test's power here is about 99% (a verdict needs at most
        // 2 of the 25 pairs out of order): at least 97% of 2000.
        let o = simulate(21, RUNS, 5, 5, Noise::Normal(0.05), 1.20);
        eprintln!(
            "+20% at 5% noise, 5 a side: faster in {} of {RUNS}",
            o.faster
        );
        assert!(
            o.faster >= RUNS * 97 / 100,
            "faster in {} of {RUNS}",
            o.faster
        );
        assert_eq!(o.slower, 0);
        // And a 20% loss is slower.
        let o = simulate(22, RUNS, 5, 5, Noise::Normal(0.05), 1.0 / 1.20);
        assert!(
            o.slower >= RUNS * 97 / 100,
            "slower in {} of {RUNS}",
            o.slower
        );
        // Under this machine's ±25% spread, 5 repeats cannot see 5%: mostly "~".
        let o = simulate(23, RUNS, 5, 5, Noise::Observed, 1.05);
        assert!(o.same > RUNS * 80 / 100, "~ in {} of {RUNS}", o.same);
    }

    /// How large a change this machine's spread lets 5 and 10 repeats see
    /// (the figures docs/plans.md quotes): a 1.5x gain is found most of
    /// the time with 5 a side, and more often with 10.
    #[test]
    fn power_under_this_machines_spread() {
        let mut found = Vec::new();
        for (seed, n, ratio) in [(31, 5, 1.2), (32, 5, 1.5), (33, 10, 1.2), (34, 10, 1.5)] {
            let o = simulate(seed, RUNS, n, n, Noise::Observed, ratio);
            eprintln!(
                "this machine's spread, {n} a side, x{ratio}: faster in {:.1}% of {RUNS}",
                o.faster as f64 / RUNS as f64 * 100.0
            );
            found.push(o.faster);
        }
        assert!(found[1] > RUNS * 70 / 100, "{found:?}");
        assert!(found[2] > found[0] && found[3] >= found[1], "{found:?}");
    }

    /// The method before selection: every ratio materialised and sorted,
    /// U's distribution as a vector (n x m + 1 values, normal above
    /// EXACT_PAIRS) walked from 0.
    fn materialised(baseline: &[f64], candidate: &[f64]) -> RepeatComparison {
        let (n, m) = (baseline.len(), candidate.len());
        let mut diffs: Vec<f64> = Vec::with_capacity(n * m);
        for b in candidate {
            for a in baseline {
                diffs.push(b.ln() - a.ln());
            }
        }
        diffs.sort_by(f64::total_cmp);
        let pairs = diffs.len();
        let cdf: Vec<f64> = if pairs > EXACT_PAIRS {
            let mean = pairs as f64 / 2.0;
            let sd = (pairs as f64 * (n + m + 1) as f64 / 12.0).sqrt();
            (0..=pairs)
                .map(|u| normal_cdf((u as f64 + 0.5 - mean) / sd))
                .collect()
        } else {
            u_cdf(n, m)
        };
        let mut best = None;
        for (u, p) in cdf.iter().enumerate() {
            if *p <= 0.025 * (1.0 + 1e-9) {
                best = Some((u + 1, *p));
            } else {
                break;
            }
        }
        let interval = best
            .filter(|(k, _)| *k <= pairs.div_ceil(2))
            .map(|(k, tail)| Interval {
                low: diffs[k - 1].exp(),
                high: diffs[pairs - k].exp(),
                confidence: 1.0 - 2.0 * tail,
            });
        RepeatComparison {
            baseline_repeats: n,
            candidate_repeats: m,
            ratio: median_of_sorted(&diffs).exp(),
            interval,
        }
    }

    /// Selection gives exactly what sorting every ratio gave, on inputs
    /// the old method handled: small and unbalanced counts, ties, repeats
    /// spread over orders of magnitude, both sides of EXACT_PAIRS.
    #[test]
    fn selection_gives_exactly_what_sorting_every_ratio_gave() {
        let mut rng = SmallRng::seed_from_u64(44);
        let sizes = [1, 2, 3, 4, 5, 7, 10, 31, 50, 51, 64, 90, 200];
        for &n in &sizes {
            for &m in &sizes {
                for shape in 0..3 {
                    let draw = |rng: &mut SmallRng| -> f64 {
                        match shape {
                            // Ties: few distinct values.
                            0 => f64::from(rng.gen_range(1..=4u8)) * 100.0,
                            1 => 1000.0 * (1.0 + 0.05 * normal(rng)).abs().max(1e-3),
                            _ => 10f64.powf(rng.gen_range(-3.0..6.0)),
                        }
                    };
                    let a: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                    let b: Vec<f64> = (0..m).map(|_| 1.1 * draw(&mut rng)).collect();
                    let old = materialised(&a, &b);
                    let new = compare_repeats(&a, &b).unwrap();
                    assert_eq!(new, old, "n = {n}, m = {m}, shape {shape}");
                }
            }
        }
    }

    /// 20 000 repeats a side (400 million ratios, 3.2 GB as a list) in
    /// memory linear in the repeats, and quickly.
    #[test]
    fn many_repeats_a_side_take_linear_memory() {
        let mut rng = SmallRng::seed_from_u64(7);
        let a: Vec<f64> = (0..20_000).map(|_| 1000.0 + normal(&mut rng)).collect();
        let b: Vec<f64> = (0..20_000).map(|_| 1010.0 + normal(&mut rng)).collect();
        let began = std::time::Instant::now();
        let c = compare_repeats(&a, &b).unwrap();
        assert!((c.ratio - 1.01).abs() < 0.001, "{c:?}");
        assert_eq!(c.verdict(Better::Higher), Verdict::Faster);
        assert!(began.elapsed() < std::time::Duration::from_secs(20));
    }
}
