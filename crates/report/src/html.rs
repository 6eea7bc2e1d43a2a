//! `report.html`: one self-contained page per results directory — inline CSS, inline SVG, no
//! network, no external assets (a Content-Security-Policy forbids fetching anything) — and the
//! same plots as SVG files beside it.
//!
//! The page has, in order: the run and its environment; the flagged cells (failed, errors,
//! generator-bound) so they cannot be missed; the summary table (seed 004's columns, the SUT's
//! CPU and memory, the GC figures where the SUT wrote a GC log) with flagged rows marked;
//! throughput against concurrent users (or target rate) for each message size and back-end
//! delay, one line per scenario, the repeats' median with their range as whiskers; then for
//! every cell its latency spectrum on HdrHistogram's percentile axis (corrected and
//! uncorrected where the open model kept both) and its time series — throughput, p99, errors,
//! SUT CPU and memory — with the warm-up shaded; the warm-up table last.
//!
//! A small inline script checks, once the page has loaded, that every plot drew something and
//! records the verdict in `<html data-plot-check="ok: N plots">` (or `error: …`, also sent to
//! the console), which `scripts/check-report-html.sh` reads in headless Chromium. The page reads
//! the same without the script; nothing is drawn by it.

use std::collections::BTreeMap;
use std::fmt::Write;

use gatebench_model::{CellRecord, CellStatus, Environment, LatencySummary, Outcome, RunManifest};
use gatebench_results::paths;

use crate::cellfiles::{IntervalPoint, ResourcePoint, Spectrum};
use crate::fmt::{count, rate};
use crate::summary::{self, Phase, COLUMNS, GC_NO_EVENTS};
use crate::svg::{self, esc, Chart, Scale, Series};

/// Points of a line, `(x, y)`.
type Points = Vec<(f64, f64)>;

/// One cell with what its side files gave.
#[derive(Clone, Debug)]
pub struct CellData<'a> {
    /// Its record.
    pub record: &'a CellRecord,
    /// `samples.csv`.
    pub samples: Vec<ResourcePoint>,
    /// The load's seconds, times since the cell started (`timeline.csv`) or since the load
    /// started (from the interval log, see [`CellData::timeline_from_load_start`]).
    pub timeline: Vec<IntervalPoint>,
    /// Whether `timeline` times count from the load's start (interval log) rather than the
    /// cell's.
    pub timeline_from_load_start: bool,
    /// The measurement's latency spectrum from the interval log (corrected in the open model).
    pub spectrum: Option<Spectrum>,
    /// The uncorrected spectrum (open model).
    pub spectrum_uncorrected: Option<Spectrum>,
}

impl<'a> CellData<'a> {
    /// A cell with no side files (they are read separately).
    pub fn new(record: &'a CellRecord) -> CellData<'a> {
        CellData {
            record,
            samples: Vec::new(),
            timeline: Vec::new(),
            timeline_from_load_start: false,
            spectrum: None,
            spectrum_uncorrected: None,
        }
    }
}

/// Everything the page shows.
#[derive(Clone, Debug)]
pub struct ReportInput<'a> {
    /// The suite's name.
    pub suite: &'a str,
    /// `run.json`.
    pub manifest: Option<&'a RunManifest>,
    /// `environment.json`.
    pub environment: Option<&'a Environment>,
    /// The cells, any order.
    pub cells: Vec<CellData<'a>>,
    /// Planned cells without a record.
    pub missing: usize,
}

/// The page and its plots.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// `report.html`.
    pub html: String,
    /// `(file name, SVG)` of every plot, to be written under `plots/`.
    pub svgs: Vec<(String, String)>,
}

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1180px;
padding:0 16px;color:#1a1a1a;line-height:1.4}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:22px 0 4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f3f3f3;text-align:left}table.summary td:first-child{min-width:14em}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.flagged td{background:#fff4e5}tr.failed td{background:#fde8e8}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;margin-right:4px;
background:#eee}.badge.bad{background:#c62828;color:#fff}.badge.warn{background:#ef8f00;color:#fff}
.flags{border-left:4px solid #c62828;background:#fdf3f3;padding:6px 12px;margin:8px 0}
.note{color:#555;font-size:12px}figure{margin:8px 0;break-inside:avoid}
svg.plot{max-width:100%;height:auto;border:1px solid #eee}
section.cell{break-inside:avoid;margin-bottom:18px}
.figs{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}
a{color:#0b57d0}
@media print{body{max-width:none;margin:0}h2{break-after:avoid}section.cell{break-before:auto}
.figs{display:block}a{color:inherit;text-decoration:none}}
";

const CHECK_SCRIPT: &str = "
(function(){
  var problems=[];
  function finish(){
    var plots=document.querySelectorAll('svg.plot');
    plots.forEach(function(svg,i){
      var drawn=0;
      svg.querySelectorAll('path.series').forEach(function(p){
        var b=p.getBBox();
        if((b.width>0||b.height>0)&&p.getTotalLength()>0){drawn++;}
      });
      if(drawn===0){problems.push('plot '+(i+1)+' ('+svg.getAttribute('aria-label')+') drew nothing');}
    });
    var verdict=problems.length?'error: '+problems.join('; '):'ok: '+plots.length+' plots';
    document.documentElement.setAttribute('data-plot-check',verdict);
    var el=document.getElementById('plot-check');
    if(el){el.textContent='Plot self-check: '+verdict;}
    if(problems.length){console.error('gatebench report: '+verdict);}
  }
  window.addEventListener('error',function(e){problems.push('script error: '+e.message);});
  finish();
})();
";

/// Renders the page and its plots.
pub fn render(input: &ReportInput<'_>) -> Rendered {
    let records: Vec<CellRecord> = input.cells.iter().map(|c| c.record.clone()).collect();
    let mut svgs: Vec<(String, String)> = Vec::new();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} — gatebench report</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(input.suite)
    );
    header(&mut h, input, &records);
    flagged(&mut h, &records);
    thresholds(&mut h, &records);
    let _ = writeln!(h, "<h2 id=\"summary\">Summary (measurement)</h2>");
    table(&mut h, &records, Phase::Measurement);
    let _ = writeln!(
        h,
        "<p class=\"note\">SUT CPU is the mean over the measurement in percent of one core; SUT \
         Memory the mean resident set in MiB; Max Threads and Max Open Files the most at once; \
         Load Average the machine's 1-minute load average. GC columns are filled when a \
         scenario names its SUT's GC log: GC throughput is the share of the measurement the SUT \
         was not paused; the memory footprint is the heap after a full collection.</p>"
    );
    // Capacity and cost cells have their own sections, not a load's plots.
    let loads: Vec<CellData<'_>> = (input.cells.iter())
        .filter(|c| c.record.cell.kind.is_load())
        .cloned()
        .collect();
    load_charts(&mut h, &mut svgs, &loads);
    if let Some(m) = input.manifest {
        crate::compare::section::html(&mut h, &mut svgs, &records, input.environment, &m.compare);
    }
    crate::searches::html(&mut h, &mut svgs, &records);
    let _ = writeln!(h, "<h2 id=\"cells\">Cells</h2>");
    let mut order: Vec<&CellData<'_>> = loads.iter().collect();
    let ids: Vec<String> = summary::rows(&records, Phase::Measurement)
        .into_iter()
        .map(|r| r.id)
        .collect();
    order.sort_by_key(|c| ids.iter().position(|i| *i == c.record.cell.id));
    for c in order {
        cell_section(&mut h, &mut svgs, c);
    }
    let _ = writeln!(
        h,
        "<h2 id=\"warmup\">Warm-up (not part of the results)</h2>"
    );
    table(&mut h, &records, Phase::Warmup);
    let _ = writeln!(
        h,
        "<p class=\"note\" id=\"plot-check\">Plot self-check: not run (scripts disabled).</p>\n\
         <p class=\"note\">Written by gatebench {}. Plots are also in <code>{}/</code> beside \
         this file.</p>\n<script>{CHECK_SCRIPT}</script>\n</body>\n</html>",
        esc(env!("CARGO_PKG_VERSION")),
        paths::PLOTS_DIR
    );
    Rendered { html: h, svgs }
}

fn header(h: &mut String, input: &ReportInput<'_>, records: &[CellRecord]) {
    let failed = records
        .iter()
        .filter(|r| r.status == CellStatus::Failed)
        .count();
    let _ = writeln!(h, "<h1>{}</h1>", esc(input.suite));
    let mut line = format!(
        "{} cells: {} ok, {failed} failed.",
        records.len(),
        records.len() - failed
    );
    if let Some(r) = records.first() {
        let _ = write!(
            line,
            " Each cell: {} s warm-up (shaded in the time series, reported apart), then {} \
             measured.",
            r.cell.warmup_s,
            summary::measured(&r.cell)
        );
    }
    let _ = writeln!(h, "<p>{}</p>", esc(&line));
    if input.missing > 0 {
        let _ = writeln!(
            h,
            "<p class=\"flags\"><strong>Incomplete:</strong> {} planned cells have no record (the \
             run was interrupted or is still going).</p>",
            input.missing
        );
    }
    let _ = writeln!(h, "<h2 id=\"environment\">Environment</h2>\n<table>");
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(m) = input.manifest {
        rows.push(("Suite", m.suite.clone()));
        rows.push(("Started", unix_ms_utc(m.started_at_unix_ms)));
        rows.push(("Planned cells", m.planned_cells.len().to_string()));
        rows.push(("Written by", format!("{} {}", m.tool.name, m.tool.version)));
    }
    match input.environment {
        Some(e) => {
            rows.push(("CPU", e.cpu_model.clone()));
            rows.push((
                "Cores",
                format!(
                    "{} online, {} available to gatebench",
                    e.cores, e.cores_available
                ),
            ));
            rows.push(("Kernel", format!("{} ({})", e.kernel, e.arch)));
            rows.push((
                "gatebench",
                format!("{} (git {})", e.gatebench_version, e.git_revision),
            ));
            for (_, label, value) in e.system.entries() {
                if let Some(v) = value {
                    rows.push((label, v.to_owned()));
                }
            }
        }
        None => rows.push(("Environment", "no environment.json".to_owned())),
    }
    if let Some(l) = records.iter().find_map(|r| r.load.as_ref()) {
        rows.push((
            "Load",
            format!(
                "{} {}, {} generator threads, timeout {} ms, keep-alive {}",
                l.config.method,
                match l.config.model {
                    gatebench_model::Model::Closed => "closed model (users)",
                    gatebench_model::Model::Open => "open model (target rate)",
                },
                l.config.threads,
                l.config.timeout_ms,
                if l.config.keepalive { "on" } else { "off" }
            ),
        ));
    }
    for (k, v) in rows {
        let _ = writeln!(h, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    let _ = writeln!(h, "</table>");
}

fn flagged(h: &mut String, records: &[CellRecord]) {
    let bad: Vec<(&CellRecord, Vec<String>)> = records
        .iter()
        .map(|r| (r, serious_flags(r)))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2 id=\"flagged\">Flagged cells</h2>\n<div class=\"flags\"><p>These cells' figures \
         need care before anyone quotes them:</p><ul>"
    );
    for (r, f) in bad {
        let _ = writeln!(
            h,
            "<li><a href=\"#cell-{id}\">{id}</a>: {}</li>",
            esc(&f.join("; ")),
            id = esc(&r.cell.id)
        );
    }
    let _ = writeln!(
        h,
        "</ul><p class=\"note\"><b>errors</b>: some requests failed (see the classes in the \
         cell). <b>generator-bound</b>: the load generator, not the system under test, was the \
         bottleneck, so the figures describe the generator. <b>failed</b>: no figures.</p></div>"
    );
}

/// Every threshold of every load cell that has any, failed ones first: the cell, the
/// threshold, its verdict, what the whole measurement showed and where a window breached it.
fn thresholds(h: &mut String, records: &[CellRecord]) {
    let mut judged: Vec<(&CellRecord, &gatebench_model::ThresholdResult)> = records
        .iter()
        .flat_map(|r| r.thresholds().iter().map(move |t| (r, t)))
        .collect();
    if judged.is_empty() {
        return;
    }
    let failed = judged.iter().filter(|(_, t)| !t.passed).count();
    judged.sort_by_key(|(_, t)| t.passed);
    let _ = writeln!(
        h,
        "<h2 id=\"thresholds\">Thresholds</h2>\n<p>{failed} of {} verdicts failed.</p>\n\
         <table class=\"summary\">\n<tr><th>Cell</th><th>Threshold</th><th>Verdict</th>\
         <th>Whole measurement</th><th>First breach</th></tr>",
        judged.len()
    );
    for (r, t) in judged {
        let verdict = match (t.passed, t.aborted) {
            (true, _) => "<span class=\"badge\">pass</span>",
            (false, true) => "<span class=\"badge bad\">FAIL, aborted the load</span>",
            (false, false) => "<span class=\"badge bad\">FAIL</span>",
        };
        let breach = match (&t.breach, t.breached_at_s) {
            (Some(b), Some(at)) => format!("{} at {at:.0} s", esc(b)),
            _ => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr><td><a href=\"#cell-{id}\">{id}</a></td><td><code>{}</code></td><td>{verdict}</td>\
             <td>{}</td><td>{breach}</td></tr>",
            esc(&t.threshold),
            esc(&t.observed),
            id = esc(&r.cell.id)
        );
    }
    let _ = writeln!(h, "</table>");
}

/// The flags that make a cell doubtful (not the informative ones such as `repeat 2`).
fn serious_flags(r: &CellRecord) -> Vec<String> {
    summary::flags(r)
        .into_iter()
        .filter(|f| f.starts_with("failed") || f == "errors" || f == "generator-bound")
        .collect()
}

fn table(h: &mut String, records: &[CellRecord], phase: Phase) {
    let _ = write!(h, "<table class=\"summary\">\n<tr>");
    let last = COLUMNS.len() - 1;
    for c in &COLUMNS[..last] {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    let _ = writeln!(h, "<th>{}</th></tr>", esc(COLUMNS[last]));
    for row in summary::rows(records, phase) {
        let Some(r) = records.iter().find(|r| r.cell.id == row.id) else {
            continue;
        };
        let class = if r.status == CellStatus::Failed {
            " class=\"failed\""
        } else if !serious_flags(r).is_empty() {
            " class=\"flagged\""
        } else {
            ""
        };
        let _ = write!(h, "<tr{class}>");
        for (i, v) in row.values[..last].iter().enumerate() {
            if i == 0 {
                let _ = write!(
                    h,
                    "<td><a href=\"#cell-{}\">{}</a></td>",
                    esc(&r.cell.id),
                    esc(v)
                );
            } else {
                let _ = write!(h, "<td class=\"n\">{}</td>", esc(v));
            }
        }
        let _ = writeln!(h, "<td>{}</td></tr>", badges(&row.values[last]));
    }
    let _ = writeln!(h, "</table>");
}

fn badges(flags: &str) -> String {
    flags
        .split("; ")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let class = if f.starts_with("failed") || f == "generator-bound" {
                "badge bad"
            } else if f == "errors" {
                "badge warn"
            } else {
                "badge"
            };
            format!("<span class=\"{class}\">{}</span>", esc(f))
        })
        .collect()
}

/// Scenario name as in the summary (with the protocol when a scenario ran over several).
fn series_name(r: &CellRecord, all: &[&CellData<'_>]) -> String {
    let several = all.iter().any(|o| {
        o.record.cell.scenario == r.cell.scenario && o.record.cell.protocol != r.cell.protocol
    });
    if several {
        format!("{} [{}]", r.cell.scenario, r.cell.protocol)
    } else {
        r.cell.scenario.clone()
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// One line of a chart against load, per scenario: a suffix for its name, dashed or not, and
/// the figure of one cell.
type MetricSeries = (&'static str, bool, fn(&CellRecord) -> Option<f64>);

/// What a chart against load draws for each scenario: y label, file prefix, and the series.
struct LoadMetric {
    y_label: &'static str,
    file: &'static str,
    series: &'static [MetricSeries],
}

/// The charts against load, in the order the page shows them: throughput, latency (mean solid,
/// p99 dashed: seed 001 draws the mean), the SUT's resident memory (seed 001's memory test).
const LOAD_METRICS: [LoadMetric; 3] = [
    LoadMetric {
        y_label: "throughput (requests/s)",
        file: "throughput",
        series: &[("", false, |r| {
            r.load.as_ref().map(|l| l.measurement.throughput_rps)
        })],
    },
    LoadMetric {
        y_label: "latency (ms): mean solid, p99 dashed",
        file: "latency",
        series: &[
            (" mean", false, |r| {
                r.load.as_ref().map(|l| l.measurement.latency.mean_ms)
            }),
            (" p99", true, |r| {
                r.load.as_ref().and_then(|l| l.measurement.latency.at(99.0))
            }),
        ],
    },
    LoadMetric {
        y_label: "SUT resident memory (MiB), mean",
        file: "memory",
        series: &[("", false, |r| {
            r.sut_measurement.as_ref().map(|s| s.rss_mean_mib)
        })],
    },
];

fn load_charts(h: &mut String, svgs: &mut Vec<(String, String)>, cells: &[CellData<'_>]) {
    let ok: Vec<&CellData<'_>> = cells
        .iter()
        .filter(|c| c.record.status == CellStatus::Ok && c.record.load.is_some())
        .collect();
    if ok.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2 id=\"throughput\">Throughput, latency and memory against load</h2>\n<p \
         class=\"note\">One row of charts per message size and back-end delay, one line per \
         scenario: throughput, latency (mean solid, p99 dashed) and the SUT's mean resident \
         memory against concurrent users (or target rate); the median of the repeats, whiskers \
         from the lowest to the highest repeat.</p>\n<div class=\"figs\">"
    );
    // Charts keyed by (open model?, size, delay ×1000 for a stable key).
    let mut charts: BTreeMap<(bool, u64, u64), Vec<&CellData<'_>>> = BTreeMap::new();
    for c in &ok {
        let p = &c.record.cell;
        charts
            .entry((p.rate.is_some(), p.size_bytes, (p.delay_ms * 1000.0) as u64))
            .or_default()
            .push(c);
    }
    for ((open, size, delay_us), group) in charts {
        let delay_ms = delay_us as f64 / 1000.0;
        let x_of = |c: &CellData<'_>| c.record.cell.rate.unwrap_or(c.record.cell.users as f64);
        let mut xs: Vec<f64> = group.iter().map(|c| x_of(c)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let pos = |x: f64| xs.iter().position(|v| *v == x).unwrap_or(0) as f64;
        let mut names: Vec<(u32, String)> = group
            .iter()
            .map(|c| (c.record.cell.scenario_index, series_name(c.record, &ok)))
            .collect();
        names.sort();
        names.dedup();
        for metric in &LOAD_METRICS {
            let mut chart = Chart::new(
                &format!(
                    "{size}-byte messages, {} ms back-end delay",
                    number(delay_ms)
                ),
                if open {
                    "target rate (requests/s)"
                } else {
                    "concurrent users"
                },
                metric.y_label,
            );
            chart.x_ticks = Some(xs.iter().map(|x| (pos(*x), number(*x))).collect());
            for (k, (_, name)) in names.iter().enumerate() {
                // A scenario's series share its colour (mean and p99 of one line).
                let color = svg::PALETTE[k % svg::PALETTE.len()];
                for (suffix, dashed, value) in metric.series {
                    let mut points = Vec::new();
                    let mut whiskers = Vec::new();
                    for x in &xs {
                        let v: Vec<f64> = group
                            .iter()
                            .filter(|c| series_name(c.record, &ok) == *name && x_of(c) == *x)
                            .filter_map(|c| value(c.record))
                            .collect();
                        if let Some(m) = crate::stats::median(&v) {
                            points.push((pos(*x), m));
                            if v.len() > 1 {
                                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                                whiskers.push((pos(*x), lo, hi));
                            }
                        }
                    }
                    if points.is_empty() {
                        continue;
                    }
                    chart.series.push(Series {
                        name: format!("{name}{suffix}"),
                        points,
                        markers: true,
                        whiskers,
                        dashed: *dashed,
                        color: Some(color),
                    });
                }
            }
            // No figure at all (no SUT samples): no empty chart.
            if chart.series.is_empty() {
                continue;
            }
            let file = format!(
                "{}-{}s{size}-d{}.svg",
                metric.file,
                if open { "rate-" } else { "" },
                number(delay_ms)
            );
            let s = svg::render(&[chart], 300.0);
            figure(h, &s, &file);
            svgs.push((file, s));
        }
    }
    let _ = writeln!(h, "</div>");
}

fn figure(h: &mut String, svg_text: &str, file: &str) {
    let _ = writeln!(
        h,
        "<figure>{svg_text}<figcaption class=\"note\">{}</figcaption></figure>",
        esc(&paths::plot(file))
    );
}

/// A gRPC cell's figures and its latency spectra (calls, first messages, round trips).
fn grpc_section(
    h: &mut String,
    svgs: &mut Vec<(String, String)>,
    id: &str,
    rec: &gatebench_model::grpc::GrpcRecord,
) {
    let g = &rec.grpc;
    let classes: Vec<String> = g
        .calls
        .iter()
        .map(|(k, n)| format!("{k} {}", count(*n)))
        .collect();
    let _ = writeln!(
        h,
        "<p class=\"note\">gRPC {} calls: {} started ({}), {} ok/s; {} messages sent, {} \
         received ({}/s).</p>",
        esc(&rec.config.call_kind),
        count(g.calls_started),
        esc(&classes.join(", ")),
        rate(g.calls_per_s),
        count(g.messages_sent),
        count(g.messages_received),
        rate(g.messages_per_s),
    );
    spectra(
        h,
        svgs,
        format!("{id}-grpc.svg"),
        "gRPC latency by percentile (measurement)",
        &[
            ("call (ok), from its intended start", &g.call_latency),
            ("first reply message", &g.first_message_latency),
            ("message round trip (bidirectional)", &g.message_latency),
        ],
    );
}

/// A WebSocket cell's figures and its latency spectra (handshakes, message round trips).
fn websocket_section(
    h: &mut String,
    svgs: &mut Vec<(String, String)>,
    id: &str,
    w: &gatebench_model::websocket::WebSocketReport,
) {
    let codes: Vec<String> = w
        .close_codes
        .iter()
        .map(|(k, n)| format!("{k} × {}", count(*n)))
        .collect();
    let _ = writeln!(
        h,
        "<p class=\"note\">WebSocket: {} connections opened of {} attempts ({}/s; {} refused, \
         {} failed); {} messages sent, {} received ({}/s), {} timeout, {} reset, {} \
         protocol_error, {} closed; close codes from the server: {}.</p>",
        count(w.connections_opened),
        count(w.connections_attempted),
        rate(w.connections_per_s),
        count(w.handshakes_refused),
        count(w.connections_failed),
        count(w.messages_sent),
        count(w.messages_received),
        rate(w.messages_per_s),
        count(w.messages_timeout),
        count(w.messages_reset),
        count(w.messages_protocol_error),
        count(w.messages_closed),
        esc(&if codes.is_empty() {
            "none".to_owned()
        } else {
            codes.join(", ")
        }),
    );
    spectra(
        h,
        svgs,
        format!("{id}-websocket.svg"),
        "WebSocket latency by percentile (measurement)",
        &[
            (
                "message round trip, from its intended send",
                &w.message_latency,
            ),
            ("opening handshake", &w.handshake_latency),
        ],
    );
}

/// One chart of latency spectra (percentile against ms) from records' summaries, as `file`;
/// nothing when no series has a value.
fn spectra(
    h: &mut String,
    svgs: &mut Vec<(String, String)>,
    file: String,
    title: &str,
    series: &[(&str, &LatencySummary)],
) {
    let mut ch = Chart::new(title, "percentile", "ms");
    ch.x_scale = Scale::Percentile;
    for (name, l) in series {
        if l.count > 0 {
            ch.series.push(Series {
                name: (*name).into(),
                points: summary_points(l),
                markers: true,
                ..Series::default()
            });
        }
    }
    if !ch.series.is_empty() {
        let s = svg::render(&[ch], 300.0);
        let _ = writeln!(h, "<div class=\"figs\">");
        figure(h, &s, &file);
        let _ = writeln!(h, "</div>");
        svgs.push((file, s));
    }
}

/// `tokens` → `token`: what one event of a stream is called.
fn singular(unit: &str) -> &str {
    unit.strip_suffix('s').unwrap_or(unit)
}

/// Spectrum points from a record's summary when there is no interval log.
fn summary_points(l: &LatencySummary) -> Vec<(f64, f64)> {
    let mut p: Vec<(f64, f64)> = vec![(0.0, l.min_ms)];
    p.extend(l.percentiles.iter().map(|x| (x.p, x.ms)));
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p
}

fn cell_section(h: &mut String, svgs: &mut Vec<(String, String)>, c: &CellData<'_>) {
    let r = c.record;
    let p = &r.cell;
    let id = esc(&p.id);
    let _ = writeln!(
        h,
        "<section class=\"cell\" id=\"cell-{id}\">\n<h3>{id} — {}</h3>",
        esc(&p.title)
    );
    let mut facts = vec![
        match p.rate {
            Some(rt) => format!(
                "open model at {} {} over {} connections",
                number(rt),
                summary::rate_unit(r),
                p.users
            ),
            None => format!("{} users", p.users),
        },
        format!("{} B", p.size_bytes),
        format!("{} ms delay", number(p.delay_ms)),
        p.protocol.clone(),
        format!("repeat {}", p.repeat),
        format!("run order {}", p.order),
    ];
    if let Some(l) = &r.load {
        let m = &l.measurement;
        facts.push(format!(
            "{} req/s, mean {:.3} ms, p99 {} ms, {:.2}% errors",
            rate(m.throughput_rps),
            m.latency.mean_ms,
            m.latency
                .at(99.0)
                .map(|v| format!("{v:.3}"))
                .unwrap_or_default(),
            m.error_percent
        ));
    }
    let _ = writeln!(
        h,
        "<p>{} {}</p>",
        badges(&summary::flags(r).join("; ")),
        esc(&facts.join(" · "))
    );
    if r.status == CellStatus::Failed {
        let _ = writeln!(
            h,
            "<p class=\"flags\">Failed: {}</p>\n</section>",
            esc(r.reason.as_deref().unwrap_or("no reason recorded"))
        );
        return;
    }
    if let Some(g) = &r.grpc {
        grpc_section(h, svgs, &p.id, g);
    }
    if let Some(w) = &r.websocket {
        websocket_section(h, svgs, &p.id, &w.websocket);
    }
    let Some(load) = &r.load else {
        let _ = writeln!(h, "</section>");
        return;
    };
    let m = &load.measurement;
    if m.outcomes.errors() > 0 {
        let classes: Vec<String> = Outcome::ALL
            .iter()
            .filter(|o| **o != Outcome::Ok && **o != Outcome::InFlight)
            .filter(|o| m.outcomes.get(**o) > 0)
            .map(|o| format!("{}: {}", o.label(), count(m.outcomes.get(*o))))
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"flags\">Errors in the measurement: {}</p>",
            esc(&classes.join(", "))
        );
    }
    if !load.valid {
        let _ = writeln!(
            h,
            "<p class=\"flags\">Generator-bound: {}</p>",
            esc(&load.self_check.warnings.join("; "))
        );
    }
    if let Some(g) = &r.gc_measurement {
        let _ = writeln!(
            h,
            "<p class=\"note\">GC ({}): {} collections ({} full), {} pauses totalling {:.1} ms, \
             p50 {:.3} / p99 {:.3} / max {:.3} ms; throughput {}; heap after GC {} MiB, \
             after full GC {} MiB.</p>",
            esc(&g.format),
            g.collections,
            g.full_collections,
            g.pauses,
            g.pause_total_ms,
            g.pause_p50_ms,
            g.pause_p99_ms,
            g.pause_max_ms,
            g.throughput_percent
                .map_or_else(|| GC_NO_EVENTS.to_owned(), |t| format!("{t:.2}%")),
            g.heap_after_gc_mean_mib
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "–".into()),
            g.heap_after_full_gc_mib
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "–".into()),
        );
    }
    let _ = writeln!(h, "<div class=\"figs\">");
    // The spectrum.
    let open = load.config.model == gatebench_model::Model::Open;
    let mut spec = Chart::new(
        "Latency by percentile (measurement)",
        "percentile",
        "latency (ms)",
    );
    spec.x_scale = Scale::Percentile;
    let (corrected, uncorrected): (Points, Option<Points>) = match &c.spectrum {
        Some(s) => (
            s.points.clone(),
            c.spectrum_uncorrected.as_ref().map(|u| u.points.clone()),
        ),
        None => (
            summary_points(&m.latency),
            m.latency_uncorrected.as_ref().map(summary_points),
        ),
    };
    spec.series.push(Series {
        name: if open {
            "corrected (from the intended send time, wrk2)".into()
        } else {
            "closed model: from the send (no correction applies)".into()
        },
        points: corrected,
        markers: c.spectrum.is_none(),
        ..Series::default()
    });
    if let Some(u) = uncorrected {
        spec.series.push(Series {
            name: "uncorrected (from the actual send)".into(),
            points: u,
            dashed: true,
            markers: c.spectrum.is_none(),
            ..Series::default()
        });
    }
    let file = format!("{}-latency.svg", p.id);
    let s = svg::render(&[spec], 300.0);
    figure(h, &s, &file);
    svgs.push((file, s));
    if let Some(st) = &load.stream {
        // The stream figures' distributions: time to the first event and the gaps between
        // events, by percentile.
        let mut ch = Chart::new(
            &format!(
                "Streams ({}): time to first {} and between {}",
                st.mode,
                singular(&st.unit),
                st.unit
            ),
            "percentile",
            "ms",
        );
        ch.x_scale = Scale::Percentile;
        for (name, l) in [
            (
                format!("time to first {}", singular(&st.unit)),
                &st.time_to_first_event,
            ),
            (format!("between {}", st.unit), &st.inter_event),
        ] {
            if l.count > 0 {
                ch.series.push(Series {
                    name,
                    points: summary_points(l),
                    markers: true,
                    ..Series::default()
                });
            }
        }
        if !ch.series.is_empty() {
            let file = format!("{}-stream.svg", p.id);
            let s = svg::render(&[ch], 300.0);
            figure(h, &s, &file);
            svgs.push((file, s));
        }
    }

    // The time series, on the load's clock.
    let warm = load.warmup.as_ref().map_or(p.warmup_s, |w| w.duration_s);
    let load_start = if c.timeline_from_load_start {
        c.samples
            .iter()
            .find(|s| s.window != "before")
            .map_or(0.0, |s| s.t_s - 1.0)
    } else {
        c.timeline.first().map_or(0.0, |t| t.t_s - 1.0)
    };
    let tl_offset = if c.timeline_from_load_start {
        0.0
    } else {
        load_start
    };
    let shade = if warm > 0.0 {
        vec![(0.0, warm, "warm-up".to_owned())]
    } else {
        Vec::new()
    };
    let load_len = warm + m.duration_s;
    // The cell's events, on the load's clock (they are stamped on the measurement's).
    let marks: Vec<(f64, String)> = c
        .record
        .events
        .iter()
        .map(|e| {
            (
                warm + e.at_s,
                format!("{}: {} at {:.3} s", e.name, e.action, e.at_s),
            )
        })
        .collect();
    let panel = |title: &str, unit: &str, points: Vec<(f64, f64)>| {
        let mut ch = Chart::new(title, "seconds since the load started", unit);
        ch.shade = shade.clone();
        ch.marks = marks.clone();
        ch.x_range = Some((0.0, load_len.ceil().max(1.0)));
        ch.series.push(Series {
            name: String::new(),
            points,
            markers: false,
            ..Series::default()
        });
        ch
    };
    let tl = |f: fn(&IntervalPoint) -> Option<f64>| -> Vec<(f64, f64)> {
        interval_points(&c.timeline, tl_offset, load_len, f)
    };
    let res = |f: fn(&ResourcePoint) -> f64| -> Vec<(f64, f64)> {
        c.samples
            .iter()
            .filter(|s| s.window == "warmup" || s.window == "measurement")
            .map(|s| (s.t_s - load_start, f(s)))
            .collect()
    };
    let mut panels = Vec::new();
    if !c.timeline.is_empty() {
        let mut throughput = panel("Throughput per second", "requests/s", tl(|t| Some(t.rps)));
        // A cell with an arrival program: the rate it asked for, dashed, beside the achieved.
        let target = tl(|t| t.target_rate);
        if !target.is_empty() {
            throughput.series[0].name = "achieved".to_owned();
            throughput.series.push(Series {
                name: "target".to_owned(),
                points: target,
                dashed: true,
                markers: false,
                ..Series::default()
            });
        }
        panels.push(throughput);
        panels.push(panel(
            "p99 latency per second",
            "ms",
            // An interval without a response has no p99 (the generator writes 0): a gap, not a
            // latency of zero.
            tl(|t| (t.responses != Some(0)).then_some(t.p99_ms)),
        ));
        if c.timeline.iter().any(|t| t.errors.is_some()) {
            panels.push(panel(
                "Errors per second",
                "errors",
                tl(|t| t.errors.map(|e| e as f64)),
            ));
        }
    }
    if !c.samples.is_empty() {
        let cpu = res(|s| s.cpu_percent);
        if !cpu.is_empty() {
            panels.push(panel("SUT CPU", "% of one core", cpu));
            panels.push(panel("SUT memory (resident)", "MiB", res(|s| s.rss_mib)));
        }
    }
    if panels.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"note\">No time series: the cell has no timeline.csv, latency.hlog or \
             samples.csv.</p>"
        );
    } else {
        let file = format!("{}-timeline.svg", p.id);
        let s = svg::render(&panels, 150.0);
        figure(h, &s, &file);
        svgs.push((file, s));
    }
    if c.timeline_from_load_start || !c.timeline.iter().any(|t| t.errors.is_some()) {
        let _ = writeln!(
            h,
            "<p class=\"note\">Errors per second are not plotted: this results directory has no \
             timeline.csv (written by newer gatebench); see the error classes above.</p>"
        );
    }
    let _ = writeln!(h, "</div>");
    let _ = writeln!(h, "</section>");
}

/// The points `(end of the interval on the load's clock, value)` of a time-series panel.
///
/// The load's intervals are its whole seconds, the last one cut short where the load ended; its
/// rate is over its true length (the generator divides by it), so it is drawn as it is, at its
/// end. An interval that starts at or after the load's end is left out: the generator may
/// report one more, nearly empty one (a few milliseconds while its workers stop), which drawn
/// as a second showed every plot ending in a drop to zero throughput and zero p99. Where the
/// length is unknown (a `timeline.csv` line without responses) the interval must end within
/// the load.
fn interval_points(
    timeline: &[IntervalPoint],
    offset: f64,
    load_len: f64,
    value: fn(&IntervalPoint) -> Option<f64>,
) -> Points {
    timeline
        .iter()
        .map(|t| (t.t_s - offset, t))
        .filter(|(end, t)| match t.length_s {
            Some(len) => end - len.min(1.0) < load_len - 1e-3,
            None => *end <= load_len + 1e-3,
        })
        .filter_map(|(x, t)| Some((x, value(t)?)))
        .collect()
}

/// `2026-11-21 07:23:17 UTC` from Unix milliseconds.
fn unix_ms_utc(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cellfiles::{parse_samples, parse_timeline};
    use crate::compare::tests::{env, record};

    #[test]
    fn dates() {
        assert_eq!(unix_ms_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(unix_ms_utc(1_795_245_797_442), "2026-11-21 07:23:17 UTC");
    }

    fn records() -> Vec<CellRecord> {
        let mut v = Vec::new();
        for (s, idx) in [("echo", 0u32), ("proxy", 1)] {
            for users in [10, 100] {
                for rep in 1..=3 {
                    let mut r = record(s, users, rep, 10_000.0 + 500.0 * f64::from(rep));
                    r.cell.scenario_index = idx;
                    v.push(r);
                }
            }
        }
        // One with errors, one generator-bound, one failed.
        let errors = &mut v[1];
        errors
            .load
            .as_mut()
            .unwrap()
            .measurement
            .outcomes
            .add(Outcome::Status5xx, 7);
        v[2].load.as_mut().unwrap().valid = false;
        v[3].status = CellStatus::Failed;
        v[3].reason = Some("sut exited <early>".into());
        v
    }

    /// A cell whose GC log held no event in the measurement: the table and the cell's note say
    /// "no GC events"; no 100 % appears anywhere.
    #[test]
    fn gc_log_without_events_reads_no_gc_events() {
        let mut recs = records();
        let quiet = gatebench_model::GcSummary {
            format: "jvm".into(),
            window_s: 10.0,
            throughput_percent: None,
            ..Default::default()
        };
        recs[0].gc_measurement = Some(quiet);
        let cells: Vec<CellData<'_>> = recs.iter().map(CellData::new).collect();
        let html = render(&ReportInput {
            suite: "gc",
            manifest: None,
            environment: None,
            cells,
            missing: 0,
        })
        .html;
        assert!(html.contains("<th>GC Throughput (%)</th>"));
        assert!(
            html.contains("<td class=\"n\">no GC events</td>"),
            "table cell"
        );
        assert!(html.contains("throughput no GC events;"), "cell note");
        assert!(!html.contains("100.00"), "a throughput nobody measured");
    }

    /// The load's last second is partial: 0.3 s with responses in proportion. It is drawn at
    /// its rate and p99, at its end; the nearly empty interval the generator reports after the
    /// load's end is left out, so neither plot ends in an artificial zero.
    #[test]
    fn a_partial_last_interval_is_drawn_at_its_rate_and_nothing_after_the_end() {
        // Cell clock: the load starts at 0.5 s; 1 s warm-up + 2.3 s measured = 3.3 s.
        let timeline = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms\n\
             1.500,warmup,1000,0,1000.0,1.0\n\
             2.500,measurement,1000,0,1000.0,1.1\n\
             3.500,measurement,1000,0,1000.0,1.2\n\
             3.800,measurement,300,0,1000.0,1.3\n\
             3.802,measurement,0,0,0.0,0.000\n",
        );
        let offset = timeline[0].t_s - 1.0;
        let rps = interval_points(&timeline, offset, 3.3, |t| Some(t.rps));
        let p99 = interval_points(&timeline, offset, 3.3, |t| {
            (t.responses != Some(0)).then_some(t.p99_ms)
        });
        assert_eq!(rps.len(), 4, "{rps:?}");
        let (x, y) = *rps.last().unwrap();
        assert!((x - 3.3).abs() < 1e-9, "drawn at its true end: {x}");
        assert!(
            (y - 1000.0).abs() < 1e-9,
            "at its rate, not as if empty: {y}"
        );
        assert_eq!(p99.last().unwrap().1, 1.3);
        // As the interval log gives them (its lengths known): the same.
        let mut hl = timeline.clone();
        for t in &mut hl {
            t.t_s -= offset;
        }
        hl[3].length_s = Some(0.3);
        hl[4].length_s = Some(0.002);
        let from_log = interval_points(&hl, 0.0, 3.3, |t| Some(t.rps));
        assert_eq!(from_log, rps);
        // An older timeline with an empty second in the load still shows it (a real zero).
        let with_gap = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms\n1.000,warmup,10,0,10.0,1.0\n\
             2.000,measurement,0,5,0.0,0.0\n3.000,measurement,10,0,10.0,1.0\n",
        );
        let pts = interval_points(&with_gap, 0.0, 3.0, |t| Some(t.rps));
        assert_eq!(pts, vec![(1.0, 10.0), (2.0, 0.0), (3.0, 10.0)]);
        // As a real run of 1 s + 2 s wrote it before the runner left the empty interval out.
        let real = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms\n1.052,warmup,59620,0,59620.0,0.052\n\
             2.052,measurement,57563,0,57563.0,0.077\n3.052,measurement,47140,0,47140.0,0.064\n\
             3.054,measurement,0,0,0.0,0.000\n",
        );
        let pts = interval_points(&real, 0.052, 3.0, |t| Some(t.rps));
        assert_eq!(pts.len(), 3);
        assert_eq!(pts.last().unwrap().1, 47140.0);
    }

    #[test]
    fn the_page_is_self_contained_and_every_plot_has_data() {
        let recs = records();
        let mut cells: Vec<CellData<'_>> = recs.iter().map(CellData::new).collect();
        cells[0].samples = parse_samples(
            "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n\
             0.5,before,1.0,10.0,1,1,1,0\n1.5,warmup,80.0,11.0,1,1,1,0\n\
             2.5,measurement,90.0,11.5,1,1,1,0\n3.5,measurement,91.0,11.6,1,1,1,0\n",
        );
        cells[0].timeline = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms\n2.000,warmup,900,0,900.0,1.1\n\
             3.000,measurement,1000,1,1000.0,1.2\n4.000,measurement,1010,0,1010.0,1.0\n",
        );
        let mut e = env("Test CPU");
        e.system.somaxconn = Some("4096".into());
        e.system.cgroup_cpu_max = Some("max 100000".into());
        let r = render(&ReportInput {
            suite: "suite <one>",
            manifest: None,
            environment: Some(&e),
            cells,
            missing: 1,
        });
        let html = &r.html;
        assert!(html.starts_with("<!DOCTYPE html>"));
        for banned in ["http://", "https://"] {
            // Only the SVG namespace (an identifier, never fetched) and the load's URL in a
            // record may mention a scheme; no src= or href= points anywhere but the page.
            for (i, _) in html.match_indices(banned) {
                let around = &html[i.saturating_sub(12)..i];
                assert!(around.contains("xmlns=\""), "external reference near {i}");
            }
        }
        assert!(!html.contains(" src=\""));
        assert!(html.contains("suite &lt;one&gt;"));
        assert!(html.contains("Incomplete:"));
        assert!(html.contains("Flagged cells"));
        assert!(html.contains("sut exited &lt;early&gt;"));
        assert!(html.contains("class=\"flagged\"") && html.contains("class=\"failed\""));
        assert!(html.contains("Test CPU"));
        assert!(
            html.contains("<th>net.core.somaxconn</th><td>4096</td>"),
            "the settings shown"
        );
        assert!(html.contains("<th>cgroup CPU limit</th><td>max 100000</td>"));
        assert!(
            !html.contains("vm.swappiness"),
            "an unread setting is left out"
        );
        // Plots: one throughput chart (one size, one delay), per ok cell a spectrum, and a
        // time series for the cell with side files.
        let n_svg = html.matches("<svg ").count();
        assert_eq!(n_svg, r.svgs.len());
        assert_eq!(
            r.svgs
                .iter()
                .filter(|(f, _)| f.ends_with("-latency.svg"))
                .count(),
            11
        );
        assert_eq!(
            r.svgs
                .iter()
                .filter(|(f, _)| f.ends_with("-timeline.svg"))
                .count(),
            1
        );
        for f in [
            "throughput-s50-d0.svg",
            "latency-s50-d0.svg",
            "memory-s50-d0.svg",
        ] {
            assert!(r.svgs.iter().any(|(g, _)| g == f), "no {f}");
        }
        for (f, s) in &r.svgs {
            assert!(!s.contains("data-points=\"0\""), "{f} is empty");
            assert!(s.contains("class=\"series\""), "{f}");
            assert!(!s.contains("NaN"), "{f}");
        }
        let timeline = &r
            .svgs
            .iter()
            .find(|(f, _)| f.ends_with("-timeline.svg"))
            .unwrap()
            .1;
        assert!(timeline.contains(">warm-up<"));
        assert!(timeline.contains("Errors per second"));
        assert!(timeline.contains("SUT memory"));
        assert!(
            !timeline.contains("<title>target</title>"),
            "no target rate without a program"
        );
    }

    /// A cell with an arrival program: its throughput panel draws the target rate, dashed,
    /// beside the achieved rate, at the same points.
    #[test]
    fn a_program_cell_draws_its_target_rate_dashed_beside_the_achieved() {
        let recs = records();
        let mut cells: Vec<CellData<'_>> = recs.iter().map(CellData::new).collect();
        cells[0].timeline = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms,target_rate\n\
             2.000,warmup,900,0,900.0,1.1,1000.0\n\
             3.000,measurement,1000,1,1000.0,1.2,1000.0\n\
             4.000,measurement,1900,0,1900.0,1.0,2000.0\n",
        );
        assert_eq!(cells[0].timeline[2].target_rate, Some(2000.0));
        let r = render(&ReportInput {
            suite: "programs",
            manifest: None,
            environment: None,
            cells,
            missing: 0,
        });
        let timeline = &r
            .svgs
            .iter()
            .find(|(f, _)| f.ends_with("-timeline.svg"))
            .unwrap()
            .1;
        let target = timeline
            .lines()
            .find(|l| l.contains("<title>target</title>"))
            .expect("a target series");
        assert!(target.contains("stroke-dasharray"), "dashed: {target}");
        // Three seconds, one path command each.
        assert_eq!(target.matches(['M', 'L']).count(), 3, "{target}");
        let achieved = timeline
            .lines()
            .find(|l| l.contains("<title>achieved</title>"))
            .expect("the achieved series, named beside it");
        assert!(!achieved.contains("stroke-dasharray"));
        assert!(timeline.contains(">target</text>"), "in the legend");
    }
}
