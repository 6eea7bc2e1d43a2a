//! The echo's gRPC service, `gatebench.echo.v1.Echo` (`proto/gatebench/echo/v1/echo.proto`),
//! over HTTP/2 (h2c or TLS): one method per call kind, each echoing the request's messages as
//! they are, so any payload works, schema or not.
//!
//! - `Unary`: the request's message back, after the delay.
//! - `ServerStream`: the request's message back `count` times, the first after the delay, then
//!   one every `interval` (times kept against the request's arrival, so a late timer does not
//!   push the later messages back).
//! - `ClientStream`: after the client's last message, that message back once, after the delay;
//!   the trailers carry `x-gatebench-messages`, how many were received.
//! - `Bidi`: each message back as it arrives, after the delay (counted from its arrival).
//!
//! Each ends with the trailers `grpc-status: 0`, or the status a request asks for. A request
//! may set its own delay, count and interval with the metadata `x-gatebench-delay-ms`,
//! `x-gatebench-count` and `x-gatebench-interval-ms`, and ask for a status with
//! `x-gatebench-status: N` (a refusal of that code, with no message, after the delay); the
//! echo's `--delay` is the default delay. Another method gets `UNIMPLEMENTED`; a message
//! flagged compressed `UNIMPLEMENTED` too (no encoding is offered); one over the echo's
//! largest body `RESOURCE_EXHAUSTED`. Rule: each reply frame is written as it is produced,
//! never held for the next; at most one largest body of replies waits to be sent before the
//! request's messages stop being read (the client's HTTP/2 window then holds it back).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use gatebench_grpc::{Code, Decoder, FrameError};
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Request, Response};
use hyper::body::{Body, Frame};
use tokio::time::{Instant, Sleep};

use std::sync::Arc;

use super::origin::Origin;
use crate::failure::BodyError;
use crate::protocol::body::{ClientBody, Produced, ResBody};

/// The service's path prefix.
pub(crate) const SERVICE: &str = "/gatebench.echo.v1.Echo/";

/// Most messages one server stream may be asked for.
pub const MAX_COUNT: u64 = 10_000_000;

/// The call kinds, by method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unary,
    ServerStream,
    ClientStream,
    Bidi,
}

impl Kind {
    fn of(path: &str) -> Option<Kind> {
        match path.strip_prefix(SERVICE)? {
            "Unary" => Some(Kind::Unary),
            "ServerStream" => Some(Kind::ServerStream),
            "ClientStream" => Some(Kind::ClientStream),
            "Bidi" => Some(Kind::Bidi),
            _ => None,
        }
    }
}

/// Whether a request is a gRPC call: HTTP/2 and a gRPC content type.
pub(crate) fn wants(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| gatebench_grpc::is_grpc_content_type(v.as_bytes()))
}

/// The answer to a gRPC call; `delay` is the echo's, `max` its largest message; each message
/// received and sent is counted in `origin`, when the echo counts.
pub(crate) fn respond(
    req: Request<ClientBody>,
    delay: Duration,
    max: usize,
    origin: Option<Arc<Origin>>,
) -> Response<ResBody> {
    let arrived = Instant::now();
    let (parts, body) = req.into_parts();
    let h = &parts.headers;
    let number = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let ms = |name: &str, default: Duration| {
        number(name)
            .filter(|v| *v <= 3_600_000.0)
            .map_or(default, |v| Duration::from_secs_f64(v / 1e3))
    };
    let delay = ms("x-gatebench-delay-ms", delay);
    let interval = ms("x-gatebench-interval-ms", Duration::ZERO);
    let count = number("x-gatebench-count").map_or(1, |n| (n as u64).min(MAX_COUNT));
    let asked = number("x-gatebench-status")
        .and_then(|n| Code::from_number(n as u32))
        .filter(|c| *c != Code::Ok);
    let kind = Kind::of(parts.uri.path());
    let (finish, req) = match (kind, asked) {
        (None, _) => (
            Some((
                Code::Unimplemented,
                format!("unknown method {}", parts.uri.path()),
            )),
            None,
        ),
        (Some(_), Some(code)) => (
            Some((code, "asked for by x-gatebench-status".to_owned())),
            None,
        ),
        (Some(_), None) => (None, Some(body)),
    };
    let call = Call {
        kind: kind.unwrap_or(Kind::Unary),
        req,
        decoder: Decoder::new(max),
        max,
        last: None,
        received: 0,
        arrived,
        delay,
        interval,
        count,
        queue: VecDeque::new(),
        queued_bytes: 0,
        sleep: Box::pin(tokio::time::sleep_until(arrived + delay)),
        // A refusal waits the delay too: it stands for the back-end's work.
        finish: finish.map(|f| (arrived + delay, f)),
        done: false,
        origin,
    };
    let mut response = Response::new(ResBody::Produced(Produced(Box::pin(call))));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(gatebench_grpc::CONTENT_TYPE),
    );
    response
}

/// One call, answered frame by frame.
struct Call {
    kind: Kind,
    /// The request's DATA, until its end (`None` after, or when it is not read).
    req: Option<ClientBody>,
    decoder: Decoder,
    max: usize,
    /// The request's latest message (unary, server and client streams answer with it).
    last: Option<Bytes>,
    received: u64,
    arrived: Instant,
    delay: Duration,
    interval: Duration,
    count: u64,
    /// Replies and when each is due.
    queue: VecDeque<(Instant, Bytes)>,
    queued_bytes: usize,
    sleep: Pin<Box<Sleep>>,
    /// The status to end with and when, once known.
    finish: Option<(Instant, (Code, String))>,
    done: bool,
    origin: Option<Arc<Origin>>,
}

impl Call {
    fn push(&mut self, due: Instant, message: Bytes) {
        self.queued_bytes += message.len();
        self.queue.push_back((due, message));
    }

    /// A request message arrived at `now`.
    fn on_message(&mut self, message: Bytes, now: Instant) {
        self.received += 1;
        if let Some(origin) = &self.origin {
            origin.grpc_message(false);
        }
        match self.kind {
            Kind::Bidi => self.push(now + self.delay, message),
            _ => self.last = Some(message),
        }
    }

    /// The request ended at `now`: what is left to answer is known.
    fn on_end(&mut self, now: Instant) {
        let ok = |at: Instant| Some((at, (Code::Ok, String::new())));
        match self.kind {
            Kind::Bidi => {
                let at = self.queue.back().map_or(now, |(due, _)| *due);
                self.finish = ok(at);
            }
            Kind::Unary | Kind::ServerStream => {
                let Some(message) = self.last.take() else {
                    self.finish = Some((now, (Code::Internal, "no request message".to_owned())));
                    return;
                };
                if self.kind == Kind::Unary && self.received != 1 {
                    self.finish = Some((
                        now,
                        (
                            Code::Unimplemented,
                            format!("{} request messages to a unary method", self.received),
                        ),
                    ));
                    return;
                }
                let n = if self.kind == Kind::Unary {
                    1
                } else {
                    self.count
                };
                let first = self.arrived + self.delay;
                for i in 0..n {
                    let due = first + self.interval.saturating_mul(i as u32);
                    self.push(due, message.clone());
                }
                let at = self.queue.back().map_or(first, |(due, _)| *due);
                self.finish = ok(at);
            }
            Kind::ClientStream => {
                let message = self.last.take().unwrap_or_default();
                let due = now + self.delay;
                self.push(due, message);
                self.finish = ok(due);
            }
        }
    }

    fn refuse(&mut self, code: Code, why: String) {
        self.req = None;
        self.queue.clear();
        self.finish = Some((Instant::now(), (code, why)));
    }

    /// Reads what the request has, while replies have room.
    fn poll_request(&mut self, cx: &mut Context<'_>) -> Result<(), BodyError> {
        while self.queued_bytes <= self.max {
            let Some(req) = self.req.as_mut() else {
                return Ok(());
            };
            match Pin::new(req).poll_frame(cx) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Some(Err(e))) => return Err(e),
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    let now = Instant::now();
                    if let Err(e) = self.decoder.push_bytes(data) {
                        let code = match e {
                            FrameError::TooLarge { .. } => Code::ResourceExhausted,
                            _ => Code::Unimplemented,
                        };
                        self.refuse(code, e.to_string());
                        return Ok(());
                    }
                    while let Some(m) = self.decoder.next_message() {
                        self.on_message(m, now);
                    }
                }
                Poll::Ready(None) => {
                    self.req = None;
                    if let Err(e) = self.decoder.finish() {
                        self.refuse(Code::Internal, e.to_string());
                        return Ok(());
                    }
                    self.on_end(Instant::now());
                }
            }
        }
        Ok(())
    }
}

impl Body for Call {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Err(e) = this.poll_request(cx) {
            // The client reset its stream or left: nothing more to answer.
            this.done = true;
            return Poll::Ready(Some(Err(e)));
        }
        let next = this
            .queue
            .front()
            .map(|(due, _)| *due)
            .or(this.finish.as_ref().map(|(at, _)| *at));
        let Some(due) = next else {
            return Poll::Pending;
        };
        if due > Instant::now() {
            this.sleep.as_mut().reset(due);
            if this.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        if let Some((_, message)) = this.queue.pop_front() {
            this.queued_bytes -= message.len();
            if let Some(origin) = &this.origin {
                origin.grpc_message(true);
            }
            return Poll::Ready(Some(Ok(Frame::data(gatebench_grpc::encode(&message)))));
        }
        let (_, (code, why)) = this.finish.take().expect("a due time came from finish");
        this.done = true;
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(code.number()));
        if !why.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&why) {
                trailers.insert("grpc-message", v);
            }
        }
        if this.kind == Kind::ClientStream {
            trailers.insert("x-gatebench-messages", HeaderValue::from(this.received));
        }
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}
