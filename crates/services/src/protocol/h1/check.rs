//! Strict HTTP/1.1 request rules, the ones the services' HTTP/1.x server (`h1::server`)
//! applies to every request head it reads: the head parse ([`parse_head`]), when a head that
//! arrives in pieces is parsed ([`HeadScan`]), how an accepted head frames its body
//! ([`Framing`]), and the limits and deadlines of the request side ([`H1Limits`], [`LINGER`]).
//! It refuses what docs/behaviour.md refuses.
//!
//! A lenient server parser is not enough in an intermediary: hyper's, which served the services
//! once, drops Content-Length when Transfer-Encoding is present (RFC 9112 §6.3 allows a *server*
//! to do so, but a proxy that forwards such a request is the textbook request-smuggling vector),
//! accepts bare LF line ends, leaves Host to the application, has no 408 and no total head
//! deadline. The rules here:
//!
//! - a request head is parsed only once complete (or once a limit or an invalid byte decides
//!   it), with httparse, and checked against RFC 9112: one Host, valid (§3.2); Content-Length
//!   only as one plain decimal (§6.3, RFC 9110 §8.6); Transfer-Encoding only as a single final
//!   `chunked`, never with Content-Length and never in HTTP/1.0 (§6.1, §6.3); CRLF line ends
//!   only (§2.2); no obs-fold and no CR/LF/NUL in values (§5.2, §5.5 — httparse refuses these);
//!   limits on the request line (414), the head (431) and a total deadline for it (408);
//! - a body is then read as its [`Framing`] says (by `h1::conn`): Content-Length bytes, or
//!   chunks whose size lines are strict hex with overflow checks, each chunk followed by CRLF
//!   (§7.1), then trailer fields checked like header fields;
//! - the bytes after one message are parsed as the next head, so pipelined requests cannot hide
//!   a second request in a body.
//!
//! The framing rules themselves (CRLF, Content-Length, Transfer-Encoding, the chunked coding)
//! are `gatebench-h1`'s, the ones the upstream client and the load generator apply to
//! responses; the request line, Host and the limits are this module's.
//!
//! What it does not do: read or write. The server reads, answers a refused head with its status
//! and `Connection: close`, and lingers after a close (reads and discards for up to [`LINGER`])
//! so that the close does not become a reset that destroys the answer before the client reads
//! it (Apache's "lingering close"). Nor does it decide anything about responses, HTTP/2 or body
//! sizes of chunked requests (the service counts those, on every protocol).

use std::mem::MaybeUninit;
use std::time::Duration;

use http::StatusCode;
use memchr::memchr;

use gatebench_h1::{crlf_only, trim_ows, BodyLength, Fields};

/// Largest number of header fields in a request head (the shared limit, hyper's default
/// too); more gets 431.
pub(crate) const MAX_HEADERS: usize = gatebench_h1::MAX_FIELDS;
/// How long a closed connection keeps reading (and discarding) what the client still sends.
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// Limits and deadlines of the request side of one listener.
#[derive(Debug, Clone)]
pub(crate) struct H1Limits {
    /// Longest request line; longer gets 414.
    pub max_request_line: usize,
    /// Largest head (request line and fields) and largest trailer section; larger gets 431.
    pub max_head: usize,
    /// A Content-Length above this gets 413 before a byte of the body is read.
    pub max_body: u64,
    /// Total time from the first byte of a head to its end; then 408 and close (slowloris).
    pub head_timeout: Duration,
    /// Longest wait for the next bytes of a request body; then the body fails and the
    /// connection closes.
    pub body_timeout: Duration,
    /// Longest wait for the client to take the next bytes of a response (HTTP/1.1: one
    /// write; HTTP/2: one piece of the body); then the connection (HTTP/2: the stream) is cut.
    pub send_timeout: Duration,
}

/// When a request head that arrives in pieces is parsed, so that a head trickled a byte at a
/// time costs linear work, not one parse from its first byte per read (quadratic: a 16 KiB head
/// byte by byte was 16,384 parses of up to 16 KiB). Issue 23.
///
/// The rule it keeps: the outcome of a head — passed on with its length and framing, refused
/// (and, where a limit decides, with which status), or dropped at the end of the stream — is
/// the one a parse of the same bytes read whole gives, however they were split into reads (the
/// `h1server` fuzz target and this module's tests check it, on the server). A parse of a prefix that is not Partial is
/// final: more bytes do not change it. So the head is parsed at every point where that result
/// can first appear and is knowable without parsing, and at enough other points to bound how
/// late an error inside a line is found:
///
/// - a blank line after the request line (the head's end: accepted or refused). Empty lines
///   before the request line are skipped by the parse (RFC 9112 §2.2) and are not its end;
/// - a limit crossed, by length alone: the request line longer than `max_request_line` (414) or
///   the head longer than `max_head` (431), as [`parse_head`] decides them on a partial head;
/// - the head twice as long as at the last parse (the first bytes always): an invalid byte
///   inside a line (httparse stops at the first one) is found by then. The parses' lengths
///   double, so their sum is under twice the head's;
/// - by the caller: at the end of the stream and at the head deadline, where a partial head is
///   parsed once more so that it ends as the whole parse would (refused with its status rather
///   than dropped, or 408).
///
/// Each byte is searched for a line end once (two bytes back are looked at again for a blank
/// line that spans reads). An earlier version (taken back in aeb6e5e) parsed only at a blank
/// line or a limit: an invalid request line after empty lines, with no blank line before the
/// end of the stream, was refused when read whole and dropped when read in pieces.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HeadScan {
    /// Bytes of the head searched for line ends so far.
    scanned: usize,
    /// The head's length at the last parse (0: not parsed yet).
    parsed: usize,
    /// Bytes of empty lines (CR and LF) before the request line; final once `leading_done`.
    leading: usize,
    leading_done: bool,
    /// Where the request line ends (its LF), once seen.
    line_end: Option<usize>,
    /// The last LF found starting a blank line: each is worth one parse, not one per read.
    blank: Option<usize>,
}

impl HeadScan {
    /// Whether `head` (the bytes of one head so far from its first byte, maybe followed by
    /// more) is to be parsed now. Only the bytes added since the last call are searched.
    pub(crate) fn due(&mut self, head: &[u8], limits: &H1Limits) -> bool {
        let len = head.len();
        if len == 0 {
            return false;
        }
        #[cfg(test)]
        let leading_before = self.leading;
        if !self.leading_done {
            while self.leading < len && matches!(head[self.leading], b'\r' | b'\n') {
                self.leading += 1;
            }
            self.leading_done = self.leading < len;
        }
        let mut blank = false;
        let from = self.scanned.saturating_sub(2).max(self.leading);
        if self.leading_done && from < len {
            for i in memchr::memchr_iter(b'\n', &head[from..]).map(|i| i + from) {
                self.line_end.get_or_insert(i);
                if self.blank < Some(i)
                    && matches!(&head[i + 1..], [b'\n', ..] | [b'\r', b'\n', ..])
                {
                    self.blank = Some(i);
                    blank = true;
                }
            }
        }
        self.scanned = len;
        #[cfg(test)]
        tests::count_work(self.leading - leading_before + len.saturating_sub(from));
        // As `parse_head` measures a partial head's request line.
        let line = match self.line_end {
            Some(end) => end - self.leading,
            None => len - self.leading,
        };
        let over = line > limits.max_request_line || len > limits.max_head;
        let doubled = len >= self.parsed.saturating_mul(2);
        let due = blank || over || doubled;
        if due {
            self.parsed = len;
        }
        due
    }
}

/// How a checked head frames its body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    None,
    /// Content-Length bytes.
    Length(u64),
    /// The chunked coding.
    Chunked,
}

/// Checks one request head at the start of `buf`: `Ok(None)` when it is not complete yet,
/// `Ok(Some((length, framing, built)))` when it is complete and acceptable, `Err(status)` when
/// it is refused. The parsed head, once accepted, is handed to `build` with the address of
/// `buf`'s first byte (so that the parsed pieces, which point into `buf`, can be told as
/// offsets), and what it built is returned: the one parse the server needs.
pub(crate) fn parse_head<T>(
    buf: &[u8],
    limits: &H1Limits,
    build: impl FnOnce(&httparse::Request<'_, '_>, usize) -> T,
) -> Result<Option<(usize, Framing, T)>, StatusCode> {
    #[cfg(test)]
    tests::count_work(buf.len());
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            let start = leading_empty_lines(buf);
            let line = memchr(b'\n', &buf[start..]).unwrap_or(buf.len() - start);
            if line > limits.max_request_line {
                return Err(StatusCode::URI_TOO_LONG);
            }
            if buf.len() > limits.max_head {
                return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        }
        Err(_) => return Err(StatusCode::BAD_REQUEST),
    };
    let head = &buf[..len];
    let start = leading_empty_lines(head);
    let line = memchr(b'\n', &head[start..]).unwrap_or(0);
    if line > limits.max_request_line {
        return Err(StatusCode::URI_TOO_LONG);
    }
    if len > limits.max_head {
        return Err(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    }
    // RFC 9112 §2.2: a bare LF is tolerated by some parsers and not others; refuse it.
    if !crlf_only(&head[start..]) {
        return Err(StatusCode::BAD_REQUEST);
    }
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    let http10 = req.version == Some(0);
    if method == "CONNECT" {
        // A reverse proxy has no tunnels to offer (RFC 9110 §9.3.6).
        return Err(StatusCode::METHOD_NOT_ALLOWED);
    }
    if !target_ok(method, target) {
        return Err(StatusCode::BAD_REQUEST);
    }
    let mut hosts = 0;
    let mut fields = Fields::new();
    for header in req.headers.iter() {
        if header.name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if !host_ok(trim_ows(header.value)) {
                return Err(StatusCode::BAD_REQUEST);
            }
        }
        // Content-Length only as one plain decimal (RFC 9110 §8.6).
        fields
            .field(header.name.as_bytes(), header.value)
            .map_err(|_| StatusCode::BAD_REQUEST)?;
    }
    // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
    if hosts > 1 || (hosts == 0 && !http10) {
        return Err(StatusCode::BAD_REQUEST);
    }
    // RFC 9112 §6.1: 501 for a coding we do not know; §6.3: 400 for anything we cannot frame
    // (not a single final chunked, with Content-Length, in HTTP/1.0, or Content-Length
    // repeated: RFC 9110 §8.6 lets a recipient accept repeated identical values, but a proxy in
    // front of parsers that may not is safer refusing every repetition).
    let framing = fields.finish(http10).map_err(|e| match e {
        gatebench_h1::Error::UnknownCoding => StatusCode::NOT_IMPLEMENTED,
        _ => StatusCode::BAD_REQUEST,
    })?;
    let framing = match framing.request_body() {
        BodyLength::Length(n) if n > limits.max_body => return Err(StatusCode::PAYLOAD_TOO_LARGE),
        BodyLength::Length(n) => Framing::Length(n),
        BodyLength::Chunked => Framing::Chunked,
        BodyLength::None | BodyLength::UntilClose => Framing::None,
    };
    let built = build(&req, buf.as_ptr() as usize);
    Ok(Some((len, framing, built)))
}

/// Bytes of empty lines before a request line (RFC 9112 §2.2 lets a server skip them).
fn leading_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    while i < buf.len() && (buf[i] == b'\r' || buf[i] == b'\n') {
        i += 1;
    }
    i
}

/// RFC 9112 §3.2: origin-form for every method, absolute-form (http/https), asterisk-form for
/// OPTIONS only; authority-form belongs to CONNECT, which is refused before this. The
/// authority of an absolute-form target replaces Host upstream (§3.2.2), so it is checked like
/// a Host: no userinfo (RFC 9110 §4.2.4: a sender "MUST NOT generate the userinfo
/// subcomponent"), a valid host and port.
fn target_ok(method: &str, target: &str) -> bool {
    let t = target.as_bytes();
    if t.first() == Some(&b'/') {
        return true;
    }
    if target == "*" {
        return method == "OPTIONS";
    }
    let scheme = if t.len() > 7 && t[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return false;
    };
    let rest = &t[scheme..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    !authority.is_empty() && host_ok(authority)
}

/// RFC 3986 §3.2.2/§3.2.3 `host [ ":" port ]` (an empty value is allowed: RFC 9112 §3.2).
fn host_ok(value: &[u8]) -> bool {
    let (host, port) = if value.first() == Some(&b'[') {
        let Some(close) = memchr(b']', value) else {
            return false;
        };
        let literal = &value[1..close];
        if literal.is_empty()
            || !literal
                .iter()
                .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match &value[close + 1..] {
            [] => return true,
            [b':', port @ ..] => (&value[..0], port),
            _ => return false,
        }
    } else {
        match value.iter().rposition(|&b| b == b':') {
            Some(i) => (&value[..i], &value[i + 1..]),
            None => (value, &value[..0]),
        }
    };
    let reg_name = |b: &u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            )
    };
    host.iter().all(reg_name) && port.len() <= 5 && port.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::io;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use http::{Request, Response};
    use hyper::body::Body;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    use super::*;
    use crate::protocol::body::{ClientBody, ResBody};
    use crate::protocol::h1::server::{self, H1Handler};
    use crate::protocol::interim::Interim;
    use crate::protocol::Answer;

    thread_local! {
        /// Bytes of request heads examined on this thread: searched by [`HeadScan`] and handed
        /// to the parser (each parse counted at the full length it is given).
        static WORK: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count_work(bytes: usize) {
        WORK.with(|w| w.set(w.get() + bytes));
    }

    /// The work counted on this thread since the last call.
    pub(crate) fn take_work() -> usize {
        WORK.with(|w| w.replace(0))
    }

    fn limits() -> H1Limits {
        H1Limits {
            max_request_line: 64,
            max_head: 256,
            max_body: 1000,
            head_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            send_timeout: Duration::from_secs(1),
        }
    }

    /// [`parse_head`] without anything built: the head's length and framing, or the status.
    fn check_head(buf: &[u8], limits: &H1Limits) -> Result<Option<(usize, Framing)>, StatusCode> {
        parse_head(buf, limits, |_, _| ()).map(|head| head.map(|(len, framing, ())| (len, framing)))
    }

    fn status(raw: &[u8]) -> Result<Option<Framing>, u16> {
        check_head(raw, &limits())
            .map(|r| r.map(|(_, f)| f))
            .map_err(|s| s.as_u16())
    }

    #[test]
    fn framing_of_acceptable_heads() {
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"),
            Ok(Some(Framing::Length(5)))
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked \r\n\r\n"),
            Ok(Some(Framing::Chunked))
        );
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), Ok(Some(Framing::None)));
        assert_eq!(
            status(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(
            status(b"GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Some(Framing::None))
        );
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(
            status(b"\r\nGET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"),
            Ok(Some(Framing::None))
        );
    }

    #[test]
    fn smuggling_shapes_are_refused() {
        for (raw, code) in [
            (&b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..], 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo\r\n\r\n", 501),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n", 400),
            (b"GET / HTTP/1.1\nHost: a\n\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nX: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400),
            (b"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET https://u:p@a:443/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET http://a b/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET foo HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 405),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n", 413),
        ] {
            assert_eq!(status(raw), Err(code), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn limits_give_414_and_431_before_the_head_is_complete() {
        let long_line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(100));
        assert_eq!(status(long_line.as_bytes()), Err(414));
        assert_eq!(status(&long_line.as_bytes()[..80]), Err(414));
        let big_head = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n", "b".repeat(300));
        assert_eq!(status(big_head.as_bytes()), Err(431));
        let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for _ in 0..MAX_HEADERS {
            many.extend_from_slice(b"X: 1\r\n");
        }
        many.extend_from_slice(b"\r\n");
        let wide = H1Limits {
            max_head: 100_000,
            ..limits()
        };
        assert_eq!(
            check_head(&many, &wide).map_err(|s| s.as_u16()).err(),
            Some(431)
        );
    }

    /// A client that sends `data` in reads of `piece` bytes, then closes (or, with `open`, sends
    /// nothing more and stays); it takes every write.
    struct Trickle {
        data: Vec<u8>,
        piece: usize,
        open: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.data.is_empty() && self.open {
                return Poll::Pending;
            }
            let n = self.piece.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// One request the server handed on, as its handler read it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Handed {
        target: String,
        /// The body's bytes (chunked coding decoded).
        body: Vec<u8>,
        /// The body ended as its framing says (false: it broke, or the client closed first).
        complete: bool,
    }

    fn handed(target: &str, body: &[u8], complete: bool) -> Handed {
        Handed {
            target: target.to_owned(),
            body: body.to_vec(),
            complete,
        }
    }

    /// What the server did with one client connection.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    struct Served {
        /// Every request handed on, in order.
        requests: Vec<Handed>,
        /// The status of the refused head that ended the connection, if one did.
        refused: Option<u16>,
    }

    /// A handler that reads every body to its end and records what it was handed, and when
    /// it refused a head.
    struct Recorder(Arc<Mutex<Served>>, Arc<Mutex<Option<tokio::time::Instant>>>);

    impl H1Handler for Recorder {
        fn call_h1(&self, req: Request<ClientBody>, _: Option<Interim>) -> Answer {
            let (parts, mut body) = req.into_parts();
            let served = self.0.clone();
            Answer::boxed(async move {
                let mut seen = handed(&parts.uri.to_string(), b"", true);
                loop {
                    match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                        None => break,
                        Some(Ok(frame)) => {
                            if let Some(data) = frame.data_ref() {
                                seen.body.extend_from_slice(data);
                            }
                        }
                        Some(Err(_)) => {
                            seen.complete = false;
                            break;
                        }
                    }
                }
                served.lock().unwrap().requests.push(seen);
                Response::new(ResBody::Local(Some(Bytes::from_static(b"ok"))))
            })
        }
        fn refuse(&self, status: StatusCode) -> Response<ResBody> {
            self.0.lock().unwrap().refused = Some(status.as_u16());
            *self.1.lock().unwrap() = Some(tokio::time::Instant::now());
            Response::new(ResBody::Local(None))
        }
    }

    /// What the server (`h1::server`, with these rules) does with a client that sends `data` in
    /// reads of `piece` bytes and then closes.
    async fn serve_in_pieces(data: &[u8], piece: usize, limits: H1Limits) -> Served {
        serve_client(data, piece, false, limits).await.0
    }

    /// [`serve_in_pieces`], the client staying open after `data` when `open`; with when the
    /// head was refused, if it was.
    async fn serve_client(
        data: &[u8],
        piece: usize,
        open: bool,
        limits: H1Limits,
    ) -> (Served, Option<tokio::time::Instant>) {
        let served = Arc::new(Mutex::new(Served::default()));
        let refused_at = Arc::new(Mutex::new(None));
        let (_stop, mut drain) = tokio::sync::watch::channel(false);
        server::serve(
            Trickle {
                data: data.to_vec(),
                piece,
                open,
            },
            Arc::new(limits),
            Duration::from_secs(30),
            Arc::new(Recorder(served.clone(), refused_at.clone())),
            &mut drain,
        )
        .await;
        let served = served.lock().unwrap().clone();
        let refused_at = *refused_at.lock().unwrap();
        (served, refused_at)
    }

    /// [`serve_in_pieces`] whole, a byte at a time and in reads of 7: the same every time.
    async fn serve_any_reads(data: &[u8], limits: H1Limits) -> Served {
        let whole = serve_in_pieces(data, data.len().max(1), limits.clone()).await;
        for piece in [1, 7] {
            assert_eq!(
                serve_in_pieces(data, piece, limits.clone()).await,
                whole,
                "{:?} in reads of {piece}",
                String::from_utf8_lossy(data)
            );
        }
        whole
    }

    #[tokio::test(flavor = "current_thread")]
    async fn pipelined_messages_are_checked_one_by_one() {
        let first = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n";
        let second =
            b"GET /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        let all = [&first[..], second].concat();
        assert_eq!(
            serve_any_reads(&all, limits()).await,
            Served {
                requests: vec![handed("/", b"hello", true)],
                refused: Some(400),
            }
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_chunked_body_cannot_hide_a_request() {
        let raw = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";
        // The body breaks where its chunk's CRLF should be; what follows is never a request.
        assert_eq!(
            serve_any_reads(raw, limits()).await,
            Served {
                requests: vec![handed("/", b"hello", false)],
                refused: None,
            }
        );
    }

    fn wide() -> H1Limits {
        H1Limits {
            max_request_line: 8192,
            max_head: 64 * 1024,
            ..limits()
        }
    }

    /// Issue 23: a 16 KiB head trickled a byte at a time costs work linear in its length (it
    /// was a parse from its first byte per read: 16,384 parses, ~134 million bytes).
    #[tokio::test(flavor = "current_thread")]
    async fn a_head_trickled_a_byte_at_a_time_costs_linear_work() {
        let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        // Many lines (as many line ends as the field limit allows) and one long line (the
        // longest search).
        for i in 0..MAX_HEADERS - 2 {
            head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "p".repeat(70)).as_bytes());
        }
        head.extend_from_slice(b"X-Long: ");
        head.resize(16 * 1024 - 4, b'a');
        head.extend_from_slice(b"\r\n\r\n");
        assert_eq!(head.len(), 16 * 1024);
        let expected = Served {
            requests: vec![handed("/", b"", true)],
            refused: None,
        };
        take_work();
        assert_eq!(serve_in_pieces(&head, 1, wide()).await, expected);
        let trickled = take_work();
        assert_eq!(serve_in_pieces(&head, head.len(), wide()).await, expected);
        let whole = take_work();
        // Whole: the server still reads it in pieces of its own read size (2 KiB), so each byte
        // is searched once and the head parsed at lengths that double (under twice the head).
        // A byte at a time: each byte searched and looked at again twice, parses of doubling
        // lengths, the parse at the end.
        assert!(whole <= 3 * head.len(), "{whole} bytes examined");
        assert!(trickled <= 7 * head.len(), "{trickled} bytes examined");
    }

    /// The shapes the resumed search of aeb6e5e got wrong, and their neighbours: empty lines
    /// before an invalid request line (with or without its end), an invalid byte mid-line with
    /// no line end before the close. Read whole, a byte at a time or in sevens, each ends the
    /// same way: refused (400), or dropped quietly at the close, with the same requests handed
    /// on before.
    #[tokio::test(flavor = "current_thread")]
    async fn a_malformed_head_ends_the_same_whatever_the_reads() {
        let ok = &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..];
        let cases: [(&[u8], bool); 10] = [
            (b"\r\n\r\nG\x01T / HTTP/1.1", true),
            (b"\r\n\r\nG\x01T / HTTP/1.1\r\n", true),
            (b"\r\n\r\nBAD\r\n", true),
            (b"\n\nGET / HTTP/1.1\r\nHost: a\r\n", false),
            (b"\r\n\r\n\x01", true),
            (b"\r\r\nGET / HTTP/1.1\r\n", true),
            (b"GET / HTTP/1.1\r\nHo st: a", true),
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r", false),
            (b"GET / HTTP/1.1\r\nHost: a\r\n", false),
            (b"\r\n\r\n", false),
        ];
        for (shape, refused) in cases {
            for before in [&b""[..], ok] {
                let input = [before, shape].concat();
                let expected = Served {
                    requests: match before.is_empty() {
                        true => vec![],
                        false => vec![handed("/", b"", true)],
                    },
                    refused: refused.then_some(400),
                };
                assert_eq!(
                    serve_any_reads(&input, limits()).await,
                    expected,
                    "{:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }

    /// The refused shapes above from a client that stays open, followed by bytes that at least
    /// double the head, with no line end that would end it and no limit crossed: the server
    /// refuses each (400) by then, whatever the reads, not at the head deadline (the parse
    /// when the head has doubled since the last one; without it only the deadline would).
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_malformed_head_is_refused_by_the_time_it_has_doubled() {
        let ok = &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..];
        let shapes: [&[u8]; 7] = [
            b"\r\n\r\nG\x01T / HTTP/1.1",
            b"\r\n\r\nG\x01T / HTTP/1.1\r\n",
            b"\r\n\r\nBAD\r\n",
            b"\r\n\r\n\x01",
            b"\r\r\nGET / HTTP/1.1\r\n",
            b"GET / HTTP/1.1\r\nHo st: a",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b",
        ];
        for shape in shapes {
            for before in [&b""[..], ok] {
                let input = [before, shape, &b"x".repeat(2 * shape.len())].concat();
                for piece in [1, 3, input.len()] {
                    let start = tokio::time::Instant::now();
                    let (served, refused_at) = serve_client(&input, piece, true, wide()).await;
                    let shown = String::from_utf8_lossy(&input);
                    assert_eq!(served.refused, Some(400), "{shown:?} in reads of {piece}");
                    assert_eq!(served.requests.len(), before.len().min(1), "{shown:?}");
                    let after = refused_at.expect("refused") - start;
                    assert!(
                        after < wide().head_timeout,
                        "{shown:?} in reads of {piece}: refused after {after:?}"
                    );
                }
            }
        }
    }

    /// The server over another trickle: a head of many long lines, near the field limit.
    #[tokio::test(flavor = "current_thread")]
    async fn the_server_parses_a_trickled_head_in_linear_work() {
        let mut head = b"GET /trickled HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 0..MAX_HEADERS - 1 {
            head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "p".repeat(160)).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        assert!(head.len() > 16 * 1024, "{}", head.len());
        for piece in [1, head.len()] {
            take_work();
            let served = serve_in_pieces(&head, piece, wide()).await;
            let work = take_work();
            assert_eq!(served.requests, [handed("/trickled", b"", true)]);
            assert!(
                work <= 7 * head.len(),
                "{work} bytes examined, reads of {piece}"
            );
        }
    }

    /// A head is parsed only once it is all there; a Content-Length body is its bytes exactly,
    /// whatever the reads, and what follows it is the next head (dropped at the close while it
    /// is partial).
    #[tokio::test(flavor = "current_thread")]
    async fn partial_input_is_held_back() {
        let head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(check_head(&head[..10], &limits()), Ok(None));
        assert_eq!(check_head(&head[..head.len() - 1], &limits()), Ok(None));
        assert_eq!(
            check_head(head, &limits()),
            Ok(Some((head.len(), Framing::Length(3))))
        );
        let partial_next = [&head[..], b"abcGET"].concat();
        assert_eq!(
            serve_any_reads(&partial_next, limits()).await,
            Served {
                requests: vec![handed("/", b"abc", true)],
                refused: None,
            }
        );
        let next = [&head[..], b"abcGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"].concat();
        assert_eq!(
            serve_any_reads(&next, limits()).await,
            Served {
                requests: vec![handed("/", b"abc", true), handed("/2", b"", true)],
                refused: None,
            }
        );
        let cut_short = [&head[..], b"ab"].concat();
        assert_eq!(
            serve_any_reads(&cut_short, limits()).await,
            Served {
                requests: vec![handed("/", b"ab", false)],
                refused: None,
            }
        );
    }
}
