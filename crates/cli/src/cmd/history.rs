//! `gatebench history add|list|export|changes|gate|report`: the release history
//! (docs/history.md). `add` stores a finished results directory as a version of its suite,
//! `list` shows what is stored, `export` writes every stored figure in tidy form; the analyses
//! of the series (`changes`, `gate`, `report`) are in `analyse`. Storing cells while a suite
//! runs is `gatebench run --history` (`cmd::run`), through [`LiveHistory`].
//!
//! The store itself, its schema and its checks live in `gatebench-history`; this module parses
//! arguments, prints, and maps errors to exit status 2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use gatebench_history::export::{self, Format};
use gatebench_history::store::{rfc3339, RunId, SuiteIdentity};
use gatebench_history::{Location, Release, RunInput, Store};
use gatebench_model::CellRecord;

mod analyse;
pub use analyse::{ChangesArgs, GateArgs, ReportArgs};

/// `gatebench history`.
#[derive(Debug, Args)]
#[command(
    disable_version_flag = true,
    after_help = "The history is an SQLite file, created on first use: \
$XDG_DATA_HOME/gatebench/history.sqlite, or ~/.local/share/gatebench/history.sqlite; --history \
or GATEBENCH_HISTORY give another file or a postgres:// URL (same schema). See \
docs/history.md.\n\nExamples:\n  gatebench history add results/20261125-175646 --version 2201.12.4 \
--commit 1a2b3c4\n  gatebench history list --suite \"gatebench default suite\"\n  gatebench \
history export --format csv --out history.csv\n  gatebench history changes --metric throughput,p99\n  \
gatebench history gate --version 2201.12.4 --gate 'throughput >= -5% vs 2201.11.0' --junit \
gate.xml\n  gatebench history report --out site/\n\nExit status: 0 done, 2 bad input (an incomplete \
or newer results directory, a version stored twice without --replace, another suite under the \
same name, a newer or unreachable database; for changes, gate and report also no history at \
all, an unknown suite, metric or version, a bad gate) or another error; nothing is written \
then. `history gate` exits 0 pass, 1 fail, 3 unstable, 4 cannot judge."
)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
    /// The history: an SQLite file, or a postgres://user@host/db URL [default:
    /// $GATEBENCH_HISTORY, else $XDG_DATA_HOME/gatebench/history.sqlite or
    /// ~/.local/share/gatebench/history.sqlite].
    #[arg(long, global = true, value_name = "PATH_OR_URL")]
    pub history: Option<String>,
}

/// The history's subcommands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Store a finished results directory as a version of its suite (one transaction).
    Add(AddArgs),
    /// List the stored suites, or one suite's versions.
    List(ListArgs),
    /// Write every stored figure, one row per version × cell × repeat × metric.
    Export(ExportArgs),
    /// The versions where each cell's metrics moved to a new level (E-divisive means with a
    /// permutation test), with the shift, its interval and its p-value.
    Changes(ChangesArgs),
    /// Judge a stored version by release gates (the suite's `[suite] gates` and --gate):
    /// exit 0 pass, 1 fail, 3 unstable, 4 cannot judge, 2 bad input.
    Gate(GateArgs),
    /// Write the trend site: an index of suites and versions, a page per scenario with charts
    /// against version and change points, a page per release with its summary table and gates.
    Report(ReportArgs),
}

/// `gatebench history add`.
#[derive(Debug, Args)]
#[command(disable_version_flag = true)]
pub struct AddArgs {
    /// A results directory written by `gatebench run`, complete.
    pub dir: PathBuf,
    /// The version this run measured (e.g. 2201.12.4).
    #[arg(long, value_name = "VERSION")]
    pub version: String,
    /// The source commit of the version.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The version's date, RFC 3339 (2026-11-25T16:00:00Z), which orders the versions
    /// [default: when the run started].
    #[arg(long, value_name = "RFC3339", value_parser = parse_date)]
    pub date: Option<i64>,
    /// Replace the version when it is already stored.
    #[arg(long)]
    pub replace: bool,
}

/// `gatebench history list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// List this suite's versions (in version order) instead of the suites.
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
}

/// `gatebench history export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// csv (a header line) or json (an array of objects).
    #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    /// Only this suite [default: every suite].
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `--format` of `history export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// CSV with a header line.
    Csv,
    /// A JSON array of objects.
    Json,
}

/// Parses `--date`: RFC 3339, to Unix milliseconds.
pub fn parse_date(s: &str) -> Result<i64, String> {
    let t = humantime::parse_rfc3339_weak(s.trim()).map_err(|e| {
        format!("`{s}` is not an RFC 3339 date ({e}); write e.g. 2026-11-25T16:00:00Z")
    })?;
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("`{s}` is before 1970"))?
        .as_millis();
    i64::try_from(ms).map_err(|_| format!("`{s}` is out of range"))
}

/// Opens the history named by `given` (`--history`; empty for the default), printing where
/// it is on stderr.
pub fn open(given: Option<&str>) -> Result<Store> {
    let location = Location::resolve(given.filter(|g| !g.trim().is_empty()))?;
    let store = Store::open(&location)?;
    eprintln!(
        "History: {}{}",
        location,
        if store.created() { " (created)" } else { "" }
    );
    Ok(store)
}

/// Runs the subcommand.
pub fn run(args: HistoryArgs) -> Result<ExitCode> {
    match args.command {
        HistoryCommand::Add(a) => add(args.history.as_deref(), a),
        HistoryCommand::List(a) => list(args.history.as_deref(), a),
        HistoryCommand::Export(a) => export(args.history.as_deref(), a),
        HistoryCommand::Changes(a) => analyse::changes(args.history.as_deref(), a),
        HistoryCommand::Gate(a) => analyse::gate(args.history.as_deref(), a),
        HistoryCommand::Report(a) => analyse::report(args.history.as_deref(), a),
    }
}

fn add(history: Option<&str>, a: AddArgs) -> Result<ExitCode> {
    // The directory is read and checked before the database is touched.
    let (run, records) =
        RunInput::from_results_dir(&a.dir, &a.version, a.commit.as_deref(), a.date)?;
    let mut store = open(history)?;
    let added = store.add_run(&run, &records, a.replace, &mut |_| {})?;
    println!(
        "Added version {} of suite \"{}\": {} cells, dated {}{}{}",
        added.version,
        added.suite,
        added.cells,
        rfc3339(run.date_unix_ms),
        if added.replaced {
            " (replaced the version stored before)"
        } else {
            ""
        },
        if added.new_suite {
            " (a new suite)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn list(history: Option<&str>, a: ListArgs) -> Result<ExitCode> {
    let store = open(history)?;
    let mut out = String::new();
    match &a.suite {
        None => {
            let suites = store.suites()?;
            if suites.is_empty() {
                println!("No runs stored yet: `gatebench history add DIR --version V` adds one.");
                return Ok(ExitCode::SUCCESS);
            }
            out.push_str("| Suite | Versions | Incomplete | Cells | Cell keys | Fingerprint |\n");
            out.push_str("|---|---:|---:|---:|---:|---|\n");
            for s in suites {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    s.name,
                    s.runs,
                    s.incomplete_runs,
                    s.cells,
                    s.cell_keys,
                    &s.fingerprint[..12.min(s.fingerprint.len())]
                ));
            }
        }
        Some(suite) => {
            let runs = store.runs(suite)?;
            out.push_str(&format!(
                "Suite \"{suite}\": {} versions, in version order (by date, then as added)\n\n",
                runs.len()
            ));
            out.push_str(
                "| Version | Date | Commit | Cells | Complete | Environment | gatebench | Results |\n",
            );
            out.push_str("|---|---|---|---:|---|---|---|---|\n");
            let first_env = runs.first().map(|r| r.env_fingerprint.clone());
            for r in runs {
                let env = &r.env_fingerprint[..12.min(r.env_fingerprint.len())];
                let differs = first_env.as_deref() != Some(r.env_fingerprint.as_str());
                out.push_str(&format!(
                    "| {} | {} | {} | {}/{} | {} | {}{} | {} | {} |\n",
                    r.version,
                    rfc3339(r.date_unix_ms),
                    r.commit.as_deref().unwrap_or(""),
                    r.cells,
                    r.planned_cells,
                    if r.complete { "yes" } else { "no" },
                    env,
                    if differs { " (differs)" } else { "" },
                    r.gatebench_version,
                    r.results_dir
                ));
            }
        }
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn export(history: Option<&str>, a: ExportArgs) -> Result<ExitCode> {
    let store = open(history)?;
    let rows = store.export(a.suite.as_deref())?;
    let format = match a.format {
        ExportFormat::Csv => Format::Csv,
        ExportFormat::Json => Format::Json,
    };
    match &a.out {
        Some(path) => {
            // Written beside the target and renamed: a failed export leaves no half file.
            let mut buf = Vec::new();
            export::write(&rows, format, &mut buf).context("formatting the export")?;
            gatebench_results::write_atomic(path, &buf)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("{} rows written to {}", rows.len(), path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            export::write(&rows, format, &mut lock)
                .and_then(|()| lock.flush())
                .context("writing to stdout")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The history of a `gatebench run --history`: its run row made when the run starts, each
/// cell stored as it finishes. A failure to store a cell does not stop the benchmark: it is
/// said once, no later cell is stored, and the run stays incomplete in the history (add the
/// results directory with `history add --replace` later).
#[derive(Debug)]
pub struct LiveHistory {
    store: Store,
    run: Option<RunId>,
    version: String,
    stored: usize,
    failed: bool,
}

impl LiveHistory {
    /// Opens the history and checks, before anything runs, that `suite` may take `version`.
    pub fn check(
        given: &str,
        suite: &SuiteIdentity,
        version: &str,
        replace: bool,
    ) -> Result<LiveHistory> {
        let store = open(Some(given))?;
        store.check(suite, version, replace)?;
        Ok(LiveHistory {
            store,
            run: None,
            version: version.to_owned(),
            stored: 0,
            failed: false,
        })
    }

    /// Makes the run's row once the results directory `dir` has its `run.json`,
    /// `environment.json` and `suite.toml`.
    pub fn begin(
        &mut self,
        dir: &Path,
        commit: Option<&str>,
        date: Option<i64>,
        replace: bool,
    ) -> Result<()> {
        let results = gatebench_results::read(dir)?;
        let env = gatebench_results::read_environment(dir)?
            .context("the results directory has no environment.json")?;
        let suite_toml = std::fs::read_to_string(dir.join(gatebench_results::paths::SUITE_TOML))
            .with_context(|| format!("reading {}/suite.toml", dir.display()))?;
        let abs =
            std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
        let release = Release {
            version: &self.version,
            commit,
            date_unix_ms: date,
        };
        let run = RunInput::new(
            &suite_toml,
            &env,
            &release,
            results.manifest.started_at_unix_ms as i64,
            results.manifest.planned_cells.len(),
            abs,
        )?;
        let added = self.store.begin_run(&run, replace)?;
        self.run = Some(added.run);
        println!(
            "History: storing each cell as version {} of suite \"{}\"{}",
            added.version,
            added.suite,
            if added.replaced {
                " (replacing the version stored before)"
            } else {
                ""
            }
        );
        Ok(())
    }

    /// Stores a finished cell; returns a line to print when storing failed (once).
    pub fn cell(&mut self, record: &CellRecord) -> Option<String> {
        let run = self.run?;
        if self.failed {
            return None;
        }
        match self.store.add_cell(run, record) {
            Ok(()) => {
                self.stored += 1;
                None
            }
            Err(e) => {
                self.failed = true;
                Some(format!(
                    "gatebench: warning: the history did not take cell {} ({:#}); no further \
                     cell is stored, the run goes on",
                    record.cell.id,
                    anyhow::Error::from(e)
                ))
            }
        }
    }

    /// Ends the run: marked complete when every planned cell was stored. The results are on
    /// disk by now, so a history that fails here is a warning, not the run's error.
    pub fn finish(&mut self, planned: usize, results_dir: &Path) {
        let Some(run) = self.run else {
            return;
        };
        let hint = format!(
            "when the results directory is complete, `gatebench history add {} --version {} \
             --replace` stores it whole",
            results_dir.display(),
            self.version
        );
        if self.failed || self.stored != planned {
            eprintln!(
                "gatebench: history: version {} is stored incomplete ({} of {planned} cells); \
                 {hint}",
                self.version, self.stored
            );
            return;
        }
        match self.store.finish_run(run) {
            Ok(()) => println!(
                "History: version {} stored, {} cells, in {}",
                self.version,
                self.stored,
                self.store.location()
            ),
            Err(e) => eprintln!(
                "gatebench: warning: history: version {} could not be marked complete ({:#}); {hint}",
                self.version,
                anyhow::Error::from(e)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_date("2026-11-25T16:00:00Z"), Ok(1_795_622_400_000));
        assert!(parse_date("yesterday").unwrap_err().contains("RFC 3339"));
    }
}
