//! gatebench's gRPC-over-HTTP/2 wire rules ("gRPC over HTTP2", PROTOCOL-HTTP2.md of the gRPC
//! project), in one place for both sides of the tool: the load generator's calls and the echo
//! back-end's gRPC service. Sans I/O, like `gatebench-h1`: the caller reads and writes the
//! HTTP/2 stream; this crate says what its bytes and fields mean.
//!
//! # Layout
//! - [`Decoder`]: length-prefixed messages out of a DATA stream cut anywhere, bounded by the
//!   largest message the reader accepts.
//! - [`encode`]: one message's frame (flag byte, 4-byte big-endian length, payload).
//! - [`Code`]: the status codes, their numbers and names (`grpc-status`).
//! - [`timeout`]: the `grpc-timeout` field, both ways.
//!
//! What it does not do: compression (a message flagged compressed is refused by the caller,
//! since neither side offers a `grpc-encoding`), protobuf (payloads are bytes here).

pub mod timeout;

use std::collections::VecDeque;
use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The `content-type` of gRPC requests and responses.
pub const CONTENT_TYPE: &str = "application/grpc";

/// gRPC's default largest message a receiver accepts (4 MiB, as grpc-go and grpc-java).
pub const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Bytes before each message's payload: the compressed flag and the length.
pub const PREFIX: usize = 5;

/// Whether a `content-type` value is gRPC's: `application/grpc` or `application/grpc+…`
/// (`+proto`, `+json`), parameters allowed.
pub fn is_grpc_content_type(value: &[u8]) -> bool {
    let ct = CONTENT_TYPE.as_bytes();
    value.len() >= ct.len()
        && value[..ct.len()].eq_ignore_ascii_case(ct)
        && matches!(value.get(ct.len()), None | Some(b'+' | b';'))
}

/// One message's frame: flag 0 (not compressed), the payload's length, the payload.
pub fn encode(payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(PREFIX + payload.len());
    put_message(&mut out, payload);
    out.freeze()
}

/// Appends one message's frame to `out`.
pub fn put_message(out: &mut impl BufMut, payload: &[u8]) {
    out.put_u8(0);
    out.put_u32(u32::try_from(payload.len()).expect("a gRPC message is at most 4 GiB"));
    out.put_slice(payload);
}

/// Why a stream's messages could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A message's declared length is above the reader's largest.
    TooLarge {
        /// The declared length.
        declared: u64,
        /// The reader's largest.
        max: usize,
    },
    /// The compressed flag is set (no encoding was agreed), or holds a value other than 0 or 1.
    Compressed(u8),
    /// The stream ended inside a message.
    Truncated {
        /// Bytes of the unfinished message (its prefix included) that had arrived.
        have: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { declared, max } => {
                write!(
                    f,
                    "a message of {declared} bytes, above the largest accepted ({max})"
                )
            }
            FrameError::Compressed(1) => f.write_str("a compressed message, no encoding agreed"),
            FrameError::Compressed(flag) => write!(f, "a message flag of {flag} (0 or 1 only)"),
            FrameError::Truncated { have } => {
                write!(f, "the stream ended inside a message ({have} bytes of it)")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Reads length-prefixed messages from a stream's DATA, whatever the cuts between its pieces.
/// Rule: a message is handed out whole or not at all; at most `max` bytes of payload are ever
/// held for one message, and the declared length is checked before any of it is kept.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    max: usize,
    /// The length of the message being read, once its prefix arrived.
    want: Option<usize>,
    ready: VecDeque<Bytes>,
    failed: Option<FrameError>,
}

impl Decoder {
    /// A decoder that accepts messages of at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Decoder {
            buf: BytesMut::new(),
            max,
            want: None,
            ready: VecDeque::new(),
            failed: None,
        }
    }

    /// Takes the next piece of the stream; the messages it completes can be taken with
    /// [`Decoder::next_message`]. After an error every later call returns the same error.
    pub fn push(&mut self, mut piece: &[u8]) -> Result<(), FrameError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        while !piece.is_empty() {
            match self.want {
                None => {
                    let take = (PREFIX - self.buf.len()).min(piece.len());
                    self.buf.extend_from_slice(&piece[..take]);
                    piece = &piece[take..];
                    if self.buf.len() < PREFIX {
                        break;
                    }
                    let flag = self.buf[0];
                    let len =
                        u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
                    self.buf.clear();
                    if flag != 0 {
                        return Err(*self.failed.insert(FrameError::Compressed(flag)));
                    }
                    if len as usize > self.max {
                        return Err(*self.failed.insert(FrameError::TooLarge {
                            declared: u64::from(len),
                            max: self.max,
                        }));
                    }
                    if len == 0 {
                        self.ready.push_back(Bytes::new());
                    } else {
                        self.want = Some(len as usize);
                        self.buf.reserve(len as usize);
                    }
                }
                Some(want) => {
                    let take = (want - self.buf.len()).min(piece.len());
                    self.buf.extend_from_slice(&piece[..take]);
                    piece = &piece[take..];
                    if self.buf.len() == want {
                        self.ready.push_back(self.buf.split().freeze());
                        self.want = None;
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes a [`Bytes`] piece, using it without a copy when it holds exactly whole messages.
    pub fn push_bytes(&mut self, mut piece: Bytes) -> Result<(), FrameError> {
        if self.failed.is_none() && self.want.is_none() && self.buf.is_empty() {
            // The common case: DATA frames that carry whole messages.
            while piece.len() >= PREFIX {
                let flag = piece[0];
                let len = u32::from_be_bytes([piece[1], piece[2], piece[3], piece[4]]) as usize;
                if flag != 0 || len > self.max || piece.len() < PREFIX + len {
                    break;
                }
                piece.advance(PREFIX);
                self.ready.push_back(piece.split_to(len));
            }
        }
        self.push(&piece)
    }

    /// The next whole message, in order.
    pub fn next_message(&mut self) -> Option<Bytes> {
        self.ready.pop_front()
    }

    /// Messages complete and not yet taken.
    pub fn pending(&self) -> usize {
        self.ready.len()
    }

    /// The stream ended: an error if it ended inside a message.
    pub fn finish(&self) -> Result<(), FrameError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.buf.is_empty() && self.want.is_none() {
            Ok(())
        } else {
            let have = self.buf.len() + if self.want.is_some() { PREFIX } else { 0 };
            Err(FrameError::Truncated { have })
        }
    }
}

/// gRPC status codes (`grpc-status`), by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)] // the names are the protocol's own
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    /// Every code, in number order.
    pub const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// The code with this number; `None` for numbers gRPC does not define.
    pub fn from_number(n: u32) -> Option<Code> {
        Code::ALL.get(n as usize).copied()
    }

    /// Reads a `grpc-status` value: a decimal number of a defined code. gRPC says a client
    /// takes an unknown number as UNKNOWN; `None` here is for bytes that are not a number.
    pub fn parse(value: &[u8]) -> Option<Code> {
        if value.is_empty() || value.len() > 10 || !value.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
        Some(
            u32::try_from(n)
                .ok()
                .and_then(Code::from_number)
                .unwrap_or(Code::Unknown),
        )
    }

    /// The number, as sent in `grpc-status`.
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The name in lower case, as gatebench's records class calls (`deadline_exceeded`).
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "ok",
            Code::Cancelled => "cancelled",
            Code::Unknown => "unknown",
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::FailedPrecondition => "failed_precondition",
            Code::Aborted => "aborted",
            Code::OutOfRange => "out_of_range",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::DataLoss => "data_loss",
            Code::Unauthenticated => "unauthenticated",
        }
    }

    /// The code of an HTTP status that came without a `grpc-status` (gRPC's
    /// "HTTP to gRPC Status Code Mapping").
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            put_message(&mut out, m);
        }
        out
    }

    fn drain(d: &mut Decoder) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| d.next_message().map(|m| m.to_vec())).collect()
    }

    #[test]
    fn messages_come_out_whole_however_the_stream_is_cut() {
        let msgs: [&[u8]; 4] = [b"", b"a", &[7u8; 300], b"last"];
        let wire = frames(&msgs);
        for cut in 1..wire.len() {
            let mut d = Decoder::new(1024);
            for piece in wire.chunks(cut) {
                d.push(piece).unwrap();
            }
            d.finish().unwrap();
            assert_eq!(
                drain(&mut d),
                msgs.iter().map(|m| m.to_vec()).collect::<Vec<_>>(),
                "cut {cut}"
            );
        }
        let mut d = Decoder::new(1024);
        d.push_bytes(Bytes::from(wire.clone())).unwrap();
        assert_eq!(drain(&mut d).len(), 4);
        d.finish().unwrap();
    }

    #[test]
    fn a_length_above_the_largest_is_refused_before_its_bytes_arrive() {
        let mut d = Decoder::new(10);
        let err = d.push(&[0, 0, 0, 0, 11]).unwrap_err();
        assert_eq!(
            err,
            FrameError::TooLarge {
                declared: 11,
                max: 10
            }
        );
        assert_eq!(d.push(b"x"), Err(err), "the error sticks");
        let mut d = Decoder::new(10);
        d.push_bytes(Bytes::from(frames(&[&[1u8; 11]])))
            .unwrap_err();
    }

    #[test]
    fn compressed_messages_and_unknown_flags_are_refused() {
        let mut d = Decoder::new(10);
        assert_eq!(
            d.push(&[1, 0, 0, 0, 1, b'x']),
            Err(FrameError::Compressed(1))
        );
        let mut d = Decoder::new(10);
        assert_eq!(d.push(&[2, 0, 0, 0, 0]), Err(FrameError::Compressed(2)));
    }

    #[test]
    fn a_stream_ending_inside_a_message_is_truncated() {
        let mut d = Decoder::new(100);
        d.push(&[0, 0, 0]).unwrap();
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 3 }));
        let mut d = Decoder::new(100);
        d.push(&[0, 0, 0, 0, 4, b'a', b'b']).unwrap();
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 7 }));
    }

    #[test]
    fn status_values_parse_as_grpc_reads_them() {
        assert_eq!(Code::parse(b"0"), Some(Code::Ok));
        assert_eq!(Code::parse(b"4"), Some(Code::DeadlineExceeded));
        assert_eq!(Code::parse(b"16"), Some(Code::Unauthenticated));
        assert_eq!(
            Code::parse(b"17"),
            Some(Code::Unknown),
            "an undefined number is UNKNOWN"
        );
        assert_eq!(Code::parse(b"99999999999"), None);
        assert_eq!(Code::parse(b""), None);
        assert_eq!(Code::parse(b"-1"), None);
        assert_eq!(Code::parse(b" 0"), None);
        for c in Code::ALL {
            assert_eq!(Code::parse(c.number().to_string().as_bytes()), Some(c));
        }
        assert_eq!(Code::from_http_status(503), Code::Unavailable);
        assert_eq!(Code::from_http_status(404), Code::Unimplemented);
        assert_eq!(Code::from_http_status(500), Code::Unknown);
    }

    #[test]
    fn content_types_of_grpc() {
        assert!(is_grpc_content_type(b"application/grpc"));
        assert!(is_grpc_content_type(b"application/grpc+proto"));
        assert!(is_grpc_content_type(b"Application/GRPC;charset=utf-8"));
        assert!(!is_grpc_content_type(b"application/grpcx"));
        assert!(!is_grpc_content_type(b"application/json"));
    }
}
