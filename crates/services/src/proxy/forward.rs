//! Forwarding one request: choosing an upstream, getting a connection, sending, retrying, and
//! turning failures into the answers docs/behaviour.md names.
//!
//! - Upstream refused or reset before a response → 502; connect, first-byte or read timeout →
//!   504; no eligible upstream → 503 at once (selection reads in-memory state, it never walks
//!   through dead hosts); a malformed response → 502 and its connection is closed, never pooled.
//!   Every error answer carries `Proxy-Status` (RFC 9209) naming the error type.
//! - Retries: a failure before anything was sent (connect failure, a pooled connection found
//!   closed) may be retried on another upstream for any method; any other failure only for an
//!   idempotent method (RFC 9110 §9.2.2) without a body, i.e. one the proxy can send again
//!   whole, and always before a byte went to the client (the answer is chosen only once a
//!   response head is in hand). Each upstream is tried at most once per request, within the
//!   `tries` budget. A pooled connection that turns out to be stale is retried once on a fresh
//!   connection to the same upstream, without counting against the budget or the upstream.
//! - A POST that reached an upstream is never sent again: after a first-byte timeout, a reset
//!   or a truncated answer the client gets 502/504.
//!
//! Errors carry their side (pingora's `ErrorSource`): upstream failures answer 5xx and count
//! towards passive ejection; downstream ones (the client's body over the limit, broken or
//! stalled) answer 4xx and blame no upstream.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, CONNECTION, CONTENT_TYPE, HOST, TE};
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use hyper::body::Body;
use tokio::sync::oneshot;
use tracing::debug;

use crate::failure::{log_failure, BodyError, Failure, Side};
use crate::protocol::body::{H2Recv, ResBody, UpBody, UpstreamBody};
use crate::protocol::h1::client::{self as h1client, H1Error};
use crate::protocol::h2::server as h2server;
use crate::protocol::interim::{InterimSink, InterimTarget};
use crate::proxy::{headers, Shared};
use crate::upstream::{ConnectError, H2Upstream, Sender, Target};

/// Upper bound of the `tries` budget: a request tries at most this many upstreams.
pub(crate) const MAX_TRIES: usize = 16;

/// A request ready to go upstream, in a protocol-neutral form.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    /// The client sent `TE: trailers` (re-sent to HTTP/2 upstreams only).
    pub te_trailers: bool,
    pub body: UpBody,
}

/// What is kept to send a body-less idempotent request again after the HTTP/2 exchange took
/// it (HTTP/1.1 exchanges only borrow the request, so they need no copy).
struct Spare {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    te_trailers: bool,
}

impl Spare {
    fn of(out: &Outgoing) -> Self {
        Self {
            method: out.method.clone(),
            uri: out.uri.clone(),
            headers: out.headers.clone(),
            te_trailers: out.te_trailers,
        }
    }

    fn rebuild(&self) -> Outgoing {
        Outgoing {
            method: self.method.clone(),
            uri: self.uri.clone(),
            headers: self.headers.clone(),
            te_trailers: self.te_trailers,
            body: UpBody::Empty,
        }
    }
}

/// The upstreams already tried for one request.
#[derive(Default)]
struct Tried {
    indices: [usize; MAX_TRIES],
    len: usize,
}

impl Tried {
    fn push(&mut self, index: usize) {
        if self.len < MAX_TRIES {
            self.indices[self.len] = index;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[usize] {
        &self.indices[..self.len]
    }
}

/// RFC 9110 §9.2.2.
fn idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// Forwards `out` and returns what the client gets. `interim`: the client's connection, where
/// the upstream's interim responses go.
pub(crate) async fn forward(
    shared: &Shared,
    mut out: Outgoing,
    http1: bool,
    interim: Option<&InterimTarget>,
) -> Response<ResBody> {
    // The set this request keeps to its end, retries included, whatever a reload does.
    let balancer = shared.members.current();
    // A request that can go again whole: idempotent, and no body to lose.
    let repeatable = idempotent(&out.method) && out.body.is_end_stream();
    let mut tried = Tried::default();
    let mut last: Option<Failure> = None;
    // A body chunk taken from the client but not yet written anywhere.
    let mut stash: Option<Bytes> = None;
    // Set for the one transparent retry of a stale pooled connection.
    let mut fresh_on: Option<usize> = None;
    let mut stale_retried = false;
    // False once the request (or its body) was handed to an HTTP/2 exchange for good.
    let mut have_request = true;
    while have_request {
        let (index, fresh) = match fresh_on.take() {
            Some(index) => (index, true),
            None => {
                if tried.len >= shared.tries {
                    break;
                }
                match balancer.pick(tried.as_slice()) {
                    Some(index) => (index, false),
                    None => break,
                }
            }
        };
        if !fresh {
            tried.push(index);
        }
        let upstream = &balancer.upstreams[index];
        let shard = upstream.pool.shard();
        let pooled = if fresh {
            None
        } else {
            upstream.pool.take(shard)
        };
        let sender = match pooled {
            Some(sender) => sender,
            // Boxed: the connect future (TCP, TLS) is large and rarely needed; inline, every
            // request's future would carry it.
            None => match Box::pin(shared.connector.connect(&upstream.target)).await {
                Ok(sender) => {
                    if let Sender::H2(h2) = &sender {
                        upstream.pool.put_h2(shard, h2);
                    }
                    sender
                }
                Err(error) => {
                    // Nothing was sent: any method may go to the next upstream.
                    let failure = connect_failure(&error);
                    log_failure(failure, Some(&upstream.label), &error);
                    balancer.failed(index);
                    last = Some(failure);
                    continue;
                }
            },
        };
        let conn = match sender {
            Sender::H1(conn) => conn,
            Sender::H2(h2) => {
                // The HTTP/2 exchange takes the request; keep what a retry needs.
                let spare = repeatable.then(|| Spare::of(&out));
                let taken = std::mem::replace(
                    &mut out,
                    Outgoing {
                        method: Method::GET,
                        uri: Uri::default(),
                        headers: HeaderMap::new(),
                        te_trailers: false,
                        body: UpBody::Empty,
                    },
                );
                // Boxed at its own size, like the connect: HTTP/1.1 exchanges need none of it.
                match Box::pin(send_h2(
                    shared,
                    h2,
                    build_h2(taken, &upstream.target),
                    &upstream.label,
                    interim,
                ))
                .await
                {
                    Ok(response) => {
                        balancer.succeeded(index);
                        return response;
                    }
                    Err((failure, error, unsent)) => {
                        if failure.side() == Side::Downstream {
                            log_failure(failure, None, &error);
                            return error_response(shared, failure, http1);
                        }
                        log_failure(failure, Some(&upstream.label), &error);
                        balancer.failed(index);
                        last = Some(failure);
                        match (unsent, spare) {
                            (Some(request), _) => out = unbuild(request),
                            (None, Some(spare)) => out = spare.rebuild(),
                            (None, None) => have_request = false,
                        }
                    }
                }
                continue;
            }
        };
        let reused = conn.reused();
        let target = prepare_h1(&mut out, &upstream.target);
        let head = h1client::RequestHead {
            method: &out.method,
            target: target.as_str(),
            headers: &out.headers,
        };
        let home = h1client::Home {
            pool: upstream.pool.clone(),
            shard,
            label: upstream.label.clone(),
        };
        let limits = h1client::ExchangeLimits {
            response_timeout: shared.timeouts.response,
            read_timeout: shared.timeouts.upstream_read,
            max_head: shared.max_response_head,
            raw_head: http1,
        };
        let sink = interim.map(|interim| InterimSink {
            interim,
            via: shared.via.value(Version::HTTP_11),
        });
        match h1client::exchange(conn, head, &mut out.body, &mut stash, limits, home, sink).await {
            Ok((parts, body)) => {
                balancer.succeeded(index);
                // Hop-by-hop fields were left out as the head was parsed.
                return respond(shared, parts, ResBody::H1(body), false);
            }
            Err(H1Error::Unsent(error)) => {
                // Not a byte was written: a stale pooled connection, or a fresh one that died.
                if reused && !stale_retried {
                    debug!(side = "upstream", upstream = %upstream.label, %error,
                        "pooled connection was stale: retrying on a fresh one");
                    stale_retried = true;
                    fresh_on = Some(index);
                } else {
                    log_failure(Failure::UpstreamClosed, Some(&upstream.label), &error);
                    balancer.failed(index);
                    last = Some(Failure::UpstreamClosed);
                }
            }
            Err(H1Error::Downstream(failure, error)) => {
                log_failure(failure, None, &error);
                return error_response(shared, failure, http1);
            }
            Err(H1Error::Upstream {
                failure,
                error,
                nothing_received,
            }) => {
                // The classic keep-alive race: the upstream closed the idle connection as the
                // request went out. Safe to repeat only for a request that can go again whole.
                let stale = reused && nothing_received && failure == Failure::UpstreamClosed;
                if stale && !stale_retried && repeatable {
                    debug!(side = "upstream", upstream = %upstream.label, %error,
                        "pooled connection closed under the request: retrying on a fresh one");
                    stale_retried = true;
                    fresh_on = Some(index);
                    continue;
                }
                log_failure(failure, Some(&upstream.label), &error);
                if !stale {
                    balancer.failed(index);
                }
                last = Some(failure);
                have_request = repeatable;
            }
        }
    }
    let failure = last.unwrap_or(Failure::NoUpstream);
    if failure == Failure::NoUpstream {
        log_failure(
            failure,
            None,
            &"every upstream is down, ejected or already tried",
        );
    }
    error_response(shared, failure, http1)
}

/// Makes `out` an HTTP/1.1 request: Host from the target's authority when it has one
/// (absolute form, RFC 9112 §3.2.3; HTTP/2's `:authority`, RFC 9113 §8.3.1), else the
/// client's Host, else the upstream's; returns the origin-form target. Idempotent, so a retry
/// can call it again.
fn prepare_h1(out: &mut Outgoing, target: &Target) -> PathAndQuery {
    if let Some(authority) = out.uri.authority() {
        if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
            out.headers.insert(HOST, host);
        }
    } else if !out.headers.contains_key(HOST) {
        out.headers.insert(HOST, target.host_header.clone());
    }
    // TE is hop-by-hop in HTTP/1.1, and the proxy does not forward trailers.
    out.headers.remove(TE);
    out.uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"))
}

/// Strips the upstream response's hop-by-hop fields (`strip`), adds Via, and wraps it for the
/// client. A head an HTTP/1.1 upstream's body kept as read (for an HTTP/1.x client) gets its
/// Via there: `h1::server` writes it after the upstream's fields, as the header map would.
fn respond(
    shared: &Shared,
    mut parts: http::response::Parts,
    mut body: ResBody,
    strip: bool,
) -> Response<ResBody> {
    if let ResBody::H1(h1) = &mut body {
        if let Some(raw) = h1.raw_head_mut() {
            raw.via = Some(shared.via.value(parts.version).clone());
            return Response::from_parts(parts, body);
        }
    }
    if strip {
        headers::strip_hop_by_hop(&mut parts.headers);
    }
    parts
        .headers
        .append(http::header::VIA, shared.via.value(parts.version).clone());
    Response::from_parts(parts, body)
}

/// Sends a request on an HTTP/2 upstream connection (h2's client); its interim responses go
/// to `interim` as they arrive.
async fn send_h2(
    shared: &Shared,
    h2: H2Upstream,
    request: Request<UpBody>,
    label: &std::sync::Arc<str>,
    interim: Option<&InterimTarget>,
) -> Result<Response<ResBody>, (Failure, String, Option<Request<UpBody>>)> {
    let sink = interim.map(|interim| InterimSink {
        interim,
        via: shared.via.value(Version::HTTP_2),
    });
    match send(h2, request, shared.timeouts.response, sink).await {
        Sent::Response(response) => {
            let (parts, recv) = response.into_parts();
            let length = h2server::content_length(&parts.headers);
            let body = UpstreamBody::new(
                H2Recv::new(recv, length),
                shared.timeouts.upstream_read,
                label.clone(),
            );
            Ok(respond(shared, parts, ResBody::Upstream(body), true))
        }
        Sent::Unsent(request, error) => {
            Err((Failure::UpstreamClosed, error.to_string(), Some(request)))
        }
        Sent::Failed(failure, error) => Err((failure, error, None)),
    }
}

/// Makes `out` an HTTP/2 request: absolute target with the upstream's scheme and the
/// client's authority; Host folded into `:authority` (RFC 9113 §8.3.1); `TE: trailers` kept
/// (RFC 9113 §8.2.2).
fn build_h2(out: Outgoing, target: &Target) -> Request<UpBody> {
    let Outgoing {
        method,
        uri,
        mut headers,
        te_trailers,
        body,
    } = out;
    let authority = uri
        .authority()
        .cloned()
        .or_else(|| {
            headers
                .get(HOST)
                .and_then(|h| Authority::try_from(h.as_bytes()).ok())
        })
        .unwrap_or_else(|| target.authority.clone());
    headers.remove(HOST);
    if te_trailers {
        headers.insert(TE, HeaderValue::from_static("trailers"));
    }
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(target.scheme.clone());
    parts.authority = Some(authority);
    parts.path_and_query = Some(
        uri.path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/")),
    );
    let uri = Uri::from_parts(parts).unwrap_or(uri);
    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_2;
    *request.headers_mut() = headers;
    request
}

/// Takes back a request the HTTP/2 exchange returned unsent.
fn unbuild(request: Request<UpBody>) -> Outgoing {
    let (mut parts, body) = request.into_parts();
    let te_trailers = parts.headers.remove(TE).is_some();
    Outgoing {
        method: parts.method,
        uri: parts.uri,
        headers: parts.headers,
        te_trailers,
        body,
    }
}

/// The outcome of one HTTP/2 exchange. Returned once and taken apart at once, never stored:
/// boxing the request would cost an allocation per retry for nothing.
#[allow(clippy::large_enum_variant)]
enum Sent {
    /// A final response head arrived.
    Response(Response<h2::RecvStream>),
    /// Not a byte of the request was written; here it is back.
    Unsent(Request<UpBody>, h2::Error),
    /// The exchange failed after the request (or part of it) was written.
    Failed(Failure, String),
}

/// What the exchange waits for once the request head is out.
enum Event {
    Interim(Response<()>),
    Final(Result<Response<h2::RecvStream>, h2::Error>),
    BodySent(Result<(), BodyError>),
    TimedOut,
}

/// Sends `request` and waits up to `timeout` for the final response head, counted from when the
/// request body has been handed over whole (a slow upload is the client body timeout's
/// business, not the upstream's). Interim responses before it go to `interim` (RFC 9110 §15.2).
/// The request body is written by a task of its own (as hyper's client, used before, did), so an upstream
/// may answer before it has read the whole body.
async fn send(
    sender: H2Upstream,
    request: Request<UpBody>,
    timeout: Duration,
    interim: Option<InterimSink<'_>>,
) -> Sent {
    let mut ready = match sender.send.clone().ready().await {
        Ok(ready) => ready,
        Err(error) => {
            sender.mark_closed();
            return Sent::Unsent(request, error);
        }
    };
    let (parts, body) = request.into_parts();
    let mut head = Request::from_parts(parts, ());
    strip_connection_fields(head.headers_mut());
    let end = body.is_end_stream();
    let (mut response, stream) = match ready.send_request(head, end) {
        Ok(pair) => pair,
        Err(error) => {
            sender.mark_closed();
            return Sent::Failed(Failure::UpstreamClosed, error.to_string());
        }
    };
    let mut body_sent = None;
    let mut deadline = None;
    if end {
        deadline = Some(Box::pin(tokio::time::sleep(timeout)));
    } else {
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(write_body(body, stream).await);
        });
        body_sent = Some(rx);
    }
    loop {
        let event = std::future::poll_fn(|cx| {
            if let Some(rx) = &mut body_sent {
                if let Poll::Ready(sent) = Pin::new(rx).poll(cx) {
                    // A dropped sender means the task ended without a word: the stream is gone
                    // and the response side will say how.
                    return Poll::Ready(Event::BodySent(sent.unwrap_or(Ok(()))));
                }
            }
            match response.poll_informational(cx) {
                Poll::Ready(Some(Ok(interim))) => return Poll::Ready(Event::Interim(interim)),
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Event::Final(Err(error))),
                Poll::Ready(None) | Poll::Pending => {}
            }
            if let Poll::Ready(result) = Pin::new(&mut response).poll(cx) {
                return Poll::Ready(Event::Final(result));
            }
            if let Some(deadline) = &mut deadline {
                if deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Event::TimedOut);
                }
            }
            Poll::Pending
        })
        .await;
        match event {
            Event::Interim(head) => {
                if let Some(sink) = interim {
                    forward_interim(sink, head).await;
                }
            }
            Event::Final(Ok(response)) => return Sent::Response(response),
            Event::Final(Err(error)) => return Sent::Failed(classify(&error), error.to_string()),
            Event::BodySent(Ok(())) => {
                body_sent = None;
                deadline = Some(Box::pin(tokio::time::sleep(timeout)));
            }
            Event::BodySent(Err(error)) => {
                return Sent::Failed(error.downstream_failure(), error.to_string());
            }
            Event::TimedOut => {
                return Sent::Failed(Failure::ResponseTimeout, "timed out".to_owned());
            }
        }
    }
}

/// Writes the request body to its stream as the upstream's window allows. A client body that
/// fails resets the stream (CANCEL): the upstream must not take a cut body for a whole one.
/// Errors of the stream itself are left to the response side, which sees them too.
async fn write_body(mut body: UpBody, mut stream: h2::SendStream<Bytes>) -> Result<(), BodyError> {
    loop {
        let frame = std::future::poll_fn(|cx| {
            if let Poll::Ready(reset) = stream.poll_reset(cx) {
                return Poll::Ready(Err(reset.ok()));
            }
            Pin::new(&mut body).poll_frame(cx).map(Ok)
        })
        .await;
        match frame {
            Err(_) => return Ok(()),
            Ok(None) => {
                let _ = stream.send_data(Bytes::new(), true);
                return Ok(());
            }
            Ok(Some(Err(error))) => {
                stream.send_reset(h2::Reason::CANCEL);
                return Err(error);
            }
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    let end = body.is_end_stream();
                    if h2server::write_data(&mut stream, data, end).await.is_err() || end {
                        return Ok(());
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let _ = stream.send_trailers(trailers);
                        return Ok(());
                    }
                }
            },
        }
    }
}

/// Removes what HTTP/2 forbids in a request (RFC 9113 §8.2.2), which h2 would refuse to send;
/// TE stays only as `trailers`. The header rules removed these already; this is the net.
fn strip_connection_fields(headers: &mut HeaderMap) {
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
    if headers.get(TE).is_some_and(|te| te != "trailers") {
        headers.remove(TE);
    }
}

/// Hands an HTTP/2 upstream's interim response to the client's connection: Via added (the
/// fields of an HTTP/2 message carry nothing hop-by-hop, RFC 9113 §8.2.2).
async fn forward_interim(sink: InterimSink<'_>, mut head: Response<()>) {
    if head.status() == StatusCode::SWITCHING_PROTOCOLS {
        // Not an interim response in HTTP/2 (RFC 9113 §8.6); h2 would not pass one anyway.
        return;
    }
    match sink.interim {
        InterimTarget::H2(interim) => {
            head.headers_mut()
                .append(http::header::VIA, sink.via.clone());
            interim.send(head);
        }
        InterimTarget::H1(interim) => {
            let status = head.status();
            let mut out = Vec::with_capacity(256);
            out.extend_from_slice(
                format!(
                    "HTTP/1.1 {} {}\r\n",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("Informational")
                )
                .as_bytes(),
            );
            for (name, value) in head.headers() {
                out.extend_from_slice(name.as_str().as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"via: ");
            out.extend_from_slice(sink.via.as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            interim.send(&out).await;
        }
    }
}

/// Which failure an h2 client error is: the connection breaking (an I/O error, GOAWAY) is the
/// upstream closing; anything else (a reset stream, a malformed response) a protocol error.
fn classify(error: &h2::Error) -> Failure {
    if error.is_io() || error.is_go_away() {
        Failure::UpstreamClosed
    } else {
        Failure::UpstreamProtocol
    }
}

const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const CLOSE: HeaderValue = HeaderValue::from_static("close");

/// The proxy's own answer for `failure`: status, Proxy-Status, a one-line body. HTTP/1
/// connections close after downstream errors: the rest of the request is not worth reading.
pub(crate) fn error_response(shared: &Shared, failure: Failure, http1: bool) -> Response<ResBody> {
    let mut response = Response::new(ResBody::local(failure.message()));
    *response.status_mut() = failure.status();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, TEXT_PLAIN);
    headers.insert(
        crate::proxy::PROXY_STATUS,
        shared.proxy_status[failure.index()].clone(),
    );
    if http1 && failure.side() == Side::Downstream {
        headers.insert(CONNECTION, CLOSE);
    }
    response
}

/// The failure a connect error is.
pub(crate) fn connect_failure(error: &ConnectError) -> Failure {
    match error {
        ConnectError::Refused(_) => Failure::ConnectRefused,
        ConnectError::Timeout => Failure::ConnectTimeout,
        ConnectError::Tls(_) => Failure::TlsFailed,
        ConnectError::Other(_) => Failure::ConnectFailed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules() {
        assert!(idempotent(&Method::GET));
        assert!(idempotent(&Method::PUT));
        assert!(!idempotent(&Method::POST));
        assert!(!idempotent(&Method::PATCH));
    }
}
