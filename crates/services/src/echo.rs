//! The echo backend: seed 004's Netty echo service, made correct.
//!
//! Requests with a body (and every POST, PUT or PATCH) get their body back byte for byte with
//! their own Content-Type; requests without one get `get_size` fixed bytes; `GET /health` gets
//! `ok`. A configured delay holds every echo and GET response on every protocol (the Netty one
//! forgets HTTP/2) without blocking a thread. It is the backend a benchmark measures *through*,
//! so it must never be the bottleneck: the GET answer is pre-built and shared, and the common
//! no-delay GET path allocates no future.
//!
//! HTTP/1.1 requests (cleartext and TLS) go through the same strict framing checks as the
//! intermediaries' (`h1check`): a request head must be complete within `header_timeout` of its
//! first byte, however slowly its bytes trickle in (slowloris), or the answer is `408 Request
//! Timeout` and a close; an idle keep-alive connection is closed quietly after 30 s; ambiguous
//! framing (Content-Length with Transfer-Encoding, …) gets 400 as docs/behaviour.md asks of a server.
//!
//! What it does not do: it does not stream (a body is read whole, up to `max_body`, before it is
//! echoed, as the Netty one does with its aggregator), and it does not measure anything.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use tokio::net::TcpListener;
use tracing::{debug, info};

use crate::error::ServicesError;
use crate::h1check::{self, H1Limits};
use crate::server::Direct;
use crate::server::{self, ListenOptions, Protocols};
use crate::tls::{self, TlsSettings};

/// Largest `get_size` (1 GiB): the answer is built in memory.
pub const MAX_GET_SIZE: u64 = 1 << 30;

/// The bytes a GET answer is cut from, repeated as often as `get_size` needs.
const GET_PATTERN: &[u8] = b"Hello, world!";
const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");
const CLOSE: HeaderValue = HeaderValue::from_static("close");
/// Largest HTTP/1.1 request head and request line (431 / 414 beyond): generous, since the echo
/// backend is what benchmarks measure through, not a place to test limits.
const MAX_HEAD: usize = 64 * 1024;
/// Longest silence inside an HTTP/1.1 request body before the body fails and the connection
/// closes (nginx's `client_body_timeout` default).
const BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// A response write the client does not take within this cuts its connection (nginx's
/// `send_timeout` default).
const SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// An idle HTTP/1.1 keep-alive connection is closed quietly after this.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

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
        }
    }
}

impl EchoConfig {
    /// Checks the configuration; the service checks again before it serves, and a front end
    /// calls this to refuse bad options before it binds anything.
    pub fn validate(&self) -> Result<(), ServicesError> {
        server::check_threads(self.threads)?;
        server::check_max_connections(self.max_connections)?;
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
    fn prepare(&self) -> Result<(Arc<Protocols>, Echo), ServicesError> {
        self.validate()?;
        let tls = match &self.tls {
            Some(settings) => Some(tls::server_config(settings, self.http2)?),
            None => None,
        };
        let protocols = Protocols::new(&ListenOptions {
            http2: self.http2,
            h2_max_streams: self.h2_max_streams,
            tls,
            max_connections: self.max_connections,
        })
        .with_strict_h1(
            H1Limits {
                max_request_line: MAX_HEAD,
                max_head: MAX_HEAD,
                max_body: self.max_body as u64,
                head_timeout: self.header_timeout,
                body_timeout: BODY_TIMEOUT,
                send_timeout: SEND_TIMEOUT,
            },
            IDLE_TIMEOUT,
        );
        Ok((Arc::new(protocols), Echo::new(self)))
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
    let (protocols, echo) = config.prepare()?;
    config.log_start(listener.local_addr().ok(), None);
    server::serve(listener, protocols, echo, shutdown).await;
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
    let (protocols, echo) = config.prepare()?;
    config.log_start(listener.local_addr().ok(), Some(config.threads));
    server::run_blocking(listener, config.threads, protocols, echo, shutdown)
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
}

/// The echo backend as a hyper service; cloned per connection (an `Arc` clone).
#[derive(Debug, Clone)]
struct Echo {
    state: Arc<EchoState>,
}

impl Echo {
    fn new(config: &EchoConfig) -> Self {
        let get_body: Bytes = GET_PATTERN
            .iter()
            .copied()
            .cycle()
            .take(config.get_size)
            .collect::<Vec<u8>>()
            .into();
        Self {
            state: Arc::new(EchoState {
                get_len: HeaderValue::from(get_body.len()),
                get_body,
                delay: config.delay,
                max_body: config.max_body,
            }),
        }
    }
}

type EchoResponse = Response<Full<Bytes>>;

/// The echo backend sends no interim responses: hyper serves its HTTP/2 connections.
impl Direct for Echo {}

impl Service<Request<Incoming>> for Echo {
    type Response = EchoResponse;
    type Error = Infallible;
    type Future = EchoFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let state = &self.state;
        let is_health = req.uri().path() == "/health";
        let head = req.method() == Method::HEAD;
        let has_body = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
            || !req.body().is_end_stream();
        if req.version() <= Version::HTTP_11 {
            // A head `h1check` refused (408, 400, 431, …) arrives as a synthetic request.
            if let Some(status) = h1check::rejection(&req) {
                return EchoFuture::Ready(Some(refuse(status, true)));
            }
            if malformed_http1(&req) {
                return EchoFuture::Ready(Some(refuse(StatusCode::BAD_REQUEST, true)));
            }
        }
        if is_health && (req.method() == Method::GET || head) {
            return EchoFuture::Ready(Some(health(head)));
        }
        if !has_body {
            let response = fixed(state, head);
            if state.delay.is_zero() {
                // The hot path of a GET benchmark: no allocation for the future, no timer.
                return EchoFuture::Ready(Some(response));
            }
            let delay = state.delay;
            return EchoFuture::Boxed(Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(response)
            }));
        }
        EchoFuture::Boxed(Box::pin(echo(state.clone(), req)))
    }
}

/// The Host rules of RFC 9112 §3.2, which hyper leaves to the application: 400 for an HTTP/1.1
/// request without Host, and for any request with more than one Host or an invalid one.
/// `h1check` applies them already; kept as the service's own guard.
fn malformed_http1(req: &Request<Incoming>) -> bool {
    let headers = req.headers();
    let mut hosts = headers.get_all(HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) if req.version() == Version::HTTP_11 => return true,
        (None, _) => {}
        (Some(host), None) => {
            // An empty Host is allowed when the target has no authority (RFC 9112 §3.2).
            if !host.is_empty() && Authority::try_from(host.as_bytes()).is_err() {
                return true;
            }
        }
        (Some(_), Some(_)) => return true,
    }
    false
}

/// The answer to a request without a body: `get_size` bytes of text (headers only for HEAD).
fn fixed(state: &EchoState, head: bool) -> EchoResponse {
    let mut response = if head {
        // An explicit length, since the body that defines it is not sent (RFC 9110 §9.3.2).
        let mut response = Response::new(Full::new(Bytes::new()));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, state.get_len.clone());
        response
    } else {
        Response::new(Full::new(state.get_body.clone()))
    };
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    response
}

fn health(head: bool) -> EchoResponse {
    let body = Bytes::from_static(b"ok");
    let mut response = if head {
        let mut response = Response::new(Full::new(Bytes::new()));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
    } else {
        Response::new(Full::new(body))
    };
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    response
}

/// Reads the whole body (at most `max_body` bytes), waits the delay, and sends it back.
async fn echo(state: Arc<EchoState>, req: Request<Incoming>) -> Result<EchoResponse, Infallible> {
    let (parts, body) = req.into_parts();
    let http1 = parts.version <= Version::HTTP_11;
    // A declared length over the limit is refused before a byte of the body is read.
    if body.size_hint().lower() > state.max_body as u64 {
        return Ok(refuse(StatusCode::PAYLOAD_TOO_LARGE, http1));
    }
    let body = match Limited::new(body, state.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => {
            return Ok(refuse(StatusCode::PAYLOAD_TOO_LARGE, http1));
        }
        Err(error) => {
            // Usually the client went away mid-body; if it is still there, it sent a body the
            // codec could not frame.
            debug!(%error, "failed to read a request body");
            return Ok(refuse(StatusCode::BAD_REQUEST, http1));
        }
    };
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .cloned()
        .unwrap_or(OCTET_STREAM);
    let mut response = if parts.method == Method::HEAD {
        let mut response = Response::new(Full::new(Bytes::new()));
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
    } else {
        Response::new(Full::new(body))
    };
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    if !state.delay.is_zero() {
        tokio::time::sleep(state.delay).await;
    }
    Ok(response)
}

/// An error answer. On HTTP/1 the connection is closed after it: the rest of an oversized or
/// unframeable body is not worth reading (nginx does the same for 413). HTTP/2 resets only the
/// stream, and connection-specific headers are forbidden there (RFC 9113 §8.2.2).
fn refuse(status: StatusCode, http1: bool) -> EchoResponse {
    let reason = status.canonical_reason().unwrap_or("error");
    let mut response = Response::new(Full::new(Bytes::from_static(reason.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    if http1 {
        response.headers_mut().insert(CONNECTION, CLOSE);
    }
    response
}

/// The echo service's future: ready at once on the hot path, boxed otherwise.
enum EchoFuture {
    /// The response is already built (taken on first poll).
    Ready(Option<EchoResponse>),
    /// The response needs a body read or a delay.
    Boxed(Pin<Box<dyn Future<Output = Result<EchoResponse, Infallible>> + Send>>),
}

impl Future for EchoFuture {
    type Output = Result<EchoResponse, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            EchoFuture::Ready(response) => Poll::Ready(Ok(response
                .take()
                .expect("EchoFuture polled after completion"))),
            EchoFuture::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_body_has_exactly_get_size_bytes() {
        for size in [0, 1, 13, 14, 1000] {
            let echo = Echo::new(&EchoConfig {
                get_size: size,
                ..EchoConfig::default()
            });
            assert_eq!(echo.state.get_body.len(), size);
            assert!(GET_PATTERN.starts_with(&echo.state.get_body[..size.min(13)]));
        }
    }

    #[test]
    fn zero_threads_is_refused() {
        let config = EchoConfig {
            threads: 0,
            ..EchoConfig::default()
        };
        let Err(err) = config.prepare() else {
            panic!("zero threads accepted");
        };
        assert_eq!(
            err.to_string(),
            "invalid configuration: threads must be at least 1"
        );
    }
}
