//! Every protocol pair end to end against the in-process echo — HTTP/1.1 cleartext and over
//! TLS, HTTP/2 over TLS (ALPN) and h2c — in both models, with the TLS and HTTP/2 error classes.

use std::time::Duration;

use gatebench_loadgen::{Arrival, LoadConfig, Protocol, RequestBody, StopRule, TlsOptions};
use gatebench_model::Outcome;
use gatebench_services::echo::EchoConfig;
use gatebench_services::tls::TlsSettings;
use gatebench_testkit::h2::{H2Behavior, H2TestServer};

use crate::support::{
    assert_each_answer_recorded, assert_h2_server_agrees, assert_schedule_kept, run, run_alone,
    self_signed_files, spec, Echo,
};

fn tls_echo(delay: Duration, h2_max_streams: u32) -> (Echo, std::path::PathBuf) {
    let (_dir, cert, key) = self_signed_files();
    let echo = Echo::start_with(EchoConfig {
        delay,
        threads: 1,
        tls: Some(TlsSettings {
            cert_pem_path: Some(cert.clone()),
            key_pem_path: Some(key),
        }),
        http2: true,
        h2_max_streams,
        ..EchoConfig::default()
    });
    (echo, cert)
}

fn h2c_echo(delay: Duration) -> Echo {
    Echo::start_with(EchoConfig {
        delay,
        threads: 1,
        http2: true,
        ..EchoConfig::default()
    })
}

fn insecure() -> TlsOptions {
    TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    }
}

#[test]
fn h1_over_tls_both_models_with_verification() {
    let (echo, cacert) = tls_echo(Duration::ZERO, 256);
    for open in [false, true] {
        let mut s = spec(
            &echo.https_url().replace("127.0.0.1", "localhost"),
            4,
            Duration::from_millis(600),
        );
        s.tls = TlsOptions {
            cacert: Some(cacert.clone()),
            ..TlsOptions::default()
        };
        s.method = "POST".into();
        s.body = RequestBody::Payload(1024);
        s.verify = true;
        if open {
            s.arrival = Arrival::Open { rate: 500.0 };
        }
        let out = run(s);
        assert_each_answer_recorded(&out);
        if open {
            assert_schedule_kept(&out, 500.0, 0.6);
        }
        let m = &out.report.measurement;
        assert!(m.outcomes.get(Outcome::Ok) > 50, "{:?}", m.outcomes);
        assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
        assert_eq!(out.report.config.protocol, "http/1.1");
        let c = &m.connections;
        assert_eq!(c.opened, 4);
        assert_eq!(c.tls_full_handshakes + c.tls_resumed_handshakes, 4, "{c:?}");
        assert!(c.tls_full_handshakes >= 1, "{c:?}");
        assert!(m.connections.tls_handshake_time.is_some());
    }
}

#[test]
fn tls_sessions_resume_unless_asked_not_to() {
    let (echo, _) = tls_echo(Duration::ZERO, 256);
    for no_resume in [false, true] {
        let mut s = spec(&echo.https_url(), 1, Duration::from_secs(60));
        s.tls = TlsOptions {
            no_resume,
            ..insecure()
        };
        s.keepalive = false;
        s.stop = StopRule {
            duration: None,
            requests: Some(20),
        };
        let out = run(s);
        let c = &out.report.measurement.connections;
        assert_eq!(out.report.measurement.outcomes.get(Outcome::Ok), 20);
        assert_eq!(
            c.tls_full_handshakes + c.tls_resumed_handshakes,
            20,
            "{c:?}"
        );
        if no_resume {
            assert_eq!(c.tls_resumed_handshakes, 0, "{c:?}");
        } else {
            assert!(c.tls_resumed_handshakes >= 15, "{c:?}");
        }
    }
}

#[test]
fn untrusted_certificate_is_a_tls_error_and_fails_the_probe() {
    let (echo, _) = tls_echo(Duration::ZERO, 256);
    let s = spec(&echo.https_url(), 2, Duration::from_millis(300));
    let config = LoadConfig::try_new(s.clone()).unwrap();
    let err = gatebench_loadgen::probe(&config).unwrap_err().to_string();
    assert!(
        err.contains("TLS error") && err.contains("--insecure"),
        "{err}"
    );
    let out = run(s);
    assert_each_answer_recorded(&out);
    let o = &out.report.measurement.outcomes;
    assert!(o.get(Outcome::TlsError) > 0, "{o:?}");
    // Every request that ended, ended as a TLS error: none is classed otherwise.
    let cut_off = o.get(Outcome::InFlight) + o.get(Outcome::NeverSent);
    assert_eq!(o.get(Outcome::TlsError), o.total() - cut_off, "{o:?}");
}

#[test]
fn tls_handshake_against_a_plain_port_is_a_tls_error_not_a_hang() {
    let echo = Echo::start(Duration::ZERO);
    let mut s = spec(&echo.https_url(), 2, Duration::from_millis(500));
    s.tls = insecure();
    s.connect_timeout = Duration::from_millis(300);
    let out = run(s);
    assert_each_answer_recorded(&out);
    let o = &out.report.measurement.outcomes;
    assert!(o.get(Outcome::TlsError) > 0, "{o:?}");
    // Every request that ended, ended as a TLS error: none is classed otherwise.
    let cut_off = o.get(Outcome::InFlight) + o.get(Outcome::NeverSent);
    assert_eq!(o.get(Outcome::TlsError), o.total() - cut_off, "{o:?}");
}

#[test]
fn h2_over_tls_and_h2c_both_models() {
    let (tls, _) = tls_echo(Duration::ZERO, 256);
    let plain = h2c_echo(Duration::ZERO);
    for (url, name) in [(tls.https_url(), "h2"), (plain.url(), "h2c")] {
        for open in [false, true] {
            let mut s = spec(&url, 2, Duration::from_millis(600));
            s.protocol = Protocol::Http2;
            s.streams = 4;
            s.tls = if name == "h2" {
                insecure()
            } else {
                TlsOptions::default()
            };
            s.method = "POST".into();
            s.body = RequestBody::Payload(512);
            s.verify = true;
            if open {
                s.arrival = Arrival::Open { rate: 400.0 };
            }
            let out = run(s);
            assert_each_answer_recorded(&out);
            if open {
                assert_schedule_kept(&out, 400.0, 0.6);
            }
            let m = &out.report.measurement;
            assert_eq!(out.report.config.protocol, name);
            assert!(
                m.outcomes.get(Outcome::Ok) > 50,
                "{name} open={open}: {:?}",
                m.outcomes
            );
            assert_eq!(
                m.outcomes.errors(),
                0,
                "{name} open={open}: {:?}",
                m.outcomes
            );
            assert_eq!(m.connections.opened, 2, "{name}: streams share connections");
            let streams = m.connections.max_streams_in_use.unwrap();
            assert!((1..=4).contains(&streams), "{streams}");
        }
    }
}

#[test]
fn delay_is_honoured_on_every_protocol() {
    let delay = Duration::from_millis(20);
    let (tls, _) = tls_echo(delay, 256);
    let plain = h2c_echo(delay);
    for (url, proto, secure) in [
        (plain.url(), Protocol::Http1, false),
        (tls.https_url(), Protocol::Http1, true),
        (tls.https_url(), Protocol::Http2, true),
        (plain.url(), Protocol::Http2, false),
    ] {
        let mut s = spec(&url, 2, Duration::from_millis(800));
        s.protocol = proto;
        if secure {
            s.tls = insecure();
        }
        let out = run_alone(s);
        let l = &out.report.measurement.latency;
        let p50 = l.at(50.0).unwrap();
        // Every response waited the delay (a protocol that forgot it answers in ~0.1 ms), and
        // not much longer. The tight 20–22 ms calibration is `latency_is_calibrated_*`'s job.
        assert!(l.min_ms >= 20.0, "{url} {proto:?}: min {} ms", l.min_ms);
        assert!((20.0..30.0).contains(&p50), "{url} {proto:?}: p50 {p50} ms");
    }
}

#[test]
fn stream_concurrency_never_exceeds_the_servers_limit() {
    let server = H2TestServer::start(H2Behavior::MaxStreams(3));
    let mut s = spec(&server.url(), 1, Duration::from_millis(600));
    s.protocol = Protocol::Http2;
    s.streams = 16;
    let out = run(s);
    assert_h2_server_agrees(&out, server.streams_seen());
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert!(m.outcomes.get(Outcome::Ok) > 20, "{:?}", m.outcomes);
    assert_eq!(m.connections.max_streams_in_use, Some(3));
    assert!(
        server.max_concurrent_streams_seen() <= 3,
        "server saw {} at once; client: {:?} {:?}",
        server.max_concurrent_streams_seen(),
        m.connections,
        m.outcomes
    );
    // Nothing is sent after the run's end: the server saw only what was answered or in flight.
    let sent = m.outcomes.get(Outcome::Ok) + m.outcomes.get(Outcome::InFlight);
    assert!(
        server.streams_seen() <= sent,
        "server saw {} streams, client sent {sent}",
        server.streams_seen()
    );
}

#[test]
fn every_h2_request_carries_its_headers_not_only_a_connections_first() {
    // The first request on a connection adds its fields to the server's HPACK table; later
    // ones refer to them by index. The server checks each request's fields itself.
    let server = H2TestServer::start(H2Behavior::Ok);
    let mut s = spec(&server.url(), 2, Duration::from_millis(400));
    s.protocol = Protocol::Http2;
    s.streams = 4;
    s.headers = vec!["X-Check: yes".into()];
    let out = run(s);
    assert_h2_server_agrees(&out, server.streams_seen());
    let m = &out.report.measurement;
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert!(m.outcomes.get(Outcome::Ok) > 20, "{:?}", m.outcomes);
    assert!(server.streams_seen() > 20);
    assert_eq!(server.checked_streams(), server.streams_seen());
}

#[test]
fn h2_error_classes() {
    for (behavior, want) in [
        (H2Behavior::RefuseStreams, Outcome::RefusedStream),
        (H2Behavior::ResetStreams, Outcome::StreamReset),
    ] {
        let server = H2TestServer::start(behavior);
        let mut s = spec(&server.url(), 1, Duration::from_millis(300));
        s.protocol = Protocol::Http2;
        s.streams = 2;
        let out = run(s);
        assert_h2_server_agrees(&out, server.streams_seen());
        let o = &out.report.measurement.outcomes;
        assert!(o.get(want) > 0, "{behavior:?}: {o:?}");
        // Every stream that ended is of that one class.
        let cut_off = o.get(Outcome::InFlight) + o.get(Outcome::NeverSent);
        assert_eq!(o.get(want), o.total() - cut_off, "{behavior:?}: {o:?}");
    }
}

#[test]
fn graceful_goaway_loses_nothing_and_the_generator_reconnects() {
    let server = H2TestServer::start(H2Behavior::GoAwayAfter(10));
    let mut s = spec(&server.url(), 1, Duration::from_millis(500));
    s.protocol = Protocol::Http2;
    s.streams = 1;
    let out = run(s);
    assert_h2_server_agrees(&out, server.streams_seen());
    let m = &out.report.measurement;
    assert!(m.outcomes.get(Outcome::Ok) > 10, "{:?}", m.outcomes);
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert!(m.connections.reconnects > 0, "{:?}", m.connections);
}

#[test]
fn a_stream_cut_off_by_goaway_is_counted_as_goaway() {
    let server = H2TestServer::start(H2Behavior::GoAwayRefusing);
    let mut s = spec(&server.url(), 1, Duration::from_millis(500));
    s.protocol = Protocol::Http2;
    let out = run(s);
    assert_h2_server_agrees(&out, server.streams_seen());
    let o = &out.report.measurement.outcomes;
    assert!(o.get(Outcome::GoAway) > 0, "{o:?}");
    assert_eq!(o.get(Outcome::Ok), 0, "{o:?}");
    assert!(server.streams_seen() >= o.get(Outcome::GoAway), "{o:?}");
}
