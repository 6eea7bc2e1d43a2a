//! The trend site: a static, self-contained set of HTML pages about a suite's releases, written
//! to a directory that opens from the file system without a network.
//!
//! Pages:
//! - `index.html`: every suite with its versions (date, commit, gate verdict, the change points
//!   first seen at that version) and links to its scenarios;
//! - `<suite>/<scenario>.html`: for every cell of the scenario (users × size × delay ×
//!   protocol) throughput, p99, SUT CPU per request and SUT memory against version; each
//!   version's repeats drawn as their spread (a min–max bar) with a line through the medians,
//!   change points marked as a labelled band between the versions and listed with their shift,
//!   interval and p-value, and the latest gate verdicts of the cell;
//! - `<suite>/release-<version>.html`: one release, with seed 004's summary table (Scenario
//!   Name … 99th Percentile of Response Time, plus SUT CPU and memory), its gate verdicts and the
//!   change points first seen in it.
//!
//! The charts are `gatebench-report`'s hand-written SVG ([`gatebench_report::svg`]), inlined;
//! the CSS is inline and a Content-Security-Policy forbids fetching anything. As in
//! `report.html`, a small inline script checks once loaded that every plot drew its lines and
//! writes `data-plot-check="ok: N plots"` (or `error: …`, also to the console) on `<html>`,
//! which `scripts/check-site.sh` reads in headless Chromium. The pages are also well-formed XML
//! (void elements self-closed, no named entities but XML's), which the tests check.
//!
//! What it does not do: read the store or compute anything — the caller fills [`SiteInput`]
//! (series, change points from [`crate::changepoint`], gate reports from [`crate::gate`],
//! each release's summary rows).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use gatebench_report::stats;
use gatebench_report::summary::COLUMNS;
use gatebench_report::svg::{self, esc, Chart, Series as Line};
use serde::{Deserialize, Serialize};

use crate::changepoint::ChangePoint;
use crate::gate::{GateReport, Verdict};
use crate::series::{Metric, Series};

/// Everything the site shows.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SiteInput {
    /// The site's title.
    pub title: String,
    /// The suites, in the order to list them.
    pub suites: Vec<SuiteInput>,
}

/// One suite's series.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SuiteInput {
    /// The suite's name.
    pub name: String,
    /// Its cells, in suite order (scenarios are listed in the order they first appear).
    pub cells: Vec<CellInfo>,
    /// Every cell × metric along the versions (oldest first).
    pub series: Vec<Series>,
    /// The change points found in the series.
    pub changes: Vec<SeriesChanges>,
    /// The releases, oldest first.
    pub releases: Vec<Release>,
}

/// Where a cell sits in the suite's matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellInfo {
    /// The key its series carry ([`Series::cell`]).
    pub key: String,
    /// The scenario's short name.
    pub scenario: String,
    /// The scenario's title (seed 004's "Scenario Name").
    pub title: String,
    /// Concurrent users.
    pub users: u32,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Back-end service delay, ms.
    pub delay_ms: f64,
    /// The protocol the load generator speaks.
    pub protocol: String,
}

/// The change points of one cell's metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesChanges {
    /// The cell's key.
    pub cell: String,
    /// The metric.
    pub metric: Metric,
    /// The change points, in version order.
    pub points: Vec<ChangePoint>,
}

/// One release.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Release {
    /// The version.
    pub version: String,
    /// When it was run or released, as the user gave it.
    pub date: Option<String>,
    /// The commit it was built from.
    pub commit: Option<String>,
    /// The summary table's rows (one per cell, repeats merged by the caller).
    pub rows: Vec<SummaryRow>,
    /// Its gates' verdicts, when it was gated.
    pub gate: Option<GateReport>,
}

/// One row of seed 004's summary table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Scenario Name.
    pub scenario: String,
    /// Concurrent Users.
    pub users: u32,
    /// Message Size (Bytes).
    pub size_bytes: u64,
    /// Back-end Service Delay (ms).
    pub delay_ms: f64,
    /// Error %.
    pub error_pct: f64,
    /// Throughput (Requests/sec).
    pub throughput: f64,
    /// Average Response Time (ms).
    pub mean_ms: f64,
    /// Standard Deviation of Response Time (ms).
    pub stddev_ms: f64,
    /// 99th Percentile of Response Time (ms).
    pub p99_ms: f64,
    /// SUT CPU, % of one core, when measured.
    pub sut_cpu_pct: Option<f64>,
    /// SUT memory, MiB, when measured.
    pub sut_memory_mib: Option<f64>,
}

/// The metrics charted for every cell, in order.
pub const CHARTED: [Metric; 4] = [
    Metric::Throughput,
    Metric::P99,
    Metric::SutCpuPerRequest,
    Metric::SutMemory,
];

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1180px;
padding:0 16px;color:#1a1a1a;line-height:1.4}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:22px 0 4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;background:#eee}
.badge.pass{background:#2e7d32;color:#fff}.badge.fail{background:#c62828;color:#fff}
.badge.unstable{background:#ef8f00;color:#fff}.badge.cannot{background:#555;color:#fff}
tr.regression td{background:#fde8e8}tr.improvement td{background:#e8f5e9}
.note{color:#555;font-size:12px}
svg.plot{max-width:100%;height:auto;border:1px solid #eee}
.figs{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}
.figs figure{margin:0;flex:1 1 520px;max-width:calc(50% - 4px)}
@media (max-width:900px){.figs figure{max-width:100%}}
section.cell{margin-bottom:18px}
a{color:#0b57d0}
";

/// The pages' self-check: every plot drew a line (see the module's documentation). Written
/// without `<` or `&` so the page stays well-formed XML.
const CHECK_SCRIPT: &str = "
(function(){
  var problems=[];
  window.addEventListener('error',function(e){problems.push('script error: '+e.message);});
  var plots=document.querySelectorAll('svg.plot');
  plots.forEach(function(svg,i){
    var drawn=0;
    svg.querySelectorAll('path.series').forEach(function(p){
      var b=p.getBBox();
      if((b.width+b.height)>0){drawn++;}
    });
    if(drawn===0){problems.push('plot '+(i+1)+' ('+svg.getAttribute('aria-label')+') drew nothing');}
    if(svg.getAttribute('data-points')==='0'){problems.push('plot '+(i+1)+' has no points');}
  });
  var verdict=problems.length?'error: '+problems.join('; '):'ok: '+plots.length+' plots';
  document.documentElement.setAttribute('data-plot-check',verdict);
  var el=document.getElementById('plot-check');
  if(el){el.textContent='Plot self-check: '+verdict;}
  if(problems.length){console.error('gatebench site: '+verdict);}
})();
";

/// A file-name-safe form of `s`: ASCII letters, digits, `.`, `_` and `-` kept, others `-`.
pub fn slug(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with('.') {
        format!("_{out}")
    } else {
        out
    }
}

/// The page's head and opening, `depth` directories below the site's root.
fn open_page(h: &mut String, title: &str, depth: usize) {
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>{} — gatebench trends</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <p class=\"note\"><a href=\"{}index.html\">All suites</a></p>\n",
        esc(title),
        "../".repeat(depth)
    );
}

fn close_page(h: &mut String) {
    let _ = writeln!(
        h,
        "<p class=\"note\" id=\"plot-check\">Plot self-check: not run (scripts disabled).</p>\n\
         <p class=\"note\">Written by gatebench {}.</p>\n<script>{CHECK_SCRIPT}</script>\n\
         </body>\n</html>",
        esc(env!("CARGO_PKG_VERSION"))
    );
}

fn badge(v: Verdict) -> String {
    let class = match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Unstable => "unstable",
        Verdict::CannotJudge => "cannot",
    };
    format!("<span class=\"badge {class}\">{}</span>", v.name())
}

/// A figure with a unit: 3 significant-ish digits, thousands as plain digits.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), num)
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |p| format!("{p:+.1}%"))
}

/// Writes the site under `out` (created if missing) and returns the pages written.
pub fn render(site: &SiteInput, out: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)?;
    let mut written = Vec::new();
    let mut write = |path: PathBuf, text: String| -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    write(out.join("index.html"), index(site))?;
    for suite in &site.suites {
        let dir = out.join(slug(&suite.name));
        for scenario in scenarios(suite) {
            write(
                dir.join(format!("{}.html", slug(&scenario))),
                scenario_page(suite, &scenario),
            )?;
        }
        for release in &suite.releases {
            write(
                dir.join(format!("release-{}.html", slug(&release.version))),
                release_page(suite, release),
            )?;
        }
    }
    Ok(written)
}

/// The suite's scenarios, in the order they first appear among its cells.
fn scenarios(suite: &SuiteInput) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &suite.cells {
        if !out.contains(&c.scenario) {
            out.push(c.scenario.clone());
        }
    }
    out
}

/// The change points of `suite` first seen at `version`, with their cell and metric.
fn changes_at<'a>(
    suite: &'a SuiteInput,
    version: &str,
) -> Vec<(&'a SeriesChanges, &'a ChangePoint)> {
    suite
        .changes
        .iter()
        .flat_map(|s| s.points.iter().map(move |p| (s, p)))
        .filter(|(_, p)| p.version == version)
        .collect()
}

fn index(site: &SiteInput) -> String {
    let mut h = String::new();
    open_page(&mut h, &site.title, 0);
    let _ = writeln!(h, "<h1>{}</h1>", esc(&site.title));
    if site.suites.is_empty() {
        let _ = writeln!(h, "<p>No suite has a run yet.</p>");
    }
    for suite in &site.suites {
        let dir = slug(&suite.name);
        let _ = writeln!(h, "<h2>{}</h2>", esc(&suite.name));
        let _ = writeln!(h, "<p>Scenarios:");
        for (i, s) in scenarios(suite).iter().enumerate() {
            let _ = write!(
                h,
                "{}<a href=\"{dir}/{}.html\">{}</a>",
                if i == 0 { " " } else { ", " },
                slug(s),
                esc(s)
            );
        }
        let _ = writeln!(h, "</p>");
        let _ = writeln!(
            h,
            "<table>\n<tr><th>Version</th><th>Date</th><th>Commit</th><th>Gates</th>\
             <th>Changes first seen here</th></tr>"
        );
        for r in suite.releases.iter().rev() {
            let changes = changes_at(suite, &r.version);
            let regressions = changes.iter().filter(|(_, p)| p.regression).count();
            let _ = writeln!(
                h,
                "<tr><td><a href=\"{dir}/release-{}.html\">{}</a></td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td></tr>",
                slug(&r.version),
                esc(&r.version),
                esc(r.date.as_deref().unwrap_or("")),
                esc(r.commit.as_deref().unwrap_or("")),
                r.gate
                    .as_ref()
                    .map_or_else(|| "not gated".to_owned(), |g| badge(g.verdict)),
                if changes.is_empty() {
                    String::new()
                } else {
                    format!("{} ({regressions} for the worse)", changes.len())
                }
            );
        }
        let _ = writeln!(h, "</table>");
    }
    close_page(&mut h);
    h
}

/// The chart of one cell's metric against version.
fn chart(series: &Series, versions: &[String], changes: Option<&SeriesChanges>) -> Chart {
    let m = series.metric;
    let title = match m {
        Metric::Throughput => "Throughput",
        Metric::P50 => "p50 latency",
        Metric::P99 => "p99 latency",
        Metric::P999 => "p99.9 latency",
        Metric::ErrorPct => "Errors",
        Metric::SutCpuPerRequest => "SUT CPU per request",
        Metric::SutMemory => "SUT memory",
    };
    let mut c = Chart::new(&format!("{title} ({})", m.unit()), "version", m.unit());
    let at = |v: &str| versions.iter().position(|x| x == v);
    let step = versions.len().div_ceil(12).max(1);
    c.x_ticks = Some(
        versions
            .iter()
            .enumerate()
            // Every `step`-th version, and the last one unless it would crowd the one before.
            .filter(|(i, _)| i % step == 0 || (*i + 1 == versions.len() && i % step > step / 2))
            .map(|(i, v)| (i as f64, v.clone()))
            .collect(),
    );
    let mut line = Line {
        name: "median of the repeats (bars: min–max)".into(),
        markers: true,
        ..Line::default()
    };
    for p in &series.points {
        let Some(x) = at(&p.version) else { continue };
        let finite: Vec<f64> = p
            .samples
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let Some(med) = stats::median(&finite) else {
            continue;
        };
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        line.points.push((x as f64, med));
        if finite.len() > 1 {
            line.whiskers.push((x as f64, lo, hi));
        }
    }
    line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    c.series.push(line);
    for cp in changes.iter().flat_map(|s| &s.points) {
        if let Some(x) = at(&cp.version) {
            let x = x as f64 - 0.5;
            c.shade.push((x - 0.06, x + 0.06, pct(cp.shift_pct)));
        }
    }
    c
}

fn scenario_page(suite: &SuiteInput, scenario: &str) -> String {
    let mut h = String::new();
    let versions: Vec<String> = suite.releases.iter().map(|r| r.version.clone()).collect();
    let mut cells: Vec<&CellInfo> = suite
        .cells
        .iter()
        .filter(|c| c.scenario == scenario)
        .collect();
    cells.sort_by(|a, b| {
        (a.users, a.size_bytes, a.protocol.as_str())
            .cmp(&(b.users, b.size_bytes, b.protocol.as_str()))
            .then(a.delay_ms.total_cmp(&b.delay_ms))
    });
    let title = cells.first().map_or(scenario, |c| c.title.as_str());
    open_page(&mut h, &format!("{} — {title}", suite.name), 1);
    let _ = writeln!(
        h,
        "<h1>{}</h1>\n<p>Suite {}, {} versions ({} … {}). Each version's repeats are drawn as a \
         bar from the lowest to the highest with a line through their medians; a labelled band \
         between two versions is a change point (E-divisive means, the shift by Hodges-Lehmann).\
         </p>",
        esc(title),
        esc(&suite.name),
        versions.len(),
        esc(versions.first().map_or("", String::as_str)),
        esc(versions.last().map_or("", String::as_str)),
    );
    let latest_gate = suite.releases.iter().rev().find_map(|r| r.gate.as_ref());
    for cell in cells {
        let _ = writeln!(
            h,
            "<section class=\"cell\" id=\"{}\">\n<h2>{} users, {} B, {} ms delay, {}</h2>",
            esc(&slug(&cell.key)),
            cell.users,
            cell.size_bytes,
            esc(&svg::tick_label(cell.delay_ms)),
            esc(&cell.protocol)
        );
        let _ = writeln!(h, "<div class=\"figs\">");
        let mut listed = Vec::new();
        for m in CHARTED {
            let Some(s) = suite
                .series
                .iter()
                .find(|s| s.cell == cell.key && s.metric == m)
            else {
                continue;
            };
            let changes = suite
                .changes
                .iter()
                .find(|c| c.cell == cell.key && c.metric == m);
            let c = chart(s, &versions, changes);
            let _ = writeln!(h, "<figure>{}</figure>", svg::render(&[c], 260.0));
            if let Some(ch) = changes {
                listed.extend(ch.points.iter().map(|p| (m, p)));
            }
        }
        let _ = writeln!(h, "</div>");
        if listed.is_empty() {
            let _ = writeln!(h, "<p class=\"note\">No change point in these series.</p>");
        } else {
            let _ = writeln!(
                h,
                "<table>\n<tr><th>Metric</th><th>First version on the new level</th>\
                 <th>Before → after (medians)</th><th>Shift</th><th>Interval</th><th>p</th></tr>"
            );
            for (m, p) in listed {
                let (lo, hi) = p.shift_pct_interval.unzip();
                let _ = writeln!(
                    h,
                    "<tr class=\"{}\"><td>{}</td><td>{}</td><td class=\"n\">{} → {} {}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{} … {} ({:.0}%)</td>\
                     <td class=\"n\">{:.3}</td></tr>",
                    if p.regression {
                        "regression"
                    } else {
                        "improvement"
                    },
                    m.name(),
                    esc(&p.version),
                    num(p.before_median),
                    num(p.after_median),
                    esc(m.unit()),
                    pct(p.shift_pct),
                    pct(lo),
                    pct(hi),
                    p.confidence * 100.0,
                    p.p_value
                );
            }
            let _ = writeln!(h, "</table>");
        }
        if let Some(g) = latest_gate {
            let mine: Vec<_> = g.outcomes.iter().filter(|o| o.cell == cell.key).collect();
            if !mine.is_empty() {
                let _ = writeln!(
                    h,
                    "<table>\n<tr><th>Gate on {}</th><th>Verdict</th><th>Figures</th></tr>",
                    esc(&g.candidate)
                );
                for o in mine {
                    let _ = writeln!(
                        h,
                        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                        esc(&o.gate.to_string()),
                        badge(o.verdict),
                        esc(&o.detail)
                    );
                }
                let _ = writeln!(h, "</table>");
            }
        }
        let _ = writeln!(h, "</section>");
    }
    close_page(&mut h);
    h
}

fn release_page(suite: &SuiteInput, r: &Release) -> String {
    let mut h = String::new();
    open_page(&mut h, &format!("{} {}", suite.name, r.version), 1);
    let _ = writeln!(
        h,
        "<h1>{} {}</h1>\n<p>{}{}</p>",
        esc(&suite.name),
        esc(&r.version),
        r.date
            .as_deref()
            .map_or(String::new(), |d| format!("Run {}. ", esc(d))),
        r.commit.as_deref().map_or(String::new(), |c| format!(
            "Commit <code>{}</code>.",
            esc(c)
        ))
    );
    let _ = writeln!(h, "<h2>Summary</h2>\n<table>\n<tr>");
    for col in COLUMNS[..11].iter() {
        let _ = write!(h, "<th>{}</th>", esc(col));
    }
    let _ = writeln!(h, "</tr>");
    for row in &r.rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            esc(&row.scenario),
            row.users,
            row.size_bytes,
            esc(&svg::tick_label(row.delay_ms)),
            num(row.error_pct),
            num(row.throughput),
            num(row.mean_ms),
            num(row.stddev_ms),
            num(row.p99_ms),
            opt_num(row.sut_cpu_pct),
            opt_num(row.sut_memory_mib)
        );
    }
    let _ = writeln!(h, "</table>");
    let _ = writeln!(h, "<h2>Gates</h2>");
    match &r.gate {
        None => {
            let _ = writeln!(h, "<p>This release was not gated.</p>");
        }
        Some(g) => {
            let _ = writeln!(
                h,
                "<p>Verdict: {}{}</p>",
                badge(g.verdict),
                g.note
                    .as_deref()
                    .map_or(String::new(), |n| format!(" ({})", esc(n)))
            );
            if !g.outcomes.is_empty() {
                let _ = writeln!(
                    h,
                    "<table>\n<tr><th>Cell</th><th>Gate</th><th>Verdict</th><th>Figures</th></tr>"
                );
                for o in &g.outcomes {
                    let _ = writeln!(
                        h,
                        "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                        esc(&o.cell),
                        esc(&o.gate.to_string()),
                        badge(o.verdict),
                        esc(&o.detail)
                    );
                }
                let _ = writeln!(h, "</table>");
            }
        }
    }
    let _ = writeln!(
        h,
        "<h2>Change points first seen in {}</h2>",
        esc(&r.version)
    );
    let changes = changes_at(suite, &r.version);
    if changes.is_empty() {
        let _ = writeln!(h, "<p>None.</p>");
    } else {
        let _ = writeln!(
            h,
            "<table>\n<tr><th>Cell</th><th>Metric</th><th>Shift</th><th>p</th></tr>"
        );
        for (s, p) in changes {
            let scenario = suite
                .cells
                .iter()
                .find(|c| c.key == s.cell)
                .map_or(String::new(), |c| slug(&c.scenario));
            let _ = writeln!(
                h,
                "<tr class=\"{}\"><td><a href=\"{scenario}.html#{}\">{}</a></td><td>{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{:.3}</td></tr>",
                if p.regression {
                    "regression"
                } else {
                    "improvement"
                },
                esc(&slug(&s.cell)),
                esc(&s.cell),
                s.metric.name(),
                pct(p.shift_pct),
                p.p_value
            );
        }
        let _ = writeln!(h, "</table>");
    }
    close_page(&mut h);
    h
}

/// A synthetic site: `versions` releases of a two-scenario suite, throughput dropping 8 % and
/// p99 rising at version `versions * 3 / 5`, with change points and gates computed. Used by the
/// tests and by `examples/demo-site.rs` (which `scripts/check-site.sh` opens in a browser).
pub fn demo(versions: usize) -> SiteInput {
    use crate::changepoint::{detect, Options, SplitMix64};
    use crate::gate::{evaluate, parse_all, GateOptions};
    use crate::series::Point;

    let mut rng = SplitMix64::new(42);
    let at = versions * 3 / 5;
    let names: Vec<String> = (0..versions).map(|v| format!("2201.{}.0", v + 1)).collect();
    let mut cells = Vec::new();
    let mut series = Vec::new();
    for (scenario, title) in [
        ("passthrough", "Passthrough HTTP service"),
        ("transform", "XML to JSON transformation"),
    ] {
        for users in [10u32, 100] {
            for size in [50u64, 1024] {
                let key = format!("{scenario}_u{users}_s{size}_d0");
                cells.push(CellInfo {
                    key: key.clone(),
                    scenario: scenario.into(),
                    title: title.into(),
                    users,
                    size_bytes: size,
                    delay_ms: 0.0,
                    protocol: "h1c".into(),
                });
                for (metric, level, cv, step) in [
                    (
                        Metric::Throughput,
                        20_000.0 / (1.0 + size as f64 / 4096.0),
                        0.02,
                        0.92,
                    ),
                    (Metric::P99, 2.0 + users as f64 / 20.0, 0.03, 1.10),
                    (Metric::SutCpuPerRequest, 45.0, 0.02, 1.08),
                    (Metric::SutMemory, 120.0, 0.01, 1.0),
                    (Metric::ErrorPct, 0.0, 0.0, 1.0),
                ] {
                    let points = names
                        .iter()
                        .enumerate()
                        .map(|(v, name)| {
                            let mean = if v >= at { level * step } else { level };
                            Point {
                                version: name.clone(),
                                samples: (0..5).map(|_| mean * (1.0 + cv * rng.normal())).collect(),
                            }
                        })
                        .collect();
                    series.push(Series {
                        suite: "proxy".into(),
                        cell: key.clone(),
                        metric,
                        points,
                    });
                }
            }
        }
    }
    let opts = Options::default();
    let changes = series
        .iter()
        .map(|s| SeriesChanges {
            cell: s.cell.clone(),
            metric: s.metric,
            points: detect(s, &opts),
        })
        .filter(|c| !c.points.is_empty())
        .collect();
    let gates = parse_all(&[
        "throughput >= -5% vs 2201.1.0",
        "p99 < 10ms",
        "cv(throughput) <= 5%",
    ])
    .expect("the demo's gates parse");
    let median = |s: &Series, v: &str| {
        s.points
            .iter()
            .find(|p| p.version == v)
            .and_then(|p| stats::median(&p.samples))
            .unwrap_or(f64::NAN)
    };
    let releases = names
        .iter()
        .enumerate()
        .map(|(i, v)| Release {
            version: v.clone(),
            date: Some(format!("2026-{:02}-01", i % 12 + 1)),
            commit: Some(format!("{:07x}", 0xabc0000 + i * 4099)),
            rows: cells
                .iter()
                .map(|c| {
                    let of = |m: Metric| {
                        series
                            .iter()
                            .find(|s| s.cell == c.key && s.metric == m)
                            .map_or(f64::NAN, |s| median(s, v))
                    };
                    SummaryRow {
                        scenario: c.title.clone(),
                        users: c.users,
                        size_bytes: c.size_bytes,
                        delay_ms: c.delay_ms,
                        error_pct: of(Metric::ErrorPct),
                        throughput: of(Metric::Throughput),
                        mean_ms: of(Metric::P99) / 3.0,
                        stddev_ms: of(Metric::P99) / 8.0,
                        p99_ms: of(Metric::P99),
                        sut_cpu_pct: Some(
                            of(Metric::SutCpuPerRequest) * of(Metric::Throughput) / 1e4,
                        ),
                        sut_memory_mib: Some(of(Metric::SutMemory)),
                    }
                })
                .collect(),
            gate: (i > 0).then(|| evaluate(&gates, &series, v, &GateOptions::default())),
        })
        .collect();
    SiteInput {
        title: "gatebench trends".into(),
        suites: vec![SuiteInput {
            name: "proxy".into(),
            cells,
            series,
            changes,
            releases,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(text: &str, what: &str) {
        let mut r = quick_xml::Reader::from_str(text);
        loop {
            match r.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("{what} is not well-formed at {}: {e}", r.buffer_position()),
            }
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gatebench-site-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_site_has_every_page_and_every_chart_its_points() {
        let site = demo(12);
        let out = temp_dir("full");
        let pages = render(&site, &out).unwrap();
        // Index, two scenarios, twelve releases.
        assert_eq!(pages.len(), 1 + 2 + 12);
        for p in &pages {
            assert!(p.is_file(), "{}", p.display());
            let text = std::fs::read_to_string(p).unwrap();
            well_formed(&text, &p.display().to_string());
            assert!(
                !text.contains("http://") || !text.contains("src=\"http"),
                "no fetches"
            );
            assert!(!text.contains("NaN"), "{}", p.display());
        }
        let scen = std::fs::read_to_string(out.join("proxy/passthrough.html")).unwrap();
        // Four cells × four charted metrics, each with a point per version.
        assert_eq!(scen.matches("<svg ").count(), 16);
        assert_eq!(
            scen.matches("data-points=\"12\"").count(),
            16,
            "every chart has 12 points"
        );
        assert_eq!(scen.matches("class=\"series\"").count(), 16);
        // A min–max bar per version (5 repeats each): 12 per chart.
        assert_eq!(scen.matches("h8M").count(), 16 * 12);
        // The 8 % drop at version 8 (index 7) is found and marked in every throughput chart.
        assert!(
            scen.contains("<td>throughput</td><td>2201.8.0</td>"),
            "{scen}"
        );
        assert!(scen.contains("class=\"shade\""));
        assert!(scen.matches(">-8.").count() >= 4, "shift labels");
        // Gate verdicts of the latest release are shown.
        assert!(scen.contains("Gate on 2201.12.0"));
        assert!(
            scen.contains("badge fail"),
            "the drop fails the relative gate"
        );
        // The release page has seed 004's columns and a row per cell.
        let rel = std::fs::read_to_string(out.join("proxy/release-2201.8.0.html")).unwrap();
        for col in &COLUMNS[..11] {
            assert!(rel.contains(&format!("<th>{}</th>", esc(col))), "{col}");
        }
        assert!(rel.contains("<td>Passthrough HTTP service</td><td class=\"n\">100</td>"));
        assert!(rel.matches("<tr><td>").count() >= 8);
        assert!(rel.contains("Change points first seen in 2201.8.0"));
        assert!(rel.contains("passthrough.html#passthrough_u10_s50_d0"));
        let first = std::fs::read_to_string(out.join("proxy/release-2201.1.0.html")).unwrap();
        assert!(first.contains("This release was not gated."));
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert_eq!(index.matches("href=\"proxy/release-").count(), 12);
        assert!(index.contains("href=\"proxy/transform.html\""));
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_empty_site_and_odd_names_still_render() {
        let out = temp_dir("empty");
        let pages = render(&SiteInput::default(), &out).unwrap();
        assert_eq!(pages.len(), 1);
        let text = std::fs::read_to_string(&pages[0]).unwrap();
        assert!(text.contains("No suite has a run yet."));
        well_formed(&text, "empty index");
        assert_eq!(slug("a b/c<d>"), "a-b-c-d-");
        assert_eq!(slug(".."), "_..");
        assert_eq!(slug(""), "_");
        std::fs::remove_dir_all(&out).unwrap();
    }
}
