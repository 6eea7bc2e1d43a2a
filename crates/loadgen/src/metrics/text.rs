//! The text exposition format, version 0.0.4 (`text/plain; version=0.0.4`), which every
//! Prometheus scrapes: `# HELP`, `# TYPE` and one line per sample. A histogram is written as its
//! classic buckets (`_bucket{le}`, cumulative, `+Inf` last), `_sum` and `_count`; the format
//! has no native histograms (the protobuf exposition in [`super::scrape`] does).
//!
//! <https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format>

use std::fmt::Write as _;

use super::{Family, Kind, Snapshot, Value};

/// The exposition text of `snap`.
pub fn render(snap: &Snapshot) -> String {
    let mut out = String::with_capacity(8192);
    for f in &snap.families {
        family(&mut out, snap, f);
    }
    out
}

fn family(out: &mut String, snap: &Snapshot, f: &Family) {
    let kind = match f.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
        Kind::Histogram => "histogram",
    };
    let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
    let _ = writeln!(out, "# TYPE {} {kind}", f.name);
    for s in &f.series {
        let labels = |out: &mut String, le: Option<&str>| {
            let mut pairs = snap
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain(s.labels.iter().copied())
                .chain(le.map(|le| ("le", le)))
                .peekable();
            if pairs.peek().is_none() {
                return;
            }
            out.push('{');
            for (i, (k, v)) in pairs.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{k}=\"");
                escape_into(out, v);
                out.push('"');
            }
            out.push('}');
        };
        match &s.value {
            Value::Int(v) => {
                out.push_str(f.name);
                labels(out, None);
                let _ = writeln!(out, " {v}");
            }
            Value::Float(v) => {
                out.push_str(f.name);
                labels(out, None);
                let _ = writeln!(out, " {v}");
            }
            Value::Histogram(h) => {
                for (le, n) in h.cumulative() {
                    let le = if le.is_infinite() {
                        "+Inf".to_owned()
                    } else {
                        le.to_string()
                    };
                    let _ = write!(out, "{}_bucket", f.name);
                    labels(out, Some(&le));
                    let _ = writeln!(out, " {n}");
                }
                let _ = write!(out, "{}_sum", f.name);
                labels(out, None);
                let _ = writeln!(out, " {}", h.sum_s);
                let _ = write!(out, "{}_count", f.name);
                labels(out, None);
                let _ = writeln!(out, " {}", h.count);
            }
        }
    }
}

/// `a\b"c` → `a\\b\"c`, newlines as `\n`: a label value as the exposition format writes it.
fn escape_into(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use gatebench_model::histogram::new_histogram;
    use gatebench_model::{Outcome, OutcomeCounts};

    use crate::metrics::LiveMetrics;

    /// The exposition a scrape gets: counters by phase and outcome, the histogram's cumulative
    /// buckets, sum and count, every series with the run's labels.
    #[test]
    fn a_scrape_reads_the_seconds_so_far() {
        let m = LiveMetrics::new(&[("scenario".into(), "proxy \"a\"".into())]);
        let mut h = new_histogram();
        h.record_n(2_000_000, 90).unwrap(); // 2 ms
        h.record_n(300_000_000, 10).unwrap(); // 300 ms
        let mut o = OutcomeCounts::default();
        o.add(Outcome::Ok, 95);
        o.add(Outcome::Status5xx, 5);
        m.second(true, 100, &o, &h, Duration::from_secs(1), Some(100.0));
        m.second(false, 110, &o, &h, Duration::from_secs(1), Some(100.0));
        let text = m.render();
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        has(r#"gatebench_requests_sent_total{scenario="proxy \"a\"",phase="measurement"} 110"#);
        has(
            r#"gatebench_requests_total{scenario="proxy \"a\"",phase="measurement",outcome="ok"} 95"#,
        );
        has(
            r#"gatebench_requests_total{scenario="proxy \"a\"",phase="measurement",outcome="status_5xx"} 5"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.001"} 0"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.0025"} 90"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.25"} 90"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.5"} 100"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="+Inf"} 100"#,
        );
        has(
            r#"gatebench_request_duration_seconds_count{scenario="proxy \"a\"",phase="measurement"} 100"#,
        );
        has(r#"gatebench_in_flight_requests{scenario="proxy \"a\""} 10"#);
        has(r#"gatebench_phase{scenario="proxy \"a\""} 1"#);
        has(r#"gatebench_target_rate{scenario="proxy \"a\""} 100"#);
        let sum: f64 = text
            .lines()
            .find(|l| {
                l.starts_with("gatebench_request_duration_seconds_sum") && l.contains("measurement")
            })
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - (90.0 * 0.002 + 10.0 * 0.3)).abs() < 0.01, "{sum}");
        let mut end = o;
        end.add(Outcome::InFlight, 3);
        m.finish(&end);
        let text = m.render();
        assert!(text.contains("outcome=\"in_flight\"} 3"), "{text}");
        assert!(
            text.contains("gatebench_phase{scenario=\"proxy \\\"a\\\"\"} 2"),
            "{text}"
        );
    }
}
