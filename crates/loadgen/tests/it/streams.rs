//! Stream mode (`--stream`, `--llm`): time to first token and the gaps between tokens measured
//! against the echo's emulated model with a known schedule, the open model's time to first
//! token from the intended send time, and each way a stream can end wrong counted exactly,
//! from scripted servers. Timing bounds: the lower ones are tight (a timer never fires early),
//! the upper ones leave room for a loaded 2-core machine and still catch a stream read whole.

use std::time::Duration;

use gatebench_loadgen::{
    Arrival, ChatRequest, LoadSpec, RequestBody, StopRule, StreamMode, StreamSpec,
};
use gatebench_model::{Outcome, StreamReport};
use gatebench_services::echo::chat::ChatConfig;
use gatebench_services::echo::EchoConfig;
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{run, run_alone, spec, Echo};

/// The echo with an emulated model: first token after `first`, then `tokens` tokens `gap` apart,
/// each token stamped with the echo's clock.
fn model(first: Duration, gap: Duration, tokens: u32) -> Echo {
    Echo::start_with(EchoConfig {
        threads: 1,
        chat: ChatConfig {
            first_token: first,
            interval: gap,
            jitter: Duration::ZERO,
            tokens,
            log: None,
            stamp: true,
        },
        ..EchoConfig::default()
    })
}

/// `--llm` against `url`: a chat-completions POST read as an LLM stream.
fn llm(url: &str, c: u32, d: Duration) -> LoadSpec {
    let mut s = spec(url, c, d);
    s.method = "POST".into();
    s.headers = ChatRequest::headers().map(String::from).into();
    s.body = RequestBody::Inline(
        ChatRequest {
            model: "m".into(),
            prompt: "hi".into(),
            max_tokens: 1000,
        }
        .body(),
    );
    s.stream = Some(StreamSpec {
        mode: StreamMode::Llm,
        stall: Duration::from_secs(2),
    });
    s
}

fn ms(l: &gatebench_model::LatencySummary, p: f64) -> f64 {
    l.at(p).unwrap()
}

#[test]
fn first_token_and_inter_token_against_a_known_schedule() {
    let echo = model(Duration::from_millis(150), Duration::from_millis(20), 10);
    let url = format!("http://{}/v1/chat/completions", echo.addr);
    let out = run_alone(llm(&url, 2, Duration::from_millis(2500)));
    let o = &out.report.measurement.outcomes;
    let s: &StreamReport = out.report.stream.as_ref().expect("a stream section");
    assert_eq!(s.mode, "llm");
    assert_eq!(s.unit, "tokens");
    assert!(o.get(Outcome::Ok) >= 6, "{o:?}");
    assert_eq!(o.errors(), 0, "{o:?}");
    assert_eq!(s.completed, o.get(Outcome::Ok));
    // Every complete stream had its 10 tokens; streams cut by the end had some.
    assert!(
        s.events >= 10 * s.completed && s.events < 10 * (s.completed + 2),
        "{s:?}"
    );
    let ttft = ms(&s.time_to_first_event, 50.0);
    assert!((150.0..190.0).contains(&ttft), "TTFT p50 {ttft} ms");
    assert!(
        s.time_to_first_event.min_ms >= 149.9,
        "{:?}",
        s.time_to_first_event
    );
    let itl = ms(&s.inter_event, 50.0);
    assert!((18.0..25.0).contains(&itl), "inter-token p50 {itl} ms");
    // The role chunk is no token: the first byte comes long before the first token.
    assert!(
        ms(&s.time_to_first_byte, 50.0) < 100.0,
        "{:?}",
        s.time_to_first_byte
    );
    let r = &s.events_per_s_per_stream;
    assert_eq!(r.count, s.completed);
    assert!((40.0..56.0).contains(&r.p50), "tokens/s {r:?}");
    let d = ms(&s.duration, 50.0);
    assert!((330.0..400.0).contains(&d), "duration p50 {d} ms");
    assert!(s.events_per_s > 0.0);
    // Every token carried the echo's stamp: each one's way over loopback, well under the gap.
    let delay = s.event_delay.as_ref().expect("stamped tokens are timed");
    assert_eq!(delay.count, s.events, "{delay:?}");
    assert!(ms(delay, 50.0) < 10.0, "event delay {delay:?}");
}

/// Under the open model the time to first token counts from the intended send time: one
/// connection asked for more streams than it can hold shows the queueing in its first
/// tokens, as it does in its latency; closed, the same target's first tokens stay near its own.
#[test]
fn open_model_first_token_is_from_the_intended_send_time() {
    let echo = model(Duration::from_millis(100), Duration::from_millis(20), 5);
    let url = format!("http://{}/v1/chat/completions", echo.addr);
    let closed = run_alone(llm(&url, 1, Duration::from_millis(1500)));
    let closed = closed.report.stream.unwrap();
    assert!(closed.time_to_first_event.max_ms < 250.0, "{closed:?}");
    // Each stream holds the connection ~180 ms; asked for one every 50 ms, the queue grows.
    let mut s = llm(&url, 1, Duration::from_millis(1500));
    s.arrival = Arrival::Open { rate: 20.0 };
    let open = run_alone(s).report.stream.unwrap();
    assert!(
        open.time_to_first_event.max_ms > 600.0,
        "queued streams' first tokens: {:?}",
        open.time_to_first_event
    );
}

/// `-n` requests against a server whose every answer ends one way: that class, exactly `n`.
fn classes_of(server: &TestServer, mode: StreamMode, n: u64) -> gatebench_model::OutcomeCounts {
    let mut s = spec(&server.url(), 1, Duration::from_secs(20));
    s.stop = StopRule {
        duration: None,
        requests: Some(n),
    };
    s.timeout = Duration::from_secs(5);
    s.stream = Some(StreamSpec {
        mode,
        stall: Duration::from_millis(300),
    });
    run(s).report.measurement.outcomes
}

fn head(content_type: &str, framing: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{framing}\r\n").into_bytes()
}

fn once(bytes: Vec<u8>) -> Behavior {
    Behavior::Paced {
        pieces: vec![(Duration::ZERO, bytes)],
        hang: false,
    }
}

#[test]
fn each_way_a_stream_ends_is_its_own_class_counted_once() {
    let sse = "text/event-stream";
    // Framed right, cut inside an event.
    let mut cut = head(sse, "Content-Length: 19\r\n");
    cut.extend_from_slice(b"data: a\n\ndata: b\nda");
    // LLM: complete events, no [DONE].
    let mut no_done = head(sse, "Content-Length: 23\r\n");
    no_done.extend_from_slice(b"data: {\"content\":\"a\"}\n\n");
    // Not an event stream.
    let mut plain = head("text/plain", "Content-Length: 2\r\n");
    plain.extend_from_slice(b"ok");
    // A complete LLM stream, chunked, in three reads.
    let complete = Behavior::Paced {
        pieces: vec![
            (Duration::ZERO, head(sse, "Transfer-Encoding: chunked\r\n")),
            (
                Duration::from_millis(5),
                b"17\r\ndata: {\"content\":\"a\"}\n\n\r\n".to_vec(),
            ),
            (
                Duration::from_millis(5),
                b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n".to_vec(),
            ),
        ],
        hang: false,
    };
    // One event, then silence.
    let mut stalled = head(sse, "Transfer-Encoding: chunked\r\n");
    stalled.extend_from_slice(b"9\r\ndata: a\n\n\r\n");
    let cases = [
        (once(cut), StreamMode::Sse, Outcome::StreamIncomplete),
        (once(no_done), StreamMode::Llm, Outcome::StreamIncomplete),
        (
            once(plain.clone()),
            StreamMode::Sse,
            Outcome::NotEventStream,
        ),
        (once(plain), StreamMode::Chunks, Outcome::Ok),
        (complete, StreamMode::Llm, Outcome::Ok),
        (
            Behavior::Paced {
                pieces: vec![(Duration::ZERO, stalled)],
                hang: true,
            },
            StreamMode::Sse,
            Outcome::StreamStalled,
        ),
    ];
    for (behavior, mode, want) in cases {
        let server = TestServer::start(behavior.clone());
        let o = classes_of(&server, mode, 4);
        assert_eq!(o.get(want), 4, "{behavior:?} as {mode:?}: {o:?}");
        assert_eq!(o.total(), 4, "{behavior:?} as {mode:?}: {o:?}");
    }
}

/// A hostile server cannot crash or hold the generator: a line that never ends is refused at
/// the parser's limit, events that never end run into the request timeout, and a stream that
/// goes quiet into the stall timer; the run ends on time every time.
#[test]
fn hostile_streams_neither_crash_nor_hang_the_generator() {
    let sse = "text/event-stream";
    let mut line_head = head(sse, "");
    line_head.extend_from_slice(b"data: ");
    let cases = [
        // One line, 64 KiB at a time, for ever (close-delimited body).
        (
            Behavior::Endless {
                head: line_head,
                piece: vec![b'x'; 64 * 1024],
                every: Duration::from_millis(1),
            },
            Outcome::NotEventStream,
        ),
        // Events for ever: each is fine, the stream never ends.
        (
            Behavior::Endless {
                head: head(sse, ""),
                piece: b"data: tick\n\n".to_vec(),
                every: Duration::from_millis(10),
            },
            Outcome::Timeout,
        ),
        // Bytes for ever, never a whole event: alive on the wire, stalled as a stream.
        (
            Behavior::Endless {
                head: head(sse, ""),
                piece: b": keep-alive comment without an end ".to_vec(),
                every: Duration::from_millis(10),
            },
            Outcome::StreamStalled,
        ),
    ];
    for (behavior, want) in cases {
        let server = TestServer::start(behavior.clone());
        let mut s = spec(&server.url(), 1, Duration::from_secs(20));
        s.stop = StopRule {
            duration: None,
            requests: Some(2),
        };
        s.timeout = Duration::from_millis(1500);
        s.stream = Some(StreamSpec {
            mode: StreamMode::Sse,
            stall: Duration::from_millis(500),
        });
        let started = std::time::Instant::now();
        let o = run(s).report.measurement.outcomes;
        assert_eq!(o.get(want), 2, "{behavior:?}: {o:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "{behavior:?}");
    }
}

#[test]
fn stream_mode_is_refused_over_http2() {
    let mut s = LoadSpec::new("http://127.0.0.1:1/");
    s.protocol = gatebench_loadgen::Protocol::Http2;
    s.stream = Some(StreamSpec {
        mode: StreamMode::Sse,
        stall: Duration::from_secs(1),
    });
    let e = gatebench_loadgen::LoadConfig::try_new(s).unwrap_err();
    assert!(e.to_string().contains("--stream"), "{e}");
}
