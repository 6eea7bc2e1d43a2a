//! The generator's counts checked against numbers it did not produce: the server's own count
//! of the requests it read, and the open model's schedule arithmetic.

use std::time::Duration;

use gatebench_loadgen::{Arrival, StopRule};
use gatebench_model::Outcome;
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{assert_schedule_kept, assert_server_agrees, run, spec};

#[test]
fn generator_and_server_agree_on_requests() {
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 4, Duration::from_millis(500));
    s.threads = Some(2);
    let out = run(s);
    assert_server_agrees(&out, server.requests_seen());
    let m = &out.report.measurement;
    // Every request the server read was either answered (ok) or still in flight at the end.
    let seen = server.requests_seen();
    let ok = m.outcomes.get(Outcome::Ok);
    let in_flight = m.outcomes.get(Outcome::InFlight);
    assert!(
        seen >= ok && seen <= ok + in_flight,
        "server saw {seen}, generator: {:?}",
        m.outcomes
    );
    assert_eq!(m.requests, ok + in_flight, "{:?}", m.outcomes);
}

#[test]
fn open_model_backlog_is_counted_as_never_sent() {
    // 1 connection to a server that never answers, at 100 req/s for 1 s: the connection is
    // stuck on its first request (unanswered at the end: nothing was ever answered), the other
    // 99 tickets were never sent. The schedule's arithmetic gives the total: 100 × 1 s.
    let server = TestServer::start(Behavior::Silent);
    let mut s = spec(&server.url(), 1, Duration::from_secs(1));
    s.arrival = Arrival::Open { rate: 100.0 };
    let out = run(s);
    assert_schedule_kept(&out, 100.0, 1.0);
    let o = &out.report.measurement.outcomes;
    assert_eq!(o.get(Outcome::Unanswered), 1, "{o:?}");
    assert_eq!(o.get(Outcome::NeverSent), 99, "{o:?}");
    assert!(out.report.self_check.schedule_kept_percent.unwrap() < 2.0);
    // Nothing was answered: every ticket waited, and every percentile is a lower bound.
    let l = &out.report.measurement.latency;
    assert_eq!(l.censored, 100, "{l:?}");
    assert!(l.percentiles.iter().all(|p| p.lower_bound), "{l:?}");
}

#[test]
fn open_model_schedules_rate_times_duration_across_threads_and_phases() {
    // 3 connections over 2 threads divide the rate 2:1; the schedule must still hold exactly
    // 300 req/s × (0.5 s warm-up + 1 s), and the server read every request that was sent.
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 3, Duration::from_secs(1));
    s.threads = Some(2);
    s.warmup = Duration::from_millis(500);
    s.arrival = Arrival::Open { rate: 300.0 };
    let out = run(s);
    assert_schedule_kept(&out, 300.0, 1.5);
    assert_eq!(
        out.report.measurement.requests, 300,
        "{:?}",
        out.report.measurement.outcomes
    );
    assert_server_agrees(&out, server.requests_seen());
}

#[test]
fn a_count_is_kept_however_threads_and_connections_divide() {
    // -c 3 -t 2 -R 300 -n 300: one second at 300 req/s, not 1.5 s at 200 req/s (a worker with
    // one connection and half of the count would run twice as long as the other).
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 3, Duration::from_secs(60));
    s.threads = Some(2);
    s.arrival = Arrival::Open { rate: 300.0 };
    s.stop = StopRule {
        duration: None,
        requests: Some(300),
    };
    let out = run(s);
    let m = &out.report.measurement;
    assert_eq!(m.requests, 300, "{:?}", m.outcomes);
    assert_eq!(server.requests_seen(), 300);
    assert!(
        (0.9..1.3).contains(&m.duration_s),
        "300 requests at 300 req/s take about 1 s, took {} s",
        m.duration_s
    );

    // Closed model: connections on different threads answer at different speeds; the count is
    // still exact.
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 3, Duration::from_secs(60));
    s.threads = Some(2);
    s.stop = StopRule {
        duration: None,
        requests: Some(1001),
    };
    let out = run(s);
    assert_eq!(out.report.measurement.outcomes.get(Outcome::Ok), 1001);
    assert_eq!(server.requests_seen(), 1001);
}
