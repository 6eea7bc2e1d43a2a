//! A lean HTTP/1.1 client connection: writes a pre-encoded request, reads one response.
//!
//! This is the hot path (wrk's design: a hand-written client over a fast parser rather than a
//! general HTTP library). Per request it does one write and, for a small response, one read:
//! the response head and the chunked coding are read with `gatebench-h1`, the strict HTTP/1.1
//! framing rules the reference proxy uses too (CRLF line ends only, one plain Content-Length,
//! Transfer-Encoding only as one `chunked`, strict chunk sizes, trailers parsed as fields; a
//! response breaking them is a protocol error). The body is framed by Content-Length, chunked
//! coding or connection close (RFC 9112 §6.3) and counted, not kept, except where verification
//! compares it with the expected bytes. Parsing works on the receive buffer in place: nothing
//! is allocated or copied per request.
//!
//! One request is in flight at a time, never pipelined: a byte the server sends while none is
//! outstanding is a protocol error, never the next response — of the exchange when it is there
//! as the response completes (buffered or ready on the socket, whatever the reads), of the next
//! request, unsent, when it is found just before that request is written
//! ([`H1Conn::stray_before_reuse`]; docs/architecture.md, "HTTP/1.1").
//!
//! It is generic over the byte stream so TLS wraps the same code. Timeouts and the run deadline
//! are the caller's business; a response that never arrives simply never completes here.

use std::mem::MaybeUninit;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use gatebench_h1::{BodyLength, Chunked, Step};
use gatebench_model::Outcome;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::body::BodyCheck;
use crate::exchange::{classify_io, Answer, Failure};
use crate::mark::MarkTable;
use crate::request::RequestTemplate;
use crate::stream::{is_event_stream, StreamWatch};

/// Receive buffer per connection. Response heads and trailer sections must fit in it.
const BUF_SIZE: usize = 16 * 1024;

/// One HTTP/1.1 connection.
#[derive(Debug)]
pub(crate) struct H1Conn<S> {
    io: S,
    buf: Box<[u8]>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Stream mode: how responses are read as events (`stream`).
    stream: Option<StreamWatch>,
    /// Stream mode: this response is read as a stream (a 2xx, once its head came).
    streaming: bool,
    /// Stream mode: when the last read returned (the instant its bytes arrived).
    read_at: Instant,
    /// `--mark-header`: the worker's table of the header's values.
    marks: Option<Rc<MarkTable>>,
    /// The marked value of the last head parsed.
    mark: Option<u8>,
}

/// What a read that does not wait found.
enum Ready {
    /// Nothing yet.
    Nothing,
    /// Bytes (counted, then dropped).
    Bytes,
    /// The end of the stream.
    Eof,
    /// A read error, by class.
    Failed(Outcome),
}

/// Parsed essentials of a response head.
struct Head {
    status: u16,
    len: usize,
    body: BodyLength,
    keep_alive: bool,
    /// Stream mode: the Content-Type is `text/event-stream`.
    event_stream: bool,
    /// `--mark-header`: the number of the marked header's value.
    mark: Option<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> H1Conn<S> {
    /// Wraps an established stream.
    pub(crate) fn new(io: S) -> Self {
        H1Conn {
            io,
            buf: vec![0u8; BUF_SIZE].into_boxed_slice(),
            start: 0,
            end: 0,
            stream: None,
            streaming: false,
            read_at: Instant::now(),
            marks: None,
            mark: None,
        }
    }

    /// Marks each response with the value of the table's header (`--mark-header`).
    pub(crate) fn with_marks(mut self, marks: Option<Rc<MarkTable>>) -> Self {
        self.marks = marks;
        self
    }

    /// Reads responses as streams of events through `watch` (stream mode).
    pub(crate) fn with_stream(mut self, watch: Option<StreamWatch>) -> Self {
        self.stream = watch;
        self
    }

    /// The stream watch, to begin each request's stream.
    pub(crate) fn stream_mut(&mut self) -> Option<&mut StreamWatch> {
        self.stream.as_mut()
    }

    /// Sends `req` and reads its response. `verify` compares a 2xx body with the request body
    /// (when there is one).
    pub(crate) async fn exchange(
        &mut self,
        req: &RequestTemplate,
        verify: bool,
    ) -> Result<Answer, Failure> {
        self.streaming = false;
        self.mark = None;
        // flush: a no-op on TCP, pushes the records out on TLS.
        let written = match self.io.write_all(req.bytes()).await {
            Ok(()) => self.io.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            return Err(Failure {
                outcome: classify_io(&e),
                bytes_read: 0,
            });
        }
        let mut read = 0u64;
        match self.read_response(req, verify, &mut read).await {
            Ok((outcome, reusable)) => Ok(Answer {
                outcome,
                bytes_read: read,
                reusable,
                mark: self.mark.take(),
            }),
            Err(outcome) => Err(Failure {
                outcome,
                bytes_read: read,
            }),
        }
    }

    async fn read_response(
        &mut self,
        req: &RequestTemplate,
        verify: bool,
        read: &mut u64,
    ) -> Result<(Outcome, bool), Outcome> {
        let head = loop {
            let head = match self.parse_head(req.head_only())? {
                Some(h) => h,
                None => {
                    self.fill(read).await?;
                    continue;
                }
            };
            self.start += head.len;
            // Interim responses (100 Continue, 103 Early Hints) precede the final one.
            if (100..200).contains(&head.status) && head.status != 101 {
                continue;
            }
            if head.status == 101 {
                return Err(Outcome::ProtocolError);
            }
            break head;
        };
        self.mark = head.mark;
        let mut outcome = req.outcome_of(head.status);
        if outcome == Outcome::Ok && !req.head_only() {
            if let Some(w) = self.stream.as_mut() {
                w.head(self.read_at, head.event_stream)?;
                self.streaming = true;
            }
        }
        let expected = (verify && outcome == Outcome::Ok && !req.head_only()).then(|| req.body());
        let mut check = BodyCheck::new(expected.map(|b| &b[..]).filter(|b| !b.is_empty()));
        match head.body {
            BodyLength::None => {}
            BodyLength::Length(mut left) => {
                while left > 0 {
                    if self.start == self.end {
                        self.fill(read).await?;
                    }
                    let n =
                        (self.end - self.start).min(usize::try_from(left).unwrap_or(usize::MAX));
                    check.feed(&self.buf[self.start..self.start + n]);
                    self.stream_body(self.start, self.start + n)?;
                    self.start += n;
                    left -= n as u64;
                }
            }
            BodyLength::Chunked => self.read_chunked(&mut check, read).await?,
            BodyLength::UntilClose => loop {
                check.feed(&self.buf[self.start..self.end]);
                self.stream_body(self.start, self.end)?;
                self.start = self.end;
                match self.fill(read).await {
                    Ok(()) => {}
                    Err(Outcome::Incomplete) => break,
                    Err(o) => return Err(o),
                }
            },
        }
        // One request is in flight at a time (the client never pipelines), so a byte the
        // connection holds once the response is complete answers nothing that was sent: the
        // server framed this response wrongly (a body longer than its Content-Length, a body
        // after a 204 or a HEAD response, a response to a request it imagined). It is this
        // exchange's protocol error, and the connection closes; read as the next response it
        // would answer a request before it was sent. "Holds" is the buffer and what the
        // socket has ready now (one read that does not wait), not the read that happened to
        // complete the response: the outcome must not depend on how the server's bytes were
        // split into reads (the `http1_response` fuzz target checks it). Bytes that arrive
        // later are the next request's business (`stray_before_reuse`).
        let mut reusable = head.keep_alive && head.body != BodyLength::UntilClose;
        if self.start != self.end {
            self.start = 0;
            self.end = 0;
            return Err(Outcome::ProtocolError);
        }
        if head.body != BodyLength::UntilClose {
            match self.read_ready(read) {
                Ready::Bytes => return Err(Outcome::ProtocolError),
                // Broken after a complete answer: the answer stands, the connection does not.
                Ready::Failed(_) => reusable = false,
                // The end of the stream is the next exchange's to find (as before this check):
                // it is what the next read will return again.
                Ready::Nothing | Ready::Eof => {}
            }
        }
        if self.streaming {
            self.streaming = false;
            if let Some(w) = self.stream.as_mut() {
                w.end(self.read_at)?;
            }
        }
        if !check.matches() {
            outcome = Outcome::BodyMismatch;
        }
        Ok((outcome, reusable))
    }

    /// Stream mode: body bytes `buf[from..to]` go to the stream watch.
    fn stream_body(&mut self, from: usize, to: usize) -> Result<(), Outcome> {
        if self.streaming {
            if let Some(w) = self.stream.as_mut() {
                w.body(&self.buf[from..to], self.read_at)?;
            }
        }
        Ok(())
    }

    /// Before the next request is written on this kept connection: whether the server sent
    /// anything since the last response completed. Nothing may come before a request is
    /// written (the client never pipelines), so bytes here are a server's fault that arrived
    /// after the last exchange had been settled — a late tail of that response, or a response
    /// to nothing. The connection cannot carry the request: read as its response they would
    /// answer it before it was sent. Returns the class to count for the request that would
    /// have been sent (`ProtocolError` for bytes, the I/O class for a connection found
    /// broken) and the bytes read, or `None` when the connection looks usable (an end of
    /// stream is left for the exchange to find, as before this check).
    pub(crate) fn stray_before_reuse(&mut self) -> Option<(Outcome, u64)> {
        let mut read = 0;
        match self.read_ready(&mut read) {
            Ready::Bytes => Some((Outcome::ProtocolError, read)),
            Ready::Failed(outcome) => Some((outcome, read)),
            Ready::Nothing | Ready::Eof => None,
        }
    }

    /// One read of what the connection holds now, without waiting (a no-op waker: nothing is
    /// woken later for it). Used only where no byte may come; the buffer must be empty.
    fn read_ready(&mut self, read: &mut u64) -> Ready {
        debug_assert_eq!(self.start, self.end, "bytes already held");
        self.start = 0;
        self.end = 0;
        let mut cx = Context::from_waker(Waker::noop());
        let mut buf = ReadBuf::new(&mut self.buf[..]);
        match Pin::new(&mut self.io).poll_read(&mut cx, &mut buf) {
            Poll::Pending => Ready::Nothing,
            Poll::Ready(Ok(())) if buf.filled().is_empty() => Ready::Eof,
            Poll::Ready(Ok(())) => {
                *read += buf.filled().len() as u64;
                // Dropped: the connection is not used again.
                Ready::Bytes
            }
            Poll::Ready(Err(e)) => Ready::Failed(classify_io(&e)),
        }
    }

    /// Parses a response head from the buffer. `Ok(None)` when more bytes are needed.
    fn parse_head(&mut self, head_only: bool) -> Result<Option<Head>, Outcome> {
        let mut fields = [MaybeUninit::uninit(); gatebench_h1::MAX_FIELDS];
        let parsed =
            gatebench_h1::parse_response(&self.buf[self.start..self.end], BUF_SIZE, &mut fields);
        match parsed {
            Ok(Some(head)) => Ok(Some(Head {
                mark: self.marks.as_ref().and_then(|m| {
                    let f = head
                        .fields
                        .iter()
                        .find(|f| f.name.eq_ignore_ascii_case(m.name()))?;
                    m.id_of(f.value)
                }),
                status: head.status,
                len: head.len,
                body: head.framing.response_body(head.status, head_only),
                keep_alive: head.framing.persistent(head.http10),
                // Looked at only in stream mode.
                event_stream: self.stream.is_some()
                    && head.fields.iter().any(|f| {
                        f.name.eq_ignore_ascii_case("content-type") && is_event_stream(f.value)
                    }),
            })),
            Ok(None) => {
                if self.start == 0 && self.end == self.buf.len() {
                    return Err(Outcome::ProtocolError); // head larger than the buffer
                }
                Ok(None)
            }
            Err(_) => Err(Outcome::ProtocolError),
        }
    }

    /// Reads more bytes into the buffer. EOF is `Incomplete`. While a stream is read, a read
    /// that brings nothing before the stall time is `StreamStalled`.
    async fn fill(&mut self, read: &mut u64) -> Result<(), Outcome> {
        let stall_at = match (&self.stream, self.streaming) {
            (Some(w), true) => w.stall_at(),
            _ => return self.fill_now(read).await,
        };
        let filled = tokio::time::timeout_at(stall_at.into(), self.fill_now(read)).await;
        self.read_at = Instant::now();
        filled.unwrap_or(Err(Outcome::StreamStalled))
    }

    /// [`H1Conn::fill`] without the stall time.
    async fn fill_now(&mut self, read: &mut u64) -> Result<(), Outcome> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(Outcome::ProtocolError);
        }
        match self.io.read(&mut self.buf[self.end..]).await {
            Ok(0) => Err(Outcome::Incomplete),
            Ok(n) => {
                self.end += n;
                *read += n as u64;
                if self.stream.is_some() {
                    self.read_at = Instant::now();
                }
                Ok(())
            }
            Err(e) => Err(classify_io(&e)),
        }
    }

    /// Reads a chunked body (RFC 9112 §7.1) through the shared decoder, in place.
    async fn read_chunked(
        &mut self,
        check: &mut BodyCheck<&[u8]>,
        read: &mut u64,
    ) -> Result<(), Outcome> {
        let mut chunked = Chunked::new(BUF_SIZE);
        loop {
            match chunked.step(&self.buf[self.start..self.end]) {
                Ok(Step::Framing(n)) => self.start += n,
                Ok(Step::Data(n)) => {
                    check.feed(&self.buf[self.start..self.start + n]);
                    self.stream_body(self.start, self.start + n)?;
                    self.start += n;
                }
                Ok(Step::Done(n)) => {
                    self.start += n;
                    return Ok(());
                }
                Ok(Step::Partial) => self.fill(read).await?,
                Err(_) => return Err(Outcome::ProtocolError),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Target;
    use crate::request::RequestBody;

    fn template(method: &str, body: RequestBody) -> RequestTemplate {
        let t = Target::parse("http://127.0.0.1:1/").unwrap();
        RequestTemplate::encode(&t, method, &[], body, true).unwrap()
    }

    /// Runs one exchange against a scripted response (delivered in `pieces`).
    async fn run(pieces: &[&[u8]], req: &RequestTemplate, verify: bool) -> Result<Answer, Failure> {
        let mut builder = tokio_test_io::Builder::new();
        builder.write(req.bytes());
        for p in pieces {
            builder.read(p);
        }
        let mut conn = H1Conn::new(builder.build());
        conn.exchange(req, verify).await
    }

    /// A tiny scripted stream: the reads given, then EOF; writes are accepted and checked.
    mod tokio_test_io {
        use std::pin::Pin;
        use std::task::{Context, Poll};
        use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

        #[derive(Default)]
        pub struct Builder {
            reads: Vec<Vec<u8>>,
            written: Vec<u8>,
        }
        impl Builder {
            pub fn new() -> Self {
                Self::default()
            }
            pub fn write(&mut self, b: &[u8]) -> &mut Self {
                self.written.extend_from_slice(b);
                self
            }
            pub fn read(&mut self, b: &[u8]) -> &mut Self {
                self.reads.push(b.to_vec());
                self
            }
            pub fn build(&mut self) -> Mock {
                Mock {
                    reads: std::mem::take(&mut self.reads).into_iter().rev().collect(),
                    expect_written: std::mem::take(&mut self.written),
                    written: Vec::new(),
                }
            }
        }
        pub struct Mock {
            reads: Vec<Vec<u8>>,
            expect_written: Vec<u8>,
            written: Vec<u8>,
        }
        impl AsyncRead for Mock {
            fn poll_read(
                mut self: Pin<&mut Self>,
                _: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<std::io::Result<()>> {
                if let Some(mut next) = self.reads.pop() {
                    let n = next.len().min(buf.remaining());
                    buf.put_slice(&next[..n]);
                    if n < next.len() {
                        next.drain(..n);
                        self.reads.push(next);
                    }
                }
                Poll::Ready(Ok(()))
            }
        }
        impl AsyncWrite for Mock {
            fn poll_write(
                mut self: Pin<&mut Self>,
                _: &mut Context<'_>,
                b: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                self.written.extend_from_slice(b);
                assert!(self.expect_written.starts_with(&self.written));
                Poll::Ready(Ok(b.len()))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn content_length_response_split_across_reads() {
        let req = template("GET", RequestBody::None);
        let a = rt()
            .block_on(run(
                &[
                    b"HTTP/1.1 200 OK\r\nContent-Le",
                    b"ngth: 5\r\n\r\nhel",
                    b"lo",
                ],
                &req,
                false,
            ))
            .unwrap();
        assert_eq!(a.outcome, Outcome::Ok);
        assert!(a.reusable);
        assert_eq!(a.bytes_read, 43);
    }

    #[test]
    fn chunked_body_with_extension_and_trailer() {
        let req = template("GET", RequestBody::None);
        let resp: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n";
        let a = rt().block_on(run(&[resp], &req, false)).unwrap();
        assert_eq!(a.outcome, Outcome::Ok);
        assert!(a.reusable);
    }

    #[test]
    fn verify_compares_echoed_body() {
        let req = template("POST", RequestBody::Inline(b"hello".to_vec()));
        let good = rt()
            .block_on(run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"],
                &req,
                true,
            ))
            .unwrap();
        assert_eq!(good.outcome, Outcome::Ok);
        let bad = rt()
            .block_on(run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhellO"],
                &req,
                true,
            ))
            .unwrap();
        assert_eq!(bad.outcome, Outcome::BodyMismatch);
        let short = rt()
            .block_on(run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nhell"],
                &req,
                true,
            ))
            .unwrap();
        assert_eq!(short.outcome, Outcome::BodyMismatch);
        // Without verification the same wrong body is fine.
        let unchecked = rt()
            .block_on(run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhellO"],
                &req,
                false,
            ))
            .unwrap();
        assert_eq!(unchecked.outcome, Outcome::Ok);
    }

    #[test]
    fn status_classes_and_interim_responses() {
        let req = template("GET", RequestBody::None);
        let a = rt()
            .block_on(run(
                &[b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"],
                &req,
                false,
            ))
            .unwrap();
        assert_eq!(a.outcome, Outcome::Status5xx);
        let a = rt()
            .block_on(run(
                &[b"HTTP/1.1 404 No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"],
                &req,
                false,
            ))
            .unwrap();
        assert_eq!(a.outcome, Outcome::Status4xx);
        assert!(!a.reusable);
    }

    #[test]
    fn truncated_and_malformed_responses() {
        let req = template("GET", RequestBody::None);
        let cases: [(&[u8], Outcome); 7] = [
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                Outcome::Incomplete,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-", Outcome::Incomplete),
            (b"", Outcome::Incomplete),
            (b"garbage\r\n\r\n", Outcome::ProtocolError),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
                Outcome::ProtocolError,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
                Outcome::ProtocolError,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
                Outcome::ProtocolError,
            ),
        ];
        for (resp, want) in cases {
            let f = rt().block_on(run(&[resp], &req, false)).unwrap_err();
            assert_eq!(f.outcome, want, "{}", String::from_utf8_lossy(resp));
        }
    }

    /// Issue 23: bytes after a complete response are that exchange's protocol error, whatever
    /// reads they come in (in the read that completes the response, or ready in a later one),
    /// and never the next response.
    #[test]
    fn bytes_after_a_complete_response_are_that_exchange_s_protocol_error() {
        let get = template("GET", RequestBody::None);
        let head = template("HEAD", RequestBody::None);
        let cases: [(&RequestTemplate, &[u8], usize); 5] = [
            // A body longer than its Content-Length.
            (
                &get,
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokXY",
                40,
            ),
            // A second response nobody asked for, after a 204 and after a chunked body.
            (
                &get,
                b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
                27,
            ),
            (
                &get,
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nX",
                59,
            ),
            // A body after a HEAD response (the 204 the fuzz target found: four bytes after).
            (
                &head,
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody",
                38,
            ),
            (&get, b"HTTP/1.1 204 No Content\r\n\r\n\0\0\0\0", 27),
        ];
        for (req, resp, complete_at) in cases {
            let shown = String::from_utf8_lossy(resp);
            // Whole; cut where the response completes; cut into single bytes.
            let bytes: Vec<&[u8]> = resp.chunks(1).collect();
            for pieces in [
                vec![resp],
                vec![&resp[..complete_at], &resp[complete_at..]],
                bytes,
            ] {
                let f = rt().block_on(run(&pieces, req, false)).unwrap_err();
                assert_eq!(f.outcome, Outcome::ProtocolError, "{shown} in {pieces:?}");
                assert!(f.bytes_read > complete_at as u64, "{shown}");
            }
        }
        // The same responses framed right are fine and keep the connection, whatever the reads.
        let resp: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        for pieces in [vec![resp], resp.chunks(1).collect()] {
            let a = rt().block_on(run(&pieces, &get, false)).unwrap();
            assert!(a.outcome == Outcome::Ok && a.reusable, "{a:?}");
            assert_eq!(a.bytes_read, resp.len() as u64);
        }
    }

    /// Bytes that arrive after a response was settled, before the next request: found before
    /// that request is written, never parsed as its response.
    #[test]
    fn late_bytes_are_found_before_the_connection_is_used_again() {
        rt().block_on(async {
            let req = template("GET", RequestBody::None);
            let (client, mut server) = tokio::io::duplex(1024);
            let mut conn = H1Conn::new(client);
            let serve = async {
                let mut request = vec![0u8; req.bytes().len()];
                server.read_exact(&mut request).await.unwrap();
                server
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .unwrap();
            };
            let (answer, ()) = tokio::join!(conn.exchange(&req, false), serve);
            let answer = answer.unwrap();
            assert!(answer.outcome == Outcome::Ok && answer.reusable);
            // Nothing came since: the connection is fine.
            assert_eq!(conn.stray_before_reuse(), None);
            server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
            assert_eq!(
                conn.stray_before_reuse(),
                Some((Outcome::ProtocolError, 19))
            );
        });
    }

    #[test]
    fn close_delimited_body_and_http10() {
        let req = template("GET", RequestBody::None);
        let a = rt()
            .block_on(run(&[b"HTTP/1.1 200 OK\r\n\r\nall of it"], &req, false))
            .unwrap();
        assert_eq!(a.outcome, Outcome::Ok);
        assert!(!a.reusable);
        let a = rt()
            .block_on(run(
                &[b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"],
                &req,
                false,
            ))
            .unwrap();
        assert!(!a.reusable, "HTTP/1.0 without keep-alive closes");
    }

    #[test]
    fn head_response_has_no_body() {
        let req = template("HEAD", RequestBody::None);
        let a = rt()
            .block_on(run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"],
                &req,
                false,
            ))
            .unwrap();
        assert_eq!(a.outcome, Outcome::Ok);
        assert!(a.reusable);
    }

    #[test]
    fn framing_the_proxy_refuses_is_a_protocol_error() {
        // One set of framing rules with the reference proxy (gatebench-h1): what it refuses
        // from an upstream, the generator counts as a protocol error.
        let req = template("GET", RequestBody::None);
        let cases: [&[u8]; 6] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\nok\r\n0\r\n\r\n",
        ];
        for resp in cases {
            let f = rt().block_on(run(&[resp], &req, false)).unwrap_err();
            assert_eq!(
                f.outcome,
                Outcome::ProtocolError,
                "{}",
                String::from_utf8_lossy(resp)
            );
        }
    }
}
