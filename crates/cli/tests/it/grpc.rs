//! `gatebench load grpc://…` against `gatebench serve echo --http2`'s gRPC echo service on
//! loopback: each of the four call kinds with exact counts of calls and messages, the open
//! model's schedule, statuses and the client's deadline as classes, the echo's delay and
//! stream interval in the figures, a record that matches its schema, `grpcs://`, and bad input
//! as one line and exit 2.

use serde_json::Value;

use crate::support::{gatebench, stderr, text, EchoChild};

/// The echo's service URL for `method`, `grpc://` (or `grpcs://` for a TLS echo).
fn url(echo: &EchoChild, method: &str) -> String {
    format!(
        "{}/gatebench.echo.v1.Echo/{method}",
        echo.url
            .trim_end_matches('/')
            .replacen("https://", "grpcs://", 1)
            .replacen("http://", "grpc://", 1)
    )
}

/// Runs a load with `--json -` and returns the record's `grpc` section (the text report is on
/// stderr).
fn load(args: &[&str]) -> (Value, String) {
    let mut all = vec!["load"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "-", "-t", "1"]);
    let o = gatebench(&all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    let record: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is the record: {e}\n{}", text(&o.stdout)));
    (record, stderr(&o))
}

fn n(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {v:#}"))
}

fn class(v: &Value, map: &str, class: &str) -> u64 {
    v[map][class].as_u64().unwrap_or(0)
}

fn p50_ms(v: &Value, summary: &str) -> f64 {
    v[summary]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["p"] == 50.0)
        .and_then(|p| p["ms"].as_f64())
        .unwrap_or_else(|| panic!("no p50 of {summary}"))
}

#[test]
fn every_kind_of_call_ends_ok_with_exact_message_counts() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    // (method, kind, messages per call, sent per call, received per call)
    for (method, kind, per_call, sent, received) in [
        ("Unary", "unary", "1", 1, 1),
        ("ServerStream", "server-stream", "5", 1, 5),
        ("ClientStream", "client-stream", "4", 4, 1),
        ("Bidi", "bidi", "6", 6, 6),
    ] {
        let (record, report) = load(&[
            &url(&echo, method),
            "-n",
            "40",
            "-c",
            "2",
            "--streams",
            "2",
            "--grpc-kind",
            kind,
            "--grpc-messages",
            per_call,
            "--grpc-size",
            "300",
        ]);
        let g = &record["grpc"];
        assert_eq!(n(g, "calls_started"), 40, "{kind}: {report}");
        assert_eq!(class(g, "calls", "ok"), 40, "{kind}: {g:#}");
        assert_eq!(
            g["calls"].as_object().unwrap().len(),
            1,
            "{kind}: only ok: {g:#}"
        );
        assert_eq!(n(g, "messages_sent"), 40 * sent, "{kind}: {g:#}");
        assert_eq!(n(g, "messages_received"), 40 * received, "{kind}: {g:#}");
        assert_eq!(class(g, "messages", "ok"), 40 * sent, "{kind}: {g:#}");
        assert_eq!(g["call_latency"]["count"], 40, "{kind}");
        assert_eq!(g["first_message_latency"]["count"], 40, "{kind}");
        // Gaps: every reply after a call's first; round trips: bidirectional messages.
        assert_eq!(n(&g["message_gap"], "count"), 40 * (received - 1), "{kind}");
        let round_trips = if kind == "bidi" { 40 * sent } else { 0 };
        assert_eq!(n(&g["message_latency"], "count"), round_trips, "{kind}");
        assert_eq!(n(g, "connections_opened"), 2, "{kind}");
        assert!(report.contains("calls: ok 40"), "{kind}: {report}");
        // A Payload of 300 bytes: tag, two length bytes, the body.
        assert_eq!(record["config"]["message_bytes"], 303);
    }
}

#[test]
fn the_open_model_starts_calls_on_schedule_and_streams_keep_their_interval() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    // 200 calls/s for 1 s: calls due at 0, 5 ms, …, 995 ms.
    let (record, report) = load(&[&url(&echo, "Unary"), "-R", "200", "-d", "1s", "-c", "2"]);
    let g = &record["grpc"];
    assert_eq!(n(g, "calls_started"), 200, "{report}");
    assert_eq!(class(g, "calls", "ok"), 200, "{report}");
    // Server streams asked for 5 messages 40 ms apart (25/s): the gaps are the interval and the
    // call lasts four of them, at least.
    let (record, report) = load(&[
        &url(&echo, "ServerStream"),
        "-n",
        "6",
        "-c",
        "1",
        "--streams",
        "3",
        "--grpc-kind",
        "server-stream",
        "--grpc-messages",
        "5",
        "--grpc-message-rate",
        "25",
    ]);
    let g = &record["grpc"];
    assert_eq!(n(g, "messages_received"), 30, "{report}");
    let gap = p50_ms(g, "message_gap");
    assert!((35.0..80.0).contains(&gap), "gap p50 {gap} ms: {report}");
    let call = p50_ms(g, "call_latency");
    assert!(
        call >= 159.0,
        "four 40 ms gaps: call p50 {call} ms: {report}"
    );
    // A bidirectional stream at 100 messages/s for 8 messages: each sent on its schedule.
    let (record, report) = load(&[
        &url(&echo, "Bidi"),
        "-n",
        "2",
        "-c",
        "1",
        "--grpc-kind",
        "bidi",
        "--grpc-messages",
        "8",
        "--grpc-message-rate",
        "100",
    ]);
    let g = &record["grpc"];
    assert_eq!(n(g, "messages_sent"), 16, "{report}");
    assert_eq!(n(g, "messages_received"), 16, "{report}");
    let call = p50_ms(g, "call_latency");
    assert!(
        call >= 69.0,
        "seven 10 ms steps: call p50 {call} ms: {report}"
    );
}

#[test]
fn statuses_delays_and_deadlines_are_classes_and_figures() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    // A status asked of the echo: every call in its class, and its messages with it.
    let (record, report) = load(&[
        &url(&echo, "Unary"),
        "-n",
        "30",
        "-c",
        "1",
        "--no-probe",
        "-H",
        "x-gatebench-status: 14",
    ]);
    let g = &record["grpc"];
    assert_eq!(class(g, "calls", "unavailable"), 30, "{report}");
    assert_eq!(class(g, "messages", "unavailable"), 30, "{g:#}");
    assert_eq!(g["call_latency"]["count"], 0);
    assert!(report.contains("calls: ok 0, unavailable 30"), "{report}");
    // The echo's delay is in every call's latency.
    let (record, report) = load(&[
        &url(&echo, "Unary"),
        "-n",
        "10",
        "-c",
        "1",
        "--streams",
        "5",
        "-H",
        "x-gatebench-delay-ms: 50",
    ]);
    let call = p50_ms(&record["grpc"], "call_latency");
    assert!((49.0..1000.0).contains(&call), "{call} ms: {report}");
    // A deadline shorter than the delay: cancelled by the client, deadline_exceeded, and the
    // calls end at the deadline, not at the echo's answer.
    let started = std::time::Instant::now();
    let (record, report) = load(&[
        &url(&echo, "Unary"),
        "-n",
        "8",
        "-c",
        "1",
        "--streams",
        "4",
        "--no-probe",
        "-H",
        "x-gatebench-delay-ms: 3000",
        "--grpc-deadline",
        "100ms",
    ]);
    assert_eq!(
        class(&record["grpc"], "calls", "deadline_exceeded"),
        8,
        "{report}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "two rounds of 100 ms deadlines took {:?}",
        started.elapsed()
    );
    assert_eq!(record["config"]["deadline_s"], 0.1);
}

#[test]
fn the_json_record_matches_its_schema() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    let (record, report) = load(&[
        &url(&echo, "Bidi"),
        "-d",
        "500ms",
        "-c",
        "1",
        "--grpc-kind",
        "bidi",
        "--grpc-messages",
        "3",
        "--threshold",
        "errors<1%",
        "--threshold",
        "p99<10s",
    ]);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/grpc-report.schema.json"
    );
    let path = std::fs::canonicalize(path).unwrap();
    let mut schemas = boon::Schemas::new();
    let index = boon::Compiler::new()
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap_or_else(|e| panic!("compiling the schema: {e:#}"));
    if let Err(e) = schemas.validate(&record, index) {
        panic!("the record does not match the schema:\n{e:#}\n{record:#}");
    }
    assert_eq!(record["kind"], "grpc");
    assert_eq!(record["config"]["call_kind"], "bidi");
    let g = &record["grpc"];
    let calls: u64 = g["calls"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(calls, n(g, "calls_started"), "{g:#}");
    let messages: u64 = g["messages"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(messages, n(g, "messages_sent"), "{g:#}");
    // Thresholds are judged on the whole run: in the record, the text, and the exit status.
    let verdicts = g["thresholds"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{g:#}");
    assert!(verdicts.iter().all(|t| t["passed"] == true), "{g:#}");
    assert!(report.contains("PASS errors<1%"), "{report}");
    assert!(g["self_check"]["cpu_percent"].as_f64().is_some(), "{g:#}");
    let target = url(&echo, "Unary");
    let o = gatebench(&[
        "load",
        &target,
        "-n",
        "20",
        "-c",
        "1",
        "--threshold",
        "rate>1000000000",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    assert!(
        text(&o.stdout).contains("FAIL rate>1000000000"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        stderr(&o).contains("1 of 1 thresholds failed"),
        "{}",
        stderr(&o)
    );
    // One needing seconds this load does not keep: one line, exit 2, before any call.
    let o = gatebench(&[
        "load",
        &target,
        "-d",
        "2s",
        "--threshold",
        "p99<5ms over 1s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("over and abort need the per-second view"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn grpcs_calls_the_echo_over_tls() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2", "--tls"]);
    let target = url(&echo, "Unary");
    assert!(target.starts_with("grpcs://"), "{target}");
    // Self-signed: the probe says so in one line.
    let o = gatebench(&["load", &target, "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    let (record, report) = load(&[&target, "-n", "20", "-c", "1", "--insecure"]);
    assert_eq!(class(&record["grpc"], "calls", "ok"), 20, "{report}");
    assert_eq!(record["config"]["tls"], true);
}

#[test]
fn bad_input_is_one_line_and_exit_2_before_any_call() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    let http1_only = EchoChild::start(&[]);
    let http1_unary = url(&http1_only, "Unary");
    let unary = url(&echo, "Unary");
    for (args, says) in [
        (
            vec!["load", unary.as_str(), "-R", "ramp:0..10/5s"],
            "plain rate",
        ),
        (
            vec!["load", unary.as_str(), "--payload-size", "10"],
            "--payload-size is not supported",
        ),
        (
            vec!["load", unary.as_str(), "-H", "te: gzip"],
            "gatebench sets it",
        ),
        (
            vec!["load", unary.as_str(), "--grpc-messages", "0"],
            "--grpc-messages",
        ),
        (
            vec!["load", &echo.url, "--grpc-kind", "bidi"],
            "needs a grpc://",
        ),
        (
            vec!["load", "grpc://127.0.0.1:1/NoMethod"],
            "the path must name the method",
        ),
        // Nothing listens there: the probe says so before any load.
        (vec!["load", "grpc://127.0.0.1:1/a.B/C"], "connect_refused"),
        // An HTTP/1.1-only server answers no HTTP/2 at all.
        (
            vec!["load", &http1_unary, "--timeout", "2s"],
            "the probe call failed",
        ),
    ] {
        let o = gatebench(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: no report");
    }
}

#[test]
fn the_proxy_passes_every_kind_of_call_with_its_trailers_and_unbuffered_streams() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    let upstream = echo
        .url
        .trim_end_matches('/')
        .replacen("http://", "h2c://", 1);
    let proxy = EchoChild::serve("proxy", &["--http2", "--upstream", &upstream]);
    for (method, kind, sent, received) in [
        ("Unary", "unary", 1, 1),
        ("ServerStream", "server-stream", 1, 4),
        ("ClientStream", "client-stream", 4, 1),
        ("Bidi", "bidi", 4, 4),
    ] {
        let (record, report) = load(&[
            &url(&proxy, method),
            "-n",
            "30",
            "-c",
            "2",
            "--streams",
            "3",
            "--grpc-kind",
            kind,
            "--grpc-messages",
            "4",
        ]);
        let g = &record["grpc"];
        assert_eq!(
            class(g, "calls", "ok"),
            30,
            "{kind} through the proxy: {report}"
        );
        assert_eq!(n(g, "messages_sent"), 30 * sent, "{kind}: {g:#}");
        assert_eq!(n(g, "messages_received"), 30 * received, "{kind}: {g:#}");
    }
    // The status is in the upstream's trailers: it reaches the client as sent.
    let (record, report) = load(&[
        &url(&proxy, "Unary"),
        "-n",
        "10",
        "-c",
        "1",
        "--no-probe",
        "-H",
        "x-gatebench-status: 7",
    ]);
    assert_eq!(
        class(&record["grpc"], "calls", "permission_denied"),
        10,
        "{report}"
    );
    // Each streamed message is forwarded as it comes, not held for the next: the gaps the echo
    // keeps (50 ms) are the gaps the client sees.
    let (record, report) = load(&[
        &url(&proxy, "ServerStream"),
        "-n",
        "3",
        "-c",
        "1",
        "--streams",
        "3",
        "--grpc-kind",
        "server-stream",
        "--grpc-messages",
        "4",
        "--grpc-message-rate",
        "20",
    ]);
    let g = &record["grpc"];
    let first = p50_ms(g, "first_message_latency");
    let gap = p50_ms(g, "message_gap");
    assert!(
        first < 40.0,
        "the first message waited for the next: {first} ms: {report}"
    );
    assert!((45.0..100.0).contains(&gap), "gap p50 {gap} ms: {report}");
}

#[test]
fn a_method_that_does_not_exist_is_a_class_and_the_run_goes_on_saying_so() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    let o = gatebench(&[
        "load",
        &url(&echo, "Missing"),
        "-n",
        "25",
        "-c",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let record: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        class(&record["grpc"], "calls", "unimplemented"),
        25,
        "{}",
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(
        err.contains("the probe call ended grpc-status 12 (unimplemented)")
            && err.contains("the load goes on"),
        "{err}"
    );
    assert!(
        err.contains("calls failed during the load, the first: grpc-status 12"),
        "{err}"
    );
}

#[test]
fn json_messages_go_through_the_descriptor_set_which_also_says_the_kind() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&["--http2"]);
    let set = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../proto/gatebench/echo/v1/echo.binpb"
    );
    // No --grpc-kind: the descriptor says ServerStream streams its replies.
    let (record, report) = load(&[
        &url(&echo, "ServerStream"),
        "-n",
        "5",
        "-c",
        "1",
        "--grpc-messages",
        "3",
        "--grpc-proto-set",
        set,
        "--grpc-json",
        r#"{"body":"aGVsbG8="}"#,
    ]);
    assert_eq!(record["config"]["call_kind"], "server_stream");
    // "hello" as field 1: two bytes of tag and length, five of body.
    assert_eq!(record["config"]["message_bytes"], 7);
    let g = &record["grpc"];
    assert_eq!(class(g, "calls", "ok"), 5, "{report}");
    assert_eq!(n(g, "messages_received"), 15, "{report}");
    for (extra, says) in [
        (
            vec!["--grpc-json", r#"{"bod":"aGk="}"#],
            "--grpc-json is not a gatebench.echo.v1.Payload",
        ),
        (
            vec!["--grpc-json", "{}", "--grpc-kind", "unary"],
            "disagrees with the descriptor set",
        ),
    ] {
        let target = url(&echo, "ServerStream");
        let mut args = vec!["load", &target, "-d", "1s", "--grpc-proto-set", set];
        args.extend_from_slice(&extra);
        let o = gatebench(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
    // A file that is not a descriptor set.
    let o = gatebench(&[
        "load",
        &url(&echo, "Unary"),
        "--grpc-proto-set",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../proto/gatebench/echo/v1/echo.proto"
        ),
        "--grpc-json",
        "{}",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a protobuf descriptor set"),
        "{}",
        stderr(&o)
    );
    // The .proto file itself, compiled by gatebench: the kind (Bidi) again from the method.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let proto = format!("{root}/gatebench/echo/v1/echo.proto");
    let (record, report) = load(&[
        &url(&echo, "Bidi"),
        "-n",
        "4",
        "-c",
        "1",
        "--grpc-messages",
        "2",
        "--grpc-proto",
        &proto,
        "--grpc-import-path",
        root,
        "--grpc-json",
        r#"{"body":"aGVsbG8="}"#,
    ]);
    assert_eq!(record["config"]["call_kind"], "bidi");
    assert_eq!(record["config"]["message_bytes"], 7);
    assert_eq!(class(&record["grpc"], "calls", "ok"), 4, "{report}");
    assert_eq!(n(&record["grpc"], "messages_received"), 8, "{report}");
    // A .proto that does not compile, and JSON without a type: one line each, exit 2.
    let bad = std::env::temp_dir().join(format!("gatebench-bad-{}.proto", std::process::id()));
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\nservice S { rpc M(N) returns (N); }\n",
    )
    .unwrap();
    let bad_arg = bad.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--grpc-proto", bad_arg, "--grpc-json", "{}"],
            "--grpc-proto ",
        ),
        (
            vec!["--grpc-json", "{}"],
            "--grpc-json needs the message's type",
        ),
    ] {
        let target = url(&echo, "Unary");
        let mut all = vec!["load", &target, "-d", "1s"];
        all.extend_from_slice(&args);
        let o = gatebench(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
    let _ = std::fs::remove_file(&bad);
}
