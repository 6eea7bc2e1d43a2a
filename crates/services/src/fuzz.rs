//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`, never in production
//! builds): the parsers of what clients and upstreams send, reached without a listener.
//!
//! - [`h1check`]: the strict request checker over a scripted client connection.
//! - [`h1client_response`]: the upstream client's response head and body parsing.
//!
//! The JSON → XML converter is public already ([`crate::json_xml`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use crate::h1client::fuzz::{response as h1client_response, H1ClientResponse};

use crate::h1check::{H1Limits, StrictH1};

/// What the checker passed on to hyper, and how its stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H1CheckRun {
    /// Every byte hyper would have read, in order (a refused head shows as the synthetic
    /// `X-GB-REJECT /<status>` request).
    pub passed: Vec<u8>,
    /// How the stream ended.
    pub end: H1CheckEnd,
}

/// How the checked stream ended for hyper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H1CheckEnd {
    /// A clean end of stream.
    Eof,
    /// A read error: a body broke its framing.
    Error,
    /// Reads wait forever: a head was refused and hyper answers it.
    Refused,
}

/// The checker's limits (the timeouts are an hour, out of the fuzzer's way).
#[derive(Debug, Clone, Copy)]
pub struct H1CheckLimits {
    /// Longest request line.
    pub max_request_line: usize,
    /// Largest head and trailer section.
    pub max_head: usize,
    /// Largest Content-Length.
    pub max_body: u64,
}

/// Reads a client connection that sends `pieces` (one read each) and then closes, through
/// the strict checker, with reads of `read_size` bytes as hyper would make them.
///
/// # Panics
/// When the checker passes on more than it was given (a loop), or never ends.
pub fn h1check(
    pieces: &[&[u8]],
    sniff_h2: bool,
    read_size: usize,
    limits: H1CheckLimits,
) -> H1CheckRun {
    let limits = Arc::new(H1Limits {
        max_request_line: limits.max_request_line,
        max_head: limits.max_head,
        max_body: limits.max_body,
        head_timeout: Duration::from_secs(3600),
        body_timeout: Duration::from_secs(3600),
    });
    let given: usize = pieces.iter().map(|p| p.len()).sum();
    let script = Script {
        reads: pieces.iter().rev().map(|p| p.to_vec()).collect(),
    };
    let mut checker = StrictH1::new(script, limits, sniff_h2);
    let mut cx = Context::from_waker(Waker::noop());
    let mut passed = Vec::new();
    let mut buf = vec![0u8; read_size.max(1)];
    let end = loop {
        let mut rb = ReadBuf::new(&mut buf);
        match Pin::new(&mut checker).poll_read(&mut cx, &mut rb) {
            Poll::Ready(Ok(())) if rb.filled().is_empty() => break H1CheckEnd::Eof,
            Poll::Ready(Ok(())) => passed.extend_from_slice(rb.filled()),
            Poll::Ready(Err(_)) => break H1CheckEnd::Error,
            Poll::Pending => break H1CheckEnd::Refused,
        }
        assert!(
            passed.len() <= given + 64,
            "{} bytes passed on from {given}",
            passed.len()
        );
    };
    H1CheckRun { passed, end }
}

/// A client that sends scripted reads, then closes; it accepts every write.
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
