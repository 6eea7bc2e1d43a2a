//! `gatebench compare` end to end on results directories written here with the model's types
//! (so the figures are known), `gatebench report`'s HTML on the same, and one real run of the
//! tiny suite for the files a run writes (timeline.csv, report.html, plots/).

use std::path::{Path, PathBuf};

use gatebench_model::{
    CellRecord, Environment, LatencySummary, Outcome, OutcomeCounts, Percentile, PhaseReport,
    ResourceSummary, RunManifest, ToolInfo, SCHEMA_VERSION,
};
use gatebench_testkit::records;

use crate::support::{gatebench, temp_dir, text};

fn phase(rps: f64, users: u32) -> PhaseReport {
    let mut outcomes = OutcomeCounts::default();
    outcomes.add(Outcome::Ok, (rps * 4.0) as u64);
    let mean = f64::from(users) * 1000.0 / rps;
    PhaseReport {
        duration_s: 4.0,
        requests: outcomes.total(),
        error_percent: 0.0,
        outcomes,
        throughput_rps: rps,
        ok_rps: rps,
        target_rps: None,
        sent_rps: rps,
        bytes_read: 0,
        bytes_written: 0,
        latency: LatencySummary {
            count: (rps * 4.0) as u64,
            censored: 0,
            min_ms: mean / 10.0,
            mean_ms: mean,
            stdev_ms: mean / 3.0,
            max_ms: mean * 20.0,
            percentiles: gatebench_model::PERCENTILES
                .iter()
                .map(|p| Percentile {
                    p: *p,
                    ms: mean * (1.0 + p / 25.0),
                    lower_bound: false,
                })
                .collect(),
        },
        latency_answered: None,
        latency_uncorrected: None,
        concurrency: f64::from(users),
        connections: Default::default(),
        histograms: None,
    }
}

fn record(scenario: &str, index: u32, users: u32, repeat: u32, rps: f64) -> CellRecord {
    records::cell_record(
        records::cell_params(
            scenario,
            &format!("{scenario} title"),
            index,
            users,
            50,
            repeat,
        ),
        records::load_report(
            users,
            50,
            Some(phase(rps * 0.8, users)),
            phase(rps, users),
            true,
        ),
        None,
        Some(ResourceSummary {
            samples: 4,
            cpu_mean_percent: 90.0,
            cpu_max_percent: 99.0,
            rss_mean_mib: 12.0,
            rss_max_mib: 12.5,
            threads_max: 3,
            fds_max: 30,
            loadavg_mean: 1.0,
            cpu_time_s: Some(3.6),
            cpu_us_per_request: Some(3.6e6 / (rps * 4.0)),
        }),
    )
}

fn environment(cpu: &str) -> Environment {
    Environment {
        schema_version: SCHEMA_VERSION,
        cpu_model: cpu.into(),
        cores: 2,
        cores_available: 2,
        kernel: "Linux 6.1.0".into(),
        arch: "x86_64".into(),
        gatebench_version: "0.1.0".into(),
        git_revision: "6ec44bd".into(),
        system: Default::default(),
    }
}

/// Noise of a few tenths of a percent, different for every repeat.
const NOISE: [f64; 7] = [1.0, 1.004, 0.997, 1.002, 0.998, 1.003, 0.996];

/// Writes a results directory: for every `(scenario, users, rps)` cell, `repeats` records
/// around `rps`.
fn results_dir(root: &Path, cells: &[(&str, u32, f64)], repeats: u32, cpu: &str) {
    let write = |rel: &str, json: String| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, json).unwrap();
    };
    let json = |v: serde_json::Result<String>| v.unwrap();
    let mut planned = Vec::new();
    for (k, (scenario, users, rps)) in cells.iter().enumerate() {
        for rep in 1..=repeats {
            let noise = NOISE[(rep as usize + k) % NOISE.len()];
            let r = record(scenario, k as u32, *users, rep, rps * noise);
            write(
                &format!("cells/{}/record.json", r.cell.id),
                json(serde_json::to_string_pretty(&r)),
            );
            planned.push(r.cell.id.clone());
        }
    }
    let manifest = RunManifest {
        schema_version: SCHEMA_VERSION,
        kind: RunManifest::KIND.into(),
        tool: ToolInfo {
            name: "gatebench".into(),
            version: "0.1.0".into(),
        },
        suite: "compare test".into(),
        started_at_unix_ms: 0,
        planned_cells: planned,
        estimated_s: 1.0,
        compare: vec![],
    };
    write("run.json", json(serde_json::to_string_pretty(&manifest)));
    write(
        "environment.json",
        json(serde_json::to_string_pretty(&environment(cpu))),
    );
}

/// A baseline and a candidate: `proxy` at 100 users 20 % slower in the candidate, the rest
/// unchanged.
fn two_runs(name: &str, repeats: u32) -> (PathBuf, PathBuf) {
    let tmp = temp_dir(name);
    let (a, b) = (tmp.join("v1"), tmp.join("v2"));
    results_dir(
        &a,
        &[
            ("echo", 10, 20_000.0),
            ("proxy", 10, 10_000.0),
            ("proxy", 100, 9_000.0),
        ],
        repeats,
        "Test CPU",
    );
    results_dir(
        &b,
        &[
            ("echo", 10, 20_000.0),
            ("proxy", 10, 10_000.0),
            ("proxy", 100, 7_200.0),
        ],
        repeats,
        "Test CPU",
    );
    (a, b)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_real_regression_fails_the_gate_and_the_rest_is_unchanged() {
    let (a, b) = two_runs("gate", 5);
    let out = gatebench(&["compare", s(&a), s(&b), "--fail-on-regression", "5%"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("| proxy_u100_s50_d0 | 9,000.0 | 7,200.0 | -20.0% |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("**regressed** (beyond the threshold)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| echo_u10_s50_d0 | ") && stdout.contains("no significant change"),
        "{stdout}"
    );
    assert!(
        stderr.contains("significant regression(s) beyond 5%")
            && stderr.contains("proxy_u100_s50_d0 Throughput"),
        "{stderr}"
    );
    // A threshold beyond the change passes; without the gate the exit status is 0.
    let lenient = gatebench(&["compare", s(&a), s(&b), "--fail-on-regression", "30%"]);
    assert_eq!(lenient.status.code(), Some(0), "{}", text(&lenient.stderr));
    let plain = gatebench(&["compare", s(&a), s(&b)]);
    assert_eq!(plain.status.code(), Some(0));
    // The other way round it is an improvement, not a regression.
    let back = gatebench(&["compare", s(&b), s(&a), "--fail-on-regression", "5%"]);
    assert_eq!(back.status.code(), Some(0), "{}", text(&back.stdout));
    assert!(text(&back.stdout).contains("**improved**"));
}

#[test]
fn json_and_junit_outputs() {
    let (a, b) = two_runs("formats", 5);
    let tmp = a.parent().unwrap().to_path_buf();
    let (json, xml) = (tmp.join("c.json"), tmp.join("c.xml"));
    let out = gatebench(&[
        "compare",
        s(&a),
        s(&b),
        "--fail-on-regression",
        "5",
        "--json",
        s(&json),
        "--junit",
        s(&xml),
        "--metric",
        "throughput_rps",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["kind"], "gatebench-comparison");
    assert_eq!(v["baseline"], "v1");
    let rows = v["pairs"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let slow = rows
        .iter()
        .find(|r| r["cell"] == "proxy_u100_s50_d0")
        .unwrap();
    assert_eq!(slow["verdict"], "regressed");
    assert!(slow["p_value"].as_f64().unwrap() < 0.01);
    assert_eq!(v["pairs"][0]["counts"]["regressed_beyond_threshold"], 1);
    let x = std::fs::read_to_string(&xml).unwrap();
    assert!(x.starts_with("<?xml"));
    assert_eq!(x.matches("<testcase ").count(), 3);
    assert_eq!(x.matches("<failure ").count(), 1);
    // `--json -` replaces the Markdown on stdout.
    let out = gatebench(&["compare", s(&a), s(&b), "--json", "-"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], SCHEMA_VERSION);
}

#[test]
fn too_few_repeats_and_different_machines_are_warned_about() {
    let (a, b) = two_runs("few", 3);
    let out = gatebench(&["compare", s(&a), s(&b), "--fail-on-regression", "5%"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The 20 % drop cannot be called with 3 against 3: the gate says it cannot judge, and
    // fails closed with its own exit status.
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("> **Warning:** too few repeats to tell"),
        "{stdout}"
    );
    assert!(
        stdout.contains("smallest possible p-value is 0.100"),
        "{stdout}"
    );
    assert!(stderr.contains("cannot judge"), "{stderr}");

    let tmp = temp_dir("machines");
    let (c, d) = (tmp.join("here"), tmp.join("there"));
    results_dir(&c, &[("echo", 10, 20_000.0)], 5, "CPU One");
    results_dir(&d, &[("echo", 10, 20_000.0)], 5, "CPU Two");
    let out = gatebench(&["compare", s(&c), s(&d)]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("environments differ") && stdout.contains("\"CPU One\" vs \"CPU Two\""),
        "{stdout}"
    );
}

/// Exit status and message of the gate on a baseline `a` and a candidate `b`.
fn gate_on(a: &Path, b: &Path) -> (Option<i32>, String) {
    let out = gatebench(&["compare", s(a), s(b), "--fail-on-regression", "5%"]);
    (out.status.code(), text(&out.stderr))
}

#[test]
fn the_gate_fails_closed_when_it_cannot_judge() {
    let tmp = temp_dir("closed");
    let base = tmp.join("base");
    results_dir(
        &base,
        &[("echo", 10, 20_000.0), ("proxy", 10, 9_000.0)],
        5,
        "CPU",
    );

    // Every cell of the candidate failed: nothing was compared, so nothing passed.
    let failed = tmp.join("failed");
    results_dir(
        &failed,
        &[("echo", 10, 20_000.0), ("proxy", 10, 9_000.0)],
        5,
        "CPU",
    );
    for e in std::fs::read_dir(failed.join("cells")).unwrap() {
        let p = e.unwrap().path().join("record.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v["status"] = "failed".into();
        std::fs::write(&p, v.to_string()).unwrap();
    }
    let (code, err) = gate_on(&base, &failed);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("no usable cell"), "{err}");
    assert!(!err.contains("no significant regression"), "{err}");

    // No cell in common (another users point).
    let other = tmp.join("other");
    results_dir(&other, &[("echo", 100, 20_000.0)], 5, "CPU");
    let (code, err) = gate_on(&base, &other);
    assert_eq!(
        (code, err.contains("no cell in common")),
        (Some(4), true),
        "{err}"
    );

    // A baseline cell missing from the candidate: what was compared is fine, the rest unjudged.
    let part = tmp.join("part");
    results_dir(&part, &[("echo", 10, 20_000.0)], 5, "CPU");
    let (code, err) = gate_on(&base, &part);
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("1 cell(s) of base have no usable repeat") && err.contains("proxy_u10_s50_d0"),
        "{err}"
    );

    // An incomplete directory: a planned cell without a record.
    let cut = tmp.join("cut");
    results_dir(
        &cut,
        &[("echo", 10, 20_000.0), ("proxy", 10, 9_000.0)],
        5,
        "CPU",
    );
    let dir = std::fs::read_dir(cut.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("proxy"))
        .unwrap();
    std::fs::remove_file(dir.join("record.json")).unwrap();
    let (code, err) = gate_on(&base, &cut);
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("is incomplete: 1 of 10 planned cells"),
        "{err}"
    );

    // One damaged record (a truncated file): `report` and `compare` read every other cell and
    // name the damaged one; the gate cannot judge the damaged cell's repeat.
    let torn = tmp.join("torn");
    results_dir(
        &torn,
        &[("echo", 10, 20_000.0), ("proxy", 10, 9_000.0)],
        5,
        "CPU",
    );
    let rec = torn.join("cells/proxy_u10_s50_d0_r2/record.json");
    let whole = std::fs::read(&rec).unwrap();
    std::fs::write(&rec, &whole[..whole.len() / 2]).unwrap();
    let out = gatebench(&["compare", s(&base), s(&torn)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("damaged record, cell left out: cell proxy_u10_s50_d0_r2: cells/proxy_u10_s50_d0_r2/record.json is not valid JSON"),
        "{stderr}"
    );
    assert!(stdout.contains("| proxy_u10_s50_d0 |"), "{stdout}");
    let (code, err) = gate_on(&base, &torn);
    assert_eq!(code, Some(4), "{err}");
    let out = gatebench(&["report", s(&torn)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("cell proxy_u10_s50_d0_r2"), "{stderr}");
    assert!(stdout.contains("| 10 | 50 | 0 |"), "{stdout}");
    assert!(torn.join("report.html").is_file());

    // The same two complete runs judge, and pass.
    let same = tmp.join("same");
    results_dir(
        &same,
        &[("echo", 10, 20_000.0), ("proxy", 10, 9_000.0)],
        5,
        "CPU",
    );
    let (code, err) = gate_on(&base, &same);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("no significant regression beyond 5% ("),
        "{err}"
    );
}

#[test]
fn a_history_against_a_chosen_baseline() {
    let (a, b) = two_runs("history", 5);
    let c = a.parent().unwrap().join("v3");
    results_dir(
        &c,
        &[
            ("echo", 10, 20_000.0),
            ("proxy", 10, 10_000.0),
            ("proxy", 100, 9_000.0),
        ],
        5,
        "Test CPU",
    );
    let out = gatebench(&["compare", s(&a), s(&b), s(&c), "--baseline", "v2"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("# gatebench compare: v1, v3 against v2"),
        "{stdout}"
    );
    assert!(
        stdout.contains("## v1 vs v2") && stdout.contains("## v3 vs v2"),
        "{stdout}"
    );
    let bad = gatebench(&["compare", s(&a), s(&b), "--baseline", "v9"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn two_scenarios_of_one_run() {
    let tmp = temp_dir("scenarios");
    let dir = tmp.join("ab");
    results_dir(
        &dir,
        &[("old", 10, 10_000.0), ("new", 10, 12_000.0)],
        5,
        "Test CPU",
    );
    let out = gatebench(&[
        "compare",
        s(&dir),
        "--scenario",
        "old",
        "--scenario",
        "new",
        "--metric",
        "throughput_rps",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| u10_s50_d0 |"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        row.contains("+19.") && row.ends_with("| **improved** |"),
        "{row}"
    );
    let one = gatebench(&["compare", s(&dir)]);
    assert_eq!(one.status.code(), Some(2));
    assert!(text(&one.stderr).contains("--scenario"));
}

/// Seed 000's form: two versions as scenarios of one run, the chart as SVG and in a page.
#[test]
fn the_chart_of_two_scenarios_as_svg_and_html() {
    let tmp = temp_dir("chart");
    let dir = tmp.join("seed");
    // Both at 10 users and 100 users; v2 20 % faster at 100 users on the same CPU time.
    results_dir(
        &dir,
        &[
            ("v1", 10, 10_000.0),
            ("v2", 10, 10_000.0),
            ("v1", 100, 9_000.0),
            ("v2", 100, 10_800.0),
        ],
        5,
        "Test CPU",
    );
    let (svg, html) = (tmp.join("compare.svg"), tmp.join("compare.html"));
    let out = gatebench(&[
        "compare",
        s(&dir),
        "--scenario",
        "v1",
        "--scenario",
        "v2",
        "--svg",
        s(&svg),
        "--html",
        s(&html),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chart = std::fs::read_to_string(&svg).unwrap();
    // Throughput, mean, p99 and CPU time per request: four panels of two bars.
    assert_eq!(chart.matches("<g transform").count(), 4, "{chart}");
    assert_eq!(chart.matches("class=\"bar\"").count(), 8);
    assert_eq!(chart.matches("class=\"ci\"").count(), 8);
    for t in [
        "Throughput: v2 against v1",
        "Average response time: v2 against v1",
        "99th percentile of response time: v2 against v1",
        "SUT CPU time per request: v2 against v1",
    ] {
        assert!(chart.contains(t), "{t}");
    }
    let bar = |metric_panel: usize, cell: &str| -> String {
        chart
            .split("<g transform")
            .nth(metric_panel + 1)
            .unwrap()
            .lines()
            .find(|l| l.contains(&format!("data-cell=\"{cell}\"")))
            .unwrap_or_else(|| panic!("{cell}"))
            .to_owned()
    };
    // +20 % throughput, solid (significant); the unchanged cell pale.
    assert!(bar(0, "u100_s50_d0").contains("fill-opacity=\"1\""));
    assert!(bar(0, "u10_s50_d0").contains("fill-opacity=\"0.35\""));
    assert!(
        bar(0, "u100_s50_d0").contains("+20.0% improved"),
        "{}",
        bar(0, "u100_s50_d0")
    );
    // CPU per request: 3.6 s over 1.2 times the responses, -16.7 %.
    assert!(
        bar(3, "u100_s50_d0").contains("-16.7% improved"),
        "{}",
        bar(3, "u100_s50_d0")
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(chart.trim_end()), "the same chart inline");
    assert!(page.contains("<h3>SUT CPU time per request (µs), lower is better</h3>"));
}

#[test]
fn not_a_results_directory_is_an_error() {
    let tmp = temp_dir("bad");
    let out = gatebench(&["compare", s(&tmp), s(&tmp)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a gatebench results directory"));
    let out = gatebench(&["compare", s(&tmp), s(&tmp), "--fail-on-regression", "lots"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_writes_html_and_plots_from_records_alone() {
    let (a, _) = two_runs("html", 2);
    let out = gatebench(&["report", s(&a)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(html.contains("data-plot-check") || html.contains("plot-check"));
    let plots: Vec<String> = std::fs::read_dir(a.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Throughput, latency and memory against users (one size, one delay), one latency
    // spectrum per cell (from the records' percentiles: there is no latency.hlog), no time
    // series (no side files).
    assert_eq!(plots.len(), 3 + 6, "{plots:?}");
    for f in [
        "throughput-s50-d0.svg",
        "latency-s50-d0.svg",
        "memory-s50-d0.svg",
    ] {
        assert!(plots.iter().any(|p| p == f), "no {f}: {plots:?}");
    }
    assert_eq!(html.matches("<svg ").count(), plots.len());
}

#[test]
fn a_run_writes_its_timeline_and_report() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("run");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tiny.toml");
    let out_dir = tmp.join("out");
    let out = gatebench(&["run", s(&suite), "--out", s(&out_dir), "--repeats", "2"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Repeats: 2 per cell (2 runs in all), too few for `gatebench compare`"),
        "{stdout}"
    );
    assert!(stdout.contains("Report: "), "{stdout}");
    let cell = out_dir.join("cells/backend-alone_u2_s50_d0_r2");
    let timeline = std::fs::read_to_string(cell.join("timeline.csv")).unwrap();
    assert!(
        timeline.starts_with("t_s,window,responses,errors,rps,p99_ms\n"),
        "{timeline}"
    );
    assert!(timeline.contains(",measurement,"), "{timeline}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("backend-alone_u2_s50_d0_r2"));
    assert!(out_dir
        .join("plots/backend-alone_u2_s50_d0_r1-timeline.svg")
        .is_file());
    assert!(out_dir
        .join("plots/backend-alone_u2_s50_d0_r1-latency.svg")
        .is_file());
}
