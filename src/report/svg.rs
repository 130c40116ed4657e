//! Charts as inline SVG, written by hand: a few dozen points per chart,
//! axes with round ticks (logarithmic when values span more than two
//! decades), one colour per series, a legend; lines, grouped bars, and
//! small time series.

use super::document::escape;

const COLORS: [&str; 6] = [
    "#1f6fb4", "#e8702a", "#2b9e4a", "#c33c3c", "#8a5fb8", "#7a7a7a",
];

pub enum XAxis {
    /// Thread counts, evenly spaced as the briefs draw them.
    Categories(Vec<u64>),
    /// A numeric axis from 0 (ops/s in a QoS curve, seconds).
    Linear,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Lines,
    /// Grouped bars per category (db_bench studies).
    Bars,
}

pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
    /// A label per point (a QoS point's thread count); empty: none.
    pub labels: Vec<String>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: XAxis,
    pub series: Vec<Series<'a>>,
    pub style: Style,
    /// Text drawn over one category (the largest gap of a bar chart).
    pub mark: Option<(u64, String)>,
    pub size: (f64, f64),
    /// A linear y axis from zero even when values span decades.
    pub from_zero: bool,
    /// Spans of a linear x axis shaded behind the series, each named
    /// (an engine event: a compaction, a checkpoint).
    pub bands: Vec<Band>,
    /// Per series (by index), vertical error bars: (x, low, high).
    pub error_bars: Vec<Vec<(f64, f64, f64)>>,
    /// What an error bar spans, in its tooltip ("lowest to highest repeat").
    pub error_bar_meaning: &'a str,
    /// Lines of text under the chart: what its points and bars are.
    pub caption: Vec<String>,
}

/// A shaded span of the x axis, `from` to `to`, with its name; its kind
/// ("flush", "write_stall") picks the colour and the legend's word.
pub struct Band {
    pub from: f64,
    pub to: f64,
    pub kind: &'static str,
    pub name: String,
}

/// Stalls stand out (red); flushes and compactions are told apart.
fn band_colour(kind: &str) -> &'static str {
    match kind {
        "write_stall" | "write_slowdown" => "#e4572e",
        "flush" => "#4e9fd1",
        "compaction" => "#f2c14e",
        _ => "#9b8bb5",
    }
}

const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
/// The height of one line of caption under a chart.
const CAPTION_LINE: f64 = 14.0;

impl<'a> Chart<'a> {
    pub fn new(
        title: &'a str,
        x_label: &'a str,
        y_label: &'a str,
        x: XAxis,
        series: Vec<Series<'a>>,
    ) -> Self {
        Self {
            title,
            x_label,
            y_label,
            x,
            series,
            style: Style::Lines,
            mark: None,
            size: (600.0, 340.0),
            from_zero: false,
            bands: Vec::new(),
            error_bars: Vec::new(),
            error_bar_meaning: "interval",
            caption: Vec::new(),
        }
    }

    /// The chart with `lines` of text under it.
    pub fn captioned(mut self, lines: Vec<String>) -> Self {
        self.caption = lines;
        self
    }

    pub fn render(&self) -> String {
        let h = self.size.1;
        let frame = self.frame();
        let mut svg = self.title_and_axes(&frame);
        if let XAxis::Linear = self.x {
            self.draw_bands(&frame, &mut svg);
        }
        for i in 0..self.series.len() {
            self.draw_series(&frame, i, &mut svg);
        }
        if let Some((x, text)) = &self.mark {
            let (centre, _) = frame.slot(*x as f64);
            svg.push_str(&format!(
                "<line x1=\"{centre:.1}\" x2=\"{centre:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#c33c3c\" stroke-dasharray=\"4 3\"/>\
                 <text x=\"{:.1}\" y=\"{}\" fill=\"#c33c3c\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>",
                TOP + frame.plot_h,
                centre,
                TOP + 12.0,
                escape(text)
            ));
        }
        for (k, line) in self.caption.iter().enumerate() {
            svg.push_str(&format!(
                "<text class=\"caption\" x=\"8\" y=\"{:.1}\" font-size=\"10\" fill=\"#444\">{}</text>",
                h + CAPTION_LINE * (k as f64 + 1.0) - 4.0,
                escape(line)
            ));
        }
        svg.push_str("</svg>");
        svg
    }

    /// The plot's place on the canvas and its two axes' ranges.
    fn frame(&self) -> Frame<'_> {
        let (w, h) = self.size;
        let bottom = if h < 200.0 { 40.0 } else { 70.0 };
        let (plot_w, plot_h) = (w - LEFT - RIGHT, h - TOP - bottom);
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(
                self.error_bars
                    .iter()
                    .flatten()
                    .flat_map(|&(_, low, high)| [low, high]),
            )
            .filter(|y| y.is_finite())
            .collect();
        let y_axis = YAxis::fit(&ys, self.from_zero || self.style == Style::Bars);
        let x_max = match &self.x {
            XAxis::Categories(_) => 0.0,
            XAxis::Linear => nice_ceiling(
                self.series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.0))
                    .fold(0.0, f64::max),
            ),
        };
        Frame {
            x: &self.x,
            plot_w,
            plot_h,
            x_max,
            y_axis,
        }
    }

    /// The opening tag, the title, the grid with both axes' ticks and the
    /// axes' labels.
    fn title_and_axes(&self, frame: &Frame) -> String {
        let (w, h) = self.size;
        let (plot_w, plot_h, x_max) = (frame.plot_w, frame.plot_h, frame.x_max);
        let full_h = h + CAPTION_LINE * self.caption.len() as f64;
        let mut svg = format!(
            "<svg width=\"{w}\" height=\"{full_h}\" viewBox=\"0 0 {w} {full_h}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\
             <title>{t}</title><text x=\"{cx}\" y=\"20\" text-anchor=\"middle\" font-size=\"{fs}\" font-weight=\"bold\">{t}</text>",
            t = escape(self.title),
            cx = w / 2.0,
            fs = if h < 200.0 { 11 } else { 14 },
        );
        for v in frame.y_axis.ticks() {
            let y = frame.y_pos(v);
            svg.push_str(&format!(
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                w - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                short_number(v)
            ));
        }
        let ticks: Vec<f64> = match &self.x {
            XAxis::Categories(cats) => cats.iter().map(|&c| c as f64).collect(),
            XAxis::Linear => (0..=5).map(|i| x_max * i as f64 / 5.0).collect(),
        };
        for v in ticks {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                frame.slot(v).0,
                TOP + plot_h + 16.0,
                short_number(v)
            ));
        }
        svg.push_str(&format!(
            "<line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#444\"/>\
             <line x1=\"{LEFT}\" x2=\"{}\" y1=\"{b}\" y2=\"{b}\" stroke=\"#444\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(14,{}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
            TOP + plot_h,
            w - RIGHT,
            LEFT + plot_w / 2.0,
            TOP + plot_h + 32.0,
            escape(self.x_label),
            TOP + plot_h / 2.0,
            escape(self.y_label),
            if frame.y_axis.log { " (log)" } else { "" },
            b = TOP + plot_h,
        ));
        svg
    }

    /// A linear x axis's shaded spans and the legend of their kinds.
    fn draw_bands(&self, frame: &Frame, svg: &mut String) {
        let (w, plot_h, x_max) = (self.size.0, frame.plot_h, frame.x_max);
        for band in &self.bands {
            let (from, to) = (
                frame.slot(band.from.clamp(0.0, x_max)).0,
                frame.slot(band.to.clamp(0.0, x_max)).0,
            );
            svg.push_str(&format!(
                "<rect x=\"{from:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{plot_h:.1}\" fill=\"{}\" fill-opacity=\"0.3\"><title>{}</title></rect>",
                (to - from).max(1.0),
                band_colour(band.kind),
                escape(&band.name)
            ));
        }
        let mut kinds: Vec<&str> = self.bands.iter().map(|b| b.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        if !kinds.is_empty() {
            let words: String = kinds
                .iter()
                .map(|k| {
                    format!(
                        "<tspan fill=\"{}\">\u{25a0} {}</tspan> ",
                        band_colour(k),
                        escape(k)
                    )
                })
                .collect();
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"end\">{}</text>",
                w - RIGHT,
                TOP - 4.0,
                words.trim_end()
            ));
        }
    }

    /// Series `i`: its bars or line, its error bars and its legend entry.
    fn draw_series(&self, frame: &Frame, i: usize, svg: &mut String) {
        let s = &self.series[i];
        let h = self.size.1;
        let n = self.series.len().max(1) as f64;
        let color = COLORS[i % COLORS.len()];
        match self.style {
            Style::Bars => {
                for &(x, y) in &s.points {
                    let (centre, width) = frame.slot(x);
                    let bar = width * 0.8 / n;
                    let left = centre - width * 0.4 + bar * i as f64;
                    let top = frame.y_pos(y);
                    svg.push_str(&format!(
                        "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}: {} at {}</title></rect>",
                        (bar - 1.0).max(1.0),
                        (TOP + frame.plot_h - top).max(0.0),
                        escape(s.name),
                        short_number(y),
                        short_number(x)
                    ));
                }
            }
            Style::Lines => self.draw_line(frame, s, color, svg),
        }
        for &(x, low, high) in self.error_bars.get(i).into_iter().flatten() {
            let cx = match self.style {
                Style::Bars => {
                    let (centre, width) = frame.slot(x);
                    let bar = width * 0.8 / n;
                    centre - width * 0.4 + bar * (i as f64 + 0.5)
                }
                // Side by side around the point, so that series at the
                // same x do not hide each other's bars.
                Style::Lines => frame.slot(x).0 + (i as f64 - (n - 1.0) / 2.0) * 6.0,
            };
            let (top, bottom) = (frame.y_pos(high), frame.y_pos(low));
            svg.push_str(&format!(
                "<path d=\"M{:.1},{top:.1}H{:.1}M{cx:.1},{top:.1}V{bottom:.1}M{:.1},{bottom:.1}H{:.1}\" stroke=\"#333\" stroke-width=\"1.2\" fill=\"none\"><title>{}: {} {} to {}</title></path>",
                cx - 4.0,
                cx + 4.0,
                cx - 4.0,
                cx + 4.0,
                escape(s.name),
                escape(self.error_bar_meaning),
                short_number(low),
                short_number(high)
            ));
        }
        let lx = LEFT + 10.0 + 150.0 * i as f64;
        let ly = h - 12.0;
        svg.push_str(&format!(
            "<rect x=\"{lx}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{color}\"/>\
             <text x=\"{}\" y=\"{ly}\">{}</text>",
            ly - 6.0,
            lx + 18.0,
            escape(s.name)
        ));
    }

    /// One series as a line, with a dot and a label per point on a chart
    /// tall enough to read them.
    fn draw_line(&self, frame: &Frame, s: &Series, color: &str, svg: &mut String) {
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", frame.slot(x).0, frame.y_pos(y)))
            .collect();
        // The values behind the line, in the axes' units, for
        // a reader (or a test) to check the drawing against.
        let values: Vec<String> = s.points.iter().map(|(x, y)| format!("{x},{y}")).collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\" data-values=\"{}\"/>",
            path.join(" "),
            values.join(" ")
        ));
        if self.size.1 >= 200.0 {
            for (k, &(x, y)) in s.points.iter().enumerate() {
                let (cx, cy) = (frame.slot(x).0, frame.y_pos(y));
                svg.push_str(&format!(
                    "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3\" fill=\"{color}\"><title>{}: {} at {}</title></circle>",
                    escape(s.name),
                    short_number(y),
                    short_number(x)
                ));
                if let Some(label) = s.labels.get(k) {
                    svg.push_str(&format!(
                        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"{color}\">{}</text>",
                        cx + 4.0,
                        cy - 4.0,
                        escape(label)
                    ));
                }
            }
        }
    }
}

/// Where a chart's plot sits and how its values map onto the canvas.
struct Frame<'a> {
    x: &'a XAxis,
    plot_w: f64,
    plot_h: f64,
    /// The linear x axis's end (0 for categories).
    x_max: f64,
    y_axis: YAxis,
}

impl Frame<'_> {
    /// (centre, width) of x's category or position.
    fn slot(&self, x: f64) -> (f64, f64) {
        match self.x {
            XAxis::Categories(cats) => {
                let i = cats.iter().position(|&c| c as f64 == x).unwrap_or(0) as f64;
                let width = self.plot_w / cats.len().max(1) as f64;
                (LEFT + width * (i + 0.5), width)
            }
            XAxis::Linear => (LEFT + self.plot_w * x / self.x_max, 0.0),
        }
    }

    fn y_pos(&self, y: f64) -> f64 {
        TOP + self.plot_h * (1.0 - self.y_axis.fraction(y))
    }
}

/// A y axis: linear from 0, or logarithmic when the values span more than
/// two decades (latency from microseconds to milliseconds).
struct YAxis {
    log: bool,
    min: f64,
    max: f64,
}

impl YAxis {
    fn fit(values: &[f64], from_zero: bool) -> Self {
        let max = values.iter().copied().fold(0.0, f64::max);
        let min_positive = values
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !from_zero && min_positive.is_finite() && max / min_positive > 100.0 {
            return Self {
                log: true,
                min: 10f64.powf(min_positive.log10().floor()),
                max: 10f64.powf(max.log10().ceil()),
            };
        }
        Self {
            log: false,
            min: 0.0,
            max: nice_ceiling(max),
        }
    }

    /// Where `v` sits, 0 (bottom) to 1 (top).
    fn fraction(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.min);
            (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10()).max(1e-9)
        } else {
            v / self.max
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (lo, hi) = (
                self.min.log10().round() as i32,
                self.max.log10().round() as i32,
            );
            (lo..=hi).map(|e| 10f64.powi(e)).collect()
        } else {
            (0..=5).map(|i| self.max * i as f64 / 5.0).collect()
        }
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
pub fn short_number(v: f64) -> String {
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

    fn series(name: &str, points: Vec<(f64, f64)>) -> Series<'_> {
        Series {
            name,
            points,
            labels: Vec::new(),
        }
    }

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
        let chart = Chart::new(
            "Throughput",
            "#Threads",
            "ops/s",
            XAxis::Categories(vec![4, 8]),
            vec![
                series("a", vec![(4.0, 10.0), (8.0, 20.0)]),
                series("b", vec![(4.0, 5.0)]),
            ],
        );
        let svg = chart.render();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(!svg.contains("(log)"));
    }

    #[test]
    fn bars_marks_labels_and_a_log_axis() {
        let mut chart = Chart::new(
            "readrandom",
            "#Threads",
            "ops/s",
            XAxis::Categories(vec![8, 16]),
            vec![
                series("a", vec![(8.0, 100.0), (16.0, 300.0)]),
                series("b", vec![(8.0, 90.0), (16.0, 120.0)]),
            ],
        );
        chart.style = Style::Bars;
        chart.mark = Some((16, "+150%".into()));
        let svg = chart.render();
        assert_eq!(
            svg.matches("<rect").count(),
            4 + 2,
            "4 bars and 2 legend keys"
        );
        assert!(svg.contains(">+150%</text>"));
        let mut qos = Chart::new(
            "QoS",
            "ops/s",
            "p99 us",
            XAxis::Linear,
            vec![series("a", vec![(1000.0, 10.0), (5000.0, 4000.0)])],
        );
        qos.series[0].labels = vec!["4".into(), "64".into()];
        let svg = qos.render();
        assert!(
            svg.contains("p99 us (log)"),
            "values 10 to 4000 span more than two decades"
        );
        assert!(
            svg.contains(">64</text>"),
            "points are labelled with their thread counts"
        );
    }
}
