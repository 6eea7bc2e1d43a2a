//! Strict HTTP/1.1 request framing in front of hyper: a stream wrapper that reads each request
//! head and body framing before hyper sees a byte of it, and refuses what docs/behaviour.md refuses.
//!
//! hyper's server parser is lenient where an intermediary must not be: it drops Content-Length
//! when Transfer-Encoding is present (RFC 9112 §6.3 allows a *server* to do so, but a proxy that
//! forwards such a request is the textbook request-smuggling vector), it accepts bare LF line
//! ends, leaves Host to the application, has no 408 and no total head deadline. [`StrictH1`]
//! sits between the socket and hyper and sees the same bytes in the same order. It passes on
//! only what it has checked:
//!
//! - a request head is held back until it is complete, parsed with httparse and checked against
//!   RFC 9112: one Host, valid (§3.2); Content-Length only as one plain decimal (§6.3, RFC 9110
//!   §8.6); Transfer-Encoding only as a single final `chunked`, never with Content-Length and
//!   never in HTTP/1.0 (§6.1, §6.3); CRLF line ends only (§2.2); no obs-fold and no CR/LF/NUL
//!   in values (§5.2, §5.5 — httparse refuses these); limits on the request line (414), the head
//!   (431) and a total deadline for it (408);
//! - a body is passed on as its framing says: Content-Length bytes, or chunks whose size lines
//!   are strict hex with overflow checks, each chunk followed by CRLF (§7.1), then trailer
//!   fields checked like header fields;
//! - the bytes after one message are checked as the next head, so pipelined requests cannot
//!   hide a second request in a body.
//!
//! The framing rules themselves (CRLF, Content-Length, Transfer-Encoding, the chunked coding)
//! are `gatebench-h1`'s, the ones the upstream client and the load generator apply to
//! responses; the request line, Host and the limits are this module's.
//!
//! A refused head is replaced by a short synthetic request ([`REJECT_METHOD`]) that hyper parses
//! and the service answers with the status and `Connection: close`: the answer then leaves in
//! order, after the answers to earlier pipelined requests. A framing error inside a body, where
//! an answer may already be on its way, becomes an I/O error that hyper reports as a broken body;
//! the connection closes. A connection closed while the client may still be sending lingers
//! (reads and discards for up to [`LINGER`]) so that the close does not become a reset that
//! destroys the answer before the client reads it (Apache's "lingering close").
//!
//! What it does not do: it does not decide anything else about responses, HTTP/2 (a cleartext
//! connection that opens with the HTTP/2 preface is passed through untouched) or body sizes of
//! chunked requests (the service counts those, on every protocol).

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use http::{Request, StatusCode};
use memchr::memchr;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

use gatebench_h1::{crlf_only, trim_ows, BodyLength, Chunked, Fields};

use crate::protocol::deadline::Deadline;

/// The method of the synthetic request that stands for a refused head. hyper parses it like any
/// extension method; a client that sends it is refused with 400 itself, so the service sees it
/// only from this module.
pub(crate) const REJECT_METHOD: &str = "X-GB-REJECT";
/// Largest number of header fields in a request head (the shared limit, hyper's default
/// too); more gets 431.
pub(crate) const MAX_HEADERS: usize = gatebench_h1::MAX_FIELDS;
/// How long a closed connection keeps reading (and discarding) what the client still sends.
pub(crate) const LINGER: Duration = Duration::from_secs(2);
/// Bytes read at once while a head is being assembled.
const HEAD_READ: usize = 4096;
/// The HTTP/2 connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Limits and deadlines of the request side of one listener.
#[derive(Debug, Clone)]
pub(crate) struct H1Limits {
    /// Longest request line; longer gets 414.
    pub max_request_line: usize,
    /// Largest head (request line and fields) and largest trailer section; larger gets 431.
    pub max_head: usize,
    /// A Content-Length above this gets 413 before a byte of the body is read.
    pub max_body: u64,
    /// Total time from the first byte of a head to its end; then 408 and close (slowloris).
    pub head_timeout: Duration,
    /// Longest wait for the next bytes of a request body; then the body fails and the
    /// connection closes.
    pub body_timeout: Duration,
    /// Longest wait for the client to take the next bytes of a response (HTTP/1.1: one
    /// write; HTTP/2: one piece of the body); then the connection (HTTP/2: the stream) is cut.
    pub send_timeout: Duration,
}

/// When a request head that arrives in pieces is parsed, so that a head trickled a byte at a
/// time costs linear work, not one parse from its first byte per read (quadratic: a 16 KiB head
/// byte by byte was 16,384 parses of up to 16 KiB). Issue 23.
///
/// The rule it keeps: the outcome of a head — passed on with its length and framing, refused
/// (and, where a limit decides, with which status), or dropped at the end of the stream — is
/// the one a parse of the same bytes read whole gives, however they were split into reads (the
/// `h1check` and `h1server` fuzz targets check it). A parse of a prefix that is not Partial is
/// final: more bytes do not change it. So the head is parsed at every point where that result
/// can first appear and is knowable without parsing, and at enough other points to bound how
/// late an error inside a line is found:
///
/// - a blank line after the request line (the head's end: accepted or refused). Empty lines
///   before the request line are skipped by the parse (RFC 9112 §2.2) and are not its end;
/// - a limit crossed, by length alone: the request line longer than `max_request_line` (414) or
///   the head longer than `max_head` (431), as [`parse_head`] decides them on a partial head;
/// - the head twice as long as at the last parse (the first bytes always): an invalid byte
///   inside a line (httparse stops at the first one) is found by then. The parses' lengths
///   double, so their sum is under twice the head's;
/// - by the caller: at the end of the stream and at the head deadline, where a partial head is
///   parsed once more so that it ends as the whole parse would (refused with its status rather
///   than dropped, or 408).
///
/// Each byte is searched for a line end once (two bytes back are looked at again for a blank
/// line that spans reads). An earlier version (taken back in aeb6e5e) parsed only at a blank
/// line or a limit: an invalid request line after empty lines, with no blank line before the
/// end of the stream, was refused when read whole and dropped when read in pieces.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HeadScan {
    /// Bytes of the head searched for line ends so far.
    scanned: usize,
    /// The head's length at the last parse (0: not parsed yet).
    parsed: usize,
    /// Bytes of empty lines (CR and LF) before the request line; final once `leading_done`.
    leading: usize,
    leading_done: bool,
    /// Where the request line ends (its LF), once seen.
    line_end: Option<usize>,
    /// The last LF found starting a blank line: each is worth one parse, not one per read.
    blank: Option<usize>,
}

impl HeadScan {
    /// Whether `head` (the bytes of one head so far from its first byte, maybe followed by
    /// more) is to be parsed now. Only the bytes added since the last call are searched.
    pub(crate) fn due(&mut self, head: &[u8], limits: &H1Limits) -> bool {
        let len = head.len();
        if len == 0 {
            return false;
        }
        #[cfg(test)]
        let leading_before = self.leading;
        if !self.leading_done {
            while self.leading < len && matches!(head[self.leading], b'\r' | b'\n') {
                self.leading += 1;
            }
            self.leading_done = self.leading < len;
        }
        let mut blank = false;
        let from = self.scanned.saturating_sub(2).max(self.leading);
        if self.leading_done && from < len {
            for i in memchr::memchr_iter(b'\n', &head[from..]).map(|i| i + from) {
                self.line_end.get_or_insert(i);
                if self.blank < Some(i)
                    && matches!(&head[i + 1..], [b'\n', ..] | [b'\r', b'\n', ..])
                {
                    self.blank = Some(i);
                    blank = true;
                }
            }
        }
        self.scanned = len;
        #[cfg(test)]
        tests::count_work(self.leading - leading_before + len.saturating_sub(from));
        // As `parse_head` measures a partial head's request line.
        let line = match self.line_end {
            Some(end) => end - self.leading,
            None => len - self.leading,
        };
        let over = line > limits.max_request_line || len > limits.max_head;
        let doubled = len >= self.parsed.saturating_mul(2);
        let due = blank || over || doubled;
        if due {
            self.parsed = len;
        }
        due
    }
}

/// The status a synthetic [`REJECT_METHOD`] request stands for, if `req` is one.
///
/// Only meaningful on HTTP/1 connections wrapped by [`StrictH1`]; callers check the version.
pub(crate) fn rejection<B>(req: &Request<B>) -> Option<StatusCode> {
    if req.method().as_str() != REJECT_METHOD {
        return None;
    }
    let code = req.uri().path().trim_start_matches('/');
    StatusCode::from_bytes(code.as_bytes()).ok()
}

/// Where the reader is in the request stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The first bytes of a cleartext connection that also serves h2c: maybe the preface.
    Sniff,
    /// An HTTP/2 connection: nothing is checked.
    Passthrough,
    /// Between messages or inside a head.
    Head,
    /// Inside a Content-Length body.
    Body { remaining: u64 },
    /// Inside a chunked body (size lines, data, trailers).
    Chunked(Chunked),
    /// A refused head was replaced by the synthetic request; nothing more is read.
    Rejected,
    /// A body broke its framing; every read fails.
    Failed,
}

/// What one pass over newly read bytes found.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// The first `ok` bytes are checked; the rest need more bytes.
    Progress(usize),
    /// The first `ok` bytes are checked; a head after them is refused with `status`.
    Reject { ok: usize, status: StatusCode },
    /// The first `ok` bytes are checked; a body's framing breaks after them.
    Fail { ok: usize },
}

/// How a checked head frames its body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    None,
    /// Content-Length bytes.
    Length(u64),
    /// The chunked coding.
    Chunked,
}

/// A stream that passes to hyper only checked HTTP/1.1 request bytes (see the module docs).
#[derive(Debug)]
pub(crate) struct StrictH1<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> {
    /// `None` only once dropped into the lingering task.
    inner: Option<S>,
    limits: Arc<H1Limits>,
    state: State,
    /// Bytes read but not yet given to hyper; the first `ready` of them are checked.
    held: BytesMut,
    ready: usize,
    /// When the first byte of the head being read arrived.
    head_started: Option<Instant>,
    /// When the head being read is parsed next.
    scan: HeadScan,
    /// Armed while a read waits: the head deadline or the body inactivity deadline.
    timer: Deadline,
    eof: bool,
    /// What reads report once [`State::Failed`]: broken framing or a stalled body.
    failure: io::ErrorKind,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> StrictH1<S> {
    /// Wraps an accepted connection. `sniff_h2`: the port also serves HTTP/2 by prior
    /// knowledge, so a connection opening with the preface is passed through.
    pub(crate) fn new(inner: S, limits: Arc<H1Limits>, sniff_h2: bool) -> Self {
        Self {
            inner: Some(inner),
            limits,
            state: if sniff_h2 { State::Sniff } else { State::Head },
            held: BytesMut::new(),
            ready: 0,
            head_started: None,
            scan: HeadScan::default(),
            timer: Deadline::default(),
            eof: false,
            failure: io::ErrorKind::InvalidData,
        }
    }

    fn inner(&mut self) -> Pin<&mut S> {
        Pin::new(
            self.inner
                .as_mut()
                .expect("inner stream present until drop"),
        )
    }

    /// Runs the state machine over `bytes`, which follow everything checked so far.
    fn advance(&mut self, bytes: &[u8]) -> Step {
        let mut pos = 0;
        loop {
            let rest = &bytes[pos..];
            match self.state {
                State::Sniff => {
                    let n = rest.len().min(H2_PREFACE.len());
                    if rest[..n] != H2_PREFACE[..n] {
                        self.state = State::Head;
                    } else if n == H2_PREFACE.len() {
                        self.state = State::Passthrough;
                    } else {
                        if n > 0 && self.head_started.is_none() {
                            self.head_started = Some(Instant::now());
                        }
                        return Step::Progress(pos);
                    }
                }
                State::Passthrough => return Step::Progress(bytes.len()),
                State::Head => {
                    if rest.is_empty() {
                        return Step::Progress(pos);
                    }
                    // At the end of the stream every head is parsed, as a whole read would be.
                    if !self.eof && !self.scan.due(rest, &self.limits) {
                        if self.head_started.is_none() {
                            self.head_started = Some(Instant::now());
                        }
                        return Step::Progress(pos);
                    }
                    match check_head(rest, &self.limits) {
                        Ok(Some((len, framing))) => {
                            pos += len;
                            self.head_started = None;
                            self.scan = HeadScan::default();
                            self.state = match framing {
                                Framing::None | Framing::Length(0) => State::Head,
                                Framing::Length(n) => State::Body { remaining: n },
                                // Trailer sections are limited like heads.
                                Framing::Chunked => {
                                    State::Chunked(Chunked::new(self.limits.max_head))
                                }
                            };
                        }
                        Ok(None) => {
                            if self.head_started.is_none() {
                                self.head_started = Some(Instant::now());
                            }
                            return Step::Progress(pos);
                        }
                        Err(status) => return Step::Reject { ok: pos, status },
                    }
                }
                State::Body { remaining } => {
                    if rest.is_empty() {
                        return Step::Progress(pos);
                    }
                    let n = remaining.min(rest.len() as u64);
                    pos += n as usize;
                    self.state = match remaining - n {
                        0 => State::Head,
                        remaining => State::Body { remaining },
                    };
                }
                State::Chunked(mut chunked) => match chunked.step(rest) {
                    Ok(gatebench_h1::Step::Framing(n) | gatebench_h1::Step::Data(n)) => {
                        pos += n;
                        self.state = State::Chunked(chunked);
                    }
                    Ok(gatebench_h1::Step::Done(n)) => {
                        pos += n;
                        self.state = State::Head;
                    }
                    Ok(gatebench_h1::Step::Partial) => {
                        self.state = State::Chunked(chunked);
                        return Step::Progress(pos);
                    }
                    Err(_) => return Step::Fail { ok: pos },
                },
                State::Rejected | State::Failed => return Step::Progress(pos),
            }
        }
    }

    /// Keeps the first `keep` held bytes (checked) and replaces everything after them with the
    /// synthetic request for `status`.
    fn reject(&mut self, keep: usize, status: StatusCode) {
        tracing::debug!(side = "downstream", %status, "refusing a request head");
        self.held.truncate(keep);
        self.held.extend_from_slice(REJECT_METHOD.as_bytes());
        self.held.extend_from_slice(b" /");
        self.held.extend_from_slice(status.as_str().as_bytes());
        self.held.extend_from_slice(b" HTTP/1.1\r\n\r\n");
        self.ready = self.held.len();
        self.state = State::Rejected;
        self.timer.disarm();
    }

    /// Keeps the first `keep` held bytes (checked) for hyper; every read after them fails.
    fn fail(&mut self, keep: usize) {
        tracing::debug!(
            side = "downstream",
            "request body breaks its framing or stalled"
        );
        self.held.truncate(keep);
        self.ready = keep;
        self.state = State::Failed;
        self.timer.disarm();
    }

    /// The deadline that applies while a read waits, if any: the head deadline is fixed from
    /// the head's first byte; the body deadline counts from when the wait began.
    fn deadline(&self) -> Option<Instant> {
        match self.state {
            State::Head | State::Sniff => self.head_started.map(|t| t + self.limits.head_timeout),
            State::Body { .. } | State::Chunked(_) => {
                Some(Instant::now() + self.limits.body_timeout)
            }
            State::Passthrough | State::Rejected | State::Failed => None,
        }
    }

    /// Called when the socket has nothing: arms the deadline and reports whether it passed.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> bool {
        let at = match self.timer.is_armed() {
            true => None,
            false => match self.deadline() {
                Some(at) => Some(at),
                None => return false,
            },
        };
        self.timer
            .expired(cx, || at.expect("a deadline when not armed"))
    }

    /// The status for a head whose deadline passed: what a parse of the partial head held now
    /// refuses it with (as a parse on each read would have, earlier), else 408.
    fn overdue_status(&self) -> StatusCode {
        let held = &self.held[self.ready..];
        match self.state {
            State::Head if !held.is_empty() => check_head(held, &self.limits)
                .err()
                .unwrap_or(StatusCode::REQUEST_TIMEOUT),
            _ => StatusCode::REQUEST_TIMEOUT,
        }
    }

    /// True when a head is being read and its deadline has passed (for a client that trickles
    /// bytes fast enough never to leave the socket empty).
    fn head_overdue(&self) -> bool {
        matches!(self.state, State::Head | State::Sniff)
            && self
                .head_started
                .is_some_and(|t| t.elapsed() >= self.limits.head_timeout)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncRead for StrictH1<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.ready > 0 {
                let n = this.ready.min(out.remaining());
                out.put_slice(&this.held[..n]);
                this.held.advance(n);
                this.ready -= n;
                if this.held.is_empty() {
                    // Idle connections keep no buffer of their own.
                    this.held = BytesMut::new();
                }
                return Poll::Ready(Ok(()));
            }
            match this.state {
                // hyper writes the refusal and closes; it needs nothing more from the client.
                State::Rejected => return Poll::Pending,
                State::Failed => {
                    let why = match this.failure {
                        io::ErrorKind::TimedOut => "request body stalled past the body timeout",
                        _ => "request body breaks HTTP/1.1 chunked framing",
                    };
                    return Poll::Ready(Err(io::Error::new(this.failure, why)));
                }
                State::Passthrough if this.held.is_empty() => {
                    return this.inner().poll_read(cx, out)
                }
                _ => {}
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            if this.held.is_empty() {
                // Fast path: read straight into hyper's buffer, keep back what is not checked.
                let before = out.filled().len();
                match this.inner().poll_read(cx, out) {
                    Poll::Pending => {
                        if this.poll_deadline(cx) {
                            on_deadline(this);
                            continue;
                        }
                        return Poll::Pending;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Ready(Ok(())) => {}
                }
                let got = out.filled().len() - before;
                if got == 0 {
                    this.eof = true;
                    return Poll::Ready(Ok(()));
                }
                this.timer.disarm();
                let step = this.advance(&out.filled()[before..]);
                let ok = match step {
                    Step::Progress(ok) => {
                        this.held.extend_from_slice(&out.filled()[before + ok..]);
                        ok
                    }
                    Step::Reject { ok, status } => {
                        this.reject(0, status);
                        ok
                    }
                    Step::Fail { ok } => {
                        this.fail(0);
                        ok
                    }
                };
                out.set_filled(before + ok);
                if ok > 0 {
                    return Poll::Ready(Ok(()));
                }
                if this.head_overdue() {
                    this.reject(0, this.overdue_status());
                }
                continue;
            }
            // Slow path: a head (or chunk line) arrives in pieces; gather them in `held`.
            let mut chunk = [MaybeUninit::<u8>::uninit(); HEAD_READ];
            let mut buf = ReadBuf::uninit(&mut chunk);
            match this.inner().poll_read(cx, &mut buf) {
                Poll::Pending => {
                    if this.poll_deadline(cx) {
                        on_deadline(this);
                        continue;
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            if buf.filled().is_empty() {
                // A partial head at EOF is dropped: hyper sees a quiet close. It is parsed once
                // more first (`advance` parses every head at the end): read whole, it would
                // have been, and refused if the parse refuses it.
                this.eof = true;
                if this.state == State::Head && this.ready == 0 {
                    let held = std::mem::take(&mut this.held);
                    let step = this.advance(&held);
                    this.held = held;
                    match step {
                        Step::Progress(ok) => this.ready = ok,
                        Step::Reject { ok, status } => this.reject(ok, status),
                        Step::Fail { ok } => this.fail(ok),
                    }
                }
                continue;
            }
            this.timer.disarm();
            this.held.extend_from_slice(buf.filled());
            let held = std::mem::take(&mut this.held);
            let step = this.advance(&held);
            this.held = held;
            match step {
                Step::Progress(ok) => this.ready = ok,
                Step::Reject { ok, status } => this.reject(ok, status),
                Step::Fail { ok } => this.fail(ok),
            }
            if this.ready == 0 && this.head_overdue() {
                this.reject(0, this.overdue_status());
            }
        }
    }
}

/// A deadline passed while the socket was empty: 408 for a head, a failed body otherwise.
fn on_deadline<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(this: &mut StrictH1<S>) {
    match this.state {
        State::Head | State::Sniff => this.reject(0, this.overdue_status()),
        _ => {
            this.fail(0);
            this.failure = io::ErrorKind::TimedOut;
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncWrite for StrictH1<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner().poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Drop for StrictH1<S> {
    /// Closes with a linger when the client may still be sending (a refused head, a body cut
    /// short): a close with unread data becomes a reset, which can destroy the answer in the
    /// client's receive buffer before it is read.
    fn drop(&mut self) {
        let mid_message = !matches!(self.state, State::Head | State::Passthrough | State::Sniff)
            || self.head_started.is_some();
        if !mid_message || self.eof {
            return;
        }
        let (Some(mut stream), Ok(runtime)) =
            (self.inner.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        runtime.spawn(async move {
            let mut sink = [0u8; 4096];
            let linger = async {
                stream.shutdown().await?;
                while stream.read(&mut sink).await? > 0 {}
                Ok::<(), io::Error>(())
            };
            let _ = tokio::time::timeout(LINGER, linger).await;
        });
    }
}

/// Checks one request head at the start of `buf`: `Ok(None)` when it is not complete yet,
/// `Ok(Some((length, framing)))` when it is complete and acceptable, `Err(status)` when it is
/// refused.
fn check_head(buf: &[u8], limits: &H1Limits) -> Result<Option<(usize, Framing)>, StatusCode> {
    parse_head(buf, limits, |_, _| ()).map(|head| head.map(|(len, framing, ())| (len, framing)))
}

/// [`check_head`] that also hands the parsed head, once accepted, to `build` with the address
/// of `buf`'s first byte (so that the parsed pieces, which point into `buf`, can be told as
/// offsets), and returns what it built: the one parse the direct HTTP/1 server needs.
pub(crate) fn parse_head<T>(
    buf: &[u8],
    limits: &H1Limits,
    build: impl FnOnce(&httparse::Request<'_, '_>, usize) -> T,
) -> Result<Option<(usize, Framing, T)>, StatusCode> {
    #[cfg(test)]
    tests::count_work(buf.len());
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            let start = leading_empty_lines(buf);
            let line = memchr(b'\n', &buf[start..]).unwrap_or(buf.len() - start);
            if line > limits.max_request_line {
                return Err(StatusCode::URI_TOO_LONG);
            }
            if buf.len() > limits.max_head {
                return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        }
        Err(_) => return Err(StatusCode::BAD_REQUEST),
    };
    let head = &buf[..len];
    let start = leading_empty_lines(head);
    let line = memchr(b'\n', &head[start..]).unwrap_or(0);
    if line > limits.max_request_line {
        return Err(StatusCode::URI_TOO_LONG);
    }
    if len > limits.max_head {
        return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    }
    // RFC 9112 §2.2: a bare LF is tolerated by some parsers and not others; refuse it.
    if !crlf_only(&head[start..]) {
        return Err(StatusCode::BAD_REQUEST);
    }
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    let http10 = req.version == Some(0);
    if method == REJECT_METHOD {
        return Err(StatusCode::BAD_REQUEST);
    }
    if method == "CONNECT" {
        // A reverse proxy has no tunnels to offer (RFC 9110 §9.3.6).
        return Err(StatusCode::METHOD_NOT_ALLOWED);
    }
    if !target_ok(method, target) {
        return Err(StatusCode::BAD_REQUEST);
    }
    let mut hosts = 0;
    let mut fields = Fields::new();
    for header in req.headers.iter() {
        if header.name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if !host_ok(trim_ows(header.value)) {
                return Err(StatusCode::BAD_REQUEST);
            }
        }
        // Content-Length only as one plain decimal (RFC 9110 §8.6).
        fields
            .field(header.name.as_bytes(), header.value)
            .map_err(|_| StatusCode::BAD_REQUEST)?;
    }
    // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
    if hosts > 1 || (hosts == 0 && !http10) {
        return Err(StatusCode::BAD_REQUEST);
    }
    // RFC 9112 §6.1: 501 for a coding we do not know; §6.3: 400 for anything we cannot frame
    // (not a single final chunked, with Content-Length, in HTTP/1.0, or Content-Length
    // repeated: RFC 9110 §8.6 lets a recipient accept repeated identical values, but a proxy in
    // front of parsers that may not is safer refusing every repetition).
    let framing = fields.finish(http10).map_err(|e| match e {
        gatebench_h1::Error::UnknownCoding => StatusCode::NOT_IMPLEMENTED,
        _ => StatusCode::BAD_REQUEST,
    })?;
    let framing = match framing.request_body() {
        BodyLength::Length(n) if n > limits.max_body => return Err(StatusCode::PAYLOAD_TOO_LARGE),
        BodyLength::Length(n) => Framing::Length(n),
        BodyLength::Chunked => Framing::Chunked,
        BodyLength::None | BodyLength::UntilClose => Framing::None,
    };
    let built = build(&req, buf.as_ptr() as usize);
    Ok(Some((len, framing, built)))
}

/// Bytes of empty lines before a request line (RFC 9112 §2.2 lets a server skip them).
fn leading_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    while i < buf.len() && (buf[i] == b'\r' || buf[i] == b'\n') {
        i += 1;
    }
    i
}

/// RFC 9112 §3.2: origin-form for every method, absolute-form (http/https), asterisk-form for
/// OPTIONS only; authority-form belongs to CONNECT, which is refused before this. The
/// authority of an absolute-form target replaces Host upstream (§3.2.2), so it is checked like
/// a Host: no userinfo (RFC 9110 §4.2.4: a sender "MUST NOT generate the userinfo
/// subcomponent"), a valid host and port.
fn target_ok(method: &str, target: &str) -> bool {
    let t = target.as_bytes();
    if t.first() == Some(&b'/') {
        return true;
    }
    if target == "*" {
        return method == "OPTIONS";
    }
    let scheme = if t.len() > 7 && t[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return false;
    };
    let rest = &t[scheme..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    !authority.is_empty() && host_ok(authority)
}

/// RFC 3986 §3.2.2/§3.2.3 `host [ ":" port ]` (an empty value is allowed: RFC 9112 §3.2).
fn host_ok(value: &[u8]) -> bool {
    let (host, port) = if value.first() == Some(&b'[') {
        let Some(close) = memchr(b']', value) else {
            return false;
        };
        let literal = &value[1..close];
        if literal.is_empty()
            || !literal
                .iter()
                .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match &value[close + 1..] {
            [] => return true,
            [b':', port @ ..] => (&value[..0], port),
            _ => return false,
        }
    } else {
        match value.iter().rposition(|&b| b == b':') {
            Some(i) => (&value[..i], &value[i + 1..]),
            None => (value, &value[..0]),
        }
    };
    let reg_name = |b: &u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            )
    };
    host.iter().all(reg_name) && port.len() <= 5 && port.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    thread_local! {
        /// Bytes of request heads examined on this thread: searched by [`HeadScan`] and handed
        /// to the parser (each parse counted at the full length it is given).
        static WORK: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count_work(bytes: usize) {
        WORK.with(|w| w.set(w.get() + bytes));
    }

    /// The work counted on this thread since the last call.
    pub(crate) fn take_work() -> usize {
        WORK.with(|w| w.replace(0))
    }

    fn limits() -> H1Limits {
        H1Limits {
            max_request_line: 64,
            max_head: 256,
            max_body: 1000,
            head_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            send_timeout: Duration::from_secs(1),
        }
    }

    fn status(raw: &[u8]) -> Result<Option<Framing>, u16> {
        check_head(raw, &limits())
            .map(|r| r.map(|(_, f)| f))
            .map_err(|s| s.as_u16())
    }

    #[test]
    fn framing_of_acceptable_heads() {
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"),
            Ok(Some(Framing::Length(5)))
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked \r\n\r\n"),
            Ok(Some(Framing::Chunked))
        );
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), Ok(Some(Framing::None)));
        assert_eq!(
            status(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(
            status(b"GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(
            status(b"\r\nGET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"),
            Ok(Some(Framing::None))
        );
    }

    #[test]
    fn smuggling_shapes_are_refused() {
        for (raw, code) in [
            (&b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..], 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo\r\n\r\n", 501),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n", 400),
            (b"GET / HTTP/1.1\nHost: a\n\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nX: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400),
            (b"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET https://u:p@a:443/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET http://a b/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET foo HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 405),
            (b"X-GB-REJECT /200 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n", 413),
        ] {
            assert_eq!(status(raw), Err(code), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn limits_give_414_and_431_before_the_head_is_complete() {
        let long_line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(100));
        assert_eq!(status(long_line.as_bytes()), Err(414));
        assert_eq!(status(&long_line.as_bytes()[..80]), Err(414));
        let big_head = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n", "b".repeat(300));
        assert_eq!(status(big_head.as_bytes()), Err(431));
        let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for _ in 0..MAX_HEADERS {
            many.extend_from_slice(b"X: 1\r\n");
        }
        many.extend_from_slice(b"\r\n");
        let wide = H1Limits {
            max_head: 100_000,
            ..limits()
        };
        assert_eq!(
            check_head(&many, &wide).map_err(|s| s.as_u16()).err(),
            Some(431)
        );
    }

    fn checker() -> StrictH1<tokio::io::DuplexStream> {
        let (a, _b) = tokio::io::duplex(64);
        StrictH1::new(a, Arc::new(limits()), false)
    }

    #[tokio::test]
    async fn pipelined_messages_are_checked_one_by_one() {
        let mut c = checker();
        let first = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n";
        let second = b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        let mut all = first.to_vec();
        all.extend_from_slice(second);
        assert_eq!(
            c.advance(&all),
            Step::Reject {
                ok: first.len(),
                status: StatusCode::BAD_REQUEST
            }
        );
    }

    #[tokio::test]
    async fn a_chunked_body_cannot_hide_a_request() {
        let mut c = checker();
        let raw = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloGET /smuggled HTTP/1.1\r\n\r\n";
        let head = raw.iter().position(|&b| b == b'5').unwrap();
        assert_eq!(c.advance(raw), Step::Fail { ok: head + 3 + 5 });
    }

    /// A client that sends `data` in reads of `piece` bytes, then closes; it takes every write.
    struct Trickle {
        data: Vec<u8>,
        piece: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self.piece.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// What the checker passes on from `data` read `piece` bytes at a time, and whether it
    /// refused (it then waits for hyper to answer: `Pending`).
    fn check_in_pieces(data: &[u8], piece: usize, limits: H1Limits) -> (Vec<u8>, bool) {
        let trickle = Trickle {
            data: data.to_vec(),
            piece,
        };
        let mut checker = StrictH1::new(trickle, Arc::new(limits), false);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut passed = Vec::new();
        // hyper's read buffer: large enough for the whole input in one read.
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let mut rb = ReadBuf::new(&mut buf);
            match Pin::new(&mut checker).poll_read(&mut cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return (passed, false),
                Poll::Ready(Ok(())) => passed.extend_from_slice(rb.filled()),
                Poll::Ready(Err(e)) => panic!("{e}"),
                Poll::Pending => return (passed, true),
            }
        }
    }

    fn wide() -> H1Limits {
        H1Limits {
            max_request_line: 8192,
            max_head: 64 * 1024,
            ..limits()
        }
    }

    /// Issue 23: a 16 KiB head trickled a byte at a time costs work linear in its length (it
    /// was a parse from its first byte per read: 16,384 parses, ~134 million bytes).
    #[tokio::test(flavor = "current_thread")]
    async fn a_head_trickled_a_byte_at_a_time_costs_linear_work() {
        let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        // Many lines (as many line ends as the field limit allows) and one long line (the
        // longest search).
        for i in 0..MAX_HEADERS - 2 {
            head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "p".repeat(70)).as_bytes());
        }
        head.extend_from_slice(b"X-Long: ");
        head.resize(16 * 1024 - 4, b'a');
        head.extend_from_slice(b"\r\n\r\n");
        assert_eq!(head.len(), 16 * 1024);
        take_work();
        let (passed, refused) = check_in_pieces(&head, 1, wide());
        let trickled = take_work();
        assert!(
            passed == head && !refused,
            "{} bytes passed on",
            passed.len()
        );
        let (passed, _) = check_in_pieces(&head, head.len(), wide());
        let whole = take_work();
        assert!(passed == head, "{} bytes passed on", passed.len());
        // Whole: one search and one parse. A byte at a time: each byte searched and looked at
        // again twice, parses of doubling lengths (under twice the head), the parse at the end.
        assert!(whole <= 2 * head.len(), "{whole}");
        assert!(trickled <= 7 * head.len(), "{trickled} bytes examined");
    }

    /// The shapes the resumed search of aeb6e5e got wrong, and their neighbours: empty lines
    /// before an invalid request line (with or without its end), an invalid byte mid-line with
    /// no line end before the close. Read whole, a byte at a time or in threes, each ends the
    /// same way: refused, or dropped at the close, with the same bytes passed on before.
    #[tokio::test(flavor = "current_thread")]
    async fn a_malformed_head_ends_the_same_whatever_the_reads() {
        let ok = &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..];
        let cases: [(&[u8], bool); 10] = [
            (b"\r\n\r\nG\x01T / HTTP/1.1", true),
            (b"\r\n\r\nG\x01T / HTTP/1.1\r\n", true),
            (b"\r\n\r\nBAD\r\n", true),
            (b"\n\nGET / HTTP/1.1\r\nHost: a\r\n", false),
            (b"\r\n\r\n\x01", true),
            (b"\r\r\nGET / HTTP/1.1\r\n", true),
            (b"GET / HTTP/1.1\r\nHo st: a", true),
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r", false),
            (b"GET / HTTP/1.1\r\nHost: a\r\n", false),
            (b"\r\n\r\n", false),
        ];
        for (shape, refused) in cases {
            for before in [&b""[..], ok] {
                let input = [before, shape].concat();
                let shown = String::from_utf8_lossy(&input).into_owned();
                let whole = check_in_pieces(&input, input.len(), limits());
                assert_eq!(whole.1, refused, "{shown:?} read whole");
                let passed = if refused {
                    [before, b"X-GB-REJECT /400 HTTP/1.1\r\n\r\n"].concat()
                } else {
                    before.to_vec()
                };
                assert_eq!(whole.0, passed, "{shown:?} read whole");
                for piece in [1, 3] {
                    assert_eq!(
                        check_in_pieces(&input, piece, limits()),
                        whole,
                        "{shown:?} in reads of {piece}"
                    );
                }
            }
        }
    }

    /// The direct HTTP/1 server (`h1::server`) over the same trickle: linear too.
    #[tokio::test(flavor = "current_thread")]
    async fn the_server_parses_a_trickled_head_in_linear_work() {
        use bytes::Bytes;
        use http::Response;

        use crate::protocol::body::{ClientBody, ResBody};
        use crate::protocol::h1::server::H1Handler;
        use crate::protocol::interim::Interim;
        use crate::protocol::Answer;

        struct Seen(Arc<std::sync::Mutex<Vec<String>>>);
        impl H1Handler for Seen {
            fn call_h1(&self, req: Request<ClientBody>, _: Option<Interim>) -> Answer {
                self.0.lock().unwrap().push(req.uri().to_string());
                Answer::Ready(Some(Response::new(ResBody::Local(Some(
                    Bytes::from_static(b"ok"),
                )))))
            }
            fn refuse(&self, status: StatusCode) -> Response<ResBody> {
                self.0.lock().unwrap().push(status.to_string());
                Response::new(ResBody::Local(None))
            }
        }

        let mut head = b"GET /trickled HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 0..MAX_HEADERS - 1 {
            head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "p".repeat(160)).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        assert!(head.len() > 16 * 1024, "{}", head.len());
        for piece in [1, head.len()] {
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let (_stop, mut drain) = tokio::sync::watch::channel(false);
            take_work();
            crate::protocol::h1::server::serve(
                Trickle {
                    data: head.clone(),
                    piece,
                },
                Arc::new(wide()),
                Duration::from_secs(30),
                Arc::new(Seen(seen.clone())),
                &mut drain,
            )
            .await;
            let work = take_work();
            assert_eq!(*seen.lock().unwrap(), ["/trickled"]);
            assert!(
                work <= 7 * head.len(),
                "{work} bytes examined, reads of {piece}"
            );
        }
    }

    #[tokio::test]
    async fn partial_input_is_held_back() {
        let mut c = checker();
        let raw = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nab";
        assert_eq!(c.advance(&raw[..10]), Step::Progress(0));
        assert_eq!(c.advance(raw), Step::Progress(raw.len()));
        assert_eq!(c.state, State::Body { remaining: 1 });
        assert_eq!(c.advance(b"cGET"), Step::Progress(1));
        assert_eq!(c.state, State::Head);
    }
}
