//! A comparison as Markdown (what `gatebench compare` prints by default): which runs were
//! compared and how, the warnings, then per candidate one table per metric with a geometric
//! mean row, and the cells only one side has. It computes nothing: every figure comes from the
//! [`Comparison`], formatted by [`super::text`].

use std::fmt::Write;

use super::text::{change, interval, value};
use super::{Comparison, Row, Verdict, METRICS};

/// The Markdown report: a header, the warnings, and per candidate one table per metric.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let others: Vec<&str> = c
        .runs
        .iter()
        .filter(|r| r.label != c.baseline)
        .map(|r| r.label.as_str())
        .collect();
    let _ = writeln!(
        out,
        "# gatebench compare: {} against {}\n",
        others.join(", "),
        c.baseline
    );
    for r in &c.runs {
        let repeats = if r.repeats_min == r.repeats_max {
            format!("{}", r.repeats_min)
        } else {
            format!("{}–{}", r.repeats_min, r.repeats_max)
        };
        let _ = writeln!(
            out,
            "- **{}**{}: `{}`, {} cells, {} repeats per cell",
            r.label,
            if r.label == c.baseline {
                " (baseline)"
            } else {
                ""
            },
            r.source,
            r.cells,
            repeats
        );
    }
    let _ = writeln!(
        out,
        "\nMann-Whitney U test (exact, two-sided) at α = {}; the change is the Hodges-Lehmann \
         estimate with its {:.0}% confidence interval (lower where the repeats allow no more); \
         the columns of each run are medians of its repeats.{}",
        c.alpha,
        c.confidence * 100.0,
        match c.threshold {
            Some(t) => format!(
                " Regressions beyond {t}% (percentage points for Error % and GC throughput) \
                 fail the gate."
            ),
            None => String::new(),
        }
    );
    for w in &c.warnings {
        let _ = writeln!(out, "\n> **Warning:** {w}");
    }
    for p in &c.pairs {
        let k = &p.counts;
        let _ = writeln!(
            out,
            "\n## {} vs {}: {} improved, {} regressed{}, {} no significant change{}",
            p.candidate,
            p.baseline,
            k.improved,
            k.regressed,
            if c.threshold.is_some() {
                format!(" ({} beyond the threshold)", k.regressed_beyond_threshold)
            } else {
                String::new()
            },
            k.no_significant_change,
            if k.too_few_repeats > 0 {
                format!(", {} too few repeats to tell", k.too_few_repeats)
            } else {
                String::new()
            }
        );
        for m in METRICS.iter() {
            let rows: Vec<&Row> = p.rows.iter().filter(|r| r.metric == m.key).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "\n### {} ({}), {} is better\n",
                m.label,
                m.unit,
                if m.higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            );
            let _ = writeln!(
                out,
                "| Cell | {} | {} | Change | Confidence interval | p (n) | Verdict |",
                p.baseline, p.candidate
            );
            let _ = writeln!(out, "|---|---:|---:|---:|---|---:|---|");
            for r in rows {
                let verdict = match r.verdict {
                    Verdict::Regressed if r.beyond_threshold && c.threshold.is_some() => {
                        format!("**{}** (beyond the threshold)", r.verdict.label())
                    }
                    Verdict::Improved | Verdict::Regressed => {
                        format!("**{}**", r.verdict.label())
                    }
                    v => v.label().to_owned(),
                };
                let flags = if r.flags.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.flags.join(", "))
                };
                let _ = writeln!(
                    out,
                    "| {}{flags} | {} | {} | {} | {} | {:.3} ({}+{}) | {verdict} |",
                    r.cell.replace('|', "\\|"),
                    value(m.key, r.baseline.median),
                    value(m.key, r.candidate.median),
                    change(r.change, r.change_unit),
                    interval(r, c.confidence),
                    r.p_value,
                    r.baseline.n,
                    r.candidate.n,
                );
            }
            if let Some(g) = p.geomean.iter().find(|g| g.metric == m.key) {
                let _ = writeln!(
                    out,
                    "| geomean, {} cells | | | {} | | | |",
                    g.cells,
                    change(Some(g.change_percent), "%")
                );
            }
        }
        if !p.only_in_baseline.is_empty() {
            let _ = writeln!(
                out,
                "\nOnly in {}: {}",
                p.baseline,
                p.only_in_baseline.join(", ")
            );
        }
        if !p.only_in_candidate.is_empty() {
            let _ = writeln!(
                out,
                "\nOnly in {}: {}",
                p.candidate,
                p.only_in_candidate.join(", ")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::{env, fixture, opts, run};
    use crate::compare::{compare, Options};

    #[test]
    fn markdown_rendering() {
        let (a, b) = fixture(5);
        let c = compare(
            &[a, b],
            &Options {
                threshold: Some(5.0),
                ..opts()
            },
        );
        insta::assert_snapshot!(render(&c), @r"
            # gatebench compare: B against A

            - **A** (baseline): `results/A`, 3 cells, 5 repeats per cell
            - **B**: `results/B`, 3 cells, 5 repeats per cell

            Mann-Whitney U test (exact, two-sided) at α = 0.05; the change is the Hodges-Lehmann estimate with its 95% confidence interval (lower where the repeats allow no more); the columns of each run are medians of its repeats. Regressions beyond 5% (percentage points for Error % and GC throughput) fail the gate.

            ## B vs A: 2 improved, 0 regressed (0 beyond the threshold), 4 no significant change

            ### Throughput (req/s), higher is better

            | Cell | A | B | Change | Confidence interval | p (n) | Verdict |
            |---|---:|---:|---:|---|---:|---|
            | echo_u10_s50_d0 | 20,000.0 | 20,000.0 | +0.0% | -1.2% … +1.1% (95%) | 1.000 (5+5) | no significant change |
            | proxy_u10_s50_d0 | 10,040.0 | 10,000.0 | +0.0% | -1.4% … +1.5% (95%) | 1.000 (5+5) | no significant change |
            | proxy_u100_s50_d0 | 8,973.0 | 18,000.0 | +100.6% | +97.4% … +103.4% (95%) | 0.008 (5+5) | **improved** |
            | geomean, 3 cells | | | +26.0% | | | |

            ### 99th percentile of response time (ms), lower is better

            | Cell | A | B | Change | Confidence interval | p (n) | Verdict |
            |---|---:|---:|---:|---|---:|---|
            | echo_u10_s50_d0 | 2.00 | 2.00 | +0.0% | -1.1% … +1.2% (95%) | 1.000 (5+5) | no significant change |
            | proxy_u10_s50_d0 | 3.98 | 4.00 | +0.0% | -1.5% … +1.4% (95%) | 1.000 (5+5) | no significant change |
            | proxy_u100_s50_d0 | 44.6 | 22.2 | -50.2% | -50.8% … -49.3% (95%) | 0.008 (5+5) | **improved** |
            | geomean, 3 cells | | | -20.6% | | | |
        ");
    }

    #[test]
    fn markdown_with_warnings() {
        let a = run("A", &[("echo", 10, &[100.0, 101.0, 99.0])]);
        let mut b = run("B", &[("echo", 10, &[120.0, 121.0, 119.0])]);
        b.environment = Some(env("Other CPU"));
        b.records[0].load.as_mut().unwrap().valid = false;
        let c = compare(
            &[a, b],
            &Options {
                metrics: vec!["throughput_rps".into(), "error_percent".into()],
                ..Options::default()
            },
        );
        insta::assert_snapshot!(render(&c), @r#"
            # gatebench compare: B against A

            - **A** (baseline): `results/A`, 1 cells, 3 repeats per cell
            - **B**: `results/B`, 1 cells, 3 repeats per cell

            Mann-Whitney U test (exact, two-sided) at α = 0.05; the change is the Hodges-Lehmann estimate with its 95% confidence interval (lower where the repeats allow no more); the columns of each run are medians of its repeats.

            > **Warning:** too few repeats to tell: 2 of 2 comparisons cannot reach significance at α = 0.05 whatever the data (with 3 and 3 repeats the smallest possible p-value is 0.100). Run at least 5 repeats per cell (`repeats = 5` in [suite], or `gatebench run --repeats 5`); benchstat advises 10.

            > **Warning:** the runs' environments differ, so a change may come from the machine or the tool rather than the system under test: cpu_model of B: "Test CPU" vs "Other CPU"

            > **Warning:** 1 repeat(s) were generator-bound (flagged in the rows): their figures describe the load generator, not the system under test

            ## B vs A: 0 improved, 0 regressed, 0 no significant change, 2 too few repeats to tell

            ### Throughput (req/s), higher is better

            | Cell | A | B | Change | Confidence interval | p (n) | Verdict |
            |---|---:|---:|---:|---|---:|---|
            | echo_u10_s50_d0 (generator-bound) | 100.0 | 120.0 | +20.0% | +17.8% … +22.2% (90%) | 0.100 (3+3) | too few repeats |
            | geomean, 1 cells | | | +20.0% | | | |

            ### Error % (% of requests), lower is better

            | Cell | A | B | Change | Confidence interval | p (n) | Verdict |
            |---|---:|---:|---:|---|---:|---|
            | echo_u10_s50_d0 (generator-bound) | 0.00 | 0.00 | +0.00 pp | +0.00 pp … +0.00 pp (90%) | 1.000 (3+3) | too few repeats |
        "#);
    }
}
