//! The load generator's server-sent event parser (`crates/loadgen/src/sse.rs`) fed an arbitrary
//! stream in arbitrary reads.
//!
//! Checks: no panic; how the bytes are split into reads changes nothing (events, the refusal of
//! an oversized event, whether the stream ended inside an event); and the result is what a
//! reference reading gives, written here from the WHATWG algorithm ("Interpreting an event
//! stream") line by line, without the parser's streaming state: lines split at CRLF, LF or CR; a
//! leading BOM dropped; an unterminated last line not processed; `data` appending value and LF,
//! `event` and `id` (not with NUL) set, one leading space dropped from a value; an event
//! dispatched at an empty line when its data is not empty, the last LF removed. Two limits of the
//! parser are applied to the reference too: the type and id are cut at `SSE_MAX_NAME` bytes, and a
//! data line that would take the data buffer (with its LF) past the limit refuses the stream.
//!
//! Input: a split seed, then the stream (at most 20,000 bytes; the data limit is 512 bytes so
//! that refusals are reached).
#![no_main]

use gatebench_fuzz::split;
use gatebench_loadgen::fuzz::{sse_events, SseResult, SSE_MAX_NAME};
use libfuzzer_sys::fuzz_target;

const MAX_DATA: usize = 512;

fuzz_target!(|data: &[u8]| {
    let [seed, stream @ ..] = data else {
        return;
    };
    let stream = &stream[..stream.len().min(20_000)];
    let whole = sse_events(&split(stream, 0, usize::MAX, 1), MAX_DATA);
    let cut = sse_events(&split(stream, *seed, 64, usize::MAX), MAX_DATA);
    assert_eq!(whole, cut, "reads changed the result");
    let expected = gatebench_fuzz::sse_reference(stream, MAX_DATA, SSE_MAX_NAME);
    assert_eq!(
        whole,
        SseResult {
            events: expected.events,
            too_large: expected.too_large,
            mid_event: expected.mid_event,
        },
        "stream {:?}",
        String::from_utf8_lossy(stream)
    );
});
