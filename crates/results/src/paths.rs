//! The names of a results directory's files, one constant per file, and the paths of a cell's
//! files relative to the directory (`cells/<id>/record.json`). Relative paths use `/`, as the
//! directory is laid out on every platform gatebench runs on.

/// What the directory is: kind, schema version, planned cells.
pub const RUN_JSON: &str = "run.json";
/// The machine and build the run ran on.
pub const ENVIRONMENT_JSON: &str = "environment.json";
/// The resolved suite (every default filled in).
pub const SUITE_TOML: &str = "suite.toml";
/// The summary table as Markdown.
pub const SUMMARY_MD: &str = "summary.md";
/// The summary table (measurement) as CSV.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The summary table of the warm-up as CSV.
pub const WARMUP_CSV: &str = "warmup.csv";
/// The capacity cells' table (max rate within SLO) as CSV, when the run has capacity cells.
pub const CAPACITY_CSV: &str = "capacity.csv";
/// The cost cells' table (added latency, intermediary CPU) as CSV, when the run has cost cells.
pub const COST_CSV: &str = "cost.csv";
/// Both summary tables as JSON.
pub const SUMMARY_JSON: &str = "summary.json";
/// The self-contained HTML report.
pub const REPORT_HTML: &str = "report.html";
/// The directory of the report's plots as SVG files.
pub const PLOTS_DIR: &str = "plots";
/// The directory holding one directory per cell.
pub const CELLS_DIR: &str = "cells";

/// A cell's record (written last: a cell directory with one is complete).
pub const RECORD_JSON: &str = "record.json";
/// A cell's HdrHistogram interval log.
pub const LATENCY_HLOG: &str = "latency.hlog";
/// A cell's SUT samples, one line per second.
pub const SAMPLES_CSV: &str = "samples.csv";
/// A cell's load timeline, one line per second.
pub const TIMELINE_CSV: &str = "timeline.csv";

/// `cells/<id>`, relative to the results directory.
pub fn cell_dir(id: &str) -> String {
    format!("{CELLS_DIR}/{id}")
}

/// `cells/<id>/<file>`, relative to the results directory.
pub fn cell_file(id: &str, file: &str) -> String {
    format!("{CELLS_DIR}/{id}/{file}")
}

/// `setup-<scenario>.log`: the output of a scenario's setup command.
pub fn setup_log(scenario: &str) -> String {
    format!("setup-{scenario}.log")
}

/// `plots/<name>`, relative to the results directory.
pub fn plot(name: &str) -> String {
    format!("{PLOTS_DIR}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_paths() {
        assert_eq!(
            cell_file("echo-u10", RECORD_JSON),
            "cells/echo-u10/record.json"
        );
        assert_eq!(cell_dir("x"), "cells/x");
        assert_eq!(plot("a.svg"), "plots/a.svg");
    }
}
