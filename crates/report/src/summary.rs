//! The summary of a suite run: one row per cell with seed 004's columns, then the SUT's CPU and
//! memory (what we measure instead of a JVM's GC figures) and flags that make a doubtful row
//! visible — errors, a generator that was the bottleneck, a cell that failed and why.
//!
//! Renders Markdown (`summary.md`), CSV (`summary.csv`, `warmup.csv`) and JSON
//! (`summary.json`). The warm-up is summarized apart, never mixed into the results. Pure
//! functions of the records: reading and writing files is the caller's job.

use std::fmt::Write;

use gatebench_model::{
    CellParams, CellRecord, CellStatus, GcSummary, OriginReport, Outcome, PhaseReport,
    ResourceSummary, SCHEMA_VERSION,
};
use gatebench_results::rows::SummaryCsvRow;

pub use crate::table::Row;
use crate::table::{number, protocol_rank, scenario_name};

/// The columns of the summary tables: seed 004's nine, then SUT CPU and memory, the SUT's most
/// threads and open files and the machine's load average (seed 002's resource figures), seed
/// 004's GC figures (empty without a GC log), what the echo back-ends saw of an intermediary
/// (empty without their origin statistics: upstream connections opened per 1,000 requests, TLS
/// resumption among those connections' handshakes, and the most-loaded back-end's share of the
/// requests against the even share, 1.00 being even), the verdict of the scenario's thresholds
/// (empty without any), flags.
pub const COLUMNS: [&str; 22] = [
    "Scenario Name",
    "Concurrent Users",
    "Message Size (Bytes)",
    "Back-end Service Delay (ms)",
    "Error %",
    "Throughput (Requests/sec)",
    "Average Response Time (ms)",
    "Standard Deviation of Response Time (ms)",
    "99th Percentile of Response Time (ms)",
    "SUT CPU (%)",
    "SUT Memory (MiB)",
    "SUT Max Threads",
    "SUT Max Open Files",
    "Load Average (1 min)",
    "GC Throughput (%)",
    "GC Pause p99 (ms)",
    "Memory Footprint After Full GC (MiB)",
    "Upstream Connections per 1,000 Requests",
    "Upstream TLS Resumption (%)",
    "Balance Spread",
    "Thresholds",
    "Flags",
];

/// What a GC throughput cell says when the window held no GC event (see
/// `GcSummary::throughput_percent`): never 100 %, which nobody measured.
pub const GC_NO_EVENTS: &str = "no GC events";

/// Which phase a table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The measurement: the results.
    Measurement,
    /// The warm-up, reported apart.
    Warmup,
}

/// The verdict of a cell's thresholds: empty without any, `pass` when every one held, else
/// `FAIL` and each one that did not, with what was measured (and `aborted the run` for the
/// one that stopped it).
pub fn thresholds(r: &CellRecord) -> String {
    let t = r.thresholds();
    if t.is_empty() {
        return String::new();
    }
    let failed: Vec<String> = t
        .iter()
        .filter(|t| !t.passed)
        .map(|t| {
            let seen = match (&t.breach, t.breached_at_s) {
                (Some(b), Some(at)) if t.aborted => {
                    format!("{b} at {at:.0} s; aborted the run")
                }
                (Some(b), Some(at)) => format!("{b} at {at:.0} s; whole: {}", t.observed),
                _ => t.observed.clone(),
            };
            format!("{} ({seen})", t.threshold)
        })
        .collect();
    if failed.is_empty() {
        "pass".to_owned()
    } else {
        format!("FAIL: {}", failed.join("; "))
    }
}

/// The flags of a cell, in a fixed order: `failed: reason`, `errors`, `generator-bound`, then
/// what sets the row apart from its neighbours (`open model at N req/s`, `repeat N`).
pub fn flags(r: &CellRecord) -> Vec<String> {
    let mut f = Vec::new();
    if r.status == CellStatus::Failed {
        f.push(format!(
            "failed: {}",
            r.reason.as_deref().unwrap_or("no reason recorded")
        ));
    }
    if let Some(g) = &r.grpc {
        f.push(format!("gRPC {}", g.config.call_kind.replace('_', "-")));
    }
    if let Some(w) = &r.websocket {
        f.push("WebSocket".to_owned());
        if w.websocket.handshakes_refused + w.websocket.connections_failed > 0 {
            f.push("connections refused or failed".to_owned());
        }
    }
    if let Some(u) = r.unit_load() {
        if !u.errors.is_empty() {
            f.push("errors".to_owned());
        }
        if u.generator_bound {
            f.push("generator-bound".to_owned());
        }
    }
    if let Some(load) = &r.load {
        let m = &load.measurement;
        if m.outcomes.errors() > 0 {
            f.push("errors".to_owned());
        }
        let unanswered = m.outcomes.get(Outcome::Unanswered) + m.outcomes.get(Outcome::Timeout);
        if m.outcomes.responses() == 0 && unanswered > 0 {
            f.push("no answer".to_owned());
        } else if m.outcomes.get(Outcome::Unanswered) > 0 {
            f.push("stalled".to_owned());
        }
        if m.latency.point(99.0).is_some_and(|p| p.lower_bound) {
            f.push("p99 is a lower bound".to_owned());
        }
        if !load.valid {
            f.push("generator-bound".to_owned());
        }
    }
    let failed_events = r.events.iter().filter(|e| !e.ok).count();
    if failed_events > 0 {
        f.push(format!(
            "event failed ({failed_events} of {})",
            r.events.len()
        ));
    }
    match (&r.cell.program, r.cell.rate) {
        // A program's rate changes: the program says what ran, its mean where a number goes.
        (Some(program), rate) => f.push(format!(
            "open model: {program}{}",
            rate.map(|r| format!(" (mean {} req/s)", number(r)))
                .unwrap_or_default()
        )),
        (None, Some(rate)) => f.push(format!("open model at {} {}", number(rate), rate_unit(r))),
        (None, None) => {}
    }
    if r.cell.repeat > 1 {
        f.push(format!("repeat {}", r.cell.repeat));
    }
    f
}

/// What a cell's rate counts: requests, gRPC calls, or WebSocket connection opens per second.
pub fn rate_unit(r: &CellRecord) -> &'static str {
    if r.grpc.is_some() {
        "calls/s"
    } else if r.websocket.is_some() {
        "connection opens/s"
    } else {
        "req/s"
    }
}

/// The rows of `records` for `phase`, in suite order (scenario, users or rate, size, delay,
/// protocol, repeat), whatever order the cells ran in. Load cells only: capacity and cost
/// cells have their own tables ([`crate::searches`]).
pub fn rows(records: &[CellRecord], phase: Phase) -> Vec<Row> {
    let mut sorted: Vec<&CellRecord> = records.iter().filter(|r| r.cell.kind.is_load()).collect();
    sorted.sort_by(|a, b| {
        let (a, b) = (&a.cell, &b.cell);
        a.scenario_index
            .cmp(&b.scenario_index)
            .then(protocol_rank(&a.protocol).cmp(&protocol_rank(&b.protocol)))
            .then(a.rate.unwrap_or(0.0).total_cmp(&b.rate.unwrap_or(0.0)))
            .then(a.users.cmp(&b.users))
            .then(a.size_bytes.cmp(&b.size_bytes))
            .then(a.delay_ms.total_cmp(&b.delay_ms))
            .then(a.repeat.cmp(&b.repeat))
    });
    sorted
        .into_iter()
        .map(|r| {
            let (p, res) = figures(r, phase);
            let main = main_figures(r, p, phase);
            let gc = gc_figures(r, phase);
            let origin = origin_figures(r, phase);
            let opt = |v: Option<f64>, digits: usize| {
                v.map(|v| format!("{v:.digits$}")).unwrap_or_default()
            };
            Row {
                id: r.cell.id.clone(),
                values: vec![
                    scenario_name(r, records),
                    r.cell.users.to_string(),
                    r.cell.size_bytes.to_string(),
                    number(r.cell.delay_ms),
                    opt(main.map(|m| m.error_percent), 2),
                    opt(main.map(|m| m.throughput), 2),
                    opt(main.map(|m| m.latency.mean_ms), 2),
                    opt(main.map(|m| m.latency.stdev_ms), 2),
                    opt(main.and_then(|m| m.latency.at(99.0)), 2),
                    opt(res.map(|s| s.cpu_mean_percent), 1),
                    opt(res.map(|s| s.rss_mean_mib), 1),
                    res.map(|s| s.threads_max.to_string()).unwrap_or_default(),
                    res.map(|s| s.fds_max.to_string()).unwrap_or_default(),
                    opt(res.map(|s| s.loadavg_mean), 2),
                    gc.map(|g| {
                        g.throughput_percent
                            .map_or_else(|| GC_NO_EVENTS.to_owned(), |t| format!("{t:.2}"))
                    })
                    .unwrap_or_default(),
                    opt(gc.filter(|g| g.pauses > 0).map(|g| g.pause_p99_ms), 2),
                    opt(gc.and_then(|g| g.heap_after_full_gc_mib), 1),
                    opt(origin.and_then(|o| o.connections_per_1k_requests()), 2),
                    opt(origin.and_then(|o| o.tls_resumption_pct()), 1),
                    opt(origin.and_then(|o| o.balance_spread()), 2),
                    // Thresholds judge the measurement, never the warm-up.
                    match phase {
                        Phase::Measurement => thresholds(r),
                        Phase::Warmup => String::new(),
                    },
                    flags(r).join("; "),
                ],
            }
        })
        .collect()
}

/// The columns of a row that come from the load: an HTTP load's, or a gRPC or WebSocket
/// cell's units (calls or messages: every one not `ok` an error, `ok` ones per second, their
/// latency; `CellRecord::unit_load`).
#[derive(Clone, Copy)]
struct Main<'a> {
    error_percent: f64,
    throughput: f64,
    latency: &'a gatebench_model::LatencySummary,
}

fn main_figures<'a>(
    r: &'a CellRecord,
    p: Option<&'a PhaseReport>,
    phase: Phase,
) -> Option<Main<'a>> {
    if let Some(p) = p {
        return Some(Main {
            error_percent: p.error_percent,
            throughput: p.throughput_rps,
            latency: &p.latency,
        });
    }
    let u = r
        .unit_load()
        .filter(|_| r.status == CellStatus::Ok && phase == Phase::Measurement)?;
    Some(Main {
        error_percent: u.error_percent,
        throughput: u.ok_per_s,
        latency: u.latency,
    })
}

/// The phase's figures and the SUT's resources over it.
fn figures(r: &CellRecord, phase: Phase) -> (Option<&PhaseReport>, Option<&ResourceSummary>) {
    let ok = r.status == CellStatus::Ok;
    match phase {
        Phase::Measurement => (
            r.load.as_ref().filter(|_| ok).map(|l| &l.measurement),
            r.sut_measurement.as_ref().filter(|_| ok),
        ),
        Phase::Warmup => (
            r.load
                .as_ref()
                .filter(|_| ok)
                .and_then(|l| l.warmup.as_ref()),
            r.sut_warmup.as_ref().filter(|_| ok),
        ),
    }
}

/// The SUT's GC figures over the phase, when the scenario names a GC log and the cell ran.
fn gc_figures(r: &CellRecord, phase: Phase) -> Option<&GcSummary> {
    match phase {
        Phase::Measurement => r.gc_measurement.as_ref(),
        Phase::Warmup => r.gc_warmup.as_ref(),
    }
    .filter(|_| r.status == CellStatus::Ok)
}

/// What the cell's echo back-ends saw over the measurement (never the warm-up's: it is left
/// out of the readings).
fn origin_figures(r: &CellRecord, phase: Phase) -> Option<&OriginReport> {
    match phase {
        Phase::Measurement => r.origin.as_ref(),
        Phase::Warmup => None,
    }
    .filter(|_| r.status == CellStatus::Ok)
}

/// What a cell's measurement was planned to be: `4 s`, `1000000 requests`, or `1000000
/// requests or 30 s, whichever came first`.
pub fn measured(p: &CellParams) -> String {
    match (p.requests, p.duration_s > 0.0) {
        (None, _) => format!("{} s", number(p.duration_s)),
        (Some(n), false) => format!("{n} requests"),
        (Some(n), true) => format!(
            "{n} requests or {} s, whichever came first",
            number(p.duration_s)
        ),
    }
}

/// A Markdown table of `phase`.
pub fn table(records: &[CellRecord], phase: Phase) -> String {
    let mut out = String::new();
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        COLUMNS
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 || i == COLUMNS.len() - 1 {
                "---|"
            } else {
                "---:|"
            })
            .collect::<String>()
    );
    for row in rows(records, phase) {
        let vals: Vec<String> = row.values.iter().map(|v| cell(v)).collect();
        let _ = writeln!(out, "| {} |", vals.join(" | "));
    }
    out
}

/// `summary.md`: a heading, the measurement table, what the flags mean, and the warm-up table
/// apart. `missing` is the number of planned cells without a record (an interrupted run).
pub fn markdown(suite: &str, records: &[CellRecord], missing: usize) -> String {
    let mut out = String::new();
    let failed = records
        .iter()
        .filter(|r| r.status == CellStatus::Failed)
        .count();
    let _ = writeln!(out, "# {suite}\n");
    let _ = write!(
        out,
        "{} cells: {} ok, {failed} failed.",
        records.len(),
        records.len() - failed
    );
    if let Some(r) = records.first() {
        let _ = write!(
            out,
            " Each cell: {} s warm-up (reported apart below), then {} measured.",
            number(r.cell.warmup_s),
            measured(&r.cell)
        );
    }
    if missing > 0 {
        let _ = write!(
            out,
            " **Incomplete: {missing} planned cells have no record** (the run was interrupted)."
        );
    }
    out.push_str("\n\n");
    out.push_str(&table(records, Phase::Measurement));
    let all_flags: Vec<String> = records.iter().flat_map(flags).collect();
    let legend = [
        (
            "failed",
            "`failed: …`: the cell produced no figures; the reason says which process or check failed.",
        ),
        (
            "errors",
            "`errors`: some requests failed; see Error % and the cell's record.json for the classes.",
        ),
        (
            "no answer",
            "`no answer`: the target answered none of the requests of the measurement (they timed \
             out or were still unanswered at the end): Error % is 100.",
        ),
        (
            "stalled",
            "`stalled`: some requests were still unanswered at the end after waiting longer than \
             any answered request; they count as errors and enter the latency at the time they \
             had waited.",
        ),
        (
            "p99 is a lower bound",
            "`p99 is a lower bound`: the 99th percentile falls on requests that never got an \
             answer; the true figure is at least the one shown.",
        ),
        (
            "event failed",
            "`event failed`: some firings of the scenario's events did not do what they should \
             (a command's non-zero exit, a back-end not ready again); see the Events table.",
        ),
        (
            "generator-bound",
            "`generator-bound`: the load generator, not the system under test, was the bottleneck; \
             the figures describe the generator.",
        ),
    ];
    let shown: Vec<&str> = legend
        .iter()
        .filter(|(k, _)| all_flags.iter().any(|f| f.starts_with(k)))
        .map(|(_, v)| *v)
        .collect();
    if !shown.is_empty() {
        out.push('\n');
        for l in shown {
            let _ = writeln!(out, "- {l}");
        }
    }
    out.push_str(
        "\nSUT CPU is the mean over the measurement, in percent of one core; SUT Memory the mean \
         resident set, in MiB; SUT Max Threads and Max Open Files the most at once (the SUT's \
         whole process group); Load Average the machine's 1-minute load average, mean of the \
         samples. The GC columns are filled when the scenario names its SUT's GC log: GC \
         throughput is the share of the window outside stop-the-world pauses, the footprint \
         the mean heap after a full collection. The upstream columns are filled when the \
         back-ends are gatebench's echo: what they counted over the measurement, read before \
         and after it.\n",
    );
    out.push_str(&crate::searches::markdown(records));
    out.push_str(&crate::events::markdown(records));
    out.push_str(&crate::streams::markdown(records));
    out.push_str(&crate::grpc_table::markdown(records));
    out.push_str(&crate::websocket_table::markdown(records));
    let _ = writeln!(
        out,
        "\n## Warm-up (not part of the results)\n\n{}",
        table(records, Phase::Warmup)
    );
    out
}

/// A line of `summary.csv` / `warmup.csv` from a [`Row`]: its values in [`COLUMNS`] order,
/// then its cell id. The values are the formatted ones the tables show, so every output agrees
/// to the digit.
fn csv_row(row: &Row) -> SummaryCsvRow<'_> {
    let values: &[String; COLUMNS.len()] = row
        .values
        .as_slice()
        .try_into()
        .expect("rows() gives one value per column");
    SummaryCsvRow {
        scenario_name: &values[0],
        users: &values[1],
        size_bytes: &values[2],
        delay_ms: &values[3],
        error_percent: &values[4],
        throughput_rps: &values[5],
        mean_ms: &values[6],
        stdev_ms: &values[7],
        p99_ms: &values[8],
        sut_cpu_percent: &values[9],
        sut_memory_mib: &values[10],
        sut_threads_max: &values[11],
        sut_fds_max: &values[12],
        loadavg: &values[13],
        gc_throughput_percent: &values[14],
        gc_pause_p99_ms: &values[15],
        gc_heap_after_full_gc_mib: &values[16],
        upstream_connections_per_1k_requests: &values[17],
        upstream_tls_resumption_percent: &values[18],
        balance_spread: &values[19],
        thresholds: &values[20],
        flags: &values[21],
        cell: &row.id,
    }
}

/// A CSV table of `phase`: [`COLUMNS`] then `Cell` (the cell id). Fields are quoted only where
/// they must be (a comma, a quote, a line break or carriage return), quotes doubled, RFC 4180
/// style, by the `csv` crate.
pub fn csv(records: &[CellRecord], phase: Phase) -> String {
    // The header is written apart from the rows so that a phase without rows still has one.
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(COLUMNS.iter().chain(&["Cell"]))
        .expect("writing to memory cannot fail");
    for row in rows(records, phase) {
        w.serialize(csv_row(&row))
            .expect("string fields always serialize");
    }
    let bytes = w.into_inner().expect("flushing to memory cannot fail");
    String::from_utf8(bytes).expect("CSV of strings is UTF-8")
}

/// `summary.json`: both phases as arrays of objects with machine-readable keys and numbers
/// (`null` where a cell has no figure), plus the column titles the tables use.
pub fn json(suite: &str, records: &[CellRecord], missing: usize) -> String {
    use serde_json::{json, Value};
    let phase_rows = |phase: Phase| -> Vec<Value> {
        let order: Vec<String> = rows(records, phase).into_iter().map(|r| r.id).collect();
        order
            .iter()
            .filter_map(|id| records.iter().find(|r| &r.cell.id == id))
            .map(|r| {
                let (p, res) = figures(r, phase);
                let main = main_figures(r, p, phase);
                let gc = gc_figures(r, phase);
                json!({
                    "cell": r.cell.id,
                    "scenario": r.cell.scenario,
                    "scenario_name": scenario_name(r, records),
                    "users": r.cell.users,
                    "rate": r.cell.rate,
                    "program": r.cell.program,
                    "size_bytes": r.cell.size_bytes,
                    "delay_ms": r.cell.delay_ms,
                    "protocol": r.cell.protocol,
                    "repeat": r.cell.repeat,
                    "status": r.status,
                    "reason": r.reason,
                    "error_percent": main.map(|m| m.error_percent),
                    "throughput_rps": main.map(|m| m.throughput),
                    "mean_ms": main.map(|m| m.latency.mean_ms),
                    "stdev_ms": main.map(|m| m.latency.stdev_ms),
                    "p99_ms": main.and_then(|m| m.latency.at(99.0)),
                    "sut_cpu_mean_percent": res.map(|s| s.cpu_mean_percent),
                    "sut_cpu_max_percent": res.map(|s| s.cpu_max_percent),
                    "sut_rss_mean_mib": res.map(|s| s.rss_mean_mib),
                    "sut_rss_max_mib": res.map(|s| s.rss_max_mib),
                    "sut_threads_max": res.map(|s| s.threads_max),
                    "sut_fds_max": res.map(|s| s.fds_max),
                    "loadavg_mean": res.map(|s| s.loadavg_mean),
                    "sut_cpu_us_per_request": res.and_then(|s| s.cpu_us_per_request),
                    "gc_throughput_percent": gc.and_then(|g| g.throughput_percent),
                    "gc_pause_p99_ms": gc.filter(|g| g.pauses > 0).map(|g| g.pause_p99_ms),
                    "gc_heap_after_full_gc_mib": gc.and_then(|g| g.heap_after_full_gc_mib),
                    "upstream_connections_per_1k_requests": origin_figures(r, phase)
                        .and_then(OriginReport::connections_per_1k_requests),
                    "upstream_tls_resumption_percent": origin_figures(r, phase)
                        .and_then(OriginReport::tls_resumption_pct),
                    "balance_spread": origin_figures(r, phase)
                        .and_then(OriginReport::balance_spread),
                    "generator_bound": r
                        .load
                        .as_ref()
                        .map(|l| !l.valid)
                        .or_else(|| r.unit_load().map(|u| u.generator_bound)),
                    // The verdicts of the measurement, as the record has them.
                    "thresholds": match phase {
                        Phase::Measurement => r.thresholds().to_vec(),
                        Phase::Warmup => Vec::new(),
                    },
                    "flags": flags(r),
                })
            })
            .collect()
    };
    let v = json!({
        "schema_version": SCHEMA_VERSION,
        "suite": suite,
        "columns": COLUMNS,
        "cells": records.len(),
        "missing_cells": missing,
        "measurement": phase_rows(Phase::Measurement),
        "warmup": phase_rows(Phase::Warmup),
        "capacity": crate::searches::capacity_json(records),
        "cost": crate::searches::cost_json(records),
        "events": crate::events::json(records),
        "streams": crate::streams::json(records),
        "grpc": crate::grpc_table::json(records),
        "websocket": crate::websocket_table::json(records),
    });
    let mut s = serde_json::to_string_pretty(&v).expect("JSON values always serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::{LatencySummary, Outcome, OutcomeCounts, Percentile};
    use gatebench_testkit::records;

    fn phase(rps: f64, mean: f64, errors: u64) -> PhaseReport {
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, 10_000);
        outcomes.add(Outcome::Status5xx, errors);
        PhaseReport {
            duration_s: 4.0,
            requests: outcomes.total(),
            error_percent: outcomes.error_percent(),
            outcomes,
            throughput_rps: rps,
            ok_rps: rps,
            target_rps: None,
            sent_rps: rps,
            bytes_read: 0,
            bytes_written: 0,
            latency: LatencySummary {
                count: 10_000,
                censored: 0,
                min_ms: 0.1,
                mean_ms: mean,
                stdev_ms: mean / 2.0,
                max_ms: mean * 10.0,
                percentiles: vec![Percentile {
                    p: 99.0,
                    ms: mean * 4.0,
                    lower_bound: false,
                }],
            },
            latency_answered: None,
            latency_uncorrected: None,
            concurrency: 0.0,
            connections: Default::default(),
            histograms: None,
        }
    }

    fn record(scenario: u32, title: &str, users: u32, size: u64, valid: bool) -> CellRecord {
        let cell = records::cell_params(&format!("s{scenario}"), title, scenario, users, size, 1);
        let load = records::load_report(
            users,
            size,
            Some(phase(9000.0, 1.5, 0)),
            phase(19551.06, 5.08, 0),
            valid,
        );
        records::cell_record(
            cell,
            load,
            Some(ResourceSummary {
                samples: 1,
                cpu_mean_percent: 80.0,
                rss_mean_mib: 12.0,
                ..Default::default()
            }),
            Some(ResourceSummary {
                samples: 4,
                cpu_mean_percent: 97.25,
                cpu_max_percent: 99.0,
                rss_mean_mib: 17.93,
                rss_max_mib: 18.0,
                threads_max: 3,
                fds_max: 110,
                loadavg_mean: 1.5,
                cpu_time_s: Some(3.89),
                cpu_us_per_request: Some(49.74),
            }),
        )
    }

    fn fixture() -> Vec<CellRecord> {
        let mut errors = record(1, "Passthrough HTTP service (h1c -> h1c)", 100, 1024, true);
        errors.load.as_mut().unwrap().measurement = phase(18266.21, 5.43, 25);
        // A JVM SUT: 12 pauses over the 4 s, one of them full.
        errors.gc_measurement = Some(GcSummary {
            format: "jvm".into(),
            window_s: 4.0,
            collections: 12,
            full_collections: 1,
            pauses: 12,
            pause_total_ms: 48.0,
            pause_p50_ms: 3.1,
            pause_p90_ms: 5.2,
            pause_p99_ms: 7.254,
            pause_max_ms: 7.254,
            throughput_percent: Some(98.8),
            heap_after_gc_mean_mib: Some(31.0),
            heap_after_gc_max_mib: Some(40.0),
            heap_after_full_gc_mib: Some(20.55),
        });
        // Two echo back-ends behind the intermediary: their origin statistics.
        let backend = |name: &str, requests, full, resumed| gatebench_model::OriginBackend {
            name: name.into(),
            connections_opened: 50,
            connections_h1: 50,
            requests,
            tls_handshakes_full: full,
            tls_handshakes_resumed: resumed,
            ..Default::default()
        };
        errors.origin = Some(OriginReport {
            backends: vec![
                backend("backend-1", 45_000, 10, 40),
                backend("backend-2", 28_000, 0, 50),
            ],
        });
        let mut failed = record(2, "Passthrough HTTPS service (h1 -> h1)", 100, 50, true);
        failed.status = CellStatus::Failed;
        failed.reason =
            Some("sut (gatebench serve proxy) exited with status 2 before it was ready".into());
        failed.load = None;
        // A GC log without events: "no GC events", never 100 %, and no pause figure.
        let mut quiet = record(0, "Echo back-end alone (baseline)", 100, 50, true);
        quiet.gc_measurement = Some(GcSummary {
            format: "go".into(),
            window_s: 4.0,
            ..GcSummary::default()
        });
        // The suite's thresholds: the cell with errors failed one, the generator-bound one held.
        let verdict = |passed: bool, observed: &str| gatebench_model::ThresholdResult {
            threshold: "errors<0.1%".into(),
            passed,
            observed: observed.into(),
            breached_at_s: None,
            breach: None,
            aborted: false,
        };
        errors.load.as_mut().unwrap().thresholds = vec![verdict(false, "errors 0.250%")];
        let mut bound = record(1, "Passthrough HTTP service (h1c -> h1c)", 100, 50, false);
        bound.load.as_mut().unwrap().thresholds = vec![verdict(true, "errors 0.000%")];
        vec![failed, errors, bound, quiet]
    }

    #[test]
    fn silent_and_stalled_targets_are_flagged_in_plain_words() {
        // A silent target: every request unanswered, nothing answered.
        let mut silent = record(0, "Echo back-end alone (baseline)", 10, 50, true);
        {
            let m = &mut silent.load.as_mut().unwrap().measurement;
            let mut o = OutcomeCounts::default();
            o.add(Outcome::Unanswered, 10);
            m.outcomes = o;
            m.requests = 10;
            m.error_percent = o.error_percent();
            m.latency.censored = 10;
            for p in &mut m.latency.percentiles {
                p.lower_bound = true;
            }
        }
        assert_eq!(
            flags(&silent),
            vec!["errors", "no answer", "p99 is a lower bound"]
        );
        assert_eq!(
            rows(&[silent.clone()], Phase::Measurement)[0].values[4],
            "100.00"
        );
        let md = markdown("t", &[silent], 1);
        assert!(md.contains("`no answer`: the target answered none"), "{md}");

        // A stall: answered at first, then 7 requests left unanswered at the end.
        let mut stalled = record(0, "Echo back-end alone (baseline)", 10, 50, true);
        {
            let m = &mut stalled.load.as_mut().unwrap().measurement;
            m.outcomes.add(Outcome::Unanswered, 7);
            m.requests += 7;
        }
        assert_eq!(flags(&stalled), vec!["errors", "stalled"]);
    }

    #[test]
    fn markdown_summary() {
        insta::assert_snapshot!(markdown("gatebench default suite", &fixture(), 1), @r"
        # gatebench default suite

        4 cells: 3 ok, 1 failed. Each cell: 1 s warm-up (reported apart below), then 4 s measured. **Incomplete: 1 planned cells have no record** (the run was interrupted).

        | Scenario Name | Concurrent Users | Message Size (Bytes) | Back-end Service Delay (ms) | Error % | Throughput (Requests/sec) | Average Response Time (ms) | Standard Deviation of Response Time (ms) | 99th Percentile of Response Time (ms) | SUT CPU (%) | SUT Memory (MiB) | SUT Max Threads | SUT Max Open Files | Load Average (1 min) | GC Throughput (%) | GC Pause p99 (ms) | Memory Footprint After Full GC (MiB) | Upstream Connections per 1,000 Requests | Upstream TLS Resumption (%) | Balance Spread | Thresholds | Flags |
        |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
        | Echo back-end alone (baseline) | 100 | 50 | 0 | 0.00 | 19551.06 | 5.08 | 2.54 | 20.32 | 97.2 | 17.9 | 3 | 110 | 1.50 | no GC events |  |  |  |  |  |  |  |
        | Passthrough HTTP service (h1c -> h1c) | 100 | 50 | 0 | 0.00 | 19551.06 | 5.08 | 2.54 | 20.32 | 97.2 | 17.9 | 3 | 110 | 1.50 |  |  |  |  |  |  | pass | generator-bound |
        | Passthrough HTTP service (h1c -> h1c) | 100 | 1024 | 0 | 0.25 | 18266.21 | 5.43 | 2.71 | 21.72 | 97.2 | 17.9 | 3 | 110 | 1.50 | 98.80 | 7.25 | 20.6 | 1.37 | 90.0 | 1.23 | FAIL: errors<0.1% (errors 0.250%) | errors |
        | Passthrough HTTPS service (h1 -> h1) | 100 | 50 | 0 |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  | failed: sut (gatebench serve proxy) exited with status 2 before it was ready |

        - `failed: …`: the cell produced no figures; the reason says which process or check failed.
        - `errors`: some requests failed; see Error % and the cell's record.json for the classes.
        - `generator-bound`: the load generator, not the system under test, was the bottleneck; the figures describe the generator.

        SUT CPU is the mean over the measurement, in percent of one core; SUT Memory the mean resident set, in MiB; SUT Max Threads and Max Open Files the most at once (the SUT's whole process group); Load Average the machine's 1-minute load average, mean of the samples. The GC columns are filled when the scenario names its SUT's GC log: GC throughput is the share of the window outside stop-the-world pauses, the footprint the mean heap after a full collection. The upstream columns are filled when the back-ends are gatebench's echo: what they counted over the measurement, read before and after it.

        ## Warm-up (not part of the results)

        | Scenario Name | Concurrent Users | Message Size (Bytes) | Back-end Service Delay (ms) | Error % | Throughput (Requests/sec) | Average Response Time (ms) | Standard Deviation of Response Time (ms) | 99th Percentile of Response Time (ms) | SUT CPU (%) | SUT Memory (MiB) | SUT Max Threads | SUT Max Open Files | Load Average (1 min) | GC Throughput (%) | GC Pause p99 (ms) | Memory Footprint After Full GC (MiB) | Upstream Connections per 1,000 Requests | Upstream TLS Resumption (%) | Balance Spread | Thresholds | Flags |
        |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
        | Echo back-end alone (baseline) | 100 | 50 | 0 | 0.00 | 9000.00 | 1.50 | 0.75 | 6.00 | 80.0 | 12.0 | 0 | 0 | 0.00 |  |  |  |  |  |  |  |  |
        | Passthrough HTTP service (h1c -> h1c) | 100 | 50 | 0 | 0.00 | 9000.00 | 1.50 | 0.75 | 6.00 | 80.0 | 12.0 | 0 | 0 | 0.00 |  |  |  |  |  |  |  | generator-bound |
        | Passthrough HTTP service (h1c -> h1c) | 100 | 1024 | 0 | 0.00 | 9000.00 | 1.50 | 0.75 | 6.00 | 80.0 | 12.0 | 0 | 0 | 0.00 |  |  |  |  |  |  |  | errors |
        | Passthrough HTTPS service (h1 -> h1) | 100 | 50 | 0 |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  | failed: sut (gatebench serve proxy) exited with status 2 before it was ready |
        ");
    }

    #[test]
    fn csv_summary() {
        insta::assert_snapshot!(csv(&fixture(), Phase::Measurement), @r#"
        Scenario Name,Concurrent Users,Message Size (Bytes),Back-end Service Delay (ms),Error %,Throughput (Requests/sec),Average Response Time (ms),Standard Deviation of Response Time (ms),99th Percentile of Response Time (ms),SUT CPU (%),SUT Memory (MiB),SUT Max Threads,SUT Max Open Files,Load Average (1 min),GC Throughput (%),GC Pause p99 (ms),Memory Footprint After Full GC (MiB),"Upstream Connections per 1,000 Requests",Upstream TLS Resumption (%),Balance Spread,Thresholds,Flags,Cell
        Echo back-end alone (baseline),100,50,0,0.00,19551.06,5.08,2.54,20.32,97.2,17.9,3,110,1.50,no GC events,,,,,,,,s0_u100_s50_d0_r1
        Passthrough HTTP service (h1c -> h1c),100,50,0,0.00,19551.06,5.08,2.54,20.32,97.2,17.9,3,110,1.50,,,,,,,pass,generator-bound,s1_u100_s50_d0_r1
        Passthrough HTTP service (h1c -> h1c),100,1024,0,0.25,18266.21,5.43,2.71,21.72,97.2,17.9,3,110,1.50,98.80,7.25,20.6,1.37,90.0,1.23,FAIL: errors<0.1% (errors 0.250%),errors,s1_u100_s1024_d0_r1
        Passthrough HTTPS service (h1 -> h1),100,50,0,,,,,,,,,,,,,,,,,,failed: sut (gatebench serve proxy) exited with status 2 before it was ready,s2_u100_s50_d0_r1
        "#);
    }

    #[test]
    fn csv_quotes_a_reason_with_commas_and_quotes_as_one_field() {
        let mut r = fixture();
        for x in &mut r {
            x.reason = Some("sut \"proxy\" exited, status 2".into());
        }
        let text = csv(&r, Phase::Measurement);
        assert!(
            text.contains(",\"failed: sut \"\"proxy\"\" exited, status 2\",s2_u100_s50_d0_r1\n"),
            "{text}"
        );
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        let failed = reader
            .records()
            .map(|l| l.expect("the CSV reads back"))
            .find(|l| l.get(COLUMNS.len()) == Some("s2_u100_s50_d0_r1"))
            .expect("the failed cell has a line");
        assert_eq!(failed.len(), COLUMNS.len() + 1);
        assert_eq!(
            &failed[COLUMNS.len() - 1],
            "failed: sut \"proxy\" exited, status 2"
        );
    }

    #[test]
    fn csv_of_a_phase_without_cells_still_has_its_header() {
        let text = csv(&[], Phase::Warmup);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with("Scenario Name,Concurrent Users,"),
            "{text}"
        );
        assert!(text.ends_with(",Flags,Cell\n"), "{text}");
    }

    #[test]
    fn json_summary_has_numbers_and_nulls() {
        let v: serde_json::Value = serde_json::from_str(&json("suite", &fixture(), 0)).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["columns"][0], "Scenario Name");
        let m = v["measurement"].as_array().unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[0]["cell"], "s0_u100_s50_d0_r1");
        assert_eq!(m[0]["throughput_rps"], 19551.06);
        assert_eq!(m[3]["status"], "failed");
        assert!(m[3]["throughput_rps"].is_null());
        assert_eq!(m[1]["generator_bound"], true);
        assert_eq!(v["warmup"][0]["throughput_rps"], 9000.0);
        // The resource and GC figures, exact, and null where a cell has none.
        assert_eq!(m[2]["sut_threads_max"], 3);
        assert_eq!(m[2]["sut_fds_max"], 110);
        assert_eq!(m[2]["loadavg_mean"], 1.5);
        assert_eq!(m[2]["sut_cpu_us_per_request"], 49.74);
        assert!(m[3]["sut_cpu_us_per_request"].is_null(), "failed");
        assert!(
            v["warmup"][0]["sut_cpu_us_per_request"].is_null(),
            "read for the measurement only"
        );
        assert_eq!(m[2]["gc_throughput_percent"], 98.8);
        assert_eq!(m[2]["gc_pause_p99_ms"], 7.254);
        assert_eq!(m[2]["gc_heap_after_full_gc_mib"], 20.55);
        assert!(m[0]["gc_throughput_percent"].is_null(), "no GC events");
        assert!(m[0]["gc_pause_p99_ms"].is_null());
        assert!(m[1]["gc_heap_after_full_gc_mib"].is_null(), "no GC log");
        assert!(m[3]["sut_fds_max"].is_null(), "failed");
        // The origin figures: 100 connections for 73,000 requests, 90 of 100 handshakes
        // resumed, the busier back-end at 45,000 × 2 / 73,000 of the even share.
        let close = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
        assert!(close(
            &m[2]["upstream_connections_per_1k_requests"],
            100_000.0 / 73_000.0
        ));
        assert!(close(&m[2]["upstream_tls_resumption_percent"], 90.0));
        assert!(close(&m[2]["balance_spread"], 90_000.0 / 73_000.0));
        assert!(m[1]["balance_spread"].is_null(), "no origin statistics");
        assert!(
            v["warmup"][2]["balance_spread"].is_null(),
            "measurement only"
        );
    }

    #[test]
    fn a_request_count_is_said_as_such() {
        let mut r = fixture();
        for x in &mut r {
            x.cell.requests = Some(1_000_000);
            x.cell.duration_s = 0.0;
        }
        let md = markdown("t", &r, 0);
        assert!(
            md.contains(
                "Each cell: 1 s warm-up (reported apart below), then 1000000 requests measured."
            ),
            "{md}"
        );
        r[0].cell.duration_s = 30.0;
        assert_eq!(
            measured(&r[0].cell),
            "1000000 requests or 30 s, whichever came first"
        );
    }

    #[test]
    fn a_program_cell_shows_its_program_and_its_mean_rate() {
        let mut r = fixture();
        r[0].cell.rate = Some(10500.0);
        r[0].cell.program = Some("ramp:1000..20000/30s".into());
        r[1].cell.rate = Some(5000.0);
        assert!(flags(&r[0])
            .contains(&"open model: ramp:1000..20000/30s (mean 10500 req/s)".to_owned()));
        assert!(flags(&r[1]).contains(&"open model at 5000 req/s".to_owned()));
        let v: serde_json::Value = serde_json::from_str(&json("suite", &r, 0)).unwrap();
        let m = v["measurement"].as_array().unwrap();
        let cell = |id: &str| m.iter().find(|c| c["cell"] == id).unwrap().clone();
        let program = cell(&r[0].cell.id);
        assert_eq!(program["program"], "ramp:1000..20000/30s");
        assert_eq!(program["rate"], 10500.0);
        assert!(cell(&r[1].cell.id)["program"].is_null());
    }

    #[test]
    fn markdown_escapes_pipes_in_reasons() {
        let mut r = fixture();
        r[0].reason = Some("sut `a | b` exited".into());
        let t = table(&r, Phase::Measurement);
        assert!(t.contains("failed: sut `a \\| b` exited"), "{t}");
    }
}
