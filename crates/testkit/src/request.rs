//! Just enough HTTP/1.1 request framing to keep a keep-alive connection in step: find the end of
//! the head (`\r\n\r\n`), read a `Content-Length` header case-insensitively, read that many body
//! bytes (RFC 9112 §6.3, rule 6).
//!
//! Deliberately not a parser. The request line and the other headers are not validated, and a
//! `Transfer-Encoding: chunked` request body is not supported: its bytes would be read as the next
//! request. The load generator sends `Content-Length` bodies, which is all these servers need.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Largest request head accepted; a bigger one ends the connection. Hard-coded: the load
/// generator's heads are a few hundred bytes.
const MAX_HEAD: usize = 64 * 1024;

/// Largest request body accepted; a bigger `Content-Length` ends the connection rather than
/// allocating whatever a buggy client announced.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Size of one read from the socket.
const READ_CHUNK: usize = 8 * 1024;

/// What the servers need to know about a request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The announced body length (0 without a `Content-Length` header).
    pub(crate) content_length: usize,
    /// The request line's method and target (`GET`, `/a?x=1`), as sent (lossy UTF-8).
    pub(crate) method: String,
    /// See `method`.
    pub(crate) target: String,
}

/// Reads requests one after the other from a byte stream, keeping bytes read past the current
/// request (pipelining) for the next one.
#[derive(Debug, Default)]
pub(crate) struct RequestReader {
    buf: Vec<u8>,
}

impl RequestReader {
    /// Reads up to the end of the next request head and consumes it.
    ///
    /// `Ok(None)` is a clean end of stream between requests. An end of stream inside a head is
    /// `UnexpectedEof`; a head over [`MAX_HEAD`] or a bad `Content-Length` is `InvalidData`.
    pub(crate) async fn read_head<R>(&mut self, io: &mut R) -> io::Result<Option<Head>>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        let mut scanned = 0;
        loop {
            if let Some(pos) = find(&self.buf[scanned..], b"\r\n\r\n") {
                let end = scanned + pos + 4;
                let content_length = content_length(&self.buf[..end])?;
                let line_end = find(&self.buf[..end], b"\r\n").unwrap_or(end);
                let line = String::from_utf8_lossy(&self.buf[..line_end]).into_owned();
                let mut parts = line.split(' ');
                let method = parts.next().unwrap_or_default().to_owned();
                let target = parts.next().unwrap_or_default().to_owned();
                self.buf.drain(..end);
                return Ok(Some(Head {
                    content_length,
                    method,
                    target,
                }));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "request head too large",
                ));
            }
            // The terminator may straddle two reads: rescan the last three bytes.
            scanned = self.buf.len().saturating_sub(3);
            if self.fill(io).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
    }

    /// Reads and consumes a body of `len` bytes following a head.
    pub(crate) async fn read_body<R>(&mut self, io: &mut R, len: usize) -> io::Result<Vec<u8>>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        if len > MAX_BODY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request body too large",
            ));
        }
        while self.buf.len() < len {
            if self.fill(io).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(self.buf.drain(..len).collect())
    }

    async fn fill<R>(&mut self, io: &mut R) -> io::Result<usize>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        let mut chunk = [0u8; READ_CHUNK];
        let n = io.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }
}

/// The value of the first `Content-Length` header of `head`, or 0 without one.
fn content_length(head: &[u8]) -> io::Result<usize> {
    // Skip the request line; header lines follow, each `name: value`.
    for line in head.split(|&b| b == b'\n').skip(1) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = line.split_at(colon);
        if !name.trim_ascii().eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        return std::str::from_utf8(value[1..].trim_ascii())
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad content-length"));
    }
    Ok(0)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// Hands out its bytes one at a time, so every boundary falls between two reads.
    struct OneByteAtATime<'a>(&'a [u8]);

    impl AsyncRead for OneByteAtATime<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some((first, rest)) = self.0.split_first() {
                buf.put_slice(&[*first]);
                self.0 = rest;
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn pipelined_requests_are_split_at_their_content_length() {
        let input = b"POST / HTTP/1.1\r\ncOnTeNt-LeNgTh:  5 \r\n\r\nhelloGET /x HTTP/1.1\r\nHost: a\r\n\r\n";
        for bytes_per_read in ["all", "one"] {
            let mut whole = &input[..];
            let mut slow = OneByteAtATime(input);
            let io: &mut (dyn AsyncRead + Unpin) = if bytes_per_read == "all" {
                &mut whole
            } else {
                &mut slow
            };
            let mut reader = RequestReader::default();
            let head = reader.read_head(io).await.unwrap().unwrap();
            assert_eq!(head.content_length, 5, "{bytes_per_read}");
            assert_eq!(reader.read_body(io, 5).await.unwrap(), b"hello");
            let head = reader.read_head(io).await.unwrap().unwrap();
            assert_eq!(head.content_length, 0, "{bytes_per_read}");
            assert!(reader.read_head(io).await.unwrap().is_none());
        }
    }

    #[tokio::test]
    async fn truncated_requests_and_bad_lengths_are_errors() {
        let mut reader = RequestReader::default();
        let err = reader
            .read_head(&mut &b"GET / HTTP/1.1\r\nHost"[..])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);

        let mut input = &b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"[..];
        let mut reader = RequestReader::default();
        let head = reader.read_head(&mut input).await.unwrap().unwrap();
        let err = reader
            .read_body(&mut input, head.content_length)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);

        let mut reader = RequestReader::default();
        let err = reader
            .read_head(&mut &b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"[..])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn an_endless_head_is_refused() {
        let mut input = vec![b'a'; MAX_HEAD + READ_CHUNK];
        input.extend_from_slice(b"\r\n\r\n");
        let err = RequestReader::default()
            .read_head(&mut &input[..])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
