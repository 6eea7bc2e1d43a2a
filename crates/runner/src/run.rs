//! Running a planned suite: the results directory's fixed files first, the setup commands once,
//! then every cell in order, each written to disk as soon as it ends.
//!
//! Rendering summaries is not done here (the runner does not depend on the renderers): the
//! caller's [`Observer`] is told after every cell, with every record so far, and rewrites them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_model::{CellRecord, RunManifest, ToolInfo, SCHEMA_VERSION};
use gatebench_results::{paths, CellFiles};

use crate::cell::{run_cell, CellContext, CellEvent};
use crate::driver::Driver;
use crate::error::RunnerError;
use crate::hosts::HostPlan;
use crate::launch::Launcher;
use crate::matrix::{cell_time, Cell, Plan};
use crate::pin::Placement;
use crate::results::{environment, ResultsDir};
use crate::settle::{Settling, UntilStable};
use crate::suite::Suite;
use crate::suite_metrics::SuiteMetrics;

/// Where the run stands, for the progress display.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The current cell.
    pub cell: &'a Cell,
    /// Its scenario's title.
    pub title: &'a str,
    /// Its position, 1-based.
    pub index: usize,
    /// Cells in the plan.
    pub total: usize,
    /// Cells finished so far.
    pub done: usize,
    /// Estimated time left, this cell included.
    pub left: Duration,
}

/// Told what happens during a run. Every method has a default that does nothing.
pub trait Observer {
    /// A scenario's setup command is about to run.
    fn setup_started(&mut self, _scenario: &str, _command: &str) {}
    /// A scenario's setup command ended; [`RunnerError::chain`] gives a failure on one line.
    fn setup_finished(&mut self, _scenario: &str, _result: &Result<(), RunnerError>) {}
    /// A cell starts.
    fn cell_started(&mut self, _p: &Progress<'_>) {}
    /// A phase began or a second of load passed.
    fn cell_event(&mut self, _p: &Progress<'_>, _e: &CellEvent<'_>) {}
    /// A cell ended and its files are on disk: `files` holds its side files as written, `all`
    /// every record of the run so far, in run order. The derived files are rewritten here
    /// (`gatebench_report::export`); an error ends the run.
    fn cell_finished(
        &mut self,
        _p: &Progress<'_>,
        _record: &CellRecord,
        _files: &CellFiles<'_>,
        _results: &ResultsDir,
        _all: &[CellRecord],
    ) -> Result<(), RunnerError> {
        Ok(())
    }
}

/// An observer that observes nothing.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The gatebench executable built-in services are started from.
    pub exe: PathBuf,
    /// Set on Ctrl-C: the cell in progress stops, is not recorded, and the run ends.
    pub stop: Arc<AtomicBool>,
    /// CPU placement.
    pub placement: Placement,
    /// The remote hosts, ready ([`crate::hosts::prepare`]); the default runs everything here.
    pub hosts: HostPlan,
    /// `--until-stable`: each load cell repeated, right after itself, until its median
    /// throughput has settled ([`crate::settle`]) or the cap is reached.
    pub until_stable: Option<UntilStable>,
    /// `--metrics`: the suite's live figures, each load cell's fed as it runs.
    pub metrics: Option<Arc<SuiteMetrics>>,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunSummary {
    /// Every finished cell's record, in run order.
    pub records: Vec<CellRecord>,
    /// Whether Ctrl-C ended the run early.
    pub interrupted: bool,
    /// With `--until-stable`: every load cell's last state (its id without the repeat), in
    /// run order.
    pub settling: Vec<(String, Settling)>,
    /// Cells planned in the end: the plan's, and the repeats `--until-stable` added.
    pub planned: usize,
}

impl RunSummary {
    /// Cells that failed.
    pub fn failed(&self) -> usize {
        self.records
            .iter()
            .filter(|r| r.status != gatebench_model::CellStatus::Ok)
            .count()
    }
}

/// Writes the directory's fixed files: `suite.toml` (resolved), `environment.json`, `run.json`.
/// First raises the open-files limit the processes of every cell will inherit
/// ([`crate::results::raise_open_files_limit`]), so `environment.json` records the one they get.
pub fn prepare(suite: &Suite, plan: &Plan, results: &ResultsDir) -> Result<(), RunnerError> {
    crate::results::raise_open_files_limit();
    results.write(paths::SUITE_TOML, suite.to_toml().as_bytes())?;
    results.write_json(paths::ENVIRONMENT_JSON, &environment())?;
    let manifest = RunManifest {
        schema_version: SCHEMA_VERSION,
        kind: RunManifest::KIND.to_owned(),
        tool: ToolInfo {
            name: "gatebench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        suite: suite.name.clone(),
        started_at_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        planned_cells: plan.cells.iter().map(|c| c.id.clone()).collect(),
        estimated_s: plan.estimate.as_secs_f64(),
        compare: suite.compare.clone(),
    };
    Ok(results.write_json(paths::RUN_JSON, &manifest)?)
}

/// Runs the planned cells. Call [`prepare`] first.
pub fn run_suite(
    suite: &Suite,
    plan: &Plan,
    results: &ResultsDir,
    settings: &RunSettings,
    launcher: &mut dyn Launcher,
    driver: &mut dyn Driver,
    observer: &mut dyn Observer,
) -> Result<RunSummary, RunnerError> {
    let setup_failures = run_setups(suite, plan, results, &settings.hosts, launcher, observer);
    // With --until-stable the plan grows as cells ask for more repeats: each one is planned
    // right after the repeat that did not settle.
    let mut cells: Vec<Cell> = plan.cells.clone();
    let mut records: Vec<CellRecord> = Vec::with_capacity(cells.len());
    let mut interrupted = false;
    let mut settling = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        let total = cells.len();
        let cell = &cells[i];
        if settings.stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let cell_start = Instant::now();
        let per_cell = cell_time(suite, cell);
        let remaining: Duration = cells[i..].iter().map(|c| cell_time(suite, c)).sum();
        let progress = |done: usize| Progress {
            cell,
            title: &suite.scenarios[cell.scenario].title,
            index: i + 1,
            total,
            done,
            left: remaining.saturating_sub(cell_start.elapsed().min(per_cell)),
        };
        observer.cell_started(&progress(i));
        let cell_dir = results.cell_dir(&cell.id)?;
        let ctx = CellContext {
            suite,
            exe: &settings.exe,
            cell_dir: &cell_dir,
            placement: &settings.placement,
            stop: &settings.stop,
            setup_failure: setup_failures
                .iter()
                .find(|(s, _)| *s == cell.scenario)
                .map(|(_, why)| why.as_str()),
            order: (i + 1) as u32,
            hosts: &settings.hosts,
            metrics: settings
                .metrics
                .as_ref()
                .filter(|_| cell.kind.is_load())
                .map(|m| {
                    m.begin_cell(suite, cell);
                    m.clone()
                }),
        };
        let out = run_cell(&ctx, cell, launcher, driver, &mut |e| {
            observer.cell_event(&progress(i), &e)
        });
        if out.interrupted {
            interrupted = true;
            break;
        }
        write_cell(
            results,
            &cell.id,
            &out.record,
            &out.hlog,
            out.samples_csv.as_deref(),
            out.timeline_csv.as_deref(),
        )?;
        if let Some(m) = &settings.metrics {
            m.cell_done(out.record.status == gatebench_model::CellStatus::Failed);
            m.planned(cells.len());
        }
        records.push(out.record);
        let record = records.last().expect("just pushed");
        let files = CellFiles {
            samples_csv: out.samples_csv.as_deref(),
            timeline_csv: out.timeline_csv.as_deref(),
            hlog: Some(&out.hlog),
        };
        observer.cell_finished(&progress(i + 1), record, &files, results, &records)?;
        if let Some(how) = &settings.until_stable {
            if let Some((key, state, again)) = settle_next(cell, &records, how) {
                if let Some(next) = again {
                    plan_more(results, &next.id)?;
                    cells.insert(i + 1, next);
                } else {
                    settling.push((key, state));
                }
            }
        }
        i += 1;
    }
    Ok(RunSummary {
        records,
        interrupted,
        settling,
        planned: cells.len(),
    })
}

/// After a repeat of a load cell under `--until-stable`: the cell's key (its id without the
/// repeat), where its repeats stand, and the next repeat when it has not settled and may
/// have another. `None` for cells that are not loads.
fn settle_next(
    cell: &Cell,
    records: &[CellRecord],
    how: &UntilStable,
) -> Option<(String, Settling, Option<Cell>)> {
    if cell.kind != gatebench_model::CellKind::Load {
        return None;
    }
    let key = cell
        .id
        .strip_suffix(&format!("_r{}", cell.repeat))
        .unwrap_or(&cell.id)
        .to_owned();
    let same = |r: &&CellRecord| {
        r.cell.id.strip_suffix(&format!("_r{}", r.cell.repeat)) == Some(key.as_str())
    };
    let values = crate::settle::throughputs(records.iter().filter(same));
    let state = crate::settle::settling(&values, how);
    // A failed repeat does not settle anything: the cell stops repeating and says so.
    let failed = records.last().is_some_and(|r| {
        r.status != gatebench_model::CellStatus::Ok || r.load.as_ref().is_some_and(|l| !l.valid)
    });
    let again = (!state.settled && !failed && cell.repeat < how.max_repeats).then(|| {
        let mut next = cell.clone();
        next.repeat += 1;
        next.id = format!("{key}_r{}", next.repeat);
        next
    });
    Some((key, state, again))
}

/// Adds a cell to `run.json`'s planned cells, so that a reader of the directory counts it
/// (and an interrupted run says it is missing).
fn plan_more(results: &ResultsDir, id: &str) -> Result<(), RunnerError> {
    let path = results.join(paths::RUN_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| RunnerError::io("read", &path, e))?;
    let mut manifest: RunManifest = serde_json::from_str(&text).map_err(|e| {
        RunnerError::io(
            "read",
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })?;
    manifest.planned_cells.push(id.to_owned());
    Ok(results.write_json(paths::RUN_JSON, &manifest)?)
}

/// Runs each planned scenario's setup once; returns the failures by scenario index.
fn run_setups(
    suite: &Suite,
    plan: &Plan,
    results: &ResultsDir,
    hosts: &HostPlan,
    launcher: &mut dyn Launcher,
    observer: &mut dyn Observer,
) -> Vec<(usize, String)> {
    let mut failures = Vec::new();
    for (i, sc) in suite.scenarios.iter().enumerate() {
        let Some(cmd) = &sc.setup else { continue };
        if !plan.cells.iter().any(|c| c.scenario == i) {
            continue;
        }
        observer.setup_started(&sc.name, cmd);
        let log = results.join(&paths::setup_log(&sc.name));
        // On the host of the scenario's SUT (or of its back-ends when it has none), in
        // gatebench's cache directory there: it installs what runs there.
        let remote = if sc.sut.is_some() {
            hosts.sut.as_ref()
        } else {
            hosts.backend.as_ref()
        };
        let (suite_dir, workdir) = match remote {
            Some(h) => (h.cache.clone(), h.cache.clone()),
            None => (
                suite.base_dir.display().to_string(),
                sc.workdir.display().to_string(),
            ),
        };
        // A setup line runs in `sh -c`: its paths are quoted for the shell.
        let values = [
            ("suite_dir", crate::placeholder::shell_quote(&suite_dir)),
            ("workdir", crate::placeholder::shell_quote(&workdir)),
        ];
        let result = crate::placeholder::expand_strict(cmd, &|name| {
            values
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        })
        .map_err(|e| RunnerError::SetupCommandLine {
            source: Box::new(e),
        })
        .and_then(|cmd| match remote {
            Some(h) => h.setup(&cmd, &log),
            None => launcher.setup(&cmd, &sc.workdir, &log),
        });
        observer.setup_finished(&sc.name, &result);
        if let Err(e) = result {
            // The cells' records get it as one line, causes included.
            failures.push((i, e.chain()));
        }
    }
    failures
}

fn write_cell(
    results: &ResultsDir,
    id: &str,
    record: &CellRecord,
    hlog: &[u8],
    samples: Option<&str>,
    timeline: Option<&str>,
) -> Result<(), RunnerError> {
    let rel = |f: &str| paths::cell_file(id, f);
    if !hlog.is_empty() {
        results.write(&rel(paths::LATENCY_HLOG), hlog)?;
    }
    if let Some(s) = samples {
        results.write(&rel(paths::SAMPLES_CSV), s.as_bytes())?;
    }
    if let Some(t) = timeline {
        results.write(&rel(paths::TIMELINE_CSV), t.as_bytes())?;
    }
    // The record last: a cell directory with a record.json is complete.
    Ok(results.write_json(&rel(paths::RECORD_JSON), record)?)
}
