//! `gatebench load` and `gatebench serve echo` as a user runs them: the real binary, a real echo
//! backend child process on a free loopback port, exit statuses, one-line errors, outputs.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use rustix::process::Signal;

use crate::support::{self, gatebench, kill, stderr, EchoChild, BIN};

mod cpu_quota;
mod hdrhistogram_java;

#[test]
fn bad_arguments_exit_2_with_one_line_before_any_load() {
    let body_missing = "/nonexistent/gatebench/body.bin";
    for (args, want) in [
        (vec!["load", "not a url"], "invalid URL"),
        (vec!["load", "ftp://127.0.0.1/"], "unsupported scheme"),
        (
            vec!["load", "http://127.0.0.1:1/", "--remote-write", "not a url"],
            "--remote-write",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--remote-write",
                "localhost:9090",
            ],
            "expected an http:// URL",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--remote-write",
                "https://127.0.0.1:9090/api/v1/write",
            ],
            "over TLS (https) is not supported",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--remote-write",
                "http://127.0.0.1:99999/api/v1/write",
            ],
            "not a TCP port",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--remote-write",
                "http://127.0.0.1:9090/api/v1/write",
                "--remote-write-interval",
                "100ms",
            ],
            "at least 1s",
        ),
        (vec!["load", "http://127.0.0.1:1/", "-R", "0"], "--rate"),
        (vec!["load", "http://127.0.0.1:1/", "-d", "-5s"], "-5s"),
        (vec!["load", "http://127.0.0.1:1/", "-d", "soon"], "soon"),
        (
            vec!["load", "http://127.0.0.1:1/", "-c", "0"],
            "--connections",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--body-file", body_missing],
            "cannot read body file",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--payload-size", "5"],
            "too small",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-H", "NoColon"],
            "invalid header",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--http2"],
            "needs an https:// URL",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--streams", "4"],
            "--streams needs HTTP/2",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--threshold", "latency<5ms"],
            "threshold 'latency<5ms': unknown metric 'latency'",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--threshold",
                "rate>=0.9*target",
            ],
            "the closed model has no target rate",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "-d",
                "5s",
                "--threshold",
                "p99<5ms over 10s",
            ],
            "the window is longer than the measurement",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--json",
                "/nonexistent/dir/x.json",
                "--no-probe",
            ],
            "cannot create --json file",
        ),
        (
            vec![
                "load",
                "https://127.0.0.1:1/",
                "--cacert",
                "/nonexistent.pem",
            ],
            "--cacert",
        ),
        (vec!["load"], "URL"),
        (
            vec!["load", "http://127.0.0.1:1/", "-R", "ramp:-5..100/10s"],
            "-R/--rate 'ramp:-5..100/10s': rate '-5' must not be negative",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-R", "steps:1k,2e12/1s"],
            "above 1e9 requests/s",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-R", "sine:100±500/10s"],
            "the rate would go negative",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-R", "ramp:0..0/10s"],
            "never reaches",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-R", "wave:5/1s"],
            "unknown rate program 'wave'",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--arrival", "poisson"],
            "--rate",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "-R",
                "10",
                "--arrival",
                "bursty",
            ],
            "bursty",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "-c", "4000000000"],
            "-c/--connections must be at most 1000000",
        ),
    ] {
        let o = gatebench(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: expected `{want}` in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line, got {err}"
        );
        assert!(
            o.stdout.is_empty(),
            "{args:?}: nothing measured, nothing printed"
        );
    }
}

#[test]
fn probe_refuses_a_wrong_target_with_exit_1() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    // The echo answers GET with 13 bytes, not with the request body: verification fails.
    let o = gatebench(&[
        "load", &echo.url, "-c", "1", "-d", "1s", "--verify", "-m", "POST", "--body", "x", "-H",
        "X: y",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "echoing POST passes: {}",
        stderr(&o)
    );
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let o = gatebench(&["load", &format!("http://{dead}/"), "-d", "1s"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("connection refused") || stderr(&o).contains("connect refused"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn json_on_stdout_text_on_stderr_and_a_readable_hlog() {
    let _shared = support::shared();
    let echo = EchoChild::start(&[]);
    let dir = std::env::temp_dir().join(format!("gatebench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog = dir.join("latency.hlog");
    let o = gatebench(&[
        "load",
        &echo.url,
        "-c",
        "2",
        "-d",
        "2s",
        "-R",
        "200",
        "--json",
        "-",
        "--hlog",
        hlog.to_str().unwrap(),
        "-m",
        "POST",
        "--payload-size",
        "50",
        "--verify",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is the JSON record");
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["config"]["model"], "open");
    // 200 req/s for 2 s schedules exactly 400 requests; nearly all of them are answered.
    assert_eq!(v["measurement"]["requests"], 400, "{}", v["measurement"]);
    let ok = v["measurement"]["outcomes"]["ok"].as_u64().unwrap();
    assert!((350..=400).contains(&ok), "200 req/s for 2 s: {ok}");
    assert!(
        stderr(&o).contains("Requests/sec"),
        "the text report went to stderr"
    );
    // The interval log: standard header, one line per second, readable by HdrHistogram's reader.
    let text = std::fs::read(&hlog).unwrap();
    let s = String::from_utf8_lossy(&text);
    assert!(s.contains("#[Histogram log format version 1.3]"), "{s}");
    assert!(s.contains("\"StartTimestamp\",\"Interval_Length\""), "{s}");
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let intervals = IntervalLogIterator::new(&text)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(i) if i.tag().is_none() => Some(i.duration()),
            _ => None,
        })
        .count();
    assert!(
        (2..=3).contains(&intervals),
        "{intervals} one-second intervals in a 2 s run"
    );
    assert!(
        s.contains("Tag=uncorrected"),
        "open model logs the uncorrected histogram too"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_echo_over_tls_prints_its_certificate() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--tls", "--http2"]);
    assert!(echo.url.starts_with("https://"), "{}", echo.url);
    let o = gatebench(&[
        "load",
        &echo.url,
        "-k",
        "--http2",
        "--streams",
        "4",
        "-c",
        "1",
        "-d",
        "1s",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(" h2\n"), "{out}");
    assert!(out.contains("TLS: 1 full handshakes"), "{out}");
}

#[test]
fn a_silent_target_reads_as_100_percent_errors_in_one_line() {
    // Accepts connections, reads nothing, answers nothing. With the defaults (--timeout 10s)
    // nothing times out within the run; the report must still not read as clean.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let accepted = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let mut held = Vec::new();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < until {
            match listener.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
            if held.len() >= 3 {
                std::thread::sleep(std::time::Duration::from_secs(4));
                break;
            }
        }
        held.len()
    });
    let json = std::env::temp_dir().join(format!("gatebench-silent-{}.json", std::process::id()));
    let o = gatebench(&[
        "load",
        &url,
        "-c",
        "3",
        "-d",
        "2s",
        "--no-probe",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("answered none"))
        .collect();
    assert_eq!(lines.len(), 1, "one line says it:\n{text}");
    assert!(lines[0].contains("of the 3 requests"), "{}", lines[0]);
    assert!(text.contains("Error %: 100.000"), "{text}");
    assert!(
        text.contains("p99=≥"),
        "the tail is shown as a lower bound:\n{text}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let m = &record["measurement"];
    assert_eq!(m["outcomes"]["unanswered"], 3, "{m}");
    assert_eq!(m["error_percent"], 100.0);
    assert_eq!(m["latency"]["censored"], 3);
    assert_eq!(record["target_warnings"].as_array().unwrap().len(), 1);
    assert_eq!(accepted.join().unwrap(), 3);
}

#[test]
fn ctrl_c_in_the_open_model_ends_the_schedule_where_it_was_pressed() {
    let _shared = support::shared();
    // 20 req/s for 30 s against a back-end that answers after 1 s, interrupted about
    // 2 s into the load. The requests in flight then take up to a second to finish; the tickets that fall
    // due meanwhile were never asked for and must not be counted as a backlog ("never sent").
    // 40 connections: there is always one free, so nothing is overdue before the interrupt.
    let echo = EchoChild::start(&["--delay", "1s"]);
    let child = Command::new(BIN)
        .args([
            "load", &echo.url, "-c", "40", "-R", "20", "-d", "30s", "--json", "-",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gatebench load");
    // The probe waits for one answer (1 s) before the load starts.
    std::thread::sleep(std::time::Duration::from_millis(3000));
    kill(&child, Signal::INT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is the JSON record");
    let m = &v["measurement"];
    assert_eq!(m["outcomes"]["never_sent"], 0, "{m}");
    let secs = m["duration_s"].as_f64().unwrap();
    assert!(
        (0.5..5.0).contains(&secs),
        "the measurement ends at the interrupt, not at 30 s: {secs} s"
    );
    let requests = m["requests"].as_u64().unwrap();
    let scheduled = (secs * 20.0).round() as u64;
    assert!(
        requests.abs_diff(scheduled) <= 2,
        "{requests} requests in {secs} s at 20 req/s: {m}"
    );
}

/// Thresholds as a CI job uses them: all held is exit 0 with each verdict in the record; one
/// that fails is exit 99; an `abort` one stops a 20 s run at its first breached window and
/// keeps what was measured.
#[test]
fn thresholds_pass_fail_and_abort_the_run() {
    let _shared = support::shared();
    let echo = EchoChild::start(&["--delay", "20ms"]);
    let record = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).expect("stdout is the JSON record")
    };
    let o = gatebench(&[
        "load",
        &echo.url,
        "-c",
        "4",
        "-R",
        "100",
        "-d",
        "2s",
        "--json",
        "-",
        "--threshold",
        "p99<2s",
        "--threshold",
        "errors<1%",
        "--threshold",
        "rate>=0.9*target",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = record(&o);
    let t = v["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 3, "{t:?}");
    assert!(
        t.iter()
            .all(|t| t["passed"] == true && t["aborted"] == false),
        "{t:?}"
    );
    assert_eq!(t[1]["observed"], "errors 0.000%");

    // Every answer takes 20 ms: p50 < 5 ms fails over the first full second and stops the run.
    let o = gatebench(&[
        "load",
        &echo.url,
        "-c",
        "4",
        "-R",
        "100",
        "-d",
        "20s",
        "--json",
        "-",
        "--threshold",
        "p50<5ms over 1s abort",
        "--threshold",
        "p99<2s",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let v = record(&o);
    let t = v["thresholds"].as_array().unwrap();
    assert_eq!(
        (&t[0]["passed"], &t[0]["aborted"], &t[0]["breached_at_s"]),
        (
            &serde_json::json!(false),
            &serde_json::json!(true),
            &serde_json::json!(1.0)
        ),
        "{t:?}"
    );
    assert_eq!(
        (&t[1]["passed"], &t[1]["aborted"]),
        (&serde_json::json!(true), &serde_json::json!(false))
    );
    let secs = v["measurement"]["duration_s"].as_f64().unwrap();
    assert!(
        (0.9..5.0).contains(&secs),
        "stopped at the breach, not at 20 s: {secs} s"
    );
    let err = stderr(&o);
    assert!(
        err.contains(
            "stopped early: threshold 'p50<5ms over 1s abort' breached 1 s into the measurement"
        ),
        "{err}"
    );
    assert!(
        !err.contains("interrupted"),
        "an abort is not a Ctrl-C: {err}"
    );
}

/// `--metrics` as Prometheus scrapes it: after the run (held open by `--metrics-linger`), the
/// exposition's counters equal the JSON record's exactly, every series carries the label.
#[test]
fn metrics_scraped_after_the_run_equal_the_record() {
    let _shared = support::shared();
    let echo = EchoChild::start(&[]);
    let dir = support::temp_dir("metrics");
    let json = dir.join("run.json");
    let mut child = Command::new(BIN)
        .args([
            "load",
            &echo.url,
            "-c",
            "4",
            "-R",
            "300",
            "-d",
            "2s",
            "--warmup",
            "1s",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-label",
            "scenario=echo",
            "--metrics-linger",
            "20s",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gatebench load");
    // stderr is read to its end on a thread of its own: closing it after the `Metrics:` line
    // made the child's next line (the banner) fail, and the child end without a record.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr_pipe).lines() {
            let line = line.unwrap_or_default();
            if let Some(u) = line.strip_prefix("Metrics: ") {
                let _ = tx.send(u.to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap_or_default();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // The record is written before the linger starts; a child that ends first has failed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let record: serde_json::Value = loop {
        if let Ok(text) = std::fs::read_to_string(&json) {
            if let Ok(v) = serde_json::from_str(&text) {
                break v;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("gatebench load ended ({status}) without a record");
        }
        assert!(std::time::Instant::now() < deadline, "no record after 60 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    kill(&child, Signal::INT);
    let _ = child.wait();
    let _ = reader.join();
    let value = |series: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .parse()
            .unwrap()
    };
    // A series' phase is the second a request finished in; the record's, the phase it was
    // sent in: the two differ by the requests in flight across the warm-up's end, so the
    // totals over both phases are what must agree, exactly.
    let (w, m) = (&record["warmup"], &record["measurement"]);
    let both =
        |series: &dyn Fn(&str) -> String| value(&series("warmup")) + value(&series("measurement"));
    let ok = both(&|p| {
        format!("gatebench_requests_total{{scenario=\"echo\",phase=\"{p}\",outcome=\"ok\"}}")
    });
    let record_ok = w["outcomes"]["ok"].as_u64().unwrap() + m["outcomes"]["ok"].as_u64().unwrap();
    assert_eq!(ok, record_ok, "{text}");
    let all: u64 = text
        .lines()
        .filter(|l| l.starts_with("gatebench_requests_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let scheduled = w["requests"].as_u64().unwrap() + m["requests"].as_u64().unwrap();
    assert_eq!(all, scheduled, "every scheduled request, in one class");
    let count = both(&|p| {
        format!("gatebench_request_duration_seconds_count{{scenario=\"echo\",phase=\"{p}\"}}")
    });
    let record_count =
        w["latency"]["count"].as_u64().unwrap() + m["latency"]["count"].as_u64().unwrap();
    assert_eq!(count, record_count);
    assert_eq!(value("gatebench_phase{scenario=\"echo\"}"), 2);
}

/// `--remote-write` to a port that refuses: said once on stderr, counted, and the run goes on
/// to its end and its report, exit 0.
#[test]
fn remote_write_to_a_refusing_port_is_said_once_and_the_run_goes_on() {
    let _shared = support::shared();
    let echo = EchoChild::start(&[]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/api/v1/write");
    let t = std::time::Instant::now();
    let o = gatebench(&[
        "load",
        &echo.url,
        "-c",
        "2",
        "-d",
        "3s",
        "-q",
        "--remote-write",
        &url,
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("the run goes on"))
        .collect();
    assert_eq!(said.len(), 1, "said once:\n{err}");
    assert!(
        said[0].contains(&url) && said[0].contains("refused"),
        "{err}"
    );
    // The tally at the end: a push a second and the last, every one failed.
    let tally = err
        .lines()
        .find(|l| l.contains("pushes failed"))
        .unwrap_or_else(|| panic!("a tally in\n{err}"));
    let (failed, of) = tally
        .split_once(" of ")
        .map(|(a, b)| {
            (
                a.rsplit(' ').next().unwrap().parse::<u64>().unwrap(),
                b.split(' ').next().unwrap().parse::<u64>().unwrap(),
            )
        })
        .unwrap();
    assert!(failed >= 3 && failed == of, "{tally}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("Requests/sec"));
}

#[test]
fn find_max_refuses_a_bad_objective_before_any_load() {
    for (args, want) in [
        (
            vec!["--find-max", "--slo", "p98<10ms"],
            "not a reported percentile",
        ),
        (vec!["--find-max", "--slo", "errors<2"], "percentage"),
        (vec!["--find-max"], "--slo"),
        (
            vec!["--find-max", "--slo", "p99<1ms", "-R", "100"],
            "cannot be used with",
        ),
        (
            vec!["--find-max", "--slo", "p99<1ms", "--precision", "0"],
            "--precision",
        ),
        (
            vec!["--find-max", "--slo", "p99<1ms", "--start-rate", "-4"],
            "--start-rate",
        ),
    ] {
        let mut all = vec!["load", "http://127.0.0.1:1/"];
        all.extend(args.iter().copied());
        let o = gatebench(&all);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(want), "{all:?}: expected `{want}` in {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{all:?}: {err}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_second_ctrl_c_ends_the_process_at_once() {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    // The back-end answers after 8 s: after the first Ctrl-C the generator waits for its one
    // outstanding request (up to the 10 s timeout), so only the second can explain an end
    // within 3 s.
    let echo = EchoChild::start(&["--delay", "8s"]);
    let mut child = Command::new(BIN)
        .args(["load", &echo.url, "-c", "1", "-d", "60s", "--no-probe"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gatebench load");
    // The banner comes just before the handlers are installed and the load starts.
    let mut banner = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    kill(&child, Signal::INT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C lets the outstanding request finish (banner: {banner})"
    );
    kill(&child, Signal::INT);
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "still running 3 s after the second Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(2), "killed by SIGINT: {status}");
}

#[test]
fn cost_refuses_bad_input_before_any_load() {
    for (extra, want) in [
        (vec!["-R", "0"], "-R/--rate"),
        (vec!["-R", "100", "--repeats", "1"], "--repeats"),
        (vec!["-R", "100", "--via-pid", "4294967"], "--via-pid"),
        (vec!["-R", "100", "-d", "0s"], "-d/--duration"),
    ] {
        let mut args = vec![
            "cost",
            "--direct",
            "http://127.0.0.1:1/",
            "--via",
            "http://127.0.0.1:2/",
        ];
        args.extend(extra.iter().copied());
        let o = gatebench(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
