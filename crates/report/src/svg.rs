//! Hand-written SVG charts: lines (with optional markers and min–max whiskers) over linear,
//! logarithmic or percentile axes, shaded x ranges (the warm-up), a legend. Enough for the
//! report's plots, nothing more: no JavaScript, no fonts to fetch, no library.
//!
//! The percentile axis is HdrHistogram's: x = log10(1 / (1 − p)), so 90 %, 99 %, 99.9 % …
//! are evenly spaced and the tail gets the room it deserves (Gil Tene, "How NOT to Measure
//! Latency"). Every chart is a standalone `<svg>` (with its `xmlns`), so the same text is
//! inlined in `report.html` and written as a `.svg` file beside it.
//!
//! Each drawn series is a `<path class="series">` and each chart carries `class="plot"` and
//! `data-points` (the points drawn), which the report's self-check and
//! `scripts/check-report-html.sh` use to tell a drawn plot from an empty one.

use std::fmt::Write;

/// Colours that stay apart for colour-blind readers and in greyscale print (Okabe & Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// An axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic (positive values only; others are not drawn).
    Log,
    /// Percentiles 0–100 as HdrHistogram plots them: log10(1 / (1 − p/100)).
    Percentile,
}

/// One line of a chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Dashed line (the uncorrected latency, the warm-up's).
    pub dashed: bool,
    /// A dot at every point (few points, or categorical x).
    pub markers: bool,
    /// Whiskers: `(x, low, high)` (the spread of repeats).
    pub whiskers: Vec<(f64, f64, f64)>,
    /// Colour; `None` takes the next of [`PALETTE`].
    pub color: Option<&'static str>,
}

/// One chart (a panel).
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title above the plot area.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X scale.
    pub x_scale: Scale,
    /// Y scale.
    pub y_scale: Scale,
    /// Start the y axis at zero (linear scale).
    pub y_from_zero: bool,
    /// Explicit x ticks `(x, label)` (categorical axes); `None`: computed.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Explicit x range (panels that share a time axis); `None`: the data's.
    pub x_range: Option<(f64, f64)>,
    /// Shaded x ranges with a label (the warm-up).
    pub shade: Vec<(f64, f64, String)>,
    /// Vertical markers at x with a label shown on hover (a cell's events).
    pub marks: Vec<(f64, String)>,
    /// The lines.
    pub series: Vec<Series>,
}

impl Chart {
    /// A chart with linear axes and nothing in it.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Chart {
        Chart {
            title: title.to_owned(),
            x_label: x_label.to_owned(),
            y_label: y_label.to_owned(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            y_from_zero: true,
            x_ticks: None,
            x_range: None,
            shade: Vec::new(),
            marks: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Points that can be drawn on these scales.
    pub fn drawable_points(&self) -> usize {
        self.series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|(x, y)| {
                forward(self.x_scale, *x).is_some() && forward(self.y_scale, *y).is_some()
            })
            .count()
    }
}

/// Escapes text for SVG and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The value on the scale's linear axis; `None` when the scale cannot show it.
fn forward(scale: Scale, v: f64) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    match scale {
        Scale::Linear => Some(v),
        Scale::Log => (v > 0.0).then(|| v.log10()),
        Scale::Percentile => {
            // 100 % itself is infinitely far; it is drawn at the axis end (see `render`).
            let q = (v / 100.0).clamp(0.0, 1.0);
            Some(if q >= 1.0 {
                f64::INFINITY
            } else {
                (1.0 / (1.0 - q)).log10()
            })
        }
    }
}

/// Nice ticks over `[lo, hi]` on a linear axis: steps of 1, 2 or 5 × 10^k.
pub(crate) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// A tick label: short, without exponent form (`0.25`, `12`, `1.5k`, `2M`).
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        let digits = (-a.log10().floor()) as usize + 1;
        trim(format!("{v:.digits$}"))
    }
}

/// Percentile tick label for a decade on the percentile axis (`0%`, `90%`, `99.9%`,
/// `99.999%`).
fn percentile_label(decade: i32) -> String {
    if decade <= 0 {
        return "0%".to_owned();
    }
    let p = 100.0 * (1.0 - 10f64.powi(-decade));
    let digits = (decade - 2).max(0) as usize;
    format!("{p:.digits$}%")
}

/// Width of the drawing in user units.
pub const WIDTH: f64 = 720.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 40.0;

/// Renders `charts` stacked in one standalone `<svg>`, each `panel_height` tall.
pub fn render(charts: &[Chart], panel_height: f64) -> String {
    let height = panel_height * charts.len() as f64;
    let points: usize = charts.iter().map(Chart::drawable_points).sum();
    let label = charts
        .iter()
        .map(|c| c.title.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" data-points=\"{points}\" \
         viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" \
         aria-label=\"{}\" font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" \
         font-size=\"11\">",
        esc(&label)
    );
    let _ = writeln!(
        out,
        "<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>"
    );
    for (i, c) in charts.iter().enumerate() {
        let _ = writeln!(
            out,
            "<g transform=\"translate(0,{})\">",
            i as f64 * panel_height
        );
        panel(&mut out, c, panel_height);
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, c: &Chart, h: f64) {
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    // The legend wraps onto more rows when it is wider than the plot; the plot starts below it.
    let legend = legend_layout(c, x0, x1);
    let rows = legend
        .iter()
        .flatten()
        .map(|(_, y)| *y)
        .fold(LEGEND_Y, f64::max);
    let (y0, y1) = (h - BOTTOM, TOP + (rows - LEGEND_Y));
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"16\" font-size=\"13\" font-weight=\"600\">{}</text>",
        esc(&c.title)
    );
    // Ranges on the transformed axes.
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(c.shade.iter().flat_map(|s| [s.0, s.1]))
        .chain(c.x_ticks.iter().flatten().map(|t| t.0))
        .filter_map(|v| forward(c.x_scale, v))
        .filter(|v| v.is_finite())
        .collect();
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.whiskers.iter().flat_map(|w| [w.1, w.2]))
        })
        .filter_map(|v| forward(c.y_scale, v))
        .collect();
    if xs.is_empty() || ys.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\">no data</text>",
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0
        );
        return;
    }
    let (mut xlo, mut xhi) = min_max(&xs);
    if c.x_scale == Scale::Percentile {
        xlo = 0.0;
        xhi = xhi.ceil().max(1.0);
    }
    if c.x_ticks.is_some() && xhi > xlo {
        // Categorical: half a step of room at both ends.
        let pad = (xhi - xlo) * 0.06;
        xlo -= pad;
        xhi += pad;
    }
    if let Some((a, b)) = c.x_range {
        if let (Some(a), Some(b)) = (forward(c.x_scale, a), forward(c.x_scale, b)) {
            (xlo, xhi) = (a, b);
        }
    }
    if xhi <= xlo {
        xlo -= 0.5;
        xhi += 0.5;
    }
    let (mut ylo, mut yhi) = min_max(&ys);
    match c.y_scale {
        Scale::Linear => {
            if c.y_from_zero {
                ylo = ylo.min(0.0);
            }
            if yhi <= ylo {
                yhi = ylo + if ylo == 0.0 { 1.0 } else { ylo.abs() * 0.1 };
            }
            yhi += (yhi - ylo) * 0.05;
        }
        _ => {
            ylo = ylo.floor();
            yhi = yhi.ceil().max(ylo + 1.0);
        }
    }
    let px = |v: f64| x0 + (v - xlo) / (xhi - xlo) * (x1 - x0);
    let py = |v: f64| y0 - (v - ylo) / (yhi - ylo) * (y0 - y1);
    // Shaded ranges under everything.
    for (a, b, label) in &c.shade {
        let (Some(a), Some(b)) = (forward(c.x_scale, *a), forward(c.x_scale, *b)) else {
            continue;
        };
        let (a, b) = (px(a.max(xlo)), px(b.min(xhi)));
        if b > a {
            let _ = writeln!(
                out,
                "<rect class=\"shade\" x=\"{a:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"#e8e8e8\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#666\" \
                 text-anchor=\"middle\">{}</text>",
                b - a,
                y0 - y1,
                (a + b) / 2.0,
                y1 + 12.0,
                esc(label)
            );
        }
    }
    // Event markers: a dashed vertical line each, its label on hover.
    for (x, label) in &c.marks {
        let Some(x) = forward(c.x_scale, *x).filter(|x| (xlo..=xhi).contains(x)) else {
            continue;
        };
        let x = px(x);
        let _ = writeln!(
            out,
            "<line class=\"event\" x1=\"{x:.1}\" y1=\"{y1:.1}\" x2=\"{x:.1}\" y2=\"{y0:.1}\" \
             stroke=\"#c0392b\" stroke-dasharray=\"3,3\"><title>{}</title></line>",
            esc(label)
        );
    }
    // Grid and ticks.
    let yticks: Vec<(f64, String)> = match c.y_scale {
        Scale::Linear => linear_ticks(ylo, yhi)
            .into_iter()
            .map(|t| (t, tick_label(t)))
            .collect(),
        _ => (ylo as i32..=yhi as i32)
            .map(|d| (d as f64, tick_label(10f64.powi(d))))
            .collect(),
    };
    for (t, label) in &yticks {
        let y = py(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444\">{}</text>",
            x0 - 6.0,
            y + 4.0,
            esc(label)
        );
    }
    let xticks: Vec<(f64, String)> = match (&c.x_ticks, c.x_scale) {
        (Some(t), _) => t
            .iter()
            .filter_map(|(v, l)| forward(c.x_scale, *v).map(|v| (v, l.clone())))
            .collect(),
        (None, Scale::Percentile) => (0..=xhi as i32)
            .map(|d| (d as f64, percentile_label(d)))
            .collect(),
        (None, Scale::Log) => (xlo.floor() as i32..=xhi.ceil() as i32)
            .map(|d| (d as f64, tick_label(10f64.powi(d))))
            .filter(|(v, _)| *v >= xlo && *v <= xhi)
            .collect(),
        (None, Scale::Linear) => linear_ticks(xlo, xhi)
            .into_iter()
            .map(|t| (t, tick_label(t)))
            .collect(),
    };
    for (t, label) in &xticks {
        let x = px(*t);
        // A label at the right edge would be cut off: it ends at its tick instead.
        let anchor = if x > x1 - 24.0 { "end" } else { "middle" };
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y1}\" y2=\"{y0}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" fill=\"#444\">{}</text>",
            y0 + 14.0,
            esc(label)
        );
    }
    let _ = writeln!(
        out,
        "<rect x=\"{x0}\" y=\"{y1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" \
         stroke=\"#999\"/>",
        x1 - x0,
        y0 - y1
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#222\">{}</text>",
        (x0 + x1) / 2.0,
        h - 8.0,
        esc(&c.x_label)
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\" \
         fill=\"#222\">{}</text>",
        (y0 + y1) / 2.0,
        esc(&c.y_label)
    );
    // Series, then the legend.
    for (i, s) in c.series.iter().enumerate() {
        let color = s.color.unwrap_or(PALETTE[i % PALETTE.len()]);
        // Past the palette's length colours repeat: those series are dashed, so every line
        // stays distinguishable.
        let dashed = s.dashed || (s.color.is_none() && i >= PALETTE.len());
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|(x, y)| {
                let x = forward(c.x_scale, *x)?;
                let x = if x.is_infinite() { xhi } else { x };
                Some((px(x), py(forward(c.y_scale, *y)?)))
            })
            .collect();
        for (x, lo, hi) in &s.whiskers {
            let (Some(x), Some(lo), Some(hi)) = (
                forward(c.x_scale, *x),
                forward(c.y_scale, *lo),
                forward(c.y_scale, *hi),
            ) else {
                continue;
            };
            let x = px(x);
            let _ = writeln!(
                out,
                "<path d=\"M{x:.1} {:.1}V{:.1}M{:.1} {:.1}h8M{:.1} {:.1}h8\" stroke=\"{color}\" \
                 stroke-width=\"1\" fill=\"none\"/>",
                py(lo),
                py(hi),
                x - 4.0,
                py(lo),
                x - 4.0,
                py(hi)
            );
        }
        if !pts.is_empty() {
            let mut d = String::new();
            for (k, (x, y)) in pts.iter().enumerate() {
                let _ = write!(d, "{}{x:.1} {y:.1}", if k == 0 { "M" } else { "L" });
            }
            if pts.len() == 1 {
                // A single point still shows: a short tick.
                let (x, y) = pts[0];
                let _ = write!(d, "M{:.1} {y:.1}L{:.1} {y:.1}", x - 3.0, x + 3.0);
            }
            let _ = writeln!(
                out,
                "<path class=\"series\" d=\"{d}\" fill=\"none\" stroke=\"{color}\" \
                 stroke-width=\"1.8\"{}><title>{}</title></path>",
                if dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                },
                esc(&s.name)
            );
            if s.markers || pts.len() == 1 {
                for (x, y) in &pts {
                    let _ = writeln!(
                        out,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.8\" fill=\"{color}\"/>"
                    );
                }
            }
        }
        if let Some((lx, ly)) = legend[i] {
            let _ = writeln!(
                out,
                "<line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" \
                 stroke-width=\"2\"{}/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#222\">{}</text>",
                lx + 18.0,
                if dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                },
                lx + 22.0,
                ly + 4.0,
                esc(&s.name)
            );
        }
    }
}

/// Baseline of the first legend row, and the height of each further row.
const LEGEND_Y: f64 = 31.0;
const LEGEND_ROW: f64 = 14.0;

/// Where each series' legend entry goes (`None`: no entry), wrapping onto a new row before an
/// entry would pass `x1`. Entry widths are estimated from the label's length (11 px text).
fn legend_layout(c: &Chart, x0: f64, x1: f64) -> Vec<Option<(f64, f64)>> {
    let (mut x, mut y) = (x0, LEGEND_Y);
    c.series
        .iter()
        .map(|s| {
            if c.series.len() <= 1 && s.name.is_empty() {
                return None;
            }
            let width = 30.0 + 6.2 * s.name.chars().count() as f64;
            if x > x0 && x + width - 8.0 > x1 {
                x = x0;
                y += LEGEND_ROW;
            }
            let at = (x, y);
            x += width;
            Some(at)
        })
        .collect()
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_labels() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(tick_label(25_000.0), "25k");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(0.05), "0.05");
        assert_eq!(tick_label(1_500_000.0), "1.5M");
        assert_eq!(tick_label(12.5), "12.5");
        assert_eq!(percentile_label(0), "0%");
        assert_eq!(percentile_label(1), "90%");
        assert_eq!(percentile_label(3), "99.9%");
        assert_eq!(percentile_label(5), "99.999%");
    }

    #[test]
    fn percentile_axis_is_hdrhistogram_style() {
        assert_eq!(forward(Scale::Percentile, 0.0), Some(0.0));
        assert!((forward(Scale::Percentile, 99.0).unwrap() - 2.0).abs() < 1e-9);
        assert!((forward(Scale::Percentile, 99.9).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(forward(Scale::Percentile, 100.0), Some(f64::INFINITY));
        assert_eq!(forward(Scale::Log, 0.0), None);
    }

    #[test]
    fn a_chart_draws_its_series_and_says_how_many_points() {
        let mut c = Chart::new("Latency <by> percentile", "percentile", "ms");
        c.x_scale = Scale::Percentile;
        c.series.push(Series {
            name: "corrected".into(),
            points: vec![(0.0, 1.0), (50.0, 2.0), (99.0, 5.0), (100.0, 9.0)],
            ..Series::default()
        });
        let s = render(&[c], 260.0);
        assert!(s.starts_with(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" data-points=\"4\""
        ));
        assert_eq!(s.matches("class=\"series\"").count(), 1);
        assert!(s.contains("Latency &lt;by&gt; percentile"));
        assert!(s.contains(">99%<"));
        assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
    }

    #[test]
    fn a_long_legend_wraps_inside_the_drawing_and_the_plot_moves_down() {
        let mut c = Chart::new("Throughput", "users", "req/s");
        for name in [
            "backend-alone",
            "passthrough-h1c-h1c",
            "passthrough-h1-h1",
            "transform-h1c",
            "transform-h1",
            "passthrough-h2-h2",
            "passthrough-h2-h1",
            "passthrough-h2-h1c",
            "downgrade",
            "balance-5",
        ] {
            c.series.push(Series {
                name: name.into(),
                points: vec![(10.0, 1.0), (100.0, 2.0)],
                ..Series::default()
            });
        }
        let layout = legend_layout(&c, LEFT, WIDTH - RIGHT);
        let rows: Vec<f64> = layout.iter().flatten().map(|(_, y)| *y).collect();
        assert!(
            rows.iter().any(|y| *y > LEGEND_Y),
            "ten entries need a second row"
        );
        for (s, at) in c.series.iter().zip(&layout) {
            let (x, _) = at.expect("every named series has an entry");
            let end = x + 22.0 + 6.2 * s.name.chars().count() as f64;
            assert!(end <= WIDTH, "{} ends at {end}, past the drawing", s.name);
        }
        // Series past the palette repeat its colours, dashed.
        let dashed_lines = render(&[c.clone()], 300.0)
            .matches("stroke-dasharray")
            .count();
        assert_eq!(
            dashed_lines,
            2 * (c.series.len() - PALETTE.len()),
            "line and legend"
        );
        // The plot frame starts below the last legend row.
        let svg = render(&[c], 300.0);
        let last_row = rows.iter().cloned().fold(0.0, f64::max);
        let frame_top = TOP + (last_row - LEGEND_Y);
        assert!(svg.contains(&format!("y=\"{frame_top}\" width=")), "{svg}");
    }

    #[test]
    fn an_empty_chart_says_no_data() {
        let c = Chart::new("Nothing", "x", "y");
        let s = render(&[c], 200.0);
        assert!(s.contains("data-points=\"0\""));
        assert!(s.contains(">no data<"));
    }

    #[test]
    fn shading_and_whiskers() {
        let mut c = Chart::new("Throughput", "s", "req/s");
        c.shade.push((0.0, 1.0, "warm-up".into()));
        c.marks.push((1.5, "reload at 0.500 s".into()));
        c.series.push(Series {
            name: "rps".into(),
            points: vec![(0.5, 10.0), (1.5, 12.0), (2.5, 11.0)],
            whiskers: vec![(1.5, 11.0, 13.0)],
            ..Series::default()
        });
        let s = render(&[c], 200.0);
        assert!(s.contains("class=\"shade\""));
        assert!(s.contains("<title>reload at 0.500 s</title>"), "{s}");
        assert!(s.contains(">warm-up<"));
        assert!(s.contains("h8"));
    }
}
