//! The gRPC figures of a `gatebench load grpc://…` run. Rule: what the generator counted,
//! nothing derived that a reader could not derive; every call started ends in exactly one
//! class of `calls` (a gRPC status by its name, or what ended it below gRPC), every message
//! sent in exactly one class of `messages`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::latency::LatencySummary;

/// A gRPC run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcReport {
    /// Seconds from the first call's intended start to the last call's end.
    pub duration_s: f64,
    /// Connections opened (HTTP/2 handshakes completed).
    pub connections_opened: u64,
    /// Connection attempts that failed (TCP, TLS, the HTTP/2 handshake).
    pub connections_failed: u64,
    /// Calls started (each is in exactly one class of `calls`).
    pub calls_started: u64,
    /// Calls by how they ended: `ok` and the other gRPC status names (`unavailable`,
    /// `deadline_exceeded`, …; a deadline the client enforced counts as `deadline_exceeded`),
    /// `timeout` (nothing from the server for `--timeout`), `stream_reset` (RST_STREAM),
    /// `goaway` (refused by the server's GOAWAY), `connect_error`, `protocol_error` (broken
    /// message framing, no `grpc-status`, a response that is not gRPC).
    pub calls: BTreeMap<String, u64>,
    /// HTTP statuses other than 200 seen on responses (gRPC maps them to a status code, which
    /// is the call's class).
    pub http_statuses: BTreeMap<String, u64>,
    /// Calls that ended `ok` per second of `duration_s`.
    pub calls_per_s: f64,
    /// From each `ok` call's intended start to its status.
    pub call_latency: LatencySummary,
    /// From each call's intended start to its first reply message (calls with one).
    pub first_message_latency: LatencySummary,
    /// Bidirectional streams: from each message's intended send time to its reply.
    pub message_latency: LatencySummary,
    /// Streams: between consecutive reply messages of a call.
    pub message_gap: LatencySummary,
    /// Request messages sent.
    pub messages_sent: u64,
    /// Reply messages received.
    pub messages_received: u64,
    /// Reply messages received per second of `duration_s`.
    pub messages_per_s: f64,
    /// Request messages by what became of them: `ok` (a bidirectional stream's message whose
    /// reply arrived; any other kind's message of a call that ended `ok`), or the class of the
    /// call that ended without its reply.
    pub messages: BTreeMap<String, u64>,
    /// The generator's self-check over the run: its CPU, a CPU quota, and in the open model
    /// (`-R`) how late calls started against their schedule. Absent in records written before
    /// it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<crate::SelfCheck>,
    /// The verdicts of `--threshold` (or a suite's thresholds), judged on the whole run; empty
    /// without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::ThresholdResult>,
}

impl GrpcReport {
    /// Calls that did not end `ok`, in percent of the calls started (0 without any): what a
    /// summary's Error % says of a gRPC cell.
    pub fn error_percent(&self) -> f64 {
        if self.calls_started == 0 {
            return 0.0;
        }
        let ok = self.calls.get("ok").copied().unwrap_or(0);
        self.calls_started.saturating_sub(ok) as f64 * 100.0 / self.calls_started as f64
    }
}

/// Version of the gRPC record's format (`schema/grpc-report.schema.json`).
pub const GRPC_SCHEMA_VERSION: u32 = 1;

/// The JSON record of a gRPC run (`gatebench load grpc://… --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcRecord {
    /// [`GRPC_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `grpc`.
    pub kind: String,
    /// The generator.
    pub tool: crate::ToolInfo,
    /// When the load started, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// The run's settings.
    pub config: GrpcConfig,
    /// The figures.
    pub grpc: GrpcReport,
}

/// The settings of a gRPC run, as given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcConfig {
    /// The target URL (`grpc://` or `grpcs://`, with the method's path).
    pub url: String,
    /// Over TLS (`grpcs://`).
    pub tls: bool,
    /// `unary`, `server_stream`, `client_stream` or `bidi`.
    pub call_kind: String,
    /// HTTP/2 connections.
    pub connections: u32,
    /// Closed model: calls in flight per connection.
    pub concurrency: u32,
    /// Open model: calls started per second; `null` for the closed model.
    pub rate: Option<f64>,
    /// Seconds of calls asked for.
    pub duration_s: f64,
    /// Calls asked for (`-n`), if a count was given.
    pub calls: Option<u64>,
    /// Bytes of each request message.
    pub message_bytes: u64,
    /// Messages per call: sent (client and bidirectional streams) or asked of the echo
    /// (server streams).
    pub messages_per_call: u64,
    /// Messages per second within a stream; `null`: as fast as they go (bidirectional: one in
    /// flight at a time).
    pub message_rate: Option<f64>,
    /// The deadline sent as `grpc-timeout` and kept by the client, seconds.
    pub deadline_s: Option<f64>,
    /// Longest silence from the server within a call, seconds.
    pub timeout_s: f64,
    /// Generator threads.
    pub threads: u32,
}
