//! Response heads: the status line and field lines parsed by httparse without any of its
//! leniencies (its default configuration: no obs-fold, no spaces before the colon), CRLF line
//! ends only (RFC 9112 §2.2: bare LF is read one way by some parsers and another by others),
//! a status of three digits from 100 (RFC 9110 §15), and the framing fields checked
//! ([`crate::fields`]).
//!
//! Request heads are the services' (`protocol::h1::check`): their request line, Host and limits are rules of
//! a server, not of framing; they share [`crlf_only`] and [`crate::Fields`] with this module.

use std::mem::MaybeUninit;

use crate::fields::{Fields, Framing};
use crate::Error;

/// Most field lines in a head (hyper's default too); more is [`Error::TooManyFields`].
pub const MAX_FIELDS: usize = 100;

/// A complete, checked response head at the start of the caller's buffer.
#[derive(Debug)]
pub struct Response<'h, 'b> {
    /// Bytes of the head, its final empty line included.
    pub len: usize,
    /// The status code, 100..=999.
    pub status: u16,
    /// The status line says HTTP/1.0 (otherwise HTTP/1.1).
    pub http10: bool,
    /// The field lines, in order, borrowing the buffer.
    pub fields: &'h [httparse::Header<'b>],
    /// What the framing fields say.
    pub framing: Framing,
}

/// Parses the response head at the start of `buf`: `Ok(None)` while it is incomplete (and
/// within `max_head` bytes), the head when it is complete and acceptable. `fields` is the
/// caller's room for the field lines (at most [`MAX_FIELDS`] are used); nothing is allocated.
///
/// Interim (1xx) heads are parsed and checked like final ones; skipping them is the caller's
/// business.
pub fn parse_response<'h, 'b>(
    buf: &'b [u8],
    max_head: usize,
    fields: &'h mut [MaybeUninit<httparse::Header<'b>>; MAX_FIELDS],
) -> Result<Option<Response<'h, 'b>>, Error> {
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        fields,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            if buf.len() > max_head {
                return Err(Error::HeadTooLarge);
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => return Err(Error::TooManyFields),
        Err(e) => return Err(Error::Malformed(e)),
    };
    if !crlf_only(&buf[..len]) {
        return Err(Error::BareLf);
    }
    if len > max_head {
        return Err(Error::HeadTooLarge);
    }
    let status = response.code.unwrap_or_default();
    if !(100..=999).contains(&status) {
        return Err(Error::InvalidStatus);
    }
    let http10 = response.version == Some(0);
    let mut framing = Fields::new();
    for field in response.headers.iter() {
        framing.field(field.name.as_bytes(), field.value)?;
    }
    Ok(Some(Response {
        len,
        status,
        http10,
        fields: response.headers,
        framing: framing.finish(http10)?,
    }))
}

/// True when every LF in `bytes` is preceded by CR.
pub fn crlf_only(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', bytes).all(|at| at > 0 && bytes[at - 1] == b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BodyLength;

    /// Length, status, HTTP/1.0, framing and field count of a parsed head.
    type Parsed = (usize, u16, bool, Framing, usize);

    fn parse(head: &[u8], max: usize) -> Result<Option<Parsed>, Error> {
        let mut fields = [const { MaybeUninit::uninit() }; MAX_FIELDS];
        parse_response(head, max, &mut fields)
            .map(|r| r.map(|r| (r.len, r.status, r.http10, r.framing, r.fields.len())))
    }

    #[test]
    fn a_head_is_parsed_in_place() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello";
        let mut fields = [const { MaybeUninit::uninit() }; MAX_FIELDS];
        let r = parse_response(head, 1024, &mut fields).unwrap().unwrap();
        assert_eq!(r.len, head.len() - 5);
        assert_eq!(r.status, 200);
        assert!(!r.http10);
        assert_eq!(r.fields.len(), 2);
        assert_eq!(r.fields[1].name, "X-A");
        assert_eq!(r.fields[1].value, b"b");
        assert_eq!(
            r.framing.response_body(r.status, false),
            BodyLength::Length(5)
        );
        assert!(r.framing.persistent(r.http10));
    }

    #[test]
    fn an_incomplete_head_waits_within_the_limit() {
        assert_eq!(parse(b"HTTP/1.1 200 OK\r\nContent-", 1024), Ok(None));
        assert_eq!(parse(b"", 1024), Ok(None));
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nX: aaaa", 10),
            Err(Error::HeadTooLarge)
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nX: aaaa\r\n\r\n", 20),
            Err(Error::HeadTooLarge)
        );
    }

    #[test]
    fn leniencies_are_refused() {
        let cases: [(&[u8], Error); 9] = [
            (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", Error::BareLf),
            (b"HTTP/1.1 200 OK\r\nA: b\n\r\n", Error::BareLf),
            (
                b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
                Error::Malformed(httparse::Error::HeaderName),
            ),
            (
                b"HTTP/1.1 200 OK\r\nA : b\r\n\r\n",
                Error::Malformed(httparse::Error::HeaderName),
            ),
            (b"HTTP/1.1 099 Low\r\n\r\n", Error::InvalidStatus),
            (b"HTTP/1.1 000 Zero\r\n\r\n", Error::InvalidStatus),
            (
                b"garbage\r\n\r\n",
                Error::Malformed(httparse::Error::Version),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
                Error::RepeatedContentLength,
            ),
            (
                b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                Error::TransferEncodingInHttp10,
            ),
        ];
        for (head, want) in cases {
            assert_eq!(
                parse(head, 1024),
                Err(want),
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn too_many_fields_are_refused() {
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_FIELDS {
            head.extend_from_slice(format!("x-{i}: v\r\n").as_bytes());
        }
        let mut more = head.clone();
        head.extend_from_slice(b"\r\n");
        assert_eq!(parse(&head, 1 << 20).unwrap().unwrap().4, MAX_FIELDS);
        more.extend_from_slice(b"x: v\r\n\r\n");
        assert_eq!(parse(&more, 1 << 20), Err(Error::TooManyFields));
    }

    #[test]
    fn interim_and_http10_heads() {
        let (len, status, http10, framing, _) = parse(
            b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!((len, status, http10), (37, 103, false));
        assert_eq!(framing.response_body(status, false), BodyLength::None);
        let (_, _, http10, framing, _) =
            parse(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", 1024)
                .unwrap()
                .unwrap();
        assert!(http10);
        assert!(framing.persistent(http10));
        assert_eq!(framing.response_body(200, false), BodyLength::UntilClose);
    }

    #[test]
    fn crlf_only_finds_every_bare_lf() {
        assert!(crlf_only(b""));
        assert!(crlf_only(b"a\r\nb\r\n"));
        assert!(!crlf_only(b"\n"));
        assert!(!crlf_only(b"a\r\nb\n"));
        assert!(!crlf_only(b"a\n\r\n"));
    }
}
