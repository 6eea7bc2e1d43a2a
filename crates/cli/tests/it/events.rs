//! Events in a suite cell, end to end with the real binary: one of two echo back-ends behind
//! the built-in balancer killed and started again during the measurement, each firing stamped
//! on the measurement's clock with what it cost (in the record and in summary.json); and bad
//! events refused before anything runs (exit 2, one line).

use serde_json::Value;

use crate::support::{self, read_json as json, run_suite as run, temp_dir};

const FAILOVER: &str = r#"
[suite]
name = "failover"
# A whole-second warm-up: the events fire on the load's second boundaries.
warmup = "1s"
duration = "5s"

[matrix]
rates = [200]
sizes = [50]

[load]
connections = 32
threads = 1
method = "POST"

[[scenario]]
name = "balance-2"
backend = { serve = "echo --port {port} --threads 1 --delay 50ms", count = 2 }
sut = { serve = "balance --port {port} {upstream_args} --threads 1 --health-interval 100ms --health-rise 1 --health-fall 1" }

[[scenario.event]]
name = "kill"
at = "2s"
backend = 2
action = "kill"

[[scenario.event]]
name = "back"
at = "3s"
backend = 2
action = "start"
"#;

/// Back-end 2 is killed at 2 s and started at 3 s (whole seconds of the load's clock too, after
/// a whole-second warm-up, with whole steady seconds before the kill): both firings are stamped near their offsets
/// and succeed (the start says when the back-end was ready); the start's window has a
/// propagation to backend-2, the new route, within the balancer's health checks; every figure
/// of both windows is in summary.json; the killed back-end and its successor are both
/// recorded as stopped processes.
#[test]
fn a_killed_and_restarted_back_end_is_stamped_and_costed() {
    let _shared = support::shared();
    let dir = temp_dir("events");
    let out_dir = dir.join("out");
    let o = run(&dir, FAILOVER, &["--out", out_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", support::stderr(&o));
    let record = json(&out_dir.join("cells/balance-2_R200_s50_d0_r1/record.json"));
    assert_eq!(record["status"], "ok", "{record:#}");
    let events = record["events"].as_array().expect("an events section");
    assert_eq!(events.len(), 2, "{events:#?}");
    for (e, (name, planned)) in events.iter().zip([("kill", 2.0), ("back", 3.0)]) {
        assert_eq!(e["name"], name);
        assert_eq!(e["ok"], true, "{e:#}");
        let at = e["at_s"].as_f64().unwrap();
        assert!((at - planned).abs() < 0.25, "{name} fired at {at} s: {e:#}");
        assert!(e["cost"]["p99_window_ms"].as_f64().is_some(), "{e:#}");
    }
    assert_eq!(events[0]["action"], "kill backend-2");
    // About 5 POSTs are on back-end 2 when it is killed, and the balancer cannot retry them:
    // they fail at the kill, and every failure of the cell is counted in the kill's window
    // (a second holds what settled in it, even right at its start).
    let outcomes = &record["load"]["measurement"]["outcomes"];
    let failed: u64 = outcomes
        .as_object()
        .unwrap()
        .iter()
        .filter(|(class, _)| *class != "ok" && *class != "in_flight")
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert!(failed > 0, "requests cut by the kill fail: {outcomes}");
    assert_eq!(
        events[0]["cost"]["errors_total"], failed,
        "the kill's window holds every failure: {outcomes} {:#}",
        events[0]
    );
    assert!(events[1]["ready_ms"].as_f64().unwrap() > 0.0);
    let back = &events[1]["cost"];
    assert_eq!(back["new_route"], "backend-2", "{back:#}");
    let propagation = back["propagation_ms"].as_f64().unwrap();
    assert!(
        propagation > 0.0 && propagation < 1500.0,
        "backend-2 served again {propagation} ms after its start: {back:#}"
    );
    let killed: Vec<&Value> = record["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "backend-2")
        .collect();
    assert_eq!(killed.len(), 2, "the killed back-end and the started one");
    assert_ne!(killed[0]["pid"], killed[1]["pid"]);

    let summary = json(&out_dir.join("summary.json"));
    let rows = summary["events"]
        .as_array()
        .expect("summary.json has events");
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["cell"], "balance-2_R200_s50_d0_r1");
        for key in ["errors", "longest_gap_ms", "p99_window_ms", "p99_steady_ms"] {
            assert!(r[key].is_number(), "{key} in {r:#}");
        }
    }
    assert_eq!(rows[1]["new_route"], "backend-2");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("## Events"), "{md}");
    assert!(md.contains("back: start backend-2"), "{md}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_events_exit_2_with_one_line_before_anything_runs() {
    let dir = temp_dir("bad-events");
    let base = FAILOVER
        .split("[[scenario.event]]")
        .next()
        .unwrap()
        .to_owned();
    for (event, want) in [
        (
            "at = \"1s\"\nbackend = 3\naction = \"kill\"",
            "event \"event-1\": backend: no back-end 3 (the scenario starts 2 back-ends",
        ),
        (
            "at = \"6s\"\nsignal = \"HUP\"",
            "event \"event-1\": at 6s is not within the measurement of 5s",
        ),
        (
            "at = \"1s\"\nsignal = \"HUP\"\nrun = \"true\"",
            "event \"event-1\": gives run and signal: one action per event",
        ),
        (
            "at = \"1s\"\nrun = \"kill -HUP {sut_pidd}\"",
            "event \"event-1\": run: unknown placeholder {sut_pidd}",
        ),
        (
            "at = \"1s\"\nbackend = 1\naction = \"pause\"",
            "event \"event-1\": action: \"pause\" is not a back-end action",
        ),
        (
            "at = \"1s\"\nrender = { template = \"missing.txt\" }\nsignal = \"HUP\"",
            "event \"event-1\": render: cannot read",
        ),
        (
            "at = \"1s\"\nrender = { template = \"suite.toml\", to = \"../x\" }",
            "event \"event-1\": render: to = \"../x\" must be a file name",
        ),
    ] {
        let suite = format!("{base}[[scenario.event]]\n{event}\n");
        let o = run(&dir, &suite, &["--out", dir.join("out").to_str().unwrap()]);
        let err = support::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{event}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{event}:\n{err}");
        assert!(!dir.join("out").exists(), "nothing runs for a bad suite");
    }
    let _ = std::fs::remove_dir_all(dir);
}

const RELOAD: &str = r#"
[suite]
name = "reload"
warmup = "500ms"
duration = "4s"

[matrix]
rates = [200]
sizes = [50]

[load]
connections = 4
threads = 1

[[scenario]]
name = "balance-reload"
templates = ["pool.txt"]
backend = { serve = "echo --port {port} --threads 1", count = 2 }
sut = { serve = "balance --port {port} --upstreams-file {cell_dir}/pool.txt --threads 1" }

[[scenario.event]]
name = "same"
at = "1s"
signal = "HUP"

[[scenario.event]]
name = "grow"
at = "2s"
render = { template = "pool-all.txt", to = "pool.txt" }
signal = "HUP"
"#;

/// The balancer starts with back-end 1 alone in its upstreams file. A SIGHUP with the file
/// unchanged at 1 s brings no new route; at 2 s the second form of the file (both back-ends)
/// is rendered over it and the balancer signalled: back-end 2 serves within a second. Neither
/// reload fails a request.
#[test]
fn a_rendered_pool_reaches_the_balancer_on_sighup_without_a_failed_request() {
    let _shared = support::shared();
    let dir = temp_dir("events-reload");
    std::fs::write(dir.join("pool.txt"), "{upstream}\n").unwrap();
    std::fs::write(
        dir.join("pool-all.txt"),
        "# every back-end\n{backends:{url}}\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let o = run(&dir, RELOAD, &["--out", out_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", support::stderr(&o));
    let cell = out_dir.join("cells/balance-reload_R200_s50_d0_r1");
    let record = json(&cell.join("record.json"));
    assert_eq!(record["status"], "ok", "{record:#}");
    let outcomes = &record["load"]["measurement"]["outcomes"];
    let ok = outcomes["ok"].as_u64().unwrap();
    assert!(ok > 500, "{outcomes}");
    for (class, n) in outcomes.as_object().unwrap() {
        if class != "ok" && class != "in_flight" {
            assert_eq!(n, 0, "{class} during reloads: {outcomes}");
        }
    }
    let events = record["events"].as_array().expect("an events section");
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(events.iter().all(|e| e["ok"] == true), "{events:#?}");
    assert!(events[0]["cost"]["new_route"].is_null(), "{:#}", events[0]);
    let grow = &events[1]["cost"];
    assert_eq!(grow["new_route"], "backend-2", "{grow:#}");
    let propagation = grow["propagation_ms"].as_f64().unwrap();
    assert!(
        propagation < 1000.0,
        "backend-2 served {propagation} ms after the reload"
    );
    let pool = std::fs::read_to_string(cell.join("pool.txt")).unwrap();
    assert_eq!(
        pool.lines().filter(|l| l.starts_with("http://")).count(),
        2,
        "{pool}"
    );
    assert!(
        !cell.join("pool-all.txt").exists(),
        "written under its `to` name only"
    );
    let _ = std::fs::remove_dir_all(dir);
}
