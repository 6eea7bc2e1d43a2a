//! What the results tables share: the row type (a cell's id and its formatted values), the
//! order of protocols, the name a cell is listed under and how a plain number is printed. The
//! seed-004 summary ([`crate::summary`]) and the capacity and cost tables ([`crate::searches`])
//! are built from these; this module builds no table itself.

use gatebench_model::CellRecord;

/// One row: the cell's id and its values in the order of its table's columns (the summary's [`crate::summary::COLUMNS`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The cell id (its directory under `cells/`).
    pub id: String,
    /// The values, formatted, in the order of its table's columns (the summary's [`crate::summary::COLUMNS`]).
    pub values: Vec<String>,
}

/// Protocols in the order suites list them (h1c, h1, h2, h2c), unknown ones last.
pub fn protocol_rank(p: &str) -> (usize, &str) {
    let rank = ["h1c", "h1", "h2", "h2c"]
        .iter()
        .position(|x| *x == p)
        .unwrap_or(usize::MAX);
    (rank, p)
}

/// The title, with the protocol when the same scenario ran over several.
pub fn scenario_name(r: &CellRecord, all: &[CellRecord]) -> String {
    let several = all
        .iter()
        .any(|o| o.cell.scenario == r.cell.scenario && o.cell.protocol != r.cell.protocol);
    if several {
        format!("{} [{}]", r.cell.title, r.cell.protocol)
    } else {
        r.cell.title.clone()
    }
}

/// A latency's percentile `p` in ms with two decimals, for a table cell; `—` without values.
pub fn ms_at(l: &gatebench_model::LatencySummary, p: f64) -> String {
    if l.count == 0 {
        return "—".to_owned();
    }
    l.at(p)
        .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"))
}

/// A number without a useless `.0` (`0`, `0.5`, `2500`).
pub fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
