//! The WebSocket table: one row per cell of a WebSocket scenario (`[[scenario]] websocket =
//! {…}`), with what the summary's HTTP columns cannot say: connections opened, refused and
//! failed with the opening handshake's latency, opens per second, the messages' round trip at
//! p50 and p99, and the messages that did not come back by class. For `summary.md` and
//! `summary.json`. Pure.

use gatebench_model::CellRecord;
use serde_json::{json, Value};

use crate::table::{ms_at, Row};

/// The WebSocket table's columns.
pub const COLUMNS: [&str; 10] = [
    "Cell",
    "Connections Opened",
    "Refused / Failed",
    "Opens/s",
    "Handshake p99 (ms)",
    "Messages Sent",
    "Messages/s",
    "Round Trip p50 (ms)",
    "Round Trip p99 (ms)",
    "Messages Not Back",
];

/// Every WebSocket cell, in the records' order.
pub fn rows(records: &[CellRecord]) -> Vec<Row> {
    records
        .iter()
        .filter_map(|r| {
            let w = &r.websocket.as_ref()?.websocket;
            let errors = r.unit_load().map(|u| u.errors).unwrap_or_default();
            let not_back = if errors.is_empty() {
                "0".to_owned()
            } else {
                let each: Vec<String> = errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                each.join(", ")
            };
            Some(Row {
                id: r.cell.id.clone(),
                values: vec![
                    r.cell.id.clone(),
                    w.connections_opened.to_string(),
                    format!("{} / {}", w.handshakes_refused, w.connections_failed),
                    format!("{:.1}", w.connections_per_s),
                    ms_at(&w.handshake_latency, 99.0),
                    w.messages_sent.to_string(),
                    format!("{:.1}", w.messages_per_s),
                    ms_at(&w.message_latency, 50.0),
                    ms_at(&w.message_latency, 99.0),
                    not_back,
                ],
            })
        })
        .collect()
}

/// The WebSocket section of `summary.md`; empty when no cell loaded WebSocket.
pub fn markdown(records: &[CellRecord]) -> String {
    crate::searches::section(
        "WebSocket",
        &COLUMNS,
        &rows(records),
        "Cells of WebSocket scenarios, measurement only (their rows above give messages as \
         requests: Error % is the share of messages sent that did not come back, throughput \
         the messages received per second, the latencies their round trips, each from the \
         message's intended send time). The handshake is timed from the connection's intended \
         open when opens are scheduled (a rate in [matrix]). Messages Not Back are by class: \
         timeout, reset, protocol_error, closed (by the server). docs/streams.md has the \
         classes.",
    )
}

/// The `websocket` array of `summary.json`: each WebSocket cell's figures.
pub fn json(records: &[CellRecord]) -> Vec<Value> {
    records
        .iter()
        .filter_map(|r| {
            let w = &r.websocket.as_ref()?.websocket;
            Some(json!({
                "cell": r.cell.id,
                "scenario": r.cell.scenario,
                "connections_attempted": w.connections_attempted,
                "connections_opened": w.connections_opened,
                "handshakes_refused": w.handshakes_refused,
                "connections_failed": w.connections_failed,
                "connections_per_s": w.connections_per_s,
                "handshake_p99_ms": w.handshake_latency.at(99.0),
                "messages_sent": w.messages_sent,
                "messages_received": w.messages_received,
                "messages_per_s": w.messages_per_s,
                "round_trip_p50_ms": w.message_latency.at(50.0),
                "round_trip_p99_ms": w.message_latency.at(99.0),
                "messages_timeout": w.messages_timeout,
                "messages_reset": w.messages_reset,
                "messages_protocol_error": w.messages_protocol_error,
                "messages_closed": w.messages_closed,
                "close_codes": w.close_codes,
            }))
        })
        .collect()
}
