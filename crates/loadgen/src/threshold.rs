//! Thresholds (`--threshold`): pass/fail conditions on a run's figures, k6's idea in gatebench's
//! terms. The rule: a threshold is judged on what the run measured and never on less; a window
//! is judged only once it is full, a percentile that is a lower bound holds only if the bound
//! already satisfies it, and an `abort` stops the schedule (what was sent still finishes) and
//! keeps everything measured up to then.
//!
//! A threshold is `METRIC OP LIMIT [over DURATION] [abort]`:
//! - `pNN` (a reported percentile of the corrected latency) with a duration: `p99<50ms`;
//! - `errors` with a percentage of the finished requests: `errors<0.1%`;
//! - `rate` (responses per second) with a number or a fraction of the open model's target:
//!   `rate>=4500`, `rate>=0.99*target`;
//! - `OP` one of `<`, `<=`, `>`, `>=`.
//!
//! Without `over`, the threshold is judged on the whole measurement when the run ends (and,
//! with `abort`, on the measurement so far, once a second). With `over W`, it is also judged
//! every second on the last `W` of the measurement, once `W` has passed: every window must hold,
//! and so must the whole measurement.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use gatebench_model::histogram::{add, new_histogram, LatencyHistogram};
use gatebench_model::{LoadReport, OutcomeCounts, ThresholdResult, PERCENTILES};

use crate::bounds::parse_duration;

/// Most thresholds one run takes.
pub const MAX_THRESHOLDS: usize = 32;

/// Longest window (`over`).
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// What a threshold looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// The corrected latency at percentile `p`.
    Latency(f64),
    /// Errors, percent of the finished requests.
    Errors,
    /// Responses per second.
    Rate,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }

    /// Whether a larger value is the bad direction (latency below a limit).
    fn wants_small(self) -> bool {
        matches!(self, Op::Lt | Op::Le)
    }
}

/// The right-hand side of a threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Milliseconds.
    Millis(f64),
    /// Percent.
    Percent(f64),
    /// Responses per second.
    Rate(f64),
    /// A fraction of the open model's target rate.
    OfTarget(f64),
}

/// One threshold, as parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// The text as given (trimmed), for the record and messages.
    pub text: String,
    /// What it looks at.
    pub metric: Metric,
    /// The comparison.
    pub op: Op,
    /// The limit.
    pub limit: Limit,
    /// `over W`: also judged on every full window of this length.
    pub over: Option<Duration>,
    /// `abort`: a breach stops the run.
    pub abort: bool,
}

/// Why a threshold was refused: one line naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThresholdError(pub String);

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ThresholdError {}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(s: &str) -> Result<Threshold, ThresholdError> {
        let text = s.split_whitespace().collect::<Vec<_>>().join(" ");
        let bad = |m: String| ThresholdError(format!("threshold '{text}': {m}"));
        let mut words: Vec<&str> = text.split(' ').collect();
        let abort = words.last() == Some(&"abort");
        if abort {
            words.pop();
        }
        let over = match words.iter().position(|w| *w == "over") {
            Some(i) => {
                if i + 2 != words.len() {
                    return Err(bad("'over' takes one duration, e.g. over 10s".into()));
                }
                let d = parse_duration(words[i + 1]).map_err(|e| bad(format!("over: {e}")))?;
                if d < Duration::from_secs(1) || d > MAX_WINDOW || d.subsec_nanos() != 0 {
                    return Err(bad(
                        "the window must be whole seconds, from 1s to 1h (the run's figures \
                         are per second)"
                            .into(),
                    ));
                }
                words.truncate(i);
                Some(d)
            }
            None => None,
        };
        let cond: String = words.concat();
        if cond.is_empty() {
            return Err(bad(
                "expected METRIC OP LIMIT, e.g. p99<50ms, errors<0.1% or rate>=0.99*target".into(),
            ));
        }
        let at = cond
            .find(['<', '>'])
            .ok_or_else(|| bad("expected METRIC OP LIMIT, with OP one of <, <=, >, >=".into()))?;
        let (name, rest) = cond.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        if value.is_empty() {
            return Err(bad("the limit is missing".into()));
        }
        let number = |v: &str| -> Result<f64, ThresholdError> {
            v.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0)
                .ok_or_else(|| bad(format!("'{v}' is not a number")))
        };
        let (metric, limit) = match name {
            "errors" => {
                let p = value.strip_suffix('%').ok_or_else(|| {
                    bad("the error limit is a percentage, e.g. errors<0.1%".into())
                })?;
                let p = number(p)?;
                if p > 100.0 {
                    return Err(bad("a percentage is at most 100%".into()));
                }
                (Metric::Errors, Limit::Percent(p))
            }
            "rate" => match value.strip_suffix("*target") {
                Some(f) => {
                    let f = number(f)?;
                    if f == 0.0 || f > 10.0 {
                        return Err(bad(
                            "the fraction of the target is above 0 and at most 10".into()
                        ));
                    }
                    (Metric::Rate, Limit::OfTarget(f))
                }
                None if value == "target" => (Metric::Rate, Limit::OfTarget(1.0)),
                None => (Metric::Rate, Limit::Rate(number(value)?)),
            },
            p if p.starts_with('p') => {
                let q = p[1..]
                    .parse::<f64>()
                    .ok()
                    .filter(|q| PERCENTILES.iter().any(|r| (r - q).abs() < 1e-9))
                    .ok_or_else(|| {
                        bad(format!(
                            "'{p}' is not a reported percentile (p25, p50, p75, p90, p95, p99, \
                             p99.9, p99.99, p99.999, p100)"
                        ))
                    })?;
                let d = parse_duration(value).map_err(|e| bad(e.to_string()))?;
                (Metric::Latency(q), Limit::Millis(d.as_secs_f64() * 1e3))
            }
            other => {
                return Err(bad(format!(
                    "unknown metric '{other}' (pNN, errors or rate)"
                )))
            }
        };
        Ok(Threshold {
            text: text.clone(),
            metric,
            op,
            limit,
            over,
            abort,
        })
    }
}

impl Threshold {
    /// Checks the threshold against the run it will judge: `open` whether the run has a target
    /// rate, `measurement` its planned length (`None` when a request count alone ends it).
    pub fn check_against(
        &self,
        open: bool,
        measurement: Option<Duration>,
    ) -> Result<(), ThresholdError> {
        let bad = |m: &str| ThresholdError(format!("threshold '{}': {m}", self.text));
        if matches!(self.limit, Limit::OfTarget(_)) && !open {
            return Err(bad(
                "the closed model has no target rate (give -R, or a rate as a number)",
            ));
        }
        if let (Some(w), Some(m)) = (self.over, measurement) {
            if w > m {
                return Err(bad("the window is longer than the measurement"));
            }
        }
        Ok(())
    }

    /// Whether it needs the run's seconds (`over`, `abort`), which only the HTTP load keeps.
    pub fn needs_seconds(&self) -> bool {
        self.over.is_some() || self.abort
    }

    /// The limit in the metric's unit, given the target rate.
    fn limit_value(&self, target: Option<f64>) -> Option<f64> {
        match self.limit {
            Limit::Millis(v) | Limit::Percent(v) | Limit::Rate(v) => Some(v),
            Limit::OfTarget(f) => target.map(|t| f * t),
        }
    }

    /// Judges `figures`: `Ok(observed)` when it holds, `Err(observed)` when it does not. A
    /// latency that is only a lower bound holds only if the bound is on the right side of a
    /// `>` limit; below a `<` limit it proves nothing, and fails.
    fn judge(&self, f: &Figures) -> Result<String, String> {
        let (value, lower_bound, observed) = match self.metric {
            Metric::Latency(p) => match f.latency_ms(p) {
                Some((ms, lb)) => (
                    ms,
                    lb,
                    format!("p{p} {}{ms:.3} ms", if lb { "≥ " } else { "" }),
                ),
                None => return Err(format!("p{p}: nothing was answered")),
            },
            Metric::Errors => {
                let e = f.error_percent();
                (e, false, format!("errors {e:.3}%"))
            }
            Metric::Rate => {
                let r = f.rate();
                let of = match f.target {
                    Some(t) if t > 0.0 => format!(" ({:.3} × target {t:.1})", r / t),
                    _ => String::new(),
                };
                (r, false, format!("rate {r:.1}/s{of}"))
            }
        };
        let Some(limit) = self.limit_value(f.target) else {
            return Err(format!("{observed}: no target rate"));
        };
        let holds = self.op.holds(value, limit) && !(lower_bound && self.op.wants_small());
        if holds {
            Ok(observed)
        } else {
            Err(observed)
        }
    }
}

/// What a threshold is judged on: a window of seconds, or the whole measurement.
struct Figures {
    /// The whole measurement's percentiles as the record reports them (exact, lower bounds
    /// marked); `None` for a window, whose percentiles come from `latency`.
    reported: Option<gatebench_model::LatencySummary>,
    latency: LatencyHistogram,
    /// Censored values (timeouts, stalls) among `latency`: a percentile at or above the
    /// smallest of them may be a lower bound.
    censored_min_ns: Option<u64>,
    outcomes: OutcomeCounts,
    seconds: f64,
    target: Option<f64>,
    /// A load of its own: its error % and ok rate, given rather than counted from `outcomes`.
    units: Option<(f64, f64)>,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            reported: None,
            latency: new_histogram(),
            censored_min_ns: None,
            outcomes: OutcomeCounts::default(),
            seconds: 0.0,
            target: None,
            units: None,
        }
    }

    fn latency_ms(&self, p: f64) -> Option<(f64, bool)> {
        if let Some(r) = &self.reported {
            return r
                .point(p)
                .filter(|_| r.count > 0)
                .map(|x| (x.ms, x.lower_bound));
        }
        if self.latency.is_empty() {
            return None;
        }
        let v = self.latency.value_at_quantile(p / 100.0);
        let lower_bound = self.censored_min_ns.is_some_and(|c| v >= c);
        Some((v as f64 / 1e6, lower_bound))
    }

    fn error_percent(&self) -> f64 {
        match self.units {
            Some((errors, _)) => errors,
            None => self.outcomes.error_percent(),
        }
    }

    fn rate(&self) -> f64 {
        match self.units {
            Some((_, rate)) => rate,
            None => self.outcomes.responses() as f64 / self.seconds.max(1e-3),
        }
    }
}

/// One second of the measurement, as the thresholds need it.
struct Second {
    latency: LatencyHistogram,
    censored_min_ns: Option<u64>,
    outcomes: OutcomeCounts,
    length_s: f64,
    target: Option<f64>,
}

/// Judges a run's thresholds while it goes: fed each second of the measurement, it remembers
/// each threshold's first breach and asks for the run to stop at an `abort` one. A run's
/// collector feeds it its own seconds; a coordinator of shards, their merged seconds.
pub struct Watch {
    thresholds: Vec<Threshold>,
    breaches: Vec<Option<(f64, String)>>,
    aborted: Option<usize>,
    recent: VecDeque<Second>,
    keep: usize,
    /// The measurement so far (for `abort` without a window).
    so_far: Figures,
    elapsed_s: f64,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("thresholds", &self.thresholds)
            .field("breaches", &self.breaches)
            .field("aborted", &self.aborted)
            .field("elapsed_s", &self.elapsed_s)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Watches `thresholds`.
    pub fn new(thresholds: Vec<Threshold>) -> Watch {
        let keep = thresholds
            .iter()
            .filter_map(|t| t.over)
            .map(|d| d.as_secs() as usize)
            .max()
            .unwrap_or(0);
        Watch {
            breaches: vec![None; thresholds.len()],
            thresholds,
            aborted: None,
            recent: VecDeque::with_capacity(keep + 1),
            keep,
            so_far: Figures::new(),
            elapsed_s: 0.0,
        }
    }

    /// Whether there is anything to watch.
    pub fn is_empty(&self) -> bool {
        self.thresholds.is_empty()
    }

    /// One more second of the measurement: its latency (censored values included, the
    /// smallest of them given), outcomes, length and target rate. Returns the reason to stop
    /// the run when an `abort` threshold breached, once.
    pub fn second(
        &mut self,
        latency: LatencyHistogram,
        censored_min_ns: Option<u64>,
        outcomes: OutcomeCounts,
        length: Duration,
        target: Option<f64>,
    ) -> Option<String> {
        let length_s = length.as_secs_f64();
        self.elapsed_s += length_s;
        add(&mut self.so_far.latency, &latency);
        self.so_far.censored_min_ns = min_opt(self.so_far.censored_min_ns, censored_min_ns);
        self.so_far.outcomes.merge(&outcomes);
        // The target over the measurement so far: its mean, weighted by time.
        self.so_far.target = target.map(|t| {
            let before = self.so_far.target.unwrap_or(t) * self.so_far.seconds;
            (before + t * length_s) / (self.so_far.seconds + length_s)
        });
        self.so_far.seconds += length_s;
        if self.keep > 0 {
            self.recent.push_back(Second {
                latency,
                censored_min_ns,
                outcomes,
                length_s,
                target,
            });
            while self.recent.len() > self.keep {
                self.recent.pop_front();
            }
        }
        let mut stop = None;
        for i in 0..self.thresholds.len() {
            if self.breaches[i].is_some() {
                continue;
            }
            let t = &self.thresholds[i];
            let figures = match t.over {
                Some(w) => {
                    let n = w.as_secs() as usize;
                    // A window is judged once it is full of whole seconds.
                    if self.recent.len() < n || length_s < 0.999 {
                        continue;
                    }
                    window(self.recent.iter().skip(self.recent.len() - n))
                }
                None if t.abort => {
                    if self.so_far.seconds < 0.999 {
                        continue;
                    }
                    None
                }
                None => continue,
            };
            let verdict = match &figures {
                Some(f) => t.judge(f),
                None => t.judge(&self.so_far),
            };
            if let Err(observed) = verdict {
                self.breaches[i] = Some((self.elapsed_s, observed.clone()));
                if t.abort && self.aborted.is_none() {
                    self.aborted = Some(i);
                    stop = Some(format!(
                        "threshold '{}' breached {:.0} s into the measurement ({observed})",
                        t.text, self.elapsed_s
                    ));
                }
            }
        }
        stop
    }

    /// Every threshold's verdict, with the whole measurement of `report` judged too.
    pub fn finish(self, report: &LoadReport) -> Vec<ThresholdResult> {
        let whole = whole_measurement(report);
        self.thresholds
            .iter()
            .zip(self.breaches)
            .enumerate()
            .map(|(i, (t, breach))| {
                let verdict = t.judge(&whole);
                let passed = breach.is_none() && verdict.is_ok();
                let observed = match verdict {
                    Ok(o) | Err(o) => o,
                };
                ThresholdResult {
                    threshold: t.text.clone(),
                    passed,
                    observed,
                    breached_at_s: breach.as_ref().map(|b| b.0),
                    breach: breach.map(|b| b.1),
                    aborted: self.aborted == Some(i),
                }
            })
            .collect()
    }
}

/// Refuses, in one line, a threshold that needs a per-second view `what` (a load of its own)
/// does not keep yet: one with `over` or `abort`.
pub fn refuse_windows(thresholds: &[Threshold], what: &str) -> Result<(), crate::LoadgenError> {
    match thresholds.iter().find(|t| t.needs_seconds()) {
        Some(t) => Err(crate::LoadgenError::config(format!(
            "threshold '{}': over and abort need the per-second view {what} does not keep yet; \
             it is judged on the whole run",
            t.text
        ))),
        None => Ok(()),
    }
}

/// The verdicts of `thresholds` on a load of its own (gRPC calls, WebSocket messages), judged
/// on the whole measurement: `latency` its units' latency, `error_percent` the share of units
/// not ok, `rate` its ok units per second, `target` its open model's rate. Such a load has no
/// per-second view yet: a threshold with `over` or `abort` is refused before it runs
/// ([`Threshold::needs_seconds`]).
pub fn judge_whole(
    thresholds: &[Threshold],
    latency: &gatebench_model::LatencySummary,
    error_percent: f64,
    rate: f64,
    target: Option<f64>,
) -> Vec<ThresholdResult> {
    let mut f = Figures::new();
    f.reported = Some(latency.clone());
    f.units = Some((error_percent, rate));
    f.target = target;
    thresholds
        .iter()
        .map(|t| {
            let verdict = t.judge(&f);
            ThresholdResult {
                threshold: t.text.clone(),
                passed: verdict.is_ok(),
                observed: match verdict {
                    Ok(o) | Err(o) => o,
                },
                breached_at_s: None,
                breach: None,
                aborted: false,
            }
        })
        .collect()
}

/// The figures of a run of seconds.
fn window<'a>(seconds: impl Iterator<Item = &'a Second>) -> Option<Figures> {
    let mut f = Figures::new();
    let mut target_s = 0.0;
    let mut with_target = true;
    for s in seconds {
        add(&mut f.latency, &s.latency);
        f.censored_min_ns = min_opt(f.censored_min_ns, s.censored_min_ns);
        f.outcomes.merge(&s.outcomes);
        f.seconds += s.length_s;
        match s.target {
            Some(t) => target_s += t * s.length_s,
            None => with_target = false,
        }
    }
    f.target = (with_target && f.seconds > 0.0).then(|| target_s / f.seconds);
    Some(f)
}

/// The whole measurement of a finished run, from its record: its percentiles as reported
/// (lower bounds marked), its error %, throughput and target.
fn whole_measurement(report: &LoadReport) -> Figures {
    let m = &report.measurement;
    let mut f = Figures::new();
    f.reported = Some(m.latency.clone());
    f.outcomes = m.outcomes;
    f.seconds = m.duration_s;
    f.target = m.target_rps;
    f
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(s: &str) -> String {
        s.parse::<Threshold>().unwrap_err().to_string()
    }

    #[test]
    fn thresholds_parse_in_k6_like_words() {
        let a = t("p99<50ms");
        assert_eq!(
            (a.metric, a.op, a.limit, a.over, a.abort),
            (
                Metric::Latency(99.0),
                Op::Lt,
                Limit::Millis(50.0),
                None,
                false
            )
        );
        let b = t(" errors <= 0.1%  over 10s abort ");
        assert_eq!(b.text, "errors <= 0.1% over 10s abort");
        assert_eq!(
            (b.metric, b.op, b.limit, b.over, b.abort),
            (
                Metric::Errors,
                Op::Le,
                Limit::Percent(0.1),
                Some(Duration::from_secs(10)),
                true
            )
        );
        let c = t("rate>=0.99*target");
        assert_eq!((c.metric, c.limit), (Metric::Rate, Limit::OfTarget(0.99)));
        assert_eq!(t("rate>4500").limit, Limit::Rate(4500.0));
        assert_eq!(t("p99.9<1s").metric, Metric::Latency(99.9));
    }

    #[test]
    fn bad_thresholds_are_one_line_naming_them() {
        assert_eq!(
            err("p98<5ms"),
            "threshold 'p98<5ms': 'p98' is not a reported percentile (p25, p50, p75, p90, p95, \
             p99, p99.9, p99.99, p99.999, p100)"
        );
        assert!(err("latency<5ms").contains("unknown metric 'latency'"));
        assert!(err("errors<1").contains("percentage"));
        assert!(err("errors<101%").contains("at most 100%"));
        assert!(err("p99=5ms").contains("OP one of"));
        assert!(err("p99<5ms over").contains("one duration"));
        assert!(err("p99<5ms over 1.5s").contains("whole seconds"));
        assert!(err("rate>=x*target").contains("not a number"));
        assert!(err("").contains("expected METRIC OP LIMIT"));
        let closed = t("rate>=0.9*target").check_against(false, Some(Duration::from_secs(10)));
        assert!(closed.unwrap_err().to_string().contains("closed model"));
        let long = t("p99<5ms over 20s").check_against(true, Some(Duration::from_secs(10)));
        assert!(long
            .unwrap_err()
            .to_string()
            .contains("longer than the measurement"));
    }

    fn second(ms: u64, ok: u64, errors: u64) -> (LatencyHistogram, OutcomeCounts) {
        let mut h = new_histogram();
        if ok > 0 {
            h.record_n(ms * 1_000_000, ok).unwrap();
        }
        let mut o = OutcomeCounts::default();
        o.add(gatebench_model::Outcome::Ok, ok);
        o.add(gatebench_model::Outcome::Status5xx, errors);
        (h, o)
    }

    /// A window breaches at the first full window that fails, and only an abort threshold
    /// asks for the run to stop, once.
    #[test]
    fn windows_are_judged_once_full_and_an_abort_stops_once() {
        let mut w = Watch::new(vec![
            t("p99<50ms over 3s"),
            t("errors<10% over 2s abort"),
            t("p50<1ms"),
        ]);
        let mut stops = Vec::new();
        // Seconds 1-3 fast and clean; second 4 slow; seconds 5-6 with 20 % errors.
        let plan = [
            (5, 100, 0),
            (5, 100, 0),
            (5, 100, 0),
            (80, 100, 0),
            (5, 80, 20),
            (5, 80, 20),
        ];
        for (ms, ok, errors) in plan {
            let (h, o) = second(ms, ok, errors);
            if let Some(why) = w.second(h, None, o, Duration::from_secs(1), Some(100.0)) {
                stops.push(why);
            }
        }
        assert_eq!(
            w.breaches[0].as_ref().unwrap().0,
            4.0,
            "the window ending at 4 s"
        );
        assert_eq!(w.breaches[1].as_ref().unwrap().0, 5.0);
        assert!(w.breaches[2].is_none(), "no window: judged at the end only");
        assert_eq!(
            stops,
            ["threshold 'errors<10% over 2s abort' breached 5 s into the measurement (errors 10.000%)"]
        );
    }

    /// A percentile that is only a lower bound (it falls on a request that never got an
    /// answer) proves nothing below a limit: the threshold fails.
    #[test]
    fn a_lower_bound_does_not_pass_a_latency_limit() {
        let mut f = Figures::new();
        f.latency.record_n(2_000_000, 98).unwrap();
        f.latency.record_n(30_000_000, 2).unwrap();
        f.outcomes.add(gatebench_model::Outcome::Ok, 98);
        f.outcomes.add(gatebench_model::Outcome::Timeout, 2);
        f.seconds = 1.0;
        assert!(t("p99<50ms").judge(&f).is_ok(), "answered values only");
        f.censored_min_ns = Some(30_000_000);
        assert_eq!(
            t("p99<50ms").judge(&f),
            Err("p99 ≥ 30.015 ms".to_owned()),
            "the 2 timeouts waited 30 ms and more"
        );
        assert!(
            t("p99>10ms").judge(&f).is_ok(),
            "a lower bound above a > limit holds"
        );
    }
}
