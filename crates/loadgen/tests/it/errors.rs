//! Each error class, produced by a scripted misbehaving server over a real socket.

use std::time::Duration;

use gatebench_loadgen::RequestBody;
use gatebench_model::Outcome;
use gatebench_testkit::{refused, Behavior, TestServer};

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
    let refused = refused();
    let addr = refused.addr();
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

/// A raw HTTP/1.1 server on 127.0.0.1:0 that answers every request with a complete response
/// (`200`, `Content-Length: 2`, `ok`) followed by `XY`, bytes no request asked for: in the same
/// write, or in a write of its own `pause` later. Counts connections and requests read.
struct TrailingBytes {
    addr: std::net::SocketAddr,
    connections: std::sync::Arc<std::sync::atomic::AtomicU64>,
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
    received: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl TrailingBytes {
    fn start(pause: Option<Duration>) -> TrailingBytes {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let (c, r, b) = (connections.clone(), requests.clone(), received.clone());
        // Detached: it ends with the test binary (it holds nothing else).
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                c.fetch_add(1, Ordering::SeqCst);
                let (r, b) = (r.clone(), b.clone());
                std::thread::spawn(move || {
                    stream.set_nodelay(true).unwrap();
                    let mut held = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        // Requests have no body: one head is one request.
                        while let Some(end) = held.windows(4).position(|w| w == b"\r\n\r\n") {
                            held.drain(..end + 4);
                            r.fetch_add(1, Ordering::SeqCst);
                            let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                            let sent = match pause {
                                None => stream.write_all(&[&answer[..], b"XY"].concat()),
                                Some(pause) => stream.write_all(answer).and_then(|()| {
                                    std::thread::sleep(pause);
                                    stream.write_all(b"XY")
                                }),
                            };
                            if sent.is_err() {
                                return;
                            }
                        }
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                b.fetch_add(n as u64, Ordering::SeqCst);
                                held.extend_from_slice(&chunk[..n]);
                            }
                        }
                    }
                });
            }
        });
        TrailingBytes {
            addr,
            connections,
            requests,
            received,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn connections(&self) -> u64 {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn received(&self) -> u64 {
        self.received.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Issue 23: bytes after a complete response are a protocol error of that exchange, never the
/// next response. Sent in the same write as the response, they are there when the response
/// completes: every exchange is a protocol error, and each takes its connection with it.
#[test]
fn bytes_after_a_complete_response_fail_that_exchange() {
    let server = TrailingBytes::start(None);
    let mut s = spec(&server.url(), 1, Duration::from_secs(10));
    s.stop.requests = Some(3);
    let out = run(s);
    let m = &out.report.measurement;
    assert_eq!(
        m.outcomes.get(Outcome::ProtocolError),
        3,
        "{:?}",
        m.outcomes
    );
    assert_eq!(m.outcomes.total(), 3, "{:?}", m.outcomes);
    assert_eq!(m.error_percent, 100.0);
    assert_eq!(m.connections.opened, 3, "{:?}", m.connections);
    assert_eq!(server.requests(), 3);
    assert_eq!(server.connections(), 3);
    // Every byte the server sent was read: 42 per exchange, "XY" included.
    assert_eq!(m.bytes_read, 3 * 42);
    assert_eq!(m.bytes_written, server.received());
}

/// The same bytes in a write of their own, 50 ms after the response, on a connection whose
/// next request is due 250 ms after the last: the response was complete and correct when it
/// was read, so it counts as answered; the bytes are found before the next request is written,
/// which is counted as a protocol error without being sent, and the connection is closed. The
/// request after that goes on a new connection. Never is `XY…` read as a response.
#[test]
fn bytes_after_a_settled_response_fail_the_next_request_unsent() {
    let server = TrailingBytes::start(Some(Duration::from_millis(50)));
    let mut s = spec(&server.url(), 1, Duration::from_secs(10));
    s.arrival = gatebench_loadgen::Arrival::Open { rate: 4.0 };
    s.stop.requests = Some(4);
    let out = crate::support::run_alone(s);
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.get(Outcome::Ok), 2, "{:?}", m.outcomes);
    assert_eq!(
        m.outcomes.get(Outcome::ProtocolError),
        2,
        "{:?}",
        m.outcomes
    );
    assert_eq!(m.outcomes.total(), 4, "{:?}", m.outcomes);
    assert_eq!(m.error_percent, 50.0);
    // Two requests written and answered, one per connection; the other two never written.
    assert_eq!(server.requests(), 2);
    assert_eq!(server.connections(), 2);
    assert_eq!(m.connections.opened, 2, "{:?}", m.connections);
    assert_eq!(m.bytes_read, 2 * 42);
    // Only the requests written count as written.
    assert_eq!(m.bytes_written, server.received());
}
