//! End to end: `gatebench run` on the tiny example suite with the real binary (a real echo
//! back-end child, real load), then `gatebench report` on its results, and the exit statuses
//! of bad input.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{gatebench_in, temp_dir, text};

const SEED_004_HEADER: &str = "| Scenario Name | Concurrent Users | Message Size (Bytes) | \
Back-end Service Delay (ms) | Error % | Throughput (Requests/sec) | Average Response Time (ms) | \
Standard Deviation of Response Time (ms) | 99th Percentile of Response Time (ms) |";

/// Runs gatebench with `args` in `cwd`.
fn gatebench(args: &[&str], cwd: &Path) -> Output {
    gatebench_in(args, cwd)
}

/// A new user's run: from the suite's directory, the default (relative) results directory or
/// one whose path has a space, a `command` SUT started in its scenario's own `workdir` that
/// reads a template rendered into `{cell_dir}` and is started as `sh -c` with that path.
#[test]
fn a_command_scenario_finds_its_cell_dir_from_its_workdir_with_relative_results() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("relative out");
    let exe = env!("CARGO_BIN_EXE_gatebench");
    std::fs::create_dir_all(tmp.join("conf")).unwrap();
    std::fs::write(tmp.join("conf/echo.args"), "--port {port}\n").unwrap();
    let suite = format!(
        r#"[suite]
name = "relative"
warmup = "0s"
duration = "0.5s"

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[[scenario]]
name = "cmd"
title = "A command SUT with a rendered template"
workdir = "conf"
templates = ["echo.args"]
sut = {{ command = "exec '{exe}' serve echo $(cat {{cell_dir}}/echo.args)" }}
"#
    );
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    for out_arg in [None, Some("results/run 1")] {
        let mut args = vec!["run", "suite.toml"];
        if let Some(o) = out_arg {
            args.extend(["--out", o]);
        }
        let out = gatebench(&args, &tmp);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.success(),
            "--out {out_arg:?}: exit {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("[1/1] cmd_u2_s50_d0_r1: ok"),
            "--out {out_arg:?}: {stderr}"
        );
    }
    // The default directory is results/<stamp>/ under the directory the run started in.
    let stamped: Vec<PathBuf> = std::fs::read_dir(tmp.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("run 1"))
        .collect();
    assert_eq!(stamped.len(), 1, "{stamped:?}");
    for dir in [&stamped[0], &tmp.join("results/run 1")] {
        let rendered = dir.join("cells/cmd_u2_s50_d0_r1/echo.args");
        let text = std::fs::read_to_string(&rendered).unwrap();
        assert!(text.starts_with("--port ") && !text.contains('{'), "{text}");
        assert!(dir.join("cells/cmd_u2_s50_d0_r1/record.json").is_file());
    }
}

#[test]
fn the_tiny_suite_runs_end_to_end_and_reports() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("tiny");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tiny.toml");
    let out_dir = tmp.join("out");
    let out = gatebench(
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &tmp,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    // The plan and its estimate come first, the table at the end.
    let plan = stdout
        .find("Estimated time: ")
        .expect("the plan is printed");
    let table = stdout
        .find(SEED_004_HEADER)
        .expect("the summary table is printed");
    assert!(plan < table);
    assert!(
        stderr.contains("[1/1] backend-alone_u2_s50_d0_r1: ok"),
        "{stderr}"
    );

    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let measurement = md.split("## Warm-up").next().unwrap();
    assert!(measurement.contains(SEED_004_HEADER), "{md}");
    let rows: Vec<&str> = measurement
        .lines()
        .filter(|l| l.starts_with("| Echo back-end alone"))
        .collect();
    assert_eq!(rows.len(), 1, "{md}");
    let cols: Vec<&str> = rows[0].split('|').map(str::trim).collect();
    // | name | users | size | delay | error % | throughput | …
    assert_eq!(&cols[2..6], ["2", "50", "0", "0.00"], "{}", rows[0]);
    let throughput: f64 = cols[6].parse().unwrap();
    assert!(throughput > 0.0, "{}", rows[0]);
    assert!(md.contains("## Warm-up (not part of the results)"));

    let cells: Vec<PathBuf> = std::fs::read_dir(out_dir.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cells.len(), 1);
    for f in [
        "record.json",
        "latency.hlog",
        "samples.csv",
        "backend-1.log",
    ] {
        assert!(cells[0].join(f).is_file(), "{f} in {}", cells[0].display());
    }
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cells[0].join("record.json")).unwrap())
            .unwrap();
    assert_eq!(record["status"], "ok");
    assert_eq!(record["processes"][0]["stopped"], "terminated");
    // The SUT's CPU time over the measurement, read from /proc at its ends, and per response:
    // a real echo under load uses some, and at most what the machine's cores give in the window.
    let m = &record["sut_measurement"];
    let cpu_s = m["cpu_time_s"].as_f64().expect("cpu_time_s");
    let window = record["load"]["measurement"]["duration_s"]
        .as_f64()
        .unwrap();
    let cores = std::thread::available_parallelism().map_or(64, |n| n.get()) as f64;
    assert!(cpu_s > 0.0 && cpu_s <= window * cores * 1.1 + 0.05, "{m}");
    let responses = record["load"]["measurement"]["throughput_rps"]
        .as_f64()
        .unwrap()
        * window;
    let per_request = m["cpu_us_per_request"]
        .as_f64()
        .expect("cpu_us_per_request");
    assert!(
        (per_request - cpu_s * 1e6 / responses.round()).abs() < 1e-6 * per_request,
        "{m}"
    );
    for f in [
        "suite.toml",
        "environment.json",
        "run.json",
        "summary.csv",
        "summary.json",
    ] {
        assert!(out_dir.join(f).is_file(), "{f}");
    }

    // `report` re-renders the same table from the cells.
    std::fs::remove_file(out_dir.join("summary.md")).unwrap();
    let rep = gatebench(&["report", out_dir.to_str().unwrap()], &tmp);
    assert!(rep.status.success(), "{}", text(&rep.stderr));
    assert!(text(&rep.stdout).contains(rows[0]));
    assert!(std::fs::read_to_string(out_dir.join("summary.md"))
        .unwrap()
        .contains(rows[0]));

    // A directory that is not a results directory is refused with exit status 2.
    let bad = gatebench(&["report", tmp.to_str().unwrap()], &tmp);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("not a gatebench results directory"));
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn bad_suites_exit_2_with_one_line_naming_the_key() {
    let tmp = temp_dir("bad");
    std::fs::write(
        tmp.join("suite.toml"),
        "[suite]\nwarmpu = \"5s\"\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
    )
    .unwrap();
    let out = gatebench(&["run", "suite.toml"], &tmp);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("gatebench: suite.toml: unknown key \"warmpu\" in [suite]"),
        "{err}"
    );
    assert!(
        !tmp.join("results").exists(),
        "nothing is written for a bad suite"
    );
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn the_default_suite_estimate_runs_nothing_and_fits_in_five_minutes() {
    let tmp = temp_dir("estimate");
    let out = gatebench(&["run", "--estimate"], &tmp);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("40 cells in 10 scenarios"), "{stdout}");
    for name in [
        "backend-alone",
        "passthrough-h1c-h1c",
        "passthrough-h1-h1",
        "transform-h1c",
        "transform-h1",
        "passthrough-h2-h2",
        "passthrough-h2-h1",
        "passthrough-h2-h1c",
        "downgrade",
        "balance-5",
    ] {
        assert!(stdout.contains(name), "{name} in the plan:\n{stdout}");
    }
    let est = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Estimated time: "))
        .unwrap();
    // Two minutes and some: with a ~3 minute release build, a new user's first command ends
    // within five.
    assert!(est.starts_with("2m "), "{est}");
    assert!(!tmp.join("results").exists());
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn every_scenario_of_the_default_suite_runs_without_errors() {
    let _shared = crate::support::shared();
    // One cell per scenario (10 users, 50 B), short phases: every built-in service, protocol
    // pair and TLS set-up of the main job actually answers, with no failed cell and no error.
    let tmp = temp_dir("default");
    let out_dir = tmp.join("out");
    let out = gatebench(
        &[
            "run",
            "--include",
            "*_u10_s50_*",
            "--warmup",
            "0.2s",
            "--duration",
            "0.6s",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &tmp,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let text = summary.to_string();
    for scenario in [
        "backend-alone",
        "passthrough-h1c-h1c",
        "passthrough-h1-h1",
        "transform-h1c",
        "transform-h1",
        "passthrough-h2-h2",
        "passthrough-h2-h1",
        "passthrough-h2-h1c",
        "downgrade",
        "balance-5",
    ] {
        assert!(text.contains(scenario), "{scenario} missing from {text}");
    }
    assert_eq!(stderr.matches(": ok ·").count(), 10, "{stderr}");
    assert_eq!(stderr.matches("· 0 errors").count(), 10, "{stderr}");
    assert!(!stderr.contains("FAILED"), "{stderr}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A suite with `users` and `rates` runs each scenario under both models: the closed model's
/// cells first, then the open model's, each summarised with its own model (seed 002).
#[test]
fn users_and_rates_in_one_suite_run_both_models() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("both-models");
    let suite = tmp.join("both.toml");
    std::fs::write(
        &suite,
        "[suite]\nwarmup = \"0.2s\"\nduration = \"0.6s\"\n\
         [matrix]\nusers = [2]\nrates = [200]\n\
         [load]\nconnections = 3\n\
         [[scenario]]\nname = \"echo\"\nbackend = { serve = \"echo --port {port}\" }\n",
    )
    .unwrap();
    let out_dir = tmp.join("out");
    let out = gatebench(
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &tmp,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("2 cells in 1 scenarios")
            && stdout.contains("  users 2 · rates 200 req/s · sizes 50 B"),
        "{stdout}"
    );
    assert!(stderr.contains("[1/2] echo_u2_s50_d0_r1: ok"), "{stderr}");
    assert!(stderr.contains("[2/2] echo_R200_s50_d0_r1: ok"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let rows = summary["measurement"].as_array().unwrap();
    let got: Vec<(&str, u64, Option<f64>)> = rows
        .iter()
        .map(|r| {
            (
                r["cell"].as_str().unwrap(),
                r["users"].as_u64().unwrap(),
                r["rate"].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("echo_u2_s50_d0_r1", 2, None),
            ("echo_R200_s50_d0_r1", 3, Some(200.0))
        ]
    );
    // In the measurement's table, the rate cell's row says its model, the users cell's not.
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let rows: Vec<&str> = md
        .split("## Warm-up")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| echo |"))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(
        rows[0].starts_with("| echo | 2 |") && !rows[0].contains("open model"),
        "{md}"
    );
    assert!(
        rows[1].starts_with("| echo | 3 |") && rows[1].contains("open model at 200 req/s"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Seed 002's full form: the seed's wrk2 parameters in both models, its time stated; nothing
/// is installed or started by `--estimate`.
#[test]
fn the_seed_002_estimate_states_both_models_and_its_time() {
    let tmp = temp_dir("seed002");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-002.toml");
    let out = gatebench(&["run", suite.to_str().unwrap(), "--estimate"], &tmp);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("14 cells in 7 scenarios"), "{stdout}");
    assert!(
        stdout.contains("  users 100 · rates 200000 req/s · sizes 50 B"),
        "{stdout}"
    );
    assert!(stdout.contains("0s warm-up + 1m measurement"), "{stdout}");
    assert!(stdout.contains("Estimated time: 14m 14s"), "{stdout}");
    assert!(!tmp.join("results").exists());
    let _ = std::fs::remove_dir_all(tmp);
}

/// Thresholds in a suite: judged per cell (an `abort` one stops that cell's load early and the
/// suite goes on), shown in the summaries and report.html, and exit status 99 when one failed.
#[test]
fn scenario_thresholds_pass_fail_abort_and_set_the_exit_status() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("thresholds");
    let suite = r#"[suite]
name = "thresholds"
warmup = "0s"
duration = "4s"

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[load]
thresholds = ["errors<0.1%"]

[[scenario]]
name = "held"
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "breached"
backend = { serve = "echo --port {port}" }
thresholds = ["p99<0.001ms abort", "errors<0.1%"]
"#;
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(99), "{stdout}\n{stderr}");
    // Both cells ran: a breached threshold is a verdict, not a failed cell.
    assert!(stderr.contains("held_u2_s50_d0_r1: ok"), "{stderr}");
    assert!(stderr.contains("breached_u2_s50_d0_r1: ok"), "{stderr}");
    assert!(
        stderr.contains(
            "thresholds failed in 1 of 2 cells: breached_u2_s50_d0_r1 (FAIL: p99<0.001ms abort ("
        ),
        "{stderr}"
    );

    let out_dir = tmp.join("out");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let measurement = md.split("## Warm-up").next().unwrap();
    let row = |name: &str| {
        measurement
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row for {name}: {md}"))
            .to_owned()
    };
    // The Thresholds column is the one before Flags.
    let cols = |l: &str| {
        l.split('|')
            .map(|c| c.trim().to_owned())
            .collect::<Vec<_>>()
    };
    let held = cols(&row("held"));
    assert_eq!(held[held.len() - 3], "pass", "{md}");
    let breached = cols(&row("breached"));
    let verdict = &breached[breached.len() - 3];
    assert!(
        verdict.starts_with("FAIL: p99<0.001ms abort (p99 ")
            && verdict.ends_with("aborted the run)"),
        "{verdict}"
    );
    // errors<0.1% held in the breached cell too: only the failed one is named.
    assert!(!verdict.contains("errors"), "{verdict}");

    let record = |id: &str| -> serde_json::Value {
        let p = out_dir.join("cells").join(id).join("record.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let b = record("breached_u2_s50_d0_r1");
    let t = &b["load"]["thresholds"];
    assert_eq!(t[0]["threshold"], "p99<0.001ms abort");
    assert_eq!(t[0]["passed"], false);
    assert_eq!(t[0]["aborted"], true);
    assert_eq!(t[1]["passed"], true);
    // Aborted after its first whole second was judged, well before the 4 s measurement ended.
    let measured = b["load"]["measurement"]["duration_s"].as_f64().unwrap();
    assert!(measured < 3.0, "aborted at {measured} s");
    let h = record("held_u2_s50_d0_r1");
    assert_eq!(h["load"]["thresholds"][0]["passed"], true);
    assert!(h["load"]["measurement"]["duration_s"].as_f64().unwrap() > 3.5);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let rows = json["measurement"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["cell"] == "breached_u2_s50_d0_r1" && r["thresholds"][0]["aborted"] == true));
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2 id=\"thresholds\">Thresholds</h2>\n<p>1 of 3 verdicts failed.</p>"));
    // The resolved suite keeps each scenario's own list and runs again as it is.
    let resolved = std::fs::read_to_string(out_dir.join("suite.toml")).unwrap();
    assert!(
        resolved.contains("thresholds = [\"p99<0.001ms abort\", \"errors<0.1%\"]"),
        "{resolved}"
    );
    let again = gatebench(&["run", "out/suite.toml", "--estimate"], &tmp);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let _ = std::fs::remove_dir_all(tmp);
}

/// A threshold that cannot hold is refused before anything runs, naming the scenario.
#[test]
fn thresholds_that_cannot_hold_are_refused_before_the_run() {
    let tmp = temp_dir("bad thresholds");
    let base = "[suite]\nwarmup = \"0s\"\nduration = \"20s\"\n[matrix]\nusers = [2]\n\
                [[scenario]]\nname = \"x\"\nbackend = { serve = \"echo --port {port}\" }\n";
    for (extra, args, message) in [
        (
            "thresholds = [\"p99<<5ms\"]\n",
            &[][..],
            "scenario \"x\": thresholds: threshold 'p99<<5ms'",
        ),
        (
            "thresholds = [\"rate>=0.99*target\"]\n",
            &[],
            "the matrix has users cells",
        ),
        (
            "thresholds = [\"p99<5ms over 10s\"]\n",
            &["--quick"],
            "the window is longer than the measurement (each cell measures 2s)",
        ),
    ] {
        std::fs::write(tmp.join("suite.toml"), format!("{base}{extra}")).unwrap();
        let mut a = vec!["run", "suite.toml"];
        a.extend(args);
        let out = gatebench(&a, &tmp);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(message), "{extra}: {err}");
        assert!(!tmp.join("results").exists(), "nothing is written");
    }
    let _ = std::fs::remove_dir_all(tmp);
}

/// `gatebench run --metrics`: while a suite runs, a scrape shows the load cell in progress
/// with the suite's labels, its SUT's latest sample and the run's progress; an address in use
/// is refused before anything runs.
#[test]
fn a_suite_serves_its_cells_live_figures_for_prometheus() {
    use std::io::{BufRead, BufReader, Read, Write};
    let _shared = crate::support::shared();
    let tmp = temp_dir("suite metrics");
    let suite = r#"[suite]
name = "live"
warmup = "0s"
duration = "3s"

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[[scenario]]
name = "first"
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "second"
backend = { serve = "echo --port {port}" }
gc_format = "go"
gc_log = "gc.log"
"#;
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    // A GC log the second cell follows: this test writes Go's gctrace lines into it while the
    // suite runs (two pauses a line), as a Go SUT would.
    std::fs::write(tmp.join("gc.log"), "").unwrap();
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let (path, writing) = (tmp.join("gc.log"), writing.clone());
        std::thread::spawn(move || {
            let mut log = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                log.write_all(b"gc 7 @0.500s 1%: 0.020+1.0+0.030 ms clock, 0.04+0/0.1/0+0.06 ms cpu, 4->4->1 MB, 5 MB goal, 2 P\n").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        })
    };
    // The same figures pushed by remote write, beside the scrape.
    let sink = gatebench_testkit::PostSink::start("/api/v1/write");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gatebench"))
        .args([
            "run",
            "suite.toml",
            "--out",
            "out",
            "--metrics",
            "127.0.0.1:0",
        ])
        .args(["--metrics-label", "team=edge"])
        .args(["--remote-write", &sink.url])
        .current_dir(&tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("a Metrics: line").unwrap();
        if let Some(rest) = line.strip_prefix("Metrics: http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    // Keep reading stdout so the run never blocks on a full pipe.
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let scrape = || -> String {
        let Ok(mut c) = std::net::TcpStream::connect(&addr) else {
            return String::new();
        };
        let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut body = String::new();
        let _ = c.read_to_string(&mut body);
        body
    };
    // The second cell's own series, once it runs: its labels, its answers counted, and the
    // first cell done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let seen = loop {
        let body = scrape();
        let ok = body.lines().find(|l| {
            l.starts_with("gatebench_requests_total{")
                && l.contains("scenario=\"second\"")
                && l.contains("phase=\"measurement\"")
                && l.contains("outcome=\"ok\"")
                && !l.ends_with(" 0")
        });
        // The SUT's sample of this cell (one a second) is served beside its load.
        let sut = body.lines().any(|l| {
            l.starts_with("gatebench_sut_resident_memory_bytes{")
                && l.contains("scenario=\"second\"")
                && !l.ends_with(" 0")
        });
        // The GC log's pauses, followed while the cell's load runs.
        let gc = body.lines().any(|l| {
            l.starts_with("gatebench_sut_gc_pauses_total{")
                && l.contains("scenario=\"second\"")
                && !l.ends_with(" 0")
        });
        if ok.is_some() && sut && gc {
            break body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never saw the second cell: {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let line = seen
        .lines()
        .find(|l| l.starts_with("gatebench_requests_total{") && l.contains("outcome=\"ok\""))
        .unwrap();
    for label in [
        "team=\"edge\"",
        "suite=\"live\"",
        "cell=\"second_u2_s50_d0_r1\"",
        "users=\"2\"",
        "size_bytes=\"50\"",
        "delay_ms=\"0\"",
        "protocol=\"h1c\"",
        "repeat=\"1\"",
    ] {
        assert!(line.contains(label), "{label} in {line}");
    }
    assert!(seen.contains("state=\"planned\"} 2"), "{seen}");
    assert!(seen.contains("state=\"done\"} 1"), "{seen}");
    assert!(child.wait().unwrap().success());
    let _ = rest.join();
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();

    // The pushes: one a second or so over the run, and the last one after the end carries the
    // whole run (both cells done) and the last cell's counters equal to its record's.
    let posts = sink.posts();
    assert!(posts.len() >= 3, "{} pushes", posts.len());
    let last = gatebench_loadgen::metrics::remote_write::decode(&posts.last().unwrap().1).unwrap();
    let value = |name: &str, with: &[(&str, &str)]| -> f64 {
        last.iter()
            .filter(|(l, _)| {
                l.iter().any(|(k, v)| k == "__name__" && v == name)
                    && with
                        .iter()
                        .all(|(wk, wv)| l.iter().any(|(k, v)| k == wk && v == wv))
            })
            .map(|(_, samples)| samples.last().unwrap().0)
            .sum()
    };
    assert_eq!(value("gatebench_suite_cells", &[("state", "done")]), 2.0);
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.join("out/cells/second_u2_s50_d0_r1/record.json")).unwrap(),
    )
    .unwrap();
    let requests = record["load"]["measurement"]["requests"].as_u64().unwrap();
    assert!(requests > 0);
    assert_eq!(
        value(
            "gatebench_requests_total",
            &[
                ("scenario", "second"),
                ("phase", "measurement"),
                ("team", "edge"),
                ("job", "gatebench")
            ]
        ) as u64,
        requests,
        "every request of the last cell, pushed"
    );

    // An address in use: one line, exit 2, before anything runs.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = taken.local_addr().unwrap().to_string();
    let out = gatebench(
        &["run", "suite.toml", "--out", "out2", "--metrics", &a],
        &tmp,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--metrics: cannot listen on"),
        "{}",
        text(&out.stderr)
    );
    assert!(!tmp.join("out2").exists());
    let out = gatebench(
        &[
            "run",
            "suite.toml",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-label",
            "cell=x",
        ],
        &tmp,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--metrics-label cell: gatebench sets that label itself"));
    let _ = std::fs::remove_dir_all(tmp);
}

/// A scenario that reads its responses as streams: the built-in echo emulates a model (first
/// token after 40 ms, then a token every 10 ms, 12 tokens), the cell's record has the stream
/// figures, summary.md and summary.json a Streams table, report.html the cell's stream plot.
#[test]
fn an_llm_stream_scenario_has_its_stream_figures_in_the_summaries_and_the_report() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("streams");
    let suite = r#"[suite]
name = "streams"
warmup = "0s"
duration = "2s"

[matrix]
users = [4]
sizes = [50]
delays = ["0ms"]

[[scenario]]
name = "llm"
path = "/v1/chat/completions"
stream = "llm"
backend = { serve = "echo --port {port} --chat-first-token 40ms --chat-interval 10ms --chat-tokens 12" }

[[scenario]]
name = "plain"
backend = { serve = "echo --port {port}" }
"#;
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let out_dir = tmp.join("out");
    let record = crate::support::read_json(&out_dir.join("cells/llm_u4_s50_d0_r1/record.json"));
    let stream = &record["load"]["stream"];
    assert_eq!(stream["mode"], "llm", "{record:#}");
    let completed = stream["completed"].as_u64().unwrap();
    // 4 users, about 150 ms a stream, for 2 s.
    assert!(completed >= 20, "{completed} streams: {stream:#}");
    // 12 tokens a completed stream; the streams the run's end cut (started, not completed:
    // all four users, in step, when it fell inside a stream) add the tokens they had by then.
    let started = stream["time_to_first_byte"]["count"].as_u64().unwrap();
    let events = stream["events"].as_u64().unwrap();
    assert!(
        started >= completed && started - completed <= 4,
        "{started} started: {stream:#}"
    );
    assert!(
        (completed * 12..=completed * 12 + (started - completed) * 12).contains(&events),
        "12 tokens a stream: {stream:#}"
    );
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let table = md
        .split("## Streams")
        .nth(1)
        .unwrap_or_else(|| panic!("no Streams table: {md}"));
    let row = table
        .lines()
        .find(|l| l.starts_with("| llm_u4_s50_d0_r1 |"))
        .unwrap_or_else(|| panic!("no stream row: {table}"));
    let cols: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cols[2], "llm (tokens)", "{row}");
    assert_eq!(cols[3], completed.to_string(), "{row}");
    let first_p50: f64 = cols[5].parse().unwrap();
    let between_p50: f64 = cols[7].parse().unwrap();
    assert!(
        (39.0..200.0).contains(&first_p50),
        "first token p50 {first_p50}: {row}"
    );
    assert!(
        (8.0..50.0).contains(&between_p50),
        "between tokens p50 {between_p50}: {row}"
    );
    assert!(!table.contains("| plain_"), "only stream cells: {table}");
    let summary = crate::support::read_json(&out_dir.join("summary.json"));
    let streams = summary["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "{summary:#}");
    assert_eq!(streams[0]["completed"].as_u64(), Some(completed));
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("Streams (llm): time to first token and between tokens"));
    assert!(out_dir.join("plots/llm_u4_s50_d0_r1-stream.svg").is_file());
    // The resolved suite keeps the mode.
    let resolved = std::fs::read_to_string(out_dir.join("suite.toml")).unwrap();
    assert!(resolved.contains("stream = \"llm\""), "{resolved}");
}

#[test]
fn a_stream_scenario_over_http2_or_of_an_unknown_mode_is_refused_before_anything_runs() {
    let tmp = temp_dir("streams-bad");
    for (extra, says) in [
        ("stream = \"tokens\"", "is not a stream mode"),
        (
            "stream = \"sse\"\nprotocols = [\"h2c\"]",
            "HTTP/1.1 (h1c, h1) only, not h2c",
        ),
    ] {
        let suite = format!(
            "[suite]\nname = \"bad\"\n\n[[scenario]]\nname = \"s\"\n{extra}\nbackend = {{ serve = \"echo --port {{port}}\" }}\n"
        );
        std::fs::write(tmp.join("suite.toml"), suite).unwrap();
        let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {err}");
        assert!(err.contains(says), "{extra}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!tmp.join("out").exists(), "nothing ran");
    }
}

/// gRPC scenarios: the echo's gRPC service measured alone, unary and bidirectional; each cell's
/// record has the gRPC record, the summary's rows give calls as requests and its gRPC table the
/// messages, report.html the cell's gRPC plot, and the echo counted every message sent.
#[test]
fn grpc_scenarios_measure_calls_and_messages_into_the_summaries_and_the_report() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("grpc-suite");
    let suite = r#"[suite]
name = "grpc"
warmup = "1s"
duration = "2s"

[matrix]
users = [4]
sizes = [100]
delays = ["0ms"]
protocols = ["h2c"]

[[scenario]]
name = "unary"
grpc = { method = "/gatebench.echo.v1.Echo/Unary", connections = 2 }
backend = { serve = "echo --port {port} --http2" }

[[scenario]]
name = "bidi"
grpc = { method = "/gatebench.echo.v1.Echo/Bidi", kind = "bidi", messages = 20, message_rate = 200 }
backend = { serve = "echo --port {port} --http2" }

[[scenario]]
name = "proxied"
grpc = { method = "/gatebench.echo.v1.Echo/Unary" }
backend = { serve = "echo --port {port} --http2" }
sut = { serve = "proxy --port {port} --http2 --upstream h2c://127.0.0.1:{backend_port}" }
"#;
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let out_dir = tmp.join("out");
    let unary = crate::support::read_json(&out_dir.join("cells/unary_u4_s100_d0_r1/record.json"));
    let g = &unary["grpc"]["grpc"];
    let calls = g["calls_started"].as_u64().unwrap();
    assert!(calls > 100, "{g:#}");
    assert_eq!(g["calls"]["ok"].as_u64(), Some(calls), "{g:#}");
    assert_eq!(unary["grpc"]["config"]["connections"], 2);
    assert_eq!(unary["grpc"]["config"]["concurrency"], 2);
    // A Payload of 100 bytes: tag, one length byte, the body.
    assert_eq!(unary["grpc"]["config"]["message_bytes"], 102);
    assert!(
        unary["sut_measurement"]["cpu_mean_percent"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{unary:#}"
    );
    let bidi = crate::support::read_json(&out_dir.join("cells/bidi_u4_s100_d0_r1/record.json"));
    let b = &bidi["grpc"]["grpc"];
    assert_eq!(b["messages_sent"], b["messages_received"], "{b:#}");
    assert_eq!(b["messages"]["ok"], b["messages_sent"], "{b:#}");
    assert!(
        b["message_latency"]["count"].as_u64().unwrap() > 100,
        "{b:#}"
    );

    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let measurement = md.split("## Warm-up").next().unwrap();
    let row = measurement
        .lines()
        .find(|l| l.starts_with("| unary |"))
        .unwrap_or_else(|| panic!("no unary row: {md}"));
    let cols: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cols[5], "0.00", "no errors: {row}");
    let rps: f64 = cols[6].parse().unwrap();
    assert!(
        (rps - g["calls_per_s"].as_f64().unwrap()).abs() < 0.01,
        "{row}"
    );
    assert!(row.contains("gRPC unary"), "{row}");
    let table = md
        .split("## gRPC")
        .nth(1)
        .unwrap_or_else(|| panic!("no gRPC table: {md}"));
    let bidi_row = table
        .lines()
        .find(|l| l.starts_with("| bidi_u4_s100_d0_r1 |"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(bidi_row.contains("| bidi |"), "{bidi_row}");
    // Behind the proxy, the echo's own counts over the measurement: the calls arrived as
    // HTTP/2 streams on a few kept connections, not a connection per call. (How many the proxy
    // opens in the window varies with its threads and its pool: 0 to 4 were seen.)
    let proxied =
        crate::support::read_json(&out_dir.join("cells/proxied_u4_s100_d0_r1/record.json"));
    let origin = &proxied["origin"]["backends"][0];
    let streams = origin["h2_streams"].as_u64().unwrap();
    assert!(streams > 100, "{origin:#}");
    assert!(
        origin["connections_opened"].as_u64().unwrap() * 100 < streams,
        "connections are kept, not one per call: {origin:#}"
    );
    let summary = crate::support::read_json(&out_dir.join("summary.json"));
    assert_eq!(summary["grpc"].as_array().unwrap().len(), 3, "{summary:#}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("gRPC latency by percentile"), "no gRPC plot");
    assert!(out_dir.join("plots/bidi_u4_s100_d0_r1-grpc.svg").is_file());
    let resolved = std::fs::read_to_string(out_dir.join("suite.toml")).unwrap();
    assert!(resolved.contains("kind = \"bidi\""), "{resolved}");
    // compare takes a gRPC cell's calls as a load cell's requests (not as a failed cell).
    let out = gatebench(&["compare", "out", "out"], &tmp);
    let report = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        text(&out.stderr)
    );
    let throughput = report
        .split("### Throughput")
        .nth(1)
        .unwrap_or_else(|| panic!("{report}"));
    assert!(throughput.contains("| unary_u4_s100_d0 |"), "{report}");
    assert!(!report.contains("failed"), "{report}");
}

/// WebSocket scenarios: users are connections held for the measurement, a rate is connection
/// opens per second; straight to the echo, and through the proxy's tunnel with a message count
/// per connection. Messages stand for requests in the rows, a WebSocket table and plots add
/// what only they have, and compare reads the cells as load cells.
#[test]
fn websocket_scenarios_hold_or_open_connections_into_the_summaries_and_the_report() {
    let _shared = crate::support::shared();
    let tmp = temp_dir("ws-suite");
    let suite = r#"[suite]
name = "ws"
warmup = "500ms"
duration = "1s"

[matrix]
users = [3]
rates = [20]
sizes = [100]
delays = ["0ms"]
protocols = ["h1c"]

[[scenario]]
name = "direct"
websocket = {}
thresholds = ["errors<1%", "p99<10s"]
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "proxied"
websocket = { path = "/ws", messages = 5, binary = true }
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --upstream http://127.0.0.1:{backend_port}" }

[[scenario]]
name = "over-h2"
protocols = ["h2c"]
websocket = { messages = 5 }
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --http2 --upstream http://127.0.0.1:{backend_port}" }
"#;
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let out_dir = tmp.join("out");
    let record =
        |id: &str| crate::support::read_json(&out_dir.join(format!("cells/{id}/record.json")));
    // Three connections held, one message in flight on each, every one back.
    let held = record("direct_u3_s100_d0_r1");
    let w = &held["websocket"]["websocket"];
    assert_eq!(w["connections_opened"], 3, "{w:#}");
    let sent = w["messages_sent"].as_u64().unwrap();
    assert!(sent > 100, "{w:#}");
    assert_eq!(w["messages_received"].as_u64(), Some(sent), "{w:#}");
    assert_eq!(w["close_codes"]["1000"], 3, "{w:#}");
    assert_eq!(held["websocket"]["config"]["size_bytes"], 100);
    // 20 opens a second for 1 s, held to the end.
    let opened = record("direct_R20_s100_d0_r1");
    let w = &opened["websocket"]["websocket"];
    assert_eq!(w["connections_opened"], 20, "{w:#}");
    assert_eq!(opened["websocket"]["config"]["connect_rate"], 20.0);
    // Through the proxy: five binary messages a connection, then a clean close.
    let churned = record("proxied_R20_s100_d0_r1");
    let w = &churned["websocket"]["websocket"];
    assert_eq!(w["connections_opened"], 20, "{w:#}");
    assert_eq!(w["connections_closed"], 20, "{w:#}");
    assert_eq!(w["messages_received"], 100, "{w:#}");
    assert_eq!(churned["websocket"]["config"]["binary"], true);
    let w = &record("proxied_u3_s100_d0_r1")["websocket"]["websocket"];
    assert_eq!(w["messages_received"], 15, "{w:#}");
    // Over HTTP/2 (RFC 8441's extended CONNECT through the proxy to the echo's HTTP/1.1).
    let h2 = record("over-h2_R20_s100_d0_r1");
    let w = &h2["websocket"]["websocket"];
    assert_eq!(w["connections_opened"], 20, "{w:#}");
    assert_eq!(w["messages_received"], 100, "{w:#}");

    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let measurement = md.split("## Warm-up").next().unwrap();
    let row = measurement
        .lines()
        .find(|l| l.starts_with("| direct |") && l.contains("| 3 |"))
        .unwrap_or_else(|| panic!("no direct row: {md}"));
    let cols: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cols[5], "0.00", "no errors: {row}");
    let per_s: f64 = cols[6].parse().unwrap();
    let w = &held["websocket"]["websocket"];
    assert!(
        (per_s - w["messages_per_s"].as_f64().unwrap()).abs() < 0.01,
        "{row}"
    );
    assert!(row.contains("WebSocket"), "{row}");
    assert!(row.contains("| pass |"), "the thresholds held: {row}");
    let table = md
        .split("## WebSocket")
        .nth(1)
        .unwrap_or_else(|| panic!("no WebSocket table: {md}"));
    let churn_row = table
        .lines()
        .find(|l| l.starts_with("| proxied_R20_s100_d0_r1 |"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(churn_row.contains("| 20 | 0 / 0 |"), "{churn_row}");
    let summary = crate::support::read_json(&out_dir.join("summary.json"));
    assert_eq!(
        summary["websocket"].as_array().unwrap().len(),
        6,
        "{summary:#}"
    );
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("WebSocket latency by percentile"),
        "no WebSocket plot"
    );
    assert!(out_dir
        .join("plots/direct_u3_s100_d0_r1-websocket.svg")
        .is_file());
    let resolved = std::fs::read_to_string(out_dir.join("suite.toml")).unwrap();
    assert!(resolved.contains("messages = 5"), "{resolved}");
    let out = gatebench(&["compare", "out", "out"], &tmp);
    let report = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        text(&out.stderr)
    );
    assert!(report.contains("| direct_u3_s100_d0 |"), "{report}");
    assert!(!report.contains("failed"), "{report}");
    // What a WebSocket scenario cannot do is refused before anything runs.
    for (extra, says) in [
        (
            "stream = \"sse\"",
            "stream cannot be used in a WebSocket scenario yet",
        ),
        (
            "thresholds = [\"p99<5ms over 1s\"]",
            "over and abort cannot be used in a WebSocket scenario yet",
        ),
        (
            "grpc = { method = \"/a.B/C\" }",
            "grpc and websocket cannot both be set",
        ),
    ] {
        let suite = format!(
            "[suite]\nname = \"bad\"\n\n[[scenario]]\nname = \"w\"\n{extra}\nwebsocket = {{}}\nbackend = {{ serve = \"echo --port {{port}}\" }}\n"
        );
        std::fs::write(tmp.join("bad.toml"), suite).unwrap();
        let out = gatebench(&["run", "bad.toml", "--out", "bad"], &tmp);
        assert_eq!(out.status.code(), Some(2), "{extra}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(says),
            "{extra}: {}",
            text(&out.stderr)
        );
        assert!(!tmp.join("bad").exists(), "nothing ran");
    }
}

#[test]
fn a_grpc_scenario_over_http1_or_with_what_it_cannot_do_is_refused_before_anything_runs() {
    let tmp = temp_dir("grpc-bad");
    for (extra, says) in [
        (
            "protocols = [\"h1c\"]",
            "gRPC runs over HTTP/2 (protocols h2c, h2), not h1c",
        ),
        (
            "protocols = [\"h2c\"]\nstream = \"sse\"",
            "HTTP/1.1 (h1c, h1) only",
        ),
        (
            "protocols = [\"h2c\"]\nthresholds = [\"p99<5ms abort\"]",
            "over and abort cannot be used in a gRPC scenario yet",
        ),
    ] {
        let suite = format!(
            "[suite]\nname = \"bad\"\n\n[[scenario]]\nname = \"g\"\n{extra}\ngrpc = {{ method = \"/a.B/C\" }}\nbackend = {{ serve = \"echo --port {{port}} --http2\" }}\n"
        );
        std::fs::write(tmp.join("suite.toml"), suite).unwrap();
        let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {err}");
        assert!(err.contains(says), "{extra}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let suite = "[suite]\nname = \"bad\"\n\n[matrix]\nusers = [3]\nprotocols = [\"h2c\"]\n\n[[scenario]]\nname = \"g\"\ngrpc = { method = \"/a.B/C\", connections = 2 }\nbackend = { serve = \"echo --port {port} --http2\" }\n";
    std::fs::write(tmp.join("suite.toml"), suite).unwrap();
    let out = gatebench(&["run", "suite.toml", "--out", "out"], &tmp);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("2 does not divide 3 users"),
        "{}",
        text(&out.stderr)
    );
}
