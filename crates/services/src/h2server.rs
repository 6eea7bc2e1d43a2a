//! HTTP/2 client connections of the intermediaries, served with the h2 crate directly rather
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
//! GOAWAY when the drain starts. The echo backend stays on hyper: it sends no interim
//! responses. Not done: CONNECT (extended or not) and server push, which the intermediaries
//! never offered.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::SystemTime;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, SendStream};
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, DATE, TE};
use http::{HeaderMap, Request, Response};
use hyper::body::Body;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tracing::debug;

use crate::drain::draining;
use crate::interim::H2Interim;
use crate::proxy::body::{ClientBody, H2Recv, ResBody};

/// hyper's HTTP/2 server defaults, kept so that moving off hyper changes no behaviour a client
/// can measure: 1 MiB stream and connection windows, 16 KiB frames, 400 KiB buffered per
/// stream, 16 KiB header lists, 1024 locally reset streams before GOAWAY (CVE-2023-44487).
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONN_WINDOW: u32 = 1024 * 1024;
const MAX_FRAME_SIZE: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 400 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// The future answering one HTTP/2 request.
pub(crate) type H2Future = Pin<Box<dyn Future<Output = Response<ResBody>> + Send>>;

/// A service that answers HTTP/2 requests served by this module.
pub(crate) trait H2Handler: Send + Sync + 'static {
    /// Answers `req`; interim responses go through `interim`.
    fn call_h2(&self, req: Request<ClientBody>, interim: H2Interim) -> H2Future;
}

/// Serves one HTTP/2 connection (after TLS with ALPN h2, or h2c by prior knowledge) until it
/// ends; once `drain` turns true, sends GOAWAY and lets the open streams finish.
pub(crate) async fn serve<T>(
    io: T,
    max_streams: u32,
    handler: Arc<dyn H2Handler>,
    drain: &mut watch::Receiver<bool>,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .max_frame_size(MAX_FRAME_SIZE)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_concurrent_streams(max_streams);
    let handshake = builder.handshake::<T, Bytes>(io);
    let mut conn = tokio::select! {
        biased;
        conn = handshake => match conn {
            Ok(conn) => conn,
            Err(error) => {
                debug!(%error, "HTTP/2 handshake failed");
                return;
            }
        },
        () = draining(drain) => return,
    };
    let mut closing = false;
    loop {
        let next = if closing {
            conn.accept().await
        } else {
            tokio::select! {
                biased;
                next = conn.accept() => next,
                () = draining(drain) => {
                    // GOAWAY; accept keeps driving the connection until its streams end.
                    conn.graceful_shutdown();
                    closing = true;
                    continue;
                }
            }
        };
        match next {
            Some(Ok((req, respond))) => {
                tokio::spawn(stream(handler.clone(), req, respond));
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
) {
    let (parts, recv) = req.into_parts();
    let length = content_length(&parts.headers);
    let req = Request::from_parts(parts, ClientBody::H2(H2Recv::new(recv, length)));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut answer = handler.call_h2(req, H2Interim::new(tx));
    let response = loop {
        let step = std::future::poll_fn(|cx| {
            // Interim responses first: every one queued before the final response goes out
            // before it.
            if let Poll::Ready(Some(interim)) = rx.poll_recv(cx) {
                return Poll::Ready(Step::Interim(interim));
            }
            if let Poll::Ready(response) = answer.as_mut().poll(cx) {
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
                return;
            }
        }
    };
    drop(answer);
    while let Ok(interim) = rx.try_recv() {
        send_interim(&mut respond, interim);
    }
    let (mut head, body) = response.into_parts();
    strip_connection_fields(&mut head.headers);
    head.headers.entry(DATE).or_insert_with(http_date);
    if body.is_end_stream() {
        if let Err(error) = respond.send_response(Response::from_parts(head, ()), true) {
            debug!(%error, "sending the response failed");
        }
        return;
    }
    if let Some(len) = body.size_hint().exact() {
        head.headers
            .entry(CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(len));
    }
    match respond.send_response(Response::from_parts(head, ()), false) {
        Ok(send) => pipe(body, send).await,
        Err(error) => debug!(%error, "sending the response failed"),
    }
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
/// HTTP/1.1 upstream connection, which is then closed).
async fn pipe(mut body: ResBody, mut send: SendStream<Bytes>) {
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
                return;
            }
            Ok(None) => {
                let _ = send.send_data(Bytes::new(), true);
                return;
            }
            Ok(Some(Err(error))) => {
                debug!(%error, "response body broke off: resetting the stream");
                send.send_reset(Reason::INTERNAL_ERROR);
                return;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        match frame.into_data() {
            Ok(data) => {
                let end = body.is_end_stream();
                if write_data(&mut send, data, end).await.is_err() {
                    return;
                }
                if end {
                    return;
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    let _ = send.send_trailers(trailers);
                    return;
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
