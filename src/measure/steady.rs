//! Steady state over a window of the last rounds, by one of two rules that
//! are easy to confuse and are kept apart on purpose:
//!
//! - SNIA's Solid State Storage Performance Test Specification: the range
//!   (max - min) within 20% of the window's mean and the best-fit line's
//!   excursion across the window within 10% of it.
//! - fio's `steadystate=`: `iops:N%` / `bw:N%` need every round within
//!   ±N% of the mean (the largest deviation from the mean, not the range);
//!   `iops_slope:N%` / `bw_slope:N%` need the least-squares slope per round
//!   within N% of the mean.

use serde::{Deserialize, Serialize};

/// The criterion: `window` rounds and the rule they must meet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyCriterion {
    pub window: usize,
    pub rule: SteadyRule,
}

/// Which rule a window is judged by; limits in % of the window's mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum SteadyRule {
    /// SNIA PTS: (max - min) <= `max_range_pct` and the best-fit line's
    /// |slope| x (window - 1) <= `max_slope_pct`.
    Snia {
        max_range_pct: f64,
        max_slope_pct: f64,
    },
    /// fio `iops:N%`: max |round - mean| <= `max_deviation_pct`; kvperf's
    /// optional `,slope:N%` adds SNIA's excursion limit.
    FioDeviation {
        max_deviation_pct: f64,
        max_slope_pct: Option<f64>,
    },
    /// fio `iops_slope:N%`: the best-fit line's |slope| per round <=
    /// `max_slope_per_round_pct` (fio's sample is a second; kvperf's a round).
    FioSlope { max_slope_per_round_pct: f64 },
}

impl Default for SteadyCriterion {
    /// SNIA PTS: a 5-round window, range within 20% and the best-fit line's
    /// excursion within 10% of the average.
    fn default() -> Self {
        Self {
            window: 5,
            rule: SteadyRule::Snia {
                max_range_pct: 20.0,
                max_slope_pct: 10.0,
            },
        }
    }
}

/// What the check found, and by which rule (`None` in results written
/// before the rule was recorded, which all used a range limit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Steadiness {
    /// The window ending at `round` (1-based) met the criterion.
    Steady {
        round: usize,
        range_pct: f64,
        slope_pct: f64,
        #[serde(default)]
        deviation_pct: Option<f64>,
        #[serde(default)]
        rule: Option<SteadyRule>,
    },
    /// No window met it; figures of the last one.
    NotSteady {
        range_pct: f64,
        slope_pct: f64,
        #[serde(default)]
        deviation_pct: Option<f64>,
        #[serde(default)]
        rule: Option<SteadyRule>,
    },
    /// Fewer rounds than the window.
    TooFewRounds { rounds: usize, window: usize },
}

/// A window's figures, in % of its mean.
#[derive(Debug, Clone, Copy, PartialEq)]
struct WindowFigures {
    range_pct: f64,
    deviation_pct: f64,
    /// Best-fit excursion across the window: |slope| x (window - 1).
    slope_pct: f64,
}

impl SteadyCriterion {
    /// Parses `snia`, or fio's `iops:N%`, `bw:N%`, `iops_slope:N%`,
    /// `bw_slope:N%`, each with an optional `,window:N`; `iops:N%` and
    /// `bw:N%` also take `,slope:N%` (SNIA's excursion). The precondition's
    /// blocks are all 4 KiB, so `bw` and `iops` judge the same rounds.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.split(',');
        let first = parts.next().unwrap_or("").trim();
        let mut c = if first == "snia" {
            Self::default()
        } else {
            let (metric, limit) = first.split_once(':').ok_or_else(|| {
                format!("'{text}' is not snia or METRIC:N% (e.g. iops:5%, iops_slope:2%)")
            })?;
            let limit = percent(limit)?;
            let rule = match metric.trim() {
                "iops" | "bw" => SteadyRule::FioDeviation {
                    max_deviation_pct: limit,
                    max_slope_pct: None,
                },
                "iops_slope" | "bw_slope" => SteadyRule::FioSlope {
                    max_slope_per_round_pct: limit,
                },
                other => {
                    return Err(format!(
                        "metric '{other}' is not iops, bw, iops_slope or bw_slope"
                    ))
                }
            };
            Self { window: 5, rule }
        };
        for part in parts {
            match (part.split_once(':'), &mut c.rule) {
                (Some(("slope", v)), SteadyRule::FioDeviation { max_slope_pct, .. }) => {
                    *max_slope_pct = Some(percent(v)?)
                }
                (Some(("window", v)), _) => {
                    c.window =
                        v.trim().parse().ok().filter(|w| *w >= 2).ok_or_else(|| {
                            format!("window '{v}' is not a count of 2 or more rounds")
                        })?
                }
                (Some(("slope", _)), _) => {
                    return Err(format!("'{part}' goes only with iops:N% or bw:N%"))
                }
                _ => return Err(format!("'{part}' is not slope:N% or window:N")),
            }
        }
        Ok(c)
    }

    fn meets(&self, f: &WindowFigures) -> bool {
        match self.rule {
            SteadyRule::Snia {
                max_range_pct,
                max_slope_pct,
            } => f.range_pct <= max_range_pct && f.slope_pct <= max_slope_pct,
            SteadyRule::FioDeviation {
                max_deviation_pct,
                max_slope_pct,
            } => {
                f.deviation_pct <= max_deviation_pct
                    && max_slope_pct.is_none_or(|s| f.slope_pct <= s)
            }
            SteadyRule::FioSlope {
                max_slope_per_round_pct,
            } => f.slope_pct / (self.window - 1) as f64 <= max_slope_per_round_pct,
        }
    }

    /// Checks `series` (one figure per round, in order): the first window
    /// that meets the criterion, else the last window's figures.
    pub fn check(&self, series: &[f64]) -> Steadiness {
        if series.len() < self.window {
            return Steadiness::TooFewRounds {
                rounds: series.len(),
                window: self.window,
            };
        }
        for end in self.window..=series.len() {
            let f = window_figures(&series[end - self.window..end]);
            if self.meets(&f) {
                return Steadiness::Steady {
                    round: end,
                    range_pct: f.range_pct,
                    slope_pct: f.slope_pct,
                    deviation_pct: Some(f.deviation_pct),
                    rule: Some(self.rule),
                };
            }
        }
        let f = window_figures(&series[series.len() - self.window..]);
        Steadiness::NotSteady {
            range_pct: f.range_pct,
            slope_pct: f.slope_pct,
            deviation_pct: Some(f.deviation_pct),
            rule: Some(self.rule),
        }
    }
}

impl SteadyRule {
    /// "SNIA: range <= 20%, slope <= 10%" / "fio iops: every round within ±5% of the mean".
    pub fn describe(&self) -> String {
        match self {
            SteadyRule::Snia {
                max_range_pct,
                max_slope_pct,
            } => format!("SNIA: range <= {max_range_pct}%, slope <= {max_slope_pct}%"),
            SteadyRule::FioDeviation {
                max_deviation_pct,
                max_slope_pct,
            } => {
                let slope = max_slope_pct.map_or(String::new(), |s| format!(", slope <= {s}%"));
                format!("fio: every round within ±{max_deviation_pct}% of the mean{slope}")
            }
            SteadyRule::FioSlope {
                max_slope_per_round_pct,
            } => format!("fio: slope <= {max_slope_per_round_pct}% of the mean per round"),
        }
    }
}

impl Steadiness {
    /// "steady after round 4 (fio: ...; deviation 3%)" / "not steady (SNIA: ...): range 30%, slope 4%".
    pub fn describe(&self) -> String {
        match self {
            Steadiness::Steady {
                round,
                range_pct,
                slope_pct,
                deviation_pct,
                rule,
            } => match rule {
                Some(rule) => format!(
                    "steady after round {round} ({}; {})",
                    rule.describe(),
                    figures_text(rule, *range_pct, *slope_pct, *deviation_pct)
                ),
                None => format!("steady after round {round} (range {range_pct:.0}%)"),
            },
            Steadiness::NotSteady {
                range_pct,
                slope_pct,
                deviation_pct,
                rule,
            } => match rule {
                Some(rule) => format!(
                    "not steady ({}): {}",
                    rule.describe(),
                    figures_text(rule, *range_pct, *slope_pct, *deviation_pct)
                ),
                None => format!("not steady: range {range_pct:.0}%, slope {slope_pct:.0}%"),
            },
            Steadiness::TooFewRounds { rounds, window } => {
                format!("steadiness unknown: {rounds} rounds, the window needs {window}")
            }
        }
    }
}

/// The figures a rule judges, as found.
fn figures_text(rule: &SteadyRule, range: f64, slope: f64, deviation: Option<f64>) -> String {
    let deviation = deviation.unwrap_or(f64::NAN);
    match rule {
        SteadyRule::Snia { .. } => format!("range {range:.0}%, slope {slope:.0}%"),
        SteadyRule::FioDeviation {
            max_slope_pct: None,
            ..
        } => format!("deviation {deviation:.1}%"),
        SteadyRule::FioDeviation { .. } => {
            format!("deviation {deviation:.1}%, slope {slope:.0}%")
        }
        SteadyRule::FioSlope { .. } => format!("slope {slope:.1}% across the window"),
    }
}

/// Range, largest deviation from the mean and best-fit excursion of a
/// window, in % of its mean.
fn window_figures(w: &[f64]) -> WindowFigures {
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    if mean == 0.0 || w.is_empty() {
        return WindowFigures {
            range_pct: f64::INFINITY,
            deviation_pct: f64::INFINITY,
            slope_pct: f64::INFINITY,
        };
    }
    let max = w.iter().copied().fold(f64::MIN, f64::max);
    let min = w.iter().copied().fold(f64::MAX, f64::min);
    let x_mean = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in w.iter().enumerate() {
        let dx = i as f64 - x_mean;
        sxy += dx * (y - mean);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    // Scaled by 100 before dividing, so 15 from a mean of 100 is exactly 15%.
    let pct = |v: f64| v * 100.0 / mean.abs();
    WindowFigures {
        range_pct: pct(max - min),
        deviation_pct: pct((max - mean).max(mean - min)),
        slope_pct: pct((slope * (n - 1.0)).abs()),
    }
}

fn percent(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("'{text}' is not a percentage above 0 (e.g. 5%)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snia(window: usize, range: f64, slope: f64) -> SteadyCriterion {
        SteadyCriterion {
            window,
            rule: SteadyRule::Snia {
                max_range_pct: range,
                max_slope_pct: slope,
            },
        }
    }

    #[test]
    fn a_settling_series_is_steady_from_the_first_good_window() {
        // A fresh drive: fast at first, settling around 1000 from round 4 on.
        let series = [5000.0, 2500.0, 1300.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0];
        match snia(4, 5.0, 10.0).check(&series) {
            Steadiness::Steady {
                round, range_pct, ..
            } => {
                assert_eq!(round, 7, "rounds 4-7 are the first calm window");
                assert!(range_pct < 2.5, "{range_pct}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_noisy_or_drifting_series_is_not_steady() {
        let noisy = [1000.0, 1180.0, 920.0, 1100.0, 950.0, 1150.0];
        let c = SteadyCriterion::default();
        match c.check(&noisy) {
            Steadiness::NotSteady { range_pct, .. } => assert!(range_pct > 20.0, "{range_pct}"),
            other => panic!("{other:?}"),
        }
        // Inside a 20% range, but sliding down 3% a round: the slope fails it.
        let drifting = [1100.0, 1067.0, 1034.0, 1001.0, 968.0];
        match c.check(&drifting) {
            Steadiness::NotSteady {
                slope_pct,
                range_pct,
                ..
            } => {
                assert!(
                    range_pct < 20.0 && slope_pct > 10.0,
                    "{range_pct} {slope_pct}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            c.check(&[1.0, 2.0]),
            Steadiness::TooFewRounds {
                rounds: 2,
                window: 5
            }
        );
    }

    #[test]
    fn fio_iops_percent_is_a_deviation_from_the_mean_not_a_range() {
        // Mean 100; every round within ±15%, but the range is 30%.
        let series = [85.0, 115.0, 100.0, 95.0, 105.0];
        let fio = SteadyCriterion::parse("iops:15%").unwrap();
        match fio.check(&series) {
            Steadiness::Steady {
                round,
                range_pct,
                deviation_pct,
                rule,
                ..
            } => {
                assert_eq!(round, 5);
                assert_eq!((range_pct, deviation_pct), (30.0, Some(15.0)));
                assert_eq!(
                    rule,
                    Some(fio.rule),
                    "the result says which rule was applied"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            SteadyCriterion::parse("iops:14%").unwrap().check(&series),
            Steadiness::NotSteady { .. }
        ));
        // SNIA's range rule at the same 15% says no: the range is 30%.
        assert!(matches!(
            snia(5, 15.0, 10.0).check(&series),
            Steadiness::NotSteady { .. }
        ));
    }

    #[test]
    fn fio_slope_form_limits_the_slope_per_round() {
        // Sliding 3% of the mean a round: excursion 12% over 5 rounds.
        let drifting = [1060.0, 1030.0, 1000.0, 970.0, 940.0];
        let at = |text: &str| SteadyCriterion::parse(text).unwrap().check(&drifting);
        assert!(matches!(at("iops_slope:3.5%"), Steadiness::Steady { .. }));
        assert!(matches!(at("bw_slope:2.5%"), Steadiness::NotSteady { .. }));
        // kvperf's ",slope:N%" on the fio form limits the excursion.
        assert!(matches!(at("iops:7%"), Steadiness::Steady { .. }));
        assert!(matches!(
            at("iops:7%,slope:10%"),
            Steadiness::NotSteady { .. }
        ));
    }

    #[test]
    fn criteria_parse_like_fio() {
        let c = SteadyCriterion::parse("iops:5%").unwrap();
        assert_eq!(c.window, 5);
        assert_eq!(
            c.rule,
            SteadyRule::FioDeviation {
                max_deviation_pct: 5.0,
                max_slope_pct: None
            }
        );
        let c = SteadyCriterion::parse("bw:10%,slope:3%,window:4").unwrap();
        assert_eq!(c.window, 4);
        assert_eq!(
            c.rule,
            SteadyRule::FioDeviation {
                max_deviation_pct: 10.0,
                max_slope_pct: Some(3.0)
            }
        );
        assert_eq!(
            SteadyCriterion::parse("snia").unwrap(),
            SteadyCriterion::default()
        );
        for bad in [
            "iops",
            "iops:-1%",
            "iops:5%,window:1",
            "ops:5%",
            "iops_slope:2%,slope:3%",
            "snia,slope:3%",
        ] {
            assert!(SteadyCriterion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_description_names_the_rule() {
        let series = [85.0, 115.0, 100.0, 95.0, 105.0];
        let fio = SteadyCriterion::parse("iops:15%").unwrap().check(&series);
        assert_eq!(
            fio.describe(),
            "steady after round 5 (fio: every round within ±15% of the mean; deviation 15.0%)"
        );
        assert_eq!(
            snia(5, 20.0, 10.0).check(&series).describe(),
            "not steady (SNIA: range <= 20%, slope <= 10%): range 30%, slope 8%"
        );
        // A result written before the rule was recorded still reads.
        let old: Steadiness =
            serde_json::from_str(r#"{"outcome":"not_steady","range_pct":18.2,"slope_pct":4.0}"#)
                .unwrap();
        assert_eq!(old.describe(), "not steady: range 18%, slope 4%");
    }
}
