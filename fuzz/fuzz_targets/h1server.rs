//! The intermediaries' HTTP/1.x server (`h1server`) over a client connection that sends
//! arbitrary bytes in arbitrary reads.
//!
//! Checks: how the bytes are split into reads changes nothing in the requests handed on (their
//! method, target and body bytes) nor whether the connection ends with a refusal; and the
//! requests handed on are exactly the messages the strict checker (`h1check`, which its own
//! target holds to the RFC 9112 reference) passes on, each body decoded by the reference strict
//! chunked decoder: the server cannot see a message boundary the reference does not (request
//! smuggling), nor hand on a body other than the one framed.
//!
//! Input: a split seed, then the bytes the client sends.
#![no_main]

use gatebench_fuzz::{checked_head, dechunk_strict, split, trim, Body, Framed};
use gatebench_services::fuzz::{
    h1check, h1server, uri_form, H1CheckEnd, H1CheckLimits, H1ServerRequest,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: H1CheckLimits = H1CheckLimits {
    max_request_line: 512,
    max_head: 2048,
    max_body: 1 << 20,
};

fuzz_target!(|data: &[u8]| {
    let [seed, payload @ ..] = data else {
        return;
    };
    let payload = &payload[..payload.len().min(8192)];
    let whole = h1server(&split(payload, 0, usize::MAX, 1), LIMITS);
    let cut = h1server(&split(payload, *seed, 300, usize::MAX), LIMITS);
    assert_eq!(whole.requests, cut.requests, "reads changed the requests handed on");
    assert_eq!(
        whole.refused.is_some(),
        cut.refused.is_some(),
        "reads changed whether the connection ended with a refusal"
    );
    let checked = h1check(&split(payload, 0, usize::MAX, 1), false, 8192, LIMITS);
    let passed = match checked.end {
        // The synthetic request of a refusal is its last 29 bytes.
        H1CheckEnd::Refused => &checked.passed[..checked.passed.len() - 29],
        _ => &checked.passed[..],
    };
    let (expected, stop) = reference(passed);
    let complete: Vec<&H1ServerRequest> = whole.requests.iter().filter(|r| r.complete).collect();
    let incomplete = whole.requests.len() - complete.len();
    assert!(
        incomplete <= 1 && whole.requests.last().is_none_or(|r| r.complete || incomplete == 1),
        "a request with a broken body was not the last: {:?}",
        whole.requests
    );
    match stop {
        // A target the server cannot hand on (not an `http::Uri`): refused there with 400.
        Stop::BadTarget => {
            assert_eq!(complete.len(), expected.len(), "{:?}", whole.requests);
            assert_eq!(whole.refused, Some(400), "an unparsable target was not refused");
        }
        // The connection does not persist past this message (RFC 9112 §9.3): what follows
        // is not read, refused or not.
        Stop::Closed => {}
        Stop::End => {
            assert_eq!(
                whole.refused.is_some(),
                checked.end == H1CheckEnd::Refused,
                "the server and the checker disagree on a refusal ({:?}, {:?})",
                whole.refused,
                checked.end
            );
        }
    }
    assert_eq!(complete.len(), expected.len(), "{:?} vs {expected:?}", whole.requests);
    for (got, want) in complete.iter().zip(&expected) {
        assert_eq!(
            (&got.method, &got.target, &got.body),
            (&want.0, &want.1, &want.2),
            "a request handed on differs from the reference"
        );
    }
});

/// Where the reference reading stopped.
enum Stop {
    /// At the end of what the checker passed on.
    End,
    /// At a head whose target is no `http::Uri`.
    BadTarget,
    /// After a message that closes the connection: HTTP/1.0 without `Connection: keep-alive`,
    /// or `Connection: close`.
    Closed,
}

/// The complete messages in what the checker passed on: method, target (as handed on) and
/// decoded body.
fn reference(passed: &[u8]) -> (Vec<(String, String, Vec<u8>)>, Stop) {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < passed.len() {
        let rest = &passed[pos..];
        let (len, framing) = checked_head(rest, LIMITS.max_head, LIMITS.max_body);
        let mut fields = [httparse::EMPTY_HEADER; 100];
        let mut req = httparse::Request::new(&mut fields);
        req.parse(rest).expect("checked above");
        let method = req.method.expect("complete").to_owned();
        let tokens = |token: &[u8]| {
            req.headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("connection"))
                .flat_map(|h| h.value.split(|&b| b == b','))
                .any(|t| trim(t).eq_ignore_ascii_case(token))
        };
        let closes = tokens(b"close") || (req.version == Some(0) && !tokens(b"keep-alive"));
        let Some(target) = uri_form(req.path.expect("complete").as_bytes()) else {
            return (out, Stop::BadTarget);
        };
        pos += len;
        let rest = &passed[pos..];
        let body = match framing {
            Body::None => Vec::new(),
            Body::Length(n) => {
                if (rest.len() as u64) < n {
                    break;
                }
                pos += n as usize;
                rest[..n as usize].to_vec()
            }
            Body::Chunked => match dechunk_strict(rest, 4096, LIMITS.max_head) {
                Framed::Complete { body, used } => {
                    pos += used;
                    body
                }
                Framed::Incomplete | Framed::Broken => break,
            },
        };
        out.push((method, target, body));
        if closes {
            return (out, Stop::Closed);
        }
    }
    (out, Stop::End)
}
