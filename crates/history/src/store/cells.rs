//! One cell record as the history stores it: its key, its figures and its measurement's
//! histograms, as the values of a `cells` row.
//!
//! Latency percentiles are computed here from the record's measurement histograms (answered
//! and censored together, as the record's own `latency` is, with
//! `gatebench_model::histogram::summarize_censored`) and kept beside the histograms, so a
//! series is read without decoding thousands of histograms; a record written before records
//! carried histograms gives the percentiles of its summary instead. The histograms are kept
//! as the record carries them, HdrHistogram's V2 deflate encoding, base64 taken off: lossless.

use base64::Engine;
use gatebench_model::histogram::{self, LatencyHistogram};
use gatebench_model::{CellParams, CellRecord, CellStatus, LatencySummary};

use crate::store::db::Value;

/// The `cells` columns a row is written with, in the order of [`cell_values`] (after
/// `run_id`).
pub(crate) const CELL_COLUMNS: &[&str] = &[
    "cell_key",
    "cell_id",
    "repeat_number",
    "scenario",
    "title",
    "users",
    "rate",
    "program",
    "size_bytes",
    "delay_ms",
    "protocol",
    "kind",
    "status",
    "reason",
    "started_at_unix_ms",
    "finished_at_unix_ms",
    "generator_bound",
    "requests",
    "throughput_rps",
    "error_percent",
    "mean_ms",
    "stdev_ms",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "latency_lower_bound",
    "sut_cpu_us_per_request",
    "sut_cpu_mean_percent",
    "sut_rss_mean_mib",
    "sut_rss_max_mib",
    "gc_throughput_percent",
    "gc_pause_p99_ms",
    "gc_heap_after_full_gc_mib",
    "error_classes",
    "hist_answered",
    "hist_censored",
    "hist_answered_uncorrected",
    "hist_censored_uncorrected",
];

/// A cell's key: its id without the repeat (`passthrough-h1c-h1c_u100_s50_d0`), the same for
/// every repeat and every version of the cell. The runner's ids end in `_r<repeat>`.
pub fn cell_key(cell: &CellParams) -> String {
    let suffix = format!("_r{}", cell.repeat);
    cell.id.strip_suffix(&suffix).unwrap_or(&cell.id).to_owned()
}

/// The bytes of a base64 histogram (the text is checked to decode by the caller).
fn histogram_bytes(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| e.to_string())
}

/// A stored histogram read back.
pub fn decode_stored(bytes: &[u8]) -> Result<LatencyHistogram, String> {
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    histogram::decode(&text).map_err(|e| e.to_string())
}

/// The percentile `p` of a summary: (ms, whether it is a lower bound).
fn at(s: &LatencySummary, p: f64) -> (Option<f64>, bool) {
    match s.point(p) {
        Some(pt) => (Some(pt.ms), pt.lower_bound),
        None => (None, false),
    }
}

/// The values of the row of `record` (every column of [`CELL_COLUMNS`]).
pub(crate) fn cell_values(record: &CellRecord) -> Result<Vec<Value>, String> {
    let c = &record.cell;
    let m = record.load.as_ref().map(|l| &l.measurement);
    // A gRPC cell's calls, a WebSocket cell's messages, stand for requests (summaries and
    // compare read them the same way).
    let units = record.unit_load().filter(|_| m.is_none());
    let calls = units.as_ref();
    let hist = m.and_then(|m| m.histograms.as_ref());
    let bad = |e: String| format!("cell {}: a histogram: {e}", c.id);
    let blob = |t: Option<&String>| -> Result<Value, String> {
        Ok(Value::Blob(
            t.map(|t| histogram_bytes(t)).transpose().map_err(bad)?,
        ))
    };
    let decode = |t: &str| histogram::decode(t).map_err(|e| bad(e.to_string()));
    // Every histogram is checked to decode before it is stored; answered and censored give
    // the percentiles.
    if let Some(h) = hist {
        for t in [&h.answered_uncorrected, &h.censored_uncorrected]
            .into_iter()
            .flatten()
        {
            decode(t)?;
        }
    }
    let latency: Option<LatencySummary> = match (m, hist) {
        (_, Some(h)) => {
            let answered = decode(&h.answered)?;
            let censored = match &h.censored {
                Some(t) => decode(t)?,
                None => histogram::new_histogram(),
            };
            Some(histogram::summarize_censored(&answered, &censored))
        }
        (Some(m), None) => Some(m.latency.clone()),
        (None, None) => calls.map(|u| u.latency.clone()),
    };
    let (p50, lb50) = latency.as_ref().map_or((None, false), |s| at(s, 50.0));
    let (p99, lb99) = latency.as_ref().map_or((None, false), |s| at(s, 99.0));
    let (p999, lb999) = latency.as_ref().map_or((None, false), |s| at(s, 99.9));
    let sut = record.sut_measurement.as_ref();
    let gc = record.gc_measurement.as_ref();
    let error_classes = match m {
        Some(m) => {
            let errors: serde_json::Map<String, serde_json::Value> = m
                .outcomes
                .nonzero()
                .filter(|(o, _)| o.is_error())
                .map(|(o, n)| (o.name().to_owned(), n.into()))
                .collect();
            serde_json::Value::Object(errors).to_string()
        }
        None => {
            let errors: serde_json::Map<String, serde_json::Value> = calls
                .iter()
                .flat_map(|u| u.errors.iter())
                .map(|(class, n)| (class.clone(), (*n).into()))
                .collect();
            serde_json::Value::Object(errors).to_string()
        }
    };
    let kind = serde_json::to_value(c.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "load".into());
    let real = Value::Real;
    Ok(vec![
        Value::text(cell_key(c)),
        Value::text(c.id.clone()),
        Value::int(i64::from(c.repeat)),
        Value::text(c.scenario.clone()),
        Value::text(c.title.clone()),
        Value::int(i64::from(c.users)),
        real(c.rate),
        Value::Text(c.program.clone()),
        Value::int(c.size_bytes as i64),
        real(Some(c.delay_ms)),
        Value::text(c.protocol.clone()),
        Value::text(kind),
        Value::text(match record.status {
            CellStatus::Ok => "ok",
            CellStatus::Failed => "failed",
        }),
        Value::Text(record.reason.clone()),
        Value::int(record.started_at_unix_ms as i64),
        Value::int(record.finished_at_unix_ms as i64),
        Value::int(i64::from(record.generator_bound())),
        Value::Int(
            m.map(|m| m.requests as i64)
                .or(calls.map(|u| u.started as i64)),
        ),
        real(m.map(|m| m.throughput_rps).or(calls.map(|u| u.ok_per_s))),
        real(
            m.map(|m| m.error_percent)
                .or(calls.map(|u| u.error_percent)),
        ),
        real(latency.as_ref().map(|s| s.mean_ms)),
        real(latency.as_ref().map(|s| s.stdev_ms)),
        real(p50),
        real(p99),
        real(p999),
        Value::int(i64::from(lb50 || lb99 || lb999)),
        real(sut.and_then(|s| s.cpu_us_per_request)),
        real(sut.map(|s| s.cpu_mean_percent)),
        real(sut.map(|s| s.rss_mean_mib)),
        real(sut.map(|s| s.rss_max_mib)),
        real(gc.and_then(|g| g.throughput_percent)),
        real(gc.and_then(|g| (g.pauses > 0).then_some(g.pause_p99_ms))),
        real(gc.and_then(|g| g.heap_after_full_gc_mib)),
        Value::text(error_classes),
        blob(hist.map(|h| &h.answered))?,
        blob(hist.and_then(|h| h.censored.as_ref()))?,
        blob(hist.and_then(|h| h.answered_uncorrected.as_ref()))?,
        blob(hist.and_then(|h| h.censored_uncorrected.as_ref()))?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_id_without_the_repeat() {
        let mut c: CellParams = serde_json::from_value(serde_json::json!({
            "id": "proxy_u10_s50_d0_h1c_r12", "scenario": "proxy", "title": "P",
            "scenario_index": 0, "users": 10, "rate": null, "size_bytes": 50,
            "delay_ms": 0.0, "protocol": "h1c", "repeat": 12, "order": 1,
            "warmup_s": 1.0, "duration_s": 4.0
        }))
        .unwrap();
        assert_eq!(cell_key(&c), "proxy_u10_s50_d0_h1c");
        c.id = "odd".into();
        assert_eq!(cell_key(&c), "odd");
        assert_eq!(CELL_COLUMNS.len(), 38);
    }

    #[test]
    fn a_grpc_cell_is_stored_with_its_calls_as_requests() {
        use gatebench_model::grpc::{GrpcConfig, GrpcRecord, GrpcReport};
        let cell: CellParams = serde_json::from_value(serde_json::json!({
            "id": "grpc_u4_s100_d0_r1", "scenario": "grpc", "title": "G",
            "scenario_index": 0, "users": 4, "rate": null, "size_bytes": 100,
            "delay_ms": 0.0, "protocol": "h2c", "repeat": 1, "order": 1,
            "warmup_s": 1.0, "duration_s": 2.0
        }))
        .unwrap();
        let mut record: CellRecord = serde_json::from_value(serde_json::json!({
            "schema_version": gatebench_model::SCHEMA_VERSION, "cell": cell, "status": "ok",
            "reason": null, "started_at_unix_ms": 1, "finished_at_unix_ms": 2,
            "processes": [], "load": null, "sut_warmup": null, "sut_measurement": null
        }))
        .unwrap();
        let mut report = GrpcReport {
            calls_started: 200,
            calls_per_s: 99.0,
            ..GrpcReport::default()
        };
        report.calls.insert("ok".into(), 198);
        report.calls.insert("unavailable".into(), 2);
        report.call_latency.percentiles = vec![gatebench_model::Percentile {
            p: 99.0,
            ms: 3.5,
            lower_bound: false,
        }];
        report.call_latency.count = 198;
        record.grpc = Some(GrpcRecord {
            schema_version: 1,
            kind: "grpc".into(),
            tool: gatebench_model::ToolInfo {
                name: "gatebench".into(),
                version: "0".into(),
            },
            started_at_unix_ms: 1,
            config: GrpcConfig {
                url: "grpc://127.0.0.1:1/a.B/C".into(),
                tls: false,
                call_kind: "unary".into(),
                connections: 1,
                concurrency: 4,
                rate: None,
                duration_s: 2.0,
                calls: None,
                message_bytes: 102,
                messages_per_call: 1,
                message_rate: None,
                deadline_s: None,
                timeout_s: 10.0,
                threads: 1,
            },
            grpc: report,
        });
        let values = cell_values(&record).unwrap();
        let col =
            |name: &str| values[CELL_COLUMNS.iter().position(|c| *c == name).unwrap()].clone();
        assert_eq!(col("requests"), Value::Int(Some(200)));
        assert_eq!(col("throughput_rps"), Value::Real(Some(99.0)));
        assert_eq!(col("error_percent"), Value::Real(Some(1.0)));
        assert_eq!(col("p99_ms"), Value::Real(Some(3.5)));
        assert_eq!(
            col("error_classes"),
            Value::text("{\"unavailable\":2}".to_owned())
        );
    }
}
