//! The measurement of a load cell: the target sampled, the load run here or split across the
//! generator hosts, and the record filled: the load's report, the SUT's figures over the
//! warm-up and the measurement, and the cell's seconds (`timeline.csv`, `latency.hlog`) from the
//! load record's own timeline (`seconds.rs`). The rule: the live view the load gives while it
//! runs drives the display and nothing else.

use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use gatebench_loadgen::IntervalView;
use gatebench_model::{EventRecord, LoadReport};
use gatebench_results::rows::{to_csv, TimelineRow};

use super::event_cost;
use super::events::{stamp, Fired, Hands, Plan};
use super::origin::OriginMarks;
use super::remote::{shard_args, AnySampler};
use super::seconds::seconds;
use super::start::Started;
use super::{
    pin_generator, CellEvent, CellOutput, CellRun, Effects, GcInputs, Phase, SAMPLE_PERIOD,
};
use crate::driver::Driver;
use crate::error::RunnerError;
use crate::gc::GcClock;
use crate::gc_follow::GcFollower;
use crate::pin;
use crate::sampler::{self, CpuAt, CpuReading, Sample, Sampler, Window, Windows};
use crate::shards::ShardedRun;

/// The target sampled while the load runs, and the generator pinned (when placement says so)
/// until it is finished.
pub(super) struct Sampling {
    sampler: AnySampler,
    /// The GC log followed for the live metrics, when they are on and the log is here.
    gc: Option<GcFollower>,
    restore: Option<Vec<usize>>,
}

impl Sampling {
    /// Starts sampling the target (or goes on with its remote sampler) and pins the generator.
    pub(super) fn start(run: &CellRun<'_, '_>, started: &mut Started) -> Sampling {
        let sampler = match started.remote_sampler.take() {
            Some(s) => s,
            None => AnySampler::Local(Sampler::start_tapped(
                started.target_pid,
                run.origin,
                SAMPLE_PERIOD,
                run.ctx.metrics.as_ref().map(|m| m.tap()),
            )),
        };
        Sampling {
            sampler,
            gc: follow_gc(run, started),
            restore: pin_generator(run.ctx.placement),
        }
    }

    /// The samples; the generator's thread gets its CPUs back.
    pub(super) fn finish(self) -> Vec<Sample> {
        if let Some(cpus) = self.restore {
            let _ = pin::pin_current_thread(&cpus);
        }
        if let Some(gc) = self.gc {
            gc.finish();
        }
        self.sampler.finish()
    }
}

/// Follows the SUT's GC log for the live metrics: when they are on, the scenario has a GC log,
/// and that log is on this machine (the SUT's own log is, wherever the SUT runs: its output
/// comes back over ssh; a log at a path of a remote host is fetched only after the cell).
fn follow_gc(run: &CellRun<'_, '_>, started: &Started) -> Option<GcFollower> {
    let metrics = run.ctx.metrics.as_ref()?;
    let spec = run.sc.gc.as_ref()?;
    let log = started.gc.as_ref()?;
    if started.target.remote.is_some() && spec.path.is_some() {
        return None;
    }
    Some(GcFollower::start(
        log.path.clone(),
        spec.format,
        SAMPLE_PERIOD,
        metrics.gc_tap(),
    ))
}

/// Runs a load cell's load and fills its record.
pub(super) fn load(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    mut started: Started,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    let local_start_s = run.origin.elapsed().as_secs_f64();
    let cpu = cpu_marks(run, &started);
    // Read where the measurement's start is known here: a local load (sharded generators
    // start at an instant of their own).
    let sources = std::mem::take(&mut started.origins);
    // A back-end stopped or started by an event counts from zero again: no origin figures.
    let restarts = started.events.as_ref().is_some_and(Plan::acts_on_backends);
    let origins = OriginMarks::spawn(
        sources
            .into_iter()
            .filter(|_| run.ctx.hosts.generators.is_empty() && !restarts)
            .collect(),
        Instant::now() + run.ctx.suite.warmup,
    );
    let sampling = Sampling::start(run, &mut started);
    let config = started.config.clone();
    let plan = started.events.take();
    let (loaded, fired) = load_with_events(run, fx, plan.as_ref(), |side| {
        run_load(
            run,
            side,
            config,
            out.record.started_at_unix_ms,
            local_start_s,
        )
    });
    let samples = sampling.finish();
    out.record.origin = origins.and_then(|o| o.finish(&run.cell.id));
    let cpu_time_s = cpu.and_then(|c| c.seconds(started.target_pid));
    let (report, load_start_s) = loaded?;

    let (rows, hlog) = seconds(&report, load_start_s);
    let header = if report.config.arrival.is_some() {
        TimelineRow::HEADER_WITH_TARGET
    } else {
        TimelineRow::HEADER
    };
    let windows = Windows {
        load_start_s,
        warmup_s: report.warmup.as_ref().map_or(0.0, |w| w.duration_s),
        measurement_s: report.measurement.duration_s,
    };
    out.record.sut_warmup = windows.summarize(&samples, Window::Warmup);
    out.record.sut_measurement = windows.summarize(&samples, Window::Measurement);
    if let (Some(m), Some(cpu_s)) = (out.record.sut_measurement.as_mut(), cpu_time_s) {
        let responses = report.measurement.throughput_rps * report.measurement.duration_s;
        m.cpu_time_s = Some(cpu_s);
        m.cpu_us_per_request = sampler::cpu_us_per_request(cpu_s, responses.round());
    }
    out.samples_csv = Some(windows.csv(&samples));
    out.timeline_csv = Some(to_csv(header, rows));
    out.hlog = hlog;
    if let Some(plan) = &plan {
        out.record.events = event_records(plan, fired, &report);
    }
    out.record.load = Some(report);
    out.gc = gc_inputs(run, &started, out.record.started_at_unix_ms, windows);
    Ok(())
}

/// What the load acts through while the events' thread holds the rest of the cell's effects.
struct LoadSide<'s, 'e> {
    driver: &'s mut dyn Driver,
    events: &'s mut (dyn FnMut(CellEvent<'_>) + 'e),
}

/// Runs `load` on this thread while the cell's events (if any) fire on a thread of their own,
/// which holds the cell's guard and launcher until the load has ended; returns the load's
/// result and the firings.
fn load_with_events<T>(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    plan: Option<&Plan>,
    load: impl FnOnce(LoadSide<'_, '_>) -> T,
) -> (T, Vec<Fired>) {
    let guard = Mutex::new(std::mem::take(&mut fx.guard));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    // The measurement's planned start: the load starts now, its warm-up first.
    let zero = Instant::now() + run.ctx.suite.warmup;
    let out = std::thread::scope(|s| {
        let firing = plan.map(|p| {
            let hands = Hands {
                guard: &guard,
                launcher: Mutex::new(&mut *fx.launcher),
                stop: run.ctx.stop,
            };
            s.spawn(move || p.fire_all(zero, hands, &done_rx))
        });
        let loaded = load(LoadSide {
            driver: &mut *fx.driver,
            events: &mut *fx.events,
        });
        drop(done_tx);
        let fired = firing
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    tracing::warn!(
                        "{}: the events' thread failed; no events recorded",
                        run.cell.id
                    );
                    Vec::new()
                })
            })
            .unwrap_or_default();
        (loaded, fired)
    });
    fx.guard = guard.into_inner().unwrap_or_else(|e| e.into_inner());
    out
}

/// The firings on the measurement's clock, with what each cost.
fn event_records(plan: &Plan, fired: Vec<Fired>, report: &LoadReport) -> Vec<EventRecord> {
    let windows: Vec<Duration> = fired
        .iter()
        .map(|f| {
            plan.events
                .iter()
                .find(|(e, _)| e.name == f.record.name)
                .map_or(crate::suite::DEFAULT_WINDOW, |(e, _)| e.window)
        })
        .collect();
    let mut records = stamp(fired, report);
    if let Some(timeline) = &report.timeline {
        event_cost::fill(
            timeline,
            &mut records,
            &windows,
            report.measurement.duration_s,
        );
    }
    records
}

/// Runs the load, here or on the generator hosts; returns its report and when it started,
/// seconds since the cell did.
fn run_load(
    run: &CellRun<'_, '_>,
    fx: LoadSide<'_, '_>,
    config: gatebench_loadgen::LoadConfig,
    cell_start_unix_ms: u64,
    local_start_s: f64,
) -> Result<(LoadReport, f64), RunnerError> {
    let (ctx, suite) = (run.ctx, run.ctx.suite);
    (fx.events)(CellEvent::Phase(if suite.warmup.is_zero() {
        Phase::Measuring
    } else {
        Phase::WarmingUp
    }));
    if ctx.hosts.generators.is_empty() {
        let mut measuring = suite.warmup.is_zero();
        let events = &mut *fx.events;
        let mut on_interval = |v: &IntervalView| {
            if !v.warmup && !measuring {
                measuring = true;
                events(CellEvent::Phase(Phase::Measuring));
            }
            events(CellEvent::Interval(v));
        };
        let report = fx.driver.load(
            config,
            &mut on_interval,
            ctx.stop.clone(),
            ctx.metrics.as_ref().and_then(|m| m.current()),
        )?;
        return Ok((report, local_start_s));
    }
    // Split across the generator hosts; the load starts at the shards' common instant.
    let url = config.record().url.clone();
    let args = shard_args(suite, run.sc, run.cell, &url);
    let l = &suite.load;
    let mut measuring = suite.warmup.is_zero();
    let events = &mut *fx.events;
    let mut on_interval = |v: &IntervalView| {
        if !v.warmup && !measuring {
            measuring = true;
            events(CellEvent::Phase(Phase::Measuring));
        }
        events(CellEvent::Interval(v));
    };
    let sharded = crate::shards::run(
        &ShardedRun {
            generators: &ctx.hosts.generators,
            args: &args,
            headers: &l.headers,
            warmup: suite.warmup,
            deadline: suite.warmup + suite.duration + l.timeout + Duration::from_secs(30),
            thresholds: &run.sc.thresholds,
            metrics: ctx.metrics.as_ref().and_then(|m| m.current()),
            cell_dir: ctx.cell_dir,
            stop: ctx.stop,
        },
        &mut on_interval,
    )
    .map_err(|e| RunnerError::Load {
        reason: e.to_string(),
    })?;
    let load_start_s = sharded.start_unix_s - cell_start_unix_ms as f64 / 1e3;
    Ok((sharded.report, load_start_s))
}

/// The SUT's CPU time over the measurement, read at its start and end.
struct CpuMarks {
    start: CpuAt,
    /// Read at the measurement's planned end; `None` with a request count (read when the load
    /// ends).
    end: Option<CpuAt>,
}

impl CpuMarks {
    /// CPU seconds between the marks; `None` when either could not be read.
    fn seconds(self, pid: u32) -> Option<f64> {
        let end = match self.end {
            Some(end) => end.cancel(),
            None => Some(CpuReading::now(pid)),
        };
        Some(self.start.cancel()?.seconds_until_here(&end?))
    }
}

/// Only where the windows' instants are known here: a local SUT under a local load (a remote
/// SUT's host or sharded generators keep their own clocks; the figure is then absent, not
/// estimated).
fn cpu_marks(run: &CellRun<'_, '_>, started: &Started) -> Option<CpuMarks> {
    let (ctx, suite) = (run.ctx, run.ctx.suite);
    if started.target.remote.is_some() || !ctx.hosts.generators.is_empty() {
        return None;
    }
    let pid = started.target_pid;
    let start = Instant::now() + suite.warmup;
    let end = suite
        .requests
        .is_none()
        .then(|| CpuAt::spawn(pid, start + suite.duration));
    Some(CpuMarks {
        start: CpuAt::spawn(pid, start),
        end,
    })
}

/// What reading the GC log needs once the SUT stopped. A remote log carries the host's wall
/// clock (JVM `time` decorations): its cell start is ours plus the host's measured clock
/// offset.
fn gc_inputs(
    run: &CellRun<'_, '_>,
    started: &Started,
    cell_start_unix_ms: u64,
    windows: Windows,
) -> Option<GcInputs> {
    let g = run.sc.gc.as_ref()?;
    let log = started.gc.as_ref()?;
    let remote = started
        .target
        .remote
        .as_ref()
        .filter(|_| g.path.is_some())
        .map(|r| r.host.clone());
    let offset = started
        .target
        .remote
        .as_ref()
        .map_or(0.0, |r| r.host.report.clock_offset_s);
    Some(GcInputs {
        format: g.format,
        path: log.path.clone(),
        remote,
        clock: GcClock {
            process_start_s: log.writer_start_s,
            cell_start_unix_s: cell_start_unix_ms as f64 / 1e3 + offset,
        },
        windows,
    })
}

/// A load of its own (gRPC, WebSocket) measured as an HTTP cell's load is: the built-in echo
/// back-ends' counts read at the warm-up's end and after the measurement, the SUT sampled over
/// both, `warmup` then `measure` run here (the warm-up's figures dropped). Fills the record's
/// SUT windows, samples and origin statistics; the measured output, with when it started, and
/// its measurement's length from `seconds`.
pub(super) fn own_load<T, E: std::fmt::Display>(
    run: &CellRun<'_, '_>,
    started: &mut Started,
    out: &mut CellOutput,
    warmup: impl FnOnce() -> Result<(), E>,
    measure: impl FnOnce() -> Result<T, E>,
    seconds: impl FnOnce(&T) -> f64,
) -> Result<(T, std::time::SystemTime), RunnerError> {
    let suite = run.ctx.suite;
    let origins = OriginMarks::spawn(
        std::mem::take(&mut started.origins),
        std::time::Instant::now() + suite.warmup,
    );
    let sampling = Sampling::start(run, started);
    let load_start_s = run.origin.elapsed().as_secs_f64();
    let warmed = if suite.warmup.is_zero() {
        Ok(())
    } else {
        warmup()
    };
    let warmup_s = run.origin.elapsed().as_secs_f64() - load_start_s;
    let started_at = std::time::SystemTime::now();
    let measured = warmed.and_then(|()| measure());
    let samples = sampling.finish();
    out.record.origin = origins.and_then(|o| o.finish(&run.cell.id));
    let output = measured.map_err(|e| RunnerError::Load {
        reason: e.to_string(),
    })?;
    let windows = Windows {
        load_start_s,
        warmup_s,
        measurement_s: seconds(&output),
    };
    out.record.sut_warmup = windows.summarize(&samples, Window::Warmup);
    out.record.sut_measurement = windows.summarize(&samples, Window::Measurement);
    out.samples_csv = Some(windows.csv(&samples));
    Ok((output, started_at))
}
