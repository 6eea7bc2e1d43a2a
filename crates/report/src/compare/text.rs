//! A comparison's figures as text: a value in its metric's format, a change with its sign and
//! unit, a confidence interval, and the one-line description of a row that the JUnit renderer
//! and the CLI's summary line use. Shared by the renderers; it lays out no document itself.

use std::fmt::Write;

use super::{Metric, Row, METRICS};
use crate::fmt::rate;

/// A value in its metric's format.
pub fn value(metric: &str, v: f64) -> String {
    match metric {
        "throughput_rps" => rate(v),
        "error_percent" | "gc_throughput_percent" => format!("{v:.2}"),
        "sut_cpu_percent" | "sut_rss_mib" | "heap_after_full_gc_mib" => format!("{v:.1}"),
        _ => significant(v),
    }
}

/// Three significant digits, never in exponent form (`0.0812`, `1.23`, `45.6`, `1234`).
fn significant(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_owned()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let digits = (-a.log10().floor()) as usize + 2;
        format!("{v:.digits$}")
    }
}

/// A change with its sign and unit: `+12.3%`, `-0.40 pp`.
pub fn change(c: Option<f64>, unit: &str) -> String {
    match c {
        None => "n/a (from 0)".to_owned(),
        Some(c) if unit == "%" => format!("{c:+.1}%"),
        Some(c) => format!("{c:+.2} {unit}"),
    }
}

fn trim_level(pct: f64) -> String {
    let s = format!("{pct:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// A row's confidence interval with its level (`-1.2% … +1.1% (95%)`); empty when the row has
/// none.
pub fn interval(r: &Row, confidence: f64) -> String {
    match (r.ci, r.ci_level) {
        (Some([lo, hi]), Some(level)) => {
            let f = |x: f64| change(Some(x), r.change_unit);
            // The nominal level when it is reached (the interval is then conservative), else
            // the level the repeats allow.
            let shown = if level + 1e-9 >= confidence {
                confidence
            } else {
                level
            };
            format!("{} … {} ({}%)", f(lo), f(hi), trim_level(shown * 100.0))
        }
        _ => String::new(),
    }
}

fn metric_of(key: &str) -> &'static Metric {
    METRICS
        .iter()
        .find(|m| m.key == key)
        .expect("rows name known metrics")
}

/// A short text for one row, used by the JUnit renderer and the CLI's summary line.
pub fn describe(r: &Row, alpha: f64, confidence: f64) -> String {
    let m = metric_of(r.metric);
    let mut s = format!(
        "{} {}: {} → {} {} ({}",
        r.cell,
        m.label,
        value(m.key, r.baseline.median),
        value(m.key, r.candidate.median),
        m.unit,
        change(r.change, r.change_unit),
    );
    let ci = interval(r, confidence);
    if !ci.is_empty() {
        let _ = write!(s, ", CI {ci}");
    }
    let _ = write!(
        s,
        ", p = {:.3}, n = {}+{}, α = {alpha}): {}",
        r.p_value,
        r.baseline.n,
        r.candidate.n,
        r.verdict.label()
    );
    s
}
