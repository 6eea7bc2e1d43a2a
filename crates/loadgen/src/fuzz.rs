//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`, never in production
//! builds): the parsers of what a server sends, reached without sockets or a runtime.
//!
//! - [`h2_conn`]: the HTTP/2 connection state machine fed server bytes and client actions.
//! - [`HpackDecoder`], [`huffman_decode`]: HTTP/2 header decompression.
//! - [`http1_exchange`]: one HTTP/1.1 exchange against scripted response bytes.

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
