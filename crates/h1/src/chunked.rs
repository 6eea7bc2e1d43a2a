//! The chunked transfer coding (RFC 9112 §7.1) as a decoder that walks the caller's buffer:
//! it says how many bytes at the front are framing (size lines, the CRLF after data, the
//! trailer section) and how many are body data, and keeps nothing but its state, so a caller
//! passes bytes through (the proxy's request checker), hands them on (the proxy's upstream
//! client) or counts them (the load generator) without a copy.
//!
//! Strict where senders can differ: a size line is `1*HEXDIG [ ";" chunk-ext ] CRLF` with no
//! whitespace, sign or `0x`, at most 16 digits and [`Chunked::MAX_LINE`] bytes, extensions of
//! visible characters only; chunk data is followed by CRLF exactly; the trailer section parses
//! as field lines with CRLF ends and fits the caller's limit. Trailer fields are checked, not
//! kept.

use memchr::memmem;

use crate::head::{crlf_only, MAX_FIELDS};
use crate::Error;

/// Where the decoder is in the coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside chunk data: this many bytes to go.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailer fields, then an empty line.
    Trailers,
    /// The body has ended.
    Done,
}

/// What the front of the buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This many bytes of framing (consumed; nothing for the body).
    Framing(usize),
    /// This many bytes of body data (consumed; at least 1, at most the buffer).
    Data(usize),
    /// The rest of a line or section is still to come; nothing consumed.
    Partial,
    /// The body ended with this many bytes of framing (the last empty line, trailers).
    Done(usize),
}

/// A chunked body being decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    state: State,
    max_trailers: usize,
}

impl Chunked {
    /// Longest chunk-size line, extensions and CR included (its LF aside).
    pub const MAX_LINE: usize = 4096;

    /// A body at its start; its trailer section may take up to `max_trailers` bytes.
    pub fn new(max_trailers: usize) -> Self {
        Self {
            state: State::Size,
            max_trailers,
        }
    }

    /// True once the body has ended.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Bytes of the current chunk's data still to come, while inside one (a reader may size
    /// its next read by it).
    pub fn data_left(&self) -> Option<u64> {
        match self.state {
            State::Data(n) => Some(n),
            _ => None,
        }
    }

    /// Reads the front of `buf`, which holds the bytes that follow everything consumed so far.
    /// The caller consumes what the step says and calls again; on [`Step::Partial`] it reads
    /// more bytes and calls again with them appended.
    pub fn step(&mut self, buf: &[u8]) -> Result<Step, Error> {
        match self.state {
            State::Size => {
                let Some(lf) = memchr::memchr(b'\n', buf) else {
                    if buf.len() > Self::MAX_LINE {
                        return Err(Error::ChunkLineTooLong);
                    }
                    return Ok(Step::Partial);
                };
                // The limit holds wherever a read ended, not only when a line arrives in
                // pieces (found by the fuzz target `h1client`).
                if lf > Self::MAX_LINE {
                    return Err(Error::ChunkLineTooLong);
                }
                if lf == 0 || buf[lf - 1] != b'\r' {
                    return Err(Error::BadChunkLine);
                }
                let size = chunk_size(&buf[..lf - 1]).ok_or(Error::BadChunkSize)?;
                self.state = if size == 0 {
                    State::Trailers
                } else {
                    State::Data(size)
                };
                Ok(Step::Framing(lf + 1))
            }
            State::Data(left) => {
                if buf.is_empty() {
                    return Ok(Step::Partial);
                }
                let take = left.min(buf.len() as u64);
                self.state = match left - take {
                    0 => State::DataEnd,
                    left => State::Data(left),
                };
                Ok(Step::Data(take as usize))
            }
            State::DataEnd => match buf {
                [] | [b'\r'] => Ok(Step::Partial),
                [b'\r', b'\n', ..] => {
                    self.state = State::Size;
                    Ok(Step::Framing(2))
                }
                _ => Err(Error::ChunkDataNotCrlf),
            },
            State::Trailers => {
                match buf {
                    [] | [b'\r'] => return Ok(Step::Partial),
                    [b'\r', b'\n', ..] => {
                        self.state = State::Done;
                        return Ok(Step::Done(2));
                    }
                    _ => {}
                }
                let Some(end) = memmem::find(buf, b"\r\n\r\n") else {
                    if buf.len() > self.max_trailers {
                        return Err(Error::TrailersTooLarge);
                    }
                    return Ok(Step::Partial);
                };
                let section = &buf[..end + 4];
                if section.len() > self.max_trailers {
                    return Err(Error::TrailersTooLarge);
                }
                if !trailers_ok(section) {
                    return Err(Error::MalformedTrailers);
                }
                self.state = State::Done;
                Ok(Step::Done(section.len()))
            }
            State::Done => Ok(Step::Done(0)),
        }
    }
}

/// A chunk-size line without its CRLF: `1*HEXDIG [ ";" chunk-ext ]` (RFC 9112 §7.1), strictly:
/// no whitespace (not even the BWS the grammar tolerates before `;`), no sign or `0x`, at most
/// 16 digits, no overflow, extensions of HTAB and visible ASCII only.
pub fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 16 {
        return None;
    }
    match &line[digits..] {
        [] => {}
        [b';', ext @ ..] if ext.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) => {}
        _ => return None,
    }
    line[..digits].iter().try_fold(0u64, |n, &b| {
        let d = u64::from((b as char).to_digit(16)?);
        n.checked_mul(16)?.checked_add(d)
    })
}

/// A trailer section (ending in an empty line) that parses as field lines with CRLF ends.
fn trailers_ok(section: &[u8]) -> bool {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    crlf_only(section)
        && matches!(
            httparse::parse_headers(section, &mut fields),
            Ok(httparse::Status::Complete((n, _))) if n == section.len()
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `piece` bytes (the rest waits in a buffer, as a reader
    /// keeps it); the body and the bytes left after it.
    fn decode(input: &[u8], piece: usize) -> Result<(Vec<u8>, usize), Error> {
        let mut chunked = Chunked::new(64);
        let mut body = Vec::new();
        let (mut fed, mut pos) = (0, 0);
        loop {
            match chunked.step(&input[pos..fed])? {
                Step::Framing(n) => pos += n,
                Step::Data(n) => {
                    body.extend_from_slice(&input[pos..pos + n]);
                    pos += n;
                }
                Step::Done(n) => return Ok((body, input.len() - pos - n)),
                Step::Partial if fed == input.len() => return Err(Error::BadChunkLine),
                Step::Partial => fed = (fed + piece).min(input.len()),
            }
        }
    }

    #[test]
    fn bodies_decode_the_same_in_any_pieces() {
        let input = b"3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nNEXT";
        for piece in [1, 2, 3, 7, 100] {
            let (body, rest) = decode(input, piece).unwrap();
            assert_eq!(body, b"abc0123456789abcdef", "piece {piece}");
            assert_eq!(rest, 4, "piece {piece}");
        }
        assert_eq!(decode(b"0\r\n\r\n", 1).unwrap(), (Vec::new(), 0));
    }

    #[test]
    fn chunk_sizes_are_strict_hex() {
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b"1aF"), Some(0x1af));
        assert_eq!(chunk_size(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(chunk_size(b"5;name=\"v a\"\t"), Some(5));
        for bad in [
            &b""[..],
            b"fffffffffffffffff",
            b"0000000000000000a",
            b" 5",
            b"5 ",
            b"5 ;x",
            b"+5",
            b"0x5",
            b"g",
            b"5;\x01",
            b"5;\x7f",
            b";x",
        ] {
            assert_eq!(chunk_size(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// The proxy's test of its chunk-size lines (from the services' `h1::check`), where the rule now lives.
    #[test]
    fn chunk_size_lines_are_strict() {
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b"1a"), Some(26));
        assert_eq!(chunk_size(b"A;name=value"), Some(10));
        assert_eq!(chunk_size(b"ffffffffffffffff"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"+1",
            b"0x1",
            b"-1",
            b"1;\x00",
            b"zz",
            b"10000000000000000",
        ] {
            assert_eq!(chunk_size(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn framing_errors_are_refused() {
        let cases: [(&[u8], Error); 7] = [
            (b"5\nabcde\r\n0\r\n\r\n", Error::BadChunkLine),
            (b"\r\n", Error::BadChunkSize),
            (b"\n", Error::BadChunkLine),
            (b"3\r\nabcX\r\n", Error::ChunkDataNotCrlf),
            (b"3\r\nabc\n0\r\n\r\n", Error::ChunkDataNotCrlf),
            (b"0\r\nT: v\n\r\n\r\n", Error::MalformedTrailers),
            (b"0\r\nnot a field\r\n\r\n", Error::MalformedTrailers),
        ];
        for (input, want) in cases {
            for piece in [1, 100] {
                assert_eq!(
                    decode(input, piece),
                    Err(want),
                    "{:?} piece {piece}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn limits_hold_wherever_a_read_ends() {
        let mut long = b"1;".to_vec();
        long.resize(Chunked::MAX_LINE - 1, b'x');
        long.extend_from_slice(b"\r\na\r\n0\r\n\r\n");
        assert_eq!(
            decode(&long, 1).map(|(b, _)| b),
            Ok(b"a".to_vec()),
            "4096 with the CR"
        );
        long.insert(3, b'x');
        for piece in [1, 5000] {
            assert_eq!(
                decode(&long, piece),
                Err(Error::ChunkLineTooLong),
                "piece {piece}"
            );
        }
        let mut trailers = b"0\r\n".to_vec();
        trailers.extend_from_slice(&[b'x'; 70]);
        for piece in [1, 100] {
            assert_eq!(decode(&trailers, piece), Err(Error::TrailersTooLarge));
        }
        let big = b"0\r\nx-a: 01234567890123456789012345678901234567890123456789012345678901234567\r\n\r\n";
        assert_eq!(
            decode(big, 100),
            Err(Error::TrailersTooLarge),
            "whole in one read"
        );
    }

    #[test]
    fn the_decoder_reports_its_state() {
        let mut c = Chunked::new(16);
        assert_eq!(c.step(b"a\r\n"), Ok(Step::Framing(3)));
        assert_eq!(c.data_left(), Some(10));
        assert_eq!(c.step(b"0123"), Ok(Step::Data(4)));
        assert_eq!(c.data_left(), Some(6));
        assert_eq!(c.step(b""), Ok(Step::Partial));
        assert_eq!(c.step(b"456789\r\n"), Ok(Step::Data(6)));
        assert_eq!(c.step(b"\r"), Ok(Step::Partial));
        assert_eq!(c.step(b"\r\n0\r\n\r\n"), Ok(Step::Framing(2)));
        assert_eq!(c.step(b"0\r\n\r\n"), Ok(Step::Framing(3)));
        assert!(!c.is_done());
        assert_eq!(c.step(b"\r\n"), Ok(Step::Done(2)));
        assert!(c.is_done());
        assert_eq!(c.step(b"more"), Ok(Step::Done(0)));
    }
}
