//! One gRPC call of a run. Rule: a call counts from its *intended* start (the open model's
//! schedule, or the closed model's moment it could start), so a stalled server shows in every
//! call queued behind it; it ends in exactly one class; its messages are timed as they arrive.
//!
//! What is sent: unary and server-stream calls send their one message with END_STREAM (server
//! streams ask the echo for `messages` replies, `message_rate` apart, with `x-gatebench-count`
//! and `x-gatebench-interval-ms`). Client streams send `messages` messages, the one due at
//! `start + k / message_rate` then (or back to back), and half-close. Bidirectional streams
//! send the same way, or without a rate the next message when the last one's reply arrives;
//! each reply is matched to the oldest message without one, and its round trip counts from that
//! message's intended send time. Messages due after the run's end are not sent.
//!
//! How a call ends, in this order: its deadline (`deadline_exceeded`, the stream cancelled),
//! `--timeout` of silence from the server (`timeout`), an HTTP/2 failure (`goaway`,
//! `refused_stream`, `stream_reset`, `reset` for the connection, `protocol_error`), a response
//! that is not gRPC or breaks its message framing (`protocol_error`), a non-200 status without
//! `grpc-status` (gRPC's mapping of HTTP statuses), or its `grpc-status`.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::time::Duration;

use bytes::Bytes;
use gatebench_grpc::{Code, Decoder};
use gatebench_model::Outcome;
use h2::{RecvStream, SendStream};
use http::header::{HeaderValue, CONTENT_TYPE, TE, USER_AGENT};
use http::{HeaderMap, Method, Request, Response};
use tokio::time::Instant;

use super::{CallKind, Shared, Stats};
use crate::connect::connect;
use crate::stats::record;

/// How a call ended, before it is counted.
enum Ended {
    Status(Code, Option<String>),
    Other(&'static str, String),
}

impl Ended {
    fn class(&self) -> &'static str {
        match self {
            Ended::Status(code, _) => code.name(),
            Ended::Other(class, _) => class,
        }
    }
}

/// What a call saw, recorded into its connection's figures at its end.
struct Seen {
    first_message: Option<Duration>,
    gaps: Vec<Duration>,
    round_trips: Vec<Duration>,
    sent: u64,
    received: u64,
    /// Bidirectional: messages sent and answered.
    answered: u64,
    http_status: Option<u16>,
}

/// Receive windows: the HTTP/2 load's, large enough that flow control never paces a benchmark.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;

/// Where a call stands in its run.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    shared: &'a Shared,
    conn: usize,
    /// When the call was due.
    intended: Instant,
    /// The run's end: no message due after it is sent.
    end: Instant,
}

/// Most message times a call keeps before it adds them to its connection's figures.
const FLUSH: usize = 4096;

impl Seen {
    fn flush(&mut self, stats: &mut Stats) {
        for g in self.gaps.drain(..) {
            record(&mut stats.message_gap, g);
        }
        for r in self.round_trips.drain(..) {
            record(&mut stats.message_latency, r);
        }
    }

    fn flush_if_full(&mut self, shared: &Shared, conn: usize) {
        if self.gaps.len() + self.round_trips.len() >= FLUSH {
            self.flush(&mut shared.stats(conn));
        }
    }
}

/// Waits for `due`: the time a call or message counts from. One already due counts from `due`
/// (the wait is the server's doing); one in the future from when the timer fired (its
/// lateness is the generator's).
pub(super) async fn wait_until(due: Instant) -> Instant {
    if due <= Instant::now() {
        return due;
    }
    tokio::time::sleep_until(due).await;
    Instant::now()
}

/// Makes one call on connection `conn`, due at `intended`; messages due at or after `end` are
/// not sent.
pub(super) async fn call(shared: &Shared, conn: usize, intended: Instant, end: Instant) {
    let mut seen = Seen {
        first_message: None,
        gaps: Vec::new(),
        round_trips: Vec::new(),
        sent: 0,
        received: 0,
        answered: 0,
        http_status: None,
    };
    let ctx = Ctx {
        shared,
        conn,
        intended,
        end,
    };
    let deadline = shared.config.deadline.map(|d| intended + d);
    let ended = match deadline {
        Some(at) => match tokio::time::timeout_at(at, attempt(ctx, &mut seen)).await {
            Ok(ended) => ended,
            // Dropping the call's stream handles cancels the stream (RST_STREAM CANCEL).
            Err(_) => Ended::Other(
                Code::DeadlineExceeded.name(),
                "the deadline passed (kept by the client)".to_owned(),
            ),
        },
        None => attempt(ctx, &mut seen).await,
    };
    let now = Instant::now();
    let class = ended.class();
    let mut stats = shared.stats(conn);
    seen.flush(&mut stats);
    stats.started += 1;
    *stats.calls.entry(class).or_default() += 1;
    if let Some(s) = seen.http_status {
        *stats.http_statuses.entry(s).or_default() += 1;
    }
    stats.sent += seen.sent;
    stats.received += seen.received;
    if let Some(d) = seen.first_message {
        record(&mut stats.first_message, d);
    }
    let bidi = shared.config.kind == CallKind::Bidi;
    let ok_messages = if bidi {
        seen.answered
    } else if class == "ok" {
        seen.sent
    } else {
        0
    };
    if ok_messages > 0 {
        *stats.messages.entry("ok").or_default() += ok_messages;
    }
    if seen.sent > ok_messages {
        // Bidirectional messages without a reply end with their call, whatever its class.
        let lost_class = if class == "ok" { "unanswered" } else { class };
        *stats.messages.entry(lost_class).or_default() += seen.sent - ok_messages;
    }
    if class == "ok" {
        record(
            &mut stats.call_latency,
            now.saturating_duration_since(intended),
        );
    } else if stats.first_failure.is_none() {
        stats.first_failure = Some(match &ended {
            Ended::Status(code, msg) => format!(
                "grpc-status {} ({code}){}",
                code.number(),
                msg.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
            ),
            Ended::Other(class, why) => format!("{class}: {why}"),
        });
    }
}

/// A ready sender on connection `conn`, opened (again) when there is none or it broke.
async fn sender(shared: &Shared, conn: usize) -> Result<h2::client::SendRequest<Bytes>, Ended> {
    let mut slot = shared.conns[conn].lock().await;
    if let Some(send) = slot.as_ref() {
        match send.clone().ready().await {
            Ok(ready) => return Ok(ready),
            Err(_) => *slot = None,
        }
    }
    let config = &shared.config;
    let io = match connect(config.addr, &shared.transport, config.timeout).await {
        Ok((io, _)) => io,
        Err(outcome) => {
            shared.stats(conn).failed += 1;
            return Err(Ended::Other(
                outcome.name(),
                format!("cannot connect to {}", config.addr),
            ));
        }
    };
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_send_buffer_size(1024 * 1024)
        .enable_push(false);
    let handshake = tokio::time::timeout(config.timeout, builder.handshake::<_, Bytes>(io)).await;
    let (send, connection) = match handshake {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            shared.stats(conn).failed += 1;
            return Err(Ended::Other(
                h2_class(&e),
                format!("the HTTP/2 handshake failed: {e}"),
            ));
        }
        Err(_) => {
            shared.stats(conn).failed += 1;
            return Err(Ended::Other(
                Outcome::ConnectTimeout.name(),
                "no HTTP/2 handshake within --timeout".to_owned(),
            ));
        }
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    shared.stats(conn).opened += 1;
    let ready = send
        .clone()
        .ready()
        .await
        .map_err(|e| Ended::Other(h2_class(&e), e.to_string()))?;
    *slot = Some(send);
    Ok(ready)
}

/// The class of an HTTP/2 failure.
fn h2_class(e: &h2::Error) -> &'static str {
    if e.is_go_away() && e.is_remote() {
        return Outcome::GoAway.name();
    }
    if e.is_io() {
        return Outcome::Reset.name();
    }
    match e.reason() {
        Some(h2::Reason::REFUSED_STREAM) => Outcome::RefusedStream.name(),
        Some(_) if e.is_reset() => Outcome::StreamReset.name(),
        _ => Outcome::ProtocolError.name(),
    }
}

fn h2_ended(e: &h2::Error) -> Ended {
    Ended::Other(h2_class(e), e.to_string())
}

/// The request's head.
fn request(shared: &Shared) -> Request<()> {
    let config = &shared.config;
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = shared.uri.clone();
    let h = req.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(gatebench_grpc::CONTENT_TYPE),
    );
    h.insert(TE, HeaderValue::from_static("trailers"));
    h.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("gatebench/", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(d) = config.deadline {
        if let Ok(v) = HeaderValue::from_str(&gatebench_grpc::timeout::encode(d)) {
            h.insert("grpc-timeout", v);
        }
    }
    if config.kind == CallKind::ServerStream {
        h.insert("x-gatebench-count", HeaderValue::from(config.messages));
        if let Some(rate) = config.message_rate {
            if let Ok(v) = HeaderValue::from_str(&format!("{}", 1e3 / rate)) {
                h.insert("x-gatebench-interval-ms", v);
            }
        }
    }
    for (name, value) in &config.metadata {
        h.append(name.clone(), value.clone());
    }
    req
}

/// Sends `data` as the window allows, in pieces; `end` half-closes with the last one.
async fn send_all(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
) -> Result<(), h2::Error> {
    loop {
        if data.is_empty() {
            return if end {
                send.send_data(Bytes::new(), true)
            } else {
                Ok(())
            };
        }
        send.reserve_capacity(data.len());
        let mut room = send.capacity();
        while room == 0 {
            match poll_fn(|cx| send.poll_capacity(cx)).await {
                Some(Ok(n)) => room = n,
                Some(Err(e)) => return Err(e),
                None => return Err(h2::Error::from(h2::Reason::STREAM_CLOSED)),
            }
        }
        let piece = data.split_to(room.min(data.len()));
        let last = data.is_empty();
        send.send_data(piece, end && last)?;
        if last {
            return Ok(());
        }
    }
}

/// The call without its deadline.
async fn attempt(ctx: Ctx<'_>, seen: &mut Seen) -> Ended {
    let Ctx {
        shared,
        conn,
        intended,
        end,
    } = ctx;
    let mut ready = match sender(shared, conn).await {
        Ok(r) => r,
        Err(ended) => return ended,
    };
    let config = &shared.config;
    let kind = config.kind;
    let (response, mut send) = match ready.send_request(request(shared), false) {
        Ok(pair) => pair,
        Err(e) => {
            if e.is_go_away() || e.is_io() {
                // The connection is going away: the next call opens another.
                if let Ok(mut slot) = shared.conns[conn].try_lock() {
                    *slot = None;
                }
            }
            return h2_ended(&e);
        }
    };
    let message = gatebench_grpc::encode(&config.message);
    if kind == CallKind::Bidi {
        return bidi(ctx, response, send, &message, seen).await;
    }
    // Everything is sent first, then the answer read; an early answer (a refusal) shows as a
    // failed send, and is then read.
    let count = if kind.client_streams() {
        config.messages
    } else {
        1
    };
    let mut send_failed = None;
    for k in 0..count {
        if let Some(rate) = config.message_rate.filter(|_| kind.client_streams()) {
            let due = intended + Duration::from_secs_f64(k as f64 / rate);
            if due >= end && k > 0 {
                break;
            }
            wait_until(due).await;
        }
        let last = k + 1 == count;
        match send_all(&mut send, message.clone(), last).await {
            Ok(()) => seen.sent += 1,
            Err(e) => {
                send_failed = Some(e);
                break;
            }
        }
    }
    if send_failed.is_none() && seen.sent < count {
        // Stopped at the run's end: half-close.
        if let Err(e) = send.send_data(Bytes::new(), true) {
            send_failed = Some(e);
        }
    }
    let (head, body) = match read_head(response, config.timeout).await {
        Ok(pair) => pair,
        Err(ended) => return send_failed.map_or(ended, |e| h2_ended(&e)),
    };
    if let Some(ended) = check_head(&head, seen) {
        return ended;
    }
    let Some(mut body) = body else {
        return trailers_only(&head);
    };
    let mut decoder = Decoder::new(config.max_message);
    let mut last_at: Option<Instant> = None;
    loop {
        match next_messages(&mut body, &mut decoder, config.timeout).await {
            Err(ended) => return ended,
            Ok(None) => break,
            Ok(Some(now)) => {
                while decoder.next_message().is_some() {
                    seen.received += 1;
                    match last_at {
                        None => seen.first_message = Some(now.saturating_duration_since(intended)),
                        Some(prev) => seen.gaps.push(now.saturating_duration_since(prev)),
                    }
                    last_at = Some(now);
                }
                seen.flush_if_full(shared, conn);
            }
        }
    }
    finish(&mut body, &decoder, config.timeout).await
}

/// The sending half of a bidirectional stream: its schedule, and the messages without a reply.
struct BidiSend {
    send: SendStream<Bytes>,
    message: Bytes,
    /// When each message without a reply counts from, oldest first.
    waiting: VecDeque<Instant>,
    /// The stream was half-closed.
    closed: bool,
    total: u64,
    rate: Option<f64>,
    intended: Instant,
    end: Instant,
    /// Without a rate: the next message may go (the last one's reply arrived).
    free: bool,
}

impl BidiSend {
    /// When the next message is due, if one is to be sent.
    fn next_due(&self, sent: u64) -> Option<Instant> {
        if self.closed || sent >= self.total {
            return None;
        }
        match self.rate {
            Some(rate) => Some(self.intended + Duration::from_secs_f64(sent as f64 / rate)),
            None if sent == 0 => Some(self.intended),
            None => self.free.then(Instant::now),
        }
    }

    /// Sends the next message, counted from `from`; half-closes instead when its time is past
    /// the run's end, and after the last one.
    async fn send_next(&mut self, from: Instant, seen: &mut Seen) -> Result<(), h2::Error> {
        let due = self.next_due(seen.sent).unwrap_or(from);
        if due >= self.end && seen.sent > 0 {
            return self.close();
        }
        send_all(&mut self.send, self.message.clone(), false).await?;
        seen.sent += 1;
        self.free = false;
        self.waiting.push_back(from);
        if seen.sent >= self.total {
            // Every message sent: half-close, the replies still come.
            self.close()?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), h2::Error> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.send.send_data(Bytes::new(), true)
    }
}

/// A bidirectional stream: sends on its schedule while it reads.
async fn bidi(
    ctx: Ctx<'_>,
    response: h2::client::ResponseFuture,
    send: SendStream<Bytes>,
    message: &Bytes,
    seen: &mut Seen,
) -> Ended {
    let Ctx {
        shared,
        conn,
        intended,
        end,
    } = ctx;
    let config = &shared.config;
    let mut out = BidiSend {
        send,
        message: message.clone(),
        waiting: VecDeque::new(),
        closed: false,
        total: config.messages,
        rate: config.message_rate,
        intended,
        end,
        free: false,
    };
    // The first message goes before the head can arrive (the echo answers on it).
    let mut head = Box::pin(read_head(response, Duration::MAX));
    let mut body: Option<RecvStream> = None;
    let mut decoder = Decoder::new(config.max_message);
    let mut last_at: Option<Instant> = None;
    let mut quiet_since = Instant::now();
    loop {
        let next_due = out.next_due(seen.sent);
        if let Some(due) = next_due.filter(|due| *due <= Instant::now()) {
            // Due already (the first message, a backlog, or the next one without a rate):
            // sent at once, counted from when it was due.
            if let Err(e) = out.send_next(due, seen).await {
                return h2_ended(&e);
            }
            quiet_since = Instant::now();
            continue;
        }
        let sleep_to = next_due.unwrap_or(quiet_since + config.timeout);
        tokio::select! {
            biased;
            got = async { match body.as_mut() {
                Some(b) => poll_fn(|cx| b.poll_data(cx)).await,
                None => std::future::pending().await,
            } } => {
                let b = body.as_mut().expect("polled only with a body");
                match got {
                    None => return finish(b, &decoder, config.timeout).await,
                    Some(Err(e)) => return h2_ended(&e),
                    Some(Ok(data)) => {
                        let now = Instant::now();
                        quiet_since = now;
                        let _ = b.flow_control().release_capacity(data.len());
                        if let Err(e) = decoder.push_bytes(data) {
                            return Ended::Other(Outcome::ProtocolError.name(), e.to_string());
                        }
                        while decoder.next_message().is_some() {
                            seen.received += 1;
                            match last_at {
                                None => seen.first_message = Some(now.saturating_duration_since(intended)),
                                Some(prev) => seen.gaps.push(now.saturating_duration_since(prev)),
                            }
                            last_at = Some(now);
                            let Some(from) = out.waiting.pop_front() else {
                                return Ended::Other(
                                    Outcome::ProtocolError.name(),
                                    "more replies than messages sent".to_owned(),
                                );
                            };
                            seen.answered += 1;
                            seen.round_trips.push(now.saturating_duration_since(from));
                        }
                        out.free = out.waiting.is_empty();
                        seen.flush_if_full(shared, conn);
                    }
                }
            }
            h = &mut head, if body.is_none() => {
                let (h, b) = match h {
                    Ok(pair) => pair,
                    Err(ended) => return ended,
                };
                if let Some(ended) = check_head(&h, seen) {
                    return ended;
                }
                match b {
                    None => return trailers_only(&h),
                    Some(b) => body = Some(b),
                }
            }
            () = tokio::time::sleep_until(sleep_to) => {
                if next_due.is_none() {
                    return Ended::Other(Outcome::Timeout.name(), format!("no reply within {:?}", config.timeout));
                }
                // The timer fired for a message that was in the future: it counts from now.
                if let Err(e) = out.send_next(Instant::now(), seen).await {
                    return h2_ended(&e);
                }
                quiet_since = Instant::now();
            }
        }
    }
}

/// The response head, within `timeout`: the head and its body (`None` when the head ended the
/// stream: a trailers-only response).
async fn read_head(
    response: h2::client::ResponseFuture,
    timeout: Duration,
) -> Result<(Response<()>, Option<RecvStream>), Ended> {
    let got = if timeout == Duration::MAX {
        Ok(response.await)
    } else {
        tokio::time::timeout(timeout, response).await
    };
    match got {
        Err(_) => Err(Ended::Other(
            Outcome::Timeout.name(),
            format!("no response head within {timeout:?}"),
        )),
        Ok(Err(e)) => Err(h2_ended(&e)),
        Ok(Ok(res)) => {
            let (parts, body) = res.into_parts();
            let body = (!body.is_end_stream()).then_some(body);
            Ok((Response::from_parts(parts, ()), body))
        }
    }
}

/// A head that ends the call: a non-200 status without `grpc-status`, or not gRPC.
fn check_head(head: &Response<()>, seen: &mut Seen) -> Option<Ended> {
    let status = head.status().as_u16();
    let grpc_status = head.headers().get("grpc-status");
    if status != 200 {
        seen.http_status = Some(status);
        if grpc_status.is_none() {
            let code = Code::from_http_status(status);
            return Some(Ended::Status(code, Some(format!("HTTP status {status}"))));
        }
    }
    let grpc = head
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| gatebench_grpc::is_grpc_content_type(v.as_bytes()));
    if !grpc && grpc_status.is_none() {
        return Some(Ended::Other(
            Outcome::ProtocolError.name(),
            format!(
                "the response is not gRPC (content-type {:?})",
                head.headers().get(CONTENT_TYPE)
            ),
        ));
    }
    None
}

/// The status of a head that ended the stream (gRPC's "trailers-only" response).
fn trailers_only(head: &Response<()>) -> Ended {
    status_of(head.headers())
}

/// The call's `grpc-status` (and `grpc-message`) from trailers.
fn status_of(fields: &HeaderMap) -> Ended {
    let message = fields
        .get("grpc-message")
        .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
    match fields.get("grpc-status") {
        None => Ended::Other(
            Outcome::ProtocolError.name(),
            "no grpc-status in the trailers".to_owned(),
        ),
        Some(v) => match Code::parse(v.as_bytes()) {
            Some(code) => Ended::Status(code, message),
            None => Ended::Other(
                Outcome::ProtocolError.name(),
                format!("grpc-status {v:?} is not a number"),
            ),
        },
    }
}

/// Reads the next DATA into `decoder`: the time it arrived, or `None` at the body's end.
async fn next_messages(
    body: &mut RecvStream,
    decoder: &mut Decoder,
    timeout: Duration,
) -> Result<Option<Instant>, Ended> {
    match tokio::time::timeout(timeout, body.data()).await {
        Err(_) => Err(Ended::Other(
            Outcome::Timeout.name(),
            format!("no reply within {timeout:?}"),
        )),
        Ok(None) => {
            decoder
                .finish()
                .map_err(|e| Ended::Other(Outcome::ProtocolError.name(), e.to_string()))?;
            Ok(None)
        }
        Ok(Some(Err(e))) => Err(h2_ended(&e)),
        Ok(Some(Ok(data))) => {
            let now = Instant::now();
            let _ = body.flow_control().release_capacity(data.len());
            decoder
                .push_bytes(data)
                .map_err(|e| Ended::Other(Outcome::ProtocolError.name(), e.to_string()))?;
            Ok(Some(now))
        }
    }
}

/// The trailers after the last DATA: the call's status.
async fn finish(body: &mut RecvStream, decoder: &Decoder, timeout: Duration) -> Ended {
    if let Err(e) = decoder.finish() {
        return Ended::Other(Outcome::ProtocolError.name(), e.to_string());
    }
    match tokio::time::timeout(timeout, body.trailers()).await {
        Err(_) => Ended::Other(
            Outcome::Timeout.name(),
            format!("no trailers within {timeout:?}"),
        ),
        Ok(Err(e)) => h2_ended(&e),
        Ok(Ok(None)) => Ended::Other(
            Outcome::ProtocolError.name(),
            "the stream ended without trailers (no grpc-status)".to_owned(),
        ),
        Ok(Ok(Some(trailers))) => status_of(&trailers),
    }
}
