//! Release gates: judging one candidate version of a suite, cell by cell, against objectives a
//! release engineer writes down, and a verdict a CI job can exit on.
//!
//! Three kinds, in any combination, each a one-line expression:
//! - **absolute**, `p99 < 50ms`, `errors < 0.1%`, `throughput >= 20k`: the median of the
//!   candidate's repeats against a fixed objective;
//! - **relative** to a pinned baseline version, `throughput >= -5% vs 2201.11.0`: the change is
//!   the Hodges-Lehmann shift as a percentage of the baseline's median, and it fails only when
//!   it is beyond the bound *and* significant by the exact Mann-Whitney U test at α (the same
//!   statistics `gatebench compare` uses, from `gatebench-report`); a change the repeats cannot
//!   tell from noise passes;
//! - **stability**, `cv(throughput) <= 3%` or `spread(p99) <= 10%`: the candidate's repeats'
//!   coefficient of variation (sample standard deviation over mean) or their range over their
//!   median; beyond the bound the verdict is *unstable* — neither pass nor fail: the figures are
//!   not good enough to judge on, run again on a quieter machine.
//!
//! Gates fail closed: whatever cannot be judged — no cell of the candidate, the baseline version
//! missing, too few repeats for the test to ever reach significance (4 against 4 is the least
//! at α = 0.05), a baseline median of zero for a relative gate — is [`Verdict::CannotJudge`],
//! never a pass. The overall verdict is the worst over every cell and gate, in the order
//! fail, unstable, cannot judge, pass; [`Verdict::exit_code`] maps it to the process's exit
//! status (2 stays bad input, as everywhere in gatebench).
//!
//! What it does not do: read the store (it takes [`Series`]), check that the candidate and the
//! baseline ran on the same machine (the store compares environment fingerprints), or pick
//! cells (a gate applies to every cell of the suite).

use std::fmt::{self, Write};
use std::str::FromStr;

use gatebench_report::stats;
use gatebench_report::svg::esc;
use serde::{Deserialize, Serialize};

use crate::series::{Metric, Series};

/// Exit status when every gate passed.
pub const EXIT_PASS: i32 = 0;
/// Exit status when a gate failed.
pub const EXIT_FAIL: i32 = 1;
/// Exit status for bad input (a gate that does not parse, a store that cannot be read).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit status when no gate failed but the repeats were too spread to judge.
pub const EXIT_UNSTABLE: i32 = 3;
/// Exit status when something could not be judged at all (fail closed).
pub const EXIT_CANNOT_JUDGE: i32 = 4;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// Whether `a cmp b` holds.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// How the spread of the repeats is measured by a stability gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Spread {
    /// Coefficient of variation: sample standard deviation over the mean, %.
    Cv,
    /// Range over median: `(max − min) / median`, %.
    Range,
}

/// One gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Gate {
    /// The candidate's median against a fixed objective, in the metric's unit.
    Absolute {
        /// The metric.
        metric: Metric,
        /// The comparison that must hold.
        cmp: Cmp,
        /// The objective, in [`Metric::unit`].
        value: f64,
    },
    /// The change from a pinned baseline version, %, judged only when significant.
    Relative {
        /// The metric.
        metric: Metric,
        /// The comparison the change must satisfy.
        cmp: Cmp,
        /// The bound on the change, % of the baseline (signed: `-5` allows a 5 % drop).
        pct: f64,
        /// The baseline version.
        baseline: String,
    },
    /// The spread of the candidate's repeats within a bound, else unstable.
    Stability {
        /// The metric.
        metric: Metric,
        /// How the spread is measured.
        spread: Spread,
        /// The largest spread allowed, %.
        max_pct: f64,
        /// Whether the bound itself is allowed (`<=`) or not (`<`).
        inclusive: bool,
    },
}

/// A gate expression that does not parse: the expression and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad gate `{input}`: {problem}")]
#[non_exhaustive]
pub struct GateParseError {
    /// The expression as given.
    pub input: String,
    /// What is wrong, for a person.
    pub problem: String,
}

impl Gate {
    /// The metric the gate looks at.
    pub fn metric(&self) -> Metric {
        match self {
            Gate::Absolute { metric, .. }
            | Gate::Relative { metric, .. }
            | Gate::Stability { metric, .. } => *metric,
        }
    }
}

impl fmt::Display for Gate {
    /// The gate as an expression [`Gate::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gate::Absolute { metric, cmp, value } => {
                write!(f, "{} {} {}", metric.name(), cmp.symbol(), fmt_num(*value))?;
                match metric.unit() {
                    "req/s" => Ok(()),
                    "µs" => f.write_str("us"),
                    u => f.write_str(u),
                }
            }
            Gate::Relative {
                metric,
                cmp,
                pct,
                baseline,
            } => write!(
                f,
                "{} {} {}{}% vs {baseline}",
                metric.name(),
                cmp.symbol(),
                if *pct > 0.0 { "+" } else { "" },
                fmt_num(*pct)
            ),
            Gate::Stability {
                metric,
                spread,
                max_pct,
                inclusive,
            } => write!(
                f,
                "{}({}) {} {}%",
                match spread {
                    Spread::Cv => "cv",
                    Spread::Range => "spread",
                },
                metric.name(),
                if *inclusive { "<=" } else { "<" },
                fmt_num(*max_pct)
            ),
        }
    }
}

/// A number without a needless fraction (`50`, `0.1`).
fn fmt_num(v: f64) -> String {
    let s = format!("{v}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// The metric called `name`: [`Metric::name`] or a common alias.
fn metric_named(name: &str) -> Option<Metric> {
    Metric::parse(name).or(match name {
        "rps" | "tput" => Some(Metric::Throughput),
        "p999" => Some(Metric::P999),
        "error" | "errors%" | "error_pct" => Some(Metric::ErrorPct),
        "cpu" | "cpu_per_request" => Some(Metric::SutCpuPerRequest),
        "memory" | "mem" => Some(Metric::SutMemory),
        _ => None,
    })
}

/// The units a metric's objective may be written in, with their factor to [`Metric::unit`].
fn units(metric: Metric) -> &'static [(&'static str, f64)] {
    match metric {
        Metric::P50 | Metric::P99 | Metric::P999 => &[
            ("", 1.0),
            ("ms", 1.0),
            ("s", 1000.0),
            ("us", 1e-3),
            ("µs", 1e-3),
        ],
        Metric::ErrorPct => &[("%", 1.0), ("", 1.0)],
        Metric::Throughput => &[
            ("", 1.0),
            ("k", 1e3),
            ("/s", 1.0),
            ("rps", 1.0),
            ("req/s", 1.0),
        ],
        Metric::SutCpuPerRequest => &[
            ("", 1.0),
            ("us", 1.0),
            ("µs", 1.0),
            ("ms", 1e3),
            ("ns", 1e-3),
        ],
        Metric::SutMemory => &[
            ("", 1.0),
            ("MiB", 1.0),
            ("GiB", 1024.0),
            ("KiB", 1.0 / 1024.0),
        ],
    }
}

/// Splits `text` into a number and the rest (`"50ms"` → `(50, "ms")`).
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let end = text
        .char_indices()
        .find(|(i, c)| {
            !(c.is_ascii_digit()
                || *c == '.'
                || ((*c == '-' || *c == '+') && *i == 0)
                || ((*c == 'e' || *c == 'E')
                    && text[i + 1..].starts_with(|d: char| d.is_ascii_digit())))
        })
        .map_or(text.len(), |(i, _)| i);
    let v: f64 = text[..end].parse().ok()?;
    v.is_finite().then_some((v, text[end..].trim()))
}

impl FromStr for Gate {
    type Err = GateParseError;

    /// Reads `METRIC OP VALUE[UNIT]`, `METRIC OP ±N% vs VERSION`, `cv(METRIC) < N%` or
    /// `spread(METRIC) < N%`, where OP is `<`, `<=`, `>` or `>=`.
    fn from_str(input: &str) -> Result<Gate, GateParseError> {
        let bad = |problem: String| GateParseError {
            input: input.to_owned(),
            problem,
        };
        let s = input.trim();
        let (at, cmp) = ["<=", ">=", "<", ">"]
            .iter()
            .filter_map(|op| s.find(op).map(|i| (i, *op)))
            .min_by_key(|(i, op)| (*i, usize::MAX - op.len()))
            .map(|(i, op)| {
                let cmp = match op {
                    "<=" => Cmp::Le,
                    ">=" => Cmp::Ge,
                    "<" => Cmp::Lt,
                    _ => Cmp::Gt,
                };
                (i, cmp)
            })
            .ok_or_else(|| bad("no comparison: expected one of <, <=, >, >=".into()))?;
        let left = s[..at].trim();
        let right = s[at + cmp.symbol().len()..].trim();
        if right.is_empty() {
            return Err(bad(format!("nothing after `{}`", cmp.symbol())));
        }
        if right.starts_with(['<', '>', '=']) {
            return Err(bad("two comparisons".into()));
        }
        let metric_of = |name: &str| {
            metric_named(name).ok_or_else(|| {
                bad(format!(
                    "unknown metric `{name}`: expected one of {}",
                    Metric::ALL.map(Metric::name).join(", ")
                ))
            })
        };
        // Stability: cv(m) / spread(m).
        if let Some((func, rest)) = left.split_once('(') {
            let spread = match func.trim() {
                "cv" => Spread::Cv,
                "spread" | "range" => Spread::Range,
                other => {
                    return Err(bad(format!(
                        "unknown function `{other}`: expected cv(METRIC) or spread(METRIC)"
                    )))
                }
            };
            let name = rest
                .strip_suffix(')')
                .ok_or_else(|| bad("missing `)`".into()))?;
            let metric = metric_of(name.trim())?;
            let inclusive = match cmp {
                Cmp::Lt => false,
                Cmp::Le => true,
                _ => {
                    return Err(bad(
                        "a stability gate bounds the spread from above: use < or <=".into(),
                    ))
                }
            };
            let pct = right
                .strip_suffix('%')
                .ok_or_else(|| bad("a spread is a percentage: write it with %".into()))?;
            let max_pct: f64 = pct
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(format!("`{}` is not a percentage", pct.trim())))?;
            return Ok(Gate::Stability {
                metric,
                spread,
                max_pct,
                inclusive,
            });
        }
        if left.is_empty() {
            return Err(bad("no metric before the comparison".into()));
        }
        let metric = metric_of(left)?;
        // Relative: ±N% vs VERSION.
        if let Some((change, baseline)) = right.split_once(" vs ") {
            let baseline = baseline.trim();
            if baseline.is_empty() || baseline.contains(char::is_whitespace) {
                return Err(bad(format!("`{baseline}` is not a version")));
            }
            let pct = change.trim().strip_suffix('%').ok_or_else(|| {
                bad("a change against a baseline is a percentage: write it with %".into())
            })?;
            let pct: f64 = pct
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| bad(format!("`{}` is not a percentage", pct.trim())))?;
            return Ok(Gate::Relative {
                metric,
                cmp,
                pct,
                baseline: baseline.to_owned(),
            });
        }
        if right.ends_with(" vs") || right.starts_with("vs ") || right.contains(" vs") {
            return Err(bad(
                "`vs` needs a change before it and a version after it".into()
            ));
        }
        let (v, unit) = number_and_unit(right)
            .ok_or_else(|| bad(format!("`{right}` is not a number with a unit")))?;
        let allowed = units(metric);
        let factor = allowed
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = allowed
                    .iter()
                    .map(|(u, _)| *u)
                    .filter(|u| !u.is_empty())
                    .collect();
                bad(format!(
                    "`{unit}` is not a unit of {} ({}): use {}",
                    metric.name(),
                    metric.unit(),
                    names.join(", ")
                ))
            })?;
        Ok(Gate::Absolute {
            metric,
            cmp,
            value: v * factor,
        })
    }
}

/// Parses every expression; the first bad one is the error.
pub fn parse_all<S: AsRef<str>>(exprs: &[S]) -> Result<Vec<Gate>, GateParseError> {
    exprs.iter().map(|e| e.as_ref().parse()).collect()
}

/// A verdict, for one cell and gate or overall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The objective holds.
    Pass,
    /// Nothing to judge on: fail closed.
    CannotJudge,
    /// The repeats are too spread to judge: neither pass nor fail.
    Unstable,
    /// The objective does not hold.
    Fail,
}

impl Verdict {
    /// The process exit status for this verdict ([`EXIT_PASS`] …).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => EXIT_PASS,
            Verdict::Fail => EXIT_FAIL,
            Verdict::Unstable => EXIT_UNSTABLE,
            Verdict::CannotJudge => EXIT_CANNOT_JUDGE,
        }
    }

    /// How it is printed.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unstable => "unstable",
            Verdict::CannotJudge => "cannot judge",
        }
    }
}

/// How gates are judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateOptions {
    /// Significance level of relative gates' Mann-Whitney test.
    pub alpha: f64,
    /// Confidence level of the shift's interval shown with relative gates.
    pub confidence: f64,
    /// The fewest repeats a stability gate judges a spread from.
    pub min_stability_repeats: usize,
}

impl Default for GateOptions {
    /// α = 0.05 (as `compare`), 95 % intervals, a spread from 3 repeats or more.
    fn default() -> GateOptions {
        GateOptions {
            alpha: 0.05,
            confidence: 0.95,
            min_stability_repeats: 3,
        }
    }
}

/// One gate judged on one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The suite.
    pub suite: String,
    /// The cell's key.
    pub cell: String,
    /// The gate.
    pub gate: Gate,
    /// The verdict.
    pub verdict: Verdict,
    /// The figures behind the verdict, for a person.
    pub detail: String,
}

/// Every gate on every cell of a candidate, and the overall verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// The candidate version.
    pub candidate: String,
    /// One outcome per cell and gate.
    pub outcomes: Vec<Outcome>,
    /// The worst outcome (fail, unstable, cannot judge, pass); cannot judge when there was
    /// nothing to judge.
    pub verdict: Verdict,
    /// Why the verdict is cannot judge when no outcome says (no gates, no cell).
    pub note: Option<String>,
}

/// Judges `candidate` by `gates` on every cell that has a run of it in `series`.
pub fn evaluate(
    gates: &[Gate],
    series: &[Series],
    candidate: &str,
    opts: &GateOptions,
) -> GateReport {
    let has = |suite: &str, cell: &str, version: &str| {
        series.iter().any(|s| {
            s.suite == suite && s.cell == cell && s.points.iter().any(|p| p.version == version)
        })
    };
    // The candidate's cells, and for relative gates the baseline's too: a cell the candidate
    // dropped is not judged a pass by being absent.
    let mut cells: Vec<(&str, &str)> = series
        .iter()
        .filter(|s| {
            s.points.iter().any(|p| {
                p.version == candidate
                    || gates.iter().any(
                        |g| matches!(g, Gate::Relative { baseline, .. } if *baseline == p.version),
                    )
            })
        })
        .map(|s| (s.suite.as_str(), s.cell.as_str()))
        .collect();
    cells.sort_unstable();
    cells.dedup();
    let candidate_cells = cells
        .iter()
        .filter(|(suite, cell)| has(suite, cell, candidate))
        .count();
    let note = if gates.is_empty() {
        Some("no gates to judge by".to_owned())
    } else if candidate_cells == 0 {
        Some(format!("no cell has a run of version {candidate}"))
    } else {
        None
    };
    let mut outcomes = Vec::new();
    for (suite, cell) in &cells {
        for gate in gates {
            let in_candidate = has(suite, cell, candidate);
            let judged = in_candidate
                || matches!(gate, Gate::Relative { baseline, .. } if has(suite, cell, baseline));
            if !judged {
                continue;
            }
            let s = series
                .iter()
                .find(|s| s.suite == *suite && s.cell == *cell && s.metric == gate.metric());
            let (verdict, detail) = match s {
                None => (
                    Verdict::CannotJudge,
                    format!("no {} figures for this cell", gate.metric().name()),
                ),
                Some(s) => judge(gate, s, candidate, opts),
            };
            outcomes.push(Outcome {
                suite: suite.to_string(),
                cell: cell.to_string(),
                gate: gate.clone(),
                verdict,
                detail,
            });
        }
    }
    let verdict = if note.is_some() {
        Verdict::CannotJudge
    } else {
        outcomes
            .iter()
            .map(|o| o.verdict)
            .max()
            .unwrap_or(Verdict::CannotJudge)
    };
    GateReport {
        candidate: candidate.to_owned(),
        outcomes,
        verdict,
        note,
    }
}

/// The finite samples of `version` in `s`; `None` when it has no point there.
fn samples(s: &Series, version: &str) -> Option<Vec<f64>> {
    s.points.iter().find(|p| p.version == version).map(|p| {
        p.samples
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect()
    })
}

/// A value with its unit, for details.
fn with_unit(v: f64, m: Metric) -> String {
    let digits = if v.abs() >= 100.0 { 1 } else { 3 };
    format!("{v:.digits$} {}", m.unit())
}

/// One gate on one cell's series.
fn judge(gate: &Gate, s: &Series, candidate: &str, opts: &GateOptions) -> (Verdict, String) {
    let m = s.metric;
    let Some(cand) = samples(s, candidate).filter(|c| !c.is_empty()) else {
        return (
            Verdict::CannotJudge,
            format!("no {} figures of version {candidate}", m.name()),
        );
    };
    match gate {
        Gate::Absolute { cmp, value, .. } => {
            let med = stats::median(&cand).expect("non-empty");
            let ok = cmp.holds(med, *value);
            (
                if ok { Verdict::Pass } else { Verdict::Fail },
                format!(
                    "median {} over {} repeats {} {}",
                    with_unit(med, m),
                    cand.len(),
                    if ok { "meets" } else { "misses" },
                    gate
                ),
            )
        }
        Gate::Relative {
            cmp, pct, baseline, ..
        } => {
            let Some(base) = samples(s, baseline).filter(|b| !b.is_empty()) else {
                return (
                    Verdict::CannotJudge,
                    format!("the baseline version {baseline} has no run of this cell"),
                );
            };
            let least = stats::min_p_value(base.len(), cand.len());
            if least > opts.alpha {
                return (
                    Verdict::CannotJudge,
                    format!(
                        "too few repeats ({} and {}): the smallest p-value they allow is {least:.3}, \
                         above α = {}",
                        base.len(),
                        cand.len(),
                        opts.alpha
                    ),
                );
            }
            let base_med = stats::median(&base).expect("non-empty");
            if base_med == 0.0 {
                return (
                    Verdict::CannotJudge,
                    format!(
                        "the baseline's median is 0: no change in % from it; use an absolute \
                         gate on {}",
                        m.name()
                    ),
                );
            }
            let test = stats::mann_whitney(&base, &cand).expect("non-empty samples");
            let shift = stats::hodges_lehmann(&base, &cand, opts.confidence).expect("non-empty");
            let to_pct = |v: f64| v / base_med.abs() * 100.0;
            let change = to_pct(shift.estimate);
            let figures = format!(
                "{} → {} ({:+.1}%, CI {:+.1}% … {:+.1}% ({:.0}%), p = {:.3}, n = {}+{}, α = {})",
                with_unit(base_med, m),
                with_unit(stats::median(&cand).expect("non-empty"), m),
                change,
                to_pct(shift.low),
                to_pct(shift.high),
                shift.level * 100.0,
                test.p_value,
                base.len(),
                cand.len(),
                opts.alpha
            );
            if test.p_value > opts.alpha {
                (Verdict::Pass, format!("{figures}: no significant change"))
            } else if cmp.holds(change, *pct) {
                (
                    Verdict::Pass,
                    format!("{figures}: a significant change within the bound"),
                )
            } else {
                (
                    Verdict::Fail,
                    format!("{figures}: a significant change beyond the bound"),
                )
            }
        }
        Gate::Stability {
            spread,
            max_pct,
            inclusive,
            ..
        } => {
            if cand.len() < opts.min_stability_repeats {
                return (
                    Verdict::CannotJudge,
                    format!(
                        "{} repeats: a spread needs at least {}",
                        cand.len(),
                        opts.min_stability_repeats
                    ),
                );
            }
            let n = cand.len() as f64;
            let value = match spread {
                Spread::Cv => {
                    let mean = cand.iter().sum::<f64>() / n;
                    let var = cand.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                    if var == 0.0 {
                        Some(0.0)
                    } else {
                        (mean != 0.0).then(|| var.sqrt() / mean.abs() * 100.0)
                    }
                }
                Spread::Range => {
                    let (lo, hi) = cand
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                            (a.min(*x), b.max(*x))
                        });
                    let med = stats::median(&cand).expect("non-empty");
                    if hi == lo {
                        Some(0.0)
                    } else {
                        (med != 0.0).then(|| (hi - lo) / med.abs() * 100.0)
                    }
                }
            };
            let Some(value) = value else {
                return (
                    Verdict::CannotJudge,
                    "the repeats centre on 0: no relative spread".to_owned(),
                );
            };
            let ok = if *inclusive {
                value <= *max_pct
            } else {
                value < *max_pct
            };
            let what = match spread {
                Spread::Cv => "coefficient of variation",
                Spread::Range => "range over median",
            };
            (
                if ok { Verdict::Pass } else { Verdict::Unstable },
                format!(
                    "{what} {value:.2}% over {} repeats {}",
                    cand.len(),
                    if ok {
                        "within the bound"
                    } else {
                        "beyond the bound: unstable, neither pass nor fail"
                    }
                ),
            )
        }
    }
}

/// Escapes text for XML, dropping the control characters XML 1.0 does not allow.
fn xml(s: &str) -> String {
    esc(s)
        .chars()
        .map(|c| {
            if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The report as JUnit XML, in the subset of the Ant schema `gatebench compare --junit` writes
/// (see `gatebench-report`'s `compare::junit`): one `<testcase>` per cell and gate. A failed
/// gate is a `<failure>`; an unstable one and one that could not be judged are `<error>`s
/// (`type="unstable"`, `type="cannot-judge"`), not `<skipped>`, so that a CI system reading the
/// file fails closed as the exit status does.
pub fn junit(r: &GateReport) -> String {
    let count = |v: Verdict| r.outcomes.iter().filter(|o| o.verdict == v).count();
    let tests = r.outcomes.len();
    let failures = count(Verdict::Fail);
    let errors = count(Verdict::Unstable) + count(Verdict::CannotJudge);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"gatebench history gate\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\" skipped=\"0\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" \
         skipped=\"0\">",
        xml(&format!("gates of {}", r.candidate))
    );
    let _ = writeln!(out, "    <properties>");
    let _ = writeln!(
        out,
        "      <property name=\"candidate\" value=\"{}\"/>",
        xml(&r.candidate)
    );
    let _ = writeln!(
        out,
        "      <property name=\"verdict\" value=\"{}\"/>",
        r.verdict.name()
    );
    if let Some(n) = &r.note {
        let _ = writeln!(out, "      <property name=\"note\" value=\"{}\"/>", xml(n));
    }
    let _ = writeln!(out, "    </properties>");
    for o in &r.outcomes {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            xml(&format!("gatebench.gate.{}.{}", o.suite, o.cell)),
            xml(&o.gate.to_string())
        );
        let text = xml(&o.detail);
        match o.verdict {
            Verdict::Pass => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{text}</system-out>\n    </testcase>"
                );
            }
            Verdict::Fail => {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"gate\" message=\"{text}\">{text}</failure>\n    \
                     </testcase>"
                );
            }
            Verdict::Unstable | Verdict::CannotJudge => {
                let kind = if o.verdict == Verdict::Unstable {
                    "unstable"
                } else {
                    "cannot-judge"
                };
                let _ = writeln!(
                    out,
                    ">\n      <error type=\"{kind}\" message=\"{text}\">{text}</error>\n    \
                     </testcase>"
                );
            }
        }
    }
    let _ = writeln!(out, "  </testsuite>");
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Point;

    fn series(metric: Metric, cell: &str, points: &[(&str, &[f64])]) -> Series {
        Series {
            suite: "proxy".into(),
            cell: cell.into(),
            metric,
            points: points
                .iter()
                .map(|(v, s)| Point {
                    version: (*v).into(),
                    samples: s.to_vec(),
                })
                .collect(),
        }
    }

    fn gate(s: &str) -> Gate {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn expressions_parse_and_print_back() {
        assert_eq!(
            gate("p99 < 50ms"),
            Gate::Absolute {
                metric: Metric::P99,
                cmp: Cmp::Lt,
                value: 50.0
            }
        );
        assert_eq!(
            gate("p99<0.05s"),
            Gate::Absolute {
                metric: Metric::P99,
                cmp: Cmp::Lt,
                value: 50.0
            }
        );
        assert_eq!(
            gate("errors < 0.1%"),
            Gate::Absolute {
                metric: Metric::ErrorPct,
                cmp: Cmp::Lt,
                value: 0.1
            }
        );
        assert_eq!(
            gate("throughput >= 20k"),
            Gate::Absolute {
                metric: Metric::Throughput,
                cmp: Cmp::Ge,
                value: 20_000.0
            }
        );
        assert_eq!(
            gate("throughput >= -5% vs 2201.11.0"),
            Gate::Relative {
                metric: Metric::Throughput,
                cmp: Cmp::Ge,
                pct: -5.0,
                baseline: "2201.11.0".into()
            }
        );
        assert_eq!(
            gate("cv(throughput) <= 3%"),
            Gate::Stability {
                metric: Metric::Throughput,
                spread: Spread::Cv,
                max_pct: 3.0,
                inclusive: true
            }
        );
        assert_eq!(
            gate("sut_memory <= 1GiB").to_string(),
            "sut_memory <= 1024MiB"
        );
        for text in [
            "p99 < 50ms",
            "errors < 0.1%",
            "throughput >= 20000",
            "throughput >= -5% vs 2201.11.0",
            "p99.9 <= +10% vs 1.2",
            "cv(throughput) <= 3%",
            "spread(p99) < 10%",
            "sut_cpu_per_request < 120us",
        ] {
            assert_eq!(gate(text).to_string(), text);
            assert_eq!(gate(&gate(text).to_string()), gate(text));
        }
    }

    #[test]
    fn bad_expressions_say_what_is_wrong_in_one_line() {
        let cases = [
            ("p99 50ms", "no comparison"),
            ("latency < 50ms", "unknown metric `latency`"),
            (
                "p99 < 50%",
                "`%` is not a unit of p99 (ms): use ms, s, us, µs",
            ),
            ("throughput >= fast", "`fast` is not a number"),
            ("throughput >= -5 vs 1.0", "write it with %"),
            ("throughput >= -5% vs ", "a version after it"),
            ("cv(throughput) > 3%", "use < or <="),
            ("cv(throughput <= 3%", "missing `)`"),
            ("stddev(p99) < 3%", "unknown function `stddev`"),
            ("p99 <", "nothing after `<`"),
            ("< 5ms", "no metric"),
            ("p99 <<= 5ms", "two comparisons"),
        ];
        for (text, problem) in cases {
            let e = text.parse::<Gate>().expect_err(text);
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("bad gate `{text}`: ")), "{msg}");
            assert!(msg.contains(problem), "{text}: {msg}");
            assert!(!msg.contains('\n'));
        }
        assert!(parse_all(&["p99 < 5ms", "bogus"]).is_err());
        assert_eq!(parse_all(&["p99 < 5ms", "errors < 1%"]).unwrap().len(), 2);
    }

    fn suite() -> Vec<Series> {
        vec![
            series(
                Metric::Throughput,
                "proxy_u10_s50_d0",
                &[
                    ("1.0", &[1000.0, 1010.0, 990.0, 1005.0, 995.0]),
                    ("1.1", &[900.0, 905.0, 895.0, 910.0, 890.0]),
                    ("1.2", &[1001.0, 1011.0, 991.0, 1006.0, 996.0]),
                    ("1.3", &[1200.0, 800.0, 1000.0, 1100.0, 900.0]),
                    ("1.4", &[1000.0, 1010.0]),
                ],
            ),
            series(
                Metric::P99,
                "proxy_u10_s50_d0",
                &[
                    ("1.0", &[10.0, 10.2, 9.8, 10.1, 9.9]),
                    ("1.1", &[12.0, 12.2, 11.8, 12.1, 11.9]),
                    ("1.2", &[10.0, 10.2, 9.8, 10.1, 9.9]),
                    ("1.3", &[10.0, 10.2, 9.8, 10.1, 9.9]),
                    ("1.4", &[10.0, 10.2]),
                ],
            ),
        ]
    }

    fn verdict(gates: &[&str], version: &str) -> GateReport {
        let g = parse_all(gates).unwrap();
        evaluate(&g, &suite(), version, &GateOptions::default())
    }

    #[test]
    fn absolute_gates() {
        assert_eq!(verdict(&["p99 < 11ms"], "1.0").verdict, Verdict::Pass);
        let r = verdict(&["p99 < 11ms"], "1.1");
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.outcomes[0].detail.contains("median 12.000 ms"), "{r:?}");
        assert_eq!(r.verdict.exit_code(), EXIT_FAIL);
    }

    #[test]
    fn relative_gates_fail_only_on_a_significant_change_beyond_the_bound() {
        // 1.1 lost 10 %: significant (5 against 5 apart, p = 0.008) and beyond −5 %.
        let r = verdict(&["throughput >= -5% vs 1.0"], "1.1");
        assert_eq!(r.verdict, Verdict::Fail, "{r:?}");
        assert!(r.outcomes[0].detail.contains("-10.0%"), "{r:?}");
        // Within a −15 % bound it passes.
        assert_eq!(
            verdict(&["throughput >= -15% vs 1.0"], "1.1").verdict,
            Verdict::Pass
        );
        // 1.2 is 0.1 % up: no significant change, passes even a strict bound.
        let r = verdict(&["throughput >= 0% vs 1.0"], "1.2");
        assert_eq!(r.verdict, Verdict::Pass);
        // p99 up 20 % against a +10 % bound.
        assert_eq!(
            verdict(&["p99 <= +10% vs 1.0"], "1.1").verdict,
            Verdict::Fail
        );
    }

    #[test]
    fn stability_gates_give_unstable_not_fail() {
        // 1.3's throughput repeats spread 800 … 1200: CV 15.8 %.
        let r = verdict(&["cv(throughput) <= 5%", "p99 < 11ms"], "1.3");
        assert_eq!(r.verdict, Verdict::Unstable, "{r:?}");
        assert_eq!(r.verdict.exit_code(), EXIT_UNSTABLE);
        assert_eq!(r.outcomes[1].verdict, Verdict::Pass);
        assert!(r.outcomes[0].detail.contains("15.81%"), "{r:?}");
        assert_eq!(
            verdict(&["spread(throughput) < 5%"], "1.0").verdict,
            Verdict::Pass
        );
        assert_eq!(
            verdict(&["spread(throughput) < 2%"], "1.0").verdict,
            Verdict::Unstable
        );
        // A failure outranks instability.
        assert_eq!(
            verdict(&["cv(throughput) <= 5%", "p99 < 9ms"], "1.3").verdict,
            Verdict::Fail
        );
    }

    #[test]
    fn gates_fail_closed() {
        // No cell of the candidate.
        let r = verdict(&["p99 < 11ms"], "9.9");
        assert_eq!(r.verdict, Verdict::CannotJudge);
        assert_eq!(r.verdict.exit_code(), EXIT_CANNOT_JUDGE);
        assert!(r.note.as_deref().unwrap().contains("9.9"));
        // No gates.
        assert_eq!(verdict(&[], "1.0").verdict, Verdict::CannotJudge);
        // The baseline missing.
        let r = verdict(&["throughput >= -5% vs 0.9"], "1.1");
        assert_eq!(r.verdict, Verdict::CannotJudge);
        assert!(r.outcomes[0].detail.contains("0.9 has no run"), "{r:?}");
        // Too few repeats for significance: 1.4 has two; two against five allows p ≥ 0.095.
        let r = verdict(&["throughput >= -5% vs 1.0"], "1.4");
        assert_eq!(r.verdict, Verdict::CannotJudge, "{r:?}");
        assert!(r.outcomes[0].detail.contains("too few repeats"), "{r:?}");
        // …and too few for a spread.
        assert_eq!(
            verdict(&["cv(p99) < 5%"], "1.4").verdict,
            Verdict::CannotJudge
        );
        // A cell the baseline has and the candidate dropped.
        let mut s = suite();
        s.push(series(
            Metric::Throughput,
            "proxy_u100_s50_d0",
            &[("1.0", &[1.0, 2.0, 3.0, 4.0])],
        ));
        let g = parse_all(&["throughput >= -50% vs 1.0", "p99 < 100ms"]).unwrap();
        let r = evaluate(&g, &s, "1.1", &GateOptions::default());
        assert_eq!(r.verdict, Verdict::CannotJudge, "{r:?}");
        let dropped: Vec<_> = r
            .outcomes
            .iter()
            .filter(|o| o.cell == "proxy_u100_s50_d0")
            .collect();
        assert_eq!(
            dropped.len(),
            1,
            "only the relative gate looks for it: {r:?}"
        );
        assert!(dropped[0]
            .detail
            .contains("no throughput figures of version 1.1"));
        // A metric the cell has no figures for.
        let r = verdict(&["errors < 1%"], "1.0");
        assert_eq!(r.verdict, Verdict::CannotJudge);
        // A baseline median of 0 (errors) cannot give a percentage.
        let mut s = suite();
        s.push(series(
            Metric::ErrorPct,
            "proxy_u10_s50_d0",
            &[("1.0", &[0.0; 5]), ("1.1", &[0.5; 5])],
        ));
        let g = parse_all(&["errors <= +10% vs 1.0"]).unwrap();
        let r = evaluate(&g, &s, "1.1", &GateOptions::default());
        assert_eq!(r.verdict, Verdict::CannotJudge, "{r:?}");
        // Cannot judge outranks pass: one good cell does not hide a cell without a baseline.
        let mut s = suite();
        s.push(series(
            Metric::Throughput,
            "proxy_u100_s50_d0",
            &[("1.2", &[1.0, 2.0, 3.0, 4.0])],
        ));
        let g = parse_all(&["throughput >= -50% vs 1.0"]).unwrap();
        let r = evaluate(&g, &s, "1.2", &GateOptions::default());
        assert_eq!(r.outcomes.len(), 2);
        assert_eq!(r.verdict, Verdict::CannotJudge);
    }

    #[test]
    fn exit_codes_are_distinct_and_two_stays_bad_input() {
        let codes = [
            Verdict::Pass.exit_code(),
            Verdict::Fail.exit_code(),
            EXIT_BAD_INPUT,
            Verdict::Unstable.exit_code(),
            Verdict::CannotJudge.exit_code(),
        ];
        assert_eq!(codes, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn junit_rendering() {
        let r = verdict(
            &[
                "p99 < 11ms",
                "cv(throughput) <= 5%",
                "throughput >= -5% vs 0.9",
            ],
            "1.3",
        );
        let x = junit(&r);
        assert!(x.starts_with("<?xml"));
        assert!(x.contains(
            "<testsuites name=\"gatebench history gate\" tests=\"3\" failures=\"0\" errors=\"2\""
        ));
        assert_eq!(x.matches("<testcase ").count(), 3);
        assert!(x.contains("<error type=\"unstable\""), "{x}");
        assert!(x.contains("<error type=\"cannot-judge\""), "{x}");
        assert!(x.contains("name=\"p99 &lt; 11ms\""), "{x}");
        assert!(x.contains("<property name=\"verdict\" value=\"unstable\"/>"));
        // Well-formed.
        let mut reader = quick_xml::Reader::from_str(&x);
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("not well-formed: {e}\n{x}"),
            }
        }
        let fail = junit(&verdict(&["p99 < 11ms"], "1.1"));
        assert!(fail.contains("<failure type=\"gate\""), "{fail}");
    }
}
