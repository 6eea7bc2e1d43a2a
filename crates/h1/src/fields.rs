//! The framing fields of a message — Content-Length, Transfer-Encoding, Connection — and the
//! body length they give (RFC 9112 §6.3, §9.3).
//!
//! [`Fields`] collects them one field line at a time, refusing an invalid Content-Length at
//! once, and [`Fields::finish`] refuses every combination that can be read two ways:
//! Content-Length repeated (even with equal values, which RFC 9110 §8.6 lets a recipient take
//! as one: a parser behind us might not), Transfer-Encoding other than one final `chunked`,
//! Transfer-Encoding beside Content-Length, Transfer-Encoding in HTTP/1.0. What is left is a
//! [`Framing`], from which [`Framing::response_body`] and [`Framing::request_body`] give the
//! length of the body.

use crate::{trim_ows, Error};

/// Transfer codings registered with IANA: a message using one of them in an order we cannot
/// frame is malformed, one using any other coding is a coding we do not implement (a server
/// answers 501, RFC 9112 §6.1).
const KNOWN_CODINGS: [&[u8]; 7] = [
    b"chunked",
    b"compress",
    b"deflate",
    b"gzip",
    b"x-compress",
    b"x-gzip",
    b"trailers",
];

/// The framing fields of one head, as they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    lengths: u32,
    length: Option<u64>,
    codings: u32,
    chunked_only: bool,
    unknown_coding: bool,
    close: bool,
    keep_alive: bool,
}

impl Default for Fields {
    fn default() -> Self {
        Self::new()
    }
}

impl Fields {
    /// No field seen yet.
    pub fn new() -> Self {
        Self {
            lengths: 0,
            length: None,
            codings: 0,
            chunked_only: true,
            unknown_coding: false,
            close: false,
            keep_alive: false,
        }
    }

    /// Notes one field line (`name` compared without case). An invalid Content-Length is
    /// refused here; every other rule waits for [`Fields::finish`].
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), Error> {
        if name.eq_ignore_ascii_case(b"content-length") {
            self.lengths += 1;
            self.length = Some(content_length(value).ok_or(Error::InvalidContentLength)?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // RFC 9110 §5.6.1 lists; every element counts, an empty one too.
            for coding in value.split(|&b| b == b',').map(trim_ows) {
                self.codings += 1;
                if !coding.eq_ignore_ascii_case(b"chunked") {
                    self.chunked_only = false;
                    self.unknown_coding |= !KNOWN_CODINGS
                        .iter()
                        .any(|known| coding.eq_ignore_ascii_case(known));
                }
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',').map(trim_ows) {
                if token.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    self.keep_alive = true;
                }
            }
        }
        Ok(())
    }

    /// Refuses what can be framed two ways (see the module docs); `http10`: the message is
    /// HTTP/1.0. [`Error::UnknownCoding`] comes before the other Transfer-Encoding errors, so
    /// that a server can answer it 501.
    pub fn finish(self, http10: bool) -> Result<Framing, Error> {
        if self.codings > 0 {
            if self.unknown_coding {
                return Err(Error::UnknownCoding);
            }
            if http10 {
                return Err(Error::TransferEncodingInHttp10);
            }
            if self.lengths > 0 {
                return Err(Error::LengthWithTransferEncoding);
            }
            if self.codings != 1 || !self.chunked_only {
                return Err(Error::NotChunked);
            }
        }
        if self.lengths > 1 {
            return Err(Error::RepeatedContentLength);
        }
        Ok(Framing {
            content_length: self.length,
            chunked: self.codings > 0,
            close: self.close,
            keep_alive: self.keep_alive,
        })
    }
}

/// The framing fields of a head that passed [`Fields::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Framing {
    /// The Content-Length, if the head has one (then it has no Transfer-Encoding).
    pub content_length: Option<u64>,
    /// Transfer-Encoding: chunked (then there is no Content-Length).
    pub chunked: bool,
    /// Connection names `close`.
    pub close: bool,
    /// Connection names `keep-alive`.
    pub keep_alive: bool,
}

/// How long a message body is (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    /// No body.
    None,
    /// This many bytes (never 0: that is [`BodyLength::None`]).
    Length(u64),
    /// Chunked transfer coding ([`crate::Chunked`]).
    Chunked,
    /// Until the sender closes the connection (responses only).
    UntilClose,
}

impl Framing {
    /// The body of a response with `status` to a request that was a HEAD or not (RFC 9112
    /// §6.3 items 1, 4, 6, 7): none after HEAD, 1xx, 204 and 304; chunked; Content-Length;
    /// otherwise until the connection closes.
    pub fn response_body(&self, status: u16, head_request: bool) -> BodyLength {
        if head_request || (100..200).contains(&status) || status == 204 || status == 304 {
            BodyLength::None
        } else {
            self.body(BodyLength::UntilClose)
        }
    }

    /// The body of a request (RFC 9112 §6.3 items 4, 6, 7): chunked, Content-Length, or none.
    pub fn request_body(&self) -> BodyLength {
        self.body(BodyLength::None)
    }

    fn body(&self, otherwise: BodyLength) -> BodyLength {
        match (self.chunked, self.content_length) {
            (true, _) => BodyLength::Chunked,
            (false, Some(0)) => BodyLength::None,
            (false, Some(n)) => BodyLength::Length(n),
            (false, None) => otherwise,
        }
    }

    /// Whether the connection persists after this message as its fields say (RFC 9112 §9.3):
    /// HTTP/1.1 unless `close`; HTTP/1.0 only with `keep-alive` and without `close`. A
    /// recipient may still decide not to reuse it (a proxy that never reuses HTTP/1.0
    /// upstream connections, a body delimited by the close).
    pub fn persistent(&self, http10: bool) -> bool {
        !self.close && (!http10 || self.keep_alive)
    }
}

/// A Content-Length value: `1*DIGIT` between optional whitespace, without sign, list or
/// overflow (RFC 9110 §8.6).
pub fn content_length(value: &[u8]) -> Option<u64> {
    let value = trim_ows(value);
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(fields: &[(&str, &str)], http10: bool) -> Result<Framing, Error> {
        let mut f = Fields::new();
        for (name, value) in fields {
            f.field(name.as_bytes(), value.as_bytes())?;
        }
        f.finish(http10)
    }

    #[test]
    fn content_length_is_one_plain_decimal() {
        assert_eq!(content_length(b"42"), Some(42));
        assert_eq!(content_length(b" 0\t"), Some(0));
        assert_eq!(content_length(b"18446744073709551615"), None, "20 digits");
        assert_eq!(
            content_length(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        for bad in [
            &b""[..],
            b" ",
            b"+5",
            b"-1",
            b"0x10",
            b"5 5",
            b"5, 5",
            b"5,5",
            b"1e3",
            b"99999999999999999999",
        ] {
            assert_eq!(
                content_length(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn one_length_or_one_chunked_frames_a_message() {
        let f = finish(&[("Content-Length", "5")], false).unwrap();
        assert_eq!(f.request_body(), BodyLength::Length(5));
        assert_eq!(f.response_body(200, false), BodyLength::Length(5));
        let f = finish(&[("transfer-encoding", " Chunked ")], false).unwrap();
        assert_eq!(f.request_body(), BodyLength::Chunked);
        assert_eq!(f.response_body(200, false), BodyLength::Chunked);
        let f = finish(&[], false).unwrap();
        assert_eq!(f.request_body(), BodyLength::None);
        assert_eq!(f.response_body(200, false), BodyLength::UntilClose);
        let f = finish(&[("content-length", "0")], false).unwrap();
        assert_eq!(f.response_body(200, false), BodyLength::None);
    }

    #[test]
    fn bodiless_responses_ignore_their_framing_fields() {
        let f = finish(&[("content-length", "100")], false).unwrap();
        for status in [100, 103, 204, 304] {
            assert_eq!(f.response_body(status, false), BodyLength::None, "{status}");
        }
        assert_eq!(f.response_body(200, true), BodyLength::None, "HEAD");
        assert_eq!(f.response_body(404, false), BodyLength::Length(100));
    }

    /// Field lines, HTTP/1.0 or not, and the refusal they get.
    type Case = (&'static [(&'static str, &'static str)], bool, Error);

    #[test]
    fn ambiguous_framing_is_refused() {
        let cases: [Case; 10] = [
            (
                &[("content-length", "5"), ("content-length", "5")],
                false,
                Error::RepeatedContentLength,
            ),
            (
                &[("content-length", "5"), ("content-length", "6")],
                false,
                Error::RepeatedContentLength,
            ),
            (
                &[("content-length", "5, 5")],
                false,
                Error::InvalidContentLength,
            ),
            (
                &[("transfer-encoding", "chunked"), ("content-length", "5")],
                false,
                Error::LengthWithTransferEncoding,
            ),
            (
                &[("transfer-encoding", "chunked")],
                true,
                Error::TransferEncodingInHttp10,
            ),
            (
                &[("transfer-encoding", "gzip, chunked")],
                false,
                Error::NotChunked,
            ),
            (
                &[("transfer-encoding", "chunked, chunked")],
                false,
                Error::NotChunked,
            ),
            (
                &[
                    ("transfer-encoding", "chunked"),
                    ("transfer-encoding", "chunked"),
                ],
                false,
                Error::NotChunked,
            ),
            (
                &[("transfer-encoding", "chunked,")],
                false,
                Error::UnknownCoding,
            ),
            (&[("transfer-encoding", "foo")], false, Error::UnknownCoding),
        ];
        for (fields, http10, want) in cases {
            assert_eq!(
                finish(fields, http10),
                Err(want),
                "{fields:?} http10={http10}"
            );
        }
    }

    #[test]
    fn unknown_coding_comes_first_so_a_server_can_answer_501() {
        assert_eq!(
            finish(
                &[("transfer-encoding", "br"), ("content-length", "1")],
                true
            ),
            Err(Error::UnknownCoding)
        );
        assert_eq!(
            finish(&[("transfer-encoding", "x-gzip")], false),
            Err(Error::NotChunked)
        );
    }

    #[test]
    fn connection_tokens_decide_persistence() {
        let f = |v: &str| finish(&[("Connection", v)], false).unwrap();
        assert!(finish(&[], false).unwrap().persistent(false));
        assert!(!finish(&[], false).unwrap().persistent(true));
        assert!(!f("close").persistent(false));
        assert!(!f("Keep-Alive, close").persistent(true));
        assert!(!f("close, keep-alive").persistent(true), "close wins");
        assert!(f(" keep-alive ").persistent(true));
        assert!(f("upgrade").persistent(false));
    }
}
