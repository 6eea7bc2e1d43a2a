//! Arrival programs against a real server: the rate each second follows the program, the
//! server's count agrees, a program that ends at rate zero stops sending, and Poisson arrivals
//! keep the mean rate.

use std::time::Duration;

use gatebench_loadgen::{Arrival, ArrivalProgram, RateProgram, Spacing};
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{alone, assert_server_agrees, run_now, spec};

fn program(text: &str, spacing: Spacing) -> Arrival {
    Arrival::Program(ArrivalProgram {
        rate: text.parse::<RateProgram>().expect("a valid program"),
        spacing,
    })
}

/// Steps of 100, 300 and 600 req/s, a second each, after a one-second warm-up: every second
/// of the record asks the program's rate, and the requests sent that second match it (a
/// schedule that ignored the program, e.g. its mean of 333 req/s throughout, is off by two
/// thirds in the first step and by half in the last).
#[test]
fn a_steps_program_is_followed_second_by_second() {
    let (server, out) = alone(|| {
        let server = TestServer::start(Behavior::Echo);
        let mut s = spec(&server.url(), 8, Duration::from_secs(3));
        s.threads = Some(2);
        s.warmup = Duration::from_secs(1);
        s.arrival = program("steps:100,300,600/1s", Spacing::Even);
        let out = run_now(s);
        (server, out)
    });
    let r = &out.report;
    let arrival = r.config.arrival.as_ref().expect("the program is recorded");
    assert_eq!(arrival.program, "steps:100,300,600/1s");
    assert_eq!(arrival.spacing, "even");
    // The mean over the measurement: (100 + 300 + 600) / 3.
    assert!((r.config.rate.unwrap() - 1000.0 / 3.0).abs() < 1e-9);
    let timeline = r.timeline.as_ref().expect("a per-second timeline");
    let full: Vec<_> = timeline.iter().filter(|s| s.length_s > 0.999).collect();
    // Rounded: the last second may end a hair short of a full one.
    let targets: Vec<(f64, f64)> = full
        .iter()
        .map(|s| (s.t_s, (s.target_rate * 1e6).round() / 1e6))
        .collect();
    assert_eq!(
        targets,
        vec![(-1.0, 100.0), (0.0, 100.0), (1.0, 300.0), (2.0, 600.0)],
        "the warm-up holds the first rate, then one step a second"
    );
    // A generator that kept its schedule (its self-check is clean) sent each second's share
    // within 5 %. One starved by other processes on the machine sends late, and its seconds
    // spill into the next; even then, a schedule that ignored the program would be off by far
    // more than half in the first step (333 against 100).
    let tolerance = if r.valid { 0.05 } else { 0.5 };
    for s in &full {
        let off = (s.sent as f64 - s.target_rate).abs();
        assert!(
            off <= tolerance * s.target_rate + 3.0,
            "second {}: {} sent, {} asked (self-check: {:?})",
            s.t_s,
            s.sent,
            s.target_rate,
            r.self_check.warnings
        );
    }
    // 100 warm-up + 1000 measured requests, every one accounted for.
    let scheduled = r.measurement.requests + r.warmup.as_ref().map_or(0, |w| w.requests);
    assert_eq!(scheduled, 1100);
    let sent: u64 = timeline.iter().map(|s| s.sent).sum();
    assert!(
        (1090..=1100).contains(&sent),
        "{sent} sent of 1100 scheduled"
    );
    assert_eq!(r.measurement.outcomes.errors(), 0);
    assert_server_agrees(&out, server.requests_seen());
}

/// A ramp down to zero over one second, in a two-second run: the 101 requests of the ramp
/// (coordinates 0 to 100, the last due as the ramp ends) are sent within its second, and the
/// run ends there, with nothing counted as never sent.
#[test]
fn a_program_that_ends_at_zero_stops_sending() {
    let out = alone(|| {
        let server = TestServer::start(Behavior::Echo);
        let mut s = spec(&server.url(), 4, Duration::from_secs(2));
        s.arrival = program("ramp:200..0/1s", Spacing::Even);
        run_now(s)
    });
    let r = &out.report;
    let timeline = r.timeline.as_ref().expect("a timeline");
    let sent: u64 = timeline.iter().map(|s| s.sent).sum();
    assert_eq!(sent, 101, "{timeline:?}");
    assert!(
        timeline
            .iter()
            .all(|s| s.t_s < 1.0 || (s.target_rate == 0.0 && s.sent <= 1)),
        "{timeline:?}"
    );
    assert!(
        r.measurement.duration_s < 1.5,
        "{}",
        r.measurement.duration_s
    );
    assert_eq!(
        r.measurement
            .outcomes
            .get(gatebench_model::Outcome::NeverSent),
        0
    );
}

/// Poisson arrivals at 400 req/s for 3 s: 1,200 expected, with a standard deviation of about
/// 35; the seed is recorded.
#[test]
fn poisson_arrivals_keep_the_mean_rate() {
    let out = alone(|| {
        let server = TestServer::start(Behavior::Echo);
        let mut s = spec(&server.url(), 8, Duration::from_secs(3));
        s.threads = Some(2);
        s.arrival = program("400", Spacing::Poisson { seed: 11 });
        run_now(s)
    });
    let r = &out.report;
    let arrival = r.config.arrival.as_ref().unwrap();
    assert_eq!(
        (arrival.spacing.as_str(), arrival.seed),
        ("poisson", Some(11))
    );
    let n = r.measurement.requests;
    assert!(
        (1060..=1340).contains(&n),
        "{n} requests, 1,200 ± 4σ expected"
    );
    // Seconds differ, as a Poisson process's counts do; even spacing would give 400 each.
    let counts: Vec<u64> = r
        .timeline
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.sent)
        .collect();
    assert!(counts.iter().any(|c| *c != 400), "{counts:?}");
}

/// A constant evenly spaced rate keeps today's record: no program, no timeline.
#[test]
fn a_constant_rate_adds_no_timeline() {
    let server = TestServer::start(Behavior::Echo);
    let mut s = spec(&server.url(), 2, Duration::from_millis(300));
    s.arrival = Arrival::Open { rate: 100.0 };
    let out = crate::support::run(s);
    assert!(out.report.config.arrival.is_none());
    assert!(out.report.timeline.is_none());
    let json = serde_json::to_string(&out.report).unwrap();
    assert!(!json.contains("timeline") && !json.contains("\"arrival\""));
}
