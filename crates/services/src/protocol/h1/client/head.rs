//! Reading an upstream's response head: interim (1xx) responses passed on to the client,
//! the final head parsed once by `gatebench-h1` (httparse without leniencies, CRLF only, the
//! framing fields checked), its hop-by-hop fields left out as the header map is built
//! (RFC 9110 §7.6.1), every kept value sharing the head's bytes — or, for a client that speaks
//! HTTP/1.x, no header map at all: the head's bytes are kept as read ([`RawHead`]) and the
//! client's head is written by copying the end-to-end field lines from them.

use std::mem::MaybeUninit;

use bytes::{Buf, Bytes, BytesMut};
use gatebench_h1::{trim_ows, MAX_FIELDS};
use http::header::{
    HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TE, TRANSFER_ENCODING, UPGRADE,
};
use http::{HeaderMap, Response, StatusCode, Version};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::error::{head_too_large, protocol, H1Error};
use crate::failure::Failure;
use crate::protocol::interim::{InterimSink, InterimTarget};

/// First allocation for a response (head and, usually, the whole body of a small one); it
/// grows for larger heads and bodies. Held for the whole exchange by a busy connection.
/// (`fuzz/corpus/h1client/regress-head-past-first-buffer`, a head longer than this buffer,
/// once looked like a body forwarded short: the fuzz harness's packet socket had dropped the
/// tail of a piece read into a nearly full buffer. The harness is a stream now, and the
/// `h1::client` target fuzzes heads up to the 64 KiB production limit.)
pub(super) const READ_CHUNK: usize = 2048;

/// A response head as read, with what its framing fields said.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    /// Status, version and the end-to-end fields (hop-by-hop ones are not kept); no fields
    /// when `raw` holds them.
    pub parts: http::response::Parts,
    /// The head's bytes, when the caller asked for them and the head allows it: its fields are
    /// then not in `parts`.
    pub raw: Option<RawHead>,
    /// Bytes read after the head: the start of the body.
    pub rest: BytesMut,
    /// What the framing fields said (checked: the body's length is known).
    pub framing: gatebench_h1::Framing,
    /// `Connection: close`.
    pub close: bool,
}

/// A final response head kept as the upstream sent it, for an HTTP/1.x client: its field
/// lines are copied to the client's head ([`RawHead::fields`] leaves the hop-by-hop ones out)
/// instead of going through a header map and back. Kept only for a head whose Connection
/// field names no other field (nearly all): one that does takes the header map path.
#[derive(Debug)]
pub(crate) struct RawHead {
    /// Status line, field lines and the empty line, as read (checked by `gatebench-h1`: CRLF
    /// line ends, no obs-fold, tokens for names, no control characters in values).
    head: Bytes,
    /// This proxy's Via entry, written after the upstream's fields (`proxy::forward`).
    pub via: Option<HeaderValue>,
}

impl RawHead {
    /// The end-to-end fields in the upstream's order, duplicates kept: name as sent (the
    /// client's head lower-cases it, as the header map did), value without its surrounding
    /// whitespace (httparse's value). Hop-by-hop fields (RFC 9110 §7.6.1) are left out.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        field_lines(&self.head).filter(|(name, _)| !fixed_hop(name))
    }
}

/// Every field of a checked head (status line first, CRLF line ends, no obs-fold), in order:
/// the name, and the value trimmed of whitespace as httparse trims it.
fn field_lines(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    // Empty lines before the status line are skipped, as the parser skips them (the h1client
    // fuzz target found a head starting with one: taken for the status line's end, it made the
    // walk stop at once, and a raw head would have lost all its fields).
    let head = &head[head
        .iter()
        .take_while(|b| matches!(b, b'\r' | b'\n'))
        .count()..];
    let mut rest = memchr::memchr(b'\n', head).map_or(&[][..], |at| &head[at + 1..]);
    std::iter::from_fn(move || {
        let end = memchr::memchr(b'\n', rest)?;
        let line = &rest[..end];
        rest = &rest[end + 1..];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = memchr::memchr(b':', line)?;
        Some((&line[..colon], trim_ows(&line[colon + 1..])))
    })
}

/// Whether `name` is one of the fixed hop-by-hop fields (RFC 9110 §7.6.1): Connection,
/// Keep-Alive, Proxy-Connection, Upgrade, TE, Transfer-Encoding.
fn fixed_hop(name: &[u8]) -> bool {
    match name.len() {
        2 => name.eq_ignore_ascii_case(b"te"),
        7 => name.eq_ignore_ascii_case(b"upgrade"),
        10 => name.eq_ignore_ascii_case(b"connection") || name.eq_ignore_ascii_case(b"keep-alive"),
        16 => name.eq_ignore_ascii_case(b"proxy-connection"),
        17 => name.eq_ignore_ascii_case(b"transfer-encoding"),
        _ => false,
    }
}

/// Where one field of a head lies in the head's bytes.
#[derive(Clone, Copy, Default)]
struct Span {
    name: (u32, u32),
    value: (u32, u32),
}

/// Reads a final response head. Interim 1xx responses before it go to `interim` (each written
/// to the client before the next is read), or are dropped when there is none.
///
/// The head is parsed once: field positions are noted while the buffer is borrowed, then the
/// head is frozen and every kept value shares its bytes (no copy, no allocation per field).
/// Hop-by-hop fields (RFC 9110 §7.6.1) are left out as the map is built; what the framing
/// fields said is kept aside for `H1Body::new`.
///
/// `raw`: the client speaks HTTP/1.x; the head's bytes may be kept ([`RawHead`]) instead of a
/// header map.
pub(crate) async fn read_head<R: AsyncRead + Unpin>(
    io: &mut R,
    max_head: usize,
    interim: Option<InterimSink<'_>>,
    raw: bool,
) -> Result<ResponseHead, H1Error> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut received = false;
    let mut need_read = true;
    loop {
        // False once, after an interim head was sent: what is buffered is parsed first.
        if std::mem::replace(&mut need_read, true) {
            if buf.capacity() - buf.len() < 512 {
                buf.reserve(READ_CHUNK);
            }
            let n = io.read_buf(&mut buf).await.map_err(|e| H1Error::Upstream {
                failure: Failure::UpstreamClosed,
                error: e.to_string(),
                nothing_received: !received,
            })?;
            if n == 0 {
                return Err(H1Error::Upstream {
                    failure: Failure::UpstreamClosed,
                    error: if received {
                        "connection closed in the middle of the response head".to_owned()
                    } else {
                        "connection closed before any response byte".to_owned()
                    },
                    nothing_received: !received,
                });
            }
            received = true;
        }
        // An interim head for an HTTP/1.1 client, sent once the parse's state is out of
        // scope: the field spans are not carried across the wait.
        let mut to_send = None;
        loop {
            let mut spans = [Span::default(); MAX_FIELDS];
            let (len, code, http10, framing, count) = {
                let mut fields = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_FIELDS];
                match gatebench_h1::parse_response(&buf, max_head, &mut fields) {
                    Ok(Some(response)) => {
                        let base = buf.as_ptr() as usize;
                        let at = |s: &[u8]| ((s.as_ptr() as usize - base) as u32, s.len() as u32);
                        for (span, field) in spans.iter_mut().zip(response.fields.iter()) {
                            *span = Span {
                                name: at(field.name.as_bytes()),
                                value: at(field.value),
                            };
                        }
                        (
                            response.len,
                            response.status,
                            response.http10,
                            response.framing,
                            response.fields.len(),
                        )
                    }
                    Ok(None) => break,
                    Err(error) => return Err(head_error(error, max_head)),
                }
            };
            if (100..200).contains(&code) && code != 101 {
                // Interim response (100 Continue, 103 Early Hints): forwarded when the client
                // can take it (RFC 9110 §15.2: a proxy forwards 1xx it did not ask for itself).
                match interim.map(|sink| (sink.interim, sink.via)) {
                    Some((InterimTarget::H1(interim), via)) => {
                        to_send = Some((
                            interim,
                            interim_head(&buf[..len], code, &spans[..count], via),
                        ));
                    }
                    Some((InterimTarget::H2(interim), via)) => {
                        interim.send(interim_response(&buf[..len], code, &spans[..count], via));
                    }
                    None => {}
                }
                buf.advance(len);
                if to_send.is_some() {
                    break;
                }
                continue;
            }
            let head = buf.split_to(len).freeze();
            debug_assert!(
                field_lines(&head).eq(spans[..count].iter().map(|span| {
                    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
                    (slice(span.name), slice(span.value))
                })),
                "the field lines walk finds the parser's fields"
            );
            if raw {
                return raw_head(head, code, http10, framing, &spans[..count], buf);
            }
            return build_head(&head, code, http10, framing, &spans[..count], buf);
        }
        if let Some((interim, head)) = to_send {
            interim.send(&head).await;
            need_read = false;
        }
    }
}

/// An interim response head as the client gets it: HTTP/1.1, the upstream's fields less the
/// hop-by-hop ones (RFC 9110 §7.6.1, and any named in Connection), this proxy's Via last.
fn interim_head(head: &[u8], code: u16, spans: &[Span], via: &HeaderValue) -> Vec<u8> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    let named = connection_named(head, spans);
    let reason = StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Informational");
    let mut out = Vec::with_capacity(head.len() + 64);
    out.extend_from_slice(format!("HTTP/1.1 {code} {reason}\r\n").as_bytes());
    for span in spans {
        let name = slice(span.name);
        if !interim_hop(name, &named) {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(slice(span.value));
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"via: ");
    out.extend_from_slice(via.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// Whether `name` is hop-by-hop in an interim head: the fixed ones (RFC 9110 §7.6.1) and those
/// its Connection field names.
fn interim_hop(name: &[u8], named: &[&[u8]]) -> bool {
    fixed_hop(name) || named.iter().any(|hop| name.eq_ignore_ascii_case(hop))
}

/// The fields the interim head's Connection field names.
fn connection_named<'h>(head: &'h [u8], spans: &[Span]) -> Vec<&'h [u8]> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    spans
        .iter()
        .filter(|span| slice(span.name).eq_ignore_ascii_case(b"connection"))
        .flat_map(|span| slice(span.value).split(|&b| b == b',').map(trim_ows))
        .collect()
}

/// An interim response as an HTTP/2 client gets it: the same fields as [`interim_head`] (h2
/// lower-cases the names on the wire, RFC 9113 §8.2.1), this proxy's Via last.
fn interim_response(head: &[u8], code: u16, spans: &[Span], via: &HeaderValue) -> Response<()> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    let named = connection_named(head, spans);
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(code).expect("a 1xx code is a valid status");
    let headers = response.headers_mut();
    for span in spans {
        let name = slice(span.name);
        if interim_hop(name, &named) {
            continue;
        }
        // httparse checked the head's syntax; a field http will not hold is left out.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(slice(span.value)),
        ) {
            headers.append(name, value);
        }
    }
    headers.append(http::header::VIA, via.clone());
    response
}

/// Builds the response head from a complete, checked head.
fn build_head(
    head: &Bytes,
    code: u16,
    http10: bool,
    framing: gatebench_h1::Framing,
    spans: &[Span],
    rest: BytesMut,
) -> Result<ResponseHead, H1Error> {
    let status = StatusCode::from_u16(code).map_err(|_| protocol("invalid status code"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        // The proxy strips Upgrade: a 101 answers a question it never asked.
        return Err(protocol("unsolicited 101 Switching Protocols"));
    }
    let slice = |(at, len): (u32, u32)| head.slice(at as usize..(at + len) as usize);
    let mut out = ResponseHead {
        parts: http::Response::new(()).into_parts().0,
        raw: None,
        rest,
        framing,
        close: framing.close,
    };
    let mut headers = HeaderMap::with_capacity(spans.len());
    let mut named: Vec<Bytes> = Vec::new();
    for span in spans {
        let name = HeaderName::from_bytes(&slice(span.name))
            .map_err(|_| protocol("invalid field name"))?;
        let value = slice(span.value);
        if name == CONNECTION {
            // `close` is in `framing`; any other token names a hop-by-hop field.
            let other = |token: &[u8]| {
                !token.is_empty()
                    && !token.eq_ignore_ascii_case(b"close")
                    && !token.eq_ignore_ascii_case(b"keep-alive")
            };
            if value.split(|&b| b == b',').map(trim_ows).any(other) {
                named.push(value.clone());
            }
            continue;
        }
        if name == TRANSFER_ENCODING
            || name == KEEP_ALIVE
            || name == PROXY_CONNECTION
            || name == UPGRADE
            || name == TE
        {
            continue;
        }
        let value =
            HeaderValue::from_maybe_shared(value).map_err(|_| protocol("invalid field value"))?;
        headers.append(name, value);
    }
    for value in named {
        // Fields the upstream named as hop-by-hop in Connection (RFC 9110 §7.6.1); rare.
        for token in value.split(|&b| b == b',').map(trim_ows) {
            if let Ok(name) = HeaderName::from_bytes(token) {
                if name != CONTENT_LENGTH {
                    headers.remove(name);
                }
            }
        }
    }
    out.parts.status = status;
    out.parts.version = if http10 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    out.parts.headers = headers;
    Ok(out)
}

/// Keeps a checked final head's bytes for an HTTP/1.x client ([`RawHead`]), or builds the
/// header map ([`build_head`]) when its Connection field names other fields to remove.
fn raw_head(
    head: Bytes,
    code: u16,
    http10: bool,
    framing: gatebench_h1::Framing,
    spans: &[Span],
    rest: BytesMut,
) -> Result<ResponseHead, H1Error> {
    let slice = |(at, len): (u32, u32)| &head[at as usize..(at + len) as usize];
    let names_fields = spans.iter().any(|span| {
        slice(span.name).eq_ignore_ascii_case(b"connection")
            && slice(span.value)
                .split(|&b| b == b',')
                .map(trim_ows)
                .any(|token| {
                    !token.is_empty()
                        && !token.eq_ignore_ascii_case(b"close")
                        && !token.eq_ignore_ascii_case(b"keep-alive")
                })
    });
    if names_fields {
        return build_head(&head, code, http10, framing, spans, rest);
    }
    let status = StatusCode::from_u16(code).map_err(|_| protocol("invalid status code"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(protocol("unsolicited 101 Switching Protocols"));
    }
    let mut parts = http::Response::new(()).into_parts().0;
    parts.status = status;
    parts.version = if http10 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    Ok(ResponseHead {
        parts,
        raw: Some(RawHead { head, via: None }),
        rest,
        framing,
        close: framing.close,
    })
}

/// The proxy's reason for a head `gatebench-h1` refused: the limits are 502 "head too large",
/// everything else a protocol error.
fn head_error(error: gatebench_h1::Error, max_head: usize) -> H1Error {
    match error {
        gatebench_h1::Error::HeadTooLarge => head_too_large(max_head),
        gatebench_h1::Error::TooManyFields => H1Error::Upstream {
            failure: Failure::ResponseHeadTooLarge,
            error: format!(
                "response head has more than {} fields",
                gatebench_h1::MAX_FIELDS
            ),
            nothing_received: false,
        },
        gatebench_h1::Error::Malformed(e) => protocol(&format!("malformed response head ({e})")),
        gatebench_h1::Error::BareLf => protocol("bare LF in the response head"),
        e if e.is_ambiguous_framing() => protocol(&format!("ambiguous response framing: {e}")),
        e => protocol(e.as_str()),
    }
}

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

#[cfg(test)]
mod tests {
    use super::*;

    /// The h1client fuzz target's find: empty lines before the status line (which the parser
    /// skips) must not end the walk of the field lines, or a raw head loses every field.
    #[test]
    fn empty_lines_before_the_status_line_do_not_hide_the_fields() {
        let head: &[u8] = b"\n\r\nHTTP/1.1 200 OK\r\nA: b\r\nConnection: close\r\nC:  d \r\n\r\n";
        let got: Vec<(&[u8], &[u8])> = field_lines(head).collect();
        assert_eq!(
            got,
            [
                (&b"A"[..], &b"b"[..]),
                (&b"Connection"[..], &b"close"[..]),
                (&b"C"[..], &b"d"[..])
            ]
        );
        let raw = RawHead {
            head: Bytes::from_static(b"\r\nHTTP/1.1 200 OK\r\nA: b\r\nConnection: close\r\n\r\n"),
            via: None,
        };
        let kept: Vec<&[u8]> = raw.fields().map(|(name, _)| name).collect();
        assert_eq!(kept, [&b"A"[..]], "hop-by-hop Connection left out, A kept");
    }
}
