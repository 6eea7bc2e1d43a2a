//! The tests that take the machine alone (`support::alone()`): timing that other load on the
//! machine would spoil. They are in this module so that they run first: libtest starts tests
//! in the order of their names, and `alone::` comes before every module that holds the
//! machine shared. Later, each would wait for the shared holders of the moment, the testbed's
//! suites for a minute and more, with the other test thread idle behind it.

use crate::searches::{CAPACITY, COST};
use crate::support::{
    self, gatebench, read_json as json, run_suite as run, stderr, temp_dir, EchoChild,
};

/// The capacity search against an echo with a hard limit: 4 connections to a backend that
/// holds each request 10 ms carry at most 400 req/s. With `p50<30ms` the search must end
/// between 250 and 420 req/s, bracketed within its precision and checked, and write its record
/// and chart.
#[test]
fn find_max_finds_the_limit_of_a_delayed_echo() {
    let _alone = support::alone();
    let echo = EchoChild::start(&["--delay", "10ms"]);
    let dir = std::env::temp_dir().join(format!("gatebench-find-max-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("cap.json");
    let svg = dir.join("cap.svg");
    // A search the generator itself calls untrustworthy (its thread starved on a loaded
    // machine: verdict `generator_bound`) says so and is run again, up to three times.
    let mut attempt = 0;
    let (o, r) = loop {
        attempt += 1;
        let o = gatebench(&[
            "load",
            &echo.url,
            "-c",
            "4",
            "-t",
            "1",
            "--find-max",
            "--slo",
            "p50<30ms,errors<1%",
            "--start-rate",
            "150",
            "--step-duration",
            "1s",
            "--warmup",
            "300ms",
            "--precision",
            "10",
            "--json",
            json.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        if r["verdict"] != "generator_bound" || attempt == 3 {
            break (o, r);
        }
    };
    let out = String::from_utf8_lossy(&o.stdout);
    if r["verdict"] == "generator_bound" {
        // Three times the generator said its own thread was starved (a machine loaded far
        // beyond its cores): the search is inconclusive, and must say so without overstating.
        let steps = r["steps"].as_array().unwrap();
        let last = steps.last().unwrap();
        assert!(
            !last["generator_warnings"].as_array().unwrap().is_empty(),
            "{out}"
        );
        assert!(r["max_rate"].as_f64().is_none_or(|m| m <= 420.0), "{out}");
        assert!(out.contains("The generator was the bottleneck"), "{out}");
        eprintln!("inconclusive on this machine (the generator was starved three times):\n{out}");
        return;
    }
    assert_eq!(r["verdict"], "found", "{out}");
    let max = r["max_rate"].as_f64().unwrap();
    let failed = r["failed_rate"].as_f64().unwrap();
    assert!((250.0..=420.0).contains(&max), "max {max}: {out}");
    assert!(
        failed > max && (failed - max) / max <= 0.10,
        "{max} .. {failed}"
    );
    let steps = r["steps"].as_array().unwrap();
    let last = steps.last().unwrap();
    assert_eq!(last["phase"], "check");
    assert_eq!(last["rate"].as_f64(), Some(max));
    assert!(out.contains("Max rate within the SLO:"), "{out}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.contains("max within SLO"), "{chart}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `gatebench cost` with an "intermediary" that is an echo holding every answer 20 ms: the
/// added latency at every percentile is about 20 ms with an interval above zero, and the CPU
/// per request of the process given is reported.
#[test]
fn cost_measures_what_an_intermediary_adds() {
    let _alone = support::alone();
    let direct = EchoChild::start(&[]);
    let via = EchoChild::start(&["--delay", "20ms"]);
    let pid = via.child.id().to_string();
    let o = gatebench(&[
        "cost",
        "--direct",
        &direct.url,
        "--via",
        &via.url,
        "--via-pid",
        &pid,
        "-R",
        "100",
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        "1s",
        "--warmup",
        "200ms",
        "--repeats",
        "3",
        "--json",
        "-",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let runs = r["runs"].as_array().unwrap();
    let order: Vec<&str> = runs.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(order, ["direct", "via", "via", "direct", "direct", "via"]);
    let added = r["added"].as_array().unwrap();
    assert_eq!(added.len(), 4);
    for a in added {
        let (ms, low) = (
            a["added_ms"].as_f64().unwrap(),
            a["low_ms"].as_f64().unwrap(),
        );
        assert!(
            ms > 10.0,
            "every percentile is about 20 ms higher through it: {a}"
        );
        // The median is steady even on a loaded machine; the tail's interval may be wide.
        if a["p"].as_f64() == Some(50.0) {
            assert!((15.0..60.0).contains(&ms), "{a}");
            assert!(low > 0.0, "3 against 3 runs 20 ms apart exclude zero: {a}");
        }
    }
    assert!(r["intermediary_cpu_us_per_request"].as_f64().is_some());
    let text = stderr(&o);
    assert!(
        text.contains("Intermediary cost:") && text.contains("p99.9"),
        "{text}"
    );
}

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
