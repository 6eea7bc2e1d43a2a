//! The one exporter of a results directory: every file derived from the measurements —
//! `summary.md`, `summary.csv`, `warmup.csv`, `summary.json`, `capacity.csv`, `cost.csv`,
//! `report.html` and its plots under `plots/` — is written here, and nowhere else (hyperfine's
//! `export/` is the model: one owner of the output files, called after each benchmark so that
//! a later failure loses nothing).
//!
//! Two callers, one path: `gatebench run` hands it each cell as it finishes, from what is in
//! memory ([`Exporter::add_cell`], then [`Exporter::write`]); `gatebench report DIR` reads a
//! directory back ([`Exporter::open`]) and writes the same files the same way.
//!
//! It does not write what was measured (`run.json`, `environment.json`, `suite.toml`,
//! `hosts.json`, each cell's `record.json`, `latency.hlog`, `samples.csv`, `timeline.csv`):
//! the runner writes those as it measures, and this module only reads them.

use std::path::{Path, PathBuf};

use gatebench_model::{CellKind, CellRecord, Environment, RunManifest};
use gatebench_results::{self as results, paths, CellFiles, ResultsDir, ResultsError, RunResults};

use crate::cellfiles::{self, IntervalPoint, ResourcePoint, Spectrum};
use crate::html::{self, CellData, ReportInput};
use crate::searches;
use crate::summary::{self, Phase};

/// What the report plots of one cell, read from its side files once.
#[derive(Clone, Debug, Default)]
struct CellPlots {
    samples: Vec<ResourcePoint>,
    timeline: Vec<IntervalPoint>,
    timeline_from_load_start: bool,
    spectrum: Option<Spectrum>,
    spectrum_uncorrected: Option<Spectrum>,
}

impl CellPlots {
    /// A side file that is missing or does not read leaves its plot out (or falls back: the
    /// time series to the interval log's seconds), never the whole report.
    fn read(record: &CellRecord, files: &CellFiles<'_>) -> CellPlots {
        let mut p = CellPlots::default();
        if let Some(t) = files.samples_csv {
            p.samples = cellfiles::parse_samples(t);
        }
        if let Some(t) = files.timeline_csv {
            p.timeline = cellfiles::parse_timeline(t);
        }
        if let Some(bytes) = files.hlog.filter(|b| !b.is_empty()) {
            let warmup = record
                .load
                .as_ref()
                .and_then(|l| l.warmup.as_ref())
                .map_or(0.0, |w| w.duration_s);
            match cellfiles::read_hlog(bytes, warmup) {
                Ok(h) => {
                    if p.timeline.is_empty() && !h.intervals.is_empty() {
                        p.timeline = h.intervals;
                        p.timeline_from_load_start = true;
                    }
                    p.spectrum = h.corrected;
                    p.spectrum_uncorrected = h.uncorrected;
                }
                Err(e) => eprintln!(
                    "gatebench: warning: {}: latency.hlog does not read ({e}); its plots are left out",
                    record.cell.id
                ),
            }
        }
        p
    }
}

/// Every file of a results directory that is derived from its measurements.
#[derive(Debug)]
pub struct Exporter {
    dir: ResultsDir,
    manifest: RunManifest,
    environment: Option<Environment>,
    records: Vec<CellRecord>,
    plots: Vec<CellPlots>,
}

impl Exporter {
    /// An exporter for a run being written into `dir`, before its first cell.
    pub fn new(dir: ResultsDir, manifest: RunManifest, environment: Option<Environment>) -> Self {
        Exporter {
            dir,
            manifest,
            environment,
            records: Vec::new(),
            plots: Vec::new(),
        }
    }

    /// Reads the results directory `root` back: its manifest, environment, every readable
    /// cell with its side files. What [`results::read`] says of it (missing and damaged cells)
    /// comes back beside, for the caller to tell.
    pub fn open(root: &Path) -> Result<(Exporter, RunResults), ResultsError> {
        let mut read = results::read(root)?;
        // The report renders without an environment rather than not at all.
        let environment = results::read_environment(root).ok().flatten();
        let records = std::mem::take(&mut read.records);
        let mut e = Exporter::new(ResultsDir::open(root), read.manifest.clone(), environment);
        for record in records {
            let cell = root.join(paths::cell_dir(&record.cell.id));
            let text = |f: &str| std::fs::read_to_string(cell.join(f)).ok();
            let (samples, timeline) = (text(paths::SAMPLES_CSV), text(paths::TIMELINE_CSV));
            let hlog = std::fs::read(cell.join(paths::LATENCY_HLOG)).ok();
            let files = CellFiles {
                samples_csv: samples.as_deref(),
                timeline_csv: timeline.as_deref(),
                hlog: hlog.as_deref(),
            };
            e.add_cell(record, &files);
        }
        Ok((e, read))
    }

    /// A finished cell: its record and what its side files hold.
    pub fn add_cell(&mut self, record: CellRecord, files: &CellFiles<'_>) {
        self.plots.push(CellPlots::read(&record, files));
        self.records.push(record);
    }

    /// The cells so far, in the order they were added.
    pub fn records(&self) -> &[CellRecord] {
        &self.records
    }

    /// The directory.
    pub fn dir(&self) -> &ResultsDir {
        &self.dir
    }

    /// Writes every derived file (each atomically): the summaries, the capacity and cost
    /// tables when the run has such cells, and `report.html` with its plots. `missing` planned
    /// cells have no record (yet). Returns the page's path.
    pub fn write(&self, missing: usize) -> Result<PathBuf, ResultsError> {
        self.write_summaries(missing)?;
        self.write_report(missing)
    }

    /// `summary.md`, `summary.csv`, `warmup.csv`, `summary.json`, and `capacity.csv` and
    /// `cost.csv` when the run has capacity or cost cells.
    pub fn write_summaries(&self, missing: usize) -> Result<(), ResultsError> {
        let (dir, suite, records) = (&self.dir, &self.manifest.suite, &self.records[..]);
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

    /// `report.html` and `plots/*.svg`; returns the page's path.
    pub fn write_report(&self, missing: usize) -> Result<PathBuf, ResultsError> {
        let cells = self
            .records
            .iter()
            .zip(&self.plots)
            .map(|(record, p)| CellData {
                record,
                samples: p.samples.clone(),
                timeline: p.timeline.clone(),
                timeline_from_load_start: p.timeline_from_load_start,
                spectrum: p.spectrum.clone(),
                spectrum_uncorrected: p.spectrum_uncorrected.clone(),
            })
            .collect();
        let rendered = html::render(&ReportInput {
            suite: &self.manifest.suite,
            manifest: Some(&self.manifest),
            environment: self.environment.as_ref(),
            cells,
            missing,
        });
        self.dir.create_dir(paths::PLOTS_DIR)?;
        for (name, svg) in &rendered.svgs {
            self.dir.write(&paths::plot(name), svg.as_bytes())?;
        }
        self.dir
            .write(paths::REPORT_HTML, rendered.html.as_bytes())?;
        Ok(self.dir.join(paths::REPORT_HTML))
    }
}
