//! The `gatebench load --json` record against the committed JSON Schema
//! (`schema/load-report.schema.json`, draft 2020-12): records of real closed- and open-model runs
//! validate, and records a reader must refuse are rejected for the expected reason.
//!
//! This checks the record's shape, not its figures: whether the counts add up and the rates are
//! right is for the accounting tests. The validator is `boon`; compiling the schema also checks it
//! against the draft 2020-12 meta-schema.

use std::sync::OnceLock;
use std::time::Duration;

use boon::{Compiler, ErrorKind, SchemaIndex, Schemas, ValidationError};
use gatebench_loadgen::Arrival;
use gatebench_model::Model;
use serde_json::{json, Value};

use crate::support;

const SCHEMA_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../schema/load-report.schema.json"
);

/// The committed schema, compiled.
struct Schema {
    schemas: Schemas,
    index: SchemaIndex,
}

impl Schema {
    fn load() -> Schema {
        let path = std::fs::canonicalize(SCHEMA_PATH)
            .unwrap_or_else(|e| panic!("finding the schema at {SCHEMA_PATH}: {e}"));
        let path = path.to_str().expect("the schema path is UTF-8");
        let mut schemas = Schemas::new();
        let index = Compiler::new()
            .compile(path, &mut schemas)
            .unwrap_or_else(|e| panic!("compiling {path}:\n{e:#}"));
        Schema { schemas, index }
    }

    /// Panics with every violation (instance path, schema path, message) and the record.
    fn assert_valid(&self, record: &Value) {
        if let Err(e) = self.schemas.validate(record, self.index) {
            panic!(
                "the record does not match {SCHEMA_PATH}:\n{e:#}\n\nrecord:\n{}",
                serde_json::to_string_pretty(record).expect("a Value encodes")
            );
        }
    }

    /// Asserts that `record` is rejected, and among the reasons is a violation at `at` (a JSON
    /// pointer into the record) for which `expected` holds.
    fn assert_rejected(&self, record: &Value, at: &str, expected: impl Fn(&ErrorKind) -> bool) {
        let Err(e) = self.schemas.validate(record, self.index) else {
            panic!("the schema accepted a record it must reject (expected a violation at `{at}`)");
        };
        let mut leaves = Vec::new();
        collect_leaves(&e, &mut leaves);
        assert!(
            leaves
                .iter()
                .any(|l| l.instance_location.to_string() == at && expected(&l.kind)),
            "rejected, but not for the expected reason at `{at}`:\n{e:#}"
        );
    }
}

/// The innermost violations: the ones that name the offending value.
fn collect_leaves<'a, 's, 'v>(
    e: &'a ValidationError<'s, 'v>,
    out: &mut Vec<&'a ValidationError<'s, 'v>>,
) {
    if e.causes.is_empty() {
        out.push(e);
    }
    for c in &e.causes {
        collect_leaves(c, out);
    }
}

/// The record of a real closed-model run (2 connections, 300 ms) against the in-process echo
/// backend. Shared by the tests that mutate it, so the load runs once.
fn closed_record() -> &'static Value {
    static RECORD: OnceLock<Value> = OnceLock::new();
    RECORD.get_or_init(|| {
        let echo = support::Echo::start(Duration::ZERO);
        let out = support::run(support::spec(&echo.url(), 2, Duration::from_millis(300)));
        let r = &out.report;
        assert_eq!(r.config.model, Model::Closed);
        assert!(
            r.measurement.requests > 0,
            "the run must have done some work"
        );
        assert!(r.warmup.is_none());
        assert!(r.measurement.latency_uncorrected.is_none());
        assert!(r.self_check.send_lag.is_none());
        serde_json::to_value(r).expect("the report encodes as JSON")
    })
}

#[test]
fn closed_model_record_matches_schema() {
    Schema::load().assert_valid(closed_record());
}

#[test]
fn arrival_program_record_matches_schema() {
    let echo = support::Echo::start(Duration::ZERO);
    let mut spec = support::spec(&echo.url(), 2, Duration::from_millis(1200));
    spec.arrival = Arrival::Program(gatebench_loadgen::ArrivalProgram {
        rate: "ramp:100..300/1s".parse().unwrap(),
        spacing: gatebench_loadgen::Spacing::Poisson { seed: 3 },
    });
    spec.warmup = Duration::from_millis(200);
    let out = support::run(spec);
    let record = serde_json::to_value(&out.report).unwrap();
    assert!(record["timeline"].as_array().is_some_and(|t| t.len() >= 2));
    assert_eq!(record["config"]["arrival"]["seed"], 3);
    let schema = Schema::load();
    schema.assert_valid(&record);
    let mut bad = record.clone();
    bad["config"]["arrival"]["spacing"] = "uniform".into();
    schema.assert_rejected(&bad, "/config/arrival/spacing", |k| {
        matches!(k, ErrorKind::Enum { .. })
    });
}

/// A `--stream sse` record (the echo's emulated model, read as plain events) has its stream
/// section, and the schema holds it to its shape.
#[test]
fn stream_record_matches_schema() {
    let echo = support::Echo::start_with(gatebench_services::echo::EchoConfig {
        threads: 1,
        chat: gatebench_services::echo::chat::ChatConfig {
            first_token: Duration::from_millis(10),
            interval: Duration::from_millis(5),
            tokens: 4,
            stamp: true,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut spec = support::spec(
        &format!("http://{}/v1/chat/completions", echo.addr),
        2,
        Duration::from_millis(400),
    );
    spec.method = "POST".into();
    spec.body = gatebench_loadgen::RequestBody::Inline(br#"{"stream":true}"#.to_vec());
    spec.stream = Some(gatebench_loadgen::StreamSpec {
        mode: gatebench_loadgen::StreamMode::Sse,
        stall: Duration::from_secs(1),
    });
    let out = support::run(spec);
    let record = serde_json::to_value(&out.report).unwrap();
    assert_eq!(record["stream"]["unit"], "events");
    // The role chunk, four tokens and the finish-and-[DONE] frame: six events a stream.
    let s = out.report.stream.as_ref().unwrap();
    assert!(s.completed > 0 && s.events >= 6 * s.completed, "{s:?}");
    let schema = Schema::load();
    schema.assert_valid(&record);
    let mut bad = record.clone();
    bad["stream"]["mode"] = "websocket".into();
    schema.assert_rejected(&bad, "/stream/mode", |k| {
        matches!(k, ErrorKind::Enum { .. })
    });
}

#[test]
fn open_model_record_with_warmup_matches_schema() {
    let echo = support::Echo::start(Duration::ZERO);
    let mut spec = support::spec(&echo.url(), 2, Duration::from_millis(300));
    spec.arrival = Arrival::Open { rate: 200.0 };
    spec.warmup = Duration::from_millis(200);
    let out = support::run(spec);
    let r = &out.report;
    // The nullable fields the closed run leaves null are all set here.
    assert_eq!(r.config.model, Model::Open);
    assert_eq!(r.config.rate, Some(200.0));
    let warmup = r.warmup.as_ref().expect("a warm-up phase");
    assert!(warmup.requests > 0 && r.measurement.requests > 0);
    assert!(warmup.latency_uncorrected.is_some());
    assert!(r.measurement.latency_uncorrected.is_some());
    assert_eq!(r.measurement.target_rps, Some(200.0));
    assert!(r.self_check.send_lag.is_some());
    assert!(r.self_check.schedule_kept_percent.is_some());
    let record = serde_json::to_value(r).expect("the report encodes as JSON");
    Schema::load().assert_valid(&record);
}

/// A shard's record (`--shard I/N`) and the merge of two of them match the schema, and the
/// merged record still carries its histograms.
#[test]
fn shard_and_merged_records_match_schema() {
    let schema = Schema::load();
    let record: gatebench_model::LoadReport =
        serde_json::from_value(closed_record().clone()).expect("the record reads back");
    assert!(
        record.measurement.histograms.is_some(),
        "a run carries its histograms"
    );
    let shards: Vec<_> = (0..2)
        .map(|index| {
            let mut r = record.clone();
            r.shard = Some(gatebench_model::ShardInfo {
                index,
                count: 2,
                connections_total: 4,
                rate_total: None,
                program_total: None,
                requests_total: None,
                start_at_unix_ms: Some(1_795_000_000_000),
            });
            r
        })
        .collect();
    schema.assert_valid(&serde_json::to_value(&shards[1]).unwrap());
    let merged = gatebench_model::merge::merge(&shards).expect("two shards of one run merge");
    assert_eq!(merged.measurement.requests, 2 * record.measurement.requests);
    assert!(merged.measurement.histograms.is_some());
    schema.assert_valid(&serde_json::to_value(&merged).unwrap());
}

#[test]
fn schema_rejects_unknown_fields() {
    let schema = Schema::load();
    let is_extra = |name: &'static str| move |k: &ErrorKind| matches!(k, ErrorKind::AdditionalProperties { got } if got == &[name]);

    let mut top = closed_record().clone();
    top["git_sha"] = json!("0123abc");
    schema.assert_rejected(&top, "", is_extra("git_sha"));

    // Nested objects are closed too: a misspelt or invented figure is not silently accepted.
    let mut nested = closed_record().clone();
    nested["measurement"]["latency"]["p99_ms"] = json!(1.5);
    schema.assert_rejected(&nested, "/measurement/latency", is_extra("p99_ms"));
}

#[test]
fn schema_rejects_a_missing_outcome_class() {
    let mut record = closed_record().clone();
    let outcomes = record["measurement"]["outcomes"]
        .as_object_mut()
        .expect("outcomes is an object");
    assert_eq!(
        outcomes.len(),
        gatebench_model::Outcome::COUNT,
        "every class is present in a real record"
    );
    // The stream classes came later: a record written before them lacks them and is valid.
    let mut older = record.clone();
    let old = older["measurement"]["outcomes"].as_object_mut().unwrap();
    for later in ["stream_stalled", "stream_incomplete", "not_event_stream"] {
        old.remove(later).expect("a stream class");
    }
    let schema = Schema::load();
    schema.assert_valid(&older);
    let outcomes = record["measurement"]["outcomes"].as_object_mut().unwrap();
    outcomes.remove("goaway").expect("`goaway` is a class");
    schema.assert_rejected(
        &record,
        "/measurement/outcomes",
        |k| matches!(k, ErrorKind::Required { want } if want == &["goaway"]),
    );
}

#[test]
fn schema_rejects_another_schema_version() {
    let mut record = closed_record().clone();
    record["schema_version"] = json!(1);
    Schema::load().assert_rejected(
        &record,
        "/schema_version",
        |k| matches!(k, ErrorKind::Const { want } if **want == json!(2)),
    );
}

#[test]
fn schema_rejects_open_model_figures_in_a_closed_record() {
    let mut record = closed_record().clone();
    record["measurement"]["latency_uncorrected"] = record["measurement"]["latency"].clone();
    Schema::load().assert_rejected(&record, "/measurement/latency_uncorrected", |k| {
        matches!(k, ErrorKind::Type { .. })
    });
}

/// Records with request classes — a mix in the closed model, a replay (open model) — match
/// the schema, and a class's invented field is refused.
#[test]
fn mix_and_replay_records_match_schema() {
    let schema = Schema::load();
    let echo = support::Echo::start(Duration::ZERO);
    let mut spec = support::spec(&echo.url(), 2, Duration::from_millis(300));
    spec.requests = gatebench_loadgen::Requests::Mix(
        gatebench_loadgen::Mix::parse(
            "mix.jsonl",
            "{\"weight\":3,\"path\":\"/a\"}\n{\"name\":\"post\",\"method\":\"POST\",\"path\":\"/b\",\"body\":\"x\"}\n",
            std::path::Path::new("."),
        )
        .unwrap(),
    );
    let record = serde_json::to_value(&support::run(spec).report).unwrap();
    assert_eq!(record["classes"].as_array().map(Vec::len), Some(2));
    assert_eq!(record["config"]["requests_from"]["kind"], "mix");
    schema.assert_valid(&record);
    let mut bad = record.clone();
    bad["classes"][0]["p99_ms"] = json!(1.0);
    schema.assert_rejected(&bad, "/classes/0", |k| {
        matches!(k, ErrorKind::AdditionalProperties { .. })
    });

    let log = "1.2.3.4 - - [25/Nov/2026:16:00:00 +0000] \"GET /x?a=1 HTTP/1.1\" 200 5\n\
               1.2.3.4 - - [25/Nov/2026:16:00:01 +0000] \"GET /y HTTP/1.1\" 200 5\n";
    let mut replay = gatebench_loadgen::Replay::parse("access.log", log.as_bytes(), None).unwrap();
    replay.speed = 20.0;
    let mut spec = support::spec(&echo.url(), 1, Duration::from_millis(300));
    spec.stop.duration = None;
    spec.requests = gatebench_loadgen::Requests::Replay(replay);
    let record = serde_json::to_value(&support::run(spec).report).unwrap();
    assert_eq!(record["config"]["model"], "open");
    assert_eq!(record["config"]["requests_from"]["format"], "combined");
    assert!(record["classes"][0]["latency_uncorrected"].is_object());
    schema.assert_valid(&record);
}
