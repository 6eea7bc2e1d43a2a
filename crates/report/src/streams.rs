//! The Streams table: one row per cell whose scenario reads its responses as streams
//! (`stream = "sse" | "llm" | "chunks"`), with what a user of a streaming gateway feels: time to
//! the first byte and to the first event (token), the gaps between events, events per second,
//! and, when the events carried their sender's clock, each event's delay from it.
//! For `summary.md` and `summary.json`. Pure.

use gatebench_model::CellRecord;
use serde_json::{json, Value};

use crate::table::{ms_at, Row};

/// The Streams table's columns.
pub const COLUMNS: [&str; 11] = [
    "Cell",
    "Mode",
    "Streams Complete",
    "Time to First Byte p99 (ms)",
    "Time to First Event p50 (ms)",
    "Time to First Event p99 (ms)",
    "Between Events p50 (ms)",
    "Between Events p99 (ms)",
    "Events/s",
    "Stream Duration p99 (ms)",
    "Event Delay p99 (ms)",
];

/// Every cell with stream figures, in the records' order.
pub fn rows(records: &[CellRecord]) -> Vec<Row> {
    records
        .iter()
        .filter_map(|r| {
            let s = r.load.as_ref()?.stream.as_ref()?;
            Some(Row {
                id: r.cell.id.clone(),
                values: vec![
                    r.cell.id.clone(),
                    format!("{} ({})", s.mode, s.unit),
                    s.completed.to_string(),
                    ms_at(&s.time_to_first_byte, 99.0),
                    ms_at(&s.time_to_first_event, 50.0),
                    ms_at(&s.time_to_first_event, 99.0),
                    ms_at(&s.inter_event, 50.0),
                    ms_at(&s.inter_event, 99.0),
                    format!("{:.1}", s.events_per_s),
                    ms_at(&s.duration, 99.0),
                    s.event_delay
                        .as_ref()
                        .map_or_else(|| "—".to_owned(), |d| ms_at(d, 99.0)),
                ],
            })
        })
        .collect()
}

/// The Streams section of `summary.md`; empty when no cell read streams.
pub fn markdown(records: &[CellRecord]) -> String {
    crate::searches::section(
        "Streams",
        &COLUMNS,
        &rows(records),
        "Cells whose scenario reads each response as a stream (`stream`), measurement only. \
         An event is an SSE event, an LLM token (a chunk with content) or a read of body \
         bytes (`chunks`). Times to the first byte and event count from the request's \
         intended send time; Between Events is the gap between each event and the one \
         before it in its stream (inter-token latency); Events/s is every event received \
         over the measurement; Event Delay is each event's time from its sender's stamp (a \
         `: sent` comment, as `serve echo --chat-stamp` writes) to its arrival, when events \
         carried one; a stream that stalls or ends early is an error of its own class (the \
         Flags and Error % of the summary).",
    )
}

/// The `streams` array of `summary.json`: each stream cell's figures.
pub fn json(records: &[CellRecord]) -> Vec<Value> {
    records
        .iter()
        .filter_map(|r| {
            let s = r.load.as_ref()?.stream.as_ref()?;
            Some(json!({
                "cell": r.cell.id,
                "scenario": r.cell.scenario,
                "mode": s.mode,
                "unit": s.unit,
                "completed": s.completed,
                "events": s.events,
                "events_per_s": s.events_per_s,
                "time_to_first_byte_p99_ms": s.time_to_first_byte.at(99.0),
                "time_to_first_event_p50_ms": s.time_to_first_event.at(50.0),
                "time_to_first_event_p99_ms": s.time_to_first_event.at(99.0),
                "inter_event_p50_ms": s.inter_event.at(50.0),
                "inter_event_p99_ms": s.inter_event.at(99.0),
                "duration_p99_ms": s.duration.at(99.0),
                "event_delay_p99_ms": s.event_delay.as_ref().and_then(|d| d.at(99.0)),
            }))
        })
        .collect()
}
