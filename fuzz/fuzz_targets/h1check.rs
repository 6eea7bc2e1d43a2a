//! The proxy's strict request checker (`h1check`) over a client connection that sends
//! arbitrary bytes in arbitrary reads.
//!
//! Checks: how the bytes are split into reads changes nothing but, at most, which status a
//! refused head gets; what the checker passes on to hyper is the input itself (plus, after a
//! refusal, the synthetic request and nothing else); and every message passed on is one that a
//! reference reading of RFC 9112 — httparse for the head, the framing rules written out here —
//! accepts, with its body framed the same way, so that no parser behind the checker can see a
//! different message boundary (request smuggling).
//!
//! Input: a flags byte (bit 0: the port also serves h2c; bits 1–3: hyper's read size), a
//! split seed, then the bytes the client sends.
#![no_main]

use gatebench_fuzz::{checked_head, dechunk_strict, split, Body, Framed};
use gatebench_services::fuzz::{h1check, H1CheckEnd, H1CheckLimits, H1CheckRun};
use libfuzzer_sys::fuzz_target;

const LIMITS: H1CheckLimits = H1CheckLimits {
    max_request_line: 512,
    max_head: 2048,
    max_body: 1 << 20,
};
const REJECT: &[u8] = b"X-GB-REJECT /";
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fuzz_target!(|data: &[u8]| {
    let [flags, seed, payload @ ..] = data else {
        return;
    };
    let payload = &payload[..payload.len().min(8192)];
    let sniff = flags & 1 != 0;
    let read_size = [8192, 1, 2, 7, 64, 512, 4096, 16_384][usize::from(flags >> 1 & 7)];
    let whole = h1check(&split(payload, 0, usize::MAX, 1), sniff, 8192, LIMITS);
    let pieces = split(payload, *seed, 300, usize::MAX);
    let cut = h1check(&pieces, sniff, read_size, LIMITS);
    let (whole_ok, cut_ok) = (checked(&whole), checked(&cut));
    assert_eq!(
        String::from_utf8_lossy(whole_ok),
        String::from_utf8_lossy(cut_ok),
        "reads changed what was passed on"
    );
    assert_eq!(whole.end, cut.end, "reads changed how the stream ended");
    for run in [&whole, &cut] {
        verify(payload, run, sniff);
    }
});

/// The passed bytes without the synthetic request of a refusal (always its last 29 bytes).
fn checked(run: &H1CheckRun) -> &[u8] {
    if run.end == H1CheckEnd::Refused {
        assert!(run.passed.len() >= 29, "a refusal without its request");
        return &run.passed[..run.passed.len() - 29];
    }
    &run.passed
}

fn verify(input: &[u8], run: &H1CheckRun, sniff: bool) {
    let ok = checked(run);
    assert!(input.starts_with(ok), "passed bytes are not the input's");
    if run.end == H1CheckEnd::Refused {
        let tail = &run.passed[ok.len()..];
        assert!(
            tail.starts_with(REJECT) && tail.ends_with(b" HTTP/1.1\r\n\r\n") && tail.len() == 29,
            "refusal {:?}",
            String::from_utf8_lossy(tail)
        );
    }
    if sniff && ok.starts_with(PREFACE) {
        assert_eq!(ok, input, "h2c passes through untouched");
        return;
    }
    let mut pos = 0;
    while pos < ok.len() {
        let rest = &ok[pos..];
        let (len, framing) = checked_head(rest, LIMITS.max_head, LIMITS.max_body);
        pos += len;
        let rest = &ok[pos..];
        match framing {
            Body::None => {}
            Body::Length(n) => {
                if (rest.len() as u64) < n {
                    assert_ne!(run.end, H1CheckEnd::Refused, "a refusal inside a body");
                    return;
                }
                pos += n as usize;
            }
            Body::Chunked => match dechunk_strict(rest, 4096, LIMITS.max_head) {
                Framed::Complete { used, .. } => pos += used,
                Framed::Incomplete => {
                    assert_ne!(run.end, H1CheckEnd::Refused, "a refusal inside a body");
                    return;
                }
                Framed::Broken => panic!(
                    "a chunked body the reference refuses was passed on: {:?}",
                    String::from_utf8_lossy(rest)
                ),
            },
        }
    }
}
