//! The record of one load run: resolved configuration, warm-up and measurement phases,
//! connection figures and the generator's self-check.
//!
//! This is what `gatebench load --json` prints and what a suite cell's `record.json` embeds.
//! Its JSON shape is pinned by `schema/load-report.schema.json`.

use serde::{Deserialize, Serialize};

use crate::{LatencySummary, OutcomeCounts};

/// Name and version of the tool that wrote a record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Always `gatebench`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// The arrival model of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// N connections, each sends its next request when the previous answer arrives.
    Closed,
    /// A target rate; latency measured from each request's intended send time.
    Open,
}

/// The fully resolved configuration of a load run, so a result can be reproduced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadConfigRecord {
    /// Target URL.
    pub url: String,
    /// HTTP method.
    pub method: String,
    /// Protocol used on the wire (`http/1.1`, `h2`).
    pub protocol: String,
    /// Arrival model.
    pub model: Model,
    /// Concurrent connections.
    pub connections: u32,
    /// Concurrent streams per connection (1 for HTTP/1.1).
    pub streams: u32,
    /// Worker threads.
    pub threads: u32,
    /// Target rate in requests/s (open model only); with an arrival program, its mean over the
    /// measurement.
    pub rate: Option<f64>,
    /// The open model's arrival program, when the rate changes or arrivals are Poisson.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<ArrivalRecord>,
    /// Measurement duration in seconds (duration stop rule).
    pub duration_s: Option<f64>,
    /// Request count (count stop rule).
    pub requests: Option<u64>,
    /// Warm-up duration in seconds (0 when none).
    pub warmup_s: f64,
    /// Per-request timeout, ms.
    pub timeout_ms: f64,
    /// Connect timeout, ms.
    pub connect_timeout_ms: f64,
    /// Whether connections are kept alive between requests.
    pub keepalive: bool,
    /// Whether every response body was checked.
    pub verify: bool,
    /// Extra request header lines as given, credentials redacted ([`redact_header`]).
    pub headers: Vec<String>,
    /// Request body size in bytes (with several requests, the first one's).
    pub body_bytes: u64,
    /// Where the requests came from when they are not one request: a mix file (`--mix`) or a
    /// replayed traffic file (`--replay`). Absent for a single request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_from: Option<RequestsFrom>,
}

/// The source of a run's requests when there are several (see [`LoadReport::classes`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestsFrom {
    /// `mix` (a weighted list of requests) or `replay` (recorded traffic at its own times).
    pub kind: String,
    /// The file, as given.
    pub file: String,
    /// Replay: the file's format (`combined`, `common` or `goreplay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Replay: the speed factor (1 = the recorded pace, 2 = twice as fast).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Requests in the file: a mix's entries, a replay's lines (after `-n`, if given).
    pub entries: u64,
}

/// The measurement's figures for one request class of a mix or a replay. The classes add up
/// to the measurement's totals: their outcomes and histograms sum to the phase's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassReport {
    /// The class's name: a mix entry's `name` (by default `METHOD path`), or a replay's
    /// `METHOD path` with the query left out (`other` for the rest beyond the largest classes).
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// The path (and query, for a mix entry) its requests go to.
    pub path: String,
    /// Mix: the entry's weight. Absent for a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
    /// Requests of the class scheduled in the measurement (the sum of `outcomes`).
    pub requests: u64,
    /// Its requests by outcome.
    pub outcomes: OutcomeCounts,
    /// Error % over its finished requests.
    pub error_percent: f64,
    /// Its latency, as the phase's (corrected in the open model, censored values included).
    pub latency: LatencySummary,
    /// Open model: its latency from the actual send.
    pub latency_uncorrected: Option<LatencySummary>,
    /// Its histograms (`answered`, `censored` and, in the open model, their uncorrected
    /// twins), lossless, when the record carries histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<PhaseHistograms>,
}

/// An open-model arrival program as run: enough to run it again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrivalRecord {
    /// The rate program as `-R` takes it (`ramp:0..20000/1m`, `steps:…`, `sine:…`, or a
    /// number).
    pub program: String,
    /// `even` or `poisson`.
    pub spacing: String,
    /// Poisson arrivals: the seed of the random gaps (`--seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// One second of a run with an arrival program, or of a shard's run: the rate asked and the
/// rate achieved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecondRecord {
    /// Start of the second, seconds since the measurement started (negative in the warm-up).
    pub t_s: f64,
    /// How much of the second the run covered (1, or less for the last).
    pub length_s: f64,
    /// The program's mean rate over this second, requests/s (a shard without a program: its
    /// fixed rate, 0 in the closed model).
    pub target_rate: f64,
    /// Requests sent in this second (by their actual send time).
    pub sent: u64,
    /// Complete responses received in this second.
    pub responses: u64,
    /// Errors settled in this second.
    pub errors: u64,
    /// The second's latency histogram (answered and censored values, corrected in the open
    /// model; HdrHistogram V2 compressed, base64, as in a `.hlog` line). Only in the records of
    /// shards (`--shard`), so that a merge gives exact per-second percentiles and an interval
    /// log; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    /// What events in a cell are measured with: errors by class, the milliseconds with a
    /// successful response, first-seen marked header values (when the load records them).
    #[serde(flatten)]
    pub detail: crate::events::SecondDetail,
}

/// Connection lifecycle figures of one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStats {
    /// Connections established (TCP, and TLS where used).
    pub opened: u64,
    /// Connections established after a previous one on the same slot ended.
    pub reconnects: u64,
    /// Failed connection attempts.
    pub connect_failures: u64,
    /// Complete responses per established connection.
    pub requests_per_connection: f64,
    /// Full TLS handshakes.
    pub tls_full_handshakes: u64,
    /// Resumed TLS handshakes.
    pub tls_resumed_handshakes: u64,
    /// Time to establish a connection (TCP connect + TLS handshake).
    pub connect_time: Option<LatencySummary>,
    /// TLS handshake time alone (full and resumed together).
    pub tls_handshake_time: Option<LatencySummary>,
    /// HTTP/2: the most streams in use at once on one connection.
    pub max_streams_in_use: Option<u64>,
}

/// The figures of one phase (warm-up or measurement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Wall-clock length of the phase, seconds.
    pub duration_s: f64,
    /// Every scheduled request by class; the classes add up to `requests`.
    pub outcomes: OutcomeCounts,
    /// Requests scheduled in the phase (the sum of `outcomes`).
    pub requests: u64,
    /// Complete responses (any status) per second.
    pub throughput_rps: f64,
    /// `ok` responses per second.
    pub ok_rps: f64,
    /// Error % over finished requests (in-flight ones are neither).
    pub error_percent: f64,
    /// Open model: the asked rate, requests/s.
    pub target_rps: Option<f64>,
    /// Requests sent per second (whatever their outcome).
    pub sent_rps: f64,
    /// Response bytes read (head and body).
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// Latency. In the open model it is measured from each request's intended send time
    /// (corrected for coordinated omission, as wrk2 does); in the closed model from the send.
    /// Requests that never got an answer are in it as censored values, at the time they had
    /// waited (see [`LatencySummary::censored`]).
    pub latency: LatencySummary,
    /// Latency of answered requests only, leaving out the censored values (timeouts, stalls)
    /// that `latency` holds: what wrk and most tools report. Present only when it differs from
    /// `latency`, i.e. when some request never got an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_answered: Option<LatencySummary>,
    /// Open model: latency measured from the actual send, which hides server stalls; kept to
    /// show how much the correction matters. `None` in the closed model.
    pub latency_uncorrected: Option<LatencySummary>,
    /// Mean requests outstanding by Little's law (throughput × mean latency).
    pub concurrency: f64,
    /// Connection lifecycle figures.
    pub connections: ConnectionStats,
    /// The histograms behind this phase's latency figures, lossless, so that the records of
    /// several shards merge exactly (`gatebench merge`). Absent in records written before
    /// gatebench carried them; such records do not merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<PhaseHistograms>,
}

/// A phase's HdrHistograms (nanoseconds, three significant digits), each in HdrHistogram's V2
/// compressed encoding, base64 (see [`crate::histogram`]). A histogram with no value is left
/// out, except `answered`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseHistograms {
    /// Latency of the answered requests (corrected for coordinated omission in the open
    /// model): what `latency_answered` summarises, or `latency` when nothing is censored.
    pub answered: String,
    /// The censored values (requests that never got an answer, at the time they had waited):
    /// with `answered`, what `latency` summarises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored: Option<String>,
    /// Open model: `answered` measured from the actual send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_uncorrected: Option<String>,
    /// Open model: `censored` measured from the actual send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored_uncorrected: Option<String>,
    /// Connection establishment times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_time: Option<String>,
    /// TLS handshake times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<String>,
    /// Open model: how late the generator sent against its schedule in this phase (the
    /// self-check's `send_lag` summarises both phases together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<String>,
}

/// This record is one shard of a run split across several load generators
/// (`gatebench load --shard I/N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// This shard's index, 0-based (`--shard 0/2` and `--shard 1/2` make one run).
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
    /// The whole run's connections (`-c`); this shard's share is `config.connections`.
    pub connections_total: u32,
    /// The whole run's rate (`-R`, open model); this shard's share is `config.rate`.
    pub rate_total: Option<f64>,
    /// The whole run's arrival program (`-R ramp:…`, `steps:…`, `sine:…`), when it has one;
    /// each shard runs it scaled to its share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_total: Option<String>,
    /// The whole run's request count (`-n`); this shard's share is `config.requests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_total: Option<u64>,
    /// The agreed start instant (`--start-at`), Unix milliseconds, when one was given.
    pub start_at_unix_ms: Option<u64>,
}

impl ShardInfo {
    /// Shard `index`'s share of `total` among `count` shards: `total / count`, and one more for
    /// each of the lowest `total % count` indices, so the shares add up to `total`.
    pub fn share(total: u64, index: u32, count: u32) -> u64 {
        let (n, i) = (u64::from(count.max(1)), u64::from(index));
        total / n + u64::from(i < total % n)
    }
}

/// This record is the merge of the records of a run's shards (`gatebench merge`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    /// How many shards the run has (all of them are merged).
    pub count: u32,
    /// Latest shard start minus earliest, milliseconds: how far from one instant the shards
    /// started.
    pub start_skew_ms: f64,
    /// Each shard, by index.
    pub shards: Vec<MergedShard>,
    /// How the coordinator's live merge of the shards' seconds compared with this merge, when
    /// a suite ran the shards (`gatebench merge` of saved records has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveMergeCheck>,
}

/// The live merge of a sharded run against its final merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveMergeCheck {
    /// Seconds merged live, warm-up included.
    pub seconds: u64,
    /// Every live-merged second equals the final merge's second (counts and histogram).
    pub equal_to_final: bool,
    /// The most any merged second came after its end on the wall clock, seconds.
    pub max_lag_s: f64,
}

/// What starts each streamed second's line on a shard's stdout, before its JSON: no line of a
/// record (pretty-printed JSON) starts so.
pub const LIVE_SECOND_PREFIX: &str = "gatebench-second ";

/// One finished second of a shard, as it streams it to the coordinator while it runs
/// (`gatebench load --shard I/N --live-seconds`): its timeline second (with its latency
/// histogram), its outcomes by class and its smallest censored value, all a coordinator needs
/// to merge seconds exactly and judge thresholds on them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveSecond {
    /// The second, as the record's timeline will have it.
    pub second: SecondRecord,
    /// Its outcomes.
    pub outcomes: OutcomeCounts,
    /// The smallest censored value among its latencies (timeouts, stalls), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored_min_ns: Option<u64>,
}

/// One shard of a merged record, as its own record said it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// The shard's index.
    pub index: u32,
    /// When it started, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// When it started, Unix microseconds (0 when its record predates the field).
    #[serde(default)]
    pub started_at_unix_us: u64,
    /// Its connections.
    pub connections: u32,
    /// Its rate (open model).
    pub rate: Option<f64>,
    /// Requests scheduled in its measurement.
    pub requests: u64,
    /// Whether its generator kept up (its own self-check).
    pub valid: bool,
    /// Its self-check.
    pub self_check: SelfCheck,
}

/// The generator's view of itself: was it, rather than the target, the bottleneck?
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelfCheck {
    /// Generator user CPU seconds over the whole run.
    pub cpu_user_s: f64,
    /// Generator system CPU seconds over the whole run.
    pub cpu_sys_s: f64,
    /// CPU used as a percentage of the worker threads' capacity (100 = every worker busy).
    pub cpu_percent: f64,
    /// Open model: how late requests were sent against their schedule because of the
    /// generator itself (timer wake-ups, a busy worker), not because connections were busy.
    pub send_lag: Option<LatencySummary>,
    /// Open model: the fraction of the scheduled requests that were sent.
    pub schedule_kept_percent: Option<f64>,
    /// Seconds the generator's cgroup CPU quota kept it from running during the run (the
    /// largest increase of `cpu.stat`'s throttled time along its cgroup chain); absent where
    /// no cgroup CPU controller was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_throttled_s: Option<f64>,
    /// Why the result describes the generator, not the target. Empty when it is trustworthy.
    pub warnings: Vec<String>,
}

/// One complete load run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: ToolInfo,
    /// Start of the run, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// Start of the run, Unix microseconds: the instant the schedule counts from, what the
    /// shards' start skew is measured with. 0 in records written before the field existed.
    #[serde(default)]
    pub started_at_unix_us: u64,
    /// The resolved configuration.
    pub config: LoadConfigRecord,
    /// The warm-up phase, measured and reported apart; `None` without a warm-up.
    pub warmup: Option<PhaseReport>,
    /// The measurement phase: the figures the run is about.
    pub measurement: PhaseReport,
    /// The generator's self-check.
    pub self_check: SelfCheck,
    /// What the run saw of the target that its figures alone could hide, in plain words: no
    /// answer at all, a stall, percentiles that are lower bounds. Empty when there is nothing.
    #[serde(default)]
    pub target_warnings: Vec<String>,
    /// With an arrival program: every second of the run, the target rate beside the achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<SecondRecord>>,
    /// With several requests (`--mix`, `--replay`): the measurement by request class. Absent
    /// for a single request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassReport>>,
    /// False when the generator was the bottleneck (see `self_check.warnings`).
    pub valid: bool,
    /// Set when this record is one shard of a run (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Set when this record merges the records of a run's shards (`gatebench merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeInfo>,
    /// The run's thresholds (`--threshold`) and how each ended; empty without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// With `--stream`: the measurement's stream figures (time to first event, gaps between
    /// events, rates). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::stream::StreamReport>,
}

/// A threshold of a run (`--threshold`) and its verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// As given: `p99<50ms over 10s abort`.
    pub threshold: String,
    /// It held: over every full window (with `over`) and over the whole measurement.
    pub passed: bool,
    /// Its metric over the whole measurement, in words: `p99 12.345 ms`, `errors 0.000%`,
    /// `rate 4990.2/s (0.998 × target 5000.0)`.
    pub observed: String,
    /// When the first breach was seen, seconds into the measurement (the end of the window
    /// that breached it); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breached_at_s: Option<f64>,
    /// The metric in the window that first breached it, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<String>,
    /// Its breach stopped the run early (`abort`).
    #[serde(default)]
    pub aborted: bool,
}

/// Fragments of a header's name that mark its value as a credential (compared in lower case).
const SECRET_NAME_PARTS: [&str; 9] = [
    "auth",
    "cookie",
    "token",
    "secret",
    "key",
    "password",
    "passwd",
    "session",
    "signature",
];

/// A request header line as a record or a log may show it: the name kept, the value replaced
/// by `<redacted>` when the name says it carries a credential (`Authorization`,
/// `Proxy-Authorization`, `Cookie`, `X-Api-Key`, `X-Auth-Token`, … — any name containing
/// `auth`, `cookie`, `token`, `secret`, `key`, `password`, `passwd`, `session` or
/// `signature`). Records are shared and committed; a bearer token must not travel with them.
pub fn redact_header(line: &str) -> String {
    let Some((name, _)) = line.split_once(':') else {
        return line.to_owned();
    };
    let lower = name.trim().to_ascii_lowercase();
    if SECRET_NAME_PARTS.iter().any(|p| lower.contains(p)) {
        format!("{}: <redacted>", name.trim())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::redact_header;

    #[test]
    fn credentials_are_redacted_and_their_names_kept() {
        assert_eq!(
            redact_header("Authorization: Bearer abc.def"),
            "Authorization: <redacted>"
        );
        assert_eq!(redact_header("x-api-key:s3cr3t"), "x-api-key: <redacted>");
        assert_eq!(redact_header("Cookie: a=1; b=2"), "Cookie: <redacted>");
        assert_eq!(redact_header("X-Auth-Token: t"), "X-Auth-Token: <redacted>");
        assert_eq!(
            redact_header("Content-Type: application/json"),
            "Content-Type: application/json"
        );
        assert_eq!(redact_header("no colon"), "no colon");
    }
}
