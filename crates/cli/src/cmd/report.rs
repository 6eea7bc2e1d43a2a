//! `gatebench report DIR`: re-renders a results directory's summaries and its HTML report
//! (`report.html` with its plots under `plots/`) from its cell records and side files (after a
//! crash or Ctrl-C, or with a newer renderer) through the same exporter `gatebench run` writes
//! them with (`gatebench_report::export`), and prints `summary.md`.
//!
//! A directory that is not a results directory, or is of another schema version, is refused
//! with a clear message; an incomplete one is rendered and said to be incomplete.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use gatebench_report::export::Exporter;
use gatebench_report::summary;

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
    let (exporter, r) = Exporter::open(&args.dir)?;
    // A damaged record's cell is left out of the summaries as a missing one is.
    let absent = r.missing.len() + r.damaged.len();
    let page = exporter.write(absent)?;
    print!(
        "{}",
        summary::markdown(&r.manifest.suite, exporter.records(), absent)
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
