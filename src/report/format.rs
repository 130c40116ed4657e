//! How figures and comparisons are written: numbers with thousands
//! separators, improvements as the briefs write them (percent, or ratios as
//! seed 004 does), and the sentences that explain how they were computed.

use super::citations::{self, Section};
use super::model::{self, Study, WorkloadView};
use crate::measure::stats::{Better, RepeatComparison, MIN_REPEATS};

/// A repeat spread (max - min over the mean) above this is flagged.
pub const SPREAD_FLAG_PCT: f64 = 10.0;

/// How the columns marked "95% CI, verdict" are computed, in a sentence.
pub const CONFIDENCE_TEXT: &str = "Columns marked \"95% CI, verdict\" judge each comparison over \
    the repeats, whole repeats as the unit: the change is the median of the ratios of every repeat \
    of one cell to every repeat of the other, in brackets its 95% confidence interval (exact, \
    from the Mann-Whitney distribution), then the verdict: faster or slower when the interval \
    leaves out no change (for latency, faster is lower), ~ when it holds it (no difference at \
    95%); latency from each repeat's own histogram. Deciding at 95% takes at least 4 repeats of \
    each cell (docs/semantics.md, \"Comparisons over repeats\").";

/// Percent ("+44%", "51% lower") or ratios ("3.0x"), as the plan asks.
pub struct Style {
    ratios: bool,
}

impl Style {
    pub fn of(study: &Study) -> Self {
        Self {
            ratios: study.ratios,
        }
    }

    /// A throughput improvement of `pct` percent.
    /// As a ratio, a loss is "1.3x lower", never "0.8x".
    pub fn gain(&self, pct: Option<f64>) -> String {
        match (self.ratios, pct) {
            (true, Some(p)) if p > -100.0 => match 1.0 + p / 100.0 {
                r if r >= 1.0 => times(r),
                r => format!("{} lower", times(1.0 / r)),
            },
            _ => percent(pct),
        }
    }

    /// A latency comparison from the ratio baseline / candidate: "2.9x
    /// lower" or "1.3x higher" as a ratio, never "0.8x".
    pub fn latency(&self, ratio: Option<f64>) -> String {
        match (self.ratios, ratio) {
            (true, Some(r)) if r > 0.0 && r.is_finite() => {
                if r >= 1.0 {
                    format!("{} lower", times(r))
                } else {
                    format!("{} higher", times(1.0 / r))
                }
            }
            _ => lower_ratio(ratio),
        }
    }

    /// A latency comparison from its "% lower", (B - A) / B: the same
    /// words as [`Style::latency`] ("51% lower", "2.0x").
    pub fn latency_lower_pct(&self, pct: Option<f64>) -> String {
        self.latency(pct.filter(|p| *p < 100.0).map(|p| 100.0 / (100.0 - p)))
    }

    /// How the report compares, in one paragraph.
    pub fn method(&self, study: &Study) -> String {
        let names = study
            .series
            .iter()
            .map(|s| format!("**{s}**"))
            .collect::<Vec<_>>()
            .join(", ");
        let first = study.series.first().map_or("-", String::as_str);
        if study.series.len() < 2 {
            return format!(
                "Configuration: {names}. With repeats, throughput is their mean and latency \
                 comes from their histograms added together. {PERCENTILE_TEXT}"
            );
        }
        let throughput = if self.ratios {
            format!(
                "throughput as the ratio A / B (\"3.0x\", a loss as \"1.3x lower\"), latency as \
                 the ratio B / A (\"2.9x lower\", a loss as \"1.3x higher\"){}",
                citations::cite(study, Section::RatioVoice)
            )
        } else {
            format!(
                "throughput as (A - B) / B (as a ratio, \"2.1x\", above +100%), latency as \
                 \"X% lower\", (B - A) / B (\"Nx lower\" beyond 90%, so never \"100% lower\"){}",
                citations::cite(study, Section::PercentVoice)
            )
        };
        format!(
            "Configurations: {names}. Improvements are {first}'s over each other configuration, \
             per thread count: {throughput}. The average improvement across thread counts is the \
             arithmetic mean of the per-thread-count throughput improvements, and the average \
             latency comparison the arithmetic mean of the per-thread-count \"% lower\" (as SSD \
             vendors' briefs compute both); beside it, labelled, kvperf's geometric mean of the \
             per-thread-count ratios B / A, in which a 2x gain and a 2x loss cancel. The largest \
             p99 improvement is the largest per-thread-count p99 \"% lower\" and its thread \
             count{}. An advantage at each one's peak compares each configuration at its own best \
             thread count (so at different thread counts when the peaks differ), peak throughput \
             against peak throughput and the latency at each one's peak{}. {CONFIDENCE_TEXT} \
             {PERCENTILE_TEXT}",
            citations::cite(study, Section::LargestP99),
            citations::cite(study, Section::AdvantageAtPeaks),
        )
    }

    /// The paragraph comparing the first series with series `b` on `w`.
    pub fn comparison_text(&self, study: &Study, w: &WorkloadView, b: usize) -> String {
        let c = model::compare(&w.points[0], &w.points[b]);
        let (a_name, b_name) = (&study.series[0], &study.series[b]);
        let peak_text = |p: Option<(u64, f64)>, series: usize| {
            p.map_or("-".into(), |(t, v)| {
                let paced = w.points[series]
                    .get(&t)
                    .map_or(String::new(), super::pacing::mark);
                format!("**{}**{paced} ops/s at {t} threads", ops(v))
            })
        };
        // Peaks are compared where each one is, which need not be one thread count.
        let apart = match (c.peak_candidate, c.peak_baseline) {
            (Some((ta, _)), Some((tb, _))) if ta != tb => {
                format!(" (at different thread counts, {ta} and {tb})")
            }
            _ => String::new(),
        };
        let mut text = format!(
            "{a_name} vs {b_name}. Peak: {a_name} {}, {b_name} {}: peak improvement **{}**{apart}.",
            peak_text(c.peak_candidate, 0),
            peak_text(c.peak_baseline, b),
            self.gain(c.peak_improvement),
        );
        // No thread count in common: no average to state.
        // One thread count in common: its improvement is the peak's, said once.
        if c.per_thread.len() > 1 {
            text.push_str(&format!(
                " Average improvement across {} thread counts: **{}**.",
                c.per_thread.len(),
                self.gain(c.average_improvement),
            ));
        }
        if let (Some((t0, lo)), Some((t1, hi))) = (c.min_improvement, c.max_improvement) {
            if c.per_thread.len() > 1 {
                text.push_str(&format!(
                    " Largest improvement {} at {t1} threads; per thread count from {} at {t0} threads to {} at {t1}.",
                    self.gain(Some(hi)),
                    self.gain(Some(lo)),
                    self.gain(Some(hi)),
                ));
            }
        }
        let op = w.latency_op.map_or("", |o| o.name());
        for (what, ratios, mean) in [
            ("Average", &c.latency_avg_ratios, c.latency_avg_lower_pct),
            ("p99", &c.latency_p99_ratios, c.latency_p99_lower_pct),
        ] {
            if ratios.is_empty() {
                continue;
            }
            if let [(t, ratio)] = ratios[..] {
                text.push_str(&format!(
                    " {what} {op} latency at {t} {}: **{}**",
                    if t == 1 { "thread" } else { "threads" },
                    self.latency(Some(ratio)),
                ));
            } else {
                text.push_str(&format!(
                    " {what} {op} latency across {} thread counts: **{}** (arithmetic mean \
                     of the per-thread-count % lower, as vendors' briefs compute it; geometric \
                     mean of the ratios: {})",
                    ratios.len(),
                    self.latency_lower_pct(mean),
                    self.latency(model::geometric_mean(ratios)),
                ));
            }
            if ratios.len() > 1 {
                let lo = ratios.iter().min_by(|x, y| x.1.total_cmp(&y.1)).copied();
                let hi = ratios.iter().max_by(|x, y| x.1.total_cmp(&y.1)).copied();
                if let (Some((t0, r0)), Some((t1, r1))) = (lo, hi) {
                    text.push_str(&format!(
                        "; per thread count from {} at {t0} threads to {} at {t1}",
                        self.latency(Some(r0)),
                        self.latency(Some(r1))
                    ));
                }
            }
            text.push('.');
        }
        if let Some((t, pct)) = c.max_p99_improvement {
            text.push_str(&format!(
                " Largest p99 {op} latency improvement: **{}** at {t} threads.",
                self.latency_lower_pct(Some(pct))
            ));
        }
        if let (Some((ta, _)), Some((tb, _))) = (c.peak_candidate, c.peak_baseline) {
            if !c.latency_at_peaks.is_empty() {
                let each = c
                    .latency_at_peaks
                    .iter()
                    .map(|(o, r)| format!("{} {}", o.name(), self.latency(Some(*r))))
                    .collect::<Vec<_>>()
                    .join(", ");
                text.push_str(&format!(
                    " At each one's peak ({a_name} {ta} threads, {b_name} {tb}): throughput {}, \
                     average latency {each}.",
                    self.gain(c.peak_improvement)
                ));
            }
        }
        text
    }
}

pub use super::numbers::ops;

/// A change from a ratio new / old: "+12%", "-3.4%" (a decimal under 10%),
/// "0.0%"; above +100% as a ratio ("2.1x").
pub fn change(ratio: f64) -> String {
    let pct = (ratio - 1.0) * 100.0;
    if pct > 100.0 {
        times(ratio)
    } else if pct.abs() < 0.05 {
        "0.0%".into()
    } else if pct.abs() < 9.95 {
        format!("{pct:+.1}%")
    } else {
        format!("{pct:+.0}%")
    }
}

/// A change and its interval in one unit: percent ("+12% [+5.0%, +19%]")
/// unless any of the three is beyond +100%, then ratios ("2.40x [1.09x,
/// 5.90x]"), so an interval never reads "[+8.9%, 5.9x]".
pub fn change_in_one_unit(ratio: f64, low: f64, high: f64) -> (String, String) {
    // change() itself turns to a ratio beyond +100%.
    if ratio.max(low).max(high) > 2.0 {
        let factor = |r: f64| match r {
            r if r < 9.995 => format!("{r:.2}x"),
            r => times(r),
        };
        (
            factor(ratio),
            format!("[{}, {}]", factor(low), factor(high)),
        )
    } else {
        (
            change(ratio),
            format!("[{}, {}]", change(low), change(high)),
        )
    }
}

/// A comparison over repeats, in one cell: the change, its 95% confidence
/// interval and the verdict ("+12% [+5.0%, +19%] faster", "-0.4% [-2.1%,
/// +1.3%] ~"), or what is missing to judge ("need ≥ 4 repeats (have 1
/// and 1)"); "-" with nothing to compare.
pub fn confidence(c: Option<&RepeatComparison>, better: Better) -> String {
    let Some(c) = c else {
        return "-".into();
    };
    match c.interval {
        Some(i) => {
            let (head, bracket) = change_in_one_unit(c.ratio, i.low, i.high);
            format!("{head} {bracket} {}", c.verdict(better).word())
        }
        None => format!(
            "need \u{2265} {MIN_REPEATS} repeats (have {} and {})",
            c.candidate_repeats, c.baseline_repeats
        ),
    }
}

/// A latency in microseconds ("12.5", "1,204"); from 10 ms on in
/// milliseconds with the unit ("12.5 ms"), so a tail is not read as a
/// five-digit microsecond count.
pub fn micros(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else if v < MS_FROM_US {
        ops(v)
    } else {
        // Tenths of a ms, the whole part grouped as counts are: "3,068.1 ms".
        let tenths = (v / 100.0).round();
        format!("{}.{} ms", ops((tenths / 10.0).trunc()), tenths % 10.0)
    }
}

/// The mark on a percentile from too few operations to mean much.
pub const FEW_MARK: &str = "\u{b6}";

/// Percentile `q` of `count` operations, microseconds, marked with
/// [`FEW_MARK`] when they are too few for it (`measure::few_samples`).
pub fn percentile(us: f64, count: u64, q: f64) -> String {
    match crate::measure::few_samples::too_few(count, q) {
        true => format!("{} {FEW_MARK}", micros(us)),
        false => micros(us),
    }
}

/// The rank rule, for every report's method paragraph and under tables
/// with marked percentiles.
pub const PERCENTILE_TEXT: &str = "Percentiles are by nearest rank: percentile q of n \
    operations is the value at rank ceil(q x n) in order, from the histogram of every repeat's \
    successful operations added together (HdrHistogram, 3 significant digits), so of fewer \
    than 1/(1-q) operations (p99 under 100, p99.9 under 1,000) it is their maximum, marked \u{b6}.";

/// From this many microseconds (10 ms) on, latencies are shown in ms.
pub const MS_FROM_US: f64 = 10_000.0;

/// A ratio: "2.1x", "181x" from 10x on.
pub fn times(r: f64) -> String {
    if r < 9.95 {
        format!("{r:.1}x")
    } else {
        format!("{r:.0}x")
    }
}

/// A ratio new / old in the one comparison voice: the factor, at least
/// 1 ("1.82x", two decimals under 10), and whether new is more (true) or
/// less than old, so a caller writes "1.25x lower", never "0.80x"; None
/// for a ratio that is not a positive number.
pub fn relative(ratio: f64) -> Option<(String, bool)> {
    if !(ratio > 0.0 && ratio.is_finite()) {
        return None;
    }
    let (factor, more) = if ratio >= 1.0 {
        (ratio, true)
    } else {
        (1.0 / ratio, false)
    };
    let shown = if factor < 9.995 {
        format!("{factor:.2}x")
    } else {
        times(factor)
    };
    Some((shown, more))
}

/// An improvement in %: "+44%", "-13%"; above +100% as a ratio ("2.1x",
/// as seed 001 writes it), so a large gain never reads "+17958%" beside
/// a latency "20x lower".
pub fn percent(v: Option<f64>) -> String {
    match v {
        // Rounds to zero: no sign ("-0%" reads as a loss).
        Some(x) if x.abs() < 0.5 => "0%".into(),
        Some(x) if x > 100.0 => times(1.0 + x / 100.0),
        Some(x) => format!("{x:+.0}%"),
        None => "-".into(),
    }
}

/// A latency comparison from baseline / candidate: "51% lower", "8%
/// higher"; beyond 90% lower or 100% higher, as a ratio ("12x lower").
pub fn lower_ratio(ratio: Option<f64>) -> String {
    let Some(r) = ratio.filter(|r| *r > 0.0 && r.is_finite()) else {
        return "-".into();
    };
    if r >= 1.0 {
        let lower = (1.0 - 1.0 / r) * 100.0;
        if lower >= 90.0 {
            format!("{} lower", times(r))
        } else if lower < 0.5 {
            "same".into()
        } else {
            format!("{lower:.0}% lower")
        }
    } else {
        let higher = (1.0 / r - 1.0) * 100.0;
        if higher >= 100.0 {
            format!("{} higher", times(1.0 / r))
        } else if higher < 0.5 {
            "same".into()
        } else {
            format!("{higher:.0}% higher")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confidence_cell_gives_change_interval_and_verdict() {
        use crate::measure::stats::compare_repeats;
        let base = [100.0, 101.0, 99.0, 100.0, 100.5];
        let gain: Vec<f64> = base.iter().map(|x| x * 1.12).collect();
        let c = compare_repeats(&base, &gain);
        let cell = confidence(c.as_ref(), Better::Higher);
        assert!(cell == "+12% [+11%, +13%] faster", "{cell}");
        assert_eq!(
            confidence(c.as_ref(), Better::Lower),
            cell.replace("faster", "slower")
        );
        let few = compare_repeats(&[1.0], &[2.0]);
        assert_eq!(
            confidence(few.as_ref(), Better::Higher),
            "need \u{2265} 4 repeats (have 1 and 1)"
        );
        assert_eq!(confidence(None, Better::Higher), "-");
        assert_eq!(change(1.0004), "0.0%");
        assert_eq!(change(0.966), "-3.4%");
        assert_eq!(change(3.0), "3.0x");
        // An interval in one unit, whichever side crosses +100%.
        assert_eq!(
            change_in_one_unit(1.5, 1.089, 5.9),
            ("1.50x".to_string(), "[1.09x, 5.90x]".to_string())
        );
        assert_eq!(
            change_in_one_unit(1.2, 0.8, 1.9),
            ("+20%".to_string(), "[-20%, +90%]".to_string())
        );
        assert_eq!(
            change_in_one_unit(27.0, 10.0, 248.0),
            ("27x".to_string(), "[10x, 248x]".to_string())
        );
    }

    #[test]
    fn latencies_from_10_ms_are_in_ms() {
        assert_eq!(micros(12.34), "12.3");
        assert_eq!(micros(9_999.0), "9,999");
        assert_eq!(micros(10_000.0), "10.0 ms");
        assert_eq!(micros(1_234_567.0), "1,234.6 ms");
        assert_eq!(micros(3_068_149.0), "3,068.1 ms");
        assert_eq!(micros(10_999_999.0), "11,000.0 ms");
    }

    #[test]
    fn a_relative_ratio_is_never_under_one() {
        assert_eq!(relative(1.82), Some(("1.82x".into(), true)));
        assert_eq!(relative(0.8), Some(("1.25x".into(), false)));
        assert_eq!(relative(1.0), Some(("1.00x".into(), true)));
        assert_eq!(relative(0.01), Some(("100x".into(), false)));
        assert_eq!(relative(0.0), None);
        assert_eq!(relative(f64::NAN), None);
    }

    #[test]
    fn percentages_round_without_a_negative_zero() {
        assert_eq!(percent(Some(-0.04)), "0%");
        assert_eq!(percent(Some(43.9)), "+44%");
        assert_eq!(percent(Some(-12.6)), "-13%");
    }

    #[test]
    fn latency_never_reads_100_percent_lower() {
        assert_eq!(lower_ratio(Some(2.0)), "50% lower");
        assert_eq!(lower_ratio(Some(1.0 / 1.08)), "8% higher");
        assert_eq!(lower_ratio(Some(350.0)), "350x lower");
        assert_eq!(lower_ratio(Some(0.25)), "4.0x higher");
        assert_eq!(lower_ratio(Some(1.001)), "same");
        assert_eq!(lower_ratio(None), "-");
        let ratio = Style { ratios: true };
        assert_eq!(ratio.gain(Some(197.0)), "3.0x");
        assert_eq!(ratio.latency(Some(2.88)), "2.9x lower");
        assert_eq!(ratio.latency(Some(0.8)), "1.2x higher");
        assert_eq!(ratio.gain(Some(-20.0)), "1.2x lower", "never 0.8x");
    }

    #[test]
    fn gains_above_100_percent_are_ratios() {
        // Seed 001, readwhilewriting at 128 threads: 616,223 against
        // 300,580 ops/s, "maximum performance gain of 2.1x".
        let gain = model::improvement(616_223.0, 300_580.0);
        assert_eq!(percent(gain), "2.1x");
        let style = Style { ratios: false };
        assert_eq!(style.gain(gain), "2.1x");
        // A gain as large as the latency beside it: one style, no "+17958%".
        assert_eq!(percent(Some(17_958.0)), "181x");
        assert_eq!(lower_ratio(Some(20.0)), "20x lower");
        assert_eq!(percent(Some(100.0)), "+100%");
        assert_eq!(percent(Some(59.0)), "+59%");
        assert_eq!(percent(Some(-60.0)), "-60%");
        assert_eq!(Style { ratios: true }.gain(Some(17_958.0)), "181x");
    }

    #[test]
    fn a_mean_percent_lower_reads_like_a_latency_comparison() {
        let style = Style { ratios: false };
        assert_eq!(style.latency_lower_pct(Some(51.0)), "51% lower");
        assert_eq!(style.latency_lower_pct(Some(-25.0)), "25% higher");
        assert_eq!(style.latency_lower_pct(Some(95.0)), "20x lower");
        assert_eq!(style.latency_lower_pct(None), "-");
        assert_eq!(
            Style { ratios: true }.latency_lower_pct(Some(50.0)),
            "2.0x lower"
        );
    }
}
