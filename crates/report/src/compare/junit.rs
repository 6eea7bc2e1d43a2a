//! A comparison as JUnit XML, for CI systems that show test reports (GitLab, Jenkins, GitHub
//! actions that read JUnit).
//!
//! One `<testsuite>` per candidate against the baseline, one `<testcase>` per cell and metric:
//! a regression beyond the threshold is a `<failure>` (what `--fail-on-regression` exits 1
//! on), a comparison the repeats are too few to decide is `<skipped>`, everything else passes
//! with its figures in `<system-out>`. The element and attribute set is the common subset of
//! the Ant JUnit schema every reader accepts.

use std::fmt::Write;

use super::text::describe;
use super::{Comparison, Verdict};

/// Escapes text for XML attributes and content.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters other than tab and newlines are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The comparison as a JUnit XML document.
pub fn render(c: &Comparison) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let tests: usize = c.pairs.iter().map(|p| p.rows.len()).sum();
    let failures = c.regressions_beyond_threshold();
    let skipped: usize = c.pairs.iter().map(|p| p.counts.too_few_repeats).sum();
    let _ = writeln!(
        out,
        "<testsuites name=\"gatebench compare\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"0\" skipped=\"{skipped}\">"
    );
    for p in &c.pairs {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            esc(&format!("{} vs {}", p.candidate, p.baseline)),
            p.rows.len(),
            p.counts.regressed_beyond_threshold,
            p.counts.too_few_repeats
        );
        let _ = writeln!(out, "    <properties>");
        let mut props = vec![
            ("baseline", p.baseline.clone()),
            ("candidate", p.candidate.clone()),
            ("alpha", c.alpha.to_string()),
            ("confidence", c.confidence.to_string()),
        ];
        if let Some(t) = c.threshold {
            props.push(("threshold", t.to_string()));
        }
        for (k, v) in props {
            let _ = writeln!(out, "      <property name=\"{k}\" value=\"{}\"/>", esc(&v));
        }
        let _ = writeln!(out, "    </properties>");
        for r in &p.rows {
            let class = format!(
                "gatebench.compare.{}",
                r.key.scenario.as_deref().unwrap_or("cell")
            );
            let name = format!("{} {}", r.cell, r.metric);
            let text = describe(r, c.alpha, c.confidence);
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
                esc(&class),
                esc(&name)
            );
            if r.beyond_threshold {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"regression\" message=\"{}\">{}</failure>\n    </testcase>",
                    esc(&text),
                    esc(&text)
                );
            } else if r.verdict == Verdict::TooFewRepeats {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(&format!(
                        "too few repeats to tell ({} and {}): {text}",
                        r.baseline.n, r.candidate.n
                    ))
                );
            } else {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    esc(&text)
                );
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::fixture;
    use crate::compare::{compare, Options};

    #[test]
    fn escapes() {
        assert_eq!(esc("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot; ");
    }

    #[test]
    fn junit_rendering() {
        let (a, b) = fixture(5);
        let c = compare(
            &[b, a],
            &Options {
                threshold: Some(5.0),
                metrics: vec!["throughput_rps".into()],
                ..Options::default()
            },
        );
        insta::assert_snapshot!(render(&c), @r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="gatebench compare" tests="3" failures="1" errors="0" skipped="0">
              <testsuite name="A vs B" tests="3" failures="1" errors="0" skipped="0">
                <properties>
                  <property name="baseline" value="B"/>
                  <property name="candidate" value="A"/>
                  <property name="alpha" value="0.05"/>
                  <property name="confidence" value="0.95"/>
                  <property name="threshold" value="5"/>
                </properties>
                <testcase classname="gatebench.compare.echo" name="echo_u10_s50_d0 throughput_rps" time="0">
                  <system-out>echo_u10_s50_d0 Throughput: 20,000.0 → 20,000.0 req/s (+0.0%, CI -1.1% … +1.2% (95%), p = 1.000, n = 5+5, α = 0.05): no significant change</system-out>
                </testcase>
                <testcase classname="gatebench.compare.proxy" name="proxy_u10_s50_d0 throughput_rps" time="0">
                  <system-out>proxy_u10_s50_d0 Throughput: 10,000.0 → 10,040.0 req/s (+0.0%, CI -1.5% … +1.4% (95%), p = 1.000, n = 5+5, α = 0.05): no significant change</system-out>
                </testcase>
                <testcase classname="gatebench.compare.proxy" name="proxy_u100_s50_d0 throughput_rps" time="0">
                  <failure type="regression" message="proxy_u100_s50_d0 Throughput: 18,000.0 → 8,973.0 req/s (-50.2%, CI -50.8% … -49.3% (95%), p = 0.008, n = 5+5, α = 0.05): regressed">proxy_u100_s50_d0 Throughput: 18,000.0 → 8,973.0 req/s (-50.2%, CI -50.8% … -49.3% (95%), p = 0.008, n = 5+5, α = 0.05): regressed</failure>
                </testcase>
              </testsuite>
            </testsuites>
        "#);
    }

    #[test]
    fn too_few_repeats_are_skipped() {
        let (a, b) = fixture(2);
        let c = compare(
            &[a, b],
            &Options {
                metrics: vec!["throughput_rps".into()],
                ..Options::default()
            },
        );
        let x = render(&c);
        assert_eq!(x.matches("<skipped ").count(), 3, "{x}");
        assert!(x.contains("skipped=\"3\""));
    }
}
