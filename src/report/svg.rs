//! Line charts as inline SVG, written by hand: a few dozen points per
//! chart, axes with round ticks, one colour per series, a legend.

use super::document::escape;

const W: f64 = 600.0;
const H: f64 = 340.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 70.0;
const COLORS: [&str; 6] = [
    "#1f6fb4", "#e8702a", "#2b9e4a", "#c33c3c", "#8a5fb8", "#7a7a7a",
];

pub enum XAxis {
    /// Thread counts, evenly spaced as the briefs draw them.
    Categories(Vec<u64>),
    /// A numeric axis from 0 (ops/s in a QoS curve).
    Linear,
}

pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: XAxis,
    pub series: Vec<Series<'a>>,
}

impl Chart<'_> {
    pub fn render(&self) -> String {
        let (plot_w, plot_h) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let y_max = nice_ceiling(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(0.0, f64::max),
        );
        let x_max = match &self.x {
            XAxis::Categories(_) => 0.0,
            XAxis::Linear => nice_ceiling(
                self.series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.0))
                    .fold(0.0, f64::max),
            ),
        };
        let x_pos = |x: f64| -> f64 {
            match &self.x {
                XAxis::Categories(cats) => {
                    let i = cats.iter().position(|&c| c as f64 == x).unwrap_or(0) as f64;
                    LEFT + plot_w * (i + 0.5) / cats.len().max(1) as f64
                }
                XAxis::Linear => LEFT + plot_w * x / x_max,
            }
        };
        let y_pos = |y: f64| TOP + plot_h * (1.0 - y / y_max);
        let mut svg = format!(
            "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\
             <title>{t}</title><text x=\"{cx}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{t}</text>",
            t = escape(self.title),
            cx = W / 2.0
        );
        // Y grid and ticks.
        for i in 0..=5 {
            let v = y_max * i as f64 / 5.0;
            let y = y_pos(v);
            svg.push_str(&format!(
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                W - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                short_number(v)
            ));
        }
        // X ticks.
        let ticks: Vec<f64> = match &self.x {
            XAxis::Categories(cats) => cats.iter().map(|&c| c as f64).collect(),
            XAxis::Linear => (0..=5).map(|i| x_max * i as f64 / 5.0).collect(),
        };
        for v in ticks {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                x_pos(v),
                TOP + plot_h + 16.0,
                short_number(v)
            ));
        }
        svg.push_str(&format!(
            "<line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#444\"/>\
             <line x1=\"{LEFT}\" x2=\"{}\" y1=\"{b}\" y2=\"{b}\" stroke=\"#444\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            TOP + plot_h,
            W - RIGHT,
            LEFT + plot_w / 2.0,
            TOP + plot_h + 34.0,
            escape(self.x_label),
            TOP + plot_h / 2.0,
            escape(self.y_label),
            b = TOP + plot_h,
        ));
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = s
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", x_pos(x), y_pos(y)))
                .collect();
            svg.push_str(&format!(
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                path.join(" ")
            ));
            for &(x, y) in &s.points {
                svg.push_str(&format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}: {} at {}</title></circle>",
                    x_pos(x),
                    y_pos(y),
                    escape(s.name),
                    short_number(y),
                    short_number(x)
                ));
            }
            let lx = LEFT + 10.0 + 150.0 * i as f64;
            let ly = H - 14.0;
            svg.push_str(&format!(
                "<rect x=\"{lx}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{color}\"/>\
                 <text x=\"{}\" y=\"{ly}\">{}</text>",
                ly - 6.0,
                lx + 18.0,
                escape(s.name)
            ));
        }
        svg.push_str("</svg>");
        svg
    }
}

/// The smallest 1, 2 or 5 x 10^k at or above `v` (an axis end).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * magnitude)
}

/// 1500 -> "1.5k", 2000000 -> "2M", 0.25 -> "0.25".
fn short_number(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    match v.abs() {
        a if a >= 1e6 => format!("{}M", trim(format!("{:.2}", v / 1e6))),
        a if a >= 1e3 => format!("{}k", trim(format!("{:.1}", v / 1e3))),
        a if a >= 1.0 || a == 0.0 => trim(format!("{v:.1}")),
        _ => trim(format!("{v:.3}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round() {
        assert_eq!(nice_ceiling(42_012.0), 50_000.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(101.0), 200.0);
        assert_eq!(short_number(1500.0), "1.5k");
        assert_eq!(short_number(2_000_000.0), "2M");
        assert_eq!(short_number(0.25), "0.25");
    }

    #[test]
    fn a_chart_has_one_line_and_legend_per_series() {
        let chart = Chart {
            title: "Throughput",
            x_label: "#Threads",
            y_label: "ops/s",
            x: XAxis::Categories(vec![4, 8]),
            series: vec![
                Series {
                    name: "a",
                    points: vec![(4.0, 10.0), (8.0, 20.0)],
                },
                Series {
                    name: "b",
                    points: vec![(4.0, 5.0)],
                },
            ],
        };
        let svg = chart.render();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
