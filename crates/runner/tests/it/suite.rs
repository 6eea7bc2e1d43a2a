//! Suite validation: every mistake is one clear line naming the key; the committed examples
//! are valid.

use std::path::Path;
use std::time::Duration;

use gatebench_runner::suite::{Intensity, Order, Program, Protocol};
use gatebench_runner::Suite;

use crate::support::{quick, quick_suite, repo_root, suite, suite_error};

const MINIMAL: &str = r#"
[[scenario]]
name = "echo"
backend = { serve = "echo --port {port}" }
"#;

#[test]
fn a_minimal_suite_gets_the_documented_defaults() {
    let s = suite(MINIMAL);
    assert_eq!(s.warmup, Duration::from_secs(1));
    assert_eq!(s.duration, Duration::from_secs(4));
    assert_eq!(s.repeats.get(), 1);
    assert_eq!(s.order, Order::Interleaved);
    assert!(!s.pin);
    assert_eq!(s.matrix.intensities, vec![Intensity::Users(10)]);
    assert_eq!(s.matrix.sizes, vec![50]);
    assert_eq!(s.matrix.delays, vec![Duration::ZERO]);
    assert_eq!(s.scenarios[0].protocols, vec![Protocol::H1c]);
    assert_eq!(s.load.method, "POST");
    assert!(s.scenarios[0].verify);
    assert!(s.scenarios[0].sut.is_none());
}

#[test]
fn an_unknown_key_is_named_with_its_table() {
    let e = suite_error("[suite]\nwarmpu = \"5s\"\n");
    assert!(
        e.starts_with("suite.toml: unknown key \"warmpu\" in [suite]"),
        "{e}"
    );
    assert!(e.contains("line 2"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");

    let e = suite_error(&format!("{MINIMAL}sut = {{ comand = \"x\" }}\n"));
    assert!(e.contains("unknown key \"comand\" in sut = {…}"), "{e}");

    let e = suite_error("[matrix]\nuser = [10]\n");
    assert!(e.contains("unknown key \"user\" in [matrix]"), "{e}");

    let e = suite_error("[sutie]\nname = \"x\"\n");
    assert!(e.contains("unknown key \"sutie\""), "{e}");
}

#[test]
fn a_bad_duration_names_the_key_and_the_value() {
    let e = suite_error(&format!("[suite]\nduration = \"5 parsecs\"\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [suite] duration: \"5 parsecs\" is not a duration (write e.g. \"30s\", \"5m\", \"250ms\")"
    );
    let e = suite_error(&format!("[matrix]\ndelays = [\"soon\"]\n{MINIMAL}"));
    assert!(
        e.starts_with("suite.toml: [matrix] delays: \"soon\""),
        "{e}"
    );
    let e = suite_error(&format!("[suite]\nduration = \"0s\"\n{MINIMAL}"));
    assert!(e.contains("[suite] duration: must be more than 0"), "{e}");
}

#[test]
fn a_missing_or_empty_command_is_an_error() {
    let e =
        suite_error("[[scenario]]\nname = \"x\"\nsut = { ready = \"http://127.0.0.1:{port}/\" }\n");
    assert!(
        e.starts_with("suite.toml: scenario \"x\": sut: command is missing"),
        "{e}"
    );
    let e = suite_error("[[scenario]]\nname = \"x\"\nsut = { command = \"  \" }\n");
    assert_eq!(e, "suite.toml: scenario \"x\": sut: command is empty");
    let e = suite_error("[[scenario]]\nname = \"x\"\n");
    assert!(
        e.contains("scenario \"x\": needs a sut, a backend, or both"),
        "{e}"
    );
    let e = suite_error("[[scenario]]\nname = \"x\"\nsut = { command = \"a\", serve = \"b\" }\n");
    assert!(e.contains("not both"), "{e}");
}

#[test]
fn other_mistakes_are_caught_before_anything_runs() {
    for (text, want) in [
        ("", "no [[scenario]]"),
        (
            "[[scenario]]\nbackend = { serve = \"echo\" }\n",
            "[[scenario]] #1: name is missing",
        ),
        (
            "[[scenario]]\nname = \"a b\"\nbackend = { serve = \"echo\" }\n",
            "name must be letters, digits",
        ),
        (
            "[[scenario]]\nname = \"x\"\nsut = { command = \"nginx -p {prot}\" }\n",
            "sut: command: unknown placeholder {prot}",
        ),
        (
            "[[scenario]]\nname = \"x\"\nprotocols = [\"h3\"]\nsut = { command = \"x\" }\n",
            "protocols: \"h3\" is not a protocol",
        ),
        (
            "[[scenario]]\nname = \"x\"\nsut = { command = \"x\", count = 2 }\n",
            "sut: count must be 1",
        ),
        (
            "[[scenario]]\nname = \"x\"\nsut = { command = \"x\", ready = \"localhost\" }\n",
            "ready: \"localhost\" must be an http:// or https:// URL",
        ),
        (
            "[matrix]\nusers = [10]\nrates = []\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[matrix] rates: the list is empty",
        ),
        (
            "[matrix]\nsizes = [5]\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[matrix] sizes: 5 is too small",
        ),
        (
            "[suite]\norder = \"random\"\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[suite] order: \"random\" is not an order",
        ),
        (
            "[suite]\nrepeats = 0\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[suite] repeats: must be at least 1",
        ),
        (
            "[suite]\ncompare = [\"x\"]\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[suite] compare: name two or more scenarios",
        ),
        (
            "[suite]\ncompare = [\"x\", \"y\"]\n[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n",
            "[suite] compare: no scenario named \"y\" (its scenarios: x)",
        ),
        (
            "[[scenario]]\nname = \"x\"\nsut = { command = \"x\" }\n[[scenario]]\nname = \"x\"\nsut = { command = \"y\" }\n",
            "scenario \"x\": the name is used twice",
        ),
        ("[suite]\nwarmup = 5\n", "invalid type"),
        (
            "[[scenario]]\nname = \"x\"\nsetup = \"get {port}\"\nsut = { command = \"x\" }\n",
            "setup: unknown placeholder {port} (setup knows only {suite_dir} and {workdir})",
        ),
    ] {
        let e = suite_error(text);
        assert!(e.contains(want), "{text:?}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn the_committed_examples_are_valid() {
    let root = repo_root().join("examples");
    let seed = Suite::load(&root.join("seed-004.toml")).unwrap_or_else(|e| panic!("{e}"));
    // Seed 004's published parameters, exactly.
    assert_eq!(
        seed.matrix.intensities,
        vec![
            Intensity::Users(100),
            Intensity::Users(300),
            Intensity::Users(1000)
        ]
    );
    assert_eq!(seed.matrix.sizes, vec![50, 1024]);
    assert_eq!(seed.matrix.delays, vec![Duration::ZERO]);
    assert_eq!(seed.warmup, Duration::from_secs(300));
    assert_eq!(seed.warmup + seed.duration, Duration::from_secs(900));
    assert_eq!(seed.scenarios.len(), 8);

    let ext = Suite::load(&root.join("nginx-haproxy.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = ext.scenarios.iter().map(|s| s.name.as_str()).collect();
    for want in ["gatebench-proxy", "nginx", "haproxy"] {
        assert!(names.contains(&want), "{names:?}");
    }
    for name in ["nginx", "haproxy"] {
        let sc = ext.scenarios.iter().find(|s| s.name == name).unwrap();
        assert!(sc.setup.is_some(), "{name} installs itself when missing");
        assert!(matches!(
            sc.sut.as_ref().unwrap().program,
            Program::Command(_)
        ));
        for t in &sc.templates {
            assert!(sc.workdir.join(t).is_file(), "{} exists", t.display());
        }
    }

    let tiny = Suite::load(&root.join("tiny.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tiny.scenarios.len(), 1);

    let cap = Suite::load(&root.join("capacity.toml")).unwrap_or_else(|e| panic!("{e}"));
    let c = cap.capacity.as_ref().expect("a capacity search");
    assert_eq!(c.slo.text, "p99<5ms,errors<0.1%");
    let flags: Vec<(bool, bool)> = cap.scenarios.iter().map(|s| (s.capacity, s.cost)).collect();
    assert_eq!(flags, vec![(true, false), (true, true)]);
}

/// `[capacity]` and `[cost]` resolve with their defaults, write back into the resolved suite
/// and read back the same; `[cost]` defaults to the suite's warm-up and duration.
#[test]
fn capacity_and_cost_settings_resolve_and_round_trip() {
    let s = suite(
        r#"
[suite]
warmup = "3s"
duration = "7s"

[capacity]
slo = "p99.9<20ms, errors<1%"

[[scenario]]
name = "proxy"
backend = { serve = "echo --port {port}" }
sut = { command = "my-proxy --listen {port} --to {upstream}" }
cost = true
"#,
    );
    let c = s.capacity.as_ref().unwrap();
    assert_eq!(c.slo.objectives.len(), 2);
    assert_eq!((c.min_rate, c.max_rate), (1.0, 1e6));
    assert_eq!(c.start, None);
    assert_eq!(
        (c.step, c.max_step),
        (Duration::from_secs(2), Duration::from_secs(10))
    );
    assert_eq!((c.precision_percent, c.max_steps), (5.0, 15));
    let cost = s.cost.as_ref().unwrap();
    assert_eq!(cost.rate, 1000.0);
    assert_eq!(cost.repeats, 3);
    assert_eq!(
        (cost.warmup, cost.duration),
        (Duration::from_secs(3), Duration::from_secs(7))
    );
    assert!(s.scenarios[0].capacity && s.scenarios[0].cost);
    let again = Suite::from_toml("suite.toml", Path::new("."), &s.to_toml()).unwrap();
    assert_eq!(again, s);
}

/// Seed 001's published parameters in the full form; the quick form small enough for minutes.
#[test]
fn the_seed_001_suite_keeps_the_seeds_parameters() {
    let root = repo_root().join("examples");
    let path = root.join("seed-001.toml");
    let s = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.matrix.intensities,
        [500, 1000, 2000, 4000, 8000, 12000]
            .map(Intensity::Users)
            .to_vec()
    );
    assert_eq!(s.requests, Some(1_000_000));
    assert!(!s.duration_bound, "ab's stop rule alone");
    assert_eq!(s.warmup, Duration::ZERO);
    assert_eq!(s.repeats.get(), 2);
    assert_eq!(s.matrix.sizes, vec![1024]);
    assert_eq!(s.load.method, "GET");
    let names: Vec<&str> = s.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo-direct",
            "gatebench-balance",
            "nginx",
            "haproxy",
            "echo-direct-ka",
            "gatebench-balance-ka",
            "nginx-ka",
            "haproxy-ka"
        ]
    );
    for sc in &s.scenarios {
        assert_eq!(sc.keepalive, sc.name.ends_with("-ka"), "{}", sc.name);
        if sc.sut.is_some() {
            assert_eq!(sc.backend.as_ref().unwrap().count, 5, "{}", sc.name);
        }
        for t in &sc.templates {
            let text = std::fs::read_to_string(sc.workdir.join(t)).unwrap();
            assert!(
                text.contains("{backends:server "),
                "{} lists every back-end",
                t.display()
            );
        }
    }
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(plan.cells.len(), 96);
    // 96 cells of 1,000,000 requests at the assumed 10,000 requests/s, plus 1 s each.
    assert_eq!(plan.estimate, Duration::from_secs(96 * 101));
    let s = Suite::load_with(&path, &quick()).unwrap();
    let quick = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(quick.cells.len(), 16);
    assert_eq!(s.requests, Some(20_000));
}

/// Seed 000's grid and timing in the full form (600 s + 600 s, 5 interleaved repeats of two
/// versions), its two versions built by their setup and run with the seed's 2 GB heap and a GC
/// log; the quick form the whole grid once, in seconds per cell.
#[test]
fn the_seed_000_suite_keeps_the_seeds_parameters() {
    let root = repo_root().join("examples");
    let path = root.join("seed-000.toml");
    let s = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.matrix.intensities,
        [100, 200, 500, 1000].map(Intensity::Users).to_vec()
    );
    assert_eq!(s.matrix.sizes, vec![500, 1000, 10_000]);
    assert_eq!(s.matrix.delays, vec![Duration::ZERO]);
    assert_eq!(s.warmup, Duration::from_secs(600));
    assert_eq!(s.duration, Duration::from_secs(600));
    assert_eq!(s.repeats.get(), 5);
    assert_eq!(s.order, Order::Interleaved);
    assert_eq!(s.compare, ["v1", "v2"]);
    assert_eq!(s.load.method, "POST");
    let names: Vec<&str> = s.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["v1", "v2"]);
    for (sc, netty) in s.scenarios.iter().zip(["4.1.118.Final", "4.2.9.Final"]) {
        assert_eq!(
            sc.setup.as_deref(),
            Some(format!("{{workdir}}/build.sh {netty}").as_str())
        );
        let Program::Command(cmd) = &sc.sut.as_ref().unwrap().program else {
            panic!("{}: a command", sc.name)
        };
        assert!(cmd.contains("-Xms2g -Xmx2g"), "{cmd}");
        assert!(cmd.contains(&format!("build/{netty}/classes")), "{cmd}");
        assert!(sc.gc.is_some(), "{}: a GC log", sc.name);
        assert!(sc.backend.is_some());
    }
    assert!(root.join("seed-000/src/Passthrough.java").is_file());
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(plan.cells.len(), 120);
    assert_eq!(plan.estimate, Duration::from_secs(120 * 1201));
    let s = Suite::load_with(&path, &quick()).unwrap();
    let quick = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(quick.cells.len(), 24);
    assert_eq!(s.warmup + s.duration, Duration::from_secs(3));
}

/// Seed 002's wrk2 settings in the full form (both models), a server per language built by
/// its setup from sources that are committed, the GC logs named, and a quick form of minutes.
#[test]
fn the_seed_002_suite_keeps_the_seeds_parameters() {
    let root = repo_root().join("examples");
    let path = root.join("seed-002.toml");
    let s = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
    // wrk2 -R 200000 -d 60s -t 32, and the closed model beside it.
    assert_eq!(
        s.matrix.intensities,
        vec![Intensity::Users(100), Intensity::Rate(200000.0)]
    );
    assert_eq!(s.duration, Duration::from_secs(60));
    assert_eq!(s.warmup, Duration::ZERO);
    assert_eq!(s.load.threads, Some(32));
    assert_eq!(s.load.method, "GET");
    let got: Vec<(&str, Option<&str>, bool)> = s
        .scenarios
        .iter()
        .map(|sc| {
            (
                sc.name.as_str(),
                sc.gc.as_ref().map(|g| g.format.name()),
                sc.keepalive,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("go", Some("go"), true),
            ("rust", None, true),
            ("node", Some("node"), true),
            ("java", Some("jvm"), true),
            ("python", None, true),
            ("php", None, false),
            ("ruby", None, true),
        ]
    );
    let dir = root.join("seed-002");
    for source in [
        "go/main.go",
        "go/go.mod",
        "rust/Cargo.toml",
        "rust/Cargo.lock",
        "rust/src/main.rs",
        "node/server.js",
        "node/package.json",
        "node/package-lock.json",
        "java/Hello.java",
        "python/hello.py",
        "php/hello.php",
        "ruby/config.ru",
    ] {
        assert!(dir.join(source).is_file(), "{source} is committed");
    }
    for sc in &s.scenarios {
        assert!(sc.setup.is_some(), "{} installs or builds itself", sc.name);
        assert!(
            sc.workdir.ends_with("examples/seed-002"),
            "{}",
            sc.workdir.display()
        );
    }
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(plan.cells.len(), 14);
    assert_eq!(plan.estimate, Duration::from_secs(14 * 61));
    let s = Suite::load_with(&path, &quick()).unwrap();
    let quick = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(quick.cells.len(), 14);
    assert_eq!(
        s.matrix.intensities,
        vec![Intensity::Users(100), Intensity::Rate(1000.0)]
    );
    assert!(
        quick.estimate < Duration::from_secs(120),
        "{:?}",
        quick.estimate
    );
}

/// Seed 003's wrk settings in the full form, and the error endpoints declared.
#[test]
fn the_seed_003_suite_keeps_the_seeds_parameters() {
    let root = repo_root().join("examples");
    let s = Suite::load(&root.join("seed-003.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.matrix.intensities, vec![Intensity::Users(1000)]);
    assert_eq!(s.load.threads, Some(10));
    assert_eq!(s.duration, Duration::from_secs(10));
    assert_eq!(s.warmup, Duration::ZERO);
    let got: Vec<(&str, &str, Option<u16>)> = s
        .scenarios
        .iter()
        .map(|sc| (sc.name.as_str(), sc.path.as_str(), sc.expect_status))
        .collect();
    assert_eq!(
        got,
        vec![
            ("gin-hello", "/hello", None),
            ("gin-json", "/json", None),
            ("gin-error", "/error", Some(500)),
            ("echo-hello", "/hello", None),
            ("echo-json", "/json", None),
            ("echo-error", "/error", Some(500)),
        ]
    );
    assert!(s.scenarios.iter().all(|sc| sc.method == "GET"));
}

#[test]
fn a_missing_file_says_so() {
    let e = Suite::load(std::path::Path::new("/nonexistent/suite.toml"))
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "cannot read /nonexistent/suite.toml");
}

#[test]
fn values_out_of_range_are_one_line_naming_the_key_and_the_range() {
    let sc = "[[scenario]]\nname = \"x\"\nbackend = { serve = \"echo --port {port}\" }\n";
    for (table, want) in [
        (
            "[suite]\nduration = \"1e20\"\n",
            "[suite] duration: \"1e20\" is not a duration (durations are at most 100 days)",
        ),
        (
            "[suite]\nwarmup = \"1e19\"\n",
            "[suite] warmup: \"1e19\" is not a duration (durations are at most 100 days)",
        ),
        (
            "[suite]\nready_timeout = \"-1s\"\n",
            "[suite] ready_timeout: \"-1s\" is not a duration (it must not be negative)",
        ),
        (
            "[load]\ntimeout = \"101d\"\n",
            "[load] timeout: \"101d\" is not a duration (durations are at most 100 days)",
        ),
        (
            "[matrix]\ndelays = [\"0ms\", \"1e20\"]\n",
            "[matrix] delays: \"1e20\" is not a duration",
        ),
        (
            "[matrix]\nrates = [1e-300]\n",
            "[matrix] rates: every rate must be from 0.001 to 1e9 requests/s, got 1e-300",
        ),
        (
            "[matrix]\nrates = [1e12]\n",
            "[matrix] rates: every rate must be from 0.001 to 1e9 requests/s, got 1e12",
        ),
        ("[matrix]\nrates = [nan]\n", "got NaN"),
        (
            "[matrix]\nusers = [4294967295]\n",
            "[matrix] users: every value must be from 1 to 1000000, got 4294967295",
        ),
        (
            "[matrix]\nsizes = [1073741825]\n",
            "[matrix] sizes: 1073741825 is too large: at most 1073741824 bytes",
        ),
        (
            "[matrix]\nsizes = [18446744073709551616]\n",
            "[matrix] sizes: ",
        ),
        (
            "[load]\nconnections = 4294967295\n",
            "[load] connections: must be at most 1000000",
        ),
        (
            "[load]\nthreads = 100000\n",
            "[load] threads: must be at most 1024",
        ),
        (
            "[suite]\nrepeats = 4294967295\n",
            "the matrix expands to 4294967295 cells",
        ),
        ("[suite]\nrepeats = -1\n", "[suite] repeats: invalid value"),
        ("[suite]\nwarmup = 1e19\n", "[suite] warmup: invalid type"),
    ] {
        let e = suite_error(&format!("{table}{sc}"));
        assert!(e.contains(want), "{table:?}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let e = suite_error(
        "[[scenario]]\nname = \"x\"\nbackend = { serve = \"echo --port {port}\", count = 4294967295 }\n",
    );
    assert!(
        e.contains("backend: count must be from 1 to 256, got 4294967295"),
        "{e}"
    );
    let e = suite_error(
        "[[scenario]]\nname = \"x\"\nbackend = { serve = \"echo --port {port}\", count = -3 }\n",
    );
    assert!(e.contains("backend count: invalid value"), "{e}");
}

#[test]
fn the_largest_values_in_range_are_accepted_and_planned() {
    let s = suite(
        "[suite]\nwarmup = \"100d\"\nduration = \"100d\"\nrepeats = 1000\n\
         [matrix]\nrates = [0.001, 1e9]\nsizes = [1073741824]\ndelays = [\"100d\"]\n\
         [load]\nconnections = 1000000\nthreads = 1024\n\
         [[scenario]]\nname = \"x\"\nbackend = { serve = \"echo --port {port}\", count = 256 }\n",
    );
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(plan.cells.len(), 2000);
    // 2000 cells of 200 days and a second each.
    assert_eq!(plan.estimate.as_secs(), 2000 * (200 * 86_400 + 1));
}

#[test]
fn repeats_given_after_validation_are_bounded_by_the_plan() {
    let mut s = suite(MINIMAL);
    s.repeats = std::num::NonZeroU32::new(u32::MAX).unwrap();
    let e = gatebench_runner::Plan::new(&s, &[], &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the matrix expands to 4294967295 cells") && e.contains("at most 100000"),
        "{e}"
    );
}

#[test]
fn a_request_count_is_the_stop_rule_and_a_duration_beside_it_bounds_it() {
    let s = suite(&format!("[suite]\nrequests = 1000000\n{MINIMAL}"));
    assert_eq!(s.requests, Some(1_000_000));
    assert!(!s.duration_bound);
    // At the default 10000 req/s assumed for closed-model cells: 100 s.
    assert_eq!(
        s.measurement_estimate(&Intensity::Users(500)),
        Duration::from_secs(100)
    );
    // An open-model cell is timed at its own rate.
    assert_eq!(
        s.measurement_estimate(&Intensity::Rate(4000.0)),
        Duration::from_secs(250)
    );
    let resolved = s.to_toml();
    assert!(resolved.contains("requests = 1000000"), "{resolved}");
    assert!(!resolved.contains("duration ="), "{resolved}");
    assert_eq!(
        Suite::from_toml("suite.toml", std::path::Path::new("."), &resolved).unwrap(),
        s
    );

    let s = suite(&format!(
        "[suite]\nrequests = 1000000\nduration = \"30s\"\nexpected_rate = 20000\n{MINIMAL}"
    ));
    assert!(s.duration_bound);
    assert_eq!(s.expected_rate, 20000.0);
    assert_eq!(
        s.measurement_estimate(&Intensity::Users(500)),
        Duration::from_secs(30),
        "50 s at 20000 req/s, bounded by 30 s"
    );

    let e = suite_error(&format!("[suite]\nrequests = 0\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [suite] requests: must be from 1 to 1000000000000, got 0"
    );
}

#[test]
fn a_request_count_suite_is_estimated_from_the_expected_rate() {
    let s = suite(&format!(
        "[suite]\nwarmup = \"2s\"\nrequests = 50000\nexpected_rate = 5000\n[matrix]\nusers = [1, 2]\n{MINIMAL}"
    ));
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    // Two cells, each 2 s warm-up + 10 s (50000 at 5000/s) + 1 s overhead.
    assert_eq!(plan.estimate, Duration::from_secs(26));
}

#[test]
fn a_scenario_gives_its_own_method_path_and_expected_status() {
    let s = suite(
        r#"
[load]
method = "POST"
path = "/echo"

[[scenario]]
name = "hello"
method = "GET"
path = "/hello"
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "error"
method = "GET"
path = "/error"
expect_status = 500
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "echo"
keepalive = false
backend = { serve = "echo --port {port}" }
"#,
    );
    let got: Vec<(&str, &str, Option<u16>, bool)> = s
        .scenarios
        .iter()
        .map(|sc| {
            (
                sc.method.as_str(),
                sc.path.as_str(),
                sc.expect_status,
                sc.keepalive,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("GET", "/hello", None, true),
            ("GET", "/error", Some(500), true),
            ("POST", "/echo", None, false)
        ]
    );
    let again = Suite::from_toml("suite.toml", std::path::Path::new("."), &s.to_toml()).unwrap();
    assert_eq!(again, s);

    let e = suite_error(&format!(
        "{}expect_status = 700\n",
        MINIMAL.replace("name = \"echo\"", "name = \"echo\"\nmethod = \"GET\"")
    ));
    assert_eq!(
        e,
        "suite.toml: scenario \"echo\": expect_status: 700 is not a final HTTP status (200 to 599)"
    );
    let e = suite_error(&MINIMAL.replace("name = \"echo\"", "name = \"echo\"\nmethod = \"G T\""));
    assert_eq!(
        e,
        "suite.toml: scenario \"echo\": method: \"G T\" is not an HTTP method such as POST or GET"
    );
}

#[test]
fn quick_replaces_what_its_table_gives_and_shortens_the_rest() {
    let text = format!(
        "[suite]\nwarmup = \"10s\"\nrequests = 1000000\nrepeats = 2\n[matrix]\nusers = [500, 1000, 12000]\n\
         [quick]\nusers = [50, 100]\nrequests = 2000\n{MINIMAL}"
    );
    assert!(suite(&text).quick.is_some());
    let s = quick_suite(&text);
    assert_eq!(
        s.matrix.intensities,
        vec![Intensity::Users(50), Intensity::Users(100)]
    );
    assert_eq!(s.requests, Some(2000));
    assert!(
        !s.duration_bound,
        "a request count in [quick] is the stop rule"
    );
    assert_eq!(s.warmup, Duration::from_millis(500));
    assert_eq!(s.repeats.get(), 2, "not given in [quick]: the suite's");
    assert_eq!(s.quick, None);

    // Without [quick]: 0.5 s warm-up, at most 2 s, which also bounds a request count.
    let s = quick_suite(&format!("[suite]\nrequests = 1000000\n{MINIMAL}"));
    assert_eq!(
        (s.warmup, s.duration, s.duration_bound, s.requests),
        (
            Duration::from_millis(500),
            Duration::from_secs(2),
            true,
            Some(1_000_000)
        )
    );

    // A wrong [quick] is an error when the suite is read, --quick or not.
    let e = suite_error(&format!("[quick]\nusers = [0]\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [quick] users: every value must be from 1 to 1000000, got 0"
    );
    let e = suite_error(&format!("[quick]\nuser = [1]\n{MINIMAL}"));
    assert!(e.contains("unknown key \"user\" in [quick]"), "{e}");
}

#[test]
fn rates_take_programs_beside_numbers_and_the_resolved_suite_keeps_them() {
    use gatebench_loadgen::{RateProgram, Spacing};
    let s = suite(&format!(
        "[matrix]\nrates = [5000, \"ramp:1k..20k/30s\", \"2500\"]\n\
         [load]\narrival = \"poisson\"\n{MINIMAL}"
    ));
    assert_eq!(
        s.matrix.intensities,
        vec![
            Intensity::Rate(5000.0),
            Intensity::Program(RateProgram::Ramp {
                from: 1000.0,
                to: 20000.0,
                over: Duration::from_secs(30),
            }),
            Intensity::Rate(2500.0),
        ]
    );
    assert_eq!(
        s.load.spacing,
        Spacing::Poisson { seed: 1 },
        "the default seed"
    );
    let resolved = s.to_toml();
    assert!(
        resolved.contains("rates = [5000.0, \"ramp:1000..20000/30s\", 2500.0]"),
        "{resolved}"
    );
    assert!(resolved.contains("arrival = \"poisson\"") && resolved.contains("seed = 1"));
    assert_eq!(
        Suite::from_toml("suite.toml", std::path::Path::new("."), &resolved).unwrap(),
        s
    );
    let ids: Vec<String> = gatebench_runner::matrix::expand(&s)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(
        ids,
        [
            "echo_R5000_s50_d0_r1",
            "echo_Rramp-1000-20000-30s_s50_d0_r1",
            "echo_R2500_s50_d0_r1"
        ]
    );
}

/// Both models in one suite (seed 002 runs every server under wrk's closed model and wrk2's
/// constant rate): the users' cells, then the rates', each with its own id, connections and
/// arrival; `[quick]` replaces the axis with what it gives, both when it gives both.
#[test]
fn users_and_rates_together_run_both_models() {
    use gatebench_loadgen::Arrival;
    let text = format!(
        "[suite]\nduration = \"60s\"\nwarmup = \"0s\"\n\
         [matrix]\nusers = [100]\nrates = [200000, 5000]\n[load]\nconnections = 64\n\
         [quick]\nusers = [20]\nrates = [1000]\n{MINIMAL}"
    );
    let s = suite(&text);
    assert_eq!(
        s.matrix.intensities,
        vec![
            Intensity::Users(100),
            Intensity::Rate(200000.0),
            Intensity::Rate(5000.0)
        ]
    );
    assert_eq!(s.arrival(&Intensity::Users(100), 1), (100, Arrival::Closed));
    assert_eq!(
        s.arrival(&Intensity::Rate(5000.0), 1),
        (64, Arrival::Open { rate: 5000.0 })
    );
    let resolved = s.to_toml();
    assert!(resolved.contains("users = [100]"), "{resolved}");
    assert!(
        resolved.contains("rates = [200000.0, 5000.0]"),
        "{resolved}"
    );
    assert_eq!(
        Suite::from_toml("suite.toml", std::path::Path::new("."), &resolved).unwrap(),
        s
    );
    let plan = gatebench_runner::Plan::new(&s, &[], &[]).unwrap();
    let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "echo_u100_s50_d0_r1",
            "echo_R200000_s50_d0_r1",
            "echo_R5000_s50_d0_r1"
        ]
    );
    // Three cells of 60 s, plus 1 s each.
    assert_eq!(plan.estimate, Duration::from_secs(3 * 61));
    let s = quick_suite(&text);
    assert_eq!(
        s.matrix.intensities,
        vec![Intensity::Users(20), Intensity::Rate(1000.0)]
    );
    // A [quick] that gives one axis replaces both: the quick form runs that model alone.
    let s = quick_suite(&format!(
        "[matrix]\nusers = [100]\nrates = [5000]\n[quick]\nrates = [1000]\n{MINIMAL}"
    ));
    assert_eq!(s.matrix.intensities, vec![Intensity::Rate(1000.0)]);
}

#[test]
fn a_programs_request_count_is_timed_at_its_mean_rate() {
    let s = suite(&format!(
        "[suite]\nrequests = 300000\nduration = \"30s\"\n\
         [matrix]\nrates = [\"ramp:0..20k/20s\"]\n{MINIMAL}"
    ));
    // Over the 30 s bound: 200000 requests in the ramp, 200000 more in the 10 s held at 20k:
    // a mean of 13333 req/s, so 300000 requests take 22.5 s.
    let i = s.matrix.intensities[0].clone();
    assert_eq!(i.mean_rate(s.duration), Some(400000.0 / 30.0));
    assert_eq!(
        s.measurement_estimate(&i),
        Duration::from_secs_f64(300000.0 / (400000.0 / 30.0))
    );
}

#[test]
fn a_wrong_program_or_spacing_is_one_line_naming_the_key() {
    let e = suite_error(&format!("[matrix]\nrates = [\"ramp:1k/30s\"]\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [matrix] rates: \"ramp:1k/30s\": expected ramp:FROM..TO/DURATION, e.g. ramp:0..20k/60s"
    );
    let e = suite_error(&format!(
        "[matrix]\nrates = [\"sine:1k±2k/10s\"]\n{MINIMAL}"
    ));
    assert!(
        e.starts_with("suite.toml: [matrix] rates: \"sine:1k±2k/10s\": the sine's amplitude"),
        "{e}"
    );
    let e = suite_error(&format!("[load]\narrival = \"bursty\"\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [load] arrival: \"bursty\" is not a spacing (\"even\" or \"poisson\")"
    );
    let e = suite_error(&format!("[load]\nseed = 3\n{MINIMAL}"));
    assert_eq!(
        e,
        "suite.toml: [load] seed: only Poisson arrivals have a seed (arrival = \"poisson\")"
    );
}

/// The command line's changes are inputs of the one validation: the resolved suite has them,
/// its `suite.toml` records them, and one that cannot apply is an error naming its flag before
/// anything runs.
#[test]
fn command_line_overrides_are_validated_with_the_file() {
    use gatebench_runner::suite::Overrides;
    let over = Overrides {
        quick: true,
        repeats: std::num::NonZeroU32::new(3),
        duration: Some(Duration::from_secs(1)),
        variant: Some("t1=--threads 1".to_owned()),
        sut_args: Some("--threads 2".to_owned()),
        ..Default::default()
    };
    let s = Suite::resolve(None, &over).unwrap();
    let plain = Suite::builtin();
    let suts = plain.scenarios.iter().filter(|s| s.sut.is_some()).count();
    assert_eq!(s.scenarios.len(), plain.scenarios.len() + suts);
    assert_eq!(
        (s.warmup, s.duration, s.repeats.get()),
        (Duration::from_millis(500), Duration::from_secs(1), 3),
        "--quick first, then the values given one by one"
    );
    let again = Suite::from_toml("suite.toml", Path::new("."), &s.to_toml()).unwrap();
    assert_eq!(again.scenarios.len(), s.scenarios.len());
    assert!(again.scenarios.iter().any(|sc| sc.name.ends_with("+t1")));

    let error = |over: Overrides| Suite::resolve(None, &over).unwrap_err().to_string();
    assert_eq!(
        error(Overrides {
            duration: Some(Duration::ZERO),
            ..Default::default()
        }),
        "--duration must be more than 0"
    );
    assert!(error(Overrides {
        variant: Some("t1".to_owned()),
        ..Default::default()
    })
    .starts_with("--variant takes NAME=ARGS"));
    // The suite's size is checked after the overrides: 20 × 5,000 repeats is past the limit.
    assert!(error(Overrides {
        repeats: std::num::NonZeroU32::new(5_000),
        ..Default::default()
    })
    .contains("cells"));
    let no_sut = Suite::from_toml_with(
        "suite.toml",
        Path::new("."),
        MINIMAL,
        &Overrides {
            sut_args: Some("--threads 1".to_owned()),
            ..Default::default()
        },
    );
    assert!(no_sut
        .unwrap_err()
        .to_string()
        .starts_with("--sut-args: no scenario of this suite runs a built-in service"));
}
