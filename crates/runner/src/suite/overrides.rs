//! What the command line changes in a suite (`gatebench run --quick`, `--repeats`, `--warmup`,
//! `--duration`, `--until-stable`, `--variant`, `--sut-args`). The rule: the overrides are an
//! input of validation, like the file, never an edit of a validated suite; they are applied
//! inside [`Suite::from_raw_with`] before the checks of the suite as a whole (its size), so the
//! suite a run uses and the `suite.toml` written beside its results are the one resolved form.

use std::num::NonZeroU32;
use std::time::Duration;

use gatebench_loadgen::bounds::parse_duration;

use super::raw::RawMatrix;
use super::validate::validate_matrix;
use super::{
    check_requests, ProcessTemplate, Program, Suite, QUICK_COST_REPEATS, QUICK_DURATION,
    QUICK_MAX_STEPS, QUICK_PRECISION_PERCENT, QUICK_WARMUP,
};
use crate::error::RunnerError;

/// The command line's changes to a suite, in the order they apply: the short form first, then
/// the values given one by one, then the variant and the SUT arguments.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--quick`: the suite's `[quick]` table, or 0.5 s warm-up and at most 2 s a cell.
    pub quick: bool,
    /// `--until-stable`: every cell starts with one repeat (the run adds the rest).
    pub one_repeat: bool,
    /// `--repeats`.
    pub repeats: Option<NonZeroU32>,
    /// `--warmup`.
    pub warmup: Option<Duration>,
    /// `--duration` (more than zero).
    pub duration: Option<Duration>,
    /// `--variant NAME=ARGS`, as given.
    pub variant: Option<String>,
    /// `--sut-args`.
    pub sut_args: Option<String>,
}

impl Overrides {
    /// Applies the overrides to `suite` as it is built; errors name the flag.
    pub(super) fn apply(&self, suite: &mut Suite) -> Result<(), RunnerError> {
        let flag = |message: &str| RunnerError::Flag(message.to_owned());
        if self.quick {
            apply_quick(suite)?;
        }
        if self.one_repeat {
            suite.repeats = NonZeroU32::MIN;
        }
        if let Some(n) = self.repeats {
            suite.repeats = n;
        }
        if let Some(w) = self.warmup {
            suite.warmup = w;
        }
        if let Some(d) = self.duration {
            if d.is_zero() {
                return Err(flag("--duration must be more than 0"));
            }
            suite.duration = d;
            suite.duration_bound = true;
        }
        if let Some(v) = &self.variant {
            let (name, extra) = v
                .split_once('=')
                .ok_or_else(|| flag("--variant takes NAME=ARGS, e.g. t1=\"--threads 1\""))?;
            if add_variant(suite, name, extra)? == 0 {
                return Err(flag(
                    "--variant: no scenario of this suite runs a built-in service as its system under test",
                ));
            }
        }
        if let Some(extra) = &self.sut_args {
            if append_sut_args(suite, extra) == 0 {
                return Err(flag(
                    "--sut-args: no scenario of this suite runs a built-in service as its system under test",
                ));
            }
        }
        Ok(())
    }
}

/// Adds, right after every scenario whose system under test is a built-in service, a
/// variant of it named `NAME+LABEL` whose SUT command line gets `extra` appended. In the
/// interleaved order the two run back to back at every point, so drift of the machine
/// affects both alike: the sound way to compare two settings (`gatebench compare DIR
/// --variant LABEL`). Returns how many variants were added.
pub(super) fn add_variant(
    suite: &mut Suite,
    label: &str,
    extra: &str,
) -> Result<usize, RunnerError> {
    let label = label.trim();
    if label.is_empty()
        || !label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(RunnerError::VariantName {
            label: label.to_owned(),
        });
    }
    let mut out = Vec::with_capacity(suite.scenarios.len() * 2);
    let mut added = 0;
    for sc in suite.scenarios.drain(..) {
        let variant = match &sc.sut {
            Some(
                t @ ProcessTemplate {
                    program: Program::Serve(line),
                    ..
                },
            ) => {
                let mut v = sc.clone();
                v.name = format!("{}+{label}", sc.name);
                v.title = format!("{} [{label}]", sc.title);
                v.sut = Some(ProcessTemplate {
                    program: Program::Serve(format!("{line} {}", extra.trim())),
                    ..t.clone()
                });
                Some(v)
            }
            _ => None,
        };
        out.push(sc);
        if let Some(v) = variant {
            out.push(v);
            added += 1;
        }
    }
    suite.scenarios = out;
    Ok(added)
}

/// Appends `extra` (e.g. `--threads 1`) to the command line of every system under test
/// that is a built-in service, so two runs of the same suite can differ in one setting and
/// be compared. The resolved suite written beside the results records it. Scenarios whose
/// SUT is an external command are left alone; returns how many were changed.
pub(super) fn append_sut_args(suite: &mut Suite, extra: &str) -> usize {
    let extra = extra.trim();
    if extra.is_empty() {
        return 0;
    }
    let mut changed = 0;
    for sc in &mut suite.scenarios {
        if let Some(ProcessTemplate {
            program: Program::Serve(line),
            ..
        }) = sc.sut.as_mut()
        {
            line.push(' ');
            line.push_str(extra);
            changed += 1;
        }
    }
    changed
}

/// Makes this suite its short form (`gatebench run --quick`): the `[quick]` table's values
/// replace the suite's; without one (or for its missing keys) every cell gets a 0.5 s
/// warm-up and at most 2 s of measurement, which also bounds a request count. Capacity
/// searches take their steps no longer than that, at most [`QUICK_MAX_STEPS`] of them, to
/// at least [`QUICK_PRECISION_PERCENT`]; cost measurements their runs no longer than that,
/// at most [`QUICK_COST_REPEATS`] of each path.
pub(super) fn apply_quick(suite: &mut Suite) -> Result<(), RunnerError> {
    let q = suite.quick.clone().unwrap_or_default();
    let err = |m: String| RunnerError::suite(&suite.source, m);
    let dur = |key: &str, v: &Option<String>, default: Duration| -> Result<Duration, _> {
        v.as_deref()
            .map(|v| parse_duration(v).map_err(|e| err(format!("[quick] {key}: {e}"))))
            .unwrap_or(Ok(default))
    };
    suite.warmup = dur("warmup", &q.warmup, QUICK_WARMUP)?;
    suite.duration = dur("duration", &q.duration, QUICK_DURATION)?;
    if suite.duration.is_zero() {
        return Err(err("[quick] duration: must be more than 0".into()));
    }
    suite.duration_bound = true;
    if let Some(n) = q.requests {
        check_requests(n).map_err(|p| err(format!("[quick] requests: {p}")))?;
        suite.requests = Some(n);
        // A request count given in [quick] is the stop rule; a duration beside it bounds it.
        suite.duration_bound = q.duration.is_some();
    }
    if let Some(r) = q.repeats {
        suite.repeats =
            NonZeroU32::new(r).ok_or_else(|| err("[quick] repeats: must be at least 1".into()))?;
    }
    if q.users.is_some() || q.rates.is_some() || q.sizes.is_some() {
        let m = validate_matrix(RawMatrix {
            users: q.users.clone(),
            rates: q.rates.clone(),
            sizes: q.sizes.clone(),
            delays: None,
            protocols: None,
        })
        .map_err(|e| err(e.to_string().replace("[matrix]", "[quick]")))?;
        if q.users.is_some() || q.rates.is_some() {
            suite.matrix.intensities = m.intensities;
        }
        if q.sizes.is_some() {
            suite.matrix.sizes = m.sizes;
        }
    }
    // Capacity searches and cost runs shrink with the rest: each step or run at most as
    // long as a quick cell, a search of few steps, the fewest cost runs that still give an
    // interval. The answers are coarse; the short form checks that the suite runs.
    let (warmup, duration) = (suite.warmup, suite.duration);
    if let Some(c) = suite.capacity.as_mut() {
        c.warmup = c.warmup.min(warmup);
        c.step = c.step.min(duration);
        c.max_step = c.max_step.min(duration).max(c.step);
        c.max_steps = c.max_steps.min(QUICK_MAX_STEPS);
        c.precision_percent = c.precision_percent.max(QUICK_PRECISION_PERCENT);
    }
    if let Some(c) = suite.cost.as_mut() {
        c.warmup = c.warmup.min(warmup);
        c.duration = c.duration.min(duration);
        c.repeats = c.repeats.min(QUICK_COST_REPEATS);
    }
    suite.quick = None;
    suite
        .check_size()
        .map_err(|e| RunnerError::suite(&suite.source, e.to_string()))
}
