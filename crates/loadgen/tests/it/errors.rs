//! Each error class, produced by a scripted misbehaving server over a real socket.

use std::time::Duration;

use gatebench_loadgen::RequestBody;
use gatebench_model::Outcome;
use gatebench_testkit::{refused_addr, Behavior, TestServer};

use crate::support::{assert_counts_add_up, run, spec};

/// Runs 2 connections for `d` against `url` and returns the measurement outcomes.
fn outcomes_of(
    url: &str,
    d: Duration,
    tweak: impl FnOnce(&mut gatebench_loadgen::LoadSpec),
) -> gatebench_model::OutcomeCounts {
    let mut s = spec(url, 2, d);
    tweak(&mut s);
    let out = run(s);
    assert_counts_add_up(&out);
    out.report.measurement.outcomes
}

/// Asserts that `want` is the only class besides in-flight ones at the end.
fn only(o: &gatebench_model::OutcomeCounts, want: Outcome) {
    assert!(o.get(want) > 0, "expected {want}: {o:?}");
    for (class, n) in o.nonzero() {
        assert!(
            class == want || class == Outcome::InFlight,
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
        let o = outcomes_of(&server.url(), Duration::from_millis(300), |_| {});
        only(&o, want);
        assert_eq!(o.responses(), o.get(want));
    }
}

#[test]
fn connection_refused_backs_off_instead_of_spinning() {
    let addr = refused_addr();
    let out = {
        let s = spec(&format!("http://{addr}/"), 2, Duration::from_millis(1000));
        run(s)
    };
    assert_counts_add_up(&out);
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
        &outcomes_of(&server.url(), Duration::from_millis(400), |_| {}),
        Outcome::Reset,
    );
}

#[test]
fn incomplete_body() {
    let server = TestServer::start(Behavior::CloseMidBody);
    only(
        &outcomes_of(&server.url(), Duration::from_millis(400), |_| {}),
        Outcome::Incomplete,
    );
}

#[test]
fn protocol_error() {
    let server = TestServer::start(Behavior::Garbage);
    only(
        &outcomes_of(&server.url(), Duration::from_millis(400), |_| {}),
        Outcome::ProtocolError,
    );
}

#[test]
fn read_timeout() {
    let server = TestServer::start(Behavior::Hang);
    let o = outcomes_of(&server.url(), Duration::from_millis(1200), |s| {
        s.timeout = Duration::from_millis(200)
    });
    only(&o, Outcome::Timeout);
    // 2 connections × ~1.2 s / 0.2 s, give or take the back-off after each failure.
    assert!((2..=14).contains(&o.get(Outcome::Timeout)), "{o:?}");
}

#[test]
fn outstanding_at_the_deadline_is_in_flight_not_an_error() {
    let server = TestServer::start(Behavior::Silent);
    let o = outcomes_of(&server.url(), Duration::from_millis(300), |_| {});
    assert_eq!(o.get(Outcome::InFlight), 2, "{o:?}");
    assert_eq!(o.total(), 2);
    assert_eq!(o.error_percent(), 0.0);
}

#[test]
fn body_mismatch_under_verification() {
    let server = TestServer::start(Behavior::WrongBody);
    let o = outcomes_of(&server.url(), Duration::from_millis(300), |s| {
        s.method = "POST".into();
        s.body = RequestBody::Payload(100);
        s.verify = true;
    });
    only(&o, Outcome::BodyMismatch);
    // The same server without verification is "fine": that is what the option is for.
    let o = outcomes_of(&server.url(), Duration::from_millis(300), |s| {
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
    let o = outcomes_of(&server.url(), Duration::from_millis(300), |_| {});
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
    let o = outcomes_of(
        &format!("http://{addr}/"),
        Duration::from_millis(800),
        |s| {
            s.connect_timeout = Duration::from_millis(100);
        },
    );
    assert!(o.get(Outcome::ConnectTimeout) > 0, "{o:?}");
    assert_eq!(o.get(Outcome::Ok), 0);
}
