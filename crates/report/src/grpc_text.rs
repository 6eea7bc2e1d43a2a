//! The human report of a gRPC load (`gatebench load grpc://…`): calls in their classes and per
//! second, the latencies of calls, first messages, round trips and gaps as p50/p90/p99/max,
//! and the messages each way.

use std::collections::BTreeMap;
use std::fmt::Write;

use gatebench_model::grpc::GrpcReport;

use crate::fmt::{count, rate};
use crate::ws_text::row;

fn classes(map: &BTreeMap<String, u64>) -> String {
    // `ok` first, then the rest by count.
    let mut rest: Vec<(&String, &u64)> = map.iter().filter(|(k, _)| *k != "ok").collect();
    rest.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let ok = map.get("ok").copied().unwrap_or(0);
    let mut parts = vec![format!("ok {}", count(ok))];
    parts.extend(rest.iter().map(|(k, v)| format!("{k} {}", count(**v))));
    parts.join(", ")
}

/// The report for `g`.
pub fn render(g: &GrpcReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gRPC ({:.1} s): {} calls, {} ok/s; {} connections opened, {} failed",
        g.duration_s,
        count(g.calls_started),
        rate(g.calls_per_s),
        count(g.connections_opened),
        count(g.connections_failed),
    );
    let _ = writeln!(out, "  calls: {}", classes(&g.calls));
    if !g.http_statuses.is_empty() {
        let statuses: Vec<String> = g
            .http_statuses
            .iter()
            .map(|(s, n)| format!("{s} × {}", count(*n)))
            .collect();
        let _ = writeln!(
            out,
            "  HTTP statuses other than 200: {}",
            statuses.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  {:<22}{:>11}{:>11}{:>11}{:>11}",
        "(from the intended time)", "p50", "p90", "p99", "max"
    );
    row(&mut out, "call (ok)", &g.call_latency);
    row(&mut out, "first message", &g.first_message_latency);
    if g.message_latency.count > 0 {
        row(&mut out, "message round trip", &g.message_latency);
    }
    if g.message_gap.count > 0 {
        row(&mut out, "gap between messages", &g.message_gap);
    }
    let _ = writeln!(
        out,
        "  messages: {} sent ({}), {} received ({}/s)",
        count(g.messages_sent),
        classes(&g.messages),
        count(g.messages_received),
        rate(g.messages_per_s),
    );
    if let Some(check) = &g.self_check {
        crate::load_text::self_check_block(&mut out, check, "its runtime threads");
    }
    crate::load_text::thresholds_block(&mut out, &g.thresholds);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_shows_every_class_ok_first() {
        let mut g = GrpcReport {
            duration_s: 2.0,
            connections_opened: 2,
            calls_started: 1_003,
            calls_per_s: 500.0,
            messages_sent: 1_003,
            messages_received: 1_000,
            ..GrpcReport::default()
        };
        g.calls.insert("ok".into(), 1_000);
        g.calls.insert("unavailable".into(), 1);
        g.calls.insert("deadline_exceeded".into(), 2);
        g.messages.insert("ok".into(), 1_000);
        g.messages.insert("deadline_exceeded".into(), 3);
        g.http_statuses.insert("503".into(), 1);
        let text = render(&g);
        assert!(
            text.contains("calls: ok 1,000, deadline_exceeded 2, unavailable 1"),
            "{text}"
        );
        assert!(
            text.contains("HTTP statuses other than 200: 503 × 1"),
            "{text}"
        );
        assert!(
            text.contains("1,003 sent (ok 1,000, deadline_exceeded 3), 1,000 received"),
            "{text}"
        );
        assert!(
            !text.contains("round trip"),
            "no bidi figures, no row: {text}"
        );
    }
}
