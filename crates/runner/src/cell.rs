//! The lifecycle of one cell: pick ports, render templates, start the backends and the system
//! under test fresh, wait until each is ready, verify the target answers correctly, run the
//! load (warm-up, then measurement) while sampling the SUT, stop everything by PID, and build
//! the record.
//!
//! Every failure — a process that does not start or exits, a readiness timeout, a wrong answer,
//! a protocol this build cannot speak — ends the cell as `failed` with the reason, loudly in the
//! summary; the run goes on with the next cell. The processes are held by a [`Guard`], so they
//! are stopped on every path out of here, panics included.

mod process;
mod remote;
mod search;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_loadgen::{IntervalView, LoadConfig, LoadSpec, RequestBody, StopRule};
use gatebench_model::{CellParams, CellRecord, CellStatus, ProcessRecord, SCHEMA_VERSION};
use gatebench_results::rows::{to_csv, TimelineRow};

use crate::driver::{apply_protocol, wait_ready, Driver};
use crate::error::RunnerError;
use crate::gc::{self, GcClock, GcFormat, GcWindow};
use crate::hosts::{HostPlan, RemoteSampler, SshHost};
use crate::launch::{Guard, Launcher, ProcessSpec};
use crate::matrix::Cell;
use crate::pin::{self, Placement};
use crate::placeholder;
use crate::sampler::{self, CpuAt, CpuReading, Sample, Sampler, Window, Windows};
use crate::suite::{Intensity, Protocol, Scenario, Suite};
use process::{is_serve, log_tail, process_spec, render_templates, spec_summary};
use remote::{copy_templates, fetch_remote_gc_log, pick_ports, shard_args, AnySampler, Place};

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

/// Runs one cell.
pub fn run_cell(
    ctx: &CellContext<'_>,
    cell: &Cell,
    launcher: &mut dyn Launcher,
    driver: &mut dyn Driver,
    events: &mut dyn FnMut(CellEvent<'_>),
) -> CellOutput {
    let started = unix_ms(SystemTime::now());
    let origin = Instant::now();
    let sc = &ctx.suite.scenarios[cell.scenario];
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
        },
        hlog: Vec::new(),
        samples_csv: None,
        timeline_csv: None,
        interrupted: false,
        gc: None,
    };
    let mut guard = Guard::new();
    let mut specs: Vec<ProcessSpec> = Vec::new();
    let result = lifecycle(
        ctx, cell, sc, origin, launcher, driver, events, &mut guard, &mut specs, &mut out,
    );
    events(CellEvent::Phase(Phase::Stopping));
    let stopped = guard.stop_all();
    out.record.processes = stopped
        .into_iter()
        .map(|(name, pid, how)| {
            let spec = specs.iter().find(|s| s.name == name);
            ProcessRecord {
                command: spec.map(ProcessSpec::command_line).unwrap_or_default(),
                cpus: spec.and_then(|s| s.cpus.clone()),
                name,
                pid,
                stopped: how,
            }
        })
        .collect();
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
    // Everything of the cell is back here: its directories on remote hosts go.
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
    out.interrupted = ctx.stop.load(Ordering::Relaxed);
    out.record.finished_at_unix_ms = unix_ms(SystemTime::now());
    out
}

#[allow(clippy::too_many_arguments)]
fn lifecycle(
    ctx: &CellContext<'_>,
    cell: &Cell,
    sc: &Scenario,
    origin: Instant,
    launcher: &mut dyn Launcher,
    driver: &mut dyn Driver,
    events: &mut dyn FnMut(CellEvent<'_>),
    guard: &mut Guard,
    specs: &mut Vec<ProcessSpec>,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    if let Some(f) = ctx.setup_failure {
        return Err(RunnerError::SetupFailed {
            reason: f.to_owned(),
        });
    }
    events(CellEvent::Phase(Phase::Starting));
    // Ports: bound together (so they differ), released just before the processes start. Another
    // program could take one in between; the readiness check then fails the cell clearly.
    let n_backends = sc.backend.as_ref().map_or(0, |b| b.count) as usize;
    let hosts = pick_ports(ctx, cell, sc, n_backends)?;
    let (backend_ports, sut_port) = (hosts.backend_ports.as_slice(), hosts.sut_port);
    let target_port = sut_port
        .or(backend_ports.first().copied())
        .expect("a scenario has a sut or a backend");

    // The load first: a protocol this build cannot speak fails before anything starts.
    let target_addr = if sc.sut.is_some() {
        hosts.sut.addr
    } else {
        hosts.backend.addr
    };
    let config = load_config(ctx.suite, sc, cell, target_addr, target_port)?;

    let backend_protocol = sc
        .backend
        .as_ref()
        .and_then(|b| b.protocol)
        .unwrap_or(cell.protocol);
    let common = Common {
        cell,
        backend_ports,
        backend_addr: hosts.backend.addr,
        backend_protocol,
        cell_dir: ctx.cell_dir,
        suite_dir: &ctx.suite.base_dir,
        workdir: &sc.workdir,
    };
    let target_place = if sc.sut.is_some() {
        &hosts.sut
    } else {
        &hosts.backend
    };
    render_templates(sc, &common, target_port, target_place)?;
    for place in [&hosts.sut, &hosts.backend] {
        copy_templates(sc, ctx.cell_dir, place)?;
    }

    let target_is_backend = sc.sut.is_none();
    let mut checks = Vec::new();
    if let Some(b) = &sc.backend {
        for (i, port) in backend_ports.iter().enumerate() {
            let name = format!("backend-{}", i + 1);
            let cpus = if target_is_backend && i == 0 {
                ctx.placement.sut.clone()
            } else {
                ctx.placement.others.clone()
            };
            let (spec, check) = process_spec(
                ctx,
                sc,
                &common,
                &name,
                b,
                *port,
                backend_protocol,
                cpus,
                &hosts.backend,
            )?;
            specs.push(spec);
            checks.push((name, check));
        }
    }
    if let Some(s) = &sc.sut {
        let port = sut_port.expect("a port was picked for the sut");
        let proto = s.protocol.unwrap_or(cell.protocol);
        let (spec, check) = process_spec(
            ctx,
            sc,
            &common,
            "sut",
            s,
            port,
            proto,
            ctx.placement.sut.clone(),
            &hosts.sut,
        )?;
        specs.push(spec);
        checks.push(("sut".to_owned(), check));
    }
    // The process whose GC log is read: the SUT, or the backend measured alone.
    let gc_writer = if sc.sut.is_some() { "sut" } else { "backend-1" };
    let gc_path = sc
        .gc
        .as_ref()
        .map(|g| -> Result<PathBuf, RunnerError> {
            let path = match &g.path {
                Some(p) => {
                    let proto = sc
                        .sut
                        .as_ref()
                        .and_then(|s| s.protocol)
                        .unwrap_or(cell.protocol);
                    let expanded = common
                        .expand(p, Some(target_port), proto, target_place)
                        .map_err(|e| RunnerError::GcLogPath {
                            source: Box::new(e),
                        })?;
                    // On a remote host the path is that host's (its cell directory).
                    if let Some(r) = &target_place.remote {
                        return Ok(Path::new(&r.dir).join(expanded));
                    }
                    PathBuf::from(expanded)
                }
                // The SUT's log comes back over ssh into the local cell directory.
                None => ctx.cell_dir.join(format!("{gc_writer}.log")),
            };
            Ok(sc.workdir.join(path))
        })
        .transpose()?;
    let mut gc_writer_start_s = 0.0;
    // Start in order (backends before the SUT that needs them), each ready before the next.
    for (spec, (name, check)) in specs.iter().zip(&checks) {
        if name == gc_writer {
            gc_writer_start_s = origin.elapsed().as_secs_f64();
        }
        let p = launcher.launch(spec).map_err(|e| RunnerError::Launch {
            name: name.clone(),
            source: Box::new(e),
        })?;
        guard.push(name, p);
        let proc_ = guard.get_mut(name).expect("just pushed");
        let timeout = ctx.suite.ready_timeout;
        let mut exited = || proc_.exited();
        wait_ready(driver, check, timeout, &mut exited, ctx.stop).map_err(|why| {
            let tail = spec.log.as_deref().and_then(log_tail);
            let unsupported = tail
                .as_deref()
                .is_some_and(|t| t.contains("invalid value") || t.contains("unexpected argument"));
            let hint = if unsupported && is_serve(spec, ctx.exe) {
                "; this build's `gatebench serve` does not support it yet"
            } else {
                ""
            };
            RunnerError::NotReady {
                name: name.clone(),
                shown: spec_summary(spec),
                why: why.chain(),
                log_tail: tail,
                hint,
            }
        })?;
    }

    // A remote sampler starts before the verification: its ssh session takes a moment to
    // open, and its first samples (before the load) are cut away like local ones.
    let target_name = if target_is_backend {
        "backend-1"
    } else {
        "sut"
    };
    let target_pid = guard.get_mut(target_name).expect("the target runs").pid();
    let mut early_sampler = match &target_place.remote {
        None => None,
        Some(r) => Some(AnySampler::Remote(RemoteSampler::start(
            &r.host,
            target_pid,
            origin,
            SAMPLE_PERIOD,
            &r.dir,
        )?)),
    };
    events(CellEvent::Phase(Phase::Verifying));
    driver.verify(&config)?;

    let load_start_s = origin.elapsed().as_secs_f64();
    let sampler = match early_sampler.take() {
        Some(s) => s,
        None => AnySampler::Local(Sampler::start(target_pid, origin, SAMPLE_PERIOD)),
    };
    // The SUT's CPU time over the measurement, read at its start and end. Only where the
    // windows' instants are known here: a local SUT under a local load (a remote SUT's host or
    // sharded generators keep their own clocks; the figure is then absent, not estimated).
    let cpu_marks = (target_place.remote.is_none() && ctx.hosts.generators.is_empty()).then(|| {
        let start = Instant::now() + ctx.suite.warmup;
        let end = ctx
            .suite
            .requests
            .is_none()
            .then(|| CpuAt::spawn(target_pid, start + ctx.suite.duration));
        (CpuAt::spawn(target_pid, start), end)
    });
    let restore = pin_generator(ctx.placement);
    if cell.kind != gatebench_model::CellKind::Load {
        let backend = search::Backend::new(hosts.backend.addr, backend_ports, backend_protocol);
        let pid = target_place.remote.is_none().then_some(target_pid);
        return search::run(
            ctx, cell, sc, driver, events, config, backend, pid, sampler, restore, origin, guard,
            out,
        );
    }
    events(CellEvent::Phase(if ctx.suite.warmup.is_zero() {
        Phase::Measuring
    } else {
        Phase::WarmingUp
    }));
    let mut measuring = ctx.suite.warmup.is_zero();
    let mut timeline = Vec::new();
    // Each timeline row's start, seconds since the load began.
    let mut interval_starts = Vec::new();
    let mut on_interval = |v: &IntervalView| {
        if !v.warmup && !measuring {
            measuring = true;
            events(CellEvent::Phase(Phase::Measuring));
        }
        // The generator may report one more, nearly empty interval that starts at the run's
        // end (a few milliseconds while its workers stop): not part of either window. Its
        // start is its end minus its true length, not minus a second (which kept it, and drew
        // every plot ending in zero throughput and zero p99). A partial last second inside the
        // load stays: its rps is already over its true length.
        // With a request count the load's end is not known in advance: such an interval is
        // left out below, once the report says how long the measurement took.
        let load_len = if ctx.suite.requests.is_some() {
            f64::INFINITY
        } else {
            (ctx.suite.warmup + ctx.suite.duration).as_secs_f64()
        };
        let interval_start = v.elapsed.saturating_sub(v.length).as_secs_f64();
        if interval_start >= load_len - 1e-3 {
            events(CellEvent::Interval(v));
            return;
        }
        interval_starts.push(interval_start);
        timeline.push(TimelineRow {
            t_s: load_start_s + v.elapsed.as_secs_f64(),
            window: if v.warmup { "warmup" } else { "measurement" }.to_owned(),
            responses: Some(v.responses),
            errors: Some(v.errors),
            rps: v.rps,
            p99_ms: v.p99_ms,
            target_rate: None,
        });
        events(CellEvent::Interval(v));
    };
    let mut load_start_s = load_start_s;
    let report = if ctx.hosts.generators.is_empty() {
        driver.load(config, &mut out.hlog, &mut on_interval, ctx.stop.clone())
    } else {
        // Split across the generator hosts; the load starts at the shards' common instant.
        let url = config.record().url.clone();
        let args = shard_args(ctx.suite, sc, cell, &url);
        let l = &ctx.suite.load;
        let deadline = ctx.suite.warmup + ctx.suite.duration + l.timeout + Duration::from_secs(30);
        let cell_start_unix = out.record.started_at_unix_ms as f64 / 1e3;
        crate::shards::run(
            &ctx.hosts.generators,
            &args,
            &l.headers,
            deadline,
            ctx.cell_dir,
            ctx.stop,
        )
        .map(|sharded| {
            load_start_s = sharded.start_unix_s - cell_start_unix;
            sharded.report
        })
        .map_err(|e| RunnerError::Load {
            reason: e.to_string(),
        })
    };
    if let Some(cpus) = restore {
        let _ = pin::pin_current_thread(&cpus);
    }
    let samples: Vec<Sample> = sampler.finish();
    // With a request count the measurement ends when the load does: read it now.
    let cpu_time_s = cpu_marks.and_then(|(start, end)| {
        let end = match end {
            Some(end) => end.cancel(),
            None => Some(CpuReading::now(target_pid)),
        };
        Some(start.cancel()?.seconds_until_here(&end?))
    });
    let report = report?;
    // A cell with an arrival program: each row gains the program's rate over its second, from
    // the record's per-second timeline (its `t_s` counts from the measurement's start).
    if let Some(seconds) = &report.timeline {
        let warmup = ctx.suite.warmup.as_secs_f64();
        for (row, start) in timeline.iter_mut().zip(&interval_starts) {
            row.target_rate = seconds
                .iter()
                .find(|s| (s.t_s + warmup - start).abs() < 0.5)
                .map(|s| s.target_rate);
        }
    }
    let sharded = !ctx.hosts.generators.is_empty();
    if sharded {
        let (rows, hlog) = crate::shards::seconds(&report, load_start_s);
        timeline = rows;
        out.hlog = hlog;
    }
    // A program's cells have the target column (a shard's record keeps its seconds at a fixed
    // rate too, without a program: no column then).
    let header = if report.timeline.is_some() && (!sharded || report.config.arrival.is_some()) {
        TimelineRow::HEADER_WITH_TARGET
    } else {
        TimelineRow::HEADER
    };
    let windows = Windows {
        load_start_s,
        warmup_s: report.warmup.as_ref().map_or(0.0, |w| w.duration_s),
        measurement_s: report.measurement.duration_s,
    };
    if ctx.suite.requests.is_some() {
        // The load's end is known now: an interval starting at it is no part of either window.
        let load_len = windows.warmup_s + windows.measurement_s;
        let mut starts = interval_starts.iter();
        timeline.retain(|_| starts.next().is_none_or(|s| *s < load_len - 1e-3));
    }
    out.record.sut_warmup = windows.summarize(&samples, Window::Warmup);
    out.record.sut_measurement = windows.summarize(&samples, Window::Measurement);
    if let (Some(m), Some(cpu_s)) = (out.record.sut_measurement.as_mut(), cpu_time_s) {
        let responses = report.measurement.throughput_rps * report.measurement.duration_s;
        m.cpu_time_s = Some(cpu_s);
        m.cpu_us_per_request = sampler::cpu_us_per_request(cpu_s, responses.round());
    }
    out.samples_csv = Some(windows.csv(&samples));
    out.timeline_csv = Some(to_csv(header, timeline));
    out.record.load = Some(report);
    // A remote log carries the host's wall clock (JVM `time` decorations): its cell start is
    // ours plus the host's measured clock offset.
    let gc_remote = target_place
        .remote
        .as_ref()
        .filter(|_| sc.gc.as_ref().is_some_and(|g| g.path.is_some()))
        .map(|r| r.host.clone());
    let offset = target_place
        .remote
        .as_ref()
        .map_or(0.0, |r| r.host.report.clock_offset_s);
    out.gc = sc.gc.as_ref().zip(gc_path).map(|(g, path)| GcInputs {
        format: g.format,
        path,
        remote: gc_remote,
        clock: GcClock {
            process_start_s: gc_writer_start_s,
            cell_start_unix_s: out.record.started_at_unix_ms as f64 / 1e3 + offset,
        },
        windows,
    });
    // A process that died under load invalidates the cell even if the numbers look fine.
    if let Some((name, how)) = guard.exited().into_iter().next() {
        return Err(RunnerError::ExitedDuringLoad { name, how });
    }
    Ok(())
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

/// Placeholder values shared by every process of a cell.
struct Common<'a> {
    cell: &'a Cell,
    backend_ports: &'a [u16],
    backend_addr: IpAddr,
    backend_protocol: Protocol,
    cell_dir: &'a Path,
    suite_dir: &'a Path,
    workdir: &'a Path,
}

impl Common<'_> {
    fn values(
        &self,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> BTreeMap<&'static str, String> {
        let c = self.cell;
        let url = |p: &u16| {
            format!(
                "{}://{}",
                self.backend_protocol.scheme(),
                SocketAddr::new(self.backend_addr, *p)
            )
        };
        let join = |v: Vec<String>| v.join(" ");
        let mut m = BTreeMap::new();
        m.insert("host", place.addr.to_string());
        m.insert("scheme", protocol.scheme().to_owned());
        m.insert("protocol", protocol.name().to_owned());
        m.insert("protocol_flags", protocol.serve_flags().to_owned());
        if let Some(p) = port {
            m.insert("port", p.to_string());
        }
        let bp = self.backend_ports;
        m.insert(
            "backend_port",
            bp.first().map(u16::to_string).unwrap_or_default(),
        );
        m.insert(
            "backend_ports",
            join(bp.iter().map(u16::to_string).collect()),
        );
        m.insert("upstream", bp.first().map(url).unwrap_or_default());
        m.insert("upstreams", join(bp.iter().map(url).collect()));
        m.insert(
            "upstream_args",
            join(
                bp.iter()
                    .map(|p| format!("--upstream {}", url(p)))
                    .collect(),
            ),
        );
        m.insert("delay", humantime::format_duration(c.delay).to_string());
        m.insert("delay_ms", c.delay.as_millis().to_string());
        m.insert("size", c.size.to_string());
        m.insert(
            "users",
            match c.intensity {
                Intensity::Users(u) => u.to_string(),
                _ => String::new(),
            },
        );
        m.insert("cell_dir", self.cell_dir.display().to_string());
        m.insert("suite_dir", self.suite_dir.display().to_string());
        m.insert("workdir", self.workdir.display().to_string());
        // On a remote host the process runs in the cell's directory there.
        if let Some(r) = &place.remote {
            m.insert("cell_dir", r.dir.clone());
            m.insert("workdir", r.dir.clone());
        }
        m
    }

    /// `text` with its placeholders replaced as they are (a URL, a path).
    fn expand(
        &self,
        text: &str,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> Result<String, RunnerError> {
        self.expand_with(text, self.values(port, protocol, place))
    }

    /// A command line (`command`, `serve`) with its placeholders replaced, the paths among them
    /// quoted for the shell ([`placeholder::PATHS`]).
    fn expand_command(
        &self,
        text: &str,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> Result<String, RunnerError> {
        let mut values = self.values(port, protocol, place);
        for k in placeholder::PATHS {
            if let Some(v) = values.get_mut(k) {
                *v = placeholder::shell_quote(v);
            }
        }
        self.expand_with(text, values)
    }

    fn expand_with(
        &self,
        text: &str,
        values: BTreeMap<&'static str, String>,
    ) -> Result<String, RunnerError> {
        placeholder::expand_strict_lists(
            text,
            &|name| values.get(name).cloned(),
            &self.backend_items(),
        )
    }

    /// Every back-end's values for `{backends:…}`, at the back-ends' host address.
    fn backend_items(&self) -> Vec<placeholder::ListItem> {
        self.backend_ports
            .iter()
            .enumerate()
            .map(|(i, p)| placeholder::ListItem {
                index: i + 1,
                port: *p,
                url: format!(
                    "{}://{}",
                    self.backend_protocol.scheme(),
                    SocketAddr::new(self.backend_addr, *p)
                ),
            })
            .collect()
    }
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
