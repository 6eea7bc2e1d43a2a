//! What gatebench's fuzz targets share: cutting an input into the reads a peer would deliver,
//! and reference HTTP/1.1 framing written from RFC 9112 independently of the code under test.

/// Cuts `payload` into non-empty reads: one read when `seed` is 0, otherwise reads of
/// pseudo-random lengths (1 to `max_piece` bytes, the generator seeded by `seed`); past
/// `max_count - 1` reads the rest goes in reads of `max_piece` bytes.
pub fn split(payload: &[u8], seed: u8, max_piece: usize, max_count: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = payload;
    let mut state = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let small = usize::from(seed % 16) + 1;
    while !rest.is_empty() {
        let n = if seed == 0 || out.len() + 1 >= max_count {
            max_piece
        } else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly short reads, now and then a long one.
            if state % 4 == 0 {
                (state >> 8) as usize % max_piece + 1
            } else {
                (state >> 8) as usize % small + 1
            }
        };
        let n = n.min(rest.len()).min(max_piece);
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    // At most `max_count - 1` pieces of any length, then the rest in pieces of `max_piece`.
    assert!(
        out.len()
            <= max_count
                .saturating_sub(1)
                .saturating_add(payload.len().div_ceil(max_piece).max(1))
    );
    out
}

/// Where the reference framing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framed {
    /// A complete body: its bytes and the length of the message part consumed.
    Complete { body: Vec<u8>, used: usize },
    /// The input ended first.
    Incomplete,
    /// The framing is broken.
    Broken,
}

/// A chunked body (RFC 9112 §7.1) at the start of `input`, strictly: a size line is
/// `1*16HEXDIG [ ";" ext ]` with the extension of tab and visible ASCII, ended by CRLF and at most
/// `max_line` bytes before its CRLF; chunk data is followed by CRLF; the trailer section is
/// header fields in CRLF lines, at most `max_trailers` bytes.
pub fn dechunk_strict(input: &[u8], max_line: usize, max_trailers: usize) -> Framed {
    let mut pos = 0;
    let mut body = Vec::new();
    loop {
        let rest = &input[pos..];
        let Some(lf) = rest.iter().position(|&b| b == b'\n') else {
            return if rest.len() > max_line {
                Framed::Broken
            } else {
                Framed::Incomplete
            };
        };
        if lf == 0 || rest[lf - 1] != b'\r' || lf > max_line {
            return Framed::Broken;
        }
        let line = &rest[..lf - 1];
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 || digits > 16 {
            return Framed::Broken;
        }
        match &line[digits..] {
            [] => {}
            [b';', ext @ ..] if ext.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) => {}
            _ => return Framed::Broken,
        }
        let size = u64::from_str_radix(std::str::from_utf8(&line[..digits]).unwrap(), 16)
            .expect("at most 16 hex digits fit");
        pos += lf + 1;
        if size == 0 {
            break;
        }
        let rest = &input[pos..];
        if (rest.len() as u64) < size + 2 {
            // Either the data or its CRLF is not all there; a wrong byte already there breaks it.
            if (rest.len() as u64) > size && rest[size as usize] != b'\r' {
                return Framed::Broken;
            }
            return Framed::Incomplete;
        }
        let size = size as usize;
        body.extend_from_slice(&rest[..size]);
        if &rest[size..size + 2] != b"\r\n" {
            return Framed::Broken;
        }
        pos += size + 2;
    }
    let rest = &input[pos..];
    if rest.starts_with(b"\r\n") {
        return Framed::Complete {
            body,
            used: pos + 2,
        };
    }
    if rest.len() < 2 && rest.iter().all(|&b| b == b'\r') {
        return Framed::Incomplete;
    }
    let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if rest.len() > max_trailers {
            Framed::Broken
        } else {
            Framed::Incomplete
        };
    };
    let section = &rest[..end + 4];
    let mut fields = [httparse::EMPTY_HEADER; 100];
    let ok = section.len() <= max_trailers
        && crlf_only(section)
        && matches!(
            httparse::parse_headers(section, &mut fields),
            Ok(httparse::Status::Complete((n, _))) if n == section.len()
        );
    if ok {
        Framed::Complete {
            body,
            used: pos + section.len(),
        }
    } else {
        Framed::Broken
    }
}

/// True when every LF is preceded by CR.
pub fn crlf_only(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b != b'\n' || (i > 0 && bytes[i - 1] == b'\r'))
}

/// Leading and trailing spaces and tabs removed.
pub fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// `1*DIGIT`, at most 19 digits, without overflow.
pub fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// How a request head frames its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// Content-Length bytes.
    Length(u64),
    /// The chunked coding.
    Chunked,
}

/// The reference check of a request head a strict HTTP/1.1 reader accepted (RFC 9112, as the
/// services' request rules, `h1::check`, read it): its length and body framing. Panics when the head should have been
/// refused.
pub fn checked_head(buf: &[u8], max_head: usize, max_body: u64) -> (usize, Body) {
    let mut fields = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut fields);
    let shown = || String::from_utf8_lossy(&buf[..buf.len().min(600)]).into_owned();
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        other => panic!("a head passed on does not parse ({other:?}): {:?}", shown()),
    };
    let start = buf
        .iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count();
    assert!(
        crlf_only(&buf[start..len]),
        "bare LF passed on: {:?}",
        shown()
    );
    assert!(len <= max_head, "head over the limit passed on");
    let method = req.method.unwrap();
    let target = req.path.unwrap();
    assert!(method != "CONNECT", "{:?}", shown());
    let origin = target.starts_with('/');
    // Bytes, not str slices: a target may carry non-ASCII bytes (httparse and the checker let
    // UTF-8 through, as nginx does), and a str slice must end on a char boundary.
    let t = target.as_bytes();
    let absolute = t.len() > 7 && t[..7].eq_ignore_ascii_case(b"http://")
        || t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://");
    assert!(
        origin || absolute || (target == "*" && method == "OPTIONS"),
        "request target {target:?} for {method}"
    );
    let http10 = req.version == Some(0);
    let hosts = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"))
        .count();
    assert!(
        hosts == 1 || (hosts == 0 && http10),
        "{hosts} Host fields passed on"
    );
    let lengths: Vec<&[u8]> = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| trim(h.value))
        .collect();
    let codings: Vec<&[u8]> = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(trim)
        .collect();
    if !codings.is_empty() {
        assert!(
            codings.len() == 1
                && codings[0].eq_ignore_ascii_case(b"chunked")
                && lengths.is_empty()
                && !http10,
            "ambiguous framing passed on: {:?}",
            shown()
        );
        return (len, Body::Chunked);
    }
    assert!(lengths.len() <= 1, "repeated Content-Length passed on");
    match lengths.first() {
        None => (len, Body::None),
        Some(v) => {
            let n = decimal(v).unwrap_or_else(|| panic!("Content-Length {v:?} passed on"));
            assert!(n <= max_body);
            (len, Body::Length(n))
        }
    }
}

/// The WHATWG reading of an event stream (see `fuzz_targets/sse.rs`): the events as (type,
/// data, last id, gatebench's `: sent` stamp), whether a data line passed `max_data`, whether the stream ended inside an
/// event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseReference {
    /// Events dispatched, in order.
    pub events: Vec<(Vec<u8>, Vec<u8>, Vec<u8>, Option<u64>)>,
    /// A data line would have taken the data past `max_data`.
    pub too_large: bool,
    /// The stream ended inside an event (`true` when `too_large`).
    pub mid_event: bool,
}

/// Reads `stream` as the WHATWG algorithm does, line by line (see [`SseReference`]); type and
/// id are cut at `max_name` bytes.
pub fn sse_reference(stream: &[u8], max_data: usize, max_name: usize) -> SseReference {
    let stream = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stream);
    // Complete lines, and whether an unterminated one is left.
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\n' => {
                lines.push(&stream[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push(&stream[start..i]);
                i += if stream.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            _ => i += 1,
        }
    }
    let unterminated = start < stream.len();
    // The parser refuses an oversized data line as its bytes arrive, ended or not.
    let last = &stream[start..];
    let last_data = last
        .strip_prefix(b"data:")
        .map(|v| v.strip_prefix(b" ").unwrap_or(v));
    let (mut data, mut kind, mut id) = (Vec::new(), Vec::new(), Vec::new());
    let mut sent: Option<u64> = None;
    let mut events = Vec::new();
    let mut in_event = false;
    for line in lines {
        if line.is_empty() {
            if !data.is_empty() {
                data.pop();
                events.push((kind.clone(), data.clone(), id.clone(), sent));
            }
            data.clear();
            kind.clear();
            sent = None;
            in_event = false;
            continue;
        }
        if line[0] == b':' {
            // gatebench's stamp: `: sent <digits>` in at most `max_name` bytes after the colon.
            let text = &line[1..];
            if text.len() <= max_name {
                let text = text.strip_prefix(b" ").unwrap_or(text);
                if let Some(digits) = text.strip_prefix(b"sent ") {
                    if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                        if let Ok(v) = std::str::from_utf8(digits).unwrap().parse::<u64>() {
                            sent = Some(v);
                        }
                    }
                }
            }
            continue;
        }
        in_event = true;
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if data.len() + value.len() + 1 > max_data {
                    return SseReference {
                        events,
                        too_large: true,
                        mid_event: true,
                    };
                }
                data.extend_from_slice(value);
                data.push(b'\n');
            }
            b"event" => kind = value[..value.len().min(max_name)].to_vec(),
            b"id" if !value.contains(&0) => id = value[..value.len().min(max_name)].to_vec(),
            _ => {}
        }
    }
    if last_data.is_some_and(|v| data.len() + v.len() + 1 > max_data) {
        return SseReference {
            events,
            too_large: true,
            mid_event: true,
        };
    }
    SseReference {
        events,
        too_large: false,
        mid_event: in_event || unterminated,
    }
}

/// Every `regress-*` input of the corpus, replayed here on what its fix changed, so that a
/// fault found once cannot come back unseen: `cargo test --manifest-path fuzz/Cargo.toml`
/// (run by `.ci/run`).
#[cfg(test)]
mod regressions {
    use super::*;

    /// `corpus/h1server/regress-non-ascii-target`, and the retired `h1check` target's input of
    /// the same name, which was the same bytes behind a flags byte (`04`): a request target with
    /// non-ASCII bytes (`ErsoGET /smugg\xce\x84ed HTTP/1.0`) panicked the targets' reference,
    /// not the code under test: it sliced the target as a `str` inside a UTF-8 character. The
    /// reference compares the target's scheme as bytes now. The server hands that request on
    /// whatever the reads (httparse, the request rules and `http::Uri` let UTF-8 through, as
    /// nginx does), and the `h1server` target then reads its head with the reference, as here.
    #[test]
    fn a_non_ascii_request_target_is_read_by_the_reference() {
        use gatebench_services::fuzz::{h1server, uri_form, H1ServerLimits};

        let input = include_bytes!("../corpus/h1server/regress-non-ascii-target");
        let [seed, payload @ ..] = &input[..] else {
            unreachable!("the input has its leading byte")
        };
        let limits = H1ServerLimits {
            max_request_line: 512,
            max_head: 2048,
            max_body: 1 << 20,
        };
        for pieces in [
            split(payload, 0, usize::MAX, 1),
            split(payload, *seed, 300, usize::MAX),
        ] {
            let run = h1server(&pieces, limits);
            assert_eq!(run.refused, None, "{pieces:?}");
            let [request] = &run.requests[..] else {
                panic!("{:?}", run.requests)
            };
            assert_eq!(request.method, "ErsoGET");
            assert_eq!(
                Some(&request.target),
                uri_form(b"/smugg\xce\x84ed").as_ref()
            );
        }
        assert_eq!(
            checked_head(payload, 2048, 1 << 20),
            (payload.len(), Body::None)
        );
    }

    /// `corpus/http1_response/regress-bytes-after-204`: a 204 followed by four bytes. The
    /// generator's client once failed the exchange only when those bytes came in the read that
    /// completed the response (whole: a protocol error; in two reads: answered, and the bytes
    /// left for the next response). It now looks at what the connection holds once the
    /// response is complete, so they fail the exchange whatever the reads.
    #[test]
    fn bytes_after_a_204_fail_the_exchange_whatever_the_reads() {
        use gatebench_loadgen::fuzz::{http1_exchange, Http1Result};
        use gatebench_model::Outcome;

        let input = include_bytes!("../corpus/http1_response/regress-bytes-after-204");
        let [_flags, seed, response @ ..] = &input[..] else {
            unreachable!("the input has its two leading bytes")
        };
        let head_len = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(response.len(), head_len + 4);
        for pieces in [
            split(response, 0, usize::MAX, 1),
            split(response, *seed, 200, usize::MAX),
            vec![&response[..head_len], &response[head_len..]],
        ] {
            match http1_exchange(&pieces, "GET", b"", false) {
                Http1Result::Failure { outcome, .. } => {
                    assert_eq!(outcome, Outcome::ProtocolError, "{pieces:?}")
                }
                other => panic!("answered in {pieces:?}: {other:?}"),
            }
        }
    }

    /// `corpus/h1client/regress-head-past-first-buffer`: a close-delimited response read in
    /// pieces whose head fills the client's first buffer. The body once came out short: the
    /// harness's packet socket dropped the tail of a piece read into a nearly full buffer. As
    /// a stream (the harness now), every byte arrives, in the reads the input asks for.
    #[test]
    fn a_head_past_the_first_buffer_keeps_every_body_byte() {
        let input = include_bytes!("../corpus/h1client/regress-head-past-first-buffer");
        let [flags, seed, payload @ ..] = &input[..] else {
            unreachable!("the input has its two leading bytes")
        };
        let head_len = payload.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        // The reads it was found with (pieces of at most 1 KiB, at most 64 of them).
        let pieces = split(payload, *seed, 1024, 64);
        let r = gatebench_services::fuzz::h1client_response(&pieces, flags & 1 != 0, 2048)
            .expect("the head is acceptable");
        assert_eq!(r.status, 200);
        assert!(r.complete);
        assert_eq!(r.body, &payload[head_len..]);
    }

    /// `corpus/h1client/regress-empty-line-before-status`: an empty line before the status
    /// line, which the parser skips. The walk over a kept head's field lines took it for the
    /// status line's end and found no field (a raw head would have lost them all).
    #[test]
    fn an_empty_line_before_the_status_line_keeps_the_fields() {
        let input = include_bytes!("../corpus/h1client/regress-empty-line-before-status");
        let [flags, seed, payload @ ..] = &input[..] else {
            unreachable!("the input has its two leading bytes")
        };
        assert!(payload.starts_with(b"\r\nHTTP/1.1 200"));
        for pieces in [vec![&payload[..]], split(payload, *seed, 1024, 64)] {
            let r = gatebench_services::fuzz::h1client_response(&pieces, flags & 1 != 0, 2048)
                .expect("the head is acceptable");
            assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
        }
    }
}
