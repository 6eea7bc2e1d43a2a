//! The load generator's WebSocket frame decoder (`crates/loadgen/src/ws/codec.rs`) fed an
//! arbitrary server stream in arbitrary reads.
//!
//! Checks: no panic and no hang; how the bytes are split into reads changes nothing (the
//! events, and the violation that ends the stream, if any); no message is longer than the
//! decoder's maximum; a text message is UTF-8.
//!
//! Input: a split seed, then the stream (at most 20,000 bytes; the maximum message size is
//! 300 bytes so that the 16-bit length form and the size refusal are both reached).
#![no_main]

use bytes::BytesMut;
use gatebench_fuzz::split;
use gatebench_loadgen::ws::codec::{Decoder, Event, Violation};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 300;

fn decode(pieces: &[&[u8]]) -> (Vec<Event>, Option<Violation>) {
    let mut decoder = Decoder::new(MAX);
    let mut buf = BytesMut::new();
    let mut events = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match decoder.next(&mut buf) {
                Ok(Some(event)) => events.push(event),
                Ok(None) => break,
                Err(violation) => return (events, Some(violation)),
            }
        }
    }
    (events, None)
}

fuzz_target!(|data: &[u8]| {
    let [seed, stream @ ..] = data else {
        return;
    };
    let stream = &stream[..stream.len().min(20_000)];
    let whole = decode(&split(stream, 0, usize::MAX, 1));
    let cut = decode(&split(stream, *seed, 64, usize::MAX));
    assert_eq!(whole, cut, "reads changed the result");
    for event in &whole.0 {
        if let Event::Message { binary, data } = event {
            assert!(data.len() <= MAX, "a message past the maximum");
            assert!(*binary || std::str::from_utf8(data).is_ok(), "text that is not UTF-8");
        }
    }
});
