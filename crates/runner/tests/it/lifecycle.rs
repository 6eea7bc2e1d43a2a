//! The lifecycle of cells and runs, with a fake launcher and a fake driver: what starts in
//! which order with which arguments, that everything is stopped on every path, and what is
//! written to the results directory.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use gatebench_model::{CellRecord, CellStatus};
use gatebench_runner::cell::{run_cell, CellContext, CellEvent, Phase};
use gatebench_runner::pin::Placement;
use gatebench_runner::run::{Observer, Progress, Quiet};
use gatebench_runner::{prepare, run_suite, Plan, ResultsDir, RunSettings, RunnerError, Suite};

use crate::support::{suite, temp_dir, FakeDriver, FakeLauncher};

const PROXY: &str = r#"
[suite]
warmup = "1s"
duration = "2s"

[matrix]
users = [7]
sizes = [64]
delays = ["20ms"]

[[scenario]]
name = "proxy"
title = "Passthrough"
backend = { serve = "echo --port {port} --delay {delay} {protocol_flags}", count = 2 }
sut = { serve = "balance --port {port} {upstream_args}" }
"#;

struct Cell {
    calls: Vec<String>,
    record: CellRecord,
    phases: Vec<Phase>,
    hlog: Vec<u8>,
    timeline: String,
}

fn run_one(s: &Suite, launcher: &mut FakeLauncher, driver: &mut FakeDriver) -> Cell {
    let dir = temp_dir("cell");
    let plan = Plan::new(s, &[], &[]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ctx = CellContext {
        metrics: None,
        suite: s,
        exe: Path::new("/opt/gatebench"),
        cell_dir: &dir,
        placement: &Placement::default(),
        stop: &stop,
        setup_failure: None,
        order: 1,
        hosts: &Default::default(),
    };
    let mut phases = Vec::new();
    let out = run_cell(&ctx, &plan.cells[0], launcher, driver, &mut |e| {
        if let CellEvent::Phase(p) = e {
            phases.push(p)
        }
    });
    assert!(!out.interrupted);
    let mut calls = launcher.calls.lock().unwrap().clone();
    calls.extend(driver.calls.lock().unwrap().iter().cloned());
    let _ = std::fs::remove_dir_all(dir);
    Cell {
        calls,
        record: out.record,
        phases,
        hlog: out.hlog,
        timeline: out.timeline_csv.unwrap_or_default(),
    }
}

/// timeline.csv keeps the load's last, partial second (its rate is over its true length) and
/// leaves out the nearly empty interval the generator reports as its workers stop, which starts
/// at the load's end: drawn, it made every time-series plot end in zero throughput and p99.
#[test]
fn the_timeline_ends_with_the_loads_last_second_not_an_empty_one_after_it() {
    let rows = |intervals: Vec<(u64, f64, u64)>, duration: &str| -> Vec<String> {
        let s = suite(&PROXY.replace("duration = \"2s\"", &format!("duration = \"{duration}\"")));
        let mut l = FakeLauncher::default();
        let mut d = FakeDriver {
            intervals,
            ..FakeDriver::default()
        };
        let c = run_one(&s, &mut l, &mut d);
        assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
        c.timeline.lines().skip(1).map(str::to_owned).collect()
    };
    // 1 s + 2 s: three whole seconds, then 2 ms with nothing while the workers stop.
    let whole = rows(
        vec![
            (0, 1.0, 1000),
            (1, 1.0, 1000),
            (2, 1.0, 1000),
            (3, 0.002, 0),
        ],
        "2s",
    );
    assert_eq!(whole.len(), 3, "{whole:?}");
    assert!(whole[2].ends_with(",1000,0,1000.0,1.000"), "{whole:?}");
    // 1 s + 1.3 s: the last second is 0.3 s long with 300 responses, 1000 per second.
    let partial = rows(vec![(0, 1.0, 1000), (1, 1.0, 1000), (2, 0.3, 300)], "1.3s");
    assert_eq!(partial.len(), 3, "{partial:?}");
    assert!(partial[2].ends_with(",300,0,1000.0,1.000"), "{partial:?}");
}

/// With a request count the load's end is known only afterwards: the interval reported after
/// it is still left out, the last partial second kept.
#[test]
fn a_request_count_cell_stops_on_the_count_and_keeps_its_timeline_to_the_end() {
    let s = suite(&PROXY.replace("duration = \"2s\"", "requests = 1300"));
    assert_eq!(s.requests, Some(1300));
    assert!(!s.duration_bound);
    let mut l = FakeLauncher::default();
    // The fake answers 1000 requests/s: 1 s warm-up, 1.3 s for 1300 requests, then 2 ms.
    let mut d = FakeDriver {
        intervals: vec![(0, 1.0, 1000), (1, 1.0, 1000), (2, 0.3, 300), (3, 0.002, 0)],
        ..FakeDriver::default()
    };
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
    let config = d.configs.lock().unwrap()[0].clone();
    assert_eq!(config.stop.requests, Some(1300));
    assert_eq!(config.stop.duration, None);
    assert_eq!(c.record.cell.requests, Some(1300));
    assert_eq!(c.record.cell.duration_s, 0.0);
    let rows: Vec<&str> = c.timeline.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[2].ends_with(",300,0,1000.0,1.000"), "{rows:?}");
}

/// A `rates` program runs as the cell's arrival (Poisson with the suite's seed), the record
/// holds the program and its mean rate, and timeline.csv gains the target rate of each
/// second; a plain rate keeps the timeline's old columns.
#[test]
fn a_rate_program_cell_runs_the_program_and_its_timeline_has_the_target_rate() {
    use gatebench_loadgen::{Arrival, ArrivalProgram, RateProgram, Spacing};
    let text = PROXY.replace("users = [7]", "rates = [\"steps:1k,2k/1s\"]")
        + "\n[load]\narrival = \"poisson\"\nseed = 7\nconnections = 3\n";
    let s = suite(&text);
    let mut l = FakeLauncher::default();
    let mut d = FakeDriver {
        intervals: vec![(0, 1.0, 1000), (1, 1.0, 1000), (2, 1.0, 1900)],
        ..FakeDriver::default()
    };
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
    assert_eq!(c.record.cell.id, "proxy_Rsteps-1000-2000-1s_s64_d20_r1");
    let config = d.configs.lock().unwrap()[0].clone();
    assert_eq!(config.connections, 3);
    assert_eq!(
        config.arrival,
        Arrival::Program(ArrivalProgram {
            rate: RateProgram::Steps {
                rates: vec![1000.0, 2000.0],
                every: std::time::Duration::from_secs(1),
            },
            spacing: Spacing::Poisson { seed: 7 },
        })
    );
    assert_eq!(c.record.cell.program.as_deref(), Some("steps:1000,2000/1s"));
    assert_eq!(
        c.record.cell.rate,
        Some(1500.0),
        "the mean over the 2 s measured"
    );
    assert_eq!(c.record.cell.users, 3);
    let lines: Vec<&str> = c.timeline.lines().collect();
    assert_eq!(
        lines[0],
        "t_s,window,responses,errors,rps,p99_ms,target_rate"
    );
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines[1].ends_with(",warmup,1000,0,1000.0,1.000,1000.0"),
        "{lines:?}"
    );
    assert!(
        lines[2].ends_with(",measurement,1000,0,1000.0,1.000,1000.0"),
        "{lines:?}"
    );
    assert!(
        lines[3].ends_with(",measurement,1900,0,1900.0,1.000,2000.0"),
        "{lines:?}"
    );

    // A plain rate with even spacing: the constant open model, the timeline as before.
    let s = suite(&PROXY.replace("users = [7]", "rates = [5000]"));
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.cell.id, "proxy_R5000_s64_d20_r1");
    assert_eq!(
        d.configs.lock().unwrap()[0].arrival,
        Arrival::Open { rate: 5000.0 }
    );
    assert_eq!(c.record.cell.program, None);
    assert_eq!(
        c.timeline.lines().next(),
        Some("t_s,window,responses,errors,rps,p99_ms")
    );
}

/// A scenario's own method, path and declared status reach the probe and the load.
#[test]
fn a_scenarios_method_path_and_expected_status_reach_the_load() {
    let text = r#"
[load]
method = "POST"
path = "/echo"

[[scenario]]
name = "error"
method = "GET"
path = "/error"
expect_status = 500
keepalive = false
backend = { serve = "echo --port {port}" }
"#;
    let s = suite(text);
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
    let config = d.configs.lock().unwrap()[0].clone();
    assert_eq!(config.request().method(), "GET");
    assert_eq!(config.target.path_and_query, "/error");
    assert_eq!(config.request().expected_status(), Some(500));
    assert_eq!(
        config.request().outcome_of(500),
        gatebench_model::Outcome::Ok
    );
    assert!(!config.verify, "a GET has no body to echo");
    assert!(!config.keepalive);
    assert!(config.request().body().is_empty());
}

/// `{backends:…}` gives an nginx upstream block one line per back-end, and a command line one
/// word per back-end.
#[test]
fn a_template_lists_every_backend_on_its_own_line() {
    let dir = temp_dir("backend-list");
    std::fs::write(
        dir.join("lb.conf"),
        "upstream b {\n    {backends:server 127.0.0.1:{port};}\n}\nlisten {port};\n",
    )
    .unwrap();
    let text = r#"
[[scenario]]
name = "lb"
templates = ["lb.conf"]
backend = { serve = "echo --port {port}", count = 3 }
sut = { command = "lb {backends:-b {index}={url}}" }
"#;
    let s = Suite::from_toml("suite.toml", &dir, text).unwrap();
    let plan = Plan::new(&s, &[], &[]).unwrap();
    let cell_dir = dir.join("cell");
    std::fs::create_dir_all(&cell_dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ctx = CellContext {
        metrics: None,
        suite: &s,
        exe: Path::new("/opt/gatebench"),
        cell_dir: &cell_dir,
        placement: &Placement::default(),
        stop: &stop,
        setup_failure: None,
        order: 1,
        hosts: &Default::default(),
    };
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let out = run_cell(&ctx, &plan.cells[0], &mut l, &mut d, &mut |_| {});
    assert_eq!(out.record.status, CellStatus::Ok, "{:?}", out.record.reason);
    let ports: Vec<String> = out.record.processes[..3]
        .iter()
        .map(|p| p.command[4].clone())
        .collect();
    let conf = std::fs::read_to_string(cell_dir.join("lb.conf")).unwrap();
    let sut_port = d.configs.lock().unwrap()[0].target.addr.port();
    assert_eq!(
        conf,
        format!(
            "upstream b {{\n    server 127.0.0.1:{};\n    server 127.0.0.1:{};\n    server 127.0.0.1:{};\n}}\nlisten {sut_port};\n",
            ports[0], ports[1], ports[2]
        )
    );
    assert_eq!(
        out.record.processes[3].command[2],
        format!(
            "lb -b 1=http://127.0.0.1:{} -b 2=http://127.0.0.1:{} -b 3=http://127.0.0.1:{}",
            ports[0], ports[1], ports[2]
        )
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cell_starts_backends_then_the_sut_and_stops_them_in_reverse() {
    let s = suite(PROXY);
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
    let launches: Vec<&String> = c.calls.iter().filter(|c| c.starts_with("launch")).collect();
    assert_eq!(launches.len(), 3);
    // Backends first, with the cell's delay; then the SUT pointed at both of them.
    let port = |s: &str| -> String {
        s.split("--port ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_owned()
    };
    assert!(
        launches[0].starts_with("launch backend-1 serve echo --port "),
        "{}",
        launches[0]
    );
    // Behind an intermediary, a built-in echo counts what it sees (`--stats`) for the cell's
    // upstream figures.
    assert!(
        launches[0].ends_with("--delay 20ms --stats"),
        "{}",
        launches[0]
    );
    assert!(launches[1].starts_with("launch backend-2 serve echo"));
    let (p1, p2) = (port(launches[0]), port(launches[1]));
    assert_ne!(p1, p2);
    assert!(launches[2].starts_with("launch sut serve balance --port "));
    assert!(launches[2].ends_with(&format!(
        "--upstream http://127.0.0.1:{p1} --upstream http://127.0.0.1:{p2}"
    )));
    // The load goes to the SUT, with the cell's users; verified first.
    let sut_port = port(launches[2]);
    let verify = c
        .calls
        .iter()
        .position(|x| x.starts_with("verify"))
        .unwrap();
    let load = c.calls.iter().position(|x| x.starts_with("load")).unwrap();
    assert_eq!(
        c.calls[verify],
        format!("verify http://127.0.0.1:{sut_port}/")
    );
    assert_eq!(
        c.calls[load],
        format!("load http://127.0.0.1:{sut_port}/ -c 7")
    );
    // Everything stopped, the SUT first.
    let stops: Vec<&str> = c
        .calls
        .iter()
        .filter(|c| c.starts_with("stop"))
        .map(String::as_str)
        .collect();
    assert_eq!(stops, ["stop sut", "stop backend-2", "stop backend-1"]);
    assert_eq!(
        c.phases,
        [
            Phase::Starting,
            Phase::Verifying,
            Phase::WarmingUp,
            Phase::Measuring,
            Phase::Stopping
        ]
    );
    // The record holds the parameters, the processes and the load.
    let r = &c.record;
    assert_eq!(r.cell.id, "proxy_u7_s64_d20_r1");
    assert_eq!(
        (r.cell.users, r.cell.size_bytes, r.cell.delay_ms),
        (7, 64, 20.0)
    );
    assert_eq!(r.processes.len(), 3);
    assert_eq!(r.processes[0].name, "backend-1");
    assert_eq!(r.processes[0].command[0], "/opt/gatebench");
    assert!(r.processes.iter().all(|p| p.stopped == "terminated"));
    let load = r.load.as_ref().unwrap();
    assert_eq!(load.config.method, "POST");
    assert_eq!(load.config.body_bytes, 64);
    assert!(load.config.verify);
    assert!(!c.hlog.is_empty());
}

#[test]
fn a_process_that_exits_fails_the_cell_with_its_last_words_and_the_rest_is_stopped() {
    let s = suite(PROXY);
    let mut l = FakeLauncher {
        exits: vec![(
            "sut".into(),
            "gatebench: invalid value 'balance' for '<SERVICE>' (see --help)".into(),
        )],
        ..Default::default()
    };
    let mut d = FakeDriver::default();
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Failed);
    let reason = c.record.reason.unwrap();
    assert!(
        reason.starts_with("sut (gatebench serve balance) exited with status 2 before it was ready: gatebench: invalid value 'balance'"),
        "{reason}"
    );
    assert!(reason.ends_with("does not support it yet"), "{reason}");
    assert!(!c.calls.iter().any(|x| x.starts_with("load")));
    assert_eq!(c.calls.iter().filter(|x| x.starts_with("stop")).count(), 3);
}

#[test]
fn a_wrong_answer_fails_the_cell_before_the_load() {
    let s = suite(PROXY);
    let mut l = FakeLauncher::default();
    let mut d = FakeDriver {
        verify_fails: Some(
            "probe of http://127.0.0.1:1/ failed: the target answered with 404".into(),
        ),
        ..Default::default()
    };
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Failed);
    assert_eq!(
        c.record.reason.as_deref(),
        Some("verification failed: probe of http://127.0.0.1:1/ failed: the target answered with 404")
    );
    assert!(c.record.load.is_none());
    assert!(!c.calls.iter().any(|x| x.starts_with("load")));
    assert_eq!(c.calls.iter().filter(|x| x.starts_with("stop")).count(), 3);
}

#[test]
fn the_protocol_reaches_the_services_flags_and_the_load() {
    let text = PROXY.replace("title = \"Passthrough\"", "protocols = [\"h2\"]");
    let s = suite(&text.replace("count = 2 }", "count = 2, protocol = \"h1\" }"));
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let c = run_one(&s, &mut l, &mut d);
    assert_eq!(c.record.status, CellStatus::Ok, "{:?}", c.record.reason);
    assert_eq!(c.record.cell.id, "proxy_u7_s64_d20_r1");
    assert_eq!(c.record.cell.protocol, "h2");
    // Backends listen with their own protocol (h1: TLS); the SUT is reached over h2.
    assert!(
        c.calls[0].ends_with("--delay 20ms --tls --stats"),
        "{}",
        c.calls[0]
    );
    assert!(
        c.calls[2].contains("--upstream https://127.0.0.1:"),
        "{}",
        c.calls[2]
    );
    let load = c.calls.iter().find(|x| x.starts_with("load")).unwrap();
    assert!(load.starts_with("load https://127.0.0.1:"), "{load}");
    assert_eq!(c.record.load.unwrap().config.protocol, "h2");
}

#[test]
fn a_command_scenario_runs_through_sh_with_placeholders_and_templates() {
    let dir = temp_dir("templates");
    std::fs::write(
        dir.join("proxy.conf"),
        "upstream u { server 127.0.0.1:{backend_port}; }\nserver { listen 127.0.0.1:{port}; }\n",
    )
    .unwrap();
    let text = r#"
[[scenario]]
name = "ext"
templates = ["proxy.conf"]
backend = { serve = "echo --port {port}" }
sut = { command = "proxyd -c {cell_dir}/proxy.conf -p {port}", ready = "http://127.0.0.1:{port}/health" }
"#;
    let s = Suite::from_toml("suite.toml", &dir, text).unwrap();
    let plan = Plan::new(&s, &[], &[]).unwrap();
    let cell_dir = dir.join("cell");
    std::fs::create_dir_all(&cell_dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ctx = CellContext {
        metrics: None,
        suite: &s,
        exe: Path::new("/opt/gatebench"),
        cell_dir: &cell_dir,
        placement: &Placement::default(),
        stop: &stop,
        setup_failure: None,
        order: 1,
        hosts: &Default::default(),
    };
    let (mut l, mut d) = (FakeLauncher::default(), FakeDriver::default());
    let out = run_cell(&ctx, &plan.cells[0], &mut l, &mut d, &mut |_| {});
    assert_eq!(out.record.status, CellStatus::Ok, "{:?}", out.record.reason);
    let sut = &out.record.processes[1];
    assert_eq!(sut.command[0], "sh");
    assert_eq!(sut.command[1], "-c");
    let conf = std::fs::read_to_string(cell_dir.join("proxy.conf")).unwrap();
    let backend_port = out.record.processes[0].command[4].clone();
    assert!(
        conf.contains(&format!("server 127.0.0.1:{backend_port};")),
        "{conf}"
    );
    assert!(
        conf.starts_with("upstream u { "),
        "braces of the config kept: {conf}"
    );
    let listen = conf
        .split("listen 127.0.0.1:")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    // The cell directory's path is quoted for the shell: this one has parentheses.
    assert_eq!(
        sut.command[2],
        format!("proxyd -c '{}'/proxy.conf -p {listen}", cell_dir.display())
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[derive(Default)]
struct Recorder {
    started: Vec<String>,
    finished: Vec<(String, usize)>,
    setups: Vec<String>,
}

impl Observer for Recorder {
    fn setup_finished(&mut self, scenario: &str, result: &Result<(), RunnerError>) {
        self.setups.push(format!("{scenario}: {result:?}"));
    }
    fn cell_started(&mut self, p: &Progress<'_>) {
        self.started
            .push(format!("{}/{} {}", p.index, p.total, p.cell.id));
    }
    fn cell_finished(
        &mut self,
        _p: &Progress<'_>,
        record: &CellRecord,
        files: &gatebench_results::CellFiles<'_>,
        results: &ResultsDir,
        all: &[CellRecord],
    ) -> Result<(), RunnerError> {
        // The cell's files are on disk when the observer hears of it, and its side files are
        // handed over as written.
        let cell = results.path().join("cells").join(&record.cell.id);
        let rec = cell.join("record.json");
        assert!(rec.is_file(), "{}", rec.display());
        if let Some(samples) = files.samples_csv {
            assert_eq!(
                std::fs::read_to_string(cell.join("samples.csv")).unwrap(),
                samples
            );
        }
        assert_eq!(
            std::fs::read(cell.join("latency.hlog")).unwrap_or_default(),
            files.hlog.unwrap_or_default()
        );
        self.finished.push((record.cell.id.clone(), all.len()));
        Ok(())
    }
}

const TWO: &str = r#"
[suite]
name = "two"
warmup = "0s"
duration = "1s"

[matrix]
users = [1, 2]

[[scenario]]
name = "echo"
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "ext"
setup = "install ext"
sut = { command = "ext --port {port}" }
"#;

fn settings(stop: Arc<AtomicBool>) -> RunSettings {
    RunSettings {
        metrics: None,
        exe: "/opt/gatebench".into(),
        stop,
        placement: Placement::default(),
        hosts: Default::default(),
        until_stable: None,
    }
}

/// `--until-stable`: a steady cell stops at the fewest repeats that bound its median; a noisy
/// one runs to the cap and is reported unsettled; the added repeats are planned in run.json.
#[test]
fn until_stable_repeats_a_cell_until_its_median_settles_or_the_cap() {
    let s = suite(&TWO.replace("users = [1, 2]", "users = [1]"));
    let plan = Plan::new(&s, &["echo*".to_owned()], &[]).unwrap();
    assert_eq!(plan.cells.len(), 1);
    let how = gatebench_runner::settle::UntilStable {
        bound: 0.02,
        confidence: 0.95,
        max_repeats: 9,
    };
    for (throughputs, repeats, settled) in [
        (vec![1000.0, 1001.0, 999.0, 1000.5, 999.5, 1000.2], 6, true),
        (vec![1000.0, 1300.0, 800.0], 9, false),
    ] {
        let root = temp_dir("until-stable");
        let dir = ResultsDir::create(&root.join("out")).unwrap();
        prepare(&s, &plan, &dir).unwrap();
        let mut settings = settings(Arc::new(AtomicBool::new(false)));
        settings.until_stable = Some(how);
        let mut d = FakeDriver {
            throughputs,
            ..FakeDriver::default()
        };
        let run = run_suite(
            &s,
            &plan,
            &dir,
            &settings,
            &mut FakeLauncher::default(),
            &mut d,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!(run.records.len(), repeats);
        assert_eq!(run.planned, repeats);
        let ids: Vec<&str> = run.records.iter().map(|r| r.cell.id.as_str()).collect();
        assert_eq!(
            ids.last().copied(),
            Some(format!("echo_u1_s50_d0_r{repeats}").as_str())
        );
        assert_eq!(run.settling.len(), 1);
        assert_eq!(run.settling[0].0, "echo_u1_s50_d0");
        assert_eq!(run.settling[0].1.settled, settled, "{:?}", run.settling);
        let back = gatebench_runner::results::read(dir.path()).unwrap();
        assert_eq!((back.records.len(), back.missing.len()), (repeats, 0));
        let _ = std::fs::remove_dir_all(root);
    }
}

#[test]
fn a_run_writes_every_cell_as_it_ends_and_a_failed_setup_fails_its_cells() {
    let s = suite(TWO);
    let plan = Plan::new(&s, &[], &[]).unwrap();
    let root = temp_dir("run");
    let dir = ResultsDir::create(&root.join("out")).unwrap();
    prepare(&s, &plan, &dir).unwrap();
    let mut l = FakeLauncher {
        setup_fails: Some(100),
        ..Default::default()
    };
    let mut d = FakeDriver::default();
    let mut obs = Recorder::default();
    let stop = Arc::new(AtomicBool::new(false));
    let run = run_suite(&s, &plan, &dir, &settings(stop), &mut l, &mut d, &mut obs).unwrap();
    assert!(!run.interrupted);
    assert_eq!(run.records.len(), 4);
    assert_eq!(run.failed(), 2);
    assert_eq!(l.calls.lock().unwrap()[0], "setup install ext");
    assert_eq!(obs.setups.len(), 1);
    assert_eq!(
        obs.started,
        [
            "1/4 echo_u1_s50_d0_r1",
            "2/4 ext_u1_s50_d0_r1",
            "3/4 ext_u2_s50_d0_r1",
            "4/4 echo_u2_s50_d0_r1"
        ]
    );
    assert_eq!(
        obs.finished.iter().map(|f| f.1).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    for r in &run.records {
        if r.cell.scenario == "ext" {
            assert_eq!(r.status, CellStatus::Failed);
            assert!(r
                .reason
                .as_deref()
                .unwrap()
                .starts_with("setup failed: `install ext`"));
        } else {
            assert_eq!(r.status, CellStatus::Ok);
            let cell = dir.path().join("cells").join(&r.cell.id);
            assert!(cell.join("latency.hlog").is_file());
            assert!(cell.join("samples.csv").is_file());
        }
    }
    // The fixed files are there and the directory reads back complete.
    for f in ["suite.toml", "environment.json", "run.json"] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    let back = gatebench_runner::results::read(dir.path()).unwrap();
    assert_eq!(back.records.len(), 4);
    assert!(back.missing.is_empty());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn ctrl_c_during_a_cell_keeps_the_finished_cells_and_drops_the_one_in_progress() {
    let s = suite(TWO);
    let plan = Plan::new(&s, &[], &[]).unwrap();
    let root = temp_dir("interrupt");
    let dir = ResultsDir::create(&root.join("out")).unwrap();
    prepare(&s, &plan, &dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut l = FakeLauncher::default();
    // The first load runs normally; Ctrl-C arrives during the second.
    let mut d = FakeDriver::default();
    let mut first = true;
    struct Once<'a>(&'a mut bool, Arc<AtomicBool>);
    impl Observer for Once<'_> {
        fn cell_event(&mut self, _p: &Progress<'_>, e: &CellEvent<'_>) {
            if matches!(e, CellEvent::Phase(Phase::Measuring)) {
                if *self.0 {
                    *self.0 = false;
                } else {
                    self.1.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    }
    let mut obs = Once(&mut first, stop.clone());
    let run = run_suite(&s, &plan, &dir, &settings(stop), &mut l, &mut d, &mut obs).unwrap();
    assert!(run.interrupted);
    assert_eq!(run.records.len(), 1);
    // Every process of the interrupted cell was stopped all the same.
    let calls = l.calls.lock().unwrap();
    let launched = calls.iter().filter(|c| c.starts_with("launch")).count();
    let stopped = calls.iter().filter(|c| c.starts_with("stop")).count();
    assert_eq!(launched, stopped);
    let back = gatebench_runner::results::read(dir.path()).unwrap();
    assert_eq!(back.records.len(), 1);
    assert_eq!(back.missing.len(), 3);
    let _ = std::fs::remove_dir_all(root);
}
