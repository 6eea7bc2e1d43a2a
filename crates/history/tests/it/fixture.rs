//! Results directories made for the tests: the files `gatebench run` writes (`run.json`,
//! `environment.json`, `suite.toml`, one `record.json` per cell with its measurement's
//! histograms), with figures the tests choose, and temporary directories that remove
//! themselves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use gatebench_model::histogram::{self, LatencyHistogram};
use gatebench_model::{
    CellParams, CellRecord, ConnectionStats, Environment, LatencySummary, OutcomeCounts,
    PhaseHistograms, PhaseReport, ResourceSummary, RunManifest, SystemSettings, ToolInfo,
    SCHEMA_VERSION,
};
use gatebench_results::{paths, ResultsDir};
use gatebench_testkit::records;

/// A directory under the system's temporary directory, removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory under the system's temporary directory.
    pub fn new(tag: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }

    /// A new empty directory under `base`.
    pub fn new_in(base: &Path, tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = base.join(format!(
            "gatebench-history-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    /// `self/rel`.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a made run looks like.
#[derive(Clone, Debug)]
pub struct Spec {
    /// `[suite] name`.
    pub suite: String,
    /// The matrix's users.
    pub users: Vec<u32>,
    /// Repeats per cell.
    pub repeats: u32,
    /// Throughput of every cell (each repeat adds 1 %), req/s.
    pub throughput: f64,
    /// Median latency, µs; the histogram spreads 1000 values from half of it to twice it.
    pub latency_us: u64,
    /// `run.json`'s start, Unix ms.
    pub started_at_unix_ms: u64,
    /// Requests that never got an answer, per cell (censored values at 1 s).
    pub censored: u64,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            suite: "test suite".into(),
            users: vec![10, 100],
            repeats: 3,
            throughput: 10_000.0,
            latency_us: 500,
            started_at_unix_ms: 1_795_622_400_000,
            censored: 0,
        }
    }
}

/// The resolved suite of `spec`, as `gatebench run` writes `suite.toml`.
pub fn suite_toml(spec: &Spec) -> String {
    let users: Vec<String> = spec.users.iter().map(u32::to_string).collect();
    format!(
        r#"# The resolved suite of this run (every default filled in).

[suite]
name = "{}"
warmup = "1s"
duration = "4s"
repeats = {}
order = "interleaved"
pin = false
ready_timeout = "10s"
include = []
exclude = []
estimate_only = false

[matrix]
users = [{}]
sizes = [50]
delays = ["0s"]
protocols = []

[load]
method = "POST"
path = "/"
headers = []
connections = 0
timeout = "10s"
connect_timeout = "3s"
keepalive = true

[hosts]

[[scenario]]
name = "proxy"
title = "Passthrough proxy"
protocols = ["h1c"]
verify = true
path = "/"
method = "POST"
keepalive = true
workdir = "/tmp"
templates = []

[scenario.backend]
serve = "echo --port {{port}}"
protocol = "h1c"

[scenario.sut]
serve = "proxy --port {{port}} --upstream {{upstream}}"
"#,
        spec.suite,
        spec.repeats,
        users.join(", ")
    )
}

/// The environment every made run has.
pub fn environment() -> Environment {
    Environment {
        schema_version: SCHEMA_VERSION,
        cpu_model: "Test CPU @ 2.0GHz".into(),
        cores: 2,
        cores_available: 2,
        kernel: "Linux 6.1.0".into(),
        arch: "x86_64".into(),
        gatebench_version: "0.1.0".into(),
        git_revision: "abc1234".into(),
        system: SystemSettings {
            cpu_governor: Some("performance".into()),
            ..SystemSettings::default()
        },
    }
}

/// The histogram of one cell: 1000 values spread from half of `median_us` to twice it.
pub fn latency_histogram(median_us: u64) -> LatencyHistogram {
    let mut h = histogram::new_histogram();
    let ns = median_us * 1000;
    for i in 0..1000u64 {
        h.record(ns / 2 + i * (ns * 3 / 2) / 1000).unwrap();
    }
    h
}

/// The record of the cell at `users` and `repeat`.
pub fn record(spec: &Spec, users: u32, repeat: u32, order: u32) -> CellRecord {
    let answered = latency_histogram(spec.latency_us + u64::from(repeat));
    let mut censored = histogram::new_histogram();
    for _ in 0..spec.censored {
        censored.record(1_000_000_000).unwrap();
    }
    let summary = histogram::summarize_censored(&answered, &censored);
    let mut outcomes = OutcomeCounts::default();
    outcomes.add(gatebench_model::Outcome::Ok, answered.len());
    if spec.censored > 0 {
        outcomes.add(gatebench_model::Outcome::Timeout, spec.censored);
    }
    let throughput = spec.throughput * (1.0 + 0.01 * f64::from(repeat));
    let measurement = PhaseReport {
        duration_s: 4.0,
        requests: outcomes.total(),
        error_percent: outcomes.error_percent(),
        outcomes,
        throughput_rps: throughput,
        ok_rps: throughput,
        target_rps: None,
        sent_rps: throughput,
        bytes_read: 0,
        bytes_written: 0,
        latency: summary,
        latency_answered: None,
        latency_uncorrected: None,
        concurrency: 1.0,
        connections: ConnectionStats::default(),
        histograms: Some(PhaseHistograms {
            answered: histogram::encode(&answered),
            censored: (!censored.is_empty()).then(|| histogram::encode(&censored)),
            ..PhaseHistograms::default()
        }),
    };
    let cell = records::cell_params("proxy", "Passthrough proxy", 0, users, 50, repeat);
    let mut r = records::cell_record(
        CellParams { order, ..cell },
        records::load_report(users, 50, None, measurement, true),
        None,
        Some(ResourceSummary {
            samples: 4,
            cpu_mean_percent: 90.0,
            cpu_max_percent: 99.0,
            rss_mean_mib: 10.0,
            rss_max_mib: 12.0 + f64::from(repeat),
            threads_max: 3,
            fds_max: 40,
            loadavg_mean: 1.0,
            cpu_time_s: Some(3.6),
            cpu_us_per_request: Some(25.0 + f64::from(repeat)),
        }),
    );
    r.started_at_unix_ms = spec.started_at_unix_ms + u64::from(order) * 6000;
    r.finished_at_unix_ms = r.started_at_unix_ms + 5000;
    r
}

/// Writes the results directory of `spec` at `root` (which must not exist or be empty) and
/// returns its records.
pub fn write_run(root: &Path, spec: &Spec) -> Vec<CellRecord> {
    let dir = ResultsDir::create(root).unwrap();
    dir.write(paths::SUITE_TOML, suite_toml(spec).as_bytes())
        .unwrap();
    dir.write_json(paths::ENVIRONMENT_JSON, &environment())
        .unwrap();
    let mut records = Vec::new();
    let mut order = 0;
    for repeat in 1..=spec.repeats {
        for &u in &spec.users {
            order += 1;
            records.push(record(spec, u, repeat, order));
        }
    }
    let manifest = RunManifest {
        schema_version: SCHEMA_VERSION,
        kind: RunManifest::KIND.into(),
        tool: ToolInfo {
            name: "gatebench".into(),
            version: "0.1.0".into(),
        },
        suite: spec.suite.clone(),
        started_at_unix_ms: spec.started_at_unix_ms,
        planned_cells: records.iter().map(|r| r.cell.id.clone()).collect(),
        estimated_s: 60.0,
        compare: vec![],
    };
    dir.write_json(paths::RUN_JSON, &manifest).unwrap();
    for r in &records {
        dir.cell_dir(&r.cell.id).unwrap();
        dir.write_json(&paths::cell_file(&r.cell.id, paths::RECORD_JSON), r)
            .unwrap();
    }
    records
}

/// The summary figures of a made record's latency.
pub fn p99(r: &CellRecord) -> f64 {
    let s: &LatencySummary = &r.load.as_ref().unwrap().measurement.latency;
    s.at(99.0).unwrap()
}
