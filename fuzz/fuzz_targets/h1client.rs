//! The proxy's upstream HTTP/1.1 client reading one response (head, then body) from an
//! upstream that sends arbitrary bytes in arbitrary reads, then closes.
//!
//! Checks: the read always ends; the head is accepted exactly when a strict reference reading
//! accepts it — httparse (1xx interim heads skipped, their framing fields checked too), CRLF
//! line ends only, a valid status other than 101, at most one Content-Length of plain digits,
//! Transfer-Encoding only as one `chunked` and never with Content-Length or in HTTP/1.0 (RFC
//! 9112 §6.1, §6.3); the body forwarded and
//! whether it ended cleanly are the reference's (strict chunked framing, Content-Length, or
//! until close); no hop-by-hop field is forwarded; the connection is pooled only after a
//! complete keep-alive HTTP/1.1 response with nothing left over.
//!
//! Input: a flags byte (bit 0: the request was HEAD), a split seed, then the upstream's bytes.
#![no_main]

use gatebench_fuzz::{crlf_only, dechunk_strict, decimal, split, trim, Framed};
use gatebench_services::fuzz::{h1client_response, H1CLIENT_MAX_PIECE, H1CLIENT_MAX_PIECES};
use libfuzzer_sys::fuzz_target;

/// The proxy's own limit on a response head (`h1client.rs`), so heads of every size it takes
/// are fuzzed, far past the client's first 2 KiB buffer.
const MAX_HEAD: usize = 64 * 1024;
/// Room for a head at the limit and a body behind it.
const MAX_INPUT: usize = 96 * 1024;

fuzz_target!(|data: &[u8]| {
    let [flags, seed, payload @ ..] = data else {
        return;
    };
    let payload = &payload[..payload.len().min(MAX_INPUT)];
    let head_request = flags & 1 != 0;
    // At most 63 pieces of any length and the rest in pieces of H1CLIENT_MAX_PIECE: fewer
    // than the harness's H1CLIENT_MAX_PIECES for any input up to MAX_INPUT.
    let pieces = split(payload, *seed, H1CLIENT_MAX_PIECE, 64);
    assert!(pieces.len() <= H1CLIENT_MAX_PIECES);
    let ours = h1client_response(&pieces, head_request, MAX_HEAD);
    let shown = || String::from_utf8_lossy(payload).into_owned();
    match (reference(payload, head_request), ours) {
        (None, Err(_)) => {}
        (Some(_), Err(e)) => panic!("head refused ({e}) but acceptable: {:?}", shown()),
        (None, Ok(r)) => panic!("head accepted ({}) but invalid: {:?}", r.status, shown()),
        (Some(want), Ok(got)) => {
            assert_eq!(got.status, want.status, "{:?}", shown());
            assert_eq!(got.http10, want.http10);
            for (name, _) in &got.headers {
                assert!(
                    !matches!(
                        name.as_str(),
                        "connection"
                            | "keep-alive"
                            | "proxy-connection"
                            | "upgrade"
                            | "te"
                            | "transfer-encoding"
                    ),
                    "hop-by-hop {name} forwarded"
                );
            }
            match want.body {
                Framed::Complete { body, used } => {
                    assert!(got.complete, "a complete body was cut: {:?}", shown());
                    assert_eq!(got.body, body, "{:?}", shown());
                    // With bytes left over, whether they were read before the body ended
                    // depends on the reads; the pool's liveness check catches them later.
                    if used == want.rest_len {
                        assert_eq!(got.pooled, want.keep_alive, "{:?}", shown());
                    }
                }
                Framed::Incomplete | Framed::Broken => {
                    assert!(!got.complete, "a broken body ended cleanly: {:?}", shown());
                    assert!(!got.pooled);
                }
            }
        }
    }
});

struct Want {
    status: u16,
    http10: bool,
    body: Framed,
    keep_alive: bool,
    /// Bytes after the head.
    rest_len: usize,
}

/// The strict reference reading; `None` when the head must be refused.
fn reference(input: &[u8], head_request: bool) -> Option<Want> {
    let mut pos = 0;
    loop {
        let buf = &input[pos..];
        let mut fields = [httparse::EMPTY_HEADER; 100];
        let mut r = httparse::Response::new(&mut fields);
        let len = match r.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            _ => return None,
        };
        if !crlf_only(&buf[..len]) || len > MAX_HEAD {
            return None;
        }
        let status = r.code?;
        let http10 = r.version == Some(0);
        let (mut codings, mut chunked_only, mut lengths, mut length) = (0, true, 0, None);
        let mut close = false;
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("transfer-encoding") {
                codings += 1;
                chunked_only &= trim(h.value).eq_ignore_ascii_case(b"chunked");
            } else if h.name.eq_ignore_ascii_case("content-length") {
                lengths += 1;
                length = Some(decimal(trim(h.value))?);
            } else if h.name.eq_ignore_ascii_case("connection") {
                close |= h
                    .value
                    .split(|&b| b == b',')
                    .any(|t| trim(t).eq_ignore_ascii_case(b"close"));
            }
        }
        if (codings > 0 && (codings > 1 || !chunked_only || lengths > 0 || http10)) || lengths > 1 {
            return None;
        }
        if (100..200).contains(&status) && status != 101 {
            pos += len;
            continue;
        }
        if status == 101 || !(100..=999).contains(&status) {
            return None;
        }
        let rest = &buf[len..];
        let (body, close_delimited) = if head_request || status == 204 || status == 304 {
            (
                Framed::Complete {
                    body: Vec::new(),
                    used: 0,
                },
                false,
            )
        } else if codings > 0 {
            (dechunk_strict(rest, 4096, 16 * 1024), false)
        } else {
            match length {
                Some(n) => match rest.get(..usize::try_from(n).unwrap_or(usize::MAX)) {
                    Some(b) => (
                        Framed::Complete {
                            body: b.to_vec(),
                            used: b.len(),
                        },
                        false,
                    ),
                    None => (Framed::Incomplete, false),
                },
                None => (
                    Framed::Complete {
                        body: rest.to_vec(),
                        used: rest.len(),
                    },
                    true,
                ),
            }
        };
        return Some(Want {
            status,
            http10,
            body,
            keep_alive: !http10 && !close && !close_delimited,
            rest_len: rest.len(),
        });
    }
}
