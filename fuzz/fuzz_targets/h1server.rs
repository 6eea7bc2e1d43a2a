//! The services' HTTP/1.x server (`h1server`, with the request rules of `h1::check`) over a
//! client connection that sends arbitrary bytes in arbitrary reads.
//!
//! Checks: how the bytes are split into reads changes nothing in the requests handed on (their
//! method, target and body bytes) nor whether the connection ends with a refusal; every request
//! handed on is a message that a reference reading of RFC 9112 — httparse for the head, the
//! framing rules written out in the fuzz crate — accepts at that place of the input, with its
//! body framed the same way: a body the server hands on whole is the one the reference frames,
//! byte for byte, and ends where the reference ends it, so that the server cannot see a message
//! boundary the reference does not (request smuggling). Nothing is dropped unseen: after the
//! last request handed on, unless the connection stopped persisting or a body broke, what is
//! left is either refused or an unfinished head.
//!
//! Input: a split seed, then the bytes the client sends.
#![no_main]

use gatebench_fuzz::{checked_head, dechunk_strict, split, trim, Body, Framed};
use gatebench_services::fuzz::{h1server, uri_form, H1ServerLimits};
use libfuzzer_sys::fuzz_target;

const LIMITS: H1ServerLimits = H1ServerLimits {
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
    assert_eq!(
        whole.requests, cut.requests,
        "reads changed the requests handed on"
    );
    assert_eq!(
        whole.refused.is_some(),
        cut.refused.is_some(),
        "reads changed whether the connection ended with a refusal"
    );
    let incomplete = whole.requests.iter().filter(|r| !r.complete).count();
    assert!(
        incomplete == 0 || (incomplete == 1 && !whole.requests.last().expect("one").complete),
        "a request with a broken body was not the last: {:?}",
        whole.requests
    );
    let mut pos = 0;
    for (i, got) in whole.requests.iter().enumerate() {
        let message = reference(&payload[pos..]);
        assert_eq!(
            (&got.method, Some(&got.target)),
            (&message.method, message.target.as_ref()),
            "request {i} handed on differs from the reference's head"
        );
        match message.body {
            Framed::Complete { body, used } => {
                assert!(
                    got.complete && got.body == body,
                    "request {i}: the server's body {:?} (complete: {}), the reference's {body:?}",
                    String::from_utf8_lossy(&got.body),
                    got.complete
                );
                pos += message.head + used;
            }
            // The input ends inside the body, or the body breaks its framing: the server
            // cannot have it whole, and reads no further.
            Framed::Incomplete | Framed::Broken => {
                assert!(
                    !got.complete,
                    "request {i}: a body the reference does not end was handed on whole"
                );
                assert_eq!(
                    i + 1,
                    whole.requests.len(),
                    "requests after an unfinished body"
                );
                return;
            }
        }
        if message.closes {
            // The connection does not persist past this message (RFC 9112 §9.3): what follows
            // is not read, refused or not.
            assert_eq!(
                i + 1,
                whole.requests.len(),
                "requests after the connection's last"
            );
            assert_eq!(
                whole.refused, None,
                "a refusal after the connection's last request"
            );
            return;
        }
    }
    // What is left after the last request handed on: a head refused (at once, at the close or
    // at the deadline) or one still unfinished when the client closed (dropped quietly).
    if whole.refused.is_none() {
        let rest = &payload[pos..];
        let mut fields = [httparse::EMPTY_HEADER; 100];
        let parsed = httparse::Request::new(&mut fields).parse(rest);
        assert!(
            matches!(parsed, Ok(httparse::Status::Partial)),
            "a head neither handed on nor refused ({parsed:?}): {:?}",
            String::from_utf8_lossy(&rest[..rest.len().min(600)])
        );
    }
});

/// A message as the reference reads it at the start of the input.
struct Message {
    method: String,
    /// The target as the server hands it on; `None` when it is no `http::Uri`.
    target: Option<String>,
    /// The head's length.
    head: usize,
    /// The message ends the connection: HTTP/1.0 without `Connection: keep-alive`, or
    /// `Connection: close`.
    closes: bool,
    /// The body after the head, as its framing gives it.
    body: Framed,
}

/// The reference reading of the message at the start of `input`, whose head the server handed
/// on: panics (in `checked_head`) when the reference would have refused that head.
fn reference(input: &[u8]) -> Message {
    let (head, framing) = checked_head(input, LIMITS.max_head, LIMITS.max_body);
    let mut fields = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut fields);
    req.parse(input).expect("checked above");
    let tokens = |token: &[u8]| {
        req.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("connection"))
            .flat_map(|h| h.value.split(|&b| b == b','))
            .any(|t| trim(t).eq_ignore_ascii_case(token))
    };
    let closes = tokens(b"close") || (req.version == Some(0) && !tokens(b"keep-alive"));
    let rest = &input[head..];
    let body = match framing {
        Body::None => Framed::Complete {
            body: Vec::new(),
            used: 0,
        },
        Body::Length(n) if (rest.len() as u64) < n => Framed::Incomplete,
        Body::Length(n) => Framed::Complete {
            body: rest[..n as usize].to_vec(),
            used: n as usize,
        },
        Body::Chunked => dechunk_strict(rest, 4096, LIMITS.max_head),
    };
    Message {
        method: req.method.expect("complete").to_owned(),
        target: uri_form(req.path.expect("complete").as_bytes()),
        head,
        closes,
        body,
    }
}
