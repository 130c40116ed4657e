//! Steady state, as SNIA's Solid State Storage Performance Test
//! Specification defines it and fio's `steadystate=` checks it: over a
//! window of the last rounds, the measured figure's range and the slope of
//! its least-squares line both stay within a fraction of its mean.

use serde::{Deserialize, Serialize};

/// The criterion: `window` rounds, range and slope limits in % of the mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyCriterion {
    pub window: usize,
    /// Largest (max - min) over the window, in % of the window's mean
    /// (SNIA: 20%; fio's `iops:N%` form checks the same "range").
    pub max_range_pct: f64,
    /// Largest |slope| x (window - 1) of the best-fit line, in % of the
    /// mean: how much the figure drifts across the window (SNIA: 10%).
    pub max_slope_pct: f64,
}

impl Default for SteadyCriterion {
    /// SNIA PTS: a 5-round window, range within 20% and the best-fit line's
    /// excursion within 10% of the average.
    fn default() -> Self {
        Self {
            window: 5,
            max_range_pct: 20.0,
            max_slope_pct: 10.0,
        }
    }
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Steadiness {
    /// The window ending at `round` (1-based) met the criterion.
    Steady {
        round: usize,
        range_pct: f64,
        slope_pct: f64,
    },
    /// No window met it; figures of the last one.
    NotSteady { range_pct: f64, slope_pct: f64 },
    /// Fewer rounds than the window.
    TooFewRounds { rounds: usize, window: usize },
}

impl SteadyCriterion {
    /// Parses fio-style text: `iops:5%` (range) or `iops:5%,slope:10%,window:4`.
    /// The metric name is kept by the caller; here only the limits count.
    pub fn parse(text: &str) -> Result<(String, Self), String> {
        let mut parts = text.split(',');
        let first = parts.next().unwrap_or("");
        let (metric, range) = first
            .split_once(':')
            .ok_or_else(|| format!("'{text}' is not METRIC:N% (e.g. iops:5%)"))?;
        let mut c = Self {
            max_range_pct: percent(range)?,
            ..Self::default()
        };
        for part in parts {
            match part.split_once(':') {
                Some(("slope", v)) => c.max_slope_pct = percent(v)?,
                Some(("window", v)) => {
                    c.window =
                        v.trim().parse().ok().filter(|w| *w >= 2).ok_or_else(|| {
                            format!("window '{v}' is not a count of 2 or more rounds")
                        })?
                }
                _ => return Err(format!("'{part}' is not slope:N% or window:N")),
            }
        }
        Ok((metric.trim().to_string(), c))
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
        let mut last = (0.0, 0.0);
        for end in self.window..=series.len() {
            let w = &series[end - self.window..end];
            let (range_pct, slope_pct) = window_figures(w);
            if range_pct <= self.max_range_pct && slope_pct <= self.max_slope_pct {
                return Steadiness::Steady {
                    round: end,
                    range_pct,
                    slope_pct,
                };
            }
            last = (range_pct, slope_pct);
        }
        Steadiness::NotSteady {
            range_pct: last.0,
            slope_pct: last.1,
        }
    }
}

impl Steadiness {
    /// "steady after round 4" / "not steady: range 18%, slope 9%".
    pub fn describe(&self) -> String {
        match self {
            Steadiness::Steady {
                round, range_pct, ..
            } => {
                format!("steady after round {round} (range {range_pct:.0}%)")
            }
            Steadiness::NotSteady {
                range_pct,
                slope_pct,
            } => format!("not steady: range {range_pct:.0}%, slope {slope_pct:.0}%"),
            Steadiness::TooFewRounds { rounds, window } => {
                format!("steadiness unknown: {rounds} rounds, the window needs {window}")
            }
        }
    }
}

/// Range and best-fit excursion of a window, in % of its mean.
fn window_figures(w: &[f64]) -> (f64, f64) {
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return (f64::INFINITY, f64::INFINITY);
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
    (
        (max - min) / mean.abs() * 100.0,
        (slope * (n - 1.0)).abs() / mean.abs() * 100.0,
    )
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

    #[test]
    fn a_settling_series_is_steady_from_the_first_good_window() {
        // A fresh drive: fast at first, settling around 1000 from round 4 on.
        let series = [5000.0, 2500.0, 1300.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0];
        let c = SteadyCriterion {
            window: 4,
            max_range_pct: 5.0,
            max_slope_pct: 10.0,
        };
        match c.check(&series) {
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
    fn criteria_parse_like_fio() {
        let (metric, c) = SteadyCriterion::parse("iops:5%").unwrap();
        assert_eq!(metric, "iops");
        assert_eq!((c.window, c.max_range_pct, c.max_slope_pct), (5, 5.0, 10.0));
        let (_, c) = SteadyCriterion::parse("ops:10%,slope:3%,window:4").unwrap();
        assert_eq!((c.window, c.max_range_pct, c.max_slope_pct), (4, 10.0, 3.0));
        assert!(SteadyCriterion::parse("iops").is_err());
        assert!(SteadyCriterion::parse("iops:-1%").is_err());
        assert!(SteadyCriterion::parse("iops:5%,window:1").is_err());
        let d = Steadiness::NotSteady {
            range_pct: 18.2,
            slope_pct: 4.0,
        };
        assert_eq!(d.describe(), "not steady: range 18%, slope 4%");
    }
}
