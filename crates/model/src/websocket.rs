//! The WebSocket figures of a `gatebench load ws://…` run. Rule: what the generator counted,
//! nothing derived that a reader could not derive; every message sent ends in exactly one of
//! the message classes (`ok`, `timeout`, `reset`, `protocol_error`, `closed`), every
//! connection attempt in exactly one of the open classes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::latency::LatencySummary;

/// A WebSocket run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebSocketReport {
    /// Seconds of load (the message schedule's span).
    pub duration_s: f64,
    /// Connection attempts.
    pub connections_attempted: u64,
    /// Connections whose opening handshake succeeded (101, accept key right).
    pub connections_opened: u64,
    /// Attempts refused by the server: an answer other than a valid 101.
    pub handshakes_refused: u64,
    /// Attempts that failed otherwise: connect error, timeout, the connection reset.
    pub connections_failed: u64,
    /// Connections the client closed at their end (the close handshake sent): after their
    /// `--ws-messages`, or when the run ended.
    #[serde(default)]
    pub connections_closed: u64,
    /// Connections opened per second of the run.
    #[serde(default)]
    pub connections_per_s: f64,
    /// Connect plus handshake, of opened connections: from the attempt's intended start when
    /// opens are scheduled (`-R`), so a server slow to accept shows; else from its start.
    pub handshake_latency: LatencySummary,
    /// Messages sent.
    pub messages_sent: u64,
    /// Messages echoed back and received (the `ok` class).
    pub messages_received: u64,
    /// Messages sent and never answered within the timeout.
    pub messages_timeout: u64,
    /// Messages outstanding when their connection was reset or ended without a close.
    pub messages_reset: u64,
    /// Messages outstanding when the received bytes broke the protocol, or answered with a
    /// payload of the wrong size or kind.
    pub messages_protocol_error: u64,
    /// Messages outstanding when the server closed the connection (its code in `close_codes`).
    pub messages_closed: u64,
    /// Round trip of each received message, from its intended send time to its echo's arrival.
    pub message_latency: LatencySummary,
    /// Messages received per second.
    pub messages_per_s: f64,
    /// Close codes the server sent, by code (`none` for a close frame without one).
    pub close_codes: BTreeMap<String, u64>,
    /// Pings the server sent (each answered with a pong).
    pub pings_answered: u64,
    /// The generator's self-check over the run: its CPU, a CPU quota, and with a schedule
    /// (`--ws-rate`, `-R`) how late messages and opens left against it. Absent in records
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<crate::SelfCheck>,
    /// The verdicts of `--threshold` (or a suite's thresholds), judged on the whole run; empty
    /// without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::ThresholdResult>,
}

impl WebSocketReport {
    /// Messages sent and not received back, in percent of those sent (0 without any): what a
    /// summary's Error % says of a WebSocket cell.
    pub fn error_percent(&self) -> f64 {
        if self.messages_sent == 0 {
            return 0.0;
        }
        self.messages_sent.saturating_sub(self.messages_received) as f64 * 100.0
            / self.messages_sent as f64
    }
}

/// Version of the WebSocket record's format (`schema/websocket-report.schema.json`).
pub const WEBSOCKET_SCHEMA_VERSION: u32 = 1;

/// The JSON record of a WebSocket run (`gatebench load ws://… --json`): what was asked and
/// what was counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSocketRecord {
    /// [`WEBSOCKET_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `websocket` (an HTTP load's record has no `kind`).
    pub kind: String,
    /// The generator.
    pub tool: crate::ToolInfo,
    /// When the load started, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// The run's settings.
    pub config: WebSocketConfig,
    /// The figures.
    pub websocket: WebSocketReport,
}

/// The settings of a WebSocket run, as given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSocketConfig {
    /// The target URL (`ws://` or `wss://`).
    pub url: String,
    /// Over TLS (`wss://`).
    pub tls: bool,
    /// Connections held open at once (with `connect_rate` or `connections_total`: at most).
    pub connections: u32,
    /// Connection opens per second, scheduled (`-R`); `null`: not scheduled.
    #[serde(default)]
    pub connect_rate: Option<f64>,
    /// Connections to open in all (`-n`); `null`: as the duration allows.
    #[serde(default)]
    pub connections_total: Option<u64>,
    /// Messages each connection sends before closing (`--ws-messages`); `null`: until the end.
    #[serde(default)]
    pub messages_per_connection: Option<u64>,
    /// Seconds of messages asked for.
    pub duration_s: f64,
    /// Bytes per message.
    pub size_bytes: u64,
    /// Binary messages (text otherwise).
    pub binary: bool,
    /// Messages per second on each connection (open model); `null`: one in flight at a time.
    pub rate_per_connection: Option<f64>,
    /// Longest wait for a connection to open and for an echo, seconds.
    pub timeout_s: f64,
    /// Generator threads.
    pub threads: u32,
}
