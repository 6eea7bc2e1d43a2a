//! A comparison as one self-contained HTML page (`gatebench compare --html`): the runs, the
//! warnings, and per candidate the comparison chart ([`super::chart`]) followed by one table
//! per metric — the same figures as the Markdown report, formatted by [`super::text`]. No
//! script, no external file: the charts are inline SVG.

use std::fmt::Write;

use super::chart::{self, CHART_METRICS};
use super::text::{change, interval, value};
use super::{Comparison, Row, Verdict, METRICS};
use crate::svg::esc;

/// The page.
pub fn render(c: &Comparison) -> String {
    let others: Vec<&str> = c
        .runs
        .iter()
        .filter(|r| r.label != c.baseline)
        .map(|r| r.label.as_str())
        .collect();
    let title = format!(
        "gatebench compare: {} against {}",
        others.join(", "),
        c.baseline
    );
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
         <style>body{{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;\
         max-width:1100px}}table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
         td,th{{border:1px solid #ccc;padding:2px 8px;font-size:13px}}td.n{{text-align:right}}\
         .warn{{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}}\
         .sig{{font-weight:600}}</style>\n</head>\n<body>\n<h1>{}</h1>",
        esc(&title),
        esc(&title)
    );
    h.push_str("<ul>\n");
    for r in &c.runs {
        let repeats = if r.repeats_min == r.repeats_max {
            r.repeats_min.to_string()
        } else {
            format!("{}–{}", r.repeats_min, r.repeats_max)
        };
        let _ = writeln!(
            h,
            "<li><b>{}</b>{}: <code>{}</code>, {} cells, {repeats} repeats per cell</li>",
            esc(&r.label),
            if r.label == c.baseline {
                " (baseline)"
            } else {
                ""
            },
            esc(&r.source),
            r.cells
        );
    }
    h.push_str("</ul>\n");
    let _ = writeln!(
        h,
        "<p>Mann-Whitney U test (exact, two-sided) at α = {}; the change is the Hodges-Lehmann \
         estimate with its {:.0}% confidence interval; the columns of each run are medians of \
         its repeats.</p>",
        c.alpha,
        c.confidence * 100.0
    );
    for w in &c.warnings {
        let _ = writeln!(h, "<p class=\"warn\"><b>Warning:</b> {}</p>", esc(w));
    }
    for p in &c.pairs {
        let k = &p.counts;
        let _ = writeln!(
            h,
            "<h2>{} vs {}: {} improved, {} regressed, {} no significant change{}</h2>",
            esc(&p.candidate),
            esc(&p.baseline),
            k.improved,
            k.regressed,
            k.no_significant_change,
            if k.too_few_repeats > 0 {
                format!(", {} too few repeats to tell", k.too_few_repeats)
            } else {
                String::new()
            }
        );
        if let Some(svg) = chart::render(p, &CHART_METRICS, c.confidence) {
            let _ = writeln!(h, "<figure>\n{svg}</figure>");
        }
        for m in METRICS.iter() {
            let rows: Vec<&Row> = p.rows.iter().filter(|r| r.metric == m.key).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                h,
                "<h3>{} ({}), {} is better</h3>\n<table>\n<tr><th>Cell</th><th>{}</th><th>{}</th>\
                 <th>Change</th><th>Confidence interval</th><th>p (n)</th><th>Verdict</th></tr>",
                esc(m.label),
                esc(m.unit),
                if m.higher_is_better {
                    "higher"
                } else {
                    "lower"
                },
                esc(&p.baseline),
                esc(&p.candidate)
            );
            for r in rows {
                let sig = matches!(r.verdict, Verdict::Improved | Verdict::Regressed);
                let _ = writeln!(
                    h,
                    "<tr><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.3} ({}+{})</td>\
                     <td{}>{}</td></tr>",
                    esc(&r.cell),
                    if r.flags.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", esc(&r.flags.join(", ")))
                    },
                    value(m.key, r.baseline.median),
                    value(m.key, r.candidate.median),
                    esc(&change(r.change, r.change_unit)),
                    esc(&interval(r, c.confidence)),
                    r.p_value,
                    r.baseline.n,
                    r.candidate.n,
                    if sig { " class=\"sig\"" } else { "" },
                    r.verdict.label()
                );
            }
            if let Some(g) = p.geomean.iter().find(|g| g.metric == m.key) {
                let _ = writeln!(
                    h,
                    "<tr><td>geomean, {} cells</td><td></td><td></td><td class=\"n\">{}</td>\
                     <td></td><td></td><td></td></tr>",
                    g.cells,
                    change(Some(g.change_percent), "%")
                );
            }
            h.push_str("</table>\n");
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::compare::tests::{fixture, opts};

    #[test]
    fn the_page_has_the_chart_and_a_table_per_metric() {
        let (a, b) = fixture(5);
        let c = compare(&[a, b], &opts());
        let page = render(&c);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>gatebench compare: B against A</title>"));
        assert_eq!(page.matches("<svg ").count(), 1, "one chart for one pair");
        // Throughput and p99 are compared (opts): two panels, three bars each.
        assert_eq!(page.matches("class=\"bar\"").count(), 6);
        assert_eq!(page.matches("<table>").count(), 2);
        assert!(page.contains("<h2>B vs A: 2 improved, 0 regressed, 4 no significant change</h2>"));
        assert!(page.contains("<td class=\"sig\">improved</td>"));
        assert!(!page.contains("<script"));
    }
}
