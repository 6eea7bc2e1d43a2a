//! Starting a cell's processes: its ports, the load it will run (built first, so a protocol this
//! build cannot speak fails before anything starts), its templates rendered, the backends and
//! the system under test launched in order, each ready before the next, and on a remote host
//! the target's sampler. The rule: nothing here measures, and everything launched is in the
//! cell's guard at once, so [`super::run_cell`] stops it whatever happens next.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use gatebench_loadgen::LoadConfig;

use super::events::{self, CellSide, Plan};
use super::origin::{count_if_echo, OriginSource};
use super::process::{
    is_serve, log_tail, process_spec, render_templates, spec_summary, Common, ProcessAt,
};
use super::remote::{copy_templates, pick_ports, AnySampler, CellHosts, Place};
use super::{load_config, CellRun, Effects, SAMPLE_PERIOD};
use crate::driver::{wait_ready, ReadyCheck};
use crate::error::RunnerError;
use crate::hosts::RemoteSampler;
use crate::launch::ProcessSpec;
use crate::suite::{Program, Protocol};

/// A cell's processes, started and ready: what measuring them needs.
pub(super) struct Started {
    /// The load the cell runs against its target.
    pub(super) config: LoadConfig,
    /// The back-end the SUT forwards to (a cost cell's direct path).
    pub(super) backend: Backend,
    /// The target's process: the SUT, or the first back-end measured alone.
    pub(super) target_pid: u32,
    /// Where the target runs.
    pub(super) target: Place,
    /// The target's port.
    pub(super) target_port: u16,
    /// The target's sampler, when it runs on a remote host (started before the verification:
    /// its ssh session takes a moment to open).
    pub(super) remote_sampler: Option<AnySampler>,
    /// The GC log to read once the cell stopped.
    pub(super) gc: Option<GcLog>,
    /// The built-in echo back-ends, whose origin statistics are read.
    pub(super) origins: Vec<OriginSource>,
    /// The scenario's events, ready to fire during the measurement.
    pub(super) events: Option<Plan>,
}

/// Where the back-end the SUT forwards to listens, for a cost cell's direct path.
pub(super) struct Backend {
    /// Its address.
    pub(super) addr: IpAddr,
    /// The first back-end's port (a balancer's direct path goes to the first of them).
    pub(super) port: Option<u16>,
    /// The protocol it listens with: what the direct path speaks.
    pub(super) protocol: Protocol,
}

impl Backend {
    /// The first of `ports` at `addr`, listening with `protocol`.
    pub(super) fn new(addr: IpAddr, ports: &[u16], protocol: Protocol) -> Backend {
        Backend {
            addr,
            port: ports.first().copied(),
            protocol,
        }
    }
}

/// Where the GC log of the SUT (or the back-end measured alone) is, and when its writer
/// started, seconds since the cell did.
pub(super) struct GcLog {
    pub(super) path: PathBuf,
    pub(super) writer_start_s: f64,
}

/// Starts the cell's processes: ports, templates, launch in order, readiness.
pub(super) fn start(run: &CellRun<'_, '_>, fx: &mut Effects<'_>) -> Result<Started, RunnerError> {
    let (ctx, cell, sc) = (run.ctx, run.cell, run.sc);
    let n_backends = sc.backend.as_ref().map_or(0, |b| b.count) as usize;
    let hosts = pick_ports(ctx, cell, sc, n_backends)?;
    let target_is_backend = sc.sut.is_none();
    let target_port = hosts
        .sut_port
        .or(hosts.backend_ports.first().copied())
        .expect("a scenario has a sut or a backend");
    let target_place = if target_is_backend {
        &hosts.backend
    } else {
        &hosts.sut
    };
    let config = load_config(ctx.suite, sc, cell, target_place.addr, target_port)?;
    let backend_protocol = sc
        .backend
        .as_ref()
        .and_then(|b| b.protocol)
        .unwrap_or(cell.protocol);
    let common = Common {
        cell,
        backend_ports: &hosts.backend_ports,
        backend_addr: hosts.backend.addr,
        backend_protocol,
        cell_dir: ctx.cell_dir,
        suite_dir: &ctx.suite.base_dir,
        workdir: &sc.workdir,
    };
    render_templates(sc, &common, target_port, target_place)?;
    for place in [&hosts.sut, &hosts.backend] {
        copy_templates(sc, ctx.cell_dir, place)?;
    }
    let mut origins = Vec::new();
    let processes = processes(run, &common, &hosts, &mut origins)?;
    let backends: Vec<(String, ProcessSpec, ReadyCheck)> = processes
        .iter()
        .filter(|(n, ..)| n.starts_with("backend-") && !run.sc.events.is_empty())
        .cloned()
        .collect();
    // The process whose GC log is read: the SUT, or the backend measured alone.
    let (target_name, gc_writer) = if target_is_backend {
        ("backend-1", "backend-1")
    } else {
        ("sut", "sut")
    };
    let gc_path = gc_path(run, &common, target_port, target_place, gc_writer)?;
    let writer_start_s = launch(run, fx, processes, gc_writer)?;
    let target_pid = fx
        .guard
        .get_mut(target_name)
        .expect("the target runs")
        .pid();
    let remote_sampler = match &target_place.remote {
        None => None,
        Some(r) => Some(AnySampler::Remote(RemoteSampler::start(
            &r.host,
            target_pid,
            run.origin,
            SAMPLE_PERIOD,
            &r.dir,
            run.ctx.metrics.as_ref().map(|m| m.tap()),
        )?)),
    };
    let sut_protocol = sc
        .sut
        .as_ref()
        .and_then(|s| s.protocol)
        .unwrap_or(cell.protocol);
    let events = events::resolve(
        run,
        CellSide {
            common: &common,
            port: target_port,
            protocol: if target_is_backend {
                backend_protocol
            } else {
                sut_protocol
            },
            place: target_place,
            backends: &backends,
            sut_pid: (!target_is_backend).then_some(target_pid),
        },
    )?;
    let backend = Backend::new(hosts.backend.addr, &hosts.backend_ports, backend_protocol);
    let CellHosts {
        backend: b, sut, ..
    } = hosts;
    Ok(Started {
        config,
        target_port,
        backend,
        target_pid,
        target: if target_is_backend { b } else { sut },
        remote_sampler,
        gc: gc_path.map(|path| GcLog {
            path,
            writer_start_s,
        }),
        origins,
        events,
    })
}

/// Every process of the cell with its readiness check, in start order: the back-ends before
/// the SUT that needs them. The built-in echo back-ends count what they see, and go into
/// `origins`.
fn processes(
    run: &CellRun<'_, '_>,
    common: &Common<'_>,
    hosts: &CellHosts,
    origins: &mut Vec<OriginSource>,
) -> Result<Vec<(String, ProcessSpec, ReadyCheck)>, RunnerError> {
    let (ctx, cell, sc) = (run.ctx, run.cell, run.sc);
    let target_is_backend = sc.sut.is_none();
    let mut out = Vec::new();
    if let Some(b) = &sc.backend {
        for (i, port) in hosts.backend_ports.iter().enumerate() {
            let name = format!("backend-{}", i + 1);
            let cpus = if target_is_backend && i == 0 {
                ctx.placement.sut.clone()
            } else {
                ctx.placement.others.clone()
            };
            let at = ProcessAt {
                name: name.clone(),
                template: b,
                port: *port,
                protocol: common.backend_protocol,
                cpus,
                place: &hosts.backend,
            };
            let (mut spec, check) = process_spec(run, common, at)?;
            let serve = matches!(b.program, Program::Serve(_));
            let addr = SocketAddr::new(hosts.backend.addr, *port);
            let tls = common.backend_protocol.tls();
            // With events, each built-in echo names itself on its responses (the load marks
            // them): what a route change's propagation is measured with.
            if serve
                && !sc.events.is_empty()
                && spec.args.get(1).is_some_and(|a| a == "echo")
                && !spec.args.iter().any(|a| a == "--id")
            {
                spec.args.extend(["--id".to_owned(), name.clone()]);
            }
            // Behind an intermediary only: an echo measured alone sees the generator.
            if !target_is_backend {
                origins.extend(count_if_echo(&mut spec, serve, addr, tls));
            }
            out.push((name, spec, check));
        }
    }
    if let Some(s) = &sc.sut {
        let at = ProcessAt {
            name: "sut".to_owned(),
            template: s,
            port: hosts.sut_port.expect("a port was picked for the sut"),
            protocol: s.protocol.unwrap_or(cell.protocol),
            cpus: ctx.placement.sut.clone(),
            place: &hosts.sut,
        };
        let (spec, check) = process_spec(run, common, at)?;
        out.push(("sut".to_owned(), spec, check));
    }
    Ok(out)
}

/// Where the GC log of `writer` is read from, when the scenario has one.
fn gc_path(
    run: &CellRun<'_, '_>,
    common: &Common<'_>,
    target_port: u16,
    target_place: &Place,
    writer: &str,
) -> Result<Option<PathBuf>, RunnerError> {
    let sc = run.sc;
    let Some(g) = &sc.gc else {
        return Ok(None);
    };
    let path = match &g.path {
        Some(p) => {
            let proto = sc
                .sut
                .as_ref()
                .and_then(|s| s.protocol)
                .unwrap_or(run.cell.protocol);
            let expanded = common
                .expand(p, Some(target_port), proto, target_place)
                .map_err(|e| RunnerError::GcLogPath {
                    source: Box::new(e),
                })?;
            // On a remote host the path is that host's (its cell directory).
            if let Some(r) = &target_place.remote {
                return Ok(Some(Path::new(&r.dir).join(expanded)));
            }
            PathBuf::from(expanded)
        }
        // The SUT's log comes back over ssh into the local cell directory.
        None => run.ctx.cell_dir.join(format!("{writer}.log")),
    };
    Ok(Some(sc.workdir.join(path)))
}

/// Launches the processes in order, each ready before the next; returns when `gc_writer`
/// started, seconds since the cell did.
fn launch(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    processes: Vec<(String, ProcessSpec, ReadyCheck)>,
    gc_writer: &str,
) -> Result<f64, RunnerError> {
    let ctx = run.ctx;
    let mut checks = Vec::with_capacity(processes.len());
    for (name, spec, check) in processes {
        fx.specs.push(spec);
        checks.push((name, check));
    }
    let mut writer_start_s = 0.0;
    for (spec, (name, check)) in fx.specs.iter().zip(&checks) {
        if name == gc_writer {
            writer_start_s = run.origin.elapsed().as_secs_f64();
        }
        let p = fx.launcher.launch(spec).map_err(|e| RunnerError::Launch {
            name: name.clone(),
            source: Box::new(e),
        })?;
        fx.guard.push(name, p);
        let process = fx.guard.get_mut(name).expect("just pushed");
        let mut exited = || process.exited();
        wait_ready(
            fx.driver,
            check,
            ctx.suite.ready_timeout,
            &mut exited,
            ctx.stop,
        )
        .map_err(|why| {
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
    Ok(writer_start_s)
}
