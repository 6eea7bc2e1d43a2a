//! HTTP/1.x client connections of every service (the echo and the intermediaries), served
//! without hyper: one task per connection reads each request head, checks it with `h1::check`'s
//! rules, hands the request to the service, and writes the response it gets back. The read
//! side, which the request's body shares, is `h1::conn`.
//!
//! Why not hyper's server, which served every service once: the intermediaries' request path had
//! every head parsed twice (`h1::check` before hyper, then hyper), interim responses smuggled
//! through the stream wrapper because hyper's server cannot send them, and each connection
//! holding hyper's two buffers (8 KiB to read, reallocated for every request because the
//! parsed header values still point into the old one, and 8 KiB to write). Here a connection
//! between requests holds no buffer at all: header values and body bytes are slices of the
//! bytes read, and the read buffer is let go once every byte of it is handed on.
//!
//! What it does, as hyper did for the intermediaries:
//! - keep-alive by RFC 9112 §9.3 (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
//!   `Connection: keep-alive`, answered with the same), pipelined requests answered in order;
//! - request bodies read as the intermediary asks for them: Content-Length, or the chunked
//!   coding decoded by `gatebench-h1` (trailers checked and dropped), with the body timeout
//!   between reads; `Expect: 100-continue` answered with `100 Continue` when the body is first
//!   read (RFC 9110 §10.1.1);
//! - responses framed by their Content-Length, by the body's exact size (added), or chunked
//!   (HTTP/1.1) or until close (HTTP/1.0) otherwise; none for HEAD, 204 and 304; `Date` added
//!   when missing; a body that breaks ends the connection before the message ends, so the
//!   client sees a truncated message, never a complete-looking one;
//! - interim (1xx) responses queued by the intermediary (`interim::Interim`) written before the
//!   final response of their request (RFC 9110 §15.2), never to an HTTP/1.0 client;
//! - a refused head (`h1::check`: 400, 408, 413, 414, 431, 501, 405 for CONNECT) answered by the
//!   intermediary's refusal and the connection closed with a linger; a client that goes away
//!   while its request is in flight cancels the request (the intermediary's future is dropped);
//! - idle keep-alive connections closed quietly after the idle timeout; once the drain starts,
//!   idle connections close and busy ones close after their response;
//! - a 101 response that carries a `protocol::upgrade::TakeOver` hands the connection to it once written.

use std::future::Future;
use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::{Buf, BytesMut};
use gatebench_h1::Chunked;
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use hyper::body::Body;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::debug;

use crate::protocol::body::{ClientBody, ResBody};
use crate::protocol::deadline::Deadline;
use crate::protocol::drain::draining;
use crate::protocol::h1::check::{self as h1check, Framing, H1Limits, HeadScan, LINGER};
use crate::protocol::h1::client::RawHead;
use crate::protocol::h1::conn::{lock, BodyState, Conn, H1Recv, Io, Shared, CONTINUE};
use crate::protocol::interim::Interim;
use crate::protocol::scratch::Scratch;
use crate::protocol::upgrade::TakeOver;
use crate::protocol::Answer;

/// Most of an unread request body read and dropped to keep its connection (hyper drains
/// without a limit; nginx discards whole bodies too).
const DISCARD_MAX: u64 = 256 * 1024;
/// A body piece up to this size is copied behind the response head so both leave in one write.
const COALESCE: usize = 16 * 1024;
/// A response buffer that grew past this is not kept for the next response.
const KEEP_OUT: usize = 4096;

thread_local! {
    /// The thread's spare response buffer ([`Scratch`]): a connection between responses holds
    /// none, and a response written without waiting (the usual case) reuses this one; one that
    /// had to wait keeps its own until it is done.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A service whose HTTP/1.x connections this module serves.
pub(crate) trait H1Handler: Send + Sync + 'static {
    /// Answers `req`; interim responses go through `interim` (`None` for HTTP/1.0 clients).
    fn call_h1(&self, req: Request<ClientBody>, interim: Option<Interim>) -> Answer;
    /// The answer to a head `h1::check` refused with `status`; the connection closes after it.
    fn refuse(&self, status: StatusCode) -> Response<ResBody>;
}

/// A request head as parsed: positions are offsets into the head's bytes.
struct Parsed {
    method: Method,
    target: (usize, usize),
    http10: bool,
    fields: Vec<(HeaderName, usize, usize)>,
}

/// What the wait for the next request head ended with (once per request, taken apart at
/// once: the size of the request variant costs nothing).
#[allow(clippy::large_enum_variant)]
enum Next {
    Request(Request<ClientBody>, Exchange),
    /// Answer the refusal for this status, then close.
    Refuse(StatusCode),
    /// Close quietly: idle timeout, the client closed, the drain started.
    Close,
}

/// What the connection needs to know about the request in flight to frame its response.
#[derive(Clone, Copy)]
struct Exchange {
    http10: bool,
    head: bool,
    /// The client asked for the connection to close (or, in HTTP/1.0, did not ask to keep it).
    close: bool,
}

/// Serves one HTTP/1.x connection until it closes; once `drain` turns true, idle connections
/// close at once and busy ones after their response.
pub(crate) async fn serve<S>(
    io: S,
    limits: Arc<H1Limits>,
    idle_timeout: Duration,
    handler: Arc<dyn H1Handler>,
    drain: &mut watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let graceful = AtomicBool::new(false);
    let serving = serve_loop(Box::new(io), &limits, idle_timeout, &*handler, &graceful);
    tokio::pin!(serving);
    tokio::select! {
        biased;
        () = &mut serving => return,
        () = draining(drain) => {}
    }
    graceful.store(true, Ordering::Relaxed);
    serving.await;
}

async fn serve_loop(
    io: Box<dyn Io>,
    limits: &H1Limits,
    idle_timeout: Duration,
    handler: &dyn H1Handler,
    graceful: &AtomicBool,
) {
    let conn: Shared = Arc::new(Mutex::new(Conn {
        io,
        buf: BytesMut::new(),
        body: BodyState::Done,
        continue_left: 0,
        body_timeout: limits.body_timeout,
        send_timeout: limits.send_timeout,
        stall: Deadline::default(),
    }));
    let interim = Interim::default();
    let mut timer = Deadline::default();
    loop {
        let next = next_request(&conn, limits, idle_timeout, graceful, &mut timer).await;
        let (req, exchange) = match next {
            Next::Request(req, exchange) => (req, exchange),
            Next::Close => break,
            Next::Refuse(status) => {
                let response = handler.refuse(status);
                let request = Exchange {
                    http10: false,
                    head: false,
                    close: true,
                };
                let _ = write_response(&conn, response, request, true).await;
                linger(&conn).await;
                break;
            }
        };
        let to_interim = (!exchange.http10).then(|| interim.clone());
        let Some(mut response) =
            run(&conn, handler.call_h1(req, to_interim), &interim, limits).await
        else {
            debug!("client closed the connection while its request was in flight");
            break;
        };
        if let Some(start) = TakeOver::take(&mut response) {
            // A 101 with a new owner: written, then the connection and what was read past the
            // request are the owner's; nothing more is served here.
            if write_response(&conn, response, exchange, false)
                .await
                .is_ok()
            {
                let (io, rest) = {
                    let mut c = lock(&conn);
                    let io = std::mem::replace(&mut c.io, Box::new(tokio::io::empty()));
                    (io, std::mem::take(&mut c.buf))
                };
                interim.close();
                start(io, rest).await;
            }
            return;
        }
        let close = exchange.close || graceful.load(Ordering::Relaxed);
        match write_response(&conn, response, exchange, close).await {
            Ok(true) if lock(&conn).body == BodyState::Done => {}
            Ok(true) => {
                // Answered before the body was read (an upstream error, say): the rest of the
                // body is read and dropped to keep the connection, as hyper and nginx do, up
                // to a limit.
                if !discard(&conn).await {
                    linger(&conn).await;
                    break;
                }
            }
            Ok(false) => {
                // Closing with the request body unread: linger so the close does not reset
                // the answer away.
                if lock(&conn).body != BodyState::Done {
                    linger(&conn).await;
                }
                break;
            }
            Err(error) => {
                debug!(%error, "response to the client ended early");
                break;
            }
        }
    }
    interim.close();
    // The write side closes in order (TLS: close_notify), within the linger at most.
    let shutdown = std::future::poll_fn(|cx| Pin::new(&mut lock(&conn).io).poll_shutdown(cx));
    let _ = tokio::time::timeout(LINGER, shutdown).await;
}

/// Reads and drops the rest of a request body the answer did not need; false when the
/// connection cannot go on: the body is larger than [`DISCARD_MAX`], broken, stalled, or its
/// client still waits for `100 Continue` (RFC 9110 §10.1.1: it may never send the body).
async fn discard(conn: &Shared) -> bool {
    let mut dropped = 0u64;
    std::future::poll_fn(|cx| {
        let mut c = lock(conn);
        if c.continue_left > 0 {
            c.continue_left = 0;
            return Poll::Ready(false);
        }
        loop {
            match ready!(c.poll_body(cx)) {
                None => return Poll::Ready(true),
                Some(Ok(frame)) => {
                    dropped += frame.data_ref().map_or(0, |d| d.len() as u64);
                    if dropped > DISCARD_MAX {
                        return Poll::Ready(false);
                    }
                }
                Some(Err(_)) => return Poll::Ready(false),
            }
        }
    })
    .await
}

/// Waits for the next request head and builds the request from it.
async fn next_request(
    conn: &Shared,
    limits: &H1Limits,
    idle_timeout: Duration,
    graceful: &AtomicBool,
    timer: &mut Deadline,
) -> Next {
    let waiting_since = Instant::now();
    let mut first = true;
    let mut head_started: Option<Instant> = None;
    // Parsed when it can be decided, not on every read (linear for a trickled head).
    let mut scan = HeadScan::default();
    std::future::poll_fn(|cx| {
        let mut c = lock(conn);
        if std::mem::take(&mut first) {
            c.release();
        }
        loop {
            if c.buf.is_empty() {
                if graceful.load(Ordering::Relaxed) {
                    return Poll::Ready(Next::Close);
                }
            } else {
                let started = *head_started.get_or_insert_with(Instant::now);
                if scan.due(&c.buf, limits) {
                    match parse(conn, &mut c, limits) {
                        Ok(Some(next)) => return Poll::Ready(next),
                        Ok(None) => {}
                        Err(status) => return Poll::Ready(Next::Refuse(status)),
                    }
                }
                // A client that trickles a head fast enough never to leave the socket empty.
                if started.elapsed() >= limits.head_timeout {
                    return Poll::Ready(overdue(conn, &mut c, limits));
                }
            }
            match c.poll_fill(cx) {
                // A partial head at the end is dropped: a quiet close. It is parsed once more
                // first: read whole, it would have been, and refused if the parse refuses it.
                Poll::Ready(Ok(0)) if !c.buf.is_empty() => {
                    return Poll::Ready(match parse(conn, &mut c, limits) {
                        Ok(Some(next)) => next,
                        Ok(None) => Next::Close,
                        Err(status) => Next::Refuse(status),
                    })
                }
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Poll::Ready(Next::Close),
                Poll::Ready(Ok(_)) => continue,
                Poll::Pending => {}
            }
            let deadline = match head_started {
                Some(started) => started + limits.head_timeout,
                None => waiting_since + idle_timeout,
            };
            if !timer.expired_at(cx, deadline) {
                return Poll::Pending;
            }
            return Poll::Ready(match head_started {
                Some(_) => overdue(conn, &mut c, limits),
                // Idle past the keep-alive timeout: closed quietly.
                None => Next::Close,
            });
        }
    })
    .await
}

/// A head past its deadline, parsed once more: refused with what the parse refuses it with
/// (as a parse on each read would have, earlier), else 408.
fn overdue(conn: &Shared, c: &mut Conn, limits: &H1Limits) -> Next {
    match parse(conn, c, limits) {
        Ok(Some(next)) => next,
        Ok(None) => Next::Refuse(StatusCode::REQUEST_TIMEOUT),
        Err(status) => Next::Refuse(status),
    }
}

/// Parses the head at the front of the buffer: the request (its body reads from `conn` later),
/// `None` when the head is not complete yet, the status when it is refused.
fn parse(conn: &Shared, c: &mut Conn, limits: &H1Limits) -> Result<Option<Next>, StatusCode> {
    let parsed = h1check::parse_head(&c.buf, limits, |req, base| {
        let offset = |s: &str| s.as_ptr() as usize - base;
        let method = Method::from_bytes(req.method.unwrap_or_default().as_bytes());
        let target = req.path.unwrap_or_default();
        let mut fields = Vec::with_capacity(req.headers.len());
        for header in req.headers.iter() {
            let name = HeaderName::from_bytes(header.name.as_bytes()).ok()?;
            let start = header.value.as_ptr() as usize - base;
            fields.push((name, start, start + header.value.len()));
        }
        Some(Parsed {
            method: method.ok()?,
            target: (offset(target), offset(target) + target.len()),
            http10: req.version == Some(0),
            fields,
        })
    })?;
    let Some((len, framing, parsed)) = parsed else {
        return Ok(None);
    };
    let parsed = parsed.ok_or(StatusCode::BAD_REQUEST)?;
    let head = c.buf.split_to(len).freeze();
    let uri = Uri::from_maybe_shared(head.slice(parsed.target.0..parsed.target.1))
        .map_err(|_| StatusCode::BAD_REQUEST)?;
    // Room for the fields an intermediary adds (Via, X-Forwarded-For) without growing the map.
    let mut headers = HeaderMap::with_capacity(parsed.fields.len() + 2);
    let (mut close, mut keep_alive, mut expect_continue) = (false, false, false);
    for (name, start, end) in parsed.fields {
        let value = HeaderValue::from_maybe_shared(head.slice(start..end))
            .map_err(|_| StatusCode::BAD_REQUEST)?;
        if name == CONNECTION {
            for token in value.as_bytes().split(|&b| b == b',') {
                let token = gatebench_h1::trim_ows(token);
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name == http::header::EXPECT {
            expect_continue |= value.as_bytes().eq_ignore_ascii_case(b"100-continue");
        }
        headers.append(name, value);
    }
    c.body = match framing {
        Framing::None | Framing::Length(0) => BodyState::Done,
        Framing::Length(n) => BodyState::Length(n),
        // Trailer sections are limited like heads.
        Framing::Chunked => BodyState::Chunked(Chunked::new(limits.max_head)),
    };
    c.continue_left = if expect_continue && !parsed.http10 && c.body != BodyState::Done {
        CONTINUE.len()
    } else {
        0
    };
    c.stall.disarm();
    let exchange = Exchange {
        http10: parsed.http10,
        head: parsed.method == Method::HEAD,
        close: close || (parsed.http10 && !keep_alive),
    };
    let mut req = Request::new(ClientBody::H1(H1Recv(Arc::clone(conn))));
    *req.method_mut() = parsed.method;
    *req.uri_mut() = uri;
    *req.version_mut() = if parsed.http10 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    *req.headers_mut() = headers;
    Ok(Some(Next::Request(req, exchange)))
}

/// Runs the intermediary's future for one request, writing the interim responses it queues;
/// `None` when the client closed the connection meanwhile (the future is dropped, which
/// cancels the request upstream).
async fn run(
    conn: &Shared,
    mut answer: Answer,
    interim: &Interim,
    limits: &H1Limits,
) -> Option<Response<ResBody>> {
    let mut pending = BytesMut::new();
    let mut taken = 0u64;
    std::future::poll_fn(|cx| loop {
        if let Poll::Ready(response) = Pin::new(&mut answer).poll(cx) {
            return Poll::Ready(Some(response));
        }
        let mut c = lock(conn);
        if pending.is_empty() {
            if let Some(queued) = interim.take(cx.waker()) {
                taken = queued.len() as u64;
                pending = queued;
            }
        }
        if !pending.is_empty() {
            match write_some(&mut c, cx, &mut pending) {
                Poll::Ready(Ok(())) => {
                    interim.written(std::mem::take(&mut taken));
                    // The handler waits for this; poll it again.
                    continue;
                }
                Poll::Ready(Err(_)) => return Poll::Ready(None),
                Poll::Pending => {}
            }
        }
        // Once the body is read, watch the connection: bytes are the next pipelined request
        // (kept, up to a head's worth), the end means the client left. The read goes to a
        // small buffer first, so that a connection waiting for its answer holds none.
        while c.body == BodyState::Done && c.buf.len() < limits.max_head {
            let mut small = [MaybeUninit::<u8>::uninit(); 512];
            let mut read = ReadBuf::uninit(&mut small);
            match Pin::new(&mut c.io).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => return Poll::Ready(None),
                Poll::Ready(Ok(())) => c.buf.extend_from_slice(read.filled()),
                Poll::Ready(Err(_)) => return Poll::Ready(None),
                Poll::Pending => break,
            }
        }
        return Poll::Pending;
    })
    .await
}

/// Writes all of `bytes` (advancing it), then flushes.
fn write_some(c: &mut Conn, cx: &mut Context<'_>, bytes: &mut BytesMut) -> Poll<io::Result<()>> {
    while !bytes.is_empty() {
        let n = ready!(Pin::new(&mut c.io).poll_write(cx, bytes))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        bytes.advance(n);
    }
    Pin::new(&mut c.io).poll_flush(cx)
}

/// How a response body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framed {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Writes the response; `Ok(true)` when the connection can serve another request.
async fn write_response(
    conn: &Shared,
    response: Response<ResBody>,
    exchange: Exchange,
    mut close: bool,
) -> io::Result<bool> {
    let mut out = Scratch::take(&SPARE, 1024, KEEP_OUT);
    let out = &mut *out;
    let (parts, mut body) = response.into_parts();
    let raw = match &mut body {
        ResBody::H1(upstream) => upstream.take_raw_head(),
        _ => None,
    };
    let framed = match raw {
        Some(raw) => {
            let framed = raw_head(out, parts.status, &raw, &body, exchange, &mut close);
            // Nothing of it (or of the head) is held across the body's writes.
            drop(parts);
            framed
        }
        None => map_head(out, parts, &body, exchange, &mut close),
    };
    if framed == Framed::None {
        drop(body);
        write_all(conn, &[out]).await?;
        return Ok(!close);
    }
    // The head waits in `out` to leave with the first piece of the body when that is ready at
    // once; a small piece is copied behind it, so the response leaves in one `send` rather
    // than a `writev` of two pieces. `out` holds only bytes not yet written.
    let mut sent = 0u64;
    loop {
        let frame = if out.is_empty() {
            std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        } else {
            match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
                Poll::Ready(frame) => frame,
                Poll::Pending => {
                    write_all(conn, &[out]).await?;
                    out.clear();
                    continue;
                }
            }
        };
        let data = match frame {
            None => break,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                // Trailers are not forwarded.
                Err(_) => continue,
            },
            Some(Err(error)) => {
                // Cut the message short: the client must not take it for complete.
                debug!(%error, "response body broke: closing the client connection");
                write_all(conn, &[out]).await?;
                return Ok(false);
            }
        };
        if data.is_empty() {
            continue;
        }
        sent += data.len() as u64;
        let small = data.len() <= COALESCE;
        match framed {
            Framed::Length(n) if sent > n => {
                debug!(
                    declared = n,
                    sent, "response body longer than its Content-Length"
                );
                write_all(conn, &[out]).await?;
                return Ok(false);
            }
            Framed::Chunked => {
                let size = format!("{:x}\r\n", data.len());
                if small {
                    out.extend_from_slice(size.as_bytes());
                    out.extend_from_slice(&data);
                    out.extend_from_slice(b"\r\n");
                    write_all(conn, &[out]).await?;
                } else {
                    write_all(conn, &[out, size.as_bytes(), &data, b"\r\n"]).await?;
                }
            }
            _ if small => {
                out.extend_from_slice(&data);
                write_all(conn, &[out]).await?;
            }
            _ => write_all(conn, &[out, &data]).await?,
        }
        out.clear();
    }
    match framed {
        Framed::Chunked => {
            out.extend_from_slice(b"0\r\n\r\n");
            write_all(conn, &[out]).await?;
        }
        Framed::Length(n) if sent < n => {
            debug!(
                declared = n,
                sent, "response body shorter than its Content-Length"
            );
            write_all(conn, &[out]).await?;
            return Ok(false);
        }
        _ => write_all(conn, &[out]).await?,
    }
    Ok(!close && framed != Framed::UntilClose)
}

/// How the body of a response goes: `declared`, its Content-Length; `None` when it has none.
/// Returns the framing and the framing field to add, if any; `close` turns true for a body
/// delimited by the close.
fn framing_of(
    status: StatusCode,
    declared: Option<u64>,
    body: &ResBody,
    exchange: Exchange,
    close: &mut bool,
) -> (Framed, Option<(HeaderName, HeaderValue)>) {
    let status = status.as_u16();
    if exchange.head || status == 204 || status == 304 || status < 200 {
        (Framed::None, None)
    } else if let Some(n) = declared {
        (Framed::Length(n), None)
    } else if let Some(n) = body.size_hint().exact() {
        (
            Framed::Length(n),
            Some((CONTENT_LENGTH, HeaderValue::from(n))),
        )
    } else if !exchange.http10 {
        (
            Framed::Chunked,
            Some((TRANSFER_ENCODING, HeaderValue::from_static("chunked"))),
        )
    } else {
        *close = true;
        (Framed::UntilClose, None)
    }
}

/// The Connection field the response needs, if any.
fn connection_of(close: bool, exchange: Exchange) -> Option<HeaderValue> {
    if close {
        Some(HeaderValue::from_static("close"))
    } else if exchange.http10 {
        Some(HeaderValue::from_static("keep-alive"))
    } else {
        None
    }
}

fn status_line(out: &mut Vec<u8>, status: StatusCode) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn field_line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Writes the head of a response whose fields are in its header map; returns its framing.
fn map_head(
    out: &mut Vec<u8>,
    mut parts: http::response::Parts,
    body: &ResBody,
    exchange: Exchange,
    close: &mut bool,
) -> Framed {
    *close |= parts
        .headers
        .get(CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    parts.headers.remove(TRANSFER_ENCODING);
    let (framed, field) = framing_of(parts.status, declared, body, exchange, close);
    if let Some((name, value)) = field {
        parts.headers.insert(name, value);
    }
    if let Some(value) = connection_of(*close, exchange) {
        parts.headers.insert(CONNECTION, value);
    }
    if !parts.headers.contains_key(DATE) {
        parts.headers.insert(DATE, http_date());
    }
    status_line(out, parts.status);
    for (name, value) in &parts.headers {
        field_line(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    framed
}

/// Writes the head of a response an HTTP/1.1 upstream sent, from its bytes as read: the
/// upstream's end-to-end field lines in its order (names lower-cased), this proxy's Via, then
/// what [`map_head`] would add: the same head the header map gave, without building one
/// (fields of one name were grouped there; RFC 9110 §5.3 gives their relative order only
/// meaning among themselves, which both keep). Returns its framing.
fn raw_head(
    out: &mut Vec<u8>,
    status: StatusCode,
    raw: &RawHead,
    body: &ResBody,
    exchange: Exchange,
    close: &mut bool,
) -> Framed {
    status_line(out, status);
    let mut declared = None;
    let mut date = false;
    for (name, value) in raw.fields() {
        if declared.is_none() && name.eq_ignore_ascii_case(b"content-length") {
            declared = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
        date |= name.eq_ignore_ascii_case(b"date");
        let at = out.len();
        field_line(out, name, value);
        out[at..at + name.len()].make_ascii_lowercase();
    }
    if let Some(via) = &raw.via {
        field_line(out, b"via", via.as_bytes());
    }
    let (framed, field) = framing_of(status, declared, body, exchange, close);
    if let Some((name, value)) = field {
        field_line(out, name.as_str().as_bytes(), value.as_bytes());
    }
    if let Some(value) = connection_of(*close, exchange) {
        field_line(out, b"connection", value.as_bytes());
    }
    if !date {
        field_line(out, b"date", http_date().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    framed
}

/// Writes every byte of `pieces` in order (vectored when there are several), then flushes;
/// fails with `TimedOut` when the client takes none of it within the send timeout (nginx
/// `send_timeout`: a client that stops reading is cut, and the response's upstream connection
/// with it). The timer, and the clock read that sets it, come only when a write has to wait:
/// the first try has none.
async fn write_all(conn: &Shared, pieces: &[&[u8]]) -> io::Result<()> {
    let mut done = 0usize;
    let first =
        std::future::poll_fn(|cx| Poll::Ready(poll_write_all(conn, cx, pieces, &mut done))).await;
    if let Poll::Ready(result) = first {
        return result;
    }
    let send_timeout = lock(conn).send_timeout;
    let rest = std::future::poll_fn(|cx| poll_write_all(conn, cx, pieces, &mut done));
    match tokio::time::timeout(send_timeout, rest).await {
        Ok(done) => done,
        Err(_) => {
            debug!("client took no response bytes within the send timeout");
            Err(io::ErrorKind::TimedOut.into())
        }
    }
}

/// Writes what is left of `pieces` after the first `done` bytes, then flushes.
fn poll_write_all(
    conn: &Shared,
    cx: &mut Context<'_>,
    pieces: &[&[u8]],
    done: &mut usize,
) -> Poll<io::Result<()>> {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut c = lock(conn);
    while *done < total {
        let mut slices = [IoSlice::new(&[]); 4];
        let mut count = 0;
        let mut skip = *done;
        for piece in pieces {
            if skip >= piece.len() {
                skip -= piece.len();
                continue;
            }
            if count < slices.len() {
                slices[count] = IoSlice::new(&piece[skip..]);
                count += 1;
            }
            skip = 0;
        }
        let n = if count == 1 {
            ready!(Pin::new(&mut c.io).poll_write(cx, &slices[0]))?
        } else {
            ready!(Pin::new(&mut c.io).poll_write_vectored(cx, &slices[..count]))?
        };
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        *done += n;
    }
    Pin::new(&mut c.io).poll_flush(cx)
}

/// Closes with a linger: the write side first, then what the client still sends is read and
/// dropped for up to [`LINGER`], so the close does not become a reset that destroys the answer
/// in the client's receive buffer before it is read.
async fn linger(conn: &Shared) {
    // On the heap: in the connection's future, it would cost every connection 4 KiB.
    let mut sink = vec![0u8; 4096];
    let lingering = async {
        std::future::poll_fn(|cx| Pin::new(&mut lock(conn).io).poll_shutdown(cx)).await?;
        loop {
            let n = std::future::poll_fn(|cx| {
                let mut c = lock(conn);
                let mut read = ReadBuf::new(&mut sink);
                ready!(Pin::new(&mut c.io).poll_read(cx, &mut read))?;
                Poll::Ready(Ok::<usize, io::Error>(read.filled().len()))
            })
            .await?;
            if n == 0 {
                return Ok::<(), io::Error>(());
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, lingering).await;
    lock(conn).release();
}

/// The current time as an IMF-fixdate (RFC 9110 §5.6.7), formatted once per second per
/// thread.
fn http_date() -> HeaderValue {
    thread_local! {
        static CACHED: std::cell::RefCell<(u64, Option<HeaderValue>)> =
            const { std::cell::RefCell::new((0, None)) };
    }
    let now = SystemTime::now();
    let second = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != second || cached.1.is_none() {
            let value = HeaderValue::from_str(&httpdate::fmt_http_date(now))
                .expect("an HTTP date is a valid header value");
            *cached = (second, Some(value));
        }
        cached.1.clone().expect("set above")
    })
}
