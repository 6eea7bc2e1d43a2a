//! Counts add up, and the server's own count agrees with the generator's.

use std::time::Duration;

use gatebench_loadgen::Arrival;
use gatebench_model::Outcome;
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{assert_counts_add_up, run, spec};

#[test]
fn generator_and_server_agree_on_requests() {
    let server = TestServer::start(Behavior::Echo);
    let out = run(spec(&server.url(), 4, Duration::from_millis(500)));
    assert_counts_add_up(&out);
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
}

#[test]
fn open_model_backlog_is_counted_as_never_sent() {
    // 1 connection to a server that never answers, at 100 req/s for 1 s: the connection is
    // stuck on its first request (in flight at the end), the other ~99 tickets were never sent.
    let server = TestServer::start(Behavior::Silent);
    let mut s = spec(&server.url(), 1, Duration::from_secs(1));
    s.arrival = Arrival::Open { rate: 100.0 };
    let out = run(s);
    assert_counts_add_up(&out);
    let o = &out.report.measurement.outcomes;
    assert_eq!(o.get(Outcome::InFlight), 1, "{o:?}");
    assert_eq!(o.get(Outcome::NeverSent), 99, "{o:?}");
    assert_eq!(o.total(), 100);
    assert!(out.report.self_check.schedule_kept_percent.unwrap() < 2.0);
}
