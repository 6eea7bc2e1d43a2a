//! The capacity search: the highest open-model rate a target sustains within a latency and
//! error objective (`gatebench load URL --find-max --slo 'p99<10ms,errors<0.1%'`).
//!
//! The search only decides which rate to try next; running a step is the caller's closure, so
//! the arithmetic is tested against a modelled target and the real thing runs
//! [`crate::run()`]. Its shape:
//!
//! 1. **Bracket.** From the starting rate, up by a factor (default 1.5) while steps pass, or
//!    down while they fail, until one passing rate sits below a failing one.
//! 2. **Bisect** between them (geometric midpoints) until the failing rate is within the
//!    precision (default 2 %) of the passing one.
//! 3. **Confirm**: the failing bound runs again. On a shared machine a stall of the machine
//!    (not the target) can push one step's tail past the objective; that noise only ever fails
//!    steps, and one false failure would end the search below the limit (three searches of one
//!    echo spread 59 % before this step). If it passes the second time, it was noise: it
//!    becomes the passing bound and the search goes on above it (at most three confirms).
//! 4. **Check**: the answer runs again. If it fails the second time, it was luck: it becomes
//!    the failing bound and the search goes on below it (at most three checks in all).
//!
//! A step passes when every objective holds on the corrected latency (a percentile that is a
//! lower bound fails: the true value is at least that), its error % is under the limit, and the
//! generator sent at least 99 % of the schedule (otherwise every connection was busy and the
//! rate was never offered). A step whose self-check says the generator was the bottleneck
//! stops the search: what lies above is unknown, and the answer is a lower bound.

use std::fmt;
use std::time::Duration;

use gatebench_model::{
    CapacityReport, CapacityStep, CapacityVerdict, LoadReport, PERCENTILES, SCHEMA_VERSION,
};

use crate::bounds::{parse_duration, MAX_RATE, MIN_RATE};
use crate::{Arrival, LoadConfig, StopRule};

/// One objective of an SLO.
#[derive(Clone, Debug, PartialEq)]
pub enum Objective {
    /// The corrected latency at percentile `p` below `limit`.
    Latency {
        /// Percentile, one of [`PERCENTILES`].
        p: f64,
        /// Exclusive upper limit.
        limit: Duration,
    },
    /// Error % below `percent`.
    Errors {
        /// Exclusive upper limit, percent.
        percent: f64,
    },
}

/// A service-level objective: every objective must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    /// The objectives, in the order given.
    pub objectives: Vec<Objective>,
    /// The text as given, for the record.
    pub text: String,
}

/// Why an SLO was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SloError(String);

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SloError {}

impl std::str::FromStr for Slo {
    type Err = SloError;

    /// Parses `p99<10ms,errors<0.1%`: comma-separated `pNN<DURATION` (NN one of the reported
    /// percentiles) and `errors<N%`.
    fn from_str(text: &str) -> Result<Slo, SloError> {
        let bad = |m: String| SloError(m);
        let mut objectives = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (name, value) = part.split_once('<').ok_or_else(|| {
                bad(format!(
                    "'{part}': expected NAME<LIMIT, e.g. p99<10ms or errors<0.1%"
                ))
            })?;
            let (name, value) = (name.trim(), value.trim());
            if name == "errors" {
                let n = value
                    .strip_suffix('%')
                    .ok_or_else(|| {
                        bad(format!(
                            "'{part}': the error limit is a percentage, e.g. errors<0.1%"
                        ))
                    })?
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| bad(format!("'{part}': '{value}' is not a percentage")))?;
                if !(n > 0.0 && n <= 100.0) {
                    return Err(bad(format!(
                        "'{part}': the error limit must be above 0% and at most 100%"
                    )));
                }
                objectives.push(Objective::Errors { percent: n });
            } else if let Some(p) = name.strip_prefix('p') {
                let p = p
                    .parse::<f64>()
                    .ok()
                    .filter(|p| PERCENTILES.iter().any(|q| (q - p).abs() < 1e-9))
                    .ok_or_else(|| {
                        bad(format!(
                            "'{part}': '{name}' is not a reported percentile (p25, p50, p75, p90, \
                             p95, p99, p99.9, p99.99, p99.999, p100)"
                        ))
                    })?;
                let limit = parse_duration(value).map_err(|e| bad(format!("'{part}': {e}")))?;
                if limit.is_zero() {
                    return Err(bad(format!("'{part}': the limit must be above zero")));
                }
                objectives.push(Objective::Latency { p, limit });
            } else {
                return Err(bad(format!(
                    "'{part}': unknown objective '{name}' (pNN<DURATION or errors<N%)"
                )));
            }
        }
        Ok(Slo {
            objectives,
            text: text.trim().to_owned(),
        })
    }
}

impl Slo {
    /// Whether `r` meets every objective, and if not, the first that failed in words.
    pub fn judge(&self, r: &LoadReport) -> Result<(), String> {
        let m = &r.measurement;
        if let Some(kept) = r.self_check.schedule_kept_percent {
            if kept < 99.0 {
                return Err(format!(
                    "only {kept:.1}% of the schedule was sent: every connection was busy"
                ));
            }
        }
        for o in &self.objectives {
            match o {
                Objective::Latency { p, limit } => {
                    let limit_ms = limit.as_secs_f64() * 1e3;
                    let Some(point) = m.latency.point(*p) else {
                        return Err(format!("no latency at p{p}: nothing was answered"));
                    };
                    if point.ms >= limit_ms || point.lower_bound {
                        return Err(format!(
                            "p{p} {}{:.3} ms ≥ {limit_ms} ms",
                            if point.lower_bound { "≥ " } else { "" },
                            point.ms
                        ));
                    }
                }
                Objective::Errors { percent } => {
                    if m.error_percent >= *percent {
                        return Err(format!("errors {:.3}% ≥ {percent}%", m.error_percent));
                    }
                }
            }
        }
        Ok(())
    }

    /// The strictest latency percentile named (for the step length and the knee); p99 when
    /// the objective names none.
    pub fn strictest_percentile(&self) -> f64 {
        self.objectives
            .iter()
            .filter_map(|o| match o {
                Objective::Latency { p, .. } => Some(*p),
                Objective::Errors { .. } => None,
            })
            .reduce(f64::max)
            .unwrap_or(99.0)
    }

    /// The shortest measurement that holds enough requests beyond the strictest percentile to
    /// trust it (50 of them: 5,000 requests for p99) at `rate`, but never less than `at_least`.
    pub fn step_length(&self, rate: f64, at_least: Duration) -> Duration {
        let q = self.strictest_percentile().min(99.99);
        let needed = 50.0 / (1.0 - q / 100.0);
        let secs = (needed / rate).min(3600.0);
        at_least.max(Duration::from_secs_f64(secs))
    }
}

/// How the search proceeds.
#[derive(Clone, Debug)]
pub struct SearchSettings {
    /// The objective.
    pub slo: Slo,
    /// The first rate tried, requests/s.
    pub start: f64,
    /// Bracketing factor (> 1).
    pub growth: f64,
    /// Stop bisecting when the failing rate is within this fraction of the passing one.
    pub precision: f64,
    /// Most steps in all (the check included).
    pub max_steps: u32,
    /// The lowest rate the search tries, requests/s (at least [`MIN_RATE`]): when it fails,
    /// nothing was met.
    pub min_rate: f64,
    /// The highest rate the search tries, requests/s (at most [`MAX_RATE`]): when it passes,
    /// the answer is "at least this".
    pub max_rate: f64,
}

impl SearchSettings {
    /// The search from `start` with the defaults of `gatebench load --find-max`: growth 1.5,
    /// rates from [`MIN_RATE`] to [`MAX_RATE`].
    pub fn new(slo: Slo, start: f64, precision: f64, max_steps: u32) -> SearchSettings {
        SearchSettings {
            slo,
            start,
            growth: 1.5,
            precision,
            max_steps,
            min_rate: MIN_RATE,
            max_rate: MAX_RATE,
        }
    }
}

/// The load of one step at `rate`: `base` in the open model at `rate`, after `warmup`,
/// measured for [`Slo::step_length`] at `rate` (at least `at_least`, and at most `at_most`
/// when given: a cap on a step's length trades trust in the strictest percentile for time).
pub fn step_config(
    base: &LoadConfig,
    slo: &Slo,
    rate: f64,
    warmup: Duration,
    at_least: Duration,
    at_most: Option<Duration>,
) -> LoadConfig {
    let mut c = base.clone();
    let length = slo.step_length(rate, at_least);
    c.arrival = Arrival::Open { rate };
    c.warmup = warmup;
    c.stop = StopRule {
        duration: Some(at_most.map_or(length, |m| length.min(m.max(at_least)))),
        requests: None,
    };
    c
}

/// The closed-model load whose throughput sets the first step when none is given: `base`
/// with its connections, 0.5 s of warm-up and 2 s measured. Its throughput bounds what the
/// open model can be offered with the same connections; [`start_from_probe`] takes half.
pub fn probe_config(base: &LoadConfig) -> LoadConfig {
    let mut c = base.clone();
    c.arrival = Arrival::Closed;
    c.warmup = PROBE_WARMUP;
    c.stop = StopRule {
        duration: Some(PROBE_LENGTH),
        requests: None,
    };
    c
}

/// Warm-up of [`probe_config`].
pub const PROBE_WARMUP: Duration = Duration::from_millis(500);

/// Measurement of [`probe_config`].
pub const PROBE_LENGTH: Duration = Duration::from_secs(2);

/// The first step's rate from the closed-model probe's throughput: half of it, a safe start.
pub fn start_from_probe(throughput_rps: f64) -> f64 {
    (throughput_rps / 2.0).max(1.0)
}

/// Runs the search. `step(rate, phase)` runs one step and returns its record; an error aborts
/// the search. `on_step` sees each step as it is judged (for progress lines).
pub fn search<E>(
    settings: &SearchSettings,
    url: &str,
    connections: u32,
    mut step: impl FnMut(f64, &str) -> Result<LoadReport, E>,
    mut on_step: impl FnMut(&CapacityStep),
) -> Result<CapacityReport, E> {
    let mut steps: Vec<CapacityStep> = Vec::new();
    let mut lo: Option<f64> = None; // highest rate that passed
    let mut hi: Option<f64> = None; // lowest rate that failed
    let mut verdict = None;
    let min_rate = settings.min_rate.max(MIN_RATE);
    let max_rate = settings.max_rate.clamp(min_rate, MAX_RATE);
    let mut rate = settings.start.clamp(min_rate, max_rate);
    // A run of lucky passes cannot keep the search going for ever.
    let mut checks_left = 3u32;
    // Nor a run of false failures (see "confirm" below).
    let mut confirms_left = 3u32;
    let mut run =
        |rate: f64, phase: &str, steps: &mut Vec<CapacityStep>| -> Result<(bool, bool), E> {
            let r = step(rate, phase)?;
            let judged = settings.slo.judge(&r);
            let s = step_record(steps.len() as u32 + 1, phase, rate, &r, &judged);
            let bound = !s.generator_warnings.is_empty();
            on_step(&s);
            let passed = s.passed;
            steps.push(s);
            Ok((passed, bound))
        };
    loop {
        if steps.len() as u32 >= settings.max_steps {
            verdict = verdict.or(Some(CapacityVerdict::StepLimit));
            break;
        }
        let phase = match (lo, hi) {
            (Some(_), Some(_)) => "bisect",
            _ => "bracket",
        };
        let (passed, bound) = run(rate, phase, &mut steps)?;
        if bound {
            // A pass despite the generator's own trouble still shows the target sustains the
            // rate (the trouble only adds latency): a lower bound for the answer.
            if passed {
                lo = Some(lo.map_or(rate, |l: f64| l.max(rate)));
            }
            verdict = Some(CapacityVerdict::GeneratorBound);
            break;
        }
        if passed {
            lo = Some(lo.map_or(rate, |l: f64| l.max(rate)));
        } else {
            hi = Some(hi.map_or(rate, |h: f64| h.min(rate)));
        }
        match (lo, hi) {
            (None, Some(h)) => {
                if h <= min_rate * 1.0001 {
                    verdict = Some(CapacityVerdict::NoneMet);
                    break;
                }
                rate = (h / settings.growth).max(min_rate);
            }
            (Some(l), None) => {
                if l >= max_rate * 0.9999 {
                    verdict = Some(CapacityVerdict::Found);
                    break;
                }
                rate = (l * settings.growth).min(max_rate);
            }
            (Some(l), Some(h)) => {
                if (h - l) / l <= settings.precision
                    && confirms_left > 0
                    && steps.iter().filter(|s| !s.passed && s.rate == h).count() < 2
                    && (steps.len() as u32) < settings.max_steps
                {
                    // The failing bound again: on a shared machine a stall of the machine, not
                    // of the target, can push one step's tail past the objective, and such
                    // noise only ever fails steps. A false failure would end the search below
                    // the limit; a real one fails again.
                    confirms_left -= 1;
                    let (passed, bound) = run(h, "confirm", &mut steps)?;
                    if bound {
                        if passed {
                            lo = Some(h);
                        }
                        verdict = Some(CapacityVerdict::GeneratorBound);
                        break;
                    }
                    if passed {
                        // It was noise: the limit lies above it, below the lowest failure
                        // above it. That failure may be noise too: it is confirmed in turn
                        // when the search closes in on it. Bracketing upwards past it instead
                        // would overload the target far beyond its limit, and a target needs
                        // time to recover from that (backlogs, pauses for CPU quota), which
                        // the next steps would pay for.
                        lo = Some(h);
                        hi = steps
                            .iter()
                            .filter(|s| !s.passed && s.rate > h)
                            .map(|s| s.rate)
                            .reduce(f64::min);
                        rate = match hi {
                            Some(x) => (h * x).sqrt(),
                            None if h >= max_rate * 0.9999 => {
                                verdict = Some(CapacityVerdict::Found);
                                break;
                            }
                            None => (h * settings.growth).min(max_rate),
                        };
                        continue;
                    }
                }
                if (h - l) / l <= settings.precision {
                    // Found once the answer has passed twice: as a step and as its check.
                    if steps.iter().filter(|s| s.passed && s.rate == l).count() >= 2 {
                        verdict = Some(CapacityVerdict::Found);
                        break;
                    }
                    if checks_left == 0 {
                        verdict = Some(CapacityVerdict::StepLimit);
                        break;
                    }
                    checks_left -= 1;
                    // The answer again: a pass by luck does not survive a second run.
                    if steps.len() as u32 >= settings.max_steps {
                        verdict = Some(CapacityVerdict::StepLimit);
                        break;
                    }
                    let (passed, bound) = run(l, "check", &mut steps)?;
                    if bound {
                        verdict = Some(CapacityVerdict::GeneratorBound);
                        break;
                    }
                    if passed {
                        verdict = Some(CapacityVerdict::Found);
                        break;
                    }
                    // It failed this time: the limit lies below it.
                    hi = Some(l);
                    let below = steps
                        .iter()
                        .filter(|s| s.passed && s.rate < l)
                        .map(|s| s.rate)
                        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
                    lo = below;
                    rate = match below {
                        Some(b) => (b * l).sqrt(),
                        None => (l / settings.growth).max(min_rate),
                    };
                    continue;
                }
                rate = (l * h).sqrt();
            }
            (None, None) => unreachable!("every step passes or fails"),
        }
    }
    let verdict = verdict.unwrap_or(CapacityVerdict::StepLimit);
    let max_rate = lo;
    let failed_rate = hi.filter(|h| lo.is_none_or(|l| *h > l));
    Ok(CapacityReport {
        schema_version: SCHEMA_VERSION,
        url: url.to_owned(),
        slo: settings.slo.text.clone(),
        connections,
        knee_rate: knee(&steps, settings.slo.strictest_percentile()),
        uncertainty_percent: match (max_rate, failed_rate) {
            (Some(l), Some(h)) => Some((h - l) / l * 100.0),
            _ => None,
        },
        steps,
        verdict: if max_rate.is_none() && verdict == CapacityVerdict::Found {
            CapacityVerdict::NoneMet
        } else {
            verdict
        },
        max_rate,
        failed_rate,
    })
}

fn step_record(
    n: u32,
    phase: &str,
    rate: f64,
    r: &LoadReport,
    judged: &Result<(), String>,
) -> CapacityStep {
    let m = &r.measurement;
    let at = |p| m.latency.at(p).unwrap_or(f64::NAN);
    CapacityStep {
        step: n,
        phase: phase.to_owned(),
        rate,
        duration_s: m.duration_s,
        sent_rps: m.sent_rps,
        throughput_rps: m.throughput_rps,
        p50_ms: at(50.0),
        p99_ms: at(99.0),
        p999_ms: at(99.9),
        error_percent: m.error_percent,
        passed: judged.is_ok(),
        reason: judged.clone().err().unwrap_or_default(),
        generator_warnings: r.self_check.warnings.clone(),
    }
}

/// The knee of latency against rate (Kneedle, Satopää et al. 2011): over the steps sorted by
/// rate, both axes scaled to 0–1, the point farthest above the chord from the first to the
/// last, where the curve is convex and increasing. `None` with fewer than three rates.
pub fn knee(steps: &[CapacityStep], p: f64) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| {
            let y = if (p - 99.9).abs() < 1e-9 {
                s.p999_ms
            } else if (p - 50.0).abs() < 1e-9 {
                s.p50_ms
            } else {
                s.p99_ms
            };
            (s.rate, y)
        })
        .filter(|(_, y)| y.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-9);
    if pts.len() < 3 {
        return None;
    }
    let (x0, x1) = (pts[0].0, pts[pts.len() - 1].0);
    let (ymin, ymax) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if x1 <= x0 || ymax <= ymin {
        return None;
    }
    // Convex increasing: the knee is where the scaled curve falls farthest below the chord
    // (x = y), i.e. where x − y is largest.
    pts.iter()
        .map(|(x, y)| {
            let xn = (x - x0) / (x1 - x0);
            let yn = (y - ymin) / (ymax - ymin);
            (xn - yn, *x)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(d, _)| *d > 0.0)
        .map(|(_, x)| x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::{LatencySummary, OutcomeCounts, Percentile, PhaseReport};

    /// A modelled target with a hard capacity `cap`: p99 grows as 1 ms ÷ (1 − rate/cap) below
    /// it and the schedule is no longer kept above it.
    fn modelled(cap: f64, rate: f64, generator_bound_above: f64) -> LoadReport {
        let load = rate / cap;
        let p99 = if load < 1.0 {
            1.0 / (1.0 - load)
        } else {
            5_000.0
        };
        let mut r = gatebench_testkit::records::load_report(
            10,
            0,
            None,
            PhaseReport {
                duration_s: 5.0,
                outcomes: OutcomeCounts::default(),
                requests: (rate * 5.0) as u64,
                throughput_rps: rate.min(cap),
                ok_rps: rate.min(cap),
                error_percent: 0.0,
                target_rps: Some(rate),
                sent_rps: rate.min(cap),
                bytes_read: 0,
                bytes_written: 0,
                latency: LatencySummary {
                    count: 1000,
                    percentiles: [(50.0, p99 / 4.0), (99.0, p99), (99.9, p99 * 2.0)]
                        .into_iter()
                        .map(|(p, ms)| Percentile {
                            p,
                            ms,
                            lower_bound: false,
                        })
                        .collect(),
                    ..LatencySummary::default()
                },
                latency_answered: None,
                latency_uncorrected: None,
                concurrency: 1.0,
                connections: Default::default(),
                histograms: None,
            },
            true,
        );
        r.self_check.schedule_kept_percent = Some(if load <= 1.0 { 100.0 } else { 100.0 / load });
        if rate > generator_bound_above {
            r.self_check.warnings = vec!["the generator's worker threads were 99% busy".into()];
            r.valid = false;
        }
        r
    }

    fn settings(slo: &str, start: f64) -> SearchSettings {
        SearchSettings::new(slo.parse().unwrap(), start, 0.02, 40)
    }

    /// p99 < 10 ms holds below 90 % of the capacity: the answer is 9,000 req/s of a 10,000
    /// capacity, found from below and from above, within the precision, and checked.
    #[test]
    fn the_search_finds_the_rate_where_the_objective_breaks() {
        for start in [500.0, 9_000.0, 40_000.0] {
            let r = search(
                &settings("p99<10ms,errors<0.1%", start),
                "http://t/",
                10,
                |rate, _| Ok::<_, ()>(modelled(10_000.0, rate, f64::MAX)),
                |_| {},
            )
            .unwrap();
            assert_eq!(r.verdict, CapacityVerdict::Found, "{r:#?}");
            let max = r.max_rate.unwrap();
            let failed = r.failed_rate.unwrap();
            assert!(
                max < 9_000.0 && failed >= 9_000.0,
                "from {start}: {max} .. {failed}"
            );
            assert!(
                (failed - max) / max <= 0.02,
                "from {start}: {max} .. {failed}"
            );
            assert!(r.uncertainty_percent.unwrap() <= 2.0);
            let last = r.steps.last().unwrap();
            assert_eq!(
                (last.phase.as_str(), last.rate, last.passed),
                ("check", max, true)
            );
            assert!(r.steps.len() < 20, "{} steps", r.steps.len());
        }
    }

    /// A step whose generator was the bottleneck ends the search; the answer is a lower bound:
    /// that step's own rate when it met the objective anyway (1,000 → 1,500 → 2,250 → 3,375,
    /// where the generator gives out above 3,000), else the last clean pass.
    #[test]
    fn a_generator_bound_step_stops_the_search() {
        let r = search(
            &settings("p99<10ms", 1_000.0),
            "http://t/",
            10,
            |rate, _| Ok::<_, ()>(modelled(100_000.0, rate, 3_000.0)),
            |_| {},
        )
        .unwrap();
        assert_eq!(r.verdict, CapacityVerdict::GeneratorBound);
        assert_eq!(r.max_rate, Some(3_375.0));
        assert!(!r.steps.last().unwrap().generator_warnings.is_empty());
        // A generator-bound step that failed the objective adds nothing.
        let r = search(
            &settings("p99<10ms", 1_000.0),
            "http://t/",
            10,
            |rate, _| Ok::<_, ()>(modelled(3_300.0, rate, 3_000.0)),
            |_| {},
        )
        .unwrap();
        assert_eq!(r.verdict, CapacityVerdict::GeneratorBound);
        assert_eq!(r.max_rate, Some(2_250.0));
    }

    /// A pass by luck at the answer fails its check: the search continues below and the
    /// answer is a rate that passed twice in a row at the end.
    #[test]
    fn the_check_catches_a_lucky_pass() {
        let mut lucky_used = false;
        let r = search(
            &settings("p99<10ms", 8_000.0),
            "http://t/",
            10,
            |rate, phase| {
                // From the first check on, the target is a little slower than before: the
                // answer had passed by luck.
                if phase == "check" {
                    lucky_used = true;
                }
                let cap = if lucky_used { 9_000.0 } else { 10_000.0 };
                Ok::<_, ()>(modelled(cap, rate, f64::MAX))
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(r.verdict, CapacityVerdict::Found, "{r:#?}");
        let checks: Vec<bool> = r
            .steps
            .iter()
            .filter(|s| s.phase == "check")
            .map(|s| s.passed)
            .collect();
        // The first check failed; the last one passed, at a rate the slower target sustains
        // (p99 < 10 ms below 90 % of 9,000 req/s).
        assert!(checks.len() >= 2 && !checks[0], "{checks:?}");
        assert_eq!(checks.last(), Some(&true));
        assert!(r.max_rate.unwrap() < 8_100.0, "{r:#?}");
    }

    /// A failure by noise (one step the machine stalled) is confirmed away: the search still
    /// ends at the limit, 9,000 req/s of a 10,000 req/s target.
    #[test]
    fn a_failure_by_noise_does_not_end_the_search_low() {
        let mut noisy = 0;
        let r = search(
            &settings("p99<10ms", 1_000.0),
            "http://t/",
            10,
            |rate, _| {
                // The first step above 6,000 req/s is hit by a stall of the machine.
                if rate > 6_000.0 && noisy == 0 {
                    noisy += 1;
                    return Ok::<_, ()>(modelled(1_000.0, rate, f64::MAX));
                }
                Ok(modelled(10_000.0, rate, f64::MAX))
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(r.verdict, CapacityVerdict::Found, "{r:#?}");
        let max = r.max_rate.unwrap();
        assert!((8_800.0..9_000.0).contains(&max), "{max}: {r:#?}");
        assert!(r.steps.iter().any(|s| s.phase == "confirm" && s.passed));
    }

    /// After a failure is confirmed away, the search closes in below the next failure above
    /// it rather than bracketing upwards past it: the target is overloaded once (the bracket
    /// that first failed), not again after every false failure.
    #[test]
    fn a_confirmed_away_failure_does_not_overload_the_target_again() {
        let mut noisy = false;
        let r = search(
            &settings("p99<10ms", 1_000.0),
            "http://t/",
            10,
            |rate, _| {
                // The first step between 8,000 and 8,800 req/s (a bisection below the limit)
                // is hit by a stall of the machine.
                if (8_000.0..8_800.0).contains(&rate) && !noisy {
                    noisy = true;
                    return Ok::<_, ()>(modelled(1_000.0, rate, f64::MAX));
                }
                Ok(modelled(10_000.0, rate, f64::MAX))
            },
            |_| {},
        )
        .unwrap();
        assert!(noisy, "the noise was never injected: {r:#?}");
        assert_eq!(r.verdict, CapacityVerdict::Found, "{r:#?}");
        assert!(r.steps.iter().any(|s| s.phase == "confirm" && s.passed));
        let max = r.max_rate.unwrap();
        assert!((8_800.0..9_000.0).contains(&max), "{max}: {r:#?}");
        let overloaded = r.steps.iter().filter(|s| s.rate > 10_000.0).count();
        assert_eq!(overloaded, 1, "{r:#?}");
    }

    #[test]
    fn nothing_met_is_said() {
        let r = search(
            &settings("p99<0.5ms", 1_000.0),
            "http://t/",
            10,
            |rate, _| Ok::<_, ()>(modelled(10_000.0, rate, f64::MAX)),
            |_| {},
        )
        .unwrap();
        assert_eq!(r.verdict, CapacityVerdict::NoneMet);
        assert_eq!(r.max_rate, None);
    }

    #[test]
    fn slo_forms_and_refusals() {
        let slo: Slo = "p99<10ms, p99.9<50ms,errors<0.1%".parse().unwrap();
        assert_eq!(slo.objectives.len(), 3);
        assert_eq!(slo.strictest_percentile(), 99.9);
        // 50 requests beyond p99.9: 50,000 requests, 5 s at 10k req/s.
        assert_eq!(
            slo.step_length(10_000.0, Duration::from_secs(2)),
            Duration::from_secs(5)
        );
        for (text, want) in [
            ("p98<10ms", "not a reported percentile"),
            ("p99>10ms", "expected NAME<LIMIT"),
            ("p99<soon", "soon"),
            ("p99<0ms", "above zero"),
            ("errors<5", "percentage"),
            ("errors<0%", "above 0%"),
            ("latency<3ms", "unknown objective 'latency'"),
        ] {
            let e = text.parse::<Slo>().expect_err(text).to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// The knee of a hockey stick is at its bend.
    #[test]
    fn the_knee_is_where_latency_turns_up() {
        let steps: Vec<CapacityStep> = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .zip([1.0, 1.1, 1.2, 1.3, 8.0, 30.0])
            .map(|(rate, p99)| CapacityStep {
                step: 0,
                phase: "bracket".into(),
                rate: *rate,
                duration_s: 1.0,
                sent_rps: *rate,
                throughput_rps: *rate,
                p50_ms: 1.0,
                p99_ms: p99,
                p999_ms: p99,
                error_percent: 0.0,
                passed: true,
                reason: String::new(),
                generator_warnings: vec![],
            })
            .collect();
        assert_eq!(knee(&steps, 99.0), Some(4.0));
    }
}
