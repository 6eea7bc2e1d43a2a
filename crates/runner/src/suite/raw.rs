//! The suite file as written: serde structs mirroring the TOML, every table with
//! `deny_unknown_fields` (a misspelt key must not silently change an experiment), durations as
//! strings. Nothing is validated here; [`super::Suite::from_raw`] does that. The same structs,
//! filled in completely, serialize the resolved suite written beside the results.

use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSuite {
    /// `[suite]`: run-wide settings.
    #[serde(default)]
    pub suite: RawSettings,
    /// `[matrix]`: the axes every scenario is run over.
    #[serde(default)]
    pub matrix: RawMatrix,
    /// `[load]`: what the load generator sends.
    #[serde(default)]
    pub load: RawLoad,
    /// `[hosts]`: where the processes run (default: all here).
    #[serde(default, skip_serializing_if = "RawHosts::is_empty")]
    pub hosts: RawHosts,
    /// `[[scenario]]`: the systems under test.
    #[serde(default, rename = "scenario")]
    pub scenarios: Vec<RawScenario>,
    /// `[quick]`: what `gatebench run --quick` changes, for a short run of the same suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<RawQuick>,
    /// `[capacity]`: the capacity search run for every scenario (the "max rate within SLO"
    /// column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<RawCapacity>,
    /// `[cost]`: how the intermediary's cost is measured for scenarios with `cost = true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<RawCost>,
}

/// `[capacity]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapacity {
    /// The objective, as `gatebench load --slo` takes it (`p99<10ms,errors<0.1%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// The first rate tried, requests/s (default: half a closed-model probe's throughput).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    /// The lowest rate tried, requests/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rate: Option<f64>,
    /// The highest rate tried, requests/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// The shortest measurement of a step (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The longest measurement of a step (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_step: Option<String>,
    /// Warm-up before every step (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// Stop bisecting within this percentage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// Most steps of one search, its checks included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
}

/// `[cost]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCost {
    /// The open-model rate of every run, requests/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Runs of each path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// Measurement of every run (humantime; default the suite's duration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Warm-up of every run (humantime; default the suite's warm-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
}

/// `[quick]`: replacements applied by `gatebench run --quick`. Every key is optional; the
/// missing ones keep the suite's value (warm-up and duration have short defaults).
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    /// Warm-up per cell (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// Measurement per cell (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Requests per cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Repeats of every cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// Concurrent users.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<u32>>,
    /// Target rates or arrival programs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<Vec<RawRate>>,
    /// Payload sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<u64>>,
}

/// `[hosts]`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHosts {
    /// Where systems under test run: `local` or `ssh://[user@]host[:port]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sut: Option<String>,
    /// Where back-ends run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Where the load generator runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generators: Option<Vec<String>>,
    /// The ssh client configuration file (`ssh -F`), relative to the suite file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_config: Option<String>,
}

impl RawHosts {
    /// Nothing given: every process on this machine.
    pub fn is_empty(&self) -> bool {
        self.sut.is_none()
            && self.backend.is_none()
            && self.generators.is_none()
            && self.ssh_config.is_none()
    }
}

/// `[suite]`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSettings {
    /// Name printed in summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Warm-up per cell (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// Measurement per cell (humantime); with `requests`, the longest it may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Requests per cell's measurement (ab's `-n`): the measurement ends once they are sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Requests/s a closed-model cell is expected to reach, for the estimate of request-count
    /// cells only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_rate: Option<f64>,
    /// Repeats of every cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// `interleaved` or `sequential`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// Scenarios whose comparison report.html draws, the baseline first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Vec<String>>,
    /// Pin the SUT and the generator to separate cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<bool>,
    /// How long a started process may take to become ready (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_timeout: Option<String>,
    /// Only cells whose id or scenario matches one of these globs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// No cell whose id or scenario matches one of these globs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
    /// Print the plan and its estimate, run nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_only: Option<bool>,
    /// Release gates (`p99 < 50ms`, `throughput >= -5% vs 2201.11.0`, `cv(throughput) <= 3%`)
    /// that `gatebench history gate` judges a stored version of this suite by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gates: Option<Vec<String>>,
}

/// `[matrix]`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    /// Concurrent users (closed model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<u32>>,
    /// Target rates in requests/s, or arrival programs (open model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<Vec<RawRate>>,
    /// Payload sizes in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<u64>>,
    /// Back-end delays (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delays: Option<Vec<String>>,
    /// Protocols the generator speaks to the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocols: Option<Vec<String>>,
}

/// `[load]`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// HTTP method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Extra header lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<Vec<String>>,
    /// Connections used for rate cells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// Generator worker threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Per-request timeout (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Connect timeout (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<String>,
    /// Keep connections alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keepalive: Option<bool>,
    /// Spacing of open-model requests: `"even"` or `"poisson"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    /// The seed of Poisson arrivals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Pass/fail conditions on every cell's load (`p99<50ms`, `errors<0.1%`), as
    /// `gatebench load --threshold`; a scenario's own list replaces them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Vec<String>>,
}

/// One entry of `[matrix] rates`: a number of requests/s, or an arrival program as `gatebench
/// load -R` takes it (`"ramp:1k..20k/30s"`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RawRate {
    /// Requests/s.
    Number(f64),
    /// A program.
    Program(String),
}

/// `[[scenario]]`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Short, filesystem-safe name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Name printed in summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Protocols for this scenario (instead of `[matrix] protocols`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocols: Option<Vec<String>>,
    /// Check that every response body equals the request body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// Request path for this scenario (instead of `[load] path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// HTTP method for this scenario (instead of `[load] method`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A status the target is declared to answer, counted as correct besides 2xx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_status: Option<u16>,
    /// Keep connections alive for this scenario (instead of `[load] keepalive`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keepalive: Option<bool>,
    /// Shell command run once before the suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Directory commands run in, relative to the suite file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Files rendered with placeholders into each cell's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub templates: Option<Vec<String>>,
    /// The backend(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<RawProcess>,
    /// The system under test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sut: Option<RawProcess>,
    /// The format of the SUT's GC log: `jvm` (unified logging), `go` (gctrace) or `node`
    /// (`--trace-gc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_format: Option<String>,
    /// Where the SUT writes its GC log (placeholders allowed); default: the SUT's own log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_log: Option<String>,
    /// Run the suite's `[capacity]` search for this scenario (default: yes, when the suite
    /// has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<bool>,
    /// Measure the SUT's own cost: the load direct to the back-end and through the SUT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<bool>,
    /// Pass/fail conditions on this scenario's cells, instead of `[load] thresholds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Vec<String>>,
    /// Read each response as a stream, timing its events: `sse`, `llm` (chat completions
    /// POSTed with `"stream": true`, tokens timed) or `chunks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// `grpc = {…}`: the cells make gRPC calls instead of HTTP requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<RawGrpc>,
    /// `websocket = {…}`: the cells open WebSocket connections and send messages instead of
    /// HTTP requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub websocket: Option<RawWebSocket>,
    /// `[[scenario.event]]`: what happens during each of its cells' measurement.
    #[serde(default, rename = "event", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<RawEvent>,
}

/// `[[scenario.event]]`: one action at an offset into the measurement, maybe repeated.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    /// Its name in tables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The first firing, from the measurement's start (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Repeat this often until the measurement ends (humantime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// The longest window its figures are taken over (humantime; default 5s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// A signal to the SUT (`HUP`); after `render`, sent once the file is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// A shell command run to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// A back-end's number, from 1 (with `action`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<u32>,
    /// `stop`, `kill`, `start` or `restart` (with `backend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// A template rendered again with other values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<RawRender>,
}

/// `render = { template = "upstreams.txt", set = { key = "value" }, to = "pool.txt" }`.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRender {
    /// The template, relative to the scenario's workdir.
    pub template: String,
    /// Values for `{key}` in it, besides the usual placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<std::collections::BTreeMap<String, String>>,
    /// The file written in the cell's directory, when not the template's own name (a second
    /// form of a configuration the SUT already reads: `to = "pool.conf"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// `websocket = {…}` of a scenario.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawWebSocket {
    /// The upgrade request's path (default `/ws`, the echo's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Binary messages (default false: text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<bool>,
    /// Messages per second on each connection (default: one in flight at a time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_rate: Option<f64>,
    /// Messages each connection sends before it closes (default: until the end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
}

/// `grpc = {…}` of a scenario.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrpc {
    /// `/package.Service/Method`.
    pub method: String,
    /// `unary` (default), `server-stream`, `client-stream` or `bidi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Messages per call (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// Messages per second within a stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_rate: Option<f64>,
    /// Each call's deadline (`grpc-timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// HTTP/2 connections the cell's users share (default 1; must divide every users value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
}

/// `backend = {…}` / `sut = {…}`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawProcess {
    /// Arguments after `gatebench serve` (a built-in service).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve: Option<String>,
    /// A shell command line (an external program).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// How many to start (backends only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The protocol this process listens with (default: the cell's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// URL answered with 2xx once ready (default: the port accepts connections).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    /// A fixed port (back-ends: the first of `count` consecutive ports) instead of a free one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}
