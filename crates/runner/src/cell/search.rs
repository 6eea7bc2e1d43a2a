//! The cells that are more than one load: a capacity cell runs the capacity search against
//! the started SUT (each step one open-model load through the cell's [`Driver`]), a cost cell
//! the same open-model load straight to the back-end and through the SUT, interleaved. Their
//! processes, readiness, verification, sampling and stopping are the ordinary cell's
//! ([`super::run_cell`]); only the load differs. The search is `gatebench_loadgen::capacity`,
//! the measurement `gatebench_loadgen::cost` and its statistics `gatebench_report::cost`,
//! exactly as `gatebench load --find-max` and `gatebench cost` run them.
//!
//! The SUT is sampled over the whole search or measurement (`samples.csv`, the record's
//! `sut_measurement`); the cost cell's intermediary CPU comes from the SUT's process group's
//! own CPU time read from `/proc` around each run through it (absent when the SUT runs on
//! another host). Neither kind writes an interval log or a timeline: their steps and runs are
//! in the record.

use std::sync::atomic::Ordering;

use gatebench_loadgen::capacity::{self, SearchSettings};
use gatebench_loadgen::{LoadConfig, StopRule};
use gatebench_model::{CellKind, LoadReport};
use gatebench_report::cost::CostSetup;

use super::measure::Sampling;
use super::start::{Backend, Started};
use super::{load_config, CellContext, CellEvent, CellOutput, CellRun, Effects, Phase};
use crate::error::RunnerError;
use crate::matrix::Cell;
use crate::sampler::{Window, Windows};

/// The load's side of a capacity or cost cell: runs it, samples the SUT, fills the record.
pub(super) fn run(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    mut started: Started,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    fx.phase(Phase::Measuring);
    let start_s = run.origin.elapsed().as_secs_f64();
    let sampling = Sampling::start(run, &mut started);
    let config = started.config.clone();
    let result = match run.cell.kind {
        CellKind::Capacity => capacity_search(run.ctx, fx, config, out),
        _ => {
            let sut_pid = started
                .target
                .remote
                .is_none()
                .then_some(started.target_pid);
            cost(run, fx, config, &started.backend, sut_pid, out)
        }
    };
    let samples = sampling.finish();
    let windows = Windows {
        load_start_s: start_s,
        warmup_s: 0.0,
        measurement_s: run.origin.elapsed().as_secs_f64() - start_s,
    };
    out.record.sut_measurement = windows.summarize(&samples, Window::Measurement);
    out.samples_csv = Some(windows.csv(&samples));
    result
}

/// One load through the driver; Ctrl-C during it ends the cell.
fn one_load(
    ctx: &CellContext<'_>,
    fx: &mut Effects<'_>,
    config: LoadConfig,
) -> Result<LoadReport, RunnerError> {
    let events = &mut *fx.events;
    let report = fx.driver.load(
        config,
        &mut |v| events(CellEvent::Interval(v)),
        ctx.stop.clone(),
        None,
    )?;
    if ctx.stop.load(Ordering::Relaxed) {
        return Err(RunnerError::Interrupted);
    }
    Ok(report)
}

fn capacity_search(
    ctx: &CellContext<'_>,
    fx: &mut Effects<'_>,
    config: LoadConfig,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    let c = ctx
        .suite
        .capacity
        .as_ref()
        .expect("a capacity cell is planned only when the suite has [capacity]");
    let start = match c.start {
        Some(s) => s,
        None => {
            let probe = one_load(ctx, fx, capacity::probe_config(&config))?;
            capacity::start_from_probe(probe.measurement.throughput_rps)
        }
    };
    let settings = SearchSettings {
        min_rate: c.min_rate,
        max_rate: c.max_rate,
        ..SearchSettings::new(
            c.slo.clone(),
            start,
            c.precision_percent / 100.0,
            c.max_steps,
        )
    };
    let url = config.target.url.clone();
    let report = capacity::search(
        &settings,
        &url,
        config.connections,
        |rate, _phase| {
            let step =
                capacity::step_config(&config, &c.slo, rate, c.warmup, c.step, Some(c.max_step));
            one_load(ctx, fx, step)
        },
        |s| {
            tracing::info!(
                "step {} ({}) at {:.0} req/s: p99 {:.3} ms, errors {:.3}% — {}",
                s.step,
                s.phase,
                s.rate,
                s.p99_ms,
                s.error_percent,
                if s.passed { "pass" } else { "fail" }
            );
        },
    )?;
    out.record.capacity = Some(report);
    Ok(())
}

/// The same open-model load straight to the back-end and through the SUT, interleaved;
/// `sut_pid` is the SUT's process group here (absent on another host).
fn cost(
    run: &CellRun<'_, '_>,
    fx: &mut Effects<'_>,
    via: LoadConfig,
    backend: &Backend,
    sut_pid: Option<u32>,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    let (ctx, cell, sc) = (run.ctx, run.cell, run.sc);
    let c = ctx
        .suite
        .cost
        .as_ref()
        .expect("a cost cell is planned only when the suite has [cost]");
    let port = backend
        .port
        .expect("a cost cell's scenario has a back-end (checked by the suite)");
    let direct_cell = Cell {
        protocol: backend.protocol,
        ..cell.clone()
    };
    let mut direct = load_config(ctx.suite, sc, &direct_cell, backend.addr, port)?;
    let mut via = via;
    for l in [&mut direct, &mut via] {
        l.warmup = c.warmup;
        l.stop = StopRule {
            duration: Some(c.duration),
            requests: None,
        };
    }
    // The direct path must answer as correctly as the one through the SUT.
    fx.driver.verify(&direct)?;
    let runs = gatebench_loadgen::cost::measure(
        &direct,
        &via,
        c.repeats,
        |l| one_load(ctx, fx, l.clone()),
        || Ok(sut_pid.and_then(group_cpu_s)),
        |r| {
            tracing::info!(
                "run {} ({}): p50 {:.3} ms, p99 {:.3} ms",
                r.order,
                r.path,
                r.percentiles_ms[0],
                r.percentiles_ms[2]
            )
        },
    )?;
    out.record.cost = Some(gatebench_report::cost::report(
        CostSetup {
            direct_url: direct.target.url.clone(),
            via_url: via.target.url.clone(),
            rate: c.rate,
            connections: via.connections,
            duration_s: c.duration.as_secs_f64(),
            repeats: c.repeats,
        },
        runs,
    ));
    Ok(())
}

/// CPU seconds (user + system) the processes of group `pgid` have used so far (the SUT and
/// any workers it forked, as the sampler counts them); `None` when the group is gone.
fn group_cpu_s(pgid: u32) -> Option<f64> {
    let ticks = match procfs::ticks_per_second() {
        0 => 100.0,
        t => t as f64,
    };
    let all = procfs::process::all_processes().ok()?;
    let mut total = 0u64;
    let mut found = false;
    for p in all.filter_map(Result::ok) {
        let Ok(st) = p.stat() else { continue };
        if st.pid as u32 == pgid || st.pgrp as u32 == pgid {
            total += st.utime + st.stime;
            found = true;
        }
    }
    found.then(|| total as f64 / ticks)
}
