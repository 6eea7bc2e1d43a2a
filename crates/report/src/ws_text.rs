//! The human report of a WebSocket load (`gatebench load ws://…`): connections opened and
//! refused with the handshake's latency, messages in their classes, the round trip from each
//! message's intended send time as p50/p90/p99/max, and the close codes the server sent.

use std::fmt::Write;

use gatebench_model::websocket::WebSocketReport;
use gatebench_model::LatencySummary;

use crate::fmt::{count, duration_ms, rate};

/// One latency row: p50, p90, p99 and max, or `none`.
pub(crate) fn row(out: &mut String, name: &str, l: &LatencySummary) {
    if l.count == 0 {
        let _ = writeln!(out, "  {name:<22}{:>11}", "none");
        return;
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

/// The report for `w`.
pub fn render(w: &WebSocketReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "WebSocket ({:.1} s): {} connections opened of {} attempts ({}/s; {} refused, {} failed; {} closed by gatebench)",
        w.duration_s,
        count(w.connections_opened),
        count(w.connections_attempted),
        rate(w.connections_per_s),
        count(w.handshakes_refused),
        count(w.connections_failed),
        count(w.connections_closed),
    );
    let _ = writeln!(
        out,
        "  {:<22}{:>11}{:>11}{:>11}{:>11}",
        "", "p50", "p90", "p99", "max"
    );
    row(&mut out, "handshake", &w.handshake_latency);
    row(&mut out, "message round trip", &w.message_latency);
    let _ = writeln!(
        out,
        "  messages: {} sent, {} received ({}/s), {} timeout, {} reset, {} protocol_error, {} closed",
        count(w.messages_sent),
        count(w.messages_received),
        rate(w.messages_per_s),
        count(w.messages_timeout),
        count(w.messages_reset),
        count(w.messages_protocol_error),
        count(w.messages_closed),
    );
    if !w.close_codes.is_empty() {
        let codes: Vec<String> = w
            .close_codes
            .iter()
            .map(|(code, n)| format!("{code} × {}", count(*n)))
            .collect();
        let _ = writeln!(out, "  close codes from the server: {}", codes.join(", "));
    }
    if w.pings_answered > 0 {
        let _ = writeln!(out, "  pings answered: {}", count(w.pings_answered));
    }
    if let Some(check) = &w.self_check {
        crate::load_text::self_check_block(&mut out, check, "its runtime threads");
    }
    crate::load_text::thresholds_block(&mut out, &w.thresholds);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_shows_every_class_and_the_close_codes() {
        let mut w = WebSocketReport {
            duration_s: 2.0,
            connections_attempted: 3,
            connections_opened: 2,
            handshakes_refused: 1,
            connections_closed: 2,
            connections_per_s: 1.0,
            messages_sent: 1_200,
            messages_received: 1_150,
            messages_closed: 50,
            messages_per_s: 575.0,
            ..WebSocketReport::default()
        };
        w.close_codes.insert("1011".into(), 1);
        let text = render(&w);
        assert!(
            text.contains(
                "2 connections opened of 3 attempts (1.0/s; 1 refused, 0 failed; 2 closed by gatebench)"
            ),
            "{text}"
        );
        assert!(text.contains("1,200 sent, 1,150 received"), "{text}");
        assert!(text.contains("50 closed"), "{text}");
        assert!(
            text.contains("close codes from the server: 1011 × 1"),
            "{text}"
        );
        assert!(
            text.contains("handshake") && text.contains("none"),
            "no handshake figures: {text}"
        );
    }
}
