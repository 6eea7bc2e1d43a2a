//! HTTP/2 client connections of every service, served with the h2 crate directly rather
//! than through hyper: hyper 1's server has no way to send an interim (1xx) response on
//! HTTP/2, and a proxy must forward the ones its upstream sends (RFC 9110 §15.2; RFC 9113 §8.1:
//! one or more 1xx HEADERS may precede the final response's HEADERS). h2's
//! `SendResponse::send_informational` sends them.
//!
//! It does what hyper's HTTP/2 server did for the intermediaries and nothing more: the same
//! SETTINGS (hyper's defaults, the listener's SETTINGS_MAX_CONCURRENT_STREAMS), one task per
//! stream, request bodies streamed with flow control, connection-specific response fields
//! removed (RFC 9113 §8.2.2), `Date` and an exact `Content-Length` added when missing, response
//! bodies written as the client's window allows, a broken response body ended with RST_STREAM
//! (never a complete-looking message), a client's RST_STREAM cancelling the request's work, and
//! GOAWAY when the drain starts (a connection with no open stream then, and none in the next
//! half second, is closed, whether or not the client answers the graceful shutdown's PING).
//! Extended CONNECT (RFC 8441) for the services that take it ([`H2Handler::extended_connect`]):
//! a 101 answer becomes a 200 and the stream is handed over as bytes. Not done: plain CONNECT
//! and server push, which the intermediaries never offered.
//!
//! Slow and hostile peers (docs/proxy.md, "Timers and limits"), each with its timer or limit as
//! nginx, HAProxy and Envoy have one:
//! - a connection with no open stream (one that never sends its preface or SETTINGS, or goes
//!   idle between requests) gets GOAWAY(NO_ERROR) and is closed after the idle timeout, as
//!   HTTP/1.x connections are (nginx `keepalive_timeout`, HAProxy `timeout http-keep-alive`);
//! - a request body that sends nothing for the body timeout fails like an HTTP/1.1 one (408,
//!   or RST_STREAM once the response started), which drops its upstream exchange;
//! - a response the client's window (or its socket) does not take for the send timeout ends
//!   with RST_STREAM(CANCEL), freeing the upstream connection (nginx `send_timeout`);
//! - a client that resets streams after they were accepted (CVE-2023-44487, "rapid reset")
//!   gets GOAWAY(ENHANCE_YOUR_CALM) once it reset more than [`MAX_CLIENT_RESETS`] streams and
//!   more streams than it let finish; h2 itself bounds resets before accept
//!   (`max_pending_accept_reset_streams`, 20) and the server's own resets (below);
//! - a client that floods PING or SETTINGS frames (CVE-2019-9512, CVE-2019-9515) gets
//!   GOAWAY(ENHANCE_YOUR_CALM) once it sent more than `h2::flood::CONTROL_CREDIT` of them beyond
//!   the HEADERS and DATA frames it sent (`h2::flood`, which counts the frames below h2).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use gatebench_h2io::H2Io;
use h2::server::SendResponse;
use h2::{Reason, SendStream};
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, DATE, TE};
use http::{HeaderMap, Request, Response};
use hyper::body::Body;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::debug;

use crate::protocol::body::{ClientBody, H2Recv, ResBody};
use crate::protocol::drain::draining;
use crate::protocol::h2::flood::FloodRead;
use crate::protocol::interim::H2Interim;
use crate::protocol::upgrade::TakeOver;
use crate::protocol::Answer;

/// hyper's HTTP/2 server defaults, kept so that moving off hyper changes no behaviour a client
/// can measure: 1 MiB stream and connection windows, 16 KiB frames, 400 KiB buffered per
/// stream, 16 KiB header lists, 1024 locally reset streams before GOAWAY (CVE-2023-44487).
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONN_WINDOW: u32 = 1024 * 1024;
const MAX_FRAME_SIZE: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 400 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;
const MAX_LOCAL_ERROR_RESETS: usize = 1024;
/// Streams a client may reset after they were accepted (each may have started an upstream
/// request) before its connection gets GOAWAY(ENHANCE_YOUR_CALM), unless it let more streams
/// finish than it reset: a browser cancelling now and then never reaches it, a rapid-reset
/// attack (CVE-2023-44487) costs at most this many upstream requests per connection.
pub(crate) const MAX_CLIENT_RESETS: usize = 50;
/// How long a connection being closed (idle, or too many resets) gets to flush its GOAWAY.
const CLOSE_LINGER: Duration = Duration::from_secs(1);
/// A connection with no open stream when the drain starts is closed after this if no stream
/// comes: long enough for a request already on its way (the graceful shutdown's GOAWAY and PING
/// round trip) to be taken and served.
const DRAIN_IDLE_GRACE: Duration = Duration::from_millis(500);

/// The timers of one HTTP/2 connection (docs/proxy.md, "Timers and limits").
#[derive(Debug, Clone, Copy)]
pub(crate) struct H2Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced.
    pub max_streams: u32,
    /// A connection with no open stream for this long (from its start, or since its last
    /// stream ended) gets GOAWAY and is closed.
    pub idle_timeout: Duration,
    /// Longest silence inside a request body (then 408, or RST_STREAM).
    pub body_timeout: Duration,
    /// Longest wait for the client to take response bytes (then RST_STREAM(CANCEL)).
    pub send_timeout: Duration,
}

/// What the streams of one connection report to it.
#[derive(Debug, Default)]
struct Counts {
    /// Streams open (their tasks still running).
    open: AtomicUsize,
    /// Streams the client reset before their response was complete.
    resets: AtomicUsize,
    /// Streams whose response was sent in full.
    finished: AtomicUsize,
}

/// One open stream, counted while its task lives; the connection is woken when the last ends.
struct OpenStream {
    counts: Arc<Counts>,
    idle: Arc<tokio::sync::Notify>,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        if self.counts.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle.notify_one();
        }
    }
}

/// A service that answers HTTP/2 requests served by this module.
pub(crate) trait H2Handler: Send + Sync + 'static {
    /// Answers `req`; interim responses go through `interim`.
    fn call_h2(&self, req: Request<ClientBody>, interim: H2Interim) -> Answer;

    /// Whether the service takes extended CONNECT (RFC 8441: SETTINGS_ENABLE_CONNECT_PROTOCOL
    /// is announced): such a request reaches [`H2Handler::call_h2`] with the `:protocol` in its
    /// extensions (`h2::ext::Protocol`) and no body, and a 101 answer carrying a
    /// `protocol::upgrade::TakeOver` is sent as a 200 whose stream the take-over then reads
    /// and writes.
    fn extended_connect(&self) -> bool {
        false
    }
}

/// Serves one HTTP/2 connection (after TLS with ALPN h2, or h2c by prior knowledge) until it
/// ends; once `drain` turns true, sends GOAWAY and lets the open streams finish.
pub(crate) async fn serve<T>(
    io: T,
    limits: H2Limits,
    handler: Arc<dyn H2Handler>,
    drain: &mut watch::Receiver<bool>,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (io, flooded) = FloodRead::new(io);
    let mut builder = h2::server::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .max_frame_size(MAX_FRAME_SIZE)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_concurrent_streams(limits.max_streams);
    if handler.extended_connect() {
        builder.enable_connect_protocol();
    }
    // The preface is part of the first idle period: a client that never sends it is closed
    // after the idle timeout like one that sends nothing after it.
    let idle_deadline = Instant::now() + limits.idle_timeout;
    let handshake = builder.handshake::<FloodRead<T>, Bytes>(io);
    let mut conn = tokio::select! {
        biased;
        () = flooded.wait() => {
            debug!("client flooded control frames before its handshake ended: closing");
            return;
        }
        conn = tokio::time::timeout_at(idle_deadline, handshake) => match conn {
            Ok(Ok(conn)) => conn,
            Ok(Err(error)) => {
                debug!(%error, "HTTP/2 handshake failed");
                return;
            }
            Err(_) => {
                debug!("no HTTP/2 preface within the idle timeout: closing");
                return;
            }
        },
        () = draining(drain) => return,
    };
    let counts = Arc::new(Counts::default());
    let idle = Arc::new(tokio::sync::Notify::new());
    let mut idle_since = Some(idle_deadline - limits.idle_timeout);
    let mut closing = false;
    // Draining a connection with no open stream: when to close it if none comes.
    let mut idle_close_at: Option<Instant> = None;
    loop {
        let next = if closing {
            tokio::select! {
                next = conn.accept() => next,
                () = sleep_until_some(idle_close_at) => {
                    // Idle since the drain began: nothing to finish, and a client that does not
                    // answer the shutdown's PING (or keeps its connection open) does not hold
                    // the drain.
                    close(&mut conn, Reason::NO_ERROR).await;
                    return;
                }
            }
        } else {
            let idle_at = idle_since.map(|since| since + limits.idle_timeout);
            tokio::select! {
                biased;
                () = flooded.wait() => {
                    debug!("client flooded control frames: GOAWAY");
                    close(&mut conn, Reason::ENHANCE_YOUR_CALM).await;
                    return;
                }
                next = conn.accept() => next,
                () = draining(drain) => {
                    // GOAWAY; accept keeps driving the connection until its streams end.
                    conn.graceful_shutdown();
                    closing = true;
                    if counts.open.load(Ordering::Acquire) == 0 {
                        idle_close_at = Some(Instant::now() + DRAIN_IDLE_GRACE);
                    }
                    continue;
                }
                () = idle.notified() => {
                    if counts.open.load(Ordering::Acquire) == 0 {
                        idle_since = Some(Instant::now());
                    }
                    continue;
                }
                () = sleep_until_some(idle_at) => {
                    if counts.open.load(Ordering::Acquire) == 0 {
                        debug!("HTTP/2 connection idle past the idle timeout: closing");
                        close(&mut conn, Reason::NO_ERROR).await;
                        return;
                    }
                    idle_since = None;
                    continue;
                }
            }
        };
        match next {
            Some(Ok((req, respond))) => {
                let resets = counts.resets.load(Ordering::Acquire);
                if resets > MAX_CLIENT_RESETS && resets > counts.finished.load(Ordering::Acquire) {
                    debug!(resets, "client keeps resetting accepted streams: GOAWAY");
                    drop((req, respond));
                    close(&mut conn, Reason::ENHANCE_YOUR_CALM).await;
                    return;
                }
                idle_since = None;
                // A stream taken while draining is finished, not cut.
                idle_close_at = None;
                counts.open.fetch_add(1, Ordering::AcqRel);
                let open = OpenStream {
                    counts: counts.clone(),
                    idle: idle.clone(),
                };
                tokio::spawn(stream(handler.clone(), req, respond, limits, open));
            }
            Some(Err(error)) => {
                // Clients that reset or vanish are ordinary under load: debug, not warn.
                debug!(%error, "HTTP/2 connection ended with an error");
                return;
            }
            None => return,
        }
    }
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends GOAWAY with `reason` and drives the connection a little longer so that it leaves
/// (a client that does not read gets [`CLOSE_LINGER`], no more); the socket closes on drop.
async fn close<T>(conn: &mut h2::server::Connection<T, Bytes>, reason: Reason)
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    conn.abrupt_shutdown(reason);
    let _ = tokio::time::timeout(CLOSE_LINGER, async {
        while let Some(Ok(_)) = conn.accept().await {}
    })
    .await;
}

/// What the stream's task waits for while the handler runs. Moved once out of a poll, never
/// stored: boxing the large variant would cost an allocation per request for nothing.
#[allow(clippy::large_enum_variant)]
enum Step {
    Interim(Response<()>),
    Final(Response<ResBody>),
    Reset(Reason),
}

/// One stream: runs the handler, sends its interim responses as they come, then the final one.
async fn stream(
    handler: Arc<dyn H2Handler>,
    req: Request<h2::RecvStream>,
    mut respond: SendResponse<Bytes>,
    limits: H2Limits,
    open: OpenStream,
) {
    let (mut parts, recv) = req.into_parts();
    if !request_ok(&mut parts) {
        let refused = Response::builder()
            .status(http::StatusCode::BAD_REQUEST)
            .header(DATE, http_date())
            .body(())
            .expect("a valid response head");
        let _ = respond.send_response(refused, true);
        return;
    }
    // An extended CONNECT's stream is the tunnel's, not a body for the handler.
    let tunnel = parts.method == http::Method::CONNECT
        && parts.extensions.get::<h2::ext::Protocol>().is_some();
    let (body, mut recv) = if tunnel {
        (ClientBody::Tunnel, Some(recv))
    } else {
        let length = content_length(&parts.headers);
        let body = H2Recv::new(recv, length).with_stall_timeout(limits.body_timeout);
        (ClientBody::H2(body), None)
    };
    let req = Request::from_parts(parts, body);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut answer = handler.call_h2(req, H2Interim::new(tx));
    let response = loop {
        let step = std::future::poll_fn(|cx| {
            // Interim responses first: every one queued before the final response goes out
            // before it.
            if let Poll::Ready(Some(interim)) = rx.poll_recv(cx) {
                return Poll::Ready(Step::Interim(interim));
            }
            if let Poll::Ready(response) = Pin::new(&mut answer).poll(cx) {
                return Poll::Ready(Step::Final(response));
            }
            // A client's RST_STREAM cancels the request: dropping the handler drops its
            // upstream exchange (an HTTP/1.1 upstream connection is then closed, not pooled).
            match respond.poll_reset(cx) {
                Poll::Ready(Ok(reason)) => Poll::Ready(Step::Reset(reason)),
                Poll::Ready(Err(_)) => Poll::Ready(Step::Reset(Reason::CANCEL)),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        match step {
            Step::Interim(interim) => send_interim(&mut respond, interim),
            Step::Final(response) => break response,
            Step::Reset(reason) => {
                debug!(?reason, "client reset the stream before the response");
                open.counts.resets.fetch_add(1, Ordering::AcqRel);
                return;
            }
        }
    };
    drop(answer);
    while let Ok(interim) = rx.try_recv() {
        send_interim(&mut respond, interim);
    }
    let mut response = response;
    if let (Some(recv), Some(start)) = (recv.take(), TakeOver::take(&mut response)) {
        // The extended CONNECT was taken: a 200 with the 101's fields (RFC 8441 §5), then the
        // stream is the take-over's.
        let (mut head, _) = response.into_parts();
        head.status = http::StatusCode::OK;
        strip_connection_fields(&mut head.headers);
        head.headers.remove(http::header::SEC_WEBSOCKET_ACCEPT);
        head.headers.entry(DATE).or_insert_with(http_date);
        match respond.send_response(Response::from_parts(head, ()), false) {
            Ok(send) => {
                start(Box::new(H2Io::new(send, recv)), bytes::BytesMut::new()).await;
                open.counts.finished.fetch_add(1, Ordering::AcqRel);
            }
            Err(error) => debug!(%error, "sending the tunnel's 200 failed"),
        }
        return;
    }
    let (mut head, body) = response.into_parts();
    strip_connection_fields(&mut head.headers);
    head.headers.entry(DATE).or_insert_with(http_date);
    if body.is_end_stream() {
        match respond.send_response(Response::from_parts(head, ()), true) {
            Ok(_) => {
                open.counts.finished.fetch_add(1, Ordering::AcqRel);
            }
            Err(error) => debug!(%error, "sending the response failed"),
        }
        return;
    }
    if let Some(len) = body.size_hint().exact() {
        head.headers
            .entry(CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(len));
    }
    match respond.send_response(Response::from_parts(head, ()), false) {
        Ok(send) => match pipe(body, send, limits.send_timeout).await {
            Piped::Done => {
                open.counts.finished.fetch_add(1, Ordering::AcqRel);
            }
            Piped::ClientReset => {
                open.counts.resets.fetch_add(1, Ordering::AcqRel);
            }
            Piped::Failed => {}
        },
        Err(error) => debug!(%error, "sending the response failed"),
    }
}

/// How a response body's piping ended.
enum Piped {
    /// Sent in full.
    Done,
    /// The client reset the stream.
    ClientReset,
    /// The body broke, or the client did not take it within the send timeout.
    Failed,
}

fn send_interim(respond: &mut SendResponse<Bytes>, mut interim: Response<()>) {
    strip_connection_fields(interim.headers_mut());
    if let Err(error) = respond.send_informational(interim) {
        debug!(%error, "sending an interim response failed");
    }
}

/// Writes `body` to the stream as the client's flow-control window allows. A body that fails
/// ends the stream with RST_STREAM INTERNAL_ERROR, as hyper did, so the client sees a broken
/// response rather than a short complete one; a client's reset drops the body (and with it an
/// HTTP/1.1 upstream connection, which is then closed); so does a client that takes no bytes
/// for `send_timeout`, whose stream is reset with CANCEL.
async fn pipe(mut body: ResBody, mut send: SendStream<Bytes>, send_timeout: Duration) -> Piped {
    loop {
        let frame = std::future::poll_fn(|cx| {
            if let Poll::Ready(reset) = send.poll_reset(cx) {
                return Poll::Ready(Err(reset.ok()));
            }
            Pin::new(&mut body).poll_frame(cx).map(Ok)
        })
        .await;
        let frame = match frame {
            Err(reason) => {
                debug!(?reason, "client reset the stream during the response body");
                return Piped::ClientReset;
            }
            Ok(None) => {
                let _ = send.send_data(Bytes::new(), true);
                return Piped::Done;
            }
            Ok(Some(Err(error))) => {
                debug!(%error, "response body broke off: resetting the stream");
                send.send_reset(Reason::INTERNAL_ERROR);
                return Piped::Failed;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        match frame.into_data() {
            Ok(data) => {
                let end = body.is_end_stream();
                match tokio::time::timeout(send_timeout, write_data(&mut send, data, end)).await {
                    Ok(Ok(())) if end => return Piped::Done,
                    Ok(Ok(())) => {}
                    Ok(Err(())) => return Piped::Failed,
                    Err(_) => {
                        debug!("client took no response bytes within the send timeout");
                        send.send_reset(Reason::CANCEL);
                        return Piped::Failed;
                    }
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    let _ = send.send_trailers(trailers);
                    return Piped::Done;
                }
            }
        }
    }
}

/// Sends `data` in pieces the window allows; `end` marks the last piece END_STREAM.
pub(crate) async fn write_data(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
) -> Result<(), ()> {
    if data.is_empty() {
        if end {
            send.send_data(data, true).map_err(|_| ())?;
        }
        return Ok(());
    }
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(0)) => continue,
            Some(Ok(n)) => {
                let piece = data.split_to(n.min(data.len()));
                send.send_data(piece, end && data.is_empty())
                    .map_err(|_| ())?;
            }
            // The stream was reset or the connection is gone.
            Some(Err(_)) | None => return Err(()),
        }
    }
    Ok(())
}

/// Checks what the h2 crate leaves to the server, as `h1::check` does for HTTP/1.1:
/// - `:authority` without userinfo (RFC 9113 §8.3.1: it "MUST NOT include the deprecated
///   userinfo subcomponent"), since it becomes an HTTP/1.1 upstream's Host;
/// - Content-Length repeated with one value is folded into one field (RFC 9110 §8.6 lets a
///   recipient do so), so an HTTP/1.1 upstream never sees two; different values make the
///   request malformed (h2 itself resets such a stream with PROTOCOL_ERROR before it is
///   accepted; refused here too, should that change).
fn request_ok(parts: &mut http::request::Parts) -> bool {
    if parts
        .uri
        .authority()
        .is_some_and(|authority| authority.as_str().contains('@'))
    {
        return false;
    }
    let mut values = parts.headers.get_all(CONTENT_LENGTH).iter();
    let Some(first) = values.next() else {
        return true;
    };
    let first = first.clone();
    let mut repeated = false;
    for value in values {
        if value != first {
            return false;
        }
        repeated = true;
    }
    if repeated {
        parts.headers.insert(CONTENT_LENGTH, first);
    }
    true
}

/// The request's declared length, when it declares one h2 accepted (h2 refuses a stream whose
/// DATA disagree with it: RFC 9113 §8.1.1).
pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// Removes what HTTP/2 forbids in a response (RFC 9113 §8.2.2): Connection and the fields it
/// names, the other connection-specific fields, and TE.
fn strip_connection_fields(headers: &mut HeaderMap) {
    if let Some(connection) = headers.remove(CONNECTION) {
        if let Ok(names) = connection.to_str() {
            for name in names.split(',') {
                if let Ok(name) = HeaderName::from_bytes(name.trim().as_bytes()) {
                    headers.remove(name);
                }
            }
        }
    }
    for name in [
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
    headers.remove(TE);
}

/// The current time as an IMF-fixdate (RFC 9110 §5.6.7), for the `Date` field (§6.6.1).
fn http_date() -> HeaderValue {
    HeaderValue::from_str(&httpdate::fmt_http_date(SystemTime::now()))
        .expect("an HTTP date is a valid header value")
}
