//! HPACK (RFC 7541) for a load generator: decoding response header blocks while keeping only
//! what is counted (`:status`, `content-length`), and encoding the run's one request head once.
//!
//! Decoding keeps the dynamic table exactly in step with the server's encoder, but decodes a
//! string only when it is needed: a field the generator ignores, sent without indexing, is
//! skipped without touching its Huffman code.
//!
//! Encoding happens when the request template is built, not per request. A connection's first
//! request adds every field that is not in the static table to the server's dynamic table
//! (literal with incremental indexing); every later request is then a handful of one-byte
//! indices, as browsers and h2load send after their first request. When the server's table is
//! too small for that, all fields go as literals without indexing.

use std::collections::VecDeque;

use crate::huffman;

/// RFC 7541 Appendix A.
#[rustfmt::skip]
const STATIC: [(&str, &str); 61] = [
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"),
    (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"), (":status", "200"),
    (":status", "204"), (":status", "206"), (":status", "304"), (":status", "400"),
    (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""),
    ("accept", ""), ("access-control-allow-origin", ""), ("age", ""), ("allow", ""),
    ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
    ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
    ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""),
    ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""),
    ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""),
    ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""),
    ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
    ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
];

/// The dynamic table size both sides start with (SETTINGS_HEADER_TABLE_SIZE's default), and
/// the size gatebench's decoder allows the server to use.
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4096;

/// A field's share of the table size (RFC 7541 §4.1).
fn entry_size(name: usize, value: usize) -> usize {
    32 + name + value
}

/// A header block the generator cannot decode: a connection error (COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompressionError;

/// What a response header block says, as far as the generator counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Head {
    /// `:status`, when present and three digits.
    pub status: Option<u16>,
    /// `content-length`, when present and a number.
    pub content_length: Option<u64>,
    /// The block breaks HTTP/2's rules for a response (RFC 9113 §8.3): a missing, repeated or
    /// invalid `:status`, another pseudo-header, a pseudo-header after a regular field, an
    /// invalid `content-length`, or pseudo-headers where none may be (trailers are checked by
    /// the caller).
    pub malformed: bool,
    /// Pseudo-header fields seen.
    pub pseudo: u32,
}

/// One dynamic table entry: the name and value, decoded, in one allocation.
#[derive(Debug)]
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }
}

/// The response-side HPACK decoder of one connection.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// Newest first: index 62 is `table[0]`.
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    scratch_name: Vec<u8>,
    scratch_value: Vec<u8>,
}

/// A string literal as it appears in the block.
#[derive(Debug, Clone, Copy)]
struct Literal<'a> {
    huffman: bool,
    raw: &'a [u8],
}

impl Literal<'_> {
    /// The decoded string, in `buf` when Huffman-coded.
    fn decode<'b>(&'b self, buf: &'b mut Vec<u8>) -> Result<&'b [u8], CompressionError> {
        if self.huffman {
            buf.clear();
            huffman::decode(self.raw, buf).map_err(|_| CompressionError)?;
            Ok(&buf[..])
        } else {
            Ok(self.raw)
        }
    }
}

/// Which of the fields the generator counts a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Status,
    ContentLength,
    /// Another pseudo-header.
    Pseudo,
    Other,
}

fn classify(name: &[u8]) -> Name {
    match name {
        b":status" => Name::Status,
        b"content-length" => Name::ContentLength,
        n if n.first() == Some(&b':') => Name::Pseudo,
        _ => Name::Other,
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            scratch_name: Vec::new(),
            scratch_value: Vec::new(),
        }
    }
}

impl Decoder {
    /// Decodes one complete header block.
    pub(crate) fn decode(&mut self, block: &[u8]) -> Result<Head, CompressionError> {
        let mut name_buf = std::mem::take(&mut self.scratch_name);
        let mut value_buf = std::mem::take(&mut self.scratch_value);
        let r = self.decode_with(block, &mut name_buf, &mut value_buf);
        self.scratch_name = name_buf;
        self.scratch_value = value_buf;
        r
    }

    fn decode_with(
        &mut self,
        block: &[u8],
        name_buf: &mut Vec<u8>,
        value_buf: &mut Vec<u8>,
    ) -> Result<Head, CompressionError> {
        let mut head = Head::default();
        let mut regular_seen = false;
        let mut pos = 0usize;
        let mut fields = 0usize;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                let index = integer(block, &mut pos, 7)?;
                let (name, value) = self.lookup(index)?;
                note(&mut head, &mut regular_seen, classify(name), value);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update: only at the start of a block (§4.2).
                let size = integer(block, &mut pos, 5)?;
                if fields > 0 || size > DEFAULT_TABLE_SIZE {
                    return Err(CompressionError);
                }
                self.max_size = size;
                self.evict_to(size);
                continue;
            } else {
                let indexing = b & 0xc0 == 0x40;
                let index = integer(block, &mut pos, if indexing { 6 } else { 4 })?;
                let name_lit = if index == 0 {
                    Some(literal(block, &mut pos)?)
                } else {
                    None
                };
                let value_lit = literal(block, &mut pos)?;
                let name: &[u8] = match &name_lit {
                    Some(l) => l.decode(name_buf)?,
                    None => self.lookup(index)?.0,
                };
                let kind = classify(name);
                if indexing {
                    let value = value_lit.decode(value_buf)?;
                    let mut bytes = Vec::with_capacity(name.len() + value.len());
                    bytes.extend_from_slice(name);
                    bytes.extend_from_slice(value);
                    let name_len = name.len();
                    note(&mut head, &mut regular_seen, kind, value);
                    self.insert(Entry {
                        bytes: bytes.into_boxed_slice(),
                        name_len,
                    });
                } else if matches!(kind, Name::Status | Name::ContentLength) {
                    let value = value_lit.decode(value_buf)?;
                    note(&mut head, &mut regular_seen, kind, value);
                } else {
                    // Neither counted nor stored: the value is skipped undecoded.
                    note(&mut head, &mut regular_seen, kind, b"");
                }
            }
            fields += 1;
        }
        Ok(head)
    }

    fn lookup(&self, index: usize) -> Result<(&[u8], &[u8]), CompressionError> {
        match index {
            0 => Err(CompressionError),
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(index - 62)
                .map(|e| (e.name(), e.value()))
                .ok_or(CompressionError),
        }
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry_size(entry.name_len, entry.bytes.len() - entry.name_len);
        if size > self.max_size {
            // Too large for the table: it empties the table and is not added (§4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.table.push_front(entry);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let e = self.table.pop_back().expect("a non-zero size has entries");
            self.size -= entry_size(e.name_len, e.bytes.len() - e.name_len);
        }
    }
}

/// Records one field in `head`.
fn note(head: &mut Head, regular_seen: &mut bool, kind: Name, value: &[u8]) {
    match kind {
        Name::Status | Name::Pseudo => {
            head.pseudo += 1;
            if *regular_seen || kind == Name::Pseudo || head.status.is_some() {
                head.malformed = true;
                return;
            }
            match value {
                [a, b, c] if [a, b, c].iter().all(|d| d.is_ascii_digit()) && *a != b'0' => {
                    head.status = Some(
                        u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'),
                    );
                }
                _ => head.malformed = true,
            }
        }
        Name::ContentLength => {
            *regular_seen = true;
            let n = std::str::from_utf8(value)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|d| d.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok());
            match (n, head.content_length) {
                (Some(n), None) => head.content_length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => head.malformed = true,
            }
        }
        Name::Other => *regular_seen = true,
    }
}

/// An integer with an `n`-bit prefix (§5.1); `pos` moves past it. Values above 2^28 are
/// refused: nothing legitimate in a response is that large.
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, CompressionError> {
    let max = (1usize << n) - 1;
    let first = usize::from(*block.get(*pos).ok_or(CompressionError)?) & max;
    *pos += 1;
    if first < max {
        return Ok(first);
    }
    let mut value = max;
    let mut shift = 0u32;
    loop {
        let b = *block.get(*pos).ok_or(CompressionError)?;
        *pos += 1;
        value += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 21 {
            return Err(CompressionError);
        }
    }
}

/// A string literal (§5.2); `pos` moves past it.
fn literal<'a>(block: &'a [u8], pos: &mut usize) -> Result<Literal<'a>, CompressionError> {
    let huffman = block.get(*pos).ok_or(CompressionError)? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let end = pos.checked_add(len).ok_or(CompressionError)?;
    let raw = block.get(*pos..end).ok_or(CompressionError)?;
    *pos = end;
    Ok(Literal { huffman, raw })
}

/// Appends an integer with an `n`-bit prefix whose other bits are `flags`.
fn put_integer(out: &mut Vec<u8>, flags: u8, n: u32, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Appends a dynamic table size update (§6.3).
pub(crate) fn put_size_update(out: &mut Vec<u8>, size: usize) {
    put_integer(out, 0x20, 5, size);
}

/// Appends a raw (not Huffman-coded) string literal.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// The run's request head as HPACK header blocks, encoded once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// The first request on a connection: fields not in the static table are added to the
    /// server's dynamic table.
    pub first: Vec<u8>,
    /// Every later request: indices only (valid after `first` was sent).
    pub indexed: Vec<u8>,
    /// Literals without indexing, for a server whose table cannot hold the fields.
    pub literal: Vec<u8>,
    /// The dynamic table size `first` needs on the server.
    pub table_need: usize,
}

impl RequestHead {
    /// Encodes `fields` (pseudo-headers first, names lower-case).
    pub(crate) fn encode(fields: &[(String, String)]) -> RequestHead {
        let mut first = Vec::new();
        let mut literal = Vec::new();
        let mut inserted: Vec<usize> = Vec::new(); // positions in `fields`, oldest first
        let mut need = 0usize;
        // Which fields go to the table: those not fully static that fit (in order).
        let mut plan = Vec::with_capacity(fields.len());
        for (n, v) in fields {
            let exact = STATIC.iter().position(|(sn, sv)| sn == n && sv == v);
            let name = STATIC.iter().position(|(sn, _)| sn == n);
            let size = entry_size(n.len(), v.len());
            let index = exact.is_none() && need + size <= DEFAULT_TABLE_SIZE;
            if index {
                need += size;
            }
            plan.push((exact, name, index));
        }
        for (i, ((n, v), (exact, name, index))) in fields.iter().zip(&plan).enumerate() {
            if let Some(e) = exact {
                put_integer(&mut first, 0x80, 7, e + 1);
                put_integer(&mut literal, 0x80, 7, e + 1);
                continue;
            }
            let (flags, prefix) = if *index { (0x40, 6) } else { (0x00, 4) };
            for (out, flags, prefix) in [(&mut first, flags, prefix), (&mut literal, 0x00, 4)] {
                match name {
                    Some(ni) => put_integer(out, flags, prefix, ni + 1),
                    None => {
                        out.push(flags);
                        put_string(out, n.as_bytes());
                    }
                }
                put_string(out, v.as_bytes());
            }
            if *index {
                inserted.push(i);
            }
        }
        // After `first`, the newest entry (the last inserted) is index 62.
        let mut indexed = Vec::new();
        for (i, ((n, v), (exact, name, index))) in fields.iter().zip(&plan).enumerate() {
            if let Some(e) = exact {
                put_integer(&mut indexed, 0x80, 7, e + 1);
            } else if *index {
                let age = inserted.len() - 1 - inserted.iter().position(|&p| p == i).unwrap_or(0);
                put_integer(&mut indexed, 0x80, 7, 62 + age);
            } else {
                match name {
                    Some(ni) => put_integer(&mut indexed, 0x00, 4, ni + 1),
                    None => {
                        indexed.push(0x00);
                        put_string(&mut indexed, n.as_bytes());
                    }
                }
                put_string(&mut indexed, v.as_bytes());
            }
        }
        RequestHead {
            first,
            indexed,
            literal,
            table_need: need,
        }
    }
}

/// Bytes from hex digits with any whitespace between them, as the RFCs print their examples.
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

#[cfg(feature = "fuzzing")]
impl Decoder {
    /// The dynamic table, newest first (the fuzz targets' differential check).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.table.iter().map(|e| (e.name(), e.value()))
    }

    /// The dynamic table's size (RFC 7541 §4.1).
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::hex;

    fn table(d: &Decoder) -> Vec<(String, String)> {
        d.table
            .iter()
            .map(|e| {
                (
                    String::from_utf8(e.name().to_vec()).unwrap(),
                    String::from_utf8(e.value().to_vec()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn rfc7541_c6_responses_with_huffman_and_eviction() {
        // Appendix C.6: three responses, Huffman-coded, with a 256-byte table.
        let mut d = Decoder::default();
        let h = d
            .decode(&hex("3fe1 01"))
            .expect("a size update to 256 at the start");
        assert_eq!(h, Head::default());
        let h = d
            .decode(&hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ))
            .unwrap();
        assert_eq!(h.status, Some(302));
        assert!(!h.malformed);
        assert_eq!(d.size, 222);
        let h = d.decode(&hex("4883 640e ff c1 c0 bf")).unwrap();
        assert_eq!(h.status, Some(307));
        assert_eq!(d.size, 222);
        let h = d
            .decode(&hex(
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ))
            .unwrap();
        assert_eq!(h.status, Some(200));
        assert_eq!(d.size, 215);
        assert_eq!(
            table(&d),
            [
                (
                    "set-cookie".into(),
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1".into()
                ),
                ("content-encoding".into(), "gzip".into()),
                ("date".into(), "Mon, 21 Oct 2013 20:13:22 GMT".into()),
            ]
        );
    }

    #[test]
    fn status_and_content_length_from_every_representation() {
        let mut d = Decoder::default();
        // Indexed :status 200; content-length literal without indexing (static name 28).
        let h = d.decode(&[0x88, 0x0f, 0x0d, 0x02, b'1', b'3']).unwrap();
        assert_eq!(
            (h.status, h.content_length, h.malformed),
            (Some(200), Some(13), false)
        );
        // :status with a literal name, never indexed; content-length indexed into the table,
        // then used by index.
        let mut b = vec![0x10, 0x07];
        b.extend_from_slice(b":status");
        b.extend_from_slice(&[0x03, b'2', b'0', b'1', 0x5c, 0x01, b'7']);
        let h = d.decode(&b).unwrap();
        assert_eq!((h.status, h.content_length), (Some(201), Some(7)));
        let h = d.decode(&[0x8d, 0xbe]).unwrap();
        assert_eq!((h.status, h.content_length), (Some(404), Some(7)));
    }

    #[test]
    fn malformed_heads_are_flagged() {
        let mut d = Decoder::default();
        // Two :status fields.
        assert!(d.decode(&[0x88, 0x8d]).unwrap().malformed);
        // A regular field before :status.
        assert!(d.decode(&[0x0f, 0x0d, 0x01, b'1', 0x88]).unwrap().malformed);
        // A request pseudo-header in a response.
        assert!(d.decode(&[0x88, 0x82]).unwrap().malformed);
        // A status that is not three digits.
        assert!(d.decode(&[0x08, 0x02, b'2', b'0']).unwrap().malformed);
        // Conflicting content-length values.
        let h = d
            .decode(&[0x88, 0x0f, 0x0d, 0x01, b'1', 0x0f, 0x0d, 0x01, b'2'])
            .unwrap();
        assert!(h.malformed);
        // No :status at all is for the caller to judge (trailers have none).
        assert_eq!(d.decode(&[0x0f, 0x0d, 0x01, b'1']).unwrap().status, None);
    }

    #[test]
    fn undecodable_blocks_are_compression_errors() {
        let mut d = Decoder::default();
        for bad in [
            &[0x80][..],                           // index 0
            &[0xbe],                               // a dynamic index into an empty table
            &[0x0f],                               // a truncated integer
            &[0x00, 0x05, b'a'],                   // a string longer than the block
            &[0x88, 0x3f, 0xe1, 0x01],             // a size update after a field
            &[0x3f, 0xe2, 0x1f],                   // a size update above the settings value
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // an integer too large
            &[0x08, 0x81, 0x00],                   // Huffman with bad padding
        ] {
            assert_eq!(d.decode(bad), Err(CompressionError), "{bad:02x?}");
        }
    }

    #[test]
    fn request_heads_index_once_then_refer() {
        let fields: Vec<(String, String)> = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:8443"),
            (":path", "/"),
            ("user-agent", "gatebench/0"),
            ("x-custom", "1"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let head = RequestHead::encode(&fields);
        assert_eq!(
            head.table_need,
            (32 + 10 + 14) + (32 + 10 + 11) + (32 + 8 + 1)
        );
        // The steady block: 2, 7, newest-first dynamic indices, 4.
        assert_eq!(
            head.indexed,
            [0x82, 0x87, 0x80 | 64, 0x84, 0x80 | 63, 0x80 | 62]
        );
        // A decoder that reads `first` then `indexed` ends with the same table, and the
        // literal block adds nothing.
        let mut d = Decoder::default();
        d.decode(&head.first).unwrap();
        assert_eq!(
            table(&d),
            [
                ("x-custom".into(), "1".into()),
                ("user-agent".into(), "gatebench/0".into()),
                (":authority".into(), "127.0.0.1:8443".into()),
            ]
        );
        assert_eq!(d.size, head.table_need);
        d.decode(&head.literal).unwrap();
        assert_eq!(d.size, head.table_need);
        assert!(head.indexed.len() < 8, "{:?}", head.indexed);
    }
}
