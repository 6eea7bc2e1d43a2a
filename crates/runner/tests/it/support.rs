//! Fakes for the runner's two seams and small suite fixtures.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatebench_loadgen::{IntervalView, LoadConfig};
use gatebench_model::{
    LatencySummary, LoadReport, Outcome, OutcomeCounts, PhaseReport, SelfCheck, ToolInfo,
    SCHEMA_VERSION,
};
use gatebench_runner::driver::{Driver, ReadyCheck};
use gatebench_runner::launch::{Launcher, ProcessSpec, Running};
use gatebench_runner::{RunnerError, Suite};

/// What the fakes saw, in order: `launch <name> <args…>`, `stop <name>`, `setup …`,
/// `verify <url>`, `load <url> -c N`.
pub type Calls = Arc<Mutex<Vec<String>>>;

/// A launcher that starts nothing and records every call.
#[derive(Default)]
pub struct FakeLauncher {
    pub calls: Calls,
    /// Processes with these names "exit" at once with this message, after writing `log` lines.
    pub exits: Vec<(String, String)>,
    /// Setup commands fail with this exit code.
    pub setup_fails: Option<i32>,
    pub next_pid: u32,
}

struct FakeProcess {
    name: String,
    pid: u32,
    exited: Option<String>,
    calls: Calls,
}

impl Running for FakeProcess {
    fn pid(&self) -> u32 {
        self.pid
    }
    fn exited(&mut self) -> Option<String> {
        self.exited.clone()
    }
    fn stop(&mut self) -> String {
        self.calls
            .lock()
            .unwrap()
            .push(format!("stop {}", self.name));
        self.exited.clone().unwrap_or_else(|| "terminated".into())
    }
}

impl Launcher for FakeLauncher {
    fn launch(&mut self, spec: &ProcessSpec) -> Result<Box<dyn Running>, RunnerError> {
        self.next_pid += 1;
        self.calls
            .lock()
            .unwrap()
            .push(format!("launch {} {}", spec.name, spec.args.join(" ")));
        let exited = self
            .exits
            .iter()
            .find(|(n, _)| *n == spec.name)
            .map(|(_, log)| {
                if let Some(p) = &spec.log {
                    std::fs::write(p, format!("starting\n{log}\n")).unwrap();
                }
                "exited with status 2".to_owned()
            });
        Ok(Box::new(FakeProcess {
            name: spec.name.clone(),
            // Far above any real pid: the sampler finds no such process and samples nothing.
            pid: 4_000_000 + self.next_pid,
            exited,
            calls: self.calls.clone(),
        }))
    }

    fn setup(&mut self, command: &str, _workdir: &Path, log: &Path) -> Result<(), RunnerError> {
        self.calls.lock().unwrap().push(format!("setup {command}"));
        match self.setup_fails {
            // A wait status holds the exit code in its second byte.
            Some(code) => Err(RunnerError::SetupCommand {
                command: command.to_owned(),
                status: ExitStatus::from_raw(code << 8),
                log: log.file_name().unwrap().to_string_lossy().into_owned(),
                last_line: None,
            }),
            None => Ok(()),
        }
    }
}

/// A driver whose processes are always ready and whose load returns a fixed report.
#[derive(Default)]
pub struct FakeDriver {
    pub calls: Calls,
    /// `verify` fails with this message.
    pub verify_fails: Option<String>,
    /// `load` sets this flag (a Ctrl-C during the load).
    pub interrupt: Option<Arc<AtomicBool>>,
    /// The intervals `load` reports, `(start s, length s, responses)`, warm-up for those that
    /// start within the first second; empty: two full seconds of 1000 responses.
    pub intervals: Vec<(u64, f64, u64)>,
    /// Every load configuration `verify` was given.
    pub configs: Arc<Mutex<Vec<LoadConfig>>>,
    /// The measurement's throughput of each load in turn (cycled); empty: the report's own.
    pub throughputs: Vec<f64>,
    /// Loads so far.
    pub loads: usize,
}

impl Driver for FakeDriver {
    fn check_ready(&mut self, _check: &ReadyCheck) -> Result<(), RunnerError> {
        Ok(())
    }

    fn verify(&mut self, config: &LoadConfig) -> Result<(), RunnerError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("verify {}", config.target.url));
        self.configs.lock().unwrap().push(config.clone());
        match &self.verify_fails {
            Some(e) => Err(RunnerError::Verification { reason: e.clone() }),
            None => Ok(()),
        }
    }

    fn load(
        &mut self,
        config: LoadConfig,
        on_interval: &mut dyn FnMut(&IntervalView),
        _stop: Arc<AtomicBool>,
        _metrics: Option<Arc<gatebench_loadgen::metrics::LiveMetrics>>,
    ) -> Result<LoadReport, RunnerError> {
        self.calls.lock().unwrap().push(format!(
            "load {} -c {}",
            config.target.url, config.connections
        ));
        let intervals = if self.intervals.is_empty() {
            vec![(0, 1.0, 1000), (1, 1.0, 1000)]
        } else {
            self.intervals.clone()
        };
        let mut total = 0;
        let mut seconds = Vec::new();
        for &(index, len, responses) in &intervals {
            total += responses;
            seconds.push(second(&config, index, len, responses));
            let length = Duration::from_secs_f64(len);
            on_interval(&IntervalView {
                index,
                elapsed: Duration::from_secs(index) + length,
                warmup: index == 0,
                responses,
                errors: 0,
                length,
                rps: responses as f64 / len,
                p99_ms: if responses == 0 { 0.0 } else { 1.0 },
                total_responses: total,
                total_errors: 0,
                ..IntervalView::default()
            });
        }
        if let Some(f) = &self.interrupt {
            f.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let mut r = report(&config);
        // The record keeps every second, as the generator's does for a cell.
        r.timeline = Some(seconds);
        if !self.throughputs.is_empty() {
            r.measurement.throughput_rps = self.throughputs[self.loads % self.throughputs.len()];
        }
        self.loads += 1;
        Ok(r)
    }
}

/// Second `index` of a fake load as the generator records it: `t_s` from the measurement's
/// start, `responses` answered in 1 ms each, the program's (or the fixed) rate as its target.
fn second(
    config: &LoadConfig,
    index: u64,
    len: f64,
    responses: u64,
) -> gatebench_model::SecondRecord {
    let t_s = index as f64 - config.warmup.as_secs_f64();
    let target_rate = match &config.arrival {
        gatebench_loadgen::Arrival::Program(p) => p.rate.rate_at(t_s),
        gatebench_loadgen::Arrival::Open { rate } => *rate,
        _ => 0.0,
    };
    let mut h = gatebench_model::histogram::new_histogram();
    if responses > 0 {
        h.record_n(1_000_000, responses).unwrap();
    }
    gatebench_model::SecondRecord {
        t_s,
        length_s: len,
        target_rate,
        sent: responses,
        responses,
        errors: 0,
        latency: Some(gatebench_model::histogram::encode(&h)),
        detail: Default::default(),
    }
}

/// With an arrival program, the record's per-second timeline as the generator writes it: one
/// second per whole second of warm-up and measurement, `t_s` from the measurement's start, the
/// program's rate at each second's start (exact for steps).
fn program_timeline(config: &LoadConfig) -> Option<Vec<gatebench_model::SecondRecord>> {
    let gatebench_loadgen::Arrival::Program(p) = &config.arrival else {
        return None;
    };
    let warm = config.warmup.as_secs_f64();
    let total = warm + config.stop.duration?.as_secs_f64();
    Some(
        (0..total.ceil() as u64)
            .map(|i| {
                let t_s = i as f64 - warm;
                gatebench_model::SecondRecord {
                    t_s,
                    length_s: 1.0,
                    target_rate: p.rate.rate_at(t_s),
                    sent: 0,
                    responses: 0,
                    errors: 0,
                    latency: None,
                    detail: Default::default(),
                }
            })
            .collect(),
    )
}

/// A plausible report for `config`.
pub fn report(config: &LoadConfig) -> LoadReport {
    let phase = |secs: f64| {
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, 1000);
        PhaseReport {
            duration_s: secs,
            outcomes,
            requests: 1000,
            throughput_rps: 1000.0 / secs,
            ok_rps: 1000.0 / secs,
            error_percent: 0.0,
            target_rps: None,
            sent_rps: 1000.0 / secs,
            bytes_read: 0,
            bytes_written: 0,
            latency: LatencySummary {
                count: 1000,
                mean_ms: 1.0,
                ..Default::default()
            },
            latency_answered: None,
            latency_uncorrected: None,
            concurrency: 1.0,
            connections: Default::default(),
            histograms: None,
        }
    };
    LoadReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "gatebench".into(),
            version: "test".into(),
        },
        started_at_unix_ms: 0,
        started_at_unix_us: 0,
        config: config.record(),
        warmup: (!config.warmup.is_zero()).then(|| phase(config.warmup.as_secs_f64())),
        // A request count alone: as if answered at 1000 requests/s.
        measurement: phase(config.stop.duration.map_or_else(
            || config.stop.requests.unwrap() as f64 / 1000.0,
            |d| d.as_secs_f64(),
        )),
        self_check: SelfCheck {
            cpu_user_s: 0.1,
            cpu_sys_s: 0.1,
            cpu_percent: 10.0,
            send_lag: None,
            schedule_kept_percent: None,
            cpu_throttled_s: None,
            warnings: vec![],
        },
        target_warnings: vec![],
        timeline: program_timeline(config),
        classes: None,
        valid: true,
        shard: None,
        merged: None,
        thresholds: Vec::new(),
        stream: None,
    }
}

/// Parses suite text as `suite.toml` in the current directory.
pub fn suite(text: &str) -> Suite {
    Suite::from_toml("suite.toml", Path::new("."), text).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses suite text as `suite.toml` in the current directory, in its short form
/// (`gatebench run --quick`).
pub fn quick_suite(text: &str) -> Suite {
    Suite::from_toml_with("suite.toml", Path::new("."), text, &quick())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `--quick`'s overrides.
pub fn quick() -> gatebench_runner::suite::Overrides {
    gatebench_runner::suite::Overrides {
        quick: true,
        ..Default::default()
    }
}

/// The error of invalid suite text, as printed.
pub fn suite_error(text: &str) -> String {
    Suite::from_toml("suite.toml", Path::new("."), text)
        .expect_err("the suite should be invalid")
        .to_string()
}

/// A fresh empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "gatebench-runner-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The repository's root (for `examples/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
