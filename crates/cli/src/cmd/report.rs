//! `gatebench report DIR`: re-renders a results directory's summaries and its HTML report
//! (`report.html` with its plots under `plots/`) from its cell records and side files (after a
//! crash or Ctrl-C, or with a newer renderer) and prints `summary.md`.
//!
//! A directory that is not a results directory, or is of another schema version, is refused
//! with a clear message; an incomplete one is rendered and said to be incomplete.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use gatebench_model::{CellKind, CellRecord, Environment};
use gatebench_report::cellfiles;
use gatebench_report::html::{self, CellData, ReportInput};
use gatebench_report::searches;
use gatebench_report::summary::{self, Phase};
use gatebench_results::{self as results, paths, ResultsDir, ResultsError};

/// `gatebench report DIR`.
#[derive(Debug, Args)]
#[command(
    after_help = "Rewrites summary.md, summary.csv, warmup.csv, summary.json (capacity.csv and \
cost.csv when the run has capacity or cost cells) and report.html (self-contained; its plots also as SVG files in plots/) in DIR from cells/*/record.json and the \
cells' samples.csv, timeline.csv and latency.hlog, and prints summary.md.\n\nExit status: 0 done, 2 DIR is not a results \
directory (or of another version)."
)]
pub struct ReportArgs {
    /// A results directory written by `gatebench run`.
    pub dir: PathBuf,
}

/// Runs the subcommand.
pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let r = results::read(&args.dir)?;
    let dir = ResultsDir::open(&args.dir);
    // A damaged record's cell is left out of the summaries as a missing one is.
    let absent = r.missing.len() + r.damaged.len();
    write_summaries(&dir, &r.manifest.suite, &r.records, absent)?;
    let page = write_report(&args.dir)?;
    print!(
        "{}",
        summary::markdown(&r.manifest.suite, &r.records, absent)
    );
    for line in r.damaged_lines() {
        eprintln!("gatebench: warning: damaged record, cell left out: {line}");
    }
    if !r.missing.is_empty() {
        eprintln!(
            "gatebench: incomplete: {} of {} planned cells have no record (the run was \
             interrupted or is still going), first missing: {}",
            r.missing.len(),
            r.manifest.planned_cells.len(),
            r.missing[0]
        );
    }
    eprintln!(
        "summaries rewritten in {}; report: {}",
        args.dir.display(),
        page.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `report.html` and `plots/*.svg` in the results directory `root` from what is on disk
/// (records, environment, each cell's side files); returns the page's path. A side file that
/// is missing or unreadable leaves its plot out (or falls back: the latency spectrum to the
/// record's percentiles, the time series to the interval log), never the whole report.
pub fn write_report(root: &Path) -> Result<PathBuf> {
    let r = results::read(root)?;
    // The report renders without an environment rather than not at all.
    let env: Option<Environment> = results::read_environment(root).ok().flatten();
    let mut cells = Vec::with_capacity(r.records.len());
    for rec in &r.records {
        let dir = root.join(paths::cell_dir(&rec.cell.id));
        let mut c = CellData::new(rec);
        if let Ok(t) = std::fs::read_to_string(dir.join(paths::SAMPLES_CSV)) {
            c.samples = cellfiles::parse_samples(&t);
        }
        if let Ok(t) = std::fs::read_to_string(dir.join(paths::TIMELINE_CSV)) {
            c.timeline = cellfiles::parse_timeline(&t);
        }
        if let Ok(bytes) = std::fs::read(dir.join(paths::LATENCY_HLOG)) {
            let warmup = rec
                .load
                .as_ref()
                .and_then(|l| l.warmup.as_ref())
                .map_or(0.0, |w| w.duration_s);
            match cellfiles::read_hlog(&bytes, warmup) {
                Ok(h) => {
                    if c.timeline.is_empty() && !h.intervals.is_empty() {
                        c.timeline = h.intervals;
                        c.timeline_from_load_start = true;
                    }
                    c.spectrum = h.corrected;
                    c.spectrum_uncorrected = h.uncorrected;
                }
                Err(e) => tracing::warn!("{}: latency.hlog: {e}", rec.cell.id),
            }
        }
        cells.push(c);
    }
    let rendered = html::render(&ReportInput {
        suite: &r.manifest.suite,
        manifest: Some(&r.manifest),
        environment: env.as_ref(),
        cells,
        missing: r.missing.len(),
    });
    let dir = ResultsDir::open(root);
    dir.create_dir(paths::PLOTS_DIR)?;
    for (name, svg) in &rendered.svgs {
        dir.write(&paths::plot(name), svg.as_bytes())?;
    }
    dir.write(paths::REPORT_HTML, rendered.html.as_bytes())?;
    Ok(dir.join(paths::REPORT_HTML))
}

/// Writes `summary.md`, `summary.csv`, `warmup.csv` and `summary.json` (each atomically), and
/// `capacity.csv` and `cost.csv` when the run has capacity or cost cells.
pub fn write_summaries(
    dir: &ResultsDir,
    suite: &str,
    records: &[CellRecord],
    missing: usize,
) -> Result<(), ResultsError> {
    dir.write(
        paths::SUMMARY_MD,
        summary::markdown(suite, records, missing).as_bytes(),
    )?;
    dir.write(
        paths::SUMMARY_CSV,
        summary::csv(records, Phase::Measurement).as_bytes(),
    )?;
    dir.write(
        paths::WARMUP_CSV,
        summary::csv(records, Phase::Warmup).as_bytes(),
    )?;
    let has = |k: CellKind| records.iter().any(|r| r.cell.kind == k);
    if has(CellKind::Capacity) {
        dir.write(
            paths::CAPACITY_CSV,
            searches::capacity_csv(records).as_bytes(),
        )?;
    }
    if has(CellKind::Cost) {
        dir.write(paths::COST_CSV, searches::cost_csv(records).as_bytes())?;
    }
    dir.write(
        paths::SUMMARY_JSON,
        summary::json(suite, records, missing).as_bytes(),
    )
}
