//! The WebSocket frame codec of the generator's client side (RFC 6455 §5). Rule: bytes in,
//! events out, no I/O. Frames sent are masked (§5.3) with 7-, 16- or 64-bit lengths; frames
//! received must be unmasked (a masked server frame is a protocol error), control frames
//! (close, ping, pong; at most 125 bytes, never fragmented) may come between the fragments of
//! a message, and a message is handed on whole once its last fragment is in. A message larger
//! than the decoder's maximum is refused as soon as a frame header says so, before its bytes
//! are buffered (close 1009).

use bytes::{Buf, Bytes, BytesMut};

/// Continuation frame.
pub const CONTINUATION: u8 = 0x0;
/// Text frame.
pub const TEXT: u8 = 0x1;
/// Binary frame.
pub const BINARY: u8 = 0x2;
/// Close frame.
pub const CLOSE: u8 = 0x8;
/// Ping frame.
pub const PING: u8 = 0x9;
/// Pong frame.
pub const PONG: u8 = 0xA;

/// What the decoder hands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A whole data message: binary or text, and its payload.
    Message {
        /// Binary (true) or text (false).
        binary: bool,
        /// The reassembled payload.
        data: Bytes,
    },
    /// A ping and its payload (to be answered with a pong of the same payload).
    Ping(Bytes),
    /// A pong.
    Pong(Bytes),
    /// A close frame and its status code, if it carried one.
    Close(Option<u16>),
}

/// Why received bytes are not a valid WebSocket stream; each maps to the close code the
/// client sends ([`Violation::close_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// Reserved bits, an unknown opcode, a masked server frame, a fragmented or long control
    /// frame, a continuation with nothing to continue or a new message inside another.
    Protocol,
    /// A message past the maximum size.
    TooBig,
    /// A text message that is not UTF-8.
    NotUtf8,
}

impl Violation {
    /// The close code for it (RFC 6455 §7.4.1).
    pub fn close_code(self) -> u16 {
        match self {
            Violation::Protocol => 1002,
            Violation::TooBig => 1009,
            Violation::NotUtf8 => 1007,
        }
    }
}

/// Appends one masked client frame: `fin`, `opcode`, `payload`, masked with `mask`.
pub fn encode(out: &mut Vec<u8>, fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xFFFF {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let at = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[at..], mask);
}

/// XORs `data` with `mask` (masking and unmasking are the same), a word at a time.
pub fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let mut chunks = data.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let value = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) ^ word;
        chunk.copy_from_slice(&value.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i];
    }
}

/// Decodes server frames into [`Event`]s; holds the message being reassembled.
#[derive(Debug)]
pub struct Decoder {
    max: usize,
    /// Opcode and bytes so far of a fragmented message.
    partial: Option<(u8, BytesMut)>,
}

impl Decoder {
    /// A decoder that refuses messages past `max` bytes.
    pub fn new(max: usize) -> Self {
        Decoder { max, partial: None }
    }

    /// The next event from the front of `buf` (its bytes consumed); `Ok(None)` when more
    /// bytes are needed.
    pub fn next(&mut self, buf: &mut BytesMut) -> Result<Option<Event>, Violation> {
        loop {
            let Some((fin, opcode, payload)) = self.frame(buf)? else {
                return Ok(None);
            };
            match opcode {
                PING => return Ok(Some(Event::Ping(payload.freeze()))),
                PONG => return Ok(Some(Event::Pong(payload.freeze()))),
                CLOSE => {
                    let code =
                        (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                    return Ok(Some(Event::Close(code)));
                }
                TEXT | BINARY if self.partial.is_none() => {
                    if !fin {
                        self.partial = Some((opcode, payload));
                        continue;
                    }
                    return message(opcode, payload).map(Some);
                }
                CONTINUATION => {
                    let Some((_, whole)) = self.partial.as_mut() else {
                        return Err(Violation::Protocol);
                    };
                    if whole.len() + payload.len() > self.max {
                        return Err(Violation::TooBig);
                    }
                    whole.extend_from_slice(&payload);
                    if fin {
                        let (kind, whole) = self.partial.take().ok_or(Violation::Protocol)?;
                        return message(kind, whole).map(Some);
                    }
                }
                _ => return Err(Violation::Protocol),
            }
        }
    }

    /// One frame from the front of `buf`: fin, opcode and payload.
    fn frame(&self, buf: &mut BytesMut) -> Result<Option<(bool, u8, BytesMut)>, Violation> {
        if buf.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (buf[0], buf[1]);
        let opcode = b0 & 0x0F;
        let fin = b0 & 0x80 != 0;
        if b0 & 0x70 != 0 || b1 & 0x80 != 0 || !matches!(opcode, 0x0..=0x2 | 0x8..=0xA) {
            return Err(Violation::Protocol);
        }
        let (len, at) = match b1 & 0x7F {
            126 if buf.len() >= 4 => (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
            127 if buf.len() >= 10 => {
                let mut word = [0u8; 8];
                word.copy_from_slice(&buf[2..10]);
                (u64::from_be_bytes(word), 10)
            }
            126 | 127 => return Ok(None),
            n => (u64::from(n), 2),
        };
        if opcode >= CLOSE && (len > 125 || !fin) {
            return Err(Violation::Protocol);
        }
        if len > self.max as u64 {
            return Err(Violation::TooBig);
        }
        let len = len as usize;
        if buf.len() < at + len {
            buf.reserve(at + len - buf.len());
            return Ok(None);
        }
        buf.advance(at);
        Ok(Some((fin, opcode, buf.split_to(len))))
    }
}

fn message(opcode: u8, data: BytesMut) -> Result<Event, Violation> {
    if opcode == TEXT && std::str::from_utf8(&data).is_err() {
        return Err(Violation::NotUtf8);
    }
    Ok(Event::Message {
        binary: opcode == BINARY,
        data: data.freeze(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame (unmasked).
    fn server(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, fin, opcode, payload, [0; 4]);
        out[1] &= 0x7F;
        let at = out.len() - payload.len() - 4;
        out.drain(at..at + 4);
        out
    }

    #[test]
    fn client_frames_are_masked_with_each_length_form() {
        for (len, header) in [
            (5usize, 2usize),
            (125, 2),
            (126, 4),
            (65535, 4),
            (65536, 10),
        ] {
            let payload = vec![b'a'; len];
            let mut out = Vec::new();
            encode(&mut out, true, BINARY, &payload, [1, 2, 3, 4]);
            assert_eq!(out.len(), header + 4 + len, "length {len}");
            assert_eq!(out[1] & 0x80, 0x80);
            let mut body = out[header + 4..].to_vec();
            apply_mask(&mut body, [1, 2, 3, 4]);
            assert_eq!(body, payload);
        }
        // RFC 6455 §5.7: a masked "Hello".
        let mut out = Vec::new();
        encode(&mut out, true, TEXT, b"Hello", [0x37, 0xfa, 0x21, 0x3d]);
        assert_eq!(
            out,
            [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
    }

    #[test]
    fn fragments_reassemble_around_an_interleaved_ping() {
        let mut bytes = server(false, TEXT, b"Hel");
        bytes.extend(server(true, PING, b"p"));
        bytes.extend(server(true, CONTINUATION, b"lo"));
        let mut decoder = Decoder::new(100);
        let mut buf = BytesMut::new();
        let mut events = Vec::new();
        // Fed a byte at a time: a frame split anywhere still decodes.
        for b in bytes {
            buf.extend_from_slice(&[b]);
            while let Some(event) = decoder.next(&mut buf).unwrap() {
                events.push(event);
            }
        }
        assert_eq!(
            events,
            [
                Event::Ping(Bytes::from_static(b"p")),
                Event::Message {
                    binary: false,
                    data: Bytes::from_static(b"Hello")
                }
            ]
        );
    }

    #[test]
    fn long_lengths_decode_and_close_carries_its_code() {
        let payload = vec![7u8; 70_000];
        let mut buf = BytesMut::from(&server(true, BINARY, &payload)[..]);
        buf.extend_from_slice(&server(true, CLOSE, &1011u16.to_be_bytes()));
        let mut decoder = Decoder::new(1 << 20);
        assert_eq!(
            decoder.next(&mut buf).unwrap(),
            Some(Event::Message {
                binary: true,
                data: payload.into()
            })
        );
        assert_eq!(
            decoder.next(&mut buf).unwrap(),
            Some(Event::Close(Some(1011)))
        );
    }

    #[test]
    fn violations_are_refused_with_their_close_codes() {
        let cases: [(Vec<u8>, Violation); 6] = [
            // Past the maximum by its header alone, before its bytes arrive.
            (vec![0x82, 126, 0x01, 0x00], Violation::TooBig),
            // Masked server frame.
            (vec![0x81, 0x81, 0, 0, 0, 0, b'a'], Violation::Protocol),
            // Fragmented ping.
            (server(false, PING, b""), Violation::Protocol),
            // Continuation of nothing.
            (server(true, CONTINUATION, b"x"), Violation::Protocol),
            // Reserved opcode.
            (server(true, 0x3, b""), Violation::Protocol),
            (server(true, TEXT, &[0xff, 0xfe]), Violation::NotUtf8),
        ];
        for (bytes, want) in cases {
            let mut buf = BytesMut::from(&bytes[..]);
            assert_eq!(Decoder::new(255).next(&mut buf), Err(want), "{bytes:?}");
        }
        let mut big = server(false, TEXT, &[b'a'; 200]);
        big.extend(server(true, CONTINUATION, &[b'a'; 100]));
        let mut buf = BytesMut::from(&big[..]);
        assert_eq!(Decoder::new(255).next(&mut buf), Err(Violation::TooBig));
        assert_eq!(Violation::TooBig.close_code(), 1009);
    }
}
