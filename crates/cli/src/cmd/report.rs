//! `gatebench report DIR`: re-renders a results directory's summaries from its cell records
//! (after a crash or Ctrl-C, or with a newer renderer) and prints `summary.md`.
//!
//! A directory that is not a results directory, or is of another schema version, is refused
//! with a clear message; an incomplete one is rendered and said to be incomplete.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use gatebench_model::CellRecord;
use gatebench_report::summary::{self, Phase};
use gatebench_runner::{ResultsDir, RunnerError};

/// `gatebench report DIR`.
#[derive(Debug, Args)]
#[command(
    after_help = "Rewrites summary.md, summary.csv, warmup.csv and summary.json in DIR \
from cells/*/record.json, and prints summary.md.\n\nExit status: 0 done, 2 DIR is not a results \
directory (or of another version)."
)]
pub struct ReportArgs {
    /// A results directory written by `gatebench run`.
    pub dir: PathBuf,
}

/// Runs the subcommand.
pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let r = gatebench_runner::results::read(&args.dir)?;
    let dir = ResultsDir::open(&args.dir);
    write_summaries(&dir, &r.manifest.suite, &r.records, r.missing.len())?;
    print!(
        "{}",
        summary::markdown(&r.manifest.suite, &r.records, r.missing.len())
    );
    if !r.missing.is_empty() {
        eprintln!(
            "gatebench: incomplete: {} of {} planned cells have no record (the run was \
             interrupted or is still going), first missing: {}",
            r.missing.len(),
            r.manifest.planned_cells.len(),
            r.missing[0]
        );
    }
    eprintln!("summaries rewritten in {}", args.dir.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes `summary.md`, `summary.csv`, `warmup.csv` and `summary.json` (each atomically).
pub fn write_summaries(
    dir: &ResultsDir,
    suite: &str,
    records: &[CellRecord],
    missing: usize,
) -> Result<(), RunnerError> {
    dir.write(
        "summary.md",
        summary::markdown(suite, records, missing).as_bytes(),
    )?;
    dir.write(
        "summary.csv",
        summary::csv(records, Phase::Measurement).as_bytes(),
    )?;
    dir.write(
        "warmup.csv",
        summary::csv(records, Phase::Warmup).as_bytes(),
    )?;
    dir.write(
        "summary.json",
        summary::json(suite, records, missing).as_bytes(),
    )
}
