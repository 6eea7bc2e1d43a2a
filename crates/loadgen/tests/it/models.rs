//! Both arrival models against the in-process echo: throughput happens, the rate is kept,
//! latency is calibrated, and a stalled target shows in the corrected tail only.

use std::time::Duration;

use gatebench_loadgen::{Arrival, RequestBody, StopRule};
use gatebench_model::Outcome;
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{
    alone, assert_schedule_kept, assert_server_agrees, run, run_alone, run_now, spec, Echo,
};

#[test]
fn closed_model_against_echo() {
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.url(), 4, Duration::from_millis(500));
    s.threads = Some(2);
    let out = run(s);
    let m = &out.report.measurement;
    assert!(m.outcomes.get(Outcome::Ok) > 100, "{:?}", m.outcomes);
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert!(
        m.latency_uncorrected.is_none(),
        "closed model keeps one histogram"
    );
    assert_eq!(m.latency.count, m.outcomes.responses());
    assert_eq!(
        m.connections.opened, 4,
        "keep-alive: one connection per slot"
    );
    // Every request is the same bytes and so is every answer: the byte counts are whole
    // multiples of them. A request still in flight at the end was written, or was about to be
    // when the run's end came (it is in flight, unwritten): the requests written are the
    // answered ones and some of those in flight.
    let answered = m.outcomes.responses();
    let in_flight = m.outcomes.get(Outcome::InFlight);
    assert!(
        m.bytes_written > 0
            && (answered..=answered + in_flight).any(|written| m.bytes_written % written == 0),
        "{} over {answered} answered and {in_flight} in flight",
        m.bytes_written
    );
    assert!(
        m.bytes_read > 0 && m.bytes_read % answered == 0,
        "{} over {answered}",
        m.bytes_read
    );
}

#[test]
fn open_model_rate_is_accurate() {
    // 1,000 req/s for 5 s must send 5,000 ± 1 %.
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.url(), 20, Duration::from_secs(5));
    s.arrival = Arrival::Open { rate: 1000.0 };
    let out = run_alone(s);
    let m = &out.report.measurement;
    let sent = m.requests - m.outcomes.get(Outcome::NeverSent);
    assert!(
        (4950..=5050).contains(&sent),
        "sent {sent}, outcomes {:?}",
        m.outcomes
    );
    assert!(
        (m.sent_rps - 1000.0).abs() < 20.0,
        "sent_rps {}",
        m.sent_rps
    );
    assert_eq!(m.target_rps, Some(1000.0));
    assert!(m.latency_uncorrected.is_some());
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert_schedule_kept(&out, 1000.0, 5.0);
}

#[test]
fn latency_is_calibrated_against_a_known_delay() {
    // The echo holds every response 20 ms: p50 must read between 20 and 22 ms.
    let echo = Echo::start(Duration::from_millis(20));
    let out = run_alone(spec(&echo.url(), 4, Duration::from_millis(1500)));
    let l = &out.report.measurement.latency;
    let p50 = l.at(50.0).unwrap();
    assert!((20.0..22.0).contains(&p50), "p50 {p50} ms");
    assert!(
        l.min_ms >= 20.0,
        "no response can beat the delay: min {} ms",
        l.min_ms
    );
}

#[test]
fn stalled_target_shows_in_the_corrected_tail_only() {
    // 200 req/s over 2 connections; the target holds every response for 1 s from t = 1 s.
    // Requests due during the stall wait for a free connection: measured from their due time
    // (corrected) they take up to a second; measured from the send (uncorrected) only the two
    // requests caught inside the stall are slow, well under 1 % of the run.
    // The stall window counts from the server's start: start it once the machine is ours.
    let (server, out) = alone(|| {
        let server = TestServer::start(Behavior::StallWindow {
            from: Duration::from_millis(1000),
            length: Duration::from_millis(1000),
        });
        let mut s = spec(&server.url(), 2, Duration::from_millis(3500));
        s.arrival = Arrival::Open { rate: 200.0 };
        let out = run_now(s);
        (server, out)
    });
    let m = &out.report.measurement;
    let corrected = m.latency.at(99.0).unwrap();
    let uncorrected = m.latency_uncorrected.as_ref().unwrap().at(99.0).unwrap();
    assert!(
        corrected > 600.0,
        "corrected p99 {corrected} ms must be near the 1 s stall"
    );
    assert!(corrected < 1600.0, "corrected p99 {corrected} ms");
    assert!(
        uncorrected < 100.0,
        "uncorrected p99 {uncorrected} ms must hide the stall"
    );
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert_schedule_kept(&out, 200.0, 3.5);
    assert_server_agrees(&out, server.requests_seen());
}

#[test]
fn count_stop_rule_sends_exactly_n_and_the_server_saw_each() {
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 8, Duration::from_secs(60));
    s.threads = Some(2);
    s.stop = StopRule {
        duration: None,
        requests: Some(1000),
    };
    s.method = "POST".into();
    s.body = RequestBody::Payload(50);
    s.verify = true;
    let out = run(s);
    let m = &out.report.measurement;
    assert_eq!(m.requests, 1000);
    assert_eq!(m.outcomes.get(Outcome::Ok), 1000, "{:?}", m.outcomes);
    assert_eq!(
        server.requests_seen(),
        1000,
        "no request lost or duplicated"
    );
}

#[test]
fn warmup_is_measured_and_reported_apart() {
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.url(), 2, Duration::from_millis(400));
    s.warmup = Duration::from_millis(400);
    let out = run(s);
    let w = out.report.warmup.as_ref().expect("a warm-up phase");
    assert!(w.outcomes.get(Outcome::Ok) > 0);
    assert!((w.duration_s - 0.4).abs() < 1e-6);
    assert!((out.report.measurement.duration_s - 0.4).abs() < 0.05);
    assert!(out.report.measurement.outcomes.get(Outcome::Ok) > 0);
    assert_eq!(
        out.warmup.latency.len() + out.measurement.latency.len(),
        w.latency.count + out.report.measurement.latency.count
    );
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.url(), 2, Duration::from_secs(60));
    s.keepalive = false;
    s.stop = StopRule {
        duration: None,
        requests: Some(50),
    };
    let out = run(s);
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.get(Outcome::Ok), 50, "{:?}", m.outcomes);
    assert_eq!(m.connections.opened, 50);
}

#[test]
fn per_thread_histograms_merge_exactly() {
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.url(), 4, Duration::from_millis(400));
    s.threads = Some(2);
    let out = run(s);
    let m = &out.report.measurement;
    // Every complete response is in the merged histogram once.
    assert_eq!(out.measurement.latency.len(), m.outcomes.responses());
    assert_eq!(m.latency.count, m.outcomes.responses());
}

#[test]
fn the_last_partial_second_is_reported_with_its_real_length() {
    let echo = Echo::start(Duration::ZERO);
    let config =
        gatebench_loadgen::LoadConfig::try_new(spec(&echo.url(), 2, Duration::from_millis(1500)))
            .unwrap();
    let mut views = Vec::new();
    let mut collect = |v: &gatebench_loadgen::IntervalView| views.push(v.clone());
    gatebench_loadgen::run(
        config,
        gatebench_loadgen::RunOptions {
            on_interval: Some(&mut collect),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(views.len(), 2, "{views:?}");
    assert_eq!(views[0].length, Duration::from_secs(1));
    let last = &views[1];
    assert!(
        last.length > Duration::from_millis(400) && last.length < Duration::from_millis(700),
        "{last:?}"
    );
    let expected = last.responses as f64 / last.length.as_secs_f64();
    assert!((last.rps - expected).abs() < 1e-6, "{last:?}");
}

#[test]
fn a_target_that_stops_answering_half_way_shows_in_the_tail() {
    // Open model, 5 s: the target answers for 2.5 s, then reads requests and answers none. With
    // the default 10 s timeout nothing times out: the stalled requests are unanswered at the
    // end and the backlog waits. The corrected p99 must show seconds, as a lower bound: the
    // last 1 % of the 1,000 requests were due 2.45 s or more before the end.
    // The stall window counts from the server's start: start it once the machine is ours.
    let (server, out) = alone(|| {
        let server = TestServer::start(Behavior::StallWindow {
            from: Duration::from_millis(2500),
            length: Duration::from_secs(3600),
        });
        let mut s = spec(&server.url(), 10, Duration::from_secs(5));
        s.threads = Some(2);
        s.arrival = Arrival::Open { rate: 200.0 };
        let out = run_now(s);
        (server, out)
    });
    let m = &out.report.measurement;
    assert_schedule_kept(&out, 200.0, 5.0);
    assert!(m.error_percent > 0.0, "{:?}", m.outcomes);
    assert_eq!(m.outcomes.get(Outcome::Unanswered), 10, "{:?}", m.outcomes);
    let p99 = m.latency.point(99.0).unwrap();
    assert!(p99.ms >= 2000.0, "corrected p99 {} ms", p99.ms);
    assert!(
        p99.lower_bound,
        "p99 falls on unanswered requests: {:?}",
        m.latency
    );
    // Answered-only latency, as wrk would show it, hides all of that.
    let answered = m
        .latency_answered
        .as_ref()
        .expect("answered-only latency is kept");
    assert!(answered.at(99.0).unwrap() < 1000.0, "{answered:?}");
    assert!(
        out.report
            .target_warnings
            .iter()
            .any(|w| w.contains("stalled")),
        "{:?}",
        out.report.target_warnings
    );
    assert_server_agrees(&out, server.requests_seen());
}

#[test]
fn a_stall_longer_than_the_timeout_shows_in_the_tail() {
    // Open model, 5 s at 100 req/s, --timeout 1s; the target holds every response from 1 s to
    // 3.5 s. Requests time out (errors, censored at 1 s and more from their due time), and the
    // backlog answered after the stall carries waits of up to 2.5 s (the last 1 % of the 500
    // requests, 2.45 s and more).
    // The stall window counts from the server's start: start it once the machine is ours.
    let (server, out) = alone(|| {
        let server = TestServer::start(Behavior::StallWindow {
            from: Duration::from_secs(1),
            length: Duration::from_millis(2500),
        });
        let mut s = spec(&server.url(), 2, Duration::from_secs(5));
        s.arrival = Arrival::Open { rate: 100.0 };
        s.timeout = Duration::from_secs(1);
        let out = run_now(s);
        (server, out)
    });
    let m = &out.report.measurement;
    assert_schedule_kept(&out, 100.0, 5.0);
    assert!(m.outcomes.get(Outcome::Timeout) >= 2, "{:?}", m.outcomes);
    assert!(m.error_percent > 0.0, "{:?}", m.outcomes);
    let p99 = m.latency.at(99.0).unwrap();
    assert!(p99 >= 2000.0, "corrected p99 {p99} ms: {:?}", m.latency);
    assert!(m.latency.censored >= 2, "{:?}", m.latency);
    assert_server_agrees(&out, server.requests_seen());
}
