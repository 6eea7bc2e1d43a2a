//! The protocol state frame by frame: what gatebench sends, and how each server behaviour
//! ends a stream.

use std::task::{Context, Poll, Waker};

use super::*;
use crate::config::Target;
use crate::request::RequestBody;

fn get() -> RequestTemplate {
    let t = Target::parse("http://127.0.0.1:8080/").unwrap();
    RequestTemplate::encode(&t, "GET", &[], RequestBody::None, true).unwrap()
}

fn post(body: &[u8]) -> RequestTemplate {
    let t = Target::parse("http://127.0.0.1:8080/echo").unwrap();
    RequestTemplate::encode(&t, "POST", &[], RequestBody::Inline(body.to_vec()), true).unwrap()
}

/// The frames in `out` (drained), after the client preface when it is there.
fn frames(st: &mut State) -> Vec<(FrameHead, Vec<u8>)> {
    // As the driver does: it takes everything queued, and writes it.
    let out = std::mem::take(&mut st.out);
    st.took_out();
    st.wrote_out();
    let mut rest = out.strip_prefix(frame::PREFACE).unwrap_or(&out);
    let mut v = Vec::new();
    while !rest.is_empty() {
        let h = FrameHead::parse(rest);
        v.push((h, rest[9..9 + h.len].to_vec()));
        rest = &rest[9 + h.len..];
    }
    v
}

fn kinds(st: &mut State) -> Vec<(u8, u8, u32)> {
    frames(st)
        .iter()
        .map(|(h, _)| (h.kind, h.flags, h.stream))
        .collect()
}

fn head(kind: u8, flags: u8, stream: u32, len: usize) -> FrameHead {
    FrameHead {
        len,
        kind,
        flags,
        stream,
    }
}

fn send(st: &mut State, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<(), Reason> {
    st.on_frame(head(kind, flags, stream, payload.len()), payload)
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_settings(&mut out, pairs);
    out[9..].to_vec()
}

/// A connected state: the server's SETTINGS handled, the output drained.
fn connected(server: &[(u16, u32)]) -> State {
    let mut st = State::new();
    send(&mut st, frame::SETTINGS, 0, 0, &settings(server)).unwrap();
    frames(&mut st);
    st
}

fn poll(st: &mut State, id: u32) -> Poll<Result<Answer, Failure>> {
    st.poll_stream(id, &mut Context::from_waker(Waker::noop()))
}

fn answer(st: &mut State, id: u32) -> Answer {
    match poll(st, id) {
        Poll::Ready(Ok(a)) => a,
        other => panic!("stream {id}: {other:?}"),
    }
}

fn failure(st: &mut State, id: u32) -> Outcome {
    match poll(st, id) {
        Poll::Ready(Err(f)) => f.outcome,
        other => panic!("stream {id}: {other:?}"),
    }
}

/// `:status 200` indexed, then `content-length: N` without indexing.
fn ok_head(len: usize) -> Vec<u8> {
    let n = len.to_string();
    let mut b = vec![0x88, 0x0f, 0x0d, n.len() as u8];
    b.extend_from_slice(n.as_bytes());
    b
}

const EH: u8 = frame::END_HEADERS;
const ES: u8 = frame::END_STREAM;

#[test]
fn the_preface_announces_windows_and_pings() {
    let mut st = State::new();
    assert!(st.out.starts_with(frame::PREFACE));
    let f = frames(&mut st);
    assert_eq!(f[0].0.kind, frame::SETTINGS);
    assert_eq!(
        f[0].1,
        settings(&[
            (frame::SETTINGS_ENABLE_PUSH, 0),
            (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW)
        ])
    );
    assert_eq!(f[1].0.kind, frame::WINDOW_UPDATE);
    assert_eq!(
        u32::from_be_bytes(f[1].1[..].try_into().unwrap()),
        CONNECTION_WINDOW - 65_535
    );
    assert_eq!(
        (f[2].0.kind, &f[2].1[..]),
        (frame::PING, &HANDSHAKE_PING[..])
    );
    // The handshake completes on the PING's answer, not before.
    let mut cx = Context::from_waker(Waker::noop());
    send(&mut st, frame::SETTINGS, 0, 0, &[]).unwrap();
    assert!(st.poll_handshake(&mut cx).is_pending());
    send(&mut st, frame::PING, frame::ACK, 0, &HANDSHAKE_PING).unwrap();
    assert_eq!(st.poll_handshake(&mut cx), Poll::Ready(Ok(())));
    // SETTINGS is acknowledged.
    assert_eq!(kinds(&mut st), [(frame::SETTINGS, frame::ACK, 0)]);
}

#[test]
fn a_server_that_does_not_start_with_settings_is_refused() {
    let mut st = State::new();
    assert_eq!(
        send(&mut st, frame::PING, 0, 0, &[0; 8]),
        Err(Reason::ProtocolError)
    );
}

#[test]
fn requests_are_answered_and_later_heads_are_indices() {
    let mut st = connected(&[]);
    let req = get();
    let a = st.open(&req, false).unwrap();
    let f = frames(&mut st);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].0.kind, f[0].0.flags, f[0].0.stream),
        (frame::HEADERS, EH | ES, 1)
    );
    assert_eq!(f[0].1, req.h2_head().first);
    let b = st.open(&req, false).unwrap();
    let f = frames(&mut st);
    assert_eq!(f[0].0.stream, 3);
    assert_eq!(f[0].1, req.h2_head().indexed);
    assert!(f[0].1.len() <= 6, "{:?}", f[0].1);

    send(&mut st, frame::HEADERS, EH, a, &ok_head(2)).unwrap();
    assert!(poll(&mut st, a).is_pending());
    send(&mut st, frame::DATA, ES, a, b"ok").unwrap();
    let got = answer(&mut st, a);
    assert_eq!(got.outcome, Outcome::Ok);
    assert_eq!(got.bytes_read, (9 + 5 + 9 + 2) as u64);
    // A head-only answer (no body) ends with the HEADERS frame.
    send(&mut st, frame::HEADERS, EH | ES, b, &[0x8d]).unwrap();
    assert_eq!(answer(&mut st, b).outcome, Outcome::Status4xx);
    assert!(!st.finished());
}

#[test]
fn bodies_wait_for_window_and_are_sent_in_frames() {
    let mut st = connected(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 10)]);
    let body: Vec<u8> = (0..25u8).collect();
    let id = st.open(&post(&body), true).unwrap();
    let f = frames(&mut st);
    assert_eq!((f[0].0.kind, f[0].0.flags & ES), (frame::HEADERS, 0));
    assert_eq!(
        (f[1].0.kind, f[1].0.flags, f[1].1.len()),
        (frame::DATA, 0, 10)
    );
    assert_eq!(f.len(), 2);
    send(&mut st, frame::WINDOW_UPDATE, 0, id, &10u32.to_be_bytes()).unwrap();
    let f = frames(&mut st);
    assert_eq!((f[0].0.flags, f[0].1.len()), (0, 10));
    // The window opens by more than is left: the last frame ends the stream.
    send(&mut st, frame::WINDOW_UPDATE, 0, id, &100u32.to_be_bytes()).unwrap();
    let f = frames(&mut st);
    assert_eq!((f[0].0.flags, &f[0].1[..]), (ES, &body[20..]));
    // The echo comes back in two pieces and matches.
    send(&mut st, frame::HEADERS, EH, id, &ok_head(25)).unwrap();
    send(&mut st, frame::DATA, 0, id, &body[..7]).unwrap();
    send(&mut st, frame::DATA, ES, id, &body[7..]).unwrap();
    assert_eq!(answer(&mut st, id).outcome, Outcome::Ok);
}

#[test]
fn a_connection_window_of_zero_holds_every_body() {
    let mut st = connected(&[]);
    let big = vec![b'x'; 70_000];
    let a = st.open(&post(&big), false).unwrap();
    // 65,535 bytes of connection window: four full frames and the rest of it.
    let sent: usize = frames(&mut st)
        .iter()
        .filter(|(h, _)| h.kind == frame::DATA)
        .map(|(_, p)| p.len())
        .sum();
    assert_eq!(sent, 65_535);
    let b = st.open(&post(b"small"), false).unwrap();
    assert_eq!(kinds(&mut st), [(frame::HEADERS, EH, b)]);
    // `a`'s own window opens, but the connection's is still empty.
    send(
        &mut st,
        frame::WINDOW_UPDATE,
        0,
        a,
        &100_000u32.to_be_bytes(),
    )
    .unwrap();
    assert_eq!(kinds(&mut st), []);
    send(
        &mut st,
        frame::WINDOW_UPDATE,
        0,
        0,
        &100_000u32.to_be_bytes(),
    )
    .unwrap();
    let f = frames(&mut st);
    // First come, first served: the rest of `a`, then `b`.
    let order: Vec<(u32, usize, u8)> = f
        .iter()
        .map(|(h, p)| (h.stream, p.len(), h.flags))
        .collect();
    assert_eq!(order, [(a, 70_000 - 65_535, ES), (b, 5, ES)]);
}

#[test]
fn large_responses_return_window() {
    let mut st = connected(&[]);
    let id = st.open(&get(), false).unwrap();
    frames(&mut st);
    send(&mut st, frame::HEADERS, EH, id, &[0x88]).unwrap();
    let chunk = vec![0u8; 16_384];
    for _ in 0..(STREAM_WINDOW as usize / 2 / chunk.len()) {
        send(&mut st, frame::DATA, 0, id, &chunk).unwrap();
    }
    let updates: Vec<(u32, u32)> = frames(&mut st)
        .iter()
        .filter(|(h, _)| h.kind == frame::WINDOW_UPDATE)
        .map(|(h, p)| (h.stream, u32::from_be_bytes(p[..].try_into().unwrap())))
        .collect();
    assert_eq!(updates, [(id, STREAM_WINDOW / 2)]);
    // More than the window is a flow-control error for the stream.
    let mut st = connected(&[]);
    let id = st.open(&get(), false).unwrap();
    send(&mut st, frame::HEADERS, EH, id, &[0x88]).unwrap();
    st.streams.get_mut(&id).unwrap().recv_window = 10;
    send(&mut st, frame::DATA, 0, id, &[0; 11]).unwrap();
    assert_eq!(failure(&mut st, id), Outcome::ProtocolError);
}

#[test]
fn malformed_responses_reset_the_stream() {
    let mut st = connected(&[]);
    let req = get();
    // The body is shorter than content-length.
    let a = st.open(&req, false).unwrap();
    send(&mut st, frame::HEADERS, EH, a, &ok_head(5)).unwrap();
    send(&mut st, frame::DATA, ES, a, b"abc").unwrap();
    assert_eq!(failure(&mut st, a), Outcome::ProtocolError);
    // No :status.
    let b = st.open(&req, false).unwrap();
    send(
        &mut st,
        frame::HEADERS,
        EH | ES,
        b,
        &[0x0f, 0x0d, 0x01, b'0'],
    )
    .unwrap();
    assert_eq!(failure(&mut st, b), Outcome::ProtocolError);
    // DATA before the head.
    let c = st.open(&req, false).unwrap();
    send(&mut st, frame::DATA, ES, c, b"x").unwrap();
    assert_eq!(failure(&mut st, c), Outcome::ProtocolError);
    let resets: Vec<u32> = frames(&mut st)
        .iter()
        .filter(|(h, _)| h.kind == frame::RST_STREAM)
        .map(|(h, _)| h.stream)
        .collect();
    assert_eq!(resets, [a, b, c]);
    // The connection goes on.
    assert!(!st.no_new_streams());
}

#[test]
fn informational_heads_trailers_and_padding() {
    let mut st = connected(&[]);
    let req = get();
    let id = st.open(&req, false).unwrap();
    // 103 Early Hints, then a padded, prioritised 200, padded DATA, and trailers.
    send(
        &mut st,
        frame::HEADERS,
        EH,
        id,
        &[0x08, 0x03, b'1', b'0', b'3'],
    )
    .unwrap();
    assert!(poll(&mut st, id).is_pending());
    let mut h = vec![2, 0, 0, 0, 0, 16];
    h.extend_from_slice(&ok_head(2));
    h.extend_from_slice(&[0, 0]);
    let flags = EH | frame::PADDED | frame::PRIORITY_FLAG;
    send(&mut st, frame::HEADERS, flags, id, &h).unwrap();
    send(
        &mut st,
        frame::DATA,
        frame::PADDED,
        id,
        &[3, b'o', b'k', 0, 0, 0],
    )
    .unwrap();
    assert!(poll(&mut st, id).is_pending());
    send(
        &mut st,
        frame::HEADERS,
        EH | ES,
        id,
        &[0x40, 0x01, b'x', 0x01, b'y'],
    )
    .unwrap();
    assert_eq!(answer(&mut st, id).outcome, Outcome::Ok);
    // Trailers that do not end the stream are malformed.
    let id = st.open(&req, false).unwrap();
    send(&mut st, frame::HEADERS, EH, id, &[0x88]).unwrap();
    send(&mut st, frame::HEADERS, EH, id, &[0xbe]).unwrap();
    assert_eq!(failure(&mut st, id), Outcome::ProtocolError);
}

#[test]
fn continuation_frames_join_and_nothing_may_interleave() {
    let mut st = connected(&[]);
    let id = st.open(&get(), false).unwrap();
    let block = ok_head(0);
    send(&mut st, frame::HEADERS, 0, id, &block[..1]).unwrap();
    send(&mut st, frame::CONTINUATION, 0, id, &block[1..3]).unwrap();
    send(&mut st, frame::CONTINUATION, EH, id, &block[3..]).unwrap();
    send(&mut st, frame::DATA, ES, id, b"").unwrap();
    assert_eq!(answer(&mut st, id).outcome, Outcome::Ok);
    let id = st.open(&get(), false).unwrap();
    send(&mut st, frame::HEADERS, 0, id, &block[..1]).unwrap();
    assert_eq!(
        send(&mut st, frame::PING, 0, 0, &[0; 8]),
        Err(Reason::ProtocolError)
    );
}

#[test]
fn resets_and_goaway_have_their_classes() {
    let mut st = connected(&[]);
    let req = get();
    let a = st.open(&req, false).unwrap();
    let b = st.open(&req, false).unwrap();
    let c = st.open(&req, false).unwrap();
    send(&mut st, frame::RST_STREAM, 0, a, &7u32.to_be_bytes()).unwrap();
    assert_eq!(failure(&mut st, a), Outcome::RefusedStream);
    send(&mut st, frame::RST_STREAM, 0, b, &2u32.to_be_bytes()).unwrap();
    assert_eq!(failure(&mut st, b), Outcome::StreamReset);
    // GOAWAY with last-stream-id below c: c was not processed; no stream may open.
    let d = st.open(&req, false).unwrap();
    let mut g = c.to_be_bytes().to_vec();
    g.extend_from_slice(&0u32.to_be_bytes());
    send(&mut st, frame::GOAWAY, 0, 0, &g).unwrap();
    assert_eq!(failure(&mut st, d), Outcome::GoAway);
    assert!(poll(&mut st, c).is_pending());
    assert!(st.no_new_streams() && st.recheck_streams);
    assert_eq!(st.open(&req, false), Err(Outcome::GoAway));
    assert!(!st.finished());
    send(&mut st, frame::HEADERS, EH | ES, c, &[0x88]).unwrap();
    assert_eq!(answer(&mut st, c).outcome, Outcome::Ok);
    assert!(st.finished());
    // The server closing the connection after a GOAWAY: the streams left are the GOAWAY's.
    let mut st = connected(&[]);
    let e = st.open(&req, false).unwrap();
    let mut g = 99u32.to_be_bytes().to_vec();
    g.extend_from_slice(&0u32.to_be_bytes());
    send(&mut st, frame::GOAWAY, 0, 0, &g).unwrap();
    st.eof();
    assert_eq!(failure(&mut st, e), Outcome::GoAway);
    // Without one, it is an incomplete response.
    let mut st = connected(&[]);
    let e = st.open(&req, false).unwrap();
    st.eof();
    assert_eq!(failure(&mut st, e), Outcome::Incomplete);
}

#[test]
fn a_cancelled_stream_is_reset_and_its_frames_still_decoded() {
    let mut st = connected(&[]);
    let id = st.open(&get(), false).unwrap();
    frames(&mut st);
    st.cancel(id);
    assert_eq!(kinds(&mut st), [(frame::RST_STREAM, 0, id)]);
    // The server's answer crossed the reset: its header block still enters the table.
    send(&mut st, frame::HEADERS, EH, id, &[0x5c, 0x01, b'2']).unwrap();
    send(&mut st, frame::DATA, ES, id, b"ok").unwrap();
    let next = st.open(&get(), false).unwrap();
    send(&mut st, frame::HEADERS, EH, next, &[0x88, 0xbe]).unwrap();
    send(&mut st, frame::DATA, ES, next, b"ok").unwrap();
    assert_eq!(answer(&mut st, next).outcome, Outcome::Ok);
    // Frames on a stream never opened are a connection error.
    assert_eq!(
        send(&mut st, frame::DATA, 0, 99, b"x"),
        Err(Reason::ProtocolError)
    );
}

#[test]
fn verify_compares_the_echo() {
    let mut st = connected(&[]);
    let id = st.open(&post(b"hello"), true).unwrap();
    send(&mut st, frame::HEADERS, EH, id, &[0x88]).unwrap();
    send(&mut st, frame::DATA, ES, id, b"hellO").unwrap();
    assert_eq!(answer(&mut st, id).outcome, Outcome::BodyMismatch);
    // Only 2xx bodies are compared.
    let id = st.open(&post(b"hello"), true).unwrap();
    send(&mut st, frame::HEADERS, EH, id, &[0x8e]).unwrap();
    send(&mut st, frame::DATA, ES, id, b"oops").unwrap();
    assert_eq!(answer(&mut st, id).outcome, Outcome::Status5xx);
}

#[test]
fn a_ping_flood_that_is_never_read_ends_the_connection_with_its_output_bounded() {
    let id = |st: &mut State| st.open(&get(), false).unwrap();
    // Answered as fast as they come (the driver writes between reads): no limit is reached.
    let mut st = connected(&[]);
    for i in 0..5_000u64 {
        send(&mut st, frame::PING, 0, 0, &i.to_be_bytes()).unwrap();
        st.took_out();
        st.out.clear();
        st.wrote_out();
    }
    // Never written (the server does not read): the flood ends the connection, and the
    // queue stopped growing at the limit.
    let mut st = connected(&[]);
    let stream = id(&mut st);
    frames(&mut st);
    let mut refused = None;
    for i in 0..5_000u64 {
        if let Err(r) = send(&mut st, frame::PING, 0, 0, &i.to_be_bytes()) {
            refused = Some((i, r));
            break;
        }
    }
    assert_eq!(refused, Some((1_000, Reason::EnhanceYourCalm)));
    assert!(st.out.len() <= 1_000 * 17, "{} bytes queued", st.out.len());
    st.connection_error(Reason::EnhanceYourCalm);
    assert_eq!(failure(&mut st, stream), Outcome::ProtocolError);
    // Half written counts too: what the driver took and has not finished is still queued.
    let mut st = connected(&[]);
    for i in 0..600u64 {
        send(&mut st, frame::PING, 0, 0, &i.to_be_bytes()).unwrap();
    }
    st.took_out();
    for i in 0..400u64 {
        send(&mut st, frame::PING, 0, 0, &i.to_be_bytes()).unwrap();
    }
    let e = send(&mut st, frame::SETTINGS, 0, 0, &settings(&[]));
    assert_eq!(e, Err(Reason::EnhanceYourCalm));
}

#[test]
fn server_pings_settings_and_limits() {
    let mut st = connected(&[]);
    send(&mut st, frame::PING, 0, 0, b"12345678").unwrap();
    let f = frames(&mut st);
    assert_eq!(
        (f[0].0.kind, f[0].0.flags, &f[0].1[..]),
        (frame::PING, frame::ACK, &b"12345678"[..])
    );
    for bad in [
        settings(&[(frame::SETTINGS_MAX_FRAME_SIZE, 100)]),
        settings(&[(frame::SETTINGS_ENABLE_PUSH, 1)]),
    ] {
        assert_eq!(
            send(&mut st, frame::SETTINGS, 0, 0, &bad),
            Err(Reason::ProtocolError)
        );
    }
    assert_eq!(
        send(&mut st, frame::SETTINGS, 0, 0, &[0; 5]),
        Err(Reason::FrameSizeError)
    );
    assert_eq!(
        send(
            &mut st,
            frame::SETTINGS,
            0,
            0,
            &settings(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)])
        ),
        Err(Reason::FlowControlError)
    );
    send(
        &mut st,
        frame::SETTINGS,
        0,
        0,
        &settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 3)]),
    )
    .unwrap();
    assert_eq!(st.peer_max_streams(), 3);
    assert!(st.recheck_streams);
    // Push is off: a PUSH_PROMISE is a connection error.
    let id = st.open(&get(), false).unwrap();
    assert_eq!(
        send(&mut st, frame::PUSH_PROMISE, EH, id, &[0, 0, 0, 2, 0x88]),
        Err(Reason::ProtocolError)
    );
}

#[test]
fn a_server_with_a_small_table_gets_literals_after_a_size_update() {
    let mut st = connected(&[(frame::SETTINGS_HEADER_TABLE_SIZE, 0)]);
    let req = get();
    st.open(&req, false).unwrap();
    let f = frames(&mut st);
    assert_eq!(f[0].1[0], 0x20, "a size update to 0 first");
    assert_eq!(&f[0].1[1..], &req.h2_head().literal[..]);
    st.open(&req, false).unwrap();
    assert_eq!(frames(&mut st)[0].1, req.h2_head().literal);
    // A server that shrinks its table after the first request gets the same treatment.
    let mut st = connected(&[]);
    st.open(&req, false).unwrap();
    frames(&mut st);
    send(
        &mut st,
        frame::SETTINGS,
        0,
        0,
        &settings(&[(frame::SETTINGS_HEADER_TABLE_SIZE, 40)]),
    )
    .unwrap();
    frames(&mut st);
    st.open(&req, false).unwrap();
    let f = frames(&mut st);
    assert_eq!(&f[0].1[..2], &[0x3f, 0x09], "a size update to 40");
    assert_eq!(&f[0].1[2..], &req.h2_head().literal[..]);
}

#[test]
fn a_failed_connection_fails_every_stream_once() {
    let mut st = connected(&[]);
    let a = st.open(&get(), false).unwrap();
    let b = st.open(&get(), false).unwrap();
    send(&mut st, frame::HEADERS, EH | ES, a, &[0x88]).unwrap();
    st.connection_error(Reason::CompressionError);
    assert_eq!(answer(&mut st, a).outcome, Outcome::Ok);
    assert_eq!(failure(&mut st, b), Outcome::ProtocolError);
    let f = frames(&mut st);
    let last = f.last().unwrap();
    assert_eq!(last.0.kind, frame::GOAWAY);
    assert_eq!(
        &last.1[4..],
        &(Reason::CompressionError as u32).to_be_bytes()
    );
    assert!(st.finished() && st.no_new_streams());
    assert_eq!(st.open(&get(), false), Err(Outcome::ProtocolError));
}
