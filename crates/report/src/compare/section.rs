//! The comparison section of `report.html`: when the suite names scenarios to compare
//! (`[suite] compare = ["v1", "v2"]`, the baseline first), the page draws the change of each
//! against the baseline per cell, with its confidence interval ([`super::chart`]), from the
//! run's own records, as `gatebench compare DIR --scenario v1 --scenario v2 --svg` would.

use std::fmt::Write as _;

use gatebench_model::{CellRecord, Environment};

use super::{chart, compare, Options, RunInput};
use crate::svg::esc;

/// Appends the section to `h` and its charts to `svgs` (`compare-<scenario>.svg`); nothing
/// when `scenarios` names fewer than two.
pub fn html(
    h: &mut String,
    svgs: &mut Vec<(String, String)>,
    records: &[CellRecord],
    environment: Option<&Environment>,
    scenarios: &[String],
) {
    if scenarios.len() < 2 {
        return;
    }
    let runs: Vec<RunInput> = scenarios
        .iter()
        .map(|s| RunInput {
            label: s.clone(),
            source: format!("scenario {s}"),
            environment: environment.cloned(),
            records: records
                .iter()
                .filter(|r| &r.cell.scenario == s && r.cell.kind.is_load())
                .cloned()
                .collect(),
        })
        .collect();
    let c = compare(
        &runs,
        &Options {
            match_scenario: false,
            ..Options::default()
        },
    );
    let _ = writeln!(h, "<h2 id=\"comparison\">Comparison</h2>");
    let _ = writeln!(
        h,
        "<p class=\"note\">Each bar is a cell's change against <b>{}</b> (Hodges-Lehmann \
         estimate over the cell's repeats), its whisker the {:.0} % confidence interval; solid \
         bars are significant changes. The tables: <code>gatebench compare DIR --scenario {}</code>.</p>",
        esc(&scenarios[0]),
        c.confidence * 100.0,
        scenarios
            .iter()
            .map(|s| esc(s))
            .collect::<Vec<_>>()
            .join(" --scenario ")
    );
    for w in &c.warnings {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(w));
    }
    for p in &c.pairs {
        let title = format!("{} against {}", p.candidate, p.baseline);
        let _ = writeln!(h, "<h3>{}</h3>", esc(&title));
        match chart::render(p, &chart::CHART_METRICS, c.confidence) {
            Some(svg) => {
                h.push_str(&svg);
                h.push('\n');
                let safe: String = p
                    .candidate
                    .chars()
                    .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
                    .collect();
                svgs.push((format!("compare-{safe}.svg"), svg));
            }
            None => {
                let _ = writeln!(
                    h,
                    "<p class=\"note\">No cell of both has throughput, latency or CPU figures.</p>"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::record;

    /// v2 answers 20 % more than v1 in every one of five repeats: the section charts v2
    /// against v1 (one throughput bar, solid: significant), and the chart is also a plot file.
    #[test]
    fn the_named_scenarios_are_charted_against_the_first() {
        let mut recs = Vec::new();
        for r in 1..=5 {
            let jitter = f64::from(r) * 3.0;
            recs.push(record("v1", 100, r, 1_000.0 + jitter));
            recs.push(record("v2", 100, r, 1_200.0 + jitter));
            recs.push(record("other", 100, r, 50.0));
        }
        let (mut h, mut svgs) = (String::new(), Vec::new());
        html(
            &mut h,
            &mut svgs,
            &recs,
            None,
            &["v1".to_owned(), "v2".to_owned()],
        );
        assert!(h.contains("<h2 id=\"comparison\">Comparison</h2>"), "{h}");
        assert!(h.contains("<h3>v2 against v1</h3>"), "{h}");
        assert!(h.contains("--scenario v1 --scenario v2"), "{h}");
        assert_eq!(svgs.len(), 1);
        assert_eq!(svgs[0].0, "compare-v2.svg");
        assert!(h.contains(&svgs[0].1), "the page holds the chart itself");
        // The change drawn is v2's: +20 % (the bar's label), never the unnamed scenario.
        assert!(svgs[0].1.contains("+20"), "{}", svgs[0].1);
        assert!(!h.contains("other against"), "{h}");
    }

    #[test]
    fn no_section_without_two_scenarios() {
        let recs = vec![record("v1", 100, 1, 1_000.0)];
        let (mut h, mut svgs) = (String::new(), Vec::new());
        html(&mut h, &mut svgs, &recs, None, &[]);
        assert!(h.is_empty() && svgs.is_empty());
    }
}
