//! gatebench's strict HTTP/1.1 framing rules (RFC 9112), in one place for both sides of the
//! tool: the load generator reading responses and the reference proxy reading requests and
//! upstream responses. Sans I/O: every function works on byte slices the caller owns, nothing
//! is allocated or copied, so the generator's hot path can use it as it stands.
//!
//! Where a sender can be read more than one way, the rule here refuses rather than guesses
//! (request smuggling and response splitting live in those gaps, RFC 9112 §11): CRLF line ends
//! only, one Content-Length of plain digits, Transfer-Encoding only as a single `chunked` and
//! never beside Content-Length or in HTTP/1.0, strict hexadecimal chunk sizes, trailer fields
//! parsed like header fields. `docs/architecture.md` lists where the generator and the proxy
//! used to differ and which rule was kept.
//!
//! What it does not do: read sockets, keep buffers, decide what a refusal answers (400, 502, a
//! protocol error) or parse request lines and Host (the services' own business, `protocol::h1::check`).
//!
//! # Layout
//! - [`head`]: response heads: httparse without leniencies, CRLF only, the status range.
//! - [`fields`]: the framing fields (Content-Length, Transfer-Encoding, Connection) and the
//!   message body length they give (RFC 9112 §6.3).
//! - [`chunked`]: the chunked transfer coding (RFC 9112 §7.1) as a decoder over the caller's
//!   buffer.
//! - [`Error`]: why a message was refused.

pub mod chunked;
pub mod fields;
pub mod head;

use std::fmt;

pub use chunked::{chunk_size, Chunked, Step};
pub use fields::{content_length, BodyLength, Fields, Framing};
pub use head::{crlf_only, parse_response, Response, MAX_FIELDS};

/// Why a message was refused. A small `Copy` value: nothing is allocated per refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// httparse refused the head (its reason).
    Malformed(httparse::Error),
    /// More than [`MAX_FIELDS`] field lines.
    TooManyFields,
    /// The head is over the caller's limit.
    HeadTooLarge,
    /// A line of the head ends in a bare LF (RFC 9112 §2.2).
    BareLf,
    /// The status code is outside 100..=999.
    InvalidStatus,
    /// Content-Length is not one plain decimal number (RFC 9110 §8.6).
    InvalidContentLength,
    /// More than one Content-Length field line.
    RepeatedContentLength,
    /// A transfer coding that is not registered (a server answers 501, RFC 9112 §6.1).
    UnknownCoding,
    /// Transfer-Encoding other than one `chunked` coding.
    NotChunked,
    /// Both Transfer-Encoding and Content-Length (RFC 9112 §6.3: "ought to be handled as an
    /// error").
    LengthWithTransferEncoding,
    /// Transfer-Encoding in an HTTP/1.0 message (RFC 9112 §6.1: the framing is faulty).
    TransferEncodingInHttp10,
    /// A chunk-size line longer than [`Chunked::MAX_LINE`].
    ChunkLineTooLong,
    /// A chunk-size line that does not end in CRLF.
    BadChunkLine,
    /// A chunk size that is not strict hexadecimal, overflows, or has a bad extension.
    BadChunkSize,
    /// Chunk data not followed by CRLF.
    ChunkDataNotCrlf,
    /// A trailer section over the caller's limit.
    TrailersTooLarge,
    /// A trailer section that does not parse as field lines with CRLF ends.
    MalformedTrailers,
}

impl Error {
    /// The reason in a few lowercase words (what logs and error bodies say).
    pub fn as_str(self) -> &'static str {
        match self {
            Error::Malformed(_) => "malformed head",
            Error::TooManyFields => "too many header fields",
            Error::HeadTooLarge => "head is over the limit",
            Error::BareLf => "bare LF in the head",
            Error::InvalidStatus => "invalid status code",
            Error::InvalidContentLength => "invalid Content-Length",
            Error::RepeatedContentLength => "repeated Content-Length",
            Error::UnknownCoding => "unknown transfer coding",
            Error::NotChunked => "transfer coding other than one chunked",
            Error::LengthWithTransferEncoding => "Content-Length with Transfer-Encoding",
            Error::TransferEncodingInHttp10 => "Transfer-Encoding in HTTP/1.0",
            Error::ChunkLineTooLong => "chunk-size line too long",
            Error::BadChunkLine => "bad chunk-size line",
            Error::BadChunkSize => "bad chunk size",
            Error::ChunkDataNotCrlf => "chunk data not followed by CRLF",
            Error::TrailersTooLarge => "trailer section too large",
            Error::MalformedTrailers => "malformed trailers",
        }
    }

    /// True for the errors of the framing fields (Content-Length, Transfer-Encoding): the
    /// message's length cannot be known.
    pub fn is_ambiguous_framing(self) -> bool {
        matches!(
            self,
            Error::RepeatedContentLength
                | Error::UnknownCoding
                | Error::NotChunked
                | Error::LengthWithTransferEncoding
                | Error::TransferEncodingInHttp10
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Malformed(e) => write!(f, "malformed head ({e})"),
            other => f.write_str(other.as_str()),
        }
    }
}

impl std::error::Error for Error {}

/// Removes optional whitespace (SP, HTAB) around a field value or list element (RFC 9110
/// §5.6.3).
pub fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}
