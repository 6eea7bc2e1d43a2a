//! The load generator's HTTP/1.1 client reading one response from a server that sends
//! arbitrary bytes in arbitrary reads, then closes.
//!
//! Checks: the exchange always ends (no wait with every read ready); how the bytes are split
//! into reads changes nothing; and the outcome is the one a reference reading gives — httparse
//! for every head (1xx interim heads skipped), RFC 9112 §6.3 framing as the client documents
//! it (Content-Length lists of equal values, a final `chunked` coding that wins over
//! Content-Length and closes the connection, close-delimited bodies), the body compared with
//! the request body under `--verify`.
//!
//! Input: a flags byte (method GET/HEAD/POST, verify, request body length), a split seed, then
//! the response bytes (at most 12,000, below the client's 16 KiB receive buffer).
#![no_main]

use gatebench_fuzz::split;
use gatebench_loadgen::fuzz::{http1_exchange, Http1Result};
use gatebench_model::Outcome;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, seed, response @ ..] = data else {
        return;
    };
    let response = &response[..response.len().min(12_000)];
    let method = ["GET", "HEAD", "POST", "POST"][usize::from(flags & 3)];
    let verify = flags & 4 != 0;
    let body: Vec<u8> = if method == "POST" {
        b"hello"
            .iter()
            .copied()
            .cycle()
            .take(usize::from(flags >> 3))
            .collect()
    } else {
        Vec::new()
    };
    let whole = http1_exchange(&split(response, 0, usize::MAX, 1), method, &body, verify);
    let cut = http1_exchange(
        &split(response, *seed, 200, usize::MAX),
        method,
        &body,
        verify,
    );
    assert_eq!(strip(whole), strip(cut), "reads changed the outcome");
    for r in [whole, cut] {
        let read = match r {
            Http1Result::Answer { bytes_read, .. } | Http1Result::Failure { bytes_read, .. } => {
                bytes_read
            }
        };
        assert!(
            read <= response.len() as u64,
            "read {read} of {}",
            response.len()
        );
    }
    let expected = reference(response, method, &body, verify);
    assert_eq!(
        strip(whole),
        expected,
        "response {:?}",
        String::from_utf8_lossy(response)
    );
});

/// The result without byte counts (they depend on how much each read brought).
fn strip(r: Http1Result) -> (Outcome, bool, bool) {
    match r {
        Http1Result::Answer {
            outcome, reusable, ..
        } => (outcome, reusable, true),
        Http1Result::Failure { outcome, .. } => (outcome, false, false),
    }
}

const ANSWERED: bool = true;

fn fail(o: Outcome) -> (Outcome, bool, bool) {
    (o, false, false)
}

/// The reference reading of `resp` as the answer to `method`.
fn reference(resp: &[u8], method: &str, req_body: &[u8], verify: bool) -> (Outcome, bool, bool) {
    let head_only = method == "HEAD";
    let mut pos = 0;
    let (status, framing, keep_alive) = loop {
        let mut fields = [httparse::EMPTY_HEADER; 96];
        let mut r = httparse::Response::new(&mut fields);
        let n = match r.parse(&resp[pos..]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return fail(Outcome::Incomplete),
            Err(_) => return fail(Outcome::ProtocolError),
        };
        let Some(status) = r.code else {
            return fail(Outcome::ProtocolError);
        };
        let http10 = r.version == Some(0);
        let mut length = None;
        let mut chunked = false;
        let mut close = http10;
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                // A list of equal values is one value (RFC 9110 §8.6).
                let mut value = None;
                for part in h.value.split(|&b| b == b',') {
                    let p = part.trim_ascii();
                    let Some(v) = std::str::from_utf8(p)
                        .ok()
                        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|s| s.parse::<u64>().ok())
                    else {
                        return fail(Outcome::ProtocolError);
                    };
                    if value.is_some_and(|x| x != v) || length.is_some_and(|x| x != v) {
                        return fail(Outcome::ProtocolError);
                    }
                    value = Some(v);
                }
                length = value;
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                let last = h.value.split(|&b| b == b',').next_back().unwrap_or(b"");
                if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return fail(Outcome::ProtocolError);
                }
                chunked = true;
            } else if h.name.eq_ignore_ascii_case("connection") {
                for t in h.value.split(|&b| b == b',') {
                    let t = t.trim_ascii();
                    if t.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        close = false;
                    }
                }
            }
        }
        pos += n;
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        if status == 101 {
            return fail(Outcome::ProtocolError);
        }
        let framing = if head_only || status == 204 || status == 304 {
            Framing::None
        } else if chunked {
            if length.is_some() {
                close = true;
            }
            Framing::Chunked
        } else {
            match length {
                Some(0) => Framing::None,
                Some(n) => Framing::Length(n),
                None => Framing::Close,
            }
        };
        break (status, framing, !close);
    };
    let rest = &resp[pos..];
    let body: &[u8] = match framing {
        Framing::None => &[],
        Framing::Length(n) => match rest.get(..usize::try_from(n).unwrap_or(usize::MAX)) {
            Some(b) => b,
            None => return fail(Outcome::Incomplete),
        },
        Framing::Close => rest,
        Framing::Chunked => match dechunk(rest) {
            Ok(b) => return finish(status, &b, req_body, verify, head_only, keep_alive),
            Err(o) => return fail(o),
        },
    };
    let reusable = keep_alive && framing != Framing::Close;
    finish(status, body, req_body, verify, head_only, reusable)
}

fn finish(
    status: u16,
    body: &[u8],
    req_body: &[u8],
    verify: bool,
    head_only: bool,
    reusable: bool,
) -> (Outcome, bool, bool) {
    let mut outcome = Outcome::from_status(status);
    if verify && outcome == Outcome::Ok && !head_only && !req_body.is_empty() && body != req_body {
        outcome = Outcome::BodyMismatch;
    }
    (outcome, reusable, ANSWERED)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

/// The client's chunked reading, written out: lines end at the first CRLF and are at most
/// 4096 bytes; the size is the hex before any `;`, trimmed, at most 16 digits; the data is
/// followed by an empty line; trailer lines run to an empty one.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, Outcome> {
    fn line<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], Outcome> {
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(p) if p > 4096 => Err(Outcome::ProtocolError),
            Some(p) => {
                let l = &rest[..p];
                *rest = &rest[p + 2..];
                Ok(l)
            }
            None if rest.len() > 4098 => Err(Outcome::ProtocolError),
            None => Err(Outcome::Incomplete),
        }
    }
    let mut body = Vec::new();
    loop {
        let l = line(&mut rest)?;
        let hex = l.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii();
        if hex.is_empty() || hex.len() > 16 || !hex.iter().all(u8::is_ascii_hexdigit) {
            return Err(Outcome::ProtocolError);
        }
        let size = u64::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap();
        if size == 0 {
            while !line(&mut rest)?.is_empty() {}
            return Ok(body);
        }
        let Some(data) = rest.get(..usize::try_from(size).unwrap_or(usize::MAX)) else {
            return Err(Outcome::Incomplete);
        };
        body.extend_from_slice(data);
        rest = &rest[data.len()..];
        if !line(&mut rest)?.is_empty() {
            return Err(Outcome::ProtocolError);
        }
    }
}
