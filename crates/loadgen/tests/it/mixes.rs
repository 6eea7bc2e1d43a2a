//! Request mixes and traffic replay against a scripted server that logs every request it reads:
//! a mix's classes are sent exactly in proportion to their weights and add up to the totals; a
//! replay sends every recorded request, at its recorded time scaled by the speed.

use std::path::Path;
use std::time::{Duration, Instant};

use gatebench_loadgen::{Arrival, LoadSpec, Mix, Replay, ReplayFormat, Requests, StopRule};
use gatebench_model::histogram::{decode, new_histogram};
use gatebench_model::{LoadReport, Outcome};
use gatebench_testkit::{Behavior, TestServer};

use crate::support;

const MIX: &str = r#"
[[request]]
name = "a"
weight = 1
path = "/a"

[[request]]
weight = 2
path = "/b?x=1"
headers = ["X-Class: b"]

[[request]]
weight = 7
method = "POST"
path = "/c"
body = "hello"
"#;

fn ok_server() -> TestServer {
    TestServer::start(Behavior::Respond {
        status: 200,
        body: b"ok".to_vec(),
    })
}

fn mix_spec(url: &str, n: u64) -> LoadSpec {
    let mut s = support::spec(url, 4, Duration::from_secs(60));
    s.stop = StopRule {
        duration: None,
        requests: Some(n),
    };
    s.requests = Requests::Mix(Mix::parse("mix.toml", MIX, Path::new(".")).unwrap());
    s
}

/// Each class's histograms add up, bucket by bucket, to the measurement's.
fn assert_classes_add_up(r: &LoadReport) {
    let classes = r.classes.as_ref().expect("a mix has classes");
    let m = &r.measurement;
    let mut outcomes = gatebench_model::OutcomeCounts::default();
    for c in classes {
        outcomes.merge(&c.outcomes);
        assert_eq!(c.requests, c.outcomes.total(), "{}", c.name);
    }
    assert_eq!(
        outcomes, m.outcomes,
        "the classes' outcomes are the totals'"
    );
    let total = m.histograms.as_ref().expect("histograms");
    let mut sum = new_histogram();
    let mut sum_uncorrected = new_histogram();
    for c in classes {
        let h = c.histograms.as_ref().expect("class histograms");
        sum.add(decode(&h.answered).unwrap()).unwrap();
        if let Some(u) = &h.answered_uncorrected {
            sum_uncorrected.add(decode(u).unwrap()).unwrap();
        }
        assert_eq!(
            c.latency.count,
            decode(&h.answered).unwrap().len(),
            "{}",
            c.name
        );
    }
    let want = decode(&total.answered).unwrap();
    assert_eq!(sum.len(), want.len());
    let values = |h: &gatebench_model::histogram::LatencyHistogram| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(values(&sum), values(&want), "answered histograms");
    if let Some(u) = &total.answered_uncorrected {
        assert_eq!(values(&sum_uncorrected), values(&decode(u).unwrap()));
    }
}

#[test]
fn a_mix_sends_each_request_exactly_in_proportion_to_its_weight() {
    let server = ok_server();
    let out = support::run(mix_spec(&server.url(), 1000));
    let r = &out.report;
    assert_eq!(r.measurement.requests, 1000);
    assert_eq!(r.measurement.outcomes.get(Outcome::Ok), 1000);
    let classes = r.classes.as_ref().unwrap();
    let got: Vec<(&str, &str, &str, Option<u64>, u64)> = classes
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.method.as_str(),
                c.path.as_str(),
                c.weight,
                c.requests,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("a", "GET", "/a", Some(1), 100),
            ("GET /b?x=1", "GET", "/b?x=1", Some(2), 200),
            ("POST /c", "POST", "/c", Some(7), 700),
        ]
    );
    // The server saw the same split, each path as the mix gave it.
    let seen = server.requests_by_target();
    assert_eq!(seen.get("/a"), Some(&100), "{seen:?}");
    assert_eq!(seen.get("/b?x=1"), Some(&200), "{seen:?}");
    assert_eq!(seen.get("/c"), Some(&700), "{seen:?}");
    let posts = server
        .requests_log()
        .iter()
        .filter(|q| q.method == "POST")
        .count();
    assert_eq!(posts, 700);
    assert_classes_add_up(r);
    let from = r.config.requests_from.as_ref().unwrap();
    assert_eq!((from.kind.as_str(), from.entries), ("mix", 3));
}

/// Two workers in the open model, each with its share of `-n` (a multiple of the weights'
/// sum): still exact, and the uncorrected histograms add up too.
#[test]
fn an_open_model_mix_on_two_workers_is_exact_and_adds_up() {
    let server = ok_server();
    let mut s = mix_spec(&server.url(), 1000);
    s.threads = Some(2);
    s.arrival = Arrival::Open { rate: 2000.0 };
    let out = support::run(s);
    let r = &out.report;
    let counts: Vec<u64> = r
        .classes
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.requests)
        .collect();
    assert_eq!(counts, vec![100, 200, 700]);
    assert!(r.classes.as_ref().unwrap()[0].latency_uncorrected.is_some());
    assert_classes_add_up(r);
}

#[test]
fn a_single_request_has_no_classes() {
    let server = ok_server();
    let mut s = support::spec(&server.url(), 1, Duration::from_secs(60));
    s.stop.requests = Some(10);
    let r = support::run(s).report;
    assert!(r.classes.is_none() && r.config.requests_from.is_none());
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("classes") && !json.contains("requests_from"));
}

/// A combined-format log: 3 seconds of requests, the requests of each second spread over it.
fn combined_log() -> (String, Vec<&'static str>) {
    let mut text = String::new();
    let mut targets = Vec::new();
    let paths = [
        ["/home", "/search?q=a", "/home", "/item/1"],
        ["/home", "/item/2", "/search?q=b", "/home"],
        ["/cart", "/home", "/item/1", "/search?q=c"],
    ];
    for (s, second) in paths.iter().enumerate() {
        for p in second {
            text.push_str(&format!(
                "10.0.0.{s} - - [25/Nov/2026:16:00:0{s} +0000] \"GET {p} HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0\"\n"
            ));
            targets.push(*p);
        }
    }
    (text, targets)
}

#[test]
fn a_replay_sends_every_line_at_its_intended_time() {
    let server = ok_server();
    let (text, targets) = combined_log();
    let mut replay = Replay::parse("access.log", text.as_bytes(), None).unwrap();
    assert_eq!(replay.format, ReplayFormat::Combined);
    replay.speed = 10.0;
    // Due after the start: second s, request k of 4 at (s + k/4) ÷ 10.
    let due: Vec<(Duration, &str)> = (0..12)
        .map(|i| {
            let secs = (i / 4) as f64 + (i % 4) as f64 / 4.0;
            (Duration::from_secs_f64(secs / 10.0), targets[i])
        })
        .collect();
    let mut s = support::spec(&server.url(), 4, Duration::from_secs(60));
    s.stop = StopRule {
        duration: None,
        requests: None,
    };
    s.requests = Requests::Replay(replay);
    let before = Instant::now();
    let r = support::run_alone(s).report;
    assert_eq!(r.measurement.requests, 12, "one request per line");
    assert_eq!(r.measurement.outcomes.get(Outcome::Ok), 12);
    assert_eq!(r.config.model, gatebench_model::Model::Open);
    // 11 gaps over the 0.275 s from the first request to the last.
    let rate = r.config.rate.unwrap();
    assert!((rate - 40.0).abs() < 1e-9, "{rate}");
    let log = server.requests_log();
    assert_eq!(log.len(), 12);
    let mut seen: Vec<&str> = log.iter().map(|q| q.target.as_str()).collect();
    let mut want = targets.clone();
    seen.sort();
    want.sort();
    assert_eq!(
        seen, want,
        "every line's target, as logged (query included)"
    );
    // Each request reached the server no earlier than its due time (the run starts after
    // `before`) and not much later: sending all at once, or at the recorded pace, fails.
    let mut arrivals: Vec<Duration> = log.iter().map(|q| q.at - before).collect();
    arrivals.sort();
    for (i, (at, (due, target))) in arrivals.iter().zip(&due).enumerate() {
        assert!(
            *at + Duration::from_millis(1) >= *due && *at <= *due + Duration::from_millis(150),
            "request {i} ({target}) due at {due:?} arrived at {at:?}"
        );
    }
    // Classes: method and path, the query left out, the largest first.
    let classes: Vec<(&str, u64)> = r
        .classes
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.name.as_str(), c.requests))
        .collect();
    assert_eq!(
        classes,
        vec![
            ("GET /home", 5),
            ("GET /search", 3),
            ("GET /item/1", 2),
            ("GET /item/2", 1),
            ("GET /cart", 1),
        ]
    );
    assert_classes_add_up(&r);
}

const SHOP_GOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/shop.gor");

#[test]
fn a_goreplay_capture_is_replayed_with_its_headers_and_bodies() {
    let replay = Replay::read(Path::new(SHOP_GOR), None).unwrap();
    assert_eq!(replay.format, ReplayFormat::Goreplay);
    let reqs: Vec<(u64, &str, &str)> = replay
        .requests
        .iter()
        .map(|r| (r.at_ns / 1_000_000, r.method.as_str(), r.target.as_str()))
        .collect();
    assert_eq!(
        reqs,
        vec![
            (0, "GET", "/api/products?page=1"),
            (40, "GET", "/api/products/42"),
            (95, "POST", "/api/cart"),
            (180, "GET", "/api/products?page=2"),
            (260, "PUT", "/api/cart/1"),
            (300, "GET", "/health"),
            (420, "DELETE", "/api/cart/1"),
            (500, "GET", "/api/products/42"),
        ],
        "the recorded responses (type 2) are not requests"
    );
    let post = &replay.requests[2];
    assert_eq!(post.body, br#"{"product":42,"qty":2}"#);
    assert!(post.headers.contains(&"X-Request-Id: 7c1e".to_owned()));
    assert!(
        !post
            .headers
            .iter()
            .any(|h| h.starts_with("Host") || h.starts_with("Content-Length")),
        "{:?}",
        post.headers
    );

    // Replayed against an echo, verified: each body comes back as sent.
    let server = TestServer::start(Behavior::Echo);
    let mut s = support::spec(&server.url(), 2, Duration::from_secs(60));
    s.stop.duration = None;
    s.verify = true;
    let mut replay = replay;
    replay.speed = 5.0;
    s.requests = Requests::Replay(replay);
    let r = support::run(s).report;
    assert_eq!(
        r.measurement.outcomes.get(Outcome::Ok),
        8,
        "{:?}",
        r.measurement.outcomes
    );
    let seen = server.requests_by_target();
    assert_eq!(seen.get("/api/products/42"), Some(&2));
    assert_eq!(seen.get("/api/cart"), Some(&1));
    let from = r.config.requests_from.as_ref().unwrap();
    assert_eq!(
        (
            from.kind.as_str(),
            from.format.as_deref(),
            from.speed,
            from.entries
        ),
        ("replay", Some("goreplay"), Some(5.0), 8)
    );
    assert_classes_add_up(&r);
}

#[test]
fn replay_count_rule_takes_the_first_lines() {
    let server = ok_server();
    let (text, _) = combined_log();
    let mut replay = Replay::parse("access.log", text.as_bytes(), None).unwrap();
    replay.speed = 100.0;
    let mut s = support::spec(&server.url(), 2, Duration::from_secs(60));
    s.stop = StopRule {
        duration: None,
        requests: Some(5),
    };
    s.requests = Requests::Replay(replay);
    let r = support::run(s).report;
    assert_eq!(r.measurement.requests, 5);
    assert_eq!(server.requests_seen(), 5);
}

/// Over h2c several requests share a connection: each header block goes as literals, and the
/// server decodes every one (a block that referred to another request's table entries would
/// be a compression error and fail the connection).
#[test]
fn a_mix_over_h2c_sends_every_class_on_shared_connections() {
    let echo = support::Echo::start_with(gatebench_services::echo::EchoConfig {
        threads: 1,
        http2: true,
        ..Default::default()
    });
    let mut s = mix_spec(&echo.url(), 1000);
    s.protocol = gatebench_loadgen::Protocol::Http2;
    s.connections = 2;
    s.streams = 4;
    s.verify = true;
    let r = support::run(s).report;
    assert_eq!(
        r.measurement.outcomes.get(Outcome::Ok),
        1000,
        "{:?}",
        r.measurement.outcomes
    );
    assert_eq!(r.measurement.connections.opened, 2);
    let counts: Vec<u64> = r
        .classes
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.requests)
        .collect();
    assert_eq!(counts, vec![100, 200, 700]);
    assert_classes_add_up(&r);
}
