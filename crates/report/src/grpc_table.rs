//! The gRPC table: one row per cell of a gRPC scenario (`[[scenario]] grpc = {…}`), with what
//! the summary's HTTP columns cannot say: calls per second, time to the first reply message,
//! a bidirectional message's round trip, messages per second each way, and the calls that did
//! not end `ok` by class. For `summary.md` and `summary.json`. Pure.

use gatebench_model::CellRecord;
use serde_json::{json, Value};

use crate::table::{ms_at, Row};

/// The gRPC table's columns.
pub const COLUMNS: [&str; 10] = [
    "Cell",
    "Kind",
    "Calls",
    "OK Calls/s",
    "Call p99 (ms)",
    "First Message p99 (ms)",
    "Message Round Trip p99 (ms)",
    "Messages Sent/s",
    "Messages Received/s",
    "Calls Not OK",
];

fn not_ok(calls: &std::collections::BTreeMap<String, u64>) -> String {
    let failed: Vec<String> = calls
        .iter()
        .filter(|(k, n)| *k != "ok" && **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if failed.is_empty() {
        "0".to_owned()
    } else {
        failed.join(", ")
    }
}

/// Every gRPC cell, in the records' order.
pub fn rows(records: &[CellRecord]) -> Vec<Row> {
    records
        .iter()
        .filter_map(|r| {
            let rec = r.grpc.as_ref()?;
            let g = &rec.grpc;
            let secs = g.duration_s.max(1e-9);
            Some(Row {
                id: r.cell.id.clone(),
                values: vec![
                    r.cell.id.clone(),
                    rec.config.call_kind.replace('_', "-"),
                    g.calls_started.to_string(),
                    format!("{:.1}", g.calls_per_s),
                    ms_at(&g.call_latency, 99.0),
                    ms_at(&g.first_message_latency, 99.0),
                    ms_at(&g.message_latency, 99.0),
                    format!("{:.1}", g.messages_sent as f64 / secs),
                    format!("{:.1}", g.messages_per_s),
                    not_ok(&g.calls),
                ],
            })
        })
        .collect()
}

/// The gRPC section of `summary.md`; empty when no cell made gRPC calls.
pub fn markdown(records: &[CellRecord]) -> String {
    crate::searches::section(
        "gRPC",
        &COLUMNS,
        &rows(records),
        "Cells of gRPC scenarios, measurement only (their rows above give calls as \
         requests: Error % is the share of calls that did not end `ok`, throughput the `ok` \
         calls per second, the latencies those of `ok` calls). Times count from each call's \
         (or bidirectional message's) intended start; Calls Not OK are by class: a \
         grpc-status by name, or what ended the call below gRPC. docs/streams.md has the \
         classes.",
    )
}

/// The `grpc` array of `summary.json`: each gRPC cell's figures.
pub fn json(records: &[CellRecord]) -> Vec<Value> {
    records
        .iter()
        .filter_map(|r| {
            let rec = r.grpc.as_ref()?;
            let g = &rec.grpc;
            Some(json!({
                "cell": r.cell.id,
                "scenario": r.cell.scenario,
                "kind": rec.config.call_kind,
                "calls_started": g.calls_started,
                "calls": g.calls,
                "calls_per_s": g.calls_per_s,
                "call_p99_ms": g.call_latency.at(99.0),
                "first_message_p99_ms": g.first_message_latency.at(99.0),
                "message_round_trip_p99_ms": g.message_latency.at(99.0),
                "messages_sent": g.messages_sent,
                "messages_received": g.messages_received,
                "messages_per_s": g.messages_per_s,
            }))
        })
        .collect()
}
