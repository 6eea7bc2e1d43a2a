//! A raw HTTP/2 client: frames written and read by hand (RFC 9113 §4, HPACK literals of RFC 7541
//! §6.2.2), for requests a client library refuses to send — a connection-specific field, say —
//! so that what reaches the server is exactly what the test wrote.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::support::PATIENCE;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// RFC 9113 §7.
pub const PROTOCOL_ERROR: u32 = 0x1;

/// One frame as read.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// How the server ended one stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A response HEADERS frame with this `:status`.
    Status(u16),
    /// RST_STREAM with this error code.
    Reset(u32),
    /// GOAWAY with this error code before the stream was answered.
    GoAway(u32),
    /// The connection closed before the stream was answered.
    Closed,
}

/// A raw HTTP/2 connection.
pub struct RawH2<S> {
    stream: S,
}

impl<S: AsyncRead + AsyncWrite + Unpin> RawH2<S> {
    /// Sends the preface and an empty SETTINGS frame.
    pub async fn start(mut stream: S) -> Self {
        stream.write_all(PREFACE).await.unwrap();
        let mut raw = Self { stream };
        raw.frame(SETTINGS, 0, 0, &[]).await;
        raw
    }

    /// Writes one frame.
    pub async fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        bytes.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
        bytes.extend_from_slice(payload);
        self.stream.write_all(&bytes).await.unwrap();
    }

    /// A request HEADERS frame (END_HEADERS, and END_STREAM when `end_stream`) whose fields are
    /// all HPACK literals without indexing, new names, no Huffman coding: the bytes of every
    /// name and value go on the wire as given.
    pub async fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) {
        let mut block = Vec::new();
        for (name, value) in fields {
            block.push(0x00);
            literal(&mut block, name.as_bytes());
            literal(&mut block, value.as_bytes());
        }
        let flags = END_HEADERS | if end_stream { END_STREAM } else { 0 };
        self.frame(HEADERS, flags, stream, &block).await;
    }

    /// The next frame, or `None` at EOF; panics if none comes within [`PATIENCE`].
    pub async fn read_frame(&mut self) -> Option<Frame> {
        tokio::time::timeout(PATIENCE, async {
            let mut head = [0u8; 9];
            self.stream.read_exact(&mut head).await.ok()?;
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            self.stream.read_exact(&mut payload).await.ok()?;
            Some(Frame {
                kind: head[3],
                flags: head[4],
                stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
                payload,
            })
        })
        .await
        .expect("a frame (or EOF) in time")
    }

    /// Reads frames (acknowledging the server's SETTINGS) until `stream` is answered, reset, or
    /// the connection goes away.
    pub async fn outcome(&mut self, stream: u32) -> Outcome {
        loop {
            let Some(frame) = self.read_frame().await else {
                return Outcome::Closed;
            };
            match frame.kind {
                SETTINGS if frame.flags & ACK == 0 => self.frame(SETTINGS, ACK, 0, &[]).await,
                HEADERS if frame.stream == stream => {
                    return Outcome::Status(status(&frame.payload));
                }
                RST_STREAM if frame.stream == stream => {
                    return Outcome::Reset(u32::from_be_bytes(
                        frame.payload[..4].try_into().unwrap(),
                    ));
                }
                GOAWAY => {
                    return Outcome::GoAway(u32::from_be_bytes(
                        frame.payload[4..8].try_into().unwrap(),
                    ));
                }
                _ => {}
            }
        }
    }
}

fn literal(block: &mut Vec<u8>, bytes: &[u8]) {
    assert!(bytes.len() < 127, "a one-byte HPACK length");
    block.push(bytes.len() as u8);
    block.extend_from_slice(bytes);
}

/// The `:status` of a response header block. A server's encoder sends the statuses of the
/// static table (RFC 7541 Appendix A) as one indexed byte, and others as a literal with the
/// indexed name `:status` (indices 8 to 14), its value plain or Huffman-coded (digits only,
/// Appendix B); a header block that starts with anything else reads as 0, which no assertion
/// expects.
pub fn status(block: &[u8]) -> u16 {
    match block.first() {
        Some(0x88) => 200,
        Some(0x89) => 204,
        Some(0x8a) => 206,
        Some(0x8b) => 304,
        Some(0x8c) => 400,
        Some(0x8d) => 404,
        Some(0x8e) => 500,
        // Literal with incremental indexing (6-bit index) or without (4-bit index).
        Some(&b)
            if (b & 0xc0 == 0x40 && (8..=14).contains(&(b & 0x3f)))
                || (b & 0xe0 == 0x00 && (8..=14).contains(&(b & 0x0f))) =>
        {
            literal_status(&block[1..]).unwrap_or(0)
        }
        _ => 0,
    }
}

/// A three-digit status value (RFC 7541 §5.2), plain or Huffman-coded.
fn literal_status(value: &[u8]) -> Option<u16> {
    let (&head, rest) = value.split_first()?;
    let len = usize::from(head & 0x7f);
    let bytes = rest.get(..len)?;
    let digits = if head & 0x80 == 0 {
        bytes.to_vec()
    } else {
        // Appendix B: '0' to '2' are the 5-bit codes 0 to 2, '3' to '9' the 6-bit codes 0x19
        // to 0x1f; the padding is the most significant bits of EOS (all ones).
        let bits: Vec<u8> = bytes
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
            .collect();
        let (mut at, mut out) = (0, Vec::new());
        while out.len() < 3 && at + 5 <= bits.len() {
            let five = bits[at..at + 5].iter().fold(0u8, |v, b| v << 1 | b);
            if five < 3 {
                out.push(b'0' + five);
                at += 5;
            } else {
                let six = (five << 1) | *bits.get(at + 5)?;
                if !(0x19..=0x1f).contains(&six) {
                    return None;
                }
                out.push(b'3' + (six - 0x19));
                at += 6;
            }
        }
        out
    };
    std::str::from_utf8(&digits).ok()?.parse().ok()
}
