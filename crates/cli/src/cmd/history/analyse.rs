//! `gatebench history changes|gate|report`: the analyses of the stored series
//! (docs/history.md). They read the store (`Store::series`, `runs`, `summaries`), call
//! `gatebench-history`'s analyses (`changepoint::detect_all`, `gate::evaluate`,
//! `site::render`) and print; nothing here computes a statistic.
//!
//! They never create a history: a missing SQLite file is bad input (exit 2), as are an unknown
//! suite, metric, version or gate expression.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use gatebench_history::changepoint::{self, ChangePoint, Options};
use gatebench_history::gate::{self, Gate, GateOptions, GateReport};
use gatebench_history::series::{Metric, Series};
use gatebench_history::site::{self, Release, SeriesChanges, SiteInput, SuiteInput};
use gatebench_history::store::fingerprint::environment_differences;
use gatebench_history::store::{rfc3339, RunInfo};
use gatebench_history::{HistoryError, Location, Store};

/// `gatebench history changes`.
#[derive(Debug, Args)]
#[command(
    after_help = "Every cell × metric of the suite's complete runs is one series, each \
version's repeats its samples; a change point is the first version on a new level, found by \
E-divisive means (Matteson & James 2014, as MongoDB and Apache Otava) with a permutation test \
(199 permutations, more for a smaller --alpha), the shift by Hodges-Lehmann with its interval. \
Metrics: throughput, p50, p99, p99.9, errors, sut_cpu_per_request, sut_memory.\n\n\
Examples:\n  gatebench history changes\n  gatebench history changes --suite proxy --metric p99 \
--cell 'passthrough*_u100_*'\n  gatebench history changes --json changes.json\n\n\
Exit status: 0 done (whether or not a change was found), 2 bad input (no history, an unknown \
suite or metric, a bad --alpha)."
)]
pub struct ChangesArgs {
    /// Only this suite [default: every suite].
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
    /// Only these metrics (repeatable or comma separated) [default: all seven].
    #[arg(long = "metric", value_name = "METRIC", value_delimiter = ',', value_parser = parse_metric)]
    pub metrics: Vec<Metric>,
    /// Only cells whose key matches this glob (`*` any run, `?` one character), e.g.
    /// 'proxy_u100_*'.
    #[arg(long, value_name = "GLOB")]
    pub cell: Option<String>,
    /// A change is accepted when its permutation p-value is at most this (0 < A < 1).
    #[arg(long, value_name = "A", default_value_t = 0.01)]
    pub alpha: f64,
    /// Write the change points as JSON to FILE (`-` for stdout, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `gatebench history gate`.
#[derive(Debug, Args)]
#[command(
    disable_version_flag = true,
    after_help = "Gates, in any combination: absolute (`p99 < 50ms`, `errors < 0.1%`, \
`throughput >= 20k`: the median of the version's repeats), relative to a pinned baseline \
(`throughput >= -5% vs 2201.11.0`: fails only on a significant change beyond the bound, \
Mann-Whitney at --alpha), stability (`cv(throughput) <= 3%`, `spread(p99) < 10%`: beyond it the \
verdict is unstable, neither pass nor fail). The version's own suite file's `[suite] gates` \
are judged together with every --gate.\n\nA relative gate whose baseline ran on another machine \
(another environment fingerprint: CPU, cores, kernel, governor, limits, pinning, gatebench \
version) is refused, one line naming what differs, unless --allow-other-machine; then the \
difference is flagged and the gates judged.\n\nExamples:\n  gatebench history gate --version \
2201.12.4\n  gatebench history gate --version 2201.12.4 --gate 'p99 < 50ms' --gate 'throughput \
>= -5% vs 2201.11.0' --junit gate.xml\n\nExit status: 0 every gate passed, 1 a gate failed, 3 \
unstable (no failure, but repeats too spread), 4 cannot judge (a cell or baseline missing, too \
few repeats), 2 bad input (no history, an unknown suite or version, a gate that does not parse, \
no gate at all, a relative gate across machines without --allow-other-machine)."
)]
pub struct GateArgs {
    /// The version to judge.
    #[arg(long, value_name = "VERSION")]
    pub version: String,
    /// The suite [default: the only one in the history].
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
    /// A gate expression (repeatable), judged with the suite's own gates.
    #[arg(long = "gate", value_name = "EXPR")]
    pub gates: Vec<String>,
    /// Write the verdicts as JUnit XML to FILE (`-` for stdout): one test case per cell and
    /// gate, failures as `<failure>`, unstable and cannot-judge as `<error>`.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the verdicts as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Judge relative gates even when the baseline ran on another machine (flagged).
    #[arg(long)]
    pub allow_other_machine: bool,
    /// Significance level of relative gates' Mann-Whitney U test (0 < A < 1).
    #[arg(long, value_name = "A", default_value_t = 0.05)]
    pub alpha: f64,
}

/// `gatebench history report`.
#[derive(Debug, Args)]
#[command(
    after_help = "The site is static and self-contained (inline SVG, CSS and a small \
self-check script; no network), written to DIR (created if missing): index.html, per suite a \
page per scenario (throughput, p99, SUT CPU per request and memory against version for every \
cell, each version's repeats as a min–max bar, change points marked) and a page per release \
(seed 004's summary table, its gate verdicts, the change points first seen in it). Releases are \
gated by their suite file's `[suite] gates`. scripts/check-site.sh DIR opens every page in \
headless Chromium.\n\nExit status: 0 written, 2 bad input (no history, an unknown suite, DIR \
not writable)."
)]
pub struct ReportArgs {
    /// The directory to write the site to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Only this suite [default: every suite].
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
}

/// `--metric`: a metric's name.
fn parse_metric(s: &str) -> Result<Metric, String> {
    Metric::parse(s.trim()).ok_or_else(|| {
        format!(
            "`{s}` is not a metric (known: {})",
            Metric::ALL.map(Metric::name).join(", ")
        )
    })
}

/// Opens an existing history (a missing SQLite file is refused, not created), printing
/// where it is on stderr.
fn open_existing(given: Option<&str>) -> Result<Store> {
    let location = Location::resolve(given.filter(|g| !g.trim().is_empty()))?;
    if let Location::Sqlite(path) = &location {
        if !path.exists() {
            bail!(
                "no history at {}: nothing is stored yet (`gatebench history add DIR --version V` \
                 makes it)",
                path.display()
            );
        }
    }
    let store = Store::open(&location)?;
    eprintln!("History: {location}");
    Ok(store)
}

/// The suites asked for: `suite` (which must exist), else every stored one (at least one).
fn pick_suites(store: &Store, suite: Option<&str>) -> Result<Vec<String>> {
    let all: Vec<String> = store.suites()?.into_iter().map(|s| s.name).collect();
    match suite {
        Some(s) if all.iter().any(|n| n == s) => Ok(vec![s.to_owned()]),
        Some(s) => Err(HistoryError::UnknownSuite {
            suite: s.to_owned(),
        }
        .into()),
        None if all.is_empty() => {
            bail!("the history has no suite yet: `gatebench history add DIR --version V` adds one")
        }
        None => Ok(all),
    }
}

/// Writes `text` to `path`, `-` being stdout; a file is written whole or not at all.
fn emit(path: &Path, text: &str) -> Result<()> {
    if path == Path::new("-") {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        lock.write_all(text.as_bytes())
            .and_then(|()| lock.flush())
            .context("writing to stdout")
    } else {
        gatebench_results::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// The change-point options for significance level `alpha`: enough permutations that the
/// smallest p-value possible, `1 / (R + 1)`, is at most half of `alpha`.
fn changepoint_options(alpha: f64) -> Result<Options> {
    if !(alpha > 0.0 && alpha < 1.0) {
        bail!("--alpha must be between 0 and 1 (e.g. 0.01), got {alpha}");
    }
    if alpha < 1e-4 {
        bail!(
            "--alpha {alpha} is below 0.0001: it would take more than 20,000 permutations per test"
        );
    }
    let defaults = Options::default();
    let permutations = defaults.permutations.max((2.0 / alpha).ceil() as usize - 1);
    Ok(Options {
        alpha,
        permutations,
        ..defaults
    })
}

/// A value with its unit.
fn with_unit(v: f64, m: Metric) -> String {
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {}", m.unit())
}

/// One line of the change table.
fn change_row(suite: &str, s: &Series, c: &ChangePoint, many_suites: bool) -> String {
    let m = s.metric;
    let pct = match (c.shift_pct, c.shift_pct_interval) {
        (Some(p), Some((lo, hi))) => format!("{p:+.1}% ({lo:+.1}% … {hi:+.1}%)"),
        _ => "–".to_owned(),
    };
    format!(
        "| {}{} | {} | {} | {} → {} | {} ({} … {}, {:.0}%) | {pct} | {:.3} | {} |\n",
        if many_suites {
            format!("{suite}: ")
        } else {
            String::new()
        },
        s.cell,
        m.name(),
        c.version,
        with_unit(c.before_median, m),
        with_unit(c.after_median, m),
        signed(c.shift, m),
        signed(c.shift_low, m),
        signed(c.shift_high, m),
        c.confidence * 100.0,
        c.p_value,
        if c.regression {
            "regression"
        } else {
            "improvement"
        }
    )
}

/// A shift with its sign and unit.
fn signed(v: f64, m: Metric) -> String {
    let t = with_unit(v, m);
    if v > 0.0 {
        format!("+{t}")
    } else {
        t
    }
}

/// `gatebench history changes`.
pub fn changes(history: Option<&str>, a: ChangesArgs) -> Result<ExitCode> {
    let opts = changepoint_options(a.alpha)?;
    let metrics: Vec<Metric> = if a.metrics.is_empty() {
        Metric::ALL.to_vec()
    } else {
        let mut m: Vec<Metric> = Vec::new();
        for x in &a.metrics {
            if !m.contains(x) {
                m.push(*x);
            }
        }
        m
    };
    let store = open_existing(history)?;
    let suites = pick_suites(&store, a.suite.as_deref())?;
    let mut all: Vec<(String, Series)> = Vec::new();
    for suite in &suites {
        for s in store.series(suite, &metrics)? {
            if a.cell
                .as_deref()
                .is_none_or(|g| gatebench_runner::matrix::glob(g, &s.cell))
            {
                all.push((suite.clone(), s));
            }
        }
    }
    if let (Some(g), true) = (&a.cell, all.is_empty()) {
        bail!("--cell {g}: no cell of {} matches", suites.join(", "));
    }
    let series: Vec<Series> = all.iter().map(|(_, s)| s.clone()).collect();
    let found = changepoint::detect_all(&series, &opts);
    let total: usize = found.iter().map(Vec::len).sum();
    let regressions = found.iter().flatten().filter(|c| c.regression).count();
    if let Some(p) = &a.json {
        let mut list = Vec::new();
        for ((suite, s), cps) in all.iter().zip(&found) {
            for c in cps {
                let mut v = serde_json::to_value(c).context("formatting a change point")?;
                v["suite"] = suite.clone().into();
                v["cell"] = s.cell.clone().into();
                v["metric"] = s.metric.name().into();
                v["unit"] = s.metric.unit().into();
                list.push(v);
            }
        }
        let doc = serde_json::json!({
            "method": "e-divisive means, permutation test",
            "alpha": opts.alpha,
            "permutations": opts.permutations,
            "confidence": opts.confidence,
            "suites": suites,
            "series": series.len(),
            "changes": list,
        });
        let text = serde_json::to_string_pretty(&doc).context("formatting the JSON")? + "\n";
        emit(p, &text)?;
    }
    if a.json.as_deref() != Some(Path::new("-")) {
        let mut out = String::new();
        if total == 0 {
            out.push_str(&format!(
                "No change point in {} series of {} (α = {}, {} permutations).\n",
                series.len(),
                suites.join(", "),
                opts.alpha,
                opts.permutations
            ));
        } else {
            out.push_str(
                "| Cell | Metric | First version on the new level | Before → after (medians) \
                 | Shift (CI, level) | Shift % (CI) | p | |\n|---|---|---|---|---|---|---:|---|\n",
            );
            for ((suite, s), cps) in all.iter().zip(&found) {
                for c in cps {
                    out.push_str(&change_row(suite, s, c, suites.len() > 1));
                }
            }
            out.push_str(&format!(
                "\n{total} change point(s) in {} series of {}: {regressions} regression(s), {} \
                 improvement(s) (E-divisive means, α = {}, {} permutations).\n",
                series.len(),
                suites.join(", "),
                total - regressions,
                opts.alpha,
                opts.permutations
            ));
        }
        print!("{out}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The one suite of `gate`: `suite`, or the only one stored.
fn one_suite(store: &Store, suite: Option<&str>) -> Result<String> {
    let suites = pick_suites(store, suite)?;
    if suites.len() > 1 {
        bail!(
            "the history holds {} suites ({}); name one with --suite",
            suites.len(),
            suites.join(", ")
        );
    }
    Ok(suites
        .into_iter()
        .next()
        .expect("pick_suites gives one or more"))
}

/// The baselines of the relative gates among `gates` whose run is on another machine than
/// `candidate`'s: (baseline, what differs).
fn other_machines(
    gates: &[Gate],
    runs: &[RunInfo],
    candidate: &RunInfo,
) -> Vec<(String, Vec<String>)> {
    let baselines: BTreeSet<&str> = gates
        .iter()
        .filter_map(|g| match g {
            Gate::Relative { baseline, .. } => Some(baseline.as_str()),
            _ => None,
        })
        .collect();
    baselines
        .into_iter()
        .filter_map(|b| {
            let run = runs.iter().find(|r| r.version == b)?;
            (run.env_fingerprint != candidate.env_fingerprint).then(|| {
                (
                    b.to_owned(),
                    environment_differences(&run.environment, &candidate.environment),
                )
            })
        })
        .collect()
}

/// The gates a run is judged by: its suite file's, then `extra`, each once.
fn gates_of(run: &RunInfo, extra: &[Gate]) -> Result<Vec<Gate>> {
    let mut gates = gate::parse_all(&run.gates)
        .with_context(|| format!("the stored [suite] gates of version {}", run.version))?;
    for g in extra {
        if !gates.contains(g) {
            gates.push(g.clone());
        }
    }
    Ok(gates)
}

/// The metrics `gates` look at, each once.
fn gate_metrics(gates: &[Gate]) -> Vec<Metric> {
    let mut m: Vec<Metric> = gates.iter().map(Gate::metric).collect();
    m.sort();
    m.dedup();
    m
}

/// `gatebench history gate`.
pub fn gate(history: Option<&str>, a: GateArgs) -> Result<ExitCode> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        bail!(
            "--alpha must be between 0 and 1 (e.g. 0.05), got {}",
            a.alpha
        );
    }
    let extra = gate::parse_all(&a.gates)?;
    let store = open_existing(history)?;
    let suite = one_suite(&store, a.suite.as_deref())?;
    let runs = store.runs(&suite)?;
    let Some(candidate) = runs.iter().find(|r| r.version == a.version) else {
        let names: Vec<&str> = runs
            .iter()
            .rev()
            .take(8)
            .map(|r| r.version.as_str())
            .collect();
        bail!(
            "version {} is not in the history of suite \"{suite}\" (latest: {})",
            a.version,
            names.join(", ")
        );
    };
    let gates = gates_of(candidate, &extra)?;
    if gates.is_empty() {
        bail!(
            "no gates to judge version {} by: give --gate EXPR, or add `gates = [\"p99 < 50ms\", …]` \
             to the suite file's [suite] table",
            a.version
        );
    }
    let others = other_machines(&gates, &runs, candidate);
    for (baseline, diff) in &others {
        let what = if diff.is_empty() {
            "another environment fingerprint".to_owned()
        } else {
            diff.join("; ")
        };
        if !a.allow_other_machine {
            bail!(
                "a relative gate compares {} with {baseline}, which ran on another machine ({what} \
                 — {baseline} first, {} second): the change would be the machines'; re-run on the \
                 same machine, or pass --allow-other-machine",
                a.version,
                a.version
            );
        }
        eprintln!(
            "gatebench: warning: version {} ran on another machine than its baseline {baseline} \
             ({what}); judged anyway (--allow-other-machine)",
            a.version
        );
    }
    if !candidate.complete {
        eprintln!(
            "gatebench: version {} is stored incomplete ({} of {} cells): it is not judged",
            a.version, candidate.cells, candidate.planned_cells
        );
    }
    let series = store.series(&suite, &gate_metrics(&gates))?;
    let opts = GateOptions {
        alpha: a.alpha,
        ..GateOptions::default()
    };
    let report = gate::evaluate(&gates, &series, &a.version, &opts);
    if let Some(p) = &a.junit {
        emit(p, &gate::junit(&report))?;
    }
    if let Some(p) = &a.json {
        let mut v = serde_json::to_value(&report).context("formatting the verdicts")?;
        v["suite"] = suite.clone().into();
        v["exit_code"] = report.verdict.exit_code().into();
        v["other_machine"] = serde_json::Value::Array(
            others
                .iter()
                .map(|(b, d)| serde_json::json!({"baseline": b, "differences": d}))
                .collect(),
        );
        let text = serde_json::to_string_pretty(&v).context("formatting the JSON")? + "\n";
        emit(p, &text)?;
    }
    let to_stdout = |o: &Option<PathBuf>| o.as_deref() == Some(Path::new("-"));
    let text = gate_text(&suite, &report, &gates, &others);
    if to_stdout(&a.junit) || to_stdout(&a.json) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(ExitCode::from(report.verdict.exit_code() as u8))
}

/// The verdicts as a table and a closing line.
fn gate_text(
    suite: &str,
    r: &GateReport,
    gates: &[Gate],
    others: &[(String, Vec<String>)],
) -> String {
    let mut out = format!(
        "Gates of version {} of suite \"{suite}\": {}\n\n",
        r.candidate,
        gates
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !r.outcomes.is_empty() {
        out.push_str("| Cell | Gate | Verdict | Figures |\n|---|---|---|---|\n");
        for o in &r.outcomes {
            out.push_str(&format!(
                "| {} | `{}` | {} | {} |\n",
                o.cell,
                o.gate,
                o.verdict.name(),
                o.detail
            ));
        }
        out.push('\n');
    }
    for (b, _) in others {
        out.push_str(&format!(
            "Flagged: the baseline {b} ran on another machine (--allow-other-machine).\n"
        ));
    }
    out.push_str(&format!(
        "Verdict: {}{} (exit {})\n",
        r.verdict.name(),
        r.note
            .as_deref()
            .map_or(String::new(), |n| format!(": {n}")),
        r.verdict.exit_code()
    ));
    out
}

/// `gatebench history report`.
pub fn report(history: Option<&str>, a: ReportArgs) -> Result<ExitCode> {
    let store = open_existing(history)?;
    let suites = pick_suites(&store, a.suite.as_deref())?;
    let opts = Options::default();
    let mut site_input = SiteInput {
        title: "gatebench trends".into(),
        suites: Vec::new(),
    };
    let mut change_count = 0;
    for suite in &suites {
        let runs: Vec<RunInfo> = store
            .runs(suite)?
            .into_iter()
            .filter(|r| r.complete)
            .collect();
        let series = store.series(suite, &Metric::ALL)?;
        let found = changepoint::detect_all(&series, &opts);
        let changes: Vec<SeriesChanges> = series
            .iter()
            .zip(found)
            .filter(|(_, cps)| !cps.is_empty())
            .map(|(s, points)| SeriesChanges {
                cell: s.cell.clone(),
                metric: s.metric,
                points,
            })
            .collect();
        change_count += changes.iter().map(|c| c.points.len()).sum::<usize>();
        let (cells, summaries) = store.summaries(suite)?;
        let mut releases = Vec::new();
        for run in &runs {
            let gates = gates_of(run, &[])?;
            let gate = (!gates.is_empty()).then(|| {
                let mut r = gate::evaluate(&gates, &series, &run.version, &GateOptions::default());
                let others = other_machines(&gates, &runs, run);
                if !others.is_empty() {
                    let flag = others
                        .iter()
                        .map(|(b, d)| {
                            format!("baseline {b} ran on another machine ({})", d.join("; "))
                        })
                        .collect::<Vec<_>>()
                        .join("; ");
                    r.note = Some(match r.note.take() {
                        Some(n) => format!("{n}; {flag}"),
                        None => flag,
                    });
                }
                r
            });
            releases.push(Release {
                version: run.version.clone(),
                date: Some(rfc3339(run.date_unix_ms)),
                commit: run.commit.clone(),
                rows: summaries
                    .iter()
                    .find(|v| v.version == run.version)
                    .map(|v| v.rows.iter().map(|(_, row)| row.clone()).collect())
                    .unwrap_or_default(),
                gate,
            });
        }
        site_input.suites.push(SuiteInput {
            name: suite.clone(),
            cells,
            series,
            changes,
            releases,
        });
    }
    let pages = site::render(&site_input, &a.out)
        .with_context(|| format!("writing the site to {}", a.out.display()))?;
    let releases: usize = site_input.suites.iter().map(|s| s.releases.len()).sum();
    println!(
        "Trend site: {} pages ({} suite(s), {releases} releases, {change_count} change points) in \
         {}; open {}",
        pages.len(),
        site_input.suites.len(),
        a.out.display(),
        a.out.join("index.html").display()
    );
    Ok(ExitCode::SUCCESS)
}
