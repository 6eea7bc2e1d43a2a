//! Live metrics against real runs: what remote write pushes (decoded by a receiver in this
//! test: snappy, then the WriteRequest) and what a protobuf scrape carries agree with the run's
//! record; an endpoint that refuses costs the run nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_loadgen::metrics::native::index;
use gatebench_loadgen::metrics::{remote_write, scrape, LiveMetrics, MetricsServer, RemoteWrite};
use gatebench_loadgen::{LoadConfig, RunOptions, RunOutput};

use gatebench_testkit::PostSink;

use crate::support::{spec, Echo};

/// Runs a closed-model load of `d` (after `warmup`) that updates `live` once a second.
fn run_with_metrics(
    url: &str,
    warmup: Duration,
    d: Duration,
    live: &Arc<LiveMetrics>,
) -> RunOutput {
    let mut s = spec(url, 4, d);
    s.warmup = warmup;
    let config = LoadConfig::try_new(s).unwrap();
    gatebench_loadgen::run(
        config,
        RunOptions {
            metrics: Some(live.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap()
}

fn value_of<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Every push is a snappy-compressed WriteRequest with the remote-write headers; one a second
/// and the last after the run; the last one's counters are the record's totals, exactly.
#[test]
fn remote_write_pushes_decode_to_the_records_totals() {
    let echo = Echo::start(Duration::ZERO);
    let rx = PostSink::start("/api/v1/write");
    let live = LiveMetrics::new(&[("scenario".into(), "echo".into())]);
    let rw = RemoteWrite::start(
        rx.url.parse().unwrap(),
        Duration::from_secs(1),
        live.clone(),
    )
    .unwrap();
    let out = crate::support::alone(|| {
        run_with_metrics(
            &echo.url(),
            Duration::from_secs(1),
            Duration::from_secs(2),
            &live,
        )
    });
    let stats = rw.finish(Duration::from_secs(10));
    assert_eq!((stats.failed, stats.dropped), (0, 0), "{stats:?}");
    let got = rx.posts();
    assert_eq!(got.len() as u64, stats.pushed);
    assert!(
        got.len() >= 3,
        "a push a second (3 s of load) and the last: {}",
        got.len()
    );
    for (head, _) in &got {
        let h = head.to_ascii_lowercase();
        assert!(h.starts_with("post /api/v1/write http/1.1\r\n"), "{head}");
        for want in [
            "content-encoding: snappy",
            "content-type: application/x-protobuf",
            "x-prometheus-remote-write-version: 0.1.0",
        ] {
            assert!(h.contains(want), "{want} in {head}");
        }
    }
    let last = remote_write::decode(&got.last().unwrap().1).unwrap();
    let latest = |name: &str| -> f64 {
        last.iter()
            .filter(|(l, _)| value_of(l, "__name__") == Some(name))
            .map(|(l, s)| {
                assert_eq!(value_of(l, "scenario"), Some("echo"));
                assert_eq!(value_of(l, "job"), Some("gatebench"));
                s.last().unwrap().0
            })
            .sum()
    };
    let r = &out.report;
    let w = r.warmup.as_ref().expect("a warm-up");
    assert!(r.measurement.requests > 0);
    assert_eq!(
        latest("gatebench_requests_total") as u64,
        w.requests + r.measurement.requests,
        "every scheduled request, in one class"
    );
    assert_eq!(
        latest("gatebench_request_duration_seconds_count") as u64,
        w.latency.count + r.measurement.latency.count
    );
    assert_eq!(
        latest("gatebench_phase"),
        2.0,
        "the last push is after the end"
    );
    // Samples of one series go in time order across the pushes.
    let mut times = Vec::new();
    for (_, body) in &got {
        let series = remote_write::decode(body).unwrap();
        let (_, s) = series
            .iter()
            .find(|(l, _)| value_of(l, "__name__") == Some("gatebench_phase"))
            .unwrap();
        times.extend(s.iter().map(|p| p.1));
    }
    assert!(times.windows(2).all(|t| t[0] <= t[1]), "{times:?}");
}

/// An endpoint that refuses: every push fails and is counted, the first failure is kept (and
/// said once on stderr), and the run lasts as long as without it.
#[test]
fn an_endpoint_that_refuses_is_counted_and_the_run_goes_on() {
    let echo = Echo::start(Duration::ZERO);
    let refused = gatebench_testkit::refused();
    let closed = refused.addr();
    let live = LiveMetrics::new(&[]);
    let rw = RemoteWrite::start(
        format!("http://{closed}/api/v1/write").parse().unwrap(),
        Duration::from_secs(1),
        live.clone(),
    )
    .unwrap();
    let t = Instant::now();
    let out = run_with_metrics(&echo.url(), Duration::ZERO, Duration::from_secs(2), &live);
    let took = t.elapsed();
    let stats = rw.finish(Duration::from_secs(10));
    assert!(out.report.measurement.outcomes.responses() > 0);
    assert!(took < Duration::from_secs(4), "the run took {took:?}");
    assert_eq!(stats.pushed, 0);
    assert!(stats.failed >= 2, "{stats:?}");
    let why = stats.first_error.unwrap();
    assert!(why.contains("refused"), "{why}");
}

/// A protobuf scrape after the run: the histogram's count is the record's, its sum the
/// record's mean × count, its native buckets add up to the count, and the record's p99 lies in
/// the native bucket where the 99th percentile's rank falls (what histogram_quantile reads).
#[test]
fn a_protobuf_scrape_carries_the_records_histogram() {
    let echo = Echo::start(Duration::from_millis(1));
    let live = LiveMetrics::new(&[]);
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), live.clone()).unwrap();
    let out = run_with_metrics(&echo.url(), Duration::ZERO, Duration::from_secs(2), &live);
    let mut c = TcpStream::connect(server.addr()).unwrap();
    c.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/vnd.google.protobuf;\
          proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,\
          text/plain;version=0.0.4;q=0.3\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    let split = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let fams = scrape::decode(&got[split..]).unwrap();
    let lat = fams
        .iter()
        .find(|f| f.name == "gatebench_request_duration_seconds")
        .unwrap();
    let m = lat
        .metrics
        .iter()
        .find(|m| value_of(&m.labels, "phase") == Some("measurement"))
        .unwrap();
    let rec = &out.report.measurement.latency;
    assert!(rec.count > 100, "{}", rec.count);
    assert_eq!(m.count, rec.count);
    let want_sum = rec.mean_ms * rec.count as f64 / 1e3;
    // The record's mean uses each sub-bucket's middle value, the metrics its highest (≤ 0.1 %).
    assert!(
        (m.sum - want_sum).abs() <= 0.002 * want_sum,
        "{} against {want_sum}",
        m.sum
    );
    assert_eq!(m.schema, Some(3));
    let native_total: u64 = m.native.iter().map(|b| b.1).sum::<u64>() + m.zero_count;
    assert_eq!(native_total, m.count);
    let p99 = rec.at(99.0).expect("p99") / 1e3;
    let rank = (0.99 * m.count as f64).ceil() as u64;
    let mut seen = m.zero_count;
    let at = m
        .native
        .iter()
        .find(|(_, n)| {
            seen += n;
            seen >= rank
        })
        .unwrap()
        .0;
    assert_eq!(at, index(p99), "p99 {p99} s");
}
