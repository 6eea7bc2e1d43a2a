//! Synthetic results directories: what `gatebench run` writes (`run.json`,
//! `environment.json`, the resolved `suite.toml`, one `record.json` per cell and repeat with its
//! measurement's latency histograms), with figures chosen by the caller and realistic noise.
//!
//! For series whose truth is known: the CLI's end-to-end tests (a shift at a chosen version
//! must be found there), the scale benchmark (`bench/history-scale.sh`, through
//! `examples/synthetic-series.rs`) and demonstrations. Nothing here runs a load.
//!
//! A run has `scenarios × users × sizes` cells, each repeated `repeats` times. A cell's
//! throughput is `base_throughput / (1 + size/4096) · (1 + users/1000)` times
//! `throughput_factor`, its median latency `base_latency_us · (1 + users/50)` times
//! `latency_factor`; every repeat draws both with the relative standard deviation `noise`
//! (normal, from [`SplitMix64`] seeded by `seed`). The histogram of a repeat holds
//! `histogram_values` latencies spread log-normally around its median (σ = 0.35), so its
//! percentiles (which the store computes from it) move with the median.

use std::path::Path;

use gatebench_model::histogram;
use gatebench_model::{
    CellParams, CellRecord, CellStatus, ConnectionStats, Environment, LoadConfigRecord, LoadReport,
    Model, OutcomeCounts, PhaseHistograms, PhaseReport, ResourceSummary, RunManifest, SelfCheck,
    SystemSettings, ToolInfo, SCHEMA_VERSION,
};
use gatebench_results::{paths, ResultsDir};

use crate::changepoint::SplitMix64;

/// What one synthetic run looks like.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// `[suite] name`.
    pub suite: String,
    /// Scenario names (each a proxy in front of an echo back-end).
    pub scenarios: Vec<String>,
    /// The matrix's users.
    pub users: Vec<u32>,
    /// The matrix's message sizes, bytes.
    pub sizes: Vec<u64>,
    /// Repeats of every cell.
    pub repeats: u32,
    /// `[suite] gates`, written into the resolved suite.
    pub gates: Vec<String>,
    /// `run.json`'s start, Unix ms.
    pub started_at_unix_ms: u64,
    /// The CPU model of `environment.json` (another one is another machine).
    pub cpu_model: String,
    /// Seed of the noise.
    pub seed: u64,
    /// Relative standard deviation of every repeat's figures (0.02 = 2 %).
    pub noise: f64,
    /// Throughput level of the cells (see the module's documentation), req/s.
    pub base_throughput: f64,
    /// Latency level of the cells, µs.
    pub base_latency_us: f64,
    /// Multiplies every cell's throughput (a shift: 0.95 is 5 % less).
    pub throughput_factor: f64,
    /// Multiplies every cell's latency.
    pub latency_factor: f64,
    /// Latencies recorded in each repeat's histogram.
    pub histogram_values: usize,
}

impl Default for RunSpec {
    /// One scenario, 10 and 100 users, 50 B, 5 repeats, 2 % noise, no gates.
    fn default() -> RunSpec {
        RunSpec {
            suite: "synthetic".into(),
            scenarios: vec!["proxy".into()],
            users: vec![10, 100],
            sizes: vec![50],
            repeats: 5,
            gates: Vec::new(),
            started_at_unix_ms: 1_795_622_400_000,
            cpu_model: "Synthetic CPU @ 2.0GHz".into(),
            seed: 1,
            noise: 0.02,
            base_throughput: 20_000.0,
            base_latency_us: 400.0,
            throughput_factor: 1.0,
            latency_factor: 1.0,
            histogram_values: 2000,
        }
    }
}

/// The resolved suite of `spec`, as `gatebench run` writes `suite.toml`.
pub fn suite_toml(spec: &RunSpec) -> String {
    let list = |v: Vec<String>| v.join(", ");
    let quoted = |v: &[String]| {
        list(
            v.iter()
                .map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
                .collect(),
        )
    };
    let mut out = format!(
        "# The resolved suite of this run (every default filled in).\n\n[suite]\nname = \"{}\"\n\
         warmup = \"1s\"\nduration = \"4s\"\nrepeats = {}\norder = \"interleaved\"\n\
         pin = false\nready_timeout = \"10s\"\ninclude = []\nexclude = []\n\
         estimate_only = false\n",
        spec.suite.replace('\\', "\\\\").replace('"', "\\\""),
        spec.repeats
    );
    if !spec.gates.is_empty() {
        out.push_str(&format!("gates = [{}]\n", quoted(&spec.gates)));
    }
    out.push_str(&format!(
        "\n[matrix]\nusers = [{}]\nsizes = [{}]\ndelays = [\"0s\"]\nprotocols = []\n\n\
         [load]\nmethod = \"POST\"\npath = \"/\"\nheaders = []\nconnections = 0\n\
         timeout = \"10s\"\nconnect_timeout = \"3s\"\nkeepalive = true\n",
        list(spec.users.iter().map(u32::to_string).collect()),
        list(spec.sizes.iter().map(u64::to_string).collect()),
    ));
    for s in &spec.scenarios {
        out.push_str(&format!(
            "\n[[scenario]]\nname = \"{s}\"\ntitle = \"Passthrough proxy {s}\"\n\
             protocols = [\"h1c\"]\nverify = true\npath = \"/\"\nmethod = \"POST\"\n\
             keepalive = true\nworkdir = \"/tmp\"\ntemplates = []\n\n[scenario.backend]\n\
             serve = \"echo --port {{port}}\"\nprotocol = \"h1c\"\n\n[scenario.sut]\n\
             serve = \"proxy --port {{port}} --upstream {{upstream}}\"\n"
        ));
    }
    out
}

/// The environment of a synthetic run.
pub fn environment(spec: &RunSpec) -> Environment {
    Environment {
        schema_version: SCHEMA_VERSION,
        cpu_model: spec.cpu_model.clone(),
        cores: 2,
        cores_available: 2,
        kernel: "Linux 6.1.0".into(),
        arch: "x86_64".into(),
        gatebench_version: env!("CARGO_PKG_VERSION").into(),
        git_revision: "synthetic".into(),
        system: SystemSettings {
            cpu_governor: Some("performance".into()),
            ..SystemSettings::default()
        },
    }
}

/// Writes the results directory of `spec` at `root` (which must not exist, or be empty) and
/// returns how many cell records it holds.
pub fn write_run(root: &Path, spec: &RunSpec) -> Result<usize, String> {
    let e = |e: gatebench_results::ResultsError| e.to_string();
    let dir = ResultsDir::create(root).map_err(e)?;
    dir.write(paths::SUITE_TOML, suite_toml(spec).as_bytes())
        .map_err(e)?;
    dir.write_json(paths::ENVIRONMENT_JSON, &environment(spec))
        .map_err(e)?;
    let mut rng = SplitMix64::new(spec.seed);
    let mut records = Vec::new();
    let mut order = 0;
    for repeat in 1..=spec.repeats {
        for (si, scenario) in spec.scenarios.iter().enumerate() {
            for &users in &spec.users {
                for &size in &spec.sizes {
                    order += 1;
                    let point = Point {
                        scenario,
                        scenario_index: si,
                        users,
                        size,
                        repeat,
                        order,
                    };
                    records.push(record(spec, &mut rng, &point)?);
                }
            }
        }
    }
    let manifest = RunManifest {
        schema_version: SCHEMA_VERSION,
        kind: RunManifest::KIND.into(),
        tool: ToolInfo {
            name: "gatebench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        suite: spec.suite.clone(),
        started_at_unix_ms: spec.started_at_unix_ms,
        planned_cells: records.iter().map(|r| r.cell.id.clone()).collect(),
        estimated_s: 5.0 * records.len() as f64,
        compare: vec![],
    };
    dir.write_json(paths::RUN_JSON, &manifest).map_err(e)?;
    for r in &records {
        dir.cell_dir(&r.cell.id).map_err(e)?;
        dir.write_json(&paths::cell_file(&r.cell.id, paths::RECORD_JSON), r)
            .map_err(e)?;
    }
    Ok(records.len())
}

/// Where one cell is in the synthetic run's matrix and order.
struct Point<'a> {
    scenario: &'a str,
    scenario_index: usize,
    users: u32,
    size: u64,
    repeat: u32,
    order: u32,
}

/// One cell's record.
fn record(spec: &RunSpec, rng: &mut SplitMix64, point: &Point<'_>) -> Result<CellRecord, String> {
    let &Point {
        scenario,
        scenario_index,
        users,
        size,
        repeat,
        order,
    } = point;
    let jitter = |rng: &mut SplitMix64| (1.0 + spec.noise * rng.normal()).max(0.05);
    let throughput = spec.base_throughput / (1.0 + size as f64 / 4096.0)
        * (1.0 + f64::from(users) / 1000.0)
        * spec.throughput_factor
        * jitter(rng);
    let median_us =
        spec.base_latency_us * (1.0 + f64::from(users) / 50.0) * spec.latency_factor * jitter(rng);
    let mut answered = histogram::new_histogram();
    for _ in 0..spec.histogram_values.max(1) {
        let v = median_us * 1000.0 * (0.35 * rng.normal()).exp();
        answered
            .record(v.clamp(1.0, 3.6e12) as u64)
            .map_err(|e| format!("recording a latency: {e}"))?;
    }
    let censored = histogram::new_histogram();
    let summary = histogram::summarize_censored(&answered, &censored);
    let mut outcomes = OutcomeCounts::default();
    outcomes.add(gatebench_model::Outcome::Ok, answered.len());
    let duration_s = 4.0;
    let measurement = PhaseReport {
        duration_s,
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
        concurrency: f64::from(users),
        connections: ConnectionStats::default(),
        histograms: Some(PhaseHistograms {
            answered: histogram::encode(&answered),
            ..PhaseHistograms::default()
        }),
    };
    let id = format!("{scenario}_u{users}_s{size}_d0_r{repeat}");
    let started = spec.started_at_unix_ms + u64::from(order) * 6000;
    let cpu_us = 40.0 * spec.latency_factor * jitter(rng);
    Ok(CellRecord {
        schema_version: SCHEMA_VERSION,
        cell: CellParams {
            id,
            scenario: scenario.into(),
            title: format!("Passthrough proxy {scenario}"),
            scenario_index: scenario_index as u32,
            users,
            rate: None,
            program: None,
            size_bytes: size,
            delay_ms: 0.0,
            protocol: "h1c".into(),
            repeat,
            order,
            warmup_s: 1.0,
            duration_s,
            requests: None,
            kind: Default::default(),
        },
        status: CellStatus::Ok,
        reason: None,
        started_at_unix_ms: started,
        finished_at_unix_ms: started + 5000,
        processes: vec![],
        load: Some(LoadReport {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "gatebench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            started_at_unix_ms: started,
            started_at_unix_us: started * 1000,
            config: LoadConfigRecord {
                url: "http://127.0.0.1:1/".into(),
                method: "POST".into(),
                protocol: "http/1.1".into(),
                model: Model::Closed,
                connections: users,
                streams: 1,
                threads: 2,
                rate: None,
                arrival: None,
                duration_s: Some(duration_s),
                requests: None,
                warmup_s: 1.0,
                timeout_ms: 10_000.0,
                connect_timeout_ms: 3_000.0,
                keepalive: true,
                verify: true,
                headers: vec![],
                body_bytes: size,
                requests_from: None,
            },
            warmup: None,
            measurement,
            self_check: SelfCheck {
                cpu_user_s: 1.0,
                cpu_sys_s: 1.0,
                cpu_percent: 50.0,
                send_lag: None,
                schedule_kept_percent: None,
                cpu_throttled_s: None,
                warnings: vec![],
            },
            target_warnings: vec![],
            timeline: None,
            classes: None,
            valid: true,
            shard: None,
            merged: None,
            thresholds: Vec::new(),
            stream: None,
        }),
        sut_warmup: None,
        sut_measurement: Some(ResourceSummary {
            samples: 4,
            cpu_mean_percent: cpu_us * throughput / 1e4,
            cpu_max_percent: cpu_us * throughput / 1e4 * 1.1,
            rss_mean_mib: 30.0,
            rss_max_mib: 32.0 * jitter(rng),
            threads_max: 3,
            fds_max: 40,
            loadavg_mean: 1.0,
            cpu_time_s: Some(cpu_us * throughput * duration_s / 1e6),
            cpu_us_per_request: Some(cpu_us),
        }),
        gc_warmup: None,
        gc_measurement: None,
        capacity: None,
        cost: None,
        origin: None,
        events: Vec::new(),
        grpc: None,
        websocket: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunInput;

    #[test]
    fn a_synthetic_run_reads_back_as_a_complete_storable_run() {
        let root = std::env::temp_dir().join(format!("gatebench-synth-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let spec = RunSpec {
            gates: vec!["p99 < 50ms".into(), "cv(throughput) <= 5%".into()],
            ..RunSpec::default()
        };
        assert_eq!(write_run(&root, &spec).unwrap(), 10);
        let (run, records) = RunInput::from_results_dir(&root, "1.0", None, None).unwrap();
        assert_eq!(records.len(), 10);
        assert_eq!(run.gates, spec.gates);
        assert_eq!(run.suite.name, "synthetic");
        let r = &records[0];
        let lat = &r.load.as_ref().unwrap().measurement.latency;
        // 10 users: 400 µs × 1.2 = 0.48 ms median, within the noise.
        let p50 = lat.at(50.0).unwrap();
        assert!((0.40..0.56).contains(&p50), "{p50}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
