//! The read side of an HTTP/1.x client connection served by `h1::server`: the connection and the
//! bytes read from it, shared by the connection's loop (which parses heads and writes answers)
//! and the body of the request in flight ([`H1Recv`], which the intermediary reads as it
//! forwards): Content-Length or the chunked coding decoded by `gatebench-h1`, trailers checked
//! and dropped, the body timeout between reads, and `100 Continue` when the body is first read
//! (RFC 9110 §10.1.1). Both sides run in the connection's task, never at the same instant; the
//! lock only makes the sharing safe to express.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use gatebench_h1::{Chunked, Step};
use hyper::body::{Frame, SizeHint};
use tokio::io::AsyncWrite;
use tokio::time::Instant;
use tracing::debug;

use crate::failure::BodyError;
use crate::protocol::deadline::Deadline;

/// Bytes read from the client at once for a head (a buffer grows for a larger one): a request
/// in flight keeps its head's buffer until it is forwarded.
const READ_CHUNK: usize = 2048;
/// Largest read of a long request body at once.
const READ_MAX: usize = 64 * 1024;
/// What `Expect: 100-continue` gets when the body is first read.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
/// The client connection, boxed once: TCP, TLS, or TCP after the h2c preface check.
pub(crate) use crate::protocol::upgrade::Io;

/// How much of the current request body is still to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyState {
    /// Nothing left (or there was no body).
    Done,
    /// This many bytes to go.
    Length(u64),
    /// The chunked coding, being decoded.
    Chunked(Chunked),
    /// The body broke (its framing, a stall, the client left); every read fails like this.
    Failed(io::ErrorKind),
}

/// The connection and what was read from it, shared by the connection's loop and the body of
/// the request in flight (both run in the connection's task, never at the same instant).
pub(crate) struct Conn {
    pub(crate) io: Box<dyn Io>,
    /// Bytes read and not yet handed on.
    pub(crate) buf: BytesMut,
    pub(crate) body: BodyState,
    /// Bytes of [`CONTINUE`] still to write before the body is read.
    pub(crate) continue_left: usize,
    pub(crate) body_timeout: Duration,
    /// Longest wait for one response write to be taken by the client.
    pub(crate) send_timeout: Duration,
    /// The body timeout, armed while a body read waits.
    pub(crate) stall: Deadline,
}

pub(crate) type Shared = Arc<Mutex<Conn>>;

pub(crate) fn lock(conn: &Shared) -> MutexGuard<'_, Conn> {
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Conn {
    /// Reads more into `buf`; `Ready(Ok(0))` at the end of the stream. Reads into the spare
    /// capacity without zeroing it first (`tokio_util::io::poll_read_buf`).
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let want = match self.body {
            BodyState::Length(n) => (n.min(READ_MAX as u64) as usize).max(READ_CHUNK),
            _ => READ_CHUNK,
        };
        if self.buf.capacity() - self.buf.len() < want.min(READ_CHUNK) / 4 {
            self.buf.reserve(want);
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buf)
    }

    /// Lets go of the read buffer once everything in it was handed on: a connection between
    /// requests keeps none, and the bytes handed on keep only what they need alive.
    pub(crate) fn release(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    /// Writes what is left of `100 Continue`.
    fn poll_continue(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.continue_left > 0 {
            let start = CONTINUE.len() - self.continue_left;
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &CONTINUE[start..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.continue_left -= n;
        }
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// Arms the body timeout when a read must wait; true once it has passed.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let after = self.body_timeout;
        self.stall.expired(cx, || Instant::now() + after)
    }

    fn fail(&mut self, kind: io::ErrorKind) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        debug!(side = "downstream", ?kind, "request body failed");
        self.body = BodyState::Failed(kind);
        Poll::Ready(Some(Err(body_error(kind))))
    }

    /// The next piece of the request body.
    pub(crate) fn poll_body(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if let BodyState::Failed(kind) = self.body {
            return Poll::Ready(Some(Err(body_error(kind))));
        }
        if self.body != BodyState::Done && self.continue_left > 0 {
            if let Err(error) = ready!(self.poll_continue(cx)) {
                return self.fail(error.kind());
            }
        }
        loop {
            match &mut self.body {
                BodyState::Done => return Poll::Ready(None),
                BodyState::Failed(kind) => return Poll::Ready(Some(Err(body_error(*kind)))),
                BodyState::Length(left) if !self.buf.is_empty() => {
                    let take = (self.buf.len() as u64).min(*left) as usize;
                    let data = self.buf.split_to(take).freeze();
                    *left -= take as u64;
                    if *left == 0 {
                        self.body = BodyState::Done;
                    }
                    self.stall.disarm();
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                BodyState::Chunked(chunked) => match chunked.step(&self.buf) {
                    Ok(Step::Framing(n)) => {
                        self.buf.advance(n);
                        continue;
                    }
                    Ok(Step::Data(n)) => {
                        let data = self.buf.split_to(n).freeze();
                        self.stall.disarm();
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Ok(Step::Done(n)) => {
                        // Trailers were checked like header fields; they are not forwarded.
                        self.buf.advance(n);
                        self.body = BodyState::Done;
                        return Poll::Ready(None);
                    }
                    Ok(Step::Partial) => {}
                    Err(_) => return self.fail(io::ErrorKind::InvalidData),
                },
                BodyState::Length(_) => {}
            }
            match self.poll_fill(cx) {
                Poll::Ready(Ok(0)) => return self.fail(io::ErrorKind::UnexpectedEof),
                Poll::Ready(Ok(_)) => self.stall.disarm(),
                Poll::Ready(Err(error)) => return self.fail(error.kind()),
                Poll::Pending => {
                    if self.stalled(cx) {
                        return self.fail(io::ErrorKind::TimedOut);
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// The error a failed request body reports; the kind tells a stall (408) from the rest (400).
fn body_error(kind: io::ErrorKind) -> BodyError {
    let why = match kind {
        io::ErrorKind::TimedOut => "request body stalled past the body timeout",
        io::ErrorKind::InvalidData => "request body breaks HTTP/1.1 chunked framing",
        io::ErrorKind::UnexpectedEof => "client closed the connection before the body ended",
        _ => "reading the request body failed",
    };
    BodyError::DownstreamH1(io::Error::new(kind, why))
}

/// A request body read from its HTTP/1.x connection as the intermediary asks for it.
pub(crate) struct H1Recv(pub(crate) Shared);

impl std::fmt::Debug for H1Recv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("H1Recv").field(&lock(&self.0).body).finish()
    }
}

impl H1Recv {
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        lock(&self.0).poll_body(cx)
    }

    pub(crate) fn is_end_stream(&self) -> bool {
        lock(&self.0).body == BodyState::Done
    }

    pub(crate) fn size_hint(&self) -> SizeHint {
        match lock(&self.0).body {
            BodyState::Done => SizeHint::with_exact(0),
            BodyState::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}
