//! `[capacity]` and `[cost]`: the settings of a suite's capacity cells (the capacity search,
//! "max rate within SLO", once per scenario and point) and cost cells (the intermediary's own
//! cost, for scenarios with `cost = true`), their validation and their resolved form.
//!
//! Running them is [`crate::cell`]'s; the search itself is `gatebench_loadgen::capacity` and
//! the measurement `gatebench_loadgen::cost`, as for `gatebench load --find-max` and
//! `gatebench cost`.

use std::time::Duration;

use gatebench_loadgen::bounds::{check_rate, parse_duration};
use gatebench_loadgen::capacity::Slo;

use super::raw::{RawCapacity, RawCost};
use super::Scenario;
use crate::error::RunnerError;

/// Most steps one search may be given: at `MAX_STEP` each, a search stays under an hour.
pub const MAX_STEPS: u32 = 30;

/// The longest a step may be asked to be.
pub const MAX_STEP: Duration = Duration::from_secs(120);

/// The capacity search of every scenario (`[capacity]`).
#[derive(Clone, Debug, PartialEq)]
pub struct CapacitySettings {
    /// The objective.
    pub slo: Slo,
    /// The first rate; `None`: half a closed-model probe's throughput (as `--find-max`).
    pub start: Option<f64>,
    /// The lowest rate tried, requests/s.
    pub min_rate: f64,
    /// The highest rate tried, requests/s.
    pub max_rate: f64,
    /// The shortest measurement of a step (a step at a low rate is longer: enough requests
    /// beyond the objective's strictest percentile, up to `max_step`).
    pub step: Duration,
    /// The longest measurement of a step.
    pub max_step: Duration,
    /// Warm-up before every step.
    pub warmup: Duration,
    /// Stop bisecting when the failing rate is within this percentage of the passing one.
    pub precision_percent: f64,
    /// Most steps of one search, its checks included: the search's time is bounded by
    /// `max_steps × (warmup + max_step)` plus the probe.
    pub max_steps: u32,
}

impl CapacitySettings {
    /// The longest one search can take (its cell's processes aside): every step at its
    /// longest, plus the closed-model probe when no start is given.
    pub fn longest(&self) -> Duration {
        let probe = if self.start.is_none() {
            gatebench_loadgen::capacity::PROBE_WARMUP + gatebench_loadgen::capacity::PROBE_LENGTH
        } else {
            Duration::ZERO
        };
        (self.warmup + self.max_step).saturating_mul(self.max_steps) + probe
    }
}

/// How the intermediary's cost is measured (`[cost]`).
#[derive(Clone, Debug, PartialEq)]
pub struct CostSettings {
    /// The open-model rate of every run, requests/s.
    pub rate: f64,
    /// Runs of each path.
    pub repeats: u32,
    /// Measurement of every run.
    pub duration: Duration,
    /// Warm-up of every run.
    pub warmup: Duration,
}

impl CostSettings {
    /// How long one measurement takes (its cell's processes aside).
    pub fn length(&self) -> Duration {
        (self.warmup + self.duration).saturating_mul(2 * self.repeats)
    }
}

/// `[cost] rate` when none is given: low enough for any intermediary on a small machine, so
/// that what is measured is its cost and not its queue.
pub const DEFAULT_COST_RATE: f64 = 1000.0;

fn bad(key: &str, problem: impl Into<String>) -> RunnerError {
    RunnerError::SuiteValue {
        key: key.to_owned(),
        problem: problem.into(),
    }
}

fn duration(key: &str, v: &Option<String>, default: Duration) -> Result<Duration, RunnerError> {
    match v {
        Some(v) => parse_duration(v).map_err(|e| bad(key, e.to_string())),
        None => Ok(default),
    }
}

/// Validates `[capacity]`.
pub(super) fn validate_capacity(r: &RawCapacity) -> Result<CapacitySettings, RunnerError> {
    let text = r.slo.as_deref().ok_or_else(|| {
        bad(
            "[capacity] slo",
            "is missing (e.g. slo = \"p99<10ms,errors<0.1%\")",
        )
    })?;
    let slo: Slo = text
        .parse()
        .map_err(|e: gatebench_loadgen::capacity::SloError| bad("[capacity] slo", e.to_string()))?;
    let rate = |key: &str, v: Option<f64>| -> Result<Option<f64>, RunnerError> {
        v.map(|r| check_rate(r).map(|_| r).map_err(|e| bad(key, e)))
            .transpose()
    };
    let start = rate("[capacity] start", r.start)?;
    let min_rate = rate("[capacity] min_rate", r.min_rate)?.unwrap_or(1.0);
    let max_rate = rate("[capacity] max_rate", r.max_rate)?.unwrap_or(1e6);
    if min_rate >= max_rate {
        return Err(bad(
            "[capacity] min_rate",
            format!("must be below max_rate ({max_rate}), got {min_rate}"),
        ));
    }
    if let Some(s) = start {
        if !(min_rate..=max_rate).contains(&s) {
            return Err(bad(
                "[capacity] start",
                format!("must be from min_rate ({min_rate}) to max_rate ({max_rate}), got {s}"),
            ));
        }
    }
    let step = duration("[capacity] step", &r.step, Duration::from_secs(2))?;
    if step < Duration::from_millis(100) || step > MAX_STEP {
        return Err(bad(
            "[capacity] step",
            format!(
                "must be from 100ms to {}",
                humantime::format_duration(MAX_STEP)
            ),
        ));
    }
    let max_step = duration(
        "[capacity] max_step",
        &r.max_step,
        step.max(Duration::from_secs(10)),
    )?;
    if max_step < step || max_step > MAX_STEP {
        return Err(bad(
            "[capacity] max_step",
            format!(
                "must be from step ({}) to {}",
                humantime::format_duration(step),
                humantime::format_duration(MAX_STEP)
            ),
        ));
    }
    let warmup = duration("[capacity] warmup", &r.warmup, Duration::from_secs(1))?;
    if warmup > MAX_STEP {
        return Err(bad(
            "[capacity] warmup",
            format!("must be at most {}", humantime::format_duration(MAX_STEP)),
        ));
    }
    let precision = r.precision.unwrap_or(5.0);
    if !(precision.is_finite() && precision > 0.0 && precision <= 50.0) {
        return Err(bad(
            "[capacity] precision",
            format!("must be above 0 and at most 50 (percent), got {precision}"),
        ));
    }
    let max_steps = r.max_steps.unwrap_or(15);
    if !(2..=MAX_STEPS).contains(&max_steps) {
        return Err(bad(
            "[capacity] max_steps",
            format!("must be from 2 to {MAX_STEPS}, got {max_steps}"),
        ));
    }
    Ok(CapacitySettings {
        slo,
        start,
        min_rate,
        max_rate,
        step,
        max_step,
        warmup,
        precision_percent: precision,
        max_steps,
    })
}

/// Validates `[cost]`; the suite's warm-up and duration are the defaults.
pub(super) fn validate_cost(
    r: &RawCost,
    warmup: Duration,
    length: Duration,
) -> Result<CostSettings, RunnerError> {
    let rate = r.rate.unwrap_or(DEFAULT_COST_RATE);
    check_rate(rate).map_err(|e| bad("[cost] rate", e))?;
    let repeats = r.repeats.unwrap_or(3);
    if !(2..=100).contains(&repeats) {
        return Err(bad(
            "[cost] repeats",
            format!("must be from 2 to 100 (an interval needs repeats), got {repeats}"),
        ));
    }
    let run_length = duration("[cost] duration", &r.duration, length)?;
    if run_length.is_zero() {
        return Err(bad("[cost] duration", "must be more than 0"));
    }
    let warmup = duration("[cost] warmup", &r.warmup, warmup)?;
    Ok(CostSettings {
        rate,
        repeats,
        duration: run_length,
        warmup,
    })
}

/// Sets a scenario's `capacity` and `cost`: a capacity search by default when the suite has
/// `[capacity]`; `capacity = true` without one, or `cost = true` on a scenario that is not an
/// intermediary (a `sut` in front of a `backend`), is refused.
pub(super) fn scenario_flags(
    sc: &mut Scenario,
    suite_has_capacity: bool,
    capacity: Option<bool>,
    cost: bool,
) -> Result<(), RunnerError> {
    let key = |k: &str| format!("scenario \"{}\": {k}", sc.name);
    if capacity == Some(true) && !suite_has_capacity {
        return Err(bad(
            &key("capacity"),
            "the suite has no [capacity] table (give its slo, e.g. [capacity] slo = \"p99<10ms\")",
        ));
    }
    if cost && (sc.sut.is_none() || sc.backend.is_none()) {
        return Err(bad(
            &key("cost"),
            "cost = true needs an intermediary: a sut in front of a backend (its cost is the \
             load through the sut against the same load straight to the backend)",
        ));
    }
    sc.capacity = suite_has_capacity && capacity.unwrap_or(true);
    sc.cost = cost;
    Ok(())
}

/// `[capacity]` as the resolved suite writes it.
pub(super) fn raw_capacity(c: &CapacitySettings) -> RawCapacity {
    let fmt = |d: Duration| Some(humantime::format_duration(d).to_string());
    RawCapacity {
        slo: Some(c.slo.text.clone()),
        start: c.start,
        min_rate: Some(c.min_rate),
        max_rate: Some(c.max_rate),
        step: fmt(c.step),
        max_step: fmt(c.max_step),
        warmup: fmt(c.warmup),
        precision: Some(c.precision_percent),
        max_steps: Some(c.max_steps),
    }
}

/// `[cost]` as the resolved suite writes it.
pub(super) fn raw_cost(c: &CostSettings) -> RawCost {
    let fmt = |d: Duration| Some(humantime::format_duration(d).to_string());
    RawCost {
        rate: Some(c.rate),
        repeats: Some(c.repeats),
        duration: fmt(c.duration),
        warmup: fmt(c.warmup),
    }
}
