//! `gatebench load ws://…` against `gatebench serve echo`'s WebSocket echo on loopback: every
//! message sent comes back, a refused handshake stops the run before any load with one line
//! and exit 2, and the server's close code is counted with the messages it cut off; `wss://`
//! against the echo over TLS.

use crate::support::{gatebench, stderr, text, EchoChild};

/// `ws://` (or, for a TLS echo, `wss://`) URL of the echo's WebSocket path.
fn ws_url(echo: &EchoChild, path: &str) -> String {
    ws_url_of(&echo.url, path)
}

/// `ws://` (or `wss://`) URL of `path` on the server at the HTTP URL `base`.
fn ws_url_of(base: &str, path: &str) -> String {
    format!(
        "{}{path}",
        base.trim_end_matches('/')
            .replacen("https://", "wss://", 1)
            .replacen("http://", "ws://", 1)
    )
}

/// The number after `label` in the text report's messages line.
fn figure(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with("messages:"))
        .unwrap_or_else(|| panic!("no messages line in:\n{report}"));
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("no `{label}` in {line}"));
    line[..at]
        .rsplit([':', ','])
        .next()
        .unwrap()
        .trim()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("no number before `{label}` in {line}"))
}

#[test]
fn every_message_sent_to_the_echo_comes_back() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let url = ws_url(&echo, "/ws");
    for extra in [
        &["--ws-size", "200"][..],
        &["--ws-rate", "200", "--ws-binary", "--ws-size", "70000"],
    ] {
        let mut args = vec!["load", &url, "-c", "3", "-d", "1s"];
        args.extend_from_slice(extra);
        let o = gatebench(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let report = text(&o.stdout);
        let sent = figure(&report, "sent");
        assert!(sent > 0, "{report}");
        assert_eq!(figure(&report, "received"), sent, "{report}");
        for class in ["timeout", "reset", "protocol_error", "closed"] {
            assert_eq!(figure(&report, class), 0, "{class}: {report}");
        }
        assert!(
            report.contains("3 connections opened of 3 attempts"),
            "{report}"
        );
        assert!(
            report.contains("1000 × 3"),
            "each connection closed cleanly: {report}"
        );
        if extra.contains(&"--ws-rate") {
            // 200/s on each of 3 connections for 1 s: the schedule's count, give or take the
            // message due at the very end, less those due in the run's last 20 ms if the
            // generator was that late then (nothing is sent after the end; its send lag is
            // in the report).
            assert!((588..=603).contains(&sent), "{sent}: {report}");
        }
    }
}

#[test]
fn a_refused_handshake_stops_the_run_before_the_load_with_exit_2() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    // The echo's plain HTTP path answers 200, not 101.
    let o = gatebench(&["load", &ws_url(&echo, "/"), "-c", "2", "-d", "5s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("handshake was refused") && err.contains("200"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(o.stdout.is_empty(), "no report: {}", text(&o.stdout));
}

#[test]
fn a_message_past_the_servers_limit_is_closed_1009_and_counted() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--max-body", "1000"]);
    let o = gatebench(&[
        "load",
        &ws_url(&echo, "/ws"),
        "-c",
        "1",
        "-d",
        "500ms",
        "--ws-size",
        "2000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = text(&o.stdout);
    assert_eq!(figure(&report, "received"), 0, "{report}");
    let closed = figure(&report, "closed");
    assert!(closed > 0 && closed == figure(&report, "sent"), "{report}");
    assert!(report.contains("1009 × "), "{report}");
}

#[test]
fn wss_loads_the_echo_over_tls_and_an_untrusted_certificate_is_one_line() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--tls"]);
    let url = ws_url(&echo, "/ws");
    assert!(url.starts_with("wss://"), "{url}");
    // The echo's certificate is its own, self-signed: refused before any load, saying why.
    let o = gatebench(&["load", &url, "-c", "2", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("TLS handshake failed"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // Trusted (--insecure): every message comes back over TLS.
    let o = gatebench(&[
        "load",
        &url,
        "-c",
        "2",
        "-d",
        "1s",
        "--insecure",
        "--ws-size",
        "3000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = text(&o.stdout);
    let sent = figure(&report, "sent");
    assert!(sent > 10, "{report}");
    assert_eq!(figure(&report, "received"), sent, "{report}");
    assert!(
        report.contains("2 connections opened of 2 attempts"),
        "{report}"
    );
    // TLS options on a ws:// URL are a mistake, said in one line.
    let plain = url.replacen("wss://", "ws://", 1);
    let o = gatebench(&["load", &plain, "-d", "1s", "--insecure"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("need a wss:// URL"), "{}", stderr(&o));
}

#[test]
fn the_json_record_matches_its_schema_and_the_text_report() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let url = ws_url(&echo, "/ws");
    // `--json -`: the record on stdout, the text report on stderr.
    let o = gatebench(&[
        "load",
        &url,
        "-c",
        "2",
        "-d",
        "1s",
        "--ws-rate",
        "50",
        "--ws-binary",
        "--threshold",
        "errors<1%",
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let record: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is the record: {e}\n{}", text(&o.stdout)));
    let report = stderr(&o);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/websocket-report.schema.json"
    );
    let path = std::fs::canonicalize(path).unwrap();
    let mut schemas = boon::Schemas::new();
    let index = boon::Compiler::new()
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap_or_else(|e| panic!("compiling the schema: {e:#}"));
    if let Err(e) = schemas.validate(&record, index) {
        panic!("the record does not match the schema:\n{e:#}\n{record:#}");
    }
    assert_eq!(record["kind"], "websocket");
    let config = &record["config"];
    assert_eq!(config["url"], url.as_str());
    assert_eq!(config["connections"], 2);
    assert_eq!(config["rate_per_connection"], 50.0);
    assert_eq!(config["binary"], true);
    assert_eq!(config["tls"], false);
    let ws = &record["websocket"];
    // The record's counts are the text report's.
    let sent = ws["messages_sent"].as_u64().unwrap();
    assert_eq!(sent, figure(&report, "sent"), "{report}");
    assert_eq!(ws["messages_received"].as_u64().unwrap(), sent, "{ws:#}");
    assert!(
        (99..=101).contains(&sent),
        "50/s on 2 connections for 1 s: {sent}"
    );
    assert_eq!(ws["message_latency"]["count"].as_u64().unwrap(), sent);
    assert_eq!(ws["connections_opened"], 2);
    assert_eq!(ws["close_codes"]["1000"], 2, "{ws:#}");
    // The generator's self-check: its CPU, and each scheduled message's lateness.
    let check = &ws["self_check"];
    assert!(check["cpu_percent"].as_f64().unwrap() >= 0.0, "{check:#}");
    assert_eq!(check["send_lag"]["count"].as_u64(), Some(sent), "{check:#}");
    assert!(report.contains("Generator: "), "{report}");
    assert_eq!(ws["thresholds"][0]["passed"], true, "{ws:#}");
    assert!(report.contains("PASS errors<1%"), "{report}");
    // A schedule no generator keeps (a million messages a second on each of 4 connections,
    // one thread): the self-check says the figures are the generator's, in the record and the
    // text.
    let o = gatebench(&[
        "load",
        &url,
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "1s",
        "--ws-rate",
        "1000000",
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let record: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let warnings = record["websocket"]["self_check"]["warnings"]
        .as_array()
        .unwrap();
    assert!(!warnings.is_empty(), "{record:#}");
    assert!(
        stderr(&o).contains("WARNING: the generator"),
        "{}",
        stderr(&o)
    );
    // A record file that cannot be created is one line before any load.
    let o = gatebench(&[
        "load",
        &url,
        "-d",
        "1s",
        "--json",
        "/nonexistent/dir/r.json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

/// The record of `gatebench load URL ARGS --json -`, checked against the schema.
fn record_of(url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["load", url];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", "-"]);
    let o = gatebench(&args);
    assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    let record: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is the record: {e}\n{}", text(&o.stdout)));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/websocket-report.schema.json"
    );
    let path = std::fs::canonicalize(path).unwrap();
    let mut schemas = boon::Schemas::new();
    let index = boon::Compiler::new()
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap();
    if let Err(e) = schemas.validate(&record, index) {
        panic!("the record does not match the schema:\n{e:#}\n{record:#}");
    }
    record
}

/// Connections opened one after another: on a schedule (-R opens/s), or a count of them (-n),
/// each sending --ws-messages messages and closing; every one opened, every message back,
/// every connection closed by gatebench with 1000.
#[test]
fn connections_are_opened_on_a_schedule_or_by_count_and_each_closes_after_its_messages() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let url = ws_url(&echo, "/ws");
    // 40 opens/s for 1 s: opens due at 0, 25 ms, … 975 ms: 40 of them.
    let r = record_of(
        &url,
        &["-R", "40", "-d", "1s", "-c", "20", "--ws-messages", "3"],
    );
    assert_eq!(r["config"]["connect_rate"], 40.0, "{r:#}");
    assert_eq!(r["config"]["messages_per_connection"], 3, "{r:#}");
    let ws = &r["websocket"];
    assert_eq!(ws["connections_attempted"], 40, "{ws:#}");
    assert_eq!(ws["connections_opened"], 40, "{ws:#}");
    assert_eq!(ws["connections_closed"], 40, "{ws:#}");
    assert_eq!(ws["handshake_latency"]["count"], 40, "{ws:#}");
    assert_eq!(ws["messages_sent"], 120, "{ws:#}");
    assert_eq!(ws["messages_received"], 120, "{ws:#}");
    assert_eq!(ws["close_codes"]["1000"], 40, "{ws:#}");
    let per_s = ws["connections_per_s"].as_f64().unwrap();
    assert!((20.0..=42.0).contains(&per_s), "{per_s}: {ws:#}");
    // -n alone: 12 connections, 3 at a time, 2 messages each; the run ends when they are done.
    let r = record_of(&url, &["-n", "12", "-c", "3", "--ws-messages", "2"]);
    let ws = &r["websocket"];
    assert_eq!(r["config"]["connections_total"], 12, "{r:#}");
    assert_eq!(ws["connections_opened"], 12, "{ws:#}");
    assert_eq!(ws["connections_closed"], 12, "{ws:#}");
    assert_eq!(ws["messages_received"], 24, "{ws:#}");
    assert!(ws["duration_s"].as_f64().unwrap() < 30.0, "{ws:#}");
    // What cannot be run: one line, exit 2, before any load.
    for (args, says) in [
        (vec!["-n", "5"], "-n without -d needs --ws-messages"),
        (vec!["-R", "10/s"], "a plain rate of connection opens"),
        (vec!["-R", "0", "-d", "1s"], "-R must be a number"),
        (
            vec!["--ws-messages", "0", "-d", "1s"],
            "--ws-messages and -n must be at least 1",
        ),
    ] {
        let mut all = vec!["load", &url];
        all.extend_from_slice(&args);
        let o = gatebench(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
}

#[test]
fn the_proxy_and_the_balancer_pass_websocket_connections_through() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let upstream = echo.url.trim_end_matches('/').to_owned();
    let proxy = EchoChild::serve("proxy", &["--upstream", &upstream]);
    let balancer = EchoChild::serve(
        "balance",
        &["--upstream", &upstream, "--upstream", &upstream],
    );
    for front in [&proxy, &balancer] {
        let o = gatebench(&[
            "load",
            &ws_url(front, "/ws"),
            "-c",
            "3",
            "-d",
            "1s",
            "--ws-rate",
            "100",
            "--ws-binary",
            "--ws-size",
            "70000",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}: {}", front.url, stderr(&o));
        let report = text(&o.stdout);
        let sent = figure(&report, "sent");
        // As above: 300 due, less those of the last 20 ms if the generator was late then.
        assert!((294..=303).contains(&sent), "{sent}: {report}");
        assert_eq!(figure(&report, "received"), sent, "{report}");
        assert!(
            report.contains("3 connections opened of 3 attempts"),
            "{report}"
        );
        assert!(
            report.contains("1000 × 3"),
            "clean closes through {}: {report}",
            front.url
        );
    }
    // A handshake the back-end refuses reaches the client as the back-end answered it.
    let o = gatebench(&["load", &ws_url(&proxy, "/"), "-c", "1", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("status 200 instead of 101"),
        "{}",
        stderr(&o)
    );
}

/// RFC 8441: `--h2c` opens each WebSocket as an extended CONNECT over cleartext HTTP/2; the
/// proxy takes it and reaches the echo's HTTP/1.1 WebSocket, and the echo takes it itself. A
/// server that speaks no HTTP/2 is one line and exit 2 before any load.
#[test]
fn websocket_over_http2_through_the_proxy() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let proxy = EchoChild::serve("proxy", &["--http2", "--upstream", &echo.url]);
    let url = ws_url_of(&proxy.url, "/ws");
    let o = gatebench(&[
        "load",
        &url,
        "--h2c",
        "-c",
        "2",
        "-d",
        "1s",
        "--ws-rate",
        "50",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = text(&o.stdout);
    assert!(
        report.contains("2 connections opened of 2 attempts"),
        "{report}"
    );
    let sent = figure(&report, "sent");
    assert!((99..=101).contains(&sent), "{report}");
    assert_eq!(figure(&report, "received"), sent, "{report}");
    // The echo with --http2 takes it itself; without, it speaks no HTTP/2: one line, exit 2.
    let h2_echo = EchoChild::start(&["--http2"]);
    let o = gatebench(&[
        "load",
        &ws_url(&h2_echo, "/ws"),
        "--h2c",
        "-c",
        "2",
        "-d",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = text(&o.stdout);
    assert_eq!(
        figure(&report, "received"),
        figure(&report, "sent"),
        "{report}"
    );
    assert!(figure(&report, "sent") > 10, "{report}");
    let o = gatebench(&["load", &ws_url(&echo, "/ws"), "--h2c", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("HTTP/2"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    // --http2 is ALPN over TLS: with ws:// it is refused, pointing at --h2c.
    let o = gatebench(&["load", &url, "--http2", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("use --h2c for ws://"), "{}", stderr(&o));
}
