//! gRPC's length-prefixed message reader (`crates/grpc`'s `Decoder`), which both the load
//! generator (reading a server's replies) and the echo (reading a client's messages) run on
//! untrusted bytes, fed an arbitrary stream in arbitrary pieces.
//!
//! Checks: no panic; how the bytes are cut into pieces, and whether they come as slices
//! (`push`) or as `Bytes` (`push_bytes`, which takes whole messages without a copy), changes
//! nothing; and the result is a reference reading of the whole stream at once, written here
//! from the gRPC wire format: a flag byte (0: a message as it is; any other value refused, no
//! encoding being agreed), a 4-byte big-endian length (above the largest accepted: refused
//! before its bytes), the payload; the stream ending inside a prefix or a payload is truncated.
//!
//! Input: a split seed, the largest message accepted (that byte × 8 bytes, so refusals are
//! reached), then the stream (at most 20,000 bytes).
#![no_main]

use bytes::Bytes;
use gatebench_fuzz::split;
use gatebench_grpc::{Decoder, FrameError, PREFIX};
use libfuzzer_sys::fuzz_target;

/// The messages read, and how the stream ended.
type Reading = (Vec<Vec<u8>>, Result<(), FrameError>);

fn decode(pieces: &[&[u8]], max: usize, as_bytes: bool) -> Reading {
    let mut d = Decoder::new(max);
    let mut messages = Vec::new();
    let mut failed = None;
    for piece in pieces {
        let pushed = if as_bytes {
            d.push_bytes(Bytes::copy_from_slice(piece))
        } else {
            d.push(piece)
        };
        while let Some(m) = d.next_message() {
            messages.push(m.to_vec());
        }
        if let Err(e) = pushed {
            failed = Some(e);
            break;
        }
    }
    let end = match failed {
        Some(e) => Err(e),
        None => d.finish(),
    };
    (messages, end)
}

fn reference(stream: &[u8], max: usize) -> Reading {
    let mut messages = Vec::new();
    let mut rest = stream;
    loop {
        if rest.is_empty() {
            return (messages, Ok(()));
        }
        if rest.len() < PREFIX {
            return (messages, Err(FrameError::Truncated { have: rest.len() }));
        }
        let flag = rest[0];
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if flag != 0 {
            return (messages, Err(FrameError::Compressed(flag)));
        }
        if len > max {
            return (
                messages,
                Err(FrameError::TooLarge {
                    declared: len as u64,
                    max,
                }),
            );
        }
        if rest.len() < PREFIX + len {
            return (messages, Err(FrameError::Truncated { have: rest.len() }));
        }
        messages.push(rest[PREFIX..PREFIX + len].to_vec());
        rest = &rest[PREFIX + len..];
    }
}

fuzz_target!(|data: &[u8]| {
    let [seed, max, stream @ ..] = data else {
        return;
    };
    let stream = &stream[..stream.len().min(20_000)];
    let max = usize::from(*max) * 8;
    let expected = reference(stream, max);
    let whole = decode(&split(stream, 0, usize::MAX, 1), max, false);
    assert_eq!(whole, expected, "whole stream");
    let pieces = split(stream, *seed, 64, usize::MAX);
    assert_eq!(decode(&pieces, max, false), expected, "cut into pieces");
    assert_eq!(decode(&pieces, max, true), expected, "cut into Bytes pieces");
});
