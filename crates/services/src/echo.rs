//! The echo backend: seed 004's Netty echo service, made correct.
//!
//! Requests with a body (and every POST, PUT or PATCH) get their body back byte for byte with
//! their own Content-Type; requests without one get `get_size` fixed bytes; `GET /health` gets
//! `ok`. A configured delay holds every echo and GET response on every protocol (the Netty one
//! forgets HTTP/2) without blocking a thread. It is the backend a benchmark measures *through*,
//! so it must never be the bottleneck: the GET answer is pre-built and shared, and the common
//! no-delay GET path allocates no future.
//!
//! It is served by the same servers as the intermediaries: `h1::server` for HTTP/1.x (cleartext
//! and TLS), `h2::server` for HTTP/2 (ALPN h2, h2c by prior knowledge), so it has their rules and
//! timers. HTTP/1.x requests go through `h1::check`'s strict framing checks: a request head must
//! be complete within `header_timeout` of its first byte, however slowly its bytes trickle in
//! (slowloris), or the answer is `408 Request Timeout` and a close; ambiguous framing
//! (Content-Length with Transfer-Encoding, …) gets 400 as docs/behaviour.md asks of a server.
//! A connection with nothing in progress (HTTP/2: no open stream, or no preface yet) is closed
//! after the idle timeout (30 s); a body that sends nothing for the body timeout gets 408 (or
//! RST_STREAM); a client that takes no response bytes for the send timeout is cut (60 s each);
//! an HTTP/2 client that keeps resetting accepted streams gets GOAWAY (`h2::server`). The
//! timers can be shortened with [`EchoLimits`].
//!
//! What it holds: a body is read whole, up to `max_body`, before it is echoed (as the Netty one
//! does with its aggregator; streaming it back as it arrives would deadlock a client that sends
//! its whole body before it reads). An HTTP/1.x connection has one request at a time, so it
//! holds at most `max_body` bytes of body. An HTTP/2 connection's streams share a budget
//! ([`EchoLimits::h2_body_budget`], 64 MiB by default and never less than `max_body`): the bytes
//! of every body being read or echoed on the connection count against it until the echo has
//! been sent, a stream that declares a Content-Length takes its whole length when it starts,
//! and a stream that does not fit gets `503 Service Unavailable` (with `retry-after: 1`, before
//! its body is read when its length is declared). With HTTP/2 flow control on top (a 1 MiB
//! connection window for bytes not yet taken), one HTTP/2 connection holds at most the budget
//! plus 1 MiB of request bodies, not `h2_max_streams` × `max_body`.
//!
//! `POST /v1/chat/completions` with `"stream": true` is answered by an emulated model's token
//! stream (server-sent events on a set schedule, [`chat`]), for benchmarks of AI gateways.
//! `GET /ws` with a WebSocket handshake (HTTP/1.1) is a WebSocket echo ([`ws`]), its largest
//! message `max_body` bytes. An HTTP/2 request with a gRPC content type is a call of the gRPC
//! echo service `gatebench.echo.v1.Echo` ([`grpc`]): unary, server, client and bidirectional
//! streams, its largest message `max_body` bytes.
//!
//! Behind an intermediary it can tell who answered and what it saw: with an `id` every
//! response (both protocols, refusals too) carries `x-gatebench-backend: ID`, and with
//! `origin` it counts its connections, TLS handshakes and requests ([`origin`]) and answers
//! them as JSON at `GET /__gatebench/origin`. Without either, nothing of this is done.
//!
//! It does not measure anything.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Body;
use tokio::net::TcpListener;
use tracing::{debug, info};

pub mod chat;
pub mod grpc;
pub mod origin;
pub mod ws;

use crate::error::ServicesError;
use crate::protocol::body::{Budget, ClientBody, Held, ResBody};
use crate::protocol::h1::check::H1Limits;
use crate::protocol::h1::server::H1Handler;
use crate::protocol::h2::server::H2Handler;
use crate::protocol::interim::{H2Interim, Interim};
use crate::protocol::Answer;
use crate::server::{self, ListenOptions, Opened, Protocols};
use crate::tls::{self, TlsSettings};
use origin::Origin;

/// Largest `get_size` (1 GiB): the answer is built in memory.
pub const MAX_GET_SIZE: u64 = 1 << 30;

/// The bytes a GET answer is cut from, repeated as often as `get_size` needs.
const GET_PATTERN: &[u8] = b"Hello, world!";
const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");
const CLOSE: HeaderValue = HeaderValue::from_static("close");
const RETRY_AFTER: HeaderName = HeaderName::from_static("retry-after");
/// The header that names the back-end that answered (with an `id`).
pub const BACKEND_HEADER: HeaderName = HeaderName::from_static("x-gatebench-backend");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
/// Largest HTTP/1.1 request head and request line (431 / 414 beyond): generous, since the echo
/// backend is what benchmarks measure through, not a place to test limits.
const MAX_HEAD: usize = 64 * 1024;

/// The echo's timers and its HTTP/2 memory budget. Apart from [`EchoConfig`] so that existing
/// `EchoConfig` literals stay valid; [`serve_with`] and [`run_blocking_with`] take them, and
/// [`serve`] and [`run_blocking`] use the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoLimits {
    /// A connection with nothing in progress is closed after this (HTTP/1.x: quietly; HTTP/2:
    /// with GOAWAY), counted from its start too: a client that never sends its first request
    /// (or its HTTP/2 preface) is closed as one that goes idle.
    pub idle: Duration,
    /// Longest silence inside a request body (then 408; HTTP/2: 408 or RST_STREAM).
    pub body: Duration,
    /// Longest wait for a client to take the next response bytes; then its connection
    /// (HTTP/2: its stream) is cut.
    pub send: Duration,
    /// Bytes of request bodies one HTTP/2 connection may hold at once, over all its streams
    /// (never less than `max_body`); a stream that does not fit gets 503.
    pub h2_body_budget: usize,
}

impl Default for EchoLimits {
    /// Idle 30 s; body 60 s (nginx `client_body_timeout`); send 60 s (nginx `send_timeout`);
    /// 64 MiB of bodies per HTTP/2 connection.
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(30),
            body: Duration::from_secs(60),
            send: Duration::from_secs(60),
            h2_body_budget: 64 * 1024 * 1024,
        }
    }
}

impl EchoLimits {
    /// Checks the limits: every timer above zero.
    pub fn validate(&self) -> Result<(), ServicesError> {
        for (field, value) in [
            ("idle", self.idle),
            ("body", self.body),
            ("send", self.send),
        ] {
            if value.is_zero() {
                return Err(ServicesError::invalid(field, "must be above zero"));
            }
        }
        Ok(())
    }
}

/// Configuration of the echo backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoConfig {
    /// Held before every echo and GET response, on every protocol, with a tokio timer (never a
    /// blocked thread). Not applied to `/health` nor to error answers (413, 400), which are
    /// about the request, not the simulated backend work.
    pub delay: Duration,
    /// Length of the answer to requests without a body. The bytes are `Hello, world!` repeated
    /// and cut to exactly this length.
    pub get_size: usize,
    /// Worker threads used by [`run_blocking`] (at least 1). Ignored by [`serve`], which runs on
    /// the caller's runtime.
    pub threads: usize,
    /// Largest request body accepted; a larger one gets 413 on every protocol, as soon as its
    /// Content-Length (or the running total of a chunked body) says so.
    pub max_body: usize,
    /// Serve TLS instead of cleartext.
    pub tls: Option<TlsSettings>,
    /// Also serve HTTP/2: by ALPN over TLS, and by prior knowledge (h2c) next to HTTP/1.1 on
    /// cleartext. HTTP/1.1 is always served.
    pub http2: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced on HTTP/2 connections (at least 1).
    pub h2_max_streams: u32,
    /// Total time for an HTTP/1.1 request head from its first byte (above zero); beyond it the
    /// answer is 408 and the connection closes, even if bytes keep trickling in.
    pub header_timeout: Duration,
    /// Most client connections served at once (at least 1); further clients wait in the
    /// accept queue until one ends.
    pub max_connections: usize,
    /// The emulated model's schedule for `POST /v1/chat/completions` streams.
    pub chat: chat::ChatConfig,
    /// This back-end's name, sent on every response as `x-gatebench-backend` (a valid header
    /// value); `None` sends no such header.
    pub id: Option<String>,
    /// Where to count what the back-end sees ([`origin`]); also answers
    /// `GET /__gatebench/origin`. `None` counts nothing.
    pub origin: Option<Arc<Origin>>,
}

impl Default for EchoConfig {
    /// No delay, 13-byte GET answers, one thread per available core, 16 MiB bodies, cleartext
    /// HTTP/1.1 only, 256 concurrent HTTP/2 streams, 10 s for a request head (as the proxy),
    /// at most 10,000 client connections (or half the open-files limit, if lower).
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            get_size: GET_PATTERN.len(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_body: 16 * 1024 * 1024,
            tls: None,
            http2: false,
            h2_max_streams: 256,
            header_timeout: Duration::from_secs(10),
            max_connections: server::default_max_connections(),
            chat: chat::ChatConfig::default(),
            id: None,
            origin: None,
        }
    }
}

impl EchoConfig {
    /// Checks the configuration; the service checks again before it serves, and a front end
    /// calls this to refuse bad options before it binds anything.
    pub fn validate(&self) -> Result<(), ServicesError> {
        server::check_threads(self.threads)?;
        server::check_max_connections(self.max_connections)?;
        self.chat.validate()?;
        if let Some(id) = &self.id {
            if id.is_empty() || HeaderValue::from_str(id).is_err() {
                return Err(ServicesError::invalid(
                    "id",
                    "must be non-empty printable text (it is sent as a header value)",
                ));
            }
        }
        if self.h2_max_streams == 0 {
            return Err(ServicesError::invalid(
                "h2_max_streams",
                "must be at least 1",
            ));
        }
        if self.header_timeout.is_zero() {
            return Err(ServicesError::invalid(
                "header_timeout",
                "must be above zero",
            ));
        }
        if self.get_size as u64 > MAX_GET_SIZE {
            return Err(ServicesError::invalid(
                "get_size",
                format!(
                    "must be at most {MAX_GET_SIZE} bytes (1 GiB), got {}",
                    self.get_size
                ),
            ));
        }
        Ok(())
    }

    /// Validates the configuration and builds what serving needs; nothing is bound or spawned.
    fn prepare(
        &self,
        limits: &EchoLimits,
    ) -> Result<(Arc<Protocols>, Arc<EchoState>), ServicesError> {
        self.validate()?;
        limits.validate()?;
        let tls = match &self.tls {
            Some(settings) => Some(tls::server_config(settings, self.http2)?),
            None => None,
        };
        let protocols = Protocols::new(
            &ListenOptions {
                http2: self.http2,
                h2_max_streams: self.h2_max_streams,
                tls,
                max_connections: self.max_connections,
            },
            H1Limits {
                max_request_line: MAX_HEAD,
                max_head: MAX_HEAD,
                max_body: self.max_body as u64,
                head_timeout: self.header_timeout,
                body_timeout: limits.body,
                send_timeout: limits.send,
            },
            limits.idle,
        );
        let chat = Arc::new(chat::Chat::new(&self.chat)?);
        Ok((Arc::new(protocols), EchoState::new(self, limits, chat)))
    }

    /// Logs what is being served; `threads` is `None` on the caller's runtime.
    fn log_start(&self, addr: Option<SocketAddr>, threads: Option<usize>) {
        info!(
            addr = ?addr,
            threads = ?threads,
            tls = self.tls.is_some(),
            http2 = self.http2,
            delay_ms = self.delay.as_secs_f64() * 1000.0,
            header_timeout_s = self.header_timeout.as_secs_f64(),
            get_size = self.get_size,
            max_body = self.max_body,
            "echo backend listening",
        );
    }
}

/// Serves the echo backend on `listener`, on the caller's tokio runtime, until `shutdown`
/// resolves; then stops accepting, lets in-flight requests finish (at most 5 s) and returns.
///
/// Connections are spawned with `tokio::spawn`, so a multi-threaded runtime spreads them over
/// its workers. Fails only before serving starts (invalid configuration, unreadable
/// certificate).
pub async fn serve(
    listener: TcpListener,
    config: EchoConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    serve_with(listener, config, EchoLimits::default(), shutdown).await
}

/// [`serve`] with the timers and budget of `limits`.
pub async fn serve_with(
    listener: TcpListener,
    config: EchoConfig,
    limits: EchoLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    let (protocols, state) = config.prepare(&limits)?;
    config.log_start(listener.local_addr().ok(), None);
    server::serve(listener, protocols, move |_| state.connection(), shutdown).await;
    Ok(())
}

/// Blocking form of [`serve`]: serves on the already-bound `listener` (it binds nothing itself)
/// with `config.threads` threads until `shutdown` resolves, drains (at most 5 s), and returns.
///
/// Thread per core: each thread runs its own current-thread runtime and accept loop on the
/// shared listening socket, and keeps the connections it accepted. On a 2-core machine this was
/// up to 1.5x faster than one multi-threaded runtime (`benches/echo_wrk.rs`). `shutdown` is
/// polled on the calling thread's own runtime, so it may use tokio's signals and timers.
pub fn run_blocking(
    listener: std::net::TcpListener,
    config: EchoConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    run_blocking_with(listener, config, EchoLimits::default(), shutdown)
}

/// [`run_blocking`] with the timers and budget of `limits`.
pub fn run_blocking_with(
    listener: std::net::TcpListener,
    config: EchoConfig,
    limits: EchoLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    let (protocols, state) = config.prepare(&limits)?;
    config.log_start(listener.local_addr().ok(), Some(config.threads));
    let make = move |_| state.connection();
    server::run_blocking(listener, config.threads, protocols, make, shutdown)
}

/// What every connection of an echo backend shares.
#[derive(Debug)]
struct EchoState {
    /// The answer to requests without a body, built once; each response clones the `Bytes`
    /// (a reference count), never the data.
    get_body: Bytes,
    /// `get_body.len()` as a header value, for HEAD answers that carry no body.
    get_len: HeaderValue,
    delay: Duration,
    max_body: usize,
    /// Bytes of bodies one connection may hold at once.
    budget: usize,
    /// The emulated model.
    chat: Arc<chat::Chat>,
    /// `x-gatebench-backend`'s value, when the back-end has an id.
    id: Option<HeaderValue>,
    /// The origin statistics, when counted.
    origin: Option<Arc<Origin>>,
}

impl EchoState {
    fn new(config: &EchoConfig, limits: &EchoLimits, chat: Arc<chat::Chat>) -> Arc<Self> {
        let get_body: Bytes = GET_PATTERN
            .iter()
            .copied()
            .cycle()
            .take(config.get_size)
            .collect::<Vec<u8>>()
            .into();
        Arc::new(EchoState {
            get_len: HeaderValue::from(get_body.len()),
            get_body,
            delay: config.delay,
            max_body: config.max_body,
            budget: limits.h2_body_budget.max(config.max_body),
            chat,
            id: config
                .id
                .as_deref()
                .and_then(|id| HeaderValue::from_str(id).ok()),
            origin: config.origin.clone(),
        })
    }

    /// The handler of one new connection.
    fn connection(self: &Arc<Self>) -> Arc<Echo> {
        Arc::new(Echo {
            state: self.clone(),
            held: Budget::new(self.budget),
            opened: OnceLock::new(),
            reading: AtomicBool::new(false),
        })
    }
}

/// The echo backend as one connection's handler.
#[derive(Debug)]
struct Echo {
    state: Arc<EchoState>,
    /// What this connection's bodies hold, against [`EchoState::budget`].
    held: Arc<Budget>,
    /// How the connection was opened, once counted in the origin statistics.
    opened: OnceLock<Opened>,
    /// The connection read the origin statistics: it is no longer counted.
    reading: AtomicBool,
}

impl Echo {
    /// The answer to `req`, marked with the back-end's id when it has one.
    fn answer(&self, req: Request<ClientBody>, http1: bool) -> Answer {
        let answer = self.respond(req, http1);
        let Some(id) = self.state.id.clone() else {
            return answer;
        };
        match answer {
            Answer::Ready(Some(mut response)) => {
                response.headers_mut().insert(BACKEND_HEADER, id);
                Answer::Ready(Some(response))
            }
            answer => Answer::boxed(async move {
                let mut response = answer.await;
                response.headers_mut().insert(BACKEND_HEADER, id);
                response
            }),
        }
    }

    /// The origin statistics as JSON; the connection that asks is taken out of them.
    fn reading(&self, origin: &Origin, head: bool) -> Response<ResBody> {
        if !self.reading.swap(true, Ordering::Relaxed) {
            if let Some(how) = self.opened.get() {
                origin.uncount(*how);
            }
        }
        small(
            Bytes::from(origin.snapshot().to_json()),
            APPLICATION_JSON,
            head,
        )
    }

    fn respond(&self, req: Request<ClientBody>, http1: bool) -> Answer {
        let state = &self.state;
        let head = req.method() == Method::HEAD;
        if let Some(origin) = &state.origin {
            if req.uri().path() == origin::PATH && (req.method() == Method::GET || head) {
                return Answer::Ready(Some(self.reading(origin, head)));
            }
            if !self.reading.load(Ordering::Relaxed) {
                origin.request(!http1);
            }
        }
        if req.uri().path() == "/health" && (req.method() == Method::GET || head) {
            return Answer::Ready(Some(health(head)));
        }
        if http1 && ws::wants(req.method(), req.uri().path()) {
            return Answer::Ready(Some(ws::upgrade(req.headers(), state.max_body)));
        }
        if req.method() == Method::CONNECT && req.uri().path() == ws::PATH {
            if let Some(protocol) = req.extensions().get::<h2::ext::Protocol>() {
                return Answer::Ready(Some(ws::connect(
                    protocol.as_str(),
                    req.headers(),
                    state.max_body,
                )));
            }
        }
        if !http1 && grpc::wants(req.headers()) {
            return Answer::Ready(Some(grpc::respond(
                req,
                state.delay,
                state.max_body,
                state.origin.clone(),
            )));
        }
        let has_body = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
            || !req.body().is_end_stream();
        if !has_body {
            let response = fixed(state, head);
            if state.delay.is_zero() {
                // The hot path of a GET benchmark: no allocation for the future, no timer.
                return Answer::Ready(Some(response));
            }
            let delay = state.delay;
            return Answer::boxed(async move {
                tokio::time::sleep(delay).await;
                response
            });
        }
        Answer::boxed(echo(
            state.clone(),
            Held::new(self.held.clone()),
            req,
            http1,
        ))
    }
}

impl H1Handler for Echo {
    fn call_h1(&self, req: Request<ClientBody>, _: Option<Interim>) -> Answer {
        self.answer(req, true)
    }

    /// A head `h1::check` refused (408, 400, 413, 431, …): the status, then a close.
    fn refuse(&self, status: StatusCode) -> Response<ResBody> {
        let mut response = refuse(status, true);
        if let Some(id) = &self.state.id {
            response.headers_mut().insert(BACKEND_HEADER, id.clone());
        }
        response
    }
}

impl server::Handler for Echo {
    fn opened(&self, how: Opened) {
        if let Some(origin) = &self.state.origin {
            if self.opened.set(how).is_ok() {
                origin.opened(how);
            }
        }
    }
}

impl Drop for Echo {
    /// The connection ended (its last request with it): counted closed, unless it only read
    /// the statistics.
    fn drop(&mut self) {
        if let Some(origin) = &self.state.origin {
            if self.opened.get().is_some() && !self.reading.load(Ordering::Relaxed) {
                origin.closed();
            }
        }
    }
}

impl H2Handler for Echo {
    fn call_h2(&self, req: Request<ClientBody>, _: H2Interim) -> Answer {
        self.answer(req, false)
    }

    /// Its WebSocket echo answers RFC 8441's extended CONNECT too.
    fn extended_connect(&self) -> bool {
        true
    }
}

/// The answer to a request without a body: `get_size` bytes of text (headers only for HEAD).
fn fixed(state: &EchoState, head: bool) -> Response<ResBody> {
    let mut response = if head {
        // An explicit length, since the body that defines it is not sent (RFC 9110 §9.3.2).
        let mut response = Response::new(ResBody::Local(None));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, state.get_len.clone());
        response
    } else {
        Response::new(ResBody::Local(Some(state.get_body.clone())))
    };
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    response
}

fn health(head: bool) -> Response<ResBody> {
    small(Bytes::from_static(b"ok"), TEXT_PLAIN, head)
}

/// A body held in memory with its type; for HEAD, only its length (RFC 9110 §9.3.2).
fn small(body: Bytes, content_type: HeaderValue, head: bool) -> Response<ResBody> {
    let mut response = if head {
        let mut response = Response::new(ResBody::Local(None));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
    } else {
        Response::new(ResBody::Local(Some(body)))
    };
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

/// Reads the whole body (at most `max_body` bytes, within the connection's budget), waits the
/// delay, and sends it back.
async fn echo(
    state: Arc<EchoState>,
    mut held: Held,
    req: Request<ClientBody>,
    http1: bool,
) -> Response<ResBody> {
    let arrived = tokio::time::Instant::now();
    let (parts, mut body) = req.into_parts();
    let hint = body.size_hint();
    // A declared length over the limit is refused before a byte of the body is read.
    if hint.lower() > state.max_body as u64 {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, http1);
    }
    // A declared length is held whole at once: a stream that got in can finish.
    let declared = hint.exact().map(|n| n as usize);
    if let Some(n) = declared {
        if !held.take(n) {
            return over_budget(&held);
        }
    }
    let mut first: Option<Bytes> = None;
    let mut rest = BytesMut::new();
    let mut len = 0usize;
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        let data = match frame {
            None => break,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                // Trailers are not echoed.
                Err(_) => continue,
            },
            Some(Err(error)) => {
                // Usually the client went away mid-body; if it is still there, it stalled
                // (408) or sent a body that could not be framed (400).
                debug!(%error, "failed to read a request body");
                return refuse(error.downstream_failure().status(), http1);
            }
        };
        len += data.len();
        if len > state.max_body {
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, http1);
        }
        if len > held.bytes() && !held.take(len - held.bytes()) {
            return over_budget(&held);
        }
        match &first {
            None => first = Some(data),
            Some(piece) => {
                if rest.is_empty() {
                    rest.reserve(declared.unwrap_or(0).max(len));
                    rest.extend_from_slice(piece);
                }
                rest.extend_from_slice(&data);
            }
        }
    }
    let body = if rest.is_empty() {
        first.unwrap_or_default()
    } else {
        rest.freeze()
    };
    if parts.method == Method::POST && parts.uri.path() == chat::PATH {
        if let Some(max_tokens) = chat::Chat::asks_for_stream(&body) {
            return state.chat.respond(&parts.headers, max_tokens, arrived);
        }
    }
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .cloned()
        .unwrap_or(OCTET_STREAM);
    let mut response = if parts.method == Method::HEAD {
        let mut response = Response::new(ResBody::Local(None));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
    } else {
        Response::new(ResBody::Held(Some(body), held))
    };
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    if !state.delay.is_zero() {
        tokio::time::sleep(state.delay).await;
    }
    response
}

/// The answer to a stream whose body does not fit the connection's budget.
fn over_budget(held: &Held) -> Response<ResBody> {
    debug!(
        holding = held.bytes(),
        "request body over the connection's budget: 503"
    );
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, false);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// An error answer. On HTTP/1 the connection is closed after it: the rest of an oversized or
/// unframeable body is not worth reading (nginx does the same for 413). HTTP/2 resets only the
/// stream, and connection-specific headers are forbidden there (RFC 9113 §8.2.2).
fn refuse(status: StatusCode, http1: bool) -> Response<ResBody> {
    let reason = status.canonical_reason().unwrap_or("error");
    let mut response = Response::new(ResBody::Local(Some(Bytes::from_static(reason.as_bytes()))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    if http1 {
        response.headers_mut().insert(CONNECTION, CLOSE);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_body_has_exactly_get_size_bytes() {
        for size in [0, 1, 13, 14, 1000] {
            let state = EchoState::new(
                &EchoConfig {
                    get_size: size,
                    ..EchoConfig::default()
                },
                &EchoLimits::default(),
                Arc::new(chat::Chat::new(&chat::ChatConfig::default()).unwrap()),
            );
            assert_eq!(state.get_body.len(), size);
            assert!(GET_PATTERN.starts_with(&state.get_body[..size.min(13)]));
        }
    }

    #[test]
    fn zero_threads_is_refused() {
        let config = EchoConfig {
            threads: 0,
            ..EchoConfig::default()
        };
        let Err(err) = config.prepare(&EchoLimits::default()) else {
            panic!("zero threads accepted");
        };
        assert_eq!(
            err.to_string(),
            "invalid configuration: threads must be at least 1"
        );
    }
}
