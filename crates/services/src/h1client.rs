//! A lean HTTP/1.1 client for upstream connections, driven inside the request's own task.
//!
//! hyper's client runs every connection as a task of its own and talks to it through channels
//! (request in, response head out, body chunks out): three hand-offs and a second task wake-up
//! per exchange, and 16 KiB of buffers held by every idle pooled connection. Profiles of the
//! proxy put that machinery at about a quarter of its user-space time. Here the exchange is a
//! plain future in the request's task: the head and the first body chunk leave in one
//! `writev`, the response head is read into a buffer allocated for the exchange, and the body
//! is read by [`H1Body`], which hyper's server polls directly — the upstream socket wakes the
//! client connection's task, nobody else. An idle pooled connection is just its socket.
//!
//! It is strict the way BEHAVIOUR.md wants an intermediary to be about what comes back:
//! responses are parsed with httparse without its leniencies, bare LF line ends are refused, a
//! head over the limit, ambiguous framing (Content-Length with Transfer-Encoding, repeated
//! Content-Length, a coding other than one `chunked`) or a 101 is a protocol error (502), chunk
//! sizes are strict hex with overflow checks (RFC 9112 §7.1), and a connection is reused only
//! after a complete HTTP/1.1 keep-alive response with nothing left over. 1xx interim responses
//! (100 Continue, 103 Early Hints, …) are handed, stripped of hop-by-hop fields and with Via
//! added, to the client's connection when the client speaks HTTP/1.1 or HTTP/2 ([`InterimSink`]),
//! and dropped otherwise (HTTP/1.0). Trailers of chunked responses are checked and dropped.
//!
//! What it does not do: pipelining (one exchange at a time per connection), request trailers,
//! `Expect: 100-continue` towards the upstream (the proxy removes Expect).

use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{
    HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TE, TRANSFER_ENCODING, UPGRADE,
};
use http::{HeaderMap, Method, Response, StatusCode, Version};
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use crate::failure::{log_failure, BodyError, Failure};
use crate::h1check::{chunk_size, crlf_only, MAX_HEADERS};
use crate::interim::{InterimSink, InterimTarget};
use crate::upstream::{H1Conn, Pool};

#[cfg(feature = "fuzzing")]
pub(crate) mod fuzz;

/// First allocation for a response (head and, usually, the whole body of a small one).
const READ_CHUNK: usize = 4096;
/// Reads of large bodies go up to this much at a time.
const READ_MAX: usize = 64 * 1024;
/// Largest trailer section of a chunked response.
const MAX_TRAILERS: usize = 16 * 1024;

/// The parts of a request the exchange writes.
#[derive(Debug)]
pub(crate) struct RequestHead<'a> {
    pub method: &'a Method,
    /// Origin-form (or `*`) request target.
    pub target: &'a str,
    pub headers: &'a HeaderMap,
}

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum H1Error {
    /// The first write failed: not a byte reached the upstream; the request may go elsewhere
    /// whatever its method. The first body chunk, if one was taken, is in the stash.
    Unsent(io::Error),
    /// The client's side failed (body over the limit, broken or stalled).
    Downstream(Failure, String),
    /// The upstream failed after the request (or part of it) was written.
    Upstream {
        failure: Failure,
        error: String,
        /// No response byte had arrived (the classic stale keep-alive race).
        nothing_received: bool,
    },
}

/// Limits and timeouts of one exchange.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExchangeLimits {
    pub response_timeout: Duration,
    pub read_timeout: Duration,
    pub max_head: usize,
}

/// Where a finished connection goes back to.
#[derive(Debug, Clone)]
pub(crate) struct Home {
    pub pool: Arc<Pool>,
    pub shard: usize,
    pub label: Arc<str>,
}

/// Sends `head` and `body` on `conn` and reads the response head. `stash` holds a body chunk
/// taken from `body` but not yet written (a retry after [`H1Error::Unsent`] sends it first).
/// `body` is the proxy's request body (`proxy::body::UpBody`): any body whose errors are
/// [`BodyError`]s.
pub(crate) async fn exchange<B>(
    mut conn: H1Conn,
    head: RequestHead<'_>,
    body: &mut B,
    stash: &mut Option<Bytes>,
    limits: ExchangeLimits,
    home: Home,
    interim: Option<InterimSink<'_>>,
) -> Result<(http::response::Parts, H1Body), H1Error>
where
    B: Body<Data = Bytes, Error = BodyError> + Unpin,
{
    let mut out = Vec::with_capacity(256);
    let framing = write_head(&mut out, &head, body, stash.as_ref());
    // The first chunk rides with the head when the client already sent it (nearly always).
    if stash.is_none() {
        match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await {
            Poll::Ready(Some(Ok(frame))) => *stash = frame.into_data().ok(),
            Poll::Ready(Some(Err(e))) => return Err(downstream(e)),
            Poll::Ready(None) | Poll::Pending => {}
        }
    }
    let ended = body.is_end_stream();
    let mut sent = 0u64;
    {
        let first = stash.as_deref().unwrap_or_default();
        sent += first.len() as u64;
        let mut size_line = [0u8; 20];
        let parts: [&[u8]; 4] = match framing {
            BodyFraming::Chunked if !first.is_empty() => [
                &out,
                chunk_line(&mut size_line, first.len()),
                first,
                if ended { b"\r\n0\r\n\r\n" } else { b"\r\n" },
            ],
            BodyFraming::Chunked if ended => [&out, b"0\r\n\r\n", &[], &[]],
            _ => [&out, first, &[], &[]],
        };
        if let Err(e) = conn.write_all(&parts, limits.read_timeout).await {
            return Err(H1Error::Unsent(e));
        }
    }
    *stash = None;
    let mut terminated = ended;
    // The rest of the body, as the client sends it.
    if !ended {
        loop {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
            let data = match frame {
                None => break,
                Some(Err(e)) => return Err(downstream(e)),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers are not forwarded
                },
            };
            sent += data.len() as u64;
            let last = body.is_end_stream();
            let mut size_line = [0u8; 20];
            let parts: [&[u8]; 3] = match framing {
                BodyFraming::Chunked if data.is_empty() && last => [b"0\r\n\r\n", &[], &[]],
                BodyFraming::Chunked if data.is_empty() => [&[], &[], &[]],
                BodyFraming::Chunked => [
                    chunk_line(&mut size_line, data.len()),
                    &data,
                    if last { b"\r\n0\r\n\r\n" } else { b"\r\n" },
                ],
                _ => [&data, &[], &[]],
            };
            if let Err(error) = conn.write_all(&parts, limits.read_timeout).await {
                // Boxed: rare, and its future would otherwise enlarge every exchange's.
                return Box::pin(early_answer(conn, error, &head, limits, home)).await;
            }
            if last {
                terminated = true;
                break;
            }
        }
        if framing == BodyFraming::Chunked && !terminated {
            // The stream ended without saying so in advance: close the chunked body now.
            conn.write_all(&[b"0\r\n\r\n"], limits.read_timeout)
                .await
                .map_err(upstream_write)?;
        }
    }
    if let BodyFraming::Length(n) = framing {
        if sent != n {
            return Err(H1Error::Downstream(
                Failure::RequestBodyInvalid,
                format!("request body has {sent} bytes, Content-Length says {n}"),
            ));
        }
    }
    conn.io.flush().await.map_err(upstream_write)?;
    // The response timeout counts from here: a slow upload is the client body timeout's.
    conn.arm(limits.response_timeout);
    let response = tokio::select! {
        biased;
        response = read_head(&mut conn.io, limits.max_head, interim) => response?,
        () = conn.timer.as_mut() => {
            return Err(H1Error::Upstream {
                failure: Failure::ResponseTimeout,
                error: format!("no response head within {:?}", limits.response_timeout),
                nothing_received: false,
            })
        }
    };
    let head_request = *head.method == Method::HEAD;
    H1Body::new(conn, response, head_request, true, limits, home)
}

/// A body write failed: the upstream may have answered early (a 413, say) and stopped reading.
/// If its answer is there, it is the response (and the connection is not reused); otherwise the
/// write error stands.
async fn early_answer(
    mut conn: H1Conn,
    error: io::Error,
    head: &RequestHead<'_>,
    limits: ExchangeLimits,
    home: Home,
) -> Result<(http::response::Parts, H1Body), H1Error> {
    conn.arm(limits.response_timeout.min(Duration::from_secs(1)));
    let response = tokio::select! {
        biased;
        response = read_head(&mut conn.io, limits.max_head, None) => response,
        () = conn.timer.as_mut() => return Err(upstream_write(error)),
    };
    match response {
        Ok(response) => {
            // The request was cut short: whatever the response says, the connection is done.
            let head_request = *head.method == Method::HEAD;
            H1Body::new(conn, response, head_request, false, limits, home)
        }
        Err(_) => Err(upstream_write(error)),
    }
}

fn downstream(error: BodyError) -> H1Error {
    H1Error::Downstream(error.downstream_failure(), error.to_string())
}

fn upstream_write(error: io::Error) -> H1Error {
    H1Error::Upstream {
        failure: if error.kind() == io::ErrorKind::TimedOut {
            Failure::ResponseTimeout
        } else {
            Failure::UpstreamClosed
        },
        error: error.to_string(),
        nothing_received: true,
    }
}

/// How the request body is framed upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyFraming {
    None,
    Length(u64),
    Chunked,
}

/// Serializes the request line and fields, adding the framing field the body needs.
fn write_head(
    out: &mut Vec<u8>,
    head: &RequestHead<'_>,
    body: &impl Body,
    stash: Option<&Bytes>,
) -> BodyFraming {
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(head.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut length = None;
    for (name, value) in head.headers {
        if name == CONTENT_LENGTH {
            length = std::str::from_utf8(value.as_bytes())
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let framing = match length {
        Some(n) => BodyFraming::Length(n),
        None => match body.size_hint().exact() {
            Some(0) if stash.is_none() => {
                if matches!(*head.method, Method::POST | Method::PUT | Method::PATCH) {
                    out.extend_from_slice(b"content-length: 0\r\n");
                    BodyFraming::Length(0)
                } else {
                    BodyFraming::None
                }
            }
            Some(n) if stash.is_none() => {
                out.extend_from_slice(b"content-length: ");
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
                BodyFraming::Length(n)
            }
            _ => {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
                BodyFraming::Chunked
            }
        },
    };
    out.extend_from_slice(b"\r\n");
    framing
}

/// `{size:x}\r\n` in `buf`.
fn chunk_line(buf: &mut [u8; 20], size: usize) -> &[u8] {
    let digits = format_hex(size, &mut buf[..18]);
    let len = digits;
    buf[len] = b'\r';
    buf[len + 1] = b'\n';
    &buf[..len + 2]
}

fn format_hex(mut n: usize, out: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = HEX[n & 15];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    let len = tmp.len() - i;
    out[..len].copy_from_slice(&tmp[i..]);
    len
}

/// A response head as read, with what its framing fields said.
#[derive(Debug)]
struct ResponseHead {
    /// Status, version and the end-to-end fields (hop-by-hop ones are not kept).
    parts: http::response::Parts,
    /// Bytes read after the head: the start of the body.
    rest: BytesMut,
    /// Transfer-Encoding field lines, and whether all of them together said just `chunked`.
    codings: u32,
    chunked_only: bool,
    /// Content-Length field lines and the value of the last.
    lengths: u32,
    length: Option<u64>,
    /// `Connection: close`.
    close: bool,
}

/// Where one field of a head lies in the head's bytes.
#[derive(Clone, Copy, Default)]
struct Span {
    name: (u32, u32),
    value: (u32, u32),
}

/// Reads a final response head. Interim 1xx responses before it go to `interim` (each written
/// to the client before the next is read), or are dropped when there is none.
///
/// The head is parsed once: field positions are noted while the buffer is borrowed, then the
/// head is frozen and every kept value shares its bytes (no copy, no allocation per field).
/// Hop-by-hop fields (RFC 9110 §7.6.1) are left out as the map is built; what the framing
/// fields said is kept aside for [`H1Body::new`].
async fn read_head<R: AsyncRead + Unpin>(
    io: &mut R,
    max_head: usize,
    interim: Option<InterimSink<'_>>,
) -> Result<ResponseHead, H1Error> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut received = false;
    loop {
        if buf.capacity() - buf.len() < 512 {
            buf.reserve(READ_CHUNK);
        }
        let n = io.read_buf(&mut buf).await.map_err(|e| H1Error::Upstream {
            failure: Failure::UpstreamClosed,
            error: e.to_string(),
            nothing_received: !received,
        })?;
        if n == 0 {
            return Err(H1Error::Upstream {
                failure: Failure::UpstreamClosed,
                error: if received {
                    "connection closed in the middle of the response head".to_owned()
                } else {
                    "connection closed before any response byte".to_owned()
                },
                nothing_received: !received,
            });
        }
        received = true;
        loop {
            let mut spans = [Span::default(); MAX_HEADERS];
            let (len, code, version, count) = {
                let mut fields = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
                let mut response = httparse::Response::new(&mut []);
                let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
                    &mut response,
                    &buf,
                    &mut fields,
                );
                match parsed {
                    Ok(httparse::Status::Complete(len)) => {
                        let base = buf.as_ptr() as usize;
                        let at = |s: &[u8]| ((s.as_ptr() as usize - base) as u32, s.len() as u32);
                        for (span, field) in spans.iter_mut().zip(response.headers.iter()) {
                            *span = Span {
                                name: at(field.name.as_bytes()),
                                value: at(field.value),
                            };
                        }
                        (
                            len,
                            response.code.unwrap_or_default(),
                            response.version.unwrap_or_default(),
                            response.headers.len(),
                        )
                    }
                    Ok(httparse::Status::Partial) => {
                        if buf.len() > max_head {
                            return Err(head_too_large(max_head));
                        }
                        break;
                    }
                    Err(httparse::Error::TooManyHeaders) => return Err(head_too_large(max_head)),
                    Err(e) => return Err(protocol(&format!("malformed response head ({e})"))),
                }
            };
            if !crlf_only(&buf[..len]) {
                return Err(protocol("bare LF in the response head"));
            }
            if len > max_head {
                return Err(head_too_large(max_head));
            }
            if (100..200).contains(&code) && code != 101 {
                // Interim response (100 Continue, 103 Early Hints): forwarded when the client
                // can take it (RFC 9110 §15.2: a proxy forwards 1xx it did not ask for itself).
                match interim.map(|sink| (sink.interim, sink.via)) {
                    Some((InterimTarget::H1(interim), via)) => {
                        let head = interim_head(&buf[..len], code, &spans[..count], via);
                        interim.send(&head).await;
                    }
                    Some((InterimTarget::H2(interim), via)) => {
                        interim.send(interim_response(&buf[..len], code, &spans[..count], via));
                    }
                    None => {}
                }
                buf.advance(len);
                continue;
            }
            let head = buf.split_to(len).freeze();
            return build_head(&head, code, version, &spans[..count], buf);
        }
    }
}

/// An interim response head as the client gets it: HTTP/1.1, the upstream's fields less the
/// hop-by-hop ones (RFC 9110 §7.6.1, and any named in Connection), this proxy's Via last.
fn interim_head(head: &[u8], code: u16, spans: &[Span], via: &HeaderValue) -> Vec<u8> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    let named = connection_named(head, spans);
    let reason = StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Informational");
    let mut out = Vec::with_capacity(head.len() + 64);
    out.extend_from_slice(format!("HTTP/1.1 {code} {reason}\r\n").as_bytes());
    for span in spans {
        let name = slice(span.name);
        if !interim_hop(name, &named) {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(slice(span.value));
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"via: ");
    out.extend_from_slice(via.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// Whether `name` is hop-by-hop in an interim head: the fixed ones (RFC 9110 §7.6.1) and those
/// its Connection field names.
fn interim_hop(name: &[u8], named: &[&[u8]]) -> bool {
    [
        &b"connection"[..],
        b"keep-alive",
        b"proxy-connection",
        b"upgrade",
        b"te",
        b"transfer-encoding",
    ]
    .iter()
    .chain(named.iter())
    .any(|hop| name.eq_ignore_ascii_case(hop))
}

/// The fields the interim head's Connection field names.
fn connection_named<'h>(head: &'h [u8], spans: &[Span]) -> Vec<&'h [u8]> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    spans
        .iter()
        .filter(|span| slice(span.name).eq_ignore_ascii_case(b"connection"))
        .flat_map(|span| slice(span.value).split(|&b| b == b',').map(trim))
        .collect()
}

/// An interim response as an HTTP/2 client gets it: the same fields as [`interim_head`] (h2
/// lower-cases the names on the wire, RFC 9113 §8.2.1), this proxy's Via last.
fn interim_response(head: &[u8], code: u16, spans: &[Span], via: &HeaderValue) -> Response<()> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    let named = connection_named(head, spans);
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(code).expect("a 1xx code is a valid status");
    let headers = response.headers_mut();
    for span in spans {
        let name = slice(span.name);
        if interim_hop(name, &named) {
            continue;
        }
        // httparse checked the head's syntax; a field http will not hold is left out.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(slice(span.value)),
        ) {
            headers.append(name, value);
        }
    }
    headers.append(http::header::VIA, via.clone());
    response
}

/// Builds the response head from a complete, checked head.
fn build_head(
    head: &Bytes,
    code: u16,
    version: u8,
    spans: &[Span],
    rest: BytesMut,
) -> Result<ResponseHead, H1Error> {
    let status = StatusCode::from_u16(code).map_err(|_| protocol("invalid status code"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        // The proxy strips Upgrade: a 101 answers a question it never asked.
        return Err(protocol("unsolicited 101 Switching Protocols"));
    }
    let slice = |(at, len): (u32, u32)| head.slice(at as usize..(at + len) as usize);
    let mut out = ResponseHead {
        parts: http::Response::new(()).into_parts().0,
        rest,
        codings: 0,
        chunked_only: true,
        lengths: 0,
        length: None,
        close: false,
    };
    let mut headers = HeaderMap::with_capacity(spans.len());
    let mut named: Option<Bytes> = None;
    for span in spans {
        let name = HeaderName::from_bytes(&slice(span.name))
            .map_err(|_| protocol("invalid field name"))?;
        let value = slice(span.value);
        if name == CONNECTION {
            for token in value.split(|&b| b == b',').map(trim) {
                if token.eq_ignore_ascii_case(b"close") {
                    out.close = true;
                } else if !token.eq_ignore_ascii_case(b"keep-alive") && !token.is_empty() {
                    named = Some(value.clone());
                }
            }
            continue;
        }
        if name == TRANSFER_ENCODING {
            out.codings += 1;
            out.chunked_only &= trim(&value).eq_ignore_ascii_case(b"chunked");
            continue;
        }
        if name == CONTENT_LENGTH {
            out.lengths += 1;
            out.length = decimal(&value);
            if out.length.is_none() {
                return Err(protocol("invalid Content-Length"));
            }
        }
        if name == KEEP_ALIVE || name == PROXY_CONNECTION || name == UPGRADE || name == TE {
            continue;
        }
        let value =
            HeaderValue::from_maybe_shared(value).map_err(|_| protocol("invalid field value"))?;
        headers.append(name, value);
    }
    if let Some(value) = named {
        // Fields the upstream named as hop-by-hop in Connection (RFC 9110 §7.6.1); rare.
        for token in value.split(|&b| b == b',').map(trim) {
            if let Ok(name) = HeaderName::from_bytes(token) {
                if name != CONTENT_LENGTH {
                    headers.remove(name);
                }
            }
        }
    }
    out.parts.status = status;
    out.parts.version = if version == 0 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    out.parts.headers = headers;
    Ok(out)
}

fn protocol(why: &str) -> H1Error {
    H1Error::Upstream {
        failure: Failure::UpstreamProtocol,
        error: why.to_owned(),
        nothing_received: false,
    }
}

fn head_too_large(max: usize) -> H1Error {
    H1Error::Upstream {
        failure: Failure::ResponseHeadTooLarge,
        error: format!("response head is over {max} bytes"),
        nothing_received: false,
    }
}

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// How the rest of a response body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers,
    /// Until the upstream closes (never reusable).
    Close,
    Done,
}

/// An upstream response body read straight from the connection; the connection goes back to
/// the pool when the body ended cleanly, and is closed otherwise.
#[derive(Debug)]
pub(crate) struct H1Body {
    conn: Option<H1Conn>,
    buf: BytesMut,
    framing: Framing,
    keep_alive: bool,
    home: Home,
    read_timeout: Duration,
    /// The connection's timer is armed for the read timeout.
    armed: bool,
    /// An error held back for one poll, so that hyper first flushes what it already has
    /// (the head, earlier chunks): the client then sees a truncated message, not a bare close.
    failed: Option<BodyError>,
}

impl H1Body {
    /// The body of `response`; `reusable` is false when the request was not sent whole (the
    /// connection then closes whatever the response says). Ambiguous framing is refused here
    /// (RFC 9112 §6.3): Transfer-Encoding other than one `chunked`, or with Content-Length, or
    /// repeated Content-Length.
    fn new(
        conn: H1Conn,
        response: ResponseHead,
        head_request: bool,
        reusable: bool,
        limits: ExchangeLimits,
        home: Home,
    ) -> Result<(http::response::Parts, Self), H1Error> {
        if response.codings > 0
            && (response.codings > 1 || !response.chunked_only || response.lengths > 0)
            || response.lengths > 1
        {
            return Err(protocol(
                "ambiguous response framing (Content-Length/Transfer-Encoding)",
            ));
        }
        let status = response.parts.status.as_u16();
        let framing = if head_request || status == 204 || status == 304 {
            Framing::Done
        } else if response.codings > 0 {
            Framing::ChunkSize
        } else {
            match response.length {
                Some(0) => Framing::Done,
                Some(n) => Framing::Length(n),
                None => Framing::Close,
            }
        };
        let keep_alive = reusable
            && response.parts.version == Version::HTTP_11
            && !response.close
            && framing != Framing::Close;
        let mut body = Self {
            conn: Some(conn),
            buf: response.rest,
            framing,
            keep_alive,
            home,
            read_timeout: limits.read_timeout,
            armed: false,
            failed: None,
        };
        if body.framing == Framing::Done {
            body.finish();
        }
        Ok((response.parts, body))
    }

    /// The body ended: the connection goes back to the pool if it can serve another exchange.
    fn finish(&mut self) {
        self.framing = Framing::Done;
        if let Some(mut conn) = self.conn.take() {
            if self.keep_alive && self.buf.is_empty() {
                conn.uses += 1;
                self.home.pool.put_h1(self.home.shard, conn);
            }
        }
        self.buf = BytesMut::new();
    }

    fn fail(
        &mut self,
        cx: &mut Context<'_>,
        error: BodyError,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        log_failure(Failure::UpstreamBodyBroken, Some(&self.home.label), &error);
        self.conn = None;
        self.buf = BytesMut::new();
        self.failed = Some(error);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Reads more from the upstream into `buf`; `Ready(Ok(0))` at EOF.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let want = match self.framing {
            Framing::Length(n) | Framing::ChunkData(n) => {
                (n.min(READ_MAX as u64) as usize).max(READ_CHUNK)
            }
            _ => READ_CHUNK,
        };
        if self.buf.capacity() - self.buf.len() < want.min(1024) {
            self.buf.reserve(want);
        }
        let conn = self
            .conn
            .as_mut()
            .expect("a body being read has its connection");
        let spare = self.buf.spare_capacity_mut();
        let mut read = ReadBuf::uninit(spare);
        std::task::ready!(Pin::new(&mut conn.io).poll_read(cx, &mut read))?;
        let n = read.filled().len();
        // SAFETY: `poll_read` initialized the first `n` bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        Poll::Ready(Ok(n))
    }

    /// Arms the read timeout when a read must wait; true when it has passed.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        if !self.armed {
            conn.arm(self.read_timeout);
            self.armed = true;
        }
        conn.timer.as_mut().poll(cx).is_ready()
    }
}

impl Drop for H1Body {
    fn drop(&mut self) {
        // A body that ended returned its connection already; any other is mid-message and
        // its connection closes with it.
        if self.framing == Framing::Done {
            self.finish();
        }
    }
}

impl Body for H1Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Some(error) = this.failed.take() {
            this.framing = Framing::Done;
            return Poll::Ready(Some(Err(error)));
        }
        loop {
            // Take what the buffer already holds.
            match this.framing {
                Framing::Done => return Poll::Ready(None),
                Framing::Length(n) | Framing::ChunkData(n) if !this.buf.is_empty() => {
                    let take = (this.buf.len() as u64).min(n) as usize;
                    let data = this.buf.split_to(take).freeze();
                    let left = n - take as u64;
                    this.framing = match (this.framing, left) {
                        (Framing::Length(_), 0) => Framing::Done,
                        (Framing::Length(_), left) => Framing::Length(left),
                        (_, 0) => Framing::ChunkDataEnd,
                        (_, left) => Framing::ChunkData(left),
                    };
                    if this.framing == Framing::Done {
                        this.finish();
                    }
                    this.armed = false;
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Framing::Close if !this.buf.is_empty() => {
                    let data = this.buf.split().freeze();
                    this.armed = false;
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Framing::ChunkSize => {
                    if let Some(lf) = this.buf.iter().position(|&b| b == b'\n') {
                        // The limit holds wherever the read ended, not only when the line
                        // arrives in pieces (found by the fuzz target `h1client`).
                        if lf > 4096 {
                            return this
                                .fail(cx, BodyError::UpstreamFraming("chunk-size line too long"));
                        }
                        if lf == 0 || this.buf[lf - 1] != b'\r' {
                            return this
                                .fail(cx, BodyError::UpstreamFraming("bad chunk-size line"));
                        }
                        let Some(size) = chunk_size(&this.buf[..lf - 1]) else {
                            return this.fail(cx, BodyError::UpstreamFraming("bad chunk size"));
                        };
                        this.buf.advance(lf + 1);
                        this.framing = if size == 0 {
                            Framing::Trailers
                        } else {
                            Framing::ChunkData(size)
                        };
                        continue;
                    }
                    if this.buf.len() > 4096 {
                        return this
                            .fail(cx, BodyError::UpstreamFraming("chunk-size line too long"));
                    }
                }
                Framing::ChunkDataEnd if this.buf.len() >= 2 => {
                    if &this.buf[..2] != b"\r\n" {
                        return this.fail(
                            cx,
                            BodyError::UpstreamFraming("chunk data not followed by CRLF"),
                        );
                    }
                    this.buf.advance(2);
                    this.framing = Framing::ChunkSize;
                    continue;
                }
                Framing::Trailers => {
                    if this.buf.starts_with(b"\r\n") {
                        this.buf.advance(2);
                        this.finish();
                        return Poll::Ready(None);
                    }
                    if let Some(end) = this.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let section = &this.buf[..end + 4];
                        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
                        let ok = crlf_only(section)
                            && matches!(
                                httparse::parse_headers(section, &mut fields),
                                Ok(httparse::Status::Complete((n, _))) if n == section.len()
                            );
                        if !ok {
                            return this.fail(cx, BodyError::UpstreamFraming("malformed trailers"));
                        }
                        this.buf.advance(end + 4);
                        this.finish();
                        return Poll::Ready(None);
                    }
                    if this.buf.len() > MAX_TRAILERS {
                        return this
                            .fail(cx, BodyError::UpstreamFraming("trailer section too large"));
                    }
                }
                _ => {}
            }
            // Need more bytes.
            match this.poll_fill(cx) {
                Poll::Ready(Ok(0)) => {
                    if this.framing == Framing::Close {
                        this.keep_alive = false;
                        this.finish();
                        return Poll::Ready(None);
                    }
                    return this.fail(
                        cx,
                        BodyError::UpstreamFraming(
                            "upstream closed the connection before the body ended",
                        ),
                    );
                }
                Poll::Ready(Ok(_)) => {
                    this.armed = false;
                }
                Poll::Ready(Err(e)) => return this.fail(cx, BodyError::UpstreamIo(e)),
                Poll::Pending => {
                    if this.stalled(cx) {
                        let stall = this.read_timeout;
                        return this.fail(cx, BodyError::UpstreamStalled(stall));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.framing == Framing::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            Framing::Done => SizeHint::with_exact(0),
            Framing::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

/// One health check on a fresh connection: `GET path` with `Connection: close`; the status.
pub(crate) async fn health_status(
    mut conn: H1Conn,
    host: &HeaderValue,
    path: &str,
) -> Result<StatusCode, String> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\nconnection: close\r\nuser-agent: gatebench-health-check\r\n\r\n");
    conn.io.write_all(&out).await.map_err(|e| e.to_string())?;
    conn.io.flush().await.map_err(|e| e.to_string())?;
    match read_head(&mut conn.io, 64 * 1024, None).await {
        Ok(response) => Ok(response.parts.status),
        Err(H1Error::Upstream { error, .. }) => Err(error),
        Err(other) => Err(format!("{other:?}")),
    }
}

/// `1*DIGIT` without sign or overflow.
fn decimal(value: &[u8]) -> Option<u64> {
    let value = trim(value);
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::body::UpBody;

    #[test]
    fn chunk_lines() {
        let mut buf = [0u8; 20];
        assert_eq!(chunk_line(&mut buf, 0), b"0\r\n");
        assert_eq!(chunk_line(&mut buf, 1024), b"400\r\n");
        assert_eq!(chunk_line(&mut buf, usize::MAX), b"ffffffffffffffff\r\n");
    }

    #[test]
    fn request_heads_carry_the_framing_the_body_needs() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("a"));
        let head = RequestHead {
            method: &Method::POST,
            target: "/x?y",
            headers: &headers,
        };
        let mut out = Vec::new();
        let framing = write_head(&mut out, &head, &UpBody::Empty, None);
        assert_eq!(framing, BodyFraming::Length(0));
        assert_eq!(
            out,
            b"POST /x?y HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n"
        );
        let mut out = Vec::new();
        let body = UpBody::Full(Some(Bytes::from_static(b"abc")));
        assert_eq!(
            write_head(&mut out, &head, &body, None),
            BodyFraming::Length(3)
        );
        assert!(out.ends_with(b"content-length: 3\r\n\r\n"));
        let get = RequestHead {
            method: &Method::GET,
            ..head
        };
        let mut out = Vec::new();
        assert_eq!(
            write_head(&mut out, &get, &UpBody::Empty, None),
            BodyFraming::None
        );
    }

    async fn head_of(raw: &[u8]) -> Result<ResponseHead, H1Error> {
        let mut io = raw;
        read_head(&mut io, 1024, None).await
    }

    #[tokio::test]
    async fn response_heads_are_parsed_once_and_stripped() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\n\
X-Hop: 1\r\nKeep-Alive: 5\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok";
        let head = head_of(raw).await.unwrap();
        assert_eq!(head.parts.status, 200);
        assert!(head.close);
        assert_eq!((head.lengths, head.length), (1, Some(2)));
        let mut names: Vec<&str> = head.parts.headers.keys().map(|n| n.as_str()).collect();
        names.sort();
        assert_eq!(names, ["content-length", "x-a"]);
        assert_eq!(&head.rest[..], b"ok");
        for bad in [
            &b"HTTP/1.1 101 Switching\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
            b"garbage\r\n\r\n",
        ] {
            assert!(
                head_of(bad).await.is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let big = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "y".repeat(2000));
        assert!(matches!(
            head_of(big.as_bytes()).await,
            Err(H1Error::Upstream {
                failure: Failure::ResponseHeadTooLarge,
                ..
            })
        ));
    }

    /// Reads the body of `raw` as the proxy does, from an upstream on loopback that sends it
    /// in one write and closes: the body bytes, and whether it ended cleanly.
    async fn body_of(raw: &'static [u8]) -> (Vec<u8>, bool) {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let upstream = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(raw).await.unwrap();
        });
        let io = tokio::net::TcpStream::connect(addr).await.unwrap();
        upstream.await.unwrap();
        let mut conn = H1Conn::new(gatebench_tls::MaybeTls::Plain(io));
        let head = read_head(&mut conn.io, 1024, None).await.unwrap();
        let home = Home {
            pool: Arc::new(Pool::new(1, Duration::from_secs(60), 4)),
            shard: 0,
            label: Arc::from("test"),
        };
        let limits = ExchangeLimits {
            response_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(60),
            max_head: 1024,
        };
        let (_, mut body) = H1Body::new(conn, head, false, true, limits, home).unwrap();
        let mut data = Vec::new();
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return (data, true),
                Some(Ok(frame)) => data.extend_from_slice(&frame.into_data().unwrap()),
                Some(Err(_)) => return (data, false),
            }
        }
    }

    #[tokio::test]
    async fn chunk_size_lines_over_the_limit_fail_however_they_arrive() {
        let ok: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\n\r\n";
        assert_eq!(body_of(ok).await, (b"hello".to_vec(), true));
        // A 4,200-byte extension: refused even when the whole line is in the first read.
        let long: &'static [u8] = Box::leak(
            [
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;"[..],
                &[b'e'; 4200],
                b"\r\nhello\r\n0\r\n\r\n",
            ]
            .concat()
            .into_boxed_slice(),
        );
        let (data, complete) = body_of(long).await;
        assert!(
            !complete && data.is_empty(),
            "{} bytes, complete {complete}",
            data.len()
        );
    }
}
