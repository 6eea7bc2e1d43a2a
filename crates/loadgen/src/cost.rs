//! The intermediary's cost, measured: the same open-model load sent to a back-end directly and
//! through an intermediary, alternating (direct, via, via, direct, …, so that slow drift of
//! the machine hits both paths alike), each run reduced to a [`CostRun`]. Used by `gatebench
//! cost` and by a suite's cost cells.
//!
//! Running a load and reading the intermediary's CPU time are the caller's closures (the CLI
//! runs [`crate::run()`] and reads `/proc`; a suite goes through its driver and samples the
//! SUT's process group). The statistics over the runs — the added latency per percentile and
//! its interval — are not computed here (see `gatebench-report`'s `cost` module).

use gatebench_model::{CostRun, LoadReport, COST_PERCENTILES};

use crate::LoadConfig;

/// Runs `repeats` rounds of both paths and returns every run in the order it ran.
///
/// `run` runs one load and returns its record; `cpu` reads the intermediary's CPU seconds so
/// far (`None` when it cannot be read), called just before and just after each run through
/// it; `on_run` sees each run as it ends. An error from either closure ends the measurement.
pub fn measure<E>(
    direct: &LoadConfig,
    via: &LoadConfig,
    repeats: u32,
    mut run: impl FnMut(&LoadConfig) -> Result<LoadReport, E>,
    mut cpu: impl FnMut() -> Result<Option<f64>, E>,
    mut on_run: impl FnMut(&CostRun),
) -> Result<Vec<CostRun>, E> {
    let mut runs = Vec::new();
    let mut order = 0;
    for repeat in 1..=repeats {
        // direct, via, via, direct, …: each path goes first as often as second.
        let paths = if repeat % 2 == 1 {
            ["direct", "via"]
        } else {
            ["via", "direct"]
        };
        for path in paths {
            let (config, through) = if path == "direct" {
                (direct, false)
            } else {
                (via, true)
            };
            let cpu0 = if through { cpu()? } else { None };
            let r = run(config)?;
            // The whole run's CPU (warm-up included) over the whole run's responses.
            let cpu_s = match cpu0 {
                Some(c0) => cpu()?.map(|c1| (c1 - c0).max(0.0)),
                None => None,
            };
            let m = &r.measurement;
            let responses_all =
                m.outcomes.responses() + r.warmup.as_ref().map_or(0, |w| w.outcomes.responses());
            order += 1;
            let one = CostRun {
                order,
                path: path.to_owned(),
                repeat,
                percentiles_ms: COST_PERCENTILES
                    .iter()
                    .map(|p| m.latency.at(*p).unwrap_or(f64::NAN))
                    .collect(),
                responses: m.outcomes.responses(),
                throughput_rps: m.throughput_rps,
                error_percent: m.error_percent,
                // Scaled to the measurement's share of the answers, so that CPU per request
                // divides like for like.
                intermediary_cpu_s: cpu_s
                    .map(|c| c * m.outcomes.responses() as f64 / (responses_all.max(1)) as f64),
                valid: r.valid,
            };
            on_run(&one);
            runs.push(one);
        }
    }
    Ok(runs)
}
