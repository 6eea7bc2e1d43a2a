//! An upstream's response body ([`H1Body`]), read straight from its connection as hyper's
//! server (or `h2::server`) polls it: Content-Length, chunked coding decoded in place by
//! `gatebench-h1` (strict sizes, CRLF after data, trailers checked and dropped), or until the
//! upstream closes. The connection goes back to the pool only after a clean end with nothing
//! left over; a body that breaks or stalls closes it and ends the client's message as
//! truncated, never as complete.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use gatebench_h1::{BodyLength, Chunked, Step};
use http::Version;
use hyper::body::{Body, Frame, SizeHint};

use super::head::{RawHead, ResponseHead, READ_CHUNK};
use super::{ExchangeLimits, Home};
use crate::failure::{log_failure, BodyError, Failure};
use crate::upstream::H1Conn;

/// Reads of large bodies go up to this much at a time.
const READ_MAX: usize = 64 * 1024;
/// Largest trailer section of a chunked response.
const MAX_TRAILERS: usize = 16 * 1024;

/// How the rest of a response body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// This many bytes to go.
    Length(u64),
    /// Chunked coding, decoded in place.
    Chunked(Chunked),
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
    /// The response head as read, for an HTTP/1.x client's head (taken by `h1::server`).
    raw: Option<RawHead>,
}

impl H1Body {
    /// The response head kept as read, if it was ([`RawHead`]): its fields are not in the
    /// response's header map.
    pub(crate) fn raw_head_mut(&mut self) -> Option<&mut RawHead> {
        self.raw.as_mut()
    }

    /// Takes the response head kept as read, to write the client's head from it.
    pub(crate) fn take_raw_head(&mut self) -> Option<RawHead> {
        self.raw.take()
    }

    /// The body of `response` (its framing was checked with the head); `reusable` is false
    /// when the request was not sent whole (the connection then closes whatever the response
    /// says).
    pub(crate) fn new(
        conn: H1Conn,
        response: ResponseHead,
        head_request: bool,
        reusable: bool,
        limits: ExchangeLimits,
        home: Home,
    ) -> (http::response::Parts, Self) {
        let status = response.parts.status.as_u16();
        let framing = match response.framing.response_body(status, head_request) {
            BodyLength::None => Framing::Done,
            BodyLength::Length(n) => Framing::Length(n),
            BodyLength::Chunked => Framing::Chunked(Chunked::new(MAX_TRAILERS)),
            BodyLength::UntilClose => Framing::Close,
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
            raw: response.raw,
        };
        if body.framing == Framing::Done {
            body.finish();
        }
        (response.parts, body)
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

    /// Reads more from the upstream into `buf`; `Ready(Ok(0))` at EOF. Reads into the spare
    /// capacity without zeroing it first (a 64 KiB memset per read otherwise), with
    /// `tokio_util::io::poll_read_buf`.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let want = match self.framing {
            Framing::Length(n) => (n.min(READ_MAX as u64) as usize).max(READ_CHUNK),
            Framing::Chunked(chunked) => chunked.data_left().map_or(READ_CHUNK, |n| {
                (n.min(READ_MAX as u64) as usize).max(READ_CHUNK)
            }),
            _ => READ_CHUNK,
        };
        if self.buf.capacity() - self.buf.len() < want.min(1024) {
            self.buf.reserve(want);
        }
        let conn = self
            .conn
            .as_mut()
            .expect("a body being read has its connection");
        tokio_util::io::poll_read_buf(Pin::new(&mut conn.io), cx, &mut self.buf)
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
            match &mut this.framing {
                Framing::Done => return Poll::Ready(None),
                Framing::Length(n) if !this.buf.is_empty() => {
                    let take = (this.buf.len() as u64).min(*n) as usize;
                    let data = this.buf.split_to(take).freeze();
                    *n -= take as u64;
                    if *n == 0 {
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
                Framing::Chunked(chunked) => match chunked.step(&this.buf) {
                    Ok(Step::Framing(n)) => {
                        this.buf.advance(n);
                        continue;
                    }
                    Ok(Step::Data(n)) => {
                        let data = this.buf.split_to(n).freeze();
                        this.armed = false;
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Ok(Step::Done(n)) => {
                        // Trailers were checked; they are not forwarded.
                        this.buf.advance(n);
                        this.finish();
                        return Poll::Ready(None);
                    }
                    Ok(Step::Partial) => {}
                    Err(error) => {
                        return this.fail(cx, BodyError::UpstreamFraming(error.as_str()));
                    }
                },
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
