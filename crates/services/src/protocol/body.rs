//! The bodies the services move: client request bodies ([`ClientBody`]), requests going
//! upstream ([`UpBody`]) and responses going back to the client ([`ResBody`]). Rule: every body
//! streams frame by frame and nothing here collects one (the transform and the echo collect
//! above this layer, the echo within a [`Budget`]).
//!
//! An HTTP/1.1 upstream's body ([`H1Body`]) owns its connection: the connection goes back to
//! the pool only when the body ended cleanly. A body that breaks (the upstream resets,
//! truncates or stalls) closes its connection, and the error reaches the client connection's
//! server (`h1::server`, or `h2::server`), which truncates the client's message (HTTP/1: close
//! before the end; HTTP/2: RST_STREAM) — a failure is never turned into a complete-looking response
//! (docs/behaviour.md, "as an intermediary").

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use crate::failure::{log_failure, BodyError, Failure};
use crate::protocol::deadline::Deadline;
use crate::protocol::h1::client::H1Body;
use crate::protocol::h1::conn::H1Recv;

/// A request body on its way upstream.
#[derive(Debug)]
pub(crate) enum UpBody {
    /// No body.
    Empty,
    /// A body already in memory (the transform's XML).
    Full(Option<Bytes>),
    /// The client's body, streamed, counted against the limit.
    Stream {
        inner: ClientBody,
        seen: u64,
        max: u64,
    },
}

impl UpBody {
    /// Streams `inner`, failing with [`BodyError::TooLarge`] past `max` bytes.
    pub(crate) fn stream(inner: ClientBody, max: u64) -> Self {
        if inner.is_end_stream() {
            return UpBody::Empty;
        }
        UpBody::Stream {
            inner,
            seen: 0,
            max,
        }
    }
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            UpBody::Empty => Poll::Ready(None),
            UpBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            UpBody::Stream { inner, seen, max } => {
                match std::task::ready!(Pin::new(&mut *inner).poll_frame(cx)) {
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            *seen += data.len() as u64;
                            if *seen > *max {
                                return Poll::Ready(Some(Err(BodyError::TooLarge(*max))));
                            }
                        }
                        Poll::Ready(Some(Ok(frame)))
                    }
                    Some(Err(e)) => Poll::Ready(Some(Err(e))),
                    None => Poll::Ready(None),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpBody::Empty => true,
            UpBody::Full(data) => data.is_none(),
            UpBody::Stream { inner, .. } => inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpBody::Empty => SizeHint::with_exact(0),
            UpBody::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            UpBody::Stream { inner, .. } => inner.size_hint(),
        }
    }
}

/// One HTTP/2 stream's incoming DATA and trailers (h2 crate), read with flow control: the
/// window reopens as the data are taken on, so a peer never has more than one window in flight
/// ahead of the side the data go to (RFC 9113 §5.2: the receiver decides when to send
/// WINDOW_UPDATE).
#[derive(Debug)]
pub(crate) struct H2Recv {
    recv: h2::RecvStream,
    /// What Content-Length declared, less what arrived since (h2 enforces the total, RFC 9113
    /// §8.1.1).
    remaining: Option<u64>,
    /// The DATA frames have ended; only trailers may follow.
    data_done: bool,
    /// A client's body: the body timeout and its timer, armed while a read waits.
    stall: Option<(Duration, Deadline)>,
}

impl H2Recv {
    /// The body of a message whose head declared `length`.
    pub(crate) fn new(recv: h2::RecvStream, length: Option<u64>) -> Self {
        Self {
            recv,
            remaining: length,
            data_done: false,
            stall: None,
        }
    }

    /// A client's body, which fails with [`BodyError::DownstreamStalled`] (408) when no DATA
    /// arrive for `timeout` while it is read, as an HTTP/1.1 body does (nginx
    /// `client_body_timeout`).
    pub(crate) fn with_stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall = Some((timeout, Deadline::default()));
        self
    }

    /// [`H2Recv::poll_frame`] for a client's body, with the body timeout.
    fn poll_client(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some((_, stall)) = &mut self.stall {
                    stall.disarm();
                }
                Poll::Ready(frame.map(|f| f.map_err(BodyError::DownstreamH2)))
            }
            Poll::Pending => match &mut self.stall {
                Some((after, stall)) => {
                    let after = *after;
                    if stall.expired(cx, || Instant::now() + after) {
                        Poll::Ready(Some(Err(BodyError::DownstreamStalled(after))))
                    } else {
                        Poll::Pending
                    }
                }
                None => Poll::Pending,
            },
        }
    }

    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        if !self.data_done {
            match std::task::ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    if let Some(left) = &mut self.remaining {
                        *left = left.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => self.data_done = true,
            }
        }
        match std::task::ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.remaining
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// A client's request body: from an HTTP/1.x connection served by `h1::server`, or from an
/// HTTP/2 stream served with the h2 crate (`h2::server`).
#[derive(Debug)]
pub(crate) enum ClientBody {
    /// Read from an HTTP/1.x connection as it is asked for.
    H1(H1Recv),
    /// An HTTP/2 stream's DATA and trailers.
    H2(H2Recv),
    /// No body: an extended CONNECT's stream, whose bytes go to what takes it over
    /// (`protocol::upgrade`), not to the handler.
    Tunnel,
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ClientBody::H1(inner) => inner.poll_frame(cx),
            ClientBody::H2(inner) => inner.poll_client(cx),
            ClientBody::Tunnel => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ClientBody::H1(inner) => inner.is_end_stream(),
            ClientBody::H2(inner) => inner.is_end_stream(),
            ClientBody::Tunnel => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ClientBody::H1(inner) => inner.size_hint(),
            ClientBody::H2(inner) => inner.size_hint(),
            ClientBody::Tunnel => SizeHint::with_exact(0),
        }
    }
}

/// A response body on its way to the client.
#[derive(Debug)]
pub(crate) enum ResBody {
    /// An answer of the proxy's own (errors, health).
    Local(Option<Bytes>),
    /// An answer of the service's own whose bytes count against its connection's [`Budget`]
    /// until the body is dropped (the echo's echoes). The [`Held`] is kept for its drop.
    Held(Option<Bytes>, #[allow(dead_code)] Held),
    /// An HTTP/1.1 upstream's body, read straight from its connection.
    H1(H1Body),
    /// An HTTP/2 upstream's body, streamed from h2's client.
    Upstream(UpstreamBody),
    /// A body a service produces over time (the echo's emulated token stream): each frame
    /// goes to the client as soon as it is produced, never held for the next.
    Produced(Produced),
}

/// A body produced by a service frame by frame, over time.
pub(crate) struct Produced(pub(crate) Pin<Box<dyn Body<Data = Bytes, Error = BodyError> + Send>>);

impl std::fmt::Debug for Produced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Produced")
    }
}

impl ResBody {
    /// A body of the proxy's own.
    pub(crate) fn local(data: impl Into<Bytes>) -> Self {
        ResBody::Local(Some(data.into()))
    }
}

/// An HTTP/2 upstream's response body with its read timeout.
#[derive(Debug)]
pub(crate) struct UpstreamBody {
    inner: H2Recv,
    read_timeout: Duration,
    stall: Deadline,
    /// Which upstream, for the log line if the body breaks.
    upstream: Arc<str>,
    /// An error held back for one poll so the server writes what it has first (see `H1Body`).
    failed: Option<BodyError>,
}

impl UpstreamBody {
    pub(crate) fn new(inner: H2Recv, read_timeout: Duration, upstream: Arc<str>) -> Self {
        Self {
            inner,
            read_timeout,
            stall: Deadline::default(),
            upstream,
            failed: None,
        }
    }
}

impl Body for ResBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let body = match self.get_mut() {
            ResBody::Local(data) | ResBody::Held(data, _) => {
                return Poll::Ready(data.take().map(|d| Ok(Frame::data(d))))
            }
            ResBody::H1(body) => return Pin::new(body).poll_frame(cx),
            ResBody::Produced(body) => return body.0.as_mut().poll_frame(cx),
            ResBody::Upstream(body) => body,
        };
        if let Some(error) = body.failed.take() {
            return Poll::Ready(Some(Err(error)));
        }
        match body.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                body.stall.disarm();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => {
                log_failure(Failure::UpstreamBodyBroken, Some(&body.upstream), &error);
                body.failed = Some(BodyError::Upstream(error));
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let after = body.read_timeout;
                if !body.stall.expired(cx, || Instant::now() + after) {
                    return Poll::Pending;
                }
                let error = BodyError::UpstreamStalled(body.read_timeout);
                log_failure(Failure::UpstreamBodyBroken, Some(&body.upstream), &error);
                body.failed = Some(error);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResBody::Local(data) | ResBody::Held(data, _) => data.is_none(),
            ResBody::H1(body) => body.is_end_stream(),
            ResBody::Produced(body) => body.0.is_end_stream(),
            ResBody::Upstream(body) => body.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResBody::Local(data) | ResBody::Held(data, _) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            ResBody::H1(body) => body.size_hint(),
            ResBody::Produced(body) => body.0.size_hint(),
            ResBody::Upstream(body) => body.inner.size_hint(),
        }
    }
}

/// Bytes a connection's requests may hold at once (the echo's bodies on one HTTP/2
/// connection), shared by its streams; each holds its part through a [`Held`].
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// One request's part of a [`Budget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Held {
    /// Holds nothing yet.
    pub(crate) fn new(budget: Arc<Budget>) -> Self {
        Self { budget, bytes: 0 }
    }

    /// Takes `n` more bytes of the budget; false (and nothing taken) when they do not fit.
    pub(crate) fn take(&mut self, n: usize) -> bool {
        let limit = self.budget.limit;
        let taken = self
            .budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&after| after <= limit)
            })
            .is_ok();
        if taken {
            self.bytes += n;
        }
        taken
    }

    /// Bytes this request holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_shared_and_given_back() {
        let budget = Budget::new(100);
        let mut a = Held::new(budget.clone());
        let mut b = Held::new(budget.clone());
        assert!(a.take(60));
        assert!(!b.take(41), "60 + 41 is over 100");
        assert!(b.take(40));
        assert_eq!(budget.used(), 100);
        assert!(!a.take(1));
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(b.take(60));
        assert_eq!(b.bytes(), 100);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
