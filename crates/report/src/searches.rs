//! The capacity and cost cells of a suite run, as tables: "max rate within SLO" per scenario
//! and point (from each capacity cell's search) and the intermediary's added latency per
//! percentile and CPU per request (from each cost cell). Rendered into `summary.md`,
//! `capacity.csv`, `cost.csv`, `summary.json` and `report.html` beside the load cells' table,
//! never mixed into it: a search's steps are not one load.
//!
//! Pure functions of the records, as [`crate::summary`]; the single-run renderings (`gatebench
//! load --find-max`, `gatebench cost`) are [`crate::capacity`] and [`crate::cost`].

use std::fmt::Write;

use gatebench_model::{
    CapacityReport, CapacityVerdict, CellKind, CellRecord, CellStatus, CostReport, COST_PERCENTILES,
};
use serde_json::{json, Value};

use crate::svg::esc;
use crate::table::{number, protocol_rank, scenario_name, Row};

/// The columns of the capacity table.
pub const CAPACITY_COLUMNS: [&str; 10] = [
    "Scenario Name",
    "Message Size (Bytes)",
    "Back-end Service Delay (ms)",
    "Protocol",
    "SLO",
    "Max Rate within SLO (Requests/sec)",
    "Uncertainty (%)",
    "Knee (Requests/sec)",
    "Steps",
    "Flags",
];

/// The columns of the cost table: each added latency is the estimate with its interval,
/// `+0.120 [0.080, 0.160]` (ms) in the Markdown and HTML tables; `cost.csv` gives the three
/// numbers in columns of their own ([`COST_CSV_COLUMNS`]).
pub const COST_COLUMNS: [&str; 11] = [
    "Scenario Name",
    "Message Size (Bytes)",
    "Back-end Service Delay (ms)",
    "Protocol",
    "Rate (Requests/sec)",
    "Added p50 (ms)",
    "Added p90 (ms)",
    "Added p99 (ms)",
    "Added p99.9 (ms)",
    "Intermediary CPU per Request (µs)",
    "Flags",
];

/// The columns of `cost.csv`.
pub const COST_CSV_COLUMNS: [&str; 20] = [
    "Scenario Name",
    "Message Size (Bytes)",
    "Back-end Service Delay (ms)",
    "Protocol",
    "Rate (Requests/sec)",
    "Added p50 (ms)",
    "Added p50 Low (ms)",
    "Added p50 High (ms)",
    "Added p90 (ms)",
    "Added p90 Low (ms)",
    "Added p90 High (ms)",
    "Added p99 (ms)",
    "Added p99 Low (ms)",
    "Added p99 High (ms)",
    "Added p99.9 (ms)",
    "Added p99.9 Low (ms)",
    "Added p99.9 High (ms)",
    "Confidence Level (%)",
    "Intermediary CPU per Request (µs)",
    "Flags",
];

/// The cells of `kind`, in suite order (scenario, protocol, size, delay).
fn cells(records: &[CellRecord], kind: CellKind) -> Vec<&CellRecord> {
    let mut v: Vec<&CellRecord> = records.iter().filter(|r| r.cell.kind == kind).collect();
    v.sort_by(|a, b| {
        let (a, b) = (&a.cell, &b.cell);
        a.scenario_index
            .cmp(&b.scenario_index)
            .then(protocol_rank(&a.protocol).cmp(&protocol_rank(&b.protocol)))
            .then(a.size_bytes.cmp(&b.size_bytes))
            .then(a.delay_ms.total_cmp(&b.delay_ms))
    });
    v
}

/// Whether the answer is only a lower bound: the generator was the limit, or the search's
/// highest rate passed (nothing above it was tried).
pub fn lower_bound(c: &CapacityReport) -> bool {
    c.verdict == CapacityVerdict::GeneratorBound
        || (c.verdict == CapacityVerdict::Found && c.failed_rate.is_none())
}

/// `failed: <reason>` for a failed cell, as the first of its flags.
fn failed_flag(r: &CellRecord) -> Vec<String> {
    (r.status == CellStatus::Failed)
        .then(|| {
            format!(
                "failed: {}",
                r.reason.as_deref().unwrap_or("no reason recorded")
            )
        })
        .into_iter()
        .collect()
}

/// The flags of a capacity cell: why it has no answer, or why its answer is a bound.
fn capacity_flags(r: &CellRecord) -> Vec<String> {
    let mut f = failed_flag(r);
    if let Some(c) = &r.capacity {
        match c.verdict {
            CapacityVerdict::GeneratorBound => {
                f.push("lower bound: the generator was the bottleneck".to_owned())
            }
            CapacityVerdict::Found if c.failed_rate.is_none() => {
                f.push("lower bound: the search's max_rate passed".to_owned())
            }
            CapacityVerdict::NoneMet => f.push("no rate tried met the SLO".to_owned()),
            CapacityVerdict::StepLimit => {
                f.push("step limit: the precision was not reached".to_owned())
            }
            CapacityVerdict::Found => {}
        }
    }
    f
}

/// The capacity table's rows ([`CAPACITY_COLUMNS`]); the max rate is a plain number, its
/// being a lower bound said in the flags.
pub fn capacity_rows(records: &[CellRecord]) -> Vec<Row> {
    let opt = |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or_default();
    cells(records, CellKind::Capacity)
        .into_iter()
        .map(|r| {
            let c = r.capacity.as_ref().filter(|_| r.status == CellStatus::Ok);
            Row {
                id: r.cell.id.clone(),
                values: vec![
                    scenario_name(r, records),
                    r.cell.size_bytes.to_string(),
                    number(r.cell.delay_ms),
                    r.cell.protocol.clone(),
                    c.map(|c| c.slo.clone()).unwrap_or_default(),
                    opt(c.and_then(|c| c.max_rate), 1),
                    opt(c.and_then(|c| c.uncertainty_percent), 1),
                    opt(c.and_then(|c| c.knee_rate), 1),
                    c.map(|c| c.steps.len().to_string()).unwrap_or_default(),
                    capacity_flags(r).join("; "),
                ],
            }
        })
        .collect()
}

/// A signed number of ms with three decimals: `+0.120`, `-0.010`.
fn signed(ms: f64) -> String {
    format!("{ms:+.3}")
}

/// The flags of a cost cell: its failure, the measurement's warnings, a missing CPU figure.
fn cost_flags(r: &CellRecord) -> Vec<String> {
    let mut f = failed_flag(r);
    if let Some(c) = &r.cost {
        f.extend(c.warnings.iter().cloned());
        if c.intermediary_cpu_us_per_request.is_none() && r.status == CellStatus::Ok {
            f.push("no intermediary CPU (the SUT runs on another host)".to_owned());
        }
    }
    f
}

/// The figures of one cost cell that ran.
fn cost_of(r: &CellRecord) -> Option<&CostReport> {
    r.cost.as_ref().filter(|_| r.status == CellStatus::Ok)
}

/// The cost table's rows ([`COST_COLUMNS`]).
pub fn cost_rows(records: &[CellRecord]) -> Vec<Row> {
    cells(records, CellKind::Cost)
        .into_iter()
        .map(|r| {
            let c = cost_of(r);
            let mut values = vec![
                scenario_name(r, records),
                r.cell.size_bytes.to_string(),
                number(r.cell.delay_ms),
                r.cell.protocol.clone(),
                c.map(|c| number(c.rate)).unwrap_or_default(),
            ];
            for p in COST_PERCENTILES {
                values.push(
                    c.and_then(|c| c.added.iter().find(|a| a.p == p))
                        .map(|a| {
                            format!("{} [{:.3}, {:.3}]", signed(a.added_ms), a.low_ms, a.high_ms)
                        })
                        .unwrap_or_default(),
                );
            }
            values.push(
                c.and_then(|c| c.intermediary_cpu_us_per_request)
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_default(),
            );
            values.push(cost_flags(r).join("; "));
            Row {
                id: r.cell.id.clone(),
                values,
            }
        })
        .collect()
}

/// A section of `summary.md`: `## title`, the table of `rows` under `columns`, then `note`;
/// empty without rows.
pub fn section(title: &str, columns: &[&str], rows: &[Row], note: &str) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!("\n## {title}\n\n");
    markdown_table(&mut out, columns, rows);
    out.push('\n');
    out.push_str(note);
    out.push('\n');
    out
}

pub(crate) fn markdown_table(out: &mut String, columns: &[&str], rows: &[Row]) {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        (0..columns.len())
            .map(|i| if i == 0 || i == columns.len() - 1 {
                "---|"
            } else {
                "---:|"
            })
            .collect::<String>()
    );
    for row in rows {
        let vals: Vec<String> = row.values.iter().map(|v| cell(v)).collect();
        let _ = writeln!(out, "| {} |", vals.join(" | "));
    }
}

/// The capacity and cost sections of `summary.md`; empty when the run has neither kind.
pub fn markdown(records: &[CellRecord]) -> String {
    let mut out = String::new();
    let capacity = capacity_rows(records);
    if !capacity.is_empty() {
        out.push_str("\n## Capacity: max rate within SLO\n\n");
        markdown_table(&mut out, &CAPACITY_COLUMNS, &capacity);
        out.push_str(
            "\nEach row is one capacity search (`[capacity]` in the suite): open-model steps at \
             rising rates, then bisection, the answer run again as a check. The max rate is the \
             highest that met the SLO on every step that ran it; the true limit lies below the \
             lowest rate that failed, at most Uncertainty % above it. A `lower bound` flag means \
             nothing above it was measured. Every step is in the cell's record.json.\n",
        );
    }
    let cost = cost_rows(records);
    if !cost.is_empty() {
        out.push_str("\n## Intermediary cost\n\n");
        markdown_table(&mut out, &COST_COLUMNS, &cost);
        out.push_str(
            "\nEach row is one cost measurement (`cost = true`): the same open-model load \
             straight to the back-end and through the system under test, alternating. Added \
             latency is the Hodges-Lehmann shift of each percentile between the runs through it \
             and the direct ones, in ms, with its distribution-free confidence interval (the \
             level is in cost.csv); an interval around zero means no measurable cost. \
             Intermediary CPU is the SUT's CPU time per response through it, median of the \
             runs.\n",
        );
    }
    out
}

fn csv_of(columns: &[&str], rows: impl Iterator<Item = (Vec<String>, String)>) -> String {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(columns.iter().chain(&["Cell"]))
        .expect("writing to memory cannot fail");
    for (values, id) in rows {
        w.write_record(values.iter().chain(std::iter::once(&id)))
            .expect("writing to memory cannot fail");
    }
    let bytes = w.into_inner().expect("flushing to memory cannot fail");
    String::from_utf8(bytes).expect("CSV of strings is UTF-8")
}

/// `capacity.csv`: [`CAPACITY_COLUMNS`] then `Cell`, the values the Markdown table shows.
pub fn capacity_csv(records: &[CellRecord]) -> String {
    csv_of(
        &CAPACITY_COLUMNS,
        capacity_rows(records).into_iter().map(|r| (r.values, r.id)),
    )
}

/// `cost.csv`: [`COST_CSV_COLUMNS`] then `Cell`: every added latency as three numbers
/// (estimate, low, high), in ms with three decimals.
pub fn cost_csv(records: &[CellRecord]) -> String {
    let rows = cells(records, CellKind::Cost).into_iter().map(|r| {
        let c = cost_of(r);
        let mut v = vec![
            scenario_name(r, records),
            r.cell.size_bytes.to_string(),
            number(r.cell.delay_ms),
            r.cell.protocol.clone(),
            c.map(|c| number(c.rate)).unwrap_or_default(),
        ];
        for p in COST_PERCENTILES {
            let a = c.and_then(|c| c.added.iter().find(|a| a.p == p));
            let three = a.map(|a| [a.added_ms, a.low_ms, a.high_ms]);
            for k in 0..3 {
                v.push(three.map(|t| format!("{:.3}", t[k])).unwrap_or_default());
            }
        }
        v.push(
            c.and_then(|c| c.added.first())
                .map(|a| format!("{:.1}", a.level * 100.0))
                .unwrap_or_default(),
        );
        v.push(
            c.and_then(|c| c.intermediary_cpu_us_per_request)
                .map(|x| format!("{x:.1}"))
                .unwrap_or_default(),
        );
        v.push(cost_flags(r).join("; "));
        (v, r.cell.id.clone())
    });
    csv_of(&COST_CSV_COLUMNS, rows)
}

/// `summary.json`'s `capacity` array: one object per capacity cell with machine-readable
/// numbers (`null` where there is none).
pub fn capacity_json(records: &[CellRecord]) -> Vec<Value> {
    cells(records, CellKind::Capacity)
        .into_iter()
        .map(|r| {
            let c = r.capacity.as_ref().filter(|_| r.status == CellStatus::Ok);
            json!({
                "cell": r.cell.id,
                "scenario": r.cell.scenario,
                "scenario_name": scenario_name(r, records),
                "size_bytes": r.cell.size_bytes,
                "delay_ms": r.cell.delay_ms,
                "protocol": r.cell.protocol,
                "status": r.status,
                "reason": r.reason,
                "slo": c.map(|c| c.slo.clone()),
                "max_rate": c.and_then(|c| c.max_rate),
                "lower_bound": c.map(lower_bound),
                "failed_rate": c.and_then(|c| c.failed_rate),
                "uncertainty_percent": c.and_then(|c| c.uncertainty_percent),
                "knee_rate": c.and_then(|c| c.knee_rate),
                "verdict": c.map(|c| c.verdict),
                "steps": c.map(|c| c.steps.len()),
                "flags": capacity_flags(r),
            })
        })
        .collect()
}

/// `summary.json`'s `cost` array: one object per cost cell.
pub fn cost_json(records: &[CellRecord]) -> Vec<Value> {
    cells(records, CellKind::Cost)
        .into_iter()
        .map(|r| {
            let c = cost_of(r);
            json!({
                "cell": r.cell.id,
                "scenario": r.cell.scenario,
                "scenario_name": scenario_name(r, records),
                "size_bytes": r.cell.size_bytes,
                "delay_ms": r.cell.delay_ms,
                "protocol": r.cell.protocol,
                "status": r.status,
                "reason": r.reason,
                "rate": c.map(|c| c.rate),
                "added": c.map(|c| c.added.clone()),
                "intermediary_cpu_us_per_request": c.and_then(|c| c.intermediary_cpu_us_per_request),
                "intermediary_cpu_percent": c.and_then(|c| c.intermediary_cpu_percent),
                "flags": cost_flags(r),
            })
        })
        .collect()
}

fn html_table(h: &mut String, columns: &[&str], rows: &[Row], records: &[CellRecord]) {
    let _ = write!(h, "<table class=\"summary\">\n<tr>");
    for c in columns {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    let _ = writeln!(h, "</tr>");
    for row in rows {
        let failed = records
            .iter()
            .any(|r| r.cell.id == row.id && r.status == CellStatus::Failed);
        let flagged = row.values.last().is_some_and(|f| !f.is_empty());
        let class = match (failed, flagged) {
            (true, _) => " class=\"failed\"",
            (false, true) => " class=\"flagged\"",
            _ => "",
        };
        let _ = write!(h, "<tr{class} id=\"cell-{}\">", esc(&row.id));
        for (i, v) in row.values.iter().enumerate() {
            let numeric = i > 0 && i + 1 < row.values.len() && i != 3 && !v.contains('<');
            let _ = write!(
                h,
                "<td{}>{}</td>",
                if numeric { " class=\"n\"" } else { "" },
                esc(v)
            );
        }
        let _ = writeln!(h, "</tr>");
    }
    let _ = writeln!(h, "</table>");
}

/// The capacity and cost sections of `report.html`: the tables, and for every capacity cell
/// its latency-against-rate curve with the answer and the knee marked (also written as
/// `plots/capacity-<cell>.svg`, pushed to `svgs`). Nothing when the run has neither kind.
pub fn html(h: &mut String, svgs: &mut Vec<(String, String)>, records: &[CellRecord]) {
    let capacity = capacity_rows(records);
    if !capacity.is_empty() {
        let _ = writeln!(h, "<h2 id=\"capacity\">Capacity: max rate within SLO</h2>");
        html_table(h, &CAPACITY_COLUMNS, &capacity, records);
        let _ = writeln!(
            h,
            "<p class=\"note\">Each row is one capacity search: open-model steps at rising \
             rates, bisection, the answer run again as a check. The true limit lies between the \
             max rate and the lowest rate that failed (Uncertainty % above it); a <b>lower \
             bound</b> flag means nothing above it was measured.</p>\n<div class=\"figs\">"
        );
        for r in cells(records, CellKind::Capacity) {
            let Some(c) = r.capacity.as_ref() else {
                continue;
            };
            // A curve needs two rates; a search that stopped at its first step has none.
            let mut rates: Vec<f64> = c.steps.iter().map(|s| s.rate).collect();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            if rates.len() < 2 {
                continue;
            }
            let file = format!("capacity-{}.svg", r.cell.id);
            let svg = crate::capacity::chart(c);
            let _ = writeln!(
                h,
                "<figure>{svg}<figcaption class=\"note\">{} — {}. <code>{}</code></figcaption>\
                 </figure>",
                esc(&scenario_name(r, records)),
                esc(&crate::capacity::verdict(c)),
                esc(&format!("{}/{file}", gatebench_results::paths::PLOTS_DIR))
            );
            svgs.push((file, svg));
        }
        let _ = writeln!(h, "</div>");
    }
    let cost = cost_rows(records);
    if !cost.is_empty() {
        let _ = writeln!(h, "<h2 id=\"cost\">Intermediary cost</h2>");
        html_table(h, &COST_COLUMNS, &cost, records);
        let _ = writeln!(
            h,
            "<p class=\"note\">The same open-model load straight to the back-end and through the \
             system under test, alternating. Added latency: the Hodges-Lehmann shift of each \
             percentile between the two sets of runs, ms, with its distribution-free confidence \
             interval; an interval around zero means no measurable cost. Intermediary CPU: the \
             SUT's CPU time per response through it.</p>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::{AddedLatency, CapacityStep, CellParams, SCHEMA_VERSION};

    fn params(scenario: &str, index: u32, kind: CellKind) -> CellParams {
        let mut p = gatebench_testkit::records::cell_params(scenario, scenario, index, 20, 50, 1);
        p.kind = kind;
        p.id = format!("{scenario}_{kind:?}_s50_d0").to_lowercase();
        p
    }

    fn record(cell: CellParams) -> CellRecord {
        CellRecord {
            schema_version: SCHEMA_VERSION,
            cell,
            status: CellStatus::Ok,
            reason: None,
            started_at_unix_ms: 0,
            finished_at_unix_ms: 0,
            processes: vec![],
            load: None,
            sut_warmup: None,
            sut_measurement: None,
            gc_warmup: None,
            gc_measurement: None,
            capacity: None,
            cost: None,
            origin: None,
            events: Vec::new(),
            grpc: None,
            websocket: None,
        }
    }

    fn step(n: u32, phase: &str, rate: f64, passed: bool) -> CapacityStep {
        CapacityStep {
            step: n,
            phase: phase.into(),
            rate,
            duration_s: 1.0,
            sent_rps: rate,
            throughput_rps: rate,
            p50_ms: 0.2,
            p99_ms: if passed { 2.0 } else { 20.0 },
            p999_ms: 30.0,
            error_percent: 0.0,
            passed,
            reason: String::new(),
            generator_warnings: vec![],
        }
    }

    fn capacity(
        verdict: CapacityVerdict,
        max: Option<f64>,
        failed: Option<f64>,
        steps: Vec<CapacityStep>,
    ) -> CapacityReport {
        CapacityReport {
            schema_version: SCHEMA_VERSION,
            url: "http://127.0.0.1:1/".into(),
            slo: "p99<10ms".into(),
            connections: 20,
            steps,
            verdict,
            max_rate: max,
            failed_rate: failed,
            uncertainty_percent: max.zip(failed).map(|(m, f)| (f - m) / m * 100.0),
            knee_rate: Some(2000.0),
        }
    }

    /// Three searches, given out of order: the rows follow the suite (scenario index), the max
    /// rate and its uncertainty are the record's to the decimal, and a bound says so.
    fn fixture() -> Vec<CellRecord> {
        let mut found = record(params("proxy", 1, CellKind::Capacity));
        found.capacity = Some(capacity(
            CapacityVerdict::Found,
            Some(4000.0),
            Some(4200.0),
            vec![
                step(1, "bracket", 2000.0, true),
                step(2, "bracket", 3000.0, true),
                step(3, "bracket", 4500.0, false),
                step(4, "bisect", 4000.0, true),
                step(5, "bisect", 4200.0, false),
                step(6, "check", 4000.0, true),
            ],
        ));
        let mut bound = record(params("echo", 0, CellKind::Capacity));
        bound.capacity = Some(capacity(
            CapacityVerdict::GeneratorBound,
            Some(1500.0),
            None,
            vec![
                step(1, "bracket", 1000.0, true),
                step(2, "bracket", 1500.0, true),
            ],
        ));
        let mut cost = record(params("proxy", 1, CellKind::Cost));
        cost.cost = Some(CostReport {
            schema_version: SCHEMA_VERSION,
            direct_url: "http://127.0.0.1:1/".into(),
            via_url: "http://127.0.0.1:2/".into(),
            rate: 1000.0,
            connections: 20,
            duration_s: 2.0,
            repeats: 3,
            runs: vec![],
            added: COST_PERCENTILES
                .iter()
                .zip([0.1, 0.2, 0.5, 1.25])
                .map(|(p, a)| AddedLatency {
                    p: *p,
                    direct_ms: 1.0,
                    via_ms: 1.0 + a,
                    added_ms: a,
                    low_ms: a / 2.0,
                    high_ms: a * 2.0,
                    level: 0.9,
                })
                .collect(),
            intermediary_cpu_us_per_request: Some(42.25),
            intermediary_cpu_percent: Some(4.2),
            warnings: vec![],
        });
        // A load cell (its figures do not matter here).
        let load = record(gatebench_testkit::records::cell_params(
            "echo", "echo", 0, 20, 50, 1,
        ));
        vec![found, load, cost, bound]
    }

    #[test]
    fn the_capacity_table_has_the_max_rate_its_uncertainty_and_its_bounds() {
        let records = fixture();
        let rows = capacity_rows(&records);
        let values: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.values.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            values,
            vec![
                vec![
                    "echo",
                    "50",
                    "0",
                    "h1c",
                    "p99<10ms",
                    "1500.0",
                    "",
                    "2000.0",
                    "2",
                    "lower bound: the generator was the bottleneck"
                ],
                vec!["proxy", "50", "0", "h1c", "p99<10ms", "4000.0", "5.0", "2000.0", "6", ""],
            ]
        );
        // The load cell stays in the load table, the searches in theirs.
        let load_rows = crate::summary::rows(&records, crate::summary::Phase::Measurement);
        assert_eq!(load_rows.len(), 1);
        assert_eq!(load_rows[0].id, "echo_u20_s50_d0_r1");
        let csv = capacity_csv(&records);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some(
                "Scenario Name,Message Size (Bytes),Back-end Service Delay (ms),Protocol,SLO,\
                 Max Rate within SLO (Requests/sec),Uncertainty (%),Knee (Requests/sec),Steps,\
                 Flags,Cell"
            )
        );
        assert_eq!(
            lines.nth(1),
            Some("proxy,50,0,h1c,p99<10ms,4000.0,5.0,2000.0,6,,proxy_capacity_s50_d0")
        );
    }

    #[test]
    fn the_cost_table_has_every_percentiles_added_latency_with_its_interval_and_the_cpu() {
        let records = fixture();
        let rows = cost_rows(&records);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0].values,
            vec![
                "proxy",
                "50",
                "0",
                "h1c",
                "1000",
                "+0.100 [0.050, 0.200]",
                "+0.200 [0.100, 0.400]",
                "+0.500 [0.250, 1.000]",
                "+1.250 [0.625, 2.500]",
                "42.2",
                ""
            ]
        );
        let csv = cost_csv(&records);
        assert_eq!(
            csv.lines().nth(1),
            Some(
                "proxy,50,0,h1c,1000,0.100,0.050,0.200,0.200,0.100,0.400,0.500,0.250,1.000,\
                 1.250,0.625,2.500,90.0,42.2,,proxy_cost_s50_d0"
            )
        );
        let md = markdown(&records);
        assert!(md.contains("## Capacity: max rate within SLO"), "{md}");
        assert!(
            md.contains("| proxy | 50 | 0 | h1c | p99<10ms | 4000.0 | 5.0 | 2000.0 | 6 |  |"),
            "{md}"
        );
        assert!(md.contains("## Intermediary cost"), "{md}");
        // summary.md carries both sections, summary.json both arrays.
        let summary = crate::summary::markdown("s", &records, 0);
        assert!(summary.contains(&md), "{summary}");
        let json: Value = serde_json::from_str(&crate::summary::json("s", &records, 0)).unwrap();
        assert_eq!(json["capacity"][0]["max_rate"], 1500.0);
        assert_eq!(json["capacity"][0]["lower_bound"], true);
        assert_eq!(json["capacity"][1]["uncertainty_percent"], 5.0);
        assert_eq!(json["cost"][0]["added"][3]["added_ms"], 1.25);
        assert_eq!(json["cost"][0]["intermediary_cpu_us_per_request"], 42.25);
        assert_eq!(json["measurement"].as_array().unwrap().len(), 1);
    }

    /// The page shows both tables and one curve per search that tried two rates or more.
    #[test]
    fn the_html_sections_have_the_tables_and_the_curves() {
        let records = fixture();
        let mut h = String::new();
        let mut svgs = Vec::new();
        html(&mut h, &mut svgs, &records);
        assert!(h.contains("<h2 id=\"capacity\">"), "{h}");
        assert!(h.contains("<h2 id=\"cost\">"), "{h}");
        assert!(h.contains("id=\"cell-proxy_capacity_s50_d0\""), "{h}");
        assert!(h.contains("+1.250 [0.625, 2.500]"), "{h}");
        let files: Vec<&str> = svgs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            files,
            vec![
                "capacity-echo_capacity_s50_d0.svg",
                "capacity-proxy_capacity_s50_d0.svg"
            ]
        );
        assert!(
            svgs[1].1.contains("max within SLO 4,000.0"),
            "{}",
            svgs[1].1
        );
    }
}
