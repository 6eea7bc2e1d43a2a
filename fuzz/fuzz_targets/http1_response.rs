//! The load generator's HTTP/1.1 client reading one response from a server that sends
//! arbitrary bytes in arbitrary reads, then closes.
//!
//! Checks: the exchange always ends (no wait with every read ready); how the bytes are split
//! into reads changes nothing; and the outcome is the one a reference reading gives — httparse
//! for every head (1xx interim heads skipped), the strict rules of `gatebench-h1` written out
//! again (CRLF only, a status from 100, one plain Content-Length, Transfer-Encoding only as one
//! `chunked` and never with Content-Length or in HTTP/1.0, strict chunked framing), RFC 9112
//! §6.3 and §9.3 for the body and the connection, the body compared with the request body under
//! `--verify`, and any byte after a complete response (other than a close-delimited one) a
//! protocol error of the exchange.
//!
//! Every read of the scripted server is ready at once (then the end of the stream), so the
//! client's look at what the connection holds when a response completes (one read that does not
//! wait) sees every byte after it, whatever the split: the rule "bytes after a complete response
//! fail the exchange" is then a property of the bytes alone, which is what this target checks.
//! Bytes that arrive later (after a pause) are not in this target's reach: the client finds
//! them before its next request instead (`errors::bytes_after_a_settled_response…` in the
//! loadgen's integration tests).
//!
//! Input: a flags byte (method GET/HEAD/POST, verify, request body length), a split seed, then
//! the response bytes (at most 12,000, below the client's 16 KiB receive buffer).
#![no_main]

use gatebench_fuzz::{crlf_only, dechunk_strict, decimal, split, trim, Framed as Strict};
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
        let mut fields = [httparse::EMPTY_HEADER; 100];
        let mut r = httparse::Response::new(&mut fields);
        let n = match r.parse(&resp[pos..]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return fail(Outcome::Incomplete),
            Err(_) => return fail(Outcome::ProtocolError),
        };
        let status = r.code.unwrap_or_default();
        if !crlf_only(&resp[pos..pos + n]) || !(100..=999).contains(&status) {
            return fail(Outcome::ProtocolError);
        }
        let http10 = r.version == Some(0);
        let (mut lengths, mut length, mut codings, mut chunked_only) = (0, None, 0, true);
        let (mut close, mut keep_alive) = (false, false);
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                lengths += 1;
                let Some(v) = decimal(trim(h.value)) else {
                    return fail(Outcome::ProtocolError);
                };
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                for coding in h.value.split(|&b| b == b',') {
                    codings += 1;
                    chunked_only &= trim(coding).eq_ignore_ascii_case(b"chunked");
                }
            } else if h.name.eq_ignore_ascii_case("connection") {
                for t in h.value.split(|&b| b == b',') {
                    close |= trim(t).eq_ignore_ascii_case(b"close");
                    keep_alive |= trim(t).eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        if (codings > 0 && (http10 || lengths > 0 || codings != 1 || !chunked_only)) || lengths > 1
        {
            return fail(Outcome::ProtocolError);
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
        } else if codings > 0 {
            Framing::Chunked
        } else {
            match length {
                Some(0) => Framing::None,
                Some(n) => Framing::Length(n),
                None => Framing::Close,
            }
        };
        break (status, framing, !close && (!http10 || keep_alive));
    };
    let rest = &resp[pos..];
    // Bytes after a complete response answer no request (one is in flight at a time): they
    // are this exchange's protocol error, however they were split into reads. The harness has
    // every read ready at once, so they are all "there" when the response completes.
    let body: &[u8] = match framing {
        Framing::None if !rest.is_empty() => return fail(Outcome::ProtocolError),
        Framing::None => &[],
        Framing::Length(n) => match rest.get(..usize::try_from(n).unwrap_or(usize::MAX)) {
            Some(b) if b.len() < rest.len() => return fail(Outcome::ProtocolError),
            Some(b) => b,
            None => return fail(Outcome::Incomplete),
        },
        Framing::Close => rest,
        Framing::Chunked => match dechunk_strict(rest, 4096, 16 * 1024) {
            Strict::Complete { used, .. } if used < rest.len() => {
                return fail(Outcome::ProtocolError)
            }
            Strict::Complete { body, .. } => {
                return finish(status, &body, req_body, verify, head_only, keep_alive)
            }
            Strict::Incomplete => return fail(Outcome::Incomplete),
            Strict::Broken => return fail(Outcome::ProtocolError),
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
