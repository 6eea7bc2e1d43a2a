//! `gatebench compare A B [C…]`: compares results directories — two versions of a service, or
//! a version history against a chosen baseline — or, with `--scenario`, scenarios of one run
//! (A and B defined in one suite, their cells interleaved).
//!
//! Prints Markdown (benchstat-style tables per metric, warnings first), writes JSON and JUnit
//! XML on request, and with `--fail-on-regression 5%` is a CI gate: exit 1 when a significant
//! regression beyond the threshold is found. The statistics live in `gatebench_report::stats`
//! and `gatebench_report::compare`; this module reads the directories and maps the outcome to
//! an exit status.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use gatebench_model::{CellRecord, Environment};
use gatebench_report::compare::text::describe;
use gatebench_report::compare::{self, Comparison, Options, RunInput};

/// `gatebench compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "Cells are matched by scenario, protocol, users or rate, message size \
and back-end delay; a cell's repeats are its samples. Each metric gets the median of each run, \
the change (Hodges-Lehmann estimate) with its confidence interval, the Mann-Whitney U p-value \
and a verdict: improved, regressed, no significant change, or too few repeats to tell (fewer \
than 4 repeats per side can never be significant at 0.05; run 5 or more). See docs/compare.md.\n\n\
Examples:\n  gatebench compare results/v1 results/v2\n  gatebench compare results/v1 results/v2 \
results/v3 --baseline v2\n  gatebench compare results/ab --scenario proxy-v1 --scenario proxy-v2\n  \
gatebench compare old new --fail-on-regression 5% --junit compare.xml --json compare.json\n  \
gatebench compare results/seed-000 --scenario v1 --scenario v2 --html compare.html --svg compare.svg\n\n\
Exit status: 0 compared (with --fail-on-regression: everything was judged and nothing \
regressed beyond the threshold), 1 --fail-on-regression found a regression, 2 bad arguments or a \
directory that is not a results directory, 4 --fail-on-regression could not judge (no usable \
cell of a candidate, no cell in common, a baseline cell missing or failed in a candidate, too \
few repeats, an incomplete directory)."
)]
pub struct CompareArgs {
    /// Results directories written by `gatebench run`: the first is the baseline unless
    /// --baseline says otherwise. One directory with two or more --scenario compares scenarios
    /// of that run.
    #[arg(required = true, value_name = "DIR")]
    pub runs: Vec<PathBuf>,
    /// The baseline: a run's label, its directory, or its position (1-based) [default: the
    /// first].
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Names for the runs in tables, in order, comma separated [default: the directories'
    /// names, or the scenarios'].
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Compare these scenarios of one results directory with each other (repeatable, at least
    /// two); with several directories, only these scenarios.
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// One results directory from `gatebench run --variant NAME=…`: compare every scenario
    /// (baseline) with its variant `SCENARIO+NAME`, run interleaved with it.
    #[arg(long, value_name = "NAME", conflicts_with = "scenarios")]
    pub variant: Option<String>,
    /// Exit 1 when a significant regression beyond this change is found, e.g. `5%`
    /// (percentage points for Error % and GC throughput; `0` for any significant regression).
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Only these metrics (repeatable or comma separated): throughput_rps, mean_ms, p99_ms,
    /// error_percent, sut_cpu_percent, sut_cpu_us_per_request, sut_rss_mib,
    /// gc_throughput_percent, gc_pause_p99_ms,
    /// heap_after_full_gc_mib [default: all].
    #[arg(long = "metric", value_name = "METRIC", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Significance level of the Mann-Whitney U test (benchstat's is 0.05).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// Confidence level of the intervals.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,
    /// Write the Markdown report to FILE (`-` for stdout, the default when neither --json nor
    /// --junit is `-`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the comparison as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the comparison as JUnit XML to FILE (`-` for stdout): one test case per cell and
    /// metric, regressions beyond the threshold fail.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the comparison as one self-contained HTML page to FILE: per candidate the
    /// comparison chart and a table per metric.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the comparison chart to FILE as SVG: the change of throughput, average and p99
    /// latency and CPU time per request per cell, grouped by message size, with confidence
    /// intervals. With several candidates, one file each: FILE's name gets `-CANDIDATE`.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `5%`, `5`, `0.5 %` → 5.0, 5.0, 0.5.
fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage (write e.g. 5% or 0.5%)")),
    }
}

/// Runs the subcommand.
pub fn run(args: CompareArgs) -> Result<ExitCode> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1 (e.g. 0.05)");
    }
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        bail!("--confidence must be between 0 and 1 (e.g. 0.95)");
    }
    for m in &args.metrics {
        if !compare::METRICS.iter().any(|k| k.key == m) {
            let known: Vec<&str> = compare::METRICS.iter().map(|k| k.key).collect();
            bail!("--metric {m}: no such metric (known: {})", known.join(", "));
        }
    }
    let mut incomplete = Vec::new();
    let (runs, match_scenario) = load_runs(&args, &mut incomplete)?;
    let baseline = match &args.baseline {
        None => 0,
        Some(b) => find_baseline(b, &runs, &args.runs)?,
    };
    let opts = Options {
        alpha: args.alpha,
        confidence: args.confidence,
        baseline,
        threshold: args.fail_on_regression,
        match_scenario,
        metrics: args.metrics.clone(),
    };
    let c = compare::compare(&runs, &opts);
    let to_stdout = |o: &Option<PathBuf>| o.as_deref() == Some(Path::new("-"));
    let markdown_default = !to_stdout(&args.json) && !to_stdout(&args.junit);
    let md = compare::markdown::render(&c);
    match &args.markdown {
        Some(p) => emit(p, &md)?,
        None if markdown_default => emit(Path::new("-"), &md)?,
        None => {}
    }
    if let Some(p) = &args.json {
        emit(p, &compare::json::render(&c))?;
    }
    if let Some(p) = &args.junit {
        emit(p, &compare::junit::render(&c))?;
    }
    if let Some(p) = &args.html {
        emit(p, &compare::html::render(&c))?;
    }
    if let Some(p) = &args.svg {
        write_charts(p, &c)?;
    }
    for w in &c.warnings {
        eprintln!("gatebench: warning: {w}");
    }
    gate(&c, args.fail_on_regression, &incomplete)
}

/// The exit status when the gate cannot judge: the candidate has nothing to compare, a cell
/// of the baseline has no usable repeat in it, the repeats are too few for significance, or a
/// directory is incomplete. A gate fails closed: "no regression" is said only of what was
/// compared.
pub const EXIT_CANNOT_JUDGE: u8 = 4;

/// The exit status: 1 when the gate is on and a regression beyond it was found, else
/// [`EXIT_CANNOT_JUDGE`] when it could not judge everything it was given, else 0.
fn gate(c: &Comparison, threshold: Option<f64>, incomplete: &[String]) -> Result<ExitCode> {
    let Some(t) = threshold else {
        return Ok(ExitCode::SUCCESS);
    };
    let found: Vec<String> = c
        .pairs
        .iter()
        .flat_map(|p| {
            p.rows.iter().filter(|r| r.beyond_threshold).map(move |r| {
                format!(
                    "  {} vs {}: {}",
                    p.candidate,
                    p.baseline,
                    describe(r, c.alpha, c.confidence)
                )
            })
        })
        .collect();
    let unjudged = cannot_judge(c, incomplete);
    if !found.is_empty() {
        eprintln!(
            "gatebench: {} significant regression(s) beyond {t}%:\n{}",
            found.len(),
            found.join("\n")
        );
        for why in &unjudged {
            eprintln!("gatebench: besides, the gate could not judge: {why}");
        }
        return Ok(ExitCode::from(1));
    }
    if !unjudged.is_empty() {
        eprintln!(
            "gatebench: the regression gate cannot judge (exit {EXIT_CANNOT_JUDGE}):\n  {}",
            unjudged.join("\n  ")
        );
        return Ok(ExitCode::from(EXIT_CANNOT_JUDGE));
    }
    let compared: usize = c.pairs.iter().map(|p| p.rows.len()).sum();
    eprintln!("gatebench: no significant regression beyond {t}% ({compared} comparisons)");
    Ok(ExitCode::SUCCESS)
}

/// Why the gate cannot judge what it was given, one line each; empty when it judged it all.
fn cannot_judge(c: &Comparison, incomplete: &[String]) -> Vec<String> {
    let mut why: Vec<String> = incomplete.to_vec();
    for p in &c.pairs {
        let usable = c
            .runs
            .iter()
            .find(|r| r.label == p.candidate)
            .map_or(0, |r| r.cells);
        if p.rows.is_empty() {
            why.push(if usable == 0 {
                format!(
                    "{}: no usable cell (every cell failed, or none ran)",
                    p.candidate
                )
            } else {
                format!("{} and {}: no cell in common", p.candidate, p.baseline)
            });
            continue;
        }
        if !p.only_in_baseline.is_empty() {
            why.push(format!(
                "{}: {} cell(s) of {} have no usable repeat (failed or missing): {}",
                p.candidate,
                p.only_in_baseline.len(),
                p.baseline,
                p.only_in_baseline.join(", ")
            ));
        }
        if p.counts.too_few_repeats > 0 {
            why.push(format!(
                "{} vs {}: {} comparison(s) have too few repeats to reach significance (run at \
                 least 5 per cell)",
                p.candidate, p.baseline, p.counts.too_few_repeats
            ));
        }
    }
    if c.pairs.is_empty() {
        why.push("nothing to compare".to_owned());
    }
    why
}

/// `--svg FILE`: the chart of each pair; with several pairs FILE's stem gets `-CANDIDATE`.
fn write_charts(path: &Path, c: &Comparison) -> Result<()> {
    for p in &c.pairs {
        let Some(svg) = compare::chart::render(p, &compare::chart::CHART_METRICS, c.confidence)
        else {
            eprintln!(
                "gatebench: warning: {} vs {}: no throughput, latency or CPU figures to chart",
                p.candidate, p.baseline
            );
            continue;
        };
        let file = if c.pairs.len() == 1 {
            path.to_path_buf()
        } else {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let safe: String = p
                .candidate
                .chars()
                .map(|ch| {
                    if ch.is_ascii_alphanumeric() || ch == '.' || ch == '_' {
                        ch
                    } else {
                        '-'
                    }
                })
                .collect();
            path.with_file_name(format!("{stem}-{safe}.svg"))
        };
        emit(&file, &svg)?;
    }
    Ok(())
}

fn emit(path: &Path, text: &str) -> Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing to stdout")
    } else {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}

/// One results directory read back, with its environment when it has one.
/// An incomplete one (planned cells without a record) is warned about and added to
/// `incomplete`, which the regression gate cannot judge.
fn read_dir(
    dir: &Path,
    incomplete: &mut Vec<String>,
) -> Result<(Vec<CellRecord>, Option<Environment>)> {
    let r = gatebench_results::read(dir)?;
    if !r.missing.is_empty() {
        let what = format!(
            "{} is incomplete: {} of {} planned cells have no record",
            dir.display(),
            r.missing.len(),
            r.manifest.planned_cells.len()
        );
        eprintln!("gatebench: warning: {what}");
        incomplete.push(what);
    }
    for line in r.damaged_lines() {
        let what = format!("{}: damaged record, cell left out: {line}", dir.display());
        eprintln!("gatebench: warning: {what}");
        incomplete.push(what);
    }
    let env = gatebench_results::read_environment(dir)?;
    Ok((r.records, env))
}

/// `--variant NAME`: the scenarios that have a variant `SCENARIO+NAME` (run A) against their
/// variants, renamed to the scenario so cells match (run B).
fn variant_runs(
    args: &CompareArgs,
    label: &str,
    incomplete: &mut Vec<String>,
) -> Result<(Vec<RunInput>, bool)> {
    let [dir] = args.runs.as_slice() else {
        bail!("--variant compares scenarios of one results directory: give exactly one");
    };
    let (records, env) = read_dir(dir, incomplete)?;
    let suffix = format!("+{label}");
    let mut variants: Vec<CellRecord> = records
        .iter()
        .filter(|r| r.cell.scenario.ends_with(&suffix))
        .cloned()
        .collect();
    if variants.is_empty() {
        bail!(
            "{}: no scenario has the variant \"{label}\" (run it with gatebench run --variant {label}=ARGS)",
            dir.display()
        );
    }
    for r in &mut variants {
        r.cell
            .scenario
            .truncate(r.cell.scenario.len() - suffix.len());
    }
    let base: Vec<CellRecord> = records
        .iter()
        .filter(|r| variants.iter().any(|v| v.cell.scenario == r.cell.scenario))
        .cloned()
        .collect();
    let labels = [
        args.labels
            .first()
            .cloned()
            .unwrap_or_else(|| "baseline".to_owned()),
        args.labels
            .get(1)
            .cloned()
            .unwrap_or_else(|| label.to_owned()),
    ];
    Ok((
        vec![
            RunInput {
                label: labels[0].clone(),
                source: dir.display().to_string(),
                environment: env.clone(),
                records: base,
            },
            RunInput {
                label: labels[1].clone(),
                source: format!("{}, variant {label}", dir.display()),
                environment: env,
                records: variants,
            },
        ],
        true,
    ))
}

/// The runs to compare, and whether cells are matched on their scenario.
fn load_runs(args: &CompareArgs, incomplete: &mut Vec<String>) -> Result<(Vec<RunInput>, bool)> {
    if let Some(label) = &args.variant {
        return variant_runs(args, label, incomplete);
    }
    if args.runs.len() == 1 {
        if args.scenarios.len() < 2 {
            bail!(
                "give two or more results directories, or one with two or more --scenario to \
                 compare scenarios of that run"
            );
        }
        let dir = &args.runs[0];
        let (records, env) = read_dir(dir, incomplete)?;
        let mut runs = Vec::new();
        for (i, s) in args.scenarios.iter().enumerate() {
            let mine: Vec<CellRecord> = records
                .iter()
                .filter(|r| &r.cell.scenario == s)
                .cloned()
                .collect();
            if mine.is_empty() {
                let mut known: Vec<&str> =
                    records.iter().map(|r| r.cell.scenario.as_str()).collect();
                known.sort_unstable();
                known.dedup();
                bail!(
                    "{}: no cells of scenario \"{s}\" (its scenarios: {})",
                    dir.display(),
                    known.join(", ")
                );
            }
            runs.push(RunInput {
                label: args.labels.get(i).cloned().unwrap_or_else(|| s.clone()),
                source: format!("{}, scenario {s}", dir.display()),
                environment: env.clone(),
                records: mine,
            });
        }
        return Ok((runs, false));
    }
    let mut runs = Vec::new();
    for (i, dir) in args.runs.iter().enumerate() {
        let (mut records, env) = read_dir(dir, incomplete)?;
        if !args.scenarios.is_empty() {
            records.retain(|r| args.scenarios.contains(&r.cell.scenario));
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        runs.push(RunInput {
            label: args.labels.get(i).cloned().unwrap_or(name),
            source: dir.display().to_string(),
            environment: env,
            records,
        });
    }
    // Two directories with the same name (`a/out`, `b/out`): name them by their paths.
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    for r in &mut runs {
        if labels.iter().filter(|l| **l == r.label).count() > 1 {
            r.label = r.source.clone();
        }
    }
    Ok((runs, true))
}

fn find_baseline(b: &str, runs: &[RunInput], dirs: &[PathBuf]) -> Result<usize> {
    if let Some(i) = runs.iter().position(|r| r.label == b) {
        return Ok(i);
    }
    if let Some(i) = dirs.iter().position(|d| d == Path::new(b)) {
        if runs.len() == dirs.len() {
            return Ok(i);
        }
    }
    if let Ok(n) = b.parse::<usize>() {
        if (1..=runs.len()).contains(&n) {
            return Ok(n - 1);
        }
    }
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    bail!(
        "--baseline {b}: no such run (runs: {}, or a position 1–{})",
        labels.join(", "),
        runs.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%"), Ok(5.0));
        assert_eq!(parse_percent("0.5 %"), Ok(0.5));
        assert_eq!(parse_percent("12"), Ok(12.0));
        assert!(parse_percent("-1%").is_err());
        assert!(parse_percent("five").is_err());
    }
}
