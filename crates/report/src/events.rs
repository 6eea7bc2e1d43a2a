//! The Events table: one row per firing of a cell's events (`[[scenario.event]]`), what it did
//! and what it cost the load, as the cell's record has it, for `summary.md` and
//! `summary.json`. Pure.

use std::fmt::Write;

use gatebench_model::{CellRecord, EventRecord};
use serde_json::{json, Value};

use crate::table::Row;

/// The Events table's columns.
pub const COLUMNS: [&str; 9] = [
    "Cell",
    "Event",
    "At (s)",
    "Outcome",
    "Errors",
    "Longest Gap (ms)",
    "p99 Window / Steady (ms)",
    "Recovery (s)",
    "Propagation (ms)",
];

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v:.digits$}"))
}

fn row(r: &CellRecord, e: &EventRecord) -> Row {
    let c = e.cost.as_ref();
    let errors = c.map_or_else(
        || "—".to_owned(),
        |c| {
            if c.errors_total == 0 {
                "0".to_owned()
            } else {
                let classes: Vec<String> =
                    c.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                format!("{} ({})", c.errors_total, classes.join(", "))
            }
        },
    );
    let p99 = c.map_or_else(
        || "—".to_owned(),
        |c| format!("{} / {}", opt(c.p99_window_ms, 2), opt(c.p99_steady_ms, 2)),
    );
    let propagation = match c.and_then(|c| c.propagation_ms.zip(c.new_route.as_ref())) {
        Some((ms, route)) => format!("{ms:.0} ({route})"),
        None => "—".to_owned(),
    };
    Row {
        id: r.cell.id.clone(),
        values: vec![
            r.cell.id.clone(),
            format!("{}: {}", e.name, e.action),
            format!("{:.3}", e.at_s),
            format!("{}{}", if e.ok { "" } else { "FAILED: " }, e.outcome),
            errors,
            opt(c.and_then(|c| c.longest_gap_ms), 0),
            p99,
            opt(c.and_then(|c| c.recovery_s), 1),
            propagation,
        ],
    }
}

/// Every firing of every cell, in the records' order.
pub fn rows(records: &[CellRecord]) -> Vec<Row> {
    records
        .iter()
        .flat_map(|r| r.events.iter().map(move |e| row(r, e)))
        .collect()
}

/// The Events section of `summary.md`; empty when no cell had events.
pub fn markdown(records: &[CellRecord]) -> String {
    let rows = rows(records);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Events\n\n");
    crate::searches::markdown_table(&mut out, &COLUMNS, &rows);
    let _ = writeln!(
        out,
        "\nOne row per firing of a scenario's events, at its time in seconds since the \
         measurement started. Its window runs to the next firing or its `window` (5 s by \
         default), whichever comes first; Errors and the window's p99 are those of the seconds \
         the window touches, the steady p99 that of the whole seconds before the cell's first \
         event. Longest Gap is the longest time between two successful responses reaching into \
         the window. Recovery is the time until every second up to the next firing is back at \
         the steady level (p99 and error rate no worse than the worst steady second); — when \
         it never was. Propagation is the time to the first response from a back-end not seen \
         just before the firing (the new route, from `x-gatebench-backend`)."
    );
    out
}

/// The `events` array of `summary.json`: each firing with its record's figures.
pub fn json(records: &[CellRecord]) -> Vec<Value> {
    records
        .iter()
        .flat_map(|r| {
            r.events.iter().map(move |e| {
                let c = e.cost.as_ref();
                json!({
                    "cell": r.cell.id,
                    "scenario": r.cell.scenario,
                    "event": e.name,
                    "kind": e.kind,
                    "action": e.action,
                    "planned_s": e.planned_s,
                    "at_s": e.at_s,
                    "ok": e.ok,
                    "outcome": e.outcome,
                    "ready_ms": e.ready_ms,
                    "window_start_s": c.map(|c| c.window_start_s),
                    "window_end_s": c.map(|c| c.window_end_s),
                    "errors": c.map(|c| c.errors_total),
                    "errors_by_class": c.map(|c| c.errors.clone()),
                    "longest_gap_ms": c.and_then(|c| c.longest_gap_ms),
                    "longest_gap_at_s": c.and_then(|c| c.longest_gap_at_s),
                    "p99_window_ms": c.and_then(|c| c.p99_window_ms),
                    "p99_steady_ms": c.and_then(|c| c.p99_steady_ms),
                    "recovery_s": c.and_then(|c| c.recovery_s),
                    "propagation_ms": c.and_then(|c| c.propagation_ms),
                    "new_route": c.and_then(|c| c.new_route.clone()),
                })
            })
        })
        .collect()
}
