//! Comparing runs: two results directories (two versions of a service), a version history
//! against a chosen baseline, or two scenarios of one suite run side by side.
//!
//! Cells are matched by their parameters — scenario (unless scenarios themselves are what is
//! compared), protocol, users or rate, message size, back-end delay — and the repeats of a cell
//! are its samples. For every matched cell and metric (throughput, mean and p99 latency,
//! error %, SUT CPU, its CPU time per request and memory, and the GC figures where both sides have them) it gives the
//! medians, the change as a Hodges-Lehmann estimate with a confidence interval, the two-sided
//! Mann-Whitney U p-value and a verdict: improved, regressed, no significant change — or too
//! few repeats to tell, when the sample sizes cannot reach significance at all (see
//! [`crate::stats`]). A geometric mean of the per-cell ratios summarizes each metric, as
//! benchstat does. It warns, loudly, when repeats are too few, when the environments or the
//! suites' settings differ, and when cells failed or were generator-bound.
//!
//! This module owns the computation and the types it yields ([`Comparison`] and its parts); it
//! renders nothing. One submodule per output format renders a [`Comparison`], as hyperfine's
//! exporters do. Pure functions of the records: reading directories is the caller's job.
//!
//! # Layout
//! - [`chart`]: the change per cell as bars with their confidence intervals (SVG).
//! - [`html`]: one self-contained page: the chart and the tables.
//! - [`markdown`]: the human report, one table per candidate and metric.
//! - [`json`]: the [`Comparison`] itself, serialized.
//! - [`junit`]: JUnit XML for CI systems (a regression gate's report).
//! - [`text`]: values, changes, intervals and one-line row descriptions, shared by the
//!   renderers and the CLI's summary line.
//! - `differences` (private): what differs between two runs' environments and suite settings,
//!   for the warnings.

pub mod chart;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod section;
pub mod text;

mod differences;

use std::collections::BTreeMap;

use gatebench_model::{CellRecord, CellStatus, Environment, SCHEMA_VERSION};
use serde::Serialize;

use crate::stats::{self, hodges_lehmann, mann_whitney, min_p_value};

/// One run to compare: a results directory, or one scenario of it.
#[derive(Clone, Debug)]
pub struct RunInput {
    /// Short name in tables (`A`, `v1.2`, the directory's name, a scenario's name).
    pub label: String,
    /// Where it came from (a path, `path` + scenario), for the header.
    pub source: String,
    /// Its `environment.json`, when there is one.
    pub environment: Option<Environment>,
    /// Its cell records (every repeat).
    pub records: Vec<CellRecord>,
}

/// How to compare.
#[derive(Clone, Debug)]
pub struct Options {
    /// Significance level of the test (benchstat's default, 0.05).
    pub alpha: f64,
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Index of the baseline run in the inputs.
    pub baseline: usize,
    /// A regression counts against `--fail-on-regression` only beyond this change (percent
    /// for ratio metrics, percentage points for Error % and GC throughput); `None`: any
    /// significant regression.
    pub threshold: Option<f64>,
    /// Match cells on the scenario too (runs are directories). Off when the runs are scenarios
    /// of one directory.
    pub match_scenario: bool,
    /// Metric keys to compare (see [`METRICS`]); empty: all.
    pub metrics: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            confidence: 0.95,
            baseline: 0,
            threshold: None,
            match_scenario: true,
            metrics: Vec::new(),
        }
    }
}

/// A compared figure of a cell.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Machine name (JSON, `--metric`).
    pub key: &'static str,
    /// Heading.
    pub label: &'static str,
    /// Unit of the values.
    pub unit: &'static str,
    /// Whether a higher value is better (throughput, GC throughput).
    pub higher_is_better: bool,
    /// Compared as a ratio (percent change); otherwise as a difference in the metric's own
    /// unit (percentage points for the percentages that sit near 0 or 100).
    pub ratio: bool,
    /// The value of one repeat; `None` when the record has none.
    pub value: fn(&CellRecord) -> Option<f64>,
}

/// Every metric, in report order.
pub const METRICS: [Metric; 10] = [
    Metric {
        key: "throughput_rps",
        label: "Throughput",
        unit: "req/s",
        higher_is_better: true,
        ratio: true,
        value: |r| {
            (r.load.as_ref().map(|l| l.measurement.throughput_rps))
                .or_else(|| r.unit_load().map(|u| u.ok_per_s))
        },
    },
    Metric {
        key: "mean_ms",
        label: "Average response time",
        unit: "ms",
        higher_is_better: false,
        ratio: true,
        value: |r| {
            (r.load.as_ref().map(|l| l.measurement.latency.mean_ms))
                .or_else(|| r.unit_load().map(|u| u.latency.mean_ms))
        },
    },
    Metric {
        key: "p99_ms",
        label: "99th percentile of response time",
        unit: "ms",
        higher_is_better: false,
        ratio: true,
        value: |r| {
            (r.load.as_ref().and_then(|l| l.measurement.latency.at(99.0)))
                .or_else(|| r.unit_load().and_then(|u| u.latency.at(99.0)))
        },
    },
    Metric {
        key: "error_percent",
        label: "Error %",
        unit: "% of requests",
        higher_is_better: false,
        ratio: false,
        value: |r| {
            (r.load.as_ref().map(|l| l.measurement.error_percent))
                .or_else(|| r.unit_load().map(|u| u.error_percent))
        },
    },
    Metric {
        key: "sut_cpu_percent",
        label: "SUT CPU",
        unit: "% of a core",
        higher_is_better: false,
        ratio: true,
        value: |r| r.sut_measurement.as_ref().map(|s| s.cpu_mean_percent),
    },
    Metric {
        key: "sut_cpu_us_per_request",
        label: "SUT CPU time per request",
        unit: "µs",
        higher_is_better: false,
        ratio: true,
        // The group's CPU time over the measurement window (read at its ends) per response.
        value: |r| {
            r.sut_measurement
                .as_ref()
                .and_then(|s| s.cpu_us_per_request)
        },
    },
    Metric {
        key: "sut_rss_mib",
        label: "SUT resident memory",
        unit: "MiB",
        higher_is_better: false,
        ratio: true,
        value: |r| r.sut_measurement.as_ref().map(|s| s.rss_mean_mib),
    },
    Metric {
        key: "gc_throughput_percent",
        label: "GC throughput",
        unit: "% of the time not paused",
        higher_is_better: true,
        ratio: false,
        // No GC event in the window: no figure to compare (never a 100 % that was not measured).
        value: |r| r.gc_measurement.as_ref().and_then(|g| g.throughput_percent),
    },
    Metric {
        key: "gc_pause_p99_ms",
        label: "GC pause p99",
        unit: "ms",
        higher_is_better: false,
        ratio: true,
        value: |r| r.gc_measurement.as_ref().map(|g| g.pause_p99_ms),
    },
    Metric {
        key: "heap_after_full_gc_mib",
        label: "Memory footprint after full GC",
        unit: "MiB",
        higher_is_better: false,
        ratio: true,
        value: |r| {
            r.gc_measurement
                .as_ref()
                .and_then(|g| g.heap_after_full_gc_mib)
        },
    },
];

/// What a comparison found for one cell and metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better.
    Improved,
    /// Significantly worse.
    Regressed,
    /// No difference the test can tell from noise.
    NoSignificantChange,
    /// The repeats are too few for the test ever to reach significance.
    TooFewRepeats,
}

impl Verdict {
    /// How it reads in a table.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewRepeats => "too few repeats",
        }
    }
}

/// A cell's parameters, as matched between runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellKey {
    /// The scenario; `None` when scenarios are what is compared.
    pub scenario: Option<String>,
    /// The protocol the generator spoke.
    pub protocol: String,
    /// Concurrent users (connections).
    pub users: u32,
    /// Target rate (open model).
    pub rate: Option<f64>,
    /// Payload size, bytes.
    pub size_bytes: u64,
    /// Back-end delay, ms.
    pub delay_ms: f64,
}

/// One side's samples of a cell and metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Repeats with a value.
    pub n: usize,
    /// Their median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Every value, in repeat order.
    pub values: Vec<f64>,
}

/// One row: a cell, a metric, both sides and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The cell's name (its id without the repeat, and without the scenario when scenarios are
    /// compared).
    pub cell: String,
    /// Its parameters.
    pub key: CellKey,
    /// [`Metric::key`].
    pub metric: &'static str,
    /// [`Metric::unit`].
    pub unit: &'static str,
    /// [`Metric::higher_is_better`].
    pub higher_is_better: bool,
    /// The baseline's samples.
    pub baseline: Sample,
    /// The candidate's samples.
    pub candidate: Sample,
    /// The change: percent for ratio metrics, else in the metric's unit (percentage points);
    /// `None` when a ratio has a zero baseline.
    pub change: Option<f64>,
    /// `%` (ratio metrics) or `pp` (percentage points: Error %, GC throughput).
    pub change_unit: &'static str,
    /// The confidence interval of the change, same unit.
    pub ci: Option<[f64; 2]>,
    /// The interval's actual level (lower than asked when the repeats are few).
    pub ci_level: Option<f64>,
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// A regression beyond the threshold (what `--fail-on-regression` fails on).
    pub beyond_threshold: bool,
    /// `generator-bound` when a repeat on either side was: its figures describe the
    /// generator.
    pub flags: Vec<String>,
}

/// The geometric mean of a ratio metric's per-cell changes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geomean {
    /// [`Metric::key`].
    pub metric: &'static str,
    /// Percent change of the geometric mean of the cells' median ratios.
    pub change_percent: f64,
    /// Cells in it.
    pub cells: usize,
}

/// How many rows got each verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Improved.
    pub improved: usize,
    /// Regressed.
    pub regressed: usize,
    /// Of which beyond the threshold.
    pub regressed_beyond_threshold: usize,
    /// No significant change.
    pub no_significant_change: usize,
    /// Too few repeats to tell.
    pub too_few_repeats: usize,
}

/// One candidate against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pair {
    /// The baseline's label.
    pub baseline: String,
    /// The candidate's label.
    pub candidate: String,
    /// Every matched cell and metric.
    pub rows: Vec<Row>,
    /// Per ratio metric, the geometric mean of the cells' changes.
    pub geomean: Vec<Geomean>,
    /// Verdict counts.
    pub counts: Counts,
    /// Cells only the baseline has.
    pub only_in_baseline: Vec<String>,
    /// Cells only the candidate has.
    pub only_in_candidate: Vec<String>,
}

/// One compared run, as described in the header.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// Label.
    pub label: String,
    /// Source.
    pub source: String,
    /// Distinct cells with at least one usable repeat.
    pub cells: usize,
    /// Fewest usable repeats of a cell.
    pub repeats_min: usize,
    /// Most usable repeats of a cell.
    pub repeats_max: usize,
    /// Failed repeats, left out.
    pub failed: usize,
    /// The environment, when known.
    pub environment: Option<Environment>,
}

/// An environment field that differs between the baseline and another run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The run that differs from the baseline.
    pub run: String,
    /// The field (`cpu_model`, `kernel`, `duration_s`, …).
    pub field: String,
    /// The baseline's value.
    pub baseline: String,
    /// The run's value.
    pub other: String,
}

/// A whole comparison (what `gatebench compare --json` prints).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `gatebench-comparison`.
    pub kind: &'static str,
    /// Significance level.
    pub alpha: f64,
    /// Asked confidence level of the intervals.
    pub confidence: f64,
    /// The regression threshold, when given.
    pub threshold: Option<f64>,
    /// The baseline's label.
    pub baseline: String,
    /// Every run, the baseline included.
    pub runs: Vec<RunInfo>,
    /// What a reader must know before trusting the verdicts.
    pub warnings: Vec<String>,
    /// Environment and settings that differ from the baseline's.
    pub differences: Vec<Difference>,
    /// Each other run against the baseline.
    pub pairs: Vec<Pair>,
}

impl Comparison {
    /// Regressions beyond the threshold, over every pair: `--fail-on-regression` exits 1 when
    /// this is not zero.
    pub fn regressions_beyond_threshold(&self) -> usize {
        self.pairs
            .iter()
            .map(|p| p.counts.regressed_beyond_threshold)
            .sum()
    }
}

/// Usable repeats of a run grouped by cell, in summary order, with the name shown.
struct Grouped<'a> {
    cells: Vec<(CellKey, String, Vec<&'a CellRecord>)>,
    failed: usize,
}

fn group<'a>(records: &'a [CellRecord], match_scenario: bool) -> Grouped<'a> {
    let mut sorted: Vec<&CellRecord> = records.iter().collect();
    sorted.sort_by(|a, b| {
        let (a, b) = (&a.cell, &b.cell);
        a.scenario_index
            .cmp(&b.scenario_index)
            .then(a.protocol.cmp(&b.protocol))
            .then(a.rate.unwrap_or(0.0).total_cmp(&b.rate.unwrap_or(0.0)))
            .then(a.users.cmp(&b.users))
            .then(a.size_bytes.cmp(&b.size_bytes))
            .then(a.delay_ms.total_cmp(&b.delay_ms))
            .then(a.repeat.cmp(&b.repeat))
    });
    let mut cells: Vec<(CellKey, String, Vec<&CellRecord>)> = Vec::new();
    let mut failed = 0;
    for r in sorted {
        // Capacity and cost cells are no load to compare (nor a failed one).
        if !r.cell.kind.is_load() {
            continue;
        }
        // A gRPC or WebSocket cell compares its calls or messages as a load cell its requests.
        if r.status != CellStatus::Ok || (r.load.is_none() && r.unit_load().is_none()) {
            failed += 1;
            continue;
        }
        let key = key_of(r, match_scenario);
        match cells.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, v)) => v.push(r),
            None => cells.push((key, cell_name(r, match_scenario), vec![r])),
        }
    }
    Grouped { cells, failed }
}

fn key_of(r: &CellRecord, match_scenario: bool) -> CellKey {
    let c = &r.cell;
    CellKey {
        scenario: match_scenario.then(|| c.scenario.clone()),
        protocol: c.protocol.clone(),
        users: if c.rate.is_some() { 0 } else { c.users },
        rate: c.rate,
        size_bytes: c.size_bytes,
        delay_ms: c.delay_ms,
    }
}

/// The cell id without `_r<repeat>` (and without the scenario when it is not matched on).
fn cell_name(r: &CellRecord, match_scenario: bool) -> String {
    let id = &r.cell.id;
    let base = match id.rfind("_r") {
        Some(i) if id[i + 2..].bytes().all(|b| b.is_ascii_digit()) => &id[..i],
        _ => id.as_str(),
    };
    if match_scenario {
        base.to_owned()
    } else {
        base.strip_prefix(&format!("{}_", r.cell.scenario))
            .unwrap_or(base)
            .to_owned()
    }
}

/// Compares every run against `opts.baseline`.
pub fn compare(runs: &[RunInput], opts: &Options) -> Comparison {
    let metrics: Vec<&Metric> = METRICS
        .iter()
        .filter(|m| opts.metrics.is_empty() || opts.metrics.iter().any(|k| k == m.key))
        .collect();
    let grouped: Vec<Grouped<'_>> = runs
        .iter()
        .map(|r| group(&r.records, opts.match_scenario))
        .collect();
    let infos: Vec<RunInfo> = runs
        .iter()
        .zip(&grouped)
        .map(|(r, g)| RunInfo {
            label: r.label.clone(),
            source: r.source.clone(),
            cells: g.cells.len(),
            repeats_min: g.cells.iter().map(|c| c.2.len()).min().unwrap_or(0),
            repeats_max: g.cells.iter().map(|c| c.2.len()).max().unwrap_or(0),
            failed: g.failed,
            environment: r.environment.clone(),
        })
        .collect();
    let base = opts.baseline.min(runs.len().saturating_sub(1));
    let mut warnings = Vec::new();
    let mut differences = Vec::new();
    let mut pairs = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        if i == base {
            continue;
        }
        differences.extend(differences::environment(&runs[base], run));
        differences.extend(differences::settings(&runs[base], run));
        pairs.push(compare_pair(
            &runs[base].label,
            &grouped[base],
            &run.label,
            &grouped[i],
            &metrics,
            opts,
        ));
    }
    // Warnings, the most consequential first.
    let mut too_few: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for p in &pairs {
        for r in p
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::TooFewRepeats)
        {
            *too_few.entry((r.baseline.n, r.candidate.n)).or_default() += 1;
        }
    }
    if !too_few.is_empty() {
        let rows: usize = too_few.values().sum();
        let total: usize = pairs.iter().map(|p| p.rows.len()).sum();
        let sizes: Vec<String> = too_few
            .keys()
            .map(|(n, m)| {
                format!(
                    "with {n} and {m} repeats the smallest possible p-value is {:.3}",
                    min_p_value(*n, *m)
                )
            })
            .collect();
        warnings.push(format!(
            "too few repeats to tell: {rows} of {total} comparisons cannot reach significance \
             at α = {} whatever the data ({}). Run at least 5 repeats per cell (`repeats = 5` \
             in [suite], or `gatebench run --repeats 5`); benchstat advises 10.",
            opts.alpha,
            sizes.join("; ")
        ));
    }
    let env_fields: Vec<&Difference> = differences
        .iter()
        .filter(|d| !d.field.starts_with("suite "))
        .collect();
    if !env_fields.is_empty() {
        let list: Vec<String> = env_fields
            .iter()
            .map(|d| {
                format!(
                    "{} of {}: \"{}\" vs \"{}\"",
                    d.field, d.run, d.baseline, d.other
                )
            })
            .collect();
        warnings.push(format!(
            "the runs' environments differ, so a change may come from the machine or the tool \
             rather than the system under test: {}",
            list.join("; ")
        ));
    }
    let settings: Vec<&Difference> = differences
        .iter()
        .filter(|d| d.field.starts_with("suite "))
        .collect();
    if !settings.is_empty() {
        let list: Vec<String> = settings
            .iter()
            .map(|d| {
                format!(
                    "{} of {}: {} vs {}",
                    d.field.trim_start_matches("suite "),
                    d.run,
                    d.baseline,
                    d.other
                )
            })
            .collect();
        warnings.push(format!(
            "the runs were measured with different settings: {}",
            list.join("; ")
        ));
    }
    let missing_env: Vec<&str> = runs
        .iter()
        .filter(|r| r.environment.is_none())
        .map(|r| r.label.as_str())
        .collect();
    if !missing_env.is_empty() {
        warnings.push(format!(
            "no environment.json for {}: cannot check that the runs share a machine",
            missing_env.join(", ")
        ));
    }
    for info in &infos {
        if info.failed > 0 {
            warnings.push(format!(
                "{}: {} failed repeat(s) left out of the comparison",
                info.label, info.failed
            ));
        }
    }
    let bound: usize = runs
        .iter()
        .flat_map(|r| &r.records)
        .filter(|r| r.generator_bound())
        .count();
    if bound > 0 {
        warnings.push(format!(
            "{bound} repeat(s) were generator-bound (flagged in the rows): their figures describe \
             the load generator, not the system under test"
        ));
    }
    // Capacity and cost cells give one answer each per run, no repeats to test a change
    // against: said, not silently dropped.
    let searches: usize = runs
        .iter()
        .flat_map(|r| &r.records)
        .filter(|r| !r.cell.kind.is_load())
        .count();
    if searches > 0 {
        warnings.push(format!(
            "{searches} capacity or cost cell(s) not compared: each run has one answer per \
             cell, no repeats to test a change against (their figures are in each run's \
             summary.md, capacity.csv and cost.csv)"
        ));
    }
    for p in &pairs {
        if !p.only_in_baseline.is_empty() || !p.only_in_candidate.is_empty() {
            warnings.push(format!(
                "{} vs {}: {} cell(s) only in {}, {} only in {}: not compared",
                p.candidate,
                p.baseline,
                p.only_in_baseline.len(),
                p.baseline,
                p.only_in_candidate.len(),
                p.candidate
            ));
        }
        if p.rows.is_empty() {
            warnings.push(format!(
                "{} vs {}: no cell in common: nothing compared",
                p.candidate, p.baseline
            ));
        }
    }
    Comparison {
        schema_version: SCHEMA_VERSION,
        kind: "gatebench-comparison",
        alpha: opts.alpha,
        confidence: opts.confidence,
        threshold: opts.threshold,
        baseline: runs.get(base).map(|r| r.label.clone()).unwrap_or_default(),
        runs: infos,
        warnings,
        differences,
        pairs,
    }
}

fn compare_pair(
    base_label: &str,
    base: &Grouped<'_>,
    cand_label: &str,
    cand: &Grouped<'_>,
    metrics: &[&Metric],
    opts: &Options,
) -> Pair {
    let mut rows = Vec::new();
    let mut only_in_baseline = Vec::new();
    for (key, name, a) in &base.cells {
        let Some((_, _, b)) = cand.cells.iter().find(|(k, _, _)| k == key) else {
            only_in_baseline.push(name.clone());
            continue;
        };
        for m in metrics {
            if let Some(row) = compare_metric(m, key, name, a, b, opts) {
                rows.push(row);
            }
        }
    }
    let only_in_candidate = cand
        .cells
        .iter()
        .filter(|(k, _, _)| !base.cells.iter().any(|(bk, _, _)| bk == k))
        .map(|(_, n, _)| n.clone())
        .collect();
    let geomean = metrics
        .iter()
        .filter(|m| m.ratio)
        .filter_map(|m| {
            let ratios: Vec<f64> = rows
                .iter()
                .filter(|r| r.metric == m.key)
                .filter(|r| r.baseline.median > 0.0 && r.candidate.median > 0.0)
                .map(|r| r.candidate.median / r.baseline.median)
                .collect();
            stats::geomean(&ratios).map(|g| Geomean {
                metric: m.key,
                change_percent: (g - 1.0) * 100.0,
                cells: ratios.len(),
            })
        })
        .collect();
    let mut counts = Counts::default();
    for r in &rows {
        match r.verdict {
            Verdict::Improved => counts.improved += 1,
            Verdict::Regressed => counts.regressed += 1,
            Verdict::NoSignificantChange => counts.no_significant_change += 1,
            Verdict::TooFewRepeats => counts.too_few_repeats += 1,
        }
        if r.beyond_threshold {
            counts.regressed_beyond_threshold += 1;
        }
    }
    Pair {
        baseline: base_label.to_owned(),
        candidate: cand_label.to_owned(),
        rows,
        geomean,
        counts,
        only_in_baseline,
        only_in_candidate,
    }
}

fn sample(values: Vec<f64>) -> Option<Sample> {
    let median = stats::median(&values)?;
    Some(Sample {
        n: values.len(),
        median,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        values,
    })
}

fn compare_metric(
    m: &Metric,
    key: &CellKey,
    name: &str,
    a: &[&CellRecord],
    b: &[&CellRecord],
    opts: &Options,
) -> Option<Row> {
    let va: Vec<f64> = a.iter().filter_map(|r| (m.value)(r)).collect();
    let vb: Vec<f64> = b.iter().filter_map(|r| (m.value)(r)).collect();
    let sa = sample(va)?;
    let sb = sample(vb)?;
    let mw = mann_whitney(&sa.values, &sb.values)?;
    let positive = sa.values.iter().chain(&sb.values).all(|v| *v > 0.0);
    let (change, ci, level, unit) = if m.ratio {
        if positive {
            let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
            let s = hodges_lehmann(&ln(&sa.values), &ln(&sb.values), opts.confidence)?;
            let pct = |x: f64| (x.exp() - 1.0) * 100.0;
            (
                Some(pct(s.estimate)),
                Some([pct(s.low), pct(s.high)]),
                Some(s.level),
                "%",
            )
        } else if sa.median > 0.0 {
            // A zero on one side (a GC pause-free window): the ratio of medians, no interval.
            (Some((sb.median / sa.median - 1.0) * 100.0), None, None, "%")
        } else {
            (None, None, None, "%")
        }
    } else {
        let s = hodges_lehmann(&sa.values, &sb.values, opts.confidence)?;
        (
            Some(s.estimate),
            Some([s.low, s.high]),
            Some(s.level),
            // The absolute metrics are percentages: their changes are percentage points.
            "pp",
        )
    };
    let direction = change.unwrap_or(if sb.median > sa.median {
        f64::INFINITY
    } else {
        0.0
    });
    let verdict = if min_p_value(sa.n, sb.n) > opts.alpha {
        Verdict::TooFewRepeats
    } else if mw.p_value < opts.alpha && direction != 0.0 {
        if (direction > 0.0) == m.higher_is_better {
            Verdict::Improved
        } else {
            Verdict::Regressed
        }
    } else {
        Verdict::NoSignificantChange
    };
    let beyond_threshold = verdict == Verdict::Regressed
        && match (opts.threshold, change) {
            (None, _) | (_, None) => true,
            (Some(t), Some(c)) => c.abs() > t,
        };
    let mut flags = Vec::new();
    if a.iter().chain(b).any(|r| r.generator_bound()) {
        flags.push("generator-bound".to_owned());
    }
    Some(Row {
        cell: name.to_owned(),
        key: key.clone(),
        metric: m.key,
        unit: m.unit,
        higher_is_better: m.higher_is_better,
        baseline: sa,
        candidate: sb,
        change,
        change_unit: unit,
        ci,
        ci_level: level,
        p_value: mw.p_value,
        verdict,
        beyond_threshold,
        flags,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gatebench_model::{
        LatencySummary, Outcome, OutcomeCounts, Percentile, PhaseReport, ResourceSummary,
    };
    use gatebench_testkit::records;

    /// A record with the given throughput (mean and p99 follow from it) for `scenario`.
    pub(crate) fn record(scenario: &str, users: u32, repeat: u32, rps: f64) -> CellRecord {
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, (rps * 4.0) as u64);
        let mean = users as f64 * 1000.0 / rps;
        let phase = PhaseReport {
            duration_s: 4.0,
            requests: outcomes.total(),
            error_percent: 0.0,
            outcomes,
            throughput_rps: rps,
            ok_rps: rps,
            target_rps: None,
            sent_rps: rps,
            bytes_read: 0,
            bytes_written: 0,
            latency: LatencySummary {
                count: (rps * 4.0) as u64,
                censored: 0,
                min_ms: mean / 10.0,
                mean_ms: mean,
                stdev_ms: mean / 3.0,
                max_ms: mean * 20.0,
                percentiles: vec![Percentile {
                    p: 99.0,
                    ms: mean * 4.0,
                    lower_bound: false,
                }],
            },
            latency_answered: None,
            latency_uncorrected: None,
            concurrency: users as f64,
            connections: Default::default(),
            histograms: None,
        };
        records::cell_record(
            records::cell_params(scenario, scenario, 0, users, 50, repeat),
            records::load_report(users, 50, None, phase, true),
            None,
            Some(ResourceSummary {
                samples: 4,
                cpu_mean_percent: 90.0 + repeat as f64,
                cpu_max_percent: 99.0,
                rss_mean_mib: 12.0,
                rss_max_mib: 12.5,
                threads_max: 3,
                fds_max: 30,
                loadavg_mean: 1.0,
                // 4 s at the mean CPU; per request over the responses of those 4 s.
                cpu_time_s: Some(4.0 * (90.0 + repeat as f64) / 100.0),
                cpu_us_per_request: Some(1e6 * 4.0 * (90.0 + repeat as f64) / 100.0 / (rps * 4.0)),
            }),
        )
    }

    pub(crate) fn env(cpu: &str) -> Environment {
        Environment {
            schema_version: SCHEMA_VERSION,
            cpu_model: cpu.into(),
            cores: 2,
            cores_available: 2,
            kernel: "Linux 6.1.0".into(),
            arch: "x86_64".into(),
            gatebench_version: "0.1.0".into(),
            git_revision: "6ec44bd".into(),
            system: Default::default(),
        }
    }

    pub(crate) fn run(label: &str, cells: &[(&str, u32, &[f64])]) -> RunInput {
        let records = cells
            .iter()
            .flat_map(|(s, u, rps)| {
                rps.iter()
                    .enumerate()
                    .map(move |(i, r)| record(s, *u, i as u32 + 1, *r))
            })
            .collect();
        RunInput {
            label: label.into(),
            source: format!("results/{label}"),
            environment: Some(env("Test CPU")),
            records,
        }
    }

    /// Two runs: `proxy` twice as fast in B at 100 users, unchanged at 10, `echo` unchanged.
    pub(crate) fn fixture(repeats: usize) -> (RunInput, RunInput) {
        let noise = [1.0, 1.012, 0.991, 1.004, 0.997, 1.008, 0.994];
        let n = |base: f64, shift: usize| -> Vec<f64> {
            (0..repeats)
                .map(|i| base * noise[(i + shift) % noise.len()])
                .collect()
        };
        let a = run(
            "A",
            &[
                ("echo", 10, &n(20_000.0, 0)),
                ("proxy", 10, &n(10_000.0, 1)),
                ("proxy", 100, &n(9_000.0, 2)),
            ],
        );
        let b = run(
            "B",
            &[
                ("echo", 10, &n(20_000.0, 3)),
                ("proxy", 10, &n(10_000.0, 4)),
                ("proxy", 100, &n(18_000.0, 5)),
            ],
        );
        (a, b)
    }

    pub(crate) fn opts() -> Options {
        Options {
            metrics: vec!["throughput_rps".into(), "p99_ms".into()],
            ..Options::default()
        }
    }

    fn verdict(c: &Comparison, cell: &str, metric: &str) -> Verdict {
        c.pairs[0]
            .rows
            .iter()
            .find(|r| r.cell == cell && r.metric == metric)
            .unwrap_or_else(|| panic!("no row {cell} {metric}"))
            .verdict
    }

    #[test]
    fn the_real_change_is_significant_and_the_rest_is_not() {
        let (a, b) = fixture(5);
        let c = compare(&[a, b], &opts());
        assert_eq!(
            verdict(&c, "proxy_u100_s50_d0", "throughput_rps"),
            Verdict::Improved
        );
        // Lower latency is better: p99 halves, also improved.
        assert_eq!(
            verdict(&c, "proxy_u100_s50_d0", "p99_ms"),
            Verdict::Improved
        );
        for cell in ["echo_u10_s50_d0", "proxy_u10_s50_d0"] {
            assert_eq!(
                verdict(&c, cell, "throughput_rps"),
                Verdict::NoSignificantChange
            );
        }
        let row = c.pairs[0]
            .rows
            .iter()
            .find(|r| r.cell == "proxy_u100_s50_d0" && r.metric == "throughput_rps")
            .unwrap();
        let ch = row.change.unwrap();
        assert!((90.0..110.0).contains(&ch), "{ch}");
        let [lo, hi] = row.ci.unwrap();
        assert!(lo > 0.0 && lo <= ch && ch <= hi, "{row:?}");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // Geomean over three cells: one doubled, two unchanged → about 2^(1/3) = +26 %.
        let g = &c.pairs[0].geomean[0];
        assert_eq!(g.cells, 3);
        assert!((20.0..32.0).contains(&g.change_percent), "{g:?}");
    }

    #[test]
    fn cpu_time_per_request_is_compared_and_lower_is_better() {
        // The fixture's CPU time is 4 s at (90 + repeat) % of a core over rps × 4 responses:
        // twice the throughput on the same CPU halves the CPU time per request.
        let (a, b) = fixture(5);
        let only = Options {
            metrics: vec!["sut_cpu_us_per_request".into()],
            ..Options::default()
        };
        let c = compare(&[a, b], &only);
        let row = c.pairs[0]
            .rows
            .iter()
            .find(|r| r.cell == "proxy_u100_s50_d0")
            .unwrap();
        assert_eq!((row.metric, row.unit), ("sut_cpu_us_per_request", "µs"));
        // Medians of (90 + repeat) × 10⁴ / rps over the five repeats.
        assert!(
            (row.baseline.median - 103.61552028218695).abs() < 1e-9,
            "{row:?}"
        );
        assert!(
            (row.candidate.median - 51.60298638559508).abs() < 1e-9,
            "{row:?}"
        );
        assert_eq!(row.verdict, Verdict::Improved);
        let ch = row.change.unwrap();
        assert!((-51.0..-49.0).contains(&ch), "{ch}");
        assert_eq!(c.pairs[0].rows.len(), 3, "one row per cell");
    }

    #[test]
    fn the_reverse_is_a_regression_and_the_gate_sees_it() {
        let (a, b) = fixture(5);
        let opts = Options {
            threshold: Some(5.0),
            ..opts()
        };
        let c = compare(&[b, a], &opts);
        assert_eq!(
            verdict(&c, "proxy_u100_s50_d0", "throughput_rps"),
            Verdict::Regressed
        );
        assert_eq!(c.regressions_beyond_threshold(), 2, "throughput and p99");
        // A threshold beyond the change lets it pass.
        let lenient = Options {
            threshold: Some(200.0),
            ..opts
        };
        let (a, b) = fixture(5);
        assert_eq!(compare(&[b, a], &lenient).regressions_beyond_threshold(), 0);
    }

    #[test]
    fn identical_runs_show_no_significant_change() {
        let (a, _) = fixture(5);
        let mut same = a.clone();
        same.label = "A2".into();
        let c = compare(&[a, same], &Options::default());
        assert!(c.pairs[0]
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::NoSignificantChange));
        assert_eq!(c.regressions_beyond_threshold(), 0);
        assert!(c.pairs[0]
            .geomean
            .iter()
            .all(|g| g.change_percent.abs() < 1e-9));
    }

    #[test]
    fn too_few_repeats_are_said_so() {
        let (a, b) = fixture(3);
        let c = compare(&[a, b], &opts());
        assert!(c.pairs[0]
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::TooFewRepeats));
        assert!(
            c.warnings[0].starts_with("too few repeats to tell")
                && c.warnings[0]
                    .contains("with 3 and 3 repeats the smallest possible p-value is 0.100"),
            "{:?}",
            c.warnings
        );
        assert_eq!(c.regressions_beyond_threshold(), 0);
    }

    /// A capacity cell beside the load cells is left out of the rows, and the warnings say so.
    #[test]
    fn capacity_and_cost_cells_are_said_to_be_left_out() {
        let (mut a, b) = fixture(5);
        let rows_without = compare(&[a.clone(), b.clone()], &opts()).pairs[0]
            .rows
            .len();
        let mut search = record("echo", 0, 1, 1000.0);
        search.cell.kind = gatebench_model::CellKind::Capacity;
        search.cell.id = "echo_capacity_s64_d0".into();
        search.load = None;
        a.records.push(search);
        let c = compare(&[a, b], &opts());
        assert_eq!(c.pairs[0].rows.len(), rows_without);
        assert!(
            c.warnings
                .iter()
                .any(|w| w.starts_with("1 capacity or cost cell(s) not compared")),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn different_environments_and_settings_are_warned_about() {
        let (a, mut b) = fixture(5);
        b.environment = Some(env("Other CPU"));
        for r in &mut b.records {
            r.cell.duration_s = 10.0;
        }
        let c = compare(&[a, b], &opts());
        assert!(
            c.warnings.iter().any(|w| w.contains("environments differ")
                && w.contains("\"Test CPU\" vs \"Other CPU\"")),
            "{:?}",
            c.warnings
        );
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("measurement (s) of B: 4 vs 10")),
            "{:?}",
            c.warnings
        );
    }

    /// A kernel setting that differs is flagged with both values; one recorded by only one run
    /// (an older gatebench) is not evidence of a difference.
    #[test]
    fn differing_kernel_settings_are_flagged_with_both_values() {
        let (mut a, mut b) = fixture(5);
        let mut ea = env("Test CPU");
        ea.system.somaxconn = Some("4096".into());
        ea.system.tcp_congestion_control = Some("bbr".into());
        ea.system.cpu_governor = Some("performance".into());
        let mut eb = ea.clone();
        eb.system.somaxconn = Some("128".into());
        eb.system.cpu_governor = None;
        a.environment = Some(ea);
        b.environment = Some(eb);
        let c = compare(&[a, b], &opts());
        let got: Vec<(&str, &str, &str)> = c
            .differences
            .iter()
            .map(|d| (d.field.as_str(), d.baseline.as_str(), d.other.as_str()))
            .collect();
        assert_eq!(got, vec![("somaxconn", "4096", "128")]);
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("somaxconn of B: \"4096\" vs \"128\"")),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn scenarios_of_one_run_are_matched_without_their_names() {
        let (a, b) = fixture(5);
        let mut old: Vec<CellRecord> = a.records.clone();
        old.retain(|r| r.cell.scenario == "proxy");
        let mut new: Vec<CellRecord> = b.records.clone();
        new.retain(|r| r.cell.scenario == "proxy");
        for r in &mut new {
            r.cell.scenario = "proxy-v2".into();
            r.cell.id = r.cell.id.replace("proxy_", "proxy-v2_");
        }
        let runs = [
            RunInput {
                label: "proxy".into(),
                source: "results/x scenario proxy".into(),
                environment: None,
                records: old,
            },
            RunInput {
                label: "proxy-v2".into(),
                source: "results/x scenario proxy-v2".into(),
                environment: None,
                records: new,
            },
        ];
        let c = compare(
            &runs,
            &Options {
                match_scenario: false,
                ..opts()
            },
        );
        assert_eq!(
            verdict(&c, "u100_s50_d0", "throughput_rps"),
            Verdict::Improved
        );
        assert_eq!(
            verdict(&c, "u10_s50_d0", "throughput_rps"),
            Verdict::NoSignificantChange
        );
    }
}
