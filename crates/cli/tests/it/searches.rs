//! End to end: a suite's capacity column and intermediary cost with the real binary on the
//! built-in services (an echo back-end, the passthrough proxy in front of it), small bounds
//! and short steps so each run takes seconds; and what `--estimate` counts for them.

use crate::support::{self, read_json as json, run_suite as run, temp_dir};

const CAPACITY: &str = r#"
[suite]
name = "capacity"
warmup = "0.2s"
duration = "0.5s"
include = ["*_capacity_*"]

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[load]
connections = 4
threads = 1

[capacity]
slo = "p50<50ms,errors<1%"
start = 100
min_rate = 50
max_rate = 400
step = "500ms"
max_step = "1s"
warmup = "200ms"
max_steps = 8

[[scenario]]
name = "echo"
title = "Echo"
backend = { serve = "echo --port {port} --threads 1" }
"#;

/// The echo answers 400 req/s over 4 connections far within p50 < 50 ms: the search climbs
/// 100 → 150 → 225 → 337.5 → 400 and stops at its upper bound, an answer that is a lower
/// bound. The column is there in every summary, positive and within the bounds; the record
/// has every step.
#[test]
fn a_capacity_column_runs_end_to_end_on_the_echo() {
    let _alone = support::alone();
    let dir = temp_dir("capacity");
    // A generator starved by a loaded machine ends a search early (and says so); the search
    // runs again, up to three times, until it has an answer.
    let mut attempt = 0;
    let (out_dir, record) = loop {
        attempt += 1;
        let out_dir = dir.join(format!("out{attempt}"));
        let o = run(&dir, CAPACITY, &["--out", out_dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", support::stderr(&o));
        let record = json(&out_dir.join("cells/echo_capacity_s50_d0/record.json"));
        let c = &record["capacity"];
        if (c["max_rate"].is_number() && c["verdict"] != "generator_bound") || attempt == 3 {
            break (out_dir, record);
        }
    };
    assert_eq!(record["status"], "ok", "{record:#}");
    assert_eq!(record["cell"]["kind"], "capacity");
    assert!(record["load"].is_null());
    let c = &record["capacity"];
    let max = c["max_rate"].as_f64().expect("an answer");
    assert!((50.0..=400.0).contains(&max), "{c:#}");
    let steps = c["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= 8, "{c:#}");
    for s in steps {
        let rate = s["rate"].as_f64().unwrap();
        assert!((50.0..=400.0).contains(&rate), "{s:#}");
        assert!(s["duration_s"].as_f64().unwrap() >= 0.4, "{s:#}");
    }
    assert_eq!(steps[0]["rate"].as_f64(), Some(100.0));
    if c["verdict"] == "found" {
        // 100, 150, 225, 337.5, then the bound itself.
        assert_eq!(max, 400.0, "nothing above the bound was tried: {c:#}");
        assert_eq!(steps.len(), 5, "{c:#}");
    } else {
        // Three starved generators in a row on a loaded machine: a lower bound, said so.
        assert_eq!(c["verdict"], "generator_bound", "{c:#}");
    }
    // The column in every summary. The SLO's comma is quoted in the CSV.
    let csv = std::fs::read_to_string(out_dir.join("capacity.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "Scenario Name,Message Size (Bytes),Back-end Service Delay (ms),Protocol,SLO,\
             Max Rate within SLO (Requests/sec),Uncertainty (%),Knee (Requests/sec),Steps,Flags,\
             Cell"
        )
    );
    let row = lines.next().unwrap();
    let after_slo = row
        .strip_prefix("Echo,50,0,h1c,\"p50<50ms,errors<1%\",")
        .unwrap_or_else(|| panic!("{row}"));
    let value = after_slo.split(',').next().unwrap();
    assert_eq!(value, format!("{max:.1}"), "{row}");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("## Capacity: max rate within SLO"), "{md}");
    assert!(
        md.contains("| Max Rate within SLO (Requests/sec) |"),
        "{md}"
    );
    let summary = json(&out_dir.join("summary.json"));
    assert_eq!(summary["capacity"][0]["max_rate"].as_f64(), Some(max));
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2 id=\"capacity\">"));
    assert!(out_dir
        .join("plots/capacity-echo_capacity_s50_d0.svg")
        .is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

const COST: &str = r#"
[suite]
name = "cost"
warmup = "0.2s"
duration = "0.5s"
include = ["*_cost_*"]

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[load]
connections = 4
threads = 1

[cost]
rate = 300
repeats = 2
duration = "0.6s"
warmup = "0.2s"

[[scenario]]
name = "proxy"
title = "Proxy"
backend = { serve = "echo --port {port} --threads 1" }
sut = { serve = "proxy --port {port} --upstream {upstream} --threads 1" }
cost = true
"#;

/// The proxy in front of the echo: two runs each way, alternating; the record has the added
/// latency at every percentile with its interval, and the proxy's CPU per request, which
/// cannot be zero (it parsed and forwarded every request).
#[test]
fn a_cost_cell_measures_the_proxy_in_front_of_the_echo() {
    let _alone = support::alone();
    let dir = temp_dir("cost");
    let out_dir = dir.join("out");
    let o = run(&dir, COST, &["--out", out_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", support::stderr(&o));
    let record = json(&out_dir.join("cells/proxy_cost_s50_d0/record.json"));
    assert_eq!(record["status"], "ok", "{record:#}");
    assert_eq!(record["cell"]["kind"], "cost");
    let c = &record["cost"];
    let paths: Vec<&str> = c["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["direct", "via", "via", "direct"]);
    let added = c["added"].as_array().unwrap();
    let ps: Vec<f64> = added.iter().map(|a| a["p"].as_f64().unwrap()).collect();
    assert_eq!(ps, [50.0, 90.0, 99.0, 99.9]);
    for a in added {
        let (low, est, high) = (
            a["low_ms"].as_f64().unwrap(),
            a["added_ms"].as_f64().unwrap(),
            a["high_ms"].as_f64().unwrap(),
        );
        assert!(low <= est && est <= high, "{a:#}");
    }
    let cpu = c["intermediary_cpu_us_per_request"].as_f64().expect("CPU");
    assert!(cpu > 0.0, "{c:#}");
    assert!(c["direct_url"] != c["via_url"]);
    let csv = std::fs::read_to_string(out_dir.join("cost.csv")).unwrap();
    assert!(csv.starts_with("Scenario Name,"), "{csv}");
    assert!(csv.contains("Added p99.9 High (ms)"), "{csv}");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("## Intermediary cost"), "{md}");
    let summary = json(&out_dir.join("summary.json"));
    assert_eq!(summary["cost"][0]["added"].as_array().unwrap().len(), 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--estimate` counts a search at its bound (`max_steps × (warmup + max_step)`, plus the
/// closed-model probe without a start) and a cost cell at its `2 × repeats` runs, each with
/// the second a cell takes to start and stop; it runs nothing.
#[test]
fn the_estimate_counts_searches_at_their_bound_and_cost_runs() {
    let dir = temp_dir("estimate");
    let suite = COST
        .replace("include = [\"*_cost_*\"]\n", "")
        .replace(
            "[cost]",
            "[capacity]\nslo = \"p99<10ms\"\nmax_steps = 10\nwarmup = \"1s\"\nmax_step = \"5s\"\n\n[cost]",
        );
    let o = run(&dir, &suite, &["--estimate"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", support::stderr(&o));
    // One load cell (0.2 + 0.5 + 1 s), one search (10 × 6 s + 2.5 s probe + 1 s), one cost
    // cell (4 × 0.8 s + 1 s): 1.7 + 63.5 + 4.2 = 69.4 s.
    assert!(out.contains("Estimated time: 1m 09s"), "{out}");
    assert!(
        out.contains("capacity: 1 searches for the max rate within p99<10ms"),
        "{out}"
    );
    assert!(
        out.contains("counted at that bound, 1m 03s per search"),
        "{out}"
    );
    assert!(out.contains("cost: 1 measurements"), "{out}");
    assert!(!dir.join("results").exists(), "the estimate runs nothing");
    std::fs::remove_dir_all(&dir).unwrap();
}
