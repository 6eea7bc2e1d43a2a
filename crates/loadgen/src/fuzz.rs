//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`, never in production
//! builds): the parsers of what a server sends, reached without sockets or a runtime.
//!
//! - [`h2_conn`]: the HTTP/2 connection state machine fed server bytes and client actions.
//! - [`HpackDecoder`], [`huffman_decode`]: HTTP/2 header decompression.
//! - [`http1_exchange`]: one HTTP/1.1 exchange against scripted response bytes.
//! - [`sse_events`]: the server-sent event parser fed a stream in pieces.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use gatebench_model::Outcome;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use crate::http2::fuzz::{conn as h2_conn, huffman_decode, HpackDecoder, HpackHead};

use crate::config::Target;
use crate::http1::H1Conn;
use crate::request::{RequestBody, RequestTemplate};

/// How one HTTP/1.1 exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Http1Result {
    /// A complete response: its class, bytes read, and whether the connection is reusable.
    Answer {
        /// `Ok`, a status class or `BodyMismatch`.
        outcome: Outcome,
        /// Response bytes read.
        bytes_read: u64,
        /// Whether the next request may use the connection.
        reusable: bool,
    },
    /// No complete response.
    Failure {
        /// `Incomplete`, `ProtocolError`, …
        outcome: Outcome,
        /// Response bytes read before the failure.
        bytes_read: u64,
    },
}

/// Sends one request (`method`, with `body` when not empty; `verify` compares a 2xx body with
/// it) to a server that answers with `pieces`, one read each, then closes.
///
/// # Panics
/// When the exchange does not finish although every read is ready (it would hang).
pub fn http1_exchange(pieces: &[&[u8]], method: &str, body: &[u8], verify: bool) -> Http1Result {
    let target = Target::parse("http://127.0.0.1:8080/echo").expect("a valid URL");
    let body = if body.is_empty() {
        RequestBody::None
    } else {
        RequestBody::Inline(body.to_vec())
    };
    let req = RequestTemplate::encode(&target, method, &[], body, true).expect("a valid request");
    let mut conn = H1Conn::new(Script {
        reads: pieces.iter().rev().map(|p| p.to_vec()).collect(),
    });
    let mut exchange = std::pin::pin!(conn.exchange(&req, verify));
    match exchange
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(a)) => Http1Result::Answer {
            outcome: a.outcome,
            bytes_read: a.bytes_read,
            reusable: a.reusable,
        },
        Poll::Ready(Err(f)) => Http1Result::Failure {
            outcome: f.outcome,
            bytes_read: f.bytes_read,
        },
        Poll::Pending => panic!("the exchange waits although every read is ready"),
    }
}

/// A server that answers with scripted reads, then EOF; it accepts every write.
struct Script {
    /// Reads still to come, last first.
    reads: Vec<Vec<u8>>,
}

impl AsyncRead for Script {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
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

impl AsyncWrite for Script {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What the event-stream parser made of a stream: each event dispatched as (type, data, last
/// event id, sender's stamp), whether it refused the stream (an event over `max_data`), and whether the stream
/// ended inside an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseResult {
    /// The events, in order.
    pub events: Vec<SseEvent>,
    /// An event grew past `max_data` (feeding stopped there).
    pub too_large: bool,
    /// The stream ended inside an event (meaningless when `too_large`).
    pub mid_event: bool,
}

/// One dispatched event: its type, data, last event id and the sender's stamp.
pub type SseEvent = (Vec<u8>, Vec<u8>, Vec<u8>, Option<u64>);

/// Feeds `pieces` to a parser holding at most `max_data` bytes of data.
pub fn sse_events(pieces: &[&[u8]], max_data: usize) -> SseResult {
    let mut parser = crate::sse::SseParser::new(max_data);
    let mut events = Vec::new();
    for piece in pieces {
        let fed = parser.feed(piece, |e| {
            events.push((e.kind.to_vec(), e.data.to_vec(), e.id.to_vec(), e.sent));
        });
        if fed.is_err() {
            return SseResult {
                events,
                too_large: true,
                mid_event: true,
            };
        }
    }
    SseResult {
        events,
        too_large: false,
        mid_event: parser.mid_event(),
    }
}

/// Longest event type and id the parser keeps.
pub const SSE_MAX_NAME: usize = crate::sse::MAX_NAME;
