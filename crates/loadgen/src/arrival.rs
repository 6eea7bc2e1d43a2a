//! Arrival programs: an open-model rate that changes during the run (ramp, steps, sine), and
//! Poisson arrivals instead of evenly spaced ones.
//!
//! A program is a rate `r(t)` in requests/s over the program's time `t`, which starts with the
//! measurement; during a warm-up the program holds its first rate `r(0)`. Its integral, the
//! expected number of requests by a time (the *cumulative* count), is what the schedule works
//! with: request number `u` of the whole run is due when the cumulative count reaches `u`, so
//! the inverse of the integral gives every due time in closed form (ramp, steps) or by a
//! safeguarded Newton step (sine), without accumulating rounding over millions of requests.
//!
//! Poisson arrivals are the same inverse applied to a unit-rate Poisson process: the gaps
//! between successive coordinates are exponential with mean one (in requests), so the real
//! gaps are exponential with mean `1 / r(t)` — a non-homogeneous Poisson process by time
//! change (Çinlar's theorem), exact for every program, with no thinning.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::bounds::{parse_duration, MAX_DURATION, MAX_RATE, MIN_RATE};

/// Most steps a `steps:` program may list.
pub const MAX_STEPS: usize = 10_000;

/// How an open-model rate changes with time.
#[derive(Clone, Debug, PartialEq)]
pub enum RateProgram {
    /// One rate for the whole run.
    Constant(f64),
    /// From `from` to `to` linearly over `over`, then `to`.
    Ramp {
        /// Rate at the start of the measurement, requests/s.
        from: f64,
        /// Rate reached after `over`, and held.
        to: f64,
        /// Length of the ramp.
        over: Duration,
    },
    /// Each rate for `every`, in order; the last one is held.
    Steps {
        /// The rates, requests/s.
        rates: Vec<f64>,
        /// How long each lasts.
        every: Duration,
    },
    /// `mean + amplitude × sin(2πt / period)`.
    Sine {
        /// The mean rate, requests/s.
        mean: f64,
        /// The swing either side of the mean; at most the mean (a rate is never negative).
        amplitude: f64,
        /// One full cycle.
        period: Duration,
    },
}

/// How requests are spaced around the program's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spacing {
    /// Evenly: request `k` exactly when the cumulative count reaches `k` (wrk2's schedule).
    Even,
    /// A Poisson process: exponential gaps, from a seeded generator so a run can be repeated.
    Poisson {
        /// The seed of the random gaps.
        seed: u64,
    },
}

/// An open-model arrival program: the rate over time and the spacing of requests.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrivalProgram {
    /// The rate over time.
    pub rate: RateProgram,
    /// Even or Poisson spacing.
    pub spacing: Spacing,
}

/// Why a rate program was refused (the caller names the option in front).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramError(String);

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramError {}

fn err(msg: impl Into<String>) -> ProgramError {
    ProgramError(msg.into())
}

/// A rate as written in a program: a number of requests/s, optionally with `k` (×1000) or `M`
/// (×1,000,000). Zero is allowed inside a program (a pause); negative, NaN and anything above
/// [`MAX_RATE`] are not.
fn parse_rate(s: &str) -> Result<f64, ProgramError> {
    let t = s.trim();
    let v =
        parse_scaled(t).ok_or_else(|| err(format!("'{t}' is not a rate (e.g. 500, 2.5k, 1M)")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(err(format!("rate '{t}' must not be negative")));
    }
    if v > MAX_RATE {
        return Err(err(format!("rate '{t}' is above {MAX_RATE:e} requests/s")));
    }
    Ok(v)
}

/// A number, optionally with `k` (×1000) or `M` (×1,000,000); its range is the caller's to check.
fn parse_scaled(t: &str) -> Option<f64> {
    let (num, mult) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (t, 1.0),
        },
    };
    num.parse::<f64>().ok().map(|v| v * mult)
}

fn parse_len(s: &str, what: &str) -> Result<Duration, ProgramError> {
    let d = parse_duration(s).map_err(|e| err(format!("{what}: {e}")))?;
    if d.is_zero() {
        return Err(err(format!("{what} must be longer than zero")));
    }
    if d > MAX_DURATION {
        return Err(err(format!("{what} is too long")));
    }
    Ok(d)
}

/// Splits `BODY/DURATION` at the last `/`.
fn split_len<'a>(body: &'a str, form: &str) -> Result<(&'a str, &'a str), ProgramError> {
    body.rsplit_once('/')
        .ok_or_else(|| err(format!("expected {form}")))
}

impl FromStr for RateProgram {
    type Err = ProgramError;

    /// Parses `-R`'s forms: `1000` (constant), `ramp:0..20k/60s`, `steps:1k,2k,4k/30s`,
    /// `sine:10k±5k/60s` (or `+-` for `±`).
    fn from_str(s: &str) -> Result<Self, ProgramError> {
        let s = s.trim();
        let program = if let Some(body) = s.strip_prefix("ramp:") {
            let form = "ramp:FROM..TO/DURATION, e.g. ramp:0..20k/60s";
            let (rates, len) = split_len(body, form)?;
            let (from, to) = rates
                .split_once("..")
                .ok_or_else(|| err(format!("expected {form}")))?;
            RateProgram::Ramp {
                from: parse_rate(from)?,
                to: parse_rate(to)?,
                over: parse_len(len, "the ramp's duration")?,
            }
        } else if let Some(body) = s.strip_prefix("steps:") {
            let form = "steps:RATE,RATE,…/DURATION, e.g. steps:1k,2k,4k/30s";
            let (rates, len) = split_len(body, form)?;
            let rates = rates
                .split(',')
                .map(parse_rate)
                .collect::<Result<Vec<_>, _>>()?;
            if rates.len() > MAX_STEPS {
                return Err(err(format!("at most {MAX_STEPS} steps")));
            }
            RateProgram::Steps {
                rates,
                every: parse_len(len, "the step's duration")?,
            }
        } else if let Some(body) = s.strip_prefix("sine:") {
            let form = "sine:MEAN±AMPLITUDE/PERIOD, e.g. sine:10k±5k/60s (or 10k+-5k)";
            let (rates, len) = split_len(body, form)?;
            let (mean, amplitude) = rates
                .split_once('±')
                .or_else(|| rates.split_once("+-"))
                .ok_or_else(|| err(format!("expected {form}")))?;
            RateProgram::Sine {
                mean: parse_rate(mean)?,
                amplitude: parse_rate(amplitude)?,
                period: parse_len(len, "the period")?,
            }
        } else if let Some((kind, _)) = s.split_once(':') {
            return Err(err(format!(
                "unknown rate program '{kind}' (a number, ramp:, steps: or sine:)"
            )));
        } else {
            // A plain rate takes the program's k and M too (`-R 20k`); its range is checked
            // with the rest of the load's settings.
            RateProgram::Constant(parse_scaled(s.trim()).ok_or_else(|| {
                err(format!(
                    "'{s}' is not a rate (e.g. 500, 20k, or ramp:0..20k/60s)"
                ))
            })?)
        };
        program.check()?;
        Ok(program)
    }
}

impl RateProgram {
    /// Checks the program: every rate within range, a peak of at least [`MIN_RATE`], a sine
    /// that never goes negative.
    pub fn check(&self) -> Result<(), ProgramError> {
        let peak = match self {
            RateProgram::Constant(r) => {
                if !(r.is_finite() && (MIN_RATE..=MAX_RATE).contains(r)) {
                    return Err(err(format!(
                        "must be from {MIN_RATE} to {MAX_RATE:e} requests/s, got {r}"
                    )));
                }
                *r
            }
            RateProgram::Ramp { from, to, .. } => from.max(*to),
            RateProgram::Steps { rates, .. } => {
                if rates.is_empty() {
                    return Err(err("steps: needs at least one rate"));
                }
                rates.iter().copied().fold(0.0, f64::max)
            }
            RateProgram::Sine {
                mean, amplitude, ..
            } => {
                if amplitude > mean {
                    return Err(err(format!(
                        "the sine's amplitude {amplitude} is larger than its mean {mean}: the \
                         rate would go negative"
                    )));
                }
                if mean + amplitude > MAX_RATE {
                    return Err(err(format!(
                        "the sine's peak is above {MAX_RATE:e} requests/s"
                    )));
                }
                mean + amplitude
            }
        };
        if peak < MIN_RATE {
            return Err(err(format!(
                "the program never reaches {MIN_RATE} requests/s: nothing would be sent"
            )));
        }
        Ok(())
    }

    /// The same program at `factor` times the rate (a shard's share of it).
    pub fn scaled(&self, factor: f64) -> RateProgram {
        match self {
            RateProgram::Constant(r) => RateProgram::Constant(r * factor),
            RateProgram::Ramp { from, to, over } => RateProgram::Ramp {
                from: from * factor,
                to: to * factor,
                over: *over,
            },
            RateProgram::Steps { rates, every } => RateProgram::Steps {
                rates: rates.iter().map(|r| r * factor).collect(),
                every: *every,
            },
            RateProgram::Sine {
                mean,
                amplitude,
                period,
            } => RateProgram::Sine {
                mean: mean * factor,
                amplitude: amplitude * factor,
                period: *period,
            },
        }
    }

    /// The program's own length, a default for the measurement when none is given: the ramp,
    /// every step once, one period. `None` for a constant rate.
    pub fn natural_length(&self) -> Option<Duration> {
        match self {
            RateProgram::Constant(_) => None,
            RateProgram::Ramp { over, .. } => Some(*over),
            RateProgram::Steps { rates, every } => Some(every.saturating_mul(rates.len() as u32)),
            RateProgram::Sine { period, .. } => Some(*period),
        }
    }

    /// The rate at program time `t` seconds (negative: before the measurement, the first rate).
    pub fn rate_at(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self {
            RateProgram::Constant(r) => *r,
            RateProgram::Ramp { from, to, over } => {
                let d = over.as_secs_f64();
                if t >= d {
                    *to
                } else {
                    from + (to - from) * t / d
                }
            }
            RateProgram::Steps { rates, every } => {
                let i = (t / every.as_secs_f64()).floor() as usize;
                rates[i.min(rates.len() - 1)]
            }
            RateProgram::Sine {
                mean,
                amplitude,
                period,
            } => mean + amplitude * (std::f64::consts::TAU * t / period.as_secs_f64()).sin(),
        }
    }

    /// The integral of the rate from program time 0 to `t` ≥ 0: requests expected by then.
    pub fn cumulative(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self {
            RateProgram::Constant(r) => r * t,
            RateProgram::Ramp { from, to, over } => {
                let d = over.as_secs_f64();
                let a = (to - from) / (2.0 * d);
                if t <= d {
                    from * t + a * t * t
                } else {
                    from * d + a * d * d + to * (t - d)
                }
            }
            RateProgram::Steps { rates, every } => {
                let e = every.as_secs_f64();
                let whole = ((t / e).floor() as usize).min(rates.len() - 1);
                let before: f64 = rates[..whole].iter().sum::<f64>() * e;
                before + rates[whole] * (t - whole as f64 * e)
            }
            RateProgram::Sine {
                mean,
                amplitude,
                period,
            } => {
                let p = period.as_secs_f64();
                let w = std::f64::consts::TAU / p;
                mean * t + amplitude / w * (1.0 - (w * t).cos())
            }
        }
    }

    /// The program time at which the cumulative count reaches `u` ≥ 0; `None` when it never
    /// does (the program ends at rate zero before).
    pub fn time_of(&self, u: f64) -> Option<f64> {
        if u <= 0.0 {
            return Some(0.0);
        }
        match self {
            RateProgram::Constant(r) => Some(u / r),
            RateProgram::Ramp { from, to, over } => {
                let d = over.as_secs_f64();
                let at_end = self.cumulative(d);
                if u <= at_end {
                    let a = (to - from) / (2.0 * d);
                    let b = *from;
                    // The root of a·t² + b·t − u = 0 in the form that does not cancel when a
                    // is small (and stays right when b is zero).
                    let disc = (b * b + 4.0 * a * u).max(0.0);
                    Some(2.0 * u / (b + disc.sqrt()))
                } else if *to > 0.0 {
                    Some(d + (u - at_end) / to)
                } else {
                    None
                }
            }
            RateProgram::Steps { rates, every } => {
                let e = every.as_secs_f64();
                let mut before = 0.0;
                for (i, r) in rates.iter().enumerate() {
                    let last = i + 1 == rates.len();
                    let this = r * e;
                    if u <= before + this || last {
                        if *r == 0.0 {
                            return None;
                        }
                        return Some(i as f64 * e + (u - before) / r);
                    }
                    before += this;
                }
                None
            }
            RateProgram::Sine {
                mean,
                amplitude,
                period,
            } => {
                // Monotone (the rate is never negative), and within ±amplitude·period/π of the
                // mean's line: bracket, then Newton steps that fall back to bisection.
                let p = period.as_secs_f64();
                let slack = amplitude * p / std::f64::consts::PI / mean;
                let (mut lo, mut hi) = ((u / mean - slack).max(0.0), u / mean + slack);
                let mut t = u / mean;
                for _ in 0..100 {
                    let f = self.cumulative(t) - u;
                    if f.abs() <= 1e-11 * u.max(1.0) {
                        break;
                    }
                    if f > 0.0 {
                        hi = t;
                    } else {
                        lo = t;
                    }
                    let r = self.rate_at(t);
                    let newton = t - f / r;
                    t = if r > 0.0 && newton > lo && newton < hi {
                        newton
                    } else {
                        0.5 * (lo + hi)
                    };
                    if hi - lo < 1e-12 * hi.max(1.0) {
                        break;
                    }
                }
                Some(t)
            }
        }
    }
}

impl fmt::Display for RateProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |d: &Duration| humantime::format_duration(*d).to_string();
        match self {
            RateProgram::Constant(r) => write!(f, "{r}"),
            RateProgram::Ramp { from, to, over } => write!(f, "ramp:{from}..{to}/{}", d(over)),
            RateProgram::Steps { rates, every } => {
                let list: Vec<String> = rates.iter().map(f64::to_string).collect();
                write!(f, "steps:{}/{}", list.join(","), d(every))
            }
            RateProgram::Sine {
                mean,
                amplitude,
                period,
            } => write!(f, "sine:{mean}±{amplitude}/{}", d(period)),
        }
    }
}

/// The whole run's arrival curve: the program placed after the warm-up, in seconds since the
/// run started. Request coordinate `u` (in requests of the whole run) is due at
/// [`Curve::time_of`]`(u)`.
#[derive(Clone, Debug)]
pub(crate) struct Curve {
    program: RateProgram,
    warmup: f64,
    /// The warm-up's rate (the program's first).
    first: f64,
}

impl Curve {
    pub(crate) fn new(program: RateProgram, warmup: Duration) -> Curve {
        let first = program.rate_at(0.0);
        Curve {
            program,
            warmup: warmup.as_secs_f64(),
            first,
        }
    }

    /// Requests expected from the run's start to `tau` seconds after it.
    pub(crate) fn cumulative(&self, tau: f64) -> f64 {
        let tau = tau.max(0.0);
        if tau <= self.warmup {
            self.first * tau
        } else {
            self.first * self.warmup + self.program.cumulative(tau - self.warmup)
        }
    }

    /// Seconds after the run's start when the cumulative count reaches `u`.
    pub(crate) fn time_of(&self, u: f64) -> Option<f64> {
        let in_warmup = self.first * self.warmup;
        if u <= in_warmup && self.first > 0.0 {
            return Some(u / self.first);
        }
        self.program.time_of(u - in_warmup).map(|t| self.warmup + t)
    }

    /// The mean target rate between `a` and `b` seconds after the start.
    pub(crate) fn mean_rate(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return self.program.rate_at(a - self.warmup);
        }
        (self.cumulative(b) - self.cumulative(a)) / (b - a)
    }
}

/// A small, fast generator of exponential gaps (splitmix64 for the bits): the schedule needs
/// one draw per request, reproducible from a seed, and no statistical subtlety beyond
/// uniform 53-bit fractions.
#[derive(Clone, Debug)]
pub(crate) struct ExpGaps {
    state: u64,
}

impl ExpGaps {
    pub(crate) fn new(seed: u64) -> ExpGaps {
        ExpGaps { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An exponential draw with mean 1.
    pub(crate) fn next(&mut self) -> f64 {
        // A uniform in (0, 1]: never ln(0).
        let u = ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        -u.ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RateProgram {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn forms_parse_and_print_back() {
        assert_eq!(p("1000"), RateProgram::Constant(1000.0));
        assert_eq!(p("20k"), RateProgram::Constant(20_000.0));
        assert_eq!(p("1.5M"), RateProgram::Constant(1_500_000.0));
        assert_eq!(
            p("ramp:0..20k/60s"),
            RateProgram::Ramp {
                from: 0.0,
                to: 20_000.0,
                over: Duration::from_secs(60)
            }
        );
        assert_eq!(
            p("steps:1k,2k,4k/30s"),
            RateProgram::Steps {
                rates: vec![1000.0, 2000.0, 4000.0],
                every: Duration::from_secs(30)
            }
        );
        let sine = RateProgram::Sine {
            mean: 10_000.0,
            amplitude: 5_000.0,
            period: Duration::from_secs(60),
        };
        assert_eq!(p("sine:10k±5k/60s"), sine);
        assert_eq!(p("sine:10k+-5k/1m"), sine);
        for s in [
            "ramp:0..20000/1m",
            "steps:1000,2000,4000/30s",
            "sine:10000±5000/1m",
        ] {
            assert_eq!(p(s).to_string(), s);
            assert_eq!(p(&p(s).to_string()), p(s));
        }
    }

    #[test]
    fn absurd_programs_are_refused_with_the_reason() {
        for (s, want) in [
            ("ramp:-5..100/10s", "must not be negative"),
            ("ramp:0..0/10s", "never reaches"),
            ("ramp:0..2e9/10s", "above"),
            ("ramp:0..100/0s", "longer than zero"),
            ("ramp:0..100", "expected ramp:FROM..TO/DURATION"),
            ("ramp:0..100/-3s", "must not be negative"),
            ("steps:/10s", "is not a rate"),
            ("steps:1k,x/10s", "'x' is not a rate"),
            ("sine:100±200/10s", "would go negative"),
            ("wave:1/2s", "unknown rate program 'wave'"),
            ("fast", "is not a rate"),
            ("-3", "must be from"),
            ("0", "must be from"),
        ] {
            let e = s.parse::<RateProgram>().expect_err(s).to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    /// The inverse of the cumulative count is exact to rounding, for every form, over ten
    /// thousand points: the due times the schedule uses are the program's.
    #[test]
    fn time_of_inverts_cumulative() {
        for s in [
            "750",
            "ramp:0..20k/60s",
            "ramp:20k..100/30s",
            "ramp:5k..5k/30s",
            "steps:1k,0,4k/2s",
            "sine:10k±10k/7s",
            "sine:300±100/1s",
        ] {
            let prog = p(s);
            for i in 1..10_000 {
                let t = i as f64 * 0.0137;
                let u = prog.cumulative(t);
                let back = prog.time_of(u).unwrap();
                // Where the rate is zero (a paused step) any time in the pause has the same
                // count, and where it is near zero a tiny count error is a long time: compare
                // times only where requests are at most a few milliseconds apart.
                let err_count = (prog.cumulative(back) - u).abs();
                assert!(err_count <= 1e-6 * u.max(1.0), "{s} at t={t}: {back}");
                if prog.rate_at(t) > 100.0 {
                    assert!((back - t).abs() < 1e-6, "{s}: t={t} came back as {back}");
                }
            }
        }
    }

    #[test]
    fn a_program_that_ends_at_zero_stops_sending() {
        let prog = p("ramp:100..0/10s");
        assert!((prog.cumulative(10.0) - 500.0).abs() < 1e-9);
        assert!(prog.time_of(499.0).is_some());
        assert_eq!(prog.time_of(501.0), None);
        assert_eq!(p("steps:10,0/1s").time_of(11.0), None);
    }

    #[test]
    fn the_warmup_holds_the_first_rate() {
        let c = Curve::new(p("ramp:100..300/10s"), Duration::from_secs(2));
        assert!((c.cumulative(2.0) - 200.0).abs() < 1e-9);
        assert!((c.mean_rate(0.0, 2.0) - 100.0).abs() < 1e-9);
        // One second into the ramp: 100 + 10 = mean of 100 and 120.
        assert!((c.mean_rate(2.0, 3.0) - 110.0).abs() < 1e-9);
        assert!((c.time_of(100.0).unwrap() - 1.0).abs() < 1e-12);
        // A program starting at zero sends nothing in the warm-up.
        let c = Curve::new(p("ramp:0..100/10s"), Duration::from_secs(2));
        assert!(c.time_of(0.5).unwrap() > 2.0);
    }

    /// Kolmogorov–Smirnov test of the gaps against the exponential distribution they should
    /// follow, at a 0.1 % significance level (critical value 1.949/√n). Evenly spaced gaps,
    /// the other spacing, fail the same test: it can tell them apart.
    #[test]
    fn poisson_gaps_pass_a_goodness_of_fit_test() {
        fn ks_exponential(mut gaps: Vec<f64>, mean: f64) -> f64 {
            gaps.sort_by(f64::total_cmp);
            let n = gaps.len() as f64;
            let mut d: f64 = 0.0;
            for (i, g) in gaps.iter().enumerate() {
                let cdf = 1.0 - (-g / mean).exp();
                d = d
                    .max((cdf - i as f64 / n).abs())
                    .max((cdf - (i + 1) as f64 / n).abs());
            }
            d
        }
        let n = 20_000;
        let critical = 1.949 / (n as f64).sqrt();
        // Through the curve, as the schedule does: a 500 req/s program.
        let curve = Curve::new(RateProgram::Constant(500.0), Duration::ZERO);
        for seed in [1u64, 42, 0xdead_beef] {
            let mut rng = ExpGaps::new(seed);
            let mut u = 0.0;
            let mut last = 0.0;
            let mut gaps = Vec::with_capacity(n);
            for _ in 0..n {
                u += rng.next();
                let t = curve.time_of(u).unwrap();
                gaps.push(t - last);
                last = t;
            }
            let d = ks_exponential(gaps, 1.0 / 500.0);
            assert!(d < critical, "seed {seed}: D = {d} ≥ {critical}");
        }
        let even = vec![1.0 / 500.0; n];
        assert!(ks_exponential(even, 1.0 / 500.0) > critical);
    }
}
