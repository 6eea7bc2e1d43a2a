//! The comparison chart: per metric, the change of every cell as a bar, grouped by message size
//! and coloured by users (or rate), with its confidence interval as a whisker — the chart of
//! seed 000's version comparison, with the uncertainty that report leaves out. A bar is solid
//! when the change is significant and pale when it is not, so a reader sees at once which
//! changes stand out from the noise.
//!
//! One standalone `<svg>` (one panel per metric, stacked), written by `gatebench compare --svg`
//! and inlined in `--html`. Axes, ticks, palette and escaping are those of [`crate::svg`]. Each
//! bar is `<rect class="bar" data-cell=… data-change=…>` and each interval
//! `<path class="ci" data-ci="LO HI">`, so tests and scripts can read what was drawn.

use std::fmt::Write;

use super::{CellKey, Pair, Row, Verdict, METRICS};
use crate::svg::{esc, linear_ticks, tick_label, PALETTE, WIDTH};

/// Height of one metric's panel.
pub const PANEL_HEIGHT: f64 = 280.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
/// The plot area's top: below the title and the legend.
const TOP: f64 = 58.0;
/// The plot area's bottom: above the bar labels, group labels and the axis title.
const BOTTOM: f64 = 56.0;

/// The metrics the chart draws when the comparison has them, in order: the seed's three
/// (throughput, average and p99 latency) and the SUT's CPU time per request.
pub const CHART_METRICS: [&str; 4] = [
    "throughput_rps",
    "mean_ms",
    "p99_ms",
    "sut_cpu_us_per_request",
];

/// What distinguishes bars within a size group: everything in the key but the size.
fn bar_label(k: &CellKey, show_scenario: bool, show_delay: bool, show_protocol: bool) -> String {
    let mut parts = Vec::new();
    if show_scenario {
        if let Some(s) = &k.scenario {
            parts.push(s.clone());
        }
    }
    parts.push(match k.rate {
        Some(r) => format!("{} req/s", tick_label(r)),
        None => format!("{} users", k.users),
    });
    if show_delay {
        parts.push(format!("{} ms", tick_label(k.delay_ms)));
    }
    if show_protocol {
        parts.push(k.protocol.clone());
    }
    parts.join(" · ")
}

/// A linear y axis over `[lo, hi]`, widened to whole tick steps, drawn from `top` to `bottom`.
struct YAxis {
    lo: f64,
    hi: f64,
    top: f64,
    bottom: f64,
    ticks: Vec<f64>,
}

impl YAxis {
    fn new(lo: f64, hi: f64, top: f64, bottom: f64) -> YAxis {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 1.0, hi + 1.0)
        };
        let ticks = linear_ticks(lo, hi);
        let step = match ticks.as_slice() {
            [a, b, ..] => b - a,
            _ => hi - lo,
        };
        // The axis ends on ticks, so the extremes sit inside the frame.
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        YAxis {
            lo,
            hi,
            top,
            bottom,
            ticks: linear_ticks(lo, hi),
        }
    }

    fn y(&self, v: f64) -> f64 {
        self.bottom - (v - self.lo) / (self.hi - self.lo) * (self.bottom - self.top)
    }
}

/// The chart of `pair`'s rows for `metrics` (those without rows are left out); `None` when no
/// metric has a row to draw.
pub fn render(pair: &Pair, metrics: &[&str], confidence: f64) -> Option<String> {
    let panels: Vec<(&str, Vec<&Row>)> = metrics
        .iter()
        .map(|m| {
            let rows: Vec<&Row> = pair
                .rows
                .iter()
                .filter(|r| r.metric == *m && r.change.is_some())
                .collect();
            (*m, rows)
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    if panels.is_empty() {
        return None;
    }
    let height = PANEL_HEIGHT * panels.len() as f64;
    let bars: usize = panels.iter().map(|(_, r)| r.len()).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot compare-chart\" \
         data-points=\"{bars}\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" \
         height=\"{height}\" role=\"img\" aria-label=\"{} against {}: change per cell\" \
         font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" font-size=\"11\">",
        esc(&pair.candidate),
        esc(&pair.baseline)
    );
    let _ = writeln!(
        out,
        "<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>"
    );
    for (i, (metric, rows)) in panels.iter().enumerate() {
        let _ = writeln!(
            out,
            "<g transform=\"translate(0,{})\">",
            i as f64 * PANEL_HEIGHT
        );
        panel(&mut out, pair, metric, rows, confidence);
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    Some(out)
}

fn panel(out: &mut String, pair: &Pair, metric: &str, rows: &[&Row], confidence: f64) {
    let m = METRICS
        .iter()
        .find(|x| x.key == metric)
        .expect("rows name known metrics");
    let unit = rows[0].change_unit;
    let direction = if m.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"16\" font-size=\"13\" font-weight=\"600\">{}: {} against {} \
         ({direction})</text>",
        esc(m.label),
        esc(&pair.candidate),
        esc(&pair.baseline)
    );
    // Groups: the sizes, ascending; bars within a group: the rest of the key, in row order.
    let mut sizes: Vec<u64> = rows.iter().map(|r| r.key.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let distinct = |f: &dyn Fn(&CellKey) -> String| {
        let mut v: Vec<String> = rows.iter().map(|r| f(&r.key)).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let show_scenario = distinct(&|k| k.scenario.clone().unwrap_or_default());
    let show_delay = distinct(&|k| k.delay_ms.to_string());
    let show_protocol = distinct(&|k| k.protocol.clone());
    let label = |r: &Row| bar_label(&r.key, show_scenario, show_delay, show_protocol);
    let mut series: Vec<String> = Vec::new();
    for r in rows {
        let l = label(r);
        if !series.contains(&l) {
            series.push(l);
        }
    }
    // The y range holds every change, every interval, and zero.
    let values = rows.iter().flat_map(|r| {
        let mut v = vec![r.change.unwrap_or(0.0)];
        v.extend(r.ci.iter().flatten());
        v
    });
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let axis = YAxis::new(lo, hi, TOP, PANEL_HEIGHT - BOTTOM);
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    // Legend: one swatch per bar series, then what solid and pale mean.
    let mut lx = x0;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let _ = writeln!(
            out,
            "<rect x=\"{lx:.1}\" y=\"25\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"34\" fill=\"#222\">{}</text>",
            lx + 14.0,
            esc(s)
        );
        lx += 24.0 + 6.2 * s.chars().count() as f64;
    }
    let _ = writeln!(
        out,
        "<text x=\"{x0}\" y=\"50\" fill=\"#555\">solid: significant at the test's α; pale: no \
         significant change; whiskers: {}% confidence interval</text>",
        trim(confidence * 100.0)
    );
    for t in &axis.ticks {
        let y = axis.y(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444\">{}</text>",
            x0 - 6.0,
            y + 4.0,
            esc(&signed_tick(*t, unit))
        );
    }
    let zero = axis.y(0.0);
    let _ = writeln!(
        out,
        "<line class=\"zero\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{zero:.1}\" y2=\"{zero:.1}\" \
         stroke=\"#333\"/>"
    );
    let group_w = (x1 - x0) / sizes.len() as f64;
    let bar_slot = group_w * 0.84 / series.len() as f64;
    for (g, size) in sizes.iter().enumerate() {
        let gx = x0 + g as f64 * group_w;
        let _ = writeln!(
            out,
            "<text class=\"group\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
             fill=\"#222\" font-weight=\"600\">{size} B</text>",
            gx + group_w / 2.0,
            PANEL_HEIGHT - BOTTOM + 30.0
        );
        if g > 0 {
            let _ = writeln!(
                out,
                "<line x1=\"{gx:.1}\" x2=\"{gx:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#bbb\" \
                 stroke-dasharray=\"3 3\"/>",
                PANEL_HEIGHT - BOTTOM
            );
        }
        for r in rows.iter().filter(|r| r.key.size_bytes == *size) {
            let l = label(r);
            let k = series.iter().position(|s| *s == l).expect("listed above");
            let color = PALETTE[k % PALETTE.len()];
            let change = r.change.expect("filtered");
            let bx = gx + group_w * 0.08 + k as f64 * bar_slot + bar_slot * 0.1;
            let bw = bar_slot * 0.8;
            let yc = axis.y(change);
            let (top, h) = (yc.min(zero), (yc - zero).abs());
            let significant = matches!(r.verdict, Verdict::Improved | Verdict::Regressed);
            let _ = writeln!(
                out,
                "<rect class=\"bar\" data-cell=\"{}\" data-change=\"{change}\" x=\"{bx:.1}\" \
                 y=\"{top:.1}\" width=\"{bw:.1}\" height=\"{h:.1}\" fill=\"{color}\" \
                 fill-opacity=\"{}\"><title>{}: {} {}</title></rect>",
                esc(&r.cell),
                if significant { "1" } else { "0.35" },
                esc(&r.cell),
                esc(&super::text::change(r.change, r.change_unit)),
                esc(r.verdict.label())
            );
            if let Some([lo, hi]) = r.ci {
                let xm = bx + bw / 2.0;
                let _ = writeln!(
                    out,
                    "<path class=\"ci\" data-ci=\"{lo} {hi}\" d=\"M{xm:.1} {:.1}V{:.1}M{:.1} \
                     {:.1}h8M{:.1} {:.1}h8\" stroke=\"#222\" stroke-width=\"1\" fill=\"none\"/>",
                    axis.y(lo),
                    axis.y(hi),
                    xm - 4.0,
                    axis.y(lo),
                    xm - 4.0,
                    axis.y(hi)
                );
            }
            let _ = writeln!(
                out,
                "<text class=\"bar-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
                 fill=\"#444\" font-size=\"9\">{}</text>",
                bx + bw / 2.0,
                PANEL_HEIGHT - BOTTOM + 13.0,
                esc(&super::text::change(r.change, r.change_unit))
            );
        }
    }
    let _ = writeln!(
        out,
        "<rect x=\"{x0}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" \
         stroke=\"#999\"/>",
        x1 - x0,
        PANEL_HEIGHT - BOTTOM - TOP
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\" \
         fill=\"#222\">change ({})</text>",
        (TOP + PANEL_HEIGHT - BOTTOM) / 2.0,
        if unit == "%" {
            "%"
        } else {
            "percentage points"
        }
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#222\">message size; \
         bars: {}</text>",
        (x0 + x1) / 2.0,
        PANEL_HEIGHT - 8.0,
        esc(&series.join(", "))
    );
}

/// `+10%`, `-5%`, `0%` (or `pp`).
fn signed_tick(v: f64, unit: &str) -> String {
    let sign = if v > 0.0 { "+" } else { "" };
    let unit = if unit == "%" { "%" } else { " pp" };
    format!("{sign}{}{unit}", tick_label(v))
}

fn trim(pct: f64) -> String {
    let s = format!("{pct:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::{fixture, opts};
    use crate::compare::{compare, Options};

    #[test]
    fn the_axis_ends_on_ticks_and_maps_linearly() {
        let a = YAxis::new(-4.0, 12.5, 58.0, 224.0);
        assert_eq!((a.lo, a.hi), (-5.0, 15.0));
        assert_eq!(a.ticks, vec![-5.0, 0.0, 5.0, 10.0, 15.0]);
        assert_eq!(a.y(-5.0), 224.0);
        assert_eq!(a.y(15.0), 58.0);
        assert_eq!(a.y(0.0), 182.5);
        assert_eq!(signed_tick(10.0, "%"), "+10%");
        assert_eq!(signed_tick(-5.0, "pp"), "-5 pp");
        assert_eq!(signed_tick(0.0, "%"), "0%");
    }

    /// The fixture: `echo` and `proxy` at 10 users and `proxy` at 100, all 50 B; proxy at 100
    /// doubles its throughput in B.
    #[test]
    fn a_bar_per_cell_with_its_interval_at_its_values() {
        let (a, b) = fixture(5);
        let c = compare(
            &[a, b],
            &Options {
                metrics: vec!["throughput_rps".into()],
                ..Options::default()
            },
        );
        let pair = &c.pairs[0];
        let svg = render(pair, &CHART_METRICS, 0.95).expect("throughput rows");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("data-points=\"3\""), "{svg}");
        // One panel: the other metrics have no rows.
        assert_eq!(svg.matches("<g transform").count(), 1);
        assert_eq!(svg.matches("class=\"bar\"").count(), 3);
        assert_eq!(svg.matches("class=\"ci\"").count(), 3);
        assert!(svg.contains("Throughput: B against A (higher is better)"));
        // One size group, bars named by scenario and users (the scenario differs between bars).
        assert_eq!(svg.matches("class=\"group\"").count(), 1);
        assert!(svg.contains(">50 B</text>"));
        for l in ["echo · 10 users", "proxy · 10 users", "proxy · 100 users"] {
            assert!(svg.contains(&format!(">{l}</text>")), "legend {l}: {svg}");
        }
        // Each bar and whisker at its row's values, on the axis the rows make.
        let rows: Vec<&Row> = pair.rows.iter().collect();
        let (lo, hi) = rows
            .iter()
            .flat_map(|r| [r.change.unwrap(), r.ci.unwrap()[0], r.ci.unwrap()[1]])
            .fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let axis = YAxis::new(lo, hi, TOP, PANEL_HEIGHT - BOTTOM);
        // The doubled cell goes past +100 %: ticks of 20, the axis from -20 % to +120 %.
        assert_eq!((axis.lo, axis.hi), (-20.0, 120.0), "{lo} {hi}");
        // One size group of three bars, in row order.
        let slot = (WIDTH - RIGHT - LEFT) * 0.84 / 3.0;
        for (k, r) in rows.iter().enumerate() {
            let ch = r.change.unwrap();
            let [l, h] = r.ci.unwrap();
            assert!(
                svg.contains(&format!("data-cell=\"{}\" data-change=\"{ch}\"", r.cell)),
                "{}",
                r.cell
            );
            let bx = LEFT + (WIDTH - RIGHT - LEFT) * 0.08 + k as f64 * slot + slot * 0.1;
            let xm = bx + slot * 0.8 / 2.0;
            let whisker = format!(
                "data-ci=\"{l} {h}\" d=\"M{xm:.1} {:.1}V{:.1}M",
                axis.y(l),
                axis.y(h)
            );
            assert!(svg.contains(&whisker), "{whisker} in {svg}");
        }
        // The significant doubling is solid, the unchanged cells pale.
        let bar = |cell: &str| {
            svg.lines()
                .find(|l| l.contains(&format!("data-cell=\"{cell}\"")))
                .unwrap()
                .to_owned()
        };
        assert!(bar("proxy_u100_s50_d0").contains("fill-opacity=\"1\""));
        assert!(bar("echo_u10_s50_d0").contains("fill-opacity=\"0.35\""));
        // The bar starts at zero and goes up to the change.
        let doubled = rows.iter().find(|r| r.cell == "proxy_u100_s50_d0").unwrap();
        let top = axis.y(doubled.change.unwrap());
        let zero = axis.y(0.0);
        assert!(bar("proxy_u100_s50_d0").contains(&format!(
            "y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\"",
            (WIDTH - RIGHT - LEFT) * 0.84 / 3.0 * 0.8,
            zero - top
        )));
        assert!(svg.contains(&format!(
            "class=\"zero\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{zero:.1}\"",
            WIDTH - RIGHT
        )));
    }

    #[test]
    fn sizes_are_groups_and_users_are_bars() {
        // Two sizes x two user counts of one scenario compared with itself shifted.
        let (a, b) = fixture(5);
        let mut c = compare(&[a, b], &opts());
        let pair = &mut c.pairs[0];
        pair.rows.retain(|r| r.metric == "p99_ms");
        for (r, size) in pair.rows.iter_mut().zip([500, 500, 10_000]) {
            r.key.scenario = None;
            r.key.size_bytes = size;
        }
        let svg = render(pair, &["p99_ms"], 0.95).unwrap();
        assert_eq!(svg.matches("class=\"group\"").count(), 2);
        assert!(svg.contains(">500 B</text>") && svg.contains(">10000 B</text>"));
        // Users tell the bars apart, the scenario no longer does.
        assert!(svg.contains(">10 users</text>") && svg.contains(">100 users</text>"));
        assert!(svg.contains("(lower is better)"));
        assert_eq!(
            render(pair, &["sut_rss_mib"], 0.95),
            None,
            "no rows, no chart"
        );
    }
}
