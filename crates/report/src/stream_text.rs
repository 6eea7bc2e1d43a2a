//! The stream section of the human load report (`gatebench load --stream`): time to first
//! byte and to first event (token), the gaps between events (inter-token latency), stream
//! durations, each stamped event's delay from its sender's stamp when events carried one, and
//! each stream's rate, as p50/p90/p99/max rows, and the totals. The classes a
//! stream can end in are in the report's error list with every other class.

use std::fmt::Write;

use gatebench_model::{LatencySummary, StreamReport};

use crate::fmt::{count, duration_ms, rate};

/// Appends the section for `s` to `out`.
pub fn render(out: &mut String, s: &StreamReport) {
    let one = s.unit.trim_end_matches('s');
    let _ = writeln!(
        out,
        "Streams ({}: {} complete, {} {} at {}/s in total; a stream with no {one} for {} stalled)",
        s.mode,
        count(s.completed),
        count(s.events),
        s.unit,
        rate(s.events_per_s),
        duration_ms(s.stall_ms),
    );
    let _ = writeln!(
        out,
        "  {:<22}{:>11}{:>11}{:>11}{:>11}",
        "", "p50", "p90", "p99", "max"
    );
    let mut rows: Vec<(String, &LatencySummary)> = vec![
        ("time to first byte".into(), &s.time_to_first_byte),
        (format!("time to first {one}"), &s.time_to_first_event),
        (format!("inter-{one} gap"), &s.inter_event),
        ("stream duration".into(), &s.duration),
    ];
    if let Some(d) = &s.event_delay {
        rows.push((format!("{one} delay (stamp)"), d));
    }
    for (name, l) in rows {
        if l.count == 0 {
            let _ = writeln!(out, "  {name:<22}{:>11}", "none");
            continue;
        }
        let at = |p| duration_ms(l.at(p).unwrap_or(0.0));
        let _ = writeln!(
            out,
            "  {name:<22}{:>11}{:>11}{:>11}{:>11}",
            at(50.0),
            at(90.0),
            at(99.0),
            duration_ms(l.max_ms)
        );
    }
    let r = &s.events_per_s_per_stream;
    let name = format!("{}/s per stream", s.unit);
    if r.count == 0 {
        let _ = writeln!(out, "  {name:<22}{:>11}", "none");
    } else {
        // Slow streams are the tail: the low percentiles are what p99 is for a latency.
        let _ = writeln!(
            out,
            "  {name:<22}{:>11}{:>11}{:>11}{:>11}   (min {})",
            rate(r.p50),
            rate(r.p90),
            rate(r.p99),
            rate(r.max),
            rate(r.min)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::histogram::{new_histogram, summarize};
    use gatebench_model::RateSummary;

    fn summary(ms: &[u64]) -> LatencySummary {
        let mut h = new_histogram();
        for v in ms {
            h.record(v * 1_000_000).unwrap();
        }
        summarize(&h)
    }

    #[test]
    fn the_section_names_its_unit_and_figures() {
        let s = StreamReport {
            mode: "llm".into(),
            unit: "tokens".into(),
            stall_ms: 5000.0,
            completed: 12,
            events: 600,
            events_per_s: 59.94,
            time_to_first_byte: summary(&[1, 1, 2]),
            time_to_first_event: summary(&[200, 201, 210]),
            inter_event: summary(&[20, 20, 21, 25]),
            duration: summary(&[1200]),
            event_delay: Some(summary(&[1, 2, 3])),
            events_per_s_per_stream: RateSummary {
                count: 12,
                min: 45.0,
                mean: 49.0,
                p50: 49.5,
                p90: 50.0,
                p99: 50.1,
                max: 50.2,
            },
        };
        let mut out = String::new();
        render(&mut out, &s);
        assert!(out.starts_with("Streams (llm: 12 complete, 600 tokens at 59.9/s in total; a stream with no token for 5.00s stalled)"), "{out}");
        assert!(out.contains("time to first token"), "{out}");
        assert!(out.contains("inter-token gap"), "{out}");
        assert!(out.contains("tokens/s per stream"), "{out}");
        let delay = out
            .lines()
            .find(|l| l.contains("token delay (stamp)"))
            .unwrap();
        assert!(delay.contains("3.00ms"), "{delay}");
        let ttft = out.lines().find(|l| l.contains("first token")).unwrap();
        assert!(ttft.contains("201") && ttft.contains("210"), "{ttft}");
    }
}
