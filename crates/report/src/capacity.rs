//! The capacity search's text table and its latency-against-rate chart.

use std::fmt::Write;

use gatebench_model::{CapacityReport, CapacityVerdict};

use crate::fmt::{duration_ms, rate};
use crate::svg::{self, Chart, Scale, Series};

/// The steps as a table, then the answer in one sentence.
pub fn render(r: &CapacityReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Capacity search: {} — {} ({} connections)",
        r.slo, r.url, r.connections
    );
    let _ = writeln!(
        out,
        "  step  phase       rate req/s   sent req/s     p50        p99        p99.9      errors   verdict"
    );
    for s in &r.steps {
        let _ = writeln!(
            out,
            "  {:>4}  {:<8} {:>13} {:>12} {:>10} {:>10} {:>10} {:>8.3}%  {}",
            s.step,
            s.phase,
            rate(s.rate),
            rate(s.sent_rps),
            duration_ms(s.p50_ms),
            duration_ms(s.p99_ms),
            duration_ms(s.p999_ms),
            s.error_percent,
            if s.passed {
                "pass".to_owned()
            } else if !s.generator_warnings.is_empty() {
                format!("generator-bound: {}", s.generator_warnings.join("; "))
            } else {
                format!("fail: {}", s.reason)
            }
        );
    }
    let _ = writeln!(out, "{}", verdict(r));
    if let Some(k) = r.knee_rate {
        let _ = writeln!(
            out,
            "Knee of the latency curve: {} req/s (where latency starts to climb)",
            rate(k)
        );
    }
    out
}

/// The answer in one sentence.
pub fn verdict(r: &CapacityReport) -> String {
    match (r.verdict, r.max_rate, r.failed_rate) {
        (CapacityVerdict::Found, Some(m), Some(f)) => format!(
            "Max rate within the SLO: {} req/s (passed twice; {} req/s failed: within {:.1}%)",
            rate(m),
            rate(f),
            r.uncertainty_percent.unwrap_or(0.0)
        ),
        (CapacityVerdict::Found, Some(m), None) => format!(
            "Max rate within the SLO: at least {} req/s (the highest rate the search tries)",
            rate(m)
        ),
        (CapacityVerdict::GeneratorBound, Some(m), _) => format!(
            "The generator was the bottleneck before the target: the max rate within the SLO is \
             at least {} req/s (add --threads, or generate load from more machines)",
            rate(m)
        ),
        (CapacityVerdict::GeneratorBound, None, _) => "The generator was the bottleneck before \
             any rate passed: no answer (add --threads, or generate load from more machines)"
            .to_owned(),
        (CapacityVerdict::NoneMet, _, f) => format!(
            "No rate tried met the SLO (the lowest tried, {} req/s, failed)",
            f.map_or("?".to_owned(), rate)
        ),
        (_, m, f) => format!(
            "The step limit ran out before the precision was reached: passed at {} req/s, \
             failed at {} req/s",
            m.map_or("-".to_owned(), rate),
            f.map_or("-".to_owned(), rate)
        ),
    }
}

/// Latency (p50, p99, p99.9) against the rate of every step, log-scaled, with the answer and
/// the knee marked.
pub fn chart(r: &CapacityReport) -> String {
    let mut steps: Vec<_> = r.steps.iter().collect();
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let line = |name: &str, f: &dyn Fn(&gatebench_model::CapacityStep) -> f64| Series {
        name: name.to_owned(),
        points: steps.iter().map(|s| (s.rate, f(s))).collect(),
        markers: true,
        ..Series::default()
    };
    let mut c = Chart::new(
        &format!("Latency against rate — {}", r.slo),
        "rate, requests/s",
        "latency, ms (corrected)",
    );
    c.y_scale = Scale::Log;
    c.y_from_zero = false;
    c.series = vec![
        line("p50", &|s| s.p50_ms),
        line("p99", &|s| s.p99_ms),
        line("p99.9", &|s| s.p999_ms),
    ];
    let (lo, hi) = steps.iter().fold((f64::MAX, f64::MIN), |(a, b), s| {
        (a.min(s.rate), b.max(s.rate))
    });
    let mark = (hi - lo).max(1.0) * 0.004;
    if let Some(m) = r.max_rate {
        c.shade
            .push((m - mark, m + mark, format!("max within SLO {}", rate(m))));
    }
    if let Some(k) = r.knee_rate {
        c.shade
            .push((k - mark, k + mark, format!("knee {}", rate(k))));
    }
    svg::render(&[c], 360.0)
}
