//! The records of a suite run: what a results directory holds besides the load records.
//!
//! A results directory (documented in `docs/results-format.md`) has one [`RunManifest`]
//! (`run.json`), one [`Environment`] (`environment.json`) and one [`CellRecord`] per finished
//! cell (`cells/<id>/record.json`). Every type carries [`crate::SCHEMA_VERSION`] or sits in a
//! file that does, so a reader of another version refuses instead of misreading.
//!
//! These are plain data: expanding a suite, running cells and rendering summaries live in
//! `gatebench-runner` and `gatebench-report`.

use serde::{Deserialize, Serialize};

use crate::{CapacityReport, CostReport, LatencySummary, LoadReport, ToolInfo};

/// What `run.json` says: this directory is a gatebench results directory, of which version,
/// and which cells the run planned (so an interrupted run is reported as incomplete).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Always [`RunManifest::KIND`].
    pub kind: String,
    /// The tool that wrote it.
    pub tool: ToolInfo,
    /// The suite's name.
    pub suite: String,
    /// Start of the run, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// The cell ids the run planned, in run order.
    pub planned_cells: Vec<String>,
    /// The estimated length of the whole run, seconds.
    pub estimated_s: f64,
    /// The suite's `compare`: scenarios whose comparison report.html draws, the baseline
    /// first; empty for none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compare: Vec<String>,
}

impl RunManifest {
    /// The value of [`RunManifest::kind`].
    pub const KIND: &'static str = "gatebench-results";
}

/// The machine and build a run happened on (`environment.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// CPU model name (`/proc/cpuinfo`), or `unknown`.
    pub cpu_model: String,
    /// Online logical CPUs of the machine.
    pub cores: u32,
    /// Logical CPUs this process was allowed to use.
    pub cores_available: u32,
    /// Kernel name and release (`uname -sr`).
    pub kernel: String,
    /// Machine architecture (`uname -m`).
    pub arch: String,
    /// gatebench's version.
    pub gatebench_version: String,
    /// Short git revision of the source gatebench was built from (`-dirty` when it had
    /// uncommitted changes), or `unknown`.
    pub git_revision: String,
    /// The kernel and cgroup settings a benchmark depends on (seed 002's list), each absent
    /// when it could not be read (and in files written before they were recorded).
    #[serde(flatten)]
    pub system: SystemSettings,
}

/// Settings of the machine that change what a benchmark measures, read as the kernel prints
/// them. Each is `None` when it could not be read (another OS, a container hiding `/sys`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemSettings {
    /// CPU frequency governor of the first CPU (`performance`, `powersave`, `schedutil`, …;
    /// `/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
    /// Automatic NUMA balancing (`/proc/sys/kernel/numa_balancing`: 0 off, 1 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<String>,
    /// Accept queue limit (`net.core.somaxconn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub somaxconn: Option<String>,
    /// TCP congestion control (`net.ipv4.tcp_congestion_control`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_congestion_control: Option<String>,
    /// `vm.swappiness`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swappiness: Option<String>,
    /// CPU limit of the cgroup gatebench and the processes it starts run in: cgroup v2's
    /// `cpu.max` (`max 100000`: none; `200000 100000`: two CPUs), or v1's quota and period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_cpu_max: Option<String>,
    /// Memory limit of that cgroup in bytes, or `max` (v2 `memory.max`, v1
    /// `memory.limit_in_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_memory_max: Option<String>,
    /// The open-files limit the processes gatebench starts inherit, `soft/hard`
    /// (`unlimited` for no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files_limit: Option<String>,
}

impl SystemSettings {
    /// Every setting as `(key in environment.json, label for a person, value)`, in a fixed
    /// order, for the report's environment table and the comparison of two runs.
    pub fn entries(&self) -> [(&'static str, &'static str, Option<&str>); 8] {
        [
            (
                "cpu_governor",
                "CPU frequency governor",
                self.cpu_governor.as_deref(),
            ),
            (
                "numa_balancing",
                "NUMA balancing",
                self.numa_balancing.as_deref(),
            ),
            ("somaxconn", "net.core.somaxconn", self.somaxconn.as_deref()),
            (
                "tcp_congestion_control",
                "net.ipv4.tcp_congestion_control",
                self.tcp_congestion_control.as_deref(),
            ),
            ("swappiness", "vm.swappiness", self.swappiness.as_deref()),
            (
                "cgroup_cpu_max",
                "cgroup CPU limit",
                self.cgroup_cpu_max.as_deref(),
            ),
            (
                "cgroup_memory_max",
                "cgroup memory limit",
                self.cgroup_memory_max.as_deref(),
            ),
            (
                "open_files_limit",
                "open-files limit (soft/hard)",
                self.open_files_limit.as_deref(),
            ),
        ]
    }
}

/// The parameters of one cell: one point of the suite's matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellParams {
    /// Stable, filesystem-safe id, e.g. `passthrough-h1c-h1c_u100_s50_d0_r1`.
    pub id: String,
    /// The scenario's short name.
    pub scenario: String,
    /// The scenario's title as printed in summaries ("Passthrough HTTP service (h1c -> h1c)").
    pub title: String,
    /// Position of the scenario in the suite (summaries list scenarios in suite order).
    pub scenario_index: u32,
    /// Concurrent users (connections).
    pub users: u32,
    /// Target rate in requests/s (open model); `None` for the closed model. For a cell that
    /// runs an arrival program, the program's mean rate over the measurement.
    pub rate: Option<f64>,
    /// The arrival program a `rates` cell runs (`ramp:1000..20000/30s`), when the suite's
    /// `rates` gives one rather than a number; absent otherwise (and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Request payload size, bytes.
    pub size_bytes: u64,
    /// Back-end service delay, ms.
    pub delay_ms: f64,
    /// The protocol the load generator speaks to the target (`h1c`, `h1`, `h2`, `h2c`).
    pub protocol: String,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Position of the cell in the run order, 1-based.
    pub order: u32,
    /// Warm-up length, seconds.
    pub warmup_s: f64,
    /// Measurement length, seconds: the longest it may take (0 when a request count alone
    /// ends it).
    pub duration_s: f64,
    /// Requests the measurement ends after (ab's `-n`), when the suite gives a count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// What the cell measures: one load (absent from the JSON), a capacity search or an
    /// intermediary's cost.
    #[serde(default, skip_serializing_if = "CellKind::is_load")]
    pub kind: CellKind,
}

/// What a cell measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellKind {
    /// One load at one point of the matrix: the record's `load`.
    #[default]
    Load,
    /// The capacity search at one point (size × delay × protocol) of a scenario: the record's
    /// `capacity`.
    Capacity,
    /// The intermediary's cost at one point of a scenario: the record's `cost`.
    Cost,
}

impl CellKind {
    /// Whether this is an ordinary load cell (the default, left out of the JSON).
    pub fn is_load(&self) -> bool {
        *self == CellKind::Load
    }
}

/// Whether a cell produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// The load ran; the figures are in the record.
    Ok,
    /// A process did not start, was not ready, answered wrongly, or the load could not run;
    /// `reason` says which.
    Failed,
}

/// Resource use of the system under test over one window (warm-up or measurement), from the
/// one-second samples of `/proc`, and its CPU time over the window read at the window's ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    /// Samples in the window.
    pub samples: u32,
    /// Mean CPU use, percent of one core (200 = two cores busy).
    pub cpu_mean_percent: f64,
    /// Highest one-second CPU use, percent of one core.
    pub cpu_max_percent: f64,
    /// Mean resident memory, MiB.
    pub rss_mean_mib: f64,
    /// Highest resident memory, MiB.
    pub rss_max_mib: f64,
    /// Most threads at once.
    pub threads_max: u64,
    /// Most open file descriptors at once.
    pub fds_max: u64,
    /// Mean 1-minute load average of the machine.
    pub loadavg_mean: f64,
    /// CPU time (user + system) the process group used over the window, seconds: the
    /// difference of its `/proc/PID/stat` utime + stime read at the window's start and at its
    /// end, not a sum of the one-second samples. Absent when it was not read (a SUT on a remote
    /// host, a window that never ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_s: Option<f64>,
    /// `cpu_time_s` per response of the window, microseconds: what one request cost the SUT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us_per_request: Option<f64>,
}

/// One process a cell started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// `backend-1`, …, or `sut`.
    pub name: String,
    /// The program and its arguments as started.
    pub command: Vec<String>,
    /// Its process id (and process group id).
    pub pid: u32,
    /// CPUs it was pinned to, when pinning was on.
    pub cpus: Option<Vec<usize>>,
    /// How it ended: `terminated`, `killed after 5s`, or how it exited by itself.
    pub stopped: String,
}

/// The record of one cell (`cells/<id>/record.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The cell's parameters.
    pub cell: CellParams,
    /// Whether it produced a result.
    pub status: CellStatus,
    /// Why it failed, for a person; `None` when it did not.
    pub reason: Option<String>,
    /// Start of the cell, Unix milliseconds.
    pub started_at_unix_ms: u64,
    /// End of the cell, Unix milliseconds.
    pub finished_at_unix_ms: u64,
    /// The processes the cell started.
    pub processes: Vec<ProcessRecord>,
    /// The load record (both phases, the generator's self-check); `None` when the load did not
    /// run.
    pub load: Option<LoadReport>,
    /// The system under test during the warm-up.
    pub sut_warmup: Option<ResourceSummary>,
    /// The system under test during the measurement.
    pub sut_measurement: Option<ResourceSummary>,
    /// The SUT's garbage collector during the warm-up, from its GC log, when the scenario
    /// names one (`gc_format`). Absent in records of cells without a GC log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_warmup: Option<GcSummary>,
    /// The SUT's garbage collector during the measurement (seed 004's "GC Throughput (%)" and
    /// "Memory Footprint After Full GC").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_measurement: Option<GcSummary>,
    /// A capacity cell's search: every step and the max rate within the SLO. Absent in other
    /// cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityReport>,
    /// A cost cell's measurement: the runs direct and through the intermediary, the added
    /// latency per percentile and the intermediary's CPU per request. Absent in other cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostReport>,
    /// What the cell's echo back-ends saw over the measurement (connections, TLS handshakes,
    /// requests per back-end): load cells whose back-ends are gatebench's echo. Absent in
    /// other cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::origin::OriginReport>,
    /// Every firing of the scenario's events (`[[scenario.event]]`), in order, stamped on the
    /// measurement's clock, with what each cost. Absent in cells without events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<crate::events::EventRecord>,
    /// A gRPC scenario's cell (`[scenario.grpc]`): the gRPC load's record instead of `load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::grpc::GrpcRecord>,
    /// A WebSocket scenario's cell (`[scenario.websocket]`): the WebSocket load's record
    /// instead of `load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<crate::websocket::WebSocketRecord>,
}

/// What a cell whose load is not HTTP requests measured (a gRPC or a WebSocket scenario), read
/// the way a load cell's requests are: its units (gRPC calls, WebSocket messages) stand for
/// requests in the summaries, `compare` and the release history.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitLoad<'a> {
    /// What one unit is: `calls` or `messages`.
    pub unit: &'static str,
    /// Units started (calls started, messages sent).
    pub started: u64,
    /// Units that ended ok, per second.
    pub ok_per_s: f64,
    /// Units not ok, in percent of those started (0 without any).
    pub error_percent: f64,
    /// The ok units' latency (a call's, a message's round trip).
    pub latency: &'a LatencySummary,
    /// The classes other than ok, with their counts (none at zero).
    pub errors: Vec<(String, u64)>,
    /// The generator's self-check warned: the figures may describe it, not the target.
    pub generator_bound: bool,
    /// The verdicts of its thresholds.
    pub thresholds: &'a [crate::ThresholdResult],
}

impl CellRecord {
    /// The verdicts of the thresholds on the cell's load (HTTP, gRPC or WebSocket); empty
    /// without any.
    pub fn thresholds(&self) -> &[crate::ThresholdResult] {
        match (&self.load, &self.grpc, &self.websocket) {
            (Some(l), _, _) => &l.thresholds,
            (None, Some(g), _) => &g.grpc.thresholds,
            (None, None, Some(w)) => &w.websocket.thresholds,
            (None, None, None) => &[],
        }
    }

    /// Whether the generator's self-check warned on the cell's load (HTTP, gRPC or WebSocket):
    /// its figures may describe the generator rather than the target.
    pub fn generator_bound(&self) -> bool {
        self.load.as_ref().is_some_and(|l| !l.valid)
            || self.unit_load().is_some_and(|u| u.generator_bound)
    }

    /// The cell's gRPC calls or WebSocket messages as a load's units; `None` for an HTTP cell.
    pub fn unit_load(&self) -> Option<UnitLoad<'_>> {
        let bound =
            |c: &Option<crate::SelfCheck>| c.as_ref().is_some_and(|c| !c.warnings.is_empty());
        if let Some(g) = &self.grpc {
            let g = &g.grpc;
            return Some(UnitLoad {
                generator_bound: bound(&g.self_check),
                thresholds: &g.thresholds,
                unit: "calls",
                started: g.calls_started,
                ok_per_s: g.calls_per_s,
                error_percent: g.error_percent(),
                latency: &g.call_latency,
                errors: g
                    .calls
                    .iter()
                    .filter(|(class, n)| *class != "ok" && **n > 0)
                    .map(|(class, n)| (class.clone(), *n))
                    .collect(),
            });
        }
        let w = &self.websocket.as_ref()?.websocket;
        let errors = [
            ("timeout", w.messages_timeout),
            ("reset", w.messages_reset),
            ("protocol_error", w.messages_protocol_error),
            ("closed", w.messages_closed),
        ];
        Some(UnitLoad {
            generator_bound: bound(&w.self_check),
            thresholds: &w.thresholds,
            unit: "messages",
            started: w.messages_sent,
            ok_per_s: w.messages_per_s,
            error_percent: w.error_percent(),
            latency: &w.message_latency,
            errors: errors
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(class, n)| (class.to_owned(), n))
                .collect(),
        })
    }
}

/// The garbage collector of the system under test over one window (warm-up or measurement),
/// from the GC log it wrote: JVM unified logging (`-Xlog:gc*`), Go's `GODEBUG=gctrace=1` or
/// Node's `--trace-gc`.
///
/// Sizes are MiB whatever unit the log used (the JVM prints `K`, `M` and `G`, all binary; Go
/// prints whole `MB` that are in fact MiB), times are milliseconds. Cut to the same windows as
/// the latency and the resource samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GcSummary {
    /// The log's format: `jvm`, `go` or `node`.
    pub format: String,
    /// The window's length, seconds (the denominator of `throughput_percent`).
    pub window_s: f64,
    /// Collections that ended in the window.
    pub collections: u32,
    /// Of which full (JVM `Pause Full`, a ZGC or Go collection forced by `System.gc()` /
    /// `runtime.GC()`).
    pub full_collections: u32,
    /// Stop-the-world pauses in the window (a Go collection has two; a JVM young collection
    /// one).
    pub pauses: u32,
    /// Their total, ms.
    pub pause_total_ms: f64,
    /// Median pause, ms (0 without pauses).
    pub pause_p50_ms: f64,
    /// 90th percentile pause, ms.
    pub pause_p90_ms: f64,
    /// 99th percentile pause, ms.
    pub pause_p99_ms: f64,
    /// Longest pause, ms.
    pub pause_max_ms: f64,
    /// GC throughput: the share of the window the application was not paused,
    /// `100 × (1 − pause_total / window)`. `None` when the window holds no GC event: nothing
    /// was measured (a log without events is far more often a collector that did not log than
    /// one that did not run), so no figure, never 100 %. Shown as "no GC events".
    pub throughput_percent: Option<f64>,
    /// Mean heap occupancy after a collection, MiB (JVM: the size after `->`; Go: the live
    /// heap, the third figure of `4->5->2 MB`).
    pub heap_after_gc_mean_mib: Option<f64>,
    /// Largest heap occupancy after a collection, MiB.
    pub heap_after_gc_max_mib: Option<f64>,
    /// Mean heap occupancy after a full collection, MiB: seed 004's "Memory Footprint After
    /// Full GC". `None` when no full collection happened in the window.
    pub heap_after_full_gc_mib: Option<f64>,
}
