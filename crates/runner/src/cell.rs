//! The lifecycle of one cell: start its processes, take a measurement of its kind, stop, record.
//!
//! - start (`start.rs`): ports, templates, the backends and the system under test launched
//!   fresh in order, each ready before the next (`process.rs` says what each process is);
//! - verify: one request as the load will send it, answered correctly;
//! - measure: a load cell's warm-up and measurement while the SUT is sampled (`measure.rs`, its
//!   seconds from the record in `seconds.rs`, its echo back-ends' origin statistics in
//!   `origin.rs`), or a capacity search or a cost measurement
//!   (`search.rs`);
//! - stop everything by PID, and build the record (GC log read once the SUT stopped).
//!
//! Every failure — a process that does not start or exits, a readiness timeout, a wrong answer,
//! a protocol this build cannot speak — ends the cell as `failed` with the reason, loudly in the
//! summary; the run goes on with the next cell. The processes are held by a [`Guard`], so they
//! are stopped on every path out of here, panics included.

mod event_cost;
mod events;
mod grpc;
mod measure;
mod origin;
mod process;
mod remote;
mod search;
mod seconds;
mod start;
mod websocket;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_loadgen::{
    ChatRequest, IntervalView, LoadConfig, LoadSpec, RequestBody, StopRule, StreamMode, StreamSpec,
};
use gatebench_model::{
    CellKind, CellParams, CellRecord, CellStatus, ProcessRecord, SCHEMA_VERSION,
};

use crate::driver::{apply_protocol, Driver};
use crate::error::RunnerError;
use crate::gc::{self, GcClock, GcFormat, GcWindow};
use crate::hosts::{HostPlan, SshHost};
use crate::launch::{Guard, Launcher, ProcessSpec};
use crate::matrix::Cell;
use crate::pin::{self, Placement};
use crate::sampler::Windows;
use crate::suite::{Intensity, Protocol, Scenario, Suite};
use remote::fetch_remote_gc_log;

/// The header gatebench's echo back-ends name themselves with, marked by the load of a cell
/// with events.
pub const MARK_HEADER: &str = "x-gatebench-backend";

/// How often the SUT is sampled.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// What is happening in a cell, for the progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Starting the processes and waiting until they are ready.
    Starting,
    /// Checking the target answers correctly.
    Verifying,
    /// The load's warm-up.
    WarmingUp,
    /// The measurement.
    Measuring,
    /// Stopping the processes.
    Stopping,
}

impl Phase {
    /// A word for the progress line.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Verifying => "verifying",
            Phase::WarmingUp => "warming up",
            Phase::Measuring => "measuring",
            Phase::Stopping => "stopping",
        }
    }
}

/// What a cell reports while it runs.
#[derive(Debug)]
pub enum CellEvent<'a> {
    /// A new phase began.
    Phase(Phase),
    /// One second of the load.
    Interval(&'a IntervalView),
}

/// Everything a cell needs besides its parameters.
#[derive(Debug)]
pub struct CellContext<'a> {
    /// The suite.
    pub suite: &'a Suite,
    /// The gatebench executable built-in services are started from (`serve …`).
    pub exe: &'a Path,
    /// This cell's directory (logs and rendered templates go there).
    pub cell_dir: &'a Path,
    /// CPU placement.
    pub placement: &'a Placement,
    /// Set on Ctrl-C.
    pub stop: &'a Arc<AtomicBool>,
    /// Why the scenario's setup command failed, if it did.
    pub setup_failure: Option<&'a str>,
    /// Position of the cell in the run, 1-based.
    pub order: u32,
    /// The remote hosts of the SUT and the back-ends, ready (empty: all here).
    pub hosts: &'a HostPlan,
    /// Where the cell's live figures go (`gatebench run --metrics`), begun for this cell.
    pub metrics: Option<Arc<crate::suite_metrics::SuiteMetrics>>,
}

/// The result of a cell.
#[derive(Debug)]
pub struct CellOutput {
    /// The record.
    pub record: CellRecord,
    /// The HdrHistogram interval log (empty when the load did not run).
    pub hlog: Vec<u8>,
    /// `samples.csv` (when the load ran).
    pub samples_csv: Option<String>,
    /// `timeline.csv`: the load's one-second intervals (when the load ran).
    pub timeline_csv: Option<String>,
    /// Ctrl-C arrived during the cell: its figures are partial and must not be kept.
    pub interrupted: bool,
    /// What reading the SUT's GC log after the processes stopped needs.
    gc: Option<GcInputs>,
}

/// Where the SUT's GC log is and how to place its events on the cell's clock.
#[derive(Debug)]
struct GcInputs {
    format: GcFormat,
    path: PathBuf,
    /// The log is on this remote host (fetched over ssh once the SUT stopped).
    remote: Option<Arc<SshHost>>,
    clock: GcClock,
    windows: Windows,
}

/// One cell as it runs: what it is, in which context, and the clock its seconds count on.
struct CellRun<'r, 'a> {
    ctx: &'r CellContext<'a>,
    cell: &'r Cell,
    sc: &'r Scenario,
    /// The cell's start: samples, process starts and the load's start count from it.
    origin: Instant,
}

/// What a cell acts through: the processes it starts (and the guard that stops them), the
/// network, and the display.
struct Effects<'e> {
    launcher: &'e mut dyn Launcher,
    driver: &'e mut dyn Driver,
    events: &'e mut dyn FnMut(CellEvent<'_>),
    guard: Guard,
    /// Every process the cell meant to start, for the record's command lines.
    specs: Vec<ProcessSpec>,
}

impl Effects<'_> {
    fn phase(&mut self, phase: Phase) {
        (self.events)(CellEvent::Phase(phase));
    }

    /// A process that died under load invalidates the cell even if the numbers look fine.
    fn none_exited(&mut self) -> Result<(), RunnerError> {
        match self.guard.exited().into_iter().next() {
            Some((name, how)) => Err(RunnerError::ExitedDuringLoad { name, how }),
            None => Ok(()),
        }
    }
}

/// Runs one cell.
pub fn run_cell(
    ctx: &CellContext<'_>,
    cell: &Cell,
    launcher: &mut dyn Launcher,
    driver: &mut dyn Driver,
    events: &mut dyn FnMut(CellEvent<'_>),
) -> CellOutput {
    let started = unix_ms(SystemTime::now());
    let run = CellRun {
        ctx,
        cell,
        sc: &ctx.suite.scenarios[cell.scenario],
        origin: Instant::now(),
    };
    let mut out = CellOutput {
        record: CellRecord {
            schema_version: SCHEMA_VERSION,
            cell: params(ctx, cell),
            status: CellStatus::Failed,
            reason: None,
            started_at_unix_ms: started,
            finished_at_unix_ms: started,
            processes: Vec::new(),
            load: None,
            sut_warmup: None,
            sut_measurement: None,
            gc_warmup: None,
            gc_measurement: None,
            capacity: None,
            cost: None,
            origin: None,
            events: Vec::new(),
            grpc: None,
            websocket: None,
        },
        hlog: Vec::new(),
        samples_csv: None,
        timeline_csv: None,
        interrupted: false,
        gc: None,
    };
    let mut fx = Effects {
        launcher,
        driver,
        events,
        guard: Guard::new(),
        specs: Vec::new(),
    };
    let result = start_and_measure(&run, &mut fx, &mut out);
    fx.phase(Phase::Stopping);
    stop(&mut fx, &mut out.record);
    match result {
        Ok(()) => out.record.status = CellStatus::Ok,
        Err(e) => {
            out.record.status = CellStatus::Failed;
            out.record.reason = Some(e.chain());
        }
    }
    // The GC log is read once the SUT has stopped, so it is complete and flushed.
    if let Some(g) = out
        .gc
        .take()
        .filter(|_| out.record.status == CellStatus::Ok)
    {
        let g = fetch_remote_gc_log(g, ctx.cell_dir);
        read_gc_log(&g, &cell.id, &mut out.record);
    }
    remote_cleanup(ctx, cell);
    out.interrupted = ctx.stop.load(Ordering::Relaxed);
    out.record.finished_at_unix_ms = unix_ms(SystemTime::now());
    out
}

/// Start the processes, verify the target, measure.
fn start_and_measure(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    if let Some(f) = run.ctx.setup_failure {
        return Err(RunnerError::SetupFailed {
            reason: f.to_owned(),
        });
    }
    fx.phase(Phase::Starting);
    let started = start::start(run, fx)?;
    fx.phase(Phase::Verifying);
    if run.sc.grpc.is_some() {
        // A gRPC target is checked by the gRPC load's own probe call.
        grpc::measure(run, started, out)?;
        return fx.none_exited();
    }
    if run.sc.websocket.is_some() {
        // A WebSocket target is checked by the WebSocket load's own probe handshake.
        websocket::measure(run, started, out)?;
        return fx.none_exited();
    }
    fx.driver.verify(&started.config)?;
    match run.cell.kind {
        CellKind::Load => measure::load(run, fx, started, out)?,
        CellKind::Capacity | CellKind::Cost => search::run(run, fx, started, out)?,
    }
    fx.none_exited()
}

/// Stops every process of the cell by PID and records how each one ended.
fn stop(fx: &mut Effects<'_>, record: &mut CellRecord) {
    let stopped = fx.guard.stop_all();
    record.processes = stopped
        .into_iter()
        .map(|(name, pid, how)| {
            let spec = fx.specs.iter().find(|s| s.name == name);
            ProcessRecord {
                command: spec.map(ProcessSpec::command_line).unwrap_or_default(),
                cpus: spec.and_then(|s| s.cpus.clone()),
                name,
                pid,
                stopped: how,
            }
        })
        .collect();
}

/// Everything of the cell is back here: its directories on remote hosts go.
fn remote_cleanup(ctx: &CellContext<'_>, cell: &Cell) {
    let hosts = [&ctx.hosts.sut, &ctx.hosts.backend];
    for (i, h) in hosts.iter().enumerate() {
        if let Some(h) = h {
            let seen = hosts[..i]
                .iter()
                .any(|o| o.as_ref().is_some_and(|o| Arc::ptr_eq(o, h)));
            if !seen {
                h.cell_cleanup(&cell.id);
            }
        }
    }
}

/// Reads the SUT's GC log into the record's `gc_warmup` and `gc_measurement`. A log that cannot
/// be read, or holds no GC event, is warned about (the SUT was probably started without
/// `-Xlog:gc`, `GODEBUG=gctrace=1` or `--trace-gc`) but does not fail the cell: its load figures stand.
fn read_gc_log(g: &GcInputs, cell: &str, record: &mut CellRecord) {
    let text = match std::fs::read(&g.path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            tracing::warn!(
                "{cell}: cannot read the GC log {}: {e}; no GC figures",
                g.path.display()
            );
            return;
        }
    };
    let events = gc::parse(g.format, &text);
    if events.is_empty() {
        tracing::warn!(
            "{cell}: the GC log {} has no {} GC events (is the SUT started with {}?)",
            g.path.display(),
            g.format.name(),
            g.format.option()
        );
    }
    let summary = |w: GcWindow| gc::summarize(g.format, &events, &g.clock, &g.windows, w);
    if g.windows.warmup_s > 0.0 {
        record.gc_warmup = Some(summary(GcWindow::Warmup));
    }
    record.gc_measurement = Some(summary(GcWindow::Measurement));
}

/// Builds the load of a cell, through [`apply_protocol`].
fn load_config(
    suite: &Suite,
    sc: &Scenario,
    cell: &Cell,
    addr: IpAddr,
    port: u16,
) -> Result<LoadConfig, RunnerError> {
    let l = &suite.load;
    let url = format!(
        "{}://{}{}",
        cell.protocol.scheme(),
        SocketAddr::new(addr, port),
        sc.path
    );
    let mut spec = LoadSpec::new(url);
    spec.method = sc.method.clone();
    spec.headers = l.headers.clone();
    spec.expect_status = sc.expect_status;
    let has_body = !matches!(sc.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS");
    spec.body = if has_body {
        RequestBody::Payload(cell.size as usize)
    } else {
        RequestBody::None
    };
    let (connections, arrival) = suite.arrival(&cell.intensity, cell.repeat);
    spec.connections = connections;
    spec.arrival = arrival;
    spec.threads = l.threads;
    spec.stop = StopRule {
        duration: suite.duration_bound.then_some(suite.duration),
        requests: suite.requests,
    };
    spec.warmup = suite.warmup;
    spec.timeout = l.timeout;
    spec.connect_timeout = l.connect_timeout;
    spec.keepalive = sc.keepalive;
    spec.verify = sc.verify && has_body;
    spec.thresholds = sc.thresholds.clone();
    if let Some(mode) = sc.stream {
        if mode == StreamMode::Llm {
            // A chat completion asked for as a stream, gatebench load --llm's defaults; the
            // suite's headers come last (one may add Authorization).
            let chat = ChatRequest {
                model: "gatebench".into(),
                prompt: "Write a short story.".into(),
                max_tokens: 128,
            };
            spec.method = "POST".into();
            let mut headers: Vec<String> = ChatRequest::headers().map(String::from).into();
            headers.append(&mut spec.headers);
            spec.headers = headers;
            spec.body = RequestBody::Inline(chat.body());
            spec.verify = false;
        }
        // A stream silent for the load's timeout is stalled.
        spec.stream = Some(StreamSpec {
            mode,
            stall: l.timeout,
        });
    }
    // Events' propagation: which back-end served each response (HTTP/1.x only).
    if !sc.events.is_empty() && matches!(cell.protocol, Protocol::H1c | Protocol::H1) {
        spec.mark_header = Some(MARK_HEADER.to_owned());
    }
    apply_protocol(&mut spec, cell.protocol)?;
    LoadConfig::try_new(spec).map_err(|e| RunnerError::InvalidLoad {
        reason: e.to_string(),
    })
}

fn params(ctx: &CellContext<'_>, cell: &Cell) -> CellParams {
    let sc = &ctx.suite.scenarios[cell.scenario];
    let (users, rate) = match cell.intensity {
        Intensity::Users(u) => (u, None),
        _ => (
            ctx.suite.load.connections,
            cell.intensity.mean_rate(ctx.suite.measurement_bound()),
        ),
    };
    let program = match &cell.intensity {
        Intensity::Program(p) => Some(p.to_string()),
        _ => None,
    };
    CellParams {
        id: cell.id.clone(),
        scenario: sc.name.clone(),
        title: sc.title.clone(),
        scenario_index: cell.scenario as u32,
        users,
        rate,
        program,
        size_bytes: cell.size,
        delay_ms: cell.delay.as_secs_f64() * 1e3,
        protocol: cell.protocol.name().to_owned(),
        repeat: cell.repeat,
        order: ctx.order,
        warmup_s: ctx.suite.warmup.as_secs_f64(),
        duration_s: if ctx.suite.duration_bound {
            ctx.suite.duration.as_secs_f64()
        } else {
            0.0
        },
        requests: ctx.suite.requests,
        kind: cell.kind,
    }
}

/// Pins the generator (this thread, and the worker threads it spawns) when placement says so;
/// returns the affinity to restore.
fn pin_generator(placement: &Placement) -> Option<Vec<usize>> {
    let cpus = placement.others.as_ref()?;
    let before = pin::allowed_cpus().ok()?;
    match pin::pin_current_thread(cpus) {
        Ok(()) => Some(before),
        Err(e) => {
            tracing::warn!("cannot pin the load generator to CPUs {cpus:?}: {e}");
            None
        }
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
