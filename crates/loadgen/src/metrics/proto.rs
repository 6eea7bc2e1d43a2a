//! The protocol-buffers wire format, by hand: just what the metrics need to write (varints,
//! zigzag, doubles, length-delimited fields and messages) and a reader of the same, for tests
//! and for tools that check what gatebench wrote. No code generation and no `.proto` files:
//! the two message sets gatebench writes (`io.prometheus.client.MetricFamily` for the scrape,
//! `prometheus.WriteRequest` for remote write) are small and frozen, and their field numbers
//! are written out where they are encoded ([`super::scrape`], [`super::remote_write`]).
//!
//! Encoding follows <https://protobuf.dev/programming-guides/encoding/>. Repeated scalars are
//! written unpacked (one tag each), as proto2 declares them; every conforming parser accepts
//! that. Not here: groups, fixed32, and any checking of a message against a schema.

/// A protobuf message being written into a byte buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

/// Wire type of varint fields.
const VARINT: u64 = 0;
/// Wire type of 64-bit fields (double).
const I64: u64 = 1;
/// Wire type of length-delimited fields (string, bytes, message).
const LEN: u64 = 2;

impl Writer {
    /// An empty message.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// The bytes written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Nothing written yet.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// A base-128 varint, no tag (also the length prefix of the delimited exposition).
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u64) {
        self.varint((u64::from(field) << 3) | wire);
    }

    /// A `uint64` / `uint32` / enum field.
    pub fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.varint(v);
    }

    /// An `int64` field (two's complement, ten bytes when negative).
    pub fn int(&mut self, field: u32, v: i64) {
        self.tag(field, VARINT);
        self.varint(v as u64);
    }

    /// A `sint32` / `sint64` field (zigzag).
    pub fn sint(&mut self, field: u32, v: i64) {
        self.tag(field, VARINT);
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, v: f64) {
        self.tag(field, I64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `string` / `bytes` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.tag(field, LEN);
        self.varint(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// An embedded message field, written by `f` into a writer of its own.
    pub fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::new();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }

    /// A whole message prefixed by its length as a varint: one element of a "delimited"
    /// stream (the scrape's protobuf format).
    pub fn delimited(&mut self, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::new();
        f(&mut inner);
        self.varint(inner.buf.len() as u64);
        self.buf.extend_from_slice(&inner.buf);
    }
}

/// One field as read: its number and value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field<'a> {
    /// A varint field (raw: apply [`unzigzag`] for `sint`, `as i64` for `int64`).
    Varint(u32, u64),
    /// A 64-bit field (a `double`'s bits: `f64::from_bits`).
    Fixed64(u32, u64),
    /// A length-delimited field: a string, bytes, or an embedded message.
    Bytes(u32, &'a [u8]),
}

/// `sint` decoding.
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads the fields of one message, in order.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over one message's bytes.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// Bytes not read yet.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// A bare varint (the length prefix of a delimited stream).
    pub fn varint(&mut self) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.rest.split_first().ok_or("truncated varint")?;
            self.rest = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes")
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.rest.len() < n {
            return Err("truncated field");
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    /// The next field, `None` at the end of the message.
    pub fn field(&mut self) -> Result<Option<Field<'a>>, &'static str> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let num = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        Ok(Some(match key & 7 {
            VARINT => Field::Varint(num, self.varint()?),
            I64 => {
                let b = self.take(8)?;
                Field::Fixed64(num, u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            LEN => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                Field::Bytes(num, self.take(n)?)
            }
            _ => return Err("unsupported wire type"),
        }))
    }

    /// Every field of the rest of the message.
    pub fn fields(mut self) -> Result<Vec<Field<'a>>, &'static str> {
        let mut out = Vec::new();
        while let Some(f) = self.field()? {
            out.push(f);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding guide's own examples: 150 as a varint field 1 is `08 96 01`; "testing" as
    /// field 2 is `12 07 74 65 73 74 69 6e 67`; sint -1 is 1, sint 1 is 2.
    #[test]
    fn writes_the_encoding_guides_examples_and_reads_them_back() {
        let mut w = Writer::new();
        w.uint(1, 150);
        w.bytes(2, b"testing");
        w.sint(3, -1);
        w.sint(3, 1);
        w.double(4, 2.5);
        w.int(5, -2);
        let b = w.into_bytes();
        assert_eq!(&b[..3], [0x08, 0x96, 0x01]);
        assert_eq!(&b[3..12], b"\x12\x07testing");
        assert_eq!(&b[12..16], [0x18, 0x01, 0x18, 0x02]);
        let f = Reader::new(&b).fields().unwrap();
        assert_eq!(f[0], Field::Varint(1, 150));
        assert_eq!(f[1], Field::Bytes(2, b"testing"));
        assert_eq!(f[2], Field::Varint(3, 1));
        assert_eq!(unzigzag(1), -1);
        assert_eq!(unzigzag(2), 1);
        assert_eq!(f[4], Field::Fixed64(4, 2.5f64.to_bits()));
        assert_eq!(f[5], Field::Varint(5, -2i64 as u64));
        assert!(Reader::new(&[0x08]).fields().is_err(), "truncated");
    }
}
