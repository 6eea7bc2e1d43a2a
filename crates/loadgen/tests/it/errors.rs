//! Each error class, produced by a scripted misbehaving server over a real socket.

use std::time::Duration;

use gatebench_loadgen::RequestBody;
use gatebench_model::Outcome;
use gatebench_testkit::{refused_addr, Behavior, TestServer};

use crate::support::{assert_server_agrees, run, spec};

/// Runs 2 connections for `d` against `server` and returns the measurement outcomes, checked
/// against the server's own count of the requests it read.
fn outcomes_of(
    server: &TestServer,
    d: Duration,
    tweak: impl FnOnce(&mut gatebench_loadgen::LoadSpec),
) -> gatebench_model::OutcomeCounts {
    let mut s = spec(&server.url(), 2, d);
    tweak(&mut s);
    let before = server.requests_seen();
    let out = run(s);
    assert_server_agrees(&out, server.requests_seen() - before);
    out.report.measurement.outcomes
}

/// Asserts that `want` is the only class besides the requests cut off at the end (in flight,
/// or unanswered when nothing was ever answered).
fn only(o: &gatebench_model::OutcomeCounts, want: Outcome) {
    assert!(o.get(want) > 0, "expected {want}: {o:?}");
    for (class, n) in o.nonzero() {
        assert!(
            class == want || class == Outcome::InFlight || class == Outcome::Unanswered,
            "unexpected {n} × {class} besides {want}: {o:?}"
        );
    }
}

#[test]
fn status_classes() {
    for (status, want) in [
        (404, Outcome::Status4xx),
        (503, Outcome::Status5xx),
        (301, Outcome::Status3xx),
    ] {
        let server = TestServer::start(Behavior::Respond {
            status,
            body: b"x".to_vec(),
        });
        let o = outcomes_of(&server, Duration::from_millis(300), |_| {});
        only(&o, want);
        assert_eq!(o.responses(), o.get(want));
    }
}

/// An error endpoint declared to answer 500 (a suite's `expect_status`): the probe accepts it
/// and the load counts it as a correct answer; undeclared, the probe refuses it; another 5xx
/// stays an error.
#[test]
fn a_declared_status_passes_the_probe_and_is_no_error() {
    let server = TestServer::start(Behavior::Respond {
        status: 500,
        body: b"{\"message\":\"abcd\"}".to_vec(),
    });
    let undeclared =
        gatebench_loadgen::LoadConfig::try_new(spec(&server.url(), 1, Duration::from_millis(100)))
            .unwrap();
    let e = gatebench_loadgen::probe(&undeclared)
        .unwrap_err()
        .to_string();
    assert!(e.contains("5xx"), "{e}");
    let mut s = spec(&server.url(), 1, Duration::from_millis(100));
    s.expect_status = Some(500);
    gatebench_loadgen::probe(&gatebench_loadgen::LoadConfig::try_new(s).unwrap()).unwrap();

    let o = outcomes_of(&server, Duration::from_millis(300), |s| {
        s.expect_status = Some(500)
    });
    only(&o, Outcome::Ok);
    assert_eq!(o.errors(), 0, "{o:?}");

    let other = TestServer::start(Behavior::Respond {
        status: 503,
        body: b"x".to_vec(),
    });
    let o = outcomes_of(&other, Duration::from_millis(300), |s| {
        s.expect_status = Some(500)
    });
    only(&o, Outcome::Status5xx);
}

#[test]
fn connection_refused_backs_off_instead_of_spinning() {
    let addr = refused_addr();
    let out = {
        let s = spec(&format!("http://{addr}/"), 2, Duration::from_millis(1000));
        run(s)
    };
    let o = &out.report.measurement.outcomes;
    only(o, Outcome::ConnectRefused);
    // With a 10 ms back-off doubling per failure, 2 slots make at most ~8 attempts each in 1 s;
    // a generator that spun would make thousands.
    assert!(o.get(Outcome::ConnectRefused) <= 40, "{o:?}");
    assert_eq!(
        out.report.measurement.connections.connect_failures,
        o.get(Outcome::ConnectRefused)
    );
}

#[test]
fn reset_by_peer() {
    let server = TestServer::start(Behavior::ResetAfterRequest);
    only(
        &outcomes_of(&server, Duration::from_millis(400), |_| {}),
        Outcome::Reset,
    );
}

#[test]
fn incomplete_body() {
    let server = TestServer::start(Behavior::CloseMidBody);
    only(
        &outcomes_of(&server, Duration::from_millis(400), |_| {}),
        Outcome::Incomplete,
    );
}

#[test]
fn protocol_error() {
    let server = TestServer::start(Behavior::Garbage);
    only(
        &outcomes_of(&server, Duration::from_millis(400), |_| {}),
        Outcome::ProtocolError,
    );
}

#[test]
fn read_timeout() {
    let server = TestServer::start(Behavior::Hang);
    let o = outcomes_of(&server, Duration::from_millis(1200), |s| {
        s.timeout = Duration::from_millis(200)
    });
    only(&o, Outcome::Timeout);
    // 2 connections × ~1.2 s / 0.2 s, give or take the back-off after each failure.
    assert!((2..=14).contains(&o.get(Outcome::Timeout)), "{o:?}");
}

#[test]
fn a_silent_target_is_100_percent_errors_and_says_so() {
    // Accepts connections, never answers: with the default timeout longer than the run,
    // nothing times out, yet the run must not read as clean.
    let server = TestServer::start(Behavior::Silent);
    let mut s = spec(&server.url(), 2, Duration::from_millis(300));
    s.timeout = Duration::from_secs(10);
    let out = run(s);
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.get(Outcome::Unanswered), 2, "{:?}", m.outcomes);
    assert_eq!(m.requests, 2);
    assert_eq!(m.error_percent, 100.0);
    assert_eq!(m.latency.censored, 2);
    assert!(m.latency.point(99.0).unwrap().lower_bound);
    assert!(
        m.latency.at(50.0).unwrap() >= 250.0,
        "they waited the whole run: {:?}",
        m.latency
    );
    assert_eq!(out.report.target_warnings.len(), 1, "{:?}", out.report);
    assert!(
        out.report.target_warnings[0].contains("answered none of the 2 requests"),
        "{:?}",
        out.report.target_warnings
    );
}

#[test]
fn outstanding_at_the_deadline_is_in_flight_not_an_error() {
    // Every response takes 300 ms; the run ends 100 ms after the second round was sent: those
    // requests had waited less than any answered one, and may well have been answered in time.
    let echo = crate::support::Echo::start(Duration::from_millis(300));
    let out = run(spec(&echo.url(), 2, Duration::from_millis(400)));
    let o = &out.report.measurement.outcomes;
    assert_eq!(o.get(Outcome::Ok), 2, "{o:?}");
    assert_eq!(o.get(Outcome::InFlight), 2, "{o:?}");
    assert_eq!(o.total(), 4);
    assert_eq!(o.error_percent(), 0.0);
    assert_eq!(out.report.measurement.latency.censored, 0);
    assert!(
        out.report.target_warnings.is_empty(),
        "{:?}",
        out.report.target_warnings
    );
}

#[test]
fn body_mismatch_under_verification() {
    let server = TestServer::start(Behavior::WrongBody);
    let o = outcomes_of(&server, Duration::from_millis(300), |s| {
        s.method = "POST".into();
        s.body = RequestBody::Payload(100);
        s.verify = true;
    });
    only(&o, Outcome::BodyMismatch);
    // The same server without verification is "fine": that is what the option is for.
    let o = outcomes_of(&server, Duration::from_millis(300), |s| {
        s.method = "POST".into();
        s.body = RequestBody::Payload(100);
    });
    only(&o, Outcome::Ok);
}

#[test]
fn chunked_responses_and_server_side_closes_are_fine() {
    let server = TestServer::start(Behavior::Chunked {
        chunks: 5,
        chunk_size: 1000,
    });
    let o = outcomes_of(&server, Duration::from_millis(300), |_| {});
    only(&o, Outcome::Ok);
    let server = TestServer::start(Behavior::CloseAfterEach);
    let mut s = spec(&server.url(), 2, Duration::from_millis(300));
    s.threads = Some(1);
    let out = run(s);
    only(&out.report.measurement.outcomes, Outcome::Ok);
    let c = &out.report.measurement.connections;
    assert!(
        c.reconnects > 0 && c.opened >= out.report.measurement.outcomes.get(Outcome::Ok),
        "{c:?}"
    );
}

#[test]
fn connect_timeout_when_the_accept_queue_is_full() {
    // A listener that never accepts: once its queue is full, the kernel drops further SYNs
    // and connects hang until the generator's connect timeout.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            fillers.push(s);
        }
    }
    let mut s = spec(&format!("http://{addr}/"), 2, Duration::from_millis(800));
    s.connect_timeout = Duration::from_millis(100);
    let o = run(s).report.measurement.outcomes;
    // Nothing was ever connected, so nothing was sent: connect timeouts and, at the end,
    // attempts still in progress.
    only(&o, Outcome::ConnectTimeout);
    assert_eq!(o.get(Outcome::Unanswered), 0, "{o:?}");
    assert_eq!(o.get(Outcome::Ok), 0);
}

#[test]
fn a_short_wait_at_the_end_is_in_flight_not_a_stall() {
    // The target answers at once for 300 ms, then holds every response. At the end of a
    // 700 ms run the two requests held have waited ~400 ms: longer than any answer (so they
    // are censored values in the latency), but under the one-second stall floor, so they stay
    // in flight, not errors. A scheduler hiccup at the end of a healthy run is not a stall.
    let (_server, out) = crate::support::alone(|| {
        let server = TestServer::start(Behavior::StallWindow {
            from: Duration::from_millis(300),
            length: Duration::from_secs(3600),
        });
        let out = crate::support::run_now(spec(&server.url(), 2, Duration::from_millis(700)));
        (server, out)
    });
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.get(Outcome::InFlight), 2, "{:?}", m.outcomes);
    assert_eq!(m.outcomes.get(Outcome::Unanswered), 0, "{:?}", m.outcomes);
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert_eq!(m.latency.censored, 2, "{:?}", m.latency);
    assert!(m.latency.point(100.0).unwrap().lower_bound);
    assert!(m.latency.max_ms >= 250.0, "{:?}", m.latency);
}
