//! HTTP/2 framing (RFC 9113 §4, §6): the frame header, types, flags, settings and error codes,
//! and writers for the frames a client sends. Payloads are parsed where they are used.

/// The client connection preface (§3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Size of a frame header.
pub(crate) const HEADER_LEN: usize = 9;

/// SETTINGS_MAX_FRAME_SIZE's default: the largest frame gatebench accepts (it never raises it)
/// and, until the server says otherwise, the largest it sends.
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;

/// The initial flow-control window of both directions before SETTINGS (§6.9.2).
pub(crate) const DEFAULT_WINDOW: i64 = 65_535;

/// The largest flow-control window (§6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error codes (§7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Reason {
    NoError = 0x0,
    ProtocolError = 0x1,
    FlowControlError = 0x3,
    FrameSizeError = 0x6,
    RefusedStream = 0x7,
    Cancel = 0x8,
    CompressionError = 0x9,
    EnhanceYourCalm = 0xb,
}

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHead {
    /// Parses the first nine bytes of `b` (which must hold them).
    pub(crate) fn parse(b: &[u8]) -> FrameHead {
        FrameHead {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            // The reserved bit is ignored (§4.1).
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
#[inline]
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]);
}

/// Appends a SETTINGS frame with these (identifier, value) pairs.
pub(crate) fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a WINDOW_UPDATE frame.
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends an RST_STREAM frame.
pub(crate) fn put_rst_stream(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&(reason as u32).to_be_bytes());
}

/// Appends a GOAWAY frame.
pub(crate) fn put_goaway(out: &mut Vec<u8>, last_stream: u32, reason: Reason) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&(reason as u32).to_be_bytes());
}

/// Appends a PING frame.
pub(crate) fn put_ping(out: &mut Vec<u8>, flags: u8, payload: &[u8; 8]) {
    put_head(out, 8, PING, flags, 0);
    out.extend_from_slice(payload);
}

/// Appends a header block as HEADERS plus CONTINUATION frames of at most `max_frame` bytes.
pub(crate) fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let mut chunks = block.chunks(max_frame.max(1));
    let first = chunks.next().unwrap_or(&[]);
    let rest = chunks.len();
    let mut flags = if end_stream { END_STREAM } else { 0 };
    if rest == 0 {
        flags |= END_HEADERS;
    }
    put_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    for (i, c) in block.chunks(max_frame.max(1)).skip(1).enumerate() {
        let flags = if i + 1 == rest { END_HEADERS } else { 0 };
        put_head(out, c.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(c);
    }
}

/// Strips the padding of a PADDED frame's payload (§6.1): `None` when the padding is longer
/// than the payload (a PROTOCOL_ERROR).
pub(crate) fn unpad(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_heads_round_trip_and_ignore_the_reserved_bit() {
        let mut out = Vec::new();
        put_head(&mut out, 0x01_02_03, HEADERS, END_HEADERS, 0x7fff_fffd);
        assert_eq!(
            FrameHead::parse(&out),
            FrameHead {
                len: 0x01_02_03,
                kind: HEADERS,
                flags: END_HEADERS,
                stream: 0x7fff_fffd
            }
        );
        out[5] |= 0x80;
        assert_eq!(FrameHead::parse(&out).stream, 0x7fff_fffd);
    }

    #[test]
    fn large_header_blocks_continue() {
        let block: Vec<u8> = (0..25u8).collect();
        let mut out = Vec::new();
        put_headers(&mut out, 3, &block, true, 10);
        let frames: Vec<(FrameHead, Vec<u8>)> = {
            let mut v = Vec::new();
            let mut rest = &out[..];
            while !rest.is_empty() {
                let h = FrameHead::parse(rest);
                v.push((h, rest[HEADER_LEN..HEADER_LEN + h.len].to_vec()));
                rest = &rest[HEADER_LEN + h.len..];
            }
            v
        };
        let kinds: Vec<(u8, u8, usize)> = frames
            .iter()
            .map(|(h, _)| (h.kind, h.flags, h.len))
            .collect();
        assert_eq!(
            kinds,
            [
                (HEADERS, END_STREAM, 10),
                (CONTINUATION, 0, 10),
                (CONTINUATION, END_HEADERS, 5)
            ]
        );
        let joined: Vec<u8> = frames.into_iter().flat_map(|(_, p)| p).collect();
        assert_eq!(joined, block);
        let mut one = Vec::new();
        put_headers(&mut one, 1, &[0x82], false, 16_384);
        assert_eq!(FrameHead::parse(&one).flags, END_HEADERS);
    }

    #[test]
    fn padding_is_stripped_or_refused() {
        assert_eq!(unpad(0, b"abc"), Some(&b"abc"[..]));
        assert_eq!(unpad(PADDED, &[2, b'a', 0, 0]), Some(&b"a"[..]));
        assert_eq!(unpad(PADDED, &[3, b'a', 0, 0]), Some(&b""[..]));
        assert_eq!(unpad(PADDED, &[4, b'a', 0, 0]), None);
        assert_eq!(unpad(PADDED, &[]), None);
    }
}
